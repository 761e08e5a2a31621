/* rt_kern_v128.h: the kernels of rt_kern.c for the instruction sets of four
 * floats a vector, NEON (aarch64) and SIMD128 (wasm32), written once over
 * the primitives that rt_kern_neon.h or rt_kern_wasm.h defines before it is
 * included (only by rt_kern.c, after its shared definitions; every function
 * is static).  Legend: see rt_kern.h.
 *
 * The primitives (V4_INLINE functions; v4f four floats, v4u four 32-bit
 * words, v4i four int32, v16b sixteen int8):
 *   v4_zero, v4_load, v4_store, v4_dup (x in every lane), v4_load_dup (*p
 *   in every lane), v4_add, v4_mul_n (times a scalar), v4_fma (acc + a b)
 *   and v4_fma_n (acc + a s): fused where the instruction set has it;
 *   v4_pairs(a, b) = [a0 + a1, a2 + a3, b0 + b1, b2 + b3]; v4_sum, v4_minv,
 *   v4_maxv of the lanes; v4_min, v4_max; v4_round (to nearest, ties to
 *   even, as nearbyintf); v4_store_u7 (16 values in [0, 127] as bytes, in
 *   order); v4_transpose (r[i] lane j becomes r[j] lane i);
 *   u4_load16 (8 uint16 as 4 words), v4_bf16_lo / v4_bf16_hi (each word's
 *   low / high bfloat16 widened to float32);
 *   b16_load, b16_dup4 (4 bytes in every 32-bit lane), i4_zero, i4_store,
 *   i4_madd_lo / i4_madd_hi (acc + the pair sums of the products of bytes
 *   0..7 / 8..15: two rows of 4 columns, 2 lanes each), i4_pairs (as
 *   v4_pairs).
 * And the blocking, sized for the vector registers the code runs on:
 *   V128_MICRO_NV  vectors across a row of the GEMM micro-kernel's block
 *                  (6 rows: 6 V128_MICRO_NV accumulators)
 *   V128_PACK_NV   most vectors of columns of the packed GEMV in one pass
 *   V128_BF16_NG, V128_I8_NG  most groups of rows of the bfloat16 and int8
 *                  GEMVs in one pass (4 and 4 accumulators a group)
 *   V128_FEW_ROWS  a GEMM of at most this many rows is multiplied unpacked
 *                  (gemm_few_v128: rt_kern_gemm's few_rows; 0: never): B
 *                  stored [N,K] read once, two rows at a time against every
 *                  row of A (dot products, as gemv_t's), stored [K,N] eight
 *                  columns of every row at a time
 */
#ifndef RT_KERN_V128_H
#define RT_KERN_V128_H

/* r[0..4) = alpha s + beta (bias[0..4), or r itself; beta == 0: r not read) */
V4_INLINE void put4(float *r, const float *bias, v4f s, float alpha, float beta)
{
	v4f y = v4_mul_n(s, alpha);
	if (bias)
		y = v4_fma_n(y, v4_load(bias), beta);
	else if (beta != 0.0f)
		y = v4_fma_n(y, v4_load(r), beta);
	v4_store(r, y);
}

/* ---- GEMV, B stored [N,K]: eight dot products of rows of B with a at once ---- */

