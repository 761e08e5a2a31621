/* rt_optim.c: optimisers and gradient-norm clipping (docs/training.md, "Optimisers").
 *
 * PyTorch 1.13's torch.optim single-tensor code paths, operation for
 * operation, so that a trajectory matches PyTorch's to float rounding: every
 * scalar PyTorch computes in Python (1 - beta, bias corrections, lr / bc1,
 * Adagrad's decayed lr) is computed here in double and rounded to float once;
 * the element-wise arithmetic is float in the order of PyTorch's CPU kernels
 * with AVX2 (the capability PyTorch picks on x86-64 machines of the last
 * decade), checked bit for bit one operation at a time: add(b, alpha=s) is
 * fmaf(b, s, a), addcmul(t1, t2, value=s) is fmaf(s * t1, t2, a) (GCC
 * contracts it), addcdiv(t1, t2, value=s) is a + s * t1 / t2, and a tensor
 * divided by a Python number is a true division.  fmaf is exact everywhere
 * (a library call where the target has no FMA instruction).  Classical momentum and NAG follow Sutskever,
 * Martens, Dahl and Hinton (2013), "On the importance of initialization and
 * momentum in deep learning":
 *     CM:  v' = mu v - lr grad f(p),           p' = p + v'
 *     NAG: v' = mu v - lr grad f(p + mu v),    p' = p + v'
 * NAG is run on the look-ahead point: the parameter buffer holds
 * q = p + mu_t v, so the gradient the caller computes from the buffer is the
 * one at p + mu v that the update needs.  An update recovers p = q - mu_t v,
 * applies the paper's two formulas and stores q' = p' + mu_{t+1} v', the
 * point of the next update (the same reparametrisation as PyTorch's and
 * Bengio et al.'s Nesterov form, but with the paper's mu schedule, which
 * changes mu between updates).  rt_optim_params gives p for evaluation.
 *
 * The kernels take separate input and output pointers that may coincide, so
 * the code emitted for the ONNX training operators (which have separate
 * outputs) and rt_optim_update (in place) share them.  Plain loops over n
 * elements that compilers vectorise.
 *
 * Legend: n elements of one parameter tensor; p/x parameter, g gradient,
 * gr gradient plus weight decay, v/m/h/sq optimiser state.
 */
#include "cellrt.h"

#include <math.h>
#include <string.h>

/* ---- element-wise kernels -------------------------------------------------- */

/* Each loop that uses fmaf is a BODY, compiled twice on x86 with GCC or
 * Clang: as is, and inlined into a copy for the FMA instruction set that
 * runs when the CPU has it (fmaf is then one instruction and the loop
 * vectorises; elsewhere it is a library call, about ten times slower).
 * Both give the same bits: fmaf is exactly rounded either way, and ISO C
 * mode (-std=c11) contracts no other a * b + c. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define BODY static inline __attribute__((always_inline))
#define FMA_COPY 1
#else
#define BODY static inline
#endif

#ifdef FMA_COPY
/* name(params) runs name_body through its FMA copy when the CPU has FMA */
#define DISPATCH(name, params, args) \
	__attribute__((target("fma"))) static void name##_fma params { name##_body args; } \
	static void name params \
	{ \
		if (__builtin_cpu_supports("fma")) \
			name##_fma args; \
		else \
			name##_body args; \
	}
#else
#define DISPATCH(name, params, args) static void name params { name##_body args; }
#endif

BODY void momentum_body(float *x_new, float *v_new, const float *x, const float *g, const float *v,
			int64_t n, float lr, float wd, float alpha, float beta, int nesterov)
{
	if (nesterov) {
		for (int64_t i = 0; i < n; i++) {
			float gr = fmaf(x[i], wd, g[i]);
			float vn = fmaf(gr, beta, alpha * v[i]);
			v_new[i] = vn;
			x_new[i] = fmaf(fmaf(vn, alpha, gr), -lr, x[i]);
		}
	} else {
		for (int64_t i = 0; i < n; i++) {
			float gr = fmaf(x[i], wd, g[i]);
			float vn = fmaf(gr, beta, alpha * v[i]);
			v_new[i] = vn;
			x_new[i] = fmaf(vn, -lr, x[i]);
		}
	}
}

/* b1, b2, c1, c2: beta1, beta2, 1 - beta1, 1 - beta2 rounded to float */
BODY void adam_body(float *x_new, float *m_new, float *v_new, float *vmax, const float *x, const float *g,
		    const float *m, const float *v, int64_t n, float step_size, float bc2_sqrt, float eps, float wd,
		    float b1, float b2, float c1, float c2, float post)
{
	for (int64_t i = 0; i < n; i++) {
		float gr = fmaf(x[i], wd, g[i]);
		float mn = fmaf(gr, c1, b1 * m[i]);
		float vn = fmaf(c2 * gr, gr, b2 * v[i]);
		m_new[i] = mn;
		v_new[i] = vn;
		if (vmax) {
			vmax[i] = vmax[i] > vn ? vmax[i] : vn;
			vn = vmax[i];
		}
		float denom = sqrtf(vn) / bc2_sqrt + eps;
		x_new[i] = post * (x[i] - step_size * mn / denom);
	}
}

