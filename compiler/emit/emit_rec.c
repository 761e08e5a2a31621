/* emit_rec.c: C for one RECURRENCE node (see "Recurrence" in ir.h), as
 * pass_schedule decided it runs: its `threads` (one copy of the steps, with
 * the column split chosen at run time by cols_ when "rows_cols"), where each
 * input projection is computed (`x_proj`), which products read packed
 * weights (`pack`); where each body value lives is the planner's slot.
 *
 * The emitted code is the body of the recurrence's own function,
 * rec_<name>(), which forward (a backward recurrence: backward) calls once
 * and whose status it returns unless RT_OK (emit.c, print_rec_function: its
 * parameters are the instance `m` and what the body reads):
 *
 *   comment: source node, T, B, per-step inputs, outputs
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
 * (emit_slot_name: ws_h1_h_next, ws_Gemm17); pointer and index expressions
 * are built without "+ 0", "* 1" or needless parentheses (at, times, colj).
 *
 * Legend: T steps, B batch rows, H (or N) columns of a value of the body.
 */
#define _POSIX_C_SOURCE 200809L     /* open_memstream */
#include "cellrt.h"
#include "elem.h"
#include "emit.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Where a body value lives while a step runs. */
typedef enum {
	HOME_NONE,      /* not computed (yet) */
	HOME_MEM,       /* base[b * ld + off + j] */
	HOME_REG,       /* a local float in its group's loop: v<id> */
	HOME_SCALAR,    /* a literal */
} home_kind;

typedef struct home {
	home_kind kind;
	const char *base;       /* MEM: per-step pointer expression */
	const char *ld;         /* MEM: row stride (C expression) */
	int64_t off;            /* MEM: column offset */
	int seq;                /* MEM: >= 0 when a sequence input whose row time differs
	                           per row (reverse + sequence_lens): base is per row */
	const char *lit;        /* SCALAR */
} home;

typedef struct rec {
	emit_ctx *E;
	ew *w;
	ir_node *n;             /* the recurrence */
	ir_graph *b;            /* its body */
	int id;                 /* n->id: names the model-struct fields */
	int nseq, nstate, nout, reverse, has_lens;
	int per_row_time;       /* reverse with sequence_lens: each row has its own t */
	int has_step;           /* step scalars after the states: 0, 1 (t) or 2 (t, L) */
	const int64_t *seq_axis, *out_axis;
	const char *T, *B;      /* C expressions */
	home *h;                /* [b->nvalues] */
	int par;                /* the batch rows are split over threads (threads "rows...") */
	const char *alias[IR_MAX_ROW_BUFFERS];  /* par: per-thread row pointers of body buffers ("r<i>") */
	const char *alias_of[IR_MAX_ROW_BUFFERS], *alias_ld[IR_MAX_ROW_BUFFERS];
	int nalias;
	int colpar_ok;          /* at B == 1 the columns can be split (threads "rows_cols"):
				   the steps do what cols_ (set at run time) says */
	ir_dim hc;              /* colpar_ok: the columns of every fused loop */
	char *wstep;            /* colpar_ok: [body nvalues] stored earlier in this step by
				   the column split */
	char *pk;               /* [body nnodes]: the product reads pk<i> when set (emit_pack) */
	char *pp;               /* [body nnodes]: the product reads panels pp<i> (emit_panels) */
	const char **scur, **snext;     /* [nstate]: the storage of state k (m->st_...) and of its
					   next value (a workspace part) */
	const char **reg;       /* [body nvalues]: the local that holds a value in a fused loop
				   or a step (reg_name), made on first use */
	const ir_node **inl;    /* [nseq]: the deferred product of sequence input k when the
				   fused loops compute it themselves (x_proj "inline"), else NULL */
} rec;

