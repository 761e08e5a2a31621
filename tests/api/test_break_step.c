/* test_break_step.c: Check tests of the C API for a loop that its condition
 * ends (a `break`: lower_loop.c, the recurrence's condition state), on
 * tests/gen_script_wild.py's rnn_unbind_break compiled with `cellc compile
 * --name m`: x [T, B, I] scanned step by step, `if h.sum() > 1.5: break`,
 * h [B, H] the output.
 *
 * Expected values are PyTorch's (stream/ beside the case: x.bin [T, B, I],
 * prefix.bin [T, B, H], the scripted module's h on x[:t + 1] for every t;
 * dims.txt "T B I H S": the loop breaks after S of the T steps).  What
 * `cellc verify` cannot check: m_step continues from the carried state, the
 * condition included, so after each step h is that of the whole prefix, and
 * once the condition has ended the loop further steps leave h as it was;
 * m_reset starts the loop again; a whole run after the steps stops at S.
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

enum { MAXN = 4096 };

static const char *env(const char *name)
{
	const char *v = getenv(name);
	ck_assert_msg(v && *v, "%s is not set", name);
	return v;
}

static void read_floats(const char *file, float *to, size_t n)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/stream/%s", env("CELLC_API_CASE"), file);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	size_t got = fread(to, sizeof *to, n, f);
	char extra;
	int more = fread(&extra, 1, 1, f) == 1;
	fclose(f);
	ck_assert_msg(got == n && !more, "%s: expected %zu floats", path, n);
}

typedef struct stream {
	int T, B, I, H, S;
	float x[MAXN], prefix[MAXN];
} stream;

static void load(stream *s)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/stream/dims.txt", env("CELLC_API_CASE"));
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	int n = fscanf(f, "%d %d %d %d %d", &s->T, &s->B, &s->I, &s->H, &s->S);
	fclose(f);
	ck_assert_msg(n == 5 && s->T > 0 && s->B > 0 && s->T * s->B * (s->I > s->H ? s->I : s->H) <= MAXN,
		      "%s: expected T B I H S", path);
	ck_assert_msg(s->S >= 2 && s->S < s->T, "%s: the loop breaks after step %d of %d, not within", path, s->S,
		      s->T);
	read_floats("x.bin", s->x, (size_t)(s->T * s->B * s->I));
	read_floats("prefix.bin", s->prefix, (size_t)(s->T * s->B * s->H));
}

static m *model(void)
{
	m *md = NULL;
	int st = m_create(&md, env("CELLC_API_WEIGHTS"));
	ck_assert_msg(st == RT_OK, "m_create: %s", m_status_str(st));
	return md;
}

static void check_h(const stream *s, const float *h, int t, const char *what)
{
	for (int e = 0; e < s->B * s->H; e++)
		ck_assert_msg(fabs((double)h[e] - s->prefix[t * s->B * s->H + e]) < 1e-5,
			      "%s, step %d (the loop breaks after %d), element %d: %g, PyTorch on the prefix %g", what,
			      t, s->S, e, h[e], s->prefix[t * s->B * s->H + e]);
}

START_TEST(step_gives_every_prefix)
{
	static stream s;
	load(&s);
	m *md = model();
	m_dims d = {.T = 1, .B = s.B};
	float h[MAXN];
	for (int pass = 0; pass < 2; pass++) {      /* m_reset starts the loop again */
		ck_assert_int_eq(m_reset(md), RT_OK);
		for (int t = 0; t < s.T; t++) {
			int st = m_step(md, &d, &s.x[t * s.B * s.I], h);
			ck_assert_msg(st == RT_OK, "m_step %d: %s", t, m_status_str(st));
			check_h(&s, h, t, pass ? "after m_reset" : "m_step");
		}
	}
	m_destroy(md);
}
END_TEST

START_TEST(run_after_steps_stops_at_the_break)
{
	static stream s;
	load(&s);
	m *md = model();
	m_dims one = {.T = 1, .B = s.B}, d = {.T = s.T, .B = s.B};
	float h[MAXN];
	for (int t = 0; t < s.T; t++)       /* a stream the condition ended */
		ck_assert_int_eq(m_step(md, &one, &s.x[t * s.B * s.I], h), RT_OK);
	int st = m_run(md, &d, s.x, h);
	ck_assert_msg(st == RT_OK, "m_run: %s", m_status_str(st));
	check_h(&s, h, s.T - 1, "m_run after the steps");
	m_destroy(md);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("break_step");
	TCase *tc = tcase_create("api");
	tcase_add_test(tc, step_gives_every_prefix);
	tcase_add_test(tc, run_after_steps_stops_at_the_break);
	suite_add_tcase(su, tc);
	SRunner *r = srunner_create(su);
	srunner_run_all(r, CK_VERBOSE);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
