/* pass_reroll.c: recurrences recovered from traced exports.
 *
 * requires: pass_infer (shapes known, constants folded, dead nodes gone,
 *           Slice parameters canonical, nuses/ids fresh).
 * produces: every traced loop -- T copies of one step subgraph reading the
 *           per-step slices x[t] of a sequence (Gather(x, t, axis),
 *           Slice(x, t, t+1, axis) + Squeeze, or output t of one Split of x
 *           into T unit slices + Squeeze, Gather(0) or Reshape dropping the
 *           unit axis: x.unbind(), torch.split(x, 1))
 *           -- becomes one RECURRENCE (reverse = 1 when the copies read
 *           the slices from the last to the first: reversed(x.unbind(0));
 *           its stacked outputs are reversed back into the trace's order)
 *           (ir.h) whose body is one copy of the step:
 *           - body inputs: the per-step slices, one coefficient table per
 *             per-step constant that differs between copies (an f32 [B, 1]
 *             step input) and the carried states (values of step t-1 that
 *             step t reads); a step-number input (has_step = 1) when a
 *             coefficient follows the NAG restart schedule of docs/cells.md,
 *             which the body then computes, so it holds for any T;
 *           - initial states: whatever the first copy reads (zeros that the
 *             exporter folded into the first copy are recognised, and so
 *             is a first copy in which states that start equal had their
 *             identical updates computed once);
 *           - outputs: final states the rest of the graph reads, stacked
 *             per-step outputs (Unsqueeze + Concat of every step, in order),
 *             last-step values (a stacked output and Gather(-1)) and
 *             values of single steps read after the loop (a stacked output
 *             and one Gather(t) per value read: a model returning its
 *             steps' outputs as a tuple of T graph outputs; T then stays
 *             fixed, with a note);
 *           the copies are proved isomorphic first: same ops, attributes,
 *           weights and wiring up to the carried values (per-copy constants
 *           compared by content).  The time axis becomes a dimension symbol
 *           when that is sound (the sequence is a graph input read only
 *           through its slices, every coefficient extends to any T, and the
 *           graph after the loop re-infers with a symbolic T); otherwise T
 *           stays fixed and the recurrence says why (attribute time_note,
 *           shown by `cellc info`).  Stacked layers, each with a loop of its
 *           own: the first layer's T stays fixed while the second layer's
 *           per-step reads of its output pick fixed steps; once the second
 *           loop is rolled over that whole output, both become symbolic
 *           together (fixed_upstream).  States updated by the same
 *           expression over consecutive column blocks of one product (a
 *           velocity per gate) become one state (merge_parallel_states).
 *           recognize.c names the cell the step
 *           computes (attributes cell, cell_note).  A graph that is not
 *           a clean trace is left unchanged (never an error); when it holds
 *           a traced loop (T >= 3 per-step slices read by the steps'
 *           computation) that stays unrolled, the root graph records it
 *           (ir_unrolled: why, from fallback.def, the first two steps found
 *           to differ and the node where, the nodes left unrolled), which
 *           the commands report as a fallback (compile.h); so it does for
 *           the loops the rounds do not find, found after them only to be
 *           reported (reroll_unfound.c: slices of another rank or axis or
 *           read another way, and generated sequences that read none).
 * breaks:   nothing.
 *
 * Cost: nodes are assigned to steps in one topological sweep (each node's
 * step is the latest per-step slice it depends on, moved to the next step
 * when only the next step reads it: that is where the trace computed it);
 * copies are matched against the template through consumer lists, so the
 * pass is linear in the graph size (a 784-step trace of ~30,000 nodes takes
 * milliseconds) and the emitted code does not grow with T.
 * CELLC_DEBUG_REROLL=1 prints to stderr why a loop that was found is left
 * unrolled.
 */
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "recognize.h"
#include "reroll.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LBL_PREFIX = -1, LBL_TAIL = -2 };
enum { IN_NONE, IN_INT, IN_SEQ, IN_STATE, IN_CAP, IN_COEF };

typedef struct tin {
	int kind, idx;          /* INT: template value; SEQ: sequence; STATE: state; COEF: table */
	ir_value *cap;          /* CAP / COEF: the template's value */
} tin;

typedef struct coef {
	int node, k;            /* template node and input */
	float *tab;             /* [T] per-copy value */
	int *have;              /* [T] copy seen */
} coef;

typedef struct seqsrc {
	ir_value *src;
	int axis;
	ir_node **anchor;       /* [T] the node whose output is x_t */
	ir_node **aux;          /* [T] its Slice when the anchor is a Squeeze */
} seqsrc;

typedef struct rr {
	ir_graph *g;
	diag *D;
	arena *A;
	int nn, nv;             /* root nodes / values when the pass started */
	int T, m;               /* steps; template copy */
	int *label;             /* [nn] */
	int *anchor_of;         /* [nn] sequence index + 1 of an anchor (or aux) node, 0 */
	int *cstart, *cons;     /* consumers of value id: cons[cstart[v] .. cstart[v+1]) */
	int nseq;
	seqsrc *seq;
	ir_dim batch;           /* the batch dimension of the first sequence */
	int **copy;             /* [T] node indices of each copy (anchors excluded) */
	int *ncopy;
	/* template */
	int nt;                 /* nodes */
	ir_node **tn;
	tin **ti;               /* [nt][nin] */
	int ntv;                /* values */
	int *tvof;              /* [nv] template value index or -1 */
	ir_value **tval;        /* [ntv] */
	int nstate;
	ir_value **state_in;    /* [nstate] the template's state-in values (from copy m-1) */
	int *state_out;         /* [nstate] template value index */
	int *stateof;           /* [nv] state index or -1 */
	int ncoef;
	coef *coefs;
	/* matching */
	ir_value ***map;        /* [T][ntv] */
	ir_value ***sin;        /* [T][nstate] */
	char *matched;          /* [nn] */
	char *done;             /* [T] copies matched so far */
	int map_node;           /* the node commit_match took last */
	int map_again;          /* ... and it was matched before (copy 0: see fits) */
	int round;              /* loops rolled before this one */
	int reverse;            /* the trace ran over the slices from the last to the first */
	ir_graph *scratch;      /* copy-0 folding */
	ir_unrolled_why why;    /* why the graph was left alone (WHY_NONE: not yet) */
	int no_step;            /* the slices are read by no computation (only by
	                           graph outputs, as after an earlier round): no
	                           loop, nothing to report */
	int diff_found;         /* the first difference between two steps (differ): */
	int diff_step, diff_vs; /* node diff_node of step diff_step has no counterpart */
	const ir_node *diff_node; /* in step diff_vs */
} rr;

/* ---- small helpers ----------------------------------------------------------- */

static int vid(const rr *R, const ir_value *v)
{
	return v && v->graph == R->g && v->id >= 0 && v->id < R->nv && R->g->values[v->id] == v ? v->id : -1;
}

static int nid(const rr *R, const ir_node *n)
{
	return n && n->graph == R->g && n->id >= 0 && n->id < R->nn && R->g->nodes[n->id] == n ? n->id : -1;
}

static int label_of_value(const rr *R, const ir_value *v)
{
	int p = v ? nid(R, v->producer) : -1;
	return p >= 0 ? R->label[p] : LBL_PREFIX;
}

int reroll_has_data(const ir_value *v)
{
	return v && v->data && !v->sym && (v->kind == VAL_CONST || v->kind == VAL_WEIGHT);
}

/* Same constant contents; approx: f32 within a relative 1e-6 (values the
 * exporter folded against values we fold). */
int reroll_same_const(const ir_value *a, const ir_value *b, int approx)
{
	if (a == b)
		return 1;
	if (!reroll_has_data(a) || !reroll_has_data(b) || a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape))
		return 0;
	int64_t n = ir_shape_const_numel(&a->shape);
	if (n < 0)
		return 0;
	size_t bytes = (size_t)n * ir_dtype_size(a->dtype);
	if (memcmp(a->data, b->data, bytes) == 0)
		return 1;
	if (!approx || a->dtype != DT_F32)
		return 0;
	const float *x = a->data, *y = b->data;
	for (int64_t i = 0; i < n; i++)
		if (!(fabsf(x[i] - y[i]) <= 1e-30f + 1e-6f * fmaxf(fabsf(x[i]), fabsf(y[i]))))
			return 0;
	return 1;
}

static int same_attrs(const ir_node *a, const ir_node *b)
{
	if (a->nattrs != b->nattrs)
		return 0;
	for (int i = 0; i < a->nattrs; i++) {
		const ir_attr *x = &a->attrs[i], *y = ir_attr_find(b, a->attrs[i].name);
		if (!y || x->kind != y->kind)
			return 0;
		switch (x->kind) {
		case ATTR_INT: if (x->i != y->i) return 0; break;
		case ATTR_FLOAT: if (x->f != y->f) return 0; break;
		case ATTR_STRING: if (strcmp(x->s, y->s)) return 0; break;
		case ATTR_INTS:
			if (x->n != y->n || (x->n && memcmp(x->ints, y->ints, (size_t)x->n * sizeof *x->ints)))
				return 0;
			break;
		case ATTR_FLOATS:
			if (x->n != y->n || (x->n && memcmp(x->floats, y->floats, (size_t)x->n * sizeof *x->floats)))
				return 0;
			break;
		default:
			if (x != y && !(x->kind == ATTR_TENSOR && reroll_same_const(x->t, y->t, 0)))
				return 0;
		}
	}
	return 1;
}

static int fail(rr *R, ir_unrolled_why why)
{
	if (!R->why)
		R->why = why;
	return 1;
}

/* The first difference found between two steps: node n of step `step` has
 * no counterpart in step `vs` (the first one found is kept). */
static void differ(rr *R, int step, int vs, const ir_node *n)
{
	if (R->diff_found)
		return;
	R->diff_found = 1;
	R->diff_step = step;
	R->diff_vs = vs;
	R->diff_node = n;
}

/* ---- 1. per-step slices -------------------------------------------------------- */

