/* onnx_load.c: an ONNX model file -> the root IR graph (see onnx.h).
 *
 * The order of work: read the file (a regular file of at most 2 GiB, the
 * protobuf limit), check its wire structure, unpack it with protobuf-c, then
 * build the graph:
 *   1. model: ir_version and graph present, the default-domain opset, no
 *      sparse initializers;
 *   2. initializers -> VAL_WEIGHT values (onnx_tensor.c reads the data);
 *   3. graph inputs -> VAL_INPUT values with dtype and symbolic shape, or
 *      VAL_CONST values for inputs the caller binds to a tensor file; an input
 *      that is also an initializer is the weight (old IR versions listed every
 *      initializer as an input); a sequence or optional input is bound to a
 *      SequenceProto/OptionalProto file (a resolved value, lower_seq.c), or
 *      left a VAL_INPUT that pass_infer refuses;
 *   4. nodes in topological order (sorted here when the file is not) ->
 *      IR nodes (onnx_node.c);
 *   5. graph outputs marked (sequence/optional ones with their kind).
 * Errors are collected (diag) and loading goes on where it sensibly can; the
 * graph is returned only when there were none.
 *
 * Dimension symbols: a dim_param becomes the symbol of that name (made a C
 * identifier: other characters become '_', a leading digit gets "d_"); a
 * dimension with neither value nor param becomes a fresh symbol
 * "<input>_<axis>".  Value names are the ONNX tensor names; names containing
 * '%' are refused because the compiler makes up its own names with it.
 */
#include "onnx_priv.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { MODEL_FILE_LIMIT = 2147483647 };   /* protobuf messages stop at 2 GiB */

/* ---- the name table ---- */

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static size_t map_slot(const onnx_map *m, const char *key)
{
	size_t mask = m->cap - 1, i = (size_t)fnv1a(key, strlen(key)) & mask;
	while (m->keys[i] && strcmp(m->keys[i], key) != 0)
		i = (i + 1) & mask;
	return i;
}

void *onnx_map_get(const onnx_map *m, const char *key)
{
	if (!m->cap)
		return NULL;
	size_t i = map_slot(m, key);
	return m->keys[i] ? m->vals[i] : NULL;
}

void onnx_map_put(arena *A, onnx_map *m, const char *key, void *val)
{
	if (2 * (m->n + 1) > m->cap) {
		onnx_map old = *m;
		m->cap = old.cap ? 2 * old.cap : 64;
		m->keys = arena_array(A, m->cap, sizeof *m->keys);
		m->vals = arena_array(A, m->cap, sizeof *m->vals);
		m->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.keys[i])
				onnx_map_put(A, m, old.keys[i], old.vals[i]);
	}
	size_t i = map_slot(m, key);
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
}

/* ---- model-level checks ---- */

static int model_opset(onnx_ctx *L, const Onnx__ModelProto *m)
{
	int opset = 0;
	for (size_t k = 0; k < m->n_opset_import; k++) {
		const Onnx__OperatorSetIdProto *o = m->opset_import[k];
		const char *dom = o->domain ? o->domain : "";
		if (*dom && strcmp(dom, "ai.onnx") != 0)
			continue;       /* other domains matter only if a node uses them */
		if (!o->has_version || o->version < 1 || o->version > 100000) {
			diag_error(L->D, "the model imports the default ONNX domain with an invalid opset version");
			return -1;
		}
		if (opset && opset != o->version) {
			diag_error(L->D, "the model imports the default ONNX domain twice (opsets %d and %lld)", opset,
				   (long long)o->version);
			return -1;
		}
		opset = (int)o->version;
	}
	if (!opset) {
		/* Fine for a model made only of other domains' nodes: those get
		 * the more useful "domain not supported" error. */
		for (size_t k = 0; k < m->graph->n_node; k++) {
			const char *dom = m->graph->node[k]->domain ? m->graph->node[k]->domain : "";
			if (!*dom || strcmp(dom, "ai.onnx") == 0) {
				diag_error(L->D, "the model imports no opset of the default ONNX domain");
				return -1;
			}
		}
	}
	if (opset > ONNX_MAX_OPSET) {
		diag_error(L->D, "the model uses opset %d; cellc knows the operators up to opset %d", opset,
			   (int)ONNX_MAX_OPSET);
		return -1;
	}
	return opset;
}

/* ---- values ---- */

static int check_value_name(onnx_ctx *L, const char *what, const char *name)
{
	if (!name || !*name) {
		diag_error(L->D, "a %s has no name", what);
		return 1;
	}
	if (strchr(name, '%')) {
		diag_error(L->D, "%s name '%s' contains '%%', which cellc reserves for names it makes up", what, name);
		return 1;
	}
	return 0;
}

/* The value of `--bind NAME=NUMBER`: a tensor of the type the model declares
 * for the input (tt; NULL: an initializer's, `init`) whose dimensions are all
 * 1 (a scalar when the declaration is), holding the number. */
