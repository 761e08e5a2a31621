/* pass_select.c: selections of one step moved next to their recurrence.
 *
 * requires: pass_lower_rnn (every recurrence a RECURRENCE node with its
 *           stacked outputs, n_state/n_seq/n_out, out_axis and seq_axis);
 *           shapes known.
 * produces: a Gather or Slice of the last (or first) step of a stacked
 *           output reads the recurrence's final state; stacked outputs and
 *           recurrences that nothing reads are gone (below).
 * breaks:   nothing (node order stays topological).
 *
 * Last step: a Gather of the last step of a stacked output whose step
 *      value is a state's next value (h of `last(h)`, PyTorch's `out[-1]`,
 *      `out[out.size(0) - 1]`)
 *      reads the recurrence's final state instead (the Gather becomes an
 *      Identity of it; a Slice of that step alone, `out[-1:]`, becomes an
 *      Unsqueeze of it).  Then a stacked output that nothing reads, any more
 *      or ever (PyTorch's `_, (h, c) = lstm(x)`: the exporter's LSTM still
 *      writes Y), is dropped, and so is a recurrence none of whose outputs
 *      is read (the reverse direction under out[:, -1, :H]): the loop no
 *      longer writes [T, B, H] for nothing,
 *      and a --train build's backward starts from the final state's gradient
 *      instead of reading a [T, B, H] gradient that is zero but for one step.
 *      Not with sequence_lens (a short row's last step is not its final state).
 *      First, a Gather of one step moves up to the recurrence through the
 *      nodes that keep the time axis whole (sink_gather: Transpose,
 *      reshapes, Concat along another axis, element-wise nodes, a bias
 *      that lacks the axis staying as it is, Softmax along another axis,
 *      MatMul by a matrix), so that a bidirectional out[:, -1] (a Gather
 *      of the two directions' outputs concatenated and reshaped) becomes a
 *      Gather of each, and fc(out)[:, -1] the head on the last step.  Where
 *      a Reshape splits the time axis off rows that a Reshape merged
 *      (batch and time: view(-1, H), a row-wise head, view(batch, -1)
 *      [:, -1]), the Gather moves before the merge and the row-wise nodes
 *      between run on the kept step's rows (sink_gather_rows).  A Slice
 *      of the last (or first) step alone there, fc(out)[:, -1:], is a
 *      Gather and an Unsqueeze first (slice_one_step).  A Slice of
 *      constant bounds along another axis moves up the same way
 *      (sink_slice), and through a Concat along its axis keeps the
 *      operands in its range, through a Reshape that merged its axis a
 *      range of the outermost merged axis: the halves of a bidirectional
 *      output, cat(out[:, -1, :H], out[:, 0, H:]), become each
 *      direction's own output.  A Gather of one index of an axis a
 *      Reshape split off (out.view(B, T, 2, H)[:, -1, 0]) is a Slice of
 *      the unsplit axis first (gather_split), a Split there (torch.split,
 *      chunk) a Slice per part (split_slices).  Where a value has several
 *      readers and all of them are Gathers or Slices, each moves on a copy
 *      of the nodes it passes.  A Gather of one index along a Concat's
 *      own axis of what recurrences output reads the operand that holds
 *      it (gather_concat: h_n[-1] of a bidirectional LSTM is the reverse
 *      direction's final state), and one along an axis that a Slice
 *      reverses whole (torch.flip) is a Gather of the mirrored index of
 *      the Slice's input (gather_flip).  The views of views this leaves are then
 *      spelled once (canon_views).  A Gather of the
 *      step computed first (a reverse recurrence's last) where nothing else
 *      of the recurrence is read runs the recurrence on that step alone (a
 *      Slice of each sequence before it), whose final state it then reads.
 */
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* ---- last step: step indices moved next to their recurrence ---- */

/* The inputs of n that are data (the others give shapes or axes). */
static int data_inputs(const ir_node *n)
{
	return n->op == OP_CONCAT || ir_ops[n->op].kind == OPK_ELEM ? n->nin : 1;
}

static int is_unit(ir_dim d) { return ir_dim_is_const(d) && d.k == 1; }

/* The axis along which Softmax and LogSoftmax normalise, >= 0. */
static int64_t norm_axis(const ir_node *n)
{
	int64_t c = ir_attr_int(n, "axis", -1);
	return c < 0 ? c + n->out[0]->shape.rank : c;
}

#define UNSPANNED (-2)  /* through_axis: the input does not span the axis */

/* Whether n moves axis a of its output unchanged from an axis of its data
 * input k, so that a Gather of one index along a can come before n: that
 * axis, UNSPANNED where input k has no such axis (it broadcasts along it and
 * stays as it is), else -1.  Transpose; Reshape, Squeeze, Unsqueeze and
 * Flatten when the axis keeps its size and what comes before it (as many
 * elements); Concat along another axis (every input); element-wise nodes
 * whose inputs have the output's shape or lack the axis (a bias);
 * Softmax and LogSoftmax along another axis; MatMul by a matrix along an
 * axis of the left operand other than its columns, when the left operand
 * keeps two axes (x @ W of a sequence [B, T, H]). */
static int through_axis(const ir_node *n, int k, int a)
{
	const ir_value *x = k < n->nin ? n->in[k] : NULL, *y = n->nout == 1 ? n->out[0] : NULL;
	if (!x || !y || x->shape.rank < 1 || y->shape.rank < 1 || a < 0 || a >= y->shape.rank)
		return -1;
	const ir_shape *xs = &x->shape, *ys = &y->shape;
	switch (n->op) {
	case OP_SOFTMAX: case OP_LOGSOFTMAX:
		return k == 0 && xs->rank == ys->rank && norm_axis(n) != a ? a : -1;
	case OP_MATMUL:
		return k == 0 && n->nin == 2 && n->in[1] && n->in[1]->shape.rank == 2 && xs->rank == ys->rank &&
		       ys->rank >= 3 && a < ys->rank - 1 ? a : -1;
	case OP_TRANSPOSE: {
		ir_attr *p = ir_attr_find(n, "perm");
		if (k != 0 || (p && p->n != ys->rank) || xs->rank != ys->rank)
			return -1;
		int64_t b = p ? p->ints[a] : ys->rank - 1 - a;
		return b >= 0 && b < xs->rank ? (int)b : -1;
	}
	case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN: {
		if (k != 0)
			return -1;
		ir_dim before = ir_dim_const(1);
		for (int i = 0; i < a; i++)
			before = ir_dim_mul(before, ys->d[i]);
		ir_dim p = ir_dim_const(1);
		for (int b = 0; b < xs->rank; b++) {
			if (ir_dim_eq(p, before) && ir_dim_eq(xs->d[b], ys->d[a]))
				return b;
			p = ir_dim_mul(p, xs->d[b]);
		}
		return -1;
	}
	case OP_CONCAT: {
		int64_t c = ir_attr_int(n, "axis", 0);
		if (c < 0)
			c += ys->rank;
		return c != a && xs->rank == ys->rank ? a : -1;
	}
	default:
		if (ir_ops[n->op].kind != OPK_ELEM || xs->rank > ys->rank)
			return -1;
		if (!ir_shape_eq(xs, ys))
			return a < ys->rank - xs->rank ? UNSPANNED : -1;
		return a;
	}
}

/* Whether Slice n reverses axis a of its input whole (torch.flip). */
static int reverses_axis(const ir_node *n, int64_t a)
{
	int64_t ax;
	return ir_slice_flips(n, &ax) && ax == a;
}

/* Whether axis a of v comes, through nodes that move it unchanged, from
 * the time axis of a recurrence's stacked output (*budget: nodes left to
 * look at, so that wide element-wise graphs cost little). */
