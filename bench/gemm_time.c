/* gemm_time.c: the time the generated code spends in its recurrent
 * products, measured inside the calls themselves.
 *
 * Linked into a second copy of bench/time_cellc.c (time_cellc_gemm) with
 *   -Wl,--wrap=rt_sgemm,--wrap=rt_sgemm_bias,--wrap=rt_sgemm_packed,--wrap=rt_gemv_packed
 * and the reduced-precision products of --weights bf16 and int8
 *   --wrap=rt_gemv_packed_bf16,--wrap=rt_gemv_packed_bf16x,--wrap=rt_gemv_split_bf16,
 *   --wrap=rt_gemv_packed_i8,--wrap=rt_gemv_packed_i8q,--wrap=rt_gemv_quant_i8
 * so that the generated code's calls of those libcellrt functions come here
 * first: each call whose inner dimension K is the case's hidden size (the
 * recurrent product h[B, H] x R: the input projection has K = I = 1) is
 * timed (rt_gemm_pack, which packs the weights once per run, is not: it is
 * outside the steps' products), and its 2 M N K FLOPs counted, on the calling thread's slot.  The
 * products of a step run on several OpenMP threads at once (rows or columns
 * split between them), so the rate of the generated code's recurrent GEMM is
 * the sum over threads of each thread's FLOPs over its time in the calls:
 * what the machine's sgemm rate for the whole product (bench/limits.c, with
 * the same thread count) is compared with.  A call made from inside a
 * timed call (rt_sgemm_bias calling rt_sgemm) is not counted twice.
 *
 * The timing itself (two clock reads per call, about 50 ns) is why this is
 * a separate program: the times of time_cellc stay free of it.  Linked into
 * time_train (time_train_gemm), it counts every product of a training step
 * (bench_gemm_reset(0)): the forward's, the backward's through the states
 * and the weight gradients'.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "cellrt.h"
#include "gemm_time.h"

enum { SLOTS = 64 };

static struct {
	double flops, ns;
	long calls;
	char pad[64 - 2 * sizeof(double) - sizeof(long)];
} slot[SLOTS] __attribute__((aligned(64)));
static int64_t want_k = -1;
static _Thread_local int depth;

void __real_rt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		     const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
		     int64_t ldc);
void __real_rt_sgemm_bias(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
			  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
			  const float *bias, float *C, int64_t ldc);
void __real_rt_sgemm_packed(int transA, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			    int64_t lda, const float *P, int transB, const float *B, int64_t ldb, float beta,
			    const float *bias, float *C, int64_t ldc);
void __real_rt_gemv_packed(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			   const float *P, float beta, const float *bias, float *c);

void __real_rt_gemv_packed_bf16(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				const uint16_t *P, float beta, const float *bias, float *c);
void __real_rt_gemv_packed_bf16x(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				 const uint32_t *xs, const uint16_t *P, float beta, const float *bias, float *c);
void __real_rt_gemv_split_bf16(int64_t K, const float *a, const uint16_t *P, uint32_t *xs);
void __real_rt_gemv_packed_i8(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			      const int8_t *P, float beta, const float *bias, float *c);
void __real_rt_gemv_packed_i8q(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const uint8_t *qa,
			       float sa, int32_t zp, const int8_t *P, float beta, const float *bias, float *c);
float __real_rt_gemv_quant_i8(int64_t K, const float *a, uint8_t *qa, int32_t *zp);

void bench_gemm_reset(int64_t K)
{
	memset(slot, 0, sizeof slot);
	want_k = K;
}

int bench_gemm_result(double *gflops, double *flops, long *calls)
{
	double rate = 0, f = 0;
	long n = 0;
	for (int t = 0; t < SLOTS; t++)
		if (slot[t].ns > 0) {
			rate += slot[t].flops / slot[t].ns;     /* FLOP/ns = GFLOP/s */
			f += slot[t].flops;
			n += slot[t].calls;
		}
	*gflops = rate;
	*flops = f;
	*calls = n;
	return n > 0 ? 0 : -1;
}

