/* rt_kern.c: the SIMD kernels of rt_kern.h: AVX-512 and AVX2 on x86-64,
 * NEON (Advanced SIMD, with the dot-product and BF16 extensions where the
 * CPU has them: rt_kern_neon.h) on aarch64, chosen at run time; on Arm's M
 * profile the FPU's and the DSP extension's (rt_kern_m.h), chosen when
 * compiled for a core that has them; WebAssembly's SIMD128 (rt_kern_wasm.h)
 * in a wasm32 build with -msimd128; elsewhere every entry point answers 0
 * and rt_sgemm uses BLAS or its portable kernel.
 *
 * Each x86 kernel is compiled for its instruction set with a target
 * attribute, so libcellrt itself needs no -march flag; on aarch64 NEON is
 * the baseline and only the extensions' kernels carry one; a WebAssembly
 * module has SIMD128 throughout or not at all.  NEON and SIMD128, both four
 * floats a vector, share their kernels (rt_kern_v128.h), and the drivers
 * around the kernels (blocking, packing, epilogues) are written once for
 * all of them.  Legend: see rt_kern.h; a, c vectors of the GEMV; acc accumulators;
 * MR x NR the register block of the GEMM micro-kernel, KC the depth of one
 * packed panel.
 */
#include "cellrt.h"
#include "rt_kern.h"

#include <stddef.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define RT_KERN_X86 1
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON) && defined(__GNUC__)
#define RT_KERN_NEON 1
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif
/* GCC compiles the extensions' kernels alone for their architecture (a
 * target attribute: rt_kern_neon.h), so the rest of libcellrt stays
 * Armv8.0; clang's arm_neon.h declares their intrinsics only where the
 * whole build targets the extension (-march=armv8.2-a+dotprod, ...), so
 * there they exist only then (RT_NEON_DOT, RT_NEON_BFDOT), and a CPU's
 * extension without its kernel is never chosen. */
#ifndef __clang__
#define TNEON_DOT __attribute__((target("arch=armv8.2-a+dotprod")))
#define TNEON_BF16 __attribute__((target("arch=armv8.2-a+bf16")))
#define RT_NEON_DOT 1
#define RT_NEON_BFDOT 1
#else
#define TNEON_DOT
#define TNEON_BF16
#ifdef __ARM_FEATURE_DOTPROD
#define RT_NEON_DOT 1
#endif
#ifdef __ARM_FEATURE_BF16_VECTOR_ARITHMETIC
#define RT_NEON_BFDOT 1
#endif
#endif
#elif defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__GNUC__)
/* a microcontroller: single-precision FPU with fused multiply-add
 * (RT_KERN_MFP), DSP extension (RT_KERN_DSP), as the build's -mcpu/-mfpu say */
#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__ARM_FEATURE_FMA)
#define RT_KERN_MFP 1
#endif
#ifdef __ARM_FEATURE_DSP
#define RT_KERN_DSP 1
#include <arm_acle.h>
#endif
#elif defined(__wasm__) && defined(__wasm_simd128__)
#define RT_KERN_WASM 1
#include <wasm_simd128.h>
#endif
/* RT_KERN_V128: the kernels of four floats a vector (rt_kern_v128.h), on
 * NEON's or SIMD128's primitives; V128_ISA is the one built */
#if defined(RT_KERN_NEON)
#define RT_KERN_V128 1
#define V128_ISA RT_ISA_NEON
#elif defined(RT_KERN_WASM)
#define RT_KERN_V128 1
#define V128_ISA RT_ISA_SIMD128
#endif
/* RT_KERN_SIMD: the GEMM's drivers; RT_KERN_ROWS: the packed GEMVs' */
#if defined(RT_KERN_X86) || defined(RT_KERN_V128)
#define RT_KERN_SIMD 1
#endif
#if defined(RT_KERN_SIMD) || defined(RT_KERN_MFP) || defined(RT_KERN_DSP)
#define RT_KERN_ROWS 1
#endif

#if defined(RT_NEON_DOT) || defined(RT_NEON_BFDOT)
/* Whether this aarch64 CPU has the dot-product instructions (bf16 0) or
 * the BF16 ones (bf16 1): the kernel's hardware capabilities (Linux), else
 * what the compiler was told the target has. */
static int neon_has(int bf16)
{
#if defined(__linux__) && defined(HWCAP_ASIMDDP) && defined(HWCAP2_BF16)
	return bf16 ? (getauxval(AT_HWCAP2) & HWCAP2_BF16) != 0 : (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) && defined(__ARM_FEATURE_DOTPROD)
	return 1;
#elif defined(__ARM_FEATURE_DOTPROD)
	return !bf16;
#else
	return 0;
#endif
}
#endif

int rt_kern_isa(void)
{
#ifdef RT_KERN_X86
	__builtin_cpu_init();
	/* libgcc checks that the OS saves the registers (XCR0) as well */
	if (__builtin_cpu_supports("avx512f"))
		return RT_ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return RT_ISA_AVX2;
#elif defined(RT_KERN_NEON)
	return RT_ISA_NEON;
#elif defined(RT_KERN_MFP)
	return RT_ISA_MFP;
#elif defined(RT_KERN_WASM)
	return RT_ISA_SIMD128;
#endif
	return RT_ISA_NONE;
}

