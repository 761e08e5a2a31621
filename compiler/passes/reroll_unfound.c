/* reroll_unfound.c: what pass_reroll leaves unrolled, recorded (ir_unrolled,
 * fallback.def) so that the commands report it as a fallback (compile.h).
 * pass_reroll.c finds and rolls traced loops; this file only reports, the
 * graph never changes here:
 * - the loops its rounds do not find (reroll_find_unfound, below);
 * - the ONNX Loops the loader unrolled (lower_seq.c tags their nodes,
 *   ir_node.unrolled): dropped from the record when the rounds rolled
 *   them, else counted (reroll_count_loop_nodes, reroll_settle_loops). */
#include "reroll.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* ---- loops no round finds ------------------------------------------------------------ */

/* The rounds above find a traced loop by its per-step slices of a rank-3
 * sequence on axis 0 or 1, each with its unit axis dropped (find_sequences).
 * A loop written another way stays unrolled as well, and is found here,
 * after the rounds, only to be reported (ir_unrolled; the graph does not
 * change):
 * - WHY_SLICE_FORM: T >= 3 slices x[t] of one f32 source on one axis, cut
 *   by Gather(x, t), Slice(x, t, t+1) or a Split into unit parts, of any
 *   rank and read in any form (a [B, T] series split by x.split(1, 1),
 *   frames [B, T, C, H, W] read as x[:, t], x[:, t:t+1] squeezed of every
 *   unit axis, the slices of a product (f * x).split(1, 0) read before
 *   their unit axis goes), where for every t some value depends on exactly
 *   the slices 0..t (a value carried from step to step: heads applied to a
 *   few fixed steps and concatenated are no loop);
 * - WHY_NO_SLICES: a weight read by the products (Gemm, MatMul, Conv, an
 *   ONNX RNN node) of >= 3 steps, each step's product depending on the
 *   previous step's and reading no slice that one did not: a sequence
 *   generated step by step, each step fed what the step before computed
 *   (a forecaster's future steps, a greedy decoder).
 * Either found over f64 slices or weights is WHY_PRECISION: the rounds roll
 * float32 steps only (recurrences are float32).
 * Nodes of an ONNX Loop the loader unrolled (ir_node.unrolled) are left to
 * its own record. */

typedef struct lslice {
	reroll_slice at;        /* the source, axis and step (first: the sort key) */
	ir_value *v;            /* the slice */
} lslice;

/* A scalar step index (or a one-element one) whose value cellc holds. */
static int const_index(const ir_value *v, int64_t *i)
{
	if (!reroll_has_data(v) || (v->dtype != DT_I64 && v->dtype != DT_I32) || ir_shape_const_numel(&v->shape) != 1)
		return 0;
	*i = ir_const_int(v, 0);
	return 1;
}

/* Normalises step t of an axis of length d (negative: from the end). */
static int step_in(ir_dim d, int64_t *t)
{
	if (*t < 0 && ir_dim_is_const(d))
		*t += d.k;
	return *t >= 0 && (!ir_dim_is_const(d) || *t < d.k);
}

/* The per-step slices node n cuts, appended to L (up to max). */
static int loose_slices(const ir_node *n, lslice *L, int max)
{
	ir_value *x = n->nin > 0 ? n->in[0] : NULL;
	if (!x || (x->dtype != DT_F32 && x->dtype != DT_F64) || x->shape.rank < 2 || n->unrolled)
		return 0;
	int r = x->shape.rank, k = 0;
	int64_t ax, t, en, one = 1;
	switch (n->op) {
	case OP_GATHER:
		ax = ir_attr_int(n, "axis", 0);
		ax = ax < 0 ? ax + r : ax;
		if (n->nin != 2 || !n->out[0] || !const_index(n->in[1], &t) || ax < 0 || ax >= r ||
		    !step_in(x->shape.d[ax], &t) || max < 1)
			return 0;
		L[0] = (lslice){{x, (int)ax, t}, n->out[0]};
		return 1;
	case OP_SLICE:
		if (n->nin < 3 || !n->out[0] || !const_index(n->in[1], &t) || !const_index(n->in[2], &en))
			return 0;
		ax = 0;
		if (n->nin > 3 && n->in[3] && !const_index(n->in[3], &ax))
			return 0;
		if (n->nin > 4 && n->in[4] && (!const_index(n->in[4], &one) || one != 1))
			return 0;
		ax = ax < 0 ? ax + r : ax;
		if (ax < 0 || ax >= r || !step_in(x->shape.d[ax], &t))
			return 0;
		if (en < 0 && ir_dim_is_const(x->shape.d[ax]))
			en += x->shape.d[ax].k;
		if (en != t + 1 || max < 1)
			return 0;
		L[0] = (lslice){{x, (int)ax, t}, n->out[0]};
		return 1;
	case OP_SPLIT:
		ax = ir_attr_int(n, "axis", 0);
		ax = ax < 0 ? ax + r : ax;
		if (ax < 0 || ax >= r || n->nout < 3 || n->nout > max || !ir_dim_is_const(x->shape.d[ax]) ||
		    x->shape.d[ax].k != n->nout)
			return 0;
		for (int o = 0; o < n->nout; o++) {
			const ir_value *v = n->out[o];
			if (!v || v->shape.rank != r || !ir_dim_is_const(v->shape.d[ax]) || v->shape.d[ax].k != 1)
				return 0;
		}
		for (int o = 0; o < n->nout; o++)
			L[k++] = (lslice){{x, (int)ax, o}, n->out[o]};
		return k;
	default:
		return 0;
	}
}