static const char *fmt(rec *R, const char *f, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt(rec *R, const char *f, ...)
{
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(NULL, 0, f, ap);
	va_end(ap);
	ASSERT(n >= 0);
	char *s = arena_alloc(R->E->A, (size_t)n + 1);
	va_start(ap, f);
	vsnprintf(s, (size_t)n + 1, f, ap);
	va_end(ap);
	return s;
}

/* Text safe inside a C comment (names come from the model file). */
static const char *cm_(arena *A, const char *s)
{
	if (!s)
		return "";
	size_t n = strlen(s);
	char *r = arena_alloc(A, 2 * n + 1), *o = r;
	for (size_t i = 0; i < n; i++) {
		*o++ = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
		if ((s[i] == '*' && s[i + 1] == '/') || (s[i] == '/' && s[i + 1] == '*'))
			*o++ = ' ';
	}
	*o = 0;
	return r;
}

static const char *cm(rec *R, const char *s) { return cm_(R->E->A, s); }

/* ---- expressions without arithmetic noise -------------------------------------
 * Pointer and index expressions are built here, so that the code reads as a
 * person writes it: no "+ 0", no "* 1", no parentheses around a single term. */

/* base + k; base when k is 0. */
static const char *at(rec *R, const char *base, int64_t k)
{
	return k ? fmt(R, "%s + %lld", base, (long long)k) : base;
}

/* a * b for a C expression a and a dimension b; a when b is "1". */
static const char *times(rec *R, const char *a, const char *b)
{
	return strcmp(b, "1") ? fmt(R, "%s * %s", a, b) : a;
}

/* The thread's first (j = "j0_") or end ("j1_") column of a block that
 * starts at column k: "k + j0_", or "j0_" when k is 0. */
static const char *colj(rec *R, int64_t k, const char *j)
{
	return k ? fmt(R, "%lld + %s", (long long)k, j) : j;
}

/* The offset of this step's first row (the thread's, when par) in a
 * [T * B, K] operand. */
static const char *step_rows(rec *R, const char *K)
{
	if (!strcmp(K, "1"))
		return R->par ? "t * B + b0_" : "t * B";
	return fmt(R, R->par ? "(t * B + b0_) * %s" : "t * B * %s", K);
}

/* The elements of a dimension as a size_t: "(size_t)N" (emit_dim prints a
 * literal, a name or a parenthesised product). */
static const char *count(rec *R, const char *d)
{
	return fmt(R, "(size_t)%s", d);
}

static int body_index(const rec *R, const ir_value *v)
{
	if (v && v->graph == R->b && v->id >= 0 && v->id < R->b->nvalues && R->b->values[v->id] == v)
		return v->id;
	return -1;
}

static const char *shape_str(rec *R, const ir_shape *s)
{
	return ir_shape_str(R->E->A, R->E->g, s);
}

static const char *dim(rec *R, ir_dim d) { return emit_dim(R->E, d); }

static int is_body_output(const rec *R, const ir_value *v, int *first)
{
	for (int k = 0; k < R->b->noutputs; k++)
		if (R->b->outputs[k] == v) {
			if (first)
				*first = k;
			return 1;
		}
	return 0;
}

/* ---- element-wise expressions ------------------------------------------------ */

static const char *flt(rec *R, double x) { return emit_float(R->E, x, DT_F32); }

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

/* ---- homes of body values ------------------------------------------------------ */

static int64_t *column_offsets(rec *R, const ir_value *v, int *n);
static void colpar_wait_for(rec *R, const ir_value *a);

/* Rows of a batch-row loop or product: the thread's share when par. */
static const char *rows_expr(rec *R, ir_dim rows)
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

static home *home_of(rec *R, const ir_value *v)
{
	int i = body_index(R, v);
	return i >= 0 ? &R->h[i] : NULL;
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

static home get_home(rec *R, const ir_value *v)
{
	home *h = home_of(R, v);
	if (h && h->kind != HOME_NONE)
		return *h;
	return outer_home(R, v);
}

/* A product's operand: in memory, also a one-element constant (which the
 * element-wise code reads as a literal): a 1 x 1 weight. */
static home mem_home(rec *R, const ir_value *v)
{
	home h = get_home(R, v);
	if (h.kind == HOME_SCALAR && ir_value_is_const(v))
		h = (home){.kind = HOME_MEM, .base = emit_ref(R->E, v),
			   .ld = v->shape.rank >= 2 ? dim(R, ir_cols_of(v)) : "0", .seq = -1};
	return h;
}

/* The node classes pass_schedule decides from (passes.h). */
#define is_step_scalar ir_is_step_scalar
#define is_generic ir_is_generic_step_node

/* emit_ctx.body_ref: storage of body values in the step's own buffers. */
static const char *body_ref(emit_ctx *E, const ir_value *v)
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
	if (body_ref(R->E, ir_storage(v)))
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
		*h = (home){.kind = HOME_MEM, .base = fmt(R, "x%d", k), .ld = fmt(R, "sb%d", k),
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
							   .ld = fmt(R, "ob%d", k - R->nstate), .seq = -1};
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
			 * in the next-state buffer when one is a state (body_ref) */
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
			*h = (home){.kind = HOME_MEM, .base = body_buffer(R, v), .ld = dim(R, ir_cols_of(v)), .seq = -1};
		} else if (ir_is_column_view(n)) {
			*h = get_home(R, n->in[0]);
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

/* ---- products ------------------------------------------------------------------- */

static int nd_index(const rec *R, const ir_node *n)
{
	for (int i = 0; i < R->b->nnodes; i++)
		if (R->b->nodes[i] == n)
			return i;
	ASSERT(0);
	return -1;
}

/* The packed copy of gm's weights as [N, K]: N outputs, K inputs. */
static void pack_dims(const ir_node *gm, int64_t *N, int64_t *K)
{
	const ir_value *W = gm->in[1];
	int tb = (int)ir_attr_int(gm, "transB", 0);
	*N = W->shape.d[tb ? 0 : 1].k;
	*K = W->shape.d[tb ? 1 : 0].k;
}

/* How a product's packed copy is stored, by its weights mark
 * (pass_precision): element type, the suffix of libcellrt's rt_gemv_pack*
 * functions, words for the comment.  No mark: float32. */
typedef struct {
	const char *mark, *ctype, *fn, *words;
	const char *prep;       /* the activations prepared once for several calls
				   on them (a step's column blocks): the function,
				   NULL for none */
	int64_t prep_kmax;      /* its largest K (RT_I8_KMAX, RT_BF16_SPLIT_KMAX) */
} pack_format;

static const pack_format pack_formats[] = {
	{NULL, "float", "", "", NULL, 0},
	{"bf16", "uint16_t", "_bf16", " in bfloat16", "rt_gemv_split_bf16", RT_BF16_SPLIT_KMAX},
	{"int8", "int8_t", "_i8", " in int8, its activations quantized per call", "rt_gemv_quant_i8", RT_I8_KMAX},
};

static const pack_format *pack_fmt(const ir_node *gm)
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
		pack_dims(gm, &N, &K);
		home hw = mem_home(R, gm->in[1]);
		const pack_format *f = pack_fmt(gm);
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
		pack_dims(gm, &N, &K);
		home hw = mem_home(R, gm->in[1]);
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

/* pk: "if (pk<i><cond>) <rows [r0, r1) of the product on the packed copy,
 * into y>; else" before the call that does it otherwise. */
static void emit_packed_call(rec *R, ir_node *n, const char *cond, const char *r0, const char *r1,
			     const char *K, home ha, const char *beta, const char *bias, const char *y)
{
	int i = nd_index(R, n);
	if (!R->pk[i])
		return;
	ew_line(R->w, "if (pk%d%s) rt_gemv_packed%s(%s, %s, %s, %s, %s, %s, pk%d, %s, %s, %s); else", i, cond,
		pack_fmt(n)->fn, r0, r1, dim(R, n->out[0]->shape.d[1]), K, flt(R, ir_attr_float(n, "alpha", 1.0f)),
		at(R, ha.base, ha.off), i, beta, bias, y);
}

/* colpar: this thread's columns j0_..j1_ of each hc-wide column block of
 * the product that the step reads (threads "rows_cols"). */
static void emit_gemm_columns(rec *R, ir_node *n, home ha, home hw, home hy)
{
	ir_value *A = n->in[0], *C = n->nin > 2 ? n->in[2] : NULL, *Y = n->out[0];
	int ta = (int)ir_attr_int(n, "transA", 0), tb = (int)ir_attr_int(n, "transB", 0);
	float alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	const char *M = rows_expr(R, Y->shape.d[0]);
	const char *K = dim(R, ta ? A->shape.d[0] : A->shape.d[1]);
	home hc = C ? get_home(R, C) : (home){.kind = HOME_NONE};
	ASSERT(!C || hc.kind == HOME_MEM);
	colpar_wait_for(R, A);
	int nv;
	int64_t *offs = column_offsets(R, Y, &nv);
	/* several column blocks on one quantized copy of the activations:
	 * quantized once, not once per block */
	int pi = nd_index(R, n);
	int64_t pN, pK;
	pack_dims(n, &pN, &pK);
	const pack_format *pf = pack_fmt(n);
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
		if (C)
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
	home ha = mem_home(R, A), hy = get_home(R, Y), hw = mem_home(R, W);
	const char *M = rows_expr(R, Y->shape.d[0]), *N = dim(R, Y->shape.d[1]);
	const char *K = dim(R, ta ? A->shape.d[0] : A->shape.d[1]);
	ASSERT(ha.kind == HOME_MEM && hy.kind == HOME_MEM && hw.kind == HOME_MEM);
	const char *A0 = at(R, ha.base, ha.off), *W0 = at(R, hw.base, hw.off), *Y0 = at(R, hy.base, hy.off);
	const char *betas = "0.0f";
	const char *bias = NULL;        /* C as a row vector: rt_sgemm_bias adds it */
	if (C) {
		home hc = get_home(R, C);
		int crow = C->shape.rank == 2 && !(ir_dim_is_const(C->shape.d[0]) && C->shape.d[0].k == 1);
		int ccol = C->shape.rank >= 1 && !(ir_dim_is_const(ir_cols_of(C)) && ir_cols_of(C).k == 1);
		if (!crow && ccol && hc.kind == HOME_MEM && hc.seq < 0 && ha.seq < 0)
			bias = at(R, hc.base, hc.off);
	}
	int pi = nd_index(R, n);
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
		home hc = get_home(R, C);
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
		ew_open(w, "for (int64_t b = 0; b < %s; b++)", M);
		ew_line(w, "rt_sgemm(0, %d, 1, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", tb, N, K, flt(R, alpha),
			at(R, fmt(R, "q%d + (len[b] - 1 - step) * st%d + b * sb%d", k, k, k), ha.off), ha.ld, W0, hw.ld,
			betas, at(R, fmt(R, "%s + b * %s", hy.base, hy.ld), hy.off), hy.ld);
		ew_close(w, "");
		return;
	}
	ASSERT(ha.seq < 0);
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
	emit_gemm_columns(R, n, mem_home(R, A), mem_home(R, W), get_home(R, Y));
	ew_close(w, "");
	ew_open(w, "else");
	emit_gemm_rows(R, n);
	ew_close(w, "");
}

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
 * step's rows of the product's A (xa<k>, emit_steps) and w the weights'
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
	E->body_ref = body_ref;
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
	home h = get_home(R, v);
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
	return row_ptr(G, fmt(G->R, "o%d", k), fmt(G->R, "ob%d", k), -2, 0);
}

