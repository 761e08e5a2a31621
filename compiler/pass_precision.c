/* pass_precision.c: the precision the model's weights are stored in
 * (--weights).
 *
 * requires: pass_fuse (the products are final: Gemm and MatMul nodes of the
 *           root graph and of recurrence bodies, their weights constant
 *           model weights in an inference build).
 * produces: with --weights bf16, on every product whose B operand (input 1)
 *           is an f32 model weight of rank 2: the weight's data rounded to
 *           the nearest bfloat16 (rt_f32_to_bf16_nearest, the runtime's own
 *           rounding: to nearest, ties to even) and kept as the f32 values
 *           bfloat16 holds exactly, and weights = "bf16" on the product.
 *           pass_schedule's packed copy of such a product's weights (pack:
 *           the batch-1 GEMV of a recurrence) is then bfloat16, half the
 *           bytes to stream per step; every other path multiplies the same
 *           rounded values in float32, so the batch size and the threads do
 *           not change the results beyond the order of the sums.  Biases,
 *           peepholes, states and activations stay float32.  With
 *           --weights f32 (the default): nothing.
 * breaks:   nothing.
 */
#include "infer.h"
#include "passes.h"
#include "util.h"

#include <cellrt.h>
#include <string.h>

const char *const weights_mode_names[WEIGHTS_COUNT] = {"f32", "bf16"};

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

static void round_bf16(ir_graph *g, infer_set *done)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op == OP_RECURRENCE && n->body)
			round_bf16(n->body, done);
		if (!precision_operand(n))
			continue;
		ir_value *W = n->in[1];
		if (infer_set_add(done, W)) {
			/* a new copy: the loaded data may be shared (a file's buffer) */
			int64_t cnt = ir_shape_const_numel(&W->shape);
			const float *s = W->data;
			float *d = arena_array(g->A, (size_t)(cnt ? cnt : 1), sizeof *d);
			for (int64_t k = 0; k < cnt; k++)
				d[k] = rt_bf16_to_f32(rt_f32_to_bf16_nearest(s[k]));
			W->data = d;
		}
		ir_attr_set_string(n, "weights", "bf16");
	}
}

int pass_precision(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	if (o->weights != WEIGHTS_BF16)
		return 0;
	infer_set done;
	infer_set_init(&done);
	round_bf16(g, &done);
	infer_set_free(&done);
	return 0;
}
