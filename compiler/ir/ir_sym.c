/* ir_sym.c: size expressions (ir_symdef) and sizes made one by an
 * operator's contract (ir_sym_unify, ir.h).
 *
 * A unification is a substitution over the whole compilation: every symbol
 * gets a replacement (itself, another symbol, or a constant), every dim of
 * every shape and every element of every symbolic constant is rewritten
 * through it, and the symbols replaced leave the table, the others moving
 * down to close the gaps.  The symbol that goes takes the symbols derived
 * from it along (their definitions read through the replacement and made
 * canonical again; where a kept symbol already has the same definition,
 * the two are one).  A dry run checks first that no constant factor
 * overflows, so that a refused unification changes nothing.
 *
 * Before it: derived symbols (ir_symdef): their canonical forms, found or
 * made by the builders, their values and bounds, and the least values a
 * shape decision records through them. */
#include "ir.h"
#include "util.h"
#include "cellrt.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- derived symbols ------------------------------------------------------- */

static int small(int64_t v) { return v <= INT32_MAX && v >= -(int64_t)INT32_MAX; }

/* floor(a / b) for b > 0 */
static int64_t floordiv(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static int64_t gcd(int64_t a, int64_t b)
{
	a = a < 0 ? -a : a;
	b = b < 0 ? -b : b;
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* *acc += k * x; 0 on overflow */
static int addmul(int64_t *acc, int64_t k, int64_t x)
{
	int64_t p;
	return !__builtin_mul_overflow(k, x, &p) && !__builtin_add_overflow(*acc, p, acc);
}

/* The symbol table a definition is read against: the root graph's, or
 * the one a unification is planning (its new definitions and pins). */
typedef struct symview {
	int n;                          /* symbols 0 .. n - 1 */
	const ir_symdef *def;
	const int64_t *pin, *min;
} symview;

static symview view_of(const ir_graph *g)
{
	return (symview){g->nsyms, g->symdef, g->sym_pin, g->sym_min};
}

/* off + sum c[j] * symbol j */
typedef struct lin {
	int64_t c[IR_MAX_SYMS];
	int64_t off;
} lin;

/* l += k * d for d a constant or j times one symbol (power 1) below n; 0
 * for another monomial or on overflow */
static int lin_add(lin *l, ir_dim d, int64_t k, int n)
{
	int s = -1;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (d.pow[i]) {
			if (d.pow[i] != 1 || s >= 0 || i >= n)
				return 0;
			s = i;
		}
	return s < 0 ? addmul(&l->off, k, d.k) : addmul(&l->c[s], k, d.k);
}

/* What a definition is once canonical: a constant, k times a symbol, or
 * k times (1 or -1) a definition. */
enum { C_CONST, C_MONO, C_DEF };
typedef struct canon {
	int kind;
	int64_t k;
	int s;                          /* C_MONO */
	ir_symdef d;                    /* C_DEF */
} canon;

/* A LIN symbol without a divisor is written out in its terms; an atom is
 * any other symbol (free, a floor, an exact division, a MIN or MAX). */
static int is_atom(const symview *v, int s)
{
	return v->def[s].op != IR_SYM_LIN || v->def[s].div > 1;
}

/* floor((l) / div), exact when asked, canonical over v (ir_symdef) */
static int canon_lin(const symview *v, lin l, int64_t div, int exact, canon *o)
{
	if (div < 1)
		return 0;
	/* pinned symbols are their constant; LINs without a divisor their terms */
	for (int j = v->n - 1; j >= 0; j--) {
		int64_t k = l.c[j];
		if (!k)
			continue;
		const ir_symdef *d = &v->def[j];
		if (v->pin[j]) {
			l.c[j] = 0;
			if (!addmul(&l.off, k, v->pin[j]))
				return 0;
			continue;
		}
		if (is_atom(v, j))
			continue;
		l.c[j] = 0;
		for (int t = 0; t < j; t++)
			if (d->c[t] && !addmul(&l.c[t], k, d->c[t]))
				return 0;
		if (!addmul(&l.off, k, d->off))
			return 0;
	}
	/* a floor of one floor with factor 1 is one floor:
	 * floor((floor((X + o) / q) + off) / div) = floor((X + o + off q) / (q div)) */
	for (;;) {
		int n = 0, t = -1;
		for (int j = 0; j < v->n; j++)
			if (l.c[j])
				n++, t = j;
		if (n != 1 || l.c[t] != 1 || exact)
			break;
		const ir_symdef *d = &v->def[t];
		if (d->op != IR_SYM_LIN || d->div < 2 || d->exact)
			break;
		lin m = {.off = d->off};
		memcpy(m.c, d->c, sizeof m.c);
		if (!addmul(&m.off, l.off, d->div) || __builtin_mul_overflow(div, d->div, &div))
			return 0;
		l = m;
	}
	/* the factors and the divisor without a common factor */
	if (div > 1) {
		int64_t c = div;
		for (int j = 0; j < v->n; j++)
			if (l.c[j])
				c = gcd(c, l.c[j]);
		if (c > 1) {
			if (exact && l.off % c)
				return 0;       /* never a whole number */
			for (int j = 0; j < v->n; j++)
				l.c[j] /= c;
			l.off = exact ? l.off / c : floordiv(l.off, c);
			div /= c;
		}
	}
	int n = 0, t = -1;
	for (int j = 0; j < v->n; j++)
		if (l.c[j])
			n++, t = j;
	*o = (canon){.kind = C_CONST, .k = 1};
	if (n == 0) {
		if (exact && l.off % div)
			return 0;
		o->k = floordiv(l.off, div);
		return 1;
	}
	if (div == 1 && n == 1 && l.off == 0) {
		o->kind = C_MONO;
		o->k = l.c[t];
		o->s = t;
		return 1;
	}
	if (div == 1 && l.c[t] < 0) {   /* T1 - T2 = -(T2 - T1) */
		o->k = -1;
		for (int j = 0; j < v->n; j++)
			l.c[j] = -l.c[j];
		l.off = -l.off;
	}
	if (!small(l.off) || !small(div))
		return 0;
	for (int j = 0; j < v->n; j++)
		if (!small(l.c[j]))
			return 0;
	/* an exact division of a floor would lose the floor's rounding */
	for (int j = 0; exact && div > 1 && j < v->n; j++)
		if (l.c[j] && v->def[j].op == IR_SYM_LIN && !v->def[j].exact && !v->pin[j])
			return 0;
	o->kind = C_DEF;
	o->d = (ir_symdef){.op = IR_SYM_LIN, .exact = (uint8_t)(exact && div > 1), .off = l.off, .div = div};
	memcpy(o->d.c, l.c, sizeof l.c);
	return 1;
}

/* Bounds of symbol s over v: its least value (hi 0; INT64_MIN: none) or its
 * largest (hi 1; INT64_MAX: none) when each free symbol i is at least its
 * least value and, max given, at most max[i]. */
static int64_t bound(const symview *v, int s, const int64_t *max, int hi)
{
	const int64_t none = hi ? INT64_MAX : INT64_MIN;
	if (v->pin[s])
		return v->pin[s];
	const ir_symdef *d = &v->def[s];
	if (d->op == IR_SYM_FREE) {
		if (hi)
			return max ? max[s] : none;
		return v->min[s] > 1 ? v->min[s] : 1;
	}
	if (d->op == IR_SYM_MIN || d->op == IR_SYM_MAX) {
		int64_t x = bound(v, d->a, max, hi), y = d->b < 0 ? d->off : bound(v, d->b, max, hi);
		return (d->op == IR_SYM_MIN) == (x < y) ? x : y;
	}
	if (d->op == IR_SYM_SCALE) {    /* it grows with its operand */
		int64_t x = bound(v, d->a, max, hi), r = x == none ? -1 : rt_resize_size(x < 0 ? 0 : x, d->scale);
		return r < 0 ? none : r;
	}
	int64_t acc = d->off;
	for (int j = 0; j < s; j++) {
		if (!d->c[j])
			continue;
		/* a positive factor takes the term's own bound, a negative the other */
		int64_t x = bound(v, j, max, d->c[j] > 0 ? hi : !hi);
		if (x == INT64_MIN || x == INT64_MAX || !addmul(&acc, d->c[j], x))
			return none;
	}
	return floordiv(acc, d->div);
}

/* Dim x (a constant or k times one symbol) as a sum of atoms over v; 0
 * for another monomial. */
static int expanded(const symview *v, ir_dim x, lin *l)
{
	lin in = {0};
	canon o;
	if (!lin_add(&in, x, 1, v->n) || !canon_lin(v, in, 1, 0, &o))
		return 0;
	*l = (lin){0};
	if (o.kind == C_CONST) {
		l->off = o.k;
	} else if (o.kind == C_MONO) {
		l->c[o.s] = o.k;
	} else {
		l->off = o.k * o.d.off;
		for (int j = 0; j < v->n; j++)
			l->c[j] = o.k * o.d.c[j];
	}
	return 1;
}

/* Bounds of dim x (a constant or k times one symbol, k > 0) as bound() */
static int64_t dim_bound(const symview *v, ir_dim x, int hi)
{
	int s = -1;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (x.pow[i])
			s = i;
	if (s < 0)
		return x.k;
	int64_t b = bound(v, s, NULL, hi), r;
	if (b == INT64_MIN || b == INT64_MAX || __builtin_mul_overflow(b, x.k, &r))
		return hi ? INT64_MAX : INT64_MIN;
	return r;
}

/* One symbol (k = 1, power 1) or a constant, the pinned symbol its pin */
static int operand(const symview *v, ir_dim x, int *s, int64_t *c)
{
	*s = -1;
	*c = x.k;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (x.pow[i]) {
			if (x.pow[i] != 1 || *s >= 0 || i >= v->n)
				return 0;
			*s = i;
		}
	if (*s >= 0 && v->pin[*s]) {
		if (__builtin_mul_overflow(x.k, v->pin[*s], c))
			return 0;
		*s = -1;
	}
	return *s < 0 ? small(*c) : x.k == 1;
}

/* min (op IR_SYM_MIN) or max of x and y over v.  bounds: decide it by the
 * operands' least and largest values too (the builders do; the check of
 * a definition, ir_sym_noncanonical, reads its structure only, since least
 * values grow as a compilation goes).  *which: 1 or 2 when the result is
 * x or y itself. */
static int canon_minmax(const symview *v, int op, ir_dim x, ir_dim y, int bounds, canon *o, int *which)
{
	int mn = op == IR_SYM_MIN;
	*which = 0;
	lin lx, ly;
	if (!expanded(v, x, &lx) || !expanded(v, y, &ly))
		return 0;
	if (!memcmp(lx.c, ly.c, sizeof lx.c)) {         /* they differ by a constant */
		*which = (lx.off <= ly.off) == mn ? 1 : 2;
		return 1;
	}
	if (bounds) {
		if (dim_bound(v, x, 1) <= dim_bound(v, y, 0))
			*which = mn ? 1 : 2;
		else if (dim_bound(v, y, 1) <= dim_bound(v, x, 0))
			*which = mn ? 2 : 1;
		if (*which)
			return 1;
	}
	int sx, sy;
	int64_t cx, cy;
	if (!operand(v, x, &sx, &cx) || !operand(v, y, &sy, &cy))
		return 0;
	if (sx < 0 && sy < 0) {
		*o = (canon){.kind = C_CONST, .k = (cx < cy) == mn ? cx : cy};
		return 1;
	}
	if (sx < 0 || (sy >= 0 && sy < sx)) {
		int t = sx;
		sx = sy;
		sy = t;
		cy = cx;
	}
	*o = (canon){.kind = C_DEF, .k = 1};
	o->d = (ir_symdef){.op = (uint8_t)op, .a = sx, .b = sy, .off = sy < 0 ? cy : 0};
	return 1;
}

int ir_sym_dyadic(float s, int64_t *p, int64_t *q)
{
	for (*q = 1; *q <= 64; *q *= 2) {
		double x = (double)s * (double)*q;      /* exact: a float times a power of two */
		if (x >= 1 && x <= INT32_MAX && x == floor(x)) {
			*p = (int64_t)x;
			return 1;
		}
	}
	return 0;
}

/* A Resize's output size of x (a constant or one symbol) by scale s over
 * v (ir_sym_scale): the constant, floor(p x / q) for a scale p / q that
 * is a multiple of 1/64, else scale(x, s). */
static int canon_scale(const symview *v, ir_dim x, float s, canon *o)
{
	int sx;
	int64_t cx, p, q;
	if (!(s > 0 && isfinite(s)) || !operand(v, x, &sx, &cx))
		return 0;
	if (sx < 0) {
		*o = (canon){.kind = C_CONST, .k = rt_resize_size(cx, s)};
		return o->k >= 0;
	}
	if (ir_sym_dyadic(s, &p, &q)) {
		lin l = {0};
		l.c[sx] = p;
		return canon_lin(v, l, q, 0, o);
	}
	*o = (canon){.kind = C_DEF, .k = 1};
	o->d = (ir_symdef){.op = IR_SYM_SCALE, .a = sx, .b = -1, .scale = s};
	return 1;
}

/* Whether x resized by s (rt_resize_size, which grows with x) is at least
 * n, or beyond any size */
static int scales_to(int64_t x, float s, int64_t n)
{
	int64_t r = rt_resize_size(x, s);
	return r < 0 || r >= n;
}

/* The least x in [1, INT32_MAX] whose Resize by s is at least n; 0 when
 * there is none. */
static int64_t scale_inverse(float s, int64_t n)
{
	int64_t lo = 1, hi = INT32_MAX;
	if (!scales_to(hi, s, n))
		return 0;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (scales_to(mid, s, n))
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int same_def(const ir_symdef *x, const ir_symdef *y)
{
	if (x->op != y->op)
		return 0;
	if (x->op == IR_SYM_LIN)
		return x->off == y->off && x->div == y->div && !memcmp(x->c, y->c, sizeof x->c);
	return x->a == y->a && x->b == y->b && x->off == y->off && x->scale == y->scale;
}

/* ---- definitions as text ---- */

/* A scale's shortest digits that read back as the same float32, through
 * strtof and through strtod and a conversion to float (as the text reader
 * reads them) */
static const char *scale_text(arena *A, float s)
{
	char buf[40];
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, (double)s);
		if (strtof(buf, NULL) == s && (float)strtod(buf, NULL) == s)
			break;
	}
	return arena_printf(A, "%s", buf);
}

/* A symbol's name as the text writes it in a definition (nm NULL: as is) */
static const char *sym_name(arena *A, const char *const *syms, int s, const char *(*nm)(arena *, const char *))
{
	return nm ? nm(A, syms[s]) : syms[s];
}

/* The definition d as text over the names syms[] (ir_sym_def_str) */
static const char *def_text(arena *A, const char *const *syms, const ir_symdef *d,
			    const char *(*nm)(arena *, const char *))
{
	if (d->op == IR_SYM_MIN || d->op == IR_SYM_MAX)
		return arena_printf(A, "%s(%s, %s)", d->op == IR_SYM_MIN ? "min" : "max", sym_name(A, syms, d->a, nm),
				    d->b >= 0 ? sym_name(A, syms, d->b, nm) : arena_printf(A, "%lld", (long long)d->off));
	if (d->op == IR_SYM_SCALE)
		return arena_printf(A, "scale(%s, %s)", sym_name(A, syms, d->a, nm), scale_text(A, d->scale));
	if (d->op != IR_SYM_LIN)
		return "";
	/* the terms with a positive factor first, then the negative ones */
	const char *e = "";
	int n = 0, mul = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int j = 0; j < IR_MAX_SYMS; j++) {
			int64_t c = d->c[j];
			if (!c || (c > 0) != (pass == 0))
				continue;
			int64_t a = c < 0 ? -c : c;
			const char *t = sym_name(A, syms, j, nm);
			if (a > 1)
				t = arena_printf(A, "%lld * %s", (long long)a, t);
			e = !n ? arena_printf(A, "%s%s", c < 0 ? "-" : "", t) : arena_printf(A, "%s %c %s", e, c < 0 ? '-' : '+', t);
			n++;
			mul |= a > 1;
		}
	if (d->off)
		e = arena_printf(A, "%s %c %lld", e, d->off < 0 ? '-' : '+', (long long)(d->off < 0 ? -d->off : d->off));
	if (d->div > 1) {
		int paren = n > 1 || mul || d->off;
		e = arena_printf(A, paren ? "(%s) / %lld" : "%s / %lld", e, (long long)d->div);
		if (!d->exact)
			e = arena_printf(A, "floor(%s)", e);
	}
	return e;
}

