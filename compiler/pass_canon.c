/* pass_canon.c: one spelling for what authors write in many ways, so that
 * the steps of a traced loop look alike whatever style produced them.
 *
 * requires: pass_infer (shapes known, constants folded, nuses/ids fresh).
 * produces: - no shape no-ops: a view (Reshape, Squeeze, Unsqueeze, Flatten,
 *             Identity) whose result has the shape of the value at the root
 *             of its chain of views is gone, its readers read the root
 *             (x.view(-1, x.size(1)), h.unsqueeze(0) ... .squeeze(0),
 *             gates.squeeze() of a [B, 4H] matrix);
 *           - a chain of views reads its root directly where the last view
 *             is a Reshape to a constant shape (view of a view);
 *           - per-step reads of a rank-2 sequence (x[:, t] of x [B, T], or
 *             x[t] of x [T, B], then .view(-1, 1) / .unsqueeze(1), or
 *             x[:, t:t+1]) read a [B, 1] slice of the [B, T, 1] view of x,
 *             as if the sequence had one feature per step (pixel-by-pixel
 *             MNIST), which is the form pass_reroll finds steps in;
 *           - a scalar initializer that one node reads (a schedule entry
 *             the exporter folded per step) is a constant (inference);
 *           - nodes nobody reads are removed.
 * breaks:   nothing (values keep their names; graph outputs are never
 *           replaced).
 *
 * The rewrites only remove or re-spell views, so they change no number
 * the model computes; they are structural, not a list of known models.
 */
#include "infer.h"
#include "passes.h"
#include "recognize.h"
#include "util.h"

#include <string.h>

static int is_view(const ir_node *n)
{
	return n->op == OP_RESHAPE || n->op == OP_SQUEEZE || n->op == OP_UNSQUEEZE ||
	       n->op == OP_FLATTEN || n->op == OP_IDENTITY;
}

/* Every read of `from` (in g and the bodies nested in it) reads `to`. */
static void replace_uses(ir_graph *g, const ir_value *from, ir_value *to)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] == from)
				n->in[k] = to;
		if (n->body)
			replace_uses(n->body, from, to);
	}
}

/* The value at the root of v's chain of views. */
static ir_value *view_root(ir_value *v)
{
	while (v && v->producer && is_view(v->producer) && v->producer->nin >= 1 && v->producer->in[0] &&
	       !v->is_output)
		v = v->producer->in[0];
	return v;
}

