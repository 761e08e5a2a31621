/* pass_schedule.c: how each recurrence runs, decided once and written into
 * the IR for the emitter to print.
 *
 * requires: pass_fuse (the groups and node order are final; nothing is
 *           added or moved later).  pass_plan runs next and stores what
 *           these decisions leave to store (an input projection computed
 *           in the steps: one step's rows, or nothing when inline).
 * produces: on every RECURRENCE node of the root graph
 *             threads = "serial" | "rows" | "rows_cols"
 *               rows: the batch rows never meet in the body, so each thread
 *               runs every step on its own share of them; rows_cols: at
 *               B == 1 the threads may instead share the columns of the one
 *               row, meeting at each step (the generated code picks between
 *               the two at run time from B, T and the weights' size);
 *             x_proj = ["before" | "step" | "inline", ...], one per sequence
 *               input: where the input projection behind it (the root Gemm
 *               pass_hoist made) is computed: before the loop for all T*B
 *               rows, one step's B rows at a time at the start of the step
 *               (a small K: the rows stay in cache), or inside the fused
 *               loops that read it (K == 1: one multiply-add per element);
 *           on that root Gemm, when x_proj is not "before": per_step = 1 (no
 *           code of its own before the loop);
 *           on a body Gemm whose weights an inference build never changes:
 *           pack = 1 (at B == 1 it reads a copy of the weights packed once
 *           for the GEMV);
 *           with --weights int8 --embed-weights --no-malloc, on every Gemm
 *           (root or body) that reads a model weight every reader of which
 *           is such a Gemm (weights = "int8", the weight its B, not
 *           transA, no input projection computed inside fused loops):
 *           store_i8 = 1 (the weight is stored packed by rt_gemv_pack_i8,
 *           scales, row sums and int8 values, a quarter of float32's bytes,
 *           as the program's constants and its only copy; every product on
 *           it is rt_gemm_packed_i8, each row's activations quantized);
 *           on a body Gemm whose weights are a model weight (constant during
 *           a run, in training builds too): panels = 1 (at B > 1 the run
 *           packs them once into the panels of libcellrt's own GEMM kernel,
 *           which every step then reads instead of packing them again);
 *           on a body Concat of [B, N] values along the columns in a
 *           threaded recurrence: by_rows = 1 (each thread copies its rows);
 *           on such a Concat (threaded or not, not "rows_cols") whose
 *           inputs are made in the body by products or fused loops, read
 *           nowhere but where the emitter finds them by their home, none of
 *           them a body output: in_place = 1 (each producer writes its
 *           columns of the Concat's storage; the Concat copies nothing);
 *           on the recurrence, out_direct = [k, ...]: the scan outputs
 *           (0-based after the states) whose body value a fused loop
 *           makes, that is no other output and that nothing reads but
 *           through its home (no per-row time, not "rows_cols"): the loop
 *           writes the step's rows of the output and no buffer of its own.
 *           Placement is the planner's, next: a body value with a slot is
 *           stored (the next state in its slot: states are double-buffered
 *           between the model struct and that slot); one without lives in a
 *           local of its fused loop; a rank-0 element-wise value is a local
 *           of the step, with a slot too where a node reads its memory
 *           (fuse_needs_buffer).
 * breaks:   nothing (these attributes are removed first wherever they are,
 *           so a graph read back from `cellc dump` is scheduled afresh).
 *
 * ir_verify checks what can be checked of them without deciding again
 * (ir_verify.c, check_schedule).
 */
#include "passes.h"
#include "util.h"

#include <string.h>

typedef struct sch {
	const pass_opts *o;
	ir_graph *g;            /* root */
	ir_node *n;             /* the recurrence */
	ir_graph *b;            /* its body */
	int nseq, per_row_time, has_lens;
	ir_dim hc;              /* rows_cols: the columns of every fused loop */
} sch;

static int body_value(const sch *S, const ir_value *v)
{
	return v && v->graph == S->b;
}

/* Whether v is [B, N] (rows = the batch) or has a single row (rank < 2, or
 * one constant row: the same for every batch row). */
static int batch_rows(const sch *S, const ir_value *v, int *single)
{
	ir_dim B = S->b->inputs[S->nseq]->shape.d[0];
	*single = v->shape.rank < 2 || (ir_dim_is_const(v->shape.d[0]) && v->shape.d[0].k == 1);
	return v->shape.rank == 2 && ir_dim_eq(v->shape.d[0], B);
}

