/* pass_canon.c: one spelling for what authors write in many ways, so that
 * the steps of a traced loop look alike whatever style produced them; its
 * second stage, products and gates, is pass_gates.c.
 *
 * requires: pass_infer (shapes known, constants folded, nuses/ids fresh).
 * produces: - no shape no-ops: a view (Reshape, Squeeze, Unsqueeze, Flatten,
 *             Identity) whose result has the shape of the value at the root
 *             of its chain of views is gone, its readers read the root (an
 *             Identity's readers read its input, a view of another shape)
 *             (x.view(-1, x.size(1)), h.unsqueeze(0) ... .squeeze(0),
 *             gates.squeeze() of a [B, 4H] matrix), in recurrence bodies too;
 *           - a Squeeze of [1, N] to [N] read only element by element along
 *             N (gates.squeeze() traced at batch 1) is gone: its readers read
 *             the [1, N] value, its Slices cut axis 1 (unit_squeezes);
 *           - a Transpose that keeps the order of the axes other than units
 *             is a Reshape, a view like the others (unit_transposes);
 *           - a chain of views that only drops unit axes of its root is a
 *             Squeeze of the root (squeeze_of);
 *           - a chain of views reads its root directly where the last view
 *             is a Reshape to a constant shape (view of a view);
 *           - per-step reads of a rank-2 sequence (x[:, t] of x [B, T], or
 *             x[t] of x [T, B], then .view(-1, 1) / .unsqueeze(1), or
 *             x[:, t:t+1]) read a [B, 1] slice of the [B, T, 1] view of x,
 *             as if the sequence had one feature per step (pixel-by-pixel
 *             MNIST), which is the form pass_reroll finds steps in;
 *           - per-step lookups in a table (emb(tokens[t]) at every step:
 *             Gather(W, Gather(S, t))) read the lookup of the whole
 *             sequence at step t, Gather(Gather(W, S), t), an f32
 *             sequence pass_reroll finds steps in (canon_step_lookups);
 *           - a scalar initializer that one node reads (a schedule entry
 *             the exporter folded per step) is a constant (inference), and
 *             so is a small integer initializer (an index or a bound);
 *           - products are Gemm (MatMul of two matrices, in scripted
 *             bodies too); a Gemm's beta is written only where it scales a
 *             C: a C that beta 0 cancels is dropped, a Gemm without C has
 *             no beta (gemm_beta), and a bias moved into a product's C is
 *             added once (ir_gemm_set_bias);
 *           - nodes nobody reads are removed.
 * breaks:   nothing (values keep their names; graph outputs are never
 *           replaced).
 *
 * The rewrites re-spell views and products, so they change no number
 * the model computes (beyond the order of a GEMM's sums); they are
 * structural, not a list of known models.
 */
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "canon.h"
#include "util.h"

#include <string.h>

int canon_is_view(const ir_node *n)
{
	return n->op == OP_RESHAPE || n->op == OP_SQUEEZE || n->op == OP_UNSQUEEZE ||
	       n->op == OP_FLATTEN || n->op == OP_IDENTITY;
}

/* The value at the root of v's chain of views. */
static ir_value *view_root(ir_value *v)
{
	while (v && v->producer && canon_is_view(v->producer) && v->producer->nin >= 1 && v->producer->in[0] &&
	       !v->is_output)
		v = v->producer->in[0];
	return v;
}

/* Whether view n's result is its root r's shape with unit axes dropped,
 * the other axes in order; then n becomes Squeeze(r, those axes). */
