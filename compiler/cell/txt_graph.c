/* txt_graph.c: `graph NAME { ... }` blocks -- the IR as ir_print writes it.
 *
 * Everything ir_print prints is read back: producer, opset, symbols, input /
 * weight / const declarations (full data, `sym[...]` symbolic elements,
 * `elided fnv1a:...`), node lines with `_` for omitted operands and their
 * attributes (all kinds, `tensor` and `graph` included), `body { ... }`
 * blocks, output lines, and what passes decided: a recurrence's `source`,
 * the `role` of a value on its declaration or node line (ir.h; each checked
 * against where it may stand), pass_grad's `grad_of %G %V` and `recomputes
 * %R %V` on node lines (V looked up once the whole graph is read: a backward
 * body names the forward body's values), ` narrow f16` after a declared
 * type.  The comment ir_print writes after a node line is an annotation:
 * output types (with `narrow T`, `data-dependent axis A <= N`, `slot N`),
 * `node "NAME"`, `from OP`, `group N`, `backward`; when it is there and well
 * formed it restores those fields
 * exactly, so that printing the graph again gives the same text; when it is
 * missing (a hand-written graph) types are left to pass_infer and names are
 * made up.  No pass decides on what the annotation restores (`from OP`,
 * the op_type, is for messages).  Other comments are ignored.
 *
 * Data: weights come from the file of a `weights "FILE"` line when it holds
 * a tensor of that name (dtype and shape must agree), else they are zeros;
 * an elided constant is read from that file too, else it is zeros and a
 * warning says so.  The graph is checked as it is read (names defined once
 * and before use, op arity, recurrence attributes against its body) so that
 * later passes never see a malformed IR.
 *
 * Dimensions, types, constant data and attributes are read by txt_value.c.
 */
#include "txt_graph.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a name -> value table for the whole compilation (txt_graph.h) ---- */

static size_t shash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

static ir_value *vtab_get(const vtab *t, const char *name)
{
	if (!t->cap)
		return NULL;
	for (size_t i = shash(name) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->slot[i]->name, name) == 0)
			return t->slot[i];
	return NULL;
}

static void vtab_put(vtab *t, ir_value *v)
{
	if (2 * (t->n + 1) > t->cap) {
		vtab old = *t;
		t->cap = old.cap ? 2 * old.cap : 256;
		t->slot = calloc(t->cap, sizeof *t->slot);
		if (!t->slot)
			arena_oom(NULL, t->cap * sizeof *t->slot, "reading a graph");
		t->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.slot[i])
				vtab_put(t, old.slot[i]);
		free(old.slot);
	}
	size_t i = shash(v->name) & (t->cap - 1);
	while (t->slot[i])
		i = (i + 1) & (t->cap - 1);
	t->slot[i] = v;
	t->n++;
}

/* ---- declarations ---- */

static void note_name(gctx *c, const char *name)
{
	/* ir_unique_name makes "%<base><N>": later passes must not repeat ours */
	if (name[0] != '%')
		return;
	size_t n = strlen(name), k = n;
	while (k > 1 && name[k - 1] >= '0' && name[k - 1] <= '9')
		k--;
	if (k < n && n - k < 12) {
		int64_t v = strtoll(name + k, NULL, 10);
		if (v > c->maxsuffix)
			c->maxsuffix = v;
	}
}

/* A new value named by the current TK_VALNAME token. */
static ir_value *define(gctx *c, ir_graph *g, const txt_tok *t, ir_valkind kind)
{
	txt *X = c->X;
	ir_value *old = vtab_get(&c->names, t->str);
	if (old) {
		txt_error(X, t, "value '%%%s' is defined twice", t->str);
		return NULL;
	}
	ir_value *v = ir_value_new(g, t->str, kind, DT_UNDEF);
	vtab_put(&c->names, v);
	note_name(c, t->str);
	return v;
}

/* A use: the value must be defined in g or an enclosing graph. */
static int is_visible(const ir_graph *from, const ir_value *v)
{
	for (const ir_graph *g = from; g; g = g->parent)
		if (v->graph == g)
			return 1;
	return 0;
}

static int parse_use(gctx *c, ir_graph *g, ir_value **out)
{
	txt *X = c->X;
	const txt_tok *t = txt_peek(X);
	if (txt_is_word(t, "_")) {
		txt_next(X);
		*out = NULL;
		return 1;
	}
	if (t->kind != TK_VALNAME) {
		txt_error(X, t, "expected a value (%%name) or '_', found %s", txt_tok_desc(X, t));
		return 0;
	}
	txt_next(X);
	ir_value *v = vtab_get(&c->names, t->str);
	if (!v || !is_visible(g, v) || (v->kind == VAL_TEMP && !v->producer)) {
		txt_error(X, t, "value '%%%s' is not defined before this use", t->str);
		return 0;
	}
	*out = v;
	return 1;
}

/* The keyword of a role (ir.h, ir_role), after the word `role`. */
static int parse_role(txt *X, ir_role *role)
{
	const txt_tok *t = txt_peek(X);
	int r = t->kind == TK_IDENT ? ir_role_lookup(t->str) : -1;
	if (r <= IR_ROLE_NONE) {
		const char *all = ir_role_keyword(IR_ROLE_NONE + 1);
		for (int k = IR_ROLE_NONE + 2; k < IR_ROLE_COUNT; k++)
			all = arena_printf(X->A, "%s%s%s", all, k + 1 < IR_ROLE_COUNT ? ", " : " or ",
					   ir_role_keyword((ir_role)k));
		txt_error(X, t, "expected a role after 'role' (%s), found %s", all, txt_tok_desc(X, t));
		return 0;
	}
	txt_next(X);
	*role = (ir_role)r;
	return 1;
}

/* The keyword of a recurrence source (ir.h, ir_rec_source), after the word
 * `source`. */
static int parse_rec_source(txt *X, ir_rec_source *src)
{
	const txt_tok *t = txt_peek(X);
	int r = t->kind == TK_IDENT ? ir_rec_source_lookup(t->str) : -1;
	if (r <= IR_REC_NONE) {
		const char *all = ir_rec_source_keyword(IR_REC_NONE + 1);
		for (int k = IR_REC_NONE + 2; k < IR_REC_SOURCE_COUNT; k++)
			all = arena_printf(X->A, "%s%s%s", all, k + 1 < IR_REC_SOURCE_COUNT ? ", " : " or ",
					   ir_rec_source_keyword((ir_rec_source)k));
		txt_error(X, t, "expected where the recurrence came from after 'source' (%s), found %s", all,
			  txt_tok_desc(X, t));
		return 0;
	}
	txt_next(X);
	*src = (ir_rec_source)r;
	return 1;
}

/* `narrow f16` or `narrow bf16` after the type dt (ir_value.narrow: an f32
 * value standing for an ONNX FLOAT16 or BFLOAT16 tensor), if it is there:
 * *nar that type, else DT_UNDEF; 0 after an error. */
