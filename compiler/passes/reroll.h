/* reroll.h: the parts of pass_reroll, the state they share and the
 * functions each calls in another.  The pass, in the order it runs
 * (pass_reroll.c drives it, once per loop, in rounds):
 *   reroll_find.c    the per-step slices and their sequences, every node
 *                    assigned to a step (the cut between two steps);
 *   reroll_match.c   the template (one copy) and every other copy matched
 *                    against it: states, per-step coefficients;
 *   reroll_build.c   the RECURRENCE built in the copies' place: its body,
 *                    inputs, outputs and the reads after the loop;
 *   reroll_time.c    the time axis made a dimension symbol when sound, else
 *                    the traced steps sliced (time_note says why);
 *   reroll_states.c  parallel states (one velocity per gate) merged;
 *   reroll_unfound.c what stays unrolled, reported (the graph never changes).
 * pass_reroll.c also holds the small helpers every part uses. */
#ifndef CELLC_REROLL_H
#define CELLC_REROLL_H

#include "diag.h"
#include "ir.h"

/* A per-step slice x[t]: its source, time axis and step. */
typedef struct reroll_slice {
	ir_value *src;
	int axis;
	int64_t t;
} reroll_slice;

/* ---- the loop being rolled (rr) ------------------------------------------------------ */

/* Labels of root nodes besides a step number 0 .. T-1: before the loop, after it. */
enum { LBL_PREFIX = -1, LBL_TAIL = -2 };
/* How a template node's input is read (tin.kind). */
enum { IN_NONE, IN_INT, IN_SEQ, IN_STATE, IN_CAP, IN_COEF };

typedef struct tin {
	int kind, idx;          /* INT: template value; SEQ: sequence; STATE: state; COEF: table */
	ir_value *cap;          /* CAP / COEF: the template's value */
} tin;

typedef struct coef {
	int node, k;            /* template node and input */
	float *tab;             /* [T] per-copy value */
	int *have;              /* [T] copy seen */
} coef;

typedef struct seqsrc {
	ir_value *src;
	int axis;
	ir_node **anchor;       /* [T] the node whose output is x_t */
	ir_node **aux;          /* [T] its Slice when the anchor is a Squeeze */
} seqsrc;

typedef struct rr {
	ir_graph *g;
	diag *D;
	arena *A;
	int nn, nv;             /* root nodes / values when the pass started */
	int T, m;               /* steps; template copy */
	int *label;             /* [nn] */
	int *anchor_of;         /* [nn] sequence index + 1 of an anchor (or aux) node, 0 */
	int *cstart, *cons;     /* consumers of value id: cons[cstart[v] .. cstart[v+1]) */
	int nseq;
	seqsrc *seq;
	/* a generated loop (reroll_find_generated): no per-step slices, each
	 * step fed what the step before computed; its steps marked by their
	 * products of one weight (mark[t], mark_of[node] = t + 1), which are
	 * computation of the copies, not their inputs */
	int gen;
	ir_node **mark;         /* [T] */
	int *mark_of;           /* [nn] */
	ir_dim batch;           /* the batch dimension of the first sequence (or mark's input) */
	int **copy;             /* [T] node indices of each copy (anchors excluded) */
	int *ncopy;
	/* template */
	int nt;                 /* nodes */
	ir_node **tn;
	tin **ti;               /* [nt][nin] */
	int ntv;                /* values */
	int *tvof;              /* [nv] template value index or -1 */
	ir_value **tval;        /* [ntv] */
	int nstate;
	ir_value **state_in;    /* [nstate] the template's state-in values (from copy m-1) */
	int *state_out;         /* [nstate] template value index */
	int *stateof;           /* [nv] state index or -1 */
	int ncoef;
	coef *coefs;
	/* matching */
	ir_value ***map;        /* [T][ntv] */
	ir_value ***sin;        /* [T][nstate] */
	char *matched;          /* [nn] */
	char *done;             /* [T] copies matched so far */
	int map_node;           /* the node commit_match took last */
	int map_again;          /* ... and it was matched before (copy 0: see fits) */
	int round;              /* loops rolled before this one */
	int reverse;            /* the trace ran over the slices from the last to the first */
	ir_graph *scratch;      /* copy-0 folding */
	ir_unrolled_why why;    /* why the graph was left alone (WHY_NONE: not yet) */
	int no_step;            /* the slices are read by no computation (only by
	                           graph outputs, as after an earlier round): no
	                           loop, nothing to report */
	int diff_found;         /* the first difference between two steps (differ): */
	int diff_step, diff_vs; /* node diff_node of step diff_step has no counterpart */
	const ir_node *diff_node; /* in step diff_vs */
} rr;

