/* time_cellc.c: times code that cellc generated, and measures the machine's
 * limits for the same case in the same program (bench/limits.c).
 *
 *   time_cellc WEIGHTS T B H REPS THREADS [OUT]
 *
 * Built once per model, with the model's header forced in:
 *   cc -DCELLC_MODEL=NAME -include DIR/NAME.h time_cellc.c limits.c libNAME.a ...
 * It uses only the generic interface of the emitted header: input 0 is the
 * sequence x [T, B, I] (I from the model), every other input and output is
 * allocated from NAME_io_shape.  The input holds fixed pseudo-random values
 * in [-1, 1).  Untimed runs warm up for 0.3 s, at least one (allocations
 * of the recurrent states, caches, OpenBLAS's threads falling asleep:
 * WARMUP_S), then REPS timed runs of NAME_run_generic, each a whole
 * sequence from the initial state.  Prints, as `key=value` words:
 *
 *   cellc_ms=MEDIAN min_ms=.. cpu_ms=.. reps=.. sgemv_gflops=.. sgemm_gflops=..
 *   bw_weights_gbs=.. weights_bytes=.. core=..
 *
 * cpu_ms is the median CPU time of the process (all its threads) per run:
 * on a machine shared with other work it stays near the unloaded wall time
 * at one thread, where the wall time does not.
 * OUT: output 0 of the last run is written there as raw float32, so that
 * bench/run.py can check that the timed code computes what ONNX Runtime does.
 * Built with -DBENCH_GEMM_TIME and bench/gemm_time.c (time_cellc_gemm), it
 * prints instead the rate of the recurrent products inside their calls:
 *
 *   cellc_ms=MEDIAN gemm_gflops=.. gemm_flops=.. gemm_calls=.. gemm_ms=..   (per run)
 *
 * gemm_ms: the time in the products of the thread that spent the most in
 * them, per run (bench_gemm_seconds / REPS); wall_ms: this program's mean
 * time per run over the same runs (the two give the rest of the step).
 *
 * THREADS is the thread count of the bandwidth loops; OpenBLAS's threads
 * come from OPENBLAS_NUM_THREADS, which bench/run.py sets to the same.
 */
#ifndef CELLC_MODEL
#error "define CELLC_MODEL as the model's NAME and -include NAME.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"
#include "limits.h"
#ifdef BENCH_GEMM_TIME
#include "gemm_time.h"
#endif

#define TC_CAT_(a, b) a##b
#define TC_CAT(a, b) TC_CAT_(a, b)
#define M(x) TC_CAT(CELLC_MODEL, x)

enum { MAXIO = 16, MAXREPS = 101 };
/* The warm-up lasts this long: OpenBLAS's idle threads (OPENBLAS_NUM_THREADS
 * > 1) spin for about 0.1 s after the library starts or last ran, on the
 * cores that the generated code's own threads then share with them. */
#define WARMUP_S 0.3