static int parse_narrow(txt *X, ir_dtype dt, ir_dtype *nar)
{
	*nar = DT_UNDEF;
	const txt_tok *at = txt_peek(X);
	if (at->nl || !txt_accept_word(X, "narrow"))
		return 1;
	const txt_tok *t = txt_peek(X);
	int k = t->kind == TK_IDENT ? ir_dtype_lookup(t->str) : -1;
	if (k != DT_F16 && k != DT_BF16) {
		txt_error(X, t, "expected f16 or bf16 after 'narrow', found %s", txt_tok_desc(X, t));
		return 0;
	}
	txt_next(X);
	if (dt != DT_F32) {
		txt_error(X, at, "'narrow' marks an f32 value that stands for a %s tensor, not a %s one",
			  t->str, ir_dtype_name(dt));
		return 0;
	}
	*nar = (ir_dtype)k;
	return 1;
}

/* input/weight/const lines: KW %name: TYPE [narrow T] [= DATA] [param K | frozen] [role ROLE] */
static void parse_decl(gctx *c, ir_graph *g, const char *kw)
{
	txt *X = c->X;
	const txt_tok *t = txt_peek(X);
	if (t->kind != TK_VALNAME) {
		txt_error(X, t, "expected a value name (%%name) after '%s', found %s", kw, txt_tok_desc(X, t));
		txt_skip_line(X);
		return;
	}
	txt_next(X);
	ir_valkind kind = kw[0] == 'w' ? VAL_WEIGHT : kw[0] == 'c' ? VAL_CONST : g->parent ? VAL_STEP
											       : VAL_INPUT;
	ir_dtype dt;
	ir_shape s;
	ir_dtype nar;
	if (!txt_expect(X, ':', "before the type") || !txt_parse_type(X, g, &dt, &s, 0) ||
	    !parse_narrow(X, dt, &nar)) {
		txt_skip_line(X);
		return;
	}
	ir_value *v = define(c, g, t, kind);
	if (!v) {
		txt_skip_line(X);
		return;
	}
	v->dtype = dt;
	v->shape = s;
	v->narrow = nar;
	if (kind == VAL_INPUT || kind == VAL_STEP) {
		g->inputs = arena_grow(g->A, g->inputs, (size_t)g->ninputs, (size_t)g->ninputs + 1,
				       sizeof *g->inputs);
		g->inputs[g->ninputs++] = v;
	} else if (kind == VAL_WEIGHT) {
		int64_t n = ir_shape_const_numel(&s);
		size_t es = ir_dtype_size(dt);
		if (n < 0 || es == 0 || n > ((int64_t)1 << 31)) {
			txt_error(X, t, "weight '%%%s' needs a supported dtype and a constant shape", t->str);
			txt_skip_line(X);
			return;
		}
		if (!txt_budget_ok(X, t, n, es, t->str)) {
			txt_skip_line(X);
			return;
		}
		if (txt_weights_fill(X, &c->W, v, t, 0) <= 0) {
			v->data = arena_alloc(g->A, (size_t)n * es + 1);   /* zeros */
		}
		const txt_tok *pt = txt_peek(X);
		if (txt_accept_word(X, "frozen")) {
			if (g->parent || !g->train || dt != DT_F32)
				txt_error(X, pt, "'frozen' marks an f32 weight of the root graph of a training "
					  "build (one with a 'train' line)");
			v->frozen = 1;
		} else if (txt_accept_word(X, "param")) {
			int64_t k;
			if (!txt_parse_int(X, &k, "the parameter's number"))
				return;
			if (k < 0 || k > INT32_MAX)
				txt_error(X, pt, "parameter number %" PRId64 " out of range", k);
			else if (g->parent || !g->train || dt != DT_F32)
				txt_error(X, pt, "'param' marks an f32 weight of the root graph of a training "
					  "build (one with a 'train' line)");
			else {
				c->params = arena_grow(g->A, c->params, (size_t)c->nparams, (size_t)c->nparams + 1,
						       sizeof *c->params);
				c->param_k = arena_grow(g->A, c->param_k, (size_t)c->nparams, (size_t)c->nparams + 1,
							sizeof *c->param_k);
				c->params[c->nparams] = v;
				c->param_k[c->nparams++] = k;
			}
		}
	} else {
		if (!txt_expect(X, '=', "before the constant's data") || !txt_parse_const_data(c, g, v, t)) {
			txt_skip_line(X);
			return;
		}
	}
	const txt_tok *rt = txt_peek(X);
	if (txt_accept_word(X, "role")) {
		if (!parse_role(X, &v->role)) {
			txt_skip_line(X);
			return;
		}
		if (!ir_role_fits(v->role, kind, dt, -1, g->parent != NULL))
			txt_error(X, rt, "role %s marks %s, not %s '%%%s'", ir_role_keyword(v->role),
				  ir_role_where(v->role), kw, v->name);
	}
	txt_end_stmt(X);
}

/* ---- the node annotation (ir_print's comment after a node line) ---- */

/* "data-dependent axis A <= N" after an output's type in the annotation
 * (ir_value.data_dep): A, an axis of s whose dim is N; -1 when it is not
 * that. */
static int read_dd_axis(txt *S, ir_graph *g, const ir_shape *s)
{
	int64_t a;
	ir_dim bound;
	if (!txt_accept_word(S, "data") || !txt_accept(S, '-') || !txt_accept_word(S, "dependent") ||
	    !txt_accept_word(S, "axis") || !txt_parse_int(S, &a, "an axis") || !txt_accept(S, '<') ||
	    !txt_accept(S, '=') || !txt_parse_dim(S, g, &bound))
		return -1;
	return a >= 0 && a < s->rank && ir_dim_eq(s->d[a], bound) ? (int)a : -1;
}

/* Reads "# TYPES  node "NAME" [from OP] [group N] [backward]" from the source
 * text after the node line's last token, each of TYPES a type with its
 * [narrow T] [data-dependent axis A <= N] [slot N], or '_'; ignored unless
 * it is complete and well formed. */
