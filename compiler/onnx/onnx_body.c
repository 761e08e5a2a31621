/* onnx_body.c: the body of an ONNX Loop, Scan or If branch read into an IR graph
 * nested in the enclosing one (onnx_load_body, called by onnx_node.c).
 *
 * Its inputs are VAL_STEP values whose shapes are left unknown (exporters
 * write wrong ones: PyTorch's scripted loops declare the carried states with
 * the shape of an unrelated output), and its nodes refer to enclosing values
 * by name (captures).  Names are made unique across the body and the graphs
 * around it.  Lowering the node is a pass's job: passes/lower_loop.c for Loop
 * and Scan, passes/lower_seq.c for If.
 */
#include "onnx_priv.h"
#include "util.h"

#include <string.h>


static ir_dtype type_elem(const Onnx__TypeProto *tp)
{
	while (tp) {
		switch (tp->value_case) {
		case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
			return tp->tensor_type->has_elem_type ? (ir_dtype)tp->tensor_type->elem_type : DT_UNDEF;
		case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
			tp = tp->sequence_type->elem_type;
			break;
		case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
			tp = tp->optional_type->elem_type;
			break;
		default:
			return DT_UNDEF;
		}
	}
	return DT_UNDEF;
}

/* The IR name of a body input or initializer called `name` in the file:
 * the same unless that would repeat a name of the scope or of another body
 * (IR names are unique per compilation; ONNX lets sibling bodies reuse). */
static const char *body_name(onnx_ctx *L, const char *name)
{
	const char *r = name;
	if (onnx_map_get(&L->values, name) || onnx_map_get(&L->body_names, name) ||
	    onnx_map_get(&L->outer_names, name))
		r = onnx_fresh_name(L, name);
	onnx_map_put(L->A, &L->body_names, r, (void *)r);
	return r;
}

static onnx_map map_copy(arena *A, const onnx_map *m)
{
	onnx_map c = *m;
	if (m->cap) {
		c.keys = arena_array(A, m->cap, sizeof *c.keys);
		c.vals = arena_array(A, m->cap, sizeof *c.vals);
		memcpy(c.keys, m->keys, m->cap * sizeof *c.keys);
		memcpy(c.vals, m->vals, m->cap * sizeof *c.vals);
	}
	return c;
}

ir_graph *onnx_load_body(onnx_ctx *L, ir_node *n, const Onnx__GraphProto *gp)
{
	char err[400];
	if (n->body) {
		onnx_node_error(L, n, "has more than one graph attribute");
		return NULL;
	}
	if (n->op != OP_LOOP && n->op != OP_SCAN && n->op != OP_IF && n->op != OP_SEQMAP) {
		onnx_node_error(L, n, "graph attributes are supported on Loop, Scan, If and SequenceMap only");
		return NULL;
	}
	if (gp->n_node > (size_t)1 << 24) {
		onnx_node_error(L, n, "body has %zu nodes", gp->n_node);
		return NULL;
	}
	/* the loader's per-node state, clobbered by the body's nodes */
	ir_graph *outer = L->g;
	onnx_map outer_values = L->values;
	int node_index = L->node_index, unnamed = L->node_unnamed;
	const char *out0 = L->node_out0;
	int errs0 = L->D->nerrors;

	ir_graph *b = ir_graph_new(L->A, outer, arena_printf(L->A, "%s.body", n->name));
	L->g = b;
	L->values = map_copy(L->A, &outer_values);     /* the body's scope */
	for (size_t k = 0; k < gp->n_initializer; k++) {
		const Onnx__TensorProto *t = gp->initializer[k];
		onnx_tensor ot;
		if (!t->name || !*t->name || strchr(t->name, '%')) {
			onnx_node_error(L, n, "body initializer %zu has no valid name", k);
			continue;
		}
		if (onnx_tensor_decode(L->A, L->dir, t, &ot, err, sizeof err) != 0) {
			onnx_node_error(L, n, "body initializer '%s' %s", t->name, err);
			continue;
		}
		ir_value *v = ir_value_new(b, body_name(L, t->name), VAL_CONST, ot.dtype);
		v->shape = ot.shape;
		v->data = ot.data;
		v->narrow = ot.narrow;
		v->origin = arena_strdup(L->A, t->name);
		onnx_map_put(L->A, &L->values, arena_strdup(L->A, t->name), v);
	}
	b->inputs = arena_array(L->A, gp->n_input + 1, sizeof *b->inputs);
	for (size_t k = 0; k < gp->n_input; k++) {
		const Onnx__ValueInfoProto *vi = gp->input[k];
		if (!vi->name || !*vi->name || strchr(vi->name, '%')) {
			onnx_node_error(L, n, "body input %zu has no valid name", k);
			continue;
		}
		/* shapes are re-inferred from the node's inputs: those written
		 * in the file are not trusted */
		ir_value *v = ir_value_new(b, body_name(L, vi->name), VAL_STEP, type_elem(vi->type));
		v->origin = arena_strdup(L->A, vi->name);
		v->seq = onnx_type_kind(vi->type);
		b->inputs[b->ninputs++] = v;
		onnx_map_put(L->A, &L->values, arena_strdup(L->A, vi->name), v);
	}
	int *order = arena_array(L->A, gp->n_node + 1, sizeof *order);
	if (L->D->nerrors == errs0 && onnx_topo_order(L, gp, order) == 0)
		for (size_t k = 0; k < gp->n_node; k++) {
			L->node_index = order[k];
			onnx_load_node(L, gp->node[order[k]]);
		}
	b->outputs = arena_array(L->A, gp->n_output + 1, sizeof *b->outputs);
	for (size_t k = 0; k < gp->n_output && L->D->nerrors == errs0; k++) {
		const char *name = gp->output[k]->name;
		ir_value *v = name ? onnx_map_get(&L->values, name) : NULL;
		if (!v)
			onnx_node_error(L, n, "body output '%s' is not defined in the body or around it",
					name ? name : "");
		else
			b->outputs[b->noutputs++] = v;
	}
	L->g = outer;
	L->values = outer_values;
	L->node_index = node_index;
	L->node_unnamed = unnamed;
	L->node_out0 = out0;
	return L->D->nerrors == errs0 ? b : NULL;
}
