/* onnx.h: the ONNX front end.  protobuf-c structs never leave onnx_*.c.
 *
 * onnx_load reads MODEL.onnx (and external data files beside it) into a new
 * root IR graph.  It resolves opset differences (attributes that later opsets
 * made inputs become constant inputs), converts Constant nodes and
 * initializers into VAL_CONST / VAL_WEIGHT values, declares dimension symbols
 * for symbolic input dims, and rejects what we cannot compile (unknown op or
 * domain, unsupported attribute value, sparse initializers, functions...)
 * with a located diagnostic.  It does not infer shapes: pass_infer does.
 */
#ifndef CELLC_ONNX_H
#define CELLC_ONNX_H

#include "diag.h"
#include "ir.h"

/* Returns NULL after reporting errors to D. */
ir_graph *onnx_load(arena *A, diag *D, const char *path);

/* Reads one serialized TensorProto (input_N.pb / output_N.pb of the ONNX
 * backend tests) into a VAL_CONST value of graph g.  NULL after reporting. */
ir_value *onnx_read_tensor_file(ir_graph *g, diag *D, const char *path);
/* The converse: one TensorProto (name, ONNX data_type, dims, the nbytes of
 * data as raw_data: what onnx.numpy_helper.from_array writes) serialized
 * into A; its length in *len (onnx_tensor.c). */
uint8_t *onnx_tensor_pack(arena *A, const char *name, int dtype, int rank, const int64_t *dims, const void *data,
			  size_t nbytes, size_t *len);

/* Loading with options: values listed here (name -> const value) replace the
 * graph inputs of that name by constants ("binding"), used by `verify` and
 * `compile --bind` for inputs that determine shapes.  An entry with dim > 0
 * fixes a dimension symbol instead (`--dim SYM=N`): every input dimension
 * that would become symbol `name` (a dim_param, or INPUT_AXIS for a
 * dimension the file leaves unnamed, as `cellc info` lists them) is the
 * constant dim. */
typedef struct onnx_binding {
	const char *name;       /* graph input name, or symbol name (dim > 0) */
	const char *path;       /* TensorProto file holding its value, or NULL */
	const char *value;      /* path NULL: a number, the value of a scalar input */
	const ir_value *tensor; /* or its value, read already from path (verify's .npy
	                           data): copied into the graph */
	int64_t dim;            /* > 0: the size symbol `name` is fixed to */
	const char *same;       /* dim > 0 and same: symbol `name` is symbol `same` of
	                           an earlier input instead (dim is then ignored) */
} onnx_binding;

ir_graph *onnx_load_bound(arena *A, diag *D, const char *path, int nbind, const onnx_binding *bind);

/* ONNX Loop/Scan -> RECURRENCE (onnx_loop.c).  pass_loops calls it on a
 * Loop/Scan node n of graph g whose inputs (and the values its body reads)
 * are settled: inferred and folded (passes.h, resolve_settled).  infer(cx,
 * body) must resolve, infer and fold the nodes of a body graph and return
 * the number of errors (pass_loops: resolve_body).  Returns the nodes that
 * replace n, in order (the RECURRENCE with its outputs set; the others still
 * to be inferred), count in *count; NULL after reporting errors.  Users of
 * sequences the loop accumulates (ConcatFromSequence, SequenceAt,
 * SequenceLength later in g) are rewritten in place into tensor operators. */
typedef int (*onnx_infer_fn)(void *cx, ir_graph *body);
ir_node **onnx_loop_expand(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int *count);
/* Whether op is an ONNX sequence operator: pass_seq leaves those that read
 * a Loop's accumulation to onnx_loop_expand, and its finish reports the ones
 * still in use with onnx_seq_leftovers (g and its bodies; returns the
 * number of errors). */
int onnx_is_seq_op(ir_op op);
int onnx_seq_leftovers(ir_graph *g, diag *D);

/* `cellc export` (onnx_export.c): writes to `out` a copy of the ONNX model
 * `model` whose initializers hold the tensors of the same name from the
 * cellc weights file `weights` (same element type and dims required; tensors
 * named "@..." -- a checkpoint's optimiser state -- are skipped).  Everything
 * else in the model is kept.  All checks come before the write, which goes
 * through a temporary file and a rename.  Returns 0, or -1 after reporting
 * every problem to D (each naming its file and tensor); `out` is then
 * untouched. */
typedef struct onnx_export_opts {
	int strict;             /* every float initializer the model uses must be in weights */
	int report;             /* print each initializer (replaced/kept) and a summary on stdout */
} onnx_export_opts;
int onnx_export(diag *D, const char *model, const char *weights, const char *out, const onnx_export_opts *o);
/* Sequences, optionals and If resolved at compile time (onnx_seq.c).
 * onnx_seq_node: pass_seq calls it on every node seq_claims (passes.h)
 * whose inputs are settled.
 * Returns 0: not its business (or a Loop's accumulation, left to
 * onnx_loop_expand); 1: resolved: the node is gone, its outputs resolved or
 * produced by the *count nodes in *rep (the node itself among them when it
 * was rewritten into a tensor operator), still to be inferred; -1 after
 * reporting an error (or when an input's producer failed). */
int onnx_seq_node(ir_graph *g, ir_node *n, diag *D, ir_node ***rep, int *count);
/* Whether Loop n carries a resolved sequence or optional (other than the
 * SequenceEmpty accumulation, unless that is a graph output and the trip
 * count a small constant) or reads one: onnx_loop_expand then unrolls it with
 * onnx_loop_unroll (same contract as onnx_loop_expand). */
int onnx_loop_needs_unroll(const ir_node *n);
/* A sequence SplitToSequence(x) of one slice per index of its axis that only
 * SequenceAt and SequenceLength read stays a view of x (onnx_seq.c):
 * onnx_split_view returns its SplitToSequence node (axis normalised, keep:
 * the slices keep the axis) or NULL; onnx_split_at rewrites SequenceAt n of
 * such a view in place into Gather(x, position, axis), followed by the
 * Unsqueeze *extra (to be placed after n) when the slices keep the axis.
 * Returns 1 when it rewrote n.  onnx_loop.c rewrites a body's reads before
 * mapping its iteration number, so that x[t] becomes a scanned input. */
const ir_node *onnx_split_view(const ir_value *S, int *axis, int *keep);
int onnx_split_at(ir_graph *g, ir_node *n, ir_node **extra);
ir_node **onnx_loop_unroll(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int *count);
/* Root graph outputs that are resolved sequences/optionals -> their tensors
 * as outputs named by onnx_seq_flatten.  Returns the number of errors. */
int onnx_seq_outputs(ir_graph *g, diag *D);
/* The tensors value v stands for and their output names: v itself as
 * `name`; a sequence's elements as name_0, name_1, ...; an optional's value
 * as the optional itself (none: no tensors).  Returns the count (at most
 * max), -1 for nested sequences or more than max. */
int onnx_seq_flatten(arena *A, const ir_value *v, const char *name, ir_value **vals, const char **names,
		     int max);
/* Reads a serialized SequenceProto (kind IR_SEQ) or OptionalProto (IR_OPT)
 * into a resolved VAL_CONST value of g named name, its tensors VAL_CONST
 * values of g.  NULL after reporting. */
ir_value *onnx_read_seq_file(ir_graph *g, diag *D, const char *path, int kind, const char *name);

#endif