static void read_annotation(gctx *c, ir_graph *g, ir_node *n, const txt_tok *last)
{
	txt *X = c->X;
	size_t i = last->end;
	while (i < X->n && (X->src[i] == ' ' || X->src[i] == '\t'))
		i++;
	if (i >= X->n || X->src[i] != '#')
		return;
	size_t e = i + 1;
	while (e < X->n && X->src[e] != '\n')
		e++;
	diag quiet;
	diag_init(&quiet, X->path);
	quiet.quiet = 1;
	txt sub = {0}, *S = &sub;
	S->A = X->A;
	S->D = &quiet;
	S->path = X->path;
	S->src = arena_strndup(X->A, X->src + i + 1, e - i - 1);
	S->n = e - i - 1;
	txt_lex(S);
	if (quiet.nerrors)
		return;
	ir_dtype *dts = arena_array(X->A, (size_t)(n->nout + 1), sizeof *dts);
	ir_dtype *nars = arena_array(X->A, (size_t)(n->nout + 1), sizeof *nars);
	ir_shape *shs = arena_array(X->A, (size_t)(n->nout + 1), sizeof *shs);
	int64_t *slots = arena_array(X->A, (size_t)(n->nout + 1), sizeof *slots);
	int *dd = arena_array(X->A, (size_t)(n->nout + 1), sizeof *dd);
	for (int k = 0; k < n->nout; k++) {
		if (k && !txt_accept(S, ','))
			return;
		slots[k] = -1;
		shs[k].rank = -1;
		dd[k] = -1;
		if (txt_accept_word(S, "_"))
			continue;
		if (!txt_parse_type(S, g, &dts[k], &shs[k], 0) || !parse_narrow(S, dts[k], &nars[k]))
			return;
		if (txt_is_word(txt_peek(S), "data") && (dd[k] = read_dd_axis(S, g, &shs[k])) < 0)
			return;
		if (txt_accept_word(S, "slot") && (!txt_parse_int(S, &slots[k], "a slot") || slots[k] < 0 ||
						   slots[k] > INT32_MAX))
			return;
	}
	const txt_tok *nm;
	if (!txt_accept_word(S, "node") || (nm = txt_next(S))->kind != TK_STRING)
		return;
	const char *from = NULL;
	int64_t group = 0;
	if (txt_accept_word(S, "from")) {
		const txt_tok *f = txt_next(S);
		if (f->kind != TK_IDENT)
			return;
		from = f->str;
	}
	if (txt_accept_word(S, "group") && (!txt_parse_int(S, &group, "a group") || group < 0 ||
					    group > INT32_MAX))
		return;
	int bwd = txt_accept_word(S, "backward");
	if (txt_peek(S)->kind != TK_EOF || quiet.nerrors)
		return;
	if (bwd && !g->parent && g->train && g->train->graded && !g->train->bwd_start)
		g->train->bwd_start = n;
	n->name = nm->str;
	if (from)
		n->op_type = from;
	n->group = (int)group;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k]) {
			n->out[k]->dtype = dts[k];
			n->out[k]->narrow = nars[k];
			n->out[k]->shape = shs[k];
			n->out[k]->slot = (int)slots[k];
			n->out[k]->data_dep = dd[k] >= 0;
			n->out[k]->dd_axis = dd[k] >= 0 ? dd[k] : 0;
		}
}

/* ---- nodes ---- */

static int has_body_op(ir_op op) { return op == OP_RECURRENCE || op == OP_LOOP || op == OP_SCAN; }

static void parse_graph_lines(gctx *c, ir_graph *g);

/* Checks a recurrence's attributes against its operands and body (what
 * ir_verify would otherwise abort on). */
static int check_recurrence(gctx *c, ir_node *n, const txt_tok *at)
{
	txt *X = c->X;
	int64_t ns = ir_attr_int(n, "n_seq", -1), nst = ir_attr_int(n, "n_state", -1);
	int64_t no = ir_attr_int(n, "n_out", -1), lens = ir_attr_int(n, "has_lens", 0) != 0;
	int64_t step = ir_attr_int(n, "has_step", 0);
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	const ir_graph *b = n->body;
	if (ns < 1 || nst < 0 || no < 0 || ns > 1024 || nst > 1024 || no > 1024 || step < 0 || step > 2) {
		txt_error(X, at, "Recurrence needs n_seq >= 1, n_state >= 0, n_out >= 0 and has_step 0, 1 "
			  "or 2 (ints)");
		return 0;
	}
	if (n->nin != ns + nst + lens || n->nout != nst + no) {
		txt_error(X, at, "Recurrence has %d inputs and %d outputs; its attributes say %d and %d",
			  n->nin, n->nout, (int)(ns + nst + lens), (int)(nst + no));
		return 0;
	}
	for (int k = 0; k < ns; k++)
		if (!n->in[k]) {
			txt_error(X, at, "Recurrence lacks sequence input %d", k);
			return 0;
		}
	if (lens && !n->in[n->nin - 1]) {
		txt_error(X, at, "Recurrence has has_lens = 1 but no lens input");
		return 0;
	}
	if (!sa || sa->kind != ATTR_INTS || sa->n != ns || (no > 0 && (!oa || oa->kind != ATTR_INTS ||
								     oa->n != no))) {
		txt_error(X, at, "Recurrence needs seq_axis with n_seq axes and out_axis with n_out axes");
		return 0;
	}
	for (int k = 0; k < sa->n; k++)
		if (sa->ints[k] != 0 && sa->ints[k] != 1) {
			txt_error(X, at, "Recurrence time axes are 0 or 1");
			return 0;
		}
	for (int k = 0; oa && k < oa->n; k++)
		if (oa->ints[k] != 0 && oa->ints[k] != 1) {
			txt_error(X, at, "Recurrence time axes are 0 or 1");
			return 0;
		}
	if (b->ninputs != ns + nst + step || b->noutputs != nst + no) {
		txt_error(X, at, "Recurrence body has %d inputs and %d outputs; the attributes say %d and %d",
			  b->ninputs, b->noutputs, (int)(ns + nst + step), (int)(nst + no));
		return 0;
	}
	for (int64_t k = ns + nst; k < b->ninputs; k++)
		if (!b->inputs[k] || b->inputs[k]->dtype != DT_F32 || b->inputs[k]->shape.rank != 0) {
			txt_error(X, at, "Recurrence body input %d is a step counter (has_step): an f32 scalar",
				  (int)k);
			return 0;
		}
	for (int64_t k = ns; k < b->ninputs; k++)
		if (b->inputs[k] &&
		    (b->inputs[k]->role == IR_ROLE_STEP_COEF || b->inputs[k]->role == IR_ROLE_PROJECTION)) {
			txt_error(X, at, "Recurrence body input %d has the role %s, which marks %s", (int)k,
				  ir_role_keyword(b->inputs[k]->role), ir_role_where(b->inputs[k]->role));
			return 0;
		}
	return 1;
}

/* Output types of a recurrence without an annotation: from its body. */
static void recurrence_types(ir_node *n)
{
	int64_t ns = ir_attr_int(n, "n_seq", 0), nst = ir_attr_int(n, "n_state", 0);
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	const ir_value *x = n->in[0];
	if (!x || x->shape.rank < 2 || !sa || ns < 1)
		return;
	ir_dim T = x->shape.d[sa->ints[0]];
	for (int k = 0; k < n->nout; k++) {
		ir_value *o = n->out[k], *b = n->body->outputs[k];
		if (!o || o->shape.rank >= 0 || !b || b->shape.rank < 1 || b->shape.rank >= IR_MAX_RANK)
			continue;
		o->dtype = b->dtype;
		if (k < nst) {
			o->shape = b->shape;
			continue;
		}
		int ax = oa && k - nst < oa->n ? (int)oa->ints[k - nst] : 0;
		o->shape.rank = b->shape.rank + 1;
		for (int i = 0, j = 0; i < o->shape.rank; i++)
			o->shape.d[i] = i == ax ? T : b->shape.d[j++];
	}
}

