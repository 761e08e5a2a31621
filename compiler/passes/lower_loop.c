/* lower_loop.c: ONNX Loop and Scan -> RECURRENCE nodes, and the sequence
 * operators PyTorch's scripted export uses to collect a loop's outputs.
 *
 * requires: (pass_loops, a resolving stage: passes.h) the Loop/Scan node's
 *           inputs, and the values its body reads, settled: inferred and
 *           folded (resolve_settled); its body read by the loader.
 * produces: no Loop or Scan node left: each is a RECURRENCE (ir.h contract)
 *           with the pre and post nodes that move time to axis 0 and back,
 *           or, when it carries sequences or non-float per-step values with
 *           a constant trip count, one copy of its body per iteration
 *           (onnx_loop_unroll, lower_seq.c), those nodes tagged ir_node.unrolled and the
 *           fallback recorded (WHY_ONNX_LOOP) for pass_reroll to roll back;
 *           sequence reads of an accumulation rewritten into tensor ops.
 * breaks:   nothing: the nodes it makes are inferred in the next round.
 *
 * Two stages.  The loader (onnx_load_body, compiler/onnx/onnx_body.c) reads a Loop/Scan body into a
 * graph nested in the enclosing one: its inputs are VAL_STEP values whose
 * shapes are left unknown (exporters write wrong ones: PyTorch's scripted
 * loops declare the carried states with the shape of an unrelated output),
 * and its nodes refer to enclosing values by name (captures).  pass_loops
 * (a resolving stage, passes.h) calls onnx_loop_expand on the node once its
 * inputs, and the values its body reads, have shapes and constants are
 * folded; that is when the trip count, the condition and the per-step
 * shapes are known, and the body is resolved and re-inferred from them
 * (resolve_body).  The node is then replaced by
 *     [pre nodes] RECURRENCE [post nodes]
 * where the recurrence follows the ir.h contract:
 *   - loop-carried values -> states (initial values = the node's inputs);
 *   - Scan inputs -> sequence inputs (time moved to axis 0 by a Transpose,
 *     reversed by a Slice with step -1 when directions differ);
 *   - Loop: where the iteration number t indexes a tensor defined outside
 *     the loop, x[t] (Gather on any axis: a Transpose moves it to axis 0)
 *     or x[t:t+1] (Slice on axis 0), that tensor becomes a
 *     sequence input (the step body then reads its slice); any other use
 *     (Cast/Mod arithmetic of a step schedule) reads int64(t' - 1) of the
 *     recurrence's 1-based step number t' (has_step, ir.h);
 *   - scan outputs -> stacked outputs (time axis 0; Transpose/Slice after
 *     for other axes and directions);
 *   - a body's SequenceAt of a SplitToSequence view (lower_seq.c: the export
 *     of `for x_t in torch.unbind(x, 1)`) is Gather of the split tensor on
 *     its axis (split_reads, before map_iter): the loop scans it like x[:, t];
 *   - accumulated sequences: a carried value that starts as SequenceEmpty and
 *     that the body extends by SequenceInsert(s, y) is a stacked output of
 *     y; ConcatFromSequence (new_axis=1 on any axis; new_axis=0 on axis 0, or
 *     on axis a as a Transpose and a Reshape merging time into a: torch.cat),
 *     SequenceAt and SequenceLength after the loop read that stacked output;
 *   - carried integer or bool values (a Python step counter) are carried as
 *     float32 parts of at most 24 bits each, exact (int_states); a counter
 *     from a constant going up by 1 is read as the iteration number
 *     (counters_to_iter) and not carried when nothing else reads it
 *     (unread_state);
 *   - a condition that is not constant true (a `break`, a `while`): the
 *     steps are bounded by M, or when M is absent or the largest int64 by
 *     the condition's comparison of a counter with an outer value
 *     (onnx_loop_cond_limit, loop_trip_count), that comparison dropped
 *     where it says what T says (drop_bound_term); the rest is a [1, 1]
 *     state of the role condition (cond_state, ir.h) and the stacked
 *     outputs have a data-dependent axis 0 (a SequenceLength of such an
 *     output reads a count of the steps run the recurrence carries:
 *     ran_state).
 * Every body input and output is made 2-D [rows, cols] as the recurrence
 * emitter wants: a body made only of element-wise operators gets leading 1
 * axes (broadcasting is unchanged by them), any other body gets Reshape
 * nodes at its inputs and outputs; outside, Reshape nodes convert back.
 *
 * Scan's front end is lower_scan.c.
 *
 * What cannot be compiled is a located error: a trip count that is not a
 * compile-time constant (or a dimension of an input, a size input), a
 * condition that bounds the steps by nothing cellc follows, an initial
 * condition known only at run time, a loop-carried value
 * whose shape changes, other uses of the iteration number, other uses of
 * sequences.
 */
#include "lower_loop.h"
#include "infer.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* ---- expansion: helpers (the state and the smallest: lower_loop.h) --------- */

static void push(lx *X, ir_node *nd)
{
	if (X->nrep == X->caprep) {
		int cap = X->caprep ? 2 * X->caprep : 16;
		X->rep = arena_grow(X->A, X->rep, (size_t)X->nrep, (size_t)cap, sizeof *X->rep);
		X->caprep = cap;
	}
	X->rep[X->nrep++] = nd;
}

static ir_value *temp(lx *X, ir_graph *g, ir_dtype dt)
{
	return ir_value_new(g, ir_unique_name(g, "loop"), VAL_TEMP, dt);
}

/* An i64 constant holding dims (symbolic ones as `sym`, infer.h). */
static ir_value *dims_const(lx *X, ir_graph *g, int cnt, const ir_dim *d)
{
	int64_t v[IR_MAX_RANK + 1] = {0};
	int sym = 0;
	for (int i = 0; i < cnt; i++) {
		sym |= !ir_dim_is_const(d[i]);
		v[i] = d[i].k;
	}
	ir_value *c = ir_const_i64(g, ir_unique_name(g, "dims"), cnt, v);
	if (sym) {
		c->sym = arena_array(X->A, (size_t)cnt, sizeof *c->sym);
		memcpy(c->sym, d, (size_t)cnt * sizeof *d);
		c->data = NULL;
	}
	return c;
}

ir_value *lx_ints_const(ir_graph *g, int cnt, const int64_t *v)
{
	return ir_const_i64(g, ir_unique_name(g, "ints"), cnt, v);
}

/* An outer node made before the recurrence; inferred now, because the body's
 * shapes depend on it (pass_infer infers it again, which changes nothing). */
ir_value *lx_pre(lx *X, ir_node *nd)
{
	nd->out[0] = temp(X, X->g, DT_UNDEF);
	push(X, nd);
	if (infer_node(X->g, nd, X->D))
		return NULL;
	return nd->out[0];
}

static ir_value *pre_reshape(lx *X, ir_value *v, const ir_shape *s)
{
	ir_node *nd = ir_build_node(&X->bld, X->g, OP_RESHAPE, 2, NULL, 1);
	nd->in[0] = v;
	nd->in[1] = dims_const(X, X->g, s->rank, s->d);
	return lx_pre(X, nd);
}

ir_value *lx_pre_transpose(lx *X, ir_value *v, const int64_t *perm)
{
	ir_node *nd = ir_build_node(&X->bld, X->g, OP_TRANSPOSE, 1, NULL, 1);
	nd->in[0] = v;
	ir_attr_set_ints(nd, "perm", v->shape.rank, perm);
	return lx_pre(X, nd);
}

/* Y = v reversed along axis 0 (Slice with step -1). */
ir_node *lx_reverse_node(lx *X, ir_value *v)
{
	int64_t st = -1, en = INT64_MIN, ax = 0, sp = -1;
	ir_node *nd = ir_build_node(&X->bld, X->g, OP_SLICE, 5, NULL, 1);
	nd->in[0] = v;
	nd->in[1] = lx_ints_const(X->g, 1, &st);
	nd->in[2] = lx_ints_const(X->g, 1, &en);
	nd->in[3] = lx_ints_const(X->g, 1, &ax);
	nd->in[4] = lx_ints_const(X->g, 1, &sp);
	return nd;
}

/* perm moving axis `from` to position `to` (others keep their order). */
void lx_move_perm(int r, int from, int to, int64_t *perm)
{
	int k = 0;
	for (int i = 0; i < r; i++)
		if (i != from)
			perm[k++] = i;
	for (int i = r - 1; i > to; i--)
		perm[i] = perm[i - 1];
	perm[to] = from;
}

/* ---- the body ---------------------------------------------------------------- */

/* Uses of v by b's nodes (and nested bodies) and outputs; *only: a user. */
static int body_uses(const ir_graph *b, const ir_value *v, ir_node **only)
{
	int cnt = 0;
	for (int i = 0; i < b->nnodes; i++) {
		for (int k = 0; k < b->nodes[i]->nin; k++)
			if (b->nodes[i]->in[k] == v) {
				cnt++;
				if (only)
					*only = b->nodes[i];
			}
		if (b->nodes[i]->body && body_uses(b->nodes[i]->body, v, NULL))
			cnt++;
	}
	for (int k = 0; k < b->noutputs; k++)
		cnt += b->outputs[k] == v;
	return cnt;
}

static ir_node *producer_in(const ir_graph *b, const ir_value *v)
{
	if (!v)
		return NULL;
	for (int i = 0; i < b->nnodes; i++)
		for (int k = 0; k < b->nodes[i]->nout; k++)
			if (b->nodes[i]->out[k] == v)
				return b->nodes[i];
	return NULL;
}

static void prepend_body(ir_graph *b, ir_node *nd)
{
	ir_node **nodes = arena_array(b->A, (size_t)b->nnodes + 1, sizeof *nodes);
	nodes[0] = nd;
	memcpy(nodes + 1, b->nodes, (size_t)b->nnodes * sizeof *nodes);
	ir_set_nodes(b, nodes, b->nnodes + 1);
}

/* The 2-D shape the emitter wants for a body value of shape s. */
static ir_shape canon2(const ir_shape *s)
{
	ir_shape c = {.rank = 2};
	if (s->rank == 2)
		return *s;
	if (s->rank < 2) {
		c.d[0] = ir_dim_const(1);
		c.d[1] = s->rank == 1 ? s->d[0] : ir_dim_const(1);
		return c;
	}
	c.d[0] = s->d[0];
	c.d[1] = s->d[1];
	for (int i = 2; i < s->rank; i++)
		c.d[1] = ir_dim_mul(c.d[1], s->d[i]);
	return c;
}

