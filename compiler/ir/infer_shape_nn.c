/* infer_shape_nn.c: infer_node's rules (infer_shape.c dispatches) for the
 * neural-network operator families: Gemm, MatMul, Softmax, reductions and
 * ArgMax/ArgMin, Conv, Pad, Size, quantization, image sampling (Resize,
 * GridSample, RoiAlign), pooling, normalisations, Dropout and the random
 * operators.  Same conventions as infer_shape.c (infer.h); infer_shape.h
 * has the context and helpers.
 */
#include "cells.h"
#include "infer_shape.h"
#include "train.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- linear algebra ---------------------------------------------------------- */

int infer_gemm(ictx *c)
{
	ir_value *A = in(c, 0), *B = in(c, 1), *C = in(c, 2);
	if (need_real(c, 0) || same_ty(c, 1) || same_ty(c, 2))
		return 1;
	if (A->shape.rank != 2 || B->shape.rank != 2)
		return fail(c, "A and B must be matrices, not %s and %s", shp(c, &A->shape),
			    shp(c, &B->shape));
	int ta = ir_attr_int(c->n, "transA", 0) != 0, tb = ir_attr_int(c->n, "transB", 0) != 0;
	ir_dim M = A->shape.d[ta], K = A->shape.d[!ta], K2 = B->shape.d[tb], N = B->shape.d[!tb];
	if (!ir_dim_eq(K, K2) && infer_unify(c, K, K2, "Gemm: the inner sizes of A and B"))
		return 1;
	if (!ir_dim_eq(K, K2))
		return fail(c, "inner dimensions differ: A %s%s and B %s%s", shp(c, &A->shape),
			    ta ? " (transposed)" : "", shp(c, &B->shape), tb ? " (transposed)" : "");
	ir_shape s = {.rank = 2};
	s.d[0] = M;
	s.d[1] = N;
	for (int i = 0; C && C->shape.rank <= 2 && i < C->shape.rank; i++) {
		ir_dim dc = C->shape.d[i], ds = s.d[i + 2 - C->shape.rank];
		if (!ir_dim_eq(dc, ir_dim_const(1)) && !ir_dim_eq(dc, ds) &&
		    infer_unify(c, ds, dc, "Gemm: axis %d of C is axis %d of the result", i, i + 2 - C->shape.rank))
			return 1;
	}
	if (C && !infer_broadcasts_to(&C->shape, &s))
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
	if (!ir_dim_eq(a.d[a.rank - 1], b.d[b.rank - 2]) &&
	    infer_unify(c, a.d[a.rank - 1], b.d[b.rank - 2], "MatMul: the inner sizes of A and B"))
		return 1;
	if (!ir_dim_eq(a.d[a.rank - 1], b.d[b.rank - 2]))
		return fail(c, "inner dimensions of %s and %s differ", shp(c, &A->shape),
			    shp(c, &B->shape));
	ir_shape ba = {.rank = a.rank - 2}, bb = {.rank = b.rank - 2}, s;
	memcpy(ba.d, a.d, (size_t)ba.rank * sizeof(ir_dim));
	memcpy(bb.d, b.d, (size_t)bb.rank * sizeof(ir_dim));
	if (infer_broadcast2(c, &ba, &bb, &s))
		return 1;
	if (!va)
		s.d[s.rank++] = a.d[a.rank - 2];
	if (!vb)
		s.d[s.rank++] = b.d[b.rank - 1];
	*out = s;
	return 0;
}

int infer_matmul(ictx *c)
{
	ir_shape s;
	if (need_real(c, 0) || same_ty(c, 1) || matmul_shape(c, in(c, 0), in(c, 1), &s))
		return 1;
	set_out(c, 0, in(c, 0)->dtype, &s);
	return 0;
}

