/* pass_grad.c: the loss and its gradients, by reverse-mode differentiation
 * of the IR (cellc compile --train).
 *
 * requires: pass_split (recurrences lowered and hoisted); a train build
 *           (g->train): every derived weight is a run-time value computed from
 *           the parameters (pass_lower_rnn, cells.c, pass_hoist, infer_fold
 *           keep them as nodes under --train).
 * produces: inputs `target` [, `mask`] and outputs `loss`, `grad.<P>` for
 *           every parameter, `grad.<X>` for every f32 model input and `dstate`
 *           (dL/dh_t of the first recurrence's first state, [T, B, H]),
 *           appended in that order; the backward nodes follow every forward
 *           node in the root graph (ir_train.bwd_start); g->train records what the
 *           emitter needs of them (ir.h, ir_train: graded).
 * Also expands the ONNX Gradient operator (ai.onnx.preview.training), with or
 * without --train.
 * breaks:   nothing: the forward recurrences get extra stacked outputs (the
 *           states s_{t-1} and the outputs of the step's products; attribute
 *           n_saved counts them, they are the last outputs), which their
 *           backward recurrences read.
 *
 * Root nodes are differentiated by the usual rules (un-broadcasting with
 * ReduceSum; a node without a rule is a located error; docs/training.md
 * lists the differentiable operators).  Normalisations recompute their
 * statistics from X; Conv, Pad and the class losses have gradient nodes of
 * their own (ConvGrad, PadGrad, ClassLossGrad); Min/Max and ReduceMax/Min
 * split the gradient evenly among tied elements, as torch.amax does.  A RECURRENCE's
 * adjoint is a RECURRENCE running the other way in time (backpropagation
 * through time): its per-step inputs are the forward
 * per-step inputs, the saved states s_{t-1} and products, and the gradients
 * of the stacked outputs; its carried states are the gradients of the
 * states; its body recomputes the step's element-wise values from the saved
 * ones and then runs the adjoint of the step.  Gradients of values the body
 * captures (weights, biases) are not summed step by step: the body stacks
 * the per-step operands and the root graph reduces them once, so the
 * gradient of a recurrent weight W in a product h W^T is ONE GEMM
 * dW = dA^T H over all T*B rows, and a bias gradient is one column sum.
 * With sequence_lens the backward recurrence takes the same lengths: each row
 * runs over its own valid steps in the other direction.
 *
 * The adjoint of a RECURRENCE is in pass_grad_rec.c, the loss in
 * pass_grad_loss.c; grad.h is what the three share.
 *
 * Legend: T steps, B batch rows, N/K product sizes, P a parameter.
 */
#include "elem.h"
#include "grad.h"
#include "infer.h"
#include "util.h"

#include <string.h>

/* ---- building nodes (the smallest are in grad.h) ------------------------------------ */

/* A Reshape target for shape s (symbolic dims as a symbolic constant). */
static ir_value *shape_const(gctx *C, const ir_shape *s) { return ir_const_dims(C->tg, s->d, s->rank); }

/* float zeros of shape s, rank 1 or more (symbolic sizes included) */
static ir_value *zeros_shaped(gctx *C, const ir_shape *s) { return op1(C, OP_CONSTOFSHAPE, shape_const(C, s)); }

ir_value *grad_reshape(gctx *C, ir_value *v, const ir_shape *s)
{
	if (ir_shape_eq(&v->shape, s))
		return v;
	ir_value *in[2] = {v, shape_const(C, s)};
	return fin(C, mk(C, OP_RESHAPE, 2, in));
}

static ir_value *reduce(gctx *C, ir_value *v, int lo, int hi, int keep)
{
	int64_t ax[IR_MAX_RANK];
	for (int a = lo; a <= hi; a++)
		ax[a - lo] = a;
	ir_value *in[2] = {v, ints(C, hi - lo + 1, ax)};
	ir_node *n = mk(C, OP_REDUCESUM, 2, in);
	ir_attr_set_int(n, "keepdims", keep);
	return fin(C, n);
}

ir_value *grad_gemm(gctx *C, ir_value *a, ir_value *b, int ta, int tb, double alpha)
{
	ir_value *in[2] = {a, b};
	ir_node *n = mk(C, OP_GEMM, 2, in);
	if (ta)
		ir_attr_set_int(n, "transA", 1);
	if (tb)
		ir_attr_set_int(n, "transB", 1);
	if (alpha != 1.0)
		ir_attr_set_float(n, "alpha", (float)alpha);
	return fin(C, n);
}

static ir_value *transpose(gctx *C, ir_value *v, int r, const int64_t *perm)
{
	ir_node *n = mk(C, OP_TRANSPOSE, 1, &v);
	ir_attr_set_ints(n, "perm", r, perm);
	return fin(C, n);
}

/* g (shaped like a broadcast result) summed down to shape `to`. */
static ir_value *unbroadcast(gctx *C, ir_value *g, const ir_shape *to)
{
	if (ir_shape_eq(&g->shape, to))
		return g;
	int lead = g->shape.rank - to->rank;
	if (lead < 0)
		return NULL;
	if (lead > 0)
		g = reduce(C, g, 0, lead - 1, 0);
	for (int i = 0; i < to->rank;) {
		int one = ir_dim_is_const(to->d[i]) && to->d[i].k == 1 &&
			  !(ir_dim_is_const(g->shape.d[i]) && g->shape.d[i].k == 1);
		if (!one) {
			i++;
			continue;
		}
		int j = i;
		while (j + 1 < to->rank && ir_dim_is_const(to->d[j + 1]) && to->d[j + 1].k == 1)
			j++;
		g = reduce(C, g, i, j, 1);
		i = j + 1;
	}
	return grad_reshape(C, g, to);
}

/* ---- values and their gradients -------------------------------------------------------- */


static int need(gctx *C, const ir_value *v)
{
	if (!v)
		return 0;
	if (in_src(C, v))
		return C->needs[v->id];
	return C->map && root_needs(C->X, v);
}


/* Adds gradient g (already of v's shape) to v. */
void grad_acc(gctx *C, ir_value *v, ir_value *g)
{
	if (!g || !need(C, v))
		return;
	if (!in_src(C, v)) {
		/* a value the body captures: summed over the steps by the root graph */
		if (C->ncb == C->capcb) {
			int cap = C->capcb ? 2 * C->capcb : 16;
			C->cb = arena_grow(C->tg->A, C->cb, (size_t)C->ncb, (size_t)cap, sizeof *C->cb);
			C->capcb = cap;
		}
		C->cb[C->ncb++] = (contrib){.c = v, .kind = CB_ELEM, .a = g};
		return;
	}
	ir_value **s = &C->grad[v->id];
	*s = *s ? add(C, *s, g) : g;
}

/* Adds g (shaped like the node's output) to v, summing broadcast axes. */
void grad_acc_ub(gctx *C, ir_value *v, ir_value *g)
{
	if (!g || !need(C, v))
		return;
	if (!in_src(C, v)) {
		grad_acc(C, v, g);   /* un-broadcast once, outside the loop */
		return;
	}
	ir_value *u = unbroadcast(C, g, &v->shape);
	if (!u) {
		fail(C, "cannot differentiate: operand '%s' has more dimensions than the result", v->name);
		return;
	}
	grad_acc(C, v, u);
}

static void acc_part(gctx *C, ir_value *v, int64_t lo, int64_t hi, ir_value *g)
{
	if (!g || !need(C, v))
		return;
	part *p = arena_alloc(C->tg->A, sizeof *p);
	*p = (part){lo, hi, g, C->parts[v->id]};
	C->parts[v->id] = p;
}

ir_value *grad_slice_scatter(gctx *C, ir_value *like, ir_value *u, ir_value *starts, ir_value *ends,
			ir_value *axes, ir_value *steps)
{
	ir_value *in[6] = {like, u, starts, ends, axes, steps};
	int nin = steps ? 6 : axes ? 5 : 4;
	return fin(C, mk(C, OP_SLICESCATTER, nin, in));
}