/* The name a new symbol of definition d gets: its terms' (T_minus_1,
 * L_div2, L_x3_div2, B_over2, T1_plus_T2, min_T_10, W_scale1_3) */
static const char *def_name(arena *A, const char *const *syms, const ir_symdef *d)
{
	if (d->op == IR_SYM_SCALE) {
		char *r = (char *)arena_printf(A, "%s_scale%s", syms[d->a], scale_text(A, d->scale));
		for (char *p = r + strlen(syms[d->a]); *p; p++)
			*p = isalnum((unsigned char)*p) ? *p : '_';
		return r;
	}
	if (d->op == IR_SYM_MIN || d->op == IR_SYM_MAX) {
		const char *y = d->b >= 0 ? syms[d->b]
			      : arena_printf(A, "%s%lld", d->off < 0 ? "m" : "", (long long)(d->off < 0 ? -d->off : d->off));
		return arena_printf(A, "%s_%s_%s", d->op == IR_SYM_MIN ? "min" : "max", syms[d->a], y);
	}
	int n = 0, b = -1;
	for (int j = 0; j < IR_MAX_SYMS; j++)
		if (d->c[j])
			n++, b = j;
	long long ao = (long long)(d->off < 0 ? -d->off : d->off), mul = (long long)d->c[b < 0 ? 0 : b];
	long long div = (long long)d->div;
	if (n == 1 && mul > 0) {        /* one term: named as before sums were kept */
		const char *s = syms[b];
		return mul == 1 && div == 1 ? arena_printf(A, "%s_%s_%lld", s, d->off < 0 ? "minus" : "plus", ao)
		     : div == 1 ? arena_printf(A, "%s_x%lld", s, mul)
		     : d->exact && mul == 1 && !d->off ? arena_printf(A, "%s_over%lld", s, div)
		     : d->exact ? arena_printf(A, "%s_exact%lld", s, div)
		     : mul == 1 ? arena_printf(A, "%s_div%lld", s, div)
		     : arena_printf(A, "%s_x%lld_div%lld", s, mul, div);
	}
	const char *e = "";
	n = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int j = 0; j < IR_MAX_SYMS; j++) {
			int64_t c = d->c[j];
			if (!c || (c > 0) != (pass == 0))
				continue;
			long long a = (long long)(c < 0 ? -c : c);
			const char *t = a > 1 ? arena_printf(A, "%s_x%lld", syms[j], a) : syms[j];
			e = arena_printf(A, "%s%s%s", e, c < 0 ? (n ? "_minus_" : "minus_") : n ? "_plus_" : "", t);
			n++;
		}
	if (d->off)
		e = arena_printf(A, "%s_%s_%lld", e, d->off < 0 ? "minus" : "plus", ao);
	if (div > 1)
		e = arena_printf(A, "%s_%s%lld", e, d->exact ? "over" : "div", div);
	return e;
}

