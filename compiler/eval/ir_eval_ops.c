/* ir_eval_ops.c: the reference interpreter's operators beyond its core
 * (ir_eval.c), one function each, listed in the table ev_ops at the end:
 * convolutions and pools, padding, normalisations, Dropout, arg-reductions
 * and TopK, indexing (GatherElements, Scatter*, GatherND, OneHot, Trilu,
 * CumSum), losses, quantization and integer products, Det and Einsum,
 * sampling (Resize, GridSample, RoiAlign), signals (DFT, STFT), LRN, MVN,
 * ReverseSequence, MaxUnpool, the training optimisers, TfIdfVectorizer,
 * the window generators and MelWeightMatrix, the training gradients
 * (ConvGrad, PadGrad, ClassLossGrad) and MatrixExp.  The operators whose
 * output length depends on the data are in ir_eval_dd.c.
 *
 * Each is written from its row of ops.def and the ONNX operator
 * specification, in double, by loops over concrete indices (one output
 * element at a time where that reads most plainly); attributes are read in
 * the form the ONNX loader normalised them to (onnx_node.c: Pad's pads and
 * value are inputs, TopK's k is an input).  Nothing here comes from a pass,
 * an emitter or libcellrt.  Operators whose result depends on random draws
 * (the random generators, Bernoulli, a training Dropout) stop the run with
 * the reason, never a guess: no reference can reproduce a draw.
 *
 * Legend: N batch, C channels, M output channels (Conv), G groups, D a
 * spatial size, K a kernel size, o an output position, k a kernel position. */
#include "ir_eval_ops.h"

#include <math.h>
#include <string.h>

/* ---- helpers ----------------------------------------------------------------------------- */

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* The sizes before and after axis a of x. */
static void around(const ev_tensor *x, int a, int64_t *outer, int64_t *inner)
{
	*outer = prod(x->d, a);
	*inner = prod(x->d + a + 1, x->rank - a - 1);
}

/* An INTS attribute of cnt values, or def for each when absent. */
static void ints_or(const ir_node *n, const char *name, int cnt, int64_t def, int64_t *v)
{
	ir_attr *a = ir_attr_find(n, name);
	for (int i = 0; i < cnt; i++)
		v[i] = a && a->n == cnt ? a->ints[i] : def;
}

static ev_tensor *new_like(ev_run *r, ir_dtype dt, const ev_tensor *x) { return ev_new(r, dt, x->rank, x->d); }

/* ---- convolution and pooling ------------------------------------------------------------- */

/* The sliding-window geometry of a Conv or pool over X [N, C, D..]. */
typedef struct win {
	int nsp;                        /* spatial axes */
	int64_t k[IR_MAX_RANK];         /* kernel sizes */
	int64_t st[IR_MAX_RANK], dil[IR_MAX_RANK];
	int64_t pb[IR_MAX_RANK], pe[IR_MAX_RANK];       /* padding at the begin and the end */
	int64_t o[IR_MAX_RANK];         /* output sizes */
} win;

/* strides, dilations, pads and auto_pad as the specification defines them;
 * ceil_mode (pools): the last window may run past the end, unless it would
 * start in the end padding. */
static int window(ev_run *r, const ir_node *n, const ev_tensor *x, const int64_t *k, int ceil_mode, win *w)
{
	int nsp = x->rank - 2;
	int64_t p[2 * IR_MAX_RANK];
	if (nsp < 1)
		return ev_stop(r, n, "X of rank %d (needs [N, C, D..])", x->rank);
	w->nsp = nsp;
	ints_or(n, "strides", nsp, 1, w->st);
	ints_or(n, "dilations", nsp, 1, w->dil);
	ints_or(n, "pads", 2 * nsp, 0, p);
	const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
	int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
	for (int a = 0; a < nsp; a++) {
		int64_t D = x->d[2 + a], span = w->dil[a] * (k[a] - 1) + 1, st = w->st[a];
		w->k[a] = k[a];
		if (same) {
			w->o[a] = (D + st - 1) / st;
			int64_t need = (w->o[a] - 1) * st + span - D;
			need = need < 0 ? 0 : need;
			w->pb[a] = !strcmp(ap, "SAME_UPPER") ? need / 2 : need - need / 2;
			w->pe[a] = need - w->pb[a];
			continue;
		}
		w->pb[a] = strcmp(ap, "VALID") ? p[a] : 0;
		w->pe[a] = strcmp(ap, "VALID") ? p[nsp + a] : 0;
		int64_t len = D + w->pb[a] + w->pe[a] - span;
		if (len < 0) {
			w->o[a] = 0;
			continue;
		}
		w->o[a] = (ceil_mode ? (len + st - 1) / st : len / st) + 1;
		if (ceil_mode && (w->o[a] - 1) * st >= D + w->pb[a])
			w->o[a]--;
	}
	return 0;
}

/* The input coordinate of output o, kernel k on spatial axis a. */
static int64_t win_at(const win *w, int a, int64_t o, int64_t k) { return o * w->st[a] - w->pb[a] + k * w->dil[a]; }

/* The terms of Conv's sum, Y[n, m, o..] = B[m] + sum over c of group(m),
 * k.. of X[n, c, o st - pb + k dil] W[m, c, k..]: for every output element,
 * each channel c of its group and each kernel position inside X, in that
 * order, fn gets the offsets of the Y element, the X element and the W
 * element of the term.  Conv and its gradient (ConvGrad) read the one sum. */
typedef void (*conv_term_fn)(void *cx, int64_t yo, int64_t xo, int64_t wo);

static void conv_terms(const win *w, const ev_tensor *X, int64_t G, int64_t M, int64_t Cg, conv_term_fn fn,
		       void *cx)
{
	int nsp = w->nsp;
	int64_t isp = prod(X->d + 2, nsp), ksp = prod(w->k, nsp), osp = prod(w->o, nsp);
	for (int64_t b = 0; b < X->d[0]; b++)
		for (int64_t m = 0; m < M; m++) {
			int64_t grp = m / (M / G), oi[IR_MAX_RANK] = {0};
			for (int64_t e = 0; e < osp; e++, ev_next_index(oi, w->o, nsp)) {
				for (int64_t c = 0; c < Cg; c++) {
					int64_t ki[IR_MAX_RANK] = {0};
					for (int64_t q = 0; q < ksp; q++, ev_next_index(ki, w->k, nsp)) {
						int64_t off = 0, ok = 1;
						for (int a = 0; a < nsp && ok; a++) {
							int64_t i = win_at(w, a, oi[a], ki[a]);
							ok = i >= 0 && i < X->d[2 + a];
							off = off * X->d[2 + a] + i;
						}
						if (ok)
							fn(cx, (b * M + m) * osp + e, (b * X->d[1] + grp * Cg + c) * isp + off,
							   (m * Cg + c) * ksp + q);
					}
				}
			}
		}
}

/* Checks X and W of a Conv (or ConvGrad) against its group and sizes its window. */
static int conv_shapes(ev_run *r, const ir_node *n, const ev_tensor *X, const ev_tensor *W, win *w)
{
	if (W->rank != X->rank)
		return ev_stop(r, n, "W of rank %d for X of rank %d", W->rank, X->rank);
	int64_t G = ir_attr_int(n, "group", 1), M = W->d[0], Cg = W->d[1];
	if (G < 1 || X->d[1] != Cg * G || M % G)
		return ev_stop(r, n, "X's %lld channels do not match W and group %lld", (long long)X->d[1], (long long)G);
	return window(r, n, X, W->d + 2, 0, w);
}

typedef struct conv_cx {
	const ev_tensor *X, *W, *dY;
	ev_tensor *out;
} conv_cx;

static void conv_add(void *p, int64_t yo, int64_t xo, int64_t wo)
{
	conv_cx *c = p;
	c->out->x[yo] += c->X->x[xo] * c->W->x[wo];
}

/* Each term X[xo] W[wo] of Y[yo] gives dY[yo] W[wo] to dX[xo], dY[yo] X[xo] to dW[wo]. */
static void conv_grad_x(void *p, int64_t yo, int64_t xo, int64_t wo)
{
	conv_cx *c = p;
	c->out->x[xo] += c->dY->x[yo] * c->W->x[wo];
}

static void conv_grad_w(void *p, int64_t yo, int64_t xo, int64_t wo)
{
	conv_cx *c = p;
	c->out->x[wo] += c->dY->x[yo] * c->X->x[xo];
}

static int conv(ev_run *r, const ir_node *n, const ev_tensor *X, const ev_tensor *W, const ev_tensor *B, ir_dtype odt,
		ev_tensor **y)
{
	win w;
	if (conv_shapes(r, n, X, W, &w))
		return 1;
	int64_t G = ir_attr_int(n, "group", 1), M = W->d[0], Cg = W->d[1];
	int64_t od[IR_MAX_RANK] = {X->d[0], M};
	memcpy(od + 2, w.o, (size_t)w.nsp * sizeof *od);
	ev_tensor *Y = ev_new(r, odt, X->rank, od);
	int64_t osp = prod(w.o, w.nsp);
	for (int64_t e = 0; B && e < Y->n; e++)
		Y->x[e] = B->x[(e / osp) % M];
	conv_cx cx = {.X = X, .W = W, .out = Y};
	conv_terms(&w, X, G, M, Cg, conv_add, &cx);
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, Y->x[e]);
	*y = Y;
	return 0;
}

static int ev_conv(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	return conv(r, n, in[0], in[1], n->nin > 2 ? in[2] : NULL, n->out[0]->dtype, &out[0]);
}

/* ConvGrad (training; inputs X W dY, the Conv's group, strides, explicit
 * pads, dilations): the derivatives of Conv's sum (conv_terms) for the
 * weights dY gives its outputs: dX (wrt 0) or dW (wrt 1). */
static int ev_convgrad(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *W = in[1], *dY = in[2];
	int wrt = (int)ir_attr_int(n, "wrt", 0);
	if (dY->rank != X->rank)
		return ev_stop(r, n, "X, W and dY of ranks %d, %d and %d", X->rank, W->rank, dY->rank);
	win w;
	if (conv_shapes(r, n, X, W, &w))
		return 1;
	int64_t G = ir_attr_int(n, "group", 1), M = W->d[0], Cg = W->d[1];
	int same = dY->d[0] == X->d[0] && dY->d[1] == M;
	for (int a = 0; a < w.nsp; a++)
		same &= dY->d[2 + a] == w.o[a];
	if (!same)
		return ev_stop(r, n, "dY is not shaped like the Conv's output");
	ev_tensor *D = new_like(r, n->out[0]->dtype, wrt ? W : X);
	conv_cx cx = {.X = X, .W = W, .dY = dY, .out = D};
	conv_terms(&w, X, G, M, Cg, wrt ? conv_grad_w : conv_grad_x, &cx);
	for (int64_t e = 0; e < D->n; e++)
		D->x[e] = ev_as_type(D->dt, D->x[e]);
	out[0] = D;
	return 0;
}

/* x / 2 rounded down (a total padding below 0 is an output_padding). */
static int64_t floor_half(int64_t x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

/* ConvTranspose: every X[n, c, i..] W[c, m, k..] added at Y[n, m, i st - pb + k dil]
 * (the scatter form of the specification); the output size from
 * output_shape (pads then derived) or st (D - 1) + output_padding + span - pads. */
static int ev_convtranspose(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *W = in[1], *B = n->nin > 2 ? in[2] : NULL;
	int R = X->rank, nsp = R - 2;
	if (nsp < 1 || W->rank != R)
		return ev_stop(r, n, "X of rank %d, W of rank %d", R, W->rank);
	int64_t G = ir_attr_int(n, "group", 1), C = X->d[1], Mg = W->d[1], M = Mg * G, Cg = C / G;
	if (G < 1 || W->d[0] != C || C % G)
		return ev_stop(r, n, "X's %lld channels do not match W and group", (long long)C);
	int64_t st[IR_MAX_RANK], dil[IR_MAX_RANK], op[IR_MAX_RANK], p[2 * IR_MAX_RANK], os[IR_MAX_RANK];
	int64_t pb[IR_MAX_RANK], od[IR_MAX_RANK] = {X->d[0], M};
	ints_or(n, "strides", nsp, 1, st);
	ints_or(n, "dilations", nsp, 1, dil);
	ints_or(n, "output_padding", nsp, 0, op);
	ints_or(n, "pads", 2 * nsp, 0, p);
	ir_attr *osa = ir_attr_find(n, "output_shape");
	const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
	int upper = !strcmp(ap, "SAME_UPPER"), same = upper || !strcmp(ap, "SAME_LOWER");
	for (int a = 0; a < nsp; a++) {
		int64_t D = X->d[2 + a], span = dil[a] * (W->d[2 + a] - 1) + 1, full = st[a] * (D - 1) + op[a] + span;
		if (osa || same) {      /* total padding from the output size; SAME_UPPER puts less first */
			os[a] = osa && osa->n >= nsp ? osa->ints[osa->n - nsp + a] : D * st[a];
			pb[a] = upper ? floor_half(full - os[a]) : (full - os[a]) - floor_half(full - os[a]);
		} else {
			int valid = !strcmp(ap, "VALID");
			os[a] = full - (valid ? 0 : p[a] + p[nsp + a]);
			pb[a] = valid ? 0 : p[a];
		}
		od[2 + a] = os[a];
	}
	ev_tensor *Y = ev_new(r, n->out[0]->dtype, R, od);
	int64_t isp = prod(X->d + 2, nsp), ksp = prod(W->d + 2, nsp), osp = prod(od + 2, nsp);
	double *acc = arena_array(r->A, (size_t)(Y->n ? Y->n : 1), sizeof *acc);
	for (int64_t b = 0; b < X->d[0]; b++)
		for (int64_t c = 0; c < C; c++) {
			int64_t grp = c / Cg, ii[IR_MAX_RANK] = {0};
			for (int64_t e = 0; e < isp; e++, ev_next_index(ii, X->d + 2, nsp)) {
				double xv = X->x[(b * C + c) * isp + e];
				for (int64_t m = 0; m < Mg; m++) {
					int64_t ki[IR_MAX_RANK] = {0};
					for (int64_t q = 0; q < ksp; q++, ev_next_index(ki, W->d + 2, nsp)) {
						int64_t off = 0, ok = 1;
						for (int a = 0; a < nsp && ok; a++) {
							int64_t o = ii[a] * st[a] - pb[a] + ki[a] * dil[a];
							ok = o >= 0 && o < od[2 + a];
							off = off * od[2 + a] + o;
						}
						if (ok)
							acc[(b * M + grp * Mg + m) * osp + off] += xv * W->x[(c * Mg + m) * ksp + q];
					}
				}
			}
		}
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, acc[e] + (B ? B->x[(e / osp) % M] : 0));
	out[0] = Y;
	return 0;
}