static void gemv_t_v128(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
			const float *bias, float *c)
{
	const int64_t kv = K & ~(int64_t)3;
	int64_t n = 0;
	for (; n + 8 <= N; n += 8) {
		const float *b = B + n * ldb;
		v4f acc[8];
		for (int r = 0; r < 8; r++)
			acc[r] = v4_zero();
		for (int64_t k = 0; k < kv; k += 4) {
			v4f x = v4_load(a + k);
			for (int r = 0; r < 8; r++)
				acc[r] = v4_fma(acc[r], v4_load(b + r * ldb + k), x);
		}
		/* pairwise sums: lane r of s[h] is row 4 h + r's dot product */
		v4f s[2] = {v4_pairs(v4_pairs(acc[0], acc[1]), v4_pairs(acc[2], acc[3])),
			    v4_pairs(v4_pairs(acc[4], acc[5]), v4_pairs(acc[6], acc[7]))};
		if (kv < K) {
			float t[8];
			rows_tail(8, b, ldb, a, kv, K, t);
			s[0] = v4_add(s[0], v4_load(t));
			s[1] = v4_add(s[1], v4_load(t + 4));
		}
		for (int h = 0; h < 2; h++)
			put4(c + n + 4 * h, bias ? bias + n + 4 * h : NULL, s[h], alpha, beta);
	}
	for (; n < N; n++) {
		const float *b = B + n * ldb;
		v4f acc = v4_zero();
		for (int64_t k = 0; k < kv; k += 4)
			acc = v4_fma(acc, v4_load(b + k), v4_load(a + k));
		float s = v4_sum(acc);
		for (int64_t k = kv; k < K; k++)
			s += b[k] * a[k];
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- GEMV, B stored [K,N]: c = sum_k a[k] B[k,:], 32 columns at once ---- */

static void gemv_n_v128(int64_t N, int64_t K, float alpha, const float *a, const float *B, int64_t ldb, float beta,
			const float *bias, float *c)
{
	int64_t n = 0;
	for (; n + 32 <= N; n += 32) {
		v4f acc[8];
		for (int v = 0; v < 8; v++)
			acc[v] = v4_zero();
		for (int64_t k = 0; k < K; k++) {
			v4f x = v4_dup(a[k]);
			const float *b = B + k * ldb + n;
			for (int v = 0; v < 8; v++)
				acc[v] = v4_fma(acc[v], v4_load(b + 4 * v), x);
		}
		for (int v = 0; v < 8; v++)
			put4(c + n + 4 * v, bias ? bias + n + 4 * v : NULL, acc[v], alpha, beta);
	}
	for (; n + 4 <= N; n += 4) {
		v4f acc = v4_zero();
		for (int64_t k = 0; k < K; k++)
			acc = v4_fma(acc, v4_load(B + k * ldb + n), v4_dup(a[k]));
		put4(c + n, bias ? bias + n : NULL, acc, alpha, beta);
	}
	for (; n < N; n++) {
		float s = 0.0f;
		for (int64_t k = 0; k < K; k++)
			s += a[k] * B[k * ldb + n];
		c[n] = put1(c[n], bias ? bias + n : NULL, s, alpha, beta);
	}
}

/* ---- GEMM of at most V128_FEW_ROWS rows, unpacked ---- */

#if V128_FEW_ROWS > 0
enum { V128_FEW_KMAX = 1024 };  /* the longest rows of A copied when they are strided */

/* C[r, n] for the NA rows r of A (contiguous along K, row stride lda) and
 * B stored [N,K]: two rows of B at a time against all NA rows of A (2 NA
 * accumulators), each pair's sums put together as gemv_t_v128's. */
V4_INLINE void gemm_t_few(const int NA, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
			  const float *B, int64_t ldb, float beta, const float *bias, float *C, int64_t ldc)
{
	const int64_t kv = K & ~(int64_t)3;
	for (int64_t n = 0; n < N; n += 2) {
		int two = n + 1 < N;    /* an odd N's last row alone (read twice, stored once) */
		const float *b0 = B + n * ldb, *b1 = two ? b0 + ldb : b0;
		v4f acc[V128_FEW_ROWS][2];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < NA; r++)
			acc[r][0] = acc[r][1] = v4_zero();
		for (int64_t k = 0; k < kv; k += 4) {
			v4f x0 = v4_load(b0 + k), x1 = v4_load(b1 + k);
			_Pragma("GCC unroll 4")
			for (int r = 0; r < NA; r++) {
				v4f a = v4_load(A + r * lda + k);
				acc[r][0] = v4_fma(acc[r][0], x0, a);
				acc[r][1] = v4_fma(acc[r][1], x1, a);
			}
		}
		for (int r = 0; r < NA; r++) {
			/* [row n's two pair sums, row n + 1's]: each row's sum, then its K % 4 tail */
			float q[4], t[2];
			v4_store(q, v4_pairs(acc[r][0], acc[r][1]));
			float s[2] = {q[0] + q[1], q[2] + q[3]};
			rows_tail(2, b0, b1 - b0, A + r * lda, kv, K, t);
			float *c = C + r * ldc + n;
			for (int j = 0; j <= two; j++)
				c[j] = put1(c[j], bias ? bias + n + j : NULL, s[j] + t[j], alpha, beta);
		}
	}
}

/* The same with B stored [K,N]: eight columns of C (two vectors) of all NA
 * rows at a time, a broadcast of A's element times a row of B, as the
 * micro-kernel does on its panel; then four, then one by one. */
V4_INLINE void gemm_n_few(const int NA, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
			  const float *B, int64_t ldb, float beta, const float *bias, float *C, int64_t ldc)
{
	int64_t n = 0;
	for (; n + 4 <= N; n += n + 8 <= N ? 8 : 4) {
		const int two = n + 8 <= N;
		v4f acc[V128_FEW_ROWS][2];
		_Pragma("GCC unroll 4")
		for (int r = 0; r < NA; r++)
			acc[r][0] = acc[r][1] = v4_zero();
		for (int64_t k = 0; k < K; k++) {
			const float *b = B + k * ldb + n;
			v4f x0 = v4_load(b), x1 = two ? v4_load(b + 4) : x0;
			_Pragma("GCC unroll 4")
			for (int r = 0; r < NA; r++) {
				v4f a = v4_load_dup(A + r * lda + k);
				acc[r][0] = v4_fma(acc[r][0], x0, a);
				acc[r][1] = v4_fma(acc[r][1], x1, a);
			}
		}
		for (int r = 0; r < NA; r++)
			for (int h = 0; h <= two; h++)
				put4(C + r * ldc + n + 4 * h, bias ? bias + n + 4 * h : NULL, acc[r][h], alpha, beta);
	}
	for (; n < N; n++)
		for (int r = 0; r < NA; r++) {
			float s = 0.0f;
			for (int64_t k = 0; k < K; k++)
				s += A[r * lda + k] * B[k * ldb + n];
			C[r * ldc + n] = put1(C[r * ldc + n], bias ? bias + n : NULL, s, alpha, beta);
		}
}

/* C[0..M, 0..N) for M <= V128_FEW_ROWS (rt_kern_gemm: few_rows); A's rows
 * copied first when they are strided (transA), K <= V128_FEW_KMAX */
static void gemm_few_v128(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
			  int64_t lda, const float *B, int64_t ldb, float beta, const float *bias, float *C, int64_t ldc)
{
	float rows[V128_FEW_ROWS * V128_FEW_KMAX];
	if (transA) {
		for (int64_t r = 0; r < M; r++)
			for (int64_t k = 0; k < K; k++)
				rows[r * K + k] = A[k * lda + r];
		A = rows;
		lda = K;
	}
	switch (M) {
#define FEW_CASE(NA)                                                                          \
	case NA:                                                                              \
		if (transB)                                                                   \
			gemm_t_few(NA, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);      \
		else                                                                          \
			gemm_n_few(NA, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc);      \
		break;
	FEW_CASE(1) FEW_CASE(2) FEW_CASE(3) FEW_CASE(4)
#undef FEW_CASE
	default: break;
	}
}
#endif

/* ---- GEMM: the micro-kernel over a packed panel of op(B) (rt_kern.c) ---- */

enum { V128_BW = 4 * V128_MICRO_NV };   /* the block's columns */

/* t[r][0..V128_BW) = sum_k A[r, k] bp[k][0..V128_BW) for the 6 rows ar[r]:
 * 6 V128_MICRO_NV accumulators, that many vectors of the panel's row, one
 * broadcast. */
V4_INLINE void block_v128(int64_t kc, const float *const *ar, int64_t aks, const float *bp, float *t)
{
	v4f acc[MR][V128_MICRO_NV];
	for (int r = 0; r < MR; r++)
		for (int v = 0; v < V128_MICRO_NV; v++)
			acc[r][v] = v4_zero();
	for (int64_t k = 0; k < kc; k++) {
		const float *b = bp + k * NR;
		v4f bv[V128_MICRO_NV];
		for (int v = 0; v < V128_MICRO_NV; v++)
			bv[v] = v4_load(b + 4 * v);
		for (int r = 0; r < MR; r++) {
			v4f x = v4_load_dup(ar[r] + k * aks);
			for (int v = 0; v < V128_MICRO_NV; v++)
				acc[r][v] = v4_fma(acc[r][v], bv[v], x);
		}
	}
	for (int r = 0; r < MR; r++)
		for (int v = 0; v < V128_MICRO_NV; v++)
			v4_store(t + V128_BW * r + 4 * v, acc[r][v]);
}

/* C[r, 0..n) for r < mr (row stride ldc) from a tile t (row stride tw) of
 * sums: alpha t + beta C, or alpha t + beta bias when bias is set, or
 * alpha t (beta == 0: C not read) when first; C + alpha t otherwise (a later
 * panel of the K dimension): micro_v128's epilogue, as x86's micro-kernels do
 * it in registers. */
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

/* C[0..mr, 0..nr) of one panel as 6 x V128_BW blocks, each reading the same
 * rows of A; the epilogue tile_put's. */
static void micro_v128(int64_t kc, const float *a, int64_t ars, int64_t aks, const float *bp, const float *bias,
		       float *C, int64_t ldc, int mr, int64_t nr, float alpha, float beta, int first)
{
	const float *ar[MR];
	float t[MR * V128_BW];
	for (int r = 0; r < MR; r++)
		ar[r] = a + (r < mr ? r : 0) * ars;     /* missing rows read row 0, never stored */
	for (int64_t c0 = 0; c0 < nr; c0 += V128_BW) {
		block_v128(kc, ar, aks, bp + c0, t);
		tile_put(t, V128_BW, mr, nr - c0 < V128_BW ? nr - c0 : V128_BW, bias ? bias + c0 : NULL, C + c0, ldc,
			 alpha, beta, first);
	}
}

/* ---- GEMV on packed weights (rt_gemv_pack): one block's columns ---- */

/* NV vectors of columns p[0..4 NV) of a block with row stride w. */
V4_INLINE void pk_chunk_v128(const int NV, int64_t K, const float *a, const float *p, int64_t w, float alpha,
			     float beta, const float *bias, float *c)
{
	v4f acc[V128_PACK_NV];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++)
		acc[v] = v4_zero();
	for (int64_t k = 0; k < K; k++, p += w) {
		v4f x = v4_load_dup(a + k);
		_Pragma("GCC unroll 16")
		for (int v = 0; v < NV; v++)
			acc[v] = v4_fma(acc[v], v4_load(p + 4 * v), x);
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < NV; v++)
		put4(c + 4 * v, bias ? bias + 4 * v : NULL, acc[v], alpha, beta);
}

