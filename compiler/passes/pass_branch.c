/* pass_branch.c: an If decided at run time becomes a C branch.
 *
 * lower_seq.c computes an If whose condition is known only at run time (a
 * cascade's `if p.max() > 0.5:`, a switch on a flag input, an If decided by
 * a size whose branches agree in shape) as both branches and a select per
 * output: Where(cond, then, else) marked if_select.  That is correct for any
 * condition, but it runs the branch not taken as well: a wake-word cascade
 * would run its expensive second stage on every chunk.  This pass finds the
 * nodes whose results only one branch's selects read, and marks them to run
 * only when that branch is taken.
 *
 * requires: pass_precision (the nodes, their fusion groups and the products'
 *           precision are final).  pass_schedule and pass_plan run next;
 *           they neither add nor move nodes.
 * produces: on nodes of the root graph of an inference build,
 *             guard = "COND", guard_when = 1 | 0
 *           (ir_guard, ir.h): the node runs only when COND, a bool value of
 *           one element, is true (1) or false (0).  A node is guarded so
 *           exactly when every reader of every result it has is guarded
 *           alike, or a select on COND reading it only as the operand
 *           taken then (ir_guard_read_ok), and it makes no graph output;
 *           a fusion group whose members serve different branches is split
 *           into a group per branch (split_groups);
 *           an If inside a guarded branch stays a select (its nodes take
 *           the outer guard), and so does an If in a recurrence body.
 *           Guarded nodes are moved after the node that computes COND,
 *           keeping their order; nothing else moves.
 * breaks:   nothing (guards are removed first, so a graph read back from
 *           `cellc dump` is decided afresh).
 *
 * Not guarded: nodes of a --train build (the backward pass reads the
 * forward's results, so both branches run and the select stays, said by
 * `info`), data-dependent lengths (only graph outputs have them), nodes of
 * recurrence bodies.  ir_verify checks every guard after every pass from
 * here on (check_guards).
 */
#include "passes.h"
#include "util.h"

#include <string.h>

/* One branch of one If: its condition and the side (1: then, 0: else). */
typedef struct side {
	ir_value *c;
	int when;
	int at;                 /* index of the node computing c, -1 for a graph input */
	char *elig;             /* [nnodes]: every result only this branch needs */
} side;

typedef struct br {
	ir_graph *g;
	int n;                  /* nodes */
	int **cons;             /* [nvalues]: the nodes reading each root value */
	int *ncons;
	side *s;
	int ns;
	int *guard;             /* [n]: the side guarding each node, -1 none */
} br;

static void push_cons(br *R, ir_value *v, int j)
{
	if (!v || v->graph != R->g || v->id < 0 || v->id >= R->g->nvalues || R->g->values[v->id] != v)
		return;
	int k = v->id, m = R->ncons[k];
	if (m && R->cons[k][m - 1] == j)
		return;
	int *a = arena_array(R->g->A, (size_t)m + 1, sizeof *a);
	if (m)
		memcpy(a, R->cons[k], (size_t)m * sizeof *a);
	a[m] = j;
	R->cons[k] = a;
	R->ncons[k] = m + 1;
}

/* The root values node j reads, in its operands or in graphs it holds. */
static void add_reads(br *R, const ir_graph *h, int j)
{
	for (int i = 0; i < h->nnodes; i++) {
		const ir_node *u = h->nodes[i];
		for (int k = 0; k < u->nin; k++)
			push_cons(R, u->in[k], j);
		if (u->body)
			add_reads(R, u->body, j);
		for (int a = 0; a < u->nattrs; a++)
			if (u->attrs[a].kind == ATTR_GRAPH && u->attrs[a].g)
				add_reads(R, u->attrs[a].g, j);
	}
	for (int k = 0; h->parent && k < h->noutputs; k++)
		push_cons(R, h->outputs[k], j);
}

static int is_graph_output(const ir_graph *g, const ir_value *v)
{
	if (v->is_output)
		return 1;
	for (int k = 0; k < g->noutputs; k++)
		if (g->outputs[k] == v)
			return 1;
	return 0;
}

