/* onnx_priv.h: what the ONNX loader's files (compiler/onnx/) share among themselves.
 *
 * This header includes the protobuf-c generated structs, so it must never be
 * included outside compiler/onnx/: the rest of the compiler sees only onnx.h and
 * the IR.  The loader is split in three:
 *   onnx_load.c    files, the model, the graph: names, inputs, topological
 *                  order, outputs, bindings
 *   onnx_node.c    one NodeProto -> IR node(s): attributes, opset
 *                  normalisation to the newest operator form, checks
 *   onnx_tensor.c  TensorProto -> dtype, shape and data (typed fields,
 *                  raw_data, external files), onnx_read_tensor_file
 */
#ifndef CELLC_ONNX_PRIV_H
#define CELLC_ONNX_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.h"
#include "onnx.pb-c.h"

/* Newest default-domain opset whose operator forms we know.  Later opsets may
 * change an operator's meaning in ways the checks below cannot see. */
enum { ONNX_MAX_OPSET = 22 };

/* ---- a string -> pointer hash table in the arena ---- */

typedef struct onnx_map {
	const char **keys;      /* [cap] NULL = empty slot */
	void **vals;            /* [cap] */
	size_t cap, n;          /* cap is a power of two (or 0) */
} onnx_map;

void *onnx_map_get(const onnx_map *m, const char *key);
void onnx_map_put(arena *A, onnx_map *m, const char *key, void *val); /* replaces */

/* ---- the loader's state for one model ---- */

typedef struct onnx_ctx {
	arena *A;
	diag *D;
	ir_graph *g;            /* the root graph being built */
	const char *dir;        /* directory external data paths are relative to */
	int opset;              /* default-domain opset */
	onnx_map values;        /* tensor name -> ir_value* defined so far */
	const Onnx__ModelProto *model;
	int node_index;         /* index in the file of the node being loaded */
	const char *node_out0;  /* first output of the node being loaded, for
	                           errors about nodes that have no name */
	int node_unnamed;       /* the node has no name in the file */
	int fresh;              /* counter for names the loader makes up */
	onnx_map body_names;    /* names of the inputs and initializers of bodies
	                           loaded so far (lower_loop.c keeps them unique) */
	onnx_map outer_names;   /* every node output and graph output of the main
	                           graph: a body value of the same name (a body
	                           input 'h' beside the Loop's output 'h') is
	                           renamed, the main graph's names are kept */
} onnx_ctx;

/* Error about the node being loaded: diag_node, plus its first output name
 * when the file gave the node no name. */
void onnx_node_error(onnx_ctx *L, const ir_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* com.microsoft DynamicQuantizeLSTM, loaded as an LSTM of 12 inputs: its
 * 8-bit W and R dequantized into new float32 weights in the LSTM's layout,
 * inputs 8 to 11 dropped (onnx_contrib.c); the number of errors. */
int onnx_dynquant_lstm(onnx_ctx *L, ir_node *n);
/* MatMulIntegerToFloat (dynamic 0) or DynamicQuantizeMatMul (1), loaded as
 * MatMulInteger n: appends what comes before n (DynamicQuantizeLinear),
 * rewires n, and gives in post[] (at most 4) the nodes that follow it. */
int onnx_contrib_matmul(onnx_ctx *L, ir_node *n, int dynamic, ir_node **post, int *npost);

/* A fresh value name ("%base.N"): '%' never appears in names the loader
 * accepts from the file, so these cannot collide with them. */
const char *onnx_fresh_name(onnx_ctx *L, const char *base);
/* A new VAL_CONST registered under a fresh name. */
ir_value *onnx_const_i64(onnx_ctx *L, const char *base, int n, const int64_t *v);
ir_value *onnx_const_f32_scalar(onnx_ctx *L, const char *base, float v);

/* Loads node np (file index L->node_index) into L->g: zero (Constant), one or
 * several IR nodes.  Errors go to L->D; the node's outputs are defined even
 * then, so that later nodes do not report them missing. */
void onnx_load_node(onnx_ctx *L, const Onnx__NodeProto *np);
/* onnx_node_check.c: the attribute values of node n (after normalisation),
 * by its operator's checker; the number of errors reported. */
int onnx_check_values(onnx_ctx *L, ir_node *n);

/* ---- subgraphs (lower_loop.c) ---- */

/* Loads the body graph of Loop/Scan node n (being loaded) as a graph nested
 * in L->g: its inputs become VAL_STEP values (types from the file, shapes
 * left unknown: pass_infer re-infers them), its nodes see the enclosing
 * graphs' values by name (captures), its own names stay local.  NULL after
 * reporting an error. */
ir_graph *onnx_load_body(onnx_ctx *L, ir_node *n, const Onnx__GraphProto *gp);
/* Fills order[] with a topological order of gp's nodes (names defined outside
 * gp are sources).  -1 after reporting a cycle. */
int onnx_topo_order(onnx_ctx *L, const Onnx__GraphProto *gp, int *order);

/* IR_TENSOR, IR_SEQ or IR_OPT by the outer kind of a declared type (NULL:
 * a tensor). */
int onnx_type_kind(const Onnx__TypeProto *tp);

/* ---- tensors ---- */

typedef struct onnx_tensor {
	ir_dtype dtype;
	ir_shape shape;         /* all dims constant */
	int64_t numel;
	void *data;             /* arena, row-major, host byte order; never NULL */
	ir_dtype narrow;        /* FLOAT16 / BFLOAT16 read as float32 (dtype DT_F32); else 0 */
} onnx_tensor;

/* Decodes t.  dir: where external data files are looked up.  On failure
 * returns -1 with a message (without the tensor's name) in err. */
int onnx_tensor_decode(arena *A, const char *dir, const Onnx__TensorProto *t,
		       onnx_tensor *out, char *err, size_t errlen);

/* The ONNX spelling of an element type ("FLOAT", "INT64"; "17" if unknown). */
const char *onnx_dtype_name(int t);
/* 1 if cellc computes with this element type. */
int onnx_dtype_supported(int t);
/* 1 for FLOAT16 and BFLOAT16: computed in float32 (ir_value.narrow) */
static inline int onnx_dtype_narrow(int t) { return t == DT_F16 || t == DT_BF16; }

/* Reads a whole file into memory (malloc), refusing non-regular files and
 * files larger than limit.  -1 with a message in err. */
int onnx_read_file(const char *path, size_t limit, unsigned char **buf, size_t *len,
		   char *err, size_t errlen);
/* Checks a serialized message before protobuf-c unpacks it: nesting depth and
 * the memory the unpacked structs would take stay bounded, so a hostile file
 * cannot exhaust the stack or the heap.  0 ok; -1 with a message. */
int onnx_wire_check(const unsigned char *buf, size_t len, const ProtobufCMessageDescriptor *d,
		    char *err, size_t errlen);
/* The directory part of path ("." when there is none), in the arena. */
const char *onnx_dirname(arena *A, const char *path);

#endif
