/* infer_fold.c: constant folding of one node (infer_fold, used by pass_infer).
 *
 * A node whose inputs are all compile-time constants (data, or symbolic
 * elements from Shape of a symbolic input) and whose outputs have constant
 * shapes is evaluated here and its outputs become constants.  That is what
 * turns an exporter's Shape -> Gather -> Unsqueeze -> Concat -> Reshape
 * chains into plain shapes, and weight reorderings (Slice/Concat/Transpose of
 * initializers) into ready weights.  Data movement (Reshape, Transpose, Slice,
 * Gather, Concat, Split, Expand, ...) works on any dtype and on symbolic
 * elements; arithmetic works on every numeric dtype (integers wrap, integer
 * division truncates, division by zero is an error) and on symbolic elements
 * while the result stays a monomial; activations only on floating point.
 * Results derived from weights stay weights (they go to the weights file),
 * except those with symbolic elements; others become VAL_CONST.
 *
 * Floating-point folding computes in double and rounds once, which for + - *
 * / is the correctly rounded float result; conversions that C leaves
 * undefined (out-of-range float to int or to float) saturate instead.
 */
#include "elem.h"
#include "infer.h"
#include "cellrt.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

typedef struct fctx {
	ir_graph *g;
	ir_node *n;
	diag *D;
	int weight;             /* some input is a VAL_WEIGHT */
} fctx;

static int ferr(fctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ferr(fctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_nodev(c->D, c->n, fmt, ap);
	va_end(ap);
	return -1;
}

static ir_value *fin(fctx *c, int k) { return k < c->n->nin ? c->n->in[k] : NULL; }
static int64_t numel(const ir_value *v) { return ir_shape_const_numel(&v->shape); }

/* Row-major strides of a constant shape. */
static void strides(const ir_shape *s, int64_t *st)
{
	int64_t m = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		st[i] = m;
		m *= s->d[i].k;
	}
}

/* Strides of x read as broadcast to rank R (0 on broadcast axes). */
static void bstrides(const ir_shape *x, int R, int64_t *st)
{
	int64_t xs[IR_MAX_RANK];
	strides(x, xs);
	for (int i = 0; i < R; i++) {
		int j = i - (R - x->rank);
		st[i] = j >= 0 && x->d[j].k != 1 ? xs[j] : 0;
	}
}

/* An odometer over a constant index space with up to three operand offsets. */
typedef struct odo {
	int rank, k;
	int64_t dim[IR_MAX_RANK], c[IR_MAX_RANK];
	int64_t off[3], st[3][IR_MAX_RANK];
} odo;

static void odo_init(odo *o, const ir_shape *s, int k)
{
	memset(o, 0, sizeof *o);
	o->rank = s->rank;
	o->k = k;
	for (int i = 0; i < s->rank; i++)
		o->dim[i] = s->d[i].k;
}

static void odo_next(odo *o)
{
	for (int d = o->rank - 1; d >= 0; d--) {
		o->c[d]++;
		for (int j = 0; j < o->k; j++)
			o->off[j] += o->st[j][d];
		if (o->c[d] < o->dim[d])
			return;
		for (int j = 0; j < o->k; j++)
			o->off[j] -= o->st[j][d] * o->dim[d];
		o->c[d] = 0;
	}
}

/* ---- element access --------------------------------------------------------- */

static int is_float(ir_dtype t) { return t == DT_F32 || t == DT_F64; }
static int is_unsigned(ir_dtype t)
{
	return t == DT_U8 || t == DT_U16 || t == DT_U32 || t == DT_U64 || t == DT_BOOL;
}

static double ldf(const ir_value *v, int64_t i)
{
	switch (v->dtype) {
	case DT_F32: return ((const float *)v->data)[i];
	case DT_F64: return ((const double *)v->data)[i];
	case DT_U64: return (double)((const uint64_t *)v->data)[i];
	default: return (double)infer_elem_int(v, i);
	}
}

/* Integers as 64-bit patterns: signed types sign-extended, unsigned zero-extended. */
static uint64_t ldu(const ir_value *v, int64_t i) { return (uint64_t)infer_elem_int(v, i); }

static float to_f32(double x)
{
	if (x > FLT_MAX)
		return INFINITY;
	if (x < -FLT_MAX)
		return -INFINITY;
	return (float)x;
}

static void stf(ir_value *o, int64_t i, double x)
{
	if (o->dtype == DT_F32)
		((float *)o->data)[i] = to_f32(x);
	else
		((double *)o->data)[i] = x;
}

static void stu(ir_value *o, int64_t i, uint64_t x)
{
	void *p = o->data;
	switch (o->dtype) {
	case DT_I64: ((int64_t *)p)[i] = (int64_t)x; break;
	case DT_I32: ((int32_t *)p)[i] = (int32_t)x; break;
	case DT_I16: ((int16_t *)p)[i] = (int16_t)x; break;
	case DT_I8: ((int8_t *)p)[i] = (int8_t)x; break;
	case DT_U64: ((uint64_t *)p)[i] = x; break;
	case DT_U32: ((uint32_t *)p)[i] = (uint32_t)x; break;
	case DT_U16: ((uint16_t *)p)[i] = (uint16_t)x; break;
	case DT_U8: ((uint8_t *)p)[i] = (uint8_t)x; break;
	case DT_BOOL: ((uint8_t *)p)[i] = x != 0; break;
	default: UNREACHABLE();
	}
}

