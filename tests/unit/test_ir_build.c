/* test_ir_build.c: Check tests of compiler/ir/ir_build.c, the IR rewrite
 * toolkit: ir_replace_uses and its options, ir_drop_dead in its counted and
 * local forms (and their options), ir_live, the node builder (outputs,
 * provenance, inference as it builds, a failure reported and counted),
 * ir_clone_node (every attribute carried, an array of its own unless
 * shared), ir_rewrite_nodes (nodes replaced in place) and ir_inline_step (a recurrence of one step as its step's
 * nodes, and what it refuses).  Small graphs built by hand; linked with the compiler's objects
 * as build/cellc is (tests/tests.mk).
 */
#include <check.h>
#include <string.h>

#include "infer.h"
#include "ir.h"
#include "ir_build.h"

static arena A;

static void setup(void)
{
	arena_init(&A);
	ir_names_reset();
}

static void teardown(void)
{
	ir_names_reset();
	arena_free(&A);
}

/* A f32 graph input of shape [2, 3]. */
static ir_value *input(ir_graph *g, const char *name)
{
	ir_value *v = ir_value_new(g, name, VAL_INPUT, DT_F32);
	v->shape.rank = 2;
	v->shape.d[0] = ir_dim_const(2);
	v->shape.d[1] = ir_dim_const(3);
	g->inputs = arena_grow(&A, g->inputs, (size_t)g->ninputs, (size_t)g->ninputs + 1, sizeof *g->inputs);
	g->inputs[g->ninputs++] = v;
	return v;
}

static void output(ir_graph *g, ir_value *v)
{
	g->outputs = arena_grow(&A, g->outputs, (size_t)g->noutputs, (size_t)g->noutputs + 1, sizeof *g->outputs);
	g->outputs[g->noutputs++] = v;
	v->is_output = 1;
}

static const ir_build plain = {0};

/* y = op(a[, b]) appended to g, not inferred. */
static ir_value *op(ir_graph *g, ir_op o, ir_value *a, ir_value *b)
{
	ir_value *in[2] = {a, b};
	return ir_build_op(&plain, g, o, b ? 2 : 1, in);
}

/* A recurrence-shaped node of the root with a body whose one node reads
 * the root value `cap`: the body's output is Neg(cap). */
static ir_node *with_body(ir_graph *g, ir_value *cap, ir_graph **body)
{
	ir_graph *b = ir_graph_new(&A, g, "body");
	ir_value *y = op(b, OP_NEG, cap, NULL);
	output(b, y);
	ir_node *r = ir_node_new(g, OP_RECURRENCE, "rec", 0, 1);
	r->body = b;
	r->out[0] = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
	ir_append(g, r);
	*body = b;
	return r;
}

/* ---- ir_replace_uses ---- */

START_TEST(replace_plain_nested_outputs)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main"), *b;
	ir_value *x = input(g, "x"), *z = input(g, "z");
	ir_value *y = op(g, OP_RELU, x, NULL);
	ir_value *w = op(g, OP_ADD, x, y);
	with_body(g, x, &b);
	output(g, x);
	/* only g's own nodes, not the body, not the output list */
	ck_assert_int_eq(ir_replace_uses(g, x, z, NULL, 0), 2);
	ck_assert_ptr_eq(y->producer->in[0], z);
	ck_assert_ptr_eq(w->producer->in[0], z);
	ck_assert_ptr_eq(b->nodes[0]->in[0], x);
	ck_assert_ptr_eq(g->outputs[0], x);
	/* the body's read, then the output list */
	ck_assert_int_eq(ir_replace_uses(g, x, z, NULL, IR_USES_NESTED), 1);
	ck_assert_ptr_eq(b->nodes[0]->in[0], z);
	ck_assert_int_eq(ir_replace_uses(g, x, z, NULL, IR_USES_OUTPUTS), 1);
	ck_assert_ptr_eq(g->outputs[0], z);
	ck_assert_int_eq(x->is_output, 1);  /* flags are the caller's */
}
END_TEST

