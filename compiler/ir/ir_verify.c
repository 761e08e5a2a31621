/* ir_verify.c: internal consistency of the IR, checked after every pass in
 * test builds (CELLC_VERIFY=1, `cellc -V`).
 *
 * What it checks, recursively into recurrence bodies:
 *   - every node input is defined before the node: a graph input, weight or
 *     constant, an earlier node's output, or a value of an enclosing graph
 *     defined before the recurrence that holds the body (so no cycles);
 *   - every value is produced once, by a node of the graph that owns it, and
 *     value->producer agrees; names are unique in the compilation;
 *   - input and output counts are within the op's ops.def arity, required
 *     inputs are present; only RECURRENCE nodes have bodies;
 *   - constants and weights have data (or symbolic elements) and constant
 *     shapes; graph outputs are defined;
 *   - after any pass but "load" (and not inside the rounds of the resolving
 *     stages, ir_verify_structure): every value in use has a supported
 *     dtype and a known shape, and one that stands for an ONNX FLOAT16 or
 *     BFLOAT16 tensor (ir_value.narrow: f16 or bf16) is f32;
 *   - RECURRENCE: attribute counts match its inputs, outputs and body;
 *     only a recurrence has a source (ir_node.rec_source);
 *   - pass_grad's links (ir_value.grad_of, recomputes): each names a value
 *     that a graph of the compilation defines, not the value itself; what
 *     a value recomputes is a node's result in another recurrence body;
 *   - value roles (ir_value.role, ir.h) stand where they may
 *     (ir_role_fits): step_coef on an f32 sequence input of a recurrence
 *     body, nag_schedule on a value a node of a body makes, trace_steps on
 *     the result of a Slice (results of the graph's nodes, not those of
 *     nodes a pass removed);
 *   - weights = "bf16" or "int8" (pass_precision) only on a product by an
 *     f32 model weight whose every element is a bfloat16 value (bf16) or
 *     whose every output is its scale times integers in [-127, 127] (int8);
 *   - after "branch", "schedule" and "plan", guards (pass_branch.c;
 *     check_guards): on root nodes of inference
 *     builds only, naming a bool value of one element that an unguarded
 *     node before them computes; no graph output made under a guard; a
 *     guarded result read only by nodes guarded alike or as the operand
 *     its If's select takes on that branch; fusion groups guarded alike;
 *   - after "schedule" (pass_schedule.c): every recurrence of the root graph
 *     has `threads` and one `x_proj` per sequence input, with known values;
 *     an input projection moved into the steps is a root Gemm marked
 *     per_step, with a constant K of at most 16 (1 when inline), read by
 *     that recurrence alone or by several that all compute it inline, and
 *     by no other node; no threads with per-row time, no column split
 *     with sequence_lens; `pack` only on body products of fixed-size model
 *     weights in inference builds, `panels` only on body products of
 *     fixed-size model weights, `by_rows` only on body Concats of
 *     threaded recurrences; `in_place` only on column Concats of distinct
 *     values the body makes (products, fused loops) that are no body
 *     output, `out_direct` only naming outputs the body makes once and
 *     the root reads, neither with a column split or per-row time;
 *   - after "plan" (pass_plan.c): an input projection computed inside the
 *     loops that read it has no slot, one computed a step at a time has
 *     one; a step scalar of a recurrence has a slot exactly when a node
 *     reads its memory (fuse_needs_buffer); a value written in place (an
 *     in-place Concat's input, an out_direct output) has no slot;
 *   - a training build (ir_train): its loss is known, its parameters are
 *     distinct f32 weights of the root; once graded, its data input,
 *     logits, loss and forward outputs are in range and its first backward
 *     node is a node of the root;
 *   - derived dimension symbols (ir.h) name a free symbol as their base and
 *     a nonzero offset of at most INT32_MAX in magnitude;
 *   - data-dependent lengths (ir_value.data_dep): after "infer", exactly the
 *     outputs ir_node_dd_output names have one, on an axis of their rank,
 *     in the root graph only, and only nodes that keep it row by row
 *     (ir_dd_passes) read such a value;
 *   - a recurrence's condition (role condition): one [1, 1] state at most,
 *     forward, serial, without lengths, its stacked outputs on time axis 0.
 * A failure is our bug, not the user's: it prints every problem found (and
 * the pass that left them) and aborts.
 */
#include "infer.h"
#include "ode.h"
#include "passes.h"
#include "util.h"

#include <cellrt.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct vctx {
	const char *pass;
	int shapes;             /* check dtypes and shapes (after "infer") */
	int nerr;
} vctx;

