/* emit.c: writes a compiled model -- DIR/NAME.h, NAME.c, NAME.weights, a
 * Makefile and a CMakeLists.txt -- from the planned root graph.
 *
 * The fixed text of every file is a template (templates/NAME.in, embedded into
 * cellc) with two kinds of markers: `@KEY@` inside a line is replaced by a
 * string (NAME, VERSION, ...), and a line holding only `@@BLOCK@@` is
 * replaced by the output of the block's printer below, indented like the
 * marker.  The printers only read the IR: shapes, slots (pass_plan), fusion
 * groups (pass_fuse) and recurrences (emit_rec.c) are decided before.
 *
 * The forward function is printed into memory first: while printing, emit_ref
 * and emit_dim mark which inputs, outputs, constants, workspace slots and
 * dimension symbols the code uses, so the declarations printed around it are
 * exactly the used ones (the emitted code compiles with -Wall -Wextra -Werror,
 * where an unused local is an error).
 *
 * Naming in emitted code: dims `d_<sym>`, inputs and outputs the names of
 * their parameters in NAME.h (`x`, `grad_h1_W_h`) or, where a function that
 * takes one reads that name already, `in_<k>` / `out_<k>` (name_io),
 * weights `m->w_<name>` and recurrent states `m->st_<name>` (the tensor's
 * name as a C identifier, h1.W_x -> m->w_h1_W_x, numbered on a clash:
 * member_name), constants `c_<k>`, workspace slots `ws_<slot>`, the time
 * loop of a recurrence `rec_<name>()` (print_rec_function), a --train
 * build's root backward part `backward()` (print_backward), the gradients
 * in a backward recurrence's step `g_<forward value>` (emit_rec.c).
 *
 * Deployment modes (emit_opts; docs/deploying.md): the weights come from
 * NAME.weights (checked, then pointed into) or, with embed_weights, from
 * 64-byte aligned static const arrays in NAME.c; memory is allocated on
 * demand (workspace, recurrent states) or, with no_malloc, carved at create
 * time out of one caller-provided arena whose size cellc computes for the
 * largest dims (--max-dim) and prints into NAME.h as NAME_ARENA_BYTES.
 */
#define _POSIX_C_SOURCE 200809L

#include "emit.h"
#include "infer.h"
#include "cellrt.h"
#include "version.h"
#include "util.h"

#include <errno.h>
#include <math.h>
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
static void fn_open(ew *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fn_open(ew *w, const char *fmt, ...)
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
static const char *next_ident(const char **s, const char *e, size_t *len, int *in_comment)
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
	for (const char *id; (id = next_ident(&s, e, &len, in_comment));)
		if (len == nlen && !memcmp(id, name, nlen))
			return 1;
	return 0;
}

const char *ew_last_ident(arena *A, const char *expr)
{
	const char *s = expr, *last = NULL, *id;
	size_t len = 0, n;
	int in_comment = 0;
	while ((id = next_ident(&s, expr + strlen(expr), &n, &in_comment))) {
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

ew_tokens *ew_tokens_of(arena *A, const char *text)
{
	size_t n = 0, len;
	int in_comment = 0;
	const char *s = text, *e = text + strlen(text);
	while (next_ident(&s, e, &len, &in_comment))
		n++;
	ew_tokens *T = arena_alloc(A, sizeof *T);
	for (T->cap = 16; T->cap < 2 * n + 2; T->cap *= 2)
		;
	T->slot = arena_array(A, T->cap, sizeof *T->slot);
	in_comment = 0;
	s = text;
	for (const char *id; (id = next_ident(&s, e, &len, &in_comment));) {
		size_t i = tok_hash(id, len) & (T->cap - 1);
		for (; T->slot[i]; i = (i + 1) & (T->cap - 1))
			if (strlen(T->slot[i]) == len && !memcmp(T->slot[i], id, len))
				break;
		if (!T->slot[i])
			T->slot[i] = arena_strndup(A, id, len);
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

/* ---- tables: value numbering and use marks ------------------------------- */

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
	/* marks: what the function being printed refers to */
	char used_sym[IR_MAX_SYMS];
	char *used_in, *used_out, *used_const, *used_slot;
	char sizes_sym[IR_MAX_SYMS];    /* the symbol is in some value's shape (mark_sizes) */
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

/* ---- random streams ---------------------------------------------------------- */

/* The random nodes of the root graph (infer_draws_random) are numbered in node
 * order; stream k is the instance field m->rng[k] (cellrt.h, "random
 * operators"). */
static int rng_count(const ir_graph *g)
{
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		k += infer_draws_random(g->nodes[i]);
	return k;
}

int emit_rng_index(emit_ctx *E, const ir_node *n)
{
	int k = 0;
	for (int i = 0; i < E->g->nnodes && E->g->nodes[i] != n; i++)
		k += infer_draws_random(E->g->nodes[i]);
	return k;
}

/* A node's seed attribute as the 64-bit seed of its stream: an integral
 * value (Dropout's int, or the random operators' float holding an integer)
 * is that integer (two's complement for negatives); any other float, its
 * IEEE double bits.  0 and *has = 0 without the attribute. */
static uint64_t seed_attr(const ir_node *n, int *has)
{
	const ir_attr *a = ir_attr_find(n, "seed");
	*has = a != NULL;
	if (!a)
		return 0;
	if (a->kind == ATTR_INT)
		return (uint64_t)a->i;
	double f = a->f;
	if (f == floor(f) && fabs(f) < 9.2e18)
		return (uint64_t)(int64_t)f;
	uint64_t bits;
	memcpy(&bits, &f, sizeof bits);
	return bits;
}

static const char *cmt(arena *A, const char *s);

/* Every run-time dimension must be in [1, INT32_MAX] (and, with --no-malloc,
 * within the maxima the arena was sized for): the emitted loops index with
 * int64_t products of them. */
static void emit_dims_check(emit_ctx *E, int arena_limits)
{
	struct emit_tabs *t = E->tabs;
	for (int i = 0; i < E->g->nsyms; i++) {
		if (!ir_sym_free(E->g, i)) {
			/* a derived symbol: its value from its base's, at least 1
			 * where it sizes something; one that only a symbolic
			 * constant's data holds (out[T - 1]'s index T - 1) may be 0 */
			if (!t->sizes_sym[i])
				continue;
			int b = E->g->sym_base[i] - 1;
			int64_t off = E->g->sym_off[i];
			ew_line(E->w, "if (d->%s %c %lld < 1) /* symbol '%s' */", t->sym[b], off < 0 ? '-' : '+',
				(long long)(off < 0 ? -off : off), cmt(E->A, E->g->syms[i]));
			ew_line(E->w, "\treturn RT_ERR_SHAPE;");
			continue;
		}
		if (ir_sym_least(E->g, i) > 1)
			ew_line(E->w, "if (d->%s < %lld || d->%s > INT32_MAX) /* the least value a shape decision assumed */",
				t->sym[i], (long long)ir_sym_least(E->g, i), t->sym[i]);
		else
			ew_line(E->w, "if (d->%s < 1 || d->%s > INT32_MAX)", t->sym[i], t->sym[i]);
		ew_line(E->w, "\treturn RT_ERR_SHAPE;");
		if (arena_limits) {
			ew_line(E->w, "if (d->%s > %s_MAX_%s)", t->sym[i], t->name, t->sym[i]);
			ew_line(E->w, "\treturn RT_ERR_SHAPE; /* beyond the dims the arena was sized for */");
		}
	}
}

/* `d_<sym>` locals for the symbols the function body uses (t->used_sym). */
static void emit_dims_locals(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	for (int i = 0; i < E->g->nsyms; i++)
		if (t->used_sym[i] && ir_sym_free(E->g, i))
			ew_line(E->w, "const int64_t d_%s = d->%s;", t->sym[i], t->sym[i]);
}

static void tabs_clear_marks(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	memset(t->used_sym, 0, sizeof t->used_sym);
	memset(t->used_in, 0, (size_t)E->g->ninputs + 1);
	memset(t->used_out, 0, (size_t)E->g->noutputs + 1);
	memset(t->used_const, 0, (size_t)t->nconsts + 1);
	memset(t->used_slot, 0, (size_t)t->nslots + 1);
}

static int find_index(const ir_value *const *list, int n, const ir_value *v)
{
	for (int i = 0; i < n; i++)
		if (list[i] == v)
			return i;
	return -1;
}

static void push(arena *A, const ir_value ***list, int *n, int *cap, const ir_value *v)
{
	if (find_index(*list, *n, v) >= 0)
		return;
	if (*n == *cap) {
		int c = *cap ? 2 * *cap : 32;
		*list = arena_grow(A, *list, (size_t)*n, (size_t)c, sizeof **list);
		*cap = c;
	}
	(*list)[(*n)++] = v;
}

/* Marks in s the symbols of every value's shape (root graph and bodies):
 * those that size a buffer or a loop.  Symbolic constants hold symbols as
 * data, not in their shapes. */
static void mark_sizes(const ir_graph *g, char *s)
{
	for (int i = 0; i < g->nvalues; i++)
		for (int a = 0; a < g->values[i]->shape.rank; a++)
			for (int j = 0; j < IR_MAX_SYMS; j++)
				if (g->values[i]->shape.d[a].pow[j])
					s[j] = 1;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			mark_sizes(g->nodes[i]->body, s);
}

/* Weights and constants used anywhere (root graph and bodies), in graph order. */
static void collect_values(emit_ctx *E, ir_graph *g)
{
	struct emit_tabs *t = E->tabs;
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		if (v->slot + 1 > t->nslots)
			t->nslots = v->slot + 1;
		if (v->nuses == 0 && !v->is_output)
			continue;
		if (v->kind == VAL_WEIGHT)
			push(E->A, &t->weights, &t->nweights, &t->capweights, v);
		else if (v->kind == VAL_CONST && (v->data || v->sym))
			push(E->A, &t->consts, &t->nconsts, &t->capconsts, v);
	}
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			collect_values(E, g->nodes[i]->body);
}

/* ---- names ------------------------------------------------------------------ */

/* s made into a C identifier: other characters become '_'. */
static char *c_ident(arena *A, const char *s)
{
	size_t n = strlen(s);
	char *r = arena_alloc(A, n + 2);
	size_t k = 0;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		r[k++] = '_';
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			 (c >= '0' && c <= '9');
		r[k++] = ok ? c : '_';
	}
	r[k] = 0;
	return r;
}

/* An instance member's name: prefix and the IR name as a C identifier (at
 * most 40 characters of it), a number appended while it is among taken[n]. */
static const char *member_name(arena *A, const char *prefix, const char *name, const char *const *taken, int n)
{
	const char *id = c_ident(A, name);
	const char *base = arena_printf(A, "%s%.40s", prefix, id[0] == '_' ? id + 1 : id);
	const char *nm = base;
	for (int c = 2, clash = 1; clash; c++) {
		clash = 0;
		for (int j = 0; j < n && !clash; j++)
			clash = !strcmp(taken[j], nm);
		if (clash)
			nm = arena_printf(A, "%s_%d", base, c);
	}
	return nm;
}

/* The instance members of the weights: w_ and the tensor's name
 * (h1.W_x -> w_h1_W_x). */
static void weight_members(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	t->wname = arena_array(E->A, (size_t)t->nweights + 1, sizeof *t->wname);
	for (int k = 0; k < t->nweights; k++)
		t->wname[k] = member_name(E->A, "w_", t->weights[k]->name, t->wname, k);
}

const char *emit_state_member(emit_ctx *E, const ir_node *rec, int k)
{
	/* in order over the recurrences of the root graph and their states */
	const char **seen = NULL;
	int nseen = 0, cap = 0;
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *n = E->g->nodes[i];
		if (n->op != OP_RECURRENCE)
			continue;
		int ns = (int)ir_attr_int(n, "n_state", 0), nseq = (int)ir_attr_int(n, "n_seq", 0);
		for (int j = 0; j < ns; j++) {
			const char *nm = member_name(E->A, "st_", n->body->inputs[nseq + j]->name, seen, nseen);
			if (n == rec && j == k)
				return nm;
			if (nseen == cap) {
				int c2 = cap ? 2 * cap : 16;
				seen = arena_grow(E->A, seen, (size_t)nseen, (size_t)c2, sizeof *seen);
				cap = c2;
			}
			seen[nseen++] = nm;
		}
	}
	UNREACHABLE();
}

/* ---- workspace parts: named after what they hold ------------------------------ */

/* The identifier of an IR name: c_ident without leading, trailing or doubled
 * '_' ("/rnn/LSTM.forward.h" -> "rnn_LSTM_forward_h"), at most 40
 * characters; "" when nothing is left. */
static const char *plain_ident(arena *A, const char *name)
{
	const char *id = c_ident(A, name);
	char *r = arena_alloc(A, strlen(id) + 1);
	size_t k = 0;
	for (const char *p = id; *p && k < 40; p++)
		if (*p != '_' || (k > 0 && r[k - 1] != '_'))
			r[k++] = *p;
	while (k > 0 && r[k - 1] == '_')
		k--;
	r[k] = 0;
	return r;
}

/* What value v (of the root graph, or of the body of recurrence rn) is
 * called in the name of its workspace part:
 *   a recurrence's next state (body output k < n_state): the state's name
 *     and _next ("h1.v1" -> h1_v1_next);
 *   a name the model gave (not one cellc made, "%t12"): that name;
 *   a recurrence's result: its last state (state name and _last) or its
 *     stacked output (the body output's name and _seq);
 *   else the name of the node that makes it ("%Gemm17" -> Gemm17, the name
 *     the kernel's comment gives), with the output's index after the first. */
static const char *value_stem(emit_ctx *E, const ir_value *v, const ir_node *rn)
{
	arena *A = E->A;
	if (rn) {
		int ns = (int)ir_attr_int(rn, "n_state", 0), nseq = (int)ir_attr_int(rn, "n_seq", 0);
		for (int k = 0; k < ns && k < rn->body->noutputs; k++)
			if (ir_storage(rn->body->outputs[k]) == v)
				return arena_printf(A, "%s_next", plain_ident(A, rn->body->inputs[nseq + k]->name));
	}
	if (v->name && v->name[0] && v->name[0] != '%' && *plain_ident(A, v->name))
		return plain_ident(A, v->name);
	const ir_node *p = v->producer;
	if (!p)
		return plain_ident(A, v->name ? v->name : "");
	int k = 0;
	while (k < p->nout && p->out[k] != v)
		k++;
	if (p->op == OP_RECURRENCE && p->body) {
		int ns = (int)ir_attr_int(p, "n_state", 0), nseq = (int)ir_attr_int(p, "n_seq", 0);
		if (k < ns && nseq + k < p->body->ninputs)
			return arena_printf(A, "%s_last", plain_ident(A, p->body->inputs[nseq + k]->name));
		if (k < p->body->noutputs) {
			/* every step's value of a state, or of a value the model names */
			const ir_value *y = p->body->outputs[k];
			for (int j = 0; j < ns && nseq + j < p->body->ninputs; j++)
				if (ir_storage(p->body->outputs[j]) == ir_storage(y))
					return arena_printf(A, "%s_seq", plain_ident(A, p->body->inputs[nseq + j]->name));
			if (y->name && y->name[0] != '%' && *plain_ident(A, y->name))
				return arena_printf(A, "%s_seq", plain_ident(A, y->name));
			return arena_printf(A, "%s_out%d", plain_ident(A, p->name ? p->name : "rec"), k - ns);
		}
	}
	const char *nm = plain_ident(A, p->name ? p->name : ir_op_name(p->op));
	return k > 0 ? arena_printf(A, "%s_%d", nm, k) : nm;
}

/* The values that hold storage of their own in a slot, in the order the
 * model runs them (a recurrence's body before its results). */
typedef struct slot_use {
	const ir_value *v;
	const ir_node *rn;      /* the recurrence whose body v is in, or NULL */
	int here;               /* v is made or read by the function being printed */
} slot_use;

typedef struct slot_uses_t {
	slot_use *u;
	int n, cap;
} slot_uses_t;

static void slot_use_add(emit_ctx *E, slot_uses_t *U, const ir_value *v, const ir_node *rn, int here)
{
	if (!v || v->slot < 0 || v->slot >= E->tabs->nslots || ir_storage(v) != v || v->kind != VAL_TEMP)
		return;
	if (U->n == U->cap) {
		int c2 = U->cap ? 2 * U->cap : 32;
		U->u = arena_grow(E->A, U->u, (size_t)U->n, (size_t)c2, sizeof *U->u);
		U->cap = c2;
	}
	U->u[U->n++] = (slot_use){v, rn, here};
}

/* The values of g in the order the model makes them (a recurrence's body
 * before its results).  `here`: made or read by g's nodes [from, to), the
 * function being printed (from < 0: all of g).  A body's values are the
 * function's when it is its recurrence's function (the one node). */
static void slot_uses(emit_ctx *E, const ir_graph *g, const ir_node *rn, int from, int to, slot_uses_t *U)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *nd = g->nodes[i];
		int here = from < 0 || (i >= from && i < to);
		if (here && from >= 0)
			for (int k = 0; k < nd->nin; k++)
				if (nd->in[k])
					slot_use_add(E, U, ir_storage(nd->in[k]), rn, 1);
		if (nd->body) {
			int body = here && (from < 0 || to - from == 1);
			slot_uses(E, nd->body, nd->op == OP_RECURRENCE ? nd : NULL, body ? -1 : INT32_MAX,
				  body ? -1 : INT32_MAX, U);
		}
		for (int k = 0; k < nd->nout; k++)
			slot_use_add(E, U, nd->out[k], rn, here);
	}
}

