/* test_kern.h: libcellrt's kernel tests (rt_kern.h: every instruction
 * set's kernels against the references, kern_tcases) and the helpers they
 * share with the other tests, in one source for two harnesses:
 * test_runtime.c includes it under Check, and test_kern_bare.c under
 * check_bare.h, Check's API for a board without an OS (Check has no
 * bare-metal build), so that the emulated microcontroller runs the same
 * tests.  The includer includes check.h or check_bare.h, cellrt.h and
 * rt_kern.h, float.h, math.h, stdio.h, stdlib.h and string.h first.
 */
#ifndef TEST_KERN_H
#define TEST_KERN_H

/* Deterministic pseudo-random numbers (64-bit LCG), uniform in [-1, 1). */
typedef struct rng { uint64_t s; } rng;

static float rnd(rng *r)
{
	r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(r->s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static void fill(rng *r, float *p, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = rnd(r);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	return p;
}

/* One configuration of the sgemm comparison. */
typedef struct gemm_case {
	int64_t M, N, K;
} gemm_case;

/* ---- rt_kern: every instruction set this CPU has, against the reference ---- */

static const gemm_case kern_cases[] = {
	{1, 1, 1}, {1, 8, 16}, {1, 9, 17}, {1, 1024, 256}, {1, 127, 255}, {1, 130, 3}, {1, 1024, 1},
	{2, 5, 7}, {6, 64, 128}, {7, 65, 129}, {13, 200, 300}, {128, 1024, 256}, {5, 3, 1},
	{3, 9, 70}, {4, 258, 256},      /* few rows: SIMD128 multiplies them without panels */
};
#define N_KERN_CASES ((int)(sizeof kern_cases / sizeof kern_cases[0]))
/* Under an emulator (CELLRT_TEST_EMULATED set: the cross targets' runs,
 * harness group cross_*) the products above 2^22 multiply-adds are left
 * out: 128 x 1024 x 256 took 50 of the 55 seconds qemu spent on these
 * tests, and 13 x 200 x 300 already crosses row blocks, panels and depth
 * blocks with partial ones of each.  A number above 1 is the limit
 * instead: a microcontroller's references run their double precision in
 * software (test_kern_bare.c: 2^16, which leaves out the 1024-row packed
 * GEMVs and the int8 one above RT_I8_KMAX columns, the portable loop: 14
 * of 15 seconds; 520 x 40 still crosses the row blocks). */
static int too_big_emulated(gemm_case g)
{
	const char *e = getenv("CELLRT_TEST_EMULATED");
	long long limit = e ? atoll(e) : 0;
	return e && g.M * g.N * g.K > (limit > 1 ? limit : (int64_t)1 << 22);
}

/* the instruction sets of the float32 kernels, each tested where the CPU has it */
static const int kern_isas[] = {RT_ISA_AVX2, RT_ISA_AVX512, RT_ISA_NEON, RT_ISA_MFP, RT_ISA_SIMD128};
#define N_KERN_ISAS ((int)(sizeof kern_isas / sizeof kern_isas[0]))

/* The M profile's FPU (RT_ISA_MFP) has the float32 GEMVs only: no GEMM
 * micro-kernel, no bfloat16 kernel, no quantizing of activations, no int8
 * product (the DSP extension's is rt_kern_isa_i8's, RT_ISA_DSP). */
static int gemv_only(int isa)
{
	return isa == RT_ISA_MFP;
}

/* Loop index: ((case * N_KERN_ISAS + isa) * 4 + transA * 2 + transB) * 3 +
 * coefficient set; set 2 adds a bias row instead of C (rt_sgemm_bias). */
START_TEST(test_kern_vs_ref)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {-0.75f, 1.25f}, {0.5f, 2.0f}};
	int set = _i % 3, tb = (_i / 3) % 2, ta = (_i / 6) % 2, isa = kern_isas[(_i / 12) % N_KERN_ISAS];
	gemm_case g = kern_cases[_i / (12 * N_KERN_ISAS)];
	if (!rt_kern_has(isa) || too_big_emulated(g) || (g.M > 1 && gemv_only(isa)))
		return;         /* this CPU lacks the instruction set (or its GEMM) */
	float alpha = coef[set][0], beta = coef[set][1];
	int64_t arows = ta ? g.K : g.M, acols = ta ? g.M : g.K;
	int64_t brows = tb ? g.N : g.K, bcols = tb ? g.K : g.N;
	int64_t lda = g.M == 1 && ta ? 1 : acols + 1, ldb = bcols + 3, ldc = g.N + 2;
	rng r = {(uint64_t)_i + 7};
	float *A = xmalloc(sizeof(float) * (size_t)(arows * lda));
	float *Bm = xmalloc(sizeof(float) * (size_t)(brows * ldb));
	float *C = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	float *Cref = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	float *bias = set == 2 ? xmalloc(sizeof(float) * (size_t)g.N) : NULL;
	fill(&r, A, arows * lda);
	fill(&r, Bm, brows * ldb);
	fill(&r, C, g.M * ldc);
	if (bias)
		fill(&r, bias, g.N);
	if (beta == 0.0f || bias)       /* C not read: NaN must not leak */
		for (int64_t i = 0; i < g.M * ldc; i++)
			C[i] = NAN;
	memcpy(Cref, C, sizeof(float) * (size_t)(g.M * ldc));
	int done = g.M == 1 ? rt_kern_gemv(isa, tb, g.N, g.K, alpha, A, Bm, ldb, beta, bias, C)
			    : rt_kern_gemm(isa, ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, bias, C, ldc);
	ck_assert_msg(done, "isa %d M=%ld: no kernel took the product", isa, (long)g.M);
	if (bias)
		for (int64_t i = 0; i < g.M; i++)
			memcpy(Cref + i * ldc, bias, sizeof(float) * (size_t)g.N);
	rt_sgemm_ref(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, Cref, ldc);
	for (int64_t i = 0; i < g.M; i++)
		for (int64_t j = 0; j < ldc; j++) {
			float got = C[i * ldc + j], want = Cref[i * ldc + j];
			if (j >= g.N) {
				ck_assert_msg(memcmp(&got, &want, sizeof got) == 0, "padding C[%ld,%ld] changed",
					      (long)i, (long)j);
				continue;
			}
			double tol = 4.0 * (double)(g.K + 2) * FLT_EPSILON * (double)(g.K + 1) + 1e-6;
			ck_assert_msg(isfinite(got) && fabs((double)got - want) <= tol,
				      "isa %d M=%ld N=%ld K=%ld tA=%d tB=%d set %d: C[%ld,%ld] = %.9g, ref %.9g", isa,
				      (long)g.M, (long)g.N, (long)g.K, ta, tb, set, (long)i, (long)j, got, want);
		}
	free(A);
	free(Bm);
	free(C);
	free(Cref);
	free(bias);
}
END_TEST