static ir_value *literal_value(onnx_ctx *L, const char *name, const char *text, const Onnx__TypeProto__Tensor *tt,
			       const Onnx__TensorProto *init)
{
	ir_dtype dt = tt ? (ir_dtype)tt->elem_type : init ? (ir_dtype)init->data_type : DT_UNDEF;
	ir_shape s = {.rank = 0};
	if (tt && tt->shape) {
		s.rank = (int)tt->shape->n_dim;
		for (int a = 0; a < s.rank; a++) {
			const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[a];
			if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value != 1) {
				diag_error(L->D, "--bind %s=%s gives one number, but input '%s' has %lld elements on "
					   "axis %d; bind it with a TensorProto file (--bind %s=FILE.pb)", name, text, name,
					   (long long)d->dim_value, a, name);
				return NULL;
			}
			s.d[a] = ir_dim_const(1);
		}
	} else if (init) {
		s.rank = (int)init->n_dims;
		for (int a = 0; a < s.rank; a++)
			s.d[a] = ir_dim_const(1);
		for (size_t a = 0; a < init->n_dims; a++)
			if (init->dims[a] != 1) {
				diag_error(L->D, "--bind %s=%s gives one number, but '%s' has %lld elements on axis %zu; "
					   "bind it with a TensorProto file", name, text, name, (long long)init->dims[a], a);
				return NULL;
			}
	}
	char *end;
	errno = 0;
	double x = strtod(text, &end);
	union { float f; double d; int64_t i64; int32_t i32; int16_t i16; int8_t i8; uint8_t u8; uint16_t u16; } u;
	memset(&u, 0, sizeof u);
	int integral = x == (double)(int64_t)x;
	switch (dt) {
	case DT_F32: u.f = (float)x; break;
	case DT_F64: u.d = x; break;
	case DT_I64: u.i64 = (int64_t)x; break;
	case DT_I32: u.i32 = (int32_t)x; integral &= x >= INT32_MIN && x <= INT32_MAX; break;
	case DT_I16: u.i16 = (int16_t)x; integral &= x >= INT16_MIN && x <= INT16_MAX; break;
	case DT_I8: u.i8 = (int8_t)x; integral &= x >= INT8_MIN && x <= INT8_MAX; break;
	case DT_U8: case DT_BOOL: u.u8 = (uint8_t)x; integral &= x >= 0 && x <= (dt == DT_BOOL ? 1 : UINT8_MAX); break;
	case DT_U16: u.u16 = (uint16_t)x; integral &= x >= 0 && x <= UINT16_MAX; break;
	default:
		diag_error(L->D, "--bind %s=%s: input '%s' has element type %s; a number binds only numeric and "
			   "bool inputs", name, text, name, onnx_dtype_name(dt));
		return NULL;
	}
	if (dt != DT_F32 && dt != DT_F64 && !integral) {
		diag_error(L->D, "--bind %s=%s: input '%s' has element type %s, which cannot hold %s", name, text,
			   name, onnx_dtype_name(dt), text);
		return NULL;
	}
	ir_value *v = ir_const_new(L->g, name, dt, &s, &u);
	v->origin = arena_printf(L->A, "--bind %s=%s", name, text);
	return v;
}

static ir_value *bound_value(onnx_ctx *L, const char *name, int nbind, const onnx_binding *bind, int *used,
			     const Onnx__TypeProto__Tensor *tt, const Onnx__TensorProto *init)
{
	for (int b = 0; b < nbind; b++)
		if (bind[b].dim <= 0 && strcmp(bind[b].name, name) == 0) {
			used[b] = 1;
			if (bind[b].tensor) {
				const ir_value *t = bind[b].tensor;
				ir_value *v = ir_const_new(L->g, name, t->dtype, &t->shape, t->data);
				v->origin = arena_strdup(L->A, bind[b].path);
				return v;
			}
			if (!bind[b].path)
				return literal_value(L, name, bind[b].value, tt, init);
			ir_value *v = onnx_read_tensor_file(L->g, L->D, bind[b].path);
			if (v) {
				v->name = arena_strdup(L->A, name);
				v->kind = VAL_CONST;
				v->origin = arena_strdup(L->A, bind[b].path);
			}
			return v;
		}
	return NULL;
}

/* ---- sequence and optional values (bindings, verify's reference data) ---- */

int onnx_type_kind(const Onnx__TypeProto *tp)
{
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
		return IR_SEQ;
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE)
		return IR_OPT;
	return IR_TENSOR;
}

static ir_value *seq_tensor(ir_graph *g, diag *D, const char *path, const Onnx__TensorProto *t, const char *name)
{
	char err[400];
	onnx_tensor ot;
	if (onnx_tensor_decode(g->A, onnx_dirname(g->A, path), t, &ot, err, sizeof err) != 0) {
		diag_error(D, "%s: element of '%s' %s", path, name, err);
		return NULL;
	}
	ir_value *v = ir_value_new(g, ir_unique_name(g, name), VAL_CONST, ot.dtype);
	v->shape = ot.shape;
	v->data = ot.data;
	v->narrow = ot.narrow;
	v->origin = path;
	return v;
}

