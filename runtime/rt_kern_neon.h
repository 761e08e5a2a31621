/* rt_kern_neon.h: NEON on aarch64 for rt_kern.c, included by it (only
 * there) after its shared definitions: the primitives of the kernels that
 * NEON and SIMD128 share (rt_kern_v128.h, which lists them) and the kernels
 * of NEON's extensions; every function is static.
 *
 * Advanced SIMD is part of every aarch64 CPU, so the float32 kernels need no
 * target attribute: the GEMV (8 rows of B [N,K] at a time, or 32 columns
 * of B [K,N]), the packed GEMV (up to 64 columns of a block per pass), the
 * GEMM micro-kernel (a 6 x 16 block in 24 of the 32 vector registers, four
 * per panel of 64 columns), the bfloat16 GEMV on RT_BF16_SHIFT (a shift
 * and a mask widen each word's two weights, as AVX2 does; up to 4 groups, 16
 * accumulators, a pass) and the int8 GEMV (SMULL multiplies 8 weights by
 * the four activations twice over into int16, SADALP adds their pairs into
 * int32 lanes; 4 groups a pass): rt_kern_v128.h over the primitives below.
 * The extensions are chosen at run time (rt_kern.c asks getauxval):
 *   RT_ISA_DOTPROD (SDOT, Armv8.2 FEAT_DotProd): the int8 GEMV sums four
 *     int8 products per lane in one instruction, where the baseline needs
 *     a widening multiply (SMULL) and a pairwise add (SADALP); the 7-bit
 *     activations are valid signed bytes, so both give the same exact sums;
 *   RT_ISA_BFDOT (BFDOT, Armv8.6 FEAT_BF16): the bfloat16 GEMV on
 *     RT_BF16_PAIRS, the layout of AVX512-BF16's vdpbf16ps, with the same
 *     split of the activations into high and low bfloat16 parts.  (BFMMLA
 *     multiplies 2 x 4 by 4 x 2 blocks: with one row of activations half of
 *     its work would be thrown away, so the batch-1 step uses BFDOT.)
 */
#ifndef RT_KERN_NEON_H
#define RT_KERN_NEON_H

#define NEON_INLINE static inline __attribute__((always_inline))
#define V4_INLINE NEON_INLINE

/* ---- the primitives of rt_kern_v128.h ---- */

typedef float32x4_t v4f;
typedef uint32x4_t v4u;
typedef int32x4_t v4i;
typedef int8x16_t v16b;

/* the blocking (rt_kern_v128.h): for 32 vector registers */
#define V128_MICRO_NV 4
#define V128_PACK_NV 16
#define V128_BF16_NG 4
#define V128_I8_NG 4
#define V128_FEW_ROWS 0

V4_INLINE v4f v4_zero(void) { return vdupq_n_f32(0.0f); }
V4_INLINE v4f v4_load(const float *p) { return vld1q_f32(p); }
V4_INLINE void v4_store(float *p, v4f v) { vst1q_f32(p, v); }
V4_INLINE v4f v4_dup(float x) { return vdupq_n_f32(x); }
V4_INLINE v4f v4_load_dup(const float *p) { return vld1q_dup_f32(p); }
V4_INLINE v4f v4_add(v4f a, v4f b) { return vaddq_f32(a, b); }
V4_INLINE v4f v4_mul_n(v4f a, float s) { return vmulq_n_f32(a, s); }
V4_INLINE v4f v4_fma(v4f acc, v4f a, v4f b) { return vfmaq_f32(acc, a, b); }
V4_INLINE v4f v4_fma_n(v4f acc, v4f a, float s) { return vfmaq_n_f32(acc, a, s); }
V4_INLINE v4f v4_pairs(v4f a, v4f b) { return vpaddq_f32(a, b); }
V4_INLINE float v4_sum(v4f v) { return vaddvq_f32(v); }
V4_INLINE v4f v4_min(v4f a, v4f b) { return vminq_f32(a, b); }
V4_INLINE v4f v4_max(v4f a, v4f b) { return vmaxq_f32(a, b); }
V4_INLINE float v4_minv(v4f v) { return vminvq_f32(v); }
V4_INLINE float v4_maxv(v4f v) { return vmaxvq_f32(v); }
V4_INLINE v4f v4_round(v4f v) { return vrndnq_f32(v); }      /* FRINTN */

V4_INLINE void v4_store_u7(uint8_t *q, v4f w0, v4f w1, v4f w2, v4f w3)
{
	uint16x4_t h0 = vmovn_u32(vcvtq_u32_f32(w0)), h1 = vmovn_u32(vcvtq_u32_f32(w1));
	uint16x4_t h2 = vmovn_u32(vcvtq_u32_f32(w2)), h3 = vmovn_u32(vcvtq_u32_f32(w3));
	vst1q_u8(q, vcombine_u8(vmovn_u16(vcombine_u16(h0, h1)), vmovn_u16(vcombine_u16(h2, h3))));
}