/* The GEMM on op(B) packed once (rt_kern_pack_panels, rt_kern_gemm_panels;
 * rt_gemm_pack and rt_sgemm_packed, what a recurrence's steps call) gives
 * the same bits as the GEMM that packs at every call: the same panels, the
 * same order of additions; C's padding untouched (or, for the rows that
 * rt_kern_gemm multiplies without panels, rt_kern_gemm_packs 0, both
 * decline).  And rt_sgemm_packed without panels (P = NULL: no kernel, or
 * one row) is rt_sgemm itself.
 * Loop index as test_kern_vs_ref's, cases with M > 1. */
START_TEST(test_kern_panels)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {-0.75f, 1.25f}, {0.5f, 2.0f}};
	int set = _i % 3, tb = (_i / 3) % 2, ta = (_i / 6) % 2, isa = kern_isas[(_i / 12) % N_KERN_ISAS];
	gemm_case g = kern_cases[_i / (12 * N_KERN_ISAS)];
	if (!rt_kern_has(isa) || g.M == 1 || too_big_emulated(g) || gemv_only(isa))
		return;         /* this CPU lacks the instruction set (or its GEMM); one row is the GEMV's */
	float alpha = coef[set][0], beta = coef[set][1];
	int64_t arows = ta ? g.K : g.M, acols = ta ? g.M : g.K;
	int64_t brows = tb ? g.N : g.K, bcols = tb ? g.K : g.N;
	int64_t lda = acols + 1, ldb = bcols + 3, ldc = g.N + 2;
	rng r = {(uint64_t)_i + 11};
	float *A = xmalloc(sizeof(float) * (size_t)(arows * lda));
	float *Bm = xmalloc(sizeof(float) * (size_t)(brows * ldb));
	float *C = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	float *Cp = xmalloc(sizeof(float) * (size_t)(g.M * ldc));
	float *bias = set == 2 ? xmalloc(sizeof(float) * (size_t)g.N) : NULL;
	float *P = aligned_alloc(64, (sizeof(float) * (size_t)rt_kern_panels_size(g.N, g.K) + 63) / 64 * 64);
	ck_assert_ptr_nonnull(P);
	fill(&r, A, arows * lda);
	fill(&r, Bm, brows * ldb);
	fill(&r, C, g.M * ldc);
	if (bias)
		fill(&r, bias, g.N);
	memcpy(Cp, C, sizeof(float) * (size_t)(g.M * ldc));
	ck_assert(rt_kern_gemm(isa, ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, bias, C, ldc));
	ck_assert(rt_kern_pack_panels(isa, tb, g.N, g.K, Bm, ldb, P));
	int packs = rt_kern_gemm_packs(isa, g.M, g.K);
	ck_assert_int_eq(rt_kern_gemm_panels(isa, ta, g.M, g.N, g.K, alpha, A, lda, P, beta, bias, Cp, ldc), packs);
	ck_assert_msg(!packs || memcmp(C, Cp, sizeof(float) * (size_t)(g.M * ldc)) == 0,
		      "isa %d M=%ld N=%ld K=%ld tA=%d tB=%d set %d: packed once differs from packed per call", isa,
		      (long)g.M, (long)g.N, (long)g.K, ta, tb, set);
	/* the public pair, as a row-parallel recurrence's steps call it (in a
	 * team): packed when the CPU's best kernel takes these rows */
	float *Q = NULL;
	size_t cap = 0;
	int st = rt_gemm_pack(g.M, tb, g.N, g.K, Bm, ldb, &Q, &cap);
	ck_assert_int_ge(st, 0);
	fill(&r, C, g.M * ldc);
	memcpy(Cp, C, sizeof(float) * (size_t)(g.M * ldc));
	rt_par_thread(1);
	rt_sgemm_packed(ta, g.M, g.N, g.K, alpha, A, lda, st ? Q : NULL, tb, Bm, ldb, beta, bias, Cp, ldc);
	if (st)
		rt_kern_gemm(rt_kern_isa(), ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, bias, C, ldc);
	else if (bias)
		rt_sgemm_bias(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, bias, C, ldc);
	else
		rt_sgemm(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, C, ldc);
	rt_par_thread(0);
	ck_assert_msg(memcmp(C, Cp, sizeof(float) * (size_t)(g.M * ldc)) == 0,
		      "rt_sgemm_packed (%s) differs from the product it stands for", st ? "panels" : "no panels");
	/* without panels it is rt_sgemm (or rt_sgemm_bias) */
	fill(&r, C, g.M * ldc);
	memcpy(Cp, C, sizeof(float) * (size_t)(g.M * ldc));
	rt_sgemm_packed(ta, g.M, g.N, g.K, alpha, A, lda, NULL, tb, Bm, ldb, beta, bias, Cp, ldc);
	if (bias)
		rt_sgemm_bias(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, bias, C, ldc);
	else
		rt_sgemm(ta, tb, g.M, g.N, g.K, alpha, A, lda, Bm, ldb, beta, C, ldc);
	ck_assert_msg(memcmp(C, Cp, sizeof(float) * (size_t)(g.M * ldc)) == 0,
		      "rt_sgemm_packed without panels differs from rt_sgemm");
	free(Q);
	free(P);
	free(A);
	free(Bm);
	free(C);
	free(Cp);
	free(bias);
}
END_TEST