int infer_softmax(ictx *c)
{
	ir_value *x = in(c, 0);
	if (need_real(c, 0))
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

int infer_reduce(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	/* ReduceMin/ReduceMax/ReduceProd/ReduceSum of a constant int64 vector
	 * (a scripted loop's trip count: min over the lengths of zip()'d or
	 * enumerate()'d sequences; an element count: the product of a Shape)
	 * are folded (infer_fold.c), symbolic lengths included */
	/* and int64 / int32 at run time, exact (rt_reduce_i64): the kinds
	 * ONNX defines for integers but the mean and the logarithmic ones */
	int int_op = c->n->op == OP_REDUCEMIN || c->n->op == OP_REDUCEMAX || c->n->op == OP_REDUCEPROD ||
		     c->n->op == OP_REDUCESUM || c->n->op == OP_REDUCEL1 || c->n->op == OP_REDUCESUMSQUARE;
	if (x->dtype != DT_F32 && x->dtype != DT_F64 && !(int_op && (x->dtype == DT_I64 || x->dtype == DT_I32)))
		return fail(c, "unsupported dtype %s for %s: f32 and f64 are supported%s", ir_dtype_name(x->dtype),
			    c->n->op_type ? c->n->op_type : ir_op_name(c->n->op),
			    (x->dtype == DT_I64 || x->dtype == DT_I32) ? " (int64 and int32 for Sum, Prod, Max, Min, "
			    "L1 and SumSquare)" : "");
	unsigned char red[IR_MAX_RANK];
	if (in(c, 1)) {
		int64_t ax[IR_MAX_RANK];
		int m = infer_const_plain(c, 1, ax, IR_MAX_RANK);
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

int infer_argmax(ictx *c)
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

int infer_pads_at_run_time(const ir_node *n, int a)
{
	const ir_value *x = n->in[0];
	const char *ap = ir_attr_string((ir_node *)n, "auto_pad", "NOTSET");
	const ir_attr *sa = ir_attr_find((ir_node *)n, "strides");
	int nsp = x->shape.rank - 2;
	return (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) && a >= 0 && a < nsp &&
	       !ir_dim_is_const(x->shape.d[2 + a]) && sa && sa->kind == ATTR_INTS && sa->n == nsp && sa->ints[a] > 1;
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
			if (infer_pads_at_run_time(n, a)) {
				pads[a] = pads[nsp + a] = 0;    /* rt_same_pad at run time */
				continue;
			}
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
	if (!ir_dim_is_const(x->shape.d[1]) && group >= 1 &&
	    infer_unify(c, x->shape.d[1], ir_dim_const(w->shape.d[1].k * group), "the channels of X are W's times group"))
		return 1;
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
			/* a symbolic size stays one where the output size is the input's */
			if (st[a] == 1 && (same || pads[a] + pads[nsp + a] == span - 1)) {
				s.d[2 + a] = D;
				continue;
			}
			/* explicit pads or VALID: floor((D + P - span) / stride) + 1, a size
			 * expression, for D + P >= span (checked at run time) */
			int64_t P = !strcmp(ap, "VALID") ? 0 : pads[a] + pads[nsp + a];
			if (!same && ir_sym_need(c->g, D, span - P > 1 ? span - P : 1) &&
			    ir_sym_floor(c->g, D, 1, P - span + st[a], st[a], &s.d[2 + a]))
				continue;
			/* SAME at a stride above 1: ceil(D / s) windows, the pads
			 * computed at run time (infer_pads_at_run_time) */
			if (same && ir_sym_floor(c->g, D, 1, st[a] - 1, st[a], &s.d[2 + a]))
				continue;
			return fail(c, "spatial axis %d of X has the run-time size %s, which is no symbol of its own "
				    "that a size expression can be made of; --dim SYM=N fixes a symbol's size at compile "
				    "time", a, dimstr(c, D));
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

int infer_conv(ictx *c)
{
	ir_shape s;
	if (need_real(c, 0) || same_ty(c, 1) || same_ty(c, 2) || conv_shape(c, 1, 2, &s))
		return 1;
	set_out(c, 0, in(c, 0)->dtype, &s);
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

int infer_quant(ictx *c)
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
 * axes inputs, sizes known at compile time or at run time (F.pad(a, (0,
 * b.size(1) - a.size(1))): T2 - T1); -1 after reporting. */
static int pad_dims(ictx *c, ir_dim *pads)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank, ax[IR_MAX_RANK], na = r;
	ir_dim p[2 * IR_MAX_RANK];
	for (int a = 0; a < r; a++)
		ax[a] = a;
	if (in(c, 3)) {
		na = infer_axes_list(c, 3, r, ax, IR_MAX_RANK);
		if (na < 0)
			return -1;
	}
	int m = infer_const_ints(c, 1, p, 2 * IR_MAX_RANK);
	if (m < 0)
		return -1;
	if (m != 2 * na)
		return fail(c, "input 'pads' has %d values; %d axes need %d", m, na, 2 * na), -1;
	for (int a = 0; a < 2 * r; a++)
		pads[a] = ir_dim_const(0);
	for (int i = 0; i < na; i++) {
		pads[ax[i]] = p[i];
		pads[r + ax[i]] = p[na + i];
	}
	return 0;
}

int infer_pad_dims(ir_graph *g, ir_node *n, diag *D, ir_dim *pads)
{
	ictx cx = {g, n, D, g->A, 0};
	return pad_dims(&cx, pads);
}

int infer_pad_amounts(ir_graph *g, ir_node *n, diag *D, int64_t *pads)
{
	ictx cx = {g, n, D, g->A, 0};
	ir_dim p[2 * IR_MAX_RANK];
	if (pad_dims(&cx, p))
		return -1;
	for (int a = 0; a < 2 * n->in[0]->shape.rank; a++) {
		if (!infer_mono_is_const(p[a]))
			return fail(&cx, "pad %d is the run-time size %s; a constant is needed here", a,
				    mono(&cx, p[a])), -1;
		pads[a] = p[a].k;
	}
	return 0;
}

int infer_pad(ictx *c)
{
	ir_value *x = in(c, 0), *v = in(c, 2);
	int r = x->shape.rank;
	ir_dim pd[2 * IR_MAX_RANK];
	if (pad_dims(c, pd))
		return 1;
	if (v && (v->dtype != x->dtype || ir_shape_const_numel(&v->shape) != 1))
		return fail(c, "constant_value '%s' must be one element of X's dtype %s", v->name,
			    ir_dtype_name(x->dtype));
	const char *mode = ir_attr_string(c->n, "mode", "constant");
	ir_shape s = x->shape;
	for (int a = 0; a < r; a++) {
		ir_dim d = x->shape.d[a];
		if (!infer_mono_is_const(pd[a]) || !infer_mono_is_const(pd[r + a])) {
			/* pads known at run time: the size expression d + pads
			 * (checked at least 1 at run time); only zeros or the
			 * constant go in, whatever their amount */
			ir_dim t[3] = {d, pd[a], pd[r + a]};
			int64_t one[3] = {1, 1, 1};
			if (strcmp(mode, "constant"))
				return fail(c, "axis %d has the pads %s and %s, known only at run time; mode %s needs them "
					    "at compile time (mode constant takes them at run time)", a, mono(c, pd[a]),
					    mono(c, pd[r + a]), mode);
			if (!ir_sym_lin(c->g, 3, t, one, 0, 1, 0, &s.d[a]) || s.d[a].k < 0)
				return fail(c, "axis %d of size %s padded by %s and %s: the size of the result is no size "
					    "expression cellc keeps", a, dimstr(c, d), mono(c, pd[a]), mono(c, pd[r + a]));
			continue;
		}
		int64_t pads[2] = {pd[a].k, pd[r + a].k}, add = pads[0] + pads[1];
		if (!pads[0] && !pads[1])
			continue;
		if (!ir_dim_is_const(d)) {
			/* the size expression d + pads, for d at least what the mode
			 * needs (reflect: more than each pad; cropping: more than
			 * the crop), checked at run time */
			int64_t need = !strcmp(mode, "reflect") ? (pads[0] > pads[1] ? pads[0] : pads[1]) + 1 : 1;
			if (add < 0 && 1 - add > need)
				need = 1 - add;
			if (ir_sym_need(c->g, d, need) && ir_sym_offset(c->g, d, add, &s.d[a]))
				continue;
			return fail(c, "axis %d has the run-time size %s, which is no symbol of its own that the "
				    "pads can be added to (--dim SYM=N fixes a symbol's size at compile time)", a,
				    dimstr(c, d));
		}
		if (d.k + add < 0)
			return fail(c, "pads %lld and %lld crop more than the %lld elements of axis %d",
				    (long long)pads[0], (long long)pads[1], (long long)d.k, a);
		if (strcmp(mode, "constant") && d.k == 0)
			return fail(c, "mode %s cannot pad the empty axis %d", mode, a);
		if (!strcmp(mode, "reflect") && (pads[0] >= d.k || pads[1] >= d.k) && d.k > 1)
			return fail(c, "reflect pads of %lld and %lld on axis %d need at most %lld (its size - 1)",
				    (long long)pads[0], (long long)pads[1], a, (long long)(d.k - 1));
		s.d[a] = ir_dim_const(d.k + add);
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

int infer_size(ictx *c)
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
		return infer_not_const(c, k), -1;
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

/* The axes Resize resizes, into ax[0 .. *na): those of attribute aa, else
 * all of X's. */
static int resize_axes(ictx *c, const ir_attr *aa, int *ax, int *na)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	for (int a = 0; a < r; a++)
		ax[a] = a;
	if (aa) {
		*na = aa->n;
		if (*na > r)
			return fail(c, "attribute 'axes' lists %d axes; X %s has %d", *na, shp(c, &x->shape), r);
		for (int i = 0; i < *na; i++) {
			ax[i] = norm_axis(aa->ints[i], r);
			if (ax[i] < 0)
				return fail(c, "axis %lld is out of range for rank %d", (long long)aa->ints[i], r);
			for (int j = 0; j < i; j++)
				if (ax[j] == ax[i])
					return fail(c, "axis %lld is listed twice", (long long)aa->ints[i]);
		}
	}
	return 0;
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
	ir_attr *aa = ir_attr_find(n, "axes");
	if (resize_axes(c, aa, ax, &na))
		return 1;
	int tf_crop = !strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "tf_crop_and_resize");
	int nroi = tf_crop ? const_reals(c, 1, roi, 2 * IR_MAX_RANK) : 0;
	int nsc = const_reals(c, 2, sc, IR_MAX_RANK);
	int nsz = in(c, 3) && ir_shape_const_numel(&in(c, 3)->shape) != 0 ? infer_const_ints(c, 3, sz, IR_MAX_RANK) : 0;
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
		if (nsz && !infer_mono_is_const(sz[i]) && keep)
			return fail(c, "size %s of axis %d is a run-time size, which keep_aspect_ratio_policy %s cannot "
				    "round to at compile time", mono(c, sz[i]), a, policy);
		if (nsz && infer_mono_is_const(sz[i]) && sz[i].k < 0)
			return fail(c, "size %lld of axis %d is negative", (long long)sz[i].k, a);
		if (!ir_dim_is_const(d)) {
			/* a run-time axis: sizes given (a symbol, another tensor's:
			 * F.interpolate(x, size=skip.shape[2:]), or a constant), the
			 * scale their quotient at run time (scale 0: emit_resize); or
			 * a scale, the size ONNX Runtime's float32 product gives
			 * (ir_sym_scale: floor(p D / q) for a multiple p / q of 1/64,
			 * else scale(D, s)), whatever the roi (ONNX Runtime's size
			 * does not read it) */
			if (nsz && !keep) {
				out->d[a] = sz[i];
				G->scale[a] = ir_dim_eq(sz[i], d) ? 1.0 : 0.0;
				if (sz[i].k < 1)
					return fail(c, "size %s of axis %d must be at least 1", mono(c, sz[i]), a);
				continue;
			}
			if (nsz)
				return fail(c, "axis %d has the run-time size %s, which keep_aspect_ratio_policy %s cannot "
					    "round to at compile time (--dim SYM=N fixes a symbol's size)", a, dimstr(c, d),
					    policy);
			if (!ir_sym_scale(c->g, d, (float)sc[i], &out->d[a]))
				return fail(c, "axis %d has the run-time size %s, which is no symbol of its own that a size "
					    "expression can scale by %g (--dim SYM=N fixes a symbol's size at compile time)",
					    a, dimstr(c, d), sc[i]);
			if (!ir_sym_need(c->g, out->d[a], 1))
				return fail(c, "axis %d of the run-time size %s resized by %g has no size at least 1 at any "
					    "size", a, dimstr(c, d), sc[i]);
			G->scale[a] = sc[i];
			continue;
		}
		if (nsz && d.k == 0 && sz[i].k != 0)
			return fail(c, "axis %d is empty and cannot be resized to %lld", a, (long long)sz[i].k);
		if (nsc) {
			/* the float32 product of in and scale, truncated, as ONNX
			 * Runtime (and ONNX's shape inference) computes it: the roi
			 * of tf_crop_and_resize does not enter, whatever the
			 * specification's formula says */
			if (!ir_sym_scale(c->g, d, (float)sc[i], &out->d[a]) || out->d[a].k > INFER_NUMEL_MAX)
				return fail(c, "axis %d: %lld * scale %g gives no valid size", a, (long long)d.k, sc[i]);
			G->scale[a] = sc[i];
		} else if (!infer_mono_is_const(sz[i])) {
			out->d[a] = sz[i];      /* a run-time size: the scale at run time */
			G->scale[a] = 0.0;
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
	G->by_scales = nsc > 0;
	return 0;
}

int infer_resize_geometry(ir_graph *g, ir_node *n, diag *D, infer_resize_geom *G)
{
	ictx cx = {g, n, D, g->A, 0};
	ir_shape s;
	return resize_geometry(&cx, G, &s);
}

int infer_resize(ictx *c)
{
	infer_resize_geom G;
	ir_shape s;
	if (need_f32(c, 0) || resize_geometry(c, &G, &s))
		return 1;
	set_out(c, 0, DT_F32, &s);
	return 0;
}

int infer_gridsample(ictx *c)
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

int infer_roialign(ictx *c)
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
		if (st[i] < 1 || dil[i] < 1 || pads[i] < 0 || pads[nsp + i] < 0)
			return -1;
	const char *ap = ir_attr_string((ir_node *)n, "auto_pad", "NOTSET");
	int ceil_mode = (int)ir_attr_int((ir_node *)n, "ceil_mode", 0);
	int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	for (int i = 0; i < nsp; i++) {
		int64_t d = x->shape.d[2 + i].k, span = dil[i] * (k[i] - 1) + 1;
		if (!ir_dim_is_const(x->shape.d[2 + i])) {
			/* a run-time size: pads that do not depend on it (SAME at
			 * stride 1 pads span - 1), a last window never dropped;
			 * the output size is a size expression (infer_pool) */
			if (same && st[i] != 1) {
				pads[i] = pads[nsp + i] = 0;    /* rt_same_pad at run time */
				ysp[i] = -1;
				continue;
			}
			if (same) {
				pads[i] = !strcmp(ap, "SAME_UPPER") ? (span - 1) / 2 : span - 1 - (span - 1) / 2;
				pads[nsp + i] = span - 1 - pads[i];
			} else if (!strcmp(ap, "VALID")) {
				pads[i] = pads[nsp + i] = 0;
			}
			if (ceil_mode && pads[nsp + i] > span - st[i])
				return -1;
			ysp[i] = -1;
			continue;
		}
		if (same) {
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
		return arena_printf(c->A, " (axis %d has the run-time size %s; over a run-time size cellc lays "
				    "out no ceil_mode window that could start in the end padding%s%s%s)", a, dimstr(c, d),
				    i >= 0 && ir_sym_free(root, i) ? ": --dim " : "",
				    i >= 0 && ir_sym_free(root, i) ? root->syms[i] : "",
				    i >= 0 && ir_sym_free(root, i) ? "=N compiles it for one size" : "");
	}
	return "";
}

int infer_pool(ictx *c)
{
	ir_value *x = in(c, 0);
	if (c->n->op == OP_MAXPOOL && is_q8(x->dtype)) {
		if (c->n->nout > 1 && c->n->out[1])
			return fail(c, "the Indices output is computed for f32 X only, not %s", ir_dtype_name(x->dtype));
	} else if (need_real(c, 0)) {
		return 1;
	}
	if (x->shape.rank < 3)
		return fail(c, "X must be [N, C, D1, ...] (rank 3 or more), not %s", shp(c, &x->shape));
	ir_shape s = x->shape;
	if (c->n->op == OP_GLOBALAVGPOOL || c->n->op == OP_GLOBALMAXPOOL) {
		for (int a = 2; a < s.rank; a++)
			s.d[a] = ir_dim_const(1);
		set_out(c, 0, x->dtype, &s);
		return 0;
	}
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK], ysp[IR_MAX_RANK];
	if (infer_pool_geometry(c->n, k, st, pads, dil, ysp) < 0)
		return fail(c, "needs kernel_shape, strides, dilations and pads with one value per spatial axis "
			    "(pads two), positive (pads not negative), and windows that fit X %s%s", shp(c, &x->shape),
			    spatial_sym_hint(c, x));
	int nsp = s.rank - 2;
	for (int a = 2; a < s.rank; a++) {
		if (ysp[a - 2] >= 0) {
			s.d[a] = ir_dim_const(ysp[a - 2]);
			continue;
		}
		/* a run-time size D: floor((D + P - span + (ceil_mode ? stride - 1 : 0)) / stride) + 1
		 * windows, for D + P >= span (checked at run time) */
		int i = a - 2;
		if (infer_pads_at_run_time(c->n, i)) {
			/* SAME at a stride above 1: ceil(D / s) windows */
			if (!ir_sym_floor(c->g, x->shape.d[a], 1, st[i] - 1, st[i], &s.d[a]))
				return fail(c, "spatial axis %d of X has the run-time size %s, which is no symbol of its "
					    "own that a size expression can be made of%s", a, dimstr(c, x->shape.d[a]),
					    spatial_sym_hint(c, x));
			continue;
		}
		int64_t span = dil[i] * (k[i] - 1) + 1, P = pads[i] + pads[nsp + i];
		int64_t up = ir_attr_int(c->n, "ceil_mode", 0) ? st[i] - 1 : 0;
		if (!ir_sym_need(c->g, x->shape.d[a], span - P > 1 ? span - P : 1) ||
		    !ir_sym_floor(c->g, x->shape.d[a], 1, P - span + up + st[i], st[i], &s.d[a]))
			return fail(c, "spatial axis %d of X has the run-time size %s, which is no symbol of its own "
				    "that a size expression can be made of%s", a, dimstr(c, x->shape.d[a]),
				    spatial_sym_hint(c, x));
	}
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
	if (same_ty(c, k))
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

int infer_layernorm(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	if (need_real(c, 0))
		return 1;
	for (int k = 1; x->dtype == DT_F64 && k < 3 && k < c->n->nout; k++)
		if (c->n->out[k])
			return fail(c, "output %d (%s) of a float64 LayerNormalization is computed in float32 "
				    "(stash_type), which cellc does not do: only Y is supported in float64",
				    k, k == 1 ? "Mean" : "InvStdDev");
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
	set_out(c, 0, x->dtype, &x->shape);
	set_out(c, 1, DT_F32, &st);
	set_out(c, 2, DT_F32, &st);
	return 0;
}

int infer_batchnorm(ictx *c)
{
	ir_value *x = in(c, 0);
	if (c->n->nout > 1 && !ir_attr_int(c->n, "training_mode", 0))
		return fail(c, "has %d outputs; in inference mode (training_mode 0) BatchNormalization has one",
			    c->n->nout);
	if (ir_attr_int(c->n, "training_mode", 0) ? need_f32(c, 0) : need_real(c, 0))
		return 1;
	if (x->shape.rank < 2)
		return fail(c, "X must be [N, C, ...], not %s", shp(c, &x->shape));
	for (int k = 1; k < 5; k++) {
		ir_value *v = in(c, k);
		if (same_ty(c, k))
			return 1;
		if (v->shape.rank != 1 || !ir_dim_eq(v->shape.d[0], x->shape.d[1]))
			return fail(c, "input %d ('%s') %s must be [C] = [%s]", k, v->name, shp(c, &v->shape),
				    dimstr(c, x->shape.d[1]));
	}
	set_out(c, 0, x->dtype, &x->shape);
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

int infer_dropout(ictx *c)
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
int infer_random(ictx *c)
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
