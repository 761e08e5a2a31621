/* emit_rec.c: C for one RECURRENCE node (see "Recurrence" in ir.h), as
 * pass_schedule decided it runs: its `threads` (one copy of the steps, with
 * the column split chosen at run time by cols_ when "rows_cols"), where each
 * input projection is computed (`x_proj`), which products read packed
 * weights (`pack`); where each body value lives is the planner's slot.
 *
 * The emitted code is the body of the recurrence's own function,
 * rec_<name>(), which forward (a backward recurrence: backward) calls once
 * and whose status it returns unless RT_OK (emit_forward.c,
 * print_rec_function: its parameters are the instance `m` and what the
 * body reads, its workspace parts one struct `ws`; the comment above it is
 * emit_rec_doc's: source node, T, B, per-step inputs, outputs):
 *
 *   T, B
 *   the states: a table (an rt_state per state: its model-struct member
 *     m->st_<state name> of emit_state_member, its element count for this
 *     batch, its initial value or NULL for zeros) and one call,
 *     rt_states_prepare, that (re)allocates them for the current batch (or
 *     only counts them: --no-malloc's arena) and, unless m->started, sets
 *     their initial values; kept between calls so that streaming continues
 *   packed weights: rt_gemv_pack_once (batch 1, kept), rt_gemm_pack (a run)
 *   [threads: rt_team, then a parallel block, each thread its rows or columns]
 *     for (step = 0; step < T; step++) {
 *       t = reverse ? T-1-step : step (per row with sequence_lens + reverse)
 *       [a hoisted input projection that pass_schedule moved into the steps: this
 *         step's B rows of it, into the start of its own buffer]
 *       [has_step: tstep_ = 1-based step number (counted on across calls of
 *         a stream in m->rec<id>_t), tlen_ = T; rank-0 body values (schedules
 *         such as NAG's mu_t) are computed here once per step, as locals, not
 *         per element]
 *       each body product: one rt_sgemm over all B rows (GEMV when B == 1)
 *       any other node (MatMul, Concat, Split, element-wise ops of rank 3,
 *         ...): the root-graph emitter (emit_node) on workspace buffers, with
 *         the step's inputs, states and next states as its operands' storage
 *       each fused group: for (b < B) RT_IVDEP for (j < H) { gate math in locals;
 *         new states -> the other state buffer; per-step outputs -> straight
 *         into their strided place in the stacked output }
 *       [sequence_lens: finished rows keep their state, output zeros]
 *       swap state buffers
 *     }
 *   final states -> final outputs; states -> model struct
 *
 * States are double-buffered: the current state lives in the model struct
 * (or, every other step, in the workspace slot of the body's new-state
 * value) and the new one is written to the other buffer, so no element of a
 * state is overwritten while a later kernel of the same step still needs it.
 *
 * Workspace parts are named after what they hold in the function
 * (emit_slot_name: ws->h1_h_next, ws->Gemm17); a per-step input or
 * stacked output is read through its storage and its strides as
 * expressions (ws->h1_h_seq + t * B * 128; threaded: the thread's rows
 * q<k> / o<k>); pointer and index expressions are built without "+ 0",
 * "* 1" or needless parentheses (at, times, colj).
 *
 * This file prints the frame of that function, around the time loop, and
 * decides the homes of the body values; one step is emit_rec_step.c's and
 * its fused loops emit_rec_fused.c's (what they share: emit_rec.h).
 *
 * Legend: T steps, B batch rows, H (or N) columns of a value of the body.
 */
#include "cellrt.h"
#include "emit.h"
#include "emit_rec.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

/* ---- homes of body values ------------------------------------------------------ */

/* Rows of a batch-row loop or product: the thread's share when par. */
const char *rec_rows(rec *R, ir_dim rows)
{
	ir_dim B = R->b->inputs[R->nseq]->shape.d[0];
	return R->par && ir_dim_eq(rows, B) ? "nb_" : dim(R, rows);
}

/* par: a body buffer (a workspace slot with B rows of ld elements) as the
 * thread's rows of it, declared once per thread ("r<i> = base + b0_ * ld"). */
static const char *par_base(rec *R, const char *base, const char *ld)
{
	if (!R->par)
		return base;
	for (int i = 0; i < R->nalias; i++)
		if (!strcmp(R->alias_of[i], base) && !strcmp(R->alias_ld[i], ld))
			return R->alias[i];
	ASSERT(R->nalias < (int)COUNTOF(R->alias));
	R->alias_of[R->nalias] = base;
	R->alias_ld[R->nalias] = ld;
	R->alias[R->nalias] = fmt(R, "r%d", R->nalias);
	return R->alias[R->nalias++];
}

/* Storage of an outer (captured) value or a body constant: MEM at its
 * emit_ref with its own row stride, or a literal for scalar constants. */