/* The instruction sets this CPU runs, as whoever runs the test says it has
 * (CELLRT_TEST_ISAS: names from the list below, comma-separated; the
 * harness sets it for each CPU qemu emulates, so that a CPU with the
 * dot-product instructions runs the SDOT kernel and one without runs the
 * baseline): the kernels chosen at run time must be those.  Unset: nothing
 * to check. */
START_TEST(test_kern_isas_expected)
{
	static const struct { const char *name; int isa; } names[] = {
		{"avx2", RT_ISA_AVX2}, {"avx512", RT_ISA_AVX512}, {"vnni", RT_ISA_VNNI}, {"avx512bf16", RT_ISA_BF16},
		{"neon", RT_ISA_NEON}, {"dotprod", RT_ISA_DOTPROD}, {"bfdot", RT_ISA_BFDOT}, {"mfp", RT_ISA_MFP},
		{"dsp", RT_ISA_DSP}, {"simd128", RT_ISA_SIMD128},
	};
	const char *want = getenv("CELLRT_TEST_ISAS");
	if (!want)
		return;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char pat[32];
		snprintf(pat, sizeof pat, ",%s,", names[i].name);
		char list[256];
		snprintf(list, sizeof list, ",%s,", want);
		int listed = strstr(list, pat) != NULL;
		ck_assert_msg(rt_kern_has(names[i].isa) == listed, "CELLRT_TEST_ISAS=%s, but this CPU %s %s", want,
			      listed ? "lacks" : "has", names[i].name);
	}
}
END_TEST

/* The GEMV kernels on one input feature stored contiguously (B [N,1] with
 * row stride 1: the input projection of a one-feature sequence), against
 * the reference, every instruction set and coefficient set. */
START_TEST(test_kern_gemv_one_feature)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {-0.75f, 1.25f}, {0.5f, 2.0f}};
	int set = _i % 3, isa = kern_isas[_i / 3];
	if (!rt_kern_has(isa))
		return;
	enum { N = 37 };
	float a[1], Bm[N], c[N + 1], ref[N], bias[N];
	rng r = {(uint64_t)_i + 5};
	fill(&r, a, 1);
	fill(&r, Bm, N);
	fill(&r, c, N + 1);
	fill(&r, bias, N);
	float alpha = coef[set][0], beta = coef[set][1], end = c[N];
	const float *bp = set == 2 ? bias : NULL;
	if (beta == 0.0f || bp)
		for (int i = 0; i < N; i++)
			c[i] = NAN;
	for (int i = 0; i < N; i++)
		ref[i] = bp ? bias[i] : c[i];
	ck_assert_int_eq(rt_kern_gemv(isa, 1, N, 1, alpha, a, Bm, 1, beta, bp, c), 1);
	rt_sgemm_ref(0, 1, 1, N, 1, alpha, a, 1, Bm, 1, beta, ref, N);
	for (int i = 0; i < N; i++)
		ck_assert_msg(fabsf(c[i] - ref[i]) <= 1e-6f, "isa %d set %d: c[%d] = %.9g, ref %.9g", isa, set, i,
			      c[i], ref[i]);
	ck_assert(memcmp(&c[N], &end, sizeof end) == 0);
}
END_TEST

/* rt_gemv_pack + the packed GEMV: rows [r0, r1) of B a (B [N,K], or stored
 * [K,N] when not transB) with every instruction set this CPU has and the
 * portable loop, against the reference; blocks of 256 rows are crossed,
 * cut and left partial; C beyond r1 - r0 stays untouched. */
typedef struct pack_case {
	int64_t N, K, r0, r1;
} pack_case;
static const pack_case pack_cases[] = {
	{1024, 256, 0, 1024}, {1024, 256, 256, 384}, {1024, 256, 300, 700}, {520, 40, 250, 520},
	{300, 17, 0, 300}, {300, 17, 5, 299}, {16, 1, 0, 16}, {7, 3, 2, 5}, {33, 2, 1, 32},
};
#define N_PACK_CASES ((int)(sizeof pack_cases / sizeof pack_cases[0]))

