/* emit_writer.c: the one writer that all emitted text goes through (emit.h's
 * ew_*): lines at an indentation, text captured into memory, and the
 * declarations kept only where later code reads them (ew_decl, ew_prune),
 * with the C-token scan they share with name_io's renaming (ew_next_ident).
 * It knows nothing of the IR.
 */
#define _POSIX_C_SOURCE 200809L     /* open_memstream */
#include "emit.h"
#include "emit_tabs.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- the writer ------------------------------------------------------------ */

/* An empty line gets no indentation (no trailing white space). */
static void ew_vline(ew *w, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int empty = vsnprintf(NULL, 0, fmt, aq) == 0;
	va_end(aq);
	if (!empty)
		for (int i = 0; i < w->indent; i++)
			fputc('\t', w->f);
	vfprintf(w->f, fmt, ap);
	fputc('\n', w->f);
}

void ew_line(ew *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ew_vline(w, fmt, ap);
	va_end(ap);
}

void ew_open(ew *w, const char *fmt, ...)
{
	va_list ap, aq;
	va_start(ap, fmt);
	va_copy(aq, ap);
	int empty = vsnprintf(NULL, 0, fmt, aq) == 0;
	va_end(aq);
	for (int i = 0; i < w->indent; i++)
		fputc('\t', w->f);
	vfprintf(w->f, fmt, ap);
	fputs(empty ? "{\n" : " {\n", w->f);   /* a bare block: just the brace */
	va_end(ap);
	w->indent++;
}

void ew_close(ew *w, const char *tail)
{
	ASSERT(w->indent > 0);
	w->indent--;
	ew_line(w, "}%s", tail ? tail : "");
}

/* A function definition's head: the brace on a line of its own. */
void ew_fn_open(ew *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ew_vline(w, fmt, ap);
	va_end(ap);
	ew_line(w, "{");
	w->indent++;
}

/* Text printed into memory (open_memstream) instead of w->f. */
void ew_capture_begin(ew *w, ew_capture *c, int indent)
{
	c->prev = w->f;
	c->prev_indent = w->indent;
	c->buf = NULL;
	c->len = 0;
	w->f = open_memstream(&c->buf, &c->len);
	if (!w->f)
		arena_oom(NULL, 0, "an output buffer");
	w->indent = indent;
}

/* Returns the captured text in the arena. */
char *ew_capture_end(ew *w, ew_capture *c, arena *A)
{
	fclose(w->f);
	w->f = c->prev;
	w->indent = c->prev_indent;
	char *s = arena_strndup(A, c->buf ? c->buf : "", c->len);
	free(c->buf);
	return s;
}

/* ---- declarations kept only when read ---------------------------------------
 *
 * ew_decl prints a declaration marked with the name it declares (DECL_MARK,
 * the name, DECL_END after the indentation); ew_prune, given the text of a
 * capture, drops every marked line whose name no later line reads and
 * removes the marks.  It repeats until nothing more drops, since a dropped
 * declaration may have been the only reader of an earlier one.  A read is the
 * name as a whole C token outside comments, strings and character constants.
 * So code whose parts are printed by different functions declares what it
 * reads, without casts to void for the names a variant of it leaves unread. */

#define DECL_MARK '\001'
#define DECL_END '\002'

void ew_decl(ew *w, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	ASSERT(n >= 0);
	char *s = malloc((size_t)n + 1);
	if (!s)
		arena_oom(NULL, (size_t)n + 1, "a declaration");
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ew_line(w, "%c%s%c%s", DECL_MARK, name, DECL_END, s);
	free(s);
}

int ew_ident_char(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The next identifier of C text in [*s, e) outside comments, strings and
 * character constants (*in_comment carries an open block comment from one
 * line to the next): its start, *len its length; NULL at the end (or at a
 * line comment, which ends the line). */
const char *ew_next_ident(const char **s, const char *e, size_t *len, int *in_comment)
{
	const char *p = *s;
	while (p < e) {
		if (*in_comment) {
			if (p + 1 < e && p[0] == '*' && p[1] == '/') {
				*in_comment = 0;
				p += 2;
			} else {
				p++;
			}
		} else if (p + 1 < e && p[0] == '/' && p[1] == '*') {
			*in_comment = 1;
			p += 2;
		} else if (p + 1 < e && p[0] == '/' && p[1] == '/') {
			break;
		} else if (*p == '"' || *p == '\'') {
			char q = *p++;
			while (p < e && *p != q)
				p += p[0] == '\\' && p + 1 < e ? 2 : 1;
			p++;
		} else if (*p >= '0' && *p <= '9') {
			while (p < e && (ew_ident_char(*p) || *p == '.'))     /* a number, suffix included */
				p++;
		} else if (ew_ident_char(*p)) {
			const char *t = p;
			while (t < e && ew_ident_char(*t))
				t++;
			*len = (size_t)(t - p);
			*s = t;
			return p;
		} else {
			p++;
		}
	}
	*s = e;
	return NULL;
}

/* Whether [s, e) reads name. */
static int line_reads(const char *s, const char *e, const char *name, size_t nlen, int *in_comment)
{
	size_t len;
	for (const char *id; (id = ew_next_ident(&s, e, &len, in_comment));)
		if (len == nlen && !memcmp(id, name, nlen))
			return 1;
	return 0;
}

const char *ew_last_ident(arena *A, const char *expr)
{
	const char *s = expr, *last = NULL, *id;
	size_t len = 0, n;
	int in_comment = 0;
	while ((id = ew_next_ident(&s, expr + strlen(expr), &n, &in_comment))) {
		last = id;
		len = n;
	}
	return last ? arena_strndup(A, last, len) : NULL;
}

struct ew_tokens {
	const char **slot;      /* open addressing, NUL-terminated copies */
	size_t cap;
};

static size_t tok_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return (size_t)h;
}

