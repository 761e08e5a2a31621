/* reroll_states.c: pass_reroll's last rewrite of a recurrence it built,
 * before recognize.c names its cell: parallel states (one velocity per
 * gate, updated by the same expression over consecutive column blocks of
 * one product) merged into one state (reroll_merge_parallel_states). */
#include "infer.h"
#include "ir_build.h"
#include "reroll.h"
#include "util.h"

/* A state whose update is one element-wise expression of itself, of a
 * column block of a product P computed in the step, and of scalars
 * (v_r = mu * v_r + s * W_xr(x) beside v_z and v_n, one nn.Linear and one
 * velocity per gate) is a column block of one state: states whose updates
 * are the same expression over consecutive blocks of the same P are merged
 * into one state over the union of the blocks, and the recogniser then sees
 * the cell's one state.  Only states that start at zero and whose final
 * values nobody reads are merged. */
typedef struct par_leaf {
	const ir_value *own;    /* the state input */
	const ir_value *P;      /* the product whose column block is read */
	int64_t off, w;         /* that block */
} par_leaf;

/* The column block [off, off + w) of P that Slice node n reads, or 0. */
static int column_block(const ir_node *n, const ir_value **P, int64_t *off, int64_t *w)
{
	if (n->op != OP_SLICE || n->nin < 4 || !n->in[0] || n->in[0]->shape.rank != 2 || !ir_value_is_const(n->in[1]) ||
	    !ir_value_is_const(n->in[2]) || !ir_value_is_const(n->in[3]) ||
	    ir_shape_const_numel(&n->in[3]->shape) != 1 ||
	    (n->nin >= 5 && n->in[4] && (!ir_value_is_const(n->in[4]) || ir_const_int(n->in[4], 0) != 1)))
		return 0;
	int64_t ax = ir_const_int(n->in[3], 0), st = ir_const_int(n->in[1], 0), en = ir_const_int(n->in[2], 0);
	const ir_dim cols = n->in[0]->shape.d[1];
	if ((ax != 1 && ax != -1) || !ir_dim_is_const(cols) || st < 0 || en <= st || en > cols.k)
		return 0;
	*P = n->in[0];
	*off = st;
	*w = en - st;
	return 1;
}

/* Whether a (in state a's update) and b (in state b's) are the same
 * expression, leaf for leaf; la, lb collect each side's product block. */
static int same_update(const ir_value *a, const ir_value *b, par_leaf *la, par_leaf *lb, int depth)
{
	if (depth > 16)
		return 0;
	if (a == la->own || b == lb->own)
		return a == la->own && b == lb->own;
	if (reroll_has_data(a) || reroll_has_data(b))
		return reroll_has_data(a) && reroll_has_data(b) && ir_shape_const_numel(&a->shape) == 1 && reroll_same_const(a, b, 0);
	const ir_node *na = a->producer, *nb = b->producer;
	if (!na || !nb || na->nout != 1 || nb->nout != 1 || a->nuses != 1 || b->nuses != 1)
		return 0;
	const ir_value *Pa, *Pb;
	int64_t oa, ob, wa, wb;
	if (column_block(na, &Pa, &oa, &wa)) {
		if (!column_block(nb, &Pb, &ob, &wb) || Pa != Pb || wa != wb || (la->P && (la->P != Pa || la->off != oa)) ||
		    (lb->P && (lb->P != Pb || lb->off != ob)))
			return 0;
		la->P = Pa, la->off = oa, la->w = wa;
		lb->P = Pb, lb->off = ob, lb->w = wb;
		return 1;
	}
	if (ir_ops[na->op].kind != OPK_ELEM || na->op != nb->op || na->nin != nb->nin || !reroll_same_attrs(na, nb))
		return 0;
	for (int k = 0; k < na->nin; k++)
		if ((na->in[k] == NULL) != (nb->in[k] == NULL) ||
		    (na->in[k] && !same_update(na->in[k], nb->in[k], la, lb, depth + 1)))
			return 0;
	return 1;
}

/* Node c of the merged update, given its output (of type dt), inferred and
 * appended to *out: that output, or NULL when it does not infer. */
