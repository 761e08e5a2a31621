/* onnx_node_check.c: the attribute values of one loaded ONNX node, checked
 * per operator for onnx_load_node (onnx_node.c) once its attributes are read
 * and normalised to the ops.def form: values cellc cannot honour (direction
 * "sideways", an unknown activation, a Transpose perm that is not a
 * permutation, a missing required attribute...) are errors naming the node.
 */
#include "elem.h"
#include "onnx_priv.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- attribute values ---- */

static int check_bool(onnx_ctx *L, ir_node *n, const char *name)
{
	ir_attr *a = ir_attr_find(n, name);
	if (a && a->i != 0 && a->i != 1) {
		onnx_node_error(L, n, "attribute '%s' must be 0 or 1, not %lld", name, (long long)a->i);
		return 1;
	}
	return 0;
}

static const char *const activation_names[] = {
	"Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
	"HardSigmoid", "Elu", "Softsign", "Softplus",
};

static int check_rnn(onnx_ctx *L, ir_node *n)
{
	int errs = 0, ndir = 1;
	const char *dir = ir_attr_string(n, "direction", "forward");
	if (strcmp(dir, "bidirectional") == 0)
		ndir = 2;
	else if (strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0) {
		onnx_node_error(L, n, "attribute 'direction' must be forward, reverse or bidirectional, not '%s'", dir);
		errs++;
	}
	errs += check_bool(L, n, "layout");
	errs += check_bool(L, n, "input_forget");
	errs += check_bool(L, n, "linear_before_reset");
	ir_attr *a = ir_attr_find(n, "hidden_size");
	if (a && a->i <= 0) {
		onnx_node_error(L, n, "attribute 'hidden_size' must be positive, not %lld", (long long)a->i);
		errs++;
	} else if (!a) {
		/* Optional in the specification: R is [D, G, H]. */
		ir_value *R = n->nin > 2 ? n->in[2] : NULL;
		if (R && R->data && R->shape.rank == 3 && ir_dim_is_const(R->shape.d[2]) && R->shape.d[2].k > 0) {
			ir_attr_set_int(n, "hidden_size", R->shape.d[2].k);
		} else {
			onnx_node_error(L, n, "attribute 'hidden_size' is missing and R is not an initializer to take it from");
			errs++;
		}
	}
	a = ir_attr_find(n, "clip");
	if (a && !(a->f > 0 && isfinite(a->f))) {
		onnx_node_error(L, n, "attribute 'clip' must be a positive number, not %g", (double)a->f);
		errs++;
	}
	a = ir_attr_find(n, "activations");
	if (a) {
		int per = n->op == OP_LSTM ? 3 : n->op == OP_GRU ? 2 : 1;
		if (a->n != per * ndir) {
			onnx_node_error(L, n, "attribute 'activations' has %d names; %s %s needs %d", a->n, dir,
					n->op_type, per * ndir);
			errs++;
		}
		for (int k = 0; k < a->n; k++) {
			size_t j = 0;
			while (j < COUNTOF(activation_names) && strcasecmp(activation_names[j], a->strings[k]) != 0)
				j++;
			if (j == COUNTOF(activation_names)) {
				onnx_node_error(L, n, "activation '%s' is not supported (supported: Relu Tanh Sigmoid "
						"Affine LeakyRelu ThresholdedRelu ScaledTanh HardSigmoid Elu Softsign "
						"Softplus)", a->strings[k]);
				errs++;
			} else {
				a->strings[k] = activation_names[j];
			}
		}
	}
	return errs;
}

static int check_gemm(onnx_ctx *L, ir_node *n)
{
	return check_bool(L, n, "transA") + check_bool(L, n, "transB");
}

static int check_transpose(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "perm");
	if (!a)
		return 0;
	int seen[IR_MAX_RANK] = {0};
	if (a->n > IR_MAX_RANK) {
		onnx_node_error(L, n, "attribute 'perm' has %d entries; cellc supports rank %d at most", a->n,
				(int)IR_MAX_RANK);
		return 1;
	}
	for (int k = 0; k < a->n; k++) {
		if (a->ints[k] < 0 || a->ints[k] >= a->n || seen[a->ints[k]]++) {
			onnx_node_error(L, n, "attribute 'perm' is not a permutation of 0..%d", a->n - 1);
			return 1;
		}
	}
	return 0;
}

static int check_cast(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "to");
	if (!a) {
		onnx_node_error(L, n, "attribute 'to' is required");
		return 1;
	}
	if (a->kind != ATTR_INT)
		return 0;       /* a bad type name: reported by norm_cast */
	if (a->i < 0 || a->i > 1000 || (!onnx_dtype_supported((int)a->i) && !onnx_dtype_narrow((int)a->i))) {
		onnx_node_error(L, n, "Cast to %s is not supported", onnx_dtype_name((int)a->i));
		return 1;
	}
	return 0;
}

