/* ir_build.c: the IR rewrite toolkit (see ir_build.h): replacing a value,
 * dead-code removal, building and cloning nodes. */
#include "ir_build.h"
#include "infer.h"
#include "util.h"

#include <string.h>

/* ---- replacing a value ---- */

int ir_replace_uses(ir_graph *g, const ir_value *from, ir_value *to, const ir_node *except, unsigned flags)
{
	int cnt = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n != except)
			for (int k = 0; k < n->nin; k++)
				if (n->in[k] == from) {
					n->in[k] = to;
					cnt++;
				}
		for (int k = 0; k < n->nout; k++)       /* pass_grad's links name what stands for from */
			if (n->out[k] && (n->out[k]->grad_of == from || n->out[k]->recomputes == from)) {
				if (n->out[k]->grad_of == from)
					n->out[k]->grad_of = to;
				if (n->out[k]->recomputes == from)
					n->out[k]->recomputes = to;
			}
		if (n->body && (flags & IR_USES_NESTED))
			cnt += ir_replace_uses(n->body, from, to, except, flags);
		for (int a = 0; a < n->nattrs && (flags & IR_USES_GRAPHS); a++)
			if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g)
				cnt += ir_replace_uses(n->attrs[a].g, from, to, except, flags);
	}
	if (flags & IR_USES_OUTPUTS)
		for (int k = 0; k < g->noutputs; k++)
			if (g->outputs[k] == from) {
				g->outputs[k] = to;
				cnt++;
			}
	return cnt;
}

/* ---- dead code ---- */

/* v is a value of g whose id is its position in g's list (the side tables
 * below are indexed by id). */
static int owns(const ir_graph *g, const ir_value *v)
{
	return v && v->graph == g && v->id >= 0 && v->id < g->nvalues && g->values[v->id] == v;
}

/* The values of g that body b (nested in a node of g) reads, its nodes'
 * inputs and its outputs, and the bodies in it, marked needed. */
static void need_nested(const ir_graph *g, const ir_graph *b, char *need);

/* What node n's graphs read of g: its body's, and an If's branches' (graph
 * attributes, read by name from the graphs around them). */
static void need_graphs(const ir_graph *g, const ir_node *n, char *need)
{
	if (n->body)
		need_nested(g, n->body, need);
	for (int a = 0; a < n->nattrs; a++)
		if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g)
			need_nested(g, n->attrs[a].g, need);
}

static void need_nested(const ir_graph *g, const ir_graph *b, char *need)
{
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *n = b->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (owns(g, n->in[k]))
				need[n->in[k]->id] = 1;
		need_graphs(g, n, need);
	}
	for (int k = 0; k < b->noutputs; k++)
		if (owns(g, b->outputs[k]))
			need[b->outputs[k]->id] = 1;
}

/* Flags per value id of g: its output list. */
static char *output_flags(ir_graph *g)
{
	char *o = arena_alloc(g->A, (size_t)g->nvalues + 1);
	for (int k = 0; k < g->noutputs; k++)
		if (owns(g, g->outputs[k]))
			o[g->outputs[k]->id] = 1;
	return o;
}

void ir_live(ir_graph *g, ir_value *const *roots, int nroots, unsigned flags, char **node_live, char **needed)
{
	char *need = output_flags(g);
	char *live = arena_alloc(g->A, (size_t)g->nnodes + 1);
	for (int k = 0; k < nroots; k++)
		if (owns(g, roots[k]))
			need[roots[k]->id] = 1;
	/* backwards: in topological order one sweep settles it; another one
	 * confirms (or catches a node read before it is made) */
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = g->nnodes - 1; i >= 0; i--) {
			const ir_node *n = g->nodes[i];
			if (live[i])
				continue;
			int l = (n->body && !(flags & IR_DEAD_BODIES)) || (n->nout == 0 && (flags & IR_DEAD_SINKS));
			for (int k = 0; k < n->nout && !l; k++)
				l = owns(g, n->out[k]) && need[n->out[k]->id];
			if (!l)
				continue;
			live[i] = 1;
			changed = 1;
			for (int k = 0; k < n->nin; k++)
				if (owns(g, n->in[k]))
					need[n->in[k]->id] = 1;
			need_graphs(g, n, need);
		}
	}
	if (node_live)
		*node_live = live;
	if (needed)
		*needed = need;
}