/* Float to an integer dtype: truncation, saturating at the type's range
 * (C leaves out-of-range conversions undefined), NaN -> 0. */
static uint64_t f2u(double x, ir_dtype to)
{
	if (to == DT_BOOL)
		return x != 0;
	if (isnan(x))
		return 0;
	x = trunc(x);
	int bits = (int)ir_dtype_size(to) * 8;
	double top = ldexp(1.0, is_unsigned(to) ? bits : bits - 1);     /* first value out of range */
	if (is_unsigned(to)) {
		if (x <= 0)
			return 0;
		if (x >= top)
			return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
		return (uint64_t)x;
	}
	if (x >= top)
		return (uint64_t)(((uint64_t)1 << (bits - 1)) - 1);
	if (x < -top)
		return (uint64_t)0 - ((uint64_t)1 << (bits - 1));
	return (uint64_t)(int64_t)x;
}

/* Element i of x into element oi of o (same dtype; o symbolic if x may be). */
static void cp(ir_value *o, int64_t oi, const ir_value *x, int64_t xi)
{
	if (o->sym) {
		o->sym[oi] = infer_elem_dim(x, xi);
	} else {
		size_t es = ir_dtype_size(o->dtype);
		memcpy((char *)o->data + (size_t)oi * es, (const char *)x->data + (size_t)xi * es, es);
	}
}

/* ---- outputs ---------------------------------------------------------------------- */

/* Storage for output o: symbolic elements when sym, else data. */
static void out_alloc(fctx *c, ir_value *o, int sym)
{
	int64_t n = numel(o);
	ASSERT(n >= 0);
	if (sym) {
		o->sym = arena_array(c->g->A, (size_t)(n ? n : 1), sizeof *o->sym);
		o->data = NULL;
	} else {
		o->data = arena_array(c->g->A, (size_t)(n ? n : 1), ir_dtype_size(o->dtype));
		o->sym = NULL;
	}
}

/* Makes o a constant: symbolic elements that turned out all constant become data. */
static void out_finish(fctx *c, ir_value *o)
{
	if (o->sym) {
		int64_t n = numel(o);
		int all = 1;
		for (int64_t i = 0; i < n && all; i++)
			all = infer_mono_is_const(o->sym[i]);
		if (all) {
			int64_t *d = arena_array(c->g->A, (size_t)(n ? n : 1), sizeof *d);
			for (int64_t i = 0; i < n; i++)
				d[i] = o->sym[i].k;
			o->data = d;
			o->sym = NULL;
		}
	}
	/* a value that still has symbolic elements comes from shapes, never
	 * from a weight's data: a constant (Gather(Shape(x), w) with an
	 * initializer w as the index is T, not a weight) */
	o->kind = c->weight && !o->is_output && !o->sym ? VAL_WEIGHT : VAL_CONST;
	o->producer = NULL;
}

/* Whether any input among the first k (all if k < 0) has symbolic elements. */
static int any_sym(fctx *c, int k)
{
	for (int i = 0; i < c->n->nin && (k < 0 || i < k); i++)
		if (c->n->in[i] && c->n->in[i]->sym)
			return 1;
	return 0;
}

/* ---- data movement ---------------------------------------------------------------- */

/* o[dst_base + c.dst_st] = x[src_base + c.src_st] over the index space s. */
static void move_affine(ir_value *o, int64_t dbase, const int64_t *dst, const ir_value *x,
			int64_t sbase, const int64_t *sst, const ir_shape *s)
{
	int64_t total = ir_shape_const_numel(s);
	odo it;
	odo_init(&it, s, 2);
	it.off[0] = dbase;
	it.off[1] = sbase;
	memcpy(it.st[0], dst, (size_t)s->rank * sizeof *dst);
	memcpy(it.st[1], sst, (size_t)s->rank * sizeof *sst);
	for (int64_t i = 0; i < total; i++, odo_next(&it))
		cp(o, it.off[0], x, it.off[1]);
}

static int fold_same_order(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	/* an Identity of a weight holds the weight's own data, which says it
	 * is that weight (infer_finish makes them one value): exporters write
	 * one per reuse of a shared initializer */
	if (c->n->op == OP_IDENTITY && x->data && !x->sym && o->dtype == x->dtype) {
		o->data = x->data;
		o->sym = NULL;
		return 1;
	}
	out_alloc(c, o, x->sym != NULL);
	int64_t n = numel(o);
	if (o->sym)
		memcpy(o->sym, x->sym, (size_t)n * sizeof *o->sym);
	else
		memcpy(o->data, x->data, (size_t)n * ir_dtype_size(o->dtype));
	return 1;
}

static int fold_transpose(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	int r = x->shape.rank;
	int64_t xs[IR_MAX_RANK], os[IR_MAX_RANK], ss[IR_MAX_RANK];
	ir_attr *a = ir_attr_find(c->n, "perm");
	strides(&x->shape, xs);
	strides(&o->shape, os);
	for (int i = 0; i < r; i++)
		ss[i] = xs[a ? a->ints[i] : r - 1 - i];
	out_alloc(c, o, x->sym != NULL);
	move_affine(o, 0, os, x, 0, ss, &o->shape);
	return 1;
}

static int fold_expand(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	int64_t os[IR_MAX_RANK], ss[IR_MAX_RANK];
	strides(&o->shape, os);
	bstrides(&x->shape, o->shape.rank, ss);
	out_alloc(c, o, x->sym != NULL);
	move_affine(o, 0, os, x, 0, ss, &o->shape);
	return 1;
}