START_TEST(test_gemv_packed)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {-0.75f, 1.25f}, {0.5f, 2.0f}};
	/* way 0: the portable loop, then each float32 kernel */
	int set = _i % 3, tb = (_i / 3) % 2, way = (_i / 6) % (N_KERN_ISAS + 1);
	int isa = way ? kern_isas[way - 1] : RT_ISA_NONE;
	pack_case g = pack_cases[_i / (6 * (N_KERN_ISAS + 1))];
	if (!rt_kern_has(isa) || too_big_emulated((gemm_case){1, g.N, g.K}))
		return;         /* this CPU lacks the instruction set */
	float alpha = coef[set][0], beta = coef[set][1];
	int64_t ldb = (tb ? g.K : g.N) + 3, n = g.r1 - g.r0;
	rng r = {(uint64_t)_i + 11};
	float *Bm = xmalloc(sizeof(float) * (size_t)((tb ? g.N : g.K) * ldb));
	float *P = xmalloc(sizeof(float) * (size_t)(g.N * g.K));
	float *a = xmalloc(sizeof(float) * (size_t)g.K);
	float *c = xmalloc(sizeof(float) * (size_t)(g.N + 4)), *ref = xmalloc(sizeof(float) * (size_t)g.N);
	float *bias = set == 2 ? xmalloc(sizeof(float) * (size_t)n) : NULL;
	fill(&r, Bm, (tb ? g.N : g.K) * ldb);
	fill(&r, a, g.K);
	fill(&r, c, g.N + 4);
	fill(&r, ref, g.N);
	if (bias)
		fill(&r, bias, n);
	if (beta == 0.0f || bias)       /* c not read: NaN must not leak */
		for (int64_t i = 0; i < n; i++)
			c[i] = NAN;
	float c_end = c[n];
	for (int64_t i = 0; i < n; i++)
		ref[g.r0 + i] = bias ? bias[i] : c[i];
	rt_gemv_pack(tb, g.N, g.K, Bm, ldb, P);
	if (isa == 0)
		rt_gemv_packed_portable(g.r0, g.r1, g.N, g.K, alpha, a, P, beta, bias, c);
	else
		ck_assert_int_eq(rt_kern_gemv_packed(isa, g.r0, g.r1, g.N, g.K, alpha, a, P, beta, bias, c), 1);
	rt_sgemm_ref(0, tb, 1, g.N, g.K, alpha, a, g.K, Bm, ldb, beta, ref, g.N);
	for (int64_t i = 0; i < n; i++) {
		float got = c[i], want = ref[g.r0 + i];
		double tol = 4.0 * (double)(g.K + 2) * FLT_EPSILON * (double)(g.K + 1) + 1e-6;
		ck_assert_msg(isfinite(got) && fabs((double)got - want) <= tol,
			      "isa %d N=%ld K=%ld rows %ld..%ld tB=%d set %d: c[%ld] = %.9g, ref %.9g", isa, (long)g.N,
			      (long)g.K, (long)g.r0, (long)g.r1, tb, set, (long)i, got, want);
	}
	ck_assert_msg(memcmp(&c[n], &c_end, sizeof c_end) == 0, "c[%ld] beyond the rows changed", (long)n);
	free(Bm);
	free(P);
	free(a);
	free(c);
	free(ref);
	free(bias);
}
END_TEST

/* rt_f32_to_bf16_nearest against the definition: of the two bfloat16 values
 * around x (x's bits cut to 16, and the next one away from zero), the
 * nearer in exact arithmetic, the one with an even last bit on a tie;
 * values from the largest bfloat16 plus half a step on go to infinity, NaN
 * stays NaN.  Random bit patterns, then the ties and edges. */
static double bf16_value(uint32_t hi16)
{
	uint32_t u = hi16 << 16;
	float f;
	memcpy(&f, &u, sizeof f);
	return (double)f;
}

static void check_bf16_round(uint32_t u)
{
	float x;
	memcpy(&x, &u, sizeof x);
	uint16_t h = rt_f32_to_bf16_nearest(x);
	if (isnan(x)) {
		ck_assert_msg(isnan(rt_bf16_to_f32(h)), "bf16 of NaN %08x is %04x", (unsigned)u, h);
		return;
	}
	uint32_t lo = u >> 16, hi = lo + 1;     /* hi: one step away from zero (may be inf) */
	/* past the largest finite value the next step is 2^128 with an
	 * unbounded exponent: what is nearer to it than to the largest rounds
	 * to infinity */
	double vh = (hi & 0x7fffu) == 0x7f80u ? copysign(ldexp(1.0, 128), (double)x) : bf16_value(hi);
	double dl = fabs((double)x - bf16_value(lo)), dh = fabs(vh - (double)x);
	uint32_t want = (u & 0xffffu) == 0 ? lo : dl < dh ? lo : dh < dl ? hi : (lo & 1u) ? hi : lo;
	if (isinf(x))
		want = lo;
	ck_assert_msg(h == want, "bf16 of %.9g (%08x) is %04x, want %04x", (double)x, (unsigned)u, h, (unsigned)want);
	ck_assert_msg(rt_f32_to_bf16_nearest(rt_bf16_to_f32(h)) == h, "bf16 %04x does not round-trip", h);
}

