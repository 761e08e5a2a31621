/* pass_infer.c: shape and dtype inference, constant folding, dead-node removal.
 *
 * requires: a loaded graph: graph inputs, weights and constants have dtype
 *           and shape; nodes in topological order.
 * produces: every value has a supported dtype and a known symbolic shape
 *           (infer_node, infer_shape.c); every node whose inputs are all
 *           compile-time constants is folded away (infer_fold, infer_fold.c),
 *           so exporters' Shape/Gather/Concat arithmetic is gone and
 *           shape-determining inputs are constants; Slice parameters are in
 *           canonical form (infer.h); nodes whose results nobody uses are
 *           removed, and so are unused constants, weights and temporaries
 *           from the value lists; nuses/producer/ids are fresh (ir_recount).
 *           Graph outputs that fold stay as VAL_CONST outputs.  ONNX
 *           Loop/Scan, sequences, optionals, If and SequenceMap are left
 *           to the other resolving stages (resolve_claims: seq, loops;
 *           passes.h), and so is every node after one of them, its
 *           outputs unknown, until a later round: infer is the first of
 *           the rounds compile.c runs until nothing changes.  The finish
 *           (infer_finish, after seq's, which replaces sequence outputs by
 *           their tensors) checks the outputs, removes dead nodes and
 *           reports a node no round could infer.
 * breaks:   nothing.
 *
 * A node that cannot be inferred is reported and its outputs stay unknown;
 * nodes downstream of it are skipped silently, so one mistake in a model
 * gives one error, not a cascade.
 */
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* ---- value names (for the constants this pass makes) ---------------------- */

typedef struct nameset {
	const char **slot;
	size_t cap, n;
} nameset;

static size_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static int names_has(const nameset *S, const char *s)
{
	for (size_t i = str_hash(s) & (S->cap - 1);; i = (i + 1) & (S->cap - 1)) {
		if (!S->slot[i])
			return 0;
		if (strcmp(S->slot[i], s) == 0)
			return 1;
	}
}

static void names_add(nameset *S, const char *s)
{
	if (2 * (S->n + 1) > S->cap) {
		nameset T = {calloc(S->cap * 2, sizeof *T.slot), S->cap * 2, 0};
		if (!T.slot)
			arena_oom(NULL, S->cap * 2 * sizeof *T.slot, "the table of value names");
		for (size_t i = 0; i < S->cap; i++)
			if (S->slot[i])
				names_add(&T, S->slot[i]);
		free(S->slot);
		*S = T;
	}
	size_t i = str_hash(s) & (S->cap - 1);
	while (S->slot[i])
		i = (i + 1) & (S->cap - 1);
	S->slot[i] = s;
	S->n++;
}

static void names_collect(nameset *S, const ir_graph *g)
{
	for (int i = 0; i < g->nvalues; i++)
		names_add(S, g->values[i]->name);
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			names_collect(S, g->nodes[i]->body);
}

typedef struct ictx {
	ir_graph *root;
	ir_graph *g;            /* the graph this round infers (the root or a body) */
	diag *D;
	nameset names;          /* every value name, collected on the first fresh_name */
} ictx;

/* "%NODE.WHAT" ('%' marks made-up names), with a counter if that is taken.
 * The names are collected only here, when first needed: a round runs once
 * per body and per unrolled iteration, and most never make a name. */
static const char *fresh_name(ictx *c, const ir_node *n, const char *what)
{
	if (!c->names.slot) {
		c->names = (nameset){calloc(1024, sizeof(const char *)), 1024, 0};
		if (!c->names.slot)
			arena_oom(c->root->A, 1024 * sizeof(const char *), "the table of value names");
		names_collect(&c->names, c->root);
		if (c->g != c->root)
			names_collect(&c->names, c->g); /* a body, perhaps not in the root yet (an iteration) */
	}
	const char *pre = n->name[0] == '%' ? "" : "%";
	char *s = arena_printf(c->root->A, "%s%s.%s", pre, n->name, what);
	for (int k = 2; names_has(&c->names, s); k++)
		s = arena_printf(c->root->A, "%s%s.%s%d", pre, n->name, what, k);
	names_add(&c->names, s);
	return s;
}

/* ---- checks on what the loader gave us -------------------------------------- */

static int shape_sane(const ir_shape *s)
{
	ir_dim n;
	return s->rank >= 0 && s->rank <= IR_MAX_RANK && infer_numel(s, &n);
}

