/* pass_split.c: gate slices pushed up through element-wise math.
 *
 * requires: pass_hoist (bodies hold the per-step products and the gate
 *           math); shapes known.
 * produces: in every recurrence body, a Slice on the last axis (constant
 *           start/end, step 1) of a value made by an element-wise node is
 *           replaced by that node applied to slices of its operands:
 *             Slice(op(x, y)) -> op(Slice(x), Slice(y))
 *           Operands of full width are sliced, operands that broadcast
 *           along the last axis (width 1, scalars) stay, constant and weight
 *           vectors (biases) become new constants/weights holding the slice.
 *           This repeats until the slices reach products, per-step inputs or
 *           states, where a last-axis slice is a column view
 *           (ir_is_column_view) -- a column offset inside the fused loop.
 *           PyTorch's chunk/split of `W_h h + b_h + u` and the native
 *           format's split() so become one fused loop over [B, H] instead of a
 *           stored [B, G] value and G/H copies.  Values that other nodes
 *           still read in full stay computed (the sliced copies are a few
 *           extra flops inside the fused loop).
 *           A state [B, k*H] that the body reads only through such slices
 *           and whose new value is element-wise is then split into k states
 *           [B, H] (initial values sliced and final values concatenated in
 *           the enclosing graph), so that no full-width loop is left.
 * breaks:   nothing later passes rely on: node order stays topological,
 *           dead nodes are removed from bodies.
 */
#include "ir_build.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* ---- slices ---- */

/* Element-wise f32 node of a body with a 2-D output (the fused domain). */
static int is_elem2(const ir_node *n)
{
	return ir_ops[n->op].kind == OPK_ELEM && n->nout == 1 && n->out[0] && n->out[0]->dtype == DT_F32 &&
	       n->out[0]->shape.rank == 2 && !n->body;
}

typedef struct memo {
	const ir_value *src;
	int64_t st, en;
	ir_value *v;
} memo;

typedef struct sp {
	ir_graph *b;            /* the body */
	ir_graph *root;
	ir_node **out;          /* new node list */
	int nout, capout;
	memo *m;
	int nm, capm;
	int changed;
} sp;

static void emit_node_(sp *S, ir_node *n)
{
	if (S->nout == S->capout) {
		int cap = S->capout ? 2 * S->capout : 64;
		S->out = arena_grow(S->b->A, S->out, (size_t)S->nout, (size_t)cap, sizeof *S->out);
		S->capout = cap;
	}
	S->out[S->nout++] = n;
}

static ir_value *memo_find(sp *S, const ir_value *src, int64_t st, int64_t en)
{
	for (int i = 0; i < S->nm; i++)
		if (S->m[i].src == src && S->m[i].st == st && S->m[i].en == en)
			return S->m[i].v;
	return NULL;
}

static void memo_add(sp *S, const ir_value *src, int64_t st, int64_t en, ir_value *v)
{
	if (S->nm == S->capm) {
		int cap = S->capm ? 2 * S->capm : 32;
		S->m = arena_grow(S->b->A, S->m, (size_t)S->nm, (size_t)cap, sizeof *S->m);
		S->capm = cap;
	}
	S->m[S->nm++] = (memo){src, st, en, v};
}

static ir_shape sliced_shape(const ir_shape *s, int64_t w)
{
	ir_shape r = *s;
	r.d[r.rank - 1] = ir_dim_const(w);
	return r;
}

/* A new Slice node in the body: columns [st, en) of x (a column view when x
 * is a product, a per-step input, a state or a column view; a copy else). */
static ir_value *slice_node(sp *S, ir_value *x, int64_t st, int64_t en, ir_value *dst)
{
	ir_graph *b = S->b;
	ir_node *n = ir_node_new(b, OP_SLICE, NULL, 5, 1);
	int64_t one = 1;
	n->in[0] = x;
	n->in[1] = ir_const_i64(b, NULL, 1, &st);
	n->in[2] = ir_const_i64(b, NULL, 1, &en);
	n->in[3] = ir_const_i64(b, NULL, 1, &one);
	n->in[4] = ir_const_i64(b, NULL, 1, &one);
	if (!dst) {
		dst = ir_value_new(b, NULL, VAL_TEMP, x->dtype);
		dst->shape = sliced_shape(&x->shape, en - st);
		dst->origin = x->origin;
	}
	n->out[0] = dst;
	n->origin = x->producer ? x->producer->origin : NULL;
	dst->producer = n;
	emit_node_(S, n);
	return dst;
}