/* The 2-D shape of body input k (a per-step input or a state): canon2's,
 * except that a per-step vector as long as the batch rows of another
 * per-step input or state (m_t of a [T, B] mask: zip(x.unbind(0),
 * m.unbind(0))) is a column [B, 1], one element per batch row. */
static ir_shape input2(lx *X, int k)
{
	const ir_shape *s = &X->b->inputs[k]->shape;
	if (k < X->nseq && s->rank == 1)
		for (int j = 0; j < X->nseq + X->nst; j++) {
			const ir_shape *o = &X->b->inputs[j]->shape;
			if (j != k && o->rank >= 2 && ir_dim_eq(o->d[0], s->d[0]))
				return (ir_shape){.rank = 2, .d = {s->d[0], ir_dim_const(1)}};
		}
	return canon2(s);
}

/* A body output must be made by a body node (the emitter writes states from
 * its fused loops): anything else gets an Identity.  One value serving as
 * two outputs gets one too. */
static void own_output(lx *X, int k)
{
	ir_graph *b = X->b;
	ir_value *v = b->outputs[k];
	int dup = 0;
	for (int j = 0; j < k; j++)
		dup |= b->outputs[j] == v;
	/* a new state also read by a product or data movement in the same
	 * step: those read it from its own buffer, the state gets a copy (the
	 * emitter swaps state buffers between steps) */
	for (int i = 0; i < b->nnodes && k < X->nst; i++)
		for (int j = 0; j < b->nodes[i]->nin; j++)
			dup |= b->nodes[i]->in[j] == v && ir_ops[b->nodes[i]->op].kind != OPK_ELEM;
	if (!dup && v->graph == b && v->kind == VAL_TEMP && producer_in(b, v))
		return;
	ir_node *nd = ir_build_node(&X->bld, b, OP_IDENTITY, 1, NULL, 1);
	nd->in[0] = v;
	nd->out[0] = temp(X, b, v->dtype);
	ir_append(b, nd);
	b->outputs[k] = nd->out[0];
}

static int all_elementwise(const ir_graph *b)
{
	for (int i = 0; i < b->nnodes; i++)
		if (ir_ops[b->nodes[i]->op].kind != OPK_ELEM)
			return 0;
	return 1;
}

/* Body I/O -> 2-D f32.  Returns the number of errors. */
static int canon_body(lx *X)
{
	ir_graph *b = X->b;
	for (int k = 0; k < b->ninputs + b->noutputs; k++) {
		ir_value *v = k < b->ninputs ? b->inputs[k] : b->outputs[k - b->ninputs];
		if (v->dtype != DT_F32)
			return fail(X, "%s '%s' of the body is %s; cellc compiles loop bodies whose carried "
				    "values, per-step inputs and per-step outputs are float32",
				    k < b->ninputs ? "input" : "output", v->name, ir_dtype_name(v->dtype));
	}
	int promote = all_elementwise(b);
	for (int k = 0; k < X->nseq + X->nst; k++) {     /* not the step number */
		ir_value *v = b->inputs[k];
		if (v->shape.rank == 2)
			continue;
		ir_shape c = input2(X, k);
		/* leading unit axes keep the broadcasting; a column would not */
		if (promote && v->shape.rank < 2 && ir_dim_eq(c.d[0], ir_dim_const(1))) {
			v->shape = c;
			continue;
		}
		ir_value *nv = ir_value_new(b, ir_unique_name(b, "step"), VAL_STEP, v->dtype);
		nv->shape = c;
		ir_node *nd = ir_build_node(&X->bld, b, OP_RESHAPE, 2, NULL, 1);
		nd->in[0] = nv;
		nd->in[1] = dims_const(X, b, v->shape.rank, v->shape.d);
		nd->out[0] = v;
		v->kind = VAL_TEMP;
		prepend_body(b, nd);
		b->inputs[k] = nv;
	}
	if (X->infer(X->cx, b))
		return 1;
	for (int k = 0; k < b->noutputs; k++) {
		ir_value *v = b->outputs[k];
		if (v->shape.rank == 2)
			continue;
		ir_shape c = canon2(&v->shape);
		/* a per-step vector as long as the batch (a token per row,
		 * `logits.argmax(1)`) is one value per batch row, as input2 reads
		 * such an input */
		for (int j = 0; k >= X->nst && v->shape.rank == 1 && j < X->nseq + X->nst; j++) {
			const ir_shape *o = &b->inputs[j]->shape;
			if (o->rank >= 2 && ir_dim_eq(o->d[0], v->shape.d[0]))
				c = (ir_shape){.rank = 2, .d = {v->shape.d[0], ir_dim_const(1)}};
		}
		ir_node *nd = ir_build_node(&X->bld, b, OP_RESHAPE, 2, NULL, 1);
		nd->in[0] = v;
		nd->in[1] = dims_const(X, b, c.rank, c.d);
		nd->out[0] = temp(X, b, v->dtype);
		ir_append(b, nd);
		b->outputs[k] = nd->out[0];
	}
	return X->infer(X->cx, b);
}

/* ---- the recurrence ------------------------------------------------------------ */

/* A post node turning v into the value `fin` (or a fresh one if fin is NULL
 * and more steps follow). */
static ir_node *post(lx *X, ir_node *nd, ir_value *fin)
{
	nd->out[0] = fin ? fin : temp(X, X->g, DT_UNDEF);
	push(X, nd);
	return nd;
}

/* Builds the RECURRENCE from the lx tables (body inputs/outputs set there)
 * and the nodes after it.  Returns the number of errors. */
/* A recurrence has at least one state and one sequence input (the emitter
 * takes T from it): zeros stand in where the loop has none; *pad is the
 * node making the zeros that stand in for a sequence input. */
static int pad_missing_io(lx *X, ir_node **pad)
{
	ir_graph *b = X->b, *g = X->g;
	if (X->nst == 0) {
		ir_shape s = {.rank = 2, .d = {ir_dim_const(1), ir_dim_const(1)}};
		ir_value *in = ir_value_new(b, ir_unique_name(b, "pad_state"), VAL_STEP, DT_F32);
		in->shape = s;
		ir_node *nd = ir_build_node(&X->bld, b, OP_IDENTITY, 1, NULL, 1);
		nd->in[0] = in;
		nd->out[0] = temp(X, b, DT_F32);
		ir_append(b, nd);
		X->st_in[0] = in;
		X->st_out[0] = nd->out[0];
		X->st_init[0] = X->st_final[0] = NULL;
		X->nst = 1;
	}
	*pad = NULL;
	if (X->nseq == 0) {
		ir_dim d[3] = {X->T, ir_dim_const(1), ir_dim_const(1)};
		ir_node *nd = *pad = ir_build_node(&X->bld, g, OP_CONSTOFSHAPE, 1, NULL, 1);
		nd->in[0] = dims_const(X, g, 3, d);
		ir_value *z = lx_pre(X, nd);
		if (!z)
			return 1;
		ir_value *in = ir_value_new(b, ir_unique_name(b, "pad_step"), VAL_STEP, DT_F32);
		in->shape = (ir_shape){.rank = 2, .d = {ir_dim_const(1), ir_dim_const(1)}};
		X->seq_outer[0] = z;
		X->seq_body[0] = in;
		X->nseq = 1;
	}
	return 0;
}

/* The body's inputs and outputs in the recurrence's order, the body inferred. */
static int set_body_io(lx *X)
{
	ir_graph *b = X->b;
	b->ninputs = X->nseq + X->nst + (X->step != NULL);
	b->inputs = arena_array(X->A, (size_t)b->ninputs, sizeof *b->inputs);
	if (X->step)
		b->inputs[X->nseq + X->nst] = X->step;
	for (int k = 0; k < X->nseq; k++)
		b->inputs[k] = X->seq_body[k];
	for (int k = 0; k < X->nst; k++)
		b->inputs[X->nseq + k] = X->st_in[k];
	b->noutputs = X->nst + X->ny;
	b->outputs = arena_array(X->A, (size_t)b->noutputs, sizeof *b->outputs);
	for (int k = 0; k < X->nst; k++)
		b->outputs[k] = X->st_out[k];
	for (int k = 0; k < X->ny; k++)
		b->outputs[X->nst + k] = X->y_body[k];
	for (int k = 0; k < b->ninputs; k++)
		b->inputs[k]->kind = VAL_STEP;
	ir_drop_dead(b, IR_DEAD_LOCAL);
	for (int k = 0; k < b->noutputs; k++)
		own_output(X, k);
	if (X->infer(X->cx, b))
		return 1;
	return 0;
}

/* Every per-step input and initial state 2-D outside the loop (the body's
 * are made so by canon_body). */
static int canon_outer_inputs(lx *X)
{
	ir_graph *b = X->b;
	for (int k = 0; k < X->nseq; k++) {
		ir_value *v = X->seq_outer[k];
		ir_shape c = input2(X, k);
		if (b->inputs[k]->shape.rank != 2) {
			ir_shape s = {.rank = 3, .d = {v->shape.d[0], c.d[0], c.d[1]}};
			if (!(X->seq_outer[k] = pre_reshape(X, v, &s)))
				return 1;
		}
	}
	for (int k = 0; k < X->nst; k++) {
		ir_value *v = X->st_init[k];
		if (v && v->shape.rank != 2) {
			ir_shape c = canon2(&v->shape);
			if (!(X->st_init[k] = pre_reshape(X, v, &c)))
				return 1;
		}
	}
	return 0;
}

/* The recurrence has one batch size: every per-step input and output has
 * as many rows as the first per-step input; zeros standing in for a
 * sequence input take the rows of the first per-step output. */
