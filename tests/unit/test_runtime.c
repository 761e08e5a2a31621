/* test_runtime.c: Check unit tests for libcellrt (runtime/cellrt.h).
 *
 * Each fast kernel is compared with a reference that does not share its
 * code: rt_sgemm (OpenBLAS, GEMV at M == 1) with rt_sgemm_ref over every
 * transpose combination, odd sizes and padded strides, and rt_sgemm_ref itself
 * with a product worked out by hand; the generic tensor kernels with the
 * index formulas of their ONNX operators written out naively here; the
 * softmax family with a double-precision evaluation.  Tensor files are
 * written, read back, and then truncated at every length, corrupted and
 * forged (a consistent checksum over a lying table) to check that each is
 * refused with the documented status and nothing is read past the end (the
 * sanitizer build of this program runs under AddressSanitizer).
 *
 * tests/run.sh runs it with CK_VERBOSITY=verbose and counts one test per
 * "file:line:P|F|E:..." line.  Legend: M, N, K matrix sizes; ld* row strides.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cellrt.h"
#include "rt_kern.h"

/* ---- helpers ------------------------------------------------------------ */

/* the helpers of every test (rng, fill, xmalloc, gemm_case) and libcellrt's
 * kernel tests (kern_tcases), which a board without Check also runs
 * (test_kern_bare.c) */
#include "test_kern.h"

/* A temporary file name in the test's own directory (CK_FORK: one process
 * per test, so the pid keeps parallel runs apart). */
static void tmp_path(char *buf, size_t n, const char *tag)
{
	const char *dir = getenv("CELLRT_TEST_TMP");
	snprintf(buf, n, "%s/cellrt_test_%ld_%s.bin", dir ? dir : "/tmp", (long)getpid(), tag);
}

/* ---- rt_inflate: empty stored blocks ---------------------------------------- */

/* Raw DEFLATE streams built by hand from RFC 1951 section 3.2.4: a stored
 * block is the header bits BFINAL, BTYPE = 00 (one byte, the rest padding),
 * then LEN and NLEN = ~LEN (little-endian) and LEN bytes.  zlib's sync flush
 * writes an empty one (00 00 00 ff ff); an empty block before anything was
 * written used to reach memcpy with a NULL destination (UBSan). */
START_TEST(test_inflate_empty_stored)
{
	static const unsigned char only_empty[] = {0x01, 0x00, 0x00, 0xff, 0xff};
	static const unsigned char flush_then_abc[] = {0x00, 0x00, 0x00, 0xff, 0xff,
						       0x01, 0x03, 0x00, 0xfc, 0xff, 'a', 'b', 'c'};
	static const unsigned char abc_flush_end[] = {0x00, 0x03, 0x00, 0xfc, 0xff, 'a', 'b', 'c',
						      0x01, 0x00, 0x00, 0xff, 0xff};
	void *out = NULL;
	size_t n = 99;
	char err[200] = "";
	ck_assert_int_eq(rt_inflate(only_empty, sizeof only_empty, 1 << 20, &out, &n, err, sizeof err), RT_OK);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(n, 0);
	free(out);
	ck_assert_int_eq(rt_inflate(flush_then_abc, sizeof flush_then_abc, 1 << 20, &out, &n, err, sizeof err),
			 RT_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(memcmp(out, "abc", 3), 0);
	free(out);
	ck_assert_int_eq(rt_inflate(abc_flush_end, sizeof abc_flush_end, 1 << 20, &out, &n, err, sizeof err),
			 RT_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(memcmp(out, "abc", 3), 0);
	free(out);
	/* LEN and NLEN that disagree are refused */
	static const unsigned char bad_nlen[] = {0x01, 0x00, 0x00, 0xfe, 0xff};
	ck_assert_int_eq(rt_inflate(bad_nlen, sizeof bad_nlen, 1 << 20, &out, &n, err, sizeof err),
			 RT_ERR_FORMAT);
	ck_assert_ptr_null(out);
}
END_TEST

/* ---- rt_sgemm ------------------------------------------------------------ */

/* rt_sgemm_ref against a product worked out by hand, so that the reference
 * the other tests trust is itself right (including transposes, alpha, beta). */
/* rt_topk_i64 / rt_topk_i32 against a stable sort of each row's indices by
 * value (larger first, or smaller), many ties: k = n (the sort that
 * pack_padded_sequence's export asks for) and k < n. */
static int64_t topk_key[64];
static int topk_largest;
static int topk_cmp(const void *a, const void *b)
{
	int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
	if (topk_key[i] != topk_key[j])
		return (topk_key[i] > topk_key[j]) == topk_largest ? -1 : 1;
	return i < j ? -1 : 1;
}

START_TEST(test_topk_int_vs_sort)
{
	enum { OUTER = 2, N = 37, INNER = 3 };
	int64_t x[OUTER * N * INNER], v[OUTER * N * INNER], idx[OUTER * N * INNER];
	int32_t x32[OUTER * N * INNER], v32[OUTER * N * INNER];
	uint64_t s = 7;
	for (int i = 0; i < OUTER * N * INNER; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		x[i] = (int64_t)(s >> 61) - 3;         /* -3 .. 4: many ties */
		x32[i] = (int32_t)x[i];
	}
	for (int largest = 0; largest < 2; largest++)
		for (int64_t k = N; k >= 5; k -= N - 5) {
			rt_topk_i64(v, idx, x, OUTER, N, INNER, k, largest);
			for (int o = 0; o < OUTER; o++)
				for (int i = 0; i < INNER; i++) {
					int64_t ord[N];
					for (int j = 0; j < N; j++)
						ord[j] = j, topk_key[j] = x[(o * N + j) * INNER + i];
					topk_largest = largest;
					qsort(ord, N, sizeof *ord, topk_cmp);
					for (int64_t t = 0; t < k; t++) {
						ck_assert_int_eq(idx[(o * k + t) * INNER + i], ord[t]);
						ck_assert_int_eq(v[(o * k + t) * INNER + i], topk_key[ord[t]]);
					}
				}
			int64_t idx32[OUTER * N * INNER];
			rt_topk_i32(v32, idx32, x32, OUTER, N, INNER, k, largest);
			for (int64_t t = 0; t < OUTER * k * INNER; t++) {
				ck_assert_int_eq(idx32[t], idx[t]);
				ck_assert_int_eq(v32[t], v[t]);
			}
		}
}
END_TEST

START_TEST(test_sgemm_ref_by_hand)
{
	/* A = [[1,2,3],[4,5,6]] (2x3), B = [[7,8],[9,10],[11,12]] (3x2),
	 * A B = [[58,64],[139,154]] */
	const float A[6] = {1, 2, 3, 4, 5, 6}, At[6] = {1, 4, 2, 5, 3, 6};
	const float Bm[6] = {7, 8, 9, 10, 11, 12}, Bt[6] = {7, 9, 11, 8, 10, 12};
	const float want[4] = {58, 64, 139, 154};
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			float C[4] = {1, 1, 1, 1};
			rt_sgemm_ref(ta, tb, 2, 2, 3, 2.0f, ta ? At : A, ta ? 2 : 3, tb ? Bt : Bm,
				     tb ? 3 : 2, -1.0f, C, 2);
			for (int i = 0; i < 4; i++)
				ck_assert_float_eq_tol(C[i], 2 * want[i] - 1, 1e-4f);
		}
}
END_TEST

static const gemm_case gemm_cases[] = {
	{1, 1, 1}, {1, 7, 5}, {1, 33, 17}, {1, 128, 64},        /* M == 1: GEMV path */
	{2, 1, 3}, {5, 1, 9}, {600, 1, 500},                    /* N == 1 (the last: GEMV path) */
	{3, 5, 7}, {17, 13, 11}, {64, 33, 65}, {31, 97, 3},     /* odd sizes */
	{4, 256, 32}, {2, 3, 0},                                /* K == 0: C = beta C */
	{1, 1024, 256}, {1, 131, 37}, {9, 200, 131},            /* rt_kern: blocks and tails */
	{128, 130, 300}, {7, 64, 128}, {6, 129, 257},
};
#define N_GEMM_CASES ((int)(sizeof gemm_cases / sizeof gemm_cases[0]))

/* Loop index: case * 12 + transA * 6 + transB * 3 + coefficient set. */
START_TEST(test_sgemm_vs_ref)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.25f, -0.75f}};
	int ci = _i / 12, ta = (_i / 6) % 2, tb = (_i / 3) % 2;
	float alpha = coef[_i % 3][0], beta = coef[_i % 3][1];
	gemm_case g = gemm_cases[ci];
	/* padded row strides: the kernels must honour ld and leave padding alone */
	int64_t arows = ta ? g.K : g.M, acols = ta ? g.M : g.K;
	int64_t brows = tb ? g.N : g.K, bcols = tb ? g.K : g.N;
	int64_t lda = acols + 3, ldb = bcols + 2, ldc = g.N + 5;
	rng r = {(uint64_t)_i + 1};
	float *A = xmalloc(sizeof(float) * (size_t)(arows * lda + 1));
	float *Bm = xmalloc(sizeof(float) * (size_t)(brows * ldb + 1));
	float *C = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	float *Cref = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	fill(&r, A, arows * lda + 1);
	fill(&r, Bm, brows * ldb + 1);
	fill(&r, C, g.M * ldc);
	if (beta == 0.0f)   /* beta == 0: C must not be read, even if it holds NaN */
		for (int64_t i = 0; i < g.M * ldc; i++)
			C[i] = NAN;
	memcpy(Cref, C, sizeof(float) * (size_t)(g.M * ldc));
	rt_sgemm(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, C, ldc);
	rt_sgemm_ref(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, Cref, ldc);
	for (int64_t i = 0; i < g.M; i++)
		for (int64_t j = 0; j < ldc; j++) {
			float got = C[i * ldc + j], want = Cref[i * ldc + j];
			if (j >= g.N) {     /* padding: untouched (NaN stays NaN) */
				ck_assert_msg(memcmp(&got, &want, sizeof got) == 0,
					      "padding C[%ld,%ld] changed", (long)i, (long)j);
				continue;
			}
			/* error bound of a float dot product of length K */
			double mag = 0;
			for (int64_t k = 0; k < g.K; k++) {
				float a = ta ? A[k * lda + i] : A[i * lda + k];
				float b = tb ? Bm[j * ldb + k] : Bm[k * ldb + j];
				mag += fabs((double)a * b);
			}
			double tol = 4.0 * (double)(g.K + 2) * FLT_EPSILON * (fabs(alpha) * mag + 1.0) + 1e-6;
			ck_assert_msg(isfinite(got) && fabs((double)got - want) <= tol,
				      "M=%ld N=%ld K=%ld tA=%d tB=%d alpha=%g beta=%g: C[%ld,%ld] = %.9g, ref %.9g",
				      (long)g.M, (long)g.N, (long)g.K, ta, tb, alpha, beta, (long)i, (long)j,
				      got, want);
		}
	free(A);
	free(Bm);
	free(C);
	free(Cref);
}
END_TEST

/* M == 1 with A stored transposed ([K,1], elements lda apart): the GEMV
 * path must read A with a stride. */
START_TEST(test_sgemm_gemv_strided_a)
{
	enum { N = 9, K = 13, LDA = 4 };
	rng r = {99};
	float A[K * LDA], Bm[K * N], C[N], Cref[N];
	fill(&r, A, K * LDA);
	fill(&r, Bm, K * N);
	rt_sgemm(1, 0, 1, N, K, 1.0f, A, LDA, Bm, N, 0.0f, C, N);
	rt_sgemm_ref(1, 0, 1, N, K, 1.0f, A, LDA, Bm, N, 0.0f, Cref, N);
	for (int j = 0; j < N; j++)
		ck_assert_float_eq_tol(C[j], Cref[j], 1e-5f);
}
END_TEST

/* ---- double precision: rt_dgemm, rt_conv_f64, rt_softmax_f64 ------------- */

START_TEST(test_dgemm_ref_by_hand)
{
	/* the product of test_sgemm_ref_by_hand, in double */
	const double A[6] = {1, 2, 3, 4, 5, 6}, At[6] = {1, 4, 2, 5, 3, 6};
	const double Bm[6] = {7, 8, 9, 10, 11, 12}, Bt[6] = {7, 9, 11, 8, 10, 12};
	const double want[4] = {58, 64, 139, 154};
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			double C[4] = {1, 1, 1, 1};
			rt_dgemm_ref(ta, tb, 2, 2, 3, 2.0, ta ? At : A, ta ? 2 : 3, tb ? Bt : Bm, tb ? 3 : 2, -1.0, C, 2);
			for (int i = 0; i < 4; i++)
				ck_assert_double_eq(C[i], 2 * want[i] - 1);
		}
}
END_TEST

/* rt_dgemm (OpenBLAS dgemm, dgemv at M == 1 or N == 1) and rt_dgemm_portable
 * against rt_dgemm_ref (long double sums), the cases of the sgemm test.
 * Loop index: case * 24 + portable * 12 + transA * 6 + transB * 3 + set. */
START_TEST(test_dgemm_vs_ref)
{
	static const double coef[3][2] = {{1.0, 0.0}, {0.5, 1.0}, {-1.25, -0.75}};
	int ci = _i / 24, portable = (_i / 12) % 2, ta = (_i / 6) % 2, tb = (_i / 3) % 2;
	double alpha = coef[_i % 3][0], beta = coef[_i % 3][1];
	gemm_case g = gemm_cases[ci];
	int64_t arows = ta ? g.K : g.M, acols = ta ? g.M : g.K;
	int64_t brows = tb ? g.N : g.K, bcols = tb ? g.K : g.N;
	int64_t lda = acols + 3, ldb = bcols + 2, ldc = g.N + 5;
	rng r = {(uint64_t)_i + 11};
	double *A = xmalloc(sizeof(double) * (size_t)(arows * lda + 1));
	double *Bm = xmalloc(sizeof(double) * (size_t)(brows * ldb + 1));
	double *C = xmalloc(sizeof(double) * (size_t)(g.M * ldc));
	double *Cref = xmalloc(sizeof(double) * (size_t)(g.M * ldc));
	/* full double mantissas: a product computed in float would be off by ~1e-7 */
	for (int64_t i = 0; i < arows * lda + 1; i++)
		A[i] = (double)rnd(&r) + (double)rnd(&r) * 1e-9;
	for (int64_t i = 0; i < brows * ldb + 1; i++)
		Bm[i] = (double)rnd(&r) + (double)rnd(&r) * 1e-9;
	for (int64_t i = 0; i < g.M * ldc; i++)
		C[i] = beta == 0 ? NAN : (double)rnd(&r);
	memcpy(Cref, C, sizeof(double) * (size_t)(g.M * ldc));
	(portable ? rt_dgemm_portable : rt_dgemm)(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, C, ldc);
	rt_dgemm_ref(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, Cref, ldc);
	for (int64_t i = 0; i < g.M; i++)
		for (int64_t j = 0; j < ldc; j++) {
			double got = C[i * ldc + j], want = Cref[i * ldc + j];
			if (j >= g.N) {
				ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "padding C[%ld,%ld] changed",
					      (long)i, (long)j);
				continue;
			}
			double tol = 4.0 * (double)(g.K + 2) * DBL_EPSILON * (double)(g.K + 2);
			ck_assert_msg(isfinite(got) && fabs(got - want) <= tol,
				      "%s M=%ld N=%ld K=%ld tA=%d tB=%d alpha=%g beta=%g: C[%ld,%ld] = %.17g, ref %.17g",
				      portable ? "portable" : "rt_dgemm", (long)g.M, (long)g.N, (long)g.K, ta, tb, alpha,
				      beta, (long)i, (long)j, got, want);
		}
	free(A);
	free(Bm);
	free(C);
	free(Cref);
}
END_TEST

/* rt_dgemm_bias: the bias row in every row of C, then the product onto it. */
START_TEST(test_dgemm_bias)
{
	enum { M = 5, N = 7, K = 6 };
	rng r = {41};
	double A[M * K], Bt[N * K], bias[N], C[M * N], Cref[M * N];
	for (int i = 0; i < M * K; i++)
		A[i] = rnd(&r);
	for (int i = 0; i < N * K; i++)
		Bt[i] = rnd(&r);
	for (int j = 0; j < N; j++)
		bias[j] = rnd(&r);
	for (int i = 0; i < M * N; i++)
		C[i] = NAN, Cref[i] = bias[i % N];
	rt_dgemm_bias(0, 1, M, N, K, 1.5, A, K, Bt, K, 0.5, bias, C, N);
	rt_dgemm_ref(0, 1, M, N, K, 1.5, A, K, Bt, K, 0.5, Cref, N);
	for (int i = 0; i < M * N; i++)
		ck_assert_double_eq_tol(C[i], Cref[i], 1e-13);
}
END_TEST

/* rt_conv_f64 against rt_conv_ref (the textbook loop, float output) on data
 * that float holds exactly: the same taps (strides, pads, dilations, groups,
 * a depthwise case, a column longer than the buffer); then a double-only
 * perturbation must show in the f64 result (it is not computed in float). */
START_TEST(test_conv_f64)
{
	static const struct { int64_t n, c, m, group, d, k, s, pb, pe, dil; } cases[] = {
		{2, 4, 6, 2, 19, 3, 2, 1, 1, 1}, {1, 3, 3, 3, 16, 5, 1, 2, 2, 1}, {1, 8, 16, 1, 40, 4, 3, 0, 2, 2},
		{1, 600, 2, 1, 30, 9, 1, 4, 4, 1},
	};
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		int64_t n = cases[ci].n, c = cases[ci].c, m = cases[ci].m, group = cases[ci].group;
		int64_t xd[3] = {n, c, cases[ci].d}, kd[1] = {cases[ci].k}, st[1] = {cases[ci].s};
		int64_t pads[2] = {cases[ci].pb, cases[ci].pe}, dil[1] = {cases[ci].dil};
		int64_t out = (cases[ci].d + cases[ci].pb + cases[ci].pe - cases[ci].dil * (cases[ci].k - 1) - 1) /
				      cases[ci].s + 1;
		int64_t nx = n * c * cases[ci].d, nw = m * (c / group) * cases[ci].k, ny = n * m * out;
		rng r = {ci + 3};
		float *xf = xmalloc(sizeof(float) * (size_t)nx), *wf = xmalloc(sizeof(float) * (size_t)nw);
		float *bf = xmalloc(sizeof(float) * (size_t)m), *yf = xmalloc(sizeof(float) * (size_t)ny);
		double *x = xmalloc(sizeof(double) * (size_t)nx), *w = xmalloc(sizeof(double) * (size_t)nw);
		double *b = xmalloc(sizeof(double) * (size_t)m), *y = xmalloc(sizeof(double) * (size_t)ny);
		/* multiples of 1/64 in [-1, 1): sums of their products are exact in float */
		for (int64_t i = 0; i < nx; i++)
			x[i] = xf[i] = floorf(rnd(&r) * 64.0f) / 64.0f;
		for (int64_t i = 0; i < nw; i++)
			w[i] = wf[i] = floorf(rnd(&r) * 64.0f) / 64.0f;
		for (int64_t i = 0; i < m; i++)
			b[i] = bf[i] = floorf(rnd(&r) * 64.0f) / 64.0f;
		rt_conv_ref(yf, xf, wf, bf, 1, xd, m, group, kd, st, pads, dil);
		rt_conv_f64(y, x, w, b, 1, xd, m, group, kd, st, pads, dil);
		for (int64_t i = 0; i < ny; i++)
			ck_assert_msg(fabs(y[i] - (double)yf[i]) <= 1e-6 * (1 + fabs(y[i])), "case %zu: y[%ld] = %.17g, ref %.9g",
				      ci, (long)i, y[i], (double)yf[i]);
		for (int64_t i = 0; i < m; i++)
			b[i] += 1e-12;
		double *y2 = xmalloc(sizeof(double) * (size_t)ny);
		rt_conv_f64(y2, x, w, b, 1, xd, m, group, kd, st, pads, dil);
		for (int64_t i = 0; i < ny; i++)
			ck_assert_msg(fabs(y2[i] - y[i] - 1e-12) < 1e-14, "case %zu: a bias change of 1e-12 shows as %.3g",
				      ci, y2[i] - y[i]);
		free(xf), free(wf), free(bf), free(yf), free(x), free(w), free(b), free(y), free(y2);
	}
}
END_TEST

/* rt_softmax_f64 / rt_log_softmax_f64 against the definition in long double. */
START_TEST(test_softmax_f64)
{
	enum { OUTER = 3, N = 9, INNER = 2, TOTAL = OUTER * N * INNER };
	rng r = {77};
	double x[TOTAL], y[TOTAL], ly[TOTAL];
	for (int i = 0; i < TOTAL; i++)
		x[i] = rnd(&r) * 5.0 + rnd(&r) * 1e-9;
	rt_softmax_f64(y, x, OUTER, N, INNER);
	rt_log_softmax_f64(ly, x, OUTER, N, INNER);
	for (int o = 0; o < OUTER; o++)
		for (int i = 0; i < INNER; i++) {
			long double sum = 0;
			for (int j = 0; j < N; j++)
				sum += expl((long double)x[(o * N + j) * INNER + i]);
			for (int j = 0; j < N; j++) {
				int at = (o * N + j) * INNER + i;
				double want = (double)(expl((long double)x[at]) / sum);
				double lwant = (double)((long double)x[at] - logl(sum));
				ck_assert_msg(fabs(y[at] - want) <= 1e-15 + 1e-14 * want, "softmax: %.17g vs %.17g", y[at], want);
				ck_assert_msg(fabs(ly[at] - lwant) <= 1e-14 * (1 + fabs(lwant)), "log_softmax: %.17g vs %.17g",
					      ly[at], lwant);
			}
		}
}
END_TEST

/* rt_barrier_wait: each of n threads writes its slot for round r, meets
 * the others, then must see every slot at round r (a barrier that let one
 * through early would show an older round); then meets again before the
 * slots change.  3 threads on a 2-core machine also exercise the yield.
 * Variant 0: the flags of a small team (tid = the thread); variant 1: the
 * shared counter (tid -1, as a team larger than RT_BARRIER_FLAGS takes). */
enum { BAR_THREADS = 3, BAR_ROUNDS = 2000 };
typedef struct bar_job {
	rt_barrier *b;
	volatile int *slot;
	int id, tid, bad;
} bar_job;

static void *bar_run(void *arg)
{
	bar_job *j = arg;
	for (int r = 1; r <= BAR_ROUNDS; r++) {
		j->slot[j->id] = r;
		rt_barrier_wait(j->b, j->tid, BAR_THREADS);
		for (int k = 0; k < BAR_THREADS; k++)
			if (j->slot[k] != r)
				j->bad++;
		rt_barrier_wait(j->b, j->tid, BAR_THREADS);
	}
	return NULL;
}

START_TEST(test_barrier)
{
	int counter = _i;
	rt_barrier b = {.count = 0};
	volatile int slot[BAR_THREADS] = {0};
	bar_job job[BAR_THREADS];
	pthread_t th[BAR_THREADS];
	for (int k = 0; k < BAR_THREADS; k++) {
		job[k] = (bar_job){&b, slot, k, counter ? -1 : k, 0};
		ck_assert_int_eq(pthread_create(&th[k], NULL, bar_run, &job[k]), 0);
	}
	for (int k = 0; k < BAR_THREADS; k++) {
		ck_assert_int_eq(pthread_join(th[k], NULL), 0);
		ck_assert_msg(job[k].bad == 0, "thread %d saw %d stale slots", k, job[k].bad);
	}
	ck_assert_int_eq(b.gen, counter ? 2 * BAR_ROUNDS : 0);
	ck_assert_int_eq(b.count, 0);
	for (int k = 0; k < BAR_THREADS; k++)
		ck_assert_uint_eq(b.flag[k].v, counter ? 0 : 2 * BAR_ROUNDS);
	rt_barrier_wait(&b, 0, 1);      /* a team of one never waits */
}
END_TEST

