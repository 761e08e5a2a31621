/* ir_eval_cell.c: the reference interpreter's native Cell layer (OP_CELL)
 * and MatrixExp.
 *
 * A Cell node is computed from the equations of docs/cells.md, step by
 * step and one batch row at a time, by loops in double: the projections
 * are matrix-vector products over the parameters as nn.Linear lays them out
 * ([out, in]), the gates, the input dynamics and the other cells' updates
 * follow the page line by line.  Nothing of the lowering is used
 * (cells.c's cell_lower, the RECURRENCE it builds, its folded constants):
 * the cell's kind comes from its canonical name, and only the facts a
 * model states are read from the table of cells.h (option values and
 * defaults, the parameter and state lists in node-input order).  So a
 * lowering that computes something else than the page shows as a
 * validation error at the stage `cells`.
 *
 * Rounding: docs/cells.md makes every tensor float32, so the values that
 * are tensors of the layer -- the states carried from one step to the
 * next, the outputs, and what the page derives from parameters once (dtriv's
 * M, heavy_ball_rnn's gamma and xi, fastrnn's sigmoid(alpha) and
 * sigmoid(beta)) -- are rounded as ev_as_type rounds (not at all while
 * central differences run); everything within a step is in double.  (M
 * matters: an error of M repeats at every step, and with the extrapolating
 * NAG of dtriv an unrounded M alone moved outputs by 1e-4 of their size
 * within 18 steps.)  dtriv's M = base expm(S) is computed here in double,
 * by scaling and squaring (ev_expm), which is also the reference of
 * MatrixExp, the operator a training build computes M with at run time. */
#include "ir_eval_ops.h"
#include "cells.h"

#include <math.h>
#include <string.h>

/* ---- the matrix exponential ----------------------------------------------------------------- */

/* c = a b, all [n, n] row-major (c distinct from a and b). */
static void matmul_sq(const double *a, const double *b, double *c, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

/* E = expm(S), S [n, n]: S is scaled by 2^-k until its 1-norm is at most
 * 1/2, where the Taylor series to degree 18 leaves a remainder below
 * 0.5^19 / 19! (about 1e-23, far below double's resolution), and the sum
 * is squared k times.  -1 if S is not finite. */
int ev_expm(ev_run *r, const double *S, int64_t n, double *E)
{
	size_t nn = (size_t)(n * n);
	double norm = 0;
	for (int64_t j = 0; j < n; j++) {
		double col = 0;
		for (int64_t i = 0; i < n; i++)
			col += fabs(S[i * n + j]);
		norm = fmax(norm, col);
	}
	if (!isfinite(norm))
		return -1;
	int k = 0;
	while (norm > 0.5) {
		norm /= 2;
		k++;
	}
	double *A = arena_array(r->A, nn, sizeof *A), *term = arena_array(r->A, nn, sizeof *term);
	double *tmp = arena_array(r->A, nn, sizeof *tmp);
	for (size_t e = 0; e < nn; e++)
		A[e] = ldexp(S[e], -k);
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++)
			E[i * n + j] = term[i * n + j] = i == j;
	for (int d = 1; d <= 18; d++) {         /* term = A^d / d! */
		matmul_sq(term, A, tmp, n);
		for (size_t e = 0; e < nn; e++) {
			term[e] = tmp[e] / d;
			E[e] += term[e];
		}
	}
	for (int s = 0; s < k; s++) {
		matmul_sq(E, E, tmp, n);
		memcpy(E, tmp, nn * sizeof *E);
	}
	return 0;
}

/* MatrixExp (ops.def): Y = expm(X), X square [n, n]. */
int ev_matexp(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *X = in[0];
	if (X->rank != 2 || X->d[0] != X->d[1])
		return ev_stop(r, n, "MatrixExp of a matrix that is not square");
	ev_tensor *Y = ev_new(r, n->out[0]->dtype, 2, X->d);
	if (ev_expm(r, X->x, X->d[0], Y->x))
		return ev_stop(r, n, "MatrixExp of a matrix that is not finite");
	for (int64_t e = 0; e < Y->n; e++)
		Y->x[e] = ev_as_type(Y->dt, Y->x[e]);
	out[0] = Y;
	return 0;
}

/* ---- the layer -------------------------------------------------------------------------------- */

typedef enum { C_RNN, C_LSTM, C_GRU, C_DTRIV, C_IRNN, C_ATTN, C_HB, C_FAST } ckind;
typedef enum { Y_PLAIN, Y_MOMENTUM, Y_NAG, Y_ADAM, Y_RMSPROP } cdyn;