static int check_batch_rows(lx *X, ir_node *pad)
{
	ir_graph *b = X->b, *g = X->g;
	for (int k = 0; pad && k < X->ny; k++) {
		ir_value *y = b->outputs[X->nst + k];
		if (!X->y_final[k] || ir_dim_eq(y->shape.d[0], b->inputs[0]->shape.d[0]))
			continue;
		ir_dim d[3] = {X->T, y->shape.d[0], ir_dim_const(1)};
		pad->in[0] = dims_const(X, g, 3, d);
		X->seq_outer[0]->shape = (ir_shape){.rank = 3, .d = {d[0], d[1], d[2]}};
		b->inputs[0]->shape = (ir_shape){.rank = 2, .d = {d[1], d[2]}};
		break;
	}
	ir_dim rows = b->inputs[0]->shape.d[0];
	for (int k = 0; k < X->nseq + X->ny; k++) {
		ir_value *v = k < X->nseq ? b->inputs[k] : b->outputs[X->nst + k - X->nseq];
		if (k >= X->nseq && !X->y_final[k - X->nseq])
			continue;
		if (!ir_dim_eq(v->shape.d[0], rows))
			return fail(X, "per-step %s '%s' has %s rows where the per-step input '%s' has %s; cellc "
				    "compiles loops whose per-step inputs and outputs share one batch size",
				    k < X->nseq ? "input" : "output", v->name,
				    ir_dim_str(X->A, ir_root(g), v->shape.d[0]), b->inputs[0]->name,
				    ir_dim_str(X->A, ir_root(g), rows));
	}
	return 0;
}

/* The RECURRENCE node, pushed to the replacement nodes. */
static ir_node *push_recurrence(lx *X)
{
	ir_graph *b = X->b, *g = X->g;
	ir_node *r = ir_build_node(&X->bld, g, OP_RECURRENCE, X->nseq + X->nst, NULL, X->nst + X->ny);
	r->name = ir_unique_name(g, "Recurrence");
	r->op_type = X->n->op_type;
	r->rec_source = X->n->op == OP_SCAN ? IR_REC_ONNX_SCAN : IR_REC_ONNX_LOOP;
	r->body = b;
	b->parent = g;
	for (int k = 0; k < X->nseq; k++)
		r->in[k] = X->seq_outer[k];
	for (int k = 0; k < X->nst; k++)
		r->in[X->nseq + k] = X->st_init[k];
	int64_t zeros[MAXIO] = {0};
	ir_attr_set_int(r, "n_seq", X->nseq);
	ir_attr_set_int(r, "n_state", X->nst);
	ir_attr_set_int(r, "n_out", X->ny);
	ir_attr_set_int(r, "reverse", X->reverse);
	ir_attr_set_ints(r, "seq_axis", X->nseq, X->seq_ax);
	ir_attr_set_ints(r, "out_axis", X->ny, zeros);
	ir_attr_set_int(r, "has_lens", 0);
	ir_attr_set_int(r, "has_step", X->step != NULL);
	push(X, r);
	return r;
}

/* The final states: the recurrence's outputs, reshaped back to their natural
 * shapes st_shape and given their batch axis back where the loop needs it. */
static void finish_states(lx *X, ir_node *r, const ir_shape *st_shape)
{
	ir_graph *b = X->b, *g = X->g;
	for (int k = 0; k < X->nst; k++) {
		ir_value *fin = X->st_final[k];
		ir_value *bo = b->outputs[k];
		if (!fin)
			continue;
		int reshape = st_shape[k].rank != 2, unb = X->unbatch;
		if (!reshape && !unb) {
			r->out[k] = fin;
			fin->shape = bo->shape;
			fin->dtype = DT_F32;
			continue;
		}
		ir_value *o = temp(X, g, DT_F32);
		o->shape = bo->shape;
		r->out[k] = o;
		if (reshape) {
			ir_node *nd = ir_build_node(&X->bld, g, OP_RESHAPE, 2, NULL, 1);
			nd->in[0] = o;
			nd->in[1] = dims_const(X, g, st_shape[k].rank, st_shape[k].d);
			o = post(X, nd, unb ? NULL : fin)->out[0];
		}
		if (unb) {
			int64_t zero = 0;
			ir_node *nd = ir_build_node(&X->bld, g, OP_UNSQUEEZE, 2, NULL, 1);
			nd->in[0] = o;
			nd->in[1] = lx_ints_const(g, 1, &zero);
			post(X, nd, fin);
		}
	}
}

/* The stacked outputs: reshaped back to [T, natural shape y_shape], reversed,
 * their time axis moved and their batch axis given back as the loop needs. */
static int finish_outputs(lx *X, ir_node *r, const ir_shape *y_shape)
{
	ir_graph *b = X->b, *g = X->g;
	for (int k = 0; k < X->ny; k++) {
		ir_value *fin = X->y_final[k];
		ir_value *bo = b->outputs[X->nst + k];
		if (!fin)
			continue;
		ir_shape s3 = {.rank = 3, .d = {X->T, bo->shape.d[0], bo->shape.d[1]}};
		int steps = (y_shape[k].rank != 2) + X->y_rev[k] + (X->y_axis[k] != 0) + X->unbatch, done = 0;
		if (!steps) {
			r->out[X->nst + k] = fin;
			fin->shape = s3;
			fin->dtype = DT_F32;
			continue;
		}
		ir_value *o = temp(X, g, DT_F32);
		o->shape = s3;
		r->out[X->nst + k] = o;
		if (y_shape[k].rank != 2) {
			ir_dim d[IR_MAX_RANK + 1];
			d[0] = X->T;
			if (y_shape[k].rank + 1 > IR_MAX_RANK)
				return fail(X, "per-step output %d has rank %d; cellc supports rank %d at most",
					    k, y_shape[k].rank, IR_MAX_RANK - 1);
			memcpy(d + 1, y_shape[k].d, (size_t)y_shape[k].rank * sizeof *d);
			ir_node *nd = ir_build_node(&X->bld, g, OP_RESHAPE, 2, NULL, 1);
			nd->in[0] = o;
			nd->in[1] = dims_const(X, g, y_shape[k].rank + 1, d);
			o = post(X, nd, ++done == steps ? fin : NULL)->out[0];
			if (done == steps) {
				/* known now: seq_users reads the stacked shape */
				fin->dtype = DT_F32;
				fin->shape.rank = y_shape[k].rank + 1;
				memcpy(fin->shape.d, d, (size_t)fin->shape.rank * sizeof *d);
			}
		}
		if (X->y_rev[k])
			o = post(X, lx_reverse_node(X, o), ++done == steps ? fin : NULL)->out[0];
		if (X->y_axis[k] != 0) {
			int64_t perm[IR_MAX_RANK];
			int rr = y_shape[k].rank + 1;
			lx_move_perm(rr, 0, X->y_axis[k], perm);
			ir_node *nd = ir_build_node(&X->bld, g, OP_TRANSPOSE, 1, NULL, 1);
			nd->in[0] = o;
			ir_attr_set_ints(nd, "perm", rr, perm);
			o = post(X, nd, ++done == steps ? fin : NULL)->out[0];
		}
		if (X->unbatch) {
			int64_t zero = 0;
			ir_node *nd = ir_build_node(&X->bld, g, OP_UNSQUEEZE, 2, NULL, 1);
			nd->in[0] = o;
			nd->in[1] = lx_ints_const(g, 1, &zero);
			o = post(X, nd, ++done == steps ? fin : NULL)->out[0];
		}
	}
	return 0;
}

int lx_build(lx *X)
{
	ir_graph *b = X->b;
	ir_node *pad;
	if (pad_missing_io(X, &pad) || set_body_io(X))
		return 1;
	/* natural shapes, before canon_body changes them */
	ir_shape st_shape[MAXIO], y_shape[MAXIO];
	for (int k = 0; k < X->nst; k++)
		st_shape[k] = b->outputs[k]->shape;
	for (int k = 0; k < X->ny; k++)
		y_shape[k] = b->outputs[X->nst + k]->shape;
	if (canon_outer_inputs(X) || canon_body(X))
		return 1;
	ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_VALUES | IR_DEAD_VALUES_ONLY);
	if (check_batch_rows(X, pad))
		return 1;
	ir_node *r = push_recurrence(X);
	finish_states(X, r, st_shape);
	return finish_outputs(X, r, y_shape);
}

/* Checks that each carried value keeps its dtype and shape. */
int lx_check_states(lx *X)
{
	for (int k = 0; k < X->nst; k++) {
		ir_value *in = X->st_in[k], *out = X->st_out[k];
		if (out->shape.rank < 0)
			return 1;       /* reported by inference */
		if (in->dtype != out->dtype || !ir_shape_eq(&in->shape, &out->shape))
			return fail(X, "loop-carried value '%s' changes from %s %s to %s %s ('%s') between "
				    "iterations; cellc compiles loops whose carried values keep their shape",
				    in->name, ir_dtype_name(in->dtype), shp(X, &in->shape),
				    ir_dtype_name(out->dtype), shp(X, &out->shape), out->name);
	}
	return 0;
}

/* ---- sequences after the loop ------------------------------------------------------ */

/* Rewrites the users of sequence value S (a Loop output accumulated from the
 * per-step values whose stacked form is Y, [T, e...]) in place. */