static home outer_home(rec *R, const ir_value *v)
{
	home o = {.kind = HOME_MEM, .seq = -1};
	if (ir_value_is_const(v) && ir_shape_const_numel(&v->shape) == 1) {
		o.kind = HOME_SCALAR;
		o.lit = emit_scalar(R->E, v, 0);
		return o;
	}
	o.base = emit_ref(R->E, v);
	o.ld = v->shape.rank >= 2 ? dim(R, ir_cols_of(v)) : "0";
	return o;
}

home rec_home(rec *R, const ir_value *v)
{
	home *h = home_of(R, v);
	if (h && h->kind != HOME_NONE)
		return *h;
	return outer_home(R, v);
}

/* A product's operand: in memory, also a one-element constant (which the
 * element-wise code reads as a literal): a 1 x 1 weight. */
home rec_mem_home(rec *R, const ir_value *v)
{
	home h = rec_home(R, v);
	if (h.kind == HOME_SCALAR && ir_value_is_const(v))
		h = (home){.kind = HOME_MEM, .base = emit_ref(R->E, v),
			   .ld = v->shape.rank >= 2 ? dim(R, ir_cols_of(v)) : "0", .seq = -1};
	return h;
}

/* emit_ctx.body_ref: storage of body values in the step's own buffers. */
const char *rec_body_ref(emit_ctx *E, const ir_value *v)
{
	rec *R = E->body_ctx;
	ir_graph *b = R->b;
	for (int k = 0; k < b->ninputs; k++) {
		if (b->inputs[k] != v)
			continue;
		if (k < R->nseq) {
			if (R->seq_axis[k] != 0 || R->per_row_time) {
				diag_node(E->D, R->n, "a node of this recurrence's body other than a product "
					  "or an element-wise operator reads per-step input %d, whose rows "
					  "are not contiguous (batch-first layout or reversed sequence_lens); "
					  "not supported", k);
				return "((float *)0)";
			}
			return fmt(R, "x%d", k);
		}
		if (k < R->nseq + R->nstate)
			return fmt(R, "s%d", k - R->nseq);
		return k == R->nseq + R->nstate ? "(&tstep_)" : "(&tlen_)";
	}
	for (int k = 0; k < R->nstate; k++) {
		const ir_value *o = ir_storage(b->outputs[k]);
		if (o == v && o->kind == VAL_TEMP)
			return fmt(R, "s%dn", k);
	}
	/* par: a rank-0 value of the step (a schedule's counter arithmetic)
	 * lives in each thread's own local, not in a shared workspace slot */
	if (R->par && v->shape.rank == 0 && v->kind == VAL_TEMP && body_index(R, v) >= 0)
		return fmt(R, "tl%d", body_index(R, v));
	return NULL;
}

/* The buffer of a body value [B, N] that a product or a fused group
 * stores: a workspace slot (par: the thread's rows of it), or a name the
 * steps already have (s<k>n, declared per thread). */
static const char *body_buffer(rec *R, const ir_value *v)
{
	const char *base = emit_ref(R->E, v);
	if (rec_body_ref(R->E, ir_storage(v)))
		return base;
	return par_base(R, base, dim(R, ir_cols_of(v)));
}

/* Sets the homes every step shares: inputs, states, products, stored
 * element-wise results, column views. */