/* MaxPool and AveragePool over kernel_shape windows; MaxPool's Indices are
 * flat indices into X (the spatial part column-major with storage_order 1);
 * AveragePool divides by the window's positions inside X, or inside the
 * padded X with count_include_pad. */
static int ev_pool(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	ir_attr *ka = ir_attr_find(n, "kernel_shape");
	int nsp = X->rank - 2;
	if (!ka || ka->n != nsp)
		return ev_stop(r, n, "kernel_shape missing or not of %d values", nsp);
	win w;
	if (window(r, n, X, ka->ints, (int)ir_attr_int(n, "ceil_mode", 0), &w))
		return 1;
	int is_max = n->op == OP_MAXPOOL, incl = (int)ir_attr_int(n, "count_include_pad", 0);
	int colmajor = (int)ir_attr_int(n, "storage_order", 0);
	int64_t od[IR_MAX_RANK] = {X->d[0], X->d[1]};
	memcpy(od + 2, w.o, (size_t)nsp * sizeof *od);
	ev_tensor *Y = ev_new(r, X->dt, X->rank, od), *I = NULL;
	if (is_max && n->nout > 1 && n->out[1])
		I = ev_new(r, DT_I64, X->rank, od);
	int64_t isp = prod(X->d + 2, nsp), ksp = prod(w.k, nsp), osp = prod(w.o, nsp);
	for (int64_t nc = 0; nc < X->d[0] * X->d[1]; nc++) {
		int64_t oi[IR_MAX_RANK] = {0};
		for (int64_t e = 0; e < osp; e++, ev_next_index(oi, w.o, nsp)) {
			double best = -INFINITY, sum = 0;
			int64_t at = -1, cnt = 0, cntpad = 0, ki[IR_MAX_RANK] = {0};
			for (int64_t q = 0; q < ksp; q++, ev_next_index(ki, w.k, nsp)) {
				int64_t off = 0, offc = 0, scale = 1, inside = 1, padded = 1;
				for (int a = 0; a < nsp; a++) {
					int64_t i = win_at(&w, a, oi[a], ki[a]), D = X->d[2 + a];
					inside &= i >= 0 && i < D;
					padded &= i >= -w.pb[a] && i < D + w.pe[a];
					off = off * D + i;
					offc += i * scale;
					scale *= D;
				}
				cntpad += padded;
				if (!inside)
					continue;
				double v = X->x[nc * isp + off];
				cnt++;
				sum += v;
				if (at < 0 || v > best) {
					best = v;
					at = colmajor ? offc : off;
				}
			}
			double v = is_max ? best : sum / (double)(incl ? cntpad : cnt);
			Y->x[nc * osp + e] = ev_as_type(Y->dt, v);
			if (I)
				I->x[nc * osp + e] = (double)(nc * isp + at);
		}
	}
	out[0] = Y;
	if (I)
		out[1] = I;
	return 0;
}

static int ev_globalpool(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t d[IR_MAX_RANK], sp = prod(X->d + 2, X->rank - 2);
	for (int i = 0; i < X->rank; i++)
		d[i] = i < 2 ? X->d[i] : 1;
	ev_tensor *Y = ev_new(r, X->dt, X->rank, d);
	for (int64_t nc = 0; nc < Y->n; nc++) {
		double s = 0, mx = -INFINITY;
		for (int64_t e = 0; e < sp; e++) {
			s += X->x[nc * sp + e];
			mx = fmax(mx, X->x[nc * sp + e]);
		}
		Y->x[nc] = ev_as_type(Y->dt, n->op == OP_GLOBALMAXPOOL ? mx : s / (double)sp);
	}
	out[0] = Y;
	return 0;
}

/* The offset in X [D..] (rank R) of the element Pad copies to output index
 * idx, pb[a] elements padded before axis a, in mode (constant, edge,
 * reflect, wrap); -1 where the constant fills it. */
static int64_t pad_source(const int64_t *D, int R, const int64_t *pb, const char *mode, const int64_t *idx)
{
	int64_t off = 0;
	for (int a = 0; a < R; a++) {
		int64_t i = idx[a] - pb[a];
		if (i < 0 || i >= D[a]) {
			if (!strcmp(mode, "edge")) {
				i = i < 0 ? 0 : D[a] - 1;
			} else if (!strcmp(mode, "reflect")) {
				while (D[a] > 1 && (i < 0 || i >= D[a]))
					i = i < 0 ? -i : 2 * (D[a] - 1) - i;
				i = D[a] > 1 ? i : 0;
			} else if (!strcmp(mode, "wrap")) {
				i = ((i % D[a]) + D[a]) % D[a];
			} else {
				return -1;
			}
		}
		off = off * D[a] + i;
	}
	return off;
}

/* Pad: data, pads [begins.., ends..] of the axes input's axes (default all),
 * constant_value; modes constant, edge, reflect, wrap. */
static int ev_pad(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *P = in[1], *V = n->nin > 2 ? in[2] : NULL, *A = n->nin > 3 ? in[3] : NULL;
	const char *mode = ir_attr_string(n, "mode", "constant");
	int64_t pb[IR_MAX_RANK] = {0}, d[IR_MAX_RANK], na = A ? A->n : X->rank;
	if (!P || P->n != 2 * na)
		return ev_stop(r, n, "pads of %lld values for %lld axes", P ? (long long)P->n : 0LL, (long long)na);
	if (!X->n && strcmp(mode, "constant"))
		return ev_stop(r, n, "Pad %s of an empty tensor", mode);
	for (int i = 0; i < X->rank; i++)
		d[i] = X->d[i];
	for (int64_t i = 0; i < na; i++) {
		int64_t a = A ? ev_norm_axis(ev_ival(A, i), X->rank) : i;
		if (a < 0 || a >= X->rank)
			return ev_stop(r, n, "Pad axis out of range");
		pb[a] = ev_ival(P, i);
		d[a] += ev_ival(P, i) + ev_ival(P, na + i);
		if (d[a] < 0)
			return ev_stop(r, n, "Pad crops axis %lld below nothing", (long long)a);
	}
	ev_tensor *Y = ev_new(r, X->dt, X->rank, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < Y->n; e++, ev_next_index(idx, d, X->rank)) {
		int64_t off = pad_source(X->d, X->rank, pb, mode, idx);
		Y->x[e] = off >= 0 && X->n ? X->x[off] : V ? V->x[0] : 0;
	}
	out[0] = Y;
	return 0;
}

/* PadGrad (training; inputs X dY, attributes pads [begins.., ends..] of
 * every axis and mode): the derivative of Pad's copies, each element of dY
 * added to the element of X that Pad copied there (pad_source; nothing for
 * the constant's positions).  X gives only its shape. */
static int ev_padgrad(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *dY = in[1];
	const char *mode = ir_attr_string(n, "mode", "constant");
	ir_attr *pa = ir_attr_find(n, "pads");
	int R = X->rank;
	if (!pa || pa->n != 2 * R || dY->rank != R)
		return ev_stop(r, n, "PadGrad without 2 pads per axis of X, or dY of another rank");
	for (int a = 0; a < R; a++)
		if (dY->d[a] != X->d[a] + pa->ints[a] + pa->ints[R + a])
			return ev_stop(r, n, "dY's axis %d is %lld long, not X's %lld padded by %lld and %lld", a,
				       (long long)dY->d[a], (long long)X->d[a], (long long)pa->ints[a],
				       (long long)pa->ints[R + a]);
	if (!X->n && dY->n && strcmp(mode, "constant"))
		return ev_stop(r, n, "PadGrad %s of an empty tensor", mode);
	ev_tensor *dX = new_like(r, n->out[0]->dtype, X);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < dY->n; e++, ev_next_index(idx, dY->d, R)) {
		int64_t off = pad_source(X->d, R, pa->ints, mode, idx);
		if (off >= 0)
			dX->x[off] += dY->x[e];
	}
	for (int64_t e = 0; e < dX->n; e++)
		dX->x[e] = ev_as_type(dX->dt, dX->x[e]);
	out[0] = dX;
	return 0;
}

/* ---- normalisations and Dropout ----------------------------------------------------------- */

/* BatchNormalization: per channel (axis 1) with the given statistics, or in
 * training_mode the batch's (biased variance) and the running ones updated. */
static int ev_batchnorm(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *S = in[1], *B = in[2], *Mn = in[3], *Vr = in[4];
	double eps = ir_attr_float(n, "epsilon", 1e-5f), mom = ir_attr_float(n, "momentum", 0.9f);
	int train = (int)ir_attr_int(n, "training_mode", 0);
	if (X->rank < 2)
		return ev_stop(r, n, "X of rank %d (needs [N, C, ..])", X->rank);
	int64_t C = X->d[1], outer = X->d[0], inner = prod(X->d + 2, X->rank - 2);
	ev_tensor *Y = new_like(r, X->dt, X), *RM = ev_new(r, Mn->dt, 1, &C), *RV = ev_new(r, Vr->dt, 1, &C);
	for (int64_t c = 0; c < C; c++) {
		double mean = Mn->x[c], var = Vr->x[c];
		if (train) {
			double s = 0, ss = 0, cnt = (double)(outer * inner);
			for (int64_t b = 0; b < outer; b++)
				for (int64_t i = 0; i < inner; i++)
					s += X->x[(b * C + c) * inner + i];
			s /= cnt;
			for (int64_t b = 0; b < outer; b++)
				for (int64_t i = 0; i < inner; i++) {
					double z = X->x[(b * C + c) * inner + i] - s;
					ss += z * z;
				}
			RM->x[c] = ev_as_type(RM->dt, mean * mom + s * (1 - mom));
			RV->x[c] = ev_as_type(RV->dt, var * mom + ss / cnt * (1 - mom));
			mean = s;
			var = ss / cnt;
		}
		for (int64_t b = 0; b < outer; b++)
			for (int64_t i = 0; i < inner; i++) {
				int64_t e = (b * C + c) * inner + i;
				Y->x[e] = ev_as_type(Y->dt, (X->x[e] - mean) / sqrt(var + eps) * S->x[c] + B->x[c]);
			}
	}
	out[0] = Y;
	if (train && n->nout > 1)
		out[1] = RM;
	if (train && n->nout > 2)
		out[2] = RV;
	return 0;
}

/* InstanceNormalization: statistics per (n, c) over the spatial axes. */
static int ev_instancenorm(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *S = in[1], *B = in[2];
	double eps = ir_attr_float(n, "epsilon", 1e-5f);
	if (X->rank < 2)
		return ev_stop(r, n, "X of rank %d (needs [N, C, ..])", X->rank);
	int64_t C = X->d[1], sp = prod(X->d + 2, X->rank - 2);
	ev_tensor *Y = new_like(r, X->dt, X);
	for (int64_t nc = 0; nc < X->d[0] * C; nc++) {
		const double *x = X->x + nc * sp;
		double s = 0, ss = 0;
		for (int64_t e = 0; e < sp; e++)
			s += x[e];
		s /= (double)sp;
		for (int64_t e = 0; e < sp; e++)
			ss += (x[e] - s) * (x[e] - s);
		ss /= (double)sp;
		for (int64_t e = 0; e < sp; e++)
			Y->x[nc * sp + e] = ev_as_type(Y->dt, (x[e] - s) / sqrt(ss + eps) * S->x[nc % C] + B->x[nc % C]);
	}
	out[0] = Y;
	return 0;
}

/* LayerNormalization over the axes axis.. (default -1); Scale and B
 * broadcast to those axes; Mean and InvStdDev keep X's rank with 1s there. */