/* ---- the recurrence being built (build) -------------------------------------------------- */

/* A stacked output: Concat(Unsqueeze(y_0), .., Unsqueeze(y_{T-1}), axis). */
typedef struct stack {
	ir_node *concat;
	int tv;                 /* template value of the Unsqueeze's input */
	int axis;
	ir_value *pre;          /* an entry before the steps' (a prologue step's), or NULL */
	int off;                /* extra: the steps' entries are concat->in[off .. off + T) */
	int extra;              /* the Concat has other entries too, before or after the
	                           steps' (a generated sequence's outputs after a
	                           loop's): it stays, the steps' entries one stacked output */
} stack;

typedef struct build {
	ir_graph *body;
	ir_value **bval;        /* [ntv] body value of each template value */
	ir_value **bseq, **bstate, **bcoef;
	ir_value *bstep;
	int nstack;
	stack *stacks;
	int nlast;
	int *last_tv;           /* template values read from the last copy (not finals) */
	int neach;
	int *each_tv;           /* template values read after the loop from other copies */
	char *drop;             /* [nt] template nodes not copied (stacking Unsqueezes) */
} build;

/* Recurrences of this pass whose time axis stayed the traced T although the
 * trace could run any T (reroll_slice_traced_steps gave them the traced steps
 * of their sequences): a later loop that reads all of a stacked output of one
 * (stacked layers, each with a loop of its own) takes over the per-step reads
 * that held it fixed, and then both become symbolic together. */
enum { FIXED_MAX = 32 };
typedef struct fixed_recs {
	ir_node *rec[FIXED_MAX];
	int n;
} fixed_recs;

/* ---- small helpers (pass_reroll.c) ------------------------------------------------------- */

/* v's index in the root graph's values when the pass started, or -1. */
int reroll_vid(const rr *R, const ir_value *v);
/* n's index in the root graph's nodes when the pass started, or -1. */
int reroll_nid(const rr *R, const ir_node *n);
/* The step label of v's producer (LBL_PREFIX for values made before the pass). */
int reroll_label_of(const rr *R, const ir_value *v);
/* Whether v is one of the root graph's outputs. */
int reroll_is_graph_output(const rr *R, const ir_value *v);
/* v's data is held at compile time (a constant or a weight, not symbolic). */
int reroll_has_data(const ir_value *v);
int reroll_zero_value(const ir_value *v);     /* all zeros: data, or ConstantOfShape of 0 */
/* Same constant contents; approx: f32 within a relative 1e-6 (values the
 * exporter folded against values cellc folds). */
int reroll_same_const(const ir_value *a, const ir_value *b, int approx);
/* Same attributes, tensors compared by content. */
int reroll_same_attrs(const ir_node *a, const ir_node *b);
/* Records why the loop stays unrolled (the first reason kept); returns 1. */
int reroll_fail(rr *R, ir_unrolled_why why);
/* Records the first difference found between two steps: node n of step
 * `step` has no counterpart in step `vs`. */
void reroll_differ(rr *R, int step, int vs, const ir_node *n);
/* The [rows, cols] matrix a carried or stacked value is held as in the
 * recurrence (its shape only; the dtype is the caller's to check): itself
 * when it is one; else [batch, the product of
 * the axes after the batch axis], where the batch axis is the first whose
 * size is R->batch and every axis before it has size 1 (a [1, B, N] output,
 * as one-step nn.GRU calls keep it), or, at batch 1 with no such axis, one
 * row of every axis (a [H] vector whose batch axis was dropped).  A pure
 * reshape either way.  1 and *m, or 0. */
int reroll_matrix(const rr *R, const ir_value *v, ir_shape *m);
/* The qsort order of elements that open with a reroll_slice: by source
 * (value id), axis, step. */
