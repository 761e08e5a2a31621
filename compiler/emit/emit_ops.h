/* emit_ops.h: what the root graph's operator emitters share, and the
 * functions of one family that emit_node (emit_ops.c) or another family
 * calls:
 *   emit_ops.c     emit_node; the helpers (comments, index lists); data
 *                  movement; Gemm, MatMul, softmax;
 *   emit_elem.c    element-wise loops and fused groups;
 *   emit_nn.c      reductions, convolution, quantization, pooling,
 *                  normalisation, randomness, optimisers;
 *   emit_tensor.c  index loops, layout, linear algebra, data-dependent
 *                  lengths, losses.
 * The small expression helpers are static inline here; the shared
 * functions are prefixed ops_, the operators' printers keep emit_<op>.
 */
#ifndef CELLC_EMIT_OPS_H
#define CELLC_EMIT_OPS_H

#include <string.h>

#include "emit.h"

static inline const char *ctype(const ir_value *v) { return ir_dtype_ctype(v->dtype); }

static inline int is_float(ir_dtype t) { return t == DT_F32 || t == DT_F64; }

static inline int is_unsigned(ir_dtype t)
{
	return t == DT_U8 || t == DT_U16 || t == DT_U32 || t == DT_U64 || t == DT_BOOL;
}

/* e, parenthesised when it is a sum (to be a factor). */
static inline const char *factor(emit_ctx *E, const char *e)
{
	return strchr(e, '+') || strchr(e, '-') ? arena_printf(E->A, "(%s)", e) : e;
}

/* a * b as a C expression, with constant factors folded. */
static inline const char *mul_str(emit_ctx *E, const char *a, const char *b)
{
	if (!strcmp(a, "1"))
		return b;
	if (!strcmp(b, "1"))
		return a;
	if (!strcmp(a, "0") || !strcmp(b, "0"))
		return "0";
	return arena_printf(E->A, "%s * %s", a, b);
}

/* Product of dims [from, to) of s, as a monomial. */
static inline ir_dim dims_prod(const ir_shape *s, int from, int to)
{
	ir_dim p = ir_dim_const(1);
	for (int i = from; i < to; i++)
		p = ir_dim_mul(p, s->d[i]);
	return p;
}

static inline const char *shape_str(emit_ctx *E, const ir_value *v)
{
	return ir_shape_str(E->A, E->g, &v->shape);
}

static inline int axis_of(int64_t a, int rank)
{
	return (int)(a < 0 ? a + rank : a);
}

/* ---- emit_ops.c: comments and index lists ---- */

/* Text safe in a comment. */
const char *ops_safe(emit_ctx *E, const char *s);
/* The comment before a kernel: op, node name, provenance, shapes, `what`. */
void ops_node_comment(emit_ctx *E, const ir_node *n, const char *what);
/* True when v has its own storage its producer must write. */
int ops_is_stored(emit_ctx *E, const ir_value *v);
/* "(const int64_t[]){d0, d1, ..}" of the dims of s from axis `from` on;
 * "v0, v1, ..." ("0" when empty); that list as a compound literal. */
const char *ops_dims_lit(emit_ctx *E, const ir_shape *s, int from);
const char *ops_ints_list(emit_ctx *E, const int64_t *v, int n);
const char *ops_ints_lit(emit_ctx *E, const int64_t *v, int n);
/* The pads [begins.., ends..] of the Conv, pooling or ConvTranspose n (its
 * geometry's, nsp spatial axes) as a compound literal: where they depend on
 * a run-time size the rt_same_pad (infer_pads_at_run_time) or rt_convt_pad
 * (infer_convt_pads_at_run_time) of it. */
const char *ops_pads_lit(emit_ctx *E, const ir_node *n, const int64_t *pads, const int64_t *k, const int64_t *st,
			 const int64_t *dil, int nsp);

/* The numpy MatMul geometry of A, B -> Y: the matrix sizes M, K, N (a 1-D
 * operand promoted) and the batch shapes of A, B and Y. */
typedef struct mm_geom {
	ir_dim M, K, N;
	ir_shape ab, bb, yb;
} mm_geom;

mm_geom ops_matmul_geometry(const ir_value *a, const ir_value *b, const ir_value *y);

/* ---- emit_elem.c: loop nests and element-wise loops ---- */

/* A loop nest over a domain (the output shape), with the index expression of
 * every operand: strides over the merged axes, zero where it broadcasts. */
typedef struct loop {
	int naxes;                      /* merged axes; 0: one iteration */
	const char *ext[IR_MAX_RANK];   /* extent of each merged axis */
	const char *var[IR_MAX_RANK];   /* index variable */
	const char *oidx;               /* flat index into the domain */
	int nops;
	const char **idx;               /* [nops] index into each operand */
} loop;

/* Plans the nest over dom for operands ops[nops]; 0 if one does not
 * broadcast to dom.  Open and close print its loops. */
int ops_loop_plan(emit_ctx *E, loop *L, const ir_shape *dom, const ir_shape *const *ops, int nops);
void ops_loop_open(emit_ctx *E, const loop *L);
void ops_loop_close(emit_ctx *E, const loop *L);
/* Nodes the element-wise loops print (OPK_ELEM, Cast, Expand). */
int ops_loopable(const ir_node *n);
/* One loop for nodes[0..count), all of one output shape; 0 if the inputs
 * do not broadcast to it. */
int ops_elem_loop(emit_ctx *E, ir_node **nodes, int count);

/* ---- emit_nn.c ---- */

void emit_reduce(emit_ctx *E, ir_node *n);
void emit_argmax(emit_ctx *E, ir_node *n);
void emit_conv(emit_ctx *E, ir_node *n);
void emit_quant_linear(emit_ctx *E, ir_node *n);
void emit_dyn_quant(emit_ctx *E, ir_node *n);
void emit_qmatmul(emit_ctx *E, ir_node *n);
void emit_qconv(emit_ctx *E, ir_node *n);
void emit_pad(emit_ctx *E, ir_node *n);
void emit_resize(emit_ctx *E, ir_node *n);
void emit_gridsample(emit_ctx *E, ir_node *n);
void emit_roialign(emit_ctx *E, ir_node *n);
void emit_pool(emit_ctx *E, ir_node *n);
void emit_norm(emit_ctx *E, ir_node *n);
void emit_random(emit_ctx *E, ir_node *n);
void emit_dropout(emit_ctx *E, ir_node *n);
void emit_optim(emit_ctx *E, ir_node *n);

/* ---- emit_tensor.c ---- */

void emit_misc(emit_ctx *E, ir_node *n);
void emit_layout(emit_ctx *E, ir_node *n);
void emit_linalg(emit_ctx *E, ir_node *n);
void emit_datadep(emit_ctx *E, ir_node *n);
/* The training form of SoftmaxCrossEntropyLoss, which train_op_emit
 * prints; any other loss. */
int ops_is_train_ce(const ir_node *n);
void emit_loss(emit_ctx *E, ir_node *n);

#endif