static int ev_layernorm(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *S = in[1], *B = n->nin > 2 ? in[2] : NULL;
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", -1), X->rank);
	double eps = ir_attr_float(n, "epsilon", 1e-5f);
	if (a < 0 || a >= X->rank)
		return ev_stop(r, n, "LayerNormalization axis out of range");
	int64_t outer = prod(X->d, a), inner = prod(X->d + a, X->rank - a), sd[IR_MAX_RANK];
	for (int i = 0; i < X->rank; i++)
		sd[i] = i < a ? X->d[i] : 1;
	ev_tensor *Y = new_like(r, X->dt, X), *Mo = ev_new(r, DT_F32, X->rank, sd), *Io = ev_new(r, DT_F32, X->rank, sd);
	ev_tensor nd = {.rank = X->rank - a};   /* the normalised axes, for broadcasting Scale and B */
	if (S->rank > nd.rank || (B && B->rank > nd.rank))
		return ev_stop(r, n, "Scale or B of more axes than the normalised ones");
	memcpy(nd.d, X->d + a, (size_t)nd.rank * sizeof *nd.d);
	for (int64_t p = 0; p < outer; p++) {
		const double *x = X->x + p * inner;
		double s = 0, ss = 0;
		for (int64_t e = 0; e < inner; e++)
			s += x[e];
		s /= (double)inner;
		for (int64_t e = 0; e < inner; e++)
			ss += (x[e] - s) * (x[e] - s);
		double inv = 1 / sqrt(ss / (double)inner + eps);
		int64_t idx[IR_MAX_RANK] = {0};
		for (int64_t e = 0; e < inner; e++, ev_next_index(idx, nd.d, nd.rank)) {
			double v = (x[e] - s) * inv * S->x[ev_bcast_off(S, nd.rank, idx)];
			if (B)
				v += B->x[ev_bcast_off(B, nd.rank, idx)];
			Y->x[p * inner + e] = ev_as_type(Y->dt, v);
		}
		Mo->x[p] = ev_as_type(DT_F32, s);
		Io->x[p] = ev_as_type(DT_F32, inv);
	}
	out[0] = Y;
	if (n->nout > 1)
		out[1] = Mo;
	if (n->nout > 2)
		out[2] = Io;
	return 0;
}

/* Dropout: the identity with an all-true mask unless it trains (a
 * training_mode that is not a constant false, with a ratio above 0): those
 * draws cannot be reproduced, so the run stops. */
static int ev_dropout(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *P = n->nin > 1 ? in[1] : NULL, *T = n->nin > 2 ? in[2] : NULL;
	if (T && T->x[0] != 0 && (!P || P->x[0] != 0))
		return ev_noref(r, n, "a training Dropout draws a random mask: no reference can reproduce it");
	ev_tensor *Y = new_like(r, X->dt, X), *Mk = new_like(r, DT_BOOL, X);
	memcpy(Y->x, X->x, (size_t)X->n * sizeof *X->x);
	for (int64_t e = 0; e < X->n; e++)
		Mk->x[e] = 1;
	out[0] = Y;
	if (n->nout > 1)
		out[1] = Mk;
	return 0;
}

/* ---- along one axis: ArgMax, ArgMin, Hardmax, TopK, CumSum ---------------------------------- */

static int ev_argext(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 0), X->rank);
	int keep = (int)ir_attr_int(n, "keepdims", 1), last = (int)ir_attr_int(n, "select_last_index", 0);
	if (a < 0 || a >= X->rank)
		return ev_stop(r, n, "%s axis out of range", ir_op_name(n->op));
	int64_t outer, inner, m = X->d[a], d[IR_MAX_RANK];
	around(X, a, &outer, &inner);
	int R = 0;
	for (int i = 0; i < X->rank; i++)
		if (i != a || keep)
			d[R++] = i == a ? 1 : X->d[i];
	ev_tensor *Y = ev_new(r, DT_I64, R, d);
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++) {
			int64_t at = 0;
			for (int64_t k = 1; k < m; k++) {
				double v = X->x[(p * m + k) * inner + s], b = X->x[(p * m + at) * inner + s];
				int better = n->op == OP_ARGMAX ? v > b : v < b;
				if (better || (last && v == b))
					at = k;
			}
			Y->x[p * inner + s] = (double)at;
		}
	out[0] = Y;
	return 0;
}

static int ev_hardmax(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", -1), X->rank);
	int64_t outer, inner, m = X->d[a];
	around(X, a, &outer, &inner);
	ev_tensor *Y = new_like(r, X->dt, X);
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++) {
			int64_t at = 0;
			for (int64_t k = 1; k < m; k++)
				if (X->x[(p * m + k) * inner + s] > X->x[(p * m + at) * inner + s])
					at = k;
			if (m)
				Y->x[(p * m + at) * inner + s] = 1;
		}
	out[0] = Y;
	return 0;
}

/* TopK: the K largest (or smallest) along axis, in order, ties to the lower index. */
static int ev_topk(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", -1), X->rank), largest = (int)ir_attr_int(n, "largest", 1);
	int64_t K = ev_ival(in[1], 0), outer, inner, m = X->d[a], d[IR_MAX_RANK];
	if (K < 0 || K > m)
		return ev_stop(r, n, "TopK of %lld from %lld", (long long)K, (long long)m);
	around(X, a, &outer, &inner);
	memcpy(d, X->d, sizeof d);
	d[a] = K;
	ev_tensor *V = ev_new(r, X->dt, X->rank, d), *I = ev_new(r, DT_I64, X->rank, d);
	int64_t *ord = arena_array(r->A, (size_t)m + 1, sizeof *ord);
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++) {
			/* insertion sort of the indices: stable, so equal values keep index order */
			for (int64_t k = 0; k < m; k++) {
				double v = X->x[(p * m + k) * inner + s];
				int64_t j = k;
				for (; j > 0; j--) {
					double u = X->x[(p * m + ord[j - 1]) * inner + s];
					if (!(largest ? v > u : v < u))
						break;
					ord[j] = ord[j - 1];
				}
				ord[j] = k;
			}
			for (int64_t k = 0; k < K; k++) {
				V->x[(p * K + k) * inner + s] = X->x[(p * m + ord[k]) * inner + s];
				I->x[(p * K + k) * inner + s] = (double)ord[k];
			}
		}
	out[0] = V;
	out[1] = I;
	return 0;
}

static int ev_cumsum(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int a = (int)ev_norm_axis(ev_ival(in[1], 0), X->rank);
	int excl = (int)ir_attr_int(n, "exclusive", 0), rev = (int)ir_attr_int(n, "reverse", 0);
	if (a < 0 || a >= X->rank)
		return ev_stop(r, n, "CumSum axis out of range");
	int64_t outer, inner, m = X->d[a];
	around(X, a, &outer, &inner);
	ev_tensor *Y = new_like(r, X->dt, X);
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++) {
			double acc = 0;
			for (int64_t q = 0; q < m; q++) {
				int64_t k = rev ? m - 1 - q : q, e = (p * m + k) * inner + s;
				if (!excl)
					acc += X->x[e];
				Y->x[e] = ev_as_type(Y->dt, acc);
				if (excl)
					acc += X->x[e];
			}
		}
	out[0] = Y;
	return 0;
}

/* ---- indexing ---------------------------------------------------------------------------- */

/* Trilu: keeps j - i >= k (upper) or j - i <= k (lower) on the last two axes. */
static int ev_trilu(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t k = n->nin > 1 && in[1] ? ev_ival(in[1], 0) : 0;
	int upper = (int)ir_attr_int(n, "upper", 1);
	if (X->rank < 2)
		return ev_stop(r, n, "Trilu of rank %d", X->rank);
	int64_t Rw = X->d[X->rank - 2], Cl = X->d[X->rank - 1];
	ev_tensor *Y = new_like(r, X->dt, X);
	for (int64_t e = 0; e < X->n; e++) {
		int64_t j = e % Cl, i = (e / Cl) % Rw;
		Y->x[e] = (upper ? j - i >= k : j - i <= k) ? X->x[e] : 0;
	}
	out[0] = Y;
	return 0;
}

/* An index along an axis of size m (negative counts back); -1 if outside. */
static int64_t index_in(double v, int64_t m)
{
	int64_t j = (int64_t)v;
	j = j < 0 ? j + m : j;
	return j >= 0 && j < m ? j : -1;
}

static int ev_gatherelements(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 0), X->rank);
	int fits = a >= 0 && a < X->rank && I->rank == X->rank;
	for (int i = 0; fits && i < X->rank; i++)
		fits = i == a || I->d[i] <= X->d[i];
	if (!fits)
		return ev_stop(r, n, "GatherElements indices do not fit X");
	ev_tensor *Y = new_like(r, X->dt, I);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < I->n; e++, ev_next_index(idx, I->d, I->rank)) {
		int64_t off = 0, j = index_in(I->x[e], X->d[a]);
		if (j < 0)
			return ev_stop(r, n, "GatherElements index %lld out of range", (long long)ev_ival(I, e));
		for (int i = 0; i < X->rank; i++)
			off = off * X->d[i] + (i == a ? j : idx[i]);
		Y->x[e] = X->x[off];
	}
	out[0] = Y;
	return 0;
}

/* One update under a Scatter's reduction. */
static double scatter_one(const char *red, double old, double u)
{
	if (!strcmp(red, "add"))
		return old + u;
	if (!strcmp(red, "mul"))
		return old * u;
	if (!strcmp(red, "max"))
		return fmax(old, u);
	if (!strcmp(red, "min"))
		return fmin(old, u);
	return u;
}

static int ev_scatterelements(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1], *U = in[2];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 0), X->rank);
	const char *red = ir_attr_string(n, "reduction", "none");
	int fits = a >= 0 && a < X->rank && I->rank == X->rank && U->n == I->n;
	for (int i = 0; fits && i < X->rank; i++)
		fits = i == a || I->d[i] <= X->d[i];
	if (!fits)
		return ev_stop(r, n, "ScatterElements indices or updates do not fit X");
	ev_tensor *Y = new_like(r, X->dt, X);
	memcpy(Y->x, X->x, (size_t)X->n * sizeof *X->x);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < I->n; e++, ev_next_index(idx, I->d, I->rank)) {
		int64_t off = 0, j = index_in(I->x[e], X->d[a]);
		if (j < 0)
			return ev_stop(r, n, "ScatterElements index %lld out of range", (long long)ev_ival(I, e));
		for (int i = 0; i < X->rank; i++)
			off = off * X->d[i] + (i == a ? j : idx[i]);
		Y->x[off] = ev_as_type(Y->dt, scatter_one(red, Y->x[off], U->x[e]));
	}
	out[0] = Y;
	return 0;
}

/* The offset in X of the index tuple t[0..q) and the size of one slice. */
static int64_t tuple_off(const ev_tensor *X, const double *t, int64_t q, int64_t *slice)
{
	int64_t off = 0;
	for (int64_t i = 0; i < q; i++) {
		int64_t j = index_in(t[i], X->d[i]);
		if (j < 0)
			return -1;
		off = off * X->d[i] + j;
	}
	*slice = prod(X->d + q, X->rank - (int)q);
	return off * *slice;
}

static int ev_scatternd(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1], *U = in[2];
	const char *red = ir_attr_string(n, "reduction", "none");
	int64_t q = I->d[I->rank - 1], tuples = I->n / (q ? q : 1), slice;
	if (q > X->rank || U->n != tuples * prod(X->d + q, X->rank - (int)q))
		return ev_stop(r, n, "ScatterND index tuples of %lld for rank %d, or updates that do not fit",
			       (long long)q, X->rank);
	ev_tensor *Y = new_like(r, X->dt, X);
	memcpy(Y->x, X->x, (size_t)X->n * sizeof *X->x);
	for (int64_t t = 0; t < tuples; t++) {
		int64_t off = tuple_off(X, I->x + t * q, q, &slice);
		if (off < 0)
			return ev_stop(r, n, "ScatterND index out of range");
		for (int64_t s = 0; s < slice; s++)
			Y->x[off + s] = ev_as_type(Y->dt, scatter_one(red, Y->x[off + s], U->x[t * slice + s]));
	}
	out[0] = Y;
	return 0;
}

/* GatherND: Y[b.., t..] = X[b.., I[b.., t.., :]..] after batch_dims shared axes. */
static int ev_gathernd(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1];
	int bd = (int)ir_attr_int(n, "batch_dims", 0);
	int64_t q = I->d[I->rank - 1], d[IR_MAX_RANK];
	if (bd + q > X->rank || bd >= I->rank)
		return ev_stop(r, n, "GatherND of tuples of %lld after %d batch axes", (long long)q, bd);
	int R = 0;
	for (int i = 0; i < I->rank - 1; i++)
		d[R++] = I->d[i];
	for (int i = bd + (int)q; i < X->rank; i++)
		d[R++] = X->d[i];
	if (R > IR_MAX_RANK)
		return ev_stop(r, n, "GatherND result of rank %d", R);
	ev_tensor *Y = ev_new(r, X->dt, R, d);
	int64_t batch = prod(X->d, bd), per = prod(I->d + bd, I->rank - 1 - bd);
	ev_tensor xb = {.rank = X->rank - bd};        /* one batch element of X */
	memcpy(xb.d, X->d + bd, (size_t)xb.rank * sizeof *xb.d);
	int64_t xsz = prod(xb.d, xb.rank), e = 0;
	for (int64_t b = 0; b < batch; b++)
		for (int64_t t = 0; t < per; t++) {
			int64_t slice, off = tuple_off(&xb, I->x + (b * per + t) * q, q, &slice);
			if (off < 0)
				return ev_stop(r, n, "GatherND index out of range");
			for (int64_t s = 0; s < slice; s++)
				Y->x[e++] = X->x[b * xsz + off + s];
		}
	out[0] = Y;
	return 0;
}

