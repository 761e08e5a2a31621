/* emit_rec_step.c: one step of a recurrence, the loop body that
 * emit_rec.c's frame puts in its time loop (rec_steps): per step, t and the
 * step scalars, this step's rows of the per-step inputs (an input
 * projection that pass_schedule moved into the steps computed here, into
 * the start of its buffer), then every body node in order -- a product a
 * call of rt_sgemm / rt_sgemm_bias / the packed GEMV (threads "rows_cols":
 * each thread its columns, meeting at a barrier where a product reads what
 * another wrote), a Concat copied by rows or written in place by its
 * producers, a node the root-graph emitter prints (emit_node on the step's
 * buffers), a fused group (emit_rec_fused.c) -- then the body outputs no
 * group wrote, the rows sequence_lens has finished, and the swap of each
 * state's two buffers.
 */
#include "emit.h"
#include "emit_rec.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* ---- batch rows over threads ------------------------------------------------------- */

/* A Concat of [B, N_k] body values along the columns that pass_schedule
 * marked by_rows: each thread copies its own rows. */
static void emit_row_concat(rec *R, ir_node *n)
{
	ew *w = R->w;
	home hy = rec_home(R, n->out[0]);
	ASSERT(hy.kind == HOME_MEM && hy.seq < 0);
	ew_line(w, "/* %s (%s): Concat of %d inputs along the columns, this thread's rows */", cm(R, n->name),
		n->origin ? cm(R, n->origin) : "recurrence body", n->nin);
	ew_open(w, "for (int64_t b = 0; b < nb_; b++)");
	int64_t col = hy.off;   /* the column the next input starts at: col + sym */
	const char *sym = "";
	for (int k = 0; k < n->nin; k++) {
		home hx = rec_home(R, n->in[k]);
		ASSERT(hx.kind == HOME_MEM && hx.seq < 0);
		ir_dim c = ir_cols_of(n->in[k]);
		const char *cols = dim(R, c);
		ew_line(w, "memcpy(%s%s, %s, sizeof(float) * %s);",
			at(R, fmt(R, "%s + %s", hy.base, times(R, "b", hy.ld)), col), sym,
			at(R, fmt(R, "%s + %s", hx.base, times(R, "b", hx.ld)), hx.off), count(R, cols));
		if (ir_dim_is_const(c))
			col += c.k;
		else
			sym = fmt(R, "%s + %s", sym, cols);
	}
	ew_close(w, "");
}

/* colpar: the column offsets of v (a product's result or a deferred
 * sequence input) that the step reads, each hc wide; *n of them. */
static int64_t *column_offsets(rec *R, const ir_value *v, int *n)
{
	ir_graph *b = R->b;
	int64_t *off = arena_array(R->E->A, (size_t)b->nnodes + 1, sizeof *off);
	*n = 0;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *m = b->nodes[i];
		int64_t o = -1;
		if (ir_is_column_view(m) && m->in[0] == v)
			o = ir_const_int(m->in[1], 0);
		else
			for (int k = 0; k < m->nin; k++)
				if (m->in[k] == v)
					o = 0;
		if (o < 0)
			continue;
		int seen = 0;
		for (int j = 0; j < *n; j++)
			seen |= off[j] == o;
		if (!seen)
			off[(*n)++] = o;
	}
	return off;
}

/* colpar: a barrier when the product reads a value stored earlier in this
 * step (another thread stored some of its columns). */
static void colpar_wait_for(rec *R, const ir_value *a)
{
	int id = body_index(R, a);
	if (id < 0 || !R->wstep[id])
		return;
	ew_line(R->w, "rt_barrier_wait(&bar_, tid_, tn_);");
	memset(R->wstep, 0, (size_t)R->b->nvalues + 1);
}

/* ---- products ------------------------------------------------------------------- */

static int nd_index(const rec *R, const ir_node *n)
{
	for (int i = 0; i < R->b->nnodes; i++)
		if (R->b->nodes[i] == n)
			return i;
	ASSERT(0);
	return -1;
}

/* pk: "if (pk<i><cond>) <rows [r0, r1) of the product on the packed copy,
 * into y>; else" before the call that does it otherwise. */
