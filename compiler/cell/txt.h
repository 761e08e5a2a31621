/* txt.h: the native text format (`.cell` files), read into the IR.
 *
 * One file holds cell definitions written as equations (`cell NAME(...) {}`)
 * and exactly one of: a `model` block (what users write: inputs, layers of
 * named cells, heads, outputs) or a `graph` block (the IR itself, exactly as
 * ir_print writes it, so that any `cellc dump` output loads again).  The
 * grammar, with comments, is schemas/cell.grammar; docs/cell-format.md shows examples.
 *
 * Reading goes lexer (txt_lex.c) -> recursive-descent parser (txt_parse.c:
 * file level and shared helpers) -> IR builders: txt_graph.c (graph blocks),
 * txt_model.c (model blocks), txt_cell.c (cells as equations -> RECURRENCE
 * bodies).  Every user error is a located diagnostic (diag_at: file:line:col,
 * the source line and a caret); the parser recovers at the next line so that
 * several errors are reported in one run, and nothing a file contains can
 * make it crash or read out of bounds.
 */
#ifndef CELLC_TXT_H
#define CELLC_TXT_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* Reads the .cell file at path.  NULL after reporting errors on D. */
ir_graph *txt_load(arena *A, diag *D, const char *path);
/* The same on text in memory (n bytes, need not be NUL-terminated); path is
 * used for messages and to resolve relative `weights` paths. */
ir_graph *txt_load_mem(arena *A, diag *D, const char *path, const char *text, size_t n);

/* ---- internal to txt_*.c --------------------------------------------------- */

typedef enum {
	TK_EOF,
	TK_IDENT,       /* [A-Za-z_][A-Za-z0-9_]* with an optional trailing ' (new state) */
	TK_INT,         /* decimal digits */
	TK_FLOAT,       /* digits with '.' or an exponent */
	TK_STRING,      /* "..." with C escapes; str is the decoded text */
	TK_VALNAME,     /* %name or %"quoted": str is the name without the sigil */
	TK_PUNCT,       /* one character of ( ) { } [ ] , : ; = + - * / @ ? */
} txt_tokkind;

typedef struct txt_tok {
	txt_tokkind kind;
	const char *str;        /* NUL-terminated: identifier, decoded string/name, number text */
	char p;                 /* TK_PUNCT: the character */
	int line, col;          /* 1-based position of the first character */
	int nl;                 /* first token of its line */
	size_t off, end;        /* byte range in the source */
} txt_tok;

/* A user-defined cell: its definition kept as tokens, instantiated for each
 * layer that uses it (txt_cell.c). */
typedef struct txt_celldef {
	const char *name;
	int first, last;        /* token range of the whole definition [first, last] */
	int line, col;          /* where its name is */
} txt_celldef;

typedef struct txt {
	arena *A;
	diag *D;
	const char *path;       /* the file, for messages and relative paths */
	const char *src;        /* the text, NUL-terminated copy */
	size_t n;               /* bytes of text */
	txt_tok *t;             /* [nt] tokens, the last one TK_EOF */
	int nt, pos;            /* token count, current token */
	int stmt_start;         /* first token of the statement being read (recovery) */
	txt_celldef *cells;     /* [ncells] cells defined in the file */
	int ncells;
	int errors_at_start;    /* D->nerrors when reading began */
} txt;

/* txt_lex.c: splits src into tokens (reporting bad characters, unterminated
 * strings, out-of-range escapes); always ends with TK_EOF. */
void txt_lex(txt *X);

