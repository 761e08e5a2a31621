/* infer.h: shape and dtype inference of single nodes, and the helpers that
 * pass_infer.c, infer_shape.c and infer_fold.c share.
 *
 * infer_node() is the one entry other passes use: every pass that creates a
 * node calls it, so every value always has a dtype and a shape.  It follows
 * the ONNX operator specification of the newest opset (ops.def) and reports
 * what it cannot represent as a located error.
 *
 * Conventions after pass_infer (what later passes may rely on):
 *   - every value has a supported dtype and a known shape (rank 0..8, every
 *     dim a monomial with k >= 0);
 *   - "symbolic constants": a VAL_CONST of dtype i64 may hold `sym` (one
 *     ir_dim per element) and no `data` when an element is a dimension known
 *     only at run time (Shape of a symbolic input).  In `sym` element
 *     arrays, and only there, k may be negative (a plain -1 is k = -1 with
 *     every pow 0, not IR_DIM_UNKNOWN).  A tensor whose elements are all
 *     constant always has `data` and no `sym`;
 *   - Slice inputs 1..4 (starts, ends, axes, steps) are all present and are
 *     VAL_CONST i64 data of one length; axes are non-negative and distinct.
 *     starts/ends are the ONNX values (the emitter clamps them per the spec;
 *     an element that was the symbolic size of its axis became INT64_MAX).
 *
 * Assumptions about symbolic dimensions (documented in the error messages
 * where they matter): a symbolic dimension never broadcasts (it is not 1 at
 * run time), and it is at least as large as every constant slice bound below
 * INT32_MAX applied to it.
 */
#ifndef CELLC_INFER_H
#define CELLC_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* Sets dtype and shape of every output of n (a node of graph g) from its
 * inputs and attributes.  Changes nothing else.  Returns the number of
 * errors reported on D (0: every output has its dtype and shape).  A
 * RECURRENCE's outputs are left as they are (the pass that builds one sets
 * them). */
int infer_node(ir_graph *g, ir_node *n, diag *D);
/* infer_node's result when, instead of inferring n, it made two sizes one
 * (ir_sym_unify: only while pass_infer runs, which then infers n again). */
enum { INFER_AGAIN = -1 };

/* The ONNX name of input k of op if that input determines the output shape
 * (Reshape "shape", Slice "starts", ...) and so must be a compile-time
 * constant; NULL for ordinary data inputs. */
const char *infer_shape_input(ir_op op, int k);

/* Whether the emitter supports the dtype (f32 f64 i64 i32 i16 i8 u64 u32 u16
 * u8 bool). */
int infer_dtype_ok(ir_dtype t);

/* Dropout n trains (draws a mask): its training_mode input is present and not
 * a constant false.  infer_draws_random: n draws random numbers (the random
 * operators, a training Dropout), so the emitted model gives it an rng stream. */
int infer_dropout_trains(const ir_node *n);
int infer_draws_random(const ir_node *n);

/* ---- internal to pass_infer.c and infer_*.c --------------------------------- */

enum {
	INFER_FOLD_MAX = 1 << 24,       /* largest tensor folded at compile time (elements) */
	INFER_FILL_MAX = 1 << 20,       /* largest ConstantOfShape folded (elements) */
};
/* Largest constant factor of a tensor's element count: leaves room for the
 * byte size and offsets in int64 arithmetic. */
#define INFER_NUMEL_MAX ((int64_t)1 << 48)
/* Slice bounds at or beyond this magnitude mean "to the end" on a symbolic
 * dimension (exporters write INT64_MAX, INT32_MAX or INT64_MIN there). */
#define INFER_SLICE_BIG ((int64_t)INT32_MAX)

/* A compile-time constant: VAL_CONST or VAL_WEIGHT with data, or a VAL_CONST
 * with symbolic elements. */
int infer_is_const(const ir_value *v);
/* Element i of a constant integer tensor with data (any integer dtype or
 * bool); no kind check, so weights work too. */
