/* rt_ode.c: the ODE solvers of the ODE blocks and hybrids (docs/cells.md,
 * "ODE blocks"; cellrt.h, "ordinary differential equations").
 *
 * One table, rt_ode_tableaus, holds every method's Butcher tableau: Euler,
 * the explicit midpoint method and the classical fourth-order Runge-Kutta
 * method, taken in equal steps, and Dormand and Prince's 5(4) pair with
 * error control.  One stepper (rk_step) takes a step of any of them; the
 * drivers around it are
 *
 *   rt_ode_solve     fixed steps, or the adaptive loop: the first step from
 *                    Hairer, Norsett and Wanner's starting-step algorithm
 *                    (two evaluations of F), then each step accepted when
 *                    its error ratio is at most 1, the next step
 *                    h * clip(0.9 ratio^(-1/5)) within [0.2, 10] after a
 *                    rejection and within [1, 10] after an acceptance (10
 *                    when the ratio is 0), the last step cut to end at t1;
 *                    an FSAL method reuses an accepted step's last slope,
 *                    so a step tried costs s - 1 evaluations;
 *   rt_ode_backprop  the reverse of the recorded steps (the adjoint of the
 *                    discrete map, step sizes held fixed);
 *   rt_ode_adjoint   the continuous adjoint: the system [y, a, g] solved
 *                    backward by rt_ode_solve's own loop;
 * and the ODE layers of emitted code on top of them: rt_ode_block_f32 (an
 * ODE block: x -> h(t1)) and rt_ode_rnn_f32 (an ODE-RNN hybrid: a flow over
 * each observation's gap, then an update), with the dynamics of the node,
 * hbnode, ghbnode, anode and sonode models.  The gradients (rt_ode_backprop,
 * rt_ode_adjoint) are tested on their own; no emitted code calls them yet.
 *
 * The state, the slopes, the times and the error norm are double (an
 * ODE block's float input and output are converted once, before and after
 * the solve), so that the steps an adaptive solve takes are those of a
 * float64 implementation of the same algorithm.  The whole state is one
 * system: the RMS of the error is taken over every element of every row,
 * so the rows of a batch share the steps (what torchdiffeq does with a
 * batch tensor).
 *
 * Legend: n state elements, s stages, h the step (signed: negative when
 * t1 < t0), T the tableau.
 */
#include "cellrt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tableaus --------------------------------------------------------------- */

