/* reroll.h: the parts of pass_reroll (pass_reroll.c: finding and rolling
 * traced loops; reroll_unfound.c: reporting what stays unrolled). */
#ifndef CELLC_REROLL_H
#define CELLC_REROLL_H

#include "ir.h"

/* v's data is held at compile time (a constant or a weight, not symbolic). */
int reroll_has_data(const ir_value *v);
/* Same constant contents; approx: f32 within a relative 1e-6 (values the
 * exporter folded against values cellc folds). */
int reroll_same_const(const ir_value *a, const ir_value *b, int approx);

/* After the rounds: records the traced loops they did not find
 * (WHY_SLICE_FORM, WHY_NO_SLICES); the graph does not change. */
void reroll_find_unfound(ir_graph *g);
/* The root nodes of each ONNX Loop the loader unrolled, into cnt[k] for
 * g->unrolled[k]. */
void reroll_count_loop_nodes(const ir_graph *g, int *cnt);
/* Drops the record of an unrolled ONNX Loop whose nodes the rounds rolled
 * (before: reroll_count_loop_nodes before the rounds, of the nloops
 * records there then), and updates the others' node counts. */
void reroll_settle_loops(ir_graph *g, const int *before, int nloops);

#endif