static ir_value *seq_value(ir_graph *g, diag *D, const char *path, const Onnx__SequenceProto *sp,
			   const Onnx__OptionalProto *op, const char *name)
{
	const ProtobufCMessage *base = op ? &op->base : &sp->base;
	int et = op ? (op->has_elem_type ? op->elem_type : 0) : (sp->has_elem_type ? sp->elem_type : 0);
	/* the elem_type enum of SequenceProto/OptionalProto: 1 tensor, 3 sequence */
	int ok = op ? (et == 0 && !op->tensor_value && !op->sequence_value) || (et == 1 && op->tensor_value) ||
		      (et == 3 && op->sequence_value) || op->sparse_tensor_value || op->optional_value
		    : et == 1 || (et != 0 && (sp->n_sparse_tensor_values || sp->n_sequence_values ||
					      sp->n_optional_values));
	if (!ok || base->n_unknown_fields) {
		diag_error(D, "%s: not a valid %s for '%s' (elem_type %d%s)", path, op ? "OptionalProto" : "SequenceProto",
			   name, et, base->n_unknown_fields ? ", fields of another message" : " does not match its values");
		return NULL;
	}
	ir_value *v = ir_value_new(g, name, VAL_CONST, DT_F32);
	v->shape.rank = 0;
	v->resolved = 1;
	v->origin = path;
	if (op) {
		v->seq = IR_OPT;
		v->elem = arena_array(g->A, 1, sizeof *v->elem);
		if (op->tensor_value)
			v->elem[0] = seq_tensor(g, D, path, op->tensor_value, name);
		else if (op->sequence_value)
			v->elem[0] = seq_value(g, D, path, op->sequence_value, NULL, ir_unique_name(g, name));
		else if (op->sparse_tensor_value || op->optional_value) {
			diag_error(D, "%s: optional '%s' holds a %s, which cellc does not support", path, name,
				   op->sparse_tensor_value ? "sparse tensor" : "nested optional");
			return NULL;
		} else
			return v;       /* none */
		if (!v->elem[0])
			return NULL;
		v->nelem = 1;
		v->dtype = v->elem[0]->dtype;
		return v;
	}
	v->seq = IR_SEQ;
	if (sp->n_sparse_tensor_values || sp->n_sequence_values || sp->n_optional_values) {
		diag_error(D, "%s: sequence '%s' holds values other than tensors, which cellc does not support",
			   path, name);
		return NULL;
	}
	if (sp->n_tensor_values > 1 << 16) {
		diag_error(D, "%s: sequence '%s' has %zu tensors", path, name, sp->n_tensor_values);
		return NULL;
	}
	v->elem = arena_array(g->A, sp->n_tensor_values + 1, sizeof *v->elem);
	for (size_t k = 0; k < sp->n_tensor_values; k++) {
		if (!(v->elem[k] = seq_tensor(g, D, path, sp->tensor_values[k], name)))
			return NULL;
		if (k && v->elem[k]->dtype != v->elem[0]->dtype) {
			diag_error(D, "%s: sequence '%s' mixes element types", path, name);
			return NULL;
		}
	}
	v->nelem = (int)sp->n_tensor_values;
	if (v->nelem)
		v->dtype = v->elem[0]->dtype;
	else if (sp->has_elem_type && sp->elem_type == 1 /* TENSOR */)
		v->dtype = DT_F32;
	return v;
}

ir_value *onnx_read_seq_file(ir_graph *g, diag *D, const char *path, int kind, const char *name)
{
	char err[400];
	unsigned char *buf;
	size_t len;
	const char *what = kind == IR_OPT ? "OptionalProto" : "SequenceProto";
	const ProtobufCMessageDescriptor *d = kind == IR_OPT ? &onnx__optional_proto__descriptor
							      : &onnx__sequence_proto__descriptor;
	if (onnx_read_file(path, MODEL_FILE_LIMIT, &buf, &len, err, sizeof err) != 0) {
		diag_error(D, "%s: %s", path, err);
		return NULL;
	}
	if (onnx_wire_check(buf, len, d, err, sizeof err) != 0) {
		diag_error(D, "%s: not a valid %s file: %s", path, what, err);
		free(buf);
		return NULL;
	}
	ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, len, buf);
	free(buf);
	if (!m) {
		diag_error(D, "%s: not a valid %s file: protobuf parse failed (truncated or not a protobuf)", path,
			   what);
		return NULL;
	}
	ir_value *v = kind == IR_OPT ? seq_value(g, D, path, NULL, (const Onnx__OptionalProto *)m, name)
				     : seq_value(g, D, path, (const Onnx__SequenceProto *)m, NULL, name);
	protobuf_c_message_free_unpacked(m, NULL);
	return v;
}