/* A node's line as parse_node reads it: what its steps share. */
enum { NODE_MAX_IO = 1024 };    /* inputs, outputs, roles */
typedef struct nline {
	const txt_tok *outs[NODE_MAX_IO];       /* the outputs: %name or '_' */
	int nout;
	const txt_tok *opt;             /* the operation's name */
	int op;
	const ir_opinfo *oi;
	ir_node *n;
	int bad;                        /* an error reported: the node is not added */
	const txt_tok *role_of[NODE_MAX_IO];    /* the output that roles[j] marks */
	ir_role roles[NODE_MAX_IO];
	int nroles;
	txt_link links[NODE_MAX_IO];    /* grad_of / recomputes; .v set with the outputs */
	const txt_tok *link_of[NODE_MAX_IO];    /* the output that links[j] is of */
	int nlinks;
	const txt_tok *last;            /* where the node's annotation is looked for */
	int body;                       /* a body follows */
} nline;

/* The outputs before '=', when there are any. 0: an error, the line skipped. */
static int read_node_outputs(txt *X, nline *L)
{
	const txt_tok *start = txt_peek(X);
	/* outputs: only when a '=' follows the list */
	if (start->kind == TK_VALNAME || txt_is_word(start, "_")) {
		for (;;) {
			const txt_tok *t = txt_peek(X);
			if (t->kind != TK_VALNAME && !txt_is_word(t, "_")) {
				txt_error(X, t, "expected an output value (%%name or '_'), found %s",
					  txt_tok_desc(X, t));
				txt_skip_line(X);
				return 0;
			}
			if (L->nout == (int)COUNTOF(L->outs)) {
				txt_error(X, t, "too many outputs");
				txt_skip_line(X);
				return 0;
			}
			L->outs[L->nout++] = txt_next(X);
			if (!txt_accept(X, ','))
				break;
		}
		if (!txt_expect(X, '=', "after the node's outputs")) {
			txt_skip_line(X);
			return 0;
		}
	}
	return 1;
}

/* The operation's name and the '(' after it. */
static int read_node_op(txt *X, nline *L)
{
	L->opt = txt_peek(X);
	if (L->opt->kind != TK_IDENT) {
		txt_error(X, L->opt, "expected an operation name, found %s", txt_tok_desc(X, L->opt));
		txt_skip_line(X);
		return 0;
	}
	txt_next(X);
	L->op = ir_op_lookup(L->opt->str);
	if (L->op < 0) {
		txt_error(X, L->opt, "unknown operation '%s'", L->opt->str);
		txt_skip_line(X);
		return 0;
	}
	if (!txt_expect(X, '(', "after the operation name")) {
		txt_skip_line(X);
		return 0;
	}
	return 1;
}

/* The inputs up to ')'. */
static int read_node_inputs(gctx *c, ir_graph *g, ir_value **ins, int *count)
{
	txt *X = c->X;
	int nin = 0;
	if (!txt_accept(X, ')')) {
		do {
			if (nin == NODE_MAX_IO) {
				txt_error(X, txt_peek(X), "too many inputs");
				txt_skip_line(X);
				return 0;
			}
			if (!parse_use(c, g, &ins[nin++])) {
				txt_skip_line(X);
				return 0;
			}
		} while (txt_accept(X, ','));
		if (!txt_expect(X, ')', "after the inputs")) {
			txt_skip_line(X);
			return 0;
		}
	}
	*count = nin;
	return 1;
}

/* The attributes: '{' ... '}'. */
static int read_node_attrs(gctx *c, ir_graph *g, ir_node *n)
{
	txt *X = c->X;
	int ngraphs = 0;
	if (txt_accept(X, '{')) {
		do {
			if (!txt_parse_attr(c, g, n, &ngraphs)) {
				txt_skip_line(X);
				return 0;
			}
		} while (txt_accept(X, ','));
		if (!txt_expect(X, '}', "to close the attributes")) {
			txt_skip_line(X);
			return 0;
		}
	}
	return 1;
}

/* source KEYWORD: where a recurrence came from. */
static int read_node_source(txt *X, nline *L)
{
	const ir_opinfo *oi = L->oi;
	ir_node *n = L->n;
	if (txt_is_word(txt_peek(X), "source") && !txt_peek(X)->nl) {
		const txt_tok *st = txt_next(X);
		if (!parse_rec_source(X, &n->rec_source)) {
			txt_skip_line(X);
			return 0;
		}
		if (L->op != OP_RECURRENCE && !L->bad) {
			txt_error(X, st, "%s has no source (only a Recurrence says where it came from)", oi->name);
			L->bad = 1;
		}
	}
	return 1;
}

/* The output of the node that the token after a mark names, or -1 after
 * an error (the line skipped). */
static int marked_output(txt *X, const nline *L, const char *mark)
{
	const txt_tok *vt = txt_peek(X);
	for (int j = 0; vt->kind == TK_VALNAME && j < L->nout; j++)
		if (L->outs[j]->kind == TK_VALNAME && strcmp(L->outs[j]->str, vt->str) == 0) {
			txt_next(X);
			return j;
		}
	txt_error(X, vt, "expected an output of this node (%%name) after '%s', found %s", mark,
		  txt_tok_desc(X, vt));
	txt_skip_line(X);
	return -1;
}

/* role %NAME KEYWORD: the role of one of the node's outputs. */
static int read_node_role(txt *X, ir_graph *g, nline *L)
{
	const ir_opinfo *oi = L->oi;
	const txt_tok *vt = txt_peek(X);
	int k = marked_output(X, L, "role");
	if (k < 0)
		return 0;
	if (L->nroles == (int)COUNTOF(L->roles) || !parse_role(X, &L->roles[L->nroles])) {
		txt_skip_line(X);
		return 0;
	}
	if (!ir_role_fits(L->roles[L->nroles], VAL_TEMP, DT_UNDEF, L->op, g->parent != NULL) && !L->bad) {
		txt_error(X, vt, "role %s marks %s, not an output of %s in %s", ir_role_keyword(L->roles[L->nroles]),
			  ir_role_where(L->roles[L->nroles]), oi->name, g->parent ? "a body" : "the root graph");
		L->bad = 1;
	}
	L->role_of[L->nroles++] = L->outs[k];
	return 1;
}

/* grad_of %NAME %F (NAME is dL/dF) or recomputes %NAME %F (NAME, in a
 * backward recurrence's body, computes again the forward body's F): what
 * pass_grad recorded for the names of the emitted code (ir.h).  F is
 * looked up once the whole graph is read (resolve_links). */