/* Shape no-ops: 1 if anything changed. */
static int drop_noop_views(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (!is_view(n) || n->nout != 1 || !n->out[0] || n->out[0]->is_output || !n->in[0])
			continue;
		ir_value *y = n->out[0], *r = view_root(n->in[0]);
		if (y->shape.rank < 0 || r->shape.rank < 0 || r->dtype != y->dtype)
			continue;
		if (ir_shape_eq(&r->shape, &y->shape)) {
			if (y->nuses > 0) {
				replace_uses(g, y, r);
				changed = 1;
			}
			continue;
		}
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

/* Drops the nodes of recurrence body b whose results nothing reads (uses
 * counted from the root: the body's outputs count). */
static void body_drop_dead(ir_graph *b)
{
	int k = 0;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		int live = n->body != NULL;
		for (int o = 0; o < n->nout; o++)
			live |= n->out[o] && n->out[o]->nuses > 0;
		if (live)
			b->nodes[k++] = n;
	}
	b->nnodes = k;
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
			if (k != 0 || !is_view(n) || !y || y->shape.rank != 2 || !ir_dim_eq(y->shape.d[0], v->shape.d[0]) ||
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

static int is_step_index(const ir_value *t)
{
	return ir_value_is_const(t) && (t->dtype == DT_I64 || t->dtype == DT_I32) && t->shape.rank == 0;
}

/* Gather(x, t, axis) of a rank-2 f32 x read as a column, and
 * Slice(x, t, t+1, axis) of one: re-spelled on the [.., .., 1] view. */
static int column_steps(ir_graph *g)
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
		if (ok && n->op == OP_GATHER && n->nin == 2 && is_step_index(n->in[1]) &&
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
					if (infer_node(g, n, &q) || infer_node(g, sq, &q) ||
					    !ir_shape_eq(&y->shape, &sq->out[0]->shape)) {
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

/* ---- products ------------------------------------------------------------------- */

static int is_param(const ir_value *v)
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

/* MatMul(A, W) of two matrices is Gemm(A, W); a bias vector added to a
 * bias-free Gemm that nothing else reads is the Gemm's C: x @ W + b,
 * F.linear and nn.Linear then read alike. */
static int gemm_form(ir_graph *g)
{
	int changed = matmul_gemm(g);
	ir_recount(g);
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *a = g->nodes[i];
		if (a->op != OP_ADD || a->nin != 2 || !a->out[0])
			continue;
		for (int k = 0; k < 2; k++) {
			ir_value *p = a->in[k], *b = a->in[1 - k];
			ir_node *m = p ? p->producer : NULL;
			if (!m || m->op != OP_GEMM || m->nin != 2 || p->nuses != 1 || p->is_output || !is_param(b) ||
			    m->graph != g || !ir_shape_eq(&p->shape, &a->out[0]->shape) || p->shape.rank != 2 ||
			    ir_attr_float(m, "alpha", 1.0f) != 1.0f ||
			    !((b->shape.rank == 1 && ir_dim_eq(b->shape.d[0], p->shape.d[1])) ||
			      (b->shape.rank == 2 && ir_dim_is_const(b->shape.d[0]) && b->shape.d[0].k == 1 &&
			       ir_dim_eq(b->shape.d[1], p->shape.d[1]))))
				continue;
			ir_value **in = arena_array(g->A, 3, sizeof *in);
			in[0] = m->in[0];
			in[1] = m->in[1];
			in[2] = b;
			m->in = in;
			m->nin = 3;
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

/* A bias-free Gemm that a sum of single-use Adds under v reads (depth
 * bounded), producing [.., N]. */
static ir_node *bias_free_term(ir_value *v, const ir_value *bias, int depth)
{
	ir_node *n = v ? v->producer : NULL;
	if (!n || depth > 6 || v->nuses != 1 || v->is_output)
		return NULL;
	if (n->op == OP_GEMM && n->nin == 2 && v->shape.rank == 2 && ir_attr_float(n, "alpha", 1.0f) == 1.0f &&
	    ir_dim_eq(v->shape.d[1], bias->shape.d[bias->shape.rank - 1]))
		return n;
	if (n->op != OP_ADD || n->nin != 2)
		return NULL;
	for (int k = 0; k < 2; k++) {
		ir_node *m = n->in[k] && ir_shape_eq(&n->in[k]->shape, &v->shape)
				     ? bias_free_term(n->in[k], bias, depth + 1) : NULL;
		if (m)
			return m;
	}
	return NULL;
}

/* A bias vector added to a sum that holds a bias-free product:
 * x W + b_ih + h U + b_hh is (x W + b_ih) + (h U + b_hh), the bias goes
 * to the product's C and the Add reads the sum alone. */
static int sink_biases(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *a = g->nodes[i];
		if (a->op != OP_ADD || a->nin != 2 || !a->out[0] || a->out[0]->shape.rank != 2 ||
		    a->out[0]->is_output)
			continue;
		for (int k = 0; k < 2; k++) {
			ir_value *x = a->in[k], *b = a->in[1 - k];
			if (!x || !is_param(b) || !ir_shape_eq(&x->shape, &a->out[0]->shape) ||
			    !((b->shape.rank == 1) || (b->shape.rank == 2 && ir_dim_is_const(b->shape.d[0]) &&
						       b->shape.d[0].k == 1)) ||
			    !ir_dim_eq(b->shape.d[b->shape.rank - 1], x->shape.d[1]))
				continue;
			ir_node *m = x->producer && x->producer->op == OP_ADD ? bias_free_term(x, b, 0) : NULL;
			if (!m)
				continue;
			ir_value **in = arena_array(g->A, 3, sizeof *in);
			in[0] = m->in[0];
			in[1] = m->in[1];
			in[2] = b;
			m->in = in;
			m->nin = 3;
			/* the Add is now x + 0: its readers read x */
			replace_uses(g, a->out[0], x);
			changed = 1;
			break;
		}
	}
	return changed;
}

/* Gemm(A, B, C) whose C is a computed matrix (torch.addmm(v, h, U)) is
 * Gemm(A, B) + C: a product's C is only ever a constant bias. */
static int split_addmm(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	ir_node **list = arena_array(g->A, 2 * (size_t)g->nnodes + 1, sizeof *list);
	int n = 0, changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *m = g->nodes[i];
		list[n++] = m;
		ir_value *c = m->op == OP_GEMM && m->nin == 3 ? m->in[2] : NULL;
		if (!c || is_param(c) || !m->out[0] || !ir_shape_eq(&c->shape, &m->out[0]->shape) ||
		    ir_attr_float(m, "beta", 1.0f) != 1.0f)
			continue;
		ir_value *y = m->out[0];
		ir_value *p = ir_value_new(g, ir_unique_name(g, y->name ? y->name : "product"), VAL_TEMP, y->dtype);
		ir_node *a = ir_node_new(g, OP_ADD, ir_unique_name(g, "Add"), 2, 1);
		a->origin = m->name;
		a->opset = m->opset;
		m->nin = 2;
		m->out[0] = p;
		p->producer = m;
		a->in[0] = p;
		a->in[1] = c;
		a->out[0] = y;
		y->producer = a;
		if (infer_node(g, m, &q) || infer_node(g, a, &q)) {
			/* cannot happen for shapes that were inferred: undo */
			m->nin = 3;
			m->out[0] = y;
			y->producer = m;
			infer_node(g, m, &q);
			continue;
		}
		list[n++] = a;
		changed = 1;
	}
	if (changed)
		ir_set_nodes(g, list, n);
	return changed;
}

/* The columns [k0, k0 + kn) of the product's B as a constant (rows of B
 * when transB); one copy per (B, k0, kn). */
typedef struct wsplit {
	const ir_value *w;
	int64_t k0, kn;
	ir_value *part;
} wsplit;

static ir_value *b_part(ir_graph *g, wsplit *tab, int *ntab, int cap, const ir_value *w, int transB,
			int64_t k0, int64_t kn)
{
	for (int i = 0; i < *ntab; i++)
		if (tab[i].w == w && tab[i].k0 == k0 && tab[i].kn == kn)
			return tab[i].part;
	if (*ntab >= cap)
		return NULL;
	int64_t r = w->shape.d[0].k, c = w->shape.d[1].k;
	ir_shape s = {.rank = 2};
	s.d[0] = ir_dim_const(transB ? r : kn);
	s.d[1] = ir_dim_const(transB ? kn : c);
	ir_value *v = ir_const_new(g, ir_unique_name(g, w->name ? w->name : "W"), DT_F32, &s, NULL);
	const float *src = w->data;
	float *dst = v->data;
	if (transB)             /* B^T is [N, K]: columns k0.. of every row */
		for (int64_t i = 0; i < r; i++)
			memcpy(dst + i * kn, src + i * c + k0, (size_t)kn * sizeof *dst);
	else                    /* B is [K, N]: rows k0.. */
		memcpy(dst, src + k0 * c, (size_t)(kn * c) * sizeof *dst);
	v->origin = w->name;
	tab[(*ntab)++] = (wsplit){w, k0, kn, v};
	return v;
}

/* Gemm(Concat([a, b, ..], axis 1), W, bias) -- nn.Linear on cat([x, h]) --
 * is Gemm(a, W_a, bias) + Gemm(b, W_b) + ..: the input and the recurrent
 * product then stand apart, as in every other spelling of the cell.
 * Inference only: in --train builds W is a parameter and stays whole. */
static int split_concat_products(ir_graph *g)
{
	if (g->train)
		return 0;
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	int cap = 64, ntab = 0, changed = 0;
	wsplit *tab = arena_array(g->A, (size_t)cap, sizeof *tab);
	ir_node **list = NULL;
	int n = 0, listcap = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *m = g->nodes[i];
		ir_node *cc = m->op == OP_GEMM && m->in[0] ? m->in[0]->producer : NULL;
		ir_value *w = m->nin >= 2 ? m->in[1] : NULL;
		int ok = cc && cc->op == OP_CONCAT && cc->nin >= 2 && cc->nin <= 8 && m->in[0]->nuses == 1 &&
			 !m->in[0]->is_output && w && is_param(w) && w->shape.rank == 2 &&
			 ir_dim_is_const(w->shape.d[0]) && ir_dim_is_const(w->shape.d[1]) &&
			 !ir_attr_int(m, "transA", 0) && ir_attr_float(m, "alpha", 1.0f) == 1.0f &&
			 m->out[0] && m->out[0]->shape.rank == 2;
		int64_t ax = ok ? ir_attr_int(cc, "axis", 0) : 0;
		ok = ok && (ax == 1 || ax == -1);
		for (int k = 0; ok && k < cc->nin; k++)
			ok = cc->in[k] && cc->in[k]->shape.rank == 2 && ir_dim_is_const(cc->in[k]->shape.d[1]);
		if (listcap < n + 2 * 9 + 1) {
			listcap = 2 * (n + 2 * 9 + 1) + g->nnodes;
			list = arena_grow(g->A, list, (size_t)n, (size_t)listcap, sizeof *list);
		}
		if (!ok) {
			list[n++] = m;
			continue;
		}
		int transB = (int)ir_attr_int(m, "transB", 0);
		ir_value *acc = NULL, *y = m->out[0];
		int64_t k0 = 0;
		for (int k = 0; k < cc->nin && ok; k++) {
			int64_t kn = cc->in[k]->shape.d[1].k;
			ir_value *part = b_part(g, tab, &ntab, cap, w, transB, k0, kn);
			k0 += kn;
			if (!part) {
				ok = 0;
				break;
			}
			ir_node *pm = ir_node_new(g, OP_GEMM, ir_unique_name(g, m->name ? m->name : "Gemm"),
						  k == 0 && m->nin == 3 ? 3 : 2, 1);
			pm->origin = m->name;
			pm->opset = m->opset;
			pm->in[0] = cc->in[k];
			pm->in[1] = part;
			if (k == 0 && m->nin == 3)
				pm->in[2] = m->in[2];
			if (transB)
				ir_attr_set_int(pm, "transB", 1);
			if (m->nin == 3)
				ir_attr_set_float(pm, "beta", ir_attr_float(m, "beta", 1.0f));
			pm->out[0] = ir_value_new(g, ir_unique_name(g, y->name ? y->name : "product"), VAL_TEMP, DT_F32);
			pm->out[0]->producer = pm;
			ok = infer_node(g, pm, &q) == 0;
			list[n++] = pm;
			if (!acc) {
				acc = pm->out[0];
				continue;
			}
			ir_node *a = ir_node_new(g, OP_ADD, ir_unique_name(g, "Add"), 2, 1);
			a->origin = m->name;
			a->opset = m->opset;
			a->in[0] = acc;
			a->in[1] = pm->out[0];
			a->out[0] = k + 1 == cc->nin ? y : ir_value_new(g, ir_unique_name(g, "sum"), VAL_TEMP, DT_F32);
			a->out[0]->producer = a;
			ok = ok && infer_node(g, a, &q) == 0;
			list[n++] = a;
			acc = a->out[0];
		}
		/* shapes were known, so this holds; a failure is an internal error */
		ASSERT(ok && k0 == (transB ? w->shape.d[1].k : w->shape.d[0].k));
		changed = 1;
	}
	if (changed)
		ir_set_nodes(g, list, n);
	return changed;
}

/* Gather(Reshape(a [B, G*H]) -> [B, G, H], k, axis 1) -- gates viewed
 * [B, 4, H] and indexed gates[:, k] -- is the column block
 * Slice(a, k*H, (k+1)*H, axis 1). */
static int gate_blocks(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		ir_value *v = n->op == OP_GATHER && n->nin == 2 ? n->in[0] : NULL;
		ir_node *r = v ? v->producer : NULL;
		if (!r || (r->op != OP_RESHAPE && r->op != OP_UNSQUEEZE) || v->shape.rank != 3 || !r->in[0] ||
		    r->in[0]->shape.rank != 2 || !is_step_index(n->in[1]) || !n->out[0] || n->out[0]->shape.rank != 2)
			continue;
		ir_value *a = r->in[0];
		int64_t ax = ir_attr_int(n, "axis", 0), k = ir_const_int(n->in[1], 0);
		if (ax < 0)
			ax += 3;
		if (ax != 1 || !ir_dim_eq(v->shape.d[0], a->shape.d[0]) || !ir_dim_is_const(v->shape.d[1]) ||
		    !ir_dim_is_const(v->shape.d[2]) || !ir_dim_is_const(a->shape.d[1]) ||
		    v->shape.d[1].k * v->shape.d[2].k != a->shape.d[1].k)
			continue;
		int64_t G = v->shape.d[1].k, H = v->shape.d[2].k;
		if (H == 1)
			continue;       /* x[:, t] of a sequence's [B, T, 1] view: a step, not a gate */
		if (k < 0)
			k += G;
		if (k < 0 || k >= G)
			continue;
		int64_t st = k * H, en = (k + 1) * H, one = 1;
		ir_value **in = arena_array(g->A, 5, sizeof *in);
		in[0] = a;
		in[1] = ir_const_i64(g, ir_unique_name(g, "starts"), 1, &st);
		in[2] = ir_const_i64(g, ir_unique_name(g, "ends"), 1, &en);
		in[3] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &one);
		in[4] = ir_const_i64(g, ir_unique_name(g, "steps"), 1, &one);
		ir_node save = *n;
		n->op = OP_SLICE;
		n->in = in;
		n->nin = 5;
		n->nattrs = 0;
		n->attrs = NULL;
		if (infer_node(g, n, &q) || !ir_shape_eq(&n->out[0]->shape, &save.out[0]->shape)) {
			*n = save;
			infer_node(g, n, &q);
			continue;
		}
		changed = 1;
	}
	return changed;
}

/* Pow(x, 2) is x * x (grad.pow(2), grad ** 2). */
static int square_form(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op != OP_POW || n->nin != 2 || !n->in[0] || n->in[0]->dtype != DT_F32 ||
		    !ir_value_is_const(n->in[1]) || ir_shape_const_numel(&n->in[1]->shape) != 1 ||
		    ir_const_num(n->in[1], 0) != 2.0 || !n->out[0] || !ir_shape_eq(&n->out[0]->shape, &n->in[0]->shape))
			continue;
		n->op = OP_MUL;
		n->in[1] = n->in[0];
		changed = 1;
	}
	return changed;
}

