/* train.h: cellc compile --train (pass_grad.c; the training ops: train_ops_infer.c,
 * emit_train_ops.c).
 *
 * A train build is the model graph plus the loss and its gradients (docs/training.md,
 * "Gradients"): inputs target [, mask]
 * appended; outputs loss, grad.<P> for every parameter P, grad.<X> for every
 * f32 model input X, and dstate appended in that order.
 */
#ifndef CELLC_TRAIN_H
#define CELLC_TRAIN_H

#include "diag.h"
#include "ir.h"

/* What --train asked for (the command line's); load turns it into the root
 * graph's ir_train (ir.h), which pass_grad completes. */
enum { TRAIN_MAX_FREEZE = 64 };

typedef struct train_opts {
	int loss;               /* TRAIN_* (ir.h) */
	const char *loss_output;/* --loss-output NAME or NULL: the first output */
	int loss_given;         /* --loss was on the command line */
	int nfreeze;
	const char *freeze[TRAIN_MAX_FREEZE];   /* --freeze PREFIX: weights whose name
	                           starts with one are held fixed (ir_value.frozen) */
} train_opts;

/* Makes g a training build as t asks: g->train, with the f32 weights of
 * the freshly loaded root graph, in source order, as the trainable
 * parameters, but those held fixed: frozen by the model (dtriv's base) or
 * named by a --freeze prefix.  Called before the passes.  A prefix that
 * names no f32 weight is an error (D); returns 0 or -1. */
int train_collect_params(ir_graph *g, const train_opts *t, diag *D);

/* Shape rules of the training ops (train_ops_infer.c, called by infer_node;
 * their C: emit_train_ops.c, emit.h). */
int train_op_infer(ir_graph *g, ir_node *n, diag *D);

/* Where the operands of a loss or of a loss's gradient are: positions in
 * n->in, -1 for none (train_ops_infer.c, one row per op: SoftmaxCrossEntropyLoss
 * in the training form, MseLoss, and the gradients SoftmaxCrossEntropyLossGrad,
 * MseLossGrad, ClassLossGrad).  The shape rules and the C read them from here. */
typedef struct train_loss_args {
	ir_op op;
	signed char dloss;      /* the gradient of the loss (a scalar), first in a gradient */
	signed char x;          /* what the loss reads and the gradient is of: the scores, Y, X */
	signed char target;     /* the labels or the target */
	signed char opt;        /* optional: the mask (MSE) or the class weights */
} train_loss_args;
/* The row of op (one of those above; any other is our bug). */
const train_loss_args *train_loss_args_of(ir_op op);

#endif
