/* lower_seq.c: ONNX sequences, optionals, If and SequenceMap, resolved at
 * compile time.
 *
 * requires: (pass_seq, a resolving stage: passes.h) the node's inputs
 *           settled, inferred and folded (resolve_settled); sequence/optional graph inputs bound (onnx_load.c).
 * produces: no sequence, optional, If or SequenceMap node and no Loop that
 *           carries a sequence left in the graph; graph outputs all tensors.
 * breaks:   nothing: the nodes it makes are ordinary tensor nodes that
 *           pass_infer infers in the next round.
 *
 * cellc's tensors have shapes fixed at compile time, and so do its
 * sequences: a sequence value is resolved into the list of tensor values it
 * holds (ir_value.seq/.nelem/.elem, ir.h), an optional into none or its one
 * value.  Where they come from:
 *   - graph inputs of sequence or optional type are bound per data set
 *     (onnx_load_bound: `verify` binds them from input_N.pb, `compile
 *     --bind NAME=FILE.pb` from a serialized SequenceProto/OptionalProto);
 *     their elements are constants;
 *   - SequenceEmpty, SequenceConstruct, SequenceInsert and SequenceErase
 *     (constant position),
 *     Optional, OptionalGetElement of a sequence and Identity of either make
 *     new lists; SequenceAt (constant position) and OptionalGetElement of a
 *     tensor become Identity of the element, SequenceLength and
 *     OptionalHasElement constants, ConcatFromSequence a Concat (of
 *     Unsqueezes for new_axis=1);
 *   - SplitToSequence into one slice per index that only SequenceAt and
 *     SequenceLength read stays a view of its tensor (even of symbolic
 *     length): SequenceAt is Gather on the axis, SequenceLength the axis'
 *     size, and a Loop body reading it at the iteration number scans the
 *     tensor (lower_loop.c); any other SplitToSequence of constant length and
 *     split becomes the list of its slices;
 *   - If whose condition folds is replaced by the nodes of the branch it
 *     takes (inlined: the branch's constants copied, its captures kept); an
 *     If whose condition is a run-time bool (a restart `if k % F == 0:` in a
 *     scripted loop, a cascade's `if p.max() > 0.5:`) by both branches and
 *     Where(cond, then, else) per output, the branches giving one shape
 *     (select_if; at the top level pass_branch later makes each branch's
 *     own nodes run only when it is taken);
 *     SequenceMap by one copy of its body per position; Not folds;
 *   - a Loop carrying a resolved sequence or optional (not the SequenceEmpty
 *     accumulation lower_loop.c turns into a recurrence, unless that is a
 *     graph output) or indexing one, or one whose per-step outputs are not
 *     all float32 (a recurrence's are; checked once the body has dtypes), is
 *     unrolled: its
 *     body copied once per iteration, each copy inferred and folded before
 *     the next, for a constant trip count of at most ONNX_UNROLL_MAX.
 * A graph output that is a sequence becomes the outputs NAME_0..NAME_{k-1}
 * (an optional: NAME for a tensor, the sequence's names for a sequence,
 * nothing when empty): onnx_seq_flatten names them, for the compiler and
 * for `verify` alike.
 *
 * Refused with a located error: a sequence whose length or positions depend
 * on run-time data (a Loop condition, a position or a trip count that is
 * not a compile-time constant, an If choosing between sequences), a tensor
 * operator reading a sequence, a sequence of sequences.  (Not of a run-time value is left to
 * the element-wise machinery.)
 */
#include "lower.h"
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "util.h"

#include <string.h>

enum { ONNX_UNROLL_MAX = 1024 };

/* The unrolling budget of a compilation: body nodes copied, plus sequence
 * elements listed by SequenceInsert / SequenceErase / SequenceConstruct over
 * 64 (each insert copies the whole list); nested loops multiply, so the
 * total is bounded, not each loop.  It scales with --max-memory: 16384 node
 * copies (about a million listed elements) at the default 2 GiB. */
static int64_t unroll_budget(void) { return (int64_t)(arena_budget >> 17); }

/* Charges `cost` to g's compilation; 0 and an error naming n past the budget. */
static int unroll_charge(ir_graph *g, ir_node *n, diag *D, int64_t cost, const char *what)
{
	ir_graph *r = ir_root(g);
	if (cost >= 0 && cost <= unroll_budget() - r->unroll_spent) {
		r->unroll_spent += cost;
		return 1;
	}
	diag_node(D, n, "%s%s%s%s would take the compilation past its unrolling budget of %lld units (a unit: "
		  "one body node copied or 64 sequence elements listed; %lld spent; --max-memory raises it)",
		  n->origin ? "(a copy of node '" : "", n->origin ? n->origin : "", n->origin ? "') " : "",
		  what, (long long)unroll_budget(), (long long)r->unroll_spent);
	return 0;
}

/* Nodes of b, bodies and graph attributes included. */
static int64_t count_nodes(const ir_graph *b)
{
	int64_t k = b->nnodes;
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *n = b->nodes[i];
		if (n->body)
			k += count_nodes(n->body);
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g)
				k += count_nodes(n->attrs[a].g);
	}
	return k;
}

/* ---- resolved values --------------------------------------------------- */

static void set_list(ir_value *v, int kind, int n, ir_value **elem, ir_dtype dt)
{
	v->seq = kind;
	v->resolved = 1;
	v->nelem = n;
	v->elem = elem;
	v->dtype = dt;
	v->shape.rank = 0;      /* not a tensor: nothing reads its shape */
}

static void copy_resolution(ir_value *to, const ir_value *from)
{
	set_list(to, from->seq, from->nelem, from->elem, from->dtype);
}

static int is_resolved(const ir_value *v) { return v && v->seq != IR_TENSOR && v->resolved; }

static const char *kind_word(const ir_value *v) { return v->seq == IR_OPT ? "optional" : "sequence"; }

int onnx_seq_flatten(arena *A, const ir_value *v, const char *name, ir_value **vals, const char **names,
		     int max)
{
	if (v->seq == IR_TENSOR) {
		if (max < 1)
			return -1;
		vals[0] = (ir_value *)v;
		names[0] = name;
		return 1;
	}
	if (v->seq == IR_OPT)
		return v->nelem ? onnx_seq_flatten(A, v->elem[0], name, vals, names, max) : 0;
	if (v->nelem > max)
		return -1;
	for (int i = 0; i < v->nelem; i++) {
		if (v->elem[i]->seq != IR_TENSOR)
			return -1;
		vals[i] = v->elem[i];
		names[i] = arena_printf(A, "%s_%d", name, i);
	}
	return v->nelem;
}

/* ---- replacement lists ---------------------------------------------------- */

typedef struct rlist {
	ir_node **v;
	int n, cap;
} rlist;

static void rl_push(arena *A, rlist *l, ir_node *n)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 16;
		l->v = arena_grow(A, l->v, (size_t)l->n, (size_t)cap, sizeof *l->v);
		l->cap = cap;
	}
	l->v[l->n++] = n;
}

/* ---- copying nodes: If branches and Loop iterations ------------------------- */

typedef struct vmap {
	ir_value **from, **to;
	int n, cap;
} vmap;

static void vm_put(arena *A, vmap *m, ir_value *from, ir_value *to)
{
	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 32;
		m->from = arena_grow(A, m->from, (size_t)m->n, (size_t)cap, sizeof *m->from);
		m->to = arena_grow(A, m->to, (size_t)m->n, (size_t)cap, sizeof *m->to);
		m->cap = cap;
	}
	m->from[m->n] = from;
	m->to[m->n++] = to;
}

static ir_value *vm_get(const vmap *m, const ir_value *v)
{
	for (int i = m->n - 1; i >= 0; i--)
		if (m->from[i] == v)
			return m->to[i];
	return NULL;
}

static int inside(const ir_graph *g, const ir_graph *src)
{
	for (; g; g = g->parent)
		if (g == src)
			return 1;
	return 0;
}

/* v as the copy in dst sees it: its copy, a copy of a constant of the graph
 * being copied (src), or v itself (a value around src: a capture). */
static ir_value *ref(vmap *m, const ir_graph *src, ir_graph *dst, ir_value *v)
{
	if (!v)
		return NULL;
	ir_value *r = vm_get(m, v);
	if (r)
		return r;
	if (!inside(v->graph, src) || v->kind != VAL_CONST)
		return v;
	r = ir_value_new(dst, ir_unique_name(dst, v->origin ? v->origin : "c"), VAL_CONST, v->dtype);
	r->shape = v->shape;
	r->data = v->data;
	r->sym = v->sym;
	r->origin = v->origin;
	if (v->seq != IR_TENSOR) {
		r->seq = v->seq;
		r->resolved = v->resolved;
		r->nelem = v->nelem;
		r->elem = v->elem;
	}
	vm_put(dst->A, m, v, r);
	return r;
}

static ir_graph *copy_graph(vmap *m, const ir_graph *src, ir_graph *g, ir_graph *parent);

/* Copies g's nodes (with nested graphs) into dst, appended to dst or, when l
 * is given, to l; their results are registered in m.  src: the graph whose
 * constants are copied (g or one around it). */