int64_t infer_elem_int(const ir_value *v, int64_t i);
/* Element i of a constant i64 tensor as a monomial (sym or data). */
ir_dim infer_elem_dim(const ir_value *v, int64_t i);
/* A symbolic slice bound v on an axis of size D as the constant bound that
 * clamps alike: D itself, or past it, INT64_MAX ("to the end"); D + rel
 * with rel < 0 (the same base symbol: narrow(0, T - 1, 1)) the bound rel,
 * which, like a constant one, needs D >= -rel (infer records it).  0 when v
 * is none of these. */
int infer_slice_sym_bound(ir_graph *g, ir_dim D, ir_dim v, int64_t *x);

/* Monomial arithmetic on symbolic-constant elements (k may be negative).
 * Each returns 1 and sets *r, or 0 when the result is not a monomial or
 * overflows.  Sums given the graph g (NULL: none) also take a constant
 * plus or minus one symbol to a derived symbol (ir_sym_offset: T - 1), and
 * the difference of two symbols of one base to a constant. */
int infer_mono_is_const(ir_dim a);
int infer_mono_mul(ir_dim a, ir_dim b, ir_dim *r);
int infer_mono_add(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r);
int infer_mono_sub(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r);
/* Truncating, like C; k S / c for one symbol S (a size: positive) and a
 * constant c that does not divide k is the floor symbol floor(k S / c). */
int infer_mono_div(ir_graph *g, ir_dim a, ir_dim b, ir_dim *r);
/* A monomial as text: "-1", "batch", "4*seq*batch", "seq^2". */
const char *infer_mono_str(arena *A, const ir_graph *g, ir_dim a);

/* Element count of a shape with overflow checking: 1 and *r, or 0 when the
 * constant factor exceeds INFER_NUMEL_MAX or a dim is unknown or negative. */
int infer_numel(const ir_shape *s, ir_dim *r);

/* Reductions: red[a] = 1 for the axes node n (ReduceSum .. ReduceSumSquare,
 * inferred) reduces of an input of rank r (its axes input, or all axes
 * unless noop_with_empty_axes).  0, or -1 for an axis out of range. */
int infer_reduce_axes(const ir_node *n, int r, unsigned char *red);
/* Conv (inferred, constant spatial sizes where it pads): kernel sizes, strides,
 * pads (begins then ends) and dilations per spatial axis, auto_pad applied;
 * returns the number of spatial axes. */
int infer_conv_geometry(const ir_node *n, int64_t *k, int64_t *st, int64_t *pads, int64_t *dil);
/* Whether spatial axis a of the Conv or pooling n pads by an amount known
 * only at run time: auto_pad SAME at a stride above 1 over a run-time size
 * (the geometry's pads hold 0 there; the generated code computes them,
 * rt_same_pad; the output size is floor((D + s - 1) / s)). */
int infer_pads_at_run_time(const ir_node *n, int a);
/* MaxPool/AveragePool (inferred): kernel, strides, pads, dilations and output
 * sizes per spatial axis (auto_pad and ceil_mode applied); the number of
 * spatial axes, or -1 when the attributes do not fit X. */
int infer_pool_geometry(const ir_node *n, int64_t *k, int64_t *st, int64_t *pads, int64_t *dil, int64_t *ysp);
/* Range's element count: max(ceil((limit - start) / delta), 0). */
int64_t infer_range_count(double start, double limit, double delta);
/* ConvTranspose's geometry per spatial axis (output_shape, output_padding
 * and auto_pad applied, as ONNX Runtime applies them). */
typedef struct infer_convt {
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], dil[IR_MAX_RANK], opad[IR_MAX_RANK]; /* kernel, strides, dilations, output_padding */
	int64_t pads[2 * IR_MAX_RANK];  /* begins, ends; over a run-time size with output_shape:
	                                   computed per call (infer_convt_pads_at_run_time) */
	int64_t ysp[IR_MAX_RANK];       /* output size; -1: st D + off of a run-time size D */
	int64_t least[IR_MAX_RANK];     /* the least input size output_shape allows (ONNX Runtime's rule) */
} infer_convt_geom;
/* The number of spatial axes, or -1 with a sentence in why (may be NULL)
 * when the attributes do not fit X or ONNX Runtime refuses them. */