/* v's gradient, with pending slice parts joined in. */
ir_value *grad_get(gctx *C, ir_value *v)
{
	if (!v || !in_src(C, v))
		return NULL;
	part *p = C->parts[v->id];
	if (p) {
		C->parts[v->id] = NULL;
		int64_t N = v->shape.d[v->shape.rank - 1].k;
		/* sort by lo (insertion), check that the parts tile [0, N) */
		int n = 0, tiles = 1;
		for (part *q = p; q; q = q->next)
			n++;
		part **sorted = arena_array(C->tg->A, (size_t)n, sizeof *sorted);
		for (n = 0; p; p = p->next)
			sorted[n++] = p;
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && sorted[j - 1]->lo > sorted[j]->lo; j--) {
				part *t = sorted[j];
				sorted[j] = sorted[j - 1];
				sorted[j - 1] = t;
			}
		int64_t at = 0;
		for (int i = 0; i < n && tiles; i++) {
			tiles = sorted[i]->lo == at;
			at = sorted[i]->hi;
		}
		tiles = tiles && at == N;
		ir_value *sum;
		if (tiles && n > 1) {
			ir_value **in = arena_array(C->tg->A, (size_t)n, sizeof *in);
			for (int i = 0; i < n; i++)
				in[i] = sorted[i]->g;
			sum = NULL;
			/* the gate pre-activation a = u + r: du and dr are the same parts */
			for (int k = 0; k < C->ncats && !sum; k++) {
				ir_node *c = C->cats[k];
				int same = c->nin == n;
				for (int i = 0; same && i < n; i++)
					same = c->in[i] == in[i];
				if (same)
					sum = c->out[0];
			}
			if (!sum) {
				ir_node *c = mk(C, OP_CONCAT, n, in);
				ir_attr_set_int(c, "axis", v->shape.rank - 1);
				sum = fin(C, c);
				if (C->ncats < (int)COUNTOF(C->cats))
					C->cats[C->ncats++] = c;
			}
		} else if (tiles) {
			sum = sorted[0]->g;
		} else {
			sum = NULL;
			for (int i = 0; i < n; i++) {
				ir_value *s = grad_slice_scatter(C, V(C, v), sorted[i]->g, int1(C, sorted[i]->lo),
							    int1(C, sorted[i]->hi), int1(C, v->shape.rank - 1), NULL);
				sum = sum ? add(C, sum, s) : s;
			}
		}
		grad_acc(C, v, sum);
	}
	/* asked for, v's gradient is whole: the emitter names it after v */
	ir_value *g = C->grad[v->id];
	if (g && g->graph == C->tg && g->producer && !g->grad_of)
		g->grad_of = v;
	return g;
}

/* ---- rules ------------------------------------------------------------------------------ */

static int last_axis_slice(const ir_node *n, int64_t *lo, int64_t *hi)
{
	const ir_value *x = n->in[0];
	int r = x->shape.rank;
	if (r < 1 || !ir_dim_is_const(x->shape.d[r - 1]) || !ir_value_is_const(n->in[1]) ||
	    !ir_value_is_const(n->in[2]) || ir_shape_const_numel(&n->in[1]->shape) != 1)
		return 0;
	if (n->nin > 3 && n->in[3] && (!ir_value_is_const(n->in[3]) || (ir_const_int(n->in[3], 0) != r - 1 &&
									   ir_const_int(n->in[3], 0) != -1)))
		return 0;
	if (n->nin <= 3 && r != 1)
		return 0;
	if (n->nin > 4 && n->in[4] && (!ir_value_is_const(n->in[4]) || ir_const_int(n->in[4], 0) != 1))
		return 0;
	int64_t N = x->shape.d[r - 1].k, s = ir_const_int(n->in[1], 0), e = ir_const_int(n->in[2], 0);
	s = s < 0 ? s + N : s;
	e = e < 0 ? e + N : e;
	s = s < 0 ? 0 : s > N ? N : s;
	e = e < 0 ? 0 : e > N ? N : e;
	if (e <= s)
		return 0;
	*lo = s;
	*hi = e;
	return 1;
}

static int axis_attr(const ir_node *n, int r, int64_t def)
{
	int64_t a = ir_attr_int(n, "axis", def);
	return (int)(a < 0 ? a + r : a);
}

static void rule_elem(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0], *b = n->nin > 1 ? n->in[1] : NULL, *y = V(C, n->out[0]);
	ir_value *Va = V(C, a), *Vb = b ? V(C, b) : NULL;
	switch (n->op) {
	case OP_ADD: grad_acc_ub(C, a, dy); grad_acc_ub(C, b, dy); return;
	case OP_SUB: grad_acc_ub(C, a, dy); if (need(C, b)) grad_acc_ub(C, b, op1(C, OP_NEG, dy)); return;
	case OP_MUL:
		if (need(C, a)) grad_acc_ub(C, a, mul(C, dy, Vb));
		if (need(C, b)) grad_acc_ub(C, b, mul(C, dy, Va));
		return;
	case OP_DIV:
		if (need(C, a)) grad_acc_ub(C, a, dvd(C, dy, Vb));
		if (need(C, b)) grad_acc_ub(C, b, op1(C, OP_NEG, dvd(C, mul(C, dy, y), Vb)));
		return;
	case OP_NEG: grad_acc(C, a, op1(C, OP_NEG, dy)); return;
	case OP_IDENTITY: grad_acc(C, a, dy); return;
	case OP_SIGMOID: grad_acc(C, a, mul(C, dy, mul(C, y, sub(C, fc(C, 1), y)))); return;
	case OP_TANH: grad_acc(C, a, mul(C, dy, sub(C, fc(C, 1), mul(C, y, y)))); return;
	case OP_RELU: grad_acc(C, a, mul(C, dy, op1(C, OP_SIGN, y))); return;
	case OP_EXP: grad_acc(C, a, mul(C, dy, y)); return;
	case OP_LOG: grad_acc(C, a, dvd(C, dy, Va)); return;
	case OP_SQRT: grad_acc(C, a, dvd(C, scale(C, 0.5, dy), y)); return;
	case OP_ABS: grad_acc(C, a, mul(C, dy, op1(C, OP_SIGN, Va))); return;
	case OP_SIGN: return;   /* zero almost everywhere */
	case OP_POW:
		/* d a^b / da = b a^(b-1);  d a^b / db = a^b log(a) */
		if (need(C, a))
			grad_acc_ub(C, a, mul(C, dy, mul(C, Vb, op2(C, OP_POW, Va, sub(C, Vb, fc(C, 1))))));
		if (need(C, b))
			grad_acc_ub(C, b, mul(C, dy, mul(C, y, op1(C, OP_LOG, Va))));
		return;
	case OP_AFFINE: grad_acc(C, a, scale(C, elem_attr_float(n, "alpha"), dy)); return;
	case OP_SOFTSIGN: {
		ir_value *d = add(C, fc(C, 1), op1(C, OP_ABS, Va));
		grad_acc(C, a, dvd(C, dy, mul(C, d, d)));
		return;
	}
	case OP_SOFTPLUS: grad_acc(C, a, mul(C, dy, op1(C, OP_SIGMOID, Va))); return;
	case OP_HARDSIGMOID: {
		/* alpha where 0 < y < 1 */
		float alpha = elem_attr_float(n, "alpha");
		ir_value *in = mul(C, op1(C, OP_SIGN, op1(C, OP_RELU, y)),
				   op1(C, OP_SIGN, op1(C, OP_RELU, sub(C, fc(C, 1), y))));
		grad_acc(C, a, mul(C, dy, scale(C, alpha, in)));
		return;
	}
	case OP_THRELU: {
		/* 1 where x > alpha */
		float alpha = elem_attr_float(n, "alpha");
		grad_acc(C, a, mul(C, dy, op1(C, OP_SIGN, op1(C, OP_RELU, sub(C, Va, fc(C, alpha))))));
		return;
	}
	case OP_LEAKYRELU: case OP_ELU: {
		/* 1 where x > 0, else alpha (LeakyRelu) or y + alpha (Elu) */
		float alpha = elem_attr_float(n, "alpha");
		ir_value *pos = op1(C, OP_SIGN, op1(C, OP_RELU, Va));
		ir_value *neg = n->op == OP_ELU ? add(C, y, fc(C, alpha)) : fc(C, alpha);
		ir_value *d = add(C, pos, mul(C, sub(C, fc(C, 1), pos), neg));
		grad_acc(C, a, mul(C, dy, d));
		return;
	}
	case OP_SCALEDTANH: {
		float alpha = elem_attr_float(n, "alpha"), beta = elem_attr_float(n, "beta");
		ir_value *r = scale(C, 1.0 / alpha, y);
		grad_acc(C, a, mul(C, dy, scale(C, (double)alpha * beta, sub(C, fc(C, 1), mul(C, r, r)))));
		return;
	}
	case OP_CLIP: {
		ir_value *m = NULL;
		if (n->nin > 1 && n->in[1])
			m = op1(C, OP_SIGN, op1(C, OP_RELU, sub(C, Va, V(C, n->in[1]))));
		if (n->nin > 2 && n->in[2]) {
			ir_value *u = op1(C, OP_SIGN, op1(C, OP_RELU, sub(C, V(C, n->in[2]), Va)));
			m = m ? mul(C, m, u) : u;
		}
		grad_acc(C, a, m ? mul(C, dy, m) : dy);
		return;
	}
	case OP_CAST:
		if (a->dtype == DT_F32 && n->out[0]->dtype == DT_F32)
			grad_acc(C, a, dy);
		return;
	default:
		fail(C, "cannot differentiate %s: no gradient rule for this operator (--train)",
		     ir_op_name(n->op));
	}
}