START_TEST(test_bf16_round)
{
	rng r = {12345};
	for (int i = 0; i < 200000; i++) {
		r.s = r.s * 6364136223846793005ull + 1442695040888963407ull;
		check_bf16_round((uint32_t)(r.s >> 32));
	}
	static const uint32_t edge[] = {0x00000000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x3f80ffffu,
					0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x7f800000u, 0xff800000u,
					0x7fc00000u, 0x7f800001u, 0x00008000u, 0x00018000u, 0x807fffffu};
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
		check_bf16_round(edge[i]);
}
END_TEST

/* The bf16 packed GEMV in both layouts, the portable loop and the kernels
 * (RT_BF16_SHIFT: rt_kern_isa's, AVX2 and AVX-512 sharing the AVX2 kernel,
 * or NEON's; RT_BF16_PAIRS: AVX512-BF16's or Arm BF16's BFDOT), against the reference GEMM on the same
 * weights rounded to bfloat16: the same arithmetic up to the order of the
 * sums (and, for PAIRS, activations kept to 16 bits as two bfloat16
 * parts).  A CPU without a kernel must say so (it returns 0). */
START_TEST(test_gemv_packed_bf16)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {-0.75f, 1.25f}, {0.5f, 2.0f}};
	int set = _i % 3, tb = (_i / 3) % 2;
	pack_case g = pack_cases[_i / 6];
	if (too_big_emulated((gemm_case){1, g.N, g.K}))
		return;
	float alpha = coef[set][0], beta = coef[set][1];
	int64_t ldb = (tb ? g.K : g.N) + 3, n = g.r1 - g.r0, nb = (tb ? g.N : g.K) * ldb;
	rng r = {(uint64_t)_i + 101};
	float *Bm = xmalloc(sizeof(float) * (size_t)nb), *Bq = xmalloc(sizeof(float) * (size_t)nb);
	uint16_t *P = xmalloc(sizeof(uint16_t) * rt_gemv_pack_bf16_size(g.N, g.K));
	float *a = xmalloc(sizeof(float) * (size_t)g.K), *c0 = xmalloc(sizeof(float) * (size_t)(g.N + 4));
	float *c = xmalloc(sizeof(float) * (size_t)(g.N + 4)), *ref = xmalloc(sizeof(float) * (size_t)g.N);
	float *bias = set == 2 ? xmalloc(sizeof(float) * (size_t)n) : NULL;
	fill(&r, Bm, nb);
	for (int64_t i = 0; i < nb; i++)
		Bq[i] = rt_bf16_to_f32(rt_f32_to_bf16_nearest(Bm[i]));
	fill(&r, a, g.K);
	fill(&r, c0, g.N + 4);
	fill(&r, ref, g.N);
	if (bias)
		fill(&r, bias, n);
	if (beta == 0.0f || bias)
		for (int64_t i = 0; i < n; i++)
			c0[i] = NAN;
	for (int64_t i = 0; i < n; i++)
		ref[g.r0 + i] = bias ? bias[i] : c0[i];
	rt_sgemm_ref(0, tb, 1, g.N, g.K, alpha, a, g.K, Bq, ldb, beta, ref, g.N);
	for (int way = 0; way < 4; way++) {     /* 0, 1: portable, kernel on SHIFT; 2, 3: on PAIRS */
		int layout = way < 2 ? RT_BF16_SHIFT : RT_BF16_PAIRS;
		int isa = layout == RT_BF16_PAIRS ? rt_kern_isa_bf16() : rt_kern_isa();
		int has = layout == RT_BF16_PAIRS ? rt_kern_bf16_layout(g.K) == RT_BF16_PAIRS
						  : isa != RT_ISA_NONE && !gemv_only(isa);
		rt_gemv_pack_bf16_layout(layout, tb, g.N, g.K, Bm, ldb, P);
		memcpy(c, c0, sizeof(float) * (size_t)(g.N + 4));
		if (way % 2 == 0)
			rt_gemv_packed_bf16_portable(g.r0, g.r1, g.N, g.K, alpha, a, P, beta, bias, c);
		else if (has)
			ck_assert_int_eq(rt_kern_gemv_packed_bf16(isa, g.r0, g.r1, g.N, g.K, alpha, a, P, beta,
								  bias, c), 1);
		else {  /* no kernel for it on this CPU: the other kernel must refuse it */
			ck_assert_int_eq(rt_kern_gemv_packed_bf16(rt_kern_isa(), g.r0, g.r1, g.N, g.K, alpha, a, P,
								  beta, bias, c), 0);
			continue;
		}
		for (int64_t i = 0; i < n; i++) {
			float got = c[i], want = ref[g.r0 + i];
			double tol = 4.0 * (double)(g.K + 2) * FLT_EPSILON * (double)(g.K + 1) + 1e-6;
			ck_assert_msg(isfinite(got) && fabs((double)got - want) <= tol,
				      "bf16 %s (layout %d) N=%ld K=%ld rows %ld..%ld tB=%d set %d: c[%ld] = %.9g, ref %.9g",
				      way % 2 ? "kernel" : "portable", layout, (long)g.N, (long)g.K, (long)g.r0, (long)g.r1, tb,
				      set, (long)i, got, want);
		}
		ck_assert_msg(memcmp(&c[n], &c0[n], sizeof *c) == 0, "c[%ld] beyond the rows changed", (long)n);
	}
	/* the entry points emitted code calls, on each layout: whole, and in two
	 * halves with the rows split in two calls on activations split once
	 * (rt_gemv_split_bf16, rt_gemv_packed_bf16x): the same bits */
	float *ck = xmalloc(sizeof(float) * (size_t)(g.N + 4));
	uint32_t *xs = xmalloc(sizeof(uint32_t) * (size_t)((g.K + 1) / 2 * 2));
	for (int layout = RT_BF16_SHIFT; layout <= RT_BF16_PAIRS; layout++) {
		rt_gemv_pack_bf16_layout(layout, tb, g.N, g.K, Bm, ldb, P);
		memcpy(c, c0, sizeof(float) * (size_t)(g.N + 4));
		rt_gemv_packed_bf16(g.r0, g.r1, g.N, g.K, alpha, a, P, beta, bias, c);
		memcpy(ck, c0, sizeof(float) * (size_t)(g.N + 4));
		memset(xs, 0xff, sizeof(uint32_t) * (size_t)((g.K + 1) / 2 * 2));
		rt_gemv_split_bf16(g.K, a, P, xs);
		int64_t mid = g.r0 + n / 2;
		rt_gemv_packed_bf16x(g.r0, mid, g.N, g.K, alpha, a, xs, P, beta, bias, ck);
		rt_gemv_packed_bf16x(mid, g.r1, g.N, g.K, alpha, a, xs, P, beta, bias ? bias + (mid - g.r0) : NULL,
				     ck + (mid - g.r0));
		ck_assert_msg(memcmp(ck, c, sizeof(float) * (size_t)(g.N + 4)) == 0,
			      "rt_gemv_split_bf16 + rt_gemv_packed_bf16x (layout %d) N=%ld K=%ld rows %ld..%ld differ",
			      layout, (long)g.N, (long)g.K, (long)g.r0, (long)g.r1);
	}
	free(ck);
	free(xs);
	free(Bm);
	free(Bq);
	free(P);
	free(a);
	free(c0);
	free(c);
	free(ref);
	free(bias);
}
END_TEST

