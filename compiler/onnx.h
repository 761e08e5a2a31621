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

/* Loading with options: values listed here (name -> const value) replace the
 * graph inputs of that name by constants ("binding"), used by `verify` and
 * `compile --bind` for inputs that determine shapes. */
typedef struct onnx_binding {
	const char *name;       /* graph input name */
	const char *path;       /* TensorProto file holding its value */
} onnx_binding;

ir_graph *onnx_load_bound(arena *A, diag *D, const char *path, int nbind, const onnx_binding *bind);

#endif