/* Names every slot (emit_slot_name) and writes its note: the shape of the
 * value it is named after, and the other values it holds over time. */
static void name_slots(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	arena *A = E->A;
	int ns = t->nslots;
	t->slot_name = arena_array(A, (size_t)ns + 1, sizeof *t->slot_name);
	t->slot_note = arena_array(A, (size_t)ns + 1, sizeof *t->slot_note);
	slot_uses_t U = {0};
	slot_uses(E, E->g, NULL, t->scope0, t->scope1, &U);
	slot_use *u = U.u;
	int nu = U.n;
	for (int s = 0; s < ns; s++) {
		/* named after the first value it holds in this function with a
		 * name of the model's or a role (next state, result), else the
		 * first value it holds there; a slot the function only passes on
		 * after the values of the whole model */
		int first = -1, best = -1, others = 0, here = 0;
		for (int i = 0; i < nu && !here; i++)
			here = u[i].v->slot == s && u[i].here;
		for (int i = 0; i < nu; i++) {
			if (u[i].v->slot != s || (here && !u[i].here))
				continue;
			if (first >= 0 && u[i].v == u[first].v)
				continue;
			if (first < 0)
				first = i;
			const ir_value *v = u[i].v;
			int named = (v->name && v->name[0] != '%') || (v->producer && v->producer->op == OP_RECURRENCE);
			for (int k = 0; !named && u[i].rn && k < u[i].rn->body->noutputs; k++)
				named = ir_storage(u[i].rn->body->outputs[k]) == v;
			if (best < 0 && named)
				best = i;
		}
		if (best < 0)
			best = first;
		const char *stem = best >= 0 ? value_stem(E, u[best].v, u[best].rn) : "";
		const char *base = arena_printf(A, "ws_%s", *stem ? stem : arena_printf(A, "%d", s));
		const char *nm = base;
		for (int c = 2;; c++) {
			int clash = !strcmp(nm, "ws_need") || !strcmp(nm, "ws_reserve") || !strcmp(nm, "ws_size");
			for (int j = 0; j < s && !clash; j++)
				clash = !strcmp(t->slot_name[j], nm);
			if (!clash)
				break;
			nm = arena_printf(A, "%s_%d", base, c);
		}
		t->slot_name[s] = nm;
		ir_dim sz;
		ir_dtype dt = DT_UNDEF;
		ir_slot_info(E->g, s, &sz, &dt);
		const char *note;
		if (best < 0) {
			note = arena_printf(A, "workspace, %s elements", emit_dim(E, sz));
		} else {
			const ir_value *v = u[best].v;
			ir_dim n = ir_shape_numel(&v->shape);
			if (ir_dim_eq(n, sz))
				note = arena_printf(A, "%s %s", cmt(A, v->name), ir_shape_str(A, E->g, &v->shape));
			else if (ir_dim_eq(n, ir_slot_numel(v)))
				note = arena_printf(A, "%s %s, in %s elements", cmt(A, v->name),
						    ir_shape_str(A, E->g, &v->shape), emit_unparen(A, emit_dim(E, sz)));
			else
				note = arena_printf(A, "%s %s, a step's rows at a time: %s elements", cmt(A, v->name),
						    ir_shape_str(A, E->g, &v->shape), emit_unparen(A, emit_dim(E, sz)));
		}
		for (int i = 0; i < nu; i++) {
			int dup = 0;    /* a value read and made in the function is listed once */
			for (int j = 0; j < i && !dup; j++)
				dup = u[j].v == u[i].v && u[j].here == u[i].here;
			if (u[i].v->slot == s && (!here || u[i].here) && !dup && u[i].v != u[best].v && ++others <= 3)
				note = arena_printf(A, "%s%s%s", note, others == 1 ? "; also " : ", ", cmt(A, u[i].v->name));
		}
		if (others > 3)
			note = arena_printf(A, "%s and %d more", note, others - 3);
		t->slot_note[s] = note;
	}
}

const char *emit_slot_name(emit_ctx *E, int slot)
{
	ASSERT(slot >= 0 && slot < E->tabs->nslots);
	if (!E->tabs->slot_name)
		name_slots(E);
	return E->tabs->slot_name[slot];
}

const char *emit_slot_note(emit_ctx *E, int slot)
{
	emit_slot_name(E, slot);
	return E->tabs->slot_note[slot];
}

void emit_slot_scope(emit_ctx *E, int first, int last)
{
	struct emit_tabs *t = E->tabs;
	if (t->scope0 == first && t->scope1 == last)
		return;
	t->scope0 = first;
	t->scope1 = last;
	t->slot_name = NULL;    /* named again for this function */
	t->slot_note = NULL;
}

const char *emit_unparen(arena *A, const char *e)
{
	size_t n = strlen(e);
	if (n < 2 || e[0] != '(' || e[n - 1] != ')')
		return e;
	int depth = 0;
	for (size_t i = 0; i < n; i++) {
		depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
		if (depth == 0 && i < n - 1)
			return e;       /* "(a) * (b)": the first parenthesis closes early */
	}
	return arena_strndup(A, e + 1, n - 2);
}

/* Text safe inside a C comment: no comment terminator, no newline. */
static const char *cmt(arena *A, const char *s)
{
	if (!s)
		return "";
	size_t n = strlen(s);
	int cut = n > 96;       /* long names shortened: comments are for people */
	if (cut)
		n = 93;
	char *r = arena_alloc(A, 2 * n + 4);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
		r[k++] = c;
		if (c == '*' && s[i + 1] == '/')
			r[k++] = ' ';
		if (c == '/' && s[i + 1] == '*')
			r[k++] = ' ';
	}
	if (cut)
		r[k++] = '.', r[k++] = '.', r[k++] = '.';
	r[k] = 0;
	return r;
}

/* A C string literal holding s. */
static const char *c_string(arena *A, const char *s)
{
	size_t n = strlen(s);
	char *r = arena_alloc(A, 4 * n + 3);
	size_t k = 0;
	r[k++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			r[k++] = '\\';
			r[k++] = (char)c;
		} else if (c < 32 || c >= 127 || c == '?') {
			/* octal escapes: '?' avoids trigraphs, bytes >= 127 stay exact */
			k += (size_t)sprintf(r + k, "\\%03o", c);
		} else {
			r[k++] = (char)c;
		}
	}
	r[k++] = '"';
	r[k] = 0;
	return r;
}

/* C and C++ keywords (the emitted header compiles as both), and the names
 * the emitted code uses for itself. */
static int is_keyword(const char *s)
{
	static const char *const kw[] = {
		"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
		"enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
		"restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
		"typedef", "union", "unsigned", "void", "volatile", "while", "bool", "true", "false",
		"alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "catch", "class",
		"compl", "concept", "consteval", "constexpr", "constinit", "const_cast", "co_await",
		"co_return", "co_yield", "decltype", "delete", "dynamic_cast", "explicit", "export",
		"friend", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
		"operator", "or", "or_eq", "private", "protected", "public", "reinterpret_cast",
		"requires", "static_assert", "static_cast", "template", "this", "thread_local",
		"throw", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
		"char8_t", "char16_t", "char32_t",
	};
	for (size_t i = 0; i < COUNTOF(kw); i++)
		if (!strcmp(s, kw[i]))
			return 1;
	return 0;
}

/* C names of the dimension symbols: the symbol made into an identifier
 * (a keyword gets a '_' appended), with its index appended when two symbols
 * would read the same. */
static void name_syms(emit_ctx *E)
{
	for (int i = 0; i < E->g->nsyms; i++) {
		char *s = c_ident(E->A, E->g->syms[i]);
		if (is_keyword(s))
			s = arena_printf(E->A, "%s_", s);
		for (int j = 0; j < i; j++)
			if (strcmp(E->tabs->sym[j], s) == 0)
				s = arena_printf(E->A, "%s_%d", s, i);
		E->tabs->sym[i] = s;
	}
}

/* ---- dims and references --------------------------------------------------- */

static const char *i64_lit(arena *A, int64_t v)
{
	if (v == INT64_MIN)
		return "INT64_MIN";
	if (v > INT32_MAX || v < -INT32_MAX)
		return arena_printf(A, "INT64_C(%lld)", (long long)v);
	return arena_printf(A, "%lld", (long long)v);
}

const char *emit_dim(emit_ctx *E, ir_dim d)
{
	ASSERT(ir_dim_known(d));
	if (ir_dim_is_const(d))
		return i64_lit(E->A, d.k);
	char *s = d.k == 1 ? NULL : arena_printf(E->A, "%lld", (long long)d.k);
	int factors = d.k == 1 ? 0 : 1;
	for (int i = 0; i < E->g->nsyms; i++)
		for (int p = 0; p < d.pow[i]; p++) {
			const char *f;
			if (ir_sym_free(E->g, i)) {
				E->tabs->used_sym[i] = 1;
				f = arena_printf(E->A, "d_%s", E->tabs->sym[i]);
			} else {
				/* derived: base plus offset */
				int b = E->g->sym_base[i] - 1;
				int64_t off = E->g->sym_off[i];
				E->tabs->used_sym[b] = 1;
				f = arena_printf(E->A, "(d_%s %c %lld)", E->tabs->sym[b], off < 0 ? '-' : '+',
						 (long long)(off < 0 ? -off : off));
			}
			s = s ? arena_printf(E->A, "%s * %s", s, f) : (char *)f;
			factors++;
		}
	return factors > 1 ? arena_printf(E->A, "(%s)", s) : s;
}

const char *emit_numel(emit_ctx *E, const ir_shape *s)
{
	return emit_dim(E, ir_shape_numel(s));
}

const char *emit_ref(emit_ctx *E, const ir_value *v)
{
	struct emit_tabs *t = E->tabs;
	v = ir_storage(v);
	if (E->body_ref && v->graph != E->g) {
		const char *r = E->body_ref(E, v);
		if (r)
			return r;
	}
	ir_graph *g = E->g;
	int k;
	switch (v->kind) {
	case VAL_INPUT:
		k = find_index((const ir_value *const *)g->inputs, g->ninputs, v);
		ASSERT(k >= 0);
		t->used_in[k] = 1;
		return arena_printf(E->A, "in_%d", k);
	case VAL_WEIGHT:
		k = find_index(t->weights, t->nweights, v);
		ASSERT(k >= 0);
		return arena_printf(E->A, "m->%s", t->wname[k]);
	case VAL_CONST:
		k = find_index(t->consts, t->nconsts, v);
		ASSERT(k >= 0);
		t->used_const[k] = 1;
		return arena_printf(E->A, "c_%d", k);
	case VAL_TEMP:
		if (v->is_output && v->graph == g) {
			k = find_index((const ir_value *const *)g->outputs, g->noutputs, v);
			ASSERT(k >= 0);
			t->used_out[k] = 1;
			return arena_printf(E->A, "out_%d", k);
		}
		if (v->slot < 0 && (v = ir_output_backing(v)) != NULL) {
			/* a graph output is a view of it: the output's buffer */
			k = find_index((const ir_value *const *)g->outputs, g->noutputs, v);
			ASSERT(k >= 0);
			t->used_out[k] = 1;
			return arena_printf(E->A, "out_%d", k);
		}
		ASSERT(v && v->slot >= 0 && v->slot < t->nslots);
		t->used_slot[v->slot] = 1;
		return emit_slot_name(E, v->slot);
	case VAL_STEP:
		break;
	}
	die("internal error: emit_ref: value '%s' has no storage outside its recurrence", v->name);
}

/* ---- literals ------------------------------------------------------------ */

const char *emit_float(emit_ctx *E, double x, ir_dtype dt)
{
	const char *suf = dt == DT_F64 ? "" : "f";
	if (isnan(x))
		return dt == DT_F64 ? "(double)NAN" : "NAN";
	if (isinf(x))
		return x > 0 ? (dt == DT_F64 ? "(double)INFINITY" : "INFINITY")
			     : (dt == DT_F64 ? "(-(double)INFINITY)" : "(-INFINITY)");
	/* the shortest digits that read back as the same value */
	char buf[64];
	for (int prec = dt == DT_F64 ? 15 : 6; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, x);
		if (dt == DT_F64 ? strtod(buf, NULL) == x : strtof(buf, NULL) == (float)x)
			break;
	}
	int plain = !strpbrk(buf, ".e");
	return arena_printf(E->A, "%s%s%s", buf, plain ? ".0" : "", suf);
}

const char *emit_scalar(emit_ctx *E, const ir_value *c, int64_t i)
{
	if (c->sym)
		return emit_dim(E, c->sym[i]);
	switch (c->dtype) {
	case DT_F32: return emit_float(E, ((const float *)c->data)[i], DT_F32);
	case DT_F64: return emit_float(E, ((const double *)c->data)[i], DT_F64);
	case DT_U64: return arena_printf(E->A, "UINT64_C(%llu)",
					 (unsigned long long)((const uint64_t *)c->data)[i]);
	case DT_U32: return arena_printf(E->A, "%lluu", (unsigned long long)((const uint32_t *)c->data)[i]);
	default: {
		/* an integer weight (--embed-weights prints it too) reads as a constant */
		ir_value tmp = *c;
		tmp.kind = VAL_CONST;
		return i64_lit(E->A, ir_const_int(&tmp, i));
	}
	}
}