/* rt_split_columns: RT_SPLIT_MIN by default; CELLRT_SPLIT_MIN replaces it
 * when it is a whole decimal number >= 0, and is ignored otherwise. */
START_TEST(test_split_columns)
{
	unsetenv("CELLRT_SPLIT_MIN");
	ck_assert(!rt_split_columns(RT_SPLIT_MIN - 1));
	ck_assert(rt_split_columns(RT_SPLIT_MIN));
	ck_assert(!rt_split_columns(4 * 32 * 32));      /* an LSTM of hidden size 32 */
	ck_assert(rt_split_columns(4 * 128 * 128));
	setenv("CELLRT_SPLIT_MIN", "0", 1);
	ck_assert(rt_split_columns(0));
	ck_assert(rt_split_columns(4 * 8 * 8));
	setenv("CELLRT_SPLIT_MIN", "1000000", 1);
	ck_assert(!rt_split_columns(4 * 256 * 256));
	ck_assert(rt_split_columns(1000000));
	static const char *const bad[] = {"", "-1", "12x", "x", "99999999999999999999999"};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		setenv("CELLRT_SPLIT_MIN", bad[k], 1);
		ck_assert_msg(!rt_split_columns(RT_SPLIT_MIN - 1) && rt_split_columns(RT_SPLIT_MIN),
			      "CELLRT_SPLIT_MIN=\"%s\" was not ignored", bad[k]);
	}
	unsetenv("CELLRT_SPLIT_MIN");
}
END_TEST

/* rt_team: rt_num_threads() threads, at most one per row, unless the
 * columns of the one row are split (batch 1, several steps, several threads,
 * a step large enough for rt_split_columns). */
START_TEST(test_team)
{
	unsetenv("CELLRT_SPLIT_MIN");
	setenv("CELLRT_NUM_THREADS", "3", 1);
	int cols = -1;
	ck_assert_int_eq(rt_team(8, 5, 0, NULL), 3);
	ck_assert_int_eq(rt_team(2, 5, 0, NULL), 2);
	ck_assert_int_eq(rt_team(1, 5, RT_SPLIT_MIN, NULL), 1);        /* no column split asked */
	ck_assert_int_eq(rt_team(1, 5, RT_SPLIT_MIN, &cols), 3);
	ck_assert_int_eq(cols, 1);
	ck_assert_int_eq(rt_team(1, 5, RT_SPLIT_MIN - 1, &cols), 1);    /* too small a step */
	ck_assert_int_eq(cols, 0);
	ck_assert_int_eq(rt_team(1, 1, RT_SPLIT_MIN, &cols), 1);        /* one step */
	ck_assert_int_eq(cols, 0);
	ck_assert_int_eq(rt_team(4, 5, RT_SPLIT_MIN, &cols), 3);        /* several rows: rows split */
	ck_assert_int_eq(cols, 0);
	setenv("CELLRT_NUM_THREADS", "1", 1);
	ck_assert_int_eq(rt_team(1, 5, RT_SPLIT_MIN, &cols), 1);
	ck_assert_int_eq(cols, 0);
	unsetenv("CELLRT_NUM_THREADS");
}
END_TEST

/* rt_states_prepare: allocation at the first run and at another batch size,
 * refusal of a batch change once started, initial values (copies, zeros)
 * only when not started, the arena's storage only counted. */
START_TEST(test_states_prepare)
{
	float *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	float init[12];
	for (int i = 0; i < 12; i++)
		init[i] = (float)i + 0.5f;
	rt_state s[2] = {{&a, &na, 6, NULL}, {&b, &nb, 6, init}};
	ck_assert_int_eq(rt_states_prepare(s, 2, 0, 0), RT_OK);
	ck_assert(a && b && na == 6 && nb == 6);
	ck_assert((uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0);
	for (int i = 0; i < 6; i++) {
		ck_assert(a[i] == 0.0f);
		ck_assert(b[i] == init[i]);
	}
	/* a stream goes on: the same storage, the states as they were */
	a[0] = 7.0f;
	b[0] = 8.0f;
	float *a0 = a;
	ck_assert_int_eq(rt_states_prepare(s, 2, 1, 0), RT_OK);
	ck_assert(a == a0 && a[0] == 7.0f && b[0] == 8.0f);
	/* a new run at the same batch size: initial values again, no allocation */
	ck_assert_int_eq(rt_states_prepare(s, 2, 0, 0), RT_OK);
	ck_assert(a == a0 && a[0] == 0.0f && b[0] == init[0]);
	/* another batch size: refused in a stream, storage untouched */
	s[0].count = s[1].count = 12;
	ck_assert_int_eq(rt_states_prepare(s, 2, 1, 0), RT_ERR_SHAPE);
	ck_assert(a == a0 && na == 6 && nb == 6);
	/* and made anew for a run */
	ck_assert_int_eq(rt_states_prepare(s, 2, 0, 0), RT_OK);
	ck_assert(na == 12 && nb == 12);
	for (int i = 0; i < 12; i++) {
		ck_assert(a[i] == 0.0f);
		ck_assert(b[i] == init[i]);
	}
	free(a);
	free(b);
	/* in an arena: the storage is the caller's, only its count changes */
	float part[2][16];
	float *pa = part[0], *pb = part[1];
	size_t ca = 0, cb = 0;
	memset(part, 0xff, sizeof part);
	rt_state t[2] = {{&pa, &ca, 16, NULL}, {&pb, &cb, 12, init}};
	ck_assert_int_eq(rt_states_prepare(t, 2, 0, 1), RT_OK);
	ck_assert(pa == part[0] && pb == part[1] && ca == 16 && cb == 12);
	ck_assert(pa[15] == 0.0f && pb[11] == init[11]);
	ck_assert_int_eq(rt_states_prepare(t, 0, 1, 1), RT_OK);
	t[1].count = 8;
	ck_assert_int_eq(rt_states_prepare(t, 2, 1, 1), RT_ERR_SHAPE);
	ck_assert(cb == 12);
}
END_TEST

/* rt_gemv_pack_once*: packed on the first call as rt_gemv_pack* packs, then
 * the same buffer, untouched, whatever the weights are now. */
START_TEST(test_gemv_pack_once)
{
	enum { N = 40, K = 24 };
	rng r = {77};
	float *W = xmalloc(sizeof(float) * N * K);
	fill(&r, W, N * K);
	float *want = xmalloc(sizeof(float) * N * K);
	rt_gemv_pack(1, N, K, W, K, want);
	float *P = NULL;
	const float *p = rt_gemv_pack_once(&P, 1, N, K, W, K);
	ck_assert(p && p == P && (uintptr_t)P % 64 == 0);
	ck_assert(!memcmp(P, want, sizeof(float) * N * K));
	W[0] += 1.0f;
	ck_assert(rt_gemv_pack_once(&P, 1, N, K, W, K) == p);
	ck_assert(!memcmp(P, want, sizeof(float) * N * K));

	size_t nh = rt_gemv_pack_bf16_size(N, K);
	uint16_t *wh = xmalloc(sizeof(uint16_t) * nh), *H = NULL;
	rt_gemv_pack_bf16(0, N, K, W, N, wh);
	ck_assert(rt_gemv_pack_once_bf16(&H, 0, N, K, W, N) == H && H);
	ck_assert(!memcmp(H, wh, sizeof(uint16_t) * nh));
	ck_assert(rt_gemv_pack_once_bf16(&H, 0, N, K, NULL, N) == H);

	size_t nq = rt_gemv_pack_i8_size(N, K);
	int8_t *wq = xmalloc(nq), *Q = NULL;
	rt_gemv_pack_i8(1, N, K, W, K, wq);
	ck_assert(rt_gemv_pack_once_i8(&Q, 1, N, K, W, K) == Q && Q);
	ck_assert(!memcmp(Q, wq, nq));
	ck_assert(rt_gemv_pack_once_i8(&Q, 1, N, K, NULL, K) == Q);
	free(W);
	free(want);
	free(P);
	free(wh);
	free(H);
	free(wq);
	free(Q);
}
END_TEST

/* rt_sgemm_bias through its public entry (own kernels, or the bias copy and
 * BLAS when they do not apply: M * K too large, K == 0), against the
 * reference on C filled with the bias. */
START_TEST(test_sgemm_bias)
{
	static const gemm_case cases[] = {{1, 37, 19}, {128, 1024, 1}, {300, 70, 1000}, {5, 9, 0}};
	gemm_case g = cases[_i];
	int64_t ldc = g.N + 1;
	rng r = {(uint64_t)_i + 41};
	float *A = xmalloc(sizeof(float) * (size_t)(g.M * g.K + 1));
	float *Bm = xmalloc(sizeof(float) * (size_t)(g.N * g.K + 1));
	float *bias = xmalloc(sizeof(float) * (size_t)g.N);
	float *C = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	float *Cref = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	fill(&r, A, g.M * g.K + 1);
	fill(&r, Bm, g.N * g.K + 1);
	fill(&r, bias, g.N);
	for (int64_t i = 0; i < g.M * ldc; i++)
		C[i] = Cref[i] = NAN;
	for (int64_t i = 0; i < g.M; i++)
		memcpy(Cref + i * ldc, bias, sizeof(float) * (size_t)g.N);
	rt_sgemm_bias(0, 1, g.M, g.N, g.K, 1.5f, A, g.K, Bm, g.K, 0.5f, bias, C, ldc);
	rt_sgemm_ref(0, 1, g.M, g.N, g.K, 1.5f, A, g.K, Bm, g.K, 0.5f, Cref, ldc);
	for (int64_t i = 0; i < g.M; i++)
		for (int64_t j = 0; j < g.N; j++) {
			double tol = 8.0 * (double)(g.K + 2) * FLT_EPSILON * (double)(g.K + 1) + 1e-6;
			ck_assert_msg(fabs((double)C[i * ldc + j] - Cref[i * ldc + j]) <= tol,
				      "M=%ld N=%ld K=%ld: C[%ld,%ld] = %.9g, ref %.9g", (long)g.M, (long)g.N,
				      (long)g.K, (long)i, (long)j, C[i * ldc + j], Cref[i * ldc + j]);
		}
	for (int64_t i = 0; i < g.M; i++)
		ck_assert(isnan(C[i * ldc + g.N]));     /* padding untouched */
	free(A);
	free(Bm);
	free(bias);
	free(C);
	free(Cref);
}
END_TEST

/* ---- activations: error in ulp against double precision ---- */

/* |got - want| in units of the float spacing at want. */
static double ulp_err(float got, double want)
{
	float w = (float)want;
	double ulp = (double)nextafterf(fabsf(w), INFINITY) - fabsf(w);
	if (ulp == 0 || !isfinite(ulp))
		ulp = FLT_MIN * FLT_EPSILON;
	return fabs((double)got - want) / ulp;
}

/* Every 97th float in [-100, 100] and the special values: rt_sigmoidf within
 * 3 ulp where the result is normal (|x| <= 80; measured 2.4), within 2e-38
 * beyond; rt_tanhf within 7 ulp everywhere (measured 6.0, near +-1, where
 * its 3.6e-7 relative error is 6 ulp of the spacing below 1); NaN in, NaN
 * out; limits at infinity. */
typedef void act_fn(float x, float *s, float *t);

static void act_plain(float x, float *s, float *t)
{
	*s = rt_sigmoidf(x);
	*t = rt_tanhf(x);
}

/* As generated code compiles them on CPUs with FMA: its Makefile's
 * -ffp-contract=fast lets a * b + c become one fused multiply-add.  Only in
 * the -O2 build: GCC contracts with its "expensive" optimisations, which the
 * -O1 sanitizer build lacks (and the optimize attribute cannot bring back
 * there: the activations it would inline are compiled at -O1). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define HAVE_ACT_FMA 1
__attribute__((target("avx2,fma"), optimize("fp-contract=fast"))) static void act_fma(float x, float *s, float *t)
{
	*s = rt_sigmoidf(x);
	*t = rt_tanhf(x);
}
#endif

/* The grid of test_activation_ulp through act: asserts the bounds; returns
 * how many results differ from act_plain's. */
static long activation_grid(act_fn *act)
{
	double worst_s = 0, worst_t = 0;
	float at_s = 0, at_t = 0;
	long differ = 0;
	for (int sgn = 0; sgn < 2; sgn++)
		for (uint32_t bits = 0; bits <= 0x42c80000u; bits += 97) {     /* 0x42c80000 = 100.0f */
			uint32_t b = bits | (sgn ? 0x80000000u : 0);
			float x, s, t, s0, t0;
			memcpy(&x, &b, sizeof x);
			double s_ref = 1.0 / (1.0 + exp(-(double)x)), t_ref = tanh((double)x);
			act(x, &s, &t);
			act_plain(x, &s0, &t0);
			differ += (s != s0) + (t != t0);
			if (fabsf(x) <= 80.0f) {
				double e = ulp_err(s, s_ref);
				if (e > worst_s)
					worst_s = e, at_s = x;
			} else {
				ck_assert_msg(fabs((double)s - s_ref) <= 2e-38, "sigmoid(%.9g) = %.9g", x, s);
			}
			double e = ulp_err(t, t_ref);
			if (e > worst_t)
				worst_t = e, at_t = x;
		}
	ck_assert_msg(worst_s <= 3.0, "sigmoid: %.2f ulp at %.9g", worst_s, at_s);
	ck_assert_msg(worst_t <= 7.0, "tanh: %.2f ulp at %.9g", worst_t, at_t);
	return differ;
}

/* rt_clipf against ONNX's Clip (max with min, then min with max: numpy.clip):
 * a min above the max gives the max, as the root graph's expression does. */
START_TEST(test_clipf_onnx)
{
	ck_assert_float_eq(rt_clipf(0.5f, 0.0f, 1.0f), 0.5f);
	ck_assert_float_eq(rt_clipf(-2.0f, 0.0f, 1.0f), 0.0f);
	ck_assert_float_eq(rt_clipf(3.0f, 0.0f, 1.0f), 1.0f);
	ck_assert_float_eq(rt_clipf(-2.0f, 1.0f, 0.0f), 0.0f);
	ck_assert_float_eq(rt_clipf(0.5f, 1.0f, 0.0f), 0.0f);
	ck_assert_float_eq(rt_clipf(3.0f, 1.0f, 0.0f), 0.0f);
	ck_assert(isnan(rt_clipf(NAN, 0.0f, 1.0f)));
	ck_assert_float_eq(rt_clipf(-1e30f, -INFINITY, 2.0f), -1e30f);
}
END_TEST

START_TEST(test_activation_ulp)
{
	activation_grid(act_plain);
	ck_assert(isnan(rt_sigmoidf(NAN)) && isnan(rt_tanhf(NAN)) && isnan(rt_expf_act(NAN)));
	ck_assert_float_eq(rt_sigmoidf(INFINITY), 1.0f);
	ck_assert(rt_sigmoidf(-INFINITY) >= 0.0f && rt_sigmoidf(-INFINITY) < 2e-38f);
	ck_assert_float_eq(rt_tanhf(INFINITY), 1.0f);
	ck_assert_float_eq(rt_tanhf(-INFINITY), -1.0f);
	ck_assert_float_eq(rt_tanhf(-0.0f), -0.0f);
	ck_assert(signbit(rt_tanhf(-0.0f)));
	ck_assert_float_eq(rt_sigmoidf(0.0f), 0.5f);
}
END_TEST

/* The same bounds with fused multiply-adds; that some results differ shows
 * the contraction took place (this test would check nothing otherwise). */
#ifdef HAVE_ACT_FMA
START_TEST(test_activation_ulp_fma)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("fma") || !__builtin_cpu_supports("avx2"))
		return;         /* no FMA here: generated code has no fused path on this CPU either */
	long differ = activation_grid(act_fma);
	ck_assert_msg(differ > 0, "no result changed with fused multiply-adds: contraction did not happen");
}
END_TEST
#endif

/* ---- tensor files ------------------------------------------------------------ */

static const float tf_w[6] = {1.5f, -2, 3, 4.25f, -5, 6};
static const int64_t tf_ids[4] = {7, -1, 1LL << 40, 0};
static const uint8_t tf_flag = 42;

/* Writes the sample file (4 tensors: float [2,3], int64 [4], uint8 scalar,
 * float [0,5]) to path. */
static void write_sample(const char *path)
{
	rt_tensor t[4];
	memset(t, 0, sizeof t);
	t[0] = (rt_tensor){.name = "W", .dtype = 1, .rank = 2, .dims = {2, 3}, .data = tf_w,
			   .nbytes = sizeof tf_w};
	t[1] = (rt_tensor){.name = "ids", .dtype = 7, .rank = 1, .dims = {4}, .data = tf_ids,
			   .nbytes = sizeof tf_ids};
	t[2] = (rt_tensor){.name = "flag", .dtype = 2, .rank = 0, .data = &tf_flag, .nbytes = 1};
	t[3] = (rt_tensor){.name = "empty", .dtype = 1, .rank = 2, .dims = {0, 5}, .data = NULL,
			   .nbytes = 0};
	ck_assert_int_eq(rt_tf_write(path, 4, t), RT_OK);
}

/* The whole file in a heap block of exactly its size, 64-byte aligned. */
static unsigned char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	ck_assert_int_gt(n, 0);
	void *p = NULL;
	ck_assert_int_eq(posix_memalign(&p, 64, (size_t)n), 0);
	ck_assert_uint_eq(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*size = (size_t)n;
	return p;
}

/* An exact-size aligned copy of the first n bytes of img (so that any read
 * past n is outside the allocation, which AddressSanitizer reports). */
static unsigned char *copy_prefix(const unsigned char *img, size_t n)
{
	void *p = NULL;
	ck_assert_int_eq(posix_memalign(&p, 64, n ? n : 1), 0);
	memcpy(p, img, n);
	return p;
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_tf_round_trip)
{
	char path[256];
	tmp_path(path, sizeof path, "rt");
	write_sample(path);
	rt_tensorfile tf;
	ck_assert_int_eq(rt_tf_open(&tf, path), RT_OK);
	ck_assert_int_eq(tf.count, 4);
	const rt_tensor *w = rt_tf_find(&tf, "W"), *ids = rt_tf_find(&tf, "ids");
	const rt_tensor *flag = rt_tf_find(&tf, "flag"), *empty = rt_tf_find(&tf, "empty");
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(ids);
	ck_assert_ptr_nonnull(flag);
	ck_assert_ptr_nonnull(empty);
	ck_assert_ptr_null(rt_tf_find(&tf, "nope"));
	ck_assert_int_eq(w->dtype, 1);
	ck_assert_int_eq(w->rank, 2);
	ck_assert_int_eq(w->dims[0], 2);
	ck_assert_int_eq(w->dims[1], 3);
	ck_assert_uint_eq(w->nbytes, sizeof tf_w);
	ck_assert_int_eq(memcmp(w->data, tf_w, sizeof tf_w), 0);
	ck_assert_int_eq(memcmp(ids->data, tf_ids, sizeof tf_ids), 0);
	ck_assert_int_eq(ids->dtype, 7);
	ck_assert_int_eq(flag->rank, 0);
	ck_assert_uint_eq(flag->nbytes, 1);
	ck_assert_int_eq(*(const uint8_t *)flag->data, 42);
	ck_assert_uint_eq(empty->nbytes, 0);
	ck_assert_int_eq(empty->dims[0], 0);
	ck_assert_int_eq(empty->dims[1], 5);
	ck_assert_uint_eq((uintptr_t)w->data % 64, 0);
	ck_assert_uint_eq((uintptr_t)ids->data % 64, 0);

	const void *data = NULL;
	int64_t good[2] = {2, 3}, wrong[2] = {3, 2};
	ck_assert_int_eq(rt_tf_expect(&tf, "W", 1, 2, good, &data), RT_OK);
	ck_assert_ptr_eq(data, w->data);
	ck_assert_int_eq(rt_tf_expect(&tf, "W", 1, 2, wrong, &data), RT_ERR_MISMATCH);
	ck_assert_int_eq(rt_tf_expect(&tf, "W", 11, 2, good, &data), RT_ERR_MISMATCH);
	ck_assert_int_eq(rt_tf_expect(&tf, "W", 1, 1, good, &data), RT_ERR_MISMATCH);
	ck_assert_int_eq(rt_tf_expect(&tf, "missing", 1, 2, good, &data), RT_ERR_MISMATCH);
	rt_tf_close(&tf);

	/* the same checks on the image in memory */
	size_t n;
	unsigned char *img = slurp(path, &n);
	ck_assert_int_eq(rt_tf_open_mem(&tf, img, n), RT_OK);
	ck_assert_int_eq(tf.count, 4);
	ck_assert_int_eq(memcmp(rt_tf_find(&tf, "W")->data, tf_w, sizeof tf_w), 0);
	rt_tf_close(&tf);
	free(img);
	unlink(path);
}
END_TEST

START_TEST(test_tf_write_refuses_bad_tensors)
{
	char path[256];
	tmp_path(path, sizeof path, "w");
	char longname[RT_TF_NAME + 1];
	memset(longname, 'a', RT_TF_NAME);
	longname[RT_TF_NAME] = 0;
	rt_tensor t = {.name = "W", .dtype = 1, .rank = 2, .dims = {2, 3}, .data = tf_w,
		       .nbytes = sizeof tf_w};
	rt_tensor bad = t;
	bad.nbytes = 20;                                        /* size disagrees */
	ck_assert_int_eq(rt_tf_write(path, 1, &bad), RT_ERR_ARG);
	bad = t;
	bad.name = longname;                                    /* name too long */
	ck_assert_int_eq(rt_tf_write(path, 1, &bad), RT_ERR_ARG);
	bad = t;
	bad.dtype = 8;                                          /* strings: unsupported */
	ck_assert_int_eq(rt_tf_write(path, 1, &bad), RT_ERR_ARG);
	bad = t;
	bad.dims[0] = -2;
	ck_assert_int_eq(rt_tf_write(path, 1, &bad), RT_ERR_ARG);
	rt_tensor two[2] = {t, t};                              /* duplicate names */
	ck_assert_int_eq(rt_tf_write(path, 2, two), RT_ERR_ARG);
	ck_assert_int_eq(access(path, F_OK), -1);               /* nothing written */
	ck_assert_int_eq(rt_tf_write("/nonexistent-dir/x/w.bin", 1, &t), RT_ERR_IO);
}
END_TEST

START_TEST(test_tf_open_missing)
{
	rt_tensorfile tf;
	ck_assert_int_eq(rt_tf_open(&tf, "/nonexistent-dir/none.bin"), RT_ERR_IO);
	ck_assert_int_eq(rt_tf_open(&tf, "/"), RT_ERR_IO);     /* a directory */
	ck_assert_int_eq(rt_tf_open(&tf, NULL), RT_ERR_ARG);
}
END_TEST

/* Every proper prefix of a valid file is refused as truncated, from memory
 * (exact-size buffers) and from disk. */
START_TEST(test_tf_truncated_every_length)
{
	char path[256], cut[256];
	tmp_path(path, sizeof path, "tr");
	tmp_path(cut, sizeof cut, "trcut");
	write_sample(path);
	size_t n;
	unsigned char *img = slurp(path, &n);
	for (size_t len = 0; len < n; len++) {
		unsigned char *p = copy_prefix(img, len);
		rt_tensorfile tf;
		int st = rt_tf_open_mem(&tf, p, len);
		ck_assert_msg(st == RT_ERR_TRUNCATED, "prefix of %zu/%zu bytes: status %d (%s)", len, n,
			      st, rt_status_str(st));
		free(p);
		if (len % 37 == 0 || len + 1 == n) {
			write_file(cut, img, len);
			st = rt_tf_open(&tf, cut);
			ck_assert_msg(st == RT_ERR_TRUNCATED, "file of %zu bytes: status %d", len, st);
		}
	}
	free(img);
	unlink(path);
	unlink(cut);
}
END_TEST

/* FNV-1a-64, written out again here to forge consistent checksums. */
static uint64_t fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void reseal(unsigned char *img, size_t n)
{
	put64(img + 40, fnv(img + 64, n - 64));
}

