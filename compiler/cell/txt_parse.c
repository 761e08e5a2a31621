/* txt_parse.c: reading a .cell file: the file level and the token helpers the
 * block parsers share (see txt.h; the grammar is schemas/cell.grammar).
 *
 * The file is lexed whole, then read in two sweeps: the first finds the
 * top-level blocks -- cell definitions are only recorded (a model may use a
 * cell defined further down), the model or graph block is remembered -- and
 * the second builds the IR from the one model or graph block.  Statements
 * end at line ends; after an error the parser skips to the next line (and
 * over any block that line opened), so one run reports every independent
 * mistake.
 */
#include "txt.h"
#include "cells.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- token helpers ---- */

const txt_tok *txt_peek(const txt *X) { return &X->t[X->pos]; }

const txt_tok *txt_peek_at(const txt *X, int ahead)
{
	int k = X->pos + ahead;
	return &X->t[k < X->nt ? k : X->nt - 1];
}

const txt_tok *txt_next(txt *X)
{
	const txt_tok *t = &X->t[X->pos];
	if (X->pos < X->nt - 1)
		X->pos++;
	return t;
}

int txt_is_punct(const txt_tok *t, char c) { return t->kind == TK_PUNCT && t->p == c; }
int txt_is_word(const txt_tok *t, const char *w) { return t->kind == TK_IDENT && strcmp(t->str, w) == 0; }

int txt_accept(txt *X, char c)
{
	if (!txt_is_punct(txt_peek(X), c))
		return 0;
	txt_next(X);
	return 1;
}

int txt_accept_word(txt *X, const char *w)
{
	if (!txt_is_word(txt_peek(X), w))
		return 0;
	txt_next(X);
	return 1;
}

const char *txt_tok_desc(txt *X, const txt_tok *t)
{
	switch (t->kind) {
	case TK_EOF: return "end of file";
	case TK_STRING: return "a string";
	case TK_VALNAME: return arena_printf(X->A, "'%%%.40s'", t->str);
	default: return arena_printf(X->A, "'%.40s'", t->str);
	}
}

void txt_error(txt *X, const txt_tok *at, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_at(X->D, X->src, at->line, at->col, "%s", msg);
}

int txt_budget_ok(txt *X, const txt_tok *at, int64_t count, size_t elsize, const char *what)
{
	if (count >= 0 && elsize && (uint64_t)count <= SIZE_MAX / elsize &&
	    arena_fits(X->A, (size_t)count * elsize + 16))
		return 1;
	txt_error(X, at, "'%s' needs %.0f bytes, more than the memory budget of %zu MiB leaves "
		  "(--max-memory raises it)", what, (double)count * (double)elsize, arena_budget >> 20);
	return 0;
}

int txt_expect(txt *X, char c, const char *what)
{
	if (txt_accept(X, c))
		return 1;
	txt_error(X, txt_peek(X), "expected '%c' %s, found %s", c, what, txt_tok_desc(X, txt_peek(X)));
	return 0;
}

const char *txt_expect_ident(txt *X, const char *what)
{
	const txt_tok *t = txt_peek(X);
	if (t->kind != TK_IDENT) {
		txt_error(X, t, "expected %s, found %s", what, txt_tok_desc(X, t));
		return NULL;
	}
	txt_next(X);
	return t->str;
}

void txt_skip_block(txt *X)
{
	int depth = 0;
	do {
		const txt_tok *t = txt_next(X);
		if (t->kind == TK_EOF)
			return;
		if (txt_is_punct(t, '{'))
			depth++;
		else if (txt_is_punct(t, '}'))
			depth--;
	} while (depth > 0);
}

void txt_skip_line(txt *X)
{
	/* Leaves a '}' that closes the enclosing block for the block's parser;
	 * a block opened on this line is skipped whole. */
	if (X->pos > X->stmt_start && txt_peek(X)->nl)
		return;         /* the statement's line is already behind us */
	for (;;) {
		const txt_tok *t = txt_peek(X);
		if (t->kind == TK_EOF || txt_is_punct(t, '}'))
			return;
		if (txt_is_punct(t, '{')) {
			txt_skip_block(X);
			continue;
		}
		txt_next(X);
		if (txt_peek(X)->nl)
			return;
	}
}

int txt_end_stmt(txt *X)
{
	const txt_tok *t = txt_peek(X);
	if (t->nl || t->kind == TK_EOF || txt_is_punct(t, '}'))
		return 1;
	txt_error(X, t, "expected the end of the line, found %s", txt_tok_desc(X, t));
	txt_skip_line(X);
	return 0;
}

int txt_parse_int(txt *X, int64_t *v, const char *what)
{
	const txt_tok *t = txt_peek(X);
	int neg = 0;
	if (txt_is_punct(t, '-') && txt_peek_at(X, 1)->kind == TK_INT) {
		neg = 1;
		txt_next(X);
		t = txt_peek(X);
	}
	if (t->kind != TK_INT) {
		txt_error(X, t, "expected %s (an integer), found %s", what, txt_tok_desc(X, t));
		return 0;
	}
	txt_next(X);
	errno = 0;
	unsigned long long u = strtoull(t->str, NULL, 10);
	if (errno || u > (unsigned long long)INT64_MAX + (unsigned long long)neg) {
		txt_error(X, t, "integer %s out of range", t->str);
		return 0;
	}
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	return 1;
}

