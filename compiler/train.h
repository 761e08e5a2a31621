/* train.h: cellc compile --train (pass_grad.c, train_ops.c).
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

/* Shape rules of the training ops (train_ops.c; their C: emit.h). */
int train_op_infer(ir_graph *g, ir_node *n, diag *D);

#endif