static int seq_users(lx *X, ir_value *S, ir_value *Y, int from)
{
	ir_graph *g = X->g;
	if (S->is_output)
		return fail(X, "output '%s' is a sequence; cellc's outputs are tensors (stack it with "
			    "ConcatFromSequence)", S->name);
	int r = Y->shape.rank;
	for (int i = from; i < g->nnodes; i++) {
		ir_node *u = g->nodes[i];
		for (int k = 0; k < u->nin; k++) {
			if (u->in[k] != S)
				continue;
			if (u->op == OP_SEQCONCAT && k == 0) {
				int64_t axis = ir_attr_int(u, "axis", 0), newax = ir_attr_int(u, "new_axis", 0);
				int rr = newax ? r : r - 1;
				if (axis < -rr || axis >= rr)
					return fail(X, "ConcatFromSequence '%s': axis %lld is out of range", u->name,
						    (long long)axis);
				if (axis < 0)
					axis += rr;
				u->nattrs = 0;
				u->in[0] = Y;
				if (newax && axis == 0) {
					u->op = OP_IDENTITY;
				} else if (newax) {
					int64_t perm[IR_MAX_RANK];
					lx_move_perm(r, 0, (int)axis, perm);
					u->op = OP_TRANSPOSE;
					ir_attr_set_ints(u, "perm", r, perm);
				} else if (axis == 0 && r >= 2) {
					ir_dim d[IR_MAX_RANK];
					d[0] = ir_dim_mul(Y->shape.d[0], Y->shape.d[1]);
					for (int j = 2; j < r; j++)
						d[j - 1] = Y->shape.d[j];
					ir_value **in = arena_array(X->A, 2, sizeof *in);
					in[0] = Y;
					in[1] = dims_const(X, g, r - 1, d);
					u->in = in;
					u->nin = 2;
					u->op = OP_RESHAPE;
				} else {
					/* torch.cat(outs, a) of per-step [e0.., e_a, ..]: time moved
					 * next to axis a, then merged into it (T * e_a) */
					int64_t perm[IR_MAX_RANK];
					lx_move_perm(r, 0, (int)axis, perm);
					ir_node *tr = ir_build_node(&X->bld, g, OP_TRANSPOSE, 1, NULL, 1);
					tr->in[0] = Y;
					ir_attr_set_ints(tr, "perm", r, perm);
					ir_value *yt = post(X, tr, NULL)->out[0];
					ir_dim d[IR_MAX_RANK];
					for (int j = 1; j < r; j++)
						d[j - 1] = Y->shape.d[j];
					d[axis] = ir_dim_mul(Y->shape.d[0], Y->shape.d[axis + 1]);
					ir_value **in = arena_array(X->A, 2, sizeof *in);
					in[0] = yt;
					in[1] = dims_const(X, g, r - 1, d);
					u->in = in;
					u->nin = 2;
					u->op = OP_RESHAPE;
				}
			} else if (u->op == OP_SEQAT && k == 0) {
				u->op = OP_GATHER;
				u->nattrs = 0;
				ir_attr_set_int(u, "axis", 0);
				u->in[0] = Y;
			} else if (u->op == OP_SEQLEN && X->stops) {
				/* the steps run: the counter ran_state carries, as int64 [] */
				if (!X->ran)
					return fail(X, "internal: SequenceLength '%s' of '%s' has no count of the steps "
						    "run", u->name, S->name);
				ir_node *rs = ir_build_node(&X->bld, g, OP_RESHAPE, 2, NULL, 1);
				rs->in[0] = X->ran;
				rs->in[1] = lx_ints_const(g, 0, NULL);
				ir_value *cnt = post(X, rs, NULL)->out[0];
				u->op = OP_CAST;
				u->nattrs = 0;
				ir_attr_set_int(u, "to", DT_I64);
				u->in[0] = cnt;
			} else if (u->op == OP_SEQLEN) {
				u->op = OP_IDENTITY;
				u->nattrs = 0;
				u->in[0] = dims_const(X, g, 1, &X->T);
				u->in[0]->shape.rank = 0;
			} else {
				return fail(X, "the sequence '%s' it accumulates is read by %s '%s'; cellc supports "
					    "ConcatFromSequence, SequenceAt and SequenceLength there", S->name,
					    ir_op_name(u->op), u->name);
			}
		}
	}
	return 0;
}

/* ---- per-step reads of a split sequence, integer carried values ------------------- */

/* Reads of a split view (onnx_split_view: a Loop over torch.unbind(x)) in the
 * body become Gather of x, so that x[t] at the iteration number becomes a
 * sequence input (map_iter). */
static void split_reads(lx *X)
{
	ir_graph *b = X->b;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *extra;
		if (b->nodes[i]->op != OP_SEQAT || !onnx_split_at(b, b->nodes[i], &extra) || !extra)
			continue;
		ir_node **nodes = arena_array(b->A, (size_t)b->nnodes + 1, sizeof *nodes);
		memcpy(nodes, b->nodes, (size_t)(i + 1) * sizeof *nodes);
		nodes[i + 1] = extra;
		memcpy(nodes + i + 2, b->nodes + i + 1, (size_t)(b->nnodes - i - 1) * sizeof *nodes);
		ir_set_nodes(b, nodes, b->nnodes + 1);
		i++;
	}
}

/* How many float32 parts carry an integer or bool value exactly (each part
 * an integer below 2^24 in magnitude); 0 for other dtypes. */
static int int_parts(ir_dtype dt)
{
	switch (dt) {
	case DT_BOOL: case DT_I8: case DT_U8: case DT_I16: case DT_U16:
		return 1;
	case DT_I32: case DT_U32:
		return 2;
	case DT_I64:
		return 3;
	default:
		return 0;
	}
}

typedef struct nlist {
	ir_graph *g;
	ir_node **v;
	int n, cap;
} nlist;

/* A node op(a[, b]) (Cast: to `to`) appended to l; its result, or `res`. */
static ir_value *nl_op(lx *X, nlist *l, ir_op op, ir_value *a, ir_value *b, ir_dtype to, ir_value *res)
{
	ir_node *nd = ir_build_node(&X->bld, l->g, op, b ? 2 : 1, NULL, 1);
	nd->in[0] = a;
	if (b)
		nd->in[1] = b;
	if (op == OP_CAST)
		ir_attr_set_int(nd, "to", to);
	nd->out[0] = res ? res : temp(X, l->g, op == OP_CAST ? to : a->dtype);
	nd->out[0]->producer = nd;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		l->v = arena_grow(X->A, l->v, (size_t)l->n, (size_t)cap, sizeof *l->v);
		l->cap = cap;
	}
	l->v[l->n++] = nd;
	return nd->out[0];
}

static ir_value *i64_scalar(ir_graph *g, int64_t v)
{
	ir_shape scalar = {.rank = 0};
	return ir_const_new(g, ir_unique_name(g, "radix"), DT_I64, &scalar, &v);
}

/* v (integer or bool) -> its float32 parts, most significant first: with w
 * = int64(v), a = w / 2^48, b = (w - a 2^48) / 2^24 and c the rest (three
 * parts: |a| <= 2^15, |b|, |c| < 2^24; 32 bits: two, without a; 16 bits or
 * bool: v itself). */
static void int_encode(lx *X, nlist *l, ir_value *v, int parts, ir_value **out)
{
	if (parts == 1) {
		out[0] = nl_op(X, l, OP_CAST, v, NULL, DT_F32, NULL);
		return;
	}
	ir_value *w = v->dtype == DT_I64 ? v : nl_op(X, l, OP_CAST, v, NULL, DT_I64, NULL);
	for (int p = 0; p < parts - 1; p++) {
		ir_value *radix = i64_scalar(l->g, (int64_t)1 << (24 * (parts - 1 - p)));
		ir_value *hi = nl_op(X, l, OP_DIV, w, radix, DT_UNDEF, NULL);
		out[p] = nl_op(X, l, OP_CAST, hi, NULL, DT_F32, NULL);
		w = nl_op(X, l, OP_SUB, w, nl_op(X, l, OP_MUL, hi, radix, DT_UNDEF, NULL), DT_UNDEF, NULL);
	}
	out[parts - 1] = nl_op(X, l, OP_CAST, w, NULL, DT_F32, NULL);
}

/* The inverse: the sum of part_p 2^(24 (parts - 1 - p)) in int64, as dt
 * (into res when given). */
static ir_value *int_decode(lx *X, nlist *l, ir_value **in, int parts, ir_dtype dt, ir_value *res)
{
	if (parts == 1)
		return nl_op(X, l, OP_CAST, in[0], NULL, dt, res);
	ir_value *w = nl_op(X, l, OP_CAST, in[0], NULL, DT_I64, NULL);
	for (int p = 1; p < parts; p++) {
		w = nl_op(X, l, OP_MUL, w, i64_scalar(l->g, (int64_t)1 << 24), DT_UNDEF, NULL);
		w = nl_op(X, l, OP_ADD, w, nl_op(X, l, OP_CAST, in[p], NULL, DT_I64, NULL), DT_UNDEF,
			  p == parts - 1 && dt == DT_I64 ? res : NULL);
	}
	return dt == DT_I64 ? w : nl_op(X, l, OP_CAST, w, NULL, dt, res);
}

/* The recurrence's per-step outputs are float32 too: an integer or bool one
 * (a greedy decoder's token, `toks.append(logits.argmax(1))`) is stacked
 * as its int_encode parts, encoded at the end of the body (nodes added to
 * *tail), and the stacked parts decoded after the recurrence into the
 * stacked value (*post).  Returns the number of errors. */
static int int_outputs(lx *X, nlist *tail, nlist *post)
{
	int ny = X->ny;
	for (int j = 0; j < ny; j++) {
		ir_value *y = X->y_body[j];
		int parts = y->dtype == DT_F32 ? 0 : int_parts(y->dtype);
		if (!parts)
			continue;
		/* an index into an axis of fewer than 2^24 elements (the argmax
		 * of the logits) is exact in one part */
		if (ir_index_exact_in_f32(y))
			parts = 1;
		if (X->ny + parts - 1 > MAXIO)
			return fail(X, "has more than %d per-step outputs", MAXIO);
		ir_value *pout[3], *pfin[3];
		int_encode(X, tail, y, parts, pout);
		ir_value *fin = X->y_final[j];
		for (int p = 0; p < parts; p++) {
			int at = p ? X->ny++ : j;       /* part 0 in place of y, the others appended */
			pfin[p] = fin ? temp(X, X->g, DT_F32) : NULL;
			X->y_body[at] = pout[p];
			X->y_final[at] = pfin[p];
			X->y_rev[at] = X->y_rev[j];
			X->y_axis[at] = X->y_axis[j];
		}
		if (fin) {
			fin->producer = NULL;
			int_decode(X, post, pfin, parts, y->dtype, fin);
		}
	}
	return 0;
}

/* The recurrence carries float32 values: a carried integer or bool (a step
 * counter: `k += 1; if k % F == 0: k = 1`) is carried as its int_encode
 * parts, exactly for every value of its type.  The body decodes them at its
 * start and encodes the new value at its end; the initial value is encoded
 * before the recurrence (nodes pushed now) and the final value decoded after
 * it (*post: nodes to push after build).  Returns the number of errors. */
