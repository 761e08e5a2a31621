/* pass_gates.c: products and gates in one spelling, the second stage of
 * canonical forms (after pass_canon, before pass_reroll), so that the steps
 * of a traced loop look alike whatever style wrote their products.
 *
 * requires: pass_canon (views settled, products as Gemm, shapes known).
 * produces: on the root graph (traces) and on the bodies of scripted Loops
 *           and Scans (source onnx_loop; native and re-rolled bodies are
 *           already in this form):
 *           - products of one input, one per gate (an nn.Linear per gate,
 *             their results meeting in the step's element-wise work), are
 *             one product with the weights side by side and a column Slice
 *             per gate (inference), and an Add of the same column block of
 *             two such products is that block of their sum;
 *           - addmm and products of a Concat split into one product per
 *             operand, biases moved into a product's C (sink_biases);
 *           - gates cut by Split are Slices; x * x and x / y in one form;
 *           - the column Slices a Split of a rank-2 sequence became
 *             (torch.unbind(pixels, 1): the MomentumRNN authors' pixel
 *             MNIST loop) are per-step reads re-spelled on the [B, T, 1]
 *             view, as pass_canon spells the others (canon_column_steps);
 *           - the cell a Loop/Scan recurrence computes named (recognize.c),
 *             again where its body was respelled;
 *           - the views this leaves settled as pass_canon settles them,
 *             nodes nobody reads removed.
 * breaks:   nothing (values keep their names; graph outputs are never
 *           replaced).
 *
 * The rewrites re-spell products, so they change no number the model
 * computes (beyond the order of a GEMM's sums).
 */
#include "canon.h"
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "recognize.h"
#include "util.h"

