/* infer_shape.h: what infer_shape.c (infer_node: the dispatch, element-wise
 * and shape operators) shares with infer_shape_nn.c and infer_shape_misc.c,
 * which hold the other operator families: the per-node context, the error
 * and dtype helpers, and one rule function per family.  Private to those
 * three files.
 */
#ifndef CELLC_INFER_SHAPE_H
#define CELLC_INFER_SHAPE_H

#include "infer.h"

#include <stdarg.h>
#include <stdio.h>

typedef struct ictx {
	ir_graph *g;
	ir_node *n;
	diag *D;
	arena *A;
	int again;              /* infer_unify changed the symbols: infer the node again */
} ictx;

/* Sizes x and y that the node's operator requires to be equal: made one
 * by ir_sym_unify (why: a phrase, printf-style, recorded with the node's
 * name).  1 when they were: the rule returns non-zero at once without a
 * message (its copies of dims are stale) and infer_node returns
 * INFER_AGAIN; 0 when they cannot be, with nothing changed. */
int infer_unify(ictx *c, ir_dim x, ir_dim y, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static inline int fail(ictx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int fail(ictx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_nodev(c->D, c->n, fmt, ap);
	va_end(ap);
	return 1;
}

static inline const char *shp(ictx *c, const ir_shape *s) { return ir_shape_str(c->A, c->g, s); }
static inline const char *dimstr(ictx *c, ir_dim d) { return ir_dim_str(c->A, c->g, d); }
static inline const char *mono(ictx *c, ir_dim d) { return infer_mono_str(c->A, c->g, d); }
static inline ir_value *in(ictx *c, int k) { return k < c->n->nin ? c->n->in[k] : NULL; }

static inline const char *iname(ictx *c, int k)
{
	ir_value *v = in(c, k);
	return v ? v->name : "?";
}

static inline void set_out(ictx *c, int k, ir_dtype dt, const ir_shape *s)
{
	if (k < c->n->nout && c->n->out[k]) {
		c->n->out[k]->dtype = dt;
		c->n->out[k]->shape = *s;
	}
}

static inline int is_one(ir_dim d) { return ir_dim_eq(d, ir_dim_const(1)); }

/* An axis attribute or element in [-r, r-1] made non-negative; -1 if out of range. */
static inline int norm_axis(int64_t a, int r)
{
	if (a < -(int64_t)r || a >= r)
		return -1;
	return (int)(a < 0 ? a + r : a);
}

/* ---- dtypes ------------------------------------------------------------ */

enum { TY_FLOAT = 1, TY_SINT = 2, TY_UINT = 4, TY_BOOL = 8 };
#define TY_INT (TY_SINT | TY_UINT)
#define TY_NUM (TY_FLOAT | TY_INT)
#define TY_SIGNED (TY_FLOAT | TY_SINT)
#define TY_ANY (TY_NUM | TY_BOOL)

static inline int ty_class(ir_dtype t)
{
	switch (t) {
	case DT_F32: case DT_F64: return TY_FLOAT;
	case DT_I64: case DT_I32: case DT_I16: case DT_I8: return TY_SINT;
	case DT_U64: case DT_U32: case DT_U16: case DT_U8: return TY_UINT;
	case DT_BOOL: return TY_BOOL;
	default: return 0;
	}
}

/* Input k (if present) must have a dtype of the given classes. */
static inline int need_ty(ictx *c, int k, int classes, const char *what)
{
	ir_value *v = in(c, k);
	if (!v || (ty_class(v->dtype) & classes))
		return 0;
	return fail(c, "unsupported dtype %s for input %d ('%s') of %s", ir_dtype_name(v->dtype), k,
		    v->name, what);
}

/* Input k (if present) must have the dtype of input 0. */
static inline int same_ty(ictx *c, int k)
{
	ir_value *v = in(c, k), *x = in(c, 0);
	if (!v || v->dtype == x->dtype)
		return 0;
	return fail(c, "input %d ('%s') has dtype %s but input 0 ('%s') has dtype %s", k, v->name,
		    ir_dtype_name(v->dtype), x->name, ir_dtype_name(x->dtype));
}

/* Operators we run only in single precision (BLAS sgemm and the fused cells). */
static inline int need_f32(ictx *c, int k)
{
	ir_value *v = in(c, k);
	if (!v || v->dtype == DT_F32)
		return 0;
	return fail(c, "unsupported dtype %s for %s (input %d '%s'): only f32 is supported",
		    ir_dtype_name(v->dtype), c->n->op_type ? c->n->op_type : ir_op_name(c->n->op), k,
		    v->name);
}

/* Operators we run in single or double precision (sgemm/dgemm): the
 * element type a float tensor of either width. */
static inline int need_real(ictx *c, int k)
{
	ir_value *v = in(c, k);
	if (!v || v->dtype == DT_F32 || v->dtype == DT_F64)
		return 0;
	return fail(c, "unsupported dtype %s for %s (input %d '%s'): only f32 and f64 are supported",
		    ir_dtype_name(v->dtype), c->n->op_type ? c->n->op_type : ir_op_name(c->n->op), k,
		    v->name);
}

/* ---- shape-determining constant inputs, broadcasting (infer_shape.c) -------- */

/* Reports input k as not a compile-time constant (where it comes from, how
 * to bind it); returns 1. */
int infer_not_const(ictx *c, int k);
/* Input k as monomials into v[max] (infer_const_plain: plain integers);
 * the count, -1 after reporting. */
int infer_const_ints(ictx *c, int k, ir_dim *v, int max);
int infer_const_plain(ictx *c, int k, int64_t *v, int max);
/* Axes list (Squeeze/Unsqueeze): normalised against rank r, distinct. */
int infer_axes_list(ictx *c, int k, int r, int *ax, int max);

/* Multidirectional (numpy) broadcasting of a and b into r (0, or 1 after
 * reporting); whether b broadcasts to a without changing a. */
int infer_broadcast2(ictx *c, const ir_shape *a, const ir_shape *b, ir_shape *r);
int infer_broadcasts_to(const ir_shape *b, const ir_shape *a);

/* ---- the families: 0, or the number of errors reported ---------------------- */

/* infer_shape_nn.c: products, reductions, Conv, Pad, Size, quantization,
 * image sampling, pooling, normalisation, Dropout, the random operators. */
int infer_gemm(ictx *c);
int infer_matmul(ictx *c);
int infer_softmax(ictx *c);
int infer_reduce(ictx *c);
int infer_argmax(ictx *c);
int infer_conv(ictx *c);
int infer_quant(ictx *c);
int infer_pad(ictx *c);
int infer_size(ictx *c);
int infer_resize(ictx *c);
int infer_gridsample(ictx *c);
int infer_roialign(ictx *c);
int infer_pool(ictx *c);
int infer_layernorm(ictx *c);
int infer_batchnorm(ictx *c);
int infer_dropout(ictx *c);
int infer_random(ictx *c);
/* infer_shape_misc.c: indexing, masks, counting, generators, losses,
 * layout, Det/Einsum/signals, LSTM/GRU/RNN, the optimisers, data-dependent
 * lengths. */
int infer_misc(ictx *c);
int infer_loss(ictx *c);
int infer_layout(ictx *c);
int infer_linalg(ictx *c);
int infer_rnn(ictx *c);
int infer_optim(ictx *c);
int infer_datadep(ictx *c);

#endif