START_TEST(replace_except_and_graphs)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_value *x = input(g, "x"), *z = input(g, "z");
	ir_value *y = op(g, OP_RELU, x, NULL);
	ir_value *w = op(g, OP_NEG, x, NULL);
	/* an If-like node holding a graph that reads x */
	ir_graph *br = ir_graph_new(&A, g, "then");
	op(br, OP_ABS, x, NULL);
	ir_node *iff = ir_node_new(g, OP_IDENTITY, "holder", 1, 1);
	iff->in[0] = z;
	ir_attr_add(iff, "then_branch", ATTR_GRAPH)->g = br;
	iff->out[0] = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
	ir_append(g, iff);
	ck_assert_int_eq(ir_replace_uses(g, x, z, w->producer, IR_USES_NESTED), 1);
	ck_assert_ptr_eq(y->producer->in[0], z);
	ck_assert_ptr_eq(w->producer->in[0], x);        /* the exception */
	ck_assert_ptr_eq(br->nodes[0]->in[0], x);       /* graph attributes: not asked */
	ck_assert_int_eq(ir_replace_uses(g, x, z, NULL, IR_USES_GRAPHS), 2);
	ck_assert_ptr_eq(br->nodes[0]->in[0], z);
	ck_assert_ptr_eq(w->producer->in[0], z);
}
END_TEST

/* ---- ir_drop_dead, counted ---- */

/* x -> a -> b -> c (c unread), x -> d (an output) */
static ir_graph *chain(ir_value **a, ir_value **bb, ir_value **c, ir_value **d)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_value *x = input(g, "x");
	*a = op(g, OP_RELU, x, NULL);
	*bb = op(g, OP_NEG, *a, NULL);
	*c = op(g, OP_ABS, *bb, NULL);
	*d = op(g, OP_EXP, x, NULL);
	output(g, *d);
	return g;
}

START_TEST(dead_counted_fixpoint)
{
	ir_value *a, *b, *c, *d;
	ir_graph *g = chain(&a, &b, &c, &d);
	ir_recount(g);
	ck_assert_int_eq(ir_drop_dead(g, 0), 3);
	ck_assert_int_eq(g->nnodes, 1);
	ck_assert_ptr_eq(g->nodes[0], d->producer);
	ck_assert_int_eq(g->nodes[0]->id, 0);
	ck_assert_ptr_null(a->producer);        /* as ir_recount would leave it */
	ck_assert_int_eq(g->inputs[0]->nuses, 1);
	ck_assert_int_eq(g->nvalues, 5);        /* no value option: the list stays */
}
END_TEST

START_TEST(dead_counted_once)
{
	ir_value *a, *b, *c, *d;
	ir_graph *g = chain(&a, &b, &c, &d);
	ir_recount(g);
	ck_assert_int_eq(ir_drop_dead(g, IR_DEAD_ONCE), 1);     /* c only */
	ck_assert_int_eq(g->nnodes, 3);
	ck_assert_int_eq(b->nuses, 0);          /* taken off: the next sweep takes b */
	ck_assert_int_eq(ir_drop_dead(g, IR_DEAD_ONCE), 1);
	ck_assert_int_eq(ir_drop_dead(g, 0), 1);
	ck_assert_int_eq(g->nnodes, 1);
}
END_TEST

START_TEST(dead_counted_bodies_and_temps)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main"), *b;
	ir_value *x = input(g, "x");
	ir_value *p = op(g, OP_RELU, x, NULL);  /* read only by the body */
	ir_node *r = with_body(g, p, &b);
	ir_value *d = op(g, OP_EXP, x, NULL);
	output(g, d);
	ir_recount(g);
	/* a node with a body stays by default, and keeps what its body reads */
	ck_assert_int_eq(ir_drop_dead(g, 0), 0);
	ck_assert_int_eq(g->nnodes, 3);
	/* IR_DEAD_BODIES: the unread recurrence goes, its capture with it */
	int nv = g->nvalues;
	ck_assert_int_eq(ir_drop_dead(g, IR_DEAD_BODIES | IR_DEAD_TEMPS), 2);
	ck_assert_int_eq(g->nnodes, 1);
	ck_assert_int_eq(p->nuses, 0);
	ck_assert_int_eq(g->nvalues, nv - 2);   /* p and the recurrence's output */
	for (int i = 0; i < g->nvalues; i++) {
		ck_assert_ptr_ne(g->values[i], p);
		ck_assert_ptr_ne(g->values[i], r->out[0]);
		ck_assert_int_eq(g->values[i]->id, i);
	}
}
END_TEST

