/* onnx.h: the ONNX front end.  protobuf-c structs never leave compiler/onnx/.
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
/* Reads a serialized SequenceProto (kind IR_SEQ) or OptionalProto (IR_OPT)
 * into a resolved VAL_CONST value of g named name, its tensors VAL_CONST
 * values of g.  NULL after reporting. */
ir_value *onnx_read_seq_file(ir_graph *g, diag *D, const char *path, int kind, const char *name);

#endif