/* OneHot: a new axis of depth; values[1] where it equals the index (negative
 * ones count back), values[0] elsewhere (an index outside: all values[0]). */
static int ev_onehot(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *I = in[0], *V = in[2];
	int64_t depth = (int64_t)in[1]->x[0], d[IR_MAX_RANK];
	int R = I->rank + 1, a = (int)ev_norm_axis(ir_attr_int(n, "axis", -1), R);
	if (a < 0 || a >= R || R > IR_MAX_RANK)
		return ev_stop(r, n, "OneHot axis out of range");
	for (int i = 0, k = 0; i < R; i++)
		d[i] = i == a ? depth : I->d[k++];
	ev_tensor *Y = ev_new(r, V->dt, R, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < Y->n; e++, ev_next_index(idx, d, R)) {
		int64_t off = 0;
		for (int i = 0; i < R; i++)
			if (i != a)
				off = off * d[i] + idx[i];
		int64_t j = (int64_t)I->x[off];
		j = j < 0 ? j + depth : j;
		Y->x[e] = V->x[j == idx[a] ? 1 : 0];
	}
	out[0] = Y;
	return 0;
}

static int ev_eyelike(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t k = ir_attr_int(n, "k", 0);
	if (X->rank != 2)
		return ev_stop(r, n, "EyeLike of rank %d", X->rank);
	ev_tensor *Y = new_like(r, n->out[0]->dtype, X);
	for (int64_t i = 0; i < X->d[0]; i++)
		if (i + k >= 0 && i + k < X->d[1])
			Y->x[i * X->d[1] + i + k] = 1;
	out[0] = Y;
	return 0;
}

/* DepthToSpace (DCR: depth split as [b, b, C'], CRD: [C', b, b]) and SpaceToDepth. */
static int ev_depthspace(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t b = ir_attr_int(n, "blocksize", 0);
	int crd = !strcmp(ir_attr_string(n, "mode", "DCR"), "CRD"), to_space = n->op == OP_DEPTHTOSPACE;
	if (X->rank != 4 || b < 1)
		return ev_stop(r, n, "%s of rank %d, blocksize %lld", ir_op_name(n->op), X->rank, (long long)b);
	int64_t N = X->d[0], C = X->d[1], H = X->d[2], W = X->d[3];
	int64_t d[4] = {N, to_space ? C / (b * b) : C * b * b, to_space ? H * b : H / b, to_space ? W * b : W / b};
	ev_tensor *Y = ev_new(r, X->dt, 4, d);
	int64_t Cs = to_space ? d[1] : C, Hs = to_space ? H : d[2], Ws = to_space ? W : d[3];  /* the depth side's [C', H, W] */
	for (int64_t nb = 0; nb < N; nb++)
		for (int64_t c = 0; c < Cs; c++)
			for (int64_t i = 0; i < b; i++)
				for (int64_t j = 0; j < b; j++)
					for (int64_t h = 0; h < Hs; h++)
						for (int64_t w = 0; w < Ws; w++) {
							int64_t cd = to_space && crd ? c * b * b + i * b + j : (i * b + j) * Cs + c;
							int64_t deep = ((nb * (Cs * b * b) + cd) * Hs + h) * Ws + w;
							int64_t flat = ((nb * Cs + c) * Hs * b + h * b + i) * Ws * b + w * b + j;
							if (to_space)
								Y->x[flat] = X->x[deep];
							else
								Y->x[deep] = X->x[flat];
						}
	out[0] = Y;
	return 0;
}

/* ---- losses ------------------------------------------------------------------------------ */

/* The loss of log-probabilities L [N, C, D..] at targets T [N, D..]:
 * -w[t] L[n, t, d..] reduced (mean: by the sum of the weights taken);
 * ignore_index targets count for nothing. */
static int class_loss(ev_run *r, const ir_node *n, const ev_tensor *L, const ev_tensor *T, const ev_tensor *Wt,
		      ev_tensor **out)
{
	const char *red = ir_attr_string(n, "reduction", "mean");
	ir_attr *ig = ir_attr_find(n, "ignore_index");
	int64_t C = L->d[1], N = L->d[0], sp = prod(L->d + 2, L->rank - 2);
	if (T->n != N * sp)
		return ev_stop(r, n, "%lld targets for %lld positions", (long long)T->n, (long long)(N * sp));
	ev_tensor *Y = strcmp(red, "none") ? ev_new(r, L->dt, 0, NULL) : new_like(r, L->dt, T);
	double sum = 0, wsum = 0;
	for (int64_t b = 0; b < N; b++)
		for (int64_t s = 0; s < sp; s++) {
			int64_t t = ev_ival(T, b * sp + s);
			double l = 0, w = 0;
			if (!ig || t != ig->i) {
				if (t < 0 || t >= C)
					return ev_stop(r, n, "target %lld outside [0, %lld)", (long long)t, (long long)C);
				w = Wt ? Wt->x[t] : 1;
				l = -w * L->x[(b * C + t) * sp + s];
			}
			if (!strcmp(red, "none"))
				Y->x[b * sp + s] = ev_as_type(Y->dt, l);
			sum += l;
			wsum += w;
		}
	if (!strcmp(red, "sum"))
		Y->x[0] = ev_as_type(Y->dt, sum);
	else if (!strcmp(red, "mean"))
		Y->x[0] = ev_as_type(Y->dt, sum / wsum);
	out[0] = Y;
	return 0;
}

static int ev_nllloss(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	if (in[0]->rank < 2)
		return ev_stop(r, n, "input of rank %d", in[0]->rank);
	return class_loss(r, n, in[0], in[1], n->nin > 2 ? in[2] : NULL, out);
}

static int ev_softmaxce(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *S = in[0];
	if (S->rank < 2)
		return ev_stop(r, n, "scores of rank %d", S->rank);
	int64_t C = S->d[1], outer = S->d[0], inner = prod(S->d + 2, S->rank - 2);
	ev_tensor *L = new_like(r, S->dt, S);
	ev_log_softmax(S->x, outer, C, inner, L->x);
	if (class_loss(r, n, L, in[1], n->nin > 2 ? in[2] : NULL, out))
		return 1;
	if (n->nout > 1) {
		for (int64_t e = 0; e < L->n; e++)
			L->x[e] = ev_as_type(L->dt, L->x[e]);
		out[1] = L;
	}
	return 0;
}

/* ClassLossGrad (training; inputs dloss L T [weights], attributes wrt,
 * reduction, ignore_index): the derivatives of class_loss's loss, whose
 * terms are l_i = -w[t_i] L[n, t_i, d..] at the positions i = (n, d..) not
 * ignored.  With g_i = dloss_i (none), dloss (sum) or dloss / W (mean, W =
 * the sum of the w[t_i]): dL[n, t_i, d..] = -w[t_i] g_i, 0 elsewhere (wrt
 * 0); dw[c] = the sum over t_i = c of g_i (-L_i), less the mean loss for
 * mean, whose W holds w[c] too (wrt 1). */
static int ev_classlossgrad(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *dl = in[0], *L = in[1], *T = in[2], *Wt = n->nin > 3 ? in[3] : NULL;
	const char *red = ir_attr_string(n, "reduction", "mean");
	ir_attr *ig = ir_attr_find(n, "ignore_index");
	int wrt = (int)ir_attr_int(n, "wrt", 0), none = !strcmp(red, "none"), mean = !strcmp(red, "mean");
	if (L->rank < 2 || (wrt && !Wt))
		return ev_stop(r, n, "ClassLossGrad of L of rank %d%s", L->rank, wrt && !Wt ? " without weights" : "");
	int64_t C = L->d[1], N = L->d[0], sp = prod(L->d + 2, L->rank - 2);
	if (T->n != N * sp || dl->n != (none ? N * sp : 1) || (Wt && Wt->n != C))
		return ev_stop(r, n, "%lld targets, %lld dloss and %lld weights for L of %lld positions and %lld classes",
			       (long long)T->n, (long long)dl->n, Wt ? (long long)Wt->n : 0LL, (long long)(N * sp),
			       (long long)C);
	double W = 0, S = 0;    /* the weights taken and the loss' sum */
	for (int64_t i = 0; i < N * sp; i++) {
		int64_t t = ev_ival(T, i);
		if (ig && t == ig->i)
			continue;
		if (t < 0 || t >= C)
			return ev_stop(r, n, "target %lld outside [0, %lld)", (long long)t, (long long)C);
		double w = Wt ? Wt->x[t] : 1;
		W += w;
		S += -w * L->x[((i / sp) * C + t) * sp + i % sp];
	}
	ev_tensor *D = new_like(r, n->out[0]->dtype, wrt ? Wt : L);
	for (int64_t i = 0; i < N * sp; i++) {
		int64_t t = ev_ival(T, i);
		if (ig && t == ig->i)
			continue;
		double gi = none ? dl->x[i] : dl->x[0];
		if (mean)
			gi /= W;
		int64_t at = ((i / sp) * C + t) * sp + i % sp;
		if (wrt)
			D->x[t] += gi * (-L->x[at] - (mean ? S / W : 0));
		else
			D->x[at] = -(Wt ? Wt->x[t] : 1) * gi;
	}
	for (int64_t e = 0; e < D->n; e++)
		D->x[e] = ev_as_type(D->dt, D->x[e]);
	out[0] = D;
	return 0;
}

/* ---- quantization ------------------------------------------------------------------------ */

static int int_range(ir_dtype t, double *lo, double *hi)
{
	switch (t) {
	case DT_U8: *lo = 0; *hi = 255; return 0;
	case DT_I8: *lo = -128; *hi = 127; return 0;
	case DT_U16: *lo = 0; *hi = 65535; return 0;
	case DT_I16: *lo = -32768; *hi = 32767; return 0;
	case DT_I32: *lo = -2147483648.0; *hi = 2147483647.0; return 0;
	default: return 1;
	}
}

/* The index into a scale or zero point of X's element e: scalars, or [D]
 * along axis (default 1). */
static int64_t param_at(const ir_node *n, const ev_tensor *X, const ev_tensor *p, int64_t e)
{
	if (!p || p->n == 1)
		return 0;
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 1), X->rank);
	int64_t outer, inner;
	around(X, a, &outer, &inner);
	return (e / inner) % X->d[a];
}

/* QuantizeLinear: sat(round_half_even(x / scale) + zero_point) in float32 arithmetic, as specified. */
static int ev_quantize(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *S = in[1], *Z = n->nin > 2 ? in[2] : NULL;
	ir_dtype t = n->out[0]->dtype;
	double lo, hi;
	if (int_range(t, &lo, &hi) || ir_attr_int(n, "block_size", 0))
		return ev_noref(r, n, "QuantizeLinear to %s%s", ir_dtype_name(t),
			       ir_attr_int(n, "block_size", 0) ? " by blocks" : "");
	ev_tensor *Y = new_like(r, t, X);
	for (int64_t e = 0; e < X->n; e++) {
		int64_t q = param_at(n, X, S, e);
		double v = nearbyint((double)((float)X->x[e] / (float)S->x[q])) + (Z ? Z->x[q] : 0);
		Y->x[e] = v < lo ? lo : v > hi ? hi : v;
	}
	out[0] = Y;
	return 0;
}

static int ev_dequantize(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *S = in[1], *Z = n->nin > 2 ? in[2] : NULL;
	if (ir_attr_int(n, "block_size", 0))
		return ev_noref(r, n, "DequantizeLinear by blocks");
	ev_tensor *Y = new_like(r, n->out[0]->dtype, X);
	for (int64_t e = 0; e < X->n; e++) {
		int64_t q = param_at(n, X, S, e);
		Y->x[e] = ev_as_type(Y->dt, (X->x[e] - (Z ? Z->x[q] : 0)) * S->x[q]);
	}
	out[0] = Y;
	return 0;
}

/* DynamicQuantizeLinear: uint8 over [min(0, min X), max(0, max X)]. */
static int ev_dynquantize(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	double mn = 0, mx = 0;
	for (int64_t e = 0; e < X->n; e++) {
		mn = fmin(mn, X->x[e]);
		mx = fmax(mx, X->x[e]);
	}
	float scale = (float)(mx - mn) / 255.0f;
	double zp = scale == 0 ? 0 : nearbyint((double)(0.0f - (float)mn / scale));
	zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
	ev_tensor *Y = new_like(r, DT_U8, X), *S = ev_new(r, DT_F32, 0, NULL), *Z = ev_new(r, DT_U8, 0, NULL);
	for (int64_t e = 0; e < X->n; e++) {
		double v = (scale == 0 ? 0 : nearbyint((double)((float)X->x[e] / scale))) + zp;
		Y->x[e] = v < 0 ? 0 : v > 255 ? 255 : v;
	}
	S->x[0] = scale;
	Z->x[0] = zp;
	out[0] = Y;
	out[1] = S;
	out[2] = Z;
	return 0;
}

/* ---- linear algebra ---------------------------------------------------------------------- */

