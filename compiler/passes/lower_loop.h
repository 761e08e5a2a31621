/* lower_loop.h: what lower_loop.c (Loop -> RECURRENCE, the recurrence it
 * builds, sequences and integer values carried through it) and lower_scan.c
 * (Scan -> RECURRENCE) share: the state of one expansion and the helpers
 * that make its nodes.  Private to those two files.
 */
#ifndef CELLC_LOWER_LOOP_H
#define CELLC_LOWER_LOOP_H

#include "ir_build.h"
#include "lower.h"

#include <stdarg.h>
#include <stdio.h>

enum { MAXIO = 256 };

typedef struct lx {
	ir_graph *g;            /* the graph holding the node */
	ir_node *n;             /* the Loop/Scan */
	ir_build bld;           /* how its nodes are made: provenance and opset the Loop's */
	ir_graph *b;            /* its body */
	diag *D;
	arena *A;
	onnx_infer_fn infer;
	void *cx;
	ir_node **rep;          /* replacement nodes, in order */
	int nrep, caprep;
	ir_dim T;
	int reverse;
	int stops;              /* Loop: its condition may end it before T steps (cond_state) */
	ir_value *ran;          /* stops: the [1, 1] f32 count of the steps run (ran_state), or NULL */
	/* the recurrence being built */
	int nseq, nst, ny;
	ir_value *seq_outer[MAXIO], *seq_body[MAXIO];
	int64_t seq_ax[MAXIO];  /* time axis of each sequence input (0, or 1 for [B, T, N]) */
	ir_value *st_init[MAXIO], *st_in[MAXIO], *st_out[MAXIO], *st_final[MAXIO];
	ir_value *y_body[MAXIO], *y_final[MAXIO];
	int y_rev[MAXIO];       /* stacked output must be reversed in time */
	int y_axis[MAXIO];      /* time axis of the final stacked output */
	int unbatch;            /* Scan-8: outputs get the batch axis 0 back */
	ir_value *step;         /* body input t (has_step: f32, 1-based) or NULL */
	ir_value *step_it;      /* int64(t - 1): what the body reads for the iteration number */
} lx;

static inline int fail(lx *X, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int fail(lx *X, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_nodev(X->D, X->n, fmt, ap);
	va_end(ap);
	return 1;
}

static inline const char *shp(lx *X, const ir_shape *s) { return ir_shape_str(X->A, ir_root(X->g), s); }

/* An i64 constant of the values v[cnt] in g. */
ir_value *lx_ints_const(ir_graph *g, int cnt, const int64_t *v);
/* An outer node made before the recurrence, inferred now; its output, NULL
 * after an error. */
ir_value *lx_pre(lx *X, ir_node *nd);
ir_value *lx_pre_transpose(lx *X, ir_value *v, const int64_t *perm);
/* Y = v reversed along axis 0 (Slice with step -1). */
ir_node *lx_reverse_node(lx *X, ir_value *v);
/* perm moving axis `from` to position `to` (others keep their order). */
void lx_move_perm(int r, int from, int to, int64_t *perm);
/* The RECURRENCE from X's sequences, states and outputs, with the nodes
 * that make its operands 2-D and convert back; 0, or 1 after an error. */
int lx_build(lx *X);
/* Checks that each carried value keeps its dtype and shape. */
int lx_check_states(lx *X);
/* lower_scan.c: the Scan X->n as pre nodes, RECURRENCE, post nodes
 * (*count of them), NULL after an error. */
ir_node **lx_expand_scan(lx *X, int *count);

#endif
