/* rt_kern.h: libcellrt's own SIMD kernels for the products of a recurrent
 * step (internal: rt_blas.c and the unit tests use it; emitted code does not).
 *
 * A recurrence multiplies a small state (one row at batch 1, a few hundred at
 * most) by the same recurrent weights at every step.  Generic BLAS calls pay
 * for packing and dispatch at every one of those calls; these kernels are
 * written for exactly that shape:
 *   gemv: c[N] = alpha op(B)^T a + beta c, the batch-1 step, bound by the
 *     bandwidth at which B streams from cache: eight rows (or 128 columns;
 *     NEON and SIMD128: 32) at a time, every load feeding an FMA (SIMD128:
 *     a multiply and an add);
 *   gemv_packed: the same on weights packed once (rt_gemv_pack) into blocks
 *     of 256 rows stored column by column: one stream in order, up to 16
 *     vectors of sums, no horizontal adds (10-20% faster than gemv at
 *     hidden 128-256, where the step is bound by that stream);
 *   gemm: C[M,N] = alpha op(A) op(B) + beta C with a 6 x 64 register-blocked
 *     AVX-512 micro-kernel (AVX2 and NEON: four 6 x 16 blocks; SIMD128:
 *     eight 6 x 8) over 64-column panels
 *     of op(B) packed on the stack (kc x 64, re-used by every row of A), A
 *     read in place; gemm_panels: the same on op(B) packed once for all
 *     the steps of a recurrence (the weights do not change during it).  Inside a row-parallel recurrence it is the only fast
 *     product (OpenBLAS's own threads are not called from inside a team).
 * Every function returns 1 when it did the product and 0 when it cannot on
 * this CPU or for these arguments (the caller then uses BLAS or the portable
 * kernel); the choice is made at run time (__builtin_cpu_supports on
 * x86-64, getauxval's hardware capabilities on aarch64 Linux), so one
 * libcellrt serves every CPU of its architecture (a WebAssembly build has
 * SIMD128 or not, fixed when it is compiled).  The isa argument forces
 * one instruction set, so that the unit tests compare each with the
 * reference on the CPUs that have it (rt_kern_has).  Results differ from the
 * reference only by the order of the float additions.
 *
 * Legend as in cellrt.h: row-major, C[M,N] = op(A)[M,K] op(B)[K,N]; B stored
 * [N,K] when transB; lda/ldb/ldc row strides in elements; beta == 0: C is
 * not read.
 */
#ifndef RT_KERN_H
#define RT_KERN_H

#include <stdint.h>

#include "cellrt.h" /* RT_BF16_SPLIT_KMAX */

/* The instruction sets with kernels of their own:
 *   x86-64: AVX2 (with FMA), AVX-512 (F), VNNI (AVX-512 VNNI, VL, BW: the
 *     int8 GEMV), BF16 (AVX512-BF16: the bfloat16 GEMV on RT_BF16_PAIRS);
 *   aarch64: NEON (Advanced SIMD, every aarch64 CPU: all float32 kernels,
 *     the bfloat16 GEMV on RT_BF16_SHIFT, the int8 GEMV), DOTPROD (SDOT:
 *     the int8 GEMV), BFDOT (BFDOT: the bfloat16 GEMV on RT_BF16_PAIRS);
 *   Arm M profile (rt_kern_m.h; chosen at compile time, from the core the
 *     build targets): MFP (a single-precision FPU with VFMA, Cortex-M4F and
 *     M7: the float32 GEMVs, plain and packed; no GEMM micro-kernel), DSP
 *     (the DSP extension's SMLAD: the int8 GEMV);
 *   wasm32: SIMD128 (WebAssembly's 128-bit SIMD, in a build with
 *     -msimd128: all float32 kernels, the bfloat16 GEMV on RT_BF16_SHIFT,
 *     the int8 GEMV). */
enum {
	RT_ISA_NONE = 0,
	RT_ISA_AVX2 = 1, RT_ISA_AVX512 = 2, RT_ISA_VNNI = 3, RT_ISA_BF16 = 4,
	RT_ISA_NEON = 5, RT_ISA_DOTPROD = 6, RT_ISA_BFDOT = 7,
	RT_ISA_MFP = 8, RT_ISA_DSP = 9,
	RT_ISA_SIMD128 = 10,
	RT_ISA_COUNT = 11
};

/* The best instruction set of this CPU that the float32 kernels use
 * (RT_ISA_AVX512, AVX2, NEON, MFP, SIMD128 or NONE). */
