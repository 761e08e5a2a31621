/* mock_optim.c: a test double of runtime/rt_optim.c (see mock_optim.h) with
 * PyTorch's SGD (momentum, dampening, Nesterov, weight decay) and Adam; the
 * other kinds are refused by rt_optim_invalid.  Used only by the train_prog
 * tests while libcellrt has no optimisers. */
#include "cellrt.h"
#include "mock_optim.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

void rt_optim_defaults(rt_optim *o, int kind)
{
	memset(o, 0, sizeof *o);
	o->kind = kind;
	o->alpha = 0.99;
	o->beta1 = 0.9;
	o->beta2 = 0.999;
	o->eps = 1e-8;
	o->mu_max = 0.99;
	o->final_mu = 0.9;
	o->schedule = 1;
}

const char *rt_optim_invalid(const rt_optim *o)
{
	if (o->kind != RT_OPT_SGD && o->kind != RT_OPT_ADAM)
		return "the test double of rt_optim has only sgd and adam";
	if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
		return "nesterov needs momentum > 0 and dampening 0";
	return NULL;
}

int rt_optim_slots(const rt_optim *o) { return o->kind == RT_OPT_ADAM ? 2 : o->momentum != 0; }

const char *rt_optim_slot_name(const rt_optim *o, int k)
{
	if (k < 0 || k >= rt_optim_slots(o))
		return NULL;
	return o->kind == RT_OPT_ADAM ? (k ? "exp_avg_sq" : "exp_avg") : "momentum_buffer";
}

void rt_optim_init_state(const rt_optim *o, float *state, int64_t n)
{
	memset(state, 0, sizeof(float) * (size_t)(n * rt_optim_slots(o)));
}

void rt_optim_begin_step(rt_optim *o) { o->step++; }

int rt_optim_update(const rt_optim *o, double lr, float *p, const float *g, float *state, int64_t n)
{
	if (o->step < 1 || rt_optim_invalid(o))
		return RT_ERR_ARG;
	float wd = (float)o->weight_decay;
	if (o->kind == RT_OPT_SGD) {
		for (int64_t i = 0; i < n; i++) {
			float d = g[i] + wd * p[i];
			if (o->momentum != 0) {
				float *v = state + i;
				*v = o->step == 1 ? d : (float)o->momentum * *v + (1 - (float)o->dampening) * d;
				d = o->nesterov ? d + (float)o->momentum * *v : *v;
			}
			p[i] -= (float)lr * d;
		}
		return 0;
	}
	float *m = state, *v = state + n;
	double bc1 = 1 - pow(o->beta1, (double)o->step), bc2 = 1 - pow(o->beta2, (double)o->step);
	float step_size = (float)(lr / bc1), bc2s = (float)sqrt(bc2);
	for (int64_t i = 0; i < n; i++) {
		float d = g[i] + wd * p[i];
		m[i] = (float)o->beta1 * m[i] + (float)(1 - o->beta1) * d;
		v[i] = (float)o->beta2 * v[i] + (float)(1 - o->beta2) * d * d;
		p[i] -= step_size * m[i] / (sqrtf(v[i]) / bc2s + (float)o->eps);
	}
	return 0;
}

void rt_optim_params(const rt_optim *o, float *out, const float *p, const float *state, int64_t n)
{
	(void)o, (void)state;
	if (out != p)
		memcpy(out, p, sizeof(float) * (size_t)n);
}

float rt_clip_grad_norm(int n, float *const *g, const int64_t *numel, float max_norm)
{
	double s = 0;
	for (int k = 0; k < n; k++)
		for (int64_t i = 0; i < numel[k]; i++)
			s += (double)g[k][i] * g[k][i];
	float norm = (float)sqrt(s), coef = max_norm / (norm + 1e-6f);
	if (!(coef >= 1))
		for (int k = 0; k < n; k++)
			for (int64_t i = 0; i < numel[k]; i++)
				g[k][i] *= coef;
	return norm;
}