START_TEST(dead_values_option)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_value *x = input(g, "x");
	input(g, "unread_input");
	ir_value *k = ir_const_f32_scalar(g, "k", 2.0f);
	ir_value *unused = ir_const_f32_scalar(g, "unused", 3.0f);
	ir_value *held = ir_const_f32_scalar(g, "held", 4.0f);
	ir_value *y = op(g, OP_MUL, x, k);
	ir_attr_add(y->producer, "value", ATTR_TENSOR)->t = held;
	output(g, y);
	ir_recount(g);
	/* TEMPS leaves constants alone */
	ck_assert_int_eq(ir_drop_dead(g, IR_DEAD_TEMPS), 0);
	ck_assert_int_eq(g->nvalues, 6);
	ck_assert_int_eq(ir_drop_dead(g, IR_DEAD_VALUES), 0);
	ck_assert_int_eq(g->nvalues, 5);        /* the unused constant only */
	for (int i = 0; i < g->nvalues; i++)
		ck_assert_ptr_ne(g->values[i], unused);
}
END_TEST

/* ---- ir_drop_dead, local; ir_live ---- */

START_TEST(dead_local_body)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_graph *b = ir_graph_new(&A, g, "body");
	ir_value *s = ir_value_new(b, "s", VAL_STEP, DT_F32);
	s->shape.rank = 0;
	ir_value *u = op(b, OP_NEG, s, NULL);
	ir_value *v = op(b, OP_RELU, u, NULL);
	ir_value *dead = op(b, OP_ABS, s, NULL);
	ir_node *sink = ir_node_new(b, OP_IDENTITY, "sink", 1, 0);
	sink->in[0] = s;
	ir_append(b, sink);
	output(b, v);
	v->is_output = 0;       /* local: the list counts, not the flag */
	dead->nuses = 5;        /* nor the counts */
	char *live, *need;
	ir_live(b, NULL, 0, 0, &live, &need);
	ck_assert(live[0] && live[1] && !live[2] && !live[3]);
	ck_assert(need[u->id] && need[s->id]);
	ir_live(b, &dead, 1, IR_DEAD_SINKS, &live, NULL);
	ck_assert(live[2] && live[3]);
	ck_assert_int_eq(ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_SINKS), 1);
	ck_assert_int_eq(b->nnodes, 3);
	ck_assert_int_eq(dead->nuses, 5);       /* nothing of the values changed */
	ck_assert_ptr_nonnull(dead->producer);
	ck_assert_int_eq(ir_drop_dead(b, IR_DEAD_LOCAL), 1);    /* the sink */
	ck_assert_int_eq(ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_VALUES), 0);
	ck_assert_int_eq(b->nvalues, 3);        /* s (read), u, v; dead's result went */
}
END_TEST

START_TEST(dead_values_only)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_graph *b = ir_graph_new(&A, g, "body");
	ir_value *s = ir_value_new(b, "s", VAL_STEP, DT_F32);
	ir_value *stray = ir_value_new(b, "stray", VAL_STEP, DT_F32);
	ir_value *y = op(b, OP_NEG, s, NULL);
	op(b, OP_ABS, s, NULL);                 /* dead, but stays */
	output(b, y);
	b->inputs = arena_array(&A, 1, sizeof *b->inputs);
	b->inputs[b->ninputs++] = s;
	ck_assert_int_eq(ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_VALUES | IR_DEAD_VALUES_ONLY), 0);
	ck_assert_int_eq(b->nnodes, 2);
	ck_assert_int_eq(b->nvalues, 3);
	for (int i = 0; i < b->nvalues; i++)
		ck_assert_ptr_ne(b->values[i], stray);
}
END_TEST

