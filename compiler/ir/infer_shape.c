/* infer_shape.c: infer_node, the output dtype and shape of every IR op.
 *
 * One function per op family, following the ONNX operator specification of
 * the newest opset (see ops.def).  Shapes are symbolic: a dimension is a
 * monomial over the graph's dimension symbols.  What depends on the run-time
 * value of a symbol in a way a monomial cannot express (slicing a symbolic
 * axis at an offset from its end, concatenating a batch axis with a time
 * axis, broadcasting a symbolic dim against a constant) is a located error
 * rather than a guess.  Inputs that determine the output shape (Reshape's
 * shape, Slice's starts...) must be constants; when one is not, the error
 * says which graph input it comes from and how to bind it.
 *
 * Monomial helpers and the small pointer set shared with infer_fold.c,
 * pass_infer.c and ir_verify.c live at the end of this file.
 */
#include "cells.h"
#include "infer.h"
#include "train.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct ictx {
	ir_graph *g;
	ir_node *n;
	diag *D;
	arena *A;
} ictx;

static int fail(ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ictx *c, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	diag_node(c->D, c->n, "%s", buf);
	return 1;
}

static const char *shp(ictx *c, const ir_shape *s) { return ir_shape_str(c->A, c->g, s); }
static const char *dimstr(ictx *c, ir_dim d) { return ir_dim_str(c->A, c->g, d); }
static const char *mono(ictx *c, ir_dim d) { return infer_mono_str(c->A, c->g, d); }
static ir_value *in(ictx *c, int k) { return k < c->n->nin ? c->n->in[k] : NULL; }

static const char *iname(ictx *c, int k)
{
	ir_value *v = in(c, k);
	return v ? v->name : "?";
}

static void set_out(ictx *c, int k, ir_dtype dt, const ir_shape *s)
{
	if (k < c->n->nout && c->n->out[k]) {
		c->n->out[k]->dtype = dt;
		c->n->out[k]->shape = *s;
	}
}

static int is_one(ir_dim d) { return ir_dim_eq(d, ir_dim_const(1)); }

/* An axis attribute or element in [-r, r-1] made non-negative; -1 if out of range. */
static int norm_axis(int64_t a, int r)
{
	if (a < -(int64_t)r || a >= r)
		return -1;
	return (int)(a < 0 ? a + r : a);
}

/* ---- dtypes ------------------------------------------------------------ */

enum { TY_FLOAT = 1, TY_SINT = 2, TY_UINT = 4, TY_BOOL = 8 };
#define TY_INT (TY_SINT | TY_UINT)
#define TY_NUM (TY_FLOAT | TY_INT)
#define TY_SIGNED (TY_FLOAT | TY_SINT)
#define TY_ANY (TY_NUM | TY_BOOL)

int infer_dtype_ok(ir_dtype t)
{
	switch (t) {
	case DT_F32: case DT_F64: case DT_I64: case DT_I32: case DT_I16: case DT_I8:
	case DT_U64: case DT_U32: case DT_U16: case DT_U8: case DT_BOOL:
		return 1;
	default:
		return 0;
	}
}

static int ty_class(ir_dtype t)
{
	switch (t) {
	case DT_F32: case DT_F64: return TY_FLOAT;
	case DT_I64: case DT_I32: case DT_I16: case DT_I8: return TY_SINT;
	case DT_U64: case DT_U32: case DT_U16: case DT_U8: return TY_UINT;
	case DT_BOOL: return TY_BOOL;
	default: return 0;
	}
}

/* Input k (if present) must have a dtype of the given classes. */
static int need_ty(ictx *c, int k, int classes, const char *what)
{
	ir_value *v = in(c, k);
	if (!v || (ty_class(v->dtype) & classes))
		return 0;
	return fail(c, "unsupported dtype %s for input %d ('%s') of %s", ir_dtype_name(v->dtype), k,
		    v->name, what);
}

/* Input k (if present) must have the dtype of input 0. */
static int same_ty(ictx *c, int k)
{
	ir_value *v = in(c, k), *x = in(c, 0);
	if (!v || v->dtype == x->dtype)
		return 0;
	return fail(c, "input %d ('%s') has dtype %s but input 0 ('%s') has dtype %s", k, v->name,
		    ir_dtype_name(v->dtype), x->name, ir_dtype_name(x->dtype));
}

/* Operators we run only in single precision (BLAS sgemm and the fused cells). */
static int need_f32(ictx *c, int k)
{
	ir_value *v = in(c, k);
	if (!v || v->dtype == DT_F32)
		return 0;
	return fail(c, "unsupported dtype %s for %s (input %d '%s'): only f32 is supported",
		    ir_dtype_name(v->dtype), c->n->op_type ? c->n->op_type : ir_op_name(c->n->op), k,
		    v->name);
}

/* ---- shape-determining constant inputs ------------------------------------ */

const char *infer_shape_input(ir_op op, int k)
{
	static const char *const slice[] = {NULL, "starts", "ends", "axes", "steps"};
	switch (op) {
	case OP_RESHAPE: case OP_EXPAND: return k == 1 ? "shape" : NULL;
	case OP_SLICE: return k >= 1 && k <= 4 ? slice[k] : NULL;
	case OP_SQUEEZE: case OP_UNSQUEEZE: return k == 1 ? "axes" : NULL;
	case OP_SPLIT: return k == 1 ? "split" : NULL;
	case OP_CONSTOFSHAPE: return k == 0 ? "input" : NULL;
	case OP_PAD: return k == 1 ? "pads" : k == 3 ? "axes" : NULL;
	case OP_CUMSUM: return k == 1 ? "axis" : NULL;
	case OP_RANGE: return k == 0 ? "start" : k == 1 ? "limit" : k == 2 ? "delta" : NULL;
	case OP_ONEHOT: return k == 1 ? "depth" : NULL;
	case OP_TILE: return k == 1 ? "repeats" : NULL;
	case OP_TOPK: return k == 1 ? "K" : NULL;
	case OP_RESIZE: return k == 1 ? "roi" : k == 2 ? "scales" : k == 3 ? "sizes" : NULL;
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: return k == 0 ? "size" : NULL;
	case OP_MAXUNPOOL: return k == 2 ? "output_shape" : NULL;
	case OP_DFT: return k == 1 ? "dft_length" : NULL;
	case OP_STFT: return k == 1 ? "frame_step" : k == 3 ? "frame_length" : NULL;
	case OP_MELWEIGHT: {
		static const char *const mel[] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
						  "upper_edge_hertz"};
		return k >= 0 && k < 5 ? mel[k] : NULL;
	}
	case OP_REDUCESUM: case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCEPROD:
	case OP_REDUCEL1: case OP_REDUCEL2: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
	case OP_REDUCESUMSQUARE:
		return k == 1 ? "axes" : NULL;
	default: return NULL;
	}
}

/* The graph input a run-time value is computed from (the nearest one in
 * node order), or NULL if none: sweeps the producers backwards. */
static const ir_value *input_origin(ir_graph *g, const ir_value *v, const ir_node **via)
{
	if (v->kind == VAL_INPUT)
		return v;
	*via = v->producer;
	if (!v->producer)
		return NULL;
	infer_set need;
	infer_set_init(&need);
	infer_set_add(&need, v);
	const ir_value *found = NULL;
	for (int i = g->nnodes - 1; i >= 0 && !found; i--) {
		const ir_node *n = g->nodes[i];
		int hit = 0;
		for (int k = 0; k < n->nout; k++)
			hit |= n->out[k] && infer_set_has(&need, n->out[k]);
		for (int k = 0; hit && k < n->nin && !found; k++) {
			const ir_value *x = n->in[k];
			if (x && x->kind == VAL_INPUT)
				found = x;
			else if (x)
				infer_set_add(&need, x);
		}
	}
	infer_set_free(&need);
	return found;
}

static int not_const(ictx *c, int k)
{
	const char *what = infer_shape_input(c->n->op, k);
	ir_value *v = in(c, k);
	const ir_node *via = NULL;
	if (!v)
		return fail(c, "input %d ('%s') is missing; it determines the output shape", k, what ? what : "?");
	const ir_value *o = input_origin(c->g, v, &via);
	if (o)
		return fail(c, "input '%s' (tensor '%s') determines the output shape and must be a "
			    "constant; it comes from graph input '%s': bind it with --bind %s=FILE.pb",
			    what, v->name, o->name, o->name);
	if (via)
		return fail(c, "input '%s' (tensor '%s') determines the output shape and must be a "
			    "constant; it is computed at run time by node '%s' (%s)", what, v->name,
			    via->name, via->op_type ? via->op_type : ir_op_name(via->op));
	return fail(c, "input '%s' (tensor '%s') determines the output shape and must be a constant",
		    what, v->name);
}

/* Reads shape-determining input k as monomials into v[max].  Returns the
 * element count, or -1 after reporting. */
static int const_ints(ictx *c, int k, ir_dim *v, int max)
{
	ir_value *x = in(c, k);
	const char *what = infer_shape_input(c->n->op, k);
	if (!x)
		return fail(c, "input %d ('%s') is missing; it determines the output shape", k,
			    what ? what : "?"), -1;
	if (!infer_is_const(x))
		return not_const(c, k), -1;
	if (x->shape.rank > 1)
		return fail(c, "input '%s' (tensor '%s') must be a 1-D tensor, not %s", what, x->name,
			    shp(c, &x->shape)), -1;
	if (!x->sym && !(ty_class(x->dtype) & TY_INT))
		return fail(c, "input '%s' (tensor '%s') must be an integer tensor, not %s", what,
			    x->name, ir_dtype_name(x->dtype)), -1;
	int64_t m = ir_shape_const_numel(&x->shape);
	if (m < 0 || m > max)
		return fail(c, "input '%s' (tensor '%s') has %s elements; at most %d are allowed here",
			    what, x->name, shp(c, &x->shape), max), -1;
	for (int i = 0; i < m; i++)
		v[i] = infer_elem_dim(x, i);
	return (int)m;
}

/* Same, where every element must be a plain integer (axes, steps). */
static int const_plain(ictx *c, int k, int64_t *v, int max)
{
	ir_dim d[64];
	int m = const_ints(c, k, d, max < 64 ? max : 64);
	for (int i = 0; i < m; i++) {
		if (!infer_mono_is_const(d[i]))
			return fail(c, "input '%s' element %d is the run-time size %s; it must be a "
				    "constant", infer_shape_input(c->n->op, k), i, mono(c, d[i])), -1;
		v[i] = d[i].k;
	}
	return m;
}

/* Axes list (Squeeze/Unsqueeze): normalised against rank r, distinct. */
static int axes_list(ictx *c, int k, int r, int *ax, int max)
{
	int64_t a[IR_MAX_RANK];
	int m = const_plain(c, k, a, max);
	if (m < 0)
		return -1;
	for (int i = 0; i < m; i++) {
		ax[i] = norm_axis(a[i], r);
		if (ax[i] < 0)
			return fail(c, "axis %lld is out of range for rank %d", (long long)a[i], r), -1;
		for (int j = 0; j < i; j++)
			if (ax[j] == ax[i])
				return fail(c, "axis %lld is listed twice", (long long)a[i]), -1;
	}
	return m;
}

/* A shape element from a constant tensor (ConstantOfShape, Expand): a
 * non-negative constant or a monomial of positive factor. */
static int dim_elem(ictx *c, ir_dim v, int i, ir_dim *out)
{
	if (v.k < 0 || v.k > INFER_NUMEL_MAX)
		return fail(c, "shape element %d is %s; it must be between 0 and %lld", i, mono(c, v),
			    (long long)INFER_NUMEL_MAX);
	*out = v.k == 0 ? ir_dim_const(0) : v;
	return 0;
}

/* ---- broadcasting ---------------------------------------------------------- */

/* When a size that an input's symbol gives meets a constant size other
 * than 1 (a tensor whose size was fixed when the model was exported, such
 * as states made from the traced batch size), what the model needs and how
 * to compile it; else "". */
static const char *fixed_size_hint(ictx *c, ir_dim a, ir_dim b)
{
	ir_graph *root = ir_root(c->g);
	for (int swap = 0; swap < 2; swap++) {
		ir_dim s = swap ? b : a, k = swap ? a : b;
		int i = ir_dim_one_sym(s);
		if (i >= 0 && ir_sym_free(root, i) && ir_dim_is_const(k) && k.k > 1)
			return arena_printf(c->A, ": the model holds a size fixed when it was exported (%lld where "
					    "the input has %s); --dim %s=%lld compiles it for that size", (long long)k.k,
					    root->syms[i], root->syms[i], (long long)k.k);
	}
	return "";
}

/* Multidirectional (numpy) broadcasting of a and b into r. */
static int broadcast2(ictx *c, const ir_shape *a, const ir_shape *b, ir_shape *r)
{
	int rank = a->rank > b->rank ? a->rank : b->rank;
	ir_shape o = {.rank = rank};
	for (int i = 0; i < rank; i++) {
		int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
		ir_dim da = ia >= 0 ? a->d[ia] : ir_dim_const(1);
		ir_dim db = ib >= 0 ? b->d[ib] : ir_dim_const(1);
		if (ir_dim_eq(da, db) || is_one(db))
			o.d[i] = da;
		else if (is_one(da))
			o.d[i] = db;
		else
			return fail(c, "shapes %s and %s cannot be broadcast together (dimension %s "
				    "against %s)%s", shp(c, a), shp(c, b), dimstr(c, da), dimstr(c, db),
				    fixed_size_hint(c, da, db));
	}
	*r = o;
	return 0;
}

/* Whether b broadcasts to a without changing a (unidirectional). */
static int broadcasts_to(const ir_shape *b, const ir_shape *a)
{
	if (b->rank > a->rank)
		return 0;
	for (int i = 0; i < b->rank; i++) {
		ir_dim db = b->d[i], da = a->d[i + a->rank - b->rank];
		if (!is_one(db) && !ir_dim_eq(db, da))
			return 0;
	}
	return 1;
}

/* ---- element-wise ---------------------------------------------------------- */