static int squeeze_of(ir_graph *g, ir_node *n, ir_value *r)
{
	const ir_shape *x = &r->shape, *y = &n->out[0]->shape;
	int64_t axes[IR_MAX_RANK];
	int na = 0, j = 0;
	if (y->rank >= x->rank || (n->op != OP_SQUEEZE && n->op != OP_RESHAPE))
		return 0;
	for (int a = 0; a < x->rank; a++) {
		if (j < y->rank && ir_dim_eq(x->d[a], y->d[j])) {
			j++;
			continue;
		}
		if (!ir_dim_is_const(x->d[a]) || x->d[a].k != 1)
			return 0;
		axes[na++] = a;
	}
	if (j != y->rank || na == 0)
		return 0;
	ir_value *ax = ir_const_i64(g, ir_unique_name(g, "axes"), na, axes);
	if (n->nin < 2)
		n->in = arena_grow(g->A, n->in, n->nin, 2, sizeof *n->in);
	n->nin = 2;
	n->op = OP_SQUEEZE;
	n->in[0] = r;
	n->in[1] = ax;
	ir_attr_remove(n, "allowzero");
	return 1;
}

/* Shape no-ops: 1 if anything changed. */
static int drop_noop_views(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (!canon_is_view(n) || n->nout != 1 || !n->out[0] || n->out[0]->is_output || !n->in[0])
			continue;
		ir_value *y = n->out[0], *r = view_root(n->in[0]);
		if (y->shape.rank < 0 || r->shape.rank < 0 || r->dtype != y->dtype)
			continue;
		/* an Identity is its input, whatever views made that (the taken
		 * branch of an If resolved at compile time: Identity(Squeeze(x))) */
		if (n->op == OP_IDENTITY && ir_shape_eq(&n->in[0]->shape, &y->shape) && n->in[0]->dtype == y->dtype)
			r = n->in[0];
		if (ir_shape_eq(&r->shape, &y->shape)) {
			if (y->nuses > 0) {
				ir_replace_uses(g, y, r, NULL, IR_USES_NESTED);
				changed = 1;
			}
			continue;
		}
		/* a chain of views that only drops unit axes of r is one Squeeze
		 * of r (x[:, t:t+1] of a batch_first x, transposed for a one-step
		 * module call, then squeezed: the cut's unit axis dropped right
		 * after it, as pass_reroll reads a step) */
		if (n->in[0] != r && squeeze_of(g, n, r))
			changed = 1;
		/* Reshape(view(r)) to a constant shape: Reshape(r) */
		if (n->op == OP_RESHAPE && n->in[0] != r && n->nin == 2 && ir_value_is_const(n->in[1]) &&
		    ir_shape_const_numel(&y->shape) >= 0) {
			int plain = 1;
			int64_t k = ir_shape_const_numel(&n->in[1]->shape);
			for (int64_t j = 0; j < k; j++)
				plain &= ir_const_int(n->in[1], j) > 0;
			if (plain) {
				n->in[0] = r;
				changed = 1;
			}
		}
	}
	return changed;
}

/* A Transpose that keeps the order of the axes other than units is a
 * Reshape to its output's shape ([1, B, H] to [B, 1, H], an identity
 * perm): 1 if any was. */
static int unit_transposes(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op != OP_TRANSPOSE || n->nin != 1 || !n->in[0] || n->nout != 1 || !n->out[0])
			continue;
		const ir_shape *x = &n->in[0]->shape, *y = &n->out[0]->shape;
		ir_attr *p = ir_attr_find(n, "perm");
		if (x->rank != y->rank || x->rank < 1 || (p && p->n != x->rank))
			continue;
		int64_t last = -1;
		int keeps = 1;
		for (int a = 0; a < y->rank && keeps; a++) {
			int64_t k = p ? p->ints[a] : y->rank - 1 - a;
			if (ir_dim_is_const(y->d[a]) && y->d[a].k == 1)
				continue;
			keeps = k > last;
			last = k;
		}
		if (!keeps)
			continue;
		n->op = OP_RESHAPE;
		n->nin = 2;
		n->in = arena_grow(g->A, n->in, 1, 2, sizeof *n->in);
		n->in[1] = ir_const_dims(g, y->d, y->rank);
		ir_attr_remove(n, "perm");
		changed = 1;
	}
	return changed;
}

/* ---- rank-2 sequences ----------------------------------------------------------- */

/* Whether every reader of v is a view whose result is v's shape with a unit
 * axis appended ([B] -> [B, 1]). */