/* ---- the table ---- */

/* The symbol of canonical definition d: one pinned to a constant, that
 * constant; one already there; or a new one.  0 when the table is full. */
static int find_or_make(ir_graph *g, const canon *o, ir_dim *r)
{
	for (int i = 0; i < g->nsyms; i++)
		if (g->sym_pin[i] && same_def(&g->symdef[i], &o->d)) {
			*r = ir_dim_const(o->k * g->sym_pin[i]);
			return 1;
		}
	int k = -1;
	for (int i = 0; i < g->nsyms && k < 0; i++)
		if (!g->sym_pin[i] && same_def(&g->symdef[i], &o->d)) {
			/* a floor and an exact division of one definition are one
			 * symbol, exact once either is asked for: where the model
			 * needs the division exact, the floor is that quotient too */
			g->symdef[i].exact |= o->d.exact;
			k = i;
		}
	if (k < 0) {
		if (g->nsyms == IR_MAX_SYMS)
			return 0;
		const char *name = def_name(g->A, g->syms, &o->d);
		for (int i = 0; i < g->nsyms; i++)
			if (strcmp(g->syms[i], name) == 0) {
				name = arena_printf(g->A, "%s_%d", name, g->nsyms);
				i = -1;
			}
		k = g->nsyms++;
		g->syms[k] = name;
		g->symdef[k] = o->d;
		g->sym_min[k] = 0;
		g->sym_pin[k] = 0;
		g->sym_value[k] = NULL;
	}
	*r = ir_dim_sym(k);
	r->k = o->k;
	return 1;
}

