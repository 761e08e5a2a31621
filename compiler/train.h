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

struct emit_ctx;

enum { TRAIN_CE, TRAIN_CE_ALL, TRAIN_MSE, TRAIN_MASKED_MSE };

/* What --train asked for; the root graph points at it (ir_graph.train). */
typedef struct train_opts {
	int loss;               /* TRAIN_* */
	const char *loss_output;/* --loss-output NAME or NULL: the first output */
	/* filled by pass_grad for the emitter (NAME_TRAIN_INFO) */
	int nparams;            /* trainable parameters: the first nparams weights */
	ir_value **params;      /* [nparams] in source order */
	int x_input, batch_axis, time_axis, logits_output, loss_output_index, nclasses;
	int nfwd_outputs;       /* outputs of the model before the training ones */
	struct ir_node *bwd_start; /* first root node of the backward part (all after it are) */
} train_opts;

int train_loss_lookup(const char *name);        /* TRAIN_* or -1 */
const char *train_loss_name(int loss);

/* The f32 weights of a freshly loaded root graph, in source order: the
 * trainable parameters.  Called before the passes. */
void train_collect_params(ir_graph *g, train_opts *t);

/* Shape rules and C of the training ops (train_ops.c). */
int train_op_infer(ir_graph *g, ir_node *n, diag *D);
void train_op_emit(struct emit_ctx *E, ir_node *n);

#endif