static void emit_fused(rec *R, ir_node **nodes, int count)
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
	ew_open(w, "for (int64_t b = 0; b < %s; b++)", rows_expr(R, G.rows));
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
			ew_line(w, "const float *%s = q%d + %s * st%d + b * sb%d;", p->name, p->seq, tb,
				p->seq, p->seq);
		} else if (p->seq == -2) {
			/* o<k>, ob<k>: stacked output base and batch stride; ot<k> time stride */
			const char *k = p->base + 1;
			ew_line(w, "float *%s = o%s + %s * ot%s + b * ob%s;", p->name, k, tb, k, k);
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
static void emit_step_scalar(rec *R, ir_node *n)
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
	 * memory (fuse_needs_buffer; par: into the thread's local, body_ref) */
	if (n->out[0]->slot >= 0)
		ew_line(R->w, "%s[0] = %s;", emit_ref(R->E, n->out[0]), rn);
}

/* Copies body output k (not written by a fused group) to its place: a
 * memcpy per batch row from memory, a loop for a literal. */
static void emit_output_copy(rec *R, int k)
{
	ew *w = R->w;
	ir_value *v = R->b->outputs[k];
	home h = get_home(R, v);
	ir_dim cols = ir_cols_of(v);
	const char *src = NULL, *dst;
	const char *off = h.off ? fmt(R, " + %lld", (long long)h.off) : "";
	if (h.kind == HOME_SCALAR)
		src = h.lit;
	else if (h.seq >= 0)
		src = fmt(R, "q%d + (len[b] - 1 - step) * st%d + b * sb%d%s", h.seq, h.seq, h.seq, off);
	else
		src = fmt(R, "%s + %s%s", h.base, times(R, "b", h.ld), off);
	if (k < R->nstate)
		dst = fmt(R, "s%dn + %s", k, times(R, "b", dim(R, cols)));
	else
		dst = fmt(R, "o%d + %s * ot%d + b * ob%d", k - R->nstate,
			  R->per_row_time ? "(len[b] - 1 - step)" : "t", k - R->nstate, k - R->nstate);
	const char *rows = rows_expr(R, R->b->inputs[R->nseq]->shape.d[0]);
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
				pack_fmt(n->body->nodes[i])->ctype, n->id, i, cm_(E->A, n->body->nodes[i]->in[1]->name),
				pack_fmt(n->body->nodes[i])->words);
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

/* ---- input projections computed per step ---------------------------------------- */

/* The root Gemm behind sequence input k of recurrence rn (through views)
 * when pass_schedule moved it into the steps (x_proj "step" or "inline"),
 * else NULL; *inl: computed inside the fused loops that read it. */
static const ir_node *step_projection(const ir_node *rn, int k, int *inl)
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
	E->body_ref = body_ref;
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
			if (c && beta != 0.0f)
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
	if (c && beta != 0.0f)
		ew_line(R->w, "rt_sgemm_bias(0, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", tb,
			rows, N, K, flt(R, alpha), a0, K, w, tb ? K : N, flt(R, beta), c, y, N);
	else
		ew_line(R->w, "rt_sgemm(0, %d, %s, %s, %s, %s, %s, %s, %s, %s, 0.0f, %s, %s);", tb, rows,
			N, K, flt(R, alpha), a0, K, w, tb ? K : N, y, N);
	if (R->colpar_ok)
		ew_close(R->w, "");
	ew_decl(R->w, fmt(R, "x%d", k), "const float *x%d = %s;", k, y);
}