int rt_kern_isa_i8(void)
{
#ifdef RT_KERN_X86
	__builtin_cpu_init();
	if (rt_kern_isa() == RT_ISA_AVX512 && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"))
		return RT_ISA_VNNI;
#elif defined(RT_KERN_NEON)
#ifdef RT_NEON_DOT
	if (neon_has(0))
		return RT_ISA_DOTPROD;
#endif
#elif defined(RT_KERN_DSP)
	return RT_ISA_DSP;
#endif
	return rt_kern_isa();
}

int rt_kern_isa_bf16(void)
{
	/* asked once (every step's products ask again: threads that race here
	 * store the same value) */
	static volatile int isa = -1;
	if (isa < 0) {
#ifdef RT_KERN_X86
		__builtin_cpu_init();
		isa = rt_kern_isa() == RT_ISA_AVX512 && __builtin_cpu_supports("avx512vl") &&
		      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16") ? RT_ISA_BF16
											 : RT_ISA_NONE;
#elif defined(RT_KERN_NEON)
#ifdef RT_NEON_BFDOT
		isa = neon_has(1) ? RT_ISA_BFDOT : RT_ISA_NONE;
#else
		isa = RT_ISA_NONE;
#endif
#else
		isa = RT_ISA_NONE;
#endif
	}
	return isa;
}

int rt_kern_has(int isa)
{
	switch (isa) {
	case RT_ISA_NONE: return 1;
	case RT_ISA_AVX2: return rt_kern_isa() == RT_ISA_AVX2 || rt_kern_isa() == RT_ISA_AVX512;
	case RT_ISA_AVX512: return rt_kern_isa() == RT_ISA_AVX512;
	case RT_ISA_VNNI: return rt_kern_isa_i8() == RT_ISA_VNNI;
	case RT_ISA_NEON: return rt_kern_isa() == RT_ISA_NEON;
	case RT_ISA_DOTPROD: case RT_ISA_DSP: return rt_kern_isa_i8() == isa;
	case RT_ISA_MFP: return rt_kern_isa() == RT_ISA_MFP;
	case RT_ISA_SIMD128: return rt_kern_isa() == RT_ISA_SIMD128;
	case RT_ISA_BF16: case RT_ISA_BFDOT: return rt_kern_isa_bf16() == isa;
	default: return 0;
	}
}

#ifdef RT_KERN_ROWS
/* (the kernels' shared helpers; a build without kernels has none) */

/* r = alpha s + beta (bias, or r itself; beta == 0 without bias: r not
 * read): the epilogue of one result. */
static inline float put1(float r, const float *bias, float s, float alpha, float beta)
{
	if (bias)
		return alpha * s + beta * *bias;
	return beta == 0.0f ? alpha * s : alpha * s + beta * r;
}

/* rt_quant_act_u7's scale and zero point from the range [mn, mx] of the
 * activations (with 0 in it); inv = 1 / scale and z the zero point as a
 * float, which the quantizing loops use. */
static inline void u7_params(float mn, float mx, float *inv, float *z, int32_t *zp, float *scale)
{
	float s = (mx - mn) / 127.0f;
	if (!(s > 0.0f))
		s = 1.0f;
	*inv = 1.0f / s;
	*z = nearbyintf(-mn * *inv);
	*z = *z < 0.0f ? 0.0f : *z > 127.0f ? 127.0f : *z;
	*zp = (int32_t)*z;
	*scale = s;
}

/* The range of a[k0..K) joined to [*mn, *mx], and whether a (nb: the sum
 * of the vectorised part's a[k] * 0, NaN where one is NaN or infinite) is
 * finite: the scan's scalar tail; 0 when not (rt_quant_act_u7 returns NaN,
 * the kernels leave it to it). */
static inline int u7_range_tail(int64_t k0, int64_t K, const float *a, float *mn, float *mx, float nb)
{
	for (int64_t t = k0; t < K; t++) {
		*mn = a[t] < *mn ? a[t] : *mn;
		*mx = a[t] > *mx ? a[t] : *mx;
		nb += a[t] * 0.0f;
	}
	return nb == 0.0f;
}

/* t[r] = sum of b[r * ldb + k] a[k] for k in [k0, K), r < rows: the
 * columns of rows of B [N,K] left after the vector loop (the GEMVs) */
static inline void rows_tail(int rows, const float *b, int64_t ldb, const float *a, int64_t k0, int64_t K, float *t)
{
	for (int r = 0; r < rows; r++) {
		t[r] = 0.0f;
		for (int64_t k = k0; k < K; k++)
			t[r] += b[r * ldb + k] * a[k];
	}
}

/* q[k] for k in [k0, K): the quantizing loop's scalar tail */
static inline void u7_tail(int64_t k0, int64_t K, const float *a, float inv, float z, uint8_t *q)
{
	for (int64_t k = k0; k < K; k++) {
		float v = nearbyintf(a[k] * inv) + z;
		q[k] = (uint8_t)(v < 0.0f ? 0.0f : v > 127.0f ? 127.0f : v);
	}
}

#endif

/* The GEMM's blocking (both architectures' micro-kernels make MR x NR
 * blocks of C from panels of op(B) KC deep and NR wide) */
enum { MR = RT_PANEL_MR, NR = RT_PANEL_NR, KC = 128, MB = 192 };

/* hi[k] + lo[k] = a[k] for k in [k0, K): each part rounded to bfloat16 (to
 * nearest even); the pad of an odd K is 0 (rt_kern_split_bf16) */
static inline void split_bf16_tail(int64_t k0, int64_t K, const float *a, uint16_t *hi, uint16_t *lo)
{
	for (int64_t k = k0; k < K; k++) {
		hi[k] = rt_f32_to_bf16_nearest(a[k]);
		lo[k] = rt_f32_to_bf16_nearest(a[k] - rt_bf16_to_f32(hi[k]));
	}
	if (K % 2)
		hi[K] = lo[K] = 0;
}

/* Every width of chunk of a chunk kernel (1 to 8 groups of rows: CASES8;
 * 1 to 4: CASES4), as one function for the drivers below: NAME calls
 * KERNEL with NG a constant; x: the activations, XT their element type. */
typedef void i8_chunk_fn(int ng, int64_t Kq, const void *x, const int8_t *p, int64_t wp, int32_t *sum);
typedef void bf16_chunk_fn(int ng, int64_t K, const void *x, const uint16_t *p, int64_t wp, float *sum);
#define NG_CASE(N, KERNEL) case N: KERNEL(N, K, x_, p, wp, sum); break;
#define CASES4(KERNEL) NG_CASE(1, KERNEL) NG_CASE(2, KERNEL) NG_CASE(3, KERNEL) default: KERNEL(4, K, x_, p, wp, sum);
#define CASES8(KERNEL) NG_CASE(1, KERNEL) NG_CASE(2, KERNEL) NG_CASE(3, KERNEL) NG_CASE(4, KERNEL) \
	NG_CASE(5, KERNEL) NG_CASE(6, KERNEL) NG_CASE(7, KERNEL) default: KERNEL(8, K, x_, p, wp, sum);
#define CHUNKS(TARGET, NAME, KERNEL, XT, PT, ST, CASES)                                          \
	TARGET static void NAME(int ng, int64_t K, const void *x, const PT *p, int64_t wp, ST *sum) \
	{                                                                                        \
		const XT *x_ = x;                                                                \
		switch (ng) { CASES(KERNEL) }                                                    \
	}

#ifdef RT_KERN_X86
/* the drivers shared with NEON take the AVX2 code's target on x86 */
#define RT_DRIVER __attribute__((target("avx2,fma")))
#else
#define RT_DRIVER
#endif

#ifdef RT_KERN_X86

#define T512 __attribute__((target("avx512f,avx2,fma")))
#define T256 __attribute__((target("avx2,fma")))
#define T512V __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni,avx2,fma")))
#define T512B __attribute__((target("avx512f,avx512vl,avx512bw,avx512bf16,avx2,fma")))

/* r[i] = alpha * s[i] + beta * r[i] for 8 results (beta == 0: r not read),
 * or + beta * bias[i] when bias is set (r not read). */
T256 static void put8(float *r, const float *bias, __m256 s, float alpha, float beta)
{
	__m256 y = _mm256_mul_ps(s, _mm256_set1_ps(alpha));
	if (bias)
		y = _mm256_fmadd_ps(_mm256_loadu_ps(bias), _mm256_set1_ps(beta), y);
	else if (beta != 0.0f)
		y = _mm256_fmadd_ps(_mm256_loadu_ps(r), _mm256_set1_ps(beta), y);
	_mm256_storeu_ps(r, y);
}

/* The eight sums of h[0..8) (8 lanes each) as one vector. */
T256 static __m256 hsum8(const __m256 *h)
{
	__m256 t0 = _mm256_hadd_ps(h[0], h[1]), t1 = _mm256_hadd_ps(h[2], h[3]);
	__m256 t2 = _mm256_hadd_ps(h[4], h[5]), t3 = _mm256_hadd_ps(h[6], h[7]);
	__m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
	return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* ---- GEMV, B stored [N,K]: eight dot products of rows of B with a at once ---- */

/* K < 16 (a short input projection): sixteen rows at a time, their k-th
 * elements gathered, so that no lane of a 16-wide load is wasted. */
T512 static void gemv_t_short_512(int64_t N, int64_t K, float alpha, const float *a, const float *B,
				  int64_t ldb, float beta, const float *bias, float *c)
{
	const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
								 2, 1, 0),
					       _mm512_set1_epi32((int)ldb));
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
	for (int64_t n = 0; n < N; n += 16) {
		__mmask16 m = N - n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (N - n)) - 1u);
		__m512 acc = _mm512_setzero_ps();
		if (K == 1 && ldb == 1)       /* one input feature, its column contiguous: no gather */
			acc = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, B + n), _mm512_set1_ps(a[0]));
		else
			for (int64_t k = 0; k < K; k++) {
				__m512 b = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, B + n * ldb + k, 4);
				acc = _mm512_fmadd_ps(b, _mm512_set1_ps(a[k]), acc);
			}
		__m512 y = _mm512_mul_ps(acc, va);
		if (bias)
			y = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, bias + n), vb, y);
		else if (beta != 0.0f)
			y = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c + n), vb, y);
		_mm512_mask_storeu_ps(c + n, m, y);
	}
}