static int read_node_link(txt *X, ir_graph *g, nline *L, const txt_tok *kw)
{
	int rc = txt_is_word(kw, "recomputes");
	int k = marked_output(X, L, kw->str);
	if (k < 0)
		return 0;
	const txt_tok *ft = txt_peek(X);
	if (ft->kind != TK_VALNAME) {
		txt_error(X, ft, "expected the value that '%%%s' %s (%%name), found %s", L->outs[k]->str,
			  rc ? "recomputes" : "is the gradient of", txt_tok_desc(X, ft));
		txt_skip_line(X);
		return 0;
	}
	txt_next(X);
	for (int j = 0; j < L->nlinks; j++)
		if (L->link_of[j] == L->outs[k] && L->links[j].recomputes == rc && !L->bad) {
			txt_error(X, kw, "'%s' of '%%%s' given twice", kw->str, L->outs[k]->str);
			L->bad = 1;
		}
	if (rc && !g->parent && !L->bad) {
		txt_error(X, kw, "'recomputes' marks a value of a backward recurrence's body, not of the root graph");
		L->bad = 1;
	}
	if (L->nlinks == (int)COUNTOF(L->links)) {
		txt_error(X, kw, "too many marks");
		txt_skip_line(X);
		return 0;
	}
	L->links[L->nlinks] = (txt_link){.recomputes = rc, .kw = kw, .target = ft};
	L->link_of[L->nlinks++] = L->outs[k];
	return 1;
}

/* What passes recorded about the node's outputs, in any order:
 * role %NAME KEYWORD, grad_of %NAME %F, recomputes %NAME %F. */
static int read_node_marks(txt *X, ir_graph *g, nline *L)
{
	for (;;) {
		const txt_tok *t = txt_peek(X);
		if (t->nl || !(txt_is_word(t, "role") || txt_is_word(t, "grad_of") || txt_is_word(t, "recomputes")))
			return 1;
		txt_next(X);
		if (!(txt_is_word(t, "role") ? read_node_role(X, g, L) : read_node_link(X, g, L, t)))
			return 0;
	}
}

/* The end of the line, or 'body {' (a node with a body). */
static int read_node_body_open(txt *X, nline *L)
{
	const ir_opinfo *oi = L->oi;
	L->last = &X->t[X->pos - 1];
	L->body = 0;
	if (txt_is_word(txt_peek(X), "body") && !txt_peek(X)->nl) {
		txt_next(X);
		L->last = txt_peek(X);
		if (!txt_expect(X, '{', "to open the body")) {
			txt_skip_line(X);
			return 0;
		}
		L->body = 1;
	}
	if (!L->body && !txt_end_stmt(X))
		return 0;
	if (L->body != has_body_op((ir_op)L->op) && !L->bad) {
		txt_error(X, L->opt, L->body ? "%s has no body" : "%s needs a body ('body { ... }')", oi->name);
		L->bad = 1;
	}
	return 1;
}

/* The outputs exist from here on (a body cannot use them: it runs first),
 * with their roles. */
static void define_node_outputs(gctx *c, ir_graph *g, nline *L)
{
	ir_node *n = L->n;
	for (int k = 0; k < L->nout; k++) {
		if (txt_is_word(L->outs[k], "_"))
			continue;
		ir_value *v = define(c, g, L->outs[k], VAL_TEMP);
		if (!v)
			L->bad = 1;
		n->out[k] = v;
		for (int j = 0; v && j < L->nroles; j++)
			if (L->role_of[j] == L->outs[k])
				v->role = L->roles[j];
		for (int j = 0; v && j < L->nlinks; j++)
			if (L->link_of[j] == L->outs[k])
				L->links[j].v = v;
	}
	for (int j = 0; !L->bad && j < L->nlinks; j++) {
		c->links = arena_grow(g->A, c->links, (size_t)c->nlinks, (size_t)c->nlinks + 1, sizeof *c->links);
		c->links[c->nlinks++] = L->links[j];
	}
}

/* The blocks of the node's graph attributes: 'graph NAME { ... }' each. */
static int read_node_graphs(gctx *c, ir_node *n)
{
	txt *X = c->X;
	for (int i = 0; i < n->nattrs; i++) {
		ir_attr *a = &n->attrs[i];
		if (a->kind != ATTR_GRAPH)
			continue;
		const txt_tok *t = txt_peek(X);
		if (!txt_accept_word(X, "graph")) {
			txt_error(X, t, "expected the block of graph attribute '%s' ('graph %s { ... }')",
				  a->name, a->g->name);
			return 0;
		}
		const char *gn = txt_sym_name(X);
		if (!gn || strcmp(gn, a->g->name) != 0) {
			txt_error(X, t, "expected the block of graph '%s'", a->g->name);
			txt_skip_line(X);
			return 0;
		}
		if (!txt_expect(X, '{', "to open the graph"))
			return 0;
		parse_graph_lines(c, a->g);
		if (!txt_expect(X, '}', "to close the graph"))
			return 0;
		txt_end_stmt(X);
	}
	return 1;
}

static void parse_node(gctx *c, ir_graph *g)
{
	txt *X = c->X;
	nline L0 = {0}, *L = &L0;
	if (!read_node_outputs(X, L) || !read_node_op(X, L))
		return;
	ir_value *ins[NODE_MAX_IO];
	int nin;
	if (!read_node_inputs(c, g, ins, &nin))
		return;
	int op = L->op;
	const txt_tok *opt = L->opt;
	const ir_opinfo *oi = L->oi = &ir_ops[op];
	int nout = L->nout;
	if (nin < oi->min_in || nin > oi->max_in || nout < oi->min_out || nout > oi->max_out) {
		txt_error(X, opt, "%s takes %d to %d inputs and gives %d to %d outputs; here %d and %d",
			  oi->name, oi->min_in, oi->max_in, oi->min_out, oi->max_out, nin, nout);
		L->bad = 1;
	}
	for (int k = 0; k < nin && k < oi->min_in && !L->bad; k++)
		if (!ins[k] && op != OP_RECURRENCE && op != OP_LOOP) {
			txt_error(X, opt, "%s: required input %d is '_'", oi->name, k);
			L->bad = 1;
		}
	ir_node *n = ir_node_new(g, (ir_op)op, NULL, nin, nout);
	memcpy(n->in, ins, (size_t)nin * sizeof *ins);
	L->n = n;
	if (!read_node_attrs(c, g, n) || !read_node_source(X, L) || !read_node_marks(X, g, L) ||
	    !read_node_body_open(X, L))
		return;
	define_node_outputs(c, g, L);
	read_annotation(c, g, n, L->last);
	if (L->body) {
		n->body = ir_graph_new(g->A, g, n->name);
		parse_graph_lines(c, n->body);
		if (!txt_expect(X, '}', "to close the body"))
			return;
		txt_end_stmt(X);
	}
	if (!read_node_graphs(c, n))
		return;
	if (n->op == OP_RECURRENCE && n->body && !L->bad && !check_recurrence(c, n, opt))
		L->bad = 1;
	if (L->bad)
		return;
	ir_append(g, n);
	for (int k = 0; k < nout; k++)
		if (n->out[k] && n->out[k]->shape.rank < 0 && n->op == OP_RECURRENCE)
			recurrence_types(n);
}