static void bad(vctx *c, const ir_graph *g, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bad(vctx *c, const ir_graph *g, const char *fmt, ...)
{
	va_list ap;
	if (++c->nerr > 20)
		return;
	fprintf(stderr, "cellc: internal error: IR inconsistent after pass '%s' (graph '%s'): ",
		c->pass, g->name ? g->name : "?");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *nname(const ir_node *n) { return n->name ? n->name : "?"; }

/* ---- unique names ----------------------------------------------------------- */

typedef struct strset {
	const char **slot;
	size_t cap, n;
} strset;

static size_t shash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

/* 1 if s was not there yet. */
static int strset_add(strset *S, const char *s)
{
	if (2 * (S->n + 1) > S->cap) {
		strset T = {calloc(S->cap ? S->cap * 2 : 256, sizeof *T.slot), S->cap ? S->cap * 2 : 256, 0};
		ASSERT(T.slot);
		for (size_t i = 0; i < S->cap; i++)
			if (S->slot[i])
				strset_add(&T, S->slot[i]);
		free(S->slot);
		*S = T;
	}
	size_t i = shash(s) & (S->cap - 1);
	for (; S->slot[i]; i = (i + 1) & (S->cap - 1))
		if (strcmp(S->slot[i], s) == 0)
			return 0;
	S->slot[i] = s;
	S->n++;
	return 1;
}

static void check_names(vctx *c, const ir_graph *g, strset *S)
{
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		if (!v->name)
			bad(c, g, "value #%d has no name", i);
		else if (!strset_add(S, v->name))
			bad(c, g, "two values are named '%s'", v->name);
	}
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			check_names(c, g->nodes[i]->body, S);
}

/* ---- values ----------------------------------------------------------------- */

static void check_value(vctx *c, const ir_graph *g, const ir_value *v, const char *role)
{
	if (v->seq != IR_TENSOR) {
		/* a sequence or optional (lower_seq.c): its tensors are the values */
		if (v->resolved && v->nelem > 0 && !v->elem)
			bad(c, g, "%s '%s' is a resolved %s without elements", role, v->name,
			    v->seq == IR_OPT ? "optional" : "sequence");
		for (int i = 0; v->resolved && v->elem && i < v->nelem; i++)
			check_value(c, g, v->elem[i], role);
		return;
	}
	if (v->kind == VAL_CONST || v->kind == VAL_WEIGHT) {
		if (ir_shape_const_numel(&v->shape) < 0)
			bad(c, g, "%s '%s' is a constant without a constant shape", role, v->name);
		if (!v->data && !(v->kind == VAL_CONST && v->sym && (v->dtype == DT_I64 || v->dtype == DT_I32)))
			bad(c, g, "%s '%s' is a constant without data", role, v->name);
	}
	if (v->narrow && v->narrow != DT_F16 && v->narrow != DT_BF16)
		bad(c, g, "%s '%s' stands for dtype %d (narrow), neither f16 nor bf16", role, v->name, (int)v->narrow);
	if (!c->shapes)
		return;
	if (v->narrow && v->dtype != DT_F32)
		bad(c, g, "%s '%s' is %s but stands for a %s tensor (narrow), which only f32 values do", role,
		    v->name, ir_dtype_name(v->dtype), ir_dtype_name(v->narrow));
	if (!infer_dtype_ok(v->dtype))
		bad(c, g, "%s '%s' has no supported dtype (%s)", role, v->name, ir_dtype_name(v->dtype));
	if (v->shape.rank < 0 || v->shape.rank > IR_MAX_RANK) {
		bad(c, g, "%s '%s' has no shape", role, v->name);
		return;
	}
	for (int i = 0; i < v->shape.rank; i++)
		if (v->shape.d[i].k < 0)
			bad(c, g, "%s '%s' has an unknown dimension %d", role, v->name, i);
}

/* Where a value's role (ir.h, ir_role) may stand (that a step_coef input is
 * a sequence input: check_recurrence).  Checked on the values the graph
 * holds: its inputs, weights and constants, and its nodes' results (a
 * result whose node a pass removed keeps its stale role unseen). */
static void check_role(vctx *c, const ir_graph *g, const ir_value *v)
{
	if ((unsigned)v->role >= IR_ROLE_COUNT)
		bad(c, g, "value '%s' has an invalid role %d", v->name, (int)v->role);
	else if (!ir_role_fits(v->role, v->kind, v->dtype, v->producer ? (int)v->producer->op : -1,
			       g->parent != NULL))
		bad(c, g, "value '%s' has the role %s, which only %s has", v->name, ir_role_keyword(v->role),
		    ir_role_where(v->role));
}

/* ---- recurrence contract ------------------------------------------------------ */

static int64_t need_int(vctx *c, const ir_graph *g, const ir_node *n, const char *name)
{
	ir_attr *a = ir_attr_find(n, name);
	if (!a || a->kind != ATTR_INT || a->i < 0 || a->i > 1024) {
		bad(c, g, "recurrence '%s' lacks a valid int attribute '%s'", nname(n), name);
		return -1;
	}
	return a->i;
}

static void check_recurrence(vctx *c, const ir_graph *g, const ir_node *n)
{
	int64_t ns = need_int(c, g, n, "n_seq"), nst = need_int(c, g, n, "n_state");
	int64_t no = need_int(c, g, n, "n_out");
	int64_t lens = ir_attr_int(n, "has_lens", 0) != 0;
	if (ns < 0 || nst < 0 || no < 0)
		return;
	if (n->nin != ns + nst + lens)
		bad(c, g, "recurrence '%s' has %d inputs; n_seq %lld + n_state %lld + has_lens %lld",
		    nname(n), n->nin, (long long)ns, (long long)nst, (long long)lens);
	if (n->nout != nst + no)
		bad(c, g, "recurrence '%s' has %d outputs; n_state %lld + n_out %lld", nname(n), n->nout,
		    (long long)nst, (long long)no);
	for (int k = 0; k < ns && k < n->nin; k++)
		if (!n->in[k])
			bad(c, g, "recurrence '%s' lacks sequence input %d", nname(n), k);
	if (lens && n->nin > 0 && !n->in[n->nin - 1])
		bad(c, g, "recurrence '%s' has has_lens=1 but no lens input", nname(n));
	/* pass_grad's records: how many outputs are saved for a backward (the
	 * last n_saved), and the width per batch row that a backward's minimum
	 * cut chose to save */
	ir_attr *nsv = ir_attr_find(n, "n_saved"), *sw = ir_attr_find(n, "save_width");
	if (nsv && (nsv->kind != ATTR_INT || nsv->i < 0 || nsv->i > no))
		bad(c, g, "recurrence '%s': n_saved must be an int from 0 to n_out %lld", nname(n), (long long)no);
	if (sw && (sw->kind != ATTR_INT || sw->i < 0))
		bad(c, g, "recurrence '%s': save_width must be a non-negative int", nname(n));
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	if (ns > 0 && (!sa || sa->kind != ATTR_INTS || sa->n != ns))
		bad(c, g, "recurrence '%s': 'seq_axis' must list %lld axes", nname(n), (long long)ns);
	if (no > 0 && (!oa || oa->kind != ATTR_INTS || oa->n != no))
		bad(c, g, "recurrence '%s': 'out_axis' must list %lld axes", nname(n), (long long)no);
	const ir_graph *b = n->body;
	if (!b) {
		bad(c, g, "recurrence '%s' has no body", nname(n));
		return;
	}
	if (b->parent != g)
		bad(c, g, "body of recurrence '%s' does not point back to its graph", nname(n));
	int64_t steps = ir_attr_int(n, "has_step", 0);
	if (steps < 0 || steps > 2)
		bad(c, g, "recurrence '%s': has_step must be 0, 1 or 2", nname(n));
	if (b->ninputs != ns + nst + steps)
		bad(c, g, "body of recurrence '%s' has %d inputs; n_seq + n_state + has_step = %lld",
		    nname(n), b->ninputs, (long long)(ns + nst + steps));
	for (int64_t k = ns + nst; k < b->ninputs; k++)
		if (b->inputs[k] && (b->inputs[k]->shape.rank != 0 || b->inputs[k]->dtype != DT_F32))
			bad(c, g, "body of recurrence '%s': step input %lld must be an f32 scalar",
			    nname(n), (long long)k);
	if (b->noutputs != nst + no)
		bad(c, g, "body of recurrence '%s' has %d outputs; n_state + n_out = %lld", nname(n),
		    b->noutputs, (long long)(nst + no));
	/* a condition (ir_rec_cond_state): one [1, 1] state, forward, no
	 * lengths, the stacked outputs on time axis 0 */
	int ncond = 0;
	for (int64_t k = ns; k < ns + nst && k < b->ninputs; k++) {
		const ir_value *v = b->inputs[k];
		if (!v || v->role != IR_ROLE_CONDITION)
			continue;
		ncond++;
		if (v->shape.rank != 2 || !ir_dim_eq(v->shape.d[0], ir_dim_const(1)) ||
		    !ir_dim_eq(v->shape.d[1], ir_dim_const(1)))
			bad(c, g, "recurrence '%s': its condition state '%s' is not [1, 1]", nname(n), v->name);
	}
	if (ncond > 1)
		bad(c, g, "recurrence '%s' has %d condition states; one ends a run", nname(n), ncond);
	if (ncond && strcmp(ir_attr_string(n, "threads", "serial"), "serial") != 0)
		bad(c, g, "recurrence '%s' has a condition and threads \"%s\" (one condition for every row: serial)",
		    nname(n), ir_attr_string(n, "threads", "serial"));
	if (ncond && (lens || ir_attr_int(n, "reverse", 0)))
		bad(c, g, "recurrence '%s' has a condition and %s", nname(n), lens ? "sequence lengths" : "runs reversed");
	for (int k = 0; ncond && oa && k < oa->n; k++)
		if (oa->ints[k] != 0)
			bad(c, g, "recurrence '%s' has a condition and stacked output %d on time axis %lld (the steps "
			    "run are its first rows: axis 0)", nname(n), k, (long long)oa->ints[k]);
	for (int k = 0; k < b->ninputs; k++)
		if (!b->inputs[k] || b->inputs[k]->kind != VAL_STEP)
			bad(c, g, "body input %d of recurrence '%s' is not a VAL_STEP value", k, nname(n));
		else if ((b->inputs[k]->role == IR_ROLE_STEP_COEF || b->inputs[k]->role == IR_ROLE_PROJECTION) &&
			 k >= ns)
			bad(c, g, "body input %d of recurrence '%s' has the role %s but is no sequence input", k,
			    nname(n), ir_role_keyword(b->inputs[k]->role));
}

/* ---- training builds ------------------------------------------------------------ */

static void check_train(vctx *c, const ir_graph *g)
{
	const ir_train *t = g->train;
	if (t->loss < 0 || t->loss >= TRAIN_NLOSSES)
		bad(c, g, "training build with loss %d", t->loss);
	for (int i = 0; i < t->nparams; i++) {
		const ir_value *v = t->params[i];
		if (!v || v->kind != VAL_WEIGHT || v->graph != g || v->dtype != DT_F32)
			bad(c, g, "parameter %d is not an f32 weight of the root graph", i);
		else if (v->frozen)
			bad(c, g, "parameter %d, weight '%s', is frozen (held fixed)", i, v->name);
		for (int j = 0; j < i; j++)
			if (v && t->params[j] == v)
				bad(c, g, "weight '%s' is parameters %d and %d", v->name, j, i);
	}
	if (!t->graded)
		return;
	const ir_value *w = ir_train_unlisted(t, g);
	if (w)
		bad(c, g, "the training build reads weight '%s', which is not one of its parameters (a "
		    "weight derived at compile time would get no gradient)", w->name);
	int found = 0;
	for (int i = 0; i < g->nnodes; i++)
		found |= g->nodes[i] == t->bwd_start;
	if (!found)
		bad(c, g, "the training build's first backward node is not a node of the root graph");
	if (t->x_input < 0 || t->x_input >= g->ninputs || t->logits_output < 0 ||
	    t->logits_output >= t->nfwd_outputs || t->nfwd_outputs > t->loss_output_index ||
	    t->loss_output_index >= g->noutputs || t->batch_axis + t->time_axis != 1 || t->batch_axis < 0 ||
	    t->time_axis < 0)
		bad(c, g, "the training build's x_input %d, logits_output %d, forward_outputs %d, "
		    "loss_output_index %d or axes %d, %d do not fit %d inputs and %d outputs", t->x_input,
		    t->logits_output, t->nfwd_outputs, t->loss_output_index, t->batch_axis, t->time_axis,
		    g->ninputs, g->noutputs);
}

/* ---- schedule ----------------------------------------------------------------- */

static int one_of(const char *s, const char *const *set)
{
	for (; s && *set; set++)
		if (!strcmp(s, *set))
			return 1;
	return 0;
}

static void check_body_schedule(vctx *c, const ir_graph *g, const ir_node *rn, int threaded)
{
	const ir_graph *b = rn->body;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *m = b->nodes[i];
		if (ir_attr_find(m, "pack")) {
			const ir_value *W = m->op == OP_GEMM && m->nin > 1 ? m->in[1] : NULL;
			if (!W || W->kind != VAL_WEIGHT || W->shape.rank != 2 || !ir_dim_is_const(W->shape.d[0]) ||
			    !ir_dim_is_const(W->shape.d[1]) || g->train)
				bad(c, b, "node '%s' (%s) of recurrence '%s' is marked pack, but packs no fixed "
				    "model weight of an inference build", nname(m), ir_op_name(m->op), nname(rn));
		}
		if (ir_attr_find(m, "panels")) {
			const ir_value *W = m->op == OP_GEMM && m->nin > 1 ? m->in[1] : NULL;
			if (!W || W->kind != VAL_WEIGHT || W->graph == b || W->shape.rank != 2 ||
			    !ir_dim_is_const(W->shape.d[0]) || !ir_dim_is_const(W->shape.d[1]) ||
			    ir_attr_int(m, "transA", 0))
				bad(c, b, "node '%s' (%s) of recurrence '%s' is marked panels, but multiplies by "
				    "no fixed-size model weight", nname(m), ir_op_name(m->op), nname(rn));
		}
		if (ir_attr_find(m, "by_rows") && (m->op != OP_CONCAT || !threaded))
			bad(c, b, "node '%s' (%s) of recurrence '%s' is marked by_rows outside a threaded "
			    "recurrence's Concat", nname(m), ir_op_name(m->op), nname(rn));
		if (ir_attr_find(m, "per_step") || ir_attr_find(m, "threads") || ir_attr_find(m, "x_proj") ||
		    ir_attr_find(m, "out_direct"))
			bad(c, b, "node '%s' (%s) of a recurrence body has a root-graph schedule attribute",
			    nname(m), ir_op_name(m->op));
	}
}

