/* rt_kern_m.h: the kernels of rt_kern.c for Arm's M profile (Cortex-M4F,
 * M7: no vector unit), included by it (only there) after its shared
 * definitions; every function is static.  What the compiler is told the
 * core has decides, at compile time (a microcontroller's firmware is built
 * for its core; there is nothing to ask at run time):
 *   RT_ISA_MFP (a single-precision FPU with fused multiply-add: FPv4-SP,
 *     FPv5): the float32 GEMV on B [N,K] (four rows at a time, one load of
 *     a[k] for four VFMAs), on B [K,N] and on weights packed by
 *     rt_gemv_pack (eight columns at a time, the sums in eight of the 32
 *     single-precision registers: each weight loaded once, no store until
 *     the end).  The portable kernel's axpy form loads and stores c at every
 *     k, and its dot products load a[k] once per row; these do neither;
 *   RT_ISA_DSP (the DSP extension: SMLAD, two 16 x 16-bit products added to
 *     a 32-bit sum in one instruction): the int8 GEMV.  SXTB16 widens the
 *     even and the odd bytes of a word of four weights to two pairs of
 *     int16, UXTB16 those of four 7-bit activations, and two SMLADs add the
 *     four products to the row's int32 sum: at most 127 * 127 each, so the
 *     sums are exact and equal the portable loop's (the same bits).
 * Legend as in rt_kern.h.
 */
#ifndef RT_KERN_M_H
#define RT_KERN_M_H

#ifdef RT_KERN_MFP

/* ---- GEMV, B stored [N,K]: four dot products of rows of B with a at once ---- */

static void gemv_t_m(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
		     const float *bias, float *c)
{
	int64_t n = 0;
	for (; n + 4 <= N; n += 4) {
		const float *b0 = B + n * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
		float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
		for (int64_t k = 0; k < K; k++) {
			float x = a[k];
			s0 = __builtin_fmaf(b0[k], x, s0);
			s1 = __builtin_fmaf(b1[k], x, s1);
			s2 = __builtin_fmaf(b2[k], x, s2);
			s3 = __builtin_fmaf(b3[k], x, s3);
		}
		const float *bi = bias ? bias + n : NULL;
		c[n] = put1(c[n], bi, s0, alpha, beta);
		c[n + 1] = put1(c[n + 1], bi ? bi + 1 : NULL, s1, alpha, beta);
		c[n + 2] = put1(c[n + 2], bi ? bi + 2 : NULL, s2, alpha, beta);
		c[n + 3] = put1(c[n + 3], bi ? bi + 3 : NULL, s3, alpha, beta);
	}
	for (; n < N; n++) {
		const float *b = B + n * ldb;
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s = __builtin_fmaf(b[k], a[k], s);
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- c[j] = sum_k a[k] b[k * ldb + j]: B stored [K,N], or a packed block ([K][w]) ---- */

/* columns [0, cols) of such a product, eight at a time (the sums in
 * registers), then one at a time */
static void cols_m(int64_t cols, int64_t K, const float *a, const float *b, int64_t ldb, float alpha, float beta,
		   const float *bias, float *c)
{
	int64_t j = 0;
	for (; j + 8 <= cols; j += 8) {
		float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
		const float *bk = b + j;
		for (int64_t k = 0; k < K; k++, bk += ldb) {
			float x = a[k];
			_Pragma("GCC unroll 8")
			for (int v = 0; v < 8; v++)
				s[v] = __builtin_fmaf(bk[v], x, s[v]);
		}
		_Pragma("GCC unroll 8")
		for (int v = 0; v < 8; v++)
			c[j + v] = put1(c[j + v], bias ? bias + j + v : NULL, s[v], alpha, beta);
	}
	for (; j < cols; j++) {
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s = __builtin_fmaf(b[k * ldb + j], a[k], s);
		c[j] = put1(c[j], bias ? bias + j : NULL, s, alpha, beta);
	}
}

static void gemv_n_m(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
		     const float *bias, float *c)
{
	cols_m(N, K, a, B, ldb, alpha, beta, bias, c);
}

/* the packed GEMV's kernel on one block's columns (packed_fn) */
static void gemv_packed_m(int64_t cols, int64_t K, const float *a, const float *p, int64_t w, float alpha,
			  float beta, const float *bias, float *c)
{
	cols_m(cols, K, a, p, w, alpha, beta, bias, c);
}

#endif /* RT_KERN_MFP */

#ifdef RT_KERN_DSP

/* the even and the odd bytes of w as two pairs of int16: SXTB16, and
 * SXTB16 with its rotation of the operand by 8 (one instruction, which
 * the compiler does not make of __sxtb16 of a rotated word) */
static inline int32_t even_s8(uint32_t w)
{
	return __sxtb16((int32_t)w);
}

static inline int32_t odd_s8(uint32_t w)
{
	int32_t r;
	__asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(w));
	return r;
}

/* ng groups of 8 rows (i8_chunk_fn), four rows at a time: for each group of
 * four columns kq, the four activations widened once (UXTB16 of their even
 * and odd bytes) and each row's word of four weights multiplied by them
 * with two SMLADs.  Strides in 32 bits (Kq <= RT_I8_KMAX / 4), the loop
 * on pointers: what the core's registers hold. */
static void i8_chunk_dsp(int ng, int64_t Kq, const void *x, const int8_t *p, int64_t wp, int32_t *sum)
{
	const uint8_t *qa = x, *qe = qa + 4 * (int)Kq;
	const int step = 4 * (int)wp;
	for (int r = 0; r < 8 * ng; r += 4) {
		int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
		const int8_t *q = p + 4 * r;
		for (const uint8_t *xq = qa; xq < qe; xq += 4, q += step) {
			uint32_t x4, w0, w1, w2, w3;
			memcpy(&x4, xq, sizeof x4);
			memcpy(&w0, q, sizeof w0);
			memcpy(&w1, q + 4, sizeof w1);
			memcpy(&w2, q + 8, sizeof w2);
			memcpy(&w3, q + 12, sizeof w3);
			int32_t xe = (int32_t)__uxtb16(x4), xo = (int32_t)__uxtb16(x4 >> 8);
			s0 = __smlad(odd_s8(w0), xo, __smlad(even_s8(w0), xe, s0));
			s1 = __smlad(odd_s8(w1), xo, __smlad(even_s8(w1), xe, s1));
			s2 = __smlad(odd_s8(w2), xo, __smlad(even_s8(w2), xe, s2));
			s3 = __smlad(odd_s8(w3), xo, __smlad(even_s8(w3), xe, s3));
		}
		sum[r] = s0;
		sum[r + 1] = s1;
		sum[r + 2] = s2;
		sum[r + 3] = s3;
	}
}

#endif /* RT_KERN_DSP */

#endif