static int read_as_column(const ir_graph *g, const ir_value *v)
{
	int any = 0;
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			if (n->in[k] != v)
				continue;
			const ir_value *y = n->out[0];
			if (k != 0 || !canon_is_view(n) || !y || y->shape.rank != 2 || !ir_dim_eq(y->shape.d[0], v->shape.d[0]) ||
			    !ir_dim_is_const(y->shape.d[1]) || y->shape.d[1].k != 1)
				return 0;
			any = 1;
		}
		if (n->body)
			for (int j = 0; j < n->body->nnodes; j++)
				for (int k = 0; k < n->body->nodes[j]->nin; k++)
					if (n->body->nodes[j]->in[k] == v)
						return 0;
	}
	return any;
}

typedef struct col3 {
	ir_value *x, *x3;       /* a rank-2 sequence and its [.., .., 1] view */
} col3;

/* The [d0, d1, 1] view of x (one Unsqueeze per x, placed before `before`). */
static ir_value *unit_view(ir_graph *g, col3 *tab, int *ntab, ir_value *x, ir_node **list, int *nlist)
{
	for (int i = 0; i < *ntab; i++)
		if (tab[i].x == x)
			return tab[i].x3;
	int64_t ax = 2;
	ir_node *u = ir_node_new(g, OP_UNSQUEEZE, ir_unique_name(g, "Unsqueeze"), 2, 1);
	u->origin = "the sequence read one column per step";
	u->opset = g->opset;
	u->in[0] = x;
	u->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &ax);
	u->out[0] = ir_value_new(g, ir_unique_name(g, x->name ? x->name : "x"), VAL_TEMP, x->dtype);
	u->out[0]->producer = u;
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	if (infer_node(g, u, &q))
		return NULL;
	list[(*nlist)++] = u;
	tab[*ntab] = (col3){x, u->out[0]};
	++*ntab;
	return u->out[0];
}

int canon_is_step_index(const ir_value *t)
{
	return ir_value_is_const(t) && (t->dtype == DT_I64 || t->dtype == DT_I32) && t->shape.rank == 0;
}

/* Gather(x, t, axis) of a rank-2 f32 x read as a column, and
 * Slice(x, t, t+1, axis) of one: re-spelled on the [.., .., 1] view. */
int canon_column_steps(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	col3 *tab = arena_array(g->A, (size_t)g->nnodes + 1, sizeof *tab);
	ir_node **list = arena_array(g->A, 3 * (size_t)g->nnodes + 1, sizeof *list);
	int ntab = 0, nlist = 0, changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		ir_value *x = n->nin > 0 ? n->in[0] : NULL;
		int ok = x && x->shape.rank == 2 && x->dtype == DT_F32 && n->nout == 1 && n->out[0] &&
			 !n->out[0]->is_output;
		if (ok && n->op == OP_GATHER && n->nin == 2 && canon_is_step_index(n->in[1]) &&
		    n->out[0]->shape.rank == 1 && read_as_column(g, n->out[0])) {
			ir_value *x3 = unit_view(g, tab, &ntab, x, list, &nlist);
			if (x3) {
				n->in[0] = x3;
				if (infer_node(g, n, &q) == 0)
					changed = 1;
				else
					n->in[0] = x;
			}
		} else if (ok && n->op == OP_SLICE && n->nin == 5 && n->out[0]->shape.rank == 2) {
			int64_t ax = ir_value_is_const(n->in[3]) && ir_shape_const_numel(&n->in[3]->shape) == 1
					     ? ir_const_int(n->in[3], 0) : -9;
			ax = ax < 0 ? ax + 2 : ax;
			const ir_dim *d = &n->out[0]->shape.d[ax >= 0 && ax < 2 ? ax : 0];
			if ((ax == 0 || ax == 1) && ir_dim_is_const(*d) && d->k == 1) {
				ir_value *x3 = unit_view(g, tab, &ntab, x, list, &nlist);
				ir_value *y = n->out[0];
				const ir_shape ys = y->shape;   /* the re-spelling must keep it */
				ir_node *sq = ir_node_new(g, OP_SQUEEZE, ir_unique_name(g, "Squeeze"), 2, 1);
				sq->origin = n->name;
				sq->opset = g->opset;
				sq->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &ax);
				sq->out[0] = y;
				if (x3) {
					ir_value *s3 = ir_value_new(g, ir_unique_name(g, y->name ? y->name : "slice"),
								    VAL_TEMP, DT_F32);
					n->in[0] = x3;
					n->out[0] = s3;
					s3->producer = n;
					sq->in[0] = s3;
					y->producer = sq;
					if (infer_node(g, n, &q) || infer_node(g, sq, &q) || !ir_shape_eq(&ys, &y->shape)) {
						n->in[0] = x;
						n->out[0] = y;
						y->producer = n;
						infer_node(g, n, &q);
					} else {
						list[nlist++] = n;
						list[nlist++] = sq;
						changed = 1;
						continue;
					}
				}
			}
		}
		list[nlist++] = n;
	}
	if (changed)
		ir_set_nodes(g, list, nlist);
	return changed;
}