/* A body value its producer may write into other storage (in_place,
 * out_direct): made in body b by a product or a fused loop, neither a
 * view nor viewed. */
static int made_in_body(const ir_graph *b, const ir_value *v)
{
	const ir_node *p = v ? v->producer : NULL;
	return v && v->kind == VAL_TEMP && p && p->graph == b && ir_storage(v) == v && !ir_has_views(v) &&
	       (p->op == OP_GEMM || (ir_is_fused_elem(p) && !ir_is_step_scalar(p)));
}

static int output_count(const ir_graph *b, const ir_value *v)
{
	int cnt = 0;
	for (int k = 0; k < b->noutputs; k++)
		cnt += b->outputs[k] == v;
	return cnt;
}

/* in_place Concats and out_direct outputs of recurrence rn: the values
 * written into other storage are made in the body, belong to one place
 * only, and the threads never share a step's columns (cols) nor does
 * each row have its own time (per_row). */
static void check_in_place(vctx *c, const ir_node *rn, int cols, int per_row)
{
	const ir_graph *b = rn->body;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *m = b->nodes[i];
		if (!ir_attr_find(m, "in_place"))
			continue;
		int64_t axis = ir_attr_int(m, "axis", 0);
		int ok = m->op == OP_CONCAT && !cols && m->nout == 1 && m->out[0] &&
			 m->out[0]->shape.rank == 2 && (axis == 1 || axis == -1);
		for (int k = 0; ok && k < m->nin; k++) {
			int64_t col;
			ok = made_in_body(b, m->in[k]) && ir_dim_is_const(ir_cols_of(m->in[k])) &&
			     !output_count(b, m->in[k]) && ir_concat_in_place(m->in[k], &col) == m;
			for (int j = 0; ok && j < k; j++)
				ok = m->in[j] != m->in[k];
		}
		if (!ok)
			bad(c, b, "node '%s' (%s) of recurrence '%s' is marked in_place, but is no column Concat "
			    "of distinct values its body makes (products, fused loops) that nothing else "
			    "holds", nname(m), ir_op_name(m->op), nname(rn));
	}
	ir_attr *a = ir_attr_find(rn, "out_direct");
	if (!a)
		return;
	int64_t ns = ir_attr_int(rn, "n_state", 0), no = ir_attr_int(rn, "n_out", 0);
	for (int i = 0; i < (a->kind == ATTR_INTS ? a->n : 1); i++) {
		int64_t k = a->kind == ATTR_INTS ? a->ints[i] : -1, o = ns + k;
		const ir_value *v = k >= 0 && k < no && o < b->noutputs ? b->outputs[o] : NULL;
		const ir_node *p = v ? v->producer : NULL;
		int ok = v && !cols && !per_row && o < rn->nout && rn->out[o] && output_count(b, v) == 1 &&
			 v->shape.rank == 2 && ir_out_direct(v) == k &&
			 (made_in_body(b, v) || (p && p->graph == b && ir_attr_int(p, "in_place", 0)));
		if (!ok)
			bad(c, b, "recurrence '%s': out_direct names output %lld, which is no output its body "
			    "makes once (product, fused loop, in-place Concat) for the root to read, or the "
			    "threads share columns, or rows have their own time", nname(rn), (long long)k);
	}
}