static void emit_packed_call(rec *R, ir_node *n, const char *cond, const char *r0, const char *r1,
			     const char *K, home ha, const char *beta, const char *bias, const char *y)
{
	int i = nd_index(R, n);
	if (!R->pk[i])
		return;
	ew_line(R->w, "if (pk%d%s) rt_gemv_packed%s(%s, %s, %s, %s, %s, %s, pk%d, %s, %s, %s); else", i, cond,
		rec_pack_fmt(n)->fn, r0, r1, dim(R, n->out[0]->shape.d[1]), K, flt(R, ir_attr_float(n, "alpha", 1.0f)),
		at(R, ha.base, ha.off), i, beta, bias, y);
}

/* Rows [r0, r1) of product n's N outputs for the M rows of A (lda apart)
 * into Y (ldy apart), on its weights W stored packed in int8 (store_i8:
 * their only copy), beta times bias (or Y when bias is NULL) added. */
static void emit_i8_call(rec *R, ir_node *n, const char *M, const char *r0, const char *r1, const char *K,
			 const char *A, const char *lda, const char *W, const char *beta, const char *bias, const char *Y,
			 const char *ldy)
{
	int64_t N, pK;
	rec_pack_dims(n, &N, &pK);
	ew_line(R->w, "rt_gemm_packed_i8(%s, %s, %s, %lld, %s, %s, %s, %s, %s, %s, %s, %s, %s);", M, r0, r1,
		(long long)N, K, flt(R, ir_attr_float(n, "alpha", 1.0f)), A, lda, W, beta, bias ? bias : "NULL", Y,
		ldy);
}

/* colpar: this thread's columns j0_..j1_ of each hc-wide column block of
 * the product that the step reads (threads "rows_cols"). */
