/* onnx_contrib.c: operators of ONNX Runtime's com.microsoft domain that
 * cellc reads by rewriting them into standard ones at load.
 *
 * DynamicQuantizeLSTM (com.microsoft version 1, what ONNX Runtime's dynamic
 * quantizer writes for an LSTM) is an ONNX LSTM whose W [D, I, 4H] and R
 * [D, H, 4H] are 8-bit integers (int8 or uint8) stored input-major, with a
 * scale and a zero point per direction ([D]) or per direction and output
 * ([D, 4H]) as inputs 8 to 11; inputs 0 to 7 are the LSTM's.  Its weights
 * are constants, so the rewrite dequantizes them here, (q - zero point) *
 * scale in float32 (the arithmetic of DequantizeLinear), transposed to the
 * LSTM's [D, 4H, I] and [D, 4H, H], and the node becomes that LSTM with
 * inputs 0 to 7.  The weights' values are then exactly the model's; what
 * ONNX Runtime adds, the quantization of the activations at each product,
 * is what `--weights int8` does too (pass_precision, rt_gemv_packed_i8).
 *
 * MatMulIntegerToFloat (A, B, a_scale, b_scale [, a_zero_point,
 * b_zero_point, bias]) and DynamicQuantizeMatMul (A, B, b_scale [,
 * b_zero_point, bias]), com.microsoft version 1, are what ONNX Runtime's
 * graph optimiser makes of a dynamically quantized MatMul (it fuses
 * DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by the scales [->
 * Add of a bias]; a file saved after that optimiser holds them).  They are
 * written back as those standard operators, the arithmetic the fused kernel
 * does: Y = float((A - a_zp) (B - b_zp)) * (a_scale * b_scale) [+ bias],
 * the integer product exact, its zero points and scales per tensor or
 * per column of B; DynamicQuantizeMatMul quantizes A first as
 * DynamicQuantizeLinear does (uint8, the range of A and 0).
 */
#include "onnx_priv.h"
#include "util.h"

#include <string.h>

/* The integer at i of an int8 (dt DT_I8) or uint8 tensor's data. */
static int32_t q8(const ir_value *v, int64_t i)
{
	return v->dtype == DT_I8 ? ((const int8_t *)v->data)[i] : ((const uint8_t *)v->data)[i];
}

/* A constant of the file (an initializer, a Constant node's value) with its
 * data and a constant shape. */
static int constant(const ir_value *v)
{
	if (!v || (v->kind != VAL_WEIGHT && v->kind != VAL_CONST) || !v->data || v->shape.rank < 0)
		return 0;
	for (int k = 0; k < v->shape.rank; k++)
		if (!ir_dim_is_const(v->shape.d[k]))
			return 0;
	return 1;
}

/* Input k (W or R: [D, K, 4H], 8-bit) with its scale (input sk) and zero
 * point (sk + 1), dequantized and transposed to [D, 4H, K]; NULL after an
 * error. */
static ir_value *dequantize(onnx_ctx *L, ir_node *n, int k, int sk)
{
	static const char *const what[] = {"X", "W", "R"};
	ir_value *Q = n->in[k], *S = n->in[sk], *Z = n->in[sk + 1];
	const char *w = what[k], *sn = k == 1 ? "W_scale" : "R_scale", *zn = k == 1 ? "W_zero_point" : "R_zero_point";
	if (!constant(Q) || (Q->dtype != DT_I8 && Q->dtype != DT_U8) || Q->shape.rank != 3) {
		onnx_node_error(L, n, "DynamicQuantizeLSTM: %s must be an int8 or uint8 initializer of shape "
				"[num_directions, %s, 4*hidden_size]", w, k == 1 ? "input_size" : "hidden_size");
		return NULL;
	}
	int64_t D = Q->shape.d[0].k, K = Q->shape.d[1].k, N = Q->shape.d[2].k;
	if (!constant(S) || S->dtype != DT_F32 || !constant(Z) || Z->dtype != Q->dtype ||
	    !ir_shape_eq(&S->shape, &Z->shape) ||
	    !((S->shape.rank == 1 && S->shape.d[0].k == D) ||
	      (S->shape.rank == 2 && S->shape.d[0].k == D && S->shape.d[1].k == N))) {
		onnx_node_error(L, n, "DynamicQuantizeLSTM: %s (float) and %s (the type of %s) must be initializers "
				"of the same shape, [%lld] (per direction) or [%lld, %lld] (per output)", sn, zn, w,
				(long long)D, (long long)D, (long long)N);
		return NULL;
	}
	int per_out = S->shape.rank == 2;
	int64_t cnt = D * N * K;
	float *d = arena_array(L->A, (size_t)(cnt > 0 ? cnt : 1), sizeof *d);
	const float *s = S->data;
	for (int64_t a = 0; a < D; a++)
		for (int64_t j = 0; j < N; j++) {
			int64_t c = per_out ? a * N + j : a;
			for (int64_t i = 0; i < K; i++)
				d[(a * N + j) * K + i] = (float)(q8(Q, (a * K + i) * N + j) - q8(Z, c)) * s[c];
		}
	ir_value *v = ir_value_new(L->g, onnx_fresh_name(L, arena_printf(L->A, "%s.dequantized", Q->name)), VAL_WEIGHT,
				   DT_F32);
	v->shape.rank = 3;
	v->shape.d[0] = ir_dim_const(D);
	v->shape.d[1] = ir_dim_const(N);
	v->shape.d[2] = ir_dim_const(K);
	v->data = d;
	onnx_map_put(L->A, &L->values, v->name, v);
	return v;
}

