/* ir_print.c: the IR as native text (`cellc dump`), and dims for messages.
 *
 * The printed form is meant to be parsed back (a later issue), so it is
 * regular: one declaration or node per line, every name behind a sigil,
 * every literal self-describing.
 *
 *   graph main {
 *   	producer "pytorch 1.13.1"
 *   	opset 14
 *   	symbols batch, seq
 *   	unrolled "x", steps 8, nodes 164, per_step 20, why sizes, step 1, vs 2, node "Relu_3", op Relu
 *   	input %X: f32[seq, batch, 2]
 *   	weight %W: f32[1, 16, 2]
 *   	const %axes: i64[1] = [0]
 *   	const %shape: i64[3] = sym[seq, batch, 4]
 *   	const %big: f32[64, 64] = elided fnv1a:0123456789abcdef
 *   	%Y, _, %Y_c = LSTM(%X, %W, %R, _, _, %h0) {hidden_size = 4}  # f32[seq, 1, batch, 4], _, f32[1, batch, 4]
 *   	%u8 = Slice(%u, %c0, %c8, %c0, %c1) role %u8 trace_steps
 *   	%g = Mul(%dy, %w) grad_of %g %a  # f32[batch, 4]  node "Mul_9"
 *   	%h, %y = Recurrence(%u8, %h0) {n_seq = 1, reverse = 0} source traced_loop body {
 *   		input %x_t: f32[batch, 16]
 *   		...
 *   		output %h1, %y1
 *   	}
 *   	output %Y, %Y_c
 *   }
 *
 * A recurrence's `source` says where it came from, `role` what a pass made a
 * value for, on the line declaring it or after the attributes of the node
 * line defining it (ir.h: ir_rec_source, ir_role): decisions of later passes
 * read these, never the comments.  After a node's roles, pass_grad's links
 * of its results (ir.h, ir_value.grad_of): ` grad_of %G %V` (G is dL/dV),
 * ` recomputes %R %V` (R, in a backward body, computes the forward body's V
 * again).  An f32 value that stands for an ONNX FLOAT16 / BFLOAT16 tensor
 * has ` narrow f16` (` narrow bf16`) after its type (ir_value.narrow).
 *
 * Names: `%` then the name, bare when it is made of [A-Za-z0-9_./-] (a
 * leading `%` marks names the compiler made up), otherwise a C-escaped
 * "quoted" string; `_` is an omitted optional input or output.  Dims print as
 * monomials: "4", "batch", "4*seq*batch" (a power repeats the symbol), "?"
 * for unknown; a shape of unknown rank is "?", a type not inferred yet "?".  Integers print as integers;
 * floats always carry a '.' or an exponent (or are nan, inf, -inf); strings
 * are quoted; an empty list names its kind (ints[], floats[], strings[]).
 * Constants up to PRINT_MAX_ELEMS elements are printed in full (row-major,
 * flat), larger ones as an FNV-1a hash of their bytes.  Everything after `#`
 * is a comment for people: output shapes (with "data-dependent axis A <= N"
 * where the run decides the length of axis A, N the bound the buffer holds:
 * ir_value.data_dep), node name, fusion group, slot; after the root graph's
 * nodes, once slots are planned, one line per workspace slot with its dtype
 * and the elements it holds (ir_slot_info).
 */
#include "ir.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { PRINT_MAX_ELEMS = 32 };

/* ---- a growable string: the printer builds lines, then writes them ---- */

typedef struct sbuf {
	char *s;
	size_t len, cap;
} sbuf;

static void sb_putn(sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->s = realloc(b->s, cap);
		if (!b->s)
			arena_oom(NULL, cap, "printing the IR");
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	ASSERT(n >= 0 && (size_t)n < sizeof tmp);   /* only short numeric formats */
	sb_putn(b, tmp, (size_t)n);
}

static void sb_quoted(sbuf *b, const char *s)
{
	sb_puts(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sb_printf(b, "\\%c", *p);
		else if (*p == '\n')
			sb_puts(b, "\\n");
		else if (*p == '\t')
			sb_puts(b, "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			sb_printf(b, "\\x%02x", *p);
		else
			sb_putn(b, (const char *)p, 1);
	}
	sb_puts(b, "\"");
}

/* ---- names, dims, shapes ---- */

static int bare_name(const char *s)
{
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++) {
		char c = *p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '_' || c == '.' || c == '/' || c == '-' || (c == '%' && p == s);
		if (!ok)
			return 0;
	}
	return strcmp(s, "_") != 0;
}

