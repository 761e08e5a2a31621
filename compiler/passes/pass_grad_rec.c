/* pass_grad_rec.c: the adjoint of a RECURRENCE for pass_grad.c
 * (backpropagation through time): a RECURRENCE running the other way in
 * time whose per-step inputs are the forward per-step inputs, the saved
 * states s_{t-1} and products, and the gradients of the stacked outputs;
 * what the forward saves is a minimum cut (choose_saves).  pass_grad.c's
 * header comment describes the whole pass; grad.h what the two share.
 */
#include "elem.h"
#include "grad.h"
#include "infer.h"
#include "mincut.h"
#include "util.h"

#include <string.h>

/* ---- recurrences: backpropagation through time -------------------------------------------- */

typedef struct seqin {
	ir_value *outer, *inner;
	int64_t axis;
} seqin;

/* The backward recurrence being built; its tables grow in the arena. */
typedef struct bwd {
	ir_graph *b;            /* backward body */
	seqin *seq;             /* [nseq] per-step inputs */
	int nseq, capseq;
	ir_value **outs;        /* [nout] stacked body outputs */
	ir_value **outer_outs;  /* [nout] their root values */
	int64_t *out_axis;      /* [nout] their time axes */
	int nout, capout;
} bwd;

static ir_value *body_input(ir_graph *b, const char *what, const ir_value *like)
{
	ir_value *v = ir_value_new(b, ir_free_name(b, arena_printf(b->A, "%s.%s", b->name, what)), VAL_STEP, like->dtype);
	v->shape = like->shape;
	return v;
}

static ir_value *add_seq(gctx *C, bwd *W, ir_value *outer, int64_t axis, const ir_value *like, const char *what)
{
	if (W->nseq == W->capseq) {
		int cap = W->capseq ? 2 * W->capseq : 16;
		W->seq = arena_grow(C->tg->A, W->seq, (size_t)W->nseq, (size_t)cap, sizeof *W->seq);
		W->capseq = cap;
	}
	ir_value *v = body_input(W->b, what, like);
	W->seq[W->nseq++] = (seqin){outer, v, axis};
	return v;
}

/* A root value [T, B, ...] (time on axis ax) for a stacked output of body value v. */
static ir_value *stacked_value(ir_graph *g, const ir_value *v, ir_dim T, int64_t ax)
{
	ir_value *o = ir_value_new(g, NULL, VAL_TEMP, v->dtype);
	o->shape.rank = v->shape.rank + 1;
	for (int i = 0, j = 0; i < o->shape.rank; i++)
		o->shape.d[i] = i == ax ? T : v->shape.d[j++];
	return o;
}

static ir_value *add_out(gctx *C, bwd *W, ir_value *v, ir_dim T, int64_t ax)
{
	for (int i = 0; i < W->nout; i++)
		if (W->outs[i] == v && W->out_axis[i] == ax)
			return W->outer_outs[i];
	if (v->shape.rank != 2)
		return fail(C, "cannot differentiate this recurrence: a per-step gradient ('%s') is not "
			    "a [batch, n] matrix", v->name), NULL;
	if (W->nout == W->capout) {
		int cap = W->capout ? 2 * W->capout : 16;
		arena *A = C->tg->A;
		W->outs = arena_grow(A, W->outs, (size_t)W->nout, (size_t)cap, sizeof *W->outs);
		W->outer_outs = arena_grow(A, W->outer_outs, (size_t)W->nout, (size_t)cap, sizeof *W->outer_outs);
		W->out_axis = arena_grow(A, W->out_axis, (size_t)W->nout, (size_t)cap, sizeof *W->out_axis);
		W->capout = cap;
	}
	W->outs[W->nout] = v;
	W->out_axis[W->nout] = ax;
	W->outer_outs[W->nout] = stacked_value(ir_root(C->tg), v, T, ax);
	return W->outer_outs[W->nout++];
}