static void tok_add(ew_tokens *T, arena *A, const char *id, size_t len)
{
	size_t i = tok_hash(id, len) & (T->cap - 1);
	for (; T->slot[i]; i = (i + 1) & (T->cap - 1))
		if (strlen(T->slot[i]) == len && !memcmp(T->slot[i], id, len))
			return;
	T->slot[i] = arena_strndup(A, id, len);
}

/* The member access that starts with identifier id[len] ("ws->h1_h_seq":
 * the identifier, "->", an identifier), its length in *n; 0 when none. */
static int member_access(const char *id, size_t len, const char *e, size_t *n)
{
	const char *p = id + len;
	if (p + 2 >= e || p[0] != '-' || p[1] != '>' || !ew_ident_char(p[2]) || (p[2] >= '0' && p[2] <= '9'))
		return 0;
	for (p += 2; p < e && ew_ident_char(*p); p++)
		;
	*n = (size_t)(p - id);
	return 1;
}

ew_tokens *ew_tokens_of(arena *A, const char *text)
{
	size_t n = 0, len, mlen;
	int in_comment = 0;
	const char *s = text, *e = text + strlen(text);
	while (ew_next_ident(&s, e, &len, &in_comment))
		n++;
	ew_tokens *T = arena_alloc(A, sizeof *T);
	for (T->cap = 16; T->cap < 4 * n + 2; T->cap *= 2)
		;
	T->slot = arena_array(A, T->cap, sizeof *T->slot);
	in_comment = 0;
	s = text;
	for (const char *id; (id = ew_next_ident(&s, e, &len, &in_comment));) {
		tok_add(T, A, id, len);
		if (member_access(id, len, e, &mlen))
			tok_add(T, A, id, mlen);
	}
	return T;
}

int ew_tokens_has(const ew_tokens *T, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = tok_hash(name, n) & (T->cap - 1); T->slot[i]; i = (i + 1) & (T->cap - 1))
		if (!strcmp(T->slot[i], name))
			return 1;
	return 0;
}

typedef struct pline {
	const char *s, *e;      /* the line without its newline */
	const char *name;       /* a marked declaration: the name (NUL-terminated copy) */
	const char *decl;       /* ... and where the declaration starts */
	int dropped;
} pline;

char *ew_prune(arena *A, const char *text)
{
	int n = 0, cap = 64;
	pline *L = malloc(sizeof *L * (size_t)cap);
	if (!L)
		arena_oom(NULL, sizeof *L * (size_t)cap, "a line table");
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		if (!e)
			e = p + strlen(p);
		if (n == cap) {
			cap *= 2;
			pline *nl = realloc(L, sizeof *L * (size_t)cap);
			if (!nl)
				arena_oom(NULL, sizeof *L * (size_t)cap, "a line table");
			L = nl;
		}
		pline *l = &L[n++];
		*l = (pline){.s = p, .e = e};
		const char *q = p;
		while (q < e && *q == '\t')
			q++;
		const char *ne = q < e && *q == DECL_MARK ? memchr(q, DECL_END, (size_t)(e - q)) : NULL;
		if (ne) {
			l->name = arena_strndup(A, q + 1, (size_t)(ne - q - 1));
			l->decl = ne + 1;
		}
		p = *e ? e + 1 : e;
	}
	for (int changed = 1; changed;) {
		changed = 0;
		for (int i = n - 1; i >= 0; i--) {
			if (!L[i].name || L[i].dropped)
				continue;
			size_t nlen = strlen(L[i].name);
			int read = 0, in_comment = 0;
			for (int j = i + 1; j < n && !read; j++)
				if (!L[j].dropped)
					read = line_reads(L[j].name ? L[j].decl : L[j].s, L[j].e, L[i].name, nlen,
							  &in_comment);
			if (!read) {
				L[i].dropped = 1;
				changed = 1;
			}
		}
	}
	size_t len = 0;
	for (int i = 0; i < n; i++)
		if (!L[i].dropped)
			len += (size_t)(L[i].e - L[i].s) + 1;
	char *out = arena_alloc(A, len + 1), *o = out;
	for (int i = 0; i < n; i++) {
		if (L[i].dropped)
			continue;
		if (L[i].name) {
			size_t ind = 0;
			while (L[i].s[ind] == '\t')
				ind++;
			memcpy(o, L[i].s, ind);
			o += ind;
			memcpy(o, L[i].decl, (size_t)(L[i].e - L[i].decl));
			o += L[i].e - L[i].decl;
		} else {
			memcpy(o, L[i].s, (size_t)(L[i].e - L[i].s));
			o += L[i].e - L[i].s;
		}
		*o++ = '\n';
	}
	*o = 0;
	free(L);
	return out;
}