/* ---- building nodes ---- */

START_TEST(build_infers_as_it_builds)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	g->opset = 17;
	ir_value *x = input(g, "x"), *z = input(g, "z");
	diag D;
	diag_init(&D, "test");
	D.quiet = 1;
	int errors = 0;
	ir_build B = {.origin = "cell 'h'", .opset = 13, .D = &D, .what = "lowered", .errors = &errors};
	ir_value *in[2] = {x, z};
	ir_value *y = ir_build_op(&B, g, OP_ADD, 2, in);
	ir_node *n = y->producer;
	ck_assert_int_eq(g->nnodes, 1);
	ck_assert_ptr_eq(g->nodes[0], n);
	ck_assert_int_eq(y->kind, VAL_TEMP);
	ck_assert_int_eq(y->dtype, DT_F32);
	ck_assert_int_eq(y->shape.rank, 2);
	ck_assert_int_eq(y->shape.d[1].k, 3);
	ck_assert_str_eq(n->origin, "cell 'h'");
	ck_assert_int_eq(n->opset, 13);
	ck_assert_int_eq(errors, 0);
	/* a node with attributes, finished into a given output */
	ir_node *t = ir_build_node(&B, g, OP_TRANSPOSE, 1, &y, 1);
	ck_assert_int_eq(g->nnodes, 1);         /* not appended yet */
	int64_t perm[2] = {1, 0};
	ir_attr_set_ints(t, "perm", 2, perm);
	ir_value *want = ir_value_new(g, "yt", VAL_TEMP, DT_F32);
	ck_assert_ptr_eq(ir_build_done(&B, t, want), want);
	ck_assert_ptr_eq(want->producer, t);
	ck_assert_int_eq(want->shape.d[0].k, 3);
	/* a failure is reported on the node blamed and counted */
	ir_value *bad = ir_value_new(g, "bad", VAL_INPUT, DT_F32);
	bad->shape.rank = 1;
	bad->shape.d[0] = ir_dim_const(4);
	ir_value *in2[2] = {x, bad};
	ir_build_op(&B, g, OP_ADD, 2, in2);
	ck_assert_int_eq(errors, 1);
	ck_assert_ptr_nonnull(strstr(D.last, "internal error: cannot infer the shape of the lowered Add"));
	/* without D: no inference, names from out_base */
	ir_build F = {.out_base = "loop"};
	ir_node *c = ir_build_node(&F, g, OP_RELU, 1, &x, 1);
	ir_value *o = ir_build_out(&F, c, 0, DT_F32);
	ck_assert_ptr_eq(c->out[0], o);
	ck_assert_ptr_eq(o->producer, c);
	ck_assert_ptr_nonnull(strstr(o->name, "loop"));
	ck_assert_int_eq(c->opset, 17);         /* the root's */
	ir_build_done(&F, c, NULL);
	ck_assert_int_eq(o->shape.rank, -1);
}
END_TEST

/* ---- cloning ---- */

