/* emit_nn.c: the neural-network kernels of the root graph, each a call of
 * libcellrt: reductions and ArgMax/ArgMin, Conv, Pad, pooling and the
 * normalisations (runtime/rt_nn.c), quantization (rt_quant.c), image
 * sampling (rt_image.c), the random operators and Dropout (each node its
 * stream m->rng[k]), and the ai.onnx.preview.training optimisers
 * (rt_optim.c).  A call that may refuse its arguments at run time returns
 * its status from the function at once.
 */
#include "emit.h"
#include "emit_ops.h"
#include "infer.h"
#include "util.h"

#include <ctype.h>
#include <string.h>

/* ---- reductions, ArgMax/ArgMin, Conv (runtime/rt_nn.c) ---------------------- */

static int reduce_kind(ir_op op)
{
	switch (op) {
	case OP_REDUCEMEAN: return 1;
	case OP_REDUCEMAX: return 2;
	case OP_REDUCEMIN: return 3;
	case OP_REDUCEPROD: return 4;
	case OP_REDUCEL1: return 5;
	case OP_REDUCEL2: return 6;
	case OP_REDUCELOGSUM: return 7;
	case OP_REDUCELOGSUMEXP: return 8;
	case OP_REDUCESUMSQUARE: return 9;
	default: return 0;
	}
}

static const char *const reduce_kinds[] = {
	"RT_REDUCE_SUM", "RT_REDUCE_MEAN", "RT_REDUCE_MAX", "RT_REDUCE_MIN", "RT_REDUCE_PROD", "RT_REDUCE_L1",
	"RT_REDUCE_L2", "RT_REDUCE_LOGSUM", "RT_REDUCE_LOGSUMEXP", "RT_REDUCE_SUMSQUARE",
};

void emit_reduce(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	unsigned char red[IR_MAX_RANK];
	infer_reduce_axes(n, r, red);
	char *mask = "";
	for (int a = 0; a < r; a++)
		mask = arena_printf(E->A, "%s%s%d", mask, a ? ", " : "", red[a]);
	ops_node_comment(E, n, NULL);
	ew_line(E->w, "rt_reduce_%s(%s, %s, %s, %d, %s, (const unsigned char[]){%s});",
		x->dtype == DT_F64 ? "f64" : x->dtype == DT_I64 ? "i64" : x->dtype == DT_I32 ? "i32" : "f32", reduce_kinds[reduce_kind(n->op)], emit_ref(E, y), emit_ref(E, x),
		r, ops_dims_lit(E, &x->shape, 0), r ? mask : "0");
}

void emit_argmax(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, axis = axis_of(ir_attr_int(n, "axis", 0), r);
	ops_node_comment(E, n, arena_printf(E->A, "along axis %d", axis));
	ew_line(E->w, "rt_argmax_%s(%s, %s, %s, %s, %s, %d, %d);", x->dtype == DT_F64 ? "f64" : "f32", emit_ref(E, y),
		emit_ref(E, x), emit_dim(E, dims_prod(&x->shape, 0, axis)), emit_dim(E, x->shape.d[axis]),
		emit_dim(E, dims_prod(&x->shape, axis + 1, r)), n->op == OP_ARGMIN,
		(int)ir_attr_int(n, "select_last_index", 0));
}

void emit_conv(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK];
	int nsp = infer_conv_geometry(n, k, st, pads, dil);
	int64_t group = ir_attr_int(n, "group", 1);
	ops_node_comment(E, n, arena_printf(E->A, "group %lld", (long long)group));
	ew_line(E->w, "%s(%s, %s, %s, %s, %d, %s, %s, %lld, %s, %s, %s, %s);",
		x->dtype == DT_F64 ? "rt_conv_f64" : "rt_conv", emit_ref(E, y), emit_ref(E, x),
		emit_ref(E, w), b ? emit_ref(E, b) : "NULL", nsp, ops_dims_lit(E, &x->shape, 0), emit_dim(E, w->shape.d[0]),
		(long long)group, ops_ints_lit(E, k, nsp), ops_ints_lit(E, st, nsp), ops_pads_lit(E, n, pads, k, st, dil, nsp),
		ops_ints_lit(E, dil, nsp));
}