/* Whether n reads x[t] of a rank-3 source on axis 0 or 1: 1 with *src, *axis, *t. */
static int anchor_gather(const ir_node *n, ir_value **src, int *axis, int64_t *t)
{
	if (n->op != OP_GATHER || n->nin != 2 || !n->in[0] || n->in[0]->shape.rank != 3 ||
	    !ir_value_is_const(n->in[1]) || n->in[1]->shape.rank != 0 || n->in[0]->dtype != DT_F32)
		return 0;
	int64_t ax = ir_attr_int(n, "axis", 0);
	if (ax < 0)
		ax += 3;
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

/* Slice(x, [t], [t+1], [axis], [1]) read only by Squeeze(axes=[axis]). */
static int anchor_slice(const rr *R, const ir_node *sq, ir_node **slice, ir_value **src, int *axis,
			int64_t *t)
{
	if (sq->op != OP_SQUEEZE || sq->nin != 2 || !ir_value_is_const(sq->in[1]) ||
	    ir_shape_const_numel(&sq->in[1]->shape) != 1)
		return 0;
	ir_node *s = sq->in[0] ? sq->in[0]->producer : NULL;
	if (!s || nid(R, s) < 0 || s->op != OP_SLICE || s->nin < 5 || s->out[0]->nuses != 1 ||
	    !s->in[0] || s->in[0]->shape.rank != 3 || s->in[0]->dtype != DT_F32)
		return 0;
	for (int k = 1; k < 5; k++)
		if (!ir_value_is_const(s->in[k]) || ir_shape_const_numel(&s->in[k]->shape) != 1)
			return 0;
	int64_t ax = ir_const_int(s->in[3], 0), sqax = ir_const_int(sq->in[1], 0);
	if (sqax < 0)
		sqax += 3;
	ir_dim T = s->in[0]->shape.d[ax < 0 ? ax + 3 : ax];
	if (ax < 0)
		ax += 3;
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
	if (sq->nin != 2 || !ir_value_is_const(sq->in[1]) || !sq->in[0] || sq->in[0]->shape.rank != 3 ||
	    !sq->out[0] || sq->out[0]->shape.rank != 2)
		return 0;
	int64_t a;
	switch (sq->op) {
	case OP_SQUEEZE:
		if (ir_shape_const_numel(&sq->in[1]->shape) != 1)
			return 0;
		a = ir_const_int(sq->in[1], 0);
		return (a < 0 ? a + 3 : a) == ax;
	case OP_GATHER:
		if (sq->in[1]->shape.rank != 0)
			return 0;
		a = ir_attr_int(sq, "axis", 0);
		return (a < 0 ? a + 3 : a) == ax && (ir_const_int(sq->in[1], 0) == 0 || ir_const_int(sq->in[1], 0) == -1);
	case OP_RESHAPE:
		for (int i = 0, o = 0; i < 3; i++)
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
	if (!s || nid(R, s) < 0 || s->op != OP_SPLIT || s->nout < 3 || !s->in[0] ||
	    s->in[0]->shape.rank != 3 || s->in[0]->dtype != DT_F32)
		return 0;
	int64_t ax = ir_attr_int(s, "axis", 0);
	if (ax < 0)
		ax += 3;
	if ((ax != 0 && ax != 1) || !drops_axis(sq, ax))
		return 0;
	ir_dim T = s->in[0]->shape.d[ax];
	if (!ir_dim_is_const(T) || T.k != s->nout)
		return 0;
	int64_t k = -1;
	for (int o = 0; o < s->nout; o++) {
		const ir_value *v = s->out[o];
		if (!v || v->shape.rank != 3 || !ir_dim_is_const(v->shape.d[ax]) || v->shape.d[ax].k != 1)
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
	ir_node *n, *aux;
	ir_value *src;
	int axis;
	int64_t t;
} anc;

static int cmp_anc(const void *a, const void *b)
{
	const anc *x = a, *y = b;
	if (x->src != y->src)
		return x->src->id - y->src->id;
	if (x->axis != y->axis)
		return x->axis - y->axis;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Finds the sequences read step by step.  Only sources that do not
 * themselves depend on a per-step slice count (an inner loop over the
 * stacked output of an outer one is rolled on the next round). */
static int find_sequences_once(rr *R, char *noanchor);

static int find_sequences(rr *R)
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
			d |= vid(R, n->in[k]) >= 0 && dep[n->in[k]->id];
		ir_node *aux = NULL;
		ir_value *src;
		int axis;
		int64_t t;
		if (!d && !noanchor[i] && (anchor_split(R, n, &src, &axis, &t) || anchor_gather(n, &src, &axis, &t) ||
			   anchor_slice(R, n, &aux, &src, &axis, &t)) &&
		    vid(R, src) >= 0 && !dep[src->id]) {
			a[na++] = (anc){n, aux, src, axis, t};
			d = 1;
		}
		for (int k = 0; k < n->nout; k++)
			if (vid(R, n->out[k]) >= 0)
				dep[n->out[k]->id] = (char)d;
	}
	if (na < 3)
		return 0;
	qsort(a, (size_t)na, sizeof *a, cmp_anc);
	/* groups covering 0..T-1 exactly; all groups taken must share one T */
	R->seq = arena_array(R->A, (size_t)na, sizeof *R->seq);
	R->T = 0;
	int rejected = 0;
	for (int i = 0; i < na;) {
		int j = i;
		while (j < na && a[j].src == a[i].src && a[j].axis == a[i].axis)
			j++;
		/* the trace read the first j - i steps: all of them, or of a
		 * symbolic axis the traced ones, or fewer (a first step that reads
		 * something else, x[t-1] after a start token: the loop over the
		 * slices starts after it, and x's last steps are not read) */
		ir_dim Td = a[i].src->shape.d[a[i].axis];
		int64_t T = j - i;
		int ok = T >= 3 && (!ir_dim_is_const(Td) || T <= Td.k) && (R->T == 0 || R->T == T);
		for (int k = i; ok && k < j; k++)
			ok = a[k].t == k - i;
		if (ok) {
			seqsrc *s = &R->seq[R->nseq++];
			s->src = a[i].src;
			s->axis = a[i].axis;
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

/* ---- 2. steps ---------------------------------------------------------------------- */

static void build_consumers(rr *R)
{
	ir_graph *g = R->g;
	R->cstart = arena_array(R->A, (size_t)R->nv + 2, sizeof *R->cstart);
	for (int i = 0; i < R->nn; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			int v = vid(R, g->nodes[i]->in[k]);
			if (v >= 0)
				R->cstart[v + 1]++;
		}
	for (int v = 0; v < R->nv; v++)
		R->cstart[v + 1] += R->cstart[v];
	int *fill = arena_array(R->A, (size_t)R->nv + 1, sizeof *fill);
	R->cons = arena_array(R->A, (size_t)R->cstart[R->nv] + 1, sizeof *R->cons);
	for (int i = 0; i < R->nn; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			int v = vid(R, g->nodes[i]->in[k]);
			if (v >= 0 && (k == 0 || g->nodes[i]->in[k] != g->nodes[i]->in[k - 1]))
				R->cons[R->cstart[v] + fill[v]++] = i;
		}
	/* duplicate entries (a node reading a value twice, not adjacently) are harmless */
	for (int v = 0; v < R->nv; v++)
		for (int j = R->cstart[v] + fill[v]; j < R->cstart[v + 1]; j++)
			R->cons[j] = -1;
}

static int is_graph_output(const rr *R, const ir_value *v)
{
	for (int i = 0; i < R->g->noutputs; i++)
		if (R->g->outputs[i] == v)
			return 1;
	return 0;
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

/* ---- the cut between two steps -------------------------------------------------- */

/* A small max-flow (Dinic) for cut_step. */
typedef struct fedge {
	int to, next;
	int64_t cap;
} fedge;

typedef struct flow {
	int nv, ne, cape;
	int *head, *level, *it, *queue;
	fedge *e;
	arena *A;
} flow;

static void flow_edge(flow *F, int u, int v, int64_t cap)
{
	if (F->ne + 2 > F->cape) {
		F->e = arena_grow(F->A, F->e, (size_t)F->cape, (size_t)F->cape * 2 + 16, sizeof *F->e);
		F->cape = F->cape * 2 + 16;
	}
	F->e[F->ne] = (fedge){v, F->head[u], cap};
	F->head[u] = F->ne++;
	F->e[F->ne] = (fedge){u, F->head[v], 0};
	F->head[v] = F->ne++;
}

static int flow_bfs(flow *F, int s, int t)
{
	for (int i = 0; i < F->nv; i++)
		F->level[i] = -1;
	int qh = 0, qt = 0;
	F->queue[qt++] = s;
	F->level[s] = 0;
	while (qh < qt) {
		int u = F->queue[qh++];
		for (int e = F->head[u]; e >= 0; e = F->e[e].next)
			if (F->e[e].cap > 0 && F->level[F->e[e].to] < 0) {
				F->level[F->e[e].to] = F->level[u] + 1;
				F->queue[qt++] = F->e[e].to;
			}
	}
	return F->level[t] >= 0;
}

static int64_t flow_dfs(flow *F, int u, int t, int64_t f)
{
	if (u == t)
		return f;
	for (; F->it[u] >= 0; F->it[u] = F->e[F->it[u]].next) {
		fedge *e = &F->e[F->it[u]];
		if (e->cap <= 0 || F->level[e->to] != F->level[u] + 1)
			continue;
		int64_t d = flow_dfs(F, e->to, t, f < e->cap ? f : e->cap);
		if (d > 0) {
			e->cap -= d;
			F->e[F->it[u] ^ 1].cap += d;
			return d;
		}
	}
	return 0;
}

static void flow_run(flow *F, int s, int t)
{
	while (flow_bfs(F, s, t)) {
		for (int i = 0; i < F->nv; i++)
			F->it[i] = F->head[i];
		while (flow_dfs(F, s, t, INT64_MAX / 4) > 0)
			;
	}
	flow_bfs(F, s, t);      /* level >= 0: the source's side of the cut */
}

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
 * read two steps later; of equal cuts the one moving most nodes.  Source
 * side: stays; sink side: moves. */
static void cut_step(rr *R, const int *asap, int t)
{
	ir_graph *g = R->g;
	int k = 0;
	for (int i = 0; i < R->nn; i++)
		k += asap[i] == t;
	if (k == 0)
		return;
	int *loc = arena_array(R->A, (size_t)k, sizeof *loc);
	int *idx = arena_array(R->A, (size_t)R->nn, sizeof *idx);
	k = 0;
	for (int i = 0; i < R->nn; i++) {
		idx[i] = -1;
		if (asap[i] == t) {
			idx[i] = k;
			loc[k++] = i;
		}
	}
	const int64_t INF = INT64_MAX / 8, unit = k + 1;
	int naux = 0;
	for (int j = 0; j < k; j++)
		naux += g->nodes[loc[j]]->nout + g->nodes[loc[j]]->nin;
	flow F = {.nv = 2 + k + naux, .A = R->A};
	F.head = arena_array(R->A, (size_t)F.nv, sizeof *F.head);
	F.level = arena_array(R->A, (size_t)F.nv, sizeof *F.level);
	F.it = arena_array(R->A, (size_t)F.nv, sizeof *F.it);
	F.queue = arena_array(R->A, (size_t)F.nv, sizeof *F.queue);
	for (int i = 0; i < F.nv; i++)
		F.head[i] = -1;
	int src = 0, snk = 1, aux = 2 + k;
	/* the position of step t+1's start in the node list */
	int ref = R->nn, first0 = R->nn, anc0 = R->nn;
	for (int i = 0; i < R->nn; i++) {
		if (asap[i] == t + 1 && R->anchor_of[i] && anc0 == R->nn)
			anc0 = i;
		if (asap[i] == t + 1 && !R->anchor_of[i] && first0 == R->nn)
			first0 = i;
		if (asap[i] == t && !R->anchor_of[i] && ref == R->nn)
			ref = i;        /* step t's first node */
	}
	ref = anc0 > ref ? anc0 : first0;
	for (int j = 0; j < k; j++) {
		int i = loc[j];
		ir_node *n = g->nodes[i];
		int pin = R->anchor_of[i] != 0;
		/* of equal cuts, the one closest to where the trace computed the
		 * node: after the next step's first slice (or, with the slices
		 * taken before the loop, its first node reading one), the node was
		 * run for step t+1 */
		if (i > ref || scaled_copy(n))
			flow_edge(&F, 2 + j, snk, 1);
		else
			flow_edge(&F, src, 2 + j, 1);
		for (int o = 0; o < n->nout; o++) {
			int v = vid(R, n->out[o]);
			if (v < 0)
				continue;
			int64_t size = (int64_t)row_size(n->out[o]) * unit;
			int next = 0, here = 0;
			pin |= is_graph_output(R, n->out[o]);
			for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
				int r = R->cons[c];
				if (r < 0)
					continue;
				if (asap[r] == t + 1)
					next = 1;
				else if (asap[r] == t && idx[r] >= 0) {
					here = 1;
					flow_edge(&F, 2 + idx[r], 2 + j, INF);  /* r stays => n stays */
				} else
					pin = 1;
			}
			if (next)
				flow_edge(&F, 2 + j, snk, size);       /* carried if n stays */
			if (here && !next) {
				int a = aux++;
				flow_edge(&F, 2 + j, a, size);         /* carried if n stays and a reader moves */
				for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
					int r = R->cons[c];
					if (r >= 0 && asap[r] == t && idx[r] >= 0)
						flow_edge(&F, a, 2 + idx[r], INF);
				}
			}
		}
		/* a node reading x_t or step t-1's carried values stays in step t
		 * (in step 0: the initial states, values [B, N] from before the
		 * loop that are not weights) */
		for (int q = 0; q < n->nin && !pin; q++) {
			ir_value *x = n->in[q];
			ir_node *p = x ? x->producer : NULL;
			int pi = p ? nid(R, p) : -1;
			if (pi >= 0 && R->anchor_of[pi] && asap[pi] == t)
				pin = 1;
			else if (pi >= 0 && t > 0 && R->label[pi] == t - 1)
				pin = 1;
			else if (t == 0 && x && label_of_value(R, x) == LBL_PREFIX && x->kind != VAL_WEIGHT &&
				 x->shape.rank == 2 && ir_dim_eq(x->shape.d[0], R->batch))
				pin = 1;
		}
		if (pin)
			flow_edge(&F, src, 2 + j, INF);
	}
	/* values moved into step t from step t-1 (staying there) that a node
	 * of step t reads: carried if a reader moves */
	for (int j = 0; j < k; j++) {
		ir_node *n = g->nodes[loc[j]];
		for (int q = 0; q < n->nin; q++) {
			ir_value *x = n->in[q];
			int v = vid(R, x), pi = x && x->producer ? nid(R, x->producer) : -1;
			if (v < 0 || pi < 0 || R->label[pi] != t || asap[pi] == t)
				continue;
			int first = 1;  /* one aux node per value: at its first reader */
			for (int j2 = 0; j2 < j && first; j2++)
				for (int q2 = 0; q2 < g->nodes[loc[j2]]->nin; q2++)
					first &= g->nodes[loc[j2]]->in[q2] != x;
			for (int q2 = 0; q2 < q; q2++)
				first &= n->in[q2] != x;
			if (!first)
				continue;
			if (aux >= F.nv)
				break;
			int a = aux++;
			flow_edge(&F, src, a, (int64_t)row_size(x) * unit);
			for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
				int r = R->cons[c];
				if (r >= 0 && asap[r] == t && idx[r] >= 0)
					flow_edge(&F, a, 2 + idx[r], INF);
			}
		}
	}
	flow_run(&F, src, snk);
	if (getenv("CELLC_DEBUG_REROLL") && getenv("CELLC_DEBUG_REROLL")[0] == '2')
		for (int j = 0; j < k; j++) {
			int pinned = 0;
			for (int e = F.head[src]; e >= 0; e = F.e[e].next)
				pinned |= F.e[e].to == 2 + j;
			fprintf(stderr, "cut %d: %s %s%s\n", t, g->nodes[loc[j]]->name, F.level[2 + j] < 0 ? "moves" : "stays", pinned ? " (pinned)" : "");
		}
	for (int j = 0; j < k; j++)
		if (F.level[2 + j] < 0)
			R->label[loc[j]] = t + 1;
}

/* Labels: the step each node belongs to (see the opening comment). */
static int assign_steps(rr *R)
{
	ir_graph *g = R->g;
	R->label = arena_array(R->A, (size_t)R->nn, sizeof *R->label);
	R->anchor_of = arena_array(R->A, (size_t)R->nn, sizeof *R->anchor_of);
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
		int hi = LBL_PREFIX, lo = INT32_MAX, tail = 0;
		for (int k = 0; k < n->nin; k++) {
			int l = label_of_value(R, n->in[k]);
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
			/* the first node where the two differ, in the graph's order */
			int big = R->ncopy[t] > R->ncopy[R->m] ? t : R->m, small = big == t ? R->m : t, j = 0;
			while (j < R->ncopy[small] &&
			       g->nodes[R->copy[big][j]]->op == g->nodes[R->copy[small][j]]->op)
				j++;
			differ(R, big, small, g->nodes[R->copy[big][j]]);
			return fail(R, WHY_SIZES);
		}
	if (R->ncopy[R->m] == 0) {
		R->no_step = 1;
		return fail(R, WHY_NO_STEP);
	}
	return 0;
}

/* ---- 3. the template ------------------------------------------------------------------- */

static int seq_of_anchor_value(const rr *R, const ir_value *v, int t)
{
	for (int s = 0; s < R->nseq; s++)
		if (R->seq[s].anchor[t]->out[0] == v)
			return s;
	return -1;
}

/* v is the per-step slice of a sequence at some step (its anchor's
 * output, or the Slice before an anchor Squeeze). */
static int is_slice_value(const rr *R, const ir_value *v)
{
	for (int t = 0; t < R->T; t++)
		for (int s = 0; s < R->nseq; s++)
			if (R->seq[s].anchor[t]->out[0] == v || (R->seq[s].aux && R->seq[s].aux[t] &&
								  R->seq[s].aux[t]->out[0] == v))
				return 1;
	return 0;
}

static int build_template(rr *R)
{
	int m = R->m;
	R->nt = R->ncopy[m];
	R->tn = arena_array(R->A, (size_t)R->nt, sizeof *R->tn);
	R->ti = arena_array(R->A, (size_t)R->nt, sizeof *R->ti);
	R->tvof = arena_array(R->A, (size_t)R->nv, sizeof *R->tvof);
	R->stateof = arena_array(R->A, (size_t)R->nv, sizeof *R->stateof);
	for (int v = 0; v < R->nv; v++)
		R->tvof[v] = R->stateof[v] = -1;
	int cap = 0;
	for (int j = 0; j < R->nt; j++)
		cap += R->g->nodes[R->copy[m][j]]->nout;
	R->tval = arena_array(R->A, (size_t)cap + 1, sizeof *R->tval);
	R->state_in = arena_array(R->A, (size_t)R->nv + 1, sizeof *R->state_in);
	for (int j = 0; j < R->nt; j++) {
		ir_node *n = R->g->nodes[R->copy[m][j]];
		R->tn[j] = n;
		if (n->body)
			return fail(R, WHY_STRUCTURED);
		R->ti[j] = arena_array(R->A, (size_t)n->nin + 1, sizeof **R->ti);
		for (int k = 0; k < n->nin; k++) {
			ir_value *v = n->in[k];
			tin *x = &R->ti[j][k];
			int id = vid(R, v), s;
			if (!v)
				x->kind = IN_NONE;
			else if (id >= 0 && R->tvof[id] >= 0)
				*x = (tin){IN_INT, R->tvof[id], NULL};
			else if ((s = seq_of_anchor_value(R, v, m)) >= 0)
				*x = (tin){IN_SEQ, s, NULL};
			else if (label_of_value(R, v) == m - 1 && !R->anchor_of[v->producer->id]) {
				if (R->stateof[id] < 0) {
					R->stateof[id] = R->nstate;
					R->state_in[R->nstate++] = v;
				}
				*x = (tin){IN_STATE, R->stateof[id], NULL};
			} else if (label_of_value(R, v) == LBL_PREFIX) {
				*x = (tin){IN_CAP, 0, v};
			} else {
				return fail(R, WHY_FAR_READ);
			}
		}
		for (int k = 0; k < n->nout; k++) {
			int id = vid(R, n->out[k]);
			if (id >= 0) {
				R->tvof[id] = R->ntv;
				R->tval[R->ntv++] = n->out[k];
			}
		}
	}
	if (R->nstate == 0)
		return fail(R, WHY_NO_STATE);
	for (int s = 0; s < R->nstate; s++)
		if (R->state_in[s]->dtype != DT_F32 || R->state_in[s]->shape.rank != 2)
			return fail(R, WHY_STATE_TYPE);
	R->state_out = arena_array(R->A, (size_t)R->nstate, sizeof *R->state_out);
	for (int s = 0; s < R->nstate; s++)
		R->state_out[s] = -1;
	R->map = arena_array(R->A, (size_t)R->T, sizeof *R->map);
	R->sin = arena_array(R->A, (size_t)R->T, sizeof *R->sin);
	for (int t = 0; t < R->T; t++) {
		R->map[t] = arena_array(R->A, (size_t)R->ntv + 1, sizeof **R->map);
		R->sin[t] = arena_array(R->A, (size_t)R->nstate, sizeof **R->sin);
	}
	memcpy(R->map[m], R->tval, (size_t)R->ntv * sizeof *R->tval);
	memcpy(R->sin[m], R->state_in, (size_t)R->nstate * sizeof *R->state_in);
	R->matched = arena_alloc(R->A, (size_t)R->nn + 1);
	R->done = arena_alloc(R->A, (size_t)R->T + 1);
	R->done[m] = 1;
	for (int j = 0; j < R->nt; j++)
		R->matched[R->copy[m][j]] = 1;
	return 0;
}

/* ---- 4. matching copies ---------------------------------------------------------------- */

static coef *coef_at(rr *R, int node, int k)
{
	for (int i = 0; i < R->ncoef; i++)
		if (R->coefs[i].node == node && R->coefs[i].k == k)
			return &R->coefs[i];
	return NULL;
}

/* Copy t has value v where the template has constant c (position node, k). */
static int match_const(rr *R, int t, int node, int k, const ir_value *c, const ir_value *v, int commit)
{
	coef *cf = coef_at(R, node, k);
	if (!cf && (v == c || reroll_same_const(v, c, 0)))
		return 1;
	/* a per-step coefficient: f32 scalars that differ */
	if (!reroll_has_data(v) || !reroll_has_data(c) || v->dtype != DT_F32 || c->dtype != DT_F32 ||
	    ir_shape_const_numel(&v->shape) != 1 || ir_shape_const_numel(&c->shape) != 1 ||
	    v->kind != VAL_CONST || v->shape.rank != c->shape.rank)
		return 0;
	if (!commit)
		return 1;
	if (!cf) {
		if (R->ncoef % 8 == 0)
			R->coefs = arena_grow(R->A, R->coefs, (size_t)R->ncoef, (size_t)R->ncoef + 8,
					      sizeof *R->coefs);
		cf = &R->coefs[R->ncoef++];
		cf->node = node;
		cf->k = k;
		cf->tab = arena_array(R->A, (size_t)R->T, sizeof *cf->tab);
		cf->have = arena_array(R->A, (size_t)R->T, sizeof *cf->have);
		/* copies matched before agreed with the template's value */
		for (int s = 0; s < R->T; s++) {
			cf->tab[s] = *(const float *)c->data;
			cf->have[s] = R->done[s];
		}
	}
	cf->tab[t] = *(const float *)v->data;
	cf->have[t] = 1;
	return 1;
}

/* Whether node n of copy t can be template node j; records state-ins and
 * coefficients when it can (undone by the caller on failure? no: checked
 * first with commit = 0, then recorded with commit = 1). */
static int fits(rr *R, int t, int j, ir_node *n, int commit)
{
	ir_node *tn = R->tn[j];
	int id = nid(R, n);
	/* in the first copy, work on the initial states alone was computed
	 * before the loop (it depends on no per-step slice).  There, one node
	 * may also stand for several template nodes: states that start equal
	 * (one torch.zeros for h and every velocity) make their first updates
	 * the same expression, which the exporter computed once; the inputs
	 * are checked below like any other, so the node computes what each of
	 * those template nodes would */
	if (id < 0 || (R->label[id] != t && !(t == 0 && R->label[id] == LBL_PREFIX)) || (R->matched[id] && t) ||
	    R->anchor_of[id] || n->op != tn->op ||
	    n->nin != tn->nin || n->nout != tn->nout || n->body || !same_attrs(n, tn))
		return 0;
	for (int k = 0; k < n->nin; k++) {
		const tin *x = &R->ti[j][k];
		ir_value *v = n->in[k];
		if ((x->kind == IN_NONE) != (v == NULL))
			return 0;
		switch (x->kind) {
		case IN_NONE:
			break;
		case IN_INT: {
			ir_value *e = R->map[t][x->idx];
			if (!e || (e != v && !(e->graph != R->g && reroll_same_const(e, v, 1))))
				return 0;
			break;
		}
		case IN_SEQ:
			if (v != R->seq[x->idx].anchor[t]->out[0])
				return 0;
			break;
		case IN_STATE: {
			ir_value *e = R->sin[t][x->idx];
			if (e) {
				if (e != v && !reroll_same_const(e, v, 1))
					return 0;
			} else {
				int l = label_of_value(R, v);
				if (l >= t || l == LBL_TAIL || (t > 0 && l != t - 1))
					return 0;
				if (commit)
					R->sin[t][x->idx] = v;
			}
			break;
		}
		case IN_CAP: case IN_COEF:
			if (v == x->cap)
				break;
			if (label_of_value(R, v) != LBL_PREFIX)
				return 0;
			if (!match_const(R, t, j, k, x->cap, v, commit))
				return 0;
			break;
		}
	}
	return 1;
}

static void commit_match(rr *R, int t, int j, ir_node *n)
{
	if (getenv("CELLC_DEBUG_REROLL") && getenv("CELLC_DEBUG_REROLL")[0] == '3')
		fprintf(stderr, "reroll: copy %d: %s is %s\n", t, n->name, R->tn[j]->name);
	fits(R, t, j, n, 1);
	R->map_again = R->matched[n->id];
	R->matched[n->id] = 1;
	R->map_node = n->id;
	ir_node *tn = R->tn[j];
	for (int k = 0; k < n->nout; k++) {
		int tv = vid(R, tn->out[k]) >= 0 ? R->tvof[tn->out[k]->id] : -1;
		if (tv >= 0)
			R->map[t][tv] = n->out[k];
	}
}

/* Restart period of the NAG schedule in tab[0..T) (mu_t = (k-1)/(k+2),
 * entries with have[t] = 0 unknown): F in 1..T-1 when the table restarts,
 * 0 when it matches "never restarts" within T steps (then any F >= T fits
 * too: *ambiguous), -1 if no schedule. */
static int64_t nag_period(const float *tab, const int *have, int T, int *ambiguous)
{
	*ambiguous = 0;
	for (int64_t F = 1; F <= T; F++) {
		int ok = 1;
		for (int t = 0; t < T && ok; t++) {
			double k = (double)(F == T ? t : t % F) + 1.0;
			float mu = (float)((k - 1.0) / (k + 2.0));
			ok = !have[t] || fabsf(mu - tab[t]) <= 1e-6f;
		}
		if (ok) {
			*ambiguous = F == T;
			return F == T ? 0 : F;
		}
	}
	return -1;
}

/* A constant for template input (j, k) in copy 0 when every input of the
 * node is known there as a constant; NULL otherwise.  States nobody has
 * seen yet are taken to start at zero (checked later against the trace). */
static ir_value *const_input(rr *R, int j, int k)
{
	const tin *x = &R->ti[j][k];
	switch (x->kind) {
	case IN_INT: {
		ir_value *e = R->map[0][x->idx];
		return e && reroll_has_data(e) ? e : NULL;
	}
	case IN_STATE: {
		ir_value *e = R->sin[0][x->idx];
		if (e)
			return reroll_has_data(e) ? e : NULL;
		ir_value *s = R->state_in[x->idx];
		int64_t n = ir_shape_const_numel(&s->shape);
		if (n < 0)
			return NULL;
		e = ir_const_new(R->scratch, NULL, DT_F32, &s->shape, NULL);
		R->sin[0][x->idx] = e;
		return e;
	}
	case IN_CAP: case IN_COEF: {
		coef *cf = coef_at(R, j, k);
		if (!cf)
			return x->cap;
		/* a coefficient the exporter folded away in the first step: the
		 * NAG schedule's mu_1 = 0 when the other steps follow it, else the
		 * template's value (the fold is checked against the trace either way) */
		int amb;
		cf->tab[0] = nag_period(cf->tab, cf->have, R->T, &amb) >= 0 ? 0.0f : *(const float *)x->cap->data;
		cf->have[0] = 1;
		return ir_const_f32_scalar(R->scratch, NULL, cf->tab[0]);
	}
	default:
		return NULL;
	}
}

/* Copy 0 may have template nodes folded away by the exporter (their
 * inputs were all constant: the zero initial states).  Folds them here. */
static int fold_in_copy0(rr *R, int j)
{
	ir_node *tn = R->tn[j];
	ir_node *n = ir_clone_node(R->scratch, tn, NULL, -1, IR_CLONE_SHARE_ATTRS);
	for (int k = 0; k < tn->nin; k++) {
		if (!tn->in[k])
			continue;
		n->in[k] = const_input(R, j, k);
		if (!n->in[k])
			return 0;
	}
	for (int k = 0; k < tn->nout; k++)
		if (tn->out[k]) {
			n->out[k] = ir_value_new(R->scratch, NULL, VAL_TEMP, tn->out[k]->dtype);
			n->out[k]->producer = n;
		}
	diag q;
	diag_init(&q, R->D->file);
	q.quiet = 1;
	if (infer_node(R->scratch, n, &q) || infer_fold(R->scratch, n, &q) != 1)
		return 0;
	for (int k = 0; k < tn->nout; k++) {
		int tv = vid(R, tn->out[k]) >= 0 ? R->tvof[tn->out[k]->id] : -1;
		if (tv >= 0)
			R->map[0][tv] = n->out[k];
	}
	return 1;
}

/* Of two nodes that both fit a template node (h.unsqueeze(0) returned as
 * a graph output beside the same unsqueeze stacked with the other steps'
 * outputs), the one read the way the template is: by a reader of the
 * template's output (the stacking Concat), and a graph output only where
 * the template's is one. */
static int likeness(const rr *R, const ir_node *tn, const ir_node *n)
{
	int sc = 0;
	for (int k = 0; k < n->nout && k < tn->nout; k++) {
		int a = vid(R, tn->out[k]), b = vid(R, n->out[k]);
		if (a < 0 || b < 0)
			continue;
		if (is_graph_output(R, tn->out[k]) == is_graph_output(R, n->out[k]))
			sc += 1;
		for (int i = R->cstart[a]; i < R->cstart[a + 1]; i++)
			for (int j = R->cstart[b]; j < R->cstart[b + 1]; j++)
				if (R->cons[i] >= 0 && R->cons[i] == R->cons[j])
					sc += 2;
	}
	return sc;
}

/* How many nodes before the loop lie between n and a reader in the first
 * copy (0: the first copy reads n), at most `left`; -1 if none does. */
static int read_by_copy(const rr *R, const ir_node *n, int left)
{
	int best = -1;
	for (int k = 0; k < n->nout; k++) {
		int v = vid(R, n->out[k]);
		if (v < 0)
			continue;
		for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
			int r = R->cons[c];
			if (r < 0)
				continue;
			if (R->label[r] == 0)
				return 0;
			if (R->label[r] == LBL_PREFIX && left > 0) {
				int d = read_by_copy(R, R->g->nodes[r], best < 0 ? left - 1 : best - 1);
				if (d >= 0 && (best < 0 || d + 1 < best))
					best = d + 1;
			}
		}
	}
	return best;
}

/* Whether n's constant inputs are those of template node j. */
static int same_consts(const rr *R, int j, const ir_node *n)
{
	for (int k = 0; k < n->nin; k++) {
		const tin *x = &R->ti[j][k];
		if ((x->kind == IN_CAP || x->kind == IN_COEF) && n->in[k] != x->cap && !reroll_same_const(n->in[k], x->cap, 0))
			return 0;
	}
	return 1;
}

/* The better of two nodes that fit template node j in copy t: in the
 * first copy, work before the loop only when the copy reads it, the
 * closer the better (a prologue step's own h2h(h0) is not the first
 * step's); then the one with the template's constants (no new per-step
 * coefficient), then the one read like the template.  -1: not a candidate. */
static int cand_score(const rr *R, int t, int j, const ir_node *n)
{
	int near = 9;
	if (R->matched[n->id])
		return 0;       /* standing for a second template node: the last resort */
	if (t == 0 && R->label[n->id] == LBL_PREFIX) {
		int d = read_by_copy(R, n, 8);
		if (d < 0)
			return -1;
		near = 8 - d;
	}
	return 64 * near + 4 * same_consts(R, j, n) + likeness(R, R->tn[j], n);
}

/* Candidates for template node j in copy t: consumers of a known input. */
static int find_match(rr *R, int t, int j)
{
	ir_node *tn = R->tn[j];
	ir_graph *g = R->g;
	for (int k = 0; k < tn->nin; k++) {
		const tin *x = &R->ti[j][k];
		ir_value *key = NULL;
		if (x->kind == IN_INT)
			key = R->map[t][x->idx];
		else if (x->kind == IN_SEQ)
			key = R->seq[x->idx].anchor[t]->out[0];
		else if (x->kind == IN_STATE)
			key = R->sin[t][x->idx];
		else if (x->kind == IN_CAP && x->cap->kind != VAL_CONST)
			key = x->cap;
		int v = vid(R, key);
		if (v < 0)
			continue;
		/* weights are read by every copy: only worth it if nothing better */
		if (x->kind == IN_CAP && R->cstart[v + 1] - R->cstart[v] > 4 * R->ncopy[t] + 8)
			continue;
		ir_node *best = NULL;
		int best_score = -1;
		for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++)
			if (R->cons[c] >= 0 && fits(R, t, j, g->nodes[R->cons[c]], 0)) {
				int sc = cand_score(R, t, j, g->nodes[R->cons[c]]);
				if (sc > best_score) {
					best = g->nodes[R->cons[c]];
					best_score = sc;
				}
			}
		if (best) {
			commit_match(R, t, j, best);
			return 1;
		}
		if (x->kind != IN_CAP && reroll_has_data(key) == 0)
			return 0;       /* the copy's node must read this value */
	}
	for (int c = 0; c < R->ncopy[t]; c++)
		if (fits(R, t, j, g->nodes[R->copy[t][c]], 0)) {
			commit_match(R, t, j, g->nodes[R->copy[t][c]]);
			return 1;
		}
	/* the first copy's work on initial states alone sits before the loop;
	 * it is read by the first copy (not by a prologue step's own work) */
	ir_node *best = NULL;
	int best_score = -1;
	for (int i = 0; t == 0 && i < R->nn; i++)
		if (R->label[i] == LBL_PREFIX && fits(R, t, j, g->nodes[i], 0)) {
			int sc = cand_score(R, t, j, g->nodes[i]);
			if (sc > best_score) {
				best = g->nodes[i];
				best_score = sc;
			}
		}
	if (best) {
		commit_match(R, t, j, best);
		return 1;
	}
	return 0;
}

static int match_copy(rr *R, int t)
{
	int nmatched = 0;
	/* what copy t reads as states is what copy t-1 computed (checked by fits) */
	if (t > 0 && R->done[t - 1] && R->state_out[0] >= 0)
		for (int s = 0; s < R->nstate; s++)
			if (!reroll_has_data(R->map[t - 1][R->state_out[s]]))
				R->sin[t][s] = R->map[t - 1][R->state_out[s]];
	for (int j = 0; j < R->nt; j++) {
		if (find_match(R, t, j)) {
			nmatched += R->label[R->map_node] == t && !R->map_again;
			continue;
		}
		if (t == 0 && fold_in_copy0(R, j))
			continue;
		/* the last copy may lack work that only a later step would have used */
		if (t == R->T - 1)
			continue;
		differ(R, R->m, t, R->tn[j]);
		if (getenv("CELLC_DEBUG_REROLL"))
			fprintf(stderr, "reroll: copy %d has no match for template node '%s'\n", t, R->tn[j]->name);
		return fail(R, t == 0 ? WHY_FIRST_STEP : WHY_NOT_ISOMORPHIC);
	}
	if (nmatched != R->ncopy[t] && t == R->T - 1) {
		/* an epilogue: work only the last step does (a head on the last
		 * step's state) runs after the loop, on the last step's values;
		 * not on a step's input slice, which the loop consumes */
		for (int c = 0; c < R->ncopy[t]; c++) {
			const ir_node *x = R->g->nodes[R->copy[t][c]];
			for (int k = 0; k < x->nin && !R->matched[R->copy[t][c]]; k++)
				if (x->in[k] && is_slice_value(R, x->in[k])) {
					differ(R, t, R->m, x);
					return fail(R, WHY_LAST_READS_SLICE);
				}
		}
		for (int c = 0; c < R->ncopy[t]; c++)
			if (!R->matched[R->copy[t][c]])
				R->label[R->copy[t][c]] = LBL_TAIL;
	} else if (nmatched != R->ncopy[t]) {
		for (int c = 0; c < R->ncopy[t]; c++)
			if (!R->matched[R->copy[t][c]])
				differ(R, t, R->m, R->g->nodes[R->copy[t][c]]);
		if (getenv("CELLC_DEBUG_REROLL"))
			for (int c = 0; c < R->ncopy[t]; c++)
				if (!R->matched[R->copy[t][c]])
					fprintf(stderr, "reroll: step %d has node '%s' (%s) that the template lacks\n", t,
						R->g->nodes[R->copy[t][c]]->name, ir_op_name(R->g->nodes[R->copy[t][c]]->op));
		return fail(R, WHY_EXTRA_NODES);
	}
	R->done[t] = 1;
	return 0;
}

/* States: the template value of copy m that copy m+1 reads where the
 * template reads state s (found through copy m-1, which is matched first). */
static int find_state_outs(rr *R)
{
	for (int s = 0; s < R->nstate; s++) {
		R->state_out[s] = -1;
		for (int tv = 0; tv < R->ntv; tv++)
			if (R->map[R->m - 1][tv] == R->state_in[s])
				R->state_out[s] = tv;
		if (R->state_out[s] < 0)
			return fail(R, WHY_STATE_NOT_COMPUTED);
	}
	return 0;
}

static int check_links(rr *R)
{
	for (int t = 1; t < R->T; t++)
		for (int s = 0; s < R->nstate; s++) {
			ir_value *want = R->map[t - 1][R->state_out[s]], *got = R->sin[t][s];
			if (!got)
				continue;       /* the last copy need not read every state */
			if (!want || (want != got && !reroll_same_const(want, got, 1)))
				return fail(R, WHY_OTHER_STATE);
		}
	for (int s = 0; s < R->nstate; s++)
		if (R->sin[0][s] && R->sin[0][s]->graph == R->g && label_of_value(R, R->sin[0][s]) != LBL_PREFIX)
			return fail(R, WHY_INIT_INSIDE);
	return 0;
}

static int match_all(rr *R)
{
	R->scratch = ir_graph_new(R->A, R->g, "reroll.scratch");
	if (match_copy(R, R->m - 1) || find_state_outs(R))
		return 1;
	for (int t = 1; t < R->T; t++)
		if (t != R->m && t != R->m - 1 && match_copy(R, t))
			return 1;
	if (R->m - 1 != 0 && match_copy(R, 0))
		return 1;
	if (R->m - 1 == 0) {
		/* copy 0 was matched first without folding; states never read are zero */
	}
	for (int i = 0; i < R->ncoef; i++)
		R->ti[R->coefs[i].node][R->coefs[i].k].kind = IN_COEF;
	return check_links(R);
}

/* ---- 5. outputs ------------------------------------------------------------------------ */

typedef struct stack {
	ir_node *concat;
	int tv;                 /* template value of the Unsqueeze's input */
	int axis;
	ir_value *pre;          /* an entry before the steps' (a prologue step's), or NULL */
} stack;

/* Where a value of copy t is read outside the steps: 1 if a tail node or a
 * graph output reads it. */
static int used_outside(const rr *R, const ir_value *v)
{
	int id = vid(R, v);
	if (id < 0)
		return 0;
	if (is_graph_output(R, v))
		return 1;
	for (int j = R->cstart[id]; j < R->cstart[id + 1]; j++)
		if (R->cons[j] >= 0 && R->label[R->cons[j]] == LBL_TAIL)
			return 1;
	return 0;
}

/* ---- 6. rebuilding ---------------------------------------------------------------------- */

typedef struct build {
	ir_graph *body;
	ir_value **bval;        /* [ntv] body value of each template value */
	ir_value **bseq, **bstate, **bcoef;
	ir_value *bstep;
	int nstack;
	stack *stacks;
	int nlast;
	int *last_tv;           /* template values read from the last copy (not finals) */
	int neach;
	int *each_tv;           /* template values read after the loop from other copies */
	char *drop;             /* [nt] template nodes not copied (stacking Unsqueezes) */
} build;

/* The stack Concats: Concat(Unsqueeze(y_0), .., Unsqueeze(y_{T-1}), axis a). */
static int find_stacks(rr *R, build *B)
{
	ir_graph *g = R->g;
	B->stacks = arena_array(R->A, (size_t)R->nn + 1, sizeof *B->stacks);
	B->drop = arena_alloc(R->A, (size_t)R->nt + 1);
	for (int i = 0; i < R->nn; i++) {
		ir_node *n = g->nodes[i];
		if (R->label[i] != LBL_TAIL || n->op != OP_CONCAT || (n->nin != R->T && n->nin != R->T + 1))
			continue;
		/* T + 1 entries: the first from before the loop (the prologue's) */
		int off = n->nin - R->T;
		if (off && (label_of_value(R, n->in[0]) != LBL_PREFIX || R->reverse))
			continue;
		int tv = -1, ok = 1;
		for (int t = 0; t < R->T && ok; t++) {
			int x = -1;
			for (int u = 0; u < R->ntv && x < 0; u++)
				if (R->map[t][u] == n->in[t + off])
					x = u;
			ok = x >= 0 && (tv < 0 || tv == x);
			tv = x;
		}
		if (!ok)
			continue;
		ir_node *u = R->tval[tv]->producer;
		int64_t ax = ir_attr_int(n, "axis", 0);
		if (ax < 0)
			ax += n->out[0]->shape.rank;
		if (u->op != OP_UNSQUEEZE || !ir_value_is_const(u->in[1]) ||
		    ir_shape_const_numel(&u->in[1]->shape) != 1 || u->out[0]->shape.rank != 3 ||
		    (ax != 0 && ax != 1))
			continue;
		int64_t uax = ir_const_int(u->in[1], 0);
		if (uax < 0)
			uax += 3;
		ir_value *y = u->in[0];
		if (uax != ax || !y || y->shape.rank != 2 || y->dtype != DT_F32 || vid(R, y) < 0 ||
		    R->tvof[y->id] < 0)
			continue;
		B->stacks[B->nstack++] = (stack){n, R->tvof[y->id], (int)ax, off ? n->in[0] : NULL};
	}
	/* every other read from outside the loop must be of the last copy */
	B->last_tv = arena_array(R->A, (size_t)R->ntv + 1, sizeof *B->last_tv);
	B->each_tv = arena_array(R->A, (size_t)R->ntv + 1, sizeof *B->each_tv);
	for (int t = 0; t < R->T; t++)
		for (int tv = 0; tv < R->ntv; tv++) {
			ir_value *v = R->map[t][tv];
			int id = vid(R, v);
			if (id < 0)
				continue;
			int outside = is_graph_output(R, v);
			for (int j = R->cstart[id]; j < R->cstart[id + 1] && !outside; j++) {
				int c = R->cons[j];
				if (c < 0 || R->label[c] != LBL_TAIL)
					continue;
				int in_stack = 0;
				for (int s = 0; s < B->nstack; s++)
					in_stack |= B->stacks[s].concat == g->nodes[c];
				outside = !in_stack;
			}
			if (!outside)
				continue;
			int dup = 0;
			if (t != R->T - 1) {
				/* per-step values (a model returning its steps' outputs
				 * as a list): a stacked output the steps are taken from */
				for (int k = 0; k < B->neach; k++)
					dup |= B->each_tv[k] == tv;
				if (!dup)
					B->each_tv[B->neach++] = tv;
				continue;
			}
			for (int s = 0; s < R->nstate; s++)
				dup |= R->state_out[s] == tv;   /* read as a final state */
			for (int k = 0; k < B->nlast; k++)
				dup |= B->last_tv[k] == tv;
			if (!dup)
				B->last_tv[B->nlast++] = tv;
		}
	/* the last copy's value of a per-step value comes from its stack too */
	int nl = 0;
	for (int k = 0; k < B->nlast; k++) {
		int each = 0;
		for (int e = 0; e < B->neach; e++)
			each |= B->each_tv[e] == B->last_tv[k];
		if (!each)
			B->last_tv[nl++] = B->last_tv[k];
	}
	B->nlast = nl;
	/* stacking Unsqueezes whose only reader is their Concat are not copied */
	for (int j = 0; j < R->nt; j++) {
		ir_node *n = R->tn[j];
		if (n->op != OP_UNSQUEEZE)
			continue;
		int only_stack = n->out[0]->nuses == 1;
		for (int s = 0; s < B->nstack; s++)
			if (B->stacks[s].concat->in[R->m + (B->stacks[s].pre != NULL)] == n->out[0] && only_stack)
				B->drop[j] = 1;
	}
	return 0;
}

static ir_value *step_value(ir_graph *body, const char *name, const ir_shape *s, const char *origin)
{
	ir_value *v = ir_value_new(body, name, VAL_STEP, DT_F32);
	v->shape = *s;
	v->origin = origin;
	return v;
}

static ir_shape shape2(ir_dim a, ir_dim b)
{
	ir_shape s = {.rank = 2};
	s.d[0] = a;
	s.d[1] = b;
	return s;
}

/* Body nodes computing the NAG restart schedule from the step number t
 * (1-based, f32): mu = (k - 1) / (k + 2), k = fmod(t - 1, F) + 1 (k = t when
 * F = 0). */
static ir_value *schedule_value(rr *R, build *B, int64_t F)
{
	ir_graph *b = B->body;
	ir_value *k = B->bstep;
	ir_shape sc = {.rank = 0};
	struct sop { ir_op op; float c; int fmod; } prog[4];
	int np = 0;
	if (F > 0) {
		prog[np++] = (struct sop){OP_SUB, 1.0f, 0};
		prog[np++] = (struct sop){OP_MOD, (float)F, 1};
		prog[np++] = (struct sop){OP_ADD, 1.0f, 0};
	}
	for (int i = 0; i < np; i++) {
		ir_node *n = ir_node_new(b, prog[i].op, NULL, 2, 1);
		n->in[0] = k;
		n->in[1] = ir_const_f32_scalar(R->g, NULL, prog[i].c);
		if (prog[i].fmod)
			ir_attr_set_int(n, "fmod", 1);
		n->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
		n->out[0]->shape = sc;
		n->out[0]->producer = n;
		n->origin = "NAG restart schedule";
		ir_append(b, n);
		k = n->out[0];
	}
	ir_value *num, *den;
	ir_node *a = ir_node_new(b, OP_SUB, NULL, 2, 1), *d = ir_node_new(b, OP_ADD, NULL, 2, 1);
	a->in[0] = d->in[0] = k;
	a->in[1] = ir_const_f32_scalar(R->g, NULL, 1.0f);
	d->in[1] = ir_const_f32_scalar(R->g, NULL, 2.0f);
	num = a->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
	den = d->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
	num->shape = den->shape = sc;
	num->producer = a;
	den->producer = d;
	a->origin = d->origin = "NAG restart schedule";
	ir_append(b, a);
	ir_append(b, d);
	ir_node *q = ir_node_new(b, OP_DIV, NULL, 2, 1);
	q->in[0] = num;
	q->in[1] = den;
	q->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
	q->out[0]->shape = sc;
	q->out[0]->producer = q;
	q->origin = "NAG restart schedule";
	q->out[0]->role = IR_ROLE_NAG_SCHEDULE;
	ir_append(b, q);
	return q->out[0];
}

/* Slice(x, st, en, axis, step) on one axis; its output is out, or a new
 * value of x's dtype when out is NULL. */
static ir_node *axis_slice(ir_graph *g, ir_value *x, int64_t st, int64_t en, int64_t ax, int64_t sp,
			   ir_value *out)
{
	ir_node *sl = ir_node_new(g, OP_SLICE, NULL, 5, 1);
	sl->in[0] = x;
	sl->in[1] = ir_const_i64(g, NULL, 1, &st);
	sl->in[2] = ir_const_i64(g, NULL, 1, &en);
	sl->in[3] = ir_const_i64(g, NULL, 1, &ax);
	sl->in[4] = ir_const_i64(g, NULL, 1, &sp);
	sl->out[0] = out ? out : ir_value_new(g, NULL, VAL_TEMP, x->dtype);
	sl->out[0]->producer = sl;
	return sl;
}

/* Slice(y, -1, INT64_MIN, axis, -1): y reversed on its time axis, into out
 * (a new value when NULL). */
static ir_node *reversal(ir_graph *g, ir_value *y, int axis, ir_value *out)
{
	ir_node *sl = axis_slice(g, y, -1, INT64_MIN, axis, -1, out);
	sl->origin = "steps of a reversed traced loop in the order it ran them";
	return sl;
}

static ir_unrolled_why build_recurrence(rr *R, build *B, const char **time_note, int *symbolic_ok)
{
	ir_graph *g = R->g;
	int T = R->T, m = R->m;
	/* names that do not depend on T, so that the emitted C does not either */
	const char *name = arena_printf(R->A, "traced_loop%d", R->round);
	for (int k = 2; ir_find_value(g, arena_printf(R->A, "%s.s0", name)); k++)
		name = arena_printf(R->A, "traced_loop%d_%d", R->round, k);
	ir_graph *b = B->body = ir_graph_new(R->A, g, name);
	ir_value *X0 = R->seq[0].src;
	int ax0 = R->seq[0].axis;
	ir_dim Bd = X0->shape.d[1 - ax0];
	*symbolic_ok = 1;

	/* coefficient tables or schedules */
	int has_step = 0;
	int64_t *period = arena_array(R->A, (size_t)R->ncoef + 1, sizeof *period);
	for (int i = 0; i < R->ncoef; i++) {
		int amb;
		period[i] = nag_period(R->coefs[i].tab, R->coefs[i].have, T, &amb);
		if (period[i] >= 0 && !amb)
			has_step = 1;
		else if (period[i] >= 0)
			*time_note = arena_printf(R->A, "T stays %d: a per-step coefficient follows the NAG "
						  "schedule without a restart within the %d traced steps, "
						  "so its restart period (none, or any period >= %d) is unknown",
						  T, T, T);
		else
			*time_note = arena_printf(R->A, "T stays %d: a per-step coefficient is a table of %d "
						  "values that follows no known schedule", T, T);
		if (period[i] < 0 || amb) {
			*symbolic_ok = 0;
			period[i] = -1;
		} else {
			has_step = 1;
		}
	}
	int ntab = 0;
	for (int i = 0; i < R->ncoef; i++)
		ntab += period[i] < 0;

	/* body inputs: sequences, tables, states, [t] */
	int nseq = R->nseq + ntab;
	B->bseq = arena_array(R->A, (size_t)nseq + 1, sizeof *B->bseq);
	B->bstate = arena_array(R->A, (size_t)R->nstate, sizeof *B->bstate);
	B->bcoef = arena_array(R->A, (size_t)R->ncoef + 1, sizeof *B->bcoef);
	for (int s = 0; s < R->nseq; s++) {
		ir_value *a = R->seq[s].anchor[m]->out[0];
		B->bseq[s] = step_value(b, ir_free_name(b, arena_printf(R->A, "%s.x%d", name, s)), &a->shape, R->seq[s].src->name);
	}
	ir_value **tabs = arena_array(R->A, (size_t)ntab + 1, sizeof *tabs);
	ir_node **pre = arena_array(R->A, (size_t)ntab + 1, sizeof *pre);
	int npre = 0;
	diag q;
	diag_init(&q, R->D->file);
	q.quiet = 1;
	for (int i = 0, nt = 0; i < R->ncoef; i++) {
		if (period[i] >= 0)
			continue;
		ir_shape s1 = shape2(Bd, ir_dim_const(1));
		B->bcoef[i] = B->bseq[R->nseq + nt] = step_value(b, ir_free_name(b, arena_printf(R->A, "%s.coef%d", name, i)),
								&s1, "per-step coefficient");
		B->bcoef[i]->role = IR_ROLE_STEP_COEF;
		/* the table as a [T, B, 1] (or [B, T, 1]) sequence; with a
		 * symbolic batch size [T, 1, 1] expanded at run time */
		ir_shape ts = {.rank = 3};
		int64_t rows = ir_dim_is_const(Bd) ? Bd.k : 1;
		ts.d[ax0] = ir_dim_const(T);
		ts.d[1 - ax0] = ir_dim_const(rows);
		ts.d[2] = ir_dim_const(1);
		ir_value *tv = ir_const_new(g, ir_free_name(g, arena_printf(R->A, "%s.table%d", name, i)), DT_F32, &ts, NULL);
		float *d = tv->data;
		for (int t = 0; t < T; t++)
			for (int64_t r = 0; r < rows; r++)
				d[ax0 == 0 ? t * rows + r : r * T + t] = R->coefs[i].tab[R->reverse ? T - 1 - t : t];
		if (!ir_dim_is_const(Bd)) {
			ir_node *e = ir_node_new(g, OP_EXPAND, NULL, 2, 1);
			ir_value *shp = ir_value_new(g, NULL, VAL_CONST, DT_I64);
			shp->shape.rank = 1;
			shp->shape.d[0] = ir_dim_const(3);
			shp->sym = arena_array(R->A, 3, sizeof *shp->sym);
			shp->sym[ax0] = ir_dim_const(T);
			shp->sym[1 - ax0] = Bd;
			shp->sym[2] = ir_dim_const(1);
			e->in[0] = tv;
			e->in[1] = shp;
			e->out[0] = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			e->out[0]->producer = e;
			e->origin = "per-step coefficient table";
			if (infer_node(g, e, &q))
				return WHY_INT_COEF;
			pre[npre++] = e;
			tv = e->out[0];
		}
		tabs[nt++] = tv;
	}
	for (int s = 0; s < R->nstate; s++)
		B->bstate[s] = step_value(b, ir_free_name(b, arena_printf(R->A, "%s.s%d", name, s)), &R->state_in[s]->shape,
					  R->state_in[s]->name);
	if (has_step) {
		B->bstep = ir_value_new(b, ir_free_name(b, arena_printf(R->A, "%s.t", name)), VAL_STEP, DT_F32);
		B->bstep->shape.rank = 0;
		B->bstep->origin = "step number";
	}
	b->ninputs = nseq + R->nstate + has_step;
	b->inputs = arena_array(R->A, (size_t)b->ninputs, sizeof *b->inputs);
	memcpy(b->inputs, B->bseq, (size_t)nseq * sizeof *b->inputs);
	memcpy(b->inputs + nseq, B->bstate, (size_t)R->nstate * sizeof *b->inputs);
	if (has_step)
		b->inputs[nseq + R->nstate] = B->bstep;
	for (int i = 0; i < R->ncoef; i++)
		if (period[i] >= 0)
			B->bcoef[i] = schedule_value(R, B, period[i]);

	/* body nodes: the template */
	B->bval = arena_array(R->A, (size_t)R->ntv + 1, sizeof *B->bval);
	for (int j = 0; j < R->nt; j++) {
		if (B->drop[j])
			continue;
		ir_node *tn = R->tn[j];
		ir_node *n = ir_clone_node(b, tn, tn->name, -1, IR_CLONE_SOURCE | IR_CLONE_SHARE_ATTRS);
		n->origin = tn->origin ? tn->origin : tn->name;
		for (int k = 0; k < tn->nin; k++) {
			const tin *x = &R->ti[j][k];
			switch (x->kind) {
			case IN_NONE: n->in[k] = NULL; break;
			case IN_INT: n->in[k] = B->bval[x->idx]; break;
			case IN_SEQ: n->in[k] = B->bseq[x->idx]; break;
			case IN_STATE: n->in[k] = B->bstate[x->idx]; break;
			case IN_CAP: n->in[k] = x->cap; break;
			case IN_COEF: {
				int ci = (int)(coef_at(R, j, k) - R->coefs);
				n->in[k] = B->bcoef[ci];
				break;
			}
			}
			if (tn->in[k] && !n->in[k])
				return WHY_INT_ORDER;
		}
		for (int k = 0; k < tn->nout; k++) {
			if (!tn->out[k])
				continue;
			/* a step value that is also a graph output (the list form: one
			 * output per step) keeps its name on the graph's side, where
			 * the output is read out of the recurrence; the body's copy
			 * gets a name of its own */
			const char *nm = tn->out[k]->name;
			if (tn->out[k]->is_output)
				nm = ir_unique_name(b, arena_printf(R->A, "%s_step", nm));
			ir_value *o = ir_value_new(b, nm, VAL_TEMP, tn->out[k]->dtype);
			o->origin = tn->out[k]->origin;
			o->producer = n;
			n->out[k] = o;
			B->bval[R->tvof[tn->out[k]->id]] = o;
		}
		if (infer_node(b, n, &q))
			return WHY_REINFER;
		ir_append(b, n);
	}
	/* body outputs: new states, stacked outputs, last-step values */
	int nout = B->nstack + B->nlast + B->neach;
	b->noutputs = R->nstate + nout;
	b->outputs = arena_array(R->A, (size_t)b->noutputs + 1, sizeof *b->outputs);
	for (int s = 0; s < R->nstate; s++) {
		ir_value *o = B->bval[R->state_out[s]];
		if (!o || o->shape.rank != 2 || !ir_shape_eq(&o->shape, &B->bstate[s]->shape))
			return WHY_STATE_SHAPE;
		b->outputs[s] = o;
	}
	for (int k = 0; k < B->nstack; k++)
		b->outputs[R->nstate + k] = B->bval[B->stacks[k].tv];
	for (int k = 0; k < B->nlast; k++) {
		ir_value *o = B->bval[B->last_tv[k]];
		if (!o || o->shape.rank != 2 || o->dtype != DT_F32)
			return WHY_LAST_TYPE;
		b->outputs[R->nstate + B->nstack + k] = o;
	}
	for (int k = 0; k < B->neach; k++) {
		ir_value *o = B->bval[B->each_tv[k]];
		if (!o || o->shape.rank != 2 || o->dtype != DT_F32) {
			if (getenv("CELLC_DEBUG_REROLL"))
				fprintf(stderr, "reroll: per-step value '%s' read after the loop\n",
					R->tval[B->each_tv[k]]->name);
			return WHY_EACH_TYPE;
		}
		b->outputs[R->nstate + B->nstack + B->nlast + k] = o;
	}
	if (B->neach) {
		int outs = 0;
		for (int k = 0; k < B->neach; k++)
			for (int t = 0; t < T; t++)
				outs += is_graph_output(R, R->map[t][B->each_tv[k]]);
		*symbolic_ok = 0;
		*time_note = outs >= T
			? arena_printf(R->A, "T stays %d: the model returns the steps' values as %d "
				       "separate outputs", T, outs)
			: arena_printf(R->A, "T stays %d: values of single steps are read after the loop", T);
	}
	for (int k = 0; k < b->noutputs; k++)
		if (!b->outputs[k])
			return WHY_INT_OUTPUT;

	/* the recurrence */
	int nin = nseq + R->nstate;
	ir_node *rec = ir_node_new(g, OP_RECURRENCE, name, nin, R->nstate + nout);
	rec->body = b;
	rec->rec_source = IR_REC_TRACED;
	rec->origin = arena_printf(R->A, "a traced loop (%s .. %s)", R->tn[0]->name, R->tn[R->nt - 1]->name);
	for (int s = 0; s < R->nseq; s++)
		rec->in[s] = R->seq[s].src;
	for (int i = 0; i < ntab; i++)
		rec->in[R->nseq + i] = tabs[i];
	for (int s = 0; s < R->nstate; s++) {
		ir_value *init = R->sin[0][s];
		int zero = !init;
		if (init && reroll_has_data(init) && init->dtype == DT_F32) {
			zero = 1;
			int64_t n = ir_shape_const_numel(&init->shape);
			for (int64_t i = 0; i < n && zero; i++)
				zero = ((const float *)init->data)[i] == 0.0f;
		}
		if (!zero && init->graph != g)
			return WHY_INT_INIT;
		if (!zero && !ir_shape_eq(&init->shape, &R->state_in[s]->shape))
			return WHY_INIT_SHAPE;
		rec->in[nseq + s] = zero ? NULL : init;
	}
	int64_t *seq_axis = arena_array(R->A, (size_t)nseq, sizeof *seq_axis);
	for (int s = 0; s < nseq; s++)
		seq_axis[s] = s < R->nseq ? R->seq[s].axis : ax0;
	int64_t *out_axis = arena_array(R->A, (size_t)nout + 1, sizeof *out_axis);
	/* finals: the last copy's values read after the loop */
	ir_value **last = R->map[T - 1];
	for (int s = 0; s < R->nstate; s++) {
		ir_value *v = last[R->state_out[s]];
		rec->out[s] = v && used_outside(R, v) ? v : NULL;
	}
	/* reverse: the recurrence stacks step k at time T-1-k, the trace in
	 * processing order; a reversing Slice turns one into the other */
	ir_node **rev = arena_array(R->A, (size_t)nout + 1, sizeof *rev);
	int nrev = 0;
	for (int k = 0; k < B->nstack; k++) {
		ir_value *c = B->stacks[k].concat->out[0];
		out_axis[k] = B->stacks[k].axis;
		if (B->stacks[k].pre) {
			/* the prologue's entry, then the steps' */
			ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			y->shape = c->shape;
			y->shape.d[B->stacks[k].axis] = ir_dim_const(T);
			rec->out[R->nstate + k] = y;
			ir_node *cc = ir_node_new(g, OP_CONCAT, NULL, 2, 1);
			cc->in[0] = B->stacks[k].pre;
			cc->in[1] = y;
			cc->out[0] = c;
			c->producer = cc;
			ir_attr_set_int(cc, "axis", B->stacks[k].axis);
			cc->origin = "the prologue step's value before the loop's";
			rev[nrev++] = cc;
		} else if (R->reverse) {
			ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			y->shape = c->shape;
			rec->out[R->nstate + k] = y;
			rev[nrev++] = reversal(g, y, B->stacks[k].axis, c);
		} else {
			rec->out[R->nstate + k] = c;
		}
	}
	int npost = B->nlast + B->neach * T;
	ir_node **post = arena_array(R->A, (size_t)npost + 1, sizeof *post);
	for (int k = 0; k < B->nlast; k++) {
		int tv = B->last_tv[k];
		ir_value *v = last[tv];
		int is_final = 0;
		for (int s = 0; s < R->nstate; s++)
			is_final |= R->state_out[s] == tv;
		ir_value *bo = B->bval[tv];
		ir_shape ys = {.rank = 3};
		ys.d[ax0] = ir_dim_const(T);
		ys.d[1 - ax0] = bo->shape.d[0];
		ys.d[2] = bo->shape.d[1];
		ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
		y->shape = ys;
		rec->out[R->nstate + B->nstack + k] = y;
		out_axis[B->nstack + k] = ax0;
		if (is_final)
			continue;       /* read as the final state instead */
		if (R->reverse) {
			rev[nrev] = reversal(g, y, ax0, NULL);
			y = rev[nrev++]->out[0];
		}
		ir_node *ga = ir_node_new(g, OP_GATHER, NULL, 2, 1);
		int64_t minus1 = -1;
		ga->in[0] = y;
		ga->in[1] = ir_const_i64(g, NULL, 1, &minus1);
		ga->in[1]->shape.rank = 0;
		ir_attr_set_int(ga, "axis", ax0);
		ga->out[0] = v;
		ga->origin = "last step of a traced loop";
		post[k] = ga;
	}
	for (int k = 0; k < B->neach; k++) {
		int tv = B->each_tv[k];
		ir_value *bo = B->bval[tv];
		ir_shape ys = {.rank = 3};
		ys.d[ax0] = ir_dim_const(T);
		ys.d[1 - ax0] = bo->shape.d[0];
		ys.d[2] = bo->shape.d[1];
		ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
		y->shape = ys;
		int o = B->nstack + B->nlast + k;
		rec->out[R->nstate + o] = y;
		out_axis[o] = ax0;
		if (R->reverse) {
			rev[nrev] = reversal(g, y, ax0, NULL);
			y = rev[nrev++]->out[0];
		}
		int is_final = 0;
		for (int s = 0; s < R->nstate; s++)
			is_final |= R->state_out[s] == tv;
		for (int t = 0; t < T; t++) {
			ir_value *v = R->map[t][tv];
			/* (a value the first copy folded to a constant stays) */
			if (!v || v->kind != VAL_TEMP || nid(R, v->producer) < 0 || !used_outside(R, v) ||
			    (t == T - 1 && is_final))
				continue;
			ir_node *ga = ir_node_new(g, OP_GATHER, NULL, 2, 1);
			int64_t tt = t;
			ga->in[0] = y;
			ga->in[1] = ir_const_i64(g, NULL, 1, &tt);
			ga->in[1]->shape.rank = 0;
			ir_attr_set_int(ga, "axis", ax0);
			ga->out[0] = v;
			ga->origin = "one step of a traced loop";
			post[B->nlast + k * T + t] = ga;
		}
	}
	ir_attr_set_int(rec, "n_seq", nseq);
	ir_attr_set_int(rec, "n_state", R->nstate);
	ir_attr_set_int(rec, "n_out", nout);
	ir_attr_set_int(rec, "reverse", R->reverse);
	ir_attr_set_ints(rec, "seq_axis", nseq, seq_axis);
	ir_attr_set_ints(rec, "out_axis", nout, out_axis);
	ir_attr_set_int(rec, "has_lens", 0);
	ir_attr_set_int(rec, "has_step", has_step);
	ir_attr_set_int(rec, "traced_steps", T);
	for (int i = 0; i < R->ncoef; i++)
		if (period[i] >= 0)
			ir_attr_set_int(rec, "nag_restart", period[i]);

	/* the new node list: prefix, recurrence, last-step gathers, tail */
	ir_node **nodes = arena_array(R->A, (size_t)R->nn + (size_t)(npost + npre + nout) + 2, sizeof *nodes);
	int nn = 0;
	for (int i = 0; i < R->nn; i++)
		if (R->label[i] == LBL_PREFIX)
			nodes[nn++] = g->nodes[i];
	for (int i = 0; i < npre; i++)
		nodes[nn++] = pre[i];
	nodes[nn++] = rec;
	for (int k = 0; k < nrev; k++)
		nodes[nn++] = rev[k];
	for (int k = 0; k < npost; k++)
		if (post[k])
			nodes[nn++] = post[k];
	for (int i = 0; i < R->nn; i++) {
		int is_stack = 0;
		for (int k = 0; k < B->nstack; k++)
			is_stack |= B->stacks[k].concat == g->nodes[i];
		if (R->label[i] == LBL_TAIL && !is_stack)
			nodes[nn++] = g->nodes[i];
	}
	/* values: step values go (those re-produced by rec or a gather stay) */
	char *keep = arena_alloc(R->A, (size_t)R->nv + 1);
	for (int v = 0; v < R->nv; v++) {
		ir_value *x = g->values[v];
		int p = nid(R, x->producer);
		keep[v] = x->kind != VAL_TEMP || p < 0 || R->label[p] < 0;
	}
	for (int k = 0; k < rec->nout; k++)
		if (vid(R, rec->out[k]) >= 0)
			keep[rec->out[k]->id] = 1;
	for (int k = 0; k < npost; k++)
		if (post[k] && vid(R, post[k]->out[0]) >= 0)
			keep[post[k]->out[0]->id] = 1;
	for (int k = 0; k < nrev; k++)
		if (vid(R, rev[k]->out[0]) >= 0)
			keep[rev[k]->out[0]->id] = 1;
	int nv = 0;
	for (int v = 0; v < g->nvalues; v++)
		if (v >= R->nv || keep[v])
			g->values[nv++] = g->values[v];
	g->nvalues = nv;
	ir_set_nodes(g, nodes, nn);
	for (int k = 0; k < rec->nout; k++)
		if (rec->out[k])
			rec->out[k]->producer = rec;
	for (int k = 0; k < nrev; k++) {
		rev[k]->out[0]->producer = rev[k];
		if (infer_node(g, rev[k], &q))
			return WHY_INT_REVERSE;
	}
	for (int k = 0; k < npost; k++)
		if (post[k]) {
			post[k]->out[0]->producer = post[k];
			if (infer_node(g, post[k], &q))
				return WHY_INT_GATHER;
		}
	/* work on the initial states that only the first copy read */
	ir_recount(g);
	ir_drop_dead(g, IR_DEAD_TEMPS);
	/* unused constants of the removed copies */
	ir_recount(g);
	nv = 0;
	for (int v = 0; v < g->nvalues; v++) {
		ir_value *x = g->values[v];
		if ((x->kind == VAL_CONST || x->kind == VAL_WEIGHT) && x->nuses == 0 && !x->is_output &&
		    !is_graph_output(R, x))
			continue;
		g->values[nv++] = x;
	}
	g->nvalues = nv;
	ir_recount(g);
	return WHY_NONE;
}

/* ---- 7. a symbolic time axis ------------------------------------------------------------ */

/* Ops downstream of the loop whose result does not bake in the traced T
 * when the time axis is none of the axes their parameters name. */
static int time_safe(const ir_node *n)
{
	switch (ir_ops[n->op].kind) {
	case OPK_ELEM: case OPK_LINALG: return 1;
	default: break;
	}
	switch (n->op) {
	case OP_SOFTMAX: case OP_LOGSOFTMAX: case OP_TRANSPOSE: case OP_CAST: case OP_GATHER:
	case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_SLICE: case OP_CONCAT:
		return 1;
	default:
		return 0;
	}
}

/* Re-infers the graph with the traced T replaced by a dimension symbol; on
 * any doubt puts everything back and explains. */
/* The graph input a sequence is computed from, through nodes that keep
 * its time axis where it is and read nothing else that depends on T: the
 * [.., .., 1] column view of pass_canon, an embedding lookup
 * Gather(table, tokens), element-wise work with constants, Cast.  Returns
 * the input (x itself when x is one) and, in chain[0 .. *n), the nodes from
 * the input to x in order; NULL when x is computed otherwise. */
enum { CHAIN_MAX = 12, IR_MAX_INPUTS_SAVE = 16 };

/* v is computed from weights and constants only (shape constants included:
 * a Shape of an input is folded into one), looking at most *budget values
 * back (0 when that is not enough). */
static int value_free(const ir_value *v, int *budget)
{
	if (v->kind == VAL_WEIGHT || v->kind == VAL_CONST)
		return 1;
	if (v->kind != VAL_TEMP || !v->producer || --*budget <= 0)
		return 0;
	for (int k = 0; k < v->producer->nin; k++)
		if (v->producer->in[k] && !value_free(v->producer->in[k], budget))
			return 0;
	return 1;
}
static ir_value *seq_input(ir_value *x, int axis, ir_node **chain, int *n, int *in_axis)
{
	ir_node *rev[CHAIN_MAX];
	int k = 0;
	ir_value *v = x;
	while (v->kind != VAL_INPUT) {
		ir_node *p = v->producer;
		if (!p || k >= CHAIN_MAX || p->nout != 1 || v->shape.rank <= axis)
			return NULL;
		ir_value *data = NULL;
		const ir_attr *perm = p->op == OP_TRANSPOSE ? ir_attr_find(p, "perm") : NULL;
		if (p->op == OP_TRANSPOSE && p->nin == 1 && p->in[0] && p->in[0]->shape.rank == v->shape.rank) {
			/* x.transpose(0, 1) of the input: the time axis moves */
			int r = v->shape.rank, a = r - 1 - axis;    /* no perm: reversed axes */
			if (perm && perm->kind == ATTR_INTS && perm->n == r)
				a = (int)perm->ints[axis];
			if (a < 0 || a >= r)
				return NULL;
			axis = a;
			data = p->in[0];
		} else if (p->op == OP_UNSQUEEZE && p->nin == 2 && ir_value_is_const(p->in[1])) {
			for (int64_t i = 0; i < ir_shape_const_numel(&p->in[1]->shape); i++) {
				int64_t a = ir_const_int(p->in[1], i);
				if (a < 0)
					a += v->shape.rank;
				if (a <= axis)
					return NULL;
			}
			data = p->in[0];
		} else if (p->op == OP_GATHER && p->nin == 2 && ir_attr_int(p, "axis", 0) == 0 &&
			   p->in[0] && (p->in[0]->kind == VAL_WEIGHT || p->in[0]->kind == VAL_CONST) &&
			   p->in[1] && p->in[1]->shape.rank > axis) {
			data = p->in[1];        /* tokens [B, T] -> [B, T, E] */
		} else if (p->op == OP_CAST || (ir_ops[p->op].kind == OPK_ELEM && p->nin == 1)) {
			data = p->in[0];
		} else if (p->op == OP_SLICE && p->nin >= 4 && p->in[3] && ir_value_is_const(p->in[3]) &&
			   ir_shape_const_numel(&p->in[3]->shape) == 1 && p->in[0] &&
			   p->in[0]->shape.rank == v->shape.rank &&
			   (ir_const_int(p->in[3], 0) == axis || ir_const_int(p->in[3], 0) == axis - v->shape.rank)) {
			data = p->in[0];        /* x[:-1], x[1:] on the time axis (re-inferred) */
		} else if (p->op == OP_CONCAT && (ir_attr_int(p, "axis", 0) == axis ||
						  ir_attr_int(p, "axis", 0) == axis - v->shape.rank)) {
			/* a start token in front: the one input computed from a graph
			 * input's values; the others from weights and constants */
			for (int q = 0; q < p->nin; q++) {
				int budget = 64;
				if (p->in[q] && !value_free(p->in[q], &budget)) {
					if (data)
						return NULL;
					data = p->in[q];
				}
			}
		} else if (ir_ops[p->op].kind == OPK_ELEM && p->nin == 2) {
			for (int q = 0; q < 2; q++)
				if (p->in[q] && p->in[1 - q] && ir_value_is_const(p->in[1 - q]) &&
				    p->in[1 - q]->shape.rank < v->shape.rank - axis &&
				    ir_shape_eq(&p->in[q]->shape, &v->shape))
					data = p->in[q];
		}
		if (!data || data->shape.rank <= axis || (v != x && v->nuses != 1))
			return NULL;
		rev[k++] = p;
		v = data;
	}
	if (chain) {
		for (int i = 0; i < k; i++)
			chain[i] = rev[k - 1 - i];
		*n = k;
	}
	if (in_axis)
		*in_axis = axis;
	return v;
}

/* Recurrences of this pass whose time axis stayed the traced T although the
 * trace could run any T (slice_traced_steps gave them the traced steps of
 * their sequences): a later loop that reads all of a stacked output of one
 * (stacked layers, each with a loop of its own) takes over the per-step reads
 * that held it fixed, and then both become symbolic together. */
enum { FIXED_MAX = 32 };
typedef struct fixed_recs {
	ir_node *rec[FIXED_MAX];
	int n;
} fixed_recs;

/* The sliced input of rec's sequence s (x[0:T] of slice_traced_steps), or NULL. */
static ir_value *traced_slice_source(const ir_node *rec, int s)
{
	ir_value *v = rec->in[s];
	ir_node *p = v ? v->producer : NULL;
	if (!p || p->op != OP_SLICE || v->role != IR_ROLE_TRACE_STEPS || v->nuses != 1)
		return NULL;
	return p->in[0];
}

/* The earlier recurrence whose whole stacked output x is (on the time axis
 * axis), when it is one of F's and every sequence it reads is either a
 * traced slice of one symbolic length or (a static export) a graph input of
 * the traced length read by it alone: returns it, and that length in *len. */
static ir_node *fixed_upstream(const fixed_recs *F, ir_value *x, int axis, ir_dim *len)
{
	ir_node *p = x->producer;
	int at = -1;
	for (int i = 0; F && p && i < F->n; i++)
		if (F->rec[i] == p)
			at = i;
	if (at < 0 || x->nuses != 1)
		return NULL;
	int ns = (int)ir_attr_int(p, "n_state", 0), nseq = (int)ir_attr_int(p, "n_seq", 0);
	const ir_attr *oa = ir_attr_find(p, "out_axis"), *sa = ir_attr_find(p, "seq_axis");
	int k = -1;
	for (int j = ns; j < p->nout; j++)
		if (p->out[j] == x)
			k = j - ns;
	if (k < 0 || !oa || k >= oa->n || oa->ints[k] != axis || !sa || nseq < 1 || sa->n < nseq ||
	    x->shape.rank <= axis || !ir_dim_is_const(x->shape.d[axis]))
		return NULL;
	ir_dim T = x->shape.d[axis];
	for (int s = 0; s < nseq; s++) {
		ir_value *src = traced_slice_source(p, s);
		if (!src) {
			src = p->in[s];
			if (!src || src->kind != VAL_INPUT || src->nuses != 1)
				return NULL;
		}
		if (src->shape.rank <= sa->ints[s])
			return NULL;
		ir_dim d = src->shape.d[sa->ints[s]];
		if ((ir_dim_is_const(d) && !ir_dim_eq(d, T)) || (s > 0 && !ir_dim_eq(d, *len)))
			return NULL;
		*len = d;
	}
	return p;
}

/* Dim d (after the time axis became the symbol Tin) in terms of the trace:
 * every symbol of Tin's base at its traced value (Tin at L, a symbol derived
 * from it at L plus its offset).  Returns whether d involves such a symbol
 * and, when before is given, whether d at the trace equals before. */
static int traced_as(ir_graph *g, ir_dim Tin, int64_t L, ir_dim d, const ir_dim *before)
{
	int base = ir_dim_one_sym(Tin);
	if (base < 0 || ir_dim_is_const(d))
		return 0;
	if (g->sym_base[base]) {
		L -= g->sym_off[base];
		base = g->sym_base[base] - 1;
	}
	int involved = 0;
	for (int i = 0; i < g->nsyms; i++) {
		if (!d.pow[i] || (i != base && g->sym_base[i] != base + 1))
			continue;
		involved = 1;
		int64_t v = i == base ? L : L + g->sym_off[i];
		for (int p = 0; p < d.pow[i]; p++)
			if (v < 1 || __builtin_mul_overflow(d.k, v, &d.k))
				return 0;
		d.pow[i] = 0;
	}
	return involved && (!before || ir_dim_eq(d, *before));
}

/* Whether the values rec starts from (initial states, a stacked output's
 * entry before the loop's) are computed with a weight matrix the body
 * multiplies by: a step ran before the loop (a start token's). */
static int has_prologue_step(rr *R, ir_node *rec)
{
	ir_graph *g = R->g;
	char *wt = arena_alloc(R->A, (size_t)g->nvalues + 1);
	for (int i = 0; i < rec->body->nnodes; i++) {
		ir_node *n = rec->body->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && n->in[k]->kind == VAL_WEIGHT && n->in[k]->shape.rank >= 2 &&
			    n->in[k]->graph == g && n->in[k]->id >= 0 && n->in[k]->id < g->nvalues)
				wt[n->in[k]->id] = 1;
	}
	ir_value **todo = arena_array(R->A, (size_t)g->nvalues + 1, sizeof *todo);
	char *seen = arena_alloc(R->A, (size_t)g->nvalues + 1);
	int sp = 0, nseq = (int)ir_attr_int(rec, "n_seq", 0), ns = (int)ir_attr_int(rec, "n_state", 0);
	for (int k = nseq; k < rec->nin && k < nseq + ns; k++)
		todo[sp++] = rec->in[k];
	for (int i = 0; i < g->nnodes; i++)
		for (int k = ns; k < rec->nout; k++)
			if (g->nodes[i]->op == OP_CONCAT && g->nodes[i]->nin == 2 && rec->out[k] &&
			    g->nodes[i]->in[1] == rec->out[k])
				todo[sp++] = g->nodes[i]->in[0];
	while (sp > 0) {
		ir_value *v = todo[--sp];
		if (!v || v->graph != g || v->id < 0 || v->id >= g->nvalues || seen[v->id])
			continue;
		seen[v->id] = 1;
		if (wt[v->id])
			return 1;
		ir_node *p = v->producer;
		for (int k = 0; p && k < p->nin; k++)
			if (p->in[k] && sp < g->nvalues)
				todo[sp++] = p->in[k];
	}
	return 0;
}