static void rule_gemm(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *A = n->in[0], *Bm = n->in[1], *Cc = n->nin > 2 ? n->in[2] : NULL;
	int ta = (int)ir_attr_int(n, "transA", 0), tb = (int)ir_attr_int(n, "transB", 0);
	double alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	if (need(C, A)) {
		if (!in_src(C, A) && C->map) {
			fail(C, "cannot differentiate a product whose left operand '%s' is captured by the "
			     "recurrence body", A->name);
			return;
		}
		grad_acc(C, A, ta ? grad_gemm(C, V(C, Bm), dy, tb, 1, alpha) : grad_gemm(C, dy, V(C, Bm), 0, !tb, alpha));
	}
	if (need(C, Bm)) {
		if (C->map && !in_src(C, Bm)) {
			if (ta) {
				fail(C, "cannot differentiate a transposed-A product in a recurrence body%s", "");
				return;
			}
			if (C->ncb == C->capcb) {
				int cap = C->capcb ? 2 * C->capcb : 16;
				C->cb = arena_grow(C->tg->A, C->cb, (size_t)C->ncb, (size_t)cap, sizeof *C->cb);
				C->capcb = cap;
			}
			C->cb[C->ncb++] = (contrib){.c = Bm, .kind = CB_GEMM, .a = dy, .b = V(C, A), .n = n};
		} else {
			grad_acc(C, Bm, tb ? grad_gemm(C, dy, V(C, A), 1, ta, alpha) : grad_gemm(C, V(C, A), dy, !ta, 0, alpha));
		}
	}
	if (Cc && need(C, Cc))
		grad_acc_ub(C, Cc, scale(C, beta, dy));
}

static void rule_matmul(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *A = n->in[0], *Bm = n->in[1];
	int ra = A->shape.rank, rb = Bm->shape.rank;
	if (C->map && ((need(C, Bm) && !in_src(C, Bm)) || (need(C, A) && !in_src(C, A)))) {
		fail(C, "cannot differentiate MatMul with an operand ('%s') captured by the recurrence body",
		     need(C, Bm) && !in_src(C, Bm) ? Bm->name : A->name);
		return;
	}
	if (ra == 2 && rb == 2) {
		if (need(C, A))
			grad_acc(C, A, grad_gemm(C, dy, V(C, Bm), 0, 1, 1.0));
		if (need(C, Bm))
			grad_acc(C, Bm, grad_gemm(C, V(C, A), dy, 1, 0, 1.0));
		return;
	}
	if (ra >= 3 && rb == 2) {
		int64_t p[2] = {1, 0};
		if (need(C, A))
			grad_acc(C, A, op2(C, OP_MATMUL, dy, transpose(C, V(C, Bm), 2, p)));
		if (need(C, Bm)) {
			ir_node *f1 = mk(C, OP_FLATTEN, 1, (ir_value *[]){V(C, A)});
			ir_attr_set_int(f1, "axis", ra - 1);
			ir_node *f2 = mk(C, OP_FLATTEN, 1, &dy);
			ir_attr_set_int(f2, "axis", ra - 1);
			grad_acc(C, Bm, grad_gemm(C, fin(C, f1), fin(C, f2), 1, 0, 1.0));
		}
		return;
	}
	if (ra == 3 && rb == 3 && ir_shape_eq(&dy->shape, &n->out[0]->shape) &&
	    ir_dim_eq(A->shape.d[0], Bm->shape.d[0])) {
		int64_t p[3] = {0, 2, 1};
		if (need(C, A))
			grad_acc(C, A, op2(C, OP_MATMUL, dy, transpose(C, V(C, Bm), 3, p)));
		if (need(C, Bm))
			grad_acc(C, Bm, op2(C, OP_MATMUL, transpose(C, V(C, A), 3, p), dy));
		return;
	}
	fail(C, "cannot differentiate MatMul of these ranks (%s): 2-D, N-D x 2-D and equal-batch 3-D are supported",
	     ir_shape_str(C->tg->A, ir_root(C->tg), &A->shape));
}

/* Gather of X by indices I along axis a (an embedding lookup, a batch
 * reordered by run-time indices): each picked slice's gradient is added
 * back where it came from, a ScatterND with reduction add into zeros
 * shaped like X.  ScatterND names slices of the leading axis, so X's axis a
 * and dy's axes of I move to the front first (and back after). */
static ir_value *gather_grad(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = V(C, n->in[0]), *I = V(C, n->in[1]);
	int r = x->shape.rank, q = I->shape.rank, ax = axis_attr(n, r, 0);
	if (r + q - 1 > IR_MAX_RANK || q >= IR_MAX_RANK)
		return fail(C, "cannot differentiate Gather: its indices and X have too many axes together%s", ""),
		       NULL;
	int64_t px[IR_MAX_RANK], pb[IR_MAX_RANK], pu[IR_MAX_RANK];
	for (int i = 0; i < r; i++)              /* X's axis ax first */
		px[i] = i == 0 ? ax : i <= ax ? i - 1 : i;
	for (int i = 0; i < r; i++)              /* and back */
		pb[i] = i < ax ? i + 1 : i == ax ? 0 : i;
	for (int i = 0; i < r - 1 + q; i++)      /* dy: the axes of I first */
		pu[i] = i < q ? ax + i : i < q + ax ? i - q : i;
	ir_value *xt = ax ? transpose(C, x, r, px) : x, *u = ax ? transpose(C, dy, r - 1 + q, pu) : dy;
	if (I->dtype != DT_I64) {
		ir_node *c = mk(C, OP_CAST, 1, &I);
		ir_attr_set_int(c, "to", DT_I64);
		c->out[0] = ir_value_new(C->tg, NULL, VAL_TEMP, DT_I64);
		I = fin(C, c);
	}
	ir_value *in[3] = {zeros_shaped(C, &xt->shape), op2(C, OP_UNSQUEEZE, I, int1(C, q)), u};
	ir_node *sc = mk(C, OP_SCATTERND, 3, in);
	ir_attr_set_string(sc, "reduction", "add");
	ir_value *g = fin(C, sc);
	return ax ? transpose(C, g, r, pb) : g;
}

/* A Tile: output axis j of r_j d_j elements holds tile k, element i at
 * k d_j + i: dy viewed with each repeated axis split in [r_j, d_j],
 * summed over the r_j */
static void rule_tile(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0];
	int r = a->shape.rank, m = 0, nred = 0;
	ir_dim split[IR_MAX_RANK];
	int64_t red[IR_MAX_RANK];
	for (int j = 0; j < r; j++) {
		ir_dim rep = infer_elem_dim(n->in[1], j);
		if (!(ir_dim_is_const(rep) && rep.k == 1)) {
			if (m + 2 > IR_MAX_RANK)
				return (void)fail(C, "cannot differentiate Tile: too many repeated axes%s", "");
			red[nred++] = m;
			split[m++] = rep;
		} else if (m + 1 > IR_MAX_RANK) {
			return (void)fail(C, "cannot differentiate Tile: too many repeated axes%s", "");
		}
		split[m++] = a->shape.d[j];
	}
	if (!nred) {
		grad_acc(C, a, dy);
		return;
	}
	ir_shape sp = {.rank = m};
	memcpy(sp.d, split, (size_t)m * sizeof *split);
	ir_value *in[2] = {grad_reshape(C, dy, &sp), ints(C, nred, red)};
	ir_node *sum = mk(C, OP_REDUCESUM, 2, in);
	ir_attr_set_int(sum, "keepdims", 0);
	grad_acc(C, a, fin(C, sum));
}

/* A Slice: a flip flipped back, a last-axis part kept for its Concat, else
 * dy scattered into zeros of the input's shape (constant bounds, positive steps). */
