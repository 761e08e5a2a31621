/* txt_lex.c: the lexer of the native text format (see txt.h).
 *
 * The whole file becomes one token array before parsing starts, so the parser
 * can look ahead freely and skip cell definitions to read them later.  Every
 * token knows its line and column (1-based, columns count bytes) and whether
 * it is the first of its line: statements end at line ends, and error
 * recovery skips to the next line.  `#` starts a comment to the end of the
 * line; the IR printer's comments after node lines are read again by the
 * graph parser from the source text (txt_graph.c), not here.
 *
 * Hostile input: a NUL byte, a control character or a byte that starts no
 * token is one error and is skipped; an unterminated string ends at the line
 * end; escapes are checked; numbers are only scanned here (the parser
 * converts them with range checks).
 */
#include "txt.h"
#include "util.h"

#include <string.h>

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
/* characters of a bare %name (ir_print.c: [A-Za-z0-9_./-], and '%' first) */
static int is_name(int c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '/' || c == '-'; }

typedef struct lexer {
	txt *X;
	size_t i;               /* current byte */
	int line, col;          /* of byte i */
	int nl;                 /* no token yet on this line */
	int cap;
} lexer;

static int at(const lexer *L, size_t k)
{
	return L->i + k < L->X->n ? (unsigned char)L->X->src[L->i + k] : -1;
}

static void adv(lexer *L)
{
	if (L->i >= L->X->n)
		return;
	if (L->X->src[L->i] == '\n') {
		L->line++;
		L->col = 1;
		L->nl = 1;
	} else {
		L->col++;
	}
	L->i++;
}

static txt_tok *push(lexer *L, txt_tokkind k, int line, int col, size_t off)
{
	txt *X = L->X;
	if (X->nt == L->cap) {
		int cap = L->cap ? 2 * L->cap : 256;
		X->t = arena_grow(X->A, X->t, (size_t)X->nt, (size_t)cap, sizeof *X->t);
		L->cap = cap;
	}
	txt_tok *t = &X->t[X->nt++];
	memset(t, 0, sizeof *t);
	t->kind = k;
	t->line = line;
	t->col = col;
	t->nl = L->nl;
	t->off = off;
	L->nl = 0;
	return t;
}

static void lex_error(lexer *L, int line, int col, const char *msg, int c)
{
	if (c >= 0x20 && c < 0x7f)
		diag_at(L->X->D, L->X->src, line, col, "%s '%c'", msg, c);
	else if (c >= 0)
		diag_at(L->X->D, L->X->src, line, col, "%s (byte 0x%02x)", msg, c);
	else
		diag_at(L->X->D, L->X->src, line, col, "%s", msg);
}