static void emit_gemm_columns(rec *R, ir_node *n, home ha, home hw, home hy)
{
	ir_value *A = n->in[0], *C = n->nin > 2 ? n->in[2] : NULL, *Y = n->out[0];
	int ta = (int)ir_attr_int(n, "transA", 0), tb = (int)ir_attr_int(n, "transB", 0);
	float alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	const char *M = rec_rows(R, Y->shape.d[0]);
	const char *K = dim(R, ta ? A->shape.d[0] : A->shape.d[1]);
	home hc = C ? rec_home(R, C) : (home){.kind = HOME_NONE};
	ASSERT(!C || hc.kind == HOME_MEM);
	colpar_wait_for(R, A);
	int nv;
	int64_t *offs = column_offsets(R, Y, &nv);
	/* several column blocks on one quantized copy of the activations:
	 * quantized once, not once per block */
	int pi = nd_index(R, n);
	int64_t pN, pK;
	rec_pack_dims(n, &pN, &pK);
	const pack_format *pf = rec_pack_fmt(n);
	int once = R->pk[pi] && pf->prep && nv > 1 && pK <= pf->prep_kmax;
	int i8 = once && !strcmp(pf->mark, "int8");
	if (i8) {
		ew_line(R->w, "uint8_t qa%d[%lld]; /* %s quantized once for this thread's column blocks */", pi,
			(long long)((pK + 3) / 4 * 4), cm(R, A->name));
		ew_line(R->w, "int32_t qz%d = 0;", pi);
		ew_line(R->w, "const float qs%d = pk%d ? %s(%s, %s, qa%d, &qz%d) : 0.0f;", pi, pi, pf->prep, K,
			at(R, ha.base, ha.off), pi, pi);
	} else if (once) {
		ew_line(R->w, "uint32_t xs%d[%lld]; /* %s split once into bfloat16 parts for this thread's column "
			"blocks */", pi, (long long)((pK + 1) / 2 * 2), cm(R, A->name));
		ew_line(R->w, "if (pk%d)", pi);
		ew_line(R->w, "\t%s(%s, %s, pk%d, xs%d);", pf->prep, K, at(R, ha.base, ha.off), pi, pi);
	}
	const char *A0 = at(R, ha.base, ha.off), *W0 = at(R, hw.base, hw.off);
	for (int i = 0; i < nv; i++) {
		int64_t o = offs[i];
		const char *j0 = colj(R, o, "j0_"), *j1 = colj(R, o, "j1_");
		/* the block's first weight of this thread, its first result, its first bias */
		const char *wp = tb ? fmt(R, "%s + %s * %s", W0, o ? fmt(R, "(%s)", j0) : j0, hw.ld)
				    : fmt(R, "%s + %s", W0, j0);
		const char *yp = fmt(R, "%s + j0_", at(R, hy.base, hy.off + o));
		const char *cp = C ? fmt(R, "%s + j0_", at(R, hc.base, hc.off + o)) : "NULL";
		if (i8)
			ew_line(R->w, "if (pk%d) %sq(%s, %s, %lld, %s, %s, qa%d, qs%d, qz%d, pk%d, %s, %s, %s); "
				"else", pi, fmt(R, "rt_gemv_packed%s", pf->fn), j0, j1, (long long)pN, K,
				flt(R, ir_attr_float(n, "alpha", 1.0f)), pi, pi, pi, pi, C ? flt(R, beta) : "0.0f", cp, yp);
		else if (once)
			ew_line(R->w, "if (pk%d) %sx(%s, %s, %lld, %s, %s, %s, xs%d, pk%d, %s, %s, %s); "
				"else", pi, fmt(R, "rt_gemv_packed%s", pf->fn), j0, j1, (long long)pN, K,
				flt(R, ir_attr_float(n, "alpha", 1.0f)), A0, pi, pi, C ? flt(R, beta) : "0.0f", cp, yp);
		else
			emit_packed_call(R, n, "", j0, j1, K, ha, C ? flt(R, beta) : "0.0f", cp, yp);
		if (ir_attr_int(n, "store_i8", 0))
			emit_i8_call(R, n, M, j0, j1, K, A0, ha.ld, W0, C ? flt(R, beta) : "0.0f", C ? cp : NULL, yp, hy.ld);
		else if (C)
			ew_line(R->w, "rt_sgemm_bias(%d, %d, %s, j1_ - j0_, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", ta, tb,
				M, K, flt(R, alpha), A0, ha.ld, wp, hw.ld, flt(R, beta), cp, yp, hy.ld);
		else
			ew_line(R->w, "rt_sgemm(%d, %d, %s, j1_ - j0_, %s, %s, %s, %s, %s, %s, 0.0f, %s, %s);",
				ta, tb, M, K, flt(R, alpha), A0, ha.ld, wp, hw.ld, yp, hy.ld);
	}
	R->wstep[body_index(R, Y)] = 1;
}