/* Effective start of a slice on a constant dim (the same clamping as infer). */
static int64_t slice_start(int64_t s, int64_t d, int64_t step)
{
	s = s < 0 ? s + d : s;
	if (step > 0)
		return s < 0 ? 0 : s > d ? d : s;
	return s < 0 ? 0 : s > d - 1 ? d - 1 : s;
}

static int fold_slice(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	ir_value *st = fin(c, 1), *ax = fin(c, 3), *sp = fin(c, 4);
	int r = x->shape.rank;
	int64_t xs[IR_MAX_RANK], os[IR_MAX_RANK], ss[IR_MAX_RANK], base = 0;
	strides(&x->shape, xs);
	strides(&o->shape, os);
	memcpy(ss, xs, sizeof ss);
	int64_t m = numel(st);
	for (int64_t i = 0; i < m; i++) {
		int64_t a = ax ? infer_elem_int(ax, i) : i, step = sp ? infer_elem_int(sp, i) : 1;
		a = a < 0 ? a + r : a;
		int64_t d = x->shape.d[a].k;
		if (o->shape.d[a].k == 0)
			continue;       /* empty result: no element is read */
		int64_t s = slice_start(infer_elem_int(st, i), d, step);
		base += s * xs[a];
		/* With two or more elements read |step| < d, so the product fits;
		 * with one, the stride is never applied. */
		ss[a] = o->shape.d[a].k == 1 ? 0 : xs[a] * step;
	}
	out_alloc(c, o, x->sym != NULL);
	move_affine(o, 0, os, x, base, ss, &o->shape);
	return 1;
}

static int fold_split(fctx *c)
{
	ir_value *x = fin(c, 0);
	int r = x->shape.rank;
	int64_t a = ir_attr_int(c->n, "axis", 0), xs[IR_MAX_RANK], off = 0;
	a = a < 0 ? a + r : a;
	strides(&x->shape, xs);
	for (int k = 0; k < c->n->nout; k++) {
		ir_value *o = c->n->out[k];
		if (o) {
			int64_t os[IR_MAX_RANK];
			strides(&o->shape, os);
			out_alloc(c, o, x->sym != NULL);
			move_affine(o, 0, os, x, off * xs[a], xs, &o->shape);
		}
		off += o ? o->shape.d[a].k : 0;
	}
	return 1;
}

static int fold_concat(fctx *c)
{
	ir_value *o = c->n->out[0];
	int r = o->shape.rank;
	int64_t a = ir_attr_int(c->n, "axis", 0), os[IR_MAX_RANK], off = 0;
	a = a < 0 ? a + r : a;
	strides(&o->shape, os);
	out_alloc(c, o, any_sym(c, -1));
	for (int k = 0; k < c->n->nin; k++) {
		ir_value *x = fin(c, k);
		int64_t xs[IR_MAX_RANK];
		strides(&x->shape, xs);
		move_affine(o, off * os[a], os, x, 0, xs, &x->shape);
		off += x->shape.d[a].k;
	}
	return 1;
}

static int fold_gather(fctx *c)
{
	ir_value *x = fin(c, 0), *idx = fin(c, 1), *o = c->n->out[0];
	int r = x->shape.rank;
	int64_t a = ir_attr_int(c->n, "axis", 0);
	a = a < 0 ? a + r : a;
	int64_t pre = 1, post = 1, d = x->shape.d[a].k, ni = numel(idx);
	for (int i = 0; i < a; i++)
		pre *= x->shape.d[i].k;
	for (int i = (int)a + 1; i < r; i++)
		post *= x->shape.d[i].k;
	for (int64_t j = 0; j < ni; j++) {
		int64_t v = infer_elem_int(idx, j);
		if (v < -d || v >= d)
			return ferr(c, "index %lld (element %lld of '%s') is out of range for axis %lld of "
				    "size %lld", (long long)v, (long long)j, idx->name, (long long)a,
				    (long long)d);
	}
	out_alloc(c, o, x->sym != NULL);
	for (int64_t p = 0; p < pre; p++)
		for (int64_t j = 0; j < ni; j++) {
			int64_t v = infer_elem_int(idx, j);
			v = v < 0 ? v + d : v;
			for (int64_t q = 0; q < post; q++)
				cp(o, (p * ni + j) * post + q, x, (p * d + v) * post + q);
		}
	return 1;
}

static int fold_shape(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	int r = x->shape.rank;
	int64_t st = ir_attr_int(c->n, "start", 0);
	st = st < 0 ? st + r : st;
	st = st < 0 ? 0 : st > r ? r : st;
	out_alloc(c, o, 1);
	for (int64_t i = 0; i < o->shape.d[0].k; i++)
		o->sym[i] = x->shape.d[st + i];
	return 1;
}

/* EyeLike: ones on diagonal k. */
static int fold_eyelike(fctx *c)
{
	ir_value *o = c->n->out[0];
	int64_t rows = o->shape.d[0].k, cols = o->shape.d[1].k, k = ir_attr_int(c->n, "k", 0);
	out_alloc(c, o, 0);
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < cols; j++) {
			if (is_float(o->dtype))
				stf(o, i * cols + j, j - i == k);
			else
				stu(o, i * cols + j, j - i == k);
		}
	return 1;
}