static void copy_nodes(vmap *m, const ir_graph *src, ir_graph *g, ir_graph *dst, rlist *l)
{
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		ir_node *c = ir_clone_node(dst, n, ir_unique_name(dst, n->name), -1, IR_CLONE_SOURCE);
		c->origin = n->origin ? n->origin : n->name;
		c->unrolled = n->unrolled;
		for (int k = 0; k < n->nin; k++)
			c->in[k] = ref(m, src, dst, n->in[k]);
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH)
				c->attrs[a].g = copy_graph(m, src, n->attrs[a].g, dst);
		if (n->body)
			c->body = copy_graph(m, src, n->body, dst);
		for (int k = 0; k < n->nout; k++) {
			ir_value *o = n->out[k];
			if (!o)
				continue;
			ir_value *co = ir_value_new(dst, ir_unique_name(dst, o->origin ? o->origin : o->name),
						    VAL_TEMP, o->dtype);
			co->origin = o->origin ? o->origin : o->name;
			co->seq = o->seq;
			c->out[k] = co;
			vm_put(dst->A, m, o, co);
		}
		if (l)
			rl_push(dst->A, l, c);
		else
			ir_append(dst, c);
	}
}

/* A copy of nested graph g (an If branch or a Loop body inside what is
 * copied) under parent. */
static ir_graph *copy_graph(vmap *m, const ir_graph *src, ir_graph *g, ir_graph *parent)
{
	ir_graph *c = ir_graph_new(parent->A, parent, ir_unique_name(parent, g->name ? g->name : "body"));
	c->inputs = arena_array(c->A, (size_t)g->ninputs + 1, sizeof *c->inputs);
	for (int k = 0; k < g->ninputs; k++) {
		ir_value *v = g->inputs[k];
		ir_value *cv = ir_value_new(c, ir_unique_name(c, v->origin ? v->origin : v->name), v->kind, v->dtype);
		cv->shape = v->shape;
		cv->seq = v->seq;
		cv->origin = v->origin;
		c->inputs[c->ninputs++] = cv;
		vm_put(c->A, m, v, cv);
	}
	copy_nodes(m, src, g, c, NULL);
	c->outputs = arena_array(c->A, (size_t)g->noutputs + 1, sizeof *c->outputs);
	for (int k = 0; k < g->noutputs; k++)
		c->outputs[c->noutputs++] = ref(m, src, c, g->outputs[k]);
	return c;
}

/* out = Identity(v), or out takes v's resolution when v is a sequence. */
static void bind_result(ir_graph *g, rlist *l, ir_node *origin, ir_value *out, ir_value *v)
{
	if (!out)
		return;
	if (v->seq != IR_TENSOR) {
		copy_resolution(out, v);
		return;
	}
	ir_build B = {.origin = origin->name, .opset = origin->opset};
	ir_node *id = ir_build_node(&B, g, OP_IDENTITY, 1, &v, 1);
	id->out[0] = out;
	out->producer = id;
	rl_push(g->A, l, id);
}

/* The value of a constant (or initializer) scalar (numel 1) integer or
 * bool; 0 if not one. */
static int const_scalar(const ir_value *v, int64_t *r)
{
	if (!v || v->seq != IR_TENSOR || !infer_is_const(v) || !v->data ||
	    ir_shape_const_numel(&v->shape) != 1)
		return 0;
	switch (v->dtype) {
	case DT_BOOL: case DT_I8: case DT_U8: case DT_I16: case DT_U16: case DT_I32: case DT_U32:
	case DT_I64: case DT_U64:
		*r = infer_elem_int(v, 0);
		return 1;
	default:
		return 0;
	}
}

static ir_value *make_const(ir_graph *g, ir_value *out, ir_dtype dt, const ir_shape *s, const void *data)
{
	int64_t n = ir_shape_const_numel(s);
	size_t bytes = (size_t)n * ir_dtype_size(dt);
	out->kind = VAL_CONST;
	out->dtype = dt;
	out->shape = *s;
	out->data = arena_alloc(g->A, bytes ? bytes : 1);
	if (bytes)
		memcpy(out->data, data, bytes);
	out->producer = NULL;
	return out;
}

static ir_build like(const ir_node *n);

/* ---- If --------------------------------------------------------------------- */

/* If with a run-time condition in a loop body (`if k % F == 0:` in a
 * scripted loop): both branches computed, each output Where(cond, then, else).  The
 * branches must give tensors of one shape (inferred later: the Where carries
 * if_select = 1, infer_shape checks it). */
static int select_if(ir_graph *g, ir_node *n, diag *D, rlist *l)
{
	ir_build B = like(n);
	ir_value *c = n->in[0];
	if (c->seq != IR_TENSOR || c->dtype != DT_BOOL || c->shape.rank < 0 ||
	    ir_shape_const_numel(&c->shape) != 1) {
		const char *src = g->parent ? "" : ir_source_inputs(g->A, c, 64);
		diag_node(D, n, "If with a data-dependent condition: '%s' is not a compile-time constant and not "
			  "a bool with one element, which cellc would compute as a select of both branches%s%s%s",
			  c->name, *src ? "; it is computed from graph input(s) " : "", src,
			  *src ? ", which --bind can fix (--bind NAME=NUMBER for a scalar, --bind NAME=FILE.pb)" : "");
		return -1;
	}
	if (c->shape.rank > 0) {
		/* a [1] condition: a scalar, which broadcasts to any branch shape */
		int64_t none = 0;
		ir_node *r = ir_build_node(&B, g, OP_RESHAPE, 2, NULL, 1);
		r->in[0] = c;
		r->in[1] = ir_const_i64(g, ir_unique_name(g, "shape"), 0, &none);
		c = ir_build_out(&B, r, 0, DT_BOOL);
		rl_push(g->A, l, r);
	}
	ir_value *res[2][64];
	static const char *const br[2] = {"then_branch", "else_branch"};
	for (int j = 0; j < n->nout; j++) {
		int seq = n->out[j] && n->out[j]->seq != IR_TENSOR;
		for (int k = 0; k < 2 && !seq; k++) {
			ir_graph *b = ir_attr_find(n, br[k])->g;
			seq = j < b->noutputs && b->outputs[j] && b->outputs[j]->seq != IR_TENSOR;
		}
		if (seq) {
			const char *src = g->parent ? "" : ir_source_inputs(g->A, c, 64);
			diag_node(D, n, "If with a data-dependent condition: output %d is a sequence or optional; cellc "
				  "selects between tensors only (a sequence's length must be known at compile time)%s%s%s",
				  j, *src ? "; the condition is computed from graph input(s) " : "", src,
				  *src ? ", which --bind can fix (--bind NAME=NUMBER for a scalar, --bind NAME=FILE.pb)" : "");
			return -1;
		}
	}
	if (n->nout > 64) {
		diag_node(D, n, "If with a data-dependent condition and %d outputs; cellc selects at most 64", n->nout);
		return -1;
	}
	for (int k = 0; k < 2; k++) {
		ir_graph *b = ir_attr_find(n, br[k])->g;
		vmap m = {0};
		copy_nodes(&m, b, b, g, l);
		for (int j = 0; j < n->nout; j++)
			res[k][j] = ref(&m, b, g, b->outputs[j]);
	}
	for (int j = 0; j < n->nout; j++) {
		if (!n->out[j])
			continue;
		if (res[0][j]->seq != IR_TENSOR || res[1][j]->seq != IR_TENSOR) {
			diag_node(D, n, "If with a data-dependent condition: output %d is a sequence or optional; "
				  "cellc selects between tensors only", j);
			return -1;
		}
		ir_node *w = ir_build_node(&B, g, OP_WHERE, 3, NULL, 1);
		w->name = ir_unique_name(g, n->name);   /* errors name the If */
		w->in[0] = c;
		w->in[1] = res[0][j];
		w->in[2] = res[1][j];
		ir_attr_set_int(w, "if_select", 1);
		w->out[0] = n->out[j];
		n->out[j]->producer = w;
		rl_push(g->A, l, w);
	}
	return 0;
}

/* If n replaced by the nodes of its branch `which` ("then_branch" or
 * "else_branch"): its constants copied, its captures kept, each output an
 * Identity of the branch's. */
static int take_branch(ir_graph *g, ir_node *n, rlist *l, const char *which)
{
	ir_attr *a = ir_attr_find(n, which);
	ASSERT(a && a->kind == ATTR_GRAPH);
	ir_graph *b = a->g;
	vmap m = {0};
	copy_nodes(&m, b, b, g, l);
	for (int j = 0; j < n->nout; j++)
		bind_result(g, l, n, n->out[j], ref(&m, b, g, b->outputs[j]));
	return 0;
}

/* ---- If decided by a size ----------------------------------------------------- */

/* A condition that is a comparison of a size known only at run time with a
 * constant (`if x.shape[-1] == 1:`, through Not, Cast to bool and views of
 * one element): true exactly when lo <= d <= hi, negated when neg.  d is one
 * symbol (free or derived). */
typedef struct size_pred {
	ir_dim d;
	int64_t lo, hi;
	int neg;
} size_pred;