START_TEST(clone_carries_every_attribute)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_value *x = input(g, "x"), *w = input(g, "w");
	ir_node *m = ir_node_new(g, OP_GEMM, "mm", 2, 1);
	m->in[0] = x;
	m->in[1] = w;
	m->op_type = "MatMulLike";
	m->opset = 9;
	m->origin = "torch.mm";
	ir_attr_set_int(m, "transB", 1);
	ir_attr_set_float(m, "beta", 0.0);
	ir_attr_set_float(m, "alpha", 2.0);
	ir_node *c = ir_clone_node(g, m, NULL, -1, 0);
	ck_assert_int_eq(c->op, OP_GEMM);
	ck_assert_int_eq(c->nin, 2);
	ck_assert_int_eq(c->nout, 1);
	ck_assert_ptr_eq(c->in[1], w);
	ck_assert_ptr_null(c->out[0]);
	ck_assert_str_eq(c->origin, "torch.mm");
	ck_assert_str_eq(c->op_type, "Gemm");   /* ir_node_new's without IR_CLONE_SOURCE */
	ck_assert_int_eq(c->nattrs, 3);
	ck_assert_int_eq(ir_attr_int(c, "transB", 0), 1);
	ck_assert(ir_attr_float(c, "beta", 1.0f) == 0.0f);
	ck_assert(ir_attr_float(c, "alpha", 1.0f) == 2.0f);
	/* its own array: a change to the clone leaves the source alone */
	ck_assert_ptr_ne(c->attrs, m->attrs);
	ir_attr_set_float(c, "beta", 1.0);
	ir_attr_remove(c, "alpha");
	ck_assert(ir_attr_float(m, "beta", 1.0f) == 0.0f);
	ck_assert_int_eq(m->nattrs, 3);
	/* shared, with the source's spelling */
	ir_node *s = ir_clone_node(g, m, "copy", 2, IR_CLONE_SOURCE | IR_CLONE_SHARE_ATTRS);
	ck_assert_ptr_eq(s->attrs, m->attrs);
	ck_assert_int_eq(s->nout, 2);
	ck_assert_str_eq(s->name, "copy");
	ck_assert_str_eq(s->op_type, "MatMulLike");
	ck_assert_int_eq(s->opset, 9);
}
END_TEST

/* ---- a recurrence of one step as its step ---- */

/* A recurrence over x [T, 2, 3] (time axis 0) with one state [2, 3] that
 * starts at `init` (NULL: zeros): s' = (x_t + s) * k with k a constant the
 * body owns, the per-step output y_t = s'. */
static ir_node *one_step_rec(ir_graph *g, int64_t T, ir_value *init, ir_graph **body)
{
	ir_value *x = ir_value_new(g, "x", VAL_INPUT, DT_F32);
	x->shape.rank = 3;
	x->shape.d[0] = ir_dim_const(T);
	x->shape.d[1] = ir_dim_const(2);
	x->shape.d[2] = ir_dim_const(3);
	ir_graph *b = ir_graph_new(&A, g, "body");
	ir_value *xt = input(b, "xt"), *st = input(b, "st");
	xt->kind = st->kind = VAL_STEP;
	ir_value *k = ir_const_f32_scalar(b, "k", 0.5f);
	ir_value *s2 = op(b, OP_MUL, op(b, OP_ADD, xt, st), k);
	output(b, s2);
	output(b, s2);
	ir_node *r = ir_node_new(g, OP_RECURRENCE, "rec", 2, 2);
	r->in[0] = x;
	r->in[1] = init;
	r->body = b;
	for (int j = 0; j < 2; j++)
		r->out[j] = ir_value_new(g, j ? "ys" : "final", VAL_TEMP, DT_F32);
	r->out[0]->shape = st->shape;
	r->out[1]->shape = x->shape;
	int64_t ax = 0;
	ir_attr_set_int(r, "n_seq", 1);
	ir_attr_set_int(r, "n_state", 1);
	ir_attr_set_int(r, "n_out", 1);
	ir_attr_set_ints(r, "seq_axis", 1, &ax);
	ir_attr_set_ints(r, "out_axis", 1, &ax);
	*body = b;
	return r;
}

START_TEST(inline_one_step)
{
	diag D;
	diag_init(&D, NULL);
	D.quiet = 1;
	ir_graph *g = ir_graph_new(&A, NULL, "main"), *b;
	ir_node *r = one_step_rec(g, 1, NULL, &b);
	ck_assert(ir_inline_step_ok(g, r));
	int errors = 0;
	ir_build B = {.origin = "one step", .D = &D, .errors = &errors};
	ck_assert_int_eq(ir_inline_step(&B, g, r), 0);
	ck_assert_int_eq(errors, 0);
	/* Squeeze of x, zeros for the state, Add, Mul, the final state's
	 * Identity, the stacked output's Unsqueeze; r is not appended */
	static const ir_op want[] = {OP_SQUEEZE, OP_CONSTOFSHAPE, OP_ADD, OP_MUL, OP_IDENTITY, OP_UNSQUEEZE};
	ck_assert_int_eq(g->nnodes, 6);
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(g->nodes[i]->op, want[i]);
		ck_assert_ptr_eq(g->nodes[i]->graph, g);
		ck_assert_str_eq(g->nodes[i]->origin, "one step");
	}
	/* the step's nodes read root values only: the body's constant is copied */
	ir_value *k = g->nodes[3]->in[1];
	ck_assert_ptr_eq(k->graph, g);
	ck_assert(*(const float *)k->data == 0.5f);
	/* r's outputs are written by the new nodes, with their shapes */
	ck_assert_ptr_eq(r->out[0]->producer, g->nodes[4]);
	ck_assert_ptr_eq(g->nodes[4]->in[0], g->nodes[3]->out[0]);
	ck_assert_ptr_eq(r->out[1]->producer, g->nodes[5]);
	ck_assert_int_eq(r->out[1]->shape.rank, 3);
	ck_assert_int_eq(r->out[1]->shape.d[0].k, 1);
	ck_assert_int_eq(g->nodes[2]->out[0]->shape.rank, 2);
}
END_TEST

