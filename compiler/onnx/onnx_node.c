/* onnx_node.c: one ONNX NodeProto -> IR node(s), in the newest operator form.
 *
 * Every node is checked before it enters the graph: its operator is one of
 * ops.def; each attribute is known for that operator at the model's opset
 * (table `attr_specs`) and has the right type; values we cannot honour
 * (direction "sideways", an activation we do not know, a Transpose perm that
 * is not a permutation...) are errors naming the node (those per-operator
 * checks are in onnx_node_check.c).  Then older operator
 * versions are rewritten into the form ops.def documents (table
 * `normalisers`): attributes that later opsets made inputs become constant
 * inputs (Squeeze/Unsqueeze axes, Split split, Slice starts/ends/axes,
 * Reshape shape, Clip min/max), Cast's string `to` becomes a type number, and
 * Softmax/LogSoftmax before opset 13 (which flatten X to 2-D at `axis`) become
 * Shape + Flatten + Softmax(axis=-1) + Reshape.  Input and output counts are
 * checked against ops.def after that rewrite.
 *
 * Conventions the rest of the compiler relies on:
 *  - an omitted optional input or output ("" in the file, or missing at the
 *    end) is a NULL entry; trailing omitted entries are dropped (nin/nout);
 *  - attributes absent from the file stay absent (read them with ir_attr_*
 *    and the ONNX default), except where the default depends on the opset:
 *    Softmax/LogSoftmax axis and Concat axis are always stored, and
 *    LSTM/GRU/RNN hidden_size is filled in from R when the file omits it;
 *  - LSTM/GRU/RNN activation names are stored in the spelling of the ONNX
 *    specification ("Tanh", "LeakyRelu"), whatever the file's letter case;
 *  - a TENSOR attribute (ConstantOfShape value) is a VAL_CONST ir_value that
 *    is not registered in any graph's value list;
 *  - Constant nodes produce no IR node: their output is a VAL_CONST value.
 */
#include "elem.h"
#include "onnx_priv.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Stands for the Constant operator, which has no row in ops.def. */
#define OP_CONSTANT OP_COUNT

/* ---- attribute table ---- */

typedef struct attr_spec {
	int op;                 /* ir_op, or OP_CONSTANT */
	const char *name;
	ir_attrkind kind;
	int since, until;       /* opsets that have it; 0 = unbounded */
	const char *unsupported; /* why we refuse it, for attributes we know but
	                            cannot honour; NULL otherwise */
} attr_spec;

/* Every attribute cellc reads, one row per operator, name and opset range:
 * a table, long by design (load_attr refuses any attribute not in it, or
 * for an element-wise operator in its elem.def row). */