static ir_value *bound_seq_value(onnx_ctx *L, const Onnx__ValueInfoProto *vi, int kind, int nbind,
				 const onnx_binding *bind, int *used)
{
	for (int b = 0; b < nbind; b++)
		if (bind[b].dim <= 0 && strcmp(bind[b].name, vi->name) == 0) {
			used[b] = 1;
			if (!bind[b].path) {
				diag_error(L->D, "--bind %s=%s: input '%s' is a sequence or optional; bind it with a file",
					   vi->name, bind[b].value, vi->name);
				return NULL;
			}
			ir_value *v = onnx_read_seq_file(L->g, L->D, bind[b].path, kind, vi->name);
			/* the element type the model declares, if any */
			const Onnx__TypeProto *tp = vi->type;
			while (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
				tp = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? tp->sequence_type->elem_type :
				     tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? tp->optional_type->elem_type
											       : NULL;
			const ir_value *e = v;
			while (e && e->seq != IR_TENSOR)
				e = e->nelem ? e->elem[0] : NULL;
			if (e && tp && tp->tensor_type->has_elem_type && tp->tensor_type->elem_type &&
			    tp->tensor_type->elem_type != (int)e->dtype) {
				diag_error(L->D, "bound value of input '%s' holds %s tensors; the model declares %s",
					   vi->name, onnx_dtype_name(e->dtype), onnx_dtype_name(tp->tensor_type->elem_type));
				return NULL;
			}
			return v;
		}
	return NULL;
}

static int is_bound(const char *name, int nbind, const onnx_binding *bind)
{
	for (int b = 0; b < nbind; b++)
		if (bind[b].dim <= 0 && strcmp(bind[b].name, name) == 0)
			return 1;
	return 0;
}

static void load_initializers(onnx_ctx *L, const Onnx__GraphProto *gp, int nbind, const onnx_binding *bind)
{
	char err[400];
	for (size_t k = 0; k < gp->n_initializer; k++) {
		const Onnx__TensorProto *t = gp->initializer[k];
		if (check_value_name(L, "initializer", t->name))
			continue;
		if (onnx_map_get(&L->values, t->name)) {
			diag_error(L->D, "initializer '%s' is defined twice", t->name);
			continue;
		}
		onnx_tensor ot;
		if (onnx_tensor_decode(L->A, L->dir, t, &ot, err, sizeof err) != 0) {
			diag_error(L->D, "initializer '%s' %s", t->name, err);
			/* defined all the same: its users need not report it */
			onnx_map_put(L->A, &L->values, t->name, ir_value_new(L->g, t->name, VAL_WEIGHT, DT_UNDEF));
			continue;
		}
		if (is_bound(t->name, nbind, bind))
			continue;       /* the binding overrides the default value */
		ir_value *v = ir_value_new(L->g, t->name, VAL_WEIGHT, ot.dtype);
		v->shape = ot.shape;
		v->data = ot.data;
		v->narrow = ot.narrow;
		onnx_map_put(L->A, &L->values, v->name, v);
	}
}

/* The symbol standing for `origin` (a dim_param, or one unnamed input dim),
 * preferably called `want`.  -1 when all IR_MAX_SYMS are taken. */
static int dim_symbol(onnx_ctx *L, const char **sym_origin, const char *origin, const char *want)
{
	ir_graph *g = L->g;
	for (int i = 0; i < g->nsyms; i++)
		if (strcmp(sym_origin[i], origin) == 0)
			return i;
	if (g->nsyms == IR_MAX_SYMS)
		return -1;
	int i = ir_sym_add(g, ir_sym_fresh_name(g, want));
	ASSERT(i == g->nsyms - 1);
	sym_origin[i] = origin;
	return i;
}

static const char *type_case_name(const Onnx__TypeProto *tp)
{
	if (!tp)
		return "no type";
	switch (tp->value_case) {
	case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE: return "a tensor type";
	case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "a sequence type";
	case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "a map type";
	case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "an optional type";
	case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "a sparse tensor type";
	default: return "no type";
	}
}

/* The tensor type of a graph input/output, or NULL after an error.  Inputs
 * must declare everything; outputs may leave out what inference finds. */
static const Onnx__TypeProto__Tensor *tensor_type(onnx_ctx *L, const char *what, const Onnx__ValueInfoProto *vi,
						  int is_input)
{
	const Onnx__TypeProto *tp = vi->type;
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
		diag_error(L->D, "%s '%s' has %s; cellc supports tensor %ss only", what, vi->name, type_case_name(tp), what);
		return NULL;
	}
	const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
	if (!is_input && (!tt->has_elem_type || tt->elem_type == 0))
		return tt;
	if (!tt->has_elem_type || (!onnx_dtype_supported(tt->elem_type) && !onnx_dtype_narrow(tt->elem_type))) {
		diag_error(L->D, "%s '%s' has element type %s, which cellc does not support", what, vi->name,
			   tt->has_elem_type ? onnx_dtype_name(tt->elem_type) : "UNDEFINED");
		return NULL;
	}
	if (is_input && tt->shape && tt->shape->n_dim > IR_MAX_RANK) {
		diag_error(L->D, "%s '%s' has rank %zu; cellc supports at most %d", what, vi->name, tt->shape->n_dim,
			   (int)IR_MAX_RANK);
		return NULL;
	}
	return tt;
}

/* The --dim binding of a dimension that would be symbol `want` (its
 * dim_param, or INPUT_AXIS when unnamed; matched as written or as the
 * identifier cellc makes of it); NULL if none. */
static const onnx_binding *fixed_dim(onnx_ctx *L, const char *want, int nbind, const onnx_binding *bind, int *used)
{
	for (int b = 0; b < nbind; b++)
		if (bind[b].dim > 0 && (strcmp(bind[b].name, want) == 0 ||
					strcmp(bind[b].name, ir_sym_ident(L->A, want)) == 0)) {
			used[b] = 1;
			return &bind[b];
		}
	return NULL;
}