static int infer_elem(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	const char *op = ir_op_name(n->op);
	ir_shape s = x->shape;
	switch (n->op) {
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD: case OP_POW:
		/* Pow's exponent may have any numeric dtype (Pow-12 and later) */
		if (need_ty(c, 0, TY_NUM, op) || (n->op == OP_POW ? need_ty(c, 1, TY_NUM, op) : same_ty(c, 1)))
			return 1;
		if (broadcast2(c, &x->shape, &in(c, 1)->shape, &s))
			return 1;
		break;
	case OP_RELU: case OP_NEG:
		if (need_ty(c, 0, TY_SIGNED, op))
			return 1;
		break;
	case OP_ABS: case OP_SIGN: case OP_SHRINK:
		if (need_ty(c, 0, TY_NUM, op))
			return 1;
		break;
	case OP_IDENTITY:
		break;
	case OP_MIN: case OP_MAX: case OP_SUM: case OP_MEAN:
		if (need_ty(c, 0, n->op == OP_MEAN ? TY_FLOAT : TY_NUM, op))
			return 1;
		for (int k = 1; k < n->nin; k++)
			if (!in(c, k))
				return fail(c, "input %d is missing (%s takes no empty input)", k, op);
			else if (same_ty(c, k) || broadcast2(c, &s, &in(c, k)->shape, &s))
				return 1;
		break;
	case OP_EQUAL: case OP_LESS: case OP_LESSEQ: case OP_GREATER: case OP_GREATEREQ:
	case OP_AND: case OP_OR: case OP_XOR: {
		int logic = n->op == OP_AND || n->op == OP_OR || n->op == OP_XOR;
		if (need_ty(c, 0, logic ? TY_BOOL : n->op == OP_EQUAL ? TY_ANY : TY_NUM, op) || same_ty(c, 1) ||
		    broadcast2(c, &x->shape, &in(c, 1)->shape, &s))
			return 1;
		set_out(c, 0, DT_BOOL, &s);
		return 0;
	}
	case OP_NOT:
		if (need_ty(c, 0, TY_BOOL, op))
			return 1;
		break;
	case OP_WHERE: {
		ir_value *a = in(c, 1), *b = in(c, 2);
		if (need_ty(c, 0, TY_BOOL, op))
			return 1;
		if (a->dtype != b->dtype)
			return fail(c, "inputs 1 ('%s') and 2 ('%s') have dtypes %s and %s; Where needs one",
				    a->name, b->name, ir_dtype_name(a->dtype), ir_dtype_name(b->dtype));
		if (ir_attr_int(n, "if_select", 0) && !ir_shape_eq(&a->shape, &b->shape))
			return fail(c, "the branches of an If with a data-dependent condition give '%s' %s and '%s' "
				    "%s; cellc computes such an If as a select of both branches, which needs one shape",
				    a->name, shp(c, &a->shape), b->name, shp(c, &b->shape));
		if (broadcast2(c, &s, &a->shape, &s) || broadcast2(c, &s, &b->shape, &s))
			return 1;
		set_out(c, 0, a->dtype, &s);
		return 0;
	}
	case OP_ISNAN: case OP_ISINF:
		if (need_ty(c, 0, TY_FLOAT, op))
			return 1;
		set_out(c, 0, DT_BOOL, &s);
		return 0;
	case OP_BITSHIFT:
		if (need_ty(c, 0, TY_UINT, op) || same_ty(c, 1) || broadcast2(c, &x->shape, &in(c, 1)->shape, &s))
			return 1;
		break;
	case OP_PRELU:
		if (need_ty(c, 0, TY_FLOAT, op) || same_ty(c, 1))
			return 1;
		if (!broadcasts_to(&in(c, 1)->shape, &x->shape))
			return fail(c, "slope %s does not broadcast to X %s", shp(c, &in(c, 1)->shape),
				    shp(c, &x->shape));
		break;
	case OP_CLIP:
		if (need_ty(c, 0, TY_NUM, op))
			return 1;
		for (int k = 1; k < n->nin; k++) {
			ir_value *b = in(c, k);
			if (!b)
				continue;
			if (same_ty(c, k))
				return 1;
			if (ir_shape_const_numel(&b->shape) != 1)
				return fail(c, "input %d ('%s') must be a scalar, not %s", k, b->name,
					    shp(c, &b->shape));
		}
		break;
	default:        /* the floating-point activations */
		if (need_ty(c, 0, TY_FLOAT, op))
			return 1;
		break;
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* ---- shape ops --------------------------------------------------------------- */

static int infer_transpose(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank, perm[IR_MAX_RANK], seen[IR_MAX_RANK] = {0};
	ir_attr *a = ir_attr_find(c->n, "perm");
	if (a && a->kind != ATTR_INTS)
		return fail(c, "attribute 'perm' must be a list of ints");
	if (a && a->n != r)
		return fail(c, "attribute 'perm' has %d entries but the input %s has rank %d", a->n,
			    shp(c, &x->shape), r);
	for (int i = 0; i < r; i++) {
		int64_t p = a ? a->ints[i] : r - 1 - i;
		if (p < 0 || p >= r || seen[p])
			return fail(c, "attribute 'perm' is not a permutation of 0..%d", r - 1);
		seen[p] = 1;
		perm[i] = (int)p;
	}
	ir_shape s = {.rank = r};
	for (int i = 0; i < r; i++)
		s.d[i] = x->shape.d[perm[i]];
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_reshape(ictx *c)
{
	ir_value *x = in(c, 0);
	ir_dim v[IR_MAX_RANK];
	int m = const_ints(c, 1, v, IR_MAX_RANK);
	if (m < 0)
		return 1;
	int allowzero = ir_attr_int(c->n, "allowzero", 0) != 0;
	ir_shape s = {.rank = m};
	int infer_at = -1, has_zero = 0;
	for (int i = 0; i < m; i++) {
		if (!infer_mono_is_const(v[i])) {
			if (v[i].k <= 0)
				return fail(c, "shape element %d is %s", i, mono(c, v[i]));
			s.d[i] = v[i];
		} else if (v[i].k == 0 && !allowzero) {
			if (i >= x->shape.rank)
				return fail(c, "shape element %d is 0 (copy the input's dim) but the input "
					    "%s has rank %d", i, shp(c, &x->shape), x->shape.rank);
			s.d[i] = x->shape.d[i];
		} else if (v[i].k == -1) {
			if (infer_at >= 0)
				return fail(c, "shape has more than one -1");
			infer_at = i;
			s.d[i] = ir_dim_const(1);
		} else if (v[i].k < 0 || v[i].k > INFER_NUMEL_MAX) {
			return fail(c, "shape element %d is %lld", i, (long long)v[i].k);
		} else {
			has_zero |= v[i].k == 0;
			s.d[i] = v[i];
		}
	}
	if (has_zero && infer_at >= 0)
		return fail(c, "shape has both 0 (with allowzero=1) and -1");
	ir_dim nin, nout;
	if (!infer_numel(&x->shape, &nin))
		return fail(c, "input shape %s is too large", shp(c, &x->shape));
	if (!infer_numel(&s, &nout))
		return fail(c, "target shape %s is too large", shp(c, &s));
	if (infer_at >= 0) {
		ir_dim q;
		if (nout.k == 0)
			return fail(c, "cannot infer the -1 of the shape: the other dims multiply to 0");
		if (!ir_dim_div(nin, nout, &q))
			return fail(c, "cannot reshape %s (%s elements) into %s: %s is not divisible by %s",
				    shp(c, &x->shape), dimstr(c, nin), shp(c, &s), dimstr(c, nin),
				    dimstr(c, nout));
		s.d[infer_at] = q;
		nout = nin;
	}
	if (!ir_dim_eq(nin, nout))
		return fail(c, "cannot reshape %s (%s elements) into %s (%s elements)", shp(c, &x->shape),
			    dimstr(c, nin), shp(c, &s), dimstr(c, nout));
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_squeeze(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank, ax[IR_MAX_RANK], drop[IR_MAX_RANK] = {0};
	if (in(c, 1)) {
		int m = axes_list(c, 1, r, ax, IR_MAX_RANK);
		if (m < 0)
			return 1;
		for (int i = 0; i < m; i++) {
			if (!is_one(x->shape.d[ax[i]]))
				return fail(c, "cannot squeeze axis %d of %s: its size is %s, not 1%s", ax[i],
					    shp(c, &x->shape), dimstr(c, x->shape.d[ax[i]]),
					    ir_dim_is_const(x->shape.d[ax[i]]) ? "" :
					    " (a symbolic dimension is not assumed to be 1)");
			drop[ax[i]] = 1;
		}
	} else {
		for (int i = 0; i < r; i++)
			drop[i] = is_one(x->shape.d[i]);
	}
	ir_shape s = {.rank = 0};
	for (int i = 0; i < r; i++)
		if (!drop[i])
			s.d[s.rank++] = x->shape.d[i];
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_unsqueeze(ictx *c)
{
	ir_value *x = in(c, 0), *a = in(c, 1);
	int r = x->shape.rank;
	if (!infer_is_const(a))
		return not_const(c, 1);
	int64_t m = a->shape.rank >= 0 ? ir_shape_const_numel(&a->shape) : -1;
	if (m < 0 || r + m > IR_MAX_RANK)
		return fail(c, "the result would have rank %lld; at most %d is supported",
			    (long long)(r + (m < 0 ? 0 : m)), IR_MAX_RANK);
	int R = r + (int)m, ax[IR_MAX_RANK], ins[IR_MAX_RANK] = {0};
	if (axes_list(c, 1, R, ax, IR_MAX_RANK) < 0)
		return 1;
	for (int i = 0; i < m; i++)
		ins[ax[i]] = 1;
	ir_shape s = {.rank = R};
	for (int i = 0, j = 0; i < R; i++)
		s.d[i] = ins[i] ? ir_dim_const(1) : x->shape.d[j++];
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_flatten(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	int64_t a = ir_attr_int(c->n, "axis", 1);
	if (a < -(int64_t)r || a > r)
		return fail(c, "axis %lld is out of range for rank %d", (long long)a, r);
	int axis = (int)(a < 0 ? a + r : a);
	ir_shape lo = {.rank = axis}, hi = {.rank = r - axis}, s = {.rank = 2};
	memcpy(lo.d, x->shape.d, (size_t)axis * sizeof(ir_dim));
	memcpy(hi.d, x->shape.d + axis, (size_t)(r - axis) * sizeof(ir_dim));
	if (!infer_numel(&lo, &s.d[0]) || !infer_numel(&hi, &s.d[1]))
		return fail(c, "input shape %s is too large", shp(c, &x->shape));
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* A slice bound on a symbolic dim D, as a*D + c (a in {0, 1}). */
typedef struct spos {
	int a;
	int64_t c;
} spos;

int infer_slice_sym_bound(ir_graph *g, ir_dim D, ir_dim v, int64_t *x)
{
	g = ir_root(g);
	if (ir_dim_eq(v, D)) {
		*x = INT64_MAX;         /* the size itself clamps like "to the end" */
		return 1;
	}
	/* one symbol each, of the same base (free or derived from it) */
	int a = ir_dim_one_sym(v), b = ir_dim_one_sym(D);
	if (a < 0 || b < 0 || a >= g->nsyms || b >= g->nsyms)
		return 0;
	int ba = g->sym_base[a] ? g->sym_base[a] - 1 : a, bb = g->sym_base[b] ? g->sym_base[b] - 1 : b;
	if (ba != bb)
		return 0;
	int64_t rel = (g->sym_base[a] ? g->sym_off[a] : 0) - (g->sym_base[b] ? g->sym_off[b] : 0);
	*x = rel < 0 ? rel : INT64_MAX;
	return 1;
}

/* Effective (clamped) start or end on a symbolic dimension D, under the
 * assumption that D is at least every constant bound below INFER_SLICE_BIG:
 * recorded as its symbol's least value (ir_sym_need), which the generated
 * code checks at run time (x[-2:] needs T >= 2: at T = 1 it has one row). */
static int sym_bound(ictx *c, ir_dim D, ir_dim v, int is_end, int64_t step, spos *p)
{
	if (!infer_mono_is_const(v)) {
		int64_t k;
		if (!infer_slice_sym_bound(c->g, D, v, &k))
			return fail(c, "slice bound %s on a dimension of size %s is not decidable at "
				    "compile time", mono(c, v), dimstr(c, D));
		v = ir_dim_const(k);
	}
	int64_t x = v.k;
	if (x > -INFER_SLICE_BIG && x < INFER_SLICE_BIG && !ir_sym_need(c->g, D, x < 0 ? -x : x))
		return fail(c, "slice bound %lld on a dimension of size %s holds only when that size is at "
			    "least %lld, which cellc checks at run time for one symbol times a constant only",
			    (long long)x, dimstr(c, D), (long long)(x < 0 ? -x : x));
	if (x >= INFER_SLICE_BIG)
		*p = step > 0 ? (spos){1, 0} : (spos){1, -1};
	else if (x <= -INFER_SLICE_BIG)
		*p = step > 0 || !is_end ? (spos){0, 0} : (spos){0, -1};
	else if (x < 0)
		*p = (spos){1, x};
	else
		*p = (spos){0, x};
	return 0;
}

/* Ceiling division of a positive count by |step| (step != 0). */
static int64_t div_steps(int64_t len, int64_t step)
{
	uint64_t s = step < 0 ? 0 - (uint64_t)step : (uint64_t)step;
	return (int64_t)(((uint64_t)len - 1) / s + 1);
}

/* Length of one sliced axis of size D. */
static int slice_len(ictx *c, int axis, ir_dim D, ir_dim st, ir_dim en, int64_t step, ir_dim *len)
{
	if (ir_dim_is_const(D)) {
		int64_t d = D.k, s, e;
		if (!infer_mono_is_const(st) || !infer_mono_is_const(en))
			return fail(c, "slice bounds %s:%s on axis %d (size %lld) are not constants",
				    mono(c, st), mono(c, en), axis, (long long)d);
		s = st.k < 0 ? st.k + d : st.k;
		e = en.k < 0 ? en.k + d : en.k;
		if (step > 0) {
			s = s < 0 ? 0 : s > d ? d : s;
			e = e < 0 ? 0 : e > d ? d : e;
			*len = ir_dim_const(e > s ? div_steps(e - s, step) : 0);
		} else {
			s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
			e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			*len = ir_dim_const(d > 0 && s > e ? div_steps(s - e, step) : 0);
		}
		return 0;
	}
	spos s, e;
	if (sym_bound(c, D, st, 0, step, &s) || sym_bound(c, D, en, 1, step, &e))
		return 1;
	int da = step > 0 ? e.a - s.a : s.a - e.a;
	int64_t dc = step > 0 ? e.c - s.c : s.c - e.c;     /* |c| < 2^31: no overflow */
	if (da == 0) {
		*len = ir_dim_const(dc > 0 ? div_steps(dc, step) : 0);
		return 0;
	}
	ir_dim q;
	if (da == 1 && dc == 0 && ir_dim_div(D, ir_dim_const(step < 0 ? -step : step), &q)) {
		*len = q;
		return 0;
	}
	/* x[1:], x[:-1] of a time axis T: the derived symbol T - 1 (checked to
	 * be at least 1 at run time, like every symbol) */
	if (da == 1 && (step == 1 || step == -1) && ir_sym_offset(c->g, D, dc, len))
		return 0;
	char lt[160];
	const char *ds = dimstr(c, D);
	snprintf(lt, sizeof lt, "%s%s", da < 0 ? "-" : "", ds);       /* da is +-1 here */
	if (dc)
		snprintf(lt + strlen(lt), sizeof lt - strlen(lt), " %c %lld", dc < 0 ? '-' : '+',
			 (long long)(dc < 0 ? -dc : dc));
	if (step != 1 && step != -1)
		snprintf(lt + strlen(lt), sizeof lt - strlen(lt), ", divided by %s rounding up",
			 step == INT64_MIN ? "2^63" : arena_printf(c->A, "%lld", (long long)(step < 0 ? -step : step)));
	return fail(c, "cannot slice symbolic dimension %s (axis %d) with start %s, end %s, step "
		    "%lld: the length of the result (%s) is not a product of dimension symbols", ds,
		    axis, mono(c, st), mono(c, en), (long long)step, lt);
}

static int infer_slice(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_dim st[IR_MAX_RANK], en[IR_MAX_RANK];
	int64_t ax[IR_MAX_RANK], sp[IR_MAX_RANK];
	int m = const_ints(c, 1, st, IR_MAX_RANK);
	if (m < 0)
		return 1;
	int me = const_ints(c, 2, en, IR_MAX_RANK);
	if (me < 0)
		return 1;
	if (me != m)
		return fail(c, "'starts' has %d elements but 'ends' has %d", m, me);
	if (in(c, 3)) {
		int ma = const_plain(c, 3, ax, IR_MAX_RANK);
		if (ma < 0)
			return 1;
		if (ma != m)
			return fail(c, "'axes' has %d elements but 'starts' has %d", ma, m);
	} else {
		if (m > r)
			return fail(c, "'starts' has %d elements but the input %s has rank %d", m,
				    shp(c, &x->shape), r);
		for (int i = 0; i < m; i++)
			ax[i] = i;
	}
	if (in(c, 4)) {
		int ms = const_plain(c, 4, sp, IR_MAX_RANK);
		if (ms < 0)
			return 1;
		if (ms != m)
			return fail(c, "'steps' has %d elements but 'starts' has %d", ms, m);
	} else {
		for (int i = 0; i < m; i++)
			sp[i] = 1;
	}
	ir_shape s = x->shape;
	int seen[IR_MAX_RANK] = {0};
	for (int i = 0; i < m; i++) {
		int a = norm_axis(ax[i], r);
		if (a < 0)
			return fail(c, "axis %lld is out of range for rank %d", (long long)ax[i], r);
		if (seen[a]++)
			return fail(c, "axis %lld is listed twice", (long long)ax[i]);
		if (sp[i] == 0)
			return fail(c, "step of axis %d is 0", a);
		if (slice_len(c, a, x->shape.d[a], st[i], en[i], sp[i], &s.d[a]))
			return 1;
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_split(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	int64_t a = ir_attr_int(n, "axis", 0);
	int axis = norm_axis(a, r);
	if (axis < 0)
		return fail(c, "axis %lld is out of range for rank %d", (long long)a, r);
	ir_dim D = x->shape.d[axis], part[64];
	int k = n->nout;
	if (in(c, 1)) {
		int m = const_ints(c, 1, part, 64);
		if (m < 0)
			return 1;
		if (m != k)
			return fail(c, "'split' has %d elements but the node has %d outputs", m, k);
		ir_dim sum = ir_dim_const(0);
		for (int i = 0; i < m; i++) {
			if (part[i].k < 0)
				return fail(c, "'split' element %d is %s", i, mono(c, part[i]));
			if (!infer_mono_add(c->g, sum, part[i], &sum))
				return fail(c, "the sizes in 'split' do not add up to a product of dimension "
					    "symbols (axis %d has size %s)", axis, dimstr(c, D));
		}
		if (!ir_dim_eq(sum, D) && ir_dim_is_const(sum) && !ir_dim_is_const(D))
			return fail(c, "the sizes in 'split' add up to %s but axis %d of %s has size %s: "
				    "fixed sizes cannot split a dynamic axis (a traced x.unbind() or "
				    "torch.split() fixes the length; export that axis static)",
				    mono(c, sum), axis, shp(c, &x->shape), dimstr(c, D));
		if (!ir_dim_eq(sum, D))
			return fail(c, "the sizes in 'split' add up to %s but axis %d of %s has size %s",
				    mono(c, sum), axis, shp(c, &x->shape), dimstr(c, D));
	} else if (ir_attr_find(n, "num_outputs")) {
		/* opset 18: the last part may be smaller */
		if (!ir_dim_is_const(D))
			return fail(c, "cannot split symbolic dimension %s into %d parts of ceil size", 
				    dimstr(c, D), k);
		int64_t chunk = k > 0 ? div_steps(D.k ? D.k : 1, k) : 0;
		for (int i = 0; i < k; i++) {
			int64_t lo = chunk * i < D.k ? chunk * i : D.k, hi = lo + chunk < D.k ? lo + chunk : D.k;
			part[i] = ir_dim_const(hi - lo);
		}
	} else {
		ir_dim q;
		if (k < 1 || !ir_dim_div(D, ir_dim_const(k), &q))
			return fail(c, "axis %d of %s (size %s) cannot be split into %d equal parts", axis,
				    shp(c, &x->shape), dimstr(c, D), k);
		for (int i = 0; i < k; i++)
			part[i] = q;
	}
	for (int i = 0; i < k; i++) {
		ir_shape s = x->shape;
		s.d[axis] = part[i].k == 0 ? ir_dim_const(0) : part[i];
		set_out(c, i, x->dtype, &s);
	}
	return 0;
}

static int infer_concat(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_attr *at = ir_attr_find(n, "axis");
	if (!at || at->kind != ATTR_INT)
		return fail(c, "attribute 'axis' is required");
	int axis = norm_axis(at->i, r);
	if (axis < 0)
		return fail(c, "axis %lld is out of range for rank %d", (long long)at->i, r);
	ir_shape s = x->shape;
	for (int k = 1; k < n->nin; k++) {
		ir_value *y = in(c, k);
		if (!y)
			return fail(c, "input %d is missing", k);
		if (same_ty(c, k))
			return 1;
		if (y->shape.rank != r)
			return fail(c, "input %d ('%s') has shape %s but input 0 has shape %s", k, y->name,
				    shp(c, &y->shape), shp(c, &x->shape));
		for (int i = 0; i < r; i++) {
			if (i == axis) {
				if (!infer_mono_add(c->g, s.d[i], y->shape.d[i], &s.d[i]))
					return fail(c, "cannot concatenate along axis %d: sizes %s and %s do not "
						    "add up to a product of dimension symbols", axis,
						    dimstr(c, s.d[i]), dimstr(c, y->shape.d[i]));
			} else if (!ir_dim_eq(s.d[i], y->shape.d[i])) {
				return fail(c, "input %d ('%s') has shape %s, which does not match %s outside "
					    "axis %d", k, y->name, shp(c, &y->shape), shp(c, &x->shape), axis);
			}
		}
	}
	if (s.d[axis].k > INFER_NUMEL_MAX)
		return fail(c, "the result is too large");
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_gather(ictx *c)
{
	ir_value *x = in(c, 0), *idx = in(c, 1);
	int r = x->shape.rank, q = idx->shape.rank;
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64)
		return fail(c, "'indices' must be i32 or i64, not %s", ir_dtype_name(idx->dtype));
	int64_t a = ir_attr_int(c->n, "axis", 0);
	int axis = norm_axis(a, r);
	if (axis < 0)
		return fail(c, "axis %lld is out of range for rank %d", (long long)a, r);
	if (r - 1 + q > IR_MAX_RANK)
		return fail(c, "the result would have rank %d; at most %d is supported", r - 1 + q,
			    IR_MAX_RANK);
	ir_shape s = {.rank = r - 1 + q};
	int j = 0;
	for (int i = 0; i < axis; i++)
		s.d[j++] = x->shape.d[i];
	for (int i = 0; i < q; i++)
		s.d[j++] = idx->shape.d[i];
	for (int i = axis + 1; i < r; i++)
		s.d[j++] = x->shape.d[i];
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_shapeop(ictx *c)
{
	int r = in(c, 0)->shape.rank;
	int64_t st = ir_attr_int(c->n, "start", 0), en = ir_attr_int(c->n, "end", r);
	st = st < 0 ? st + r : st;
	en = en < 0 ? en + r : en;
	st = st < 0 ? 0 : st > r ? r : st;
	en = en < 0 ? 0 : en > r ? r : en;
	ir_shape s = {.rank = 1};
	s.d[0] = ir_dim_const(en > st ? en - st : 0);
	set_out(c, 0, DT_I64, &s);
	return 0;
}

static int infer_constofshape(ictx *c)
{
	ir_dim v[IR_MAX_RANK];
	int m = const_ints(c, 0, v, IR_MAX_RANK);
	if (m < 0)
		return 1;
	ir_shape s = {.rank = m};
	for (int i = 0; i < m; i++)
		if (dim_elem(c, v[i], i, &s.d[i]))
			return 1;
	ir_dim total;
	if (!infer_numel(&s, &total))
		return fail(c, "shape %s is too large", shp(c, &s));
	ir_dtype dt = DT_F32;
	ir_attr *a = ir_attr_find(c->n, "value");
	if (a) {
		if (a->kind != ATTR_TENSOR || !a->t || !a->t->data)
			return fail(c, "attribute 'value' must be a tensor");
		if (ir_shape_const_numel(&a->t->shape) != 1)
			return fail(c, "attribute 'value' must hold one element, not %s",
				    shp(c, &a->t->shape));
		dt = a->t->dtype;
		if (!infer_dtype_ok(dt))
			return fail(c, "unsupported dtype %s for attribute 'value'", ir_dtype_name(dt));
	}
	set_out(c, 0, dt, &s);
	return 0;
}

static int infer_expand(ictx *c)
{
	ir_value *x = in(c, 0);
	ir_dim v[IR_MAX_RANK];
	int m = const_ints(c, 1, v, IR_MAX_RANK);
	if (m < 0)
		return 1;
	ir_shape t = {.rank = m}, s;
	for (int i = 0; i < m; i++)
		if (dim_elem(c, v[i], i, &t.d[i]))
			return 1;
	if (broadcast2(c, &x->shape, &t, &s))
		return 1;
	ir_dim total;
	if (!infer_numel(&s, &total))
		return fail(c, "the result %s is too large", shp(c, &s));
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_cast(ictx *c)
{
	ir_attr *a = ir_attr_find(c->n, "to");
	if (!a || a->kind != ATTR_INT)
		return fail(c, "attribute 'to' is required");
	if (a->i == DT_F16 || a->i == DT_BF16) {
		/* computed in float32: the values rounded to the narrower type */
		set_out(c, 0, DT_F32, &in(c, 0)->shape);
		c->n->out[0]->narrow = (ir_dtype)a->i;
		return 0;
	}
	if (a->i < 0 || a->i >= DT_COUNT_ || !infer_dtype_ok((ir_dtype)a->i))
		return fail(c, "unsupported target dtype %lld (%s)", (long long)a->i,
			    a->i > 0 && a->i < DT_COUNT_ ? ir_dtype_name((ir_dtype)a->i) : "unknown");
	set_out(c, 0, (ir_dtype)a->i, &in(c, 0)->shape);
	c->n->out[0]->narrow = DT_UNDEF;
	return 0;
}

/* ---- linear algebra ---------------------------------------------------------- */

static int infer_gemm(ictx *c)
{
	ir_value *A = in(c, 0), *B = in(c, 1), *C = in(c, 2);
	if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2))
		return 1;
	if (A->shape.rank != 2 || B->shape.rank != 2)
		return fail(c, "A and B must be matrices, not %s and %s", shp(c, &A->shape),
			    shp(c, &B->shape));
	int ta = ir_attr_int(c->n, "transA", 0) != 0, tb = ir_attr_int(c->n, "transB", 0) != 0;
	ir_dim M = A->shape.d[ta], K = A->shape.d[!ta], K2 = B->shape.d[tb], N = B->shape.d[!tb];
	if (!ir_dim_eq(K, K2))
		return fail(c, "inner dimensions differ: A %s%s and B %s%s", shp(c, &A->shape),
			    ta ? " (transposed)" : "", shp(c, &B->shape), tb ? " (transposed)" : "");
	ir_shape s = {.rank = 2};
	s.d[0] = M;
	s.d[1] = N;
	if (C && !broadcasts_to(&C->shape, &s))
		return fail(c, "C %s cannot be broadcast to the result %s", shp(c, &C->shape),
			    shp(c, &s));
	set_out(c, 0, A->dtype, &s);
	return 0;
}

/* Y's shape of MatMul (numpy batching, 1-D operands promoted) */
static int matmul_shape(ictx *c, const ir_value *A, const ir_value *B, ir_shape *out)
{
	ir_shape a = A->shape, b = B->shape;
	if (a.rank < 1 || b.rank < 1)
		return fail(c, "inputs must have rank >= 1, not %s and %s", shp(c, &a), shp(c, &b));
	int va = a.rank == 1, vb = b.rank == 1;
	if (va) {               /* [K] -> [1, K] */
		a.rank = 2;
		a.d[1] = a.d[0];
		a.d[0] = ir_dim_const(1);
	}
	if (vb) {               /* [K] -> [K, 1] */
		b.rank = 2;
		b.d[1] = ir_dim_const(1);
	}
	if (!ir_dim_eq(a.d[a.rank - 1], b.d[b.rank - 2]))
		return fail(c, "inner dimensions of %s and %s differ", shp(c, &A->shape),
			    shp(c, &B->shape));
	ir_shape ba = {.rank = a.rank - 2}, bb = {.rank = b.rank - 2}, s;
	memcpy(ba.d, a.d, (size_t)ba.rank * sizeof(ir_dim));
	memcpy(bb.d, b.d, (size_t)bb.rank * sizeof(ir_dim));
	if (broadcast2(c, &ba, &bb, &s))
		return 1;
	if (!va)
		s.d[s.rank++] = a.d[a.rank - 2];
	if (!vb)
		s.d[s.rank++] = b.d[b.rank - 1];
	*out = s;
	return 0;
}

static int infer_matmul(ictx *c)
{
	ir_shape s;
	if (need_f32(c, 0) || need_f32(c, 1) || matmul_shape(c, in(c, 0), in(c, 1), &s))
		return 1;
	set_out(c, 0, in(c, 0)->dtype, &s);
	return 0;
}

static int infer_softmax(ictx *c)
{
	ir_value *x = in(c, 0);
	if (need_f32(c, 0))
		return 1;
	int64_t a = ir_attr_int(c->n, "axis", -1);
	if (norm_axis(a, x->shape.rank) < 0)
		return fail(c, "axis %lld is out of range for rank %d", (long long)a, x->shape.rank);
	set_out(c, 0, x->dtype, &x->shape);
	return 0;
}

/* ---- reductions, ArgMax/ArgMin ---------------------------------------------------- */

int infer_reduce_axes(const ir_node *n, int r, unsigned char *red)
{
	memset(red, 0, (size_t)IR_MAX_RANK);
	const ir_value *ax = n->nin > 1 ? n->in[1] : NULL;
	int64_t cnt = ax ? ir_shape_const_numel(&ax->shape) : 0;
	if (cnt <= 0) {
		if (!ir_attr_int(n, "noop_with_empty_axes", 0))
			memset(red, 1, (size_t)r);
		return 0;
	}
	for (int64_t i = 0; i < cnt; i++) {
		int a = norm_axis(ir_const_int(ax, i), r);
		if (a < 0)
			return -1;
		red[a] = 1;
	}
	return 0;
}

static int infer_reduce(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	/* ReduceMin/ReduceMax/ReduceProd/ReduceSum of a constant int64 vector
	 * (a scripted loop's trip count: min over the lengths of zip()'d or
	 * enumerate()'d sequences; an element count: the product of a Shape)
	 * are folded (infer_fold.c), symbolic lengths included */
	int int_op = c->n->op == OP_REDUCEMIN || c->n->op == OP_REDUCEMAX || c->n->op == OP_REDUCEPROD ||
		     c->n->op == OP_REDUCESUM;
	int fold_int = int_op && x->dtype == DT_I64 && x->shape.rank == 1 && infer_is_const(x);
	if (x->dtype != DT_F32 && x->dtype != DT_F64 && !fold_int)
		return fail(c, "unsupported dtype %s for %s: f32 and f64 are supported%s", ir_dtype_name(x->dtype),
			    c->n->op_type ? c->n->op_type : ir_op_name(c->n->op),
			    x->dtype == DT_I64 && int_op ? " (int64 only of a vector known at compile time)" : "");
	unsigned char red[IR_MAX_RANK];
	if (in(c, 1)) {
		int64_t ax[IR_MAX_RANK];
		int m = const_plain(c, 1, ax, IR_MAX_RANK);
		if (m < 0)
			return 1;
		for (int i = 0; i < m; i++)
			if (norm_axis(ax[i], r) < 0)
				return fail(c, "axis %lld is out of range for rank %d", (long long)ax[i], r);
	}
	infer_reduce_axes(c->n, r, red);
	int keep = (int)ir_attr_int(c->n, "keepdims", 1);
	ir_shape s = {.rank = 0};
	for (int a = 0; a < r; a++) {
		if (!red[a])
			s.d[s.rank++] = x->shape.d[a];
		else if (keep)
			s.d[s.rank++] = ir_dim_const(1);
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_argmax(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	if (x->dtype != DT_F32 && x->dtype != DT_F64)
		return fail(c, "unsupported dtype %s for %s: f32 and f64 are supported", ir_dtype_name(x->dtype),
			    ir_op_name(c->n->op));
	int64_t a0 = ir_attr_int(c->n, "axis", 0);
	int axis = norm_axis(a0, r);
	if (axis < 0)
		return fail(c, "axis %lld is out of range for rank %d", (long long)a0, r);
	if (ir_dim_is_const(x->shape.d[axis]) && x->shape.d[axis].k == 0)
		return fail(c, "axis %d has size 0: no element to choose", axis);
	ir_shape s = x->shape;
	if (ir_attr_int(c->n, "keepdims", 1)) {
		s.d[axis] = ir_dim_const(1);
	} else {
		for (int a = axis; a + 1 < r; a++)
			s.d[a] = s.d[a + 1];
		s.rank--;
	}
	set_out(c, 0, DT_I64, &s);
	return 0;
}

/* ---- Conv, Pad, Size ---------------------------------------------------------------- */

/* One INTS attribute of nsp entries into v (default def when absent). */
static int conv_ints(ictx *c, const char *name, int cnt, int64_t def, int64_t *v, int64_t lo)
{
	ir_attr *a = ir_attr_find(c->n, name);
	for (int i = 0; i < cnt; i++)
		v[i] = def;
	if (!a)
		return 0;
	if (a->n != cnt)
		return fail(c, "attribute '%s' has %d values; this Conv needs %d", name, a->n, cnt);
	for (int i = 0; i < cnt; i++) {
		if (a->ints[i] < lo)
			return fail(c, "attribute '%s' value %lld must be at least %lld", name, (long long)a->ints[i],
				    (long long)lo);
		v[i] = a->ints[i];
	}
	return 0;
}

int infer_conv_geometry(const ir_node *n, int64_t *k, int64_t *st, int64_t *pads, int64_t *dil)
{
	const ir_value *x = n->in[0], *w = n->in[n->op == OP_QLINEARCONV ? 3 : 1];
	int nsp = x->shape.rank - 2;
	for (int a = 0; a < nsp; a++) {
		k[a] = w->shape.d[2 + a].k;
		st[a] = 1;
		dil[a] = 1;
		pads[a] = pads[nsp + a] = 0;
	}
	ir_attr *at;
	if ((at = ir_attr_find((ir_node *)n, "strides")))
		for (int a = 0; a < nsp; a++)
			st[a] = at->ints[a];
	if ((at = ir_attr_find((ir_node *)n, "dilations")))
		for (int a = 0; a < nsp; a++)
			dil[a] = at->ints[a];
	if ((at = ir_attr_find((ir_node *)n, "pads")))
		for (int a = 0; a < 2 * nsp; a++)
			pads[a] = at->ints[a];
	const char *ap = ir_attr_string((ir_node *)n, "auto_pad", "NOTSET");
	if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
		for (int a = 0; a < nsp; a++) {
			int64_t d = x->shape.d[2 + a].k, o = (d + st[a] - 1) / st[a];
			int64_t need = (o - 1) * st[a] + dil[a] * (k[a] - 1) + 1 - d;
			if (need < 0)
				need = 0;
			pads[a] = !strcmp(ap, "SAME_UPPER") ? need / 2 : need - need / 2;
			pads[nsp + a] = need - pads[a];
		}
	}
	return nsp;
}

/* Y's shape of a convolution of X (input 0) with W (input wi), bias B
 * (input bi, may be absent): Conv, ConvInteger, QLinearConv. */
static int conv_shape(ictx *c, int wi, int bi, ir_shape *out)
{
	ir_value *x = in(c, 0), *w = in(c, wi), *b = bi < c->n->nin ? in(c, bi) : NULL;
	int r = x->shape.rank, nsp = r - 2;
	if (r < 3)
		return fail(c, "X must be [N, C, D1, ...] (rank 3 or more), not %s", shp(c, &x->shape));
	if (w->shape.rank != r)
		return fail(c, "W %s must have the rank of X %s", shp(c, &w->shape), shp(c, &x->shape));
	for (int a = 0; a < r; a++)
		if (!ir_dim_is_const(w->shape.d[a]))
			return fail(c, "W %s must have a constant shape", shp(c, &w->shape));
	int64_t group = ir_attr_int(c->n, "group", 1), m = w->shape.d[0].k;
	int64_t ks[IR_MAX_RANK], st[IR_MAX_RANK], dil[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
	if (!ir_dim_is_const(x->shape.d[1]) || x->shape.d[1].k != w->shape.d[1].k * group || m % group)
		return fail(c, "X %s has %s channels; W %s with group %lld needs %lld (and M divisible by group)",
			    shp(c, &x->shape), dimstr(c, x->shape.d[1]), shp(c, &w->shape), (long long)group,
			    (long long)(w->shape.d[1].k * group));
	if (b && (b->shape.rank != 1 || !ir_dim_eq(b->shape.d[0], ir_dim_const(m))))
		return fail(c, "B %s must be [%lld]", shp(c, &b->shape), (long long)m);
	if (conv_ints(c, "kernel_shape", nsp, 1, ks, 1) || conv_ints(c, "strides", nsp, 1, st, 1) ||
	    conv_ints(c, "dilations", nsp, 1, dil, 1) || conv_ints(c, "pads", 2 * nsp, 0, pads, 0))
		return 1;
	if (ir_attr_find(c->n, "kernel_shape"))
		for (int a = 0; a < nsp; a++)
			if (ks[a] != w->shape.d[2 + a].k)
				return fail(c, "attribute 'kernel_shape' does not match W %s", shp(c, &w->shape));
	const char *ap = ir_attr_string(c->n, "auto_pad", "NOTSET");
	int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	ir_shape s = {.rank = r};
	s.d[0] = x->shape.d[0];
	s.d[1] = ir_dim_const(m);
	for (int a = 0; a < nsp; a++) {
		ir_dim D = x->shape.d[2 + a];
		int64_t k = w->shape.d[2 + a].k, span = dil[a] * (k - 1) + 1;
		if (!ir_dim_is_const(D)) {
			/* a symbolic size stays one only where the output size is the input's */
			if (st[a] == 1 && (same || pads[a] + pads[nsp + a] == span - 1)) {
				s.d[2 + a] = D;
				continue;
			}
			return fail(c, "spatial axis %d of X has the run-time size %s; cellc needs it constant "
				    "unless the Conv keeps the size (stride 1, pads summing to the kernel span - 1); "
				    "--dim SYM=N fixes a symbol's size at compile time", a, dimstr(c, D));
		}
		int64_t o;
		if (same)
			o = (D.k + st[a] - 1) / st[a];
		else if (!strcmp(ap, "VALID"))
			o = D.k < span ? 0 : (D.k - span) / st[a] + 1;
		else
			o = D.k + pads[a] + pads[nsp + a] < span ? 0 : (D.k + pads[a] + pads[nsp + a] - span) / st[a] + 1;
		s.d[2 + a] = ir_dim_const(o);
	}
	*out = s;
	return 0;
}

static int infer_conv(ictx *c)
{
	ir_shape s;
	if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2) || conv_shape(c, 1, 2, &s))
		return 1;
	set_out(c, 0, DT_F32, &s);
	return 0;
}

/* ---- quantization ---------------------------------------------------------------- */

static int is_q8(ir_dtype t) { return t == DT_U8 || t == DT_I8; }

/* Input k (optional unless `need`) must be of dtype dt (DT_UNDEF: uint8 or
 * int8) with `count` elements (or 1 when also_one; count < 0: one element). */
static int quant_param(ictx *c, int k, int need, ir_dtype dt, ir_dim count, int also_one, const char *what)
{
	ir_value *v = k < c->n->nin ? in(c, k) : NULL;
	if (!v)
		return need ? fail(c, "input %d (%s) is required", k, what) : 0;
	if (dt ? v->dtype != dt : !is_q8(v->dtype))
		return fail(c, "%s (input %d '%s') must be %s, not %s", what, k, v->name,
			    dt ? ir_dtype_name(dt) : "u8 or i8", ir_dtype_name(v->dtype));
	ir_dim n;
	if (!infer_numel(&v->shape, &n) || v->shape.rank > 1)
		return fail(c, "%s (input %d '%s') must be a scalar or 1-D, not %s", what, k, v->name, shp(c, &v->shape));
	if (ir_dim_eq(n, ir_dim_const(1)) && (also_one || count.k < 0))
		return 0;
	if (count.k >= 0 && ir_dim_eq(n, count) && v->shape.rank == 1)
		return 0;
	return fail(c, "%s (input %d '%s') %s must hold one value%s%s", what, k, v->name, shp(c, &v->shape),
		    count.k >= 0 ? " or one per index: " : "", count.k >= 0 ? dimstr(c, count) : "");
}

static int infer_quant(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	ir_dim one = {.k = -1};
	ir_shape s;
	switch (n->op) {
	case OP_QUANTIZELINEAR: case OP_DEQUANTIZELINEAR: {
		int q = n->op == OP_QUANTIZELINEAR, r = x->shape.rank;
		int64_t axis = ir_attr_int(n, "axis", 1);
		if (q ? x->dtype != DT_F32 : !is_q8(x->dtype) && x->dtype != DT_I32)
			return fail(c, "X must be %s, not %s", q ? "f32" : "u8, i8 or i32", ir_dtype_name(x->dtype));
		ir_value *sc = in(c, 1);
		ir_dim cnt = one;
		if (sc->shape.rank == 1 && !(ir_dim_is_const(sc->shape.d[0]) && sc->shape.d[0].k == 1)) {
			int a = norm_axis(axis, r);
			if (a < 0)
				return fail(c, "axis %lld is out of range for X %s", (long long)axis, shp(c, &x->shape));
			cnt = x->shape.d[a];
		}
		if (quant_param(c, 1, 1, DT_F32, cnt, 0, q ? "y_scale" : "x_scale") ||
		    quant_param(c, 2, 0, q ? DT_UNDEF : x->dtype, cnt, 0, q ? "y_zero_point" : "x_zero_point"))
			return 1;
		set_out(c, 0, q ? (n->nin > 2 && in(c, 2) ? in(c, 2)->dtype : DT_U8) : DT_F32, &x->shape);
		return 0;
	}
	case OP_DYNQUANTIZELINEAR: {
		if (need_f32(c, 0))
			return 1;
		ir_shape sc = {.rank = 0};
		set_out(c, 0, DT_U8, &x->shape);
		set_out(c, 1, DT_F32, &sc);
		set_out(c, 2, DT_U8, &sc);
		return 0;
	}
	case OP_MATMULINTEGER: case OP_QLINEARMATMUL: {
		int ql = n->op == OP_QLINEARMATMUL, bi = ql ? 3 : 1;
		ir_value *A = x, *B = in(c, bi);
		if (!is_q8(A->dtype) || !is_q8(B->dtype))
			return fail(c, "A and B must be u8 or i8, not %s and %s", ir_dtype_name(A->dtype),
				    ir_dtype_name(B->dtype));
		if (matmul_shape(c, A, B, &s))
			return 1;
		if (!ql) {
			ir_dim M = A->shape.rank >= 2 ? A->shape.d[A->shape.rank - 2] : ir_dim_const(1);
			ir_dim N = B->shape.rank >= 2 ? B->shape.d[B->shape.rank - 1] : ir_dim_const(1);
			if (quant_param(c, 2, 0, A->dtype, M, 1, "a_zero_point") ||
			    quant_param(c, 3, 0, B->dtype, N, 1, "b_zero_point"))
				return 1;
			set_out(c, 0, DT_I32, &s);
			return 0;
		}
		if (quant_param(c, 1, 1, DT_F32, one, 0, "a_scale") || quant_param(c, 2, 1, A->dtype, one, 0, "a_zero_point") ||
		    quant_param(c, 4, 1, DT_F32, one, 0, "b_scale") || quant_param(c, 5, 1, B->dtype, one, 0, "b_zero_point") ||
		    quant_param(c, 6, 1, DT_F32, one, 0, "y_scale") || quant_param(c, 7, 1, DT_UNDEF, one, 0, "y_zero_point"))
			return 1;
		set_out(c, 0, in(c, 7)->dtype, &s);
		return 0;
	}
	case OP_CONVINTEGER: case OP_QLINEARCONV: {
		int ql = n->op == OP_QLINEARCONV, wi = ql ? 3 : 1;
		ir_value *W = in(c, wi);
		if (!is_q8(x->dtype) || !is_q8(W->dtype))
			return fail(c, "X and W must be u8 or i8, not %s and %s", ir_dtype_name(x->dtype),
				    ir_dtype_name(W->dtype));
		if (W->shape.rank < 1 || !ir_dim_is_const(W->shape.d[0]))
			return fail(c, "W %s must have a constant shape", shp(c, &W->shape));
		if (conv_shape(c, wi, ql ? 8 : 99, &s))
			return 1;
		ir_dim M = W->shape.d[0];
		if (!ql) {
			if (quant_param(c, 2, 0, x->dtype, one, 0, "x_zero_point") ||
			    quant_param(c, 3, 0, W->dtype, M, 1, "w_zero_point"))
				return 1;
			set_out(c, 0, DT_I32, &s);
			return 0;
		}
		if (quant_param(c, 1, 1, DT_F32, one, 0, "x_scale") || quant_param(c, 2, 1, x->dtype, one, 0, "x_zero_point") ||
		    quant_param(c, 4, 1, DT_F32, M, 1, "w_scale") || quant_param(c, 5, 1, W->dtype, M, 1, "w_zero_point") ||
		    quant_param(c, 6, 1, DT_F32, one, 0, "y_scale") || quant_param(c, 7, 1, DT_UNDEF, one, 0, "y_zero_point"))
			return 1;
		if (n->nin > 8 && in(c, 8) && in(c, 8)->dtype != DT_I32)
			return fail(c, "B must be i32, not %s", ir_dtype_name(in(c, 8)->dtype));
		set_out(c, 0, in(c, 7)->dtype, &s);
		return 0;
	}
	default:
		UNREACHABLE();
	}
}

/* The pads of Pad per axis (begins then ends, 2 * rank) from its pads and
 * axes inputs; -1 after reporting. */
static int pad_amounts(ictx *c, int64_t *pads)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank, ax[IR_MAX_RANK], na = r;
	int64_t p[2 * IR_MAX_RANK];
	for (int a = 0; a < r; a++)
		ax[a] = a;
	if (in(c, 3)) {
		na = axes_list(c, 3, r, ax, IR_MAX_RANK);
		if (na < 0)
			return -1;
	}
	int m = const_plain(c, 1, p, 2 * IR_MAX_RANK);
	if (m < 0)
		return -1;
	if (m != 2 * na)
		return fail(c, "input 'pads' has %d values; %d axes need %d", m, na, 2 * na), -1;
	for (int a = 0; a < 2 * r; a++)
		pads[a] = 0;
	for (int i = 0; i < na; i++) {
		pads[ax[i]] = p[i];
		pads[r + ax[i]] = p[na + i];
	}
	return 0;
}

int infer_pad_amounts(ir_graph *g, ir_node *n, diag *D, int64_t *pads)
{
	ictx cx = {g, n, D, g->A};
	return pad_amounts(&cx, pads);
}

static int infer_pad(ictx *c)
{
	ir_value *x = in(c, 0), *v = in(c, 2);
	int r = x->shape.rank;
	int64_t pads[2 * IR_MAX_RANK];
	if (pad_amounts(c, pads))
		return 1;
	if (v && (v->dtype != x->dtype || ir_shape_const_numel(&v->shape) != 1))
		return fail(c, "constant_value '%s' must be one element of X's dtype %s", v->name,
			    ir_dtype_name(x->dtype));
	const char *mode = ir_attr_string(c->n, "mode", "constant");
	ir_shape s = x->shape;
	for (int a = 0; a < r; a++) {
		ir_dim d = x->shape.d[a];
		int64_t add = pads[a] + pads[r + a];
		if (!pads[a] && !pads[r + a])
			continue;
		if (!ir_dim_is_const(d)) {
			if (add == 0 && pads[a] >= 0 && strcmp(mode, "reflect") && strcmp(mode, "edge"))
				continue;
			return fail(c, "axis %d has the run-time size %s; cellc pads only axes of constant size "
				    "(--dim SYM=N fixes a symbol's size at compile time)", a, dimstr(c, d));
		}
		if (d.k + add < 0)
			return fail(c, "pads %lld and %lld crop more than the %lld elements of axis %d",
				    (long long)pads[a], (long long)pads[r + a], (long long)d.k, a);
		if (strcmp(mode, "constant") && d.k == 0)
			return fail(c, "mode %s cannot pad the empty axis %d", mode, a);
		if (!strcmp(mode, "reflect") && (pads[a] >= d.k || pads[r + a] >= d.k) && d.k > 1)
			return fail(c, "reflect pads of %lld and %lld on axis %d need at most %lld (its size - 1)",
				    (long long)pads[a], (long long)pads[r + a], a, (long long)(d.k - 1));
		s.d[a] = ir_dim_const(d.k + add);
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

static int infer_size(ictx *c)
{
	ir_shape s = {.rank = 0};
	set_out(c, 0, DT_I64, &s);
	return 0;
}

/* ---- image sampling: Resize, GridSample, RoiAlign ------------------------------ */

/* Reads the real numbers of shape-determining input k (absent: 0 values).
 * Returns the count, or -1 after reporting. */
static int const_reals(ictx *c, int k, double *v, int max)
{
	ir_value *x = in(c, k);
	const char *what = infer_shape_input(c->n->op, k);
	if (!x || ir_shape_const_numel(&x->shape) == 0)
		return 0;       /* absent, or empty (opset 11 had no way to omit it) */
	if (!infer_is_const(x) || !x->data)
		return not_const(c, k), -1;
	if (x->shape.rank != 1)
		return fail(c, "input '%s' (tensor '%s') must be a 1-D tensor, not %s", what, x->name,
			    shp(c, &x->shape)), -1;
	if (!(ty_class(x->dtype) & TY_FLOAT))
		return fail(c, "input '%s' (tensor '%s') must be a float tensor, not %s", what, x->name,
			    ir_dtype_name(x->dtype)), -1;
	int64_t m = ir_shape_const_numel(&x->shape);
	if (m < 0 || m > max)
		return fail(c, "input '%s' (tensor '%s') has %s elements; at most %d are allowed here", what,
			    x->name, shp(c, &x->shape), max), -1;
	for (int64_t i = 0; i < m; i++)
		v[i] = x->dtype == DT_F64 ? ((const double *)x->data)[i] : ((const float *)x->data)[i];
	return (int)m;
}

/* Resize: the scale and roi of every axis of X (roi: starts then ends) and
 * the output shape, from the constant inputs and the attributes. */
static int resize_geometry(ictx *c, infer_resize_geom *G, ir_shape *out)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank, ax[IR_MAX_RANK], na = r;
	double roi[2 * IR_MAX_RANK], sc[IR_MAX_RANK];
	ir_dim sz[IR_MAX_RANK];
	for (int a = 0; a < r; a++)
		ax[a] = a;
	ir_attr *aa = ir_attr_find(n, "axes");
	if (aa) {
		na = aa->n;
		if (na > r)
			return fail(c, "attribute 'axes' lists %d axes; X %s has %d", na, shp(c, &x->shape), r);
		for (int i = 0; i < na; i++) {
			ax[i] = norm_axis(aa->ints[i], r);
			if (ax[i] < 0)
				return fail(c, "axis %lld is out of range for rank %d", (long long)aa->ints[i], r);
			for (int j = 0; j < i; j++)
				if (ax[j] == ax[i])
					return fail(c, "axis %lld is listed twice", (long long)aa->ints[i]);
		}
	}
	int tf_crop = !strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "tf_crop_and_resize");
	int nroi = tf_crop ? const_reals(c, 1, roi, 2 * IR_MAX_RANK) : 0;
	int nsc = const_reals(c, 2, sc, IR_MAX_RANK);
	int nsz = in(c, 3) && ir_shape_const_numel(&in(c, 3)->shape) != 0 ? const_ints(c, 3, sz, IR_MAX_RANK) : 0;
	if (nroi < 0 || nsc < 0 || nsz < 0)
		return 1;
	if (nroi && nroi != 2 * na)
		return fail(c, "input 'roi' has %d values; %d axes need %d", nroi, na, 2 * na);
	if ((nsc > 0) == (nsz > 0))
		return fail(c, "needs exactly one of the inputs 'scales' and 'sizes' (non-empty)%s",
			    nsc ? ", not both" : "");
	if ((nsc ? nsc : nsz) != na)
		return fail(c, "input '%s' has %d values; X %s%s needs %d", nsc ? "scales" : "sizes", nsc ? nsc : nsz,
			    shp(c, &x->shape), aa ? " with these axes" : "", na);
	const char *policy = ir_attr_string(n, "keep_aspect_ratio_policy", "stretch");
	int keep = nsz && strcmp(policy, "stretch");
	double common = 0;
	*out = x->shape;
	for (int a = 0; a < r; a++) {
		G->scale[a] = 1.0;
		G->roi[a] = 0.0;
		G->roi[r + a] = 1.0;
	}
	for (int i = 0; i < na; i++) {
		int a = ax[i];
		ir_dim d = x->shape.d[a];
		if (nroi) {
			G->roi[a] = roi[i];
			G->roi[r + a] = roi[na + i];
		}
		if (nsc && !(sc[i] > 0 && isfinite(sc[i])))
			return fail(c, "scale %g of axis %d must be positive", sc[i], a);
		if (nsz && !infer_mono_is_const(sz[i]) && !ir_dim_eq(sz[i], d))
			return fail(c, "size %s of axis %d is a run-time size other than the axis' own (%s)",
				    mono(c, sz[i]), a, dimstr(c, d));
		if (nsz && infer_mono_is_const(sz[i]) && sz[i].k < 0)
			return fail(c, "size %lld of axis %d is negative", (long long)sz[i].k, a);
		if (!ir_dim_is_const(d)) {
			/* a run-time axis is only ever kept as it is */
			if ((nsc && sc[i] != 1.0) || (nsz && !ir_dim_eq(sz[i], d)) || keep ||
			    (tf_crop && (G->roi[a] != 0.0 || G->roi[r + a] != 1.0)))
				return fail(c, "axis %d has the run-time size %s; cellc resizes only axes of constant size "
					    "(--dim SYM=N fixes a symbol's size at compile time)", a, dimstr(c, d));
			continue;
		}
		if (nsz && d.k == 0 && sz[i].k != 0)
			return fail(c, "axis %d is empty and cannot be resized to %lld", a, (long long)sz[i].k);
		if (nsc) {
			/* floor(in * (roi_end - roi_start) * scale), in single precision as
			 * ONNX's shape inference computes it */
			float len = (float)d.k * (tf_crop ? (float)(G->roi[r + a] - G->roi[a]) : 1.0f) * (float)sc[i];
			if (!(len >= 0.0f && len < (float)INFER_NUMEL_MAX))
				return fail(c, "axis %d: %lld * scale %g gives no valid size", a, (long long)d.k, sc[i]);
			out->d[a] = ir_dim_const((int64_t)floorf(len));
			G->scale[a] = sc[i];
		} else if (d.k > 0) {
			double s = (double)sz[i].k / (double)d.k;
			if (keep && i == 0)
				common = s;
			else if (keep)
				common = !strcmp(policy, "not_larger") ? fmin(common, s) : fmax(common, s);
			out->d[a] = sz[i];
			G->scale[a] = s;
		}
	}
	if (keep)       /* one scale for every axis listed, the sizes rounded from it */
		for (int i = 0; i < na; i++) {
			int a = ax[i];
			G->scale[a] = common;
			out->d[a] = ir_dim_const((int64_t)nearbyint(common * (double)x->shape.d[a].k));
		}
	if (n->opset > 0 && n->opset <= 10 && !strcmp(ir_attr_string(n, "mode", "nearest"), "nearest"))
		for (int a = 0; a < r; a++)
			if (G->scale[a] < 1.0)
				return fail(c, "scale %g of axis %d downsamples; %s-%d leaves the nearest element of a "
					    "downsample undefined (use Resize of opset 11 or later)", G->scale[a], a,
					    n->op_type ? n->op_type : "Resize", n->opset);
	G->has_roi = tf_crop;
	return 0;
}

int infer_resize_geometry(ir_graph *g, ir_node *n, diag *D, infer_resize_geom *G)
{
	ictx cx = {g, n, D, g->A};
	ir_shape s;
	return resize_geometry(&cx, G, &s);
}

static int infer_resize(ictx *c)
{
	infer_resize_geom G;
	ir_shape s;
	if (need_f32(c, 0) || resize_geometry(c, &G, &s))
		return 1;
	set_out(c, 0, DT_F32, &s);
	return 0;
}

static int infer_gridsample(ictx *c)
{
	ir_value *x = in(c, 0), *grid = in(c, 1);
	if (need_f32(c, 0) || need_f32(c, 1))
		return 1;
	if (x->shape.rank != 4)
		return fail(c, "X %s must be [N, C, H, W]: cellc supports 2-D GridSample only", shp(c, &x->shape));
	if (grid->shape.rank != 4 || !ir_dim_eq(grid->shape.d[0], x->shape.d[0]) ||
	    !ir_dim_eq(grid->shape.d[3], ir_dim_const(2)))
		return fail(c, "grid %s must be [N, H_out, W_out, 2] with the N of X %s", shp(c, &grid->shape),
			    shp(c, &x->shape));
	ir_shape s = x->shape;
	s.d[2] = grid->shape.d[1];
	s.d[3] = grid->shape.d[2];
	set_out(c, 0, DT_F32, &s);
	return 0;
}

static int infer_roialign(ictx *c)
{
	ir_value *x = in(c, 0), *rois = in(c, 1), *bi = in(c, 2);
	if (need_f32(c, 0) || need_f32(c, 1))
		return 1;
	if (x->shape.rank != 4)
		return fail(c, "X %s must be [N, C, H, W]", shp(c, &x->shape));
	if (rois->shape.rank != 2 || !ir_dim_eq(rois->shape.d[1], ir_dim_const(4)))
		return fail(c, "rois %s must be [num_rois, 4]", shp(c, &rois->shape));
	if (bi->dtype != DT_I64 || bi->shape.rank != 1 || !ir_dim_eq(bi->shape.d[0], rois->shape.d[0]))
		return fail(c, "batch_indices '%s' (%s %s) must be int64 [num_rois] with the num_rois of rois %s",
			    bi->name, ir_dtype_name(bi->dtype), shp(c, &bi->shape), shp(c, &rois->shape));
	ir_shape s = {.rank = 4};
	s.d[0] = rois->shape.d[0];
	s.d[1] = x->shape.d[1];
	s.d[2] = ir_dim_const(ir_attr_int(c->n, "output_height", 1));
	s.d[3] = ir_dim_const(ir_attr_int(c->n, "output_width", 1));
	set_out(c, 0, DT_F32, &s);
	return 0;
}

/* ---- pooling, normalisation, Dropout ---------------------------------------------- */

int infer_pool_geometry(const ir_node *n, int64_t *k, int64_t *st, int64_t *pads, int64_t *dil, int64_t *ysp)
{
	const ir_value *x = n->in[0];
	int nsp = x->shape.rank - 2;
	ir_attr *ka = ir_attr_find((ir_node *)n, "kernel_shape"), *a;
	if (!ka || ka->n != nsp)
		return -1;
	for (int i = 0; i < nsp; i++) {
		k[i] = ka->ints[i];
		st[i] = dil[i] = 1;
		pads[i] = pads[nsp + i] = 0;
		if (k[i] < 1)
			return -1;
	}
	if ((a = ir_attr_find((ir_node *)n, "strides"))) {
		if (a->n != nsp)
			return -1;
		for (int i = 0; i < nsp; i++)
			st[i] = a->ints[i];
	}
	if ((a = ir_attr_find((ir_node *)n, "dilations"))) {
		if (a->n != nsp)
			return -1;
		for (int i = 0; i < nsp; i++)
			dil[i] = a->ints[i];
	}
	if ((a = ir_attr_find((ir_node *)n, "pads"))) {
		if (a->n != 2 * nsp)
			return -1;
		for (int i = 0; i < 2 * nsp; i++)
			pads[i] = a->ints[i];
	}
	for (int i = 0; i < nsp; i++)
		if (st[i] < 1 || dil[i] < 1 || pads[i] < 0 || pads[nsp + i] < 0 || !ir_dim_is_const(x->shape.d[2 + i]))
			return -1;
	const char *ap = ir_attr_string((ir_node *)n, "auto_pad", "NOTSET");
	int ceil_mode = (int)ir_attr_int((ir_node *)n, "ceil_mode", 0);
	for (int i = 0; i < nsp; i++) {
		int64_t d = x->shape.d[2 + i].k, span = dil[i] * (k[i] - 1) + 1;
		if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
			int64_t o = (d + st[i] - 1) / st[i], need = (o - 1) * st[i] + span - d;
			need = need < 0 ? 0 : need;
			pads[i] = !strcmp(ap, "SAME_UPPER") ? need / 2 : need - need / 2;
			pads[nsp + i] = need - pads[i];
			ysp[i] = o;
			continue;
		}
		if (!strcmp(ap, "VALID"))
			pads[i] = pads[nsp + i] = 0;
		int64_t full = d + pads[i] + pads[nsp + i] - span;
		if (full < 0)
			return -1;
		ysp[i] = (ceil_mode ? (full + st[i] - 1) / st[i] : full / st[i]) + 1;
		/* a last window that would start in the end padding is dropped */
		if (ceil_mode && (ysp[i] - 1) * st[i] >= d + pads[i])
			ysp[i]--;
	}
	return nsp;
}

/* When a spatial axis of x has a size known only at run time: that it is
 * why a pooling is refused, and the --dim that compiles it for one size;
 * else "". */
static const char *spatial_sym_hint(ictx *c, const ir_value *x)
{
	for (int a = 2; a < x->shape.rank; a++) {
		ir_dim d = x->shape.d[a];
		if (ir_dim_is_const(d))
			continue;
		int i = ir_dim_one_sym(d);
		ir_graph *root = ir_root(c->g);
		return arena_printf(c->A, " (axis %d has the run-time size %s; cellc lays out pooling windows over "
				    "sizes known at compile time%s%s%s)", a, dimstr(c, d),
				    i >= 0 && ir_sym_free(root, i) ? ": --dim " : "",
				    i >= 0 && ir_sym_free(root, i) ? root->syms[i] : "",
				    i >= 0 && ir_sym_free(root, i) ? "=N compiles it for one size" : "");
	}
	return "";
}

static int infer_pool(ictx *c)
{
	ir_value *x = in(c, 0);
	if (c->n->op == OP_MAXPOOL && is_q8(x->dtype)) {
		if (c->n->nout > 1 && c->n->out[1])
			return fail(c, "the Indices output is computed for f32 X only, not %s", ir_dtype_name(x->dtype));
	} else if (need_f32(c, 0)) {
		return 1;
	}
	if (x->shape.rank < 3)
		return fail(c, "X must be [N, C, D1, ...] (rank 3 or more), not %s", shp(c, &x->shape));
	ir_shape s = x->shape;
	if (c->n->op == OP_GLOBALAVGPOOL || c->n->op == OP_GLOBALMAXPOOL) {
		for (int a = 2; a < s.rank; a++)
			s.d[a] = ir_dim_const(1);
		set_out(c, 0, DT_F32, &s);
		return 0;
	}
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK], ysp[IR_MAX_RANK];
	if (infer_pool_geometry(c->n, k, st, pads, dil, ysp) < 0)
		return fail(c, "needs constant spatial sizes of X %s and kernel_shape, strides, dilations and pads "
			    "with one value per spatial axis (pads two), positive (pads not negative), and windows "
			    "that fit%s", shp(c, &x->shape), spatial_sym_hint(c, x));
	for (int a = 2; a < s.rank; a++)
		s.d[a] = ir_dim_const(ysp[a - 2]);
	set_out(c, 0, x->dtype, &s);
	set_out(c, 1, DT_I64, &s);
	return 0;
}

/* Scale/B of LayerNormalization: the shape of X[axis:] (leading 1s allowed). */
static int norm_param(ictx *c, int k, const ir_shape *tail)
{
	ir_value *v = in(c, k);
	if (!v)
		return 0;
	if (need_f32(c, k))
		return 1;
	ir_shape t = v->shape;
	while (t.rank > tail->rank && is_one(t.d[0])) {
		for (int i = 0; i + 1 < t.rank; i++)
			t.d[i] = t.d[i + 1];
		t.rank--;
	}
	ir_shape want = *tail;
	while (want.rank > t.rank && is_one(want.d[0])) {
		for (int i = 0; i + 1 < want.rank; i++)
			want.d[i] = want.d[i + 1];
		want.rank--;
	}
	if (!ir_shape_eq(&t, &want))
		return fail(c, "input %d ('%s') %s must have the shape of the normalised axes %s", k, v->name,
			    shp(c, &v->shape), shp(c, tail));
	return 0;
}

static int infer_layernorm(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	if (need_f32(c, 0))
		return 1;
	int64_t a0 = ir_attr_int(c->n, "axis", -1);
	int axis = norm_axis(a0, r);
	if (axis < 0)
		return fail(c, "axis %lld is out of range for rank %d", (long long)a0, r);
	ir_shape tail = {.rank = r - axis}, st = x->shape;
	for (int a = axis; a < r; a++) {
		tail.d[a - axis] = x->shape.d[a];
		st.d[a] = ir_dim_const(1);
	}
	if (norm_param(c, 1, &tail) || norm_param(c, 2, &tail))
		return 1;
	set_out(c, 0, DT_F32, &x->shape);
	set_out(c, 1, DT_F32, &st);
	set_out(c, 2, DT_F32, &st);
	return 0;
}

static int infer_batchnorm(ictx *c)
{
	ir_value *x = in(c, 0);
	if (c->n->nout > 1 && !ir_attr_int(c->n, "training_mode", 0))
		return fail(c, "has %d outputs; in inference mode (training_mode 0) BatchNormalization has one",
			    c->n->nout);
	if (need_f32(c, 0))
		return 1;
	if (x->shape.rank < 2)
		return fail(c, "X must be [N, C, ...], not %s", shp(c, &x->shape));
	for (int k = 1; k < 5; k++) {
		ir_value *v = in(c, k);
		if (need_f32(c, k))
			return 1;
		if (v->shape.rank != 1 || !ir_dim_eq(v->shape.d[0], x->shape.d[1]))
			return fail(c, "input %d ('%s') %s must be [C] = [%s]", k, v->name, shp(c, &v->shape),
				    dimstr(c, x->shape.d[1]));
	}
	set_out(c, 0, DT_F32, &x->shape);
	set_out(c, 1, DT_F32, &in(c, 3)->shape);
	set_out(c, 2, DT_F32, &in(c, 4)->shape);
	return 0;
}

/* Element 0 of a constant float tensor with data, as a double. */
static double const_float0(const ir_value *v)
{
	return v->dtype == DT_F64 ? ((const double *)v->data)[0] : ((const float *)v->data)[0];
}

int infer_dropout_trains(const ir_node *n)
{
	const ir_value *t = n->nin > 2 ? n->in[2] : NULL;
	return t && !(infer_is_const(t) && t->data && ir_shape_const_numel(&t->shape) == 1 && !infer_elem_int(t, 0));
}

int infer_draws_random(const ir_node *n)
{
	switch (n->op) {
	case OP_RANDOMUNIFORM: case OP_RANDOMNORMAL: case OP_RANDOMUNIFORMLIKE: case OP_RANDOMNORMALLIKE:
	case OP_BERNOULLI:
		return 1;
	case OP_DROPOUT:
		return infer_dropout_trains(n);
	default:
		return 0;
	}
}

static int infer_dropout(ictx *c)
{
	ir_value *x = in(c, 0), *r = in(c, 1), *t = in(c, 2);
	if (x->dtype != DT_F32 && x->dtype != DT_F64)
		return fail(c, "unsupported dtype %s for input 0 ('%s') of Dropout: float or double", ir_dtype_name(x->dtype),
			    x->name);
	if (r && ((r->dtype != DT_F32 && r->dtype != DT_F64) || ir_shape_const_numel(&r->shape) != 1))
		return fail(c, "ratio ('%s') must be one float or double, not %s%s", r->name, ir_dtype_name(r->dtype),
			    shp(c, &r->shape));
	if (t && (t->dtype != DT_BOOL || ir_shape_const_numel(&t->shape) != 1))
		return fail(c, "training_mode ('%s') must be one bool, not %s%s", t->name, ir_dtype_name(t->dtype),
			    shp(c, &t->shape));
	if (infer_dropout_trains(c->n) && r && infer_is_const(r) && r->data) {
		double v = const_float0(r);
		if (!(v >= 0 && v < 1))
			return fail(c, "ratio ('%s') is %g; in training mode it must be in [0, 1)", r->name, v);
	}
	if (infer_dropout_trains(c->n) && c->g->parent)
		return fail(c, "Dropout in training mode inside a loop body is not supported (its random "
			    "stream lives in the model instance; use it outside the loop)");
	set_out(c, 0, x->dtype, &x->shape);
	set_out(c, 1, DT_BOOL, &x->shape);
	return 0;
}

/* RandomUniform, RandomNormal (shape attribute), their Like forms (X's
 * shape) and Bernoulli: the dtype attribute, else float or X's dtype. */
static int infer_random(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	if (c->g->parent)
		return fail(c, "%s inside a loop body is not supported (its random stream lives in the model "
			    "instance; draw outside the loop)", ir_op_name(n->op));
	ir_shape s = {0};
	if (x) {
		if (x->dtype != DT_F32 && x->dtype != DT_F64 && n->op == OP_BERNOULLI)
			return fail(c, "unsupported dtype %s for input 0 ('%s') of Bernoulli: float or double",
				    ir_dtype_name(x->dtype), x->name);
		if (!infer_dtype_ok(x->dtype))
			return fail(c, "unsupported dtype %s for input 0 ('%s')", ir_dtype_name(x->dtype), x->name);
		s = x->shape;
	} else {
		const ir_attr *a = ir_attr_find(n, "shape");
		if (!a || a->kind != ATTR_INTS)
			return fail(c, "attribute 'shape' is required");
		if (a->n > IR_MAX_RANK)
			return fail(c, "shape has %d dimensions; at most %d are supported", a->n, IR_MAX_RANK);
		s.rank = a->n;
		for (int i = 0; i < a->n; i++) {
			if (a->ints[i] < 0 || a->ints[i] > INFER_NUMEL_MAX)
				return fail(c, "shape[%d] = %lld is not a size", i, (long long)a->ints[i]);
			s.d[i] = ir_dim_const(a->ints[i]);
		}
		ir_dim total;
		if (!infer_numel(&s, &total))
			return fail(c, "shape has too many elements");
	}
	ir_dtype dt = ir_attr_find(n, "dtype") ? (ir_dtype)ir_attr_int(n, "dtype", 1) : x ? x->dtype : DT_F32;
	int ok = n->op == OP_BERNOULLI ? infer_dtype_ok(dt) && dt != DT_U32 && dt != DT_U64
				       : dt == DT_F32 || dt == DT_F64;
	if (!ok)
		return fail(c, "dtype %s is not supported for %s (%s)", ir_dtype_name(dt), ir_op_name(n->op),
			    n->op == OP_BERNOULLI ? "float, double, bool and integers up to 64 bits, not "
						    "unsigned 32/64" : "float or double");
	set_out(c, 0, dt, &s);
	return 0;
}

/* ---- indexing, masks, counting, generators ------------------------------------------ */

/* A constant scalar input as a double (any numeric dtype); -1 after reporting. */
static int const_scalar(ictx *c, int k, double *v)
{
	ir_value *x = in(c, k);
	if (!infer_is_const(x) || x->sym)
		return not_const(c, k), -1;
	if (ir_shape_const_numel(&x->shape) != 1)
		return fail(c, "input '%s' ('%s') must hold one element, not %s", infer_shape_input(c->n->op, k),
			    x->name, shp(c, &x->shape)), -1;
	switch (x->dtype) {
	case DT_F32: *v = ((const float *)x->data)[0]; break;
	case DT_F64: *v = ((const double *)x->data)[0]; break;
	default: *v = (double)infer_elem_int(x, 0); break;
	}
	return 0;
}

int64_t infer_range_count(double start, double limit, double delta)
{
	double n = ceil((limit - start) / delta);
	return n > 0 ? (int64_t)n : 0;
}

static int infer_misc(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
	switch (n->op) {
	case OP_TRILU:
		if (r < 2)
			return fail(c, "X must have rank 2 or more, not %s", shp(c, &x->shape));
		if (in(c, 1) && (in(c, 1)->dtype != DT_I64 || ir_shape_const_numel(&in(c, 1)->shape) != 1))
			return fail(c, "k must be one int64 element");
		break;
	case OP_CUMSUM: {
		double a;
		if (need_ty(c, 0, TY_NUM, "CumSum") || const_scalar(c, 1, &a))
			return 1;
		if (norm_axis((int64_t)a, r) < 0)
			return fail(c, "axis %lld is out of range for rank %d", (long long)a, r);
		break;
	}
	case OP_HARDMAX:
		if (need_ty(c, 0, TY_FLOAT, "Hardmax"))
			return 1;
		if (norm_axis(ir_attr_int(n, "axis", -1), r) < 0)
			return fail(c, "axis %lld is out of range for rank %d", (long long)ir_attr_int(n, "axis", -1), r);
		break;
	case OP_EYELIKE: {
		if (r != 2)
			return fail(c, "X must be 2-D, not %s", shp(c, &x->shape));
		ir_dtype dt = ir_attr_find(n, "dtype") ? (ir_dtype)ir_attr_int(n, "dtype", 1) : x->dtype;
		if (!infer_dtype_ok(dt))
			return fail(c, "dtype %s is not supported", ir_dtype_name(dt));
		set_out(c, 0, dt, &s);
		return 0;
	}
	case OP_RANGE: {
		double v[3];
		const ir_value *lim = in(c, 1);
		if (lim && infer_is_const(lim) && lim->sym && ir_shape_const_numel(&lim->shape) == 1 &&
		    (ty_class(lim->dtype) & TY_INT)) {
			/* a limit that the shape gives (PyTorch's arange(x.size(0))):
			 * an integer start and a step of 1, so the count is limit - start */
			ir_dim d;
			if (same_ty(c, 0) || same_ty(c, 2) || const_scalar(c, 0, &v[0]) || const_scalar(c, 2, &v[2]))
				return 1;
			if (v[2] != 1 || !ir_sym_offset(ir_root(c->g), lim->sym[0], -(int64_t)v[0], &d) ||
			    !ir_sym_need(ir_root(c->g), d, 0))
				return fail(c, "limit %s is known only at run time: cellc needs a constant start and delta 1 "
					    "(and a limit of one symbol), not start %g and delta %g",
					    dimstr(c, lim->sym[0]), v[0], v[2]);
			s.rank = 1;
			s.d[0] = d;
			break;
		}
		for (int k = 0; k < 3; k++)
			if (same_ty(c, k) || const_scalar(c, k, &v[k]))
				return 1;
		if (!(ty_class(x->dtype) & TY_NUM) || v[2] == 0)
			return fail(c, "Range needs numeric scalars and a nonzero delta");
		s.rank = 1;
		s.d[0] = ir_dim_const(infer_range_count(v[0], v[1], v[2]));
		break;
	}
	case OP_GATHERELEMENTS: {
		ir_value *ix = in(c, 1);
		if (ix->dtype != DT_I32 && ix->dtype != DT_I64)
			return fail(c, "'indices' must be i32 or i64, not %s", ir_dtype_name(ix->dtype));
		if (ix->shape.rank != r || norm_axis(ir_attr_int(n, "axis", 0), r) < 0)
			return fail(c, "indices %s must have the rank of X %s and axis be one of its axes",
				    shp(c, &ix->shape), shp(c, &x->shape));
		s = ix->shape;
		break;
	}
	case OP_ONEHOT: {
		double depth;
		ir_value *vals = in(c, 2);
		if (const_scalar(c, 1, &depth))
			return 1;
		if (depth < 1 || ir_shape_const_numel(&vals->shape) != 2)
			return fail(c, "depth must be positive and values hold two elements (off, on)");
		int64_t a0 = ir_attr_int(n, "axis", -1);
		int axis = norm_axis(a0, r + 1);
		if (axis < 0 || r + 1 > IR_MAX_RANK)
			return fail(c, "axis %lld is out of range for rank %d", (long long)a0, r + 1);
		s.rank = r + 1;
		for (int a = 0, j = 0; a <= r; a++)
			s.d[a] = a == axis ? ir_dim_const((int64_t)depth) : x->shape.d[j++];
		set_out(c, 0, vals->dtype, &s);
		return 0;
	}
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: {
		double size;
		ir_dtype dt = (ir_dtype)ir_attr_int(n, "output_datatype", DT_F32);
		if (need_ty(c, 0, TY_INT, ir_op_name(n->op)) || const_scalar(c, 0, &size))
			return 1;
		if (size < 0 || size > INFER_NUMEL_MAX || !infer_dtype_ok(dt) || dt == DT_BOOL)
			return fail(c, "size must be between 0 and %lld and output_datatype numeric",
				    (long long)INFER_NUMEL_MAX);
		s.rank = 1;
		s.d[0] = ir_dim_const((int64_t)size);
		set_out(c, 0, dt, &s);
		return 0;
	}
	case OP_TOPK: {
		double k;
		int64_t a0 = ir_attr_int(n, "axis", -1);
		int axis = norm_axis(a0, r);
		const ir_value *kv = in(c, 1);
		if (x->dtype != DT_F32 && x->dtype != DT_I64 && x->dtype != DT_I32)
			return fail(c, "unsupported dtype %s for TopK (input 0 '%s'): f32, i64 and i32 are supported",
				    ir_dtype_name(x->dtype), x->name);
		if (axis < 0)
			return fail(c, "axis %lld is out of range for rank %d", (long long)a0, r);
		if (kv && infer_is_const(kv) && kv->sym && ir_shape_const_numel(&kv->shape) == 1) {
			/* K from the shape (a sort, as PyTorch's pack_padded_sequence
			 * orders the batch by length): the axis' whole length */
			if (!ir_dim_eq(kv->sym[0], x->shape.d[axis]))
				return fail(c, "K is %s and axis %lld has %s elements: a K that the shape gives must be "
					    "the axis' length (a sort)", dimstr(c, kv->sym[0]), (long long)a0,
					    dimstr(c, x->shape.d[axis]));
			s.d[axis] = kv->sym[0];
		} else {
			if (const_scalar(c, 1, &k))
				return 1;
			/* a run-time size must be at least K: recorded as its
			 * symbol's least value, which the generated code checks */
			ir_dim d = x->shape.d[axis];
			if (k < 0 || k > (double)INT32_MAX ||
			    (ir_dim_is_const(d) ? k > (double)d.k : !ir_sym_need(ir_root(c->g), d, (int64_t)k)))
				return fail(c, "axis %lld must have at least K = %g elements (a constant size, or a run-time "
					    "size of one symbol, which then must be at least K)", (long long)a0, k);
			s.d[axis] = ir_dim_const((int64_t)k);
		}
		if (!ir_attr_int(n, "sorted", 1))
			return fail(c, "sorted 0 (any order) is not supported; cellc returns them sorted");
		set_out(c, 0, x->dtype, &s);
		set_out(c, 1, DT_I64, &s);
		return 0;
	}
	case OP_TILE: {
		/* repeats may be sizes known at run time (x.repeat(1, T, 1) of a
		 * [B, 1, H] state): each axis becomes its size times its repeat */
		ir_dim rep[IR_MAX_RANK];
		int m = const_ints(c, 1, rep, IR_MAX_RANK);
		if (m < 0)
			return 1;
		if (m != r)
			return fail(c, "repeats has %d values for rank %d", m, r);
		for (int a = 0; a < r; a++) {
			if (infer_mono_is_const(rep[a]) && rep[a].k < 0)
				return fail(c, "repeats[%d] is negative", a);
			if (!infer_mono_is_const(rep[a]) && rep[a].k < 1)
				return fail(c, "repeats[%d] is %s; a repeat known at run time must be a size", a,
					    mono(c, rep[a]));
			s.d[a] = ir_dim_mul(x->shape.d[a], rep[a]);
		}
		break;
	}
	default: UNREACHABLE();
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* ---- class-index losses ------------------------------------------------------------ */

static int infer_loss(ictx *c)
{
	ir_value *x = in(c, 0), *t = in(c, 1), *w = in(c, 2);
	int r = x->shape.rank;
	if (need_f32(c, 0) || need_f32(c, 2))
		return 1;
	if (t->dtype != DT_I64)
		return fail(c, "the labels ('%s') must be i64, not %s", t->name, ir_dtype_name(t->dtype));
	int ok = r >= 2 && t->shape.rank == r - 1 && ir_dim_eq(t->shape.d[0], x->shape.d[0]);
	for (int a = 2; ok && a < r; a++)
		ok = ir_dim_eq(t->shape.d[a - 1], x->shape.d[a]);
	if (!ok)
		return fail(c, "scores %s and labels %s must be [N, C, D..] and [N, D..]", shp(c, &x->shape),
			    shp(c, &t->shape));
	if (w && (w->shape.rank != 1 || !ir_dim_eq(w->shape.d[0], x->shape.d[1])))
		return fail(c, "weights %s must be [C] = [%s]", shp(c, &w->shape), dimstr(c, x->shape.d[1]));
	ir_shape s = {.rank = 0};
	if (!strcmp(ir_attr_string(c->n, "reduction", "mean"), "none"))
		s = t->shape;
	set_out(c, 0, DT_F32, &s);
	set_out(c, 1, DT_F32, &x->shape);
	return 0;
}

/* ---- layout, ConvTranspose, scatter/gather by tuples, InstanceNormalization ---------- */

int infer_convt_geometry(const ir_node *n, int64_t *k, int64_t *st, int64_t *pads, int64_t *dil, int64_t *ysp)
{
	const ir_value *x = n->in[0], *w = n->in[1];
	int nsp = x->shape.rank - 2;
	ir_attr *a;
	for (int i = 0; i < nsp; i++) {
		k[i] = w->shape.d[2 + i].k;
		st[i] = dil[i] = 1;
		pads[i] = pads[nsp + i] = 0;
	}
	const char *names[] = {"strides", "dilations", "pads"};
	int64_t *dst[] = {st, dil, pads};
	for (int j = 0; j < 3; j++)
		if ((a = ir_attr_find((ir_node *)n, names[j]))) {
			if (a->n != (j == 2 ? 2 * nsp : nsp))
				return -1;
			for (int i = 0; i < a->n; i++)
				dst[j][i] = a->ints[i];
		}
	ir_attr *op = ir_attr_find((ir_node *)n, "output_padding"), *os = ir_attr_find((ir_node *)n, "output_shape");
	if ((op && op->n != nsp) || (os && os->n != nsp && os->n != nsp + 2))
		return -1;
	const char *ap = ir_attr_string((ir_node *)n, "auto_pad", "NOTSET");
	int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	for (int i = 0; i < nsp; i++) {
		if (!ir_dim_is_const(x->shape.d[2 + i]) || st[i] < 1 || dil[i] < 1)
			return -1;
		int64_t d = x->shape.d[2 + i].k, opad = op ? op->ints[i] : 0, span = dil[i] * (k[i] - 1) + 1;
		if (os || same) {
			int64_t out = os ? os->ints[os->n - nsp + i] : d * st[i];
			int64_t total = st[i] * (d - 1) + opad + span - out;
			if (total < 0)
				total = 0;
			if (!strcmp(ap, "SAME_UPPER")) {
				pads[i] = total / 2;
				pads[nsp + i] = total - total / 2;
			} else {
				pads[i] = total - total / 2;
				pads[nsp + i] = total / 2;
			}
			ysp[i] = out;
		} else {
			ysp[i] = st[i] * (d - 1) + opad + span - pads[i] - pads[nsp + i];
		}
		if (ysp[i] < 0)
			return -1;
	}
	return nsp;
}

/* TfIdfVectorizer: the attributes describe the pool (ngram_counts[k] is where
 * the (k+1)-grams start in pool_int64s, each taking k+1 entries; the n-grams
 * are numbered in pool order and ngram_indexes[i] is n-gram i's column). */
static int infer_tfidf_check(const ir_node *n, char *why, size_t whylen)
{
	const char *mode = ir_attr_string(n, "mode", "");
	int64_t mn = ir_attr_int(n, "min_gram_length", 0), mx = ir_attr_int(n, "max_gram_length", 0);
	int64_t skip = ir_attr_int(n, "max_skip_count", -1);
	const ir_attr *cnt = ir_attr_find(n, "ngram_counts"), *ix = ir_attr_find(n, "ngram_indexes");
	const ir_attr *pool = ir_attr_find(n, "pool_int64s"), *w = ir_attr_find(n, "weights");
	if (strcmp(mode, "TF") && strcmp(mode, "IDF") && strcmp(mode, "TFIDF"))
		return snprintf(why, whylen, "mode must be TF, IDF or TFIDF, not '%s'", mode), 1;
	if (mn < 1 || mx < mn || skip < 0)
		return snprintf(why, whylen, "needs 1 <= min_gram_length (%lld) <= max_gram_length (%lld) and "
				"max_skip_count (%lld) >= 0", (long long)mn, (long long)mx, (long long)skip), 1;
	if (!cnt || !ix || !pool || cnt->n < 1 || cnt->n > 64)
		return snprintf(why, whylen, "needs ngram_counts (1 to 64 levels), ngram_indexes and pool_int64s"), 1;
	int64_t grams = 0;
	for (int k = 0; k < cnt->n; k++) {
		int64_t lo = cnt->ints[k], hi = k + 1 < cnt->n ? cnt->ints[k + 1] : pool->n;
		if (lo < 0 || hi < lo || hi > pool->n || (hi - lo) % (k + 1))
			return snprintf(why, whylen, "ngram_counts[%d] = %lld does not start a run of %d-grams in "
					"pool_int64s (%d entries)", k, (long long)lo, k + 1, pool->n), 1;
		grams += (hi - lo) / (k + 1);
	}
	if (grams != ix->n)
		return snprintf(why, whylen, "the pool holds %lld n-grams but ngram_indexes has %d entries",
				(long long)grams, ix->n), 1;
	if (w && w->n != ix->n)
		return snprintf(why, whylen, "weights has %d entries, ngram_indexes %d", w->n, ix->n), 1;
	for (int i = 0; i < ix->n; i++)
		if (ix->ints[i] < 0 || ix->ints[i] >= INFER_NUMEL_MAX)
			return snprintf(why, whylen, "ngram_indexes[%d] = %lld is out of range", i,
					(long long)ix->ints[i]), 1;
	return 0;
}

static int infer_tfidf(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	char why[256];
	if (x->dtype != DT_I32 && x->dtype != DT_I64)
		return fail(c, "X must be i32 or i64 (string inputs are not supported), not %s", ir_dtype_name(x->dtype));
	if (x->shape.rank != 1 && x->shape.rank != 2)
		return fail(c, "X must be [C] or [N, C], not %s", shp(c, &x->shape));
	if (infer_tfidf_check(n, why, sizeof why))
		return fail(c, "%s", why);
	const ir_attr *ix = ir_attr_find(n, "ngram_indexes");
	int64_t width = 0;
	for (int i = 0; i < ix->n; i++)
		width = ix->ints[i] + 1 > width ? ix->ints[i] + 1 : width;
	ir_shape s = x->shape;
	s.d[s.rank - 1] = ir_dim_const(width);
	set_out(c, 0, DT_F32, &s);
	return 0;
}

static int infer_layout(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
	switch (n->op) {
	case OP_DEPTHTOSPACE: case OP_SPACETODEPTH: {
		int64_t b = ir_attr_int(n, "blocksize", 1);
		if (b < 1 || b > 65536)
			return fail(c, "blocksize %lld is not between 1 and 65536", (long long)b);
		if (r != 4)
			return fail(c, "X must be [N, C, H, W], not %s", shp(c, &x->shape));
		for (int a = 1; a < 4; a++)
			if (!ir_dim_is_const(x->shape.d[a]))
				return fail(c, "X %s needs constant C, H and W", shp(c, &x->shape));
		int64_t C = x->shape.d[1].k, H = x->shape.d[2].k, W = x->shape.d[3].k;
		if (n->op == OP_DEPTHTOSPACE ? C % (b * b) : H % b || W % b)
			return fail(c, "X %s does not divide into blocks of %lld", shp(c, &x->shape), (long long)b);
		int d2s = n->op == OP_DEPTHTOSPACE;
		s.d[1] = ir_dim_const(d2s ? C / (b * b) : C * b * b);
		s.d[2] = ir_dim_const(d2s ? H * b : H / b);
		s.d[3] = ir_dim_const(d2s ? W * b : W / b);
		break;
	}
	case OP_CONVTRANSPOSE: {
		ir_value *w = in(c, 1), *b = in(c, 2);
		if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2))
			return 1;
		int64_t group = ir_attr_int(n, "group", 1);
		if (r < 3 || w->shape.rank != r || !ir_dim_is_const(w->shape.d[1]) || !ir_dim_eq(w->shape.d[0], x->shape.d[1]) ||
		    !ir_dim_is_const(x->shape.d[1]) || x->shape.d[1].k % group)
			return fail(c, "X %s and W %s must be [N, C, D..] and [C, M/group, K..]", shp(c, &x->shape),
				    shp(c, &w->shape));
		int64_t m = w->shape.d[1].k * group;
		if (b && (b->shape.rank != 1 || !ir_dim_eq(b->shape.d[0], ir_dim_const(m))))
			return fail(c, "B %s must be [%lld]", shp(c, &b->shape), (long long)m);
		int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK], ysp[IR_MAX_RANK];
		if (infer_convt_geometry(n, k, st, pads, dil, ysp) < 0)
			return fail(c, "needs constant spatial sizes and strides, dilations, pads, output_padding and "
				    "output_shape that fit X %s", shp(c, &x->shape));
		s.d[1] = ir_dim_const(m);
		for (int a = 2; a < r; a++)
			s.d[a] = ir_dim_const(ysp[a - 2]);
		set_out(c, 0, DT_F32, &s);
		return 0;
	}
	case OP_SCATTERELEMENTS: {
		ir_value *ix = in(c, 1), *u = in(c, 2);
		if (ix->dtype != DT_I64 || ix->shape.rank != r || !ir_shape_eq(&ix->shape, &u->shape) || same_ty(c, 2) ||
		    norm_axis(ir_attr_int(n, "axis", 0), r) < 0)
			return fail(c, "indices must be i64 of the rank of X, updates of the shape of indices and the "
				    "dtype of X, axis one of X's axes");
		if (strcmp(ir_attr_string(n, "reduction", "none"), "none") && x->dtype != DT_F32)
			return fail(c, "reduction %s is supported for f32 only", ir_attr_string(n, "reduction", ""));
		break;
	}
	case OP_SCATTERND: {
		ir_value *ix = in(c, 1), *u = in(c, 2);
		int q = ix->shape.rank ? (int)ix->shape.d[ix->shape.rank - 1].k : 0;
		if (ix->dtype != DT_I64 || ix->shape.rank < 1 || q < 1 || q > r || same_ty(c, 2) ||
		    u->shape.rank != ix->shape.rank - 1 + r - q)
			return fail(c, "indices must be i64 [.., q] with q <= rank of X, updates [.., X dims after q]");
		if (strcmp(ir_attr_string(n, "reduction", "none"), "none") && x->dtype != DT_F32)
			return fail(c, "reduction %s is supported for f32 only", ir_attr_string(n, "reduction", ""));
		break;
	}
	case OP_GATHERND: {
		ir_value *ix = in(c, 1);
		int qr = ix->shape.rank, bd = (int)ir_attr_int(n, "batch_dims", 0);
		int q = qr ? (int)ix->shape.d[qr - 1].k : 0;
		if (ix->dtype != DT_I64 || qr < 1 || !ir_dim_is_const(ix->shape.d[qr - 1]) || bd < 0 || bd >= qr ||
		    q < 1 || bd + q > r)
			return fail(c, "indices must be i64 [.., q] with batch_dims + q <= rank of X");
		for (int a = 0; a < bd; a++)
			if (!ir_dim_eq(ix->shape.d[a], x->shape.d[a]))
				return fail(c, "the batch axes of indices and X differ");
		s.rank = qr - 1 + r - bd - q;
		if (s.rank > IR_MAX_RANK)
			return fail(c, "the result would have rank %d", s.rank);
		for (int a = 0; a < qr - 1; a++)
			s.d[a] = ix->shape.d[a];
		for (int a = bd + q; a < r; a++)
			s.d[qr - 1 + a - bd - q] = x->shape.d[a];
		break;
	}
	case OP_REVERSESEQ: {
		ir_value *lens = in(c, 1);
		int64_t ba = ir_attr_int(n, "batch_axis", 1), ta = ir_attr_int(n, "time_axis", 0);
		if (r < 2 || (ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
			return fail(c, "X %s must have rank 2 or more, batch_axis and time_axis be 0 and 1 in some order",
				    shp(c, &x->shape));
		if (lens->dtype != DT_I64 || lens->shape.rank != 1 || !ir_dim_eq(lens->shape.d[0], x->shape.d[ba]))
			return fail(c, "sequence_lens must be i64 [%s] (the batch axis of X), not %s %s",
				    dimstr(c, x->shape.d[ba]), ir_dtype_name(lens->dtype), shp(c, &lens->shape));
		break;
	}
	case OP_TFIDF:
		return infer_tfidf(c);
	case OP_INSTANCENORM:
		if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2))
			return 1;
		if (r < 3 || in(c, 1)->shape.rank != 1 || !ir_dim_eq(in(c, 1)->shape.d[0], x->shape.d[1]) ||
		    !ir_shape_eq(&in(c, 1)->shape, &in(c, 2)->shape))
			return fail(c, "X must be [N, C, D..] and scale, B [C]");
		break;
	default: UNREACHABLE();
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* ---- Det, Einsum, LRN, MeanVarianceNormalization, MaxUnpool, DFT, STFT, MelWeightMatrix ---- */

/* One term of an Einsum equation: letters and at most one "...", spaces
 * ignored.  ell receives the position of the ellipsis among the letters (-1:
 * none). */
static int einsum_term(const char *t, size_t len, char *letters, int *nletters, int *ell)
{
	*nletters = 0;
	*ell = -1;
	for (size_t i = 0; i < len; i++) {
		char ch = t[i];
		if (ch == ' ')
			continue;
		if (ch == '.') {
			if (*ell >= 0 || i + 2 >= len || t[i + 1] != '.' || t[i + 2] != '.')
				return -1;
			*ell = *nletters;
			i += 2;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) || *nletters >= IR_MAX_RANK)
			return -1;
		letters[(*nletters)++] = ch;
	}
	return 0;
}

int infer_einsum_plan(const ir_node *n, infer_einsum *p, char *err, size_t errlen)
{
	const char *eq = ir_attr_string((ir_node *)n, "equation", "");
	const char *arrow = strstr(eq, "->");
	size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
	char let[16][IR_MAX_RANK], olet[IR_MAX_RANK];
	int nlet[16], ell[16], nell = 0, onlet = 0, oell = -1;
	memset(p, 0, sizeof *p);
	p->nops = n->nin;
	/* the operands' terms */
	size_t at = 0;
	for (int o = 0; o < n->nin; o++) {
		size_t end = at;
		while (end < lhs_len && eq[end] != ',')
			end++;
		if ((o == n->nin - 1) != (end == lhs_len) || o >= 16 ||
		    einsum_term(eq + at, end - at, let[o], &nlet[o], &ell[o])) {
			snprintf(err, errlen, "equation '%s' must have one term of letters (and at most one '...') "
				 "per operand, %d here", eq, n->nin);
			return -1;
		}
		int r = n->in[o]->shape.rank, e = r - nlet[o];
		if (e < 0 || (e > 0 && ell[o] < 0)) {
			snprintf(err, errlen, "term %d of equation '%s' has %d letters for an operand of rank %d", o,
				 eq, nlet[o], r);
			return -1;
		}
		if (ell[o] >= 0 && e > nell)
			nell = e;
		at = end + 1;
	}
	if (arrow && einsum_term(arrow + 2, strlen(arrow + 2), olet, &onlet, &oell)) {
		snprintf(err, errlen, "the output term of equation '%s' must be letters and at most one '...'", eq);
		return -1;
	}
	/* letter -> label: the output's first, then the others in ASCII order */
	int id[128], count[128] = {0};
	for (int i = 0; i < 128; i++)
		id[i] = -1;
	for (int o = 0; o < p->nops; o++)
		for (int i = 0; i < nlet[o]; i++)
			count[(int)let[o][i]]++;
	int nl = 0;
	if (arrow) {
		if (oell < 0 && nell > 0) {
			snprintf(err, errlen, "equation '%s' gives an output term without '...' for operands with "
				 "'...'", eq);
			return -1;
		}
		for (int i = 0; i < onlet + (oell >= 0 ? nell : 0); i++) {
			/* the ellipsis' axes sit where the output term has it */
			int li = oell < 0 || i < oell ? i : i < oell + nell ? -1 : i - nell;
			if (li < 0) {
				nl++;
				continue;
			}
			char ch = olet[li];
			if (id[(int)ch] >= 0 || !count[(int)ch]) {
				snprintf(err, errlen, "output letter '%c' of equation '%s' is repeated or in no operand",
					 ch, eq);
				return -1;
			}
			id[(int)ch] = nl++;
		}
	} else {
		nl = nell;
		for (int ch = 0; ch < 128; ch++)
			if (count[ch] == 1)
				id[ch] = nl++;
	}
	p->nout = nl;
	/* the ellipsis' axes are output labels ebase .. ebase + nell - 1 (an
	 * explicit output without "..." has none to place: nell is 0) */
	int ebase = arrow && oell >= 0 ? oell : 0;
	for (int ch = 0; ch < 128; ch++)
		if (count[ch] && id[ch] < 0)
			id[ch] = nl++;
	p->nlab = nl;
	for (int ch = 0; ch < 128; ch++)
		if (id[ch] >= 0 && id[ch] < INFER_EINSUM_MAXLAB)
			p->letter[id[ch]] = (char)ch;
	for (int j = 0; j < nell && ebase + j < INFER_EINSUM_MAXLAB; j++)
		p->letter[ebase + j] = '.';
	if (nl > INFER_EINSUM_MAXLAB) {
		snprintf(err, errlen, "equation '%s' has more than %d labels", eq, INFER_EINSUM_MAXLAB);
		return -1;
	}
	for (int o = 0; o < p->nops; o++) {
		int r = n->in[o]->shape.rank, e = r - nlet[o], a = 0;
		p->rank[o] = r;
		for (int i = 0; i <= nlet[o]; i++) {
			if (i == ell[o])        /* right-aligned against the longest ellipsis */
				for (int j = 0; j < e; j++)
					p->labels[o][a++] = ebase + nell - e + j;
			if (i < nlet[o])
				p->labels[o][a++] = id[(int)let[o][i]];
		}
	}
	return 0;
}

static int infer_linalg(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
	ir_dtype dt = x->dtype;
	switch (n->op) {
	case OP_DET:
		if (need_ty(c, 0, TY_FLOAT, "Det"))
			return 1;
		if (r < 2 || !ir_dim_eq(x->shape.d[r - 1], x->shape.d[r - 2]))
			return fail(c, "X must be [.., M, M], not %s", shp(c, &x->shape));
		s.rank = r - 2;
		break;
	case OP_EINSUM: {
		infer_einsum p;
		char err[300];
		ir_dim size[INFER_EINSUM_MAXLAB];
		int seen[INFER_EINSUM_MAXLAB] = {0};
		for (int k = 0; k < n->nin; k++)
			if (!in(c, k))
				return fail(c, "operand %d is missing", k);
			else if (need_ty(c, k, TY_FLOAT, "Einsum") || same_ty(c, k))
				return 1;
		if (infer_einsum_plan(n, &p, err, sizeof err))
			return fail(c, "%s", err);
		if (p.nout > IR_MAX_RANK)
			return fail(c, "the result would have rank %d", p.nout);
		for (int o = 0; o < p.nops; o++)
			for (int a = 0; a < p.rank[o]; a++) {
				int l = p.labels[o][a];
				ir_dim d = n->in[o]->shape.d[a];
				if (seen[l] && !ir_dim_eq(size[l], d))
					return fail(c, "%s of the equation has sizes %s and %s (cellc does not broadcast "
						    "Einsum operands)", p.letter[l] == '.' ? "an axis of '...'" :
						    arena_printf(c->A, "label '%c'", p.letter[l]), dimstr(c, size[l]),
						    dimstr(c, d));
				seen[l] = 1;
				size[l] = d;
			}
		s.rank = p.nout;
		for (int l = 0; l < p.nout; l++)
			s.d[l] = size[l];
		break;
	}
	case OP_LRN:
		if (need_f32(c, 0))
			return 1;
		if (r < 3)
			return fail(c, "X must be [N, C, D..] (rank 3 or more), not %s", shp(c, &x->shape));
		break;
	case OP_MVN: {
		if (need_f32(c, 0))
			return 1;
		ir_attr *a = ir_attr_find(n, "axes");
		int64_t def[3] = {0, 2, 3};
		int na = a ? a->n : 3, mask[IR_MAX_RANK] = {0};
		for (int i = 0; i < na; i++) {
			int64_t v = a ? a->ints[i] : def[i];
			int ax = norm_axis(v, r);
			if (ax < 0 || mask[ax])
				return fail(c, "axes must be distinct axes of X %s; %lld is not", shp(c, &x->shape),
					    (long long)v);
			mask[ax] = 1;
		}
		break;
	}
	case OP_MAXUNPOOL: {
		ir_value *ix = in(c, 1), *os = in(c, 2);
		int64_t ysp[IR_MAX_RANK];
		if (need_f32(c, 0))
			return 1;
		if (ix->dtype != DT_I64 || !ir_shape_eq(&ix->shape, &x->shape) || r < 3)
			return fail(c, "X must be [N, C, D..] and I int64 of its shape");
		if (os) {
			if (!infer_is_const(os) || os->sym)
				return not_const(c, 2);
			if (os->dtype != DT_I64 || ir_shape_const_numel(&os->shape) != r || os->shape.rank != 1)
				return fail(c, "output_shape must be int64 [%d]", r);
			for (int a = 0; a < r; a++) {
				int64_t v = infer_elem_int(os, a);
				if (v < 0 || (a < 2 && !(ir_dim_is_const(x->shape.d[a]) && x->shape.d[a].k == v)))
					return fail(c, "output_shape must keep N and C of X %s", shp(c, &x->shape));
				if (a >= 2)
					s.d[a] = ir_dim_const(v);
			}
		}
		if (infer_unpool_geometry(n, ysp) < 0)
			return fail(c, "needs constant spatial sizes of X %s and kernel_shape, strides and pads with "
				    "one value per spatial axis (pads two)", shp(c, &x->shape));
		if (!os)
			for (int a = 2; a < r; a++)
				s.d[a] = ir_dim_const(ysp[a - 2]);
		break;
	}
	case OP_DFT: {
		if (need_ty(c, 0, TY_FLOAT, "DFT"))
			return 1;
		int64_t a0 = ir_attr_int(n, "axis", 1);
		int ax = norm_axis(a0, r), inv = (int)ir_attr_int(n, "inverse", 0), one = (int)ir_attr_int(n, "onesided", 0);
		if (r < 3 || !ir_dim_is_const(x->shape.d[r - 1]) || (x->shape.d[r - 1].k != 1 && x->shape.d[r - 1].k != 2))
			return fail(c, "input must be [batch, signal dims.., 1 or 2], not %s", shp(c, &x->shape));
		if (ax < 1 || ax > r - 2)
			return fail(c, "axis %lld must be a signal axis (1 .. %d) of %s", (long long)a0, r - 2,
				    shp(c, &x->shape));
		ir_dim len = x->shape.d[ax];
		if (in(c, 1)) {
			double v;
			if (need_ty(c, 1, TY_INT, "DFT") || const_scalar(c, 1, &v))
				return 1;
			if (v < 1 || v > INFER_NUMEL_MAX)
				return fail(c, "dft_length must be positive, not %g", v);
			len = ir_dim_const((int64_t)v);
		}
		if (one && (inv || x->shape.d[r - 1].k != 1))
			return fail(c, "onesided 1 needs a real input (last axis 1) and inverse 0");
		if (one) {
			if (!ir_dim_is_const(len))
				return fail(c, "onesided needs a constant length of axis %d", ax);
			len = ir_dim_const(len.k / 2 + 1);
		}
		s.d[ax] = len;
		s.d[r - 1] = ir_dim_const(2);
		break;
	}
	case OP_STFT: {
		double step, fl = -1;
		ir_value *w = in(c, 2);
		if (need_ty(c, 0, TY_FLOAT, "STFT") || same_ty(c, 2) || const_scalar(c, 1, &step) ||
		    (in(c, 3) && const_scalar(c, 3, &fl)))
			return 1;
		if (r != 3 || !ir_dim_is_const(x->shape.d[1]) || !ir_dim_is_const(x->shape.d[2]) ||
		    (x->shape.d[2].k != 1 && x->shape.d[2].k != 2))
			return fail(c, "signal must be [batch, constant length, 1 or 2], not %s", shp(c, &x->shape));
		if (w && (w->shape.rank != 1 || !ir_dim_is_const(w->shape.d[0])))
			return fail(c, "window must be 1-D of constant length, not %s", shp(c, &w->shape));
		if (!w && fl < 0)
			return fail(c, "needs window or frame_length");
		if (w && fl >= 0 && (double)w->shape.d[0].k != fl)
			return fail(c, "frame_length %g differs from the window's length %lld", fl,
				    (long long)w->shape.d[0].k);
		int64_t nfft = w ? w->shape.d[0].k : (int64_t)fl, len = x->shape.d[1].k;
		if (step < 1 || nfft < 1 || nfft > len)
			return fail(c, "frame_step must be positive and the frame length (%lld) between 1 and the "
				    "signal's length (%lld)", (long long)nfft, (long long)len);
		int one = (int)ir_attr_int(n, "onesided", 1);
		if (one && x->shape.d[2].k != 1)
			return fail(c, "onesided 1 needs a real signal (last axis 1); set onesided 0");
		s.rank = 4;
		s.d[1] = ir_dim_const((len - nfft) / (int64_t)step + 1);
		s.d[2] = ir_dim_const(one ? nfft / 2 + 1 : nfft);
		s.d[3] = ir_dim_const(2);
		break;
	}
	case OP_MELWEIGHT: {
		double v[5];
		dt = (ir_dtype)ir_attr_int(n, "output_datatype", DT_F32);
		for (int k = 0; k < 5; k++)
			if (need_ty(c, k, k < 3 ? TY_INT : TY_FLOAT, "MelWeightMatrix") || const_scalar(c, k, &v[k]))
				return 1;
		if (v[0] < 1 || v[1] < 1 || v[2] < 1 || v[0] > INFER_NUMEL_MAX || v[1] > INFER_NUMEL_MAX ||
		    v[3] < 0 || v[4] < v[3] || !(dt == DT_F32 || dt == DT_F64))
			return fail(c, "needs positive num_mel_bins, dft_length and sample_rate, 0 <= lower_edge_hertz "
				    "<= upper_edge_hertz and a float output_datatype");
		s.rank = 2;
		s.d[0] = ir_dim_const((int64_t)v[1] / 2 + 1);
		s.d[1] = ir_dim_const((int64_t)v[0]);
		break;
	}
	default: UNREACHABLE();
	}
	set_out(c, 0, dt, &s);
	return 0;
}

int infer_unpool_geometry(const ir_node *n, int64_t *ysp)
{
	const ir_value *x = n->in[0];
	int nsp = x->shape.rank - 2;
	ir_attr *ka = ir_attr_find((ir_node *)n, "kernel_shape"), *sa = ir_attr_find((ir_node *)n, "strides"),
		*pa = ir_attr_find((ir_node *)n, "pads");
	if (nsp < 1 || !ka || ka->n != nsp || (sa && sa->n != nsp) || (pa && pa->n != 2 * nsp))
		return -1;
	for (int i = 0; i < nsp; i++) {
		int64_t d = x->shape.d[2 + i].k, k = ka->ints[i], st = sa ? sa->ints[i] : 1;
		int64_t pb = pa ? pa->ints[i] : 0, pe = pa ? pa->ints[nsp + i] : 0;
		if (!ir_dim_is_const(x->shape.d[2 + i]) || k < 1 || st < 1 || pb < 0 || pe < 0)
			return -1;
		ysp[i] = (d - 1) * st + k - pb - pe;
		if (ysp[i] < 0)
			return -1;
	}
	return nsp;
}

/* ---- LSTM / GRU / RNN ---------------------------------------------------------- *//* ---- LSTM / GRU / RNN ---------------------------------------------------------- */

/* Input k must have exactly the shape want (described as spec, e.g. "[D, 4H, I]"). */
static int need_shape(ictx *c, int k, const char *tensor, const ir_shape *want, const char *spec)
{
	ir_value *v = in(c, k);
	if (!v || ir_shape_eq(&v->shape, want))
		return 0;
	/* two symbols where one size is meant (a batch axis the file leaves
	 * unnamed on two inputs): say how to make them one */
	const char *hint = "";
	for (int a = 0; a < v->shape.rank && a < want->rank && !*hint; a++) {
		ir_dim x = v->shape.d[a], y = want->d[a];
		if (ir_dim_is_const(x) || ir_dim_is_const(y) || ir_dim_eq(x, y))
			continue;
		hint = arena_printf(c->A, "; if %s and %s are one size, --dim %s=%s makes them one symbol",
				    dimstr(c, x), dimstr(c, y), dimstr(c, x), dimstr(c, y));
	}
	return fail(c, "%s ('%s') has shape %s but must be %s = %s%s", tensor, v->name,
		    shp(c, &v->shape), spec, shp(c, want), hint);
}

static ir_shape shape3(ir_dim a, ir_dim b, ir_dim d)
{
	ir_shape s = {.rank = 3};
	s.d[0] = a;
	s.d[1] = b;
	s.d[2] = d;
	return s;
}

static int infer_rnn(ictx *c)
{
	ir_node *n = c->n;
	ir_value *X = in(c, 0), *W = in(c, 1), *R = in(c, 2);
	int gates = n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1;
	const char *gs = n->op == OP_LSTM ? "4H" : n->op == OP_GRU ? "3H" : "H";
	const char *bs = n->op == OP_LSTM ? "[D, 8H]" : n->op == OP_GRU ? "[D, 6H]" : "[D, 2H]";
	for (int k = 0; k < n->nin; k++)
		if (k != 4 && need_f32(c, k))
			return 1;
	if (in(c, 4) && in(c, 4)->dtype != DT_I32)
		return fail(c, "sequence_lens ('%s') must be i32, not %s", iname(c, 4),
			    ir_dtype_name(in(c, 4)->dtype));
	int64_t layout = ir_attr_int(n, "layout", 0);
	if (layout != 0 && layout != 1)
		return fail(c, "attribute 'layout' must be 0 or 1, not %lld", (long long)layout);
	const char *dir = ir_attr_string(n, "direction", "forward");
	int64_t D;
	if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0)
		D = 1;
	else if (strcmp(dir, "bidirectional") == 0)
		D = 2;
	else
		return fail(c, "attribute 'direction' must be forward, reverse or bidirectional, not '%s'",
			    dir);
	if (X->shape.rank != 3)
		return fail(c, "X ('%s') must have rank 3 (%s), not %s", X->name,
			    layout ? "[B, T, I]" : "[T, B, I]", shp(c, &X->shape));
	if (W->shape.rank != 3 || R->shape.rank != 3)
		return fail(c, "W ('%s') and R ('%s') must have rank 3, not %s and %s", W->name, R->name,
			    shp(c, &W->shape), shp(c, &R->shape));
	ir_dim T = X->shape.d[layout ? 1 : 0], Bt = X->shape.d[layout ? 0 : 1], I = X->shape.d[2];
	int64_t H;
	ir_attr *hs = ir_attr_find(n, "hidden_size");
	if (hs) {
		if (hs->kind != ATTR_INT || hs->i <= 0 || hs->i > (1 << 24))
			return fail(c, "attribute 'hidden_size' must be a positive integer");
		H = hs->i;
	} else {
		if (!ir_dim_is_const(R->shape.d[2]) || R->shape.d[2].k <= 0 || R->shape.d[2].k > (1 << 24))
			return fail(c, "attribute 'hidden_size' is missing and R ('%s') %s does not give it",
				    R->name, shp(c, &R->shape));
		H = R->shape.d[2].k;
	}
	ir_dim d = ir_dim_const(D), h = ir_dim_const(H), g = ir_dim_const(gates * H);
	char spec[64];
	ir_shape want = shape3(d, g, I);
	snprintf(spec, sizeof spec, "[D, %s, I]", gs);
	if (need_shape(c, 1, "W", &want, spec))
		return 1;
	want = shape3(d, g, h);
	snprintf(spec, sizeof spec, "[D, %s, H]", gs);
	if (need_shape(c, 2, "R", &want, spec))
		return 1;
	want = (ir_shape){.rank = 2};
	want.d[0] = d;
	want.d[1] = ir_dim_const(2 * gates * H);
	if (need_shape(c, 3, "B", &want, bs))
		return 1;
	want = (ir_shape){.rank = 1};
	want.d[0] = Bt;
	if (need_shape(c, 4, "sequence_lens", &want, "[B]"))
		return 1;
	want = layout ? shape3(Bt, d, h) : shape3(d, Bt, h);
	const char *hspec = layout ? "[B, D, H]" : "[D, B, H]";
	if (need_shape(c, 5, "initial_h", &want, hspec))
		return 1;
	if (n->op == OP_LSTM) {
		if (need_shape(c, 6, "initial_c", &want, hspec))
			return 1;
		want = (ir_shape){.rank = 2};
		want.d[0] = d;
		want.d[1] = ir_dim_const(3 * H);
		if (need_shape(c, 7, "P", &want, "[D, 3H]"))
			return 1;
	}
	ir_shape y = {.rank = 4};
	if (layout) {
		y.d[0] = Bt;
		y.d[1] = T;
	} else {
		y.d[0] = T;
		y.d[1] = d;
		y.d[2] = Bt;
	}
	if (layout)
		y.d[2] = d;
	y.d[3] = h;
	ir_shape yh = layout ? shape3(Bt, d, h) : shape3(d, Bt, h);
	set_out(c, 0, X->dtype, &y);
	set_out(c, 1, X->dtype, &yh);
	set_out(c, 2, X->dtype, &yh);
	return 0;
}

/* ---- ai.onnx.preview.training optimisers --------------------------------------- */

/* Momentum / Adam / Adagrad: R a float scalar, T an int64 scalar (one
 * element each), then groups X.., G.., states..: every tensor of column j
 * f32 with X_j's shape (the specification's broadcasting is not needed by
 * any optimiser and not supported); output j of group k has X_j's shape. */
static int infer_optim(ictx *c)
{
	ir_node *n = c->n;
	int per = n->op == OP_ADAM ? 4 : 3, nt = (n->nin - 2) / per;
	ir_value *R = in(c, 0), *T = in(c, 1);
	ir_dim one;
	if ((R->dtype != DT_F32 && R->dtype != DT_F64) || !infer_numel(&R->shape, &one) || !ir_dim_eq(one, ir_dim_const(1)))
		return fail(c, "R ('%s') must be a float scalar, not %s %s", R->name, ir_dtype_name(R->dtype),
			    shp(c, &R->shape));
	if (T->dtype != DT_I64 || !infer_numel(&T->shape, &one) || !ir_dim_eq(one, ir_dim_const(1)))
		return fail(c, "T ('%s') must be an int64 scalar, not %s %s", T->name, ir_dtype_name(T->dtype),
			    shp(c, &T->shape));
	if (n->nin - 2 != nt * per || n->nout != nt * (per - 1))
		return fail(c, "has %d inputs and %d outputs; %s takes R, T and %d tensors per optimised tensor "
			    "and gives %d", n->nin, n->nout, n->op_type ? n->op_type : ir_op_name(n->op), per, per - 1);
	if (n->op == OP_MOMENTUM) {     /* native text reaches here without the loader's checks */
		const char *mode = ir_attr_string(n, "mode", "");
		if (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0)
			return fail(c, "attribute 'mode' must be standard or nesterov, not '%s'", mode);
	}
	for (int j = 0; j < nt; j++) {
		ir_value *X = in(c, 2 + j);
		for (int g = 0; g < per; g++) {
			int k = 2 + g * nt + j;
			if (need_f32(c, k))
				return 1;
			if (g && need_shape(c, k, g == 1 ? "the gradient" : "the state", &X->shape, "X's shape"))
				return 1;
		}
		for (int g = 0; g < per - 1; g++)
			set_out(c, g * nt + j, DT_F32, &X->shape);
	}
	return 0;
}

/* ---- entry --------------------------------------------------------------------- */

/* ---- data-dependent lengths ------------------------------------------------------ */

/* Output k's axis gets the run-time length: its dim there is the bound. */
static void set_dd(ictx *c, int k, ir_dtype dt, const ir_shape *s, int axis)
{
	set_out(c, k, dt, s);
	if (k < c->n->nout && c->n->out[k]) {
		c->n->out[k]->data_dep = 1;
		c->n->out[k]->dd_axis = axis;
	}
}

/* A scalar input (rank 0 or [1]) of dtype dt, when present. */
static int need_scalar(ictx *c, int k, ir_dtype dt, const char *what)
{
	ir_value *v = in(c, k);
	if (!v)
		return 0;
	if (v->dtype != dt || ir_shape_const_numel(&v->shape) != 1 || v->shape.rank > 1)
		return fail(c, "%s must be a %s scalar or [1], not %s %s", what, ir_dtype_name(dt),
			    ir_dtype_name(v->dtype), shp(c, &v->shape));
	return 0;
}

/* NonZero, Unique, Compress, NonMaxSuppression: the outputs whose length the
 * data decide are sized for the bound the specification implies (the
 * elements, the slices along the axis, batches * classes * boxes). */
static int infer_datadep(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = {.rank = 1};
	if (c->g->parent)
		return fail(c, "the length of its output is known only at run time, and cellc supports such "
			    "outputs only in the model's main graph, not inside a loop body");
	switch (n->op) {
	case OP_NONZERO:
		if (ir_dtype_size(x->dtype) == 0 || !ty_class(x->dtype))
			return fail(c, "unsupported dtype %s", ir_dtype_name(x->dtype));
		s.rank = 2;
		s.d[0] = ir_dim_const(r);
		s.d[1] = ir_shape_numel(&x->shape);
		set_dd(c, 0, DT_I64, &s, 1);
		return 0;
	case OP_COMPRESS: {
		ir_value *cond = in(c, 1);
		if (cond->dtype != DT_BOOL || cond->shape.rank != 1)
			return fail(c, "condition must be bool [m], not %s %s", ir_dtype_name(cond->dtype),
				    shp(c, &cond->shape));
		ir_attr *a = ir_attr_find(n, "axis");
		if (!a) {
			s.d[0] = ir_shape_numel(&x->shape);
			set_dd(c, 0, x->dtype, &s, 0);
			return 0;
		}
		int axis = norm_axis(a->i, r);
		if (axis < 0)
			return fail(c, "axis %lld is not an axis of X %s", (long long)a->i, shp(c, &x->shape));
		s = x->shape;
		set_dd(c, 0, x->dtype, &s, axis);
		return 0;
	}
	case OP_UNIQUE: {
		ir_attr *a = ir_attr_find(n, "axis");
		int axis = a ? norm_axis(a->i, r) : -1;
		if (!ty_class(x->dtype))
			return fail(c, "unsupported dtype %s", ir_dtype_name(x->dtype));
		if (a && axis < 0)
			return fail(c, "axis %lld is not an axis of X %s", (long long)a->i, shp(c, &x->shape));
		if (!n->out[0])
			return fail(c, "output Y is required");
		ir_dim len = a ? x->shape.d[axis] : ir_shape_numel(&x->shape);
		if (a) {
			s = x->shape;
			set_dd(c, 0, x->dtype, &s, axis);
		} else {
			s.d[0] = len;
			set_dd(c, 0, x->dtype, &s, 0);
		}
		ir_shape l = {.rank = 1};
		l.d[0] = len;
		set_dd(c, 1, DT_I64, &l, 0);
		set_out(c, 2, DT_I64, &l);      /* inverse_indices: one per element or slice of X */
		set_dd(c, 3, DT_I64, &l, 0);
		return 0;
	}
	case OP_NMS: {
		ir_value *sc = in(c, 1);
		if (need_f32(c, 0) || need_f32(c, 1) || need_scalar(c, 2, DT_I64, "max_output_boxes_per_class") ||
		    need_scalar(c, 3, DT_F32, "iou_threshold") || need_scalar(c, 4, DT_F32, "score_threshold"))
			return 1;
		if (r != 3 || !ir_dim_eq(x->shape.d[2], ir_dim_const(4)) || sc->shape.rank != 3 ||
		    !ir_dim_eq(sc->shape.d[0], x->shape.d[0]) || !ir_dim_eq(sc->shape.d[2], x->shape.d[1]))
			return fail(c, "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes], not %s "
				    "and %s", shp(c, &x->shape), shp(c, &sc->shape));
		int64_t cpb = ir_attr_int(n, "center_point_box", 0);
		if (cpb != 0 && cpb != 1)
			return fail(c, "center_point_box must be 0 or 1, not %lld", (long long)cpb);
		/* per batch and class at most min(boxes, max_output_boxes_per_class) */
		ir_dim per = x->shape.d[1];
		ir_value *mx = in(c, 2);
		if (!mx)
			per = ir_dim_const(0);          /* the default, 0: no box is selected */
		else if (infer_is_const(mx) && mx->data) {
			int64_t m = infer_elem_int(mx, 0);
			if (m <= 0)
				per = ir_dim_const(0);
			else if (ir_dim_is_const(per) && m < per.k)
				per = ir_dim_const(m);
		}
		s.rank = 2;
		s.d[0] = ir_dim_mul(ir_dim_mul(x->shape.d[0], sc->shape.d[1]), per);
		s.d[1] = ir_dim_const(3);
		set_dd(c, 0, DT_I64, &s, 0);
		return 0;
	}
	default: UNREACHABLE();
	}
}

static int infer_rule(ir_graph *g, ir_node *n, diag *D);

/* The rule of the node's operator, then ir_value.narrow: a float32 result of
 * float32 operands that all stand for the same FLOAT16 / BFLOAT16 type
 * stands for it too (ONNX's type constraints give such a result that type;
 * Cast decides its own). */
int infer_node(ir_graph *g, ir_node *n, diag *D)
{
	int r = infer_rule(g, n, D);
	if (r || n->op == OP_CAST)
		return r;
	ir_dtype narrow = DT_UNDEF;
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		if (!v || v->dtype != DT_F32)
			continue;
		if (!v->narrow || (narrow && v->narrow != narrow))
			return 0;
		narrow = v->narrow;
	}
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && n->out[k]->dtype == DT_F32)
			n->out[k]->narrow = narrow;
	return 0;
}

static int infer_rule(ir_graph *g, ir_node *n, diag *D)
{
	ictx cx = {g, n, D, g->A}, *c = &cx;
	const ir_opinfo *oi = &ir_ops[n->op];
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		const ir_node *p = v ? v->producer : NULL;
		if (v && v->data_dep)
			return fail(c, "input %d ('%s') has a data-dependent length: its axis %d (at most %s) is "
				    "computed at run time by %s '%s', and cellc supports such a value only as an "
				    "output of the model, not as the input of another node", k, v->name, v->dd_axis,
				    dimstr(c, v->shape.d[v->dd_axis]), p ? ir_op_name(p->op) : "?", p ? p->name : "?");
	}
	if (n->op == OP_RECURRENCE)
		return 0;
	if (n->nin < oi->min_in || n->nin > oi->max_in)
		return fail(c, "has %d inputs; %s takes %d to %d", n->nin, oi->name, oi->min_in,
			    oi->max_in);
	if (n->nout < oi->min_out || n->nout > oi->max_out)
		return fail(c, "has %d outputs; %s gives %d to %d", n->nout, oi->name, oi->min_out,
			    oi->max_out);
	for (int k = 0; k < n->nin; k++) {
		ir_value *v = n->in[k];
		if (!v) {
			if (k < oi->min_in)
				return fail(c, "required input %d is missing", k);
			continue;
		}
		if (!infer_dtype_ok(v->dtype))
			return fail(c, "unsupported dtype %s for input %d ('%s')",
				    ir_dtype_name(v->dtype), k, v->name);
		if (v->shape.rank < 0 || v->shape.rank > IR_MAX_RANK)
			return fail(c, "input %d ('%s') has no known shape", k, v->name);
		for (int i = 0; i < v->shape.rank; i++)
			if (v->shape.d[i].k < 0)
				return fail(c, "input %d ('%s') has no known shape", k, v->name);
	}
	switch (n->op) {
	case OP_TRANSPOSE: return infer_transpose(c);
	case OP_RESHAPE: return infer_reshape(c);
	case OP_SQUEEZE: return infer_squeeze(c);
	case OP_UNSQUEEZE: return infer_unsqueeze(c);
	case OP_FLATTEN: return infer_flatten(c);
	case OP_SLICE: return infer_slice(c);
	case OP_SPLIT: return infer_split(c);
	case OP_CONCAT: return infer_concat(c);
	case OP_GATHER: return infer_gather(c);
	case OP_SHAPE: return infer_shapeop(c);
	case OP_CONSTOFSHAPE: return infer_constofshape(c);
	case OP_EXPAND: return infer_expand(c);
	case OP_CAST: return infer_cast(c);
	case OP_GEMM: return infer_gemm(c);
	case OP_MATMUL: return infer_matmul(c);
	case OP_SOFTMAX: case OP_LOGSOFTMAX: return infer_softmax(c);
	case OP_LSTM: case OP_GRU: case OP_RNN: return infer_rnn(c);
	case OP_CELL: return cell_infer(g, n, D);       /* cells.c */
	case OP_MOMENTUM: case OP_ADAM: case OP_ADAGRAD: return infer_optim(c);
	case OP_REDUCESUM: case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCEPROD:
	case OP_REDUCEL1: case OP_REDUCEL2: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
	case OP_REDUCESUMSQUARE:
		return infer_reduce(c);
	case OP_ARGMAX: case OP_ARGMIN: return infer_argmax(c);
	case OP_CONV: return infer_conv(c);
	case OP_QUANTIZELINEAR: case OP_DEQUANTIZELINEAR: case OP_DYNQUANTIZELINEAR: case OP_MATMULINTEGER:
	case OP_QLINEARMATMUL: case OP_CONVINTEGER: case OP_QLINEARCONV:
		return infer_quant(c);
	case OP_MAXPOOL: case OP_AVGPOOL: case OP_GLOBALAVGPOOL: case OP_GLOBALMAXPOOL: return infer_pool(c);
	case OP_LAYERNORM: return infer_layernorm(c);
	case OP_BATCHNORM: return infer_batchnorm(c);
	case OP_DROPOUT: return infer_dropout(c);
	case OP_RANDOMUNIFORM: case OP_RANDOMNORMAL: case OP_RANDOMUNIFORMLIKE: case OP_RANDOMNORMALLIKE:
	case OP_BERNOULLI:
		return infer_random(c);
	case OP_CASTLIKE:
		/* the dtype is known now: the node becomes the Cast it stands for */
		ir_attr_set_int(n, "to", (int64_t)(n->in[1]->narrow ? n->in[1]->narrow : n->in[1]->dtype));
		n->op = OP_CAST;
		n->nin = 1;
		return infer_cast(c);
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW:
	case OP_TRILU: case OP_CUMSUM: case OP_HARDMAX: case OP_EYELIKE: case OP_RANGE: case OP_GATHERELEMENTS:
	case OP_ONEHOT: case OP_TILE: case OP_TOPK:
		return infer_misc(c);
	case OP_PAD: return infer_pad(c);
	case OP_DET: case OP_EINSUM: case OP_LRN: case OP_MVN: case OP_MAXUNPOOL: case OP_DFT: case OP_STFT:
	case OP_MELWEIGHT:
		return infer_linalg(c);
	case OP_RESIZE: return infer_resize(c);
	case OP_GRIDSAMPLE: return infer_gridsample(c);
	case OP_ROIALIGN: return infer_roialign(c);
	case OP_SIZE: return infer_size(c);
	case OP_SOFTMAXCE: case OP_NLLLOSS: return infer_loss(c);
	case OP_DEPTHTOSPACE: case OP_SPACETODEPTH: case OP_CONVTRANSPOSE: case OP_SCATTERELEMENTS: case OP_SCATTERND:
	case OP_GATHERND: case OP_INSTANCENORM: case OP_REVERSESEQ: case OP_TFIDF:
		return infer_layout(c);
	case OP_NONZERO: case OP_UNIQUE: case OP_COMPRESS: case OP_NMS:
		return infer_datadep(c);
	case OP_SLICESCATTER: case OP_SOFTMAXCEGRAD:
	case OP_MSELOSS: case OP_MSELOSSGRAD: case OP_GRADIENT: case OP_MATEXP: case OP_CONVGRAD: case OP_PADGRAD:
	case OP_CLASSLOSSGRAD:
		return train_op_infer(g, n, D);
	case OP_RECURRENCE: case OP_COUNT: break;
	default:
		if (oi->kind == OPK_ELEM)
			return infer_elem(c);
		break;
	}
	return fail(c, "internal error: no shape rule for %s", oi->name);
}

/* ---- constants and monomials (shared) ------------------------------------------ */

int infer_is_const(const ir_value *v)
{
	if (!v)
		return 0;
	if (v->kind == VAL_CONST)
		return v->data || (v->sym && v->dtype == DT_I64);
	return v->kind == VAL_WEIGHT && v->data;
}

int64_t infer_elem_int(const ir_value *v, int64_t i)
{
	const void *p = v->data;
	switch (v->dtype) {
	case DT_I64: return ((const int64_t *)p)[i];
	case DT_I32: return ((const int32_t *)p)[i];
	case DT_I16: return ((const int16_t *)p)[i];
	case DT_I8: return ((const int8_t *)p)[i];
	case DT_U64: return (int64_t)((const uint64_t *)p)[i];
	case DT_U32: return ((const uint32_t *)p)[i];
	case DT_U16: return ((const uint16_t *)p)[i];
	case DT_U8: case DT_BOOL: return ((const uint8_t *)p)[i];
	default: UNREACHABLE();
	}
}

ir_dim infer_elem_dim(const ir_value *v, int64_t i)
{
	return v->sym ? v->sym[i] : ir_dim_const(infer_elem_int(v, i));
}

int infer_mono_is_const(ir_dim a)
{
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (a.pow[i])
			return 0;
	return 1;
}

/* Same symbol powers (ignoring k). */
static int same_pows(ir_dim a, ir_dim b) { return memcmp(a.pow, b.pow, sizeof a.pow) == 0; }

int infer_mono_mul(ir_dim a, ir_dim b, ir_dim *r)
{
	ir_dim o = ir_dim_const(0);
	if (__builtin_mul_overflow(a.k, b.k, &o.k))
		return 0;
	if (o.k != 0)
		for (int i = 0; i < IR_MAX_SYMS; i++) {
			int p = a.pow[i] + b.pow[i];
			if (p > 255)
				return 0;
			o.pow[i] = (uint8_t)p;
		}
	*r = o;
	return 1;
}

/* The symbol of d = +-S (k = 1 or -1, one power 1), its sign in *sign; -1 otherwise. */
static int signed_sym(ir_dim d, int *sign)
{
	*sign = d.k < 0 ? -1 : 1;
	if (d.k == -1)
		d.k = 1;
	return ir_dim_one_sym(d);
}

/* Sums that leave the monomials: a constant and +-S (S + c is the derived
 * symbol base + off + c, ir_sym_offset), or +S and -S' of one base (a
 * constant). */
static int mono_add_derived(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r)
{
	if (!g)
		return 0;
	g = ir_root(g);
	int sa, sb;
	int ia = signed_sym(a, &sa), ib = signed_sym(b, &sb);
	if (infer_mono_is_const(b) && ia >= 0) {
		ir_dim t = a;
		a = b;
		b = t;
		ia = ib;
		ib = signed_sym(b, &sb);
	}
	if (infer_mono_is_const(a) && ib >= 0) {
		/* c + sb*S = sb*(S + sb*c) */
		if (a.k == INT64_MIN)
			return 0;
		ir_dim s = ir_dim_sym(ib), o;
		if (!ir_sym_offset(g, s, sb * a.k, &o))
			return 0;
		if (sb < 0 && infer_mono_is_const(o)) {
			if (o.k == INT64_MIN)
				return 0;
			o.k = -o.k;
		} else if (sb < 0) {
			o.k = -1;
		}
		*r = o;
		return 1;
	}
	if (ia >= 0 && ib >= 0 && sa == -sb && ia < g->nsyms && ib < g->nsyms) {
		int ba = g->sym_base[ia] ? g->sym_base[ia] - 1 : ia, bb = g->sym_base[ib] ? g->sym_base[ib] - 1 : ib;
		if (ba != bb)
			return 0;
		int64_t oa = g->sym_base[ia] ? g->sym_off[ia] : 0, ob = g->sym_base[ib] ? g->sym_off[ib] : 0;
		*r = ir_dim_const(sa * (oa - ob));      /* |off| <= INT32_MAX: no overflow */
		return 1;
	}
	return 0;
}

int infer_mono_add(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r)
{
	if (a.k == 0) {
		*r = b;
		return 1;
	}
	if (b.k == 0) {
		*r = a;
		return 1;
	}
	if (!same_pows(a, b))
		return mono_add_derived(g, a, b, r);
	ir_dim o = a;
	if (__builtin_add_overflow(a.k, b.k, &o.k))
		return 0;
	if (o.k == 0)
		o = ir_dim_const(0);
	*r = o;
	return 1;
}

int infer_mono_sub(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r)
{
	if (b.k == INT64_MIN)
		return 0;
	b.k = -b.k;
	return infer_mono_add(g, a, b, r);
}

int infer_mono_div(ir_dim a, ir_dim b, ir_dim *r)
{
	if (b.k == 0 || (a.k == INT64_MIN && b.k == -1))
		return 0;
	if (infer_mono_is_const(a) && infer_mono_is_const(b)) {
		*r = ir_dim_const(a.k / b.k);
		return 1;
	}
	if (a.k == 0) {
		*r = ir_dim_const(0);
		return 1;
	}
	if (a.k % b.k != 0)
		return 0;
	ir_dim o = ir_dim_const(a.k / b.k);
	for (int i = 0; i < IR_MAX_SYMS; i++) {
		if (a.pow[i] < b.pow[i])
			return 0;
		o.pow[i] = (uint8_t)(a.pow[i] - b.pow[i]);
	}
	*r = o;
	return 1;
}

const char *infer_mono_str(arena *A, const ir_graph *g, ir_dim a)
{
	const ir_graph *root = g;
	while (root->parent)
		root = root->parent;
	char buf[256];
	int len = 0, first = 1;
	if (infer_mono_is_const(a) || a.k != 1) {
		len += snprintf(buf + len, sizeof buf - (size_t)len, "%lld", (long long)a.k);
		first = 0;
	}
	for (int i = 0; i < IR_MAX_SYMS && a.k != 0; i++) {
		if (!a.pow[i] || len >= (int)sizeof buf - 40)
			continue;
		const char *name = i < root->nsyms ? root->syms[i] : "?";
		len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%.30s", first ? "" : "*", name);
		if (a.pow[i] > 1)
			len += snprintf(buf + len, sizeof buf - (size_t)len, "^%d", a.pow[i]);
		first = 0;
	}
	return arena_strdup(A, buf);
}

int infer_numel(const ir_shape *s, ir_dim *r)
{
	ir_dim o = ir_dim_const(1);
	if (s->rank < 0)
		return 0;
	for (int i = 0; i < s->rank; i++) {
		if (s->d[i].k < 0 || !infer_mono_mul(o, s->d[i], &o) || o.k > INFER_NUMEL_MAX)
			return 0;
	}
	*r = o;
	return 1;
}

/* ---- pointer set ---------------------------------------------------------------- */

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

void infer_set_init(infer_set *s)
{
	s->cap = 64;
	s->n = 0;
	s->slot = calloc(s->cap, sizeof *s->slot);
	ASSERT(s->slot);
}

void infer_set_free(infer_set *s)
{
	free(s->slot);
	s->slot = NULL;
}

int infer_set_has(const infer_set *s, const void *p)
{
	for (size_t i = ptr_hash(p, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (s->slot[i] == p)
			return 1;
		if (!s->slot[i])
			return 0;
	}
}

int infer_set_add(infer_set *s, const void *p)
{
	if (infer_set_has(s, p))
		return 0;
	if (2 * (s->n + 1) > s->cap) {
		infer_set t = {calloc(2 * s->cap, sizeof *s->slot), 2 * s->cap, 0};
		ASSERT(t.slot);
		for (size_t i = 0; i < s->cap; i++)
			if (s->slot[i])
				infer_set_add(&t, s->slot[i]);
		free(s->slot);
		*s = t;
	}
	size_t i = ptr_hash(p, s->cap);
	while (s->slot[i])
		i = (i + 1) & (s->cap - 1);
	s->slot[i] = p;
	s->n++;
	return 1;
}
