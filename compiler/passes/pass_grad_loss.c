/* pass_grad_loss.c: the training loss for pass_grad.c: the output it reads
 * and the data input's batch and time axes (recorded in g->train), the new
 * inputs `target` [, `mask`], the loss node (--loss), and the seed gradient
 * dL/dlogits that the sweep starts from.  grad.h: what it shares with
 * pass_grad.c.
 */
#include "grad.h"
#include "util.h"

#include <string.h>

static ir_value *new_input(ir_graph *g, const char *name, ir_dtype dt, const ir_shape *s)
{
	ir_value *v = ir_value_new(g, ir_find_value(g, name) ? ir_unique_name(g, name) : name, VAL_INPUT, dt);
	v->shape = *s;
	g->inputs = arena_grow(g->A, g->inputs, (size_t)g->ninputs, (size_t)g->ninputs + 1, sizeof *g->inputs);
	g->inputs[g->ninputs++] = v;
	return v;
}

/* The batch and time axes of the data input (axes 0 and 1 in some order),
 * as the model declares it, whatever lies between it and the first
 * recurrence (the exporter's Transpose of a batch_first model, embeddings,
 * convolutions that change the length): the batch axis is the one of x's
 * axes 0 and 1 whose size is the recurrence's batch size (a symbol, or a
 * constant that the other axis does not share), else the one whose size is
 * the recurrence's time size is the time axis; only when neither tells
 * (equal constant sizes) does the recurrence's own layout decide. */
static void data_axes(const ir_graph *g, ir_train *t, const ir_node *rec)
{
	int ta = 0;
	ir_attr *sa = rec ? ir_attr_find(rec, "seq_axis") : NULL;
	if (sa && sa->n)
		ta = (int)sa->ints[0];
	t->time_axis = ta;
	t->batch_axis = 1 - ta;
	const ir_value *x = t->x_input < g->ninputs ? g->inputs[t->x_input] : NULL;
	const ir_value *s = rec && sa && sa->n && rec->nin > 0 ? rec->in[0] : NULL;
	if (!x || !s || x->shape.rank < 2 || s->shape.rank < 2)
		return;
	ir_dim B = s->shape.d[1 - ta], T = s->shape.d[ta];
	int b0 = ir_dim_eq(x->shape.d[0], B), b1 = ir_dim_eq(x->shape.d[1], B);
	int t0 = ir_dim_eq(x->shape.d[0], T), t1 = ir_dim_eq(x->shape.d[1], T);
	int bax = b0 != b1 ? (b0 ? 0 : 1) : t0 != t1 ? (t0 ? 1 : 0) : -1;
	if (bax >= 0) {
		t->batch_axis = bax;
		t->time_axis = 1 - bax;
	}
}

/* The output the loss reads (--loss-output, else the first), recorded in the
 * train record with the data input and its axes; NULL after an error. */
ir_value *grad_loss_input(gx *X)
{
	ir_graph *g = X->g;
	ir_train *t = X->t;
	int li = 0;
	if (t->loss_output) {
		li = -1;
		for (int k = 0; k < g->noutputs; k++)
			if (!strcmp(g->outputs[k]->name, t->loss_output))
				li = k;
		if (li < 0) {
			diag_error(X->D, "--loss-output %s: the model has no output of that name", t->loss_output);
			return NULL;
		}
	}
	if (g->noutputs == 0) {
		diag_error(X->D, "--train: the model has no output to take the loss of");
		return NULL;
	}
	ir_value *Y = g->outputs[li];
	t->nfwd_outputs = g->noutputs;
	t->logits_output = li;
	t->x_input = 0;
	for (int k = 0; k < g->ninputs; k++)
		if (g->inputs[k]->dtype == DT_F32) {
			t->x_input = k;
			break;
		}
	data_axes(g, t, X->first_rec);
	if (Y->dtype != DT_F32) {
		diag_error(X->D, "--train: output '%s' is %s; the loss needs an f32 output", Y->name,
			   ir_dtype_name(Y->dtype));
		return NULL;
	}
	return Y;
}

/* The loss node of output Y and its new inputs (target, mask): *logits is
 * what it reads, Y or a view of Y. NULL after an error. */