/* An operand a thread may read: a body value with the batch rows (the
 * thread reads its own rows), or any value with a single row. */
static int par_operand(const sch *S, const ir_value *v)
{
	int single;
	int rows = batch_rows(S, v, &single);
	return single || (rows && body_value(S, v));
}

/* A Concat of body values [B, N_k] along their columns (the backward of a
 * recurrence gathers its gate gradients so): row by row when threaded. */
static int is_row_concat(const sch *S, const ir_node *n)
{
	int single;
	if (n->op != OP_CONCAT || n->nout != 1 || !n->out[0] || !batch_rows(S, n->out[0], &single))
		return 0;
	int64_t axis = ir_attr_int(n, "axis", 0);
	if (axis != 1 && axis != -1)
		return 0;
	for (int k = 0; k < n->nin; k++)
		if (!n->in[k] || !batch_rows(S, n->in[k], &single) || !body_value(S, n->in[k]) ||
		    n->in[k]->dtype != DT_F32)
			return 0;
	return 1;
}

/* Whether the batch rows never meet: every body node is a product with the
 * batch as its rows (op(A) a body value of B rows, the weights one outer
 * value), an element-wise node over [B, N], a column view, a row Concat or
 * rank-0 step arithmetic (a local of each thread); no other node (its rows
 * might meet), no per-row time (reverse with sequence_lens).  Body
 * temporaries will each have their own slot (pass_plan keeps them for the
 * whole recurrence), so each thread owns the same rows of every buffer. */
static int rows_parallel(const sch *S)
{
	ir_graph *b = S->b;
	/* a condition that ends the loop is one value for every row */
	if (S->per_row_time || S->nseq < 1 || ir_rec_cond_state(S->n) >= 0)
		return 0;
	int buffers = 0;
	for (int i = 0; i < b->nnodes; i++)
		buffers += b->nodes[i]->op == OP_GEMM || b->nodes[i]->op == OP_CONCAT ||
			   (b->nodes[i]->nout == 1 && b->nodes[i]->out[0] && fuse_needs_buffer(b->nodes[i]->out[0]));
	if (buffers > IR_MAX_ROW_BUFFERS)
		return 0;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		int single;
		if (ir_is_column_view(n))
			continue;
		if (n->op == OP_GEMM) {
			ir_value *A = n->in[0], *W = n->in[1], *C = n->nin > 2 ? n->in[2] : NULL;
			if (ir_attr_int(n, "transA", 0) || !batch_rows(S, n->out[0], &single) ||
			    !batch_rows(S, A, &single) || !body_value(S, A) || body_value(S, W) ||
			    (C && !par_operand(S, C)))
				return 0;
			continue;
		}
		if (ir_is_step_scalar(n) || is_row_concat(S, n))
			continue;
		if (ir_is_generic_step_node(n) && ir_is_scalar_node(n))
			continue;
		if (ir_is_generic_step_node(n) || n->nout != 1 || !batch_rows(S, n->out[0], &single))
			return 0;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && !par_operand(S, n->in[k]))
				return 0;
	}
	return 1;
}

static int is_view(ir_op op)
{
	return op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE || op == OP_FLATTEN ||
	       op == OP_IDENTITY;
}

/* Whether v (a sequence input, or a column slice of one) is read by
 * nothing but fused element-wise loops, through column slices. */
static int read_by_fused_only(const ir_graph *b, const ir_value *v)
{
	for (int i = 0; i < b->noutputs; i++)
		if (b->outputs[i] == v)
			return 0;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *n = b->nodes[i];
		for (int j = 0; j < n->nin; j++) {
			if (n->in[j] != v)
				continue;
			if (ir_is_column_view(n)) {
				if (j != 0 || !read_by_fused_only(b, n->out[0]))
					return 0;
			} else if (!(ir_is_fused_elem(n) && !ir_is_step_scalar(n))) {
				return 0;
			}
		}
	}
	return 1;
}

/* Sequence input j of recurrence m reads y [T*B, N] (through views) so
 * that m can compute it inside its fused loops as well: time-major, no
 * per-row time, [T, B, N], read by nothing but fused loops. */
static int inline_reader(const ir_node *m, int j, const ir_value *y)
{
	ir_attr *sa = ir_attr_find(m, "seq_axis");
	const ir_value *x = m->in[j];
	return m->op == OP_RECURRENCE && m->body && j < ir_attr_int(m, "n_seq", 0) &&
	       (!sa || (sa->n > j && sa->ints[j] == 0)) &&
	       !(ir_attr_int(m, "reverse", 0) && ir_attr_int(m, "has_lens", 0)) && x->shape.rank == 3 &&
	       ir_dim_eq(x->shape.d[2], y->shape.d[1]) && read_by_fused_only(m->body, m->body->inputs[j]);
}