const rt_ode_tableau rt_ode_tableaus[RT_ODE_METHODS] = {
	[RT_ODE_EULER] = {"euler", 1, 1, 0, 0, {0}, {{0}}, {1}, {0}},
	[RT_ODE_MIDPOINT] = {"midpoint", 2, 2, 0, 0, {0, 0.5}, {{0}, {0.5}}, {0, 1}, {0}},
	[RT_ODE_RK4] = {"rk4", 4, 4, 0, 0, {0, 0.5, 0.5, 1},
			{{0}, {0.5}, {0, 0.5}, {0, 0, 1}},
			{1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}, {0}},
	/* Dormand and Prince (1980): the fifth-order result, its fourth-order
	 * companion in e, the seventh stage at the result (FSAL) */
	[RT_ODE_DOPRI5] = {"dopri5", 7, 5, 1, 1, {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1},
			   {{0},
			    {1.0 / 5},
			    {3.0 / 40, 9.0 / 40},
			    {44.0 / 45, -56.0 / 15, 32.0 / 9},
			    {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
			    {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
			    {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}},
			   {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0},
			   {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200, 22.0 / 525,
			    -1.0 / 40}},
};

int rt_ode_method_lookup(const char *name)
{
	for (int m = 0; name && m < RT_ODE_METHODS; m++)
		if (!strcmp(rt_ode_tableaus[m].name, name))
			return m;
	return -1;
}

/* Stage inputs a step keeps for its reverse: all but an FSAL method's last,
 * whose slope reaches only the next step. */
static int taped_stages(const rt_ode_tableau *T) { return T->stages - T->fsal; }

/* ---- the tape --------------------------------------------------------------------- */

void rt_ode_tape_clear(rt_ode_tape *tp)
{
	tp->nsteps = 0;
	tp->nseg = 0;
}

void rt_ode_tape_free(rt_ode_tape *tp)
{
	free(tp->t);
	free(tp->h);
	free(tp->Y);
	free(tp->seg);
	memset(tp, 0, sizeof *tp);
}

/* Room for one more step of the tape's method and size; the stage inputs
 * of the step being tried, or NULL when out of memory. */
static double *tape_slot(rt_ode_tape *tp)
{
	int64_t per = (int64_t)taped_stages(&rt_ode_tableaus[tp->method]) * tp->n;
	if (tp->nsteps == tp->cap) {
		int64_t cap = tp->cap ? 2 * tp->cap : 16;
		double *t = realloc(tp->t, (size_t)cap * sizeof *t);
		if (t)
			tp->t = t;
		double *h = realloc(tp->h, (size_t)cap * sizeof *h);
		if (h)
			tp->h = h;
		double *Y = realloc(tp->Y, (size_t)(cap * per) * sizeof *Y);
		if (Y)
			tp->Y = Y;
		if (!t || !h || !Y)
			return NULL;
		tp->cap = cap;
	}
	return tp->Y + tp->nsteps * per;
}

/* A new segment for a solve of method m and n elements: RT_ERR_ARG when
 * the tape holds another method's or size's steps. */
static int tape_open_segment(rt_ode_tape *tp, int m, int64_t n)
{
	if (tp->nseg == 0) {
		tp->method = m;
		tp->n = n;
	}
	if (tp->method != m || tp->n != n)
		return RT_ERR_ARG;
	if (tp->nseg + 1 >= tp->capseg) {
		int64_t cap = tp->capseg ? 2 * tp->capseg : 16;
		int64_t *seg = realloc(tp->seg, (size_t)cap * sizeof *seg);
		if (!seg)
			return RT_ERR_NOMEM;
		tp->seg = seg;
		tp->capseg = cap;
	}
	tp->seg[tp->nseg] = tp->nsteps;
	tp->seg[tp->nseg + 1] = tp->nsteps;
	tp->nseg++;
	return RT_OK;
}

/* ---- one step ----------------------------------------------------------------------- */

typedef struct stepper {
	const rt_ode_tableau *T;
	rt_ode_fn f;
	void *ctx;
	int64_t n;
	double *k[RT_ODE_MAX_STAGES];    /* slopes [n] each */
	double *Y;                       /* a stage's input [n] when no tape holds it */
	double *y1;                      /* the result [n] (an FSAL method's last stage input) */
	rt_ode_stats *st;
} stepper;

/* Y = y + h sum_{j<i} a[i][j] k_j */
static void stage_input(const stepper *S, int i, double h, const double *y, double *Y)
{
	const double *a = S->T->a[i];
	for (int64_t e = 0; e < S->n; e++) {
		double acc = 0;
		for (int j = 0; j < i; j++)
			acc += a[j] * S->k[j][e];
		Y[e] = y[e] + h * acc;
	}
}

/* One step of size h from (t, y) into S->y1; k[0] already holds F(t, y)
 * when have_k0.  Ys: where stage i's input goes (the tape's slot), or NULL.
 * Returns the error ratio (0 for a fixed-step method). */
static double rk_step(stepper *S, double t, double h, const double *y, int have_k0, double *Ys, double rtol,
		      double atol)
{
	const rt_ode_tableau *T = S->T;
	int s = T->stages;
	for (int i = 0; i < s; i++) {
		if (i == 0 && have_k0) {
			if (Ys)
				memcpy(Ys, y, (size_t)S->n * sizeof *y);
			continue;
		}
		double *Y = T->fsal && i == s - 1 ? S->y1 : Ys ? Ys + (int64_t)i * S->n : S->Y;
		if (i == 0)
			memcpy(Y, y, (size_t)S->n * sizeof *y);
		else
			stage_input(S, i, h, y, Y);
		S->f(S->ctx, t + T->c[i] * h, Y, S->k[i]);
		S->st->nfe++;
	}
	if (!T->fsal)
		for (int64_t e = 0; e < S->n; e++) {
			double acc = 0;
			for (int j = 0; j < s; j++)
				acc += T->b[j] * S->k[j][e];
			S->y1[e] = y[e] + h * acc;
		}
	if (!T->adaptive)
		return 0;
	double sum = 0;
	for (int64_t e = 0; e < S->n; e++) {
		double acc = 0;
		for (int j = 0; j < s; j++)
			acc += T->e[j] * S->k[j][e];
		double sc = atol + rtol * fmax(fabs((double)y[e]), fabs((double)S->y1[e]));
		double r = h * acc / sc;
		sum += r * r;
	}
	return sqrt(sum / (double)S->n);
}

/* sqrt(mean((x / scale)^2)), scale = atol + rtol |y| */
static double scaled_rms(const double *x, const double *y, int64_t n, double rtol, double atol)
{
	double sum = 0;
	for (int64_t e = 0; e < n; e++) {
		double r = x[e] / (atol + rtol * fabs((double)y[e]));
		sum += r * r;
	}
	return sqrt(sum / (double)n);
}

/* The first step's size (positive) by the starting-step algorithm of
 * Hairer, Norsett and Wanner (Solving ODEs I, II.4), as torchdiffeq and
 * scipy choose it for a method whose error estimate has order 4; leaves
 * F(t0, y0) in k[0].  Two evaluations of F. */
static double first_step(stepper *S, double t0, double dir, const double *y0, double rtol, double atol)
{
	int64_t n = S->n;
	double *f0 = S->k[0], *f1 = S->k[1], *yp = S->Y;
	S->f(S->ctx, t0, y0, f0);
	S->st->nfe++;
	double d0 = scaled_rms(y0, y0, n, rtol, atol), d1 = scaled_rms(f0, y0, n, rtol, atol);
	double h0 = d0 < 1e-5 || d1 < 1e-5 ? 1e-6 : 0.01 * d0 / d1;
	for (int64_t e = 0; e < n; e++)
		yp[e] = y0[e] + dir * h0 * f0[e];
	S->f(S->ctx, t0 + dir * h0, yp, f1);
	S->st->nfe++;
	double sum = 0;
	for (int64_t e = 0; e < n; e++) {
		double r = ((double)f1[e] - f0[e]) / (atol + rtol * fabs((double)y0[e]));
		sum += r * r;
	}
	double d2 = sqrt(sum / (double)n) / h0;
	double h1 = d1 <= 1e-15 && d2 <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 1.0 / 5);
	return fmin(100 * h0, h1);
}

/* ---- solving ------------------------------------------------------------------------- */

static int stepper_init(stepper *S, const rt_ode_opts *o, rt_ode_fn f, void *ctx, int64_t n, rt_ode_stats *st,
			double **mem)
{
	const rt_ode_tableau *T = &rt_ode_tableaus[o->method];
	*S = (stepper){.T = T, .f = f, .ctx = ctx, .n = n, .st = st};
	double *m = malloc((size_t)(T->stages + 2) * (size_t)n * sizeof *m);
	if (!m)
		return RT_ERR_NOMEM;
	for (int i = 0; i < T->stages; i++)
		S->k[i] = m + (int64_t)i * n;
	S->Y = m + (int64_t)T->stages * n;
	S->y1 = S->Y + n;
	*mem = m;
	return RT_OK;
}

static int solve(const rt_ode_opts *o, rt_ode_fn f, void *ctx, int64_t n, double *y, double t0, double t1,
		 rt_ode_tape *tape, rt_ode_stats *st)
{
	if (o->method < 0 || o->method >= RT_ODE_METHODS || n < 1 || !y || !st)
		return RT_ERR_ARG;
	const rt_ode_tableau *T = &rt_ode_tableaus[o->method];
	if (T->adaptive ? !(o->rtol >= 0 && o->atol >= 0 && o->rtol + o->atol > 0 && o->max_steps >= 1)
			: o->steps < 1)
		return RT_ERR_ARG;
	int opened = tape ? tape_open_segment(tape, o->method, n) : RT_OK;
	if (opened != RT_OK)
		return opened;
	double span = fabs(t1 - t0), dir = t1 < t0 ? -1 : 1, t = t0, done = 0;
	if (span == 0)
		return RT_OK;
	stepper S;
	double *mem;
	if (stepper_init(&S, o, f, ctx, n, st, &mem) != RT_OK)
		return RT_ERR_NOMEM;
	int status = RT_OK, have_k0 = T->adaptive;
	/* fixed: step k runs from t0 + k h; adaptive: h is the next step to try */
	double h = T->adaptive ? first_step(&S, t0, dir, y, o->rtol, o->atol) : span / (double)o->steps;
	for (int64_t taken = 0, accepted = 0; T->adaptive ? done < span : accepted < o->steps;) {
		if (T->adaptive && taken >= o->max_steps) {
			status = RT_ERR_ODE_STEPS;
			break;
		}
		int last = T->adaptive && h >= span - done;
		double hh = last ? span - done : h;
		double *Ys = tape ? tape_slot(tape) : NULL;
		if (tape && !Ys) {
			status = RT_ERR_NOMEM;
			break;
		}
		double ratio = rk_step(&S, t, dir * hh, y, have_k0, Ys, o->rtol, o->atol);
		taken++;
		if (!isfinite(ratio)) {
			status = RT_ERR_NONFINITE;
			break;
		}
		if (ratio > 1) {
			st->rejected++;
			h = hh * fmin(10, fmax(0.2, 0.9 * pow(ratio, -1.0 / 5)));
			continue;
		}
		if (tape) {
			tape->t[tape->nsteps] = t;
			tape->h[tape->nsteps] = dir * hh;
			tape->nsteps++;
			tape->seg[tape->nseg] = tape->nsteps;
		}
		memcpy(y, S.y1, (size_t)n * sizeof *y);
		st->accepted++;
		accepted++;
		if (T->adaptive) {
			done = last ? span : done + hh;
			t = last ? t1 : t0 + dir * done;
			h = ratio == 0 ? 10 * hh : hh * fmin(10, fmax(1, 0.9 * pow(ratio, -1.0 / 5)));
		} else {
			t = t0 + dir * h * (double)accepted;
		}
		if (T->fsal) {
			double *k0 = S.k[0];
			S.k[0] = S.k[T->stages - 1];
			S.k[T->stages - 1] = k0;
		}
		have_k0 = T->fsal;
	}
	free(mem);
	return status;
}

int rt_ode_solve(const rt_ode_opts *o, rt_ode_fn f, void *ctx, int64_t n, double *y, double t0, double t1,
		 rt_ode_tape *tape, rt_ode_stats *st)
{
	return solve(o, f, ctx, n, y, t0, t1, tape, st);
}

/* ---- gradients ------------------------------------------------------------------------ */

int rt_ode_backprop(const rt_ode_tape *tp, int64_t seg, rt_ode_vjp vjp, void *ctx, double *a, double *gp,
		    rt_ode_stats *st)
{
	if (!tp || seg < 0 || seg >= tp->nseg || !a || !st)
		return RT_ERR_ARG;
	const rt_ode_tableau *T = &rt_ode_tableaus[tp->method];
	int s = taped_stages(T);
	int64_t n = tp->n;
	/* kb[i] = dL/dk_i of the step being reversed; Yb = dL/dY_i of one stage */
	double *kb = malloc((size_t)(s + 1) * (size_t)n * sizeof *kb), *Yb = kb + (int64_t)s * n;
	if (!kb)
		return RT_ERR_NOMEM;
	for (int64_t step = tp->seg[seg + 1] - 1; step >= tp->seg[seg]; step--) {
		double t = tp->t[step], h = tp->h[step];
		const double *Y = tp->Y + step * s * n;
		for (int i = 0; i < s; i++)
			for (int64_t e = 0; e < n; e++)
				kb[(int64_t)i * n + e] = h * T->b[i] * a[e];
		for (int i = s - 1; i >= 0; i--) {
			vjp(ctx, t + T->c[i] * h, Y + (int64_t)i * n, kb + (int64_t)i * n, Yb, gp);
			st->nfe++;
			for (int64_t e = 0; e < n; e++)
				a[e] += Yb[e];
			for (int j = 0; j < i; j++)
				if (T->a[i][j] != 0)
					for (int64_t e = 0; e < n; e++)
						kb[(int64_t)j * n + e] += h * T->a[i][j] * Yb[e];
		}
		st->accepted++;
	}
	free(kb);
	return RT_OK;
}

/* The adjoint's dynamics on z = [y, a, g]: y' = F, a' = -a dF/dy,
 * g' = -a dF/dp. */
typedef struct adjoint_ctx {
	rt_ode_fn f;
	rt_ode_vjp vjp;
	void *ctx;
	int64_t n, np;
} adjoint_ctx;

static void adjoint_dynamics(void *arg, double t, const double *z, double *dz)
{
	const adjoint_ctx *A = arg;
	int64_t n = A->n, N = 2 * n + A->np;
	A->f(A->ctx, t, z, dz);
	memset(dz + 2 * n, 0, (size_t)A->np * sizeof *dz);
	A->vjp(A->ctx, t, z, z + n, dz + n, dz + 2 * n);
	for (int64_t e = n; e < N; e++)
		dz[e] = -dz[e];
}

int rt_ode_adjoint(const rt_ode_opts *o, rt_ode_fn f, rt_ode_vjp vjp, void *ctx, int64_t n, int64_t np, double *y,
		   double *a, double *gp, double t0, double t1, rt_ode_stats *st)
{
	if (n < 1 || np < 0 || !y || !a || (np && !gp))
		return RT_ERR_ARG;
	int64_t N = 2 * n + np;
	double *z = calloc((size_t)N, sizeof *z);
	if (!z)
		return RT_ERR_NOMEM;
	memcpy(z, y, (size_t)n * sizeof *z);
	memcpy(z + n, a, (size_t)n * sizeof *z);
	adjoint_ctx A = {f, vjp, ctx, n, np};
	int status = solve(o, adjoint_dynamics, &A, N, z, t1, t0, NULL, st);
	if (status == RT_OK) {
		memcpy(y, z, (size_t)n * sizeof *z);
		memcpy(a, z + n, (size_t)n * sizeof *z);
		for (int64_t e = 0; e < np; e++)
			gp[e] += z[2 * n + e];
	}
	free(z);
	return status;
}

/* ---- the ODE blocks ------------------------------------------------------------------ */

static const char *const model_names[RT_ODE_MODELS] = {"node", "hbnode", "ghbnode", "anode", "sonode"};

int rt_ode_model_lookup(const char *name)
{
	for (int m = 0; name && m < RT_ODE_MODELS; m++)
		if (!strcmp(model_names[m], name))
			return m;
	return -1;
}

typedef struct block_ctx {
	int model;
	int64_t B, H, S;                /* rows, hidden size, state columns per row */
	const float *W_h, *b_h;         /* f's layer: [H or S, H, S or 2H], [H or S] */
	double gamma, xi;
	const float *scale;             /* [B]: each row's time scale (a hybrid's gaps), or NULL for 1 */
} block_ctx;

static int64_t state_cols(int model, int64_t H, int64_t P)
{
	return model == RT_ODE_NODE ? H : model == RT_ODE_ANODE ? H + P : 2 * H;
}

/* out[j] = tanh(b_h[j] + W_h[j, :] z), j < rows, W_h [rows, cols] */
static void dense_tanh(const float *W_h, const float *b_h, int64_t rows, int64_t cols, const double *z, double *out)
{
	for (int64_t j = 0; j < rows; j++) {
		double acc = b_h[j];
		const float *wr = W_h + j * cols;
		for (int64_t k = 0; k < cols; k++)
			acc += (double)wr[k] * z[k];
		out[j] = tanh(acc);
	}
}

/* dz = F(z) for every row of z [B, S] */
static void block_dynamics(void *arg, double t, const double *z, double *dz)
{
	(void)t;
	const block_ctx *C = arg;
	int64_t H = C->H, S = C->S;
	for (int64_t b = 0; b < C->B; b++) {
		const double *h = z + b * S, *m = h + H;
		double *dh = dz + b * S, *dm = dh + H;
		switch (C->model) {
		case RT_ODE_NODE: case RT_ODE_ANODE:    /* the whole (augmented) state */
			dense_tanh(C->W_h, C->b_h, S, S, h, dh);
			break;
		case RT_ODE_SONODE:                     /* h' = v, v' = f([h | v]) */
			dense_tanh(C->W_h, C->b_h, H, 2 * H, h, dm);
			for (int64_t j = 0; j < H; j++)
				dh[j] = m[j];
			break;
		default:                                /* heavy ball: f(h) drives m */
			dense_tanh(C->W_h, C->b_h, H, H, h, dm);
			for (int64_t j = 0; j < H; j++) {
				dm[j] -= C->gamma * m[j];
				if (C->model == RT_ODE_GHBNODE)
					dm[j] -= C->xi * h[j];
				dh[j] = C->model == RT_ODE_GHBNODE ? tanh(m[j]) : m[j];
			}
			break;
		}
		if (C->scale)
			for (int64_t j = 0; j < S; j++)
				dh[j] *= C->scale[b];
	}
}

/* gamma and xi of the heavy-ball models from w and c */
static void block_scalars(block_ctx *C, const float *w, const float *c)
{
	if (C->model == RT_ODE_HBNODE || C->model == RT_ODE_GHBNODE)
		C->gamma = 1 / (1 + exp(-(double)w[0]));
	if (C->model == RT_ODE_GHBNODE)
		C->xi = c[0] > 30 ? (double)c[0] : log1p(exp((double)c[0]));
}

/* out[j] = b[j] + W[j, :] x, j < rows, W [rows, I] */
static void dense(const float *W, const float *bias, int64_t rows, int64_t I, const float *x, double *out)
{
	for (int64_t j = 0; j < rows; j++) {
		double acc = bias[j];
		for (int64_t k = 0; k < I; k++)
			acc += (double)W[j * I + k] * x[k];
		out[j] = acc;
	}
}

int rt_ode_block_f32(int model, const rt_ode_opts *o, double t0, double t1, int64_t B, int64_t I, int64_t H,
		     int64_t P, const float *x, const float *const *p, float *y, int64_t *stats)
{
	static const int nparams[RT_ODE_MODELS] = {4, 5, 6, 4, 6};
	if (model < 0 || model >= RT_ODE_MODELS || !o || B < 0 || I < 1 || H < 1 || P < 0 ||
	    (model == RT_ODE_ANODE) != (P > 0) || !x || !p || !y || !stats)
		return RT_ERR_ARG;
	for (int k = 0; k < nparams[model]; k++)
		if (!p[k])
			return RT_ERR_ARG;
	stats[0] = stats[1] = stats[2] = 0;
	if (B == 0)
		return RT_OK;
	int64_t S = state_cols(model, H, P);
	double *z = calloc((size_t)(B * S), sizeof *z);
	if (!z)
		return RT_ERR_NOMEM;
	int sonode = model == RT_ODE_SONODE;
	for (int64_t b = 0; b < B; b++) {
		dense(p[0], p[1], H, I, x + b * I, z + b * S);
		if (sonode)     /* v(t0) = W_v x + b_v */
			dense(p[2], p[3], H, I, x + b * I, z + b * S + H);
	}
	block_ctx C = {model, B, H, S, p[2 + 2 * sonode], p[3 + 2 * sonode], 0, 0, NULL};
	block_scalars(&C, nparams[model] > 4 ? p[4] : NULL, nparams[model] > 5 ? p[5] : NULL);
	rt_ode_stats st = {0, 0, 0};
	int status = solve(o, block_dynamics, &C, B * S, z, t0, t1, NULL, &st);
	for (int64_t b = 0; b < B; b++)
		for (int64_t j = 0; j < H; j++)
			y[b * H + j] = (float)z[b * S + j];
	stats[0] = st.nfe;
	stats[1] = st.accepted;
	stats[2] = st.rejected;
	free(z);
	return status;
}

int rt_ode_rnn_f32(int model, const rt_ode_opts *o, int64_t T, int64_t B, int64_t I, int64_t H, const float *x,
		   const float *dt, const float *W_x, const float *b_x, const float *W_u, const float *W_h,
		   const float *b_h, const float *w, const float *c, float *y, int64_t *stats)
{
	if (model < 0 || model > RT_ODE_GHBNODE || !o || T < 0 || B < 0 || I < 1 || H < 1 || !x || !dt || !W_x ||
	    !b_x || !W_u || !W_h || !b_h || !y || !stats || (model != RT_ODE_NODE && !w) ||
	    (model == RT_ODE_GHBNODE && !c))
		return RT_ERR_ARG;
	stats[0] = stats[1] = stats[2] = 0;
	if (B == 0 || T == 0)
		return RT_OK;
	int64_t S = model == RT_ODE_NODE ? H : 2 * H;
	double *z = calloc((size_t)(B * S + H), sizeof *z), *u = z + B * S;
	if (!z)
		return RT_ERR_NOMEM;
	block_ctx C = {model, B, H, S, W_h, b_h, 0, 0, NULL};
	block_scalars(&C, w, c);
	int status = RT_OK;
	rt_ode_stats st = {0, 0, 0};
	for (int64_t t = 0; t < T && status == RT_OK; t++) {
		/* the flow over each row's gap: s from 0 to 1, dz/ds = dt F(z) */
		C.scale = dt + t * B;
		status = solve(o, block_dynamics, &C, B * S, z, 0, 1, NULL, &st);
		/* the observation: h <- tanh(W_x x_t + b_x + W_u h), m kept */
		for (int64_t b = 0; b < B && status == RT_OK; b++) {
			double *h = z + b * S;
			const float *xt = x + (t * B + b) * I;
			for (int64_t j = 0; j < H; j++) {
				double acc = b_x[j];
				for (int64_t k = 0; k < I; k++)
					acc += (double)W_x[j * I + k] * xt[k];
				for (int64_t k = 0; k < H; k++)
					acc += (double)W_u[j * H + k] * h[k];
				u[j] = tanh(acc);
			}
			for (int64_t j = 0; j < H; j++) {
				h[j] = u[j];
				y[(t * B + b) * H + j] = (float)u[j];
			}
		}
	}
	stats[0] = st.nfe;
	stats[1] = st.accepted;
	stats[2] = st.rejected;
	free(z);
	return status;
}