/* ---- templates ----------------------------------------------------------- */

typedef void (*block_fn)(emit_ctx *E);

typedef struct tpl_env {
	const char *const *keys;        /* inline markers @KEY@ */
	const char *const *vals;
	int nkeys;
	const char *const *blocks;      /* block markers @@BLOCK@@ */
	const block_fn *fns;
	int nblocks;
} tpl_env;

static int is_key_char(char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }

static void tpl_line(emit_ctx *E, const tpl_env *env, const char *s, size_t n)
{
	FILE *f = E->w->f;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '@') {
			size_t j = i + 1;
			while (j < n && is_key_char(s[j]))
				j++;
			if (j < n && j > i + 1 && s[j] == '@') {
				int k;
				for (k = 0; k < env->nkeys; k++)
					if (strlen(env->keys[k]) == j - i - 1 &&
					    !strncmp(env->keys[k], s + i + 1, j - i - 1))
						break;
				if (k == env->nkeys)
					die("internal error: template marker @%.*s@ has no value", (int)(j - i - 1), s + i + 1);
				fputs(env->vals[k], f);
				i = j;
				continue;
			}
		}
		fputc(s[i], f);
	}
	fputc('\n', f);
}

static void tpl_expand(emit_ctx *E, const char *tpl_name, const tpl_env *env)
{
	const char *t = emit_template(tpl_name);
	if (!t)
		die("internal error: template %s is not embedded", tpl_name);
	while (*t) {
		const char *nl = strchr(t, '\n');
		size_t n = nl ? (size_t)(nl - t) : strlen(t);
		size_t tabs = 0;
		while (tabs < n && t[tabs] == '\t')
			tabs++;
		const char *b = t + tabs;
		size_t bn = n - tabs;
		if (bn > 4 && !strncmp(b, "@@", 2) && !strncmp(b + bn - 2, "@@", 2)) {
			int k;
			for (k = 0; k < env->nblocks; k++)
				if (strlen(env->blocks[k]) == bn - 4 && !strncmp(env->blocks[k], b + 2, bn - 4))
					break;
			if (k == env->nblocks)
				die("internal error: template block @@%.*s@@ has no printer", (int)(bn - 4), b + 2);
			E->w->indent = (int)tabs;
			env->fns[k](E);
			E->w->indent = 0;
		} else {
			tpl_line(E, env, t, n);
		}
		t += n + (nl ? 1 : 0);
	}
}

/* ---- model facts ----------------------------------------------------------- */

static const char *ctype(const ir_value *v) { return ir_dtype_ctype(v->dtype); }

/* The symbol of the time axis of the first recurrence, when that axis is one
 * plain symbol: then NAME_step runs the model with it set to 1. */
static int find_time_sym(const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (n->op != OP_RECURRENCE || n->nin < 1 || !n->in[0])
			continue;
		ir_attr *ax = ir_attr_find(n, "seq_axis");
		int axis = ax && ax->kind == ATTR_INTS && ax->n > 0 ? (int)ax->ints[0] : 0;
		const ir_shape *s = &n->in[0]->shape;
		if (axis >= s->rank)
			return -1;
		ir_dim d = s->d[axis];
		int sym = -1, count = 0;
		for (int k = 0; k < IR_MAX_SYMS; k++)
			if (d.pow[k]) {
				sym = k;
				count += d.pow[k];
			}
		return d.k == 1 && count == 1 && ir_sym_free(g, sym) ? sym : -1;
	}
	return -1;
}

int emit_time_sym(const ir_graph *g)
{
	return find_time_sym(g);
}

/* Value of d with every symbol at its largest value (no_malloc); -1 when
 * that overflows. */
static int64_t dim_at_max(emit_ctx *E, ir_dim d)
{
	int64_t v = d.k;
	for (int i = 0; i < E->g->nsyms; i++) {
		int64_t m = ir_sym_free(E->g, i) ? E->o->max_dims[i]
			  : E->o->max_dims[E->g->sym_base[i] - 1] + E->g->sym_off[i];
		for (int p = 0; p < d.pow[i]; p++)
			if (m < 1 || __builtin_mul_overflow(v, m, &v))
				return -1;
	}
	return v;
}

static const char *shape_comment(emit_ctx *E, const ir_value *v)
{
	const char *s = ir_shape_str(E->A, E->g, &v->shape);
	if (v->data_dep)        /* the buffer holds the bound; the run finds the length */
		s = arena_printf(E->A, "%s, axis %d data-dependent: at most %s, the run's length from "
				 "%s_output_dims", s, v->dd_axis, ir_dim_str(E->A, E->g, v->shape.d[v->dd_axis]),
				 E->tabs->name);
	return cmt(E->A, s);
}

/* ---- data-dependent lengths ------------------------------------------------ */

static int has_dd(const ir_node *n)
{
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && n->out[k]->data_dep)
			return 1;
	return 0;
}

int emit_dd_slot(const ir_graph *g, const ir_node *n)
{
	if (!has_dd(n))
		return -1;
	int slot = 0;
	for (int i = 0; i < g->nnodes && g->nodes[i] != n; i++)
		slot += has_dd(g->nodes[i]);
	return slot;
}

int emit_dd_count(const ir_graph *g)
{
	int cnt = 0;
	for (int i = 0; i < g->nnodes; i++)
		cnt += has_dd(g->nodes[i]);
	return cnt;
}

/* ---- blocks of NAME.h --------------------------------------------------- */

static void blk_provenance(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew_line(E->w, " * command: %s", cmt(E->A, E->o->cmdline ? E->o->cmdline : "(not recorded)"));
	ew_line(E->w, " * model:   %s (FNV-1a 64: %016llx)", cmt(E->A, g->source ? g->source : "(unknown)"),
		(unsigned long long)g->source_hash);
	ew_line(E->w, " * producer: %s; default-domain opset %d",
		cmt(E->A, g->producer && *g->producer ? g->producer : "(unknown)"), g->opset);
	/* the dimension legend: where each symbol of the dims struct comes from */
	for (int i = 0; i < g->nsyms; i++) {
		const char *from = "given by the caller";
		if (!ir_sym_free(g, i)) {
			int b = g->sym_base[i] - 1;
			ew_line(E->w, " *          %s: computed, %s %c %lld", cmt(E->A, g->syms[i]), E->tabs->sym[b],
				g->sym_off[i] < 0 ? '-' : '+', (long long)llabs(g->sym_off[i]));
			continue;
		}
		for (int k = 0; k < g->ninputs && !strcmp(from, "given by the caller"); k++)
			for (int a = 0; a < g->inputs[k]->shape.rank; a++)
				if (ir_dim_eq(g->inputs[k]->shape.d[a], ir_dim_sym(i))) {
					from = arena_printf(E->A, "axis %d of input '%s'", a, cmt(E->A, g->inputs[k]->name));
					break;
				}
		ew_line(E->w, " * %s %s (d->%s): %s%s", i ? "         " : "dims:    ", cmt(E->A, g->syms[i]),
			E->tabs->sym[i], from, E->tabs->time_sym == i ? "; the time steps T of the recurrences" : "");
	}
}

static void blk_dims(emit_ctx *E)
{
	if (E->g->nsyms == 0)
		ew_line(E->w, "int64_t unused_;        /* the model has no dimension symbols */");
	for (int i = 0; i < E->g->nsyms; i++)
		if (ir_sym_free(E->g, i))
			ew_line(E->w, "int64_t %s;%*s/* symbol '%s' */", E->tabs->sym[i],
			(int)(strlen(E->tabs->sym[i]) < 16 ? 16 - strlen(E->tabs->sym[i]) : 1), "",
			cmt(E->A, E->g->syms[i]));
}

static int is_c_keyword(const char *s)
{
	return is_keyword(s) || !strcmp(s, "m") || !strcmp(s, "d") || s[0] == '_' || !strncmp(s, "rt_", 3);
}

/* Parameter name of input/output k in the header: the tensor's name as an
 * identifier when that is unambiguous, else in_k / out_k. */
static const char *io_param_name(emit_ctx *E, int out, int k)
{
	ir_graph *g = E->g;
	const char *id = c_ident(E->A, (out ? g->outputs : g->inputs)[k]->name);
	const char *fallback = arena_printf(E->A, "%s_%d", out ? "out" : "in", k);
	if (is_c_keyword(id) || strlen(id) > 48)
		return fallback;
	for (int o = 0; o <= 1; o++)
		for (int j = 0; j < (o ? g->noutputs : g->ninputs); j++)
			if ((o != out || j != k) &&
			    !strcmp(c_ident(E->A, (o ? g->outputs : g->inputs)[j]->name), id))
				return fallback;
	if (!strncmp(id, "in_", 3) || !strncmp(id, "out_", 4))
		return fallback;
	return id;
}

/* The name of input/output k in the function bodies of NAME.c: the
 * header's where name_io found it safe (forward's placeholders, in_k /
 * out_k, until then). */
static const char *io_src_name(emit_ctx *E, int out, int k)
{
	const char **names = out ? E->tabs->out_name : E->tabs->in_name;
	return names ? names[k] : arena_printf(E->A, "%s_%d", out ? "out" : "in", k);
}

/* The parameter list of run/step/forward.  `header`: the tensor names with
 * shape comments (the header); otherwise the names the function bodies use
 * (io_src_name). */
static const char *io_params(emit_ctx *E, int header, int shapes)
{
	ir_graph *g = E->g;
	char *s = arena_printf(E->A, "%s *m, const %s_dims *d", E->tabs->name, E->tabs->name);
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			const ir_value *v = (out ? g->outputs : g->inputs)[k];
			const char *pn = header ? io_param_name(E, out, k) : io_src_name(E, out, k);
			s = arena_printf(E->A, "%s,\n\t\t%s%s *%s", s, out ? "" : "const ", ctype(v), pn);
			int renamed = header && strcmp(pn, v->name);
			/* FLOAT16 / BFLOAT16 tensors pass as float (computed in float32) */
			const char *narrow = !header || !v->narrow ? ""
					     : v->narrow == DT_F16 ? " float16 values as float"
								    : " bfloat16 values as float";
			if (header && (shapes || renamed || *narrow))
				s = arena_printf(E->A, "%s /* %s%s%s%s%s%s */", s, renamed ? "'" : "",
						 renamed ? cmt(E->A, v->name) : "", renamed ? "'" : "",
						 renamed && shapes ? " " : "", shapes ? shape_comment(E, v) : "",
						 *narrow && !shapes && !renamed ? narrow + 1 : narrow);
		}
	return s;
}

static const char *io_args(emit_ctx *E, const char *dims)
{
	char *s = arena_printf(E->A, "m, %s", dims);
	for (int k = 0; k < E->g->ninputs; k++)
		s = arena_printf(E->A, "%s, %s", s, io_src_name(E, 0, k));
	for (int k = 0; k < E->g->noutputs; k++)
		s = arena_printf(E->A, "%s, %s", s, io_src_name(E, 1, k));
	return s;
}

static void train_decls(emit_ctx *E);

/* ---- carried state (cellc compile --carry IN=OUT) --------------------------- */

static int carried(emit_ctx *E, int out, int k)
{
	for (int j = 0; j < E->tabs->ncarry; j++)
		if ((out ? E->tabs->carry_out[j] : E->tabs->carry_in[j]) == k)
			return j;
	return -1;
}

/* The parameters of NAME_stream: io_params without the carried tensors. */
static const char *stream_params(emit_ctx *E, int header)
{
	ir_graph *g = E->g;
	char *s = arena_printf(E->A, "%s *m, const %s_dims *d", E->tabs->name, E->tabs->name);
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			if (carried(E, out, k) >= 0)
				continue;
			const ir_value *v = (out ? g->outputs : g->inputs)[k];
			const char *pn = header ? io_param_name(E, out, k) : io_src_name(E, out, k);
			s = arena_printf(E->A, "%s,\n\t\t%s%s *%s", s, out ? "" : "const ", ctype(v), pn);
			if (header)
				s = arena_printf(E->A, "%s /* %s */", s, shape_comment(E, v));
		}
	return s;
}

static void stream_decls(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	const char *n = t->name;
	ew_line(w, "%s", "");
	ew_line(w, "/* Streaming with carried state (cellc compile --carry): one call of the model");
	ew_line(w, " * whose state inputs are the instance's, the state outputs of the previous");
	ew_line(w, " * call (zeros after create and %s_reset), so that consecutive calls continue", n);
	ew_line(w, " * one stream with no copying by the caller.  Carried, k = 0..%d:", t->ncarry - 1);
	for (int k = 0; k < t->ncarry; k++)
		ew_line(w, " *   %d: input '%s' <- output '%s' %s", k, cmt(E->A, E->g->inputs[t->carry_in[k]]->name),
			cmt(E->A, E->g->outputs[t->carry_out[k]]->name), shape_comment(E, E->g->inputs[t->carry_in[k]]));
	ew_line(w, " * A stream keeps its dims: others return RT_ERR_SHAPE until %s_reset. */", n);
	ew_line(w, "#define %s_NUM_CARRIED %d", n, t->ncarry);
	ew_line(w, "int %s_stream(%s);", n, stream_params(E, 1));
	ew_line(w, "/* Carried state k as the last %s_stream left it (the last call's output),", n);
	ew_line(w, " * its element count in *count (if not NULL); NULL before the first call after");
	ew_line(w, " * create or reset (the state is zeros then) or for another k. */");
	ew_line(w, "const void *%s_carried(const %s *m, int k, int64_t *count);", n, n);
}

