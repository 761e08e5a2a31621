/* emit_rec_fused.c: the element-wise parts of a recurrence's step: a fused
 * group (pass_fuse) as one loop over the batch rows and one over the
 * columns, its values locals named after the model's names (the gates h1_i
 * ..., in a backward recurrence g_<forward value> for a gradient), each
 * operand through a row pointer named after what it points into (s2n_row,
 * r0_row), a value stored only where it has a home in memory; and a rank-0
 * body value (a step scalar) as one local of the step.
 */
#define _POSIX_C_SOURCE 200809L     /* open_memstream */
#include "elem.h"
#include "emit.h"
#include "emit_rec.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* ---- fused groups ------------------------------------------------------------------ */

typedef struct rowptr {
	const char *base, *ld;  /* identity of the row pointer */
	int seq;
	const char *name;
	int is_const;
} rowptr;

typedef struct grp {
	rec *R;
	ir_dim rows, cols;      /* the iteration domain */
	int row_is_batch;       /* rows == B: sequence_lens and per-row time apply */
	rowptr *rp;             /* [nrp] in the arena, grown as pointers are asked for (a
	                           group reading hundreds of operands has that many) */
	int nrp, caprp;
	char *done;             /* [body nvalues]: computed earlier in this group (a local) */
} grp;

/* A row pointer is named after what it points into: the last identifier
 * of its base ("s2n", "r0", "xa0", "m->w_h1_W_x") and "_row" (reg_name
 * leaves names that end so to row pointers); a second pointer into the
 * same base (another stride or time) is "<name>_row2", and so on. */
static const char *row_ptr_name(grp *G, const char *base)
{
	const char *id = ew_last_ident(G->R->E->A, base);
	const char *stem = id ? fmt(G->R, "%s_row", id) : "p_row";
	const char *name = stem;
	for (int k = 2;; k++) {
		int taken = 0;
		for (int i = 0; i < G->nrp && !taken; i++)
			taken = !strcmp(G->rp[i].name, name);
		if (!taken)
			return name;
		name = fmt(G->R, "%s%d", stem, k);
	}
}

static const char *row_ptr(grp *G, const char *base, const char *ld, int seq, int is_const)
{
	for (int i = 0; i < G->nrp; i++)
		if (!strcmp(G->rp[i].base, base) && !strcmp(G->rp[i].ld, ld) && G->rp[i].seq == seq) {
			G->rp[i].is_const &= is_const;
			return G->rp[i].name;
		}
	if (G->nrp == G->caprp) {
		int cap = G->caprp ? 2 * G->caprp : 16;
		G->rp = arena_grow(G->R->E->A, G->rp, (size_t)G->nrp, (size_t)cap, sizeof *G->rp);
		G->caprp = cap;
	}
	rowptr *p = &G->rp[G->nrp];
	p->base = base;
	p->ld = ld;
	p->seq = seq;
	p->is_const = is_const;
	p->name = row_ptr_name(G, base);
	G->nrp++;
	return p->name;
}

/* Element (b, j + off) of sequence input k computed where it is read
 * (x_proj "inline"): alpha a[b] w[j + off] + beta c[j + off], with a this
 * step's rows of the product's A (xa<k>, rec_steps) and w the weights'
 * one column (stored [N, 1] or [1, N] alike). */
static const char *inline_expr(grp *G, int k, int64_t off)
{
	rec *R = G->R;
	emit_ctx *E = R->E;
	const ir_node *gm = R->inl[k];
	const ir_value *W = gm->in[1], *C = gm->nin > 2 ? gm->in[2] : NULL;
	float alpha = ir_attr_float(gm, "alpha", 1.0f), beta = ir_attr_float(gm, "beta", 1.0f);
	E->body_ref = NULL;     /* root values: their own storage */
	const char *w = row_ptr(G, emit_ref(E, W), "0", -1, 1);
	const char *c = C && beta != 0.0f ? row_ptr(G, emit_ref(E, C), "0", -1, 1) : NULL;
	E->body_ref = rec_body_ref;
	const char *a = row_ptr(G, fmt(R, "xa%d", k), "1", -1, 1);
	const char *col = off ? fmt(R, "j + %lld", (long long)off) : "j";
	const char *sum = fmt(R, "%s[0] * %s[%s]", a, w, col);
	if (alpha != 1.0f)
		sum = fmt(R, "%s * (%s)", flt(R, alpha), sum);
	if (c)
		sum = fmt(R, "%s + %s%s[%s]", sum, beta != 1.0f ? fmt(R, "%s * ", flt(R, beta)) : "", c, col);
	return fmt(R, "(%s)", sum);
}

