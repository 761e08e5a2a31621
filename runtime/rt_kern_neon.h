/* rt_kern_neon.h: the NEON kernels of rt_kern.c on aarch64, included by it
 * (only there) after its shared definitions; every function is static.
 *
 * Advanced SIMD is part of every aarch64 CPU, so the float32 kernels need no
 * target attribute: the GEMV (8 rows of B [N,K] at a time, or 32 columns
 * of B [K,N]), the packed GEMV (up to 64 columns of a block per pass), the
 * GEMM micro-kernel (a 6 x 16 block in 24 of the 32 vector registers, four
 * per panel of 64 columns) and the bfloat16 GEMV on RT_BF16_SHIFT (a shift
 * and a mask widen each word's two weights, as AVX2 does).  The extensions
 * are chosen at run time (rt_kern.c asks getauxval):
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

/* r[0..4) = alpha s + beta (bias[0..4), or r itself; beta == 0: r not read) */
NEON_INLINE void put4(float *r, const float *bias, float32x4_t s, float alpha, float beta)
{
	float32x4_t y = vmulq_n_f32(s, alpha);
	if (bias)
		y = vfmaq_n_f32(y, vld1q_f32(bias), beta);
	else if (beta != 0.0f)
		y = vfmaq_n_f32(y, vld1q_f32(r), beta);
	vst1q_f32(r, y);
}

/* ---- GEMV, B stored [N,K]: eight dot products of rows of B with a at once ---- */