/* A value of g's own, by id (-1: another graph's). */
static int own(const ir_graph *g, const ir_value *v)
{
	return v && v->graph == g && v->id >= 0 && v->id < g->nvalues && g->values[v->id] == v ? v->id : -1;
}

/* Per value of the root, the first and last step (lo, hi) whose slice it
 * depends on, -1 for none; the slices' own are set before. */
typedef struct span {
	int *lo, *hi;
} span;

static void spread(const ir_graph *g, span *S)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		int lo = -1, hi = -1;
		for (int k = 0; k < n->nin; k++) {
			int v = own(g, n->in[k]);
			if (v < 0 || S->hi[v] < 0)
				continue;
			lo = lo < 0 || S->lo[v] < lo ? S->lo[v] : lo;
			hi = S->hi[v] > hi ? S->hi[v] : hi;
		}
		for (int k = 0; k < n->nout; k++) {
			int v = own(g, n->out[k]);
			if (v >= 0 && S->hi[v] < 0) {
				S->lo[v] = lo;
				S->hi[v] = hi;
			}
		}
	}
}

enum { GROUPS_MAX = 64 };

/* Slice loops (WHY_SLICE_FORM): records each, and adds to sig[v] the last
 * step + 1 of the slices of every group v depends on (a value that reads a
 * later step's slice than another has the greater sum). */
static void find_slice_loops(ir_graph *g, int64_t *sig)
{
	int nv = g->nvalues, max = 0;
	for (int i = 0; i < g->nnodes; i++)
		max += g->nodes[i]->op == OP_SPLIT ? g->nodes[i]->nout : 1;
	lslice *L = arena_array(g->A, (size_t)max + 1, sizeof *L);
	int nl = 0;
	for (int i = 0; i < g->nnodes; i++)
		nl += loose_slices(g->nodes[i], L + nl, max - nl);
	if (nl < 3)
		return;
	qsort(L, (size_t)nl, sizeof *L, reroll_slice_cmp);
	span S = {arena_array(g->A, (size_t)nv + 1, sizeof(int)), arena_array(g->A, (size_t)nv + 1, sizeof(int))};
	char *is_slice = arena_alloc(g->A, (size_t)nv + 1);
	char *seen = arena_alloc(g->A, (size_t)g->nnodes + 1);  /* nodes in the steps of a loop reported */
	int groups = 0;
	for (int i = 0, j; i < nl && groups < GROUPS_MAX; i = j) {
		/* the slices of one source and axis: steps 0 .. T-1, each at least once */
		int64_t T = 0;
		int gap = 0;
		for (j = i; j < nl && L[j].at.src == L[i].at.src && L[j].at.axis == L[i].at.axis; j++) {
			if (L[j].at.t == T)
				T++;
			else if (L[j].at.t != T - 1)
				gap = 1;
		}
		if (gap || T < 3)
			continue;
		groups++;
		for (int v = 0; v < nv; v++)
			S.lo[v] = S.hi[v] = -1;
		memset(is_slice, 0, (size_t)nv + 1);
		for (int k = i; k < j; k++)
			if (own(g, L[k].v) >= 0) {
				S.lo[L[k].v->id] = S.hi[L[k].v->id] = (int)L[k].at.t;
				is_slice[L[k].v->id] = 1;
			}
		spread(g, &S);
		for (int v = 0; v < nv; v++)
			sig[v] += S.hi[v] + 1;
		/* a value carried from step to step: one over slices 0..t, each t */
		char *prefix = arena_alloc(g->A, (size_t)T);
		int nprefix = 0, per_step = 0, nodes = 0, again = 0;
		for (int v = 0; v < nv; v++)
			if (!is_slice[v] && S.lo[v] == 0 && S.hi[v] >= 0) {
				nprefix += !prefix[S.hi[v]];
				prefix[S.hi[v]] = 1;
				/* a loop that reads several sequences (values, masks
				 * and deltas) is reported once, by the first */
				again |= S.hi[v] == 1 && g->values[v]->producer && seen[g->values[v]->producer->id];
			}
		if (nprefix < T || again)
			continue;
		/* the nodes of the steps (the slices aside): step 1's, and those
		 * before the last step (its tail aside) */
		for (int n = 0; n < g->nnodes; n++) {
			int y = own(g, g->nodes[n]->nout > 0 ? g->nodes[n]->out[0] : NULL);
			if (y < 0 || S.hi[y] < 0 || is_slice[y])
				continue;
			per_step += S.hi[y] == 1;
			nodes += S.hi[y] < T - 1;
			seen[n] = (char)(S.hi[y] < T - 1);
		}
		ir_unrolled u = {.why = L[i].at.src->dtype == DT_F64 ? WHY_PRECISION : WHY_SLICE_FORM, .seq = L[i].at.src->name ? L[i].at.src->name : "?", .steps = (int)T,
				 .nodes = nodes + per_step, .per_step = per_step, .step = -1, .vs = -1, .op = -1};
		ir_unrolled_add(g, &u);
	}
}

