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
 * This file has the dispatch (infer_node), the element-wise and shape
 * operators; infer_shape_nn.c and infer_shape_misc.c the other families
 * (infer_shape.h: what the three share).  Monomial helpers and the small
 * pointer set shared with infer_fold.c, pass_infer.c and ir_verify.c live
 * at the end of this file.
 */
#include "cells.h"
#include "infer_shape.h"
#include "ode.h"
#include "train.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes (the classes and checks: infer_shape.h) ----------------------- */

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

int infer_not_const(ictx *c, int k)
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
int infer_const_ints(ictx *c, int k, ir_dim *v, int max)
{
	ir_value *x = in(c, k);
	const char *what = infer_shape_input(c->n->op, k);
	if (!x)
		return fail(c, "input %d ('%s') is missing; it determines the output shape", k,
			    what ? what : "?"), -1;
	if (!infer_is_const(x))
		return infer_not_const(c, k), -1;
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
int infer_const_plain(ictx *c, int k, int64_t *v, int max)
{
	ir_dim d[64];
	int m = infer_const_ints(c, k, d, max < 64 ? max : 64);
	for (int i = 0; i < m; i++) {
		if (!infer_mono_is_const(d[i]))
			return fail(c, "input '%s' element %d is the run-time size %s; it must be a "
				    "constant", infer_shape_input(c->n->op, k), i, mono(c, d[i])), -1;
		v[i] = d[i].k;
	}
	return m;
}

/* Axes list (Squeeze/Unsqueeze): normalised against rank r, distinct. */
int infer_axes_list(ictx *c, int k, int r, int *ax, int max)
{
	int64_t a[IR_MAX_RANK];
	int m = infer_const_plain(c, k, a, max);
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

int infer_unify(ictx *c, ir_dim x, ir_dim y, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (!ir_sym_unify(c->g, x, y, c->n->name, arena_strdup(c->A, why)))
		return 0;
	c->again = 1;
	return 1;
}

/* Multidirectional (numpy) broadcasting of a and b into r (two sizes that
 * must be one are made one: infer_unify). */
int infer_broadcast2(ictx *c, const ir_shape *a, const ir_shape *b, ir_shape *r)
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
		else if (infer_unify(c, da, db, "broadcasting %s against %s", dimstr(c, da), dimstr(c, db)))
			return 1;
		else
			return fail(c, "shapes %s and %s cannot be broadcast together (dimension %s "
				    "against %s)%s", shp(c, a), shp(c, b), dimstr(c, da), dimstr(c, db),
				    fixed_size_hint(c, da, db));
	}
	*r = o;
	return 0;
}