int rt_kern_isa(void);
/* The same for the int8 kernel: RT_ISA_VNNI (AVX-512 with VNNI, VL and BW),
 * RT_ISA_DOTPROD or RT_ISA_DSP where the CPU has it, else rt_kern_isa(). */
int rt_kern_isa_i8(void);
/* The instruction set of the bfloat16 kernel on RT_BF16_PAIRS of this CPU:
 * RT_ISA_BF16, RT_ISA_BFDOT, or RT_ISA_NONE (then RT_BF16_SHIFT is its
 * layout). */
int rt_kern_isa_bf16(void);
/* Whether this CPU runs the kernels of isa (RT_ISA_NONE: always). */
int rt_kern_has(int isa);

/* bias: NULL, or a row vector [N] that replaces C in the sum:
 * C[i, j] = alpha (op(A) op(B))[i, j] + beta bias[j] (C not read). */

/* c[n] = alpha sum_k a[k] op(B)[k, n] + beta c[n], a contiguous. */
int rt_kern_gemv(int isa, int transB, int64_t N, int64_t K, float alpha, const float *a,
		 const float *B, int64_t ldb, float beta, const float *bias, float *c);

int rt_kern_gemm(int isa, int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		 const float *A, int64_t lda, const float *B, int64_t ldb, float beta, const float *bias,
		 float *C, int64_t ldc);

/* The GEMM's panels of op(B) are RT_PANEL_NR columns wide, and its
 * micro-kernels make RT_PANEL_MR rows of C at a time. */
enum { RT_PANEL_MR = 6, RT_PANEL_NR = 64 };

/* The GEMM on op(B) packed once: rt_kern_pack_panels writes every panel
 * gemm would pack (64 columns by K rows, zero past N) into P, which holds
 * rt_kern_panels_size(N, K) floats, 64-byte aligned; rt_kern_gemm_panels
 * then multiplies by it without packing.  Both return 0 without a kernel;
 * rt_kern_gemm_panels also where rt_kern_gemm multiplies M rows without
 * panels (rt_kern_gemm_packs 0: SIMD128, at most 4 rows, rt_kern_v128.h),
 * so that a product of weights packed once and one packed per call (the
 * caller's rt_sgemm when this returns 0) give the same bits. */
int rt_kern_gemm_packs(int isa, int64_t M, int64_t K);
int64_t rt_kern_panels_size(int64_t N, int64_t K);
int rt_kern_pack_panels(int isa, int transB, int64_t N, int64_t K, const float *B, int64_t ldb, float *P);
int rt_kern_gemm_panels(int isa, int transA, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			int64_t lda, const float *P, float beta, const float *bias, float *C, int64_t ldc);

/* Rows [r0, r1) of a product with one row on weights packed by
 * rt_gemv_pack (cellrt.h): blocks of RT_PACK_W rows, each stored [K][w]. */
enum { RT_PACK_W = 256 };
int rt_kern_gemv_packed(int isa, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const float *a,
			const float *P, float beta, const float *bias, float *c);
/* The same on bfloat16 weights packed by rt_gemv_pack_bf16, in one of two
 * layouts, whose number P[0] holds (RT_BF16_HEAD elements come before the
 * blocks; rt_gemv_pack_bf16 takes the layout of this CPU's kernel):
 *   RT_BF16_SHIFT: each block's rows padded to wp = a multiple of 16, each
 *     group of 16 stored as 8 pairs whose 32-bit word i holds row i in its
 *     low half and row i + 8 in its high half, so that a shift and a mask
 *     widen a whole group to two float32 vectors (AVX2; chunks of 64 rows
 *     stored one after the other, read in order, measured slower);
 *   RT_BF16_PAIRS: K padded to even, each pair of columns (k, k + 1) stored
 *     as wp words holding row j's weight at k (low half) and at k + 1 (high
 *     half): the operand of AVX512-BF16's vdpbf16ps, which multiplies them
 *     by the activations split into two bfloat16 parts, a = hi + lo (the
 *     products exact, the sums in float32, the activations to 16 bits).
 * isa RT_ISA_BF16 and RT_ISA_BFDOT (Arm's BFDOT, the same sums by pairs)
 * take RT_BF16_PAIRS, RT_ISA_AVX2, AVX512 and NEON the other; 0 when the
 * layout is not the isa's. */
enum { RT_BF16_SHIFT = 0, RT_BF16_PAIRS = 1, RT_BF16_HEAD = 32, RT_BF16_PAIRS_KMAX = RT_BF16_SPLIT_KMAX };
/* The layout the bf16 GEMV reads best on this CPU: RT_BF16_PAIRS with
 * AVX512-BF16 or Arm's BF16 (and K up to RT_BF16_PAIRS_KMAX), else
 * RT_BF16_SHIFT. */