static int open_copy(const unsigned char *img, size_t n)
{
	unsigned char *p = copy_prefix(img, n);
	rt_tensorfile tf;
	int st = rt_tf_open_mem(&tf, p, n);
	if (st == RT_OK)
		rt_tf_close(&tf);
	free(p);
	return st;
}

START_TEST(test_tf_corrupted)
{
	char path[256];
	tmp_path(path, sizeof path, "co");
	write_sample(path);
	size_t n;
	unsigned char *img = slurp(path, &n);
	ck_assert_int_eq(open_copy(img, n), RT_OK);
	/* any flipped byte after the header breaks the checksum */
	for (size_t at = 64; at < n; at += 29) {
		img[at] ^= 0x10;
		ck_assert_msg(open_copy(img, n) == RT_ERR_CHECKSUM, "byte %zu flipped", at);
		img[at] ^= 0x10;
	}
	img[n - 1] ^= 1;
	ck_assert_int_eq(open_copy(img, n), RT_ERR_CHECKSUM);
	img[n - 1] ^= 1;
	img[41] ^= 1;                                           /* the checksum itself */
	ck_assert_int_eq(open_copy(img, n), RT_ERR_CHECKSUM);
	img[41] ^= 1;
	img[0] = 'X';                                           /* magic */
	ck_assert_int_eq(open_copy(img, n), RT_ERR_FORMAT);
	img[0] = 'C';
	img[8] = 2;                                             /* version */
	ck_assert_int_eq(open_copy(img, n), RT_ERR_FORMAT);
	img[8] = 1;
	ck_assert_int_eq(open_copy(img, n), RT_OK);
	/* a file with trailing bytes is not the file the header describes */
	unsigned char *longer = copy_prefix(img, n);
	longer = realloc(longer, n + 8);
	ck_assert_ptr_nonnull(longer);
	memset(longer + n, 0, 8);
	{
		void *p = NULL;
		ck_assert_int_eq(posix_memalign(&p, 64, n + 8), 0);
		memcpy(p, longer, n + 8);
		rt_tensorfile tf;
		ck_assert_int_ne(rt_tf_open_mem(&tf, p, n + 8), RT_OK);
		free(p);
	}
	free(longer);
	free(img);
	unlink(path);
}
END_TEST

/* A table that lies, with a checksum that matches: refused (never RT_OK),
 * and never read past the end (ASan build). */
START_TEST(test_tf_forged_table)
{
	char path[256];
	tmp_path(path, sizeof path, "fo");
	write_sample(path);
	size_t n;
	unsigned char *orig = slurp(path, &n);
	/* entry 0 ("W") is at 64; offset at +232, nbytes at +240, rank at +164,
	 * dims at +168 */
	struct { size_t at; uint64_t v; int width; const char *what; } forge[] = {
		{64 + 232, 1ull << 40, 8, "offset past the end"},
		{64 + 232, 65, 8, "misaligned offset"},
		{64 + 232, 0, 8, "offset inside the header"},
		{64 + 240, 4096, 8, "nbytes disagreeing with the shape"},
		{64 + 168, (uint64_t)-1, 8, "negative dim"},
		{64 + 168, 1ull << 62, 8, "dims overflowing the size"},
		{64 + 164, 9, 4, "rank above the maximum"},
		{64 + 160, 8, 4, "string dtype"},
		{64 + 160, 1000, 4, "unknown dtype"},
		{12, 1000, 4, "count larger than the table"},
		{24, 128, 8, "data offset inside the table"},
		{64, 0, 1, "empty name"},
		{64 + 256, 'W', 1, "duplicate name"},   /* with the memset below: "ids" -> "W" */
	};
	for (size_t k = 0; k < sizeof forge / sizeof forge[0]; k++) {
		unsigned char *img = copy_prefix(orig, n);
		if (forge[k].width == 8)
			put64(img + forge[k].at, forge[k].v);
		else if (forge[k].width == 4)
			for (int i = 0; i < 4; i++)
				img[forge[k].at + i] = (unsigned char)(forge[k].v >> (8 * i));
		else
			img[forge[k].at] = (unsigned char)forge[k].v;
		if (k + 1 == sizeof forge / sizeof forge[0])
			memset(img + 64 + 256 + 1, 0, 3);       /* "ids" -> "W" */
		reseal(img, n);
		int st = open_copy(img, n);
		ck_assert_msg(st != RT_OK && st != RT_ERR_CHECKSUM, "%s: status %d (%s)", forge[k].what,
			      st, rt_status_str(st));
		free(img);
	}
	/* a consistent entry (dims [2,300], nbytes 2400) whose data runs past
	 * the end of the file */
	unsigned char *img = copy_prefix(orig, n);
	put64(img + 64 + 168 + 8, 300);
	put64(img + 64 + 240, 2 * 300 * 4);
	reseal(img, n);
	ck_assert_int_eq(open_copy(img, n), RT_ERR_TRUNCATED);
	free(img);
	free(orig);
	unlink(path);
}
END_TEST

START_TEST(test_dtype_size)
{
	ck_assert_uint_eq(rt_dtype_size(1), 4);
	ck_assert_uint_eq(rt_dtype_size(2), 1);
	ck_assert_uint_eq(rt_dtype_size(6), 4);
	ck_assert_uint_eq(rt_dtype_size(7), 8);
	ck_assert_uint_eq(rt_dtype_size(9), 1);
	ck_assert_uint_eq(rt_dtype_size(11), 8);
	ck_assert_uint_eq(rt_dtype_size(0), 0);
	ck_assert_uint_eq(rt_dtype_size(8), 0);                 /* string */
	ck_assert_uint_eq(rt_dtype_size(-1), 0);
	ck_assert_uint_eq(rt_dtype_size(1000), 0);
}
END_TEST

/* ---- rt_status_str ------------------------------------------------------------ */

/* ---- ODE solvers (rt_ode.c) ---- */

/* y' = -p y, p = ((double *)ctx)[0]; its vector-Jacobian products */
static void ode_decay(void *ctx, double t, const double *y, double *dy)
{
	(void)t;
	double p = *(const double *)ctx;
	dy[0] = -p * y[0];
	dy[1] = -p * y[1];
}

static void ode_decay_vjp(void *ctx, double t, const double *y, const double *a, double *ay, double *gp)
{
	(void)t;
	double p = *(const double *)ctx;
	ay[0] = -p * a[0];
	ay[1] = -p * a[1];
	gp[0] += -(a[0] * y[0] + a[1] * y[1]);
}

START_TEST(test_ode_tableaus)
{
	for (int m = 0; m < RT_ODE_METHODS; m++) {
		const rt_ode_tableau *T = &rt_ode_tableaus[m];
		ck_assert_int_eq(rt_ode_method_lookup(T->name), m);
		double sb = 0, se = 0;
		for (int i = 0; i < T->stages; i++) {
			double sa = 0;
			for (int j = 0; j < i; j++)
				sa += T->a[i][j];
			ck_assert_msg(fabs(sa - T->c[i]) < 1e-14, "%s: row %d of a does not sum to c", T->name, i);
			sb += T->b[i];
			se += T->e[i];
			if (T->fsal)
				ck_assert(i < T->stages - 1 ? T->a[T->stages - 1][i] == T->b[i] : T->b[i] == 0);
		}
		ck_assert_msg(fabs(sb - 1) < 1e-14, "%s: b does not sum to 1", T->name);
		ck_assert(fabs(se) < 1e-14);
	}
	ck_assert_int_eq(rt_ode_method_lookup("rk45"), -1);
	ck_assert_int_eq(rt_ode_model_lookup("ghbnode"), RT_ODE_GHBNODE);
	ck_assert_int_eq(rt_ode_model_lookup("sonode"), RT_ODE_SONODE);
	ck_assert_int_eq(rt_ode_model_lookup("ode"), -1);
}
END_TEST

START_TEST(test_ode_fixed_steps)
{
	double p = 1;
	/* one step of y' = -y of size h multiplies y by the method's stability polynomial */
	const double h = 0.1;
	const double growth[] = {1 - h, 1 - h + h * h / 2, 1 - h + h * h / 2 - h * h * h / 6 + h * h * h * h / 24};
	for (int m = RT_ODE_EULER; m <= RT_ODE_RK4; m++) {
		rt_ode_opts o = {m, 10, 0, 0, 0};
		rt_ode_stats st = {0, 0, 0};
		double y[2] = {1, 2};
		ck_assert_int_eq(rt_ode_solve(&o, ode_decay, &p, 2, y, 0, 1, NULL, &st), RT_OK);
		double want = pow(growth[m], 10);
		ck_assert_msg(fabs(y[0] - want) < 1e-14 && fabs(y[1] - 2 * want) < 1e-14, "%s: %.17g, want %.17g",
			      rt_ode_tableaus[m].name, y[0], want);
		ck_assert_int_eq(st.nfe, 10 * rt_ode_tableaus[m].stages);
		ck_assert_int_eq(st.accepted, 10);
		ck_assert_int_eq(st.rejected, 0);
	}
	rt_ode_opts bad = {RT_ODE_RK4, 0, 0, 0, 0};
	rt_ode_stats st = {0, 0, 0};
	double y[2] = {1, 2};
	ck_assert_int_eq(rt_ode_solve(&bad, ode_decay, &p, 2, y, 0, 1, NULL, &st), RT_ERR_ARG);
}
END_TEST

START_TEST(test_ode_dopri5)
{
	double p = 3;
	rt_ode_opts o = {RT_ODE_DOPRI5, 0, 1e-8, 1e-10, 1000};
	rt_ode_stats st = {0, 0, 0};
	double y[2] = {1, 2};
	ck_assert_int_eq(rt_ode_solve(&o, ode_decay, &p, 2, y, 0, 2, NULL, &st), RT_OK);
	ck_assert(fabs(y[0] - exp(-6)) < 1e-8 && fabs(y[1] - 2 * exp(-6)) < 1e-8);
	/* two evaluations choose the first step; every step tried costs 6 (FSAL) */
	ck_assert_int_eq(st.nfe, 2 + 6 * (st.accepted + st.rejected));
	ck_assert_int_gt(st.accepted, 5);
	/* backward in time undoes it */
	rt_ode_stats back = {0, 0, 0};
	ck_assert_int_eq(rt_ode_solve(&o, ode_decay, &p, 2, y, 2, 0, NULL, &back), RT_OK);
	ck_assert(fabs(y[0] - 1) < 1e-6 && fabs(y[1] - 2) < 1e-6);
	/* the step limit is a status, with the steps tried counted */
	rt_ode_opts few = {RT_ODE_DOPRI5, 0, 1e-10, 1e-12, 3};
	rt_ode_stats lim = {0, 0, 0};
	ck_assert_int_eq(rt_ode_solve(&few, ode_decay, &p, 2, y, 0, 2, NULL, &lim), RT_ERR_ODE_STEPS);
	ck_assert_int_eq(lim.accepted + lim.rejected, 3);
	ck_assert_str_eq(rt_status_str(RT_ERR_ODE_STEPS),
			 "an ODE solver reached its step limit (max_steps) before the end of the interval");
	/* a zero-length interval takes no step */
	rt_ode_stats none = {0, 0, 0};
	ck_assert_int_eq(rt_ode_solve(&o, ode_decay, &p, 2, y, 1, 1, NULL, &none), RT_OK);
	ck_assert_int_eq(none.nfe, 0);
}
END_TEST

START_TEST(test_ode_gradients)
{
	/* Euler's map y -> (1 - p h)^N y: backpropagation through its steps is exact */
	double p = 0.7, y0 = 1.5, h = 0.1;
	int N = 10;
	rt_ode_opts o = {RT_ODE_EULER, N, 0, 0, 0};
	rt_ode_tape tp;
	memset(&tp, 0, sizeof tp);
	rt_ode_stats st = {0, 0, 0};
	double y[2] = {y0, 0};
	ck_assert_int_eq(rt_ode_solve(&o, ode_decay, &p, 2, y, 0, 1, &tp, &st), RT_OK);
	double a[2] = {1, 0}, gp = 0;
	rt_ode_stats bst = {0, 0, 0};
	ck_assert_int_eq(rt_ode_backprop(&tp, 0, ode_decay_vjp, &p, a, &gp, &bst), RT_OK);
	ck_assert(fabs(a[0] - pow(1 - p * h, N)) < 1e-14);
	ck_assert(fabs(gp - y0 * N * pow(1 - p * h, N - 1) * -h) < 1e-13);
	ck_assert_int_eq(bst.nfe, N);
	rt_ode_tape_free(&tp);
	/* the adjoint method: y(1) = y0 e^-p, so dL/dy0 = e^-p, dL/dp = -y0 e^-p */
	rt_ode_opts ad = {RT_ODE_DOPRI5, 0, 1e-10, 1e-12, 1000};
	double z[2] = {y0 * exp(-p), 0}, b[2] = {1, 0}, g = 0;
	rt_ode_stats ast = {0, 0, 0};
	ck_assert_int_eq(rt_ode_adjoint(&ad, ode_decay, ode_decay_vjp, &p, 2, 1, z, b, &g, 0, 1, &ast), RT_OK);
	ck_assert(fabs(z[0] - y0) < 1e-8);
	ck_assert(fabs(b[0] - exp(-p)) < 1e-8);
	ck_assert(fabs(g + y0 * exp(-p)) < 1e-8);
}
END_TEST

START_TEST(test_ode_block)
{
	/* hbnode with W_h = 0: m' = -gamma m + f, f = tanh(b_h) constant, so
	 * m(t) = f/gamma (1 - e^-gamma t), h(t) = h0 + f/gamma (t - (1 - e^-gamma t)/gamma) */
	const float x[2] = {0.5f, -1}, W_x[2] = {2, 0}, b_x[1] = {0.25f}, W_h[1] = {0}, b_h[1] = {0.4f};
	const float w[1] = {-1};
	float y[2];
	int64_t stats[3];
	rt_ode_opts o = {RT_ODE_DOPRI5, 0, 1e-9, 1e-11, 1000};
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_HBNODE, &o, 0, 2, 2, 1, 1, 0, x,
					  (const float *const[]){W_x, b_x, W_h, b_h, w}, y, stats), RT_OK);
	double gm = 1 / (1 + exp(1.0)), f = tanh(0.4f), T = 2;
	for (int b = 0; b < 2; b++) {
		double h0 = 2 * x[b] + 0.25;
		double want = h0 + f / gm * (T - (1 - exp(-gm * T)) / gm);
		ck_assert_msg(fabs(y[b] - want) < 1e-6, "row %d: %.9g, want %.9g", b, y[b], want);
	}
	ck_assert_int_eq(stats[0], 2 + 6 * (stats[1] + stats[2]));
	/* node with f = 0 leaves h0 */
	const float zero[1] = {0};
	rt_ode_opts e = {RT_ODE_EULER, 3, 0, 0, 0};
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_NODE, &e, 0, 1, 2, 1, 1, 0, x,
					  (const float *const[]){W_x, b_x, zero, zero}, y, stats), RT_OK);
	ck_assert(y[0] == 1.25f && y[1] == -1.75f);
	ck_assert(stats[0] == 3 && stats[1] == 3 && stats[2] == 0);
	/* ghbnode reads c */
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_GHBNODE, &e, 0, 1, 2, 1, 1, 0, x,
					  (const float *const[]){W_x, b_x, W_h, b_h, w, NULL}, y, stats), RT_ERR_ARG);
	/* anode with f = 0: h0 and its zeros stay; P must be given, and only for anode */
	const float zeros[4] = {0};
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_ANODE, &e, 0, 1, 2, 1, 1, 1, x,
					  (const float *const[]){W_x, b_x, zeros, zeros}, y, stats), RT_OK);
	ck_assert(y[0] == 1.25f && y[1] == -1.75f);
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_ANODE, &e, 0, 1, 2, 1, 1, 0, x,
					  (const float *const[]){W_x, b_x, zeros, zeros}, y, stats), RT_ERR_ARG);
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_NODE, &e, 0, 1, 2, 1, 1, 2, x,
					  (const float *const[]){W_x, b_x, zero, zero}, y, stats), RT_ERR_ARG);
	/* sonode with f = 0: v stays W_v x + b_v, so h(1) = h0 + v0 exactly in 3 Euler steps of 1/3
	 * (up to rounding) */
	const float W_v[1] = {-1}, b_v[1] = {0.5f};
	ck_assert_int_eq(rt_ode_block_f32(RT_ODE_SONODE, &e, 0, 1, 2, 1, 1, 0, x,
					  (const float *const[]){W_x, b_x, W_v, b_v, zeros, zeros}, y, stats), RT_OK);
	ck_assert(fabs(y[0] - (1.25 + 0)) < 1e-6 && fabs(y[1] - (-1.75 + 1.5)) < 1e-6);
}
END_TEST

START_TEST(test_ode_rnn)
{
	/* node with W_h = 0 flows by h' = tanh(b_h) over each row's gap, exactly
	 * in one Euler step; then h = tanh(W_x x + b_x + W_u h) */
	const float x[4] = {0.5f, -1, 2, 0.25f}, dt[4] = {0.5f, 2, 0, 1};      /* [T 2, B 2, I 1], [T, B] */
	const float W_x[1] = {0.75f}, b_x[1] = {0.1f}, W_u[1] = {-0.5f}, W_h[1] = {0}, b_h[1] = {0.3f};
	float y[4];
	int64_t stats[3];
	rt_ode_opts e = {RT_ODE_EULER, 1, 0, 0, 0};
	ck_assert_int_eq(rt_ode_rnn_f32(RT_ODE_NODE, &e, 2, 2, 1, 1, x, dt, W_x, b_x, W_u, W_h, b_h, NULL, NULL, y,
					stats), RT_OK);
	double f = tanh((double)0.3f);
	for (int b = 0; b < 2; b++) {
		double h = 0;
		for (int t = 0; t < 2; t++) {
			h += dt[t * 2 + b] * f;
			h = tanh(0.75 * x[t * 2 + b] + (double)0.1f - 0.5 * h);
			ck_assert_msg(fabs(y[t * 2 + b] - h) < 1e-6, "t %d b %d: %.9g, want %.9g", t, b, y[t * 2 + b], h);
		}
	}
	ck_assert(stats[0] == 2 && stats[1] == 2 && stats[2] == 0);
	ck_assert_int_eq(rt_ode_rnn_f32(RT_ODE_NODE, &e, 2, 2, 1, 1, x, NULL, W_x, b_x, W_u, W_h, b_h, NULL, NULL, y,
					stats), RT_ERR_ARG);
}
END_TEST

START_TEST(test_status_strings)
{
	for (int i = 0; i < RT_STATUS_COUNT; i++) {
		const char *s = rt_status_str(i);
		ck_assert_ptr_nonnull(s);
		ck_assert_msg(strlen(s) > 3, "status %d has no sentence", i);
		for (int j = 0; j < i; j++)
			ck_assert_msg(strcmp(s, rt_status_str(j)) != 0, "status %d and %d read the same", i, j);
	}
	const int outside[] = {-1, RT_STATUS_COUNT, 1000, -1000000};
	for (size_t k = 0; k < sizeof outside / sizeof outside[0]; k++) {
		const char *s = rt_status_str(outside[k]);
		ck_assert_ptr_nonnull(s);
		ck_assert_int_gt((int)strlen(s), 0);
	}
}
END_TEST

/* ---- generic tensor kernels ------------------------------------------------------ */

/* Row-major linear index of idx[rank] in dims[rank]. */
static int64_t lin(const int64_t *idx, const int64_t *dims, int rank)
{
	int64_t o = 0;
	for (int k = 0; k < rank; k++)
		o = o * dims[k] + idx[k];
	return o;
}

static int64_t numel(const int64_t *dims, int rank)
{
	int64_t n = 1;
	for (int k = 0; k < rank; k++)
		n *= dims[k];
	return n;
}

/* Advances idx over dims in row-major order; 0 when it wraps. */
static int next_index(int64_t *idx, const int64_t *dims, int rank)
{
	for (int k = rank - 1; k >= 0; k--) {
		if (++idx[k] < dims[k])
			return 1;
		idx[k] = 0;
	}
	return 0;
}

/* Every permutation of rank 0..4, element sizes 1, 2, 4, 8: Y[i] = X[j],
 * j[perm[k]] = i[k]. */
START_TEST(test_transpose_all_perms)
{
	static const int64_t dims5[4] = {3, 1, 4, 2};
	static const size_t esizes[] = {1, 2, 4, 8};
	for (int rank = 0; rank <= 4; rank++) {
		int perm[4] = {0, 1, 2, 3};
		int64_t xdims[4];
		memcpy(xdims, dims5, sizeof xdims);
		int64_t n = numel(xdims, rank);
		/* enumerate permutations by counting in factorial base */
		int nperm = 1;
		for (int k = 2; k <= rank; k++)
			nperm *= k;
		for (int p = 0; p < nperm; p++) {
			int avail[4] = {0, 1, 2, 3}, m = rank, code = p;
			for (int k = 0; k < rank; k++) {
				int f = 1;
				for (int q = 2; q < m; q++)
					f *= q;
				int pick = code / f;
				code %= f;
				perm[k] = avail[pick];
				for (int q = pick; q < m - 1; q++)
					avail[q] = avail[q + 1];
				m--;
			}
			for (size_t e = 0; e < sizeof esizes / sizeof esizes[0]; e++) {
				size_t es = esizes[e];
				unsigned char *x = xmalloc((size_t)n * es), *y = xmalloc((size_t)n * es);
				for (int64_t i = 0; i < n * (int64_t)es; i++)
					x[i] = (unsigned char)(i * 7 + 3);
				memset(y, 0xEE, (size_t)n * es);
				rt_transpose(y, x, es, rank, xdims, perm);
				int64_t ydims[4], yi[4] = {0}, xi[4];
				for (int k = 0; k < rank; k++)
					ydims[k] = xdims[perm[k]];
				do {
					for (int k = 0; k < rank; k++)
						xi[perm[k]] = yi[k];
					int64_t yo = lin(yi, ydims, rank), xo = lin(xi, xdims, rank);
					ck_assert_msg(memcmp(y + yo * (int64_t)es, x + xo * (int64_t)es, es) == 0,
						      "rank %d perm #%d esize %zu: element %ld", rank, p, es, (long)yo);
				} while (rank > 0 && next_index(yi, ydims, rank));
				free(x);
				free(y);
			}
		}
	}
}
END_TEST

START_TEST(test_slice_start_clamp)
{
	/* ONNX Slice: starts clamp to [0, dim] (step > 0) or [0, dim-1] (step < 0) */
	ck_assert_int_eq(rt_slice_start(0, 5, 1), 0);
	ck_assert_int_eq(rt_slice_start(2, 5, 1), 2);
	ck_assert_int_eq(rt_slice_start(-1, 5, 1), 4);
	ck_assert_int_eq(rt_slice_start(-10, 5, 1), 0);
	ck_assert_int_eq(rt_slice_start(10, 5, 1), 5);
	ck_assert_int_eq(rt_slice_start(INT64_MAX, 5, 2), 5);
	ck_assert_int_eq(rt_slice_start(-1, 5, -1), 4);
	ck_assert_int_eq(rt_slice_start(10, 5, -1), 4);
	ck_assert_int_eq(rt_slice_start(INT64_MAX, 5, -3), 4);
	ck_assert_int_eq(rt_slice_start(-10, 5, -1), 0);
	ck_assert_int_eq(rt_slice_start(3, 5, -2), 3);
	ck_assert_int_eq(rt_slice_start(0, 0, 1), 0);
}
END_TEST

/* Output length of ONNX Slice along one axis (spec formula, written anew). */
static int64_t slice_len(int64_t start, int64_t end, int64_t step, int64_t dim)
{
	if (start < 0) start += dim;
	if (end < 0) end += dim;
	if (step > 0) {
		start = start < 0 ? 0 : start > dim ? dim : start;
		end = end < 0 ? 0 : end > dim ? dim : end;
		return end > start ? (end - start + step - 1) / step : 0;
	}
	start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
	end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
	return start > end ? (start - end - step - 1) / -step : 0;
}

