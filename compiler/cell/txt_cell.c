/* txt_cell.c: cells defined as equations -> one RECURRENCE per layer.
 *
 *   cell NAME(x; h, c, v[4*H]) {          per-step input ; carried states [size]
 *       option mu = 0.6, s = 0.6          options with defaults (numbers)
 *       param W_x[4*H, I], b_x[4*H]       parameters; I input size, H = hidden
 *       u  = W_x @ x + b_x                @: the linear map W x (Gemm, transB=1)
 *       v' = mu * v + s * u               NAME' is the state's value at step t
 *       i, f, g, o = split(u + v', 4)     equal parts of the feature axis (Slice)
 *       h' = ...
 *       out h'                            per-step output (default: the first
 *   }                                     state's new value)
 *
 * A definition is kept as tokens and read again for every layer that uses it,
 * with that layer's I, H and options: sizes are integer expressions over H,
 * I and options; options and numbers become constants and are folded where
 * both operands are numbers; `t` is the 1-based step number (the recurrence
 * gets has_step = 1 and the body a scalar input).  Values in the body are
 * [B, n] rows; rank-1 parameters [n] and numbers broadcast over them; a
 * matrix parameter appears only left of @.  Every equation is checked for
 * shapes as it is built, and errors point at the operator or name at fault.
 */
#include "txt.h"
#include "infer.h"
#include "util.h"

#include <math.h>
#include <string.h>

enum { NK_INPUT, NK_STATE, NK_PARAM, NK_VAR, NK_OPTION, NK_STEP };

typedef struct cname {
	const char *name;
	int kind;
	ir_value *v;            /* value (NK_OPTION: NULL) */
	double k;               /* NK_OPTION: its value */
	ir_value *next;         /* NK_STATE: the new value, once assigned */
	int64_t size;           /* NK_STATE: columns */
	const txt_tok *size_at; /* NK_STATE: first token of a declared size */
} cname;

typedef struct cval {
	ir_value *v;            /* NULL: a number */
	double k;
	int is_param;           /* v is a parameter (root weight) */
} cval;

typedef struct cctx {
	txt *X;
	ir_graph *root, *body;
	txt_layer *L;
	const txt_celldef *def;
	cname *names;
	int nnames;
	int64_t I, H;
	ir_dim B;               /* the batch dim */
	int started;            /* body inputs made (after options and params) */
	int nstates, nerr0, depth;
	ir_value *step;         /* `t` */
	ir_value *out;
} cctx;

static cname *find(cctx *c, const char *name)
{
	for (int i = 0; i < c->nnames; i++)
		if (strcmp(c->names[i].name, name) == 0)
			return &c->names[i];
	return NULL;
}

static cname *add_name(cctx *c, const txt_tok *at, const char *name, int kind)
{
	if (find(c, name) || !strcmp(name, "t") || !strcmp(name, "H") || !strcmp(name, "I")) {
		txt_error(c->X, at, "'%s' is already defined in cell '%s'%s", name, c->def->name,
			  !strcmp(name, "t") ? " (t is the step number)" : !strcmp(name, "H") || !strcmp(name, "I")
				  ? " (H and I are the hidden and input sizes)" : "");
		return NULL;
	}
	c->names = arena_grow(c->X->A, c->names, (size_t)c->nnames, (size_t)c->nnames + 1, sizeof *c->names);
	cname *n = &c->names[c->nnames++];
	memset(n, 0, sizeof *n);
	n->name = name;
	n->kind = kind;
	return n;
}

static int failed(cctx *c) { return c->X->D->nerrors > c->nerr0; }

/* ---- integer size expressions: over numbers, H, I and options ---- */

static int size_expr(cctx *c, int64_t *v);

static int size_factor(cctx *c, int64_t *v)
{
	txt *X = c->X;
	const txt_tok *t = txt_peek(X);
	if (++c->depth > 64) {
		txt_error(X, t, "expression nested too deeply");
		return 0;
	}
	int ok = 1;
	if (txt_accept(X, '(')) {
		ok = size_expr(c, v) && txt_expect(X, ')', "to close the parenthesis");
	} else if (t->kind == TK_INT) {
		ok = txt_parse_int(X, v, "a size") && *v <= (1 << 30);
		if (!ok && !failed(c))
			txt_error(X, t, "size too large");
	} else if (txt_is_word(t, "H") || txt_is_word(t, "I")) {
		txt_next(X);
		*v = t->str[0] == 'H' ? c->H : c->I;
	} else if (t->kind == TK_IDENT && find(c, t->str) && find(c, t->str)->kind == NK_OPTION) {
		txt_next(X);
		double k = find(c, t->str)->k;
		if (k != floor(k) || fabs(k) > (1 << 30)) {
			txt_error(X, t, "option '%s' = %g is used as a size; it must be an integer", t->str, k);
			ok = 0;
		}
		*v = (int64_t)k;
	} else {
		txt_error(X, t, "expected a size (an integer, H, I or an option), found %s", txt_tok_desc(X, t));
		ok = 0;
	}
	c->depth--;
	return ok;
}