START_TEST(inline_one_step_refused)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main"), *b;
	ir_value *h = input(g, "h");
	ck_assert(!ir_inline_step_ok(g, one_step_rec(g, 2, h, &b)));        /* two steps */
	ir_node *r = one_step_rec(g, 1, h, &b);
	ck_assert(ir_inline_step_ok(g, r));
	ir_attr_set_int(r, "has_lens", 1);                                  /* sequence_lens */
	ck_assert(!ir_inline_step_ok(g, r));
	r = one_step_rec(g, 1, h, &b);
	ir_graph *inner;
	ir_node *nested = with_body(b, h, &inner);                          /* a body in the body */
	(void)nested;
	ck_assert(!ir_inline_step_ok(g, r));
}
END_TEST

/* Relu nodes become Neg then Abs; the others stay. */
static int relu_to_neg_abs(ir_graph *g, ir_node *n, void *ctx)
{
	(void)ctx;
	if (n->op != OP_RELU)
		return -1;
	ir_value *y = op(g, OP_NEG, n->in[0], NULL);
	ir_node *a = ir_build_node(&plain, g, OP_ABS, 1, &y, 1);
	n->out[0]->producer = a;
	ir_build_done(&plain, a, n->out[0]);
	return 0;
}

START_TEST(rewrite_in_place)
{
	ir_graph *g = ir_graph_new(&A, NULL, "main");
	ir_value *x = input(g, "x");
	ir_value *r = op(g, OP_RELU, x, NULL);
	ir_value *e = op(g, OP_EXP, r, NULL);
	ck_assert_int_eq(ir_rewrite_nodes(g, relu_to_neg_abs, NULL), 0);
	ck_assert_int_eq(g->nnodes, 3);
	ck_assert_int_eq(g->nodes[0]->op, OP_NEG);
	ck_assert_int_eq(g->nodes[1]->op, OP_ABS);
	ck_assert_ptr_eq(g->nodes[1]->out[0], r);       /* its readers stay as they were, after it */
	ck_assert_int_eq(g->nodes[2]->op, OP_EXP);
	ck_assert_ptr_eq(g->nodes[2]->out[0], e);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ir_build");
	TCase *t = tcase_create("replace");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, replace_plain_nested_outputs);
	tcase_add_test(t, replace_except_and_graphs);
	suite_add_tcase(s, t);
	t = tcase_create("dead");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, dead_counted_fixpoint);
	tcase_add_test(t, dead_counted_once);
	tcase_add_test(t, dead_counted_bodies_and_temps);
	tcase_add_test(t, dead_values_option);
	tcase_add_test(t, dead_local_body);
	tcase_add_test(t, dead_values_only);
	suite_add_tcase(s, t);
	t = tcase_create("build");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, build_infers_as_it_builds);
	tcase_add_test(t, clone_carries_every_attribute);
	tcase_add_test(t, rewrite_in_place);
	tcase_add_test(t, inline_one_step);
	tcase_add_test(t, inline_one_step_refused);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	srunner_run_all(r, CK_ENV);     /* CK_VERBOSITY from the environment (the harness: verbose) */
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
