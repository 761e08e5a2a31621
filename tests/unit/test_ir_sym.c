/* test_ir_sym.c: Check tests of compiler/ir/ir_sym.c: derived symbols
 * (ir_sym_floor's canonical forms, their values, the least values
 * ir_sym_need records through them) and ir_sym_unify (two free symbols, a
 * symbol and a constant, a derived one pinned; what it refuses without
 * changing anything) and ir_sym_link_drop.  Small graphs built by hand; the expected values are
 * worked out by hand in the comments.  Linked with the compiler's objects
 * as build/cellc is (tests/tests.mk).
 */
#include <check.h>
#include <string.h>

#include "ir.h"

static arena A;

static void setup(void) { arena_init(&A); }
static void teardown(void) { arena_free(&A); }

/* A graph with free symbols B and L and an input x: f32[B, 1, L]. */
static ir_graph *graph(ir_value **x)
{
	ir_graph *g = ir_graph_new(&A, NULL, "g");
	ck_assert_int_eq(ir_sym_add(g, "B"), 0);
	ck_assert_int_eq(ir_sym_add(g, "L"), 1);
	ir_value *v = ir_value_new(g, "x", VAL_INPUT, DT_F32);
	v->shape.rank = 3;
	v->shape.d[0] = ir_dim_sym(0);
	v->shape.d[1] = ir_dim_const(1);
	v->shape.d[2] = ir_dim_sym(1);
	g->inputs = arena_grow(&A, g->inputs, 0, 1, sizeof *g->inputs);
	g->inputs[g->ninputs++] = v;
	if (x)
		*x = v;
	return g;
}

static ir_dim floor_of(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div)
{
	ir_dim r;
	ck_assert(ir_sym_floor(g, d, mul, off, div, &r));
	return r;
}

START_TEST(floor_canonical)
{
	ir_graph *g = graph(NULL);
	ir_dim L = ir_dim_sym(1);
	/* a Pad by 8 and 8, then a Conv of kernel 32, stride 16: floor((L + 16 - 32 + 16) / 16) */
	ir_dim p = floor_of(g, L, 1, 16, 1);
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(p)), "L + 16");
	ir_dim f = floor_of(g, p, 1, 0 - 32 + 16, 16);     /* no Conv pads, span 32, stride 16 */
	int sf = ir_dim_one_sym(f);
	/* the offset is folded in: floor(L / 16) of L itself */
	ck_assert_int_eq(ir_sym_base(g, sf, NULL), 1);
	ck_assert_str_eq(ir_sym_def_str(&A, g, sf), "floor(L / 16)");
	/* a stride-2 window over it: floor((floor(L / 16) + 1) / 2) = floor((L + 16) / 32) */
	ir_dim h = floor_of(g, f, 1, 1, 2);
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(h)), "floor((L + 16) / 32)");
	ck_assert_int_eq(ir_sym_base(g, ir_dim_one_sym(h), NULL), 1);
	/* the same definition is the same symbol */
	int n = g->nsyms;
	ck_assert(ir_dim_eq(floor_of(g, f, 1, 1, 2), h));
	ck_assert_int_eq(g->nsyms, n);
	/* mul and div share the factor 4: floor((4 L + 6) / 8) = floor((L + floor(6 / 4)) / 2)
	 * (L = 3: floor(18 / 8) = 2 = floor(4 / 2)); and 3 L + 1 keeps its factor */
	ir_dim q = floor_of(g, L, 4, 6, 8);
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(q)), "floor((L + 1) / 2)");
	ir_dim t = floor_of(g, L, 3, 1, 1);
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(t)), "3 * L + 1");
	/* a product by a constant is a monomial, no symbol */
	ir_dim m = floor_of(g, L, 6, 0, 3);
	ck_assert(ir_dim_eq(m, ir_dim_mul(ir_dim_const(2), L)));
	ck_assert_int_eq(g->nsyms, n + 2);
	/* an offset of an offset is one offset; back to L is L */
	ir_dim o = floor_of(g, p, 1, -16, 1);
	ck_assert(ir_dim_eq(o, L));
	/* a constant is computed, floor division included */
	ck_assert(ir_dim_eq(floor_of(g, ir_dim_const(5), 1, -8, 2), ir_dim_const(-2)));
	/* another monomial is refused */
	ir_dim r;
	ck_assert(!ir_sym_floor(g, ir_dim_mul(L, L), 1, 0, 2, &r));
}
END_TEST

