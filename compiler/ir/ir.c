/* ir.c: constructors and small helpers of the IR (see ir.h). */
#include "ir.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const ir_opinfo ir_ops[OP_COUNT] = {
#define OP(e, name, mi, ma, mo, mx, kind, sem) [OP_##e] = {name, mi, ma, mo, mx, kind, sem},
#include "ops.def"
#undef OP
};

const char *ir_op_name(ir_op op) { return op < OP_COUNT ? ir_ops[op].name : "?"; }

int ir_op_lookup(const char *name)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (strcmp(ir_ops[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- element types ---- */

static const struct {
	const char *name, *ctype;
	size_t size;
} dtypes[DT_COUNT_] = {
	[DT_F32] = {"f32", "float", 4},   [DT_U8] = {"u8", "uint8_t", 1},
	[DT_I8] = {"i8", "int8_t", 1},    [DT_U16] = {"u16", "uint16_t", 2},
	[DT_I16] = {"i16", "int16_t", 2}, [DT_I32] = {"i32", "int32_t", 4},
	[DT_I64] = {"i64", "int64_t", 8}, [DT_STRING] = {"string", NULL, 0},
	[DT_BOOL] = {"bool", "uint8_t", 1}, [DT_F16] = {"f16", NULL, 0},
	[DT_F64] = {"f64", "double", 8},  [DT_U32] = {"u32", "uint32_t", 4},
	[DT_U64] = {"u64", "uint64_t", 8}, [DT_BF16] = {"bf16", NULL, 0},
};

const char *ir_dtype_name(ir_dtype t)
{
	return (unsigned)t < DT_COUNT_ && dtypes[t].name ? dtypes[t].name : "?";
}
const char *ir_dtype_ctype(ir_dtype t) { return (unsigned)t < DT_COUNT_ ? dtypes[t].ctype : NULL; }
size_t ir_dtype_size(ir_dtype t) { return (unsigned)t < DT_COUNT_ ? dtypes[t].size : 0; }

int ir_dtype_lookup(const char *name)
{
	for (int i = 0; i < DT_COUNT_; i++)
		if (dtypes[i].name && strcmp(dtypes[i].name, name) == 0)
			return i;
	return -1;
}

/* ---- symbolic dimensions ---- */

ir_dim ir_dim_const(int64_t k)
{
	ir_dim d;
	memset(&d, 0, sizeof d);
	d.k = k;
	return d;
}

ir_dim ir_dim_sym(int sym)
{
	ir_dim d = ir_dim_const(1);
	ASSERT(sym >= 0 && sym < IR_MAX_SYMS);
	d.pow[sym] = 1;
	return d;
}

int ir_dim_known(ir_dim a)
{
	/* (-1 times a symbol is known: an element of a symbolic constant) */
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (a.pow[i])
			return 1;
	return a.k != IR_DIM_UNKNOWN;
}

ir_dim ir_dim_mul(ir_dim a, ir_dim b)
{
	if (!ir_dim_known(a) || !ir_dim_known(b))
		return ir_dim_const(IR_DIM_UNKNOWN);
	int64_t k;
	if (__builtin_mul_overflow(a.k, b.k, &k))
		return ir_dim_const(IR_DIM_UNKNOWN);    /* a size no tensor can have */
	ir_dim r = ir_dim_const(k);
	if (r.k == 0)
		return r;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		r.pow[i] = (uint8_t)(a.pow[i] + b.pow[i]);
	return r;
}

int ir_dim_div(ir_dim a, ir_dim b, ir_dim *q)
{
	if (!ir_dim_known(a) || !ir_dim_known(b) || b.k == 0 || a.k % b.k != 0)
		return 0;
	ir_dim r = ir_dim_const(a.k / b.k);
	for (int i = 0; i < IR_MAX_SYMS; i++) {
		if (a.pow[i] < b.pow[i])
			return 0;
		r.pow[i] = (uint8_t)(a.pow[i] - b.pow[i]);
	}
	if (a.k == 0)
		memset(r.pow, 0, sizeof r.pow);
	*q = r;
	return 1;
}

int ir_dim_eq(ir_dim a, ir_dim b)
{
	if (a.k != b.k)
		return 0;
	return a.k == 0 || memcmp(a.pow, b.pow, sizeof a.pow) == 0;
}

int ir_dim_is_const(ir_dim a)
{
	if (!ir_dim_known(a))
		return 0;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		if (a.pow[i])
			return 0;
	return 1;
}

ir_dim ir_shape_numel(const ir_shape *s)
{
	ir_dim n = ir_dim_const(1);
	for (int i = 0; i < s->rank; i++)
		n = ir_dim_mul(n, s->d[i]);
	return n;
}

int ir_shape_eq(const ir_shape *a, const ir_shape *b)
{
	if (a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (!ir_dim_eq(a->d[i], b->d[i]))
			return 0;
	return 1;
}

int64_t ir_shape_const_numel(const ir_shape *s)
{
	ir_dim n = ir_shape_numel(s);
	return s->rank >= 0 && ir_dim_is_const(n) ? n.k : -1;
}

/* ---- graphs, values, nodes ---- */

ir_graph *ir_graph_new(arena *A, ir_graph *parent, const char *name)
{
	ir_graph *g = arena_alloc(A, sizeof *g);
	g->A = A;
	g->parent = parent;
	g->name = name ? arena_strdup(A, name) : "main";
	return g;
}

ir_graph *ir_root(ir_graph *g)
{
	while (g->parent)
		g = g->parent;
	return g;
}

/* ---- traced loops left unrolled (ir_unrolled, fallback.def) ---- */

static const struct {
	const char *keyword, *text;
} unrolled_whys[] = {
#define WHY(e, kw, text) [e] = {#kw, text},
#include "fallback.def"
#undef WHY
};
_Static_assert(sizeof unrolled_whys / sizeof *unrolled_whys == WHY_COUNT, "one row per reason");

const char *ir_unrolled_why_text(ir_unrolled_why why)
{
	ASSERT(why >= 0 && why < WHY_COUNT);
	return unrolled_whys[why].text;
}

const char *ir_unrolled_why_keyword(ir_unrolled_why why)
{
	ASSERT(why >= 0 && why < WHY_COUNT);
	return unrolled_whys[why].keyword;
}

int ir_unrolled_why_lookup(const char *keyword)
{
	for (int i = 0; i < WHY_COUNT; i++)
		if (strcmp(unrolled_whys[i].keyword, keyword) == 0)
			return i;
	return -1;
}

/* ---- value roles and recurrence sources (ir.h) ---- */

static const struct {
	const char *keyword, *where;
} roles[] = {
#define ROLE_ROW(e, kw, where) [e] = {#kw, where},
	IR_ROLES(ROLE_ROW)
#undef ROLE_ROW
};
_Static_assert(sizeof roles / sizeof *roles == IR_ROLE_COUNT, "one row per role");

const char *ir_role_keyword(ir_role r)
{
	ASSERT(r >= 0 && r < IR_ROLE_COUNT);
	return roles[r].keyword;
}

const char *ir_role_where(ir_role r)
{
	ASSERT(r >= 0 && r < IR_ROLE_COUNT);
	return roles[r].where;
}

int ir_role_lookup(const char *keyword)
{
	for (int i = 0; i < IR_ROLE_COUNT; i++)
		if (strcmp(roles[i].keyword, keyword) == 0)
			return i;
	return -1;
}

int ir_role_fits(ir_role r, ir_valkind kind, ir_dtype dt, int op, int in_body)
{
	switch (r) {
	case IR_ROLE_NONE: return 1;
	case IR_ROLE_STEP_COEF: return kind == VAL_STEP && in_body && (dt == DT_F32 || dt == DT_UNDEF);
	case IR_ROLE_NAG_SCHEDULE: return kind == VAL_TEMP && in_body && op >= 0;
	case IR_ROLE_TRACE_STEPS: return kind == VAL_TEMP && op == OP_SLICE;
	case IR_ROLE_PROJECTION: return kind == VAL_STEP && in_body && (dt == DT_F32 || dt == DT_UNDEF);
	case IR_ROLE_CONDITION: return kind == VAL_STEP && in_body && (dt == DT_F32 || dt == DT_UNDEF);
	case IR_ROLE_COUNT: break;
	}
	return 0;
}

static const char *const rec_source_keywords[] = {
#define SRC_KW(e, kw) [e] = #kw,
	IR_REC_SOURCES(SRC_KW)
#undef SRC_KW
};
_Static_assert(sizeof rec_source_keywords / sizeof *rec_source_keywords == IR_REC_SOURCE_COUNT,
	       "one keyword per source");

const char *ir_rec_source_keyword(ir_rec_source s)
{
	ASSERT(s >= 0 && s < IR_REC_SOURCE_COUNT);
	return rec_source_keywords[s];
}

int ir_rec_source_lookup(const char *keyword)
{
	for (int i = 0; i < IR_REC_SOURCE_COUNT; i++)
		if (strcmp(rec_source_keywords[i], keyword) == 0)
			return i;
	return -1;
}

int ir_rec_scripted(const ir_node *n)
{
	return n->rec_source == IR_REC_ONNX_LOOP || n->rec_source == IR_REC_ONNX_SCAN;
}

void ir_unrolled_add(ir_graph *g, const ir_unrolled *u)
{
	g = ir_root(g);
	for (int i = 0; i < g->nunrolled; i++)
		if (g->unrolled[i].steps == u->steps && !strcmp(g->unrolled[i].seq, u->seq))
			return;
	g->unrolled = arena_grow(g->A, g->unrolled, (size_t)g->nunrolled, (size_t)g->nunrolled + 1,
				 sizeof *g->unrolled);
	g->unrolled[g->nunrolled++] = *u;
}

int ir_sym_add(ir_graph *g, const char *name)
{
	g = ir_root(g);
	for (int i = 0; i < g->nsyms; i++)
		if (strcmp(g->syms[i], name) == 0)
			return i;
	if (g->nsyms == IR_MAX_SYMS)
		return -1;
	g->syms[g->nsyms] = arena_strdup(g->A, name);
	g->symdef[g->nsyms] = (ir_symdef){0};
	g->sym_min[g->nsyms] = g->sym_pin[g->nsyms] = 0;
	g->sym_value[g->nsyms] = NULL;
	return g->nsyms++;
}

int ir_sym_free(const ir_graph *g, int i)
{
	g = ir_root((ir_graph *)g);
	return i >= 0 && i < g->nsyms && g->symdef[i].op == IR_SYM_FREE;
}

int64_t ir_sym_least(const ir_graph *g, int i)
{
	g = ir_root((ir_graph *)g);
	return g->sym_min[i] > 1 ? g->sym_min[i] : 1;
}

int ir_dim_one_sym(ir_dim d)
{
	if (d.k != 1)
		return -1;
	int sym = -1;
	for (int i = 0; i < IR_MAX_SYMS; i++) {
		if (!d.pow[i])
			continue;
		if (d.pow[i] != 1 || sym >= 0)
			return -1;
		sym = i;
	}
	return sym;
}

/* Hashes of the names of every value of one compilation (the root graph
 * last asked about), so that ir_unique_name's check is a hash lookup, not a
 * scan of every value: unrolled loops make tens of thousands.  A name in the
 * set that no value has any more (dropped, or a hash collision) only skips a
 * counter value.  The load stage (compile.c) starts a new set (ir_names_reset). */
static struct {
	const ir_graph *root;
	uint64_t *slot;         /* 0: empty */
	size_t cap, n;
} names;

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h ? h : 1;
}

static int names_has(uint64_t h)
{
	for (size_t i = (size_t)h & (names.cap - 1); names.slot[i]; i = (i + 1) & (names.cap - 1))
		if (names.slot[i] == h)
			return 1;
	return 0;
}

static void names_add(uint64_t h)
{
	if (2 * (names.n + 1) > names.cap) {
		uint64_t *old = names.slot;
		size_t oldcap = names.cap;
		names.cap = oldcap ? 2 * oldcap : 1024;
		names.slot = calloc(names.cap, sizeof *names.slot);
		if (!names.slot)
			arena_oom(NULL, names.cap * sizeof *names.slot, "the table of value names");
		names.n = 0;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
				names_add(old[i]);
		free(old);
	}
	size_t i = (size_t)h & (names.cap - 1);
	for (; names.slot[i]; i = (i + 1) & (names.cap - 1))
		if (names.slot[i] == h)
			return;
	names.slot[i] = h;
	names.n++;
}

static void names_collect(const ir_graph *g)
{
	for (int i = 0; i < g->nvalues; i++)
		names_add(name_hash(g->values[i]->name));
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (n->body)
			names_collect(n->body);
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g)
				names_collect(n->attrs[a].g);
	}
}

void ir_names_reset(void)
{
	free(names.slot);
	names.slot = NULL;
	names.cap = names.n = 0;
	names.root = NULL;
}

/* The set for r's compilation (rebuilt when another root asks). */
static void names_for(const ir_graph *r)
{
	if (names.root == r)
		return;
	ir_names_reset();
	names.root = r;
	names_add(1);
	names_collect(r);
}

/* Whether a graph between g and its root (bodies not yet in the set when
 * they were made apart) has a value called s. */
static int chain_has(const ir_graph *g, const char *s)
{
	for (; g && g->parent; g = g->parent)
		for (int i = 0; i < g->nvalues; i++)
			if (strcmp(g->values[i]->name, s) == 0)
				return 1;
	return 0;
}

int ir_name_taken(ir_graph *g, const char *name)
{
	names_for(ir_root(g));
	return names_has(name_hash(name)) || chain_has(g, name);
}

const char *ir_free_name(ir_graph *g, const char *name)
{
	return ir_name_taken(g, name) ? ir_unique_name(g, name) : name;
}

void ir_value_rename(ir_value *v, const char *name)
{
	v->name = arena_strdup(v->graph->A, name);
	if (names.root && names.root == ir_root(v->graph))
		names_add(name_hash(v->name));
}

ir_value *ir_value_new(ir_graph *g, const char *name, ir_valkind kind, ir_dtype dt)
{
	ir_value *v = arena_alloc(g->A, sizeof *v);
	v->name = name ? arena_strdup(g->A, name) : ir_unique_name(g, "t");
	if (name && names.root && names.root == ir_root(g))
		names_add(name_hash(v->name));
	v->kind = kind;
	v->dtype = dt;
	v->shape.rank = -1;
	v->graph = g;
	v->slot = -1;
	if (g->nvalues == g->capvalues) {
		int cap = g->capvalues ? 2 * g->capvalues : 64;
		g->values = arena_grow(g->A, g->values, (size_t)g->nvalues, (size_t)cap, sizeof *g->values);
		g->capvalues = cap;
	}
	v->id = g->nvalues;
	g->values[g->nvalues++] = v;
	return v;
}

ir_value *ir_const_new(ir_graph *g, const char *name, ir_dtype dt, const ir_shape *s, const void *data)
{
	ir_value *v = ir_value_new(g, name, VAL_CONST, dt);
	v->shape = *s;
	int64_t n = ir_shape_const_numel(s);
	ASSERT(n >= 0);
	size_t bytes = (size_t)n * ir_dtype_size(dt);
	v->data = arena_alloc(g->A, bytes ? bytes : 1);
	if (data && bytes)
		memcpy(v->data, data, bytes);
	return v;
}

ir_value *ir_const_i64(ir_graph *g, const char *name, int n, const int64_t *vals)
{
	ir_shape s = {.rank = 1};
	s.d[0] = ir_dim_const(n);
	return ir_const_new(g, name, DT_I64, &s, vals);
}

ir_value *ir_const_dims(ir_graph *g, const ir_dim *d, int n)
{
	int symbolic = 0;
	for (int i = 0; i < n; i++)
		symbolic |= !ir_dim_is_const(d[i]);
	if (!symbolic) {
		int64_t v[IR_MAX_RANK];
		ASSERT(n <= IR_MAX_RANK);
		for (int i = 0; i < n; i++)
			v[i] = d[i].k;
		return ir_const_i64(g, NULL, n, v);
	}
	ir_value *c = ir_value_new(g, NULL, VAL_CONST, DT_I64);
	c->shape.rank = 1;
	c->shape.d[0] = ir_dim_const(n);
	c->sym = arena_array(g->A, (size_t)(n ? n : 1), sizeof *c->sym);
	memcpy(c->sym, d, (size_t)n * sizeof *d);
	return c;
}

ir_value *ir_const_f32_scalar(ir_graph *g, const char *name, float val)
{
	ir_shape s = {.rank = 0};
	return ir_const_new(g, name, DT_F32, &s, &val);
}

ir_node *ir_node_new(ir_graph *g, ir_op op, const char *name, int nin, int nout)
{
	ir_node *n = arena_alloc(g->A, sizeof *n);
	n->op = op;
	n->name = name ? arena_strdup(g->A, name) : ir_unique_name(g, ir_op_name(op));
	n->op_type = ir_op_name(op);
	n->domain = "";
	n->graph = g;
	n->opset = ir_root(g)->opset;
	n->nin = nin;
	n->nout = nout;
	n->in = arena_array(g->A, (size_t)(nin ? nin : 1), sizeof *n->in);
	n->out = arena_array(g->A, (size_t)(nout ? nout : 1), sizeof *n->out);
	if (op == OP_GRADIENT)
		ir_root(g)->has_gradient = 1;
	return n;
}

int ir_weights_at_run_time(const ir_graph *g)
{
	const ir_graph *r = g;
	while (r->parent)
		r = r->parent;
	return r->train || r->has_gradient;
}

void ir_append(ir_graph *g, ir_node *n)
{
	if (g->nnodes == g->capnodes) {
		int cap = g->capnodes ? 2 * g->capnodes : 64;
		g->nodes = arena_grow(g->A, g->nodes, (size_t)g->nnodes, (size_t)cap, sizeof *g->nodes);
		g->capnodes = cap;
	}
	n->id = g->nnodes;
	g->nodes[g->nnodes++] = n;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i]) {
			n->out[i]->producer = n;
			n->out[i]->kind = VAL_TEMP;
		}
}