/* Det: LU with partial pivoting of each [M, M] matrix, in double. */
static int ev_det(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	if (X->rank < 2 || X->d[X->rank - 1] != X->d[X->rank - 2])
		return ev_stop(r, n, "Det of a matrix that is not square");
	int64_t M = X->d[X->rank - 1], cnt = prod(X->d, X->rank - 2);
	ev_tensor *Y = ev_new(r, X->dt, X->rank - 2, X->d);
	double *a = arena_array(r->A, (size_t)(M * M + 1), sizeof *a);
	for (int64_t q = 0; q < cnt; q++) {
		memcpy(a, X->x + q * M * M, (size_t)(M * M) * sizeof *a);
		double det = 1;
		for (int64_t k = 0; k < M && det != 0; k++) {
			int64_t p = k;
			for (int64_t i = k + 1; i < M; i++)
				if (fabs(a[i * M + k]) > fabs(a[p * M + k]))
					p = i;
			if (a[p * M + k] == 0) {
				det = 0;
				break;
			}
			if (p != k) {
				for (int64_t j = 0; j < M; j++) {
					double t = a[k * M + j];
					a[k * M + j] = a[p * M + j];
					a[p * M + j] = t;
				}
				det = -det;
			}
			det *= a[k * M + k];
			for (int64_t i = k + 1; i < M; i++) {
				double f = a[i * M + k] / a[k * M + k];
				for (int64_t j = k; j < M; j++)
					a[i * M + j] -= f * a[k * M + j];
			}
		}
		Y->x[q] = ev_as_type(Y->dt, det);
	}
	out[0] = Y;
	return 0;
}

/* Einsum: every assignment of the equation's labels visited once; the
 * product of the operands added to the output element its output labels
 * name.  "..." stands for the axes the operands do not label (broadcast). */
#define EIN_LABELS 64
typedef struct ein_term {
	int n;                          /* axes */
	int lab[IR_MAX_RANK];           /* the label of each axis */
} ein_term;

/* Parses one term of s (up to ',', '-' or the end) of an operand of rank R
 * (-1: the output); "..." stands for *k axes (R minus the named ones for
 * an operand), labelled right-aligned among the ell axes the widest "..."
 * has (labels 52..).  Letters: 'A'..'Z' 0..25, 'a'..'z' 26..51 (numpy's
 * alphabetical order of the implicit output). */
static const char *ein_term_parse(const char *s, int R, int ell, int *k, ein_term *t, int *ok)
{
	int named = 0;
	for (const char *p = s; *p && *p != ',' && *p != '-'; p++)
		named += (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
	*k = R >= 0 ? R - named : ell;
	t->n = 0;
	for (; *s && *s != ',' && *s != '-'; s++) {
		if (*s == ' ')
			continue;
		if (*s == '.') {
			if (strncmp(s, "...", 3) || *k < 0 || *k > ell) {
				*ok = 0;
				return s;
			}
			for (int i = 0; i < *k && t->n < IR_MAX_RANK; i++)
				t->lab[t->n++] = 52 + ell - *k + i;
			s += 2;
			continue;
		}
		int l = *s >= 'A' && *s <= 'Z' ? *s - 'A' : *s >= 'a' && *s <= 'z' ? 26 + *s - 'a' : -1;
		if (l < 0 || t->n >= IR_MAX_RANK) {
			*ok = 0;
			return s;
		}
		t->lab[t->n++] = l;
	}
	return s;
}

/* Parses the operands' terms of eq into t; returns where the output part
 * starts ("->..." or the end). */
static const char *ein_operands(const char *eq, const ir_node *n, ev_tensor **in, int ell, int *wide, ein_term *t,
				int *ok)
{
	const char *s = eq;
	*wide = 0;
	for (int q = 0; q < n->nin && *ok; q++) {
		int k;
		s = ein_term_parse(s, in[q]->rank, ell, &k, &t[q], ok);
		*wide = k > *wide ? k : *wide;
		if (*s == ',')
			s++;
	}
	return s;
}

static int ev_einsum(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const char *eq = ir_attr_string(n, "equation", NULL), *s;
	if (!eq || n->nin > 16)
		return ev_stop(r, n, "Einsum without an equation");
	ein_term t[16], o = {0};
	int ok = 1, ell, nop = n->nin, k;
	int64_t size[EIN_LABELS];
	int count[EIN_LABELS] = {0};
	ein_operands(eq, n, in, IR_MAX_RANK, &ell, t, &ok);         /* the widest "..." */
	s = ein_operands(eq, n, in, ell, &k, t, &ok);
	for (int i = 0; i < EIN_LABELS; i++)
		size[i] = -1;
	for (int q = 0; q < nop && ok; q++) {
		ok = t[q].n == in[q]->rank;
		for (int i = 0; ok && i < t[q].n; i++) {
			int l = t[q].lab[i];
			int64_t dsz = in[q]->d[i];
			if (size[l] < 0 || size[l] == 1)        /* a size 1 broadcasts */
				size[l] = dsz;
			else if (dsz != size[l] && dsz != 1)
				ok = 0;
			count[l]++;
		}
	}
	if (ok && *s == '-' && s[1] == '>') {
		ein_term_parse(s + 2, -1, ell, &k, &o, &ok);
	} else if (ok) {                /* implicit output: "..." then the labels used once, sorted */
		for (int i = 0; i < ell; i++)
			o.lab[o.n++] = 52 + i;
		for (int l = 0; l < 52 && o.n < IR_MAX_RANK; l++)
			if (count[l] == 1)
				o.lab[o.n++] = l;
	}
	for (int i = 0; ok && i < o.n; i++)
		ok = size[o.lab[i]] >= 0;
	if (!ok)
		return ev_noref(r, n, "Einsum equation '%s' the reference cannot read", eq);
	int labs[EIN_LABELS], nl = 0;
	for (int l = 0; l < EIN_LABELS; l++)
		if (size[l] >= 0)
			labs[nl++] = l;
	int64_t od[IR_MAX_RANK], ld[EIN_LABELS], li[EIN_LABELS] = {0}, v[EIN_LABELS] = {0};
	for (int i = 0; i < o.n; i++)
		od[i] = size[o.lab[i]];
	for (int i = 0; i < nl; i++)
		ld[i] = size[labs[i]];
	ev_tensor *Y = ev_new(r, n->out[0]->dtype, o.n, od);
	double *acc = arena_array(r->A, (size_t)(Y->n ? Y->n : 1), sizeof *acc);
	int64_t total = prod(ld, nl);
	for (int64_t q = 0; q < total; q++, ev_next_index(li, ld, nl)) {
		for (int i = 0; i < nl; i++)
			v[labs[i]] = li[i];
		double p = 1;
		for (int j = 0; j < nop; j++) {
			int64_t off = 0;
			for (int i = 0; i < t[j].n; i++)
				off = off * in[j]->d[i] + (in[j]->d[i] == 1 ? 0 : v[t[j].lab[i]]);
			p *= in[j]->x[off];
		}
		int64_t off = 0;
		for (int i = 0; i < o.n; i++)
			off = off * od[i] + v[o.lab[i]];
		acc[off] += p;
	}
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, acc[e]);
	out[0] = Y;
	return 0;
}

/* ---- sampling: Resize, GridSample --------------------------------------------------------- */

/* The cubic convolution weight of distance t with coefficient a (Keys). */
static double cubic_w(double t, double a)
{
	t = fabs(t);
	if (t <= 1)
		return ((a + 2) * t - (a + 3)) * t * t + 1;
	if (t < 2)
		return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
	return 0;
}

/* One axis of a Resize: input size `in`, output size `out`, scale, the
 * roi's start and end (tf_crop_and_resize). */
typedef struct rs_axis {
	int64_t in, out;
	double scale, start, end;
} rs_axis;

/* The input coordinate of output x (coordinate_transformation_mode); NAN
 * for a tf_crop_and_resize coordinate outside the input (extrapolated). */
static double rs_coord(const char *ctm, const rs_axis *A, int64_t x)
{
	double s = A->scale, in = (double)A->in, out = (double)A->out;
	if (!strcmp(ctm, "align_corners"))     /* the resized length unrounded: in * scale */
		return A->out == 1 ? 0 : (double)x * (in - 1) / (s * in - 1);
	if (!strcmp(ctm, "asymmetric"))
		return (double)x / s;
	if (!strcmp(ctm, "tf_half_pixel_for_nn"))
		return ((double)x + 0.5) / s;
	if (!strcmp(ctm, "pytorch_half_pixel"))
		return A->out > 1 ? ((double)x + 0.5) / s - 0.5 : 0;
	if (!strcmp(ctm, "half_pixel_symmetric")) {
		double adj = out / (s * in), off = in / 2 * (1 - adj);
		return off + ((double)x + 0.5) / s - 0.5;
	}
	if (!strcmp(ctm, "tf_crop_and_resize")) {
		double c = A->out > 1 ? A->start * (in - 1) + (double)x * (A->end - A->start) * (in - 1) / (out - 1)
				      : 0.5 * (A->start + A->end) * (in - 1);
		return c < 0 || c > in - 1 ? NAN : c;
	}
	return ((double)x + 0.5) / s - 0.5;     /* half_pixel */
}

/* The taps (input indices and weights) of coordinate c on an axis of size m. */
static int rs_taps(const ir_node *n, const char *mode, double c, int64_t m, int64_t *ix, double *w)
{
	if (!strcmp(mode, "nearest")) {
		const char *nm = ir_attr_string(n, "nearest_mode", "round_prefer_floor");
		double f = floor(c);
		int64_t i = !strcmp(nm, "floor") ? (int64_t)f : !strcmp(nm, "ceil") ? (int64_t)ceil(c) :
			    c - f == 0.5 ? (int64_t)(!strcmp(nm, "round_prefer_ceil") ? f + 1 : f) : (int64_t)floor(c + 0.5);
		ix[0] = i < 0 ? 0 : i >= m ? m - 1 : i;
		w[0] = 1;
		return 1;
	}
	int64_t i0 = (int64_t)floor(c);
	double f = c - floor(c);
	int k = 0;
	if (!strcmp(mode, "linear")) {
		ix[0] = i0;
		w[0] = 1 - f;
		ix[1] = i0 + 1;
		w[1] = f;
		k = 2;
	} else {
		double a = ir_attr_float(n, "cubic_coeff_a", -0.75f), sum = 0;
		int excl = (int)ir_attr_int(n, "exclude_outside", 0);
		for (int t = 0; t < 4; t++) {
			ix[t] = i0 - 1 + t;
			w[t] = cubic_w(f - (t - 1), a);
			if (excl && (ix[t] < 0 || ix[t] >= m))
				w[t] = 0;
			sum += w[t];
		}
		for (int t = 0; excl && t < 4; t++)
			w[t] /= sum;
		k = 4;
	}
	for (int t = 0; t < k; t++)         /* the edge repeats beyond the input */
		ix[t] = ix[t] < 0 ? 0 : ix[t] >= m ? m - 1 : ix[t];
	return k;
}

/* Resize: sizes (input 3) or scales (input 2) on axes (default all), with
 * keep_aspect_ratio_policy; each output element the separable sum of its
 * taps on every axis. */
static int ev_resize(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *roi = n->nin > 1 ? in[1] : NULL, *sc = n->nin > 2 ? in[2] : NULL;
	const ev_tensor *sz = n->nin > 3 ? in[3] : NULL;
	const char *mode = ir_attr_string(n, "mode", "nearest");
	const char *ctm = ir_attr_string(n, "coordinate_transformation_mode", "half_pixel");
	const char *pol = ir_attr_string(n, "keep_aspect_ratio_policy", "stretch");
	ir_attr *axa = ir_attr_find(n, "axes");
	int R = X->rank, na = axa ? axa->n : R, ax[IR_MAX_RANK];
	rs_axis A[IR_MAX_RANK];
	if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic"))
		return ev_noref(r, n, "Resize mode %s", mode);
	for (int a = 0; a < R; a++)
		A[a] = (rs_axis){.in = X->d[a], .out = X->d[a], .scale = 1, .start = 0, .end = 1};
	for (int i = 0; i < na; i++)
		ax[i] = axa ? (int)ev_norm_axis(axa->ints[i], R) : i;
	if (sz && sz->n) {
		if (sz->n != na)
			return ev_stop(r, n, "sizes of %lld values for %d axes", (long long)sz->n, na);
		double keep = !strcmp(pol, "not_larger") ? INFINITY : -INFINITY;
		for (int i = 0; i < na; i++) {
			double q = (double)ev_ival(sz, i) / (double)X->d[ax[i]];
			keep = !strcmp(pol, "not_larger") ? fmin(keep, q) : fmax(keep, q);
		}
		for (int i = 0; i < na; i++) {
			rs_axis *p = &A[ax[i]];
			if (!strcmp(pol, "stretch")) {
				p->out = ev_ival(sz, i);
				p->scale = (double)p->out / (double)p->in;
			} else {
				p->scale = keep;
				p->out = (int64_t)floor(keep * (double)p->in + 0.5);
			}
		}
	} else if (sc && sc->n) {
		if (sc->n != na)
			return ev_stop(r, n, "scales of %lld values for %d axes", (long long)sc->n, na);
		for (int i = 0; i < na; i++) {
			A[ax[i]].scale = (double)(float)sc->x[i];
			A[ax[i]].out = (int64_t)floor((double)X->d[ax[i]] * (double)(float)sc->x[i]);
		}
	} else {
		return ev_stop(r, n, "Resize without scales or sizes");
	}
	for (int i = 0; roi && roi->n == 2 * na && i < na; i++) {
		A[ax[i]].start = roi->x[i];
		A[ax[i]].end = roi->x[na + i];
	}
	if (ir_attr_int(n, "antialias", 0) && strcmp(mode, "nearest"))
		for (int a = 0; a < R; a++)
			if (A[a].scale < 1)
				return ev_noref(r, n, "Resize with antialias when downscaling");
	int64_t od[IR_MAX_RANK];
	for (int a = 0; a < R; a++)
		od[a] = A[a].out;
	ev_tensor *Y = ev_new(r, X->dt, R, od);
	double extra = ir_attr_float(n, "extrapolation_value", 0.0f);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < Y->n; e++, ev_next_index(idx, od, R)) {
		int64_t tix[IR_MAX_RANK][4], cnt[IR_MAX_RANK], ti[IR_MAX_RANK] = {0};
		double tw[IR_MAX_RANK][4];
		int outside = 0;
		for (int a = 0; a < R; a++) {
			double c = rs_coord(ctm, &A[a], idx[a]);
			outside |= isnan(c);
			cnt[a] = outside ? 1 : rs_taps(n, mode, c, A[a].in, tix[a], tw[a]);
		}
		if (outside) {
			Y->x[e] = ev_as_type(Y->dt, extra);
			continue;
		}
		double v = 0;
		for (int64_t q = 0; q < prod(cnt, R); q++, ev_next_index(ti, cnt, R)) {
			double w = 1;
			int64_t off = 0;
			for (int a = 0; a < R; a++) {
				w *= tw[a][ti[a]];
				off = off * X->d[a] + tix[a][ti[a]];
			}
			v += w * X->x[off];
		}
		Y->x[e] = ev_as_type(Y->dt, v);
	}
	out[0] = Y;
	return 0;
}

