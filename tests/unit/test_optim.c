/* test_optim.c: the optimisers of libcellrt (runtime/rt_optim.c) against the
 * trajectories of tests/gen_optim_cases.py (PyTorch 1.13's torch.optim and
 * clip_grad_norm_; Sutskever et al.'s CM and NAG written out in numpy).
 *
 *   test_optim DIR     DIR = tests/out/optim: one sub-directory per case
 *
 * For every case it replays the updates: the gradient of parameter k at step
 * t is a_k * x + noise_k[t] computed from the parameter buffer x (for NAG the
 * look-ahead point), clipped by rt_clip_grad_norm when the case says so, then
 * rt_optim_update with the parameter's own learning rate.  After every step
 * each parameter (NAG: rt_optim_params, and the buffer against the look-ahead
 * point), the clipping norm and the momentum of CM/NAG are compared with the
 * oracle: |got - ref| <= RTOL * max(|ref|, FLOOR) element-wise.  Then some
 * checks of the API's edges that need no oracle data.
 *
 * Prints one "PASS optim/NAME detail" or "FAIL optim/NAME detail" line per
 * test and exits 1 if any failed (tests/harness.py, group `optim`).
 * Legend: n elements of a parameter; steps updates per case.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"

enum { NPARAM = 2 };
static const double RTOL = 1e-5;        /* relative, element-wise */
static const double FLOOR = 1e-2;       /* |ref| below this counts as this much */

static int failures;

static void report(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%s optim/%s ", ok ? "PASS" : "FAIL", name);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	failures += !ok;
}

/* ---- one fixture case ---------------------------------------------------------- */

typedef struct cfg {
	rt_optim o;
	double lr[NPARAM], clip;
	int64_t steps;
} cfg;

static int kind_of(const char *s)
{
	static const char *const names[RT_OPT_COUNT] = {
		[RT_OPT_SGD] = "sgd", [RT_OPT_RMSPROP] = "rmsprop", [RT_OPT_ADAM] = "adam",
		[RT_OPT_ADAGRAD] = "adagrad", [RT_OPT_CM] = "cm", [RT_OPT_NAG] = "nag",
	};
	for (int k = 0; k < RT_OPT_COUNT; k++)
		if (strcmp(s, names[k]) == 0)
			return k;
	return -1;
}

/* Reads config.txt into c; a message on failure. */
static const char *read_cfg(const char *path, cfg *c)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return "cannot open config.txt";
	char key[64], val[64];
	const char *err = NULL;
	int have_kind = 0;
	memset(c, 0, sizeof *c);
	while (!err && fscanf(f, "%63s %63s", key, val) == 2) {
		double x = strtod(val, NULL);
		rt_optim *o = &c->o;
		if (strcmp(key, "kind") == 0) {
			int k = kind_of(val);
			if (k < 0) {
				err = "unknown kind";
				break;
			}
			double lr0 = c->lr[0], lr1 = c->lr[1], clip = c->clip;
			int64_t steps = c->steps;
			rt_optim_defaults(o, k);        /* the file sets every field after this */
			c->lr[0] = lr0, c->lr[1] = lr1, c->clip = clip, c->steps = steps;
			have_kind = 1;
			continue;
		}
		if (!have_kind) {
			err = "config.txt must start with kind";
			break;
		}
#define F(name) else if (strcmp(key, #name) == 0) o->name = x;
#define I(name) else if (strcmp(key, #name) == 0) o->name = (int)x;
#define L(name) else if (strcmp(key, #name) == 0) o->name = (int64_t)x;
		if (strcmp(key, "lr0") == 0) c->lr[0] = x;
		else if (strcmp(key, "lr1") == 0) c->lr[1] = x;
		else if (strcmp(key, "clip") == 0) c->clip = x;
		else if (strcmp(key, "steps") == 0) c->steps = (int64_t)x;
		F(momentum) F(dampening) I(nesterov) F(weight_decay) F(alpha) I(centered) F(beta1) F(beta2)
		I(amsgrad) F(eps) F(lr_decay) F(initial_accumulator_value) I(schedule) F(mu_max) F(final_mu)
		L(final_low_steps) L(total_steps)
		else err = "unknown key in config.txt";
#undef F
#undef I
#undef L
	}
	fclose(f);
	if (!err && (!have_kind || c->steps < 1))
		err = "config.txt lacks kind or steps";
	return err;
}