static int from_time_axis(const ir_value *v, int a, int *budget)
{
	const ir_node *p = v->producer;
	if (!p || --*budget < 0)
		return 0;
	if (p->op == OP_RECURRENCE) {
		int nst = (int)ir_attr_int(p, "n_state", 0);
		ir_attr *oa = ir_attr_find(p, "out_axis");
		for (int k = nst; oa && k < p->nout; k++)
			if (p->out[k] == v && k - nst < oa->n && oa->ints[k - nst] == a)
				return 1;
		return 0;
	}
	if (reverses_axis(p, a))
		return from_time_axis(p->in[0], a, budget);
	for (int k = 0; k < data_inputs(p); k++) {
		int b = through_axis(p, k, a);
		if (b >= 0 && from_time_axis(p->in[k], b, budget))
			return 1;
	}
	return 0;
}

/* Whether v is a stacked output seen through views alone (Identity,
 * Transpose, Squeeze, Unsqueeze, Reshape), as last_steps follows them. */
static int viewed_output(const ir_value *v)
{
	for (int n = 0; n < 8 && v->producer; n++) {
		const ir_node *p = v->producer;
		if (p->op == OP_RECURRENCE)
			return 1;
		if ((p->op != OP_IDENTITY && p->op != OP_TRANSPOSE && p->op != OP_SQUEEZE && p->op != OP_UNSQUEEZE &&
		     p->op != OP_RESHAPE) || p->nin < 1 || !p->in[0])
			return 0;
		v = p->in[0];
	}
	return 0;
}

/* Gives the new node n (origin from `from`) a temporary output of dtype dt
 * and infers its shape: 0, or -1 where it does not infer. */
static int with_output(ir_graph *g, ir_node *n, const ir_node *from, ir_dtype dt)
{
	diag quiet;
	diag_init(&quiet, "");
	quiet.quiet = 1;
	n->origin = from->origin;
	n->out[0] = ir_value_new(g, NULL, VAL_TEMP, dt);
	n->out[0]->producer = n;
	return infer_node(g, n, &quiet) != 0 ? -1 : 0;
}

/* A new Gather of index ix along axis a of x, for gth; NULL if its shape
 * does not infer. */
static ir_node *gather_of(ir_graph *g, ir_node *gth, ir_value *x, ir_value *ix, int64_t a)
{
	ir_node *n = ir_node_new(g, OP_GATHER, NULL, 2, 1);
	n->in[0] = x;
	n->in[1] = ix;
	ir_attr_set_int(n, "axis", a);
	return with_output(g, n, gth, x->dtype) ? NULL : n;
}

/* A scalar int64 constant: a Gather's index. */
static ir_value *scalar_index(ir_graph *g, int64_t at)
{
	ir_shape scalar = {.rank = 0};
	return ir_const_new(g, NULL, DT_I64, &scalar, &at);
}

/* The new node n computes what gth did: it takes gth's output, when its
 * inferred shape is gth's; 0 if not. */
static int take_place(ir_graph *g, ir_node *n, const ir_node *from, ir_node *gth)
{
	if (with_output(g, n, from, gth->out[0]->dtype) || !ir_shape_eq(&n->out[0]->shape, &gth->out[0]->shape))
		return 0;
	n->out[0] = gth->out[0];
	n->out[0]->producer = n;
	return 1;
}

/* n's attributes as from's, in an array of its own (from may stay: a
 * value with several readers that move one by one). */
static void copy_attrs(ir_node *n, const ir_node *from)
{
	n->nattrs = from->nattrs;
	n->attrs = from->nattrs ? arena_array(n->graph->A, (size_t)from->nattrs, sizeof *n->attrs) : NULL;
	if (from->nattrs)
		memcpy(n->attrs, from->attrs, (size_t)from->nattrs * sizeof *n->attrs);
}

/* Whether every reader of v is a Gather or a Slice of it (its data input)
 * among g's nodes: then each moves up on a copy of v's producer of its
 * own, which goes once all have (a bidirectional out[:, -1] and out[:, 0]
 * of the same output). */
static int selections_only(const ir_graph *g, const ir_value *v)
{
	if (v->is_output || v->nuses < 1 || v->nuses > 8)
		return 0;
	int n = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *x = g->nodes[i];
		for (int k = 0; k < x->nin; k++)
			if (x->in[k] == v) {
				if (k != 0 || (x->op != OP_GATHER && x->op != OP_SLICE))
					return 0;
				n++;
			}
	}
	return n == v->nuses;
}

/* A Gather of one constant index along the time axis of what nodes
 * compute from a stacked output, read by the Gather alone or by Gathers
 * and Slices alone (selections_only) (PyTorch's out[:, -1] of a
 * bidirectional LSTM: a Gather of Transpose(Reshape(Transpose(Concat(the
 * two directions))))), moved before the node that makes its input: a
 * Gather of each data input, then the node on one step (Transpose without
 * the axis, a Reshape to the output's shape less the axis, Concat, the
 * element-wise operation), until it reads a stacked output through views
 * alone.  The nodes that take its place, in order, into out (*nout of
 * them); 0 when it does not apply. */
static int sink_gather(ir_graph *g, ir_node *gth, ir_node **out, int *nout)
{
	ir_value *v = gth->in[0], *ix = gth->nin == 2 ? gth->in[1] : NULL;
	ir_node *p = v ? v->producer : NULL;
	if (!p || !ix || ix->kind != VAL_CONST || ix->shape.rank != 0 || v->is_output || p->nout != 1 ||
	    p->op == OP_RECURRENCE || !gth->out[0] || v->shape.rank < 1)
		return 0;
	int64_t a = ir_attr_int(gth, "axis", 0);
	if (a < 0)
		a += v->shape.rank;
	int budget = 64, data = data_inputs(p);
	if (a < 0 || a >= v->shape.rank || data > 64 || viewed_output(v) || !from_time_axis(v, (int)a, &budget) ||
	    (v->nuses != 1 && !selections_only(g, v)))
		return 0;
	int reshape = p->op == OP_RESHAPE || p->op == OP_SQUEEZE || p->op == OP_UNSQUEEZE || p->op == OP_FLATTEN;
	ir_node *op = ir_node_new(g, reshape ? OP_RESHAPE : p->op, NULL, reshape ? 2 : p->nin, 1);
	int n = 0, b0 = through_axis(p, 0, (int)a);
	for (int k = data; k < p->nin && !reshape; k++)
		op->in[k] = p->in[k];           /* MatMul's matrix */
	for (int k = 0; k < data; k++) {
		int b = through_axis(p, k, (int)a);
		if (b == UNSPANNED) {
			op->in[k] = p->in[k];
			continue;
		}
		if (b < 0)
			return 0;
		ir_node *gk = gather_of(g, gth, p->in[k], ix, b);
		if (!gk)
			return 0;
		out[n++] = gk;
		op->in[k] = gk->out[0];
	}
	ir_shape ys = {.rank = 0};
	for (int i = 0; i < v->shape.rank; i++)
		if (i != a)
			ys.d[ys.rank++] = v->shape.d[i];
	if (p->op == OP_TRANSPOSE) {
		/* the axes left, numbered without the input's axis b0 */
		int64_t perm[IR_MAX_RANK];
		ir_attr *pa = ir_attr_find(p, "perm");
		for (int i = 0, m = 0; i < v->shape.rank; i++) {
			int64_t q = pa ? pa->ints[i] : v->shape.rank - 1 - i;
			if (i != a)
				perm[m++] = q - (q > b0);
		}
		ir_attr_set_ints(op, "perm", ys.rank, perm);
	} else if (reshape) {
		op->in[1] = ir_const_dims(g, ys.d, ys.rank);
	} else if (p->op == OP_CONCAT) {
		int64_t c = ir_attr_int(p, "axis", 0);
		if (c < 0)
			c += v->shape.rank;
		ir_attr_set_int(op, "axis", c - (c > a));
	} else if (p->op == OP_SOFTMAX || p->op == OP_LOGSOFTMAX) {
		int64_t c = norm_axis(p);
		ir_attr_set_int(op, "axis", c - (c > a));
	} else if (p->op == OP_MATMUL) {
		/* no attributes */
	} else {
		copy_attrs(op, p);              /* element-wise: as they were */
	}
	if (!take_place(g, op, p, gth))
		return 0;
	out[n++] = op;
	*nout = n;
	return 1;
}