static int check_reshape(onnx_ctx *L, ir_node *n) { return check_bool(L, n, "allowzero"); }

static int check_constofshape(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "value");
	if (a && ir_shape_const_numel(&a->t->shape) != 1) {
		onnx_node_error(L, n, "attribute 'value' must hold exactly one element");
		return 1;
	}
	return 0;
}

static int check_concat(onnx_ctx *L, ir_node *n)
{
	if (!ir_attr_find(n, "axis")) {
		onnx_node_error(L, n, "attribute 'axis' is required");
		return 1;
	}
	return 0;
}

static int check_split(onnx_ctx *L, ir_node *n)
{
	ir_attr *a = ir_attr_find(n, "num_outputs");
	if (a && (a->i < 1 || a->i != n->nout)) {
		onnx_node_error(L, n, "attribute 'num_outputs' is %lld but the node has %d outputs", (long long)a->i,
				n->nout);
		return 1;
	}
	if (a && n->nin > 1 && n->in[1]) {
		onnx_node_error(L, n, "has both the 'split' input and the 'num_outputs' attribute");
		return 1;
	}
	return 0;
}

static int check_body(onnx_ctx *L, ir_node *n)
{
	if (!n->body) {
		onnx_node_error(L, n, "attribute 'body' is required");
		return 1;
	}
	if (n->op == OP_SCAN && !ir_attr_find(n, "num_scan_inputs")) {
		onnx_node_error(L, n, "attribute 'num_scan_inputs' is required");
		return 1;
	}
	return 0;
}

/* The training optimisers: R, T, then X.., G.. and the states in groups of
 * equal size; as many outputs as tensors after R and T; Momentum's required
 * attributes. */
static int check_optim(onnx_ctx *L, ir_node *n)
{
	int per = n->op == OP_ADAM ? 4 : 3;     /* X, G and 1 or 2 states */
	int ntens = n->nin - 2;
	if (ntens < per || ntens % per) {
		onnx_node_error(L, n, "has %d inputs after R and T; %s needs a multiple of %d (X, G%s per tensor)",
				ntens, n->op_type, per, per == 4 ? ", V, H" : n->op == OP_MOMENTUM ? ", V" : ", H");
		return 1;
	}
	for (int k = 0; k < n->nin; k++)
		if (!n->in[k]) {
			onnx_node_error(L, n, "input %d is omitted; every input of %s is required", k, n->op_type);
			return 1;
		}
	for (int k = 0; k < n->nout; k++)
		if (!n->out[k]) {
			onnx_node_error(L, n, "output %d is omitted; every output of %s is required", k, n->op_type);
			return 1;
		}
	if (n->nout != ntens / per * (per - 1)) {
		onnx_node_error(L, n, "has %d outputs; %d tensors give %d (the new X%s of each)", n->nout, ntens / per,
				ntens / per * (per - 1), per == 4 ? ", V and H" : n->op == OP_MOMENTUM ? " and V" : " and H");
		return 1;
	}
	if (n->op != OP_MOMENTUM)
		return 0;
	static const char *const required[] = {"alpha", "beta", "mode", "norm_coefficient"};
	for (size_t k = 0; k < COUNTOF(required); k++)
		if (!ir_attr_find(n, required[k])) {
			onnx_node_error(L, n, "attribute '%s' is required", required[k]);
			return 1;
		}
	const char *mode = ir_attr_string(n, "mode", "");
	if (strcmp(mode, "standard") != 0 && strcmp(mode, "nesterov") != 0) {
		onnx_node_error(L, n, "attribute 'mode' must be standard or nesterov, not '%s'", mode);
		return 1;
	}
	return 0;
}

static int check_if(onnx_ctx *L, ir_node *n)
{
	int errs = 0;
	static const char *const br[2] = {"then_branch", "else_branch"};
	for (int k = 0; k < 2; k++) {
		ir_attr *a = ir_attr_find(n, br[k]);
		if (!a) {
			onnx_node_error(L, n, "attribute '%s' is required", br[k]);
			errs++;
		} else if (a->g->ninputs || a->g->noutputs != n->nout) {
			onnx_node_error(L, n, "%s has %d inputs and %d outputs; an If with %d outputs needs "
					"branches with no inputs and %d outputs", br[k], a->g->ninputs,
					a->g->noutputs, n->nout, n->nout);
			errs++;
		}
	}
	return errs;
}