START_TEST(values_and_least)
{
	ir_graph *g = graph(NULL);
	ir_dim L = ir_dim_sym(1);
	ir_dim f = floor_of(g, L, 1, -64, 128);             /* floor((L - 64) / 128) */
	ir_dim h = floor_of(g, f, 3, 1, 1);                  /* 3 floor((L - 64) / 128) + 1 */
	int64_t v[IR_MAX_SYMS] = {1, 576};
	ck_assert_int_eq(ir_sym_value(g, ir_dim_one_sym(f), v), 4);
	ck_assert_int_eq(ir_sym_value(g, ir_dim_one_sym(h), v), 13);
	v[1] = 10;                                           /* floor(-54 / 128) = -1 */
	ck_assert_int_eq(ir_sym_value(g, ir_dim_one_sym(f), v), -1);
	/* f >= 3  <=>  L - 64 >= 384  <=>  L >= 448 */
	ck_assert(ir_sym_need(g, f, 3));
	ck_assert_int_eq(ir_sym_least(g, 1), 448);
	/* 2 f >= 9  <=>  f >= 5  <=>  L >= 704 */
	ck_assert(ir_sym_need(g, ir_dim_mul(ir_dim_const(2), f), 9));
	ck_assert_int_eq(ir_sym_least(g, 1), 704);
	/* a smaller need leaves the larger least value */
	ck_assert(ir_sym_need(g, h, 2));
	ck_assert_int_eq(ir_sym_least(g, 1), 704);
}
END_TEST

START_TEST(unify_two_symbols)
{
	ir_graph *g = graph(NULL);
	int h1 = ir_sym_add(g, "h_1");
	ir_value *hv = ir_value_new(g, "h", VAL_INPUT, DT_F32);
	hv->shape.rank = 2;
	hv->shape.d[0] = ir_dim_sym(h1);
	hv->shape.d[1] = ir_dim_const(8);
	ir_dim d = floor_of(g, ir_dim_sym(h1), 1, -1, 1);    /* h_1_minus_1 */
	ir_value *c = ir_value_new(g, "n", VAL_CONST, DT_I64);
	c->shape.rank = 1;
	c->shape.d[0] = ir_dim_const(2);
	c->sym = arena_array(&A, 2, sizeof *c->sym);
	c->sym[0] = ir_dim_sym(h1);
	c->sym[1] = ir_dim_const(8);
	ck_assert(!ir_sym_unify(g, ir_dim_sym(0), ir_dim_sym(h1), "n", "w"));   /* not while inference is off */
	g->unify_ok = 1;
	ck_assert(ir_sym_unify(g, ir_dim_sym(0), ir_dim_sym(h1), "LSTM_1", "initial_h's batch"));
	/* h_1 is gone, the later symbol became the earlier; its derived one follows, renamed */
	ck_assert_int_eq(g->nsyms, 3);
	ck_assert(ir_dim_eq(hv->shape.d[0], ir_dim_sym(0)));
	ck_assert_str_eq(g->syms[2], "B_minus_1");
	ck_assert_int_eq(ir_sym_base(g, 2, NULL), 0);
	(void)d;
	ck_assert(ir_dim_eq(c->sym[0], ir_dim_sym(0)));
	ck_assert_int_eq(g->nlinks, 1);
	ck_assert_str_eq(g->links[0].name, "h_1");
	ck_assert_str_eq(g->links[0].into, "B");
	ck_assert_str_eq(g->links[0].node, "LSTM_1");
}
END_TEST