/* two rounds of TRN1/TRN2: on 32-bit lanes, then on 64-bit halves */
V4_INLINE void v4_transpose(v4f *r)
{
	v4f t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
	v4f t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
	r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
	r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
	r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
	r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

V4_INLINE v4u u4_load16(const uint16_t *p) { return vreinterpretq_u32_u16(vld1q_u16(p)); }
V4_INLINE v4f v4_bf16_lo(v4u w) { return vreinterpretq_f32_u32(vshlq_n_u32(w, 16)); }
V4_INLINE v4f v4_bf16_hi(v4u w) { return vreinterpretq_f32_u32(vandq_u32(w, vdupq_n_u32(0xffff0000u))); }

V4_INLINE v16b b16_load(const int8_t *p) { return vld1q_s8(p); }
V4_INLINE v16b b16_dup4(const uint8_t *q)
{
	uint32_t x4;
	memcpy(&x4, q, sizeof x4);
	return vreinterpretq_s8_u32(vdupq_n_u32(x4));
}
V4_INLINE v4i i4_zero(void) { return vdupq_n_s32(0); }
V4_INLINE void i4_store(int32_t *p, v4i v) { vst1q_s32(p, v); }
/* SMULL (into int16: at most 127 * 127), then SADALP (pairs into int32) */
V4_INLINE v4i i4_madd_lo(v4i acc, v16b w, v16b x)
{
	return vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
}
V4_INLINE v4i i4_madd_hi(v4i acc, v16b w, v16b x) { return vpadalq_s16(acc, vmull_high_s8(w, x)); }
V4_INLINE v4i i4_pairs(v4i a, v4i b) { return vpaddq_s32(a, b); }

/* ---- the extensions' kernels ---- */

#ifdef RT_NEON_BFDOT
/* ---- bfloat16, RT_BF16_PAIRS: BFDOT multiplies a lane's two weights (the
 * pair of columns k, k + 1 of one row) by the pair's activation parts ---- */
TNEON_BF16 NEON_INLINE void pk_pairs2_neon(const int NG, int64_t Kh, const uint32_t *xs, const uint16_t *p,
					   int64_t wp, float *sum)
{
	/* the high and the low parts in accumulators of their own, as on x86 */
	float32x4_t acc[8], acl[8];
	_Pragma("GCC unroll 8")
	for (int v = 0; v < 4 * NG; v++)
		acc[v] = acl[v] = vdupq_n_f32(0.0f);
	for (int64_t kh = 0; kh < Kh; kh++, p += 2 * wp) {
		bfloat16x8_t h = vreinterpretq_bf16_u32(vdupq_n_u32(xs[kh]));
		bfloat16x8_t l = vreinterpretq_bf16_u32(vdupq_n_u32(xs[Kh + kh]));
		_Pragma("GCC unroll 8")
		for (int v = 0; v < 4 * NG; v++) {
			bfloat16x8_t wv = vreinterpretq_bf16_u16(vld1q_u16(p + 8 * v));
			acc[v] = vbfdotq_f32(acc[v], wv, h);
			acl[v] = vbfdotq_f32(acl[v], wv, l);
		}
	}
	_Pragma("GCC unroll 8")
	for (int v = 0; v < 4 * NG; v++)
		vst1q_f32(sum + 4 * v, vaddq_f32(acc[v], acl[v]));
}

/* up to 4 groups as passes of 2 (32 accumulators would be all the registers) */
TNEON_BF16 NEON_INLINE void pk_pairs_neon(const int NG, int64_t Kh, const uint32_t *xs, const uint16_t *p,
					  int64_t wp, float *sum)
{
	pk_pairs2_neon(NG < 2 ? NG : 2, Kh, xs, p, wp, sum);
	if (NG > 2)
		pk_pairs2_neon(NG - 2, Kh, xs, p + 64, wp, sum + 32);
}

CHUNKS(TNEON_BF16, pairs_chunk_neon, pk_pairs_neon, uint32_t, uint16_t, float, CASES4)
#endif

#ifdef RT_NEON_DOT
/* FEAT_DotProd: SDOT adds the four products of a lane to its int32 sum */
TNEON_DOT NEON_INLINE void pk_i8_dot(const int NG, int64_t Kq, const uint8_t *qa, const int8_t *p, int64_t wp,
				     int32_t *sum)
{
	int32x4_t acc[16];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 2 * NG; v++)
		acc[v] = vdupq_n_s32(0);
	for (int64_t kq = 0; kq < Kq; kq++, p += 4 * wp) {
		int8x16_t x = b16_dup4(qa + 4 * kq);
		_Pragma("GCC unroll 16")
		for (int v = 0; v < 2 * NG; v++)
			acc[v] = vdotq_s32(acc[v], vld1q_s8(p + 16 * v), x);
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 2 * NG; v++)
		vst1q_s32(sum + 4 * v, acc[v]);
}

CHUNKS(TNEON_DOT, i8_chunk_dot, pk_i8_dot, uint8_t, int8_t, int32_t, CASES8)
#endif

#endif