static void rule_slice(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0];
	int64_t lo, hi, ax;
	if (ir_slice_flips(n, &ax)) {   /* torch.flip: dy flipped back */
		ir_value *in[5] = {dy, V(C, n->in[1]), V(C, n->in[2]), int1(C, ax), int1(C, -1)};
		grad_acc(C, a, fin(C, mk(C, OP_SLICE, 5, in)));
		return;
	}
	if (in_src(C, a) && last_axis_slice(n, &lo, &hi)) {
		acc_part(C, a, lo, hi, dy);
		return;
	}
	if (!in_src(C, a) && C->map) {
		fail(C, "cannot differentiate a Slice of '%s', a value captured by the recurrence body", a->name);
		return;
	}
	for (int k = 1; k < n->nin; k++)
		if (n->in[k] && !ir_value_is_const(n->in[k]))
			return (void)fail(C, "cannot differentiate Slice with run-time bounds%s", "");
	if (n->nin > 4 && n->in[4])
		for (int64_t i = 0; i < ir_shape_const_numel(&n->in[4]->shape); i++)
			if (ir_const_int(n->in[4], i) <= 0)
				return (void)fail(C, "cannot differentiate Slice with negative steps%s", "");
	grad_acc(C, a, grad_slice_scatter(C, V(C, a), dy, V(C, n->in[1]), V(C, n->in[2]),
				n->nin > 3 ? V(C, n->in[3]) : NULL, n->nin > 4 ? V(C, n->in[4]) : NULL));
}

/* A Concat: each operand's columns of dy along the axis. */
static void rule_concat(gctx *C, ir_node *n, ir_value *dy)
{
	int r = n->out[0]->shape.rank, ax = axis_attr(n, r, 0);
	int64_t off = 0;
	int symbolic = 0;
	for (int i = 0; i < n->nin; i++)
		symbolic |= !ir_dim_is_const(n->in[i]->shape.d[ax]);
	if (symbolic) {
		/* along a run-time axis (torch.cat of a context of T1 frames and a
		 * chunk of T2): dy split back into the parts' sizes, run-time too */
		enum { MAX_PARTS = 16 };
		ir_dim sizes[MAX_PARTS];
		if (n->nin > MAX_PARTS)
			return (void)fail(C, "cannot differentiate a Concat of more than %s inputs along a run-time axis",
					  "16");
		for (int i = 0; i < n->nin; i++)
			sizes[i] = n->in[i]->shape.d[ax];
		ir_value *in[2] = {dy, ir_const_dims(C->tg, sizes, n->nin)};
		ir_build B = grad_build(C);
		ir_node *sp = ir_build_node(&B, C->tg, OP_SPLIT, 2, in, n->nin);
		ir_attr_set_int(sp, "axis", ax);
		for (int i = 1; i < n->nin; i++)
			ir_build_out(&B, sp, i, dy->dtype);
		ir_value *g0 = ir_build_done(&B, sp, NULL);
		for (int i = 0; i < n->nin; i++)
			if (need(C, n->in[i]))
				grad_acc(C, n->in[i], i ? sp->out[i] : g0);
		return;
	}
	for (int i = 0; i < n->nin; i++) {
		ir_value *p = n->in[i];
		ir_dim d = p->shape.d[ax];
		if (need(C, p)) {
			ir_value *in[4] = {dy, int1(C, off), int1(C, off + d.k), int1(C, ax)};
			grad_acc(C, p, fin(C, mk(C, OP_SLICE, 4, in)));
		}
		off += d.k;
	}
}

/* A Split: each output's gradient scattered back into its place, summed. */
static void rule_split(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0];
	int r = a->shape.rank, ax = axis_attr(n, r, 0);
	int64_t off = 0;
	ir_value *sum = NULL;
	for (int i = 0; i < n->nout; i++) {
		ir_value *o = n->out[i];
		if (!o)
			continue;
		ir_dim d = o->shape.d[ax];
		if (!ir_dim_is_const(d))
			return (void)fail(C, "cannot differentiate Split along a symbolic axis (%s)", o->name);
		ir_value *go = grad_get(C, o);
		if (go) {
			ir_value *s = grad_slice_scatter(C, V(C, a), go, int1(C, off), int1(C, off + d.k),
						    int1(C, ax), NULL);
			sum = sum ? add(C, sum, s) : s;
		}
		off += d.k;
	}
	grad_acc(C, a, sum);
}

/* A Gather: of one constant index, dy scattered back into its place; else gather_grad. */
static void rule_gather(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0];
	ir_value *idx = n->in[1];
	int r = a->shape.rank, ax = axis_attr(n, r, 0);
	if (!ir_value_is_const(idx) || ir_shape_const_numel(&idx->shape) != 1) {
		grad_acc(C, a, gather_grad(C, n, dy));
		return;
	}
	int64_t i = ir_const_int(idx, 0);
	if (i < 0 && ir_dim_is_const(a->shape.d[ax]))
		i += a->shape.d[ax].k;  /* else counted from the end at run time */
	ir_value *u = dy;
	if (idx->shape.rank == 0) {
		ir_value *in[2] = {dy, int1(C, ax)};
		u = fin(C, mk(C, OP_UNSQUEEZE, 2, in));
	}
	grad_acc(C, a, grad_slice_scatter(C, V(C, a), u, int1(C, i), int1(C, i < 0 || i >= INT32_MAX ? INT32_MAX : i + 1), int1(C, ax), NULL));
}

/* The views and the operators that move elements: one case per operator. */
static void rule_shape(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0];
	switch (n->op) {
	case OP_RESHAPE: case OP_FLATTEN: case OP_SQUEEZE: case OP_UNSQUEEZE:
		grad_acc(C, a, grad_reshape(C, dy, &a->shape));
		return;
	case OP_EXPAND:
		grad_acc_ub(C, a, dy);
		return;
	case OP_TILE:
		rule_tile(C, n, dy);
		return;
	case OP_TRANSPOSE: {
		int r = a->shape.rank;
		int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK];
		ir_attr *pa = ir_attr_find(n, "perm");
		for (int i = 0; i < r; i++)
			perm[i] = pa && pa->n == r ? pa->ints[i] : r - 1 - i;
		for (int i = 0; i < r; i++)
			inv[perm[i]] = i;
		grad_acc(C, a, transpose(C, dy, r, inv));
		return;
	}
	case OP_SLICE:
		rule_slice(C, n, dy);
		return;
	case OP_CONCAT:
		rule_concat(C, n, dy);
		return;
	case OP_SPLIT:
		rule_split(C, n, dy);
		return;
	case OP_GATHER:
		rule_gather(C, n, dy);
		return;
	default:
		fail(C, "cannot differentiate %s: no gradient rule for this operator (--train)", ir_op_name(n->op));
	}
}

static void rule_softmax(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *a = n->in[0], *y = V(C, n->out[0]);
	int r = a->shape.rank, ax = axis_attr(n, r, -1);
	if (n->op == OP_SOFTMAX) {
		ir_value *s = reduce(C, mul(C, dy, y), ax, ax, 1);
		grad_acc(C, a, mul(C, y, sub(C, dy, s)));
	} else {
		ir_value *s = reduce(C, dy, ax, ax, 1);
		grad_acc(C, a, sub(C, dy, mul(C, op1(C, OP_EXP, y), s)));
	}
}

/* d<G, expm(S)>/dS = the upper right block of expm([[S^T, G], [0, S^T]]). */
static void rule_matexp(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *S = n->in[0];
	int64_t H = S->shape.d[0].k, p[2] = {1, 0};
	ir_value *X = transpose(C, V(C, S), 2, p);
	ir_value *Z = ir_const_new(C->tg, NULL, DT_F32, &S->shape, NULL);
	ir_value *top[2] = {X, dy}, *bot[2] = {Z, X};
	ir_node *t = mk(C, OP_CONCAT, 2, top), *b = mk(C, OP_CONCAT, 2, bot);
	ir_attr_set_int(t, "axis", 1);
	ir_attr_set_int(b, "axis", 1);
	ir_value *rows[2] = {fin(C, t), fin(C, b)};
	ir_node *big = mk(C, OP_CONCAT, 2, rows);
	ir_attr_set_int(big, "axis", 0);
	ir_value *e = op1(C, OP_MATEXP, fin(C, big));
	int64_t st[2] = {0, H}, en[2] = {H, 2 * H}, ax[2] = {0, 1};
	ir_value *in[4] = {e, ints(C, 2, st), ints(C, 2, en), ints(C, 2, ax)};
	grad_acc(C, S, fin(C, mk(C, OP_SLICE, 4, in)));
}