static int fold_range(fctx *c)
{
	ir_value *o = c->n->out[0], *st = fin(c, 0), *dl = fin(c, 2);
	int64_t m = numel(o);
	if (any_sym(c, -1))
		return 0;
	out_alloc(c, o, 0);
	for (int64_t i = 0; i < m; i++) {
		if (is_float(o->dtype))
			stf(o, i, ldf(st, 0) + (double)i * ldf(dl, 0));
		else
			stu(o, i, (uint64_t)(infer_elem_int(st, 0) + i * infer_elem_int(dl, 0)));
	}
	return 1;
}

static int fold_tile(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	int r = x->shape.rank;
	int64_t m = numel(o), idx[IR_MAX_RANK] = {0};
	out_alloc(c, o, x->sym != NULL);
	for (int64_t i = 0; i < m; i++) {
		int64_t off = 0;
		for (int a = 0; a < r; a++)
			off = off * x->shape.d[a].k + idx[a] % x->shape.d[a].k;
		cp(o, i, x, off);
		for (int a = r - 1; a >= 0; a--) {
			if (++idx[a] < o->shape.d[a].k)
				break;
			idx[a] = 0;
		}
	}
	return 1;
}

/* HannWindow, HammingWindow, BlackmanWindow. */
double infer_window(ir_op op, int64_t i, int64_t size, int periodic)
{
	double N = (double)(periodic ? size : size - 1), t = N > 0 ? 2 * 3.14159265358979323846 * (double)i / N : 0;
	switch (op) {
	case OP_HANNWINDOW: return 0.5 - 0.5 * cos(t);
	case OP_HAMMINGWINDOW: return 25.0 / 46.0 - 21.0 / 46.0 * cos(t);
	default: return 0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t);
	}
}

static int fold_window(fctx *c)
{
	ir_value *o = c->n->out[0];
	int64_t m = numel(o);
	int per = (int)ir_attr_int(c->n, "periodic", 1);
	out_alloc(c, o, 0);
	for (int64_t i = 0; i < m; i++) {
		double v = infer_window(c->n->op, i, m, per);
		if (is_float(o->dtype))
			stf(o, i, v);
		else
			stu(o, i, f2u(v, o->dtype));
	}
	return 1;
}

/* MelWeightMatrix, as the ONNX specification computes it: num_mel_bins + 2
 * points evenly spaced on the mel scale (2595 log10(1 + f / 700)) from
 * lower_edge_hertz (step: the span over num_mel_bins + 2), back to hertz,
 * to DFT bins floor((dft_length + 1) f / sample_rate); filter i rises
 * linearly from point i to point i + 1 and falls to point i + 2. */
void infer_melweight(double *y, int64_t bins, int64_t dft_length, int64_t sample_rate, double lower_hz,
		     double upper_hz)
{
	int64_t rows = dft_length / 2 + 1;
	double lo = 2595.0 * log10(1.0 + lower_hz / 700.0), hi = 2595.0 * log10(1.0 + upper_hz / 700.0);
	double step = (hi - lo) / (double)(bins + 2);
	for (int64_t i = 0; i < rows * bins; i++)
		y[i] = 0.0;
	int64_t pt[3];
	for (int64_t i = 0; i < bins; i++) {
		for (int j = 0; j < 3; j++) {
			double hz = 700.0 * (pow(10.0, ((double)(i + j) * step + lo) / 2595.0) - 1.0);
			pt[j] = (int64_t)floor((double)(dft_length + 1) * hz / (double)sample_rate);
		}
		int64_t up = pt[1] - pt[0], down = pt[2] - pt[1];
		if (up == 0) {
			if (pt[1] >= 0 && pt[1] < rows)
				y[pt[1] * bins + i] = 1.0;
		} else {
			for (int64_t j = pt[0]; j <= pt[1]; j++)
				if (j >= 0 && j < rows)
					y[j * bins + i] = (double)(j - pt[0]) / (double)up;
		}
		for (int64_t j = pt[1]; j < pt[2]; j++)
			if (j >= 0 && j < rows)
				y[j * bins + i] = (double)(pt[2] - j) / (double)down;
	}
}

static int fold_melweight(fctx *c)
{
	ir_value *o = c->n->out[0];
	double v[5];
	for (int k = 0; k < 5; k++) {
		ir_value *x = fin(c, k);
		v[k] = is_float(x->dtype) ? ldf(x, 0) : (double)infer_elem_int(x, 0);
	}
	int64_t m = numel(o);
	double *t = arena_array(c->g->A, (size_t)(m > 0 ? m : 1), sizeof *t);
	infer_melweight(t, (int64_t)v[0], (int64_t)v[1], (int64_t)v[2], v[3], v[4]);
	out_alloc(c, o, 0);
	for (int64_t i = 0; i < m; i++)
		stf(o, i, t[i]);
	return 1;
}

/* Size: the element count, a monomial of the dimension symbols. */
static int fold_size(fctx *c)
{
	ir_dim m;
	if (!infer_numel(&fin(c, 0)->shape, &m))
		return 0;
	ir_value *o = c->n->out[0];
	out_alloc(c, o, 1);
	o->sym[0] = m;
	return 1;
}

static int fold_constofshape(fctx *c)
{
	ir_value *o = c->n->out[0];
	int64_t n = numel(o);
	if (n > INFER_FILL_MAX)
		return 0;
	ir_attr *a = ir_attr_find(c->n, "value");
	out_alloc(c, o, 0);
	size_t es = ir_dtype_size(o->dtype);
	if (a && a->t)
		for (int64_t i = 0; i < n; i++)
			memcpy((char *)o->data + (size_t)i * es, a->t->data, es);
	/* else: f32 zeros, as allocated */
	return 1;
}

