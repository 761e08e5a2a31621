/* limits.c: measures the machine limits of bench/limits.h.
 *
 * Built with -O3 -march=native: the bandwidth loop must read at the rate the
 * hardware allows (full-width vector loads, several independent sums), since
 * it is the yardstick, not a thing under test.  The products go through the
 * same CBLAS calls rt_sgemm makes (runtime/rt_blas.c), with the same
 * operand layout: R stored [4H, H] row-major, C = h R^T.
 */
#define _POSIX_C_SOURCE 200809L
#include "limits.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

enum { REPS = 9 };

double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The shortest of n times: a limit is what the machine can reach, and on a
 * shared machine the other repetitions measure the neighbours as well. */
static double best(const double *v, int n)
{
	double b = v[0];
	for (int i = 1; i < n; i++)
		b = v[i] < b ? v[i] : b;
	return b;
}

const char *bench_blas_core(void)
{
	return openblas_get_corename();
}

/* ---- bandwidth ---- */

typedef float v16 __attribute__((vector_size(64)));

typedef struct rd_job {
	const float *p;         /* this thread's part */
	size_t n;               /* floats, a multiple of 128 */
	int passes;
	float sink;
} rd_job;

/* Reads p[0..n) `passes` times with eight independent vector sums (one
 * would serialise on the add latency). */
static void *rd_run(void *arg)
{
	rd_job *j = arg;
	v16 s[8];
	memset(s, 0, sizeof s);
	for (int r = 0; r < j->passes; r++) {
		const v16 *q = (const v16 *)j->p;
		for (size_t i = 0; i < j->n / 16; i += 8) {
			s[0] += q[i];
			s[1] += q[i + 1];
			s[2] += q[i + 2];
			s[3] += q[i + 3];
			s[4] += q[i + 4];
			s[5] += q[i + 5];
			s[6] += q[i + 6];
			s[7] += q[i + 7];
		}
	}
	v16 t = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
	float f = 0;
	for (int k = 0; k < 16; k++)
		f += t[k];
	j->sink = f;
	return NULL;
}

/* GB/s reading buf[n] `passes` times per repetition, split over threads. */
static double read_bw(const float *buf, size_t n, int passes, int threads)
{
	if (threads < 1)
		threads = 1;
	if (threads > 16)
		threads = 16;
	rd_job job[16];
	size_t part = n / (size_t)threads / 128 * 128;
	for (int t = 0; t < threads; t++)
		job[t] = (rd_job){buf + (size_t)t * part, part, passes, 0};
	double times[REPS];
	for (int r = -1; r < REPS; r++) {       /* r = -1: warm-up (caches, pages) */
		pthread_t th[16];
		double t0 = bench_now();
		for (int t = 1; t < threads; t++)
			pthread_create(&th[t], NULL, rd_run, &job[t]);
		rd_run(&job[0]);
		for (int t = 1; t < threads; t++)
			pthread_join(th[t], NULL);
		if (r >= 0)
			times[r] = bench_now() - t0;
	}
	double bytes = (double)part * (double)threads * sizeof(float) * passes;
	return bytes / best(times, REPS) / 1e9;
}

/* ---- products ---- */

static void fill(float *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
	}
}

/* GFLOP/s of C[B,N] = A[B,K] W^T, W [N,K], as rt_sgemm computes it. */
static double gemm_gflops(int64_t B, int64_t N, int64_t K)
{
	float *A = malloc(sizeof(float) * (size_t)(B * K));
	float *W = malloc(sizeof(float) * (size_t)(N * K));
	float *C = malloc(sizeof(float) * (size_t)(B * N));
	if (!A || !W || !C) {
		free(A), free(W), free(C);
		return 0;
	}
	fill(A, (size_t)(B * K), 1);
	fill(W, (size_t)(N * K), 2);
	/* enough calls per repetition to last ~2 ms */
	double flops = 2.0 * (double)B * (double)N * (double)K;
	int calls = (int)(2e-3 * 50e9 / flops) + 1;
	double times[REPS];
	for (int r = -1; r < REPS; r++) {
		double t0 = bench_now();
		for (int c = 0; c < calls; c++) {
			if (B == 1)
				cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, 1.0f, W, (int)K,
					    A, 1, 0.0f, C, 1);
			else
				cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B, (int)N,
					    (int)K, 1.0f, A, (int)K, W, (int)K, 0.0f, C, (int)N);
		}
		if (r >= 0)
			times[r] = bench_now() - t0;
	}
	free(A), free(W), free(C);
	return flops * calls / best(times, REPS) / 1e9;
}

int bench_measure_limits(int64_t H, int64_t B, int threads, int elem_bytes, bench_limits *L)
{
	memset(L, 0, sizeof *L);
	int64_t N = 4 * H, K = H;
	L->weights_bytes = (double)(N * K) * elem_bytes;
	L->sgemv_gflops = gemm_gflops(1, N, K);
	if (B > 1)
		L->sgemm_gflops = gemm_gflops(B, N, K);
	size_t n = (size_t)(N * K) * (size_t)elem_bytes / sizeof(float);     /* floats read */
	n = (n + 128 * (size_t)threads - 1) / (128 * (size_t)threads) * (128 * (size_t)threads);
	float *buf = aligned_alloc(64, n * sizeof(float));
	if (!buf)
		return -1;
	fill(buf, n, 3);
	/* ~4 ms per repetition */
	int passes = (int)(4e-3 * 100e9 / (double)(n * sizeof(float))) + 1;
	L->bw_weights_gbs = read_bw(buf, n, passes, threads);
	free(buf);
	return 0;
}

double bench_dram_bw(int threads)
{
	size_t n = (size_t)1 << 28;
	float *buf = aligned_alloc(64, n * sizeof(float));
	if (!buf)
		return 0;
	fill(buf, n, 4);
	double bw = read_bw(buf, n, 1, threads);
	free(buf);
	return bw;
}

void bench_fill(float *p, int64_t n, unsigned seed)
{
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		p[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
	}
}

int64_t bench_numel(const int64_t *d, int rank)
{
	int64_t n = 1;
	for (int k = 0; k < rank; k++)
		n *= d[k];
	return n;
}