/* Columns [st, en) of v, as it is read by an element-wise node whose output
 * has `width` columns: v itself when it broadcasts along the last axis. */
static ir_value *push(sp *S, ir_value *v, int64_t st, int64_t en, int64_t width, ir_value *dst);

static ir_value *operand_slice(sp *S, ir_value *v, int64_t st, int64_t en, int64_t width)
{
	if (!v || v->shape.rank <= 0)
		return v;
	ir_dim c = v->shape.d[v->shape.rank - 1];
	if (ir_dim_is_const(c) && c.k == 1 && width != 1)
		return v;       /* broadcasts along the columns */
	if (!ir_dim_is_const(c) || c.k != width)
		return NULL;    /* cannot tell: give up on this slice */
	/* a constant or weight row vector: a new one holding the slice */
	int rowvec = v->shape.rank == 1 ||
		     (ir_dim_is_const(ir_shape_numel(&v->shape)) && ir_shape_numel(&v->shape).k == width);
	if (v->graph != S->b || v->kind == VAL_CONST || v->kind == VAL_WEIGHT) {
		if (rowvec && v->data && v->dtype == DT_F32 && !(ir_weights_at_run_time(S->root) && v->kind == VAL_WEIGHT) &&
		    (v->kind == VAL_CONST || v->kind == VAL_WEIGHT) && !v->sym) {
			ir_value *got = memo_find(S, v, st, en);
			if (got)
				return got;
			ir_shape s = sliced_shape(&v->shape, en - st);
			ir_graph *g = v->kind == VAL_WEIGHT ? S->root : S->b;
			ir_value *w = ir_const_new(g, ir_unique_name(g, v->kind == VAL_WEIGHT ? "w" : "c"),
						   DT_F32, &s, (const float *)v->data + st);
			w->kind = v->kind;
			w->origin = v->origin ? v->origin : v->name;
			memo_add(S, v, st, en, w);
			return w;
		}
		if (v->shape.rank != 2)
			return NULL;
	}
	if (v->shape.rank != 2)
		return NULL;
	return push(S, v, st, en, width, NULL);
}

static ir_value *push(sp *S, ir_value *v, int64_t st, int64_t en, int64_t width, ir_value *dst)
{
	(void)width;
	ir_value *got = memo_find(S, v, st, en);
	if (got)
		return got;
	ir_node *p = v->graph == S->b && v->kind == VAL_TEMP ? v->producer : NULL;
	ir_value *r = NULL;
	if (p && is_elem2(p) && ir_dim_is_const(v->shape.d[1])) {
		int64_t w = v->shape.d[1].k;
		ir_value *ins[8];
		int ok = p->nin <= 8;
		for (int k = 0; ok && k < p->nin; k++) {
			ins[k] = p->in[k] ? operand_slice(S, p->in[k], st, en, w) : NULL;
			ok = !p->in[k] || ins[k];
		}
		if (ok) {
			ir_node *n = ir_clone_node(S->b, p, NULL, 1, IR_CLONE_SOURCE | IR_CLONE_SHARE_ATTRS);
			for (int k = 0; k < p->nin; k++)
				n->in[k] = ins[k];
			if (!dst) {
				dst = ir_value_new(S->b, NULL, VAL_TEMP, v->dtype);
				dst->shape = sliced_shape(&v->shape, en - st);
				dst->origin = v->origin;
			}
			n->out[0] = dst;
			dst->producer = n;
			emit_node_(S, n);
			r = dst;
		}
	}
	if (!r)
		r = slice_node(S, v, st, en, dst);
	memo_add(S, v, st, en, r);
	return r;
}

/* ---- common subexpressions ---- */

static int is_body_out(const ir_graph *b, const ir_value *v)
{
	for (int k = 0; k < b->noutputs; k++)
		if (b->outputs[k] == v)
			return 1;
	return 0;
}

/* Element-wise nodes computing the same thing twice (the slices of a new
 * state and the slices its readers made) become one. */