int reroll_slice_cmp(const void *a, const void *b);

/* ---- finding the loop (reroll_find.c) ---------------------------------------------------- */

/* The sequences read step by step (R->seq, R->T); 0 when none. */
int reroll_find_sequences(rr *R);
/* A generated loop when there is no sequence (R->gen, R->mark, R->T): the
 * longest run of a float32 weight's products over >= 3 steps, each fed by
 * the one before (reroll_generated_steps); 0 when none. */
int reroll_find_generated(rr *R);
/* The consumer lists of the root values (R->cstart, R->cons). */
void reroll_build_consumers(rr *R);
/* Every node's step (R->label) and the copies (R->copy); 1 on failure. */
int reroll_assign_steps(rr *R);

/* ---- matching the copies (reroll_match.c) ------------------------------------------------ */

/* The template from copy R->m: its nodes, inputs and states; 1 on failure. */
int reroll_build_template(rr *R);
/* Every copy matched against the template, states linked; 1 on failure. */
int reroll_match_all(rr *R);
/* The per-step coefficient of template node `node`'s input k, or NULL. */
coef *reroll_coef_at(rr *R, int node, int k);
/* The NAG schedule's restart period of a coefficient table (see reroll_match.c). */
int64_t reroll_nag_period(const float *tab, const int *have, int T, int *ambiguous);

/* ---- building the recurrence (reroll_build.c) -------------------------------------------- */

/* The stacked outputs and the values read after the loop; 0 (no failure). */
int reroll_find_stacks(rr *R, build *B);
/* The RECURRENCE in the copies' place: WHY_NONE, or why not (the graph
 * unchanged when it says so before the node list changes). */
ir_unrolled_why reroll_build_recurrence(rr *R, build *B, const char **time_note, int *symbolic_ok);
/* Slice(x, st, en, axis, step) on one axis into out (a new value when NULL). */
ir_node *reroll_axis_slice(ir_graph *g, ir_value *x, int64_t st, int64_t en, int64_t ax, int64_t sp, ir_value *out);

/* ---- the time axis (reroll_time.c) ------------------------------------------------------- */

/* Makes rec's time axis a dimension symbol: NULL, or why T stays (the shapes put back). */
const char *reroll_make_time_symbolic(rr *R, ir_node *rec, fixed_recs *F);
/* When the Split that cuts the loop's sequence had fixed the size symbol
 * of a dynamic axis to the traced length (a link of infer_split: a traced
 * x.unbind()), that symbol's name (else NULL): reroll_once records it on
 * the recurrence (attribute time_name), the name its time axis takes again
 * if it becomes symbolic.  Called before the copies are replaced. */
const char *reroll_pinned_time_name(rr *R);
/* rec reads only the traced steps of its sequences; 1 on an error. */
int reroll_slice_traced_steps(rr *R, ir_node *rec);

/* ---- parallel states (reroll_states.c) --------------------------------------------------- */

/* One group of parallel states of rec merged: 1, or 0 when there is none. */
int reroll_merge_parallel_states(ir_graph *g, ir_node *rec);

/* ---- what stays unrolled (reroll_unfound.c) ---------------------------------------------- */

/* After the rounds: records the traced loops they did not find
 * (WHY_SLICE_FORM, WHY_NO_SLICES); the graph does not change. */
void reroll_find_unfound(ir_graph *g);
/* The steps of the skip-th longest generated loop of g over a float32
 * weight (WHY_NO_SLICES): its products in step order into marks[] (room for
 * g->nnodes); their number (>= 3), or 0 when there is none.  Node ids fresh. */
int reroll_generated_steps(ir_graph *g, int skip, ir_node **marks);
/* The root nodes of each ONNX Loop the loader unrolled, into cnt[k] for
 * g->unrolled[k]. */
void reroll_count_loop_nodes(const ir_graph *g, int *cnt);
/* Drops the record of an unrolled ONNX Loop whose nodes the rounds rolled
 * (before: reroll_count_loop_nodes before the rounds, of the nloops
 * records there then), and updates the others' node counts. */
void reroll_settle_loops(ir_graph *g, const int *before, int nloops);

#endif