/* A model's name as the name of a local ("h1.i" -> h1_i: the gates and
 * states of a lowered cell), or NULL: a name without a dot (%t12, a
 * tensor name of the file), or one that could meet one of the
 * recurrence's own locals (in_0, d_seq, s0_all, nb_, s0n_row, rt_...) or a
 * gradient's name (g_...). */
static const char *model_local(rec *R, const char *nm)
{
	int ok = nm && ew_ident_char(nm[0]) && !(nm[0] >= '0' && nm[0] <= '9') && nm[0] != '_' &&
		 strchr(nm, '.');
	char *c = ok ? arena_strdup(R->E->A, nm) : NULL;
	for (char *q = c; ok && *q; q++) {
		if (*q == '.')
			*q = '_';
		else
			ok = ew_ident_char(*q);
	}
	static const char *const reserved[] = {"in_", "out_", "ws_", "d_", "w_", "st_", "rt_", "RT_", "g_"};
	for (size_t k = 0; ok && k < COUNTOF(reserved); k++)
		ok = strncmp(c, reserved[k], strlen(reserved[k])) != 0;
	const char *model = R->E->o && R->E->o->name ? R->E->o->name : "";
	ok = ok && !(*model && !strncmp(c, model, strlen(model)));     /* the API's names */
	size_t len = ok ? strlen(c) : 0;
	ok = ok && c[len - 1] != '_' && !(len > 4 && !strcmp(c + len - 4, "_all")) && !strstr(c, "_row");
	return ok ? c : NULL;
}

/* The local that holds body value id in a fused loop or a step: the
 * model's name where it gives one (model_local), else v<id>.  In a backward
 * recurrence (pass_grad), a value that recomputes a forward value of the
 * step has that value's name, and the gradient of forward value h1.c_next
 * is g_h1_c_next (g_v<k> when the forward value is the forward
 * recurrence's v<k>; never d_, the prefix of the dims).  A name another
 * value has already is v<id> too. */
static const char *reg_name(rec *R, int id)
{
	if (R->reg[id])
		return R->reg[id];
	const ir_value *v = R->b->values[id];
	const char *c;
	if (v->grad_of) {
		const ir_value *f = v->grad_of;
		const char *nm = model_local(R, f->name);
		int fid = f->graph && f->id >= 0 && f->id < f->graph->nvalues && f->graph->values[f->id] == f;
		c = nm ? fmt(R, "g_%s", nm) : fid ? fmt(R, "g_v%d", f->id) : NULL;
	} else {
		c = model_local(R, v->recomputes ? v->recomputes->name : v->name);
	}
	for (int k = 0; c && k < R->b->nvalues; k++)
		if (R->reg[k] && !strcmp(R->reg[k], c))
			c = NULL;
	R->reg[id] = c ? c : fmt(R, "%sv%d", v->grad_of ? "g_" : "", id);
	return R->reg[id];
}

/* The C expression of element (b, j) of operand v in the group's domain. */
static const char *operand(grp *G, const ir_value *v)
{
	rec *R = G->R;
	home h = rec_home(R, v);
	if (h.kind == HOME_SCALAR)
		return h.lit;
	int id = body_index(R, v);
	if (h.kind == HOME_REG || (id >= 0 && G->done[id]))
		return reg_name(R, id);
	ASSERT(h.kind == HOME_MEM);
	for (int k = 0; k < R->nseq; k++)
		if (R->inl[k] && !strcmp(h.base, fmt(R, "x%d", k)))
			return inline_expr(G, k, h.off);
	int r = v->shape.rank;
	int by_row = r == 2 && !(ir_dim_is_const(v->shape.d[0]) && v->shape.d[0].k == 1) &&
		     !(ir_dim_is_const(G->rows) && G->rows.k == 1);
	int by_col = r >= 1 && !(ir_dim_is_const(ir_cols_of(v)) && ir_cols_of(v).k == 1);
	const char *col = by_col ? (h.off ? fmt(R, "j + %lld", (long long)h.off) : "j")
				 : fmt(R, "%lld", (long long)h.off);
	/* a per-step input read at each row's own time step (reversed
	 * sequence_lens) needs its row pointer at batch 1 too */
	if (!by_row && h.seq < 0)
		return fmt(R, "%s[%s]", h.base, col);
	return fmt(R, "%s[%s]", row_ptr(G, h.base, h.ld, h.seq, 1), col);
}