/* Adds stacked outputs to forward recurrence n; returns the root values. */
static void add_fwd_outputs(ir_node *n, int cnt, ir_value *const *bodyv, ir_value **outer, ir_dim T)
{
	ir_graph *F = n->body, *g = n->graph;
	int nout = (int)ir_attr_int(n, "n_out", 0);
	ir_value **o = arena_array(g->A, (size_t)(n->nout + cnt), sizeof *o);
	memcpy(o, n->out, (size_t)n->nout * sizeof *o);
	ir_value **bo = arena_array(g->A, (size_t)(F->noutputs + cnt), sizeof *bo);
	memcpy(bo, F->outputs, (size_t)F->noutputs * sizeof *bo);
	int64_t *ax = arena_array(g->A, (size_t)(nout + cnt), sizeof *ax);
	ir_attr *oa = ir_attr_find(n, "out_axis");
	for (int j = 0; j < nout; j++)
		ax[j] = oa && j < oa->n ? oa->ints[j] : 0;
	for (int i = 0; i < cnt; i++) {
		outer[i] = stacked_value(g, bodyv[i], T, 0);
		o[n->nout + i] = outer[i];
		outer[i]->producer = n;
		bo[F->noutputs + i] = bodyv[i];
		ax[nout + i] = 0;
	}
	n->out = o;
	n->nout += cnt;
	F->outputs = bo;
	F->noutputs += cnt;
	ir_attr_set_int(n, "n_out", nout + cnt);
	ir_attr_set_ints(n, "out_axis", nout + cnt, ax);
	/* the last n_saved outputs: saved for the backward pass */
	ir_attr_set_int(n, "n_saved", ir_attr_int(n, "n_saved", 0) + cnt);
}

/* Stacked outputs the forward recurrences (root nodes before nfwd) gained
 * for the backward pass but that no backward node reads (a state whose
 * s_{t-1} the adjoint does not need): removed, so the forward does not
 * store them.  Requires fresh use counts. */
void grad_drop_unused_saves(ir_graph *g, int nfwd)
{
	for (int i = 0; i < nfwd; i++) {
		ir_node *n = g->nodes[i];
		if (n->op != OP_RECURRENCE || !ir_attr_find(n, "n_saved"))
			continue;
		int nst = (int)ir_attr_int(n, "n_state", 0), nout = (int)ir_attr_int(n, "n_out", 0);
		int first = nout - (int)ir_attr_int(n, "n_saved", 0);
		for (int k = nout - 1; k >= first; k--)
			if (n->out[nst + k]->nuses == 0 && !n->out[nst + k]->is_output)
				ir_rec_drop_output(n, k);
	}
	ir_recount(g);
}

/* Drops the per-step inputs of backward body b that no live node reads and
 * that are not outputs themselves (live: reaching the stacked outputs
 * W->outs or the state gradients bouts). */
static void dead_code_prepass(ir_graph *b, bwd *W, ir_value *const *bouts, int nst)
{
	/* the body's outputs are not set yet: live from W->outs and bouts */
	ir_value **roots = arena_array(b->A, (size_t)(W->nout + nst) + 1, sizeof *roots);
	memcpy(roots, W->outs, (size_t)W->nout * sizeof *roots);
	memcpy(roots + W->nout, bouts, (size_t)nst * sizeof *roots);
	char *live;
	ir_live(b, roots, W->nout + nst, IR_DEAD_BODIES, NULL, &live);
	int j = 0;
	for (int s = 0; s < W->nseq; s++)
		if (live[W->seq[s].inner->id] || (j == 0 && s == W->nseq - 1))
			W->seq[j++] = W->seq[s];
	W->nseq = j;
}

/* ---- what the forward saves: a minimum cut --------------------------------------- */

/* The backward body first recomputes the step from what the forward saved
 * (the states s_{t-1} and the products: its nodes rc_lo .. rc_hi-1 are copies
 * of the forward body's other nodes), and the adjoint reads some of those
 * values.  Any set of per-step values that separates the saved ones from the
 * values read would serve as well: the backward can recompute the rest from
 * them.  The cheapest such set, counted in elements per batch row, is a
 * minimum vertex cut of the recomputation graph: each value is a pair of
 * vertices joined by an edge of its width, the saved states and products hang
 * from the source, the values the adjoint reads (and the captured products'
 * operands, which the root graph reads) from the sink, and the step's
 * per-step inputs, the weights and the constants are free (the backward has
 * them anyway).  A value can be cut only where it could be stacked: an f32
 * [batch, n] matrix of constant width n.  On equal widths a saved value costs
 * less than a recomputed one, so nothing moves without a saving.
 *
 * Where the cut holds recomputed values, the forward stacks those instead
 * (new saved outputs), the backward reads them as per-step inputs "cutK", and
 * the recomputation above them, the per-step inputs it read and the forward's
 * saves nothing reads any more are dropped afterwards (dead_code_prepass,
 * dead_code, grad_drop_unused_saves).  A MomentumLSTM saved h, c, the four
 * velocities and the [batch, 4H] product (10H per row) and now saves h, c and
 * the four gate pre-activations (6H); an LSTM or GRU keeps its product (the
 * pre-activations are as wide).  The backward recurrence records the width
 * saved per row as attribute save_width (absent where the cut was not
 * made: a body of more than CUT_MAX values). */
enum { CUT_UNIT = 1024 };       /* an element's cost; +1 for a recomputed value */
enum { CUT_MAX = 4096 };        /* values of a body's recomputation the cut considers */

