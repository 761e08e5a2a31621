/* test_mincut.c: Check tests of compiler/passes/mincut.c (the minimum cut that
 * chooses what a forward recurrence saves for its backward pass).
 *
 * The oracle is exhaustive: on graphs of up to 10 vertices every set of
 * vertices that holds the source and not the sink is a cut, and the least
 * sum of the capacities leaving such a set is the maximum flow (max-flow
 * min-cut theorem).  Random graphs from a fixed seed, some with MC_INF edges,
 * and the shape pass_grad builds (values split into in/out vertex pairs).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "mincut.h"

typedef struct edge {
	int u, v;
	int64_t cap;
} edge;

/* The least capacity over the cuts (S, V \ S), s in S, t not in S. */
static int64_t brute_min_cut(int nv, const edge *e, int ne, int s, int t)
{
	int64_t best = -1;
	for (unsigned mask = 0; mask < (1u << nv); mask++) {
		if (!(mask >> s & 1) || (mask >> t & 1))
			continue;
		int64_t c = 0;
		for (int k = 0; k < ne; k++)
			if ((mask >> e[k].u & 1) && !(mask >> e[k].v & 1))
				c += e[k].cap;
		if (c > MC_INF)
			c = MC_INF;
		if (best < 0 || c < best)
			best = c;
	}
	return best;
}

/* The capacity leaving the side mc_cut reported. */
static int64_t side_cut(const char *side, const edge *e, int ne)
{
	int64_t c = 0;
	for (int k = 0; k < ne; k++)
		if (side[e[k].u] && !side[e[k].v])
			c += e[k].cap;
	return c > MC_INF ? MC_INF : c;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static unsigned next(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

START_TEST(random_graphs)
{
	for (int trial = 0; trial < 400; trial++) {
		arena A;
		arena_init(&A);
		int nv = 2 + (int)next(9), ne = (int)next((unsigned)(3 * nv + 1));
		int s = (int)next((unsigned)nv), t = (int)next((unsigned)nv - 1);
		if (t >= s)
			t++;
		edge e[40];
		mc_graph *G = mc_new(&A, nv, ne);
		for (int k = 0; k < ne; k++) {
			e[k].u = (int)next((unsigned)nv);
			e[k].v = (int)next((unsigned)nv);
			e[k].cap = next(8) == 0 ? MC_INF : (int64_t)next(20);
			ck_assert_int_eq(mc_edge(G, e[k].u, e[k].v, e[k].cap), 0);
		}
		char side[16];
		int64_t flow = mc_cut(G, s, t, side);
		int64_t want = brute_min_cut(nv, e, ne, s, t);
		ck_assert_msg(flow == want, "trial %d: flow %lld, least cut %lld", trial, (long long)flow,
			      (long long)want);
		ck_assert_int_eq(side[s], 1);
		if (flow < MC_INF) {
			ck_assert_int_eq(side[t], 0);
			ck_assert_int_eq(side_cut(side, e, ne), flow);
		}
		arena_free(&A);
	}
}
END_TEST

/* pass_grad's shape: value k is the pair (2k, 2k+1) joined by its width;
 * saved values hang from the source, read ones from the sink.  Two saved
 * values a (width 4) and b (width 4) feed four recomputed values of width 1
 * each (c0..c3, each from a and b), which feed the read value r (width 6,
 * recomputed): the cut is c0..c3 (4, plus the recomputed values' tie-break),
 * not a and b (8) nor r (6). */
START_TEST(value_pairs)
{
	arena A;
	arena_init(&A);
	enum { a, b, c0, c1, c2, c3, r, NV };
	const int64_t U = 1024;
	int S = 2 * NV, T = 2 * NV + 1;
	mc_graph *G = mc_new(&A, 2 * NV + 2, 64);
	int64_t width[NV] = {4 * U, 4 * U, U + 1, U + 1, U + 1, U + 1, 6 * U + 1};
	for (int k = 0; k < NV; k++)
		ck_assert_int_eq(mc_edge(G, 2 * k, 2 * k + 1, width[k]), 0);
	ck_assert_int_eq(mc_edge(G, S, 2 * a, MC_INF), 0);
	ck_assert_int_eq(mc_edge(G, S, 2 * b, MC_INF), 0);
	for (int c = c0; c <= c3; c++) {
		ck_assert_int_eq(mc_edge(G, 2 * a + 1, 2 * c, MC_INF), 0);
		ck_assert_int_eq(mc_edge(G, 2 * b + 1, 2 * c, MC_INF), 0);
		ck_assert_int_eq(mc_edge(G, 2 * c + 1, 2 * r, MC_INF), 0);
	}
	ck_assert_int_eq(mc_edge(G, 2 * r + 1, T, MC_INF), 0);
	char side[2 * NV + 2];
	ck_assert_int_eq(mc_cut(G, S, T, side), 4 * U + 4);
	for (int k = 0; k < NV; k++) {
		int cut = side[2 * k] && !side[2 * k + 1];
		ck_assert_msg(cut == (k >= c0 && k <= c3), "value %d: cut %d", k, cut);
	}
	arena_free(&A);
}
END_TEST

START_TEST(refusals)
{
	arena A;
	arena_init(&A);
	mc_graph *G = mc_new(&A, 3, 1);
	ck_assert_int_eq(mc_edge(G, 0, 3, 1), -1);     /* vertex out of range */
	ck_assert_int_eq(mc_edge(G, -1, 1, 1), -1);
	ck_assert_int_eq(mc_edge(G, 0, 1, -1), -1);    /* negative capacity */
	ck_assert_int_eq(mc_edge(G, 0, 1, 5), 0);
	ck_assert_int_eq(mc_edge(G, 1, 2, 5), -1);     /* full */
	char side[3];
	ck_assert_int_eq(mc_cut(G, 0, 2, side), 0);    /* t unreachable: flow 0 */
	ck_assert_int_eq(side[0], 1);
	ck_assert_int_eq(side[1], 1);
	ck_assert_int_eq(side[2], 0);
	arena_free(&A);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mincut");
	TCase *tc = tcase_create("mincut");
	tcase_add_test(tc, random_graphs);
	tcase_add_test(tc, value_pairs);
	tcase_add_test(tc, refusals);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_ENV);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