static int size_term(cctx *c, int64_t *v)
{
	if (!size_factor(c, v))
		return 0;
	for (;;) {
		const txt_tok *op = txt_peek(c->X);
		if (!txt_is_punct(op, '*') && !txt_is_punct(op, '/'))
			return 1;
		txt_next(c->X);
		int64_t r;
		if (!size_factor(c, &r))
			return 0;
		if (op->p == '/' && (r == 0 || *v % r)) {
			txt_error(c->X, op, "%lld / %lld is not an exact size", (long long)*v, (long long)r);
			return 0;
		}
		*v = op->p == '*' ? *v * r : *v / r;    /* factors are below 2^30: no overflow */
		if (*v > (1 << 30) || *v < -(1 << 30)) {
			txt_error(c->X, op, "size too large");
			return 0;
		}
	}
}

static int size_expr(cctx *c, int64_t *v)
{
	if (!size_term(c, v))
		return 0;
	for (;;) {
		const txt_tok *op = txt_peek(c->X);
		if (!txt_is_punct(op, '+') && !txt_is_punct(op, '-'))
			return 1;
		txt_next(c->X);
		int64_t r;
		if (!size_term(c, &r))
			return 0;
		*v = op->p == '+' ? *v + r : *v - r;
		if (*v > (1 << 30) || *v < -(1 << 30)) {
			txt_error(c->X, op, "size too large");
			return 0;
		}
	}
}

static int positive_size(cctx *c, const txt_tok *at, int64_t *v)
{
	if (!size_expr(c, v))
		return 0;
	if (*v < 1) {
		txt_error(c->X, at, "size %lld is not positive (H = %lld, I = %lld)", (long long)*v,
			  (long long)c->H, (long long)c->I);
		return 0;
	}
	return 1;
}

/* ---- building body nodes ---- */

static const char *shape_of(cctx *c, const ir_value *v) { return ir_shape_str(c->X->A, c->body, &v->shape); }

static ir_value *num_const(cctx *c, double k) { return ir_const_f32_scalar(c->body, NULL, (float)k); }

static ir_value *materialize(cctx *c, cval a) { return a.v ? a.v : num_const(c, a.k); }

/* Width of a row value for broadcasting: [B, n] -> n, [n] -> n, scalar -> 1. */
static int64_t width(const ir_value *v)
{
	if (v->shape.rank == 0)
		return 1;
	const ir_dim *d = &v->shape.d[v->shape.rank - 1];
	return ir_dim_is_const(*d) ? d->k : -1;
}

static ir_value *emit(cctx *c, const txt_tok *at, ir_op op, int nin, ir_value *a, ir_value *b, ir_value *d)
{
	ir_node *n = ir_node_new(c->body, op, NULL, nin, 1);
	n->in[0] = a;
	if (nin > 1)
		n->in[1] = b;
	if (nin > 2)
		n->in[2] = d;
	n->out[0] = ir_value_new(c->body, NULL, VAL_TEMP, DT_UNDEF);
	n->out[0]->producer = n;        /* until ir_append: finish() finds the node */
	n->origin = arena_printf(c->X->A, "cell %s, layer %s", c->def->name, c->L->name);
	return n->out[0];
}

/* Appends the node producing v (made by emit) after inferring it. */
static ir_value *finish(cctx *c, const txt_tok *at, ir_value *v, ir_node *n)
{
	diag q;
	diag_init(&q, c->X->path);
	q.quiet = 1;
	if (infer_node(c->body, n, &q) || q.nerrors) {
		const char *msg = strstr(q.last, "error: ");
		txt_error(c->X, at, "%s", msg ? msg + 7 : q.last);
		return NULL;
	}
	ir_append(c->body, n);
	return v;
}

/* ---- expressions ---- */

static int expr(cctx *c, cval *r);

static const char *const opnames = "+-*/";

static int binary(cctx *c, const txt_tok *at, char op, cval a, cval b, cval *r)
{
	if (!a.v && !b.v) {
		r->v = NULL;
		r->is_param = 0;
		r->k = op == '+' ? a.k + b.k : op == '-' ? a.k - b.k : op == '*' ? a.k * b.k : a.k / b.k;
		return 1;
	}
	ir_value *x = materialize(c, a), *y = materialize(c, b);
	for (int i = 0; i < 2; i++) {
		const ir_value *v = i ? y : x;
		if (v->shape.rank > 2 || ((i ? b : a).is_param && v->shape.rank == 2)) {
			txt_error(c->X, at, "'%c' works on rows and vectors; '%s' is a matrix %s (use it with @)",
				  op, v->name, shape_of(c, v));
			return 0;
		}
	}
	int64_t wa = width(x), wb = width(y);
	if (wa != wb && wa != 1 && wb != 1) {
		txt_error(c->X, at, "operands of '%c' do not match: %s and %s", op, shape_of(c, x), shape_of(c, y));
		return 0;
	}
	static const ir_op ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV};
	ir_value *v = emit(c, at, ops[strchr(opnames, op) - opnames], 2, x, y, NULL);
	r->v = finish(c, at, v, v->producer);
	r->is_param = 0;
	return r->v != NULL;
}

