/* rt_blas.c: the matrix products every emitted GEMM, MatMul and recurrent
 * projection goes through (single precision; rt_dgemm for double), and their
 * naive references.
 *
 * rt_sgemm hands the work to OpenBLAS (CBLAS, row-major).  A product with one
 * row (M == 1, batch-1 recurrences) is a matrix-vector product, for which
 * sgemv is markedly faster than sgemm's packing.  rt_sgemm_ref is the plain
 * triple loop the unit tests compare against.  rt_sgemm_portable is the
 * kernel of builds without BLAS (`make BLAS=none`, -DCELLRT_NO_BLAS): plain
 * C11, no allocation, blocked so that the compiler vectorises its inner loops
 * (contiguous rows, independent accumulators) -- several times faster than
 * the reference, far from OpenBLAS on large products.
 *
 * Legend: C[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * C, row-major, with
 * row strides lda, ldb, ldc in elements.  op(A) = A^T when transA: A is then
 * stored as [K,M].  beta == 0 means C is not read (it may hold garbage, such
 * as a fresh workspace slot), as in the reference BLAS.
 */
#include "cellrt.h"
#include "rt_kern.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#if !RT_BARE_METAL
#include <sched.h>
#endif

#ifndef CELLRT_NO_BLAS
#include <cblas.h>
#endif

/* The reference and portable kernels, once per precision (rt_gemm_tmpl.h):
 * rt_sgemm_ref/rt_sgemm_portable and rt_dgemm_ref/rt_dgemm_portable. */
#define GT float
#define GS(name) name##_f32
#define GEMM_REF rt_sgemm_ref
#define GEMM_PORTABLE rt_sgemm_portable
#define GACC double
#include "rt_gemm_tmpl.h"
#define GT double
#define GS(name) name##_f64
#define GEMM_REF rt_dgemm_ref
#define GEMM_PORTABLE rt_dgemm_portable
#define GACC long double
#include "rt_gemm_tmpl.h"

#ifndef CELLRT_NO_BLAS
/* CBLAS takes int sizes; anything larger goes to the reference kernel. */
static int fits_int(int64_t a, int64_t b, int64_t c, int64_t d)
{
	return a <= INT_MAX && b <= INT_MAX && c <= INT_MAX && d <= INT_MAX;
}
#endif

/* Set in the threads of a row-parallel recurrence (rt_par_thread).  A
 * target without an OS runs one thread and has no thread-local storage. */
#if RT_BARE_METAL
static int par_thread;
#else
static _Thread_local int par_thread;
#endif

void rt_par_thread(int on)
{
	par_thread = on != 0;
}

int rt_num_threads(void)
{
#if RT_BARE_METAL
	return 1;       /* no threads, no environment */
#else
	const char *e = getenv("CELLRT_NUM_THREADS");
	if (e && *e) {
		char *end;
		long n = strtol(e, &end, 10);
		if (*end == '\0' && n >= 1 && n <= 256)
			return (int)n;
	}
#ifdef CELLRT_NO_BLAS
	return 1;
#else
	int n = openblas_get_num_threads();
	return n >= 1 ? n : 1;
#endif
#endif
}

int rt_split_columns(int64_t step_weights)
{
	int64_t min = RT_SPLIT_MIN;
#if !RT_BARE_METAL
	const char *e = getenv("CELLRT_SPLIT_MIN");
	if (e && *e) {
		char *end;
		errno = 0;
		long long n = strtoll(e, &end, 10);
		if (*end == '\0' && errno == 0 && n >= 0)
			min = n;
	}
#endif
	return step_weights >= min;
}

enum { BARRIER_SPINS = 4000 };

/* One try of a spinning wait: pause, or after many tries yield the CPU. */
static void spin_once(int spins)
{
	if (spins < BARRIER_SPINS) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		__asm__ __volatile__("yield");
#endif
	} else {
#if !RT_BARE_METAL
		sched_yield();
#endif
	}
}