/* A select of an If decided at run time: its condition, or NULL. */
static ir_value *select_cond(const ir_node *n)
{
	if (n->op != OP_WHERE || n->nin != 3 || !ir_attr_int(n, "if_select", 0) || !n->in[0])
		return NULL;
	ir_value *c = n->in[0];
	if (c->dtype != DT_BOOL || c->shape.rank < 0 || ir_shape_const_numel(&c->shape) != 1)
		return NULL;
	return c;
}

/* Whether node i may run only when side S is taken, given elig[] of the
 * nodes after it. */
static int eligible(br *R, const side *S, int i)
{
	ir_node *n = R->g->nodes[i];
	int used = 0;
	for (int j = 0; j < n->nout; j++) {
		ir_value *v = n->out[j];
		if (!v)
			continue;
		if (is_graph_output(R->g, v) || v->data_dep || v == S->c)
			return 0;
		if (v->graph != R->g || v->id < 0 || v->id >= R->g->nvalues)
			return 0;
		for (int k = 0; k < R->ncons[v->id]; k++) {
			int u = R->cons[v->id][k];
			ir_node *un = R->g->nodes[u];
			int sel = select_cond(un) == S->c && !un->body && un->in[0] != v &&
				  un->in[S->when ? 1 : 2] == v && un->in[S->when ? 2 : 1] != v;
			if (!sel && (u <= i || !S->elig[u]))
				return 0;
			used = 1;
		}
	}
	return used;
}

static void find_eligible(br *R, side *S)
{
	for (int i = R->n - 1; i >= 0; i--)
		S->elig[i] = (char)eligible(R, S, i);
}

/* Guards that a reader does not respect are dropped (the producer then
 * always runs), until none changes. */
static void repair(br *R)
{
	for (int changed = 1; changed;) {
		changed = 0;
		for (int j = 0; j < R->n; j++) {
			ir_node *u = R->g->nodes[j];
			for (int i = 0; i < j; i++) {
				int p = R->guard[i];
				if (p < 0)
					continue;
				ir_node *x = R->g->nodes[i];
				for (int k = 0; k < x->nout; k++) {
					ir_value *v = x->out[k];
					if (!v || !ir_node_reads(u, v))
						continue;
					int same = R->guard[j] == p;
					if (!same && !ir_guard_read_ok(u, v, R->s[p].c, R->s[p].when)) {
						R->guard[i] = -1;
						changed = 1;
						break;
					}
				}
			}
		}
	}
}

/* A fusion group whose members are guarded unevenly (a root group fuses
 * consecutive element-wise nodes, whatever branch they serve) is split:
 * within its run of nodes, those that always run first, then those of each
 * branch, each part a group of its own (new ids), each in its order.  That
 * keeps the order topological: a guarded node reads nothing a node of the
 * group that always runs computes later, and no member that always runs
 * reads a guarded one (only the selects do, which are never fused).  A
 * value read across the parts is then stored (fuse_needs_buffer).  A group
 * whose members are not one run of nodes loses its guards instead; 1 if
 * that happened (the guards are repaired again). */
static int split_groups(br *R)
{
	ir_graph *g = R->g;
	int maxg = 0, dropped = 0;
	for (int i = 0; i < R->n; i++)
		maxg = g->nodes[i]->group > maxg ? g->nodes[i]->group : maxg;
	for (int i = 0; i < R->n; i++) {
		int gi = g->nodes[i]->group, last = i, even = 1;
		if (!gi || (i > 0 && g->nodes[i - 1]->group == gi))
			continue;       /* not the first of its run */
		while (last + 1 < R->n && g->nodes[last + 1]->group == gi)
			last++;
		for (int j = i; j <= last; j++)
			even &= R->guard[j] == R->guard[i];
		int elsewhere = 0;
		for (int j = 0; j < R->n; j++)
			elsewhere |= (j < i || j > last) && g->nodes[j]->group == gi;
		if (even)
			continue;
		if (elsewhere) {
			for (int j = 0; j < R->n; j++)
				if (g->nodes[j]->group == gi && R->guard[j] >= 0) {
					R->guard[j] = -1;
					dropped = 1;
				}
			continue;
		}
		int cnt = last - i + 1, k = 0;
		ir_node **nodes = arena_array(g->A, (size_t)cnt, sizeof *nodes);
		int *guard = arena_array(g->A, (size_t)cnt, sizeof *guard);
		for (int p = -1; p < R->ns; p++) {
			int id = p < 0 ? gi : 0;
			for (int j = i; j <= last; j++)
				if (R->guard[j] == p) {
					if (!id)
						id = ++maxg;
					nodes[k] = g->nodes[j];
					nodes[k]->group = id;
					guard[k++] = p;
				}
		}
		ASSERT(k == cnt);
		memcpy(&g->nodes[i], nodes, (size_t)cnt * sizeof *nodes);
		memcpy(&R->guard[i], guard, (size_t)cnt * sizeof *guard);
		for (int j = i; j <= last; j++)
			g->nodes[j]->id = j;
	}
	return dropped;
}

