/* reroll_find.c: pass_reroll's first job, finding a traced loop: the
 * per-step slices x[t] of the sequences it reads (reroll_find_sequences),
 * the consumer lists, and the step each node belongs to
 * (reroll_assign_steps, with the cut between two steps that moves work
 * the trace ran for the next step into it).  Its results (R->seq, R->label,
 * R->copy) are what reroll_match.c matches. */
#include "mincut.h"
#include "reroll.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- per-step slices ----------------------------------------------------------------- */

/* Whether n reads x[t] of a rank-3 source on axis 0 or 1: 1 with *src, *axis, *t. */
static int anchor_gather(const ir_node *n, ir_value **src, int *axis, int64_t *t)
{
	if (n->op != OP_GATHER || n->nin != 2 || !n->in[0] || n->in[0]->shape.rank < 3 ||
	    !ir_value_is_const(n->in[1]) || n->in[1]->shape.rank != 0 || n->in[0]->dtype != DT_F32)
		return 0;
	int r = n->in[0]->shape.rank;
	int64_t ax = ir_attr_int(n, "axis", 0);
	if (ax < 0)
		ax += r;
	ir_dim T = n->in[0]->shape.d[ax];
	if (ax != 0 && ax != 1)
		return 0;
	int64_t i = ir_const_int(n->in[1], 0);
	if (i < 0 && ir_dim_is_const(T))
		i += T.k;
	if (i < 0 || (ir_dim_is_const(T) && i >= T.k))
		return 0;
	*src = n->in[0];
	*axis = (int)ax;
	*t = i;
	return 1;
}

/* The one axis Squeeze sq drops, normalised to its input's rank: its axes
 * input of one element, or without one (torch.squeeze() of every unit axis)
 * the one axis of its input whose size is 1 (a run-time size is never 1:
 * infer.h); -1 for another Squeeze. */
static int64_t squeezed_axis(const ir_node *sq)
{
	const ir_value *x = sq->nin >= 1 ? sq->in[0] : NULL;
	if (sq->op != OP_SQUEEZE || !x || x->shape.rank < 1)
		return -1;
	int64_t r = x->shape.rank, a = -1;
	if (sq->nin >= 2 && sq->in[1]) {
		if (!ir_value_is_const(sq->in[1]) || ir_shape_const_numel(&sq->in[1]->shape) != 1)
			return -1;
		a = ir_const_int(sq->in[1], 0);
		return a < 0 ? a + r : a;
	}
	for (int64_t i = 0; i < r; i++)
		if (ir_dim_eq(x->shape.d[i], ir_dim_const(1))) {
			if (a >= 0)
				return -1;
			a = i;
		}
	return a;
}

/* Slice(x, [t], [t+1], [axis], [1]) read only by Squeeze(axes=[axis]) (or a
 * Squeeze without axes that drops that axis alone). */
static int anchor_slice(const rr *R, const ir_node *sq, ir_node **slice, ir_value **src, int *axis,
			int64_t *t)
{
	if (squeezed_axis(sq) < 0)
		return 0;
	ir_node *s = sq->in[0] ? sq->in[0]->producer : NULL;
	if (!s || reroll_nid(R, s) < 0 || s->op != OP_SLICE || s->nin < 5 || s->out[0]->nuses != 1 ||
	    !s->in[0] || s->in[0]->shape.rank < 3 || s->in[0]->dtype != DT_F32)
		return 0;
	for (int k = 1; k < 5; k++)
		if (!ir_value_is_const(s->in[k]) || ir_shape_const_numel(&s->in[k]->shape) != 1)
			return 0;
	int r = s->in[0]->shape.rank;
	int64_t ax = ir_const_int(s->in[3], 0), sqax = squeezed_axis(sq);
	if (ax < 0)
		ax += r;
	if (ax < 0 || ax >= r)
		return 0;
	ir_dim T = s->in[0]->shape.d[ax];
	if ((ax != 0 && ax != 1) || sqax != ax || ir_const_int(s->in[4], 0) != 1)
		return 0;
	int64_t st = ir_const_int(s->in[1], 0), en = ir_const_int(s->in[2], 0);
	if (ir_dim_is_const(T) && st < 0)
		st += T.k;
	if (ir_dim_is_const(T) && en < 0)
		en += T.k;
	if (st < 0 || (ir_dim_is_const(T) && st >= T.k) || en != st + 1)
		return 0;
	*slice = s;
	*src = s->in[0];
	*axis = (int)ax;
	*t = st;
	return 1;
}

