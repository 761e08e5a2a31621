/* ir_layout.c: what the passes leave in the IR about storage and the kinds
 * of body nodes, for the passes after them and the emitters alike (ir.h,
 * "layout").  Nothing here decides: each function reads the IR as pass_fuse,
 * pass_plan and pass_schedule left it.
 */
#include "ir.h"

#include <string.h>

static int is_view_op(ir_op op)
{
	return op == OP_RESHAPE || op == OP_SQUEEZE || op == OP_UNSQUEEZE || op == OP_FLATTEN ||
	       op == OP_IDENTITY;
}

const ir_value *ir_storage(const ir_value *v)
{
	/* A graph output must land in the caller's buffer, so it is never a view;
	 * the emitter copies into it instead. */
	while (v && v->kind == VAL_TEMP && !v->is_output && v->producer &&
	       is_view_op(v->producer->op) && v->producer->in[0] &&
	       v->producer->in[0]->dtype == v->dtype)
		v = v->producer->in[0];
	return v;
}

const ir_value *ir_output_backing(const ir_value *v)
{
	if (!v || v->kind != VAL_TEMP || v->is_output || v->graph->parent || v->graph->train ||
	    ir_storage(v) != v)
		return NULL;
	const ir_graph *g = v->graph;
	for (int k = 0; k < g->noutputs; k++) {
		const ir_value *o = g->outputs[k];
		const ir_node *p = o->producer;
		if (o->kind == VAL_TEMP && o->graph == g && p && is_view_op(p->op) && p->in[0] &&
		    p->in[0]->dtype == o->dtype && o->dtype == v->dtype && ir_storage(p->in[0]) == v)
			return o;
	}
	return NULL;
}

/* n is Slice(x, [st], [en], [axis], [1]) on the last axis of a 2-D x with a
 * constant number of columns; *st, *en get the column range. */
int ir_last_axis_slice(const ir_node *n, int64_t *st, int64_t *en)
{
	if (n->op != OP_SLICE || n->nin < 4 || !n->in[0] || n->in[0]->shape.rank != 2 || !n->out[0])
		return 0;
	for (int k = 1; k < 4; k++)
		if (!n->in[k] || !ir_value_is_const(n->in[k]) || ir_shape_const_numel(&n->in[k]->shape) != 1)
			return 0;
	if (n->nin > 4 && n->in[4] &&
	    (!ir_value_is_const(n->in[4]) || ir_shape_const_numel(&n->in[4]->shape) != 1 ||
	     ir_const_int(n->in[4], 0) != 1))
		return 0;
	int64_t ax = ir_const_int(n->in[3], 0);
	if (ax != 1 && ax != -1)
		return 0;
	ir_dim cols = n->in[0]->shape.d[1];
	if (!ir_dim_is_const(cols))
		return 0;
	int64_t s = ir_const_int(n->in[1], 0), e = ir_const_int(n->in[2], 0);
	if (s < 0 || e > cols.k || s >= e)
		return 0;
	*st = s;
	*en = e;
	return 1;
}

int ir_is_column_view(const ir_node *n)
{
	int64_t st, en;
	if (!ir_last_axis_slice(n, &st, &en))
		return 0;
	const ir_value *src = n->in[0];
	if (src->kind == VAL_STEP)
		return 1;
	return src->producer && (src->producer->op == OP_GEMM || ir_is_column_view(src->producer));
}

ir_dim ir_cols_of(const ir_value *v)
{
	return v->shape.rank >= 1 ? v->shape.d[v->shape.rank - 1] : ir_dim_const(1);
}

int ir_is_fused_elem(const ir_node *n)
{
	return n->group > 0 && ir_ops[n->op].kind == OPK_ELEM;
}

int ir_is_step_scalar(const ir_node *n)
{
	return n->graph && n->graph->parent && ir_is_fused_elem(n) && n->nout == 1 && n->out[0] &&
	       n->out[0]->shape.rank == 0 && n->out[0]->dtype == DT_F32;
}

int ir_is_generic_step_node(const ir_node *n)
{
	if (n->op == OP_GEMM || ir_is_column_view(n))
		return 0;
	return !ir_is_fused_elem(n);
}

int ir_is_scalar_node(const ir_node *n)
{
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && (n->out[k]->shape.rank != 0 || !n->out[k]->graph->parent ||
				  !ir_dtype_ctype(n->out[k]->dtype)))
			return 0;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->shape.rank != 0 && ir_shape_const_numel(&n->in[k]->shape) != 1)
			return 0;
	return 1;
}