/* rec's sequence s becomes Slice(x, 0, en) of it on its time axis, a node
 * placed just before rec: the loop reads the first steps of x (en < 0:
 * all but the last -en); its result has the given role.  Returns 1 when
 * the slice does not infer. */
static int slice_sequence(rr *R, ir_node *rec, int s, int64_t en, const char *origin, ir_role role)
{
	ir_graph *g = R->g;
	diag q;
	diag_init(&q, R->D->file);
	q.quiet = 1;
	ir_node *sl = axis_slice(g, rec->in[s], 0, en, R->seq[s].axis, 1, NULL);
	sl->origin = origin;
	sl->out[0]->role = role;
	if (infer_node(g, sl, &q))
		return 1;
	rec->in[s] = sl->out[0];
	ir_node **nodes = arena_array(R->A, (size_t)g->nnodes + 1, sizeof *nodes);
	int k = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i] == rec)
			nodes[k++] = sl;
		nodes[k++] = g->nodes[i];
	}
	ir_set_nodes(g, nodes, k);
	return 0;
}

static const char *make_time_symbolic(rr *R, ir_node *rec, fixed_recs *F)
{
	ir_graph *g = R->g;
	int T = R->T;
	ir_value *x0 = R->seq[0].src;
	ir_dim d0 = x0->shape.d[R->seq[0].axis];
	int have_sym = !ir_dim_is_const(d0);
	int64_t L = T;          /* a static export's traced length of the sequences */
	/* an earlier loop's stacked output: that loop's symbolic length */
	ir_node *up = NULL;
	if (!have_sym && R->nseq == 1) {
		ir_dim dl;
		up = fixed_upstream(F, x0, R->seq[0].axis, &dl);
		if (up && !ir_dim_is_const(dl)) {
			d0 = dl;
			have_sym = 1;
		}
	}
	/* A dynamic time axis's traced length is not in the file: the loop is
	 * taken to read all of it.  After a first step that reads something
	 * else, the loop may as well leave the last step unread (x[t-1] after a
	 * start token): the file cannot tell, T stays. */
	if (have_sym && !up && has_prologue_step(R, rec))
		return arena_printf(R->A, "T stays %d: a step before the loop (a start token's) reads no step of "
				    "'%s', and with a dynamic time axis the file cannot tell whether the loop "
				    "reads all of it or leaves its last step (x[t-1] after the start token); "
				    "export it with a static time axis, or give the loop torch.cat([start, "
				    "x[:-1]]) to read", T, x0->name);
	for (int s = 0; s < R->nseq && !up; s++) {
		ir_value *x = R->seq[s].src;
		ir_dim dx = x->shape.d[R->seq[s].axis];
		if (ir_dim_is_const(dx) && dx.k != T) {
			/* a static export whose loop leaves the last steps unread
			 * (a first step before it that reads a start token, or
			 * range(T - 1)): the loop runs that many fewer steps than the
			 * input has at any length (a derived symbol) */
			if (have_sym || up || dx.k < T || (s > 0 && dx.k != L))
				return arena_printf(R->A, "T stays %d: the loop reads %d of the %lld steps of '%s'", T, T,
						    (long long)dx.k, x->name);
			L = dx.k;
		}
		if (have_sym) {
			if (!ir_dim_eq(x->shape.d[R->seq[s].axis], d0))
				return arena_printf(R->A, "T stays %d: the sequences have different lengths", T);
			continue;
		}
		ir_value *xi = seq_input(x, R->seq[s].axis, NULL, NULL, NULL);
		if (!xi)
			return arena_printf(R->A, "T stays %d: the sequence '%s' is computed, not a graph input",
					    T, x->name);
		if (xi != x && xi->nuses != 1)
			return arena_printf(R->A, "T stays %d: the sequence '%s' is also read outside the "
					    "loop", T, xi->name);
		if (x->nuses != 1)
			return arena_printf(R->A, "T stays %d: the sequence '%s' is also read outside the "
					    "loop", T, x->name);
		for (int s2 = 0; s2 < s; s2++)
			if (R->seq[s2].src == x)
				return arena_printf(R->A, "T stays %d: '%s' is read on two axes", T, x->name);
	}
	/* the symbol: the input's own when it has one, else a new one */
	int sym = -1;
	const char *sname = "T";
	for (int k = 2; k < 100; k++) {
		int clash = 0;
		for (int i = 0; i < g->nsyms; i++)
			clash |= strcmp(g->syms[i], sname) == 0;
		for (int i = 0; i < g->ninputs; i++)
			clash |= strcmp(g->inputs[i]->name, sname) == 0;
		if (!clash)
			break;
		sname = arena_printf(R->A, "T%d", k);
	}
	if (!have_sym && g->nsyms >= IR_MAX_SYMS)
		return arena_printf(R->A, "T stays %d: no dimension symbol is left", T);
	/* downstream of the recurrence (and of the earlier one whose output it
	 * reads): only ops that keep T out of their parameters */
	int at = -1, at_up = -1;
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i] == rec)
			at = i;
		if (g->nodes[i] == up)
			at_up = i;
	}
	if (up && at_up > at)
		return arena_printf(R->A, "T stays %d: the loop over '%s' comes after its reader", T, x0->name);
	for (int i = (up ? at_up : at) + 1; i < g->nnodes; i++)
		if (g->nodes[i] != rec && !time_safe(g->nodes[i]))
			return arena_printf(R->A, "T stays %d: node '%s' (%s) after the loop may depend on the "
					    "traced length", T, g->nodes[i]->name, ir_op_name(g->nodes[i]->op));
	/* save shapes, try, restore on failure */
	int nv = g->nvalues;
	ir_shape *saved = arena_array(R->A, (size_t)nv + 1, sizeof *saved);
	for (int v = 0; v < nv; v++)
		saved[v] = g->values[v]->shape;
	int saved_nsyms = g->nsyms;
	ir_dim Ts = d0;
	if (!have_sym) {
		sym = ir_sym_add(g, sname);
		Ts = ir_dim_sym(sym);
	}
	/* Tin: the sequences' length; Ts: the loop's, L - T steps fewer */
	ir_dim Tin = Ts;
	if (L != T && !ir_sym_offset(g, Tin, T - L, &Ts)) {
		g->nsyms = saved_nsyms;
		return arena_printf(R->A, "T stays %d: no dimension symbol is left", T);
	}
	ir_dim Tc = ir_dim_const(T);
	/* the earlier loop reads its sequences whole again, and its stacked
	 * outputs get the symbolic length */
	ir_value *up_in[IR_MAX_INPUTS_SAVE];
	int up_nseq = up ? (int)ir_attr_int(up, "n_seq", 0) : 0;
	if (up_nseq > IR_MAX_INPUTS_SAVE)
		return arena_printf(R->A, "T stays %d: the loop over '%s' reads too many sequences", T, x0->name);
	for (int s = 0; s < up_nseq; s++) {
		ir_value *whole = traced_slice_source(up, s);
		up_in[s] = up->in[s];
		if (!whole) {
			/* a static export's graph input: its time axis becomes the symbol */
			const ir_attr *sa = ir_attr_find(up, "seq_axis");
			up->in[s]->shape.d[sa->ints[s]] = Ts;
			continue;
		}
		up->in[s]->nuses--;
		up->in[s] = whole;
		whole->nuses++;
	}
	if (up) {
		int ns = (int)ir_attr_int(up, "n_state", 0);
		const ir_attr *oa = ir_attr_find(up, "out_axis");
		for (int k = ns; k < up->nout; k++)
			if (up->out[k])
				up->out[k]->shape.d[oa->ints[k - ns]] = Ts;
	}
	/* the graph inputs get the symbol; a sequence computed from one (a
	 * slice x[:-1], a start token concatenated in front) gets the length
	 * that re-infers, which must be its traced one at the traced length */
	const char *chain_why = NULL;
	ir_dim Tin0 = Tin;
	for (int s = 0; s < R->nseq; s++) {
		ir_node *chain[CHAIN_MAX];
		int nc = 0;
		int xa = R->seq[s].axis;
		ir_value *x = R->seq[s].src;
		ir_value *xi = seq_input(x, R->seq[s].axis, chain, &nc, &xa);
		ir_dim D = Tin0;
		if (have_sym) {
			/* a dynamic time axis: the sequences keep theirs (checked equal) */
			D = x->shape.d[R->seq[s].axis];
		} else if (xi && xi != x) {
			ir_dim Lx = x->shape.d[R->seq[s].axis], Lin = xi->shape.d[xa];
			xi->shape.d[xa] = Tin0;
			diag q0;
			diag_init(&q0, R->D->file);
			q0.quiet = 1;
			for (int c = 0; c < nc; c++)
				infer_node(g, chain[c], &q0);
			D = x->shape.d[R->seq[s].axis];
			if (!have_sym && !(ir_dim_is_const(Lin) && traced_as(g, Tin0, Lin.k, D, &Lx)))
				chain_why = arena_printf(R->A, "T stays %d: the length of the sequence '%s' does not "
							 "follow that of '%s'", T, x->name, xi->name);
		}
		x->shape.d[R->seq[s].axis] = D;
		if (s == 0)
			Tin = D;
		else if (!ir_dim_eq(D, Tin) && !chain_why)
			chain_why = arena_printf(R->A, "T stays %d: the sequences have different lengths", T);
	}
	if (!have_sym && !chain_why && !ir_dim_eq(Tin, Tin0)) {
		/* a computed sequence: the loop's length from its length */
		Ts = Tin;
		if (L != T && !ir_sym_offset(g, Tin, T - L, &Ts))
			chain_why = arena_printf(R->A, "T stays %d: no dimension symbol is left", T);
	}
	int ns = (int)ir_attr_int(rec, "n_state", 0);
	const ir_attr *oa = ir_attr_find(rec, "out_axis");
	for (int k = ns; k < rec->nout; k++) {
		ir_value *o = rec->out[k];
		if (o)
			o->shape.d[oa->ints[k - ns]] = Ts;
	}
	diag q;
	diag_init(&q, R->D->file);
	q.quiet = 1;
	const char *why = chain_why;
	/* node inputs that name the time axis make T part of the computation */
	for (int i = (up ? at_up : at) + 1; i < g->nnodes && !why; i++) {
		ir_node *n = g->nodes[i];
		if (n == rec)
			continue;
		ir_shape before[8];
		for (int k = 0; k < n->nout && k < 8; k++)
			before[k] = n->out[k] ? n->out[k]->shape : (ir_shape){.rank = -1};
		int touches = 0;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				for (int a = 0; a < n->in[k]->shape.rank; a++)
					touches |= !ir_dim_is_const(n->in[k]->shape.d[a]) &&
						   (ir_dim_eq(n->in[k]->shape.d[a], Ts) || traced_as(g, Tin, L, n->in[k]->shape.d[a], NULL));
		if (!touches)
			continue;
		if (infer_node(g, n, &q)) {
			why = arena_printf(R->A, "T stays %d: node '%s' (%s) does not infer with a symbolic "
					   "length", T, n->name, ir_op_name(n->op));
			break;
		}
		for (int k = 0; k < n->nout && k < 8 && !why; k++) {
			if (!n->out[k])
				continue;
			/* every dim that changed must be the traced T become the symbol */
			ir_shape a = before[k], b = n->out[k]->shape;
			int ok = a.rank == b.rank;
			for (int d = 0; d < a.rank && ok; d++)
				ok = ir_dim_eq(a.d[d], b.d[d]) || (ir_dim_eq(a.d[d], Tc) && ir_dim_eq(b.d[d], Ts)) ||
				     traced_as(g, Tin, L, b.d[d], &a.d[d]);
			if (!ok)
				why = arena_printf(R->A, "T stays %d: node '%s' (%s) changes the time axis",
						   T, n->name, ir_op_name(n->op));
		}
		/* a Gather on the time axis picks a fixed step: only -1 (the last) is sound */
		if (!why && n->op == OP_GATHER) {
			int64_t ax = ir_attr_int(n, "axis", 0);
			ir_value *x = n->in[0];
			if (ax < 0)
				ax += x->shape.rank;
			if (ax >= 0 && ax < x->shape.rank && ir_dim_eq(x->shape.d[ax], Ts) &&
			    !(ir_value_is_const(n->in[1]) && ir_shape_const_numel(&n->in[1]->shape) == 1 &&
			      ir_const_int(n->in[1], 0) == -1))
				why = arena_printf(R->A, "T stays %d: node '%s' picks a fixed step", T, n->name);
		}
		/* (a Concat along the time axis is sound: its length re-inferred
		 * above to the symbol whose traced value it had, 1 + (T - 1)) */
		if (!why && (n->op == OP_SLICE || n->op == OP_SOFTMAX || n->op == OP_LOGSOFTMAX)) {
			int64_t ax = n->op == OP_SLICE ? -2 : ir_attr_int(n, "axis", -1);
			ir_value *x = n->in[0];
			if (n->op == OP_SLICE) {
				for (int e = 0; e < ir_shape_const_numel(&n->in[3]->shape); e++) {
					int64_t a = ir_const_int(n->in[3], e);
					/* reversing the whole axis does not depend on its length */
					int whole_rev = n->nin >= 5 && n->in[1] && n->in[2] && n->in[4] &&
							ir_const_int(n->in[1], e) == -1 &&
							ir_const_int(n->in[2], e) == INT64_MIN &&
							ir_const_int(n->in[4], e) == -1;
					if (a >= 0 && a < x->shape.rank && ir_dim_eq(x->shape.d[a], Ts) && !whole_rev)
						why = arena_printf(R->A, "T stays %d: node '%s' slices the time axis",
								   T, n->name);
				}
			} else {
				if (ax < 0)
					ax += x->shape.rank;
				if (ax >= 0 && ax < x->shape.rank && ir_dim_eq(x->shape.d[ax], Ts))
					why = arena_printf(R->A, "T stays %d: node '%s' (%s) works along the time axis",
							   T, n->name, ir_op_name(n->op));
			}
		}
	}
	for (int i = 0; i < g->noutputs && !why; i++)
		if (g->outputs[i]->kind == VAL_CONST)
			why = arena_printf(R->A, "T stays %d: output '%s' is a constant", T, g->outputs[i]->name);
	if (why) {
		for (int v = 0; v < nv; v++)
			g->values[v]->shape = saved[v];
		g->nsyms = saved_nsyms;
		for (int s = 0; s < up_nseq; s++) {
			up->in[s]->nuses--;
			up->in[s] = up_in[s];
			up->in[s]->nuses++;
		}
		return why;
	}
	/* the loop reads the first Ts of the Tin steps (x[:T - L]: the derived
	 * symbol made above, so the slice infers) */
	for (int s = 0; L != T && s < R->nseq; s++)
		if (slice_sequence(R, rec, s, T - L, "the steps the loop reads (it leaves the last ones)",
				   IR_ROLE_NONE))
			return arena_printf(R->A, "T stays %d: cannot slice the steps it reads", T);
	if (up) {
		/* no longer fixed: its note goes, and so do the slices (unread now) */
		ir_attr_remove(up, "time_note");
		for (int i = 0; i < F->n; i++)
			if (F->rec[i] == up)
				F->rec[i] = F->rec[--F->n];
	}
	(void)sym;
	return NULL;
}