/* Whether sq drops the unit axis ax of its rank-3 input: Squeeze(axes=[ax]),
 * Gather(index 0 or -1, axis ax) or a Reshape to the other two dimensions. */
static int drops_axis(const ir_node *sq, int64_t ax)
{
	if ((sq->nin != 2 && sq->op != OP_SQUEEZE) || (sq->nin == 2 && !ir_value_is_const(sq->in[1])) || !sq->in[0] ||
	    sq->in[0]->shape.rank < 3 || !sq->out[0] || sq->out[0]->shape.rank != sq->in[0]->shape.rank - 1)
		return 0;
	int64_t a, r = sq->in[0]->shape.rank;
	switch (sq->op) {
	case OP_SQUEEZE:
		return squeezed_axis(sq) == ax;
	case OP_GATHER:
		if (sq->in[1]->shape.rank != 0)
			return 0;
		a = ir_attr_int(sq, "axis", 0);
		return (a < 0 ? a + r : a) == ax && (ir_const_int(sq->in[1], 0) == 0 || ir_const_int(sq->in[1], 0) == -1);
	case OP_RESHAPE:
		for (int i = 0, o = 0; i < r; i++)
			if (i != ax && !ir_dim_eq(sq->in[0]->shape.d[i], sq->out[0]->shape.d[o++]))
				return 0;
		return 1;
	default:
		return 0;
	}
}

/* Output t of one Split of x into unit slices on a time axis, with that
 * axis dropped (drops_axis): what x.unbind(axis), torch.split(x, 1, axis)
 * + squeeze / [0] / view export.  The Split stays before the loop and goes
 * once its outputs are unread. */
static int anchor_split(const rr *R, const ir_node *sq, ir_value **src, int *axis, int64_t *t)
{
	if ((sq->op != OP_SQUEEZE && sq->op != OP_GATHER && sq->op != OP_RESHAPE) || !sq->in[0] ||
	    sq->in[0]->nuses != 1)
		return 0;
	ir_node *s = sq->in[0]->producer;
	if (!s || reroll_nid(R, s) < 0 || s->op != OP_SPLIT || s->nout < 3 || !s->in[0] ||
	    s->in[0]->shape.rank < 3 || s->in[0]->dtype != DT_F32)
		return 0;
	int r = s->in[0]->shape.rank;
	int64_t ax = ir_attr_int(s, "axis", 0);
	if (ax < 0)
		ax += r;
	if ((ax != 0 && ax != 1) || !drops_axis(sq, ax))
		return 0;
	ir_dim T = s->in[0]->shape.d[ax];
	if (!ir_dim_is_const(T) || T.k != s->nout)
		return 0;
	int64_t k = -1;
	for (int o = 0; o < s->nout; o++) {
		const ir_value *v = s->out[o];
		if (!v || v->shape.rank != r || !ir_dim_is_const(v->shape.d[ax]) || v->shape.d[ax].k != 1)
			return 0;
		if (v == sq->in[0])
			k = o;
	}
	if (k < 0)
		return 0;
	*src = s->in[0];
	*axis = (int)ax;
	*t = k;
	return 1;
}

typedef struct anc {
	reroll_slice at;        /* the source, axis and step (first: the sort key) */
	ir_node *n, *aux;       /* the anchor, its Slice when it is a Squeeze */
} anc;

/* Finds the sequences read step by step.  Only sources that do not
 * themselves depend on a per-step slice count (an inner loop over the
 * stacked output of an outer one is rolled on the next round). */
static int find_sequences_once(rr *R, char *noanchor);

int reroll_find_sequences(rr *R)
{
	/* An anchor that depends on another is a slice of a per-step value, not
	 * a read of a sequence.  Slices that form no sequence (x[0] and x[1] of
	 * stacked initial states [L, B, H], one per layer) are no anchors: the
	 * search runs again without them, so that what depends on them (layer
	 * 1's reads of the outputs of layer 0's loop) may be one. */
	char *noanchor = arena_alloc(R->A, (size_t)R->nn + 1);
	memset(noanchor, 0, (size_t)R->nn + 1);
	for (int pass = 0; pass < 4; pass++) {
		int more = find_sequences_once(R, noanchor);
		if (more <= 0)
			return R->nseq > 0;
	}
	return R->nseq > 0;
}

