/* txt_value.c: the values of a `graph NAME { ... }` block for txt_graph.c:
 * dimensions, symbols and their bounds, types (txt_parse_type), constant
 * data (numbers, `sym[...]` elements, `elided fnv1a:...` read from the
 * weights file) and node attributes of every kind.  txt_graph.h: what the
 * two share.
 */
#include "txt_graph.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- types ---- */

int txt_sym_lookup(const ir_graph *root, const char *name)
{
	for (int i = 0; i < root->nsyms; i++)
		if (strcmp(root->syms[i], name) == 0)
			return i;
	return -1;
}

/* A symbol name: identifier or quoted string. */
const char *txt_sym_name(txt *X)
{
	const txt_tok *t = txt_peek(X);
	if (t->kind == TK_IDENT || t->kind == TK_STRING) {
		txt_next(X);
		return t->str;
	}
	return NULL;
}

/* "T >= 2" (after the '>'): the least value of a symbol (sym_min). */
void txt_parse_sym_min(txt *X, ir_graph *g, int k)
{
	const txt_tok *t = txt_peek(X);
	int64_t m;
	if (!txt_accept(X, '=')) {
		txt_error(X, t, "symbol '%s': expected '>=' and its least value, found %s", g->syms[k],
			  txt_tok_desc(X, t));
		return;
	}
	t = txt_peek(X);
	if (!txt_parse_int(X, &m, "a least value"))
		return;
	if (m < 2 || m > INT32_MAX) {
		txt_error(X, t, "symbol '%s': least value %lld out of range (2 to %d; every symbol is at least 1)",
			  g->syms[k], (long long)m, INT32_MAX);
		return;
	}
	g->sym_min[k] = m;
}

/* An earlier symbol (of a definition of symbol k), its index; -1 after an error */
static int earlier_sym(txt *X, ir_graph *g, int k)
{
	const txt_tok *t = txt_peek(X);
	const char *name = txt_sym_name(X);
	int b = name ? txt_sym_lookup(g, name) : -1;
	if (!name || b < 0 || b >= k) {
		txt_error(X, t, "symbol '%s': expected a symbol declared before it, found %s", g->syms[k],
			  name ? name : txt_tok_desc(X, t));
		return -1;
	}
	return b;
}

/* lin := ['-'] term {('+' | '-') term};  term := INT ['*' SYM] | SYM
 * into d's factors and offset (each within INT32_MAX); 0 after an error */
static int parse_lin(txt *X, ir_graph *g, int k, ir_symdef *d)
{
	int sign = txt_accept(X, '-') ? -1 : 1;
	for (;;) {
		const txt_tok *t = txt_peek(X);
		int64_t v = 1;
		int b = -1;
		if (t->kind == TK_INT) {
			if (!txt_parse_int(X, &v, "a factor or an offset"))
				return 0;
			if (v > INT32_MAX) {
				txt_error(X, t, "symbol '%s': %lld is out of range (at most %d)", g->syms[k], (long long)v,
					  INT32_MAX);
				return 0;
			}
			if (txt_accept(X, '*') && (b = earlier_sym(X, g, k)) < 0)
				return 0;
			if (v == 0) {
				txt_error(X, t, b >= 0 ? "symbol '%s': a factor is 1 to %d" : "symbol '%s': offset 0 out of "
					  "range (1 to %d)", g->syms[k], INT32_MAX);
				return 0;
			}
		} else if ((b = earlier_sym(X, g, k)) < 0) {
			return 0;
		}
		int64_t *acc = b >= 0 ? &d->c[b] : &d->off;
		*acc += sign * v;
		if (*acc > INT32_MAX || *acc < -(int64_t)INT32_MAX) {
			txt_error(X, t, "symbol '%s': a factor or the offset is out of range", g->syms[k]);
			return 0;
		}
		sign = txt_accept(X, '+') ? 1 : txt_accept(X, '-') ? -1 : 0;
		if (!sign)
			return 1;
	}
}

/* operand := SYM | INT (a MIN/MAX's second operand may be a constant) */
static int parse_operand(txt *X, ir_graph *g, int k, int *s, int64_t *c)
{
	const txt_tok *t = txt_peek(X);
	*s = -1;
	if (t->kind == TK_INT || txt_is_punct(t, '-')) {
		if (!txt_parse_int(X, c, "a constant"))
			return 0;
		if (*c > INT32_MAX || *c < -(int64_t)INT32_MAX) {
			txt_error(X, t, "symbol '%s': %lld is out of range", g->syms[k], (long long)*c);
			return 0;
		}
		return 1;
	}
	return (*s = earlier_sym(X, g, k)) >= 0;
}