static int int_states(lx *X, nlist *post)
{
	ir_value *init[MAXIO], *in[MAXIO], *out[MAXIO], *fin[MAXIO];
	ir_graph *b = X->b;
	nlist head = {.g = b}, tail = {.g = b}, before = {.g = X->g};
	int n = 0;
	for (int k = 0; k < X->nst; k++) {
		ir_value *si = X->st_in[k], *so = X->st_out[k];
		int parts = si->dtype == DT_F32 ? 0 : int_parts(si->dtype);
		if (n + (parts ? parts : 1) > MAXIO)
			return fail(X, "has more than %d carried values", MAXIO);
		if (!parts) {
			init[n] = X->st_init[k], in[n] = si, out[n] = so, fin[n++] = X->st_final[k];
			continue;
		}
		ir_value *pin[3], *pout[3], *pinit[3], *pfin[3];
		for (int p = 0; p < parts; p++) {
			pin[p] = ir_value_new(b, ir_unique_name(b, si->name), VAL_STEP, DT_F32);
			pin[p]->shape = si->shape;
		}
		ir_value *dec = temp(X, b, si->dtype);
		ir_replace_uses(b, si, dec, NULL, IR_USES_NESTED | IR_USES_GRAPHS | IR_USES_OUTPUTS);
		for (int j = 0; j < X->ny; j++)         /* a per-step output that is the carried value */
			if (X->y_body[j] == si)
				X->y_body[j] = dec;
		int_decode(X, &head, pin, parts, si->dtype, dec);
		int_encode(X, &tail, so == si ? dec : so, parts, pout);
		int_encode(X, &before, X->st_init[k], parts, pinit);
		for (int p = 0; p < parts; p++) {
			pfin[p] = X->st_final[k] ? temp(X, X->g, DT_F32) : NULL;
			init[n] = pinit[p], in[n] = pin[p], out[n] = pout[p], fin[n++] = pfin[p];
		}
		if (X->st_final[k]) {
			ir_value *f = X->st_final[k];
			f->producer = NULL;
			int_decode(X, post, pfin, parts, si->dtype, f);
		}
	}
	if (int_outputs(X, &tail, post))
		return 1;
	if (!head.n && !tail.n)
		return 0;
	/* the body: decoding, its nodes, encoding */
	ir_node **nodes = arena_array(X->A, (size_t)(head.n + b->nnodes + tail.n) + 1, sizeof *nodes);
	memcpy(nodes, head.v, (size_t)head.n * sizeof *nodes);
	memcpy(nodes + head.n, b->nodes, (size_t)b->nnodes * sizeof *nodes);
	memcpy(nodes + head.n + b->nnodes, tail.v, (size_t)tail.n * sizeof *nodes);
	ir_set_nodes(b, nodes, head.n + b->nnodes + tail.n);
	for (int i = 0; i < before.n; i++) {
		push(X, before.v[i]);
		if (infer_node(X->g, before.v[i], X->D))
			return 1;
	}
	X->nst = n;
	memcpy(X->st_init, init, (size_t)n * sizeof *init);
	memcpy(X->st_in, in, (size_t)n * sizeof *in);
	memcpy(X->st_out, out, (size_t)n * sizeof *out);
	memcpy(X->st_final, fin, (size_t)n * sizeof *fin);
	return 0;
}

/* ---- Loop ------------------------------------------------------------------------- */

static ir_node *producer_outer(const ir_value *v) { return v ? v->producer : NULL; }

/* v is the iteration number, or v = Unsqueeze(it, [0]) of it; off: +1 when
 * v = Unsqueeze(it + 1, [0]). */
static int is_iter_plus(const ir_graph *b, const ir_value *v, const ir_value *it, int64_t off)
{
	ir_node *u = producer_in(b, v);
	if (!u || u->op != OP_UNSQUEEZE || u->nin < 2 || !ir_value_is_const(u->in[1]) ||
	    ir_shape_const_numel(&u->in[1]->shape) != 1 || ir_const_int(u->in[1], 0) != 0)
		return 0;
	const ir_value *x = u->in[0];
	if (off == 0)
		return x == it;
	ir_node *a = producer_in(b, x);
	if (!a || a->op != OP_ADD)
		return 0;
	for (int k = 0; k < 2; k++)
		if (a->in[k] == it && ir_value_is_const(a->in[1 - k]) &&
		    ir_shape_const_numel(&a->in[1 - k]->shape) == 1 && ir_const_int(a->in[1 - k], 0) == off)
			return 1;
	return 0;
}

/* ---- the bound a condition puts on the iterations (lower.h) --------------------- */

static int const_scalar_int(const ir_value *v, int64_t *k)
{
	if (!v || !ir_value_is_const(v) || ir_shape_const_numel(&v->shape) != 1 ||
	    (v->dtype != DT_I64 && v->dtype != DT_I32))
		return 0;
	*k = ir_const_int(v, 0);
	return 1;
}

/* v = x + k (Add with a one-element integer constant, Identity): x, k added. */
static const ir_value *strip_add(const ir_graph *b, const ir_value *v, int64_t *k)
{
	for (int depth = 0; depth < 16; depth++) {
		ir_node *u = producer_in(b, v);
		int64_t c;
		if (u && u->op == OP_IDENTITY && u->nin == 1) {
			v = u->in[0];
		} else if (u && u->op == OP_ADD && u->nin == 2 && const_scalar_int(u->in[1], &c)) {
			*k += c;
			v = u->in[0];
		} else if (u && u->op == OP_ADD && u->nin == 2 && const_scalar_int(u->in[0], &c)) {
			*k += c;
			v = u->in[1];
		} else {
			break;
		}
	}
	return v;
}

/* Value a of Loop n's body is c0 + i + *k at iteration i (from 0): the
 * iteration number plus a constant, or a carried integer that starts at a
 * constant and goes up by 1 an iteration (read before or after its
 * increment). */
static int counter_value(const ir_node *n, const ir_value *a, int64_t *k)
{
	const ir_graph *b = n->body;
	a = strip_add(b, a, k);
	if (a == b->inputs[0])
		return 1;
	int N = n->nin - 2;
	for (int j = 0; j < N && 2 + j < b->ninputs && 1 + j < b->noutputs; j++) {
		int64_t c0, step = 0;
		const ir_value *in = b->inputs[2 + j];
		if (a != in || strip_add(b, b->outputs[1 + j], &step) != in || step != 1 ||
		    !const_scalar_int(n->in[2 + j], &c0))
			continue;
		*k += c0;       /* (the incremented value c + 1 was stripped to c, k + 1) */
		return 1;
	}
	return 0;
}

/* v is a constant false (through Identity nodes: a branch's output). */
static int is_false(const ir_value *v)
{
	for (int depth = 0; v && v->producer && v->producer->op == OP_IDENTITY && depth < 16; depth++)
		v = v->producer->in[0];
	return v && ir_value_is_const(v) && ir_shape_const_numel(&v->shape) == 1 && ir_const_int(v, 0) == 0;
}

/* onnx_loop_cond_limit, with the comparison node found (*term). */
static const ir_value *cond_limit(const ir_node *n, int64_t *off, ir_node **term)
{
	const ir_graph *b = n->body;
	if (n->op != OP_LOOP || !b || b->noutputs < 1 || b->ninputs < 2 || n->nin < 2)
		return NULL;
	const ir_value *stack[32];
	int top = 0;
	stack[top++] = b->outputs[0];
	while (top > 0) {
		const ir_value *v = stack[--top];
		ir_node *u = producer_in(b, v);
		if (!u)
			continue;
		if ((u->op == OP_AND || u->op == OP_IDENTITY || u->op == OP_CAST) && top + u->nin <= (int)COUNTOF(stack)) {
			for (int k = 0; k < u->nin; k++)
				stack[top++] = u->in[k];
			continue;
		}
		/* `a and b` in Python short-circuits: If(a) then b else false, which
		 * inference makes Where(a, b, false) */
		if (u->op == OP_IF && u->nin == 1 && u->nout == 1 && top < (int)COUNTOF(stack)) {
			ir_attr *eb = ir_attr_find(u, "else_branch");
			if (eb && eb->g && eb->g->noutputs == 1 && is_false(eb->g->outputs[0]))
				stack[top++] = u->in[0];
			continue;
		}
		if (u->op == OP_WHERE && u->nin == 3 && is_false(u->in[2]) && top + 2 <= (int)COUNTOF(stack)) {
			stack[top++] = u->in[0];
			stack[top++] = u->in[1];
			continue;
		}
		int less = u->op == OP_LESS || u->op == OP_LESSEQ;
		int greater = u->op == OP_GREATER || u->op == OP_GREATEREQ;
		if ((!less && !greater) || u->nin != 2)
			continue;
		const ir_value *a = u->in[less ? 0 : 1], *X = u->in[less ? 1 : 0];
		if (!X || X->graph == b)
			continue;       /* the limit comes from outside the loop */
		int64_t k = 0;
		if (!counter_value(n, a, &k))
			continue;
		/* iteration i runs when i == 0 or c0 + (i - 1) + k < X */
		*off = 1 - k + (u->op == OP_LESSEQ || u->op == OP_GREATEREQ);
		*term = u;
		return X;
	}
	return NULL;
}

const ir_value *onnx_loop_cond_limit(const ir_node *n, int64_t *off)
{
	ir_node *term;
	return cond_limit(n, off, &term);
}

/* The condition's bound term that says what the recurrence's T says
 * anyway (X + off = T: `i + 1 < max_len` of a `for` with a break, `i <
 * len(x)` of a loop over x) is true for every step but the last, after
 * which the recurrence ends: it becomes true, so that the condition is
 * what the data say alone (a stream of one-step calls is not ended by its
 * T of 1) and the counter, when nothing else reads it, goes.  Only where
 * the term is read once, by the conjunction. */
static void drop_bound_term(lx *X)
{
	ir_graph *b = X->b;
	int64_t off;
	ir_node *term;
	const ir_value *lim = cond_limit(X->n, &off, &term);
	ir_dim T;
	if (!lim || !infer_is_const(lim) || ir_shape_const_numel(&lim->shape) != 1 || lim->dtype != DT_I64)
		return;
	T = infer_elem_dim(lim, 0);
	if ((off && !ir_sym_offset(ir_root(X->g), T, off, &T)) || !ir_dim_eq(T, X->T))
		return;
	ir_value *t = term->out[0];
	int uses = 0;
	for (int i = 0; i < b->nnodes; i++)
		for (int k = 0; k < b->nodes[i]->nin; k++)
			uses += b->nodes[i]->in[k] == t;
	for (int k = 0; k < b->noutputs; k++)
		uses += b->outputs[k] == t;
	if (uses != 1)
		return;
	uint8_t one = 1;
	ir_value *yes = ir_const_new(b, ir_unique_name(b, "true"), DT_BOOL, &t->shape, &one);
	ir_replace_uses(b, t, yes, NULL, IR_USES_OUTPUTS);
}