void ir_set_nodes(ir_graph *g, ir_node **nodes, int n)
{
	g->nodes = arena_array(g->A, (size_t)(n ? n : 1), sizeof *nodes);
	if (n)
		memcpy(g->nodes, nodes, (size_t)n * sizeof *nodes);
	g->nnodes = g->capnodes = n;
	for (int i = 0; i < n; i++)
		g->nodes[i]->id = i;
}

char *ir_unique_name(ir_graph *g, const char *base)
{
	/* A counter in the root graph keeps made-up names unique per compilation
	 * (bodies included: a lookup from g would not see values of bodies made
	 * earlier); '%' cannot appear in names the loaders accept from users. */
	static const char fmt[] = "%%%s%lld";
	ir_graph *r = ir_root(g);
	if (r->uniq < r->nvalues + r->nnodes)
		r->uniq = r->nvalues + r->nnodes;
	names_for(r);
	for (;;) {
		char *s = arena_printf(g->A, fmt, base, (long long)r->uniq++);
		uint64_t h = name_hash(s);
		if (!names_has(h) && !chain_has(g, s)) {
			names_add(h);
			return s;
		}
	}
}

static const char *sources(arena *A, const ir_value *v, const char *acc, int depth)
{
	if (!v || depth < 0)
		return acc;
	if (v->kind == VAL_INPUT) {
		const char *q = arena_printf(A, "'%s'", v->name);
		if (strstr(acc, q))
			return acc;
		return *acc ? arena_printf(A, "%s, %s", acc, q) : q;
	}
	if (v->producer)
		for (int k = 0; k < v->producer->nin; k++)
			acc = sources(A, v->producer->in[k], acc, depth - 1);
	return acc;
}