void rt_barrier_wait(rt_barrier *b, int tid, int n)
{
	if (n <= 1)
		return;
	if (n <= RT_BARRIER_FLAGS && tid >= 0 && tid < n) {
		/* each thread raises its own flag to the round's number, then waits
		 * until every other flag has it (a thread a round ahead has the
		 * next number): one line written per thread, no shared counter */
		unsigned e = __atomic_load_n(&b->flag[tid].v, __ATOMIC_RELAXED) + 1;
		__atomic_store_n(&b->flag[tid].v, e, __ATOMIC_RELEASE);
		for (int j = 0; j < n; j++)
			for (int spins = 0; j != tid && (int)(__atomic_load_n(&b->flag[j].v, __ATOMIC_ACQUIRE) - e) < 0;
			     spins++)
				spin_once(spins);
		return;
	}
	int g = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
	if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == n) {
		/* the last to arrive opens the next round */
		__atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->gen, g + 1, __ATOMIC_RELEASE);
		return;
	}
	for (int spins = 0; __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == g; spins++)
		spin_once(spins);
}

/* Whether rt_kern_gemm should take a product with M > 1 rows: when op(A)
 * fits the second-level cache (it is read once per 64 columns of C, which
 * suits the recurrent step, not large input projections), and, with
 * OpenBLAS, in a team (team: inside a row-parallel recurrence, where
 * OpenBLAS's own threads are not called) or, with AVX-512, when OpenBLAS
 * runs one thread (the kernel has only one).  The AVX2 kernel is within
 * 10% of OpenBLAS's one-thread sgemm on the step's shapes, faster or slower
 * by shape (with its panels packed once or not), so outside a team
 * OpenBLAS keeps them.  own_gemm: team is whether this thread is in one. */
static int own_gemm_in(int isa, int64_t M, int64_t K, int team)
{
	if (M * K > (int64_t)256 * 1024)
		return 0;
#ifdef CELLRT_NO_BLAS
	(void)isa, (void)team;
	return 1;
#else
	return team || (isa == RT_ISA_AVX512 && openblas_get_num_threads() == 1);
#endif
}

static int own_gemm(int isa, int64_t M, int64_t K)
{
	return own_gemm_in(isa, M, K, par_thread);
}

/* The step products of recurrences go to libcellrt's own kernels
 * (rt_kern.c) where this CPU has them: 1 when done. */
static int own_kernels(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		       const float *bias, float *C, int64_t ldc)
{
	int isa = rt_kern_isa();
	if (M == 1 && (!transA || lda == 1))
		return rt_kern_gemv(isa, transB, N, K, alpha, A, B, ldb, beta, bias, C);
	return M > 1 && own_gemm(isa, M, K) &&
	       rt_kern_gemm(isa, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
}

void rt_sgemm_bias(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		   const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		   const float *bias, float *C, int64_t ldc)
{
	if (M <= 0 || N <= 0)
		return;
	if (K > 0 && own_kernels(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc))
		return;
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			C[i * ldc + j] = bias[j];
	rt_sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void rt_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
	      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
	      float *C, int64_t ldc)
{
	if (M <= 0 || N <= 0)
		return;
	if (K <= 0) {
		/* Nothing to multiply: C = beta * C (BLAS wants K >= 1 with lda >= 1). */
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++)
				C[i * ldc + j] = beta == 0 ? 0.0f : beta * C[i * ldc + j];
		return;
	}
	if (own_kernels(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, NULL, C, ldc))
		return;
#ifndef CELLRT_NO_BLAS
	if (par_thread) {
		/* no SIMD kernel on this CPU: not OpenBLAS's threads from inside a team */
		rt_sgemm_portable(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
#endif
#ifdef CELLRT_NO_BLAS
	rt_sgemm_portable(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
	if (!fits_int(M, N, K, lda) || !fits_int(ldb, ldc, 0, 0)) {
		rt_sgemm_ref(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	if (M == 1) {
		/* c[N] = alpha * op(B)^T a + beta * c; a is row 0 of op(A), whose
		 * elements are lda apart when A is stored transposed ([K,1]). */
		int incx = transA ? (int)lda : 1;
		if (beta == 0)  /* sgemv scales y by beta: garbage * 0 may be NaN */
			for (int64_t j = 0; j < N; j++)
				C[j] = 0.0f;
		if (transB)     /* B stored [N,K]: c = B a */
			cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, alpha, B, (int)ldb,
				    A, incx, beta, C, 1);
		else            /* B stored [K,N]: c = B^T a */
			cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, alpha, B, (int)ldb,
				    A, incx, beta, C, 1);
		return;
	}
	if (N == 1) {
		/* c[M] (ldc apart) = alpha * op(A) b + beta * c, b the one column of
		 * op(B): a GEMV streams A once, where sgemm would first pack all of
		 * it (a training step's weight and input gradients of a one-feature
		 * input: A is [T*B, 4H]). */
		int incx = transB ? 1 : (int)ldb;
		if (beta == 0)
			for (int64_t i = 0; i < M; i++)
				C[i * ldc] = 0.0f;
		if (transA)     /* A stored [K,M]: c = A^T b */
			cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)M, alpha, A, (int)lda,
				    B, incx, beta, C, (int)ldc);
		else            /* A stored [M,K]: c = A b */
			cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)M, (int)K, alpha, A, (int)lda,
				    B, incx, beta, C, (int)ldc);
		return;
	}
	cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
		    transB ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha,
		    A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