static int64_t cut_cost(const ir_value *v, ir_dim batch, int saved)
{
	int ok = v->shape.rank == 2 && ir_dim_eq(v->shape.d[0], batch) && ir_dim_is_const(v->shape.d[1]);
	if (saved)
		return ok ? v->shape.d[1].k * CUT_UNIT : (int64_t)1 << 40;
	if (!ok || v->dtype != DT_F32 || v->kind != VAL_TEMP)
		return MC_INF;
	return v->shape.d[1].k * CUT_UNIT + 1;
}

/* Every reader of recomputed value w in the backward body (its nodes, the
 * state outputs bouts, the adjoint's outputs, the captured products) reads
 * the per-step input `in` of the cut instead. */
static void read_cut(gctx *C, bwd *W, const ir_value *w, ir_value *in, ir_value **bouts, int nst)
{
	ir_graph *b = W->b;
	for (int i = 0; i < b->nnodes; i++)
		for (int k = 0; k < b->nodes[i]->nin; k++)
			if (b->nodes[i]->in[k] == w)
				b->nodes[i]->in[k] = in;
	for (int k = 0; k < nst; k++)
		if (bouts[k] == w)
			bouts[k] = op1(C, OP_IDENTITY, in);
	for (int j = 0; j < W->nout; j++)
		if (W->outs[j] == w)
			W->outs[j] = op1(C, OP_IDENTITY, in);
	for (int i = 0; i < C->ncb; i++) {
		if (C->cb[i].a == w)
			C->cb[i].a = in;
		if (C->cb[i].b == w)
			C->cb[i].b = in;
	}
}

static int64_t choose_saves(gctx *C, bwd *W, ir_node *n, int rc_lo, int rc_hi, ir_value *const *saved_in,
			    int nsaved, ir_value **bouts, int nst, ir_dim T)
{
	ir_graph *b = W->b, *F = n->body, *g = n->graph;
	int nseq = (int)ir_attr_int(n, "n_seq", 0);
	ir_dim batch = F->inputs[nseq]->shape.d[0];
	int nvb = b->nvalues;
	int *cid = arena_array(g->A, (size_t)nvb + 1, sizeof *cid);
	ir_value **cand = arena_array(g->A, (size_t)nvb + 1, sizeof *cand);
	ir_value **fwd = arena_array(g->A, (size_t)nvb + 1, sizeof *fwd);
	int N = 0, nsrc;
	for (int i = 0; i < nvb; i++)
		cid[i] = -1;
	for (int k = 0; k < nsaved; k++)
		if (saved_in[k] && cid[saved_in[k]->id] < 0)
			cid[saved_in[k]->id] = N, cand[N++] = saved_in[k];
	nsrc = N;
	int nedge = 0;
	for (int i = rc_lo; i < rc_hi; i++) {
		ir_node *c = b->nodes[i];
		for (int k = 0; k < c->nout; k++)
			if (c->out[k] && cid[c->out[k]->id] < 0)
				cid[c->out[k]->id] = N, cand[N++] = c->out[k];
		nedge += c->nin * c->nout;
	}
	/* a body beyond CUT_MAX values keeps what was saved: the flow search
	 * recurses as deep as the graph's longest path (mincut.c) */
	if (N > CUT_MAX)
		return -1;
	for (int i = 0; i < C->nsrc; i++)
		if (C->map[i] && C->map[i]->graph == b && cid[C->map[i]->id] >= nsrc)
			fwd[cid[C->map[i]->id]] = F->values[i];

	/* the values read past the recomputation */
	char *need = arena_alloc(g->A, (size_t)N + 1);
	memset(need, 0, (size_t)N + 1);
#define NEED(v) do { if ((v) && (v)->graph == b && cid[(v)->id] >= 0) need[cid[(v)->id]] = 1; } while (0)
	for (int i = 0; i < b->nnodes; i++)
		if (i < rc_lo || i >= rc_hi)
			for (int k = 0; k < b->nodes[i]->nin; k++)
				NEED(b->nodes[i]->in[k]);
	for (int k = 0; k < nst; k++)
		NEED(bouts[k]);
	for (int j = 0; j < W->nout; j++)
		NEED(W->outs[j]);
	for (int i = 0; i < C->ncb; i++) {
		NEED(C->cb[i].a);
		NEED(C->cb[i].b);
	}
#undef NEED

	int S = 2 * N, Tv = 2 * N + 1;
	mc_graph *G = mc_new(g->A, 2 * N + 2, 3 * N + nedge + 1);
	int ok = 1;
	for (int c = 0; c < N; c++) {
		int64_t cost = c < nsrc ? cut_cost(cand[c], batch, 1) : fwd[c] ? cut_cost(fwd[c], batch, 0) : MC_INF;
		ok &= mc_edge(G, 2 * c, 2 * c + 1, cost) == 0;
		if (c < nsrc)
			ok &= mc_edge(G, S, 2 * c, MC_INF) == 0;
		if (need[c])
			ok &= mc_edge(G, 2 * c + 1, Tv, MC_INF) == 0;
	}
	for (int i = rc_lo; i < rc_hi; i++) {
		ir_node *c = b->nodes[i];
		for (int k = 0; k < c->nin; k++)
			for (int o = 0; o < c->nout; o++)
				if (c->in[k] && c->in[k]->graph == b && cid[c->in[k]->id] >= 0 && c->out[o])
					ok &= mc_edge(G, 2 * cid[c->in[k]->id] + 1, 2 * cid[c->out[o]->id], MC_INF) == 0;
	}
	char *side = arena_alloc(g->A, (size_t)2 * N + 2);
	int64_t flow = ok ? mc_cut(G, S, Tv, side) : MC_INF;
	if (flow >= MC_INF)     /* cannot happen (cutting every saved value is a finite cut) */
		return -1;

	/* the cut's values: stacked outputs of the forward, per-step inputs of the backward */
	int ncut = 0;
	for (int c = nsrc; c < N; c++) {
		if (!side[2 * c] || side[2 * c + 1])
			continue;
		ir_value *w = cand[c], *outer;
		add_fwd_outputs(n, 1, &fwd[c], &outer, T);
		ir_value *in = add_seq(C, W, outer, 0, w, arena_printf(g->A, "cut%d", ncut++));
		if (!in)
			return -1;
		read_cut(C, W, w, in, bouts, nst);
	}
	return flow / CUT_UNIT;
}