START_TEST(unify_with_constant)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	g->unify_ok = 1;
	ir_dim d = floor_of(g, ir_dim_sym(0), 1, -5, 1);     /* B - 5 */
	/* B = 3 would make B - 5 negative: refused, nothing changed */
	ck_assert(!ir_sym_unify(g, ir_dim_sym(0), ir_dim_const(3), "Add_1", "w"));
	ck_assert_int_eq(g->nsyms, 3);
	ck_assert_int_eq(g->nlinks, 0);
	ck_assert(ir_dim_eq(x->shape.d[0], ir_dim_sym(0)));
	/* B = 7: B and B - 5 become 7 and 2 everywhere */
	ir_value *y = ir_value_new(g, "y", VAL_TEMP, DT_F32);
	y->shape.rank = 2;
	y->shape.d[0] = d;
	y->shape.d[1] = ir_dim_mul(ir_dim_sym(0), ir_dim_sym(1));
	ck_assert(ir_sym_unify(g, ir_dim_const(7), ir_dim_sym(0), "Add_1", "broadcasting"));
	ck_assert_int_eq(g->nsyms, 1);
	ck_assert_str_eq(g->syms[0], "L");
	ck_assert(ir_dim_eq(x->shape.d[0], ir_dim_const(7)));
	ck_assert(ir_dim_eq(y->shape.d[0], ir_dim_const(2)));
	ck_assert(ir_dim_eq(y->shape.d[1], ir_dim_mul(ir_dim_const(7), ir_dim_sym(0))));
	ck_assert_ptr_null(g->links[0].into);
	ck_assert_int_eq(g->links[0].value, 7);
	/* two constants, or a constant below 1, are nothing to unify */
	ck_assert(!ir_sym_unify(g, ir_dim_const(2), ir_dim_const(3), "n", "w"));
	ck_assert(!ir_sym_unify(g, ir_dim_sym(0), ir_dim_const(0), "n", "w"));
}
END_TEST

START_TEST(link_drop)
{
	/* a traced x.unbind() fixed L to 8 (infer_split's link), another node
	 * made B one with a symbol and a third checks a least value: dropping
	 * L's link (pass_reroll, the loop rolled) leaves the other two */
	ir_graph *g = graph(NULL);
	g->unify_ok = 1;
	ck_assert(ir_sym_unify(g, ir_dim_sym(1), ir_dim_const(8), "Split_1", "unbind"));
	ir_sym_link_add(g, &(ir_sym_link){.name = "B", .into = "N", .node = "Add_2", .why = "broadcasting"});
	ir_sym_link_add(g, &(ir_sym_link){.name = "L", .value = 2, .at_least = 1, .node = "Slice_3", .why = "x[1:2]"});
	ck_assert_int_eq(g->nlinks, 3);
	ir_sym_link_drop(g, "L");
	ck_assert_int_eq(g->nlinks, 2);
	ck_assert_str_eq(g->links[0].name, "B");
	ck_assert(g->links[1].at_least);
	/* a name no fixing link has changes nothing */
	ir_sym_link_drop(g, "B");
	ck_assert_int_eq(g->nlinks, 2);
}
END_TEST