static void sb_name(sbuf *b, const char *s)
{
	if (bare_name(s))
		sb_puts(b, s);
	else
		sb_quoted(b, s ? s : "");
}

/* Symbol, attribute and graph names have no sigil: bare only when they are
 * identifiers, so the text parser (txt_graph.c) never mistakes "batch-size"
 * for a subtraction. */
static void sb_ident(sbuf *b, const char *s)
{
	int ok = s && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_');
	for (const char *p = s; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		     *p == '_';
	if (ok)
		sb_puts(b, s);
	else
		sb_quoted(b, s ? s : "");
}

static void sb_value(sbuf *b, const ir_value *v)
{
	if (!v) {
		sb_puts(b, "_");
		return;
	}
	sb_puts(b, "%");
	sb_name(b, v->name);
}

static const ir_graph *root_of(const ir_graph *g)
{
	while (g && g->parent)
		g = g->parent;
	return g;
}

static void sb_dim(sbuf *b, const ir_graph *root, ir_dim d)
{
	if (!ir_dim_known(d)) {
		sb_puts(b, "?");
		return;
	}
	int first = 1;
	if (d.k != 1 || ir_dim_is_const(d)) {
		sb_printf(b, "%" PRId64, d.k);
		first = 0;
		if (d.k == 0)
			return;
	}
	for (int i = 0; i < IR_MAX_SYMS; i++)
		for (int p = 0; p < d.pow[i]; p++) {
			if (!first)
				sb_puts(b, "*");
			first = 0;
			if (root && i < root->nsyms)
				sb_ident(b, root->syms[i]);
			else
				sb_printf(b, "$%d", i);   /* a symbol the root does not declare: a bug, but show it */
		}
}

static void sb_shape(sbuf *b, const ir_graph *root, const ir_shape *s)
{
	if (s->rank < 0 || s->rank > IR_MAX_RANK) {
		sb_puts(b, "?");
		return;
	}
	sb_puts(b, "[");
	for (int i = 0; i < s->rank; i++) {
		if (i)
			sb_puts(b, ", ");
		sb_dim(b, root, s->d[i]);
	}
	sb_puts(b, "]");
}

static void sb_type(sbuf *b, const ir_graph *root, const ir_value *v)
{
	if (v->dtype == DT_UNDEF && v->shape.rank < 0) {
		sb_puts(b, "?");        /* not inferred yet: one '?' rather than "??" */
		return;
	}
	sb_puts(b, ir_dtype_name(v->dtype));
	sb_shape(b, root, &v->shape);
}

/* " narrow f16" after the type of an f32 value that stands for an ONNX
 * FLOAT16 or BFLOAT16 tensor (ir_value.narrow). */
static void sb_narrow(sbuf *b, const ir_value *v)
{
	if (v->narrow)
		sb_printf(b, " narrow %s", ir_dtype_name(v->narrow));
}

const char *ir_dim_str(arena *A, const ir_graph *g, ir_dim d)
{
	sbuf b = {0};
	sb_dim(&b, root_of(g), d);
	char *r = arena_strdup(A, b.s);
	free(b.s);
	return r;
}

const char *ir_shape_str(arena *A, const ir_graph *g, const ir_shape *s)
{
	sbuf b = {0};
	sb_shape(&b, root_of(g), s);
	char *r = arena_strdup(A, b.s);
	free(b.s);
	return r;
}

/* ---- literals ---- */

static void sb_float(sbuf *b, double x, int digits)
{
	if (isnan(x)) {
		sb_puts(b, "nan");
		return;
	}
	if (isinf(x)) {
		sb_puts(b, x < 0 ? "-inf" : "inf");
		return;
	}
	char tmp[64];
	/* digits 0: the shortest text that reads back as x (a double) */
	for (int d = digits ? digits : 15; ; d++) {
		snprintf(tmp, sizeof tmp, "%.*g", d, x);
		if (digits || d >= 17 || strtod(tmp, NULL) == x)
			break;
	}
	sb_puts(b, tmp);
	if (!strpbrk(tmp, ".e"))
		sb_puts(b, ".0");       /* keeps 1.0 apart from the integer 1 */
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

static void sb_const_data(sbuf *b, const ir_graph *root, const ir_value *v)
{
	int64_t n = ir_shape_const_numel(&v->shape);
	if (v->sym && n >= 0) {
		sb_puts(b, "sym[");
		for (int64_t i = 0; i < n; i++) {
			if (i)
				sb_puts(b, ", ");
			sb_dim(b, root, v->sym[i]);
		}
		sb_puts(b, "]");
		return;
	}
	size_t es = ir_dtype_size(v->dtype);
	if (!v->data || n < 0 || es == 0) {
		sb_puts(b, "?");
		return;
	}
	if (n > PRINT_MAX_ELEMS) {
		sb_printf(b, "elided fnv1a:%016" PRIx64, fnv1a(v->data, (size_t)n * es));
		return;
	}
	sb_puts(b, "[");
	for (int64_t i = 0; i < n; i++) {
		if (i)
			sb_puts(b, ", ");
		if (v->dtype == DT_F32)
			sb_float(b, ((const float *)v->data)[i], 9);
		else if (v->dtype == DT_F64)
			sb_float(b, ((const double *)v->data)[i], 17);
		else if (v->dtype == DT_U64)
			sb_printf(b, "%" PRIu64, ((const uint64_t *)v->data)[i]);
		else
			sb_printf(b, "%" PRId64, ir_const_int(v, i));
	}
	sb_puts(b, "]");
}

/* ---- declarations, attributes, nodes ---- */

static void print_graph(FILE *f, const ir_graph *g, int depth);

static void indent(sbuf *b, int depth)
{
	for (int i = 0; i < depth; i++)
		sb_puts(b, "\t");
}

static void flush(FILE *f, sbuf *b)
{
	fputs(b->s ? b->s : "", f);
	b->len = 0;
	if (b->s)
		b->s[0] = 0;
}

static void sb_attr(sbuf *b, const ir_graph *root, const ir_attr *a)
{
	static const char *const empty[] = {
		[ATTR_INTS] = "ints[]", [ATTR_FLOATS] = "floats[]", [ATTR_STRINGS] = "strings[]",
	};
	sb_ident(b, a->name);
	sb_puts(b, " = ");
	switch (a->kind) {
	case ATTR_INT: sb_printf(b, "%" PRId64, a->i); break;
	case ATTR_FLOAT:        /* a float32 as always; a .cell option's double in full */
		sb_float(b, a->f, (double)(float)a->f == a->f ? 9 : 0);
		break;
	case ATTR_STRING: sb_quoted(b, a->s ? a->s : ""); break;
	case ATTR_INTS:
	case ATTR_FLOATS:
	case ATTR_STRINGS:
		if (a->n == 0) {
			sb_puts(b, empty[a->kind]);
			break;
		}
		sb_puts(b, "[");
		for (int i = 0; i < a->n; i++) {
			if (i)
				sb_puts(b, ", ");
			if (a->kind == ATTR_INTS)
				sb_printf(b, "%" PRId64, a->ints[i]);
			else if (a->kind == ATTR_FLOATS)
				sb_float(b, a->floats[i], 9);
			else
				sb_quoted(b, a->strings[i] ? a->strings[i] : "");
		}
		sb_puts(b, "]");
		break;
	case ATTR_TENSOR:
		if (!a->t) {
			sb_puts(b, "tensor ?");
			break;
		}
		sb_puts(b, "tensor ");
		sb_type(b, root, a->t);
		sb_puts(b, " = ");
		sb_const_data(b, root, a->t);
		break;
	case ATTR_GRAPH:
		/* The graph itself follows the node line as a block (see print_node). */
		sb_puts(b, "graph ");
		sb_ident(b, a->g ? a->g->name : "?");
		break;
	}
}

/* What a pass made the node and its results for (ir.h): the source of a
 * recurrence, then per result its role and pass_grad's links. */
static void sb_node_marks(sbuf *b, const ir_node *n)
{
	if (n->rec_source != IR_REC_NONE)
		sb_printf(b, " source %s", ir_rec_source_keyword(n->rec_source));
	for (int i = 0; i < n->nout; i++) {
		const ir_value *o = n->out[i];
		if (o && o->role != IR_ROLE_NONE) {
			sb_puts(b, " role ");
			sb_value(b, o);
			sb_printf(b, " %s", ir_role_keyword(o->role));
		}
		if (o && o->grad_of) {
			sb_puts(b, " grad_of ");
			sb_value(b, o);
			sb_puts(b, " ");
			sb_value(b, o->grad_of);
		}
		if (o && o->recomputes) {
			sb_puts(b, " recomputes ");
			sb_value(b, o);
			sb_puts(b, " ");
			sb_value(b, o->recomputes);
		}
	}
}

/* The comment after a node line: output types, then where the node came
 * from (txt_graph.c reads it back as the annotation). */
static void sb_node_comment(sbuf *b, const ir_graph *root, const ir_node *n)
{
	sb_puts(b, "  # ");
	for (int i = 0; i < n->nout; i++) {
		if (i)
			sb_puts(b, ", ");
		if (n->out[i]) {
			sb_type(b, root, n->out[i]);
			sb_narrow(b, n->out[i]);
		} else {
			sb_puts(b, "_");
		}
		if (n->out[i] && n->out[i]->data_dep && n->out[i]->dd_axis >= 0 &&
		    n->out[i]->dd_axis < n->out[i]->shape.rank) {
			sb_printf(b, " data-dependent axis %d <= ", n->out[i]->dd_axis);
			sb_dim(b, root, n->out[i]->shape.d[n->out[i]->dd_axis]);
		}
		if (n->out[i] && n->out[i]->slot >= 0)
			sb_printf(b, " slot %d", n->out[i]->slot);
	}
	sb_puts(b, n->nout ? "  " : "");
	sb_puts(b, "node ");
	sb_quoted(b, n->name ? n->name : "");
	if (n->op_type && strcmp(n->op_type, ir_op_name(n->op)) != 0)
		sb_printf(b, " from %s", n->op_type);
	if (n->group)
		sb_printf(b, " group %d", n->group);
	if (root->train && root->train->bwd_start == n)
		sb_puts(b, " backward");
}

static void print_node(FILE *f, const ir_node *n, int depth)
{
	const ir_graph *root = root_of(n->graph);
	sbuf b = {0};
	indent(&b, depth);
	for (int i = 0; i < n->nout; i++) {
		if (i)
			sb_puts(&b, ", ");
		sb_value(&b, n->out[i]);
	}
	if (n->nout)
		sb_puts(&b, " = ");
	sb_puts(&b, ir_op_name(n->op));
	sb_puts(&b, "(");
	for (int i = 0; i < n->nin; i++) {
		if (i)
			sb_puts(&b, ", ");
		sb_value(&b, n->in[i]);
	}
	sb_puts(&b, ")");
	if (n->nattrs) {
		sb_puts(&b, " {");
		for (int i = 0; i < n->nattrs; i++) {
			if (i)
				sb_puts(&b, ", ");
			sb_attr(&b, root, &n->attrs[i]);
		}
		sb_puts(&b, "}");
	}
	sb_node_marks(&b, n);
	if (n->body)
		sb_puts(&b, " body {");
	sb_node_comment(&b, root, n);
	sb_puts(&b, "\n");
	flush(f, &b);
	if (n->body) {
		print_graph(f, n->body, depth + 1);
		indent(&b, depth);
		sb_puts(&b, "}\n");
		flush(f, &b);
	}
	for (int i = 0; i < n->nattrs; i++)
		if (n->attrs[i].kind == ATTR_GRAPH && n->attrs[i].g) {
			indent(&b, depth);
			sb_puts(&b, "graph ");
			sb_ident(&b, n->attrs[i].g->name);
			sb_puts(&b, " {\n");
			flush(f, &b);
			print_graph(f, n->attrs[i].g, depth + 1);
			indent(&b, depth);
			sb_puts(&b, "}\n");
			flush(f, &b);
		}
	free(b.s);
}

/* Values of graph g referenced by its nodes (including nested bodies, which
 * may capture them) or by its outputs.  Dead constants left behind by folding
 * are not worth printing.  A small open-addressing pointer set keeps this
 * linear for traced models with tens of thousands of nodes. */
typedef struct pset {
	const void **slot;
	size_t cap, n;
} pset;

static size_t phash(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static void pset_add(pset *s, const void *p)
{
	if (!p)
		return;
	if (2 * (s->n + 1) > s->cap) {
		pset old = *s;
		s->cap = old.cap ? 2 * old.cap : 256;
		s->slot = calloc(s->cap, sizeof *s->slot);
		if (!s->slot)
			arena_oom(NULL, s->cap * sizeof *s->slot, "printing the IR");
		s->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.slot[i])
				pset_add(s, old.slot[i]);
		free(old.slot);
	}
	size_t i = phash(p, s->cap);
	while (s->slot[i] && s->slot[i] != p)
		i = (i + 1) & (s->cap - 1);
	if (!s->slot[i]) {
		s->slot[i] = p;
		s->n++;
	}
}

static int pset_has(const pset *s, const void *p)
{
	if (!s->cap)
		return 0;
	size_t i = phash(p, s->cap);
	while (s->slot[i]) {
		if (s->slot[i] == p)
			return 1;
		i = (i + 1) & (s->cap - 1);
	}
	return 0;
}

static void collect_uses(pset *s, const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int j = 0; j < n->nin; j++)
			pset_add(s, n->in[j]);
		if (n->body)
			collect_uses(s, n->body);
		for (int j = 0; j < n->nattrs; j++)
			if (n->attrs[j].kind == ATTR_GRAPH && n->attrs[j].g)
				collect_uses(s, n->attrs[j].g);
	}
	for (int i = 0; i < g->noutputs; i++)
		pset_add(s, g->outputs[i]);
}