#include <string.h>

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
			if (!x || !canon_is_param(b) || !ir_shape_eq(&x->shape, &a->out[0]->shape) ||
			    !((b->shape.rank == 1) || (b->shape.rank == 2 && ir_dim_is_const(b->shape.d[0]) &&
						       b->shape.d[0].k == 1)) ||
			    !ir_dim_eq(b->shape.d[b->shape.rank - 1], x->shape.d[1]))
				continue;
			ir_node *m = x->producer && x->producer->op == OP_ADD ? bias_free_term(x, b, 0) : NULL;
			if (!m)
				continue;
			ir_gemm_set_bias(m, b);
			/* the Add is now x + 0: its readers read x */
			ir_replace_uses(g, a->out[0], x, NULL, IR_USES_NESTED);
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
		if (!c || canon_is_param(c) || !m->out[0] || !ir_shape_eq(&c->shape, &m->out[0]->shape) ||
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
	/* in the root graph: a body's products read it as a capture, and
	 * pass_hoist can move them out of the loop */
	ir_value *v = ir_const_new(ir_root(g), ir_unique_name(g, w->name ? w->name : "W"), DT_F32, &s, NULL);
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
 * Not where weights are derived at run time (--train, a Gradient node:
 * ir_weights_at_run_time): there W is a parameter and stays whole. */
static int split_concat_products(ir_graph *g)
{
	if (ir_weights_at_run_time(g))
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
			 !m->in[0]->is_output && w && canon_is_param(w) && w->shape.rank == 2 &&
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

/* ---- one product per gate ------------------------------------------------------- */

/* A Gemm that may join others reading the same A into one product:
 * A [M, K] (transA 0, alpha 1, beta 1) times a parameter B of constant
 * shape, C absent or a parameter broadcast along the rows ([N], [1, N] or
 * one number).  Returns N, or 0. */
static int64_t gate_product_width(const ir_node *m)
{
	if (m->op != OP_GEMM || (m->nin != 2 && m->nin != 3) || m->nout != 1 || !m->out[0] || !m->in[0] ||
	    m->graph == NULL || ir_attr_int(m, "transA", 0) || ir_attr_float(m, "alpha", 1.0f) != 1.0f ||
	    (m->nin == 3 && ir_attr_float(m, "beta", 1.0f) != 1.0f))
		return 0;
	const ir_value *a = m->in[0], *w = m->in[1], *y = m->out[0];
	if (a->shape.rank != 2 || !ir_dim_is_const(a->shape.d[1]) || !canon_is_param(w) || w->shape.rank != 2 ||
	    !ir_dim_is_const(w->shape.d[0]) || !ir_dim_is_const(w->shape.d[1]) || y->shape.rank != 2 ||
	    !ir_dim_is_const(y->shape.d[1]) || a->dtype != DT_F32)
		return 0;
	int transB = (int)ir_attr_int(m, "transB", 0);
	int64_t K = w->shape.d[transB ? 1 : 0].k, N = w->shape.d[transB ? 0 : 1].k;
	if (K != a->shape.d[1].k || N != y->shape.d[1].k || N <= 0)
		return 0;
	if (m->nin == 3) {
		const ir_value *c = m->in[2];
		int64_t nc = c ? ir_shape_const_numel(&c->shape) : -1;
		if (!canon_is_param(c) || c->shape.rank > 2)
			return 0;
		if (nc != 1 && !(nc == N && c->shape.rank >= 1 && c->shape.d[c->shape.rank - 1].k == N))
			return 0;
	}
	return N;
}

/* One input of several products: the same value, or equal constants (the
 * zero state each product of a first step reads, folded apart). */
static int same_input(const ir_value *a, const ir_value *b)
{
	if (a == b)
		return 1;
	if (!ir_value_is_const(a) || !ir_value_is_const(b) || a->sym || b->sym || a->dtype != b->dtype ||
	    !ir_shape_eq(&a->shape, &b->shape))
		return 0;
	int64_t n = ir_shape_const_numel(&a->shape);
	return n >= 0 && !memcmp(a->data, b->data, (size_t)n * ir_dtype_size(a->dtype));
}

static int uf_find(int *p, int i)
{
	while (p[i] != i)
		i = p[i] = p[p[i]];
	return i;
}

/* The concatenated B and C of one ordered list of products; one copy per
 * list, so every step of a traced loop reads the same constants. */
enum { GATE_MAX = 16 };
typedef struct wcat {
	int n;
	const ir_value *w[GATE_MAX], *c[GATE_MAX];
	ir_value *W, *C;
} wcat;

static void cat_params(ir_graph *g, wcat *e, ir_node *const *mem, int transB)
{
	int64_t N = 0, K = 0, k0 = 0;
	int bias = 0;
	for (int j = 0; j < e->n; j++) {
		const ir_value *w = mem[j]->in[1];
		N += w->shape.d[transB ? 0 : 1].k;
		K = w->shape.d[transB ? 1 : 0].k;
		bias |= mem[j]->nin == 3;
	}
	ir_shape s = {.rank = 2};
	s.d[0] = ir_dim_const(transB ? N : K);
	s.d[1] = ir_dim_const(transB ? K : N);
	e->W = ir_const_new(ir_root(g), ir_unique_name(g, e->w[0]->name ? e->w[0]->name : "W"), DT_F32, &s, NULL);
	e->W->origin = "the products of one input, one per gate, as one";
	float *W = e->W->data, *C = NULL;
	if (bias) {
		ir_shape sc = {.rank = 1};
		sc.d[0] = ir_dim_const(N);
		e->C = ir_const_new(ir_root(g), ir_unique_name(g, e->c[0] && e->c[0]->name ? e->c[0]->name : "bias"), DT_F32,
				    &sc, NULL);
		e->C->origin = e->W->origin;
		C = e->C->data;
	}
	for (int j = 0; j < e->n; j++) {
		const ir_value *w = e->w[j];
		const float *src = w->data;
		int64_t n = w->shape.d[transB ? 0 : 1].k;
		if (transB)     /* [N_j, K] row blocks */
			memcpy(W + k0 * K, src, (size_t)(n * K) * sizeof *W);
		else            /* [K, N_j] column blocks */
			for (int64_t r = 0; r < K; r++)
				memcpy(W + r * N + k0, src + r * n, (size_t)n * sizeof *W);
		if (C && e->c[j]) {
			const float *b = e->c[j]->data;
			int one = ir_shape_const_numel(&e->c[j]->shape) == 1;
			for (int64_t i = 0; i < n; i++)
				C[k0 + i] = one ? b[0] : b[i];
		}       /* a product without C: zeros in its block */
		k0 += n;
	}
}

/* What the steps of merge_gate_products share. */
typedef struct gmerge {
	ir_graph *g;
	int nn, nv;             /* the graph's nodes and values */
	int *cand;              /* [nn] node -> candidate index or -1; a leader's: its concatenation */
	int ncand;
	int *rstart, *rd;       /* the readers of value v: nodes rd[rstart[v] .. rstart[v + 1]) */
	int *uf;                /* [ncand] union-find of the products that meet */
	int *group;             /* [nn] node -> leader node or -1 */
	wcat *cats;             /* the concatenated weights, one per group of weights */
	int ncat, capcat;
	ir_node ***members;     /* [nn] a leader's products */
	int *nmembers;
} gmerge;

/* The readers of every value (top-level nodes only). */
static void index_readers(gmerge *M)
{
	ir_graph *g = M->g;
	int nr = 0;
	M->rstart = arena_array(g->A, (size_t)M->nv + 2, sizeof *M->rstart);
	for (int i = 0; i < M->nn; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++)
			if (g->nodes[i]->in[k] && g->nodes[i]->in[k]->id >= 0 && g->nodes[i]->in[k]->id < M->nv &&
			    g->values[g->nodes[i]->in[k]->id] == g->nodes[i]->in[k]) {
				M->rstart[g->nodes[i]->in[k]->id + 1]++;
				nr++;
			}
	for (int v = 0; v < M->nv; v++)
		M->rstart[v + 1] += M->rstart[v];
	int *fill = arena_array(g->A, (size_t)M->nv + 1, sizeof *fill);
	M->rd = arena_array(g->A, (size_t)nr + 1, sizeof *M->rd);
	memcpy(fill, M->rstart, (size_t)M->nv * sizeof *fill);
	for (int i = 0; i < M->nn; i++)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			const ir_value *v = g->nodes[i]->in[k];
			if (v && v->id >= 0 && v->id < M->nv && g->values[v->id] == v)
				M->rd[fill[v->id]++] = i;
		}
}

/* Which products meet element-wise: a bounded walk forward from each joins
 * the products whose walks reach one node. */
static void join_meeting_products(gmerge *M)
{
	ir_graph *g = M->g;
	enum { DEPTH = 12, VISITS = 256 };
	M->uf = arena_array(g->A, (size_t)M->ncand, sizeof *M->uf);
	int *owner = arena_array(g->A, (size_t)M->nn + 1, sizeof *owner);
	int *seen = arena_array(g->A, (size_t)M->nn + 1, sizeof *seen);
	int *queue = arena_array(g->A, VISITS, sizeof *queue), *qdepth = arena_array(g->A, VISITS, sizeof *qdepth);
	for (int c = 0; c < M->ncand; c++)
		M->uf[c] = c;
	for (int i = 0; i < M->nn; i++) {
		owner[i] = -1;
		seen[i] = -1;
	}
	for (int i = 0; i < M->nn; i++) {
		if (M->cand[i] < 0)
			continue;
		int c = M->cand[i], qh = 0, qt = 0;
		queue[qt] = i;
		qdepth[qt++] = 0;
		seen[i] = c;
		while (qh < qt) {
			int u = queue[qh], du = qdepth[qh++];
			const ir_value *y = g->nodes[u]->out[0];
			if (du >= DEPTH || !y || y->id < 0 || y->id >= M->nv || g->values[y->id] != y)
				continue;
			for (int r = M->rstart[y->id]; r < M->rstart[y->id + 1]; r++) {
				int x = M->rd[r];
				const ir_node *n = g->nodes[x];
				if (seen[x] == c || !(ir_ops[n->op].kind == OPK_ELEM || canon_is_view(n)) || n->nout != 1)
					continue;
				seen[x] = c;
				if (owner[x] < 0)
					owner[x] = c;
				else
					M->uf[uf_find(M->uf, owner[x])] = uf_find(M->uf, c);
				if (qt < VISITS) {
					queue[qt] = x;
					qdepth[qt++] = du + 1;
				}
			}
		}
	}
}

/* The products in the group of leader i: of one input, one transB, one
 * meeting component, into mem; 0 when the group reads one weight twice or
 * has more than GATE_MAX products. */
static int collect_group(gmerge *M, int i, ir_node **mem, int *count)
{
	ir_graph *g = M->g;
	ir_node *m = g->nodes[i];
	int transB = (int)ir_attr_int(m, "transB", 0), n = 0, ok = 1;
	int root = uf_find(M->uf, M->cand[i]);
	for (int j = i; j < M->nn; j++) {
		ir_node *o = g->nodes[j];
		if (M->cand[j] < 0 || M->group[j] != -1 || !same_input(o->in[0], m->in[0]) ||
		    (int)ir_attr_int(o, "transB", 0) != transB || uf_find(M->uf, M->cand[j]) != root)
			continue;
		M->group[j] = -2;  /* looked at */
		if (n == GATE_MAX) {
			ok = 0;
			continue;
		}
		for (int k = 0; k < n; k++)
			ok &= mem[k]->in[1] != o->in[1];
		mem[n++] = o;
	}
	*count = n;
	return ok;
}

/* The concatenation of the weights of mem[0 .. n): the same weights share
 * one; NULL when the table is full. */
static wcat *group_weights(gmerge *M, ir_node *const *mem, int n, int transB)
{
	ir_graph *g = M->g;
	wcat *e = NULL;
	for (int k = 0; k < M->ncat && !e; k++) {
		int same = M->cats[k].n == n;
		for (int j = 0; same && j < n; j++)
			same = M->cats[k].w[j] == mem[j]->in[1] &&
			       M->cats[k].c[j] == (mem[j]->nin == 3 ? mem[j]->in[2] : NULL);
		if (same)
			e = &M->cats[k];
	}
	if (!e) {
		if (M->ncat == M->capcat)
			return NULL;
		e = &M->cats[M->ncat++];
		e->n = n;
		for (int j = 0; j < n; j++) {
			e->w[j] = mem[j]->in[1];
			e->c[j] = mem[j]->nin == 3 ? mem[j]->in[2] : NULL;
		}
		cat_params(g, e, mem, transB);
	}
	return e;
}

/* Groups: one input, one transB, one meeting component; each group's
 * leader (its first product) records its members and concatenation. */
static int form_groups(gmerge *M)
{
	ir_graph *g = M->g;
	int changed = 0;
	ir_node **mem = arena_array(g->A, GATE_MAX, sizeof *mem);
	for (int i = 0; i < M->nn; i++) {
		if (M->cand[i] < 0 || M->group[i] != -1)
			continue;
		int n, transB = (int)ir_attr_int(g->nodes[i], "transB", 0);
		if (!collect_group(M, i, mem, &n) || n < 2)
			continue;
		wcat *e = group_weights(M, mem, n, transB);
		if (!e)
			continue;
		M->members[i] = arena_array(g->A, (size_t)n, sizeof **M->members);
		memcpy(M->members[i], mem, (size_t)n * sizeof *mem);
		M->nmembers[i] = n;
		for (int j = 0; j < n; j++)
			M->group[mem[j]->id] = i;
		/* the leader's slot now names its concatenation */
		M->cand[i] = (int)(e - M->cats);
		changed = 1;
	}
	return changed;
}

/* The product of group leader i, then a Slice per member that makes the
 * member's result, appended to list. */
static void emit_merged_product(gmerge *M, int i, ir_node **list, int *nl, diag *q)
{
	ir_graph *g = M->g;
	ir_node *m = g->nodes[i];
	wcat *e = &M->cats[M->cand[i]];
	ir_node **gm = M->members[i];
	ir_node *p = ir_node_new(g, OP_GEMM, ir_unique_name(g, m->name ? m->name : "Gemm"), e->C ? 3 : 2, 1);
	p->origin = m->name;
	p->opset = m->opset;
	p->in[0] = m->in[0];
	p->in[1] = e->W;
	if (e->C)
		p->in[2] = e->C;
	if (ir_attr_int(m, "transB", 0))
		ir_attr_set_int(p, "transB", 1);
	p->out[0] = ir_value_new(g, ir_unique_name(g, "gates"), VAL_TEMP, DT_F32);
	p->out[0]->producer = p;
	ASSERT(infer_node(g, p, q) == 0);
	list[(*nl)++] = p;
	int64_t st = 0, one = 1;
	for (int j = 0; j < M->nmembers[i]; j++) {
		ir_value *y = gm[j]->out[0];
		int64_t en = st + y->shape.d[1].k;
		ir_node *sl = ir_node_new(g, OP_SLICE, ir_unique_name(g, gm[j]->name ? gm[j]->name : "Slice"), 5, 1);
		sl->origin = gm[j]->name;
		sl->opset = gm[j]->opset;
		sl->in[0] = p->out[0];
		sl->in[1] = ir_const_i64(g, ir_unique_name(g, "starts"), 1, &st);
		sl->in[2] = ir_const_i64(g, ir_unique_name(g, "ends"), 1, &en);
		sl->in[3] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &one);
		sl->in[4] = ir_const_i64(g, ir_unique_name(g, "steps"), 1, &one);
		sl->out[0] = y;
		y->producer = sl;
		ASSERT(infer_node(g, sl, q) == 0);
		list[(*nl)++] = sl;
		st = en;
	}
}

