/* time_train.c: times one training step of a model that `cellc compile
 * --train --loss ce` emitted: forward and backward (NAME_run_generic, which
 * computes the loss and every grad.* output) plus an RMSprop update of every
 * parameter through libcellrt's rt_optim (PyTorch's defaults: lr 1e-3,
 * alpha 0.99, eps 1e-8), the step bench/torch_bench.py times in PyTorch.
 *
 *   time_train WEIGHTS T B REPS
 *
 * Built once per model, with the model's header forced in:
 *   cc -DCELLC_MODEL=NAME -include DIR/NAME.h time_train.c limits.c libNAME.a ...
 * It uses the generic interface and the training API of the emitted header
 * (NAME_param, NAME_set_forward_only, NAME_TRAIN_INFO): the data input
 * (TRAIN_INFO.x_input) gets T along its time axis and B along its batch
 * axis, its feature size is read back from a probe binding, and holds fixed
 * pseudo-random values in [-1, 1); the input `target` [B] holds fixed labels
 * in [0, nclasses).  Only the ce loss and models whose inputs are the data
 * and the target are timed (anything else is refused).  Every output is
 * allocated (the run needs all of them: grad.<x> and dstate too), and the
 * optimiser state once, before the first step.  Flush-to-zero and
 * denormals-are-zero are set as in the emitted training program
 * (templates/train_main.c): the state gradients of long sequences shrink
 * into subnormals, on which the BLAS kernels are many times slower.
 *
 * One untimed step warms up (workspace, caches), then REPS timed steps, each
 * from the initial state with the parameters the previous step left; then
 * REPS forward-only runs (NAME_set_forward_only(m, 1): outputs and loss, no
 * gradients) to split the step.  Prints, as `key=value` words:
 *
 *   train_ms=MEDIAN min_ms=.. cpu_ms=.. first_ms=.. first_cpu_ms=..
 *   run_cpu_ms=.. optim_cpu_ms=.. fwd_ms=.. fwd_cpu_ms=.. loss_first=..
 *   loss_last=.. params=.. reps=..
 *
 * Built with -DBENCH_GEMM_TIME and bench/gemm_time.c (time_train_gemm,
 * usage time_train_gemm WEIGHTS T B REPS H THREADS), it then runs one more
 * step with every product timed inside its call and measures the machine's
 * sgemm rate for the step's product [B, H] x [H, 4H] (bench/limits.c), and
 * adds: gemm_flops (the products' FLOPs per step), gemm_s (about the wall
 * time in them: bench_gemm_seconds), step_s (that step's wall time) and
 * sgemm_gflops.
 *
 * cpu_ms is the median CPU time of the process (all its threads) per step;
 * run_cpu_ms and optim_cpu_ms the medians of its two parts; first_ms and
 * first_cpu_ms the wall and CPU time of the warm-up step, which also touches
 * every buffer for the first time (PyTorch's training step is timed without
 * a warm-up); loss_first / loss_last the loss of the warm-up and of the last
 * timed step (a sanity check: both finite; RMSprop's first updates on one
 * batch need not lower it).
 */
#ifndef CELLC_MODEL
#error "define CELLC_MODEL as the model's NAME and -include NAME.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "cellrt.h"
#include "limits.h"
#ifdef BENCH_GEMM_TIME
#include "gemm_time.h"
#endif

#define TT_CAT_(a, b) a##b
#define TT_CAT(a, b) TT_CAT_(a, b)
#define M(x) TT_CAT(CELLC_MODEL, x)

enum { MAXIO = 64, MAXREPS = 101 };

static int find_output(const char *name)
{
	for (int k = 0; k < M(_NUM_OUTPUTS); k++)
		if (strcmp(M(_io_name)(1, k), name) == 0)
			return k;
	return -1;
}

static int fail(const char *what, int st)
{
	fprintf(stderr, "time_train: %s: %s\n", what, M(_status_str)(st));
	return 1;
}