/* ---- quantization (runtime/rt_quant.c) ---- */

static const char *opt_ref(emit_ctx *E, const ir_node *n, int k)
{
	return k < n->nin && n->in[k] ? emit_ref(E, n->in[k]) : "NULL";
}

static int64_t numel_of(const ir_node *n, int k)
{
	return k < n->nin && n->in[k] ? ir_shape_const_numel(&n->in[k]->shape) : 1;
}

/* QuantizeLinear / DequantizeLinear: X viewed as [outer, D, inner] around
 * the axis of a per-axis scale, or [numel, 1, 1] for one scale. */
void emit_quant_linear(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, per_axis = numel_of(n, 1) != 1;
	int a = per_axis ? axis_of(ir_attr_int(n, "axis", 1), r) : r;
	const char *outer = emit_dim(E, dims_prod(&x->shape, 0, a)),
		   *cnt = per_axis ? emit_dim(E, x->shape.d[a]) : "1",
		   *inner = per_axis ? emit_dim(E, dims_prod(&x->shape, a + 1, r)) : "1";
	ops_node_comment(E, n, per_axis ? arena_printf(E->A, "per axis %d", a) : "per tensor");
	if (n->op == OP_QUANTIZELINEAR)
		ew_line(E->w, "rt_quantize_linear(%s, %d, %s, %s, %s, %s, %s, %s);", emit_ref(E, y), (int)y->dtype,
			emit_ref(E, x), emit_ref(E, n->in[1]), opt_ref(E, n, 2), outer, cnt, inner);
	else
		ew_line(E->w, "rt_dequantize_linear(%s, %s, %d, %s, %s, %s, %s, %s);", emit_ref(E, y), emit_ref(E, x),
			(int)x->dtype, emit_ref(E, n->in[1]), opt_ref(E, n, 2), outer, cnt, inner);
}

void emit_dyn_quant(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0];
	ops_node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "float scale_;");
	ew_line(E->w, "uint8_t zero_point_;");
	ew_line(E->w, "rt_dynamic_quantize_linear(%s, &scale_, &zero_point_, %s, %s);", emit_ref(E, n->out[0]),
		emit_ref(E, x), emit_dim(E, ir_shape_numel(&x->shape)));
	if (n->nout > 1 && n->out[1])
		ew_line(E->w, "%s[0] = scale_;", emit_ref(E, n->out[1]));
	if (n->nout > 2 && n->out[2])
		ew_line(E->w, "%s[0] = zero_point_;", emit_ref(E, n->out[2]));
	ew_close(E->w, "");
}

/* MatMulInteger / QLinearMatMul: numpy batching as in emit_matmul, one
 * kernel call per batch element (the zero points of A are per row). */
void emit_qmatmul(emit_ctx *E, ir_node *n)
{
	int ql = n->op == OP_QLINEARMATMUL;
	const ir_value *a = n->in[0], *b = n->in[ql ? 3 : 1], *y = n->out[0];
	mm_geom G = ops_matmul_geometry(a, b, y);
	ir_dim M = G.M, K = G.K, N = G.N;
	ir_shape ab = G.ab, bb = G.bb, yb = G.yb;
	const char *sM = emit_dim(E, M), *sN = emit_dim(E, N), *sK = emit_dim(E, K);
	const char *ar = emit_ref(E, a), *br = emit_ref(E, b), *yr = emit_ref(E, y);
	loop L;
	const ir_shape *ops[2] = {&ab, &bb};
	if (!ops_loop_plan(E, &L, &yb, ops, 2)) {
		diag_node(E->D, n, "%s batch dimensions do not broadcast", ir_op_name(n->op));
		return;
	}
	ops_node_comment(E, n, ql ? "mult = a_scale b_scale / y_scale" : NULL);
	if (ql) {
		ew_open(E->w, "%s", "");
		ew_line(E->w, "const float mult = %s[0] * %s[0] / %s[0];", emit_ref(E, n->in[1]), emit_ref(E, n->in[4]),
			emit_ref(E, n->in[6]));
	}
	ops_loop_open(E, &L);
	const char *ao = arena_printf(E->A, "%s + %s", ar, mul_str(E, factor(E, L.idx[0]), emit_dim(E, ir_dim_mul(M, K))));
	const char *bo = arena_printf(E->A, "%s + %s", br, mul_str(E, factor(E, L.idx[1]), emit_dim(E, ir_dim_mul(K, N))));
	const char *yo = arena_printf(E->A, "%s + %s", yr, mul_str(E, factor(E, L.oidx), emit_dim(E, ir_dim_mul(M, N))));
	if (ql)
		ew_line(E->w, "rt_qlinear_matmul(%s, %d, mult, %s, %s, %d, %s, %s, %d, %s, %s, %s, %s);", yo, (int)y->dtype,
			emit_ref(E, n->in[7]), ao, (int)a->dtype, emit_ref(E, n->in[2]), bo, (int)b->dtype,
			emit_ref(E, n->in[5]), sM, sN, sK);
	else
		ew_line(E->w, "rt_matmul_integer(%s, %s, %d, %s, %lld, %s, %d, %s, %lld, %s, %s, %s);", yo, ao, (int)a->dtype,
			opt_ref(E, n, 2), (long long)numel_of(n, 2), bo, (int)b->dtype, opt_ref(E, n, 3),
			(long long)numel_of(n, 3), sM, sN, sK);
	ops_loop_close(E, &L);
	if (ql)
		ew_close(E->w, "");
}