static int made(ir_graph *g, const canon *o, ir_dim *r)
{
	if (o->kind == C_CONST) {
		*r = ir_dim_const(o->k);
		return 1;
	}
	if (o->kind == C_MONO) {
		*r = ir_dim_sym(o->s);
		r->k = o->k;
		return 1;
	}
	return find_or_make(g, o, r);
}

int ir_sym_lin(ir_graph *g, int n, const ir_dim *d, const int64_t *k, int64_t off, int64_t div, int exact,
	       ir_dim *r)
{
	g = ir_root(g);
	lin l = {.off = off};
	canon o;
	for (int i = 0; i < n; i++)
		if (!lin_add(&l, d[i], k[i], g->nsyms))
			return 0;
	symview v = view_of(g);
	return small(off) && div >= 1 && small(div) && canon_lin(&v, l, div, exact, &o) && made(g, &o, r);
}

int ir_sym_floor(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div, ir_dim *r)
{
	return mul >= 1 && small(mul) && ir_sym_lin(g, 1, &d, &mul, off, div, 0, r);
}

int ir_sym_exact(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div, ir_dim *r)
{
	return mul >= 1 && small(mul) && ir_sym_lin(g, 1, &d, &mul, off, div, 1, r);
}

int ir_sym_offset(ir_graph *g, ir_dim d, int64_t c, ir_dim *r)
{
	int64_t one = 1;
	return ir_sym_lin(g, 1, &d, &one, c, 1, 0, r);
}