static int plan_homes(rec *R)
{
	ir_graph *b = R->b;
	for (int k = 0; k < R->nseq; k++) {
		home *h = home_of(R, b->inputs[k]);
		*h = (home){.kind = HOME_MEM, .base = fmt(R, "x%d", k), .ld = R->qb[k] ? R->qb[k] : "0",
			    .seq = R->per_row_time ? k : -1};
	}
	for (int k = 0; k < R->nstate; k++) {
		home *h = home_of(R, b->inputs[R->nseq + k]);
		*h = (home){.kind = HOME_MEM, .base = fmt(R, "s%d", k),
			    .ld = dim(R, ir_cols_of(b->inputs[R->nseq + k])), .seq = -1};
	}
	for (int k = 0; k < R->has_step; k++)
		*home_of(R, b->inputs[R->nseq + R->nstate + k]) =
			(home){.kind = HOME_SCALAR, .lit = k ? "tlen_" : "tstep_", .seq = -1};
	/* values their producers write in place (pass_schedule): a scan
	 * output's rows of this step (y<k> = o<k> + t * ot<k>), then the
	 * columns of an in-place Concat's storage */
	for (int k = R->nstate; k < b->noutputs; k++)
		if (ir_out_direct(b->outputs[k]) == k - R->nstate)
			*home_of(R, b->outputs[k]) = (home){.kind = HOME_MEM, .base = fmt(R, "y%d", k - R->nstate),
							   .ld = R->ob[k - R->nstate], .seq = -1};
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		if (!ir_attr_int(n, "in_place", 0))
			continue;
		home *hy = home_of(R, n->out[0]);
		if (hy->kind == HOME_NONE)
			*hy = (home){.kind = HOME_MEM, .base = body_buffer(R, n->out[0]),
				     .ld = dim(R, ir_cols_of(n->out[0])), .seq = -1};
		for (int k = 0; k < n->nin; k++) {
			int64_t col = 0;
			ASSERT(ir_concat_in_place(n->in[k], &col) == n);
			*home_of(R, n->in[k]) = (home){.kind = HOME_MEM, .base = hy->base, .ld = hy->ld,
						       .off = hy->off + col, .seq = -1};
		}
	}
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		ir_value *v = n->out[0];
		home *h = home_of(R, v);
		if (n->nout == 1 && h && h->kind != HOME_NONE)
			continue;       /* written in place, above */
		if (ir_attr_int(n, "by_rows", 0)) {
			*h = (home){.kind = HOME_MEM, .base = body_buffer(R, v), .ld = dim(R, ir_cols_of(v)), .seq = -1};
			continue;
		}
		if (is_generic(n)) {
			/* printed by emit_node: its outputs live in workspace slots, or
			 * in the next-state buffer when one is a state (rec_body_ref) */
			for (int k = 0; k < n->nout; k++)
				if (n->out[k] && home_of(R, n->out[k]))
					*home_of(R, n->out[k]) = (home){.kind = HOME_MEM,
						.base = emit_ref(R->E, n->out[k]),
						.ld = n->out[k]->shape.rank >= 1 ? dim(R, ir_cols_of(n->out[k])) : "0",
						.seq = -1};
			continue;
		}
		if (n->nout != 1 || !h) {
			diag_node(R->E->D, n, "cannot emit %s inside a recurrence body", ir_op_name(n->op));
			return 1;
		}
		if (is_step_scalar(n)) {
			*h = (home){.kind = HOME_REG, .seq = -1};
		} else if (n->op == OP_GEMM) {
			/* a state that is a product itself (a linear update, h = [x, h] W)
			 * is written where the state's next value goes */
			int k;
			int st = is_body_output(R, v, &k) && k < R->nstate;
			*h = (home){.kind = HOME_MEM, .base = st ? fmt(R, "s%dn", k) : body_buffer(R, v),
				    .ld = dim(R, ir_cols_of(v)), .seq = -1};
		} else if (ir_is_column_view(n)) {
			*h = rec_home(R, n->in[0]);
			ASSERT(h->kind == HOME_MEM);
			h->off += ir_const_int(n->in[1], 0);
		} else if (n->group > 0 && ir_ops[n->op].kind == OPK_ELEM) {
			int k;
			if (is_body_output(R, v, &k) && k < R->nstate)
				*h = (home){.kind = HOME_MEM, .base = fmt(R, "s%dn", k), .ld = dim(R, ir_cols_of(v)), .seq = -1};
			else if (ir_storage(v)->slot >= 0)
				*h = (home){.kind = HOME_MEM, .base = body_buffer(R, v), .ld = dim(R, ir_cols_of(v)), .seq = -1};
			else
				*h = (home){.kind = HOME_REG, .seq = -1};
		} else {
			diag_node(R->E->D, n, "internal error: no home for %s inside a recurrence body",
				  ir_op_name(n->op));
			return 1;
		}
	}
	return 0;
}

/* ---- products' packed weights, before the steps ----------------------------------- */

/* The packed copy of gm's weights as [N, K]: N outputs, K inputs. */
void rec_pack_dims(const ir_node *gm, int64_t *N, int64_t *K)
{
	const ir_value *W = gm->in[1];
	int tb = (int)ir_attr_int(gm, "transB", 0);
	*N = W->shape.d[tb ? 0 : 1].k;
	*K = W->shape.d[tb ? 1 : 0].k;
}

static const pack_format pack_formats[] = {
	{NULL, "float", "", "", NULL, 0},
	{"bf16", "uint16_t", "_bf16", " in bfloat16", "rt_gemv_split_bf16", RT_BF16_SPLIT_KMAX},
	{"int8", "int8_t", "_i8", " in int8, its activations quantized per call", "rt_gemv_quant_i8", RT_I8_KMAX},
};

const pack_format *rec_pack_fmt(const ir_node *gm)
{
	const char *s = ir_attr_string(gm, "weights", NULL);
	for (size_t k = 1; s && k < sizeof pack_formats / sizeof pack_formats[0]; k++)
		if (!strcmp(s, pack_formats[k].mark))
			return &pack_formats[k];
	return &pack_formats[0];
}

/* Before the steps: pk<i> = the packed copy when B == 1 (made on the first
 * such run and kept in the instance: rt_gemv_pack_once), else NULL, for each
 * product pass_schedule marked pack. */
static void emit_pack(rec *R)
{
	ew *w = R->w;
	for (int i = 0; i < R->b->nnodes; i++) {
		ir_node *gm = R->b->nodes[i];
		if (!ir_attr_int(gm, "pack", 0))
			continue;
		int64_t N, K;
		rec_pack_dims(gm, &N, &K);
		home hw = rec_mem_home(R, gm->in[1]);
		const pack_format *f = rec_pack_fmt(gm);
		ew_line(w, "/* %s packed for the batch-1 GEMV%s (once)%s */", cm(R, gm->in[1]->name), f->words,
			ir_attr_int(gm, "panels", 0) ? " and for the GEMM kernel (every run)" : "");
		ew_line(w, "const %s *pk%d = B == 1 ? rt_gemv_pack_once%s(&m->rec%d_pk%d, %d, %lld, %lld, %s, %s) : NULL;",
			f->ctype, i, f->fn, R->id, i, (int)ir_attr_int(gm, "transB", 0), (long long)N, (long long)K,
			at(R, hw.base, hw.off), hw.ld);
		ew_line(w, "if (B == 1 && !pk%d)", i);
		ew_line(w, "\treturn RT_ERR_NOMEM;");
		R->pk[i] = 1;
	}
}

