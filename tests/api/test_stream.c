/* test_stream.c: Check tests of the C API that cellc emits (docs/deploying.md,
 * "The generated code"), on a model compiled with `cellc compile --name m`: a
 * single forward LSTM, GRU or RNN whose only input is X [T, N, I] with
 * symbolic T and N (tests/gen_api_cases.py).
 *
 * Expected values are ref_rnn.py's (raw float32 files beside the model), so
 * besides whole-sequence runs this checks what `cellc verify` cannot:
 * streaming (m_step continues from the carried state and matches the
 * reference step by step), m_reset, m_run resetting first, a second batch
 * size on the same instance, the generic interface (io_*, bind_dims,
 * run_generic), status strings, and that m_create refuses missing,
 * truncated, corrupted and foreign weights files with the documented status,
 * as m_create_mem does the same bytes in memory (which it copies: the
 * caller's, at any alignment, may go once it returns).
 *
 * Environment: CELLC_API_CASE (fixture directory), CELLC_API_WEIGHTS
 * (m.weights), CELLC_API_OTHER_WEIGHTS (weights of a different model),
 * CELLC_API_TMP (scratch directory).
 * Legend: T steps, N batch, I input size, H hidden size, D directions (1).
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cellrt.h"
#include "m.h"

/* ---- fixtures ------------------------------------------------------------- */

typedef struct ref {
	int64_t T, N, I, H, D, nout;
	float *x;               /* [T, N, I] */
	float *y;               /* [T, D, N, H] */
	float *y_h, *y_c;       /* [D, N, H]; y_c NULL unless LSTM */
} ref;

static const char *env(const char *name)
{
	const char *v = getenv(name);
	ck_assert_msg(v && *v, "%s is not set", name);
	return v;
}

static float *read_floats(const char *dir, const char *prefix, const char *name, int64_t n)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s%s.bin", dir, prefix, name);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	float *p = malloc(sizeof(float) * (size_t)n);
	ck_assert_ptr_nonnull(p);
	ck_assert_msg(fread(p, sizeof(float), (size_t)n, f) == (size_t)n, "%s is short", path);
	fclose(f);
	return p;
}