/* ---- batch rows over threads ------------------------------------------------------- */

/* A Concat of [B, N_k] body values along the columns that pass_schedule
 * marked by_rows: each thread copies its own rows. */
static void emit_row_concat(rec *R, ir_node *n)
{
	ew *w = R->w;
	home hy = get_home(R, n->out[0]);
	ASSERT(hy.kind == HOME_MEM && hy.seq < 0);
	ew_line(w, "/* %s (%s): Concat of %d inputs along the columns, this thread's rows */", cm(R, n->name),
		n->origin ? cm(R, n->origin) : "recurrence body", n->nin);
	ew_open(w, "for (int64_t b = 0; b < nb_; b++)");
	int64_t col = hy.off;   /* the column the next input starts at: col + sym */
	const char *sym = "";
	for (int k = 0; k < n->nin; k++) {
		home hx = get_home(R, n->in[k]);
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

/* ---- the recurrence ---------------------------------------------------------------- */

static void emit_rec_body(rec *R);
static void emit_par_open(rec *R);
static void emit_par_close(rec *R);
static void emit_steps(rec *R);

void emit_recurrence(emit_ctx *E, ir_node *n)
{
	rec R0 = {.E = E, .w = E->w, .n = n, .b = n->body, .id = n->id}, *R = &R0;
	ir_graph *b = n->body;
	R->nseq = (int)ir_attr_int(n, "n_seq", 0);
	R->nstate = (int)ir_attr_int(n, "n_state", 0);
	R->nout = (int)ir_attr_int(n, "n_out", 0);
	R->reverse = ir_attr_int(n, "reverse", 0) != 0;
	R->has_lens = ir_attr_int(n, "has_lens", 0) != 0;
	R->per_row_time = R->reverse && R->has_lens;
	R->has_step = (int)ir_attr_int(n, "has_step", 0);
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	/* no axis attributes: every axis 0 */
	const int64_t *zero_axes = arena_array(E->A, (size_t)(R->nseq > R->nout ? R->nseq : R->nout) + 1,
					       sizeof *zero_axes);
	R->seq_axis = sa && sa->n >= R->nseq ? sa->ints : zero_axes;
	R->out_axis = oa && oa->n >= R->nout ? oa->ints : zero_axes;
	if (R->nseq < 1 || R->nout < 0 || !b) {
		diag_node(E->D, n, "internal error: a recurrence without per-step inputs");
		return;
	}
	if (R->has_step < 0 || R->has_step > 2 || b->ninputs != R->nseq + R->nstate + R->has_step) {
		diag_node(E->D, n, "internal error: recurrence body inputs do not match its attributes");
		return;
	}
	for (int k = 0; k < b->ninputs; k++) {
		int want = k < R->nseq + R->nstate ? 2 : 0;
		if (b->inputs[k]->shape.rank != want || b->inputs[k]->dtype != DT_F32) {
			diag_node(E->D, n, "recurrence body input %s must be f32 %s, got %s",
				  b->inputs[k]->name, want ? "[B, N]" : "[] (a step scalar)",
				  shape_str(R, &b->inputs[k]->shape));
			return;
		}
	}
	if (R->nstate < 1) {
		diag_node(E->D, n, "internal error: a recurrence without state");
		return;
	}
	ir_value *X0 = n->in[0];
	int ax0 = (int)R->seq_axis[0];
	R->T = dim(R, X0->shape.d[ax0]);
	R->B = dim(R, X0->shape.d[1 - ax0]);
	R->h = arena_array(E->A, (size_t)b->nvalues + 1, sizeof *R->h);
	E->body_ref = body_ref;
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
 * without -fopenmp) the block runs once, as thread 0 of 1. */
static void emit_par_open(rec *R)
{
	ew *w = R->w;
	ir_graph *b = R->b;
	if (R->colpar_ok) {
		ew_line(w, "/* threads: each takes a share of the batch rows, which never meet here; at batch 1");
		ew_line(w, " * (cols_) they share the row's columns, meeting at each step, when worth it */");
		ew_line(w, "int cols_;");
		ew_line(w, "const int nt_ = rt_team(B, T, %s, &cols_);", step_weights(R));
		ew_decl(w, "bar_", "rt_barrier bar_ = {.count = 0}; /* their meeting (a spinning barrier, cheaper than OpenMP's) */");
	} else {
		ew_line(w, "/* threads: each takes a share of the batch rows, which never meet here */");
		ew_line(w, "const int nt_ = rt_team(B, T, 0, NULL);");
	}
	ew_line(w, "#ifdef _OPENMP");
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
			ew_decl(w, fmt(R, "q%d", k), "const float *q%d = q%d_all + b0_ * sb%d;", k, k, k);
	for (int k = 0; k < R->nout; k++)
		if (R->n->out[R->nstate + k])
			ew_decl(w, fmt(R, "o%d", k), "float *o%d = o%d_all + b0_ * ob%d;", k, k, k);
	if (R->has_lens)
		ew_line(w, "const int32_t *len = len_all + b0_;");
	for (int i = 0; i < R->nalias; i++)
		ew_line(w, "float *%s = %s + %s; /* this thread's rows */", R->alias[i], R->alias_of[i],
			times(R, "b0_", R->alias_ld[i]));
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

/* The loop over the steps (par: one thread's share of it). */
static void emit_steps(rec *R)
{
	emit_ctx *E = R->E;
	ew *w = R->w;
	ir_node *n = R->n;
	ir_graph *b = R->b;
	if (R->colpar_ok)
		memset(R->wstep, 0, (size_t)b->nvalues + 1);
	ew_open(w, "for (int64_t step = 0; step < T; step++)");
	ew_decl(w, "t", "const int64_t t = %s;", R->reverse ? "T - 1 - step" : "step");
	if (R->has_step >= 1)
		ew_decl(w, "tstep_", "const float tstep_ = (float)(m->rec%d_t + step + 1); /* 1-based */", R->id);
	if (R->has_step >= 2)
		ew_decl(w, "tlen_", "const float tlen_ = (float)T; /* steps of this run */");
	if (!R->per_row_time)
		for (int k = 0; k < R->nseq; k++) {
			int inl;
			const ir_node *gm = step_projection(n, k, &inl);
			if (R->inl[k]) {
				/* xa<k>: this step's rows of the product's A, computed on in the loops */
				const ir_value *A = gm->in[0];
				E->body_ref = NULL;
				const char *a = emit_ref(E, A);
				E->body_ref = body_ref;
				ew_line(w, "/* %s: input projection of this step's rows, computed in the loops that read it */",
					cm(R, gm->name));
				ew_decl(w, fmt(R, "xa%d", k), "const float *xa%d = %s + %s;", k, a,
					step_rows(R, dim(R, A->shape.d[1])));
			} else if (gm)
				emit_deferred_step(R, k, gm);
			else
				ew_decl(w, fmt(R, "x%d", k), "const float *x%d = q%d + t * st%d;", k, k, k);
		}
	int *written = arena_array(E->A, (size_t)b->noutputs + 1, sizeof *written);
	for (int k = R->nstate; k < b->noutputs; k++)
		if (ir_out_direct(b->outputs[k]) == k - R->nstate) {
			ew_decl(w, fmt(R, "y%d", k - R->nstate), "float *y%d = o%d + t * ot%d; /* output %d's rows "
				"of this step, written in place */", k - R->nstate, k - R->nstate, k - R->nstate,
				k - R->nstate);
			written[k] = 1;
		}
	for (int i = 0; i < b->nnodes;) {
		ir_node *nd = b->nodes[i];
		if (ir_attr_int(nd, "in_place", 0)) {
			ew_line(w, "/* %s (%s): Concat of %d inputs along the columns, written in place by them */",
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
			emit_step_scalar(R, nd);
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
		emit_fused(R, grp_nodes, cnt);
		i = j;
	}
	for (int k = 0; k < R->nstate; k++) {
		/* products and generic nodes write a state straight into s<k>n */
		home hs = get_home(R, b->outputs[k]);
		if (hs.kind == HOME_MEM && !strcmp(hs.base, fmt(R, "s%dn", k)))
			written[k] = 1;
	}
	for (int k = 0; k < b->noutputs; k++)
		if (!written[k] && (k < R->nstate || n->out[k]))
			emit_output_copy(R, k);
	if (R->has_lens) {
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
			if (n->out[R->nstate + k])
				ew_line(w, "memset(o%d + step * ot%d + b * ob%d, 0, sizeof(float) * %s);",
					k, k, k, count(R, dim(R, ir_cols_of(b->outputs[R->nstate + k]))));
		ew_close(w, "");
	}
	if (R->colpar_ok) {
		/* the next step's products read every column of the new states */
		ew_line(w, "if (cols_)");
		ew_line(w, "\trt_barrier_wait(&bar_, tid_, tn_);");
	}
	for (int k = 0; k < R->nstate; k++)
		ew_line(w, "{ float *tmp = s%d; s%d = s%dn; s%dn = tmp; }", k, k, k, k);
	ew_close(w, "");
}

/* A per-step input or stacked output k of the recurrence, V in the root
 * graph (time axis ax, cols columns a step): its base <p><k>[_all] and its
 * time and batch strides <ts><k>, <bs><k>, each kept only where read. */
static void decl_stacked(rec *R, const char *type, const char *p, const char *ts, const char *bs, int k,
			 ir_value *V, int ax, ir_dim cols)
{
	const char *all = R->par ? "_all" : "", *F = dim(R, cols);
	ew_decl(R->w, fmt(R, "%s%d%s", p, k, all), "%s *%s%d%s = %s; /* %s */", type, p, k, all,
		emit_ref(R->E, V), cm(R, V->name));
	ew_decl(R->w, fmt(R, "%s%d", ts, k), "const int64_t %s%d = %s; /* time stride */", ts, k,
		ax ? F : fmt(R, "B * %s", F));
	ew_decl(R->w, fmt(R, "%s%d", bs, k), "const int64_t %s%d = %s; /* batch stride */", bs, k,
		ax ? fmt(R, "T * %s", F) : F);
}

/* The recurrence once the homes hook is set (emit_recurrence). */
static void emit_rec_body(rec *R)
{
	emit_ctx *E = R->E;
	ew *w = R->w;
	ir_node *n = R->n;
	ir_graph *b = R->b;
	const char *threads = ir_attr_string(n, "threads", "serial");
	R->par = strcmp(threads, "serial") != 0;
	R->colpar_ok = !strcmp(threads, "rows_cols") && ir_fused_cols(b, &R->hc);
	R->wstep = arena_alloc(E->A, (size_t)b->nvalues + 1);
	R->pk = arena_alloc(E->A, (size_t)b->nnodes + 1);
	R->pp = arena_alloc(E->A, (size_t)b->nnodes + 1);
	R->reg = arena_array(E->A, (size_t)b->nvalues + 1, sizeof *R->reg);
	R->inl = arena_array(E->A, (size_t)R->nseq + 1, sizeof *R->inl);
	for (int k = 0; k < R->nseq; k++) {
		int inl;
		const ir_node *gm = step_projection(n, k, &inl);
		R->inl[k] = inl ? gm : NULL;
	}
	/* par: the names the steps use (s<k>, q<k>, o<k>, len) are the thread's
	 * rows, declared in the parallel block over the "_all" pointers */
	const char *all = R->par ? "_all" : "";
	if (plan_homes(R))
		return;

	/* ---- header comment ---- */
	/* the last line of the comment closes it */
	int last_out = -1;
	for (int k = 0; k < R->nout; k++)
		if (n->out[R->nstate + k])
			last_out = k;
	ew_line(w, "/* Recurrence '%s' from %s: T = %s steps of B = %s rows%s%s;", cm(R, n->name),
		n->origin ? cm(R, n->origin) : "the model", R->T, R->B, R->reverse ? ", reverse" : "",
		R->has_lens ? ", with sequence_lens" : "");
	for (int k = 0; k < R->nseq; k++)
		ew_line(w, " * per-step input %d: %s %s (time axis %d)%s", k, cm(R, n->in[k]->name),
			shape_str(R, &n->in[k]->shape), (int)R->seq_axis[k], k == R->nseq - 1 && last_out < 0 ? " */" : "");
	for (int k = 0; k < R->nout; k++)
		if (n->out[R->nstate + k])
			ew_line(w, " * output %d: %s %s (time axis %d)%s", k, cm(R, n->out[R->nstate + k]->name),
				shape_str(R, &n->out[R->nstate + k]->shape), (int)R->out_axis[k], k == last_out ? " */" : "");
	ew_decl(w, "T", "const int64_t T = %s;", R->T);
	ew_decl(w, "B", "const int64_t B = %s;", R->B);

	/* ---- sequence lengths ---- */
	if (R->has_lens) {
		ir_value *lens = n->in[n->nin - 1];
		ew_line(w, "const int32_t *len%s = %s;", all, emit_ref(E, lens));
		ew_line(w, "for (int64_t b = 0; b < B; b++)");
		ew_line(w, "\tif (len%s[b] < 0 || len%s[b] > T)", all, all);
		ew_line(w, "\t\treturn RT_ERR_SHAPE; /* sequence_lens outside [0, T] */");
	}

	/* ---- the states: a table, and one call that allocates and initialises them ---- */
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
		home hn = get_home(R, nxt);
		if (hn.kind != HOME_MEM || strcmp(hn.base, fmt(R, "s%dn", k)) != 0) {
			diag_node(E->D, n, "recurrence body state %d must be computed by element-wise operators", k);
			return;
		}
		R->scur[k] = fmt(R, "m->%s", st);
		E->body_ref = NULL;     /* the slot itself, not "s<k>n" */
		R->snext[k] = emit_ref(E, nxt);
		E->body_ref = body_ref;
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

	/* ---- per-step inputs and stacked outputs: base, time and batch strides
	 * (an input projection computed in the loops has no storage) ---- */
	for (int k = 0; k < R->nseq; k++)
		if (!R->inl[k])
			decl_stacked(R, "const float", "q", "st", "sb", k, n->in[k], (int)R->seq_axis[k],
				     ir_cols_of(b->inputs[k]));
	for (int k = 0; k < R->nout; k++)
		if (n->out[R->nstate + k])
			decl_stacked(R, "float", "o", "ot", "ob", k, n->out[R->nstate + k], (int)R->out_axis[k],
				     ir_cols_of(b->outputs[R->nstate + k]));

	/* ---- the steps ---- */
	if (R->has_step) {
		ew_line(w, "if (!m->started)");
		ew_line(w, "\tm->rec%d_t = 0; /* steps run before this call (streams count on) */", R->id);
	}
	emit_pack(R);
	emit_panels(R);
	if (R->par)
		emit_par_open(R);
	emit_steps(R);
	if (R->par)
		emit_par_close(R);
	if (R->has_step)
		ew_line(w, "m->rec%d_t += T;", R->id);

	/* ---- final states ---- */
	ew_line(w, "/* the last step's states: to the outputs that read them, and into the instance */");
	for (int k = 0; k < R->nstate; k++) {
		const char *cnt = count(R, emit_numel(E, &b->inputs[R->nseq + k]->shape));
		if (n->out[k])
			ew_line(w, "memcpy(%s, s%d, sizeof(float) * %s); /* %s */", emit_ref(E, n->out[k]), k, cnt,
				cm(R, n->out[k]->name));
		ew_line(w, "if (s%d != %s)", k, R->scur[k]);
		ew_line(w, "\tmemcpy(%s, s%d, sizeof(float) * %s);", R->scur[k], k, cnt);
	}
}
