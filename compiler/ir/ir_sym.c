/* ir_sym.c: sizes made one by an operator's contract (ir_sym_unify, ir.h).
 *
 * A unification is a substitution over the whole compilation: every symbol
 * gets a replacement (itself, another symbol, or a constant), every dim of
 * every shape and every element of every symbolic constant is rewritten
 * through it, and the symbols replaced leave the table, the others moving
 * down to close the gaps.  The symbol that goes takes the symbols derived
 * from it along (base + off follows its base; where the kept symbol already
 * has a derived symbol of the same offset, the two are one).  A dry run
 * checks first that no constant factor overflows, so that a refused
 * unification changes nothing. */
#include "ir.h"
#include "util.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

/* ---- derived symbols ------------------------------------------------------- */

int64_t ir_sym_mul(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	return g->sym_mul[s] > 1 ? g->sym_mul[s] : 1;
}

int64_t ir_sym_div(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	return g->sym_div[s] > 1 ? g->sym_div[s] : 1;
}

int ir_sym_is_offset(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	return s >= 0 && s < g->nsyms && g->sym_base[s] && ir_sym_mul(g, s) == 1 && ir_sym_div(g, s) == 1;
}

int ir_sym_root(const ir_graph *g, int s, int64_t *off)
{
	g = ir_root((ir_graph *)g);
	if (ir_sym_is_offset(g, s)) {
		*off = g->sym_off[s];
		return g->sym_base[s] - 1;
	}
	*off = 0;
	return s;
}