int main(int argc, char **argv)
{
	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: time_cellc WEIGHTS T B H REPS THREADS [OUT]\n");
		return 2;
	}
	int64_t T = atoll(argv[2]), B = atoll(argv[3]), H = atoll(argv[4]);
	int reps = atoi(argv[5]), threads = atoi(argv[6]);
	if (reps < 1 || reps > MAXREPS || M(_NUM_INPUTS) > MAXIO || M(_NUM_OUTPUTS) > MAXIO) {
		fprintf(stderr, "time_cellc: bad REPS or too many inputs/outputs\n");
		return 2;
	}
	CELLC_MODEL *m;
	int st = M(_create)(&m, argv[1]);
	if (st != RT_OK) {
		fprintf(stderr, "time_cellc: %s: %s\n", argv[1], M(_status_str)(st));
		return 1;
	}
	/* input shapes: x [T, B, I]; any other input gets B as its batch */
	int64_t dims[MAXIO][RT_TF_MAXRANK];
	const int64_t *dp[MAXIO];
	for (int k = 0; k < M(_NUM_INPUTS); k++) {
		int r = M(_io_rank)(0, k);
		if (r != 3) {
			fprintf(stderr, "time_cellc: input %d has rank %d, want [T, B, I]\n", k, r);
			return 1;
		}
		dims[k][0] = T;
		dims[k][1] = B;
		dims[k][2] = 0;
		dp[k] = dims[k];
	}
	/* I: the model's own input size, read back from a probe binding */
	M(_dims) d;
	memset(&d, 0, sizeof d);
	for (int64_t I = 1; I <= 4096; I++) {
		for (int k = 0; k < M(_NUM_INPUTS); k++)
			dims[k][2] = I;
		if (M(_bind_dims)(dp, &d) == RT_OK)
			break;
		dims[0][2] = 0;
	}
	if (dims[0][2] == 0) {
		fprintf(stderr, "time_cellc: no input size fits the model\n");
		return 1;
	}
	void *in[MAXIO], *out[MAXIO];
	for (int k = 0; k < M(_NUM_INPUTS); k++) {
		int64_t n = bench_numel(dims[k], 3);
		in[k] = malloc(sizeof(float) * (size_t)n);
		if (!in[k])
			return 1;
		bench_fill(in[k], n, 7u + (unsigned)k);
	}
	for (int k = 0; k < M(_NUM_OUTPUTS); k++) {
		int64_t od[RT_TF_MAXRANK];
		M(_io_shape)(&d, 1, k, od);
		int64_t n = bench_numel(od, M(_io_rank)(1, k));
		size_t es = rt_dtype_size(M(_io_dtype)(1, k));
		out[k] = malloc((es ? es : 8) * (size_t)(n > 0 ? n : 1));
		if (!out[k])
			return 1;
	}
	double t[MAXREPS], c[MAXREPS];
	/* warm-up: untimed runs for WARMUP_S seconds (at least one) */
	double w0 = bench_now();
	for (int r = -1; r < reps; r++) {
		if (r == 0 && bench_now() - w0 < WARMUP_S)
			r = -1;
#ifdef BENCH_GEMM_TIME
		if (r == 0)
			bench_gemm_reset(H);
#endif
		double t0 = bench_now(), c0 = bench_cpu_now();
		st = M(_run_generic)(m, &d, (const void *const *)in, (void *const *)out);
		if (st != RT_OK) {
			fprintf(stderr, "time_cellc: run: %s\n", M(_status_str)(st));
			return 1;
		}
		if (r >= 0) {
			t[r] = bench_now() - t0;
			c[r] = bench_cpu_now() - c0;
		}
	}
	double med = bench_median(t, reps), cmed = bench_median(c, reps);
	if (argc == 8) {
		int64_t od[RT_TF_MAXRANK];
		M(_io_shape)(&d, 1, 0, od);
		size_t n = (size_t)bench_numel(od, M(_io_rank)(1, 0));
		FILE *f = fopen(argv[7], "wb");
		if (!f || M(_io_dtype)(1, 0) != 1 || fwrite(out[0], sizeof(float), n, f) != n) {
			fprintf(stderr, "time_cellc: cannot write %s\n", argv[7]);
			return 1;
		}
		fclose(f);
	}
#ifdef BENCH_GEMM_TIME
	/* time_cellc_gemm: only the rate of the recurrent products inside the calls */
	double gf, fl;
	long calls;
	if (bench_gemm_result(&gf, &fl, &calls) != 0) {
		fprintf(stderr, "time_cellc: no product with K = %lld was called\n", (long long)H);
		return 1;
	}
	double wall = 0;
	for (int r = 0; r < reps; r++)
		wall += t[r];
	printf("cellc_ms=%.4f gemm_gflops=%.3f gemm_flops=%.0f gemm_calls=%ld gemm_ms=%.4f wall_ms=%.4f\n",
	       1e3 * med, gf, fl / reps, calls / reps, 1e3 * bench_gemm_seconds() / reps, 1e3 * wall / reps);
	return 0;
#endif
	bench_limits L = {0};
	/* BENCH_NO_LIMITS: only the model's times (bench/run.py's interleaved rounds) */
	/* BENCH_WEIGHT_BYTES=2 or 1: the limits of bfloat16 or int8 recurrent
	 * weights (--weights bf16, int8) */
	const char *nl = getenv("BENCH_NO_LIMITS"), *wb = getenv("BENCH_WEIGHT_BYTES");
	int eb = wb && (atoi(wb) == 2 || atoi(wb) == 1) ? atoi(wb) : 4;
	if (!(nl && *nl && strcmp(nl, "0") != 0) && bench_measure_limits(H, B, threads, eb, &L) != 0)
		return 1;
	printf("cellc_ms=%.4f min_ms=%.4f cpu_ms=%.4f reps=%d sgemv_gflops=%.3f sgemm_gflops=%.3f "
	       "bw_weights_gbs=%.3f weights_bytes=%.0f core=%s\n", 1e3 * med, 1e3 * t[0], 1e3 * cmed, reps,
	       L.sgemv_gflops, L.sgemm_gflops, L.bw_weights_gbs, L.weights_bytes, bench_blas_core());
	for (int k = 0; k < M(_NUM_INPUTS); k++)
		free(in[k]);
	for (int k = 0; k < M(_NUM_OUTPUTS); k++)
		free(out[k]);
	M(_destroy)(m);
	return 0;
}
