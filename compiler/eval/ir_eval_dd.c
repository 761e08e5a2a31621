/* ir_eval_dd.c: the reference interpreter's operators whose output length
 * depends on the data: NonZero, Compress, Unique, NonMaxSuppression (their
 * entries in ev_ops, ir_eval_ops.c).
 *
 * Each output is the exact ONNX result, at its run-time length.  The IR
 * sizes such an output for a bound (ir_value.data_dep: shape.d[dd_axis] is
 * a capacity, ir_op_dd_output names the outputs) and the compiled kernel
 * writes the tensor packed at its actual dims, the length returned at run
 * time; that tensor is what these functions make.  No node reads such a
 * value once it is inferred (infer_node refuses it as an input: it can
 * only be a graph output), so nothing downstream sees the bound: validate.c
 * compares the outputs of two runs whole, the length included (a pass that
 * changed it is "another shape"), and eval_ref the oracle's tensor.
 *
 * Written from ops.def's rows and the ONNX operator specification, in
 * double, by plain loops (quadratic searches where a sort or a hash would
 * be faster); nothing from emit_ops.c or libcellrt. */
#include "ir_eval_ops.h"

#include <math.h>
#include <string.h>

/* NonZero: Y i64 [rank, n], column j the coordinates of X's j-th nonzero
 * element in row-major order. */
int ev_nonzero(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t cnt = 0;
	for (int64_t e = 0; e < X->n; e++)
		cnt += X->x[e] != 0;
	int64_t d[2] = {X->rank, cnt}, idx[IR_MAX_RANK] = {0}, j = 0;
	ev_tensor *Y = ev_new(r, DT_I64, 2, d);
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		if (X->x[e] == 0)
			continue;
		for (int a = 0; a < X->rank; a++)
			Y->x[a * cnt + j] = (double)idx[a];
		j++;
	}
	out[0] = Y;
	return 0;
}

/* Compress: the slices of X along axis (no axis: the elements of flattened
 * X) whose condition (bool [m]) is true; a condition shorter than the axis
 * counts as false past its end. */
int ev_compress(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *cond = in[1];
	ir_attr *aa = ir_attr_find(n, "axis");
	int a = aa ? (int)ev_norm_axis(aa->i, X->rank) : 0;
	if (aa && (a < 0 || a >= X->rank))
		return ev_stop(r, n, "Compress axis %lld of X of rank %d", (long long)aa->i, X->rank);
	int64_t outer = 1, len = aa ? X->d[a] : X->n, inner = 1, cnt = 0, d[IR_MAX_RANK];
	for (int i = 0; aa && i < X->rank; i++) {
		outer *= i < a ? X->d[i] : 1;
		inner *= i > a ? X->d[i] : 1;
	}
	if (cond->rank != 1 || cond->n > len)
		return ev_stop(r, n, "a condition of %lld for %lld slices", (long long)cond->n, (long long)len);
	for (int64_t j = 0; j < cond->n; j++)
		cnt += cond->x[j] != 0;
	int R = aa ? X->rank : 1;
	memcpy(d, X->d, sizeof d);
	d[aa ? a : 0] = cnt;
	ev_tensor *Y = ev_new(r, X->dt, R, d);
	int64_t e = 0;
	for (int64_t p = 0; p < outer; p++)
		for (int64_t j = 0; j < cond->n; j++)
			if (cond->x[j] != 0)
				for (int64_t s = 0; s < inner; s++)
					Y->x[e++] = X->x[(p * len + j) * inner + s];
	out[0] = Y;
	return 0;
}

/* ---- Unique ---------------------------------------------------------------------------------- */

/* The slices Unique compares: cnt of them, slice j the elements X[p, j, s]
 * for p < outer, s < inner in that order (flattened X: outer = inner = 1). */
typedef struct slices {
	const ev_tensor *X;
	int64_t outer, cnt, inner;
} slices;

static double slice_at(const slices *S, int64_t j, int64_t k)
{
	return S->X->x[((k / S->inner) * S->cnt + j) * S->inner + k % S->inner];
}