/* A symbolic time axis that cannot stay symbolic: the recurrence reads the
 * traced steps only (x[0:T] on the time axis), as the trace did. */
static int slice_traced_steps(rr *R, ir_node *rec)
{
	for (int s = 0; s < R->nseq; s++) {
		ir_value *x = R->seq[s].src;
		ir_dim d = x->shape.d[R->seq[s].axis];
		if (ir_dim_is_const(d) && d.k == R->T)
			continue;
		if (slice_sequence(R, rec, s, R->T, "the steps a trace read", IR_ROLE_TRACE_STEPS)) {
			diag_error(R->D, "cannot slice the %d traced steps of '%s'", R->T, x->name);
			return 1;
		}
	}
	return 0;
}


/* ---- parallel states: one velocity per gate is one velocity ---------------------------- */

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
	if (ir_ops[na->op].kind != OPK_ELEM || na->op != nb->op || na->nin != nb->nin || !same_attrs(na, nb))
		return 0;
	for (int k = 0; k < na->nin; k++)
		if ((na->in[k] == NULL) != (nb->in[k] == NULL) ||
		    (na->in[k] && !same_update(na->in[k], nb->in[k], la, lb, depth + 1)))
			return 0;
	return 1;
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
	ir_node *c;
	if (n->op == OP_SLICE) {
		int64_t st = la->off, en = la->off + w, ax = 1;
		if (st == 0 && ir_dim_is_const(la->P->shape.d[1]) && la->P->shape.d[1].k == w)
			return (ir_value *)la->P;       /* the whole product */
		c = ir_node_new(b, OP_SLICE, NULL, 4, 1);
		c->in[0] = (ir_value *)la->P;
		c->in[1] = ir_const_i64(b, NULL, 1, &st);
		c->in[2] = ir_const_i64(b, NULL, 1, &en);
		c->in[3] = ir_const_i64(b, NULL, 1, &ax);
	} else {
		c = ir_clone_node(b, n, NULL, 1, IR_CLONE_SHARE_ATTRS);
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && !(c->in[k] = clone_update(b, n->in[k], la, S, w, out, nout, q)))
				return NULL;
	}
	c->origin = "states merged (one per gate)";
	c->out[0] = ir_value_new(b, NULL, VAL_TEMP, v->dtype);
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
	c->origin = "states merged (one per gate)";
	c->out[0] = ir_value_new(b, NULL, VAL_TEMP, X->dtype);
	c->out[0]->producer = c;
	if (infer_node(b, c, q))
		return NULL;
	out[(*nout)++] = c;
	return c->out[0];
}