/* Axes lo..hi of s whose sizes multiply to m, after axes whose sizes
 * multiply to before (the first such run, the fewest axes); 0 if none. */
static int factor_axes(const ir_shape *s, ir_dim before, ir_dim m, int *lo, int *hi)
{
	ir_dim p = ir_dim_const(1);
	for (int i = 0; i < s->rank; i++) {
		if (ir_dim_eq(p, before)) {
			ir_dim q = ir_dim_const(1);
			for (int j = i; j < s->rank; j++) {
				q = ir_dim_mul(q, s->d[j]);
				if (ir_dim_eq(q, m)) {
					*lo = i, *hi = j;
					return 1;
				}
			}
			return 0;
		}
		p = ir_dim_mul(p, s->d[i]);
	}
	return 0;
}

/* Whether n computes each index of axis b of its output from the same
 * index of its data input *k alone, keeping the axis where it is: Gemm's
 * rows (not transposed, C one row or none), MatMul's rows or batches by a
 * matrix, Softmax and LogSoftmax along another axis, element-wise nodes
 * whose other inputs lack the axis. */
static int row_wise(const ir_node *n, int b, int *k)
{
	const ir_value *y = n->nout == 1 ? n->out[0] : NULL, *x = n->nin >= 1 ? n->in[0] : NULL;
	if (!y || !x || b < 0 || b >= y->shape.rank)
		return 0;
	*k = 0;
	switch (n->op) {
	case OP_GEMM: {
		const ir_value *c = n->nin == 3 ? n->in[2] : NULL;
		return b == 0 && !ir_attr_int(n, "transA", 0) && (!c || c->shape.rank < 2 || is_unit(c->shape.d[0]));
	}
	case OP_MATMUL:
		return n->nin == 2 && n->in[1] && n->in[1]->shape.rank == 2 && x->shape.rank == y->shape.rank &&
		       b < y->shape.rank - 1;
	case OP_SOFTMAX: case OP_LOGSOFTMAX:
		return norm_axis(n) != b;
	default:
		if (ir_ops[n->op].kind != OPK_ELEM)
			return 0;
		*k = -1;
		for (int i = 0; i < n->nin; i++) {
			int t = through_axis(n, i, b);
			if (t == b && *k < 0)
				*k = i;
			else if (t != UNSPANNED)
				return 0;
		}
		return *k >= 0;
	}
}

/* A Gather of one constant index along an axis that a Reshape splits off
 * an axis of its input, where that axis comes through row-wise nodes from
 * a Reshape that merged axes of the same sizes: PyTorch's
 * lstm_out.contiguous().view(-1, H) -> Linear -> sigmoid ->
 * view(batch, -1)[:, -1] (batch and time merged into the rows of a head
 * run on every step, split again and the last step kept).  The Gather
 * moves before the merging Reshape and the row-wise nodes run on the rows
 * of the kept index alone:
 *     Gather(Reshape(f(Reshape(Y)))) -> Reshape(f(Reshape(Gather(Y))))
 * when the gathered axis of Y comes from a recurrence's time axis.  The
 * nodes that take the Gather's place into out (*nout); 0 if it does not
 * apply. */
static int sink_gather_rows(ir_graph *g, ir_node *gth, ir_node **out, int *nout)
{
	ir_value *v = gth->in[0], *ix = gth->nin == 2 ? gth->in[1] : NULL;
	ir_node *p = v ? v->producer : NULL;
	if (!p || !ix || ix->kind != VAL_CONST || ix->shape.rank != 0 || v->nuses != 1 || v->is_output ||
	    !gth->out[0] || (p->op != OP_RESHAPE && p->op != OP_FLATTEN) || p->nin < 1 || !p->in[0] ||
	    v->shape.rank < 2)
		return 0;
	const ir_shape *vs = &v->shape;
	int a = (int)ir_attr_int(gth, "axis", 0);
	if (a < 0)
		a += vs->rank;
	if (a < 0 || a >= vs->rank)
		return 0;
	/* v's axes a0..a1, a among them, split axis b of p's input */
	ir_value *x = p->in[0];
	int b = -1, a0 = 0, a1 = 0, lo, hi;
	ir_dim before = ir_dim_const(1);
	for (int i = 0; i < x->shape.rank && b < 0; i++) {
		if (factor_axes(vs, before, x->shape.d[i], &lo, &hi) && lo <= a && a <= hi && lo < hi)
			b = i, a0 = lo, a1 = hi;
		before = ir_dim_mul(before, x->shape.d[i]);
	}
	if (b < 0)
		return 0;
	/* up through the row-wise nodes to the Reshape that merged the axes */
	ir_node *chain[8];
	int n = 0, k, ks[8];
	ir_value *r = x;
	while (r->producer && r->nuses == 1 && !r->is_output && n < 8 && row_wise(r->producer, b, &k))
		chain[n] = r->producer, ks[n++] = k, r = r->producer->in[k];
	ir_node *m = r->producer;
	if (!m || (m->op != OP_RESHAPE && m->op != OP_FLATTEN) || r->nuses != 1 || r->is_output || m->nin < 1 ||
	    !m->in[0])
		return 0;
	ir_value *y = m->in[0];
	ir_dim pre = ir_dim_const(1);
	for (int i = 0; i < b; i++)
		pre = ir_dim_mul(pre, r->shape.d[i]);
	int c0, c1, budget = 64;
	if (!factor_axes(&y->shape, pre, r->shape.d[b], &c0, &c1) || c1 - c0 != a1 - a0)
		return 0;
	for (int i = 0; i <= a1 - a0; i++)
		if (!ir_dim_eq(y->shape.d[c0 + i], vs->d[a0 + i]))
			return 0;
	int c = c0 + (a - a0);
	if (!from_time_axis(y, c, &budget))
		return 0;
	int nn = 0;
	ir_node *gy = gather_of(g, gth, y, ix, c);
	if (!gy)
		return 0;
	out[nn++] = gy;
	/* the merged axis less the kept one, then the row-wise nodes on it */
	ir_shape ms = r->shape;
	ms.d[b] = ir_dim_const(1);
	for (int i = a0; i <= a1; i++)
		if (i != a)
			ms.d[b] = ir_dim_mul(ms.d[b], vs->d[i]);
	ir_value *cur = gy->out[0];
	for (int i = n; i >= 0; i--) {
		ir_node *q = i == n ? m : chain[i], *nq;
		if (i == n) {
			nq = ir_node_new(g, OP_RESHAPE, NULL, 2, 1);
			nq->in[1] = ir_const_dims(g, ms.d, ms.rank);
			k = 0;
		} else {
			k = ks[i];
			nq = ir_node_new(g, q->op, NULL, q->nin, 1);
			for (int j = 0; j < q->nin; j++)
				nq->in[j] = q->in[j];
			nq->attrs = q->attrs;   /* q goes */
			nq->nattrs = q->nattrs;
		}
		nq->in[k] = cur;
		if (with_output(g, nq, q, q->out[0]->dtype))
			return 0;
		out[nn++] = nq;
		cur = nq->out[0];
	}
	ir_node *to = ir_node_new(g, OP_RESHAPE, NULL, 2, 1);
	to->in[0] = cur;
	to->in[1] = ir_const_dims(g, gth->out[0]->shape.d, gth->out[0]->shape.rank);
	if (!take_place(g, to, p, gth))
		return 0;
	out[nn++] = to;
	*nout = nn;
	return 1;
}

