/* emit_names.c: what the emitted code calls things, and the C expressions of
 * dims, values and literals.
 *
 * The tables of emit_tabs.h are filled here (the weights and constants in
 * use, numbered; the use marks that emit_ref and emit_dim set while a
 * function is printed), and every name of the generated code that comes
 * from the model is made here: the dims `d_<sym>`, the instance members
 * `w_<tensor>` and `st_<state>`, and the workspace parts `ws_<what they
 * hold>` of the function being printed (emit_slot_name, emit_slot_scope).
 * Text from the model goes into comments and string literals through
 * emit_cmt and emit_c_string.
 */
#include "emit.h"
#include "emit_tabs.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- tables: value numbering and use marks ------------------------------- */

void emit_clear_marks(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	memset(t->used_sym, 0, sizeof t->used_sym);
	memset(t->used_in, 0, (size_t)E->g->ninputs + 1);
	memset(t->used_out, 0, (size_t)E->g->noutputs + 1);
	memset(t->used_const, 0, (size_t)t->nconsts + 1);
	memset(t->used_slot, 0, (size_t)t->nslots + 1);
}

int emit_find_index(const ir_value *const *list, int n, const ir_value *v)
{
	for (int i = 0; i < n; i++)
		if (list[i] == v)
			return i;
	return -1;
}

static void push(arena *A, const ir_value ***list, int *n, int *cap, const ir_value *v)
{
	if (emit_find_index(*list, *n, v) >= 0)
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
void emit_mark_sizes(const ir_graph *g, char *s)
{
	for (int i = 0; i < g->nvalues; i++)
		for (int a = 0; a < g->values[i]->shape.rank; a++)
			for (int j = 0; j < IR_MAX_SYMS; j++)
				if (g->values[i]->shape.d[a].pow[j])
					s[j] = 1;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->body)
			emit_mark_sizes(g->nodes[i]->body, s);
}

/* Weights and constants used anywhere (root graph and bodies), in graph order. */
void emit_collect_values(emit_ctx *E, ir_graph *g)
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
			emit_collect_values(E, g->nodes[i]->body);
}

/* ---- names ------------------------------------------------------------------ */

/* s made into a C identifier: other characters become '_'. */
char *emit_c_ident(arena *A, const char *s)
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
	const char *id = emit_c_ident(A, name);
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
void emit_weight_members(emit_ctx *E)
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

/* The identifier of an IR name: emit_c_ident without leading, trailing or doubled
 * '_' ("/rnn/LSTM.forward.h" -> "rnn_LSTM_forward_h"), at most 40
 * characters; "" when nothing is left. */
static const char *plain_ident(arena *A, const char *name)
{
	const char *id = emit_c_ident(A, name);
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
				note = arena_printf(A, "%s %s", emit_cmt(A, v->name), ir_shape_str(A, E->g, &v->shape));
			else if (ir_dim_eq(n, ir_slot_numel(v)))
				note = arena_printf(A, "%s %s, in %s elements", emit_cmt(A, v->name),
						    ir_shape_str(A, E->g, &v->shape), emit_unparen(A, emit_dim(E, sz)));
			else
				note = arena_printf(A, "%s %s, a step's rows at a time: %s elements", emit_cmt(A, v->name),
						    ir_shape_str(A, E->g, &v->shape), emit_unparen(A, emit_dim(E, sz)));
		}
		for (int i = 0; i < nu; i++) {
			int dup = 0;    /* a value read and made in the function is listed once */
			for (int j = 0; j < i && !dup; j++)
				dup = u[j].v == u[i].v && u[j].here == u[i].here;
			if (u[i].v->slot == s && (!here || u[i].here) && !dup && u[i].v != u[best].v && ++others <= 3)
				note = arena_printf(A, "%s%s%s", note, others == 1 ? "; also " : ", ", emit_cmt(A, u[i].v->name));
		}
		if (others > 3)
			note = arena_printf(A, "%s and %d more", note, others - 3);
		t->slot_note[s] = note;
	}
}

/* The members of the functions that take their parts in a struct: the
 * name without "ws_" where that is an identifier of its own (no leading
 * digit, no keyword, no other member's name), else the name. */
static void name_members(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	t->slot_member = arena_array(E->A, (size_t)t->nslots + 1, sizeof *t->slot_member);
	for (int s = 0; s < t->nslots; s++) {
		const char *nm = t->slot_name[s] + 3;
		int ok = !(nm[0] >= '0' && nm[0] <= '9') && !emit_is_keyword(nm);
		for (int j = 0; ok && j < s; j++)
			ok = strcmp(t->slot_member[j], nm) != 0;
		t->slot_member[s] = ok ? nm : t->slot_name[s];
	}
}

const char *emit_slot_member(emit_ctx *E, int slot)
{
	struct emit_tabs *t = E->tabs;
	ASSERT(slot >= 0 && slot < t->nslots);
	if (!t->slot_name)
		name_slots(E);
	if (!t->slot_member)
		name_members(E);
	return t->slot_member[slot];
}