BODY void adagrad_body(float *x_new, float *h_new, const float *x, const float *g, const float *h,
		       int64_t n, float lr, float wd, float eps)
{
	for (int64_t i = 0; i < n; i++) {
		float gr = fmaf(x[i], wd, g[i]);
		float hn = fmaf(gr, gr, h[i]);
		h_new[i] = hn;
		x_new[i] = x[i] - lr * gr / (sqrtf(hn) + eps);
	}
}

BODY void sgd_body(float *p, const float *g, int64_t n, float lr, float wd)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = fmaf(fmaf(p[i], wd, g[i]), -lr, p[i]);
}

/* sq [n] square_avg; buf [n] momentum_buffer or NULL; gavg [n] grad_avg or
 * NULL; c = 1 - alpha */
BODY void rmsprop_loop_body(float *p, const float *g, float *sq, float *buf, float *gavg, int64_t n, float lr,
			    float alpha, float c, float eps, float wd, float mom)
{
	for (int64_t i = 0; i < n; i++) {
		float gr = fmaf(p[i], wd, g[i]);
		float s = fmaf(c * gr, gr, alpha * sq[i]);
		sq[i] = s;
		if (gavg) {
			float a = fmaf(gr, c, alpha * gavg[i]);
			gavg[i] = a;
			s = fmaf(-a, a, s);
		}
		float avg = sqrtf(s) + eps;
		if (buf) {
			float b = mom * buf[i] + gr / avg;
			buf[i] = b;
			p[i] = fmaf(b, -lr, p[i]);
		} else {
			p[i] = p[i] - lr * gr / avg;
		}
	}
}

DISPATCH(momentum, (float *x_new, float *v_new, const float *x, const float *g, const float *v, int64_t n,
		    float lr, float wd, float alpha, float beta, int nesterov),
	 (x_new, v_new, x, g, v, n, lr, wd, alpha, beta, nesterov))
DISPATCH(adam, (float *x_new, float *m_new, float *v_new, float *vmax, const float *x, const float *g,
		const float *m, const float *v, int64_t n, float step_size, float bc2_sqrt, float eps, float wd,
		float b1, float b2, float c1, float c2, float post),
	 (x_new, m_new, v_new, vmax, x, g, m, v, n, step_size, bc2_sqrt, eps, wd, b1, b2, c1, c2, post))
DISPATCH(adagrad, (float *x_new, float *h_new, const float *x, const float *g, const float *h, int64_t n,
		   float lr, float wd, float eps),
	 (x_new, h_new, x, g, h, n, lr, wd, eps))
DISPATCH(sgd, (float *p, const float *g, int64_t n, float lr, float wd), (p, g, n, lr, wd))
DISPATCH(rmsprop_loop, (float *p, const float *g, float *sq, float *buf, float *gavg, int64_t n, float lr,
			float alpha, float c, float eps, float wd, float mom),
	 (p, g, sq, buf, gavg, n, lr, alpha, c, eps, wd, mom))

void rt_momentum_kernel(float *x_new, float *v_new, const float *x, const float *g, const float *v,
			int64_t n, float lr, float wd, float alpha, float beta, int nesterov)
{
	momentum(x_new, v_new, x, g, v, n, lr, wd, alpha, beta, nesterov);
}

void rt_adam_kernel(float *x_new, float *m_new, float *v_new, float *vmax, const float *x,
		    const float *g, const float *m, const float *v, int64_t n, float step_size,
		    float bc2_sqrt, float eps, float wd, double beta1, double beta2, float post)
{
	adam(x_new, m_new, v_new, vmax, x, g, m, v, n, step_size, bc2_sqrt, eps, wd, (float)beta1, (float)beta2,
	     (float)(1.0 - beta1), (float)(1.0 - beta2), post);
}

void rt_adagrad_kernel(float *x_new, float *h_new, const float *x, const float *g, const float *h,
		       int64_t n, float lr, float wd, float eps)
{
	adagrad(x_new, h_new, x, g, h, n, lr, wd, eps);
}

/* ---- the optimiser ------------------------------------------------------------ */