/* Whether a Slice keeps the final state's step alone, along one axis (its
 * *axis, not normalised): PyTorch's out[-1:], from -1 or T - 1 to any end
 * past the last step (INT64_MAX, or at least T when T is known), step 1;
 * for a reverse recurrence the first step, out[:1]. */
static int slices_final_step(const ir_node *sl, int reverse, ir_dim T, int64_t *axis)
{
	int64_t s, e, st;
	if (sl->nin < 3 || !ir_input_int(sl, 1, 0, &s) || !ir_input_int(sl, 2, 0, &e) || !ir_input_int(sl, 3, 0, axis) ||
	    !ir_input_int(sl, 4, 1, &st) || st != 1)
		return 0;
	int known = ir_dim_is_const(T);
	if (reverse)
		return (s == 0 || (known && s == -T.k)) && (e == 1 || (known && T.k > 1 && e == 1 - T.k));
	return (s == -1 || (known && s == T.k - 1)) && (e == INT64_MAX || (known && e >= T.k));
}

/* A Slice of one step of an axis that comes from a recurrence's time axis
 * (the last, from -1 to past the end; or the first, from 0 to 1; step 1),
 * where its input is more than a view of the stacked output (fc(out)[:,
 * -1:]): a Gather of that step and an Unsqueeze where the axis was, so
 * that the Gather can move up as sink_gather moves it.  (A Slice of a view
 * of the stacked output is last_steps' own.) */
static int slice_one_step(ir_graph *g, ir_node *sl, ir_node **out, int *nout)
{
	ir_value *v = sl->nin >= 3 ? sl->in[0] : NULL;
	int64_t a;
	if (!v || !sl->out[0] || v->nuses != 1 || v->is_output || v->shape.rank < 1 || !ir_input_int(sl, 3, 0, &a))
		return 0;
	if (a < 0)
		a += v->shape.rank;
	if (a < 0 || a >= v->shape.rank)
		return 0;
	/* the last step as a forward recurrence's final one, the first as a
	 * reverse one's */
	ir_dim n = v->shape.d[a];
	int64_t at = slices_final_step(sl, 0, n, &a) ? -1 : slices_final_step(sl, 1, n, &a) ? 0 : 1;
	int budget = 64;
	if (a < 0)
		a += v->shape.rank;
	if (at == 1 || viewed_output(v) || !from_time_axis(v, (int)a, &budget))
		return 0;
	ir_node *gth = gather_of(g, sl, v, scalar_index(g, at), a);
	if (!gth)
		return 0;
	ir_node *un = ir_node_new(g, OP_UNSQUEEZE, NULL, 2, 1);
	un->in[0] = gth->out[0];
	un->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &a);
	if (!take_place(g, un, sl, sl))
		return 0;
	out[0] = gth, out[1] = un;
	*nout = 2;
	return 1;
}

/* A new Slice of x from s to e along axis a (step 1), for node `from`;
 * NULL if its shape does not infer. */
static ir_node *slice_of(ir_graph *g, const ir_node *from, ir_value *x, int64_t s, int64_t e, int64_t a)
{
	ir_node *n = ir_node_new(g, OP_SLICE, NULL, 4, 1);
	n->in[0] = x;
	n->in[1] = ir_const_i64(g, NULL, 1, &s);
	n->in[2] = ir_const_i64(g, NULL, 1, &e);
	n->in[3] = ir_const_i64(g, NULL, 1, &a);
	return with_output(g, n, from, x->dtype) ? NULL : n;
}

/* Whether v comes from a recurrence's stacked output (or, with states,
 * from any of its outputs) through nodes that a Gather or Slice moves
 * through (*budget as from_time_axis's). */
static int from_stacked(const ir_value *v, int states, int *budget)
{
	const ir_node *p = v->producer;
	if (!p || --*budget < 0)
		return 0;
	if (p->op == OP_RECURRENCE) {
		for (int k = states ? 0 : (int)ir_attr_int(p, "n_state", 0); k < p->nout; k++)
			if (p->out[k] == v)
				return 1;
		return 0;
	}
	switch (p->op) {
	case OP_IDENTITY: case OP_TRANSPOSE: case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN:
	case OP_CONCAT: case OP_GATHER: case OP_SLICE: case OP_SOFTMAX: case OP_LOGSOFTMAX: case OP_MATMUL:
		break;
	default:
		if (ir_ops[p->op].kind != OPK_ELEM)
			return 0;
	}
	for (int k = 0; k < data_inputs(p); k++)
		if (p->in[k] && from_stacked(p->in[k], states, budget))
			return 1;
	return 0;
}

/* Whether selection node x (a Gather or Slice of v) may move before v's
 * producer: v is computed, not only viewed, from a stacked output, and is
 * read by x alone or by selections alone. */
static int may_sink(const ir_graph *g, const ir_value *v)
{
	int budget = 64;
	return !v->is_output && v->producer && v->producer->nout == 1 && v->producer->op != OP_RECURRENCE &&
	       !viewed_output(v) && from_stacked(v, 0, &budget) && (v->nuses == 1 || selections_only(g, v));
}

/* The constant bounds of a Slice along one axis, step 1, clamped to that
 * axis of known size as ONNX clamps them: [*s, *e) of axis *a; 0 if not
 * such a Slice, or if it keeps nothing or everything. */
static int slice_bounds(const ir_node *sl, int64_t *s, int64_t *e, int64_t *a)
{
	const ir_value *v = sl->nin >= 3 ? sl->in[0] : NULL;
	int64_t st;
	if (!v || !sl->out[0] || v->shape.rank < 1 || !ir_input_int(sl, 1, 0, s) || !ir_input_int(sl, 2, 0, e) ||
	    !ir_input_int(sl, 3, 0, a) || !ir_input_int(sl, 4, 1, &st) || st != 1)
		return 0;
	if (*a < 0)
		*a += v->shape.rank;
	if (*a < 0 || *a >= v->shape.rank || !ir_dim_is_const(v->shape.d[*a]))
		return 0;
	int64_t n = v->shape.d[*a].k;
	if (*s < 0)
		*s = *s < -n ? 0 : *s + n;
	if (*e < 0)
		*e = *e < -n ? 0 : *e + n;
	*s = *s > n ? n : *s;
	*e = *e > n ? n : *e;
	return *s < *e && !(*s == 0 && *e == n);
}

/* A Slice of constant bounds along an axis of known size, of what nodes
 * compute from a recurrence's stacked output, moved before the node that
 * makes its input, so that only the kept part is computed and only what it
 * needs is kept: the feature halves of a bidirectional output,
 * cat(out[:, -1, :H], out[:, 0, H:]), are the two directions' outputs
 * (a Reshape merged the directions axis into the features, a Concat made
 * the directions axis).  Through a Concat along the axis: the operands in
 * the range (a whole operand is that operand); through a Reshape that
 * merged the axis from several, the outermost of them, when the range
 * keeps whole blocks of the inner ones; through a Gather along another
 * axis; through whatever moves the axis unchanged (through_axis).  The
 * nodes that take its place into out (*nout); 0 if it does not apply. */
/* sink_slice through Concat p along the slice's axis a: the operands in
 * [s, e), sliced where the range cuts them, concatenated (or the one left).
 * The new Slices into out[*m]; NULL if it does not apply. */