/* Takes n's reads off the use counts as ir_recount counts them (a body's
 * reads and outputs included). */
static void unread(ir_node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k])
			n->in[k]->nuses--;
	if (n->body) {
		for (int i = 0; i < n->body->nnodes; i++)
			unread(n->body->nodes[i]);
		for (int k = 0; k < n->body->noutputs; k++)
			n->body->outputs[k]->nuses--;
	}
}

/* Whether v is an output of g, by its flag or g's list (isout: per id). */
static int counted_output(const ir_graph *g, const ir_value *v, const char *isout)
{
	if (v->is_output || (owns(g, v) && isout[v->id]))
		return 1;
	if (owns(g, v))
		return 0;
	for (int k = 0; k < g->noutputs; k++)
		if (g->outputs[k] == v)
			return 1;
	return 0;
}

static int counted_live(const ir_graph *g, const ir_node *n, unsigned flags, const char *isout)
{
	if ((n->body && !(flags & IR_DEAD_BODIES)) || (n->nout == 0 && (flags & IR_DEAD_SINKS)))
		return 1;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && (n->out[k]->nuses > 0 || counted_output(g, n->out[k], isout)))
			return 1;
	return 0;
}

static void counted_drop(ir_node *n)
{
	unread(n);
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && n->out[k]->producer == n)
			n->out[k]->producer = NULL;
}

/* The values of g that nothing needs leave its list (IR_DEAD_TEMPS,
 * IR_DEAD_VALUES), g's nodes being those that stay; need: LOCAL's flags
 * per id, NULL when counted. */
static void drop_values(ir_graph *g, unsigned flags, const char *need, const char *isout)
{
	char *made = arena_alloc(g->A, (size_t)g->nvalues + 1);
	char *held = arena_alloc(g->A, (size_t)g->nvalues + 1);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nout; k++)
			if (owns(g, n->out[k]))
				made[n->out[k]->id] = 1;
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_TENSOR && owns(g, n->attrs[a].t))
				held[n->attrs[a].t->id] = 1;
	}
	for (int k = 0; k < g->ninputs; k++)
		if (owns(g, g->inputs[k]))
			held[g->inputs[k]->id] = 1;
	int m = 0;
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		int keep = v->id != i;  /* not indexed: kept as it is */
		if (!keep) {
			int read = need ? need[i] : v->nuses > 0 || counted_output(g, v, isout);
			if (flags & IR_DEAD_VALUES)
				keep = read || made[i] || held[i] || v->kind == VAL_INPUT;
			else
				keep = v->kind != VAL_TEMP || read || made[i];
		}
		if (keep)
			g->values[m++] = v;
	}
	g->nvalues = m;
	for (int i = 0; i < m; i++)
		g->values[i]->id = i;
}