/* ---- rules: selections, reductions, normalisations, Conv, Pad, class losses ------------ */

static ir_value *where(gctx *C, ir_value *c, ir_value *a, ir_value *b)
{
	ir_value *in[3] = {c, a, b};
	return fin(C, mk(C, OP_WHERE, 3, in));
}

/* 1 where a == b, else 0 (f32, broadcast). */
static ir_value *equal01(gctx *C, ir_value *a, ir_value *b)
{
	return where(C, op2(C, OP_EQUAL, a, b), fc(C, 1), fc(C, 0));
}

/* v summed over the axes with red[a] set, dims kept (one node per run). */
static ir_value *reduce_axes_keep(gctx *C, ir_value *v, const unsigned char *red)
{
	int r = v->shape.rank;
	for (int a = 0; a < r;) {
		if (!red[a]) {
			a++;
			continue;
		}
		int b = a;
		while (b + 1 < r && red[b + 1])
			b++;
		v = reduce(C, v, a, b, 1);
		a = b + 1;
	}
	return v;
}

static ir_value *expand_to(gctx *C, ir_value *v, const ir_shape *s)
{
	if (ir_shape_eq(&v->shape, s))
		return v;
	ir_value *in[2] = {v, shape_const(C, s)};
	return fin(C, mk(C, OP_EXPAND, 2, in));
}

/* 1 / (the number of elements of shape s on the axes red): a constant, or
 * computed at run time (kept dims) where one of them is symbolic. */
static ir_value *inv_count(gctx *C, const ir_shape *s, const unsigned char *red)
{
	double cnt = 1;
	int symbolic = 0;
	for (int a = 0; a < s->rank; a++)
		if (red[a]) {
			if (ir_dim_is_const(s->d[a]))
				cnt *= (double)s->d[a].k;
			else
				symbolic = 1;
		}
	if (!symbolic)
		return fc(C, cnt > 0 ? 1.0 / cnt : 0.0);
	return dvd(C, fc(C, 1), reduce_axes_keep(C, expand_to(C, fc(C, 1), s), red));
}

/* Where: the condition is not differentiated. */
static void rule_where(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *c = V(C, n->in[0]);
	if (need(C, n->in[1]))
		grad_acc_ub(C, n->in[1], where(C, c, dy, fc(C, 0)));
	if (need(C, n->in[2]))
		grad_acc_ub(C, n->in[2], where(C, c, fc(C, 0), dy));
}

/* Min/Max: the gradient goes to the inputs equal to the result, split evenly
 * among them on ties (torch.maximum/minimum give each of two tied inputs
 * half, torch.amax/amin over stacked inputs 1/k each). */
static void rule_minmax(gctx *C, ir_node *n, ir_value *dy)
{
	if (n->nin == 1) {
		grad_acc(C, n->in[0], dy);
		return;
	}
	ir_value *y = V(C, n->out[0]), *m[1024], *cnt = NULL;
	for (int i = 0; i < n->nin; i++) {
		m[i] = equal01(C, V(C, n->in[i]), y);
		cnt = cnt ? add(C, cnt, m[i]) : m[i];
	}
	ir_value *share = dvd(C, dy, cnt);
	for (int i = 0; i < n->nin; i++)
		if (need(C, n->in[i]))
			grad_acc_ub(C, n->in[i], mul(C, share, m[i]));
}

static void rule_reduce(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = n->in[0], *Vx = V(C, x), *y = V(C, n->out[0]);
	int r = x->shape.rank;
	unsigned char red[IR_MAX_RANK];
	if (x->dtype != DT_F32 || (n->nin > 1 && n->in[1] && !ir_value_is_const(n->in[1])) ||
	    infer_reduce_axes(n, r, red))
		return (void)fail(C, "cannot differentiate %s: it needs f32 data and constant axes", ir_op_name(n->op));
	ir_shape ks = x->shape;
	for (int a = 0; a < r; a++)
		if (red[a])
			ks.d[a] = ir_dim_const(1);
	ir_value *dk = grad_reshape(C, dy, &ks), *yk = grad_reshape(C, y, &ks), *g;
	switch (n->op) {
	case OP_REDUCESUM: g = expand_to(C, dk, &x->shape); break;
	case OP_REDUCEMEAN: g = expand_to(C, mul(C, dk, inv_count(C, &x->shape, red)), &x->shape); break;
	case OP_REDUCESUMSQUARE: g = mul(C, scale(C, 2, Vx), dk); break;
	case OP_REDUCEL2: {
		/* x / ||x||, 0 where the norm is 0 (as torch.linalg.vector_norm) */
		ir_value *z = fc(C, 0);
		g = mul(C, Vx, where(C, op2(C, OP_EQUAL, yk, z), z, dvd(C, dk, yk)));
		break;
	}
	case OP_REDUCELOGSUMEXP: g = mul(C, dk, op1(C, OP_EXP, sub(C, Vx, yk))); break;
	case OP_REDUCEMAX: case OP_REDUCEMIN: {
		/* split evenly among the elements equal to the extreme (torch.amax/amin) */
		ir_value *m = equal01(C, Vx, yk);
		g = mul(C, dk, dvd(C, m, reduce_axes_keep(C, m, red)));
		break;
	}
	default:
		return (void)fail(C, "cannot differentiate %s: no gradient rule for this operator (--train)",
				  ir_op_name(n->op));
	}
	grad_acc(C, x, g);
}

/* x normalised over the axes red: xhat = (x - mean) * rstd, rstd = 1 / sqrt(var + eps)
 * with the biased variance (kept dims), recomputed from x. */
static void norm_stats(gctx *C, ir_value *x, const unsigned char *red, ir_value *inv, double eps, ir_value **xhat,
		       ir_value **rstd)
{
	ir_value *mu = mul(C, reduce_axes_keep(C, x, red), inv);
	ir_value *xc = sub(C, x, mu);
	ir_value *var = mul(C, reduce_axes_keep(C, mul(C, xc, xc), red), inv);
	*rstd = dvd(C, fc(C, 1), op1(C, OP_SQRT, add(C, var, fc(C, eps))));
	*xhat = mul(C, xc, *rstd);
}

/* dx for y = xhat * s + b given g = dy * s: rstd (g - mean(g) - xhat mean(g xhat)). */
static ir_value *norm_dx(gctx *C, ir_value *g, ir_value *xhat, ir_value *rstd, const unsigned char *red, ir_value *inv)
{
	ir_value *mg = mul(C, reduce_axes_keep(C, g, red), inv);
	ir_value *mgx = mul(C, reduce_axes_keep(C, mul(C, g, xhat), red), inv);
	return mul(C, rstd, sub(C, sub(C, g, mg), mul(C, xhat, mgx)));
}

static void rule_layernorm(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = n->in[0], *S = n->in[1], *B = n->nin > 2 ? n->in[2] : NULL;
	for (int k = 1; k < n->nout; k++)
		if (n->out[k] && grad_get(C, n->out[k]))
			return (void)fail(C, "cannot differentiate the Mean and InvStdDev outputs of "
					  "LayerNormalization%s", "");
	if (!dy)
		return;
	int r = x->shape.rank, ax = axis_attr(n, r, -1);
	unsigned char red[IR_MAX_RANK] = {0};
	for (int a = ax; a < r; a++)
		red[a] = 1;
	ir_value *inv = inv_count(C, &x->shape, red), *xhat, *rstd;
	norm_stats(C, V(C, x), red, inv, ir_attr_float(n, "epsilon", 1e-5f), &xhat, &rstd);
	if (need(C, x))
		grad_acc(C, x, norm_dx(C, mul(C, dy, V(C, S)), xhat, rstd, red, inv));
	if (need(C, S))
		grad_acc_ub(C, S, mul(C, dy, xhat));
	if (B && need(C, B))
		grad_acc_ub(C, B, dy);
}

/* BatchNormalization: training mode by the batch statistics over every axis
 * but 1; inference mode by the given mean and variance. */