/* One Cell node: what it states about itself, its parameters, one batch
 * row's states and the scratch vectors of a step. */
typedef struct cref {
	ev_run *r;
	const ir_node *n;
	const cell_def *c;
	ckind kind;
	cdyn dyn;
	int64_t T, B, I, H, G, dk;
	int ns, np;
	cell_state st[CELL_MAX_STATES];
	cell_param pa[CELL_MAX_PARAMS];
	ev_tensor **in;
	double *s[CELL_MAX_STATES];     /* the states of the row being run */
	double *u, *rv, *a, *w1, *w2;   /* scratch, [max(G, dk * H)] each */
	double *M;                      /* dtriv: base expm(S) [H, H] */
	const char *act;                /* rnn, irnn, heavy_ball_rnn: option act */
	double mu, step, beta, eps, alpha;      /* options (step: s) */
	int64_t F, K;                   /* nag's restart, irnn's K or heavy_ball's steps */
	int extrapolate, g0_zero, length;
	double gamma, xi, sa, sb;       /* heavy_ball_rnn, fastrnn: from their parameters */
} cref;

/* The kind and dynamic of a canonical cell name: the four cells that stand
 * alone, or "<dynamic>_<base>" (docs/cells.md, section 3).  -1 if neither. */
static int kind_of(const char *name, ckind *k, cdyn *d)
{
	static const char *const alone[] = {"irnn", "momentum_attention", "heavy_ball_rnn", "fastrnn"};
	static const char *const bases[] = {"rnn", "lstm", "gru", "dtriv"};
	static const char *const dyns[] = {"plain", "momentum", "nag", "adam", "rmsprop"};
	*d = Y_PLAIN;
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, alone[i])) {
			*k = (ckind)(C_IRNN + i);
			return 0;
		}
	const char *us = strchr(name, '_');
	if (!us)
		return -1;
	int di = -1, bi = -1;
	for (int i = 0; i < 5; i++)
		if (strlen(dyns[i]) == (size_t)(us - name) && !strncmp(name, dyns[i], (size_t)(us - name)))
			di = i;
	for (int i = 0; i < 4; i++)
		if (!strcmp(us + 1, bases[i]))
			bi = i;
	if (di < 0 || bi < 0)
		return -1;
	*k = (ckind)bi;
	*d = (cdyn)di;
	return 0;
}

/* Parameter nm of the layer (cell_params' order is the node's input order). */
static const double *par(const cref *C, const char *nm)
{
	for (int k = 0; k < C->np; k++)
		if (!strcmp(C->pa[k].name, nm))
			return C->in[1 + C->ns + k]->x;
	return NULL;
}

/* State nm of the row being run; NULL if the cell has none of that name. */
static double *state(const cref *C, const char *nm)
{
	for (int k = 0; k < C->ns; k++)
		if (!strcmp(C->st[k].name, nm))
			return C->s[k];
	return NULL;
}

/* y = W x (+ b), W [rows, cols] (nn.Linear's layout). */
static void matvec(const double *W, int64_t rows, int64_t cols, const double *x, const double *b, double *y)
{
	for (int64_t i = 0; i < rows; i++) {
		double s = b ? b[i] : 0;
		for (int64_t j = 0; j < cols; j++)
			s += W[i * cols + j] * x[j];
		y[i] = s;
	}
}

static double sigm(double z) { return 1 / (1 + exp(-z)); }
static double softplus(double z) { return fmax(z, 0) + log1p(exp(-fabs(z))); }

/* max(z, 0), a NaN kept (as elem.def's Relu keeps it): an overflow reads the same in both runs. */
static double relu(double z) { return z < 0 ? 0 : z; }

/* The option act: tanh, relu or identity (the words cells.c accepts). */
static double act(const char *name, double z)
{
	if (!strcmp(name, "relu"))
		return relu(z);
	if (!strcmp(name, "identity"))
		return z;
	return tanh(z);
}

/* NAG's mu_t at the 1-based step t, with the restart period F. */
static double nag_mu(const cref *C, int64_t t)
{
	int64_t k = C->F > 0 ? (t - 1) % C->F + 1 : t;
	return (double)(k - 1) / (double)(k + 2);
}

/* ---- base cells with their input dynamic ---------------------------------------------------- */