/* <0, 0, >0 as slice i is before, equal to or after slice j, element by
 * element (numpy's order of unique with an axis). */
static int slice_cmp(const slices *S, int64_t i, int64_t j)
{
	for (int64_t k = 0; k < S->outer * S->inner; k++) {
		double a = slice_at(S, i, k), b = slice_at(S, j, k);
		if (a != b)
			return a < b ? -1 : 1;
	}
	return 0;
}

/* Unique: Y the distinct slices (sorted ascending, the default, or in the
 * order they first occur), indices where each first occurs, inverse_indices
 * the position in Y of every slice of X, counts how often each occurs. */
int ev_unique(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	ir_attr *aa = ir_attr_find(n, "axis");
	int a = aa ? (int)ev_norm_axis(aa->i, X->rank) : 0;
	if (aa && (a < 0 || a >= X->rank))
		return ev_stop(r, n, "Unique axis %lld of X of rank %d", (long long)aa->i, X->rank);
	slices S = {X, 1, aa ? X->d[a] : X->n, 1};
	for (int i = 0; aa && i < X->rank; i++) {
		S.outer *= i < a ? X->d[i] : 1;
		S.inner *= i > a ? X->d[i] : 1;
	}
	/* first[u]: the slice where distinct value u first occurs; of[j]: the
	 * distinct value of slice j, both in the order of first occurrence */
	int64_t *first = arena_array(r->A, (size_t)S.cnt + 1, sizeof *first);
	int64_t *of = arena_array(r->A, (size_t)S.cnt + 1, sizeof *of), nu = 0;
	for (int64_t j = 0; j < S.cnt; j++) {
		int64_t u = 0;
		while (u < nu && slice_cmp(&S, first[u], j) != 0)
			u++;
		if (u == nu)
			first[nu++] = j;
		of[j] = u;
	}
	/* pos[u]: u's place in Y, by the number of distinct values before it */
	int64_t *pos = arena_array(r->A, (size_t)nu + 1, sizeof *pos);
	int sorted = ir_attr_int(n, "sorted", 1) != 0;
	for (int64_t u = 0; u < nu; u++) {
		pos[u] = sorted ? 0 : u;
		for (int64_t v = 0; sorted && v < nu; v++)
			pos[u] += slice_cmp(&S, first[v], first[u]) < 0;
	}
	int64_t d[IR_MAX_RANK];
	memcpy(d, X->d, sizeof d);
	d[a] = nu;
	ev_tensor *Y = ev_new(r, X->dt, aa ? X->rank : 1, d), *I = ev_new(r, DT_I64, 1, &nu);
	ev_tensor *V = ev_new(r, DT_I64, 1, &S.cnt), *C = ev_new(r, DT_I64, 1, &nu);
	for (int64_t u = 0; u < nu; u++) {
		I->x[pos[u]] = (double)first[u];
		for (int64_t k = 0; k < S.outer * S.inner; k++)
			Y->x[((k / S.inner) * nu + pos[u]) * S.inner + k % S.inner] = slice_at(&S, first[u], k);
	}
	for (int64_t j = 0; j < S.cnt; j++) {
		V->x[j] = (double)pos[of[j]];
		C->x[pos[of[j]]] += 1;
	}
	ev_tensor *res[4] = {Y, I, V, C};
	for (int k = 0; k < n->nout && k < 4; k++)
		out[k] = res[k];
	return 0;
}

/* ---- NonMaxSuppression ------------------------------------------------------------------------ */

/* Box j of batch b as its least and greatest y and x: [y1, x1, y2, x2] of
 * either diagonal (center_point_box 0) or [x_center, y_center, width,
 * height] (1). */