static void api_stream(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	ir_graph *g = E->g;
	const char *n = t->name;
	ew_line(w, "%s", "");
	fn_open(w, "int %s_stream(%s)", n, stream_params(E, 0));
	ew_line(w, "if (!m || !d)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	emit_dims_check(E, E->o->no_malloc);
	for (int i = 0; i < g->nsyms; i++)
		if (ir_sym_free(g, i))
			ew_line(w, "const int64_t d_%s = d->%s;", t->sym[i], t->sym[i]);
	for (int i = 0; i < g->nsyms; i++)
		if (ir_sym_free(g, i))
			ew_line(w, "(void)d_%s;", t->sym[i]);
	for (int k = 0; k < t->ncarry; k++) {
		const ir_value *v = g->inputs[t->carry_in[k]];
		ew_line(w, "const size_t n%d = (size_t)%s;", k, emit_numel(E, &v->shape));
		ew_line(w, "if (m->carry_live && n%d != m->carry%d_n)", k, k);
		ew_line(w, "\treturn RT_ERR_SHAPE; /* a stream keeps its dims until reset */");
		if (!E->o->no_malloc) {
			ew_open(w, "if (n%d != m->carry%d_n || !m->carry%d[0])", k, k, k);
			ew_line(w, "free(m->carry%d[0]);", k);
			ew_line(w, "free(m->carry%d[1]);", k);
			ew_line(w, "m->carry%d[0] = aligned_alloc(64, ALIGN64(sizeof(%s) * n%d + 1));", k, ctype(v), k);
			ew_line(w, "m->carry%d[1] = aligned_alloc(64, ALIGN64(sizeof(%s) * n%d + 1));", k, ctype(v), k);
			ew_line(w, "m->carry%d_n = 0;", k);
			ew_line(w, "if (!m->carry%d[0] || !m->carry%d[1])", k, k);
			ew_line(w, "\treturn RT_ERR_NOMEM;");
			ew_close(w, "");
		}
		ew_line(w, "m->carry%d_n = n%d;", k, k);
	}
	ew_open(w, "if (!m->carry_live)");
	for (int k = 0; k < t->ncarry; k++)
		ew_line(w, "memset(m->carry%d[m->carry_cur], 0, sizeof(%s) * n%d);", k,
			ctype(g->inputs[t->carry_in[k]]), k);
	ew_close(w, "");
	ew_line(w, "m->started = 0; /* the model's own recurrences start from the state inputs */");
	char *args = "m, d";
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			int j = carried(E, out, k);
			args = j < 0 ? arena_printf(E->A, "%s, %s", args, io_src_name(E, out, k))
				     : arena_printf(E->A, "%s, m->carry%d[%sm->carry_cur]", args, j, out ? "!" : "");
		}
	ew_line(w, "int st = forward(%s);", args);
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_line(w, "m->carry_cur = !m->carry_cur;");
	ew_line(w, "m->carry_live = 1;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	fn_open(w, "const void *%s_carried(const %s *m, int k, int64_t *count)", n, n);
	ew_line(w, "if (!m || !m->carry_live)");
	ew_line(w, "\treturn NULL;");
	ew_line(w, "switch (k) {");
	for (int k = 0; k < t->ncarry; k++) {
		ew_line(w, "case %d:", k);
		ew_line(w, "\tif (count)");
		ew_line(w, "\t\t*count = (int64_t)m->carry%d_n;", k);
		ew_line(w, "\treturn m->carry%d[m->carry_cur];", k);
	}
	ew_line(w, "default:");
	ew_line(w, "\treturn NULL;");
	ew_line(w, "}");
	ew_close(w, "");
}

/* Resolves --carry's names; 1 after errors. */
static int resolve_carry(emit_ctx *E)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	const emit_opts *o = E->o;
	t->carry_in = arena_array(E->A, (size_t)o->ncarry + 1, sizeof *t->carry_in);
	t->carry_out = arena_array(E->A, (size_t)o->ncarry + 1, sizeof *t->carry_out);
	for (int j = 0; j < o->ncarry; j++) {
		int ki = -1, ko = -1;
		for (int k = 0; k < g->ninputs; k++)
			if (!strcmp(g->inputs[k]->name, o->carry_in[j]))
				ki = k;
		for (int k = 0; k < g->noutputs; k++)
			if (!strcmp(g->outputs[k]->name, o->carry_out[j]))
				ko = k;
		const char *pair = arena_printf(E->A, "--carry %s=%s", o->carry_in[j], o->carry_out[j]);
		if (ki < 0) {
			diag_error(E->D, "%s: the compiled model has no input '%s' (a bound input is no input)", pair,
				   o->carry_in[j]);
			continue;
		}
		if (ko < 0) {
			diag_error(E->D, "%s: the model has no output '%s'", pair, o->carry_out[j]);
			continue;
		}
		const ir_value *vi = g->inputs[ki], *vo = g->outputs[ko];
		if (vi->dtype != vo->dtype || !ir_shape_eq(&vi->shape, &vo->shape)) {
			diag_error(E->D, "%s: the input is %s%s but the output %s%s; a carried state must keep its type "
				   "and shape", pair, ir_dtype_name(vi->dtype), ir_shape_str(E->A, g, &vi->shape),
				   ir_dtype_name(vo->dtype), ir_shape_str(E->A, g, &vo->shape));
			continue;
		}
		if (carried(E, 0, ki) >= 0 || carried(E, 1, ko) >= 0) {
			diag_error(E->D, "%s: input '%s' or output '%s' is carried twice", pair, vi->name, vo->name);
			continue;
		}
		t->carry_in[t->ncarry] = ki;
		t->carry_out[t->ncarry++] = ko;
	}
	return E->D->nerrors > 0;
}

static void blk_run_decls(emit_ctx *E)
{
	const char *n = E->tabs->name;
	ew_line(E->w, "/* Runs the whole sequence from the initial state (reset first); the");
	ew_line(E->w, " * recurrent state is left at the last step.  Shapes in terms of %s_dims. */", n);
	ew_line(E->w, "int %s_run(%s);", n, io_params(E, 1, 1));
	if (E->tabs->time_sym >= 0) {
		ew_line(E->w, "%s", "");
		ew_line(E->w, "/* Advances one time step (streaming): like %s_run with %s = 1, but", n,
			E->tabs->sym[E->tabs->time_sym]);
		ew_line(E->w, " * continuing from the state the previous run or step left. */");
		ew_line(E->w, "int %s_step(%s);", n, io_params(E, 1, 0));
	}
	if (E->tabs->ncarry)
		stream_decls(E);
	if (E->g->train)
		train_decls(E);
	ew_line(E->w, "%s", "");
	ew_line(E->w, "/* Whether the model draws random numbers (RandomUniform, RandomNormal, their");
	ew_line(E->w, " * Like forms, Bernoulli, Dropout in training mode): then %s_seed exists. */", n);
	ew_line(E->w, "#define %s_HAS_RANDOM %d", n, rng_count(E->g) ? 1 : 0);
	if (rng_count(E->g)) {
		ew_line(E->w, "/* (Re)starts every random stream (one per random node, xoshiro256**): a");
		ew_line(E->w, " * node with a seed attribute from that seed, the others from `seed` (the");
		ew_line(E->w, " * run-time seed: %s_create uses 0).  Streams go on from call to call", n);
		ew_line(E->w, " * (%s_reset leaves them); the same seed gives the same draws. */", n);
		ew_line(E->w, "int %s_seed(%s *m, uint64_t seed);", n, n);
	}
}

/* NAME_seed: every stream from its node's seed attribute or the run-time seed. */
static void api_seed(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	fn_open(w, "int %s_seed(%s *m, uint64_t seed)", n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	int k = 0, uses = 0;
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *nd = E->g->nodes[i];
		if (!infer_draws_random(nd))
			continue;
		int has;
		uint64_t s = seed_attr(nd, &has);
		if (has)
			ew_line(w, "rt_rng_seed(&m->rng[%d], UINT64_C(%llu)); /* %s '%s': its seed attribute */", k,
				(unsigned long long)s, ir_op_name(nd->op), cmt(E->A, nd->name ? nd->name : "?"));
		else
			ew_line(w, "rt_rng_seed_stream(&m->rng[%d], seed, %d); /* %s '%s' */", k, k, ir_op_name(nd->op),
				cmt(E->A, nd->name ? nd->name : "?"));
		uses |= !has;
		k++;
	}
	if (!uses)
		ew_line(w, "(void)seed; /* every random node has its own seed attribute */");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

/* ---- training (cellc compile --train) ------------------------------------- */

/* The declarations of a train build's extra API (docs/training.md). */
static void train_decls(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	const ir_train *t = E->g->train;
	ew_line(w, "%s", "");
	ew_line(w, "/* ---- training (cellc compile --train --loss %s) ----", train_loss_name(t->loss));
	ew_line(w, " * Inputs after the model's: target%s.  Outputs after the model's: loss,",
		t->loss == TRAIN_MASKED_MSE ? ", mask" : "");
	ew_line(w, " * grad.<P> per parameter, grad.<X> per f32 input, dstate (find them by");
	ew_line(w, " * name with %s_io_name).  The parameters are the tensors of %s.weights. */", n, n);
	ew_line(w, "#define %s_TRAIN 1", n);
	ew_line(w, "#define %s_NUM_PARAMS %d", n, t->nparams);
	ew_line(w, "struct rt_tensor;");
	ew_line(w, "/* k-th trainable parameter: name, mutable data, element count. */");
	ew_line(w, "int %s_param(%s *m, int k, const char **name, float **data, int64_t *numel);", n, n);
	ew_line(w, "/* 1: the next runs compute only the model's outputs and the loss (the");
	ew_line(w, " * gradient outputs are left untouched); 0: everything. */");
	ew_line(w, "int %s_set_forward_only(%s *m, int on);", n, n);
	ew_line(w, "/* Writes the parameters and the caller's extra tensors (names starting with");
	ew_line(w, " * '@', e.g. optimiser state) atomically as a weights file %s_create accepts. */", n);
	ew_line(w, "int %s_save(%s *m, const char *path, int nextra, const struct rt_tensor *extra);", n, n);
	ew_line(w, "typedef struct %s_train_info {", n);
	ew_line(w, "\tint x_input;            /* the data input */");
	ew_line(w, "\tint batch_axis, time_axis; /* of the data input */");
	ew_line(w, "\tint loss_kind;          /* 0 ce, 1 ce-all, 2 mse, 3 masked-mse */");
	ew_line(w, "\tint logits_output;      /* the output the loss reads */");
	ew_line(w, "\tint loss_output_index;  /* the output `loss` */");
	ew_line(w, "\tint nclasses;           /* ce, ce-all: classes; else 0 */");
	ew_line(w, "} %s_train_info;", n);
	ew_line(w, "extern const %s_train_info %s_TRAIN_INFO;", n, n);
}

/* The definitions: parameters are weights (w_ members pointing into the loaded
 * weights file, whose memory is the instance's own). */
static void train_api(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *tb = E->tabs;
	const char *n = tb->name;
	const ir_train *t = E->g->train;
	int np = t->nparams;
	ew_line(w, "%s", "");
	ew_line(w, "/* ---- training ---- */");
	ew_line(w, "%s", "");
	ew_line(w, "const %s_train_info %s_TRAIN_INFO = {%d, %d, %d, %d, %d, %d, %d};", n, n, t->x_input,
		t->batch_axis, t->time_axis, t->loss, t->logits_output, t->loss_output_index, t->nclasses);
	ew_line(w, "%s", "");
	fn_open(w, "int %s_param(%s *m, int k, const char **name, float **data, int64_t *numel)", n, n);
	ew_line(w, "if (!m || k < 0 || k >= %d)", np);
	ew_line(w, "\treturn RT_ERR_ARG;");
	if (np) {
		char *ws = "", *cs = "", *ix = "";
		for (int i = 0; i < np; i++) {
			int wk = find_index(tb->weights, tb->nweights, t->params[i]);
			ASSERT(wk >= 0);
			ws = arena_printf(E->A, "%s%s(float *)m->%s", ws, i ? ", " : "", tb->wname[wk]);
			cs = arena_printf(E->A, "%s%s%lld", cs, i ? ", " : "",
					  (long long)ir_shape_const_numel(&t->params[i]->shape));
			ix = arena_printf(E->A, "%s%s%d", ix, i ? ", " : "", wk);
		}
		ew_line(w, "static const int64_t count[%d] = {%s};", np, cs);
		ew_line(w, "static const int widx[%d] = {%s};   /* weight_desc index */", np, ix);
		ew_line(w, "float *const p[%d] = {%s};", np, ws);
		ew_line(w, "if (name)");
		ew_line(w, "\t*name = weight_desc[widx[k]].name;");
		ew_line(w, "if (data)");
		ew_line(w, "\t*data = p[k];");
		ew_line(w, "if (numel)");
		ew_line(w, "\t*numel = count[k];");
	} else {
		ew_line(w, "(void)name, (void)data, (void)numel;");
	}
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	fn_open(w, "int %s_set_forward_only(%s *m, int on)", n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "m->fwd_only = on != 0;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	fn_open(w, "int %s_save(%s *m, const char *path, int nextra, const rt_tensor *extra)", n, n);
	int nw = tb->nweights;
	ew_line(w, "if (!m || !path || nextra < 0 || (nextra && !extra))");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "rt_tensor *t = malloc((size_t)(%d + nextra) * sizeof *t);", nw);
	ew_line(w, "if (!t)");
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	char *wl = "";
	for (int k = 0; k < nw; k++)
		wl = arena_printf(E->A, "%s%s(const void *)m->%s", wl, k ? ", " : "", E->tabs->wname[k]);
	ew_line(w, "const void *const wp[%d] = {%s};", nw ? nw : 1, nw ? wl : "0");
	ew_open(w, "for (int i = 0; i < %d; i++)", nw);
	ew_line(w, "const struct weight_desc *wd = &weight_desc[i];");
	ew_line(w, "t[i].name = wd->name;");
	ew_line(w, "t[i].dtype = wd->dtype;");
	ew_line(w, "t[i].rank = wd->rank;");
	ew_line(w, "size_t cnt = 1;");
	ew_open(w, "for (int a = 0; a < wd->rank; a++)");
	ew_line(w, "t[i].dims[a] = wd->dims[a];");
	ew_line(w, "cnt *= (size_t)wd->dims[a];");
	ew_close(w, "");
	ew_line(w, "t[i].data = wp[i];");
	ew_line(w, "t[i].nbytes = cnt * rt_dtype_size(wd->dtype);");
	ew_close(w, "");
	ew_line(w, "for (int i = 0; i < nextra; i++)");
	ew_line(w, "\tt[%d + i] = extra[i];", nw);
	ew_line(w, "int st = rt_tf_write(path, %d + nextra, t);", nw);
	ew_line(w, "free(t);");
	ew_line(w, "return st;");
	ew_close(w, "");
}

/* ---- blocks of NAME.c ----------------------------------------------------- */

static void blk_struct(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	if (!E->o->embed_weights)
		ew_line(E->w, "rt_tensorfile wf;       /* the weights file; the weight pointers point into it */");
	if (!E->o->embed_weights && E->o->no_malloc)
		ew_line(E->w, "rt_tensor wtab[%d];      /* its table (no allocation) */",
			t->nweights ? t->nweights : 1);
	if (E->o->no_malloc) {
		ew_line(E->w, "unsigned char *ws;      /* workspace: a part of the caller's arena */");
		ew_line(E->w, "size_t ws_size;         /* bytes at ws (enough for the largest dims) */");
	} else {
		ew_line(E->w, "unsigned char *ws;      /* workspace, 64-byte aligned, grown on demand */");
		ew_line(E->w, "size_t ws_size;         /* bytes allocated at ws */");
	}
	ew_line(E->w, "int started;            /* 0 after reset: recurrences start from their initial state */");
	if (emit_dd_count(E->g))
		ew_line(E->w, "int64_t dd_len[%d];       /* data-dependent lengths of the last run (%s_output_dims) */",
			emit_dd_count(E->g), t->name);
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		const char *decl = arena_printf(E->A, "const %s *%s;", ctype(v), t->wname[k]);
		int pad = strlen(decl) < 24 ? 24 - (int)strlen(decl) : 1;  /* comments in one column */
		ew_line(E->w, "%s%*s/* %s %s */", decl, pad, "", cmt(E->A, v->name), shape_comment(E, v));
	}
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			emit_rec_state_decls(E, E->g->nodes[i]);
	if (E->g->train)
		ew_line(E->w, "int fwd_only;           /* NAME_set_forward_only: skip the gradients */");
	if (rng_count(E->g))
		ew_line(E->w, "rt_rng rng[%d];%*s/* a random stream per random node (%s_seed) */", rng_count(E->g),
			rng_count(E->g) < 10 ? 10 : 9, "", E->tabs->name);
	for (int k = 0; k < t->ncarry; k++)
		ew_line(E->w, "%s *carry%d[2]; size_t carry%d_n; /* carried state '%s' <- '%s': two buffers, "
			"carry_cur the current */", ctype(E->g->inputs[t->carry_in[k]]), k, k,
			cmt(E->A, E->g->inputs[t->carry_in[k]]->name), cmt(E->A, E->g->outputs[t->carry_out[k]]->name));
	if (t->ncarry)
		ew_line(E->w, "int carry_cur, carry_live; /* carry_live = 0 after reset: the next stream call starts from zeros */");
}

