/* rt_expm.c: the matrix exponential for training (cellc compile --train):
 * dtriv's M = base expm(S) is computed at run time from its parameters, and
 * the gradient of expm is the upper right block of expm([[S^T, G], [0, S^T]]).
 * Scaling and squaring with the [13/13] Pade approximant (Higham 2005), in
 * double; the compiler calls rt_expm_d for inference builds (compiler/cell/cells.c). */
#include "cellrt.h"

#ifndef CELLRT_NO_BLAS
#include <cblas.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* c = a b, n x n row-major: a training step of a dtriv layer of hidden H
 * takes two exponentials, of H x H and 2H x 2H, a dozen products each (0.5 s
 * at H = 128 as an i-j-k loop; BLAS, or rows of c at a time without it). */
static void mm_d(const double *a, const double *b, double *c, int64_t n)
{
#ifndef CELLRT_NO_BLAS
	cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)n, (blasint)n, 1.0, a,
		    (blasint)n, b, (blasint)n, 0.0, c, (blasint)n);
#else
	for (int64_t i = 0; i < n; i++) {
		double *ci = c + i * n;
		for (int64_t j = 0; j < n; j++)
			ci[j] = 0;
		for (int64_t k = 0; k < n; k++) {
			double f = a[i * n + k];
			const double *bk = b + k * n;
			for (int64_t j = 0; j < n; j++)
				ci[j] += f * bk[j];
		}
	}
#endif
}

/* X = D^-1 N by Gaussian elimination with partial pivoting (N overwritten). */
static int solve_d(double *D, double *N, int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		int64_t p = k;
		for (int64_t i = k + 1; i < n; i++)
			if (fabs(D[i * n + k]) > fabs(D[p * n + k]))
				p = i;
		if (D[p * n + k] == 0)
			return -1;
		if (p != k)
			for (int64_t j = 0; j < n; j++) {
				double t = D[k * n + j]; D[k * n + j] = D[p * n + j]; D[p * n + j] = t;
				t = N[k * n + j]; N[k * n + j] = N[p * n + j]; N[p * n + j] = t;
			}
		for (int64_t i = k + 1; i < n; i++) {
			double f = D[i * n + k] / D[k * n + k];
			if (f == 0)
				continue;
			for (int64_t j = k; j < n; j++)
				D[i * n + j] -= f * D[k * n + j];
			for (int64_t j = 0; j < n; j++)
				N[i * n + j] -= f * N[k * n + j];
		}
	}
	/* back substitution, a row of N at a time (rows below k are solved) */
	for (int64_t k = n - 1; k >= 0; k--) {
		double *nk = N + k * n;
		for (int64_t i = k + 1; i < n; i++) {
			double f = D[k * n + i];
			const double *ni = N + i * n;
			for (int64_t j = 0; j < n; j++)
				nk[j] -= f * ni[j];
		}
		double d = D[k * n + k];
		for (int64_t j = 0; j < n; j++)
			nk[j] /= d;
	}
	return 0;
}

/* expm by scaling and squaring with the [13/13] Pade approximant (Higham 2005). */
int rt_expm_d(double *X, const double *S, int64_t n)
{
	static const double b[14] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
		1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
		33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0};
	size_t nn = (size_t)(n * n);
	double *buf = calloc(8 * nn + 1, sizeof(double));
	if (!buf)
		return -1;
	double *A = buf, *A2 = A + nn, *A4 = A2 + nn, *A6 = A4 + nn, *U = A6 + nn, *V = U + nn,
	       *T1 = V + nn, *T2 = T1 + nn;
	double norm = 0;
	for (int64_t j = 0; j < n; j++) {
		double s = 0;
		for (int64_t i = 0; i < n; i++)
			s += fabs(S[i * n + j]);
		norm = s > norm ? s : norm;
	}
	int sq = 0;
	const double theta13 = 5.371920351148152;
	if (norm > theta13)
		sq = (int)ceil(log2(norm / theta13));
	double f = ldexp(1.0, -sq);
	for (size_t i = 0; i < nn; i++)
		A[i] = S[i] * f;
	mm_d(A, A, A2, n);
	mm_d(A2, A2, A4, n);
	mm_d(A4, A2, A6, n);
	/* U = A (A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I) */
	for (size_t i = 0; i < nn; i++)
		T1[i] = b[13] * A6[i] + b[11] * A4[i] + b[9] * A2[i];
	mm_d(A6, T1, T2, n);
	for (size_t i = 0; i < nn; i++)
		T2[i] += b[7] * A6[i] + b[5] * A4[i] + b[3] * A2[i];
	for (int64_t i = 0; i < n; i++)
		T2[i * n + i] += b[1];
	mm_d(A, T2, U, n);
	/* V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I */
	for (size_t i = 0; i < nn; i++)
		T1[i] = b[12] * A6[i] + b[10] * A4[i] + b[8] * A2[i];
	mm_d(A6, T1, V, n);
	for (size_t i = 0; i < nn; i++)
		V[i] += b[6] * A6[i] + b[4] * A4[i] + b[2] * A2[i];
	for (int64_t i = 0; i < n; i++)
		V[i * n + i] += b[0];
	/* (V - U) X = (V + U) */
	for (size_t i = 0; i < nn; i++) {
		T1[i] = V[i] - U[i];
		X[i] = V[i] + U[i];
	}
	int r = solve_d(T1, X, n);
	for (int k = 0; r == 0 && k < sq; k++) {
		mm_d(X, X, T2, n);
		memcpy(X, T2, nn * sizeof(double));
	}
	free(buf);
	return r;
}

int rt_expm(float *y, const float *x, int64_t n)
{
	if (!y || !x || n < 1)
		return RT_ERR_ARG;
	size_t nn = (size_t)(n * n);
	double *S = calloc(2 * nn, sizeof(double));
	if (!S)
		return RT_ERR_NOMEM;
	double *E = S + nn;
	for (size_t i = 0; i < nn; i++)
		S[i] = x[i];
	int r = rt_expm_d(E, S, n);
	for (size_t i = 0; r == 0 && i < nn; i++)
		y[i] = (float)E[i];
	free(S);
	return r == 0 ? RT_OK : RT_ERR_NONFINITE;
}