/* A product (Gemm, MatMul, Conv, an ONNX RNN node) reading a weight of
 * class c (rep[v] == c: the exporter writes a copy of a weight for each
 * step that reads it transposed, so copies of equal contents are one). */
static int reads_class(const ir_graph *g, const ir_node *n, const int *rep, int c)
{
	if (n->unrolled || (n->op != OP_GEMM && n->op != OP_MATMUL && n->op != OP_CONV && n->op != OP_LSTM &&
			    n->op != OP_GRU && n->op != OP_RNN))
		return 0;
	for (int k = 0; k < n->nin; k++) {
		int v = own(g, n->in[k]);
		if (v >= 0 && rep[v] == c)
			return 1;
	}
	return 0;
}

/* rep[v]: the first value whose contents equal weight v's (f32, rank >= 2,
 * read by a product), -1 for other values. */
static void weight_classes(const ir_graph *g, int *rep)
{
	int nv = g->nvalues;
	uint64_t *h = arena_array(g->A, (size_t)nv + 1, sizeof *h);
	for (int v = 0; v < nv; v++)
		rep[v] = -2;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			int v = own(g, n->in[k]);
			if (v >= 0 && rep[v] == -2 && reroll_has_data(n->in[k]) &&
			    (n->in[k]->dtype == DT_F32 || n->in[k]->dtype == DT_F64) &&
			    n->in[k]->shape.rank >= 2 && ir_shape_const_numel(&n->in[k]->shape) > 0)
				rep[v] = -3;
		}
	}
	int *reps = arena_array(g->A, (size_t)nv + 1, sizeof *reps), nreps = 0;
	for (int v = 0; v < nv; v++) {
		if (rep[v] != -3) {
			rep[v] = -1;
			continue;
		}
		const ir_value *x = g->values[v];
		const unsigned char *b = x->data;
		size_t bytes = (size_t)ir_shape_const_numel(&x->shape) * ir_dtype_size(x->dtype);
		uint64_t f = 1469598103934665603ULL;
		for (size_t i = 0; i < bytes; i++)
			f = (f ^ b[i]) * 1099511628211ULL;
		h[v] = f;
		rep[v] = v;
		for (int r = 0; r < nreps && rep[v] == v; r++)
			if (h[reps[r]] == f && reroll_same_const(g->values[reps[r]], x, 0))
				rep[v] = reps[r];
		if (rep[v] == v)
			reps[nreps++] = v;
	}
}

/* The first input of n that a node computes or the graph reads: what the
 * step is fed. */
static const ir_value *fed(const ir_node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && !reroll_has_data(n->in[k]))
			return n->in[k];
	return NULL;
}

/* The value a node writes first (an ONNX RNN node may omit Y). */
static const ir_value *out_of(const ir_node *n)
{
	for (int k = 0; k < n->nout; k++)
		if (n->out[k])
			return n->out[k];
	return NULL;
}