/* x * (1 / y) is x / y (a reciprocal built first, then applied). */
static int quotient_form(ir_graph *g)
{
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op != OP_MUL || n->nin != 2 || !n->out[0])
			continue;
		for (int k = 0; k < 2; k++) {
			ir_value *r = n->in[k];
			ir_node *d = r ? r->producer : NULL;
			if (!d || d->op != OP_DIV || d->nin != 2 || r->nuses != 1 || r->is_output ||
			    !ir_value_is_const(d->in[0]) || d->in[0]->dtype != DT_F32 ||
			    ir_shape_const_numel(&d->in[0]->shape) != 1 || ir_const_num(d->in[0], 0) != 1.0 ||
			    !ir_shape_eq(&n->in[1 - k]->shape, &n->out[0]->shape) ||
			    !ir_shape_eq(&d->in[1]->shape, &n->out[0]->shape) || n->in[1 - k]->dtype != DT_F32)
				continue;
			n->op = OP_DIV;
			n->in[0] = n->in[1 - k];
			n->in[1] = d->in[1];
			changed = 1;
			break;
		}
	}
	return changed;
}

/* Split(x [B, N], axis 1) into column blocks -- gates.chunk(4, 1),
 * torch.split(gates, H, 1) -- is one Slice per block: the same column
 * views as gates[:, k*H:(k+1)*H]. */