/* A derived symbol's definition after "NAME =" (ir_symdef, ir_sym_def_str):
 *   def  := 'floor' '(' ( '(' lin ')' | lin ) '/' INT ')'     a floor
 *         | ( '(' lin ')' | lin ) '/' INT                   an exact division
 *         | ('min' | 'max') '(' SYM ',' operand ')'
 *         | 'scale' '(' SYM ',' NUMBER ')'                a Resize's size
 *         | lin
 * over symbols declared before it, the numbers within INT32_MAX, in the
 * canonical form (ir_sym_noncanonical); then optionally '==' INT, the
 * constant it is pinned to. */
void txt_parse_derived_sym(txt *X, ir_graph *g, int k, const txt_tok *at)
{
	const txt_tok *t = txt_peek(X);
	ir_symdef d = {.op = IR_SYM_LIN, .div = 1};
	if ((txt_is_word(t, "min") || txt_is_word(t, "max")) && txt_is_punct(txt_peek_at(X, 1), '(')) {
		d.op = txt_is_word(t, "min") ? IR_SYM_MIN : IR_SYM_MAX;
		txt_next(X);
		txt_next(X);
		int64_t c = 0;
		if ((d.a = earlier_sym(X, g, k)) < 0 || !txt_expect(X, ',', "between min's or max's operands") ||
		    !parse_operand(X, g, k, &d.b, &c) || !txt_expect(X, ')', "to close min or max"))
			return;
		d.off = d.b < 0 ? c : 0;
	} else if (txt_is_word(t, "scale") && txt_is_punct(txt_peek_at(X, 1), '(')) {
		d.op = IR_SYM_SCALE;
		d.b = -1;
		txt_next(X);
		txt_next(X);
		double v = 0;
		int is_float = 0;
		if ((d.a = earlier_sym(X, g, k)) < 0 || !txt_expect(X, ',', "between scale's operand and its factor"))
			return;
		const txt_tok *st = txt_peek(X);
		if (!txt_parse_number(X, &v, &is_float, "a scale") || !txt_expect(X, ')', "to close scale"))
			return;
		d.scale = (float)v;
		if (!(d.scale > 0 && isfinite(d.scale))) {
			txt_error(X, st, "symbol '%s': scale(x, s) wants a positive finite float32 s", g->syms[k]);
			return;
		}
	} else {
		int is_floor = txt_is_word(t, "floor") && txt_is_punct(txt_peek_at(X, 1), '(');
		if (is_floor) {
			txt_next(X);
			txt_next(X);
		}
		int paren = txt_accept(X, '(');
		if (!parse_lin(X, g, k, &d) || (paren && !txt_expect(X, ')', "to close the sum")))
			return;
		const txt_tok *dt = txt_peek(X);
		if (is_floor || txt_accept(X, '/')) {
			if (is_floor && !txt_accept(X, '/')) {
				txt_error(X, dt, "symbol '%s': floor(... / D) wants a divisor D", g->syms[k]);
				return;
			}
			if (!txt_parse_int(X, &d.div, "a divisor") || d.div < 2 || d.div > INT32_MAX) {
				txt_error(X, dt, is_floor ? "symbol '%s': floor(... / D) wants a divisor D of 2 to %d"
					  : "symbol '%s': an exact division '/ D' wants a divisor D of 2 to %d", g->syms[k],
					  INT32_MAX);
				return;
			}
			if (is_floor && !txt_expect(X, ')', "to close floor"))
				return;
			d.exact = (uint8_t)!is_floor;
		} else if (paren) {
			txt_error(X, dt, "symbol '%s': a sum in parentheses is divided: expected '/'", g->syms[k]);
			return;
		}
	}
	int64_t mul = 0;
	int b = -1;
	for (int j = 0; d.op == IR_SYM_LIN && j < k; j++)
		if (d.c[j])
			mul = b < 0 ? d.c[j] : 0, b = b < 0 ? j : k;
	if (b >= 0 && b < k && mul == 1 && !d.off && d.div == 1) {
		txt_error(X, txt_peek(X), "symbol '%s': expected '+' or '-' after '%s' (a derived symbol adds, "
			  "multiplies or divides)", g->syms[k], g->syms[b]);
		return;
	}
	g->symdef[k] = d;
	const char *why = ir_sym_noncanonical(g, k);
	if (why) {
		txt_error(X, at, "symbol '%s': not in canonical form: %s", g->syms[k], why);
		g->symdef[k] = (ir_symdef){0};
		return;
	}
	if (txt_accept(X, '=')) {
		const txt_tok *pt = txt_peek(X);
		int64_t v;
		if (!txt_accept(X, '=') || !txt_parse_int(X, &v, "the constant it is pinned to") || v < 1 ||
		    v > INT32_MAX) {
			txt_error(X, pt, "symbol '%s': '==' and a constant of 1 to %d pin a derived symbol", g->syms[k],
				  INT32_MAX);
			return;
		}
		g->sym_pin[k] = v;
	}
}