START_TEST(pin_derived)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	g->unify_ok = 1;
	ir_dim f = floor_of(g, ir_dim_sym(1), 1, -4, 4);     /* floor((L - 4) / 4) */
	ir_value *y = ir_value_new(g, "y", VAL_TEMP, DT_F32);
	y->shape.rank = 3;
	y->shape.d[0] = ir_dim_sym(0);
	y->shape.d[1] = ir_dim_const(3);
	y->shape.d[2] = f;
	ck_assert(ir_sym_unify(g, f, ir_dim_const(1), "Squeeze_1", "axis 2 is 1"));
	/* the shapes have 1; the symbol stays, pinned, for the generated code's check */
	ck_assert(ir_dim_eq(y->shape.d[2], ir_dim_const(1)));
	int s = ir_dim_one_sym(f);
	ck_assert_int_eq(g->nsyms, 3);
	ck_assert_int_eq(g->sym_pin[s], 1);
	/* the same definition made again is the pinned constant */
	ck_assert(ir_dim_eq(floor_of(g, ir_dim_sym(1), 1, -4, 4), ir_dim_const(1)));
	/* pinned once only */
	ck_assert(!ir_sym_unify(g, ir_dim_sym(s), ir_dim_const(2), "n", "w"));
}
END_TEST

/* ir_sym_least_value of a derived symbol, and a least value an If recorded
 * (an at_least link) following its symbol through unification. */
START_TEST(least_value_and_at_least_links)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	ir_dim f = floor_of(g, ir_dim_sym(1), 1, 0, 8);      /* floor(L / 8) */
	int s = ir_dim_one_sym(f);
	/* L >= 1: floor(1 / 8) = 0, reported as the least size 1 */
	ck_assert_int_eq(ir_sym_least_value(g, s), 1);
	ck_assert(ir_sym_need(g, f, 2));                      /* floor(L / 8) >= 2: L >= 16 */
	ck_assert_int_eq(ir_sym_least(g, 1), 16);
	ck_assert_int_eq(ir_sym_least_value(g, s), 2);
	ir_sym_link l = {.name = "L", .value = 16, .node = "If_1", .why = "w", .at_least = 1};
	ir_sym_link_add(g, &l);
	/* a second input whose length M the model makes one with L: the link is
	 * L's still, and L keeps the larger least value */
	ck_assert_int_eq(ir_sym_add(g, "M"), 3);
	g->unify_ok = 1;
	ck_assert(ir_sym_unify(g, ir_dim_sym(1), ir_dim_sym(3), "Add_2", "broadcasting"));
	ck_assert_int_eq(g->nlinks, 2);
	ck_assert_str_eq(g->links[0].name, "L");
	ck_assert(g->links[0].at_least);
	/* L fixed to 20 (at least 16): the least value is met and its link goes */
	ck_assert(ir_sym_unify(g, ir_dim_sym(1), ir_dim_const(20), "Add_3", "broadcasting"));
	for (int i = 0; i < g->nlinks; i++)
		ck_assert(!g->links[i].at_least);
	/* below the least value: refused */
	ir_graph *h = graph(NULL);
	h->unify_ok = 1;
	ck_assert(ir_sym_need(h, ir_dim_sym(1), 16));
	ck_assert(!ir_sym_unify(h, ir_dim_sym(1), ir_dim_const(10), "n", "w"));
}
END_TEST

/* Sums of symbols: canonical (terms written out, the last factor
 * positive), the same sum one symbol, sums that cancel back to a symbol or
 * a constant, values, and the least and largest values with a negative
 * term. */