static ir_node *slice_concat(ir_graph *g, ir_node *sl, ir_node *p, int64_t s, int64_t e, int64_t a,
			     ir_node **out, int *m)
{
	const ir_shape *vs = &sl->in[0]->shape;
	ir_value **part = arena_array(g->A, (size_t)p->nin + 1, sizeof *part);
	int np = 0;
	for (int64_t k = 0, off = 0; k < p->nin; k++) {
		ir_value *x = p->in[k];
		if (!x || x->shape.rank != vs->rank || !ir_dim_is_const(x->shape.d[a]))
			return NULL;
		int64_t w = x->shape.d[a].k, lo = s > off ? s : off, hi = e < off + w ? e : off + w;
		if (lo < hi && (lo > off || hi < off + w)) {
			ir_node *q = slice_of(g, sl, x, lo - off, hi - off, a);
			if (!q)
				return NULL;
			out[(*m)++] = q;
			part[np++] = q->out[0];
		} else if (lo < hi) {
			part[np++] = x;
		}
		off += w;
	}
	ir_node *to = ir_node_new(g, np == 1 ? OP_IDENTITY : OP_CONCAT, NULL, np, 1);
	memcpy(to->in, part, (size_t)np * sizeof *part);
	if (np > 1)
		ir_attr_set_int(to, "axis", a);
	return to;
}

/* sink_slice through a Gather p of one constant index along another axis:
 * the Slice of its input, then the Gather. */
static ir_node *slice_gather(ir_graph *g, ir_node *sl, ir_node *p, int64_t s, int64_t e, int64_t a,
			     ir_node **out, int *m)
{
	int64_t ga = ir_attr_int(p, "axis", 0);
	if (ga < 0)
		ga += p->in[0]->shape.rank;
	ir_node *q = slice_of(g, sl, p->in[0], s, e, a + (a >= ga));
	if (!q)
		return NULL;
	out[(*m)++] = q;
	ir_node *to = ir_node_new(g, OP_GATHER, NULL, 2, 1);
	to->in[0] = q->out[0];
	to->in[1] = p->in[1];
	ir_attr_set_int(to, "axis", ga);
	return to;
}

/* sink_slice through a node p that moves axis a unchanged (through_axis
 * of each data input in bs): p again on the slices of its inputs (a
 * reshape as a Reshape to the sliced shape ys). */
static ir_node *slice_through(ir_graph *g, ir_node *sl, ir_node *p, int64_t s, int64_t e, const int *bs,
			      const ir_shape *ys, ir_node **out, int *m)
{
	int reshape = p->op == OP_RESHAPE || p->op == OP_SQUEEZE || p->op == OP_UNSQUEEZE || p->op == OP_FLATTEN;
	int data = data_inputs(p);
	ir_node *to = ir_node_new(g, reshape ? OP_RESHAPE : p->op, NULL, reshape ? 2 : p->nin, 1);
	for (int k = data; k < p->nin && !reshape; k++)
		to->in[k] = p->in[k];   /* MatMul's matrix */
	for (int k = 0; k < data; k++) {
		int b = bs[k];
		ir_node *q = b == UNSPANNED ? NULL : slice_of(g, sl, p->in[k], s, e, b);
		if (b != UNSPANNED && !q)
			return NULL;
		if (q)
			out[(*m)++] = q;
		to->in[k] = q ? q->out[0] : p->in[k];
	}
	if (reshape)
		to->in[1] = ir_const_dims(g, ys->d, ys->rank);
	else
		copy_attrs(to, p);
	return to;
}

/* sink_slice through a Reshape or Flatten p that merged axis a from axes
 * lo..hi of its input: the range in whole blocks of lo + 1..hi is a range
 * of lo, reshaped to ys. */
static ir_node *slice_merged(ir_graph *g, ir_node *sl, ir_node *p, int64_t s, int64_t e, int64_t a,
			     const ir_shape *ys, ir_node **out, int *m)
{
	const ir_shape *vs = &sl->in[0]->shape;
	ir_value *x = p->in[0];
	ir_dim before = ir_dim_const(1);
	for (int i = 0; i < a; i++)
		before = ir_dim_mul(before, vs->d[i]);
	int lo, hi;
	int64_t inner = 1;
	if (!x || !factor_axes(&x->shape, before, vs->d[a], &lo, &hi) || lo == hi)
		return NULL;
	for (int i = lo + 1; i <= hi; i++) {
		if (!ir_dim_is_const(x->shape.d[i]) || x->shape.d[i].k < 1)
			return NULL;
		inner *= x->shape.d[i].k;
	}
	if (s % inner || e % inner)
		return NULL;
	ir_node *q = slice_of(g, sl, x, s / inner, e / inner, lo);
	if (!q)
		return NULL;
	out[(*m)++] = q;
	ir_node *to = ir_node_new(g, OP_RESHAPE, NULL, 2, 1);
	to->in[0] = q->out[0];
	to->in[1] = ir_const_dims(g, ys->d, ys->rank);
	return to;
}

static int sink_slice(ir_graph *g, ir_node *sl, ir_node **out, int *nout)
{
	ir_value *v = sl->nin >= 3 ? sl->in[0] : NULL;
	ir_node *p = v ? v->producer : NULL, *to = NULL;
	int64_t s, e, a;
	if (!p || !slice_bounds(sl, &s, &e, &a) || !may_sink(g, v))
		return 0;
	const ir_shape *vs = &v->shape;
	int m = 0, data = data_inputs(p);
	if (data > 64)
		return 0;
	if (p->op == OP_CONCAT && (ir_attr_int(p, "axis", 0) + vs->rank) % vs->rank == a) {
		to = slice_concat(g, sl, p, s, e, a, out, &m);
	} else if (p->op == OP_GATHER && p->nin == 2 && p->in[1] && p->in[1]->kind == VAL_CONST &&
		   p->in[1]->shape.rank == 0 && p->in[0]) {
		to = slice_gather(g, sl, p, s, e, a, out, &m);
	} else {
		int through = 1, bs[64];
		for (int k = 0; k < data && through; k++)
			through = (bs[k] = through_axis(p, k, (int)a)) != -1;
		ir_shape ys = *vs;
		ys.d[a] = ir_dim_const(e - s);
		if (through)
			to = slice_through(g, sl, p, s, e, bs, &ys, out, &m);
		else if (p->op == OP_RESHAPE || p->op == OP_FLATTEN)
			to = slice_merged(g, sl, p, s, e, a, &ys, out, &m);
	}
	if (!to || !take_place(g, to, p, sl))
		return 0;
	out[m++] = to;
	*nout = m;
	return 1;
}

/* Whether Gather gth reads one index known at compile time (a scalar
 * integer constant) of a computed value (not a graph output) of rank at
 * least 1: the index in *i, as written, and the axis, normalised, in *a. */
static int gather_index(const ir_node *gth, int64_t *i, int64_t *a)
{
	const ir_value *v = gth->nin == 2 ? gth->in[0] : NULL, *ix = gth->nin == 2 ? gth->in[1] : NULL;
	if (!v || !v->producer || v->is_output || v->shape.rank < 1 || !gth->out[0] || !ix ||
	    ix->kind != VAL_CONST || !ix->data || ix->sym || ix->shape.rank != 0 ||
	    (ix->dtype != DT_I64 && ix->dtype != DT_I32))
		return 0;
	*i = ir_const_int(ix, 0);
	*a = ir_attr_int(gth, "axis", 0);
	*a += *a < 0 ? v->shape.rank : 0;
	return *a >= 0 && *a < v->shape.rank;
}

/* A Gather of one constant index along an axis that a Reshape splits off
 * the front of an axis of its input (a bidirectional output [B, 2H]
 * viewed as [B, 2, H], then [:, 1]): a Slice of that index's block of the
 * input axis and a Reshape, so that the Slice moves on as sink_slice moves
 * it.  The two nodes into out; 0 if it does not apply. */
