/* emit.h: writing the generated C (NAME.h, NAME.c, NAME.weights, Makefile).
 *
 * The emitter only prints: every decision (shapes, layouts, loop bounds,
 * fusion groups, workspace slots, kernel variant) is already in the IR.
 * Emitted text goes through one writer with indentation (ew_line).  The fixed
 * parts of the files come from templates/ with named markers.
 *
 * Emitted code conventions (shared by the model writer emit*.c of
 * emit_tabs.h, the operator emitters of emit_ops.h, the recurrence emitter
 * of emit_rec.h, and emit_train_ops.c):
 *   - dims: `const int64_t d_<sym>` locals of forward for every dimension
 *     symbol, set from the NAME_dims argument (parameters of a recurrence's
 *     function rec_<name>()); emit_dim() prints a dim as a C expression
 *   - data: emit_ref() prints a C pointer expression for a value, typed by its
 *     dtype: inputs `in_<k>`, outputs `out_<k>`, weights `m->w_<name>` (the
 *     tensor's name as a C identifier: emit_names.c), constants `c_<k>` (static
 *     const arrays in NAME.c), temporaries `ws_<slot>` (workspace slots
 *     computed at run time from the dims; in the functions forward calls,
 *     members of their struct of parts, `ws->...`); a view resolves
 *     to its storage (ir_storage), a root graph output to the caller's
 *     buffer `out_<k>`
 *   - the forward function is printed into memory first: emit_dim/emit_ref
 *     mark the symbols, inputs, constants and slots used, and only those get
 *     declarations (unused locals are errors under -Wall -Wextra -Werror)
 *   - the model struct `m` has `int started` (0 after NAME_reset; forward
 *     sets it to 1 when it returns RT_OK): recurrences start from their
 *     initial states when it is 0 and continue the kept state otherwise
 *   - the model struct has `int64_t dd_len[]` when a node's output has a
 *     data-dependent length (emit_dd_slot): the node's kernel stores the
 *     actual length there, NAME_output_dims reports it
 *   - kernels are calls into libcellrt (runtime/cellrt.h) or fused loops
 *     printed in place, each preceded by a comment naming its source nodes.
 */
#ifndef CELLC_EMIT_H
#define CELLC_EMIT_H

#include <stdio.h>

#include "diag.h"
#include "ir.h"

typedef struct ew {
	FILE *f;
	int indent;             /* current depth, one tab each */
} ew;

void ew_line(ew *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ew_open(ew *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));  /* line ending in "{" (just "{" for ""), indent+1 */
void ew_close(ew *w, const char *tail);  /* indent-1, "}" + tail (e.g. ";" or "") */

/* Text printed into memory instead of w->f, from begin to end (which
 * returns it in the arena), at the indentation given. */
typedef struct ew_capture {
	FILE *prev;
	int prev_indent;
	char *buf;
	size_t len;
} ew_capture;
void ew_capture_begin(ew *w, ew_capture *c, int indent);
char *ew_capture_end(ew *w, ew_capture *c, arena *A);

/* A declaration of name that is kept only if later code reads it: printed
 * marked, inside a capture whose text then goes through ew_prune (which
 * drops the unread ones and the marks). */