static void unguard(ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_attr_remove(g->nodes[i], "guard");
		ir_attr_remove(g->nodes[i], "guard_when");
	}
}

int pass_branch(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	unguard(g);
	if (o->train || g->train)
		return 0;
	br R = {.g = g, .n = g->nnodes};
	for (int i = 0; i < g->nnodes; i++)
		g->nodes[i]->id = i;
	for (int i = 0; i < g->nvalues; i++)
		g->values[i]->id = i;
	/* the branches: one per condition and side */
	R.s = arena_array(g->A, (size_t)2 * (size_t)g->nnodes + 1, sizeof *R.s);
	for (int i = 0; i < g->nnodes; i++) {
		ir_value *c = select_cond(g->nodes[i]);
		int known = 0;
		for (int k = 0; c && k < R.ns; k++)
			known |= R.s[k].c == c;
		if (!c || known || c->graph != g)
			continue;
		for (int when = 1; when >= 0; when--) {
			side *S = &R.s[R.ns++];
			S->c = c;
			S->when = when;
			S->at = c->producer ? c->producer->id : -1;
			S->elig = arena_alloc(g->A, (size_t)g->nnodes + 1);
		}
	}
	if (!R.ns)
		return 0;
	R.cons = arena_array(g->A, (size_t)g->nvalues + 1, sizeof *R.cons);
	R.ncons = arena_array(g->A, (size_t)g->nvalues + 1, sizeof *R.ncons);
	for (int j = 0; j < g->nnodes; j++) {
		ir_node *u = g->nodes[j];
		for (int k = 0; k < u->nin; k++)
			push_cons(&R, u->in[k], j);
		if (u->body)
			add_reads(&R, u->body, j);
		for (int a = 0; a < u->nattrs; a++)
			if (u->attrs[a].kind == ATTR_GRAPH && u->attrs[a].g)
				add_reads(&R, u->attrs[a].g, j);
	}
	for (int p = 0; p < R.ns; p++)
		find_eligible(&R, &R.s[p]);
	/* each node takes the outermost branch it belongs to: one whose
	 * condition is computed by a node that always runs */
	R.guard = arena_array(g->A, (size_t)g->nnodes + 1, sizeof *R.guard);
	for (int i = 0; i < g->nnodes; i++) {
		R.guard[i] = -1;
		for (int p = 0; p < R.ns && R.guard[i] < 0; p++) {
			int outer = 1;
			for (int q = 0; q < R.ns && R.s[p].at >= 0; q++)
				outer &= !R.s[q].elig[R.s[p].at];
			if (outer && R.s[p].elig[i])
				R.guard[i] = p;
		}
	}
	do
		repair(&R);
	while (split_groups(&R));
	/* guarded nodes after their condition's node, in their order */
	ir_node **order = arena_array(g->A, (size_t)g->nnodes + 1, sizeof *order);
	int no = 0;
	for (int i = 0; i < g->nnodes; i++) {
		int p = R.guard[i];
		if (p >= 0 && R.s[p].at > i)
			continue;       /* placed after node R.s[p].at */
		order[no++] = g->nodes[i];
		for (int q = 0; q < R.ns; q++)
			if (R.s[q].at == i)
				for (int j = 0; j < i; j++)
					if (R.guard[j] == q)
						order[no++] = g->nodes[j];
	}
	ASSERT(no == g->nnodes);
	for (int i = 0; i < g->nnodes; i++) {
		int p = R.guard[i];
		if (p < 0)
			continue;
		ir_attr_set_string(g->nodes[i], "guard", R.s[p].c->name);
		ir_attr_set_int(g->nodes[i], "guard_when", R.s[p].when);
	}
	ir_set_nodes(g, order, no);
	return 0;
}