/* The node list with each group's products replaced by the merged one. */
static void rebuild_nodes(gmerge *M)
{
	ir_graph *g = M->g;
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	ir_node **list = arena_array(g->A, 2 * (size_t)M->nn + 1, sizeof *list);
	int nl = 0;
	for (int i = 0; i < M->nn; i++) {
		ir_node *m = g->nodes[i];
		if (M->group[i] < 0) {
			list[nl++] = m;
			continue;
		}
		if (M->group[i] != i)
			continue;       /* joined into the product at its leader */
		emit_merged_product(M, i, list, &nl, &q);
	}
	ir_set_nodes(g, list, nl);
}

/* Products of one input, one per gate -- i = sigmoid(W_ii(x) + W_hi(h)),
 * f = sigmoid(W_if(x) + W_hf(h)), ... with an nn.Linear per gate and
 * source -- are one product of the input with the weights side by side,
 * each gate reading its column block: Gemm(A, B_1, C_1) .. Gemm(A, B_n,
 * C_n) is Gemm(A, [B_1 .. B_n], [C_1 .. C_n]) and a Slice per block, in
 * node order.  Only products whose results meet through element-wise
 * operations within a few nodes are one step's gates (a head on h, or the
 * next layer's product of the same h, is not joined); a group that reads
 * one weight twice is not one step's and stays.  Not where weights are
 * derived at run time (--train, a Gradient node: ir_weights_at_run_time):
 * there the weights are parameters and stay apart. */