static void body_cse(ir_graph *b)
{
	for (int j = 0; j < b->nnodes; j++) {
		ir_node *y = b->nodes[j];
		int64_t ys, ye, xs, xe;
		if (ir_last_axis_slice(y, &ys, &ye)) {
			for (int i = 0; i < j; i++) {
				ir_node *x = b->nodes[i];
				if (ir_last_axis_slice(x, &xs, &xe) && x->in[0] == y->in[0] && xs == ys && xe == ye &&
				    !is_body_out(b, y->out[0])) {
					ir_replace_uses(b, y->out[0], x->out[0], NULL, 0);
					break;
				}
			}
			continue;
		}
		if (!is_elem2(y))
			continue;
		for (int i = 0; i < j; i++) {
			ir_node *x = b->nodes[i];
			if (x->op != y->op || x->nin != y->nin || x->nout != 1 || x->attrs != y->attrs ||
			    x->nattrs != y->nattrs || !ir_shape_eq(&x->out[0]->shape, &y->out[0]->shape))
				continue;
			int same = 1;
			for (int k = 0; k < x->nin; k++)
				same &= x->in[k] == y->in[k];
			if (!same)
				continue;
			int xo = is_body_out(b, x->out[0]), yo = is_body_out(b, y->out[0]);
			if (xo && yo)
				continue;
			if (yo) {
				/* x computes it first: under y's name */
				ir_replace_uses(b, x->out[0], y->out[0], NULL, 0);
				x->out[0] = y->out[0];
				y->out[0]->producer = x;
			} else {
				ir_replace_uses(b, y->out[0], x->out[0], NULL, 0);
			}
			y->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);  /* y is dead now */
			y->out[0]->shape = x->out[0]->shape;
			y->out[0]->producer = y;
			break;
		}
	}
}

/* A state output that is an Identity of an element-wise value no other
 * output uses (the loader's copy for a state a product also reads): the
 * value itself (emit_rec reads new states from the right buffer). */
static void drop_state_copies(ir_graph *b, int nstate)
{
	for (int k = 0; k < nstate && k < b->noutputs; k++) {
		ir_value *o = b->outputs[k];
		ir_node *id = o->graph == b && o->kind == VAL_TEMP ? o->producer : NULL;
		if (!id || id->op != OP_IDENTITY || !id->in[0] || id->in[0]->graph != b ||
		    id->in[0]->kind != VAL_TEMP || !id->in[0]->producer || !is_elem2(id->in[0]->producer) ||
		    is_body_out(b, id->in[0]) || !ir_shape_eq(&o->shape, &id->in[0]->shape))
			continue;
		int other = 0;
		for (int i = 0; i < b->nnodes; i++)
			for (int q = 0; q < b->nodes[i]->nin; q++)
				other |= b->nodes[i]->in[q] == o;
		if (!other)
			b->outputs[k] = id->in[0];
	}
}

/* ---- one body ---- */

static void split_body(ir_graph *root, ir_graph *b)
{
	ir_recount(b);
	sp S0 = {.b = b, .root = root}, *S = &S0;
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		int64_t st, en;
		ir_value *x = n->nin ? n->in[0] : NULL;
		if (!ir_last_axis_slice(n, &st, &en) || !x->producer || x->graph != b || !is_elem2(x->producer)) {
			emit_node_(S, n);
			continue;
		}
		ir_value *y = n->out[0];
		ir_value *got = memo_find(S, x, st, en);
		if (!got) {
			/* the node computing the slice writes y itself */
			push(S, x, st, en, x->shape.d[1].k, y);
			continue;
		}
		/* the same columns once more: readers of y read the first one */
		ir_replace_uses(b, y, got, NULL, 0);
		int out = 0;
		for (int k = 0; k < b->noutputs; k++)
			out |= b->outputs[k] == y;
		if (out) {
			ir_node *id = ir_node_new(b, OP_IDENTITY, NULL, 1, 1);
			id->in[0] = got;
			id->out[0] = y;
			id->origin = n->origin;
			y->producer = id;
			emit_node_(S, id);
		}
	}
	ir_set_nodes(b, S->out, S->nout);
	body_cse(b);
	ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_SINKS);
}

/* ---- states read only by slices ---- */

