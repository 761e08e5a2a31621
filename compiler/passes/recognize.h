/* recognize.h: naming the cell a recovered recurrence computes (recognize.c).
 *
 * recognize_recurrence() looks at the body of a RECURRENCE built by
 * pass_reroll (or lower_loop.c) and, when it computes one of the cells of
 * docs/cells.md -- a base cell (rnn, lstm, gru) with an input dynamic (plain,
 * momentum, nag, adam, rmsprop) -- sets on the node:
 *   cell       string, e.g. "momentum_lstm(mu=0.6, s=0.6)"
 *   hidden     int, the hidden size H
 * and otherwise cell = "generic" with cell_note saying what did not match.
 * It changes nothing else: the body is compiled by the generic path, whose
 * hoisting and fusion give a recognised cell the native cell's structure
 * (`cellc info` reports both).
 */
#ifndef CELLC_RECOGNIZE_H
#define CELLC_RECOGNIZE_H

#include "ir.h"

void recognize_recurrence(ir_node *rec);

/* The values value c of rec's body (one element) takes at steps 1 ..
 * steps when the body's scalar part -- the values of one element computed
 * from constants, the step number and the states of one element -- runs
 * from rec's initial states (recognize_sched.c): 1 with tab[0 .. steps),
 * 0 when that part alone does not compute c.  A scripted loop's restart
 * counter is such a part. */
int recognize_run_scalars(const ir_node *rec, const ir_value *c, int steps, float *tab);

/* One line for `cellc info` about a recurrence: "recurrence over T=784
 * steps, cell momentum_lstm(mu=0.6, s=0.6), hidden 32", plus the notes
 * (time axis, structure after hoisting and fusion); NULL for recurrences
 * that were not recovered from a trace or loop (no "cell" attribute). */
const char *recognize_describe(arena *A, const ir_graph *g, const ir_node *rec);

#endif
