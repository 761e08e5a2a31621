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
 *             last-step values (a stacked output and Gather(-1); a view of a
 *             step matrix, such as a state unsqueezed to [1, B, H], made
 *             again after the loop of the matrix's last value) and
 *             values of single steps read after the loop (a stacked output
 *             and one Gather(t) per value read: a model returning its
 *             steps' outputs as a tuple of T graph outputs; T then stays
 *             fixed, with a note);
 *           a loop that reads no per-step slice, each step fed what the
 *           step before computed (a forecaster's future steps, a decoder
 *           that feeds back its output), is found by the products of one
 *           weight over >= 3 steps, each fed by the one before
 *           (reroll_find_generated): those products mark the steps as the
 *           slices would, the recurrence reads a sequence of zeros of its
 *           T steps and its T stays the traced one, the model's own
 *           (attribute generated = 1: no fallback);
 *           the copies are proved isomorphic first: same ops, attributes,
 *           weights and wiring up to the carried values (per-copy constants
 *           compared by content).  The time axis becomes a dimension symbol
 *           when that is sound (the sequence is a graph input read only
 *           through its slices, every coefficient extends to any T, and the
 *           graph after the loop re-infers with a symbolic T, a Reshape's
 *           baked target following it); otherwise T stays fixed and the
 *           recurrence says why (attribute time_note, shown by `cellc
 *           info`).  An axis the export declared dynamic that the Split of
 *           a traced x.unbind() held at the traced length (infer's sizes
 *           link naming the Split) takes its own name again, and the link
 *           goes (attribute time_name while a later loop may still free
 *           it).  Stacked layers, each with a loop of its own: a layer's T
 *           stays fixed while the next layer's per-step reads of its output
 *           pick fixed steps; once the next loop is rolled over that whole
 *           output, the chain of them becomes symbolic together
 *           (fixed_upstream).  States updated by the same
 *           expression over consecutive column blocks of one product (a
 *           velocity per gate) become one state (reroll_states.c).
 *           recognize.c names the cell the step computes (attributes
 *           cell, cell_note).  A graph that is not
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
 *
 * Files (reroll.h: what they share), in the order the jobs run for a loop:
 * reroll_find.c (the slices, their sequences, each node's step and the cut
 * between two steps), reroll_match.c (the template and every copy matched
 * against it), reroll_build.c (the RECURRENCE in the copies' place),
 * reroll_time.c (a symbolic time axis, else the traced steps sliced),
 * reroll_states.c (parallel states merged); after the rounds,
 * reroll_unfound.c (the loops left unrolled, reported).  This file: the
 * helpers they all use and the driver (reroll_once: one loop; pass_reroll:
 * the rounds).
 */
#include "passes.h"
#include "recognize.h"
#include "reroll.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ----------------------------------------------------------- */

int reroll_vid(const rr *R, const ir_value *v)
{
	return v && v->graph == R->g && v->id >= 0 && v->id < R->nv && R->g->values[v->id] == v ? v->id : -1;
}

int reroll_nid(const rr *R, const ir_node *n)
{
	return n && n->graph == R->g && n->id >= 0 && n->id < R->nn && R->g->nodes[n->id] == n ? n->id : -1;
}

int reroll_label_of(const rr *R, const ir_value *v)
{
	int p = v ? reroll_nid(R, v->producer) : -1;
	return p >= 0 ? R->label[p] : LBL_PREFIX;
}

int reroll_has_data(const ir_value *v)
{
	return v && v->data && !v->sym && (v->kind == VAL_CONST || v->kind == VAL_WEIGHT);
}

/* Whether v is all zeros: constant data, or a ConstantOfShape of zero
 * (its default value) whatever its run-time shape. */
int reroll_zero_value(const ir_value *v)
{
	if (reroll_has_data(v)) {
		if (v->dtype != DT_F32 && v->dtype != DT_I64 && v->dtype != DT_I32)
			return 0;
		int64_t n = ir_shape_const_numel(&v->shape);
		for (int64_t i = 0; i < n; i++)
			if (ir_const_num(v, i) != 0.0)
				return 0;
		return n >= 0;
	}
	const ir_node *p = v ? v->producer : NULL;
	if (!p || p->op != OP_CONSTOFSHAPE)
		return 0;
	const ir_attr *a = ir_attr_find(p, "value");
	return !a || !a->t || (reroll_has_data(a->t) && ir_shape_const_numel(&a->t->shape) == 1 &&
			       (a->t->dtype == DT_F32 || a->t->dtype == DT_I64 || a->t->dtype == DT_I32) &&
			       ir_const_num(a->t, 0) == 0.0);
}

/* Same constant contents; approx: f32 within a relative 1e-6 (values the
 * exporter folded against values we fold). */
int reroll_same_const(const ir_value *a, const ir_value *b, int approx)
{
	if (a == b)
		return 1;
	int64_t n = ir_shape_const_numel(&a->shape);
	/* shapes with symbolic sizes (a Reshape to [batch, 1, H] in every
	 * step): equal when every size is */
	if (a->sym && b->sym && a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) && n >= 0) {
		for (int64_t i = 0; i < n; i++)
			if (!ir_dim_eq(a->sym[i], b->sym[i]))
				return 0;
		return 1;
	}
	if (!reroll_has_data(a) || !reroll_has_data(b) || a->dtype != b->dtype || !ir_shape_eq(&a->shape, &b->shape))
		return 0;
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

int reroll_same_attrs(const ir_node *a, const ir_node *b)
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

int reroll_fail(rr *R, ir_unrolled_why why)
{
	if (!R->why)
		R->why = why;
	return 1;
}

int reroll_slice_cmp(const void *a, const void *b)
{
	const reroll_slice *x = a, *y = b;
	if (x->src != y->src)
		return x->src->id - y->src->id;
	if (x->axis != y->axis)
		return x->axis - y->axis;
	return x->t < y->t ? -1 : x->t > y->t;
}

int reroll_matrix(const rr *R, const ir_value *v, ir_shape *m)
{
	if (!v || v->shape.rank < 1)
		return 0;
	const ir_shape *s = &v->shape;
	if (s->rank == 2) {
		*m = *s;
		return 1;
	}
	int a = -1;
	for (int i = 0; i < s->rank && a < 0; i++) {
		if (ir_dim_eq(s->d[i], R->batch))
			a = i;
		else if (!ir_dim_eq(s->d[i], ir_dim_const(1)))
			break;
	}
	ir_dim rows = a >= 0 ? s->d[a] : ir_dim_const(1), cols = ir_dim_const(1);
	if (a < 0 && !ir_dim_eq(R->batch, ir_dim_const(1)))
		return 0;
	for (int i = a + 1; i < s->rank; i++)
		cols = ir_dim_mul(cols, s->d[i]);
	if (!ir_dim_known(cols))
		return 0;
	*m = (ir_shape){.rank = 2, .d = {rows, cols}};
	return 1;
}

/* The first difference found between two steps: node n of step `step` has
 * no counterpart in step `vs` (the first one found is kept). */
void reroll_differ(rr *R, int step, int vs, const ir_node *n)
{
	if (R->diff_found)
		return;
	R->diff_found = 1;
	R->diff_step = step;
	R->diff_vs = vs;
	R->diff_node = n;
}

int reroll_is_graph_output(const rr *R, const ir_value *v)
{
	for (int i = 0; i < R->g->noutputs; i++)
		if (R->g->outputs[i] == v)
			return 1;
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
	const ir_value *x = R->nseq ? R->seq[0].src : NULL;
	for (int k = 0; R->gen && k < R->mark[0]->nin && !x; k++)
		if (R->mark[0]->in[k] && !reroll_has_data(R->mark[0]->in[k]))
			x = R->mark[0]->in[k];      /* what the first step is fed */
	ir_unrolled u = {.why = why, .seq = x && x->name ? x->name : "?", .steps = R->T,
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
	if (!reroll_find_sequences(R) && !reroll_find_generated(R))
		return 0;
	reroll_build_consumers(R);
	build B = {0};
	int failed = reroll_assign_steps(R) || reroll_build_template(R) || reroll_match_all(R) ||
		     reroll_find_stacks(R, &B);
	if (failed && R->gen) {
		/* a generated loop that stays unrolled: reported after the rounds
		 * with the others no round rolls (reroll_find_unfound) */
		*why = R->why;
		return -1;
	}
	if (failed) {
		/* a loop over the slices from the last to the first (reversed(
		 * x.unbind(0))): the same analysis with the slices taken in the
		 * order the trace read them, rolled as a reverse recurrence */
		rr R1 = {.g = g, .D = D, .A = g->A, .nn = g->nnodes, .nv = g->nvalues, .round = round,
			 .reverse = 1};
		reroll_find_sequences(&R1);
		for (int s = 0; s < R1.nseq; s++)
			for (int t = 0, u = R1.T - 1; t < u; t++, u--) {
				ir_node *a = R1.seq[s].anchor[t], *x = R1.seq[s].aux[t];
				R1.seq[s].anchor[t] = R1.seq[s].anchor[u];
				R1.seq[s].aux[t] = R1.seq[s].aux[u];
				R1.seq[s].anchor[u] = a;
				R1.seq[s].aux[u] = x;
			}
		reroll_build_consumers(&R1);
		build B1 = {0};
		if (reroll_assign_steps(&R1) || reroll_build_template(&R1) || reroll_match_all(&R1) || reroll_find_stacks(&R1, &B1)) {
			*why = R->why;
			/* slices read by no step (graph outputs only) are no loop */
			if (R->T > 0 && R->nseq > 0 && !R->no_step && !R1.no_step)
				record_unrolled(R, R->why);
			return -1;
		}
		R0 = R1;
		B = B1;
	}
	const char *time_note = NULL, *time_name = reroll_pinned_time_name(R);
	int sym_ok;
	/* from here on the graph changes: a failure is an internal error */
	ir_node **nodes0 = g->nodes;
	int nnodes0 = g->nnodes;
	ir_unrolled_why err = reroll_build_recurrence(R, &B, &time_note, &sym_ok);
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
	if (time_name)
		ir_attr_set_string(rec, "time_name", time_name);
	if (R->gen)             /* (no sequence: the steps the model runs are the traced ones) */
		time_note = arena_printf(R->A, "T stays %d: a generated sequence, each step fed what the step before "
					 "computed, runs the number of steps it was traced with", R->T);
	else if (sym_ok)
		time_note = reroll_make_time_symbolic(R, rec, F);
	if (time_note)
		ir_attr_set_string(rec, "time_note", time_note);
	if (R->gen)
		ir_attr_set_int(rec, "generated", 1);
	if (time_note && reroll_slice_traced_steps(R, rec))
		return -1;
	if (sym_ok && !R->gen && time_note && F->n < FIXED_MAX)
		F->rec[F->n++] = rec;
	for (int k = 0; k < 4 && reroll_merge_parallel_states(g, rec); k++)
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
	/* a time axis left fixed keeps the link that fixed it; the name of
	 * its symbol was only needed while a later loop could free it */
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_RECURRENCE)
			ir_attr_remove(g->nodes[i], "time_name");
	int found = g->nunrolled;
	reroll_find_unfound(g);
	for (int k = found; k < g->nunrolled && getenv("CELLC_DEBUG_REROLL"); k++)
		fprintf(stderr, "reroll: a loop of %d steps over '%s' not found by its slices: %s\n", g->unrolled[k].steps,
			g->unrolled[k].seq, ir_unrolled_why_text(g->unrolled[k].why));
	if (nloops)
		reroll_settle_loops(g, before, nloops);
	return D->nerrors - errs0;
}