START_TEST(sums)
{
	ir_graph *g = graph(NULL);
	ck_assert_int_eq(ir_sym_add(g, "M"), 2);
	ir_dim L = ir_dim_sym(1), M = ir_dim_sym(2), r;
	ck_assert(ir_sym_sum(g, L, M, 1, &r));                  /* L + M */
	int s = ir_dim_one_sym(r);
	ck_assert_int_ge(s, 3);
	ck_assert_str_eq(g->syms[s], "L_plus_M");
	ck_assert_str_eq(ir_sym_def_str(&A, g, s), "L + M");
	ck_assert_ptr_null(ir_sym_noncanonical(g, s));
	/* M + L is the same symbol; (L + M) - M is L; (L + M) - L - M is 0 */
	ir_dim r2, r3, r4;
	ck_assert(ir_sym_sum(g, M, L, 1, &r2));
	ck_assert(ir_dim_eq(r, r2));
	ck_assert(ir_sym_sum(g, r, M, -1, &r3));
	ck_assert(ir_dim_eq(r3, L));
	ir_dim t[3] = {r, L, M};
	int64_t k[3] = {1, -1, -1};
	ck_assert(ir_sym_lin(g, 3, t, k, 0, 1, 0, &r4));
	ck_assert(ir_dim_eq(r4, ir_dim_const(0)));
	/* L - M is -1 times M - L (the last term's factor positive) */
	ck_assert(ir_sym_sum(g, L, M, -1, &r2));
	ck_assert_int_eq(r2.k, -1);
	r2.k = 1;
	int sd = ir_dim_one_sym(r2);
	ck_assert_str_eq(ir_sym_def_str(&A, g, sd), "M - L");
	ck_assert_str_eq(g->syms[sd], "M_minus_L");
	/* (L + M) + 3 expands the sum: its own definition over L and M */
	ck_assert(ir_sym_offset(g, r, 3, &r3));
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(r3)), "L + M + 3");
	/* floor((L + M) / 2): a floor of a sum; 2 L + 2 M over 4 reduces to it */
	ir_dim t2[2] = {L, M};
	int64_t k2[2] = {2, 2};
	ck_assert(ir_sym_lin(g, 2, t2, k2, 1, 4, 0, &r4));
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(r4)), "floor((L + M) / 2)");
	/* values: L = 7, M = 4 */
	int64_t v[IR_MAX_SYMS] = {1, 7, 4};
	ck_assert_int_eq(ir_sym_value(g, s, v), 11);
	ck_assert_int_eq(ir_sym_value(g, sd, v), -3);
	ck_assert_int_eq(ir_sym_value(g, ir_dim_one_sym(r4), v), 5);
	/* least values: L + M at least 2; M - L has no least (reported 1);
	 * largest of M - L with L, M <= 10: 10 - 1 = 9 */
	ck_assert_int_eq(ir_sym_least_value(g, s), 2);
	ck_assert_int_eq(ir_sym_least_value(g, sd), 1);
	int64_t mx[IR_MAX_SYMS] = {4, 10, 10};
	ck_assert_int_eq(ir_sym_max_value(g, sd, mx), 9);
	ck_assert_int_eq(ir_sym_max_value(g, s, mx), 20);
	ck_assert_int_eq(ir_sym_frees(g, sd), 6u);
	/* L + M >= 5 has no one way: refused, nothing recorded */
	ck_assert(!ir_sym_need(g, r, 5));
	ck_assert_int_eq(ir_sym_least(g, 1), 1);
	/* a product of two symbols is no operand */
	ck_assert(!ir_sym_sum(g, ir_dim_mul(L, M), L, 1, &r2));
}
END_TEST

/* min and max: decided by the operands' bounds where they can be, else a
 * symbol in index order; least values through them; values. */