static ir_value *merged_node(ir_graph *b, ir_node *c, ir_dtype dt, ir_node **out, int *nout, diag *q)
{
	c->origin = "states merged (one per gate)";
	c->out[0] = ir_value_new(b, NULL, VAL_TEMP, dt);
	c->out[0]->producer = c;
	if (infer_node(b, c, q))
		return NULL;
	out[(*nout)++] = c;
	return c->out[0];
}

/* Column block [off, off + w) of X as a new Slice node appended to *out. */
static ir_value *block_of(ir_graph *b, ir_value *X, int64_t off, int64_t w, ir_node **out, int *nout, diag *q)
{
	int64_t st = off, en = off + w, ax = 1;
	ir_node *c = ir_node_new(b, OP_SLICE, NULL, 4, 1);
	c->in[0] = X;
	c->in[1] = ir_const_i64(b, NULL, 1, &st);
	c->in[2] = ir_const_i64(b, NULL, 1, &en);
	c->in[3] = ir_const_i64(b, NULL, 1, &ax);
	return merged_node(b, c, X->dtype, out, nout, q);
}

/* The copy of state a's update expression over the merged state S and the
 * merged block of P; nodes appended to *out. */
static ir_value *clone_update(ir_graph *b, const ir_value *v, const par_leaf *la, ir_value *S, int64_t w,
			      ir_node **out, int *nout, diag *q)
{
	if (v == la->own)
		return S;
	if (reroll_has_data(v))
		return (ir_value *)v;
	const ir_node *n = v->producer;
	if (n->op == OP_SLICE) {
		if (la->off == 0 && ir_dim_is_const(la->P->shape.d[1]) && la->P->shape.d[1].k == w)
			return (ir_value *)la->P;       /* the whole product */
		return block_of(b, (ir_value *)la->P, la->off, w, out, nout, q);
	}
	ir_node *c = ir_clone_node(b, n, NULL, 1, IR_CLONE_SHARE_ATTRS);
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && !(c->in[k] = clone_update(b, n->in[k], la, S, w, out, nout, q)))
			return NULL;
	return merged_node(b, c, v->dtype, out, nout, q);
}

enum { PAR_MAX = 8 };

/* Whether initial state v is all zeros (NULL: zeros by definition). */
static int zero_state(const ir_value *v)
{
	return !v || (v->dtype == DT_F32 && reroll_zero_value(v));
}

/* A group of parallel states: state grp[0] (the one kept, over the merged
 * blocks) and the others, each with its block of the product P. */
typedef struct par_group {
	int ng, grp[PAR_MAX];
	par_leaf L[PAR_MAX];
	int64_t w, lo;          /* a block's width; the first block's offset */
} par_group;

/* Whether state s of rec may be merged: it starts at zero and nobody reads
 * its final value. */
static int mergeable(const ir_node *rec, int nseq, int s)
{
	return zero_state(rec->in[nseq + s]) && !(rec->out[s] && rec->out[s]->nuses);
}

/* The states after a whose updates are state a's expression over other
 * blocks of the same product (G->grp, G->L); how many, a included. */
static int find_group(const ir_node *rec, int nseq, int ns, int a, par_group *G)
{
	const ir_graph *b = rec->body;
	ir_value *sa = b->inputs[nseq + a], *ua = b->outputs[a];
	G->ng = 1;
	G->grp[0] = a;
	G->L[0] = (par_leaf){.own = sa};
	for (int c = a + 1; c < ns && G->ng < PAR_MAX; c++) {
		ir_value *sc = b->inputs[nseq + c], *uc = b->outputs[c];
		if (!mergeable(rec, nseq, c) || !ir_shape_eq(&sc->shape, &sa->shape) || uc == ua)
			continue;
		par_leaf l0 = {.own = sa}, lc = {.own = sc};
		/* the roots are read elsewhere too (the gates): compare below them */
		const ir_node *ra = ua->producer, *rc = uc->producer;
		if (!ra || !rc || ra->op != rc->op || ra->nin != rc->nin || ir_ops[ra->op].kind != OPK_ELEM ||
		    !reroll_same_attrs(ra, rc))
			continue;
		int same = 1;
		for (int k = 0; k < ra->nin && same; k++)
			same = (ra->in[k] == NULL) == (rc->in[k] == NULL) &&
			       (!ra->in[k] || same_update(ra->in[k], rc->in[k], &l0, &lc, 1));
		if (!same || !l0.P || l0.w != sa->shape.d[1].k || (G->L[0].P && G->L[0].off != l0.off))
			continue;
		G->L[0] = l0;
		G->L[G->ng] = lc;
		G->grp[G->ng++] = c;
	}
	return G->ng;
}