static int input_shape(onnx_ctx *L, const char **sym_origin, const Onnx__ValueInfoProto *vi,
		       const Onnx__TensorShapeProto *sp, ir_shape *s, int nbind, const onnx_binding *bind, int *used)
{
	s->rank = (int)sp->n_dim;
	for (int a = 0; a < s->rank; a++) {
		const Onnx__TensorShapeProto__Dimension *d = sp->dim[a];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
			if (d->dim_value < 0) {
				diag_error(L->D, "input '%s' has negative dimension %lld on axis %d", vi->name,
					   (long long)d->dim_value, a);
				return 1;
			}
			s->d[a] = ir_dim_const(d->dim_value);
			continue;
		}
		int sym;
		int named = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
			    *d->dim_param;
		const onnx_binding *fixed = fixed_dim(L, named ? d->dim_param : arena_printf(L->A, "%s_%d", vi->name, a),
						      nbind, bind, used);
		/* SYM=OTHER where OTHER is fixed to N: SYM is N as well */
		for (int j = 0; fixed && fixed->same && j < nbind; j++)
			if (bind[j].dim > 0 && !bind[j].same && !strcmp(bind[j].name, fixed->same))
				fixed = &bind[j];
		if (fixed && fixed->same) {
			int i = 0;
			while (i < L->g->nsyms && strcmp(L->g->syms[i], fixed->same) != 0)
				i++;
			if (i == L->g->nsyms) {
				diag_error(L->D, "--dim %s=%s: no symbol '%s' on the inputs before '%s' (cellc info lists "
					   "the symbols)", fixed->name, fixed->same, fixed->same, vi->name);
				return 1;
			}
			s->d[a] = ir_dim_sym(i);
			continue;
		}
		if (fixed) {
			s->d[a] = ir_dim_const(fixed->dim);
			continue;
		}
		if (named)
			sym = dim_symbol(L, sym_origin, arena_printf(L->A, "p:%s", d->dim_param), d->dim_param);
		else
			sym = dim_symbol(L, sym_origin, arena_printf(L->A, "f:%s:%d", vi->name, a),
					 arena_printf(L->A, "%s_%d", vi->name, a));
		if (sym < 0) {
			diag_error(L->D, "input '%s' needs more than %d dimension symbols in all; give fixed sizes "
				   "for some dimensions", vi->name, (int)IR_MAX_SYMS);
			return 1;
		}
		s->d[a] = ir_dim_sym(sym);
	}
	return 0;
}

/* A bound input's value must fit what the model declares. */
static void check_binding(onnx_ctx *L, const Onnx__ValueInfoProto *vi, const Onnx__TypeProto__Tensor *tt,
			  const ir_value *v)
{
	if ((int)(v->narrow ? v->narrow : v->dtype) != tt->elem_type) {
		diag_error(L->D, "bound value of input '%s' has element type %s; the model declares %s", vi->name,
			   onnx_dtype_name(v->narrow ? v->narrow : v->dtype), onnx_dtype_name(tt->elem_type));
		return;
	}
	if (!tt->shape)
		return;
	if ((int)tt->shape->n_dim != v->shape.rank) {
		diag_error(L->D, "bound value of input '%s' has rank %d; the model declares rank %zu", vi->name,
			   v->shape.rank, tt->shape->n_dim);
		return;
	}
	for (int a = 0; a < v->shape.rank; a++) {
		const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[a];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value != v->shape.d[a].k) {
			diag_error(L->D, "bound value of input '%s' has %lld on axis %d; the model declares %lld",
				   vi->name, (long long)v->shape.d[a].k, a, (long long)d->dim_value);
			return;
		}
	}
}

/* The sizes a bound sequence or optional input gives the dim_params of the
 * element shape its type declares: a parameter on an axis where every
 * element has the declared rank and one size is that size, for every input
 * that names it (a tensor input [N] beside a sequence of [N] tensors).
 * Appended to xb as --dim bindings, marked used; an explicit --dim of the
 * same name comes first in xb and so wins. */
static int seq_dims(onnx_ctx *L, const Onnx__ValueInfoProto *vi, const ir_value *v, onnx_binding *xb, int nx,
		    int max)
{
	const Onnx__TypeProto *tp = vi->type;
	while (tp && tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		tp = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE ? tp->sequence_type->elem_type
		     : tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE ? tp->optional_type->elem_type : NULL;
	if (!v || !tp || !tp->tensor_type->shape || v->nelem < 1)
		return nx;
	const Onnx__TensorShapeProto *sp = tp->tensor_type->shape;
	for (int i = 0; i < v->nelem; i++)
		if (!v->elem[i] || v->elem[i]->seq != IR_TENSOR || v->elem[i]->shape.rank != (int)sp->n_dim)
			return nx;
	for (size_t a = 0; a < sp->n_dim && nx < max; a++) {
		const Onnx__TensorShapeProto__Dimension *d = sp->dim[a];
		if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM || !d->dim_param ||
		    !*d->dim_param)
			continue;
		int64_t size = v->elem[0]->shape.d[a].k;
		for (int i = 1; i < v->nelem && size >= 0; i++)
			if (v->elem[i]->shape.d[a].k != size)
				size = -1;
		if (size > 0)
			xb[nx++] = (onnx_binding){.name = d->dim_param, .dim = size};
	}
	return nx;
}