START_TEST(min_max)
{
	ir_graph *g = graph(NULL);
	ir_dim L = ir_dim_sym(1), r, r2, p;
	/* min(L, 1) is 1 (L >= 1); max(L, 1) is L; min(10, L) is min(L, 10) */
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, L, ir_dim_const(1), &r));
	ck_assert(ir_dim_eq(r, ir_dim_const(1)));
	ck_assert(ir_sym_minmax(g, IR_SYM_MAX, L, ir_dim_const(1), &r));
	ck_assert(ir_dim_eq(r, L));
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, ir_dim_const(10), L, &r));
	int m = ir_dim_one_sym(r);
	ck_assert_str_eq(g->syms[m], "min_L_10");
	ck_assert_str_eq(ir_sym_def_str(&A, g, m), "min(L, 10)");
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, L, ir_dim_const(10), &r2));
	ck_assert(ir_dim_eq(r, r2));
	/* min(L - 1, L) is L - 1: they differ by a constant */
	ck_assert(ir_sym_offset(g, L, -1, &p));
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, p, L, &r2));
	ck_assert(ir_dim_eq(r2, p));
	/* min(min(L, 10), 12) is min(L, 10): its largest value is 10 */
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, r, ir_dim_const(12), &r2));
	ck_assert(ir_dim_eq(r2, r));
	int64_t v[IR_MAX_SYMS] = {1, 7};
	ck_assert_int_eq(ir_sym_value(g, m, v), 7);
	v[1] = 30;
	ck_assert_int_eq(ir_sym_value(g, m, v), 10);
	/* min(L, 10) >= 4 <=> L >= 4; >= 11 never */
	ck_assert(ir_sym_need(g, r, 4));
	ck_assert_int_eq(ir_sym_least(g, 1), 4);
	ck_assert(!ir_sym_need(g, r, 11));
	ck_assert_int_eq(ir_sym_least(g, 1), 4);
	/* now L >= 4: min(L, 3) is 3 */
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, L, ir_dim_const(3), &r2));
	ck_assert(ir_dim_eq(r2, ir_dim_const(3)));
	/* max(L - 8, 0): the clamp of x[-8:]'s start */
	ck_assert(ir_sym_offset(g, L, -8, &p));
	ck_assert(ir_sym_minmax(g, IR_SYM_MAX, p, ir_dim_const(0), &r2));
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(r2)), "max(L_minus_8, 0)");
	ck_assert_ptr_null(ir_sym_noncanonical(g, ir_dim_one_sym(r2)));
	/* 2 L is no operand of its own */
	ck_assert(!ir_sym_minmax(g, IR_SYM_MIN, ir_dim_mul(ir_dim_const(2), L), ir_dim_sym(0), &r2));
}
END_TEST

/* A unification reads the definitions made of the symbol that goes again:
 * L + M with M made L is 2 L (a monomial, every shape rewritten); M - L
 * with M made 9 is 9 - L, refused (no size is a negative symbol). */
START_TEST(unify_through_sums)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	ck_assert_int_eq(ir_sym_add(g, "M"), 2);
	ir_dim L = ir_dim_sym(1), M = ir_dim_sym(2), r;
	ck_assert(ir_sym_sum(g, L, M, 1, &r));
	ir_value *y = ir_value_new(g, "y", VAL_TEMP, DT_F32);
	y->shape.rank = 1;
	y->shape.d[0] = r;
	g->unify_ok = 1;
	ck_assert(ir_sym_unify(g, L, M, "Add_1", "broadcasting"));
	ck_assert_int_eq(g->nsyms, 2);
	ck_assert(ir_dim_eq(y->shape.d[0], ir_dim_mul(ir_dim_const(2), L)));
	/* a sum then pinned through a constant: B + L with L = 5 is B + 5 */
	ir_dim B = ir_dim_sym(0), s;
	ck_assert(ir_sym_sum(g, B, L, 1, &s));
	y->shape.d[0] = s;
	ck_assert(ir_sym_unify(g, L, ir_dim_const(5), "Add_2", "broadcasting"));
	int k = ir_dim_one_sym(y->shape.d[0]);
	ck_assert_int_ge(k, 0);
	ck_assert_str_eq(ir_sym_def_str(&A, g, k), "B + 5");
	ck_assert_str_eq(g->syms[k], "B_plus_5");
}
END_TEST

/* ir_sym_gc: the derived symbols no value uses go, a free one stays, a
 * pinned one stays, what a kept one is made of stays; shapes follow. */
/* SCALE: a Resize's size of a run-time length by a scale that is no
 * multiple of 1/64, as ONNX Runtime computes it: the float32 product,
 * truncated (rt_resize_size).  1.3f is 1.29999995; 10 times it is
 * 12.9999995 in double (floor 12) but rounds to 13.0f in float32, which is
 * ONNX Runtime's size. */