/* The 0/1 attributes of reductions, Trilu and CumSum. */
static int check_reduce(onnx_ctx *L, ir_node *n)
{
	return check_bool(L, n, "keepdims") + check_bool(L, n, "noop_with_empty_axes") +
	       check_bool(L, n, "select_last_index") + check_bool(L, n, "upper") + check_bool(L, n, "exclusive") +
	       check_bool(L, n, "reverse");
}

static int check_conv(onnx_ctx *L, ir_node *n)
{
	const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) {
		onnx_node_error(L, n, "attribute 'auto_pad' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, not '%s'", ap);
		return 1;
	}
	if (ir_attr_find(n, "pads") && strcmp(ap, "NOTSET")) {
		onnx_node_error(L, n, "has both 'pads' and auto_pad %s", ap);
		return 1;
	}
	if (ir_attr_int(n, "group", 1) < 1) {
		onnx_node_error(L, n, "attribute 'group' must be positive");
		return 1;
	}
	return 0;
}

static int check_pool(onnx_ctx *L, ir_node *n)
{
	const char *ap = ir_attr_string(n, "auto_pad", "NOTSET");
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID") && strcmp(ap, "SAME_UPPER") && strcmp(ap, "SAME_LOWER")) {
		onnx_node_error(L, n, "attribute 'auto_pad' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, not '%s'", ap);
		return 1;
	}
	if (!ir_attr_find(n, "kernel_shape")) {
		onnx_node_error(L, n, "attribute 'kernel_shape' is required");
		return 1;
	}
	return check_bool(L, n, "storage_order") + check_bool(L, n, "ceil_mode") + check_bool(L, n, "count_include_pad");
}

static int check_norm(onnx_ctx *L, ir_node *n)
{
	int64_t train = n->op == OP_BATCHNORM ? ir_attr_int(n, "training_mode", 0) : 0;   /* 0 or 1: check_bool below */
	if (n->op == OP_BATCHNORM && n->nout > 1 && n->opset < 14) {
		/* before opset 14 the outputs themselves chose training (with
		 * saved statistics whose meaning the specification leaves open) */
		onnx_node_error(L, n, "has %d outputs: the training form of opsets before 14 is not supported "
				"(opset 14's training_mode 1 is)", n->nout);
		return 1;
	}
	if (n->op == OP_BATCHNORM && n->nout > 1 && !train) {
		onnx_node_error(L, n, "has %d outputs; in inference mode (training_mode 0) BatchNormalization has one",
				n->nout);
		return 1;
	}
	if (n->op == OP_BATCHNORM && ir_attr_find(n, "spatial") && ir_attr_int(n, "spatial", 1) != 1) {
		onnx_node_error(L, n, "spatial 0 (per-element statistics) is not supported");
		return 1;
	}
	return n->op == OP_BATCHNORM ? check_bool(L, n, "training_mode") : 0;
}

static int check_hardmax(onnx_ctx *L, ir_node *n)
{
	if (n->opset < 13) {
		onnx_node_error(L, n, "Hardmax before opset 13 (coerced to 2-D) is not supported");
		return 1;
	}
	return 0;
}

static int check_loss(onnx_ctx *L, ir_node *n)
{
	const char *r = ir_attr_string(n, "reduction", "mean");
	if (strcmp(r, "none") && strcmp(r, "sum") && strcmp(r, "mean")) {
		onnx_node_error(L, n, "attribute 'reduction' must be none, sum or mean, not '%s'", r);
		return 1;
	}
	return 0;
}

static int check_misc(onnx_ctx *L, ir_node *n)
{
	const char *s;
	switch (n->op) {
	case OP_BITSHIFT:
		s = ir_attr_string(n, "direction", "");
		if (strcmp(s, "LEFT") && strcmp(s, "RIGHT")) {
			onnx_node_error(L, n, "attribute 'direction' must be LEFT or RIGHT, not '%s'", s);
			return 1;
		}
		return 0;
	case OP_DEPTHTOSPACE: case OP_SPACETODEPTH:
		s = ir_attr_string(n, "mode", "DCR");
		if (ir_attr_int(n, "blocksize", 0) < 1 || (strcmp(s, "DCR") && strcmp(s, "CRD"))) {
			onnx_node_error(L, n, "needs a positive blocksize and mode DCR or CRD");
			return 1;
		}
		return 0;
	case OP_SCATTERELEMENTS: case OP_SCATTERND:
		s = ir_attr_string(n, "reduction", "none");
		if (strcmp(s, "none") && strcmp(s, "add") && strcmp(s, "mul") && strcmp(s, "max") && strcmp(s, "min")) {
			onnx_node_error(L, n, "attribute 'reduction' must be none, add, mul, max or min, not '%s'", s);
			return 1;
		}
		return 0;
	case OP_CONVTRANSPOSE:
		return check_conv(L, n);
	default:
		return 0;
	}
}