void rt_optim_defaults(rt_optim *o, int kind)
{
	memset(o, 0, sizeof *o);
	o->kind = kind;
	o->alpha = 0.99;
	o->beta1 = 0.9;
	o->beta2 = 0.999;
	o->eps = kind == RT_OPT_ADAGRAD ? 1e-10 : 1e-8;
	o->schedule = 1;
	o->mu_max = 0.99;
	o->final_mu = 0.9;
	o->momentum = kind == RT_OPT_CM || kind == RT_OPT_NAG ? 0.9 : 0.0;
}

/* x >= 0 and finite (NaN fails) */
static int nonneg(double x) { return x >= 0 && x <= 1e300; }
static int unit(double x) { return x >= 0 && x < 1; }

const char *rt_optim_invalid(const rt_optim *o)
{
	if (!o)
		return "no optimiser";
	if (o->kind < 0 || o->kind >= RT_OPT_COUNT)
		return "unknown optimiser kind";
	if (!nonneg(o->weight_decay))
		return "weight_decay must be a number >= 0";
	switch (o->kind) {
	case RT_OPT_SGD:
		if (!nonneg(o->momentum) || !nonneg(o->dampening))
			return "momentum and dampening must be numbers >= 0";
		if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
			return "Nesterov momentum requires a momentum > 0 and zero dampening";
		return NULL;
	case RT_OPT_RMSPROP:
		if (!nonneg(o->momentum) || !nonneg(o->alpha) || !nonneg(o->eps))
			return "momentum, alpha and eps must be numbers >= 0";
		return NULL;
	case RT_OPT_ADAM:
		if (!unit(o->beta1) || !unit(o->beta2))
			return "beta1 and beta2 must lie in [0, 1)";
		if (!nonneg(o->eps))
			return "eps must be a number >= 0";
		return NULL;
	case RT_OPT_ADAGRAD:
		if (!nonneg(o->lr_decay) || !nonneg(o->initial_accumulator_value) || !nonneg(o->eps))
			return "lr_decay, initial_accumulator_value and eps must be numbers >= 0";
		return NULL;
	default:        /* CM, NAG */
		if (o->schedule != 0 && o->schedule != 1)
			return "schedule must be 0 or 1";
		if (o->schedule ? !unit(o->mu_max) : !unit(o->momentum))
			return o->schedule ? "mu_max must lie in [0, 1)" : "momentum must lie in [0, 1)";
		if (!unit(o->final_mu))
			return "final_mu must lie in [0, 1)";
		if (o->final_low_steps < 0 || (o->final_low_steps > 0 && o->total_steps < o->final_low_steps))
			return "final_low_steps must be >= 0 and at most total_steps";
		return NULL;
	}
}

int rt_optim_slots(const rt_optim *o)
{
	switch (o->kind) {
	case RT_OPT_SGD: return o->momentum != 0;
	case RT_OPT_RMSPROP: return 1 + (o->momentum > 0) + (o->centered != 0);
	case RT_OPT_ADAM: return 2 + (o->amsgrad != 0);
	case RT_OPT_ADAGRAD: case RT_OPT_CM: case RT_OPT_NAG: return 1;
	default: return 0;
	}
}

const char *rt_optim_slot_name(const rt_optim *o, int k)
{
	if (k < 0 || k >= rt_optim_slots(o))
		return NULL;
	switch (o->kind) {
	case RT_OPT_SGD: return "momentum_buffer";
	case RT_OPT_RMSPROP:
		if (k == 0)
			return "square_avg";
		return k == 1 && o->momentum > 0 ? "momentum_buffer" : "grad_avg";
	case RT_OPT_ADAM: return k == 0 ? "exp_avg" : k == 1 ? "exp_avg_sq" : "max_exp_avg_sq";
	case RT_OPT_ADAGRAD: return "sum";
	default: return "velocity";
	}
}

void rt_optim_init_state(const rt_optim *o, float *state, int64_t n)
{
	int64_t total = (int64_t)rt_optim_slots(o) * n;
	float v = o->kind == RT_OPT_ADAGRAD ? (float)o->initial_accumulator_value : 0.0f;
	for (int64_t i = 0; i < total; i++)
		state[i] = v;
}

double rt_optim_mu(const rt_optim *o, int64_t step)
{
	double mu = o->momentum;
	if (o->schedule) {
		/* 1 - 2^(-1 - log2(k)) = 1 - 1 / (2k), k = floor(t / 250) + 1, t = step - 1 */
		int64_t t = step > 0 ? step - 1 : 0;
		double k = (double)(t / 250 + 1);
		mu = 1.0 - pow(2.0, -1.0 - log2(k));
		if (mu > o->mu_max)
			mu = o->mu_max;
	}
	if (o->final_low_steps > 0 && step > o->total_steps - o->final_low_steps && mu > o->final_mu)
		mu = o->final_mu;
	return mu;
}

void rt_optim_begin_step(rt_optim *o) { o->step++; }

