/* pass_precision.c: the precision the model's weights are stored in
 * (--weights).
 *
 * requires: pass_fuse (the products are final: Gemm and MatMul nodes of the
 *           root graph and of recurrence bodies, their weights constant
 *           model weights in an inference build).
 * produces: on every product whose B operand (input 1) is an f32 model
 *           weight of rank 2, the weight's data rounded and kept as the f32
 *           values of the rounded form, and weights = MODE on the product:
 *           - bf16: each weight to the nearest bfloat16
 *             (rt_f32_to_bf16_nearest, the runtime's own rounding: to
 *             nearest, ties to even);
 *           - int8: the weights of each output (a column of B, a row with
 *             transB) to s q, s = max |w| / 127 and q = rint(w / s) in
 *             [-127, 127] (rt_scale_i8, rt_quant_i8: the functions
 *             rt_gemv_pack_i8 packs them with, so it finds the same q).
 *           pass_schedule's packed copy of such a product's weights (pack:
 *           the batch-1 GEMV of a recurrence) is then bfloat16 (half the
 *           bytes to stream per step) or int8 (a quarter, multiplied by the
 *           step's activations quantized to 7 bits, summed in int32); every
 *           other path multiplies the same rounded weights in float32, so
 *           with bf16 the batch size and the threads change the results
 *           only by the order of the sums, and with int8 by the
 *           quantization of the batch-1 step's activations.  Biases,
 *           peepholes, states and activations stay float32.  With
 *           --weights f32 (the default): nothing.
 * breaks:   nothing.
 */
#include "infer.h"
#include "passes.h"
#include "util.h"

#include <cellrt.h>
#include <math.h>
#include <string.h>

const char *const weights_mode_names[WEIGHTS_COUNT] = {"f32", "bf16", "int8"};

int weights_mode_lookup(const char *s)
{
	for (int m = 0; m < WEIGHTS_COUNT; m++)
		if (!strcmp(s, weights_mode_names[m]))
			return m;
	return -1;
}

int precision_operand(const ir_node *n)
{
	if ((n->op != OP_GEMM && n->op != OP_MATMUL) || n->nin < 2 || !n->in[1])
		return 0;
	const ir_value *W = n->in[1];
	return W->kind == VAL_WEIGHT && W->dtype == DT_F32 && W->data && W->shape.rank == 2 &&
	       ir_dim_is_const(W->shape.d[0]) && ir_dim_is_const(W->shape.d[1]);
}

/* Output j of product n's weights: its K values and their stride. */
static const float *out_row(const ir_node *n, int64_t j, int64_t *K, int64_t *inc)
{
	const ir_value *W = n->in[1];
	int tb = (int)ir_attr_int(n, "transB", 0);
	int64_t rows = W->shape.d[0].k, cols = W->shape.d[1].k;
	*K = tb ? cols : rows;
	*inc = tb ? 1 : cols;
	return (const float *)W->data + (tb ? j * cols : j);
}

static int64_t n_outputs(const ir_node *n)
{
	return n->in[1]->shape.d[ir_attr_int(n, "transB", 0) ? 0 : 1].k;
}

int precision_int8_row(const ir_node *n, int64_t j, float *scale)
{
	int64_t K, inc;
	const float *w = out_row(n, j, &K, &inc);
	float s = rt_scale_i8(K, w, inc);
	*scale = s;
	for (int64_t k = 0; k < K; k++) {
		/* s q rounded to float, and s found again from the rounded
		 * maximum, are off by a few units in the last place: far less
		 * than the step s, and q comes out the same */
		double d = (double)w[k * inc] - (double)s * rt_quant_i8(w[k * inc], s);
		if (!(fabs(d) <= 1e-4 * (double)s))
			return 0;
	}
	return 1;
}

static void round_weights(ir_graph *g, infer_set *done, weights_mode m)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op == OP_RECURRENCE && n->body)
			round_weights(n->body, done, m);
		if (!precision_operand(n))
			continue;
		ir_value *W = n->in[1];
		if (infer_set_add(done, W)) {
			/* a new copy: the loaded data may be shared (a file's buffer) */
			int64_t cnt = ir_shape_const_numel(&W->shape);
			const float *s = W->data;
			float *d = arena_array(g->A, (size_t)(cnt ? cnt : 1), sizeof *d);
			if (m == WEIGHTS_BF16)
				for (int64_t k = 0; k < cnt; k++)
					d[k] = rt_bf16_to_f32(rt_f32_to_bf16_nearest(s[k]));
			else
				for (int64_t j = 0; j < n_outputs(n); j++) {
					int64_t K, inc;
					const float *w = out_row(n, j, &K, &inc);
					float sc = rt_scale_i8(K, w, inc);
					for (int64_t k = 0; k < K; k++)
						d[w - s + k * inc] = sc * (float)rt_quant_i8(w[k * inc], sc);
				}
			W->data = d;
		}
		/* int8: a weight shared with a product of the other orientation
		 * was rounded per output of that one; this one then stays f32 */
		int on_grid = 1;
		float sc;
		for (int64_t j = 0; m == WEIGHTS_INT8 && on_grid && j < n_outputs(n); j++)
			on_grid = precision_int8_row(n, j, &sc);
		if (on_grid)
			ir_attr_set_string(n, "weights", weights_mode_names[m]);
	}
}

int pass_precision(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	if (o->weights == WEIGHTS_F32)
		return 0;
	infer_set done;
	infer_set_init(&done);
	round_weights(g, &done, (weights_mode)o->weights);
	infer_set_free(&done);
	return 0;
}