static int cmp_range(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static ir_value **grow_vals(arena *A, ir_value **a, int n, int at, int extra)
{
	ir_value **r = arena_array(A, (size_t)(n + extra) + 1, sizeof *r);
	for (int i = 0, j = 0; i < n; i++, j++) {
		if (i == at)
			j += extra;
		r[j] = a[i];
	}
	return r;
}

/* State k of recurrence rn split into the column ranges its slices read.
 * Returns 1 when it did. */
static int split_state(ir_graph *root, ir_node *rn, int k)
{
	ir_graph *b = rn->body;
	int nseq = (int)ir_attr_int(rn, "n_seq", 0), ns = (int)ir_attr_int(rn, "n_state", 0);
	ir_value *s = b->inputs[nseq + k], *o = b->outputs[k];
	ir_value *init = rn->in[nseq + k], *fin = rn->out[k];
	if (s->shape.rank != 2 || !ir_dim_is_const(s->shape.d[1]) || o->graph != b ||
	    (init && init->shape.rank != 2) || (fin && fin->shape.rank != 2))
		return 0;
	int64_t W = s->shape.d[1].k;
	/* the ranges its slices read */
	int64_t (*r)[2] = arena_array(b->A, (size_t)b->nnodes + 1, sizeof *r);
	int nr = 0;
	for (int i = 0; i < b->nnodes; i++) {
		int64_t st, en;
		if (b->nodes[i]->nin && b->nodes[i]->in[0] == s && ir_last_axis_slice(b->nodes[i], &st, &en)) {
			int dup = 0;
			for (int j = 0; j < nr; j++)
				dup |= r[j][0] == st && r[j][1] == en;
			if (!dup) {
				r[nr][0] = st;
				r[nr][1] = en;
				nr++;
			}
		}
	}
	if (nr < 2)
		return 0;
	qsort(r, (size_t)nr, sizeof *r, cmp_range);
	for (int j = 0; j < nr; j++)
		if (r[j][0] != (j ? r[j - 1][1] : 0))
			return 0;
	if (r[nr - 1][1] != W)
		return 0;
	/* the new state in the same pieces, element-wise */
	sp S0 = {.b = b, .root = root}, *S = &S0;
	for (int i = 0; i < b->nnodes; i++)
		emit_node_(S, b->nodes[i]);
	ir_value **piece = arena_array(b->A, (size_t)nr, sizeof *piece);
	int ok = 1;
	for (int j = 0; j < nr && ok; j++) {
		piece[j] = push(S, o, r[j][0], r[j][1], W, NULL);
		ok = piece[j]->producer && piece[j]->producer->op != OP_SLICE && is_elem2(piece[j]->producer);
	}
	ir_node **old_nodes = b->nodes;
	int old_n = b->nnodes;
	ir_value **old_outs = b->outputs;
	ir_set_nodes(b, S->out, S->nout);
	if (ok) {
		/* would anything but those slices still read the old state? */
		b->outputs = grow_vals(b->A, b->outputs, b->noutputs, k, nr - 1);
		for (int j = 0; j < nr; j++)
			b->outputs[k + j] = piece[j];
		b->noutputs += nr - 1;
		char *live;
		ir_live(b, NULL, 0, IR_DEAD_SINKS, &live, NULL);
		for (int i = 0; i < b->nnodes && ok; i++) {
			int64_t st, en;
			for (int q = 0; q < b->nodes[i]->nin && ok; q++)
				if (live[i] && b->nodes[i]->in[q] == s)
					ok = q == 0 && ir_last_axis_slice(b->nodes[i], &st, &en);
		}
		if (!ok) {
			b->outputs = old_outs;
			b->noutputs -= nr - 1;
		}
	}
	if (!ok) {
		ir_set_nodes(b, old_nodes, old_n);
		return 0;
	}
	/* new state inputs; their slices' readers read them */
	ir_value **ns_in = arena_array(b->A, (size_t)nr, sizeof *ns_in);
	for (int j = 0; j < nr; j++) {
		ir_value *v = ir_value_new(b, ir_free_name(b, arena_printf(b->A, "%s.%lld", s->name, (long long)j)), VAL_STEP, DT_F32);
		v->shape = sliced_shape(&s->shape, r[j][1] - r[j][0]);
		v->origin = s->origin;
		ns_in[j] = v;
	}
	for (int i = 0; i < b->nnodes; i++) {
		int64_t st, en;
		ir_node *n = b->nodes[i];
		if (!(n->nin && n->in[0] == s && ir_last_axis_slice(n, &st, &en)))
			continue;
		for (int j = 0; j < nr; j++)
			if (r[j][0] == st && r[j][1] == en) {
				for (int i2 = 0; i2 < b->nnodes; i2++)
					for (int q = 0; q < b->nodes[i2]->nin; q++)
						if (b->nodes[i2]->in[q] == n->out[0])
							b->nodes[i2]->in[q] = ns_in[j];
				for (int q = 0; q < b->noutputs; q++)
					if (b->outputs[q] == n->out[0]) {
						/* a state slice that is also an output: copy it */
						ir_node *id = ir_node_new(b, OP_IDENTITY, NULL, 1, 1);
						id->in[0] = ns_in[j];
						id->out[0] = n->out[0];
						n->out[0]->producer = id;
						b->nodes[i] = id;
						n = id;
					}
			}
	}
	b->inputs = grow_vals(b->A, b->inputs, b->ninputs, nseq + k, nr - 1);
	for (int j = 0; j < nr; j++)
		b->inputs[nseq + k + j] = ns_in[j];
	b->ninputs += nr - 1;
	ir_drop_dead(b, IR_DEAD_LOCAL | IR_DEAD_SINKS);

	/* the recurrence: initial values sliced, final values concatenated */
	ir_node **rootn = arena_array(root->A, (size_t)(root->nnodes + nr) + 2, sizeof *rootn);
	int m = 0, at = -1;
	for (int i = 0; i < root->nnodes; i++)
		if (root->nodes[i] == rn)
			at = i;
	ASSERT(at >= 0);
	for (int i = 0; i < at; i++)
		rootn[m++] = root->nodes[i];
	ir_value **ins = grow_vals(root->A, rn->in, rn->nin, nseq + k, nr - 1);
	for (int j = 0; j < nr; j++) {
		ir_value *iv = NULL;
		if (init) {
			ir_node *sl = ir_node_new(root, OP_SLICE, NULL, 5, 1);
			int64_t one = 1;
			sl->in[0] = init;
			sl->in[1] = ir_const_i64(root, NULL, 1, &r[j][0]);
			sl->in[2] = ir_const_i64(root, NULL, 1, &r[j][1]);
			sl->in[3] = ir_const_i64(root, NULL, 1, &one);
			sl->in[4] = ir_const_i64(root, NULL, 1, &one);
			iv = ir_value_new(root, NULL, VAL_TEMP, DT_F32);
			iv->shape = sliced_shape(&init->shape, r[j][1] - r[j][0]);
			sl->out[0] = iv;
			sl->origin = rn->origin;
			iv->producer = sl;
			rootn[m++] = sl;
		}
		ins[nseq + k + j] = iv;
	}
	rn->in = ins;
	rn->nin += nr - 1;
	rootn[m++] = rn;
	ir_value **outs = grow_vals(root->A, rn->out, rn->nout, k, nr - 1);
	ir_node *cat = NULL;
	if (fin) {
		cat = ir_node_new(root, OP_CONCAT, NULL, nr, 1);
		ir_attr_set_int(cat, "axis", 1);
		cat->out[0] = fin;
		cat->origin = rn->origin;
		fin->producer = cat;
	}
	for (int j = 0; j < nr; j++) {
		ir_value *fv = NULL;
		if (fin) {
			fv = ir_value_new(root, NULL, VAL_TEMP, DT_F32);
			fv->shape = sliced_shape(&fin->shape, r[j][1] - r[j][0]);
			fv->producer = rn;
			cat->in[j] = fv;
		}
		outs[k + j] = fv;
	}
	rn->out = outs;
	rn->nout += nr - 1;
	if (cat)
		rootn[m++] = cat;
	for (int i = at + 1; i < root->nnodes; i++)
		rootn[m++] = root->nodes[i];
	ir_set_nodes(root, rootn, m);
	ir_attr_set_int(rn, "n_state", ns + nr - 1);
	return 1;
}

static void split_graph(ir_graph *root, ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body) {
			split_graph(root, g->nodes[i]->body);
			if (g->nodes[i]->op == OP_RECURRENCE)
				split_body(root, g->nodes[i]->body);
		}
	if (g != root)
		return;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *rn = g->nodes[i];
		if (rn->op != OP_RECURRENCE || !rn->body)
			continue;
		drop_state_copies(rn->body, (int)ir_attr_int(rn, "n_state", 0));
		ir_drop_dead(rn->body, IR_DEAD_LOCAL | IR_DEAD_SINKS);
		for (int k = 0; k < (int)ir_attr_int(rn, "n_state", 0); k++)
			if (split_state(root, rn, k)) {
				split_body(root, rn->body);     /* slices of the new pieces */
				i = -1;                         /* node indices moved */
				break;
			}
	}
}

int pass_split(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)D;
	if (o && o->no_fuse)
		return 0;
	split_graph(g, g);
	ir_recount(g);
	return 0;
}