/* Before the steps: pp<i> = the weights of each product pass_schedule marked
 * panels, packed for libcellrt's GEMM kernel (NULL where it does not take
 * this run's rows), repacked every run: the optimiser of a training build
 * changes them between runs. */
static void emit_panels(rec *R)
{
	ew *w = R->w;
	for (int i = 0; i < R->b->nnodes; i++) {
		ir_node *gm = R->b->nodes[i];
		if (!ir_attr_int(gm, "panels", 0))
			continue;
		int64_t N, K;
		rec_pack_dims(gm, &N, &K);
		home hw = rec_mem_home(R, gm->in[1]);
		if (!R->pk[i])
			ew_line(w, "/* %s packed for libcellrt's GEMM kernel, for every step of this run */",
				cm(R, gm->in[1]->name));
		ew_line(w, "const int pps%d = rt_gemm_pack(B, %d, %lld, %lld, %s, %s, &m->rec%d_pp%d, "
			"&m->rec%d_pp%d_n);", i, (int)ir_attr_int(gm, "transB", 0), (long long)N, (long long)K,
			at(R, hw.base, hw.off), hw.ld, R->id, i, R->id, i);
		ew_line(w, "if (pps%d < 0)", i);
		ew_line(w, "\treturn RT_ERR_NOMEM;");
		ew_line(w, "const float *pp%d = pps%d ? m->rec%d_pp%d : NULL;", i, i, R->id, i);
		R->pp[i] = 1;
	}
}

/* ---- the model-struct hooks ---------------------------------------------------------- */

void emit_rec_state_decls(emit_ctx *E, ir_node *n)
{
	int ns = (int)ir_attr_int(n, "n_state", 0), nseq = (int)ir_attr_int(n, "n_seq", 0);
	for (int k = 0; k < ns; k++) {
		const ir_value *s = n->body->inputs[nseq + k];
		const char *st = emit_state_member(E, n, k);
		ew_line(E->w, "float *%s; /* %s: state %d of %s, %s */", st, cm_(E->A, n->name), k,
			n->origin ? cm_(E->A, n->origin) : "a recurrence", ir_shape_str(E->A, E->g, &s->shape));
		ew_line(E->w, "size_t %s_n; /* elements allocated at %s */", st, st);
	}
	if (ir_attr_int(n, "has_step", 0))
		ew_line(E->w, "int64_t rec%d_t; /* steps run so far by a stream (has_step) */", n->id);
	for (int i = 0; i < n->body->nnodes; i++)
		if (ir_attr_int(n->body->nodes[i], "pack", 0))
			ew_line(E->w, "%s *rec%d_pk%d; /* %s packed for the batch-1 GEMV%s (NULL until used) */",
				rec_pack_fmt(n->body->nodes[i])->ctype, n->id, i, cm_(E->A, n->body->nodes[i]->in[1]->name),
				rec_pack_fmt(n->body->nodes[i])->words);
	for (int i = 0; i < n->body->nnodes; i++)
		if (ir_attr_int(n->body->nodes[i], "panels", 0)) {
			ew_line(E->w, "float *rec%d_pp%d; /* %s packed for the GEMM kernel (rt_gemm_pack) */",
				n->id, i, cm_(E->A, n->body->nodes[i]->in[1]->name));
			ew_line(E->w, "size_t rec%d_pp%d_n; /* its bytes */", n->id, i);
		}
}

void emit_rec_state_free(emit_ctx *E, ir_node *n)
{
	int ns = (int)ir_attr_int(n, "n_state", 0);
	for (int k = 0; k < ns; k++)
		ew_line(E->w, "free(m->%s);", emit_state_member(E, n, k));
	for (int i = 0; i < n->body->nnodes; i++)
		if (ir_attr_int(n->body->nodes[i], "pack", 0))
			ew_line(E->w, "free(m->rec%d_pk%d);", n->id, i);
	for (int i = 0; i < n->body->nnodes; i++)
		if (ir_attr_int(n->body->nodes[i], "panels", 0))
			ew_line(E->w, "free(m->rec%d_pp%d);", n->id, i);
}

void emit_rec_state_reset(emit_ctx *E, ir_node *n)
{
	ew_line(E->w, "/* rec%d (%s): started = 0 makes the next run start from its initial state */",
		n->id, cm_(E->A, n->name));
}

/* ---- the recurrence ---------------------------------------------------------------- */

static void emit_rec_body(rec *R);
static void emit_par_open(rec *R);
static void emit_par_close(rec *R);