int ir_sym_sum(ir_graph *g, ir_dim a, ir_dim b, int sign, ir_dim *r)
{
	ir_dim d[2] = {a, b};
	int64_t k[2] = {1, sign < 0 ? -1 : 1};
	return ir_sym_lin(g, 2, d, k, 0, 1, 0, r);
}

int ir_sym_minmax(ir_graph *g, int op, ir_dim x, ir_dim y, ir_dim *r)
{
	g = ir_root(g);
	symview v = view_of(g);
	canon o;
	int which;
	if ((op != IR_SYM_MIN && op != IR_SYM_MAX) || !canon_minmax(&v, op, x, y, 1, &o, &which))
		return 0;
	if (which) {
		*r = which == 1 ? x : y;
		return 1;
	}
	return made(g, &o, r);
}

int ir_sym_scale(ir_graph *g, ir_dim x, float s, ir_dim *r)
{
	g = ir_root(g);
	symview v = view_of(g);
	canon o;
	return canon_scale(&v, x, s, &o) && made(g, &o, r);
}

/* ---- reading definitions ---- */
int ir_sym_diff(const ir_graph *g, ir_dim a, ir_dim b, int64_t *d)
{
	g = ir_root((ir_graph *)g);
	symview v = view_of(g);
	lin la, lb;
	return expanded(&v, a, &la) && expanded(&v, b, &lb) && !memcmp(la.c, lb.c, sizeof la.c) &&
	       !__builtin_sub_overflow(la.off, lb.off, d);
}


int ir_sym_base(const ir_graph *g, int s, int64_t *mul)
{
	g = ir_root((ir_graph *)g);
	if (s < 0 || s >= g->nsyms || g->symdef[s].op != IR_SYM_LIN)
		return -1;
	int b = -1;
	for (int j = 0; j < IR_MAX_SYMS; j++)
		if (g->symdef[s].c[j]) {
			if (b >= 0)
				return -1;
			b = j;
		}
	if (mul && b >= 0)
		*mul = g->symdef[s].c[b];
	return b;
}

int ir_sym_is_offset(const ir_graph *g, int s)
{
	int64_t mul = 0;
	g = ir_root((ir_graph *)g);
	return ir_sym_base(g, s, &mul) >= 0 && mul == 1 && g->symdef[s].div == 1;
}

int ir_sym_root(const ir_graph *g, int s, int64_t *off)
{
	g = ir_root((ir_graph *)g);
	if (ir_sym_is_offset(g, s)) {
		*off = g->symdef[s].off;
		return ir_sym_base(g, s, NULL);
	}
	*off = 0;
	return s;
}

unsigned ir_sym_operands(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	if (s < 0 || s >= g->nsyms)
		return 0;
	const ir_symdef *d = &g->symdef[s];
	unsigned m = 0;
	if (d->op == IR_SYM_LIN) {
		for (int j = 0; j < s; j++)
			if (d->c[j])
				m |= 1u << j;
	} else if (d->op != IR_SYM_FREE) {
		m = 1u << d->a | (d->b >= 0 ? 1u << d->b : 0);
	}
	return m;
}

unsigned ir_sym_frees(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	if (s < 0 || s >= g->nsyms)
		return 0;
	if (ir_sym_free(g, s))
		return 1u << s;
	unsigned m = 0, ops = ir_sym_operands(g, s);
	for (int j = 0; j < s; j++)
		if (ops >> j & 1)
			m |= ir_sym_frees(g, j);
	return m;
}

/* The dividend sum c[j] * value(j) + off of LIN symbol s; INT64_MIN on overflow */
static int64_t dividend_value(const ir_graph *g, int s, const int64_t *free)
{
	const ir_symdef *d = &g->symdef[s];
	int64_t acc = d->off;
	for (int j = 0; j < s; j++) {
		if (!d->c[j])
			continue;
		int64_t x = ir_sym_value(g, j, free);
		if (x == INT64_MIN || !addmul(&acc, d->c[j], x))
			return INT64_MIN;
	}
	return acc;
}

int64_t ir_sym_value(const ir_graph *g, int s, const int64_t *free)
{
	g = ir_root((ir_graph *)g);
	const ir_symdef *d = &g->symdef[s];
	if (d->op == IR_SYM_FREE)
		return free[s];
	if (d->op == IR_SYM_MIN || d->op == IR_SYM_MAX) {
		int64_t x = ir_sym_value(g, d->a, free), y = d->b >= 0 ? ir_sym_value(g, d->b, free) : d->off;
		if (x == INT64_MIN || y == INT64_MIN)
			return INT64_MIN;
		return (d->op == IR_SYM_MIN) == (x < y) ? x : y;
	}
	if (d->op == IR_SYM_SCALE) {
		int64_t x = ir_sym_value(g, d->a, free), r = x == INT64_MIN ? -1 : rt_resize_size(x, d->scale);
		return r < 0 ? INT64_MIN : r;
	}
	int64_t x = dividend_value(g, s, free);
	return x == INT64_MIN ? x : floordiv(x, d->div);
}

int64_t ir_sym_max_value(const ir_graph *g, int s, const int64_t *max)
{
	g = ir_root((ir_graph *)g);
	symview v = view_of(g);
	return bound(&v, s, max, 1);
}

int64_t ir_sym_least_value(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	symview v = view_of(g);
	int64_t b = bound(&v, s, NULL, 0);
	return b < 1 ? 1 : b;
}