/* ConvInteger / QLinearConv: rt_conv's geometry, exact int32 sums. */
void emit_qconv(emit_ctx *E, ir_node *n)
{
	int ql = n->op == OP_QLINEARCONV;
	const ir_value *x = n->in[0], *w = n->in[ql ? 3 : 1], *y = n->out[0];
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK];
	int nsp = infer_conv_geometry(n, k, st, pads, dil);
	int64_t group = ir_attr_int(n, "group", 1), m = w->shape.d[0].k;
	const char *geo = arena_printf(E->A, "%d, %s, %lld, %lld, %s, %s, %s, %s", nsp, ops_dims_lit(E, &x->shape, 0),
				       (long long)m, (long long)group, ops_ints_lit(E, k, nsp), ops_ints_lit(E, st, nsp),
				       ops_pads_lit(E, n, pads, k, st, dil, nsp), ops_ints_lit(E, dil, nsp));
	ops_node_comment(E, n, arena_printf(E->A, "group %lld", (long long)group));
	if (!ql) {
		ew_line(E->w, "rt_conv_integer(%s, %s, %d, %s, %s, %d, %s, %lld, %s);", emit_ref(E, y), emit_ref(E, x),
			(int)x->dtype, opt_ref(E, n, 2), emit_ref(E, w), (int)w->dtype, opt_ref(E, n, 3),
			(long long)numel_of(n, 3), geo);
		return;
	}
	/* one multiplier per output channel when w_scale is per channel */
	int64_t nm = numel_of(n, 4);
	ew_open(E->w, "%s", "");
	if (nm == 1) {
		ew_line(E->w, "const float mult[1] = {%s[0] * %s[0] / %s[0]};", emit_ref(E, n->in[1]),
			emit_ref(E, n->in[4]), emit_ref(E, n->in[6]));
	} else {
		ew_line(E->w, "float mult[%lld];", (long long)nm);
		ew_open(E->w, "for (int64_t i = 0; i < %lld; i++)", (long long)nm);
		ew_line(E->w, "mult[i] = %s[0] * %s[i] / %s[0];", emit_ref(E, n->in[1]), emit_ref(E, n->in[4]),
			emit_ref(E, n->in[6]));
		ew_close(E->w, "");
	}
	ew_line(E->w, "rt_qlinear_conv(%s, %d, mult, %lld, %s, %s, %d, %s, %s, %d, %s, %lld, %s, %s);", emit_ref(E, y),
		(int)y->dtype, (long long)nm, emit_ref(E, n->in[7]), emit_ref(E, x), (int)x->dtype, emit_ref(E, n->in[2]),
		emit_ref(E, w), (int)w->dtype, emit_ref(E, n->in[5]), (long long)numel_of(n, 5), opt_ref(E, n, 8), geo);
	ew_close(E->w, "");
}

