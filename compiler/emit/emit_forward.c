/* emit_forward.c: the compiled functions of NAME.c: forward, a --train
 * build's backward, and one rec_<name>() per recurrence, whose text is
 * emit_rec.c's.
 *
 * Each function is printed into memory first, with the use marks of
 * emit_names.c recording what it refers to; its parameters are then what
 * its text reads (callee_params), its caller passes exactly those, and
 * once all are printed the inputs' and outputs' placeholders in_<k> /
 * out_<k> become the header's names where that is safe (name_io,
 * rename_io).
 */
#define _POSIX_C_SOURCE 200809L     /* open_memstream */
#include "emit.h"
#include "emit_tabs.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

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
	emit_clear_marks(E);
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

/* What a function that forward or backward calls takes, and what its
 * caller passes (callee_params). */
typedef struct callee {
	const char *fn;         /* its name: rec_h1, backward */
	char *params;           /* its parameter list */
	char *ws_type;          /* the typedef of its workspace parts (<fn>_ws), or NULL: it takes none */
	char **fill;            /* [nfill] the caller's initialisers of that struct's members */
	int nfill;
	char *args;             /* the caller's arguments */
} callee;

/* The parameters of function C->fn whose body text is `body` (printed
 * since marks_push) and the arguments its caller passes: the instance,
 * then the outputs, inputs, workspace parts, symbolic constants and dims
 * that the body reads, each with its shape (`callees`: the text of the
 * functions the body calls, printed with it).  The workspace parts are one
 * struct, <fn>_ws, whose members the body reads as ws->...; the caller
 * fills one (`parts`) and passes its address.  The marks are of what was
 * printed; ew_prune may since have dropped a declaration that was the only
 * reader of an input or a workspace part, so they are narrowed to the
 * body's tokens first.  The members are named as the callee's scope
 * (emit_slot_scope, set by the caller before printing the body) names
 * them, their values as the caller's: root nodes [caller0, caller1),
 * caller_ws its `members`; the caller's scope is set again on return. */
static void callee_params(emit_ctx *E, const char *body, const char *callees, int caller0, int caller1,
			  int caller_ws, callee *C)
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
	C->params = arena_printf(E->A, "%s *m", t->name);
	C->args = "m";
	for (int in = 0; in <= 1; in++)        /* outputs first, then inputs */
		for (int k = 0; k < (in ? g->ninputs : g->noutputs); k++) {
			const ir_value *v = (in ? g->inputs : g->outputs)[k];
			const char *pn = arena_printf(E->A, "%s_%d", in ? "in" : "out", k);
			if (!(in ? t->used_in : t->used_out)[k])
				continue;
			C->params = arena_printf(E->A, "%s,\n\t\t%s%s *%s /* %s %s */", C->params, in ? "const " : "",
						 ctype(v), pn, emit_cmt(E->A, v->name), emit_shape_comment(E, v));
			C->args = arena_printf(E->A, "%s, %s", C->args, pn);
		}
	C->ws_type = NULL;
	for (int s = 0; s < t->nslots; s++)
		if (t->used_slot[s]) {
			ir_dim sz;
			ir_dtype dt = DT_UNDEF;
			int found = ir_slot_info(g, s, &sz, &dt);
			ASSERT(found);
			(void)sz;
			const char *decl = arena_printf(E->A, "%s *%s;", ir_dtype_ctype(dt), emit_slot_member(E, s));
			int pad = strlen(decl) < 32 ? 32 - (int)strlen(decl) : 1;  /* comments in one column */
			C->ws_type = arena_printf(E->A, "%s\t%s%*s/* %s */\n", C->ws_type ? C->ws_type : "", decl, pad, "",
						  emit_slot_note(E, s));
		}
	if (C->ws_type) {
		C->ws_type = arena_printf(E->A, "/* The workspace parts %s reads and writes; its caller fills them in. */\n"
					  "typedef struct %s_ws {\n%s} %s_ws;\n\n", C->fn, C->fn, C->ws_type, C->fn);
		C->params = arena_printf(E->A, "%s,\n\t\tconst %s_ws *ws", C->params, C->fn);
		C->args = arena_printf(E->A, "%s, &parts", C->args);
	}
	/* the members' names are the callee's */
	const char **mname = arena_array(E->A, (size_t)t->nslots + 1, sizeof *mname);
	for (int s = 0; s < t->nslots; s++)
		if (t->used_slot[s])
			mname[s] = emit_slot_member(E, s);
	emit_slot_scope(E, caller0, caller1, caller_ws);   /* the caller's names of what it passes */
	C->fill = arena_array(E->A, (size_t)t->nslots + 1, sizeof *C->fill);
	C->nfill = 0;
	for (int s = 0; s < t->nslots; s++)
		if (t->used_slot[s])
			C->fill[C->nfill++] = arena_printf(E->A, ".%s = %s", mname[s], emit_slot_name(E, s));
	for (int k = 0; k < t->nconsts; k++)
		if (t->used_const[k] && t->consts[k]->sym) {
			C->params = arena_printf(E->A, "%s,\n\t\tconst %s *c_%d /* %s */", C->params, ctype(t->consts[k]),
						 k, emit_cmt(E->A, t->consts[k]->name));
			C->args = arena_printf(E->A, "%s, c_%d", C->args, k);
		}
	for (int i = 0; i < g->nsyms; i++)
		if (t->used_sym[i]) {
			C->params = arena_printf(E->A, "%s,\n\t\tconst int64_t d_%s", C->params, t->sym[i]);
			C->args = arena_printf(E->A, "%s, d_%s", C->args, t->sym[i]);
		}
}