/* ---- lookups of per-step reads -------------------------------------------------- */

/* The step read by lookup n, Gather(W, Gather(S, t, axis a)) of a table W
 * (an embedding: rank 2, a weight or constant) at step t of an integer
 * sequence S ([T, B] or [B, T]): the inner Gather; NULL if n is not one. */
static ir_node *step_lookup(const ir_node *n)
{
	if (n->op != OP_GATHER || n->nin != 2 || ir_attr_int(n, "axis", 0) != 0 || !n->out[0] ||
	    n->out[0]->is_output || !n->in[0] || !n->in[0]->data || n->in[0]->shape.rank != 2 ||
	    (n->in[0]->kind != VAL_WEIGHT && n->in[0]->kind != VAL_CONST) || !n->in[1])
		return NULL;
	ir_node *p = n->in[1]->producer;
	if (!p || p->op != OP_GATHER || p->nin != 2 || !canon_is_step_index(p->in[1]) || !p->in[0] ||
	    p->in[0]->shape.rank != 2 || (p->in[0]->dtype != DT_I64 && p->in[0]->dtype != DT_I32) ||
	    p->out[0]->shape.rank != 1)
		return NULL;
	int64_t a = ir_attr_int(p, "axis", 0);
	return a == 0 || a == 1 || a == -1 || a == -2 ? p : NULL;
}

typedef struct lookup_seq {
	const ir_value *W, *S;  /* a table and the sequence it looks up */
	int steps;              /* the lookups of single steps of S in W */
	ir_value *E;            /* Gather(W, S): every step looked up at once */
} lookup_seq;

static lookup_seq *lookup_of(lookup_seq *tab, int ntab, const ir_value *W, const ir_value *S)
{
	for (int i = 0; i < ntab; i++)
		if (tab[i].W == W && tab[i].S == S)
			return &tab[i];
	return NULL;
}

/* Per-step lookups in a table (emb(tokens[t]) at every step of a traced
 * loop, tokens [T, B]) read the lookup of the whole sequence at step t,
 * Gather(Gather(W, tokens), t, axis), the per-step read of an f32
 * sequence [T, B, E] that pass_reroll finds steps in: the same numbers,
 * looked up once per token as before.  A table looked up at a single
 * step of a sequence is left as it is (there is no loop to gain from). */