static void gemv_t_neon(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
			const float *bias, float *c)
{
	const int64_t kv = K & ~(int64_t)3;
	int64_t n = 0;
	for (; n + 8 <= N; n += 8) {
		const float *b = B + n * ldb;
		float32x4_t acc[8];
		for (int r = 0; r < 8; r++)
			acc[r] = vdupq_n_f32(0.0f);
		for (int64_t k = 0; k < kv; k += 4) {
			float32x4_t x = vld1q_f32(a + k);
			for (int r = 0; r < 8; r++)
				acc[r] = vfmaq_f32(acc[r], vld1q_f32(b + r * ldb + k), x);
		}
		/* pairwise sums: lane r of s[h] is row 4 h + r's dot product */
		float32x4_t s[2] = {vpaddq_f32(vpaddq_f32(acc[0], acc[1]), vpaddq_f32(acc[2], acc[3])),
				    vpaddq_f32(vpaddq_f32(acc[4], acc[5]), vpaddq_f32(acc[6], acc[7]))};
		if (kv < K) {
			float t[8];
			rows_tail(8, b, ldb, a, kv, K, t);
			s[0] = vaddq_f32(s[0], vld1q_f32(t));
			s[1] = vaddq_f32(s[1], vld1q_f32(t + 4));
		}
		for (int h = 0; h < 2; h++)
			put4(c + n + 4 * h, bias ? bias + n + 4 * h : NULL, s[h], alpha, beta);
	}
	for (; n < N; n++) {
		const float *b = B + n * ldb;
		float32x4_t acc = vdupq_n_f32(0.0f);
		for (int64_t k = 0; k < kv; k += 4)
			acc = vfmaq_f32(acc, vld1q_f32(b + k), vld1q_f32(a + k));
		float s = vaddvq_f32(acc);
		for (int64_t k = kv; k < K; k++)
			s += b[k] * a[k];
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- GEMV, B stored [K,N]: c = sum_k a[k] B[k,:], 32 columns at once ---- */

static void gemv_n_neon(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
			const float *bias, float *c)
{
	int64_t n = 0;
	for (; n + 32 <= N; n += 32) {
		float32x4_t acc[8];
		for (int v = 0; v < 8; v++)
			acc[v] = vdupq_n_f32(0.0f);
		for (int64_t k = 0; k < K; k++) {
			float32x4_t x = vdupq_n_f32(a[k]);
			const float *b = B + k * ldb + n;
			for (int v = 0; v < 8; v++)
				acc[v] = vfmaq_f32(acc[v], vld1q_f32(b + 4 * v), x);
		}
		for (int v = 0; v < 8; v++)
			put4(c + n + 4 * v, bias ? bias + n + 4 * v : NULL, acc[v], alpha, beta);
	}
	for (; n + 4 <= N; n += 4) {
		float32x4_t acc = vdupq_n_f32(0.0f);
		for (int64_t k = 0; k < K; k++)
			acc = vfmaq_f32(acc, vld1q_f32(B + k * ldb + n), vdupq_n_f32(a[k]));
		put4(c + n, bias ? bias + n : NULL, acc, alpha, beta);
	}
	for (; n < N; n++) {
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s += a[k] * B[k * ldb + n];
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- GEMM: the micro-kernel over a packed panel of op(B) (rt_kern.c) ---- */

/* C[r, 0..n) for r < mr (row stride ldc) from a tile t (row stride tw) of
 * sums: alpha t + beta C, or alpha t + beta bias when bias is set, or
 * alpha t (beta == 0: C not read) when first; C + alpha t otherwise (a later
 * panel of the K dimension): micro's epilogue, as x86's micro-kernels do it. */
static void tile_put(const float *t, int64_t tw, int mr, int64_t n, const float *bias, float *C, int64_t ldc,
		     float alpha, float beta, int first)
{
	for (int r = 0; r < mr; r++) {
		float *c = C + r * ldc;
		const float *s = t + r * tw;
		if (!first)
			for (int64_t j = 0; j < n; j++)
				c[j] += alpha * s[j];
		else
			for (int64_t j = 0; j < n; j++)
				c[j] = put1(c[j], bias ? bias + j : NULL, s[j], alpha, beta);
	}
}

/* t[r][0..16) = sum_k A[r, k] bp[k][0..16) for the 6 rows ar[r]: 24
 * accumulators, four vectors of the panel's row, one broadcast. */
NEON_INLINE void block_6x16_neon(int64_t kc, const float *const *ar, int64_t aks, const float *bp, float *t)
{
	float32x4_t acc[MR][4];
	for (int r = 0; r < MR; r++)
		for (int v = 0; v < 4; v++)
			acc[r][v] = vdupq_n_f32(0.0f);
	for (int64_t k = 0; k < kc; k++) {
		const float *b = bp + k * NR;
		float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8), b3 = vld1q_f32(b + 12);
		for (int r = 0; r < MR; r++) {
			float32x4_t x = vld1q_dup_f32(ar[r] + k * aks);
			acc[r][0] = vfmaq_f32(acc[r][0], b0, x);
			acc[r][1] = vfmaq_f32(acc[r][1], b1, x);
			acc[r][2] = vfmaq_f32(acc[r][2], b2, x);
			acc[r][3] = vfmaq_f32(acc[r][3], b3, x);
		}
	}
	for (int r = 0; r < MR; r++)
		for (int v = 0; v < 4; v++)
			vst1q_f32(t + 16 * r + 4 * v, acc[r][v]);
}

/* C[0..mr, 0..nr) of one panel as four 6 x 16 blocks, each reading the same
 * rows of A; the epilogue (tile_put) as micro's. */
static void micro_neon(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *bp, const float *bias,
		       float *C, int64_t ldc, int mr, int64_t nr, float alpha, float beta, int first)
{
	const float *ar[MR];
	float t[MR * 16];
	for (int r = 0; r < MR; r++)
		ar[r] = a + (r < mr ? r : 0) * ars;     /* missing rows read row 0, never stored */
	for (int64_t c0 = 0; c0 < nr; c0 += 16) {
		block_6x16_neon(kc, ar, aks, bp + c0, t);
		tile_put(t, 16, mr, nr - c0 < 16 ? nr - c0 : 16, bias ? bias + c0 : NULL, C + c0, ldc, alpha, beta,
			 first);
	}
}

/* ---- GEMV on packed weights (rt_gemv_pack): one block's columns ---- */

/* NV vectors of columns p[0..4 NV) of a block with row stride w. */
NEON_INLINE void pk_chunk_neon(const int NV, int64_t K, const float *a, const float *p, int64_t w, float alpha,
			       float beta, const float *bias, float *c)
{
	float32x4_t acc[16];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++)
		acc[v] = vdupq_n_f32(0.0f);
	for (int64_t k = 0; k < K; k++, p += w) {
		float32x4_t x = vld1q_dup_f32(a + k);
		_Pragma("GCC unroll 16")
		for (int v = 0; v < NV; v++)
			acc[v] = vfmaq_f32(acc[v], vld1q_f32(p + 4 * v), x);
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++)
		put4(c + 4 * v, bias ? bias + 4 * v : NULL, acc[v], alpha, beta);
}

/* cols columns: 64 at a time, then the last whole vectors; the last
 * cols % 4 one by one (a load past them could leave the block's end). */
static void gemv_packed_neon(int64_t cols, int64_t K, const float *a, const float *p, int64_t w, float alpha,
			     float beta, const float *bias, float *c)
{
	int64_t whole = cols / 4 * 4;
	for (int64_t j = 0; j < whole; j += 64) {
		int nv = (int)((whole - j) / 4 < 16 ? (whole - j) / 4 : 16);
		const float *bj = bias ? bias + j : NULL;
		switch (nv) {
#define PK_CASE(NV) case NV: pk_chunk_neon(NV, K, a, p + j, w, alpha, beta, bj, c + j); break;
		PK_CASE(1) PK_CASE(2) PK_CASE(3) PK_CASE(4) PK_CASE(5) PK_CASE(6) PK_CASE(7) PK_CASE(8)
		PK_CASE(9) PK_CASE(10) PK_CASE(11) PK_CASE(12) PK_CASE(13) PK_CASE(14) PK_CASE(15) PK_CASE(16)
#undef PK_CASE
		default: break;
		}
	}
	for (int64_t j = whole; j < cols; j++) {
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s += a[k] * p[k * w + j];
		c[j] = put1(c[j], bias ? bias + j : NULL, s, alpha, beta);
	}
}

/* ---- bfloat16, RT_BF16_SHIFT: NG groups of 16 rows; word i of a group
 * holds row i (low half: shifted up) and row i + 8 (high half: masked) ---- */
NEON_INLINE void pk_bf16_chunk_neon(const int NG, int64_t K, const float *a, const uint16_t *p, int64_t wp,
				    float *sum)
{
	const uint32x4_t hi = vdupq_n_u32(0xffff0000u);
	float32x4_t acc[16];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 4 * NG; v++)
		acc[v] = vdupq_n_f32(0.0f);
	for (int64_t k = 0; k < K; k++, p += wp) {
		float32x4_t x = vld1q_dup_f32(a + k);
		_Pragma("GCC unroll 4")
		for (int q = 0; q < NG; q++) {
			uint32x4_t u0 = vreinterpretq_u32_u16(vld1q_u16(p + 16 * q));
			uint32x4_t u1 = vreinterpretq_u32_u16(vld1q_u16(p + 16 * q + 8));
			acc[4 * q] = vfmaq_f32(acc[4 * q], vreinterpretq_f32_u32(vshlq_n_u32(u0, 16)), x);
			acc[4 * q + 1] = vfmaq_f32(acc[4 * q + 1], vreinterpretq_f32_u32(vshlq_n_u32(u1, 16)), x);
			acc[4 * q + 2] = vfmaq_f32(acc[4 * q + 2], vreinterpretq_f32_u32(vandq_u32(u0, hi)), x);
			acc[4 * q + 3] = vfmaq_f32(acc[4 * q + 3], vreinterpretq_f32_u32(vandq_u32(u1, hi)), x);
		}
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 4 * NG; v++)
		vst1q_f32(sum + 4 * v, acc[v]);
}

CHUNKS(, bf16_chunk_neon, pk_bf16_chunk_neon, float, uint16_t, float, CASES4)

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

/* ---- int8: NG groups of 8 rows, each 16-byte load 4 rows by 4 columns ---- */

/* the four activations of column group kq in every 32-bit lane */
NEON_INLINE int8x16_t x4_dup(const uint8_t *qa, int64_t kq)
{
	uint32_t x4;
	memcpy(&x4, qa + 4 * kq, sizeof x4);
	return vreinterpretq_s8_u32(vdupq_n_u32(x4));
}

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
		int8x16_t x = x4_dup(qa, kq);
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

/* The baseline: SMULL multiplies 8 weights (two rows' four) by the four
 * activations twice over into int16 (at most 127 * 127), SADALP adds their
 * pairs into int32 lanes, and a last pairwise add makes each row's sum:
 * exact.  At most 4 groups a pass (16 accumulators). */
NEON_INLINE void pk_i8_neon4(const int NG, int64_t Kq, const uint8_t *qa, const int8_t *p, int64_t wp,
			     int32_t *sum)
{
	int32x4_t acc[16];      /* vector v's rows 0, 1 in acc[2 v], rows 2, 3 in acc[2 v + 1] */
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 4 * NG; v++)
		acc[v] = vdupq_n_s32(0);
	for (int64_t kq = 0; kq < Kq; kq++, p += 4 * wp) {
		int8x16_t x = x4_dup(qa, kq);
		_Pragma("GCC unroll 8")
		for (int v = 0; v < 2 * NG; v++) {
			int8x16_t wv = vld1q_s8(p + 16 * v);
			acc[2 * v] = vpadalq_s16(acc[2 * v], vmull_s8(vget_low_s8(wv), vget_low_s8(x)));
			acc[2 * v + 1] = vpadalq_s16(acc[2 * v + 1], vmull_high_s8(wv, x));
		}
	}
	_Pragma("GCC unroll 8")
	for (int v = 0; v < 2 * NG; v++)
		vst1q_s32(sum + 4 * v, vpaddq_s32(acc[2 * v], acc[2 * v + 1]));
}