void emit_pad(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *v = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
	ir_dim pads[2 * IR_MAX_RANK];  /* begins then ends, constants or sizes known at run time */
	if (infer_pad_dims(E->g, n, E->D, pads))
		return;
	const char *mode = ir_attr_string(n, "mode", "constant");
	int r = x->shape.rank;
	ops_node_comment(E, n, mode);
	if (r == 0) {
		ew_line(E->w, "memcpy(%s, %s, sizeof(%s));", emit_ref(E, y), emit_ref(E, x), ctype(x));
		return;
	}
	char *pl = "";
	for (int i = 0; i < 2 * r; i++)
		pl = arena_printf(E->A, "%s%s%s", pl, i ? ", " : "", emit_dim(E, pads[i]));
	ew_line(E->w, "rt_pad(%s, %s, sizeof(%s), %d, %s, (const int64_t[]){%s}, %s, %s);", emit_ref(E, y), emit_ref(E, x),
		ctype(x), r, ops_dims_lit(E, &x->shape, 0), pl,
		!strcmp(mode, "reflect") ? "RT_PAD_REFLECT" : !strcmp(mode, "edge") ? "RT_PAD_EDGE" : "RT_PAD_CONSTANT",
		v ? emit_ref(E, v) : "NULL");
}

/* ---- image sampling (runtime/rt_image.c) ---- */

static const char *doubles_lit(emit_ctx *E, const double *v, int n)
{
	char *r = "";
	for (int i = 0; i < n; i++)
		r = arena_printf(E->A, "%s%s%s", r, i ? ", " : "", emit_float(E, v[i], DT_F64));
	return arena_printf(E->A, "(const double[]){%s}", n ? r : "0");
}

/* An attribute's word as the libcellrt enumerator PREFIX_WORD. */
static const char *enum_name(emit_ctx *E, const char *prefix, const char *word)
{
	char *r = arena_printf(E->A, "%s%s", prefix, word);
	for (char *p = r; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return r;
}

void emit_resize(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	infer_resize_geom G;
	if (infer_resize_geometry(E->g, n, E->D, &G))
		return;
	int r = x->shape.rank;
	const char *mode = ir_attr_string(n, "mode", "nearest");
	ops_node_comment(E, n, mode);
	/* a run-time axis scaled by a multiple of 1/64 has the size floor(p D /
	 * q) (ir_sym_scale), what ONNX Runtime's float32 product gives while
	 * p D < 2^24: beyond, the two differ, and the call is refused */
	for (int a = 0; a < r; a++) {
		int s = ir_dim_one_sym(y->shape.d[a]);
		if (!G.by_scales || ir_dim_is_const(x->shape.d[a]) || (s >= 0 && E->g->symdef[s].op == IR_SYM_SCALE))
			continue;
		ew_line(E->w, "if (rt_resize_size(%s, %s) != %s)", emit_dim(E, x->shape.d[a]),
			emit_float(E, G.scale[a], DT_F32), emit_dim(E, y->shape.d[a]));
		ew_line(E->w, "\treturn RT_ERR_SHAPE; /* ONNX Runtime's float32 size of axis %d differs */", a);
	}
	ew_line(E->w, "rt_resize(%s, %s, %d, %s, %s,", emit_ref(E, y), emit_ref(E, x), r, ops_dims_lit(E, &x->shape, 0),
		ops_dims_lit(E, &y->shape, 0));
	/* a scale 0: the output's size over the input's, known at run time */
	char *sc = "";
	for (int a = 0; a < r; a++)
		sc = arena_printf(E->A, "%s%s%s", sc, a ? ", " : "", G.scale[a] != 0 ? emit_float(E, G.scale[a], DT_F64) :
				  arena_printf(E->A, "(double)%s / (double)%s", emit_dim(E, y->shape.d[a]),
					       emit_dim(E, x->shape.d[a])));
	ew_line(E->w, "\t  (const double[]){%s}, %s,", r ? sc : "0", G.has_roi ? doubles_lit(E, G.roi, 2 * r) : "NULL");
	ew_line(E->w, "\t  &(const rt_resize_mode){%s, %s, %s, %d, %s, %s});", enum_name(E, "RT_RESIZE_", mode),
		enum_name(E, "RT_COORD_", ir_attr_string(n, "coordinate_transformation_mode", "half_pixel")),
		enum_name(E, "RT_NEAREST_", ir_attr_string(n, "nearest_mode", "round_prefer_floor")),
		(int)ir_attr_int(n, "exclude_outside", 0), emit_float(E, ir_attr_float(n, "cubic_coeff_a", -0.75f), DT_F64),
		emit_float(E, ir_attr_float(n, "extrapolation_value", 0.0f), DT_F32));
}

void emit_gridsample(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *grid = n->in[1], *y = n->out[0];
	const char *mode = ir_attr_string(n, "mode", "linear");
	ops_node_comment(E, n, mode);
	ew_line(E->w, "rt_grid_sample(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d);", emit_ref(E, y),
		emit_ref(E, x), emit_ref(E, grid), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
		emit_dim(E, x->shape.d[2]), emit_dim(E, x->shape.d[3]), emit_dim(E, y->shape.d[2]),
		emit_dim(E, y->shape.d[3]), enum_name(E, "RT_GRID_", mode),
		enum_name(E, "RT_GRID_PAD_", ir_attr_string(n, "padding_mode", "zeros")),
		(int)ir_attr_int(n, "align_corners", 0));
}

void emit_roialign(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *rois = n->in[1], *bi = n->in[2], *y = n->out[0];
	ops_node_comment(E, n, "batch indices checked at run time");
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int rst = rt_roi_align(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %s, %d, %d);",
		emit_ref(E, y), emit_ref(E, x), emit_ref(E, rois), emit_ref(E, bi), emit_dim(E, x->shape.d[0]),
		emit_dim(E, x->shape.d[1]), emit_dim(E, x->shape.d[2]), emit_dim(E, x->shape.d[3]),
		emit_dim(E, rois->shape.d[0]), emit_dim(E, y->shape.d[2]), emit_dim(E, y->shape.d[3]),
		(long long)ir_attr_int(n, "sampling_ratio", 0),
		emit_float(E, ir_attr_float(n, "spatial_scale", 1.0f), DT_F32),
		!strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "half_pixel"),
		!strcmp(ir_attr_string(n, "mode", "avg"), "max"));
	ew_line(E->w, "if (rst != RT_OK)");
	ew_line(E->w, "\treturn rst;");
	ew_close(E->w, "");
}