static int fold_unary(const char *f, double x, double *r)
{
	if (!strcmp(f, "exp")) *r = exp(x);
	else if (!strcmp(f, "log")) *r = log(x);
	else if (!strcmp(f, "sqrt")) *r = sqrt(x);
	else if (!strcmp(f, "abs")) *r = fabs(x);
	else if (!strcmp(f, "neg")) *r = -x;
	else if (!strcmp(f, "tanh")) *r = tanh(x);
	else if (!strcmp(f, "sigmoid")) *r = 1.0 / (1.0 + exp(-x));
	else if (!strcmp(f, "relu")) *r = x > 0 ? x : 0;
	else if (!strcmp(f, "softplus")) *r = log1p(exp(x));
	else if (!strcmp(f, "sign")) *r = x > 0 ? 1 : x < 0 ? -1 : 0;
	else return 0;
	return 1;
}

static const struct {
	const char *name;
	ir_op op;
} unary_fns[] = {
	{"sigmoid", OP_SIGMOID}, {"tanh", OP_TANH}, {"relu", OP_RELU}, {"exp", OP_EXP}, {"log", OP_LOG},
	{"sqrt", OP_SQRT}, {"abs", OP_ABS}, {"neg", OP_NEG}, {"softplus", OP_SOFTPLUS},
	{"softsign", OP_SOFTSIGN}, {"sign", OP_SIGN},
};

static int tensor_arg(cctx *c, const txt_tok *at, cval a, const char *fn)
{
	if (a.is_param && a.v->shape.rank == 2) {
		txt_error(c->X, at, "%s() works on rows and vectors; '%s' is a matrix (use it with @)", fn,
			  a.v->name);
		return 0;
	}
	return 1;
}

/* Arguments of a call: n expressions. */
static int call_args(cctx *c, cval *args, const txt_tok **ats, int max, int *n)
{
	txt *X = c->X;
	*n = 0;
	if (txt_accept(X, ')'))
		return 1;
	do {
		if (*n == max) {
			txt_error(X, txt_peek(X), "too many arguments");
			return 0;
		}
		ats[*n] = txt_peek(X);
		if (!expr(c, &args[*n]))
			return 0;
		(*n)++;
	} while (txt_accept(X, ','));
	return txt_expect(X, ')', "to close the call");
}

static int call(cctx *c, const txt_tok *fn, cval *r)
{
	txt *X = c->X;
	cval a[64];
	const txt_tok *at[64];
	int n;
	txt_next(X);
	txt_next(X);
	if (!call_args(c, a, at, 64, &n))
		return 0;
	const char *f = fn->str;
	r->is_param = 0;
	for (size_t i = 0; i < COUNTOF(unary_fns); i++)
		if (!strcmp(f, unary_fns[i].name)) {
			if (n != 1) {
				txt_error(X, fn, "%s takes one argument", f);
				return 0;
			}
			if (!a[0].v) {
				r->v = NULL;
				fold_unary(f, a[0].k, &r->k);
				return 1;
			}
			if (!tensor_arg(c, at[0], a[0], f))
				return 0;
			ir_value *v = emit(c, fn, unary_fns[i].op, 1, a[0].v, NULL, NULL);
			return (r->v = finish(c, fn, v, v->producer)) != NULL;
		}
	if (!strcmp(f, "elu") || !strcmp(f, "leaky_relu")) {
		if (n != 2 || a[1].v || !a[0].v) {
			txt_error(X, fn, "%s(x, alpha) takes a row and a number (alpha)", f);
			return 0;
		}
		if (!tensor_arg(c, at[0], a[0], f))
			return 0;
		ir_value *v = emit(c, fn, f[0] == 'e' ? OP_ELU : OP_LEAKYRELU, 1, a[0].v, NULL, NULL);
		ir_attr_set_float(v->producer, "alpha", (float)a[1].k);
		return (r->v = finish(c, fn, v, v->producer)) != NULL;
	}
	if (!strcmp(f, "clip")) {
		if (n != 3 || a[1].v || a[2].v || !a[0].v) {
			txt_error(X, fn, "clip(x, lo, hi) takes a row and two numbers");
			return 0;
		}
		if (!tensor_arg(c, at[0], a[0], f))
			return 0;
		ir_value *v = emit(c, fn, OP_CLIP, 3, a[0].v, num_const(c, a[1].k), num_const(c, a[2].k));
		return (r->v = finish(c, fn, v, v->producer)) != NULL;
	}
	if (!strcmp(f, "modrelu")) {
		/* sign(z) * relu(|z| + b) */
		if (n != 2 || !a[0].v) {
			txt_error(X, fn, "modrelu(z, b) takes a row and a bias");
			return 0;
		}
		if (!tensor_arg(c, at[0], a[0], f) || !tensor_arg(c, at[1], a[1], f))
			return 0;
		ir_value *s = emit(c, fn, OP_SIGN, 1, a[0].v, NULL, NULL);
		if (!finish(c, fn, s, s->producer))
			return 0;
		ir_value *ab = emit(c, fn, OP_ABS, 1, a[0].v, NULL, NULL);
		if (!finish(c, fn, ab, ab->producer))
			return 0;
		cval sum;
		if (!binary(c, fn, '+', (cval){ab, 0, 0}, a[1], &sum))
			return 0;
		ir_value *re = emit(c, fn, OP_RELU, 1, sum.v, NULL, NULL);
		if (!finish(c, fn, re, re->producer))
			return 0;
		return binary(c, fn, '*', (cval){s, 0, 0}, (cval){re, 0, 0}, r);
	}
	if (!strcmp(f, "concat")) {
		if (n < 1) {
			txt_error(X, fn, "concat needs arguments");
			return 0;
		}
		ir_node *nd = ir_node_new(c->body, OP_CONCAT, NULL, n, 1);
		for (int i = 0; i < n; i++) {
			if (!a[i].v || a[i].v->shape.rank != 2 || a[i].is_param) {
				txt_error(X, at[i], "concat joins rows [B, n]");
				return 0;
			}
			nd->in[i] = a[i].v;
		}
		ir_attr_set_int(nd, "axis", 1);
		nd->out[0] = ir_value_new(c->body, NULL, VAL_TEMP, DT_UNDEF);
		nd->out[0]->producer = nd;
		return (r->v = finish(c, fn, nd->out[0], nd)) != NULL;
	}
	if (!strcmp(f, "split")) {
		txt_error(X, fn, "split gives several values: write 'a, b = split(x, 2)'");
		return 0;
	}
	txt_error(X, fn, "unknown function '%s' (sigmoid tanh relu exp log sqrt abs neg softplus softsign "
		  "sign elu leaky_relu modrelu clip split concat)", f);
	return 0;
}