static int check_pad(onnx_ctx *L, ir_node *n)
{
	const char *m = ir_attr_string(n, "mode", "constant");
	if (strcmp(m, "constant") && strcmp(m, "reflect") && strcmp(m, "edge")) {
		onnx_node_error(L, n, "attribute 'mode' must be constant, reflect or edge, not '%s'", m);
		return 1;
	}
	return 0;
}

/* Attribute `name` (default def) must be one of the words of `allowed`
 * (space separated). */
static int check_word(onnx_ctx *L, ir_node *n, const char *name, const char *def, const char *allowed)
{
	const char *v = ir_attr_string(n, name, def);
	size_t len = strlen(v);
	for (const char *p = allowed; *p;) {
		size_t w = strcspn(p, " ");
		if (w == len && !strncmp(p, v, len))
			return 0;
		p += w;
		p += *p == ' ';
	}
	onnx_node_error(L, n, "attribute '%s' must be one of %s, not '%s'", name, allowed, v);
	return 1;
}

static int check_resize(onnx_ctx *L, ir_node *n)
{
	int upsample = !strcmp(n->op_type, "Upsample");
	if (upsample && (n->opset < 7 || n->opset >= 10)) {
		onnx_node_error(L, n, n->opset < 7 ? "Upsample before opset 7 (experimental) is not supported"
						    : "Upsample is deprecated since opset 10 (use Resize)");
		return 1;
	}
	if (!upsample && n->opset < 10) {
		onnx_node_error(L, n, "Resize does not exist before opset 10 (this model imports opset %d)", n->opset);
		return 1;
	}
	if ((n->nin < 3 || !n->in[2]) && (n->nin < 4 || !n->in[3])) {
		onnx_node_error(L, n, "needs input 'scales' or 'sizes'");
		return 1;
	}
	int errs = check_word(L, n, "mode", "nearest", "nearest linear cubic");
	if (n->opset <= 10 && !strcmp(ir_attr_string(n, "mode", "nearest"), "cubic")) {
		onnx_node_error(L, n, "mode cubic does not exist before opset 11");
		errs++;
	}
	errs += check_word(L, n, "coordinate_transformation_mode", "half_pixel",
			   n->opset >= 19   ? "half_pixel half_pixel_symmetric pytorch_half_pixel align_corners "
					      "asymmetric tf_crop_and_resize"
			   : n->opset >= 13 ? "half_pixel pytorch_half_pixel align_corners asymmetric tf_crop_and_resize"
					    : "half_pixel pytorch_half_pixel align_corners asymmetric "
					      "tf_half_pixel_for_nn tf_crop_and_resize");
	errs += check_word(L, n, "nearest_mode", "round_prefer_floor", "round_prefer_floor round_prefer_ceil floor ceil");
	errs += check_word(L, n, "keep_aspect_ratio_policy", "stretch", "stretch not_larger not_smaller");
	errs += check_bool(L, n, "exclude_outside") + check_bool(L, n, "antialias");
	if (!errs && ir_attr_int(n, "antialias", 0) && strcmp(ir_attr_string(n, "mode", "nearest"), "nearest")) {
		onnx_node_error(L, n, "antialias 1 (a widened %s filter when downscaling) is not supported",
				ir_attr_string(n, "mode", "nearest"));
		errs++;
	}
	return errs;
}

/* GridSample-16 to 19 spell the modes bilinear and bicubic, opset 20 linear
 * and cubic: the node keeps the opset-20 words. */
static int check_gridsample(onnx_ctx *L, ir_node *n)
{
	int old = n->opset < 20;
	int errs = check_word(L, n, "mode", old ? "bilinear" : "linear",
			      old ? "bilinear nearest bicubic" : "linear nearest cubic") +
		   check_word(L, n, "padding_mode", "zeros", "zeros border reflection") +
		   check_bool(L, n, "align_corners");
	const char *m = ir_attr_string(n, "mode", old ? "bilinear" : "linear");
	if (!errs && old)
		ir_attr_set_string(n, "mode", !strcmp(m, "bilinear") ? "linear" : !strcmp(m, "bicubic") ? "cubic" : m);
	return errs;
}