const char *ir_source_inputs(arena *A, const ir_value *v, int depth)
{
	return sources(A, v, "", depth);
}

ir_value *ir_find_value(ir_graph *g, const char *name)
{
	for (; g; g = g->parent)
		for (int i = 0; i < g->nvalues; i++)
			if (strcmp(g->values[i]->name, name) == 0)
				return g->values[i];
	return NULL;
}

/* ---- attributes ---- */

ir_attr *ir_attr_find(const ir_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

ir_value *ir_guard(const ir_node *n, int *when)
{
	const char *name = ir_attr_string(n, "guard", NULL);
	if (!name || !n->graph)
		return NULL;
	if (when)
		*when = ir_attr_int(n, "guard_when", 1) != 0;
	return ir_find_value(n->graph, name);
}

static int graph_reads(const ir_graph *h, const ir_value *v)
{
	for (int i = 0; i < h->noutputs; i++)
		if (h->outputs[i] == v)
			return 1;
	for (int i = 0; i < h->nnodes; i++)
		if (ir_node_reads(h->nodes[i], v))
			return 1;
	return 0;
}

int ir_node_reads(const ir_node *u, const ir_value *v)
{
	for (int k = 0; k < u->nin; k++)
		if (u->in[k] == v)
			return 1;
	if (u->body && graph_reads(u->body, v))
		return 1;
	for (int a = 0; a < u->nattrs; a++)
		if (u->attrs[a].kind == ATTR_GRAPH && u->attrs[a].g && graph_reads(u->attrs[a].g, v))
			return 1;
	return 0;
}

int ir_guard_read_ok(const ir_node *u, const ir_value *v, const ir_value *c, int when)
{
	int w;
	if (ir_guard(u, &w) == c && w == when)
		return 1;
	return v != c && u->op == OP_WHERE && u->nin == 3 && ir_attr_int(u, "if_select", 0) && u->in[0] == c &&
	       u->in[when ? 1 : 2] == v && u->in[when ? 2 : 1] != v && !u->body;
}

int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def)
{
	ir_attr *a = ir_attr_find(n, name);
	return a && a->kind == ATTR_INT ? a->i : def;
}