static void load_inputs(onnx_ctx *L, const Onnx__GraphProto *gp, int nbind0, const onnx_binding *bind0)
{
	ir_graph *g = L->g;
	const char *sym_origin[IR_MAX_SYMS];
	/* the bound sequences and optionals first: their element sizes fix symbols */
	int maxb = nbind0 + (int)gp->n_input * IR_MAX_RANK, nbind = nbind0;
	onnx_binding *bind = arena_array(L->A, (size_t)(maxb ? maxb : 1), sizeof *bind);
	int *used = arena_array(L->A, (size_t)(maxb ? maxb : 1), sizeof *used);
	ir_value **pre = arena_array(L->A, gp->n_input ? gp->n_input : 1, sizeof *pre);
	if (nbind0)
		memcpy(bind, bind0, (size_t)nbind0 * sizeof *bind);
	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];
		int kind = vi->name ? onnx_type_kind(vi->type) : IR_TENSOR;
		if (kind == IR_TENSOR || !is_bound(vi->name, nbind0, bind0) || onnx_map_get(&L->values, vi->name))
			continue;
		pre[k] = bound_seq_value(L, vi, kind, nbind0, bind0, used);
		int from = nbind;
		nbind = seq_dims(L, vi, pre[k], bind, nbind, maxb);
		for (int b = from; b < nbind; b++)
			used[b] = 1;
	}
	onnx_map seen = {0};
	g->inputs = arena_array(L->A, gp->n_input ? gp->n_input : 1, sizeof *g->inputs);
	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];
		if (check_value_name(L, "graph input", vi->name))
			continue;
		if (onnx_map_get(&seen, vi->name)) {
			diag_error(L->D, "graph input '%s' is listed twice", vi->name);
			continue;
		}
		onnx_map_put(L->A, &seen, vi->name, (void *)vi);
		if (onnx_map_get(&L->values, vi->name))
			continue;       /* an initializer: a weight, not a run-time input */
		int kind = onnx_type_kind(vi->type);
		if (kind != IR_TENSOR) {
			/* resolved at compile time: bound, or refused by pass_infer (check_sources) */
			ir_value *v = pre[k];
			if (!v && !is_bound(vi->name, nbind, bind)) {
				v = ir_value_new(g, vi->name, VAL_INPUT, DT_F32);
				v->seq = kind;
				v->shape.rank = 0;
				g->inputs[g->ninputs++] = v;
			}
			if (!v)
				v = ir_value_new(g, vi->name, VAL_INPUT, DT_UNDEF);
			onnx_map_put(L->A, &L->values, v->name, v);
			continue;
		}
		const Onnx__TypeProto__Tensor *tt = tensor_type(L, "input", vi, 1);
		ir_value *v = NULL;
		ir_shape s;
		if (tt && is_bound(vi->name, nbind, bind)) {
			v = bound_value(L, vi->name, nbind, bind, used, tt, NULL);
			if (v)
				check_binding(L, vi, tt, v);
		} else if (tt && !tt->shape) {
			diag_error(L->D, "input '%s' has no shape; cellc needs at least its rank", vi->name);
		} else if (tt && input_shape(L, sym_origin, vi, tt->shape, &s, nbind, bind, used) == 0) {
			v = ir_value_new(g, vi->name, VAL_INPUT, onnx_dtype_narrow(tt->elem_type) ? DT_F32
											     : (ir_dtype)tt->elem_type);
			v->narrow = onnx_dtype_narrow(tt->elem_type) ? (ir_dtype)tt->elem_type : DT_UNDEF;
			v->shape = s;
			g->inputs[g->ninputs++] = v;
		}
		/* After an error the name is still defined, so that the nodes
		 * using it do not report it missing too. */
		if (!v)
			v = ir_value_new(g, vi->name, VAL_INPUT, DT_UNDEF);
		onnx_map_put(L->A, &L->values, v->name, v);
	}
	for (int b = 0; b < nbind; b++) {
		if (used[b])
			continue;
		const ir_value *in = bind[b].dim > 0 ? onnx_map_get(&L->values, bind[b].name) : NULL;
		if (in && in->kind == VAL_INPUT && in->dtype == DT_I64 && ir_shape_const_numel(&in->shape) == 1) {
			diag_error(L->D, "--dim %s=%lld: '%s' is an input, not a dimension (where its value is a size, "
				      "such as a Loop's trip count, it is given at run time); to compile for one value, "
				      "bind it: --bind %s=%lld", bind[b].name, (long long)bind[b].dim, bind[b].name,
				   bind[b].name, (long long)bind[b].dim);
			continue;
		}
		if (bind[b].dim > 0) {
			const char *all = "";
			for (int i = 0; i < g->nsyms; i++)
				all = arena_printf(L->A, "%s%s%s", all, i ? ", " : "", g->syms[i]);
			diag_error(L->D, "--dim %s=%lld: no input dimension is named '%s' (the symbols left: %s)",
				   bind[b].name, (long long)bind[b].dim, bind[b].name, *all ? all : "none");
			continue;
		}
		/* A binding of an input that is only an initializer overrides it. */
		if (!onnx_map_get(&L->values, bind[b].name) && !onnx_map_get(&seen, bind[b].name)) {
			const Onnx__TensorProto *init = NULL;
			for (size_t k = 0; k < gp->n_initializer; k++)
				if (gp->initializer[k]->name && strcmp(gp->initializer[k]->name, bind[b].name) == 0)
					init = gp->initializer[k];
			if (init) {
				ir_value *v = bound_value(L, bind[b].name, nbind, bind, used, NULL, init);
				if (v)
					onnx_map_put(L->A, &L->values, v->name, v);
				continue;
			}
		}
		if (!onnx_map_get(&seen, bind[b].name))
			diag_error(L->D, "cannot bind '%s': the model has no input of that name", bind[b].name);
	}
}

/* ---- node order ---- */

/* A min-heap of node indices: Kahn's algorithm taking the earliest ready
 * node keeps the file's order whenever the file is already sorted. */