/* Y = alpha op(A) op(W) + beta C for this thread's rows of one step. */
static void emit_gemm_rows(rec *R, ir_node *n)
{
	ew *w = R->w;
	ir_value *A = n->in[0], *W = n->in[1], *C = n->nin > 2 ? n->in[2] : NULL, *Y = n->out[0];
	int ta = (int)ir_attr_int(n, "transA", 0), tb = (int)ir_attr_int(n, "transB", 0);
	float alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	home ha = rec_mem_home(R, A), hy = rec_home(R, Y), hw = rec_mem_home(R, W);
	const char *M = rec_rows(R, Y->shape.d[0]), *N = dim(R, Y->shape.d[1]);
	const char *K = dim(R, ta ? A->shape.d[0] : A->shape.d[1]);
	ASSERT(ha.kind == HOME_MEM && hy.kind == HOME_MEM && hw.kind == HOME_MEM);
	const char *A0 = at(R, ha.base, ha.off), *W0 = at(R, hw.base, hw.off), *Y0 = at(R, hy.base, hy.off);
	const char *betas = "0.0f";
	const char *bias = NULL;        /* C as a row vector: rt_sgemm_bias adds it */
	if (C) {
		home hc = rec_home(R, C);
		int crow = C->shape.rank == 2 && !(ir_dim_is_const(C->shape.d[0]) && C->shape.d[0].k == 1);
		int ccol = C->shape.rank >= 1 && !(ir_dim_is_const(ir_cols_of(C)) && ir_cols_of(C).k == 1);
		if (!crow && ccol && hc.kind == HOME_MEM && hc.seq < 0 && ha.seq < 0)
			bias = at(R, hc.base, hc.off);
	}
	int pi = nd_index(R, n), i8 = ir_attr_int(n, "store_i8", 0) != 0;
	if (bias && i8) {
		emit_i8_call(R, n, M, "0", N, K, A0, ha.ld, W0, flt(R, beta), bias, Y0, hy.ld);
		return;
	}
	if (bias) {
		emit_packed_call(R, n, fmt(R, " && %s == 1", M), "0", N, K, ha, flt(R, beta), bias, Y0);
		if (R->pp[pi]) {
			ew_line(w, "rt_sgemm_packed(%d, %s, %s, %s, %s, %s, %s, pp%d, %d, %s, %s, %s, %s, %s, %s);", ta, M, N,
				K, flt(R, alpha), A0, ha.ld, pi, tb, W0, hw.ld, flt(R, beta), bias, Y0, hy.ld);
			return;
		}
		ew_line(w, "rt_sgemm_bias(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", ta, tb, M, N, K,
			flt(R, alpha), A0, ha.ld, W0, hw.ld, flt(R, beta), bias, Y0, hy.ld);
		return;
	}
	if (C) {
		/* C broadcast to every row (a bias vector, pre-summed at lowering) */
		home hc = rec_home(R, C);
		int crow = C->shape.rank == 2 && !(ir_dim_is_const(C->shape.d[0]) && C->shape.d[0].k == 1);
		int ccol = C->shape.rank >= 1 && !(ir_dim_is_const(ir_cols_of(C)) && ir_cols_of(C).k == 1);
		const char *ci = crow ? fmt(R, "r * %s", hc.ld) : NULL;
		if (ccol)
			ci = ci ? fmt(R, "%s + c", ci) : "c";
		const char *cv = hc.kind == HOME_SCALAR ? hc.lit
			: fmt(R, "%s[%s]", hc.base, ci ? at(R, ci, hc.off) : fmt(R, "%lld", (long long)hc.off));
		ew_open(w, "for (int64_t r = 0; r < %s; r++)", M);
		ew_line(w, "for (int64_t c = 0; c < %s; c++)", N);
		ew_line(w, "\t%s[%s + c] = %s%s;", hy.base, at(R, fmt(R, "r * %s", hy.ld), hy.off),
			beta != 1.0f ? fmt(R, "%s * ", flt(R, beta)) : "", cv);
		ew_close(w, "");
		betas = "1.0f";
	}
	if (ha.seq >= 0 && !ta) {
		/* rows of this step come from different time steps: one GEMV per row */
		int k = ha.seq;
		const char *arow = at(R, fmt(R, "%s + %s + %s", R->q[k], times(R, "(len[b] - 1 - step)", R->qt[k]),
					     times(R, "b", R->qb[k])), ha.off);
		const char *yrow = at(R, fmt(R, "%s + b * %s", hy.base, hy.ld), hy.off);
		ew_open(w, "for (int64_t b = 0; b < %s; b++)", M);
		if (i8)
			emit_i8_call(R, n, "1", "0", N, K, arow, ha.ld, W0, betas, NULL, yrow, hy.ld);
		else
			ew_line(w, "rt_sgemm(0, %d, 1, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", tb, N, K, flt(R, alpha),
				arow, ha.ld, W0, hw.ld, betas, yrow, hy.ld);
		ew_close(w, "");
		return;
	}
	ASSERT(ha.seq < 0);
	if (i8) {
		emit_i8_call(R, n, M, "0", N, K, A0, ha.ld, W0, betas, NULL, Y0, hy.ld);
		return;
	}
	emit_packed_call(R, n, fmt(R, " && %s == 1", M), "0", N, K, ha, betas, "NULL", Y0);
	if (R->pp[pi]) {
		ew_line(w, "rt_sgemm_packed(%d, %s, %s, %s, %s, %s, %s, pp%d, %d, %s, %s, %s, NULL, %s, %s);", ta, M, N, K,
			flt(R, alpha), A0, ha.ld, pi, tb, W0, hw.ld, betas, Y0, hy.ld);
		return;
	}
	ew_line(w, "rt_sgemm(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", ta, tb, M, N, K, flt(R, alpha),
		A0, ha.ld, W0, hw.ld, betas, Y0, hy.ld);
}