static const char *out_row(grp *G, int k)
{
	/* stacked output k at the row's time step */
	return row_ptr(G, G->R->o[k], G->R->ob[k], -2 - k, 0);
}

/* C expression of element-wise node n applied to operand expressions a[]:
 * the libcellrt kernel of its elem.def row (operands, then attributes), Clip's
 * rt_clipf (a bound not given: infinite), else the root graph's expression. */
static const char *elem_expr(rec *R, const ir_node *n, const char *const *a)
{
	const char *step = elem_step(n->op);
	if (step) {
		const elem_row *row = elem_row_of(n->op);
		const char *r = fmt(R, "%s(%s", step, a[0]);
		for (int k = 1; k < n->nin; k++)
			r = fmt(R, "%s, %s", r, a[k]);
		for (int k = 0; k < ELEM_MAX_ATTRS && row->attrs[k].name; k++)
			r = fmt(R, "%s, %s", r, flt(R, elem_attr_float(n, row->attrs[k].name)));
		return fmt(R, "%s)", r);
	}
	if (n->op == OP_CLIP)
		return fmt(R, "rt_clipf(%s, %s, %s)", a[0], n->nin > 1 && a[1] ? a[1] : "-INFINITY",
			   n->nin > 2 && a[2] ? a[2] : "INFINITY");
	const char *e = emit_elem_expr(R->E, n, a);
	return e ? e : "0.0f";
}