static int primary(cctx *c, cval *r)
{
	txt *X = c->X;
	const txt_tok *t = txt_peek(X);
	memset(r, 0, sizeof *r);
	if (t->kind == TK_INT || t->kind == TK_FLOAT) {
		int isf;
		return txt_parse_number(X, &r->k, &isf, "a number");
	}
	if (txt_accept(X, '(')) {
		int ok = expr(c, r) && txt_expect(X, ')', "to close the parenthesis");
		return ok;
	}
	if (t->kind != TK_IDENT) {
		txt_error(X, t, "expected a name, a number, a call or '(', found %s", txt_tok_desc(X, t));
		return 0;
	}
	if (txt_is_punct(txt_peek_at(X, 1), '('))
		return call(c, t, r);
	txt_next(X);
	if (!strcmp(t->str, "t")) {
		r->v = c->step;
		return 1;
	}
	size_t len = strlen(t->str);
	int primed = t->str[len - 1] == '\'';
	const char *base = primed ? arena_strndup(X->A, t->str, len - 1) : t->str;
	cname *nm = find(c, base);
	if (!nm) {
		txt_error(X, t, "'%s' is not defined in cell '%s'", base, c->def->name);
		return 0;
	}
	if (primed) {
		if (nm->kind != NK_STATE) {
			txt_error(X, t, "'%s' is not a state; only states have a new value (NAME')", base);
			return 0;
		}
		if (!nm->next) {
			txt_error(X, t, "%s' is used before it is computed", base);
			return 0;
		}
		r->v = nm->next;
		return 1;
	}
	if (nm->kind == NK_OPTION) {
		r->k = nm->k;
		return 1;
	}
	if (nm->kind == NK_PARAM && !nm->v)
		return 0;       /* its declaration was refused (too large): reported there */
	r->v = nm->v;
	r->is_param = nm->kind == NK_PARAM;
	return 1;
}

/* matop := primary {'@' primary}: W @ x is x W^T (Gemm, transB = 1) */
static int matop(cctx *c, cval *r)
{
	if (!primary(c, r))
		return 0;
	while (txt_is_punct(txt_peek(c->X), '@')) {
		const txt_tok *at = txt_next(c->X);
		cval x;
		if (!primary(c, &x))
			return 0;
		if (!r->is_param || r->v->shape.rank != 2) {
			txt_error(c->X, at, "the left operand of @ must be a matrix parameter [out, in]");
			return 0;
		}
		if (!x.v || x.v->shape.rank != 2 || x.is_param) {
			txt_error(c->X, at, "the right operand of @ must be a row value [B, n]%s%s",
				  x.v ? ", not " : "", x.v ? shape_of(c, x.v) : "");
			return 0;
		}
		if (width(x.v) != width(r->v)) {
			txt_error(c->X, at, "'%s' is %s but its operand has %lld columns (%s)", r->v->name,
				  shape_of(c, r->v), (long long)width(x.v), shape_of(c, x.v));
			return 0;
		}
		ir_value *v = emit(c, at, OP_GEMM, 2, x.v, r->v, NULL);
		ir_attr_set_int(v->producer, "transB", 1);
		r->v = finish(c, at, v, v->producer);
		r->is_param = 0;
		if (!r->v)
			return 0;
	}
	return 1;
}

static int unary(cctx *c, cval *r)
{
	const txt_tok *t = txt_peek(c->X);
	if (++c->depth > 200) {
		txt_error(c->X, t, "expression nested too deeply");
		return 0;
	}
	int ok;
	if (txt_accept(c->X, '-')) {
		cval a;
		ok = unary(c, &a);
		if (ok && !a.v) {
			*r = a;
			r->k = -a.k;
		} else if (ok) {
			ok = tensor_arg(c, t, a, "-");
			if (ok) {
				ir_value *v = emit(c, t, OP_NEG, 1, a.v, NULL, NULL);
				r->v = finish(c, t, v, v->producer);
				r->is_param = 0;
				ok = r->v != NULL;
			}
		}
	} else {
		ok = matop(c, r);
	}
	c->depth--;
	return ok;
}