static void rmsprop(const rt_optim *o, float lr, float *p, const float *g, float *state, int64_t n)
{
	float *buf = o->momentum > 0 ? state + n : NULL;
	rmsprop_loop(p, g, state, buf, o->centered ? state + (buf ? 2 : 1) * n : NULL, n, lr, (float)o->alpha,
		     (float)(1.0 - o->alpha), (float)o->eps, (float)o->weight_decay, (float)o->momentum);
}

/* Sutskever's classical momentum: v' = mu v - lr gr(p), p' = p + v'.
 * CM and NAG round like the numpy oracle of the paper's formulas: plain
 * float operations, no fused multiply-add. */
static void cm(float *p, const float *g, float *v, int64_t n, float lr, float wd, float mu)
{
	for (int64_t i = 0; i < n; i++) {
		float gr = g[i] + wd * p[i];
		float vn = mu * v[i] - lr * gr;
		v[i] = vn;
		p[i] = p[i] + vn;
	}
}

/* NAG on the look-ahead point q = p + mu v (see the file comment). */
static void nag(float *q, const float *g, float *v, int64_t n, float lr, float wd, float mu, float mu_next)
{
	for (int64_t i = 0; i < n; i++) {
		float gr = g[i] + wd * q[i];
		float p = q[i] - mu * v[i];
		float vn = mu * v[i] - lr * gr;
		v[i] = vn;
		p = p + vn;
		q[i] = p + mu_next * vn;
	}
}

int rt_optim_update(const rt_optim *o, double lr, float *p, const float *g, float *state, int64_t n)
{
	if (!o || o->step < 1 || n < 0 || rt_optim_invalid(o) || (n > 0 && (!p || !g)) ||
	    (n > 0 && rt_optim_slots(o) > 0 && !state))
		return RT_ERR_ARG;
	float flr = (float)lr, wd = (float)o->weight_decay;
	double t = (double)o->step;
	switch (o->kind) {
	case RT_OPT_SGD:
		if (o->momentum == 0) {
			sgd(p, g, n, flr, wd);
		} else {
			/* PyTorch's first step sets buf = gr: alpha * 0 + 1 * gr, since
			 * the state starts at zero */
			float beta = o->step == 1 ? 1.0f : (float)(1.0 - o->dampening);
			rt_momentum_kernel(p, state, p, g, state, n, flr, wd, (float)o->momentum, beta, o->nesterov);
		}
		return RT_OK;
	case RT_OPT_RMSPROP:
		rmsprop(o, flr, p, g, state, n);
		return RT_OK;
	case RT_OPT_ADAM: {
		double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
		rt_adam_kernel(p, state, state + n, o->amsgrad ? state + 2 * n : NULL, p, g, state, state + n, n,
			       (float)(lr / bc1), (float)sqrt(bc2), (float)o->eps, wd, o->beta1, o->beta2, 1.0f);
		return RT_OK;
	}
	case RT_OPT_ADAGRAD: {
		double clr = lr / (1.0 + (t - 1.0) * o->lr_decay);
		rt_adagrad_kernel(p, state, p, g, state, n, (float)clr, wd, (float)o->eps);
		return RT_OK;
	}
	case RT_OPT_CM:
		cm(p, g, state, n, flr, wd, (float)rt_optim_mu(o, o->step));
		return RT_OK;
	case RT_OPT_NAG:
		nag(p, g, state, n, flr, wd, (float)rt_optim_mu(o, o->step), (float)rt_optim_mu(o, o->step + 1));
		return RT_OK;
	default:
		return RT_ERR_ARG;
	}
}

void rt_optim_params(const rt_optim *o, float *out, const float *p, const float *state, int64_t n)
{
	if (o->kind == RT_OPT_NAG) {
		float mu = (float)rt_optim_mu(o, o->step + 1);
		for (int64_t i = 0; i < n; i++)
			out[i] = p[i] - mu * state[i];
	} else if (out != p) {
		memmove(out, p, (size_t)n * sizeof *out);
	}
}

/* ---- clipping ------------------------------------------------------------------ */

float rt_clip_grad_norm(int n, float *const *g, const int64_t *numel, float max_norm)
{
	double ss = 0.0;
	for (int k = 0; k < n; k++)
		for (int64_t i = 0; i < numel[k]; i++)
			ss += (double)g[k][i] * (double)g[k][i];
	float norm = (float)sqrt(ss);
	/* PyTorch evaluates max_norm / (norm + 1e-6) as a reciprocal times max_norm */
	float coef = (1.0f / (norm + 1e-6f)) * max_norm;
	if (!(coef >= 1.0f))
		for (int k = 0; k < n; k++)
			for (int64_t i = 0; i < numel[k]; i++)
				g[k][i] *= coef;
	return norm;
}