int main(int argc, char **argv)
{
#if defined(__SSE__) || defined(__x86_64__)
	_mm_setcsr(_mm_getcsr() | 0x8040);      /* FTZ | DAZ */
#endif
#ifdef BENCH_GEMM_TIME
	if (argc != 7) {
		fprintf(stderr, "usage: time_train_gemm WEIGHTS T B REPS H THREADS\n");
		return 2;
	}
#else
	if (argc != 5) {
		fprintf(stderr, "usage: time_train WEIGHTS T B REPS\n");
		return 2;
	}
#endif
	int64_t T = atoll(argv[2]), B = atoll(argv[3]);
	int reps = atoi(argv[4]);
	const M(_train_info) *ti = &M(_TRAIN_INFO);
	if (reps < 1 || reps > MAXREPS || T < 1 || B < 1 || M(_NUM_INPUTS) != 2 ||
	    M(_NUM_OUTPUTS) > MAXIO || ti->loss_kind != 0 || ti->x_input != 0 ||
	    M(_io_rank)(0, 0) != 3 || M(_io_rank)(0, 1) != 1 ||
	    strcmp(M(_io_name)(0, 1), "target") != 0 || M(_io_dtype)(0, 1) != 7) {
		fprintf(stderr, "time_train: bad T, B or REPS, or not a ce model with inputs "
		        "x [3 axes] and target [B] (int64)\n");
		return 2;
	}
	CELLC_MODEL *m;
	int st = M(_create)(&m, argv[1]);
	if (st != RT_OK)
		return fail(argv[1], st);

	/* x: T on the time axis, B on the batch axis, its feature size probed */
	int64_t xd[3], td[1] = {B};
	int fa = 3 - ti->time_axis - ti->batch_axis;
	if (ti->time_axis < 0 || ti->batch_axis < 0 || fa < 0 || fa > 2 ||
	    ti->time_axis == ti->batch_axis) {
		fprintf(stderr, "time_train: data input without a time and a batch axis\n");
		return 2;
	}
	xd[ti->time_axis] = T;
	xd[ti->batch_axis] = B;
	const int64_t *dp[2] = {xd, td};
	M(_dims) d;
	memset(&d, 0, sizeof d);
	for (xd[fa] = 1; xd[fa] <= 4096; xd[fa]++)
		if (M(_bind_dims)(dp, &d) == RT_OK)
			break;
	if (xd[fa] > 4096) {
		fprintf(stderr, "time_train: no input size fits the model\n");
		return 1;
	}
	float *x = malloc(sizeof(float) * (size_t)bench_numel(xd, 3));
	int64_t *target = malloc(sizeof(int64_t) * (size_t)B);
	if (!x || !target)
		return 1;
	bench_fill(x, bench_numel(xd, 3), 7u);
	for (int64_t b = 0; b < B; b++)
		target[b] = (b * 7 + 3) % (ti->nclasses > 0 ? ti->nclasses : 1);
	const void *in[2] = {x, target};
	void *out[MAXIO];
	for (int k = 0; k < M(_NUM_OUTPUTS); k++) {
		int64_t od[RT_TF_MAXRANK];
		M(_io_shape)(&d, 1, k, od);
		int64_t n = bench_numel(od, M(_io_rank)(1, k));
		size_t es = rt_dtype_size(M(_io_dtype)(1, k));
		out[k] = calloc((size_t)(n > 0 ? n : 1), es ? es : 8);
		if (!out[k])
			return 1;
	}
	const float *loss = out[ti->loss_output_index];

	/* parameters, their gradients (outputs grad.<P>) and RMSprop state */
	rt_optim o;
	rt_optim_defaults(&o, RT_OPT_RMSPROP);
	const double lr = 1e-3;        /* torch_bench.py's RMSprop(lr=1e-3) */
	int np = M(_NUM_PARAMS);
	float **p = calloc((size_t)np, sizeof *p), **state = calloc((size_t)np, sizeof *state);
	const float **g = calloc((size_t)np, sizeof *g);
	int64_t *pn = calloc((size_t)np, sizeof *pn);
	if (!p || !state || !g || !pn)
		return 1;
	for (int k = 0; k < np; k++) {
		const char *name;
		char gname[512];
		if ((st = M(_param)(m, k, &name, &p[k], &pn[k])) != RT_OK)
			return fail("param", st);
		snprintf(gname, sizeof gname, "grad.%s", name);
		int gk = find_output(gname);
		if (gk < 0) {
			fprintf(stderr, "time_train: no output %s\n", gname);
			return 1;
		}
		g[k] = out[gk];
		state[k] = malloc(sizeof(float) * (size_t)(rt_optim_slots(&o) * pn[k] + 1));
		if (!state[k])
			return 1;
		rt_optim_init_state(&o, state[k], pn[k]);
	}

	double t[MAXREPS], c[MAXREPS], cr[MAXREPS], co[MAXREPS];
	double first_ms = 0, first_cpu_ms = 0, loss_first = 0;
	for (int r = -1; r < reps; r++) {
		double t0 = bench_now(), c0 = bench_cpu_now();
		st = M(_run_generic)(m, &d, in, (void *const *)out);
		if (st != RT_OK)
			return fail("run", st);
		double c1 = bench_cpu_now();
		rt_optim_begin_step(&o);
		for (int k = 0; k < np; k++)
			if ((st = rt_optim_update(&o, lr, p[k], g[k], state[k], pn[k])) != RT_OK)
				return fail("rt_optim_update", st);
		double t2 = bench_now(), c2 = bench_cpu_now();
		if (r < 0) {
			first_ms = 1e3 * (t2 - t0);
			first_cpu_ms = 1e3 * (c2 - c0);
			loss_first = *loss;
			continue;
		}
		t[r] = t2 - t0;
		c[r] = c2 - c0;
		cr[r] = c1 - c0;
		co[r] = c2 - c1;
	}
	double loss_last = *loss;
#ifdef BENCH_GEMM_TIME
	{
		/* one more step (forward and backward), every product timed */
		bench_gemm_reset(0);
		double t0 = bench_now();
		if ((st = M(_run_generic)(m, &d, in, (void *const *)out)) != RT_OK)
			return fail("run", st);
		double step_s = bench_now() - t0, gf, fl;
		long calls;
		if (bench_gemm_result(&gf, &fl, &calls) != 0) {
			fprintf(stderr, "time_train_gemm: no product was counted\n");
			return 1;
		}
		bench_limits L = {0};
		if (bench_measure_limits(atoll(argv[5]), B, atoi(argv[6]), 4, &L) != 0)
			return 1;
		printf("gemm_flops=%.0f gemm_s=%.6f gemm_calls=%ld step_s=%.6f sgemm_gflops=%.3f\n", fl,
		       bench_gemm_seconds(), calls, step_s, L.sgemm_gflops);
		return 0;
	}
#endif
	double tf[MAXREPS], cf[MAXREPS];
	if ((st = M(_set_forward_only)(m, 1)) != RT_OK)
		return fail("set_forward_only", st);
	for (int r = 0; r < reps; r++) {
		double t0 = bench_now(), c0 = bench_cpu_now();
		if ((st = M(_run_generic)(m, &d, in, (void *const *)out)) != RT_OK)
			return fail("forward-only run", st);
		tf[r] = bench_now() - t0;
		cf[r] = bench_cpu_now() - c0;
	}
	if (!isfinite(loss_first) || !isfinite(loss_last)) {
		fprintf(stderr, "time_train: the loss is not finite (%g, %g)\n", loss_first, loss_last);
		return 1;
	}
	double tmin = t[0];
	for (int r = 1; r < reps; r++)
		tmin = t[r] < tmin ? t[r] : tmin;
	double med = bench_median(t, reps), cmed = bench_median(c, reps);
	printf("train_ms=%.4f min_ms=%.4f cpu_ms=%.4f first_ms=%.4f first_cpu_ms=%.4f "
	       "run_cpu_ms=%.4f optim_cpu_ms=%.4f fwd_ms=%.4f fwd_cpu_ms=%.4f loss_first=%.6f "
	       "loss_last=%.6f params=%d reps=%d\n", 1e3 * med, 1e3 * tmin, 1e3 * cmed, first_ms,
	       first_cpu_ms,
	       1e3 * bench_median(cr, reps), 1e3 * bench_median(co, reps),
	       1e3 * bench_median(tf, reps), 1e3 * bench_median(cf, reps), loss_first, loss_last,
	       np, reps);
	for (int k = 0; k < np; k++)
		free(state[k]);
	free(p);
	free(state);
	free(g);
	free(pn);
	for (int k = 0; k < M(_NUM_OUTPUTS); k++)
		free(out[k]);
	free(x);
	free(target);
	M(_destroy)(m);
	return 0;
}