static int term(cctx *c, cval *r)
{
	if (!unary(c, r))
		return 0;
	for (;;) {
		const txt_tok *op = txt_peek(c->X);
		if (!txt_is_punct(op, '*') && !txt_is_punct(op, '/'))
			return 1;
		txt_next(c->X);
		cval b;
		if (!unary(c, &b) || !binary(c, op, op->p, *r, b, r))
			return 0;
	}
}

static int expr(cctx *c, cval *r)
{
	if (!term(c, r))
		return 0;
	for (;;) {
		const txt_tok *op = txt_peek(c->X);
		if (!txt_is_punct(op, '+') && !txt_is_punct(op, '-'))
			return 1;
		txt_next(c->X);
		cval b;
		if (!term(c, &b) || !binary(c, op, op->p, *r, b, r))
			return 0;
	}
}

/* ---- statements ---- */

/* Names the value an equation produced after it ("h1.u"), when the
 * equation made it. */
static void name_value(cctx *c, ir_value *v, const char *var, int nodes_before)
{
	if (!v || !v->producer || v->producer->graph != c->body || v->producer->id < nodes_before)
		return;
	const char *nm = arena_printf(c->X->A, "%s.%s", c->L->name, var);
	if (!ir_find_value(c->body, nm))
		v->name = nm;
}

/* Body inputs, once options and params are known. */
static int start_body(cctx *c)
{
	if (c->started)
		return 1;
	c->started = 1;
	txt *X = c->X;
	int save = X->pos;
	for (int i = 0; i < c->nnames; i++) {
		cname *s = &c->names[i];
		if (s->kind != NK_STATE)
			continue;
		s->size = c->H;
		if (s->size_at) {
			X->pos = (int)(s->size_at - X->t);
			if (!positive_size(c, s->size_at, &s->size)) {
				X->pos = save;
				return 0;
			}
		}
	}
	X->pos = save;
	for (int i = 0; i < c->nnames; i++) {
		cname *s = &c->names[i];
		if (s->kind != NK_INPUT && s->kind != NK_STATE)
			continue;
		ir_value *v = ir_value_new(c->body, arena_printf(X->A, "%s.%s", c->L->name, s->name), VAL_STEP,
					   DT_F32);
		v->shape.rank = 2;
		v->shape.d[0] = c->B;
		v->shape.d[1] = ir_dim_const(s->kind == NK_INPUT ? c->I : s->size);
		s->v = v;
		c->body->inputs = arena_grow(X->A, c->body->inputs, (size_t)c->body->ninputs,
					     (size_t)c->body->ninputs + 1, sizeof *c->body->inputs);
		c->body->inputs[c->body->ninputs++] = v;
	}
	if (c->step) {
		ir_value *v = c->step;
		c->body->inputs = arena_grow(X->A, c->body->inputs, (size_t)c->body->ninputs,
					     (size_t)c->body->ninputs + 1, sizeof *c->body->inputs);
		c->body->inputs[c->body->ninputs++] = v;
	}
	return 1;
}

static void stmt_option(cctx *c)
{
	txt *X = c->X;
	do {
		const txt_tok *t = txt_peek(X);
		const char *name = txt_expect_ident(X, "an option name");
		double k;
		int isf;
		if (!name || !txt_expect(X, '=', "after the option name") ||
		    !txt_parse_number(X, &k, &isf, "the option's default")) {
			txt_skip_line(X);
			return;
		}
		if (!strcmp(name, "hidden") || !strcmp(name, "init")) {
			txt_error(X, t, "'%s' is an option of every cell; do not declare it", name);
			continue;
		}
		cname *o = add_name(c, t, name, NK_OPTION);
		if (!o)
			continue;
		o->k = k;
		for (int i = 0; i < c->L->nopts; i++) {
			txt_opt *lo = &c->L->opts[i];
			if (strcmp(lo->name, name))
				continue;
			lo->used = 1;
			if (lo->is_string)
				txt_error(X, lo->at, "option '%s' of cell '%s' is a number", name, c->def->name);
			else
				o->k = lo->num;
		}
	} while (txt_accept(X, ','));
	txt_end_stmt(X);
}

