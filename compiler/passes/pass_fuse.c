/* pass_fuse.c: element-wise chains grouped into fused loops (node->group).
 *
 * requires: pass_hoist (bodies hold the per-step products and the gate math);
 *           shapes known.
 * produces: in every recurrence body, nodes reordered into stages -- the
 *           products a stage needs (GEMMs, anything not element-wise), then
 *           one group per output shape of the element-wise nodes that need
 *           nothing later -- and node->group set on them (ids from 1, unique
 *           per graph).  A Slice on the last axis of a product, a per-step
 *           input or another such Slice is a column offset, not a copy
 *           (ir_is_column_view); it takes the group of its readers when they
 *           all share one.  A node that is neither element-wise nor a
 *           product and reads such a view, or a per-step input whose rows
 *           are not contiguous (batch-first, or reversed with
 *           sequence_lens), reads a copy of it made by an element-wise
 *           v * 1 instead (copy_views_for_others), and so does a next
 *           state that is such a view (its own buffer, s<k>n).  In the root graph, consecutive element-wise f32
 *           nodes with equal output shapes get one group.  With --no-fuse
 *           every element-wise node is a group of its own.
 * breaks:   node order inside bodies (still topological).
 *
 * Emitters print a group as one loop over its iteration domain (its nodes'
 * output shape, e.g. [B, H]): a value computed in the group stays in a local
 * variable unless a node outside the group, a product, or a graph output
 * reads it (fuse_needs_buffer); a step scalar (ir_is_step_scalar) is a
 * local of the whole step, stored only for products, nodes that are not
 * fused, nested bodies and body outputs.
 */
#include "passes.h"
#include "util.h"

#include <string.h>

/* Element-wise f32 node whose domain (output shape) has at most max_rank
 * axes: bodies loop over [B, H] domains, the root graph over any shape. */
static int is_elem_rank(const ir_node *n, int max_rank)
{
	if (!(ir_ops[n->op].kind == OPK_ELEM && n->nout == 1 && n->out[0] &&
	      n->out[0]->dtype == DT_F32 && n->out[0]->shape.rank >= 0 &&
	      n->out[0]->shape.rank <= max_rank))
		return 0;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->dtype != DT_F32)
			return 0;       /* Where's bool condition: printed on its own */
	return 1;
}

static int is_elem(const ir_node *n)
{
	return is_elem_rank(n, n->graph && n->graph->parent ? 2 : IR_MAX_RANK);
}

int fuse_needs_buffer(const ir_value *v)
{
	const ir_node *p = v->producer;
	if (!p || p->group == 0 || ir_is_column_view(p))
		return 1;
	if (v->is_output)
		return 1;
	const ir_graph *g = p->graph;
	for (int k = 0; k < g->noutputs && g->parent; k++)
		if (g->outputs[k] == v)
			return 1;
	/* a step scalar is a local of the whole step: only the nodes not
	 * printed as element-wise code (products, generic nodes) read memory */
	int scalar = ir_is_step_scalar(p);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] == v && (scalar ? !ir_is_fused_elem(n)
					      : n->group != p->group || ir_is_column_view(n) || !is_elem(n)))
				return 1;
		/* nested bodies read it at run time from memory */
		if (n->body && n->body != g)
			for (int j = 0; j < n->body->nnodes; j++)
				for (int k = 0; k < n->body->nodes[j]->nin; k++)
					if (n->body->nodes[j]->in[k] == v)
						return 1;
	}
	return 0;
}

/* ---- bodies ---- */

/* Order of classes inside a stage: products first, then rank-0 element-wise
 * nodes (step schedules, printed once per step before the loops that read
 * them), column views, the element-wise loops. */
enum { CLS_OTHER, CLS_SCALAR, CLS_VIEW, CLS_ELEM };

static int is_elem_cls(int cls) { return cls == CLS_ELEM || cls == CLS_SCALAR; }

typedef struct fnode {
	ir_node *n;
	int stage, cls, grp, pos;
} fnode;

static int cmp_fnode(const void *a, const void *b)
{
	const fnode *x = a, *y = b;
	if (x->stage != y->stage)
		return x->stage - y->stage;
	if (x->cls != y->cls)
		return x->cls - y->cls;
	if (x->grp != y->grp)
		return x->grp - y->grp;
	return x->pos - y->pos;
}

/* Whether v is a per-step input of rec's body whose rows are not
 * contiguous in the sequence: a batch-first [B, T, ..] sequence's step t
 * is every T-th row, and a reverse recurrence with sequence_lens takes
 * each row at its own step. */