static int find_sequences_once(rr *R, char *noanchor)
{
	ir_graph *g = R->g;
	anc *a = arena_array(R->A, (size_t)R->nn + 1, sizeof *a);
	int na = 0;
	char *dep = arena_alloc(R->A, (size_t)R->nv + 1);   /* value depends on an anchor */
	memset(dep, 0, (size_t)R->nv + 1);
	R->nseq = 0;
	R->T = 0;
	for (int i = 0; i < R->nn; i++) {
		ir_node *n = g->nodes[i];
		int d = 0;
		for (int k = 0; k < n->nin; k++)
			d |= reroll_vid(R, n->in[k]) >= 0 && dep[n->in[k]->id];
		ir_node *aux = NULL;
		ir_value *src;
		int axis;
		int64_t t;
		if (!d && !noanchor[i] && (anchor_split(R, n, &src, &axis, &t) || anchor_gather(n, &src, &axis, &t) ||
			   anchor_slice(R, n, &aux, &src, &axis, &t)) &&
		    reroll_vid(R, src) >= 0 && !dep[src->id]) {
			a[na++] = (anc){{src, axis, t}, n, aux};
			d = 1;
		}
		for (int k = 0; k < n->nout; k++)
			if (reroll_vid(R, n->out[k]) >= 0)
				dep[n->out[k]->id] = (char)d;
	}
	if (na < 3)
		return 0;
	qsort(a, (size_t)na, sizeof *a, reroll_slice_cmp);
	/* groups covering 0..T-1 exactly; all groups taken must share one T */
	R->seq = arena_array(R->A, (size_t)na, sizeof *R->seq);
	R->T = 0;
	int rejected = 0;
	for (int i = 0; i < na;) {
		int j = i;
		while (j < na && a[j].at.src == a[i].at.src && a[j].at.axis == a[i].at.axis)
			j++;
		/* the trace read the first j - i steps: all of them, or of a
		 * symbolic axis the traced ones, or fewer (a first step that reads
		 * something else, x[t-1] after a start token: the loop over the
		 * slices starts after it, and x's last steps are not read) */
		ir_dim Td = a[i].at.src->shape.d[a[i].at.axis];
		int64_t T = j - i;
		int ok = T >= 3 && (!ir_dim_is_const(Td) || T <= Td.k) && (R->T == 0 || R->T == T);
		for (int k = i; ok && k < j; k++)
			ok = a[k].at.t == k - i;
		if (ok) {
			seqsrc *s = &R->seq[R->nseq++];
			s->src = a[i].at.src;
			s->axis = a[i].at.axis;
			s->anchor = arena_array(R->A, (size_t)T, sizeof *s->anchor);
			s->aux = arena_array(R->A, (size_t)T, sizeof *s->aux);
			for (int k = i; k < j; k++) {
				s->anchor[k - i] = a[k].n;
				s->aux[k - i] = a[k].aux;
			}
			R->T = (int)T;
		} else {
			for (int k = i; k < j; k++)
				noanchor[a[k].n->id] = 1;
			rejected = 1;
		}
		i = j;
	}
	return rejected;
}

int reroll_find_generated(rr *R)
{
	R->mark = arena_array(R->A, (size_t)R->nn + 1, sizeof *R->mark);
	/* the first run (the longest, the earliest) whose first product is fed
	 * a value the steps compute or the graph reads (not one reading a
	 * folded initial state alone) */
	const ir_value *x = NULL;
	int T = 0;
	for (int skip = 0; !x && (T = reroll_generated_steps(R->g, skip, R->mark)) >= 3; skip++) {
		const ir_node *p = R->mark[0];
		for (int k = 0; k < p->nin && !x; k++)
			if (p->in[k] && !reroll_has_data(p->in[k]))
				x = p->in[k];
		if (x && (x->shape.rank < 2 || x->dtype != DT_F32))
			x = NULL;
	}
	if (!x)
		return 0;
	/* the batch: the first axis of the rows that is not a unit axis
	 * ([B, K], or [1, B, K] as one-step nn.GRU calls keep it) */
	R->batch = ir_dim_const(1);
	for (int a = 0; a + 1 < x->shape.rank; a++)
		if (!ir_dim_eq(x->shape.d[a], ir_dim_const(1))) {
			R->batch = x->shape.d[a];
			break;
		}
	R->gen = 1;
	R->T = T;
	R->nseq = 0;
	return 1;
}