/* dim := '?' | ['-'] term {'*' term}; term := INT | symbol.  neg_ok: the
 * elements of sym[...] constants may have a negative factor. */
static int parse_dim(txt *X, ir_graph *g, ir_dim *d, int add_syms, int neg_ok)
{
	ir_graph *root = ir_root(g);
	if (txt_accept(X, '?')) {
		*d = ir_dim_const(IR_DIM_UNKNOWN);
		return 1;
	}
	ir_dim r = ir_dim_const(1);
	const txt_tok *first = txt_peek(X);
	if (neg_ok && txt_accept(X, '-'))
		r.k = -1;
	for (;;) {
		const txt_tok *t = txt_peek(X);
		if (t->kind == TK_INT) {
			int64_t k;
			if (!txt_parse_int(X, &k, "a dimension"))
				return 0;
			if (r.k != 0 && (k > INT64_MAX / 1024 || llabs(r.k) > INT64_MAX / (k ? k : 1) / 1024)) {
				txt_error(X, t, "dimension too large");
				return 0;
			}
			r.k *= k;
		} else {
			const char *s = txt_sym_name(X);
			if (!s) {
				txt_error(X, t, "expected a dimension (an integer or a symbol name), found %s",
					  txt_tok_desc(X, t));
				return 0;
			}
			int k = add_syms ? ir_sym_add(root, s) : txt_sym_lookup(root, s);
			if (k < 0) {
				if (add_syms)
					txt_error(X, t, "too many dimension symbols (at most %d)", IR_MAX_SYMS);
				else
					txt_error(X, t, "unknown dimension symbol '%s' (not in the 'symbols' line)", s);
				return 0;
			}
			if (r.pow[k] >= 16) {
				txt_error(X, t, "dimension symbol '%s' raised to a power above 16", s);
				return 0;
			}
			r.pow[k]++;
		}
		if (!txt_accept(X, '*'))
			break;
	}
	if (r.k == 0)
		memset(r.pow, 0, sizeof r.pow);
	if (r.k < 0 && !neg_ok) {
		txt_error(X, first, "negative dimension");
		return 0;
	}
	*d = r;
	return 1;
}

int txt_parse_dim(txt *X, ir_graph *g, ir_dim *d) { return parse_dim(X, g, d, 0, 0); }

/* Each dimension is bounded by parse_dim, their product is not: a shape
 * whose element count overflows int64 is refused here, where it can be
 * located, so no later stage multiplies it out. */
static int shape_countable(txt *X, const txt_tok *lb, const ir_shape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (!ir_dim_known(s->d[i]))
			return 1;       /* '?': nothing to count */
	if (ir_dim_known(ir_shape_numel(s)))
		return 1;
	txt_error(X, lb, "shape has more elements than a size can count (their product overflows int64)");
	return 0;
}

int txt_parse_type(txt *X, ir_graph *g, ir_dtype *dt, ir_shape *s, int add_syms)
{
	const txt_tok *t = txt_peek(X);
	*dt = DT_UNDEF;
	memset(s, 0, sizeof *s);
	s->rank = -1;
	if (txt_accept(X, '?')) {
		if (!txt_is_punct(txt_peek(X), '['))
			return 1;       /* "?": neither dtype nor shape known */
	} else if (t->kind == TK_IDENT && ir_dtype_lookup(t->str) > 0) {
		txt_next(X);
		*dt = (ir_dtype)ir_dtype_lookup(t->str);
		if (txt_accept(X, '?'))
			return 1;
	} else {
		txt_error(X, t, "expected a type such as f32[batch, 4], found %s", txt_tok_desc(X, t));
		return 0;
	}
	const txt_tok *lb = txt_peek(X);
	if (!txt_expect(X, '[', "to open the shape"))
		return 0;
	s->rank = 0;
	if (txt_accept(X, ']'))
		return 1;
	for (;;) {
		if (s->rank == IR_MAX_RANK) {
			txt_error(X, lb, "more than %d dimensions", IR_MAX_RANK);
			return 0;
		}
		if (!parse_dim(X, g, &s->d[s->rank++], add_syms, 0))
			return 0;
		if (txt_accept(X, ']'))
			return shape_countable(X, lb, s);
		if (!txt_expect(X, ',', "between dimensions"))
			return 0;
	}
}

