/* pass_lower_cell.c: CELL nodes (native .cell layers) -> RECURRENCE nodes.
 *
 * requires: pass_infer (CELL outputs have shapes: cell_infer; parameters are
 *           weights with data: the .cell front end loads or initialises them).
 * produces: no CELL node is left.  Each becomes, in its place, one RECURRENCE
 *           whose body is plain IR built by the cell library (cells.c: GEMMs
 *           with transB, Slices on the last axis, element-wise ops, and for
 *           momentum attention batched MatMuls), plus Slices cutting [B, G]
 *           initial states into the per-gate-block states the body carries
 *           and Concats joining the final ones.  Derived weights (pre-summed
 *           biases, per-block bias vectors, dtriv's M = base expm(S)) are new
 *           VAL_WEIGHT values computed now.
 * breaks:   nothing; parameters only the lowering read (A, base, w, c, alpha,
 *           beta, ...) stay in the graph unused (the emitter writes only
 *           weights that are used).
 *
 * Runs before pass_lower_rnn and pass_hoist, so cells get the same input
 * projection hoisting and fusion as ONNX LSTMs.
 */
#include "cells.h"
#include "passes.h"
#include "util.h"

#include <string.h>

int pass_lower_cell(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	int errors = 0, n = g->nnodes, any = 0;
	for (int i = 0; i < n; i++)
		any |= g->nodes[i]->op == OP_CELL;
	if (!any)
		return 0;
	ir_node **old = arena_array(g->A, (size_t)n, sizeof *old);
	memcpy(old, g->nodes, (size_t)n * sizeof *old);
	/* rebuild the node list: the lowered nodes take the CELL's position */
	g->nnodes = 0;
	for (int i = 0; i < n; i++) {
		if (old[i]->op == OP_CELL)
			errors += cell_lower(g, old[i], D);
		else
			ir_append(g, old[i]);
	}
	ir_recount(g);
	return errors;
}