/* Tensor `name` of tf as float32 of numel elements; NULL if absent or different. */
static const float *tensor(const rt_tensorfile *tf, const char *name, int64_t numel)
{
	const rt_tensor *t = rt_tf_find(tf, name);
	if (!t || t->dtype != 1 || t->nbytes != (size_t)numel * sizeof(float))
		return NULL;
	return t->data;
}

static int64_t numel_of(const rt_tensorfile *tf, const char *name)
{
	const rt_tensor *t = rt_tf_find(tf, name);
	if (!t)
		return -1;
	int64_t n = 1;
	for (int i = 0; i < t->rank; i++)
		n *= t->dims[i];
	return n;
}

/* max over i of |got - ref| / max(|ref|, FLOOR), NaN-safe (NaN -> inf) */
static double rel_err(const float *got, const float *ref, int64_t n)
{
	double worst = 0;
	for (int64_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)ref[i]);
		double s = fabs((double)ref[i]) > FLOOR ? fabs((double)ref[i]) : FLOOR;
		double e = d == d ? d / s : INFINITY;
		if (!(e <= worst))
			worst = e;
	}
	return worst;
}

static void run_case(const char *dir, const char *name)
{
	char path[1024];
	cfg c;
	snprintf(path, sizeof path, "%s/%s/config.txt", dir, name);
	const char *err = read_cfg(path, &c);
	if (err) {
		report(0, name, "%s (%s)", err, path);
		return;
	}
	const char *why = rt_optim_invalid(&c.o);
	if (why) {
		report(0, name, "rt_optim_invalid: %s", why);
		return;
	}
	rt_tensorfile tf;
	snprintf(path, sizeof path, "%s/%s/data.bin", dir, name);
	int st = rt_tf_open(&tf, path);
	if (st != RT_OK) {
		report(0, name, "%s: %s", path, rt_status_str(st));
		return;
	}
	int nag = c.o.kind == RT_OPT_NAG, momentum_kind = nag || c.o.kind == RT_OPT_CM;
	int slots = rt_optim_slots(&c.o);
	int64_t n[NPARAM], steps = c.steps;
	const float *p0[NPARAM], *a[NPARAM], *noise[NPARAM], *traj[NPARAM], *look[NPARAM];
	float *x[NPARAM], *g[NPARAM], *state[NPARAM], *out[NPARAM];
	const float *norm = c.clip > 0 ? tensor(&tf, "norm", steps) : NULL;
	const float *mu = momentum_kind ? tensor(&tf, "mu", steps) : NULL;
	err = (c.clip > 0 && !norm) || (momentum_kind && !mu) ? "norm or mu tensor missing" : NULL;
	for (int k = 0; k < NPARAM && !err; k++) {
		char nm[32];
		snprintf(nm, sizeof nm, "p%d", k);
		n[k] = numel_of(&tf, nm);
		p0[k] = n[k] > 0 ? tensor(&tf, nm, n[k]) : NULL;
#define T(arr, fmt, count) (snprintf(nm, sizeof nm, fmt, k), arr[k] = tensor(&tf, nm, count))
		T(a, "a%d", n[k]);
		T(noise, "noise%d", steps * n[k]);
		T(traj, "traj%d", steps * n[k]);
		T(look, "look%d", steps * n[k]);
#undef T
		if (!p0[k] || !a[k] || !noise[k] || !traj[k] || (nag && !look[k]))
			err = "a tensor of data.bin is missing or has the wrong size";
	}
	if (err) {
		report(0, name, "%s", err);
		rt_tf_close(&tf);
		return;
	}
	for (int k = 0; k < NPARAM; k++) {
		x[k] = malloc((size_t)n[k] * sizeof(float));
		g[k] = malloc((size_t)n[k] * sizeof(float));
		out[k] = malloc((size_t)n[k] * sizeof(float));
		state[k] = malloc((size_t)(slots * n[k] + 1) * sizeof(float));
		if (!x[k] || !g[k] || !out[k] || !state[k]) {
			fprintf(stderr, "test_optim: out of memory\n");
			exit(2);
		}
		memcpy(x[k], p0[k], (size_t)n[k] * sizeof(float));
		rt_optim_init_state(&c.o, state[k], n[k]);
	}
	double worst_p = 0, worst_look = 0, worst_norm = 0, worst_mu = 0;
	int64_t bad_step = -1;
	const char *bad_what = "";
	for (int64_t t = 0; t < steps; t++) {
		rt_optim_begin_step(&c.o);
		for (int k = 0; k < NPARAM; k++)
			for (int64_t i = 0; i < n[k]; i++)
				g[k][i] = a[k][i] * x[k][i] + noise[k][t * n[k] + i];
		if (norm) {
			float got = rt_clip_grad_norm(NPARAM, g, n, (float)c.clip);
			double e = rel_err(&got, &norm[t], 1);
			worst_norm = e > worst_norm ? e : worst_norm;
		}
		if (mu) {
			float got = (float)rt_optim_mu(&c.o, c.o.step);
			double e = rel_err(&got, &mu[t], 1);
			worst_mu = e > worst_mu ? e : worst_mu;
		}
		for (int k = 0; k < NPARAM; k++) {
			st = rt_optim_update(&c.o, c.lr[k], x[k], g[k], state[k], n[k]);
			if (st != RT_OK) {
				report(0, name, "rt_optim_update at step %lld: %s", (long long)t + 1, rt_status_str(st));
				goto done;
			}
		}
		for (int k = 0; k < NPARAM; k++) {
			rt_optim_params(&c.o, out[k], x[k], state[k], n[k]);
			double e = rel_err(out[k], traj[k] + t * n[k], n[k]);
			if (!(e <= worst_p))
				worst_p = e;
			if (nag) {
				double el = rel_err(x[k], look[k] + t * n[k], n[k]);
				if (!(el <= worst_look))
					worst_look = el;
			}
		}
		if (bad_step < 0 && !(worst_p <= RTOL && worst_look <= RTOL && worst_norm <= RTOL &&
				      worst_mu <= RTOL)) {
			bad_step = t + 1;
			bad_what = !(worst_p <= RTOL) ? "parameters" : !(worst_look <= RTOL) ? "look-ahead point"
				   : !(worst_norm <= RTOL) ? "clipping norm" : "momentum";
		}
	}
	char extra[160] = "", over[96] = "";
	size_t len = 0;
	if (nag)
		len += (size_t)snprintf(extra + len, sizeof extra - len, ", look-ahead %.3g", worst_look);
	if (norm)
		len += (size_t)snprintf(extra + len, sizeof extra - len, ", norm %.3g", worst_norm);
	if (mu)
		snprintf(extra + len, sizeof extra - len, ", mu %.3g", worst_mu);
	if (bad_step >= 0)
		snprintf(over, sizeof over, "; %s over %g first at step %lld", bad_what, RTOL, (long long)bad_step);
	report(bad_step < 0, name, "%lld steps, max rel err: params %.3g%s%s", (long long)steps, worst_p, extra, over);
done:
	for (int k = 0; k < NPARAM; k++) {
		free(x[k]);
		free(g[k]);
		free(out[k]);
		free(state[k]);
	}
	rt_tf_close(&tf);
}