/* The int8 arithmetic of --weights int8 from its definition (cellrt.h),
 * written out here on its own: per-row symmetric weights, 7-bit unsigned
 * activations with a zero point, integer sums in int64 (so an overflow of
 * the library's int32 would show).  Returns sa; q and zp as defined. */
static float ref_act_u7(int64_t K, const float *a, uint8_t *q, int32_t *zp)
{
	double lo = 0.0, hi = 0.0;
	for (int64_t k = 0; k < K; k++) {
		lo = a[k] < lo ? a[k] : lo;
		hi = a[k] > hi ? a[k] : hi;
	}
	float s = (float)(hi - lo) / 127.0f;
	s = s > 0.0f ? s : 1.0f;
	float inv = 1.0f / s, z = nearbyintf((float)-lo * inv);
	*zp = z < 0.0f ? 0 : z > 127.0f ? 127 : (int32_t)z;
	for (int64_t k = 0; k < K; k++) {
		float v = nearbyintf(a[k] * inv) + (float)*zp;
		q[k] = v < 0.0f ? 0 : v > 127.0f ? 127 : (uint8_t)v;
	}
	return s;
}

static int8_t ref_q8(float w, float s)
{
	float v = nearbyintf(w / s);
	return v < -127.0f ? -127 : v > 127.0f ? 127 : (int8_t)v;
}

START_TEST(test_quant_act_u7)
{
	static const int64_t Ks[] = {1, 5, 40, 256, 1000};
	rng r = {77};
	for (size_t t = 0; t < sizeof Ks / sizeof Ks[0]; t++)
		for (int shift = 0; shift < 3; shift++) {   /* mixed signs, all positive, all negative */
			int64_t K = Ks[t];
			float *a = xmalloc(sizeof(float) * (size_t)K);
			uint8_t *q = xmalloc((size_t)K), *qr = xmalloc((size_t)K);
			fill(&r, a, K);
			for (int64_t k = 0; k < K; k++)
				a[k] = shift == 0 ? a[k] : shift == 1 ? fabsf(a[k]) + 0.5f : -fabsf(a[k]) * 3.0f;
			int32_t zp, zr;
			float s = rt_quant_act_u7(K, a, q, &zp), sr = ref_act_u7(K, a, qr, &zr);
			ck_assert_msg(s == sr && zp == zr, "K=%ld shift %d: scale %.9g zp %d, want %.9g %d", (long)K,
				      shift, (double)s, (int)zp, (double)sr, (int)zr);
			ck_assert_int_eq(zp, shift == 1 ? 0 : shift == 2 ? 127 : zp);
			for (int64_t k = 0; k < K; k++) {
				ck_assert_msg(q[k] == qr[k] && q[k] <= 127, "K=%ld: q[%ld] = %d, want %d", (long)K,
					      (long)k, q[k], qr[k]);
				/* the quantization error is at most half a step */
				ck_assert(fabs(((double)q[k] - zp) * s - a[k]) <= 0.5 * s * (1.0 + 1e-5));
			}
			/* the kernel: the same bytes, scale and zero point */
			int isa = rt_kern_isa(), has = isa != RT_ISA_NONE && !gemv_only(isa);
			float sk = 0.0f;
			int32_t zk = -1;
			memset(q, 0xff, (size_t)K);
			ck_assert_int_eq(rt_kern_quant_act_u7(isa, K, a, q, &zk, &sk), has);
			if (has)
				ck_assert_msg(sk == sr && zk == zr && memcmp(q, qr, (size_t)K) == 0,
					      "K=%ld shift %d: the kernel's activations differ", (long)K, shift);
			a[K / 2] = NAN;
			ck_assert(isnan(rt_quant_act_u7(K, a, q, &zp)));
			ck_assert_int_eq(rt_kern_quant_act_u7(isa, K, a, q, &zk, &sk), 0);
			a[K / 2] = -INFINITY;
			ck_assert(isnan(rt_quant_act_u7(K, a, q, &zp)));
			ck_assert_int_eq(rt_kern_quant_act_u7(isa, K, a, q, &zk, &sk), 0);
			free(a);
			free(q);
			free(qr);
		}
}
END_TEST