int ir_drop_dead(ir_graph *g, unsigned flags)
{
	int n0 = g->nnodes;
	char *live, *need = NULL, *isout = output_flags(g);
	if (flags & IR_DEAD_VALUES_ONLY) {
		live = arena_alloc(g->A, (size_t)n0 + 1);
		memset(live, 1, (size_t)n0);
		if (flags & IR_DEAD_LOCAL) {
			need = output_flags(g);
			for (int i = 0; i < n0; i++) {
				const ir_node *n = g->nodes[i];
				for (int k = 0; k < n->nin; k++)
					if (owns(g, n->in[k]))
						need[n->in[k]->id] = 1;
				need_graphs(g, n, need);
			}
		}
	} else if (flags & IR_DEAD_LOCAL) {
		ir_live(g, NULL, 0, flags, &live, &need);
	} else if (flags & IR_DEAD_ONCE) {
		/* decided on the counts as they are, then taken off them */
		live = arena_alloc(g->A, (size_t)n0 + 1);
		for (int i = 0; i < n0; i++)
			live[i] = (char)counted_live(g, g->nodes[i], flags, isout);
		for (int i = 0; i < n0; i++)
			if (!live[i])
				counted_drop(g->nodes[i]);
	} else {
		live = arena_alloc(g->A, (size_t)n0 + 1);
		memset(live, 1, (size_t)n0);
		for (int changed = 1; changed;) {
			changed = 0;
			for (int i = n0 - 1; i >= 0; i--)
				if (live[i] && !counted_live(g, g->nodes[i], flags, isout)) {
					live[i] = 0;
					counted_drop(g->nodes[i]);
					changed = 1;
				}
		}
	}
	int m = 0;
	for (int i = 0; i < n0; i++)
		if (live[i])
			g->nodes[m++] = g->nodes[i];
	for (int i = 0; i < m; i++)
		g->nodes[i]->id = i;
	g->nnodes = m;
	if (flags & (IR_DEAD_TEMPS | IR_DEAD_VALUES))
		drop_values(g, flags, need, isout);
	return n0 - m;
}

/* ---- building nodes ---- */

ir_node *ir_build_node(const ir_build *B, ir_graph *g, ir_op op, int nin, ir_value *const *in, int nout)
{
	ir_node *n = ir_node_new(g, op, NULL, nin, nout);
	for (int i = 0; in && i < nin; i++)
		n->in[i] = in[i];
	n->origin = B->origin;
	if (B->opset)
		n->opset = B->opset;
	return n;
}

ir_value *ir_build_out(const ir_build *B, ir_node *n, int k, ir_dtype dt)
{
	ir_graph *g = n->graph;
	ir_value *v = ir_value_new(g, B->out_base ? ir_unique_name(g, B->out_base) : NULL, VAL_TEMP, dt);
	ASSERT(k >= 0 && k < n->nout);
	n->out[k] = v;
	v->producer = n;
	return v;
}

ir_value *ir_build_done(const ir_build *B, ir_node *n, ir_value *out)
{
	if (out)
		n->out[0] = out;
	else if (!n->out[0])
		ir_build_out(B, n, 0, DT_F32);
	if (B->origin)
		n->origin = B->origin;
	ir_append(n->graph, n);
	if (B->D && (infer_node(n->graph, n, B->D) != 0 || n->out[0]->shape.rank < 0)) {
		diag_node(B->D, B->blame ? B->blame : n, "internal error: cannot infer the shape of the %s %s",
			  B->what ? B->what : "new node", ir_op_name(n->op));
		if (B->errors)
			(*B->errors)++;
	}
	return n->out[0];
}

ir_value *ir_build_op(const ir_build *B, ir_graph *g, ir_op op, int nin, ir_value *const *in)
{
	return ir_build_done(B, ir_build_node(B, g, op, nin, in, 1), NULL);
}

/* ---- cloning ---- */

ir_node *ir_clone_node(ir_graph *g, const ir_node *n, const char *name, int nout, unsigned flags)
{
	ir_node *c = ir_node_new(g, n->op, name, n->nin, nout < 0 ? n->nout : nout);
	if (flags & IR_CLONE_SOURCE) {
		c->op_type = n->op_type;
		c->domain = n->domain;
		c->opset = n->opset;
	}
	if (n->nin)
		memcpy(c->in, n->in, (size_t)n->nin * sizeof *c->in);
	c->origin = n->origin;
	c->rec_source = n->rec_source;  /* what kind of recurrence it is: a fact of the node */
	c->nattrs = n->nattrs;
	if (flags & IR_CLONE_SHARE_ATTRS) {
		c->attrs = n->attrs;
	} else {
		c->attrs = arena_array(g->A, (size_t)(n->nattrs ? n->nattrs : 1), sizeof *c->attrs);
		if (n->nattrs)
			memcpy(c->attrs, n->attrs, (size_t)n->nattrs * sizeof *c->attrs);
	}
	return c;
}