T512 static void gemv_t_512(int64_t N, int64_t K, float alpha, const float *a, const float *B,
			    int64_t ldb, float beta, const float *bias, float *c)
{
	if (K < 16 && ldb <= (1 << 26)) {       /* 15 * ldb fits the 32-bit gather index */
		gemv_t_short_512(N, K, alpha, a, B, ldb, beta, bias, c);
		return;
	}
	const int64_t kv = K & ~(int64_t)15;
	const __mmask16 tail = (__mmask16)((1u << (K & 15)) - 1u);
	int64_t n = 0;
	for (; n + 8 <= N; n += 8) {
		const float *b = B + n * ldb;
		__m512 acc[8];
		for (int r = 0; r < 8; r++)
			acc[r] = _mm512_setzero_ps();
		for (int64_t k = 0; k < kv; k += 16) {
			__m512 x = _mm512_loadu_ps(a + k);
			for (int r = 0; r < 8; r++)
				acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(b + r * ldb + k), x, acc[r]);
		}
		if (tail) {
			__m512 x = _mm512_maskz_loadu_ps(tail, a + kv);
			for (int r = 0; r < 8; r++)
				acc[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, b + r * ldb + kv), x, acc[r]);
		}
		__m256 h[8];
		for (int r = 0; r < 8; r++)
			h[r] = _mm256_add_ps(_mm512_castps512_ps256(acc[r]),
					     _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r]), 1)));
		put8(c + n, bias ? bias + n : NULL, hsum8(h), alpha, beta);
	}
	for (; n < N; n++) {
		const float *b = B + n * ldb;
		__m512 acc = _mm512_setzero_ps();
		for (int64_t k = 0; k < kv; k += 16)
			acc = _mm512_fmadd_ps(_mm512_loadu_ps(b + k), _mm512_loadu_ps(a + k), acc);
		if (tail)
			acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, b + kv), _mm512_maskz_loadu_ps(tail, a + kv),
					      acc);
		c[n] = put1(c[n], bias ? bias + n : NULL, _mm512_reduce_add_ps(acc), alpha, beta);
	}
}

T256 static void gemv_t_256(int64_t N, int64_t K, float alpha, const float *a, const float *B,
			    int64_t ldb, float beta, const float *bias, float *c)
{
	const int64_t kv = K & ~(int64_t)7;
	int64_t n = 0;
	for (; n + 8 <= N; n += 8) {
		const float *b = B + n * ldb;
		__m256 acc[8];
		for (int r = 0; r < 8; r++)
			acc[r] = _mm256_setzero_ps();
		for (int64_t k = 0; k < kv; k += 8) {
			__m256 x = _mm256_loadu_ps(a + k);
			for (int r = 0; r < 8; r++)
				acc[r] = _mm256_fmadd_ps(_mm256_loadu_ps(b + r * ldb + k), x, acc[r]);
		}
		__m256 s = hsum8(acc);
		if (kv < K) {
			float t[8];
			rows_tail(8, b, ldb, a, kv, K, t);
			s = _mm256_add_ps(s, _mm256_loadu_ps(t));
		}
		put8(c + n, bias ? bias + n : NULL, s, alpha, beta);
	}
	for (; n < N; n++) {
		const float *b = B + n * ldb;
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s += b[k] * a[k];
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- GEMV, B stored [K,N]: c = sum_k a[k] B[k,:], 128 (AVX2: 64) columns at once ---- */

T512 static void gemv_n_512(int64_t N, int64_t K, float alpha, const float *a, const float *B,
			    int64_t ldb, float beta, const float *bias, float *c)
{
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
	int64_t n = 0;
	for (; n + 128 <= N; n += 128) {
		__m512 acc[8];
		for (int v = 0; v < 8; v++)
			acc[v] = _mm512_setzero_ps();
		for (int64_t k = 0; k < K; k++) {
			__m512 x = _mm512_set1_ps(a[k]);
			const float *b = B + k * ldb + n;
			for (int v = 0; v < 8; v++)
				acc[v] = _mm512_fmadd_ps(_mm512_loadu_ps(b + 16 * v), x, acc[v]);
		}
		for (int v = 0; v < 8; v++) {
			__m512 y = _mm512_mul_ps(acc[v], va);
			if (bias)
				y = _mm512_fmadd_ps(_mm512_loadu_ps(bias + n + 16 * v), vb, y);
			else if (beta != 0.0f)
				y = _mm512_fmadd_ps(_mm512_loadu_ps(c + n + 16 * v), vb, y);
			_mm512_storeu_ps(c + n + 16 * v, y);
		}
	}
	for (; n < N; n += 16) {
		__mmask16 m = N - n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (N - n)) - 1u);
		__m512 acc = _mm512_setzero_ps();
		for (int64_t k = 0; k < K; k++)
			acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, B + k * ldb + n), _mm512_set1_ps(a[k]), acc);
		__m512 y = _mm512_mul_ps(acc, va);
		if (bias)
			y = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, bias + n), vb, y);
		else if (beta != 0.0f)
			y = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c + n), vb, y);
		_mm512_mask_storeu_ps(c + n, m, y);
	}
}

T256 static void gemv_n_256(int64_t N, int64_t K, float alpha, const float *a, const float *B,
			    int64_t ldb, float beta, const float *bias, float *c)
{
	int64_t n = 0;
	for (; n + 64 <= N; n += 64) {
		__m256 acc[8];
		for (int v = 0; v < 8; v++)
			acc[v] = _mm256_setzero_ps();
		for (int64_t k = 0; k < K; k++) {
			__m256 x = _mm256_set1_ps(a[k]);
			const float *b = B + k * ldb + n;
			for (int v = 0; v < 8; v++)
				acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(b + 8 * v), x, acc[v]);
		}
		for (int v = 0; v < 8; v++)
			put8(c + n + 8 * v, bias ? bias + n + 8 * v : NULL, acc[v], alpha, beta);
	}
	for (; n < N; n++) {
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s += a[k] * B[k * ldb + n];
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- GEMM: 6 x 64 micro-kernel over a packed panel of op(B) ---- */

/* dst[i * NR + r] = src[r * ldb + i] for r, i < 8: an 8 x 8 block of B
 * (stored [N,K]) transposed into a panel (pack_panel). */
T256 static inline __attribute__((always_inline)) void transpose8(const float *src, int64_t ldb, float *dst)
{
	__m256 r0 = _mm256_loadu_ps(src + 0 * ldb), r1 = _mm256_loadu_ps(src + 1 * ldb);
	__m256 r2 = _mm256_loadu_ps(src + 2 * ldb), r3 = _mm256_loadu_ps(src + 3 * ldb);
	__m256 r4 = _mm256_loadu_ps(src + 4 * ldb), r5 = _mm256_loadu_ps(src + 5 * ldb);
	__m256 r6 = _mm256_loadu_ps(src + 6 * ldb), r7 = _mm256_loadu_ps(src + 7 * ldb);
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
	__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
	__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
	_mm256_storeu_ps(dst + 0 * NR, _mm256_permute2f128_ps(u0, u4, 0x20));
	_mm256_storeu_ps(dst + 1 * NR, _mm256_permute2f128_ps(u1, u5, 0x20));
	_mm256_storeu_ps(dst + 2 * NR, _mm256_permute2f128_ps(u2, u6, 0x20));
	_mm256_storeu_ps(dst + 3 * NR, _mm256_permute2f128_ps(u3, u7, 0x20));
	_mm256_storeu_ps(dst + 4 * NR, _mm256_permute2f128_ps(u0, u4, 0x31));
	_mm256_storeu_ps(dst + 5 * NR, _mm256_permute2f128_ps(u1, u5, 0x31));
	_mm256_storeu_ps(dst + 6 * NR, _mm256_permute2f128_ps(u2, u6, 0x31));
	_mm256_storeu_ps(dst + 7 * NR, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* C[0..mr, 0..nr) (+)= alpha * sum_k A[r, k] bp[k][:]; A element (r, k) at
 * a[r * ars + k * aks].  first: C = alpha acc + beta C (beta == 0: C not
 * read), or alpha acc + beta bias[j] when bias is set; otherwise C += alpha
 * acc (a later panel of the K dimension). */
T512 static void micro(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *bp,
		       const float *bias, float *C, int64_t ldc, int mr, int64_t nr, float alpha, float beta,
		       int first)
{
	__m512 acc[MR][4];
	const float *ar[MR];
	for (int r = 0; r < MR; r++) {
		ar[r] = a + (r < mr ? r : 0) * ars;     /* missing rows read row 0, never stored */
		for (int v = 0; v < 4; v++)
			acc[r][v] = _mm512_setzero_ps();
	}
	for (int64_t k = 0; k < kc; k++) {
		const float *b = bp + k * NR;
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
		__m512 b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
		for (int r = 0; r < MR; r++) {
			__m512 x = _mm512_set1_ps(ar[r][k * aks]);
			acc[r][0] = _mm512_fmadd_ps(b0, x, acc[r][0]);
			acc[r][1] = _mm512_fmadd_ps(b1, x, acc[r][1]);
			acc[r][2] = _mm512_fmadd_ps(b2, x, acc[r][2]);
			acc[r][3] = _mm512_fmadd_ps(b3, x, acc[r][3]);
		}
	}
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
	for (int r = 0; r < mr; r++)
		for (int v = 0; v < 4; v++) {
			int64_t left = nr - 16 * v;
			if (left <= 0)
				break;
			__mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
			float *c = C + r * ldc + 16 * v;
			__m512 y;
			if (!first)
				y = _mm512_fmadd_ps(acc[r][v], va, _mm512_maskz_loadu_ps(m, c));
			else if (bias)
				y = _mm512_fmadd_ps(acc[r][v], va, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, bias + 16 * v), vb));
			else if (beta != 0.0f)
				y = _mm512_fmadd_ps(acc[r][v], va, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, c), vb));
			else
				y = _mm512_mul_ps(acc[r][v], va);
			_mm512_mask_storeu_ps(c, m, y);
		}
}