static int gather_split(ir_graph *g, ir_node *gth, ir_node **out, int *nout)
{
	ir_value *v = gth->in[0];
	ir_node *p = v ? v->producer : NULL;
	int64_t i, a;
	if (!gather_index(gth, &i, &a) || (p->op != OP_RESHAPE && p->op != OP_FLATTEN) || p->nin < 1 || !p->in[0] ||
	    v->shape.rank < 2 || !ir_dim_is_const(v->shape.d[a]))
		return 0;
	const ir_shape *vs = &v->shape, *xs = &p->in[0]->shape;
	if (i < 0)
		i += vs->d[a].k;
	if (i < 0 || i >= vs->d[a].k || !may_sink(g, v))
		return 0;
	/* input axis b split into a..hi */
	int b = -1, lo, hi;
	ir_dim before = ir_dim_const(1);
	for (int k = 0; k < xs->rank && b < 0; k++) {
		if (factor_axes(vs, before, xs->d[k], &lo, &hi) && lo == a && hi > a)
			b = k;
		before = ir_dim_mul(before, xs->d[k]);
	}
	int64_t inner = 1;
	for (int k = (int)a + 1; b >= 0 && k <= hi; k++) {
		if (!ir_dim_is_const(vs->d[k]))
			return 0;
		inner *= vs->d[k].k;
	}
	if (b < 0)
		return 0;
	ir_node *q = slice_of(g, gth, p->in[0], i * inner, (i + 1) * inner, b);
	if (!q)
		return 0;
	ir_node *to = ir_node_new(g, OP_RESHAPE, NULL, 2, 1);
	to->in[0] = q->out[0];
	to->in[1] = ir_const_dims(g, gth->out[0]->shape.d, gth->out[0]->shape.rank);
	if (!take_place(g, to, p, gth))
		return 0;
	out[0] = q, out[1] = to;
	*nout = 2;
	return 1;
}

/* A Gather of one constant index i along an axis that a Slice reverses
 * whole (torch.flip(out, [1])[:, 0] of a recurrence run on the flipped
 * sequence, a bidirectional layer written by hand) is a Gather of index
 * -1 - i of the Slice's input, which then moves on as the others do.  The
 * node into out; 0 if it does not apply. */
static int gather_flip(ir_graph *g, ir_node *gth, ir_node **out, int *nout)
{
	ir_value *v = gth->in[0];
	ir_node *p = v ? v->producer : NULL;
	int64_t i, a;
	int budget = 64;
	if (!gather_index(gth, &i, &a) || p->op != OP_SLICE || i < -(INT64_MAX / 2) || i > INT64_MAX / 2 ||
	    !reverses_axis(p, a) || !from_time_axis(v, (int)a, &budget) || (v->nuses != 1 && !selections_only(g, v)))
		return 0;
	ir_node *to = ir_node_new(g, OP_GATHER, NULL, 2, 1);
	to->in[0] = p->in[0];
	to->in[1] = scalar_index(g, -1 - i);
	ir_attr_set_int(to, "axis", a);
	if (!take_place(g, to, p, gth))
		return 0;
	out[0] = to;
	*nout = 1;
	return 1;
}

/* A Gather of one constant index along the axis of a Concat of what
 * recurrences output (h_n of a bidirectional or stacked nn.LSTM: every
 * layer's and direction's final state, each with a unit axis added, then
 * concatenated) reads the operand that holds that index: a Gather of it,
 * or a Reshape where the operand has that index alone.  So a head on
 * h_n[-1] reads one direction's final state, and a direction nothing else
 * reads is not run.  The node into out; 0 if it does not apply. */
static int gather_concat(ir_graph *g, ir_node *gth, ir_node **out, int *nout)
{
	ir_value *v = gth->in[0];
	ir_node *p = v ? v->producer : NULL;
	int64_t i, a, c;
	if (!gather_index(gth, &i, &a) || p->op != OP_CONCAT || !ir_dim_is_const(v->shape.d[a]))
		return 0;
	c = ir_attr_int(p, "axis", 0);
	c += c < 0 ? v->shape.rank : 0;
	if (a != c)
		return 0;
	i += i < 0 ? v->shape.d[a].k : 0;
	int budget = 64;
	if (i < 0 || i >= v->shape.d[a].k || !from_stacked(v, 1, &budget) || (v->nuses != 1 && !selections_only(g, v)))
		return 0;
	for (int64_t k = 0, off = 0; k < p->nin; k++) {
		ir_value *x = p->in[k];
		if (!x || x->shape.rank != v->shape.rank || !ir_dim_is_const(x->shape.d[a]))
			return 0;
		int64_t w = x->shape.d[a].k;
		if (i >= off + w) {
			off += w;
			continue;
		}
		ir_node *to = ir_node_new(g, w == 1 ? OP_RESHAPE : OP_GATHER, NULL, 2, 1);
		to->in[0] = x;
		if (w == 1) {
			to->in[1] = ir_const_dims(g, gth->out[0]->shape.d, gth->out[0]->shape.rank);
		} else {
			to->in[1] = scalar_index(g, i - off);
			ir_attr_set_int(to, "axis", a);
		}
		if (!take_place(g, to, p, gth))
			return 0;
		out[0] = to;
		*nout = 1;
		return 1;
	}
	return 0;
}

/* A Split along an axis of known size, of what nodes compute from a
 * recurrence's stacked output (torch.split(out, H, -1) of a bidirectional
 * output): a Slice per part, each taking its part's value, which then
 * move as sink_slice moves them.  The Slices into out (*nout); 0 if it
 * does not apply. */
static int split_slices(ir_graph *g, ir_node *sp, ir_node **out, int *nout)
{
	ir_value *v = sp->nin >= 1 ? sp->in[0] : NULL;
	int budget = 64;
	if (!v || sp->nout < 1 || sp->nout > 64 || v->shape.rank < 1 || viewed_output(v) ||
	    !from_stacked(v, 0, &budget))
		return 0;
	int64_t a = ir_attr_int(sp, "axis", 0), at = 0;
	if (a < 0)
		a += v->shape.rank;
	if (a < 0 || a >= v->shape.rank)
		return 0;
	for (int o = 0; o < sp->nout; o++) {
		ir_value *y = sp->out[o];
		if (!y || y->shape.rank != v->shape.rank || !ir_dim_is_const(y->shape.d[a]))
			return 0;
		ir_node *sl = slice_of(g, sp, v, at, at + y->shape.d[a].k, a);
		if (!sl || !ir_shape_eq(&sl->out[0]->shape, &y->shape))
			return 0;
		sl->out[0] = y;
		out[o] = sl;
		at += y->shape.d[a].k;
	}
	for (int o = 0; o < sp->nout; o++)
		sp->out[o]->producer = out[o];
	*nout = sp->nout;
	return 1;
}

/* The moves above until nothing moves (each round moves a Gather or a
 * Slice one node up); 1 if any did. */
static int sink_gathers(ir_graph *g)
{
	int any = 0;
	for (int round = 0; round < 16; round++) {
		ir_recount(g);
		int n = g->nnodes, m = 0, moved = 0, ng = 0;
		for (int i = 0; i < n; i++)
			ng += g->nodes[i]->op == OP_GATHER || g->nodes[i]->op == OP_SLICE || g->nodes[i]->op == OP_SPLIT;
		if (!ng)
			return any;
		ir_node **nodes = arena_array(g->A, (size_t)(n + 65 * ng), sizeof *nodes), *rep[66];
		for (int i = 0; i < n; i++) {
			ir_node *x = g->nodes[i];
			int nrep = 0;
			if ((x->op == OP_GATHER && (gather_concat(g, x, rep, &nrep) || gather_flip(g, x, rep, &nrep) ||
						    sink_gather(g, x, rep, &nrep) ||
						    sink_gather_rows(g, x, rep, &nrep) || gather_split(g, x, rep, &nrep))) ||
			    (x->op == OP_SLICE && (slice_one_step(g, x, rep, &nrep) || sink_slice(g, x, rep, &nrep))) ||
			    (x->op == OP_SPLIT && split_slices(g, x, rep, &nrep))) {
				memcpy(nodes + m, rep, (size_t)nrep * sizeof *rep);
				m += nrep;
				moved = 1;
			} else {
				nodes[m++] = x;
			}
		}
		ir_set_nodes(g, nodes, m);
		if (!moved)
			break;
		any = 1;
		ir_recount(g);
		ir_drop_dead(g, 0);
	}
	ir_recount(g);
	return any;
}

