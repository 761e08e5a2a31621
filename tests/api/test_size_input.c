/* test_size_input.c: Check tests of the C API for a dim that is the value of
 * an input (docs/deploying.md), on tests/gen_size_inputs.py's
 * greedy_feedback compiled with `cellc compile --name m`: x [B, 4] and the
 * count n (int64, one element), y [n, B, 4] made by a loop that runs n
 * steps.
 *
 * Expected values are PyTorch's (data set 0 of the case, B = 2 and n = 5,
 * as raw files beside it: api_x.bin, api_y.bin, written by the generator).
 * What `cellc verify` cannot check: that the run refuses a count input that
 * disagrees with the dim the caller sized the buffers for, or one below 1;
 * that m_bind_dims cannot know the dim and m_bind_values reads it from the
 * data; that io_shape sizes y by the dim; and that the model has no step
 * function (the input says how many steps a run takes).
 *
 * Environment: CELLC_API_CASE (the case's directory), CELLC_API_WEIGHTS
 * (m.weights).
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cellrt.h"
#include "m.h"

enum { B = 2, N = 5, X = 4 };

static const char *env(const char *name)
{
	const char *v = getenv(name);
	ck_assert_msg(v && *v, "%s is not set", name);
	return v;
}

static void read_floats(const char *file, float *to, size_t n)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", env("CELLC_API_CASE"), file);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	size_t got = fread(to, sizeof *to, n, f);
	char extra;
	int more = fread(&extra, 1, 1, f) == 1;
	fclose(f);
	ck_assert_msg(got == n && !more, "%s: expected %zu floats", path, n);
}

static m *model(void)
{
	m *md = NULL;
	int st = m_create(&md, env("CELLC_API_WEIGHTS"));
	ck_assert_msg(st == RT_OK, "m_create: %s", m_status_str(st));
	return md;
}

START_TEST(bind_values_reads_the_count)
{
	const int64_t xd[2] = {B, X}, nd[1] = {0};
	const int64_t *dims[2] = {xd, nd};
	float x[B * X] = {0};
	int64_t n = N;
	const void *in[2] = {x, &n};
	m_dims d;
	ck_assert_int_eq(m_bind_dims(dims, &d), RT_ERR_SHAPE);   /* shapes do not say n */
	ck_assert_int_eq(m_bind_values(dims, in, &d), RT_OK);
	ck_assert_int_eq(d.B, B);
	ck_assert_int_eq(d.n, N);
	int64_t yd[3];
	ck_assert_int_eq(m_io_shape(&d, 1, 0, yd), RT_OK);
	ck_assert(yd[0] == N && yd[1] == B && yd[2] == X);
	n = 0;
	ck_assert_int_eq(m_bind_values(dims, in, &d), RT_ERR_SHAPE);
	const void *none[2] = {x, NULL};
	ck_assert_int_eq(m_bind_values(dims, none, &d), RT_ERR_ARG);
	ck_assert_int_eq(m_HAS_STEP, 0);
}
END_TEST

START_TEST(run_matches_pytorch)
{
	float x[B * X], want[N * B * X], y[N * B * X];
	read_floats("api_x.bin", x, B * X);
	read_floats("api_y.bin", want, N * B * X);
	m *md = model();
	m_dims d = {.B = B, .n = N};
	int64_t n = N;
	int st = m_run(md, &d, x, &n, y);
	ck_assert_msg(st == RT_OK, "m_run: %s", m_status_str(st));
	double worst = 0;
	for (int i = 0; i < N * B * X; i++)
		worst = fmax(worst, fabs((double)y[i] - want[i]));
	ck_assert_msg(worst < 1e-5, "y differs from PyTorch by %g", worst);
	m_destroy(md);
}
END_TEST

START_TEST(run_refuses_a_count_other_than_the_dim)
{
	float x[B * X] = {0}, y[N * B * X];
	m *md = model();
	m_dims d = {.B = B, .n = N};
	for (int64_t n = N - 1; n <= N + 1; n += 2) {
		for (int i = 0; i < N * B * X; i++)
			y[i] = 7.0f;
		ck_assert_int_eq(m_run(md, &d, x, &n, y), RT_ERR_SHAPE);
		for (int i = 0; i < N * B * X; i++)
			ck_assert_msg(y[i] == 7.0f, "a refused run wrote y[%d]", i);
	}
	int64_t zero = 0;
	m_dims d0 = {.B = B, .n = 0};
	ck_assert_int_eq(m_run(md, &d0, x, &zero, y), RT_ERR_SHAPE);
	ck_assert_int_eq(m_run(md, &d, x, NULL, y), RT_ERR_ARG);
	m_destroy(md);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("size_input");
	TCase *tc = tcase_create("api");
	tcase_add_test(tc, bind_values_reads_the_count);
	tcase_add_test(tc, run_matches_pytorch);
	tcase_add_test(tc, run_refuses_a_count_other_than_the_dim);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_VERBOSE);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