/* R's facts from recurrence n's attributes, and T and B; 1 when they do
 * not hold together (reported when `report`). */
static int rec_init(rec *R, emit_ctx *E, ir_node *n, int report)
{
	*R = (rec){.E = E, .w = E->w, .n = n, .b = n->body, .id = n->id};
	ir_graph *b = n->body;
	R->nseq = (int)ir_attr_int(n, "n_seq", 0);
	R->nstate = (int)ir_attr_int(n, "n_state", 0);
	R->nout = (int)ir_attr_int(n, "n_out", 0);
	R->reverse = ir_attr_int(n, "reverse", 0) != 0;
	R->has_lens = ir_attr_int(n, "has_lens", 0) != 0;
	R->per_row_time = R->reverse && R->has_lens;
	R->has_step = (int)ir_attr_int(n, "has_step", 0);
	R->cond = ir_rec_cond_state(n);
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	/* no axis attributes: every axis 0 */
	const int64_t *zero_axes = arena_array(E->A, (size_t)(R->nseq > R->nout ? R->nseq : R->nout) + 1,
					       sizeof *zero_axes);
	R->seq_axis = sa && sa->n >= R->nseq ? sa->ints : zero_axes;
	R->out_axis = oa && oa->n >= R->nout ? oa->ints : zero_axes;
	const char *why = NULL;
	if (R->nseq < 1 || R->nout < 0 || !b)
		why = "internal error: a recurrence without per-step inputs";
	else if (R->has_step < 0 || R->has_step > 2 || b->ninputs != R->nseq + R->nstate + R->has_step)
		why = "internal error: recurrence body inputs do not match its attributes";
	for (int k = 0; !why && k < b->ninputs; k++) {
		int want = k < R->nseq + R->nstate ? 2 : 0;
		if (b->inputs[k]->shape.rank != want || b->inputs[k]->dtype != DT_F32) {
			if (report)
				diag_node(E->D, n, "recurrence body input %s must be f32 %s, got %s",
					  b->inputs[k]->name, want ? "[B, N]" : "[] (a step scalar)",
					  shape_str(R, &b->inputs[k]->shape));
			return 1;
		}
	}
	if (!why && R->nstate < 1)
		why = "internal error: a recurrence without state";
	if (why) {
		if (report)
			diag_node(E->D, n, "%s", why);
		return 1;
	}
	ir_value *X0 = n->in[0];
	int ax0 = (int)R->seq_axis[0];
	R->T = dim(R, X0->shape.d[ax0]);
	R->B = dim(R, X0->shape.d[1 - ax0]);
	return 0;
}

void emit_rec_doc(emit_ctx *E, ir_node *n)
{
	rec R0, *R = &R0;
	if (rec_init(R, E, n, 0)) {
		ew_line(E->w, " * (not printed: see the diagnostics) */");
		return;
	}
	ew *w = R->w;
	int last_out = -1;
	for (int k = 0; k < R->nout; k++)
		if (n->out[R->nstate + k])
			last_out = k;
	ew_line(w, " * T = %s steps of B = %s rows%s%s;", R->T, R->B, R->reverse ? ", reverse" : "",
		R->has_lens ? ", with sequence_lens" : "");
	for (int k = 0; k < R->nseq; k++)
		ew_line(w, " * per-step input %d: %s %s (time axis %d)%s", k, cm(R, n->in[k]->name),
			shape_str(R, &n->in[k]->shape), (int)R->seq_axis[k], k == R->nseq - 1 && last_out < 0 ? " */" : "");
	for (int k = 0; k < R->nout; k++)
		if (n->out[R->nstate + k])
			ew_line(w, " * output %d: %s %s (time axis %d)%s", k, cm(R, n->out[R->nstate + k]->name),
				shape_str(R, &n->out[R->nstate + k]->shape), (int)R->out_axis[k], k == last_out ? " */" : "");
}

void emit_recurrence(emit_ctx *E, ir_node *n)
{
	rec R0, *R = &R0;
	if (rec_init(R, E, n, 1))
		return;
	R->h = arena_array(E->A, (size_t)n->body->nvalues + 1, sizeof *R->h);
	E->body_ref = rec_body_ref;
	E->body_ctx = R;
	/* every declaration that a variant of the steps may leave unread is an
	 * ew_decl, kept only where the code after it reads it (ew_prune) */
	ew_capture c;
	ew_capture_begin(R->w, &c, R->w->indent);
	emit_rec_body(R);
	char *text = ew_capture_end(R->w, &c, E->A);
	fputs(ew_prune(E->A, text), R->w->f);
	E->body_ref = NULL;
	E->body_ctx = NULL;
}

/* colpar: the elements of the weights that the step's products read, as
 * an expression (rt_split_columns weighs it against the per-step meeting). */
static const char *step_weights(rec *R)
{
	const char *sum = NULL;
	for (int i = 0; i < R->b->nnodes; i++) {
		const ir_node *n = R->b->nodes[i];
		if (n->op != OP_GEMM || n->in[1]->shape.rank != 2)
			continue;
		const char *e = fmt(R, "(int64_t)%s * %s", dim(R, n->in[1]->shape.d[0]), dim(R, n->in[1]->shape.d[1]));
		sum = sum ? fmt(R, "%s + %s", sum, e) : e;
	}
	return sum ? sum : "0";
}

