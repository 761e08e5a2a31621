/* hoist.h: the parts of pass_hoist (pass_hoist.c: products merged and
 * input projections hoisted; hoist_select.c: selections of one step moved
 * next to their recurrence). */
#ifndef CELLC_HOIST_H
#define CELLC_HOIST_H

#include "ir.h"

/* A Gather or Slice of the last (or first) step of a recurrence's stacked
 * output moved up to the recurrence, which then reads its final state;
 * stacked outputs and recurrences nothing reads dropped (hoist_select.c). */
void hoist_last_steps(ir_graph *g);

#endif