/* The pre-activation a [G] from the input projection u and the recurrent
 * term rv (both [G]): the dynamic makes d of u (updating its states), then
 * a = d + rv, except the GRU's candidate block, which is d alone (its
 * recurrent term is gated by r), and NAG's extrapolating form, which
 * extrapolates q = rv - s u instead. */
static void pre_activation(cref *C, int64_t t, const double *u, const double *rv, double *a)
{
	double *v = state(C, "v"), *m = state(C, "m"), *q = state(C, "q");
	double mu = C->dyn == Y_RMSPROP ? 0 : C->mu, s = C->step, mut = C->dyn == Y_NAG ? nag_mu(C, t) : 0;
	for (int64_t j = 0; j < C->G; j++) {
		double d = u[j];
		switch (C->dyn) {
		case Y_PLAIN:
			break;
		case Y_MOMENTUM:
			d = v[j] = mu * v[j] + s * u[j];
			break;
		case Y_NAG:
			if (C->extrapolate) {
				double qn = rv[j] - s * u[j];
				a[j] = qn + mut * (qn - q[j]);
				q[j] = qn;
				continue;
			}
			d = v[j] = mut * v[j] + s * u[j];
			break;
		case Y_ADAM: case Y_RMSPROP:
			v[j] = mu * v[j] + s * u[j];
			m[j] = C->beta * m[j] + (1 - C->beta) * u[j] * u[j];
			d = v[j] / sqrt(m[j] + C->eps);
			break;
		}
		a[j] = C->kind == C_GRU && j >= 2 * C->H ? d : d + rv[j];
	}
}

/* One step of rnn, lstm, gru or dtriv: y [H] is the new h. */
static void step_base(cref *C, int64_t t, const double *x, double *y)
{
	int64_t H = C->H, G = C->G;
	double *h = state(C, "h"), *u = C->u, *rv = C->rv, *a = C->a;
	if (C->kind == C_DTRIV) {       /* no b_x; the recurrent term is the row vector h times M */
		matvec(par(C, "W_x"), H, C->I, x, NULL, u);
		for (int64_t j = 0; j < H; j++) {
			double s = 0;
			for (int64_t i = 0; i < H; i++)
				s += h[i] * C->M[i * H + j];
			rv[j] = s;
		}
	} else {
		matvec(par(C, "W_x"), G, C->I, x, par(C, "b_x"), u);
		matvec(par(C, "W_h"), G, H, h, par(C, "b_h"), rv);
	}
	pre_activation(C, t, u, rv, a);
	switch (C->kind) {
	case C_RNN:
		for (int64_t j = 0; j < H; j++)
			y[j] = act(C->act, a[j]);
		break;
	case C_LSTM: {                  /* blocks i f g o */
		double *c = state(C, "c");
		for (int64_t j = 0; j < H; j++) {
			double i = sigm(a[j]), f = sigm(a[H + j]), g = tanh(a[2 * H + j]), o = sigm(a[3 * H + j]);
			c[j] = f * c[j] + i * g;
			y[j] = o * tanh(c[j]);
		}
		break;
	}
	case C_GRU:                     /* blocks r z n; rv's n block includes b_hn */
		for (int64_t j = 0; j < H; j++) {
			double r = sigm(a[j]), z = sigm(a[H + j]), nc = tanh(a[2 * H + j] + r * rv[2 * H + j]);
			y[j] = (1 - z) * nc + z * h[j];
		}
		break;
	case C_DTRIV: {                 /* modrelu(a; b) = sign(a) relu(|a| + b), sign(0) = 0 */
		const double *b = par(C, "b");
		for (int64_t j = 0; j < H; j++)
			y[j] = (a[j] > 0 ? 1 : a[j] < 0 ? -1 : 0) * relu(fabs(a[j]) + b[j]);
		break;
	}
	default:
		break;
	}
	memcpy(h, y, (size_t)H * sizeof *h);
}

/* dtriv's M = base expm(S), S = triu(A, 1) - triu(A, 1)^T. */
static int dtriv_M(cref *C)
{
	int64_t H = C->H;
	const double *A = par(C, "A"), *base = par(C, "base");
	double *S = arena_array(C->r->A, (size_t)(H * H), sizeof *S);
	double *E = arena_array(C->r->A, (size_t)(H * H), sizeof *E);
	C->M = arena_array(C->r->A, (size_t)(H * H), sizeof *C->M);
	for (int64_t i = 0; i < H; i++)
		for (int64_t j = 0; j < H; j++)
			S[i * H + j] = (j > i ? A[i * H + j] : 0) - (i > j ? A[j * H + i] : 0);
	if (ev_expm(C->r, S, H, E))
		return ev_stop(C->r, C->n, "dtriv's parameter A is not finite");
	matmul_sq(base, E, C->M, H);
	for (int64_t e = 0; e < H * H; e++)
		C->M[e] = ev_as_type(DT_F32, C->M[e]);
	return 0;
}