START_TEST(test_slice_vs_formula)
{
	static const int64_t xdims[3] = {5, 4, 6};
	static const struct { int64_t start[3], end[3], step[3]; } cases[] = {
		{{0, 0, 0}, {5, 4, 6}, {1, 1, 1}},
		{{1, -3, 2}, {4, 100, -1}, {1, 1, 1}},
		{{-1, 3, 5}, {-1000, 0, 0}, {-1, -2, -3}},
		{{4, 0, 1}, {0, 4, 6}, {-2, 3, 2}},
		{{2, 2, 3}, {2, 1, 3}, {1, 1, 1}},                      /* empty */
		{{10, -10, 0}, {-10, 10, 6}, {-1, 1, 4}},
	};
	float x[5 * 4 * 6];
	for (int i = 0; i < 5 * 4 * 6; i++)
		x[i] = (float)i;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int64_t ydims[3], start[3];
		for (int k = 0; k < 3; k++) {
			ydims[k] = slice_len(cases[c].start[k], cases[c].end[k], cases[c].step[k], xdims[k]);
			start[k] = rt_slice_start(cases[c].start[k], xdims[k], cases[c].step[k]);
		}
		int64_t n = numel(ydims, 3);
		float y[5 * 4 * 6 + 1];
		rt_slice(y, x, sizeof(float), 3, xdims, ydims, start, cases[c].step);
		if (n == 0)
			continue;
		int64_t yi[3] = {0}, xi[3];
		do {
			for (int k = 0; k < 3; k++)
				xi[k] = start[k] + yi[k] * cases[c].step[k];
			ck_assert_msg(y[lin(yi, ydims, 3)] == x[lin(xi, xdims, 3)], "case %zu", c);
		} while (next_index(yi, ydims, 3));
	}
}
END_TEST

START_TEST(test_copy_rows)
{
	/* Concat along axis 1 of [2,3] and [2,2] into [2,5], through copy_rows */
	const int32_t a[6] = {1, 2, 3, 4, 5, 6}, b[4] = {7, 8, 9, 10};
	int32_t y[10], want[10] = {1, 2, 3, 7, 8, 4, 5, 6, 9, 10};
	rt_copy_rows(y, 5, a, 3, 2, 3, sizeof(int32_t));
	rt_copy_rows(y + 3, 5, b, 2, 2, 2, sizeof(int32_t));
	ck_assert_int_eq(memcmp(y, want, sizeof y), 0);
	/* and back (Split) */
	int32_t a2[6], b2[4];
	rt_copy_rows(a2, 3, y, 5, 2, 3, sizeof(int32_t));
	rt_copy_rows(b2, 2, y + 3, 5, 2, 2, sizeof(int32_t));
	ck_assert_int_eq(memcmp(a2, a, sizeof a), 0);
	ck_assert_int_eq(memcmp(b2, b, sizeof b), 0);
}
END_TEST

START_TEST(test_gather)
{
	/* X [2, 4, 3] (outer 2, n 4, inner 3), indices [3, -1, 0, -4, 2] */
	float x[24], y[2 * 5 * 3];
	for (int i = 0; i < 24; i++)
		x[i] = (float)i;
	const int64_t idx64[5] = {3, -1, 0, -4, 2};
	const int32_t idx32[5] = {3, -1, 0, -4, 2};
	for (int dt = 6; dt <= 7; dt++) {
		memset(y, 0, sizeof y);
		ck_assert_int_eq(rt_gather(y, x, sizeof(float), 2, 4, 3, dt == 7 ? (const void *)idx64 :
					   (const void *)idx32, dt, 5), RT_OK);
		for (int o = 0; o < 2; o++)
			for (int j = 0; j < 5; j++) {
				int64_t i = idx64[j] < 0 ? idx64[j] + 4 : idx64[j];
				for (int k = 0; k < 3; k++)
					ck_assert(y[(o * 5 + j) * 3 + k] == x[(o * 4 + i) * 3 + k]);
			}
	}
	/* out of range: RT_ERR_INDEX and Y untouched */
	const int64_t bad_hi[2] = {0, 4}, bad_lo[2] = {-5, 1};
	for (int t = 0; t < 2; t++) {
		for (int i = 0; i < 30; i++)
			y[i] = -7.0f;
		ck_assert_int_eq(rt_gather(y, x, sizeof(float), 2, 4, 3, t ? bad_lo : bad_hi, 7, 2),
				 RT_ERR_INDEX);
		for (int i = 0; i < 30; i++)
			ck_assert(y[i] == -7.0f);
	}
	/* scalar index (nidx 1), 8-byte elements */
	const double xd[4] = {1.5, 2.5, 3.5, 4.5};
	double yd = 0;
	const int64_t last = -1;
	ck_assert_int_eq(rt_gather(&yd, xd, sizeof(double), 1, 4, 1, &last, 7, 1), RT_OK);
	ck_assert(yd == 4.5);
}
END_TEST

/* Softmax and LogSoftmax over the middle axis of [outer, n, inner] against a
 * double-precision evaluation; also large inputs (no overflow) and Y == X. */
START_TEST(test_softmax_family)
{
	static const int64_t shapes[][3] = {{1, 1, 1}, {2, 5, 3}, {3, 7, 1}, {1, 10, 4}, {4, 1, 2}};
	rng r = {5};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int64_t outer = shapes[s][0], n = shapes[s][1], inner = shapes[s][2];
		int64_t total = outer * n * inner;
		float *x = xmalloc(sizeof(float) * (size_t)total), *y = xmalloc(sizeof(float) * (size_t)total);
		float *ly = xmalloc(sizeof(float) * (size_t)total);
		for (int big = 0; big < 2; big++) {
			for (int64_t i = 0; i < total; i++)
				x[i] = rnd(&r) * 4.0f + (big ? 1000.0f : 0.0f);
			rt_softmax(y, x, outer, n, inner);
			rt_log_softmax(ly, x, outer, n, inner);
			for (int64_t o = 0; o < outer; o++)
				for (int64_t i = 0; i < inner; i++) {
					double mx = -INFINITY, sum = 0, psum = 0;
					for (int64_t j = 0; j < n; j++)
						mx = fmax(mx, x[(o * n + j) * inner + i]);
					for (int64_t j = 0; j < n; j++)
						sum += exp((double)x[(o * n + j) * inner + i] - mx);
					for (int64_t j = 0; j < n; j++) {
						int64_t at = (o * n + j) * inner + i;
						double want = exp((double)x[at] - mx) / sum;
						double lwant = (double)x[at] - mx - log(sum);
						ck_assert_msg(fabs(y[at] - want) <= 1e-6 + 1e-5 * want,
							      "softmax shape %zu: %g vs %g", s, y[at], want);
						ck_assert_msg(fabs(ly[at] - lwant) <= 1e-5 + 1e-5 * fabs(lwant),
							      "log_softmax shape %zu: %g vs %g", s, ly[at], lwant);
						psum += y[at];
					}
					ck_assert(fabs(psum - 1.0) < 1e-5);
				}
			/* in place gives the same */
			memcpy(ly, x, sizeof(float) * (size_t)total);
			rt_softmax(ly, ly, outer, n, inner);
			for (int64_t i = 0; i < total; i++)
				ck_assert_float_eq_tol(ly[i], y[i], 1e-7f);
		}
		free(x);
		free(y);
		free(ly);
	}
}
END_TEST

/* ---- initialisers (rt_init.c) ---------------------------------------------- */

START_TEST(test_init_deterministic)
{
	float a[300], b[300], c[300];
	rt_rng r;
	for (int kind = 0; kind < 4; kind++) {
		float *out[3] = {a, b, c};
		uint64_t seeds[3] = {7, 7, 8};
		for (int k = 0; k < 3; k++) {
			rt_rng_seed(&r, seeds[k]);
			if (kind == 0)
				rt_init_uniform(out[k], 300, 0.5f, &r);
			else if (kind == 1)
				ck_assert_int_eq(rt_init_orthogonal(out[k], 20, 15, 1.0f, &r), RT_OK);
			else if (kind == 2)
				ck_assert_int_eq(rt_init_sparse(out[k], 10, 30, 15, &r), RT_OK);
			else
				rt_init_kaiming_normal(out[k], 15, 20, &r);
		}
		ck_assert_msg(!memcmp(a, b, sizeof a), "kind %d: same seed, different numbers", kind);
		ck_assert_msg(memcmp(a, c, sizeof a), "kind %d: different seeds, same numbers", kind);
	}
	rt_rng_seed(&r, 3);
	rt_init_uniform(a, 300, 0.25f, &r);
	float lo = 1, hi = -1;
	for (int i = 0; i < 300; i++) {
		lo = a[i] < lo ? a[i] : lo;
		hi = a[i] > hi ? a[i] : hi;
	}
	ck_assert(lo >= -0.25f && hi <= 0.25f && lo < -0.2f && hi > 0.2f);
}
END_TEST

/* W W^T = I (rows <= cols) or W^T W = I (rows >= cols), to float rounding. */
START_TEST(test_init_orthogonal)
{
	static const int shapes[][2] = {{8, 5}, {5, 8}, {16, 16}, {1, 7}, {12, 3}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int R = shapes[s][0], C = shapes[s][1];
		float *w = malloc(sizeof(float) * (size_t)(R * C));
		rt_rng r;
		rt_rng_seed(&r, 100 + s);
		ck_assert_int_eq(rt_init_orthogonal(w, R, C, 1.0f, &r), RT_OK);
		int n = R <= C ? R : C;
		double worst = 0;
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				double d = 0;
				for (int k = 0; k < (R <= C ? C : R); k++)
					d += R <= C ? (double)w[i * C + k] * w[j * C + k] : (double)w[k * C + i] * w[k * C + j];
				d -= i == j;
				worst = fabs(d) > worst ? fabs(d) : worst;
			}
		ck_assert_msg(worst < 1e-5, "%dx%d: |Q^T Q - I| = %g", R, C, worst);
		free(w);
	}
}
END_TEST

/* rt_expm against what is known of the exponential without computing it:
 * a block diagonal of 2x2 skew blocks [[0, a], [-a, 0]] gives the rotations
 * [[cos a, sin a], [-sin a, cos a]] (angles up to 40: scaling and squaring
 * runs), and a dense skew-symmetric S gives an orthogonal E with
 * expm(S) expm(-S) = I; sizes past the blocking of the products. */
START_TEST(test_expm)
{
	int n = 130;
	float *S = calloc((size_t)(n * n), sizeof(float)), *E = calloc((size_t)(n * n), sizeof(float));
	float *F = calloc((size_t)(n * n), sizeof(float));
	ck_assert(S && E && F);
	for (int b = 0; b < n / 2; b++) {
		double a = 0.61 * b - 0.3 * (b % 3);
		S[(2 * b) * n + 2 * b + 1] = (float)a;
		S[(2 * b + 1) * n + 2 * b] = (float)-a;
	}
	ck_assert_int_eq(rt_expm(E, S, n), RT_OK);
	double worst = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int b = i / 2;
			double a = S[(2 * b) * n + 2 * b + 1], want = 0;
			if (j / 2 == b)
				want = i == j ? cos(a) : (i < j ? sin(a) : -sin(a));
			worst = fmax(worst, fabs(E[i * n + j] - want));
		}
	ck_assert_msg(worst < 2e-5, "rotation blocks: max error %g", worst);
	rt_rng r;
	rt_rng_seed(&r, 77);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			float v = (float)(rt_rng_uniform(&r) - 0.5);
			S[i * n + j] = v;
			S[j * n + i] = -v;
		}
	for (int i = 0; i < n; i++)
		S[i * n + i] = 0;
	ck_assert_int_eq(rt_expm(E, S, n), RT_OK);
	for (int i = 0; i < n * n; i++)
		S[i] = -S[i];
	ck_assert_int_eq(rt_expm(F, S, n), RT_OK);
	double orth = 0, inv = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double d = 0, p = 0;
			for (int k = 0; k < n; k++) {
				d += (double)E[i * n + k] * E[j * n + k];
				p += (double)E[i * n + k] * F[k * n + j];
			}
			orth = fmax(orth, fabs(d - (i == j)));
			inv = fmax(inv, fabs(p - (i == j)));
		}
	ck_assert_msg(orth < 1e-5 && inv < 1e-5, "dense skew: |E E^T - I| = %g, |expm(S) expm(-S) - I| = %g", orth,
		      inv);
	free(S), free(E), free(F);
}
END_TEST

START_TEST(test_init_sparse_counts)
{
	static const int shapes[][2] = {{20, 40}, {7, 15}, {5, 6}, {30, 100}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int R = shapes[s][0], C = shapes[s][1];
		float *w = malloc(sizeof(float) * (size_t)(R * C));
		rt_rng r;
		rt_rng_seed(&r, 5 + s);
		ck_assert_int_eq(rt_init_sparse(w, R, C, 15, &r), RT_OK);
		for (int i = 0; i < R; i++) {
			int nz = 0;
			for (int j = 0; j < C; j++)
				nz += w[i * C + j] != 0.0f;
			ck_assert_int_eq(nz, C < 15 ? C : 15);
		}
		free(w);
	}
	/* Kaiming normal: the sample std is sqrt(2 / fan_in) within 3% */
	enum { KR = 200, KC = 100 };
	float *k = malloc(sizeof(float) * KR * KC);
	rt_rng r;
	rt_rng_seed(&r, 9);
	rt_init_kaiming_normal(k, KR, KC, &r);
	double ss = 0, mean = 0;
	for (int i = 0; i < KR * KC; i++) {
		ss += (double)k[i] * k[i];
		mean += k[i];
	}
	ck_assert(fabs(sqrt(ss / (KR * KC)) / sqrt(2.0 / KC) - 1) < 0.03);
	ck_assert(fabs(mean / (KR * KC)) < 0.01);
	rt_init_eye(k, 3, 4);
	ck_assert(k[0] == 1 && k[5] == 1 && k[10] == 1 && k[1] == 0 && k[4] == 0 && k[11] == 0);
	free(k);
}
END_TEST

/* Spectral radius: matrices with known eigenvalues (a rotation-scaling pair,
 * a Jordan block, a triangular matrix), then echo-state scaling. */
START_TEST(test_init_spectral_radius)
{
	float rot[9] = {0, -2, 0, 2, 0, 0, 0, 0, 1};          /* +-2i, 1 */
	ck_assert(fabs(rt_spectral_radius(rot, 3) - 2.0) < 1e-6);
	float jor[4] = {0.5f, 1, 0, 0.5f};                     /* Jordan block of 0.5 */
	ck_assert(fabs(rt_spectral_radius(jor, 2) - 0.5) < 1e-6);
	float tri[9] = {0.3f, 5, -7, 0, -0.9f, 4, 0, 0, 0.2f}; /* eigenvalues on the diagonal */
	ck_assert(fabs(rt_spectral_radius(tri, 3) - 0.9) < 1e-6);
	float nil[4] = {0, 1, 0, 0};
	ck_assert(rt_spectral_radius(nil, 2) == 0);
	/* echo-state: 15 non-zeros per row, radius 1.1 */
	enum { N = 64 };
	float *w = malloc(sizeof(float) * N * N);
	rt_rng r;
	rt_rng_seed(&r, 77);
	ck_assert_int_eq(rt_init_echo(w, N, 15, 1.1f, &r), RT_OK);
	ck_assert_msg(fabs(rt_spectral_radius(w, N) - 1.1) < 1e-4, "echo radius %g", rt_spectral_radius(w, N));
	for (int i = 0; i < N; i++) {
		int nz = 0;
		for (int j = 0; j < N; j++)
			nz += w[i * N + j] != 0.0f;
		ck_assert_int_eq(nz, 15);
	}
	/* a symmetric matrix against a power iteration (which converges for
	 * symmetric matrices: real eigenvalues) */
	for (int i = 0; i < N; i++)
		for (int j = 0; j <= i; j++)
			w[i * N + j] = w[j * N + i] = (float)(rt_rng_normal(&r) / N);
	double v[N], u[N], lam = 0;
	for (int i = 0; i < N; i++)
		v[i] = 1.0 + i % 3;
	for (int it = 0; it < 5000; it++) {
		double nrm = 0;
		for (int i = 0; i < N; i++) {
			u[i] = 0;
			for (int j = 0; j < N; j++)
				u[i] += w[i * N + j] * v[j];
		}
		double num = 0, den = 0;
		for (int i = 0; i < N; i++) {
			num += u[i] * u[i];
			den += v[i] * v[i];
		}
		lam = sqrt(num / den);
		for (int i = 0; i < N; i++)
			nrm += u[i] * u[i];
		for (int i = 0; i < N; i++)
			v[i] = u[i] / sqrt(nrm);
	}
	ck_assert_msg(fabs(rt_spectral_radius(w, N) / lam - 1) < 1e-3, "%g vs %g", rt_spectral_radius(w, N), lam);
	free(w);
}
END_TEST

/* ---- suite ------------------------------------------------------------------ */

/* ---- rt_nn.c: Conv, Pad, reductions, ArgMax ----------------------------------- */

/* rt_conv_ref against convolutions worked out by hand (1-D, padding, stride,
 * dilation, bias, two groups), so that the reference rt_conv is compared
 * with is itself right. */
START_TEST(test_conv_ref_by_hand)
{
	const float x[] = {1, 2, 3, 4, 5};
	const float w[] = {1, -2};
	float y[8];
	/* no padding, stride 1: x[i] - 2 x[i+1] */
	rt_conv_ref(y, x, w, NULL, 1, (const int64_t[]){1, 1, 5}, 1, 1, (const int64_t[]){2},
		    (const int64_t[]){1}, (const int64_t[]){0, 0}, (const int64_t[]){1});
	const float want0[] = {-3, -4, -5, -6};
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(y[i], want0[i]);
	/* pads 1 and 1, stride 2, dilation 2, bias 10: taps x[2o-1] and x[2o+1] */
	const float b[] = {10};
	rt_conv_ref(y, x, w, b, 1, (const int64_t[]){1, 1, 5}, 1, 1, (const int64_t[]){2},
		    (const int64_t[]){2}, (const int64_t[]){1, 1}, (const int64_t[]){2});
	const float want1[] = {10 + 0 - 2 * 2, 10 + 2 - 2 * 4, 10 + 4 - 0};
	for (int i = 0; i < 3; i++)
		ck_assert_float_eq(y[i], want1[i]);
	/* two groups of one channel each, kernel 1: channel g scaled by w[g] */
	const float x2[] = {1, 2, 3, 4, 5, 6};
	const float w2[] = {3, -1};
	rt_conv_ref(y, x2, w2, NULL, 1, (const int64_t[]){1, 2, 3}, 2, 2, (const int64_t[]){1},
		    (const int64_t[]){1}, (const int64_t[]){0, 0}, (const int64_t[]){1});
	const float want2[] = {3, 6, 9, -4, -5, -6};
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq(y[i], want2[i]);
}
END_TEST

/* One random convolution through rt_conv and rt_conv_ref. */
static void conv_case(rng *r, int nsp, const int64_t *xd, int64_t m, int64_t group, const int64_t *k,
		      const int64_t *st, const int64_t *pads, const int64_t *dil, int bias)
{
	int64_t nx = xd[0] * xd[1], nw = m * (xd[1] / group), ny = xd[0] * m;
	for (int a = 0; a < nsp; a++) {
		int64_t span = dil[a] * (k[a] - 1) + 1, o = (xd[2 + a] + pads[a] + pads[nsp + a] - span) / st[a] + 1;
		nx *= xd[2 + a];
		nw *= k[a];
		ny *= o;
	}
	float *x = xmalloc((size_t)nx * sizeof *x), *w = xmalloc((size_t)nw * sizeof *w), b[512];
	float *y = xmalloc((size_t)ny * sizeof *y), *yr = xmalloc((size_t)ny * sizeof *yr);
	fill(r, x, nx);
	fill(r, w, nw);
	fill(r, b, m);
	rt_conv(y, x, w, bias ? b : NULL, nsp, xd, m, group, k, st, pads, dil);
	rt_conv_ref(yr, x, w, bias ? b : NULL, nsp, xd, m, group, k, st, pads, dil);
	for (int64_t i = 0; i < ny; i++)
		ck_assert_msg(fabsf(y[i] - yr[i]) <= 1e-4f * (1.0f + fabsf(yr[i])),
			      "nsp %d m %lld group %lld: y[%lld] = %g, reference %g", nsp, (long long)m,
			      (long long)group, (long long)i, (double)y[i], (double)yr[i]);
	free(x);
	free(w);
	free(y);
	free(yr);
}

/* rt_conv (im2col tiles + rt_sgemm) against rt_conv_ref: 1-D front ends with
 * kernels up to 256 and strides up to 128, padding, groups, dilations;
 * 2-D and 3-D; a column longer than the tile buffer. */
START_TEST(test_conv_vs_ref)
{
	rng r = {7};
	conv_case(&r, 1, (const int64_t[]){2, 1, 1024}, 129, 1, (const int64_t[]){256}, (const int64_t[]){128},
		  (const int64_t[]){128, 128}, (const int64_t[]){1}, 0);
	conv_case(&r, 1, (const int64_t[]){1, 16, 40}, 16, 1, (const int64_t[]){3}, (const int64_t[]){1},
		  (const int64_t[]){1, 1}, (const int64_t[]){1}, 1);
	conv_case(&r, 1, (const int64_t[]){3, 8, 37}, 12, 4, (const int64_t[]){5}, (const int64_t[]){2},
		  (const int64_t[]){2, 3}, (const int64_t[]){3}, 1);
	conv_case(&r, 1, (const int64_t[]){1, 6, 20}, 6, 6, (const int64_t[]){3}, (const int64_t[]){1},
		  (const int64_t[]){0, 0}, (const int64_t[]){1}, 1);
	conv_case(&r, 2, (const int64_t[]){2, 3, 9, 11}, 5, 1, (const int64_t[]){3, 2}, (const int64_t[]){2, 1},
		  (const int64_t[]){1, 0, 1, 1}, (const int64_t[]){1, 2}, 1);
	conv_case(&r, 3, (const int64_t[]){1, 2, 5, 4, 6}, 4, 2, (const int64_t[]){2, 3, 2},
		  (const int64_t[]){1, 1, 2}, (const int64_t[]){0, 1, 1, 1, 1, 0}, (const int64_t[]){1, 1, 1}, 0);
	/* a streaming chunk's shapes (Silero VAD): few positions, so the product
	 * runs transposed; a depthwise convolution with 258 groups */
	conv_case(&r, 1, (const int64_t[]){1, 1, 640}, 258, 1, (const int64_t[]){256}, (const int64_t[]){128},
		  (const int64_t[]){0, 0}, (const int64_t[]){1}, 0);
	conv_case(&r, 1, (const int64_t[]){1, 129, 4}, 128, 1, (const int64_t[]){3}, (const int64_t[]){1},
		  (const int64_t[]){1, 1}, (const int64_t[]){1}, 1);
	conv_case(&r, 1, (const int64_t[]){2, 258, 8}, 258, 258, (const int64_t[]){5}, (const int64_t[]){1},
		  (const int64_t[]){2, 2}, (const int64_t[]){1}, 1);
	/* 40 channels x 256 taps = 10240 rows per column, more than the tile holds */
	conv_case(&r, 1, (const int64_t[]){1, 40, 300}, 3, 1, (const int64_t[]){256}, (const int64_t[]){16},
		  (const int64_t[]){0, 0}, (const int64_t[]){1}, 1);
}
END_TEST

