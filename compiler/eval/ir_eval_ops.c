/* ir_eval_ops.c: the reference interpreter's operators beyond its core
 * (ir_eval.c), one function each, listed in the table ev_ops at the end:
 * convolutions and pools, padding, normalisations, Dropout, arg-reductions
 * and TopK, indexing (GatherElements, Scatter*, GatherND, OneHot, Trilu,
 * CumSum), losses, quantization and integer products, the training
 * gradients (ConvGrad, PadGrad, ClassLossGrad).  Det and Einsum, sampling,
 * signals, LRN, MVN, ReverseSequence, MaxUnpool, the optimisers and
 * TfIdfVectorizer are in ir_eval_math.c; the operators whose output length
 * depends on the data in ir_eval_dd.c, MatrixExp in ir_eval_cell.c.
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

int64_t ev_prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* The sizes before and after axis a of x. */
static void around(const ev_tensor *x, int a, int64_t *outer, int64_t *inner)
{
	*outer = ev_prod(x->d, a);
	*inner = ev_prod(x->d + a + 1, x->rank - a - 1);
}

void ev_ints_or(const ir_node *n, const char *name, int cnt, int64_t def, int64_t *v)
{
	ir_attr *a = ir_attr_find(n, name);
	for (int i = 0; i < cnt; i++)
		v[i] = a && a->n == cnt ? a->ints[i] : def;
}

ev_tensor *ev_new_like(ev_run *r, ir_dtype dt, const ev_tensor *x) { return ev_new(r, dt, x->rank, x->d); }

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
	ev_ints_or(n, "strides", nsp, 1, w->st);
	ev_ints_or(n, "dilations", nsp, 1, w->dil);
	ev_ints_or(n, "pads", 2 * nsp, 0, p);
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
	int64_t isp = ev_prod(X->d + 2, nsp), ksp = ev_prod(w->k, nsp), osp = ev_prod(w->o, nsp);
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
	int64_t osp = ev_prod(w.o, w.nsp);
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
	ev_tensor *D = ev_new_like(r, n->out[0]->dtype, wrt ? W : X);
	conv_cx cx = {.X = X, .W = W, .dY = dY, .out = D};
	conv_terms(&w, X, G, M, Cg, wrt ? conv_grad_w : conv_grad_x, &cx);
	for (int64_t e = 0; e < D->n; e++)
		D->x[e] = ev_as_type(D->dt, D->x[e]);
	out[0] = D;
	return 0;
}

/* ConvTranspose: every X[n, c, i..] W[c, m, k..] added at Y[n, m, i st - pb + k dil]
 * (the scatter form of the specification); the output size from
 * output_shape (pads then derived: a total below 0 is none, as ONNX
 * Runtime has it, which also refuses an output_shape of st D + span or
 * more) or st (D - 1) + output_padding + span - pads. */
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
	ev_ints_or(n, "strides", nsp, 1, st);
	ev_ints_or(n, "dilations", nsp, 1, dil);
	ev_ints_or(n, "output_padding", nsp, 0, op);
	ev_ints_or(n, "pads", 2 * nsp, 0, p);
	ir_attr *osa = ir_attr_find(n, "output_shape");
	const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
	int upper = !strcmp(ap, "SAME_UPPER"), same = upper || !strcmp(ap, "SAME_LOWER");
	for (int a = 0; a < nsp; a++) {
		int64_t D = X->d[2 + a], span = dil[a] * (W->d[2 + a] - 1) + 1, full = st[a] * (D - 1) + op[a] + span;
		if (osa || same) {      /* total padding from the output size; SAME_UPPER puts less first */
			os[a] = osa && osa->n >= nsp ? osa->ints[osa->n - nsp + a] : D * st[a];
			int64_t total = full - os[a] < 0 ? 0 : full - os[a];
			if (osa && st[a] * D + span <= os[a])
				return ev_stop(r, n, "output_shape %lld of spatial axis %d needs an input size above %lld",
					       (long long)os[a], a, (long long)((os[a] - span) / st[a]));
			pb[a] = upper ? total / 2 : total - total / 2;
		} else {
			int valid = !strcmp(ap, "VALID");
			os[a] = full - (valid ? 0 : p[a] + p[nsp + a]);
			pb[a] = valid ? 0 : p[a];
		}
		od[2 + a] = os[a];
	}
	ev_tensor *Y = ev_new(r, n->out[0]->dtype, R, od);
	int64_t isp = ev_prod(X->d + 2, nsp), ksp = ev_prod(W->d + 2, nsp), osp = ev_prod(od + 2, nsp);
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
	int64_t isp = ev_prod(X->d + 2, nsp), ksp = ev_prod(w.k, nsp), osp = ev_prod(w.o, nsp);
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
	int64_t d[IR_MAX_RANK], sp = ev_prod(X->d + 2, X->rank - 2);
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
	ev_tensor *dX = ev_new_like(r, n->out[0]->dtype, X);
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
	int64_t C = X->d[1], outer = X->d[0], inner = ev_prod(X->d + 2, X->rank - 2);
	ev_tensor *Y = ev_new_like(r, X->dt, X), *RM = ev_new(r, Mn->dt, 1, &C), *RV = ev_new(r, Vr->dt, 1, &C);
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
	int64_t C = X->d[1], sp = ev_prod(X->d + 2, X->rank - 2);
	ev_tensor *Y = ev_new_like(r, X->dt, X);
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
	int64_t outer = ev_prod(X->d, a), inner = ev_prod(X->d + a, X->rank - a), sd[IR_MAX_RANK];
	for (int i = 0; i < X->rank; i++)
		sd[i] = i < a ? X->d[i] : 1;
	ev_tensor *Y = ev_new_like(r, X->dt, X), *Mo = ev_new(r, DT_F32, X->rank, sd), *Io = ev_new(r, DT_F32, X->rank, sd);
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
	ev_tensor *Y = ev_new_like(r, X->dt, X), *Mk = ev_new_like(r, DT_BOOL, X);
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
	ev_tensor *Y = ev_new_like(r, X->dt, X);
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
	ev_tensor *Y = ev_new_like(r, X->dt, X);
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
	ev_tensor *Y = ev_new_like(r, X->dt, X);
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
	ev_tensor *Y = ev_new_like(r, X->dt, I);
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
	ev_tensor *Y = ev_new_like(r, X->dt, X);
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
	*slice = ev_prod(X->d + q, X->rank - (int)q);
	return off * *slice;
}