static void stmt_param(cctx *c)
{
	txt *X = c->X;
	do {
		const txt_tok *t = txt_peek(X);
		const char *name = txt_expect_ident(X, "a parameter name");
		int64_t dims[2];
		int rank = 0;
		if (!name || !txt_expect(X, '[', "to give the parameter's shape")) {
			txt_skip_line(X);
			return;
		}
		do {
			if (rank == 2) {
				txt_error(X, txt_peek(X), "parameters are vectors [n] or matrices [out, in]");
				txt_skip_line(X);
				return;
			}
			const txt_tok *d = txt_peek(X);
			if (!positive_size(c, d, &dims[rank++])) {
				txt_skip_line(X);
				return;
			}
		} while (txt_accept(X, ','));
		if (!txt_expect(X, ']', "to close the shape")) {
			txt_skip_line(X);
			return;
		}
		if (strchr(name, '\'')) {
			txt_error(X, t, "a parameter name cannot be primed");
			continue;
		}
		cname *p = add_name(c, t, name, NK_PARAM);
		if (!p)
			continue;
		p->v = txt_model_param(X, c->root, c->L, name, rank, dims, t, c->H);   /* NULL: refused, reported */
	} while (txt_accept(X, ','));
	txt_end_stmt(X);
}

/* The right side "split(x, n)" of an equation of n names (the current
 * token is split): n Slices of equal width along the feature axis into
 * vals; 0 after reporting (the line not yet skipped). */
static int assign_split(cctx *c, int n, ir_value **vals)
{
	txt *X = c->X;
	const txt_tok *fn = txt_next(X);
	if (!txt_is_word(fn, "split") || !txt_accept(X, '(')) {
		txt_error(X, fn, "several names are assigned from split(x, n)");
		return 0;
	}
	cval a;
	int64_t parts;
	if (!expr(c, &a) || !txt_expect(X, ',', "between split's arguments") ||
	    !txt_parse_int(X, &parts, "the number of parts") || !txt_expect(X, ')', "to close split"))
		return 0;
	if (!a.v || a.v->shape.rank != 2 || a.is_param) {
		txt_error(X, fn, "split cuts a row value [B, n]");
		return 0;
	}
	int64_t w = width(a.v);
	if (parts != n || parts < 1 || w % parts) {
		txt_error(X, fn, parts != n ? "split into %lld parts assigned to %d names"
			  : "split of %lld columns into %d equal parts is not possible",
			  parts != n ? (long long)parts : (long long)w, parts != n ? n : (int)parts);
		return 0;
	}
	int64_t ax = 1;
	ir_value *axes = ir_const_i64(c->body, NULL, 1, &ax);
	for (int i = 0; i < n; i++) {
		int64_t s0 = i * (w / n), e0 = (i + 1) * (w / n);
		ir_node *sl = ir_node_new(c->body, OP_SLICE, NULL, 4, 1);
		sl->in[0] = a.v;
		sl->in[1] = ir_const_i64(c->body, NULL, 1, &s0);
		sl->in[2] = ir_const_i64(c->body, NULL, 1, &e0);
		sl->in[3] = axes;
		sl->out[0] = ir_value_new(c->body, NULL, VAL_TEMP, DT_UNDEF);
		sl->out[0]->producer = sl;
		vals[i] = finish(c, fn, sl->out[0], sl);
		if (!vals[i])
			return 0;
	}
	return 1;
}

/* The names of an equation bound to its values: a primed state's name
 * gives the state its new value (once, of the state's shape), any other
 * name becomes a variable; the nodes made since node `before` are named
 * after them. */
static void bind_names(cctx *c, const txt_tok *const *lhs, int n, ir_value *const *vals, const txt_tok *eq,
		       int before)
{
	txt *X = c->X;
	for (int i = 0; i < n; i++) {
		const char *nm = lhs[i]->str;
		size_t len = strlen(nm);
		if (nm[len - 1] == '\'') {
			const char *base = arena_strndup(X->A, nm, len - 1);
			cname *s = find(c, base);
			if (!s || s->kind != NK_STATE) {
				txt_error(X, lhs[i], "'%s' is not a state of cell '%s' (states: the names after ';')",
					  base, c->def->name);
				continue;
			}
			if (s->next) {
				txt_error(X, lhs[i], "%s' is assigned twice", base);
				continue;
			}
			ir_value *v = vals[i];
			if (v->shape.rank != 2 || width(v) != s->size || !ir_dim_eq(v->shape.d[0], c->B)) {
				txt_error(X, eq, "state %s is [B, %lld] but its new value is %s", base,
					  (long long)s->size, shape_of(c, v));
				continue;
			}
			name_value(c, v, arena_printf(X->A, "%s_new", base), before);
			s->next = v;
		} else {
			cname *v = add_name(c, lhs[i], nm, NK_VAR);
			if (!v)
				continue;
			v->v = vals[i];
			name_value(c, vals[i], nm, before);
		}
	}
}

static void stmt_assign(cctx *c)
{
	txt *X = c->X;
	const txt_tok *lhs[64];
	int n = 0;
	do {
		const txt_tok *t = txt_peek(X);
		if (t->kind != TK_IDENT || n == 64) {
			txt_error(X, t, "expected a name to assign, found %s", txt_tok_desc(X, t));
			txt_skip_line(X);
			return;
		}
		lhs[n++] = txt_next(X);
	} while (txt_accept(X, ','));
	const txt_tok *eq = txt_peek(X);
	if (!txt_expect(X, '=', "after the names")) {
		txt_skip_line(X);
		return;
	}
	int before = c->body->nnodes;
	ir_value *vals[64];
	if (n > 1 || (txt_is_word(txt_peek(X), "split") && txt_is_punct(txt_peek_at(X, 1), '('))) {
		if (!assign_split(c, n, vals)) {
			txt_skip_line(X);
			return;
		}
	} else {
		cval a;
		if (!expr(c, &a)) {
			txt_skip_line(X);
			return;
		}
		if (!a.v) {
			/* a named number: keep it as a constant for later equations */
			if (!txt_end_stmt(X))
				return;
			const char *nm = lhs[0]->str;
			if (nm[strlen(nm) - 1] == '\'') {
				txt_error(X, lhs[0], "a state's new value must be a row [B, n], not a number");
				return;
			}
			cname *o = add_name(c, lhs[0], nm, NK_OPTION);
			if (o)
				o->k = a.k;
			return;
		}
		vals[0] = a.v;
	}
	if (!txt_end_stmt(X))
		return;
	bind_names(c, lhs, n, vals, eq, before);
}