static void heap_push(int *h, int *n, int v)
{
	int i = (*n)++;
	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static int heap_pop(int *h, int *n)
{
	int top = h[0], v = h[--*n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
	return top;
}

static int producer_of(const onnx_map *producer, const char *name)
{
	return name && *name ? (int)(intptr_t)onnx_map_get(producer, name) - 1 : -1;
}

/* Fills order[] with a topological order of gp's nodes.  -1 on a cycle. */
static int topo_order(onnx_ctx *L, const Onnx__GraphProto *gp, int *order)
{
	int n = (int)gp->n_node;
	onnx_map producer = {0};
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < gp->node[i]->n_output; k++) {
			const char *o = gp->node[i]->output[k];
			if (o && *o && !onnx_map_get(&producer, o))
				onnx_map_put(L->A, &producer, o, (void *)(intptr_t)(i + 1));
		}
	/* Edges producer -> consumer, grouped by producer: to[first[p] ..
	 * first[p + 1]) are the consumers of node p. */
	size_t *first = arena_array(L->A, (size_t)n + 1, sizeof *first);
	int *indeg = arena_array(L->A, (size_t)n + 1, sizeof *indeg);
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < gp->node[i]->n_input; k++) {
			int p = producer_of(&producer, gp->node[i]->input[k]);
			if (p >= 0) {
				first[p + 1]++;
				indeg[i]++;
			}
		}
	for (int i = 0; i < n; i++)
		first[i + 1] += first[i];
	size_t *fill = arena_array(L->A, (size_t)n + 1, sizeof *fill);
	memcpy(fill, first, ((size_t)n + 1) * sizeof *fill);
	int *to = arena_array(L->A, first[n] ? first[n] : 1, sizeof *to);
	for (int i = 0; i < n; i++)
		for (size_t k = 0; k < gp->node[i]->n_input; k++) {
			int p = producer_of(&producer, gp->node[i]->input[k]);
			if (p >= 0)
				to[fill[p]++] = i;
		}
	int *heap = arena_array(L->A, (size_t)n + 1, sizeof *heap), nheap = 0, cnt = 0;
	for (int i = 0; i < n; i++)
		if (!indeg[i])
			heap_push(heap, &nheap, i);
	while (nheap) {
		int i = heap_pop(heap, &nheap);
		order[cnt++] = i;
		for (size_t e = first[i]; e < first[i + 1]; e++)
			if (--indeg[to[e]] == 0)
				heap_push(heap, &nheap, to[e]);
	}
	if (cnt == n)
		return 0;
	for (int i = 0; i < n; i++)
		if (indeg[i]) {
			const Onnx__NodeProto *np = gp->node[i];
			diag_error(L->D, "the graph has a cycle: node '%s' (%s) depends on its own output",
				   np->name && *np->name ? np->name : "(unnamed)", np->op_type ? np->op_type : "?");
			break;
		}
	return -1;
}

int onnx_topo_order(onnx_ctx *L, const Onnx__GraphProto *gp, int *order)
{
	return topo_order(L, gp, order);
}

/* ---- outputs ---- */

/* A FLOAT16 / BFLOAT16 output: computed in float32, it leaves rounded to
 * the declared type by a Cast that takes over its name (v gets a fresh one). */
static ir_value *narrow_output(onnx_ctx *L, ir_value *v, ir_dtype narrow)
{
	ir_graph *g = L->g;
	if (v->producer && v->producer->op == OP_CAST && ir_attr_int(v->producer, "to", 0) == narrow) {
		v->narrow = narrow;
		return v;       /* rounded already */
	}
	const char *name = v->name;
	v->name = ir_unique_name(g, name);
	ir_node *n = ir_node_new(g, OP_CAST, NULL, 1, 1);
	ir_attr_set_int(n, "to", narrow);
	n->in[0] = v;
	n->out[0] = ir_value_new(g, name, VAL_TEMP, DT_F32);
	n->out[0]->narrow = narrow;
	ir_append(g, n);
	onnx_map_put(L->A, &L->values, name, n->out[0]);
	return n->out[0];
}

static void load_outputs(onnx_ctx *L, const Onnx__GraphProto *gp)
{
	ir_graph *g = L->g;
	if (!gp->n_output)
		diag_error(L->D, "the graph has no outputs");
	g->outputs = arena_array(L->A, gp->n_output ? gp->n_output : 1, sizeof *g->outputs);
	for (size_t k = 0; k < gp->n_output; k++) {
		const Onnx__ValueInfoProto *vi = gp->output[k];
		if (check_value_name(L, "graph output", vi->name))
			continue;
		int kind = onnx_type_kind(vi->type);
		if (vi->type && kind == IR_TENSOR && !tensor_type(L, "output", vi, 0))
			continue;
		ir_value *v = onnx_map_get(&L->values, vi->name);
		if (!v) {
			diag_error(L->D, "graph output '%s' is not produced by any node, initializer or input", vi->name);
			continue;
		}
		if (v->is_output) {
			diag_error(L->D, "graph output '%s' is listed twice", vi->name);
			continue;
		}
		if (kind == IR_TENSOR && vi->type && vi->type->tensor_type->has_elem_type &&
		    onnx_dtype_narrow(vi->type->tensor_type->elem_type))
			v = narrow_output(L, v, (ir_dtype)vi->type->tensor_type->elem_type);
		v->is_output = 1;
		if (kind != IR_TENSOR)
			v->seq = kind;  /* what the data sets hold; resolved by pass_seq */
		g->outputs[g->noutputs++] = v;
		const Onnx__TensorShapeProto *sp = kind == IR_TENSOR && vi->type ? vi->type->tensor_type->shape : NULL;
		if (sp && sp->n_dim <= IR_MAX_RANK) {   /* the file's shape: a hint (ir_graph.declared) */
			if (!g->declared)
				g->declared = arena_array(L->A, gp->n_output, sizeof *g->declared);
			struct ir_declared *d = &g->declared[g->ndeclared++];
			d->name = v->name;
			d->rank = (int)sp->n_dim;
			for (size_t i = 0; i < sp->n_dim; i++) {
				const Onnx__TensorShapeProto__Dimension *dm = sp->dim[i];
				int named = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
					    dm->dim_param && *dm->dim_param;
				d->dim[i] = dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
					dm->dim_value >= 0 ? dm->dim_value : named ? -1 : -2;
				d->param[i] = named ? arena_strdup(L->A, dm->dim_param) : NULL;
			}
		}
	}
}