static int canon_step_lookups(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	lookup_seq *tab = arena_array(g->A, (size_t)g->nnodes + 1, sizeof *tab);
	int ntab = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *p = step_lookup(g->nodes[i]);
		if (!p)
			continue;
		lookup_seq *L = lookup_of(tab, ntab, g->nodes[i]->in[0], p->in[0]);
		if (!L) {
			L = &tab[ntab++];
			*L = (lookup_seq){g->nodes[i]->in[0], p->in[0], 0, NULL};
		}
		L->steps++;
	}
	ir_node **list = arena_array(g->A, 2 * (size_t)g->nnodes + 1, sizeof *list);
	int nlist = 0, changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i], *p = step_lookup(n);
		lookup_seq *L = p ? lookup_of(tab, ntab, n->in[0], p->in[0]) : NULL;
		if (L && L->steps >= 2 && !L->E) {
			ir_build B = {.origin = "the table looked up at every step of the sequence at once",
				      .out_base = "lookup", .D = &q};
			ir_value *in[2] = {n->in[0], p->in[0]};
			ir_node *e = ir_build_node(&B, g, OP_GATHER, 2, in, 1);
			ir_build_out(&B, e, 0, n->in[0]->dtype);
			e->opset = n->opset;
			/* placed before the first lookup it replaces: S and W come earlier */
			if (infer_node(g, e, &q) == 0) {
				L->E = e->out[0];
				list[nlist++] = e;
			} else {
				L->steps = 0;
			}
		}
		if (L && L->E) {
			const ir_shape was = n->out[0]->shape;
			ir_value *W = n->in[0], *idx = n->in[1];
			ir_attr_set_int(n, "axis", ir_attr_int(p, "axis", 0) < 0 ? ir_attr_int(p, "axis", 0) + 2
										  : ir_attr_int(p, "axis", 0));
			n->in[0] = L->E;
			n->in[1] = p->in[1];
			if (infer_node(g, n, &q) || !ir_shape_eq(&was, &n->out[0]->shape)) {
				n->in[0] = W;
				n->in[1] = idx;
				ir_attr_set_int(n, "axis", 0);
				infer_node(g, n, &q);
			} else {
				changed = 1;
			}
		}
		list[nlist++] = n;
	}
	if (changed)
		ir_set_nodes(g, list, nlist);
	return changed;
}

/* ---- products ------------------------------------------------------------------- */

int canon_is_param(const ir_value *v)
{
	return v && (v->kind == VAL_WEIGHT || v->kind == VAL_CONST) && v->data && v->dtype == DT_F32;
}

/* MatMul(A, W) of two matrices is Gemm(A, W). */
static int matmul_gemm(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op == OP_MATMUL && n->nin == 2 && n->in[0] && n->in[1] && n->in[0]->shape.rank == 2 &&
		    n->in[1]->shape.rank == 2 && n->in[0]->dtype == DT_F32 && n->in[1]->dtype == DT_F32 &&
		    n->nout == 1 && n->out[0]) {
			n->op = OP_GEMM;
			n->nattrs = 0;
			n->attrs = NULL;
			if (infer_node(g, n, &q) == 0) {
				changed = 1;
			} else {
				n->op = OP_MATMUL;
				infer_node(g, n, &q);
			}
		}
	}
	return changed;
}

/* One spelling of a Gemm's bias term: a C that beta 0 cancels is no C
 * (torch.jit.script writes torch.mm(x, W.t()) as Gemm(x, W, beta=0) with
 * a zero C, or with none), and a Gemm without C has no beta, so that a
 * rewrite that later gives it a C cannot inherit a beta that scaled
 * nothing (beta 1 is not written either; another beta stays with its C). */
static int gemm_beta(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *m = g->nodes[i];
		if (m->op != OP_GEMM || !ir_attr_find(m, "beta"))
			continue;
		float beta = ir_attr_float(m, "beta", 1.0f);
		ir_value *c = m->nin > 2 ? m->in[2] : NULL;
		if (!c) {
			m->nin = 2;
			ir_attr_remove(m, "beta");
		} else if (beta == 0.0f) {
			m->nin = 2;
			ir_attr_remove(m, "beta");
		} else if (beta == 1.0f) {
			ir_attr_remove(m, "beta");
		} else {
			continue;
		}
		changed = 1;
	}
	return changed;
}

/* MatMul(A, W) of two matrices is Gemm(A, W); a bias vector added to a
 * bias-free Gemm that nothing else reads is the Gemm's C: x @ W + b,
 * F.linear and nn.Linear then read alike. */