static void check_sources(ictx *c)
{
	ir_graph *g = c->root;
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		const char *what = v->kind == VAL_INPUT ? "graph input" :
				   v->kind == VAL_WEIGHT ? "initializer" :
				   v->kind == VAL_CONST ? "constant" : NULL;
		if (!what)
			continue;
		if (v->seq != IR_TENSOR && v->kind == VAL_INPUT)
			diag_error(c->D, "graph input '%s' is %s; cellc resolves sequences and optionals at "
				   "compile time: bind it with --bind %s=FILE.pb (a serialized %s; `cellc verify` "
				   "binds it from each data set)", v->name, v->seq == IR_OPT ? "an optional" :
				   "a sequence", v->name, v->seq == IR_OPT ? "OptionalProto" : "SequenceProto");
		if (v->seq != IR_TENSOR)
			continue;
		if (v->kind == VAL_INPUT && !infer_dtype_ok(v->dtype))
			diag_error(c->D, "%s '%s' has dtype %s, which cellc does not support", what,
				   v->name, ir_dtype_name(v->dtype));
		else if (v->shape.rank < 0)
			diag_error(c->D, "%s '%s' has no shape", what, v->name);
		else if (!shape_sane(&v->shape))
			diag_error(c->D, "%s '%s' has shape %s, which is unknown or too large", what,
				   v->name, ir_shape_str(g->A, g, &v->shape));
		else if (v->kind != VAL_INPUT && !infer_is_const(v))
			diag_error(c->D, "%s '%s' has no data", what, v->name);
	}
}

/* ---- per node ------------------------------------------------------------------ */

/* An input whose producer failed (or that nobody could infer). */
static int poisoned(const ir_node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && (n->in[k]->shape.rank < 0 || n->in[k]->dtype == DT_UNDEF))
			return 1;
	return 0;
}

static void poison_outputs(ir_node *n)
{
	for (int k = 0; k < n->nout; k++)
		if (n->out[k]) {
			n->out[k]->shape.rank = -1;
			n->out[k]->dtype = DT_UNDEF;
		}
}

/* Whether v already is a VAL_CONST i64 with data. */
static int plain_i64(const ir_value *v) { return v && v->kind == VAL_CONST && v->dtype == DT_I64 && v->data; }

/* Slice parameters in the canonical form promised in infer.h. */
static void canon_slice(ictx *c, ir_graph *g, ir_node *n)
{
	int r = n->in[0]->shape.rank;
	ir_value *st = n->in[1], *en = n->in[2];
	ir_value *ax = n->nin > 3 ? n->in[3] : NULL, *sp = n->nin > 4 ? n->in[4] : NULL;
	int m = (int)ir_shape_const_numel(&st->shape);      /* <= IR_MAX_RANK: infer checked */
	int64_t v[4][IR_MAX_RANK];
	int canon = plain_i64(st) && plain_i64(en) && plain_i64(ax) && plain_i64(sp);
	for (int i = 0; i < m; i++) {
		ir_dim s = infer_elem_dim(st, i), e = infer_elem_dim(en, i);
		v[2][i] = ax ? infer_elem_int(ax, i) : i;
		if (v[2][i] < 0) {
			v[2][i] += r;
			canon = 0;
		}
		/* a symbolic bound as the constant one infer took it for (it
		 * accepted only those: infer_slice_sym_bound) */
		ir_dim D = n->in[0]->shape.d[v[2][i]];
		v[0][i] = s.k, v[1][i] = e.k;
		if (!infer_mono_is_const(s) && !infer_slice_sym_bound(g, D, s, &v[0][i]))
			v[0][i] = INT64_MAX;
		if (!infer_mono_is_const(e) && !infer_slice_sym_bound(g, D, e, &v[1][i]))
			v[1][i] = INT64_MAX;
		v[3][i] = sp ? infer_elem_int(sp, i) : 1;
	}
	if (canon)
		return;
	static const char *const what[4] = {"starts", "ends", "axes", "steps"};
	ir_value **in = arena_array(g->A, 5, sizeof *in);
	in[0] = n->in[0];
	for (int k = 0; k < 4; k++) {
		ir_value *old = k + 1 < n->nin ? n->in[k + 1] : NULL;
		in[k + 1] = plain_i64(old) && (k != 2 || memcmp(v[2], old->data, (size_t)m * 8) == 0) ?
			    old : ir_const_i64(g, fresh_name(c, n, what[k]), m, v[k]);
	}
	n->in = in;
	n->nin = 5;
}

static void infer_body(ictx *c, ir_graph *b);