/* store_i8 (pass_schedule): the readers of a weight stored packed in int8,
 * its only copy: each a product with store_i8 reading it as its B with
 * transB tb. */
static void store_i8_readers(vctx *c, const ir_graph *g, const ir_value *W, int tb)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *m = g->nodes[i];
		for (int k = 0; k < m->nin; k++)
			if (m->in[k] == W && !(m->op == OP_GEMM && k == 1 && ir_attr_int(m, "store_i8", 0) &&
					       (ir_attr_int(m, "transB", 0) != 0) == tb))
				bad(c, g, "weight '%s' is stored in int8 (store_i8) but node '%s' (%s) reads it otherwise",
				    W->name, nname(m), ir_op_name(m->op));
		if (m->body)
			store_i8_readers(c, m->body, W, tb);
	}
}

/* store_i8 only on int8 products (not transA) of a rank-2 model weight,
 * and then on all its readers. */
static void check_store_i8(vctx *c, const ir_graph *root, const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *m = g->nodes[i];
		if (ir_attr_int(m, "store_i8", 0)) {
			const char *mode = ir_attr_string(m, "weights", NULL);
			const ir_value *W = m->op == OP_GEMM && m->nin > 1 ? m->in[1] : NULL;
			if (!W || !mode || strcmp(mode, "int8") || ir_attr_int(m, "transA", 0) || W->kind != VAL_WEIGHT ||
			    W->shape.rank != 2)
				bad(c, g, "node '%s' (%s) has store_i8 but is no int8 product of a model weight", nname(m),
				    ir_op_name(m->op));
			else
				store_i8_readers(c, root, W, ir_attr_int(m, "transB", 0) != 0);
		}
		if (m->body)
			check_store_i8(c, root, m->body);
	}
}