static void parse_output(gctx *c, ir_graph *g)
{
	txt *X = c->X;
	if (g->noutputs) {
		txt_error(X, &X->t[X->pos - 1], "a graph has one 'output' line");
		txt_skip_line(X);
		return;
	}
	ir_value *outs[1024];
	int n = 0;
	if (!txt_peek(X)->nl) {
		do {
			if (n == (int)COUNTOF(outs)) {
				txt_error(X, txt_peek(X), "too many outputs");
				txt_skip_line(X);
				return;
			}
			const txt_tok *t = txt_peek(X);
			if (!parse_use(c, g, &outs[n]) || !outs[n]) {
				if (txt_is_word(t, "_"))
					txt_error(X, t, "a graph output cannot be '_'");
				txt_skip_line(X);
				return;
			}
			n++;
		} while (txt_accept(X, ','));
	}
	if (!txt_end_stmt(X))
		return;
	g->outputs = arena_array(g->A, (size_t)(n ? n : 1), sizeof *g->outputs);
	memcpy(g->outputs, outs, (size_t)n * sizeof *outs);
	g->noutputs = n;
	if (!g->parent)
		for (int i = 0; i < n; i++)
			outs[i]->is_output = 1;
}

/* `KEY N` of a 'train' or 'unrolled' line, k the KEY: one of keys[0, n)
 * not given before (have), N an integer in [0, INT32_MAX] into val; the
 * key's index, or -1 after a located error (the line skipped; `expected`
 * says where and what was expected). */
static int keyed_int(txt *X, const txt_tok *k, const char *const *keys, int n, int *have, int64_t *val,
		     const char *expected)
{
	int i = 0;
	while (i < n && !txt_is_word(k, keys[i]))
		i++;
	if (i == n || have[i]) {
		txt_error(X, k, "%s in %s, once each", txt_tok_desc(X, k), expected);
		txt_skip_line(X);
		return -1;
	}
	if (!txt_parse_int(X, &val[i], keys[i])) {
		txt_skip_line(X);
		return -1;
	}
	if (val[i] < 0 || val[i] > INT32_MAX) {
		txt_error(X, k, "%s %" PRId64 " out of range", keys[i], val[i]);
		txt_skip_line(X);
		return -1;
	}
	have[i] = 1;
	return i;
}

/* The lines of a graph or body up to its closing '}' (not consumed). */
/* `train loss "ce" [, loss_output "NAME"] [, x_input N, batch_axis N,
 * time_axis N, logits_output N, loss_output_index N, classes N,
 * forward_outputs N]` (ir.h, ir_train; the numbers all or none). */
static void parse_train(gctx *c, ir_graph *g, const txt_tok *at)
{
	static const char *const keys[] = {"x_input", "batch_axis", "time_axis", "logits_output",
					   "loss_output_index", "classes", "forward_outputs"};
	txt *X = c->X;
	if (g->train || g->ninputs || g->nvalues) {
		txt_error(X, at, "'train' comes once, before the declarations");
		txt_skip_line(X);
		return;
	}
	ir_train *t = arena_alloc(g->A, sizeof *t);
	memset(t, 0, sizeof *t);
	int64_t val[7];
	int have[7] = {0}, nhave = 0;
	const txt_tok *s;
	if (!txt_accept_word(X, "loss") || (s = txt_next(X))->kind != TK_STRING ||
	    (t->loss = train_loss_lookup(s->str)) < 0) {
		txt_error(X, at, "expected 'train loss \"L\"' with L one of ce, ce-all, mse, masked-mse");
		txt_skip_line(X);
		return;
	}
	while (txt_accept(X, ',')) {
		const txt_tok *k = txt_next(X);
		if (txt_is_word(k, "loss_output")) {
			if ((s = txt_next(X))->kind != TK_STRING) {
				txt_error(X, s, "expected the loss output's name as a string");
				txt_skip_line(X);
				return;
			}
			t->loss_output = s->str;
			continue;
		}
		if (keyed_int(X, k, keys, 7, have, val, "a 'train' line: expected one of loss_output, x_input, "
			      "batch_axis, time_axis, logits_output, loss_output_index, classes, forward_outputs") < 0)
			return;
		nhave++;
	}
	if (nhave && nhave < 7) {
		txt_error(X, at, "a graded 'train' line gives all of x_input, batch_axis, time_axis, "
			  "logits_output, loss_output_index, classes and forward_outputs");
		return;
	}
	if (nhave) {
		t->graded = 1;
		t->x_input = (int)val[0];
		t->batch_axis = (int)val[1];
		t->time_axis = (int)val[2];
		t->logits_output = (int)val[3];
		t->loss_output_index = (int)val[4];
		t->nclasses = (int)val[5];
		t->nfwd_outputs = (int)val[6];
	}
	g->train = t;
	c->train_at = at;
}

/* `unrolled "SEQ", steps N, nodes N, per_step N, why WHY[, step N, vs N,
 * node "NAME"[, op OP]]`: a traced loop pass_reroll left unrolled (ir.h,
 * ir_unrolled; WHY a keyword of fallback.def). */
static void parse_unrolled(gctx *c, ir_graph *g, const txt_tok *at)
{
	static const char *const keys[] = {"steps", "nodes", "per_step", "step", "vs"};
	enum { NKEYS = 5 };
	txt *X = c->X;
	const txt_tok *s = txt_next(X);
	if (s->kind != TK_STRING) {
		txt_error(X, s, "expected the sequence's name as a string after 'unrolled'");
		txt_skip_line(X);
		return;
	}
	ir_unrolled u = {.why = WHY_NONE, .seq = s->str, .step = -1, .vs = -1, .op = -1};
	int64_t val[NKEYS] = {0};
	int have[NKEYS] = {0}, have_why = 0;
	while (txt_accept(X, ',')) {
		const txt_tok *k = txt_next(X);
		if (txt_is_word(k, "why") || txt_is_word(k, "op")) {
			const txt_tok *w = txt_next(X);
			int x = w->kind != TK_IDENT ? -1
				: k->str[0] == 'w' ? ir_unrolled_why_lookup(w->str) : ir_op_lookup(w->str);
			if (x < 0) {
				txt_error(X, w, "%s is no %s", txt_tok_desc(X, w),
					  k->str[0] == 'w' ? "reason a loop stays unrolled (fallback.def)" : "operator");
				txt_skip_line(X);
				return;
			}
			if (k->str[0] == 'w') {
				u.why = (ir_unrolled_why)x;
				have_why = 1;
			} else {
				u.op = x;
			}
			continue;
		}
		if (txt_is_word(k, "node")) {
			const txt_tok *w = txt_next(X);
			if (w->kind != TK_STRING) {
				txt_error(X, w, "expected the node's name as a string after 'node'");
				txt_skip_line(X);
				return;
			}
			u.node = w->str;
			continue;
		}
		if (keyed_int(X, k, keys, NKEYS, have, val, "an 'unrolled' line: expected one of steps, nodes, "
			      "per_step, why, step, vs, node, op") < 0)
			return;
	}
	if (!have[0] || !have[1] || !have[2] || !have_why || have[3] != have[4] || (have[3] && !u.node) ||
	    val[0] < 3) {
		txt_error(X, at, "an 'unrolled' line gives steps (at least 3), nodes, per_step and why, and step, "
			  "vs and node together or none of them");
		return;
	}
	u.steps = (int)val[0];
	u.nodes = (int)val[1];
	u.per_step = (int)val[2];
	if (have[3]) {
		u.step = (int)val[3];
		u.vs = (int)val[4];
	}
	ir_unrolled_add(g, &u);
}