static int split_to_slices(ir_graph *g)
{
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	ir_node **list = NULL;
	int n = 0, cap = 0, changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *m = g->nodes[i];
		if (n + m->nout + 1 > cap) {
			int nc = 2 * (n + m->nout + 1) + g->nnodes;
			list = arena_grow(g->A, list, (size_t)cap, (size_t)nc, sizeof *list);
			cap = nc;
		}
		ir_value *x = m->op == OP_SPLIT ? m->in[0] : NULL;
		int64_t ax = x ? ir_attr_int(m, "axis", 0) : 0;
		int ok = x && x->shape.rank == 2 && (ax == 1 || ax == -1) && m->nout >= 1 && m->nout <= 64;
		for (int o = 0; ok && o < m->nout; o++)
			ok = m->out[o] && m->out[o]->shape.rank == 2 && ir_dim_is_const(m->out[o]->shape.d[1]) &&
			     !m->out[o]->is_output;
		if (!ok) {
			list[n++] = m;
			continue;
		}
		int64_t st = 0, one = 1;
		for (int o = 0; o < m->nout; o++) {
			int64_t en = st + m->out[o]->shape.d[1].k;
			ir_node *sl = ir_node_new(g, OP_SLICE, ir_unique_name(g, m->name ? m->name : "Split"), 5, 1);
			sl->origin = m->name;
			sl->opset = m->opset;
			sl->in[0] = x;
			sl->in[1] = ir_const_i64(g, ir_unique_name(g, "starts"), 1, &st);
			sl->in[2] = ir_const_i64(g, ir_unique_name(g, "ends"), 1, &en);
			sl->in[3] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &one);
			sl->in[4] = ir_const_i64(g, ir_unique_name(g, "steps"), 1, &one);
			sl->out[0] = m->out[o];
			m->out[o]->producer = sl;
			ASSERT(infer_node(g, sl, &q) == 0);
			list[n++] = sl;
			st = en;
		}
		changed = 1;
	}
	if (changed)
		ir_set_nodes(g, list, n);
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
	if (g->train)
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