/* ---- pooling and normalisations (runtime/rt_nn.c) ---------------------------- */

void emit_pool(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0], *ix = n->nout > 1 ? n->out[1] : NULL;
	int r = x->shape.rank;
	if (n->op == OP_GLOBALAVGPOOL || n->op == OP_GLOBALMAXPOOL) {
		char *mask = "0, 0";
		for (int a = 2; a < r; a++)
			mask = arena_printf(E->A, "%s, 1", mask);
		ops_node_comment(E, n, NULL);
		ew_line(E->w, "rt_reduce_%s(%s, %s, %s, %d, %s, (const unsigned char[]){%s});",
			x->dtype == DT_F64 ? "f64" : "f32", n->op == OP_GLOBALAVGPOOL ? "RT_REDUCE_MEAN" : "RT_REDUCE_MAX", emit_ref(E, y), emit_ref(E, x), r,
			ops_dims_lit(E, &x->shape, 0), mask);
		return;
	}
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK], ysp[IR_MAX_RANK];
	int nsp = infer_pool_geometry(n, k, st, pads, dil, ysp);
	ASSERT(nsp > 0);
	if (x->dtype == DT_U8 || x->dtype == DT_I8) {
		ops_node_comment(E, n, NULL);
		ew_line(E->w, "rt_maxpool_8(%s, %d, %s, %d, %s, %s, %s, %s, %s, %s);", emit_ref(E, y), (int)x->dtype,
			emit_ref(E, x), nsp, ops_dims_lit(E, &x->shape, 0), ops_dims_lit(E, &y->shape, 2), ops_ints_lit(E, k, nsp),
			ops_ints_lit(E, st, nsp), ops_pads_lit(E, n, pads, k, st, dil, nsp), ops_ints_lit(E, dil, nsp));
		return;
	}
	const char *kind = n->op == OP_MAXPOOL ? (ir_attr_int(n, "storage_order", 0) ? "RT_POOL_MAX_CM" : "RT_POOL_MAX")
			 : ir_attr_int(n, "count_include_pad", 0) ? "RT_POOL_AVG_PADS" : "RT_POOL_AVG";
	ops_node_comment(E, n, NULL);
	ew_line(E->w, "%s(%s, %s, %s, %s, %d, %s, %s, %s, %s, %s, %s);", x->dtype == DT_F64 ? "rt_pool_f64" : "rt_pool",
		kind, emit_ref(E, y),
		ix ? emit_ref(E, ix) : "NULL", emit_ref(E, x), nsp, ops_dims_lit(E, &x->shape, 0), ops_dims_lit(E, &y->shape, 2),
		ops_ints_lit(E, k, nsp), ops_ints_lit(E, st, nsp), ops_pads_lit(E, n, pads, k, st, dil, nsp), ops_ints_lit(E, dil, nsp));
}