static void rule_batchnorm(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = n->in[0], *S = n->in[1], *B = n->in[2], *M = n->in[3], *Vr = n->in[4];
	int train = (int)ir_attr_int(n, "training_mode", 0);
	for (int k = 1; k < n->nout; k++)
		if (n->out[k] && grad_get(C, n->out[k]))
			return (void)fail(C, "cannot differentiate the running_mean and running_var outputs of "
					  "BatchNormalization%s", "");
	if (!dy)
		return;
	int r = x->shape.rank;
	double eps = ir_attr_float(n, "epsilon", 1e-5f);
	unsigned char red[IR_MAX_RANK] = {0};
	for (int a = 0; a < r; a++)
		red[a] = a != 1;
	/* per-channel vectors [C] broadcast as [C, 1, ..] */
	ir_shape cs = {.rank = r - 1};
	cs.d[0] = x->shape.d[1];
	for (int a = 1; a < r - 1; a++)
		cs.d[a] = ir_dim_const(1);
	ir_value *Sb = grad_reshape(C, V(C, S), &cs), *xhat, *rstd;
	ir_value *sum_dy = NULL;
	if (train) {
		ir_value *inv = inv_count(C, &x->shape, red);
		norm_stats(C, V(C, x), red, inv, eps, &xhat, &rstd);
		if (need(C, x))
			grad_acc(C, x, norm_dx(C, mul(C, dy, Sb), xhat, rstd, red, inv));
	} else {
		rstd = dvd(C, fc(C, 1), op1(C, OP_SQRT, add(C, grad_reshape(C, V(C, Vr), &cs), fc(C, eps))));
		xhat = mul(C, sub(C, V(C, x), grad_reshape(C, V(C, M), &cs)), rstd);
		if (need(C, x))
			grad_acc(C, x, mul(C, dy, mul(C, Sb, rstd)));
		if (need(C, M) || need(C, Vr)) {
			sum_dy = reduce_axes_keep(C, dy, red);
			ir_value *sdx = reduce_axes_keep(C, mul(C, dy, xhat), red);
			/* dmean = -sum(dy) s rstd; dvar = -1/2 sum(dy xhat) s rstd^2 */
			if (need(C, M))
				grad_acc(C, M, grad_reshape(C, op1(C, OP_NEG, mul(C, sum_dy, mul(C, Sb, rstd))), &M->shape));
			if (need(C, Vr))
				grad_acc(C, Vr, grad_reshape(C, scale(C, -0.5, mul(C, sdx, mul(C, Sb, mul(C, rstd, rstd)))),
						   &Vr->shape));
		}
	}
	if (need(C, S))
		grad_acc(C, S, grad_reshape(C, reduce_axes_keep(C, mul(C, dy, xhat), red), &S->shape));
	if (need(C, B))
		grad_acc(C, B, grad_reshape(C, sum_dy ? sum_dy : reduce_axes_keep(C, dy, red), &B->shape));
}

static void rule_conv(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *X = n->in[0], *W = n->in[1], *B = n->nin > 2 ? n->in[2] : NULL;
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK];
	/* a spatial axis of run-time size has pads that do not depend on it
	 * (infer), which rt_conv_grad_x/_w take as they come */
	int nsp = infer_conv_geometry(n, k, st, pads, dil), r = X->shape.rank;
	if (nsp < 0)
		return (void)fail(C, "cannot differentiate Conv: its geometry is not known at compile time (%s)", X->name);
	for (int a = 0; a < nsp; a++)
		if (infer_pads_at_run_time(n, a))
			return (void)fail(C, "cannot differentiate Conv '%s': its auto_pad SAME at a stride above 1 pads "
					  "a spatial axis by an amount that depends on its run-time size (give the pads "
					  "explicitly, or --dim the size)", n->name);
	for (int wrt = 0; wrt < 2; wrt++) {
		ir_value *v = wrt ? W : X;
		if (!need(C, v))
			continue;
		ir_value *in[3] = {V(C, X), V(C, W), dy};
		ir_node *g = mk(C, OP_CONVGRAD, 3, in);
		ir_attr_set_int(g, "wrt", wrt);
		ir_attr_set_int(g, "group", ir_attr_int(n, "group", 1));
		ir_attr_set_ints(g, "strides", nsp, st);
		ir_attr_set_ints(g, "pads", 2 * nsp, pads);
		ir_attr_set_ints(g, "dilations", nsp, dil);
		grad_acc(C, v, fin(C, g));
	}
	if (B && need(C, B)) {
		unsigned char red[IR_MAX_RANK] = {0};
		for (int a = 0; a < r; a++)
			red[a] = a != 1;
		grad_acc(C, B, grad_reshape(C, reduce_axes_keep(C, dy, red), &B->shape));
	}
}

/* MaxPool: each window's gradient goes to the element that was its maximum
 * (the Indices output of the same MaxPool, recomputed here: flat positions
 * in X, row-major), added there, since windows may overlap: a ScatterElements
 * with reduction add into zeros of X's size. */
static void rule_maxpool(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = n->in[0];
	if (!need(C, x))
		return;
	if (ir_attr_int(n, "storage_order", 0) != 0)
		return (void)fail(C, "cannot differentiate MaxPool with storage_order 1 (column-major Indices)%s", "");
	ir_node *mp = ir_node_new(C->tg, OP_MAXPOOL, NULL, 1, 2);
	mp->in[0] = V(C, x);
	mp->attrs = n->attrs;
	mp->nattrs = n->nattrs;
	mp->out[1] = ir_value_new(C->tg, NULL, VAL_TEMP, DT_I64);
	fin(C, mp);
	ir_dim nx = ir_dim_const(1), ny = ir_dim_const(1);
	for (int a = 0; a < x->shape.rank; a++)
		nx = ir_dim_mul(nx, x->shape.d[a]), ny = ir_dim_mul(ny, dy->shape.d[a]);
	ir_shape fx = {.rank = 1, .d = {nx}}, fy = {.rank = 1, .d = {ny}};
	ir_value *in[3] = {zeros_shaped(C, &fx), grad_reshape(C, mp->out[1], &fy), grad_reshape(C, dy, &fy)};
	ir_node *sc = mk(C, OP_SCATTERELEMENTS, 3, in);
	ir_attr_set_string(sc, "reduction", "add");
	grad_acc(C, x, grad_reshape(C, fin(C, sc), &x->shape));
}

/* TopK: the gradient of each value picked goes back to where it was picked
 * from (the Indices output, or the same TopK recomputed when nothing read
 * them), a ScatterElements along the axis into zeros shaped like X. */
static void rule_topk(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = n->in[0], *idx;
	if (!need(C, x))
		return;
	if (n->nout > 1 && n->out[1]) {
		idx = V(C, n->out[1]);
	} else {
		ir_node *tk = ir_node_new(C->tg, OP_TOPK, NULL, 2, 2);
		tk->in[0] = V(C, x);
		tk->in[1] = V(C, n->in[1]);
		tk->attrs = n->attrs;
		tk->nattrs = n->nattrs;
		tk->out[1] = ir_value_new(C->tg, NULL, VAL_TEMP, DT_I64);
		fin(C, tk);
		idx = tk->out[1];
	}
	ir_value *in[3] = {zeros_shaped(C, &x->shape), idx, dy};
	ir_node *sc = mk(C, OP_SCATTERELEMENTS, 3, in);
	ir_attr_set_int(sc, "axis", axis_attr(n, x->shape.rank, -1));
	ir_attr_set_string(sc, "reduction", "add");
	grad_acc(C, x, fin(C, sc));
}

