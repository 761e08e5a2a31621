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
void ew_open(ew *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));  /* line ending in "{", indent+1 */
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
} emit_ctx;

/* C expression for a dimension / the element count of a shape. */
const char *emit_dim(emit_ctx *E, ir_dim d);
const char *emit_numel(emit_ctx *E, const ir_shape *s);
/* C expression (pointer, typed) for a value's data. */
const char *emit_ref(emit_ctx *E, const ir_value *v);

/* One node of the root graph (not a recurrence). */
void emit_node(emit_ctx *E, ir_node *n);
/* One recurrence node (emit_rec.c). */
void emit_recurrence(emit_ctx *E, ir_node *n);

/* The whole model: writes DIR/NAME.h, NAME.c, NAME.weights, Makefile.
 * Returns 0 or the number of errors reported. */
int emit_model(ir_graph *g, diag *D, const emit_opts *o);

#endif