/* sizes "NAME" = "INTO" | N, node "NODE", why "WHY"  (ir_sym_link, ir.h):
 * a symbol an operator's contract made one with another or fixed. */
static void parse_link(gctx *c, ir_graph *g, const txt_tok *at)
{
	txt *X = c->X;
	ir_sym_link l = {0};
	const txt_tok *s = txt_next(X);
	if (s->kind != TK_STRING || !*s->str) {
		txt_error(X, s, "expected the symbol's name as a string after 'sizes'");
		txt_skip_line(X);
		return;
	}
	l.name = s->str;
	const txt_tok *v = txt_peek(X);
	if (txt_accept(X, '>'))
		l.at_least = 1;
	if (!txt_accept(X, '=')) {
		txt_error(X, v, "a 'sizes' line: expected '=' or '>=' after the symbol's name, found %s",
			  txt_tok_desc(X, v));
		txt_skip_line(X);
		return;
	}
	v = txt_peek(X);
	if (l.at_least && !(v->kind == TK_INT)) {
		txt_error(X, v, "a 'sizes' line: '>=' takes the least value, a number; found %s", txt_tok_desc(X, v));
		txt_skip_line(X);
		return;
	}
	if (v->kind == TK_STRING && *v->str) {
		txt_next(X);
		l.into = v->str;
	} else if (!txt_parse_int(X, &l.value, "the symbol it became or the size it must be")) {
		txt_skip_line(X);
		return;
	} else if (l.value < 1 || l.value > INT32_MAX) {
		txt_error(X, v, "a 'sizes' line: size %lld out of range (1 to %d)", (long long)l.value, INT32_MAX);
		txt_skip_line(X);
		return;
	}
	for (int k = 0; k < 2; k++) {
		const txt_tok *w = txt_peek(X);
		const char *key = k ? "why" : "node";
		if (!txt_accept(X, ',') || !txt_accept_word(X, key) || (w = txt_next(X))->kind != TK_STRING) {
			txt_error(X, w, "a 'sizes' line gives the symbol, '=', what it became, then node \"NAME\" and "
				  "why \"PHRASE\"");
			txt_skip_line(X);
			return;
		}
		if (k)
			l.why = w->str;
		else
			l.node = w->str;
	}
	int k = txt_sym_lookup(g, l.name);
	if (l.at_least) {
		if (k < 0 || !ir_sym_free(g, k) || ir_sym_least(g, k) < l.value || l.value < 2)
			txt_error(X, at, "a 'sizes' line: '%s' >= %lld needs a free symbol that 'symbols' declares "
				  "with a least value of at least %lld", l.name, (long long)l.value, (long long)l.value);
		else
			ir_sym_link_add(g, &l);
		return;
	}
	if (k >= 0 && (l.into || g->sym_pin[k] != l.value)) {
		txt_error(X, at, "a 'sizes' line: '%s' was made one with another size and is no symbol any more, "
			  "but 'symbols' declares it", l.name);
		return;
	}
	ir_sym_link_add(g, &l);
}

/* After the root graph: each `SYM = value %IN` of the symbols line names an
 * int64 or int32 input of one element that no node reads (they read the symbolic
 * constant; ir_graph.sym_value). */
static void check_values(gctx *c, ir_graph *g)
{
	for (int i = 0; i < g->nsyms; i++) {
		if (!g->sym_value[i])
			continue;
		int xk = ir_sym_value_input(g, i);
		const ir_value *x = xk >= 0 ? g->inputs[xk] : NULL;
		if (!x || (x->dtype != DT_I64 && x->dtype != DT_I32) || x->shape.rank > 1 ||
		    ir_shape_const_numel(&x->shape) != 1) {
			txt_error(c->X, c->value_at[i], "symbol '%s' = value %%%s: that must be an input of the "
				  "graph of type i64[], i64[1], i32[] or i32[1]%s", g->syms[i], g->sym_value[i],
				  x ? arena_printf(g->A, ", not %s", ir_dtype_name(x->dtype)) : " (there is none)");
			continue;
		}
		for (int k = 0; k < g->nnodes; k++)
			for (int j = 0; j < g->nodes[k]->nin; j++)
				if (g->nodes[k]->in[j] == x) {
					txt_error(c->X, c->value_at[i], "symbol '%s' = value %%%s: node '%s' reads the input; "
						  "where its value is a size, nodes read the symbol (a constant such as "
						  "sym[%s])", g->syms[i], x->name, g->nodes[k]->name, g->syms[i]);
					return;
				}
	}
}

/* After the root graph: its parameters in the order the text numbers them,
 * and a graded training build's numbers against its inputs and outputs. */
static void finish_train(gctx *c, ir_graph *g)
{
	txt *X = c->X;
	ir_train *t = g->train;
	if (!t)
		return;
	t->params = arena_array(g->A, (size_t)c->nparams + 1, sizeof *t->params);
	for (int i = 0; i < c->nparams; i++) {
		int at = 0;     /* insertion by number: few parameters */
		for (int j = 0; j < c->nparams; j++)
			at += c->param_k[j] < c->param_k[i];
		for (int j = 0; j < i; j++)
			if (c->param_k[j] == c->param_k[i]) {
				txt_error(X, c->train_at, "weights '%s' and '%s' are both param %" PRId64,
					  c->params[j]->name, c->params[i]->name, c->param_k[i]);
				return;
			}
		t->params[at] = c->params[i];
	}
	t->nparams = c->nparams;
	const ir_value *w = ir_train_unlisted(t, g);
	if (w) {
		txt_error(X, c->train_at, "the training build reads weight '%s', which is no 'param' (every "
			  "f32 weight it reads is a trainable parameter)", w->name);
		return;
	}
	if (!t->graded)
		return;
	if (t->x_input >= g->ninputs || t->logits_output >= g->noutputs || t->loss_output_index >= g->noutputs ||
	    t->nfwd_outputs > t->loss_output_index || t->logits_output >= t->nfwd_outputs ||
	    !((t->batch_axis == 0 && t->time_axis == 1) || (t->batch_axis == 1 && t->time_axis == 0)))
		txt_error(X, c->train_at, "the 'train' line's inputs, outputs or axes do not fit the graph "
			  "(%d inputs, %d outputs; forward outputs before the loss, the logits among them, batch "
			  "and time axes 0 and 1)", g->ninputs, g->noutputs);
	else if (!t->bwd_start)
		txt_error(X, c->train_at, "a graded training build marks its first backward node "
			  "(the annotation 'backward')");

}

/* The values that grad_of and recomputes marks name, once the whole graph
 * is read (a backward body names values of the forward body, a graph
 * apart): defined somewhere in the text, not the marked value itself; what
 * a backward body's value recomputes is a node's result in another body
 * (ir_verify checks the same). */