static const attr_spec attr_specs[] = {
	/* the element-wise operators' attributes are those of their elem.def row */
	{OP_CLIP, "min", ATTR_FLOAT, 0, 10, NULL},        {OP_CLIP, "max", ATTR_FLOAT, 0, 10, NULL},
	{OP_TRANSPOSE, "perm", ATTR_INTS, 0, 0, NULL},
	{OP_RESHAPE, "shape", ATTR_INTS, 0, 4, NULL},     {OP_RESHAPE, "allowzero", ATTR_INT, 14, 0, NULL},
	{OP_SQUEEZE, "axes", ATTR_INTS, 0, 12, NULL},     {OP_UNSQUEEZE, "axes", ATTR_INTS, 0, 12, NULL},
	{OP_FLATTEN, "axis", ATTR_INT, 0, 0, NULL},
	{OP_SLICE, "starts", ATTR_INTS, 0, 9, NULL},      {OP_SLICE, "ends", ATTR_INTS, 0, 9, NULL},
	{OP_SLICE, "axes", ATTR_INTS, 0, 9, NULL},
	{OP_SPLIT, "axis", ATTR_INT, 0, 0, NULL},         {OP_SPLIT, "split", ATTR_INTS, 0, 12, NULL},
	{OP_SPLIT, "num_outputs", ATTR_INT, 18, 0, NULL},
	{OP_CONCAT, "axis", ATTR_INT, 0, 0, NULL},
	{OP_GATHER, "axis", ATTR_INT, 0, 0, NULL},
	{OP_SHAPE, "start", ATTR_INT, 15, 0, NULL},       {OP_SHAPE, "end", ATTR_INT, 15, 0, NULL},
	{OP_CONSTOFSHAPE, "value", ATTR_TENSOR, 0, 0, NULL},
	{OP_CAST, "to", ATTR_STRING, 0, 5, NULL},         {OP_CAST, "to", ATTR_INT, 6, 0, NULL},
	{OP_CAST, "saturate", ATTR_INT, 19, 0, NULL},
	{OP_GEMM, "alpha", ATTR_FLOAT, 0, 0, NULL},       {OP_GEMM, "beta", ATTR_FLOAT, 0, 0, NULL},
	{OP_GEMM, "transA", ATTR_INT, 0, 0, NULL},        {OP_GEMM, "transB", ATTR_INT, 0, 0, NULL},
	{OP_GEMM, "broadcast", ATTR_INT, 0, 6, NULL},
	{OP_SOFTMAX, "axis", ATTR_INT, 0, 0, NULL},       {OP_LOGSOFTMAX, "axis", ATTR_INT, 0, 0, NULL},
#define RNN_COMMON(op) \
	{op, "activation_alpha", ATTR_FLOATS, 0, 0, NULL}, {op, "activation_beta", ATTR_FLOATS, 0, 0, NULL}, \
	{op, "activations", ATTR_STRINGS, 0, 0, NULL},     {op, "clip", ATTR_FLOAT, 0, 0, NULL}, \
	{op, "direction", ATTR_STRING, 0, 0, NULL},        {op, "hidden_size", ATTR_INT, 0, 0, NULL}, \
	{op, "layout", ATTR_INT, 14, 0, NULL},             {op, "output_sequence", ATTR_INT, 0, 6, NULL}
	RNN_COMMON(OP_LSTM), RNN_COMMON(OP_GRU), RNN_COMMON(OP_RNN),
#undef RNN_COMMON
	{OP_LSTM, "input_forget", ATTR_INT, 0, 0, NULL},
	{OP_GRU, "linear_before_reset", ATTR_INT, 3, 0, NULL},
	{OP_LOOP, "body", ATTR_GRAPH, 0, 0, NULL},
	{OP_SCAN, "body", ATTR_GRAPH, 0, 0, NULL},        {OP_SCAN, "num_scan_inputs", ATTR_INT, 0, 0, NULL},
	{OP_SCAN, "directions", ATTR_INTS, 0, 8, NULL},
	{OP_SCAN, "scan_input_axes", ATTR_INTS, 9, 0, NULL}, {OP_SCAN, "scan_input_directions", ATTR_INTS, 9, 0, NULL},
	{OP_SCAN, "scan_output_axes", ATTR_INTS, 9, 0, NULL}, {OP_SCAN, "scan_output_directions", ATTR_INTS, 9, 0, NULL},
	{OP_SEQEMPTY, "dtype", ATTR_INT, 0, 0, NULL},
	{OP_SEQCONCAT, "axis", ATTR_INT, 0, 0, NULL},     {OP_SEQCONCAT, "new_axis", ATTR_INT, 0, 0, NULL},
	{OP_SPLITTOSEQ, "axis", ATTR_INT, 0, 0, NULL},    {OP_SPLITTOSEQ, "keepdims", ATTR_INT, 0, 0, NULL},
	/* ai.onnx.preview.training (its own version 1; the default-domain opset
	 * does not matter) */
	{OP_MOMENTUM, "alpha", ATTR_FLOAT, 0, 0, NULL},   {OP_MOMENTUM, "beta", ATTR_FLOAT, 0, 0, NULL},
	{OP_MOMENTUM, "mode", ATTR_STRING, 0, 0, NULL},   {OP_MOMENTUM, "norm_coefficient", ATTR_FLOAT, 0, 0, NULL},
	{OP_ADAM, "alpha", ATTR_FLOAT, 0, 0, NULL},       {OP_ADAM, "beta", ATTR_FLOAT, 0, 0, NULL},
	{OP_ADAM, "epsilon", ATTR_FLOAT, 0, 0, NULL},     {OP_ADAM, "norm_coefficient", ATTR_FLOAT, 0, 0, NULL},
	{OP_ADAM, "norm_coefficient_post", ATTR_FLOAT, 0, 0, NULL},
	{OP_ADAGRAD, "decay_factor", ATTR_FLOAT, 0, 0, NULL}, {OP_ADAGRAD, "epsilon", ATTR_FLOAT, 0, 0, NULL},
	{OP_ADAGRAD, "norm_coefficient", ATTR_FLOAT, 0, 0, NULL},
	{OP_IF, "then_branch", ATTR_GRAPH, 0, 0, NULL},   {OP_IF, "else_branch", ATTR_GRAPH, 0, 0, NULL},
	{OP_SEQMAP, "body", ATTR_GRAPH, 0, 0, NULL},
#define REDUCE(op, axes_until) \
	{op, "axes", ATTR_INTS, 0, axes_until, NULL},      {op, "keepdims", ATTR_INT, 0, 0, NULL}, \
	{op, "noop_with_empty_axes", ATTR_INT, axes_until + 1, 0, NULL}
	REDUCE(OP_REDUCESUM, 12), REDUCE(OP_REDUCEMEAN, 17), REDUCE(OP_REDUCEMAX, 17), REDUCE(OP_REDUCEMIN, 17),
	REDUCE(OP_REDUCEPROD, 17), REDUCE(OP_REDUCEL1, 17), REDUCE(OP_REDUCEL2, 17), REDUCE(OP_REDUCELOGSUM, 17),
	REDUCE(OP_REDUCELOGSUMEXP, 17), REDUCE(OP_REDUCESUMSQUARE, 17),
#undef REDUCE
	{OP_ARGMAX, "axis", ATTR_INT, 0, 0, NULL},        {OP_ARGMAX, "keepdims", ATTR_INT, 0, 0, NULL},
	{OP_ARGMAX, "select_last_index", ATTR_INT, 12, 0, NULL},
	{OP_ARGMIN, "axis", ATTR_INT, 0, 0, NULL},        {OP_ARGMIN, "keepdims", ATTR_INT, 0, 0, NULL},
	{OP_ARGMIN, "select_last_index", ATTR_INT, 12, 0, NULL},
	{OP_CONV, "auto_pad", ATTR_STRING, 0, 0, NULL},   {OP_CONV, "dilations", ATTR_INTS, 0, 0, NULL},
	{OP_CONV, "group", ATTR_INT, 0, 0, NULL},         {OP_CONV, "kernel_shape", ATTR_INTS, 0, 0, NULL},
	{OP_CONV, "pads", ATTR_INTS, 0, 0, NULL},         {OP_CONV, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_MAXPOOL, "auto_pad", ATTR_STRING, 0, 0, NULL}, {OP_MAXPOOL, "ceil_mode", ATTR_INT, 10, 0, NULL},
	{OP_MAXPOOL, "dilations", ATTR_INTS, 10, 0, NULL}, {OP_MAXPOOL, "kernel_shape", ATTR_INTS, 0, 0, NULL},
	{OP_MAXPOOL, "pads", ATTR_INTS, 0, 0, NULL},      {OP_MAXPOOL, "storage_order", ATTR_INT, 8, 0, NULL},
	{OP_MAXPOOL, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_AVGPOOL, "auto_pad", ATTR_STRING, 0, 0, NULL}, {OP_AVGPOOL, "ceil_mode", ATTR_INT, 10, 0, NULL},
	{OP_AVGPOOL, "count_include_pad", ATTR_INT, 7, 0, NULL}, {OP_AVGPOOL, "dilations", ATTR_INTS, 19, 0, NULL},
	{OP_AVGPOOL, "kernel_shape", ATTR_INTS, 0, 0, NULL}, {OP_AVGPOOL, "pads", ATTR_INTS, 0, 0, NULL},
	{OP_AVGPOOL, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_LAYERNORM, "axis", ATTR_INT, 0, 0, NULL},     {OP_LAYERNORM, "epsilon", ATTR_FLOAT, 0, 0, NULL},
	{OP_LAYERNORM, "stash_type", ATTR_INT, 0, 0, NULL},
	{OP_BATCHNORM, "epsilon", ATTR_FLOAT, 0, 0, NULL}, {OP_BATCHNORM, "momentum", ATTR_FLOAT, 0, 0, NULL},
	{OP_BATCHNORM, "training_mode", ATTR_INT, 14, 0, NULL},
	{OP_BATCHNORM, "spatial", ATTR_INT, 0, 8, NULL},
	{OP_DROPOUT, "ratio", ATTR_FLOAT, 0, 11, NULL},   {OP_DROPOUT, "seed", ATTR_INT, 12, 0, NULL},
	{OP_DROPOUT, "is_test", ATTR_INT, 0, 6, NULL},
	{OP_RANDOMUNIFORM, "dtype", ATTR_INT, 0, 0, NULL}, {OP_RANDOMUNIFORM, "shape", ATTR_INTS, 0, 0, NULL},
	{OP_RANDOMUNIFORM, "low", ATTR_FLOAT, 0, 0, NULL}, {OP_RANDOMUNIFORM, "high", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMUNIFORM, "seed", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMNORMAL, "dtype", ATTR_INT, 0, 0, NULL}, {OP_RANDOMNORMAL, "shape", ATTR_INTS, 0, 0, NULL},
	{OP_RANDOMNORMAL, "mean", ATTR_FLOAT, 0, 0, NULL}, {OP_RANDOMNORMAL, "scale", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMNORMAL, "seed", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMUNIFORMLIKE, "dtype", ATTR_INT, 0, 0, NULL}, {OP_RANDOMUNIFORMLIKE, "seed", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMUNIFORMLIKE, "low", ATTR_FLOAT, 0, 0, NULL}, {OP_RANDOMUNIFORMLIKE, "high", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMNORMALLIKE, "dtype", ATTR_INT, 0, 0, NULL}, {OP_RANDOMNORMALLIKE, "seed", ATTR_FLOAT, 0, 0, NULL},
	{OP_RANDOMNORMALLIKE, "mean", ATTR_FLOAT, 0, 0, NULL}, {OP_RANDOMNORMALLIKE, "scale", ATTR_FLOAT, 0, 0, NULL},
	{OP_BERNOULLI, "dtype", ATTR_INT, 15, 0, NULL},   {OP_BERNOULLI, "seed", ATTR_FLOAT, 15, 0, NULL},
	{OP_TRILU, "upper", ATTR_INT, 0, 0, NULL},
	{OP_CUMSUM, "exclusive", ATTR_INT, 0, 0, NULL},   {OP_CUMSUM, "reverse", ATTR_INT, 0, 0, NULL},
	{OP_HARDMAX, "axis", ATTR_INT, 0, 0, NULL},
	{OP_EYELIKE, "dtype", ATTR_INT, 0, 0, NULL},      {OP_EYELIKE, "k", ATTR_INT, 0, 0, NULL},
	{OP_GATHERELEMENTS, "axis", ATTR_INT, 0, 0, NULL},
	{OP_ONEHOT, "axis", ATTR_INT, 0, 0, NULL},
	{OP_SOFTMAXCE, "reduction", ATTR_STRING, 0, 0, NULL}, {OP_SOFTMAXCE, "ignore_index", ATTR_INT, 0, 0, NULL},
	{OP_NLLLOSS, "reduction", ATTR_STRING, 0, 0, NULL}, {OP_NLLLOSS, "ignore_index", ATTR_INT, 0, 0, NULL},
	{OP_BITSHIFT, "direction", ATTR_STRING, 0, 0, NULL},
	{OP_DEPTHTOSPACE, "blocksize", ATTR_INT, 0, 0, NULL}, {OP_DEPTHTOSPACE, "mode", ATTR_STRING, 11, 0, NULL},
	{OP_SPACETODEPTH, "blocksize", ATTR_INT, 0, 0, NULL},
	{OP_CONVTRANSPOSE, "auto_pad", ATTR_STRING, 0, 0, NULL}, {OP_CONVTRANSPOSE, "dilations", ATTR_INTS, 0, 0, NULL},
	{OP_CONVTRANSPOSE, "group", ATTR_INT, 0, 0, NULL}, {OP_CONVTRANSPOSE, "kernel_shape", ATTR_INTS, 0, 0, NULL},
	{OP_CONVTRANSPOSE, "output_padding", ATTR_INTS, 0, 0, NULL},
	{OP_CONVTRANSPOSE, "output_shape", ATTR_INTS, 0, 0, NULL},
	{OP_CONVTRANSPOSE, "pads", ATTR_INTS, 0, 0, NULL}, {OP_CONVTRANSPOSE, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_SCATTERELEMENTS, "axis", ATTR_INT, 0, 0, NULL}, {OP_SCATTERELEMENTS, "reduction", ATTR_STRING, 16, 0, NULL},
	{OP_SCATTERND, "reduction", ATTR_STRING, 16, 0, NULL},
	{OP_GATHERND, "batch_dims", ATTR_INT, 12, 0, NULL},
	{OP_INSTANCENORM, "epsilon", ATTR_FLOAT, 0, 0, NULL},
	{OP_UNIQUE, "axis", ATTR_INT, 0, 0, NULL},        {OP_UNIQUE, "sorted", ATTR_INT, 0, 0, NULL},
	{OP_COMPRESS, "axis", ATTR_INT, 0, 0, NULL},      {OP_NMS, "center_point_box", ATTR_INT, 0, 0, NULL},
	{OP_REVERSESEQ, "batch_axis", ATTR_INT, 0, 0, NULL}, {OP_REVERSESEQ, "time_axis", ATTR_INT, 0, 0, NULL},
	{OP_TFIDF, "mode", ATTR_STRING, 0, 0, NULL},      {OP_TFIDF, "min_gram_length", ATTR_INT, 0, 0, NULL},
	{OP_TFIDF, "max_gram_length", ATTR_INT, 0, 0, NULL}, {OP_TFIDF, "max_skip_count", ATTR_INT, 0, 0, NULL},
	{OP_TFIDF, "ngram_counts", ATTR_INTS, 0, 0, NULL}, {OP_TFIDF, "ngram_indexes", ATTR_INTS, 0, 0, NULL},
	{OP_TFIDF, "pool_int64s", ATTR_INTS, 0, 0, NULL}, {OP_TFIDF, "weights", ATTR_FLOATS, 0, 0, NULL},
	{OP_TFIDF, "pool_strings", ATTR_STRINGS, 0, 0, "string tensors are not supported (pool_int64s is)"},
	{OP_QUANTIZELINEAR, "axis", ATTR_INT, 13, 0, NULL}, {OP_DEQUANTIZELINEAR, "axis", ATTR_INT, 13, 0, NULL},
	{OP_CONVINTEGER, "auto_pad", ATTR_STRING, 0, 0, NULL}, {OP_CONVINTEGER, "dilations", ATTR_INTS, 0, 0, NULL},
	{OP_CONVINTEGER, "group", ATTR_INT, 0, 0, NULL},   {OP_CONVINTEGER, "kernel_shape", ATTR_INTS, 0, 0, NULL},
	{OP_CONVINTEGER, "pads", ATTR_INTS, 0, 0, NULL},   {OP_CONVINTEGER, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_QLINEARCONV, "auto_pad", ATTR_STRING, 0, 0, NULL}, {OP_QLINEARCONV, "dilations", ATTR_INTS, 0, 0, NULL},
	{OP_QLINEARCONV, "group", ATTR_INT, 0, 0, NULL},   {OP_QLINEARCONV, "kernel_shape", ATTR_INTS, 0, 0, NULL},
	{OP_QLINEARCONV, "pads", ATTR_INTS, 0, 0, NULL},   {OP_QLINEARCONV, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_HANNWINDOW, "periodic", ATTR_INT, 0, 0, NULL}, {OP_HANNWINDOW, "output_datatype", ATTR_INT, 0, 0, NULL},
	{OP_HAMMINGWINDOW, "periodic", ATTR_INT, 0, 0, NULL}, {OP_HAMMINGWINDOW, "output_datatype", ATTR_INT, 0, 0, NULL},
	{OP_BLACKMANWINDOW, "periodic", ATTR_INT, 0, 0, NULL}, {OP_BLACKMANWINDOW, "output_datatype", ATTR_INT, 0, 0, NULL},
	{OP_CASTLIKE, "saturate", ATTR_INT, 19, 0, NULL},
	{OP_EINSUM, "equation", ATTR_STRING, 0, 0, NULL},
	{OP_LRN, "alpha", ATTR_FLOAT, 0, 0, NULL},        {OP_LRN, "beta", ATTR_FLOAT, 0, 0, NULL},
	{OP_LRN, "bias", ATTR_FLOAT, 0, 0, NULL},         {OP_LRN, "size", ATTR_INT, 0, 0, NULL},
	{OP_MVN, "axes", ATTR_INTS, 0, 0, NULL},
	{OP_MAXUNPOOL, "kernel_shape", ATTR_INTS, 0, 0, NULL}, {OP_MAXUNPOOL, "pads", ATTR_INTS, 0, 0, NULL},
	{OP_MAXUNPOOL, "strides", ATTR_INTS, 0, 0, NULL},
	{OP_DFT, "axis", ATTR_INT, 0, 0, NULL},           {OP_DFT, "inverse", ATTR_INT, 0, 0, NULL},
	{OP_DFT, "onesided", ATTR_INT, 0, 0, NULL},       {OP_STFT, "onesided", ATTR_INT, 0, 0, NULL},
	{OP_MELWEIGHT, "output_datatype", ATTR_INT, 0, 0, NULL},
	{OP_TOPK, "axis", ATTR_INT, 0, 0, NULL},          {OP_TOPK, "k", ATTR_INT, 0, 9, NULL},
	{OP_TOPK, "largest", ATTR_INT, 11, 0, NULL},      {OP_TOPK, "sorted", ATTR_INT, 11, 0, NULL},
	{OP_PAD, "mode", ATTR_STRING, 0, 0, NULL},
	{OP_PAD, "pads", ATTR_INTS, 0, 10, NULL},         {OP_PAD, "paddings", ATTR_INTS, 0, 1, NULL},
	{OP_PAD, "value", ATTR_FLOAT, 0, 10, NULL},
	/* Resize; at opsets 7 to 9 the rows are those of Upsample, which loads as Resize */
	{OP_RESIZE, "mode", ATTR_STRING, 0, 0, NULL},     {OP_RESIZE, "scales", ATTR_FLOATS, 0, 8, NULL},
	{OP_RESIZE, "coordinate_transformation_mode", ATTR_STRING, 11, 0, NULL},
	{OP_RESIZE, "cubic_coeff_a", ATTR_FLOAT, 11, 0, NULL}, {OP_RESIZE, "exclude_outside", ATTR_INT, 11, 0, NULL},
	{OP_RESIZE, "extrapolation_value", ATTR_FLOAT, 11, 0, NULL},
	{OP_RESIZE, "nearest_mode", ATTR_STRING, 11, 0, NULL},
	{OP_RESIZE, "antialias", ATTR_INT, 18, 0, NULL},  {OP_RESIZE, "axes", ATTR_INTS, 18, 0, NULL},
	{OP_RESIZE, "keep_aspect_ratio_policy", ATTR_STRING, 18, 0, NULL},
	{OP_GRIDSAMPLE, "align_corners", ATTR_INT, 16, 0, NULL}, {OP_GRIDSAMPLE, "mode", ATTR_STRING, 16, 0, NULL},
	{OP_GRIDSAMPLE, "padding_mode", ATTR_STRING, 16, 0, NULL},
	{OP_ROIALIGN, "mode", ATTR_STRING, 10, 0, NULL},  {OP_ROIALIGN, "output_height", ATTR_INT, 10, 0, NULL},
	{OP_ROIALIGN, "output_width", ATTR_INT, 10, 0, NULL}, {OP_ROIALIGN, "sampling_ratio", ATTR_INT, 10, 0, NULL},
	{OP_ROIALIGN, "spatial_scale", ATTR_FLOAT, 10, 0, NULL},
	{OP_ROIALIGN, "coordinate_transformation_mode", ATTR_STRING, 16, 0, NULL},
	{OP_CONSTANT, "value", ATTR_TENSOR, 0, 0, NULL},
	{OP_CONSTANT, "value_float", ATTR_FLOAT, 12, 0, NULL}, {OP_CONSTANT, "value_floats", ATTR_FLOATS, 12, 0, NULL},
	{OP_CONSTANT, "value_int", ATTR_INT, 12, 0, NULL},     {OP_CONSTANT, "value_ints", ATTR_INTS, 12, 0, NULL},
	{OP_CONSTANT, "sparse_value", ATTR_TENSOR, 11, 0, "sparse tensors are not supported"},
	{OP_CONSTANT, "value_string", ATTR_STRING, 12, 0, "string tensors are not supported"},
	{OP_CONSTANT, "value_strings", ATTR_STRINGS, 12, 0, "string tensors are not supported"},
	/* ai.onnx.preview.training */
	{OP_GRADIENT, "xs", ATTR_STRINGS, 0, 0, NULL}, {OP_GRADIENT, "y", ATTR_STRING, 0, 0, NULL},
	{OP_GRADIENT, "zs", ATTR_STRINGS, 0, 0, "zs (inputs held constant) is not supported"},
};

