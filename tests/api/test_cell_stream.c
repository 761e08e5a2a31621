/* test_cell_stream.c: streaming of native .cell models through the emitted
 * C API (`cellc compile model.cell --name m`), for the cells whose step
 * depends on more than h: momentum (v), NAG (the step number t and its
 * restart), Adam (v, m) and causal momentum attention (S, z, p), and a stack.
 *
 *   test_cell_stream CASE_DIR WEIGHTS
 *
 * CASE_DIR (tests/gen_cell_init_cases.py, stream/CASE) holds dims.txt
 * "T K B I H", x.bin [T+K, B, I] and y.bin [T+K, B, H]: the PyTorch golden
 * of tests/ref_cells.py over all T+K steps.  Checks, one PASS/FAIL line each:
 *   run        m_run over T+K steps vs the golden (1e-5 + 1e-4 |ref|)
 *   step       m_reset, then m_step T+K times: each step equals the run's row
 *              (|diff| <= 1e-6) and the golden
 *   reset      after those steps, m_reset and T steps again: the golden's
 *              first T rows (the step counter t restarts at 1)
 *   continue   m_run over T steps, then K steps: the golden's rows T..T+K-1
 *              (the run leaves the states and t where streaming continues)
 *   run_resets m_step a few times, then m_run over T: the golden's first T
 *              rows (a run starts from the initial state, t = 1)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"
#include "m.h"

static int failures;
static long T, K, B, I, H;
static float *X, *Y;

static float *read_floats(const char *dir, const char *name, long n)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	float *p = malloc(sizeof(float) * (size_t)n);
	if (!f || !p || fread(p, sizeof(float), (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %ld floats from %s\n", n, path);
		exit(2);
	}
	fclose(f);
	return p;
}

/* max |got - want| / (atol + rtol |want|) over n values; > 1 fails */
static double worst(const float *got, const float *want, long n, double atol, double rtol)
{
	double w = 0;
	for (long i = 0; i < n; i++) {
		double e = fabs((double)got[i] - (double)want[i]) / (atol + rtol * fabs((double)want[i]));
		if (!(e <= w))  /* NaN counts as a failure */
			w = isnan(e) ? INFINITY : e;
	}
	return w;
}

static void result(const char *name, int ok, const char *fmt, double a, double b)
{
	char detail[256];
	snprintf(detail, sizeof detail, fmt, a, b);
	printf("%s %s %s\n", ok ? "PASS" : "FAIL", name, detail);
	if (!ok)
		failures++;
}

static int call_ok(int st, const char *what)
{
	if (st != RT_OK) {
		printf("FAIL %s %s\n", what, m_status_str(st));
		failures++;
		return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_cell_stream CASE_DIR WEIGHTS NAME\n");
		return 2;
	}
	const char *dir = argv[1], *name = argv[3];
	char path[1024], tn[256];
	snprintf(path, sizeof path, "%s/dims.txt", dir);
	FILE *f = fopen(path, "r");
	if (!f || fscanf(f, "%ld %ld %ld %ld %ld", &T, &K, &B, &I, &H) != 5) {
		fprintf(stderr, "cannot read %s\n", path);
		return 2;
	}
	fclose(f);
	long N = T + K, xs = B * I, ys = B * H;
	X = read_floats(dir, "x.bin", N * xs);
	Y = read_floats(dir, "y.bin", N * ys);
	float *yrun = calloc((size_t)(N * ys), sizeof(float));
	float *ystep = calloc((size_t)(N * ys), sizeof(float));
	m *mod = NULL;
	if (!yrun || !ystep || m_create(&mod, argv[2]) != RT_OK) {
		fprintf(stderr, "cannot create the model from %s\n", argv[2]);
		return 2;
	}
	m_dims dN = {.seq = N, .batch = B}, dT = {.seq = T, .batch = B}, d1 = {.seq = 1, .batch = B};

	/* run over all steps */
	snprintf(tn, sizeof tn, "cell_stream/%s/run", name);
	if (call_ok(m_run(mod, &dN, X, yrun), tn)) {
		double w = worst(yrun, Y, N * ys, 1e-5, 1e-4);
		result(tn, w <= 1, "err/tol %.3g vs PyTorch over %g steps", w, (double)N);
	}

	/* step by step from a reset */
	snprintf(tn, sizeof tn, "cell_stream/%s/step", name);
	int ok = call_ok(m_reset(mod), tn);
	for (long t = 0; ok && t < N; t++)
		ok = call_ok(m_step(mod, &d1, X + t * xs, ystep + t * ys), tn);
	if (ok) {
		double e = worst(ystep, yrun, N * ys, 1e-6, 0), w = worst(ystep, Y, N * ys, 1e-5, 1e-4);
		result(tn, e <= 1 && w <= 1, "step vs run max diff %.3g (limit 1e-6), err/tol vs PyTorch %.3g",
		       e * 1e-6, w);
	}

	/* reset restarts the states and the step counter */
	snprintf(tn, sizeof tn, "cell_stream/%s/reset", name);
	ok = call_ok(m_reset(mod), tn);
	memset(ystep, 0, sizeof(float) * (size_t)(N * ys));
	for (long t = 0; ok && t < T; t++)
		ok = call_ok(m_step(mod, &d1, X + t * xs, ystep + t * ys), tn);
	if (ok) {
		double w = worst(ystep, Y, T * ys, 1e-5, 1e-4), e = worst(ystep, yrun, T * ys, 1e-6, 0);
		result(tn, w <= 1 && e <= 1, "err/tol %.3g vs PyTorch, max diff %.3g vs run", w, e * 1e-6);
	}

	/* run over the first T steps, then K steps continue the sequence */
	snprintf(tn, sizeof tn, "cell_stream/%s/continue", name);
	memset(ystep, 0, sizeof(float) * (size_t)(N * ys));
	ok = call_ok(m_run(mod, &dT, X, ystep), tn);
	for (long t = T; ok && t < N; t++)
		ok = call_ok(m_step(mod, &d1, X + t * xs, ystep + t * ys), tn);
	if (ok) {
		double w = worst(ystep, Y, N * ys, 1e-5, 1e-4), e = worst(ystep + T * ys, yrun + T * ys, K * ys, 1e-6, 0);
		result(tn, w <= 1 && e <= 1, "err/tol %.3g vs PyTorch, steps after the run vs whole run %.3g", w,
		       e * 1e-6);
	}

	/* a run after some steps starts from the initial state */
	snprintf(tn, sizeof tn, "cell_stream/%s/run_resets", name);
	ok = 1;
	for (long t = 0; ok && t < 2; t++)
		ok = call_ok(m_step(mod, &d1, X + t * xs, ystep), tn);
	memset(ystep, 0, sizeof(float) * (size_t)(N * ys));
	if (ok && call_ok(m_run(mod, &dT, X, ystep), tn)) {
		double w = worst(ystep, Y, T * ys, 1e-5, 1e-4);
		result(tn, w <= 1, "err/tol %.3g vs PyTorch (%g steps)", w, (double)T);
	}

	m_destroy(mod);
	free(X);
	free(Y);
	free(yrun);
	free(ystep);
	return failures ? 1 : 0;
}