typedef struct nodelist {
	ir_node **v;
	int n, cap;
} nodelist;

static void nl_push(ir_graph *g, nodelist *l, ir_node *n)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 64;
		l->v = arena_grow(g->A, l->v, (size_t)l->n, (size_t)cap, sizeof *l->v);
		l->cap = cap;
	}
	l->v[l->n++] = n;
}

static void infer_nodes(ictx *c, ir_graph *g, int fold);

/* The body's inputs against the recurrence's: a sequence input without its
 * time axis (of T steps), a state as given, the step counters f32 scalars,
 * the lengths i32[B].  1 after reporting. */
static int check_body_inputs(ir_graph *g, ir_node *n, diag *D, ir_dim T)
{
	int64_t nst = ir_attr_int(n, "n_state", -1);
	ir_attr *sa = ir_attr_find(n, "seq_axis");
	const ir_value *x = n->in[0];
	int ax_in = (int)sa->ints[0];
	int64_t ns = sa->n;
	for (int k = 0; k < n->body->ninputs && k < n->nin && k < ns + nst; k++) {
		/* body inputs: a sequence input without its time axis; a state as given */
		const ir_value *v = n->in[k], *bi = n->body->inputs[k];
		if (!v)
			continue;
		ir_shape s = v->shape;
		if (k < ns) {
			int ax = (int)sa->ints[k];
			if (s.rank < 1 || ax < 0 || ax >= s.rank || !ir_dim_eq(s.d[ax], T)) {
				diag_node(D, n, "sequence input %d ('%s') has no time axis %d of %s steps", k,
					  v->name, ax, ir_shape_str(g->A, g, &x->shape));
				return 1;
			}
			for (int i = ax; i + 1 < s.rank; i++)
				s.d[i] = s.d[i + 1];
			s.rank--;
		}
		if (!bi || bi->dtype != v->dtype || !ir_shape_eq(&bi->shape, &s)) {
			diag_node(D, n, "body input %d ('%s') is stated as %s%s but input '%s' gives %s%s", k,
				  bi ? bi->name : "_", bi ? ir_dtype_name(bi->dtype) : "?",
				  bi ? ir_shape_str(g->A, g, &bi->shape) : "", v->name,
				  ir_dtype_name(v->dtype), ir_shape_str(g->A, g, &s));
			return 1;
		}
	}
	for (int k = (int)(ns + nst); k < n->body->ninputs; k++) {
		/* the step counters (has_step) */
		const ir_value *bi = n->body->inputs[k];
		if (!bi || bi->dtype != DT_F32 || bi->shape.rank != 0) {
			diag_node(D, n, "body input %d ('%s') is a step counter (has_step) and must be an f32 "
				  "scalar", k, bi ? bi->name : "_");
			return 1;
		}
	}
	if (ir_attr_int(n, "has_lens", 0) && n->nin > ns + nst) {
		/* sequence_lens: one int32 per batch row */
		const ir_value *l = n->in[n->nin - 1];
		ir_dim B = x->shape.d[ax_in == 0 ? 1 : 0];
		if (!l || l->dtype != DT_I32 || l->shape.rank != 1 || x->shape.rank < 2 ||
		    !ir_dim_eq(l->shape.d[0], B)) {
			diag_node(D, n, "the lengths input '%s' must be i32[%s] (one length per batch row)",
				  l ? l->name : "_", ir_dim_str(g->A, g, B));
			return 1;
		}
	}
	return 0;
}

/* A recurrence's output types follow from its body (states: the body's
 * state output; per-step outputs: the body's output with the time axis of
 * the first sequence input inserted at out_axis).  Types already there (the
 * annotation of native text, or whoever built the node) are checked against
 * them, never trusted: a wrong one would size the output buffers. */