/* A product of the step: the whole rows of each thread, or (threads
 * "rows_cols", cols_ at run time) each thread's columns of the one row. */
static void emit_gemm(rec *R, ir_node *n)
{
	ew *w = R->w;
	ir_value *A = n->in[0], *W = n->in[1], *C = n->nin > 2 ? n->in[2] : NULL, *Y = n->out[0];
	int ta = (int)ir_attr_int(n, "transA", 0), tb = (int)ir_attr_int(n, "transB", 0);
	ew_line(w, "/* %s (%s): %s %s = %s%s x %s%s%s */", cm(R, n->name),
		n->origin ? cm(R, n->origin) : "recurrence body", cm(R, Y->name), shape_str(R, &Y->shape),
		cm(R, A->name), ta ? "^T" : "", cm(R, W->name), tb ? "^T" : "", C ? " + C" : "");
	if (!R->colpar_ok) {
		emit_gemm_rows(R, n);
		return;
	}
	ew_open(w, "if (cols_)");
	emit_gemm_columns(R, n, rec_mem_home(R, A), rec_mem_home(R, W), rec_home(R, Y));
	ew_close(w, "");
	ew_open(w, "else");
	emit_gemm_rows(R, n);
	ew_close(w, "");
}

/* ---- input projections computed per step ---------------------------------------- */

/* The root Gemm behind sequence input k of recurrence rn (through views)
 * when pass_schedule moved it into the steps (x_proj "step" or "inline"),
 * else NULL; *inl: computed inside the fused loops that read it. */
const ir_node *rec_step_projection(const ir_node *rn, int k, int *inl)
{
	ir_attr *a = ir_attr_find(rn, "x_proj");
	*inl = 0;
	if (!a || a->kind != ATTR_STRINGS || k >= a->n || !strcmp(a->strings[k], "before"))
		return NULL;
	*inl = !strcmp(a->strings[k], "inline");
	const ir_value *y = ir_storage(rn->in[k]);
	return y && y->producer && ir_attr_int(y->producer, "per_step", 0) ? y->producer : NULL;
}

/* This step's rows of the deferred GEMM gm (sequence input k): into the
 * start of its buffer, which x<k> then points at. */