static int hexval(int c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A "..." string at L->i; the decoded text goes to the arena.  Returns NULL
 * (after an error) when it is unterminated or holds a bad escape. */
static const char *lex_string(lexer *L)
{
	int line = L->line, col = L->col;
	char *buf = arena_alloc(L->X->A, 16);
	size_t n = 0, cap = 16;
	int bad = 0;
	adv(L);                 /* the opening quote */
	for (;;) {
		int c = at(L, 0);
		if (c < 0 || c == '\n') {
			diag_at(L->X->D, L->X->src, line, col, "unterminated string");
			return NULL;
		}
		if (c == '"') {
			adv(L);
			break;
		}
		if (c == '\\') {
			int e = at(L, 1), ecol = L->col;
			adv(L);
			if (e == 'n' || e == 't' || e == '"' || e == '\\') {
				c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
				adv(L);
			} else if (e == 'x' && hexval(at(L, 1)) >= 0 && hexval(at(L, 2)) >= 0) {
				c = 16 * hexval(at(L, 1)) + hexval(at(L, 2));
				adv(L);
				adv(L);
				adv(L);
				if (c == 0) {
					diag_at(L->X->D, L->X->src, L->line, ecol, "\\x00 is not allowed in a string");
					bad = 1;
				}
			} else {
				diag_at(L->X->D, L->X->src, L->line, ecol,
					"unknown escape in string (use \\n \\t \\\" \\\\ or \\xHH)");
				bad = 1;
				if (e >= 0 && e != '\n')
					adv(L);
				continue;
			}
		} else {
			if (c == 0 || c == 0x7f || (c < 0x20 && c != '\t')) {
				lex_error(L, L->line, L->col, "control character in string", c);
				bad = 1;
			}
			adv(L);
		}
		if (n + 2 > cap) {
			buf = arena_grow(L->X->A, buf, n, cap * 2, 1);
			cap *= 2;
		}
		buf[n++] = (char)c;
	}
	buf[n] = 0;
	return bad ? NULL : buf;
}

static void lex_number(lexer *L)
{
	size_t off = L->i;
	int line = L->line, col = L->col, isf = 0;
	while (is_digit(at(L, 0)))
		adv(L);
	if (at(L, 0) == '.' && is_digit(at(L, 1))) {
		isf = 1;
		adv(L);
		while (is_digit(at(L, 0)))
			adv(L);
	}
	if ((at(L, 0) == 'e' || at(L, 0) == 'E') &&
	    (is_digit(at(L, 1)) || ((at(L, 1) == '+' || at(L, 1) == '-') && is_digit(at(L, 2))))) {
		isf = 1;
		adv(L);
		adv(L);
		while (is_digit(at(L, 0)))
			adv(L);
	}
	txt_tokkind k = isf ? TK_FLOAT : TK_INT;
	if (is_alpha(at(L, 0))) {
		/* "2d", a hash "0a1b...": a word that starts with a digit (names
		 * and hashes accept it; number contexts reject it) */
		while (is_alpha(at(L, 0)) || is_digit(at(L, 0)))
			adv(L);
		k = TK_IDENT;
	}
	txt_tok *t = push(L, k, line, col, off);
	t->str = arena_strndup(L->X->A, L->X->src + off, L->i - off);
	t->end = L->i;
}

void txt_lex(txt *X)
{
	lexer L = {X, 0, 1, 1, 1, 0};
	for (;;) {
		int c = at(&L, 0);
		if (c < 0)
			break;
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			adv(&L);
			continue;
		}
		if (c == '#') {
			while (at(&L, 0) >= 0 && at(&L, 0) != '\n')
				adv(&L);
			continue;
		}
		size_t off = L.i;
		int line = L.line, col = L.col;
		if (is_alpha(c)) {
			while (is_alpha(at(&L, 0)) || is_digit(at(&L, 0)))
				adv(&L);
			if (at(&L, 0) == '\'')
				adv(&L);
			txt_tok *t = push(&L, TK_IDENT, line, col, off);
			t->str = arena_strndup(X->A, X->src + off, L.i - off);
			t->end = L.i;
		} else if (is_digit(c)) {
			lex_number(&L);
		} else if (c == '"') {
			int nl = L.nl;
			const char *s = lex_string(&L);
			if (s) {
				txt_tok *t = push(&L, TK_STRING, line, col, off);
				t->str = s;
				t->end = L.i;
			}
			L.nl = nl && !s;
		} else if (c == '%') {
			adv(&L);
			const char *s = NULL;
			if (at(&L, 0) == '"') {
				s = lex_string(&L);
			} else if (at(&L, 0) == '%' || is_name(at(&L, 0))) {
				size_t b = L.i;
				adv(&L);
				while (is_name(at(&L, 0)))
					adv(&L);
				s = arena_strndup(X->A, X->src + b, L.i - b);
			} else {
				lex_error(&L, line, col, "a value name must follow '%'", -1);
			}
			if (s && !*s) {
				diag_at(X->D, X->src, line, col, "empty value name");
				s = NULL;
			}
			if (s) {
				txt_tok *t = push(&L, TK_VALNAME, line, col, off);
				t->str = s;
				t->end = L.i;
			}
		} else if (strchr("(){}[],:;=+-*/@?<>", c) && c != 0) {
			adv(&L);
			txt_tok *t = push(&L, TK_PUNCT, line, col, off);
			t->p = (char)c;
			t->str = arena_strndup(X->A, X->src + off, 1);
			t->end = L.i;
		} else {
			lex_error(&L, line, col, "unexpected character", c);
			adv(&L);
			/* skip the rest of a multi-byte UTF-8 sequence as one error */
			while (at(&L, 0) >= 0x80 && at(&L, 0) < 0xc0)
				adv(&L);
		}
	}
	txt_tok *t = push(&L, TK_EOF, L.line, L.col, L.i);
	t->nl = 1;
	t->str = "";
	t->end = L.i;
}