int ir_fused_cols(const ir_graph *b, ir_dim *hc)
{
	int have = 0;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		if (ir_is_fused_elem(n) && !ir_is_step_scalar(n) && !ir_is_column_view(n)) {
			if (!have)
				*hc = ir_cols_of(n->out[0]);
			have = 1;
			if (!ir_dim_eq(ir_cols_of(n->out[0]), *hc))
				return 0;
		}
	}
	return have;
}

int ir_has_views(const ir_value *v)
{
	const ir_graph *g = v->graph;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (n->nin > 0 && n->in[0] == v && n->nout > 0 && n->out[0] && ir_storage(n->out[0]) == v)
			return 1;
	}
	return 0;
}

/* The recurrence whose body is b; NULL for the root graph. */
static const ir_node *body_owner(const ir_graph *b)
{
	for (int i = 0; b && b->parent && i < b->parent->nnodes; i++)
		if (b->parent->nodes[i]->body == b)
			return b->parent->nodes[i];
	return NULL;
}

int ir_out_direct(const ir_value *v)
{
	const ir_node *rn = body_owner(v->graph);
	ir_attr *a = rn ? ir_attr_find(rn, "out_direct") : NULL;
	if (!a || a->kind != ATTR_INTS)
		return -1;
	int64_t ns = ir_attr_int(rn, "n_state", 0);
	for (int i = 0; i < a->n; i++) {
		int64_t k = ns + a->ints[i];
		if (k >= 0 && k < v->graph->noutputs && v->graph->outputs[k] == v)
			return (int)a->ints[i];
	}
	return -1;
}

const ir_node *ir_concat_in_place(const ir_value *v, int64_t *col)
{
	const ir_graph *g = v->graph;
	for (int i = 0; g->parent && i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (n->op != OP_CONCAT || !ir_attr_int(n, "in_place", 0))
			continue;
		int64_t at = 0;
		for (int k = 0; k < n->nin && n->in[k]; k++) {
			if (n->in[k] == v) {
				*col = at;
				return n;
			}
			at += ir_cols_of(n->in[k]).k;
		}
	}
	return NULL;
}

int ir_step_storage(const ir_value *y, ir_dim *numel)
{
	const ir_node *gm = y ? y->producer : NULL;
	if (!gm || gm->op != OP_GEMM || gm->graph->parent || !ir_attr_int(gm, "per_step", 0))
		return -1;
	const ir_graph *g = gm->graph;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *rn = g->nodes[i];
		ir_attr *xp = rn->op == OP_RECURRENCE ? ir_attr_find(rn, "x_proj") : NULL;
		ir_attr *sa = rn->op == OP_RECURRENCE ? ir_attr_find(rn, "seq_axis") : NULL;
		if (!xp || xp->kind != ATTR_STRINGS || !sa || sa->kind != ATTR_INTS)
			continue;
		for (int k = 0; k < xp->n && k < sa->n && k < rn->nin; k++) {
			const ir_value *x = rn->in[k];
			if (!x || ir_storage(x) != y || !xp->strings[k] || !strcmp(xp->strings[k], "before"))
				continue;
			if (!strcmp(xp->strings[k], "inline"))
				return 0;
			int ax = (int)sa->ints[k];
			if (ax < 0 || ax >= x->shape.rank ||
			    !ir_dim_div(ir_shape_numel(&y->shape), x->shape.d[ax], numel))
				return -1;
			return 1;
		}
	}
	return -1;
}

ir_dim ir_slot_numel(const ir_value *v)
{
	ir_dim n;
	return ir_step_storage(v, &n) == 1 ? n : ir_shape_numel(&v->shape);
}

static void slot_info(const ir_graph *g, int slot, ir_dim *numel, ir_dtype *dt, int *found)
{
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		if (v->slot != slot || ir_storage(v) != v || v->kind != VAL_TEMP)
			continue;
		ir_dim n = ir_slot_numel(v);
		if (!*found || (ir_dim_is_const(n) && ir_dim_is_const(*numel) && n.k > numel->k))
			*numel = n;
		*dt = v->dtype;
		*found = 1;
	}
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			slot_info(g->nodes[i]->body, slot, numel, dt, found);
}

int ir_slot_info(const ir_graph *g, int slot, ir_dim *numel, ir_dtype *dt)
{
	int found = 0;
	slot_info(g, slot, numel, dt, &found);
	return found;
}