static int merge_gate_products(ir_graph *g)
{
	if (ir_weights_at_run_time(g))
		return 0;
	gmerge M0 = {.g = g, .nn = g->nnodes}, *M = &M0;
	int nn = M->nn;
	M->cand = arena_array(g->A, (size_t)nn + 1, sizeof *M->cand);
	for (int i = 0; i < nn; i++) {
		M->cand[i] = -1;
		if (gate_product_width(g->nodes[i]) > 0)
			M->cand[i] = M->ncand++;
	}
	if (M->ncand < 2)
		return 0;
	M->nv = g->nvalues;
	index_readers(M);
	join_meeting_products(M);
	M->group = arena_array(g->A, (size_t)nn + 1, sizeof *M->group);
	for (int i = 0; i < nn; i++)
		M->group[i] = -1;
	M->capcat = 64;
	M->cats = arena_array(g->A, (size_t)M->capcat, sizeof *M->cats);
	M->members = arena_array(g->A, (size_t)nn + 1, sizeof *M->members);
	M->nmembers = arena_array(g->A, (size_t)nn + 1, sizeof *M->nmembers);
	if (!form_groups(M))
		return 0;
	rebuild_nodes(M);
	return 1;
}

/* The column block [s, e) of a Slice on axis 1 with step 1: returns the
 * sliced value. */