static void blk_destroy(emit_ctx *E)
{
	if (E->o->no_malloc) {
		ew_line(E->w, "(void)m; /* everything lives in the caller's arena */");
		return;
	}
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			emit_rec_state_free(E, E->g->nodes[i]);
	for (int k = 0; k < E->tabs->ncarry; k++) {
		ew_line(E->w, "free(m->carry%d[0]);", k);
		ew_line(E->w, "free(m->carry%d[1]);", k);
	}
}

static void blk_reset(emit_ctx *E)
{
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			emit_rec_state_reset(E, E->g->nodes[i]);
	if (E->tabs->ncarry)
		ew_line(E->w, "m->carry_live = 0; /* the next %s_stream starts from zero state */", E->tabs->name);
}

/* Static const arrays for the constants the code refers to (marked while
 * the forward function was printed); symbolic ones are locals of forward. */
static void blk_consts(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	int any = 0;
	for (int k = 0; k < t->nconsts; k++) {
		const ir_value *v = t->consts[k];
		if (!t->used_const[k] || v->sym)
			continue;
		int64_t n = ir_shape_const_numel(&v->shape);
		ASSERT(n >= 0);
		if (!any)
			ew_line(E->w, "/* constant tensors */");
		any = 1;
		ew_line(E->w, "/* %s %s */", cmt(E->A, v->name), shape_comment(E, v));
		if (n == 0) {
			/* C has no empty arrays; nothing reads this element */
			ew_line(E->w, "static const %s c_%d[1] = {0};", ctype(v), k);
			continue;
		}
		ew_open(E->w, "static const %s c_%d[%lld] =", ctype(v), k, (long long)n);
		for (int64_t i = 0; i < n; i += 8) {
			char *line = "";
			for (int64_t j = i; j < n && j < i + 8; j++)
				line = arena_printf(E->A, "%s%s%s", line, j > i ? ", " : "", emit_scalar(E, v, j));
			ew_line(E->w, "%s%s", line, i + 8 < n ? "," : "");
		}
		ew_close(E->w, ";");
	}
	if (!any)
		ew_line(E->w, "/* (no constant tensors) */");
}

/* The name of weight v in the weights file: its IR name, shortened with a
 * hash when it does not fit the file's name field. */
static const char *weight_name(arena *A, const ir_value *v)
{
	size_t n = strlen(v->name);
	if (n < RT_TF_NAME)
		return v->name;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)v->name[i];
		h *= 0x100000001b3ull;
	}
	/* 142 bytes of the name, '~', 16 hex digits: 159 bytes and the NUL */
	return arena_printf(A, "%.142s~%016llx", v->name, (unsigned long long)h);
}

/* The head of load_weights for a weights file, up to the opened file in
 * m->wf: read by rt_tf_open, or (no_malloc) into the arena part buf[cap]
 * and described in m->wtab. */
static void open_weights_fn(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	int nw = E->tabs->nweights;
	if (E->o->no_malloc)
		fn_open(w, "static int load_weights(%s *m, const char *path, unsigned char *buf, size_t cap)", n);
	else
		fn_open(w, "static int load_weights(%s *m, const char *path)", n);
	ew_line(w, "if (!path)");
	ew_line(w, "\treturn %s;", nw ? "RT_ERR_ARG" : "RT_OK");
	if (E->o->no_malloc) {
		ew_line(w, "size_t size;");
		ew_line(w, "int st = rt_tf_read_into(path, buf, cap, &size);");
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\tst = rt_tf_open_view(&m->wf, buf, size, m->wtab, %d);", nw ? nw : 1);
	} else {
		ew_line(w, "int st = rt_tf_open(&m->wf, path);");
	}
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
}

/* --embed-weights: the weights as static arrays, 64-byte aligned like the
 * tensors of a weights file, and load_weights pointing the w_ members at them. */
static void embedded_weights(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	if (t->nweights)
		ew_line(w, "/* the weights (--embed-weights), 64-byte aligned */");
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		int64_t n = ir_shape_const_numel(&v->shape);
		ew_line(w, "/* %s %s */", cmt(E->A, v->name), shape_comment(E, v));
		if (n == 0) {
			ew_line(w, "_Alignas(64) static const %s wd_%d[1] = {0};", ctype(v), k);
			continue;
		}
		ew_open(w, "_Alignas(64) static const %s wd_%d[%lld] =", ctype(v), k, (long long)n);
		for (int64_t i = 0; i < n; i += 8) {
			char *line = "";
			for (int64_t j = i; j < n && j < i + 8; j++)
				line = arena_printf(E->A, "%s%s%s", line, j > i ? ", " : "", emit_scalar(E, v, j));
			ew_line(w, "%s%s", line, i + 8 < n ? "," : "");
		}
		ew_close(w, ";");
		ew_line(w, "%s", "");
	}
	fn_open(w, "static int load_weights(%s *m)", t->name);
	if (!t->nweights)
		ew_line(w, "(void)m; /* the model has no weights */");
	for (int k = 0; k < t->nweights; k++)
		ew_line(w, "m->%s = wd_%d;", t->wname[k], k);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

static void blk_load_weights(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	if (E->o->embed_weights) {
		embedded_weights(E);
		return;
	}
	if (t->nweights == 0) {
		ew_line(w, "/* The model has no weights: the weights file, if given, must be empty. */");
		open_weights_fn(E);
		ew_line(w, "return m->wf.count == 0 ? RT_OK : RT_ERR_MISMATCH;");
		ew_close(w, "");
		return;
	}
	ew_line(w, "/* What the weights file must hold, in order of the w_ members. */");
	ew_open(w, "static const struct weight_desc");
	ew_line(w, "const char *name;       /* tensor name in the file */");
	ew_line(w, "int dtype, rank;        /* ONNX TensorProto.DataType code, number of dims */");
	ew_line(w, "int64_t dims[%d];        /* [rank] */", RT_TF_MAXRANK);
	ew_close(w, arena_printf(E->A, " weight_desc[%d] = {", t->nweights));
	w->indent++;
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		char *dims = "";
		for (int i = 0; i < v->shape.rank; i++) {
			ASSERT(ir_dim_is_const(v->shape.d[i]));
			dims = arena_printf(E->A, "%s%s%lld", dims, i ? ", " : "", (long long)v->shape.d[i].k);
		}
		ew_line(w, "{%s, %d, %d, {%s}},", c_string(E->A, weight_name(E->A, v)), (int)v->dtype,
			v->shape.rank, dims);
	}
	w->indent--;
	ew_line(w, "};");
	ew_line(w, "%s", "");
	ew_line(w, "/* Opens the weights file and points the w_ members into it, after");
	ew_line(w, " * checking every tensor's name, dtype and shape. */");
	open_weights_fn(E);
	if (E->g->train) {
		/* a checkpoint also holds '@'-named tensors (optimiser state), ignored here */
		ew_line(w, "int nplain = 0;");
		ew_line(w, "for (int i = 0; i < m->wf.count; i++)");
		ew_line(w, "\tnplain += m->wf.t[i].name[0] != '@';");
		ew_line(w, "if (nplain != %d)", t->nweights);
	} else {
		ew_line(w, "if (m->wf.count != %d)", t->nweights);
	}
	ew_line(w, "\treturn RT_ERR_MISMATCH;");
	ew_line(w, "const void *p[%d];", t->nweights);
	ew_open(w, "for (int i = 0; i < %d; i++)", t->nweights);
	ew_line(w, "const struct weight_desc *wd = &weight_desc[i];");
	ew_line(w, "st = rt_tf_expect(&m->wf, wd->name, wd->dtype, wd->rank, wd->dims, &p[i]);");
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_close(w, "");
	for (int k = 0; k < t->nweights; k++)
		ew_line(w, "m->%s = p[%d];", t->wname[k], k);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

/* ---- the forward function ------------------------------------------------ */

static int is_elementwise(const ir_node *n)
{
	return ir_ops[n->op].kind == OPK_ELEM;
}

static char *marks_copy(arena *A, const char *m, size_t n)
{
	char *r = arena_alloc(A, n);
	memcpy(r, m, n);
	return r;
}

/* The use marks of the caller, kept while a function it calls is printed
 * (marks_push), and merged back with the callee's (marks_pop): the caller
 * passes what the callee uses. */
typedef struct marks {
	char sym[IR_MAX_SYMS];
	char *in, *out, *cst, *slot;
} marks;

static void marks_push(emit_ctx *E, marks *s)
{
	struct emit_tabs *t = E->tabs;
	memcpy(s->sym, t->used_sym, sizeof s->sym);
	s->in = marks_copy(E->A, t->used_in, (size_t)E->g->ninputs + 1);
	s->out = marks_copy(E->A, t->used_out, (size_t)E->g->noutputs + 1);
	s->cst = marks_copy(E->A, t->used_const, (size_t)t->nconsts + 1);
	s->slot = marks_copy(E->A, t->used_slot, (size_t)t->nslots + 1);
	tabs_clear_marks(E);
}

static void marks_pop(emit_ctx *E, const marks *s)
{
	struct emit_tabs *t = E->tabs;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		t->used_sym[i] |= s->sym[i];
	for (int k = 0; k <= E->g->ninputs; k++)
		t->used_in[k] |= s->in[k];
	for (int k = 0; k <= E->g->noutputs; k++)
		t->used_out[k] |= s->out[k];
	for (int k = 0; k <= t->nconsts; k++)
		t->used_const[k] |= s->cst[k];
	for (int k = 0; k <= t->nslots; k++)
		t->used_slot[k] |= s->slot[k];
}

/* The parameters of a function whose body text is `body` (printed since
 * marks_push) and the arguments its caller passes: the instance, then the
 * outputs, inputs, workspace parts, symbolic constants and dims that the
 * body reads, each with its shape (`callees`: the text of the functions the
 * body calls, printed with it).  The marks are of what was printed;
 * ew_prune may since have dropped a declaration that was the only reader of
 * an input or a workspace part, so they are narrowed to the body's tokens
 * first.  Workspace parts are named as the callee's scope (emit_slot_scope,
 * set by the caller before printing the body) names them in the
 * parameters, and as the caller's, root nodes [caller0, caller1), in the
 * arguments; the caller's scope is set again on return. */
static void callee_params(emit_ctx *E, const char *body, const char *callees, int caller0, int caller1,
			  char **params, char **args)
{
	struct emit_tabs *t = E->tabs;
	ir_graph *g = E->g;
	ew_tokens *read = ew_tokens_of(E->A, body);
	for (int k = 0; k < g->ninputs; k++)
		t->used_in[k] &= ew_tokens_has(read, arena_printf(E->A, "in_%d", k));
	for (int k = 0; k < g->noutputs; k++)
		t->used_out[k] &= ew_tokens_has(read, arena_printf(E->A, "out_%d", k));
	for (int s = 0; s < t->nslots; s++)
		t->used_slot[s] &= ew_tokens_has(read, emit_slot_name(E, s));
	/* a file-scope constant a function that the body calls reads is read */
	ew_tokens *called = ew_tokens_of(E->A, callees ? callees : "");
	for (int k = 0; k < t->nconsts; k++)
		t->used_const[k] &= ew_tokens_has(read, arena_printf(E->A, "c_%d", k)) ||
				    (!t->consts[k]->sym && ew_tokens_has(called, arena_printf(E->A, "c_%d", k)));
	for (int i = 0; i < g->nsyms; i++)
		t->used_sym[i] &= ew_tokens_has(read, arena_printf(E->A, "d_%s", t->sym[i]));
	*params = arena_printf(E->A, "%s *m", t->name);
	*args = "m";
	for (int in = 0; in <= 1; in++)        /* outputs first, then inputs */
		for (int k = 0; k < (in ? g->ninputs : g->noutputs); k++) {
			const ir_value *v = (in ? g->inputs : g->outputs)[k];
			const char *pn = arena_printf(E->A, "%s_%d", in ? "in" : "out", k);
			if (!(in ? t->used_in : t->used_out)[k])
				continue;
			*params = arena_printf(E->A, "%s,\n\t\t%s%s *%s /* %s %s */", *params, in ? "const " : "",
					       ctype(v), pn, cmt(E->A, v->name), shape_comment(E, v));
			*args = arena_printf(E->A, "%s, %s", *args, pn);
		}
	for (int s = 0; s < t->nslots; s++)
		if (t->used_slot[s]) {
			ir_dim sz;
			ir_dtype dt = DT_UNDEF;
			int found = ir_slot_info(g, s, &sz, &dt);
			ASSERT(found);
			(void)sz;
			*params = arena_printf(E->A, "%s,\n\t\t%s *%s /* %s */", *params, ir_dtype_ctype(dt),
					       emit_slot_name(E, s), emit_slot_note(E, s));
		}
	emit_slot_scope(E, caller0, caller1);   /* the caller's names of what it passes */
	for (int s = 0; s < t->nslots; s++)
		if (t->used_slot[s])
			*args = arena_printf(E->A, "%s, %s", *args, emit_slot_name(E, s));
	for (int k = 0; k < t->nconsts; k++)
		if (t->used_const[k] && t->consts[k]->sym) {
			*params = arena_printf(E->A, "%s,\n\t\tconst %s *c_%d /* %s */", *params, ctype(t->consts[k]),
					       k, cmt(E->A, t->consts[k]->name));
			*args = arena_printf(E->A, "%s, c_%d", *args, k);
		}
	for (int i = 0; i < g->nsyms; i++)
		if (t->used_sym[i]) {
			*params = arena_printf(E->A, "%s,\n\t\tconst int64_t d_%s", *params, t->sym[i]);
			*args = arena_printf(E->A, "%s, d_%s", *args, t->sym[i]);
		}
}

/* A recurrence of the root graph as a function of its own, rec_<name>(),
 * that forward (or, for a backward recurrence, backward) calls: its
 * parameters are callee_params' (the use marks of its text alone).
 * Compiled once per x86-64 level like forward (RT_CLONES; inlining would
 * not carry the level into its OpenMP regions, which GCC outlines first).
 * The function text goes to t->rec_fns; the caller's marks get the
 * recurrence's, since the caller passes them. */