/* ---- steps --------------------------------------------------------------------------- */

void reroll_build_consumers(rr *R)
{
	ir_graph *g = R->g;
	R->cstart = arena_array(R->A, (size_t)R->nv + 2, sizeof *R->cstart);
	for (int i = 0; i < R->nn; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			int v = reroll_vid(R, g->nodes[i]->in[k]);
			if (v >= 0)
				R->cstart[v + 1]++;
		}
	for (int v = 0; v < R->nv; v++)
		R->cstart[v + 1] += R->cstart[v];
	int *fill = arena_array(R->A, (size_t)R->nv + 1, sizeof *fill);
	R->cons = arena_array(R->A, (size_t)R->cstart[R->nv] + 1, sizeof *R->cons);
	for (int i = 0; i < R->nn; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			int v = reroll_vid(R, g->nodes[i]->in[k]);
			if (v >= 0 && (k == 0 || g->nodes[i]->in[k] != g->nodes[i]->in[k - 1]))
				R->cons[R->cstart[v] + fill[v]++] = i;
		}
	/* duplicate entries (a node reading a value twice, not adjacently) are harmless */
	for (int v = 0; v < R->nv; v++)
		for (int j = R->cstart[v] + fill[v]; j < R->cstart[v + 1]; j++)
			R->cons[j] = -1;
}

/* Elements per batch row of v (symbolic dimensions count 1): what
 * carrying v from step to step costs. */
static double row_size(const ir_value *v)
{
	double n = 1;
	for (int a = 0; v && a < v->shape.rank; a++)
		if (ir_dim_is_const(v->shape.d[a]))
			n *= (double)v->shape.d[a].k;
	return n;
}

/* ---- the cut between two steps ------------------------------------------------------ */

/* A value times (or over) a scalar constant: mu * v.  Carrying v or
 * mu * v costs the same; the state is v, so of equal cuts the one that
 * moves the scaling into the next step is taken. */
static int scaled_copy(const ir_node *n)
{
	if ((n->op != OP_MUL && n->op != OP_DIV) || n->nin != 2)
		return 0;
	for (int k = 0; k < 2; k++)
		if (n->in[k] && ir_value_is_const(n->in[k]) && ir_shape_const_numel(&n->in[k]->shape) == 1 &&
		    (k == 1 || n->op == OP_MUL))
			return 1;
	return 0;
}

/* Moves to step t+1 the nodes of step t (labels by dependence) that the
 * trace ran for step t+1: the set M that minimises the elements per row
 * carried from step t to t+1 (values made outside M and read in M or in
 * step t+1), closed under readers (a reader in step t of a node in M is in
 * M), never holding a slice of x_t, a node read after the loop or a node
 * read two steps later; of equal cuts the one moving most nodes.  A minimum
 * cut of a flow network (mincut.h): vertex 2 + j for step node j, then one
 * per value a cut may carry; source side: stays; sink side: moves. */
typedef struct cut_edge_t {
	int u, v;
	int64_t cap;
} cut_edge_t;

typedef struct cut {
	rr *R;
	const int *asap;
	int t, k;               /* the step; its nodes */
	int *loc;               /* [k] node index of step node j */
	int *idx;               /* [nn] step node of node i, or -1 */
	int64_t unit;           /* a carried element's cost (1: a moved node's) */
	int src, snk, aux, nv;  /* vertices: next free aux vertex, count */
	cut_edge_t *e;          /* the edges in the order added */
	int ne, cape;
	char *from_src;         /* [k] step node j has an edge from the source */
} cut;

static void cut_edge(cut *C, int u, int v, int64_t cap)
{
	if (C->ne + 1 > C->cape) {
		C->e = arena_grow(C->R->A, C->e, (size_t)C->cape, (size_t)C->cape * 2 + 16, sizeof *C->e);
		C->cape = C->cape * 2 + 16;
	}
	C->e[C->ne++] = (cut_edge_t){u, v, cap};
	if (u == C->src && v >= 2 && v < 2 + C->k)
		C->from_src[v - 2] = 1;
}