/* The AVX2 micro-kernel's inner loop: acc (12 vectors) = the 6 x 16 block
 * at columns [0, 16) of panel rows bp[k][.] times the rows of A, in named
 * registers (12 accumulators, two vectors of the panel's row, one
 * broadcast: 15 of the 16). */
#define ROW_FMA(R)                                                                              \
	do {                                                                                    \
		__m256 x_ = _mm256_broadcast_ss(a##R + k * aks);                                \
		c##R##0 = _mm256_fmadd_ps(b0, x_, c##R##0);                                       \
		c##R##1 = _mm256_fmadd_ps(b1, x_, c##R##1);                                       \
	} while (0)

T256 static inline __attribute__((always_inline)) void block_6x16(int64_t kc, const float *const *ar,
								   int64_t aks, const float *bp, __m256 *acc)
{
	const float *a0 = ar[0], *a1 = ar[1], *a2 = ar[2], *a3 = ar[3], *a4 = ar[4], *a5 = ar[5];
	__m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
	__m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
	for (int64_t k = 0; k < kc; k++) {
		const __m256 b0 = _mm256_load_ps(bp + k * NR), b1 = _mm256_load_ps(bp + k * NR + 8);
		ROW_FMA(0);
		ROW_FMA(1);
		ROW_FMA(2);
		ROW_FMA(3);
		ROW_FMA(4);
		ROW_FMA(5);
	}
	acc[0] = c00, acc[1] = c01, acc[2] = c10, acc[3] = c11, acc[4] = c20, acc[5] = c21;
	acc[6] = c30, acc[7] = c31, acc[8] = c40, acc[9] = c41, acc[10] = c50, acc[11] = c51;
}

/* The AVX2 micro-kernel: C[0..mr, 0..nr) of one panel as four 6 x 16
 * blocks, each reading the same rows of A (from the first-level cache);
 * the epilogue as micro's. */
T256 static void micro_256(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *bp,
			   const float *bias, float *C, int64_t ldc, int mr, int64_t nr, float alpha, float beta,
			   int first)
{
	const float *ar[MR];
	for (int r = 0; r < MR; r++)
		ar[r] = a + (r < mr ? r : 0) * ars;     /* missing rows read row 0, never stored */
	const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
	for (int64_t c0 = 0; c0 < nr; c0 += 16) {
		__m256 acc[2 * MR];
		block_6x16(kc, ar, aks, bp + c0, acc);
		int64_t left = nr - c0 < 16 ? nr - c0 : 16;
		for (int r = 0; r < mr; r++) {
			float *c = C + r * ldc + c0;
			float in[16], out[16];
			const float *src = !first ? c : bias ? bias + c0 : beta != 0.0f ? c : NULL;
			if (left < 16) {        /* a partial block: through a buffer, the rest untouched */
				for (int64_t j = 0; j < 16; j++)
					in[j] = src && j < left ? src[j] : 0.0f;
				src = src ? in : NULL;
			}
			for (int v = 0; v < 2; v++) {
				__m256 y;
				if (!first)
					y = _mm256_fmadd_ps(acc[2 * r + v], va, _mm256_loadu_ps(src + 8 * v));
				else if (src)
					y = _mm256_fmadd_ps(acc[2 * r + v], va, _mm256_mul_ps(_mm256_loadu_ps(src + 8 * v), vb));
				else
					y = _mm256_mul_ps(acc[2 * r + v], va);
				_mm256_storeu_ps((left < 16 ? out : c) + 8 * v, y);
			}
			for (int64_t j = 0; left < 16 && j < left; j++)
				c[j] = out[j];
		}
	}
}


/* ---- GEMV on packed weights (rt_gemv_pack): rows [r0, r1) of a matrix whose
 * blocks of RT_PACK_W rows are stored [K][w], so that the batch-1 step
 * streams them once, in order, with no horizontal sums ---- */

/* One chunk of NV vectors (the last one masked) of columns p[0..) of a
 * block with row stride w; NV <= 4 keeps two sets of sums (even and odd k)
 * so that the FMA latency does not serialise the short chunks. */
#define PK_EPILOGUE(ACC, OFF, MASK, LOAD, MUL, FMA, STORE)                                          \
	do {                                                                                        \
		__typeof__(ACC) y_ = MUL(ACC, va);                                                   \
		if (bias)                                                                           \
			y_ = FMA(LOAD(MASK, bias + (OFF)), vb, y_);                                   \
		else if (beta != 0.0f)                                                              \
			y_ = FMA(LOAD(MASK, c + (OFF)), vb, y_);                                      \
		STORE(c + (OFF), MASK, y_);                                                         \
	} while (0)

#define MZL512(m, p) _mm512_maskz_loadu_ps(m, p)
#define MST512(p, m, y) _mm512_mask_storeu_ps(p, m, y)

T512 static inline __attribute__((always_inline)) void pk_chunk_512(const int NV, int64_t K, const float *a,
								      const float *p, int64_t w, __mmask16 last,
								      float alpha, float beta, const float *bias,
								      float *c)
{
	const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
	__m512 acc[16], acc2[4];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++)
		acc[v] = _mm512_setzero_ps();
	int64_t k = 0;
	if (NV <= 4) {
		_Pragma("GCC unroll 16")
		for (int v = 0; v < NV; v++)
			acc2[v] = _mm512_setzero_ps();
		for (; k + 2 <= K; k += 2, p += 2 * w) {
			__m512 x0 = _mm512_set1_ps(a[k]), x1 = _mm512_set1_ps(a[k + 1]);
			_Pragma("GCC unroll 16")
			for (int v = 0; v < NV; v++) {
				__mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
				acc[v] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + 16 * v), x0, acc[v]);
				acc2[v] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, p + w + 16 * v), x1, acc2[v]);
			}
		}
		_Pragma("GCC unroll 16")
		for (int v = 0; v < NV; v++)
			acc[v] = _mm512_add_ps(acc[v], acc2[v]);
	}
	for (; k < K; k++, p += w) {
		__m512 x = _mm512_set1_ps(a[k]);
		_Pragma("GCC unroll 16")
		for (int v = 0; v < NV - 1; v++)
			acc[v] = _mm512_fmadd_ps(_mm512_loadu_ps(p + 16 * v), x, acc[v]);
		acc[NV - 1] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(last, p + 16 * (NV - 1)), x, acc[NV - 1]);
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++) {
		__mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
		PK_EPILOGUE(acc[v], 16 * v, m, MZL512, _mm512_mul_ps, _mm512_fmadd_ps, MST512);
	}
}

T512 static void gemv_packed_512(int64_t cols, int64_t K, const float *a, const float *p, int64_t w, float alpha,
				 float beta, const float *bias, float *c)
{
	int nv = (int)((cols + 15) / 16);
	__mmask16 last = (__mmask16)(cols % 16 ? (1u << (cols % 16)) - 1u : 0xffffu);
	switch (nv) {
#define PK_CASE(NV) case NV: pk_chunk_512(NV, K, a, p, w, last, alpha, beta, bias, c); break;
	PK_CASE(1) PK_CASE(2) PK_CASE(3) PK_CASE(4) PK_CASE(5) PK_CASE(6) PK_CASE(7) PK_CASE(8)
	PK_CASE(9) PK_CASE(10) PK_CASE(11) PK_CASE(12) PK_CASE(13) PK_CASE(14) PK_CASE(15) PK_CASE(16)
#undef PK_CASE
	default: break;
	}
}