/* floor(a / b) for b > 0 */
static int64_t floordiv(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t gcd(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

int64_t ir_sym_value(const ir_graph *g, int s, const int64_t *free)
{
	g = ir_root((ir_graph *)g);
	if (!g->sym_base[s])
		return free[s];
	int64_t b = ir_sym_value(g, g->sym_base[s] - 1, free), x;
	if (b == INT64_MIN || __builtin_mul_overflow(ir_sym_mul(g, s), b, &x) ||
	    __builtin_add_overflow(x, g->sym_off[s], &x))
		return INT64_MIN;
	return floordiv(x, ir_sym_div(g, s));
}

int64_t ir_sym_least_value(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	if (g->sym_pin[s])
		return g->sym_pin[s];
	int64_t least[IR_MAX_SYMS];
	for (int i = 0; i < g->nsyms; i++)
		least[i] = ir_sym_least(g, i);
	int64_t v = ir_sym_value(g, s, least);
	return v < 1 ? 1 : v;
}

const char *ir_sym_def_str(arena *A, const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	if (!g->sym_base[s])
		return "";
	int64_t mul = ir_sym_mul(g, s), div = ir_sym_div(g, s), off = g->sym_off[s];
	const char *e = g->syms[g->sym_base[s] - 1];
	if (mul > 1)
		e = arena_printf(A, "%lld * %s", (long long)mul, e);
	if (off)
		e = arena_printf(A, "%s %c %lld", e, off < 0 ? '-' : '+', (long long)(off < 0 ? -off : off));
	if (div > 1 && g->sym_exact[s])
		e = arena_printf(A, "%s%s%s / %lld", off || mul > 1 ? "(" : "", e, off || mul > 1 ? ")" : "",
				 (long long)div);
	else if (div > 1)
		e = arena_printf(A, "floor(%s%s%s / %lld)", off || mul > 1 ? "(" : "", e, off || mul > 1 ? ")" : "",
				 (long long)div);
	return e;
}

/* The derived symbol (base b, mul, off, div), found or made; -1 if full.
 * exact: the division must be exact.  A floor and an exact division of one
 * definition are one symbol, exact once either is asked for: where the
 * model needs the division exact, the floor is that quotient too. */
static int derived(ir_graph *g, int b, int64_t mul, int64_t off, int64_t div, int exact)
{
	for (int i = 0; i < g->nsyms; i++)
		if (g->sym_base[i] == b + 1 && ir_sym_mul(g, i) == mul && ir_sym_div(g, i) == div && g->sym_off[i] == off &&
		    !g->sym_pin[i]) {
			g->sym_exact[i] |= (uint8_t)exact;
			return i;
		}
	if (g->nsyms == IR_MAX_SYMS)
		return -1;
	long long ao = (long long)(off < 0 ? -off : off);
	const char *name = mul == 1 && div == 1 ? arena_printf(g->A, "%s_%s_%lld", g->syms[b], off < 0 ? "minus" : "plus", ao)
			 : div == 1 ? arena_printf(g->A, "%s_x%lld", g->syms[b], (long long)mul)
			 : exact && mul == 1 && off == 0 ? arena_printf(g->A, "%s_over%lld", g->syms[b], (long long)div)
			 : exact ? arena_printf(g->A, "%s_exact%lld", g->syms[b], (long long)div)
			 : mul == 1 ? arena_printf(g->A, "%s_div%lld", g->syms[b], (long long)div)
			 : arena_printf(g->A, "%s_x%lld_div%lld", g->syms[b], (long long)mul, (long long)div);
	for (int i = 0; i < g->nsyms; i++)
		if (strcmp(g->syms[i], name) == 0) {
			name = arena_printf(g->A, "%s_%d", name, g->nsyms);
			i = -1;
		}
	int k = g->nsyms++;
	g->syms[k] = name;
	g->sym_base[k] = b + 1;
	g->sym_off[k] = off;
	g->sym_mul[k] = mul;
	g->sym_div[k] = div;
	g->sym_min[k] = 0;
	g->sym_pin[k] = 0;
	g->sym_exact[k] = (uint8_t)exact;
	return k;
}

int ir_sym_canonical(const ir_graph *g, int b, int64_t mul, int64_t off, int64_t div)
{
	g = ir_root((ir_graph *)g);
	if (b < 0 || b >= g->nsyms || mul < 1 || div < 1 || gcd(mul, div) != 1 || (div == 1 && off == 0))
		return 0;
	/* ir_sym_floor composes through an unpinned derived base: an offset or
	 * factor base always, a floor base when the outer factor is 1 */
	return !g->sym_base[b] || g->sym_pin[b] || g->sym_exact[b] || (ir_sym_div(g, b) > 1 && mul > 1);
}

int ir_sym_exact_ok(const ir_graph *g, int b, int64_t mul, int64_t off, int64_t div)
{
	g = ir_root((ir_graph *)g);
	if (b < 0 || b >= g->nsyms || mul < 1 || div < 2 || gcd(mul, div) != 1)
		return 0;
	return !g->sym_base[b] || g->sym_pin[b] || g->sym_exact[b] || ir_sym_is_offset(g, b);
}

static int small(int64_t v) { return v <= INT32_MAX && v >= -(int64_t)INT32_MAX; }

int ir_sym_floor(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div, ir_dim *r)
{
	g = ir_root(g);
	if (mul < 1 || div < 1 || !small(mul) || !small(div) || !small(off))
		return 0;
	if (ir_dim_is_const(d)) {
		int64_t x;
		if (__builtin_mul_overflow(mul, d.k, &x) || __builtin_add_overflow(x, off, &x))
			return 0;
		*r = ir_dim_const(floordiv(x, div));
		return 1;
	}
	if (d.k > 1) {         /* k S: the factor into mul */
		int64_t x;
		if (__builtin_mul_overflow(mul, d.k, &x) || !small(x))
			return 0;
		mul = x;
		d.k = 1;
	}
	int s = ir_dim_one_sym(d);
	if (s < 0 || s >= g->nsyms)
		return 0;
	for (;;) {
		if (g->sym_pin[s] || g->sym_exact[s] || !g->sym_base[s])
			break;
		int b = g->sym_base[s] - 1;
		int64_t m1 = ir_sym_mul(g, s), d1 = ir_sym_div(g, s), o1 = g->sym_off[s], x, y;
		if (d1 == 1) {          /* mul * (m1 b + o1) + off */
			if (__builtin_mul_overflow(mul, m1, &x) || __builtin_mul_overflow(mul, o1, &y) ||
			    __builtin_add_overflow(y, off, &y) || !small(x) || !small(y))
				return 0;       /* composed, it leaves the range: none */
			mul = x;
			off = y;
		} else if (mul == 1) {  /* floor((floor((m1 b + o1) / d1) + off) / div) */
			if (__builtin_mul_overflow(off, d1, &y) || __builtin_add_overflow(y, o1, &y) ||
			    __builtin_mul_overflow(d1, div, &x) || !small(x) || !small(y))
				return 0;
			mul = m1;
			off = y;
			div = x;
		} else {
			break;
		}
		s = b;
	}
	int64_t c = gcd(mul, div);
	mul /= c;
	div /= c;
	off = floordiv(off, c);
	if (div == 1 && off == 0) {             /* mul * s: a monomial */
		*r = ir_dim_sym(s);
		r->k = mul;
		return 1;
	}
	for (int i = 0; i < g->nsyms; i++)      /* one pinned to a constant: that constant */
		if (g->sym_pin[i] && g->sym_base[i] == s + 1 && ir_sym_mul(g, i) == mul && ir_sym_div(g, i) == div &&
		    g->sym_off[i] == off) {
			*r = ir_dim_const(g->sym_pin[i]);
			return 1;
		}
	int k = derived(g, s, mul, off, div, 0);
	if (k < 0)
		return 0;
	*r = ir_dim_sym(k);
	return 1;
}

int ir_sym_exact(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div, ir_dim *r)
{
	g = ir_root(g);
	if (mul < 1 || div < 1 || !small(mul) || !small(div) || !small(off))
		return 0;
	int64_t c = gcd(mul, div);
	if (off % c != 0)
		return 0;
	mul /= c;
	div /= c;
	off /= c;
	if (ir_dim_is_const(d)) {
		int64_t x;
		if (__builtin_mul_overflow(mul, d.k, &x) || __builtin_add_overflow(x, off, &x) || x % div != 0)
			return 0;
		*r = ir_dim_const(x / div);
		return 1;
	}
	if (div == 1)           /* nothing to divide: an offset, a factor */
		return ir_sym_floor(g, d, mul, off, 1, r);
	int s = ir_dim_one_sym(d);
	if (s < 0 || s >= g->nsyms || !ir_sym_exact_ok(g, s, mul, off, div))
		return 0;
	int k = derived(g, s, mul, off, div, 1);
	if (k < 0)
		return 0;
	*r = ir_dim_sym(k);
	return 1;
}

int ir_sym_inexact(const ir_graph *g, const int64_t *free)
{
	g = ir_root((ir_graph *)g);
	for (int i = 0; i < g->nsyms; i++) {
		if (!g->sym_exact[i])
			continue;
		int64_t b = ir_sym_value(g, g->sym_base[i] - 1, free), x;
		if (b == INT64_MIN || __builtin_mul_overflow(ir_sym_mul(g, i), b, &x) ||
		    __builtin_add_overflow(x, g->sym_off[i], &x) || x % ir_sym_div(g, i) != 0)
			return i;
	}
	return -1;
}

int ir_sym_offset(ir_graph *g, ir_dim d, int64_t c, ir_dim *r)
{
	return ir_sym_floor(g, d, 1, c, 1, r);
}

int ir_sym_need(ir_graph *g, ir_dim d, int64_t m)
{
	g = ir_root(g);
	if (ir_dim_is_const(d))
		return d.k >= m;
	int s = -1;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (d.pow[i]) {
			if (d.pow[i] != 1 || s >= 0)
				return 0;
			s = i;
		}
	if (s < 0 || s >= g->nsyms || d.k < 1 || m > INT32_MAX)
		return 0;
	int64_t need = (m + d.k - 1) / d.k;     /* k s >= m */
	while (g->sym_base[s]) {
		if (g->sym_pin[s])
			return g->sym_pin[s] >= need;
		/* floor((mul b + off) / div) >= need  <=>  b >= ceil((need div - off) / mul) */
		int64_t mul = ir_sym_mul(g, s), x = need * ir_sym_div(g, s) - g->sym_off[s];
		need = x <= 0 ? 1 : (x + mul - 1) / mul;
		s = g->sym_base[s] - 1;
		if (need > INT32_MAX)
			return 0;
	}
	if (need > g->sym_min[s])
		g->sym_min[s] = need;
	return 1;
}

/* ---- unification ------------------------------------------------------------ */

typedef struct symmap {
	ir_dim to[IR_MAX_SYMS];         /* each old symbol's replacement, in old indices */
	int keep[IR_MAX_SYMS];          /* new index of a kept symbol; -1: replaced */
} symmap;

/* d through m; 0 on overflow (a constant factor beyond 2^62). */
static int map_dim(const ir_graph *root, const symmap *m, ir_dim d, ir_dim *r)
{
	if (!ir_dim_known(d)) {
		*r = d;
		return 1;
	}
	ir_dim o = {.k = d.k};
	for (int i = 0; i < root->nsyms; i++) {
		for (int p = 0; p < d.pow[i]; p++) {
			ir_dim t = m->to[i];
			int64_t k;
			if (__builtin_mul_overflow(o.k, t.k, &k) || k > ((int64_t)1 << 62) || k < -((int64_t)1 << 62))
				return 0;
			o.k = k;
			for (int j = 0; j < root->nsyms; j++)
				if (t.pow[j]) {
					if (m->keep[j] < 0 || o.pow[m->keep[j]] + t.pow[j] > 255)
						return 0;
					o.pow[m->keep[j]] = (uint8_t)(o.pow[m->keep[j]] + t.pow[j]);
				}
		}
	}
	*r = o;
	return 1;
}

/* Every dim of the graph b and the graphs in it through m (apply 0: only
 * whether each can be); 0 when one cannot. */
static int map_graph(ir_graph *root, const symmap *m, ir_graph *b, int apply)
{
	for (int i = 0; i < b->nvalues; i++) {
		ir_value *v = b->values[i];
		ir_shape s = v->shape;
		for (int a = 0; a < s.rank; a++)
			if (!map_dim(root, m, v->shape.d[a], &s.d[a]))
				return 0;
		if (apply)
			v->shape = s;
		if (!v->sym)
			continue;
		int64_t n = ir_shape_const_numel(&v->shape);
		int symbolic = 0;
		for (int64_t e = 0; e < n; e++) {
			ir_dim d;
			if (!map_dim(root, m, v->sym[e], &d))
				return 0;
			symbolic |= !ir_dim_is_const(d);
			if (apply)
				v->sym[e] = d;
		}
		/* a tensor whose elements are all constant holds data (infer.h) */
		if (apply && !symbolic) {
			int64_t *data = arena_array(root->A, (size_t)(n ? n : 1), sizeof *data);
			for (int64_t e = 0; e < n; e++)
				data[e] = v->sym[e].k;
			v->data = data;
			v->sym = NULL;
		}
	}
	for (int i = 0; i < b->nnodes; i++) {
		ir_node *n = b->nodes[i];
		if (n->body && !map_graph(root, m, n->body, apply))
			return 0;
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g &&
			    !map_graph(root, m, n->attrs[a].g, apply))
				return 0;
	}
	return 1;
}

/* Symbol s replaced by `by` (a kept symbol or a constant), the symbols
 * derived from it following it in index order (a base comes before what
 * is derived from it): a constant base makes them constants, a new base
 * symbol makes them one with a derived symbol of the same definition where
 * there is one.  A pinned s (by a constant, s derived) stays in the table
 * for the generated code's check.  0 when a derived value cannot follow
 * (a constant below 1). */
static int plan(const ir_graph *root, symmap *m, int s, ir_dim by, int pin)
{
	for (int i = 0; i < root->nsyms; i++)
		m->to[i] = ir_dim_sym(i);
	m->to[s] = by;
	for (int j = s + 1; j < root->nsyms; j++) {
		int b = root->sym_base[j] - 1;
		if (b < 0 || ir_dim_eq(m->to[b], ir_dim_sym(b)))
			continue;
		int64_t mul = ir_sym_mul(root, j), off = root->sym_off[j], div = ir_sym_div(root, j);
		ir_dim tb = m->to[b];
		if (ir_dim_is_const(tb)) {
			int64_t x;
			if (__builtin_mul_overflow(mul, tb.k, &x) || __builtin_add_overflow(x, off, &x) ||
			    floordiv(x, div) < 1 || (root->sym_exact[j] && x % div != 0))
				return 0;
			m->to[j] = ir_dim_const(floordiv(x, div));
			continue;
		}
		int t = ir_dim_one_sym(tb);
		if (root->sym_exact[j] && !ir_sym_exact_ok(root, t, mul, off, div))
			return 0;       /* an exact division of what its base became: none */
		for (int k = 0; k < j; k++)
			if (root->sym_base[k] == t + 1 && ir_sym_mul(root, k) == mul && ir_sym_div(root, k) == div &&
			    root->sym_off[k] == off && ir_dim_eq(m->to[k], ir_dim_sym(k)) && !root->sym_pin[k] &&
			    root->sym_exact[k] == root->sym_exact[j])
				m->to[j] = ir_dim_sym(k);
	}
	int n = 0;
	for (int i = 0; i < root->nsyms; i++)
		m->keep[i] = ir_dim_eq(m->to[i], ir_dim_sym(i)) || (pin && i == s) ? n++ : -1;
	return 1;
}

/* The symbol table through m: the kept symbols move down, a derived one
 * whose base was replaced by a symbol takes that base. */
static void compact(ir_graph *root, const symmap *m)
{
	const char *old[IR_MAX_SYMS];
	memcpy(old, root->syms, sizeof old);
	int n = 0;
	for (int i = 0; i < root->nsyms; i++) {
		if (m->keep[i] < 0)
			continue;
		int b = root->sym_base[i] - 1;
		const char *name = old[i];
		if (b >= 0) {
			int nb = m->keep[b] >= 0 ? b : ir_dim_one_sym(m->to[b]);
			root->sym_base[n] = m->keep[nb] + 1;
			/* a name ir_sym_offset made from the base's follows it */
			int64_t off = root->sym_off[i];
			const char *pm = off < 0 ? "minus" : "plus";
			long long a = (long long)(off < 0 ? -off : off);
			if (nb != b && ir_sym_is_offset(root, i) &&
			    !strcmp(name, arena_printf(root->A, "%s_%s_%lld", old[b], pm, a))) {
				const char *nn = arena_printf(root->A, "%s_%s_%lld", old[nb], pm, a);
				int taken = 0;
				for (int k = 0; k < root->nsyms; k++)
					taken |= !strcmp(old[k], nn);
				if (!taken)
					name = nn;
			}
		} else {
			root->sym_base[n] = 0;
		}
		root->syms[n] = name;
		root->sym_off[n] = root->sym_off[i];
		root->sym_mul[n] = root->sym_mul[i];
		root->sym_div[n] = root->sym_div[i];
		root->sym_min[n] = root->sym_min[i];
		root->sym_pin[n] = root->sym_pin[i];
		root->sym_exact[n] = root->sym_exact[i];
		root->sym_value[n] = root->sym_value[i];
		n++;
	}
	for (int i = n; i < root->nsyms; i++) {
		root->syms[i] = NULL;
		root->sym_base[i] = 0;
		root->sym_off[i] = root->sym_mul[i] = root->sym_div[i] = root->sym_min[i] = root->sym_pin[i] = 0;
		root->sym_exact[i] = 0;
		root->sym_value[i] = NULL;
	}
	root->nsyms = n;
}

void ir_sym_link_add(ir_graph *g, const ir_sym_link *l)
{
	g = ir_root(g);
	g->links = arena_grow(g->A, g->links, (size_t)g->nlinks, (size_t)g->nlinks + 1, sizeof *g->links);
	g->links[g->nlinks++] = *l;
}

int ir_sym_unify(ir_graph *g, ir_dim a, ir_dim b, const char *node, const char *why)
{
	ir_graph *root = ir_root(g);
	if (!root->unify_ok || !ir_dim_known(a) || !ir_dim_known(b) || ir_dim_eq(a, b))
		return 0;
	int sa = ir_dim_one_sym(a), sb = ir_dim_one_sym(b);
	if (sa < 0 && sb < 0)
		return 0;
	int s, pin = 0;
	ir_dim by;
	/* a size read from an input's value stays what the input holds: the
	 * contract's other size is no reason to change it (a contradiction) */
	if ((sa >= 0 && root->sym_value[sa]) || (sb >= 0 && root->sym_value[sb]))
		return 0;
	if (sa >= 0 && sb >= 0) {               /* the later symbol becomes the earlier */
		if (!ir_sym_free(root, sa) || !ir_sym_free(root, sb))
			return 0;
		s = sa > sb ? sa : sb;
		by = ir_dim_sym(sa > sb ? sb : sa);
	} else {
		s = sa >= 0 ? sa : sb;
		by = sa >= 0 ? b : a;
		if (!ir_dim_is_const(by) || by.k < 1 || by.k > INT32_MAX)
			return 0;
		if (!ir_sym_free(root, s)) {
			/* a derived size required to be a constant: pinned, checked at run time */
			if (root->sym_pin[s])
				return 0;
			pin = 1;
		} else if (by.k < ir_sym_least(root, s)) {
			return 0;
		}
	}
	symmap m;
	if (!plan(root, &m, s, by, pin) || !map_graph(root, &m, root, 0))
		return 0;
	ir_sym_link l = {.name = root->syms[s], .node = node, .why = why};
	if (ir_dim_is_const(by))
		l.value = by.k;
	else
		l.into = root->syms[ir_dim_one_sym(by)];
	if (pin)
		root->sym_pin[s] = by.k;
	int t = ir_dim_one_sym(by);
	if (t >= 0 && root->sym_min[s] > root->sym_min[t])      /* the larger least value holds */
		root->sym_min[t] = root->sym_min[s];
	map_graph(root, &m, root, 1);
	/* a least value recorded for s (an If decided by a size) follows it:
	 * into a symbol it is that symbol's, into a constant it is met */
	int kept = 0;
	for (int i = 0; i < root->nlinks; i++) {
		ir_sym_link *k = &root->links[i];
		if (k->at_least && !strcmp(k->name, root->syms[s]) && !l.into)
			continue;
		if (k->at_least && !strcmp(k->name, root->syms[s]))
			k->name = l.into;
		root->links[kept++] = *k;
	}
	root->nlinks = kept;
	compact(root, &m);
	ir_sym_link_add(root, &l);
	return 1;
}

/* ---- names ---- */

static int is_c_keyword(const char *s)
{
	static const char *const kw[] = {
		"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
		"enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
		"restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
		"typedef", "union", "unsigned", "void", "volatile", "while",
	};
	for (size_t i = 0; i < COUNTOF(kw); i++)
		if (strcmp(kw[i], s) == 0)
			return 1;
	return 0;
}

/* A C identifier made of s: symbols name fields of the NAME_dims struct in
 * emitted code.  Keywords, names reserved to the implementation ("_X",
 * "__x") and names that start with a digit get a "d_" in front. */
const char *ir_sym_ident(arena *A, const char *s)
{
	size_t n = strlen(s);
	char *r = arena_alloc(A, n + 3), *p = r;
	if (!n || isdigit((unsigned char)s[0]) || is_c_keyword(s) ||
	    (s[0] == '_' && (s[1] == '_' || isupper((unsigned char)s[1])))) {
		*p++ = 'd';
		*p++ = '_';
	}
	for (; *s; s++)
		*p++ = isalnum((unsigned char)*s) ? *s : '_';
	return r;
}

const char *ir_sym_fresh_name(ir_graph *g, const char *want)
{
	const char *base = ir_sym_ident(g->A, want), *name = base;
	for (int k = 2;; k++) {
		int taken = 0;
		for (int i = 0; i < g->nsyms; i++)
			taken |= strcmp(g->syms[i], name) == 0;
		if (!taken)
			return name;
		name = arena_printf(g->A, "%s_%d", base, k);
	}
}

int ir_sym_value_input(const ir_graph *g, int s)
{
	for (int k = 0; s >= 0 && s < g->nsyms && g->sym_value[s] && k < g->ninputs; k++)
		if (!strcmp(g->inputs[k]->name, g->sym_value[s]))
			return k;
	return -1;
}

int ir_input_value_sym(const ir_graph *g, int k)
{
	for (int s = 0; k >= 0 && k < g->ninputs && s < g->nsyms; s++)
		if (g->sym_value[s] && !strcmp(g->sym_value[s], g->inputs[k]->name))
			return s;
	return -1;
}