static int ev_scatternd(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0], *I = in[1], *U = in[2];
	const char *red = ir_attr_string(n, "reduction", "none");
	int64_t q = I->d[I->rank - 1], tuples = I->n / (q ? q : 1), slice;
	if (q > X->rank || U->n != tuples * ev_prod(X->d + q, X->rank - (int)q))
		return ev_stop(r, n, "ScatterND index tuples of %lld for rank %d, or updates that do not fit",
			       (long long)q, X->rank);
	ev_tensor *Y = ev_new_like(r, X->dt, X);
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
	int64_t batch = ev_prod(X->d, bd), per = ev_prod(I->d + bd, I->rank - 1 - bd);
	ev_tensor xb = {.rank = X->rank - bd};        /* one batch element of X */
	memcpy(xb.d, X->d + bd, (size_t)xb.rank * sizeof *xb.d);
	int64_t xsz = ev_prod(xb.d, xb.rank), e = 0;
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
	ev_tensor *Y = ev_new_like(r, n->out[0]->dtype, X);
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
	int64_t C = L->d[1], N = L->d[0], sp = ev_prod(L->d + 2, L->rank - 2);
	if (T->n != N * sp)
		return ev_stop(r, n, "%lld targets for %lld positions", (long long)T->n, (long long)(N * sp));
	ev_tensor *Y = strcmp(red, "none") ? ev_new(r, L->dt, 0, NULL) : ev_new_like(r, L->dt, T);
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
	int64_t C = S->d[1], outer = S->d[0], inner = ev_prod(S->d + 2, S->rank - 2);
	ev_tensor *L = ev_new_like(r, S->dt, S);
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
	int64_t C = L->d[1], N = L->d[0], sp = ev_prod(L->d + 2, L->rank - 2);
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
	ev_tensor *D = ev_new_like(r, n->out[0]->dtype, wrt ? Wt : L);
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
	ev_tensor *Y = ev_new_like(r, t, X);
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
	ev_tensor *Y = ev_new_like(r, n->out[0]->dtype, X);
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
	ev_tensor *Y = ev_new_like(r, DT_U8, X), *S = ev_new(r, DT_F32, 0, NULL), *Z = ev_new(r, DT_U8, 0, NULL);
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

/* ---- integer products (quantized models) ----------------------------------------------------- */

/* t minus its zero point z (scalar, or per index along axis `a` of t). */
static ev_tensor *minus_zp(ev_run *r, const ev_tensor *t, const ev_tensor *z, int a)
{
	ev_tensor *o = ev_new_like(r, DT_F64, t);
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
	int64_t M = y->d[1], sp = ev_prod(y->d + 2, y->rank - 2);
	for (int64_t e = 0; e < y->n; e++) {
		double s = in[1]->x[0] * ws->x[ws->n == 1 ? 0 : (e / sp) % M] / in[6]->x[0];
		y->x[e] = saturate(t, nearbyint(y->x[e] * s) + in[7]->x[0]);
	}
	y->dt = t;
	out[0] = y;
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