static void print_decl(sbuf *b, const ir_graph *root, const char *kw, const ir_value *v, int depth)
{
	indent(b, depth);
	sb_puts(b, kw);
	sb_puts(b, " ");
	sb_value(b, v);
	sb_puts(b, ": ");
	sb_type(b, root, v);
	sb_narrow(b, v);
	if (v->kind == VAL_CONST) {
		sb_puts(b, " = ");
		sb_const_data(b, root, v);
	}
	for (int k = 0; v->kind == VAL_WEIGHT && root->train && k < root->train->nparams; k++)
		if (root->train->params[k] == v)
			sb_printf(b, " param %d", k);
	if (v->kind == VAL_WEIGHT && root->train && v->frozen)
		sb_puts(b, " frozen");
	if (v->role != IR_ROLE_NONE)
		sb_printf(b, " role %s", ir_role_keyword(v->role));
	sb_puts(b, "\n");
}

/* A training build's line: `train loss "ce"`, and once pass_grad has run
 * what it made of the model (ir.h, ir_train). */
static void print_train(sbuf *b, const ir_train *t, int depth)
{
	indent(b, depth);
	sb_puts(b, "train loss ");
	sb_quoted(b, train_loss_name(t->loss));
	if (t->loss_output) {
		sb_puts(b, ", loss_output ");
		sb_quoted(b, t->loss_output);
	}
	if (t->graded)
		sb_printf(b, ", x_input %d, batch_axis %d, time_axis %d, logits_output %d, loss_output_index %d, "
			  "classes %d, forward_outputs %d", t->x_input, t->batch_axis, t->time_axis, t->logits_output,
			  t->loss_output_index, t->nclasses, t->nfwd_outputs);
	sb_puts(b, "\n");
}

