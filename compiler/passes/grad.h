/* grad.h: what pass_grad.c (the per-operator gradient rules, the sweep,
 * the outputs), pass_grad_rec.c (the adjoint of a RECURRENCE:
 * backpropagation through time) and pass_grad_loss.c (the loss) share: the
 * differentiation context, the small node builders, and the entry points
 * each calls in another.  Private to those three files.
 */
#ifndef CELLC_GRAD_H
#define CELLC_GRAD_H

#include "ir_build.h"
#include "passes.h"
#include "train.h"

/* ---- context ---------------------------------------------------------------------- */

enum { CB_ELEM, CB_GEMM };

/* A gradient contribution to a value captured by a body, made per step. */
typedef struct contrib {
	ir_value *c;            /* the captured root value */
	int kind;               /* CB_ELEM: a is its gradient before un-broadcasting;
	                           CB_GEMM: c is B of Gemm n, a = dY_t, b = A_t */
	ir_value *a, *b;        /* body values of the backward body */
	ir_node *n;             /* CB_GEMM: the forward product */
} contrib;

/* Gradient of a last-axis slice, kept until the sliced value's gradient is
 * asked for (several that tile the value become one Concat). */
typedef struct part {
	int64_t lo, hi;         /* columns */
	ir_value *g;
	struct part *next;
} part;

typedef struct gx {
	ir_graph *g;            /* root */
	diag *D;
	ir_train *t;
	int errors;
	int n0;                 /* root values before the pass */
	char *rneeds;           /* [n0] depends on a parameter or an f32 input */
	ir_node *first_rec;     /* the first recurrence (dstate) */
	ir_value *dstate;
} gx;

typedef struct gctx {
	gx *X;
	ir_graph *tg;           /* graph the new nodes go to */
	ir_graph *src;          /* graph of the forward values */
	int nsrc;               /* src values when the context was made */
	ir_value **map;         /* body: forward value -> backward-body value; NULL at root */
	ir_value **grad;        /* [nsrc] */
	part **parts;           /* [nsrc] */
	char *needs;            /* [nsrc] */
	ir_node *at;            /* node being differentiated (messages) */
	ir_node *cats[16];      /* Concats made from slice parts, reused for equal parts */
	int ncats;
	contrib *cb;
	int ncb, capcb;
} gctx;

static inline int fail(gctx *C, const char *fmt, const char *a)
{
	diag_node(C->X->D, C->at, fmt, a);
	C->X->errors++;
	return 0;
}

/* ---- building nodes --------------------------------------------------------------- */

/* How the gradient nodes are made (ir_build): provenance and blame from the
 * node being differentiated. */
static inline ir_build grad_build(const gctx *C)
{
	return (ir_build){.origin = C->at && C->at->origin ? C->at->origin : C->at ? C->at->name : "loss",
			  .D = C->X->D, .blame = C->at, .what = "gradient node", .errors = &C->X->errors};
}

static inline ir_value *fin(gctx *C, ir_node *n)
{
	ir_build B = grad_build(C);
	return ir_build_done(&B, n, NULL);
}

static inline ir_node *mk(gctx *C, ir_op op, int nin, ir_value *const *in)
{
	ir_build B = grad_build(C);
	return ir_build_node(&B, C->tg, op, nin, in, 1);
}

static inline ir_value *op1(gctx *C, ir_op op, ir_value *a) { return fin(C, mk(C, op, 1, &a)); }

static inline ir_value *op2(gctx *C, ir_op op, ir_value *a, ir_value *b)
{
	ir_value *in[2] = {a, b};
	return fin(C, mk(C, op, 2, in));
}

static inline ir_value *fc(gctx *C, double v) { return ir_const_f32_scalar(C->tg, NULL, (float)v); }
static inline ir_value *add(gctx *C, ir_value *a, ir_value *b) { return op2(C, OP_ADD, a, b); }
static inline ir_value *sub(gctx *C, ir_value *a, ir_value *b) { return op2(C, OP_SUB, a, b); }
static inline ir_value *mul(gctx *C, ir_value *a, ir_value *b) { return op2(C, OP_MUL, a, b); }
static inline ir_value *dvd(gctx *C, ir_value *a, ir_value *b) { return op2(C, OP_DIV, a, b); }
static inline ir_value *scale(gctx *C, double k, ir_value *a) { return k == 1.0 ? a : mul(C, a, fc(C, k)); }

static inline ir_value *ints(gctx *C, int n, const int64_t *v) { return ir_const_i64(C->tg, NULL, n, v); }
static inline ir_value *int1(gctx *C, int64_t v) { return ints(C, 1, &v); }

ir_value *grad_reshape(gctx *C, ir_value *v, const ir_shape *s);
ir_value *grad_slice_scatter(gctx *C, ir_value *like, ir_value *u, ir_value *starts, ir_value *ends,
			ir_value *axes, ir_value *steps);
ir_value *grad_gemm(gctx *C, ir_value *a, ir_value *b, int ta, int tb, double alpha);

/* ---- values and their gradients -------------------------------------------------------- */

static inline int in_src(gctx *C, const ir_value *v) { return v->graph == C->src && v->id < C->nsrc; }

/* The forward value v as the new nodes read it. */
static inline ir_value *V(gctx *C, ir_value *v)
{
	if (C->map && in_src(C, v) && C->map[v->id])
		return C->map[v->id];
	return v;
}

static inline int root_needs(gx *X, const ir_value *v)
{
	return v && v->graph == X->g && v->id < X->n0 && X->rneeds[v->id];
}

/* Add g to the gradient of forward value v (grad_acc_ub: g shaped like a
 * broadcast result, summed down to v's shape first). */
void grad_acc(gctx *C, ir_value *v, ir_value *g);
void grad_acc_ub(gctx *C, ir_value *v, ir_value *g);
/* The gradient of v, NULL if nothing flows to it. */
ir_value *grad_get(gctx *C, ir_value *v);

/* ---- pass_grad.c: the rule of one node; pass_grad_rec.c: a RECURRENCE's ---------------- */

void grad_rule(gctx *C, ir_node *n);
void grad_rule_rec(gctx *R, ir_node *n);
/* Removes the stacked outputs the forward recurrences (root nodes before
 * nfwd) gained for the backward pass but that no backward node reads. */
void grad_drop_unused_saves(ir_graph *g, int nfwd);

/* ---- pass_grad_loss.c: the loss ------------------------------------------------------ */

ir_value *grad_loss_input(gx *X);
ir_node *grad_build_loss(gctx *R, ir_value *Y, ir_value **logits);
void grad_seed_loss(gctx *R, ir_node *lossn, ir_value *logits, ir_value *Y);

#endif