/* ---- rewriting nodes in place ---- */

int ir_rewrite_nodes(ir_graph *g, int (*rewrite)(ir_graph *g, ir_node *n, void *ctx), void *ctx)
{
	int errors = 0, n = g->nnodes;
	ir_node **old = arena_array(g->A, (size_t)(n ? n : 1), sizeof *old);
	memcpy(old, g->nodes, (size_t)n * sizeof *old);
	g->nnodes = 0;
	for (int i = 0; i < n; i++) {
		int r = rewrite(g, old[i], ctx);
		if (r < 0)
			ir_append(g, old[i]);
		else
			errors += r;
	}
	return errors;
}

/* ---- a recurrence of one step as its step ---- */

int ir_inline_step_ok(const ir_graph *g, const ir_node *r)
{
	if (r->op != OP_RECURRENCE || !r->body || r->graph != g || ir_attr_int(r, "has_lens", 0))
		return 0;
	int nseq = (int)ir_attr_int(r, "n_seq", 0), nstate = (int)ir_attr_int(r, "n_state", 0);
	const ir_attr *ax = ir_attr_find(r, "seq_axis");
	if (nseq + nstate > r->nin || (nseq && (!ax || ax->n < nseq)))
		return 0;
	for (int k = 0; k < nseq; k++) {
		const ir_value *x = r->in[k];
		int64_t a = ax->ints[k];
		if (!x || a < 0 || a >= x->shape.rank || !ir_dim_is_const(x->shape.d[a]) || x->shape.d[a].k != 1)
			return 0;
	}
	for (int j = 0; j < nstate; j++) {
		const ir_value *s = nseq + j < r->body->ninputs ? r->body->inputs[nseq + j] : NULL;
		if (!s || (!r->in[nseq + j] && (s->dtype != DT_F32 || s->shape.rank < 0)))
			return 0;
	}
	for (int i = 0; i < r->body->nnodes; i++)
		if (r->body->nodes[i]->body)
			return 0;
	return 1;
}

/* body value -> the value of g that stands for it */
typedef struct inline_map {
	int n, cap;
	const ir_value **from;
	ir_value **to;
} inline_map;

static void map_put(ir_graph *g, inline_map *M, const ir_value *from, ir_value *to)
{
	if (M->n == M->cap) {
		int cap = M->cap ? 2 * M->cap : 64;
		M->from = arena_grow(g->A, M->from, (size_t)M->n, (size_t)cap, sizeof *M->from);
		M->to = arena_grow(g->A, M->to, (size_t)M->n, (size_t)cap, sizeof *M->to);
		M->cap = cap;
	}
	M->from[M->n] = from;
	M->to[M->n++] = to;
}

/* What a body node's input v reads in g: a mapped body value, a copy of a
 * constant the body owns, or a value of an enclosing graph as it is. */
static ir_value *map_get(ir_graph *g, inline_map *M, const ir_graph *body, ir_value *v)
{
	if (!v)
		return NULL;
	for (int i = 0; i < M->n; i++)
		if (M->from[i] == v)
			return M->to[i];
	if (v->graph != body)
		return v;
	ASSERT(v->kind == VAL_CONST || v->kind == VAL_WEIGHT);  /* temporaries are mapped as made */
	ir_value *c = ir_const_new(g, NULL, v->dtype, &v->shape, v->data);
	c->kind = v->kind;
	if (v->sym) {
		c->sym = v->sym;
		c->data = NULL;
	}
	c->origin = v->origin;
	c->narrow = v->narrow;
	map_put(g, M, v, c);
	return c;
}

/* out := op(x, axes [axis]) written into the existing value out (Squeeze,
 * Unsqueeze) or a new one (out NULL). */