/* A traced loop left unrolled (ir.h, ir_unrolled): `unrolled "x", steps 8,
 * nodes 164, per_step 20, why sizes[, step 1, vs 2, node "Relu_3", op Relu]`. */
static void print_unrolled(sbuf *b, const ir_unrolled *u, int depth)
{
	indent(b, depth);
	sb_puts(b, "unrolled ");
	sb_quoted(b, u->seq);
	sb_printf(b, ", steps %d, nodes %d, per_step %d, why %s", u->steps, u->nodes, u->per_step,
		  ir_unrolled_why_keyword(u->why));
	if (u->step >= 0 && u->node) {
		sb_printf(b, ", step %d, vs %d, node ", u->step, u->vs);
		sb_quoted(b, u->node);
		if (u->op >= 0 && u->op < OP_COUNT)
			sb_printf(b, ", op %s", ir_op_name((ir_op)u->op));
	}
	sb_puts(b, "\n");
}

/* A symbol's name as the text writes it: bare when an identifier, else
 * quoted (the names in a derived symbol's definition). */
static const char *ident_str(arena *A, const char *s)
{
	sbuf b = {0};
	sb_ident(&b, s);
	const char *r = arena_strdup(A, b.s);
	free(b.s);
	return r;
}

/* sizes "h_1" = "input_0", node "LSTM_3", why "..."  (ir_sym_link) */
static void print_link(sbuf *b, const ir_sym_link *l, int depth)
{
	indent(b, depth);
	sb_puts(b, "sizes ");
	sb_quoted(b, l->name);
	sb_puts(b, l->at_least ? " >= " : " = ");
	if (l->into)
		sb_quoted(b, l->into);
	else
		sb_printf(b, "%lld", (long long)l->value);
	sb_puts(b, ", node ");
	sb_quoted(b, l->node ? l->node : "");
	sb_puts(b, ", why ");
	sb_quoted(b, l->why ? l->why : "");
	sb_puts(b, "\n");
}