static void check_schedule(vctx *c, const ir_graph *g)
{
	static const char *const threads[] = {"serial", "rows", "rows_cols", NULL};
	static const char *const where[] = {"before", "step", "inline", NULL};
	int *readers = calloc((size_t)g->nnodes + 1, sizeof *readers);
	ASSERT(readers);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (ir_attr_find(n, "pack") || ir_attr_find(n, "panels") || ir_attr_find(n, "by_rows") ||
		    ir_attr_find(n, "in_place"))
			bad(c, g, "root node '%s' (%s) has a body-node schedule attribute", nname(n), ir_op_name(n->op));
		if (n->op != OP_RECURRENCE) {
			if (ir_attr_find(n, "threads") || ir_attr_find(n, "x_proj") || ir_attr_find(n, "out_direct"))
				bad(c, g, "node '%s' (%s) has a recurrence's schedule attributes", nname(n),
				    ir_op_name(n->op));
			if (ir_attr_find(n, "per_step") && n->op != OP_GEMM)
				bad(c, g, "node '%s' (%s) is marked per_step but is no product", nname(n),
				    ir_op_name(n->op));
			continue;
		}
		if (!n->body)
			continue;
		const char *th = ir_attr_string(n, "threads", NULL);
		ir_attr *xp = ir_attr_find(n, "x_proj");
		int64_t ns = ir_attr_int(n, "n_seq", 0);
		int lens = ir_attr_int(n, "has_lens", 0) != 0, rev = ir_attr_int(n, "reverse", 0) != 0;
		if (!one_of(th, threads))
			bad(c, g, "recurrence '%s' lacks a valid 'threads' (serial, rows or rows_cols)", nname(n));
		else if ((strcmp(th, "serial") && lens && rev) || (!strcmp(th, "rows_cols") && lens))
			bad(c, g, "recurrence '%s' has threads = \"%s\" with sequence_lens%s", nname(n), th,
			    rev ? " in reverse (each row its own time step)" : "");
		if (!xp || xp->kind != ATTR_STRINGS || xp->n != ns) {
			bad(c, g, "recurrence '%s' lacks 'x_proj' (one entry per sequence input)", nname(n));
			continue;
		}
		for (int k = 0; k < xp->n && k < n->nin; k++) {
			if (!one_of(xp->strings[k], where)) {
				bad(c, g, "recurrence '%s': x_proj[%d] = \"%s\" is none of before, step, inline",
				    nname(n), k, xp->strings[k] ? xp->strings[k] : "");
				continue;
			}
			if (!strcmp(xp->strings[k], "before"))
				continue;
			const ir_value *y = ir_storage(n->in[k]);
			const ir_node *gm = y ? y->producer : NULL;
			const ir_value *A = gm && gm->op == OP_GEMM ? gm->in[0] : NULL;
			int64_t K = A && A->shape.rank == 2 && ir_dim_is_const(A->shape.d[1]) ? A->shape.d[1].k : -1;
			if (!gm || gm->op != OP_GEMM || gm->graph != g || !ir_attr_int(gm, "per_step", 0) || K < 1 ||
			    K > 16 || (!strcmp(xp->strings[k], "inline") && K != 1) || (lens && rev)) {
				bad(c, g, "recurrence '%s': x_proj[%d] = \"%s\" but its input is not a per_step "
				    "product of a short input", nname(n), k, xp->strings[k]);
				continue;
			}
			for (int j = 0; j < g->nnodes; j++)
				if (g->nodes[j] == gm)
					readers[j] += !strcmp(xp->strings[k], "inline") ? 1 : 1 << 16;
		}
		check_body_schedule(c, g, n, th && strcmp(th, "serial") != 0);
		check_in_place(c, n, th && !strcmp(th, "rows_cols"), lens && rev);
	}
	/* readers[i]: inline readers + (1 << 16) x readers a step at a time */
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *gm = g->nodes[i];
		if (!ir_attr_int(gm, "per_step", 0))
			continue;
		int inl = readers[i] & 0xffff, step = readers[i] >> 16;
		if (!(inl + step == 1 || (step == 0 && inl > 1)))
			bad(c, g, "product '%s' is marked per_step but %d recurrence inputs compute it a step at "
			    "a time and %d inside their loops (one, or several all inside their loops, wanted)",
			    nname(gm), step, inl);
		/* nothing else reads it: it prints no code and has no storage of its own */
		for (int j = 0; j < g->nnodes; j++) {
			const ir_node *m = g->nodes[j];
			ir_attr *xp = m->op == OP_RECURRENCE ? ir_attr_find(m, "x_proj") : NULL;
			for (int k = 0; k < m->nin; k++) {
				int view = m->nout == 1 && m->out[0] && ir_storage(m->out[0]) == gm->out[0];
				int computes = xp && xp->kind == ATTR_STRINGS && k < xp->n && xp->strings[k] &&
					       strcmp(xp->strings[k], "before") != 0;
				if (m->in[k] && ir_storage(m->in[k]) == gm->out[0] && m != gm && !view && !computes)
					bad(c, g, "node '%s' (%s) reads product '%s', which is marked per_step (its "
					    "recurrences compute it in their steps)", nname(m), ir_op_name(m->op),
					    nname(gm));
			}
		}
	}
	free(readers);
}

/* After plan: an input projection computed inside the loops has no slot,
 * one computed a step at a time has one (of one step's rows); a step scalar
 * has one exactly when a node reads its memory. */
static void check_step_storage(vctx *c, const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		ir_dim rows;
		int st = n->op == OP_GEMM && n->nout == 1 && n->out[0] ? ir_step_storage(n->out[0], &rows) : -1;
		if (st >= 0 && (n->out[0]->slot >= 0) != st)
			bad(c, g, "input projection '%s' is computed %s but %s a slot", nname(n),
			    st ? "a step at a time" : "inside the loops that read it", st ? "has no" : "has");
		for (int j = 0; n->body && j < n->body->nnodes; j++) {
			const ir_node *m = n->body->nodes[j];
			int64_t col;
			for (int k = 0; k < m->nout; k++)
				if (m->out[k] && m->out[k]->slot >= 0 &&
				    (ir_out_direct(m->out[k]) >= 0 || ir_concat_in_place(m->out[k], &col)))
					bad(c, n->body, "value '%s' of recurrence '%s' is written in place but has "
					    "a slot", m->out[k]->name, nname(n));
			if (ir_is_step_scalar(m) && (m->out[0]->slot >= 0) != fuse_needs_buffer(m->out[0]))
				bad(c, n->body, "step scalar '%s' of recurrence '%s' %s a slot, but %s reads its "
				    "memory", nname(m), nname(n), m->out[0]->slot >= 0 ? "has" : "has no",
				    m->out[0]->slot >= 0 ? "no node" : "a node");
		}
	}
}

/* weights = "bf16" or "int8" (pass_precision): on a product whose B
 * operand is an f32 model weight holding only values of that form
 * (bfloat16 values; for int8, each output's scale times integers in
 * [-127, 127]). */
static void check_precision(vctx *c, const ir_graph *g, const ir_node *n)
{
	const ir_attr *a = ir_attr_find(n, "weights");
	int bf = a->kind == ATTR_STRING && !strcmp(a->s, "bf16"), i8 = a->kind == ATTR_STRING && !strcmp(a->s, "int8");
	if ((!bf && !i8) || !precision_operand(n)) {
		bad(c, g, "node '%s' (%s) has weights = ..., but is no product by an f32 model weight marked "
		    "\"bf16\" or \"int8\"", nname(n), ir_op_name(n->op));
		return;
	}
	const ir_value *W = n->in[1];
	const float *d = W->data;
	if (i8) {
		int64_t nout = W->shape.d[ir_attr_int(n, "transB", 0) ? 0 : 1].k;
		float s;
		for (int64_t j = 0; j < nout; j++)
			if (!precision_int8_row(n, j, &s)) {
				bad(c, g, "node '%s' (%s) is marked weights = \"int8\", but output %lld of '%s' is not "
				    "its scale %.9g times integers in [-127, 127]", nname(n), ir_op_name(n->op),
				    (long long)j, W->name, (double)s);
				return;
			}
		return;
	}
	for (int64_t k = 0; k < ir_shape_const_numel(&W->shape); k++)
		if (memcmp(&d[k], &(float){rt_bf16_to_f32(rt_f32_to_bf16_nearest(d[k]))}, sizeof *d) != 0) {
			bad(c, g, "node '%s' (%s) is marked weights = \"bf16\", but element %lld of '%s' (%.9g) is "
			    "no bfloat16 value", nname(n), ir_op_name(n->op), (long long)k, W->name, (double)d[k]);
			return;
		}
}