/* ---- the model ---- */

static void load_graph(onnx_ctx *L, const Onnx__ModelProto *m, int nbind, const onnx_binding *bind)
{
	const Onnx__GraphProto *gp = m->graph;
	if (gp->n_sparse_initializer) {
		const Onnx__SparseTensorProto *sp = gp->sparse_initializer[0];
		diag_error(L->D, "sparse initializer '%s' is not supported",
			   sp->values && sp->values->name ? sp->values->name : "?");
		return;
	}
	if (m->n_training_info)
		diag_warn(L->D, "the model's training_info is ignored");
	load_initializers(L, gp, nbind, bind);
	load_inputs(L, gp, nbind, bind);
	if (gp->n_node > (size_t)1 << 28) {
		diag_error(L->D, "the graph has %zu nodes", gp->n_node);
		return;
	}
	int *order = arena_array(L->A, gp->n_node + 1, sizeof *order);
	if (topo_order(L, gp, order) != 0)
		return;
	/* every node, past the errors printed too: diag_finish counts the rest
	 * by operator, `cellc info --unsupported` lists them */
	for (size_t k = 0; k < gp->n_node; k++) {
		L->node_index = order[k];
		onnx_load_node(L, gp->node[order[k]]);
	}
	load_outputs(L, gp);
}

static ir_graph *load_model(onnx_ctx *L, const Onnx__ModelProto *m, const char *path, uint64_t hash,
			    int nbind, const onnx_binding *bind)
{
	if (!m->has_ir_version || !m->graph) {
		diag_error(L->D, "not a valid ONNX model: no %s (is this an ONNX file?)",
			   !m->has_ir_version ? "ir_version" : "graph");
		return NULL;
	}
	L->model = m;
	L->opset = model_opset(L, m);
	if (L->opset < 0)
		return NULL;
	const char *gname = m->graph->name && *m->graph->name ? m->graph->name : NULL;
	ir_graph *g = L->g = ir_graph_new(L->A, NULL, gname);
	g->opset = L->opset;
	g->source = arena_strdup(L->A, path);
	g->source_hash = hash;
	const char *pn = m->producer_name ? m->producer_name : "", *pv = m->producer_version ? m->producer_version : "";
	g->producer = arena_printf(L->A, "%s%s%s", pn, *pn && *pv ? " " : "", pv);
	const Onnx__GraphProto *gp = m->graph;
	for (size_t i = 0; i < gp->n_node; i++)
		for (size_t k = 0; gp->node[i] && k < gp->node[i]->n_output; k++)
			if (gp->node[i]->output[k] && *gp->node[i]->output[k])
				onnx_map_put(L->A, &L->outer_names, gp->node[i]->output[k], (void *)gp->node[i]->output[k]);
	for (size_t i = 0; i < gp->n_output; i++)
		if (gp->output[i] && gp->output[i]->name && *gp->output[i]->name)
			onnx_map_put(L->A, &L->outer_names, gp->output[i]->name, (void *)gp->output[i]->name);
	load_graph(L, m, nbind, bind);
	return g;
}

ir_graph *onnx_load_bound(arena *A, diag *D, const char *path, int nbind, const onnx_binding *bind)
{
	char err[400];
	unsigned char *buf;
	size_t len;
	if (!D->file)
		D->file = path;
	int errors_before = D->nerrors;
	if (onnx_read_file(path, MODEL_FILE_LIMIT, &buf, &len, err, sizeof err) != 0) {
		diag_error(D, "cannot read the model: %s", err);
		return NULL;
	}
	uint64_t hash = fnv1a(buf, len);
	if (len == 0) {
		diag_error(D, "not a valid ONNX model: the file is empty");
		free(buf);
		return NULL;
	}
	if (onnx_wire_check(buf, len, &onnx__model_proto__descriptor, err, sizeof err) != 0) {
		diag_error(D, "not a valid ONNX model: %s", err);
		free(buf);
		return NULL;
	}
	Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
	free(buf);
	if (!m) {
		diag_error(D, "not a valid ONNX model: protobuf parse failed (the file is truncated, "
			      "damaged or not an ONNX protobuf)");
		return NULL;
	}
	onnx_ctx L = {.A = A, .D = D, .dir = onnx_dirname(A, path)};
	ir_graph *g = load_model(&L, m, path, hash, nbind, bind);
	onnx__model_proto__free_unpacked(m, NULL);
	return D->nerrors > errors_before ? NULL : g;
}

ir_graph *onnx_load(arena *A, diag *D, const char *path)
{
	return onnx_load_bound(A, D, path, 0, NULL);
}
