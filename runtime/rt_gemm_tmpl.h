/* rt_gemm_tmpl.h: the naive reference GEMM and the blocked portable one,
 * written once for the element type GT (float or double), included by
 * rt_blas.c once per precision with:
 *   GT             the element type
 *   GS(name)       name with the precision's suffix (the static helpers)
 *   GEMM_REF       the reference kernel's name (rt_sgemm_ref, rt_dgemm_ref)
 *   GEMM_PORTABLE  the portable kernel's name (rt_sgemm_portable, ...)
 *   GACC           the reference's accumulator, wider than GT where the
 *                  machine has one (double for float, long double for
 *                  double), so that the reference is the more exact one
 * Semantics as rt_sgemm (cellrt.h). */

/* Element (i, j) of op(X) for a row-major X with row stride ld. */
static GT GS(at)(const GT *X, int64_t ld, int trans, int64_t i, int64_t j)
{
	return trans ? X[j * ld + i] : X[i * ld + j];
}

void GEMM_REF(int transA, int transB, int64_t M, int64_t N, int64_t K, GT alpha,
	      const GT *A, int64_t lda, const GT *B, int64_t ldb, GT beta,
	      GT *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			GACC acc = 0;
			for (int64_t k = 0; k < K; k++)
				acc += (GACC)GS(at)(A, lda, transA, i, k) * GS(at)(B, ldb, transB, k, j);
			GT *c = &C[i * ldc + j];
			*c = (GT)(alpha * acc + (beta == 0 ? 0 : (GACC)beta * *c));
		}
}

/* ---- the portable kernel ---- */

#ifndef RT_GEMM_TMPL_ONCE
#define RT_GEMM_TMPL_ONCE
enum { PB_ROWS = 4, PB_LANES = 8, PB_KC = 256 };
#endif

/* C[i, 0..N) = beta * C[i, 0..N) for rows [0, M); beta == 0 clears. */
static void GS(scale_rows)(int64_t M, int64_t N, GT beta, GT *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++) {
		GT *c = C + i * ldc;
		if (beta == 0)
			for (int64_t j = 0; j < N; j++)
				c[j] = 0;
		else if (beta != 1)
			for (int64_t j = 0; j < N; j++)
				c[j] *= beta;
	}
}

/* sum_k a[k] b[k] with PB_LANES independent partial sums, which the compiler
 * turns into vector lanes (a single running sum could not be reordered). */
static GT GS(dot)(const GT *a, const GT *b, int64_t K)
{
	GT acc[PB_LANES] = {0};
	int64_t k = 0;
	for (; k + PB_LANES <= K; k += PB_LANES)
		for (int u = 0; u < PB_LANES; u++)
			acc[u] += a[k + u] * b[k + u];
	GT s = 0;
	for (; k < K; k++)
		s += a[k] * b[k];
	for (int u = 0; u < PB_LANES; u++)
		s += acc[u];
	return s;
}

/* op(B) = B^T with rows of A and B contiguous: every C element is a dot
 * product.  K is cut into PB_KC blocks so that the rows in use stay in the
 * first-level cache while all N columns pass over them. */
static void GS(gemm_nt)(int64_t M, int64_t N, int64_t K, GT alpha, const GT *A, int64_t lda,
		    const GT *B, int64_t ldb, GT *C, int64_t ldc)
{
	for (int64_t k0 = 0; k0 < K; k0 += PB_KC) {
		int64_t kc = K - k0 < PB_KC ? K - k0 : PB_KC;
		for (int64_t i = 0; i < M; i++) {
			const GT *a = A + i * lda + k0;
			GT *c = C + i * ldc;
			for (int64_t j = 0; j < N; j++)
				c[j] += alpha * GS(dot)(a, B + j * ldb + k0, kc);
		}
	}
}

/* op(B) = B: rows of C are sums of scaled rows of B ("axpy" form, whose
 * inner loop over contiguous j vectorises); PB_ROWS rows of C share each
 * row of B that is loaded. */
static void GS(gemm_nn)(int transA, int64_t M, int64_t N, int64_t K, GT alpha, const GT *A,
		    int64_t lda, const GT *B, int64_t ldb, GT *C, int64_t ldc)
{
	int64_t i = 0;
	for (; i + PB_ROWS <= M; i += PB_ROWS) {
		GT *c0 = C + i * ldc, *c1 = c0 + ldc, *c2 = c1 + ldc, *c3 = c2 + ldc;
		for (int64_t k = 0; k < K; k++) {
			const GT *b = B + k * ldb;
			GT a0 = alpha * GS(at)(A, lda, transA, i, k), a1 = alpha * GS(at)(A, lda, transA, i + 1, k);
			GT a2 = alpha * GS(at)(A, lda, transA, i + 2, k), a3 = alpha * GS(at)(A, lda, transA, i + 3, k);
			for (int64_t j = 0; j < N; j++) {
				GT bj = b[j];
				c0[j] += a0 * bj;
				c1[j] += a1 * bj;
				c2[j] += a2 * bj;
				c3[j] += a3 * bj;
			}
		}
	}
	for (; i < M; i++) {
		GT *c = C + i * ldc;
		for (int64_t k = 0; k < K; k++) {
			const GT *b = B + k * ldb;
			GT a = alpha * GS(at)(A, lda, transA, i, k);
			for (int64_t j = 0; j < N; j++)
				c[j] += a * b[j];
		}
	}
}

void GEMM_PORTABLE(int transA, int transB, int64_t M, int64_t N, int64_t K, GT alpha,
		   const GT *A, int64_t lda, const GT *B, int64_t ldb, GT beta,
		   GT *C, int64_t ldc)
{
	if (M <= 0 || N <= 0)
		return;
	GS(scale_rows)(M, N, beta, C, ldc);
	if (K <= 0 || alpha == 0)
		return;
	if (!transB)
		GS(gemm_nn)(transA, M, N, K, alpha, A, lda, B, ldb, C, ldc);
	else if (!transA)
		GS(gemm_nt)(M, N, K, alpha, A, lda, B, ldb, C, ldc);
	else    /* both transposed: rare (not emitted for recurrences); plain loops */
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				GT s = 0;
				for (int64_t k = 0; k < K; k++)
					s += GS(at)(A, lda, 1, i, k) * GS(at)(B, ldb, 1, k, j);
				C[i * ldc + j] += alpha * s;
			}
}

#undef GT
#undef GS
#undef GEMM_REF
#undef GEMM_PORTABLE
#undef GACC