int canon_gemm_form(ir_graph *g)
{
	int changed = matmul_gemm(g);
	ir_recount(g);
	changed |= gemm_beta(g);
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *a = g->nodes[i];
		if (a->op != OP_ADD || a->nin != 2 || !a->out[0])
			continue;
		for (int k = 0; k < 2; k++) {
			ir_value *p = a->in[k], *b = a->in[1 - k];
			ir_node *m = p ? p->producer : NULL;
			if (!m || m->op != OP_GEMM || m->nin != 2 || p->nuses != 1 || p->is_output || !canon_is_param(b) ||
			    m->graph != g || !ir_shape_eq(&p->shape, &a->out[0]->shape) || p->shape.rank != 2 ||
			    ir_attr_float(m, "alpha", 1.0f) != 1.0f ||
			    !((b->shape.rank == 1 && ir_dim_eq(b->shape.d[0], p->shape.d[1])) ||
			      (b->shape.rank == 2 && ir_dim_is_const(b->shape.d[0]) && b->shape.d[0].k == 1 &&
			       ir_dim_eq(b->shape.d[1], p->shape.d[1]))))
				continue;
			ir_gemm_set_bias(m, b);
			/* the Add becomes the Gemm: its output keeps the Add's name */
			ir_value *y = a->out[0];
			m->out[0] = y;
			y->producer = m;
			a->out[0] = p;
			p->producer = a;
			a->op = OP_IDENTITY;
			a->nin = 1;
			a->in[0] = NULL;
			changed = 1;
			/* the Gemm now sits where the Add was */
			g->nodes[i] = m;
			for (int j = 0; j < g->nnodes; j++)
				if (j != i && g->nodes[j] == m)
					g->nodes[j] = a;
			break;
		}
	}
	return changed;
}

/* ---- unit batch axes squeezed away --------------------------------------------------- */

/* Readers of each value of g (by value id): the nodes of g that read it. */
typedef struct readers {
	int *first;             /* [nvalues + 1]: node indices first[id] .. first[id + 1] - 1 */
	int *node;              /* [uses] indices into g->nodes */
} readers;

static readers readers_of(ir_graph *g)
{
	readers R = {arena_array(g->A, (size_t)g->nvalues + 2, sizeof *R.first), NULL};
	int total = 0;
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			const ir_value *v = g->nodes[i]->in[k];
			if (v && v->graph == g && v->id >= 0 && v->id < g->nvalues)
				R.first[v->id + 1]++, total++;
		}
	for (int v = 0; v < g->nvalues; v++)
		R.first[v + 1] += R.first[v];
	R.node = arena_array(g->A, (size_t)total + 1, sizeof *R.node);
	int *at = arena_array(g->A, (size_t)g->nvalues + 1, sizeof *at);
	memcpy(at, R.first, sizeof *at * (size_t)g->nvalues);
	for (int i = 0; i < g->nnodes; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			const ir_value *v = g->nodes[i]->in[k];
			if (v && v->graph == g && v->id >= 0 && v->id < g->nvalues &&
			    (at[v->id] == R.first[v->id] || R.node[at[v->id] - 1] != i))
				R.node[at[v->id]++] = i;   /* a node reading v twice: listed once */
		}
	for (int v = 0; v < g->nvalues; v++)     /* the slots left by listing once */
		for (int e = at[v]; e < R.first[v + 1]; e++)
			R.node[e] = -1;
	return R;
}

/* Whether every reader of v (rank 1, [N]) keeps it element by element along
 * its last axis: element-wise nodes (broadcasting) and single-axis Slices of
 * that axis, whose rank-1 results join the region.  The region's readers go
 * into rd (*nrd; node indices, cap entries).  Graph outputs, bodies and any
 * other reader: 0. */