START_TEST(scale)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	g->unify_ok = 1;
	ir_dim L = ir_dim_sym(1), r, r2;
	ck_assert(ir_sym_scale(g, L, 1.3f, &r));
	int s = ir_dim_one_sym(r);
	ck_assert_int_eq(g->symdef[s].op, IR_SYM_SCALE);
	ck_assert_str_eq(g->syms[s], "L_scale1_3");
	ck_assert_str_eq(ir_sym_def_str(&A, g, s), "scale(L, 1.3)");
	ck_assert_ptr_null(ir_sym_noncanonical(g, s));
	ck_assert_int_eq(ir_sym_operands(g, s), 1u << 1);
	ck_assert_int_eq(ir_sym_frees(g, s), 1u << 1);
	int64_t v[IR_MAX_SYMS] = {1, 10};
	ck_assert_int_eq(ir_sym_value(g, s, v), 13);
	v[1] = 20;                                   /* 25.9999990 -> 26.0f */
	ck_assert_int_eq(ir_sym_value(g, s, v), 26);
	v[1] = 7;                                    /* 9.09999967 */
	ck_assert_int_eq(ir_sym_value(g, s, v), 9);
	/* the same definition is the same symbol */
	int n = g->nsyms;
	ck_assert(ir_sym_scale(g, L, 1.3f, &r2) && ir_dim_eq(r, r2));
	ck_assert_int_eq(g->nsyms, n);
	/* a multiple of 1/64 is a floor, or a monomial: 2.5 L is floor(5 L / 2), 2 L is 2 L */
	ck_assert(ir_sym_scale(g, L, 2.5f, &r2));
	ck_assert_str_eq(ir_sym_def_str(&A, g, ir_dim_one_sym(r2)), "floor((5 * L) / 2)");
	ck_assert(ir_sym_scale(g, L, 2.0f, &r2) && ir_dim_eq(r2, ir_dim_mul(ir_dim_const(2), L)));
	ck_assert(ir_sym_scale(g, L, 1.0f, &r2) && ir_dim_eq(r2, L));
	/* a constant is computed as ONNX Runtime does, 2 L and L * L refused, so is a scale of 0 */
	ck_assert(ir_sym_scale(g, ir_dim_const(10), 0.7f, &r2) && ir_dim_eq(r2, ir_dim_const(7)));
	ck_assert(!ir_sym_scale(g, ir_dim_mul(ir_dim_const(2), L), 1.3f, &r2));
	ck_assert(!ir_sym_scale(g, ir_dim_mul(L, L), 1.3f, &r2));
	ck_assert(!ir_sym_scale(g, L, 0.0f, &r2));
	/* by 0.7 of that: 1 needs the operand at least 2 (1.4 -> 1), so L at least 2 (2.6 -> 2) */
	ir_dim d;
	ck_assert(ir_sym_scale(g, r, 0.7f, &d));
	int sd = ir_dim_one_sym(d);
	ck_assert_str_eq(ir_sym_def_str(&A, g, sd), "scale(L_scale1_3, 0.7)");
	ck_assert_int_eq(ir_sym_least_value(g, sd), 1);
	ck_assert(ir_sym_need(g, d, 1));
	ck_assert_int_eq(ir_sym_least(g, 1), 2);
	/* at least 7: the operand at least 10 (7.0000005 -> 7), L at least 8 (10.4 -> 10) */
	ck_assert(ir_sym_need(g, d, 7));
	ck_assert_int_eq(ir_sym_least(g, 1), 8);
	ck_assert_int_eq(ir_sym_least_value(g, s), 10);
	/* non-canonical forms the text and ir_verify refuse */
	ir_symdef keep = g->symdef[s];
	g->symdef[s].scale = 0.5f;
	ck_assert_ptr_nonnull(ir_sym_noncanonical(g, s));
	g->symdef[s] = keep;
	g->symdef[s].a = s;
	ck_assert_ptr_nonnull(ir_sym_noncanonical(g, s));
	g->symdef[s] = keep;
	/* L unified with 10: the scale is 13, by 0.7 9 (9.1 -> 9) */
	ir_value *y = ir_value_new(g, "y", VAL_TEMP, DT_F32);
	y->shape.rank = 2;
	y->shape.d[0] = r;
	y->shape.d[1] = d;
	ck_assert(ir_sym_unify(g, L, ir_dim_const(10), "Add_1", "broadcasting"));
	ck_assert(ir_dim_eq(y->shape.d[0], ir_dim_const(13)));
	ck_assert(ir_dim_eq(y->shape.d[1], ir_dim_const(9)));
}
END_TEST