static void rule_pad(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *x = n->in[0], *val = n->nin > 2 ? n->in[2] : NULL, *dx;
	int r = x->shape.rank, known = 1;
	ir_dim pd[2 * IR_MAX_RANK];
	if (x->dtype != DT_F32 || infer_pad_dims(C->src, n, C->X->D, pd))
		return (void)fail(C, "cannot differentiate Pad: it needs f32 data%s", "");
	for (int a = 0; a < 2 * r; a++)
		known &= ir_dim_is_const(pd[a]);
	if (known) {
		int64_t pads[2 * IR_MAX_RANK];
		for (int a = 0; a < 2 * r; a++)
			pads[a] = pd[a].k;
		ir_value *in[2] = {V(C, x), dy};
		ir_node *g = mk(C, OP_PADGRAD, 2, in);
		ir_attr_set_ints(g, "pads", 2 * r, pads);
		ir_attr_set_string(g, "mode", ir_attr_string(n, "mode", "constant"));
		dx = fin(C, g);
	} else {
		/* pads known at run time (mode constant: infer_pad): dX is dY
		 * cropped by them, a Pad by their negatives */
		for (int a = 0; a < 2 * r; a++)
			pd[a].k = -pd[a].k;
		ir_value *in[2] = {dy, ir_const_dims(C->tg, pd, 2 * r)};
		dx = fin(C, mk(C, OP_PAD, 2, in));
	}
	grad_acc(C, x, dx);
	if (val && need(C, val)) {
		/* the constant fills every position of dY not copied from X */
		unsigned char all[IR_MAX_RANK];
		memset(all, 1, sizeof all);
		if (strcmp(ir_attr_string(n, "mode", "constant"), "constant"))
			return;
		ir_value *d = sub(C, reduce_axes_keep(C, dy, all), reduce_axes_keep(C, dx, all));
		grad_acc(C, val, grad_reshape(C, d, &val->shape));
	}
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (= NLL of its
 * log_prob output, LogSoftmax over axis 1). */
static void rule_class_loss(gctx *C, ir_node *n, ir_value *dy)
{
	ir_value *X = n->in[0], *t = V(C, n->in[1]), *w = n->nin > 2 ? n->in[2] : NULL;
	int sce = n->op == OP_SOFTMAXCE;
	ir_value *dlp = sce && n->nout > 1 && n->out[1] ? grad_get(C, n->out[1]) : NULL;
	ir_value *lp = !sce ? V(C, X) : n->nout > 1 && n->out[1] ? V(C, n->out[1]) : NULL;
	if (!lp) {
		ir_node *ls = mk(C, OP_LOGSOFTMAX, 1, (ir_value *[]){V(C, X)});
		ir_attr_set_int(ls, "axis", 1);
		lp = fin(C, ls);
	}
	ir_attr *ig = ir_attr_find(n, "ignore_index");
	for (int wrt = 0; wrt < 2 && dy; wrt++) {
		ir_value *v = wrt ? w : X;
		if (!v || !need(C, v))
			continue;
		ir_value *in[4] = {dy, lp, t, w ? V(C, w) : NULL};
		ir_node *g = mk(C, OP_CLASSLOSSGRAD, w ? 4 : 3, in);
		ir_attr_set_int(g, "wrt", wrt);
		ir_attr_set_string(g, "reduction", ir_attr_string(n, "reduction", "mean"));
		if (ig)
			ir_attr_set_int(g, "ignore_index", ig->i);
		ir_value *d = fin(C, g);
		if (wrt) {
			grad_acc(C, w, d);
			continue;
		}
		dlp = dlp ? add(C, dlp, d) : d;
	}
	if (!dlp || !need(C, X))
		return;
	if (!sce) {
		grad_acc(C, X, dlp);
		return;
	}
	ir_value *s = reduce(C, dlp, 1, 1, 1);
	grad_acc(C, X, sub(C, dlp, mul(C, op1(C, OP_EXP, lp), s)));
}


void grad_rule(gctx *C, ir_node *n)
{
	ir_value *dy = NULL;
	int any = 0;
	for (int k = 0; k < n->nout; k++)
		any |= n->out[k] && grad_get(C, n->out[k]) != NULL;
	if (!any)
		return;
	int needed = 0;
	for (int k = 0; k < n->nin; k++)
		needed |= need(C, n->in[k]);
	if (n->body)
		needed = 1;
	if (!needed)
		return;
	C->at = n;
	dy = n->out[0] ? grad_get(C, n->out[0]) : NULL;
	if (n->op == OP_RECURRENCE) {
		if (C->map)
			return (void)fail(C, "cannot differentiate a recurrence inside a recurrence%s", "");
		if (ir_rec_cond_state(n) >= 0)
			return (void)fail(C, "cannot differentiate a loop that its condition ends (a `break` or a "
					  "`while`): the steps it runs are decided by the data; train the model with the "
					  "loop running all its steps%s", "");
		grad_rule_rec(C, n);
		return;
	}
	int multi = n->op == OP_SPLIT || n->op == OP_SOFTMAXCE || n->op == OP_LAYERNORM || n->op == OP_BATCHNORM;
	if (!multi && !dy)
		return;
	switch (n->op) {
	case OP_WHERE: rule_where(C, n, dy); return;
	case OP_MIN: case OP_MAX: rule_minmax(C, n, dy); return;
	case OP_REDUCESUM: case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCESUMSQUARE:
	case OP_REDUCEL2: case OP_REDUCELOGSUMEXP:
		rule_reduce(C, n, dy);
		return;
	case OP_LAYERNORM: rule_layernorm(C, n, dy); return;
	case OP_BATCHNORM: rule_batchnorm(C, n, dy); return;
	case OP_CONV: rule_conv(C, n, dy); return;
	case OP_PAD: rule_pad(C, n, dy); return;
	case OP_MAXPOOL: rule_maxpool(C, n, dy); return;
	case OP_TOPK: rule_topk(C, n, dy); return;
	case OP_SOFTMAXCE: case OP_NLLLOSS: rule_class_loss(C, n, dy); return;
	case OP_GEMM: rule_gemm(C, n, dy); return;
	case OP_MATMUL: rule_matmul(C, n, dy); return;
	case OP_SOFTMAX: case OP_LOGSOFTMAX: rule_softmax(C, n, dy); return;
	case OP_MATEXP:
		if (!C->map) {  /* root graph only: the exponential of a step value has no rule */
			rule_matexp(C, n, dy);
			return;
		}
		break;
	case OP_CAST: rule_elem(C, n, dy); return;
	default:
		if (ir_ops[n->op].kind == OPK_ELEM) {
			rule_elem(C, n, dy);
			return;
		}
		if (ir_ops[n->op].kind == OPK_SHAPE) {
			rule_shape(C, n, dy);
			return;
		}
		break;
	}
	if (n->op == OP_ODEBLOCK || n->op == OP_ODERNN) {
		fail(C, "ODE blocks (%s) are inference only: --train has no gradient for them yet (neither "
		     "backpropagation through the solver nor the adjoint method)", ir_attr_string(n, "model", "?"));
		return;
	}
	fail(C, "cannot differentiate %s: no gradient rule for this operator (--train)", ir_op_name(n->op));
}

/* ---- the sweep and the outputs (the loss: pass_grad_loss.c) ---------------------------- */



int train_collect_params(ir_graph *g, const train_opts *o, diag *D)
{
	ir_train *t = arena_alloc(g->A, sizeof *t);
	memset(t, 0, sizeof *t);
	t->loss = o->loss;
	t->loss_output = o->loss_output;
	g->train = t;
	t->params = arena_array(g->A, (size_t)g->nvalues + 1, sizeof *t->params);
	t->nparams = 0;
	int st = 0;
	for (int f = 0; f < o->nfreeze; f++) {
		size_t len = strlen(o->freeze[f]);
		int hit = 0;
		for (int i = 0; i < g->nvalues; i++) {
			ir_value *v = g->values[i];
			if (v->kind == VAL_WEIGHT && v->dtype == DT_F32 && v->data && !strncmp(v->name, o->freeze[f], len))
				v->frozen = hit = 1;
		}
		if (!hit) {
			diag_error(D, "--freeze %s: no f32 weight of the model has a name starting so", o->freeze[f]);
			st = -1;
		}
	}
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		if (v->kind == VAL_WEIGHT && v->dtype == DT_F32 && v->data && !v->frozen)
			t->params[t->nparams++] = v;
	}
	return st;
}

/* Makes v (a gradient) graph output `name`. */
static void add_output(gctx *C, ir_value *v, const char *name)
{
	ir_graph *g = C->X->g;
	int fresh = v->kind == VAL_TEMP && v->graph == g && !v->is_output && v->producer &&
		    v->producer->op != OP_RECURRENCE;
	for (int k = 0; k < g->noutputs && fresh; k++)
		fresh = g->outputs[k] != v;
	if (!fresh)
		v = op1(C, OP_IDENTITY, v);
	v->name = ir_find_value(g, name) ? ir_unique_name(g, name) : arena_strdup(g->A, name);
	v->is_output = 1;
	g->outputs = arena_grow(g->A, g->outputs, (size_t)g->noutputs, (size_t)g->noutputs + 1, sizeof *g->outputs);
	g->outputs[g->noutputs++] = v;
}

static ir_value *zeros(gctx *C, ir_value *like)
{
	if (ir_shape_const_numel(&like->shape) >= 0 && like->shape.rank > 0)
		return zeros_shaped(C, &like->shape);
	return mul(C, like, fc(C, 0));
}