static void resolve_links(gctx *c)
{
	txt *X = c->X;
	for (int i = 0; i < c->nlinks; i++) {
		txt_link *l = &c->links[i];
		ir_value *f = vtab_get(&c->names, l->target->str);
		if (!f) {
			txt_error(X, l->target, "'%s' names '%%%s', which no line of the graph defines", l->kw->str,
				  l->target->str);
			continue;
		}
		if (f == l->v) {
			txt_error(X, l->target, "'%%%s' cannot %s itself", f->name,
				  l->recomputes ? "recompute" : "be the gradient of");
			continue;
		}
		if (l->recomputes && (f->kind != VAL_TEMP || !f->graph->parent || f->graph == l->v->graph)) {
			txt_error(X, l->target, "'%%%s' recomputes a value a node of another recurrence's body makes "
				  "(the forward step's), not '%%%s'", l->v->name, f->name);
			continue;
		}
		if (l->recomputes)
			l->v->recomputes = f;
		else
			l->v->grad_of = f;
	}
}

static void parse_graph_lines(gctx *c, ir_graph *g)
{
	txt *X = c->X;
	int depth = 0;
	for (ir_graph *p = g; p; p = p->parent)
		depth++;
	if (depth > 64) {
		txt_error(X, txt_peek(X), "bodies nested more than 64 deep");
		return;
	}
	while (txt_peek(X)->kind != TK_EOF && !txt_is_punct(txt_peek(X), '}')) {
		const txt_tok *t = txt_peek(X);
		X->stmt_start = X->pos;
		if (!t->nl) {
			txt_error(X, t, "expected a new line before %s", txt_tok_desc(X, t));
			txt_skip_line(X);
			continue;
		}
		if (!g->parent && (txt_is_word(t, "producer") || txt_is_word(t, "weights"))) {
			txt_next(X);
			const txt_tok *s = txt_peek(X);
			if (s->kind != TK_STRING) {
				txt_error(X, s, "expected a string after '%s'", t->str);
				txt_skip_line(X);
				continue;
			}
			txt_next(X);
			if (t->str[0] == 'p')
				g->producer = s->str;
			else if (c->W.tf || g->ninputs || g->nvalues)
				txt_error(X, t, "'weights' comes once, before the declarations");
			else
				txt_weights_open(X, &c->W, s);
			txt_end_stmt(X);
		} else if (!g->parent && txt_is_word(t, "opset")) {
			txt_next(X);
			int64_t v;
			if (txt_parse_int(X, &v, "the opset version") && (v < 1 || v > 1000))
				txt_error(X, t, "opset %" PRId64 " out of range", v);
			else
				g->opset = (int)v;
			txt_end_stmt(X);
		} else if (!g->parent && txt_is_word(t, "sizes")) {
			txt_next(X);
			parse_link(c, g, t);
			txt_end_stmt(X);
		} else if (!g->parent && txt_is_word(t, "unrolled")) {
			txt_next(X);
			parse_unrolled(c, g, t);
			txt_end_stmt(X);
		} else if (!g->parent && txt_is_word(t, "train")) {
			txt_next(X);
			parse_train(c, g, t);
			txt_end_stmt(X);
		} else if (!g->parent && txt_is_word(t, "symbols")) {
			txt_next(X);
			do {
				const txt_tok *s = txt_peek(X);
				const char *name = txt_sym_name(X);
				if (!name) {
					txt_error(X, s, "expected a symbol name, found %s", txt_tok_desc(X, s));
					break;
				}
				int k = -1;
				if (txt_sym_lookup(g, name) >= 0)
					txt_error(X, s, "symbol '%s' declared twice", name);
				else if ((k = ir_sym_add(g, name)) < 0)
					txt_error(X, s, "too many dimension symbols (at most %d)", IR_MAX_SYMS);
				if (k >= 0 && txt_accept(X, '>'))
					txt_parse_sym_min(X, g, k);
				if (k >= 0 && txt_accept(X, '=')) {
					const txt_tok *w = txt_peek(X);
					if (!txt_accept_word(X, "value"))
						txt_parse_derived_sym(X, g, k, s);
					else if ((w = txt_next(X))->kind != TK_VALNAME)
						txt_error(X, w, "symbol '%s' = value: expected the input's name (%%NAME), "
							  "found %s", name, txt_tok_desc(X, w));
					else
						g->sym_value[k] = w->str, c->value_at[k] = w;   /* check_values */
				}
			} while (txt_accept(X, ','));
			txt_end_stmt(X);
		} else if (txt_is_word(t, "input") || txt_is_word(t, "weight") || txt_is_word(t, "const")) {
			if (txt_is_word(t, "input") && g->nnodes) {
				txt_error(X, t, "inputs are declared before the nodes");
				txt_skip_line(X);
				continue;
			}
			txt_next(X);
			parse_decl(c, g, t->str);
		} else if (txt_is_word(t, "output")) {
			txt_next(X);
			parse_output(c, g);
		} else if (g->noutputs) {
			txt_error(X, t, "nothing may follow the 'output' line of a graph");
			txt_skip_line(X);
		} else {
			parse_node(c, g);
		}
	}
	if (!g->noutputs && X->D->nerrors == X->errors_at_start)
		txt_error(X, txt_peek(X), "the graph has no 'output' line before %s",
			  txt_tok_desc(X, txt_peek(X)));
}

ir_graph *txt_graph_block(txt *X)
{
	gctx c0 = {0}, *c = &c0;
	c->X = X;
	txt_accept_word(X, "graph");
	const txt_tok *nt = txt_peek(X);
	const char *name = txt_sym_name(X);
	if (!name) {
		txt_error(X, nt, "expected the graph's name, found %s", txt_tok_desc(X, nt));
		return NULL;
	}
	ir_graph *g = ir_graph_new(X->A, NULL, name);
	if (!txt_expect(X, '{', "to open the graph"))
		return NULL;
	/* names made up while reading (a constant's, ...) must not take one
	 * that the text defines further down: they start past all of them */
	for (int i = X->pos; i < X->nt; i++)
		if (X->t[i].kind == TK_VALNAME)
			note_name(c, X->t[i].str);
	g->uniq = c->maxsuffix < INT64_MAX / 2 ? c->maxsuffix + 1 : INT64_MAX / 2;
	parse_graph_lines(c, g);
	if (X->D->nerrors == X->errors_at_start)
		resolve_links(c);
	if (X->D->nerrors == X->errors_at_start)
		finish_train(c, g);
	if (X->D->nerrors == X->errors_at_start)
		check_values(c, g);
	txt_expect(X, '}', "to close the graph");
	free(c->names.slot);
	txt_weights_close(&c->W);
	if (X->D->nerrors > X->errors_at_start)
		return NULL;
	g->uniq = c->maxsuffix < INT64_MAX / 2 ? c->maxsuffix + 1 : INT64_MAX / 2;
	ir_recount(g);
	return g;
}