typedef struct run {
	int w, first, last, steps;      /* weight; its readers first .. last */
	int at;                         /* the first reader's node index */
} run;

/* The longest first; of equal ones, the one whose first product comes
 * first (the product at the start of a step: a decoder cell's, not its
 * output head's). */
static int run_cmp(const void *a, const void *b)
{
	const run *x = a, *y = b;
	return x->steps != y->steps ? y->steps - x->steps : x->at != y->at ? x->at - y->at : x->w - y->w;
}

/* The readers of weight w (root node indices, in order, into rd) and per
 * value the last reader it depends on (ri); link[k]: reader k depends on
 * reader k-1.  Returns the number of readers. */
static int weight_readers(const ir_graph *g, const int *rep, int w, int *rd, int *ri, int *link)
{
	int nv = g->nvalues, nr = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (reads_class(g, g->nodes[i], rep, w))
			rd[nr++] = i;
	for (int v = 0; v < nv; v++)
		ri[v] = -1;
	for (int i = 0, r = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		int last = -1;
		for (int k = 0; k < n->nin; k++) {
			int v = own(g, n->in[k]);
			if (v >= 0 && ri[v] > last)
				last = ri[v];
		}
		if (r < nr && rd[r] == i) {
			link[r] = r > 0 && last == r - 1;
			last = r++;
		}
		for (int k = 0; k < n->nout; k++) {
			int v = own(g, n->out[k]);
			if (v >= 0)
				ri[v] = last;
		}
	}
	return nr;
}

/* The runs of each weight's readers (WHY_NO_SLICES; sig from
 * find_slice_loops, zeros when no slice loop is left): each reader fed by
 * the one before and reading no slice that one did not; the longest first.
 * rep, rd, ri, link: scratch the caller gives (weight_readers). */
static int generated_runs(ir_graph *g, const int64_t *sig, int *rep, int *rd, int *ri, int *link, run **out)
{
	int nv = g->nvalues, nn = g->nnodes, nruns = 0;
	int *count = arena_array(g->A, (size_t)nv + 1, sizeof *count);
	weight_classes(g, rep);
	for (int i = 0; i < nn; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			int v = own(g, n->in[k]), once = v >= 0 && rep[v] >= 0;
			for (int j = 0; j < k && once; j++)
				once = own(g, n->in[j]) < 0 || rep[own(g, n->in[j])] != rep[v];
			if (once && reads_class(g, n, rep, rep[v]))
				count[rep[v]]++;
		}
	}
	run *runs = NULL;
	for (int w = 0; w < nv; w++) {
		if (count[w] < 3)
			continue;
		int nr = weight_readers(g, rep, w, rd, ri, link);
		for (int s = 0, e; s < nr; s = e + 1) {
			const ir_value *ys = out_of(g->nodes[rd[s]]);
			for (e = s; e + 1 < nr && link[e + 1] && out_of(g->nodes[rd[e + 1]]) &&
			     sig[out_of(g->nodes[rd[e + 1]])->id] == sig[out_of(g->nodes[rd[e]])->id]; e++)
				;
			if (!ys)
				continue;
			/* the first reader is a generated step too unless it read a
			 * slice its predecessor did not (the last step of a slice loop) */
			int64_t before = s > 0 && link[s] ? sig[out_of(g->nodes[rd[s - 1]])->id] : 0;
			int own_step = sig[ys->id] == before;
			if (e - s + own_step < 3)
				continue;
			runs = arena_grow(g->A, runs, (size_t)nruns, (size_t)nruns + 1, sizeof *runs);
			runs[nruns++] = (run){w, own_step ? s : s + 1, e, e - s + own_step, rd[own_step ? s : s + 1]};
		}
	}
	if (nruns)
		qsort(runs, (size_t)nruns, sizeof *runs, run_cmp);
	*out = runs;
	return nruns;
}

/* Generated loops (WHY_NO_SLICES), sig from find_slice_loops: each run of
 * generated_runs, a run whose first step lies in the steps of one reported
 * (another weight of the same loop) left out. */