/* rt_pad against the index formulas of the three modes written out here. */
START_TEST(test_pad_modes)
{
	const int64_t xd[2] = {3, 4}, pads[4] = {2, 1, 1, 3};
	float x[12], y[6 * 8];
	for (int i = 0; i < 12; i++)
		x[i] = (float)(i + 1);
	const float val = -7;
	for (int mode = 0; mode < 3; mode++) {
		rt_pad(y, x, sizeof(float), 2, xd, pads, mode, mode == RT_PAD_CONSTANT ? &val : NULL);
		for (int i = 0; i < 6; i++)
			for (int j = 0; j < 8; j++) {
				int si = i - 2, sj = j - 1;
				float want;
				if (mode == RT_PAD_CONSTANT) {
					want = si >= 0 && si < 3 && sj >= 0 && sj < 4 ? x[si * 4 + sj] : val;
				} else if (mode == RT_PAD_EDGE) {
					si = si < 0 ? 0 : si > 2 ? 2 : si;
					sj = sj < 0 ? 0 : sj > 3 ? 3 : sj;
					want = x[si * 4 + sj];
				} else {
					si = si < 0 ? -si : si > 2 ? 4 - si : si;
					sj = sj < 0 ? -sj : sj > 3 ? 6 - sj : sj;
					want = x[si * 4 + sj];
				}
				ck_assert_msg(y[i * 8 + j] == want, "mode %d y[%d,%d] = %g, want %g", mode, i, j,
					      (double)y[i * 8 + j], (double)want);
			}
	}
	/* negative pads crop */
	rt_pad(y, x, sizeof(float), 2, xd, (const int64_t[]){-1, 0, 0, -2}, RT_PAD_CONSTANT, NULL);
	const float want[] = {5, 6, 9, 10};
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(y[i], want[i]);
}
END_TEST

/* ---- image sampling (rt_image.c) ---- */

static rt_resize_mode resize_mode(int mode, int coord, int nearest)
{
	return (rt_resize_mode){mode, coord, nearest, 0, -0.75, 0.0f};
}

/* rt_resize on 1-D inputs (as [1, n]) against values worked out by hand. */
START_TEST(test_resize_by_hand)
{
	float y[8];
	rt_resize_mode m;
	/* linear, half_pixel, x2: coordinates -0.25 0.25 0.75 1.25, clamped at the borders */
	m = resize_mode(RT_RESIZE_LINEAR, RT_COORD_HALF_PIXEL, 0);
	rt_resize(y, (const float[]){1, 3}, 2, (const int64_t[]){1, 2}, (const int64_t[]){1, 4},
		  (const double[]){1, 2}, NULL, &m);
	const float lin[] = {1, 1.5f, 2.5f, 3};
	for (int i = 0; i < 4; i++)
		ck_assert_msg(fabsf(y[i] - lin[i]) < 1e-6f, "linear y[%d] = %g, want %g", i, (double)y[i], (double)lin[i]);
	/* nearest, half_pixel, x2 (coordinates -0.25 .. 3.25 by 0.5), each nearest_mode */
	const float x4[] = {10, 20, 30, 40};
	const float want_n[3][8] = {
		{10, 10, 20, 20, 30, 30, 40, 40},       /* round_prefer_floor */
		{10, 10, 10, 20, 20, 30, 30, 40},       /* floor */
		{10, 20, 20, 30, 30, 40, 40, 40},       /* ceil */
	};
	const int nm[3] = {RT_NEAREST_ROUND_PREFER_FLOOR, RT_NEAREST_FLOOR, RT_NEAREST_CEIL};
	for (int k = 0; k < 3; k++) {
		m = resize_mode(RT_RESIZE_NEAREST, RT_COORD_HALF_PIXEL, nm[k]);
		rt_resize(y, x4, 2, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, (const double[]){1, 2}, NULL, &m);
		for (int i = 0; i < 8; i++)
			ck_assert_msg(y[i] == want_n[k][i], "nearest mode %d y[%d] = %g, want %g", nm[k], i, (double)y[i],
				      (double)want_n[k][i]);
	}
	/* ties (asymmetric x2 of 2: coordinates 0 0.5 1 1.5) */
	m = resize_mode(RT_RESIZE_NEAREST, RT_COORD_ASYMMETRIC, RT_NEAREST_ROUND_PREFER_FLOOR);
	rt_resize(y, x4, 2, (const int64_t[]){1, 2}, (const int64_t[]){1, 4}, (const double[]){1, 2}, NULL, &m);
	ck_assert(y[0] == 10 && y[1] == 10 && y[2] == 20 && y[3] == 20);
	m.nearest = RT_NEAREST_ROUND_PREFER_CEIL;
	rt_resize(y, x4, 2, (const int64_t[]){1, 2}, (const int64_t[]){1, 4}, (const double[]){1, 2}, NULL, &m);
	ck_assert(y[0] == 10 && y[1] == 20 && y[2] == 20 && y[3] == 20);
	/* cubic, A = -0.75, asymmetric x2 of {1, 2, 4, 8}: at 1.5 the weights are
	 * -3/32, 19/32, 19/32, -3/32; at 0.5 the left tap is index -1 (clamped to 0
	 * or, with exclude_outside, dropped and the rest divided by their sum 35/32) */
	const float xc[] = {1, 2, 4, 8};
	m = resize_mode(RT_RESIZE_CUBIC, RT_COORD_ASYMMETRIC, 0);
	rt_resize(y, xc, 2, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, (const double[]){1, 2}, NULL, &m);
	ck_assert_msg(fabsf(y[3] - 2.71875f) < 1e-5f, "cubic at 1.5: %g", (double)y[3]);
	ck_assert_msg(fabsf(y[1] - 1.3125f) < 1e-5f, "cubic at 0.5: %g", (double)y[1]);
	ck_assert_msg(y[0] == 1 && y[2] == 2 && y[4] == 4, "cubic at integers: %g %g %g", (double)y[0], (double)y[2],
		      (double)y[4]);
	m.exclude_outside = 1;
	rt_resize(y, xc, 2, (const int64_t[]){1, 4}, (const int64_t[]){1, 8}, (const double[]){1, 2}, NULL, &m);
	ck_assert_msg(fabsf(y[1] - 1.40625f / 1.09375f) < 1e-5f, "cubic exclude_outside at 0.5: %g", (double)y[1]);
	/* tf_crop_and_resize of [0.25, 1.25] of {0, 10, 20, 30, 40} into 3: coordinates
	 * 1, 3, 5; 5 is outside: extrapolation_value */
	m = resize_mode(RT_RESIZE_LINEAR, RT_COORD_TF_CROP_AND_RESIZE, 0);
	m.extrapolation = -1;
	rt_resize(y, (const float[]){0, 10, 20, 30, 40}, 2, (const int64_t[]){1, 5}, (const int64_t[]){1, 3},
		  (const double[]){1, 0.6}, (const double[]){0, 0.25, 1, 1.25}, &m);
	ck_assert_msg(y[0] == 10 && y[1] == 30 && y[2] == -1, "tf_crop_and_resize: %g %g %g", (double)y[0],
		      (double)y[1], (double)y[2]);
	/* align_corners of 3 into 5: coordinates 0 0.5 1 1.5 2 */
	m = resize_mode(RT_RESIZE_LINEAR, RT_COORD_ALIGN_CORNERS, 0);
	rt_resize(y, (const float[]){0, 4, 6}, 2, (const int64_t[]){1, 3}, (const int64_t[]){1, 5},
		  (const double[]){1, 5.0 / 3.0}, NULL, &m);
	const float ac[] = {0, 2, 4, 5, 6};
	for (int i = 0; i < 5; i++)
		ck_assert_msg(fabsf(y[i] - ac[i]) < 1e-5f, "align_corners y[%d] = %g", i, (double)y[i]);
}
END_TEST

/* The input coordinate of output o (the specification's formulas, written
 * out again); *out set beyond a tf_crop_and_resize box. */
static double naive_coord(int coord, int64_t o, int64_t in, int64_t out, double scale, double r0, double r1, int *outside)
{
	double len = (double)out;       /* the tests below use exact scales: in * scale == out */
	*outside = 0;
	if (coord == RT_COORD_ALIGN_CORNERS)
		return out == 1 ? 0 : (double)o * (double)(in - 1) / (len - 1);
	if (coord == RT_COORD_ASYMMETRIC)
		return (double)o / scale;
	if (coord == RT_COORD_PYTORCH_HALF_PIXEL)
		return out > 1 ? ((double)o + 0.5) / scale - 0.5 : 0;
	if (coord == RT_COORD_TF_CROP_AND_RESIZE) {
		double v = out > 1 ? r0 * (double)(in - 1) + (double)o * (r1 - r0) * (double)(in - 1) / (len - 1)
				   : 0.5 * (r0 + r1) * (double)(in - 1);
		*outside = v < 0 || v > (double)(in - 1);
		return v;
	}
	return ((double)o + 0.5) / scale - 0.5;
}

/* rt_resize against the product form: every combination of the taps of all
 * axes, weights multiplied (cubic weights by the piecewise polynomial),
 * indices clamped; extrapolation_value when any axis is outside. */
START_TEST(test_resize_vs_naive)
{
	rng r = {23};
	const int64_t xd[3] = {2, 5, 4};
	float x[40];
	fill(&r, x, 40);
	const int64_t yds[3][3] = {{2, 10, 8}, {2, 5, 2}, {1, 10, 2}};
	const int coords[] = {RT_COORD_HALF_PIXEL, RT_COORD_PYTORCH_HALF_PIXEL, RT_COORD_ALIGN_CORNERS, RT_COORD_ASYMMETRIC,
			      RT_COORD_TF_CROP_AND_RESIZE};
	const double roi[6] = {0, 0.1, -0.2, 1, 0.8, 1.3};
	for (int s = 0; s < 3; s++)
		for (int mode = 0; mode < 3; mode++)
			for (size_t ci = 0; ci < sizeof coords / sizeof *coords; ci++)
				for (int excl = 0; excl < 2; excl++) {
					const int64_t *yd = yds[s];
					double sc[3];
					for (int a = 0; a < 3; a++)
						sc[a] = (double)yd[a] / (double)xd[a];
					rt_resize_mode m = {mode, coords[ci], RT_NEAREST_ROUND_PREFER_CEIL, excl, -0.5, 7.0f};
					int tf = coords[ci] == RT_COORD_TF_CROP_AND_RESIZE;
					float y[160];
					rt_resize(y, x, 3, xd, yd, sc, tf ? roi : NULL, &m);
					int64_t ny = yd[0] * yd[1] * yd[2];
					for (int64_t i = 0; i < ny; i++) {
						int64_t o[3] = {i / (yd[1] * yd[2]), i / yd[2] % yd[1], i % yd[2]};
						int64_t idx[3][4];
						double w[3][4];
						int nt = mode == RT_RESIZE_CUBIC ? 4 : 2, any_out = 0;
						for (int a = 0; a < 3; a++) {
							int out;
							double c = naive_coord(coords[ci], o[a], xd[a], yd[a], sc[a],
									       tf ? roi[a] : 0, tf ? roi[3 + a] : 1, &out);
							any_out |= out;
							double f = floor(c), t = c - f;
							double sum = 0;
							for (int k = 0; k < nt; k++) {
								int64_t j = (int64_t)f + (nt == 4 ? k - 1 : k);
								double d = fabs(c - (double)j), A = -0.5;
								if (mode == RT_RESIZE_NEAREST)
									w[a][k] = (k == 1) == (t >= 0.5);
								else if (mode == RT_RESIZE_LINEAR)
									w[a][k] = 1 - d;
								else
									w[a][k] = d <= 1 ? (A + 2) * d * d * d - (A + 3) * d * d + 1
										  : A * d * d * d - 5 * A * d * d + 8 * A * d - 4 * A;
								if (excl && mode != RT_RESIZE_NEAREST && (j < 0 || j >= xd[a]))
									w[a][k] = 0;
								sum += w[a][k];
								idx[a][k] = j < 0 ? 0 : j >= xd[a] ? xd[a] - 1 : j;
							}
							for (int k = 0; k < nt; k++)
								w[a][k] /= sum;
						}
						double want = 0;
						for (int k0 = 0; k0 < nt; k0++)
							for (int k1 = 0; k1 < nt; k1++)
								for (int k2 = 0; k2 < nt; k2++)
									want += w[0][k0] * w[1][k1] * w[2][k2] *
										x[(idx[0][k0] * 5 + idx[1][k1]) * 4 + idx[2][k2]];
						if (any_out)
							want = 7.0;
						ck_assert_msg(fabs(y[i] - want) < 1e-5,
							      "sizes %d mode %d coord %d exclude %d: y[%lld] = %g, want %g", s,
							      mode, coords[ci], excl, (long long)i, (double)y[i], want);
					}
				}
}
END_TEST

/* rt_grid_sample on small images, values worked out by hand. */
START_TEST(test_grid_sample_by_hand)
{
	const float x[4] = {1, 2, 3, 4};       /* [1, 1, 2, 2] */
	float y[4];
	/* centre, a corner, the far corner, and beyond the left edge (x -1.5) */
	const float g[8] = {0, 0, -1, -1, 1, 1, -1.5f, 0};
	struct {
		int pad, align;
		float want[4];
	} cases[] = {
		{RT_GRID_PAD_ZEROS, 0, {2.5f, 0.25f, 1.0f, 0.0f}},
		{RT_GRID_PAD_ZEROS, 1, {2.5f, 1.0f, 4.0f, 0.75f * (0.5f * 1 + 0.5f * 3)}},
		{RT_GRID_PAD_BORDER, 0, {2.5f, 1.0f, 4.0f, 2.0f}},
		{RT_GRID_PAD_REFLECTION, 0, {2.5f, 1.0f, 4.0f, 2.0f}},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		rt_grid_sample(y, x, g, 1, 1, 2, 2, 1, 4, RT_GRID_LINEAR, cases[k].pad, cases[k].align);
		for (int i = 0; i < 4; i++)
			ck_assert_msg(fabsf(y[i] - cases[k].want[i]) < 1e-6f, "case %zu y[%d] = %g, want %g", k, i,
				      (double)y[i], (double)cases[k].want[i]);
	}
	/* nearest: (0.1, 0) is pixel (0.6, 0.5): column 1, row 0 (halves to even) */
	rt_grid_sample(y, x, (const float[]){0.1f, 0}, 1, 1, 2, 2, 1, 1, RT_GRID_NEAREST, RT_GRID_PAD_ZEROS, 0);
	ck_assert_float_eq(y[0], 2);
	/* bicubic (A = -0.75) on the 4 x 4 image 10 i + j at pixel (1.5, 1.25),
	 * align_corners (g = 2 p / 3 - 1), all 16 taps inside: the rows' weights
	 * are symmetric (-3, 19, 19, -3) / 32, giving 15; the columns' at 0.25 are
	 * (-27, 225, 67, -9) / 256, giving (225 + 2 * 67 - 3 * 9) / 256 */
	float img[16];
	for (int i = 0; i < 16; i++)
		img[i] = (float)(10 * (i / 4) + i % 4);
	rt_grid_sample(y, img, (const float[]){(float)(2 * 1.25 / 3 - 1), 0}, 1, 1, 4, 4, 1, 1, RT_GRID_CUBIC,
		       RT_GRID_PAD_ZEROS, 1);
	ck_assert_msg(fabsf(y[0] - (15.0f + 332.0f / 256.0f)) < 1e-4f, "bicubic: %g", (double)y[0]);
}
END_TEST

/* rt_roi_align on the image 10 i + j (bilinear samples are exact on it). */
START_TEST(test_roi_align_by_hand)
{
	float img[16], y[2];
	for (int i = 0; i < 16; i++)
		img[i] = (float)(10 * (i / 4) + i % 4);
	/* box x 0.5..2.5, y 1..3, one bin, 2 x 2 samples at x 1, 2 and y 1.5, 2.5 */
	const float box[8] = {0.5f, 1, 2.5f, 3, 10, 10, 12, 12};
	const int64_t b[2] = {0, 0};
	ck_assert_int_eq(rt_roi_align(y, img, box, b, 1, 1, 4, 4, 2, 1, 1, 2, 1.0f, 0, 0), RT_OK);
	ck_assert_msg(fabsf(y[0] - 21.5f) < 1e-5f, "avg: %g", (double)y[0]);
	ck_assert_msg(y[1] == 0, "a box outside the image: %g", (double)y[1]);
	/* half_pixel: every sample half a pixel up and left */
	ck_assert_int_eq(rt_roi_align(y, img, box, b, 1, 1, 4, 4, 1, 1, 1, 2, 1.0f, 1, 0), RT_OK);
	ck_assert_msg(fabsf(y[0] - 16.0f) < 1e-5f, "avg half_pixel: %g", (double)y[0]);
	/* max: the largest weighted corner of the samples, here 0.5 * 32 at (2.5, 2) */
	ck_assert_int_eq(rt_roi_align(y, img, box, b, 1, 1, 4, 4, 1, 1, 1, 2, 1.0f, 0, 1), RT_OK);
	ck_assert_msg(fabsf(y[0] - 16.0f) < 1e-5f, "max: %g", (double)y[0]);
	/* spatial_scale 0.5 of a box twice as large: the same samples */
	const float big[4] = {1, 2, 5, 6};
	ck_assert_int_eq(rt_roi_align(y, img, big, b, 1, 1, 4, 4, 1, 1, 1, 2, 0.5f, 0, 0), RT_OK);
	ck_assert_msg(fabsf(y[0] - 21.5f) < 1e-5f, "spatial_scale: %g", (double)y[0]);
	y[0] = -3;
	ck_assert_int_eq(rt_roi_align(y, img, box, (const int64_t[]){1}, 1, 1, 4, 4, 1, 1, 1, 2, 1.0f, 0, 0),
			 RT_ERR_INDEX);
	ck_assert_float_eq(y[0], -3);
}
END_TEST

/* rt_reduce_f32 over axes {0, 2} of a [3, 4, 5] tensor, every kind, against
 * loops written out here in double. */
START_TEST(test_reduce_kinds)
{
	rng r = {11};
	float x[60], y[4];
	fill(&r, x, 60);
	for (int i = 0; i < 60; i++)
		x[i] = x[i] * 2.0f + (i % 3 == 0 ? 2.5f : 0.0f);        /* some positive for the logs */
	const unsigned char red[3] = {1, 0, 1};
	for (int kind = RT_REDUCE_SUM; kind <= RT_REDUCE_SUMSQUARE; kind++) {
		rt_reduce_f32(kind, y, x, 3, (const int64_t[]){3, 4, 5}, red);
		for (int j = 0; j < 4; j++) {
			double s = 0, mx = -INFINITY, mn = INFINITY, p = 1, l1 = 0, sq = 0, se = 0;
			for (int i = 0; i < 3; i++)
				for (int k = 0; k < 5; k++) {
					double v = x[(i * 4 + j) * 5 + k];
					s += v, p *= v, l1 += fabs(v), sq += v * v, se += exp(v);
					mx = v > mx ? v : mx;
					mn = v < mn ? v : mn;
				}
			double want[] = {s, s / 15, mx, mn, p, l1, sqrt(sq), log(s), log(se), sq};
			if (kind == RT_REDUCE_LOGSUM && s <= 0)
				continue;
			ck_assert_msg(fabs(y[j] - want[kind]) <= 1e-5 * (1 + fabs(want[kind])), "kind %d y[%d] = %g, want %g",
				      kind, j, (double)y[j], want[kind]);
		}
	}
}
END_TEST

/* rt_reduce_i64 / rt_reduce_i32 over axis 1 of [2, 3] against loops in the
 * element type: exact past 2^53, sums wrapping modulo 2^64 as two's
 * complement does (computed unsigned here too), Max and Min of negatives. */
START_TEST(test_reduce_integers)
{
	const int64_t big = ((int64_t)1 << 53) + 1;
	const int64_t x[6] = {big, 2, -7, INT64_MAX, 1, -3};
	int64_t y[2];
	const unsigned char red[2] = {0, 1};
	const int kinds[] = {RT_REDUCE_SUM, RT_REDUCE_MAX, RT_REDUCE_MIN, RT_REDUCE_PROD, RT_REDUCE_L1,
			     RT_REDUCE_SUMSQUARE};
	for (size_t q = 0; q < sizeof kinds / sizeof *kinds; q++) {
		int kind = kinds[q];
		rt_reduce_i64(kind, y, x, 2, (const int64_t[]){2, 3}, red);
		for (int j = 0; j < 2; j++) {
			uint64_t s = 0, p = 1, l1 = 0, sq = 0;
			int64_t mx = x[j * 3], mn = x[j * 3];
			for (int k = 0; k < 3; k++) {
				int64_t v = x[j * 3 + k];
				uint64_t u = (uint64_t)v;
				s += u, p *= u, l1 += v < 0 ? 0 - u : u, sq += u * u;
				mx = v > mx ? v : mx;
				mn = v < mn ? v : mn;
			}
			uint64_t want = kind == RT_REDUCE_SUM ? s : kind == RT_REDUCE_PROD ? p : kind == RT_REDUCE_L1 ? l1
				      : kind == RT_REDUCE_SUMSQUARE ? sq : kind == RT_REDUCE_MAX ? (uint64_t)mx : (uint64_t)mn;
			ck_assert_msg((uint64_t)y[j] == want, "kind %d y[%d] = %lld, want %lld", kind, j, (long long)y[j],
				      (long long)want);
		}
	}
	const int32_t x32[4] = {INT32_MAX, 1, -5, 9};
	int32_t y32[1];
	rt_reduce_i32(RT_REDUCE_SUM, y32, x32, 1, (const int64_t[]){4}, (const unsigned char[]){1});
	ck_assert_int_eq(y32[0], (int32_t)((uint32_t)INT32_MAX + 1u - 5u + 9u));
	rt_reduce_i32(RT_REDUCE_MAX, y32, x32, 1, (const int64_t[]){4}, (const unsigned char[]){1});
	ck_assert_int_eq(y32[0], INT32_MAX);
}
END_TEST

/* rt_pool against windows worked out by hand: a 1-D row with pads 1/1,
 * kernel 3, stride 2 (max with Indices, average without and with the pads). */
START_TEST(test_pool_by_hand)
{
	const float x[] = {4, -1, 3, 8, -2};    /* [1, 1, 5] */
	float y[3];
	int64_t ix[3];
	const int64_t xd[3] = {1, 1, 5}, ysp[1] = {3}, k[1] = {3}, st[1] = {2}, pads[2] = {1, 1}, dil[1] = {1};
	/* windows: {pad, 4, -1}, {-1, 3, 8}, {8, -2, pad} */
	rt_pool(RT_POOL_MAX, y, ix, x, 1, xd, ysp, k, st, pads, dil);
	ck_assert_float_eq(y[0], 4);
	ck_assert_float_eq(y[1], 8);
	ck_assert_float_eq(y[2], 8);
	ck_assert_int_eq(ix[0], 0);
	ck_assert_int_eq(ix[1], 3);
	ck_assert_int_eq(ix[2], 3);
	rt_pool(RT_POOL_AVG, y, NULL, x, 1, xd, ysp, k, st, pads, dil);
	ck_assert_float_eq_tol(y[0], 1.5f, 1e-6f);
	ck_assert_float_eq_tol(y[1], 10.0f / 3.0f, 1e-6f);
	ck_assert_float_eq_tol(y[2], 3.0f, 1e-6f);
	rt_pool(RT_POOL_AVG_PADS, y, NULL, x, 1, xd, ysp, k, st, pads, dil);
	ck_assert_float_eq_tol(y[0], 1.0f, 1e-6f);
	ck_assert_float_eq_tol(y[2], 2.0f, 1e-6f);
}
END_TEST

/* rt_layernorm and rt_batchnorm against the formulas evaluated here. */
START_TEST(test_norms)
{
	const float x[] = {1, 2, 3, 4, -1, 0, 1, 6};    /* [2, 4] */
	const float sc[] = {1, 2, 0.5f, -1}, bi[] = {0, 1, 2, 3};
	float y[8], mean[2], inv[2];
	rt_layernorm(y, mean, inv, x, sc, bi, 2, 4, 1e-5f);
	for (int r = 0; r < 2; r++) {
		double m = 0, v = 0;
		for (int i = 0; i < 4; i++)
			m += x[r * 4 + i] / 4.0;
		for (int i = 0; i < 4; i++)
			v += (x[r * 4 + i] - m) * (x[r * 4 + i] - m) / 4.0;
		ck_assert_float_eq_tol(mean[r], m, 1e-6);
		ck_assert_float_eq_tol(inv[r], 1 / sqrt(v + 1e-5), 1e-5);
		for (int i = 0; i < 4; i++)
			ck_assert_float_eq_tol(y[r * 4 + i], (x[r * 4 + i] - m) / sqrt(v + 1e-5) * sc[i] + bi[i], 1e-5);
	}
	/* batch norm over [N=2, C=2, 2] */
	const float mu[] = {1, -1}, var[] = {4, 0.25f};
	rt_batchnorm(y, x, sc, bi, mu, var, 2, 2, 2, 0.0f);
	for (int b = 0; b < 2; b++)
		for (int ch = 0; ch < 2; ch++)
			for (int i = 0; i < 2; i++) {
				int j = (b * 2 + ch) * 2 + i;
				ck_assert_float_eq_tol(y[j], (x[j] - mu[ch]) / sqrt(var[ch]) * sc[ch] + bi[ch], 1e-6);
			}
}
END_TEST