ir_node *grad_build_loss(gctx *R, ir_value *Y, ir_value **logits)
{
	gx *X = R->X;
	ir_graph *g = X->g;
	ir_train *t = X->t;
	ir_value *labels = NULL;
	ir_node *lossn;
	int L = t->loss;
	*logits = Y;
	if (L == TRAIN_CE || L == TRAIN_CE_ALL) {
		int r = Y->shape.rank;
		if (r == 3 && L == TRAIN_CE) {
			/* the last step along the time axis */
			int ta = t->time_axis;
			ir_value *in[4] = {Y, int1(R, -1), int1(R, INT32_MAX), int1(R, ta)};
			ir_value *s = fin(R, mk(R, OP_SLICE, 4, in));
			ir_shape bs = {.rank = 2, .d = {Y->shape.d[1 - ta], Y->shape.d[2]}};
			*logits = grad_reshape(R, s, &bs);
		} else if (r == 3) {
			ir_shape fs = {.rank = 2, .d = {ir_dim_mul(Y->shape.d[0], Y->shape.d[1]), Y->shape.d[2]}};
			*logits = grad_reshape(R, Y, &fs);
		} else if (r != 2) {
			diag_error(X->D, "--loss %s: output '%s' is %s; expected [batch, classes] or "
				   "[seq, batch, classes]", train_loss_name(L), Y->name,
				   ir_shape_str(g->A, g, &Y->shape));
			return NULL;
		}
		ir_shape ts = {.rank = 1, .d = {(*logits)->shape.d[0]}};
		if (L == TRAIN_CE_ALL) {
			if (r != 3) {
				diag_error(X->D, "--loss ce-all needs a per-step output [seq, batch, classes]; "
					   "'%s' is %s", Y->name, ir_shape_str(g->A, g, &Y->shape));
				return NULL;
			}
			ts = (ir_shape){.rank = 2, .d = {Y->shape.d[0], Y->shape.d[1]}};
		}
		ir_value *target = new_input(g, "target", DT_I64, &ts);
		labels = L == TRAIN_CE_ALL ? grad_reshape(R, target, &(ir_shape){.rank = 1, .d = {(*logits)->shape.d[0]}})
					   : target;
		ir_value *in[2] = {*logits, labels};
		lossn = mk(R, OP_SOFTMAXCE, 2, in);
		t->nclasses = ir_dim_is_const((*logits)->shape.d[1]) ? (int)(*logits)->shape.d[1].k : 0;
	} else {
		ir_value *target = new_input(g, "target", DT_F32, &Y->shape);
		ir_value *mask = L == TRAIN_MASKED_MSE ? new_input(g, "mask", DT_F32, &Y->shape) : NULL;
		ir_value *in[3] = {Y, target, mask};
		lossn = mk(R, OP_MSELOSS, mask ? 3 : 2, in);
		t->nclasses = 0;
	}
	return lossn;
}

/* The loss's gradient, taken back through the views between Y and the logits. */
void grad_seed_loss(gctx *R, ir_node *lossn, ir_value *logits, ir_value *Y)
{
	ir_value *one = fc(R, 1);
	R->at = lossn;
	ir_value *dlogits;
	if (lossn->op == OP_SOFTMAXCE) {
		ir_value *in[3] = {one, lossn->in[0], lossn->in[1]};
		dlogits = fin(R, mk(R, OP_SOFTMAXCEGRAD, 3, in));
	} else {
		ir_value *in[4] = {one, lossn->in[0], lossn->in[1], lossn->nin > 2 ? lossn->in[2] : NULL};
		dlogits = fin(R, mk(R, OP_MSELOSSGRAD, lossn->nin > 2 ? 4 : 3, in));
	}
	/* the loss's view nodes were made after the pass started: apply their rules by hand */
	ir_value *gcur = dlogits;
	ir_value *v = logits;
	while (v != Y) {
		ir_node *n = v->producer;
		ir_value *a = n->in[0];
		if (n->op == OP_RESHAPE)
			gcur = grad_reshape(R, gcur, &a->shape);
		else
			gcur = grad_slice_scatter(R, a, gcur, n->in[1], n->in[2], n->in[3], NULL);
		v = a;
	}
	grad_acc(R, Y, gcur);
}
