/* emit_tabs.h: the model writer's shared tables (struct emit_tabs) and the
 * functions its files call in one another.  The writer, in the order
 * emit_model runs it:
 *   emit.c           emit_model: the tables filled, the functions printed
 *                    into memory, then the files written from templates/,
 *                    whose @@BLOCK@@ markers the emit_blk_* printers fill;
 *   emit_names.c     the tables, the names of the emitted code, the C
 *                    expressions of dims, values and literals;
 *   emit_forward.c   forward, backward and the rec_<name>() functions;
 *   emit_api.c       the public API of NAME.h around forward;
 *   emit_instance.c  the instance: struct, create, weights, memory;
 *   emit_writer.c    the writer itself (emit.h's ew_*).
 * The operator and recurrence emitters (emit_ops*.c, emit_rec*.c, ...) see
 * only emit.h: they reach the tables through emit_ref and emit_dim.
 */
#ifndef CELLC_EMIT_TABS_H
#define CELLC_EMIT_TABS_H

#include "emit.h"

struct emit_tabs {
	const char *name;               /* model name (C identifier) */
	const char *sym[IR_MAX_SYMS];   /* C names of the dimension symbols */
	int nweights, capweights;
	const ir_value **weights;       /* weights in use, numbered k */
	const char **wname;             /* [nweights] their instance members: w_<tensor name> */
	int nconsts, capconsts;
	const ir_value **consts;        /* constants in use, numbered c_k */
	int nslots;                     /* workspace slots (1 + largest value->slot) */
	int scope0, scope1;             /* the function being printed: root nodes [scope0, scope1) */
	const char **slot_name;         /* [nslots] their C names there (emit_slot_name), made on first use */
	const char **slot_note;         /* [nslots] what each holds there, for comments */
	const char **slot_member;       /* [nslots] their names as members of a callee's ws struct */
	int scope_ws;                   /* the function takes its parts as members of `ws` */
	/* marks: what the function being printed refers to */
	char used_sym[IR_MAX_SYMS];
	char *used_in, *used_out, *used_const, *used_slot;
	char sizes_sym[IR_MAX_SYMS];    /* the symbol is in some value's shape (emit_mark_sizes) */
	int time_sym;                   /* symbol of the recurrence time axis, -1: none */
	const char *forward;            /* the forward function, printed before the rest */
	const char *backward;           /* --train: the backward function forward calls, or NULL */
	const char *rec_fns;            /* the functions forward and backward call, one per recurrence */
	const char **in_name, **out_name; /* the inputs' and outputs' names in NAME.c: the header's
					     where that is safe there (name_io), else in_k / out_k */
	const char *fn_name;            /* the function being printed (rec_h1, backward): comments */
	int ws_used;                    /* forward uses workspace slots */
	int64_t ws_max;                 /* no_malloc: workspace bytes at the largest dims */
	int64_t wfile_bytes;            /* no_malloc with a weights file: the file's size */
	int ncarry;                     /* --carry pairs: input carry_in[k] <- output carry_out[k] */
	int *carry_in, *carry_out;
};

static inline const char *ctype(const ir_value *v) { return ir_dtype_ctype(v->dtype); }

/* ---- emit_writer.c ---- */

/* A function definition's head, the brace on a line of its own; indent+1. */
void ew_fn_open(ew *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The next identifier of line [*s, e) outside comments, strings and
 * character constants (*in_comment carries a comment across lines), its
 * length in *len; NULL at the line's end. */
const char *ew_next_ident(const char **s, const char *e, size_t *len, int *in_comment);

/* ---- emit_names.c ---- */

/* The tables emit_model fills first: the symbols' C names, the weights and
 * constants in use (root graph and bodies) and the workspace slots, which
 * symbols size something, the weights' instance members. */
void emit_name_syms(emit_ctx *E);
void emit_collect_values(emit_ctx *E, ir_graph *g);
void emit_mark_sizes(const ir_graph *g, char *s);
void emit_weight_members(emit_ctx *E);
/* Slot's name as a member of the struct of workspace parts that a callee
 * (rec_<name>, backward) takes: its name without "ws_" where that stays an
 * identifier of its own. */
const char *emit_slot_member(emit_ctx *E, int slot);
/* Clears the use marks, for the next function printed. */
void emit_clear_marks(emit_ctx *E);
/* The index of v in list[n], or -1. */
int emit_find_index(const ir_value *const *list, int n, const ir_value *v);
/* s as a C identifier (other characters '_'); a C or C++ keyword. */
char *emit_c_ident(arena *A, const char *s);
int emit_is_keyword(const char *s);
/* Text safe inside a C comment (long names shortened); a C string literal. */
const char *emit_cmt(arena *A, const char *s);
const char *emit_c_string(arena *A, const char *s);
/* The dims' checks at a function's top (every dim in [1, INT32_MAX]; with
 * arena_limits, within --max-dim) and the d_<sym> locals the text read. */
void emit_dims_check(emit_ctx *E, int arena_limits);
void emit_dims_locals(emit_ctx *E);

/* ---- emit.c ---- */

/* A value's shape for a comment (a data-dependent axis explained). */
const char *emit_shape_comment(emit_ctx *E, const ir_value *v);

/* ---- emit_forward.c ---- */

/* forward's text, with rec_fns and backward in the tables: printed first,
 * it decides what the rest of NAME.c declares. */
char *emit_prepare_forward(emit_ctx *E);

/* ---- emit_api.c ---- */

/* The number of random streams (random nodes of the root graph). */
int emit_rng_count(const ir_graph *g);
/* Input or output k's parameter name in NAME.h; the parameter list of
 * run, step and forward (header: names with shape comments). */
const char *emit_io_param_name(emit_ctx *E, int out, int k);
const char *emit_io_params(emit_ctx *E, int header, int shapes);
/* --carry's names resolved into the tables; 1 after errors. */
int emit_resolve_carry(emit_ctx *E);

/* ---- emit_instance.c ---- */

/* NAME.weights at path; 1 after a diagnostic. */
int emit_write_weights(emit_ctx *E, const char *path);
/* --no-malloc: the workspace bytes at the largest dims; the error count. */
int emit_compute_ws_max(emit_ctx *E);

/* ---- the printers of the templates' blocks (@@NAME@@) ---- */

void emit_blk_provenance(emit_ctx *E);  /* NAME.h: emit_api.c */
void emit_blk_dims(emit_ctx *E);
void emit_blk_run_decls(emit_ctx *E);
void emit_blk_api(emit_ctx *E);         /* NAME.c: emit_api.c */
void emit_blk_struct(emit_ctx *E);      /* NAME.c: emit_instance.c */
void emit_blk_consts(emit_ctx *E);
void emit_blk_load_weights(emit_ctx *E);
void emit_blk_create(emit_ctx *E);
void emit_blk_create_decls(emit_ctx *E);        /* NAME.h */
void emit_blk_reset(emit_ctx *E);
void emit_blk_ws_reserve(emit_ctx *E);
void emit_blk_forward(emit_ctx *E);     /* NAME.c: emit.c */
void emit_blk_js_model(emit_ctx *E);    /* NAME.mjs (--js): emit_api.c */

#endif