static int one_dim(const ir_value *v, ir_dim *d)
{
	if (!v || v->seq != IR_TENSOR || !infer_is_const(v) || ir_shape_const_numel(&v->shape) != 1 ||
	    (!v->sym && !v->data))
		return 0;
	if (!v->sym && v->dtype != DT_I64 && v->dtype != DT_I32 && v->dtype != DT_I16 && v->dtype != DT_I8)
		return 0;
	*d = infer_elem_dim(v, 0);
	return 1;
}

static int size_pred_of(const ir_value *c, size_pred *p)
{
	p->neg = 0;
	for (int depth = 0; depth < 32 && c && c->producer; depth++) {
		const ir_node *n = c->producer;
		if (n->op == OP_NOT) {
			p->neg = !p->neg;
		} else if (n->op == OP_IDENTITY || n->op == OP_SQUEEZE || n->op == OP_UNSQUEEZE || n->op == OP_RESHAPE ||
			   (n->op == OP_CAST && n->in[0]->dtype == DT_BOOL)) {
			/* a view of the one element, or a bool kept bool */
		} else if (n->op == OP_EQUAL || n->op == OP_LESS || n->op == OP_LESSEQ || n->op == OP_GREATER ||
			   n->op == OP_GREATEREQ) {
			ir_dim a, b;
			if (!one_dim(n->in[0], &a) || !one_dim(n->in[1], &b))
				return 0;
			int ca = infer_mono_is_const(a), cb = infer_mono_is_const(b);
			ir_op op = n->op;
			if (ca == cb)
				return 0;
			if (ca) {       /* c < d is d > c */
				ir_dim t = a;
				a = b, b = t;
				op = op == OP_LESS ? OP_GREATER : op == OP_GREATER ? OP_LESS : op == OP_LESSEQ ? OP_GREATEREQ
				   : op == OP_GREATEREQ ? OP_LESSEQ : op;
			}
			if (ir_dim_one_sym(a) < 0 || b.k <= INT32_MIN || b.k >= INT32_MAX)
				return 0;
			p->d = a;
			p->lo = op == OP_EQUAL ? b.k : op == OP_GREATER ? b.k + 1 : op == OP_GREATEREQ ? b.k : INT64_MIN;
			p->hi = op == OP_EQUAL ? b.k : op == OP_LESS ? b.k - 1 : op == OP_LESSEQ ? b.k : INT64_MAX;
			return 1;
		} else {
			return 0;
		}
		c = n->in[0];
	}
	return 0;
}

/* What one branch of a size-decided If needs of the size d (least value L):
 * the sizes it is taken for, within [L, inf), as cellc can record them. */
typedef enum {
	NEED_NONE,      /* taken for no size: the other branch always is */
	NEED_ALL,       /* taken for every size: no condition */
	NEED_AT_LEAST,  /* d >= a (a > L) */
	NEED_EQUAL,     /* d == a */
	NEED_OTHER,     /* a set cellc cannot record (d in [a, b], or two pieces) */
} size_need;

/* The sizes in [L, inf) with lo <= d <= hi (or, out, those outside). */
static size_need need_of(int64_t L, int64_t lo, int64_t hi, int out, int64_t *a)
{
	if (!out) {
		int64_t from = lo > L ? lo : L;
		if (from > hi)
			return NEED_NONE;
		*a = from;
		return hi == INT64_MAX ? (from == L ? NEED_ALL : NEED_AT_LEAST) : from == hi ? NEED_EQUAL : NEED_OTHER;
	}
	int below = lo != INT64_MIN && lo - 1 >= L, above = hi != INT64_MAX;
	if (below && above)
		return NEED_OTHER;
	if (above) {
		*a = hi + 1 > L ? hi + 1 : L;
		return *a == L ? NEED_ALL : NEED_AT_LEAST;
	}
	if (below) {
		*a = L;
		return lo - 1 == L ? NEED_EQUAL : NEED_OTHER;
	}
	return NEED_NONE;
}

static const char *pred_str(arena *A, const ir_graph *g, const size_pred *p)
{
	const char *s = g->syms[ir_dim_one_sym(p->d)];
	const char *t = p->lo == p->hi ? arena_printf(A, "%s == %lld", s, (long long)p->lo)
			: p->hi == INT64_MAX ? arena_printf(A, "%s >= %lld", s, (long long)p->lo)
			: p->lo == INT64_MIN ? arena_printf(A, "%s <= %lld", s, (long long)p->hi)
			: arena_printf(A, "%lld <= %s <= %lld", (long long)p->lo, s, (long long)p->hi);
	return p->neg ? arena_printf(A, "not (%s)", t) : t;
}

/* An If whose condition compares a size known only at run time with a
 * constant.  Where the size's least value decides it, the branch it takes
 * is inlined.  Otherwise the options, in this order:
 *   0. both branches and a select per output (select_if), when their outputs
 *      agree in shape: the If decided at run time, no condition on the size;
 *   1. the branch whose sizes are "d >= a" (recorded as the least value of
 *      d's free symbol, a `sizes "L" >= a` link);
 *   2. the branch whose sizes are "d == a" (d unified with a: fixed or
 *      pinned, a link), the then branch first where both are of one kind.
 * The compilation takes option root->choice_take[i] for the i-th such If
 * (0 on a first try); compile_run tries the others when it fails after
 * one, so a branch whose outputs the rest of the model cannot take (Silero
 * VAD v5's `if x.shape[-1] == 1: x = x.squeeze(-1)` before an LSTMCell) is
 * left for the one it can.  Every condition a chosen branch needs is
 * recorded and checked by the generated code once per call: the model then
 * runs only for those sizes, and compile and info say so. */
static int size_if(ir_graph *g, ir_node *n, diag *D, rlist *l, const size_pred *p)
{
	ir_graph *root = ir_root(g);
	int s = ir_dim_one_sym(p->d);
	int64_t L = ir_sym_least_value(root, s), a[2];
	/* branch k is taken where the comparison is true (k = 0, unless negated) */
	size_need need[2];
	for (int k = 0; k < 2; k++)
		need[k] = need_of(L, p->lo, p->hi, k != p->neg, &a[k]);
	const char *pred = pred_str(g->A, root, p);
	static const char *const br[2] = {"then_branch", "else_branch"};
	for (int k = 0; k < 2; k++)
		if (need[1 - k] == NEED_NONE) {         /* decided by the size's range */
			return take_branch(g, n, l, br[k]);
		}
	/* the options, in the order of preference */
	int opt[3], nopt = 0;
	opt[nopt++] = -1;                               /* the select */
	for (int kind = NEED_AT_LEAST; kind <= NEED_EQUAL; kind++)
		for (int k = 0; k < 2; k++)
			if ((int)need[k] == kind)
				opt[nopt++] = k;
	int i = root->nchoices;
	if (i >= IR_MAX_CHOICES) {
		diag_node(D, n, "If with a condition on a run-time size (%s): the model has more than %d Ifs decided "
			  "by a size, which is as many as cellc chooses branches for", pred, (int)IR_MAX_CHOICES);
		return -1;
	}
	root->nchoices++;
	int take = i < root->nchoice_fixed ? root->choice_take[i] : 0;
	if (take < 0 || take >= nopt)
		take = 0;
	root->choice_take[i] = (signed char)take;
	root->choice_nopt[i] = (signed char)nopt;
	if (nopt > 1 && root->choice_hold)
		diag_hold(D);
	if (opt[take] < 0)
		return select_if(g, n, D, l);
	int k = opt[take];
	const char *why = arena_printf(g->A, "If takes its %s branch, which is for %s %s %lld; its branches give "
				       "different shapes", k ? "else" : "then", root->syms[s],
				       need[k] == NEED_EQUAL ? "==" : ">=", (long long)a[k]);
	if (need[k] == NEED_EQUAL) {
		root->unify_ok = 1;
		int ok = ir_sym_unify(g, p->d, ir_dim_const(a[k]), n->name, why);
		root->unify_ok = 0;
		if (!ok) {
			diag_node(D, n, "If with a condition on a run-time size (%s): its %s branch is for %s == %lld, "
				  "which cellc cannot make that size (a size derived from it would fall below 1)",
				  pred, k ? "else" : "then", root->syms[s], (long long)a[k]);
			return -1;
		}
	} else {
		/* the size is computed from one free symbol: the least value is its */
		unsigned fr = ir_sym_frees(root, s);
		int f = fr && !(fr & (fr - 1)) ? __builtin_ctz(fr) : -1;
		if (f < 0 || !ir_sym_need(g, p->d, a[k])) {
			diag_node(D, n, "If with a condition on a run-time size (%s): its %s branch is for %s >= %lld, "
				  "which cellc cannot require", pred, k ? "else" : "then", root->syms[s], (long long)a[k]);
			return -1;
		}
		ir_sym_link lk = {.name = root->syms[f], .value = ir_sym_least(root, f), .node = n->name,
				  .why = why, .at_least = 1};
		ir_sym_link_add(root, &lk);
	}
	return take_branch(g, n, l, br[k]);
}