/* Reads the header "cell NAME(x; s1, s2[size])" into names. */
static int header(cctx *c)
{
	txt *X = c->X;
	X->pos = c->def->first;
	txt_next(X);    /* cell */
	txt_next(X);    /* name */
	if (!txt_expect(X, '(', "after the cell's name"))
		return 0;
	int nin = 0;
	do {
		const txt_tok *t = txt_peek(X);
		const char *nm = txt_expect_ident(X, "the per-step input's name");
		if (!nm)
			return 0;
		if (nin++) {
			txt_error(X, t, "a cell has one per-step input (the layer's sequence)");
			return 0;
		}
		if (!add_name(c, t, nm, NK_INPUT))
			return 0;
	} while (txt_accept(X, ','));
	if (txt_accept(X, ';') && !txt_is_punct(txt_peek(X), ')')) {
		do {
			const txt_tok *t = txt_peek(X);
			const char *nm = txt_expect_ident(X, "a state's name");
			if (!nm)
				return 0;
			cname *s = add_name(c, t, nm, NK_STATE);
			if (!s)
				return 0;
			c->nstates++;
			if (txt_accept(X, '[')) {
				s->size_at = txt_peek(X);
				int depth = 1;
				while (depth && txt_peek(X)->kind != TK_EOF) {
					const txt_tok *k = txt_next(X);
					depth += txt_is_punct(k, '[') - txt_is_punct(k, ']');
				}
			}
		} while (txt_accept(X, ','));
	}
	return txt_expect(X, ')', "after the states") && txt_expect(X, '{', "to open the cell's body");
}

/* The layer's hidden=N (the size H; init= is pytorch or absent): 0 after
 * reporting. */
static int layer_hidden(cctx *c)
{
	txt *X = c->X;
	txt_layer *L = c->L;
	txt_opt *hid = NULL;
	for (int i = 0; i < L->nopts; i++)
		if (!strcmp(L->opts[i].name, "hidden")) {
			hid = &L->opts[i];
			hid->used = 1;
		} else if (!strcmp(L->opts[i].name, "init")) {
			L->opts[i].used = 1;
			if (!L->opts[i].is_string || strcmp(L->opts[i].s, "pytorch"))
				txt_error(X, L->opts[i].at, "cells defined as equations take init=pytorch only");
		}
	if (!hid || hid->is_string || hid->num != floor(hid->num) || hid->num < 1 || hid->num > (1 << 20)) {
		txt_error(X, hid ? hid->at : L->at, "cell '%s' needs hidden=N, a positive integer (the size H)",
			  c->def->name);
		return 0;
	}
	c->H = (int64_t)hid->num;
	return 1;
}

/* The line "out EXPR" (the word read): the per-step output. */
static void stmt_out(cctx *c, const txt_tok *t)
{
	txt *X = c->X;
	cval a;
	if (c->out)
		txt_error(X, t, "a cell has one 'out' line");
	if (!expr(c, &a)) {
		txt_skip_line(X);
		return;
	}
	if (!a.v || a.is_param || a.v->shape.rank != 2) {
		txt_error(X, t, "the output is a row value [B, n]");
		txt_skip_line(X);
		return;
	}
	c->out = a.v;
	txt_end_stmt(X);
}

/* The body's lines up to its closing brace: options and parameters first,
 * then equations and the out line. */
static void read_body(cctx *c)
{
	txt *X = c->X;
	while (txt_peek(X)->kind != TK_EOF && !txt_is_punct(txt_peek(X), '}')) {
		const txt_tok *t = txt_peek(X);
		X->stmt_start = X->pos;
		if (!t->nl) {
			txt_error(X, t, "expected a new line before %s", txt_tok_desc(X, t));
			txt_skip_line(X);
			continue;
		}
		if (txt_accept_word(X, "option")) {
			if (c->started)
				txt_error(X, t, "options come before the equations");
			stmt_option(c);
			continue;
		}
		if (txt_accept_word(X, "param")) {
			if (c->started)
				txt_error(X, t, "parameters come before the equations");
			stmt_param(c);
			continue;
		}
		if (!start_body(c))
			break;
		if (txt_accept_word(X, "out")) {
			stmt_out(c, t);
			continue;
		}
		stmt_assign(c);
	}
}

/* Every state has its new value, and the per-step output is the out line's
 * (else the first state's new value): 0 after reporting at end. */