static int fold_cast(fctx *c)
{
	ir_value *x = fin(c, 0), *o = c->n->out[0];
	int64_t n = numel(o);
	if (x->sym) {
		/* sizes are within INT32_MAX (the generated code checks): int32
		 * holds them as well as int64 */
		if (o->dtype != DT_I64 && o->dtype != DT_I32)
			return 0;       /* not representable: pass_infer reports it */
		return fold_same_order(c);
	}
	int64_t to = ir_attr_int(c->n, "to", 0);
	out_alloc(c, o, 0);
	for (int64_t i = 0; i < n; i++) {
		if (is_float(o->dtype) && (to == DT_F16 || to == DT_BF16))
			stf(o, i, to == DT_F16 ? rt_round_f16(ldf(x, i)) : rt_round_bf16((float)ldf(x, i)));
		else if (is_float(o->dtype))
			stf(o, i, ldf(x, i));
		else if (is_float(x->dtype))
			stu(o, i, f2u(ldf(x, i), o->dtype));
		else
			stu(o, i, ldu(x, i));
	}
	return 1;
}

/* ---- arithmetic ------------------------------------------------------------------- */

static const char *opsym(ir_op op)
{
	return op == OP_ADD ? "+" : op == OP_SUB ? "-" : op == OP_MUL ? "*" : "/";
}

static int fold_binary(fctx *c)
{
	ir_node *n = c->n;
	ir_value *A = fin(c, 0), *B = fin(c, 1), *o = n->out[0];
	int64_t total = numel(o);
	int sym = A->sym || B->sym;
	odo it;
	odo_init(&it, &o->shape, 2);
	bstrides(&A->shape, o->shape.rank, it.st[0]);
	bstrides(&B->shape, o->shape.rank, it.st[1]);
	out_alloc(c, o, sym);
	ir_dtype t = A->dtype;
	for (int64_t i = 0; i < total; i++, odo_next(&it)) {
		int64_t ia = it.off[0], ib = it.off[1];
		if (sym) {
			ir_dim a = infer_elem_dim(A, ia), b = infer_elem_dim(B, ib), r;
			int ok = n->op == OP_ADD ? infer_mono_add(c->g, a, b, &r) :
				 n->op == OP_SUB ? infer_mono_sub(c->g, a, b, &r) :
				 n->op == OP_MUL ? infer_mono_mul(a, b, &r) : infer_mono_div(c->g, a, b, &r);
			if (!ok)
				return ferr(c, "cannot compute %s %s %s at compile time: cellc keeps "
					    "shape arithmetic symbolic and the result is not a product "
					    "of dimension symbols", infer_mono_str(c->g->A, c->g, a),
					    opsym(n->op), infer_mono_str(c->g->A, c->g, b));
			o->sym[i] = r;
		} else if (is_float(t)) {
			double a = ldf(A, ia), b = ldf(B, ib);
			stf(o, i, n->op == OP_ADD ? a + b : n->op == OP_SUB ? a - b :
				  n->op == OP_MUL ? a * b : a / b);
		} else {
			uint64_t a = ldu(A, ia), b = ldu(B, ib), r;
			switch (n->op) {
			case OP_ADD: r = a + b; break;
			case OP_SUB: r = a - b; break;
			case OP_MUL: r = a * b; break;
			default:
				if (b == 0)
					return ferr(c, "integer division by zero (element %lld of '%s')",
						    (long long)ib, B->name);
				if (is_unsigned(t))
					r = a / b;
				else if ((int64_t)a == INT64_MIN && (int64_t)b == -1)
					r = a;  /* wraps, like the other integer ops */
				else
					r = (uint64_t)((int64_t)a / (int64_t)b);
				break;
			}
			stu(o, i, r);
		}
	}
	return 1;
}


static int fold_unary(fctx *c)
{
	ir_node *n = c->n;
	ir_value *x = fin(c, 0), *o = n->out[0];
	int64_t total = numel(o);
	if (x->sym)
		return 0;
	if (is_float(x->dtype)) {
		if (!elem_double(n->op))
			return 0;       /* an op without an expression: left to run time */
		out_alloc(c, o, 0);
		for (int64_t i = 0; i < total; i++) {
			double in = ldf(x, i);
			stf(o, i, elem_double(n->op)(n, &in));
		}
		return 1;
	}
	out_alloc(c, o, 0);
	int sgn = !is_unsigned(x->dtype);
	for (int64_t i = 0; i < total; i++) {
		uint64_t v = ldu(x, i);
		int neg = sgn && (int64_t)v < 0;
		switch (n->op) {
		case OP_NEG: v = 0 - v; break;
		case OP_ABS: v = neg ? 0 - v : v; break;
		case OP_RELU: v = neg ? 0 : v; break;
		default: return 0;      /* float-only ops never get here (infer checks) */
		}
		stu(o, i, v);
	}
	return 1;
}