static int infer_recurrence(ir_graph *g, ir_node *n, diag *D)
{
	int64_t nst = ir_attr_int(n, "n_state", -1);
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	const ir_value *x = n->nin ? n->in[0] : NULL;
	if (!n->body || !x || !sa || sa->kind != ATTR_INTS || sa->n < 1 || nst < 0 ||
	    n->body->noutputs != n->nout) {
		diag_node(D, n, "malformed recurrence (body, first sequence input or attributes missing)");
		return 1;
	}
	int ax_in = (int)sa->ints[0];
	if (x->shape.rank < 2 || ax_in < 0 || ax_in >= x->shape.rank) {
		diag_node(D, n, "sequence input '%s' has no time axis %d", x->name, ax_in);
		return 1;
	}
	ir_dim T = x->shape.d[ax_in];
	if (check_body_inputs(g, n, D, T))
		return 1;
	int64_t ns = sa->n;
	for (int k = 0; k < nst && ns + k < n->body->ninputs && k < n->body->noutputs; k++) {
		/* a state's next value has the type of the state */
		const ir_value *bi = n->body->inputs[ns + k], *bo = n->body->outputs[k];
		if (bi && bo && bo->shape.rank >= 0 &&
		    (bi->dtype != bo->dtype || !ir_shape_eq(&bi->shape, &bo->shape))) {
			diag_node(D, n, "state %d: the body reads %s%s ('%s') and writes %s%s ('%s')", k,
				  ir_dtype_name(bi->dtype), ir_shape_str(g->A, g, &bi->shape), bi->name,
				  ir_dtype_name(bo->dtype), ir_shape_str(g->A, g, &bo->shape), bo->name);
			return 1;
		}
	}
	for (int k = 0; k < n->nout; k++) {
		ir_value *o = n->out[k], *b = n->body->outputs[k];
		if (!b || b->shape.rank < 0 || !infer_dtype_ok(b->dtype)) {
			diag_node(D, n, "body output %d ('%s') has no known type", k, b ? b->name : "_");
			return 1;
		}
		ir_shape s = b->shape;
		if (k >= nst) {
			int ax = oa && oa->kind == ATTR_INTS && k - nst < oa->n ? (int)oa->ints[k - nst] : 0;
			if (b->shape.rank >= IR_MAX_RANK || ax < 0 || ax > b->shape.rank) {
				diag_node(D, n, "per-step output %d ('%s') cannot take a time axis at %d", k,
					  b->name, ax);
				return 1;
			}
			s.rank = b->shape.rank + 1;
			for (int i = 0, j = 0; i < s.rank; i++)
				s.d[i] = i == ax ? T : b->shape.d[j++];
		}
		if (!o)
			continue;
		if (o->shape.rank >= 0 && (o->dtype != b->dtype || !ir_shape_eq(&o->shape, &s))) {
			diag_node(D, n, "output %d ('%s') is stated as %s%s but the body gives %s%s", k,
				  o->name, ir_dtype_name(o->dtype), ir_shape_str(g->A, g, &o->shape),
				  ir_dtype_name(b->dtype), ir_shape_str(g->A, g, &s));
			return 1;
		}
		o->dtype = b->dtype;
		o->shape = s;
	}
	return 0;
}

/* A node another resolving stage rewrites, or one after it: left for a
 * later round, its tensor outputs unknown (sequences and optionals are
 * seq's business). */
static void leave_pending(ir_node *n)
{
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && n->out[k]->seq == IR_TENSOR) {
			n->out[k]->shape.rank = -1;
			n->out[k]->dtype = DT_UNDEF;
		}
}

/* An input not settled yet: a sequence or optional that seq has not
 * resolved (a pending Loop's, or one seq leaves to loops). */
static int unsettled(const ir_node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->seq != IR_TENSOR && !n->in[k]->resolved)
			return 1;
	return 0;
}

/* Infers (and folds) one node of g; the nodes that stay go to keep. */
static void infer_one(ictx *c, ir_graph *g, ir_node *n, int fold, nodelist *keep)
{
	nl_push(g, keep, n);
	if (n->op == OP_RECURRENCE) {
		int errs0 = c->D->nerrors;
		if (n->body)
			infer_body(c, n->body);
		if (c->D->nerrors != errs0 || poisoned(n) || infer_recurrence(g, n, c->D))
			poison_outputs(n);
		return;
	}
	if (resolve_claims(n) || unsettled(n)) {
		leave_pending(n);
		return;
	}
	int r;
	/* INFER_AGAIN: two sizes were made one, a symbol fewer (ir_sym_unify):
	 * the node is inferred again with the shapes rewritten */
	while ((r = poisoned(n) ? 1 : infer_node(g, n, c->D)) == INFER_AGAIN)
		;
	if (r) {
		poison_outputs(n);
		return;
	}
	r = fold ? infer_fold(g, n, c->D) : 0;
	if (r == 1) {
		keep->n--;
		return;
	}
	/* a symbolic constant that a run-time node reads as data (an index
	 * T - 1, a length to divide by) is printed as a local of the function
	 * that reads it (emit.c: print_sym_consts) */
	if (r == 0 && n->op == OP_SLICE)
		canon_slice(c, g, n);
	if (r < 0)
		poison_outputs(n);
}