/* Step t's nodes (C->loc, C->idx) and the network's vertices; 0 when none. */
static int cut_nodes(cut *C)
{
	rr *R = C->R;
	int k = 0;
	for (int i = 0; i < R->nn; i++)
		k += C->asap[i] == C->t;
	if (k == 0)
		return 0;
	C->loc = arena_array(R->A, (size_t)k, sizeof *C->loc);
	C->idx = arena_array(R->A, (size_t)R->nn, sizeof *C->idx);
	k = 0;
	for (int i = 0; i < R->nn; i++) {
		C->idx[i] = -1;
		if (C->asap[i] == C->t) {
			C->idx[i] = k;
			C->loc[k++] = i;
		}
	}
	int naux = 0;
	for (int j = 0; j < k; j++)
		naux += R->g->nodes[C->loc[j]]->nout + R->g->nodes[C->loc[j]]->nin;
	C->k = k;
	C->unit = k + 1;
	C->src = 0;
	C->snk = 1;
	C->aux = 2 + k;
	C->nv = 2 + k + naux;
	C->from_src = arena_alloc(R->A, (size_t)k + 1);
	return k;
}

/* The position of step t+1's start in the node list: its first slice
 * after step t's first node, else its first node. */
static int next_step_start(const cut *C)
{
	const rr *R = C->R;
	int t = C->t, ref = R->nn, first0 = R->nn, anc0 = R->nn;
	for (int i = 0; i < R->nn; i++) {
		int marker = R->anchor_of[i] || (R->gen && R->mark_of[i]);
		if (C->asap[i] == t + 1 && marker && anc0 == R->nn)
			anc0 = i;
		if (C->asap[i] == t + 1 && !marker && first0 == R->nn)
			first0 = i;
		if (C->asap[i] == t && !marker && ref == R->nn)
			ref = i;        /* step t's first node */
	}
	return anc0 > ref ? anc0 : first0;
}

/* The edges of step node j's output o: carried to step t+1, or to a
 * reader in step t that moves; whether a reader elsewhere pins j. */
static int cut_output_edges(cut *C, int j, int o)
{
	rr *R = C->R;
	ir_node *n = R->g->nodes[C->loc[j]];
	int v = reroll_vid(R, n->out[o]), t = C->t;
	if (v < 0)
		return 0;
	int64_t size = (int64_t)row_size(n->out[o]) * C->unit;
	int next = 0, here = 0, pin = reroll_is_graph_output(R, n->out[o]);
	for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
		int r = R->cons[c];
		if (r < 0)
			continue;
		if (C->asap[r] == t + 1)
			next = 1;
		else if (C->asap[r] == t && C->idx[r] >= 0) {
			here = 1;
			cut_edge(C, 2 + C->idx[r], 2 + j, MC_INF);     /* r stays => n stays */
		} else
			pin = 1;
	}
	if (next)
		cut_edge(C, 2 + j, C->snk, size);       /* carried if n stays */
	if (here && !next) {
		int a = C->aux++;
		cut_edge(C, 2 + j, a, size);            /* carried if n stays and a reader moves */
		for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
			int r = R->cons[c];
			if (r >= 0 && C->asap[r] == t && C->idx[r] >= 0)
				cut_edge(C, a, 2 + C->idx[r], MC_INF);
		}
	}
	return pin;
}

/* Whether node n reads x_t or step t-1's carried values, and so stays in
 * step t (in step 0: the initial states, values [B, N] from before the
 * loop that are not weights). */
static int reads_step_start(const cut *C, const ir_node *n)
{
	const rr *R = C->R;
	int t = C->t;
	for (int q = 0; q < n->nin; q++) {
		ir_value *x = n->in[q];
		ir_node *p = x ? x->producer : NULL;
		int pi = p ? reroll_nid(R, p) : -1;
		if (pi >= 0 && R->anchor_of[pi] && C->asap[pi] == t)
			return 1;
		else if (pi >= 0 && t > 0 && R->label[pi] == t - 1)
			return 1;
		else if (t == 0 && x && reroll_label_of(R, x) == LBL_PREFIX && x->kind != VAL_WEIGHT &&
			 x->shape.rank == 2 && ir_dim_eq(x->shape.d[0], R->batch))
			return 1;
	}
	return 0;
}