/* Which root values before node `upto` depend on one with rneeds set. */
static void propagate_needs(gx *X, int upto)
{
	ir_graph *g = X->g;
	for (int i = 0; i < upto; i++) {
		ir_node *n = g->nodes[i];
		int any = 0;
		for (int k = 0; k < n->nin; k++)
			any |= root_needs(X, n->in[k]);
		if (n->body)
			for (int j = 0; j < n->body->nnodes; j++)
				for (int k = 0; k < n->body->nodes[j]->nin; k++)
					any |= root_needs(X, n->body->nodes[j]->in[k]);
		for (int k = 0; k < n->nout; k++)
			if (n->out[k])
				X->rneeds[n->out[k]->id] |= (char)any;
		if (n->op == OP_RECURRENCE && !X->first_rec)
			X->first_rec = n;
	}
}

/* The ONNX Gradient operator (ai.onnx.preview.training) at root node `at`:
 * the gradient of sum(y) with respect to its inputs xs, by the rules above,
 * placed where the node was. */
static int expand_gradient(ir_graph *g, diag *D, int at)
{
	ir_node *G = g->nodes[at];
	ir_recount(g);
	gx X0 = {.g = g, .D = D, .n0 = g->nvalues}, *X = &X0;
	X->rneeds = arena_alloc(g->A, (size_t)g->nvalues + 1);
	memset(X->rneeds, 0, (size_t)g->nvalues + 1);
	/* inputs: xs, then y (onnx_node.c's norm_gradient) */
	int nx = G->nin - 1;
	ir_value *y = G->in[nx];
	if (!y || y->graph != g || y->dtype != DT_F32 || y->shape.rank < 0) {
		diag_node(D, G, "Gradient: y '%s' is not an f32 tensor computed by the graph",
			  ir_attr_string(G, "y", ""));
		return 1;
	}
	/* which xs y depends on: a gradient that comes out absent below must be
	 * 0 because the dependence is absent, not because a rule lost a path */
	char *dep = arena_alloc(g->A, (size_t)nx + 1);
	for (int k = 0; k < nx; k++) {
		memset(X->rneeds, 0, (size_t)g->nvalues + 1);
		X->rneeds[G->in[k]->id] = 1;
		propagate_needs(X, at);
		dep[k] = X->rneeds[y->id];
	}
	memset(X->rneeds, 0, (size_t)g->nvalues + 1);
	X->first_rec = NULL;
	for (int k = 0; k < nx; k++)
		X->rneeds[G->in[k]->id] = 1;
	propagate_needs(X, at);
	int ntail = g->nnodes - at - 1;
	ir_node **tail = arena_array(g->A, (size_t)ntail + 1, sizeof *tail);
	memcpy(tail, g->nodes + at + 1, (size_t)ntail * sizeof *tail);
	g->nnodes = at;
	gctx R = {.X = X, .tg = g, .src = g, .nsrc = X->n0, .needs = X->rneeds, .at = G};
	R.grad = arena_array(g->A, (size_t)X->n0 + 1, sizeof *R.grad);
	R.parts = arena_array(g->A, (size_t)X->n0 + 1, sizeof *R.parts);
	/* d sum(y) / dy = ones */
	ir_value *ones;
	if (y->shape.rank == 0) {
		ones = fc(&R, 1);
	} else {
		ir_value *zero = mul(&R, y, fc(&R, 0));
		ones = add(&R, zero, fc(&R, 1));
		if (ir_shape_const_numel(&y->shape) >= 0) {
			ir_value *in[1] = {shape_const(&R, &y->shape)};
			ir_node *c = mk(&R, OP_CONSTOFSHAPE, 1, in);
			ir_shape s1 = {.rank = 1, .d = {ir_dim_const(1)}};
			float one = 1.0f;
			ir_attr_add(c, "value", ATTR_TENSOR)->t = ir_const_new(g, NULL, DT_F32, &s1, &one);
			ones = fin(&R, c);
		}
	}
	grad_acc(&R, y, ones);
	for (int i = at - 1; i >= 0 && !X->errors; i--)
		grad_rule(&R, g->nodes[i]);
	for (int k = 0; k < nx && !X->errors; k++) {
		if (!G->out[k])
			continue;
		ir_value *gk = grad_get(&R, G->in[k]);
		if (!gk && dep[k]) {
			diag_node(D, G, "Gradient: y '%s' depends on '%s', but its gradient was lost on the way "
				  "(a node between them is not differentiated); refused rather than given as 0",
				  y->name, G->in[k]->name);
			X->errors++;
			break;
		}
		ir_node *idn = mk(&R, OP_IDENTITY, 1, (ir_value *[]){gk ? gk : zeros(&R, G->in[k])});
		idn->out[0] = G->out[k];
		fin(&R, idn);
	}
	for (int i = 0; i < ntail; i++)
		ir_append(g, tail[i]);
	ir_recount(g);
	return X->errors;
}

/* The parameters still used and the f32 inputs (at most 64, in xs) are what
 * the gradients are taken of; which root values depend on them. */
static void mark_trained(gx *X, ir_value **xs, int *nx)
{
	ir_graph *g = X->g;
	ir_train *t = X->t;
	int np = 0;
	for (int i = 0; i < t->nparams; i++)
		if (t->params[i]->nuses > 0 && t->params[i]->graph == g && t->params[i]->kind == VAL_WEIGHT)
			t->params[np++] = t->params[i];
	t->nparams = np;
	for (int i = 0; i < np; i++)
		X->rneeds[t->params[i]->id] = 1;
	*nx = 0;
	for (int k = 0; k < g->ninputs; k++)
		if (g->inputs[k]->dtype == DT_F32 && *nx < 64) {
			X->rneeds[g->inputs[k]->id] = 1;
			xs[(*nx)++] = g->inputs[k];
		}
}

/* The gradient outputs: grad.<P>, grad.<X>, dstate. */
static void add_grad_outputs(gctx *R, ir_value *const *xs, int nx)
{
	gx *X = R->X;
	ir_graph *g = X->g;
	ir_train *t = X->t;
	for (int i = 0; i < t->nparams; i++) {
		ir_value *p = t->params[i], *gp = grad_get(R, p);
		add_output(R, gp ? gp : zeros(R, p), arena_printf(g->A, "grad.%s", p->name));
	}
	for (int i = 0; i < nx; i++) {
		ir_value *gx_ = grad_get(R, xs[i]);
		add_output(R, gx_ ? gx_ : zeros(R, xs[i]), arena_printf(g->A, "grad.%s", xs[i]->name));
	}
	if (X->first_rec && X->dstate)
		add_output(R, X->dstate, "dstate");
}

int pass_grad(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_GRADIENT) {
			int errs = expand_gradient(g, D, i);
			if (errs)
				return errs;
			i = -1;         /* the node list changed: look again */
		}
	ir_train *t = g->train;
	if (!t || t->graded)
		return 0;       /* inference, or a graph read back from a dump of a training build */
	ir_recount(g);
	gx X0 = {.g = g, .D = D, .t = t, .n0 = g->nvalues}, *X = &X0;
	X->rneeds = arena_alloc(g->A, (size_t)g->nvalues + 1);
	memset(X->rneeds, 0, (size_t)g->nvalues + 1);
	int nx;
	ir_value *xs[64];
	mark_trained(X, xs, &nx);
	int nfwd = g->nnodes;
	propagate_needs(X, nfwd);

	ir_value *Y = grad_loss_input(X);
	if (!Y)
		return 1;
	gctx R = {.X = X, .tg = g, .src = g, .nsrc = X->n0};
	R.grad = arena_array(g->A, (size_t)X->n0 + 1, sizeof *R.grad);
	R.parts = arena_array(g->A, (size_t)X->n0 + 1, sizeof *R.parts);
	R.needs = X->rneeds;
	ir_value *logits;
	ir_node *lossn = grad_build_loss(&R, Y, &logits);
	if (!lossn)
		return 1;
	add_output(&R, fin(&R, lossn), "loss");
	t->loss_output_index = g->noutputs - 1;
	if (X->errors)
		return X->errors;

	/* backward from here on */
	int bwd_at = g->nnodes;
	grad_seed_loss(&R, lossn, logits, Y);
	t->bwd_start = g->nodes[bwd_at];
	t->graded = 1;
	for (int i = nfwd - 1; i >= 0 && !X->errors; i--)
		grad_rule(&R, g->nodes[i]);
	if (X->errors)
		return X->errors;
	R.at = NULL;
	add_grad_outputs(&R, xs, nx);
	ir_recount(g);
	grad_drop_unused_saves(g, nfwd);
	return X->errors;
}