/* The caller's side: the struct of workspace parts filled in (several
 * members a line), the call, its status returned unless RT_OK. */
static void print_call(emit_ctx *E, const callee *C)
{
	ew *w = E->w;
	if (C->ws_type) {
		ew_line(w, "const %s_ws parts = {", C->fn);
		char *line = "";
		for (int i = 0; i < C->nfill; i++) {
			const char *item = C->fill[i];
			if (*line && strlen(line) + strlen(item) + 2 > 96) {
				ew_line(w, "\t%s,", line);
				line = "";
			}
			line = arena_printf(E->A, "%s%s%s", line, *line ? ", " : "", item);
		}
		ew_line(w, "\t%s", line);
		ew_line(w, "};");
	}
	ew_line(w, "const int rs = %s(%s);", C->fn, C->args);
	ew_line(w, "if (rs != RT_OK)");
	ew_line(w, "\treturn rs;");
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
	const char *id = emit_c_ident(E->A, n->name);
	const char *fn = arena_printf(E->A, "rec_%s", id[0] == '_' ? id + 1 : id);
	const char *caller = t->fn_name;
	t->fn_name = fn;
	int at = 0, caller0 = t->scope0, caller1 = t->scope1, caller_ws = t->scope_ws;
	while (E->g->nodes[at] != n)
		at++;
	emit_slot_scope(E, at, at + 1, 1);      /* workspace parts named for this function */
	ew_capture c;
	ew_capture_begin(w, &c, 1);
	emit_recurrence(E, n);
	char *body = ew_capture_end(w, &c, E->A);
	ew_capture_begin(w, &c, 0);
	ew_line(w, "/* %s: the time loop of recurrence '%s'%s%s, called once by %s:", fn,
		emit_cmt(E->A, n->name), n->origin ? " from " : "", n->origin ? emit_cmt(E->A, n->origin) : "", caller);
	emit_rec_doc(E, n);
	char *doc = ew_capture_end(w, &c, E->A);
	t->fn_name = caller;
	callee C = {.fn = fn};
	callee_params(E, body, NULL, caller0, caller1, caller_ws, &C);
	ew_capture_begin(w, &c, 0);
	if (C.ws_type)
		fputs(C.ws_type, w->f);
	fputs(doc, w->f);
	ew_line(w, "RT_CLONES /* a copy per x86-64 level, like forward (cellrt.h) */");
	ew_fn_open(w, "static int %s(%s)", fn, C.params);
	fputs(body, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	char *text = ew_capture_end(w, &c, E->A);
	t->rec_fns = arena_printf(E->A, "%s%s", t->rec_fns ? t->rec_fns : "", text);
	marks_pop(E, &saved);
	ew_open(w, "%s", "");
	print_call(E, &C);
	ew_close(w, "");
}

static void print_nodes(emit_ctx *E, int from, int to);

/* The If a select on condition c belongs to, for a comment. */
static const char *if_name(emit_ctx *E, const ir_value *c)
{
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *n = E->g->nodes[i];
		if (n->op == OP_WHERE && ir_attr_int(n, "if_select", 0) && n->in[0] == c)
			return emit_cmt(E->A, n->origin ? n->origin : n->name ? n->name : "?");
	}
	return "?";
}

/* Guarded nodes [from, j) of one branch (pass_branch.c) inside their C
 * branch; returns j. */