static int check_roialign(onnx_ctx *L, ir_node *n)
{
	int errs = check_word(L, n, "mode", "avg", "avg max") +
		   check_word(L, n, "coordinate_transformation_mode", "half_pixel", "half_pixel output_half_pixel");
	const char *const pos[] = {"output_height", "output_width"};
	for (int k = 0; k < 2; k++)
		if (ir_attr_int(n, pos[k], 1) < 1) {
			onnx_node_error(L, n, "attribute '%s' must be positive, not %lld", pos[k],
					(long long)ir_attr_int(n, pos[k], 1));
			errs++;
		}
	if (ir_attr_int(n, "sampling_ratio", 0) < 0) {
		onnx_node_error(L, n, "attribute 'sampling_ratio' must be 0 (adaptive) or positive, not %lld",
				(long long)ir_attr_int(n, "sampling_ratio", 0));
		errs++;
	}
	return errs;
}

static int check_isinf(onnx_ctx *L, ir_node *n)
{
	return check_bool(L, n, "detect_negative") + check_bool(L, n, "detect_positive");
}

/* Det .. MelWeightMatrix: required attributes and flags. */
static int check_linalg(onnx_ctx *L, ir_node *n)
{
	const char *need = n->op == OP_EINSUM ? "equation" : n->op == OP_LRN ? "size"
			 : n->op == OP_MAXUNPOOL ? "kernel_shape" : NULL;
	if (need && !ir_attr_find(n, need)) {
		onnx_node_error(L, n, "attribute '%s' is required", need);
		return 1;
	}
	if (n->op == OP_LRN && ir_attr_int(n, "size", 1) < 1) {
		onnx_node_error(L, n, "attribute 'size' must be positive, not %lld", (long long)ir_attr_int(n, "size", 1));
		return 1;
	}
	return check_bool(L, n, "inverse") + check_bool(L, n, "onesided");
}

typedef int (*check_fn)(onnx_ctx *L, ir_node *n);

static const struct {
	ir_op op;
	check_fn fn;
} checkers[] = {
	{OP_LSTM, check_rnn},         {OP_GRU, check_rnn},       {OP_RNN, check_rnn},
	{OP_GEMM, check_gemm},        {OP_TRANSPOSE, check_transpose},
	{OP_CAST, check_cast},        {OP_RESHAPE, check_reshape},
	{OP_CONSTOFSHAPE, check_constofshape}, {OP_CONCAT, check_concat},
	{OP_SPLIT, check_split},       {OP_LOOP, check_body},     {OP_SCAN, check_body},
	{OP_MOMENTUM, check_optim},    {OP_ADAM, check_optim},    {OP_ADAGRAD, check_optim},
	{OP_IF, check_if},            {OP_SEQMAP, check_body},
	{OP_REDUCESUM, check_reduce}, {OP_REDUCEMEAN, check_reduce}, {OP_REDUCEMAX, check_reduce},
	{OP_REDUCEMIN, check_reduce}, {OP_REDUCEPROD, check_reduce}, {OP_REDUCEL1, check_reduce},
	{OP_REDUCEL2, check_reduce},  {OP_REDUCELOGSUM, check_reduce}, {OP_REDUCELOGSUMEXP, check_reduce},
	{OP_REDUCESUMSQUARE, check_reduce}, {OP_ARGMAX, check_reduce}, {OP_ARGMIN, check_reduce},
	{OP_CONV, check_conv},        {OP_PAD, check_pad},        {OP_ISINF, check_isinf},
	{OP_CONVINTEGER, check_conv}, {OP_QLINEARCONV, check_conv},
	{OP_MAXPOOL, check_pool},     {OP_AVGPOOL, check_pool},
	{OP_BATCHNORM, check_norm},   {OP_HARDMAX, check_hardmax},
	{OP_TRILU, check_reduce},     {OP_CUMSUM, check_reduce},
	{OP_SOFTMAXCE, check_loss},   {OP_NLLLOSS, check_loss},
	{OP_BITSHIFT, check_misc},    {OP_DEPTHTOSPACE, check_misc}, {OP_SPACETODEPTH, check_misc},
	{OP_SCATTERELEMENTS, check_misc}, {OP_SCATTERND, check_misc}, {OP_CONVTRANSPOSE, check_misc},
	{OP_EINSUM, check_linalg},    {OP_LRN, check_linalg},     {OP_MAXUNPOOL, check_linalg},
	{OP_DFT, check_linalg},       {OP_STFT, check_linalg},
	{OP_RESIZE, check_resize},    {OP_GRIDSAMPLE, check_gridsample}, {OP_ROIALIGN, check_roialign},
};

int onnx_check_values(onnx_ctx *L, ir_node *n)
{
	int errs = 0;
	for (size_t k = 0; k < COUNTOF(checkers); k++)
		if (checkers[k].op == n->op)
			errs += checkers[k].fn(L, n);
	return errs;
}