/* The int8 packed GEMV, portable loop and kernel, against the reference
 * above: the same integers, summed exactly, so the two agree to the bit and
 * differ from the reference only by the rounding of the float epilogue.
 * Case N_PACK_CASES: K above RT_I8_KMAX (weights-only, float sums). */
START_TEST(test_gemv_packed_i8)
{
	static const float coef[3][2] = {{1.0f, 0.0f}, {-0.75f, 1.25f}, {0.5f, 2.0f}};
	int set = _i % 3, tb = (_i / 3) % 2;
	pack_case g = _i / 6 < N_PACK_CASES ? pack_cases[_i / 6] : (pack_case){9, RT_I8_KMAX + 5, 2, 9};
	if (too_big_emulated((gemm_case){1, g.N, g.K}))
		return;
	int wide = g.K > RT_I8_KMAX;
	float alpha = coef[set][0], beta = coef[set][1];
	int64_t ldb = (tb ? g.K : g.N) + 3, n = g.r1 - g.r0, nb = (tb ? g.N : g.K) * ldb;
	rng r = {(uint64_t)_i + 202};
	float *Bm = xmalloc(sizeof(float) * (size_t)nb);
	int8_t *P = aligned_alloc(64, (rt_gemv_pack_i8_size(g.N, g.K) + 63) / 64 * 64);
	float *a = xmalloc(sizeof(float) * (size_t)g.K), *c0 = xmalloc(sizeof(float) * (size_t)(g.N + 4));
	float *c = xmalloc(sizeof(float) * (size_t)(g.N + 4)), *ck = xmalloc(sizeof(float) * (size_t)(g.N + 4));
	float *bias = set == 2 ? xmalloc(sizeof(float) * (size_t)n) : NULL;
	uint8_t *qa = xmalloc((size_t)(g.K + 4));
	ck_assert_ptr_nonnull(P);
	fill(&r, Bm, nb);
	if (_i % 4 == 1)
		for (int64_t k = 0; k < (tb ? g.K : 1); k++)    /* a row of zeros (scale 1) */
			Bm[(tb ? 0 : k * ldb)] = 0.0f, Bm[tb ? k : 0] = 0.0f;
	fill(&r, a, g.K);
	fill(&r, c0, g.N + 4);
	if (bias)
		fill(&r, bias, n);
	if (beta == 0.0f || bias)
		for (int64_t i = 0; i < n; i++)
			c0[i] = NAN;
	int32_t zp = 0;
	float sa = wide ? 1.0f : ref_act_u7(g.K, a, qa, &zp);
	rt_gemv_pack_i8(tb, g.N, g.K, Bm, ldb, P);
	memcpy(c, c0, sizeof(float) * (size_t)(g.N + 4));
	rt_gemv_packed_i8_portable(g.r0, g.r1, g.N, g.K, alpha, a, P, beta, bias, c);
	for (int64_t i = 0; i < n; i++) {
		int64_t row = g.r0 + i;
		double m = 0.0;
		for (int64_t k = 0; k < g.K; k++)
			m = fmax(m, fabs((double)Bm[tb ? row * ldb + k : k * ldb + row]));
		float s = m > 0.0 ? (float)m / 127.0f : 1.0f;
		int64_t acc = 0;
		double fs = 0.0;
		for (int64_t k = 0; k < g.K; k++) {
			int8_t q = ref_q8(Bm[tb ? row * ldb + k : k * ldb + row], s);
			acc += ((int64_t)qa[k] - zp) * q;
			fs += (double)a[k] * q;
		}
		double v = wide ? (double)s * fs : (double)sa * s * (double)acc;
		double want = alpha * v + (bias ? beta * bias[i] : beta != 0.0f ? beta * c0[i] : 0.0);
		double tol = 1e-5 * (fabs(want) + 1.0) + (wide ? 1e-6 * (double)g.K : 0.0);
		ck_assert_msg(isfinite(c[i]) && fabs((double)c[i] - want) <= tol,
			      "i8 portable N=%ld K=%ld rows %ld..%ld tB=%d set %d: c[%ld] = %.9g, want %.9g", (long)g.N,
			      (long)g.K, (long)g.r0, (long)g.r1, tb, set, (long)i, (double)c[i], want);
	}
	ck_assert_msg(memcmp(&c[n], &c0[n], sizeof *c) == 0, "c[%ld] beyond the rows changed", (long)n);
	/* the kernels on the same quantized activations, bit for bit: AVX2's
	 * (also AVX-512's without VNNI) or NEON's and, where the CPU has it,
	 * VNNI's or SDOT's; on the M profile the DSP extension's */
	for (int k = g.K; k % 4; k++)
		qa[k] = 0;
	int isas[2] = {rt_kern_isa(), rt_kern_isa_i8()};
	for (int w = 0; w < 2; w++) {
		int isa = isas[w], has = isa != RT_ISA_NONE && !gemv_only(isa) && !wide;
		memcpy(ck, c0, sizeof(float) * (size_t)(g.N + 4));
		ck_assert_int_eq(rt_kern_gemv_packed_i8(isa, g.r0, g.r1, g.N, g.K, alpha, qa, sa, zp, P, beta, bias,
							ck), has);
		if (has)
			ck_assert_msg(memcmp(ck, c, sizeof(float) * (size_t)(g.N + 4)) == 0,
				      "i8 kernel (isa %d) N=%ld K=%ld rows %ld..%ld tB=%d set %d differs from the "
				      "portable loop", isa, (long)g.N, (long)g.K, (long)g.r0, (long)g.r1, tb, set);
	}
	/* and the entry points emitted code calls: whole, and in two halves
	 * with the rows split in two calls on activations quantized once */
	memcpy(ck, c0, sizeof(float) * (size_t)(g.N + 4));
	rt_gemv_packed_i8(g.r0, g.r1, g.N, g.K, alpha, a, P, beta, bias, ck);
	ck_assert(memcmp(ck, c, sizeof(float) * (size_t)(g.N + 4)) == 0);
	if (!wide) {
		memcpy(ck, c0, sizeof(float) * (size_t)(g.N + 4));
		memset(qa, 0xff, (size_t)((g.K + 3) / 4 * 4));
		int32_t zq = -1;
		float sq = rt_gemv_quant_i8(g.K, a, qa, &zq);
		int64_t mid = g.r0 + n / 2;
		rt_gemv_packed_i8q(g.r0, mid, g.N, g.K, alpha, qa, sq, zq, P, beta, bias, ck);
		rt_gemv_packed_i8q(mid, g.r1, g.N, g.K, alpha, qa, sq, zq, P, beta, bias ? bias + (mid - g.r0) : NULL,
				   ck + (mid - g.r0));
		ck_assert_msg(memcmp(ck, c, sizeof(float) * (size_t)(g.N + 4)) == 0,
			      "rt_gemv_quant_i8 + rt_gemv_packed_i8q N=%ld K=%ld rows %ld..%ld differ",
			      (long)g.N, (long)g.K, (long)g.r0, (long)g.r1);
		/* rt_gemm_packed_i8 on three rows, each as the GEMV makes it
		 * alone: rows 0 and 2 the activations above, row 1 others (of
		 * another range: its own scale and zero point) */
		int64_t ld = g.N + 4;
		float *A3 = xmalloc(sizeof(float) * (size_t)(3 * g.K)), *C3 = xmalloc(sizeof(float) * (size_t)(3 * ld));
		for (int64_t k = 0; k < g.K; k++)
			A3[k] = A3[2 * g.K + k] = a[k], A3[g.K + k] = 3.0f * a[g.K - 1 - k] + 0.25f;
		for (int i = 0; i < 3; i++)
			memcpy(C3 + i * ld, c0, sizeof(float) * (size_t)ld);
		rt_gemm_packed_i8(3, g.r0, g.r1, g.N, g.K, alpha, A3, g.K, P, beta, bias, C3, ld);
		memcpy(ck, c0, sizeof(float) * (size_t)ld);
		rt_gemv_packed_i8(g.r0, g.r1, g.N, g.K, alpha, A3 + g.K, P, beta, bias, ck);
		ck_assert_msg(memcmp(C3, c, sizeof(float) * (size_t)ld) == 0 &&
			      memcmp(C3 + ld, ck, sizeof(float) * (size_t)ld) == 0 &&
			      memcmp(C3 + 2 * ld, c, sizeof(float) * (size_t)ld) == 0,
			      "rt_gemm_packed_i8 N=%ld K=%ld rows %ld..%ld: a row differs from the GEMV's", (long)g.N,
			      (long)g.K, (long)g.r0, (long)g.r1);
		free(A3);
		free(C3);
	}
	free(Bm);
	free(P);
	free(a);
	free(c0);
	free(c);
	free(ck);
	free(bias);
	free(qa);
}
END_TEST

