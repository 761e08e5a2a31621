/* test_branch_step.c: Check tests of the C API for a model with an If that
 * the data decide at run time (pass_branch.c), on tests/gen_data_if.py's
 * wake_cascade compiled with `cellc compile --name m`: frames [B, T, 8], a
 * GRU detector, and an LSTM verifier that runs only when the detector's
 * score passes 0.5 (score [B, 1]).
 *
 * Expected values are PyTorch's (stream/ beside the case: x.bin [B, T, 8]
 * and prefix.bin [T, B, 1], the scripted module's score on x[:, :t + 1]
 * for every t; dims.txt says at which steps the verifier's branch is
 * taken, and it is skipped at some step and taken again later).  What
 * `cellc verify` cannot check: m_step continues both recurrences from
 * their carried states, so after each step the score is the score of the
 * whole prefix -- the verifier's LSTM advances at every step even where
 * its branch is not taken (a guarded recurrence left behind would give a
 * stale state the next time the branch is taken); a whole run after the
 * steps takes the branch only where it is taken.
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

enum { B = 2, T = 10, F = 8 };

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

/* The steps at which the verifier runs (dims.txt: "B T 1101..."). */
static void read_taken(char *taken)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/stream/dims.txt", env("CELLC_API_CASE"));
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	int b = 0, t = 0;
	int n = fscanf(f, "%d %d %15s", &b, &t, taken);
	fclose(f);
	ck_assert_msg(n == 3 && b == B && t == T && strlen(taken) == T, "%s: expected B=%d T=%d and %d flags", path,
		      B, T, T);
}

static m *model(void)
{
	m *md = NULL;
	int st = m_create(&md, env("CELLC_API_WEIGHTS"));
	ck_assert_msg(st == RT_OK, "m_create: %s", m_status_str(st));
	return md;
}

START_TEST(step_gives_every_prefix)
{
	static float x[B * T * F], want[T * B];
	char taken[16];
	read_floats("x.bin", x, B * T * F);
	read_floats("prefix.bin", want, T * B);
	read_taken(taken);
	ck_assert_msg(strchr(taken, '0') && strchr(strchr(taken, '0'), '1'),
		      "the stream never takes the verifier after skipping it: %s", taken);
	m *md = model();
	m_dims d = {.B = B, .T = 1};
	ck_assert_int_eq(m_reset(md), RT_OK);
	for (int t = 0; t < T; t++) {
		float xt[B * F], score[B];
		for (int b = 0; b < B; b++)
			memcpy(&xt[b * F], &x[(b * T + t) * F], sizeof(float) * F);
		int st = m_step(md, &d, xt, score);
		ck_assert_msg(st == RT_OK, "m_step %d: %s", t, m_status_str(st));
		for (int b = 0; b < B; b++)
			ck_assert_msg(fabs((double)score[b] - want[t * B + b]) < 1e-5,
				      "step %d (verifier %s), row %d: %g, PyTorch on the prefix %g", t,
				      taken[t] == '1' ? "taken" : "skipped", b, score[b], want[t * B + b]);
	}
	m_destroy(md);
}
END_TEST

START_TEST(run_after_steps_is_the_whole_sequence)
{
	static float x[B * T * F], want[T * B];
	read_floats("x.bin", x, B * T * F);
	read_floats("prefix.bin", want, T * B);
	m *md = model();
	m_dims one = {.B = B, .T = 1}, d = {.B = B, .T = T};
	float score[B];
	for (int t = 0; t < 3; t++)
		ck_assert_int_eq(m_step(md, &one, x, score), RT_OK);
	for (int pass = 0; pass < 2; pass++) {
		int st = m_run(md, &d, x, score);
		ck_assert_msg(st == RT_OK, "m_run: %s", m_status_str(st));
		for (int b = 0; b < B; b++)
			ck_assert_msg(fabs((double)score[b] - want[(T - 1) * B + b]) < 1e-5,
				      "run %d, row %d: %g, PyTorch %g", pass, b, score[b], want[(T - 1) * B + b]);
	}
	m_destroy(md);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("branch_step");
	TCase *tc = tcase_create("api");
	tcase_add_test(tc, step_gives_every_prefix);
	tcase_add_test(tc, run_after_steps_is_the_whole_sequence);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_VERBOSE);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