/* ---- graphs ------------------------------------------------------------------- */

static void check_graph(vctx *c, const ir_graph *g, infer_set *def);

/* Guards (pass_branch.c): only on nodes of the root graph of an inference
 * build; the condition a bool of one element of the root, made by a node
 * before that always runs (or a graph input); guard_when 0 or 1; no graph
 * output made under a guard; every reader of a guarded result guarded
 * alike or that branch's select (ir_guard_read_ok); a fusion group guarded
 * alike. */
static void check_guards(vctx *c, const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (n->body)
			for (int j = 0; j < n->body->nnodes; j++)
				if (ir_attr_find(n->body->nodes[j], "guard") || ir_attr_find(n->body->nodes[j], "guard_when"))
					bad(c, g, "node '%s' of a recurrence body has a guard", nname(n->body->nodes[j]));
		const ir_attr *a = ir_attr_find(n, "guard");
		if (!a) {
			if (ir_attr_find(n, "guard_when"))
				bad(c, g, "node '%s' has guard_when but no guard", nname(n));
			continue;
		}
		int when;
		const ir_value *cv = a->kind == ATTR_STRING ? ir_guard(n, &when) : NULL;
		int64_t w = ir_attr_int(n, "guard_when", -1);
		if (!cv || cv->graph != g || cv->dtype != DT_BOOL || cv->shape.rank < 0 ||
		    ir_shape_const_numel(&cv->shape) != 1 || (w != 0 && w != 1) || g->parent || g->train) {
			bad(c, g, "node '%s': guard names no bool value of one element of the root graph, its "
				  "guard_when is not 0 or 1, or it is in a body or a training build", nname(n));
			continue;
		}
		int at = -1;
		for (int j = 0; cv->producer && j < g->nnodes; j++)
			if (g->nodes[j] == cv->producer)
				at = j;
		if (cv->producer && (at < 0 || at >= i || ir_guard(cv->producer, NULL)))
			bad(c, g, "node '%s' runs under '%s', which no unguarded node before it computes", nname(n),
			    cv->name);
		for (int k = 0; k < n->nout; k++) {
			const ir_value *v = n->out[k];
			if (!v)
				continue;
			for (int q = 0; q < g->noutputs; q++)
				if (g->outputs[q] == v)
					bad(c, g, "node '%s' is guarded but makes graph output '%s'", nname(n), v->name);
			for (int j = 0; j < g->nnodes; j++)
				if (j != i && ir_node_reads(g->nodes[j], v) && !ir_guard_read_ok(g->nodes[j], v, cv, when))
					bad(c, g, "node '%s' reads '%s', which node '%s' makes only when '%s' is %s",
					    nname(g->nodes[j]), v->name, nname(n), cv->name, when ? "true" : "false");
		}
		for (int j = 0; n->group && j < g->nnodes; j++) {
			int w2;
			if (g->nodes[j]->group == n->group && (ir_guard(g->nodes[j], &w2) != cv || w2 != when))
				bad(c, g, "fusion group %d is guarded unevenly (nodes '%s' and '%s')", n->group, nname(n),
				    nname(g->nodes[j]));
		}
	}
}

/* The values g lists: owned by g, made by a node of g; those no node makes
 * (inputs, weights, constants) are defined from the start. */
static void check_values(vctx *c, const ir_graph *g, infer_set *def)
{
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		if (v->graph != g)
			bad(c, g, "value '%s' is listed in a graph that does not own it", v->name);
		/* a resolved sequence or optional that no node makes (SequenceEmpty
		 * resolved, before the Loop that takes it is expanded) is its
		 * elements, defined where they are made */
		if (v->kind != VAL_TEMP || (!v->producer && v->seq != IR_TENSOR && v->resolved))
			infer_set_add(def, v);
		if (v->kind == VAL_TEMP && v->producer && v->producer->graph != g)
			bad(c, g, "value '%s' is produced by node '%s' of another graph", v->name,
			    nname(v->producer));
		if (v->kind != VAL_TEMP)        /* a node's result: below, when a node makes it */
			check_role(c, g, v);
	}
	for (int i = 0; i < g->ninputs; i++)
		if (!g->inputs[i] || g->inputs[i]->graph != g)
			bad(c, g, "graph input %d is missing or not owned by the graph", i);
}

/* The node itself: its op, arity, graph, source and body; 1 when it has a
 * body (whose contract check_body checks). */
/* An ODE block or hybrid states everything its call needs (ode.h): the
 * model, the solver and that solver's settings, consistent with its operands. */
static void check_ode(vctx *c, const ir_graph *g, const ir_node *n)
{
	const char *e = ode_check_node(g->A, n);
	if (e)
		bad(c, g, "node '%s' (%s): %s", nname(n), ir_op_name(n->op), e);
	if (n->nout > 1 && n->out[1] && n->out[1]->dtype != DT_UNDEF && n->out[1]->dtype != DT_I64)
		bad(c, g, "node '%s' (%s): its stats output must be int64", nname(n), ir_op_name(n->op));
}

static int check_node_shape(vctx *c, const ir_graph *g, const ir_node *n)
{
	const ir_opinfo *oi = &ir_ops[n->op];
	if (n->nin < oi->min_in || n->nin > oi->max_in)
		bad(c, g, "node '%s' (%s) has %d inputs; arity is %d..%d", nname(n), oi->name, n->nin, oi->min_in,
		    oi->max_in);
	if (n->nout < oi->min_out || n->nout > oi->max_out)
		bad(c, g, "node '%s' (%s) has %d outputs; arity is %d..%d", nname(n), oi->name, n->nout,
		    oi->min_out, oi->max_out);
	if (n->graph != g)
		bad(c, g, "node '%s' (%s) is listed in a graph it was not made in", nname(n), oi->name);
	if (ir_attr_find(n, "weights"))
		check_precision(c, g, n);
	if ((unsigned)n->rec_source >= IR_REC_SOURCE_COUNT)
		bad(c, g, "node '%s' (%s) has an invalid recurrence source %d", nname(n), oi->name,
		    (int)n->rec_source);
	else if (n->rec_source != IR_REC_NONE && n->op != OP_RECURRENCE)
		bad(c, g, "node '%s' (%s) has the recurrence source %s but is no recurrence", nname(n), oi->name,
		    ir_rec_source_keyword(n->rec_source));
	/* ONNX Loop/Scan/SequenceMap keep their body until pass_loops rewrites them */
	int has_body = n->op == OP_RECURRENCE || n->op == OP_LOOP || n->op == OP_SCAN || n->op == OP_SEQMAP;
	if ((n->body != NULL) != has_body)
		bad(c, g, "node '%s' (%s) %s a body", nname(n), oi->name, n->body ? "has" : "lacks");
	return has_body;
}

