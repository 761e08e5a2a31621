/* fd_check.c: central finite differences of the `loss` output of a train
 * build (`cellc compile --train --name m`, docs/training.md) against its
 * own grad.* outputs: the `fd` test group (tests/harness.py), cases from
 * tests/gen_train_cases.py (tiny sizes, OUTDIR/fd/<case>/).
 *
 *   fd_check WEIGHTS INPUTS EPS RTOL ATOL
 *
 * WEIGHTS: m.weights of the build; INPUTS: a cellc tensor file with every
 * input of the train graph (model inputs, target [, mask]) by name.  One run
 * computes the loss and all gradients; then, with m_set_forward_only(1), for
 * every trainable parameter P (m_param) and every f32 model input X that has
 * a grad.X output, three probes
 *   max   the element of largest |g|      fd = (L(p + eps e_i) - L(p - eps e_i)) / 2 eps
 *   rand  an element picked by probe_index()
 *   dir   the direction d, d_j = +-1/sqrt(n) by probe_sign(): fd vs g . d
 * each passing when |fd - g| <= ATOL + RTOL |g|.  The probes are the ones
 * tests/gen_train_cases.py replays on the PyTorch float32 reference to show
 * that the tolerance holds for a correct float32 implementation; change
 * both together.  Output: one `PASS|FAIL fd/<tensor>/<probe> fd=.. g=..` line
 * per probe, exit 0 only when every probe passed (1 otherwise, 2 on errors).
 * Built against mock/m.h + fd_mock.c (a stand-in model with a hand-derived
 * gradient) the fd group tests this driver itself.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"
#include "m.h"

#if !defined(m_TRAIN)
#error "fd_check needs a train build (cellc compile --train --name m)"
#endif

enum { MAXIO = 256 };

static m *mod;
static m_dims dims;
static const void *in[MAXIO];
static void *out[MAXIO];
static int64_t out_numel[MAXIO];
static int loss_out = -1;

static void die(const char *what, int st)
{
	fprintf(stderr, "fd_check: %s: %s\n", what, st ? m_status_str(st) : "failed");
	exit(2);
}

static int find_output(const char *name)
{
	for (int k = 0; k < m_NUM_OUTPUTS; k++)
		if (strcmp(m_io_name(1, k), name) == 0)
			return k;
	return -1;
}

static double loss_now(void)
{
	int st = m_run_generic(mod, &dims, in, out);
	if (st)
		die("m_run_generic (forward only)", st);
	return ((const float *)out[loss_out])[0];
}

/* The probe element of the k-th checked tensor of n elements (a fixed
 * multiplicative hash; tests/gen_train_cases.py computes the same). */
static int64_t probe_index(int k, int64_t n)
{
	return (int64_t)(((uint64_t)k * 2654435761u + 12345u) % (uint64_t)n);
}

/* Sign of element j of the direction of the k-th tensor. */
static int probe_sign(int k, int64_t j)
{
	uint64_t h = ((uint64_t)j * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)k * 0xBF58476D1CE4E5B9ull);
	h ^= h >> 31;
	return (h >> 7) & 1 ? 1 : -1;
}

static int failures, probes;

static void report(const char *tensor, const char *probe, double fd, double g, double rtol, double atol)
{
	int ok = isfinite(fd) && isfinite(g) && fabs(fd - g) <= atol + rtol * fabs(g);
	printf("%s fd/%s/%s fd=%.6g g=%.6g diff=%.3g tol=%.3g\n", ok ? "PASS" : "FAIL", tensor, probe,
	       fd, g, fabs(fd - g), atol + rtol * fabs(g));
	failures += !ok;
	probes++;
}

/* Probes tensor p (n floats, changed in place and restored) against its
 * analytic gradient g (a copy taken before any probe). */