static ir_value *axis_op(const ir_build *B, ir_graph *g, ir_op op, ir_value *x, int64_t axis, ir_value *out)
{
	ir_value *in[2] = {x, ir_const_i64(g, NULL, 1, &axis)};
	ir_node *n = ir_build_node(B, g, op, 2, in, 1);
	if (out)
		out->producer = n;
	return ir_build_done(B, n, out);
}

/* An initial state not given: f32 zeros of shape s (its dims symbolic
 * where the state's are: a ConstantOfShape of a symbolic shape). */
static ir_value *zeros_of(const ir_build *B, ir_graph *g, const ir_shape *s)
{
	ir_shape s1 = {.rank = 1};
	s1.d[0] = ir_dim_const(s->rank);
	ir_value *shape = ir_const_new(g, NULL, DT_I64, &s1, NULL);
	shape->data = NULL;
	shape->sym = arena_array(g->A, (size_t)(s->rank ? s->rank : 1), sizeof *shape->sym);
	for (int i = 0; i < s->rank; i++)
		shape->sym[i] = s->d[i];
	return ir_build_op(B, g, OP_CONSTOFSHAPE, 1, &shape);
}

int ir_inline_step(const ir_build *B, ir_graph *g, ir_node *r)
{
	ASSERT(ir_inline_step_ok(g, r));
	ir_graph *body = r->body;
	int nseq = (int)ir_attr_int(r, "n_seq", 0), nstate = (int)ir_attr_int(r, "n_state", 0);
	int nout = (int)ir_attr_int(r, "n_out", 0), has_step = (int)ir_attr_int(r, "has_step", 0);
	const ir_attr *sax = ir_attr_find(r, "seq_axis"), *oax = ir_attr_find(r, "out_axis");
	int errors = 0, *count = B->errors ? B->errors : &errors, e0 = *count;
	ir_build b = *B;
	b.errors = count;
	inline_map M = {0};
	for (int k = 0; k < nseq; k++)
		map_put(g, &M, body->inputs[k], axis_op(&b, g, OP_SQUEEZE, r->in[k], sax->ints[k], NULL));
	for (int j = 0; j < nstate; j++)
		map_put(g, &M, body->inputs[nseq + j],
			r->in[nseq + j] ? r->in[nseq + j] : zeros_of(&b, g, &body->inputs[nseq + j]->shape));
	for (int k = 0; k < has_step && nseq + nstate + k < body->ninputs; k++) {
		float one = 1.0f;       /* t (the first step) and L (one step) */
		ir_shape s0 = {.rank = 0};
		map_put(g, &M, body->inputs[nseq + nstate + k], ir_const_new(g, NULL, DT_F32, &s0, &one));
	}
	for (int i = 0; i < body->nnodes; i++) {
		const ir_node *bn = body->nodes[i];
		ir_node *c = ir_clone_node(g, bn, NULL, -1, IR_CLONE_SOURCE);
		for (int k = 0; k < c->nin; k++)
			c->in[k] = map_get(g, &M, body, bn->in[k]);
		for (int k = 0; k < c->nout; k++)
			if (bn->out[k]) {
				ir_value *o = ir_build_out(&b, c, k, bn->out[k]->dtype);
				o->origin = bn->out[k]->origin;
				map_put(g, &M, bn->out[k], o);
			}
		ir_build_done(&b, c, c->out[0]);
	}
	for (int j = 0; j < nstate; j++)
		if (r->out[j]) {
			ir_value *src = map_get(g, &M, body, body->outputs[j]);
			ir_node *n = ir_build_node(&b, g, OP_IDENTITY, 1, &src, 1);
			r->out[j]->producer = n;
			ir_build_done(&b, n, r->out[j]);
		}
	for (int k = 0; k < nout; k++)
		if (r->out[nstate + k])
			axis_op(&b, g, OP_UNSQUEEZE, map_get(g, &M, body, body->outputs[nstate + k]),
				oax && oax->n > k ? oax->ints[k] : 0, r->out[nstate + k]);
	return *count - e0;
}