/* ---- constants ---- */

static int store_num(txt *X, const txt_tok *t, ir_dtype dt, void *data, int64_t i)
{
	switch (dt) {
	case DT_F32: case DT_F64: {
		double d;
		int isf;
		if (!txt_parse_number(X, &d, &isf, "an element"))
			return 0;
		if (dt == DT_F32)
			((float *)data)[i] = (float)d;
		else
			((double *)data)[i] = d;
		return 1;
	}
	case DT_U64: {
		if (txt_peek(X)->kind != TK_INT) {
			txt_error(X, txt_peek(X), "expected an unsigned integer, found %s",
				  txt_tok_desc(X, txt_peek(X)));
			return 0;
		}
		const txt_tok *n = txt_next(X);
		errno = 0;
		((uint64_t *)data)[i] = strtoull(n->str, NULL, 10);
		if (errno) {
			txt_error(X, n, "integer %s out of range", n->str);
			return 0;
		}
		return 1;
	}
	default: break;
	}
	int64_t v;
	if (!txt_parse_int(X, &v, "an element"))
		return 0;
	int64_t lo, hi;
	switch (dt) {
	case DT_I8: lo = INT8_MIN; hi = INT8_MAX; break;
	case DT_U8: case DT_BOOL: lo = 0; hi = dt == DT_BOOL ? 1 : UINT8_MAX; break;
	case DT_I16: lo = INT16_MIN; hi = INT16_MAX; break;
	case DT_U16: lo = 0; hi = UINT16_MAX; break;
	case DT_I32: lo = INT32_MIN; hi = INT32_MAX; break;
	case DT_U32: lo = 0; hi = UINT32_MAX; break;
	default: lo = INT64_MIN; hi = INT64_MAX; break;
	}
	if (v < lo || v > hi) {
		txt_error(X, t, "element %" PRId64 " out of range for %s", v, ir_dtype_name(dt));
		return 0;
	}
	switch (dt) {
	case DT_I8: ((int8_t *)data)[i] = (int8_t)v; break;
	case DT_U8: case DT_BOOL: ((uint8_t *)data)[i] = (uint8_t)v; break;
	case DT_I16: ((int16_t *)data)[i] = (int16_t)v; break;
	case DT_U16: ((uint16_t *)data)[i] = (uint16_t)v; break;
	case DT_I32: ((int32_t *)data)[i] = (int32_t)v; break;
	case DT_U32: ((uint32_t *)data)[i] = (uint32_t)v; break;
	default: ((int64_t *)data)[i] = v; break;
	}
	return 1;
}