static ir_value *column_block(const ir_value *v, int64_t *s, int64_t *e)
{
	const ir_node *n = v ? v->producer : NULL;
	if (!n || n->op != OP_SLICE || n->nin < 4 || !n->in[0] || n->in[0]->shape.rank != 2 ||
	    !ir_dim_is_const(n->in[0]->shape.d[1]) || v->shape.rank != 2 || !ir_dim_is_const(v->shape.d[1]))
		return NULL;
	for (int k = 1; k < n->nin; k++)
		if (!ir_value_is_const(n->in[k]) || ir_shape_const_numel(&n->in[k]->shape) != 1)
			return NULL;
	int64_t ax = ir_const_int(n->in[3], 0), W = n->in[0]->shape.d[1].k;
	if ((ax != 1 && ax != -1) || (n->nin > 4 && ir_const_int(n->in[4], 0) != 1))
		return NULL;
	int64_t st = ir_const_int(n->in[1], 0), en = ir_const_int(n->in[2], 0);
	if (st < 0 || en > W || en - st != v->shape.d[1].k || !ir_dim_eq(v->shape.d[0], n->in[0]->shape.d[0]))
		return NULL;
	*s = st;
	*e = en;
	return n->in[0];
}

/* Slice(P, [s, e)) + Slice(Q, [s, e)) for column blocks that together
 * cover P and Q (two products of gates, read block by block:
 * W_ii(x) + W_hi(h) after merge_gate_products) is the block [s, e) of
 * P + Q: the pre-activation of all gates is one sum, as when each source
 * has one product. */