void rec_fused(rec *R, ir_node **nodes, int count)
{
	ew *w = R->w;
	grp G = {.R = R, .done = arena_alloc(R->E->A, (size_t)R->b->nvalues + 1)};
	const ir_value *first = nodes[0]->out[0];
	G.rows = first->shape.rank == 2 ? first->shape.d[0] : ir_dim_const(1);
	G.cols = first->shape.rank >= 1 ? ir_cols_of(first) : ir_dim_const(1);
	ir_dim B = R->b->inputs[R->nseq]->shape.d[0];
	G.row_is_batch = first->shape.rank == 2 && ir_dim_eq(G.rows, B);

	/* the loop body first, into a buffer: row pointers are found on the way */
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	ASSERT(f);
	ew inner = {.f = f, .indent = w->indent + 2};
	for (int i = 0; i < count; i++) {
		ir_node *n = nodes[i];
		ir_value *v = n->out[0];
		const char *a[3] = {NULL, NULL, NULL};
		for (int k = 0; k < n->nin && k < 3; k++)
			a[k] = n->in[k] ? operand(&G, n->in[k]) : NULL;
		int id = body_index(R, v);
		const char *rn = reg_name(R, id);
		int named = rn[0] != 'v' || strcmp(rn, fmt(R, "v%d", id)) != 0;
		ew_line(&inner, "const float %s = %s; /* %s%s%s */", rn, elem_expr(R, n, a), ir_op_name(n->op),
			!named && v->name[0] != '%' ? ": " : "", !named && v->name[0] != '%' ? cm(R, v->name) : "");
		G.done[id] = 1;
		home *h = home_of(R, v);
		if (h->kind == HOME_MEM)
			ew_line(&inner, "%s[%s] = %s;", row_ptr(&G, h->base, h->ld, -1, 0),
				h->off ? fmt(R, "j + %lld", (long long)h->off) : "j", rn);
		for (int k = R->nstate; k < R->b->noutputs; k++)
			if (R->b->outputs[k] == v && R->n->out[k] && ir_out_direct(v) != k - R->nstate)
				ew_line(&inner, "%s[j] = %s;", out_row(&G, k - R->nstate), rn);
	}
	fclose(f);

	ew_line(w, "/* fused: %d element-wise node%s of %s over [%s, %s] */", count, count > 1 ? "s" : "",
		cm(R, nodes[0]->origin ? nodes[0]->origin : R->n->name), dim(R, G.rows), dim(R, G.cols));
	ew_open(w, "for (int64_t b = 0; b < %s; b++)", rec_rows(R, G.rows));
	if (R->has_lens && G.row_is_batch)
		ew_line(w, "if (step >= len[b]) continue; /* row b has finished */");
	const char *tb = "t";
	int uses_t = 0;
	for (int i = 0; i < G.nrp; i++)
		uses_t |= G.rp[i].seq != -1;
	if (R->per_row_time && G.row_is_batch && uses_t) {
		ew_line(w, "const int64_t tb = len[b] - 1 - step; /* this row's time step */");
		tb = "tb";
	}
	for (int i = 0; i < G.nrp; i++) {
		rowptr *p = &G.rp[i];
		if (p->seq >= 0) {
			int k = p->seq;
			ew_line(w, "const float *%s = %s + %s + %s;", p->name, R->q[k], times(R, tb, R->qt[k]),
				times(R, "b", R->qb[k]));
		} else if (p->seq <= -2) {
			/* stacked output k at this row's time step */
			int k = -2 - p->seq;
			ew_line(w, "float *%s = %s + %s + %s;", p->name, R->o[k], times(R, tb, R->ot[k]),
				times(R, "b", R->ob[k]));
		} else if (!strcmp(p->ld, "0")) {
			/* the same row for every b (inline_expr's weights) */
			ew_line(w, "%sfloat *%s = %s;", p->is_const ? "const " : "", p->name, p->base);
		} else {
			ew_line(w, "%sfloat *%s = %s + %s;", p->is_const ? "const " : "", p->name,
				p->base, times(R, "b", p->ld));
		}
	}
	if (R->colpar_ok) {
		/* this thread's columns (all of them unless cols_); omp simd
		 * vectorises the loop, whose trip count is not a constant, under
		 * GCC's -O2 cost model too */
		ew_line(w, "#ifdef _OPENMP");
		ew_line(w, "#pragma omp simd");
		ew_line(w, "#else");
		ew_line(w, "RT_IVDEP /* element j reads and writes only element j */");
		ew_line(w, "#endif");
		ew_open(w, "for (int64_t j = j0_; j < j1_; j++)");
		for (int i = 0; i < count; i++)
			if (home_of(R, nodes[i]->out[0])->kind == HOME_MEM)
				R->wstep[body_index(R, nodes[i]->out[0])] = 1;
	} else {
		ew_line(w, "RT_IVDEP /* element j reads and writes only element j */");
		ew_open(w, "for (int64_t j = 0; j < %s; j++)", dim(R, G.cols));
	}
	fputs(text, w->f);
	free(text);
	ew_close(w, "");
	ew_close(w, "");
}

/* A rank-0 element-wise node: one local of the step, before the loops that
 * read it (stored too when a generic node reads it from memory). */
void rec_step_scalar(rec *R, ir_node *n)
{
	grp G = {.R = R, .rows = ir_dim_const(1), .cols = ir_dim_const(1),
		 .done = arena_alloc(R->E->A, (size_t)R->b->nvalues + 1)};
	const char *a[3] = {NULL, NULL, NULL};
	for (int k = 0; k < n->nin && k < 3; k++)
		a[k] = n->in[k] ? operand(&G, n->in[k]) : NULL;
	ASSERT(G.nrp == 0);     /* rank-0 operands never need row pointers */
	int id = body_index(R, n->out[0]);
	const char *rn = reg_name(R, id);
	ew_decl(R->w, rn, "const float %s = %s; /* %s, once per step */", rn, elem_expr(R, n, a),
		ir_op_name(n->op));
	/* stored where the planner gave it a slot: for the nodes that read
	 * memory (fuse_needs_buffer; par: into the thread's local, rec_body_ref) */
	if (n->out[0]->slot >= 0)
		ew_line(R->w, "%s[0] = %s;", emit_ref(R->E, n->out[0]), rn);
}