/* Step node j's edges: of equal cuts, the one closest to where the trace
 * computed the node (after the next step's first slice or, with the
 * slices taken before the loop, its first node reading one, the node was
 * run for step t+1); its outputs'; pinned where it must stay. */
static void cut_node_edges(cut *C, int j, int ref)
{
	rr *R = C->R;
	int i = C->loc[j];
	ir_node *n = R->g->nodes[i];
	int pin = R->anchor_of[i] != 0 || (R->gen && R->mark_of[i]);
	if (i > ref || scaled_copy(n))
		cut_edge(C, 2 + j, C->snk, 1);
	else
		cut_edge(C, C->src, 2 + j, 1);
	for (int o = 0; o < n->nout; o++)
		pin |= cut_output_edges(C, j, o);
	if (!pin)
		pin = reads_step_start(C, n);
	if (pin)
		cut_edge(C, C->src, 2 + j, MC_INF);
}

/* Values moved into step t from step t-1 (staying there) that a node of
 * step t reads: carried if a reader moves (one aux vertex per value, at
 * its first reader). */
static void cut_moved_in(cut *C)
{
	rr *R = C->R;
	ir_graph *g = R->g;
	int t = C->t;
	for (int j = 0; j < C->k; j++) {
		ir_node *n = g->nodes[C->loc[j]];
		for (int q = 0; q < n->nin; q++) {
			ir_value *x = n->in[q];
			int v = reroll_vid(R, x), pi = x && x->producer ? reroll_nid(R, x->producer) : -1;
			if (v < 0 || pi < 0 || R->label[pi] != t || C->asap[pi] == t)
				continue;
			int first = 1;
			for (int j2 = 0; j2 < j && first; j2++)
				for (int q2 = 0; q2 < g->nodes[C->loc[j2]]->nin; q2++)
					first &= g->nodes[C->loc[j2]]->in[q2] != x;
			for (int q2 = 0; q2 < q; q2++)
				first &= n->in[q2] != x;
			if (!first)
				continue;
			if (C->aux >= C->nv)
				break;
			int a = C->aux++;
			cut_edge(C, C->src, a, (int64_t)row_size(x) * C->unit);
			for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
				int r = R->cons[c];
				if (r >= 0 && C->asap[r] == t && C->idx[r] >= 0)
					cut_edge(C, a, 2 + C->idx[r], MC_INF);
			}
		}
	}
}

static void cut_step(rr *R, const int *asap, int t)
{
	cut C = {.R = R, .asap = asap, .t = t};
	if (!cut_nodes(&C))
		return;
	int ref = next_step_start(&C);
	for (int j = 0; j < C.k; j++)
		cut_node_edges(&C, j, ref);
	cut_moved_in(&C);
	mc_graph *G = mc_new(R->A, C.nv, C.ne);
	for (int e = 0; e < C.ne; e++)
		mc_edge(G, C.e[e].u, C.e[e].v, C.e[e].cap);
	char *stays = arena_alloc(R->A, (size_t)C.nv);
	mc_cut(G, C.src, C.snk, stays);
	if (getenv("CELLC_DEBUG_REROLL") && getenv("CELLC_DEBUG_REROLL")[0] == '2')
		for (int j = 0; j < C.k; j++)
			fprintf(stderr, "cut %d: %s %s%s\n", t, R->g->nodes[C.loc[j]]->name, stays[2 + j] ? "stays" : "moves",
				C.from_src[j] ? " (pinned)" : "");
	for (int j = 0; j < C.k; j++)
		if (!stays[2 + j])
			R->label[C.loc[j]] = t + 1;
}