void emit_norm(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	ops_node_comment(E, n, NULL);
	if (n->op == OP_BATCHNORM && ir_attr_int(n, "training_mode", 0)) {
		/* batch statistics; the running-statistics outputs when wanted */
		const ir_value *rm = n->nout > 1 ? n->out[1] : NULL, *rv = n->nout > 2 ? n->out[2] : NULL;
		ew_line(E->w, "rt_batchnorm_train(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", emit_ref(E, y),
			rm && ops_is_stored(E, rm) ? emit_ref(E, rm) : "NULL", rv && ops_is_stored(E, rv) ? emit_ref(E, rv) : "NULL",
			emit_ref(E, x), emit_ref(E, n->in[1]), emit_ref(E, n->in[2]), emit_ref(E, n->in[3]),
			emit_ref(E, n->in[4]), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
			emit_dim(E, dims_prod(&x->shape, 2, r)), emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32),
			emit_float(E, ir_attr_float(n, "momentum", 0.9f), DT_F32));
		return;
	}
	if (n->op == OP_BATCHNORM) {
		ew_line(E->w, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", x->dtype == DT_F64 ? "rt_batchnorm_f64" : "rt_batchnorm",
			emit_ref(E, y), emit_ref(E, x),
			emit_ref(E, n->in[1]), emit_ref(E, n->in[2]), emit_ref(E, n->in[3]), emit_ref(E, n->in[4]),
			emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]), emit_dim(E, dims_prod(&x->shape, 2, r)),
			emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32));
		return;
	}
	int axis = axis_of(ir_attr_int(n, "axis", -1), r);
	const ir_value *b = n->nin > 2 ? n->in[2] : NULL, *m = n->nout > 1 ? n->out[1] : NULL,
		       *is = n->nout > 2 ? n->out[2] : NULL;
	ew_line(E->w, "%s(%s, %s, %s, %s, %s, %s, %s, %s, %s);", x->dtype == DT_F64 ? "rt_layernorm_f64" : "rt_layernorm",
		emit_ref(E, y),
		m && ops_is_stored(E, m) ? emit_ref(E, m) : "NULL", is && ops_is_stored(E, is) ? emit_ref(E, is) : "NULL",
		emit_ref(E, x), emit_ref(E, n->in[1]), b ? emit_ref(E, b) : "NULL",
		emit_dim(E, dims_prod(&x->shape, 0, axis)), emit_dim(E, dims_prod(&x->shape, axis, r)),
		emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32));
}

/* ---- randomness: the random operators and Dropout ---------------------------- */

/* Element 0 of scalar input v as a C expression: a literal for a constant. */
static const char *scalar_in(emit_ctx *E, const ir_value *v)
{
	if (infer_is_const(v) && v->data && !v->sym)
		return emit_scalar(E, v, 0);
	return arena_printf(E->A, "%s[0]", emit_ref(E, v));
}

/* The status of a libcellrt call that may refuse its arguments at run time. */
static void call_checked(emit_ctx *E, const char *call)
{
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int rst = %s;", call);
	ew_line(E->w, "if (rst != RT_OK)");
	ew_line(E->w, "\treturn rst;");
	ew_close(E->w, "");
}

