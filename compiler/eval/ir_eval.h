/* ir_eval.h: a reference interpreter of the IR, for translation validation
 * (CELLC_VALIDATE; compile.c).
 *
 * It runs a graph naively, in double, one node at a time, on tensors of
 * concrete sizes: every dimension symbol is given a value.  It is written
 * for clarity, not speed, and shares with the compiler only the tables
 * (ops.def, elem.def's expressions, cells.h's options, parameters and
 * states of the named cells) and the IR, never a pass or an emitter.  An
 * operator it does not know stops the run with the node named (ev_run.why):
 * the validation then says so, it never guesses. */
#ifndef CELLC_IR_EVAL_H
#define CELLC_IR_EVAL_H

#include "arena.h"
#include "ir.h"

typedef struct ev_tensor {
	ir_dtype dt;            /* the IR's element type (values held as double) */
	int rank;
	int64_t d[IR_MAX_RANK];
	int64_t n;              /* elements */
	double *x;              /* [n] row-major */
} ev_tensor;

/* The values of one run, keyed by the IR value (bodies' values included). */
typedef struct ev_map {
	const ir_value **key;
	ev_tensor **val;
	int64_t cap, count;
} ev_map;

typedef struct ev_run {
	arena *A;               /* tensors live here */
	int64_t sym[IR_MAX_SYMS]; /* the value of every free symbol (derived ones follow) */
	ev_map vals;            /* every value computed, by IR value */
	char why[400];          /* why the run stopped (an unknown operator, a size) */
	const ir_node *at;      /* the node it stopped at, or NULL */
	int64_t nodes;          /* nodes run (a body's once per step) */
	int noref;              /* 1: it stopped at a limit of the reference (an operator or a
				   form it does not know, random draws), not at something
				   wrong with the graph or its inputs */
} ev_run;

/* The concrete size of d under r's symbol values; -1 if unknown. */
int64_t ev_dim(const ev_run *r, const ir_graph *g, ir_dim d);
/* A tensor of the given type and concrete shape (zeros). */
ev_tensor *ev_new(ev_run *r, ir_dtype dt, int rank, const int64_t *d);
/* A tensor for v: its constant data, or zeros of its shape. */
ev_tensor *ev_of_value(ev_run *r, const ir_graph *g, const ir_value *v);
/* Runs root graph g on in[k] for g->inputs[k] (k < nin; a missing input
 * stops the run).  0 and every value in r->vals; 1 with r->why and r->at.
 * A value put in r->vals before (ev_put: a weight moved for a central
 * difference) is used as it is. */
int ev_graph(ev_run *r, ir_graph *g, ev_tensor *const *in, int nin);
/* The nodes [0, upto) of root graph g only (after ev_graph's inputs are in). */
int ev_graph_upto(ev_run *r, ir_graph *g, ev_tensor *const *in, int nin, int upto);
void ev_put(ev_run *r, const ir_value *v, ev_tensor *t);
/* on: floats keep double's precision (no rounding to float32), for central
 * differences; off: every float value is rounded as the IR's type says. */
void ev_exact(int on);
/* The tensor r computed for v, or NULL. */
ev_tensor *ev_get(const ev_run *r, const ir_value *v);

#endif