static int inline_if(ir_graph *g, ir_node *n, diag *D, rlist *l)
{
	int64_t c;
	size_pred p;
	if (!const_scalar(n->in[0], &c) && !g->parent && size_pred_of(n->in[0], &p))
		return size_if(g, n, D, l, &p);
	/* decided at run time (a scripted restart `if k % F == 0:` in a loop's
	 * step, a cascade's `if p.max() > 0.5:`): both branches and a select;
	 * at the top level pass_branch then runs each branch's own nodes only
	 * when it is taken */
	if (!const_scalar(n->in[0], &c))
		return select_if(g, n, D, l);
	return take_branch(g, n, l, c ? "then_branch" : "else_branch");
}

/* ---- SequenceMap ------------------------------------------------------------------ */

/* One copy of the body per position; sequence inputs give the copy their
 * tensor at that position, tensor inputs themselves. */
static int map_seq(ir_graph *g, ir_node *n, diag *D, rlist *l)
{
	ir_graph *b = n->body;
	int len = -1;
	if (b->ninputs != n->nin || b->noutputs != n->nout) {
		diag_node(D, n, "body has %d inputs and %d outputs; this SequenceMap needs %d and %d", b->ninputs,
			  b->noutputs, n->nin, n->nout);
		return -1;
	}
	for (int k = 0; k < n->nin; k++) {
		ir_value *v = n->in[k];
		if (v->seq == IR_OPT || (k == 0 && v->seq != IR_SEQ)) {
			diag_node(D, n, "input %d ('%s') must be a %s", k, v->name, k ? "sequence or a tensor" : "sequence");
			return -1;
		}
		if (v->seq == IR_SEQ && len >= 0 && v->nelem != len) {
			diag_node(D, n, "input sequences have %d and %d tensors", len, v->nelem);
			return -1;
		}
		if (v->seq == IR_SEQ)
			len = v->nelem;
	}
	ir_value ***outs = arena_array(g->A, (size_t)n->nout, sizeof *outs);
	for (int j = 0; j < n->nout; j++)
		outs[j] = arena_array(g->A, (size_t)len + 1, sizeof **outs);
	for (int i = 0; i < len; i++) {
		vmap m = {0};
		for (int k = 0; k < n->nin; k++)
			vm_put(g->A, &m, b->inputs[k], n->in[k]->seq == IR_SEQ ? n->in[k]->elem[i] : n->in[k]);
		copy_nodes(&m, b, b, g, l);
		for (int j = 0; j < n->nout; j++) {
			outs[j][i] = ref(&m, b, g, b->outputs[j]);
			if (outs[j][i]->seq != IR_TENSOR) {
				diag_node(D, n, "body output %d is a %s; cellc maps to sequences of tensors", j,
					  kind_word(outs[j][i]));
				return -1;
			}
		}
	}
	for (int j = 0; j < n->nout; j++)
		if (n->out[j])
			set_list(n->out[j], IR_SEQ, len, outs[j], len ? outs[j][0]->dtype : DT_F32);
	return 0;
}

/* ---- SplitToSequence ------------------------------------------------------------- */

/* SplitToSequence n makes one slice per index of its axis: no split input
 * or a scalar split of 1 (what PyTorch exports for torch.unbind), keepdims
 * deciding whether the slices keep the axis (as in ONNX Runtime: keepdims
 * applies unless split is 1-D).  *axis: normalised; *keep: the slices keep
 * the axis. */
static int split_unit(const ir_node *n, int *axis, int *keep)
{
	const ir_value *x = n->nin > 0 ? n->in[0] : NULL, *sp = n->nin > 1 ? n->in[1] : NULL;
	if (!x || x->seq != IR_TENSOR || x->shape.rank < 1)
		return 0;
	int64_t ax = ir_attr_int(n, "axis", 0), one;
	if (ax < -x->shape.rank || ax >= x->shape.rank)
		return 0;
	*axis = (int)(ax < 0 ? ax + x->shape.rank : ax);
	*keep = ir_attr_int(n, "keepdims", 1) != 0;
	return !sp || (sp->shape.rank == 0 && const_scalar(sp, &one) && one == 1);
}

const ir_node *onnx_split_view(const ir_value *S, int *axis, int *keep)
{
	int a, k;
	const ir_node *p = S ? S->producer : NULL;
	if (!p || S->seq != IR_SEQ || S->resolved || p->op != OP_SPLITTOSEQ || p->out[0] != S || !split_unit(p, &a, &k))
		return NULL;
	if (axis)
		*axis = a;
	if (keep)
		*keep = k;
	return p;
}

/* Nodes made in place of n (ir_build): its provenance and opset; their
 * outputs named "split". */
static ir_build like(const ir_node *n)
{
	return (ir_build){.origin = n->origin ? n->origin : n->name, .opset = n->opset, .out_base = "split"};
}

int onnx_split_at(ir_graph *g, ir_node *n, ir_node **extra)
{
	ir_build B = like(n);
	int axis, keep;
	const ir_node *sp = onnx_split_view(n->in[0], &axis, &keep);
	*extra = NULL;
	if (n->op != OP_SEQAT || !sp)
		return 0;
	ir_value *x = sp->in[0], *o = n->out[0];
	int64_t ax = axis;
	n->op = OP_GATHER;
	n->in[0] = x;
	n->nattrs = 0;
	ir_attr_set_int(n, "axis", axis);
	if (keep && o) {
		/* the slice keeps its axis: x[..., p:p+1, ...] */
		ir_node *u = ir_build_node(&B, g, OP_UNSQUEEZE, 2, NULL, 1);
		u->in[0] = ir_build_out(&B, n, 0, x->dtype);
		u->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &ax);
		u->out[0] = o;
		o->producer = u;
		*extra = u;
	}
	return 1;
}

/* SequenceAt or SequenceLength of a split view: tensor operators on x. */
static int split_read(ir_graph *g, ir_node *n, rlist *l)
{
	ir_build B = like(n);
	int axis, keep;
	const ir_node *sp = onnx_split_view(n->in[0], &axis, &keep);
	ir_value *x = sp->in[0];
	if (n->op == OP_SEQLEN) {
		/* Shape(x)[axis], folded into the axis' size */
		ir_node *s = ir_build_node(&B, g, OP_SHAPE, 1, NULL, 1);
		s->in[0] = x;
		rl_push(g->A, l, s);
		int64_t ax = axis;
		ir_shape scalar = {.rank = 0};
		n->op = OP_GATHER;
		n->in[0] = ir_build_out(&B, s, 0, DT_I64);
		n->in[1] = ir_const_new(g, ir_unique_name(g, "axis"), DT_I64, &scalar, &ax);
		n->nin = 2;
		n->nattrs = 0;
		ir_attr_set_int(n, "axis", 0);
		rl_push(g->A, l, n);
		return 0;
	}
	ir_value *p = n->in[1];
	if (p->shape.rank > 0) {
		/* a position of shape [1]: the scalar Gather wants */
		ir_node *r = ir_build_node(&B, g, OP_RESHAPE, 2, NULL, 1);
		r->in[0] = p;
		int64_t none = 0;
		r->in[1] = ir_const_i64(g, ir_unique_name(g, "shape"), 0, &none);
		n->in[1] = ir_build_out(&B, r, 0, p->dtype);
		rl_push(g->A, l, r);
	}
	ir_node *extra;
	onnx_split_at(g, n, &extra);
	rl_push(g->A, l, n);
	if (extra)
		rl_push(g->A, l, extra);
	return 0;
}

/* Whether every reader of S in graph h (and the graphs in it) is a
 * SequenceLength of it or, with at, a SequenceAt; *other: one that is not. */
static int only_readers(const ir_graph *h, const ir_value *S, int at, const ir_node **other)
{
	for (int i = 0; i < h->nnodes; i++) {
		const ir_node *u = h->nodes[i];
		for (int k = 0; k < u->nin; k++)
			if (u->in[k] == S && !(((at && u->op == OP_SEQAT) || u->op == OP_SEQLEN) && k == 0)) {
				*other = u;
				return 0;
			}
		if (u->body && !only_readers(u->body, S, at, other))
			return 0;
		for (int a = 0; a < u->nattrs; a++)
			if (u->attrs[a].kind == ATTR_GRAPH && u->attrs[a].g &&
			    !only_readers(u->attrs[a].g, S, at, other))
				return 0;
	}
	for (int k = 0; k < h->noutputs; k++)
		if (h->outputs[k] == S) {
			*other = NULL;
			return 0;
		}
	return 1;
}

static int only_at_len(const ir_graph *h, const ir_value *S, const ir_node **other)
{
	return only_readers(h, S, 1, other);
}

/* Every SequenceLength of S in h (and the graphs in it) becomes an Identity
 * of the constant len. */
static void len_readers(ir_graph *h, const ir_value *S, ir_value *len)
{
	for (int i = 0; i < h->nnodes; i++) {
		ir_node *u = h->nodes[i];
		if (u->op == OP_SEQLEN && u->nin > 0 && u->in[0] == S) {
			u->op = OP_IDENTITY;
			u->in[0] = len;
			u->nin = 1;
			u->nattrs = 0;
		}
		if (u->body)
			len_readers(u->body, S, len);
		for (int a = 0; a < u->nattrs; a++)
			if (u->attrs[a].kind == ATTR_GRAPH && u->attrs[a].g)
				len_readers(u->attrs[a].g, S, len);
	}
}