static void print_rec_function(emit_ctx *E, ir_node *n)
{
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	marks saved;
	marks_push(E, &saved);
	const char *id = c_ident(E->A, n->name);
	const char *fn = arena_printf(E->A, "rec_%s", id[0] == '_' ? id + 1 : id);
	const char *caller = t->fn_name;
	t->fn_name = fn;
	int at = 0, caller0 = t->scope0, caller1 = t->scope1;
	while (E->g->nodes[at] != n)
		at++;
	emit_slot_scope(E, at, at + 1);         /* workspace parts named for this function */
	ew_capture c;
	ew_capture_begin(w, &c, 1);
	emit_recurrence(E, n);
	char *body = ew_capture_end(w, &c, E->A);
	t->fn_name = caller;
	char *params, *args;
	callee_params(E, body, NULL, caller0, caller1, &params, &args);
	ew_capture_begin(w, &c, 0);
	ew_line(w, "/* %s: the time loop of recurrence '%s'%s%s, called once by %s. */", fn,
		cmt(E->A, n->name), n->origin ? " from " : "", n->origin ? cmt(E->A, n->origin) : "", caller);
	ew_line(w, "RT_CLONES /* a copy per x86-64 level, like forward (cellrt.h) */");
	fn_open(w, "static int %s(%s)", fn, params);
	fputs(body, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	char *text = ew_capture_end(w, &c, E->A);
	t->rec_fns = arena_printf(E->A, "%s%s", t->rec_fns ? t->rec_fns : "", text);
	marks_pop(E, &saved);
	ew_open(w, "%s", "");
	ew_line(w, "const int rs = %s(%s);", fn, args);
	ew_line(w, "if (rs != RT_OK)");
	ew_line(w, "\treturn rs;");
	ew_close(w, "");
}

/* The root graph's nodes [from, to), each node once; consecutive
 * element-wise nodes of one fusion group are printed together. */
static void print_nodes(emit_ctx *E, int from, int to)
{
	ir_graph *g = E->g;
	for (int i = from; i < to;) {
		ir_node *n = g->nodes[i];
		if (n->op == OP_RECURRENCE) {
			print_rec_function(E, n);
			i++;
			continue;
		}
		if (ir_attr_int(n, "per_step", 0)) {
			ew_line(E->w, "/* %s: an input projection, computed step by step inside the "
				"recurrence that reads it */", ir_op_name(n->op));
			i++;
			continue;
		}
		int j = i + 1;
		if (n->group && is_elementwise(n))
			while (j < to && g->nodes[j]->group == n->group && is_elementwise(g->nodes[j]))
				j++;
		if (j - i > 1)
			emit_group(E, &g->nodes[i], j - i);
		else
			emit_node(E, n);
		i = j;
	}
}

/* Whether output k is a gradient of a --train build (backward writes it). */
static int is_grad_output(const ir_graph *g, int k)
{
	return g->train && k > g->train->loss_output_index;
}

/* Graph outputs not written by their producer: constants, weights, inputs
 * passed through, and a value listed twice; the model's (bwd 0) or the
 * gradients (bwd 1). */
static void print_output_copies(emit_ctx *E, int bwd)
{
	ir_graph *g = E->g;
	for (int k = 0; k < g->noutputs; k++) {
		const ir_value *v = g->outputs[k];
		if (is_grad_output(g, k) != bwd)
			continue;
		int first = find_index((const ir_value *const *)g->outputs, g->noutputs, v);
		const char *src;
		if (first != k)
			src = arena_printf(E->A, "out_%d", first);
		else if (v->kind == VAL_TEMP && v->graph == g)
			continue;
		else
			src = emit_ref(E, v);
		E->tabs->used_out[k] = 1;
		ew_line(E->w, "/* output %d '%s' %s is %s */", k, cmt(E->A, v->name), shape_comment(E, v),
			first != k ? "an output already" : "not computed at run time");
		ew_line(E->w, "memcpy(out_%d, %s, (size_t)%s * sizeof(%s));", k, src, emit_numel(E, &v->shape),
			ctype(v));
	}
}

/* --train: the root graph's backward part (from train->bwd_start, node
 * index `from`) as the function backward(), printed into t->backward, and
 * its call, which forward makes unless NAME_set_forward_only(m, 1) said
 * not to.  Its parameters are callee_params': what forward left for it in
 * the workspace (saved states, stacked step values) arrives as workspace
 * parts, the gradients it writes as outputs. */
static void print_backward(emit_ctx *E, int from)
{
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	marks saved;
	marks_push(E, &saved);
	const char *caller = t->fn_name;
	t->fn_name = "backward";
	size_t recs0 = t->rec_fns ? strlen(t->rec_fns) : 0;
	int caller0 = t->scope0, caller1 = t->scope1;
	emit_slot_scope(E, from, E->g->nnodes); /* workspace parts named for backward */
	ew_capture c;
	ew_capture_begin(w, &c, 1);
	print_nodes(E, from, E->g->nnodes);
	print_output_copies(E, 1);
	char *body = ew_capture_end(w, &c, E->A);
	t->fn_name = caller;
	char *params, *args;
	callee_params(E, body, t->rec_fns ? t->rec_fns + recs0 : NULL, caller0, caller1, &params, &args);
	ew_capture_begin(w, &c, 0);
	ew_line(w, "/* The gradients of the loss by backpropagation (through time in the");
	ew_line(w, " * rec_*_backward functions), from what forward left in the workspace and");
	ew_line(w, " * the instance; forward calls it unless %s_set_forward_only(m, 1). */", t->name);
	ew_line(w, "RT_CLONES /* a copy per x86-64 level, like forward (cellrt.h) */");
	fn_open(w, "static int backward(%s)", params);
	fputs(body, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	t->backward = ew_capture_end(w, &c, E->A);
	marks_pop(E, &saved);
	ew_line(w, "/* --train: the gradients (skipped after %s_set_forward_only(m, 1)) */", t->name);
	ew_open(w, "if (!m->fwd_only)");
	ew_line(w, "const int rs = backward(%s);", args);
	ew_line(w, "if (rs != RT_OK)");
	ew_line(w, "\treturn rs;");
	ew_close(w, "");
}

/* Locals for the symbolic constants used (Shape results of symbolic dims). */
static void print_sym_consts(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	for (int k = 0; k < t->nconsts; k++) {
		const ir_value *v = t->consts[k];
		if (!t->used_const[k] || !v->sym)
			continue;
		int64_t n = ir_shape_const_numel(&v->shape);
		char *s = "";
		for (int64_t i = 0; i < n; i++)
			s = arena_printf(E->A, "%s%s%s", s, i ? ", " : "", emit_dim(E, v->sym[i]));
		ew_line(E->w, "const %s c_%d[%lld] = {%s}; /* %s */", ctype(v), k, (long long)(n ? n : 1),
			n ? s : "0", cmt(E->A, v->name));
	}
}

static void print_workspace(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	int any = 0;
	for (int s = 0; s < t->nslots; s++) {
		if (!t->used_slot[s])
			continue;
		ir_dim n;
		ir_dtype dt = DT_UNDEF;
		int found = ir_slot_info(E->g, s, &n, &dt);
		ASSERT(found);
		if (!any) {
			ew_line(E->w, "/* workspace: one allocation, a 64-byte aligned part per buffer */");
			ew_line(E->w, "size_t ws_need = 0;");
		}
		any = 1;
		ew_line(E->w, "const size_t at_%d = ws_need;", s);
		ew_line(E->w, "ws_need += ALIGN64((size_t)%s * sizeof(%s));", emit_dim(E, n), ir_dtype_ctype(dt));
	}
	if (!any)
		return;
	t->ws_used = 1;
	ew_line(E->w, "int st = ws_reserve(m, ws_need);");
	ew_line(E->w, "if (st != RT_OK)");
	ew_line(E->w, "\treturn st;");
	for (int s = 0; s < t->nslots; s++) {
		if (!t->used_slot[s])
			continue;
		ir_dim n;
		ir_dtype dt = DT_UNDEF;
		ir_slot_info(E->g, s, &n, &dt);
		ew_line(E->w, "%s *const %s = (%s *)(m->ws + at_%d); /* %s */", ir_dtype_ctype(dt),
			emit_slot_name(E, s), ir_dtype_ctype(dt), s, emit_slot_note(E, s));
	}
}

/* ---- the inputs' and outputs' names in NAME.c ------------------------------
 *
 * The functions are printed with placeholders in_<k> / out_<k> (emit_ref);
 * name_io then gives each input and output the name its parameter has in
 * NAME.h (io_param_name: the tensor's name as an identifier, x, grad_h1_W_h)
 * where that cannot mean anything else in the functions that take it, and
 * rename_io writes those names into their text.  A name keeps in_<k> /
 * out_<k> when it has a prefix of the emitted code's own names (ws_, d_,
 * c_, w_, st_, rec_, g_, ...), is the model's name or starts with it, is one
 * of the names the API functions declare, or is read anywhere in forward,
 * backward or a rec_<name> function already (a kernel's local, such as a
 * product's `x`, or a libm function): so no parameter shadows a local (the
 * code stays clean under -Wshadow) and no kernel meets a parameter where
 * it meant its own name. */

/* Whether C text reads identifier `name` outside comments and strings
 * (a member after `.` or `->` aside). */
static int text_reads(const char *text, const char *name)
{
	size_t nl = strlen(name);
	int member = 0;         /* the last token was `.` or `->` */
	for (const char *p = text; *p;) {
		if (p[0] == '/' && p[1] == '*') {
			const char *q = strstr(p + 2, "*/");
			p = q ? q + 2 : p + strlen(p);
		} else if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
		} else if (*p == '"' || *p == '\'') {
			char qc = *p++;
			while (*p && *p != qc)
				p += p[0] == '\\' && p[1] ? 2 : 1;
			if (*p)
				p++;
			member = 0;
		} else if (*p >= '0' && *p <= '9') {
			while (ew_ident_char(*p) || *p == '.')
				p++;
			member = 0;
		} else if (ew_ident_char(*p)) {
			const char *u = p;
			while (ew_ident_char(*u))
				u++;
			if ((size_t)(u - p) == nl && !memcmp(p, name, nl) && !member)
				return 1;
			member = 0;
			p = u;
		} else {
			if (*p == '.' || (p[0] == '-' && p[1] == '>'))
				member = 1, p += *p == '-';
			else if (*p != ' ' && *p != '\t' && *p != '\n')
				member = 0;
			p++;
		}
	}
	return 0;
}

/* Decides t->in_name / t->out_name against the texts of the functions that
 * take them. */
static void name_io(emit_ctx *E, const char *const *texts, int ntexts)
{
	struct emit_tabs *t = E->tabs;
	ir_graph *g = E->g;
	static const char *const prefixes[] = {"in_", "out_", "ws_", "at_", "d_", "c_", "w_", "st_", "rec_", "g_"};
	static const char *const api_locals[] = {"st", "rs", "one", "in", "out", "k", "count", "ws_need",
						 "forward", "backward", "load_weights", "ws_reserve", "weight_desc"};
	t->in_name = arena_array(E->A, (size_t)g->ninputs + 1, sizeof *t->in_name);
	t->out_name = arena_array(E->A, (size_t)g->noutputs + 1, sizeof *t->out_name);
	size_t mlen = strlen(t->name);
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			const char *ph = arena_printf(E->A, "%s_%d", out ? "out" : "in", k);
			const char *nm = io_param_name(E, out, k);
			int ok = strcmp(nm, ph) != 0 && !(strncmp(nm, t->name, mlen) == 0 && (!nm[mlen] || nm[mlen] == '_'));
			for (size_t i = 0; ok && i < COUNTOF(prefixes); i++)
				ok = strncmp(nm, prefixes[i], strlen(prefixes[i])) != 0;
			for (size_t i = 0; ok && i < COUNTOF(api_locals); i++)
				ok = strcmp(nm, api_locals[i]) != 0;
			if (ok && nm[0] == 'n' && nm[1])       /* NAME_stream's n<k> */
				ok = strspn(nm + 1, "0123456789") != strlen(nm + 1);
			for (int i = 0; ok && i < ntexts; i++)
				ok = !text_reads(texts[i], nm);
			(out ? t->out_name : t->in_name)[k] = ok ? nm : ph;
		}
}

/* Text with the placeholders in_<k> / out_<k> (whole C tokens outside
 * comments and strings) replaced by t->in_name / t->out_name. */
static char *rename_io(emit_ctx *E, const char *text)
{
	struct emit_tabs *t = E->tabs;
	if (!text)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		arena_oom(NULL, 0, "an output buffer");
	int in_comment = 0;
	for (const char *ln = text; *ln;) {
		const char *e = strchr(ln, '\n');
		e = e ? e + 1 : ln + strlen(ln);
		const char *s = ln, *from = ln, *id;
		size_t n;
		while ((id = next_ident(&s, e, &n, &in_comment))) {
			int out = n > 4 && !strncmp(id, "out_", 4), in = !out && n > 3 && !strncmp(id, "in_", 3);
			const char *num = id + (out ? 4 : 3);
			if (!(in || out) || strspn(num, "0123456789") != n - (size_t)(num - id))
				continue;
			int k = atoi(num);
			if (k >= (out ? E->g->noutputs : E->g->ninputs))
				continue;
			fwrite(from, 1, (size_t)(id - from), f);
			fputs((out ? t->out_name : t->in_name)[k], f);
			from = id + n;
		}
		fwrite(from, 1, (size_t)(e - from), f);
		ln = e;
	}
	fclose(f);
	char *r = arena_strndup(E->A, buf ? buf : "", len);
	free(buf);
	return r;
}

static char *prepare_forward(emit_ctx *E)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	int nb = g->nnodes;             /* the first node of the backward part */
	for (int i = 0; g->train && i < g->nnodes; i++)
		if (g->nodes[i] == g->train->bwd_start) {
			nb = i;
			break;
		}
	tabs_clear_marks(E);
	t->fn_name = "forward";
	emit_slot_scope(E, 0, nb);              /* workspace parts named for forward */
	ew_capture c;
	ew_capture_begin(w, &c, 1);
	print_nodes(E, 0, nb);
	print_output_copies(E, 0);
	if (nb < g->nnodes)
		print_backward(E, nb);
	char *body = ew_capture_end(w, &c, E->A);
	ew_capture_begin(w, &c, 1);
	print_sym_consts(E);
	char *consts = ew_capture_end(w, &c, E->A);
	ew_capture_begin(w, &c, 1);
	print_workspace(E);
	char *ws = ew_capture_end(w, &c, E->A);

	ew_capture_begin(w, &c, 0);
	ew_line(w, "/* The model once through, then (--train) backward: inputs and outputs as");
	ew_line(w, " * %s.h names them, all shapes from the dims in *d. */", t->name);
	ew_line(w, "RT_CLONES /* a copy per x86-64 level, chosen at load time (cellrt.h) */");
	fn_open(w, "static int forward(%s)", io_params(E, 0, 0));
	ew_line(w, "if (!m || !d)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	emit_dims_check(E, E->o->no_malloc);
	/* a train build's gradient outputs may be NULL when only the forward runs */
	for (int bwd = 0; bwd <= 1; bwd++) {
		char *nulls = "";
		int cnt = 0;
		for (int out = 0; out <= 1; out++)
			for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++)
				if ((out && is_grad_output(g, k)) == bwd)
					nulls = arena_printf(E->A, "%s%s%s!%s_%d", nulls, !cnt ? "" : cnt % 4 ? " || " : " ||\n\t    ",
							     bwd && !cnt ? "(" : "", out ? "out" : "in", k), cnt++;
		if (cnt && bwd)
			ew_line(w, "if (!m->fwd_only && %s))", nulls);
		else if (cnt)
			ew_line(w, "if (%s)", nulls);
		if (cnt)
			ew_line(w, "\treturn RT_ERR_ARG;");
	}
	emit_dims_locals(E);
	fputs(consts, w->f);
	fputs(ws, w->f);
	for (int k = 0; k < g->ninputs; k++)
		if (!t->used_in[k])
			ew_line(w, "(void)in_%d; /* '%s' is not needed for the outputs */", k,
				cmt(E->A, g->inputs[k]->name));
	ew_line(w, "%s", "");
	char *head = ew_capture_end(w, &c, E->A);
	ew_capture_begin(w, &c, 1);
	fputs(body, w->f);
	ew_line(w, "m->started = 1;");
	ew_line(w, "return RT_OK;");
	w->indent = 0;
	ew_line(w, "}");
	body = ew_capture_end(w, &c, E->A);

	const char *texts[] = {t->rec_fns ? t->rec_fns : "", t->backward ? t->backward : "", head, body};
	name_io(E, texts, (int)COUNTOF(texts));
	t->rec_fns = rename_io(E, t->rec_fns);
	t->backward = rename_io(E, t->backward);
	return arena_printf(E->A, "%s%s", rename_io(E, head), rename_io(E, body));
}