static ref load_ref(const char *prefix)
{
	const char *dir = env("CELLC_API_CASE");
	char path[1024];
	snprintf(path, sizeof path, "%s/%sdims.txt", dir, prefix);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	ref r;
	memset(&r, 0, sizeof r);
	long v[6];
	ck_assert_int_eq(fscanf(f, "%ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]), 6);
	fclose(f);
	r.T = v[0], r.N = v[1], r.I = v[2], r.H = v[3], r.D = v[4], r.nout = v[5];
	ck_assert_int_eq(r.nout, m_NUM_OUTPUTS);
	r.x = read_floats(dir, prefix, "x", r.T * r.N * r.I);
	r.y = read_floats(dir, prefix, "y", r.T * r.D * r.N * r.H);
	r.y_h = read_floats(dir, prefix, "y_h", r.D * r.N * r.H);
	if (r.nout == 3)
		r.y_c = read_floats(dir, prefix, "y_c", r.D * r.N * r.H);
	return r;
}

static void free_ref(ref *r)
{
	free(r->x);
	free(r->y);
	free(r->y_h);
	free(r->y_c);
}

static void expect_close(const float *got, const float *want, int64_t n, const char *what)
{
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-5f + 1e-4f * fabsf(want[i]),
			      "%s[%ld] = %.8g, reference %.8g", what, (long)i, got[i], want[i]);
}

static m *open_model(void)
{
	m *mod = NULL;
	int st = m_create(&mod, env("CELLC_API_WEIGHTS"));
	ck_assert_msg(st == RT_OK, "m_create: %s", m_status_str(st));
	ck_assert_ptr_nonnull(mod);
	return mod;
}

/* Outputs of one call; y has room for T steps. */
typedef struct outs {
	float *y, *y_h, *y_c;
} outs;

static outs alloc_outs(const ref *r, int64_t T)
{
	outs o;
	o.y = calloc((size_t)(T * r->D * r->N * r->H), sizeof(float));
	o.y_h = calloc((size_t)(r->D * r->N * r->H), sizeof(float));
	o.y_c = calloc((size_t)(r->D * r->N * r->H), sizeof(float));
	ck_assert(o.y && o.y_h && o.y_c);
	return o;
}

static void free_outs(outs *o)
{
	free(o->y);
	free(o->y_h);
	free(o->y_c);
}

/* m_run / m_step with the output list of this model (2 or 3 outputs). */
static int run(m *mod, const m_dims *d, const float *x, outs *o)
{
#if m_NUM_OUTPUTS == 3
	return m_run(mod, d, x, o->y, o->y_h, o->y_c);
#else
	return m_run(mod, d, x, o->y, o->y_h);
#endif
}

static int step(m *mod, const m_dims *d, const float *x, outs *o)
{
#if m_NUM_OUTPUTS == 3
	return m_step(mod, d, x, o->y, o->y_h, o->y_c);
#else
	return m_step(mod, d, x, o->y, o->y_h);
#endif
}

static void expect_final(const ref *r, const outs *o)
{
	expect_close(o->y_h, r->y_h, r->D * r->N * r->H, "Y_h");
	if (r->y_c)
		expect_close(o->y_c, r->y_c, r->D * r->N * r->H, "Y_c");
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(test_run_matches_reference)
{
	ref r = load_ref("");
	m *mod = open_model();
	outs o = alloc_outs(&r, r.T);
	m_dims d = {.T = r.T, .N = r.N};
	ck_assert_int_eq(run(mod, &d, r.x, &o), RT_OK);
	expect_close(o.y, r.y, r.T * r.D * r.N * r.H, "Y");
	expect_final(&r, &o);
	/* the same instance at another batch size and length */
	ref r2 = load_ref("b2_");
	outs o2 = alloc_outs(&r2, r2.T);
	m_dims d2 = {.T = r2.T, .N = r2.N};
	ck_assert_int_eq(run(mod, &d2, r2.x, &o2), RT_OK);
	expect_close(o2.y, r2.y, r2.T * r2.D * r2.N * r2.H, "Y (second batch size)");
	expect_final(&r2, &o2);
	/* and back: run resets, so the first result comes out again */
	ck_assert_int_eq(run(mod, &d, r.x, &o), RT_OK);
	expect_close(o.y, r.y, r.T * r.D * r.N * r.H, "Y (again)");
	free_outs(&o);
	free_outs(&o2);
	free_ref(&r);
	free_ref(&r2);
	m_destroy(mod);
}
END_TEST

START_TEST(test_step_matches_reference)
{
	ref r = load_ref("");
	m *mod = open_model();
	outs o = alloc_outs(&r, 1);
	m_dims d = {.T = 1, .N = r.N};
	int64_t xs = r.N * r.I, ys = r.D * r.N * r.H;
	ck_assert_int_eq(m_reset(mod), RT_OK);
	for (int64_t t = 0; t < r.T; t++) {
		ck_assert_int_eq(step(mod, &d, r.x + t * xs, &o), RT_OK);
		expect_close(o.y, r.y + t * ys, ys, "Y_t (step)");
		expect_close(o.y_h, r.y + t * ys, ys, "Y_h after a step");
	}
	expect_final(&r, &o);
	/* reset: the next step starts from the initial state again */
	ck_assert_int_eq(m_reset(mod), RT_OK);
	ck_assert_int_eq(step(mod, &d, r.x, &o), RT_OK);
	expect_close(o.y, r.y, ys, "Y_0 after reset");
	free_outs(&o);
	free_ref(&r);
	m_destroy(mod);
}
END_TEST

/* A run over the first steps, then steps for the rest: the state the run
 * leaves is where streaming continues. */
START_TEST(test_run_then_step_continues)
{
	ref r = load_ref("");
	m *mod = open_model();
	int64_t first = r.T / 2, xs = r.N * r.I, ys = r.D * r.N * r.H;
	outs o = alloc_outs(&r, r.T);
	m_dims d = {.T = first, .N = r.N};
	ck_assert_int_eq(run(mod, &d, r.x, &o), RT_OK);
	expect_close(o.y, r.y, first * ys, "Y (first part)");
	expect_close(o.y_h, r.y + (first - 1) * ys, ys, "Y_h after the first part");
	m_dims d1 = {.T = 1, .N = r.N};
	for (int64_t t = first; t < r.T; t++) {
		ck_assert_int_eq(step(mod, &d1, r.x + t * xs, &o), RT_OK);
		expect_close(o.y, r.y + t * ys, ys, "Y_t (continued)");
	}
	expect_final(&r, &o);
	free_outs(&o);
	free_ref(&r);
	m_destroy(mod);
}
END_TEST

START_TEST(test_generic_interface)
{
	ref r = load_ref("");
	ck_assert_int_eq(m_NUM_INPUTS, 1);
	ck_assert_str_eq(m_io_name(0, 0), "X");
	ck_assert_int_eq(m_io_dtype(0, 0), 1);
	ck_assert_int_eq(m_io_rank(0, 0), 3);
	ck_assert_str_eq(m_io_name(1, 0), "Y");
	ck_assert_str_eq(m_io_name(1, 1), "Y_h");
	ck_assert_int_eq(m_io_rank(1, 0), 4);
	ck_assert_ptr_null(m_io_name(0, 1));
	ck_assert_ptr_null(m_io_name(1, m_NUM_OUTPUTS));
	ck_assert_int_eq(m_io_rank(0, 5), -1);

	int64_t xdims[3] = {r.T, r.N, r.I};
	const int64_t *in_dims[1] = {xdims};
	m_dims d;
	memset(&d, 0, sizeof d);
	ck_assert_int_eq(m_bind_dims(in_dims, &d), RT_OK);
	ck_assert_int_eq(d.T, r.T);
	ck_assert_int_eq(d.N, r.N);
	int64_t bad[3] = {r.T, r.N, r.I + 1};                   /* I is fixed by W */
	const int64_t *bad_dims[1] = {bad};
	ck_assert_int_eq(m_bind_dims(bad_dims, &d), RT_ERR_SHAPE);
	int64_t zero[3] = {r.T, 0, r.I};                        /* dims are at least 1 */
	const int64_t *zero_dims[1] = {zero};
	ck_assert_int_eq(m_bind_dims(zero_dims, &d), RT_ERR_SHAPE);

	ck_assert_int_eq(m_bind_dims(in_dims, &d), RT_OK);
	int64_t ydims[8];
	ck_assert_int_eq(m_io_shape(&d, 1, 0, ydims), RT_OK);
	ck_assert_int_eq(ydims[0], r.T);
	ck_assert_int_eq(ydims[1], r.D);
	ck_assert_int_eq(ydims[2], r.N);
	ck_assert_int_eq(ydims[3], r.H);

	m *mod = open_model();
	outs o = alloc_outs(&r, r.T);
	const void *in[1] = {r.x};
	void *out[3] = {o.y, o.y_h, o.y_c};
	ck_assert_int_eq(m_run_generic(mod, &d, in, out), RT_OK);
	expect_close(o.y, r.y, r.T * r.D * r.N * r.H, "Y (run_generic)");
	expect_final(&r, &o);
	free_outs(&o);
	free_ref(&r);
	m_destroy(mod);
}
END_TEST

START_TEST(test_status_strings)
{
	for (int k = 0; k < RT_STATUS_COUNT; k++) {
		ck_assert_ptr_nonnull(m_status_str(k));
		ck_assert_str_eq(m_status_str(k), rt_status_str(k));
	}
	ck_assert_ptr_nonnull(m_status_str(-3));
	ck_assert_ptr_nonnull(m_status_str(RT_STATUS_COUNT + 7));
}
END_TEST

/* The bytes of the weights file at path, at buf + 1 (misaligned on purpose). */
static unsigned char *file_bytes(const char *path, long *n, unsigned char **buf)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	*n = ftell(f);
	rewind(f);
	*buf = malloc((size_t)*n + 1);
	ck_assert_ptr_nonnull(*buf);
	ck_assert_int_eq((long)fread(*buf + 1, 1, (size_t)*n, f), *n);
	fclose(f);
	return *buf + 1;
}

/* Copies the weights file with `keep` bytes, flipping byte `flip` (or none). */
static void damaged_copy(const char *dst, long keep, long flip)
{
	long n;
	unsigned char *buf, *w = file_bytes(env("CELLC_API_WEIGHTS"), &n, &buf);
	if (keep < 0 || keep > n)
		keep = n;
	if (flip >= 0 && flip < keep)
		w[flip] ^= 0x40;
	FILE *g = fopen(dst, "wb");
	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq((long)fwrite(w, 1, (size_t)keep, g), keep);
	fclose(g);
	free(buf);
}

START_TEST(test_create_refuses_bad_weights)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/weights_%ld.bin", env("CELLC_API_TMP"), (long)getpid());
	static int sentinel;    /* m_create must set *mp to NULL on failure */
	m *mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create(&mod, "/nonexistent-dir/m.weights"), RT_ERR_IO);
	ck_assert_ptr_null(mod);

	damaged_copy(path, 100, -1);
	mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create(&mod, path), RT_ERR_TRUNCATED);
	ck_assert_ptr_null(mod);

	damaged_copy(path, -1, 200);    /* inside the table or data: checksum */
	mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create(&mod, path), RT_ERR_CHECKSUM);
	ck_assert_ptr_null(mod);

	mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create(&mod, env("CELLC_API_OTHER_WEIGHTS")), RT_ERR_MISMATCH);
	ck_assert_ptr_null(mod);

	damaged_copy(path, -1, -1);     /* an intact copy loads */
	ck_assert_int_eq(m_create(&mod, path), RT_OK);
	m_destroy(mod);
	m_destroy(NULL);
	unlink(path);
}
END_TEST