/* What the steps of grad_rule_rec share: the forward recurrence and the backward
 * one being built from it. */
typedef struct recg {
	gctx *R;                /* the context of the graph that holds the recurrence */
	gx *X;
	ir_node *n;             /* the forward recurrence */
	ir_graph *F, *g;        /* its body; the graph that holds it */
	int nseq, nst, nout, rev, has_step, has_lens;
	ir_attr *sa, *oa;       /* seq_axis, out_axis */
	ir_dim T;
	int nF;                 /* body values */
	char *needs;            /* [nF] depends on something with a gradient */
	ir_value **save;        /* [nsave] body values saved: states at t-1, then products */
	ir_value **saved;       /* [nsave] their stacked outputs of the forward */
	int nsave, first_gemm;
	bwd W;                  /* the backward body */
	ir_graph *b;
	gctx C;                 /* the context of the backward body */
	ir_value **dys;         /* [nout] per-step gradients of the stacked outputs */
	ir_value *ds[64];       /* [nst] the carried gradients of the states */
	ir_value *tb, *Lb;      /* the backward's step scalars (has_step) */
	ir_value **saved_in;    /* [nsave] the saved values in the backward body */
	int rc_lo, rc_hi;       /* the recomputation's nodes in b */
	ir_value **bouts;       /* [nst] gradients of the states at t-1 */
	ir_value **dx_outer;    /* [nseq] stacked gradients of the per-step inputs */
	ir_value *dstate_outer;
	int64_t save_width;
	ir_value **cb_a, **cb_b; /* [ncb] stacked operands of the captured values' gradients */
	ir_node *r;             /* the backward recurrence */
} recg;

/* The recurrence's attributes, and what cannot be differentiated. */
static int rec_read_attrs(recg *Q)
{
	ir_node *n = Q->n;
	Q->F = n->body;
	Q->g = Q->X->g;
	Q->nseq = (int)ir_attr_int(n, "n_seq", 0), Q->nst = (int)ir_attr_int(n, "n_state", 0);
	Q->nout = (int)ir_attr_int(n, "n_out", 0), Q->rev = (int)ir_attr_int(n, "reverse", 0);
	Q->has_step = (int)ir_attr_int(n, "has_step", 0);
	if (Q->nseq > 200 || Q->nst > 64 || Q->nout > 200)
		return fail(Q->R, "cannot differentiate a recurrence with this many inputs, states or "
			    "outputs%s", "");
	Q->has_lens = ir_attr_int(n, "has_lens", 0) != 0;
	if (Q->has_lens && Q->has_step)
		return fail(Q->R, "--train: a recurrence with both sequence_lens and step-dependent "
			    "coefficients cannot be differentiated yet%s", "");
	Q->sa = ir_attr_find(n, "seq_axis"), Q->oa = ir_attr_find(n, "out_axis");
	Q->T = n->in[0]->shape.d[Q->sa && Q->sa->n ? Q->sa->ints[0] : 0];
	ir_recount(Q->F);
	Q->nF = Q->F->nvalues;
	return 1;
}