/* Whether the group's blocks are consecutive blocks of P, in some order of
 * the states (G->w, G->lo). */
static int consecutive_blocks(par_group *G)
{
	int64_t w = G->L[0].w, lo = G->L[0].off;
	for (int i = 1; i < G->ng; i++)
		lo = G->L[i].off < lo ? G->L[i].off : lo;
	G->w = w;
	G->lo = lo;
	for (int i = 0; i < G->ng; i++) {
		int64_t k = G->L[i].off - lo;
		if (k % w != 0 || k / w >= G->ng)
			return 0;
		for (int j = 0; j < i; j++)
			if (G->L[j].off == G->L[i].off)
				return 0;
	}
	return 1;
}

/* The body's nodes with the new ones placed: the blocks of S first, the
 * merged update and the blocks of it where state a's update was (after P). */
static void place_merged(ir_graph *g, ir_graph *b, const ir_value *P, ir_node **head, int nhead, ir_node **fresh,
			 int nf, ir_node **tailn, int ntail)
{
	ir_node **nodes = arena_array(g->A, (size_t)(b->nnodes + nhead + nf + ntail + 1), sizeof *nodes);
	int k = 0;
	for (int i = 0; i < nhead; i++)
		nodes[k++] = head[i];
	const ir_node *pn = P->producer;
	int placed = pn == NULL;
	if (placed) {
		for (int i = 0; i < nf; i++)
			nodes[k++] = fresh[i];
		for (int i = 0; i < ntail; i++)
			nodes[k++] = tailn[i];
	}
	for (int i = 0; i < b->nnodes; i++) {
		nodes[k++] = b->nodes[i];
		if (b->nodes[i] == pn) {
			for (int j = 0; j < nf; j++)
				nodes[k++] = fresh[j];
			for (int j = 0; j < ntail; j++)
				nodes[k++] = tailn[j];
		}
	}
	ir_set_nodes(b, nodes, k);
}

/* Whether state s (an index among the states) is merged into another. */
static int merged_away(const par_group *G, int s)
{
	int drop = 0;
	for (int j = 1; j < G->ng; j++)
		drop |= s == G->grp[j];
	return drop;
}

/* Inputs, outputs and the recurrence: state a becomes S (updated to Su),
 * the others of the group go. */
static void drop_merged(ir_graph *g, ir_node *rec, int nseq, int ns, const par_group *G, ir_value *S, ir_value *Su)
{
	ir_graph *b = rec->body;
	int a = G->grp[0];
	ir_value **bin = arena_array(g->A, (size_t)b->ninputs, sizeof *bin);
	ir_value **bout = arena_array(g->A, (size_t)b->noutputs, sizeof *bout);
	ir_value **rin = arena_array(g->A, (size_t)rec->nin, sizeof *rin);
	ir_value **rout = arena_array(g->A, (size_t)rec->nout, sizeof *rout);
	int ni = 0, no = 0, nri = 0, nro = 0;
	for (int i = 0; i < b->ninputs; i++)
		if (!merged_away(G, i - nseq))
			bin[ni++] = i - nseq == a ? S : b->inputs[i];
	for (int i = 0; i < b->noutputs; i++)
		if (!merged_away(G, i))
			bout[no++] = i == a ? Su : b->outputs[i];
	for (int i = 0; i < rec->nin; i++) {
		int s = i - nseq;
		if (!(s >= 0 && s < ns && merged_away(G, s)))
			rin[nri++] = s == a ? NULL : rec->in[i];   /* zeros, like each part */
	}
	for (int i = 0; i < rec->nout; i++)
		if (!(i < ns && merged_away(G, i)))
			rout[nro++] = i == a && rec->out[i] ? NULL : rec->out[i];
	for (int i = 0; i < b->noutputs; i++)
		b->outputs[i]->is_output = 0;
	b->inputs = bin, b->ninputs = ni;
	b->outputs = bout, b->noutputs = no;
	for (int i = 0; i < no; i++)
		bout[i]->is_output = 1;
	rec->in = rin, rec->nin = nri;
	rec->out = rout, rec->nout = nro;
	ir_attr_set_int(rec, "n_state", ns - (G->ng - 1));
}

