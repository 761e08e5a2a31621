/* pass_onestep.c: chains of one-step ONNX LSTM / GRU / RNN nodes written as
 * their steps.
 *
 * requires: pass_infer (shapes known; the Identity copies of a shared
 *           initializer already read as the initializer itself).
 * produces: an ONNX LSTM, GRU or RNN node over a sequence of one step
 *           (constant 1 on X's time axis, no sequence_lens) whose initial
 *           state is the final state of another such node of the same op,
 *           or whose final state is one, is gone: each is lowered as
 *           pass_lower_rnn lowers it (the parts of its weights made once
 *           for all of them, lower_rnn_parts) and its recurrence of one
 *           step is written as the step's nodes (ir_inline_step).  What
 *           stays is what a module called once per step of a Python loop
 *           computes, step by step, as a hand-written cell's trace would
 *           read: pass_reroll rolls it into one recurrence over the steps
 *           like any other traced loop (or says why not).  What only the
 *           unread outputs of a step needed is removed.
 * breaks:   nothing.  A one-step node alone (a streaming model's chunk of
 *           one frame) is left to pass_lower_rnn: there is no loop to roll.
 *
 * The state may pass through views between the calls (a Squeeze, a
 * Reshape, an Identity: `h.detach()`, `h.view(...)`): they are looked
 * through when the chain is found, and stay in the graph.
 */
#include "ir_build.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* An ONNX RNN node over one step, with nothing that one step of its
 * recurrence would not compute the same way. */
static int one_step(const ir_node *n)
{
	if (!n || ir_ops[n->op].kind != OPK_RNN || n->nin < 1 || !n->in[0] || n->in[0]->shape.rank != 3)
		return 0;
	int64_t layout = ir_attr_int(n, "layout", 0);
	if (layout != 0 && layout != 1)
		return 0;
	ir_dim T = n->in[0]->shape.d[layout];
	return ir_dim_is_const(T) && T.k == 1 && !(n->nin > 4 && n->in[4]);
}

/* The node whose final state (Y_h or Y_c) v is, seen through views; NULL
 * when v is not one. */
static const ir_node *state_source(const ir_value *v)
{
	for (int depth = 0; v && v->producer && depth < 8; depth++) {
		const ir_node *p = v->producer;
		if (ir_ops[p->op].kind == OPK_RNN)
			return (p->nout > 1 && p->out[1] == v) || (p->nout > 2 && p->out[2] == v) ? p : NULL;
		if (p->op != OP_IDENTITY && p->op != OP_RESHAPE && p->op != OP_SQUEEZE && p->op != OP_UNSQUEEZE)
			return NULL;
		v = p->in[0];
	}
	return NULL;
}

/* Marks (chain[i]) the one-step nodes of g that are links of a chain: an
 * initial state of one is a final state of another of the same op. */
static int find_chains(ir_graph *g, char *chain)
{
	int found = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (!one_step(n))
			continue;
		for (int k = 5; k <= 6 && k < n->nin; k++) {
			const ir_node *p = n->in[k] ? state_source(n->in[k]) : NULL;
			if (p && p->op == n->op && one_step(p) && p->graph == g) {
				chain[n->id] = chain[p->id] = 1;
				found = 1;
			}
		}
	}
	return found;
}

/* Lowers chain node src (appending to g) and writes its recurrences of
 * one step as their steps, in their place. */
static int write_steps(ir_graph *g, diag *D, ir_node *src, rnn_parts *parts)
{
	int mark = g->nnodes;
	int errors = lower_rnn_node(g, D, src, parts);
	if (errors)
		return errors;
	int n = g->nnodes - mark;
	ir_node **made = arena_array(g->A, (size_t)(n ? n : 1), sizeof *made);
	memcpy(made, g->nodes + mark, (size_t)n * sizeof *made);
	g->nnodes = mark;
	ir_build B = {.origin = arena_printf(g->A, "%s '%s', one step", ir_op_name(src->op), src->name), .D = D,
		      .blame = src, .what = "step of the one-step", .errors = &errors};
	for (int i = 0; i < n; i++) {
		if (made[i]->op == OP_RECURRENCE && ir_inline_step_ok(g, made[i]))
			ir_inline_step(&B, g, made[i]);
		else
			ir_append(g, made[i]);
	}
	return errors;
}

typedef struct steps_of {
	diag *D;
	rnn_parts *parts;
	const char *chain;      /* by node id (the ids of find_chains) */
} steps_of;

static int chain_steps(ir_graph *g, ir_node *n, void *ctx)
{
	steps_of *C = ctx;
	return C->chain[n->id] ? write_steps(g, C->D, n, C->parts) : -1;
}

int pass_onestep(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	ir_recount(g);
	char *chain = arena_alloc(g->A, (size_t)g->nnodes + 1);
	memset(chain, 0, (size_t)g->nnodes + 1);
	if (!find_chains(g, chain))
		return 0;
	/* a chain node's steps take its place */
	steps_of C = {D, lower_rnn_parts(g->A), chain};
	int errors = ir_rewrite_nodes(g, chain_steps, &C);
	/* what only a step's unread outputs needed (Y of a call whose Y_h is
	 * all the next call reads) goes */
	ir_recount(g);
	if (!errors)
		ir_drop_dead(g, IR_DEAD_TEMPS);
	return errors;
}