static int unit_region(ir_graph *g, const readers *R, ir_value *v, int *rd, int *nrd, int cap, int depth)
{
	if (v->is_output || v->graph != g || depth > 64)
		return 0;
	for (int e = R->first[v->id]; e < R->first[v->id + 1]; e++) {
		if (R->node[e] < 0)
			continue;
		const ir_node *m = g->nodes[R->node[e]];
		int seen = 0;
		for (int j = 0; j < *nrd; j++)
			seen |= rd[j] == R->node[e];
		if (seen)
			continue;
		if (*nrd >= cap || m->body || m->nout != 1 || !m->out[0] || m->out[0]->dtype != DT_F32)
			return 0;
		rd[(*nrd)++] = R->node[e];
		ir_value *y = m->out[0];
		if (ir_ops[m->op].kind == OPK_ELEM) {
			for (int k = 0; k < m->nin; k++)
				if (m->in[k] && m->in[k]->shape.rank > 2)
					return 0;
			if (y->shape.rank > 2 || (y->shape.rank == 1 && !unit_region(g, R, y, rd, nrd, cap, depth + 1)))
				return 0;
			continue;
		}
		int only_data = m->nin >= 4 && m->in[0] == v;
		for (int k = 1; k < m->nin; k++)
			only_data &= m->in[k] != v;
		if (m->op == OP_SLICE && only_data && m->in[3] && ir_value_is_const(m->in[3]) &&
		    ir_shape_const_numel(&m->in[3]->shape) == 1 && (ir_const_int(m->in[3], 0) == 0 ||
								     ir_const_int(m->in[3], 0) == -1) &&
		    y->shape.rank == 1 && unit_region(g, R, y, rd, nrd, cap, depth + 1))
			continue;
		return 0;
	}
	return 1;
}

static int by_index(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Squeeze of a [1, N] value to [N] (gates.squeeze() when the batch is 1, as
 * traced at batch 1) whose result is only read element by element along N:
 * the readers read the [1, N] value, Slices of N slice its axis 1, so the
 * step keeps the rank-2 [B, N] form it has at any other batch size (and
 * the same numbers: [N] broadcasts as [1, N]). */
static int unit_squeezes(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	int changed = 0, cap = 256;
	int *rd = arena_array(g->A, (size_t)cap, sizeof *rd);
	readers R = {0};
	ir_value *axis1 = NULL;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		ir_value *x = n->nin > 0 ? n->in[0] : NULL, *y = n->nout == 1 ? n->out[0] : NULL;
		if (n->op != OP_SQUEEZE || !x || !y || x->dtype != DT_F32 || x->shape.rank != 2 ||
		    y->shape.rank != 1 || !ir_dim_is_const(x->shape.d[0]) || x->shape.d[0].k != 1 ||
		    !ir_dim_eq(x->shape.d[1], y->shape.d[0]) || y->nuses == 0)
			continue;
		if (!R.first)
			R = readers_of(g);      /* ids as of the pass's ir_recount; new values have none */
		int nrd = 0;
		if (y->id < 0 || y->id >= g->nvalues || g->values[y->id] != y ||
		    !unit_region(g, &R, y, rd, &nrd, cap, 0))
			continue;
		for (int e = R.first[y->id]; e < R.first[y->id + 1]; e++)
			for (int k = 0; R.node[e] >= 0 && k < g->nodes[R.node[e]]->nin; k++)
				if (g->nodes[R.node[e]]->in[k] == y)
					g->nodes[R.node[e]]->in[k] = x;
		qsort(rd, (size_t)nrd, sizeof *rd, by_index);
		for (int j = 0; j < nrd; j++) {
			ir_node *m = g->nodes[rd[j]];
			if (m->op == OP_SLICE && m->in[0]->shape.rank == 2) {
				if (!axis1) {
					int64_t one = 1;
					axis1 = ir_const_i64(g, ir_unique_name(g, "axis1"), 1, &one);
				}
				m->in[3] = axis1;
			}
			infer_node(g, m, &q);
		}
		changed = 1;
	}
	ASSERT(!q.nerrors);     /* element-wise nodes and Slices of [1, N] infer */
	return changed;
}

/* ---- per-step scalars held as initializers ------------------------------------------- */

/* A traced loop that reads a schedule by the step (self.mu[t] of a
 * registered buffer, a list of floats indexed by t) is exported with each
 * step's entry folded into an initializer of its own: a scalar weight that
 * one node reads.  To the step matcher that is a different weight in every
 * step; it is a compile-time constant like the per-step constants a Python
 * counter leaves, and becomes one (pass_reroll then reads them as the
 * step's coefficient table).  Inference only: in --train builds every
 * initializer is a parameter.  A scalar read by several nodes (a learned
 * scalar shared by the steps) stays a weight. */