/* AVX2: chunks of at most 8 vectors (64 columns; 16 registers in all). */
#define MZL256(m, p) _mm256_maskload_ps(p, m)
#define MST256(p, m, y) _mm256_maskstore_ps(p, m, y)

T256 static inline __attribute__((always_inline)) void pk_chunk_256(const int NV, int64_t K, const float *a,
								      const float *p, int64_t w, __m256i last,
								      float alpha, float beta, const float *bias,
								      float *c)
{
	const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
	const __m256i all = _mm256_set1_epi32(-1);
	__m256 acc[8];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++)
		acc[v] = _mm256_setzero_ps();
	for (int64_t k = 0; k < K; k++, p += w) {
		__m256 x = _mm256_set1_ps(a[k]);
		_Pragma("GCC unroll 16")
		for (int v = 0; v < NV - 1; v++)
			acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(p + 8 * v), x, acc[v]);
		acc[NV - 1] = _mm256_fmadd_ps(_mm256_maskload_ps(p + 8 * (NV - 1), last), x, acc[NV - 1]);
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++) {
		__m256i m = v == NV - 1 ? last : all;
		PK_EPILOGUE(acc[v], 8 * v, m, MZL256, _mm256_mul_ps, _mm256_fmadd_ps, MST256);
	}
}

T256 static void gemv_packed_256(int64_t cols, int64_t K, const float *a, const float *p, int64_t w, float alpha,
				 float beta, const float *bias, float *c)
{
	for (int64_t j = 0; j < cols; j += 64) {
		int64_t n = cols - j < 64 ? cols - j : 64;
		int nv = (int)((n + 7) / 8), r = (int)(n % 8);
		__m256i last = _mm256_cmpgt_epi32(_mm256_set1_epi32(r ? r : 8), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		const float *bj = bias ? bias + j : NULL;
		switch (nv) {
#define PK_CASE(NV) case NV: pk_chunk_256(NV, K, a, p + j, w, last, alpha, beta, bj, c + j); break;
		PK_CASE(1) PK_CASE(2) PK_CASE(3) PK_CASE(4) PK_CASE(5) PK_CASE(6) PK_CASE(7) PK_CASE(8)
#undef PK_CASE
		default: break;
		}
	}
}

/* bfloat16 (rt_gemv_pack_bf16's layout, rt_kern.h): columns [c0, c1) of a
 * block of padded width wp, in chunks of up to 4 groups of 16 columns (8
 * accumulators); each 32-bit word of a loaded group widens to column i
 * (low half shifted up) and column i + 8 (high half masked).  The sums go
 * through a buffer, so a range may start and end inside a group. */
T256 static inline __attribute__((always_inline)) void pk_bf16_chunk(const int NG, int64_t K, const float *a,
								       const uint16_t *p, int64_t wp, float *sum)
{
	const __m256i hi = _mm256_set1_epi32((int)0xffff0000u);
	__m256 acc[8];
	_Pragma("GCC unroll 8")
	for (int v = 0; v < 2 * NG; v++)
		acc[v] = _mm256_setzero_ps();
	for (int64_t k = 0; k < K; k++, p += wp) {
		__m256 x = _mm256_set1_ps(a[k]);
		_Pragma("GCC unroll 4")
		for (int q = 0; q < NG; q++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(p + 16 * q));
			acc[2 * q] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), x, acc[2 * q]);
			acc[2 * q + 1] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v, hi)), x,
							 acc[2 * q + 1]);
		}
	}
	_Pragma("GCC unroll 8")
	for (int v = 0; v < 2 * NG; v++)
		_mm256_storeu_ps(sum + 8 * v, acc[v]);
}

CHUNKS(T256, bf16_chunk_avx2, pk_bf16_chunk, float, uint16_t, float, CASES4)

/* int8 (rt_gemv_pack_i8's layout, rt_kern.h): columns [c0, c1) of a block
 * of padded width wp, in chunks of up to 8 groups of 8 rows (8 int32
 * accumulators).  Per group of 4 columns: the 4 activations broadcast,
 * vpmaddubsw (u8 x s8, pairs summed to int16: at most 2 * 127 * 127, no
 * saturation), vpmaddwd by ones (pairs to int32), vpaddd: exact. */
T256 static inline __attribute__((always_inline)) void pk_i8_chunk(const int NG, int64_t Kq, const uint8_t *qa,
								     const int8_t *p, int64_t wp, int32_t *sum)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i acc[8];
	_Pragma("GCC unroll 8")
	for (int v = 0; v < NG; v++)
		acc[v] = _mm256_setzero_si256();
	for (int64_t kq = 0; kq < Kq; kq++, p += 4 * wp) {
		int32_t x4;
		memcpy(&x4, qa + 4 * kq, sizeof x4);
		__m256i x = _mm256_set1_epi32(x4);
		_Pragma("GCC unroll 8")
		for (int q = 0; q < NG; q++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(p + 32 * q));
			acc[q] = _mm256_add_epi32(acc[q], _mm256_madd_epi16(_mm256_maddubs_epi16(x, v), ones));
		}
	}
	_Pragma("GCC unroll 8")
	for (int v = 0; v < NG; v++)
		_mm256_storeu_si256((__m256i *)(sum + 8 * v), acc[v]);
}

CHUNKS(T256, i8_chunk_avx2, pk_i8_chunk, uint8_t, int8_t, int32_t, CASES8)

/* AVX512-VNNI: vpdpbusd does the four products of a lane and their sum into
 * the int32 accumulator in one instruction, exactly (the non-saturating
 * form), where AVX2 needs vpmaddubsw and vpmaddwd: the same sums. */
T512V static inline __attribute__((always_inline)) void pk_i8_chunk_vnni(const int NG, int64_t Kq,
									   const uint8_t *qa, const int8_t *p,
									   int64_t wp, int32_t *sum)
{
	__m256i acc[8];
	_Pragma("GCC unroll 8")
	for (int v = 0; v < NG; v++)
		acc[v] = _mm256_setzero_si256();
	for (int64_t kq = 0; kq < Kq; kq++, p += 4 * wp) {
		int32_t x4;
		memcpy(&x4, qa + 4 * kq, sizeof x4);
		__m256i x = _mm256_set1_epi32(x4);
		_Pragma("GCC unroll 8")
		for (int q = 0; q < NG; q++)
			acc[q] = _mm256_dpbusd_epi32(acc[q], x, _mm256_loadu_si256((const __m256i *)(p + 32 * q)));
	}
	_Pragma("GCC unroll 8")
	for (int v = 0; v < NG; v++)
		_mm256_storeu_si256((__m256i *)(sum + 8 * v), acc[v]);
}

CHUNKS(T512V, i8_chunk_vnni, pk_i8_chunk_vnni, uint8_t, int8_t, int32_t, CASES8)

/* rt_quant_act_u7 (cellrt.h) eight at a time, with the same results: the
 * minimum and maximum do not depend on the order, vroundps rounds as
 * nearbyintf does, and a NaN or an infinity is left to the scalar code. */
T256 static int quant_act_u7_256(int64_t K, const float *a, uint8_t *q, int32_t *zp, float *scale)
{
	__m256 lo = _mm256_setzero_ps(), hi = lo, bad = lo;
	int64_t k = 0;
	for (; k + 8 <= K; k += 8) {
		__m256 v = _mm256_loadu_ps(a + k);
		lo = _mm256_min_ps(lo, v);
		hi = _mm256_max_ps(hi, v);
		bad = _mm256_add_ps(bad, _mm256_mul_ps(v, _mm256_setzero_ps()));
	}
	float l[8], h[8], b[8], mn = 0.0f, mx = 0.0f, nb = 0.0f;
	_mm256_storeu_ps(l, lo);
	_mm256_storeu_ps(h, hi);
	_mm256_storeu_ps(b, bad);
	for (int i = 0; i < 8; i++) {
		mn = l[i] < mn ? l[i] : mn;
		mx = h[i] > mx ? h[i] : mx;
		nb += b[i];
	}
	if (!u7_range_tail(k, K, a, &mn, &mx, nb))
		return 0;
	float inv, z;
	u7_params(mn, mx, &inv, &z, zp, scale);
	const __m256 vi = _mm256_set1_ps(inv), vz = _mm256_set1_ps(z), v0 = _mm256_setzero_ps(),
		     v127 = _mm256_set1_ps(127.0f);
	for (k = 0; k + 32 <= K; k += 32) {
		__m256i w[4];
		for (int j = 0; j < 4; j++) {
			__m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(a + k + 8 * j), vi),
						   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, vz), v0), v127);
			w[j] = _mm256_cvtps_epi32(v);
		}
		/* 32 int32 in [0, 127] to 32 bytes, in order (the packs work per lane) */
		__m256i p = _mm256_packus_epi16(_mm256_packs_epi32(w[0], w[1]), _mm256_packs_epi32(w[2], w[3]));
		p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
		_mm256_storeu_si256((__m256i *)(q + k), p);
	}
	u7_tail(k, K, a, inv, z, q);
	return 1;
}