int ir_sym_inexact(const ir_graph *g, const int64_t *free)
{
	g = ir_root((ir_graph *)g);
	for (int i = 0; i < g->nsyms; i++) {
		if (g->symdef[i].op != IR_SYM_LIN || !g->symdef[i].exact)
			continue;
		int64_t x = dividend_value(g, i, free);
		if (x == INT64_MIN || x % g->symdef[i].div != 0)
			return i;
	}
	return -1;
}

const char *ir_sym_noncanonical(const ir_graph *g, int s)
{
	g = ir_root((ir_graph *)g);
	const ir_symdef *d = &g->symdef[s];
	symview v = view_of(g);
	v.n = s;                /* a definition reads earlier symbols only */
	canon o;
	int which = 0;
	if (d->op == IR_SYM_FREE)
		return NULL;
	if (d->op == IR_SYM_LIN) {
		lin l = {.off = d->off};
		memcpy(l.c, d->c, sizeof l.c);
		for (int j = s; j < IR_MAX_SYMS; j++)
			if (d->c[j])
				return "a term is not an earlier symbol";
		if (d->div < 1 || !small(d->div) || !small(d->off) || (d->exact && d->div < 2))
			return "the divisor or the offset is out of range";
		for (int j = 0; j < s; j++)
			if (!small(d->c[j]))
				return "a factor is out of range";
		if (!canon_lin(&v, l, d->div, d->exact, &o))
			return d->exact ? "an exact division that cannot be exact, or of a floor" : "out of range";
	} else if (d->op == IR_SYM_MIN || d->op == IR_SYM_MAX) {
		if (d->a < 0 || d->a >= s || d->b >= s || d->b < -1 || (d->b >= 0 && d->b <= d->a))
			return "its operands are not earlier symbols in order";
		if (d->b < 0 && !small(d->off))
			return "the constant is out of range";
		ir_dim y = d->b >= 0 ? ir_dim_sym(d->b) : ir_dim_const(d->off);
		if (!canon_minmax(&v, d->op, ir_dim_sym(d->a), y, 0, &o, &which))
			return "an operand is pinned";
		if (which)
			return "one operand is never below the other (they differ by a constant)";
	} else if (d->op == IR_SYM_SCALE) {
		int64_t p, q;
		if (d->a < 0 || d->a >= s || d->b != -1)
			return "its operand is not an earlier symbol";
		if (!(d->scale > 0 && isfinite(d->scale)))
			return "the scale is not a positive finite number";
		if (ir_sym_dyadic(d->scale, &p, &q))
			return "a scale that is a multiple of 1/64 makes a floor (floor(p * x / q))";
		if (!canon_scale(&v, ir_dim_sym(d->a), d->scale, &o))
			return "out of range";
	} else {
		return "an unknown kind of definition";
	}
	if (o.kind != C_DEF || o.k != 1 || !same_def(&o.d, d) || o.d.exact != d->exact)
		return o.kind == C_CONST ? "it is a constant"
		     : o.kind == C_MONO ? "it is a constant times one symbol"
		     : "another form of it is canonical (terms written out, a floor of a floor made one, "
		       "factors and divisor without a common factor, the last term positive)";
	return NULL;
}

const char *ir_sym_def_fmt(arena *A, const ir_graph *g, int s, const char *(*name)(arena *A, const char *sym))
{
	g = ir_root((ir_graph *)g);
	return def_text(A, g->syms, &g->symdef[s], name);
}

const char *ir_sym_def_str(arena *A, const ir_graph *g, int s)
{
	return ir_sym_def_fmt(A, g, s, NULL);
}

/* ---- least values ---- */

/* Symbol s at least n, recorded in mins[] (a copy of the free symbols'
 * least values): 1, or 0 when that is not the one way to have it. */
static int need_sym(const ir_graph *g, int64_t *mins, int s, int64_t n)
{
	symview v = view_of(g);
	v.min = mins;
	if (n <= bound(&v, s, NULL, 0))
		return 1;
	if (g->sym_pin[s])
		return 0;
	const ir_symdef *d = &g->symdef[s];
	switch (d->op) {
	case IR_SYM_FREE:
		if (n > INT32_MAX)
			return 0;
		mins[s] = n;
		return 1;
	case IR_SYM_MIN:                        /* both at least n */
		return need_sym(g, mins, d->a, n) && (d->b < 0 ? d->off >= n : need_sym(g, mins, d->b, n));
	case IR_SYM_MAX:                        /* the other below n: this one */
		return d->b < 0 && need_sym(g, mins, d->a, n);
	case IR_SYM_SCALE: {                    /* the operand at least the least that scales to n */
		int64_t x = scale_inverse(d->scale, n);
		return x > 0 && need_sym(g, mins, d->a, x);
	}
	default: {
		/* floor((mul b + off) / div) >= n  <=>  b >= ceil((n div - off) / mul) */
		int64_t mul = 0, x;
		int b = ir_sym_base(g, s, &mul);
		if (b < 0 || mul < 1 || __builtin_mul_overflow(n, d->div, &x) || __builtin_sub_overflow(x, d->off, &x))
			return 0;
		return need_sym(g, mins, b, x <= 0 ? 1 : (x + mul - 1) / mul);
	}
	}
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
	int64_t mins[IR_MAX_SYMS];
	memcpy(mins, g->sym_min, sizeof mins);
	if (!need_sym(g, mins, s, (m + d.k - 1) / d.k))         /* k s >= m */
		return 0;
	memcpy(g->sym_min, mins, sizeof mins);
	return 1;
}