/* ---- dead nodes ------------------------------------------------------------------- */

static void drop_dead(ir_graph *g)
{
	for (int again = 1; again;) {
		ir_recount(g);
		again = 0;
		int k = 0;
		for (int i = 0; i < g->nnodes; i++) {
			ir_node *n = g->nodes[i];
			int live = n->body != NULL;
			for (int o = 0; o < n->nout; o++)
				live |= n->out[o] && (n->out[o]->nuses > 0 || n->out[o]->is_output);
			if (live)
				g->nodes[k++] = n;
			else
				again = 1;
		}
		g->nnodes = k;
	}
	int m = 0;
	for (int i = 0; i < g->nvalues; i++) {
		ir_value *v = g->values[i];
		if (v->kind != VAL_TEMP || v->is_output || v->nuses > 0 || (v->producer && v->producer->graph == g &&
		    v->producer->id >= 0 && v->producer->id < g->nnodes && g->nodes[v->producer->id] == v->producer))
			g->values[m++] = v;
	}
	g->nvalues = m;
	ir_recount(g);
}

int pass_canon(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	(void)D;
	ir_recount(g);
	int changed = column_steps(g);
	ir_recount(g);
	changed |= step_scalars(g);
	changed |= gemm_form(g);
	/* a scripted Loop's body (onnx_loop.c) reads an input of unknown rank
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
			body_drop_dead(r->body);
		}
		/* `cellc info` names the cell a Loop/Scan computes, as for traces */
		if (!ir_attr_find(r, "cell"))
			recognize_recurrence(r);
	}
	ir_recount(g);
	changed |= split_addmm(g);
	ir_recount(g);
	changed |= split_concat_products(g);
	ir_recount(g);
	changed |= sink_biases(g);
	ir_recount(g);
	changed |= gate_blocks(g);
	ir_recount(g);
	changed |= split_to_slices(g);
	ir_recount(g);
	changed |= square_form(g);
	ir_recount(g);
	changed |= quotient_form(g);
	ir_recount(g);
	for (int round = 0; round < 8 && drop_noop_views(g); round++) {
		changed = 1;
		ir_recount(g);
	}
	if (changed)
		drop_dead(g);
	return 0;
}