double bench_gemm_seconds(void)
{
	double ns = 0;
	for (int t = 0; t < SLOTS; t++)
		ns = slot[t].ns > ns ? slot[t].ns : ns;
	return 1e-9 * ns;
}

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return 1e9 * (double)ts.tv_sec + (double)ts.tv_nsec;
}

/* enter: nonzero when this call is to be timed (then t0 is its start) */
static int enter(int64_t K, double *t0)
{
	if (depth++ || (want_k != 0 && K != want_k))
		return 0;
	*t0 = now_ns();
	return 1;
}

static void leave(int timed, double t0, double flops)
{
	depth--;
	if (!timed)
		return;
	double dt = now_ns() - t0;
	int t = omp_get_thread_num();
	if (t < 0 || t >= SLOTS)
		t = SLOTS - 1;
	slot[t].flops += flops;
	slot[t].ns += dt;
	slot[t].calls++;
}

void __wrap_rt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		     const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
		     int64_t ldc)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
	leave(timed, t0, 2.0 * (double)M * (double)N * (double)K);
}

void __wrap_rt_sgemm_bias(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
			  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
			  const float *bias, float *C, int64_t ldc)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_sgemm_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
	leave(timed, t0, 2.0 * (double)M * (double)N * (double)K);
}

void __wrap_rt_sgemm_packed(int transA, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			    int64_t lda, const float *P, int transB, const float *B, int64_t ldb, float beta,
			    const float *bias, float *C, int64_t ldc)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_sgemm_packed(transA, M, N, K, alpha, A, lda, P, transB, B, ldb, beta, bias, C, ldc);
	leave(timed, t0, 2.0 * (double)M * (double)N * (double)K);
}

void __wrap_rt_gemv_packed(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			   const float *P, float beta, const float *bias, float *c)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_gemv_packed(r0, r1, N, K, alpha, a, P, beta, bias, c);
	leave(timed, t0, 2.0 * (double)(r1 - r0) * (double)K);
}

void __wrap_rt_gemv_packed_bf16(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				const uint16_t *P, float beta, const float *bias, float *c)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_gemv_packed_bf16(r0, r1, N, K, alpha, a, P, beta, bias, c);
	leave(timed, t0, 2.0 * (double)(r1 - r0) * (double)K);
}

void __wrap_rt_gemv_packed_bf16x(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				 const uint32_t *xs, const uint16_t *P, float beta, const float *bias, float *c)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_gemv_packed_bf16x(r0, r1, N, K, alpha, a, xs, P, beta, bias, c);
	leave(timed, t0, 2.0 * (double)(r1 - r0) * (double)K);
}

/* the activations split once per step for several bf16x calls (no FLOPs) */
void __wrap_rt_gemv_split_bf16(int64_t K, const float *a, const uint16_t *P, uint32_t *xs)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_gemv_split_bf16(K, a, P, xs);
	leave(timed, t0, 0.0);
}

void __wrap_rt_gemv_packed_i8(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			      const int8_t *P, float beta, const float *bias, float *c)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_gemv_packed_i8(r0, r1, N, K, alpha, a, P, beta, bias, c);
	leave(timed, t0, 2.0 * (double)(r1 - r0) * (double)K);
}

void __wrap_rt_gemv_packed_i8q(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const uint8_t *qa,
			       float sa, int32_t zp, const int8_t *P, float beta, const float *bias, float *c)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	__real_rt_gemv_packed_i8q(r0, r1, N, K, alpha, qa, sa, zp, P, beta, bias, c);
	leave(timed, t0, 2.0 * (double)(r1 - r0) * (double)K);
}

/* the activations' quantization, once per step for several i8q calls: part
 * of the products' time (no FLOPs of their own) */
float __wrap_rt_gemv_quant_i8(int64_t K, const float *a, uint8_t *qa, int32_t *zp)
{
	double t0 = 0;
	int timed = enter(K, &t0);
	float s = __real_rt_gemv_quant_i8(K, a, qa, zp);
	leave(timed, t0, 0.0);
	return s;
}