static int strided_step_input(const ir_node *rec, const ir_graph *b, const ir_value *v)
{
	int nseq = rec ? (int)ir_attr_int(rec, "n_seq", 0) : 0;
	const ir_attr *sa = rec ? ir_attr_find(rec, "seq_axis") : NULL;
	int per_row = rec && ir_attr_int(rec, "reverse", 0) && ir_attr_int(rec, "has_lens", 0);
	for (int k = 0; k < nseq && k < b->ninputs; k++)
		if (b->inputs[k] == v && (per_row || (sa && k < sa->n && sa->ints[k] != 0)))
			return 1;
	return 0;
}

/* A column view is an offset into its operand, and a per-step input whose
 * rows are not contiguous (strided_step_input) is read through a row
 * stride: only fused loops and products can read either.  A node of
 * another kind reading one (Where with a bool condition: an If on run-time
 * data in a scripted loop, lower_seq.c; a Softmax, a Concat of a
 * batch-first frame) reads a copy made in the fused loops instead, once
 * per step: v * 1, exact for every float (an Identity would be a view of
 * the view, pass_plan.c); products and element-wise nodes go on reading
 * the rows where they are. */
/* v * 1 before node i of b (node i's origin), in b's node list. */
static ir_value *copy_before(ir_graph *b, int i, ir_value *v)
{
	ir_node *r = b->nodes[i < b->nnodes ? i : b->nnodes - 1];
	ir_node *id = ir_node_new(b, OP_MUL, ir_unique_name(b, "Mul"), 2, 1);
	id->origin = r->origin ? r->origin : r->name;
	id->opset = r->opset;
	id->in[0] = v;
	float one = 1.0f;
	ir_shape scalar = {.rank = 0};
	id->in[1] = ir_const_new(b, ir_unique_name(b, "one"), DT_F32, &scalar, &one);
	id->out[0] = ir_value_new(b, ir_unique_name(b, "view_copy"), VAL_TEMP, DT_F32);
	id->out[0]->shape = v->shape;
	id->out[0]->producer = id;
	ir_node **nodes = arena_array(b->A, (size_t)b->nnodes + 1, sizeof *nodes);
	memcpy(nodes, b->nodes, (size_t)i * sizeof *nodes);
	nodes[i] = id;
	memcpy(nodes + i + 1, b->nodes + i, (size_t)(b->nnodes - i) * sizeof *nodes);
	ir_set_nodes(b, nodes, b->nnodes + 1);
	return id->out[0];
}

static void copy_views_for_others(ir_graph *b, const ir_node *rec)
{
	/* a next state that is a column of a product (a linear update whose
	 * product pass_merge merged with another: h = i2h(cat(x, h)) beside
	 * i2o) is copied into the state's own buffer; a product itself is
	 * written there (emit_rec.c) */
	int nstate = (int)ir_attr_int(rec, "n_state", 0);
	for (int k = 0; k < nstate && k < b->noutputs; k++) {
		ir_value *v = b->outputs[k];
		ir_node *p = v ? v->producer : NULL;
		if (p && p->graph == b && ir_is_column_view(p) && v->dtype == DT_F32)
			b->outputs[k] = copy_before(b, b->nnodes, v);
	}
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *r = b->nodes[i];
		if (is_elem(r) || r->op == OP_GEMM || ir_is_column_view(r))
			continue;
		for (int k = 0; k < r->nin; k++) {
			ir_value *v = r->in[k];
			ir_node *p = v ? v->producer : NULL;
			int view = p && p->graph == b && ir_is_column_view(p);
			if (!(view || (v && strided_step_input(rec, b, v))) || v->dtype != DT_F32)
				continue;
			r->in[k] = copy_before(b, i, v);
			i++;
		}
	}
}