static int fold_clip(fctx *c)
{
	ir_value *x = fin(c, 0), *lo = fin(c, 1), *hi = fin(c, 2), *o = c->n->out[0];
	int64_t total = numel(o);
	if (any_sym(c, -1))
		return 0;
	out_alloc(c, o, 0);
	ir_dtype t = x->dtype;
	for (int64_t i = 0; i < total; i++) {
		if (is_float(t)) {
			double v = ldf(x, i);
			if (lo && v < ldf(lo, 0))
				v = ldf(lo, 0);
			if (hi && v > ldf(hi, 0))
				v = ldf(hi, 0);
			stf(o, i, v);
		} else if (is_unsigned(t)) {
			uint64_t v = ldu(x, i);
			if (lo && v < ldu(lo, 0))
				v = ldu(lo, 0);
			if (hi && v > ldu(hi, 0))
				v = ldu(hi, 0);
			stu(o, i, v);
		} else {
			int64_t v = infer_elem_int(x, i);
			if (lo && v < infer_elem_int(lo, 0))
				v = infer_elem_int(lo, 0);
			if (hi && v > infer_elem_int(hi, 0))
				v = infer_elem_int(hi, 0);
			stu(o, i, (uint64_t)v);
		}
	}
	return 1;
}

/* ---- the later element-wise rows of ops.def ----------------------------------------- */

/* Min, Max, Sum, Mean, the comparisons, And/Or/Xor/Not, Where, IsNaN/IsInf,
 * Shrink and the float expressions of elem.def, over broadcast operands: floats in
 * double, integers as 64-bit (signed or unsigned by dtype). */
/* Equal and Where over shape vectors with symbolic elements (what
 * PyTorch's dynamic Expand/Reshape exports compute: Where(Equal(shape, -1),
 * ones, shape)): a dimension equals itself and is never negative; Where
 * with a constant condition picks elements, symbolic or not. */
static int fold_elem_sym(fctx *c)
{
	ir_node *n = c->n;
	ir_value *o = n->out[0];
	if ((n->op != OP_EQUAL && n->op != OP_WHERE) || (n->op == OP_WHERE && fin(c, 0)->sym))
		return 0;
	int nin = n->nin, R = o->shape.rank;
	int64_t total = numel(o), (*st)[IR_MAX_RANK] = arena_array(c->g->A, (size_t)nin, sizeof *st);
	for (int k = 0; k < nin; k++)
		bstrides(&fin(c, k)->shape, R, st[k]);
	int64_t idx[IR_MAX_RANK] = {0}, *off = arena_array(c->g->A, (size_t)nin, sizeof *off);
	unsigned char *eq = n->op == OP_EQUAL ? arena_alloc(c->g->A, (size_t)(total ? total : 1)) : NULL;
	for (int64_t i = 0; i < total; i++) {
		for (int k = 0; k < nin; k++) {
			off[k] = 0;
			for (int d = 0; d < R; d++)
				off[k] += idx[d] * st[k][d];
		}
		if (eq) {
			ir_dim a = infer_elem_dim(fin(c, 0), off[0]), b = infer_elem_dim(fin(c, 1), off[1]);
			int ca = infer_mono_is_const(a), cb = infer_mono_is_const(b);
			if (ir_dim_eq(a, b))
				eq[i] = 1;
			else if ((ca && cb) || (ca && a.k < 0) || (cb && b.k < 0))
				eq[i] = 0;
			else
				return 0;       /* a symbol against a size: unknown */
		}
		for (int d = R - 1; d >= 0; d--) {
			if (++idx[d] < o->shape.d[d].k)
				break;
			idx[d] = 0;
		}
	}
	if (eq) {
		out_alloc(c, o, 0);
		for (int64_t i = 0; i < total; i++)
			stu(o, i, eq[i]);
		return 1;
	}
	out_alloc(c, o, 1);
	memset(idx, 0, sizeof idx);
	for (int64_t i = 0; i < total; i++) {
		for (int k = 0; k < nin; k++) {
			off[k] = 0;
			for (int d = 0; d < R; d++)
				off[k] += idx[d] * st[k][d];
		}
		int k = infer_elem_int(fin(c, 0), off[0]) ? 1 : 2;
		cp(o, i, fin(c, k), off[k]);
		for (int d = R - 1; d >= 0; d--) {
			if (++idx[d] < o->shape.d[d].k)
				break;
			idx[d] = 0;
		}
	}
	return 1;
}

