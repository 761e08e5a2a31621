/* check_bare.h: the part of Check's API that libcellrt's kernel tests use
 * (test_kern.h), for a board without an OS, where Check does not build
 * (it forks, times tests out and reads the environment): a test runs when
 * its tcase adds it, a failed assertion leaves the test through longjmp,
 * and every test prints the line Check's verbose mode prints,
 *   FILE:LINE:P|F:TCASE:TEST:ITERATION: MESSAGE
 * then ck_bare_report the summary, "N%: Checks: N, Failures: F, Errors: 0",
 * which the harness reads as it reads a Check program's (unit_binary).
 * Formats as newlib's printf has them: no C99 %zu or %jd there.
 * Written for cellc; it copies nothing of Check but the names and the
 * output format.
 */
#ifndef CHECK_BARE_H
#define CHECK_BARE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>

typedef struct ck_test {
	const char *name;       /* the function's name */
	void (*fn)(int);        /* its body; the argument is the loop index _i */
	const char *file;
	int line;               /* where it starts */
} ck_test;
typedef struct TCase { const char *name; } TCase;
typedef struct Suite { const char *name; } Suite;

#define START_TEST(name)                                                            \
	static void name##_fn(int _i __attribute__((unused)));                       \
	static const ck_test name##_test = {#name, name##_fn, __FILE__, __LINE__};  \
	static const ck_test *const name = &name##_test;                              \
	static void name##_fn(int _i __attribute__((unused)))
#define END_TEST

static struct {
	jmp_buf out;            /* where a failed assertion returns to */
	char msg[512];          /* its message */
	const char *file;
	int line;               /* and where it failed */
	int checks, failures;
	TCase tcases[16];
	int ntcases;
} ck_bare;

__attribute__((noreturn, format(printf, 3, 4))) static void ck_bare_fail(const char *file, int line,
									 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ck_bare.msg, sizeof ck_bare.msg, fmt, ap);
	va_end(ap);
	ck_bare.file = file;
	ck_bare.line = line;
	longjmp(ck_bare.out, 1);
}

#define ck_assert_msg(expr, ...) ((expr) ? (void)0 : ck_bare_fail(__FILE__, __LINE__, __VA_ARGS__))
#define ck_assert(expr) ck_assert_msg(expr, "Assertion '%s' failed", #expr)
#define ck_bare_cmp(a, op, b)                                                                              \
	do {                                                                                               \
		long long a_ = (long long)(a), b_ = (long long)(b);                                         \
		ck_assert_msg(a_ op b_, "Assertion '%s' failed: %s == %lld, %s == %lld", #a " " #op " " #b, #a, \
			      a_, #b, b_);                                                                 \
	} while (0)
#define ck_assert_int_eq(a, b) ck_bare_cmp(a, ==, b)
#define ck_assert_int_ge(a, b) ck_bare_cmp(a, >=, b)
#define ck_assert_ptr_nonnull(p) ck_assert_msg((p) != NULL, "Assertion '%s != NULL' failed", #p)

static Suite *suite_create(const char *name)
{
	static Suite s;
	s.name = name;
	return &s;
}

static TCase *tcase_create(const char *name)
{
	TCase *tc = &ck_bare.tcases[ck_bare.ntcases < 15 ? ck_bare.ntcases++ : 15];
	tc->name = name;
	return tc;
}

static void tcase_set_timeout(TCase *tc, double seconds)
{
	(void)tc, (void)seconds;        /* nothing times a test out here */
}

static void suite_add_tcase(Suite *s, TCase *tc)
{
	(void)s, (void)tc;              /* the tests ran when added */
}

/* Runs test t at loop indices [lo, hi), one result line each. */
static void tcase_add_loop_test(TCase *tc, const ck_test *t, int lo, int hi)
{
	for (volatile int i = lo; i < hi; i++) {
		ck_bare.checks++;
		if (!setjmp(ck_bare.out)) {
			t->fn(i);
			printf("%s:%d:P:%s:%s:%d: Passed\n", t->file, t->line, tc->name, t->name, i);
		} else {
			ck_bare.failures++;
			printf("%s:%d:F:%s:%s:%d: %s\n", ck_bare.file, ck_bare.line, tc->name, t->name, i, ck_bare.msg);
		}
	}
}

static void tcase_add_test(TCase *tc, const ck_test *t)
{
	tcase_add_loop_test(tc, t, 0, 1);
}

/* Check's summary line; the program's exit status (0: every test passed). */
static int ck_bare_report(void)
{
	int c = ck_bare.checks, f = ck_bare.failures;
	printf("%d%%: Checks: %d, Failures: %d, Errors: 0\n", c ? 100 * (c - f) / c : 100, c, f);
	return f != 0;
}

#endif