/* ---- the public API around forward --------------------------------------- */

static void api_run(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	fn_open(w, "int %s_run(%s)", n, io_params(E, 0, 0));
	ew_line(w, "int st = %s_reset(m);", n);
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_line(w, "return forward(%s);", io_args(E, "d"));
	ew_close(w, "");
	if (E->tabs->time_sym < 0)
		return;
	ew_line(w, "%s", "");
	fn_open(w, "int %s_step(%s)", n, io_params(E, 0, 0));
	ew_line(w, "if (!m || !d)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "%s_dims one = *d;", n);
	ew_line(w, "one.%s = 1;", E->tabs->sym[E->tabs->time_sym]);
	ew_line(w, "return forward(%s);", io_args(E, "&one"));
	ew_close(w, "");
}

static void api_io_tables(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew *w = E->w;
	const char *n = E->tabs->name;
	for (int out = 0; out <= 1; out++) {
		int cnt = out ? g->noutputs : g->ninputs;
		ir_value **vs = out ? g->outputs : g->inputs;
		const char *tag = out ? "outputs" : "inputs";
		char *names = "", *dts = "", *ranks = "";
		for (int k = 0; k < cnt; k++) {
			names = arena_printf(E->A, "%s%s%s", names, k ? ", " : "", c_string(E->A, vs[k]->name));
			dts = arena_printf(E->A, "%s%s%d", dts, k ? ", " : "", (int)vs[k]->dtype);
			ranks = arena_printf(E->A, "%s%s%d", ranks, k ? ", " : "", vs[k]->shape.rank);
		}
		if (cnt == 0)
			names = "NULL", dts = ranks = "-1";
		ew_line(w, "static const char *const %s_name[] = {%s};", tag, names);
		ew_line(w, "static const int %s_dtype[] = {%s};", tag, dts);
		ew_line(w, "static const int %s_rank[] = {%s};", tag, ranks);
	}
	ew_line(w, "%s", "");
	static const struct { const char *fn, *type, *tab, *none; } q[] = {
		{"io_name", "const char *", "name", "NULL"},
		{"io_dtype", "int ", "dtype", "-1"},
		{"io_rank", "int ", "rank", "-1"},
	};
	for (size_t i = 0; i < COUNTOF(q); i++) {
		fn_open(w, "%s%s_%s(int is_output, int k)", q[i].type, n, q[i].fn);
		ew_line(w, "if (k < 0 || k >= (is_output ? %d : %d))", g->noutputs, g->ninputs);
		ew_line(w, "\treturn %s;", q[i].none);
		ew_line(w, "return is_output ? outputs_%s[k] : inputs_%s[k];", q[i].tab, q[i].tab);
		ew_close(w, "");
		ew_line(w, "%s", "");
	}
}

/* The symbol read off dim i of input k: the first input dim that is the
 * symbol alone; -1 if that dim binds none. */
static int binds_symbol(const ir_graph *g, int k, int i)
{
	for (int sy = 0; sy < g->nsyms; sy++)
		for (int kk = 0; kk < g->ninputs && ir_sym_free(g, sy); kk++) {
			const ir_shape *s = &g->inputs[kk]->shape;
			int ii;
			for (ii = 0; ii < s->rank && !ir_dim_eq(s->d[ii], ir_dim_sym(sy)); ii++)
				;
			if (ii < s->rank) {
				if (kk == k && ii == i)
					return sy;
				break;
			}
		}
	return -1;
}

/* The symbols are read off the input dims that are one plain symbol; then
 * every other input dim is checked against its expression. */
static void api_bind_dims(emit_ctx *E)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	ew_capture c;
	tabs_clear_marks(E);
	ew_capture_begin(w, &c, 1);
	for (int k = 0; k < g->ninputs; k++) {
		const ir_shape *s = &g->inputs[k]->shape;
		for (int i = 0; i < s->rank; i++) {
			if (binds_symbol(g, k, i) >= 0)
				continue;       /* the dim a symbol is read from */
			ew_line(w, "if (input_dims[%d][%d] != %s)", k, i, emit_dim(E, s->d[i]));
			ew_line(w, "\treturn RT_ERR_SHAPE;");
		}
	}
	char *checks = ew_capture_end(w, &c, E->A);

	fn_open(w, "int %s_bind_dims(const int64_t *const *input_dims, %s_dims *d)", t->name, t->name);
	if (!g->ninputs)
		ew_line(w, "(void)input_dims; /* the model has no inputs */");
	ew_line(w, "if (!d%s)", g->ninputs ? " || !input_dims" : "");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "memset(d, 0, sizeof *d);");
	for (int k = 0; k < g->ninputs; k++) {
		ew_line(w, "if (!input_dims[%d])", k);
		ew_line(w, "\treturn RT_ERR_ARG;");
	}
	for (int sy = 0; sy < g->nsyms; sy++) {
		int found = !ir_sym_free(g, sy);        /* derived: computed */
		for (int k = 0; k < g->ninputs && !found; k++) {
			const ir_shape *s = &g->inputs[k]->shape;
			for (int i = 0; i < s->rank && !found; i++)
				if (ir_dim_eq(s->d[i], ir_dim_sym(sy))) {
					ew_line(w, "d->%s = input_dims[%d][%d];", t->sym[sy], k, i);
					found = 1;
				}
		}
		if (!found) {
			ew_line(w, "/* symbol '%s' is no input dim by itself: the caller must set it */",
				cmt(E->A, g->syms[sy]));
			ew_line(w, "return RT_ERR_SHAPE;");
			ew_close(w, "");
			return;
		}
	}
	emit_dims_check(E, 0);
	emit_dims_locals(E);
	fputs(checks, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

static void api_io_shape(emit_ctx *E)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	ew_capture c;
	tabs_clear_marks(E);
	ew_capture_begin(w, &c, 1);
	for (int out = 0; out <= 1; out++) {
		int cnt = out ? g->noutputs : g->ninputs;
		ir_value **vs = out ? g->outputs : g->inputs;
		for (int k = 0; k < cnt; k++) {
			const ir_shape *s = &vs[k]->shape;
			if (s->rank == 0)
				continue;
			ew_open(w, "if (is_output == %d && k == %d)", out, k);
			for (int i = 0; i < s->rank; i++)
				ew_line(w, "dims[%d] = %s;", i, emit_dim(E, s->d[i]));
			ew_close(w, "");
		}
	}
	char *body = ew_capture_end(w, &c, E->A);

	fn_open(w, "int %s_io_shape(const %s_dims *d, int is_output, int k, int64_t *dims)", t->name, t->name);
	ew_line(w, "if (!d || %s_io_rank(is_output, k) < 0 || (!dims && %s_io_rank(is_output, k) > 0))",
		t->name, t->name);
	ew_line(w, "\treturn RT_ERR_ARG;");
	emit_dims_check(E, 0);
	emit_dims_locals(E);
	fputs(body, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

/* io_shape, then the length the last run found on each data-dependent axis. */
static void api_output_dims(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew *w = E->w;
	const char *n = E->tabs->name;
	fn_open(w, "int %s_output_dims(const %s *m, const %s_dims *d, int k, int64_t *dims)", n, n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "int st = %s_io_shape(d, 1, k, dims);", n);
	for (int k = 0; k < g->noutputs; k++) {
		const ir_value *v = g->outputs[k];
		if (!v->data_dep || !v->producer)
			continue;
		ew_line(w, "if (st == RT_OK && k == %d) /* '%s': axis %d at most %s */", k, cmt(E->A, v->name),
			v->dd_axis, cmt(E->A, ir_dim_str(E->A, g, v->shape.d[v->dd_axis])));
		ew_line(w, "\tdims[%d] = m->dd_len[%d];", v->dd_axis, emit_dd_slot(g, v->producer));
	}
	ew_line(w, "return st;");
	ew_close(w, "");
}

static void api_run_generic(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew *w = E->w;
	const char *n = E->tabs->name;
	char *args = "m, d";
	for (int k = 0; k < g->ninputs; k++)
		args = arena_printf(E->A, "%s,\n\t\t\t(const %s *)in[%d]", args, ctype(g->inputs[k]), k);
	for (int k = 0; k < g->noutputs; k++)
		args = arena_printf(E->A, "%s,\n\t\t\t(%s *)out[%d]", args, ctype(g->outputs[k]), k);
	fn_open(w, "int %s_run_generic(%s *m, const %s_dims *d, const void *const *in, void *const *out)", n, n, n);
	if (g->ninputs == 0)
		ew_line(w, "(void)in;");
	if (g->noutputs == 0)
		ew_line(w, "(void)out;");
	if (g->ninputs || g->noutputs) {
		ew_line(w, "if (%s)", g->ninputs && g->noutputs ? "!in || !out" : g->ninputs ? "!in" : "!out");
		ew_line(w, "\treturn RT_ERR_ARG;");
	}
	ew_line(w, "return %s_run(%s);", n, args);
	ew_close(w, "");
}

static void blk_api(emit_ctx *E)
{
	api_run(E);
	if (E->tabs->ncarry)
		api_stream(E);
	if (rng_count(E->g)) {
		ew_line(E->w, "%s", "");
		api_seed(E);
	}
	ew_line(E->w, "%s", "");
	ew_line(E->w, "/* ---- generic interface ---- */");
	ew_line(E->w, "%s", "");
	api_io_tables(E);
	api_bind_dims(E);
	ew_line(E->w, "%s", "");
	api_io_shape(E);
	ew_line(E->w, "%s", "");
	api_output_dims(E);
	ew_line(E->w, "%s", "");
	api_run_generic(E);
	if (E->g->train)
		train_api(E);
}

/* The workspace allocator, when the forward function uses a slot. */
static void blk_ws_reserve(emit_ctx *E)
{
	ew *w = E->w;
	if (!E->tabs->ws_used) {
		ew_line(w, "/* (the model needs no workspace) */");
		return;
	}
	if (E->o->no_malloc) {
		ew_line(w, "/* The workspace is a part of the arena, sized for the largest dims, which");
		ew_line(w, " * forward has checked: this only guards that promise. */");
		fn_open(w, "static int ws_reserve(%s *m, size_t need)", E->tabs->name);
		ew_line(w, "return need <= m->ws_size ? RT_OK : RT_ERR_SHAPE;");
		ew_close(w, "");
		return;
	}
	ew_line(w, "/* Makes sure the workspace holds at least `need` bytes; its contents are");
	ew_line(w, " * scratch, so growing does not copy them. */");
	fn_open(w, "static int ws_reserve(%s *m, size_t need)", E->tabs->name);
	ew_line(w, "if (need <= m->ws_size)");
	ew_line(w, "\treturn RT_OK;");
	ew_line(w, "free(m->ws);");
	ew_line(w, "m->ws_size = 0;");
	ew_line(w, "m->ws = aligned_alloc(64, ALIGN64(need));");
	ew_line(w, "if (!m->ws)");
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	ew_line(w, "m->ws_size = ALIGN64(need);");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

static void blk_forward(emit_ctx *E)
{
	if (E->tabs->rec_fns)
		fputs(E->tabs->rec_fns, E->w->f);
	if (E->tabs->backward)
		fputs(E->tabs->backward, E->w->f);
	fputs(E->tabs->forward, E->w->f);
}

/* ---- memory: allocation or the caller's arena ---------------------------- */

static int64_t align64(int64_t n) { return (n + 63) & ~(int64_t)63; }

/* Bytes of state k of recurrence n at the largest dims; -1 on overflow. */
static int64_t state_max_bytes(emit_ctx *E, const ir_node *n, int k)
{
	int nseq = (int)ir_attr_int(n, "n_seq", 0);
	int64_t c = dim_at_max(E, ir_shape_numel(&n->body->inputs[nseq + k]->shape));
	return c < 0 || c > INT64_MAX / 8 ? -1 : align64(4 * c + 1);
}

/* Bytes of one buffer of carried state k at the largest dims; -1 on overflow. */
static int64_t carry_max_bytes(emit_ctx *E, int k)
{
	const ir_value *v = E->g->inputs[E->tabs->carry_in[k]];
	int64_t c = dim_at_max(E, ir_shape_numel(&v->shape));
	return c < 0 || c > INT64_MAX / 16 ? -1 : align64((int64_t)ir_dtype_size(v->dtype) * c + 1);
}

/* An upper bound of sizeof(struct NAME) on common ABIs (checked by a static
 * assertion in NAME.c): 8 bytes per pointer, size_t or int. */
static int64_t struct_bytes(emit_ctx *E)
{
	int64_t b = 32 + 24 + 8 * E->tabs->nweights + 32 * E->tabs->ncarry + 8;
	if (!E->o->embed_weights)
		b += 32 + (E->o->no_malloc ? 96 * (E->tabs->nweights ? E->tabs->nweights : 1) : 0);
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			b += 16 * ir_attr_int(E->g->nodes[i], "n_state", 0);
	return align64(b + 64);
}

static int64_t arena_bytes(emit_ctx *E)
{
	int64_t b = struct_bytes(E) + align64(E->tabs->wfile_bytes) + E->tabs->ws_max;
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *n = E->g->nodes[i];
		if (n->op == OP_RECURRENCE)
			for (int k = 0; k < ir_attr_int(n, "n_state", 0); k++)
				b += state_max_bytes(E, n, k);
	}
	for (int k = 0; k < E->tabs->ncarry; k++)
		b += 2 * carry_max_bytes(E, k);
	return b;
}

/* Workspace bytes at the largest dims: the slots forward uses, laid out as
 * print_workspace lays them out.  Returns the number of errors. */
static int compute_ws_max(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	t->ws_max = 0;
	for (int sl = 0; sl < t->nslots; sl++) {
		if (!t->used_slot[sl])
			continue;
		ir_dim n;
		ir_dtype dt = DT_UNDEF;
		ir_slot_info(E->g, sl, &n, &dt);
		int64_t c = dim_at_max(E, n);
		if (c < 0 || c > INT64_MAX / 16 || t->ws_max > INT64_MAX / 4) {
			diag_error(E->D, "--no-malloc: the workspace for the largest dims does not fit in 64 bits");
			return 1;
		}
		t->ws_max += align64(c * (int64_t)ir_dtype_size(dt));
	}
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *n = E->g->nodes[i];
		if (n->op == OP_RECURRENCE)
			for (int k = 0; k < ir_attr_int(n, "n_state", 0); k++)
				if (state_max_bytes(E, n, k) < 0) {
					diag_error(E->D, "--no-malloc: a recurrent state for the largest dims "
						      "does not fit in 64 bits");
					return 1;
				}
	}
	return 0;
}

static void create_malloc(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	int emb = E->o->embed_weights;
	fn_open(w, "int %s_create(%s **mp, const char *weights_path)", n, n);
	ew_line(w, "if (!mp)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "*mp = NULL;");
	if (emb) {
		ew_line(w, "if (weights_path)");
		ew_line(w, "\treturn RT_ERR_ARG; /* the weights are embedded: pass NULL */");
	}
	ew_line(w, "%s *m = calloc(1, sizeof *m);", n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	ew_line(w, "int st = load_weights(m%s);", emb ? "" : ", weights_path");
	ew_line(w, "if (st == RT_OK)");
	ew_line(w, "\tst = %s_reset(m);", n);
	if (rng_count(E->g)) {
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\tst = %s_seed(m, 0); /* the default run-time seed */", n);
	}
	ew_open(w, "if (st != RT_OK)");
	ew_line(w, "%s_destroy(m);", n);
	ew_line(w, "return st;");
	ew_close(w, "");
	ew_line(w, "*mp = m;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	fn_open(w, "void %s_destroy(%s *m)", n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn;");
	blk_destroy(E);
	if (!emb)
		ew_line(w, "rt_tf_close(&m->wf);");
	ew_line(w, "free(m->ws);");
	ew_line(w, "free(m);");
	ew_close(w, "");
}

/* --no-malloc: the instance, the weights file's image, the recurrent states
 * and the workspace are consecutive 64-byte aligned parts of the arena. */
static void create_arena(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	const char *n = t->name;
	int emb = E->o->embed_weights;
	ew_line(w, "/* Arena layout for the largest dims (%s.h): the instance, %sthe recurrent", n,
		emb ? "" : "the weights file, ");
	ew_line(w, " * states and the workspace, each part 64-byte aligned. */");
	ew_line(w, "#define STRUCT_BYTES ((size_t)%lld)", (long long)struct_bytes(E));
	if (!emb)
		ew_line(w, "#define WEIGHTS_BYTES ((size_t)%lld) /* %s.weights, %lld bytes */",
			(long long)align64(t->wfile_bytes), n, (long long)t->wfile_bytes);
	ew_line(w, "#define WS_BYTES ((size_t)%lld)", (long long)t->ws_max);
	ew_line(w, "_Static_assert(sizeof(struct %s) <= STRUCT_BYTES, \"the instance outgrows its arena part\");", n);
	ew_line(w, "%s", "");
	fn_open(w, "int %s_create_in(%s **mp, void *arena, size_t arena_bytes, const char *weights_path)", n, n);
	ew_line(w, "if (!mp)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "*mp = NULL;");
	ew_line(w, "if (!arena || (uintptr_t)arena %% 64 != 0)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "if (arena_bytes < %s_ARENA_BYTES)", n);
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	if (emb) {
		ew_line(w, "if (weights_path)");
		ew_line(w, "\treturn RT_ERR_ARG; /* the weights are embedded: pass NULL */");
	}
	ew_line(w, "%s *m = arena; /* the instance comes first */", n);
	ew_line(w, "unsigned char *p = (unsigned char *)arena;");
	ew_line(w, "memset(m, 0, sizeof *m);");
	ew_line(w, "p += STRUCT_BYTES;");
	if (emb) {
		ew_line(w, "int st = load_weights(m);");
	} else {
		ew_line(w, "int st = load_weights(m, weights_path, p, WEIGHTS_BYTES);");
		ew_line(w, "p += WEIGHTS_BYTES;");
	}
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *nd = E->g->nodes[i];
		if (nd->op != OP_RECURRENCE)
			continue;
		for (int k = 0; k < ir_attr_int(nd, "n_state", 0); k++) {
			ew_line(w, "m->%s = (float *)(void *)p;", emit_state_member(E, nd, k));
			ew_line(w, "p += %lld;", (long long)state_max_bytes(E, nd, k));
		}
	}
	for (int k = 0; k < t->ncarry; k++)
		for (int b = 0; b < 2; b++) {
			ew_line(w, "m->carry%d[%d] = (void *)p;", k, b);
			ew_line(w, "p += %lld;", (long long)carry_max_bytes(E, k));
		}
	ew_line(w, "m->ws = p;");
	ew_line(w, "m->ws_size = WS_BYTES;");
	ew_line(w, "st = %s_reset(m);", n);
	if (rng_count(E->g)) {
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\tst = %s_seed(m, 0); /* the default run-time seed */", n);
	}
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_line(w, "*mp = m;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	ew_line(w, "/* Nothing to release: the arena is the caller's. */");
	fn_open(w, "void %s_destroy(%s *m)", n, n);
	ew_line(w, "(void)m;");
	ew_close(w, "");
}

static void blk_create(emit_ctx *E)
{
	if (E->o->no_malloc)
		create_arena(E);
	else
		create_malloc(E);
}

/* NAME.h: the build mode, and how an instance is made. */
static void blk_create_decls(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	const char *n = t->name;
	ew_line(w, "/* How this file was generated: weights embedded in %s.c (1) or read from", n);
	ew_line(w, " * %s.weights (0); memory from a caller-provided arena (1) or malloc (0);", n);
	ew_line(w, " * whether %s_step exists. */", n);
	ew_line(w, "#define %s_EMBEDDED_WEIGHTS %d", n, E->o->embed_weights ? 1 : 0);
	ew_line(w, "#define %s_NO_MALLOC %d", n, E->o->no_malloc ? 1 : 0);
	ew_line(w, "#define %s_HAS_STEP %d", n, t->time_sym >= 0 ? 1 : 0);
	ew_line(w, "%s", "");
	const char *wdoc = E->o->embed_weights
		? arena_printf(E->A, "The weights are embedded in %s.c: weights_path must be NULL.", n)
		: arena_printf(E->A, "weights_path: the weights file written with this model (%s.weights),", n);
	if (!E->o->no_malloc) {
		ew_line(w, "/* Makes an instance.  %s", wdoc);
		if (!E->o->embed_weights)
			ew_line(w, " * checked (format, checksum, tensor names, dtypes, shapes) before use.");
		ew_line(w, " * %s_destroy frees everything. */", n);
		ew_line(w, "int %s_create(%s **m, const char *weights_path);", n, n);
		ew_line(w, "void %s_destroy(%s *m);", n, n);
		return;
	}
	ew_line(w, "/* --no-malloc: neither this model nor the runtime calls it makes allocates.");
	ew_line(w, " * The instance and all its memory live in an arena the caller provides:");
	ew_line(w, " * at least %s_ARENA_BYTES bytes, 64-byte aligned, left alone until the", n);
	ew_line(w, " * instance is no longer used.  The size holds for dims up to the");
	ew_line(w, " * %s_MAX_* values (cellc compile --max-dim); larger dims are refused", n);
	ew_line(w, " * with RT_ERR_SHAPE. */");
	for (int i = 0; i < E->g->nsyms; i++)
		if (ir_sym_free(E->g, i))
			ew_line(w, "#define %s_MAX_%s INT64_C(%lld)", n, t->sym[i], (long long)E->o->max_dims[i]);
	ew_line(w, "#define %s_ARENA_BYTES ((size_t)%lld)", n, (long long)arena_bytes(E));
	ew_line(w, "%s", "");
	ew_line(w, "/* Makes an instance inside arena[arena_bytes] (RT_ERR_NOMEM: too small,");
	ew_line(w, " * RT_ERR_ARG: not 64-byte aligned).  %s", wdoc);
	if (!E->o->embed_weights)
		ew_line(w, " * read into the arena and checked like a file given to malloc builds.");
	ew_line(w, " * %s_destroy releases nothing (the arena is the caller's). */", n);
	ew_line(w, "int %s_create_in(%s **m, void *arena, size_t arena_bytes, const char *weights_path);", n, n);
	ew_line(w, "void %s_destroy(%s *m);", n, n);
}

/* ---- files ------------------------------------------------------------------- */

static int check_model(emit_ctx *E)
{
	ir_graph *g = E->g;
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			const ir_value *v = out ? g->outputs[k] : g->inputs[k];
			if (!ir_dtype_ctype(v->dtype))
				diag_error(E->D, "graph %s '%s' has dtype %s, which cellc cannot compile",
					   out ? "output" : "input", v->name, ir_dtype_name(v->dtype));
			else if (v->shape.rank < 0 || v->shape.rank > RT_TF_MAXRANK)
				diag_error(E->D, "graph %s '%s' has no usable shape", out ? "output" : "input",
					   v->name);
		}
	for (int k = 0; k < E->tabs->nweights; k++) {
		const ir_value *v = E->tabs->weights[k];
		if (!ir_dtype_ctype(v->dtype) || ir_shape_const_numel(&v->shape) < 0 || !v->data ||
		    v->shape.rank > RT_TF_MAXRANK)
			diag_error(E->D, "weight '%s' (%s) cannot be stored", v->name, ir_dtype_name(v->dtype));
	}
	return E->D->nerrors;
}

static int write_weights(emit_ctx *E, const char *path)
{
	struct emit_tabs *t = E->tabs;
	rt_tensor *ts = arena_array(E->A, (size_t)(t->nweights ? t->nweights : 1), sizeof *ts);
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		ts[k].name = weight_name(E->A, v);
		ts[k].dtype = (int)v->dtype;
		ts[k].rank = v->shape.rank;
		for (int i = 0; i < v->shape.rank; i++)
			ts[k].dims[i] = v->shape.d[i].k;
		ts[k].data = v->data;
		ts[k].nbytes = (size_t)ir_shape_const_numel(&v->shape) * ir_dtype_size(v->dtype);
	}
	int st = rt_tf_write(path, t->nweights, ts);
	if (st != RT_OK)
		diag_error(E->D, "cannot write %s: %s", path, rt_status_str(st));
	return st != RT_OK;
}

static int write_file(emit_ctx *E, const char *path, const char *tpl, const tpl_env *env)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		diag_error(E->D, "cannot write %s: %s", path, strerror(errno));
		return 1;
	}
	ew w = {.f = f};
	E->w = &w;
	tpl_expand(E, tpl, env);
	E->w = NULL;
	if (ferror(f) | (fclose(f) != 0)) {
		diag_error(E->D, "cannot write %s: %s", path, strerror(errno));
		return 1;
	}
	return 0;
}

int emit_model(ir_graph *g, diag *D, const emit_opts *o)
{
	struct emit_tabs tabs = {.time_sym = -1};
	emit_ctx ctx = {.g = g, .A = g->A, .D = D, .o = o, .tabs = &tabs};
	emit_ctx *E = &ctx;
	ASSERT(!g->parent && o && o->name && o->outdir);
	ir_recount(g);
	tabs.name = c_ident(E->A, o->name);
	name_syms(E);
	collect_values(E, g);
	mark_sizes(g, tabs.sizes_sym);
	weight_members(E);
	tabs.used_in = arena_alloc(E->A, (size_t)g->ninputs + 1);
	tabs.used_out = arena_alloc(E->A, (size_t)g->noutputs + 1);
	tabs.used_const = arena_alloc(E->A, (size_t)tabs.nconsts + 1);
	tabs.used_slot = arena_alloc(E->A, (size_t)tabs.nslots + 1);
	tabs.time_sym = find_time_sym(g);
	if (check_model(E) || resolve_carry(E))
		return D->nerrors;
	if (o->no_malloc && g->nsyms && !o->max_dims) {
		diag_error(D, "--no-malloc needs the largest value of every dimension symbol (--max-dim)");
		return D->nerrors;
	}
	for (int i = 0; o->max_dims && i < g->nsyms; i++)
		if (ir_sym_free(g, i) && o->max_dims[i] < ir_sym_least(g, i)) {
			diag_error(D, "--max-dim %s=%lld is below the least value of '%s' (%lld: a slice of that "
				   "axis by a constant bound needs it), so no run could use the arena", g->syms[i],
				   (long long)o->max_dims[i], g->syms[i], (long long)ir_sym_least(g, i));
			return D->nerrors;
		}

	/* The forward function first: it decides which constants are printed. */
	ew mem = {0};
	E->w = &mem;
	tabs.forward = prepare_forward(E);
	E->w = NULL;
	if (D->nerrors)
		return D->nerrors;
	if (o->no_malloc && compute_ws_max(E))
		return D->nerrors;
	const char *dir = o->outdir, *n = tabs.name;
	if (!o->embed_weights) {
		/* first: an arena holds the weights file, whose size it states */
		const char *wpath = arena_printf(E->A, "%s/%s.weights", dir, n);
		if (write_weights(E, wpath))
			return D->nerrors ? D->nerrors : 1;
		FILE *wf = fopen(wpath, "rb");
		if (!wf || fseek(wf, 0, SEEK_END) != 0 || (tabs.wfile_bytes = ftell(wf)) < 0) {
			diag_error(D, "cannot read back %s: %s", wpath, strerror(errno));
			if (wf)
				fclose(wf);
			return D->nerrors;
		}
		fclose(wf);
	}

	char *guard = arena_printf(E->A, "%s_H", tabs.name);
	for (char *p = guard; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	const char *keys[] = {"NAME", "VERSION", "GUARD", "NIN", "NOUT", "CELLRT", "PCDIR"};
	const char *vals[] = {
		tabs.name, CELLC_VERSION, guard, arena_printf(E->A, "%d", g->ninputs),
		arena_printf(E->A, "%d", g->noutputs), o->rtdir ? o->rtdir : "", o->pcdir ? o->pcdir : "",
	};
	const char *blocks[] = {"PROVENANCE", "DIMS", "RUN_DECLS", "STRUCT", "CONSTS", "LOAD_WEIGHTS",
				"CREATE", "CREATE_DECLS", "RESET", "WS_RESERVE", "FORWARD", "API"};
	const block_fn fns[] = {blk_provenance, blk_dims, blk_run_decls, blk_struct, blk_consts,
				blk_load_weights, blk_create, blk_create_decls, blk_reset, blk_ws_reserve,
				blk_forward, blk_api};
	tpl_env env = {keys, vals, (int)COUNTOF(keys), blocks, fns, (int)COUNTOF(blocks)};

	if (o->embed_weights)
		remove(arena_printf(E->A, "%s/%s.weights", dir, n));  /* not one of this build's files */
	if (write_file(E, arena_printf(E->A, "%s/%s.h", dir, n), "model.h.in", &env) ||
	    write_file(E, arena_printf(E->A, "%s/%s.c", dir, n), "model.c.in", &env) ||
	    write_file(E, arena_printf(E->A, "%s/Makefile", dir), "Makefile.in", &env) ||
	    write_file(E, arena_printf(E->A, "%s/CMakeLists.txt", dir), "CMakeLists.txt.in", &env))
		return D->nerrors ? D->nerrors : 1;
	return D->nerrors;
}

/* ---- the training program (--train) ---------------------------------------- */

int emit_train_program(arena *A, diag *D, const emit_opts *o)
{
	const char *text = emit_template("train_main.c");
	ASSERT(text && o && o->name && o->outdir);
	const char *n = c_ident(A, o->name);
	const char *path = arena_printf(A, "%s/%s_train.c", o->outdir, n);
	FILE *f = fopen(path, "w");
	int ok = f != NULL;
	if (f) {
		fprintf(f, "/* %s_train.c: the training program of model %s, generated by cellc %s from\n"
			   " * templates/train_main.c -- do not edit.  Build: make %s_train */\n"
			   "#define _POSIX_C_SOURCE 200809L\n#define CELLC_MODEL %s\n#include \"%s.h\"\n\n",
			n, n, CELLC_VERSION, n, n, n);
		ok = fputs(text, f) >= 0;
		ok &= fclose(f) == 0;
	}
	if (!ok)
		diag_error(D, "cannot write %s: %s", path, strerror(errno));
	return ok ? 0 : 1;
}
