/* pass_hoist.c: input projections out of recurrences.
 *
 * requires: pass_lower_rnn (RECURRENCE nodes with GEMM bodies); shapes
 *           known; pass_merge before it (a merged product is hoisted whole).
 * produces (unless --no-hoist): for every RECURRENCE, a body GEMM whose A
 *   is a per-step input x_t and whose B and C are constants is computed
 *   once before the loop for all T*B rows:  Flatten(X, axis=2) [T*B, I] ->
 *   Gemm (same attributes, bias included, so pre-summed biases stay
 *   pre-summed) [T*B, N] -> Reshape [T, B, N] (or [B, T, N]: rows stay in
 *   X's order) -> a new sequence input u_t of the recurrence, with X's time
 *   axis; the body reads u_t [B, N] where it read the product.  x_t is
 *   dropped when nothing else reads it.
 * breaks:   nothing (node order stays topological; the new outer nodes come
 *           right before their recurrence).
 *
 * Why: the input projection is (usually) the larger half of an RNN's
 * arithmetic and one big GEMM is far faster than T small ones; inside the
 * loop only the recurrent product, which depends on the state, remains.
 */
#include "infer.h"
#include "ir_build.h"
#include "hoist.h"
#include "passes.h"
#include "util.h"

#include <string.h>

int hoist_initializer(const ir_value *v, const ir_graph *body)
{
	if (v && v->graph == body->parent && !body->parent->parent && ir_weights_at_run_time(body->parent) &&
	    v->dtype == DT_F32 && v->kind != VAL_INPUT)
		return 1;       /* --train, Gradient: a parameter or a value computed from them */
	return v && v->data && v->graph != body && (v->kind == VAL_WEIGHT || v->kind == VAL_CONST) &&
	       v->dtype == DT_F32;
}

/* A GEMM we can move or merge (hoist.h). */
int hoist_movable_gemm(const ir_node *n, const ir_graph *body)
{
	if (n->op != OP_GEMM || !n->in[0] || n->in[0]->shape.rank != 2 ||
	    !hoist_initializer(n->in[1], body) || n->in[1]->shape.rank != 2 ||
	    n->out[0]->shape.rank != 2)
		return 0;
	ir_value *c = n->nin > 2 ? n->in[2] : NULL;
	if (!c)
		return 1;
	ir_dim N = n->out[0]->shape.d[1];
	if (!hoist_initializer(c, body) || !ir_dim_is_const(N))
		return 0;
	return (c->shape.rank == 1 && ir_dim_eq(c->shape.d[0], N)) ||
	       (c->shape.rank == 2 && c->shape.d[0].k == 1 && ir_dim_is_const(c->shape.d[0]) &&
		ir_dim_eq(c->shape.d[1], N));
}

static int used_in(const ir_graph *b, const ir_value *v)
{
	for (int i = 0; i < b->nnodes; i++)
		for (int k = 0; k < b->nodes[i]->nin; k++)
			if (b->nodes[i]->in[k] == v)
				return 1;
	for (int k = 0; k < b->noutputs; k++)
		if (b->outputs[k] == v)
			return 1;
	return 0;
}

int hoist_infer(ir_graph *g, ir_node *n, diag *D, ir_node *rec, const char *pass)
{
	if (infer_node(g, n, D) == 0 && n->out[0]->shape.rank >= 0)
		return 0;
	diag_node(D, rec, "internal error: cannot infer the shape of %s made by %s",
		  ir_op_name(n->op), pass);
	return 1;
}

/* ---- 2. hoist products of per-step inputs ---- */

/* Inserts sequence input `outer` (time axis ax) with body input `inner` as
 * sequence number n_seq of rec. */