/* The hoisted GEMM behind sequence input k that may run one step at a time:
 * Y [T*B, N] = A [T*B, K] op(W) (+ bias row), K a constant <= 16, rows of
 * step t at t*B.. (time-major, no per-row time), A and W never overwritten
 * (graph input or weights), the bias a weight or a value computed before
 * (a training build sums the two biases at run time: pass_plan keeps it
 * until the recurrences that read Y have run), and Y read by nothing but views
 * leading to this recurrence, or, when K == 1 and this recurrence computes
 * it inside its fused loops, also by other recurrences that can do the
 * same (inline_reader: the backward of a trained recurrence reads the
 * forward's projection): each computes it, nothing stores it. */
static ir_node *deferrable_gemm(const sch *S, int k)
{
	const ir_node *rn = S->n;
	ir_attr *sa = ir_attr_find(rn, "seq_axis");
	if (k >= S->nseq || (sa && sa->n > k && sa->ints[k] != 0) || S->per_row_time)
		return NULL;
	const ir_value *y = ir_storage(rn->in[k]);
	ir_node *gm = y && y->kind == VAL_TEMP ? y->producer : NULL;
	if (!gm || gm->op != OP_GEMM || gm->out[0] != y || y->is_output || y->shape.rank != 2 ||
	    ir_attr_int(gm, "transA", 0) || rn->in[k]->shape.rank != 3)
		return NULL;
	const ir_value *A = ir_storage(gm->in[0]), *W = gm->in[1], *C = gm->nin > 2 ? gm->in[2] : NULL;
	ir_dim K = gm->in[0]->shape.d[1];
	if (!A || (A->kind != VAL_INPUT && A->kind != VAL_WEIGHT) || W->kind != VAL_WEIGHT ||
	    gm->in[0]->shape.rank != 2 || !ir_dim_is_const(K) || K.k > 16 || K.k < 1)
		return NULL;
	if (C && ((C->kind != VAL_WEIGHT && C->kind != VAL_TEMP) || C->dtype != DT_F32 || C->shape.rank != 1 ||
		  !ir_dim_eq(C->shape.d[0], y->shape.d[1])))
		return NULL;
	if (!ir_dim_eq(rn->in[k]->shape.d[2], y->shape.d[1]))
		return NULL;
	int uses = 0, shared = 0;
	const ir_graph *g = S->g;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *m = g->nodes[i];
		for (int j = 0; j < m->nin; j++) {
			if (!m->in[j] || ir_storage(m->in[j]) != y)
				continue;
			if (m == rn && j == k)
				uses++;
			else if (m != rn && inline_reader(m, j, y))
				shared++;
			else if (!(is_view(m->op) && m->nout == 1 && ir_storage(m->out[0]) == y))
				return NULL;
		}
	}
	for (int i = 0; i < g->noutputs; i++)
		if (ir_storage(g->outputs[i]) == y)
			return NULL;
	if (shared && !(K.k == 1 && read_by_fused_only(S->b, S->b->inputs[k])))
		return NULL;
	return uses == 1 ? gm : NULL;
}

/* rows_cols: whether every reader of v reads only its own columns of v:
 * column views hc wide, or fused nodes over v itself when v is hc wide. */
static int read_by_column(const sch *S, const ir_value *v)
{
	ir_graph *b = S->b;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *m = b->nodes[i];
		for (int k = 0; k < m->nin; k++) {
			if (m->in[k] != v)
				continue;
			if (ir_is_column_view(m) && k == 0) {
				if (!ir_dim_eq(ir_cols_of(m->out[0]), S->hc))
					return 0;
			} else if (!(ir_is_fused_elem(m) && ir_dim_eq(ir_cols_of(v), S->hc))) {
				return 0;
			}
		}
	}
	for (int k = 0; k < b->noutputs; k++)
		if (b->outputs[k] == v)
			return 0;
	return 1;
}

/* Whether a threaded recurrence can also split one batch row's columns over
 * the threads (B == 1): every fused loop runs over the same hc columns,
 * each product's result is read only column by column (each thread computes
 * its own columns of it), every body output comes out of a fused loop, no
 * sequence_lens. */
