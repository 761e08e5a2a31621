/* size_inputs.c: graph inputs whose value is a size.
 *
 * A model may read a size from its data: a decoder's `max_len`, a Loop
 * whose trip count M is a graph input (`for i in range(int(n))` scripted)
 * or whose condition stops it at one (`i + 1 < max_len`, the export of a
 * `for` loop with a `break`: onnx_loop_cond_limit),
 * the limit of a Range (`torch.arange(int(n))`).
 * Such an input is an int64 (or int32) tensor of one element, and its value decides
 * the shapes of what follows (the Loop's scan outputs have M rows).  cellc
 * makes it a free dimension symbol, named after the input: every node
 * reads a symbolic constant [n] instead of the input (so inference sizes
 * the scan outputs [n, ...] and lowering runs the loop n times), the
 * symbol records which input it is (ir_graph.sym_value, printed as
 * `symbols n = value %n`), the caller gives it with the other dims, and
 * the generated code checks, once per call, that the input holds it.
 *
 * Which operands take a size is one table, count_operand.  A value reaches
 * one through views that keep its one int64 element (Identity, Squeeze,
 * Unsqueeze, Reshape, Flatten, Cast to int64 or int32) and arithmetic with a
 * constant (size_operand: `range(max_len * 2)`).  Other uses of the input
 * (arithmetic, a comparison) read the symbolic constant too, which the
 * compiler folds or computes from the dims.  An input bound with --bind
 * is a constant already and stays one.
 */
#include "passes.h"
#include "lower.h"
#include "ir_build.h"
#include "util.h"

#include <string.h>

/* Operand k of op takes a count: the number of iterations or rows it
 * makes, a size of its outputs.  (A Reshape or Expand target, a
 * ConstantOfShape shape, is a shape whose elements relate to other sizes
 * or may be 0, which no symbol can be: those stay constants to --bind.) */
static int count_operand(ir_op op, int k)
{
	switch (op) {
	case OP_LOOP: return k == 0;    /* M: the trip count, the scan outputs' rows */
	case OP_RANGE: return k == 1;   /* limit: torch.arange(n), of limit - start steps */
	default: return 0;
	}
}

static int is_constant(const ir_value *v)
{
	return v && (v->kind == VAL_CONST || v->kind == VAL_WEIGHT);
}

/* The operand of n that its output is computed from as a size (-1: none):
 * a view that keeps the one int64 element, or arithmetic with a constant
 * that inference folds into a size expression (2 * n, n + 1, n - 1,
 * floor(n / 2): `range(max_len * 2)`). */
static int size_operand(const ir_node *n)
{
	switch (n->op) {
	case OP_IDENTITY: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_RESHAPE: case OP_FLATTEN:
		return n->nin >= 1 ? 0 : -1;
	case OP_CAST:
		return n->nin >= 1 && (ir_attr_int(n, "to", 0) == DT_I64 || ir_attr_int(n, "to", 0) == DT_I32) ? 0 : -1;
	case OP_ADD: case OP_MUL:
		return n->nin != 2 ? -1 : is_constant(n->in[1]) ? 0 : is_constant(n->in[0]) ? 1 : -1;
	case OP_SUB: case OP_DIV:
		return n->nin == 2 && is_constant(n->in[1]) ? 0 : -1;
	default:
		return -1;
	}
}

/* The graph input v is computed from as a size, or NULL. */
static ir_value *input_of_size(ir_value *v)
{
	for (int depth = 0; v && depth < 64; depth++) {
		if (v->kind == VAL_INPUT)
			return v;
		int k = v->kind == VAL_TEMP && v->producer ? size_operand(v->producer) : -1;
		if (k < 0)
			return NULL;
		v = v->producer->in[k];
	}
	return NULL;
}

/* One int64 or int32 element (a converter's int32 count: tf2onnx's). */
static int one_int(const ir_value *v)
{
	return v->seq == IR_TENSOR && (v->dtype == DT_I64 || v->dtype == DT_I32) &&
	       ir_shape_const_numel(&v->shape) == 1 && v->shape.rank <= 1;
}

/* Input v as the free symbol of its name (ir_sym_fresh_name). */
static int promote(ir_graph *g, ir_value *v, diag *D)
{
	if (g->nsyms == IR_MAX_SYMS) {
		diag_error(D, "input '%s' is a size (a Loop's trip count), but the model has %d dimension "
			      "symbols already, which is as many as cellc keeps", v->name, IR_MAX_SYMS);
		return -1;
	}
	int s = ir_sym_add(g, ir_sym_fresh_name(g, v->name));
	g->sym_value[s] = v->name;
	ir_dim d = ir_dim_sym(s);
	ir_value *c = ir_const_dims(g, &d, 1);
	c->shape = v->shape;            /* [] or [1], as the input */
	c->dtype = v->dtype;            /* i64 or i32, as the input */
	ir_replace_uses(g, v, c, NULL, IR_USES_NESTED | IR_USES_GRAPHS);
	return 0;
}

int size_inputs(ir_graph *g, diag *D)
{
	int errs = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			if (!n->in[k] || !count_operand(n->op, k))
				continue;
			ir_value *v = input_of_size(n->in[k]);
			if (v && one_int(v))
				errs += promote(g, v, D) != 0;
		}
		/* `for i in range(max_len): ... break`: M is the largest int64 and
		 * the condition says `i + 1 < max_len` (onnx_loop_cond_limit) */
		int64_t off;
		const ir_value *lim = n->op == OP_LOOP ? onnx_loop_cond_limit(n, &off) : NULL;
		ir_value *v = lim ? input_of_size((ir_value *)lim) : NULL;
		if (v && one_int(v))
			errs += promote(g, v, D) != 0;
	}
	return errs;
}