static void fuse_body(ir_graph *b, const ir_node *rec, const pass_opts *o)
{
	copy_views_for_others(b, rec);
	int n = b->nnodes, ngroups = 0;
	if (!n)
		return;
	int *stage = arena_array(b->A, (size_t)b->nvalues + 1, sizeof *stage);
	fnode *f = arena_array(b->A, (size_t)n, sizeof *f);
	for (int i = 0; i < n; i++) {
		ir_node *nd = b->nodes[i];
		int s = 0;
		for (int k = 0; k < nd->nin; k++) {
			ir_value *v = nd->in[k];
			if (v && v->graph == b && v->id < b->nvalues && b->values[v->id] == v &&
			    stage[v->id] > s)
				s = stage[v->id];
		}
		int cls = ir_is_column_view(nd) ? CLS_VIEW
			: !is_elem(nd) ? CLS_OTHER : nd->out[0]->shape.rank == 0 ? CLS_SCALAR : CLS_ELEM;
		if (cls == CLS_OTHER)
			s++;
		for (int k = 0; k < nd->nout; k++)
			if (nd->out[k] && nd->out[k]->graph == b)
				stage[nd->out[k]->id] = s;
		f[i] = (fnode){nd, s, cls, 0, i};
		nd->group = 0;
		if (nd->body)
			fuse_body(nd->body, nd, o);
	}
	/* Element-wise nodes run as late as their readers allow (a product
	 * reading them needs them one stage earlier): a value computed where it
	 * is used stays in a local, and nodes that need no product (bias adds
	 * of constant operands, say) join a later loop instead of making one. */
	int last = 0;
	for (int i = 0; i < n; i++)
		last = f[i].stage > last ? f[i].stage : last;
	for (int i = n - 1; i >= 0; i--) {
		if (!is_elem_cls(f[i].cls))
			continue;
		const ir_value *v = f[i].n->out[0];
		int late = last;
		for (int j = i + 1; j < n; j++)
			for (int k = 0; k < f[j].n->nin; k++)
				if (f[j].n->in[k] == v) {
					int s = is_elem_cls(f[j].cls) ? f[j].stage : f[j].stage - 1;
					late = s < late ? s : late;
				}
		ASSERT(late >= f[i].stage);
		f[i].stage = late;
	}
	qsort(f, (size_t)n, sizeof *f, cmp_fnode);
	for (int i = 0; i < n; i++)
		b->nodes[i] = f[i].n;
	ir_set_nodes(b, b->nodes, n);

	/* element-wise nodes: one group per (stage, output shape), unless a node
	 * reads a group of another shape made after its own (a [B, 1] column
	 * mixed into [B, H] gate math: h = m * h' + (1 - m) * h): it then
	 * starts a new group, so that every group can run as one loop after
	 * the groups it reads */
	for (int i = 0; i < n; i++) {
		if (!is_elem_cls(f[i].cls))
			continue;
		int open = 0, dep = 0;
		for (int j = i - 1; j >= 0 && f[j].stage == f[i].stage && !(o && o->no_fuse); j--) {
			if (!f[j].n->group)
				continue;
			if (f[j].cls == f[i].cls && ir_shape_eq(&f[j].n->out[0]->shape, &f[i].n->out[0]->shape) &&
			    f[j].n->group > open)
				open = f[j].n->group;
			for (int k = 0; k < f[i].n->nin; k++)
				if (f[i].n->in[k] && f[i].n->in[k] == f[j].n->out[0] && f[j].n->group > dep)
					dep = f[j].n->group;
		}
		f[i].n->group = open && dep <= open ? open : ++ngroups;
	}
	/* each group one run of nodes, in the order the groups were made */
	for (int i = 0; i < n; i++)
		f[i].grp = is_elem_cls(f[i].cls) ? f[i].n->group : 0;
	qsort(f, (size_t)n, sizeof *f, cmp_fnode);
	for (int i = 0; i < n; i++)
		b->nodes[i] = f[i].n;
	ir_set_nodes(b, b->nodes, n);
	/* column views join the group of their readers when there is one */
	for (int i = n - 1; i >= 0; i--) {
		if (f[i].cls != CLS_VIEW)
			continue;
		int grp = -1;
		for (int j = 0; j < n; j++)
			for (int k = 0; k < f[j].n->nin; k++)
				if (f[j].n->in[k] == f[i].n->out[0])
					grp = grp == -1 || grp == f[j].n->group ? f[j].n->group : 0;
		f[i].n->group = grp > 0 ? grp : 0;
	}
}

/* ---- root graph ---- */

static void fuse_root(ir_graph *g, const pass_opts *o)
{
	int ngroups = 0;
	ir_node *prev = NULL;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		n->group = 0;
		if (n->body) {
			fuse_body(n->body, n, o);
			prev = NULL;
			continue;
		}
		if (!is_elem(n)) {
			prev = NULL;
			continue;
		}
		if (prev && !(o && o->no_fuse) && ir_shape_eq(&prev->out[0]->shape, &n->out[0]->shape))
			n->group = prev->group;
		else
			n->group = ++ngroups;
		prev = n;
	}
}

int pass_fuse(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	ir_recount(g);
	fuse_root(g, o);
	ir_recount(g);
	return 0;
}