/* AVX512-BF16 on RT_BF16_PAIRS (rt_kern.h): rows [c0, c1) of a block of
 * padded width wp, in chunks of up to 4 groups of 16 rows; per pair of
 * columns one load of 16 rows' two weights and two vdpbf16ps, by the pair's
 * activations' high and low bfloat16 parts (xs: the Kh = Kp / 2 words of
 * the high parts, then the low ones). */
T512B static inline __attribute__((always_inline)) void pk_pairs_chunk(const int NG, int64_t Kh, const uint32_t *xs,
									 const uint16_t *p, int64_t wp, float *sum)
{
	const uint32_t *xh = xs, *xl = xs + Kh;
	/* the high and the low parts in accumulators of their own: 2 NG
	 * independent chains to hide vdpbf16ps's latency */
	__m512 acc[4], acl[4];
	_Pragma("GCC unroll 4")
	for (int v = 0; v < NG; v++)
		acc[v] = acl[v] = _mm512_setzero_ps();
	for (int64_t kh = 0; kh < Kh; kh++, p += 2 * wp) {
		__m512bh h = (__m512bh)_mm512_set1_epi32((int)xh[kh]), l = (__m512bh)_mm512_set1_epi32((int)xl[kh]);
		_Pragma("GCC unroll 4")
		for (int q = 0; q < NG; q++) {
			__m512bh v = (__m512bh)_mm512_loadu_si512((const void *)(p + 32 * q));
			acc[q] = _mm512_dpbf16_ps(acc[q], v, h);
			acl[q] = _mm512_dpbf16_ps(acl[q], v, l);
		}
	}
	_Pragma("GCC unroll 4")
	for (int v = 0; v < NG; v++)
		_mm512_storeu_ps(sum + 16 * v, _mm512_add_ps(acc[v], acl[v]));
}

CHUNKS(T512B, pairs_chunk_avx512, pk_pairs_chunk, uint32_t, uint16_t, float, CASES4)

/* a[0..K) as hi + lo, each rounded to bfloat16 (to nearest even), into
 * uint16 arrays of Kp = K rounded up to even elements (the pad 0), which
 * read as 32-bit words are the pairs pk_pairs_chunk broadcasts. */
T512B static void split_bf16(int64_t K, const float *a, uint16_t *hi, uint16_t *lo)
{
	int64_t k = 0;
	for (; k + 16 <= K; k += 16) {
		__m512 v = _mm512_loadu_ps(a + k);
		__m256bh h = _mm512_cvtneps_pbh(v);
		__m512 hv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)h), 16));
		_mm256_storeu_si256((__m256i *)(hi + k), (__m256i)h);
		_mm256_storeu_si256((__m256i *)(lo + k), (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v, hv)));
	}
	split_bf16_tail(k, K, a, hi, lo);
}

#endif /* RT_KERN_X86 */

#ifdef RT_KERN_NEON
#include "rt_kern_neon.h"
#endif
#ifdef RT_KERN_WASM
#include "rt_kern_wasm.h"
#endif
#ifdef RT_KERN_V128
#include "rt_kern_v128.h"
#endif
#if defined(RT_KERN_MFP) || defined(RT_KERN_DSP)
#include "rt_kern_m.h"
#endif

#ifdef RT_KERN_SIMD

/* ---- the drivers around the kernels, written once for x86 and the four-float sets ---- */

/* bp[k][j] = op(B)[k0 + k, n0 + j] for k < kc, j < nr; columns nr..NR zero. */
RT_DRIVER static void pack_panel(int transB, const float *B, int64_t ldb, int64_t k0, int64_t kc, int64_t n0,
				  int64_t nr, float *bp)
{
	if (!transB) {
		for (int64_t k = 0; k < kc; k++) {
			const float *src = B + (k0 + k) * ldb + n0;
			float *dst = bp + k * NR;
			int64_t j = 0;
			for (; j < nr; j++)
				dst[j] = src[j];
			for (; j < NR; j++)
				dst[j] = 0.0f;
		}
		return;
	}
	/* B stored [N,K]: transposed 8 x 8 blocks at a time */
	int64_t j = 0;
	for (; j + 8 <= nr; j += 8) {
		const float *src = B + (n0 + j) * ldb + k0;
		int64_t k = 0;
		for (; k + 8 <= kc; k += 8)
			transpose8(src + k, ldb, bp + k * NR + j);
		for (; k < kc; k++)
			for (int r = 0; r < 8; r++)
				bp[k * NR + j + r] = src[r * ldb + k];
	}
	for (; j < NR; j++)
		for (int64_t k = 0; k < kc; k++)
			bp[k * NR + j] = j < nr ? B[(n0 + j) * ldb + k0 + k] : 0.0f;
}

/* A micro-kernel on one panel (micro, micro_256, micro_v128) */
typedef void micro_fn(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *bp, const float *bias,
		      float *C, int64_t ldc, int mr, int64_t nr, float alpha, float beta, int first);

/* The blocked GEMM around a micro-kernel: MB rows of A at a time (they stay
 * in cache while every panel passes); the panels of op(B) (KC x NR) are
 * packed again for each block of rows, or read from P when op(B) was
 * packed once (rt_kern_pack_panels: panel (n0, k0) at P + n0 K + k0 NR). */
RT_DRIVER static void gemm_panels(micro_fn *micro_k, int transA, int transB, int64_t M, int64_t N, int64_t K,
				  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
				  const float *P, float beta, const float *bias, float *C, int64_t ldc)
{
	float own[KC * NR] __attribute__((aligned(64)));
	const int64_t ars = transA ? 1 : lda, aks = transA ? lda : 1;
	for (int64_t m0 = 0; m0 < M; m0 += MB) {
		int64_t mb = M - m0 < MB ? M - m0 : MB;
		for (int64_t n0 = 0; n0 < N; n0 += NR) {
			int64_t nr = N - n0 < NR ? N - n0 : NR;
			for (int64_t k0 = 0; k0 < K; k0 += KC) {
				int64_t kc = K - k0 < KC ? K - k0 : KC;
				const float *bp = P ? P + n0 * K + k0 * NR : own;
				if (!P)
					pack_panel(transB, B, ldb, k0, kc, n0, nr, own);
				for (int64_t i = m0; i < m0 + mb; i += MR) {
					int mr = m0 + mb - i < MR ? (int)(m0 + mb - i) : MR;
					micro_k(kc, A + i * ars + k0 * aks, ars, aks, bp, bias ? bias + n0 : NULL,
						C + i * ldc + n0, ldc, mr, nr, alpha, beta, k0 == 0);
				}
			}
		}
	}
}

/* Every panel of op(B), as gemm_panels packs them one at a time. */
RT_DRIVER static void pack_panels(int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float *P)
{
	for (int64_t n0 = 0; n0 < N; n0 += NR)
		for (int64_t k0 = 0; k0 < K; k0 += KC)
			pack_panel(transB, B, ldb, k0, K - k0 < KC ? K - k0 : KC, n0, N - n0 < NR ? N - n0 : NR,
				   P + n0 * K + k0 * NR);
}