#endif
}

/* ---- double precision: OpenBLAS's dgemm and dgemv (no own kernels) ---- */

void rt_dgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
	      const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
	      double *C, int64_t ldc)
{
	if (M <= 0 || N <= 0)
		return;
	if (K <= 0) {
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++)
				C[i * ldc + j] = beta == 0 ? 0.0 : beta * C[i * ldc + j];
		return;
	}
#ifdef CELLRT_NO_BLAS
	rt_dgemm_portable(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
	if (par_thread) {
		rt_dgemm_portable(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	if (!fits_int(M, N, K, lda) || !fits_int(ldb, ldc, 0, 0)) {
		rt_dgemm_ref(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	if (M == 1 || N == 1) {
		/* a matrix-vector product, as in rt_sgemm: one row of op(A) times
		 * op(B) (c[N] contiguous) or op(A) times one column of op(B) (c[M]
		 * ldc apart); y is cleared first where beta is 0 */
		int row = M == 1;
		int64_t len = row ? N : M, inc = row ? 1 : ldc;
		if (beta == 0)
			for (int64_t j = 0; j < len; j++)
				C[j * inc] = 0.0;
		if (row)
			cblas_dgemv(CblasRowMajor, transB ? CblasNoTrans : CblasTrans, transB ? (int)N : (int)K,
				    transB ? (int)K : (int)N, alpha, B, (int)ldb, A, transA ? (int)lda : 1, beta, C, 1);
		else
			cblas_dgemv(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transA ? (int)K : (int)M,
				    transA ? (int)M : (int)K, alpha, A, (int)lda, B, transB ? 1 : (int)ldb, beta, C,
				    (int)ldc);
		return;
	}
	cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
		    transB ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha,
		    A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
#endif
}

void rt_dgemm_bias(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
		   const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
		   const double *bias, double *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			C[i * ldc + j] = bias[j];
	rt_dgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- step products on weights packed once per run ---- */

/* rt_gemm_pack packs where the own kernel will take the steps' products
 * (own_gemm_in): their rows are split over rt_num_threads() threads, in a
 * team when there are several. */
int rt_gemm_pack(int64_t M, int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float **P,
		 size_t *cap)
{
	int isa = rt_kern_isa();
	int64_t nt = rt_num_threads() < M ? rt_num_threads() : M;
	if (isa == RT_ISA_NONE || M <= 1 || N <= 0 || !own_gemm_in(isa, (M + nt - 1) / nt, K, nt > 1) ||
	    !rt_kern_gemm_packs(isa, (M + nt - 1) / nt, K))
		return 0;
	size_t need = (size_t)rt_kern_panels_size(N, K) * sizeof(float);
	if (*cap < need) {
		free(*P);
		*cap = 0;
		*P = aligned_alloc(64, (need + 63) / 64 * 64);
		if (!*P)
			return -1;
		*cap = need;
	}
	return rt_kern_pack_panels(isa, transB, N, K, B, ldb, *P);
}

void rt_sgemm_packed(int transA, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
		     const float *P, int transB, const float *B, int64_t ldb, float beta, const float *bias,
		     float *C, int64_t ldc)
{
	int isa = rt_kern_isa();
	if (P && M > 1 && N > 0 && isa != RT_ISA_NONE && own_gemm(isa, M, K) &&
	    rt_kern_gemm_panels(isa, transA, M, N, K, alpha, A, lda, P, beta, bias, C, ldc))
		return;
	if (bias)
		rt_sgemm_bias(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
	else
		rt_sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* ---- batch-1 products on packed weights ---- */

void rt_gemv_pack(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float *P)
{
	for (int64_t n0 = 0; n0 < N; n0 += RT_PACK_W) {
		int64_t w = N - n0 < RT_PACK_W ? N - n0 : RT_PACK_W;
		float *q = P + n0 * K;
		for (int64_t j = 0; j < w; j++)
			for (int64_t k = 0; k < K; k++)
				q[k * w + j] = transB ? B[(n0 + j) * ldb + k] : B[k * ldb + n0 + j];
	}
}

void rt_gemv_packed(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
		    const float *P, float beta, const float *bias, float *c)
{
	if (r1 > r0 && !rt_kern_gemv_packed(rt_kern_isa(), r0, r1, N, K, alpha, a, P, beta, bias, c))
		rt_gemv_packed_portable(r0, r1, N, K, alpha, a, P, beta, bias, c);
}

size_t rt_gemv_pack_bf16_size(int64_t N, int64_t K)
{
	if (N <= 0)
		return RT_BF16_HEAD;
	/* the larger of the two layouts: K rounded up to even */
	int64_t w, wp, off, Kp = (K + 1) / 2 * 2;
	rt_bf16_block(RT_BF16_PAIRS, N, K, (N - 1) / RT_PACK_W * RT_PACK_W, &w, &wp, &off);
	return (size_t)(off + Kp * wp);
}

void rt_gemv_pack_bf16_layout(int layout, int transB, int64_t N, int64_t K, const float *B, int64_t ldb,
			      uint16_t *P)
{
	memset(P, 0, sizeof *P * RT_BF16_HEAD);
	P[0] = (uint16_t)layout;
	int64_t Kp = layout == RT_BF16_PAIRS ? (K + 1) / 2 * 2 : K;
	for (int64_t n0 = 0; n0 < N; n0 += RT_PACK_W) {
		int64_t w, wp, off;
		rt_bf16_block(layout, N, K, n0, &w, &wp, &off);
		uint16_t *q = P + off;
		for (int64_t k = 0; k < Kp; k++)
			for (int64_t j = 0; j < wp; j++)
				q[rt_bf16_index(layout, wp, k, j)] = j < w && k < K ? rt_f32_to_bf16_nearest(
					transB ? B[(n0 + j) * ldb + k] : B[k * ldb + n0 + j]) : 0;
	}
}

void rt_gemv_pack_bf16(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, uint16_t *P)
{
	rt_gemv_pack_bf16_layout(rt_kern_bf16_layout(K), transB, N, K, B, ldb, P);
}

void rt_gemv_packed_bf16(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			 const uint16_t *P, float beta, const float *bias, float *c)
{
	/* a PAIRS copy is made only where the CPU has AVX512-BF16 or Arm's BF16 (asked again:
	 * never run its instructions elsewhere) */
	int isa = P[0] == RT_BF16_PAIRS && rt_kern_bf16_layout(K) == RT_BF16_PAIRS ? rt_kern_isa_bf16() : rt_kern_isa();
	if (r1 > r0 && !rt_kern_gemv_packed_bf16(isa, r0, r1, N, K, alpha, a, P, beta, bias, c))
		rt_gemv_packed_bf16_portable(r0, r1, N, K, alpha, a, P, beta, bias, c);
}

void rt_gemv_split_bf16(int64_t K, const float *a, const uint16_t *P, uint32_t *xs)
{
	if (P[0] == RT_BF16_PAIRS && K <= RT_BF16_SPLIT_KMAX)
		rt_kern_split_bf16(K, a, xs);
}

void rt_gemv_packed_bf16x(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			  const uint32_t *xs, const uint16_t *P, float beta, const float *bias, float *c)
{
	/* rt_gemv_split_bf16 split a where this holds (the same question) */
	if (r1 > r0 && !(P[0] == RT_BF16_PAIRS && K <= RT_BF16_SPLIT_KMAX &&
			 rt_kern_gemv_pairs(r0, r1, N, K, alpha, xs, P, beta, bias, c)))
		rt_gemv_packed_bf16(r0, r1, N, K, alpha, a, P, beta, bias, c);
}

void rt_gemv_packed_bf16_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				  const uint16_t *P, float beta, const float *bias, float *c)
{
	float t[RT_PACK_W];
	int layout = P[0];
	for (int64_t r = r0; r < r1;) {
		int64_t n0 = r / RT_PACK_W * RT_PACK_W, w, wp, off;
		rt_bf16_block(layout, N, K, n0, &w, &wp, &off);
		int64_t e = n0 + w < r1 ? n0 + w : r1, n = e - r, o = r - r0;
		const uint16_t *p = P + off;
		for (int64_t j = 0; j < n; j++)
			t[j] = 0.0f;
		for (int64_t k = 0; k < K; k++)
			for (int64_t j = 0; j < n; j++)
				t[j] += a[k] * rt_bf16_to_f32(p[rt_bf16_index(layout, wp, k, r - n0 + j)]);
		for (int64_t j = 0; j < n; j++)
			c[o + j] = alpha * t[j] + (bias ? beta * bias[o + j] : beta != 0.0f ? beta * c[o + j] : 0.0f);
		r = e;
	}
}

size_t rt_gemv_pack_i8_size(int64_t N, int64_t K)
{
	if (N <= 0)
		return 64;
	int64_t w, wp, off;
	rt_i8_block(N, K, (N - 1) / RT_PACK_W * RT_PACK_W, &w, &wp, &off);
	return (size_t)(off + (K + 3) / 4 * 4 * wp);
}

void rt_gemv_pack_i8(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, int8_t *P)
{
	float *scale = (float *)(void *)P;
	int32_t *sum = (int32_t *)(void *)(P + 4 * N);
	for (int64_t n0 = 0; n0 < N; n0 += RT_PACK_W) {
		int64_t w, wp, off;
		rt_i8_block(N, K, n0, &w, &wp, &off);
		int8_t *q = P + off;
		memset(q, 0, (size_t)((K + 3) / 4 * 4 * wp));
		for (int64_t j = 0; j < w; j++) {
			const float *row = transB ? B + (n0 + j) * ldb : B + n0 + j;
			int64_t inc = transB ? 1 : ldb;
			float s = rt_scale_i8(K, row, inc);
			int32_t t = 0;
			for (int64_t k = 0; k < K; k++) {
				int8_t v = rt_quant_i8(row[k * inc], s);
				q[rt_i8_index(wp, k, j)] = v;
				t += v;
			}
			scale[n0 + j] = s;
			sum[n0 + j] = t;
		}
	}
}

/* alpha v + beta (bias[i] or c[i]); c not read when beta is 0 (the
 * epilogue of the int8 kernel, rt_kern.c, computes the same). */
static float i8_out(float alpha, float v, float beta, const float *bias, const float *c, int64_t i)
{
	return alpha * v + (bias ? beta * bias[i] : beta != 0.0f ? beta * c[i] : 0.0f);
}

/* Rows r0..r1 on the int8 copy in plain C: from qa (sa, zp) when K <=
 * RT_I8_KMAX, else in float32 from a on the dequantized weights. */
static void i8_rows_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			     const uint8_t *qa, float sa, int32_t zp, const int8_t *P, float beta, const float *bias,
			     float *c)
{
	const float *scale = (const float *)(const void *)P;
	const int32_t *sum = (const int32_t *)(const void *)(P + 4 * N);
	int32_t t[RT_PACK_W];
	float f[RT_PACK_W];
	for (int64_t r = r0; r < r1;) {
		int64_t n0 = r / RT_PACK_W * RT_PACK_W, w, wp, off;
		rt_i8_block(N, K, n0, &w, &wp, &off);
		int64_t e = n0 + w < r1 ? n0 + w : r1, n = e - r, o = r - r0;
		const int8_t *p = P + off;
		for (int64_t j = 0; j < n; j++) {
			t[j] = 0;
			f[j] = 0.0f;
		}
		for (int64_t k = 0; k < K; k++)
			for (int64_t j = 0; j < n; j++) {
				int8_t v = p[rt_i8_index(wp, k, r - n0 + j)];
				if (K <= RT_I8_KMAX)
					t[j] += (int32_t)qa[k] * v;
				else
					f[j] += a[k] * (float)v;
			}
		for (int64_t j = 0; j < n; j++) {
			float v = K <= RT_I8_KMAX ? sa * scale[r + j] * (float)(t[j] - zp * sum[r + j]) : scale[r + j] * f[j];
			c[o + j] = i8_out(alpha, v, beta, bias, c, o + j);
		}
		r = e;
	}
}

float rt_gemv_quant_i8(int64_t K, const float *a, uint8_t *qa, int32_t *zp)
{
	float sa;
	if (!rt_kern_quant_act_u7(rt_kern_isa_i8(), K, a, qa, zp, &sa))
		sa = rt_quant_act_u7(K, a, qa, zp);
	for (int64_t k = K; k % 4; k++)
		qa[k] = 0;
	return sa;
}

void rt_gemv_packed_i8q(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const uint8_t *qa, float sa,
			int32_t zp, const int8_t *P, float beta, const float *bias, float *c)
{
	if (r1 > r0 && !rt_kern_gemv_packed_i8(rt_kern_isa_i8(), r0, r1, N, K, alpha, qa, sa, zp, P, beta, bias, c))
		i8_rows_portable(r0, r1, N, K, alpha, NULL, qa, sa, zp, P, beta, bias, c);
}

/* One call of rt_gemv_packed_i8 (or of its portable form), whose activations
 * are quantized into a buffer on the stack: I8_QA_SMALL bytes where K fits
 * them (every step of a small model: a microcontroller's stack), else
 * RT_I8_KMAX; each size in a function of its own, so that a call takes
 * only the stack its K needs. */
enum { I8_QA_SMALL = 1024 };
typedef struct i8_call {
	int64_t r0, r1, N, K;   /* the rows made, of N; K columns (<= RT_I8_KMAX) */
	float alpha, beta;
	const float *a;         /* [K] the activations */
	const int8_t *P;        /* rt_gemv_pack_i8's copy */
	const float *bias;      /* [r1 - r0] or NULL */
	float *c;               /* [r1 - r0] */
	int portable;           /* the plain-C loops, not the kernels */
} i8_call;

static void i8_call_in(const i8_call *x, uint8_t *qa)
{
	int32_t zp = 0;
	if (x->portable) {
		float sa = rt_quant_act_u7(x->K, x->a, qa, &zp);
		i8_rows_portable(x->r0, x->r1, x->N, x->K, x->alpha, x->a, qa, sa, zp, x->P, x->beta, x->bias, x->c);
	} else {
		float sa = rt_gemv_quant_i8(x->K, x->a, qa, &zp);
		rt_gemv_packed_i8q(x->r0, x->r1, x->N, x->K, x->alpha, qa, sa, zp, x->P, x->beta, x->bias, x->c);
	}
}

__attribute__((noinline)) static void i8_call_small(const i8_call *x)
{
	uint8_t qa[I8_QA_SMALL];
	i8_call_in(x, qa);
}

__attribute__((noinline)) static void i8_call_large(const i8_call *x)
{
	uint8_t qa[RT_I8_KMAX];
	i8_call_in(x, qa);
}

static void i8_call_run(int portable, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			const int8_t *P, float beta, const float *bias, float *c)
{
	if (r1 <= r0)
		return;
	if (K > RT_I8_KMAX) {   /* weights-only, in float32: no quantized activations */
		i8_rows_portable(r0, r1, N, K, alpha, a, NULL, 1.0f, 0, P, beta, bias, c);
		return;
	}
	i8_call x = {r0, r1, N, K, alpha, beta, a, P, bias, c, portable};
	if (K <= I8_QA_SMALL)
		i8_call_small(&x);
	else
		i8_call_large(&x);
}

void rt_gemv_packed_i8(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
		       const int8_t *P, float beta, const float *bias, float *c)
{
	i8_call_run(0, r0, r1, N, K, alpha, a, P, beta, bias, c);
}

void rt_gemv_packed_i8_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
				const int8_t *P, float beta, const float *bias, float *c)
{
	i8_call_run(1, r0, r1, N, K, alpha, a, P, beta, bias, c);
}

void rt_gemm_packed_i8(int64_t M, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *A,
		       int64_t lda, const int8_t *P, float beta, const float *bias, float *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++)
		rt_gemv_packed_i8(r0, r1, N, K, alpha, A + i * lda, P, beta, bias, C + i * ldc);
}

/* A block's columns as sums of its scaled rows (the inner loop vectorises). */
void rt_gemv_packed_portable(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			     const float *P, float beta, const float *bias, float *c)
{
	float t[RT_PACK_W];
	for (int64_t r = r0; r < r1;) {
		int64_t n0 = r / RT_PACK_W * RT_PACK_W, w = N - n0 < RT_PACK_W ? N - n0 : RT_PACK_W;
		int64_t e = n0 + w < r1 ? n0 + w : r1, n = e - r, o = r - r0;
		const float *p = P + n0 * K + (r - n0);
		for (int64_t j = 0; j < n; j++)
			t[j] = 0.0f;
		for (int64_t k = 0; k < K; k++)
			for (int64_t j = 0; j < n; j++)
				t[j] += a[k] * p[k * w + j];
		for (int64_t j = 0; j < n; j++)
			c[o + j] = alpha * t[j] + (bias ? beta * bias[o + j] : beta != 0.0f ? beta * c[o + j] : 0.0f);
		r = e;
	}
}