int onnx_dynquant_lstm(onnx_ctx *L, ir_node *n)
{
	if (n->nin != 12) {
		onnx_node_error(L, n, "DynamicQuantizeLSTM has 12 inputs (X, W, R, B, sequence_lens, initial_h, "
				"initial_c, P, W_scale, W_zero_point, R_scale, R_zero_point), not %d", n->nin);
		return 1;
	}
	ir_value *W = dequantize(L, n, 1, 8), *R = dequantize(L, n, 2, 10);
	if (!W || !R)
		return 1;
	n->in[1] = W;
	n->in[2] = R;
	for (int k = 8; k < 12; k++)
		n->in[k] = NULL;
	n->nin = 8;
	return 0;
}

/* A node of the expansion of n (named after it), with nin inputs and one
 * new output of dtype dt. */
static ir_node *part(onnx_ctx *L, const ir_node *n, ir_op op, const char *what, int nin, ir_dtype dt)
{
	ir_node *m = ir_node_new(L->g, op, onnx_fresh_name(L, arena_printf(L->A, "%s/%s", n->name, what)), nin, 1);
	m->opset = n->opset;
	m->origin = n->name;
	m->out[0] = ir_value_new(L->g, onnx_fresh_name(L, arena_printf(L->A, "%s/%s_out", n->name, what)),
				 VAL_TEMP, dt);
	m->out[0]->producer = m;
	return m;
}

int onnx_contrib_matmul(onnx_ctx *L, ir_node *n, int dynamic, ir_node **post, int *npost)
{
	const char *op = dynamic ? "DynamicQuantizeMatMul" : "MatMulIntegerToFloat";
	int lo = dynamic ? 3 : 4, hi = dynamic ? 5 : 7;
	*npost = 0;
	if (n->nin < lo || n->nin > hi) {
		onnx_node_error(L, n, "%s has %d to %d inputs (%s), not %d", op, lo, hi,
				dynamic ? "A, B, b_scale, b_zero_point, bias"
					: "A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias", n->nin);
		return 1;
	}
	for (int k = 0; k < lo; k++)
		if (!n->in[k]) {
			onnx_node_error(L, n, "%s: input %d is required", op, k);
			return 1;
		}
	ir_value *A = n->in[0], *B = n->in[1];
	ir_value *as, *bs, *az, *bz, *bias;
	if (dynamic) {
		/* A quantized as DynamicQuantizeLinear does: (q, scale, zero point) */
		ir_node *q = ir_node_new(L->g, OP_DYNQUANTIZELINEAR,
					 onnx_fresh_name(L, arena_printf(L->A, "%s/quantize_A", n->name)), 1, 3);
		q->opset = n->opset;
		q->origin = n->name;
		q->in[0] = A;
		static const char *const nm[3] = {"A_quantized", "A_scale", "A_zero_point"};
		static const ir_dtype dt[3] = {DT_U8, DT_F32, DT_U8};
		for (int k = 0; k < 3; k++) {
			q->out[k] = ir_value_new(L->g, onnx_fresh_name(L, arena_printf(L->A, "%s/%s", n->name, nm[k])),
						 VAL_TEMP, dt[k]);
			q->out[k]->producer = q;
		}
		ir_append(L->g, q);
		A = q->out[0];
		as = q->out[1];
		az = q->out[2];
		bs = n->in[2];
		bz = n->nin > 3 ? n->in[3] : NULL;
		bias = n->nin > 4 ? n->in[4] : NULL;
	} else {
		as = n->in[2];
		bs = n->in[3];
		az = n->nin > 4 ? n->in[4] : NULL;
		bz = n->nin > 5 ? n->in[5] : NULL;
		bias = n->nin > 6 ? n->in[6] : NULL;
	}
	ir_value *Y = n->out[0];
	if (!Y)
		return 0;       /* nothing reads it: the product alone, never used */
	/* n: the integer product MatMulInteger(A, B, a_zp, b_zp) */
	ir_value **in = arena_array(L->A, 4, sizeof *in);
	in[0] = A;
	in[1] = B;
	in[2] = az;
	in[3] = bz;
	n->in = in;
	n->nin = bz ? 4 : az ? 3 : 2;
	n->out[0] = ir_value_new(L->g, onnx_fresh_name(L, arena_printf(L->A, "%s/int32", n->name)), VAL_TEMP,
				 DT_I32);
	n->out[0]->producer = n;
	/* float(product) * (a_scale * b_scale) [+ bias] */
	ir_node *cast = part(L, n, OP_CAST, "float", 1, DT_F32);
	cast->in[0] = n->out[0];
	ir_attr_set_int(cast, "to", DT_F32);
	ir_node *scales = part(L, n, OP_MUL, "scale", 2, DT_F32);
	scales->in[0] = as;
	scales->in[1] = bs;
	ir_node *y = part(L, n, OP_MUL, "dequantize", 2, DT_F32);
	y->in[0] = cast->out[0];
	y->in[1] = scales->out[0];
	post[(*npost)++] = cast;
	post[(*npost)++] = scales;
	post[(*npost)++] = y;
	if (bias) {
		ir_node *add = part(L, n, OP_ADD, "bias", 2, DT_F32);
		add->in[0] = y->out[0];
		add->in[1] = bias;
		post[(*npost)++] = add;
		y = add;
	}
	/* the last node writes the file's output value */
	y->out[0] = Y;
	Y->producer = y;
	return 0;
}