/* The chunk sizes of a split of an axis of constant length len: chunks of
 * the scalar split (1 without one), or the 1-D split's sizes; their count, or
 * -1 after an error. */
static int64_t split_sizes(ir_graph *g, ir_node *n, diag *D, const ir_value *sp, int64_t len, int axis,
			   const ir_value *x, int64_t **sizes_out)
{
	int64_t cnt = 0, c;
	int64_t *sizes;
	if (!sp || sp->shape.rank == 0) {
		c = sp ? infer_elem_int(sp, 0) : 1;
		if (c < 1) {
			diag_node(D, n, "split %lld is not positive", (long long)c);
			return -1;
		}
		cnt = (len + c - 1) / c;
		sizes = arena_array(g->A, (size_t)cnt + 1, sizeof *sizes);
		for (int64_t i = 0; i < cnt; i++)
			sizes[i] = i * c + c <= len ? c : len - i * c;
	} else {
		cnt = ir_shape_const_numel(&sp->shape);
		sizes = arena_array(g->A, (size_t)cnt + 1, sizeof *sizes);
		int64_t sum = 0;
		for (int64_t i = 0; i < cnt; i++) {
			sizes[i] = infer_elem_int(sp, i);
			if (sizes[i] < 0) {
				diag_node(D, n, "split size %lld is negative", (long long)sizes[i]);
				return -1;
			}
			sum += sizes[i];
		}
		if (sum != len) {
			diag_node(D, n, "split sizes add up to %lld; axis %d of '%s' has %lld", (long long)sum, axis,
				  x->name, (long long)len);
			return -1;
		}
	}
	*sizes_out = sizes;
	return cnt;
}

/* The slices of x along axis, of the given sizes (squeezed: a Gather of each
 * index), appended to l. */
static ir_value **split_slices(ir_graph *g, ir_node *n, rlist *l, ir_value *x, int axis, int squeeze,
			       const int64_t *sizes, int64_t cnt)
{
	ir_build B = like(n);
	ir_value **e = arena_array(g->A, (size_t)cnt + 1, sizeof *e);
	int64_t at = 0;
	for (int64_t i = 0; i < cnt; i++) {
		ir_node *s = ir_build_node(&B, g, squeeze ? OP_GATHER : OP_SLICE, squeeze ? 2 : 4, NULL, 1);
		s->in[0] = x;
		if (squeeze) {
			ir_shape scalar = {.rank = 0};
			s->in[1] = ir_const_new(g, ir_unique_name(g, "at"), DT_I64, &scalar, &at);
			ir_attr_set_int(s, "axis", axis);
		} else {
			int64_t st = at, en = at + sizes[i], a = axis;
			s->in[1] = ir_const_i64(g, ir_unique_name(g, "starts"), 1, &st);
			s->in[2] = ir_const_i64(g, ir_unique_name(g, "ends"), 1, &en);
			s->in[3] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &a);
		}
		e[i] = ir_build_out(&B, s, 0, x->dtype);
		rl_push(g->A, l, s);
		at += sizes[i];
	}
	return e;
}

/* SplitToSequence: a view of x (above) when it makes one slice per index
 * and only SequenceAt/SequenceLength read it; otherwise, for an axis of
 * constant length and constant split sizes, the list of its slices. */
static int split_seq(ir_graph *g, ir_node *n, diag *D, rlist *l)
{
	ir_value *x = n->in[0], *sp = n->nin > 1 ? n->in[1] : NULL, *S = n->out[0];
	int r = x->shape.rank, axis, keep;
	int64_t ax = ir_attr_int(n, "axis", 0);
	if (x->seq != IR_TENSOR || r < 1 || ax < -r || ax >= r) {
		diag_node(D, n, "axis %lld is out of range for input '%s' of rank %d", (long long)ax, x->name, r);
		return -1;
	}
	if (sp && (sp->seq != IR_TENSOR || (sp->dtype != DT_I64 && sp->dtype != DT_I32) || sp->shape.rank > 1)) {
		diag_node(D, n, "split '%s' must be an int32/int64 scalar or 1-D tensor", sp->name);
		return -1;
	}
	axis = (int)(ax < 0 ? ax + r : ax);
	const ir_node *other = NULL;
	if (!S)
		return 0;
	int readers_ok = only_at_len(ir_root(g), S, &other);
	if (split_unit(n, &axis, &keep) && readers_ok) {
		S->seq = IR_SEQ;
		S->resolved = 0;
		S->nelem = 0;
		S->dtype = x->dtype;
		S->shape.rank = 0;
		return 1;       /* a view: its readers become Gather and Shape */
	}
	ir_dim L = x->shape.d[axis];
	const ir_node *o2;
	if (sp && sp->shape.rank == 1 && ir_dim_is_const(sp->shape.d[0]) &&
	    !(ir_dim_is_const(L) && infer_is_const(sp) && sp->data) && only_readers(ir_root(g), S, 0, &o2)) {
		/* Only counted: a 1-D split of k sizes makes k tensors whatever the
		 * sizes and the axis' length, which need not be known (they are not
		 * checked against each other at run time: nothing reads the pieces). */
		int64_t k = sp->shape.d[0].k;
		ir_shape scalar = {.rank = 0};
		len_readers(ir_root(g), S, ir_const_new(g, ir_unique_name(g, "seq_len"), DT_I64, &scalar, &k));
		return 0;       /* the split itself goes */
	}
	const char *who = readers_ok ? "SequenceAt/SequenceLength" : other ?
			  arena_printf(g->A, "%s '%s'", ir_op_name(other->op), other->name) : "a graph output";
	if (!ir_dim_is_const(L)) {
		diag_node(D, n, "splits '%s' along axis %d of run-time length %s%s into a sequence read by %s; "
			  "cellc keeps such a sequence only as slices of one index (no split input, or a scalar "
			  "split of 1) read by SequenceAt (a Loop over torch.unbind(x)) and SequenceLength",
			  x->name, axis, ir_dim_str(g->A, ir_root(g), L),
			  sp && sp->shape.rank == 1 ? " by split sizes" : sp ? " in chunks" : "", who);
		return -1;
	}
	/* chunk sizes */
	int64_t len = L.k, cnt;
	int64_t *sizes;
	if (sp && !(infer_is_const(sp) && sp->data)) {
		diag_node(D, n, "split '%s' is not a compile-time constant; cellc resolves a sequence read by %s at "
			  "compile time", sp->name, who);
		return -1;
	}
	if ((cnt = split_sizes(g, n, D, sp, len, axis, x, &sizes)) < 0)
		return -1;
	if (!unroll_charge(g, n, D, cnt / 64 + 1, "splitting into a sequence that long"))
		return -1;
	int squeeze = (!sp || sp->shape.rank == 0) && !ir_attr_int(n, "keepdims", 1);
	if (squeeze && cnt > 0 && sizes[0] != 1) {
		diag_node(D, n, "keepdims is 0 but the chunks have %lld slices along axis %d", (long long)sizes[0],
			  axis);
		return -1;
	}
	ir_value **e = split_slices(g, n, l, x, axis, squeeze, sizes, cnt);
	set_list(S, IR_SEQ, (int)cnt, e, x->dtype);
	return 0;
}

/* ---- one node ------------------------------------------------------------------- */

static int seq_pos(ir_node *n, diag *D, const ir_value *S, const ir_value *p, int insert, int64_t *pos)
{
	int64_t len = S->nelem, v;
	if (!const_scalar(p, &v)) {
		diag_node(D, n, "position '%s' is not a compile-time constant; cellc resolves sequences at "
			  "compile time and needs constant positions", p->name);
		return -1;
	}
	if (v < -len || v > (insert ? len : len - 1)) {
		diag_node(D, n, "position %lld is out of range for a sequence of %lld tensors", (long long)v,
			  (long long)len);
		return -1;
	}
	*pos = v < 0 ? v + len : v;
	return 0;
}

static int concat_seq(ir_graph *g, ir_node *n, diag *D, rlist *l, ir_value *S)
{
	int64_t newax = ir_attr_int(n, "new_axis", 0), axis = ir_attr_int(n, "axis", 0);
	if (S->nelem == 0) {
		diag_node(D, n, "ConcatFromSequence of an empty sequence");
		return -1;
	}
	ir_value **in = arena_array(g->A, (size_t)S->nelem, sizeof *in);
	ir_build U = {.origin = n->name, .opset = n->opset, .out_base = "unsq"};
	for (int i = 0; i < S->nelem; i++) {
		in[i] = S->elem[i];
		if (!newax)
			continue;
		int r = in[i]->shape.rank + 1;
		int64_t ax = axis < 0 ? axis + r : axis;
		ir_node *u = ir_build_node(&U, g, OP_UNSQUEEZE, 2, NULL, 1);
		u->in[0] = in[i];
		u->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &ax);
		ir_build_out(&U, u, 0, in[i]->dtype);
		rl_push(g->A, l, u);
		in[i] = u->out[0];
	}
	n->op = OP_CONCAT;
	n->nin = S->nelem;
	n->in = in;
	n->nattrs = 0;
	ir_attr_set_int(n, "axis", axis);
	rl_push(g->A, l, n);
	return 0;
}