static int step_scalars(ir_graph *g)
{
	if (ir_root(g)->train)
		return 0;
	int changed = 0;
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		if (v->kind != VAL_WEIGHT || v->dtype != DT_F32 || !v->data || v->is_output || v->nuses != 1)
			continue;
		ir_dim n = ir_shape_numel(&v->shape);
		if (!ir_dim_is_const(n) || n.k != 1)
			continue;
		v->kind = VAL_CONST;
		changed = 1;
	}
	return changed;
}

/* An integer or bool initializer (a Gather index, a Slice bound, a shape
 * that an exporter or simplifier stored as an initializer instead of a
 * Constant node) is no parameter: nothing trains it.  A small one is a
 * constant, so that every pass reads it like the same value written as a
 * Constant (a traced loop's x[t] indices, in particular). */
enum { CANON_INT_CONST_MAX = 4096 };
static int int_initializers(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		if (v->kind != VAL_WEIGHT || !v->data || v->is_output || v->dtype == DT_F32 || v->dtype == DT_F64 ||
		    v->dtype == DT_F16 || v->dtype == DT_BF16 || v->narrow)
			continue;
		ir_dim n = ir_shape_numel(&v->shape);
		if (!ir_dim_is_const(n) || n.k > CANON_INT_CONST_MAX)
			continue;
		v->kind = VAL_CONST;
		changed = 1;
	}
	return changed;
}

int canon_views(ir_graph *g)
{
	ir_recount(g);
	int changed = unit_transposes(g);
	for (int round = 0; round < 8; round++) {
		ir_recount(g);
		if (!drop_noop_views(g))
			break;
		changed = 1;
	}
	if (changed) {
		/* the nodes and temporaries nothing reads any more */
		ir_recount(g);
		ir_drop_dead(g, IR_DEAD_TEMPS);
		ir_recount(g);
	}
	return changed;
}

/* The root graph's views once the rewrites are done: unit squeezes, shape
 * no-ops, and what nothing reads any more.  `changed`: whether anything
 * before changed the graph (then dead temporaries are swept). */
int canon_views_settled(ir_graph *g, int changed)
{
	ir_recount(g);
	/* batch_first modules called on one step transpose [B, 1, I] to
	 * [1, B, I]: a view, which the no-ops below see through */
	changed |= unit_transposes(g);
	ir_recount(g);
	changed |= unit_squeezes(g);
	ir_recount(g);
	for (int round = 0; round < 8 && drop_noop_views(g); round++) {
		changed = 1;
		ir_recount(g);
	}
	if (changed) {
		/* the nodes and temporaries nothing reads any more */
		ir_recount(g);
		ir_drop_dead(g, IR_DEAD_TEMPS);
		ir_recount(g);
	}
	return changed;
}

int pass_canon(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	(void)D;
	ir_recount(g);
	/* integer initializers first: column_steps reads step indices as
	 * constants, whichever way the file stored them */
	int changed = int_initializers(g);
	changed |= canon_column_steps(g);
	changed |= canon_step_lookups(g);
	ir_recount(g);
	changed |= step_scalars(g);
	changed |= canon_gemm_form(g);
	/* a scripted Loop's body (lower_loop.c) reads an input of unknown rank
	 * through MatMul (nn.Linear of torch.unbind's slices): Gemm there too,
	 * which pass_hoist moves out of the loop when it reads a per-step input */
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *r = g->nodes[i];
		if (r->op != OP_RECURRENCE || !r->body)
			continue;
		changed |= matmul_gemm(r->body);
		/* x.split(1, 1) keeps the time axis and the body squeezes it:
		 * Squeeze(Unsqueeze(x_t)) is x_t (the emitter wants per-step inputs
		 * read by products and element-wise nodes) */
		for (int round = 0; round < 8; round++) {
			ir_recount(g);
			if (!drop_noop_views(r->body))
				break;
			changed = 1;
			ir_recount(g);
			ir_drop_dead(r->body, IR_DEAD_ONCE);
		}
	}
	canon_views_settled(g, changed);
	return 0;
}