/* The outer tensor X indexed by the step: its first T rows along axis 0. */
static ir_value *first_rows(lx *X, ir_value *x)
{
	ir_dim d0 = x->shape.d[0], diff;
	if (ir_dim_eq(d0, X->T))
		return x;
	/* range(x.size(0) - 1) over x: a trip count derived from x's length,
	 * fewer steps than x has; x's first T rows end that many before its end */
	int64_t en = X->T.k;
	if (!ir_dim_is_const(d0) && !ir_dim_is_const(X->T) && infer_mono_sub(X->g, X->T, d0, &diff) &&
	    infer_mono_is_const(diff) && diff.k < 0)
		en = diff.k;
	else if (!ir_dim_is_const(d0) || !ir_dim_is_const(X->T) || X->T.k > d0.k) {
		const ir_graph *root = ir_root(X->g);
		int ts = ir_dim_one_sym(X->T);
		const char *in = ts >= 0 ? root->sym_value[ts] : NULL;
		fail(X, "the loop runs %s iterations but indexes '%s' (%s) by the iteration number%s%s%s%s",
		     ir_dim_str(X->A, root, X->T), x->name, shp(X, &x->shape),
		     in ? " (input '" : "", in ? in : "",
		     in ? "' says how many at run time; to compile for one value, bind it: --bind " : "",
		     in ? arena_printf(X->A, "%s=N)", in) : "");
		return NULL;
	}
	int64_t st = 0, ax = 0, sp = 1;
	ir_node *nd = ir_build_node(&X->bld, X->g, OP_SLICE, 5, NULL, 1);
	nd->in[0] = x;
	nd->in[1] = lx_ints_const(X->g, 1, &st);
	nd->in[2] = lx_ints_const(X->g, 1, &en);
	nd->in[3] = lx_ints_const(X->g, 1, &ax);
	nd->in[4] = lx_ints_const(X->g, 1, &sp);
	return lx_pre(X, nd);
}

/* Whether body node u is x[it] (a Gather along *gax: *gather) or
 * x[it:it+1] (a Slice along axis 0, step 1: *slice) of an outer x or a
 * constant of the body. */
static int iter_select(const ir_graph *b, const ir_node *u, const ir_value *it, int *gather, int *slice,
		       int64_t *gax)
{
	ir_value *x = u->nin > 0 ? u->in[0] : NULL;
	if (!x || (x->graph == b && !ir_value_is_const(x)) || x->shape.rank < 1 || !u->out[0])
		return 0;
	*gax = ir_attr_int(u, "axis", 0);
	*gather = u->op == OP_GATHER && u->in[1] == it && *gax >= -x->shape.rank && *gax < x->shape.rank;
	*slice = u->op == OP_SLICE && u->nin >= 3 && is_iter_plus(b, u->in[1], it, 0) &&
		 is_iter_plus(b, u->in[2], it, 1);
	if (*slice && u->nin > 3 && u->in[3]) {
		ir_value *ax = u->in[3];
		*slice = ir_value_is_const(ax) && ir_shape_const_numel(&ax->shape) == 1 &&
			 (ir_const_int(ax, 0) == 0 || ir_const_int(ax, 0) == -x->shape.rank);
	}
	if (*slice && u->nin > 4 && u->in[4])
		*slice = ir_value_is_const(u->in[4]) && ir_shape_const_numel(&u->in[4]->shape) == 1 &&
			 ir_const_int(u->in[4], 0) == 1;
	return *gather || *slice;
}

/* Node u (iter_select's) replaced by a sequence input of the recurrence:
 * its output becomes the per-step value, the node dead.  The number of
 * errors. */
static int iter_to_seq(lx *X, ir_node *u, int gather, int slice, int64_t gax)
{
	ir_graph *b = X->b;
	ir_value *x = u->in[0];
	if (X->nseq == MAXIO)
		return fail(X, "has more than %d per-step inputs", MAXIO);
	if (x->graph == b)      /* a constant of the body: the same one outside */
		x = ir_const_new(X->g, ir_unique_name(X->g, "loop_const"), x->dtype, &x->shape, x->data);
	if (gather && gax < 0)
		gax += x->shape.rank;
	if (gather && gax == 1 && x->shape.rank == 3 && ir_dim_eq(x->shape.d[1], X->T)) {
		/* x[:, t] of [B, T, N]: a sequence input with time axis 1 */
		ir_value *v = u->out[0];
		v->kind = VAL_STEP;
		v->producer = NULL;
		v->dtype = x->dtype;
		v->shape = (ir_shape){.rank = 2, .d = {x->shape.d[0], x->shape.d[2]}};
		X->seq_ax[X->nseq] = 1;
		X->seq_outer[X->nseq] = x;
		X->seq_body[X->nseq++] = v;
		for (int k = 0; k < u->nout; k++)
			u->out[k] = NULL;
		u->nout = 0;
		return 0;
	}
	if (gather && gax != 0) {
		/* x[:, t] otherwise: time to axis 0 first */
		int64_t perm[IR_MAX_RANK];
		lx_move_perm(x->shape.rank, (int)gax, 0, perm);
		if (!(x = lx_pre_transpose(X, x, perm)))
			return 1;
	}
	ir_value *xs = first_rows(X, x);
	if (!xs)
		return 1;
	if (slice) {
		/* x[t:t+1] = the step's row of x with a size-1 axis 1 */
		int64_t one = 1;
		ir_node *nd = ir_build_node(&X->bld, X->g, OP_UNSQUEEZE, 2, NULL, 1);
		nd->in[0] = xs;
		nd->in[1] = lx_ints_const(X->g, 1, &one);
		if (!(xs = lx_pre(X, nd)))
			return 1;
	}
	ir_value *v = u->out[0];
	v->kind = VAL_STEP;
	v->producer = NULL;
	v->dtype = xs->dtype;
	v->shape.rank = xs->shape.rank - 1;
	for (int k = 1; k < xs->shape.rank; k++)
		v->shape.d[k - 1] = xs->shape.d[k];
	X->seq_outer[X->nseq] = xs;
	X->seq_body[X->nseq++] = v;
	for (int k = 0; k < u->nout; k++)
		u->out[k] = NULL;  /* the node is dead now */
	u->nout = 0;
	return 0;
}

/* Other arithmetic on the iteration number it (step schedules): it =
 * int64(t - 1) from the recurrence's 1-based step number t (has_step). */
static void iter_from_step(lx *X, ir_value *it)
{
	ir_graph *b = X->b;
	if (X->step_it) {
		ir_replace_uses(b, it, X->step_it, NULL, IR_USES_OUTPUTS);
		return;
	}
	ir_shape scalar = {.rank = 0};
	float onef = 1.0f;
	X->step = ir_value_new(b, ir_unique_name(b, "step_t"), VAL_STEP, DT_F32);
	X->step->shape = scalar;
	ir_node *sub = ir_build_node(&X->bld, b, OP_SUB, 2, NULL, 1);
	ir_node *cast = ir_build_node(&X->bld, b, OP_CAST, 1, NULL, 1);
	sub->in[0] = X->step;
	sub->in[1] = ir_const_new(b, ir_unique_name(b, "one"), DT_F32, &scalar, &onef);
	sub->out[0] = temp(X, b, DT_F32);
	cast->in[0] = sub->out[0];
	ir_attr_set_int(cast, "to", DT_I64);
	cast->out[0] = temp(X, b, DT_I64);
	X->step_it = cast->out[0];
	ir_replace_uses(b, it, cast->out[0], NULL, IR_USES_OUTPUTS);
	prepend_body(b, cast);
	prepend_body(b, sub);
}

/* Uses of the iteration number that are x[t] or x[t:t+1] of an outer x
 * become sequence inputs.  Returns the number of errors. */
static int map_iter(lx *X, ir_value *it)
{
	ir_graph *b = X->b;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *u = b->nodes[i];
		int gather, slice;
		int64_t gax;
		if (!iter_select(b, u, it, &gather, &slice, &gax))
			continue;
		int err = iter_to_seq(X, u, gather, slice, gax);
		if (err)
			return err;
	}
	ir_drop_dead(b, IR_DEAD_LOCAL);
	if (body_uses(b, it, NULL))
		iter_from_step(X, it);
	return 0;
}

/* A carried int64 scalar that starts at a constant c0 and goes up by 1 an
 * iteration (`i = 0 ... i += 1` scripted, the index of a `for x_t in
 * x.unbind(0)` with a `break`) is c0 plus the iteration number: its reads
 * but its increment read that (it + c0), so that x[i] becomes a per-step
 * input as x[it] does (map_iter) and a stream of steps indexes its own. */
static void counters_to_iter(lx *X, int N, const int *acc, ir_value *it)
{
	ir_graph *b = X->b;
	ir_node *n = X->n;
	for (int j = 0; j < N; j++) {
		ir_value *in = b->inputs[2 + j];
		int64_t c0, one;
		ir_node *inc = producer_in(b, b->outputs[1 + j]);
		if (acc[j] || in->dtype != DT_I64 || in->shape.rank != 0 || !const_scalar_int(n->in[2 + j], &c0) ||
		    n->in[2 + j]->dtype != DT_I64 || !inc || inc->op != OP_ADD || inc->nin != 2 ||
		    !((inc->in[0] == in && const_scalar_int(inc->in[1], &one)) ||
		      (inc->in[1] == in && const_scalar_int(inc->in[0], &one))) || one != 1)
			continue;
		ir_value *v = it;
		if (c0) {
			ir_node *add = ir_build_node(&X->bld, b, OP_ADD, 2, NULL, 1);
			add->in[0] = it;
			add->in[1] = i64_scalar(b, c0);
			add->out[0] = v = temp(X, b, DT_I64);
			v->producer = add;
			prepend_body(b, add);
		}
		ir_replace_uses(b, in, v, inc, IR_USES_NESTED | IR_USES_GRAPHS | IR_USES_OUTPUTS);
	}
}

/* The initial condition holds: constant true, or a comparison of a size
 * (a dimension, at least 1) with a constant that every size passes
 * (`max_len > 0`, PyTorch's guard before a `for` loop with a break). */
static int cond_holds(const ir_value *cond, int depth)
{
	if (infer_is_const(cond) && cond->data && ir_shape_const_numel(&cond->shape) == 1)
		return infer_elem_int(cond, 0) != 0;
	const ir_node *u = cond->producer;
	if (!u || u->nin != 2 || ir_shape_const_numel(&cond->shape) != 1)
		return 0;
	if (u->op == OP_AND)    /* `i < n and not done`: each term */
		return depth < 8 && cond_holds(u->in[0], depth + 1) && cond_holds(u->in[1], depth + 1);
	int less = u->op == OP_LESS || u->op == OP_LESSEQ, greater = u->op == OP_GREATER || u->op == OP_GREATEREQ;
	int eq = u->op == OP_LESSEQ || u->op == OP_GREATEREQ;
	if (!less && !greater)
		return 0;
	/* big > small */
	const ir_value *big = u->in[greater ? 0 : 1], *small = u->in[greater ? 1 : 0];
	if (!infer_is_const(big) || !infer_is_const(small) || ir_shape_const_numel(&big->shape) != 1 ||
	    ir_shape_const_numel(&small->shape) != 1 || !small->data || small->dtype != DT_I64 ||
	    big->dtype != DT_I64)
		return 0;
	ir_dim d = infer_elem_dim(big, 0);
	int64_t k = infer_elem_int(small, 0);
	if (infer_mono_is_const(d))
		return eq ? d.k >= k : d.k > k;
	return d.k >= 1 && (eq ? k <= 1 : k < 1);      /* a size is at least 1 */
}