static int cols_parallel(sch *S, char *const *proj)
{
	ir_graph *b = S->b;
	if (S->has_lens || !ir_fused_cols(b, &S->hc))
		return 0;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		if (n->op == OP_GEMM) {
			const ir_value *C = n->nin > 2 ? n->in[2] : NULL;
			if (C && (C->shape.rank != 1 || body_value(S, C) ||
				  (ir_dim_is_const(C->shape.d[0]) && C->shape.d[0].k == 1)))
				return 0;
			if (!read_by_column(S, n->out[0]))
				return 0;
		} else if (ir_is_generic_step_node(n) && !ir_is_scalar_node(n)) {
			return 0;
		}
	}
	for (int k = 0; k < S->nseq; k++)
		if (strcmp(proj[k], "before") != 0 && !read_by_column(S, b->inputs[k]))
			return 0;
	for (int k = 0; k < b->noutputs; k++) {
		const ir_node *p = b->outputs[k]->producer;
		if (!p || p->graph != b || !ir_is_fused_elem(p) || ir_is_step_scalar(p))
			return 0;
	}
	return 1;
}

/* pack: a product whose weights are a model weight, which an inference
 * build never changes, with constant N and K; not in --train builds (the
 * optimiser writes the weights) nor --no-malloc ones (the copy would be an
 * allocation), nor when the step's rows come from different time steps. */
static int packable(const sch *S, const ir_node *gm)
{
	if (S->g->train || S->o->no_malloc || gm->op != OP_GEMM || gm->nin < 2)
		return 0;
	const ir_value *W = gm->in[1], *A = gm->in[0];
	for (int k = 0; S->per_row_time && k < S->nseq; k++)
		if (A == S->b->inputs[k])
			return 0;
	return !ir_attr_int(gm, "transA", 0) && W->kind == VAL_WEIGHT && W->dtype == DT_F32 &&
	       W->shape.rank == 2 && ir_dim_is_const(W->shape.d[0]) && ir_dim_is_const(W->shape.d[1]) &&
	       W->shape.d[0].k > 0 && W->shape.d[1].k > 0;
}

/* panels: a product of the step by a model weight, which does not change
 * while the recurrence runs (the optimiser writes it between runs), with
 * constant N and K; not --no-malloc (the copy is an allocation), nor when
 * the step's rows come from different time steps (one GEMV per row). */
static int panelable(const sch *S, const ir_node *gm)
{
	if (S->o->no_malloc || gm->op != OP_GEMM || gm->nin < 2 || S->per_row_time)
		return 0;
	const ir_value *W = gm->in[1];
	return !ir_attr_int(gm, "transA", 0) && W->kind == VAL_WEIGHT && W->dtype == DT_F32 && !body_value(S, W) &&
	       W->shape.rank == 2 && ir_dim_is_const(W->shape.d[0]) && ir_dim_is_const(W->shape.d[1]) &&
	       W->shape.d[0].k > 0 && W->shape.d[1].k > 0;
}

/* Whether a node of g or of a body nested in it reads v. */
static int nested_reads(const ir_graph *g, const ir_value *v)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *m = g->nodes[i];
		for (int k = 0; k < m->nin; k++)
			if (m->in[k] == v)
				return 1;
		if (m->body && nested_reads(m->body, v))
			return 1;
	}
	return 0;
}

/* Whether every reader of body value v finds it where the emitter put it
 * (its home): products, fused loops, column views whose readers do too,
 * Concats copied by rows, and `self`; not a node printed as in the root
 * graph (it reads the value's slot) nor a nested body. */
static int read_through_home(const sch *S, const ir_value *v, const ir_node *self)
{
	ir_graph *b = S->b;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *m = b->nodes[i];
		if (m->body && nested_reads(m->body, v))
			return 0;
		for (int k = 0; k < m->nin; k++) {
			if (m->in[k] != v || m == self)
				continue;
			if (ir_is_column_view(m) && k == 0) {
				if (!read_through_home(S, m->out[0], NULL))
					return 0;
			} else if (!(m->op == OP_GEMM || (ir_is_fused_elem(m) && !ir_is_step_scalar(m)) ||
				     (ir_attr_int(m, "by_rows", 0) && !ir_attr_int(m, "in_place", 0)))) {
				return 0;
			}
		}
	}
	return 1;
}

/* v is its own storage and no view shares it (a view takes its source's
 * slot, pass_plan). */