/* Whether symbolic dimension d is T - 1: T's symbol's derived symbol of
 * offset -1 (out[out.size(0) - 1]). */
static int is_t_minus_1(const ir_graph *g, ir_dim d, ir_dim T)
{
	int s = ir_dim_one_sym(d), t = ir_dim_one_sym(T);
	int64_t off;
	return s >= 0 && t >= 0 && ir_sym_is_offset(g, s) && ir_sym_root(g, s, &off) == t && off == -1;
}

/* Whether a Gather along a stacked output's time axis reads, by a constant
 * scalar index, its last step (last: -1 or T - 1, T - 1 also as a symbolic
 * constant) or its first (0 or -T).  The final state is the last step's
 * value, a reverse recurrence's the first's. */
static int reads_step(const ir_graph *g, const ir_node *gth, ir_dim T, int last)
{
	const ir_value *ix = gth->nin > 1 ? gth->in[1] : NULL;
	if (!ix || ix->kind != VAL_CONST || ix->shape.rank != 0 || (ix->dtype != DT_I64 && ix->dtype != DT_I32))
		return 0;
	if (ix->sym)
		return last && is_t_minus_1(ir_root((ir_graph *)g), ix->sym[0], T);
	if (!ix->data)
		return 0;
	int64_t v = ir_const_int(ix, 0);
	if (last)
		return v == -1 || (ir_dim_is_const(T) && v == T.k - 1);
	return v == 0 || (ir_dim_is_const(T) && v == -T.k);
}

/* Whether recurrence r may run its first step only: stacked output y, read
 * through the views chain[0..n) by one Gather, is all of it that is read
 * (no other output, no other reader). */
static int first_step_only(const ir_node *r, const ir_value *y, ir_node *const *chain, int n)
{
	if (y->nuses != 1 || y->is_output)
		return 0;
	for (int c = 0; c < n; c++)
		if (!chain[c]->out[0] || chain[c]->out[0]->nuses != 1 || chain[c]->out[0]->is_output)
			return 0;
	for (int k = 0; k < r->nout; k++)
		if (r->out[k] && r->out[k] != y && (r->out[k]->nuses > 0 || r->out[k]->is_output))
			return 0;
	return 1;
}

/* Recurrence r (node i of g) on the first step of its sequences only: a
 * Slice of each along its time axis (the last step for a reverse
 * recurrence), inserted before r.  Returns the number of nodes inserted
 * (0 if a Slice's shape cannot be inferred: r is left as it was). */
static int first_step(ir_graph *g, ir_node *r, int i)
{
	int nseq = (int)ir_attr_int(r, "n_seq", 0), rev = (int)ir_attr_int(r, "reverse", 0);
	ir_attr *sa = ir_attr_find(r, "seq_axis");
	if (nseq < 1 || nseq > 64 || !sa || sa->n < nseq)
		return 0;
	ir_node *sl[64];
	int64_t start = rev ? -1 : 0, end = rev ? INT64_MAX : 1;
	for (int k = 0; k < nseq; k++)
		if (!(sl[k] = slice_of(g, r, r->in[k], start, end, sa->ints[k])))
			return 0;
	ir_node **nodes = arena_array(g->A, (size_t)(g->nnodes + nseq), sizeof *nodes);
	memcpy(nodes, g->nodes, (size_t)i * sizeof *nodes);
	memcpy(nodes + i, sl, (size_t)nseq * sizeof *nodes);
	memcpy(nodes + i + nseq, g->nodes + i, (size_t)(g->nnodes - i) * sizeof *nodes);
	ir_set_nodes(g, nodes, g->nnodes + nseq);
	for (int k = 0; k < nseq; k++)
		r->in[k] = sl[k]->out[0];
	return nseq;
}

/* Axis labels of a view of a stacked output: the time axis, an axis of
 * the state (its index, >= 0), or a unit axis a view added. */
enum { LB_TIME = -1, LB_UNIT = -2 };


/* The labels of view node v's output from its input's (0), or -1 when v
 * is no view this follows: Identity, Transpose, and Squeeze, Unsqueeze or
 * Reshape that only remove or add unit axes (the labelled axes are never
 * units: last_steps checks). */
static int view_labels(const ir_node *v, const int *in, int *out)
{
	const ir_shape *a = &v->in[0]->shape, *b = &v->out[0]->shape;
	if (v->op == OP_IDENTITY) {
		memcpy(out, in, (size_t)a->rank * sizeof *out);
		return 0;
	}
	if (v->op == OP_TRANSPOSE) {
		ir_attr *p = ir_attr_find(v, "perm");
		if (b->rank != a->rank || (p && p->n != a->rank))
			return -1;
		for (int i = 0; i < b->rank; i++) {
			int64_t k = p ? p->ints[i] : a->rank - 1 - i;
			if (k < 0 || k >= a->rank)
				return -1;
			out[i] = in[k];
		}
		return 0;
	}
	if (v->op != OP_SQUEEZE && v->op != OP_UNSQUEEZE && v->op != OP_RESHAPE)
		return -1;
	int i = 0;
	for (int o = 0; o < b->rank; o++) {
		if (is_unit(b->d[o])) {
			out[o] = LB_UNIT;
			continue;
		}
		while (i < a->rank && is_unit(a->d[i]))
			i++;
		if (i >= a->rank || !ir_dim_eq(a->d[i], b->d[o]))
			return -1;
		out[o] = in[i++];
	}
	while (i < a->rank && is_unit(a->d[i]))
		i++;
	return i == a->rank ? 0 : -1;
}

/* A Gather or Slice of one step that hoist_last_steps may have read a
 * state instead, as match_last_step found it. */
typedef struct last_step {
	ir_node *r;             /* the recurrence */
	ir_value *y;            /* its stacked output the selection reads */
	ir_node *chain[8];      /* the views between them, from the selection up */
	int nchain;
	int st;                 /* the state whose next values y stacks */
	int first;              /* the step computed first (not the final one) */
	int units;              /* the views add unit axes: a Reshape of the state */
	int64_t axis;           /* the selection's axis */
} last_step;

/* The recurrence whose stacked output j the selection gth reads through
 * at most 8 views (into ls: r, y, chain, st), where that output stacks a
 * state's next value: 0 if none. */
static int stacked_state(ir_node *gth, last_step *ls, int *j)
{
	ls->nchain = 0;
	ir_value *y = gth->in[0];
	while (y->producer && y->producer->op != OP_RECURRENCE && ls->nchain < 8 && y->producer->nin >= 1 &&
	       y->producer->in[0])
		ls->chain[ls->nchain++] = y->producer, y = y->producer->in[0];
	ir_node *r = y->producer;
	if (!r || r->op != OP_RECURRENCE || !r->body || ir_attr_int(r, "has_lens", 0))
		return 0;
	int nst = (int)ir_attr_int(r, "n_state", 0), nseq = (int)ir_attr_int(r, "n_seq", 0);
	int nout = (int)ir_attr_int(r, "n_out", 0);
	*j = -1;
	for (int k = 0; k < nout && r->nout == nst + nout; k++)
		if (r->out[nst + k] == y)
			*j = k;
	ir_attr *oa = ir_attr_find(r, "out_axis"), *sa = ir_attr_find(r, "seq_axis");
	if (*j < 0 || !oa || *j >= oa->n || !sa || sa->n < 1 || nseq < 1 || r->body->noutputs != nst + nout)
		return 0;
	ls->st = -1;
	for (int k = 0; k < nst; k++)
		if (r->body->outputs[k] == r->body->outputs[nst + *j])
			ls->st = k;
	ls->r = r;
	ls->y = y;
	return ls->st >= 0;
}

