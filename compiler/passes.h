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
	int train;              /* --train (later issue): keep what backward needs */
	int no_hoist;           /* --no-hoist: keep input projections in the loop (tests) */
	int no_fuse;            /* --no-fuse: one loop per element-wise op (tests) */
} pass_opts;

/* Shape and dtype inference with constant folding, symbolic Shape arithmetic
 * and dead-node removal.  Requires: a loaded graph.  Produces: every value has
 * dtype and shape; shape-determining inputs are constants; no Constant/Shape
 * arithmetic left. */
int pass_infer(ir_graph *g, diag *D, const pass_opts *o);
/* ONNX LSTM/GRU/RNN -> RECURRENCE nodes with element-wise step bodies. */
int pass_lower_rnn(ir_graph *g, diag *D, const pass_opts *o);
/* Input projections of every recurrence hoisted into one GEMM over T*B rows,
 * bias vectors pre-summed. */
int pass_hoist(ir_graph *g, diag *D, const pass_opts *o);
/* Element-wise chains grouped into fused loops (node->group). */
int pass_fuse(ir_graph *g, diag *D, const pass_opts *o);
/* Workspace slots for temporaries by liveness (value->slot). */
int pass_plan(ir_graph *g, diag *D, const pass_opts *o);

typedef int (*pass_fn)(ir_graph *, diag *, const pass_opts *);

typedef struct pass_desc {
	const char *name;       /* for `cellc dump --after NAME` */
	pass_fn run;
} pass_desc;

extern const pass_desc pass_list[];
extern const int pass_count;

#endif
