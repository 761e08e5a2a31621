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

#include <stdint.h>
#include <string.h>

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

/* Symbol s replaced by `by` (a kept symbol or a constant), its derived
 * symbols following it; 0 when a derived one cannot (base + off < 1). */
static int plan(const ir_graph *root, symmap *m, int s, ir_dim by)
{
	for (int i = 0; i < root->nsyms; i++)
		m->to[i] = ir_dim_sym(i);
	m->to[s] = by;
	int t = ir_dim_one_sym(by);
	for (int j = 0; j < root->nsyms; j++) {
		if (root->sym_base[j] != s + 1)
			continue;
		int64_t off = root->sym_off[j];
		if (t < 0) {
			if (by.k + off < 1)
				return 0;
			m->to[j] = ir_dim_const(by.k + off);
			continue;
		}
		for (int k = 0; k < root->nsyms; k++)
			if (root->sym_base[k] == t + 1 && root->sym_off[k] == off)
				m->to[j] = ir_dim_sym(k);
	}
	int n = 0;
	for (int i = 0; i < root->nsyms; i++)
		m->keep[i] = ir_dim_eq(m->to[i], ir_dim_sym(i)) ? n++ : -1;
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
			int nb = ir_dim_one_sym(m->to[b]);
			root->sym_base[n] = m->keep[nb] + 1;
			/* a name ir_sym_offset made from the base's follows it */
			int64_t off = root->sym_off[i];
			const char *pm = off < 0 ? "minus" : "plus";
			long long a = (long long)(off < 0 ? -off : off);
			if (nb != b && !strcmp(name, arena_printf(root->A, "%s_%s_%lld", old[b], pm, a))) {
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
		root->sym_min[n] = root->sym_min[i];
		n++;
	}
	for (int i = n; i < root->nsyms; i++) {
		root->syms[i] = NULL;
		root->sym_base[i] = 0;
		root->sym_off[i] = 0;
		root->sym_min[i] = 0;
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
	if ((sa >= 0 && !ir_sym_free(root, sa)) || (sb >= 0 && !ir_sym_free(root, sb)))
		return 0;
	if (sa < 0 && sb < 0)
		return 0;
	int s;
	ir_dim by;
	if (sa >= 0 && sb >= 0) {               /* the later symbol becomes the earlier */
		s = sa > sb ? sa : sb;
		by = ir_dim_sym(sa > sb ? sb : sa);
	} else {
		s = sa >= 0 ? sa : sb;
		by = sa >= 0 ? b : a;
		if (!ir_dim_is_const(by) || by.k < 1 || by.k > INT32_MAX || by.k < ir_sym_least(root, s))
			return 0;
	}
	symmap m;
	if (!plan(root, &m, s, by) || !map_graph(root, &m, root, 0))
		return 0;
	ir_sym_link l = {.name = root->syms[s], .node = node, .why = why};
	if (ir_dim_is_const(by))
		l.value = by.k;
	else
		l.into = root->syms[ir_dim_one_sym(by)];
	int t = ir_dim_one_sym(by);
	if (t >= 0 && root->sym_min[s] > root->sym_min[t])      /* the larger least value holds */
		root->sym_min[t] = root->sym_min[s];
	map_graph(root, &m, root, 1);
	compact(root, &m);
	ir_sym_link_add(root, &l);
	return 1;
}
