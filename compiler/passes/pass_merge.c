/* pass_merge.c: products of a recurrence's body that share their A merged
 * into one.
 *
 * requires: pass_lower_rnn (RECURRENCE nodes with GEMM bodies); shapes
 *           known; weights constant at compile time (a --train or Gradient
 *           graph, whose weights are values of the run, is left alone).
 * produces: for every RECURRENCE, body GEMMs that read the same A (same
 *           transA, transB, alpha, beta, rows) with constant B (and a
 *           constant 1-D bias or none) become one GEMM over the concatenated
 *           weights (merged_W, merged_b: new weights of the root graph); each
 *           old product is now a Slice on the last axis of the merged one (a
 *           column offset for the emitter), made in place so that its output
 *           value and its uses stay.
 * breaks:   nothing.
 *
 * Why: one product of N1+N2+... columns streams A once and keeps the GEMM
 * kernel's panels full; the gates of a cell written as separate nn.Linear
 * layers (a trace of x @ W_i, x @ W_f, ...) become the fused gate product a
 * native LSTM has.
 */
#include "hoist.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* ---- weights ---- */

/* B as an [N, K] row block (transB=1) or [K, N] column block (transB=0). */
static int64_t gemm_n(const ir_node *n) { return n->out[0]->shape.d[1].k; }

/* ---- 1. merge products that share A ---- */

static int same_form(const ir_node *a, const ir_node *b)
{
	return ir_attr_int(a, "transA", 0) == ir_attr_int(b, "transA", 0) &&
	       ir_attr_int(a, "transB", 0) == ir_attr_int(b, "transB", 0) &&
	       ir_attr_float(a, "alpha", 1.0f) == ir_attr_float(b, "alpha", 1.0f) &&
	       ir_attr_float(a, "beta", 1.0f) == ir_attr_float(b, "beta", 1.0f) &&
	       ir_dim_eq(a->out[0]->shape.d[0], b->out[0]->shape.d[0]) &&
	       ir_dim_is_const(a->out[0]->shape.d[1]) && ir_dim_is_const(b->out[0]->shape.d[1]);
}

/* Concatenates the B matrices (and biases) of m[0..k) along N. */
static ir_value *concat_weights(ir_graph *root, ir_node **m, int k, int bias, int64_t N, int64_t K,
				const char *base)
{
	int transB = (int)ir_attr_int(m[0], "transB", 0);
	ir_shape s = {.rank = bias ? 1 : 2};
	if (bias) {
		s.d[0] = ir_dim_const(N);
	} else {
		s.d[0] = ir_dim_const(transB ? N : K);
		s.d[1] = ir_dim_const(transB ? K : N);
	}
	ir_value *w = ir_const_new(root, ir_unique_name(root, base), DT_F32, &s, NULL);
	w->kind = VAL_WEIGHT;
	float *o = w->data;
	int64_t col = 0;
	for (int i = 0; i < k; i++) {
		int64_t n = gemm_n(m[i]);
		if (bias) {
			ir_value *c = m[i]->nin > 2 ? m[i]->in[2] : NULL;
			if (c)
				memcpy(o + col, c->data, (size_t)n * sizeof(float));
			else
				memset(o + col, 0, (size_t)n * sizeof(float));
		} else if (transB) {
			memcpy(o + col * K, m[i]->in[1]->data, (size_t)(n * K) * sizeof(float));
		} else {
			const float *src = m[i]->in[1]->data;
			for (int64_t r = 0; r < K; r++)
				memcpy(o + r * N + col, src + r * n, (size_t)n * sizeof(float));
		}
		col += n;
	}
	w->origin = m[0]->origin;
	return w;
}

static int merge_shared(ir_graph *root, ir_node *rec, diag *D)
{
	ir_graph *b = rec->body;
	int errs = 0;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *first = b->nodes[i];
		if (!hoist_movable_gemm(first, b))
			continue;
		ir_node **m = arena_array(root->A, (size_t)b->nnodes, sizeof *m);
		int k = 0, any_bias = 0;
		int64_t N = 0;
		for (int j = i; j < b->nnodes; j++) {
			ir_node *n = b->nodes[j];
			if (n->op == OP_GEMM && hoist_movable_gemm(n, b) && n->in[0] == first->in[0] &&
			    same_form(n, first)) {
				m[k++] = n;
				N += gemm_n(n);
				any_bias |= n->nin > 2 && n->in[2];
			}
		}
		if (k < 2)
			continue;
		int transA = (int)ir_attr_int(first, "transA", 0);
		ir_value *A = first->in[0];
		int64_t K = transA ? A->shape.d[0].k : A->shape.d[1].k;
		if (!ir_dim_is_const(transA ? A->shape.d[0] : A->shape.d[1]))
			continue;
		ir_value *in[3] = {A, concat_weights(root, m, k, 0, N, K, "merged_W"),
				   any_bias ? concat_weights(root, m, k, 1, N, K, "merged_b") : NULL};
		ir_node *g = ir_node_new(b, OP_GEMM, NULL, any_bias ? 3 : 2, 1);
		memcpy(g->in, in, (size_t)g->nin * sizeof *in);
		g->attrs = first->attrs;
		g->nattrs = first->nattrs;
		const char *origin = first->origin;
		g->origin = origin;
		g->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
		g->out[0]->producer = g;
		errs += hoist_infer(b, g, D, rec, "pass_merge");
		/* each old product becomes a column block of the merged one, made
		 * in place so that its output value (and all its uses) stay */
		int64_t col = 0;
		for (int j = 0; j < k; j++) {
			int64_t st = col, en = col + gemm_n(m[j]), ax = 1;
			ir_node *s = m[j];
			s->op = OP_SLICE;
			s->op_type = ir_op_name(OP_SLICE);
			s->nin = 4;
			s->in = arena_array(root->A, 4, sizeof *s->in);
			s->in[0] = g->out[0];
			s->in[1] = ir_const_i64(b, NULL, 1, &st);
			s->in[2] = ir_const_i64(b, NULL, 1, &en);
			s->in[3] = ir_const_i64(b, NULL, 1, &ax);
			s->nattrs = 0;
			s->attrs = NULL;
			col = en;
		}
		/* the merged product goes where the first one was */
		ir_node **nodes = arena_array(root->A, (size_t)b->nnodes + 1, sizeof *nodes);
		memcpy(nodes, b->nodes, (size_t)i * sizeof *nodes);
		nodes[i] = g;
		memcpy(nodes + i + 1, b->nodes + i, (size_t)(b->nnodes - i) * sizeof *nodes);
		ir_set_nodes(b, nodes, b->nnodes + 1);
		i++;    /* skip the merged GEMM; m[0] (now a Slice) follows */
	}
	return errs;
}

int pass_merge(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	if (ir_weights_at_run_time(g))  /* merging concatenates weight data at compile time */
		return 0;
	int errs = 0;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_RECURRENCE && g->nodes[i]->body)
			errs += merge_shared(g, g->nodes[i], D);
	return errs;
}