/* ---- the other cells ------------------------------------------------------------------------ */

/* irnn: K inner steps from g_0 = h_{m-1} (or 0) towards the fixed point. */
static void step_irnn(cref *C, int64_t t, const double *x, double *y)
{
	int64_t H = C->H;
	double *h = state(C, "h"), *u = C->u, *g = C->a, *sum = C->w1, *pre = C->w2;
	const double *eta = par(C, "eta"), *Wh = par(C, "W_h");
	matvec(par(C, "W_x"), H, C->I, x, par(C, "b_x"), u);
	for (int64_t j = 0; j < H; j++)
		g[j] = C->g0_zero ? 0 : h[j];
	for (int64_t k = 0; k < C->K; k++) {
		for (int64_t j = 0; j < H; j++)
			sum[j] = g[j] + h[j];
		matvec(Wh, H, H, sum, NULL, pre);
		for (int64_t j = 0; j < H; j++)
			g[j] += eta[k * H + j] * (act(C->act, pre[j] + u[j]) - C->alpha * sum[j]);
	}
	memcpy(y, g, (size_t)H * sizeof *y);
	memcpy(h, g, (size_t)H * sizeof *h);
}

/* heavy_ball_rnn: the input kicks the velocity m, then `steps` Euler steps
 * of size 1/n of h' = act(m), m' = -gamma m + tanh(W_h h + b_h) - xi h. */
static void step_hb(cref *C, int64_t t, const double *x, double *y)
{
	int64_t H = C->H;
	double *h = state(C, "h"), *m = state(C, "m"), *u = C->u, *f = C->w1, dt = 1.0 / (double)C->K;
	matvec(par(C, "W_x"), H, C->I, x, par(C, "b_x"), u);
	for (int64_t j = 0; j < H; j++)
		m[j] += u[j];
	for (int64_t k = 0; k < C->K; k++) {
		matvec(par(C, "W_h"), H, H, h, par(C, "b_h"), f);      /* of h_{k-1}, before the update */
		for (int64_t j = 0; j < H; j++) {
			double hn = h[j] + dt * act(C->act, m[j]);
			m[j] += dt * (-C->gamma * m[j] + tanh(f[j]) - C->xi * h[j]);
			h[j] = hn;
		}
	}
	memcpy(y, h, (size_t)H * sizeof *y);
}

/* fastrnn: h_t = sigmoid(beta) h + sigmoid(alpha) tanh(W_x x + b_x + W_h h). */
static void step_fast(cref *C, int64_t t, const double *x, double *y)
{
	int64_t H = C->H;
	double *h = state(C, "h"), *u = C->u, *rv = C->rv;
	matvec(par(C, "W_x"), H, C->I, x, par(C, "b_x"), u);
	matvec(par(C, "W_h"), H, H, h, NULL, rv);
	for (int64_t j = 0; j < H; j++)
		y[j] = h[j] = C->sb * h[j] + C->sa * tanh(u[j] + rv[j]);
}

/* phi(z) = elu(z) + 1. */
static double phi(double z) { return z >= 0 ? z + 1 : exp(z); }

/* momentum_attention: S (dk x H, row-major) gathers k v^T, by the momentum
 * p (weighting recurrent) or by the weights w_t of a run of T steps
 * (weighting length); y = q^T S / (q^T z + 1e-6). */