/* DATA after '=' for a constant v of known dtype and shape. */
int txt_parse_const_data(gctx *c, ir_graph *g, ir_value *v, const txt_tok *at)
{
	txt *X = c->X;
	const txt_tok *t = txt_peek(X);
	int64_t n = ir_shape_const_numel(&v->shape);
	size_t es = ir_dtype_size(v->dtype);
	if (txt_accept(X, '?'))
		return 1;       /* printed for data it could not show: none */
	if (n < 0) {
		txt_error(X, t, "a constant needs a constant shape");
		return 0;
	}
	if (n > ((int64_t)1 << 31) || es == 0) {
		txt_error(X, at, es ? "constant too large" : "constants of dtype %s cannot be written",
			  ir_dtype_name(v->dtype));
		return 0;
	}
	if (txt_accept_word(X, "sym")) {
		if (v->dtype != DT_I64 && v->dtype != DT_I32) {
			txt_error(X, t, "sym[...] constants are i64 or i32");
			return 0;
		}
		if (!txt_budget_ok(X, at, n, sizeof *v->sym, v->name))
			return 0;
		v->sym = arena_array(g->A, (size_t)(n ? n : 1), sizeof *v->sym);
		if (!txt_expect(X, '[', "after 'sym'"))
			return 0;
		for (int64_t i = 0; i < n; i++) {
			if (i && !txt_expect(X, ',', "between elements"))
				return 0;
			if (!parse_dim(X, g, &v->sym[i], 0, 1))
				return 0;
		}
		if (!txt_expect(X, ']', n ? "after the last element (too many elements?)" : "(no elements)"))
			return 0;
		return 1;
	}
	if (!txt_budget_ok(X, at, n, es, v->name))
		return 0;
	v->data = arena_alloc(g->A, (size_t)n * es + 1);
	if (txt_accept_word(X, "elided")) {
		const txt_tok *h = txt_peek(X);
		/* "fnv1a:HEX": the printer's stand-in for big data; the data can
		 * come from the weights file, else it is zeros */
		if (!txt_accept_word(X, "fnv1a") || !txt_expect(X, ':', "in 'elided fnv1a:HASH'")) {
			txt_error(X, h, "expected fnv1a:HASH after 'elided'");
			return 0;
		}
		txt_next(X);    /* the hash: digits and letters lex as one or two tokens */
		if (!txt_peek(X)->nl && (txt_peek(X)->kind == TK_IDENT || txt_peek(X)->kind == TK_INT))
			txt_next(X);
		if (txt_weights_fill(X, &c->W, v, at, 0) <= 0)
			diag_warn(X->D, "%d:%d: constant '%s' was elided by the printer and the weights file "
				  "does not hold it: zeros used", at->line, at->col, v->name);
		return 1;
	}
	if (!txt_expect(X, '[', "to open the elements"))
		return 0;
	for (int64_t i = 0; i < n; i++) {
		if (i && !txt_expect(X, ',', "between elements"))
			return 0;
		if (!store_num(X, txt_peek(X), v->dtype, v->data, i))
			return 0;
	}
	if (!txt_expect(X, ']', n ? "after the last element (more elements than the shape holds?)"
				  : "(the shape holds no elements)"))
		return 0;
	return 1;
}

/* ---- attributes ---- */

static const char *attr_name(txt *X)
{
	const txt_tok *t = txt_peek(X);
	if (t->kind == TK_IDENT || t->kind == TK_STRING) {
		txt_next(X);
		return t->str;
	}
	txt_error(X, t, "expected an attribute name, found %s", txt_tok_desc(X, t));
	return NULL;
}

static int is_float_tok(const txt_tok *t)
{
	return t->kind == TK_FLOAT || txt_is_word(t, "nan") || txt_is_word(t, "inf");
}

/* A float attribute read back: the float32 that dump printed with 9 digits
 * (an ONNX attribute), or the double of a .cell option printed in full. */
static double attr_number(double d)
{
	char tmp[32];
	snprintf(tmp, sizeof tmp, "%.9g", (float)d);
	return strtod(tmp, NULL) == d ? (double)(float)d : d;
}

/* `[E, ...]` after '=': a list whose first element decides its kind
 * (strings, floats when it is written as one, else ints). */
static int parse_attr_list(ir_graph *g, txt *X, ir_node *n, const char *name)
{
	txt_next(X);
	const txt_tok *e = txt_peek(X);
	const txt_tok *e1 = txt_is_punct(e, '-') ? txt_peek_at(X, 1) : e;
	ir_attrkind k = e->kind == TK_STRING ? ATTR_STRINGS : is_float_tok(e1) ? ATTR_FLOATS : ATTR_INTS;
	int cnt = 0, cap = 8;
	void *buf = arena_array(g->A, (size_t)cap, 8);
	do {
		if (cnt == cap) {
			buf = arena_grow(g->A, buf, (size_t)cnt, (size_t)cap * 2, 8);
			cap *= 2;
		}
		if (k == ATTR_STRINGS) {
			const txt_tok *s = txt_peek(X);
			if (s->kind != TK_STRING) {
				txt_error(X, s, "expected a string in a list of strings, found %s", txt_tok_desc(X, s));
				return 0;
			}
			txt_next(X);
			((const char **)buf)[cnt++] = s->str;
		} else if (k == ATTR_FLOATS) {
			double d;
			int isf;
			if (!txt_parse_number(X, &d, &isf, "a list element"))
				return 0;
			((float *)buf)[cnt++] = (float)d;
		} else {
			int64_t v;
			if (!txt_parse_int(X, &v, "a list element"))
				return 0;
			((int64_t *)buf)[cnt++] = v;
		}
	} while (txt_accept(X, ','));
	if (!txt_expect(X, ']', "to close the list"))
		return 0;
	ir_attr *a = ir_attr_add(n, name, k);
	a->n = cnt;
	if (k == ATTR_INTS)
		a->ints = buf;
	else if (k == ATTR_FLOATS)
		a->floats = buf;
	else
		a->strings = buf;
	return 1;
}