int txt_parse_number(txt *X, double *v, int *is_float, const char *what)
{
	const txt_tok *t = txt_peek(X);
	int neg = 0;
	const txt_tok *n1 = txt_peek_at(X, 1);
	if (txt_is_punct(t, '-') && (n1->kind == TK_INT || n1->kind == TK_FLOAT ||
				     txt_is_word(n1, "inf"))) {
		neg = 1;
		txt_next(X);
		t = txt_peek(X);
	}
	if (txt_is_word(t, "nan") || txt_is_word(t, "inf")) {
		txt_next(X);
		*v = t->str[0] == 'n' ? NAN : neg ? -INFINITY : INFINITY;
		*is_float = 1;
		return 1;
	}
	if (t->kind != TK_INT && t->kind != TK_FLOAT) {
		txt_error(X, t, "expected %s (a number), found %s", what, txt_tok_desc(X, t));
		return 0;
	}
	txt_next(X);
	errno = 0;
	double d = strtod(t->str, NULL);
	if (errno == ERANGE && isinf(d)) {
		txt_error(X, t, "number %s out of range", t->str);
		return 0;
	}
	*v = neg ? -d : d;
	*is_float = t->kind == TK_FLOAT;
	return 1;
}

txt_celldef *txt_find_cell(txt *X, const char *name)
{
	for (int i = 0; i < X->ncells; i++)
		if (strcmp(X->cells[i].name, name) == 0)
			return &X->cells[i];
	return NULL;
}

/* ---- the file level ---- */

/* First sweep: records cell definitions, returns the token index of the one
 * model/graph block (-1 if none). */
static int find_blocks(txt *X)
{
	int block = -1;
	X->pos = 0;
	while (txt_peek(X)->kind != TK_EOF) {
		const txt_tok *t = txt_peek(X);
		int start = X->pos;
		X->stmt_start = start;
		if (txt_is_word(t, "cell")) {
			txt_next(X);
			const txt_tok *nm = txt_peek(X);
			const char *name = txt_expect_ident(X, "the cell's name");
			if (!name) {
				txt_skip_line(X);
				continue;
			}
			while (txt_peek(X)->kind != TK_EOF && !txt_is_punct(txt_peek(X), '{'))
				txt_next(X);
			if (txt_peek(X)->kind == TK_EOF) {
				txt_error(X, nm, "cell '%s' has no body ('{ ... }')", name);
				break;
			}
			txt_skip_block(X);
			if (txt_find_cell(X, name)) {
				txt_error(X, nm, "cell '%s' is defined twice", name);
				continue;
			}
			if (cell_find(name)) {
				txt_error(X, nm, "cell '%s' has the name of a built-in cell; choose another name",
					  name);
				continue;
			}
			X->cells = arena_grow(X->A, X->cells, (size_t)X->ncells, (size_t)X->ncells + 1,
					      sizeof *X->cells);
			X->cells[X->ncells++] = (txt_celldef){name, start, X->pos - 1, nm->line, nm->col};
		} else if (txt_is_word(t, "model") || txt_is_word(t, "graph")) {
			if (block >= 0) {
				txt_error(X, t, "a file holds one model or graph block; the first is at line %d",
					  X->t[block].line);
			} else {
				block = start;
			}
			while (txt_peek(X)->kind != TK_EOF && !txt_is_punct(txt_peek(X), '{'))
				txt_next(X);
			if (txt_peek(X)->kind == TK_EOF) {
				txt_error(X, t, "'%s' block without a body ('{ ... }')", t->str);
				break;
			}
			txt_skip_block(X);
		} else {
			txt_error(X, t, "expected 'model', 'graph' or 'cell' at the top level, found %s",
				  txt_tok_desc(X, t));
			txt_skip_line(X);
			if (txt_is_punct(txt_peek(X), '}'))
				txt_next(X);
		}
	}
	return block;
}

static uint64_t fnv1a(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

ir_graph *txt_load_mem(arena *A, diag *D, const char *path, const char *text, size_t n)
{
	txt X0 = {0}, *X = &X0;
	X->A = A;
	X->D = D;
	X->path = path;
	char *src = arena_alloc(A, n + 1);
	memcpy(src, text, n);
	src[n] = 0;
	X->src = src;
	X->n = n;
	X->errors_at_start = D->nerrors;
	txt_lex(X);
	int block = find_blocks(X);
	if (block < 0) {
		if (D->nerrors == X->errors_at_start)
			diag_error(D, "no 'model' or 'graph' block in the file");
		return NULL;
	}
	for (int i = 0; i < X->ncells; i++)
		txt_cell_check(X, &X->cells[i]);
	X->pos = block;
	ir_graph *g = txt_is_word(txt_peek(X), "model") ? txt_model_block(X) : txt_graph_block(X);
	if (!g || D->nerrors > X->errors_at_start)
		return NULL;
	g->source = arena_strdup(A, path);
	g->source_hash = fnv1a(text, n);
	return g;
}

ir_graph *txt_load(arena *A, diag *D, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		diag_error(D, "cannot open: %s", strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			arena_oom(NULL, cap, "reading a model");
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		if (cap >= ((size_t)1 << 30)) {
			fclose(f);
			free(buf);
			diag_error(D, "file larger than 1 GiB; not a .cell model");
			return NULL;
		}
		cap *= 2;
		buf = realloc(buf, cap);
	}
	int err = ferror(f);
	fclose(f);
	if (err) {
		free(buf);
		diag_error(D, "cannot read the file");
		return NULL;
	}
	ir_graph *g = txt_load_mem(A, D, path, buf, n);
	free(buf);
	return g;
}