static int print_branch(emit_ctx *E, int from, int to)
{
	ir_graph *g = E->g;
	int when;
	const ir_value *c = ir_guard(g->nodes[from], &when);
	int j = from + 1, w2;
	while (j < to && ir_guard(g->nodes[j], &w2) == c && w2 == when)
		j++;
	ew_line(E->w, "/* If '%s': the %s branch's own %d node(s), run only when it is taken */", if_name(E, c),
		when ? "then" : "else", j - from);
	int rec = 0;
	for (int i = from; i < j; i++)
		rec |= g->nodes[i]->op == OP_RECURRENCE;
	if (rec && emit_step_runs_branches(g)) {
		ew_line(E->w, "/* (in %s_step always: its recurrences advance at every step) */", E->tabs->name);
		ew_open(E->w, "if (%s%s[0] || m->stepping)", when ? "" : "!", emit_ref(E, c));
	} else {
		ew_open(E->w, "if (%s%s[0])", when ? "" : "!", emit_ref(E, c));
	}
	print_nodes(E, -from - 1, j);
	ew_close(E->w, "");
	return j;
}

/* The root graph's nodes [from, to), each node once; consecutive
 * element-wise nodes of one fusion group are printed together, a run of
 * nodes of one branch of an If inside its C branch (from < 0: the nodes
 * [-from - 1, to) of one such run). */
static void print_nodes(emit_ctx *E, int from, int to)
{
	ir_graph *g = E->g;
	int in_branch = from < 0;
	if (in_branch)
		from = -from - 1;
	for (int i = from; i < to;) {
		ir_node *n = g->nodes[i];
		if (!in_branch && ir_guard(n, NULL)) {
			i = print_branch(E, i, to);
			continue;
		}
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
		int first = emit_find_index((const ir_value *const *)g->outputs, g->noutputs, v);
		const char *src;
		if (first != k)
			src = arena_printf(E->A, "out_%d", first);
		else if (v->kind == VAL_TEMP && v->graph == g)
			continue;
		else
			src = emit_ref(E, v);
		E->tabs->used_out[k] = 1;
		ew_line(E->w, "/* output %d '%s' %s is %s */", k, emit_cmt(E->A, v->name), emit_shape_comment(E, v),
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
	int caller0 = t->scope0, caller1 = t->scope1, caller_ws = t->scope_ws;
	emit_slot_scope(E, from, E->g->nnodes, 1);      /* workspace parts named for backward */
	ew_capture c;
	ew_capture_begin(w, &c, 1);
	print_nodes(E, from, E->g->nnodes);
	print_output_copies(E, 1);
	char *body = ew_capture_end(w, &c, E->A);
	t->fn_name = caller;
	callee C = {.fn = "backward"};
	callee_params(E, body, t->rec_fns ? t->rec_fns + recs0 : NULL, caller0, caller1, caller_ws, &C);
	ew_capture_begin(w, &c, 0);
	if (C.ws_type)
		fputs(C.ws_type, w->f);
	ew_line(w, "/* The gradients of the loss by backpropagation (through time in the");
	ew_line(w, " * rec_*_backward functions), from what forward left in the workspace and");
	ew_line(w, " * the instance; forward calls it unless %s_set_forward_only(m, 1). */", t->name);
	ew_line(w, "RT_CLONES /* a copy per x86-64 level, like forward (cellrt.h) */");
	ew_fn_open(w, "static int backward(%s)", C.params);
	fputs(body, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	t->backward = ew_capture_end(w, &c, E->A);
	marks_pop(E, &saved);
	ew_line(w, "/* --train: the gradients (skipped after %s_set_forward_only(m, 1)) */", t->name);
	ew_open(w, "if (!m->fwd_only)");
	print_call(E, &C);
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
			n ? s : "0", emit_cmt(E->A, v->name));
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
			const char *nm = emit_io_param_name(E, out, k);
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
		while ((id = ew_next_ident(&s, e, &n, &in_comment))) {
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

char *emit_prepare_forward(emit_ctx *E)
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
	emit_clear_marks(E);
	t->fn_name = "forward";
	emit_slot_scope(E, 0, nb, 0);           /* workspace parts named for forward */
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
	ew_fn_open(w, "static int forward(%s)", emit_io_params(E, 0, 0));
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
	/* a dim that is the value of an input (size_inputs.c): the input holds it */
	for (int i = 0; i < g->nsyms; i++) {
		int k = ir_sym_value_input(g, i);
		if (k < 0)
			continue;
		ew_line(w, "if (in_%d[0] != d->%s) /* symbol '%s' is the value of input '%s' */", k, t->sym[i],
			emit_cmt(E->A, g->syms[i]), emit_cmt(E->A, g->inputs[k]->name));
		ew_line(w, "\treturn RT_ERR_SHAPE;");
		t->used_in[k] = 1;
	}
	emit_dims_locals(E);
	fputs(consts, w->f);
	fputs(ws, w->f);
	for (int k = 0; k < g->ninputs; k++)
		if (!t->used_in[k])
			ew_line(w, "(void)in_%d; /* '%s' is not needed for the outputs */", k,
				emit_cmt(E->A, g->inputs[k]->name));
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