static const char *const attr_type_names[] = {
	"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
	"STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS",
};

static const char *attr_type_name(int t)
{
	return t >= 0 && (size_t)t < COUNTOF(attr_type_names) ? attr_type_names[t] : "an unknown type";
}

static const char *kind_name(ir_attrkind k)
{
	static const char *const names[] = {
		[ATTR_INT] = "INT", [ATTR_FLOAT] = "FLOAT", [ATTR_STRING] = "STRING", [ATTR_INTS] = "INTS",
		[ATTR_FLOATS] = "FLOATS", [ATTR_STRINGS] = "STRINGS", [ATTR_TENSOR] = "TENSOR",
		[ATTR_GRAPH] = "GRAPH",
	};
	return names[k];
}

/* ---- small helpers ---- */

void onnx_node_error(onnx_ctx *L, const ir_node *n, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (L->node_unnamed && L->node_out0)
		diag_node(L->D, n, "%s (the node has no name; its first output is '%s')", msg, L->node_out0);
	else
		diag_node(L->D, n, "%s", msg);
}

const char *onnx_fresh_name(onnx_ctx *L, const char *base)
{
	for (;;) {
		const char *s = arena_printf(L->A, "%%%s.%d", base, L->fresh++);
		if (!onnx_map_get(&L->values, s))
			return s;
	}
}