/* RandomUniform(Like), RandomNormal(Like), Bernoulli: libcellrt draws from
 * the node's stream m->rng[k] (seeded by NAME_seed). */
void emit_random(emit_ctx *E, ir_node *n)
{
	const ir_value *y = n->out[0], *x = n->nin ? n->in[0] : NULL;
	int k = emit_rng_index(E, n);
	const char *rng = arena_printf(E->A, "&m->rng[%d]", k), *cnt = emit_numel(E, &y->shape);
	ops_node_comment(E, n, arena_printf(E->A, "random stream %d", k));
	switch (n->op) {
	case OP_RANDOMUNIFORM: case OP_RANDOMUNIFORMLIKE:
		call_checked(E, arena_printf(E->A, "rt_random_uniform(%s, %d, %s, %s, %s, %s)", emit_ref(E, y), (int)y->dtype,
					     cnt, emit_float(E, ir_attr_float(n, "low", 0.0f), DT_F64),
					     emit_float(E, ir_attr_float(n, "high", 1.0f), DT_F64), rng));
		break;
	case OP_RANDOMNORMAL: case OP_RANDOMNORMALLIKE:
		call_checked(E, arena_printf(E->A, "rt_random_normal(%s, %d, %s, %s, %s, %s)", emit_ref(E, y), (int)y->dtype,
					     cnt, emit_float(E, ir_attr_float(n, "mean", 0.0f), DT_F64),
					     emit_float(E, ir_attr_float(n, "scale", 1.0f), DT_F64), rng));
		break;
	default:
		call_checked(E, arena_printf(E->A, "rt_bernoulli(%s, %d, %s, %d, %s, %s)", emit_ref(E, y), (int)y->dtype,
					     emit_ref(E, x), (int)x->dtype, cnt, rng));
		break;
	}
}

/* Dropout: in inference mode (training_mode absent or a constant false)
 * Y = X and the mask all true; else rt_dropout with the ratio (default
 * 0.5) and training_mode read at run time (RT_ERR_ARG for a ratio outside
 * [0, 1) while training). */
void emit_dropout(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0], *mask = n->nout > 1 ? n->out[1] : NULL;
	if (infer_dropout_trains(n)) {
		const ir_value *ratio = n->nin > 1 ? n->in[1] : NULL, *t = n->in[2];
		int k = emit_rng_index(E, n);
		ops_node_comment(E, n, arena_printf(E->A, "training mode: random stream %d", k));
		call_checked(E, arena_printf(E->A, "rt_dropout(%s, %s, %s, %d, %s, %s, %s, &m->rng[%d])",
					     y && ops_is_stored(E, y) ? emit_ref(E, y) : "NULL",
					     mask && ops_is_stored(E, mask) ? emit_ref(E, mask) : "NULL", emit_ref(E, x),
					     (int)x->dtype, emit_numel(E, &x->shape),
					     ratio ? arena_printf(E->A, "(double)%s", scalar_in(E, ratio)) : "0.5",
					     arena_printf(E->A, "%s != 0", scalar_in(E, t)), k));
		return;
	}
	ops_node_comment(E, n, "inference: the identity");
	const char *cnt = emit_numel(E, &x->shape);
	if (y && ops_is_stored(E, y) && strcmp(emit_ref(E, y), emit_ref(E, x)))
		ew_line(E->w, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", emit_ref(E, y), emit_ref(E, x), cnt, ctype(x));
	if (mask && ops_is_stored(E, mask))
		ew_line(E->w, "memset(%s, 1, (size_t)%s);", emit_ref(E, mask), cnt);
}

/* ---- ai.onnx.preview.training optimisers --------------------------------------- */

/* Momentum, Adam, Adagrad: one call per optimised tensor of the kernels that
 * rt_optim_update uses (runtime/rt_optim.c), with the ONNX specification's
 * coefficients: Momentum's beta is 1 while T == 0; Adam's bias correction
 * moves into the step size R sqrt(1 - beta^T) / (1 - alpha^T) (T > 0) with
 * epsilon added to sqrt(H_new) itself, and 1 - norm_coefficient_post scales
 * the result; Adagrad's R / (1 + T decay_factor).  R and T are read at run
 * time (R may be double). */