enum { PAR_MAX = 8 };

/* Whether initial state v is all zeros (NULL: zeros by definition). */
static int zero_state(const ir_value *v)
{
	if (!v)
		return 1;
	if (reroll_has_data(v) && v->dtype == DT_F32) {
		int64_t n = ir_shape_const_numel(&v->shape);
		for (int64_t i = 0; i < n; i++)
			if (((const float *)v->data)[i] != 0.0f)
				return 0;
		return n >= 0;
	}
	const ir_node *p = v->producer;
	if (!p || p->op != OP_CONSTOFSHAPE || v->dtype != DT_F32)
		return 0;
	const ir_attr *a = ir_attr_find(p, "value");
	return !a || !a->t || (a->t->dtype == DT_F32 && reroll_has_data(a->t) && *(const float *)a->t->data == 0.0f);
}

/* One group of parallel states of rec merged: 1, or 0 when there is none. */
static int merge_parallel_states(ir_graph *g, ir_node *rec)
{
	ir_graph *b = rec->body;
	int nseq = (int)ir_attr_int(rec, "n_seq", 0), ns = (int)ir_attr_int(rec, "n_state", 0);
	if (!b || ns < 2 || b->ninputs < nseq + ns || b->noutputs < ns)
		return 0;
	ir_recount(g);
	for (int a = 0; a < ns; a++) {
		ir_value *sa = b->inputs[nseq + a], *ua = b->outputs[a];
		if (!zero_state(rec->in[nseq + a]) || (rec->out[a] && rec->out[a]->nuses) || sa->shape.rank != 2 ||
		    sa->dtype != DT_F32)
			continue;
		int grp[PAR_MAX], ng = 1;
		par_leaf L[PAR_MAX];
		grp[0] = a;
		L[0] = (par_leaf){.own = sa};
		for (int c = a + 1; c < ns && ng < PAR_MAX; c++) {
			ir_value *sc = b->inputs[nseq + c], *uc = b->outputs[c];
			if (!zero_state(rec->in[nseq + c]) || (rec->out[c] && rec->out[c]->nuses) || !ir_shape_eq(&sc->shape, &sa->shape) ||
			    uc == ua)
				continue;
			par_leaf l0 = {.own = sa}, lc = {.own = sc};
			/* the roots are read elsewhere too (the gates): compare below them */
			const ir_node *ra = ua->producer, *rc = uc->producer;
			if (!ra || !rc || ra->op != rc->op || ra->nin != rc->nin || ir_ops[ra->op].kind != OPK_ELEM ||
			    !same_attrs(ra, rc))
				continue;
			int same = 1;
			for (int k = 0; k < ra->nin && same; k++)
				same = (ra->in[k] == NULL) == (rc->in[k] == NULL) &&
				       (!ra->in[k] || same_update(ra->in[k], rc->in[k], &l0, &lc, 1));
			if (!same || !l0.P || l0.w != sa->shape.d[1].k || (L[0].P && L[0].off != l0.off))
				continue;
			L[0] = l0;
			L[ng] = lc;
			grp[ng++] = c;
		}
		if (ng < 2)
			continue;
		/* consecutive blocks of P, in some order of the states */
		int64_t w = L[0].w, lo = L[0].off;
		for (int i = 1; i < ng; i++)
			lo = L[i].off < lo ? L[i].off : lo;
		int ok = 1;
		for (int i = 0; i < ng && ok; i++) {
			int64_t k = L[i].off - lo;
			ok = k % w == 0 && k / w < ng;
			for (int j = 0; j < i && ok; j++)
				ok = L[j].off != L[i].off;
		}
		if (!ok)
			continue;
		/* the merged state S [B, ng * w] and its update */
		diag q;
		diag_init(&q, NULL);
		q.quiet = 1;
		ir_node **fresh = arena_array(g->A, (size_t)(b->nnodes * 2 + 16), sizeof *fresh);
		int nf = 0, nhead = 0;
		ir_value *S = ir_value_new(b, ir_free_name(b, arena_printf(g->A, "%s.merged", sa->name ? sa->name : "state")), VAL_STEP,
					   DT_F32);
		S->shape = sa->shape;
		S->shape.d[1] = ir_dim_const(w * ng);
		ir_node *head[PAR_MAX];
		/* the states' other readers read their blocks of S */
		for (int i = 0; i < ng; i++) {
			ir_value *blk = block_of(b, S, L[i].off - lo, w, head, &nhead, &q);
			if (!blk)
				return 0;
			ir_replace_uses(b, L[i].own, blk, NULL, 0);
		}
		par_leaf lm = L[0];
		lm.off = lo;
		lm.own = head[0]->out[0];       /* S's block 0 now stands where sa was read */
		/* the merged update: state a's expression, over S and P's blocks */
		ir_value *Su = clone_update(b, ua, &(par_leaf){.own = lm.own, .P = lm.P, .off = lo}, S, w * ng, fresh,
					    &nf, &q);
		if (!Su)
			return 0;
		/* readers of each state's update read its block of the merged one */
		ir_node *tailn[PAR_MAX];
		int ntail = 0;
		for (int i = 0; i < ng; i++) {
			ir_value *blk = block_of(b, Su, L[i].off - lo, w, tailn, &ntail, &q);
			if (!blk)
				return 0;
			ir_replace_uses(b, b->outputs[grp[i]], blk, NULL, 0);
		}
		/* the node list: the blocks of S first, the merged update where
		 * state a's update was (after P), then the rest */
		ir_node **nodes = arena_array(g->A, (size_t)(b->nnodes + nhead + nf + ntail + 1), sizeof *nodes);
		int k = 0;
		for (int i = 0; i < nhead; i++)
			nodes[k++] = head[i];
		const ir_node *pn = lm.P->producer;
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
		/* inputs, outputs and the recurrence: state a becomes S, the others go */
		ir_value **bin = arena_array(g->A, (size_t)b->ninputs, sizeof *bin);
		ir_value **bout = arena_array(g->A, (size_t)b->noutputs, sizeof *bout);
		ir_value **rin = arena_array(g->A, (size_t)rec->nin, sizeof *rin);
		ir_value **rout = arena_array(g->A, (size_t)rec->nout, sizeof *rout);
		int ni = 0, no = 0, nri = 0, nro = 0;
		for (int i = 0; i < b->ninputs; i++) {
			int s = i - nseq, drop = 0;
			for (int j = 1; j < ng; j++)
				drop |= s == grp[j];
			if (!drop)
				bin[ni++] = s == a ? S : b->inputs[i];
		}
		for (int i = 0; i < b->noutputs; i++) {
			int drop = 0;
			for (int j = 1; j < ng; j++)
				drop |= i == grp[j];
			if (!drop)
				bout[no++] = i == a ? Su : b->outputs[i];
		}
		for (int i = 0; i < rec->nin; i++) {
			int s = i - nseq, drop = 0;
			for (int j = 1; j < ng && s >= 0 && s < ns; j++)
				drop |= s == grp[j];
			if (!drop)
				rin[nri++] = s == a ? NULL : rec->in[i];   /* zeros, like each part */
		}
		for (int i = 0; i < rec->nout; i++) {
			int drop = 0;
			for (int j = 1; j < ng && i < ns; j++)
				drop |= i == grp[j];
			if (!drop)
				rout[nro++] = i == a && rec->out[i] ? NULL : rec->out[i];
		}
		for (int i = 0; i < b->noutputs; i++)
			b->outputs[i]->is_output = 0;
		b->inputs = bin, b->ninputs = ni;
		b->outputs = bout, b->noutputs = no;
		for (int i = 0; i < no; i++)
			bout[i]->is_output = 1;
		rec->in = rin, rec->nin = nri;
		rec->out = rout, rec->nout = nro;
		ir_attr_set_int(rec, "n_state", ns - (ng - 1));
		ir_recount(g);
		/* the old updates are read by nothing now */
		if (ir_drop_dead(b, 0))
			ir_recount(g);
		return 1;
	}
	return 0;
}