static void box_of(const ev_tensor *B, int64_t b, int64_t j, int center, double *y0, double *x0, double *y1, double *x1)
{
	const double *v = B->x + (b * B->d[1] + j) * 4;
	if (center) {
		*x0 = v[0] - v[2] / 2;
		*x1 = v[0] + v[2] / 2;
		*y0 = v[1] - v[3] / 2;
		*y1 = v[1] + v[3] / 2;
	} else {
		*y0 = fmin(v[0], v[2]);
		*y1 = fmax(v[0], v[2]);
		*x0 = fmin(v[1], v[3]);
		*x1 = fmax(v[1], v[3]);
	}
}

/* Intersection over union of boxes i and j of batch b; 0 when either has no
 * area. */
static double iou(const ev_tensor *B, int64_t b, int64_t i, int64_t j, int center)
{
	double ay0, ax0, ay1, ax1, by0, bx0, by1, bx1;
	box_of(B, b, i, center, &ay0, &ax0, &ay1, &ax1);
	box_of(B, b, j, center, &by0, &bx0, &by1, &bx1);
	double ea = (ay1 - ay0) * (ax1 - ax0), eb = (by1 - by0) * (bx1 - bx0);
	if (ea <= 0 || eb <= 0)
		return 0;
	double h = fmin(ay1, by1) - fmax(ay0, by0), w = fmin(ax1, bx1) - fmax(ax0, bx0);
	double inter = h > 0 && w > 0 ? h * w : 0;
	return inter / (ea + eb - inter);
}

/* NonMaxSuppression: per batch and class, the boxes taken greedily by
 * descending score (the lower index first among equal scores), a box
 * dropped whose IOU with one taken before exceeds iou_threshold (input 3,
 * default 0) or whose score is not above score_threshold (input 4, when
 * given), at most max_output_boxes_per_class (input 2, default 0) of them;
 * rows (batch, class, box) in that order. */
int ev_nms(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *B = in[0], *Sc = in[1];
	const ev_tensor *M = n->nin > 2 ? in[2] : NULL, *It = n->nin > 3 ? in[3] : NULL, *St = n->nin > 4 ? in[4] : NULL;
	int center = (int)ir_attr_int(n, "center_point_box", 0);
	if (B->rank != 3 || B->d[2] != 4 || Sc->rank != 3 || Sc->d[0] != B->d[0] || Sc->d[2] != B->d[1])
		return ev_stop(r, n, "boxes not [batches, boxes, 4] or scores not [batches, classes, boxes]");
	int64_t nb = B->d[0], nc = Sc->d[1], nbox = B->d[1], most = M ? ev_ival(M, 0) : 0, cnt = 0;
	double ithr = It ? It->x[0] : 0;
	int64_t *sel = arena_array(r->A, (size_t)(nb * nc * nbox) * 3 + 1, sizeof *sel);
	unsigned char *done = arena_array(r->A, (size_t)nbox + 1, 1);
	int64_t *taken = arena_array(r->A, (size_t)nbox + 1, sizeof *taken);
	for (int64_t b = 0; b < nb; b++)
		for (int64_t c = 0; c < nc; c++) {
			const double *s = Sc->x + (b * nc + c) * nbox;
			int64_t nt = 0;
			memset(done, 0, (size_t)nbox);
			while (nt < most) {
				int64_t best = -1;      /* the best box not looked at yet */
				for (int64_t j = 0; j < nbox; j++)
					if (!done[j] && (!St || s[j] > St->x[0]) && (best < 0 || s[j] > s[best]))
						best = j;
				if (best < 0)
					break;
				done[best] = 1;
				int keep = 1;
				for (int64_t q = 0; q < nt && keep; q++)
					keep = !(iou(B, b, taken[q], best, center) > ithr);
				if (!keep)
					continue;
				taken[nt++] = best;
				sel[cnt * 3] = b;
				sel[cnt * 3 + 1] = c;
				sel[cnt * 3 + 2] = best;
				cnt++;
			}
		}
	int64_t d[2] = {cnt, 3};
	ev_tensor *Y = ev_new(r, DT_I64, 2, d);
	for (int64_t e = 0; e < 3 * cnt; e++)
		Y->x[e] = (double)sel[e];
	out[0] = Y;
	return 0;
}