/* Which body values depend on something with a gradient. */
static int rec_mark_needs(recg *Q)
{
	ir_graph *F = Q->F;
	char *needs = arena_alloc(Q->g->A, (size_t)Q->nF + 1);
	memset(needs, 0, (size_t)Q->nF + 1);
	Q->needs = needs;
	for (int k = 0; k < Q->nseq; k++)
		needs[F->inputs[k]->id] = root_needs(Q->X, Q->n->in[k]);
	for (int k = 0; k < Q->nst; k++)
		needs[F->inputs[Q->nseq + k]->id] = 1;
	for (int i = 0; i < F->nnodes; i++) {
		ir_node *bn = F->nodes[i];
		if (bn->body)
			return fail(Q->R, "cannot differentiate a recurrence inside a recurrence%s", "");
		int any = 0;
		for (int k = 0; k < bn->nin; k++) {
			ir_value *v = bn->in[k];
			any |= v && (v->graph == F ? needs[v->id] : root_needs(Q->X, v));
		}
		for (int k = 0; k < bn->nout; k++)
			if (bn->out[k])
				needs[bn->out[k]->id] = (char)any;
	}
	return 1;
}

/* Saved for the backward pass: s_{t-1} of every state, every product's
 * output (as many as the body has), made stacked outputs of the forward. */
static int rec_collect_saves(recg *Q)
{
	ir_graph *F = Q->F, *g = Q->g;
	int nseq = Q->nseq, nst = Q->nst, ngemm = 0;
	Q->nsave = 0;
	for (int i = 0; i < F->nnodes; i++)
		ngemm += F->nodes[i]->op == OP_GEMM && F->nodes[i]->out[0]->shape.rank == 2;
	Q->save = arena_array(g->A, (size_t)(nst + ngemm), sizeof *Q->save);
	for (int k = 0; k < nst; k++) {
		if (F->inputs[nseq + k]->shape.rank != 2)
			return fail(Q->R, "cannot differentiate this recurrence: state '%s' is not a "
				    "[batch, n] matrix", F->inputs[nseq + k]->name);
		Q->save[Q->nsave++] = F->inputs[nseq + k];
	}
	Q->first_gemm = Q->nsave;
	for (int i = 0; i < F->nnodes; i++) {
		ir_node *bn = F->nodes[i];
		if (bn->op == OP_GEMM && bn->out[0]->shape.rank == 2)
			Q->save[Q->nsave++] = bn->out[0];
	}
	Q->saved = arena_array(g->A, (size_t)Q->nsave + 1, sizeof *Q->saved);
	add_fwd_outputs(Q->n, Q->nsave, Q->save, Q->saved, Q->T);
	return 1;
}

/* The backward body and its context; the body's constants are the forward's. */
static void rec_new_backward(recg *Q)
{
	ir_graph *F = Q->F, *g = Q->g;
	Q->W = (bwd){.b = ir_graph_new(g->A, g, arena_printf(g->A, "%s.backward", F->name))};
	Q->b = Q->W.b;
	Q->C = (gctx){.X = Q->X, .tg = Q->b, .src = F, .nsrc = Q->nF};
	gctx *C = &Q->C;
	C->map = arena_array(g->A, (size_t)Q->nF + 1, sizeof *C->map);
	C->grad = arena_array(g->A, (size_t)Q->nF + 1, sizeof *C->grad);
	C->parts = arena_array(g->A, (size_t)Q->nF + 1, sizeof *C->parts);
	C->needs = Q->needs;
	C->at = Q->n;
	for (int i = 0; i < Q->nF; i++) {
		ir_value *v = F->values[i];
		if (v->kind == VAL_CONST) {
			ir_value *c = ir_value_new(Q->b, NULL, VAL_CONST, v->dtype);
			c->shape = v->shape;
			c->data = v->data;
			c->sym = v->sym;
			C->map[i] = c;
		}
	}
}

/* The backward's per-step inputs: the forward's inputs, its states at t-1,
 * its products, the gradients of its stacked outputs; then the carried
 * gradients of the states and the step scalars. */
