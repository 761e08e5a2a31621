/* passes.h: every pass of the pipeline, in the order compile.c runs them.
 *
 * Each pass file (pass_NAME.c) opens with its contract: what it requires,
 * what it produces, what it breaks.  Passes report user errors through the
 * diag and return the number of errors they found (0 = success); ir_verify
 * runs after every pass in test builds (CELLC_VERIFY=1 or `cellc -V`).
 */
#ifndef CELLC_PASSES_H
#define CELLC_PASSES_H

#include "diag.h"
#include "ir.h"

typedef struct pass_opts {
	int train;              /* --train: derived weights at run time, pass_grad runs */
	struct train_opts *topts; /* --train: the loss (train.h); set with train */
	int no_hoist;           /* --no-hoist: keep input projections in the loop (tests) */
	int no_fuse;            /* --no-fuse: one loop per element-wise op (tests) */
	int no_malloc;          /* --no-malloc: no allocation at run time (pass_schedule packs
	                           no weights) */
} pass_opts;

/* Shape and dtype inference with constant folding, symbolic Shape arithmetic
 * and dead-node removal.  Requires: a loaded graph.  Produces: every value has
 * dtype and shape; shape-determining inputs are constants; no Constant/Shape
 * arithmetic left; no Loop, Scan, sequence, optional or If (infer_resolvers). */
int pass_infer(ir_graph *g, diag *D, const pass_opts *o);
/* What pass_infer does to a node it reaches before inferring it, when the
 * node is a structure that inference alone cannot see through (an ONNX
 * Loop/Scan, a sequence, an optional, If).  Such a rewrite needs the
 * inferred and folded values before the node (trip counts, positions,
 * conditions are often shape arithmetic) and gives the shapes of everything
 * after it, so it runs node by node inside the pass, not as a pass of its
 * own.  compile.c lists them (infer_resolvers[]), tried in order:
 *   node: n's inputs are inferred; infer_body(cx, body) infers and folds a
 *         body graph (returns its errors).  Returns 0: not its node; 1: n is
 *         replaced by the *count nodes in *rep (inferred next, in order);
 *         2: n is kept as it is, uninferred (a later rewrite consumes it or
 *         finish reports it); -1: an error was reported (n's outputs are
 *         then unknown and nodes after it skipped).
 *   finish: after the root graph was walked (NULL: nothing); its errors. */
typedef struct infer_resolver {
	const char *name;
	int (*node)(ir_graph *g, ir_node *n, diag *D, int (*infer_body)(void *cx, ir_graph *body),
		    void *cx, ir_node ***rep, int *count);
	int (*finish)(ir_graph *g, diag *D);
} infer_resolver;
extern const infer_resolver infer_resolvers[];
extern const int infer_nresolvers;

/* Shape no-ops removed, rank-2 sequences read as [B, 1] columns: one
 * spelling of what authors write in many ways (pass_canon.c). */
int pass_canon(ir_graph *g, diag *D, const pass_opts *o);
/* Native cell layers (CELL nodes, cells.h) -> RECURRENCE nodes. */
int pass_lower_cell(ir_graph *g, diag *D, const pass_opts *o);
/* Traced loops (T copies of a step) -> one RECURRENCE each (pass_reroll.c). */
int pass_reroll(ir_graph *g, diag *D, const pass_opts *o);
/* ONNX LSTM/GRU/RNN -> RECURRENCE nodes with element-wise step bodies. */
int pass_lower_rnn(ir_graph *g, diag *D, const pass_opts *o);
/* Whether input k of an ONNX LSTM/GRU/RNN node must be a compile-time
 * constant for pass_lower_rnn (W, R, B and P: the weights are split per
 * direction and gate at compile time); `verify` binds graph inputs feeding
 * them, as it does for inputs that determine shapes. */
int lower_rnn_needs_const(ir_op op, int k);
/* Input projections of every recurrence hoisted into one GEMM over T*B rows,
 * bias vectors pre-summed. */
int pass_hoist(ir_graph *g, diag *D, const pass_opts *o);
/* Last-axis slices (gate chunks) of element-wise body values pushed up to
 * products, per-step inputs and states, where they are column views;
 * states read only by such slices split (pass_split.c). */
int pass_split(ir_graph *g, diag *D, const pass_opts *o);
/* --train only (g->train): the loss, and its gradients by reverse-mode
 * differentiation of the root graph, recurrences by backpropagation through
 * time (pass_grad.c; train.h).  Does nothing in inference builds. */
int pass_grad(ir_graph *g, diag *D, const pass_opts *o);
/* Element-wise chains grouped into fused loops (node->group). */
int pass_fuse(ir_graph *g, diag *D, const pass_opts *o);
/* fuse_needs_buffer: v (made by a fused node) is read outside its group, by
 * a product or as a graph output, so it must be stored; otherwise it lives
 * in a local variable of its group's loop (the planner gives it no slot).
 * A step scalar lives in a local of the step, read by every fused loop: it
 * is stored only when a node that is not fused element-wise code, a nested
 * body or the body's outputs read it. */
int fuse_needs_buffer(const ir_value *v);
/* How each recurrence runs (threads, where its input projections are
 * computed, packed weights), as attributes the emitter prints
 * (pass_schedule.c has the list). */
int pass_schedule(ir_graph *g, diag *D, const pass_opts *o);
/* Workspace slots for temporaries by liveness (value->slot), sized for
 * what the schedule leaves to store (ir_slot_numel). */
int pass_plan(ir_graph *g, diag *D, const pass_opts *o);

typedef int (*pass_fn)(ir_graph *, diag *, const pass_opts *);

#endif