static int fold_elem(fctx *c)
{
	ir_node *n = c->n;
	ir_value *o = n->out[0];
	if (any_sym(c, -1))
		return fold_elem_sym(c);
	int nin = n->nin, R = o->shape.rank;
	int64_t total = numel(o), (*st)[IR_MAX_RANK] = arena_array(c->g->A, (size_t)nin, sizeof *st);
	for (int k = 0; k < nin; k++)
		bstrides(&fin(c, k)->shape, R, st[k]);
	ir_dtype t = fin(c, n->op == OP_WHERE ? 1 : 0)->dtype;
	int fl = is_float(t), uns = is_unsigned(t);
	int64_t idx[IR_MAX_RANK] = {0}, *off = arena_array(c->g->A, (size_t)nin, sizeof *off);
	out_alloc(c, o, 0);
	for (int64_t i = 0; i < total; i++) {
		for (int k = 0; k < nin; k++) {
			off[k] = 0;
			for (int d = 0; d < R; d++)
				off[k] += idx[d] * st[k][d];
		}
		const ir_value *x = fin(c, 0);
		if (n->op == OP_WHERE) {
			int k = infer_elem_int(x, off[0]) ? 1 : 2;
			cp(o, i, fin(c, k), off[k]);
		} else if (n->op == OP_EQUAL || n->op == OP_LESS || n->op == OP_LESSEQ || n->op == OP_GREATER ||
			   n->op == OP_GREATEREQ) {
			int lt, eq;
			if (fl) {
				double a = ldf(x, off[0]), b = ldf(fin(c, 1), off[1]);
				lt = a < b, eq = a == b;
			} else if (uns) {
				uint64_t a = ldu(x, off[0]), b = ldu(fin(c, 1), off[1]);
				lt = a < b, eq = a == b;
			} else {
				int64_t a = infer_elem_int(x, off[0]), b = infer_elem_int(fin(c, 1), off[1]);
				lt = a < b, eq = a == b;
			}
			int gt = fl ? ldf(x, off[0]) > ldf(fin(c, 1), off[1]) : !lt && !eq;
			stu(o, i, n->op == OP_EQUAL ? eq : n->op == OP_LESS ? lt : n->op == OP_LESSEQ ? lt || eq :
				  n->op == OP_GREATER ? gt : gt || eq);
		} else if (n->op == OP_AND || n->op == OP_OR || n->op == OP_XOR || n->op == OP_NOT) {
			int a = infer_elem_int(x, off[0]) != 0, b = nin > 1 && infer_elem_int(fin(c, 1), off[1]) != 0;
			stu(o, i, n->op == OP_AND ? a && b : n->op == OP_OR ? a || b : n->op == OP_XOR ? a != b : !a);
		} else if (n->op == OP_ISNAN || n->op == OP_ISINF) {
			double a = ldf(x, off[0]);
			int r = n->op == OP_ISNAN ? isnan(a)
				: isinf(a) && elem_attr_int(n, a > 0 ? "detect_positive" : "detect_negative");
			stu(o, i, r != 0);
		} else if (n->op == OP_MIN || n->op == OP_MAX || n->op == OP_SUM || n->op == OP_MEAN) {
			if (fl) {
				double r = ldf(x, off[0]);
				for (int k = 1; k < nin; k++) {
					double b = ldf(fin(c, k), off[k]);
					if (n->op == OP_MIN)
						r = isnan(r) || r < b ? r : b;
					else if (n->op == OP_MAX)
						r = isnan(r) || r > b ? r : b;
					else
						r += b;
				}
				stf(o, i, n->op == OP_MEAN ? r / nin : r);
			} else {
				uint64_t r = ldu(x, off[0]);
				for (int k = 1; k < nin; k++) {
					uint64_t b = ldu(fin(c, k), off[k]);
					int less = uns ? r < b : (int64_t)r < (int64_t)b;
					if (n->op == OP_MIN)
						r = less ? r : b;
					else if (n->op == OP_MAX)
						r = less ? b : r;
					else
						r += b;
				}
				stu(o, i, r);
			}
		} else if (n->op == OP_BITSHIFT) {
			uint64_t a = ldu(x, off[0]), b = ldu(fin(c, 1), off[1]);
			int bits = (int)ir_dtype_size(t) * 8;
			stu(o, i, b >= (uint64_t)bits ? 0 : ir_attr_string(n, "direction", "")[0] == 'L' ? a << b : a >> b);
		} else if (n->op == OP_SHRINK) {
			double a = fl ? ldf(x, off[0]) : uns ? (double)ldu(x, off[0]) : (double)infer_elem_int(x, off[0]);
			double l = elem_attr_float(n, "lambd"), b = elem_attr_float(n, "bias");
			double r = a < -l ? a + b : a > l ? a - b : 0;
			if (fl)
				stf(o, i, r);
			else
				stu(o, i, f2u(r, o->dtype));
		} else {
			double in[2] = {ldf(x, off[0]), nin > 1 ? ldf(fin(c, 1), off[1]) : 0};
			if (!elem_double(n->op))
				return 0;       /* no expression: left to run time */
			stf(o, i, elem_double(n->op)(n, in));
		}
		for (int d = R - 1; d >= 0; d--) {
			if (++idx[d] < o->shape.d[d].k)
				break;
			idx[d] = 0;
		}
	}
	return 1;
}

/* ---- entry ----------------------------------------------------------------------------- */

/* ReduceMin/ReduceMax of an int64 vector (infer_shape.c lets only constant
 * ones through): the trip count of `for i, x_t in enumerate(x.unbind(1))`
 * is min(INT64_MAX, T), of `zip(x.unbind(0), m.unbind(0))` min(T, T).  A
 * dimension is never negative and below INT64_MAX; what these facts cannot
 * decide (min(T, 5)) is an error. */
