/* pass_plan.c: workspace slots for temporaries, by liveness.
 *
 * requires: every value has dtype and shape (pass_infer), the node list is in
 *           its final order (after pass_fuse), pass_schedule's decisions;
 *           nothing may be added later.
 * produces: value->slot for every temporary of the root graph and of
 *           recurrence bodies that needs storage; views share their source's
 *           slot; graph inputs, outputs, weights, constants keep slot -1 (the
 *           emitter writes outputs straight into the caller's buffers), and
 *           so do values a fused loop keeps in locals (fuse_needs_buffer)
 *           and column views inside bodies (ir_is_column_view), body
 *           values written straight into a recurrence output or a Concat
 *           (ir_out_direct, ir_concat_in_place); an input
 *           projection its recurrence computes step by step (x_proj) has a
 *           slot of one step's rows ("step") or none ("inline"): see
 *           ir_step_storage.
 * breaks:   nothing.
 *
 * The workspace is one allocation per model whose size depends on the
 * dimension symbols, so a slot has a dtype and an element count that is a
 * monomial over the symbols (ir_dim).  A value may take a free slot of the
 * same dtype whose count is the same monomial, or -- when both counts are
 * plain constants -- any free constant-sized slot of its dtype (the slot grows
 * to the larger).  Equal monomials keep the size of every slot a monomial, so
 * the emitted size computation stays a sum of products (ggml-alloc's planner
 * is the model, without the offset packing, which would need symbolic maxima).
 *
 * Lifetime of a root value: from its producer to its last use, where a use
 * through a view or from inside a recurrence body counts at the node that
 * holds it, and so does a use by an input projection that a recurrence
 * computes in its steps (x_proj).  A node's outputs never share storage with its inputs: slots are
 * freed after the node runs (after the last node of a fused group, for the
 * inputs of a group, which runs as one loop).  Temporaries of a recurrence body live while the
 * recurrence runs.
 */
#include "passes.h"
#include "util.h"

#include <string.h>

typedef struct slot {
	ir_dtype dt;
	ir_dim numel;           /* element count: a monomial, or the largest constant */
	const ir_value *owner;  /* value stored there now; NULL when free */
	int until;              /* root node index after which the owner is dead */
} slot;

typedef struct plan {
	ir_graph *g;            /* root */
	diag *D;
	int *last;              /* [g->nvalues] last root node index using each root value */
	slot *slots;
	int nslots, capslots;
} plan;

/* Records that root node `at` reads v (directly or through views). */
static void use(plan *P, const ir_value *v, int at)
{
	v = ir_storage(v);
	if (v && v->graph == P->g && P->last[v->id] < at)
		P->last[v->id] = at;
}

/* Uses made by a body: its nodes' inputs and its outputs, recursively. */
static void body_uses(plan *P, const ir_graph *b, int at)
{
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				use(P, n->in[k], at);
		if (n->body)
			body_uses(P, n->body, at);
	}
	for (int k = 0; k < b->noutputs; k++)
		use(P, b->outputs[k], at);
}

/* Temporaries need storage unless they are views, graph outputs (the
 * caller's buffers) or what a graph output is a view of, values pass_fuse
 * keeps in a loop's locals, or column views of a body (offsets into their
 * source). */
static int needs_slot(const ir_value *v)
{
	if (!v || v->kind != VAL_TEMP || (v->is_output && !v->graph->parent) ||
	    ir_storage(v) != v || ir_dtype_size(v->dtype) == 0 || ir_output_backing(v))
		return 0;
	if (v->graph->parent && v->producer && ir_is_column_view(v->producer))
		return 0;
	int64_t col;
	if (v->graph->parent && (ir_out_direct(v) >= 0 || ir_concat_in_place(v, &col)))
		return 0;       /* its producer writes an output's or a Concat's storage */
	ir_dim n;
	if (ir_step_storage(v, &n) == 0)
		return 0;       /* an input projection the fused loops compute */
	return fuse_needs_buffer(v) || ir_has_views(v);
}

static int fits(const slot *s, const ir_value *v, ir_dim n)
{
	if (s->owner || s->dt != v->dtype)
		return 0;
	return ir_dim_eq(s->numel, n) || (ir_dim_is_const(s->numel) && ir_dim_is_const(n));
}