static void emit_deferred_step(rec *R, int k, const ir_node *gm)
{
	emit_ctx *E = R->E;
	const ir_value *A = gm->in[0], *W = gm->in[1], *C = gm->nin > 2 ? gm->in[2] : NULL, *Y = gm->out[0];
	int tb = (int)ir_attr_int(gm, "transB", 0);
	float alpha = ir_attr_float(gm, "alpha", 1.0f), beta = ir_attr_float(gm, "beta", 1.0f);
	const char *K = dim(R, A->shape.d[1]), *N = dim(R, Y->shape.d[1]);
	E->body_ref = NULL;     /* root values: their own storage */
	const char *a = emit_ref(E, A), *w = emit_ref(E, W), *y = emit_ref(E, Y);
	const char *c = C ? emit_ref(E, C) : NULL;
	E->body_ref = rec_body_ref;
	ew_line(R->w, "/* %s: input projection of this step's B rows (computed here, not for all T*B "
		"rows before the loop) */", cm(R, gm->name));
	/* par: the thread's rows, b0_ on */
	const char *rows = R->par ? "nb_" : "B";
	const char *a0 = fmt(R, "%s + %s", a, step_rows(R, K));        /* this step's first row of A */
	if (R->par)
		y = fmt(R, "%s + %s", y, times(R, "b0_", N));
	if (R->colpar_ok) {
		/* cols_: this thread's columns of each block the step reads */
		ew_open(R->w, "if (cols_)");
		int nv;
		int64_t *offs = column_offsets(R, R->b->inputs[k], &nv);
		for (int i = 0; i < nv; i++) {
			int64_t o = offs[i];
			const char *j0 = colj(R, o, "j0_");
			const char *wp = tb ? fmt(R, "%s + %s", w, times(R, o ? fmt(R, "(%s)", j0) : j0, K))
					    : fmt(R, "%s + %s", w, j0);
			if (ir_attr_int(gm, "store_i8", 0))
				emit_i8_call(R, (ir_node *)gm, rows, j0, colj(R, o, "j1_"), K, a0, K, w,
					     c && beta != 0.0f ? flt(R, beta) : "0.0f",
					     c && beta != 0.0f ? fmt(R, "%s + %s", c, j0) : NULL, fmt(R, "%s + %s", y, j0), N);
			else if (c && beta != 0.0f)
				ew_line(R->w, "rt_sgemm_bias(0, %d, %s, j1_ - j0_, %s, %s, %s, %s, %s, %s, %s, "
					"%s + %s, %s + %s, %s);", tb, rows, K, flt(R, alpha), a0, K,
					wp, tb ? K : N, flt(R, beta), c, j0, y, j0, N);
			else
				ew_line(R->w, "rt_sgemm(0, %d, %s, j1_ - j0_, %s, %s, %s, %s, %s, %s, 0.0f, "
					"%s + %s, %s);", tb, rows, K, flt(R, alpha), a0, K, wp, tb ? K : N, y, j0, N);
		}
		ew_close(R->w, "");
		ew_open(R->w, "else");
	}
	if (ir_attr_int(gm, "store_i8", 0))
		emit_i8_call(R, (ir_node *)gm, rows, "0", N, K, a0, K, w, c && beta != 0.0f ? flt(R, beta) : "0.0f",
			     c && beta != 0.0f ? c : NULL, y, N);
	else if (c && beta != 0.0f)
		ew_line(R->w, "rt_sgemm_bias(0, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", tb,
			rows, N, K, flt(R, alpha), a0, K, w, tb ? K : N, flt(R, beta), c, y, N);
	else
		ew_line(R->w, "rt_sgemm(0, %d, %s, %s, %s, %s, %s, %s, %s, %s, 0.0f, %s, %s);", tb, rows,
			N, K, flt(R, alpha), a0, K, w, tb ? K : N, y, N);
	if (R->colpar_ok)
		ew_close(R->w, "");
	ew_decl(R->w, fmt(R, "x%d", k), "const float *x%d = %s;", k, y);
}

/* ---- outputs ------------------------------------------------------------------------ */

/* Copies body output k (not written by a fused group) to its place: a
 * memcpy per batch row from memory, a loop for a literal. */
static void emit_output_copy(rec *R, int k)
{
	ew *w = R->w;
	ir_value *v = R->b->outputs[k];
	home h = rec_home(R, v);
	ir_dim cols = ir_cols_of(v);
	const char *src = NULL, *dst;
	const char *off = h.off ? fmt(R, " + %lld", (long long)h.off) : "";
	if (h.kind == HOME_SCALAR)
		src = h.lit;
	else if (h.seq >= 0)
		src = fmt(R, "%s + %s + %s%s", R->q[h.seq], times(R, "(len[b] - 1 - step)", R->qt[h.seq]),
			  times(R, "b", R->qb[h.seq]), off);
	else
		src = fmt(R, "%s + %s%s", h.base, times(R, "b", h.ld), off);
	if (k < R->nstate)
		dst = fmt(R, "s%dn + %s", k, times(R, "b", dim(R, cols)));
	else
		dst = fmt(R, "%s + %s + %s", R->o[k - R->nstate],
			  times(R, R->per_row_time ? "(len[b] - 1 - step)" : "t", R->ot[k - R->nstate]),
			  times(R, "b", R->ob[k - R->nstate]));
	/* the output's own rows: not the first state's, which may be a row of
	 * the batch ([1, B]: a per-row flag carried before the hidden state) */
	const char *rows = rec_rows(R, v->shape.rank == 2 ? v->shape.d[0] : ir_dim_const(1));
	ew_line(w, "/* body output %d (%s) */", k, cm(R, v->name));
	ew_open(w, "for (int64_t b = 0; b < %s; b++)", rows);
	if (R->has_lens)
		ew_line(w, "if (step >= len[b]) continue;");
	if (h.kind == HOME_SCALAR) {
		ew_line(w, "for (int64_t j = 0; j < %s; j++)", dim(R, cols));
		ew_line(w, "\t(%s)[j] = %s;", dst, src);
	} else {
		ew_line(w, "memcpy(%s, %s, sizeof(float) * %s);", dst, src, count(R, dim(R, cols)));
	}
	ew_close(w, "");
}