float ir_attr_float(const ir_node *n, const char *name, float def)
{
	ir_attr *a = ir_attr_find(n, name);
	return a && a->kind == ATTR_FLOAT ? a->f : def;
}

const char *ir_attr_string(const ir_node *n, const char *name, const char *def)
{
	ir_attr *a = ir_attr_find(n, name);
	return a && a->kind == ATTR_STRING ? a->s : def;
}

ir_attr *ir_attr_add(ir_node *n, const char *name, ir_attrkind kind)
{
	/* Nodes have few attributes: grow by copying.  Replaces an existing
	 * attribute of the same name. */
	ir_attr *a = ir_attr_find(n, name);
	if (!a) {
		arena *A = n->graph->A;
		n->attrs = arena_grow(A, n->attrs, (size_t)n->nattrs, (size_t)n->nattrs + 1, sizeof *n->attrs);
		a = &n->attrs[n->nattrs++];
		name = arena_strdup(A, name);
	} else {
		name = a->name;
	}
	memset(a, 0, sizeof *a);
	a->name = name;
	a->kind = kind;
	return a;
}

void ir_attr_set_int(ir_node *n, const char *name, int64_t v) { ir_attr_add(n, name, ATTR_INT)->i = v; }
void ir_attr_set_float(ir_node *n, const char *name, double v) { ir_attr_add(n, name, ATTR_FLOAT)->f = v; }