int infer_convt_geometry(const ir_node *n, infer_convt_geom *G, char *why, size_t whylen);
/* ConvTranspose n has output_shape and spatial axis a a run-time size: its
 * pads depend on it (rt_convt_pad, computed per call). */
int infer_convt_pads_at_run_time(const ir_node *n, int a);
/* Element i of a window of `size` (HannWindow, HammingWindow, BlackmanWindow). */
double infer_window(ir_op op, int64_t i, int64_t size, int periodic);
/* Einsum's equation as label numbers: operand o's axis a carries label
 * labels[o][a]; labels 0 .. nout - 1 are the output's axes in order (the
 * explicit "->" part, or else the ellipsis' axes then the letters used once,
 * in ASCII order), the others are summed over.  Returns 0, or -1 with a
 * sentence in err.  Shapes are not checked here. */
enum { INFER_EINSUM_MAXLAB = 64 };
typedef struct infer_einsum {
	int nops, nlab, nout;
	int rank[16];
	int labels[16][IR_MAX_RANK];
	char letter[INFER_EINSUM_MAXLAB];       /* each label's letter; '.' for an axis of "..." */
} infer_einsum;
int infer_einsum_plan(const ir_node *n, infer_einsum *p, char *err, size_t errlen);
/* MelWeightMatrix's filter bank [dft_length / 2 + 1, bins] (row-major) as the
 * ONNX specification computes it; y has (dft_length / 2 + 1) * bins entries. */
void infer_melweight(double *y, int64_t bins, int64_t dft_length, int64_t sample_rate, double lower_hz,
		     double upper_hz);
/* MaxUnpool's default output spatial sizes: (in - 1) * stride + kernel - pads. */
int infer_unpool_geometry(const ir_node *n, int64_t *ysp);
/* Pad (inferred): begins then ends for every axis of X into pads[2 rank]. */
int infer_pad_amounts(ir_graph *g, ir_node *n, diag *D, int64_t *pads);
/* The same, each pad a constant or a size known at run time. */
int infer_pad_dims(ir_graph *g, ir_node *n, diag *D, ir_dim *pads);
/* Resize (inferred; also Upsample, loaded as Resize): what rt_resize needs
 * besides the shapes and attributes: the scale of every axis of X (1 for the
 * axes not resized) and the roi of tf_crop_and_resize (starts then ends,
 * [0, 1] where none).  0, or 1 after reporting. */
typedef struct infer_resize_geom {
	double scale[IR_MAX_RANK], roi[2 * IR_MAX_RANK];
	int has_roi;            /* coordinate_transformation_mode tf_crop_and_resize */
	int by_scales;          /* the sizes are the scales' products (rt_resize_size), not given */
} infer_resize_geom;
int infer_resize_geometry(ir_graph *g, ir_node *n, diag *D, infer_resize_geom *G);

/* Tries to replace n's outputs by constants (n's outputs must already be
 * inferred).  Returns 1 when folded (the outputs are now VAL_CONST or
 * VAL_WEIGHT with producer NULL; the caller drops n), 0 when n stays a
 * run-time node, -1 after reporting an error on D. */
int infer_fold(ir_graph *g, ir_node *n, diag *D);

/* A set of pointers (malloc-backed; used by pass_infer and ir_verify). */
typedef struct infer_set {
	const void **slot;
	size_t cap, n;
} infer_set;
void infer_set_init(infer_set *s);
void infer_set_free(infer_set *s);
int infer_set_add(infer_set *s, const void *p);        /* 1 if it was not there */
int infer_set_has(const infer_set *s, const void *p);

#endif
