/* emit_rec.h: what the parts of the recurrence emitter share: the
 * recurrence being printed (rec), where each body value lives while a step
 * runs (home), the expression helpers (static inline here, so that every
 * part builds pointers and indices alike: no "+ 0", "* 1" or needless
 * parentheses), and the functions one part calls in another, prefixed rec_:
 *   emit_rec.c        the frame of rec_<name>(): the states, the per-step
 *                     inputs and stacked outputs, packed weights, the
 *                     threads, the time loop, the final states; the homes;
 *   emit_rec_step.c   one step: products, copies, per-step projections;
 *   emit_rec_fused.c  a step's fused element-wise loops and step scalars.
 */
#ifndef CELLC_EMIT_REC_H
#define CELLC_EMIT_REC_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "util.h"

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
	int cond;               /* the state that is the Loop's condition (ir_rec_cond_state), or -1 */
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
	const char **qall, **q, **qt, **qb;     /* [nseq]: per-step input k's storage, the pointer the
						   steps index (par: the thread's rows), its time and
						   batch strides; NULL for one the loops compute */
	const char **oall, **o, **ot, **ob;     /* [nout]: stacked output k likewise */
	const char **reg;       /* [body nvalues]: the local that holds a value in a fused loop
				   or a step (reg_name), made on first use */
	const ir_node **inl;    /* [nseq]: the deferred product of sequence input k when the
				   fused loops compute it themselves (x_proj "inline"), else NULL */
} rec;

static inline const char *fmt(rec *R, const char *f, ...) __attribute__((format(printf, 2, 3)));
static inline const char *fmt(rec *R, const char *f, ...)
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
static inline const char *cm_(arena *A, const char *s)
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

static inline const char *cm(rec *R, const char *s) { return cm_(R->E->A, s); }

/* ---- expressions without arithmetic noise -------------------------------------
 * Pointer and index expressions are built here, so that the code reads as a
 * person writes it: no "+ 0", no "* 1", no parentheses around a single term. */

/* base + k; base when k is 0. */
static inline const char *at(rec *R, const char *base, int64_t k)
{
	return k ? fmt(R, "%s + %lld", base, (long long)k) : base;
}

/* a * b for a C expression a and a dimension b; a when b is "1". */
static inline const char *times(rec *R, const char *a, const char *b)
{
	return strcmp(b, "1") ? fmt(R, "%s * %s", a, b) : a;
}

/* The thread's first (j = "j0_") or end ("j1_") column of a block that
 * starts at column k: "k + j0_", or "j0_" when k is 0. */
static inline const char *colj(rec *R, int64_t k, const char *j)
{
	return k ? fmt(R, "%lld + %s", (long long)k, j) : j;
}

/* The offset of this step's first row (the thread's, when par) in a
 * [T * B, K] operand. */
static inline const char *step_rows(rec *R, const char *K)
{
	if (!strcmp(K, "1"))
		return R->par ? "t * B + b0_" : "t * B";
	return fmt(R, R->par ? "(t * B + b0_) * %s" : "t * B * %s", K);
}

/* The elements of a dimension as a size_t: "(size_t)N" (emit_dim prints a
 * literal, a name or a parenthesised product). */
static inline const char *count(rec *R, const char *d)
{
	return fmt(R, "(size_t)%s", d);
}

static inline int body_index(const rec *R, const ir_value *v)
{
	if (v && v->graph == R->b && v->id >= 0 && v->id < R->b->nvalues && R->b->values[v->id] == v)
		return v->id;
	return -1;
}

static inline const char *shape_str(rec *R, const ir_shape *s)
{
	return ir_shape_str(R->E->A, R->E->g, s);
}

static inline const char *dim(rec *R, ir_dim d) { return emit_dim(R->E, d); }

static inline int is_body_output(const rec *R, const ir_value *v, int *first)
{
	for (int k = 0; k < R->b->noutputs; k++)
		if (R->b->outputs[k] == v) {
			if (first)
				*first = k;
			return 1;
		}
	return 0;
}

static inline const char *flt(rec *R, double x) { return emit_float(R->E, x, DT_F32); }

static inline home *home_of(rec *R, const ir_value *v)
{
	int i = body_index(R, v);
	return i >= 0 ? &R->h[i] : NULL;
}

/* The node classes pass_schedule decides from (passes.h). */
#define is_step_scalar ir_is_step_scalar
#define is_generic ir_is_generic_step_node

/* ---- emit_rec.c: homes, packed weights ---- */

/* Rows of a batch-row loop or product: the thread's share when par. */
const char *rec_rows(rec *R, ir_dim rows);
/* Where body value v (or an outer value, a constant) lives in this step;
 * a product's operand, which is in memory also when a 1 x 1 weight. */
home rec_home(rec *R, const ir_value *v);
home rec_mem_home(rec *R, const ir_value *v);
/* emit_ctx.body_ref while a recurrence prints: the storage of body values
 * in the step's own buffers (x<k>, s<k>, s<k>n, tl<i>), else NULL. */
const char *rec_body_ref(emit_ctx *E, const ir_value *v);

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

const pack_format *rec_pack_fmt(const ir_node *gm);
/* The packed copy of gm's weights as [N, K]: N outputs, K inputs. */
void rec_pack_dims(const ir_node *gm, int64_t *N, int64_t *K);

/* ---- emit_rec_step.c ---- */

/* The root Gemm behind sequence input k of recurrence rn when
 * pass_schedule moved it into the steps, else NULL; *inl: computed inside
 * the fused loops that read it (x_proj "inline"). */
const ir_node *rec_step_projection(const ir_node *rn, int k, int *inl);
/* The loop over the steps (par: one thread's share of it). */
void rec_steps(rec *R);

/* ---- emit_rec_fused.c ---- */

/* A fused group of the step, nodes[0..count); a rank-0 node of the step. */
void rec_fused(rec *R, ir_node **nodes, int count);
void rec_step_scalar(rec *R, ir_node *n);

#endif