/* rt_conv_grad_x / rt_conv_grad_w: the gradients of a convolution, which is
 * linear in X and in W, against rt_conv_ref applied to unit tensors:
 * dX[i] = <dY, conv(e_i, W)>, dW[k] = <dY, conv(X, e_k)>. */
static void conv_grad_case(rng *r, int nsp, const int64_t *xd, int64_t m, int64_t group, const int64_t *k,
			   const int64_t *st, const int64_t *pads, const int64_t *dil)
{
	int64_t nx = xd[0] * xd[1], nw = m * (xd[1] / group), ny = xd[0] * m;
	for (int a = 0; a < nsp; a++) {
		int64_t span = dil[a] * (k[a] - 1) + 1, o = (xd[2 + a] + pads[a] + pads[nsp + a] - span) / st[a] + 1;
		nx *= xd[2 + a];
		nw *= k[a];
		ny *= o;
	}
	float *x = xmalloc((size_t)nx * sizeof *x), *w = xmalloc((size_t)nw * sizeof *w);
	float *dy = xmalloc((size_t)ny * sizeof *dy), *y = xmalloc((size_t)ny * sizeof *y);
	float *dx = xmalloc((size_t)nx * sizeof *dx), *dw = xmalloc((size_t)nw * sizeof *dw);
	float *e = xmalloc((size_t)(nx > nw ? nx : nw) * sizeof *e);
	fill(r, x, nx);
	fill(r, w, nw);
	fill(r, dy, ny);
	rt_conv_grad_x(dx, dy, w, nsp, xd, m, group, k, st, pads, dil);
	rt_conv_grad_w(dw, dy, x, nsp, xd, m, group, k, st, pads, dil);
	for (int pass = 0; pass < 2; pass++) {
		int64_t n = pass ? nw : nx;
		for (int64_t i = 0; i < n; i++) {
			memset(e, 0, (size_t)n * sizeof *e);
			e[i] = 1;
			if (pass)
				rt_conv_ref(y, x, e, NULL, nsp, xd, m, group, k, st, pads, dil);
			else
				rt_conv_ref(y, e, w, NULL, nsp, xd, m, group, k, st, pads, dil);
			double want = 0;
			for (int64_t j = 0; j < ny; j++)
				want += (double)dy[j] * y[j];
			float got = pass ? dw[i] : dx[i];
			ck_assert_msg(fabs(got - want) <= 1e-4 * (1.0 + fabs(want)), "nsp %d group %lld: d%s[%lld] = %g, want %g",
				      nsp, (long long)group, pass ? "W" : "X", (long long)i, (double)got, want);
		}
	}
	free(x);
	free(w);
	free(dy);
	free(y);
	free(dx);
	free(dw);
	free(e);
}

START_TEST(test_conv_grads)
{
	rng r = {11};
	conv_grad_case(&r, 1, (const int64_t[]){2, 3, 9}, 4, 1, (const int64_t[]){3}, (const int64_t[]){1},
		       (const int64_t[]){1, 1}, (const int64_t[]){1});
	conv_grad_case(&r, 1, (const int64_t[]){3, 4, 13}, 6, 2, (const int64_t[]){3}, (const int64_t[]){2},
		       (const int64_t[]){2, 1}, (const int64_t[]){2});
	conv_grad_case(&r, 1, (const int64_t[]){2, 3, 8}, 6, 3, (const int64_t[]){2}, (const int64_t[]){3},
		       (const int64_t[]){0, 2}, (const int64_t[]){1});
	conv_grad_case(&r, 2, (const int64_t[]){2, 2, 5, 6}, 3, 1, (const int64_t[]){2, 3}, (const int64_t[]){2, 1},
		       (const int64_t[]){1, 0, 0, 1}, (const int64_t[]){1, 2});
}
END_TEST

/* rt_pad_grad, the adjoint of rt_pad: dX[i] = <dY, pad(e_i)> for every mode,
 * with pads that crop and pads wider than the axis (reflect folds twice). */
START_TEST(test_pad_grad)
{
	rng r = {12};
	const int64_t xd[2] = {3, 4};
	const int64_t padsets[3][4] = {{2, 1, 1, 3}, {-1, 5, 0, -2}, {4, 0, 3, 1}};
	for (int ps = 0; ps < 3; ps++)
		for (int mode = 0; mode < 3; mode++) {
			const int64_t *pads = padsets[ps];
			int64_t ny = (xd[0] + pads[0] + pads[2]) * (xd[1] + pads[1] + pads[3]);
			float dy[256], y[256], dx[12], e[12];
			fill(&r, dy, ny);
			rt_pad_grad(dx, dy, 2, xd, pads, mode);
			for (int i = 0; i < 12; i++) {
				memset(e, 0, sizeof e);
				e[i] = 1;
				rt_pad(y, e, sizeof(float), 2, xd, pads, mode, NULL);
				double want = 0;
				for (int64_t j = 0; j < ny; j++)
					want += (double)dy[j] * y[j];
				ck_assert_msg(fabs(dx[i] - want) <= 1e-5 * (1.0 + fabs(want)),
					      "pads %d mode %d dx[%d] = %g, want %g", ps, mode, i, (double)dx[i], want);
			}
		}
}
END_TEST

/* rt_class_loss_grad against central differences of rt_class_loss
 * (from_logits 0) for every reduction, with and without weights and an
 * ignored target. */
START_TEST(test_class_loss_grad)
{
	rng r = {13};
	enum { N = 2, C = 3, D = 2 };
	float x[N * C * D], w[C], dl[N * D], dx[N * C * D], dw[C], lp[N * D], lm[N * D];
	const int64_t t[N * D] = {0, 2, 1, 2};
	fill(&r, x, N * C * D);
	for (int c = 0; c < C; c++)
		w[c] = 0.5f + 0.25f * (float)c;
	fill(&r, dl, N * D);
	for (int red = 0; red < 3; red++)
		for (int weighted = 0; weighted < 2; weighted++) {
			const float *wp = weighted ? w : NULL;
			ck_assert_int_eq(rt_class_loss_grad(dx, weighted ? dw : NULL, dl, x, t, wp, N, C, D, red, 1, 2), RT_OK);
			/* <dl, loss(x)>: the value whose gradient is wanted */
			for (int pass = 0; pass < 1 + weighted; pass++) {
				int n = pass ? C : N * C * D;
				for (int i = 0; i < n; i++) {
					float *p = pass ? &w[i] : &x[i], keep = *p;
					const float h = 1.0f / 64;
					double f[2];
					for (int s = 0; s < 2; s++) {
						*p = keep + (s ? h : -h);
						ck_assert_int_eq(rt_class_loss(s ? lp : lm, NULL, x, 0, t, wp, N, C, D, red, 1, 2),
								 RT_OK);
						const float *l = s ? lp : lm;
						f[s] = 0;
						for (int j = 0; j < (red == RT_LOSS_NONE ? N * D : 1); j++)
							f[s] += (double)dl[j] * l[j];
					}
					*p = keep;
					double want = (f[1] - f[0]) / (2.0 * h), got = pass ? dw[i] : dx[i];
					ck_assert_msg(fabs(got - want) <= 2e-3 * (1.0 + fabs(want)),
						      "reduction %d weights %d d%s[%d] = %g, want %g", red, weighted,
						      pass ? "w" : "x", i, got, want);
				}
			}
		}
	/* a target out of range that is not ignored */
	const int64_t bad[N * D] = {0, 3, 1, 2};
	ck_assert_int_eq(rt_class_loss_grad(dx, NULL, dl, x, bad, NULL, N, C, D, RT_LOSS_SUM, 0, 0), RT_ERR_INDEX);
}
END_TEST

/* rt_batchnorm_train against the batch statistics computed here. */
START_TEST(test_batchnorm_train)
{
	const float x[] = {1, 2, 3, 4, -1, 0, 1, 6};    /* [N=2, C=2, 2] */
	const float sc[] = {1.5f, -0.5f}, bi[] = {0.25f, 1}, mu[] = {1, -1}, var[] = {4, 0.25f};
	float y[8], rm[2], rv[2];
	rt_batchnorm_train(y, rm, rv, x, sc, bi, mu, var, 2, 2, 2, 1e-3f, 0.75f);
	for (int ch = 0; ch < 2; ch++) {
		double m = 0, v = 0;
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 2; i++)
				m += x[(b * 2 + ch) * 2 + i] / 4.0;
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 2; i++)
				v += (x[(b * 2 + ch) * 2 + i] - m) * (x[(b * 2 + ch) * 2 + i] - m) / 4.0;
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 2; i++) {
				int j = (b * 2 + ch) * 2 + i;
				ck_assert_float_eq_tol(y[j], (x[j] - m) / sqrt(v + 1e-3) * sc[ch] + bi[ch], 1e-5);
			}
		ck_assert_float_eq_tol(rm[ch], mu[ch] * 0.75 + m * 0.25, 1e-6);
		ck_assert_float_eq_tol(rv[ch], var[ch] * 0.75 + v * 0.25, 1e-6);
	}
}
END_TEST

/* ---- float16 / bfloat16 ---------------------------------------------------- */

/* binary16 decoded from its fields, the textbook way */
static double f16_naive(uint16_t h)
{
	int e = (h >> 10) & 31, f = h & 1023;
	double sign = (h & 0x8000) ? -1.0 : 1.0;
	if (e == 31)
		return f ? NAN : sign * INFINITY;
	if (e == 0)
		return sign * f * pow(2.0, -24);
	return sign * (1024 + f) * pow(2.0, e - 25);
}

/* Every encoding decodes to the textbook value and encodes back to itself. */
START_TEST(test_f16_every_encoding)
{
	for (uint32_t h = 0; h < 65536; h++) {
		double ref = f16_naive((uint16_t)h);
		float got = rt_f16_to_f32((uint16_t)h);
		if (isnan(ref)) {
			ck_assert(isnan(got));
			ck_assert(isnan(rt_f16_to_f32(rt_f32_to_f16(got))));
			continue;
		}
		ck_assert_msg((double)got == ref && !signbit(got) == !signbit(ref), "0x%04x: %g, want %g", h, got, ref);
		ck_assert_uint_eq(rt_f32_to_f16(got), h);
		ck_assert((double)rt_round_f16(ref) == ref);
	}
}
END_TEST

/* rt_round_f16 against the nearest value found in the table of all
 * non-negative finite float16 values: at every midpoint (a tie: the even
 * encoding), just above and below it (in double, below float precision:
 * no rounding to float on the way), and at random magnitudes. */
START_TEST(test_f16_round_nearest_even)
{
	static double v[0x7c00];
	for (int i = 0; i < 0x7c00; i++)
		v[i] = f16_naive((uint16_t)i);
	for (int i = 0; i + 1 < 0x7c00; i++) {
		double mid = (v[i] + v[i + 1]) / 2, eps = (v[i + 1] - v[i]) * 0x1p-20;
		double tie = (i % 2 == 0) ? v[i] : v[i + 1];
		ck_assert_msg((double)rt_round_f16(mid) == tie, "tie %.17g", mid);
		ck_assert((double)rt_round_f16(-mid) == -tie);
		ck_assert((double)rt_round_f16(mid + eps) == v[i + 1]);
		ck_assert((double)rt_round_f16(mid - eps) == v[i]);
	}
	/* above the largest finite value: the midpoint 65520 and beyond overflow */
	ck_assert((double)rt_round_f16(65519.99) == 65504.0);
	ck_assert(isinf(rt_round_f16(65520.0)) && rt_round_f16(65520.0) > 0);
	ck_assert(isinf(rt_round_f16(-1e30)) && rt_round_f16(-1e30) < 0);
	ck_assert(isnan(rt_round_f16(NAN)));
	rng r = {7};
	for (int t = 0; t < 200000; t++) {
		double x = ldexp(rnd(&r), (int)(rnd(&r) * 20));
		double ax = fabs(x);
		int lo = 0, hi = 0x7c00 - 1;
		while (lo < hi) {       /* the last value <= ax */
			int mid = (lo + hi + 1) / 2;
			if (v[mid] <= ax)
				lo = mid;
			else
				hi = mid - 1;
		}
		double want = lo + 1 < 0x7c00 && (ax - v[lo] > v[lo + 1] - ax ||
						  (ax - v[lo] == v[lo + 1] - ax && lo % 2)) ? v[lo + 1] : v[lo];
		if (ax >= 65520.0)      /* half a step (32) above 65504 */
			want = INFINITY;
		ck_assert_msg((double)rt_round_f16(x) == copysign(want, x), "%.17g", x);
	}
}
END_TEST

/* bfloat16 is the upper half of the float32 encoding (truncation). */
START_TEST(test_bf16_truncation)
{
	rng r = {11};
	for (int t = 0; t < 100000; t++) {
		float x = ldexpf(rnd(&r), (int)(rnd(&r) * 100));
		uint32_t u;
		memcpy(&u, &x, 4);
		ck_assert_uint_eq(rt_f32_to_bf16(x), u >> 16);
		float back = rt_bf16_to_f32((uint16_t)(u >> 16)), want;
		uint32_t w = u & 0xffff0000u;
		memcpy(&want, &w, 4);
		ck_assert(back == want && rt_round_bf16(x) == want);
	}
	/* a NaN whose payload is only in the dropped bits stays a NaN */
	uint32_t nanbits = 0x7f800001u;
	float nan1;
	memcpy(&nan1, &nanbits, 4);
	ck_assert(isnan(rt_bf16_to_f32(rt_f32_to_bf16(nan1))));
	ck_assert(isinf(rt_round_bf16(INFINITY)));
}
END_TEST

/* ---- quantization: naive references, exact integer equality --------------- */

static double rne(double v)
{
	double r = floor(v), d = v - r;
	if (d > 0.5 || (d == 0.5 && fmod(r, 2.0) != 0.0))
		r += 1.0;
	return r;
}

static int32_t sat(double q, int dt)
{
	double lo = dt == 3 ? -128 : 0, hi = dt == 3 ? 127 : 255;
	return (int32_t)(q < lo ? lo : q > hi ? hi : q);
}

static int32_t get8(const void *p, int dt, int64_t i)
{
	return dt == 3 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

static void fill8(void *p, int dt, int64_t n, rng *r)
{
	for (int64_t i = 0; i < n; i++) {
		int v = (int)floor((rnd(r) + 1.0f) * 128.0f);   /* 0 .. 255 */
		if (dt == 3)
			((int8_t *)p)[i] = (int8_t)(v - 128);
		else
			((uint8_t *)p)[i] = (uint8_t)v;
	}
}

START_TEST(test_quantize_linear_vs_naive)
{
	rng r = {3};
	enum { O = 2, C = 3, I = 5 };
	float x[O * C * I], scale[C] = {2.0f, 0.37f, 5.0f};
	for (int i = 0; i < O * C * I; i++)
		x[i] = rnd(&r) * 400.0f;
	x[0] = 1.0f, x[1] = 3.0f, x[2] = 5.0f, x[3] = -1.0f, x[4] = -3.0f;  /* ties at scale 2 */
	for (int dt = 2; dt <= 3; dt++)
		for (int per_axis = 0; per_axis <= 1; per_axis++) {
			unsigned char zp[C], y[O * C * I];
			fill8(zp, dt, C, &r);
			int64_t n = per_axis ? C : 1, outer = per_axis ? O : O * C * I, inner = per_axis ? I : 1;
			rt_quantize_linear(y, dt, x, scale, zp, outer, n, inner);
			for (int i = 0; i < O * C * I; i++) {
				int c = per_axis ? i / I % C : 0;
				float q = x[i] / scale[c];
				ck_assert_int_eq(get8(y, dt, i), sat(rne(q) + get8(zp, dt, c), dt));
			}
			rt_quantize_linear(y, dt, x, scale, NULL, outer, n, inner);
			for (int i = 0; i < O * C * I; i++) {
				int c = per_axis ? i / I % C : 0;
				ck_assert_int_eq(get8(y, dt, i), sat(rne(x[i] / scale[c]), dt));
			}
			/* dequantized back */
			float d[O * C * I];
			rt_dequantize_linear(d, y, dt, scale, zp, outer, n, inner);
			for (int i = 0; i < O * C * I; i++) {
				int c = per_axis ? i / I % C : 0;
				ck_assert(d[i] == (float)((get8(y, dt, i) - get8(zp, dt, c)) * (double)scale[c]));
			}
		}
	int32_t xi[3] = {-70000000, 5, 1 << 30}, zi[1] = {0};
	float di[3], one = 0.5f;
	rt_dequantize_linear(di, xi, 6, &one, zi, 3, 1, 1);
	ck_assert(di[0] == -35000000.0f && di[1] == 2.5f && di[2] == (float)(1 << 29));
}
END_TEST

START_TEST(test_dynamic_quantize_vs_formula)
{
	rng r = {5};
	for (int t = 0; t < 50; t++) {
		float x[37];
		float shift = t % 3 == 0 ? 3.0f : t % 3 == 1 ? -3.0f : 0.0f;    /* all positive, all negative, mixed */
		for (int i = 0; i < 37; i++)
			x[i] = rnd(&r) + shift;
		uint8_t y[37], zp;
		float s;
		rt_dynamic_quantize_linear(y, &s, &zp, x, 37);
		float lo = 0, hi = 0;
		for (int i = 0; i < 37; i++) {
			lo = fminf(lo, x[i]);
			hi = fmaxf(hi, x[i]);
		}
		float ws = (hi - lo) / 255.0f;
		ck_assert(s == ws);
		int32_t wz = sat(rne((0.0f - lo) / ws), 2);
		ck_assert_int_eq(zp, wz);
		for (int i = 0; i < 37; i++)
			ck_assert_int_eq(y[i], sat(rne(x[i] / ws) + wz, 2));
	}
}
END_TEST

/* K = 700 with extreme operands: sums beyond 2^24, where float would round */
START_TEST(test_matmul_integer_vs_naive)
{
	rng r = {9};
	enum { M = 5, N = 4, K = 700 };
	static uint8_t a[M * K];
	static int8_t b[K * N];
	int32_t y[M * N];
	uint8_t azp[M];
	int8_t bzp[N];
	fill8(a, 2, M * K, &r);
	fill8(b, 3, K * N, &r);
	for (int i = 0; i < K; i++)
		a[i] = 255, b[i * N] = -128;    /* row 0 times column 0: -255 * 128 * K */
	fill8(azp, 2, M, &r);
	fill8(bzp, 3, N, &r);
	azp[0] = 0, bzp[0] = 0;
	for (int per = 0; per <= 1; per++) {
		rt_matmul_integer(y, a, 2, azp, per ? M : 1, b, 3, bzp, per ? N : 1, M, N, K);
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++) {
				int64_t acc = 0;
				for (int k = 0; k < K; k++)
					acc += (int64_t)(a[i * K + k] - azp[per ? i : 0]) * (b[k * N + j] - bzp[per ? j : 0]);
				ck_assert_int_eq(y[i * N + j], acc);
			}
	}
	ck_assert_int_eq(y[0], -255 * 128 * K);
	/* QLinearMatMul: the same sums requantized */
	uint8_t yq[M * N], yzp = 100;
	float mult = 0.0066f * 0.00705f / 0.0107f;
	rt_qlinear_matmul(yq, 2, mult, &yzp, a, 2, azp, b, 3, bzp, M, N, K);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			int64_t acc = 0;
			for (int k = 0; k < K; k++)
				acc += (int64_t)(a[i * K + k] - azp[0]) * (b[k * N + j] - bzp[0]);
			ck_assert_int_eq(yq[i * N + j], sat(rne((float)acc * mult) + yzp, 2));
		}
}
END_TEST

/* 2-D integer convolutions against the loop nest over X explicitly padded
 * with its zero point: strides, dilations, uneven pads, two groups, one W
 * zero point per output channel. */
START_TEST(test_conv_integer_vs_naive)
{
	rng r = {13};
	enum { B = 2, C = 4, H = 7, W = 6, M = 6, G = 2, KH = 3, KW = 2 };
	const int64_t xd[4] = {B, C, H, W}, kd[2] = {KH, KW}, st[2] = {2, 1}, pads[4] = {1, 0, 2, 1},
		      dil[2] = {1, 2};
	int64_t oh = (H + 1 + 2 - (KH - 1) - 1) / 2 + 1, ow = (W + 0 + 1 - 2 * (KW - 1) - 1) / 1 + 1;
	static int8_t x[B * C * H * W];
	static uint8_t w[M * (C / G) * KH * KW];
	int8_t xzp = -3;
	uint8_t wzp[M];
	int32_t bias[M];
	float mult[M];
	fill8(x, 3, B * C * H * W, &r);
	fill8(w, 2, M * (C / G) * KH * KW, &r);
	fill8(wzp, 2, M, &r);
	for (int m = 0; m < M; m++) {
		bias[m] = (int32_t)(rnd(&r) * 5000);
		mult[m] = 0.0001f * (float)(m + 1);
	}
	int64_t ny = B * M * oh * ow;
	int32_t *y = malloc((size_t)ny * sizeof *y);
	int8_t *yq = malloc((size_t)ny);
	int8_t yzp = 7;
	rt_conv_integer(y, x, 3, &xzp, w, 2, wzp, M, 2, xd, M, G, kd, st, pads, dil);
	rt_qlinear_conv(yq, 3, mult, M, &yzp, x, 3, &xzp, w, 2, wzp, M, bias, 2, xd, M, G, kd, st, pads, dil);
	int64_t ph = H + 1 + 2, pw = W + 0 + 1;
	for (int b = 0; b < B; b++)
		for (int m = 0; m < M; m++)
			for (int i = 0; i < oh; i++)
				for (int j = 0; j < ow; j++) {
					int64_t acc = 0;
					int g = m / (M / G);
					for (int c = 0; c < C / G; c++)
						for (int ki = 0; ki < KH; ki++)
							for (int kj = 0; kj < KW; kj++) {
								int64_t pi = i * 2 + ki, pj = j + kj * 2;       /* in padded X */
								int64_t xi = pi - 1, xj = pj - 0;
								int xv = pi < ph && pj < pw && xi >= 0 && xi < H && xj >= 0 && xj < W
										 ? x[((b * C + g * (C / G) + c) * H + xi) * W + xj] : xzp;
								acc += (int64_t)(xv - xzp) *
								       (w[((m * (C / G) + c) * KH + ki) * KW + kj] - wzp[m]);
							}
					int64_t at = ((b * M + m) * oh + i) * ow + j;
					ck_assert_int_eq(y[at], acc);
					ck_assert_int_eq(yq[at], sat(rne((float)(int32_t)(acc + bias[m]) * mult[m]) + yzp, 3));
				}
	free(y);
	free(yq);
}
END_TEST