static void add_seq(ir_graph *root, ir_node *rec, ir_value *outer, int64_t ax, ir_value *inner)
{
	int nseq = (int)ir_attr_int(rec, "n_seq", 0);
	ir_graph *b = rec->body;
	ir_value **in = arena_array(root->A, (size_t)rec->nin + 1, sizeof *in);
	memcpy(in, rec->in, (size_t)nseq * sizeof *in);
	in[nseq] = outer;
	memcpy(in + nseq + 1, rec->in + nseq, (size_t)(rec->nin - nseq) * sizeof *in);
	rec->in = in;
	rec->nin++;
	ir_value **bin = arena_array(root->A, (size_t)b->ninputs + 1, sizeof *bin);
	memcpy(bin, b->inputs, (size_t)nseq * sizeof *bin);
	bin[nseq] = inner;
	memcpy(bin + nseq + 1, b->inputs + nseq, (size_t)(b->ninputs - nseq) * sizeof *bin);
	b->inputs = bin;
	b->ninputs++;
	ir_attr *sa = ir_attr_find(rec, "seq_axis");
	int64_t *axes = arena_array(root->A, (size_t)nseq + 1, sizeof *axes);
	for (int i = 0; i < nseq; i++)
		axes[i] = sa && i < sa->n ? sa->ints[i] : 0;
	axes[nseq] = ax;
	ir_attr_set_ints(rec, "seq_axis", nseq + 1, axes);
	ir_attr_set_int(rec, "n_seq", nseq + 1);
}

/* Moves body GEMM gm (A = body input number k, a sequence) before rec.
 * The new outer nodes are appended to `out`. */
static int hoist_one(ir_graph *root, ir_node *rec, int k, ir_node *gm, diag *D,
		     ir_node ***out, int *nout)
{
	ir_graph *b = rec->body;
	ir_value *X = rec->in[k];
	ir_attr *sa = ir_attr_find(rec, "seq_axis");
	int64_t ax = sa && k < sa->n ? sa->ints[k] : 0;
	int errs = 0;
	if (X->shape.rank != 3 || ir_attr_int(gm, "transA", 0))
		return 0;
	const char *origin = gm->origin ? gm->origin : rec->origin;

	/* A batch-first sequence gives a batch-first projection, whose rows of
	 * one step are strided: fine for products and element-wise work, but
	 * a gate Slice of it needs the step's rows together.  Then the
	 * projection is made time-major: x transposed to [T, B, I] first. */
	ir_node *tr = NULL;
	int strided_reader = 0;
	for (int i = 0; ax != 0 && i < b->nnodes; i++)
		for (int q = 0; q < b->nodes[i]->nin; q++)
			if (b->nodes[i]->in[q] == gm->out[0] && b->nodes[i]->op != OP_GEMM &&
			    ir_ops[b->nodes[i]->op].kind != OPK_ELEM)
				strided_reader = 1;
	if (strided_reader && ax == 1) {
		int64_t perm[3] = {1, 0, 2};
		tr = ir_node_new(root, OP_TRANSPOSE, NULL, 1, 1);
		tr->in[0] = X;
		ir_attr_set_ints(tr, "perm", 3, perm);
		tr->out[0] = ir_value_new(root, NULL, VAL_TEMP, X->dtype);
		tr->origin = origin;
		tr->out[0]->producer = tr;
		errs += hoist_infer(root, tr, D, rec, "pass_hoist");
		X = tr->out[0];
		ax = 0;
	}

	ir_node *fl = ir_node_new(root, OP_FLATTEN, NULL, 1, 1);
	fl->in[0] = X;
	ir_attr_set_int(fl, "axis", 2);
	fl->out[0] = ir_value_new(root, NULL, VAL_TEMP, X->dtype);
	fl->origin = origin;
	fl->out[0]->producer = fl;
	errs += hoist_infer(root, fl, D, rec, "pass_hoist");

	ir_node *mm = ir_clone_node(root, gm, NULL, 1, IR_CLONE_SHARE_ATTRS);
	mm->in[0] = fl->out[0];
	mm->origin = origin;
	mm->out[0] = ir_value_new(root, NULL, VAL_TEMP, DT_F32);
	mm->out[0]->producer = mm;
	errs += hoist_infer(root, mm, D, rec, "pass_hoist");

	ir_dim N = gm->out[0]->shape.d[1];
	ir_dim dims[3] = {X->shape.d[0], X->shape.d[1], N};
	ir_node *rs = ir_node_new(root, OP_RESHAPE, NULL, 2, 1);
	rs->in[0] = mm->out[0];
	rs->in[1] = ir_const_dims(root, dims, 3);
	rs->origin = origin;
	rs->out[0] = ir_value_new(root, NULL, VAL_TEMP, DT_F32);
	rs->out[0]->producer = rs;
	errs += hoist_infer(root, rs, D, rec, "pass_hoist");
	if (errs)
		return errs;

	/* the body reads u_t where it read the product */
	/* one name per hoisted product: a sequence read by several products
	 * (momentum attention's) gives u<k>, u<k>_1, .. */
	const char *uname = arena_printf(root->A, "%s.u%d", b->name, k);
	for (int j = 1; ir_find_value(b, uname); j++)
		uname = arena_printf(root->A, "%s.u%d_%d", b->name, k, j);
	uname = ir_free_name(b, uname);         /* another body of the same name */
	ir_value *u = ir_value_new(b, uname, VAL_STEP, DT_F32);
	u->shape = gm->out[0]->shape;
	u->origin = origin;
	u->role = IR_ROLE_PROJECTION;
	ir_replace_uses(b, gm->out[0], u, NULL, IR_USES_OUTPUTS);
	add_seq(root, rec, rs->out[0], ax, u);
	/* drop gm from the body */
	int j = 0;
	for (int i = 0; i < b->nnodes; i++)
		if (b->nodes[i] != gm)
			b->nodes[j++] = b->nodes[i];
	b->nnodes = j;
	ir_set_nodes(b, b->nodes, j);

	if (tr)
		(*out)[(*nout)++] = tr;
	(*out)[(*nout)++] = fl;
	(*out)[(*nout)++] = mm;
	(*out)[(*nout)++] = rs;
	return 0;
}

