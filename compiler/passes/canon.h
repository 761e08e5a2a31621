/* canon.h: what the two stages of canonical forms share (pass_canon.c
 * defines them; pass_gates.c uses them). */
#ifndef CELLC_CANON_H
#define CELLC_CANON_H

#include "ir.h"

/* Reshape, Squeeze, Unsqueeze, Flatten or Identity. */
int canon_is_view(const ir_node *n);
/* A constant integer scalar (a step index). */
int canon_is_step_index(const ir_value *t);
/* A weight or constant f32 with its data. */
int canon_is_param(const ir_value *v);
/* Products as Gemm: beta written only where it scales a C, a C that beta 0
 * cancels dropped.  Returns whether it changed g. */
int canon_gemm_form(ir_graph *g);
/* The root graph's views settled: unit squeezes, shape no-ops, and (when
 * `changed` or they changed anything) what nothing reads any more swept.
 * Returns whether anything changed. */
int canon_views_settled(ir_graph *g, int changed);

#endif