START_TEST(test_maxpool_8_vs_naive)
{
	rng r = {17};
	enum { NC = 3, H = 5, W = 6 };
	const int64_t xd[4] = {1, NC, H, W}, k[2] = {3, 2}, st[2] = {2, 2}, pads[4] = {1, 1, 1, 0}, dil[2] = {1, 2};
	const int64_t ysp[2] = {(H + 2 - 3) / 2 + 1, (W + 1 - 3) / 2 + 1};
	for (int dt = 2; dt <= 3; dt++) {
		unsigned char x[NC * H * W], y[NC * 3 * 3];
		fill8(x, dt, NC * H * W, &r);
		rt_maxpool_8(y, dt, x, 2, xd, ysp, k, st, pads, dil);
		for (int c = 0; c < NC; c++)
			for (int i = 0; i < ysp[0]; i++)
				for (int j = 0; j < ysp[1]; j++) {
					int best = -1000;
					for (int ki = 0; ki < 3; ki++)
						for (int kj = 0; kj < 2; kj++) {
							int xi = i * 2 - 1 + ki, xj = j * 2 - 1 + kj * 2;
							if (xi >= 0 && xi < H && xj >= 0 && xj < W && get8(x, dt, (c * H + xi) * W + xj) > best)
								best = get8(x, dt, (c * H + xi) * W + xj);
						}
					ck_assert_int_eq(get8(y, dt, (c * ysp[0] + i) * ysp[1] + j), best);
				}
	}
}
END_TEST

START_TEST(test_argmax)
{
	const float x[] = {1, 5, 5, 0, -2, 7, -2, 7};     /* [2, 4]: along axis 1 */
	int64_t y[2];
	rt_argmax_f32(y, x, 2, 4, 1, 0, 0);
	ck_assert_int_eq(y[0], 1);
	ck_assert_int_eq(y[1], 1);
	rt_argmax_f32(y, x, 2, 4, 1, 0, 1);
	ck_assert_int_eq(y[0], 2);
	ck_assert_int_eq(y[1], 3);
	rt_argmax_f32(y, x, 2, 4, 1, 1, 0);
	ck_assert_int_eq(y[0], 3);
	ck_assert_int_eq(y[1], 0);
	rt_argmax_f32(y, x, 2, 4, 1, 1, 1);
	ck_assert_int_eq(y[1], 2);
}
END_TEST

/* rt_pool's column-major Indices (storage_order 1), worked out by hand: two
 * planes of [2, 3] under a 2x2 window, stride 1. */
START_TEST(test_pool_colmajor_by_hand)
{
	const float x[] = {1, 5, 2, 7, 3, 8,  0, 4, 6, 1, 2, 3};    /* [1, 2, 2, 3] */
	float y[4];
	int64_t ix[4];
	const int64_t xd[4] = {1, 2, 2, 3}, ysp[2] = {1, 2}, k[2] = {2, 2}, st[2] = {1, 1}, pads[4] = {0}, dil[2] = {1, 1};
	rt_pool(RT_POOL_MAX_CM, y, ix, x, 2, xd, ysp, k, st, pads, dil);
	/* plane 0: 7 at (1, 0) -> 1 + 0 * 2; 8 at (1, 2) -> 1 + 2 * 2 */
	ck_assert_float_eq(y[0], 7);
	ck_assert_float_eq(y[1], 8);
	ck_assert_int_eq(ix[0], 1);
	ck_assert_int_eq(ix[1], 5);
	/* plane 1 (offset 6): 4 at (0, 1) -> 0 + 1 * 2; 6 at (0, 2) -> 0 + 2 * 2 */
	ck_assert_float_eq(y[2], 4);
	ck_assert_float_eq(y[3], 6);
	ck_assert_int_eq(ix[2], 6 + 2);
	ck_assert_int_eq(ix[3], 6 + 4);
	rt_pool(RT_POOL_MAX, y, ix, x, 2, xd, ysp, k, st, pads, dil);
	ck_assert_int_eq(ix[0], 3);
	ck_assert_int_eq(ix[3], 6 + 2);
}
END_TEST

/* Determinant by cofactor expansion along the first row (n <= 5). */
static double det_ref(const double *a, int n)
{
	if (n == 1)
		return a[0];
	double m[16], d = 0;
	for (int c = 0; c < n; c++) {
		for (int i = 1; i < n; i++)
			for (int j = 0, jj = 0; j < n; j++)
				if (j != c)
					m[(i - 1) * (n - 1) + jj++] = a[i * n + j];
		d += (c % 2 ? -1 : 1) * a[c] * det_ref(m, n - 1);
	}
	return d;
}

/* rt_det (f32 and f64) against cofactor expansion: random matrices of sizes
 * 1 to 5, one needing a row swap (zero pivot), one singular. */
START_TEST(test_det_vs_cofactors)
{
	rng r = {7};
	for (int n = 1; n <= 5; n++) {
		float xf[3 * 25], yf[3];
		double xd[3 * 25], yd[3];
		for (int i = 0; i < 3 * n * n; i++)
			xd[i] = xf[i] = rnd(&r) * 2;
		if (n >= 2) {
			xd[n * n] = xf[n * n] = 0;      /* matrix 1: a zero first pivot */
			for (int j = 0; j < n; j++)     /* matrix 2: row 1 = 2 * row 0 */
				xd[2 * n * n + n + j] = xf[2 * n * n + n + j] = 2 * xf[2 * n * n + j];
		}
		ck_assert_int_eq(rt_det(yf, xf, 0, 3, n), RT_OK);
		ck_assert_int_eq(rt_det(yd, xd, 1, 3, n), RT_OK);
		for (int b = 0; b < 3; b++) {
			double want = det_ref(xd + b * n * n, n);
			ck_assert_msg(fabs(yd[b] - want) <= 1e-12 * (1 + fabs(want)), "n %d b %d: %g, want %g", n, b,
				      yd[b], want);
			ck_assert_msg(fabs(yf[b] - want) <= 1e-5 * (1 + fabs(want)), "n %d b %d: %g, want %g", n, b,
				      (double)yf[b], want);
		}
	}
}
END_TEST

/* rt_einsum against loops written for each equation: "ij,jk->ik",
 * "bii->bi" (a diagonal), "ii" (trace), "ij->ji", "ij,jk,kl->il", "i,j->ij". */
START_TEST(test_einsum_vs_loops)
{
	rng r = {11};
	double a[60], b[60], c[60], y[60];
	for (int i = 0; i < 60; i++) {
		a[i] = rnd(&r);
		b[i] = rnd(&r);
		c[i] = rnd(&r);
	}
	/* ij,jk->ik: labels i 0, k 1, j 2 */
	ck_assert_int_eq(rt_einsum(y, 1, 2, (const void *const[]){a, b}, (const int[]){2, 2},
				   (const int64_t[]){3, 4, 4, 5}, (const int[]){0, 2, 2, 1}, 3, 2), RT_OK);
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 5; k++) {
			double w = 0;
			for (int j = 0; j < 4; j++)
				w += a[i * 4 + j] * b[j * 5 + k];
			ck_assert_double_eq_tol(y[i * 5 + k], w, 1e-12);
		}
	/* bii->bi over [2, 3, 3] */
	ck_assert_int_eq(rt_einsum(y, 1, 1, (const void *const[]){a}, (const int[]){3}, (const int64_t[]){2, 3, 3},
				   (const int[]){0, 1, 1}, 2, 2), RT_OK);
	for (int bb = 0; bb < 2; bb++)
		for (int i = 0; i < 3; i++)
			ck_assert_double_eq(y[bb * 3 + i], a[bb * 9 + i * 3 + i]);
	/* ii (trace of [4, 4]) */
	ck_assert_int_eq(rt_einsum(y, 1, 1, (const void *const[]){a}, (const int[]){2}, (const int64_t[]){4, 4},
				   (const int[]){0, 0}, 1, 0), RT_OK);
	ck_assert_double_eq_tol(y[0], a[0] + a[5] + a[10] + a[15], 1e-12);
	/* ij->ji over [3, 4] */
	ck_assert_int_eq(rt_einsum(y, 1, 1, (const void *const[]){a}, (const int[]){2}, (const int64_t[]){3, 4},
				   (const int[]){1, 0}, 2, 2), RT_OK);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			ck_assert_double_eq(y[j * 3 + i], a[i * 4 + j]);
	/* ij,jk,kl->il over [2, 3], [3, 4], [4, 2]: i 0, l 1, j 2, k 3 (float32) */
	float fa[12], fb[12], fc[8], fy[4];
	for (int i = 0; i < 12; i++) {
		fa[i] = (float)a[i];
		fb[i] = (float)b[i];
	}
	for (int i = 0; i < 8; i++)
		fc[i] = (float)c[i];
	ck_assert_int_eq(rt_einsum(fy, 0, 3, (const void *const[]){fa, fb, fc}, (const int[]){2, 2, 2},
				   (const int64_t[]){2, 3, 3, 4, 4, 2}, (const int[]){0, 2, 2, 3, 3, 1}, 4, 2), RT_OK);
	for (int i = 0; i < 2; i++)
		for (int l = 0; l < 2; l++) {
			double w = 0;
			for (int j = 0; j < 3; j++)
				for (int k = 0; k < 4; k++)
					w += (double)fa[i * 3 + j] * fb[j * 4 + k] * fc[k * 2 + l];
			ck_assert_float_eq_tol(fy[i * 2 + l], (float)w, 1e-5f);
		}
	/* i,j->ij */
	ck_assert_int_eq(rt_einsum(y, 1, 2, (const void *const[]){a, b}, (const int[]){1, 1}, (const int64_t[]){3, 2},
				   (const int[]){0, 1}, 2, 2), RT_OK);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			ck_assert_double_eq(y[i * 2 + j], a[i] * b[j]);
	/* one label, two sizes */
	ck_assert_int_eq(rt_einsum(y, 1, 2, (const void *const[]){a, b}, (const int[]){1, 1}, (const int64_t[]){3, 2},
				   (const int[]){0, 0}, 1, 1), RT_ERR_SHAPE);
}
END_TEST

/* The DFT by its definition: X[k] = sum_j x[j] (cos + i sin)(-+2 pi j k / n). */
static void dft_ref(double *re, double *im, const double *xr, const double *xi, int len, int n, int inverse)
{
	for (int k = 0; k < n; k++) {
		re[k] = im[k] = 0;
		for (int j = 0; j < len && j < n; j++) {
			double t = (inverse ? 2 : -2) * 3.14159265358979323846 * j * k / n;
			re[k] += xr[j] * cos(t) - xi[j] * sin(t);
			im[k] += xr[j] * sin(t) + xi[j] * cos(t);
		}
		if (inverse) {
			re[k] /= n;
			im[k] /= n;
		}
	}
}

/* rt_dft against the definition: real and complex input along the middle
 * axis of [2, len, 3, c], zero padding and truncation, onesided bins, the
 * inverse (and the round trip back to the input); rt_stft against windowed
 * frames through the same reference. */
START_TEST(test_dft_vs_definition)
{
	rng r = {5};
	enum { OUT = 2, IN = 3 };
	double x[OUT * 9 * IN * 2], y[OUT * 12 * IN * 2], z[OUT * 12 * IN * 2];
	for (size_t i = 0; i < sizeof x / sizeof *x; i++)
		x[i] = rnd(&r);
	const struct { int len, cin, n, nbins, inverse; } cs[] = {
		{8, 1, 8, 8, 0}, {8, 2, 8, 8, 0}, {7, 2, 7, 7, 1}, {6, 1, 9, 9, 0}, {9, 2, 5, 5, 0}, {8, 1, 8, 5, 0},
	};
	for (size_t c = 0; c < sizeof cs / sizeof *cs; c++) {
		int len = cs[c].len, cin = cs[c].cin, n = cs[c].n, nb = cs[c].nbins;
		ck_assert_int_eq(rt_dft(y, x, 1, OUT, len, IN, cin, n, nb, cs[c].inverse), RT_OK);
		for (int o = 0; o < OUT; o++)
			for (int i = 0; i < IN; i++) {
				double xr[9], xi[9], re[12], im[12];
				for (int j = 0; j < len; j++) {
					xr[j] = x[((o * len + j) * IN + i) * cin];
					xi[j] = cin == 2 ? x[((o * len + j) * IN + i) * cin + 1] : 0;
				}
				dft_ref(re, im, xr, xi, len, n, cs[c].inverse);
				for (int k = 0; k < nb; k++) {
					ck_assert_double_eq_tol(y[((o * nb + k) * IN + i) * 2], re[k], 1e-12);
					ck_assert_double_eq_tol(y[((o * nb + k) * IN + i) * 2 + 1], im[k], 1e-12);
				}
			}
	}
	/* the inverse of the transform is the input (float32) */
	float fx[16], fy[16], fz[16];
	for (int i = 0; i < 16; i++)
		fx[i] = rnd(&r);
	ck_assert_int_eq(rt_dft(fy, fx, 0, 1, 8, 1, 2, 8, 8, 0), RT_OK);
	ck_assert_int_eq(rt_dft(fz, fy, 0, 1, 8, 1, 2, 8, 8, 1), RT_OK);
	for (int i = 0; i < 16; i++)
		ck_assert_float_eq_tol(fz[i], fx[i], 1e-5f);
	/* STFT: signal [2, 20, 1], frames of 8 every 4 (4 frames), a window, 5 bins */
	double sig[40], win[8];
	for (int i = 0; i < 40; i++)
		sig[i] = rnd(&r);
	for (int i = 0; i < 8; i++)
		win[i] = 0.5 + 0.5 * rnd(&r);
	ck_assert_int_eq(rt_stft(z, sig, 1, 2, 20, 1, 4, win, 8, 4, 5), RT_OK);
	for (int b = 0; b < 2; b++)
		for (int f = 0; f < 4; f++) {
			double xr[8], xi[8] = {0}, re[8], im[8];
			for (int j = 0; j < 8; j++)
				xr[j] = sig[b * 20 + f * 4 + j] * win[j];
			dft_ref(re, im, xr, xi, 8, 8, 0);
			for (int k = 0; k < 5; k++) {
				ck_assert_double_eq_tol(z[((b * 4 + f) * 5 + k) * 2], re[k], 1e-12);
				ck_assert_double_eq_tol(z[((b * 4 + f) * 5 + k) * 2 + 1], im[k], 1e-12);
			}
		}
	ck_assert_int_eq(rt_stft(z, sig, 1, 2, 20, 1, 4, win, 8, 5, 5), RT_ERR_SHAPE);   /* frame 4 ends at 24 */
}
END_TEST

/* rt_lrn, rt_mvn and rt_max_unpool against their formulas written out here. */
START_TEST(test_lrn_mvn_unpool)
{
	rng r = {3};
	float x[2 * 5 * 3], y[2 * 5 * 3];
	for (int i = 0; i < 30; i++)
		x[i] = rnd(&r) * 3;
	for (int size = 1; size <= 4; size++) {
		rt_lrn(y, x, 2, 5, 3, size, 0.3f, 0.75f, 1.5f);
		for (int b = 0; b < 2; b++)
			for (int c = 0; c < 5; c++)
				for (int i = 0; i < 3; i++) {
					double sq = 0;
					for (int j = c - (size - 1) / 2; j <= c + size / 2; j++)   /* ceil((size-1)/2) = size/2 */
						if (j >= 0 && j < 5)
							sq += (double)x[(b * 5 + j) * 3 + i] * x[(b * 5 + j) * 3 + i];
					int at = (b * 5 + c) * 3 + i;
					ck_assert_float_eq_tol(y[at], x[at] / pow(1.5 + 0.3 / size * sq, 0.75), 1e-5);
				}
	}
	/* MVN of [2, 5, 3] over axes 0 and 2: one mean and deviation per channel */
	ck_assert_int_eq(rt_mvn(y, x, 3, (const int64_t[]){2, 5, 3}, (const unsigned char[]){1, 0, 1}), RT_OK);
	for (int c = 0; c < 5; c++) {
		double m = 0, v = 0;
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 3; i++)
				m += x[(b * 5 + c) * 3 + i] / 6.0;
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 3; i++)
				v += (x[(b * 5 + c) * 3 + i] - m) * (x[(b * 5 + c) * 3 + i] - m) / 6.0;
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 3; i++)
				ck_assert_float_eq_tol(y[(b * 5 + c) * 3 + i], (x[(b * 5 + c) * 3 + i] - m) / (sqrt(v) + 1e-9),
						       1e-5);
	}
	/* MaxUnpool: indices into [1, 2, 2, 2] placed at the same coordinates of [1, 2, 3, 3] */
	const float v[] = {1, 2, 3, 4};
	const int64_t ix[] = {3, 0, 4 + 1, 4 + 2};      /* plane 0: (1, 1), (0, 0); plane 1: (0, 1), (1, 0) */
	float u[18];
	ck_assert_int_eq(rt_max_unpool(u, v, ix, 4, 4, (const int64_t[]){1, 2, 2, 2}, (const int64_t[]){1, 2, 3, 3}),
			 RT_OK);
	for (int i = 0; i < 18; i++) {
		float want = i == 4 ? 1 : i == 0 ? 2 : i == 9 + 1 ? 3 : i == 9 + 3 ? 4 : 0;
		ck_assert_float_eq(u[i], want);
	}
	const int64_t bad[] = {8, 0, 0, 0};
	ck_assert_int_eq(rt_max_unpool(u, v, bad, 4, 4, (const int64_t[]){1, 2, 2, 2}, (const int64_t[]){1, 2, 3, 3}),
			 RT_ERR_INDEX);
	/* an index whose coordinates fall outside a smaller output */
	ck_assert_int_eq(rt_max_unpool(u, v, ix, 4, 4, (const int64_t[]){1, 2, 2, 2}, (const int64_t[]){1, 2, 1, 1}),
			 RT_ERR_INDEX);
}
END_TEST

/* ReverseSequence by hand: [steps 3, batch 2, inner 2] with lengths 3 and 1
 * (time_axis 0), and the same rows as [batch, steps, inner] (time_axis 1). */
START_TEST(test_reverse_sequence)
{
	const int32_t x[] = {0, 1, 10, 11, 2, 3, 12, 13, 4, 5, 14, 15};       /* x[t][b][i] */
	const int64_t lens[] = {3, 1};
	const int32_t want[] = {4, 5, 10, 11, 2, 3, 12, 13, 0, 1, 14, 15};
	int32_t y[12];
	ck_assert_int_eq(rt_reverse_sequence(y, x, sizeof *y, 3, 2, 2, 0, lens), RT_OK);
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(y[i], want[i]);
	const float xb[] = {1, 2, 3, 4, 5, 6};         /* [batch 2, steps 3] */
	const int64_t lb[] = {2, 0};
	const float wb[] = {2, 1, 3, 4, 5, 6};
	float yb[6];
	ck_assert_int_eq(rt_reverse_sequence(yb, xb, sizeof *yb, 3, 2, 1, 1, lb), RT_OK);
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq(yb[i], wb[i]);
	const int64_t bad[] = {4, 0};
	ck_assert_int_eq(rt_reverse_sequence(yb, xb, sizeof *yb, 3, 2, 1, 1, bad), RT_ERR_INDEX);
}
END_TEST

/* TfIdfVectorizer by hand, on the specification's example: [94, 17, 36, 12,
 * 28] has the 2-grams (94, 12) and (17, 28) at distance 3 (two skips), and
 * (94, 17), (17, 36), (36, 12), (12, 28) at distance 1. */
START_TEST(test_tfidf)
{
	const int64_t x[] = {94, 17, 36, 12, 28, 17};
	const int64_t pool[] = {17, 28,                 /* unigrams: n-grams 0, 1 */
				94, 12, 17, 28, 94, 17};/* bigrams: n-grams 2, 3, 4 */
	const int64_t levels[] = {0, 2}, columns[] = {4, 3, 2, 1, 0};
	const float w[] = {0.5f, 2, 3, 4, 5};
	float y[5];
	/* unigrams and bigrams, no skip: 17 twice, 28 once, (94, 17) once */
	rt_tfidf(y, x, 0, 1, 6, 5, pool, 8, levels, 2, columns, NULL, 1, 2, 0, RT_TFIDF_TF);
	const float tf0[] = {1, 0, 0, 1, 2};
	for (int i = 0; i < 5; i++)
		ck_assert_float_eq(y[i], tf0[i]);
	/* bigrams only, up to two skips: (94, 12) and (17, 28) at d 3, (94, 17) at d 1 (and d 5: four skips) */
	rt_tfidf(y, x, 0, 1, 6, 5, pool, 8, levels, 2, columns, NULL, 2, 2, 2, RT_TFIDF_TF);
	const float tf2[] = {1, 1, 1, 0, 0};
	for (int i = 0; i < 5; i++)
		ck_assert_float_eq(y[i], tf2[i]);
	rt_tfidf(y, x, 0, 1, 6, 5, pool, 8, levels, 2, columns, NULL, 2, 2, 4, RT_TFIDF_TF);
	ck_assert_float_eq(y[0], 2);
	/* IDF: presence times weight; TFIDF: count times weight (17: n-gram 0, column 4) */
	rt_tfidf(y, x, 0, 1, 6, 5, pool, 8, levels, 2, columns, w, 1, 2, 4, RT_TFIDF_IDF);
	const float idf[] = {5, 4, 3, 2, 0.5f};
	for (int i = 0; i < 5; i++)
		ck_assert_float_eq(y[i], idf[i]);
	rt_tfidf(y, x, 0, 1, 6, 5, pool, 8, levels, 2, columns, w, 1, 2, 4, RT_TFIDF_TFIDF);
	ck_assert_float_eq(y[0], 10);
	ck_assert_float_eq(y[4], 1);
	ck_assert_float_eq(y[3], 2);
	/* two int32 rows of three */
	const int32_t x32[] = {17, 28, 17, 94, 94, 12};
	float y2[10];
	rt_tfidf(y2, x32, 1, 2, 3, 5, pool, 8, levels, 2, columns, NULL, 1, 2, 1, RT_TFIDF_TF);
	const float t2[] = {0, 1, 0, 1, 2, 0, 0, 2, 0, 0};
	for (int i = 0; i < 10; i++)
		ck_assert_float_eq(y2[i], t2[i]);
}
END_TEST

/* The data-dependent kernels' length, after checking they return RT_OK. */
static int64_t nonzero_n(int64_t *y, const void *x, int dtype, int rank, const int64_t *dims)
{
	int64_t n = -1;
	ck_assert_int_eq(rt_nonzero(&n, y, x, dtype, rank, dims), RT_OK);
	return n;
}

static int64_t compress_n(void *y, const void *x, size_t esize, int64_t outer, int64_t len, int64_t inner,
			  const uint8_t *cond, int64_t ncond)
{
	int64_t n = -1;
	ck_assert_int_eq(rt_compress(&n, y, x, esize, outer, len, inner, cond, ncond), RT_OK);
	return n;
}

static int64_t unique_n(void *y, int64_t *indices, int64_t *inverse, int64_t *counts, const void *x, int dtype,
			int64_t outer, int64_t len, int64_t inner, int sorted)
{
	int64_t n = -1;
	ck_assert_int_eq(rt_unique(&n, y, indices, inverse, counts, x, dtype, outer, len, inner, sorted), RT_OK);
	return n;
}

static int64_t nms_n(int64_t *y, const float *boxes, const float *scores, int64_t batches, int64_t classes,
		     int64_t nboxes, int64_t max_per_class, float iou, int has_st, float st, int center)
{
	int64_t n = -1;
	ck_assert_int_eq(rt_nms(&n, y, boxes, scores, batches, classes, nboxes, max_per_class, iou, has_st, st, center),
			 RT_OK);
	return n;
}

/* NonZero by hand: X [2, 3] int32 and float (-0.0 is zero, NaN is not); a
 * scalar gives [0, n]. */
START_TEST(test_nonzero)
{
	const int32_t x[] = {0, 5, 0, -1, 0, 2};
	const int64_t dims[] = {2, 3};
	int64_t y[12];
	ck_assert_int_eq(nonzero_n(y, x, 6, 2, dims), 3);
	const int64_t want[] = {0, 1, 1, 1, 0, 2};   /* rows then columns */
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(y[i], want[i]);
	const float xf[] = {-0.0f, NAN, 0, 0, 0, 1};
	ck_assert_int_eq(nonzero_n(y, xf, 1, 2, dims), 2);
	const int64_t wantf[] = {0, 1, 1, 2};
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(y[i], wantf[i]);
	const uint8_t b = 1;
	ck_assert_int_eq(nonzero_n(y, &b, 9, 0, NULL), 1);
}
END_TEST