/* x reflected into [lo, hi] (GridSample's reflection padding). */
static double gs_reflect(double x, double lo, double hi)
{
	double rng = hi - lo;
	if (rng <= 0)
		return lo;
	if (x < lo) {
		double dx = lo - x, k = floor(dx / rng), rm = dx - k * rng;
		return fmod(k, 2) == 0 ? lo + rm : hi - rm;
	}
	if (x > hi) {
		double dx = x - hi, k = floor(dx / rng), rm = dx - k * rng;
		return fmod(k, 2) == 0 ? hi - rm : lo + rm;
	}
	return x;
}

/* The pixel of image x [H, W] at (i, j) under padding_mode. */
static double gs_pixel(const double *x, int64_t H, int64_t W, int64_t i, int64_t j, const char *pad, const double *bd)
{
	if (!strcmp(pad, "zeros"))
		return i >= 0 && i < H && j >= 0 && j < W ? x[i * W + j] : 0;
	if (!strcmp(pad, "border")) {
		i = i < 0 ? 0 : i >= H ? H - 1 : i;
		j = j < 0 ? 0 : j >= W ? W - 1 : j;
	} else {
		i = (int64_t)gs_reflect((double)i, bd[1], bd[3]);
		j = (int64_t)gs_reflect((double)j, bd[0], bd[2]);
	}
	return x[i * W + j];
}

/* GridSample (2-D): Y[n, c, h, w] = X[n, c] sampled at grid[n, h, w] = (x, y) in [-1, 1]. */
static int ev_gridsample(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *G = in[1];
	const char *mode = ir_attr_string(n, "mode", "linear"), *pad = ir_attr_string(n, "padding_mode", "zeros");
	int ac = (int)ir_attr_int(n, "align_corners", 0);
	if (X->rank != 4 || G->rank != 4)
		return ev_noref(r, n, "GridSample of rank %d", X->rank);
	int cubic = !strcmp(mode, "cubic") || !strcmp(mode, "bicubic"), nearest = !strcmp(mode, "nearest");
	int64_t N = X->d[0], C = X->d[1], H = X->d[2], W = X->d[3], Ho = G->d[1], Wo = G->d[2];
	int64_t od[4] = {N, C, Ho, Wo};
	ev_tensor *Y = ev_new(r, X->dt, 4, od);
	double bd[4] = {ac ? 0 : -0.5, ac ? 0 : -0.5, ac ? (double)W - 1 : (double)W - 0.5, ac ? (double)H - 1 : (double)H - 0.5};
	for (int64_t b = 0; b < N; b++)
		for (int64_t h = 0; h < Ho; h++)
			for (int64_t w = 0; w < Wo; w++) {
				const double *gp = G->x + ((b * Ho + h) * Wo + w) * 2;
				double x = ac ? (gp[0] + 1) / 2 * (double)(W - 1) : ((gp[0] + 1) * (double)W - 1) / 2;
				double y = ac ? (gp[1] + 1) / 2 * (double)(H - 1) : ((gp[1] + 1) * (double)H - 1) / 2;
				/* the coordinate itself is padded for linear and nearest; cubic
				 * pads each of its taps alone (PyTorch's and onnx's reading) */
				if (!cubic && !strcmp(pad, "border")) {
					x = fmin(fmax(x, 0), (double)W - 1);
					y = fmin(fmax(y, 0), (double)H - 1);
				} else if (!cubic && !strcmp(pad, "reflection")) {
					x = gs_reflect(x, bd[0], bd[2]);
					y = gs_reflect(y, bd[1], bd[3]);
				}
				for (int64_t c = 0; c < C; c++) {
					const double *img = X->x + (b * C + c) * H * W;
					double v = 0;
					if (nearest) {
						v = gs_pixel(img, H, W, (int64_t)nearbyint(y), (int64_t)nearbyint(x), pad, bd);
					} else {
						int k = cubic ? 4 : 2;
						int64_t x0 = (int64_t)floor(x) - (cubic ? 1 : 0), y0 = (int64_t)floor(y) - (cubic ? 1 : 0);
						double fx = x - floor(x), fy = y - floor(y), wx[4], wy[4];
						for (int t = 0; t < k; t++) {
							wx[t] = cubic ? cubic_w(fx - (t - 1), -0.75) : t ? fx : 1 - fx;
							wy[t] = cubic ? cubic_w(fy - (t - 1), -0.75) : t ? fy : 1 - fy;
						}
						for (int i = 0; i < k; i++)
							for (int j = 0; j < k; j++)
								v += wy[i] * wx[j] * gs_pixel(img, H, W, y0 + i, x0 + j, pad, bd);
					}
					Y->x[((b * C + c) * Ho + h) * Wo + w] = ev_as_type(Y->dt, v);
				}
			}
	out[0] = Y;
	return 0;
}

/* RoiAlign: per roi [x1 y1 x2 y2] (times spatial_scale, less half a pixel
 * with half_pixel) of image batch_indices[r], each output bin the average
 * (or max) of sampling_ratio^2 bilinear samples (adaptive: ceil(roi size /
 * output size)); a sample beyond a pixel outside the image is 0; max
 * mode takes the largest weighted corner (ONNX Runtime's reading, which
 * the official data follow). */
static int ev_roialign(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *rois = in[1], *bi = in[2];
	int64_t oh = ir_attr_int(n, "output_height", 1), ow = ir_attr_int(n, "output_width", 1);
	int64_t sr = ir_attr_int(n, "sampling_ratio", 0), C = X->d[1], H = X->d[2], W = X->d[3], R = rois->d[0];
	double scale = ir_attr_float(n, "spatial_scale", 1.0f);
	int half = !strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "half_pixel");
	int is_max = !strcmp(ir_attr_string(n, "mode", "avg"), "max");
	int64_t od[4] = {R, C, oh, ow};
	ev_tensor *Y = ev_new(r, X->dt, 4, od);
	for (int64_t q = 0; q < R; q++) {
		const double *b = rois->x + q * 4;
		int64_t img = ev_ival(bi, q);
		if (img < 0 || img >= X->d[0])
			return ev_stop(r, n, "batch index %lld outside the batch", (long long)img);
		double off = half ? 0.5 : 0, x0 = b[0] * scale - off, y0 = b[1] * scale - off;
		double rw = b[2] * scale - off - x0, rh = b[3] * scale - off - y0;
		if (!half) {
			rw = fmax(rw, 1);
			rh = fmax(rh, 1);
		}
		double bw = rw / (double)ow, bh = rh / (double)oh;
		int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)oh), gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)ow);
		double cnt = (double)(gh * gw > 1 ? gh * gw : 1);
		for (int64_t c = 0; c < C; c++) {
			const double *im = X->x + (img * C + c) * H * W;
			for (int64_t ph = 0; ph < oh; ph++)
				for (int64_t pw = 0; pw < ow; pw++) {
					double acc = is_max ? -INFINITY : 0;
					int any = 0;
					for (int64_t iy = 0; iy < gh; iy++)
						for (int64_t ix = 0; ix < gw; ix++) {
							double y = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
							double x = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
							double v[4] = {0, 0, 0, 0};
							if (!(y < -1.0 || y > (double)H || x < -1.0 || x > (double)W)) {
								y = fmax(y, 0);
								x = fmax(x, 0);
								int64_t yl = (int64_t)y, xl = (int64_t)x, yh = yl + 1, xh = xl + 1;
								if (yl >= H - 1) {
									yl = yh = H - 1;
									y = (double)yl;
								}
								if (xl >= W - 1) {
									xl = xh = W - 1;
									x = (double)xl;
								}
								double ly = y - (double)yl, lx = x - (double)xl;
								v[0] = (1 - ly) * (1 - lx) * im[yl * W + xl];
								v[1] = (1 - ly) * lx * im[yl * W + xh];
								v[2] = ly * (1 - lx) * im[yh * W + xl];
								v[3] = ly * lx * im[yh * W + xh];
							}
							if (is_max) {
								for (int t = 0; t < 4; t++)
									acc = any || t ? fmax(acc, v[t]) : v[t];
								any = 1;
							} else {
								acc += v[0] + v[1] + v[2] + v[3];
							}
						}
					Y->x[((q * C + c) * oh + ph) * ow + pw] = ev_as_type(Y->dt, is_max ? acc : acc / cnt);
				}
		}
	}
	out[0] = Y;
	return 0;
}

/* ---- signals, normalisation across channels, sequences, unpooling ----------------------------- */

/* DFT of X [.., 1 or 2] along axis (default 1): n = dft_length (zero
 * padded or cut), inverse (conjugate, / n), onesided (bins 0 .. n/2). */
static int ev_dft(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *L = n->nin > 1 ? in[1] : NULL;
	int R = X->rank, a = (int)ev_norm_axis(ir_attr_int(n, "axis", 1), R);
	int inv = (int)ir_attr_int(n, "inverse", 0), one = (int)ir_attr_int(n, "onesided", 0);
	int64_t cplx = X->d[R - 1];
	if (R < 3 || a < 1 || a > R - 2 || (cplx != 1 && cplx != 2))
		return ev_stop(r, n, "DFT of X of rank %d along axis %d", R, a);
	int64_t len = L ? ev_ival(L, 0) : X->d[a], m = X->d[a], bins = one ? len / 2 + 1 : len, d[IR_MAX_RANK];
	memcpy(d, X->d, sizeof d);
	d[a] = bins;
	d[R - 1] = 2;
	ev_tensor *Y = ev_new(r, X->dt, R, d);
	int64_t outer = prod(X->d, a), inner = prod(X->d + a + 1, R - a - 2);  /* inner: the axes between, not the last */
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++)
			for (int64_t k = 0; k < bins; k++) {
				double re = 0, im = 0;
				for (int64_t t = 0; t < len && t < m; t++) {
					const double *xv = X->x + ((p * m + t) * inner + s) * cplx;
					double ang = (inv ? 2 : -2) * 3.14159265358979323846 * (double)((k * t) % len) / (double)len;
					double xr = xv[0], xi = cplx == 2 ? xv[1] : 0;
					re += xr * cos(ang) - xi * sin(ang);
					im += xr * sin(ang) + xi * cos(ang);
				}
				double *yv = Y->x + ((p * bins + k) * inner + s) * 2;
				yv[0] = ev_as_type(Y->dt, inv ? re / (double)len : re);
				yv[1] = ev_as_type(Y->dt, inv ? im / (double)len : im);
			}
	out[0] = Y;
	return 0;
}

/* STFT: DFTs of the frames of signal [B, L, 1 or 2] every frame_step
 * (input 1), each frame_length (input 3, or the window's length) long and
 * times window (input 2); onesided (default 1): bins 0 .. frame_length / 2. */