void ir_attr_set_string(ir_node *n, const char *name, const char *v)
{
	ir_attr_add(n, name, ATTR_STRING)->s = arena_strdup(n->graph->A, v);
}

/* Removes sequence input k of recurrence rec: its root input, its body
 * input and its seq_axis entry; n_seq shrinks by one. */
void ir_rec_drop_seq(ir_node *rec, int k)
{
	int nseq = (int)ir_attr_int(rec, "n_seq", 0);
	ir_graph *b = rec->body;
	memmove(rec->in + k, rec->in + k + 1, (size_t)(rec->nin - k - 1) * sizeof *rec->in);
	rec->nin--;
	memmove(b->inputs + k, b->inputs + k + 1, (size_t)(b->ninputs - k - 1) * sizeof *b->inputs);
	b->ninputs--;
	ir_attr *sa = ir_attr_find(rec, "seq_axis");
	ASSERT(k >= 0 && k < nseq);
	int64_t *axes = arena_array(b->A, (size_t)nseq, sizeof *axes);
	for (int i = 0, j = 0; i < nseq; i++)
		if (i != k)
			axes[j++] = sa && i < sa->n ? sa->ints[i] : 0;
	ir_attr_set_ints(rec, "seq_axis", nseq - 1, axes);
	ir_attr_set_int(rec, "n_seq", nseq - 1);
}