ir_value *onnx_const_i64(onnx_ctx *L, const char *base, int n, const int64_t *v)
{
	ir_value *c = ir_const_i64(L->g, onnx_fresh_name(L, base), n, v);
	onnx_map_put(L->A, &L->values, c->name, c);
	return c;
}

ir_value *onnx_const_f32_scalar(onnx_ctx *L, const char *base, float v)
{
	ir_value *c = ir_const_f32_scalar(L->g, onnx_fresh_name(L, base), v);
	onnx_map_put(L->A, &L->values, c->name, c);
	return c;
}

static void attr_remove(ir_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0) {
			memmove(&n->attrs[i], &n->attrs[i + 1], (size_t)(n->nattrs - i - 1) * sizeof *n->attrs);
			n->nattrs--;
			return;
		}
}

/* Sets input k, growing the input array with NULL (omitted) entries. */
static void set_input(ir_node *n, int k, ir_value *v)
{
	if (k >= n->nin) {
		ir_value **in = arena_array(n->graph->A, (size_t)k + 1, sizeof *in);
		memcpy(in, n->in, (size_t)n->nin * sizeof *in);
		n->in = in;
		n->nin = k + 1;
	}
	n->in[k] = v;
}

/* ---- attributes: AttributeProto -> ir_attr ---- */