/* ---- the steps ---------------------------------------------------------------------- */

/* The step's t, its step scalars tstep_ and tlen_, and this step's rows of
 * each per-step input: a pointer into it, or the rows of a projection the
 * step computes (emit_deferred_step), or the rows of its A when the fused
 * loops compute the projection (xa<k>). */
static void step_inputs(rec *R)
{
	emit_ctx *E = R->E;
	ew *w = R->w;
	ew_decl(w, "t", "const int64_t t = %s;", R->reverse ? "T - 1 - step" : "step");
	if (R->has_step >= 1)
		ew_decl(w, "tstep_", "const float tstep_ = (float)(m->rec%d_t + step + 1); /* 1-based */", R->id);
	if (R->has_step >= 2)
		ew_decl(w, "tlen_", "const float tlen_ = (float)T; /* steps of this run */");
	if (R->per_row_time)
		return;         /* each row its own time step: the loops find its rows */
	for (int k = 0; k < R->nseq; k++) {
		int inl;
		const ir_node *gm = rec_step_projection(R->n, k, &inl);
		if (R->inl[k]) {
			/* xa<k>: this step's rows of the product's A, computed on in the loops */
			const ir_value *A = gm->in[0];
			E->body_ref = NULL;
			const char *a = emit_ref(E, A);
			E->body_ref = rec_body_ref;
			ew_line(w, "/* %s: input projection of this step's rows, computed in the loops that read it */",
				cm(R, gm->name));
			ew_decl(w, fmt(R, "xa%d", k), "const float *xa%d = %s + %s;", k, a,
				step_rows(R, dim(R, A->shape.d[1])));
		} else if (gm)
			emit_deferred_step(R, k, gm);
		else
			ew_decl(w, fmt(R, "x%d", k), "const float *x%d = %s + %s;", k, R->q[k], times(R, "t", R->qt[k]));
	}
}

/* Stacked outputs that their producers write in place: y<k>, this step's
 * rows; written[] marks them. */
static void direct_outputs(rec *R, int *written)
{
	ir_graph *b = R->b;
	for (int k = R->nstate; k < b->noutputs; k++)
		if (ir_out_direct(b->outputs[k]) == k - R->nstate) {
			int j = k - R->nstate;
			ew_decl(R->w, fmt(R, "y%d", j), "float *y%d = %s + %s; /* output %d's rows of this step, "
				"written in place */", j, R->o[j], times(R, "t", R->ot[j]), j);
			written[k] = 1;
		}
}

/* The body's nodes in order, each by its kind (the classes pass_schedule
 * decided from); a fused group is its run of nodes.  written[] marks the
 * body outputs a fused group stored. */
