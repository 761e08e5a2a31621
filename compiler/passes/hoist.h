/* hoist.h: what pass_merge (pass_merge.c) and pass_hoist (pass_hoist.c)
 * share: which body products they may move or merge. */
#ifndef CELLC_HOIST_H
#define CELLC_HOIST_H

#include "diag.h"
#include "ir.h"

/* Whether v is a constant of the graph around body (a weight, or a
 * constant f32 value; under --train or Gradient, a parameter or a value
 * computed from them, which is an input of the run). */
int hoist_initializer(const ir_value *v, const ir_graph *body);
/* A GEMM of body that can be moved or merged: constant f32 B, bias absent
 * or a constant vector of N (or [1, N]) elements. */
int hoist_movable_gemm(const ir_node *n, const ir_graph *body);
/* Infers node n that pass `pass` made in g; an internal error located at
 * recurrence rec when that fails.  Returns the number of errors. */
int hoist_infer(ir_graph *g, ir_node *n, diag *D, ir_node *rec, const char *pass);

#endif