START_TEST(test_create_mem)
{
	static int sentinel;    /* m_create_mem must set *mp to NULL on failure */
	long n, no;
	unsigned char *buf, *bo, *w = file_bytes(env("CELLC_API_WEIGHTS"), &n, &buf);
	m *mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create_mem(&mod, NULL, (size_t)n), RT_ERR_ARG);
	ck_assert_ptr_null(mod);
	mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create_mem(&mod, w, (size_t)n - 100), RT_ERR_TRUNCATED);
	ck_assert_ptr_null(mod);
	w[n - 1] ^= 0x40;
	mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create_mem(&mod, w, (size_t)n), RT_ERR_CHECKSUM);
	ck_assert_ptr_null(mod);
	w[n - 1] ^= 0x40;
	unsigned char *other = file_bytes(env("CELLC_API_OTHER_WEIGHTS"), &no, &bo);
	mod = (m *)(void *)&sentinel;
	ck_assert_int_eq(m_create_mem(&mod, other, (size_t)no), RT_ERR_MISMATCH);
	ck_assert_ptr_null(mod);
	free(bo);

	/* the intact bytes: then the caller's copy goes, and the model runs as m_create's */
	ck_assert_int_eq(m_create_mem(&mod, w, (size_t)n), RT_OK);
	memset(buf, 0xff, (size_t)n + 1);
	free(buf);
	ref r = load_ref("");
	outs o = alloc_outs(&r, r.T);
	m_dims d = {.T = r.T, .N = r.N};
	ck_assert_int_eq(run(mod, &d, r.x, &o), RT_OK);
	expect_close(o.y, r.y, r.T * r.D * r.N * r.H, "Y");
	expect_final(&r, &o);
	free_outs(&o);
	free_ref(&r);
	m_destroy(mod);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("m");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_run_matches_reference);
	tcase_add_test(tc, test_step_matches_reference);
	tcase_add_test(tc, test_run_then_step_continues);
	tcase_add_test(tc, test_generic_interface);
	tcase_add_test(tc, test_status_strings);
	tcase_add_test(tc, test_create_refuses_bad_weights);
	tcase_add_test(tc, test_create_mem);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