/* Every input is defined before the node. */
static void check_node_inputs(vctx *c, const ir_graph *g, const ir_node *n, const infer_set *def)
{
	const ir_opinfo *oi = &ir_ops[n->op];
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		if (!v) {
			if (k < oi->min_in && n->op != OP_RECURRENCE)
				bad(c, g, "node '%s' (%s) lacks required input %d", nname(n), oi->name, k);
			continue;
		}
		if (c->shapes && v->data_dep && (n->op == OP_RECURRENCE || !(ir_dd_passes(n) || (ir_dd_reads(n) && k == 0))))
			bad(c, g, "node '%s' (%s) input %d '%s' has a data-dependent length, which only graph "
			    "outputs, the inputs of nodes that keep it row by row and a Gather on it by constant "
			    "indices may have", nname(n), oi->name, k, v->name);
		if (!infer_set_has(def, v))
			bad(c, g, "node '%s' (%s) input %d '%s' is not defined before the node (a later node's "
			    "output, a value of another graph, or a cycle)", nname(n), oi->name, k, v->name);
		else
			check_value(c, g, v, "input");
	}
}

/* A recurrence's contract, and its body, which sees what is defined here
 * plus its own values. */
static void check_body(vctx *c, const ir_graph *g, const ir_node *n, const infer_set *def)
{
	if (n->op == OP_RECURRENCE)
		check_recurrence(c, g, n);
	if (!n->body || n->body->parent != g)
		return;
	infer_set inner;
	infer_set_init(&inner);
	for (size_t s = 0; s < def->cap; s++)
		if (def->slot[s])
			infer_set_add(&inner, def->slot[s]);
	check_graph(c, n->body, &inner);
	infer_set_free(&inner);
}

/* Every output is the node's, once, in its graph, with its data-dependent
 * length where the op has one. */
static void check_node_outputs(vctx *c, const ir_graph *g, const ir_node *n, infer_set *def)
{
	const ir_opinfo *oi = &ir_ops[n->op];
	for (int k = 0; k < n->nout; k++) {
		const ir_value *v = n->out[k];
		if (!v)
			continue;
		if (v->kind != VAL_TEMP)
			bad(c, g, "node '%s' (%s) output %d '%s' is not a VAL_TEMP", nname(n), oi->name, k, v->name);
		if (v->producer != n)
			bad(c, g, "node '%s' (%s) output %d '%s' names another producer ('%s')", nname(n), oi->name,
			    k, v->name, v->producer ? nname(v->producer) : "none");
		if (v->graph != g)
			bad(c, g, "node '%s' (%s) output %d '%s' belongs to another graph", nname(n), oi->name, k,
			    v->name);
		if (c->shapes && v->data_dep != ir_node_dd_output(n, k))
			bad(c, g, "node '%s' (%s) output %d '%s' %s a data-dependent length", nname(n), oi->name, k,
			    v->name, v->data_dep ? "has" : "lacks");
		if (v->data_dep && (g->parent || v->dd_axis < 0 || v->dd_axis >= v->shape.rank))
			bad(c, g, "node '%s' (%s) output %d '%s': data-dependent axis %d of rank %d%s", nname(n),
			    oi->name, k, v->name, v->dd_axis, v->shape.rank, g->parent ? " inside a body" : "");
		else if (c->shapes && v->data_dep && ir_dd_passes(n) && v->dd_axis != ir_dd_out_axis(n))
			bad(c, g, "node '%s' (%s) output %d '%s': data-dependent axis %d, where the node puts its "
			    "input's on axis %d", nname(n), oi->name, k, v->name, v->dd_axis, ir_dd_out_axis(n));
		if (!infer_set_add(def, v))
			bad(c, g, "value '%s' is produced twice (again by node '%s')", v->name, nname(n));
		else
			check_value(c, g, v, "output");
		check_role(c, g, v);
	}
}

static void check_graph_outputs(vctx *c, const ir_graph *g, const infer_set *def)
{
	for (int i = 0; i < g->noutputs; i++) {
		const ir_value *v = g->outputs[i];
		if (!v)
			bad(c, g, "graph output %d is missing", i);
		else if (!infer_set_has(def, v))
			bad(c, g, "graph output '%s' is never defined", v->name);
		else if (!g->parent && !v->is_output)
			bad(c, g, "graph output '%s' lacks is_output", v->name);
		else
			check_value(c, g, v, "graph output");
	}
}

/* def: values usable at this point (those of enclosing graphs included). */
static void check_graph(vctx *c, const ir_graph *g, infer_set *def)
{
	check_values(c, g, def);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if ((unsigned)n->op >= OP_COUNT) {
			bad(c, g, "node #%d has an invalid op %d", i, (int)n->op);
			continue;
		}
		int has_body = check_node_shape(c, g, n);
		check_node_inputs(c, g, n, def);
		if (n->op == OP_ODEBLOCK || n->op == OP_ODERNN)
			check_ode(c, g, n);
		if (has_body)
			check_body(c, g, n, def);
		check_node_outputs(c, g, n, def);
	}
	check_graph_outputs(c, g, def);
}

/* ---- pass_grad's links: grad_of and recomputes ----------------------------------- */

/* Every value of the compilation that is defined: those no node makes that
 * a graph lists (inputs, weights, constants), and its nodes' results. */
static void defined_values(const ir_graph *g, infer_set *all)
{
	for (int i = 0; i < g->nvalues; i++)
		if (g->values[i]->kind != VAL_TEMP)
			infer_set_add(all, g->values[i]);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nout; k++)
			if (n->out[k])
				infer_set_add(all, n->out[k]);
		if (n->body)
			defined_values(n->body, all);
		for (int j = 0; j < n->nattrs; j++)
			if (n->attrs[j].kind == ATTR_GRAPH && n->attrs[j].g)
				defined_values(n->attrs[j].g, all);
	}
}

/* The results of g's nodes (bodies included) that pass_grad linked: a
 * gradient to the value it is of, a recomputed value of a backward body to
 * the forward body's value; both a value of the compilation that is defined
 * (the dump names it, the text reads it back) and not the value itself. */
