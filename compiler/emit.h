/* emit.h: writing the generated C (NAME.h, NAME.c, NAME.weights, Makefile).
 *
 * The emitter only prints: every decision (shapes, layouts, loop bounds,
 * fusion groups, workspace slots, kernel variant) is already in the IR.
 * Emitted text goes through one writer with indentation (ew_line).  The fixed
 * parts of the files come from templates/ with named markers.
 *
 * Emitted code conventions (shared by emit.c, emit_ops.c, emit_rec.c):
 *   - dims: `const int64_t d_<sym>` locals for every dimension symbol, set
 *     from the NAME_dims argument; emit_dim() prints a dim as a C expression
 *   - data: emit_ref() prints a C pointer expression for a value, typed by its
 *     dtype: inputs `in_<k>`, outputs `out_<k>`, weights `m->w_<k>`, constants
 *     `c_<k>` (static const arrays in NAME.c), temporaries `ws_<slot>`
 *     (workspace slots computed at run time from the dims)
 *     (workspace slots computed at run time from the dims); a view resolves
 *     to its storage (plan_storage), a root graph output to the caller's
 *     buffer `out_<k>`
 *   - the forward function is printed into memory first: emit_dim/emit_ref
 *     mark the symbols, inputs, constants and slots used, and only those get
 *     declarations (unused locals are errors under -Wall -Wextra -Werror)
 *   - the model struct `m` has `int started` (0 after NAME_reset; forward
 *     sets it to 1 when it returns RT_OK): recurrences start from their
 *     initial states when it is 0 and continue the kept state otherwise
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

typedef struct emit_opts {
	const char *name;       /* --name: prefix of the emitted API (C identifier) */
	const char *outdir;     /* -o DIR */
	const char *cmdline;    /* for the provenance header */
	const char *rtdir;      /* where libcellrt's headers and library are (Makefile) */
} emit_opts;

typedef struct emit_ctx {
	ir_graph *g;            /* root graph */
	ew *w;
	arena *A;
	diag *D;
	const emit_opts *o;
	struct emit_tabs *tabs; /* emit.c's private tables: value numbering, use marks */
} emit_ctx;

/* C expression for a dimension / the element count of a shape. */
const char *emit_dim(emit_ctx *E, ir_dim d);
const char *emit_numel(emit_ctx *E, const ir_shape *s);
/* C expression (pointer, typed) for a value's data. */
const char *emit_ref(emit_ctx *E, const ir_value *v);

/* C literals: element i of a constant, and a floating value, of dtype dt. */
const char *emit_scalar(emit_ctx *E, const ir_value *c, int64_t i);
const char *emit_float(emit_ctx *E, double x, ir_dtype dt);

/* One node of the root graph (not a recurrence). */
void emit_node(emit_ctx *E, ir_node *n);
/* A run of consecutive element-wise nodes of one fusion group (emit_ops.c):
 * one loop when their outputs have one shape, else one loop per node. */
void emit_group(emit_ctx *E, ir_node **nodes, int count);
/* One recurrence node (emit_rec.c).  Printed inside the forward function,
 * where `m` is the instance, `m->started` is 0 after reset (recurrences then
 * start from their initial states; emit.c sets it to 1 when the forward
 * function completes), and the d_<sym> locals exist.  The code may
 * `return RT_ERR_SHAPE;` (sequence_lens outside [0, T], or a stream whose
 * batch size changed) or `return RT_ERR_NOMEM;`: the forward function owns
 * nothing that would need cleaning up at such a return. */
void emit_recurrence(emit_ctx *E, ir_node *n);
/* Model-struct fields of recurrence n: its persistent states (allocated at
 * run time for the current batch size by emit_recurrence), and the lines
 * freeing them in NAME_destroy.  emit.c calls both for every recurrence of
 * the root graph (fields are named after n->id, so ids must be those of the
 * final node list). */
void emit_rec_state_decls(emit_ctx *E, ir_node *n);
void emit_rec_state_free(emit_ctx *E, ir_node *n);
/* Lines for NAME_reset (after m->started = 0): nothing needs clearing, the
 * next forward re-initialises the states, so this prints only a comment. */
void emit_rec_state_reset(emit_ctx *E, ir_node *n);

/* The whole model: writes DIR/NAME.h, NAME.c, NAME.weights, Makefile.
 * Returns 0 or the number of errors reported. */
int emit_model(ir_graph *g, diag *D, const emit_opts *o);

/* The fixed parts of emitted files (templates/, embedded at build time by
 * templates/embed.sh): the text of templates/NAME, or NULL.  The emitted
 * Makefile also builds DIR/NAME_driver when DIR/NAME_driver.c exists. */
const char *emit_template(const char *name);

#endif