static void step_attn(cref *C, int64_t t, const double *x, double *y)
{
	int64_t H = C->H, dk = C->dk;
	double *S = state(C, "S"), *z = state(C, "z"), *p = state(C, "p");
	double *q = C->u, *k = C->rv, *v = C->a;
	matvec(par(C, "W_q"), dk, C->I, x, par(C, "b_q"), q);
	matvec(par(C, "W_k"), dk, C->I, x, par(C, "b_k"), k);
	matvec(par(C, "W_v"), H, C->I, x, par(C, "b_v"), v);
	for (int64_t i = 0; i < dk; i++) {
		q[i] = phi(q[i]);
		k[i] = phi(k[i]);
	}
	double e = (double)(C->T - t + 1), w = 0;
	if (C->length)
		w = C->mu == 1.0 ? C->step * e : C->step * (1 - pow(C->mu, e)) / (1 - C->mu);
	for (int64_t i = 0; i < dk; i++)
		for (int64_t j = 0; j < H; j++) {
			double kv = k[i] * v[j];
			if (C->length) {
				S[i * H + j] += w * kv;
			} else {
				p[i * H + j] = C->mu * p[i * H + j] + kv;
				S[i * H + j] += C->step * p[i * H + j];
			}
		}
	double den = 1e-6;
	for (int64_t i = 0; i < dk; i++) {
		z[i] += k[i];
		den += q[i] * z[i];
	}
	for (int64_t j = 0; j < H; j++) {
		double num = 0;
		for (int64_t i = 0; i < dk; i++)
			num += q[i] * S[i * H + j];
		y[j] = num / den;
	}
}

/* ---- the node ----------------------------------------------------------------------------------- */

/* Reads the node: its cell, sizes, options, parameter and state lists,
 * and checks the inputs' sizes against them.  0, or ev_stop's 1. */
static int cell_read(cref *C, ev_run *r, const ir_node *n, ev_tensor **in)
{
	memset(C, 0, sizeof *C);
	C->r = r;
	C->n = n;
	C->in = in;
	const char *name = ir_attr_string(n, "cell", NULL);
	C->c = cell_find(name);
	if (!C->c || kind_of(cell_name(C->c), &C->kind, &C->dyn))
		return ev_noref(r, n, "cell '%s' has no reference", name ? name : "(none)");
	const ev_tensor *X = in[0];
	int ax = (int)ir_attr_int(n, "seq_axis", 0);
	if (X->rank != 3 || (ax != 0 && ax != 1))
		return ev_stop(r, n, "a Cell layer over an input of rank %d (time axis %d)", X->rank, ax);
	C->T = X->d[ax];
	C->B = X->d[1 - ax];
	C->I = X->d[2];
	C->H = (int64_t)cell_opt_num(C->c, n, "hidden");
	C->G = (C->kind == C_LSTM ? 4 : C->kind == C_GRU ? 3 : 1) * C->H;
	int64_t key = (int64_t)cell_opt_num(C->c, n, "key");
	C->dk = key > 0 ? key : C->H;
	C->np = cell_params(C->c, n, C->I, C->H, C->pa, CELL_MAX_PARAMS);
	C->ns = cell_states(C->c, n, C->I, C->H, C->st, CELL_MAX_STATES);
	if (C->H < 1 || C->np < 0 || C->ns < 0 || n->nin != 1 + C->ns + C->np)
		return ev_stop(r, n, "%s with options or inputs it does not take", cell_name(C->c));
	for (int k = 0; k < C->np; k++) {
		const cell_param *p = &C->pa[k];
		int64_t want = p->dims[0] * (p->rank > 1 ? p->dims[1] : 1);
		if (!in[1 + C->ns + k] || in[1 + C->ns + k]->n != want)
			return ev_stop(r, n, "parameter %s of %s is not of %lld elements", p->name, cell_name(C->c),
				    (long long)want);
	}
	for (int k = 0; k < C->ns; k++) {
		const ev_tensor *s0 = in[1 + k];
		if (s0 && (s0->rank != 2 || s0->d[0] != C->B || s0->d[1] != C->st[k].size))
			return ev_stop(r, n, "initial state %s of %s is not [%lld, %lld]", C->st[k].name,
				    cell_name(C->c), (long long)C->B, (long long)C->st[k].size);
	}
	return 0;
}