/* Removes stacked output j (counted after the states) of recurrence n: its
 * root value, its body output and its out_axis entry; n_out, and n_saved
 * when j is one of the last n_saved outputs, shrink by one.  For passes
 * before pass_schedule (whose attributes number the outputs). */
void ir_rec_drop_output(ir_node *n, int j)
{
	int nst = (int)ir_attr_int(n, "n_state", 0), nout = (int)ir_attr_int(n, "n_out", 0);
	int64_t nsaved = ir_attr_int(n, "n_saved", 0);
	ASSERT(n->op == OP_RECURRENCE && j >= 0 && j < nout && n->nout == nst + nout &&
	       n->body->noutputs == nst + nout);
	int64_t *ax = arena_array(n->graph->A, (size_t)nout, sizeof *ax);
	ir_attr *oa = ir_attr_find(n, "out_axis");
	for (int k = 0, m = 0; k < nout; k++)
		if (k != j)
			ax[m++] = oa && k < oa->n ? oa->ints[k] : 0;
	memmove(&n->out[nst + j], &n->out[nst + j + 1], (size_t)(nout - j - 1) * sizeof *n->out);
	memmove(&n->body->outputs[nst + j], &n->body->outputs[nst + j + 1],
		(size_t)(nout - j - 1) * sizeof *n->body->outputs);
	n->nout--;
	n->body->noutputs--;
	ir_attr_set_int(n, "n_out", nout - 1);
	ir_attr_set_ints(n, "out_axis", nout - 1, ax);
	if (nsaved > 0 && j >= nout - nsaved)
		ir_attr_set_int(n, "n_saved", nsaved - 1);
}

void ir_attr_remove(ir_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0) {
			memmove(&n->attrs[i], &n->attrs[i + 1], (size_t)(n->nattrs - i - 1) * sizeof *n->attrs);
			n->nattrs--;
			return;
		}
}

void ir_attr_set_ints(ir_node *n, const char *name, int cnt, const int64_t *v)
{
	ir_attr *a = ir_attr_add(n, name, ATTR_INTS);
	a->n = cnt;
	a->ints = arena_array(n->graph->A, (size_t)(cnt ? cnt : 1), sizeof *a->ints);
	if (cnt)
		memcpy(a->ints, v, (size_t)cnt * sizeof *v);
}

/* ---- bookkeeping ---- */

static void count_uses(ir_graph *g)
{
	for (int i = 0; i < g->nvalues; i++) {
		g->values[i]->nuses = 0;
		g->values[i]->id = i;
		if (g->values[i]->kind == VAL_TEMP)
			g->values[i]->producer = NULL;
	}
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		n->id = i;
		for (int k = 0; k < n->nout; k++)
			if (n->out[k])
				n->out[k]->producer = n;
		if (n->body)
			count_uses(n->body);
	}
}

static void add_uses(ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				n->in[k]->nuses++;
		if (n->body) {
			add_uses(n->body);
			for (int k = 0; k < n->body->noutputs; k++)
				n->body->outputs[k]->nuses++;
		}
	}
}

void ir_recount(ir_graph *g)
{
	count_uses(g);
	add_uses(g);
	for (int i = 0; i < g->noutputs; i++)
		if (!g->parent)
			g->outputs[i]->nuses++;
}

int ir_value_is_const(const ir_value *v) { return v && v->kind == VAL_CONST && v->data; }

/* Element i of a value whose data cellc holds: a constant, or a weight (an
 * initializer read at compile time, as shape operands are). */
static int has_data(const ir_value *v)
{
	return v && v->data && (v->kind == VAL_CONST || v->kind == VAL_WEIGHT);
}