/* Whether b broadcasts to a without changing a (unidirectional). */
int infer_broadcasts_to(const ir_shape *b, const ir_shape *a)
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
		if (infer_broadcast2(c, &x->shape, &in(c, 1)->shape, &s))
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
			else if (same_ty(c, k) || infer_broadcast2(c, &s, &in(c, k)->shape, &s))
				return 1;
		break;
	case OP_EQUAL: case OP_LESS: case OP_LESSEQ: case OP_GREATER: case OP_GREATEREQ:
	case OP_AND: case OP_OR: case OP_XOR: {
		int logic = n->op == OP_AND || n->op == OP_OR || n->op == OP_XOR;
		if (need_ty(c, 0, logic ? TY_BOOL : n->op == OP_EQUAL ? TY_ANY : TY_NUM, op) || same_ty(c, 1) ||
		    infer_broadcast2(c, &x->shape, &in(c, 1)->shape, &s))
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
		if (ir_attr_int(n, "if_select", 0) && !ir_shape_eq(&a->shape, &b->shape)) {
			const char *src = n->graph->parent ? "" : ir_source_inputs(n->graph->A, in(c, 0), 64);
			return fail(c, "the branches of an If with a data-dependent condition give '%s' %s and '%s' "
				    "%s; cellc computes such an If as a select of both branches, which needs one "
				    "shape%s%s%s", a->name, shp(c, &a->shape), b->name, shp(c, &b->shape),
				    *src ? "; the condition is computed from graph input(s) " : "", src,
				    *src ? ", which --bind can fix (--bind NAME=NUMBER for a scalar, --bind NAME=FILE.pb)"
					 : "");
		}
		if (infer_broadcast2(c, &s, &a->shape, &s) || infer_broadcast2(c, &s, &b->shape, &s))
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
		if (need_ty(c, 0, TY_UINT, op) || same_ty(c, 1) || infer_broadcast2(c, &x->shape, &in(c, 1)->shape, &s))
			return 1;
		break;
	case OP_PRELU:
		if (need_ty(c, 0, TY_FLOAT, op) || same_ty(c, 1))
			return 1;
		if (!infer_broadcasts_to(&in(c, 1)->shape, &x->shape))
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

/* a / b where b divides a's symbols but not its constant, and the quotient
 * is one symbol S times a fraction: (p / q) S with q the part of b's
 * constant that a's lacks.  The model then needs q to divide S: an exact
 * symbol S / q (ir_sym_exact), which the generated code checks; 1 and *r,
 * or 0 (another quotient: several symbols, a symbol squared, or S itself
 * derived). */
static int exact_quotient(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r)
{
	if (!ir_dim_known(a) || !ir_dim_known(b) || b.k <= 0 || a.k <= 0)
		return 0;
	ir_dim s = ir_dim_const(1);
	for (int i = 0; i < IR_MAX_SYMS; i++) {
		if (a.pow[i] < b.pow[i])
			return 0;
		s.pow[i] = (uint8_t)(a.pow[i] - b.pow[i]);
	}
	if (ir_dim_one_sym(s) < 0)
		return 0;
	int64_t p = a.k, q = b.k;
	for (int64_t x = p, y = q; y;) {        /* their common factor */
		int64_t t = x % y;
		x = y;
		y = t;
		if (!y)
			p /= x, q /= x;
	}
	ir_dim h;
	if (!ir_sym_exact(g, s, 1, 0, q, &h))
		return 0;
	*r = ir_dim_mul(ir_dim_const(p), h);
	return 1;
}

/* Whether a and b are the same size once a floor or exact symbol F =
 * floor(m S / d) in b (power 1) is an exact division: a d = (b / F) m S.
 * Then the model needs d to divide m S (a Reshape of [B, T, 10] into [B,
 * T // 2, 20], the frame stacking of a pyramidal encoder, needs T even): a
 * floor F becomes exact (sym_exact, the same value), which the generated
 * code checks; an exact one already is (the Reshape back, in a gradient).
 * 1 when so, else 0 with nothing changed. */
static int floor_made_exact(ir_graph *g, ir_dim a, ir_dim b)
{
	g = ir_root(g);
	if (!ir_dim_known(a) || !ir_dim_known(b))
		return 0;
	for (int f = 0; f < g->nsyms; f++) {
		ir_symdef *fd = &g->symdef[f];
		int64_t m = 0, d = fd->div, ad, bm;
		int s = ir_sym_base(g, f, &m);
		if (b.pow[f] != 1 || s < 0 || m < 1 || g->sym_pin[f] || fd->off || d < 2 ||
		    __builtin_mul_overflow(a.k, d, &ad) || __builtin_mul_overflow(b.k, m, &bm))
			continue;
		ir_dim lhs = a, rhs = b;
		lhs.k = ad;
		rhs.k = bm;
		rhs.pow[f] = 0;
		if (rhs.pow[s] == UINT8_MAX)
			continue;
		rhs.pow[s]++;
		if (!ir_dim_eq(lhs, rhs))
			continue;
		/* exact, if an exact division of its term can be canonical */
		uint8_t was = fd->exact;
		fd->exact = 1;
		if (!ir_sym_noncanonical(g, f))
			return 1;
		fd->exact = was;
	}
	return 0;
}

static int infer_reshape(ictx *c)
{
	ir_value *x = in(c, 0);
	ir_dim v[IR_MAX_RANK];
	int m = infer_const_ints(c, 1, v, IR_MAX_RANK);
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
		/* a quotient that is a symbol divided by a constant: one whose
		 * division the generated code checks (B / 2 of [6 * B] into [12, -1]) */
		if (!ir_dim_div(nin, nout, &q) && !exact_quotient(c->g, nin, nout, &q))
			return fail(c, "cannot reshape %s (%s elements) into %s: %s is not divisible by %s",
				    shp(c, &x->shape), dimstr(c, nin), shp(c, &s), dimstr(c, nin),
				    dimstr(c, nout));
		s.d[infer_at] = q;
		nout = nin;
	}
	if (!ir_dim_eq(nin, nout) && !floor_made_exact(c->g, nin, nout) && !floor_made_exact(c->g, nout, nin))
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
		int m = infer_axes_list(c, 1, r, ax, IR_MAX_RANK);
		if (m < 0)
			return 1;
		for (int i = 0; i < m; i++) {
			/* a symbolic axis Squeeze names must be 1: a recorded constraint */
			if (!is_one(x->shape.d[ax[i]]) &&
			    infer_unify(c, x->shape.d[ax[i]], ir_dim_const(1), "Squeeze: axis %d is 1", ax[i]))
				return 1;
			if (!is_one(x->shape.d[ax[i]]))
				return fail(c, "cannot squeeze axis %d of %s: its size is %s, not 1%s", ax[i],
					    shp(c, &x->shape), dimstr(c, x->shape.d[ax[i]]),
					    ir_dim_is_const(x->shape.d[ax[i]]) ? "" :
					    " (a symbolic dimension that is no symbol of its own is not assumed to be 1)");
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
		return infer_not_const(c, 1);
	int64_t m = a->shape.rank >= 0 ? ir_shape_const_numel(&a->shape) : -1;
	if (m < 0 || r + m > IR_MAX_RANK)
		return fail(c, "the result would have rank %lld; at most %d is supported",
			    (long long)(r + (m < 0 ? 0 : m)), IR_MAX_RANK);
	int R = r + (int)m, ax[IR_MAX_RANK], ins[IR_MAX_RANK] = {0};
	if (infer_axes_list(c, 1, R, ax, IR_MAX_RANK) < 0)
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

int infer_slice_sym_bound(ir_graph *g, ir_dim D, ir_dim v, int64_t *x)
{
	/* a size that differs from the axis' by a constant c: D + c, which
	 * clamps like "to the end" when c >= 0 */
	int64_t rel;
	if (!ir_sym_diff(g, v, D, &rel))
		return 0;
	*x = rel < 0 ? rel : INT64_MAX;
	return 1;
}

/* The clamped position of slice bound v on an axis of size D, a size
 * expression: ONNX counts a negative bound from the end and then clamps a
 * start or an end to [0, D] (for a negative step a start to [0, D - 1],
 * an end to [-1, D - 1]), so x[-4:] of a run-time length T starts at
 * max(T - 4, 0) and x[:10] ends at min(T, 10), which is what PyTorch
 * computes at every T (where T's least value decides the clamp, the
 * position is T - 4 or 10).  A bound that is a run-time size must differ
 * from D by a constant (x[:x.size(0) - 1]). */
static int slice_pos(ictx *c, ir_dim D, ir_dim v, int is_end, int64_t step, ir_dim *p)
{
	ir_graph *g = ir_root(c->g);
	int64_t x = v.k, lo = step < 0 && is_end ? -1 : 0;
	ir_dim top, q;
	int ok = ir_sym_offset(g, D, step < 0 ? -1 : 0, &top);
	if (ok && x >= INFER_SLICE_BIG)
		*p = top;
	else if (ok && x <= -INFER_SLICE_BIG)
		*p = ir_dim_const(lo);
	else if (ok && x >= 0)
		ok = ir_sym_minmax(g, IR_SYM_MIN, ir_dim_const(x), top, p);
	else if (ok)
		ok = ir_sym_offset(g, D, x, &q) && ir_sym_minmax(g, IR_SYM_MAX, q, ir_dim_const(lo), p);
	if (!ok)
		return fail(c, "slice bound %lld on a dimension of size %s: its clamped position is no size "
			    "expression cellc keeps (a symbol left, or a number out of range)", (long long)x,
			    dimstr(c, D));
	return 0;
}

/* ceil((a - b) / step), step >= 1: the length between two clamped slice
 * positions.  a - max(q, c) where a - q is a constant d is min(d, a - c)
 * (x[-4:] of T has T - max(T - 4, 0) = min(T, 4) rows), a - min(q, c)
 * likewise max(d, a - c); any other difference a sum of size expressions. */
static int slice_span(ir_graph *g, ir_dim a, ir_dim b, int64_t step, ir_dim *len)
{
	int s = ir_dim_one_sym(b);
	const ir_symdef *bd = s >= 0 && s < g->nsyms ? &g->symdef[s] : NULL;
	int64_t d;
	ir_dim ac;
	if (step == 1 && bd && (bd->op == IR_SYM_MIN || bd->op == IR_SYM_MAX) && bd->b < 0 &&
	    ir_sym_diff(g, a, ir_dim_sym(bd->a), &d) && ir_sym_offset(g, a, -bd->off, &ac))
		return ir_sym_minmax(g, bd->op == IR_SYM_MAX ? IR_SYM_MIN : IR_SYM_MAX, ir_dim_const(d), ac, len);
	ir_dim t[2] = {a, b};
	int64_t k[2] = {1, -1};
	return ir_sym_lin(g, 2, t, k, step - 1, step, 0, len);
}

/* A slice bound on a symbolic dim D, as a*D + c (a in {0, 1}). */
typedef struct spos {
	int a;
	int64_t c;
} spos;

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
	if (step < -(int64_t)INT32_MAX || step > INT32_MAX)
		return fail(c, "slice of symbolic dimension %s (axis %d) with step %lld: a step beyond 2^31 - 1 "
			    "in magnitude is not supported there", dimstr(c, D), axis, (long long)step);
	/* a bound that is a run-time size differing from D by a constant is
	 * that constant (x[:x.size(0) - 1]: -1) */
	ir_dim b[2] = {st, en};
	for (int i = 0; i < 2; i++) {
		int64_t k;
		if (infer_mono_is_const(b[i]))
			continue;
		if (!infer_slice_sym_bound(c->g, D, b[i], &k))
			return fail(c, "slice bound %s on a dimension of size %s is not decidable at compile time "
				    "(a bound that is a run-time size must differ from its axis' size by a constant)",
				    mono(c, b[i]), dimstr(c, D));
		b[i] = ir_dim_const(k);
	}
	int64_t sv = b[0].k, ev = b[1].k;
	ir_graph *g = ir_root(c->g);
	if (step > 0 && (sv == 0 || sv <= -INFER_SLICE_BIG || (sv < 0 && ev >= INFER_SLICE_BIG))) {
		/* a window from the start (x[:10]) or to the end (x[-4:]): its
		 * clamped positions and their difference at every length, min(T,
		 * 10) and min(T, 4) rows, as PyTorch and ONNX Runtime have it */
		ir_dim s, e;
		if (slice_pos(c, D, b[0], 0, step, &s) || slice_pos(c, D, b[1], 1, step, &e))
			return 1;
		if (!slice_span(g, e, s, step, len))
			return fail(c, "cannot slice symbolic dimension %s (axis %d) with start %s, end %s, step %lld: "
				    "the length of the result, (%s - %s) / %lld rounded up, is no size expression cellc "
				    "keeps", dimstr(c, D), axis, mono(c, st), mono(c, en), (long long)step, dimstr(c, e),
				    dimstr(c, s), (long long)step);
		if (ir_dim_is_const(*len) && len->k < 0)
			*len = ir_dim_const(0);
		return 0;
	}
	/* any other window of constant bounds needs the axis to hold it (a
	 * least value: x[:, t:t + 1] of a traced loop's step t needs T > t) */
	spos s, e;
	if (sym_bound(c, D, b[0], 0, step, &s) || sym_bound(c, D, b[1], 1, step, &e))
		return 1;
	int da = step > 0 ? e.a - s.a : s.a - e.a;
	int64_t dc = step > 0 ? e.c - s.c : s.c - e.c;     /* |c| < 2^31: no overflow */
	if (da == 0) {
		*len = ir_dim_const(dc > 0 ? div_steps(dc, step) : 0);
		return 0;
	}
	/* x[1:], x[:-1] of a time axis T: T - 1; x[::2]: floor((T + 1) / 2)
	 * (checked to be at least 1 at run time, like every symbol) */
	int64_t as = step < 0 ? -step : step;
	if (da == 1 && ir_sym_floor(c->g, D, 1, dc + as - 1, as, len))
		return 0;
	return fail(c, "cannot slice symbolic dimension %s (axis %d) with start %s, end %s, step %lld: the length "
		    "of the result, %s%s %c %lld divided by %lld rounding up, is no size expression cellc keeps",
		    dimstr(c, D), axis, mono(c, st), mono(c, en), (long long)step, da < 0 ? "-" : "", dimstr(c, D),
		    dc < 0 ? '-' : '+', (long long)(dc < 0 ? -dc : dc), (long long)as);
}

static int infer_slice(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_dim st[IR_MAX_RANK], en[IR_MAX_RANK];
	int64_t ax[IR_MAX_RANK], sp[IR_MAX_RANK];
	int m = infer_const_ints(c, 1, st, IR_MAX_RANK);
	if (m < 0)
		return 1;
	int me = infer_const_ints(c, 2, en, IR_MAX_RANK);
	if (me < 0)
		return 1;
	if (me != m)
		return fail(c, "'starts' has %d elements but 'ends' has %d", m, me);
	if (in(c, 3)) {
		int ma = infer_const_plain(c, 3, ax, IR_MAX_RANK);
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
		int ms = infer_const_plain(c, 4, sp, IR_MAX_RANK);
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
	int k = n->nout;
	ir_dim D = x->shape.d[axis], *part = arena_array(c->A, (size_t)k + 1, sizeof *part);
	if (in(c, 1)) {
		int m = infer_const_ints(c, 1, part, k);
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
		if (!ir_dim_eq(sum, D) && floor_made_exact(c->g, D, sum))
			sum = D;        /* [T // 2, T // 2] of T: T even */
		/* fixed sizes along a dynamic axis (a traced x.unbind() or
		 * torch.split(x, 1)): the file runs the length it was traced with,
		 * which its axis is made (a recorded link; pass_reroll frees the
		 * axis again when it rolls the loop over these parts) */
		if (!ir_dim_eq(sum, D) && ir_dim_is_const(sum) && !ir_dim_is_const(D) &&
		    infer_unify(c, D, sum, "Split of fixed sizes along axis %d: a traced x.unbind() holds "
				"the length it was traced with", axis))
			return 1;
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
		/* equal parts of a run-time size: its exact quotient (T / 2) */
		if (k < 1 || (!ir_dim_div(D, ir_dim_const(k), &q) && !exact_quotient(c->g, D, ir_dim_const(k), &q)))
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
				if (infer_unify(c, s.d[i], y->shape.d[i], "Concat along axis %d: axis %d of input %d is "
						"axis %d of input 0", axis, i, k, i))
					return 1;
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
	int m = infer_const_ints(c, 0, v, IR_MAX_RANK);
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
	int m = infer_const_ints(c, 1, v, IR_MAX_RANK);
	if (m < 0)
		return 1;
	ir_shape t = {.rank = m}, s;
	for (int i = 0; i < m; i++)
		if (dim_elem(c, v[i], i, &t.d[i]))
			return 1;
	if (infer_broadcast2(c, &x->shape, &t, &s))
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

/* ---- entry --------------------------------------------------------------------- */

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

/* After the rule: a node that reads a value of data-dependent length keeps
 * it row by row (ir_dd_passes), its output then has the length on axis 0
 * (a Transpose: where it moves the axis, ir_dd_out_axis);
 * a recurrence that stops on its condition gives its stacked outputs one. */
static int dd_outputs(ictx *c)
{
	ir_node *n = c->n;
	for (int k = 0; k < n->nout; k++)     /* (a node being built: ir_dd_source follows producers) */
		if (n->out[k] && !n->out[k]->producer)
			n->out[k]->producer = n;
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		const ir_node *p = v && v->data_dep ? ir_dd_source(v) : NULL;
		if (p && (n->op == OP_RECURRENCE || !(ir_dd_passes(n) || (ir_dd_reads(n) && k == 0))))
			return fail(c, "input %d ('%s') has a data-dependent length: its axis %d (at most %s) is "
				    "computed at run time by %s '%s', and cellc supports such a value only as an "
				    "output of the model, the input of a Transpose, of a view or element-wise operator "
				    "that keeps that axis (axis 0 of a recurrence's) or of a Gather on it by constant "
				    "indices, not as the input of %s", k, v->name, v->dd_axis,
				    dimstr(c, v->shape.d[v->dd_axis]), p ? ir_op_name(p->op) : "?", p ? p->name : "?",
				    ir_op_name(n->op));
	}
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && !ir_op_dd_output(n->op, k) && ir_node_dd_output(n, k)) {
			n->out[k]->data_dep = 1;
			n->out[k]->dd_axis = n->op == OP_RECURRENCE ? 0 : ir_dd_out_axis(n);
		}
	return 0;
}

/* The inputs as every rule needs them: the operator's arity, the required ones present, each of a supported dtype
 * and a known shape.  0, or non-zero after reporting; a recurrence's
 * inputs are infer_recurrence's (pass_infer.c) past the first check. */
static int check_inputs(ictx *c)
{
	const ir_node *n = c->n;
	const ir_opinfo *oi = &ir_ops[n->op];
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
	return 0;
}

/* The inputs checked, then one case per operator: a table. */
static int rule_of(ictx *c);

/* The rule of n's operator; INFER_AGAIN when it made sizes one instead
 * (infer_unify). */
static int infer_rule(ir_graph *g, ir_node *n, diag *D)
{
	ictx cx = {g, n, D, g->A, 0};
	int r = rule_of(&cx);
	if (!r && !cx.again)
		r = dd_outputs(&cx);
	return cx.again ? INFER_AGAIN : r;
}

static int rule_of(ictx *c)
{
	ir_graph *g = c->g;
	ir_node *n = c->n;
	diag *D = c->D;
	const ir_opinfo *oi = &ir_ops[n->op];
	int err = check_inputs(c);
	if (err || n->op == OP_RECURRENCE)
		return err;
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
	case OP_ODEBLOCK: case OP_ODERNN: return ode_infer(g, n, D);    /* ode.c */
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
		return v->data || (v->sym && (v->dtype == DT_I64 || v->dtype == DT_I32));
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

/* Sums that leave the monomials: of a constant and k S, or of k S and k'
 * S' (two symbols, or derived symbols that are sums of the same symbols:
 * (T + 1) - T is 1), a size expression (ir_sym_sum: T - 1, T1 + T2, the
 * constant or the symbol it comes to). */
static int mono_add_derived(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r)
{
	return g && ir_sym_sum(ir_root(g), a, b, 1, r);
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

int infer_mono_div(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r)
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
	if (a.k % b.k != 0) {
		/* a size k S (positive: truncation is a floor) by a constant */
		ir_dim s = a;
		s.k = 1;
		return a.k > 0 && b.k > 0 && infer_mono_is_const(b) && ir_dim_one_sym(s) >= 0 &&
		       ir_sym_floor(g, s, a.k, 0, b.k, r);
	}
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
