/* rt_blas.c: the single-precision matrix product every emitted GEMM, MatMul
 * and recurrent projection goes through, and its naive reference.
 *
 * rt_sgemm hands the work to OpenBLAS (CBLAS, row-major).  A product with one
 * row (M == 1, batch-1 recurrences) is a matrix-vector product, for which
 * sgemv is markedly faster than sgemm's packing.  rt_sgemm_ref is the plain
 * triple loop the unit tests compare against; builds without BLAS
 * (-DCELLRT_NO_BLAS) use it for everything.
 *
 * Legend: C[M,N] = alpha * op(A)[M,K] op(B)[K,N] + beta * C, row-major, with
 * row strides lda, ldb, ldc in elements.  op(A) = A^T when transA: A is then
 * stored as [K,M].  beta == 0 means C is not read (it may hold garbage, such
 * as a fresh workspace slot), as in the reference BLAS.
 */
#include "cellrt.h"

#include <limits.h>

#ifndef CELLRT_NO_BLAS
#include <cblas.h>
#endif

/* Element (i, j) of op(X) for a row-major X with row stride ld. */
static float at(const float *X, int64_t ld, int trans, int64_t i, int64_t j)
{
	return trans ? X[j * ld + i] : X[i * ld + j];
}

void rt_sgemm_ref(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
		  const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
		  float *C, int64_t ldc)
{
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++) {
			/* accumulate in double so the reference is the more exact one */
			double acc = 0;
			for (int64_t k = 0; k < K; k++)
				acc += (double)at(A, lda, transA, i, k) * at(B, ldb, transB, k, j);
			float *c = &C[i * ldc + j];
			*c = (float)(alpha * acc + (beta == 0 ? 0.0 : (double)beta * *c));
		}
}

#ifndef CELLRT_NO_BLAS
/* CBLAS takes int sizes; anything larger goes to the reference kernel. */
static int fits_int(int64_t a, int64_t b, int64_t c, int64_t d)
{
	return a <= INT_MAX && b <= INT_MAX && c <= INT_MAX && d <= INT_MAX;
}
#endif

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
#ifdef CELLRT_NO_BLAS
	rt_sgemm_ref(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
	cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
		    transB ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha,
		    A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
#endif
}