static int own_storage(const ir_value *v)
{
	return ir_storage(v) == v && !ir_has_views(v);
}

static int is_body_output(const sch *S, const ir_value *v)
{
	for (int k = 0; k < S->b->noutputs; k++)
		if (S->b->outputs[k] == v)
			return 1;
	return 0;
}

/* in_place: a row Concat whose inputs are distinct [B, N_k] values with
 * constant N_k, each made in the body by a product or a fused loop, none a
 * body output nor a view or viewed, each read through its home alone
 * (above). */
static int concat_in_place(const sch *S, const ir_node *n)
{
	if (!is_row_concat(S, n))
		return 0;
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		const ir_node *p = v->producer;
		if (v->kind != VAL_TEMP || !p || p->graph != S->b || !ir_dim_is_const(ir_cols_of(v)) ||
		    !(p->op == OP_GEMM || (ir_is_fused_elem(p) && !ir_is_step_scalar(p))) ||
		    is_body_output(S, v) || !own_storage(v) || !read_through_home(S, v, n))
			return 0;
		for (int j = 0; j < k; j++)
			if (n->in[j] == v)
				return 0;
	}
	return 1;
}

/* out_direct: scan output k (0-based after the states) that the root
 * reads, whose value a fused loop makes (instead of storing it twice, in
 * its own buffer and the output), that is no other output, no view nor
 * viewed, and is read through its home alone.  Not a product's result nor
 * a Concat's: written straight into the [T, B, N] output, each step's
 * product first reads those lines from memory, where the memcpy from a
 * buffer the steps reuse writes whole lines; an LSTM's training step
 * measured 5% slower so. */
static int out_direct(const sch *S, int k)
{
	int o = (int)ir_attr_int(S->n, "n_state", 0) + k;
	const ir_value *v = S->b->outputs[o];
	const ir_node *p = v->producer;
	if (S->per_row_time || o >= S->n->nout || !S->n->out[o] || v->kind != VAL_TEMP || !p ||
	    p->graph != S->b || v->dtype != DT_F32 || v->shape.rank != 2 ||
	    !ir_is_fused_elem(p) || ir_is_step_scalar(p) || !own_storage(v) ||
	    !read_through_home(S, v, NULL))
		return 0;
	for (int j = 0; j < S->b->noutputs; j++)
		if (j != o && S->b->outputs[j] == v)
			return 0;
	return 1;
}

static void schedule_recurrence(sch *S)
{
	ir_node *n = S->n;
	ir_graph *b = S->b;
	S->nseq = (int)ir_attr_int(n, "n_seq", 0);
	S->has_lens = ir_attr_int(n, "has_lens", 0) != 0;
	S->per_row_time = ir_attr_int(n, "reverse", 0) && S->has_lens;
	if (S->nseq < 1 || b->ninputs <= S->nseq || b->inputs[S->nseq]->shape.rank != 2)
		return;         /* the emitter refuses it, located */

	char **proj = arena_array(S->g->A, (size_t)S->nseq, sizeof *proj);
	for (int k = 0; k < S->nseq; k++) {
		ir_node *gm = deferrable_gemm(S, k);
		proj[k] = "before";
		if (gm) {
			proj[k] = gm->in[0]->shape.d[1].k == 1 && read_by_fused_only(b, b->inputs[k]) ? "inline"
												     : "step";
			ir_attr_set_int(gm, "per_step", 1);
		}
	}
	ir_attr *a = ir_attr_add(n, "x_proj", ATTR_STRINGS);
	a->n = S->nseq;
	a->strings = (const char **)proj;

	int rows = rows_parallel(S), cols = rows && cols_parallel(S, proj);
	ir_attr_set_string(n, "threads", !rows ? "serial" : cols ? "rows_cols" : "rows");
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *m = b->nodes[i];
		if (rows && is_row_concat(S, m))
			ir_attr_set_int(m, "by_rows", 1);
		if (packable(S, m))
			ir_attr_set_int(m, "pack", 1);
		if (panelable(S, m))
			ir_attr_set_int(m, "panels", 1);
	}
	if (cols)
		return;         /* the threads share the step's columns: buffers stay whole */
	for (int i = 0; i < b->nnodes; i++)
		if (concat_in_place(S, b->nodes[i]))
			ir_attr_set_int(b->nodes[i], "in_place", 1);
	int nout = (int)ir_attr_int(n, "n_out", 0), nd = 0;
	int64_t *direct = arena_array(S->g->A, (size_t)nout + 1, sizeof *direct);
	for (int k = 0; k < nout && (int)ir_attr_int(n, "n_state", 0) + k < b->noutputs; k++)
		if (out_direct(S, k))
			direct[nd++] = k;
	if (nd)
		ir_attr_set_ints(n, "out_direct", nd, direct);
}