/* Hoists every movable product of a sequence input of rec. */
static int hoist_rec(ir_graph *root, ir_node *rec, diag *D, ir_node ***out, int *nout, int *cap)
{
	ir_graph *b = rec->body;
	int errs = 0;
	for (int k = 0; k < (int)ir_attr_int(rec, "n_seq", 0); k++) {
		ir_value *x = b->inputs[k];
		for (int i = 0; i < b->nnodes; i++) {
			ir_node *n = b->nodes[i];
			if (!hoist_movable_gemm(n, b) || n->in[0] != x)
				continue;
			if (*nout + 4 > *cap) {
				int nc = 2 * *cap + 8;
				*out = arena_grow(root->A, *out, (size_t)*nout, (size_t)nc, sizeof **out);
				*cap = nc;
			}
			int before = b->nnodes;
			errs += hoist_one(root, rec, k, n, D, out, nout);
			if (errs)
				return errs;
			if (b->nnodes < before)
				i--;    /* n was removed from the list */
		}
	}
	/* drop sequence inputs the body no longer reads (the hoisted ones moved
	 * in front, so walk from the end of the original ones) */
	for (int k = (int)ir_attr_int(rec, "n_seq", 0) - 1; k >= 0; k--)
		if (!used_in(b, b->inputs[k]) && ir_attr_int(rec, "n_seq", 0) > 1)
			ir_rec_drop_seq(rec, k);   /* one is kept: it carries T */
	return errs;
}

int pass_hoist(ir_graph *g, diag *D, const pass_opts *o)
{
	if (o && o->no_hoist)
		return 0;
	int errs = 0, n = g->nnodes > 0 ? g->nnodes : 0;
	ir_node **old = arena_array(g->A, (size_t)n + 1, sizeof *old);
	memcpy(old, g->nodes, (size_t)n * sizeof *old);
	g->nnodes = 0;
	for (int i = 0; i < n; i++) {
		ir_node *r = old[i];
		if (r->op == OP_RECURRENCE && r->body) {
			ir_node **pre = NULL;
			int npre = 0, cap = 0;
			errs += hoist_rec(g, r, D, &pre, &npre, &cap);
			for (int k = 0; k < npre; k++)
				ir_append(g, pre[k]);
		}
		ir_append(g, r);
	}
	ir_recount(g);
	return errs;
}