/* ---- API edges (no oracle data needed) --------------------------------------------- */

static void api_checks(void)
{
	rt_optim o;
	rt_optim_defaults(&o, RT_OPT_SGD);
	o.nesterov = 1;
	report(rt_optim_invalid(&o) != NULL, "api/nesterov_needs_momentum", "%s", "SGD nesterov without momentum refused");
	o.momentum = 0.9;
	o.dampening = 0.1;
	report(rt_optim_invalid(&o) != NULL, "api/nesterov_no_dampening", "%s", "SGD nesterov with dampening refused");
	rt_optim_defaults(&o, RT_OPT_ADAM);
	o.beta2 = 1.0;
	report(rt_optim_invalid(&o) != NULL, "api/adam_beta_range", "%s", "Adam beta2 = 1 refused");
	rt_optim_defaults(&o, RT_OPT_NAG);
	o.weight_decay = NAN;
	report(rt_optim_invalid(&o) != NULL, "api/nan_weight_decay", "%s", "NaN weight decay refused");
	rt_optim_defaults(&o, RT_OPT_NAG);
	o.final_low_steps = 10;
	o.total_steps = 5;
	report(rt_optim_invalid(&o) != NULL, "api/final_phase_longer_than_run", "%s", "refused");
	o.kind = RT_OPT_COUNT;
	report(rt_optim_invalid(&o) != NULL, "api/unknown_kind", "%s", "refused");

	/* no update before the first begin_step; nothing changed */
	rt_optim_defaults(&o, RT_OPT_SGD);
	float p[3] = {1, 2, 3}, gr[3] = {1, 1, 1};
	int st = rt_optim_update(&o, 0.1, p, gr, NULL, 3);
	report(st == RT_ERR_ARG && p[0] == 1 && p[2] == 3, "api/update_before_begin_step", "status %d", st);

	/* slots and their names, as documented in cellrt.h */
	static const struct { int kind; double momentum; int centered, amsgrad, slots; const char *last; } sl[] = {
		{RT_OPT_SGD, 0, 0, 0, 0, NULL},          {RT_OPT_SGD, 0.9, 0, 0, 1, "momentum_buffer"},
		{RT_OPT_RMSPROP, 0, 0, 0, 1, "square_avg"}, {RT_OPT_RMSPROP, 0.5, 0, 0, 2, "momentum_buffer"},
		{RT_OPT_RMSPROP, 0.5, 1, 0, 3, "grad_avg"}, {RT_OPT_RMSPROP, 0, 1, 0, 2, "grad_avg"},
		{RT_OPT_ADAM, 0, 0, 0, 2, "exp_avg_sq"},  {RT_OPT_ADAM, 0, 0, 1, 3, "max_exp_avg_sq"},
		{RT_OPT_ADAGRAD, 0, 0, 0, 1, "sum"},      {RT_OPT_CM, 0.9, 0, 0, 1, "velocity"},
		{RT_OPT_NAG, 0.9, 0, 0, 1, "velocity"},
	};
	int ok = 1;
	for (size_t i = 0; i < sizeof sl / sizeof sl[0]; i++) {
		rt_optim_defaults(&o, sl[i].kind);
		o.momentum = sl[i].momentum;
		o.centered = sl[i].centered;
		o.amsgrad = sl[i].amsgrad;
		int ns = rt_optim_slots(&o);
		const char *last = ns ? rt_optim_slot_name(&o, ns - 1) : NULL;
		if (ns != sl[i].slots || (last == NULL) != (sl[i].last == NULL) || (last && strcmp(last, sl[i].last)) ||
		    rt_optim_slot_name(&o, ns) != NULL)
			ok = 0;
	}
	report(ok, "api/slots", "%s", "slot counts and names");

	/* the schedule's values at its steps (t = step - 1) and the final phase */
	rt_optim_defaults(&o, RT_OPT_CM);
	o.mu_max = 0.999;
	o.total_steps = 2000;
	o.final_low_steps = 300;
	static const struct { int64_t step; double mu; } ms[] = {
		{1, 0.5}, {250, 0.5}, {251, 0.75}, {501, 1 - 1.0 / 6}, {1001, 0.9}, {1700, 1 - 1.0 / 14},
		{1701, 0.9}, {2000, 0.9},
	};
	ok = 1;
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if (fabs(rt_optim_mu(&o, ms[i].step) - ms[i].mu) > 1e-12)
			ok = 0;
	o.mu_max = 0.8;
	ok &= fabs(rt_optim_mu(&o, 1001) - 0.8) < 1e-12;
	report(ok, "api/mu_schedule", "%s", "0.5, 0.75, 5/6, 0.9, 13/14, final 0.9, cap");

	/* clipping: under the limit nothing moves; a NaN gradient gives a NaN
	 * norm and NaN gradients (PyTorch multiplies by the NaN coefficient) */
	float g1[2] = {3, 4}, g2[1] = {0};
	float *gs[2] = {g1, g2};
	int64_t ns[2] = {2, 1};
	float nrm = rt_clip_grad_norm(2, gs, ns, 10.0f);
	ok = nrm == 5.0f && g1[0] == 3 && g1[1] == 4;
	nrm = rt_clip_grad_norm(2, gs, ns, 1.0f);
	ok &= nrm == 5.0f && fabsf(g1[0] - 3.0f / (5.0f + 1e-6f)) < 1e-7f && fabsf(g1[1] - 0.8f) < 1e-6f;
	g2[0] = NAN;
	nrm = rt_clip_grad_norm(2, gs, ns, 1.0f);
	ok &= isnan(nrm) && isnan(g1[0]);
	report(ok, "api/clip_edges", "%s", "no-op below max_norm, scale above, NaN propagates");

	/* the kernels with separate outputs (ONNX operators) equal them in place */
	enum { N = 9 };
	float x[N], g[N], v[N], h[N], xo[N], vo[N], ho[N], xi[N], vi[N], hi[N], mo[N], mi[N];
	for (int i = 0; i < N; i++) {
		x[i] = 0.3f * (float)i - 1.0f;
		g[i] = 0.7f - 0.2f * (float)i;
		v[i] = 0.05f * (float)i;
		h[i] = 0.1f + 0.01f * (float)i;
	}
	memcpy(xi, x, sizeof x), memcpy(vi, v, sizeof v), memcpy(hi, h, sizeof h), memcpy(mi, v, sizeof v);
	rt_momentum_kernel(xo, vo, x, g, v, N, 0.1f, 0.01f, 0.9f, 0.8f, 1);
	rt_momentum_kernel(xi, vi, xi, g, vi, N, 0.1f, 0.01f, 0.9f, 0.8f, 1);
	ok = !memcmp(xo, xi, sizeof xo) && !memcmp(vo, vi, sizeof vo);
	memcpy(xi, x, sizeof x), memcpy(vi, v, sizeof v);
	rt_adam_kernel(xo, mo, ho, NULL, x, g, v, h, N, 0.01f, 0.5f, 1e-6f, 0.01f, 0.9f, 0.99f, 0.999f);
	rt_adam_kernel(xi, mi, hi, NULL, xi, g, mi, hi, N, 0.01f, 0.5f, 1e-6f, 0.01f, 0.9f, 0.99f, 0.999f);
	ok &= !memcmp(xo, xi, sizeof xo) && !memcmp(mo, mi, sizeof mo) && !memcmp(ho, hi, sizeof ho);
	memcpy(xi, x, sizeof x), memcpy(hi, h, sizeof h);
	rt_adagrad_kernel(xo, ho, x, g, h, N, 0.1f, 0.01f, 1e-6f);
	rt_adagrad_kernel(xi, hi, xi, g, hi, N, 0.1f, 0.01f, 1e-6f);
	ok &= !memcmp(xo, xi, sizeof xo) && !memcmp(ho, hi, sizeof ho);
	report(ok, "api/kernels_in_place", "%s", "separate outputs == in place");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_optim DIR (tests/out/optim)\n");
		return 2;
	}
	DIR *d = opendir(argv[1]);
	if (!d) {
		printf("FAIL optim/fixtures cannot open %s\n", argv[1]);
		return 1;
	}
	char *names[256];
	int count = 0;
	struct dirent *e;
	while ((e = readdir(d)) && count < 256)
		if (e->d_name[0] != '.' && strncmp(e->d_name, "onnx", 4) != 0)  /* onnx*: cellc cases */
			names[count++] = strdup(e->d_name);
	closedir(d);
	qsort(names, (size_t)count, sizeof *names, cmp_str);
	if (count == 0)
		report(0, "fixtures", "no cases in %s", argv[1]);
	for (int i = 0; i < count; i++) {
		run_case(argv[1], names[i]);
		free(names[i]);
	}
	api_checks();
	return failures ? 1 : 0;
}