static void check_links(vctx *c, const ir_graph *g, const infer_set *all)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nout; k++) {
			const ir_value *v = n->out[k], *f = v ? v->grad_of : NULL, *r = v ? v->recomputes : NULL;
			if (f && (f == v || !infer_set_has(all, f)))
				bad(c, g, "value '%s' is the gradient of '%s', which is %s", v->name, f->name,
				    f == v ? "itself" : "no value the compilation defines (a removed node's result?)");
			if (r && (r == v || !infer_set_has(all, r) || r->kind != VAL_TEMP || !g->parent ||
				  !r->graph->parent || r->graph == g))
				bad(c, g, "value '%s' recomputes '%s', which is no result of a node in another "
				    "recurrence body that the compilation defines", v->name, r->name);
		}
		if (n->body)
			check_links(c, n->body, all);
	}
}


/* Symbol i is the value of a graph input (size_inputs.c): a free symbol,
 * of an int64 or int32 input of one element that no node reads (they read the
 * symbolic constant) and no other symbol is the value of. */
static void check_value_sym(vctx *c, const ir_graph *g, int i)
{
	int xk = ir_sym_value_input(g, i);
	const ir_value *x = xk >= 0 ? g->inputs[xk] : NULL;
	if (!x || !ir_sym_free(g, i) || (x->dtype != DT_I64 && x->dtype != DT_I32) || x->shape.rank > 1 ||
	    ir_shape_const_numel(&x->shape) != 1) {
		bad(c, g, "dimension symbol '%s' is the value of '%s', which is no int64 or int32 graph input of one "
		    "element%s", g->syms[i], g->sym_value[i], !ir_sym_free(g, i) ? " (and the symbol is derived)" : "");
		return;
	}
	for (int j = 0; j < g->nsyms; j++)
		if (j != i && g->sym_value[j] && !strcmp(g->sym_value[j], g->sym_value[i]))
			bad(c, g, "dimension symbols '%s' and '%s' are both the value of input '%s'", g->syms[j],
			    g->syms[i], g->sym_value[i]);
	for (int k = 0; k < g->nnodes; k++)
		for (int j = 0; j < g->nodes[k]->nin; j++)
			if (g->nodes[k]->in[j] == x)
				bad(c, g, "node '%s' reads input '%s', whose value is symbol '%s': it reads the "
				    "symbolic constant instead", g->nodes[k]->name, x->name, g->syms[i]);
}

static int verify(const ir_graph *g, const char *after_pass, int shapes)
{
	vctx c = {after_pass ? after_pass : "?", shapes, 0};
	strset names = {0};
	check_names(&c, g, &names);
	free(names.slot);
	infer_set def;
	infer_set_init(&def);
	for (int i = 0; !g->parent && i < g->nsyms; i++) {
		const ir_symdef *d = &g->symdef[i];
		const char *why = ir_sym_noncanonical(g, i);
		if (why)
			bad(&c, g, "dimension symbol '%s' is derived as %s, which is not canonical: %s", g->syms[i],
			    d->op == IR_SYM_LIN || d->op == IR_SYM_MIN || d->op == IR_SYM_MAX || d->op == IR_SYM_SCALE
			    ? ir_sym_def_str(g->A, g, i) : "?", why);
		if (d->exact && (d->op != IR_SYM_LIN || d->div < 2 || d->exact != 1))
			bad(&c, g, "dimension symbol '%s' is marked exact but is no derived symbol with a divisor",
			    g->syms[i]);
		if (g->sym_pin[i] && (ir_sym_free(g, i) || g->sym_pin[i] < 1 || g->sym_pin[i] > INT32_MAX))
			bad(&c, g, "dimension symbol '%s' is pinned to %lld (derived symbols only, 1 to 2^31 - 1)",
			    g->syms[i], (long long)g->sym_pin[i]);
		if (g->sym_min[i] < 0 || g->sym_min[i] > INT32_MAX || (!ir_sym_free(g, i) && g->sym_min[i]))
			bad(&c, g, "dimension symbol '%s' has the least value %lld (a free symbol's, 0 to 2^31 - 1)",
			    g->syms[i], (long long)g->sym_min[i]);
		if (g->sym_value[i])
			check_value_sym(&c, g, i);
	}
	for (int i = 0; !g->parent && i < g->nlinks; i++) {
		const ir_sym_link *l = &g->links[i];
		if (l->at_least) {      /* a free symbol still in use, at least the value */
			int k = -1;
			for (int j = 0; l->name && j < g->nsyms; j++)
				if (!strcmp(g->syms[j], l->name))
					k = j;
			if (k < 0 || !ir_sym_free(g, k) || l->into || l->value < 2 || ir_sym_least(g, k) < l->value)
				bad(&c, g, "sizes link %d ('%s' >= %lld) names no free symbol of that least value", i,
				    l->name ? l->name : "", (long long)l->value);
			continue;
		}
		int gone = l->name && *l->name;
		for (int k = 0; gone && k < g->nsyms; k++)     /* gone, or pinned to the value */
			gone = strcmp(g->syms[k], l->name) != 0 || (!l->into && g->sym_pin[k] == l->value);
		if (!gone || (!l->into && (l->value < 1 || l->value > INT32_MAX)) || (l->into && !*l->into))
			bad(&c, g, "sizes link %d ('%s' = %s%lld) names a symbol still in use or no size", i,
			    l->name ? l->name : "", l->into ? l->into : "", l->into ? 0LL : (long long)l->value);
	}
	check_graph(&c, g, &def);
	infer_set_free(&def);
	infer_set all;
	infer_set_init(&all);
	defined_values(g, &all);
	check_links(&c, g, &all);
	infer_set_free(&all);
	if (!g->parent && (!strcmp(c.pass, "branch") || !strcmp(c.pass, "schedule") || !strcmp(c.pass, "plan")))
		check_guards(&c, g);    /* before, a graph read back may hold any: branch decides afresh */
	if (!g->parent && !strcmp(c.pass, "schedule")) {
		check_schedule(&c, g);
		check_store_i8(&c, g, g);
	}
	if (!g->parent && !strcmp(c.pass, "plan"))
		check_step_storage(&c, g);
	if (!g->parent && g->train)
		check_train(&c, g);
	if (c.nerr) {
		fprintf(stderr, "cellc: %d internal IR inconsistenc%s after pass '%s' (a cellc bug)\n",
			c.nerr, c.nerr == 1 ? "y" : "ies", c.pass);
		abort();
	}
	return 0;
}

int ir_verify(const ir_graph *g, const char *after_pass)
{
	return verify(g, after_pass, after_pass && strcmp(after_pass, "load") != 0);
}

int ir_verify_structure(const ir_graph *g, const char *after_pass) { return verify(g, after_pass, 0); }