static int proto_attr_type(const Onnx__AttributeProto *a)
{
	if (a->has_type)
		return (int)a->type;
	/* Files from before AttributeProto.type existed: the filled field says. */
	if (a->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	if (a->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	if (a->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	if (a->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	if (a->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
	if (a->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
	if (a->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	if (a->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
	return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static int kind_of_type(int t)
{
	switch (t) {
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return ATTR_FLOAT;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return ATTR_INT;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return ATTR_STRING;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return ATTR_TENSOR;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return ATTR_FLOATS;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return ATTR_INTS;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return ATTR_STRINGS;
	case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return ATTR_GRAPH;
	default: return -1;
	}
}

/* The spec of attribute `name` of op at opset: a row of attr_specs, or of
 * the op's elem.def row (every opset; filled into *buf). */
static const attr_spec *find_spec(int op, const char *name, int opset, int *other_opset, attr_spec *buf)
{
	*other_opset = 0;
	for (size_t i = 0; i < COUNTOF(attr_specs); i++) {
		const attr_spec *s = &attr_specs[i];
		if (s->op != op || strcmp(s->name, name) != 0)
			continue;
		if ((s->since && opset < s->since) || (s->until && opset > s->until)) {
			*other_opset = 1;
			continue;
		}
		return s;
	}
	const elem_attr *e = op < OP_COUNT ? elem_attr_of((ir_op)op, name) : NULL;
	if (e) {
		*buf = (attr_spec){op, e->name, e->kind, 0, 0, NULL};
		return buf;
	}
	return NULL;
}

static ir_value *attr_tensor(onnx_ctx *L, ir_node *n, const char *aname, const Onnx__TensorProto *t)
{
	char err[400];
	onnx_tensor ot;
	if (onnx_tensor_decode(L->A, L->dir, t, &ot, err, sizeof err) != 0) {
		onnx_node_error(L, n, "tensor attribute '%s' %s", aname, err);
		return NULL;
	}
	ir_value *v = arena_alloc(L->A, sizeof *v);
	v->name = arena_printf(L->A, "%%%s.%s", n->name, aname);
	v->kind = VAL_CONST;
	v->dtype = ot.dtype;
	v->shape = ot.shape;
	v->data = ot.data;
	v->narrow = ot.narrow;
	v->graph = L->g;
	v->slot = -1;
	v->id = -1;
	return v;
}

/* protobuf bytes -> C string (an empty field has no data pointer). */
static const char *bytes_str(arena *A, const ProtobufCBinaryData *b)
{
	return b->data ? arena_strndup(A, (const char *)b->data, b->len) : "";
}

/* Whether attribute a has a name the node has not used yet and names no
 * function attribute; 1 after reporting. */
static int attr_misnamed(onnx_ctx *L, ir_node *n, const Onnx__AttributeProto *a)
{
	const char *name = a->name;
	if (!name || !*name) {
		onnx_node_error(L, n, "has an attribute without a name");
		return 1;
	}
	if (ir_attr_find(n, name)) {
		onnx_node_error(L, n, "has attribute '%s' twice", name);
		return 1;
	}
	if (a->ref_attr_name && *a->ref_attr_name) {
		onnx_node_error(L, n, "attribute '%s' refers to a function attribute ('%s'), which only "
				"functions may do", name, a->ref_attr_name);
		return 1;
	}
	return 0;
}

/* The ir_attrkind of attribute a of op at the model's opset, checked against
 * attr_specs (or elem.def): -1 after reporting. */
static int attr_kind(onnx_ctx *L, ir_node *n, int op, const Onnx__AttributeProto *a)
{
	const char *name = a->name;
	int other;
	attr_spec buf;
	const attr_spec *s = find_spec(op, name, L->opset, &other, &buf);
	if (!s) {
		if (other)
			onnx_node_error(L, n, "attribute '%s' is not part of %s at opset %d", name, n->op_type, n->opset);
		else
			onnx_node_error(L, n, "unknown attribute '%s' for %s", name, n->op_type);
		return -1;
	}
	int type = proto_attr_type(a);
	int kind = kind_of_type(type);
	if (type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED &&
	    (s->kind == ATTR_INTS || s->kind == ATTR_FLOATS || s->kind == ATTR_STRINGS))
		kind = (int)s->kind;    /* an empty list written without a type */
	if (s->unsupported) {
		onnx_node_error(L, n, "attribute '%s' is not supported: %s", name, s->unsupported);
		return -1;
	}
	if (kind != (int)s->kind) {
		onnx_node_error(L, n, "attribute '%s' must be of type %s, not %s", name, kind_name(s->kind),
				attr_type_name(type));
		return -1;
	}
	if (kind == ATTR_TENSOR && !a->t) {
		onnx_node_error(L, n, "attribute '%s' of type TENSOR has no tensor", name);
		return -1;
	}
	if (kind == ATTR_GRAPH && !a->g) {
		onnx_node_error(L, n, "attribute '%s' of type GRAPH has no graph", name);
		return -1;
	}
	return kind;
}

/* Converts and type-checks one attribute.  0 ok, 1 error (reported).  The
 * checks, then one case per attribute kind: a table. */
static int load_attr(onnx_ctx *L, ir_node *n, int op, const Onnx__AttributeProto *a)
{
	const char *name = a->name;
	if (attr_misnamed(L, n, a))
		return 1;
	if (op == OP_OPTIONAL && strcmp(name, "type") == 0 &&
	    proto_attr_type(a) == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO)
		return 0;       /* the type of an empty optional: it yields no tensors */
	int kind = attr_kind(L, n, op, a);
	if (kind < 0)
		return 1;
	ir_attr *r;
	switch (kind) {
	case ATTR_INT: ir_attr_set_int(n, name, a->i); break;
	case ATTR_FLOAT: ir_attr_set_float(n, name, a->f); break;
	case ATTR_STRING:
		ir_attr_add(n, name, ATTR_STRING)->s = bytes_str(L->A, &a->s);
		break;
	case ATTR_INTS:
		if (a->n_ints > 1 << 20) {
			onnx_node_error(L, n, "attribute '%s' has %zu values", name, a->n_ints);
			return 1;
		}
		ir_attr_set_ints(n, name, (int)a->n_ints, a->ints);
		break;
	case ATTR_FLOATS:
		if (a->n_floats > 1 << 20) {
			onnx_node_error(L, n, "attribute '%s' has %zu values", name, a->n_floats);
			return 1;
		}
		r = ir_attr_add(n, name, ATTR_FLOATS);
		r->n = (int)a->n_floats;
		r->floats = arena_array(L->A, a->n_floats ? a->n_floats : 1, sizeof *r->floats);
		if (a->n_floats)
			memcpy(r->floats, a->floats, a->n_floats * sizeof *r->floats);
		break;
	case ATTR_STRINGS:
		if (a->n_strings > 1 << 20) {
			onnx_node_error(L, n, "attribute '%s' has %zu values", name, a->n_strings);
			return 1;
		}
		r = ir_attr_add(n, name, ATTR_STRINGS);
		r->n = (int)a->n_strings;
		r->strings = arena_array(L->A, a->n_strings ? a->n_strings : 1, sizeof *r->strings);
		for (size_t k = 0; k < a->n_strings; k++)
			r->strings[k] = bytes_str(L->A, &a->strings[k]);
		break;
	case ATTR_TENSOR: {
		ir_value *v = attr_tensor(L, n, name, a->t);
		if (!v)
			return 1;
		ir_attr_add(n, name, ATTR_TENSOR)->t = v;
		break;
	}
	case ATTR_GRAPH:
		if (op == OP_IF) {
			/* a branch: an attribute, inlined by lower_seq.c once the condition folds */
			ir_graph *br = onnx_load_body(L, n, a->g);
			if (!br)
				return 1;
			br->name = arena_printf(L->A, "%s.%s", n->name, name);
			ir_attr_add(n, name, ATTR_GRAPH)->g = br;
			break;
		}
		/* the one body of Loop/Scan (lower_loop.c); kept as n->body, not as an attribute */
		n->body = onnx_load_body(L, n, a->g);
		if (!n->body)
			return 1;
		break;
	default: UNREACHABLE();
	}
	return 0;
}

/* ---- opset normalisation: older operator forms -> the ops.def form ---- */

/* Moves INTS attribute `name` to constant input k (when present). */
static void ints_to_input(onnx_ctx *L, ir_node *n, const char *name, int k)
{
	ir_attr *a = ir_attr_find(n, name);
	if (!a)
		return;
	set_input(n, k, onnx_const_i64(L, arena_printf(L->A, "%s.%s", n->name, name), a->n, a->ints));
	attr_remove(n, name);
}

static int norm_axes(onnx_ctx *L, ir_node *n)
{
	if (n->op == OP_UNSQUEEZE && !ir_attr_find(n, "axes")) {
		onnx_node_error(L, n, "attribute 'axes' is required at opset %d", n->opset);
		return 1;
	}
	ints_to_input(L, n, "axes", 1);
	return 0;
}

static int norm_split(onnx_ctx *L, ir_node *n)
{
	ints_to_input(L, n, "split", 1);
	return 0;
}

static int norm_reshape(onnx_ctx *L, ir_node *n)
{
	if (!ir_attr_find(n, "shape")) {
		onnx_node_error(L, n, "attribute 'shape' is required at opset %d", n->opset);
		return 1;
	}
	ints_to_input(L, n, "shape", 1);
	return 0;
}

static int norm_slice(onnx_ctx *L, ir_node *n)
{
	int errs = 0;
	for (int k = 0; k < 2; k++)
		if (!ir_attr_find(n, k ? "ends" : "starts")) {
			onnx_node_error(L, n, "attribute '%s' is required at opset %d", k ? "ends" : "starts", n->opset);
			errs++;
		}
	if (errs)
		return errs;
	ints_to_input(L, n, "starts", 1);
	ints_to_input(L, n, "ends", 2);
	ints_to_input(L, n, "axes", 3);
	return 0;
}

static int norm_clip(onnx_ctx *L, ir_node *n)
{
	/* Clip-6 defaults (+-FLT_MAX) clip nothing: an absent bound is an
	 * omitted input. */
	for (int k = 1; k <= 2; k++) {
		const char *name = k == 1 ? "min" : "max";
		ir_attr *a = ir_attr_find(n, name);
		if (!a)
			continue;
		set_input(n, k, onnx_const_f32_scalar(L, arena_printf(L->A, "%s.%s", n->name, name), a->f));
		attr_remove(n, name);
	}
	return 0;
}

static int norm_cast(onnx_ctx *L, ir_node *n)
{
	const char *to = ir_attr_string(n, "to", NULL);
	if (!to)
		return 0;       /* reported missing by check_cast */
	for (int t = 1; t < DT_COUNT_; t++)
		if (strcasecmp(onnx_dtype_name(t), to) == 0) {
			ir_attr_set_int(n, "to", t);
			return 0;
		}
	onnx_node_error(L, n, "attribute 'to' names an unknown type '%s'", to);
	return 1;
}

static int norm_drop_legacy(onnx_ctx *L, ir_node *n)
{
	/* Gemm-6 `broadcast` only allowed what Gemm-7+ always allows;
	 * RNN-1 `output_sequence` is implied by which outputs are named. */
	(void)L;
	attr_remove(n, "broadcast");
	attr_remove(n, "output_sequence");
	return 0;
}

static int norm_concat(onnx_ctx *L, ir_node *n)
{
	(void)L;
	if (!ir_attr_find(n, "axis"))
		ir_attr_set_int(n, "axis", 1);  /* Concat-1 default */
	return 0;
}

/* Scan-8: input 0 is the optional sequence_lens (unsupported); the rest
 * follow.  Without it the inputs are those of Scan-9 with a batch axis 0
 * (lower_loop.c handles that form by the node's opset). */
static int norm_scan8(onnx_ctx *L, ir_node *n)
{
	if (n->nin > 0 && n->in[0]) {
		onnx_node_error(L, n, "Scan-8 sequence_lens is not supported (give it as an empty input name)");
		return 1;
	}
	if (n->nin > 0) {
		n->in++;
		n->nin--;
	}
	return 0;
}

static int norm_softmax_axis(onnx_ctx *L, ir_node *n)
{
	if (!ir_attr_find(n, "axis"))
		ir_attr_set_int(n, "axis", L->opset < 13 ? 1 : -1);
	return 0;
}

/* Reductions: the axes attribute of the older opsets becomes input 1. */
static int norm_reduce(onnx_ctx *L, ir_node *n)
{
	ints_to_input(L, n, "axes", 1);
	return 0;
}

/* Pad-2 (pads and value attributes; Pad-1 spelled pads `paddings`) -> Pad-11
 * inputs.  Those opsets only padded float tensors. */
static int norm_pad(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "paddings");
	if (a) {
		ir_attr_set_ints(n, "pads", a->n, a->ints);
		attr_remove(n, "paddings");
	}
	if (!ir_attr_find(n, "pads")) {
		onnx_node_error(L, n, "attribute 'pads' is required at opset %d", n->opset);
		return 1;
	}
	ints_to_input(L, n, "pads", 1);
	a = ir_attr_find(n, "value");
	if (a && a->f != 0.0f) {
		set_input(n, 2, onnx_const_f32_scalar(L, arena_printf(L->A, "%s.value", n->name), a->f));
	}
	attr_remove(n, "value");
	return 0;
}

/* TopK-1: k as an attribute becomes the K input. */
static int norm_topk(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "k");
	if (!a) {
		onnx_node_error(L, n, "attribute 'k' is required at opset %d", n->opset);
		return 1;
	}
	int64_t k = a->i;
	set_input(n, 1, onnx_const_i64(L, arena_printf(L->A, "%s.k", n->name), 1, &k));
	attr_remove(n, "k");
	return 0;
}

/* Resize-10 and Upsample-7/9 (X, scales; Upsample-7: scales an attribute)
 * -> the Resize-11 form X, roi (omitted), scales.  Those versions map output
 * coordinates back as x / scale (asymmetric) and, for nearest, take the
 * input element at or below (floor); infer_shape.c refuses a nearest
 * downscale there, whose rounding those versions leave undefined. */
static int norm_resize10(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "scales");
	if (a) {
		ir_shape s = {.rank = 1, .d = {ir_dim_const(a->n)}};
		ir_value *c = ir_const_new(L->g, onnx_fresh_name(L, arena_printf(L->A, "%s.scales", n->name)), DT_F32,
					   &s, a->floats);
		onnx_map_put(L->A, &L->values, c->name, c);
		set_input(n, 2, c);
		attr_remove(n, "scales");
	} else if (n->opset < 9) {
		onnx_node_error(L, n, "attribute 'scales' is required at opset %d", n->opset);
		return 1;
	} else if (n->nin >= 2) {
		set_input(n, 2, n->in[1]);
		n->in[1] = NULL;
	}
	ir_attr_set_string(n, "coordinate_transformation_mode", "asymmetric");
	ir_attr_set_string(n, "nearest_mode", "floor");
	return 0;
}

/* RoiAlign-10 had no coordinate_transformation_mode: it computed what opset
 * 16 calls output_half_pixel. */
static int norm_roialign(onnx_ctx *L, ir_node *n)
{
	(void)L;
	ir_attr_set_string(n, "coordinate_transformation_mode", "output_half_pixel");
	return 0;
}

/* Gradient (ai.onnx.preview.training) names its y by an attribute; the IR
 * node reads it as its last input, so that the dependence orders the nodes
 * (no pass may place the Gradient before what computes y) and y stays
 * alive and followed through renames. */
static int norm_gradient(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "y");
	if (!a || a->kind != ATTR_STRING || !a->s) {
		onnx_node_error(L, n, "Gradient needs the attribute y (the name of the tensor to differentiate)");
		return 1;
	}
	ir_value *y = onnx_map_get(&L->values, a->s);
	if (!y) {
		onnx_node_error(L, n, "Gradient: y '%s' is not computed by a node before this one (the node "
				"must follow the computation of y)", a->s);
		return 1;
	}
	ir_value **in = arena_array(L->A, (size_t)n->nin + 1, sizeof *in);
	memcpy(in, n->in, (size_t)n->nin * sizeof *in);
	in[n->nin] = y;
	n->in = in;
	n->nin++;
	return 0;
}

typedef int (*norm_fn)(onnx_ctx *L, ir_node *n);

enum { ALL_OPSETS = 1 << 30 };

static const struct {
	ir_op op;
	int until;              /* applies to opsets <= until */
	norm_fn fn;
} normalisers[] = {
	{OP_SQUEEZE, 12, norm_axes},      {OP_UNSQUEEZE, 12, norm_axes},
	{OP_SPLIT, 12, norm_split},       {OP_SLICE, 9, norm_slice},
	{OP_RESHAPE, 4, norm_reshape},    {OP_CLIP, 10, norm_clip},
	{OP_CAST, 5, norm_cast},          {OP_GEMM, 6, norm_drop_legacy},
	{OP_LSTM, 6, norm_drop_legacy},   {OP_GRU, 6, norm_drop_legacy},
	{OP_RNN, 6, norm_drop_legacy},    {OP_CONCAT, 3, norm_concat},
	{OP_SOFTMAX, ALL_OPSETS, norm_softmax_axis}, {OP_LOGSOFTMAX, ALL_OPSETS, norm_softmax_axis},
	{OP_SCAN, 8, norm_scan8},
	{OP_REDUCESUM, 12, norm_reduce},  {OP_REDUCEMEAN, 17, norm_reduce},
	{OP_REDUCEMAX, 17, norm_reduce},  {OP_REDUCEMIN, 17, norm_reduce},
	{OP_REDUCEPROD, 17, norm_reduce}, {OP_REDUCEL1, 17, norm_reduce},
	{OP_REDUCEL2, 17, norm_reduce},   {OP_REDUCELOGSUM, 17, norm_reduce},
	{OP_REDUCELOGSUMEXP, 17, norm_reduce}, {OP_REDUCESUMSQUARE, 17, norm_reduce},
	{OP_PAD, 10, norm_pad},           {OP_TOPK, 9, norm_topk},
	{OP_RESIZE, 10, norm_resize10},   {OP_ROIALIGN, 15, norm_roialign},
	{OP_GRADIENT, ALL_OPSETS, norm_gradient},
};

/* ---- arity ---- */

static int check_arity(onnx_ctx *L, ir_node *n)
{
	const ir_opinfo *oi = &ir_ops[n->op];
	int errs = 0;
	if (n->nin > oi->max_in) {
		onnx_node_error(L, n, "has %d inputs; %s takes at most %d", n->nin, n->op_type, oi->max_in);
		errs++;
	}
	for (int k = 0; k < oi->min_in; k++)
		if (k >= n->nin || !n->in[k]) {
			onnx_node_error(L, n, "required input %d is missing (%s takes %d to %d inputs)", k, n->op_type,
					oi->min_in, oi->max_in);
			errs++;
			break;
		}
	if (n->nout > oi->max_out) {
		onnx_node_error(L, n, "has %d outputs; %s has at most %d", n->nout, n->op_type, oi->max_out);
		errs++;
	}
	for (int k = 0; k < oi->min_out; k++)
		if (k >= n->nout || !n->out[k]) {
			onnx_node_error(L, n, "required output %d is missing", k);
			errs++;
			break;
		}
	return errs;
}

/* ---- names ---- */

static int check_name(onnx_ctx *L, ir_node *n, const char *what, const char *name)
{
	if (strchr(name, '%')) {
		onnx_node_error(L, n, "%s name '%s' contains '%%', which cellc reserves for names it makes up", what, name);
		return 1;
	}
	return 0;
}

/* Trailing "" entries are omitted optional ones: drop them. */
static int trimmed(char *const *names, size_t n)
{
	while (n > 0 && (!names[n - 1] || !*names[n - 1]))
		n--;
	return (int)n;
}

/* Defines the node's outputs as values (also after errors, so that later
 * nodes do not report them missing).  Returns the number of errors. */
static int define_outputs(onnx_ctx *L, ir_node *n, const Onnx__NodeProto *np, int nout, int store)
{
	int errs = 0;
	for (int k = 0; k < nout; k++) {
		const char *name = np->output[k];
		if (!name || !*name)
			continue;
		if (check_name(L, n, "output", name)) {
			errs++;
			continue;
		}
		ir_value *old = onnx_map_get(&L->values, name);
		if (old) {
			onnx_node_error(L, n, "output '%s' is already defined (by %s)", name,
					old->kind == VAL_WEIGHT ? "an initializer"
					: old->kind == VAL_INPUT ? "a graph input"
					: old->producer ? old->producer->name : "another node");
			errs++;
			continue;
		}
		/* a body's value named like one of the main graph's keeps the
		 * file's name as its origin and takes a fresh one */
		const char *vname = name;
		if (L->g->parent && (onnx_map_get(&L->outer_names, name) || onnx_map_get(&L->body_names, name)))
			vname = onnx_fresh_name(L, name);
		ir_value *v = ir_value_new(L->g, vname, VAL_TEMP, DT_UNDEF);
		if (vname != name)
			v->origin = arena_strdup(L->A, name);
		if (L->g->parent)
			onnx_map_put(L->A, &L->body_names, v->name, (void *)v->name);
		onnx_map_put(L->A, &L->values, vname == name ? v->name : arena_strdup(L->A, name), v);
		if (store)
			n->out[k] = v;
	}
	return errs;
}

/* ---- Constant ---- */

static void load_constant(onnx_ctx *L, ir_node *n, const Onnx__NodeProto *np)
{
	int errs = 0;
	for (size_t k = 0; k < np->n_attribute; k++)
		errs += load_attr(L, n, OP_CONSTANT, np->attribute[k]);
	if (trimmed(np->input, np->n_input) != 0) {
		onnx_node_error(L, n, "Constant takes no inputs");
		errs++;
	}
	if (np->n_output != 1 || !np->output[0] || !*np->output[0]) {
		onnx_node_error(L, n, "Constant has exactly one output");
		errs++;
	}
	if (!errs && n->nattrs != 1) {
		onnx_node_error(L, n, "Constant needs exactly one value attribute, not %d", n->nattrs);
		errs++;
	}
	if (errs) {
		define_outputs(L, n, np, trimmed(np->output, np->n_output), 0);
		return;
	}
	if (define_outputs(L, n, np, 1, 0))
		return;
	ir_value *v = onnx_map_get(&L->values, np->output[0]);
	ir_attr *a = &n->attrs[0];
	v->kind = VAL_CONST;
	v->shape.rank = a->kind == ATTR_INTS || a->kind == ATTR_FLOATS ? 1 : 0;
	v->shape.d[0] = ir_dim_const(a->n);
	switch (a->kind) {
	case ATTR_TENSOR:
		v->dtype = a->t->dtype;
		v->shape = a->t->shape;
		v->data = a->t->data;
		break;
	case ATTR_FLOAT: case ATTR_FLOATS:
		v->dtype = DT_F32;
		v->data = arena_array(L->A, (size_t)(a->n ? a->n : 1), sizeof(float));
		if (a->kind == ATTR_FLOAT)
			*(float *)v->data = a->f;
		else if (a->n)
			memcpy(v->data, a->floats, (size_t)a->n * sizeof(float));
		break;
	case ATTR_INT: case ATTR_INTS:
		v->dtype = DT_I64;
		v->data = arena_array(L->A, (size_t)(a->n ? a->n : 1), sizeof(int64_t));
		if (a->kind == ATTR_INT)
			*(int64_t *)v->data = a->i;
		else if (a->n)
			memcpy(v->data, a->ints, (size_t)a->n * sizeof(int64_t));
		break;
	default: UNREACHABLE();
	}
	v->origin = n->name;
}

/* ---- Softmax/LogSoftmax before opset 13 ---- */

/* Y = reshape(softmax(flatten(X, axis), axis=-1), shape(X)): the old
 * operators computed over all axes from `axis` on, as one 2-D row. */
static void append_old_softmax(onnx_ctx *L, ir_node *n)
{
	ir_graph *g = L->g;
	ir_value *X = n->in[0], *Y = n->out[0];
	ir_node *shp = ir_node_new(g, OP_SHAPE, arena_printf(L->A, "%s/shape", n->name), 1, 1);
	ir_node *flat = ir_node_new(g, OP_FLATTEN, arena_printf(L->A, "%s/flatten", n->name), 1, 1);
	ir_node *back = ir_node_new(g, OP_RESHAPE, arena_printf(L->A, "%s/reshape", n->name), 2, 1);
	ir_node *made[] = {shp, flat, back};
	for (size_t k = 0; k < COUNTOF(made); k++) {
		made[k]->opset = n->opset;
		made[k]->origin = n->name;
	}
	shp->in[0] = X;
	shp->out[0] = ir_value_new(g, onnx_fresh_name(L, "shape"), VAL_TEMP, DT_I64);
	flat->in[0] = X;
	ir_attr_set_int(flat, "axis", ir_attr_int(n, "axis", 1));
	flat->out[0] = ir_value_new(g, onnx_fresh_name(L, "flat"), VAL_TEMP, X->dtype);
	n->in[0] = flat->out[0];
	ir_attr_set_int(n, "axis", -1);
	if (Y) {
		n->out[0] = ir_value_new(g, onnx_fresh_name(L, "soft"), VAL_TEMP, DT_UNDEF);
		back->in[0] = n->out[0];
		back->in[1] = shp->out[0];
		back->out[0] = Y;
	}
	ir_append(g, shp);
	ir_append(g, flat);
	ir_append(g, n);
	if (Y)
		ir_append(g, back);
}

/* ---- the node ---- */

/* Operators of other domains that cellc implements, with the domain version
 * whose form ops.def follows. */
static const struct {
	const char *domain, *op_type;
	int version;
	ir_op op;
} domain_ops[] = {
	{"ai.onnx.preview.training", "Momentum", 1, OP_MOMENTUM},
	{"ai.onnx.preview.training", "Adam", 1, OP_ADAM},
	{"ai.onnx.preview.training", "Adagrad", 1, OP_ADAGRAD},
	/* an LSTM on 8-bit weights: rewritten at load (onnx_contrib.c) */
	{"com.microsoft", "DynamicQuantizeLSTM", 1, OP_LSTM},
	/* a quantized MatMul fused by ONNX Runtime's optimiser: the standard
	 * operators again (onnx_contrib.c) around a MatMulInteger */
	{"com.microsoft", "MatMulIntegerToFloat", 1, OP_MATMULINTEGER},
	{"com.microsoft", "DynamicQuantizeMatMul", 1, OP_MATMULINTEGER},
};

static int domain_op(const char *domain, const char *op_type, int *version)
{
	for (size_t k = 0; k < COUNTOF(domain_ops); k++)
		if (strcmp(domain_ops[k].domain, domain) == 0 && strcmp(domain_ops[k].op_type, op_type) == 0) {
			*version = domain_ops[k].version;
			return (int)domain_ops[k].op;
		}
	return -1;
}

/* The operator op_type of domain loads as: an ir_op, OP_CONSTANT, or -1
 * (unsupported); *version receives the version of a domain's own operator
 * (domain_ops), *old_scatter whether it is the deprecated Scatter. */
static int node_op(onnx_ctx *L, const char *op_type, const char *domain, int default_domain, int *version,
		   int *old_scatter)
{
	int op = default_domain ? ir_op_lookup(op_type) : domain_op(domain, op_type, version);
	if (default_domain && strcmp(op_type, "Constant") == 0)
		op = OP_CONSTANT;
	/* Scatter (opsets 9 and 10) is ScatterElements without reduction under
	 * its old name; opset 11 deprecated it */
	*old_scatter = default_domain && strcmp(op_type, "Scatter") == 0;
	if (*old_scatter)
		op = L->opset <= 10 ? OP_SCATTERELEMENTS : -1;
	if (default_domain && strcmp(op_type, "Upsample") == 0)
		op = OP_RESIZE;         /* the deprecated form; norm_resize10 rewrites it */
	if (default_domain && op >= 0) {
		for (size_t k = 0; k < COUNTOF(domain_ops); k++)
			if ((int)domain_ops[k].op == op && strcmp(domain_ops[k].op_type, op_type) == 0)
				op = -1;        /* Momentum etc. exist only in their domain */
	}
	if (op == OP_RECURRENCE || op == OP_ODEBLOCK || op == OP_ODERNN)
		op = -1;        /* native only */
	return op;
}

/* A node of another domain: its opset is the model's import of the domain,
 * which must be the version cellc follows; a model-local function, or a
 * domain or operator cellc lacks, is refused.  1 after reporting. */
static int domain_refused(onnx_ctx *L, ir_node *n, const char *domain, const char *op_type, int op, int version)
{
	const Onnx__ModelProto *m = L->model;
	n->opset = 0;   /* none imported */
	for (size_t k = 0; k < m->n_opset_import; k++)
		if (m->opset_import[k]->domain && strcmp(m->opset_import[k]->domain, domain) == 0)
			n->opset = (int)m->opset_import[k]->version;
	for (size_t k = 0; k < m->n_functions; k++) {
		const Onnx__FunctionProto *f = m->functions[k];
		if (f->name && f->domain && strcmp(f->name, op_type) == 0 && strcmp(f->domain, domain) == 0) {
			onnx_node_error(L, n, "calls the model-local function '%s.%s'; cellc does not "
					"support ONNX functions", domain, op_type);
			return 1;
		}
	}
	if (op < 0) {
		onnx_node_error(L, n, "operator domain '%s' is not supported (cellc supports the default "
				"ONNX domain, Momentum, Adam and Adagrad of ai.onnx.preview.training, and "
				"DynamicQuantizeLSTM of com.microsoft)", domain);
		return 1;
	}
	if (n->opset != version) {
		if (n->opset)
			onnx_node_error(L, n, "%s.%s is supported in %s version %d, not version %d", domain,
					op_type, domain, version, n->opset);
		else
			onnx_node_error(L, n, "uses domain %s, which the model does not import", domain);
		return 1;
	}
	return 0;
}

/* A node of no operator cellc loads: no op_type, the deprecated Scatter, an
 * unknown operator.  1 after reporting. */
static int op_refused(onnx_ctx *L, ir_node *n, const char *op_type, int op, int old_scatter)
{
	if (!*op_type) {
		onnx_node_error(L, n, "has no op_type");
		return 1;
	}
	if (op < 0 && old_scatter) {
		onnx_node_error(L, n, "Scatter is deprecated since opset 11 (the model's opset is %d); use "
				"ScatterElements", L->opset);
		return 1;
	}
	if (op < 0) {
		onnx_node_error(L, n, "unsupported operator %s", op_type);
		return 1;
	}
	return 0;
}

/* The node's inputs from the values defined so far; the number of errors. */
static int link_inputs(onnx_ctx *L, ir_node *n, const Onnx__NodeProto *np, int nin)
{
	int errs = 0;
	for (int k = 0; k < nin; k++) {
		const char *in = np->input[k];
		if (!in || !*in)
			continue;       /* omitted optional input */
		n->in[k] = onnx_map_get(&L->values, in);
		if (!n->in[k]) {
			onnx_node_error(L, n, "input '%s' is not defined by any node, initializer or graph input", in);
			errs++;
		}
	}
	return errs;
}

/* Node n, its inputs, attributes and outputs loaded: rewritten where its
 * operator asks (the com.microsoft operators, the older opsets' forms),
 * checked, and appended to the graph. */
static void append_node(onnx_ctx *L, ir_node *n, const char *op_type, int default_domain)
{
	if (!default_domain && strcmp(op_type, "DynamicQuantizeLSTM") == 0 && onnx_dynquant_lstm(L, n))
		return;
	ir_node *post[4];
	int npost = 0, dqm = !default_domain && strcmp(op_type, "DynamicQuantizeMatMul") == 0;
	if (!default_domain && (dqm || strcmp(op_type, "MatMulIntegerToFloat") == 0) &&
	    onnx_contrib_matmul(L, n, dqm, post, &npost))
		return;
	int errs = 0;
	for (size_t k = 0; k < COUNTOF(normalisers); k++)
		if (normalisers[k].op == n->op && L->opset <= normalisers[k].until)
			errs += normalisers[k].fn(L, n);
	if (errs)
		return;
	errs += check_arity(L, n);
	errs += onnx_check_values(L, n);
	if (errs)
		return;
	if ((n->op == OP_SOFTMAX || n->op == OP_LOGSOFTMAX) && L->opset < 13)
		append_old_softmax(L, n);
	else
		ir_append(L->g, n);
	for (int k = 0; k < npost; k++)
		ir_append(L->g, post[k]);
}

void onnx_load_node(onnx_ctx *L, const Onnx__NodeProto *np)
{
	const char *op_type = np->op_type ? np->op_type : "";
	const char *domain = np->domain ? np->domain : "";
	int nin = trimmed(np->input, np->n_input), nout = trimmed(np->output, np->n_output);
	int default_domain = !*domain || strcmp(domain, "ai.onnx") == 0 ||
			     (strcmp(domain, "ai.onnx.preview.training") == 0 && strcmp(op_type, "Gradient") == 0);

	L->node_unnamed = !np->name || !*np->name;
	L->node_out0 = np->n_output && np->output[0] && *np->output[0] ? np->output[0] : NULL;
	const char *name = L->node_unnamed ? arena_printf(L->A, "%s_%d", *op_type ? op_type : "node", L->node_index)
					   : np->name;
	int version = 0, old_scatter;
	int op = node_op(L, op_type, domain, default_domain, &version, &old_scatter);
	/* A node of an unsupported operator still needs a node to be named in
	 * the error: a bare one that never enters the graph. */
	ir_node *n = ir_node_new(L->g, op >= 0 && op < OP_COUNT ? (ir_op)op : OP_IDENTITY, name, nin, nout);
	n->op_type = arena_strdup(L->A, op_type);
	n->domain = default_domain ? "" : arena_strdup(L->A, domain);
	n->opset = L->opset;
	n->origin = n->name;
	if ((!default_domain && domain_refused(L, n, domain, op_type, op, version)) ||
	    op_refused(L, n, op_type, op, old_scatter)) {
		define_outputs(L, n, np, nout, 0);
		return;
	}
	if (op == OP_CONSTANT) {
		load_constant(L, n, np);
		return;
	}
	int errs = link_inputs(L, n, np, nin);
	for (size_t k = 0; k < np->n_attribute; k++)
		errs += load_attr(L, n, op, np->attribute[k]);
	errs += define_outputs(L, n, np, nout, 1);
	if (!errs)
		append_node(L, n, op_type, default_domain);
}