static int ev_stft(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *Win = n->nin > 2 ? in[2] : NULL, *FL = n->nin > 3 ? in[3] : NULL;
	int64_t step = ev_ival(in[1], 0), fl = FL ? ev_ival(FL, 0) : Win ? Win->n : 0;
	int one = (int)ir_attr_int(n, "onesided", 1);
	if (X->rank != 3 || fl < 1 || step < 1 || fl > X->d[1])
		return ev_stop(r, n, "STFT of X of rank %d, frames of %lld every %lld", X->rank, (long long)fl,
			       (long long)step);
	int64_t B = X->d[0], L = X->d[1], cplx = X->d[2], frames = (L - fl) / step + 1, bins = one ? fl / 2 + 1 : fl;
	int64_t d[4] = {B, frames, bins, 2};
	ev_tensor *Y = ev_new(r, X->dt, 4, d);
	for (int64_t b = 0; b < B; b++)
		for (int64_t f = 0; f < frames; f++)
			for (int64_t k = 0; k < bins; k++) {
				double re = 0, im = 0;
				for (int64_t t = 0; t < fl; t++) {
					const double *xv = X->x + (b * L + f * step + t) * cplx;
					double w = Win ? Win->x[t] : 1, ang = -2 * 3.14159265358979323846 * (double)((k * t) % fl) / (double)fl;
					double xr = xv[0] * w, xi = cplx == 2 ? xv[1] * w : 0;
					re += xr * cos(ang) - xi * sin(ang);
					im += xr * sin(ang) + xi * cos(ang);
				}
				Y->x[((b * frames + f) * bins + k) * 2] = ev_as_type(Y->dt, re);
				Y->x[((b * frames + f) * bins + k) * 2 + 1] = ev_as_type(Y->dt, im);
			}
	out[0] = Y;
	return 0;
}

/* HannWindow, HammingWindow, BlackmanWindow: Y[k] for k = 0 .. size - 1
 * (input 0, a scalar), the cosine sums of ops.def over N = size (periodic,
 * the default) or size - 1, of type output_datatype (default float).
 * infer folds them (size must be a constant): a compiled graph holds none;
 * the reference runs them in a graph as loaded (eval_ref). */
static int ev_window(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const double pi = 3.14159265358979323846;
	int64_t size = ev_ival(in[0], 0);
	if (in[0]->n != 1 || size < 0)
		return ev_stop(r, n, "%s of size %lld", ir_op_name(n->op), (long long)size);
	double N = (double)(ir_attr_int(n, "periodic", 1) ? size : size - 1);
	ev_tensor *Y = ev_new(r, (ir_dtype)ir_attr_int(n, "output_datatype", DT_F32), 1, &size);
	for (int64_t k = 0; k < size; k++) {
		double t = 2 * pi * (double)k / N, v;
		if (n->op == OP_HANNWINDOW)
			v = 0.5 - 0.5 * cos(t);
		else if (n->op == OP_HAMMINGWINDOW)
			v = 25.0 / 46.0 - 21.0 / 46.0 * cos(t);
		else
			v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2 * t);
		Y->x[k] = ev_as_type(Y->dt, v);
	}
	out[0] = Y;
	return 0;
}

static double hz_to_mel(double f) { return 2595 * log10(1 + f / 700); }
static double mel_to_hz(double m) { return 700 * (pow(10, m / 2595) - 1); }

/* MelWeightMatrix (inputs num_mel_bins, dft_length, sample_rate,
 * lower_edge_hertz, upper_edge_hertz; output_datatype): Y [dft_length / 2 +
 * 1, num_mel_bins] holds triangular filters of peak 1.  Their edges, as the
 * ONNX operator's reference defines them (the official data): the mel
 * scale from mel(lower) in num_mel_bins + 2 steps of (mel(upper) -
 * mel(lower)) / (num_mel_bins + 2), each point back in hertz and to the DFT
 * bin floor((dft_length + 1) f / sample_rate).  Filter i rises from bin
 * b[i] to 1 at b[i + 1] (1 there alone when they coincide) and falls to 0
 * at b[i + 2].  infer folds it (constant inputs): as ev_window. */
static int ev_melweight(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int64_t nmel = ev_ival(in[0], 0), len = ev_ival(in[1], 0), rate = ev_ival(in[2], 0);
	double lo = in[3]->x[0], hi = in[4]->x[0];
	if (nmel < 0 || len < 0 || rate <= 0)
		return ev_stop(r, n, "MelWeightMatrix of %lld bins, a DFT of %lld, a rate of %lld", (long long)nmel,
			       (long long)len, (long long)rate);
	int64_t d[2] = {len / 2 + 1, nmel};
	ev_tensor *Y = ev_new(r, (ir_dtype)ir_attr_int(n, "output_datatype", DT_F32), 2, d);
	int64_t *b = arena_array(r->A, (size_t)nmel + 2, sizeof *b);
	double step = (hz_to_mel(hi) - hz_to_mel(lo)) / (double)(nmel + 2);
	for (int64_t k = 0; k < nmel + 2; k++)
		b[k] = (int64_t)floor((double)(len + 1) * mel_to_hz(hz_to_mel(lo) + (double)k * step) / (double)rate);
	for (int64_t i = 0; i < nmel; i++) {
		int64_t l = b[i], c = b[i + 1], h = b[i + 2];
		if ((l <= c && (l < 0 || c >= d[0])) || (c < h && (c < 0 || h > d[0])))
			return ev_stop(r, n, "mel filter %lld spans DFT bins %lld .. %lld of %lld", (long long)i,
				       (long long)l, (long long)h, (long long)d[0]);
		for (int64_t j = l; j <= c; j++)
			Y->x[j * nmel + i] = c == l ? 1 : (double)(j - l) / (double)(c - l);
		for (int64_t j = c; j < h; j++)
			Y->x[j * nmel + i] = (double)(h - j) / (double)(h - c);
	}
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, Y->x[e]);
	out[0] = Y;
	return 0;
}

/* LRN: X / (bias + alpha / size * the sum of X^2 over the channels c -
 * floor((size - 1) / 2) .. c + ceil((size - 1) / 2))^beta. */
static int ev_lrn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	int64_t size = ir_attr_int(n, "size", 1), C = X->d[1], sp = prod(X->d + 2, X->rank - 2);
	double alpha = ir_attr_float(n, "alpha", 1e-4f), beta = ir_attr_float(n, "beta", 0.75f);
	double bias = ir_attr_float(n, "bias", 1.0f);
	ev_tensor *Y = new_like(r, X->dt, X);
	for (int64_t b = 0; b < X->d[0]; b++)
		for (int64_t c = 0; c < C; c++)
			for (int64_t e = 0; e < sp; e++) {
				double sq = 0;
				for (int64_t q = c - (size - 1) / 2; q <= c + size / 2; q++)
					if (q >= 0 && q < C)
						sq += X->x[(b * C + q) * sp + e] * X->x[(b * C + q) * sp + e];
				int64_t at = (b * C + c) * sp + e;
				Y->x[at] = ev_as_type(Y->dt, X->x[at] / pow(bias + alpha / (double)size * sq, beta));
			}
	out[0] = Y;
	return 0;
}

/* MeanVarianceNormalization over axes (default 0, 2, 3), as ops.def states it. */
static int ev_mvn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	ir_attr *aa = ir_attr_find(n, "axes");
	unsigned char red[IR_MAX_RANK] = {0};
	static const int64_t def[3] = {0, 2, 3};
	for (int i = 0; i < (aa ? aa->n : 3); i++) {
		int64_t a = ev_norm_axis(aa ? aa->ints[i] : def[i], X->rank);
		if (a < 0 || a >= X->rank)
			return ev_stop(r, n, "MeanVarianceNormalization axis out of range");
		red[a] = 1;
	}
	ev_tensor k0 = {.rank = X->rank};       /* the statistics' shape: 1 on the reduced axes */
	for (int i = 0; i < X->rank; i++)
		k0.d[i] = red[i] ? 1 : X->d[i];
	int64_t ns = prod(k0.d, k0.rank), idx[IR_MAX_RANK] = {0};
	double *mean = arena_array(r->A, (size_t)ns + 1, sizeof *mean), *var = arena_array(r->A, (size_t)ns + 1, sizeof *var);
	double cnt = (double)X->n / (double)ns;
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank))
		mean[ev_bcast_off(&k0, X->rank, idx)] += X->x[e] / cnt;
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		int64_t q = ev_bcast_off(&k0, X->rank, idx);
		var[q] += (X->x[e] - mean[q]) * (X->x[e] - mean[q]) / cnt;
	}
	ev_tensor *Y = new_like(r, X->dt, X);
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		int64_t q = ev_bcast_off(&k0, X->rank, idx);
		Y->x[e] = ev_as_type(Y->dt, (X->x[e] - mean[q]) / (sqrt(var[q]) + 1e-9));
	}
	out[0] = Y;
	return 0;
}

/* ReverseSequence: in row b of batch_axis the first lens[b] steps of time_axis reversed. */
static int ev_reverseseq(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *Ln = in[1];
	int ba = (int)ir_attr_int(n, "batch_axis", 1), ta = (int)ir_attr_int(n, "time_axis", 0);
	if (ba < 0 || ba >= X->rank || ta < 0 || ta >= X->rank || Ln->n != X->d[ba])
		return ev_stop(r, n, "batch_axis %d, time_axis %d or sequence_lens of another batch", ba, ta);
	ev_tensor *Y = new_like(r, X->dt, X);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < X->n; e++, ev_next_index(idx, X->d, X->rank)) {
		int64_t len = ev_ival(Ln, idx[ba]), src[IR_MAX_RANK], off = 0;
		if (len < 0 || len > X->d[ta])
			return ev_stop(r, n, "sequence length %lld outside [0, %lld]", (long long)len, (long long)X->d[ta]);
		memcpy(src, idx, sizeof src);
		if (idx[ta] < len)
			src[ta] = len - 1 - idx[ta];
		for (int i = 0; i < X->rank; i++)
			off = off * X->d[i] + src[i];
		Y->x[e] = X->x[off];
	}
	out[0] = Y;
	return 0;
}

/* MaxUnpool: zeros of output_shape (input 2, or from the pool's geometry) with X written at I. */
static int ev_maxunpool(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1], *S = n->nin > 2 ? in[2] : NULL;
	int nsp = X->rank - 2;
	ir_attr *ka = ir_attr_find(n, "kernel_shape");
	int64_t d[IR_MAX_RANK], st[IR_MAX_RANK], p[2 * IR_MAX_RANK];
	if (!ka || ka->n != nsp || (S && S->n != X->rank))
		return ev_stop(r, n, "kernel_shape missing, or output_shape not of rank %d", X->rank);
	ints_or(n, "strides", nsp, 1, st);
	ints_or(n, "pads", 2 * nsp, 0, p);
	int64_t dd[IR_MAX_RANK];        /* the pool's input shape, which the indices address */
	for (int a = 0; a < X->rank; a++) {
		dd[a] = a < 2 ? X->d[a] : (X->d[a] - 1) * st[a - 2] + ka->ints[a - 2] - p[a - 2] - p[nsp + a - 2];
		d[a] = S ? ev_ival(S, a) : dd[a];
	}
	ev_tensor *Y = ev_new(r, X->dt, X->rank, d);
	for (int64_t e = 0; e < X->n; e++) {
		int64_t at = ev_ival(I, e), off = 0, rest = at, c[IR_MAX_RANK];
		for (int a = X->rank - 1; a >= 0; a--) {
			c[a] = rest % dd[a];
			rest /= dd[a];
		}
		for (int a = 0; a < X->rank; a++)
			off = off * d[a] + c[a];
		if (at < 0 || rest || off >= Y->n)
			return ev_stop(r, n, "index %lld outside the output", (long long)at);
		Y->x[off] = X->x[e];
	}
	out[0] = Y;
	return 0;
}

/* ---- integer products (quantized models) ----------------------------------------------------- */

/* t minus its zero point z (scalar, or per index along axis `a` of t). */
static ev_tensor *minus_zp(ev_run *r, const ev_tensor *t, const ev_tensor *z, int a)
{
	ev_tensor *o = new_like(r, DT_F64, t);
	int64_t outer, inner;
	around(t, a, &outer, &inner);
	for (int64_t e = 0; e < t->n; e++)
		o->x[e] = t->x[e] - (!z ? 0 : z->n == 1 ? z->x[0] : z->x[(e / inner) % t->d[a]]);
	return o;
}

/* (A - a_zero_point) @ (B - b_zero_point): a's per row of A, b's per column of B. */
static int int_matmul(ev_run *r, const ir_node *n, const ev_tensor *A, const ev_tensor *az, const ev_tensor *B,
		      const ev_tensor *bz, ev_tensor **y)
{
	if (A->rank < 1 || B->rank < 2)
		return ev_noref(r, n, "%s of rank %d by rank %d", ir_op_name(n->op), A->rank, B->rank);
	ev_tensor *a = minus_zp(r, A, az, A->rank >= 2 ? A->rank - 2 : 0), *b = minus_zp(r, B, bz, B->rank - 1);
	int64_t K = A->d[A->rank - 1], N = B->d[B->rank - 1], rows = K ? A->n / K : 0, bat = K > 0 && N > 0 ? B->n / (K * N) : 1;
	int64_t M = A->rank >= 2 ? A->d[A->rank - 2] : 1;
	int64_t d[IR_MAX_RANK];
	memcpy(d, A->d, sizeof d);
	d[A->rank - 1] = N;
	if (B->d[B->rank - 2] != K || (bat != 1 && (bat * K * N != B->n || bat != rows / M)))
		return ev_noref(r, n, "%s of these shapes (B batched otherwise than A)", ir_op_name(n->op));
	*y = ev_new(r, DT_F64, A->rank, d);
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < N; j++) {
			double s = 0;
			int64_t bo = bat == 1 ? 0 : (i / M % bat) * K * N;
			for (int64_t k = 0; k < K; k++)
				s += a->x[i * K + k] * b->x[bo + k * N + j];
			(*y)->x[i * N + j] = s;
		}
	return 0;
}

