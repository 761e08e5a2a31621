/* test_gemm.c: rt_sgemm_portable (the kernel of `make BLAS=none`) and the
 * rt_sgemm of the library it is linked with, against the double-accumulating
 * reference rt_sgemm_ref, over shapes around the kernels' block sizes, both
 * transposes, row strides wider than the rows, alpha/beta cases, and a C
 * holding NaN where beta == 0 (which must not be read).  One line
 * `PASS|FAIL gemm/<case>` per case; exit 1 on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cellrt.h"

static unsigned long long rng = 12345;

static float frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

int main(void)
{
	static const int64_t sizes[][3] = {
		{1, 1, 1}, {1, 37, 300}, {3, 5, 7}, {4, 8, 8}, {5, 33, 257}, {17, 64, 1}, {64, 96, 260},
		{7, 130, 513}, {1, 512, 128},
	};
	static const float ab[][2] = {{1, 0}, {0.5f, 1}, {-2, 0.25f}};
	int failed = 0, count = 0;
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++)
				for (size_t ai = 0; ai < sizeof ab / sizeof ab[0]; ai++) {
					int64_t M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
					int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
					float *A = malloc(sizeof(float) * (size_t)((ta ? K : M) * lda));
					float *B = malloc(sizeof(float) * (size_t)((tb ? N : K) * ldb));
					float *C0 = malloc(sizeof(float) * (size_t)(M * ldc));
					float *C1 = malloc(sizeof(float) * (size_t)(M * ldc));
					float *C2 = malloc(sizeof(float) * (size_t)(M * ldc));
					for (int64_t i = 0; i < (ta ? K : M) * lda; i++)
						A[i] = frand();
					for (int64_t i = 0; i < (tb ? N : K) * ldb; i++)
						B[i] = frand();
					for (int64_t i = 0; i < M * ldc; i++)
						C0[i] = C1[i] = C2[i] = ab[ai][1] == 0 ? NAN : frand();
					float alpha = ab[ai][0], beta = ab[ai][1];
					rt_sgemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C0, ldc);
					rt_sgemm_portable(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C1, ldc);
					rt_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C2, ldc);
					double worst = 0;
					int bad = 0;
					for (int64_t i = 0; i < M; i++)
						for (int64_t j = 0; j < ldc; j++) {
							float r = C0[i * ldc + j];
							for (int v = 0; v < 2; v++) {
								float x = (v ? C2 : C1)[i * ldc + j];
								if (j >= N) {   /* padding: untouched */
									bad |= !(isnan(x) && isnan(r)) && x != r;
									continue;
								}
								double e = fabs((double)x - r) / (1e-6 + 1e-5 * sqrt((double)K) * (1 + fabs(r)));
								bad |= !(e <= 1);
								worst = e > worst ? e : worst;
							}
						}
					count++;
					failed += bad;
					printf("%s gemm/M%lld_N%lld_K%lld_%c%c_a%g_b%g worst=%.3g (of tolerance)\n",
					       bad ? "FAIL" : "PASS", (long long)M, (long long)N, (long long)K,
					       ta ? 'T' : 'N', tb ? 'T' : 'N', alpha, beta, worst);
					free(A);
					free(B);
					free(C0);
					free(C1);
					free(C2);
				}
	printf("%d gemm cases, %d failed\n", count, failed);
	return failed ? 1 : 0;
}