static int rec_backward_inputs(recg *Q)
{
	ir_graph *F = Q->F, *g = Q->g, *b = Q->b;
	ir_node *n = Q->n;
	gctx *C = &Q->C;
	bwd *W = &Q->W;
	ir_attr *sa = Q->sa, *oa = Q->oa;
	int nseq = Q->nseq, nst = Q->nst;
	for (int k = 0; k < nseq; k++)
		if (F->inputs[k]->nuses > 0)
			C->map[F->inputs[k]->id] = add_seq(C, W, n->in[k], sa && k < sa->n ? sa->ints[k] : 0,
							    F->inputs[k], arena_printf(g->A, "x%d", k));
	for (int k = 0; k < nst; k++)
		C->map[F->inputs[nseq + k]->id] = add_seq(C, W, Q->saved[k], 0, F->inputs[nseq + k],
							  arena_printf(g->A, "s%d_prev", k));
	for (int i = Q->first_gemm; i < Q->nsave; i++)
		C->map[Q->save[i]->id] = add_seq(C, W, Q->saved[i], 0, Q->save[i],
						 arena_printf(g->A, "p%d", i - Q->first_gemm));
	Q->dys = arena_array(g->A, (size_t)Q->nout + 1, sizeof *Q->dys);
	for (int j = 0; j < Q->nout; j++) {
		ir_value *gy = grad_get(Q->R, n->out[nst + j]);
		if (gy)
			Q->dys[j] = add_seq(C, W, gy, oa && j < oa->n ? oa->ints[j] : 0, F->outputs[nst + j],
					    arena_printf(g->A, "dy%d", j));
	}
	if (Q->X->errors)
		return 0;
	if (W->nseq == 0)
		Q->dys[0] = NULL, C->map[F->inputs[0]->id] = add_seq(C, W, n->in[0], sa && sa->n ? sa->ints[0] : 0,
								      F->inputs[0], "x0");
	if (nst > 64)
		return fail(Q->R, "too many states to differentiate%s", "");
	for (int k = 0; k < nst; k++)
		Q->ds[k] = body_input(b, arena_printf(g->A, "ds%d", k), F->inputs[nseq + k]);
	Q->tb = NULL, Q->Lb = NULL;
	if (Q->has_step) {
		ir_shape s0 = {.rank = 0};
		Q->tb = ir_value_new(b, ir_free_name(b, arena_printf(g->A, "%s.t", b->name)), VAL_STEP, DT_F32);
		Q->tb->shape = s0;
		Q->Lb = ir_value_new(b, arena_printf(g->A, "%s.L", b->name), VAL_STEP, DT_F32);
		Q->Lb->shape = s0;
		/* the forward step number of this step: L - t + 1 */
		C->at = n;
		C->map[F->inputs[nseq + nst]->id] = add(C, sub(C, Q->Lb, Q->tb), fc(C, 1));
		if (Q->has_step == 2)
			C->map[F->inputs[nseq + nst + 1]->id] = Q->Lb;
	}
	return 1;
}

/* Recomputation of the step from the saved values: the forward body's nodes
 * cloned into the backward's, the saved products not. */
static void rec_recompute(recg *Q)
{
	ir_graph *F = Q->F, *b = Q->b;
	gctx *C = &Q->C;
	Q->saved_in = arena_array(Q->g->A, (size_t)Q->nsave + 1, sizeof *Q->saved_in);
	for (int k = 0; k < Q->nsave; k++)
		Q->saved_in[k] = C->map[Q->save[k]->id];
	Q->rc_lo = b->nnodes;
	for (int i = 0; i < F->nnodes; i++) {
		ir_node *bn = F->nodes[i];
		if (bn->op == OP_GEMM && C->map[bn->out[0]->id])
			continue;
		ir_node *c = ir_clone_node(b, bn, NULL, -1, IR_CLONE_SHARE_ATTRS);
		for (int k = 0; k < bn->nin; k++)
			c->in[k] = bn->in[k] ? V(C, bn->in[k]) : NULL;
		for (int k = 0; k < bn->nout; k++)
			if (bn->out[k]) {
				ir_value *o = ir_value_new(b, NULL, VAL_TEMP, bn->out[k]->dtype);
				o->shape = bn->out[k]->shape;
				o->recomputes = bn->out[k];
				c->out[k] = o;
				C->map[bn->out[k]->id] = o;
			}
		ir_append(b, c);
	}
	Q->rc_hi = b->nnodes;
}

/* The adjoint of the step, then what it yields: the gradients of the states
 * at t-1 (carried), of the per-step inputs and of the first state (stacked). */