/* A SCALE follows a unification of its operand into another symbol
 * (renamed after it), and ir_sym_gc drops one nothing uses. */
START_TEST(scale_unify_gc)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	g->unify_ok = 1;
	int t = ir_sym_add(g, "T");
	ir_dim r, u;
	ck_assert(ir_sym_scale(g, ir_dim_sym(t), 0.7f, &r));
	ck_assert(ir_sym_scale(g, ir_dim_sym(1), 1.1f, &u));        /* used by nothing */
	ir_value *y = x;                                         /* the input's axis 1 */
	y->shape.d[1] = r;
	ck_assert(ir_sym_unify(g, ir_dim_sym(1), ir_dim_sym(t), "Concat_1", "axis 2"));
	int s = ir_dim_one_sym(y->shape.d[1]);
	ck_assert_str_eq(g->syms[s], "L_scale0_7");
	ck_assert_str_eq(ir_sym_def_str(&A, g, s), "scale(L, 0.7)");
	ck_assert_ptr_null(ir_sym_noncanonical(g, s));
	int n = g->nsyms;
	ir_sym_gc(g);
	ck_assert_int_eq(g->nsyms, n - 1);               /* scale(L, 1.1) is gone */
	s = ir_dim_one_sym(y->shape.d[1]);
	ck_assert_str_eq(ir_sym_def_str(&A, g, s), "scale(L, 0.7)");
	(void)u;
}
END_TEST

START_TEST(gc)
{
	ir_value *x;
	ir_graph *g = graph(&x);
	ir_dim L = ir_dim_sym(1), a, b, c;
	ck_assert(ir_sym_offset(g, L, -4, &a));                  /* unused */
	ck_assert(ir_sym_minmax(g, IR_SYM_MIN, L, ir_dim_const(4), &b));  /* used */
	ck_assert(ir_sym_floor(g, L, 1, 0, 3, &c));              /* pinned below */
	x->shape.d[1] = b;
	g->sym_pin[ir_dim_one_sym(c)] = 2;
	ir_sym_gc(g);
	ck_assert_int_eq(g->nsyms, 4);
	ck_assert_str_eq(g->syms[2], "min_L_4");
	ck_assert_str_eq(g->syms[3], "L_div3");
	ck_assert(ir_dim_eq(x->shape.d[1], ir_dim_sym(2)));
	ck_assert_ptr_null(ir_sym_noncanonical(g, 2));
	ck_assert_ptr_null(ir_sym_noncanonical(g, 3));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ir_sym");
	TCase *tc = tcase_create("ir_sym");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, floor_canonical);
	tcase_add_test(tc, values_and_least);
	tcase_add_test(tc, unify_two_symbols);
	tcase_add_test(tc, unify_with_constant);
	tcase_add_test(tc, link_drop);
	tcase_add_test(tc, pin_derived);
	tcase_add_test(tc, least_value_and_at_least_links);
	tcase_add_test(tc, sums);
	tcase_add_test(tc, min_max);
	tcase_add_test(tc, unify_through_sums);
	tcase_add_test(tc, gc);
	tcase_add_test(tc, scale);
	tcase_add_test(tc, scale_unify_gc);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);     /* CK_VERBOSITY from the environment (the harness: verbose) */
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