/* par: the parallel block around the steps.  Each thread takes rows
 * [b0_, b0_ + nb_) of every batch-row buffer; without OpenMP (a build
 * without -fopenmp, make OPENMP=) the team is not asked for and the block
 * runs once, as thread 0 of 1, over every row. */
static void emit_par_open(rec *R)
{
	ew *w = R->w;
	ir_graph *b = R->b;
	if (R->colpar_ok) {
		ew_line(w, "/* threads: each takes a share of the batch rows, which never meet here; at batch 1");
		ew_line(w, " * (cols_) they share the row's columns, meeting at each step, when worth it */");
		ew_line(w, "int cols_ = 0;");
		ew_decl(w, "bar_", "rt_barrier bar_ = {.count = 0}; /* their meeting (a spinning barrier, cheaper than OpenMP's) */");
		ew_line(w, "#ifdef _OPENMP");
		ew_line(w, "const int nt_ = rt_team(B, T, %s, &cols_);", step_weights(R));
	} else {
		ew_line(w, "/* threads: each takes a share of the batch rows, which never meet here */");
		ew_line(w, "#ifdef _OPENMP");
		ew_line(w, "const int nt_ = rt_team(B, T, 0, NULL);");
	}
	ew_line(w, "#pragma omp parallel num_threads(nt_) if (nt_ > 1)");
	ew_line(w, "#endif");
	ew_line(w, "{");
	w->indent++;
	ew_line(w, "const int tid_ = rt_thread_id(), tn_ = rt_thread_count(); /* this thread of tn_ */");
	if (R->colpar_ok) {
		const char *H = dim(R, R->hc);
		ew_line(w, "const int64_t b0_ = cols_ ? 0 : B * tid_ / tn_;");
		ew_decl(w, "nb_", "const int64_t nb_ = cols_ ? B : B * (tid_ + 1) / tn_ - b0_;");
		ew_decl(w, "j0_", "const int64_t j0_ = cols_ ? %s * tid_ / tn_ : 0;", H);
		ew_decl(w, "j1_", "const int64_t j1_ = cols_ ? %s * (tid_ + 1) / tn_ : %s;", H, H);
	} else {
		ew_line(w, "const int64_t b0_ = B * tid_ / tn_;");
		ew_decl(w, "nb_", "const int64_t nb_ = B * (tid_ + 1) / tn_ - b0_;");
	}
	ew_line(w, "rt_par_thread(tn_ > 1);");
	for (int k = 0; k < R->nstate; k++) {
		const char *H = times(R, "b0_", dim(R, ir_cols_of(b->inputs[R->nseq + k])));
		ew_line(w, "float *s%d = %s + %s, *s%dn = %s + %s; /* state %d: %s */",
			k, R->scur[k], H, k, R->snext[k], H, k, cm(R, b->inputs[R->nseq + k]->name));
	}
	for (int k = 0; k < R->nseq; k++)
		if (!R->inl[k])
			ew_decl(w, R->q[k], "const float *%s = %s + %s; /* this thread's rows of %s */", R->q[k],
				R->qall[k], times(R, "b0_", R->qb[k]), cm(R, R->n->in[k]->name));
	for (int k = 0; k < R->nout; k++)
		if (R->n->out[R->nstate + k])
			ew_decl(w, R->o[k], "float *%s = %s + %s; /* this thread's rows of %s */", R->o[k], R->oall[k],
				times(R, "b0_", R->ob[k]), cm(R, R->n->out[R->nstate + k]->name));
	if (R->has_lens)
		ew_line(w, "const int32_t *len = len_all + b0_;");
	/* the thread's rows of the step's buffers, several a line (each is read) */
	char *line = "";
	for (int i = 0; i < R->nalias; i++) {
		const char *d = fmt(R, "*%s = %s + %s", R->alias[i], R->alias_of[i], times(R, "b0_", R->alias_ld[i]));
		if (*line && strlen(line) + strlen(d) > 84) {
			ew_line(w, "float %s; /* this thread's rows */", line);
			line = "";
		}
		line = (char *)fmt(R, "%s%s%s", line, *line ? ", " : "", d);
	}
	if (*line)
		ew_line(w, "float %s; /* this thread's rows */", line);
	for (int i = 0; i < b->nvalues; i++) {
		const ir_value *v = b->values[i];
		if (v->shape.rank == 0 && v->kind == VAL_TEMP && v->producer && body_index(R, v) >= 0 &&
		    ir_storage(v) == v)
			ew_decl(w, fmt(R, "tl%d", body_index(R, v)), "%s tl%d[1]; /* %s, this thread's */",
				ir_dtype_ctype(v->dtype), body_index(R, v), cm(R, v->name));
	}
}