/* ---- unification ------------------------------------------------------------ */

typedef struct symmap {
	ir_dim to[IR_MAX_SYMS];         /* each old symbol's replacement, in old indices */
	int keep[IR_MAX_SYMS];          /* new index of a kept symbol; -1: replaced */
	ir_symdef def[IR_MAX_SYMS];     /* each kept symbol's definition after, in old indices */
	uint8_t redef[IR_MAX_SYMS];     /* its definition changed */
} symmap;

/* d through m; 0 on overflow (a constant factor beyond 2^62). */
static int map_dim(const ir_graph *root, const symmap *m, ir_dim d, ir_dim *r)
{
	int symbolic = 0;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		symbolic |= d.pow[i] != 0;
	if (!symbolic) {                /* a constant (or unknown) */
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
 * derived from it following it in index order (a definition's operands
 * come before it): each such definition is read again through the
 * replacements and made canonical (ir_symdef): a constant, k times a
 * kept symbol, a kept symbol of the same definition, or the symbol
 * itself with its new definition (T - 1 of a T that became B is B - 1;
 * T1 + T2 of a T2 that became T1 is 2 T1).  A pinned s (by a constant, s
 * derived) stays in the table for the generated code's check.  0 when a
 * derived size cannot follow: it would be a constant below 1, or an exact
 * division that cannot be one, or a MIN/MAX of something that is no
 * symbol, or a pinned symbol would be made another. */
static int plan(const ir_graph *root, symmap *m, int s, ir_dim by, int pin)
{
	int n = root->nsyms;
	int64_t pins[IR_MAX_SYMS];
	memcpy(pins, root->sym_pin, sizeof pins);
	for (int i = 0; i < n; i++) {
		m->to[i] = ir_dim_sym(i);
		m->def[i] = root->symdef[i];
		m->redef[i] = 0;
	}
	m->to[s] = by;
	if (pin)
		pins[s] = by.k;
	uint8_t moved[IR_MAX_SYMS] = {0};
	moved[s] = 1;
	symview v = {n, m->def, pins, root->sym_min};
	for (int j = s + 1; j < n; j++) {
		const ir_symdef *d = &root->symdef[j];
		int touched = 0;
		if (d->op == IR_SYM_LIN) {
			for (int t = 0; t < j; t++)
				touched |= d->c[t] && moved[t];
		} else if (d->op != IR_SYM_FREE) {
			touched = moved[d->a] || (d->b >= 0 && moved[d->b]);
		}
		if (!touched)
			continue;
		moved[j] = 1;
		canon o;
		int which = 0;
		if (d->op == IR_SYM_LIN) {
			lin l = {.off = d->off};
			for (int t = 0; t < j; t++)
				if (d->c[t] && !lin_add(&l, m->to[t], d->c[t], n))
					return 0;
			if (!canon_lin(&v, l, d->div, d->exact, &o))
				return 0;
		} else if (d->op == IR_SYM_SCALE) {
			if (!canon_scale(&v, m->to[d->a], d->scale, &o))
				return 0;
		} else {
			ir_dim y = d->b >= 0 ? m->to[d->b] : ir_dim_const(d->off);
			if (!canon_minmax(&v, d->op, m->to[d->a], y, 1, &o, &which))
				return 0;
			if (which) {
				o = (canon){.kind = C_MONO, .k = 1};
				ir_dim w = which == 1 ? m->to[d->a] : y;
				if (ir_dim_is_const(w))
					o = (canon){.kind = C_CONST, .k = w.k};
				else
					o.s = ir_dim_one_sym(w);
				if (o.kind == C_MONO && o.s < 0)
					return 0;
			}
		}
		if (o.kind == C_CONST) {
			if (o.k < 1 || (pins[j] && pins[j] != o.k))
				return 0;
			m->to[j] = ir_dim_const(o.k);
			continue;
		}
		if (pins[j] && (o.kind != C_DEF || o.k != 1))
			return 0;
		if (o.kind == C_MONO) {
			if (o.k < 1)
				return 0;
			m->to[j] = ir_dim_sym(o.s);
			m->to[j].k = o.k;
			continue;
		}
		if (o.k != 1)
			return 0;       /* the size would be the negative of a symbol */
		m->def[j] = o.d;
		m->redef[j] = 1;
		for (int k = 0; k < j && !pins[j]; k++)
			if (ir_dim_eq(m->to[k], ir_dim_sym(k)) && !pins[k] && same_def(&m->def[k], &o.d) &&
			    m->def[k].exact == o.d.exact)
				m->to[j] = ir_dim_sym(k);
	}
	int kept = 0;
	for (int i = 0; i < n; i++)
		m->keep[i] = ir_dim_eq(m->to[i], ir_dim_sym(i)) || (pin && i == s) ? kept++ : -1;
	return 1;
}

/* The symbol table through m: the kept symbols move down, each definition
 * read in the new indices; a symbol whose definition changed and whose
 * name was made of the old one is named after the new (B_minus_1 once
 * h_1 became B). */
static void compact(ir_graph *root, const symmap *m)
{
	const char *old[IR_MAX_SYMS], *now[IR_MAX_SYMS] = {0};
	memcpy(old, root->syms, sizeof old);
	ir_symdef defs[IR_MAX_SYMS];
	int64_t pin[IR_MAX_SYMS], min[IR_MAX_SYMS];
	const char *value[IR_MAX_SYMS];
	memcpy(pin, root->sym_pin, sizeof pin);
	memcpy(min, root->sym_min, sizeof min);
	memcpy(value, root->sym_value, sizeof value);
	int n = 0;
	for (int i = 0; i < root->nsyms; i++) {
		if (m->keep[i] < 0)
			continue;
		ir_symdef d = m->def[i], e = d;
		if (d.op == IR_SYM_LIN) {
			memset(e.c, 0, sizeof e.c);
			for (int t = 0; t < i; t++)
				if (d.c[t])
					e.c[m->keep[t]] = d.c[t];
		} else if (d.op != IR_SYM_FREE) {
			e.a = m->keep[d.a];
			e.b = d.b >= 0 ? m->keep[d.b] : -1;
		}
		const char *name = old[i];
		if (m->redef[i] && !strcmp(name, def_name(root->A, old, &root->symdef[i]))) {
			const char *nn = def_name(root->A, now, &e);
			int taken = 0;
			for (int k = 0; k < root->nsyms; k++)
				taken |= !strcmp(old[k], nn);
			if (!taken)
				name = nn;
		}
		defs[n] = e;
		now[n] = name;
		root->syms[n] = name;
		root->sym_pin[n] = pin[i];
		root->sym_min[n] = min[i];
		root->sym_value[n] = value[i];
		n++;
	}
	memcpy(root->symdef, defs, (size_t)n * sizeof *defs);
	for (int i = n; i < root->nsyms; i++) {
		root->syms[i] = NULL;
		root->symdef[i] = (ir_symdef){0};
		root->sym_min[i] = root->sym_pin[i] = 0;
		root->sym_value[i] = NULL;
	}
	root->nsyms = n;
}

/* Marks symbol use in dims d[0 .. n) */
static void mark_dims(uint8_t *used, const ir_dim *d, int64_t n)
{
	for (int64_t e = 0; e < n; e++)
		for (int i = 0; i < IR_MAX_SYMS; i++)
			used[i] |= d[e].pow[i] != 0;
}

static void mark_value(uint8_t *used, const ir_value *v)
{
	if (!v)
		return;
	if (v->shape.rank > 0)
		mark_dims(used, v->shape.d, v->shape.rank);
	if (v->sym)
		mark_dims(used, v->sym, ir_shape_const_numel(&v->shape));
}

/* The symbols graph b and the graphs in it use in a shape or a symbolic
 * constant of a value its nodes read or write or it takes or gives (a
 * value a rewrite left behind uses none) */
static void mark_graph(uint8_t *used, const ir_graph *b)
{
	for (int i = 0; i < b->ninputs; i++)
		mark_value(used, b->inputs[i]);
	for (int i = 0; i < b->noutputs; i++)
		mark_value(used, b->outputs[i]);
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *n = b->nodes[i];
		for (int k = 0; k < n->nin; k++)
			mark_value(used, n->in[k]);
		for (int k = 0; k < n->nout; k++)
			mark_value(used, n->out[k]);
		if (n->body)
			mark_graph(used, n->body);
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g)
				mark_graph(used, n->attrs[a].g);
	}
}