/* cols columns: 4 V128_PACK_NV at a time, then the last whole vectors; the
 * last cols % 4 one by one (a load past them could leave the block's end). */
static void gemv_packed_v128(int64_t cols, int64_t K, const float *a, const float *p, int64_t w, float alpha,
			     float beta, const float *bias, float *c)
{
	int64_t whole = cols / 4 * 4;
	for (int64_t j = 0; j < whole; j += 4 * V128_PACK_NV) {
		int nv = (int)((whole - j) / 4 < V128_PACK_NV ? (whole - j) / 4 : V128_PACK_NV);
		const float *bj = bias ? bias + j : NULL;
		switch (nv) {
#define PK_CASE(NV) case NV: pk_chunk_v128(NV, K, a, p + j, w, alpha, beta, bj, c + j); break;
		PK_CASE(1) PK_CASE(2) PK_CASE(3) PK_CASE(4) PK_CASE(5) PK_CASE(6) PK_CASE(7) PK_CASE(8)
#if V128_PACK_NV > 8
		PK_CASE(9) PK_CASE(10) PK_CASE(11) PK_CASE(12) PK_CASE(13) PK_CASE(14) PK_CASE(15) PK_CASE(16)
#endif
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

/* one pass over at most V128_BF16_NG groups: 4 accumulators a group */
V4_INLINE void pk_bf16_pass(const int NG, int64_t K, const float *a, const uint16_t *p, int64_t wp, float *sum)
{
	v4f acc[4 * V128_BF16_NG];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 4 * NG; v++)
		acc[v] = v4_zero();
	for (int64_t k = 0; k < K; k++, p += wp) {
		v4f x = v4_load_dup(a + k);
		_Pragma("GCC unroll 4")
		for (int q = 0; q < NG; q++) {
			v4u u0 = u4_load16(p + 16 * q), u1 = u4_load16(p + 16 * q + 8);
			acc[4 * q] = v4_fma(acc[4 * q], v4_bf16_lo(u0), x);
			acc[4 * q + 1] = v4_fma(acc[4 * q + 1], v4_bf16_lo(u1), x);
			acc[4 * q + 2] = v4_fma(acc[4 * q + 2], v4_bf16_hi(u0), x);
			acc[4 * q + 3] = v4_fma(acc[4 * q + 3], v4_bf16_hi(u1), x);
		}
	}
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 4 * NG; v++)
		v4_store(sum + 4 * v, acc[v]);
}

/* (passes at constant offsets G: NG is a constant in every chunk kernel) */
#define PASS(F, G, W, ...) if (NG > (G)) F(NG - (G) < (W) ? NG - (G) : (W), __VA_ARGS__)

/* NG <= 4 groups */
V4_INLINE void pk_bf16_v128(const int NG, int64_t K, const float *a, const uint16_t *p, int64_t wp, float *sum)
{
	PASS(pk_bf16_pass, 0, V128_BF16_NG, K, a, p, wp, sum);
	PASS(pk_bf16_pass, V128_BF16_NG, V128_BF16_NG, K, a, p + 16 * V128_BF16_NG, wp, sum + 16 * V128_BF16_NG);
}

CHUNKS(, bf16_chunk_v128, pk_bf16_v128, float, uint16_t, float, CASES4)

/* ---- int8: NG groups of 8 rows, each 16-byte load 4 rows by 4 columns ---- */

/* One pass over at most V128_I8_NG groups: the four activations of a group
 * of columns against 8 weights (two rows' four) twice over, their products'
 * pairs summed into int32 lanes (at most 2 * 127 * 127: exact), and a last
 * pairwise add makes each row's sum.  Vector v's rows 0, 1 in acc[2 v],
 * rows 2, 3 in acc[2 v + 1]. */
V4_INLINE void pk_i8_pass(const int NG, int64_t Kq, const uint8_t *qa, const int8_t *p, int64_t wp, int32_t *sum)
{
	v4i acc[4 * V128_I8_NG];
	_Pragma("GCC unroll 16")
	for (int v = 0; v < 4 * NG; v++)
		acc[v] = i4_zero();
	for (int64_t kq = 0; kq < Kq; kq++, p += 4 * wp) {
		v16b x = b16_dup4(qa + 4 * kq);
		_Pragma("GCC unroll 8")
		for (int v = 0; v < 2 * NG; v++) {
			v16b wv = b16_load(p + 16 * v);
			acc[2 * v] = i4_madd_lo(acc[2 * v], wv, x);
			acc[2 * v + 1] = i4_madd_hi(acc[2 * v + 1], wv, x);
		}
	}
	_Pragma("GCC unroll 8")
	for (int v = 0; v < 2 * NG; v++)
		i4_store(sum + 4 * v, i4_pairs(acc[2 * v], acc[2 * v + 1]));
}

/* NG <= 8 groups */
V4_INLINE void pk_i8_v128(const int NG, int64_t Kq, const uint8_t *qa, const int8_t *p, int64_t wp, int32_t *sum)
{
	enum { W = V128_I8_NG };
	PASS(pk_i8_pass, 0, W, Kq, qa, p, wp, sum);
	PASS(pk_i8_pass, W, W, Kq, qa, p + 32 * W, wp, sum + 8 * W);
	PASS(pk_i8_pass, 2 * W, W, Kq, qa, p + 64 * W, wp, sum + 16 * W);
	PASS(pk_i8_pass, 3 * W, W, Kq, qa, p + 96 * W, wp, sum + 24 * W);
}
#undef PASS

CHUNKS(, i8_chunk_v128, pk_i8_v128, uint8_t, int8_t, int32_t, CASES8)

/* rt_quant_act_u7 (cellrt.h) four at a time, with the same results: the
 * minimum and maximum do not depend on the order, v4_round rounds as
 * nearbyintf does, and a NaN or an infinity is left to the scalar code. */
static int quant_act_u7_v128(int64_t K, const float *a, uint8_t *q, int32_t *zp, float *scale)
{
	v4f lo = v4_zero(), hi = lo, bad = lo;
	int64_t k = 0;
	for (; k + 4 <= K; k += 4) {
		v4f v = v4_load(a + k);
		lo = v4_min(lo, v);
		hi = v4_max(hi, v);
		bad = v4_add(bad, v4_mul_n(v, 0.0f));
	}
	float mn = v4_minv(lo), mx = v4_maxv(hi), nb = v4_sum(bad);
	if (!u7_range_tail(k, K, a, &mn, &mx, nb))
		return 0;
	float inv, z;
	u7_params(mn, mx, &inv, &z, zp, scale);
	const v4f v0 = v4_zero(), v127 = v4_dup(127.0f), vz = v4_dup(z);
	for (k = 0; k + 16 <= K; k += 16) {
		v4f w[4];
		for (int j = 0; j < 4; j++) {
			v4f v = v4_round(v4_mul_n(v4_load(a + k + 4 * j), inv));
			w[j] = v4_min(v4_max(v4_add(v, vz), v0), v127);
		}
		v4_store_u7(q + k, w[0], w[1], w[2], w[3]);
	}
	u7_tail(k, K, a, inv, z, q);
	return 1;
}

/* dst[i * NR + r] = src[r * ldb + i] for r, i < 8 (pack_panel): four 4 x 4
 * blocks, each loaded by rows and stored by columns. */
V4_INLINE void transpose8(const float *src, int64_t ldb, float *dst)
{
	for (int rb = 0; rb < 8; rb += 4)
		for (int ib = 0; ib < 8; ib += 4) {
			const float *s = src + rb * ldb + ib;
			v4f r[4] = {v4_load(s), v4_load(s + ldb), v4_load(s + 2 * ldb), v4_load(s + 3 * ldb)};
			v4_transpose(r);
			float *d = dst + ib * NR + rb;
			for (int i = 0; i < 4; i++)
				v4_store(d + i * NR, r[i]);
		}
}

#endif
