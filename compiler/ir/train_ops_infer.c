/* train_ops_infer.c: shape and dtype rules of the training ops of ops.def
 * (the block "training") that only pass_grad makes: SliceScatter,
 * MatrixExp, the gradients of the losses (SoftmaxCrossEntropyLossGrad,
 * MseLossGrad, ClassLossGrad), of Conv and of Pad (ConvGrad, PadGrad),
 * MseLoss, and the ONNX Gradient operator (before pass_grad expands it).
 * infer_node (infer_shape.c) calls train_op_infer for them; ReduceSum and
 * SoftmaxCrossEntropyLoss have their ONNX rules there.
 *
 * Also the one table both stages read of the losses and their gradients:
 * where their operands are (train.h, train_loss_args_of); their C is
 * emit_train_ops.c's.
 */
#include "infer.h"
#include "train.h"
#include "util.h"

#include <string.h>

/* ---- where the operands are ------------------------------------------------------- */

/* The order pass_grad makes these nodes in; ops.def's semantics name the
 * operands (a gradient takes dloss first, then the loss's own operands). */
static const train_loss_args loss_args[] = {
	/* op                dloss  x  target  opt */
	{OP_SOFTMAXCE,       -1,    0, 1,      2},      /* scores labels [weights] */
	{OP_SOFTMAXCEGRAD,    0,    1, 2,     -1},      /* dloss scores labels */
	{OP_MSELOSS,         -1,    0, 1,      2},      /* Y target [mask] */
	{OP_MSELOSSGRAD,      0,    1, 2,      3},      /* dloss Y target [mask] */
	{OP_CLASSLOSSGRAD,    0,    1, 2,      3},      /* dloss X target [weights] */
};

const train_loss_args *train_loss_args_of(ir_op op)
{
	for (size_t i = 0; i < sizeof loss_args / sizeof loss_args[0]; i++)
		if (loss_args[i].op == op)
			return &loss_args[i];
	UNREACHABLE();
}

/* ---- shapes ---------------------------------------------------------------- */

static int bad(diag *D, ir_node *n, const char *what)
{
	diag_node(D, n, "%s", what);
	return 1;
}

int train_op_infer(ir_graph *g, ir_node *n, diag *D)
{
	(void)g;
	ir_value *y = n->out[0];
	ir_value *x = n->in[0];
	switch (n->op) {
	case OP_SLICESCATTER:
		if (n->in[1]->shape.rank != x->shape.rank)
			return bad(D, n, "SliceScatter: the update must have the rank of the target");
		y->dtype = n->in[1]->dtype;
		y->shape = x->shape;
		return 0;
	case OP_SOFTMAXCEGRAD:
	case OP_MSELOSSGRAD:
		/* the gradient of the loss's operand x: shaped like it */
		y->dtype = DT_F32;
		y->shape = n->in[train_loss_args_of(n->op)->x]->shape;
		return 0;
	case OP_MSELOSS: {
		const train_loss_args *a = train_loss_args_of(n->op);
		const ir_value *t = n->in[a->target], *m = n->nin > a->opt ? n->in[a->opt] : NULL;
		x = n->in[a->x];
		if (!ir_shape_eq(&x->shape, &t->shape) || (m && !ir_shape_eq(&x->shape, &m->shape)))
			return bad(D, n, "MseLoss: the output, target and mask must have one shape");
		y->dtype = DT_F32;
		y->shape.rank = 0;
		return 0;
	}
	case OP_MATEXP:
		if (x->shape.rank != 2 || !ir_dim_is_const(x->shape.d[0]) || !ir_dim_eq(x->shape.d[0], x->shape.d[1]))
			return bad(D, n, "MatrixExp takes a square matrix of constant size");
		y->dtype = DT_F32;
		y->shape = x->shape;
		return 0;
	case OP_CONVGRAD: {
		/* inputs X W dY: dX shaped like X (wrt 0) or dW like W (wrt 1) */
		int wrt = (int)ir_attr_int(n, "wrt", 0);
		if (x->shape.rank < 3 || n->in[1]->shape.rank != x->shape.rank || n->in[2]->shape.rank != x->shape.rank)
			return bad(D, n, "ConvGrad takes X [N, C, D..], W [M, C/group, K..] and dY [N, M, O..]");
		y->dtype = DT_F32;
		y->shape = wrt ? n->in[1]->shape : x->shape;
		return 0;
	}
	case OP_PADGRAD: {
		ir_attr *pa = ir_attr_find(n, "pads");
		if (!pa || pa->n != 2 * x->shape.rank || n->in[1]->shape.rank != x->shape.rank)
			return bad(D, n, "PadGrad takes X, dY of X's rank and pads (2 per axis)");
		y->dtype = DT_F32;
		y->shape = x->shape;
		return 0;
	}
	case OP_CLASSLOSSGRAD: {
		/* dX (wrt 0) or dweights (wrt 1) */
		const train_loss_args *a = train_loss_args_of(n->op);
		int wrt = ir_attr_int(n, "wrt", 0) != 0;
		if (wrt && (n->nin <= a->opt || !n->in[a->opt]))
			return bad(D, n, "ClassLossGrad: the weights gradient needs the weights");
		y->dtype = DT_F32;
		y->shape = n->in[wrt ? a->opt : a->x]->shape;
		return 0;
	}
	case OP_GRADIENT: {
		/* inputs xs (named by the xs attribute), then y (named by the y
		 * attribute when loaded); outputs: the gradients of the xs */
		ir_attr *xs = ir_attr_find(n, "xs");
		if (!xs || xs->kind != ATTR_STRINGS || xs->n != n->nin - 1 || n->nout != n->nin - 1 ||
		    !ir_attr_find(n, "y") || ir_attr_find(n, "y")->kind != ATTR_STRING || !n->in[n->nin - 1])
			return bad(D, n, "Gradient needs the attributes xs (one name per input) and y, the "
				   "inputs xs then y, and one output per x");
		if (n->in[n->nin - 1]->dtype != DT_F32 || n->in[n->nin - 1]->shape.rank < 0)
			return bad(D, n, "Gradient: y is not an f32 tensor");
		for (int k = 0; k < n->nin - 1; k++) {
			if (!n->in[k] || strcmp(n->in[k]->name, xs->strings[k]) != 0)
				return bad(D, n, "Gradient: input k must be the tensor named xs[k]");
			if (n->in[k]->dtype != DT_F32)
				return bad(D, n, "Gradient: only f32 tensors can be differentiated");
			if (n->out[k]) {
				n->out[k]->dtype = DT_F32;
				n->out[k]->shape = n->in[k]->shape;
			}
		}
		return 0;
	}
	default:
		break;
	}
	return bad(D, n, "internal error: not a training op");
}