/* bfloat16 (rt_gemv_pack_bf16's layouts, rt_kern.h): rows [c0, c1) of a
 * block of padded width wp, in chunks of up to 4 groups of 16 rows; Kx:
 * K on RT_BF16_SHIFT (x: the activations), the number of pairs on
 * RT_BF16_PAIRS (x: their split parts), whose words hold two columns.  The
 * sums go through a buffer, so a range may start and end inside a group. */
RT_DRIVER static void bf16_rows(bf16_chunk_fn *chunk, int layout, int64_t c0, int64_t c1, int64_t Kx, const void *x,
				const uint16_t *p, int64_t wp, float alpha, float beta, const float *bias, float *c)
{
	float sum[64];
	for (int64_t g = c0 / 16 * 16; g < c1; g += 64) {
		int ng = (int)((c1 - g + 15) / 16 < 4 ? (c1 - g + 15) / 16 : 4);
		chunk(ng, Kx, x, p + (layout == RT_BF16_PAIRS ? 2 * g : g), wp, sum);
		int64_t lo = g > c0 ? g : c0, e = g + 16 * ng < c1 ? g + 16 * ng : c1;
		for (int64_t j = lo; j < e; j++) {
			float y = alpha * sum[j - g];
			c[j - c0] = bias ? y + beta * bias[j - c0] : beta != 0.0f ? y + beta * c[j - c0] : y;
		}
	}
}

/* The same block by block: rows [r0, r1) of the product. */
static void bf16_blocks(bf16_chunk_fn *chunk, int layout, int64_t r0, int64_t r1, int64_t N, int64_t K, const void *x,
			const uint16_t *P, float alpha, float beta, const float *bias, float *c)
{
	for (int64_t r = r0; r < r1;) {
		int64_t n0 = r / RT_PACK_W * RT_PACK_W, w, wp, off;
		rt_bf16_block(layout, N, K, n0, &w, &wp, &off);
		int64_t e = n0 + w < r1 ? n0 + w : r1;
		bf16_rows(chunk, layout, r - n0, e - n0, layout == RT_BF16_PAIRS ? (K + 1) / 2 : K, x, P + off, wp,
			  alpha, beta, bias ? bias + (r - r0) : NULL, c + (r - r0));
		r = e;
	}
}

#endif /* RT_KERN_SIMD */

#ifdef RT_KERN_ROWS

/* ---- the packed GEMVs' drivers, for the SIMD kernels and the M profile's ---- */

/* The packed GEMV's kernel on one block's columns (gemv_packed_512, _256, _v128, _m) */
typedef void packed_fn(int64_t cols, int64_t K, const float *a, const float *p, int64_t w, float alpha, float beta,
		       const float *bias, float *c);

/* Rows [r0, r1) of a product on weights packed by rt_gemv_pack, block by block. */
static void packed_rows(packed_fn *f, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			const float *P, float beta, const float *bias, float *c)
{
	for (int64_t r = r0; r < r1;) {
		int64_t n0 = r / RT_PACK_W * RT_PACK_W, w = N - n0 < RT_PACK_W ? N - n0 : RT_PACK_W;
		int64_t e = n0 + w < r1 ? n0 + w : r1;
		f(e - r, K, a, P + n0 * K + (r - n0), w, alpha, beta, bias ? bias + (r - r0) : NULL, c + (r - r0));
		r = e;
	}
}

/* int8 (rt_gemv_pack_i8's layout, rt_kern.h): columns [c0, c1) of a block
 * of padded width wp, in chunks of up to 8 groups of 8 rows; each chunk's
 * exact int32 sums scaled back to float32. */
RT_DRIVER static void gemv_packed_i8_chunks(i8_chunk_fn *chunk, int64_t c0, int64_t c1, int64_t K, const uint8_t *qa,
					    float sa, int32_t zp, const int8_t *p, int64_t wp, const float *scale,
					    const int32_t *rsum, float alpha, float beta, const float *bias, float *c)
{
	int32_t sum[64];
	int64_t Kq = (K + 3) / 4;
	for (int64_t g = c0 / 8 * 8; g < c1; g += 64) {
		int ng = (int)((c1 - g + 7) / 8 < 8 ? (c1 - g + 7) / 8 : 8);
		chunk(ng, Kq, qa, p + 4 * g, wp, sum);
		int64_t lo = g > c0 ? g : c0, e = g + 8 * ng < c1 ? g + 8 * ng : c1;
		for (int64_t j = lo; j < e; j++) {
			float v = sa * scale[j] * (float)(sum[j - g] - zp * rsum[j]);
			int64_t i = j - c0;
			c[i] = alpha * v + (bias ? beta * bias[i] : beta != 0.0f ? beta * c[i] : 0.0f);
		}
	}
}

#endif /* RT_KERN_ROWS */

/* ---- the entry points: each instruction set's kernel (NULL: none) ---- */

typedef void gemv_fn(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
		     const float *bias, float *c);

static gemv_fn *gemv_of(int isa, int transB)
{
	(void)transB;   /* (read by no case where no kernel is built) */
	switch (isa) {
#ifdef RT_KERN_X86
	case RT_ISA_AVX512: return transB ? gemv_t_512 : gemv_n_512;
	case RT_ISA_AVX2: return transB ? gemv_t_256 : gemv_n_256;
#endif
#ifdef RT_KERN_V128
	case V128_ISA: return transB ? gemv_t_v128 : gemv_n_v128;
#endif
#ifdef RT_KERN_MFP
	case RT_ISA_MFP: return transB ? gemv_t_m : gemv_n_m;
#endif
	default: return NULL;
	}
}

#ifdef RT_KERN_SIMD
static micro_fn *micro_of(int isa)
{
	switch (isa) {
#ifdef RT_KERN_X86
	case RT_ISA_AVX512: return micro;
	case RT_ISA_AVX2: return micro_256;
#endif
#ifdef RT_KERN_V128
	case V128_ISA: return micro_v128;
#endif
	default: return NULL;
	}
}


/* the chunk kernel of isa on layout (AVX2's serves AVX-512 on SHIFT) */
static bf16_chunk_fn *bf16_chunk_of(int isa, int layout)
{
	switch (isa) {
#ifdef RT_KERN_X86
	case RT_ISA_AVX512: case RT_ISA_AVX2: return layout == RT_BF16_SHIFT ? bf16_chunk_avx2 : NULL;
	case RT_ISA_BF16: return layout == RT_BF16_PAIRS ? pairs_chunk_avx512 : NULL;
#endif
#ifdef RT_KERN_V128
	case V128_ISA: return layout == RT_BF16_SHIFT ? bf16_chunk_v128 : NULL;
#endif
#ifdef RT_NEON_BFDOT
	case RT_ISA_BFDOT: return layout == RT_BF16_PAIRS ? pairs_chunk_neon : NULL;
#endif
	default: return NULL;
	}
}

#endif

#ifdef RT_KERN_ROWS
static packed_fn *packed_of(int isa)
{
	switch (isa) {
#ifdef RT_KERN_X86
	case RT_ISA_AVX512: return gemv_packed_512;
	case RT_ISA_AVX2: return gemv_packed_256;
#endif
#ifdef RT_KERN_V128
	case V128_ISA: return gemv_packed_v128;
#endif
#ifdef RT_KERN_MFP
	case RT_ISA_MFP: return gemv_packed_m;
#endif
	default: return NULL;
	}
}

/* (AVX2's serves AVX-512 without VNNI) */
static i8_chunk_fn *i8_chunk_of(int isa)
{
	switch (isa) {
#ifdef RT_KERN_X86
	case RT_ISA_VNNI: return i8_chunk_vnni;
	case RT_ISA_AVX512: case RT_ISA_AVX2: return i8_chunk_avx2;
#endif
#ifdef RT_NEON_DOT
	case RT_ISA_DOTPROD: return i8_chunk_dot;
#endif
#ifdef RT_KERN_V128
	case V128_ISA: return i8_chunk_v128;
#endif
#ifdef RT_KERN_DSP
	case RT_ISA_DSP: return i8_chunk_dsp;
#endif
	default: return NULL;
	}
}
#endif

int rt_kern_gemv(int isa, int transB, int64_t N, int64_t K, float alpha, const float *a,
		 const float *B, int64_t ldb, float beta, const float *bias, float *c)
{
	gemv_fn *f = gemv_of(isa, transB);
	if (f)
		f(N, K, alpha, a, B, ldb, beta, bias, c);
	return f != NULL;
}