static void emit_par_close(rec *R)
{
	ew *w = R->w;
	ew_line(w, "rt_par_thread(0);");
	ew_close(w, "");
	/* every thread swapped its state pointers T times */
	for (int k = 0; k < R->nstate; k++)
		ew_line(w, "float *s%d = T %% 2 ? %s : %s;", k, R->snext[k], R->scur[k]);
}

/* Per-step input or stacked output V (time axis ax, cols columns a step)
 * as the steps read it: its storage *all, *base the pointer the steps
 * index (par: the thread's rows, p<k>, declared in the parallel block),
 * the time and batch strides *ts, *bs as expressions. */
static void stacked(rec *R, const ir_value *V, int ax, ir_dim cols, const char *p, int k, const char **all,
		    const char **base, const char **ts, const char **bs)
{
	const char *F = dim(R, cols);
	*all = emit_ref(R->E, V);
	*base = R->par ? fmt(R, "%s%d", p, k) : *all;
	*ts = ax ? F : times(R, "B", F);
	*bs = ax ? times(R, "T", F) : F;
}

/* What the variant of the recurrence decides before any text: threads,
 * the column split, the per-node and per-value tables, which input
 * projections the fused loops compute themselves. */
static void rec_setup(rec *R)
{
	arena *A = R->E->A;
	ir_graph *b = R->b;
	const char *threads = ir_attr_string(R->n, "threads", "serial");
	R->par = strcmp(threads, "serial") != 0;
	R->colpar_ok = !strcmp(threads, "rows_cols") && ir_fused_cols(b, &R->hc);
	R->wstep = arena_alloc(A, (size_t)b->nvalues + 1);
	R->pk = arena_alloc(A, (size_t)b->nnodes + 1);
	R->pp = arena_alloc(A, (size_t)b->nnodes + 1);
	R->reg = arena_array(A, (size_t)b->nvalues + 1, sizeof *R->reg);
	R->inl = arena_array(A, (size_t)R->nseq + 1, sizeof *R->inl);
	for (int k = 0; k < R->nseq; k++) {
		int inl;
		const ir_node *gm = rec_step_projection(R->n, k, &inl);
		R->inl[k] = inl ? gm : NULL;
	}
	/* per-step inputs (an input projection computed in the loops has no
	 * storage) and stacked outputs */
	R->qall = arena_array(A, (size_t)R->nseq + 1, sizeof *R->qall);
	R->q = arena_array(A, (size_t)R->nseq + 1, sizeof *R->q);
	R->qt = arena_array(A, (size_t)R->nseq + 1, sizeof *R->qt);
	R->qb = arena_array(A, (size_t)R->nseq + 1, sizeof *R->qb);
	for (int k = 0; k < R->nseq; k++)
		if (!R->inl[k])
			stacked(R, R->n->in[k], (int)R->seq_axis[k], ir_cols_of(b->inputs[k]), "q", k, &R->qall[k],
				&R->q[k], &R->qt[k], &R->qb[k]);
	R->oall = arena_array(A, (size_t)R->nout + 1, sizeof *R->oall);
	R->o = arena_array(A, (size_t)R->nout + 1, sizeof *R->o);
	R->ot = arena_array(A, (size_t)R->nout + 1, sizeof *R->ot);
	R->ob = arena_array(A, (size_t)R->nout + 1, sizeof *R->ob);
	for (int k = 0; k < R->nout; k++)
		if (R->n->out[R->nstate + k])
			stacked(R, R->n->out[R->nstate + k], (int)R->out_axis[k], ir_cols_of(b->outputs[R->nstate + k]),
				"o", k, &R->oall[k], &R->o[k], &R->ot[k], &R->ob[k]);
}

/* sequence_lens: each row's length, checked to be in [0, T]. */
static void check_lens(rec *R)
{
	ew *w = R->w;
	const char *all = R->par ? "_all" : "";
	ew_line(w, "const int32_t *len%s = %s;", all, emit_ref(R->E, R->n->in[R->n->nin - 1]));
	ew_line(w, "for (int64_t b = 0; b < B; b++)");
	ew_line(w, "\tif (len%s[b] < 0 || len%s[b] > T)", all, all);
	ew_line(w, "\t\treturn RT_ERR_SHAPE; /* sequence_lens outside [0, T] */");
}

/* The states: a table, and one call that allocates and initialises them;
 * R->scur / R->snext their two buffers.  1 after an error. */