static void step_nodes(rec *R, int *written)
{
	emit_ctx *E = R->E;
	ir_graph *b = R->b;
	for (int i = 0; i < b->nnodes;) {
		ir_node *nd = b->nodes[i];
		if (ir_attr_int(nd, "in_place", 0)) {
			ew_line(R->w, "/* %s (%s): Concat of %d inputs along the columns, written in place by them */",
				cm(R, nd->name), nd->origin ? cm(R, nd->origin) : "recurrence body", nd->nin);
			i++;
			continue;
		}
		if (nd->op == OP_GEMM) {
			emit_gemm(R, nd);
			i++;
			continue;
		}
		if (ir_is_column_view(nd)) {
			i++;
			continue;
		}
		if (ir_attr_int(nd, "by_rows", 0)) {
			emit_row_concat(R, nd);
			i++;
			continue;
		}
		if (is_generic(nd)) {
			emit_node(E, nd);
			i++;
			continue;
		}
		if (is_step_scalar(nd)) {
			rec_step_scalar(R, nd);
			i++;
			continue;
		}
		/* a fused group: its element-wise nodes (column views in it are skipped) */
		int g = nd->group, cnt = 0;
		ir_node **grp_nodes = arena_array(E->A, (size_t)b->nnodes, sizeof *grp_nodes);
		int j = i;
		for (; j < b->nnodes && (b->nodes[j]->group == g || ir_is_column_view(b->nodes[j])); j++)
			if (!ir_is_column_view(b->nodes[j]))
				grp_nodes[cnt++] = b->nodes[j];
		for (int k = 0; k < cnt; k++)
			for (int o = 0; o < b->noutputs; o++)
				if (b->outputs[o] == grp_nodes[k]->out[0])
					written[o] = 1;
		rec_fused(R, grp_nodes, cnt);
		i = j;
	}
}

/* The body outputs no node stored where they go: copied there. */
static void copy_unwritten(rec *R, int *written)
{
	ir_graph *b = R->b;
	for (int k = 0; k < R->nstate; k++) {
		/* products and generic nodes write a state straight into s<k>n */
		home hs = rec_home(R, b->outputs[k]);
		if (hs.kind == HOME_MEM && !strcmp(hs.base, fmt(R, "s%dn", k)))
			written[k] = 1;
	}
	for (int k = 0; k < b->noutputs; k++)
		if (!written[k] && (k < R->nstate || R->n->out[k]))
			emit_output_copy(R, k);
}

/* sequence_lens: rows that have finished keep their state and output zeros. */
static void finished_rows(rec *R)
{
	ew *w = R->w;
	ir_graph *b = R->b;
	ew_line(w, "/* rows that have finished keep their state and output zeros */");
	ew_open(w, "for (int64_t b = 0; b < %s; b++)", R->par ? "nb_" : "B");
	ew_line(w, "if (step < len[b])");
	ew_line(w, "\tcontinue;");
	for (int k = 0; k < R->nstate; k++) {
		const char *H = dim(R, ir_cols_of(b->inputs[R->nseq + k]));
		ew_line(w, "memcpy(s%dn + %s, s%d + %s, sizeof(float) * %s);", k, times(R, "b", H), k,
			times(R, "b", H), count(R, H));
	}
	for (int k = 0; k < R->nout; k++)
		if (R->n->out[R->nstate + k])
			ew_line(w, "memset(%s + %s + %s, 0, sizeof(float) * %s);", R->o[k], times(R, "step", R->ot[k]),
				times(R, "b", R->ob[k]), count(R, dim(R, ir_cols_of(b->outputs[R->nstate + k]))));
	ew_close(w, "");
}

/* The loop over the steps (par: one thread's share of it). */
void rec_steps(rec *R)
{
	ew *w = R->w;
	ir_graph *b = R->b;
	if (R->colpar_ok)
		memset(R->wstep, 0, (size_t)b->nvalues + 1);
	ew_open(w, "for (int64_t step = 0; step < %s; step++)", R->cond >= 0 ? "ran" : "T");
	step_inputs(R);
	int *written = arena_array(R->E->A, (size_t)b->noutputs + 1, sizeof *written);
	direct_outputs(R, written);
	step_nodes(R, written);
	copy_unwritten(R, written);
	if (R->has_lens)
		finished_rows(R);
	if (R->colpar_ok) {
		/* the next step's products read every column of the new states */
		ew_line(w, "if (cols_)");
		ew_line(w, "\trt_barrier_wait(&bar_, tid_, tn_);");
	}
	for (int k = 0; k < R->nstate; k++)
		ew_line(w, "{ float *tmp = s%d; s%d = s%dn; s%dn = tmp; }", k, k, k, k);
	if (R->cond >= 0) {
		ew_open(w, "if (s%d[0] == 0.0f) /* the condition is false: this was the last step */", R->cond);
		ew_line(w, "ran = step + 1;");
		ew_line(w, "break;");
		ew_close(w, "");
	}
	ew_close(w, "");
}