static const char *const sched_attrs[] = {"threads", "x_proj", "per_step", "pack", "panels", "by_rows",
					   "in_place", "out_direct", "store_i8"};

static void unschedule(ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		for (size_t k = 0; k < COUNTOF(sched_attrs); k++)
			ir_attr_remove(n, sched_attrs[k]);
		if (n->body)
			unschedule(n->body);
	}
}

/* ---- store_i8: int8 weights stored packed, the program's constants ---- */

/* Whether m reads W only as the B of an int8 product that rt_gemm_packed_i8
 * can make (A not transposed, W a constant [N,K] or [K,N], transB tb: one
 * packed copy serves every reader) and that is no input projection
 * computed inside a recurrence's fused loops (inl). */
static int i8_product_of(const ir_node *m, const ir_value *W, int tb, const ir_node *const *inl, int ninl)
{
	if (m->op != OP_GEMM || m->nin < 2 || m->in[1] != W || m->in[0] == W || (m->nin > 2 && m->in[2] == W) ||
	    (ir_attr_int(m, "transB", 0) != 0) != tb)
		return 0;
	for (int i = 0; i < ninl; i++)
		if (inl[i] == m)
			return 0;
	const char *mode = ir_attr_string(m, "weights", NULL);
	return mode && !strcmp(mode, "int8") && !ir_attr_int(m, "transA", 0) && W->kind == VAL_WEIGHT &&
	       W->dtype == DT_F32 && W->data && W->shape.rank == 2 && ir_dim_is_const(W->shape.d[0]) &&
	       ir_dim_is_const(W->shape.d[1]);
}

/* Whether every node of g (and of the bodies in it) that reads W is such a
 * product; sets *any when one reads it. */
static int i8_readers_only(const ir_graph *g, const ir_value *W, int tb, const ir_node *const *inl, int ninl,
			   int *any)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *m = g->nodes[i];
		for (int k = 0; k < m->nin; k++)
			if (m->in[k] == W) {
				if (!i8_product_of(m, W, tb, inl, ninl))
					return 0;
				*any = 1;
			}
		if (m->body && !i8_readers_only(m->body, W, tb, inl, ninl, any))
			return 0;
	}
	return 1;
}

/* store_i8 on every product of g (and its bodies) whose weight qualifies. */
static void mark_store_i8(ir_graph *root, ir_graph *g, const ir_node *const *inl, int ninl)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *m = g->nodes[i];
		int any = 0, tb = ir_attr_int(m, "transB", 0) != 0;
		if (m->op == OP_GEMM && m->nin >= 2 && i8_product_of(m, m->in[1], tb, inl, ninl) &&
		    i8_readers_only(root, m->in[1], tb, inl, ninl, &any) && any)
			ir_attr_set_int(m, "store_i8", 1);
		if (m->body)
			mark_store_i8(root, m->body, inl, ninl);
	}
}

/* The root Gemms that recurrences compute inside their fused loops (x_proj
 * "inline"): they read their weights element by element. */
static int inline_projections(ir_graph *g, const ir_node **inl)
{
	int n = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *r = g->nodes[i];
		ir_attr *xp = r->op == OP_RECURRENCE ? ir_attr_find(r, "x_proj") : NULL;
		for (int k = 0; xp && k < xp->n && k < r->nin; k++) {
			const ir_value *y = ir_storage(r->in[k]);
			if (!strcmp(xp->strings[k], "inline") && y && y->producer)
				inl[n++] = y->producer;
		}
	}
	return n;
}

int pass_schedule(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	unschedule(g);
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op != OP_RECURRENCE || !n->body)
			continue;
		sch S = {.o = o, .g = g, .n = n, .b = n->body};
		schedule_recurrence(&S);
	}
	if (o->weights == WEIGHTS_INT8 && o->embed_weights && o->no_malloc && !g->train) {
		int cap = 0;
		for (int i = 0; i < g->nnodes; i++)
			cap += g->nodes[i]->nin;
		const ir_node **inl = arena_array(g->A, (size_t)cap + 1, sizeof *inl);
		mark_store_i8(g, g, inl, inline_projections(g, inl));
	}
	return 0;
}