/* libcellrt's own SIMD kernels (rt_kern.h) against the references, on
 * every instruction set this CPU has: kern the float32 ones, kern_q the
 * bfloat16 and int8 ones and which of them this CPU runs, which a cross
 * target's emulator runs on each CPU it emulates (CK_RUN_CASE) */
static void kern_tcases(Suite *s)
{
	TCase *tc = tcase_create("kern");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_kern_vs_ref, 0, N_KERN_CASES * 12 * N_KERN_ISAS);
	tcase_add_loop_test(tc, test_kern_panels, 0, N_KERN_CASES * 12 * N_KERN_ISAS);
	tcase_add_loop_test(tc, test_gemv_packed, 0, N_PACK_CASES * 6 * (N_KERN_ISAS + 1));
	tcase_add_loop_test(tc, test_kern_gemv_one_feature, 0, 3 * N_KERN_ISAS);
	suite_add_tcase(s, tc);
	tc = tcase_create("kern_q");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kern_isas_expected);
	tcase_add_test(tc, test_bf16_round);
	tcase_add_loop_test(tc, test_gemv_packed_bf16, 0, N_PACK_CASES * 6);
	tcase_add_test(tc, test_quant_act_u7);
	tcase_add_loop_test(tc, test_gemv_packed_i8, 0, (N_PACK_CASES + 1) * 6);
	suite_add_tcase(s, tc);
}

#endif
