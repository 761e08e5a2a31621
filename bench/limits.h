/* limits.h: the machine's limits for one benchmark case, measured by the same
 * program that times the generated code (bench/limits.c).
 *
 * For a recurrence of hidden size H at batch B the step's recurrent product
 * is C[B, 4H] = h[B, H] R^T with R [4H, H] (an LSTM: four gate blocks).  The
 * limits are:
 *   - sgemm / sgemv throughput (GFLOP/s) of exactly that product through
 *     OpenBLAS, as rt_sgemm calls it (sgemv when B == 1);
 *   - the read bandwidth (GB/s) of a buffer the size of R, read again and
 *     again: the rate at which a step can stream its recurrent weights from
 *     wherever they stay resident (L2 for H = 256: 1 MiB); main memory's
 *     bandwidth separately, for reference (bench_dram_bw).
 * Each is the best of several timed repetitions (what the machine reaches;
 * the case timings are medians); `threads` threads share
 * the bandwidth loops (the BLAS calls use OpenBLAS's own threads, set by
 * OPENBLAS_NUM_THREADS).
 */
#ifndef BENCH_LIMITS_H
#define BENCH_LIMITS_H

#include <stdint.h>

typedef struct bench_limits {
	double sgemm_gflops;    /* C[B,4H] = h[B,H] R^T, B > 1; 0 when B == 1 */
	double sgemv_gflops;    /* c[4H] = R h */
	double bw_weights_gbs;  /* reading a buffer of sizeof(R) over and over */
	double weights_bytes;   /* sizeof(R) = 4H * H * elem_bytes */
} bench_limits;

/* Monotonic time in seconds; CPU time of the process (all threads). */
double bench_now(void);
double bench_cpu_now(void);
/* p[n] filled with a fixed pseudo-random sequence in [-1, 1) from seed. */
void bench_fill(float *p, int64_t n, unsigned seed);
/* Product of d[0..rank). */
int64_t bench_numel(const int64_t *d, int rank);
/* Median of v[n] (v is sorted in place). */
double bench_median(double *v, int n);
/* Measures the limits for hidden size H, batch B, with `threads` threads for
 * the bandwidth loops, the recurrent weights R taking elem_bytes each (4:
 * float32, 2: bfloat16); 0 on success. */
int bench_measure_limits(int64_t H, int64_t B, int threads, int elem_bytes, bench_limits *L);
/* Main-memory read bandwidth (GB/s): a 1 GiB buffer, far beyond the caches,
 * read once per repetition by `threads` threads (about a second). */
double bench_dram_bw(int threads);
/* OpenBLAS's name for the kernels it uses ("Prescott", "Haswell", ...), or
 * "none" when built without it. */
const char *bench_blas_core(void);

#endif