/* Infers and folds the nodes of g in order; folded nodes are dropped. */
static void infer_nodes(ictx *c, ir_graph *g, int fold)
{
	nodelist keep = {0};
	ir_node *none[1] = {NULL};      /* memcpy wants a pointer even for 0 nodes */
	for (int i = 0; i < g->nnodes; i++)
		infer_one(c, g, g->nodes[i], fold, &keep);
	ir_set_nodes(g, keep.n ? keep.v : none, keep.n);
}

/* Body graphs: infer only; their inputs were given shapes by whoever built them. */
static void infer_body(ictx *c, ir_graph *b) { infer_nodes(c, b, 0); }

/* ---- the pass ------------------------------------------------------------------------ */

/* One round: the root graph checked, inferred and folded; a body graph (a
 * Loop's, an unrolled iteration) inferred and folded. */
int pass_infer(ir_graph *g, diag *D, int *changed)
{
	*changed = 0;
	int errs0 = D->nerrors;
	ictx c = {ir_root(g), g, D, {0}};
	if (!g->parent)
		check_sources(&c);
	if (D->nerrors == errs0) {
		ir_recount(g);
		ir_root(g)->unify_ok = 1;
		infer_nodes(&c, g, 1);
		ir_root(g)->unify_ok = 0;
	}
	free(c.names.slot);
	ir_recount(g);
	return D->nerrors - errs0;
}

/* A node whose outputs no round could determine (its inputs hang on a
 * structure the other stages left, reported by them if they could). */
static int check_settled(ir_graph *g, diag *D)
{
	int errs = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->body && n->op == OP_RECURRENCE)
			errs += check_settled(n->body, D);
		for (int k = 0; k < n->nout && !errs; k++)
			if (n->out[k] && n->out[k]->seq == IR_TENSOR &&
			    (n->out[k]->shape.rank < 0 || n->out[k]->dtype == DT_UNDEF)) {
				diag_node(D, n, "output '%s' could not be determined at compile time: it depends "
					  "on a %s that cellc could not resolve", n->out[k]->name,
					  resolve_claims(n) ? ir_op_name(n->op) : "Loop, sequence or If");
				errs++;
			}
	}
	return errs;
}

/* Weights folded from one weight through Identity hold its data (infer_fold.c:
 * fold_same_order): every read of one of them reads the first.  PyTorch
 * writes an Identity of a shared initializer per call of a module, so the
 * steps of a traced loop that calls a module at every step read one
 * weight again, as pass_reroll's matching wants, and the weights file
 * holds it once.  Weights that only have equal contents stay apart (two
 * layers that start equal are two parameters), and so do scalars. */
static void one_value_per_weight(ir_graph *g)
{
	ir_value **seen = arena_array(g->A, (size_t)g->nvalues + 1, sizeof *seen);
	int nseen = 0;
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		/* (a scalar stays one value per read: a per-step coefficient that
		 * repeats, a NAG schedule's restart, is still read at each step
		 * from its own value, as pass_canon's step scalars want) */
		if (v->kind != VAL_WEIGHT || !v->data || v->is_output || ir_shape_const_numel(&v->shape) < 2)
			continue;
		int j = 0;
		for (; j < nseen; j++) {
			ir_value *w = seen[j];
			if (w->data == v->data && w->dtype == v->dtype && w->narrow == v->narrow && w->frozen == v->frozen &&
			    ir_shape_eq(&w->shape, &v->shape)) {
				ir_replace_uses(g, v, w, NULL, IR_USES_NESTED | IR_USES_GRAPHS | IR_USES_OUTPUTS);
				break;
			}
		}
		if (j == nseen)
			seen[nseen++] = v;
	}
}

int infer_finish(ir_graph *g, diag *D)
{
	int errs0 = D->nerrors;
	for (int i = 0; i < g->noutputs; i++) {
		ir_value *v = g->outputs[i];
		if (v->shape.rank < 0 || !infer_dtype_ok(v->dtype))
			diag_error(D, "graph output '%s' has no known shape or dtype", v->name);
	}
	if (D->nerrors == errs0) {
		one_value_per_weight(g);
		/* nodes whose outputs nobody uses, then values nobody refers to */
		ir_recount(g);
		ir_drop_dead(g, IR_DEAD_BODIES | IR_DEAD_VALUES);
		check_settled(g, D);
	}
	ir_recount(g);
	return D->nerrors - errs0;
}