void emit_optim(emit_ctx *E, ir_node *n)
{
	int per = n->op == OP_ADAM ? 4 : 3, nt = (n->nin - 2) / per;
	const char *R = emit_ref(E, n->in[0]), *T = emit_ref(E, n->in[1]);
	float wd = ir_attr_float(n, "norm_coefficient", 0.0f);
	ops_node_comment(E, n, arena_printf(E->A, "%d tensor%s", nt, nt == 1 ? "" : "s"));
	ew_open(E->w, "%s", "");
	ew_line(E->w, "const float r = (float)%s[0];", R);
	ew_line(E->w, "const int64_t t = %s[0];", T);
	const char *lr = "r";
	if (n->op == OP_ADAM) {
		double alpha = ir_attr_float(n, "alpha", 0.9f), beta = ir_attr_float(n, "beta", 0.999f);
		ew_line(E->w, "const float r_adj = t > 0 ? (float)((double)r * sqrt(1.0 - pow(%s, (double)t)) / "
			"(1.0 - pow(%s, (double)t))) : r;", emit_float(E, beta, DT_F64), emit_float(E, alpha, DT_F64));
		lr = "r_adj";
	} else if (n->op == OP_ADAGRAD) {
		ew_line(E->w, "const float r_adj = (float)((double)r / (1.0 + (double)t * %s));",
			emit_float(E, ir_attr_float(n, "decay_factor", 0.0f), DT_F64));
		lr = "r_adj";
	}
	for (int j = 0; j < nt; j++) {
		const ir_value *X = n->in[2 + j];
		const char *x = emit_ref(E, X), *g = emit_ref(E, n->in[2 + nt + j]), *s1 = emit_ref(E, n->in[2 + 2 * nt + j]);
		const char *xn = n->out[j] ? emit_ref(E, n->out[j]) : NULL;
		const char *s1n = n->out[nt + j] ? emit_ref(E, n->out[nt + j]) : NULL;
		const char *cnt = emit_numel(E, &X->shape);
		if (!xn || !s1n || (n->op == OP_ADAM && !n->out[2 * nt + j])) {
			diag_node(E->D, n, "internal: an output of the optimiser has no storage");
			return;
		}
		switch (n->op) {
		case OP_MOMENTUM: {
			int nesterov = strcmp(ir_attr_string(n, "mode", "standard"), "nesterov") == 0;
			ew_line(E->w, "rt_momentum_kernel(%s, %s, %s, %s, %s, %s, %s, %s, %s, t > 0 ? %s : 1.0f, %d);", xn, s1n,
				x, g, s1, cnt, lr, emit_float(E, wd, DT_F32),
				emit_float(E, ir_attr_float(n, "alpha", 0.0f), DT_F32),
				emit_float(E, ir_attr_float(n, "beta", 0.0f), DT_F32), nesterov);
			break;
		}
		case OP_ADAM: {
			const char *s2 = emit_ref(E, n->in[2 + 3 * nt + j]), *s2n = emit_ref(E, n->out[2 * nt + j]);
			ew_line(E->w, "rt_adam_kernel(%s, %s, %s, NULL, %s, %s, %s, %s, %s, %s, 1.0f, %s, %s, %s, %s, %s);",
				xn, s1n, s2n, x, g, s1, s2, cnt, lr,
				emit_float(E, ir_attr_float(n, "epsilon", 1e-6f), DT_F32), emit_float(E, wd, DT_F32),
				emit_float(E, ir_attr_float(n, "alpha", 0.9f), DT_F64),
				emit_float(E, ir_attr_float(n, "beta", 0.999f), DT_F64),
				emit_float(E, 1.0 - (double)ir_attr_float(n, "norm_coefficient_post", 0.0f), DT_F32));
			break;
		}
		default:        /* Adagrad */
			ew_line(E->w, "rt_adagrad_kernel(%s, %s, %s, %s, %s, %s, %s, %s, %s);", xn, s1n, x, g, s1, cnt, lr,
				emit_float(E, wd, DT_F32), emit_float(E, ir_attr_float(n, "epsilon", 1e-6f), DT_F32));
			break;
		}
	}
	ew_close(E->w, "");
}
