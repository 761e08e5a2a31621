/* infer_shape_misc.c: infer_node's rules (infer_shape.c dispatches) for the
 * remaining operator families: indexing, masks, counting and generators
 * (infer_misc), class-index losses, layout and ConvTranspose, Det, Einsum
 * and the signal operators, LSTM/GRU/RNN, the training optimisers and the
 * operators with data-dependent output lengths.  Same conventions as
 * infer_shape.c (infer.h); infer_shape.h has the context and helpers.
 */
#include "cells.h"
#include "cellrt.h"
#include "infer_shape.h"
#include "train.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- indexing, masks, counting, generators ------------------------------------------ */

/* A constant scalar input as a double (any numeric dtype); -1 after reporting. */
static int const_scalar(ictx *c, int k, double *v)
{
	ir_value *x = in(c, k);
	if (!infer_is_const(x) || x->sym)
		return infer_not_const(c, k), -1;
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

/* Range: as many elements as constant start, limit and delta give, or
 * limit - start where the shape gives the limit. */
static int infer_range(ictx *c)
{
	ir_value *x = in(c, 0);
	ir_shape s = x->shape;
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
		set_out(c, 0, x->dtype, &s);
		return 0;
	}
	for (int k = 0; k < 3; k++)
		if (same_ty(c, k) || const_scalar(c, k, &v[k]))
			return 1;
	if (!(ty_class(x->dtype) & TY_NUM) || v[2] == 0)
		return fail(c, "Range needs numeric scalars and a nonzero delta");
	s.rank = 1;
	s.d[0] = ir_dim_const(infer_range_count(v[0], v[1], v[2]));
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* TopK: K from the shape (the axis' whole length) or a constant K that the
 * axis has room for; values and their int64 indices. */
static int infer_topk(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
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

/* Tile: repeats may be sizes known at run time (x.repeat(1, T, 1) of a
 * [B, 1, H] state): each axis becomes its size times its repeat. */
static int infer_tile(ictx *c)
{
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
	ir_dim rep[IR_MAX_RANK];
	int m = infer_const_ints(c, 1, rep, IR_MAX_RANK);
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
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* One case per operator (which ones: infer_rule): a table; the longest
 * rules are functions of their own, above it. */
int infer_misc(ictx *c)
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
	case OP_RANGE:
		return infer_range(c);
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
	case OP_TOPK:
		return infer_topk(c);
	case OP_TILE:
		return infer_tile(c);
	default: UNREACHABLE();
	}
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* ---- class-index losses ------------------------------------------------------------ */

int infer_loss(ictx *c)
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

/* The least input size d at which ONNX Runtime accepts output_shape `out`
 * (span, stride st): st d + span > out, for any total padding
 * (conv_transpose_attributes.h: "Explicit output_shape is inconsistent
 * with input spatial dimensions"). */
static int64_t convt_least_input(int64_t out, int64_t span, int64_t st)
{
	return out - span >= 0 ? (out - span) / st + 1 : 1;
}

int infer_convt_pads_at_run_time(const ir_node *n, int a)
{
	const ir_value *x = n->in[0];
	return ir_attr_find((ir_node *)n, "output_shape") && a >= 0 && a < x->shape.rank - 2 &&
	       !ir_dim_is_const(x->shape.d[2 + a]);
}

int infer_convt_geometry(const ir_node *n, infer_convt_geom *G, char *why, size_t whylen)
{
	const ir_value *x = n->in[0], *w = n->in[1];
	int nsp = x->shape.rank - 2;
	char none[8];
	if (!why)
		why = none, whylen = sizeof none;
	ir_attr *a;
	for (int i = 0; i < nsp; i++) {
		G->k[i] = w->shape.d[2 + i].k;
		G->st[i] = G->dil[i] = 1;
		G->opad[i] = G->pads[i] = G->pads[nsp + i] = 0;
	}
	const char *names[] = {"strides", "dilations", "pads", "output_padding"};
	int64_t *dst[] = {G->st, G->dil, G->pads, G->opad};
	for (int j = 0; j < 4; j++)
		if ((a = ir_attr_find((ir_node *)n, names[j]))) {
			if (a->n != (j == 2 ? 2 * nsp : nsp))
				return snprintf(why, whylen, "attribute '%s' has %d values; X %s needs %d", names[j], a->n,
						ir_shape_str(n->graph->A, n->graph, &x->shape), j == 2 ? 2 * nsp : nsp), -1;
			for (int i = 0; i < a->n; i++)
				dst[j][i] = a->ints[i];
		}
	ir_attr *os = ir_attr_find((ir_node *)n, "output_shape");
	if (os && os->n != nsp && os->n != nsp + 2)
		return snprintf(why, whylen, "attribute 'output_shape' has %d values; X %s needs %d (or %d)", os->n,
				ir_shape_str(n->graph->A, n->graph, &x->shape), nsp, nsp + 2), -1;
	const char *ap = ir_attr_string((ir_node *)n, "auto_pad", "NOTSET");
	int upper = !strcmp(ap, "SAME_UPPER"), same = upper || !strcmp(ap, "SAME_LOWER");
	for (int i = 0; i < nsp; i++) {
		int64_t st = G->st[i], dil = G->dil[i], opad = G->opad[i], span = dil * (G->k[i] - 1) + 1;
		int64_t d = x->shape.d[2 + i].k;
		if (st < 1 || dil < 1)
			return snprintf(why, whylen, "strides and dilations must be at least 1"), -1;
		if (opad < 0 || opad >= (st > dil ? st : dil))
			return snprintf(why, whylen, "output_padding %lld of spatial axis %d must be below its stride or "
					"its dilation (%lld), as ONNX Runtime requires", (long long)opad, i,
					(long long)(st > dil ? st : dil)), -1;
		if (os) {
			/* the size given, the padding st (D - 1) + opad + span - out
			 * (none below 0) split as rt_split_pad does: computed from
			 * D per call over a run-time size (rt_convt_pad) */
			int64_t out = os->ints[os->n - nsp + i], least = convt_least_input(out, span, st);
			G->ysp[i] = out;
			G->least[i] = least;
			if (out < 1)
				return snprintf(why, whylen, "output_shape %lld of spatial axis %d must be at least 1",
						(long long)out, i), -1;
			if (!ir_dim_is_const(x->shape.d[2 + i]))
				continue;
			if (d < least)
				return snprintf(why, whylen, "output_shape %lld of spatial axis %d needs an input size of "
						"at least %lld (stride %lld, window span %lld): ONNX Runtime refuses %lld",
						(long long)out, i, (long long)least, (long long)st, (long long)span,
						(long long)d), -1;
			G->pads[i] = rt_split_pad(st * (d - 1) + opad + span - out, upper, 0);
			G->pads[nsp + i] = rt_split_pad(st * (d - 1) + opad + span - out, upper, 1);
			continue;
		}
		G->least[i] = 1;
		if (same) {
			/* the output D st: padding opad + span - st, which does not
			 * depend on D (a run-time size too) */
			G->pads[i] = rt_split_pad(opad + span - st, upper, 0);
			G->pads[nsp + i] = rt_split_pad(opad + span - st, upper, 1);
		}
		if (!ir_dim_is_const(x->shape.d[2 + i])) {
			G->ysp[i] = -1;         /* st D + off, a size expression (infer_convt) */
			continue;
		}
		G->ysp[i] = same ? d * st : st * (d - 1) + opad + span - G->pads[i] - G->pads[nsp + i];
		if (G->ysp[i] < 1)
			return snprintf(why, whylen, "spatial axis %d of X %s would have the size %lld", i,
					ir_shape_str(n->graph->A, n->graph, &x->shape), (long long)G->ysp[i]), -1;
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

/* ConvTranspose: [N, M, ..] with the spatial sizes of infer_convt_geometry. */
static int infer_convt(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
	ir_value *w = in(c, 1), *b = in(c, 2);
	if (need_f32(c, 0) || need_f32(c, 1) || need_f32(c, 2))
		return 1;
	int64_t group = ir_attr_int(n, "group", 1);
	if (r >= 3 && w->shape.rank == r && !ir_dim_is_const(x->shape.d[1]) && ir_dim_is_const(w->shape.d[0]) &&
	    infer_unify(c, x->shape.d[1], w->shape.d[0], "the channels of X are W's first axis"))
		return 1;
	if (r < 3 || w->shape.rank != r || !ir_dim_is_const(w->shape.d[1]) || !ir_dim_eq(w->shape.d[0], x->shape.d[1]) ||
	    !ir_dim_is_const(x->shape.d[1]) || x->shape.d[1].k % group)
		return fail(c, "X %s and W %s must be [N, C, D..] and [C, M/group, K..]", shp(c, &x->shape),
			    shp(c, &w->shape));
	int64_t m = w->shape.d[1].k * group;
	if (b && (b->shape.rank != 1 || !ir_dim_eq(b->shape.d[0], ir_dim_const(m))))
		return fail(c, "B %s must be [%lld]", shp(c, &b->shape), (long long)m);
	infer_convt_geom G;
	char why[256];
	if (infer_convt_geometry(n, &G, why, sizeof why) < 0)
		return fail(c, "%s", why);
	s.d[1] = ir_dim_const(m);
	for (int a = 2; a < r; a++) {
		int i = a - 2, nsp = r - 2;
		int64_t span = G.dil[i] * (G.k[i] - 1) + 1;
		if (G.ysp[i] >= 0) {
			/* output_shape over a run-time size: ONNX Runtime's least input */
			s.d[a] = ir_dim_const(G.ysp[i]);
			if (!ir_sym_need(c->g, x->shape.d[a], G.least[i]))
				return fail(c, "spatial axis %d of X has the run-time size %s, which output_shape %lld needs "
					    "to be at least %lld (as ONNX Runtime requires) and is no symbol of its own that "
					    "can be held to it", a, dimstr(c, x->shape.d[a]), (long long)G.ysp[i],
					    (long long)G.least[i]);
			continue;
		}
		/* a run-time size D: st D + off, off = opad + span - st - pads
		 * (at least 1: D is held to its least value) */
		int64_t off = G.opad[i] + span - G.st[i] - G.pads[i] - G.pads[nsp + i];
		int64_t least = off >= 0 ? 1 : (1 - off + G.st[i] - 1) / G.st[i];
		if (!ir_sym_need(c->g, x->shape.d[a], least) || !ir_sym_floor(c->g, x->shape.d[a], G.st[i], off, 1, &s.d[a]))
			return fail(c, "spatial axis %d of X has the run-time size %s, which is no symbol of its own that a "
				    "size expression can be made of", a, dimstr(c, x->shape.d[a]));
	}
	set_out(c, 0, DT_F32, &s);
	return 0;
}

/* One case per operator (which ones: infer_rule): a table; the longest
 * rules are functions of their own, above it. */
int infer_layout(ictx *c)
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
	case OP_CONVTRANSPOSE:
		return infer_convt(c);
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

/* Einsum: the output labels' sizes, every label of one size in all operands. */
static int infer_einsum_shape(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	ir_shape s = x->shape;
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
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* MaxUnpool: the spatial sizes from output_shape, else from the pooling's geometry. */
static int infer_maxunpool(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
	ir_value *ix = in(c, 1), *os = in(c, 2);
	int64_t ysp[IR_MAX_RANK];
	if (need_f32(c, 0))
		return 1;
	if (ix->dtype != DT_I64 || !ir_shape_eq(&ix->shape, &x->shape) || r < 3)
		return fail(c, "X must be [N, C, D..] and I int64 of its shape");
	if (os) {
		if (!infer_is_const(os) || os->sym)
			return infer_not_const(c, 2);
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
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* DFT: the signal axis becomes dft_length long (len / 2 + 1 when onesided),
 * the last axis a complex pair. */
static int infer_dft(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
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
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* STFT: [batch, frames, frequencies, 2] from the frame length and step. */
static int infer_stft(ictx *c)
{
	ir_node *n = c->n;
	ir_value *x = in(c, 0);
	int r = x->shape.rank;
	ir_shape s = x->shape;
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
	set_out(c, 0, x->dtype, &s);
	return 0;
}

/* One case per operator (which ones: infer_rule): a table; the longest
 * rules are functions of their own, above it. */
int infer_linalg(ictx *c)
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
	case OP_EINSUM:
		return infer_einsum_shape(c);
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
	case OP_MAXUNPOOL:
		return infer_maxunpool(c);
	case OP_DFT:
		return infer_dft(c);
	case OP_STFT:
		return infer_stft(c);
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

/* ---- LSTM / GRU / RNN ---------------------------------------------------------- */

/* Input k must have exactly the shape want (described as spec, e.g. "[D, 4H, I]"). */
static int need_shape(ictx *c, int k, const char *tensor, const ir_shape *want, const char *spec)
{
	ir_value *v = in(c, k);
	if (!v || ir_shape_eq(&v->shape, want))
		return 0;
	/* two sizes the operator says are one (a batch axis the file leaves
	 * unnamed on two inputs, or fixed on one by the export) */
	for (int a = 0; v->shape.rank == want->rank && a < want->rank; a++)
		if (!ir_dim_eq(v->shape.d[a], want->d[a]) &&
		    infer_unify(c, v->shape.d[a], want->d[a], "%s axis %d is axis %d of %s", tensor, a, a, spec))
			return 1;
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

int infer_rnn(ictx *c)
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
int infer_optim(ictx *c)
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
int infer_datadep(ictx *c)
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