/* Labels: the step each node belongs to (see the opening comment). */
int reroll_assign_steps(rr *R)
{
	ir_graph *g = R->g;
	R->label = arena_array(R->A, (size_t)R->nn, sizeof *R->label);
	R->anchor_of = arena_array(R->A, (size_t)R->nn, sizeof *R->anchor_of);
	R->mark_of = arena_array(R->A, (size_t)R->nn, sizeof *R->mark_of);
	for (int t = 0; R->gen && t < R->T; t++)
		R->mark_of[R->mark[t]->id] = t + 1;
	for (int s = 0; s < R->nseq; s++)
		for (int t = 0; t < R->T; t++) {
			R->anchor_of[R->seq[s].anchor[t]->id] = s + 1;
			if (R->seq[s].aux[t])
				R->anchor_of[R->seq[s].aux[t]->id] = s + 1;
		}
	for (int i = 0; i < R->nn; i++) {
		ir_node *n = g->nodes[i];
		if (R->anchor_of[i]) {
			/* the anchor's own t: find it (T is small per source) */
			seqsrc *s = &R->seq[R->anchor_of[i] - 1];
			int t = 0;
			while (s->anchor[t] != n && s->aux[t] != n)
				t++;
			R->label[i] = t;
			continue;
		}
		if (R->mark_of[i]) {            /* a generated step's product: its step */
			R->label[i] = R->mark_of[i] - 1;
			continue;
		}
		int hi = LBL_PREFIX, lo = INT32_MAX, tail = 0;
		for (int k = 0; k < n->nin; k++) {
			int l = reroll_label_of(R, n->in[k]);
			if (l == LBL_TAIL)
				tail = 1;
			else if (l >= 0) {
				hi = l > hi ? l : hi;
				lo = l < lo ? l : lo;
			}
		}
		R->label[i] = tail || (hi >= 0 && lo < hi - 1) || n->body ? (hi >= 0 || tail ? LBL_TAIL : LBL_PREFIX) : hi;
	}
	/* where the trace computed it: work on step t's values that only step
	 * t+1 reads (h2h(h) at the top of the next step) belongs to step t+1.
	 * Which nodes move is a minimum cut (cut_step): the values carried
	 * from step to step are the narrowest ones (h, c, v; not h2h(h) or its
	 * gate slices), the same whatever the author wrote. */
	if (!R->gen)
		R->batch = R->seq[0].src->shape.d[1 - R->seq[0].axis];
	int *asap = arena_array(R->A, (size_t)R->nn + 1, sizeof *asap);
	memcpy(asap, R->label, (size_t)R->nn * sizeof *asap);
	for (int t = 0; t + 1 < R->T; t++)
		cut_step(R, asap, t);
	R->copy = arena_array(R->A, (size_t)R->T, sizeof *R->copy);
	R->ncopy = arena_array(R->A, (size_t)R->T, sizeof *R->ncopy);
	for (int i = 0; i < R->nn; i++)
		if (R->label[i] >= 0 && !R->anchor_of[i])
			R->ncopy[R->label[i]]++;
	for (int t = 0; t < R->T; t++) {
		R->copy[t] = arena_array(R->A, (size_t)R->ncopy[t] + 1, sizeof **R->copy);
		R->ncopy[t] = 0;
	}
	for (int i = 0; i < R->nn; i++)
		if (R->label[i] >= 0 && !R->anchor_of[i])
			R->copy[R->label[i]][R->ncopy[R->label[i]]++] = i;
	R->m = R->T >= 4 ? 2 : 1;
	if (getenv("CELLC_DEBUG_REROLL"))
		for (int t = 0; t < R->T; t++) {
			fprintf(stderr, "reroll: step %d has %d nodes:", t, R->ncopy[t]);
			for (int c = 0; c < R->ncopy[t] && getenv("CELLC_DEBUG_REROLL")[0] == '2'; c++)
				fprintf(stderr, " %s", R->g->nodes[R->copy[t][c]]->name);
			fprintf(stderr, "\n");
		}
	for (int t = 1; t + 1 < R->T; t++)
		if (R->ncopy[t] != R->ncopy[R->m]) {
			/* the first node where the two reroll_differ, in the graph's order */
			int big = R->ncopy[t] > R->ncopy[R->m] ? t : R->m, small = big == t ? R->m : t, j = 0;
			while (j < R->ncopy[small] &&
			       g->nodes[R->copy[big][j]]->op == g->nodes[R->copy[small][j]]->op)
				j++;
			reroll_differ(R, big, small, g->nodes[R->copy[big][j]]);
			return reroll_fail(R, WHY_SIZES);
		}
	if (R->ncopy[R->m] == 0) {
		R->no_step = 1;
		return reroll_fail(R, WHY_NO_STEP);
	}
	return 0;
}