/* txt_parse.c: token helpers every builder uses. */
const txt_tok *txt_peek(const txt *X);
const txt_tok *txt_peek_at(const txt *X, int ahead);
const txt_tok *txt_next(txt *X);
int txt_is_punct(const txt_tok *t, char c);
int txt_is_word(const txt_tok *t, const char *w);    /* identifier w */
int txt_accept(txt *X, char c);                       /* consumes punct c if next */
int txt_accept_word(txt *X, const char *w);
int txt_expect(txt *X, char c, const char *what);     /* 0 and an error if missing */
const char *txt_expect_ident(txt *X, const char *what);
void txt_error(txt *X, const txt_tok *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Whether `count` elements of `elsize` bytes fit the compilation's memory
 * budget (arena.h); if not, an error at `at` naming `what`.  Asked before
 * allocating a model's tensor. */
int txt_budget_ok(txt *X, const txt_tok *at, int64_t count, size_t elsize, const char *what);
const char *txt_tok_desc(txt *X, const txt_tok *t);  /* "'foo'", "end of file", ... */
/* Skips to the first token of the next line (or a closing '}' of the current
 * block at depth 0): error recovery and the end of a one-line statement. */
void txt_skip_line(txt *X);
/* At the end of a statement: the next token must start a new line or be '}'. */
int txt_end_stmt(txt *X);
/* Skips a balanced {...} block starting at the current '{'. */
void txt_skip_block(txt *X);
/* Numbers with an optional leading '-' (and nan/inf/-inf for floats). */
int txt_parse_int(txt *X, int64_t *v, const char *what);
int txt_parse_number(txt *X, double *v, int *is_float, const char *what);
txt_celldef *txt_find_cell(txt *X, const char *name);

/* txt_graph.c: a `graph NAME { ... }` block (the IR level). */
ir_graph *txt_graph_block(txt *X);
/* A type "f32[seq, batch, 4]" (also "?" and "f32?"); symbols are looked up in
 * (or, when add_syms, added to) g's root.  0 on error. */
int txt_parse_type(txt *X, ir_graph *g, ir_dtype *dt, ir_shape *s, int add_syms);

/* txt_weights.c: the `weights "file"` directive. */
typedef struct txt_weights {
	void *tf;               /* rt_tensorfile *, NULL when no file was given */
	const char *path;       /* as resolved */
} txt_weights;
/* Opens the tensor file named by tok (relative to the .cell file). */
int txt_weights_open(txt *X, txt_weights *W, const txt_tok *tok);
void txt_weights_close(txt_weights *W);
/* Gives v (VAL_WEIGHT with dtype and constant shape) its data: from W when
 * the file has a tensor of that name (dtype and shape must agree: else an
 * error at `at`), else returns 0 so the caller can initialise it. */
int txt_weights_fill(txt *X, txt_weights *W, ir_value *v, const txt_tok *at, int required);

/* txt_model.c: a `model NAME { ... }` block. */
ir_graph *txt_model_block(txt *X);

/* txt_cell.c: a user-defined cell applied to the sequence x of layer `layer`
 * (options parsed at the layer: n pairs of names and values).  Builds the
 * RECURRENCE in g and returns its stacked per-step output, or NULL after
 * errors. */
typedef struct txt_opt {
	const char *name;
	const txt_tok *at;      /* the option's name token, for messages */
	int is_float, is_string;
	double num;             /* numeric value */
	const char *s;          /* identifier or string value */
	int used;               /* consumed by the cell (unused ones are errors) */
} txt_opt;

typedef struct txt_layer {
	const char *name;       /* the layer's value name; parameters are NAME.param */
	const txt_tok *at;      /* the cell name token */
	ir_value *x;            /* input sequence [T, B, I] or [B, T, I] */
	int seq_axis;           /* 0 or 1 */
	txt_opt *opts;
	int nopts;
	txt_weights *W;
	uint64_t seed;
	ir_value **finals;      /* out: final states (may be left NULL) */
} txt_layer;

/* A parameter "<layer>.<pname>" of a layer: from the weights file when the
 * model has one (it must be there), else U(-1/sqrt(fan), 1/sqrt(fan)) seeded
 * by cell_param_seed(seed, layer, pname).  NULL after an error at `at`. */
ir_value *txt_model_param(txt *X, ir_graph *g, txt_layer *L, const char *pname, int rank,
			  const int64_t *dims, const txt_tok *at, int64_t fan);
ir_value *txt_cell_apply(txt *X, ir_graph *g, const txt_celldef *c, txt_layer *L);
/* Checks a cell definition once, without a layer (names, syntax). */
void txt_cell_check(txt *X, const txt_celldef *c);

#endif