static int sum_of_blocks(ir_graph *g)
{
	int nn = g->nnodes, changed = 0;
	ir_node **list = arena_array(g->A, 2 * (size_t)nn + 1, sizeof *list);
	char *done = arena_array(g->A, (size_t)nn + 1, 1), *tried = arena_array(g->A, (size_t)nn + 1, 1);
	ir_value **sum = arena_array(g->A, (size_t)nn + 1, sizeof *sum);   /* Add i -> the sum it reads */
	ir_node **first = arena_array(g->A, (size_t)nn + 1, sizeof *first); /* first Add -> the sum node */
	int *adds = arena_array(g->A, (size_t)nn + 1, sizeof *adds);
	int nl = 0;
	diag q;
	diag_init(&q, NULL);
	q.quiet = 1;
	for (int i = 0; i < nn; i++) {
		ir_node *a = g->nodes[i];
		int64_t s0, e0, s1, e1;
		ir_value *P, *Q;
		if (done[i] || tried[i] || a->op != OP_ADD || a->nin != 2 || !a->out[0] || a->out[0]->shape.rank != 2 ||
		    !(P = column_block(a->in[0], &s0, &e0)) || !(Q = column_block(a->in[1], &s1, &e1)) || P == Q ||
		    s0 != s1 || e0 != e1 || !ir_shape_eq(&P->shape, &Q->shape) ||
		    !ir_shape_eq(&a->out[0]->shape, &a->in[0]->shape) || !P->producer || !Q->producer ||
		    P->producer->op != OP_GEMM || Q->producer->op != OP_GEMM || P->dtype != DT_F32 || Q->dtype != DT_F32)
			continue;
		/* every Add of blocks of P and Q: their blocks must tile the columns */
		int64_t W = P->shape.d[1].k, covered = 0;
		int nadd = 0, ok = 1;
		for (int j = i; j < nn && j < i + 4096 && ok; j++) {        /* one step's Adds */
			ir_node *b = g->nodes[j];
			int64_t s2, e2, s3, e3;
			ir_value *P2, *Q2;
			if (done[j] || b->op != OP_ADD || b->nin != 2 || !b->out[0] ||
			    !(P2 = column_block(b->in[0], &s2, &e2)) || !(Q2 = column_block(b->in[1], &s3, &e3)) ||
			    !((P2 == P && Q2 == Q) || (P2 == Q && Q2 == P)) || s2 != s3 || e2 != e3 ||
			    !ir_shape_eq(&b->out[0]->shape, &b->in[0]->shape))
				continue;
			for (int k = 0; k < nadd; k++) {
				int64_t sk, ek;
				column_block(g->nodes[adds[k]]->in[0], &sk, &ek);
				ok &= e2 <= sk || s2 >= ek;     /* blocks do not overlap */
			}
			adds[nadd++] = j;
			covered += e2 - s2;
		}
		if (!ok || covered != W || nadd < 2) {
			for (int k = 0; k < nadd; k++)
				tried[adds[k]] = 1;
			continue;
		}
		ir_node *s = ir_node_new(g, OP_ADD, ir_unique_name(g, a->name ? a->name : "Add"), 2, 1);
		s->origin = a->name;
		s->opset = a->opset;
		s->in[0] = P;
		s->in[1] = Q;
		s->out[0] = ir_value_new(g, ir_unique_name(g, "preact"), VAL_TEMP, DT_F32);
		s->out[0]->producer = s;
		if (infer_node(g, s, &q) || !ir_shape_eq(&s->out[0]->shape, &P->shape))
			continue;
		first[i] = s;
		for (int k = 0; k < nadd; k++) {
			done[adds[k]] = 1;
			sum[adds[k]] = s->out[0];
		}
		changed = 1;
	}
	if (!changed)
		return 0;
	/* each Add of blocks becomes the block of the sum (the sum placed first) */
	for (int i = 0; i < nn; i++) {
		ir_node *a = g->nodes[i];
		if (first[i])
			list[nl++] = first[i];
		if (done[i]) {
			int64_t st, en, one = 1;
			column_block(a->in[0], &st, &en);
			ir_value **in = arena_array(g->A, 5, sizeof *in);
			in[0] = sum[i];
			in[1] = ir_const_i64(g, ir_unique_name(g, "starts"), 1, &st);
			in[2] = ir_const_i64(g, ir_unique_name(g, "ends"), 1, &en);
			in[3] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &one);
			in[4] = ir_const_i64(g, ir_unique_name(g, "steps"), 1, &one);
			a->op = OP_SLICE;
			a->in = in;
			a->nin = 5;
			a->nattrs = 0;
			a->attrs = NULL;
			ASSERT(infer_node(g, a, &q) == 0);
		}
		list[nl++] = a;
	}
	ir_set_nodes(g, list, nl);
	return 1;
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
		    r->in[0]->shape.rank != 2 || !canon_is_step_index(n->in[1]) || !n->out[0] || n->out[0]->shape.rank != 2)
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
		int ok = x && x->shape.rank == 2 && (ax == 1 || ax == -1) && m->nout >= 1;
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