static void find_generated(ir_graph *g, const int64_t *sig)
{
	int nv = g->nvalues, nn = g->nnodes;
	int *ri = arena_array(g->A, (size_t)nv + 1, sizeof *ri);
	int *rd = arena_array(g->A, (size_t)nn + 1, sizeof *rd);
	int *link = arena_array(g->A, (size_t)nn + 1, sizeof *link);
	int *rep = arena_array(g->A, (size_t)nv + 1, sizeof *rep);
	run *runs;
	int nruns = generated_runs(g, sig, rep, rd, ri, link, &runs);
	char *seen = arena_alloc(g->A, (size_t)nn + 1);      /* nodes in the steps of a loop reported */
	for (int k = 0; k < nruns; k++) {
		const run *R = &runs[k];
		weight_readers(g, rep, R->w, rd, ri, link);
		/* another weight of a loop reported: some step of its run is a
		 * node of that loop's steps (the recurrent weight of a step
		 * written with two products, x W^T and h R^T: its first product
		 * reads the initial state, not the loop's first step) */
		int other = 0;
		for (int i = R->first; i <= R->last && !other; i++)
			other = seen[rd[i]];
		if (other)
			continue;
		/* the nodes of the steps: those from the first step's product that
		 * depend on it, up to the last step's (its tail aside) */
		int nodes = 0, per_step = 0;
		for (int i = rd[R->first]; i < nn; i++) {
			int y = own(g, out_of(g->nodes[i]));
			if (y < 0 || ri[y] < R->first || ri[y] > R->last)
				continue;
			seen[i] = 1;
			nodes += ri[y] < R->last;
			per_step += ri[y] == R->first + 1;
		}
		const ir_value *x = fed(g->nodes[rd[R->first]]);
		ir_unrolled u = {.why = g->values[R->w]->dtype == DT_F64 ? WHY_PRECISION : WHY_NO_SLICES, .seq = x && x->name ? x->name : "?", .steps = R->steps,
				 .nodes = nodes + per_step, .per_step = per_step, .step = -1, .vs = -1, .op = -1};
		ir_unrolled_add(g, &u);
	}
}

int reroll_generated_steps(ir_graph *g, int skip, ir_node **marks)
{
	int nv = g->nvalues, nn = g->nnodes;
	int *ri = arena_array(g->A, (size_t)nv + 1, sizeof *ri);
	int *rd = arena_array(g->A, (size_t)nn + 1, sizeof *rd);
	int *link = arena_array(g->A, (size_t)nn + 1, sizeof *link);
	int *rep = arena_array(g->A, (size_t)nv + 1, sizeof *rep);
	int64_t *sig = arena_array(g->A, (size_t)nv + 1, sizeof *sig);
	run *runs;
	int nruns = generated_runs(g, sig, rep, rd, ri, link, &runs);
	/* float32 runs only, the skip-th of them (the longest first) */
	for (int k = 0, n = 0; k < nruns; k++) {
		if (g->values[runs[k].w]->dtype != DT_F32 || n++ < skip)
			continue;
		weight_readers(g, rep, runs[k].w, rd, ri, link);
		for (int i = runs[k].first; i <= runs[k].last; i++)
			marks[i - runs[k].first] = g->nodes[rd[i]];
		return runs[k].steps;
	}
	return 0;
}

void reroll_find_unfound(ir_graph *g)
{
	ir_recount(g);
	int64_t *sig = arena_array(g->A, (size_t)g->nvalues + 1, sizeof *sig);
	find_slice_loops(g, sig);
	find_generated(g, sig);
}

/* The root nodes of each ONNX Loop the loader unrolled (ir_node.unrolled),
 * into cnt[k] for g->unrolled[k]. */
void reroll_count_loop_nodes(const ir_graph *g, int *cnt)
{
	for (int k = 0; k < g->nunrolled; k++)
		cnt[k] = 0;
	for (int i = 0; i < g->nnodes; i++) {
		int k = g->nodes[i]->unrolled - 1;
		if (k >= 0 && k < g->nunrolled)
			cnt[k]++;
	}
}

/* An unrolled ONNX Loop whose iterations were all rolled into recurrences
 * is no fallback: its record goes; one that keeps some reports how many
 * nodes are left.  A Loop whose nodes carry no tag (a graph read back from
 * its dump) stays as recorded.  nloops: the records there before the pass
 * (the ones it added are its own). */
void reroll_settle_loops(ir_graph *g, const int *before, int nloops)
{
	int *after = arena_array(g->A, (size_t)(g->nunrolled ? g->nunrolled : 1), sizeof *after);
	reroll_count_loop_nodes(g, after);
	int w = 0;
	for (int k = 0; k < g->nunrolled; k++) {
		ir_unrolled u = g->unrolled[k];
		if (k < nloops && u.why == WHY_ONNX_LOOP && before[k] > 0) {
			if (after[k] == 0)
				continue;
			u.nodes = after[k];
		}
		g->unrolled[w++] = u;
	}
	g->nunrolled = w;       /* (the tags are not read after this pass) */
}