int64_t ir_const_int(const ir_value *v, int64_t i)
{
	ASSERT(has_data(v));
	switch (v->dtype) {
	case DT_I64: return ((const int64_t *)v->data)[i];
	case DT_I32: return ((const int32_t *)v->data)[i];
	case DT_U8: case DT_BOOL: return ((const uint8_t *)v->data)[i];
	case DT_I8: return ((const int8_t *)v->data)[i];
	case DT_I16: return ((const int16_t *)v->data)[i];
	case DT_U16: return ((const uint16_t *)v->data)[i];
	case DT_U32: return ((const uint32_t *)v->data)[i];
	case DT_U64: return (int64_t)((const uint64_t *)v->data)[i];
	case DT_F32: return (int64_t)((const float *)v->data)[i];
	case DT_F64: return (int64_t)((const double *)v->data)[i];
	default: UNREACHABLE();
	}
}

double ir_const_num(const ir_value *v, int64_t i)
{
	ASSERT(has_data(v));
	switch (v->dtype) {
	case DT_F32: return ((const float *)v->data)[i];
	case DT_F64: return ((const double *)v->data)[i];
	default: return (double)ir_const_int(v, i);
	}
}

int ir_input_int(const ir_node *n, int k, int64_t dflt, int64_t *v)
{
	const ir_value *c = k < n->nin ? n->in[k] : NULL;
	if (!c) {
		*v = dflt;
		return 1;
	}
	if (!ir_value_is_const(c) || (c->dtype != DT_I64 && c->dtype != DT_I32) || ir_shape_const_numel(&c->shape) != 1)
		return 0;
	*v = ir_const_int(c, 0);
	return 1;
}

int ir_slice_flips(const ir_node *n, int64_t *axis)
{
	const ir_value *x = n->op == OP_SLICE && n->nin >= 3 ? n->in[0] : NULL;
	int64_t s, e, a, st;
	if (!x || !ir_input_int(n, 1, 0, &s) || !ir_input_int(n, 2, 0, &e) || !ir_input_int(n, 3, 0, &a) ||
	    !ir_input_int(n, 4, 1, &st) || st != -1)
		return 0;
	a += a < 0 ? x->shape.rank : 0;
	if (a < 0 || a >= x->shape.rank)
		return 0;
	ir_dim d = x->shape.d[a];
	int known = ir_dim_is_const(d);
	*axis = a;
	return (s == -1 || (known && s >= d.k - 1)) && (e <= INT64_MIN / 2 || (known && e <= -d.k - 1));
}

void ir_gemm_set_bias(ir_node *m, ir_value *c)
{
	ir_value **in = arena_array(m->graph->A, 3, sizeof *in);
	in[0] = m->in[0];
	in[1] = m->in[1];
	in[2] = c;
	m->in = in;
	m->nin = 3;
	ir_attr_remove(m, "beta");
}

int ir_op_dd_output(ir_op op, int k)
{
	switch (op) {
	case OP_NONZERO: case OP_COMPRESS: case OP_NMS: return k == 0;
	case OP_UNIQUE: return k == 0 || k == 1 || k == 3;
	default: return 0;
	}
}

/* The one input of n with a data-dependent length (-1: none, -2: more). */
static int dd_input(const ir_node *n)
{
	int at = -1;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->data_dep)
			at = at == -1 ? k : -2;
	return at;
}

/* Transpose's permutation of rank r into perm (the reverse without one). */
static void transpose_perm(const ir_node *n, int r, int *perm)
{
	const ir_attr *pa = ir_attr_find(n, "perm");
	for (int i = 0; i < r; i++) {
		int64_t a = pa && pa->kind == ATTR_INTS && pa->n == r ? pa->ints[i] : r - 1 - i;
		perm[i] = (int)(a < 0 ? a + r : a);
	}
}

int ir_dd_out_axis(const ir_node *n)
{
	if (!ir_dd_passes(n))
		return -1;
	if (n->op != OP_TRANSPOSE)
		return 0;
	int r = n->in[0]->shape.rank, perm[IR_MAX_RANK];
	transpose_perm(n, r, perm);
	for (int i = 0; i < r; i++)
		if (perm[i] == n->in[0]->dd_axis)
			return i;
	return -1;
}