static int rec_adjoint(recg *Q)
{
	ir_graph *F = Q->F, *g = Q->g, *b = Q->b;
	gctx *C = &Q->C;
	int nseq = Q->nseq, nst = Q->nst;
	for (int k = 0; k < nst; k++)
		grad_acc(C, F->outputs[k], Q->ds[k]);
	for (int j = 0; j < Q->nout; j++)
		if (Q->dys[j])
			grad_acc(C, F->outputs[nst + j], Q->dys[j]);
	for (int i = F->nnodes - 1; i >= 0 && !Q->X->errors; i--)
		grad_rule(C, F->nodes[i]);
	if (Q->X->errors)
		return 0;
	C->at = Q->n;

	ir_value **bouts = Q->bouts = arena_array(g->A, (size_t)nst + 1, sizeof *bouts);
	for (int k = 0; k < nst; k++) {
		ir_value *gs = grad_get(C, F->inputs[nseq + k]);
		bouts[k] = gs ? gs : mul(C, Q->ds[k], fc(C, 0));
		for (int j = 0; j < k; j++)
			if (bouts[j] == bouts[k])
				bouts[k] = op1(C, OP_IDENTITY, bouts[k]);
		if (bouts[k]->graph == b && bouts[k]->kind == VAL_STEP && bouts[k] != Q->ds[k])
			bouts[k] = op1(C, OP_IDENTITY, bouts[k]);
	}
	Q->dx_outer = arena_array(g->A, (size_t)nseq + 1, sizeof *Q->dx_outer);
	for (int k = 0; k < nseq; k++) {
		if (!root_needs(Q->X, Q->n->in[k]))
			continue;
		ir_value *gx_ = grad_get(C, F->inputs[k]);
		if (gx_)
			Q->dx_outer[k] = add_out(C, &Q->W, gx_, Q->T, Q->sa && k < Q->sa->n ? Q->sa->ints[k] : 0);
	}
	Q->dstate_outer = NULL;
	if (Q->n == Q->X->first_rec) {
		ir_value *gh = grad_get(C, F->outputs[0]);
		if (gh)
			Q->dstate_outer = add_out(C, &Q->W, gh, Q->T, 0);
	}
	return 1;
}

/* Per-step gradients of captured values, stacked to be reduced outside the loop. */
static int rec_stack_captured(recg *Q)
{
	gctx *C = &Q->C;
	bwd *W = &Q->W;
	Q->cb_a = arena_array(Q->g->A, (size_t)C->ncb + 1, sizeof *Q->cb_a);
	Q->cb_b = arena_array(Q->g->A, (size_t)C->ncb + 1, sizeof *Q->cb_b);
	for (int i = 0; i < C->ncb; i++) {
		contrib *q = &C->cb[i];
		Q->cb_a[i] = add_out(C, W, q->a, Q->T, 0);
		Q->cb_b[i] = NULL;
		if (q->kind == CB_GEMM) {
			/* the left operand: reuse a saved stack when it is one */
			for (int s = 0; s < W->nseq; s++)
				if (W->seq[s].inner == q->b && W->seq[s].axis == 0)
					Q->cb_b[i] = W->seq[s].outer;
			if (!Q->cb_b[i])
				Q->cb_b[i] = add_out(C, W, q->b, Q->T, 0);
		}
	}
	return !Q->X->errors;
}

/* The backward body's inputs and outputs; per-step inputs nothing reads are
 * dropped (one stays: it carries T). */
static void rec_close_body(recg *Q)
{
	ir_graph *b = Q->b, *g = Q->g;
	bwd *W = &Q->W;
	int nst = Q->nst;
	dead_code_prepass(b, W, Q->bouts, nst);
	int bn_seq = W->nseq, bn_out = W->nout;
	b->ninputs = bn_seq + nst + (Q->has_step ? 2 : 0);
	b->inputs = arena_array(g->A, (size_t)b->ninputs, sizeof *b->inputs);
	for (int s = 0; s < bn_seq; s++)
		b->inputs[s] = W->seq[s].inner;
	for (int k = 0; k < nst; k++)
		b->inputs[bn_seq + k] = Q->ds[k];
	if (Q->has_step) {
		b->inputs[bn_seq + nst] = Q->tb;
		b->inputs[bn_seq + nst + 1] = Q->Lb;
	}
	b->noutputs = nst + bn_out;
	b->outputs = arena_array(g->A, (size_t)b->noutputs, sizeof *b->outputs);
	for (int k = 0; k < nst; k++)
		b->outputs[k] = Q->bouts[k];
	for (int j = 0; j < bn_out; j++) {
		ir_value *v = W->outs[j];
		for (int k = 0; k < nst + j; k++)
			if (b->outputs[k] == v) {
				gctx C2 = Q->C;
				v = op1(&C2, OP_IDENTITY, v);
			}
		b->outputs[nst + j] = v;
	}
	ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_BODIES);
}

/* The backward RECURRENCE node. With sequence_lens the backward rows run
 * over the same valid steps, the other way: from each row's last valid step
 * down, or up to it. */