static void print_graph(FILE *f, const ir_graph *g, int depth)
{
	const ir_graph *root = root_of(g);
	sbuf b = {0};
	if (!g->parent) {
		if (g->producer) {
			indent(&b, depth);
			sb_puts(&b, "producer ");
			sb_quoted(&b, g->producer);
			sb_puts(&b, "\n");
		}
		if (g->opset) {         /* 0: the model imports no default-domain opset */
			indent(&b, depth);
			sb_printf(&b, "opset %d\n", g->opset);
		}
		if (g->nsyms) {
			indent(&b, depth);
			sb_puts(&b, "symbols ");
			for (int i = 0; i < g->nsyms; i++) {
				if (i)
					sb_puts(&b, ", ");
				sb_ident(&b, g->syms[i]);
				if (g->sym_min[i] > 1)  /* a least value: "T >= 2" */
					sb_printf(&b, " >= %lld", (long long)g->sym_min[i]);
				if (g->sym_value[i]) {  /* the value of an input: "n = value %n" */
					sb_puts(&b, " = value %");
					sb_name(&b, g->sym_value[i]);
				}
				if (!ir_sym_free(g, i)) {       /* derived: "T_minus_1 = T - 1", "L_div2 =
								 * floor((L + 1) / 2)", exact: "B_over2 = B / 2",
								 * "T1_plus_T2 = T1 + T2", "min_T_10 = min(T, 10)" */
					arena A;
					arena_init(&A);
					sb_puts(&b, " = ");
					sb_puts(&b, ir_sym_def_fmt(&A, g, i, ident_str));
					arena_free(&A);
					if (g->sym_pin[i])
						sb_printf(&b, " == %lld", (long long)g->sym_pin[i]);
				}
			}
			sb_puts(&b, "\n");
		}
		if (g->train)
			print_train(&b, g->train, depth);
		for (int i = 0; i < g->nunrolled; i++)
			print_unrolled(&b, &g->unrolled[i], depth);
		for (int i = 0; i < g->nlinks; i++)
			print_link(&b, &g->links[i], depth);
	}
	for (int i = 0; i < g->ninputs; i++)
		print_decl(&b, root, "input", g->inputs[i], depth);
	pset used = {0};
	collect_uses(&used, g);
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		if (v->kind == VAL_WEIGHT && pset_has(&used, v))
			print_decl(&b, root, "weight", v, depth);
	}
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		if (v->kind == VAL_CONST && pset_has(&used, v))
			print_decl(&b, root, "const", v, depth);
	}
	free(used.slot);
	flush(f, &b);
	for (int i = 0; i < g->nnodes; i++)
		print_node(f, g->nodes[i], depth);
	indent(&b, depth);
	sb_puts(&b, "output");
	for (int i = 0; i < g->noutputs; i++) {
		sb_puts(&b, i ? ", " : " ");
		sb_value(&b, g->outputs[i]);
	}
	sb_puts(&b, "\n");
	flush(f, &b);
	free(b.s);
}

/* "# slot 0: f32 x 4*batch elements" for each slot the planner made. */
static void print_slots(FILE *f, const ir_graph *g)
{
	sbuf b = {0};
	for (int s = 0;; s++) {
		ir_dim n;
		ir_dtype dt = DT_UNDEF;
		if (!ir_slot_info(g, s, &n, &dt))
			break;
		sb_printf(&b, "\t# slot %d: %s x ", s, ir_dtype_name(dt));
		sb_dim(&b, g, n);
		sb_puts(&b, " elements\n");
		flush(f, &b);
	}
	free(b.s);
}

void ir_print(FILE *f, const ir_graph *g)
{
	sbuf b = {0};
	sb_puts(&b, "graph ");
	sb_ident(&b, g->name ? g->name : "main");
	sb_puts(&b, " {\n");
	flush(f, &b);
	print_graph(f, g, 1);
	print_slots(f, g);
	fputs("}\n", f);
	free(b.s);
}
