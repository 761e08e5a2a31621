/* diag.h: located diagnostics for user errors.
 *
 * A user error (malformed model, unsupported operator, bad option) is recorded
 * with where it happened -- file plus line:column for native text, file plus
 * node name, op type and opset for ONNX -- and compilation goes on as far as it
 * sensibly can so that several errors are reported together.  The command line
 * prints them all (the first max_errors, then a count by operator of the
 * rest: diag_finish) and exits with the status the contract gives (2 for a model
 * that cannot be compiled).  Our own bugs use ASSERT (util.h) instead.
 */
#ifndef CELLC_DIAG_H
#define CELLC_DIAG_H

#include <stdarg.h>
#include <stddef.h>

struct ir_node;

/* Errors counted by the operator they concern: what the error list says of
 * the errors past max_errors, and what `cellc info --unsupported` lists. */
enum { DIAG_KINDS = 32 };
typedef struct diag_kind {
	char op[64];            /* "Foo" or "domain.Foo"; "" for errors without a node */
	int n;                  /* errors of this kind */
	int hidden;             /* of which not printed (past max_errors, or collecting) */
	char first[240];        /* the first one's message */
} diag_kind;

typedef struct diag {
	const char *file;       /* the model file being compiled */
	int nerrors;            /* errors reported so far */
	int nwarnings;          /* warnings (printed, do not fail) */
	int max_errors;         /* stop printing after this many (0: 20) */
	int quiet;              /* tests: count but do not print */
	int collect;            /* node errors are counted in kinds[], not printed */
	char last[1280];        /* text of the last error, for unit tests */
	int nshown;             /* errors counted against max_errors (all but collected ones) */
	int nkinds, lost;       /* kinds[] used; errors of kinds beyond DIAG_KINDS */
	diag_kind kinds[DIAG_KINDS];
	/* A compilation that may be tried again (compile_run: an If decided by
	 * a size, with another branch to try) holds what it would print from
	 * the If on: diag_flush prints it, diag_drop forgets it.  The retry
	 * skips the messages the first try printed before it held them. */
	int hold;               /* messages go to held[], not stderr */
	char *held;             /* malloc'd, held_len bytes of lines */
	size_t held_len;
	int nprinted;           /* messages printed (or held) so far */
	int hold_from;          /* nprinted when holding began */
	int skip;               /* the next `skip` messages are not printed */
} diag;

/* Holds the messages from now on (hold_from: the number printed before). */
void diag_hold(diag *D);
/* "FILE: note: msg": more about the error before it. */
void diag_note(diag *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the held messages and stops holding. */
void diag_flush(diag *D);
/* Forgets the held messages and stops holding. */
void diag_drop(diag *D);

void diag_init(diag *D, const char *file);
/* An error about the whole file (truncated, not ONNX, ...). */
void diag_error(diag *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error about one node: prints "FILE: node 'NAME' (OP, opset N): message". */
void diag_node(diag *D, const struct ir_node *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The same with the arguments as a va_list: what a pass's own error helper
 * (fail(ctx, fmt, ...)) passes on. */
void diag_nodev(diag *D, const struct ir_node *n, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* An error at a position of a text file, with the source line and a caret. */
void diag_at(diag *D, const char *src, int line, int col, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void diag_warn(diag *D, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diag_vemit(diag *D, const char *kind, const char *where, const char *fmt, va_list ap);
/* After the last error: when some were not printed (past max_errors), prints
 * "FILE: ... and N more errors (M distinct: Op1 ×k, Op2 ×l)" on stderr
 * (errors without a node count as "other"). */
void diag_finish(diag *D);

#endif