const char *emit_slot_name(emit_ctx *E, int slot)
{
	struct emit_tabs *t = E->tabs;
	ASSERT(slot >= 0 && slot < t->nslots);
	if (!t->slot_name)
		name_slots(E);
	if (t->scope_ws)
		return arena_printf(E->A, "ws->%s", emit_slot_member(E, slot));
	return t->slot_name[slot];
}

const char *emit_slot_note(emit_ctx *E, int slot)
{
	emit_slot_name(E, slot);
	return E->tabs->slot_note[slot];
}

void emit_slot_scope(emit_ctx *E, int first, int last, int members)
{
	struct emit_tabs *t = E->tabs;
	t->scope_ws = members;
	if (t->scope0 == first && t->scope1 == last)
		return;
	t->scope0 = first;
	t->scope1 = last;
	t->slot_name = NULL;    /* named again for this function */
	t->slot_note = NULL;
	t->slot_member = NULL;
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
const char *emit_cmt(arena *A, const char *s)
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
const char *emit_c_string(arena *A, const char *s)
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
int emit_is_keyword(const char *s)
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
void emit_name_syms(emit_ctx *E)
{
	for (int i = 0; i < E->g->nsyms; i++) {
		char *s = emit_c_ident(E->A, E->g->syms[i]);
		if (emit_is_keyword(s))
			s = arena_printf(E->A, "%s_", s);
		for (int j = 0; j < i; j++)
			if (strcmp(E->tabs->sym[j], s) == 0)
				s = arena_printf(E->A, "%s_%d", s, i);
		E->tabs->sym[i] = s;
	}
}

/* ---- dims and references --------------------------------------------------- */

/* Every run-time dimension must be in [1, INT32_MAX] (and, with --no-malloc,
 * within the maxima the arena was sized for): the emitted loops index with
 * int64_t products of them. */
/* How a symbol's value is written in a derived symbol's expression */
typedef const char *(*symref)(emit_ctx *E, int s);

/* Derived LIN symbol i's dividend c0 * x0 + c1 * x1 + ... + off, each
 * symbol x written ref(E, x). */
static const char *dividend(emit_ctx *E, int i, symref ref)
{
	const ir_symdef *d = &E->g->symdef[i];
	const char *e = NULL;
	for (int j = 0; j < i; j++) {
		int64_t c = d->c[j], a = c < 0 ? -c : c;
		if (!c)
			continue;
		const char *t = a > 1 ? arena_printf(E->A, "%lld * %s", (long long)a, ref(E, j)) : ref(E, j);
		e = e ? arena_printf(E->A, "%s %c %s", e, c < 0 ? '-' : '+', t) : c < 0 ? arena_printf(E->A, "-%s", t) : t;
	}
	if (d->off)
		e = arena_printf(E->A, "%s %c %lld", e, d->off < 0 ? '-' : '+', (long long)(d->off < 0 ? -d->off : d->off));
	return e;
}

/* Derived symbol i as a C expression of its operands', each written
 * ref(E, x); an exact division is checked to be one before
 * (emit_dims_check), so floor division computes it too. */
static const char *derived_expr(emit_ctx *E, int i, symref ref)
{
	const ir_symdef *d = &E->g->symdef[i];
	if (d->op == IR_SYM_MIN || d->op == IR_SYM_MAX)
		return arena_printf(E->A, "rt_%s_i64(%s, %s)", d->op == IR_SYM_MIN ? "min" : "max", ref(E, d->a),
				    d->b >= 0 ? ref(E, d->b) : arena_printf(E->A, "%lld", (long long)d->off));
	if (d->op == IR_SYM_SCALE)      /* -1 (checked below 1) when no size */
		return arena_printf(E->A, "rt_resize_size(%s, %s)", ref(E, d->a), emit_float(E, d->scale, DT_F32));
	if (d->div > 1)
		return arena_printf(E->A, "rt_floordiv(%s, %lld)", dividend(E, i, ref), (long long)d->div);
	return arena_printf(E->A, "(%s)", dividend(E, i, ref));
}

/* Symbol s's value from the dims struct d. */
static const char *sym_from_dims(emit_ctx *E, int s)
{
	if (ir_sym_free(E->g, s))
		return arena_printf(E->A, "d->%s", E->tabs->sym[s]);
	return derived_expr(E, s, sym_from_dims);
}

/* Symbol s's value from the locals d_X (emit_dims_locals): an offset
 * symbol written out, any other its own local. */
static const char *sym_from_locals(emit_ctx *E, int s)
{
	int64_t off;
	int b = ir_sym_root(E->g, s, &off);
	if (b == s)
		return arena_printf(E->A, "d_%s", E->tabs->sym[s]);
	return arena_printf(E->A, "(d_%s %c %lld)", E->tabs->sym[b], off < 0 ? '-' : '+',
			    (long long)(off < 0 ? -off : off));
}

void emit_dims_check(emit_ctx *E, int arena_limits)
{
	struct emit_tabs *t = E->tabs;
	for (int i = 0; i < E->g->nsyms; i++) {
		if (!ir_sym_free(E->g, i)) {
			/* a derived symbol: its value from its base's, at least 1
			 * where it sizes something (one that only a symbolic
			 * constant's data holds, out[T - 1]'s index T - 1, may be
			 * 0); a pinned one the value the model's contract needs */
			if (E->g->symdef[i].exact) {
				const char *x = dividend(E, i, sym_from_dims);
				if (strpbrk(x, " "))
					x = arena_printf(E->A, "(%s)", x);
				ew_line(E->w, "if (%s %% %lld != 0) /* symbol '%s' = %s: the model divides it exactly */",
					x, (long long)E->g->symdef[i].div,
					emit_cmt(E->A, E->g->syms[i]), emit_cmt(E->A, ir_sym_def_str(E->A, E->g, i)));
				ew_line(E->w, "\treturn RT_ERR_SHAPE;");
			}
			if (E->g->sym_pin[i]) {
				ew_line(E->w, "if (%s != %lld) /* symbol '%s' = %s must be %lld */", sym_from_dims(E, i),
					(long long)E->g->sym_pin[i], emit_cmt(E->A, E->g->syms[i]),
					emit_cmt(E->A, ir_sym_def_str(E->A, E->g, i)), (long long)E->g->sym_pin[i]);
				ew_line(E->w, "\treturn RT_ERR_SHAPE;");
				continue;
			}
			if (!t->sizes_sym[i])
				continue;
			ew_line(E->w, "if (%s < 1) /* symbol '%s' */", sym_from_dims(E, i), emit_cmt(E->A, E->g->syms[i]));
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
void emit_dims_locals(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	const ir_graph *g = E->g;
	/* a floor or factor symbol is a local of its own, computed from its
	 * base's (an offset one is written out where it is used): the bases
	 * of those used are needed too */
	char need[IR_MAX_SYMS] = {0};
	for (int i = g->nsyms - 1; i >= 0; i--) {
		need[i] |= t->used_sym[i];
		unsigned ops = need[i] ? ir_sym_operands(g, i) : 0;
		for (int j = 0; j < i; j++)
			need[j] |= ops >> j & 1;
	}
	for (int i = 0; i < g->nsyms; i++) {
		if (!need[i])
			continue;
		if (ir_sym_free(g, i))
			ew_line(E->w, "const int64_t d_%s = d->%s;", t->sym[i], t->sym[i]);
		else if (!ir_sym_is_offset(g, i))
			ew_line(E->w, "const int64_t d_%s = %s; /* %s */", t->sym[i], derived_expr(E, i, sym_from_locals),
				emit_cmt(E->A, ir_sym_def_str(E->A, g, i)));
	}
}

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
	int symbolic = 0;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		symbolic |= d.pow[i] != 0;
	/* (an element of a symbolic constant may be a negative factor of a
	 * symbol, -1 * (T2 - T1): a pad that crops) */
	if (!symbolic)
		return i64_lit(E->A, d.k);
	char *s = d.k == 1 ? NULL : arena_printf(E->A, "%lld", (long long)d.k);
	int factors = d.k == 1 ? 0 : 1;
	for (int i = 0; i < E->g->nsyms; i++)
		for (int p = 0; p < d.pow[i]; p++) {
			const char *f;
			if (ir_sym_free(E->g, i)) {
				E->tabs->used_sym[i] = 1;
				f = arena_printf(E->A, "d_%s", E->tabs->sym[i]);
			} else if (ir_sym_is_offset(E->g, i)) {
				/* base plus offset, written out */
				int64_t off;
				E->tabs->used_sym[ir_sym_root(E->g, i, &off)] = 1;
				f = sym_from_locals(E, i);
			} else {
				/* a floor or factor symbol: its local (emit_dims_locals) */
				E->tabs->used_sym[i] = 1;
				f = arena_printf(E->A, "d_%s", E->tabs->sym[i]);
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
		k = emit_find_index((const ir_value *const *)g->inputs, g->ninputs, v);
		ASSERT(k >= 0);
		t->used_in[k] = 1;
		return arena_printf(E->A, "in_%d", k);
	case VAL_WEIGHT:
		k = emit_find_index(t->weights, t->nweights, v);
		ASSERT(k >= 0);
		return arena_printf(E->A, "m->%s", t->wname[k]);
	case VAL_CONST:
		k = emit_find_index(t->consts, t->nconsts, v);
		ASSERT(k >= 0);
		t->used_const[k] = 1;
		return arena_printf(E->A, "c_%d", k);
	case VAL_TEMP:
		if (v->is_output && v->graph == g) {
			k = emit_find_index((const ir_value *const *)g->outputs, g->noutputs, v);
			ASSERT(k >= 0);
			t->used_out[k] = 1;
			return arena_printf(E->A, "out_%d", k);
		}
		if (v->slot < 0 && (v = ir_output_backing(v)) != NULL) {
			/* a graph output is a view of it: the output's buffer */
			k = emit_find_index((const ir_value *const *)g->outputs, g->noutputs, v);
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