static void check_tensor(int k, const char *name, float *p, const float *g, int64_t n, double eps,
			 double rtol, double atol)
{
	int64_t imax = 0;
	for (int64_t i = 1; i < n; i++)
		if (fabsf(g[i]) > fabsf(g[imax]))
			imax = i;
	int64_t idx[2] = {imax, probe_index(k, n)};
	const char *what[2] = {"max", "rand"};
	for (int q = 0; q < 2; q++) {
		float v = p[idx[q]];
		p[idx[q]] = (float)(v + eps);
		double lp = loss_now();
		p[idx[q]] = (float)(v - eps);
		double lm = loss_now();
		p[idx[q]] = v;
		/* the actual step in float32, not eps: p +- eps rounds */
		double h = ((double)(float)(v + eps) - (double)(float)(v - eps));
		report(name, what[q], (lp - lm) / h, g[idx[q]], rtol, atol);
	}
	float *save = malloc(sizeof(float) * (size_t)n);
	if (!save)
		die("out of memory", 0);
	memcpy(save, p, sizeof(float) * (size_t)n);
	double s = eps / sqrt((double)n), gd = 0;
	for (int64_t j = 0; j < n; j++) {
		p[j] = (float)(save[j] + probe_sign(k, j) * s);
		gd += probe_sign(k, j) * (double)g[j] / sqrt((double)n);
	}
	double lp = loss_now();
	for (int64_t j = 0; j < n; j++)
		p[j] = (float)(save[j] - probe_sign(k, j) * s);
	double lm = loss_now();
	memcpy(p, save, sizeof(float) * (size_t)n);
	free(save);
	report(name, "dir", (lp - lm) / (2 * eps), gd, rtol, atol);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: fd_check WEIGHTS INPUTS EPS RTOL ATOL\n");
		return 2;
	}
	double eps = atof(argv[3]), rtol = atof(argv[4]), atol = atof(argv[5]);
	int st = m_create(&mod, argv[1]);
	if (st)
		die(argv[1], st);
	rt_tensorfile tf;
	st = rt_tf_open(&tf, argv[2]);
	if (st)
		die(argv[2], st);
	if (m_NUM_INPUTS > MAXIO || m_NUM_OUTPUTS > MAXIO)
		die("too many inputs or outputs for this driver", 0);
	const int64_t *in_dims[MAXIO];
	float *in_copy[MAXIO] = {0};
	for (int k = 0; k < m_NUM_INPUTS; k++) {
		const rt_tensor *t = rt_tf_find(&tf, m_io_name(0, k));
		if (!t || t->dtype != m_io_dtype(0, k) || t->rank != m_io_rank(0, k)) {
			fprintf(stderr, "fd_check: input %s missing or of another dtype/rank in %s\n",
				m_io_name(0, k), argv[2]);
			return 2;
		}
		in_dims[k] = t->dims;
		/* a writable copy: f32 inputs are probed too */
		void *c = malloc(t->nbytes ? t->nbytes : 1);
		if (!c)
			die("out of memory", 0);
		memcpy(c, t->data, t->nbytes);
		in[k] = c;
		if (t->dtype == 1)
			in_copy[k] = c;
	}
	if ((st = m_bind_dims(in_dims, &dims)))
		die("m_bind_dims", st);
	for (int k = 0; k < m_NUM_OUTPUTS; k++) {
		int64_t d[RT_TF_MAXRANK], n = 1;
		if ((st = m_io_shape(&dims, 1, k, d)))
			die("m_io_shape", st);
		for (int i = 0; i < m_io_rank(1, k); i++)
			n *= d[i];
		out_numel[k] = n;
		out[k] = calloc((size_t)(n ? n : 1), rt_dtype_size(m_io_dtype(1, k)));
		if (!out[k])
			die("out of memory", 0);
	}
	loss_out = find_output("loss");
	if (loss_out < 0)
		die("the build has no `loss` output", 0);
	if ((st = m_set_forward_only(mod, 0)))
		die("m_set_forward_only(0)", st);
	if ((st = m_run_generic(mod, &dims, in, out)))
		die("m_run_generic", st);
	printf("# loss %.9g, %d parameters\n", (double)((const float *)out[loss_out])[0], m_NUM_PARAMS);
	/* analytic gradients, copied before the forward-only runs */
	float *grads[MAXIO + m_NUM_PARAMS];
	int ngrad = 0;
	char gname[RT_TF_NAME + 8];
	for (int k = 0; k < m_NUM_PARAMS; k++) {
		const char *name;
		float *data;
		int64_t numel;
		if ((st = m_param(mod, k, &name, &data, &numel)))
			die("m_param", st);
		snprintf(gname, sizeof gname, "grad.%s", name);
		int o = find_output(gname);
		if (o < 0 || out_numel[o] != numel) {
			printf("FAIL fd/%s/output no %s output of %lld elements\n", name, gname, (long long)numel);
			failures++;
			grads[ngrad++] = NULL;
			continue;
		}
		grads[ngrad] = malloc(sizeof(float) * (size_t)numel);
		if (!grads[ngrad])
			die("out of memory", 0);
		memcpy(grads[ngrad++], out[o], sizeof(float) * (size_t)numel);
	}
	int gin[MAXIO];
	for (int k = 0; k < m_NUM_INPUTS; k++) {
		gin[k] = -1;
		if (!in_copy[k])
			continue;
		snprintf(gname, sizeof gname, "grad.%s", m_io_name(0, k));
		int o = find_output(gname);
		if (o < 0)
			continue;       /* target, mask: no gradient */
		gin[k] = ngrad;
		grads[ngrad] = malloc(sizeof(float) * (size_t)out_numel[o]);
		if (!grads[ngrad])
			die("out of memory", 0);
		memcpy(grads[ngrad++], out[o], sizeof(float) * (size_t)out_numel[o]);
	}
	if ((st = m_set_forward_only(mod, 1)))
		die("m_set_forward_only(1)", st);
	int idx = 0;
	for (int k = 0; k < m_NUM_PARAMS; k++, idx++) {
		const char *name;
		float *data;
		int64_t numel;
		m_param(mod, k, &name, &data, &numel);
		if (grads[idx])
			check_tensor(idx, name, data, grads[idx], numel, eps, rtol, atol);
	}
	for (int k = 0; k < m_NUM_INPUTS; k++) {
		if (gin[k] < 0)
			continue;
		const rt_tensor *t = rt_tf_find(&tf, m_io_name(0, k));
		int64_t n = (int64_t)(t->nbytes / sizeof(float));
		check_tensor(gin[k], m_io_name(0, k), in_copy[k], grads[gin[k]], n, eps, rtol, atol);
	}
	printf("# %d probes, %d failed\n", probes, failures);
	for (int k = 0; k < ngrad; k++)
		free(grads[k]);
	for (int k = 0; k < m_NUM_INPUTS; k++)
		free((void *)in[k]);
	for (int k = 0; k < m_NUM_OUTPUTS; k++)
		free(out[k]);
	rt_tf_close(&tf);
	m_destroy(mod);
	return failures ? 1 : 0;
}