/* Compress by hand: X [2, 3] along axis 1 with a condition shorter than the
 * axis, and flattened. */
START_TEST(test_compress)
{
	const float x[] = {1, 2, 3, 4, 5, 6};
	const uint8_t c2[] = {0, 1}, c6[] = {1, 0, 0, 1, 1, 0};
	float y[6];
	ck_assert_int_eq(compress_n(y, x, sizeof *y, 2, 3, 1, c2, 2), 1);
	ck_assert_float_eq(y[0], 2);
	ck_assert_float_eq(y[1], 5);
	ck_assert_int_eq(compress_n(y, x, sizeof *y, 1, 6, 1, c6, 6), 3);
	ck_assert_float_eq(y[0], 1);
	ck_assert_float_eq(y[1], 4);
	ck_assert_float_eq(y[2], 5);
	const uint8_t c3[] = {1, 0, 1};        /* axis 0 of [3, 2] */
	ck_assert_int_eq(compress_n(y, x, sizeof *y, 1, 3, 2, c3, 3), 2);
	ck_assert_float_eq(y[2], 5);
	ck_assert_float_eq(y[3], 6);
	/* numpy.compress: a true entry beyond the axis is an error, a false one is not */
	const uint8_t c4[] = {0, 0, 0, 1}, c5[] = {1, 0, 0, 0};
	int64_t n = -1;
	ck_assert_int_eq(rt_compress(&n, y, x, sizeof *y, 1, 3, 2, c4, 4), RT_ERR_INDEX);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(compress_n(y, x, sizeof *y, 1, 3, 2, c5, 4), 1);
}
END_TEST

/* Unique: the specification's four examples. */
START_TEST(test_unique)
{
	int64_t ix[8], inv[8], cnt[8];
	const float x1[] = {2, 1, 1, 3, 4, 3};
	float y1[6];
	ck_assert_int_eq(unique_n(y1, ix, inv, cnt, x1, 1, 1, 6, 1, 0), 4);
	const float wy1[] = {2, 1, 3, 4};
	const int64_t wi1[] = {0, 1, 3, 4}, winv1[] = {0, 1, 1, 2, 3, 2}, wc1[] = {1, 2, 2, 1};
	for (int i = 0; i < 4; i++) {
		ck_assert_float_eq(y1[i], wy1[i]);
		ck_assert_int_eq(ix[i], wi1[i]);
		ck_assert_int_eq(cnt[i], wc1[i]);
	}
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(inv[i], winv1[i]);
	const int32_t x2[] = {1, 3, 2, 3};
	int32_t y2[4];
	ck_assert_int_eq(unique_n(y2, ix, inv, cnt, x2, 6, 1, 4, 1, 1), 3);
	const int64_t wi2[] = {0, 2, 1}, winv2[] = {0, 2, 1, 2}, wc2[] = {1, 1, 2};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(y2[i], i + 1);
		ck_assert_int_eq(ix[i], wi2[i]);
		ck_assert_int_eq(cnt[i], wc2[i]);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(inv[i], winv2[i]);
	const int64_t x3[] = {1, 0, 0, 1, 0, 0, 2, 3, 4};  /* axis 0 of [3, 3] */
	int64_t y3[9];
	ck_assert_int_eq(unique_n(y3, ix, inv, NULL, x3, 7, 1, 3, 3, 1), 2);
	const int64_t wy3[] = {1, 0, 0, 2, 3, 4};
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(y3[i], wy3[i]);
	ck_assert_int_eq(inv[1], 0);
	ck_assert_int_eq(inv[2], 1);
	/* axis 1 of [2, 4, 2]: outer 2, len 4, inner 2 */
	const double x4[] = {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1};
	double y4[16];
	ck_assert_int_eq(unique_n(y4, ix, inv, cnt, x4, 11, 2, 4, 2, 1), 3);
	const double wy4[] = {0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1};
	for (int i = 0; i < 12; i++)
		ck_assert_double_eq(y4[i], wy4[i]);
	const int64_t wi4[] = {1, 0, 2}, winv4[] = {1, 0, 2, 0}, wc4[] = {2, 1, 1};
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(ix[i], wi4[i]);
		ck_assert_int_eq(cnt[i], wc4[i]);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(inv[i], winv4[i]);
}
END_TEST

/* NonMaxSuppression by hand: three boxes of one class, the second overlapping
 * the first by IOU 0.81 / 1.09 = 0.74, the third apart. */
START_TEST(test_nms)
{
	const float boxes[] = {0, 0, 1, 1, 0.1f, 0, 1.1f, 0.9f, 2, 2, 3, 3};
	const float scores[] = {0.9f, 0.95f, 0.5f};
	int64_t y[9];
	/* iou 0.5: box 1 (best), box 0 suppressed by it, box 2 */
	ck_assert_int_eq(nms_n(y, boxes, scores, 1, 1, 3, 10, 0.5f, 0, 0, 0), 2);
	ck_assert_int_eq(y[2], 1);
	ck_assert_int_eq(y[5], 2);
	/* iou 0.8: all three, by descending score */
	ck_assert_int_eq(nms_n(y, boxes, scores, 1, 1, 3, 10, 0.8f, 0, 0, 0), 3);
	ck_assert_int_eq(y[2], 1);
	ck_assert_int_eq(y[5], 0);
	ck_assert_int_eq(y[8], 2);
	/* at most 2; a score threshold of 0.5 drops box 2 (not above it) */
	ck_assert_int_eq(nms_n(y, boxes, scores, 1, 1, 3, 2, 0.8f, 0, 0, 0), 2);
	ck_assert_int_eq(nms_n(y, boxes, scores, 1, 1, 3, 10, 0.8f, 1, 0.5f, 0), 2);
	ck_assert_int_eq(y[5], 0);
	ck_assert_int_eq(nms_n(y, boxes, scores, 1, 1, 3, 0, 0.8f, 0, 0, 0), 0);
	/* centre format, flipped corners: the same boxes */
	const float centre[] = {0.5f, 0.5f, 1, 1, 0.45f, 0.6f, 0.9f, 1, 2.5f, 2.5f, 1, 1};
	const float flipped[] = {1, 1, 0, 0, 1.1f, 0.9f, 0.1f, 0, 3, 3, 2, 2};
	ck_assert_int_eq(nms_n(y, flipped, scores, 1, 1, 3, 10, 0.5f, 0, 0, 0), 2);
	ck_assert_int_eq(nms_n(y, centre, scores, 1, 1, 3, 10, 0.5f, 0, 0, 1), 2);
	ck_assert_int_eq(y[2], 1);
	ck_assert_int_eq(y[5], 2);
	/* two classes: rows (batch, class, box) class by class; equal scores by index */
	const float sc2[] = {0.9f, 0.95f, 0.5f, 0.3f, 0.3f, 0.3f};
	ck_assert_int_eq(nms_n(y, boxes, sc2, 1, 2, 3, 1, 0.5f, 0, 0, 0), 2);
	ck_assert_int_eq(y[2], 1);
	ck_assert_int_eq(y[4], 1);
	ck_assert_int_eq(y[5], 0);
	/* an IOU threshold outside [0, 1] */
	int64_t n = -1;
	ck_assert_int_eq(rt_nms(&n, y, boxes, scores, 1, 1, 3, 10, 1.5f, 0, 0, 0), RT_ERR_ARG);
	ck_assert_int_eq(n, 0);
}
END_TEST

/* ---- random operators (rt_random.c) ---------------------------------------------
 * The distributions of the draws, with bounds of 5 standard deviations of
 * each statistic for the sample size (a correct generator fails one with
 * probability below 1e-6; the seeds are fixed, so each run is the same). */

enum { RN = 200000 };

/* |got - want| within 5 standard errors `se`. */
#define ck_assert_5se(got, want, se) \
	ck_assert_msg(fabs((double)(got) - (double)(want)) <= 5 * (se), "%s = %g, expected %g +- 5 * %g", #got, \
		      (double)(got), (double)(want), (double)(se))

START_TEST(test_rng_streams)
{
	/* a stream is a function of (seed, stream); different ones differ and
	 * are uncorrelated */
	rt_rng a, b, c;
	rt_rng_seed_stream(&a, 42, 0);
	rt_rng_seed_stream(&b, 42, 0);
	for (int i = 0; i < 100; i++)
		ck_assert(rt_rng_next(&a) == rt_rng_next(&b));
	const uint64_t seeds[][2] = {{42, 1}, {43, 0}, {0, 0}, {0, 1}};
	for (int k = 0; k < 4; k++) {
		rt_rng_seed_stream(&a, 42, 0);
		rt_rng_seed_stream(&c, seeds[k][0], seeds[k][1]);
		double sxy = 0, sx = 0, sy = 0;
		int same = 0;
		for (int i = 0; i < RN; i++) {
			double u = rt_rng_uniform(&a), v = rt_rng_uniform(&c);
			same += u == v;
			sx += u;
			sy += v;
			sxy += u * v;
		}
		ck_assert_int_lt(same, 3);
		/* covariance of independent U(0,1): 0, standard error 1/12/sqrt(n) */
		double cov = sxy / RN - (sx / RN) * (sy / RN);
		ck_assert_5se(cov, 0, 1.0 / 12 / sqrt(RN));
	}
}
END_TEST

START_TEST(test_random_uniform)
{
	double *y = malloc(RN * sizeof *y);
	float *f = malloc(RN * sizeof *f);
	ck_assert(y && f);
	rt_rng r;
	rt_rng_seed(&r, 11);
	ck_assert_int_eq(rt_random_uniform(y, 11, RN, -2.0, 3.0, &r), RT_OK);
	double m = 0, v = 0;
	int bins[10] = {0};
	for (int i = 0; i < RN; i++) {
		ck_assert(y[i] >= -2.0 && y[i] < 3.0);
		m += y[i] / RN;
		bins[(int)((y[i] + 2.0) / 5.0 * 10)]++;
	}
	for (int i = 0; i < RN; i++)
		v += (y[i] - m) * (y[i] - m) / RN;
	/* U(a, b): mean (a+b)/2, variance (b-a)^2/12 (its estimate's standard
	 * error sqrt((mu4 - sigma^4)/n), mu4 = (b-a)^4/80) */
	ck_assert_5se(m, 0.5, 5.0 / sqrt(12.0 * RN));
	ck_assert_5se(v, 25.0 / 12, sqrt((625.0 / 80 - 625.0 / 144) / RN));
	/* each tenth of the range: a binomial count */
	for (int k = 0; k < 10; k++)
		ck_assert_5se(bins[k], RN / 10.0, sqrt(RN * 0.1 * 0.9));
	/* the same stream in float: the same numbers rounded */
	rt_rng_seed(&r, 11);
	ck_assert_int_eq(rt_random_uniform(f, 1, RN, -2.0, 3.0, &r), RT_OK);
	for (int i = 0; i < RN; i++)
		ck_assert(f[i] == (float)y[i] && f[i] >= -2.0f && f[i] <= 3.0f);
	/* another seed, other numbers; an unsupported dtype is refused */
	rt_rng_seed(&r, 12);
	ck_assert_int_eq(rt_random_uniform(f, 1, 100, -2.0, 3.0, &r), RT_OK);
	ck_assert(f[0] != (float)y[0] || f[1] != (float)y[1]);
	ck_assert_int_eq(rt_random_uniform(f, 7, 10, 0, 1, &r), RT_ERR_ARG);
	ck_assert_int_eq(rt_random_uniform(f, 10, 10, 0, 1, &r), RT_ERR_ARG);
	free(y);
	free(f);
}
END_TEST

START_TEST(test_random_normal)
{
	double *y = malloc(RN * sizeof *y);
	ck_assert(y);
	rt_rng r;
	rt_rng_seed(&r, 21);
	ck_assert_int_eq(rt_random_normal(y, 11, RN, 1.5, 2.0, &r), RT_OK);
	double m = 0, v = 0, s3 = 0;
	int in1 = 0, in2 = 0;
	for (int i = 0; i < RN; i++)
		m += y[i] / RN;
	for (int i = 0; i < RN; i++) {
		double z = (y[i] - 1.5) / 2.0;
		v += (y[i] - m) * (y[i] - m) / RN;
		s3 += z * z * z / RN;
		in1 += fabs(z) < 1;
		in2 += fabs(z) < 2;
	}
	/* N(mu, s^2): mean (se s/sqrt(n)), variance (se s^2 sqrt(2/n)), third
	 * standardised moment 0 (se sqrt(15/n)), P(|z| < 1) = erf(1/sqrt 2),
	 * P(|z| < 2) = erf(sqrt 2) */
	ck_assert_5se(m, 1.5, 2.0 / sqrt(RN));
	ck_assert_5se(v, 4.0, 4.0 * sqrt(2.0 / RN));
	ck_assert_5se(s3, 0, sqrt(15.0 / RN));
	double p1 = erf(1 / sqrt(2.0)), p2 = erf(sqrt(2.0));
	ck_assert_5se(in1, RN * p1, sqrt(RN * p1 * (1 - p1)));
	ck_assert_5se(in2, RN * p2, sqrt(RN * p2 * (1 - p2)));
	ck_assert_int_eq(rt_random_normal(y, 9, 10, 0, 1, &r), RT_ERR_ARG);
	free(y);
}
END_TEST

START_TEST(test_bernoulli)
{
	/* probabilities 0, 0.1, 0.5, 0.9, 1, each repeated RN/5 times */
	enum { M = RN / 5 };
	const double ps[5] = {0, 0.1, 0.5, 0.9, 1};
	float *p = malloc(RN * sizeof *p), *yf = malloc(RN * sizeof *yf);
	int64_t *yi = malloc(RN * sizeof *yi);
	uint8_t *yb = malloc(RN);
	ck_assert(p && yf && yi && yb);
	for (int i = 0; i < RN; i++)
		p[i] = (float)ps[i / M];
	rt_rng r;
	rt_rng_seed(&r, 31);
	ck_assert_int_eq(rt_bernoulli(yf, 1, p, 1, RN, &r), RT_OK);
	for (int k = 0; k < 5; k++) {
		int ones = 0;
		for (int i = k * M; i < (k + 1) * M; i++) {
			ck_assert(yf[i] == 0.0f || yf[i] == 1.0f);
			ones += yf[i] == 1.0f;
		}
		if (ps[k] == 0 || ps[k] == 1)
			ck_assert_int_eq(ones, (int)(M * ps[k]));      /* certain outcomes are exact */
		else
			ck_assert_5se(ones, M * ps[k], sqrt(M * ps[k] * (1 - ps[k])));
	}
	/* int64 and bool outputs from the same stream: the same outcomes */
	rt_rng_seed(&r, 31);
	ck_assert_int_eq(rt_bernoulli(yi, 7, p, 1, RN, &r), RT_OK);
	rt_rng_seed(&r, 31);
	ck_assert_int_eq(rt_bernoulli(yb, 9, p, 1, RN, &r), RT_OK);
	for (int i = 0; i < RN; i++)
		ck_assert(yi[i] == (int64_t)yf[i] && yb[i] == (uint8_t)yf[i]);
	/* the probability's dtype must be float or double; uint32 outputs are not made */
	ck_assert_int_eq(rt_bernoulli(yf, 1, yi, 7, 10, &r), RT_ERR_ARG);
	ck_assert_int_eq(rt_bernoulli(yf, 12, p, 1, 10, &r), RT_ERR_ARG);
	free(p);
	free(yf);
	free(yi);
	free(yb);
}
END_TEST

START_TEST(test_dropout)
{
	float *x = malloc(RN * sizeof *x), *y = malloc(RN * sizeof *y);
	uint8_t *mask = malloc(RN);
	ck_assert(x && y && mask);
	for (int i = 0; i < RN; i++)
		x[i] = (float)(i % 17) - 8.25f;
	rt_rng r, r0;
	rt_rng_seed(&r, 41);
	r0 = r;
	/* ratio 0 and inference: the identity, exactly, drawing nothing */
	for (int mode = 0; mode < 2; mode++) {
		memset(mask, 7, RN);
		ck_assert_int_eq(rt_dropout(y, mask, x, 1, RN, mode ? 0.0 : 0.3, mode, &r), RT_OK);
		ck_assert(!memcmp(x, y, RN * sizeof *x));
		for (int i = 0; i < RN; i++)
			ck_assert_int_eq(mask[i], 1);
		ck_assert(!memcmp(&r, &r0, sizeof r));
	}
	/* ratio 0.3: kept elements are x / 0.7 with mask 1, dropped ones 0 with
	 * mask 0; the dropped count is binomial(n, 0.3) */
	ck_assert_int_eq(rt_dropout(y, mask, x, 1, RN, 0.3, 1, &r), RT_OK);
	int dropped = 0;
	for (int i = 0; i < RN; i++) {
		ck_assert(mask[i] == 0 || mask[i] == 1);
		if (mask[i])
			ck_assert(y[i] == (float)(x[i] * (1.0 / 0.7)));
		else
			ck_assert(y[i] == 0.0f);
		dropped += !mask[i];
	}
	ck_assert_5se(dropped, RN * 0.3, sqrt(RN * 0.3 * 0.7));
	/* in place, without a mask: the same stream position gives the same result */
	float *z = malloc(RN * sizeof *z);
	ck_assert(z);
	memcpy(z, x, RN * sizeof *x);
	r = r0;
	ck_assert_int_eq(rt_dropout(z, NULL, z, 1, RN, 0.3, 1, &r), RT_OK);
	ck_assert(!memcmp(z, y, RN * sizeof *z));
	/* only the mask: the same draws */
	uint8_t *m2 = malloc(RN);
	ck_assert(m2);
	r = r0;
	ck_assert_int_eq(rt_dropout(NULL, m2, x, 1, RN, 0.3, 1, &r), RT_OK);
	ck_assert(!memcmp(m2, mask, RN));
	free(m2);
	/* a ratio outside [0, 1) in training mode is refused, the output untouched */
	const double bad[] = {1.0, -0.1, NAN};
	for (int k = 0; k < 3; k++) {
		memset(z, 0, RN * sizeof *z);
		ck_assert_int_eq(rt_dropout(z, mask, x, 1, RN, bad[k], 1, &r), RT_ERR_ARG);
		ck_assert(z[0] == 0.0f && z[RN - 1] == 0.0f);
	}
	ck_assert_int_eq(rt_dropout(z, mask, x, 9, RN, 0.5, 1, &r), RT_ERR_ARG);
	free(x);
	free(y);
	free(z);
	free(mask);
}
END_TEST

static Suite *runtime_suite(void)
{
	Suite *s = suite_create("cellrt");
	TCase *tc = tcase_create("sgemm");
	tcase_set_timeout(tc, 120);     /* the kernel sweeps take seconds under ASan on a loaded machine */
	tcase_add_test(tc, test_sgemm_ref_by_hand);
	tcase_add_test(tc, test_topk_int_vs_sort);
	tcase_add_test(tc, test_clipf_onnx);
	tcase_add_loop_test(tc, test_sgemm_vs_ref, 0, N_GEMM_CASES * 12);
	tcase_add_test(tc, test_sgemm_gemv_strided_a);
	tcase_add_test(tc, test_dgemm_ref_by_hand);
	tcase_add_loop_test(tc, test_dgemm_vs_ref, 0, N_GEMM_CASES * 24);
	tcase_add_test(tc, test_dgemm_bias);
	tcase_add_test(tc, test_conv_f64);
	tcase_add_test(tc, test_softmax_f64);
	tcase_add_loop_test(tc, test_sgemm_bias, 0, 4);
	tcase_add_loop_test(tc, test_barrier, 0, 2);
	tcase_add_test(tc, test_split_columns);
	tcase_add_test(tc, test_team);
	tcase_add_test(tc, test_states_prepare);
	tcase_add_test(tc, test_gemv_pack_once);
	suite_add_tcase(s, tc);

	kern_tcases(s);

	tc = tcase_create("activations");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_activation_ulp);
#ifdef HAVE_ACT_FMA
	tcase_add_test(tc, test_activation_ulp_fma);
#endif
	suite_add_tcase(s, tc);

	tc = tcase_create("tensorfile");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tf_round_trip);
	tcase_add_test(tc, test_tf_write_refuses_bad_tensors);
	tcase_add_test(tc, test_tf_open_missing);
	tcase_add_test(tc, test_tf_truncated_every_length);
	tcase_add_test(tc, test_tf_corrupted);
	tcase_add_test(tc, test_tf_forged_table);
	tcase_add_test(tc, test_dtype_size);
	suite_add_tcase(s, tc);

	tc = tcase_create("inflate");
	tcase_add_test(tc, test_inflate_empty_stored);
	suite_add_tcase(s, tc);

	tc = tcase_create("status");
	tcase_add_test(tc, test_status_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("ode");
	tcase_add_test(tc, test_ode_tableaus);
	tcase_add_test(tc, test_ode_fixed_steps);
	tcase_add_test(tc, test_ode_dopri5);
	tcase_add_test(tc, test_ode_gradients);
	tcase_add_test(tc, test_ode_block);
	tcase_add_test(tc, test_ode_rnn);
	suite_add_tcase(s, tc);

	tc = tcase_create("ops");
	tcase_add_test(tc, test_transpose_all_perms);
	tcase_add_test(tc, test_slice_start_clamp);
	tcase_add_test(tc, test_slice_vs_formula);
	tcase_add_test(tc, test_copy_rows);
	tcase_add_test(tc, test_gather);
	tcase_add_test(tc, test_softmax_family);
	tcase_add_test(tc, test_conv_ref_by_hand);
	tcase_add_test(tc, test_conv_vs_ref);
	tcase_add_test(tc, test_pad_modes);
	tcase_add_test(tc, test_reduce_kinds);
	tcase_add_test(tc, test_reduce_integers);
	tcase_add_test(tc, test_argmax);
	tcase_add_test(tc, test_pool_by_hand);
	tcase_add_test(tc, test_norms);
	tcase_add_test(tc, test_pool_colmajor_by_hand);
	tcase_add_test(tc, test_det_vs_cofactors);
	tcase_add_test(tc, test_einsum_vs_loops);
	tcase_add_test(tc, test_dft_vs_definition);
	tcase_add_test(tc, test_lrn_mvn_unpool);
	tcase_add_test(tc, test_reverse_sequence);
	tcase_add_test(tc, test_tfidf);
	tcase_add_test(tc, test_nonzero);
	tcase_add_test(tc, test_compress);
	tcase_add_test(tc, test_unique);
	tcase_add_test(tc, test_nms);
	tcase_add_test(tc, test_resize_by_hand);
	tcase_add_test(tc, test_resize_vs_naive);
	tcase_add_test(tc, test_grid_sample_by_hand);
	tcase_add_test(tc, test_roi_align_by_hand);
	tcase_add_test(tc, test_conv_grads);
	tcase_add_test(tc, test_pad_grad);
	tcase_add_test(tc, test_class_loss_grad);
	tcase_add_test(tc, test_batchnorm_train);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_rng_streams);
	tcase_add_test(tc, test_random_uniform);
	tcase_add_test(tc, test_random_normal);
	tcase_add_test(tc, test_bernoulli);
	tcase_add_test(tc, test_dropout);
	suite_add_tcase(s, tc);

	tc = tcase_create("quant");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_f16_every_encoding);
	tcase_add_test(tc, test_f16_round_nearest_even);
	tcase_add_test(tc, test_bf16_truncation);
	tcase_add_test(tc, test_quantize_linear_vs_naive);
	tcase_add_test(tc, test_dynamic_quantize_vs_formula);
	tcase_add_test(tc, test_matmul_integer_vs_naive);
	tcase_add_test(tc, test_conv_integer_vs_naive);
	tcase_add_test(tc, test_maxpool_8_vs_naive);
	suite_add_tcase(s, tc);

	tc = tcase_create("init");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_init_deterministic);
	tcase_add_test(tc, test_init_orthogonal);
	tcase_add_test(tc, test_expm);
	tcase_add_test(tc, test_init_sparse_counts);
	tcase_add_test(tc, test_init_spectral_radius);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runtime_suite());
	srunner_run_all(sr, CK_ENV);    /* CK_VERBOSITY from the environment */
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