/* Whether rt_kern_gemm multiplies M rows unpacked (rt_kern_v128.h's
 * V128_FEW_ROWS; rt_kern_gemm_panels then declines) */
#if defined(RT_KERN_V128) && V128_FEW_ROWS > 0
#define RT_KERN_FEW 1
#endif
#ifdef RT_KERN_SIMD
static int few_rows(int isa, int64_t M, int64_t K)
{
#ifdef RT_KERN_FEW
	return isa == V128_ISA && M >= 1 && M <= V128_FEW_ROWS && K >= 1 && K <= V128_FEW_KMAX;
#else
	(void)isa, (void)M, (void)K;
	return 0;
#endif
}
#endif

int rt_kern_gemm_packs(int isa, int64_t M, int64_t K)
{
#ifdef RT_KERN_SIMD
	return micro_of(isa) && K > 0 && !few_rows(isa, M, K);
#else
	(void)isa, (void)M, (void)K;
	return 0;
#endif
}

int rt_kern_gemm(int isa, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		 const float *A, int64_t lda, const float *B, int64_t ldb, float beta, const float *bias,
		 float *C, int64_t ldc)
{
#ifdef RT_KERN_SIMD
#ifdef RT_KERN_FEW
	if (few_rows(isa, M, K)) {
		gemm_few_v128(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);
		return 1;
	}
#endif
	micro_fn *f = micro_of(isa);
	if (f && K > 0) {
		gemm_panels(f, transA, transB, M, N, K, alpha, A, lda, B, ldb, NULL, beta, bias, C, ldc);
		return 1;
	}
#endif
	(void)isa, (void)transA, (void)transB, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda,
		(void)B, (void)ldb, (void)beta, (void)bias, (void)C, (void)ldc;
	return 0;
}

int64_t rt_kern_panels_size(int64_t N, int64_t K)
{
	return (N + RT_PANEL_NR - 1) / RT_PANEL_NR * RT_PANEL_NR * K;
}

int rt_kern_pack_panels(int isa, int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float *P)
{
#ifdef RT_KERN_SIMD
	if (micro_of(isa) && N > 0 && K > 0) {
		pack_panels(transB, N, K, B, ldb, P);
		return 1;
	}
#endif
	(void)isa, (void)transB, (void)N, (void)K, (void)B, (void)ldb, (void)P;
	return 0;
}

int rt_kern_gemm_panels(int isa, int transA, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			int64_t lda, const float *P, float beta, const float *bias, float *C, int64_t ldc)
{
#ifdef RT_KERN_SIMD
	micro_fn *f = micro_of(isa);
	if (rt_kern_gemm_packs(isa, M, K)) {
		gemm_panels(f, transA, 0, M, N, K, alpha, A, lda, NULL, 0, P, beta, bias, C, ldc);
		return 1;
	}
#endif
	(void)isa, (void)transA, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)P, (void)beta,
		(void)bias, (void)C, (void)ldc;
	return 0;
}

int rt_kern_bf16_layout(int64_t K)
{
	return rt_kern_isa_bf16() != RT_ISA_NONE && K <= RT_BF16_PAIRS_KMAX ? RT_BF16_PAIRS : RT_BF16_SHIFT;
}

int rt_kern_split_bf16(int64_t K, const float *a, uint32_t *xs)
{
	if (K > RT_BF16_PAIRS_KMAX || rt_kern_bf16_layout(K) != RT_BF16_PAIRS)
		return 0;
	uint16_t hi[RT_BF16_PAIRS_KMAX], lo[RT_BF16_PAIRS_KMAX];
	int64_t Kh = (K + 1) / 2;
#ifdef RT_KERN_X86
	split_bf16(K, a, hi, lo);
#else
	split_bf16_tail(0, K, a, hi, lo);
#endif
	memcpy(xs, hi, sizeof *xs * (size_t)Kh);
	memcpy(xs + Kh, lo, sizeof *xs * (size_t)Kh);
	return 1;
}

int rt_kern_gemv_pairs(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const uint32_t *xs,
		       const uint16_t *P, float beta, const float *bias, float *c)
{
#ifdef RT_KERN_SIMD
	if (P[0] == RT_BF16_PAIRS && K <= RT_BF16_PAIRS_KMAX && rt_kern_bf16_layout(K) == RT_BF16_PAIRS) {
		bf16_blocks(bf16_chunk_of(rt_kern_isa_bf16(), RT_BF16_PAIRS), RT_BF16_PAIRS, r0, r1, N, K, xs, P, alpha,
			    beta, bias, c);
		return 1;
	}
#endif
	(void)r0, (void)r1, (void)N, (void)K, (void)alpha, (void)xs, (void)P, (void)beta, (void)bias, (void)c;
	return 0;
}

int rt_kern_gemv_packed_bf16(int isa, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha,
			     const float *a, const uint16_t *P, float beta, const float *bias, float *c)
{
#ifdef RT_KERN_SIMD
	int layout = P[0];
	bf16_chunk_fn *chunk = bf16_chunk_of(isa, layout);
	if (chunk && layout == RT_BF16_PAIRS && K <= RT_BF16_PAIRS_KMAX) {
		uint32_t xs[RT_BF16_PAIRS_KMAX];
		return rt_kern_split_bf16(K, a, xs) &&
		       rt_kern_gemv_pairs(r0, r1, N, K, alpha, xs, P, beta, bias, c);
	}
	if (chunk && layout == RT_BF16_SHIFT) {
		bf16_blocks(chunk, layout, r0, r1, N, K, a, P, alpha, beta, bias, c);
		return 1;
	}
#endif
	(void)isa, (void)r0, (void)r1, (void)N, (void)K, (void)alpha, (void)a, (void)P, (void)beta, (void)bias,
		(void)c;
	return 0;
}

int rt_kern_quant_act_u7(int isa, int64_t K, const float *a, uint8_t *q, int32_t *zp, float *scale)
{
#ifdef RT_KERN_X86
	if (isa == RT_ISA_VNNI || isa == RT_ISA_AVX512 || isa == RT_ISA_AVX2)
		return quant_act_u7_256(K, a, q, zp, scale);
#endif
#ifdef RT_KERN_V128
	if (isa == V128_ISA || isa == RT_ISA_DOTPROD)
		return quant_act_u7_v128(K, a, q, zp, scale);
#endif
	(void)isa, (void)K, (void)a, (void)q, (void)zp, (void)scale;
	return 0;
}

int rt_kern_gemv_packed_i8(int isa, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha,
			   const uint8_t *qa, float sa, int32_t zp, const int8_t *P, float beta, const float *bias,
			   float *c)
{
#ifdef RT_KERN_ROWS
	i8_chunk_fn *chunk = i8_chunk_of(isa);
	if (chunk && K <= RT_I8_KMAX) {
		const float *scale = (const float *)(const void *)P;
		const int32_t *rsum = (const int32_t *)(const void *)(P + 4 * N);
		for (int64_t r = r0; r < r1;) {
			int64_t n0 = r / RT_PACK_W * RT_PACK_W, w, wp, off;
			rt_i8_block(N, K, n0, &w, &wp, &off);
			int64_t e = n0 + w < r1 ? n0 + w : r1;
			gemv_packed_i8_chunks(chunk, r - n0, e - n0, K, qa, sa, zp, P + off, wp, scale + n0, rsum + n0,
					      alpha, beta, bias ? bias + (r - r0) : NULL, c + (r - r0));
			r = e;
		}
		return 1;
	}
#endif
	(void)isa, (void)r0, (void)r1, (void)N, (void)K, (void)alpha, (void)qa, (void)sa, (void)zp, (void)P,
		(void)beta, (void)bias, (void)c;
	return 0;
}

int rt_kern_gemv_packed(int isa, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			const float *P, float beta, const float *bias, float *c)
{
#ifdef RT_KERN_ROWS
	packed_fn *f = packed_of(isa);
	if (f) {
		packed_rows(f, r0, r1, N, K, alpha, a, P, beta, bias, c);
		return 1;
	}
#endif
	(void)isa, (void)r0, (void)r1, (void)N, (void)K, (void)alpha, (void)a, (void)P, (void)beta, (void)bias,
		(void)c;
	return 0;
}