static int check_results(cctx *c, const txt_tok *end)
{
	txt *X = c->X;
	for (int i = 0; i < c->nnames; i++)
		if (c->names[i].kind == NK_STATE && !c->names[i].next) {
			txt_error(X, end, "state %s of cell '%s' never gets its new value (%s' = ...)",
				  c->names[i].name, c->def->name, c->names[i].name);
			return 0;
		}
	if (!c->out) {
		for (int i = 0; i < c->nnames && !c->out; i++)
			if (c->names[i].kind == NK_STATE)
				c->out = c->names[i].next;
		if (!c->out) {
			txt_error(X, end, "cell '%s' has no state and no 'out' line", c->def->name);
			return 0;
		}
	}
	return 1;
}

/* Body outputs: new states, then the per-step output; a value the body did
 * not compute (an input, a parameter) is copied by an Identity.  0 after
 * reporting. */
static int body_outputs(cctx *c, const txt_tok *end)
{
	txt *X = c->X;
	int nout = c->nstates + 1;
	c->body->outputs = arena_array(X->A, (size_t)nout, sizeof *c->body->outputs);
	for (int i = 0, k = 0; i < c->nnames; i++)
		if (c->names[i].kind == NK_STATE)
			c->body->outputs[k++] = c->names[i].next;
	c->body->outputs[nout - 1] = c->out;
	c->body->noutputs = nout;
	for (int k = 0; k < nout; k++) {
		ir_value *v = c->body->outputs[k];
		if (v->producer && v->producer->graph == c->body)
			continue;
		ir_value *cp = emit(c, end, OP_IDENTITY, 1, v, NULL, NULL);
		if (!finish(c, end, cp, cp->producer))
			return 0;
		c->body->outputs[k] = cp;
	}
	return 1;
}

/* The RECURRENCE of the layer over the body, appended to g; its per-step
 * output [T, B, n] (or [B, T, n]). */
static ir_value *append_recurrence(cctx *c, ir_graph *g)
{
	txt *X = c->X;
	txt_layer *L = c->L;
	int nout = c->nstates + 1;
	ir_node *r = ir_node_new(g, OP_RECURRENCE, L->name, 1 + c->nstates, nout);
	r->body = c->body;
	r->origin = arena_printf(X->A, "cell %s", c->def->name);
	r->op_type = arena_strdup(X->A, c->def->name);
	r->rec_source = IR_REC_CELL_DEF;
	r->in[0] = L->x;
	ir_attr_set_int(r, "n_seq", 1);
	ir_attr_set_int(r, "n_state", c->nstates);
	ir_attr_set_int(r, "n_out", 1);
	ir_attr_set_int(r, "reverse", 0);
	int64_t ax = L->seq_axis;
	ir_attr_set_ints(r, "seq_axis", 1, &ax);
	ir_attr_set_ints(r, "out_axis", 1, &ax);
	ir_attr_set_int(r, "has_lens", 0);
	if (c->step)
		ir_attr_set_int(r, "has_step", 1);
	ir_value *y = ir_value_new(g, L->name, VAL_TEMP, DT_F32);
	y->shape = L->x->shape;
	y->shape.d[2] = c->out->shape.d[1];
	r->out[nout - 1] = y;
	ir_append(g, r);
	return y;
}

ir_value *txt_cell_apply(txt *X, ir_graph *g, const txt_celldef *def, txt_layer *L)
{
	int save = X->pos;
	cctx c0 = {0}, *c = &c0;
	c->X = X;
	c->root = g;
	c->L = L;
	c->def = def;
	c->nerr0 = X->D->nerrors;
	c->I = L->x->shape.d[2].k;
	c->B = L->x->shape.d[1 - L->seq_axis];
	if (!layer_hidden(c)) {
		X->pos = save;
		return NULL;
	}
	c->body = ir_graph_new(X->A, g, arena_printf(X->A, "%s.step", L->name));
	for (int i = def->first; i <= def->last; i++)
		if (X->t[i].kind == TK_IDENT && !strcmp(X->t[i].str, "t")) {
			c->step = ir_value_new(c->body, arena_printf(X->A, "%s.t", L->name), VAL_STEP, DT_F32);
			c->step->shape.rank = 0;
			break;
		}
	if (!header(c)) {
		X->pos = save;
		return NULL;
	}
	read_body(c);
	const txt_tok *end = txt_peek(X);
	X->pos = save;
	if (failed(c) || !start_body(c) || !check_results(c, end) || !body_outputs(c, end))
		return NULL;
	return append_recurrence(c, g);
}

void txt_cell_check(txt *X, const txt_celldef *c)
{
	/* A definition is read with the sizes of each layer that uses it; one
	 * that no layer uses is never read, so say so. */
	for (int i = 0; i < X->nt; i++)
		if (X->t[i].kind == TK_IDENT && !strcmp(X->t[i].str, c->name) && (i < c->first || i > c->last) &&
		    txt_is_punct(&X->t[i + 1 < X->nt ? i + 1 : i], '('))
			return;
	diag_warn(X->D, "%d:%d: cell '%s' is not used by the model; it was not checked", c->line, c->col,
		  c->name);
}