static void assign(plan *P, ir_value *v, int until, ir_node *at)
{
	if (v->shape.rank < 0 || !ir_dim_known(ir_shape_numel(&v->shape))) {
		diag_node(P->D, at, "internal: value '%s' reached the memory planner without a shape",
			  v->name);
		return;
	}
	ir_dim n = ir_slot_numel(v);
	int best = -1;
	for (int s = 0; s < P->nslots; s++)
		if (fits(&P->slots[s], v, n)) {
			best = s;
			if (ir_dim_eq(P->slots[s].numel, n))
				break;  /* an exact fit wastes nothing */
		}
	if (best < 0) {
		if (P->nslots == P->capslots) {
			int cap = P->capslots ? 2 * P->capslots : 16;
			P->slots = arena_grow(P->g->A, P->slots, (size_t)P->nslots, (size_t)cap,
					      sizeof *P->slots);
			P->capslots = cap;
		}
		best = P->nslots++;
		P->slots[best].dt = v->dtype;
		P->slots[best].numel = n;
	} else if (ir_dim_is_const(n) && n.k > P->slots[best].numel.k) {
		P->slots[best].numel = n;
	}
	P->slots[best].owner = v;
	P->slots[best].until = until;
	v->slot = best;
}

/* Temporaries of a body (and nested bodies) live while root node `at` runs. */
static void assign_body(plan *P, ir_graph *b, int at, ir_node *n)
{
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *bn = b->nodes[i];
		for (int k = 0; k < bn->nout; k++)
			if (needs_slot(bn->out[k]))
				assign(P, bn->out[k], at, bn);
		if (bn->body)
			assign_body(P, bn->body, at, n);
	}
}

/* Views take the slot of the value they alias (for comments and readers). */
static void alias_views(ir_graph *g)
{
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		const ir_value *s = ir_storage(v);
		if (s != v)
			v->slot = s->slot;
	}
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			alias_views(g->nodes[i]->body);
}

static void clear_slots(ir_graph *g)
{
	for (int i = 0; i < g->nvalues; i++)
		g->values[i]->slot = -1;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			clear_slots(g->nodes[i]->body);
}

int pass_plan(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	ir_recount(g);
	clear_slots(g);
	plan P = {.g = g, .D = D};
	P.last = arena_array(g->A, (size_t)(g->nvalues ? g->nvalues : 1), sizeof *P.last);
	for (int i = 0; i < g->nvalues; i++)
		P.last[i] = -1;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		/* A fused group is one loop: what any of its nodes reads stays live
		 * to the group's end, so no output of the group overwrites it. */
		int at = i;
		while (n->group && at + 1 < g->nnodes && g->nodes[at + 1]->group == n->group)
			at++;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				use(&P, n->in[k], at);
		if (n->body)
			body_uses(&P, n->body, i);
		/* an input projection this recurrence computes in its steps
		 * (x_proj, pass_schedule) reads its operands there */
		ir_attr *xp = n->op == OP_RECURRENCE ? ir_attr_find(n, "x_proj") : NULL;
		for (int k = 0; xp && xp->kind == ATTR_STRINGS && k < xp->n && k < n->nin; k++) {
			const ir_value *y = n->in[k] ? ir_storage(n->in[k]) : NULL;
			const ir_node *gm = y ? y->producer : NULL;
			if (!xp->strings[k] || !strcmp(xp->strings[k], "before") || !gm)
				continue;
			for (int j = 0; j < gm->nin; j++)
				if (gm->in[j])
					use(&P, gm->in[j], i);
		}
	}

	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nout; k++) {
			ir_value *v = n->out[k];
			if (needs_slot(v))
				assign(&P, v, P.last[v->id] > i ? P.last[v->id] : i, n);
		}
		if (n->body)
			assign_body(&P, n->body, i, n);
		for (int s = 0; s < P.nslots; s++)
			if (P.slots[s].owner && P.slots[s].until <= i)
				P.slots[s].owner = NULL;
	}
	alias_views(g);
	return D->nerrors;
}