static int fold_reduce_int(fctx *c)
{
	ir_node *n = c->n;
	ir_value *x = fin(c, 0), *o = n->out[0];
	int64_t len = numel(x), lo = INT64_MAX, hi = INT64_MIN;
	int mn = n->op == OP_REDUCEMIN, nsym = 0, ok = 1;
	ir_dim s = ir_dim_const(0);
	if (numel(o) != 1 || len < (n->op == OP_REDUCEPROD || n->op == OP_REDUCESUM ? 0 : 1))
		return ferr(c, "reduces an int64 vector of %lld elements to %lld; cellc folds int64 %s over a whole "
			    "vector only", (long long)len, (long long)numel(o), ir_op_name(n->op));
	if (n->op == OP_REDUCEPROD || n->op == OP_REDUCESUM) {
		/* a product of sizes is a monomial; a sum only with at most one
		 * size known at run time (the others 0) */
		int prod = n->op == OP_REDUCEPROD;
		ir_dim acc = ir_dim_const(prod ? 1 : 0);
		for (int64_t i = 0; i < len; i++) {
			ir_dim d = infer_elem_dim(x, i);
			if (prod)
				acc = ir_dim_mul(acc, d);
			else if (infer_mono_is_const(d) && infer_mono_is_const(acc))
				acc.k += d.k;
			else if (infer_mono_is_const(d) && d.k == 0)
				continue;
			else if (infer_mono_is_const(acc) && acc.k == 0)
				acc = d;
			else
				return ferr(c, "ReduceSum over dimension sizes known only at run time (%s) gives no "
					    "product of sizes; cellc evaluates it at compile time",
					    ir_shape_str(c->g->A, ir_root(c->g), &x->shape));
		}
		int sym = !infer_mono_is_const(acc);
		out_alloc(c, o, sym);
		if (sym)
			o->sym[0] = acc;
		else
			((int64_t *)o->data)[0] = acc.k;
		return 1;
	}
	for (int64_t i = 0; i < len; i++) {
		ir_dim d = infer_elem_dim(x, i);
		if (infer_mono_is_const(d)) {
			lo = d.k < lo ? d.k : lo;
			hi = d.k > hi ? d.k : hi;
		} else if (nsym++ == 0) {
			s = d;
		} else {
			ok &= ir_dim_eq(d, s);
		}
	}
	if (nsym && (!ok || (mn ? hi != INT64_MIN && lo != INT64_MAX : lo != INT64_MAX && hi > 0)))
		return ferr(c, "%s over dimension sizes known only at run time (%s) and sizes it cannot be "
			    "compared with; cellc evaluates it at compile time", ir_op_name(n->op),
			    ir_shape_str(c->g->A, ir_root(c->g), &x->shape));
	out_alloc(c, o, nsym > 0);
	if (nsym)
		o->sym[0] = s;
	else
		((int64_t *)o->data)[0] = mn ? lo : hi;
	return 1;
}

static int foldable(ir_op op)
{
	switch (ir_ops[op].kind) {
	case OPK_ELEM: case OPK_SHAPE: return 1;
	default: return op == OP_REDUCEMIN || op == OP_REDUCEMAX || op == OP_REDUCEPROD || op == OP_REDUCESUM;
	}
}

int infer_fold(ir_graph *g, ir_node *n, diag *D)
{
	fctx cx = {g, n, D, 0}, *c = &cx;
	if (!foldable(n->op))
		return 0;
	for (int k = 0; k < n->nin; k++) {
		ir_value *v = n->in[k];
		if (!v)
			continue;
		int meta = n->op == OP_SHAPE || n->op == OP_SIZE || n->op == OP_EYELIKE;       /* read only the shape */
		if (!meta && !infer_is_const(v))
			return 0;
		/* results of weights stay weights; a weight as a shape parameter does not count */
		c->weight |= v->kind == VAL_WEIGHT && !meta && !infer_shape_input(n->op, k);
		/* --train (or a Gradient node): what is made from a parameter is
		 * computed at run time */
		if (ir_weights_at_run_time(g) && v->kind == VAL_WEIGHT && v->dtype == DT_F32 && !meta &&
		    !infer_shape_input(n->op, k))
			return 0;
	}
	int64_t total = 0;
	for (int k = 0; k < n->nout; k++) {
		ir_value *o = n->out[k];
		if (!o)
			continue;
		int64_t m = ir_shape_const_numel(&o->shape);
		if (m < 0)
			return 0;       /* symbolic shape: a run-time node (e.g. a fill of size B) */
		total += m;
	}
	if (total > INFER_FOLD_MAX && !any_sym(c, -1))
		return 0;
	int r;
	switch (n->op) {
	case OP_IDENTITY: case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN:
		r = fold_same_order(c);
		break;
	case OP_TRANSPOSE: r = fold_transpose(c); break;
	case OP_EXPAND: r = fold_expand(c); break;
	case OP_SLICE: r = fold_slice(c); break;
	case OP_SPLIT: r = fold_split(c); break;
	case OP_CONCAT: r = fold_concat(c); break;
	case OP_GATHER: r = fold_gather(c); break;
	case OP_SHAPE: r = fold_shape(c); break;
	case OP_CONSTOFSHAPE: r = fold_constofshape(c); break;
	case OP_CAST: r = fold_cast(c); break;
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: r = fold_binary(c); break;
	case OP_CLIP: r = fold_clip(c); break;
	case OP_MOD: case OP_POW: r = 0; break;    /* left to run time */
	case OP_PAD: r = 0; break;                 /* run time (runtime/rt_nn.c) */
	case OP_SIZE: r = fold_size(c); break;
	case OP_EYELIKE: r = fold_eyelike(c); break;
	case OP_RANGE: r = fold_range(c); break;
	case OP_TILE: r = fold_tile(c); break;
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: r = fold_window(c); break;
	case OP_MELWEIGHT: r = fold_melweight(c); break;
	case OP_REDUCEMIN: case OP_REDUCEMAX: case OP_REDUCEPROD: case OP_REDUCESUM:
		r = fin(c, 0)->dtype == DT_I64 ? fold_reduce_int(c) : 0;
		break;
	default:
		r = n->op >= OP_MIN && n->op <= OP_SHRINK ? fold_elem(c) : n->op == OP_NOT ? fold_elem(c) : fold_unary(c);
		break;
	}
	if (r != 1) {
		for (int k = 0; k < n->nout; k++)
			if (n->out[k])
				n->out[k]->data = n->out[k]->sym = NULL;
		return r;
	}
	for (int k = 0; k < n->nout; k++)
		if (n->out[k])
			out_finish(c, n->out[k]);
	return 1;
}