static int emit_states(rec *R)
{
	emit_ctx *E = R->E;
	ew *w = R->w;
	ir_node *n = R->n;
	ir_graph *b = R->b;
	R->scur = arena_array(E->A, (size_t)R->nstate, sizeof *R->scur);
	R->snext = arena_array(E->A, (size_t)R->nstate, sizeof *R->snext);
	ew_line(w, "/* the states, kept in the instance: made for this batch, initial unless a stream goes on */");
	ew_line(w, "const rt_state states[%d] = {", R->nstate);
	for (int k = 0; k < R->nstate; k++) {
		ir_value *s = b->inputs[R->nseq + k];
		ir_value *init = n->in[R->nseq + k];
		const char *st = emit_state_member(E, R->n, k);
		ew_line(w, "\t{&m->%s, &m->%s_n, %s, %s}, /* %d: %s %s, starts at %s */", st, st,
			emit_unparen(E->A, emit_numel(E, &s->shape)), init ? emit_ref(E, init) : "NULL", k,
			cm(R, s->name), shape_str(R, &s->shape), init ? cm(R, init->name) : "zero");
		ir_value *nxt = b->outputs[k];
		home hn = rec_home(R, nxt);
		if (hn.kind != HOME_MEM || strcmp(hn.base, fmt(R, "s%dn", k)) != 0) {
			diag_node(E->D, n, "recurrence body state %d must be computed by element-wise operators", k);
			return 1;
		}
		R->scur[k] = fmt(R, "m->%s", st);
		E->body_ref = NULL;     /* the slot itself, not "s<k>n" */
		R->snext[k] = emit_ref(E, nxt);
		E->body_ref = rec_body_ref;
	}
	ew_line(w, "};");
	ew_line(w, "const int rs = rt_states_prepare(states, %d, m->started, %d%s);", R->nstate, E->o->no_malloc ? 1 : 0,
		E->o->no_malloc ? " /* in the arena */" : "");
	ew_line(w, "if (rs != RT_OK)");
	ew_line(w, "\treturn rs;");
	/* the steps swap each state between its storage and the buffer of its
	 * next value (par: per thread, in emit_par_open) */
	if (!R->par)
		for (int k = 0; k < R->nstate; k++)
			ew_line(w, "float *s%d = %s, *s%dn = %s; /* state %d: %s */", k, R->scur[k], k, R->snext[k], k,
				cm(R, b->inputs[R->nseq + k]->name));
	return 0;
}

/* A loop its condition ended after `ran` steps: the stacked outputs hold
 * `ran` rows (time axis 0, packed) and zeros past them, so that what
 * reads them whole reads defined values; the length for NAME_output_dims. */
static void cond_ran(rec *R)
{
	ew *w = R->w;
	for (int k = 0; k < R->nout; k++)
		if (R->n->out[R->nstate + k])
			ew_line(w, "memset(%s + ran * %s, 0, sizeof(float) * (size_t)((T - ran) * %s)); /* rows past the "
				"last step */", R->oall[k], R->ot[k], R->ot[k]);
	int slot = emit_dd_slot(R->E->g, R->n);
	if (slot >= 0)
		ew_line(w, "m->dd_len[%d] = ran;", slot);
	else if (!R->has_step)
		ew_line(w, "(void)ran; /* no stacked output is read */");
}

/* The steps: packed weights, the threads' block, the time loop. */
static void emit_time_loop(rec *R)
{
	ew *w = R->w;
	if (R->has_step) {
		ew_line(w, "if (!m->started)");
		ew_line(w, "\tm->rec%d_t = 0; /* steps run before this call (streams count on) */", R->id);
	}
	emit_pack(R);
	emit_panels(R);
	if (R->cond >= 0)   /* (a stream whose condition ended runs no more steps) */
		ew_line(w, "int64_t ran = s%d[0] == 0.0f ? 0 : T; /* steps run: the condition may end the loop sooner */",
			R->cond);
	if (R->par)
		emit_par_open(R);
	rec_steps(R);
	if (R->par)
		emit_par_close(R);
	if (R->has_step)
		ew_line(w, "m->rec%d_t += %s;", R->id, R->cond >= 0 ? "ran" : "T");
	if (R->cond >= 0)
		cond_ran(R);
}

/* The last step's states: to the outputs that read them, and into the
 * instance. */
static void final_states(rec *R)
{
	emit_ctx *E = R->E;
	ew *w = R->w;
	ir_node *n = R->n;
	ew_line(w, "/* the last step's states: to the outputs that read them, and into the instance */");
	for (int k = 0; k < R->nstate; k++) {
		const char *cnt = count(R, emit_numel(E, &R->b->inputs[R->nseq + k]->shape));
		if (n->out[k])
			ew_line(w, "memcpy(%s, s%d, sizeof(float) * %s); /* %s */", emit_ref(E, n->out[k]), k, cnt,
				cm(R, n->out[k]->name));
		ew_line(w, "if (s%d != %s)", k, R->scur[k]);
		ew_line(w, "\tmemcpy(%s, s%d, sizeof(float) * %s);", R->scur[k], k, cnt);
	}
}

/* The recurrence once the homes hook is set (emit_recurrence).  par: the
 * names the steps use (s<k>, q<k>, o<k>, len) are the thread's rows,
 * declared in the parallel block over the storage (len over len_all). */
static void emit_rec_body(rec *R)
{
	rec_setup(R);
	if (plan_homes(R))
		return;
	ew_decl(R->w, "T", "const int64_t T = %s;", R->T);
	ew_decl(R->w, "B", "const int64_t B = %s;", R->B);
	if (R->has_lens)
		check_lens(R);
	if (emit_states(R))
		return;
	emit_time_loop(R);
	final_states(R);
}