/* Merges the group into one state S [B, ng * w]: its readers read their
 * blocks of S, the merged update is state a's expression over S and P's
 * blocks, and the readers of each update read its block of the merged one.
 * 0 when a node does not infer. */
static int merge_group(ir_graph *g, ir_node *rec, int nseq, int ns, const par_group *G)
{
	ir_graph *b = rec->body;
	int a = G->grp[0], ng = G->ng;
	int64_t w = G->w, lo = G->lo;
	ir_value *sa = b->inputs[nseq + a], *ua = b->outputs[a];
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	ir_node **fresh = arena_array(g->A, (size_t)(b->nnodes * 2 + 16), sizeof *fresh);
	int nf = 0, nhead = 0;
	ir_value *S = ir_value_new(b, ir_free_name(b, arena_printf(g->A, "%s.merged", sa->name ? sa->name : "state")), VAL_STEP,
				   DT_F32);
	S->shape = sa->shape;
	S->shape.d[1] = ir_dim_const(w * ng);
	ir_node *head[PAR_MAX] = {0};
	/* the states' other readers read their blocks of S */
	for (int i = 0; i < ng; i++) {
		ir_value *blk = block_of(b, S, G->L[i].off - lo, w, head, &nhead, &q);
		if (!blk)
			return 0;
		ir_replace_uses(b, G->L[i].own, blk, NULL, 0);
	}
	par_leaf lm = G->L[0];
	lm.off = lo;
	lm.own = head[0]->out[0];       /* S's block 0 now stands where sa was read */
	/* the merged update: state a's expression, over S and P's blocks */
	ir_value *Su = clone_update(b, ua, &(par_leaf){.own = lm.own, .P = lm.P, .off = lo}, S, w * ng, fresh, &nf, &q);
	if (!Su)
		return 0;
	ir_node *tailn[PAR_MAX];
	int ntail = 0;
	for (int i = 0; i < ng; i++) {
		ir_value *blk = block_of(b, Su, G->L[i].off - lo, w, tailn, &ntail, &q);
		if (!blk)
			return 0;
		ir_replace_uses(b, b->outputs[G->grp[i]], blk, NULL, 0);
	}
	place_merged(g, b, lm.P, head, nhead, fresh, nf, tailn, ntail);
	drop_merged(g, rec, nseq, ns, G, S, Su);
	ir_recount(g);
	/* the old updates are read by nothing now */
	if (ir_drop_dead(b, 0))
		ir_recount(g);
	return 1;
}

/* One group of parallel states of rec merged: 1, or 0 when there is none. */
int reroll_merge_parallel_states(ir_graph *g, ir_node *rec)
{
	ir_graph *b = rec->body;
	int nseq = (int)ir_attr_int(rec, "n_seq", 0), ns = (int)ir_attr_int(rec, "n_state", 0);
	if (!b || ns < 2 || b->ninputs < nseq + ns || b->noutputs < ns)
		return 0;
	ir_recount(g);
	for (int a = 0; a < ns; a++) {
		ir_value *sa = b->inputs[nseq + a];
		if (!mergeable(rec, nseq, a) || sa->shape.rank != 2 || sa->dtype != DT_F32)
			continue;
		par_group G;
		if (find_group(rec, nseq, ns, a, &G) < 2 || !consecutive_blocks(&G))
			continue;
		return merge_group(g, rec, nseq, ns, &G);
	}
	return 0;
}