void ir_sym_gc(ir_graph *g)
{
	ir_graph *root = ir_root(g);
	uint8_t used[IR_MAX_SYMS] = {0};
	mark_graph(used, root);
	for (int i = root->nsyms - 1; i >= 0; i--) {
		/* free symbols are the caller's; pinned and exact ones hold a check */
		used[i] |= ir_sym_free(root, i) || root->sym_pin[i] || root->symdef[i].exact;
		unsigned ops = used[i] ? ir_sym_operands(root, i) : 0;
		for (int j = 0; j < i; j++)
			used[j] |= ops >> j & 1;
	}
	symmap m;
	int n = 0;
	for (int i = 0; i < root->nsyms; i++) {
		/* (a value no node reads or writes any more may still have a
		 * symbol that goes: it gets a size of 1, never read) */
		m.to[i] = used[i] ? ir_dim_sym(i) : ir_dim_const(1);
		m.def[i] = root->symdef[i];
		m.redef[i] = 0;
		m.keep[i] = used[i] ? n++ : -1;
	}
	if (n == root->nsyms || !map_graph(root, &m, root, 0))
		return;
	map_graph(root, &m, root, 1);
	compact(root, &m);
	/* a name made unlike one that has gone (T_div2_4 beside a T_div2 the
	 * stage built on the way) becomes the name of its definition again,
	 * unless a `sizes` record names it */
	for (int i = 0; i < root->nsyms; i++) {
		if (ir_sym_free(root, i))
			continue;
		const char *want = def_name(root->A, root->syms, &root->symdef[i]), *now = root->syms[i];
		size_t w = strlen(want);
		int suffixed = !strncmp(now, want, w) && now[w] == '_' && now[w + 1], taken = 0;
		for (const char *p = now + w + 1; suffixed && *p; p++)
			suffixed = *p >= '0' && *p <= '9';
		for (int k = 0; suffixed && k < root->nsyms; k++)
			taken |= !strcmp(root->syms[k], want);
		for (int k = 0; suffixed && k < root->nlinks; k++)
			taken |= !strcmp(root->links[k].name, now);
		if (suffixed && !taken)
			root->syms[i] = want;
	}
}

void ir_sym_link_add(ir_graph *g, const ir_sym_link *l)
{
	g = ir_root(g);
	g->links = arena_grow(g->A, g->links, (size_t)g->nlinks, (size_t)g->nlinks + 1, sizeof *g->links);
	g->links[g->nlinks++] = *l;
}

void ir_sym_link_drop(ir_graph *g, const char *name)
{
	g = ir_root(g);
	int n = 0;
	for (int i = 0; i < g->nlinks; i++)
		if (g->links[i].at_least || g->links[i].into || strcmp(g->links[i].name, name) != 0)
			g->links[n++] = g->links[i];
	g->nlinks = n;
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