/* ---- the pass --------------------------------------------------------------------------- */

/* Records on the root graph that the loop R found stays unrolled, and why
 * (ir_unrolled): what `cellc info`, compile's warning and --werror-fallback
 * report.  The size is that of the steps (their slices excluded). */
static void record_unrolled(rr *R, ir_unrolled_why why)
{
	int nodes = 0;
	for (int t = 0; R->ncopy && t < R->T; t++)
		nodes += R->ncopy[t];
	ir_unrolled u = {.why = why, .seq = R->seq[0].src->name ? R->seq[0].src->name : "?", .steps = R->T,
			 .nodes = nodes, .per_step = R->ncopy ? R->ncopy[R->m] : 0, .step = -1, .vs = -1, .op = -1};
	if (R->diff_found) {
		u.step = R->diff_step;
		u.vs = R->diff_vs;
		u.node = R->diff_node->name ? R->diff_node->name : "?";
		u.op = (int)R->diff_node->op;
	}
	ir_unrolled_add(R->g, &u);
}

/* One loop: 1 rolled, 0 nothing found, -1 left alone (R.why says why). */
static int reroll_once(ir_graph *g, diag *D, int round, ir_unrolled_why *why, fixed_recs *F)
{
	rr R0 = {.g = g, .D = D, .A = g->A, .nn = g->nnodes, .nv = g->nvalues, .round = round}, *R = &R0;
	ir_recount(g);
	if (!find_sequences(R))
		return 0;
	build_consumers(R);
	build B = {0};
	if (assign_steps(R) || build_template(R) || match_all(R) || find_stacks(R, &B)) {
		/* a loop over the slices from the last to the first (reversed(
		 * x.unbind(0))): the same analysis with the slices taken in the
		 * order the trace read them, rolled as a reverse recurrence */
		rr R1 = {.g = g, .D = D, .A = g->A, .nn = g->nnodes, .nv = g->nvalues, .round = round,
			 .reverse = 1};
		find_sequences(&R1);
		for (int s = 0; s < R1.nseq; s++)
			for (int t = 0, u = R1.T - 1; t < u; t++, u--) {
				ir_node *a = R1.seq[s].anchor[t], *x = R1.seq[s].aux[t];
				R1.seq[s].anchor[t] = R1.seq[s].anchor[u];
				R1.seq[s].aux[t] = R1.seq[s].aux[u];
				R1.seq[s].anchor[u] = a;
				R1.seq[s].aux[u] = x;
			}
		build_consumers(&R1);
		build B1 = {0};
		if (assign_steps(&R1) || build_template(&R1) || match_all(&R1) || find_stacks(&R1, &B1)) {
			*why = R->why;
			/* slices read by no step (graph outputs only) are no loop */
			if (R->T > 0 && R->nseq > 0 && !R->no_step && !R1.no_step)
				record_unrolled(R, R->why);
			return -1;
		}
		R0 = R1;
		B = B1;
	}
	const char *time_note = NULL;
	int sym_ok;
	/* from here on the graph changes: a failure is an internal error */
	ir_node **nodes0 = g->nodes;
	int nnodes0 = g->nnodes;
	ir_unrolled_why err = build_recurrence(R, &B, &time_note, &sym_ok);
	if (err && g->nodes == nodes0 && g->nnodes == nnodes0) {
		/* found out before the graph changed: the loop stays unrolled, the
		 * values made for the body go */
		g->nvalues = R->nv;
		*why = err;
		record_unrolled(R, err);
		return -1;
	}
	if (err) {
		diag_error(D, "cannot rebuild the traced loop of %d steps as a recurrence: %s", R->T,
			   ir_unrolled_why_text(err));
		return -1;
	}
	ir_node *rec = NULL;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_RECURRENCE && g->nodes[i]->body == B.body)
			rec = g->nodes[i];
	ASSERT(rec);
	if (sym_ok)
		time_note = make_time_symbolic(R, rec, F);
	if (time_note)
		ir_attr_set_string(rec, "time_note", time_note);
	if (time_note && slice_traced_steps(R, rec))
		return -1;
	if (sym_ok && time_note && F->n < FIXED_MAX)
		F->rec[F->n++] = rec;
	for (int k = 0; k < 4 && merge_parallel_states(g, rec); k++)
		;
	recognize_recurrence(rec);
	ir_recount(g);
	return 1;
}

int pass_reroll(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	int errs0 = D->nerrors;
	fixed_recs F = {.n = 0};
	int nloops = g->nunrolled;
	int *before = arena_array(g->A, (size_t)(nloops ? nloops : 1), sizeof *before);
	reroll_count_loop_nodes(g, before);
	for (int round = 0; round < 16; round++) {
		ir_unrolled_why why = WHY_NONE;
		int r = reroll_once(g, D, round, &why, &F);
		if (why && getenv("CELLC_DEBUG_REROLL"))
			fprintf(stderr, "reroll: %s\n", ir_unrolled_why_text(why));
		if (r <= 0)
			break;
	}
	int found = g->nunrolled;
	reroll_find_unfound(g);
	for (int k = found; k < g->nunrolled && getenv("CELLC_DEBUG_REROLL"); k++)
		fprintf(stderr, "reroll: a loop of %d steps over '%s' not found by its slices: %s\n", g->unrolled[k].steps,
			g->unrolled[k].seq, ir_unrolled_why_text(g->unrolled[k].why));
	if (nloops)
		reroll_settle_loops(g, before, nloops);
	return D->nerrors - errs0;
}