/* `ints[]`, `floats[]` or `strings[]`: an empty list names its kind. */
static int parse_attr_empty_list(txt *X, ir_node *n, const char *name, const txt_tok *t)
{
	txt_next(X);
	if (!txt_expect(X, '[', "(an empty list)") || !txt_expect(X, ']', "(an empty list)"))
		return 0;
	ir_attr *a = ir_attr_add(n, name, t->str[0] == 'i' ? ATTR_INTS : t->str[0] == 'f' ? ATTR_FLOATS
										: ATTR_STRINGS);
	a->n = 0;
	return 1;
}

/* `tensor TYPE = DATA` (or `tensor ?`): a constant of the node's graph. */
static int parse_attr_tensor(gctx *c, ir_graph *g, ir_node *n, const char *name, const txt_tok *t)
{
	txt *X = c->X;
	txt_next(X);
	ir_attr *a = ir_attr_add(n, name, ATTR_TENSOR);
	ir_dtype dt;
	ir_shape s;
	if (txt_accept(X, '?'))
		return 1;
	if (!txt_parse_type(X, g, &dt, &s, 0) || !txt_expect(X, '=', "before the tensor's data"))
		return 0;
	ir_value *v = ir_value_new(g, NULL, VAL_CONST, dt);
	v->shape = s;
	a = ir_attr_find(n, name);
	a->t = v;
	return txt_parse_const_data(c, g, v, t);
}

/* `graph NAME`: the graph itself is the block after the node line
 * (txt_graph.c, read_node_graphs). */
static int parse_attr_graph(txt *X, ir_graph *g, ir_node *n, const char *name, int *ngraphs)
{
	txt_next(X);
	const char *gn = txt_sym_name(X);
	if (!gn) {
		txt_error(X, txt_peek(X), "expected the graph's name");
		return 0;
	}
	ir_attr *a = ir_attr_add(n, name, ATTR_GRAPH);
	a->g = ir_graph_new(g->A, g, gn);
	(*ngraphs)++;
	return 1;
}

/* NAME = VALUE, the value's first token telling its kind (sb_attr in
 * ir_print.c writes each kind so). */
int txt_parse_attr(gctx *c, ir_graph *g, ir_node *n, int *ngraphs)
{
	txt *X = c->X;
	const txt_tok *nt = txt_peek(X);
	const char *name = attr_name(X);
	if (!name || !txt_expect(X, '=', "after the attribute name"))
		return 0;
	if (ir_attr_find(n, name)) {
		txt_error(X, nt, "attribute '%s' given twice", name);
		return 0;
	}
	const txt_tok *t = txt_peek(X);
	const txt_tok *t1 = txt_is_punct(t, '-') ? txt_peek_at(X, 1) : t;
	if (t->kind == TK_STRING) {
		txt_next(X);
		ir_attr_set_string(n, name, t->str);
	} else if (is_float_tok(t1)) {
		double d;
		int isf;
		if (!txt_parse_number(X, &d, &isf, "a value"))
			return 0;
		ir_attr_set_float(n, name, attr_number(d));
	} else if (t1->kind == TK_INT) {
		int64_t v;
		if (!txt_parse_int(X, &v, "a value"))
			return 0;
		ir_attr_set_int(n, name, v);
	} else if (txt_is_word(t, "ints") || txt_is_word(t, "floats") || txt_is_word(t, "strings")) {
		return parse_attr_empty_list(X, n, name, t);
	} else if (txt_is_punct(t, '[')) {
		return parse_attr_list(g, X, n, name);
	} else if (txt_is_word(t, "tensor")) {
		return parse_attr_tensor(c, g, n, name, t);
	} else if (txt_is_word(t, "graph")) {
		return parse_attr_graph(X, g, n, name, ngraphs);
	} else {
		txt_error(X, t, "expected an attribute value, found %s", txt_tok_desc(X, t));
		return 0;
	}
	return 1;
}