static int is_handled(ir_op op)
{
	return onnx_is_seq_op(op) || op == OP_IF || op == OP_OPTIONAL || op == OP_OPTHAS || op == OP_OPTGET ||
	       op == OP_NOT || op == OP_SEQMAP;
}

static int node_reads_resolved(const ir_node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (is_resolved(n->in[k]))
			return 1;
	return 0;
}

int seq_claims(const ir_node *n)
{
	if (loops_claims(n))
		return 0;       /* a Loop reading sequences: loops unrolls it */
	if (n->op == OP_NOT)    /* a run-time Not: an element-wise node like any other */
		return n->nin > 0 && n->in[0] && ir_value_is_const(n->in[0]) && n->in[0]->data;
	return is_handled(n->op) || node_reads_resolved(n);
}

/* Not of a constant bool: folded. */
static int fold_not(ir_graph *g, ir_node *n, diag *D, ir_value *S, ir_value *o)
{
	if (!S || S->dtype != DT_BOOL || !ir_value_is_const(S) || !S->data) {
		diag_node(D, n, "Not of '%s', which is not a compile-time constant bool; cellc evaluates "
			  "Not only at compile time (in conditions of If and Loop)", S ? S->name : "?");
		return -1;
	}
	if (o) {
		int64_t cnt = ir_shape_const_numel(&S->shape);
		uint8_t *d = arena_alloc(g->A, (size_t)(cnt ? cnt : 1));
		for (int64_t i = 0; i < cnt; i++)
			d[i] = !((const uint8_t *)S->data)[i];
		make_const(g, o, DT_BOOL, &S->shape, d);
	}
	return 0;
}

/* SequenceConstruct: the list of its inputs. */
static int seq_construct(ir_graph *g, ir_node *n, diag *D, ir_value *o)
{
	ir_value **e = arena_array(g->A, (size_t)n->nin, sizeof *e);
	for (int k = 0; k < n->nin; k++) {
		if (n->in[k]->seq != IR_TENSOR || n->in[k]->dtype != n->in[0]->dtype) {
			diag_node(D, n, "input %d ('%s') is not a tensor of the first input's type", k,
				  n->in[k]->name);
			return -1;
		}
		e[k] = n->in[k];
	}
	set_list(o, IR_SEQ, n->nin, e, n->in[0]->dtype);
	return 0;
}

/* SequenceInsert: the list with the tensor inserted (at the end by default). */
static int seq_insert(ir_graph *g, ir_node *n, diag *D, ir_value *S, ir_value *o)
{
	int64_t pos;
	ir_value *t = n->in[1];
	if (!is_resolved(S) || S->seq != IR_SEQ || t->seq != IR_TENSOR) {
		diag_node(D, n, "SequenceInsert wants a sequence and a tensor");
		return -1;
	}
	pos = S->nelem;
	if (n->nin > 2 && n->in[2] && seq_pos(n, D, S, n->in[2], 1, &pos))
		return -1;
	if (S->nelem && t->dtype != S->elem[0]->dtype) {
		diag_node(D, n, "inserts a %s tensor into a sequence of %s", ir_dtype_name(t->dtype),
			  ir_dtype_name(S->elem[0]->dtype));
		return -1;
	}
	if (!unroll_charge(g, n, D, (S->nelem + 1) / 64, "inserting into a sequence that long"))
		return -1;
	ir_value **e = arena_array(g->A, (size_t)S->nelem + 1, sizeof *e);
	for (int i = 0, j = 0; i <= S->nelem; i++)
		e[i] = i == pos ? t : S->elem[j++];
	set_list(o, IR_SEQ, S->nelem + 1, e, t->dtype);
	return 0;
}

/* SequenceErase: the list without one element (the last by default). */
static int seq_erase(ir_graph *g, ir_node *n, diag *D, ir_value *S, ir_value *o)
{
	int64_t pos;
	if (!is_resolved(S) || S->seq != IR_SEQ) {
		diag_node(D, n, "input '%s' is not a sequence", S ? S->name : "?");
		return -1;
	}
	if (S->nelem == 0) {
		diag_node(D, n, "SequenceErase of an empty sequence");
		return -1;
	}
	pos = S->nelem - 1;
	if (n->nin > 1 && n->in[1] && seq_pos(n, D, S, n->in[1], 0, &pos))
		return -1;
	if (!unroll_charge(g, n, D, S->nelem / 64, "erasing from a sequence that long"))
		return -1;
	ir_value **e = arena_array(g->A, (size_t)S->nelem, sizeof *e);
	for (int i = 0, j = 0; i < S->nelem; i++)
		if (i != pos)
			e[j++] = S->elem[i];
	set_list(o, IR_SEQ, S->nelem - 1, e, S->dtype);
	return 0;
}

/* One node of the sequence operators, If, SequenceMap and the optionals, its
 * operands resolved: its result resolved, or nodes appended to l that
 * replace it. One case per operator. */
static int seq_rewrite(ir_graph *g, ir_node *n, diag *D, rlist *l, ir_value *S, ir_value *o)
{
	int64_t pos, v;
	ir_shape scalar = {.rank = 0};
	switch (n->op) {
	case OP_IF:
		return inline_if(g, n, D, l) ? -1 : 0;
	case OP_SEQMAP:
		return map_seq(g, n, D, l) ? -1 : 0;
	case OP_NOT:
		return fold_not(g, n, D, S, o) ? -1 : 0;
	case OP_SEQCONSTRUCT:
		return seq_construct(g, n, D, o) ? -1 : 0;
	case OP_SEQINSERT:
		return seq_insert(g, n, D, S, o) ? -1 : 0;
	case OP_SEQERASE:
		return seq_erase(g, n, D, S, o) ? -1 : 0;
	case OP_SEQAT:
		if (seq_pos(n, D, S, n->in[1], 0, &pos))
			return -1;
		n->op = OP_IDENTITY;
		n->nin = 1;
		n->in[0] = S->elem[pos];
		rl_push(g->A, l, n);
		break;
	case OP_SEQLEN:
		v = S->nelem;
		make_const(g, o, DT_I64, &scalar, &v);
		break;
	case OP_SEQCONCAT:
		return concat_seq(g, n, D, l, S) ? -1 : 0;
	case OP_OPTIONAL:
		if (S) {
			ir_value **e = arena_array(g->A, 1, sizeof *e);
			e[0] = S;
			set_list(o, IR_OPT, 1, e, S->dtype);
		} else {
			set_list(o, IR_OPT, 0, NULL, DT_F32);
		}
		break;
	case OP_OPTHAS: {
		uint8_t has = S && (S->seq != IR_OPT || S->nelem > 0);
		make_const(g, o, DT_BOOL, &scalar, &has);
		break;
	}
	case OP_OPTGET:
		if (S->seq == IR_OPT && S->nelem == 0) {
			diag_node(D, n, "OptionalGetElement of '%s', which is empty", S->name);
			return -1;
		}
		bind_result(g, l, n, o, S->seq == IR_OPT ? S->elem[0] : S);
		break;
	case OP_IDENTITY:
		copy_resolution(o, S);
		break;
	default:
		UNREACHABLE();
	}
	return 0;
}

int onnx_seq_node(ir_graph *g, ir_node *n, diag *D, ir_node ***rep, int *count)
{
	int reads_seq = node_reads_resolved(n), unresolved = 0;
	for (int k = 0; k < n->nin; k++)
		unresolved |= n->in[k] && n->in[k]->seq != IR_TENSOR && !n->in[k]->resolved;
	if (!seq_claims(n))
		return 0;
	if (!is_handled(n->op) && !(reads_seq && n->op == OP_IDENTITY)) {
		for (int k = 0; k < n->nin; k++)
			if (is_resolved(n->in[k])) {
				diag_node(D, n, "input %d ('%s') is a %s; %s takes tensors", k, n->in[k]->name,
					  kind_word(n->in[k]), ir_op_name(n->op));
				return -1;
			}
	}
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->seq == IR_TENSOR &&
		    (n->in[k]->shape.rank < 0 || n->in[k]->dtype == DT_UNDEF))
			return -1;      /* its producer failed: reported there */
	if ((n->op == OP_SEQAT || n->op == OP_SEQLEN) && onnx_split_view(n->in[0], NULL, NULL)) {
		rlist l = {0};
		split_read(g, n, &l);
		*rep = l.v;
		*count = l.n;
		return 1;
	}
	if (n->op == OP_SPLITTOSEQ) {
		rlist l = {0};
		if (n->out[0] && onnx_split_view(n->out[0], NULL, NULL))
			return 0;       /* a view, kept until its readers are rewritten */
		int r = split_seq(g, n, D, &l);
		if (r != 0)
			return r < 0 ? -1 : 0;
		*rep = l.v ? l.v : arena_array(g->A, 1, sizeof(ir_node *));
		*count = l.n;
		return 1;
	}
	if (n->op == OP_SEQEMPTY) {
		/* the empty list; the node stays as its producer, which marks
		 * the start of a Loop's accumulation (onnx_loop_needs_unroll,
		 * expand_loop), until it is dead */
		if (n->out[0] && n->out[0]->resolved)
			return 0;
		ir_dtype dt = (ir_dtype)ir_attr_int(n, "dtype", DT_F32);
		set_list(n->out[0], IR_SEQ, 0, NULL, dt);
		*rep = arena_array(g->A, 1, sizeof **rep);
		(*rep)[0] = n;
		*count = 1;
		return 1;
	}
	/* an operand still unresolved: a Loop's accumulation (lower_loop.c) */
	if (onnx_is_seq_op(n->op) && unresolved)
		return 0;
	rlist l = {0};
	ir_value *S = n->nin > 0 ? n->in[0] : NULL, *o = n->out[0];
	for (int k = 0; k < n->nin && unresolved; k++)
		if (n->in[k] && n->in[k]->seq != IR_TENSOR && !n->in[k]->resolved) {
			diag_node(D, n, "input '%s' is a %s not known at compile time; cellc resolves sequences "
				  "and optionals at compile time", n->in[k]->name, kind_word(n->in[k]));
			return -1;
		}
	if ((n->op == OP_SEQAT || n->op == OP_SEQLEN || n->op == OP_SEQCONCAT) && S->seq != IR_SEQ) {
		diag_node(D, n, "input '%s' is not a sequence", S->name);
		return -1;
	}
	if (seq_rewrite(g, n, D, &l, S, o))
		return -1;
	*rep = l.v;
	*count = l.n;
	return 1;
}