/* The trip count: M, a compile-time constant of at least 1 (or a
 * dimension, a size input), or, when M is absent or the largest int64 (a
 * `while` or a `for` with a break), the bound the condition puts on it
 * (onnx_loop_cond_limit: `i + 1 < max_len`).  X->T the steps;
 * the initial condition must hold. */
static int loop_trip_count(lx *X, ir_value *M, ir_value *cond)
{
	ir_node *n = X->n;
	int unbounded = !M || (infer_is_const(M) && M->data && ir_shape_const_numel(&M->shape) == 1 &&
			       infer_elem_int(M, 0) >= INT32_MAX);
	if (unbounded) {
		int64_t off = 0;
		const ir_value *lim = onnx_loop_cond_limit(n, &off);
		if (!lim)
			return fail(X, "%s and its condition bounds the iterations by no value cellc can follow "
				    "(a counter compared with a limit, `i < n`); cellc sizes a loop's outputs by a "
				    "bound on its steps: write the loop as `for i in range(max_len):` with a `break`",
				    M ? "trip count M is the largest int64 (no bound)" : "has no trip count M");
		if (!infer_is_const(lim) || ir_shape_const_numel(&lim->shape) != 1)
			return fail(X, "the limit '%s' of its condition is computed at run time (from %s); cellc "
				    "needs a constant, a dimension of an input or an int64 input of one element",
				    lim->name, ir_source_inputs(X->A, lim, 64));
		ir_dim T = infer_elem_dim(lim, 0);
		if (off && !ir_sym_offset(ir_root(X->g), T, off, &T))
			return fail(X, "the limit '%s' of its condition plus %lld is not a size cellc can express",
				    lim->name, (long long)off);
		X->T = T;
	} else {
		if (!infer_is_const(M) || ir_shape_const_numel(&M->shape) != 1)
			return fail(X, "trip count M ('%s') is not a compile-time constant; cellc needs a constant, a "
				    "dimension of an input (such as Shape(x)[0]) or an int64 input of one element (a "
				    "size given at run time, with arithmetic by constants); %s", M->name,
				    M->kind == VAL_INPUT ? arena_printf(X->A, "a graph input can be bound with --bind %s=FILE.pb",
									 M->name)
				    : arena_printf(X->A, "it is computed at run time from %s",
						   ir_source_inputs(X->A, M, 64)));
		X->T = infer_elem_dim(M, 0);
	}
	if (infer_mono_is_const(X->T) && X->T.k < 1)
		return fail(X, "trip count M is %lld; cellc compiles loops that run at least once", (long long)X->T.k);
	if (X->T.k < 1)
		return fail(X, "trip count M is %s, which is not a dimension size",
			    infer_mono_str(X->A, ir_root(X->g), X->T));
	if (cond && !cond_holds(cond, 0)) {
		if (infer_is_const(cond) && cond->data && ir_shape_const_numel(&cond->shape) == 1)
			return fail(X, "initial condition is false: the loop never runs, which cellc does not compile");
		return fail(X, "Loop with a data-dependent initial condition: '%s' is computed at run time from "
			    "%s; cellc compiles loops whose first iteration always runs", cond->name,
			    ir_source_inputs(X->A, cond, 64));
	}
	return 0;
}

/* The body's inputs: the iteration number it, the condition (always true),
 * the carried values; a carried sequence (SequenceEmpty, extended by
 * SequenceInsert) is an accumulation: acc[k], of the per-step values acc_y[k]. */
static int loop_body_inputs(lx *X, int N, ir_value *it, int *acc, ir_value **acc_y)
{
	ir_node *n = X->n;
	ir_graph *b = X->b;
	ir_value *cin = b->inputs[1];
	it->dtype = DT_I64;
	it->shape.rank = 0;
	uint8_t one = 1;
	ir_shape scalar = {.rank = 0};
	ir_value *yes = ir_const_new(b, ir_unique_name(b, "true"), DT_BOOL, &scalar, &one);
	ir_replace_uses(b, cin, yes, NULL, IR_USES_OUTPUTS);
	for (int k = 0; k < N; k++) {
		ir_value *init = n->in[2 + k], *in = b->inputs[2 + k], *out = b->outputs[1 + k];
		ir_node *pe = producer_outer(init);
		if (!init)
			return fail(X, "carried value %d has no initial value", k);
		if (pe && pe->op == OP_SEQEMPTY) {
			ir_node *ins = producer_in(b, out), *only = NULL;
			if (!ins || ins->op != OP_SEQINSERT || ins->in[0] != in || (ins->nin > 2 && ins->in[2]) ||
			    body_uses(b, in, &only) != 1) {
				return fail(X, "carried sequence '%s' is not an accumulation (SequenceInsert(%s, y) "
					    "at the end, nothing else reading it); cellc supports sequences only in "
					    "that form", in->name, in->name);
			}
			acc[k] = 1;
			acc_y[k] = ins->in[1];
			b->outputs[1 + k] = ins->in[1];
			continue;
		}
		in->dtype = init->dtype;
		in->shape = init->shape;
	}
	return 0;
}

/* The recurrence's states (the carried values but accumulations) and stacked
 * outputs (the scan outputs, then the accumulations: stacked[k], the
 * accumulation's tensor that its readers read after the loop). */
static int seq_live(const ir_graph *g, const ir_value *v);

/* Carried value k is read by nothing but what makes its next value, and
 * nothing reads its final value (a counter whose reads counters_to_iter
 * and drop_bound_term took): it is not carried. */
static int unread_state(lx *X, int k)
{
	ir_node *n = X->n;
	ir_graph *b = X->b;
	ir_value *in = b->inputs[2 + k], *next = b->outputs[1 + k];
	if ((k < n->nout && n->out[k] && seq_live(X->g, n->out[k])) || in->id < 0 || in->id >= b->nvalues ||
	    b->values[in->id] != in)
		return 0;
	for (int j = 0; j < b->noutputs; j++)
		if (j != 1 + k && (b->outputs[j] == in || b->outputs[j] == next))
			return 0;
	b->outputs[1 + k] = b->outputs[0];     /* liveness without its own next value */
	char *needed;
	ir_live(b, NULL, 0, 0, NULL, &needed);
	b->outputs[1 + k] = next;
	return !needed[in->id];
}

static int loop_states_and_outputs(lx *X, int N, int K, const int *acc, ir_value *const *acc_y,
				   ir_value **stacked)
{
	ir_node *n = X->n;
	ir_graph *b = X->b;
	for (int k = 0; k < N; k++) {
		if (acc[k] || unread_state(X, k))
			continue;
		X->st_init[X->nst] = n->in[2 + k];
		X->st_in[X->nst] = b->inputs[2 + k];
		X->st_out[X->nst] = b->outputs[1 + k];
		X->st_final[X->nst] = k < n->nout ? n->out[k] : NULL;
		X->nst++;
	}
	if (lx_check_states(X))
		return 1;
	for (int k = 0; k < K; k++) {
		X->y_body[X->ny] = b->outputs[1 + N + k];
		X->y_final[X->ny++] = N + k < n->nout ? n->out[N + k] : NULL;
	}
	for (int k = 0; k < N; k++) {
		if (!acc[k])
			continue;
		ir_value *S = k < n->nout ? n->out[k] : NULL;
		X->y_body[X->ny] = acc_y[k];
		X->y_final[X->ny] = S ? temp(X, X->g, DT_F32) : NULL;
		stacked[k] = X->y_final[X->ny++];
	}
	return 0;
}

/* The loop stops when its condition cout (one bool) is false: a state of
 * the recurrence, [1, 1] f32, 1 at the start, its new value cout as 1 or 0,
 * its body input of the role condition (ir_rec_cond_state). */
static int cond_state(lx *X, ir_value *cout)
{
	ir_graph *b = X->b;
	if (ir_shape_const_numel(&cout->shape) != 1 || int_parts(cout->dtype) != 1)
		return fail(X, "the body's condition output '%s' is %s %s; a Loop's condition is one bool",
			    cout->name, ir_dtype_name(cout->dtype), shp(X, &cout->shape));
	if (X->nst >= MAXIO)
		return fail(X, "has more than %d carried values", MAXIO);
	ir_dim one[2] = {ir_dim_const(1), ir_dim_const(1)};
	ir_shape s11 = {.rank = 2, .d = {one[0], one[1]}};
	nlist tail = {.g = b};
	ir_node *rs = ir_build_node(&X->bld, b, OP_RESHAPE, 2, NULL, 1);
	rs->in[0] = cout;
	rs->in[1] = dims_const(X, b, 2, one);
	rs->out[0] = temp(X, b, cout->dtype);
	rs->out[0]->producer = rs;
	ir_append(b, rs);
	ir_value *c = nl_op(X, &tail, OP_CAST, rs->out[0], NULL, DT_F32, NULL);
	ir_append(b, tail.v[0]);
	ir_value *in = ir_value_new(b, ir_unique_name(b, "cond"), VAL_STEP, DT_F32);
	in->shape = s11;
	in->role = IR_ROLE_CONDITION;
	float yes = 1;
	X->st_init[X->nst] = ir_const_new(X->g, ir_unique_name(X->g, "cond_init"), DT_F32, &s11, &yes);
	X->st_in[X->nst] = in;
	X->st_out[X->nst] = c;
	X->st_final[X->nst] = NULL;
	X->nst++;
	return 0;
}

/* Whether the accumulated sequence S (an output of the Loop) is read by a
 * SequenceLength. */
static int seq_len_read(const ir_graph *g, const ir_value *S)
{
	for (int i = 0; S && i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_SEQLEN && g->nodes[i]->nin > 0 && g->nodes[i]->in[0] == S)
			return 1;
	return 0;
}

/* A loop its condition may stop whose sequence a SequenceLength reads
 * (`len(toks)` after a `break`): a [1, 1] f32 state counting the steps,
 * from 0, one more at every step; its final value is the steps run (the
 * final states are the last step's), X->ran.  Exact to 2^24 steps. */