/* The labels of the selection's input (into lab, its rank in *nl): y's
 * axes, the time axis at tax, through the chain of views.  0 if a view
 * does not keep them (or y has a unit axis, which a view could drop). */
static int chain_labels(const last_step *ls, int64_t tax, int state_rank, int *lab, int *nl)
{
	const ir_value *y = ls->y;
	*nl = y->shape.rank;
	int ok = *nl == state_rank + 1 && tax >= 0 && tax < *nl;
	for (int a = 0; ok && a < *nl; a++) {
		lab[a] = a == tax ? LB_TIME : a < tax ? a : a - 1;
		ok = !is_unit(y->shape.d[a]);       /* a unit axis could be squeezed away */
	}
	for (int c = ls->nchain - 1; ok && c >= 0; c--) {
		int nx[IR_MAX_RANK];
		ok = ls->chain[c]->out[0] && view_labels(ls->chain[c], lab, nx) == 0;
		*nl = ok ? ls->chain[c]->out[0]->shape.rank : 0;
		memcpy(lab, nx, IR_MAX_RANK * sizeof *lab);
	}
	return ok;
}

/* Whether what the selection leaves is the state's axes ss in order (a
 * Slice keeps a unit axis where the time axis was), with the unit axes of
 * views between them (ONNX LSTM's num_directions: then *units). */
static int leaves_state(const ir_node *gth, const ir_shape *ss, const int *lab, int nl, int64_t axis, int *units)
{
	ir_shape want = {.rank = 0};
	int ok = 1, slice = gth->op == OP_SLICE;
	*units = 0;
	for (int a = 0, k = 0; ok && a < nl; a++)
		if (a != axis && lab[a] == LB_UNIT)
			want.d[want.rank++] = ir_dim_const(1), *units = 1;
		else if (a != axis)
			ok = lab[a] == k, want.d[want.rank++] = ss->d[k++];
		else if (slice)
			want.d[want.rank++] = ir_dim_const(1);
	return ok && ir_shape_eq(&want, &gth->out[0]->shape);
}

/* Whether gth is a Gather (or a Slice of length one) of the final state's
 * step, or of the step computed first, of a state's stacked output, read
 * directly or through views that move the time axis (Transpose) or add and
 * remove unit axes; what it found into ls. */
static int match_last_step(ir_graph *g, ir_node *gth, last_step *ls)
{
	int j;
	if ((gth->op != OP_GATHER && gth->op != OP_SLICE) || !gth->in[0] || !gth->out[0] ||
	    !stacked_state(gth, ls, &j))
		return 0;
	ir_node *r = ls->r;
	int nseq = (int)ir_attr_int(r, "n_seq", 0);
	ir_attr *oa = ir_attr_find(r, "out_axis"), *sa = ir_attr_find(r, "seq_axis");
	const ir_shape *ss = &r->body->inputs[nseq + ls->st]->shape;
	ir_dim T = r->in[0]->shape.d[sa->ints[0]];
	int lab[IR_MAX_RANK], nl;
	int ok = chain_labels(ls, oa->ints[j], ss->rank, lab, &nl);
	int reverse = (int)ir_attr_int(r, "reverse", 0), fin;
	ls->first = 0;
	ls->axis = 0;
	if (gth->op == OP_SLICE) {
		fin = slices_final_step(gth, reverse, T, &ls->axis);
	} else {
		ls->axis = ir_attr_int(gth, "axis", 0), fin = reads_step(g, gth, T, !reverse);
		/* the step computed first (a reverse recurrence's last:
		 * a bidirectional out[:, -1]) */
		ls->first = !fin && reads_step(g, gth, T, reverse);
	}
	if (ls->axis < 0)
		ls->axis += nl;
	if (!ok || !(fin || ls->first) || ls->axis < 0 || ls->axis >= nl || lab[ls->axis] != LB_TIME)
		return 0;
	return leaves_state(gth, ss, lab, nl, ls->axis, &ls->units);
}

/* The selection gth reads the final state instead (made an output of the
 * recurrence if it was not): an Identity of it, a Reshape where views added
 * unit axes, an Unsqueeze for a Slice. */
static void read_final_state(ir_graph *g, ir_node *gth, const last_step *ls)
{
	ir_node *r = ls->r;
	int st = ls->st, nseq = (int)ir_attr_int(r, "n_seq", 0);
	if (!r->out[st]) {
		ir_value *fs = ir_value_new(g, NULL, VAL_TEMP, r->body->inputs[nseq + st]->dtype);
		fs->shape = r->body->inputs[nseq + st]->shape;
		fs->producer = r;
		r->out[st] = fs;
	}
	gth->in[0] = r->out[st];
	if (ls->units) {
		gth->op = OP_RESHAPE;
		gth->in[1] = ir_const_dims(g, gth->out[0]->shape.d, gth->out[0]->shape.rank);
		gth->nin = 2;
		ir_attr_remove(gth, "axis");
	} else if (gth->op == OP_SLICE) {
		int64_t axis = ls->axis;
		gth->op = OP_UNSQUEEZE;
		gth->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &axis);
		gth->nin = 2;
	} else {
		gth->op = OP_IDENTITY;
		gth->nin = 1;
		ir_attr_remove(gth, "axis");
	}
}

/* The views and stacked outputs nothing reads (any more, or ever: an
 * exporter's LSTM writes Y also when only Y_h is read) dropped, then the
 * recurrences nothing reads. */
static void drop_unread(ir_graph *g)
{
	ir_recount(g);
	ir_drop_dead(g, 0);
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *r = g->nodes[i];
		if (r->op != OP_RECURRENCE || !r->body)
			continue;
		int nst = (int)ir_attr_int(r, "n_state", 0);
		for (int k = (int)ir_attr_int(r, "n_out", 0) - 1; k >= 0; k--)
			if (r->nout > nst + k && r->out[nst + k] && r->out[nst + k]->nuses == 0 &&
			    !r->out[nst + k]->is_output && r->body->noutputs == r->nout)
				ir_rec_drop_output(r, k);
	}
	/* a recurrence nothing reads any more (the reverse direction of a
	 * bidirectional out[:, -1, :H]) goes, with what only it read (every
	 * other node is read: the sweep above) */
	if (ir_drop_dead(g, IR_DEAD_ONCE | IR_DEAD_BODIES))
		ir_drop_dead(g, 0);
	ir_recount(g);
}

/* Item 3 of the header: a Gather (or a Slice of length one: then an
 * Unsqueeze of the final state) of the final state's step of a state's
 * stacked output, read directly or through views that move the time axis
 * (Transpose) or add and remove unit axes (ONNX LSTM's num_directions). */
static void hoist_last_steps(ir_graph *g)
{
	int moved = sink_gathers(g);
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *gth = g->nodes[i];
		last_step ls;
		if (!match_last_step(g, gth, &ls))
			continue;
		if (ls.first) {
			/* nothing else read: the recurrence runs that step only,
			 * whose value is then its final state */
			int at = 0;
			while (at < i && g->nodes[at] != ls.r)
				at++;
			if (at == i || !first_step_only(ls.r, ls.y, ls.chain, ls.nchain))
				continue;
			int added = first_step(g, ls.r, at);
			if (!added)
				continue;
			i += added;
		}
		read_final_state(g, gth, &ls);
		ir_recount(g);          /* first_step_only counts the readers */
	}
	drop_unread(g);
	if (moved)
		canon_views(g); /* the views of views the moves left */
}

int pass_select(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	(void)o;
	hoist_last_steps(g);
	return 0;
}