int rt_kern_bf16_layout(int64_t K);
int rt_kern_gemv_packed_bf16(int isa, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha,
			     const float *a, const uint16_t *P, float beta, const float *bias, float *c);
/* Its RT_BF16_PAIRS path in two halves, for several calls on the same a:
 * rt_kern_split_bf16 writes a's high and low bfloat16 parts as words of two
 * (xs[0, Kh) the high, xs[Kh, 2 Kh) the low, Kh = (K + 1) / 2, the pad 0);
 * rt_kern_gemv_pairs makes rows [r0, r1) from them.  Both return 0 (and do
 * nothing) where this CPU or P does not take RT_BF16_PAIRS. */
int rt_kern_split_bf16(int64_t K, const float *a, uint32_t *xs);
int rt_kern_gemv_pairs(int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha, const uint32_t *xs,
		       const uint16_t *P, float beta, const float *bias, float *c);
/* Block n0's width w, padded width wp and first element in P. */
static inline void rt_bf16_block(int layout, int64_t N, int64_t K, int64_t n0, int64_t *w, int64_t *wp,
				 int64_t *off)
{
	*w = N - n0 < RT_PACK_W ? N - n0 : RT_PACK_W;
	*wp = (*w + 15) / 16 * 16;
	/* the blocks before are full: RT_PACK_W is a multiple of 16 */
	*off = RT_BF16_HEAD + n0 * (layout == RT_BF16_PAIRS ? (K + 1) / 2 * 2 : K);
}
/* Where weight (k, j) of a block (row j of its wp) is, from the block's start. */
static inline int64_t rt_bf16_index(int layout, int64_t wp, int64_t k, int64_t j)
{
	if (layout == RT_BF16_PAIRS)
		return k / 2 * wp * 2 + j * 2 + k % 2;
	int64_t t = j % 16;
	return k * wp + j / 16 * 16 + (t < 8 ? 2 * t : 2 * (t - 8) + 1);
}
/* rt_gemv_pack_bf16 in a given layout (the unit tests pack both). */
void rt_gemv_pack_bf16_layout(int layout, int transB, int64_t N, int64_t K, const float *B, int64_t ldb,
			      uint16_t *P);

/* The same on int8 weights packed by rt_gemv_pack_i8, on activations qa
 * quantized by rt_quant_act_u7 (Kq = (K + 3) / 4 groups of 4, the padding
 * 0) with scale sa and zero point zp.  P: rt_i8_head bytes of scales
 * (float [N]) and row sums (int32 [N]), then each block's rows padded to
 * wp = a multiple of 8, stored for each group of 4 columns as wp runs of 4
 * bytes (rt_i8_block, rt_i8_index): one 32-byte load is 8 rows by 4
 * columns, which vpmaddubsw and vpmaddwd (isa RT_ISA_AVX2 or AVX512) or
 * vpdpbusd (RT_ISA_VNNI) reduce to 8 int32 sums, as SMULL and SADALP
 * (RT_ISA_NEON) or SDOT (RT_ISA_DOTPROD) do with two 16-byte loads: the
 * same exact sums. */
int rt_kern_gemv_packed_i8(int isa, int64_t r0, int64_t r1, int64_t N, int64_t K, float alpha,
			   const uint8_t *qa, float sa, int32_t zp, const int8_t *P, float beta, const float *bias,
			   float *c);
/* rt_quant_act_u7 vectorised, the same results; 0 (nothing written) when
 * this CPU has no kernel or a holds a NaN or an infinity. */
int rt_kern_quant_act_u7(int isa, int64_t K, const float *a, uint8_t *q, int32_t *zp, float *scale);
static inline int64_t rt_i8_head(int64_t N)
{
	return (8 * N + 63) / 64 * 64;
}
static inline void rt_i8_block(int64_t N, int64_t K, int64_t n0, int64_t *w, int64_t *wp, int64_t *off)
{
	*w = N - n0 < RT_PACK_W ? N - n0 : RT_PACK_W;
	*wp = (*w + 7) / 8 * 8;
	*off = rt_i8_head(N) + n0 * ((K + 3) / 4 * 4);  /* the blocks before are full */
}
static inline int64_t rt_i8_index(int64_t wp, int64_t k, int64_t j)
{
	return k / 4 * wp * 4 + j * 4 + k % 4;
}

#endif