static int ran_state(lx *X)
{
	ir_graph *b = X->b;
	if (X->nst >= MAXIO)
		return fail(X, "has more than %d carried values", MAXIO);
	ir_dim one[2] = {ir_dim_const(1), ir_dim_const(1)};
	ir_shape s11 = {.rank = 2, .d = {one[0], one[1]}};
	float zero = 0, onef = 1;
	ir_value *in = ir_value_new(b, ir_unique_name(b, "ran"), VAL_STEP, DT_F32);
	in->shape = s11;
	ir_node *add = ir_build_node(&X->bld, b, OP_ADD, 2, NULL, 1);
	add->in[0] = in;
	add->in[1] = ir_const_new(b, ir_unique_name(b, "one"), DT_F32, &s11, &onef);
	add->out[0] = temp(X, b, DT_F32);
	add->out[0]->producer = add;
	ir_append(b, add);
	X->st_init[X->nst] = ir_const_new(X->g, ir_unique_name(X->g, "ran_init"), DT_F32, &s11, &zero);
	X->st_in[X->nst] = in;
	X->st_out[X->nst] = add->out[0];
	X->st_final[X->nst] = X->ran = temp(X, X->g, DT_F32);
	X->nst++;
	return 0;
}

static ir_node **expand_loop(lx *X, int *count)
{
	ir_node *n = X->n;
	ir_graph *b = X->b;
	ir_value *M = n->nin > 0 ? n->in[0] : NULL, *cond = n->nin > 1 ? n->in[1] : NULL;
	int N = n->nin > 2 ? n->nin - 2 : 0;
	if (b->ninputs != N + 2 || b->noutputs < N + 1) {
		fail(X, "body has %d inputs and %d outputs; a Loop with %d carried values needs %d inputs "
		     "and at least %d outputs", b->ninputs, b->noutputs, N, N + 2, N + 1);
		return NULL;
	}
	int K = b->noutputs - 1 - N;
	if (N + K > MAXIO) {
		fail(X, "has more than %d carried values and outputs", MAXIO);
		return NULL;
	}
	if (loop_trip_count(X, M, cond))
		return NULL;
	ir_value *it = b->inputs[0];
	int acc[MAXIO] = {0};
	ir_value *acc_y[MAXIO];
	if (loop_body_inputs(X, N, it, acc, acc_y))
		return NULL;
	counters_to_iter(X, N, acc, it);
	/* before inference: x[t:t+1] has no constant shape parameters */
	split_reads(X);
	if (map_iter(X, it))
		return NULL;
	if (X->infer(X->cx, b))
		return NULL;
	/* per-step outputs that are not float32, now that the body has dtypes:
	 * unrolled when the iterations are known (onnx_loop_needs_unroll) */
	if (onnx_loop_needs_unroll(n))
		return onnx_loop_unroll(X->g, n, X->D, X->infer, X->cx, count);
	/* an If on run-time data (`if t == 0:`) was replaced by both its
	 * branches during inference (lower_seq.c): their reads of the iteration
	 * number (x[t] in a branch) are the body's now */
	if (body_uses(b, it, NULL) && (map_iter(X, it) || X->infer(X->cx, b)))
		return NULL;
	/* a condition that is not constant true may stop the loop early (the
	 * bound's own term is the recurrence's T) */
	drop_bound_term(X);
	if (X->infer(X->cx, b))
		return NULL;
	ir_value *cout = b->outputs[0];
	X->stops = !(ir_value_is_const(cout) && ir_shape_const_numel(&cout->shape) == 1 && ir_const_int(cout, 0));
	ir_value *stacked[MAXIO] = {0};
	if (loop_states_and_outputs(X, N, K, acc, acc_y, stacked) || (X->stops && cond_state(X, cout)))
		return NULL;
	int len_read = 0;
	for (int k = 0; X->stops && k < N; k++)
		len_read |= stacked[k] && seq_len_read(X->g, n->out[k]);
	if (len_read && ran_state(X))
		return NULL;
	nlist post = {.g = X->g};
	if (int_states(X, &post) || lx_build(X))
		return NULL;
	/* stopped by its condition: the stacked outputs have the steps run */
	for (int i = 0; X->stops && i < X->nrep; i++)
		for (int k = X->nst; X->rep[i]->op == OP_RECURRENCE && k < X->rep[i]->nout; k++)
			if (X->rep[i]->out[k]) {
				X->rep[i]->out[k]->producer = X->rep[i];      /* (ir_dd_source reads it) */
				X->rep[i]->out[k]->data_dep = 1;
				X->rep[i]->out[k]->dd_axis = 0;
			}
	/* a decoded stacked output (int_outputs) is read below: the nodes so
	 * far are inferred now, the recurrence and its outputs' reshapes first */
	if (post.n)
		for (int i = 0; i < X->nrep; i++)
			if (infer_node(X->g, X->rep[i], X->D))
				return NULL;
	for (int i = 0; i < post.n; i++) {
		push(X, post.v[i]);
		if (infer_node(X->g, post.v[i], X->D))
			return NULL;
	}
	for (int k = 0; k < N; k++)
		if (stacked[k]) {
			/* after build: the stacked value's shape is known now */
			int idx = -1;
			for (int i = 0; i < X->g->nnodes; i++)
				if (X->g->nodes[i] == n)
					idx = i;
			if (seq_users(X, n->out[k], stacked[k], idx + 1))
				return NULL;
		}
	*count = X->nrep;
	return X->rep;
}

/* ---- entry points ------------------------------------------------------------------ */

ir_node **onnx_loop_expand(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int *count)
{
	lx X = {.g = g, .n = n, .b = n->body, .D = D, .A = g->A, .infer = infer, .cx = cx,
		.bld = {.origin = n->name, .opset = n->opset}};
	*count = 0;
	/* an input whose producer failed was reported already (sequences have
	 * no tensor type: they are this file's business) */
	for (int k = 0; k < n->nin; k++) {
		ir_value *v = n->in[k];
		if (v && (v->shape.rank < 0 || v->dtype == DT_UNDEF) &&
		    !(v->producer && onnx_is_seq_op(v->producer->op)))
			return NULL;
	}
	if (!n->body) {
		fail(&X, "has no body");
		return NULL;
	}
	if (n->op == OP_LOOP && onnx_loop_needs_unroll(n))
		return onnx_loop_unroll(g, n, D, infer, cx, count);
	return n->op == OP_LOOP ? expand_loop(&X, count) : lx_expand_scan(&X, count);
}

int loops_claims(const ir_node *n) { return n->op == OP_LOOP || n->op == OP_SCAN; }

/* onnx_loop_expand's callback: a body resolved by the rounds of the
 * resolving stages (compile.c). */
static int body_rounds(void *cx, ir_graph *body) { return resolve_body(body, cx); }

/* One walk of g (and of its recurrences' bodies): each Loop/Scan whose
 * inputs are settled is expanded.  The sequence nodes seq left in place with
 * settled inputs this round are settled (its accumulations). */
static int loops_walk(ir_graph *g, diag *D, int *changed)
{
	infer_set kept;
	infer_set_init(&kept);
	ir_node **keep = arena_array(g->A, (size_t)g->nnodes + 1, sizeof *keep);
	int nkeep = 0, cap = g->nnodes + 1, errs = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op == OP_RECURRENCE && n->body)
			errs += loops_walk(n->body, D, changed);
		int settled = resolve_settled(g, n, &kept);
		if (!loops_claims(n) || !settled) {
			if (settled && seq_claims(n))
				infer_set_add(&kept, n);
			keep[nkeep++] = n;
			continue;
		}
		int cnt = 0;
		ir_node **rep = onnx_loop_expand(g, n, D, body_rounds, D, &cnt);
		if (!rep) {
			/* reported: what reads its outputs waits for ever */
			errs++;
			for (int k = 0; k < n->nout; k++)
				if (n->out[k] && n->out[k]->seq == IR_TENSOR)
					n->out[k]->shape.rank = -1;
			keep[nkeep++] = n;
			continue;
		}
		if (nkeep + cnt + (g->nnodes - i) > cap) {
			int ncap = nkeep + cnt + (g->nnodes - i) + 16;
			keep = arena_grow(g->A, keep, (size_t)nkeep, (size_t)ncap, sizeof *keep);
			cap = ncap;
		}
		for (int k = 0; k < cnt; k++)
			keep[nkeep++] = rep[k];
		*changed = 1;
	}
	infer_set_free(&kept);
	ir_set_nodes(g, keep, nkeep);
	ir_recount(g);
	return errs;
}

int pass_loops(ir_graph *g, diag *D, int *changed)
{
	*changed = 0;
	int errs0 = D->nerrors, errs = loops_walk(g, D, changed);
	return errs && D->nerrors == errs0 ? errs : D->nerrors - errs0;
}

int onnx_is_seq_op(ir_op op)
{
	return op == OP_SEQEMPTY || op == OP_SEQINSERT || op == OP_SEQCONCAT || op == OP_SEQAT ||
	       op == OP_SEQLEN || op == OP_SEQCONSTRUCT || op == OP_SPLITTOSEQ || op == OP_SEQERASE;
}

static int seq_live(const ir_graph *g, const ir_value *v)
{
	if (v->is_output)
		return 1;
	for (const ir_graph *p = g; p; p = p->parent)
		for (int i = 0; i < p->nnodes; i++) {
			const ir_node *u = p->nodes[i];
			for (int k = 0; k < u->nin; k++)
				if (u->in[k] == v)
					return 1;
			if (u->body && u->body != g && body_uses(u->body, v, NULL))
				return 1;
		}
	return 0;
}

int onnx_seq_leftovers(ir_graph *g, diag *D)
{
	int errs = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->body)
			errs += onnx_seq_leftovers(n->body, D);
		if (!onnx_is_seq_op(n->op) || !n->out[0] || n->out[0]->resolved || !seq_live(g, n->out[0]))
			continue;
		diag_node(D, n, "sequence operator %s: cellc supports sequences only as a Loop's per-step "
			  "output accumulation (SequenceEmpty before the loop, SequenceInsert(s, y) in its body, "
			  "ConcatFromSequence/SequenceAt/SequenceLength after it), a SplitToSequence read by "
			  "SequenceAt/SequenceLength (a Loop over torch.unbind), or known at compile time",
			  ir_op_name(n->op));
		errs++;
	}
	return errs;
}