/* ---- Loop unrolling ----------------------------------------------------------- */

/* Whether g (or a graph in it) reads a resolved sequence or optional. */
static int reads_resolved(const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (is_resolved(n->in[k]))
				return 1;
		if (n->body && reads_resolved(n->body))
			return 1;
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH && reads_resolved(n->attrs[a].g))
				return 1;
	}
	return 0;
}

int onnx_loop_needs_unroll(const ir_node *n)
{
	int64_t T;
	for (int k = 2; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		if (!is_resolved(v))
			continue;
		if (!(v->producer && v->producer->op == OP_SEQEMPTY))
			return 1;
		/* an accumulation that is a graph output: a list of tensors, when
		 * the loop can be unrolled (else lower_loop.c says why not) */
		if (k - 2 < n->nout && n->out[k - 2] && n->out[k - 2]->is_output && const_scalar(n->in[0], &T) &&
		    T <= ONNX_UNROLL_MAX)
			return 1;
	}
	/* per-step outputs other than float32 (the int32 values of Range's
	 * function body): a recurrence's are float32, so a loop of a constant
	 * trip count within ONNX_UNROLL_MAX and a constant initial condition is
	 * unrolled; the iterations' conditions must then fold too */
	int64_t c = 1;
	if (n->body && n->nin >= 2 && n->in[0] && const_scalar(n->in[0], &T) && T <= ONNX_UNROLL_MAX &&
	    (!n->in[1] || const_scalar(n->in[1], &c)))
		for (int j = 1 + (n->nin - 2); j < n->body->noutputs; j++) {
			ir_dtype dt = n->body->outputs[j]->dtype;
			if (dt != DT_F32 && dt != DT_UNDEF)
				return 1;
		}
	/* a body indexing a compile-time sequence (SequenceMap's expansion) */
	return n->body && reads_resolved(n->body);
}

/* Moves step graph s's values into g (s's nodes are pushed by the caller). */
static void adopt(ir_graph *g, ir_graph *s)
{
	for (int i = 0; i < s->nvalues; i++) {
		ir_value *v = s->values[i];
		if (g->nvalues == g->capvalues) {
			int cap = g->capvalues ? 2 * g->capvalues : 64;
			g->values = arena_grow(g->A, g->values, (size_t)g->nvalues, (size_t)cap, sizeof *g->values);
			g->capvalues = cap;
		}
		v->graph = g;
		v->id = g->nvalues;
		g->values[g->nvalues++] = v;
	}
	for (int i = 0; i < s->nnodes; i++) {
		ir_node *n = s->nodes[i];
		n->graph = g;
		if (n->body)
			n->body->parent = g;
		for (int a = 0; a < n->nattrs; a++)
			if (n->attrs[a].kind == ATTR_GRAPH)
				n->attrs[a].g->parent = g;
	}
	s->nvalues = 0;
}

/* An unrolled Loop of 2 or more iterations is a fallback (the code grows
 * with the trip count) unless pass_reroll rolls its iterations back: it is
 * recorded on the root, and its nodes are tagged so that pass_reroll can
 * tell (ir_node.unrolled). */
static void record_unrolled(ir_graph *g, const ir_node *loop, ir_node **nodes, int nn, int64_t steps,
			    int64_t per_step)
{
	if (steps < 2)
		return;
	ir_graph *root = ir_root(g);
	ir_unrolled u = {.why = WHY_ONNX_LOOP, .seq = loop->name, .steps = (int)steps, .nodes = nn,
			 .per_step = (int)per_step, .step = -1, .vs = -1, .op = -1};
	int before = root->nunrolled;
	ir_unrolled_add(root, &u);
	if (root->nunrolled == before)
		return;         /* the same Loop recorded already (a dump compiled again) */
	for (int i = 0; i < nn; i++)
		if (!nodes[i]->unrolled)
			nodes[i]->unrolled = root->nunrolled;
}

/* The trip count of a Loop unrolled: a constant of at most ONNX_UNROLL_MAX
 * (0 when the initial condition is false), within the unrolling budget. */
static int unroll_trip_count(ir_graph *g, ir_node *n, diag *D, int K, int64_t *trip)
{
	ir_graph *b = n->body;
	int64_t T = 0, c = 1;
	if (!n->in[0] || !const_scalar(n->in[0], &T)) {
		diag_node(D, n, "carries a sequence and has no constant trip count M; cellc unrolls such loops "
			  "and needs M as a compile-time constant (a graph input can be bound with --bind)");
		return -1;
	}
	if (n->in[1] && !const_scalar(n->in[1], &c)) {
		diag_node(D, n, "Loop with a data-dependent condition: the initial condition '%s' is not a "
			  "compile-time constant", n->in[1]->name);
		return -1;
	}
	if (T > ONNX_UNROLL_MAX) {
		diag_node(D, n, "carries or indexes sequences, which "
			  "cellc compiles by unrolling the loop; it runs %lld iterations, more than the %d cellc "
			  "unrolls", (long long)T, (int)ONNX_UNROLL_MAX);
		return -1;
	}
	if (!c)
		T = 0;
	if (!unroll_charge(g, n, D, T * count_nodes(b), arena_printf(g->A, "unrolling %lld iterations of a "
								  "body of %lld nodes", (long long)T,
								  (long long)count_nodes(b))))
		return -1;
	if (K && T < 1) {
		diag_node(D, n, "has scan outputs but runs no iteration: their shape is unknown");
		return -1;
	}
	*trip = T;
	return 0;
}

/* The iterations, one copy of the body each, until the trip count or a false
 * condition: their nodes appended to l, the carried values left in cur, the
 * per-step outputs of iteration i in ys[j][i]; *steps, how many ran. */
static int unroll_iterations(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int64_t T,
			     ir_value **cur, ir_value ***ys, rlist *l, int64_t *steps)
{
	ir_graph *b = n->body;
	int N = n->nin - 2, K = b->noutputs - 1 - N;
	int64_t c = 1;
	ir_shape scalar = {.rank = 0};
	uint8_t yes = 1;
	*steps = 0;
	for (int64_t i = 0; i < T; i++) {
		ir_graph *s = ir_graph_new(g->A, g, ir_unique_name(g, "unrolled"));
		vmap m = {0};
		vm_put(g->A, &m, b->inputs[0], ir_const_new(s, ir_unique_name(s, "iter"), DT_I64, &scalar, &i));
		vm_put(g->A, &m, b->inputs[1], ir_const_new(s, ir_unique_name(s, "cond"), DT_BOOL, &scalar, &yes));
		for (int k = 0; k < N; k++)
			vm_put(g->A, &m, b->inputs[2 + k], cur[k]);
		copy_nodes(&m, b, b, s, NULL);
		ir_value *cond = ref(&m, b, s, b->outputs[0]);
		if (infer(cx, s))
			return -1;
		if (!const_scalar(cond, &c)) {
			diag_node(D, n, "Loop with a data-dependent condition: the body's condition output is not "
				  "a compile-time constant in iteration %lld; cellc unrolls loops that carry "
				  "sequences (or have per-step outputs other than float32) only when their "
				  "iterations are known at compile time", (long long)i);
			return -1;
		}
		for (int k = 0; k < N; k++)
			cur[k] = ref(&m, b, s, b->outputs[1 + k]);
		for (int j = 0; j < K; j++)
			ys[j][i] = ref(&m, b, s, b->outputs[1 + N + j]);
		adopt(g, s);
		for (int k = 0; k < s->nnodes; k++)
			rl_push(g->A, l, s->nodes[k]);
		*steps = i + 1;
		if (!c)
			break;
	}
	return 0;
}