static double saturate(ir_dtype t, double v)
{
	double lo, hi;
	if (int_range(t, &lo, &hi))
		return v;
	return v < lo ? lo : v > hi ? hi : v;
}

static int ev_matmulinteger(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	ev_tensor *y;
	if (int_matmul(r, n, in[0], n->nin > 2 ? in[2] : NULL, in[1], n->nin > 3 ? in[3] : NULL, &y))
		return 1;
	y->dt = DT_I32;
	out[0] = y;
	return 0;
}

/* QLinearMatMul: round(MatMulInteger a_scale b_scale / y_scale) + y_zero_point, saturated. */
static int ev_qlinearmatmul(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	ev_tensor *y;
	if (in[1]->n != 1 || in[4]->n != 1 || in[6]->n != 1)
		return ev_noref(r, n, "QLinearMatMul with scales per axis");
	if (int_matmul(r, n, in[0], in[2], in[3], in[5], &y))
		return 1;
	ir_dtype t = n->out[0]->dtype;
	double m = in[1]->x[0] * in[4]->x[0] / in[6]->x[0];
	for (int64_t e = 0; e < y->n; e++)
		y->x[e] = saturate(t, nearbyint(y->x[e] * m) + in[7]->x[0]);
	y->dt = t;
	out[0] = y;
	return 0;
}

/* ConvInteger and QLinearConv: Conv of the zero-point-free operands (the
 * padding is the zero point: 0 once subtracted). */
static int int_conv(ev_run *r, const ir_graph *g, const ir_node *n, const ev_tensor *X, const ev_tensor *xz,
		    const ev_tensor *W, const ev_tensor *wz, const ev_tensor *B, ev_tensor **y)
{
	return conv(r, n, minus_zp(r, X, xz, 1), minus_zp(r, W, wz, 0), B, DT_F64, y);
}

static int ev_convinteger(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	ev_tensor *y;
	if (int_conv(r, g, n, in[0], n->nin > 2 ? in[2] : NULL, in[1], n->nin > 3 ? in[3] : NULL, NULL, &y))
		return 1;
	y->dt = DT_I32;
	out[0] = y;
	return 0;
}

static int ev_qlinearconv(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	ev_tensor *y;
	const ev_tensor *ws = in[4];
	if (int_conv(r, g, n, in[0], in[2], in[3], in[5], n->nin > 8 ? in[8] : NULL, &y))
		return 1;
	ir_dtype t = n->out[0]->dtype;
	int64_t M = y->d[1], sp = prod(y->d + 2, y->rank - 2);
	for (int64_t e = 0; e < y->n; e++) {
		double s = in[1]->x[0] * ws->x[ws->n == 1 ? 0 : (e / sp) % M] / in[6]->x[0];
		y->x[e] = saturate(t, nearbyint(y->x[e] * s) + in[7]->x[0]);
	}
	y->dt = t;
	out[0] = y;
	return 0;
}

/* ---- optimisers (ai.onnx.preview.training), as the specification writes them ---------------- */

/* Momentum, Adagrad and Adam: R, T, then n tensors each of X, G and the
 * states; outputs the n new X, then the n new states of each kind. */
static int ev_optim(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int ns = n->op == OP_ADAM ? 2 : 1, cnt = (n->nin - 2) / (2 + ns);
	double R = in[0]->x[0], T = in[1]->x[0], norm = ir_attr_float(n, "norm_coefficient", 0.0f);
	double alpha = ir_attr_float(n, "alpha", n->op == OP_ADAM ? 0.9f : 0.0f);
	double beta = ir_attr_float(n, "beta", n->op == OP_ADAM ? 0.999f : 0.0f);
	double eps = ir_attr_float(n, "epsilon", 1e-6f);
	int nesterov = !strcmp(ir_attr_string(n, "mode", "standard"), "nesterov");
	if (n->nin != 2 + cnt * (2 + ns) || n->nout > cnt * (1 + ns))
		return ev_stop(r, n, "%s with %d inputs", ir_op_name(n->op), n->nin);
	for (int i = 0; i < cnt; i++) {
		const ev_tensor *X = in[2 + i], *G = in[2 + cnt + i], *V = in[2 + 2 * cnt + i];
		const ev_tensor *H = ns == 2 ? in[2 + 3 * cnt + i] : NULL;
		ev_tensor *Xn = new_like(r, X->dt, X), *Vn = new_like(r, V->dt, V), *Hn = H ? new_like(r, H->dt, H) : NULL;
		for (int64_t e = 0; e < X->n; e++) {
			double gr = G->x[e] + norm * X->x[e], x = X->x[e], v;
			if (n->op == OP_MOMENTUM) {
				v = alpha * V->x[e] + (T > 0 ? beta : 1) * gr;
				x -= R * (nesterov ? gr + alpha * v : v);
			} else if (n->op == OP_ADAGRAD) {
				v = V->x[e] + gr * gr;
				x -= R / (1 + T * ir_attr_float(n, "decay_factor", 0.0f)) * gr / (sqrt(v) + eps);
			} else {
				v = alpha * V->x[e] + (1 - alpha) * gr;
				double h = beta * H->x[e] + (1 - beta) * gr * gr;
				double ra = T > 0 ? R * sqrt(1 - pow(beta, T)) / (1 - pow(alpha, T)) : R;
				x = (1 - ir_attr_float(n, "norm_coefficient_post", 0.0f)) * (x - ra * v / (sqrt(h) + eps));
				Hn->x[e] = ev_as_type(Hn->dt, h);
			}
			Xn->x[e] = ev_as_type(Xn->dt, x);
			Vn->x[e] = ev_as_type(Vn->dt, v);
		}
		out[i] = Xn;
		if (n->nout > cnt + i)
			out[cnt + i] = Vn;
		if (Hn && n->nout > 2 * cnt + i)
			out[2 * cnt + i] = Hn;
	}
	return 0;
}

/* ---- text: TfIdfVectorizer ------------------------------------------------------------------ */

/* TfIdfVectorizer: per row of X [N?, C] the counts of pool_int64s' n-grams
 * (lengths min_gram_length .. max_gram_length, tokens max_skip_count + 1
 * apart at most; unigrams once, with no skip) at their ngram_indexes; TF
 * the counts, IDF weights where counted, TFIDF counts times weights. */
static int ev_tfidf(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	ir_attr *cnt = ir_attr_find(n, "ngram_counts"), *ix = ir_attr_find(n, "ngram_indexes");
	ir_attr *pool = ir_attr_find(n, "pool_int64s"), *wts = ir_attr_find(n, "weights");
	int64_t lo = ir_attr_int(n, "min_gram_length", 1), hi = ir_attr_int(n, "max_gram_length", 1);
	int64_t skips = ir_attr_int(n, "max_skip_count", 0);
	const char *mode = ir_attr_string(n, "mode", "TF");
	if (!cnt || !ix || !pool || X->rank < 1 || X->rank > 2)
		return ev_noref(r, n, "TfIdfVectorizer without an int64 pool, or of X of rank %d", X->rank);
	int64_t width = 0, rows = X->rank == 2 ? X->d[0] : 1, C = X->d[X->rank - 1];
	for (int i = 0; i < ix->n; i++)
		width = ix->ints[i] + 1 > width ? ix->ints[i] + 1 : width;
	int64_t d[2] = {rows, width};
	ev_tensor *Y = ev_new(r, DT_F32, X->rank, X->rank == 2 ? d : d + 1);
	double *freq = arena_array(r->A, (size_t)ix->n + 1, sizeof *freq);  /* per n-gram of the pool */
	for (int64_t row = 0; row < rows; row++) {
		const double *x = X->x + row * C;
		int64_t ord = 0;         /* the ordinal of the pool's first n-gram of length L */
		memset(freq, 0, (size_t)ix->n * sizeof *freq);
		for (int64_t L = 1; L <= cnt->n; L++) {
			int64_t t0 = cnt->ints[L - 1], t1 = L < cnt->n ? cnt->ints[L] : pool->n, grams = (t1 - t0) / L;
			for (int64_t sk = 0; L >= lo && L <= hi && sk <= (L == 1 ? 0 : skips); sk++)
				for (int64_t st = 0; st + (L - 1) * (sk + 1) < C; st++)
					for (int64_t q = 0; q < grams && ord + q < ix->n; q++) {
						int match = 1;
						for (int64_t k = 0; k < L && match; k++)
							match = (int64_t)x[st + k * (sk + 1)] == pool->ints[t0 + q * L + k];
						freq[ord + q] += match;
					}
			ord += grams;
		}
		/* weights are per n-gram of the pool, like ngram_indexes */
		for (int i = 0; i < ix->n; i++) {
			double w = wts && i < wts->n ? wts->floats[i] : 1, f = freq[i];
			Y->x[row * width + ix->ints[i]] = !strcmp(mode, "IDF") ? (f > 0 ? w : 0) : !strcmp(mode, "TFIDF") ? f * w : f;
		}
	}
	out[0] = Y;
	return 0;
}

/* ---- small ones and refusals ------------------------------------------------------------- */

static int ev_size(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	out[0] = ev_new(r, DT_I64, 0, NULL);
	out[0]->x[0] = (double)in[0]->n;
	return 0;
}

static int ev_random(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	return ev_noref(r, n, "%s draws random numbers: no reference can reproduce them", ir_op_name(n->op));
}

const ev_op_fn ev_ops[OP_COUNT] = {
	[OP_CONV] = ev_conv,
	[OP_CONVTRANSPOSE] = ev_convtranspose,
	[OP_MAXPOOL] = ev_pool,
	[OP_AVGPOOL] = ev_pool,
	[OP_GLOBALAVGPOOL] = ev_globalpool,
	[OP_GLOBALMAXPOOL] = ev_globalpool,
	[OP_PAD] = ev_pad,
	[OP_BATCHNORM] = ev_batchnorm,
	[OP_INSTANCENORM] = ev_instancenorm,
	[OP_LAYERNORM] = ev_layernorm,
	[OP_DROPOUT] = ev_dropout,
	[OP_ARGMAX] = ev_argext,
	[OP_ARGMIN] = ev_argext,
	[OP_HARDMAX] = ev_hardmax,
	[OP_TOPK] = ev_topk,
	[OP_CUMSUM] = ev_cumsum,
	[OP_TRILU] = ev_trilu,
	[OP_GATHERELEMENTS] = ev_gatherelements,
	[OP_SCATTERELEMENTS] = ev_scatterelements,
	[OP_SCATTERND] = ev_scatternd,
	[OP_GATHERND] = ev_gathernd,
	[OP_ONEHOT] = ev_onehot,
	[OP_EYELIKE] = ev_eyelike,
	[OP_DEPTHTOSPACE] = ev_depthspace,
	[OP_SPACETODEPTH] = ev_depthspace,
	[OP_NLLLOSS] = ev_nllloss,
	[OP_SOFTMAXCE] = ev_softmaxce,
	[OP_QUANTIZELINEAR] = ev_quantize,
	[OP_DEQUANTIZELINEAR] = ev_dequantize,
	[OP_DYNQUANTIZELINEAR] = ev_dynquantize,
	[OP_DET] = ev_det,
	[OP_EINSUM] = ev_einsum,
	[OP_SIZE] = ev_size,
	[OP_TFIDF] = ev_tfidf,
	[OP_ROIALIGN] = ev_roialign,
	[OP_STFT] = ev_stft,
	[OP_MOMENTUM] = ev_optim,
	[OP_ADAGRAD] = ev_optim,
	[OP_ADAM] = ev_optim,
	[OP_RESIZE] = ev_resize,
	[OP_GRIDSAMPLE] = ev_gridsample,
	[OP_DFT] = ev_dft,
	[OP_LRN] = ev_lrn,
	[OP_MVN] = ev_mvn,
	[OP_REVERSESEQ] = ev_reverseseq,
	[OP_MAXUNPOOL] = ev_maxunpool,
	[OP_MATEXP] = ev_matexp,                /* ir_eval_cell.c */
	[OP_MATMULINTEGER] = ev_matmulinteger,
	[OP_QLINEARMATMUL] = ev_qlinearmatmul,
	[OP_CONVINTEGER] = ev_convinteger,
	[OP_QLINEARCONV] = ev_qlinearconv,
	[OP_RANDOMUNIFORM] = ev_random,
	[OP_RANDOMNORMAL] = ev_random,
	[OP_RANDOMUNIFORMLIKE] = ev_random,
	[OP_RANDOMNORMALLIKE] = ev_random,
	[OP_BERNOULLI] = ev_random,
	[OP_NONZERO] = ev_nonzero,
	[OP_UNIQUE] = ev_unique,
	[OP_COMPRESS] = ev_compress,
	[OP_NMS] = ev_nms,
	[OP_HANNWINDOW] = ev_window,
	[OP_HAMMINGWINDOW] = ev_window,
	[OP_BLACKMANWINDOW] = ev_window,
	[OP_MELWEIGHT] = ev_melweight,
	[OP_CONVGRAD] = ev_convgrad,
	[OP_PADGRAD] = ev_padgrad,
	[OP_CLASSLOSSGRAD] = ev_classlossgrad,
};