void ew_decl(ew *w, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *ew_prune(arena *A, const char *text);
/* C text as tokens: the identifiers it reads outside comments, strings and
 * character constants, and its member accesses through a pointer
 * ("ws->h1_h_seq"), looked up by name. */
typedef struct ew_tokens ew_tokens;
ew_tokens *ew_tokens_of(arena *A, const char *text);
int ew_tokens_has(const ew_tokens *T, const char *name);
int ew_ident_char(char c);                              /* [A-Za-z0-9_] */
const char *ew_last_ident(arena *A, const char *expr);  /* its last identifier, or NULL */

typedef struct emit_opts {
	const char *name;       /* --name: prefix of the emitted API (C identifier) */
	const char *outdir;     /* -o DIR */
	const char *cmdline;    /* for the provenance header */
	const char *rtdir;      /* a cellc build tree whose libcellrt the Makefile uses, or ""
	                           (then pkg-config's cellrt.pc) */
	const char *pcdir;      /* directory searched first for cellrt.pc, or "" */
	/* deployment modes (docs/deploying.md) */
	int embed_weights;      /* weights as aligned static const arrays in NAME.c, no
	                           NAME.weights; NAME_create takes NULL for the path */
	int no_malloc;          /* every buffer in a caller-provided arena of
	                           NAME_ARENA_BYTES (NAME_create_in); no malloc/free */
	const int64_t *max_dims; /* no_malloc: [g->nsyms] largest value of each symbol
	                           (--max-dim), the arena is sized for them */
	int js;                 /* --js: also NAME.mjs, the JavaScript API of NAME.wasm */
	/* --carry IN=OUT: graph input carry_in[k] is fed, by NAME_stream, from
	 * graph output carry_out[k] of the previous call (zeros after reset) */
	int ncarry;
	const char *const *carry_in, *const *carry_out;
} emit_opts;

typedef struct emit_ctx {
	ir_graph *g;            /* root graph */
	ew *w;
	arena *A;
	diag *D;
	const emit_opts *o;
	struct emit_tabs *tabs; /* the model writer's tables (emit_tabs.h): value numbering, use marks */
	/* emit_rec*.c, while they print a recurrence: the pointer expression of
	 * a body value (its storage, after ir_storage) that lives in the
	 * step's own buffers (per-step inputs, states, step scalars), or NULL
	 * to fall back to emit_ref's rules; lets emit_node print body nodes */
	const char *(*body_ref)(struct emit_ctx *E, const ir_value *v);
	void *body_ctx;
} emit_ctx;

/* C expression for a dimension / the element count of a shape. */
const char *emit_dim(emit_ctx *E, ir_dim d);
const char *emit_numel(emit_ctx *E, const ir_shape *s);
/* C expression (pointer, typed) for a value's data. */
const char *emit_ref(emit_ctx *E, const ir_value *v);

/* C literals: element i of a constant, and a floating value, of dtype dt. */
const char *emit_scalar(emit_ctx *E, const ir_value *c, int64_t i);
/* The C expression of element-wise node n on operand expressions a[] (NULL
 * for omitted optional inputs); NULL after reporting when the op does not
 * exist for the dtype (emit_elem.c; emit_rec_fused.c uses it for the operators its
 * own fused forms do not cover). */
const char *emit_elem_expr(emit_ctx *E, const ir_node *n, const char *const *a);
const char *emit_float(emit_ctx *E, double x, ir_dtype dt);

/* The number k of random node n (infer_draws_random) among the root graph's:
 * its stream is m->rng[k] (emit_instance.c prints the field, emit_api.c NAME_seed). */
int emit_rng_index(emit_ctx *E, const ir_node *n);

/* One node of the root graph (not a recurrence). */
void emit_node(emit_ctx *E, ir_node *n);
/* A run of consecutive element-wise nodes of one fusion group (emit_elem.c):
 * one loop when their outputs have one shape, else one loop per node. */
void emit_group(emit_ctx *E, ir_node **nodes, int count);
/* One recurrence node (emit_rec.c).  Printed as the body of the
 * recurrence's function rec_<name>() (emit_forward.c), where `m` is the instance,
 * `m->started` is 0 after reset (recurrences then start from their initial
 * states; forward sets it to 1 when it completes), and the
 * d_<sym> dims it reads are parameters.  The code may `return RT_ERR_SHAPE;`
 * (sequence_lens outside [0, T], or a stream whose batch size changed) or
 * `return RT_ERR_NOMEM;`: forward returns that status at once, and neither
 * function owns anything that would need cleaning up at such a return. */
void emit_recurrence(emit_ctx *E, ir_node *n);
/* The lines of the comment above recurrence n's function after its first
 * (which the caller prints, open): T and B, every per-step input and
 * output with its shape; the last line closes the comment. */
void emit_rec_doc(emit_ctx *E, ir_node *n);
/* C of a training op (a loss, its gradient, ReduceSum, SliceScatter,
 * MatrixExp: emit_train_ops.c; their shape rules: train_ops_infer.c). */
void train_op_emit(emit_ctx *E, ir_node *n);
/* Whether reduction n reduces one contiguous, non-empty run of axes named by
 * its axes input, [*lo, *hi]: a ReduceSum that train_op_emit prints as one
 * three-way loop (emit_train_ops.c). */
int emit_reduce_run(const ir_node *n, int *lo, int *hi);
/* Model-struct fields of recurrence n: its persistent states (allocated at
 * run time for the current batch size by emit_recurrence), and the lines
 * freeing them in NAME_destroy.  emit_instance.c calls both for every recurrence of
 * the root graph (fields: emit_state_member; the packed weights are named
 * after n->id, so ids must be those of the final node list). */
void emit_rec_state_decls(emit_ctx *E, ir_node *n);
void emit_rec_state_free(emit_ctx *E, ir_node *n);
/* Lines for NAME_reset (after m->started = 0): nothing needs clearing, the
 * next forward re-initialises the states, so this prints only a comment. */
void emit_rec_state_reset(emit_ctx *E, ir_node *n);
/* The model-struct field holding state k of recurrence rec between runs:
 * st_ and the body's name for the state as a C identifier (st_h1_h), a
 * number appended where two would be the same; its element count is the
 * field of that name and _n. */
const char *emit_state_member(emit_ctx *E, const ir_node *rec, int k);
/* The C name of workspace slot `slot` (value->slot, pass_plan) in the
 * function being printed (emit_slot_scope): "ws_" and what it holds there
 * -- a recurrence's next state (ws_h1_v1_next), a value the model names
 * (ws_y), a recurrence's last state or stacked output (ws_h1_h_last,
 * ws_h1_h_seq), else the node that makes it (ws_Gemm17) -- a number
 * appended where two would be the same within the function.  No other name
 * of the emitted code starts with "ws_" but ws_need and ws_reserve, which
 * it avoids.  In a function that takes its parts as one struct (the
 * recurrence functions and a training build's backward: emit_slot_scope's
 * `members`) the part is that struct's member, ws->h1_h_seq.  The one
 * place slots are named: forward, the recurrence functions and backward
 * all print this. */
const char *emit_slot_name(emit_ctx *E, int slot);
/* What slot holds in that function, for a comment: the shape of the value
 * it is named after, and the other values it holds there. */
const char *emit_slot_note(emit_ctx *E, int slot);
/* The function being printed: root nodes [first, last) (forward: all of
 * them; a recurrence's function: its node, whose body counts too).  A
 * slot is named after a value it holds there, or, when the function only
 * passes it on, after the values of the whole model.  members: the
 * function takes its parts as the members of a struct `ws` (every
 * function but forward, which carves them out of the workspace). */
void emit_slot_scope(emit_ctx *E, int first, int last, int members);
/* e without the parentheses around all of it ("(128 * d_batch)" ->
 * "128 * d_batch"): for emit_dim's products where they stand alone (an
 * initialiser, an argument). */
const char *emit_unparen(arena *A, const char *e);

/* Data-dependent lengths (ir_value.data_dep): the index of node n's length
 * in the model struct's `int64_t dd_len[]` (the nodes of the root graph
 * whose outputs have one, in order), or -1 when n has none. */
/* Whether NAME_step runs every branch of a run-time If (pass_branch.c):
 * a recurrence in a branch must advance its state at every step, taken or
 * not, for the steps to compute what one run over the steps does (the
 * instance's `stepping`, set by NAME_step). */
int emit_step_runs_branches(const ir_graph *g);
int emit_dd_slot(const ir_graph *g, const ir_node *n);
int emit_dd_count(const ir_graph *g);

/* The symbol of the time axis of the first recurrence when that axis is one
 * plain symbol (NAME_step exists then), else -1. */
int emit_time_sym(const ir_graph *g);

/* The whole model: writes DIR/NAME.h, NAME.c, NAME.weights, Makefile.
 * Returns 0 or the number of errors reported. */
int emit_model(ir_graph *g, diag *D, const emit_opts *o);

/* The golden regression test program (emit_test.c): DIR/NAME_test.c, and
 * DIR/NAME_test.data when the golden data are too large to embed.  Each set
 * holds one constant (with data) per graph input and output of g, in order. */
typedef struct emit_tb_set {
	const char *label;      /* where the set came from, printed by the program */
	ir_value **in, **out;   /* [g->ninputs], [g->noutputs] */
} emit_tb_set;

typedef struct emit_tb {
	int nsets;
	const emit_tb_set *sets;
	double rtol, atol;      /* pass: |got - ref| <= atol + rtol |ref| */
	size_t embed_limit;     /* golden bytes up to which they are embedded in NAME_test.c */
} emit_tb;

int emit_testbench(ir_graph *g, diag *D, const emit_opts *o, const emit_tb *tb);

/* The training program of a --train build: DIR/NAME_train.c, the template
 * templates/train_main.c behind the model's header (`make NAME_train` in DIR
 * builds it).  0, or 1 after a diagnostic. */
int emit_train_program(arena *A, diag *D, const emit_opts *o);

/* The fixed parts of emitted files (templates/, embedded at build time by
 * templates/embed.sh): the text of templates/NAME, or NULL.  The emitted
 * Makefile also builds DIR/NAME_driver when DIR/NAME_driver.c exists. */
const char *emit_template(const char *name);

#endif