/* The scan outputs: each the Concat of its per-step values, unsqueezed. */
static int stack_scan_outputs(ir_graph *g, ir_node *n, diag *D, int N, int K, ir_value ***ys, int64_t steps,
			      rlist *l)
{
	for (int j = 0; j < K && N + j < n->nout; j++) {
		ir_value *out = n->out[N + j];
		if (!out)
			continue;
		ir_build C = {.origin = n->name, .out_base = "unsq"};
		ir_node *cat = ir_build_node(&C, g, OP_CONCAT, (int)steps, NULL, 1);
		for (int64_t i = 0; i < steps; i++) {
			ir_value *y = ys[j][i];
			int64_t zero = 0;
			if (y->seq != IR_TENSOR) {
				diag_node(D, n, "scan output %d is a %s; cellc stacks tensors only", j, kind_word(y));
				return -1;
			}
			ir_node *u = ir_build_node(&C, g, OP_UNSQUEEZE, 2, NULL, 1);
			u->in[0] = y;
			u->in[1] = ir_const_i64(g, ir_unique_name(g, "axes"), 1, &zero);
			ir_build_out(&C, u, 0, y->dtype);
			rl_push(g->A, l, u);
			cat->in[i] = u->out[0];
		}
		ir_attr_set_int(cat, "axis", 0);
		cat->out[0] = out;
		out->producer = cat;
		rl_push(g->A, l, cat);
	}
	return 0;
}

ir_node **onnx_loop_unroll(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int *count)
{
	ir_graph *b = n->body;
	int N = n->nin - 2;
	if (N < 0 || b->ninputs != N + 2 || b->noutputs < N + 1) {
		diag_node(D, n, "body has %d inputs and %d outputs; a Loop with %d carried values needs %d inputs "
			  "and at least %d outputs", b->ninputs, b->noutputs, N, N + 2, N + 1);
		return NULL;
	}
	int K = b->noutputs - 1 - N;
	int64_t T;
	if (unroll_trip_count(g, n, D, K, &T))
		return NULL;
	ir_value **cur = arena_array(g->A, (size_t)N + 1, sizeof *cur);
	for (int k = 0; k < N; k++) {
		cur[k] = n->in[2 + k];
		if (!cur[k]) {
			diag_node(D, n, "carried value %d has no initial value", k);
			return NULL;
		}
	}
	ir_value ***ys = arena_array(g->A, (size_t)K + 1, sizeof *ys);
	for (int j = 0; j < K; j++)
		ys[j] = arena_array(g->A, (size_t)T + 1, sizeof **ys);
	rlist l = {0};
	int64_t steps;
	if (unroll_iterations(g, n, D, infer, cx, T, cur, ys, &l, &steps))
		return NULL;
	for (int k = 0; k < N && k < n->nout; k++)
		bind_result(g, &l, n, n->out[k], cur[k]);
	if (stack_scan_outputs(g, n, D, N, K, ys, steps, &l))
		return NULL;
	record_unrolled(g, n, l.v, l.n, steps, count_nodes(b));
	*count = l.n;
	return l.v ? l.v : arena_array(g->A, 1, sizeof(ir_node *));
}

/* Whether the inputs of n, and the values of g its bodies and branches
 * read, are settled (resolve_settled). */
static int graph_reads_settled(const ir_graph *g, const ir_graph *b, const infer_set *kept);

static int value_settled(const ir_graph *g, const ir_value *v, const infer_set *kept)
{
	if (!v || v->graph != g)
		return 1;       /* an enclosing graph's: settled before this body was reached */
	if (v->seq == IR_TENSOR)
		return v->shape.rank >= 0 && v->dtype != DT_UNDEF;
	return v->resolved || !v->producer || infer_set_has(kept, v->producer);
}

static int node_reads_settled(const ir_graph *g, const ir_node *n, const infer_set *kept)
{
	for (int k = 0; k < n->nin; k++)
		if (!value_settled(g, n->in[k], kept))
			return 0;
	if (n->body && !graph_reads_settled(g, n->body, kept))
		return 0;
	for (int a = 0; a < n->nattrs; a++)
		if (n->attrs[a].kind == ATTR_GRAPH && n->attrs[a].g &&
		    !graph_reads_settled(g, n->attrs[a].g, kept))
			return 0;
	return 1;
}

static int graph_reads_settled(const ir_graph *g, const ir_graph *b, const infer_set *kept)
{
	for (int i = 0; i < b->nnodes; i++)
		if (!node_reads_settled(g, b->nodes[i], kept))
			return 0;
	return 1;
}

int resolve_settled(const ir_graph *g, const ir_node *n, const infer_set *kept)
{
	return node_reads_settled(g, n, kept);
}

/* One walk of g (and of its recurrences' bodies): each sequence, optional
 * or If node whose inputs are settled is rewritten, or kept for loops (a
 * Loop's accumulation) and for the finish (a SplitToSequence view, or an
 * error). */
static int seq_walk(ir_graph *g, diag *D, int *changed)
{
	infer_set kept;
	infer_set_init(&kept);
	rlist keep = {0};
	int errs = 0;
	for (int i = 0; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n->op == OP_RECURRENCE && n->body)
			errs += seq_walk(n->body, D, changed);
		if (!seq_claims(n) || !resolve_settled(g, n, &kept)) {
			rl_push(g->A, &keep, n);
			continue;
		}
		ir_node **rep = NULL;
		int cnt = 0, r = onnx_seq_node(g, n, D, &rep, &cnt);
		if (r < 0) {
			/* reported: what reads its outputs waits for ever */
			errs++;
			for (int k = 0; k < n->nout; k++)
				if (n->out[k] && n->out[k]->seq == IR_TENSOR)
					n->out[k]->shape.rank = -1;
			rl_push(g->A, &keep, n);
		} else if (r == 1) {
			for (int k = 0; k < cnt; k++)
				rl_push(g->A, &keep, rep[k]);
			*changed = 1;
		} else {
			/* left in place: a Loop's accumulation (loops takes it) or
			 * reported by the finish */
			infer_set_add(&kept, n);
			rl_push(g->A, &keep, n);
		}
	}
	infer_set_free(&kept);
	ir_node *none[1] = {NULL};
	ir_set_nodes(g, keep.n ? keep.v : none, keep.n);
	ir_recount(g);
	return errs;
}

int pass_seq(ir_graph *g, diag *D, int *changed)
{
	*changed = 0;
	int errs0 = D->nerrors, errs = seq_walk(g, D, changed);
	return errs && D->nerrors == errs0 ? errs : D->nerrors - errs0;
}

int seq_finish(ir_graph *g, diag *D)
{
	int errs = onnx_seq_outputs(g, D);
	ir_recount(g);
	return errs ? errs : onnx_seq_leftovers(g, D);
}

/* ---- graph outputs --------------------------------------------------------------- */

int onnx_seq_outputs(ir_graph *g, diag *D)
{
	int errs = 0, total = 0, any = 0;
	for (int i = 0; i < g->noutputs; i++) {
		ir_value *v = g->outputs[i];
		any |= v->seq != IR_TENSOR;
		if (v->seq != IR_TENSOR && !v->resolved) {
			diag_error(D, "graph output '%s' is a %s that cellc could not resolve at compile time",
				   v->name, kind_word(v));
			errs++;
		}
	}
	if (!any || errs)
		return errs;
	enum { MAXFLAT = 4096 };
	ir_value **outs = arena_array(g->A, MAXFLAT, sizeof *outs);
	ir_value **vals = arena_array(g->A, MAXFLAT, sizeof *vals);
	const char **names = arena_array(g->A, MAXFLAT, sizeof *names);
	for (int i = 0; i < g->noutputs; i++) {
		ir_value *v = g->outputs[i];
		if (v->seq == IR_TENSOR) {
			if (total == MAXFLAT)
				break;
			outs[total++] = v;
			continue;
		}
		int cnt = onnx_seq_flatten(g->A, v, v->name, vals, names, MAXFLAT - total);
		if (cnt < 0) {
			diag_error(D, "graph output '%s' holds sequences of sequences or more than %d tensors, "
				   "which cellc does not emit", v->name, (int)MAXFLAT);
			return 1;
		}
		v->is_output = 0;
		v->name = ir_unique_name(g, v->name);   /* its tensors take the names */
		for (int e = 0; e < cnt; e++) {
			ir_value *x = vals[e], *o;
			if (ir_find_value(g, names[e])) {
				diag_error(D, "graph output '%s': its tensor %d would be the output '%s', a name the "
					   "model already uses", v->name, e, names[e]);
				return 1;
			}
			if (x->kind == VAL_CONST && x->data) {
				o = ir_const_new(g, names[e], x->dtype, &x->shape, x->data);
			} else {
				ir_node *id = ir_node_new(g, OP_IDENTITY, ir_unique_name(g, "Identity"), 1, 1);
				o = ir_value_new(g, names[e], VAL_TEMP, x->dtype);
				o->shape = x->shape;
				id->in[0] = x;
				id->out[0] = o;
				o->producer = id;
				ir_append(g, id);
				if (infer_node(g, id, D))
					return 1;
			}
			o->is_output = 1;
			outs[total++] = o;
		}
	}
	if (total == 0) {
		diag_error(D, "every graph output is an empty sequence or optional: the model computes nothing");
		return 1;
	}
	g->outputs = outs;
	g->noutputs = total;
	return 0;
}