int ir_dd_passes(const ir_node *n)
{
	int at = dd_input(n);
	if (at < 0 || n->nout != 1 || !n->out[0])
		return 0;
	const ir_value *x = n->in[at], *y = n->out[0];
	if (n->op == OP_TRANSPOSE) {
		/* a valid permutation of x's axes: its kernel reads the length */
		int r = x->shape.rank, perm[IR_MAX_RANK], seen[IR_MAX_RANK] = {0};
		if (at != 0 || r < 1 || r > IR_MAX_RANK || y->shape.rank != r || x->dd_axis < 0 || x->dd_axis >= r)
			return 0;
		transpose_perm(n, r, perm);
		for (int i = 0; i < r; i++) {
			if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
				return 0;
			seen[perm[i]] = 1;
		}
		return 1;
	}
	if (x->dd_axis != 0 || x->shape.rank < 1 || y->shape.rank < 1 || !ir_dim_eq(x->shape.d[0], y->shape.d[0]))
		return 0;
	/* the rows past the length are defined only after a recurrence (zeros) */
	const ir_node *src = ir_dd_source(x);
	if (!src || src->op != OP_RECURRENCE)
		return 0;
	switch (n->op) {
	case OP_IDENTITY: case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN: case OP_CAST:
		return at == 0;
	default:
		break;
	}
	if (ir_ops[n->op].kind != OPK_ELEM || y->shape.rank != x->shape.rank)
		return 0;
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		if (v && k != at && v->shape.rank >= y->shape.rank &&
		    !(ir_dim_is_const(v->shape.d[0]) && v->shape.d[0].k == 1))
			return 0;
	}
	return 1;
}

int ir_dd_reads(const ir_node *n)
{
	if (n->op != OP_GATHER || n->nin != 2 || !n->in[0] || !n->in[0]->data_dep || !n->in[1] ||
	    n->in[1]->data_dep || !ir_value_is_const(n->in[1]))
		return 0;
	const ir_value *x = n->in[0];
	int64_t a = ir_attr_int(n, "axis", 0);
	return x->shape.rank > 0 && (a < 0 ? a + x->shape.rank : a) == x->dd_axis;
}

int ir_node_dd_output(const ir_node *n, int k)
{
	if (ir_op_dd_output(n->op, k))
		return 1;
	if (n->op == OP_RECURRENCE)
		return ir_rec_cond_state(n) >= 0 && k >= ir_attr_int(n, "n_state", 0);
	return ir_dd_passes(n);
}

int ir_rec_cond_state(const ir_node *n)
{
	if (n->op != OP_RECURRENCE || !n->body)
		return -1;
	int64_t nseq = ir_attr_int(n, "n_seq", 0), nst = ir_attr_int(n, "n_state", 0);
	for (int64_t k = 0; k < nst && nseq + k < n->body->ninputs; k++)
		if (n->body->inputs[nseq + k]->role == IR_ROLE_CONDITION)
			return (int)k;
	return -1;
}

const ir_node *ir_dd_source(const ir_value *v)
{
	const ir_node *p = v ? v->producer : NULL;
	for (int depth = 0; p && ir_dd_passes(p) && depth < 1 << 20; depth++)
		p = p->in[dd_input(p)]->producer;
	return p;
}

/* ---- training builds ------------------------------------------------------------ */

static const char *const loss_names[TRAIN_NLOSSES] = {"ce", "ce-all", "mse", "masked-mse"};

const char *train_loss_name(int loss)
{
	return loss >= 0 && loss < TRAIN_NLOSSES ? loss_names[loss] : "?";
}

int train_loss_lookup(const char *name)
{
	for (int i = 0; i < TRAIN_NLOSSES; i++)
		if (!strcmp(name, loss_names[i]))
			return i;
	return -1;
}

/* The first f32 weight that b (the root or a body) reads and t does not
 * list as a parameter, or NULL. */
const ir_value *ir_train_unlisted(const ir_train *t, const ir_graph *b)
{
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *n = b->nodes[i];
		for (int k = 0; k < n->nin; k++) {
			const ir_value *v = n->in[k];
			int param = !v || v->kind != VAL_WEIGHT || v->dtype != DT_F32 || v->frozen;
			for (int j = 0; !param && j < t->nparams; j++)
				param = t->params[j] == v;
			if (!param)
				return v;
		}
		const ir_value *v = n->body ? ir_train_unlisted(t, n->body) : NULL;
		if (v)
			return v;
	}
	return NULL;
}

int ir_index_exact_in_f32(const ir_value *v)
{
	for (int depth = 0; v && v->producer && depth < 8; depth++) {
		const ir_node *n = v->producer;
		if (n->op == OP_ARGMAX || n->op == OP_ARGMIN) {
			if (n->nin < 1 || !n->in[0] || n->in[0]->shape.rank < 1)
				return 0;
			int r = n->in[0]->shape.rank;
			int64_t ax = ir_attr_int(n, "axis", 0);
			ax = ax < 0 ? ax + r : ax;
			return ax >= 0 && ax < r && ir_dim_is_const(n->in[0]->shape.d[ax]) &&
			       n->in[0]->shape.d[ax].k <= (int64_t)1 << 24;
		}
		int view = n->op == OP_UNSQUEEZE || n->op == OP_SQUEEZE || n->op == OP_RESHAPE || n->op == OP_IDENTITY ||
			   (n->op == OP_CAST && (ir_attr_int(n, "to", 0) == DT_I64 || ir_attr_int(n, "to", 0) == DT_I32));
		if (!view || n->nin < 1)
			return 0;
		v = n->in[0];
	}
	return 0;
}