NEON_INLINE void pk_i8_neon(const int NG, int64_t Kq, const uint8_t *qa, const int8_t *p, int64_t wp, int32_t *sum)
{
	pk_i8_neon4(NG < 4 ? NG : 4, Kq, qa, p, wp, sum);
	if (NG > 4)
		pk_i8_neon4(NG - 4, Kq, qa, p + 128, wp, sum + 32);
}

CHUNKS(, i8_chunk_neon, pk_i8_neon, uint8_t, int8_t, int32_t, CASES8)

/* rt_quant_act_u7 (cellrt.h) four at a time, with the same results: the
 * minimum and maximum do not depend on the order, FRINTN rounds as
 * nearbyintf does, and a NaN or an infinity is left to the scalar code. */
static int quant_act_u7_neon(int64_t K, const float *a, uint8_t *q, int32_t *zp, float *scale)
{
	float32x4_t lo = vdupq_n_f32(0.0f), hi = lo, bad = lo;
	int64_t k = 0;
	for (; k + 4 <= K; k += 4) {
		float32x4_t v = vld1q_f32(a + k);
		lo = vminq_f32(lo, v);
		hi = vmaxq_f32(hi, v);
		bad = vaddq_f32(bad, vmulq_n_f32(v, 0.0f));
	}
	float mn = vminvq_f32(lo), mx = vmaxvq_f32(hi), nb = vaddvq_f32(bad);
	if (!u7_range_tail(k, K, a, &mn, &mx, nb))
		return 0;
	float inv, z;
	u7_params(mn, mx, &inv, &z, zp, scale);
	const float32x4_t v0 = vdupq_n_f32(0.0f), v127 = vdupq_n_f32(127.0f);
	for (k = 0; k + 16 <= K; k += 16) {
		uint16x4_t w[4];
		for (int j = 0; j < 4; j++) {
			float32x4_t v = vrndnq_f32(vmulq_n_f32(vld1q_f32(a + k + 4 * j), inv));
			v = vminq_f32(vmaxq_f32(vaddq_f32(v, vdupq_n_f32(z)), v0), v127);
			w[j] = vmovn_u32(vcvtq_u32_f32(v));
		}
		vst1q_u8(q + k, vcombine_u8(vmovn_u16(vcombine_u16(w[0], w[1])), vmovn_u16(vcombine_u16(w[2], w[3]))));
	}
	u7_tail(k, K, a, inv, z, q);
	return 1;
}

/* dst[i * NR + r] = src[r * ldb + i] for r, i < 8 (pack_panel): four 4 x 4
 * blocks, each transposed by two rounds of TRN1/TRN2. */
NEON_INLINE void transpose8(const float *src, int64_t ldb, float *dst)
{
	for (int rb = 0; rb < 8; rb += 4)
		for (int ib = 0; ib < 8; ib += 4) {
			const float *s = src + rb * ldb + ib;
			float32x4_t r0 = vld1q_f32(s), r1 = vld1q_f32(s + ldb);
			float32x4_t r2 = vld1q_f32(s + 2 * ldb), r3 = vld1q_f32(s + 3 * ldb);
			float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
			float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
			float *d = dst + ib * NR + rb;
			vst1q_f32(d, vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2))));
			vst1q_f32(d + NR, vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3))));
			vst1q_f32(d + 2 * NR,
				  vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2))));
			vst1q_f32(d + 3 * NR,
				  vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3))));
		}
}

#endif