static void rec_append_node(recg *Q)
{
	ir_graph *g = Q->g, *b = Q->b;
	ir_node *n = Q->n;
	bwd *W = &Q->W;
	int nst = Q->nst, bn_seq = W->nseq, bn_out = W->nout;
	ir_node *r = Q->r = ir_node_new(g, OP_RECURRENCE, b->name, bn_seq + nst + Q->has_lens, nst + bn_out);
	if (Q->has_lens)
		r->in[bn_seq + nst] = n->in[n->nin - 1];
	r->body = b;
	r->rec_source = IR_REC_BACKWARD;
	r->origin = arena_printf(g->A, "backward of %s", n->origin ? n->origin : n->name);
	int64_t *sax = arena_array(g->A, (size_t)bn_seq + 1, sizeof *sax);
	int64_t *oax = arena_array(g->A, (size_t)bn_out + 1, sizeof *oax);
	for (int s = 0; s < bn_seq; s++) {
		r->in[s] = W->seq[s].outer;
		sax[s] = W->seq[s].axis;
	}
	for (int k = 0; k < nst; k++) {
		r->in[bn_seq + k] = grad_get(Q->R, n->out[k]);
		ir_value *fk = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
		fk->shape = Q->F->inputs[Q->nseq + k]->shape;
		r->out[k] = fk;
	}
	for (int j = 0; j < bn_out; j++) {
		r->out[nst + j] = W->outer_outs[j];
		oax[j] = W->out_axis[j];
	}
	ir_attr_set_int(r, "n_seq", bn_seq);
	ir_attr_set_int(r, "n_state", nst);
	ir_attr_set_int(r, "n_out", bn_out);
	ir_attr_set_int(r, "reverse", !Q->rev);
	ir_attr_set_ints(r, "seq_axis", bn_seq, sax);
	ir_attr_set_ints(r, "out_axis", bn_out, oax);
	ir_attr_set_int(r, "has_lens", Q->has_lens);
	if (Q->save_width >= 0)
		ir_attr_set_int(r, "save_width", Q->save_width);
	if (Q->has_step)
		ir_attr_set_int(r, "has_step", 2);
	ir_append(g, r);
}

/* The gradients flowing out of the recurrence: to its inputs, its initial
 * states and the values its body captures (a weight's: one GEMM over T*B rows). */
static void rec_flow_out(recg *Q)
{
	gctx *R = Q->R, *C = &Q->C;
	ir_node *n = Q->n;
	R->at = n;
	for (int k = 0; k < Q->nseq; k++)
		if (Q->dx_outer[k])
			grad_acc(R, n->in[k], Q->dx_outer[k]);
	for (int k = 0; k < Q->nst; k++)
		if (n->in[Q->nseq + k])
			grad_acc(R, n->in[Q->nseq + k], Q->r->out[k]);
	if (Q->dstate_outer)
		Q->X->dstate = Q->dstate_outer;
	for (int i = 0; i < C->ncb; i++) {
		contrib *q = &C->cb[i];
		if (q->kind == CB_ELEM) {
			grad_acc_ub(R, q->c, Q->cb_a[i]);
			continue;
		}
		/* dW = sum_t dY_t^T A_t (transB) or A_t^T dY_t: one GEMM over T*B rows */
		ir_node *f1 = mk(R, OP_FLATTEN, 1, &Q->cb_a[i]);
		ir_attr_set_int(f1, "axis", 2);
		ir_node *f2 = mk(R, OP_FLATTEN, 1, &Q->cb_b[i]);
		ir_attr_set_int(f2, "axis", 2);
		ir_value *dY = fin(R, f1), *A = fin(R, f2);
		double alpha = ir_attr_float(q->n, "alpha", 1.0f);
		int tbm = (int)ir_attr_int(q->n, "transB", 0);
		grad_acc(R, q->c, tbm ? grad_gemm(R, dY, A, 1, 0, alpha) : grad_gemm(R, A, dY, 1, 0, alpha));
	}
}

/* Backpropagation through time: the backward recurrence of recurrence n,
 * which recomputes each step from what the forward saves. */
void grad_rule_rec(gctx *R, ir_node *n)
{
	recg Q0 = {.R = R, .X = R->X, .n = n}, *Q = &Q0;
	if (!rec_read_attrs(Q) || !rec_mark_needs(Q) || !rec_collect_saves(Q))
		return;
	rec_new_backward(Q);
	if (!rec_backward_inputs(Q))
		return;
	rec_recompute(Q);
	if (!rec_adjoint(Q))
		return;
	/* what the forward saves instead of the states and products, where cheaper */
	Q->save_width = choose_saves(&Q->C, &Q->W, n, Q->rc_lo, Q->rc_hi, Q->saved_in, Q->nsave, Q->bouts,
				     Q->nst, Q->T);
	if (Q->X->errors)
		return;
	if (!rec_stack_captured(Q))
		return;
	rec_close_body(Q);
	rec_append_node(Q);
	rec_flow_out(Q);
}