/* The options and the values derived from parameters, once per node. */
static int cell_prepare(cref *C)
{
	const cell_def *c = C->c;
	const ir_node *n = C->n;
	C->mu = cell_opt_num(c, n, "mu");
	C->step = cell_opt_num(c, n, "s");
	C->beta = cell_opt_num(c, n, "beta");
	C->eps = cell_opt_num(c, n, "eps");
	C->alpha = cell_opt_num(c, n, "alpha");
	C->F = (int64_t)cell_opt_num(c, n, "restart");
	C->K = (int64_t)cell_opt_num(c, n, C->kind == C_HB ? "steps" : "K");
	C->act = cell_opt_word(c, n, "act");
	C->extrapolate = C->dyn == Y_NAG && !strcmp(cell_opt_word(c, n, "form"), "extrapolate");
	C->g0_zero = !strcmp(cell_opt_word(c, n, "g0"), "zero");
	C->length = !strcmp(cell_opt_word(c, n, "weighting"), "length");
	if (C->extrapolate && C->kind == C_GRU)
		return ev_stop(C->r, n, "nag_gru with form=extrapolate is not a cell (docs/cells.md)");
	if ((C->kind == C_IRNN || C->kind == C_HB) && C->K < 1)
		return ev_stop(C->r, n, "%s with %lld inner steps", cell_name(c), (long long)C->K);
	if (C->kind == C_HB) {
		C->gamma = ev_as_type(DT_F32, sigm(par(C, "w")[0]));
		C->xi = ev_as_type(DT_F32, softplus(par(C, "c")[0]));
	}
	if (C->kind == C_FAST) {
		C->sa = ev_as_type(DT_F32, sigm(par(C, "alpha")[0]));
		C->sb = ev_as_type(DT_F32, sigm(par(C, "beta")[0]));
	}
	int64_t wide = C->dk * C->H > C->G ? C->dk * C->H : C->G;
	double **scratch[] = {&C->u, &C->rv, &C->a, &C->w1, &C->w2};
	for (size_t i = 0; i < sizeof scratch / sizeof *scratch; i++)
		*scratch[i] = arena_array(C->r->A, (size_t)wide, sizeof **scratch[i]);
	for (int k = 0; k < C->ns; k++)
		C->s[k] = arena_array(C->r->A, (size_t)C->st[k].size, sizeof *C->s[k]);
	return C->kind == C_DTRIV ? dtriv_M(C) : 0;
}

/* Cell (ops.def, cells.h): inputs [X, initial states.., parameters..],
 * outputs [Y, final states..]; X and Y [T, B, .] or [B, T, .] (seq_axis),
 * states [B, size], zero where no initial value is given. */
int ev_cell(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	cref C0, *C = &C0;
	if (cell_read(C, r, n, in) || cell_prepare(C))
		return 1;
	int ax = (int)ir_attr_int(n, "seq_axis", 0);
	int64_t T = C->T, B = C->B, H = C->H, yd[3] = {T, B, H};
	if (ax) {
		yd[0] = B;
		yd[1] = T;
	}
	ir_dtype ydt = n->out[0] ? n->out[0]->dtype : DT_F32;
	ev_tensor *Y = ev_new(r, ydt, 3, yd), *fin[CELL_MAX_STATES];
	for (int k = 0; k < C->ns; k++) {
		int64_t fd[2] = {B, C->st[k].size};
		fin[k] = ev_new(r, 1 + k < n->nout && n->out[1 + k] ? n->out[1 + k]->dtype : DT_F32, 2, fd);
	}
	double *y = arena_array(r->A, (size_t)H, sizeof *y);
	for (int64_t b = 0; b < B; b++) {
		for (int k = 0; k < C->ns; k++)
			for (int64_t j = 0; j < C->st[k].size; j++)
				C->s[k][j] = in[1 + k] ? in[1 + k]->x[b * C->st[k].size + j] : 0;
		for (int64_t t = 0; t < T; t++) {
			const double *x = in[0]->x + (ax ? b * T + t : t * B + b) * C->I;
			switch (C->kind) {
			case C_IRNN: step_irnn(C, t + 1, x, y); break;
			case C_ATTN: step_attn(C, t + 1, x, y); break;
			case C_HB: step_hb(C, t + 1, x, y); break;
			case C_FAST: step_fast(C, t + 1, x, y); break;
			default: step_base(C, t + 1, x, y); break;
			}
			/* the states between steps are float32 tensors */
			for (int k = 0; k < C->ns; k++)
				for (int64_t j = 0; j < C->st[k].size; j++)
					C->s[k][j] = ev_as_type(DT_F32, C->s[k][j]);
			double *yo = Y->x + (ax ? b * T + t : t * B + b) * H;
			for (int64_t j = 0; j < H; j++)
				yo[j] = ev_as_type(ydt, y[j]);
		}
		for (int k = 0; k < C->ns; k++)
			for (int64_t j = 0; j < C->st[k].size; j++)
				fin[k]->x[b * C->st[k].size + j] = ev_as_type(fin[k]->dt, C->s[k][j]);
	}
	out[0] = Y;
	for (int k = 0; k < C->ns && 1 + k < n->nout; k++)
		out[1 + k] = fin[k];
	return 0;
}