/* The rewrites of products and gates, on the root graph (traces) or on the
 * body of a Loop/Scan already lowered to a recurrence (its step as the
 * script wrote it); uses are recounted over the whole compilation. */
static int canon_products(ir_graph *g)
{
	ir_graph *root = ir_root(g);
	int changed = 0;
	if (g != root) {        /* the root's went first, before the bodies' */
		ir_recount(root);
		changed |= canon_gemm_form(g);
	}
	ir_recount(root);
	changed |= split_addmm(g);
	ir_recount(root);
	changed |= split_concat_products(g);
	ir_recount(root);
	changed |= sink_biases(g);
	ir_recount(root);
	changed |= merge_gate_products(g);
	ir_recount(root);
	changed |= sum_of_blocks(g);
	ir_recount(root);
	changed |= gate_blocks(g);
	ir_recount(root);
	changed |= split_to_slices(g);
	ir_recount(root);
	changed |= square_form(g);
	ir_recount(root);
	changed |= quotient_form(g);
	ir_recount(root);
	return changed;
}

/* The second stage of canonical forms ("gates", after canon): products and
 * gates in one spelling (canon_products), on the root graph (traces) and on
 * the bodies of scripted Loops and Scans; the views that leaves settled as
 * canon settles them. */
int pass_gates(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	(void)D;
	ir_recount(g);
	int changed = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *r = g->nodes[i];
		if (r->op != OP_RECURRENCE || !r->body)
			continue;
		/* the products and gates of the body, spelled as in a trace */
		/* (a scripted Loop's or a Scan's: native and re-rolled bodies
		 * are already in this form) */
		int scripted = ir_rec_scripted(r);
		int respelled = scripted && canon_products(r->body);
		if (respelled) {
			changed = 1;
			ir_recount(g);
			ir_drop_dead(r->body, IR_DEAD_ONCE);
			ir_recount(g);
		}
		/* `cellc info` names the cell a Loop/Scan computes, as for traces
		 * (again when its body was respelled) */
		if (!ir_attr_find(r, "cell") || respelled)
			recognize_recurrence(r);
	}
	changed |= canon_products(g);
	changed = canon_views_settled(g, changed);
	/* the column Slices of a Split made above (torch.unbind(x, 1) of a
	 * rank-2 sequence: pixel-by-pixel MNIST) are per-step reads too, once
	 * the views around them settled: spelled as canon spells the others */
	ir_recount(g);
	if (changed && canon_column_steps(g))
		canon_views_settled(g, 1);
	return 0;
}
