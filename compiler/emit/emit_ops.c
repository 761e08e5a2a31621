/* emit_ops.c: C for the nodes of the root graph other than recurrences.
 *
 * Element-wise nodes (and Cast and Expand, which are element-wise copies)
 * become typed loops printed in place: one loop nest over the output shape,
 * with every input indexed through its own strides, zero on broadcast axes.
 * Adjacent axes on which every operand behaves alike are merged first, so
 * equal shapes give a single flat loop and a bias row gives two loops.  A
 * fusion group (pass_fuse) whose nodes share one output shape is one loop
 * whose intermediate values are locals; a value is stored only when it has
 * storage (a workspace slot from pass_plan, or a graph output).
 *
 * Data movement (transpose, slice, split, concat, gather) and softmax call
 * libcellrt's generic kernels (runtime/rt_ops.c) with element sizes; Gemm
 * and MatMul call rt_sgemm.  Shape-determining inputs are constants here
 * (pass_infer), and every dimension prints through emit_dim, so one emitted
 * kernel serves all values of the dimension symbols.
 *
 * Legend: M, N, K matrix sizes; outer/n/inner the three-way split of a
 * tensor around one axis.
 */
#include "elem.h"
#include "emit.h"
#include "infer.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

static const char *ctype(const ir_value *v) { return ir_dtype_ctype(v->dtype); }

static int is_float(ir_dtype t) { return t == DT_F32 || t == DT_F64; }

static int is_unsigned(ir_dtype t)
{
	return t == DT_U8 || t == DT_U16 || t == DT_U32 || t == DT_U64 || t == DT_BOOL;
}

/* e, parenthesised when it is a sum (to be a factor). */
static const char *factor(emit_ctx *E, const char *e)
{
	return strchr(e, '+') || strchr(e, '-') ? arena_printf(E->A, "(%s)", e) : e;
}

/* a * b as a C expression, with constant factors folded. */
static const char *mul_str(emit_ctx *E, const char *a, const char *b)
{
	if (!strcmp(a, "1"))
		return b;
	if (!strcmp(b, "1"))
		return a;
	if (!strcmp(a, "0") || !strcmp(b, "0"))
		return "0";
	return arena_printf(E->A, "%s * %s", a, b);
}

/* Product of dims [from, to) of s, as a monomial. */
static ir_dim dims_prod(const ir_shape *s, int from, int to)
{
	ir_dim p = ir_dim_const(1);
	for (int i = from; i < to; i++)
		p = ir_dim_mul(p, s->d[i]);
	return p;
}

/* A sum of monomials printed as one C expression: constants folded. */
typedef struct dsum {
	int64_t k;              /* constant part */
	const char *terms;      /* symbolic part, or NULL */
} dsum;

static void dsum_add(emit_ctx *E, dsum *s, ir_dim d)
{
	if (ir_dim_is_const(d)) {
		s->k += d.k;
		return;
	}
	const char *t = emit_dim(E, d);
	s->terms = s->terms ? arena_printf(E->A, "%s + %s", s->terms, t) : t;
}

static const char *dsum_str(emit_ctx *E, const dsum *s)
{
	if (!s->terms)
		return arena_printf(E->A, "%lld", (long long)s->k);
	if (s->k == 0)
		return arena_printf(E->A, "(%s)", s->terms);
	return arena_printf(E->A, "(%s + %lld)", s->terms, (long long)s->k);
}

/* "{d0, d1, ...}" for an initialiser. */
static const char *dims_init(emit_ctx *E, const ir_shape *s)
{
	char *r = "";
	for (int i = 0; i < s->rank; i++)
		r = arena_printf(E->A, "%s%s%s", r, i ? ", " : "", emit_dim(E, s->d[i]));
	return arena_printf(E->A, "{%s}", s->rank ? r : "0");
}

static const char *shape_str(emit_ctx *E, const ir_value *v)
{
	return ir_shape_str(E->A, E->g, &v->shape);
}

/* Text safe in a comment. */
static const char *safe(emit_ctx *E, const char *s)
{
	if (!s)
		return "";
	char *r = arena_strdup(E->A, s);
	for (char *p = r; *p; p++)
		if ((p[0] == '*' && p[1] == '/') || (p[0] == '/' && p[1] == '*') || *p == '\n')
			*p = '_';
	return r;
}

/* The comment before a kernel: op, node name, provenance, shapes. */
static void node_comment(emit_ctx *E, const ir_node *n, const char *what)
{
	char *ins = "";
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->shape.rank >= 0)
			ins = arena_printf(E->A, "%s%s%s", ins, *ins ? ", " : "", shape_str(E, n->in[k]));
	char *outs = "";
	for (int k = 0; k < n->nout; k++)
		if (n->out[k])
			outs = arena_printf(E->A, "%s%s%s", outs, *outs ? ", " : "", shape_str(E, n->out[k]));
	/* the provenance only when it says more than the node's name */
	const char *from = n->origin && strcmp(n->origin, n->name) ? n->origin : NULL;
	ew_line(E->w, "/* %s '%s'%s%s: %s -> %s%s%s */", ir_op_name(n->op), safe(E, n->name),
		from ? " from " : "", safe(E, from), ins, outs, what ? "; " : "", what ? what : "");
}

/* True when v has its own storage the group must write. */
static int is_stored(emit_ctx *E, const ir_value *v)
{
	if (ir_storage(v) != v)
		return 0;
	return (v->is_output && v->graph == E->g) || v->slot >= 0 || ir_output_backing(v);
}

static int axis_of(int64_t a, int rank)
{
	return (int)(a < 0 ? a + rank : a);
}

/* ---- loop nests with broadcasting ----------------------------------------- */

/* A loop nest over a domain (the output shape), with the index expression of
 * every operand: strides over the merged axes, zero where it broadcasts. */
typedef struct loop {
	int naxes;                      /* merged axes; 0: one iteration */
	const char *ext[IR_MAX_RANK];   /* extent of each merged axis */
	const char *var[IR_MAX_RANK];   /* index variable */
	const char *oidx;               /* flat index into the domain */
	int nops;
	const char **idx;               /* [nops] index into each operand */
} loop;

/* Plans the nest; 0 if some operand does not broadcast to dom. */
static int loop_plan(emit_ctx *E, loop *L, const ir_shape *dom, const ir_shape *const *ops, int nops)
{
	int r = dom->rank;
	/* pat[m][j]: operand j broadcasts along merged axis m */
	char *pat[IR_MAX_RANK];
	ir_dim ext[IR_MAX_RANK];
	int kept = 0;
	memset(L, 0, sizeof *L);
	L->nops = nops;
	L->idx = arena_array(E->A, (size_t)nops + 1, sizeof *L->idx);
	char *p = arena_alloc(E->A, (size_t)nops + 1);
	for (int a = 0; a < r; a++) {
		ir_dim D = dom->d[a];
		for (int j = 0; j < nops; j++) {
			int off = r - ops[j]->rank;
			if (off < 0)
				return 0;
			ir_dim dj = a < off ? ir_dim_const(1) : ops[j]->d[a - off];
			p[j] = !ir_dim_eq(dj, D);
			if (p[j] && !(ir_dim_is_const(dj) && dj.k == 1))
				return 0;
		}
		if (ir_dim_is_const(D) && D.k == 1)
			continue;       /* every operand has 1 here too */
		if (kept > 0 && !memcmp(pat[kept - 1], p, (size_t)nops)) {
			ext[kept - 1] = ir_dim_mul(ext[kept - 1], D);
			continue;
		}
		pat[kept] = arena_alloc(E->A, (size_t)nops + 1);
		memcpy(pat[kept], p, (size_t)nops);
		ext[kept++] = D;
	}
	L->naxes = kept;
	for (int m = 0; m < kept; m++) {
		L->ext[m] = emit_dim(E, ext[m]);
		L->var[m] = kept == 1 ? "i" : arena_printf(E->A, "i%d", m);
	}
	for (int j = -1; j < nops; j++) {
		/* j == -1: the domain itself */
		char *s = NULL;
		ir_dim stride = ir_dim_const(1);
		for (int m = kept - 1; m >= 0; m--) {
			if (j >= 0 && pat[m][j])
				continue;
			const char *term = mul_str(E, L->var[m], emit_dim(E, stride));
			s = s ? arena_printf(E->A, "%s + %s", term, s) : (char *)term;
			stride = ir_dim_mul(stride, ext[m]);
		}
		if (j < 0)
			L->oidx = s ? s : "0";
		else
			L->idx[j] = s ? s : "0";
	}
	return 1;
}

static void loop_open(emit_ctx *E, const loop *L)
{
	if (L->naxes == 0)
		ew_open(E->w, "%s", "");
	for (int m = 0; m < L->naxes; m++)
		ew_open(E->w, "for (int64_t %s = 0; %s < %s; %s++)", L->var[m], L->var[m], L->ext[m], L->var[m]);
}

static void loop_close(emit_ctx *E, const loop *L)
{
	for (int m = 0; m < (L->naxes ? L->naxes : 1); m++)
		ew_close(E->w, "");
}

/* ---- element-wise expressions -------------------------------------------- */

/* f(a) for a float math function: expf for f32, exp for f64. */
static const char *fcall(emit_ctx *E, ir_dtype dt, const char *fn, const char *a)
{
	return arena_printf(E->A, "%s%s(%s)", fn, dt == DT_F32 ? "f" : "", a);
}

#define F(v) emit_float(E, (v), dt)

/* The C text of expression e of elem.def for node n applied to argument
 * expressions a[]: X Y Z the operands, T the output's C type, an attribute's
 * token its value and, for float outputs, numbers in the output's type and
 * f(..) as the math function of that type (expf for f32). */
static const char *elem_text(emit_ctx *E, const ir_node *n, const char *e, const char *const *a)
{
	ir_dtype dt = n->out[0]->dtype;
	int fl = is_float(dt);
	const char *r = "";
	while (*e) {
		const char *s = e;
		const char *t = NULL;
		if (isalpha((unsigned char)*e) || *e == '_') {
			while (isalnum((unsigned char)*e) || *e == '_')
				e++;
			int len = (int)(e - s);
			const char *p = e;
			while (*p == ' ')
				p++;
			const elem_attr *at = NULL;
			const elem_row *row = elem_row_of(n->op);
			for (int k = 0; k < ELEM_MAX_ATTRS && row->attrs[k].name; k++)
				if ((int)strlen(row->attrs[k].token) == len && !strncmp(row->attrs[k].token, s, (size_t)len))
					at = &row->attrs[k];
			if (len == 1 && *s >= 'X' && *s <= 'Z')
				t = a[*s - 'X'];
			else if (len == 1 && *s == 'T')
				t = ctype(n->out[0]);
			else if (at)
				t = F(ir_attr_float(n, at->name, (float)at->def));
			else if (*p == '(' && dt == DT_F32)
				t = arena_printf(E->A, "%.*sf", len, s);
		} else if (fl && (isdigit((unsigned char)*e) || (*e == '.' && isdigit((unsigned char)e[1])))) {
			char *end;
			double v = strtod(e, &end);
			e = end;
			t = F(v);
		} else {
			e++;
		}
		r = t ? arena_printf(E->A, "%s%s", r, t) : arena_printf(E->A, "%s%.*s", r, (int)(e - s), s);
	}
	return r;
}

/* The C expression of element-wise node n applied to argument expressions
 * a[] (NULL for omitted optional inputs); NULL after reporting when the op
 * does not exist for the dtype.  The rows of elem.def are printed from their
 * expression; the ELEM_CODE rows (and Cast and Expand) here. */
const char *emit_elem_expr(emit_ctx *E, const ir_node *n, const char *const *a)
{
	ir_dtype dt = n->out[0]->dtype;
	const char *x = a[0];
	int fl = is_float(dt);
	switch (n->op) {
	case OP_EXPAND:
		return x;
	case OP_CAST:
		/* FLOAT16 / BFLOAT16 results stay float32, rounded to the narrower type */
		if (ir_attr_int(n, "to", 0) == DT_F16)
			return arena_printf(E->A, "rt_round_f16(%s)", x);
		if (ir_attr_int(n, "to", 0) == DT_BF16)
			return arena_printf(E->A, "rt_round_bf16((float)%s)", x);
		if (dt == DT_BOOL)
			return arena_printf(E->A, "(%s != 0)", x);
		return arena_printf(E->A, "(%s)%s", ctype(n->out[0]), x);
	case OP_MOD:
		if (fl) {
			/* fmod=1: C fmod; fmod=0 (integers in ONNX): the sign of B */
			const char *r = fcall(E, dt, "fmod", arena_printf(E->A, "%s, %s", a[0], a[1]));
			if (elem_attr_int(n, "fmod"))
				return r;
			return arena_printf(E->A, "rt_fmod_floor%s(%s, %s)", dt == DT_F32 ? "f" : "", a[0], a[1]);
		}
		if (is_unsigned(dt))
			return arena_printf(E->A, "(%s ? %s %% %s : 0)", a[1], a[0], a[1]);
		if (elem_attr_int(n, "fmod"))
			return arena_printf(E->A, "(%s ? %s %% %s : 0)", a[1], a[0], a[1]);
		return arena_printf(E->A, "rt_imod_floor(%s, %s)", a[0], a[1]);
	case OP_CLIP: {
		const char *r = x;
		if (n->nin > 1 && a[1])
			r = arena_printf(E->A, "(%s < %s ? %s : %s)", r, a[1], a[1], r);
		if (n->nin > 2 && a[2])
			r = arena_printf(E->A, "(%s > %s ? %s : %s)", r, a[2], a[2], r);
		return r;
	}
	case OP_MIN: case OP_MAX: {
		/* floats: a NaN operand wins, as numpy's minimum/maximum */
		const char *r = x, *cmp = n->op == OP_MIN ? "<" : ">";
		for (int k = 1; k < n->nin; k++)
			r = fl ? arena_printf(E->A, "(%s != %s || %s %s %s ? %s : %s)", r, r, r, cmp, a[k], r, a[k])
			       : arena_printf(E->A, "(%s %s %s ? %s : %s)", r, cmp, a[k], r, a[k]);
		return r;
	}
	case OP_SUM: case OP_MEAN: {
		const char *r = x;
		for (int k = 1; k < n->nin; k++)
			r = arena_printf(E->A, "%s + %s", r, a[k]);
		if (n->op == OP_MEAN && n->nin > 1)
			r = arena_printf(E->A, "(%s) / %s", r, F(n->nin));
		return r;
	}
	case OP_BITSHIFT:
		/* a shift by the width or more is undefined in C: 0, as numpy */
		return arena_printf(E->A, "(%s < %d ? (%s)(%s %s %s) : 0)", a[1], (int)ir_dtype_size(dt) * 8, ctype(n->out[0]),
				    a[0], ir_attr_string(n, "direction", "")[0] == 'L' ? "<<" : ">>", a[1]);
	case OP_ISINF: {
		int neg = (int)elem_attr_int(n, "detect_negative"), pos = (int)elem_attr_int(n, "detect_positive");
		if (neg && pos)
			return arena_printf(E->A, "(isinf(%s) != 0)", x);
		if (neg || pos)
			return arena_printf(E->A, "(%s == %sINFINITY)", x, neg ? "-" : "");
		return "0";
	}
	case OP_SHRINK: {
		/* any numeric type: the bounds as double, the result converted */
		const char *l = emit_float(E, elem_attr_float(n, "lambd"), DT_F64);
		const char *b = emit_float(E, elem_attr_float(n, "bias"), DT_F64);
		return arena_printf(E->A, "(%s)(%s < -%s ? %s + %s : %s > %s ? %s - %s : 0)", ctype(n->out[0]), x, l,
				    x, b, x, l, x, b);
	}
	default:
		break;
	}
	const elem_row *row = elem_row_of(n->op);
	if (!row || !row->expr) {
		diag_node(E->D, n, "internal error: %s has no expression in elem.def", ir_op_name(n->op));
		return NULL;
	}
	const char *e = elem_expr_for(n->op, fl, is_unsigned(dt));
	if (!e) {
		diag_node(E->D, n, "%s is not available for %s tensors", ir_op_name(n->op), ir_dtype_name(dt));
		return NULL;
	}
	return elem_text(E, n, e, a);
}
#undef F

/* Nodes printed by the element-wise loop machinery. */
static int loopable(const ir_node *n)
{
	return ir_ops[n->op].kind == OPK_ELEM || n->op == OP_CAST || n->op == OP_EXPAND;
}

/* Inputs of node n that are data (Expand's shape input is not). */
static int data_inputs(const ir_node *n)
{
	return n->op == OP_EXPAND ? 1 : n->nin;
}

static int group_index(ir_node **nodes, int count, const ir_value *v)
{
	for (int i = 0; i < count; i++)
		if (nodes[i]->out[0] == v)
			return i;
	return -1;
}

/* One loop for nodes[0..count), all of one output shape; 0 if the inputs do
 * not broadcast to it (the caller then prints the nodes one by one). */
static int emit_fused(emit_ctx *E, ir_node **nodes, int count)
{
	int cap = 1;
	for (int i = 0; i < count; i++)
		cap += nodes[i]->nin;
	const ir_value **ops = arena_array(E->A, (size_t)cap, sizeof *ops);
	const ir_shape **shapes = arena_array(E->A, (size_t)cap, sizeof *shapes);
	int nops = 0;
	const ir_shape *dom = &nodes[0]->out[0]->shape;
	for (int i = 0; i < count; i++) {
		ir_node *n = nodes[i];
		if (n->nout != 1 || !n->out[0] || !ir_shape_eq(&n->out[0]->shape, dom))
			return 0;
		for (int k = 0; k < data_inputs(n); k++) {
			const ir_value *v = n->in[k];
			if (!v || group_index(nodes, i, v) >= 0)
				continue;
			int j;
			for (j = 0; j < nops && ops[j] != v; j++)
				;
			if (j == nops) {
				ops[nops] = v;
				shapes[nops++] = &v->shape;
			}
		}
	}
	int stored = 0;
	for (int i = 0; i < count; i++)
		stored |= is_stored(E, nodes[i]->out[0]);
	if (!stored) {
		/* nothing to write (e.g. a chain of Identity nodes whose values
		 * are all views of one buffer) */
		for (int i = 0; i < count; i++)
			node_comment(E, nodes[i], "result unused: no code");
		return 1;
	}
	loop L;
	if (!loop_plan(E, &L, dom, shapes, nops))
		return 0;

	const char **refs = arena_array(E->A, (size_t)nops + 1, sizeof *refs);
	for (int j = 0; j < nops; j++)
		refs[j] = emit_ref(E, ops[j]);
	if (count == 1) {
		node_comment(E, nodes[0], NULL);
	} else {
		ew_line(E->w, "/* fused group, one loop over %s:", shape_str(E, nodes[0]->out[0]));
		for (int i = 0; i < count; i++) {
			const ir_node *n = nodes[i];
			const char *from = n->origin && strcmp(n->origin, n->name) ? n->origin : NULL;
			ew_line(E->w, " *   t%d = %s '%s'%s%s%s", i, ir_op_name(n->op), safe(E, n->name),
				from ? " from " : "", safe(E, from), i + 1 == count ? " */" : "");
		}
	}
	loop_open(E, &L);
	for (int i = 0; i < count; i++) {
		ir_node *n = nodes[i];
		const char **a = arena_array(E->A, (size_t)n->nin + 1, sizeof *a);
		for (int k = 0; k < data_inputs(n); k++) {
			const ir_value *v = n->in[k];
			if (!v)
				continue;
			int gi = group_index(nodes, i, v);
			if (gi >= 0) {
				a[k] = arena_printf(E->A, "t%d", gi);
				continue;
			}
			int j;
			for (j = 0; ops[j] != v; j++)
				;
			a[k] = arena_printf(E->A, "%s[%s]", refs[j], L.idx[j]);
		}
		const char *e = emit_elem_expr(E, n, a);
		if (!e)
			return 1;
		const ir_value *y = n->out[0];
		int local = count > 1;
		if (local)
			ew_line(E->w, "const %s t%d = %s;", ctype(y), i, e);
		if (is_stored(E, y))
			ew_line(E->w, "%s[%s] = %s;", emit_ref(E, y), L.oidx, local ? arena_printf(E->A, "t%d", i) : e);
	}
	loop_close(E, &L);
	return 1;
}

void emit_group(emit_ctx *E, ir_node **nodes, int count)
{
	if (count > 1 && emit_fused(E, nodes, count))
		return;
	/* One by one, every value then needs storage: pass_fuse only groups
	 * nodes of one output shape, so this is for callers' single nodes. */
	for (int i = 0; i < count; i++) {
		ASSERT(count == 1 || ir_storage(nodes[i]->out[0]) != nodes[i]->out[0] ||
		       is_stored(E, nodes[i]->out[0]));
		emit_node(E, nodes[i]);
	}
}

/* ---- data movement ------------------------------------------------------- */

/* Reshape, Squeeze, Unsqueeze, Flatten, Identity: the same elements. */
static void emit_view(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	if (ir_storage(y) != y) {
		node_comment(E, n, "a view: no code");
		return;
	}
	const char *dst = emit_ref(E, y), *src = emit_ref(E, x);
	if (!strcmp(dst, src)) {
		node_comment(E, n, "a view, already in the output's buffer: no code");
		return;
	}
	node_comment(E, n, "copy");
	ew_line(E->w, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", dst, src, emit_numel(E, &y->shape), ctype(y));
}

static void emit_transpose(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	int perm[IR_MAX_RANK];
	ir_attr *pa = ir_attr_find(n, "perm");
	for (int i = 0; i < r; i++)
		perm[i] = pa && pa->kind == ATTR_INTS && pa->n == r ? axis_of(pa->ints[i], r) : r - 1 - i;
	char *ps = "";
	for (int i = 0; i < r; i++)
		ps = arena_printf(E->A, "%s%s%d", ps, i ? ", " : "", perm[i]);
	node_comment(E, n, NULL);
	if (r <= 1) {
		ew_line(E->w, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", emit_ref(E, y), emit_ref(E, x),
			emit_numel(E, &y->shape), ctype(y));
		return;
	}
	ew_open(E->w, "%s", "");
	ew_line(E->w, "static const int perm[%d] = {%s};", r, ps);
	ew_line(E->w, "const int64_t xdims[%d] = %s;", r, dims_init(E, &x->shape));
	ew_line(E->w, "rt_transpose(%s, %s, sizeof(%s), %d, xdims, perm);", emit_ref(E, y), emit_ref(E, x),
		ctype(y), r);
	ew_close(E->w, "");
}

/* ONNX Slice start clamping (rt_slice_start) done at compile time. */
static int64_t slice_start(int64_t start, int64_t dim, int64_t step)
{
	if (start < 0)
		start += dim;
	if (step > 0)
		return start < 0 ? 0 : start > dim ? dim : start;
	return start > dim - 1 ? dim - 1 : start < 0 ? (dim > 0 ? 0 : -1) : start;
}

static const char *i64(emit_ctx *E, int64_t v)
{
	if (v == INT64_MIN)
		return "INT64_MIN";
	if (v > INT32_MAX || v < -INT32_MAX)
		return arena_printf(E->A, "INT64_C(%lld)", (long long)v);
	return arena_printf(E->A, "%lld", (long long)v);
}

static void emit_slice(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	const ir_value *starts = n->in[1], *axes = n->nin > 3 ? n->in[3] : NULL,
		       *steps = n->nin > 4 ? n->in[4] : NULL;
	int r = x->shape.rank;
	if (!ir_value_is_const(starts) || (axes && !ir_value_is_const(axes)) ||
	    (steps && !ir_value_is_const(steps))) {
		diag_node(E->D, n, "Slice starts, axes and steps must be constants (bind the inputs they come from)");
		return;
	}
	const char *st[IR_MAX_RANK], *sp[IR_MAX_RANK];
	for (int i = 0; i < r; i++)
		st[i] = "0", sp[i] = "1";
	int64_t cnt = ir_shape_const_numel(&starts->shape);
	for (int64_t i = 0; i < cnt; i++) {
		int a = axes ? axis_of(ir_const_int(axes, i), r) : (int)i;
		int64_t s0 = ir_const_int(starts, i), step = steps ? ir_const_int(steps, i) : 1;
		ASSERT(a >= 0 && a < r && step != 0);
		ir_dim D = x->shape.d[a];
		st[a] = ir_dim_is_const(D) ? i64(E, slice_start(s0, D.k, step))
					   : arena_printf(E->A, "rt_slice_start(%s, %s, %s)", i64(E, s0),
							  emit_dim(E, D), i64(E, step));
		sp[a] = i64(E, step);
	}
	char *ss = "", *ps = "";
	for (int i = 0; i < r; i++) {
		ss = arena_printf(E->A, "%s%s%s", ss, i ? ", " : "", st[i]);
		ps = arena_printf(E->A, "%s%s%s", ps, i ? ", " : "", sp[i]);
	}
	node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "const int64_t xdims[%d] = %s, ydims[%d] = %s;", r, dims_init(E, &x->shape), r,
		dims_init(E, &y->shape));
	ew_line(E->w, "const int64_t start[%d] = {%s}, step[%d] = {%s};", r, ss, r, ps);
	ew_line(E->w, "rt_slice(%s, %s, sizeof(%s), %d, xdims, ydims, start, step);", emit_ref(E, y),
		emit_ref(E, x), ctype(y), r);
	ew_close(E->w, "");
}

/* Split and Concat: rows of [outer, axis * inner] copied with rt_copy_rows. */
static void emit_split_concat(emit_ctx *E, ir_node *n)
{
	int concat = n->op == OP_CONCAT;
	const ir_value *whole = concat ? n->out[0] : n->in[0];
	int r = whole->shape.rank;
	int axis = axis_of(ir_attr_int(n, "axis", 0), r);
	ASSERT(axis >= 0 && axis < r);
	ir_dim outer = dims_prod(&whole->shape, 0, axis), inner = dims_prod(&whole->shape, axis + 1, r);
	const char *ld = emit_dim(E, ir_dim_mul(whole->shape.d[axis], inner));
	const char *rows = emit_dim(E, outer), *es = arena_printf(E->A, "sizeof(%s)", ctype(whole));
	node_comment(E, n, NULL);
	dsum off = {0, NULL};
	int parts = concat ? n->nin : n->nout;
	for (int i = 0; i < parts; i++) {
		const ir_value *p = concat ? n->in[i] : n->out[i];
		ASSERT(p);      /* Split's outputs and Concat's inputs are never omitted */
		ir_dim cols = ir_dim_mul(p->shape.d[axis], inner);
		const char *o = dsum_str(E, &off), *c = emit_dim(E, cols);
		if (!(ir_dim_is_const(cols) && cols.k == 0)) {
			const char *at = !strcmp(o, "0") ? emit_ref(E, whole)
				: arena_printf(E->A, "%s + %s", emit_ref(E, whole), mul_str(E, o, emit_dim(E, inner)));
			if (concat)
				ew_line(E->w, "rt_copy_rows(%s, %s, %s, %s, %s, %s, %s);", at, ld, emit_ref(E, p), c,
					rows, c, es);
			else
				ew_line(E->w, "rt_copy_rows(%s, %s, %s, %s, %s, %s, %s);", emit_ref(E, p), c, at, ld,
					rows, c, es);
		}
		dsum_add(E, &off, p->shape.d[axis]);
	}
}

static void emit_gather(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *idx = n->in[1], *y = n->out[0];
	int r = x->shape.rank;
	int axis = axis_of(ir_attr_int(n, "axis", 0), r);
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64) {
		diag_node(E->D, n, "Gather indices must be int32 or int64, not %s", ir_dtype_name(idx->dtype));
		return;
	}
	node_comment(E, n, "indices checked at run time");
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = rt_gather(%s, %s, sizeof(%s), %s, %s, %s, %s, %d, %s);", emit_ref(E, y),
		emit_ref(E, x), ctype(y), emit_dim(E, dims_prod(&x->shape, 0, axis)),
		emit_dim(E, x->shape.d[axis]), emit_dim(E, dims_prod(&x->shape, axis + 1, r)),
		emit_ref(E, idx), (int)idx->dtype, emit_numel(E, &idx->shape));
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

/* Shape at run time (pass_infer folds it; kept for completeness). */
static void emit_shape(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	int64_t start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
	start = start < 0 ? start + r : start;
	end = end < 0 ? end + r : end;
	start = start < 0 ? 0 : start > r ? r : start;
	end = end < 0 ? 0 : end > r ? r : end;
	node_comment(E, n, NULL);
	for (int64_t i = start; i < end; i++)
		ew_line(E->w, "%s[%lld] = %s;", emit_ref(E, y), (long long)(i - start), emit_dim(E, x->shape.d[i]));
}

static void emit_const_of_shape(emit_ctx *E, ir_node *n)
{
	const ir_value *y = n->out[0];
	ir_attr *va = ir_attr_find(n, "value");
	const char *v = va && va->kind == ATTR_TENSOR && va->t && ir_value_is_const(va->t)
		? emit_scalar(E, va->t, 0) : "0";
	node_comment(E, n, NULL);
	if (!is_stored(E, y))
		return;
	ew_line(E->w, "for (int64_t i = 0; i < %s; i++)", emit_numel(E, &y->shape));
	ew_line(E->w, "\t%s[i] = %s;", emit_ref(E, y), v);
}

/* ---- linear algebra and softmax ------------------------------------------ */

static int want_f32(emit_ctx *E, ir_node *n)
{
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && n->in[k]->dtype != DT_F32) {
			diag_node(E->D, n, "%s is compiled for float32 tensors only (input %d is %s)",
				  ir_op_name(n->op), k, ir_dtype_name(n->in[k]->dtype));
			return 0;
		}
	return 1;
}

/* Whether Gemm's C of this shape is one row broadcast to all rows of Y:
 * [N] or [1, N] with N not 1 (C broadcasts to [M, N], so its last dim is N). */
static int is_bias_row(const ir_shape *s)
{
	ir_dim last = s->rank >= 1 ? s->d[s->rank - 1] : ir_dim_const(1);
	if (ir_dim_is_const(last) && last.k == 1)
		return 0;
	return s->rank == 1 || (s->rank == 2 && ir_dim_is_const(s->d[0]) && s->d[0].k == 1);
}

static void emit_gemm(emit_ctx *E, ir_node *n)
{
	if (!want_f32(E, n))
		return;
	const ir_value *a = n->in[0], *b = n->in[1], *c = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
	int ta = ir_attr_int(n, "transA", 0) != 0, tb = ir_attr_int(n, "transB", 0) != 0;
	float alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	ir_dim M = a->shape.d[ta ? 1 : 0], K = a->shape.d[ta ? 0 : 1], N = b->shape.d[tb ? 0 : 1];
	const char *yr = emit_ref(E, y);
	node_comment(E, n, "Y = alpha * op(A) op(B) + beta * C");
	if (c && beta != 0 && is_bias_row(&c->shape)) {
		/* C a row vector (a bias): added by the product's own kernel */
		ew_line(E->w, "rt_sgemm_bias(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", ta, tb,
			emit_dim(E, M), emit_dim(E, N), emit_dim(E, K), emit_float(E, alpha, DT_F32),
			emit_ref(E, a), emit_dim(E, ta ? M : K), emit_ref(E, b), emit_dim(E, tb ? K : N),
			emit_float(E, beta, DT_F32), emit_ref(E, c), yr, emit_dim(E, N));
		return;
	}
	if (c && beta != 0) {
		/* Y = C broadcast, then the product accumulates onto it */
		loop L;
		const ir_shape *cs = &c->shape;
		ASSERT(loop_plan(E, &L, &y->shape, &cs, 1));
		const char *cr = emit_ref(E, c);
		loop_open(E, &L);
		ew_line(E->w, "%s[%s] = %s[%s];", yr, L.oidx, cr, L.idx[0]);
		loop_close(E, &L);
	}
	ew_line(E->w, "rt_sgemm(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", ta, tb,
		emit_dim(E, M), emit_dim(E, N), emit_dim(E, K), emit_float(E, alpha, DT_F32), emit_ref(E, a),
		emit_dim(E, ta ? M : K), emit_ref(E, b), emit_dim(E, tb ? K : N),
		emit_float(E, c && beta != 0 ? beta : 0, DT_F32), yr, emit_dim(E, N));
}

/* The numpy MatMul geometry of A, B -> Y: the matrix sizes M, K, N (a 1-D
 * operand promoted) and the batch shapes of A, B and Y. */
typedef struct mm_geom {
	ir_dim M, K, N;
	ir_shape ab, bb, yb;
} mm_geom;

static mm_geom matmul_geometry(const ir_value *a, const ir_value *b, const ir_value *y)
{
	mm_geom G;
	int ra = a->shape.rank, rb = b->shape.rank;
	ir_dim M = ra >= 2 ? a->shape.d[ra - 2] : ir_dim_const(1);
	ir_dim K = a->shape.d[ra - 1];
	ir_dim N = rb >= 2 ? b->shape.d[rb - 1] : ir_dim_const(1);
	ir_shape ab = {.rank = ra > 2 ? ra - 2 : 0}, bb = {.rank = rb > 2 ? rb - 2 : 0};
	for (int i = 0; i < ab.rank; i++)
		ab.d[i] = a->shape.d[i];
	for (int i = 0; i < bb.rank; i++)
		bb.d[i] = b->shape.d[i];
	ir_shape yb = {.rank = ab.rank > bb.rank ? ab.rank : bb.rank};
	for (int i = 0; i < yb.rank; i++)
		yb.d[i] = y->shape.d[i];
	G.M = M, G.K = K, G.N = N, G.ab = ab, G.bb = bb, G.yb = yb;
	return G;
}

/* MatMul with numpy semantics: 1-D operands promoted (and the added axis
 * dropped from Y), batch axes broadcast.  Without batch axes on B it is one
 * GEMM over all rows of A; otherwise one GEMM per batch element. */
static void emit_matmul(emit_ctx *E, ir_node *n)
{
	if (!want_f32(E, n))
		return;
	const ir_value *a = n->in[0], *b = n->in[1], *y = n->out[0];
	mm_geom G = matmul_geometry(a, b, y);
	ir_dim M = G.M, K = G.K, N = G.N;
	ir_shape ab = G.ab, bb = G.bb, yb = G.yb;
	ir_dim bnum = ir_shape_numel(&bb);
	const char *ar = emit_ref(E, a), *br = emit_ref(E, b), *yr = emit_ref(E, y);
	const char *sM = emit_dim(E, M), *sN = emit_dim(E, N), *sK = emit_dim(E, K);
	node_comment(E, n, NULL);
	if (ir_dim_is_const(bnum) && bnum.k == 1) {
		/* B is one matrix: every row of every batch of A in one product */
		ir_dim rows = ir_dim_mul(ir_shape_numel(&ab), M);
		ew_line(E->w, "rt_sgemm(0, 0, %s, %s, %s, 1.0f, %s, %s, %s, %s, 0.0f, %s, %s);", emit_dim(E, rows),
			sN, sK, ar, sK, br, sN, yr, sN);
		return;
	}
	loop L;
	const ir_shape *ops[2] = {&ab, &bb};
	if (!loop_plan(E, &L, &yb, ops, 2)) {
		diag_node(E->D, n, "MatMul batch dimensions do not broadcast");
		return;
	}
	loop_open(E, &L);
	ew_line(E->w, "rt_sgemm(0, 0, %s, %s, %s, 1.0f, %s + %s, %s, %s + %s, %s, 0.0f, %s + %s, %s);", sM, sN,
		sK, ar, mul_str(E, factor(E, L.idx[0]), emit_dim(E, ir_dim_mul(M, K))), sK, br,
		mul_str(E, factor(E, L.idx[1]), emit_dim(E, ir_dim_mul(K, N))), sN, yr,
		mul_str(E, factor(E, L.oidx), emit_dim(E, ir_dim_mul(M, N))), sN);
	loop_close(E, &L);
}

static void emit_softmax(emit_ctx *E, ir_node *n)
{
	if (!want_f32(E, n))
		return;
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	int axis = axis_of(ir_attr_int(n, "axis", -1), r);
	node_comment(E, n, arena_printf(E->A, "along axis %d", axis));
	if (r == 0) {
		/* one element: softmax 1, log-softmax 0 (NaN and Inf as numpy) */
		ew_line(E->w, "%s(%s, %s, 1, 1, 1);", n->op == OP_SOFTMAX ? "rt_softmax" : "rt_log_softmax",
			emit_ref(E, y), emit_ref(E, x));
		return;
	}
	ew_line(E->w, "%s(%s, %s, %s, %s, %s);", n->op == OP_SOFTMAX ? "rt_softmax" : "rt_log_softmax",
		emit_ref(E, y), emit_ref(E, x), emit_dim(E, dims_prod(&x->shape, 0, axis)),
		emit_dim(E, x->shape.d[axis]), emit_dim(E, dims_prod(&x->shape, axis + 1, r)));
}

/* ---- reductions, ArgMax/ArgMin, Conv, Pad, Size (runtime/rt_nn.c) --------------- */

/* "(const int64_t[]){d0, d1, ..}" of the dims of s from axis `from` on. */
static const char *dims_lit(emit_ctx *E, const ir_shape *s, int from)
{
	char *r = "";
	for (int i = from; i < s->rank; i++)
		r = arena_printf(E->A, "%s%s%s", r, i > from ? ", " : "", emit_dim(E, s->d[i]));
	return arena_printf(E->A, "(const int64_t[]){%s}", *r ? r : "0");
}

/* "v0, v1, ..." ("0" when empty: C has no empty initialiser lists). */
static const char *ints_list(emit_ctx *E, const int64_t *v, int n)
{
	char *r = "";
	for (int i = 0; i < n; i++)
		r = arena_printf(E->A, "%s%s%lld", r, i ? ", " : "", (long long)v[i]);
	return n ? r : "0";
}

static const char *ints_lit(emit_ctx *E, const int64_t *v, int n)
{
	return arena_printf(E->A, "(const int64_t[]){%s}", ints_list(E, v, n));
}

static int reduce_kind(ir_op op)
{
	switch (op) {
	case OP_REDUCEMEAN: return 1;
	case OP_REDUCEMAX: return 2;
	case OP_REDUCEMIN: return 3;
	case OP_REDUCEPROD: return 4;
	case OP_REDUCEL1: return 5;
	case OP_REDUCEL2: return 6;
	case OP_REDUCELOGSUM: return 7;
	case OP_REDUCELOGSUMEXP: return 8;
	case OP_REDUCESUMSQUARE: return 9;
	default: return 0;
	}
}

static const char *const reduce_kinds[] = {
	"RT_REDUCE_SUM", "RT_REDUCE_MEAN", "RT_REDUCE_MAX", "RT_REDUCE_MIN", "RT_REDUCE_PROD", "RT_REDUCE_L1",
	"RT_REDUCE_L2", "RT_REDUCE_LOGSUM", "RT_REDUCE_LOGSUMEXP", "RT_REDUCE_SUMSQUARE",
};

static void emit_reduce(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	unsigned char red[IR_MAX_RANK];
	infer_reduce_axes(n, r, red);
	char *mask = "";
	for (int a = 0; a < r; a++)
		mask = arena_printf(E->A, "%s%s%d", mask, a ? ", " : "", red[a]);
	node_comment(E, n, NULL);
	ew_line(E->w, "rt_reduce_%s(%s, %s, %s, %d, %s, (const unsigned char[]){%s});",
		x->dtype == DT_F64 ? "f64" : "f32", reduce_kinds[reduce_kind(n->op)], emit_ref(E, y), emit_ref(E, x),
		r, dims_lit(E, &x->shape, 0), r ? mask : "0");
}

static void emit_argmax(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, axis = axis_of(ir_attr_int(n, "axis", 0), r);
	node_comment(E, n, arena_printf(E->A, "along axis %d", axis));
	ew_line(E->w, "rt_argmax_%s(%s, %s, %s, %s, %s, %d, %d);", x->dtype == DT_F64 ? "f64" : "f32", emit_ref(E, y),
		emit_ref(E, x), emit_dim(E, dims_prod(&x->shape, 0, axis)), emit_dim(E, x->shape.d[axis]),
		emit_dim(E, dims_prod(&x->shape, axis + 1, r)), n->op == OP_ARGMIN,
		(int)ir_attr_int(n, "select_last_index", 0));
}

static void emit_conv(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK];
	int nsp = infer_conv_geometry(n, k, st, pads, dil);
	int64_t group = ir_attr_int(n, "group", 1);
	node_comment(E, n, arena_printf(E->A, "group %lld", (long long)group));
	ew_line(E->w, "rt_conv(%s, %s, %s, %s, %d, %s, %s, %lld, %s, %s, %s, %s);", emit_ref(E, y), emit_ref(E, x),
		emit_ref(E, w), b ? emit_ref(E, b) : "NULL", nsp, dims_lit(E, &x->shape, 0), emit_dim(E, w->shape.d[0]),
		(long long)group, ints_lit(E, k, nsp), ints_lit(E, st, nsp), ints_lit(E, pads, 2 * nsp),
		ints_lit(E, dil, nsp));
}

/* ---- quantization (runtime/rt_quant.c) ---- */

static const char *opt_ref(emit_ctx *E, const ir_node *n, int k)
{
	return k < n->nin && n->in[k] ? emit_ref(E, n->in[k]) : "NULL";
}

static int64_t numel_of(const ir_node *n, int k)
{
	return k < n->nin && n->in[k] ? ir_shape_const_numel(&n->in[k]->shape) : 1;
}

/* QuantizeLinear / DequantizeLinear: X viewed as [outer, D, inner] around
 * the axis of a per-axis scale, or [numel, 1, 1] for one scale. */
static void emit_quant_linear(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, per_axis = numel_of(n, 1) != 1;
	int a = per_axis ? axis_of(ir_attr_int(n, "axis", 1), r) : r;
	const char *outer = emit_dim(E, dims_prod(&x->shape, 0, a)),
		   *cnt = per_axis ? emit_dim(E, x->shape.d[a]) : "1",
		   *inner = per_axis ? emit_dim(E, dims_prod(&x->shape, a + 1, r)) : "1";
	node_comment(E, n, per_axis ? arena_printf(E->A, "per axis %d", a) : "per tensor");
	if (n->op == OP_QUANTIZELINEAR)
		ew_line(E->w, "rt_quantize_linear(%s, %d, %s, %s, %s, %s, %s, %s);", emit_ref(E, y), (int)y->dtype,
			emit_ref(E, x), emit_ref(E, n->in[1]), opt_ref(E, n, 2), outer, cnt, inner);
	else
		ew_line(E->w, "rt_dequantize_linear(%s, %s, %d, %s, %s, %s, %s, %s);", emit_ref(E, y), emit_ref(E, x),
			(int)x->dtype, emit_ref(E, n->in[1]), opt_ref(E, n, 2), outer, cnt, inner);
}

static void emit_dyn_quant(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0];
	node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "float scale_;");
	ew_line(E->w, "uint8_t zero_point_;");
	ew_line(E->w, "rt_dynamic_quantize_linear(%s, &scale_, &zero_point_, %s, %s);", emit_ref(E, n->out[0]),
		emit_ref(E, x), emit_dim(E, ir_shape_numel(&x->shape)));
	if (n->nout > 1 && n->out[1])
		ew_line(E->w, "%s[0] = scale_;", emit_ref(E, n->out[1]));
	if (n->nout > 2 && n->out[2])
		ew_line(E->w, "%s[0] = zero_point_;", emit_ref(E, n->out[2]));
	ew_close(E->w, "");
}

/* MatMulInteger / QLinearMatMul: numpy batching as in emit_matmul, one
 * kernel call per batch element (the zero points of A are per row). */
static void emit_qmatmul(emit_ctx *E, ir_node *n)
{
	int ql = n->op == OP_QLINEARMATMUL;
	const ir_value *a = n->in[0], *b = n->in[ql ? 3 : 1], *y = n->out[0];
	mm_geom G = matmul_geometry(a, b, y);
	ir_dim M = G.M, K = G.K, N = G.N;
	ir_shape ab = G.ab, bb = G.bb, yb = G.yb;
	const char *sM = emit_dim(E, M), *sN = emit_dim(E, N), *sK = emit_dim(E, K);
	const char *ar = emit_ref(E, a), *br = emit_ref(E, b), *yr = emit_ref(E, y);
	loop L;
	const ir_shape *ops[2] = {&ab, &bb};
	if (!loop_plan(E, &L, &yb, ops, 2)) {
		diag_node(E->D, n, "%s batch dimensions do not broadcast", ir_op_name(n->op));
		return;
	}
	node_comment(E, n, ql ? "mult = a_scale b_scale / y_scale" : NULL);
	if (ql) {
		ew_open(E->w, "%s", "");
		ew_line(E->w, "const float mult = %s[0] * %s[0] / %s[0];", emit_ref(E, n->in[1]), emit_ref(E, n->in[4]),
			emit_ref(E, n->in[6]));
	}
	loop_open(E, &L);
	const char *ao = arena_printf(E->A, "%s + %s", ar, mul_str(E, factor(E, L.idx[0]), emit_dim(E, ir_dim_mul(M, K))));
	const char *bo = arena_printf(E->A, "%s + %s", br, mul_str(E, factor(E, L.idx[1]), emit_dim(E, ir_dim_mul(K, N))));
	const char *yo = arena_printf(E->A, "%s + %s", yr, mul_str(E, factor(E, L.oidx), emit_dim(E, ir_dim_mul(M, N))));
	if (ql)
		ew_line(E->w, "rt_qlinear_matmul(%s, %d, mult, %s, %s, %d, %s, %s, %d, %s, %s, %s, %s);", yo, (int)y->dtype,
			emit_ref(E, n->in[7]), ao, (int)a->dtype, emit_ref(E, n->in[2]), bo, (int)b->dtype,
			emit_ref(E, n->in[5]), sM, sN, sK);
	else
		ew_line(E->w, "rt_matmul_integer(%s, %s, %d, %s, %lld, %s, %d, %s, %lld, %s, %s, %s);", yo, ao, (int)a->dtype,
			opt_ref(E, n, 2), (long long)numel_of(n, 2), bo, (int)b->dtype, opt_ref(E, n, 3),
			(long long)numel_of(n, 3), sM, sN, sK);
	loop_close(E, &L);
	if (ql)
		ew_close(E->w, "");
}

/* ConvInteger / QLinearConv: rt_conv's geometry, exact int32 sums. */
static void emit_qconv(emit_ctx *E, ir_node *n)
{
	int ql = n->op == OP_QLINEARCONV;
	const ir_value *x = n->in[0], *w = n->in[ql ? 3 : 1], *y = n->out[0];
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK];
	int nsp = infer_conv_geometry(n, k, st, pads, dil);
	int64_t group = ir_attr_int(n, "group", 1), m = w->shape.d[0].k;
	const char *geo = arena_printf(E->A, "%d, %s, %lld, %lld, %s, %s, %s, %s", nsp, dims_lit(E, &x->shape, 0),
				       (long long)m, (long long)group, ints_lit(E, k, nsp), ints_lit(E, st, nsp),
				       ints_lit(E, pads, 2 * nsp), ints_lit(E, dil, nsp));
	node_comment(E, n, arena_printf(E->A, "group %lld", (long long)group));
	if (!ql) {
		ew_line(E->w, "rt_conv_integer(%s, %s, %d, %s, %s, %d, %s, %lld, %s);", emit_ref(E, y), emit_ref(E, x),
			(int)x->dtype, opt_ref(E, n, 2), emit_ref(E, w), (int)w->dtype, opt_ref(E, n, 3),
			(long long)numel_of(n, 3), geo);
		return;
	}
	/* one multiplier per output channel when w_scale is per channel */
	int64_t nm = numel_of(n, 4);
	ew_open(E->w, "%s", "");
	if (nm == 1) {
		ew_line(E->w, "const float mult[1] = {%s[0] * %s[0] / %s[0]};", emit_ref(E, n->in[1]),
			emit_ref(E, n->in[4]), emit_ref(E, n->in[6]));
	} else {
		ew_line(E->w, "float mult[%lld];", (long long)nm);
		ew_open(E->w, "for (int64_t i = 0; i < %lld; i++)", (long long)nm);
		ew_line(E->w, "mult[i] = %s[0] * %s[i] / %s[0];", emit_ref(E, n->in[1]), emit_ref(E, n->in[4]),
			emit_ref(E, n->in[6]));
		ew_close(E->w, "");
	}
	ew_line(E->w, "rt_qlinear_conv(%s, %d, mult, %lld, %s, %s, %d, %s, %s, %d, %s, %lld, %s, %s);", emit_ref(E, y),
		(int)y->dtype, (long long)nm, emit_ref(E, n->in[7]), emit_ref(E, x), (int)x->dtype, emit_ref(E, n->in[2]),
		emit_ref(E, w), (int)w->dtype, emit_ref(E, n->in[5]), (long long)numel_of(n, 5), opt_ref(E, n, 8), geo);
	ew_close(E->w, "");
}

static void emit_pad(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *v = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
	int64_t pads[2 * IR_MAX_RANK];
	if (infer_pad_amounts(E->g, n, E->D, pads))
		return;
	const char *mode = ir_attr_string(n, "mode", "constant");
	int r = x->shape.rank;
	node_comment(E, n, mode);
	if (r == 0) {
		ew_line(E->w, "memcpy(%s, %s, sizeof(%s));", emit_ref(E, y), emit_ref(E, x), ctype(x));
		return;
	}
	ew_line(E->w, "rt_pad(%s, %s, sizeof(%s), %d, %s, %s, %s, %s);", emit_ref(E, y), emit_ref(E, x), ctype(x), r,
		dims_lit(E, &x->shape, 0), ints_lit(E, pads, 2 * r),
		!strcmp(mode, "reflect") ? "RT_PAD_REFLECT" : !strcmp(mode, "edge") ? "RT_PAD_EDGE" : "RT_PAD_CONSTANT",
		v ? emit_ref(E, v) : "NULL");
}

/* ---- image sampling (runtime/rt_image.c) ---- */

static const char *doubles_lit(emit_ctx *E, const double *v, int n)
{
	char *r = "";
	for (int i = 0; i < n; i++)
		r = arena_printf(E->A, "%s%s%s", r, i ? ", " : "", emit_float(E, v[i], DT_F64));
	return arena_printf(E->A, "(const double[]){%s}", n ? r : "0");
}

/* An attribute's word as the libcellrt enumerator PREFIX_WORD. */
static const char *enum_name(emit_ctx *E, const char *prefix, const char *word)
{
	char *r = arena_printf(E->A, "%s%s", prefix, word);
	for (char *p = r; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return r;
}

static void emit_resize(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	infer_resize_geom G;
	if (infer_resize_geometry(E->g, n, E->D, &G))
		return;
	int r = x->shape.rank;
	const char *mode = ir_attr_string(n, "mode", "nearest");
	node_comment(E, n, mode);
	ew_line(E->w, "rt_resize(%s, %s, %d, %s, %s,", emit_ref(E, y), emit_ref(E, x), r, dims_lit(E, &x->shape, 0),
		dims_lit(E, &y->shape, 0));
	ew_line(E->w, "\t  %s, %s,", doubles_lit(E, G.scale, r), G.has_roi ? doubles_lit(E, G.roi, 2 * r) : "NULL");
	ew_line(E->w, "\t  &(const rt_resize_mode){%s, %s, %s, %d, %s, %s});", enum_name(E, "RT_RESIZE_", mode),
		enum_name(E, "RT_COORD_", ir_attr_string(n, "coordinate_transformation_mode", "half_pixel")),
		enum_name(E, "RT_NEAREST_", ir_attr_string(n, "nearest_mode", "round_prefer_floor")),
		(int)ir_attr_int(n, "exclude_outside", 0), emit_float(E, ir_attr_float(n, "cubic_coeff_a", -0.75f), DT_F64),
		emit_float(E, ir_attr_float(n, "extrapolation_value", 0.0f), DT_F32));
}

static void emit_gridsample(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *grid = n->in[1], *y = n->out[0];
	const char *mode = ir_attr_string(n, "mode", "linear");
	node_comment(E, n, mode);
	ew_line(E->w, "rt_grid_sample(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d);", emit_ref(E, y),
		emit_ref(E, x), emit_ref(E, grid), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
		emit_dim(E, x->shape.d[2]), emit_dim(E, x->shape.d[3]), emit_dim(E, y->shape.d[2]),
		emit_dim(E, y->shape.d[3]), enum_name(E, "RT_GRID_", mode),
		enum_name(E, "RT_GRID_PAD_", ir_attr_string(n, "padding_mode", "zeros")),
		(int)ir_attr_int(n, "align_corners", 0));
}

static void emit_roialign(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *rois = n->in[1], *bi = n->in[2], *y = n->out[0];
	node_comment(E, n, "batch indices checked at run time");
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int rst = rt_roi_align(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %lld, %s, %d, %d);",
		emit_ref(E, y), emit_ref(E, x), emit_ref(E, rois), emit_ref(E, bi), emit_dim(E, x->shape.d[0]),
		emit_dim(E, x->shape.d[1]), emit_dim(E, x->shape.d[2]), emit_dim(E, x->shape.d[3]),
		emit_dim(E, rois->shape.d[0]), emit_dim(E, y->shape.d[2]), emit_dim(E, y->shape.d[3]),
		(long long)ir_attr_int(n, "sampling_ratio", 0),
		emit_float(E, ir_attr_float(n, "spatial_scale", 1.0f), DT_F32),
		!strcmp(ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), "half_pixel"),
		!strcmp(ir_attr_string(n, "mode", "avg"), "max"));
	ew_line(E->w, "if (rst != RT_OK)");
	ew_line(E->w, "\treturn rst;");
	ew_close(E->w, "");
}

static void emit_pool(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0], *ix = n->nout > 1 ? n->out[1] : NULL;
	int r = x->shape.rank;
	if (n->op == OP_GLOBALAVGPOOL || n->op == OP_GLOBALMAXPOOL) {
		char *mask = "0, 0";
		for (int a = 2; a < r; a++)
			mask = arena_printf(E->A, "%s, 1", mask);
		node_comment(E, n, NULL);
		ew_line(E->w, "rt_reduce_f32(%s, %s, %s, %d, %s, (const unsigned char[]){%s});",
			n->op == OP_GLOBALAVGPOOL ? "RT_REDUCE_MEAN" : "RT_REDUCE_MAX", emit_ref(E, y), emit_ref(E, x), r,
			dims_lit(E, &x->shape, 0), mask);
		return;
	}
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK], ysp[IR_MAX_RANK];
	int nsp = infer_pool_geometry(n, k, st, pads, dil, ysp);
	ASSERT(nsp > 0);
	if (x->dtype == DT_U8 || x->dtype == DT_I8) {
		node_comment(E, n, NULL);
		ew_line(E->w, "rt_maxpool_8(%s, %d, %s, %d, %s, %s, %s, %s, %s, %s);", emit_ref(E, y), (int)x->dtype,
			emit_ref(E, x), nsp, dims_lit(E, &x->shape, 0), ints_lit(E, ysp, nsp), ints_lit(E, k, nsp),
			ints_lit(E, st, nsp), ints_lit(E, pads, 2 * nsp), ints_lit(E, dil, nsp));
		return;
	}
	const char *kind = n->op == OP_MAXPOOL ? (ir_attr_int(n, "storage_order", 0) ? "RT_POOL_MAX_CM" : "RT_POOL_MAX")
			 : ir_attr_int(n, "count_include_pad", 0) ? "RT_POOL_AVG_PADS" : "RT_POOL_AVG";
	node_comment(E, n, NULL);
	ew_line(E->w, "rt_pool(%s, %s, %s, %s, %d, %s, %s, %s, %s, %s, %s);", kind, emit_ref(E, y),
		ix ? emit_ref(E, ix) : "NULL", emit_ref(E, x), nsp, dims_lit(E, &x->shape, 0), ints_lit(E, ysp, nsp),
		ints_lit(E, k, nsp), ints_lit(E, st, nsp), ints_lit(E, pads, 2 * nsp), ints_lit(E, dil, nsp));
}

static void emit_norm(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	node_comment(E, n, NULL);
	if (n->op == OP_BATCHNORM && ir_attr_int(n, "training_mode", 0)) {
		/* batch statistics; the running-statistics outputs when wanted */
		const ir_value *rm = n->nout > 1 ? n->out[1] : NULL, *rv = n->nout > 2 ? n->out[2] : NULL;
		ew_line(E->w, "rt_batchnorm_train(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", emit_ref(E, y),
			rm && is_stored(E, rm) ? emit_ref(E, rm) : "NULL", rv && is_stored(E, rv) ? emit_ref(E, rv) : "NULL",
			emit_ref(E, x), emit_ref(E, n->in[1]), emit_ref(E, n->in[2]), emit_ref(E, n->in[3]),
			emit_ref(E, n->in[4]), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
			emit_dim(E, dims_prod(&x->shape, 2, r)), emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32),
			emit_float(E, ir_attr_float(n, "momentum", 0.9f), DT_F32));
		return;
	}
	if (n->op == OP_BATCHNORM) {
		ew_line(E->w, "rt_batchnorm(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", emit_ref(E, y), emit_ref(E, x),
			emit_ref(E, n->in[1]), emit_ref(E, n->in[2]), emit_ref(E, n->in[3]), emit_ref(E, n->in[4]),
			emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]), emit_dim(E, dims_prod(&x->shape, 2, r)),
			emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32));
		return;
	}
	int axis = axis_of(ir_attr_int(n, "axis", -1), r);
	const ir_value *b = n->nin > 2 ? n->in[2] : NULL, *m = n->nout > 1 ? n->out[1] : NULL,
		       *is = n->nout > 2 ? n->out[2] : NULL;
	ew_line(E->w, "rt_layernorm(%s, %s, %s, %s, %s, %s, %s, %s, %s);", emit_ref(E, y),
		m && is_stored(E, m) ? emit_ref(E, m) : "NULL", is && is_stored(E, is) ? emit_ref(E, is) : "NULL",
		emit_ref(E, x), emit_ref(E, n->in[1]), b ? emit_ref(E, b) : "NULL",
		emit_dim(E, dims_prod(&x->shape, 0, axis)), emit_dim(E, dims_prod(&x->shape, axis, r)),
		emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32));
}

/* Element 0 of scalar input v as a C expression: a literal for a constant. */
static const char *scalar_in(emit_ctx *E, const ir_value *v)
{
	if (infer_is_const(v) && v->data && !v->sym)
		return emit_scalar(E, v, 0);
	return arena_printf(E->A, "%s[0]", emit_ref(E, v));
}

/* The status of a libcellrt call that may refuse its arguments at run time. */
static void call_checked(emit_ctx *E, const char *call)
{
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int rst = %s;", call);
	ew_line(E->w, "if (rst != RT_OK)");
	ew_line(E->w, "\treturn rst;");
	ew_close(E->w, "");
}

/* RandomUniform(Like), RandomNormal(Like), Bernoulli: libcellrt draws from
 * the node's stream m->rng[k] (seeded by NAME_seed). */
static void emit_random(emit_ctx *E, ir_node *n)
{
	const ir_value *y = n->out[0], *x = n->nin ? n->in[0] : NULL;
	int k = emit_rng_index(E, n);
	const char *rng = arena_printf(E->A, "&m->rng[%d]", k), *cnt = emit_numel(E, &y->shape);
	node_comment(E, n, arena_printf(E->A, "random stream %d", k));
	switch (n->op) {
	case OP_RANDOMUNIFORM: case OP_RANDOMUNIFORMLIKE:
		call_checked(E, arena_printf(E->A, "rt_random_uniform(%s, %d, %s, %s, %s, %s)", emit_ref(E, y), (int)y->dtype,
					     cnt, emit_float(E, ir_attr_float(n, "low", 0.0f), DT_F64),
					     emit_float(E, ir_attr_float(n, "high", 1.0f), DT_F64), rng));
		break;
	case OP_RANDOMNORMAL: case OP_RANDOMNORMALLIKE:
		call_checked(E, arena_printf(E->A, "rt_random_normal(%s, %d, %s, %s, %s, %s)", emit_ref(E, y), (int)y->dtype,
					     cnt, emit_float(E, ir_attr_float(n, "mean", 0.0f), DT_F64),
					     emit_float(E, ir_attr_float(n, "scale", 1.0f), DT_F64), rng));
		break;
	default:
		call_checked(E, arena_printf(E->A, "rt_bernoulli(%s, %d, %s, %d, %s, %s)", emit_ref(E, y), (int)y->dtype,
					     emit_ref(E, x), (int)x->dtype, cnt, rng));
		break;
	}
}

/* Dropout: in inference mode (training_mode absent or a constant false)
 * Y = X and the mask all true; else rt_dropout with the ratio (default
 * 0.5) and training_mode read at run time (RT_ERR_ARG for a ratio outside
 * [0, 1) while training). */
static void emit_dropout(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0], *mask = n->nout > 1 ? n->out[1] : NULL;
	if (infer_dropout_trains(n)) {
		const ir_value *ratio = n->nin > 1 ? n->in[1] : NULL, *t = n->in[2];
		int k = emit_rng_index(E, n);
		node_comment(E, n, arena_printf(E->A, "training mode: random stream %d", k));
		call_checked(E, arena_printf(E->A, "rt_dropout(%s, %s, %s, %d, %s, %s, %s, &m->rng[%d])",
					     y && is_stored(E, y) ? emit_ref(E, y) : "NULL",
					     mask && is_stored(E, mask) ? emit_ref(E, mask) : "NULL", emit_ref(E, x),
					     (int)x->dtype, emit_numel(E, &x->shape),
					     ratio ? arena_printf(E->A, "(double)%s", scalar_in(E, ratio)) : "0.5",
					     arena_printf(E->A, "%s != 0", scalar_in(E, t)), k));
		return;
	}
	node_comment(E, n, "inference: the identity");
	const char *cnt = emit_numel(E, &x->shape);
	if (y && is_stored(E, y) && strcmp(emit_ref(E, y), emit_ref(E, x)))
		ew_line(E->w, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", emit_ref(E, y), emit_ref(E, x), cnt, ctype(x));
	if (mask && is_stored(E, mask))
		ew_line(E->w, "memset(%s, 1, (size_t)%s);", emit_ref(E, mask), cnt);
}

/* Trilu, CumSum, Hardmax, EyeLike, Range, OneHot: loops printed here;
 * Tile and GatherElements: rt_nn.c. */
static void emit_misc(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	const char *xr = emit_ref(E, x), *yr = emit_ref(E, y), *T = ctype(y);
	node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	switch (n->op) {
	case OP_TRILU: {
		const ir_value *k = n->nin > 1 ? n->in[1] : NULL;
		ew_line(E->w, "const int64_t rows = %s, cols = %s, k = %s;", emit_dim(E, x->shape.d[r - 2]),
			emit_dim(E, x->shape.d[r - 1]), k ? arena_printf(E->A, "%s[0]", emit_ref(E, k)) : "0");
		ew_line(E->w, "for (int64_t b = 0; b < %s; b++)", emit_dim(E, dims_prod(&x->shape, 0, r - 2)));
		ew_line(E->w, "	for (int64_t i = 0; i < rows; i++)");
		ew_line(E->w, "		for (int64_t j = 0; j < cols; j++)");
		ew_line(E->w, "			%s[(b * rows + i) * cols + j] = j - i %s k ? %s[(b * rows + i) * cols + j] : (%s)0;", yr,
			ir_attr_int(n, "upper", 1) ? ">=" : "<=", xr, T);
		break;
	}
	case OP_CUMSUM: {
		int axis = axis_of(ir_const_int(n->in[1], 0), r);
		int rev = (int)ir_attr_int(n, "reverse", 0), ex = (int)ir_attr_int(n, "exclusive", 0);
		ew_line(E->w, "const int64_t outer = %s, cnt = %s, inner = %s;", emit_dim(E, dims_prod(&x->shape, 0, axis)),
			emit_dim(E, x->shape.d[axis]), emit_dim(E, dims_prod(&x->shape, axis + 1, r)));
		ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
		ew_open(E->w, "	for (int64_t i = 0; i < inner; i++)");
		ew_line(E->w, "%s acc = 0;", T);
		ew_open(E->w, "for (int64_t s = 0; s < cnt; s++)");
		ew_line(E->w, "const int64_t j = (o * cnt + %s) * inner + i;", rev ? "cnt - 1 - s" : "s");
		if (ex) {
			ew_line(E->w, "const %s v = %s[j];", T, xr);
			ew_line(E->w, "%s[j] = acc;", yr);
			ew_line(E->w, "acc += v;");
		} else {
			ew_line(E->w, "acc += %s[j];", xr);
			ew_line(E->w, "%s[j] = acc;", yr);
		}
		ew_close(E->w, "");
		ew_close(E->w, "");
		break;
	}
	case OP_HARDMAX: {
		int axis = axis_of(ir_attr_int(n, "axis", -1), r);
		ew_line(E->w, "const int64_t outer = %s, cnt = %s, inner = %s;", emit_dim(E, dims_prod(&x->shape, 0, axis)),
			emit_dim(E, x->shape.d[axis]), emit_dim(E, dims_prod(&x->shape, axis + 1, r)));
		ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
		ew_open(E->w, "	for (int64_t i = 0; i < inner; i++)");
		ew_line(E->w, "int64_t best = 0;");
		ew_line(E->w, "for (int64_t s = 1; s < cnt; s++)");
		ew_line(E->w, "	if (%s[(o * cnt + s) * inner + i] > %s[(o * cnt + best) * inner + i])", xr, xr);
		ew_line(E->w, "		best = s;");
		ew_line(E->w, "for (int64_t s = 0; s < cnt; s++)");
		ew_line(E->w, "	%s[(o * cnt + s) * inner + i] = s == best;", yr);
		ew_close(E->w, "");
		break;
	}
	case OP_EYELIKE:
		ew_line(E->w, "for (int64_t i = 0; i < %s; i++)", emit_dim(E, y->shape.d[0]));
		ew_line(E->w, "	for (int64_t j = 0; j < %s; j++)", emit_dim(E, y->shape.d[1]));
		ew_line(E->w, "		%s[i * %s + j] = j - i == %lld;", yr, emit_dim(E, y->shape.d[1]),
			(long long)ir_attr_int(n, "k", 0));
		break;
	case OP_RANGE:
		ew_line(E->w, "for (int64_t i = 0; i < %s; i++)", emit_dim(E, y->shape.d[0]));
		ew_line(E->w, "	%s[i] = (%s)(%s[0] + (%s)i * %s[0]);", yr, T, xr, T, emit_ref(E, n->in[2]));
		break;
	case OP_ONEHOT: {
		int axis = axis_of(ir_attr_int(n, "axis", -1), r + 1);
		const char *v = emit_ref(E, n->in[2]), *dep = emit_dim(E, y->shape.d[axis]);
		ew_line(E->w, "const int64_t outer = %s, inner = %s, depth = %s;", emit_dim(E, dims_prod(&x->shape, 0, axis)),
			emit_dim(E, dims_prod(&x->shape, axis, r)), dep);
		ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
		ew_open(E->w, "	for (int64_t i = 0; i < inner; i++)");
		ew_line(E->w, "int64_t h = (int64_t)%s[o * inner + i];", xr);
		ew_line(E->w, "if (h < 0)");
		ew_line(E->w, "	h += depth;");
		ew_line(E->w, "for (int64_t s = 0; s < depth; s++)");
		ew_line(E->w, "	%s[(o * depth + s) * inner + i] = %s[s == h];", yr, v);
		ew_close(E->w, "");
		break;
	}
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: {
		/* folded unless larger than the folding limit: the values as a table */
		int64_t m = y->shape.d[0].k;
		int per = (int)ir_attr_int(n, "periodic", 1);
		for (int64_t i = 0; i < m; i++)
			ew_line(E->w, "%s[%lld] = (%s)%s;", yr, (long long)i, T,
				emit_float(E, infer_window(n->op, i, m, per), DT_F64));
		break;
	}
	case OP_TOPK: {
		int axis = axis_of(ir_attr_int(n, "axis", -1), r);
		const ir_value *ix = n->nout > 1 ? n->out[1] : NULL;
		if (!ix || !is_stored(E, ix)) {
			diag_node(E->D, n, "internal: TopK's Indices have no storage");
			break;
		}
		ew_line(E->w, "rt_topk_%s(%s, %s, %s, %s, %s, %s, %s, %d);", ir_dtype_name(x->dtype), yr, emit_ref(E, ix), xr,
			emit_dim(E, dims_prod(&x->shape, 0, axis)), emit_dim(E, x->shape.d[axis]),
			emit_dim(E, dims_prod(&x->shape, axis + 1, r)), emit_dim(E, y->shape.d[axis]),
			(int)ir_attr_int(n, "largest", 1));
		break;
	}
	case OP_TILE: {
		ir_shape rep = {.rank = r};     /* the repeats, run-time sizes among them */
		for (int a = 0; a < r; a++)
			rep.d[a] = infer_elem_dim(n->in[1], a);
		ew_line(E->w, "rt_tile(%s, %s, sizeof(%s), %d, %s, %s);", yr, xr, T, r, dims_lit(E, &x->shape, 0),
			dims_lit(E, &rep, 0));
		break;
	}
	case OP_GATHERELEMENTS: {
		const ir_value *ix = n->in[1];
		ew_line(E->w, "int gst = rt_gather_elements(%s, %s, sizeof(%s), %d, %s, %s, %d, %s, %d);", yr, xr, T, r,
			dims_lit(E, &x->shape, 0), emit_ref(E, ix), ix->dtype == DT_I32 ? 6 : 7, dims_lit(E, &ix->shape, 0),
			axis_of(ir_attr_int(n, "axis", 0), r));
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "	return gst;");
		break;
	}
	default: UNREACHABLE();
	}
	ew_close(E->w, "");
}

/* The training form of SoftmaxCrossEntropyLoss (pass_grad's: [N, C], mean,
 * no weights, no ignore_index, no log_prob) has its own loop in
 * emit_train_ops.c. */
static int is_train_ce(const ir_node *n)
{
	return n->op == OP_SOFTMAXCE && n->nin == 2 && (n->nout == 1 || !n->out[1]) && n->in[0]->shape.rank == 2 &&
	       !strcmp(ir_attr_string(n, "reduction", "mean"), "mean") && !ir_attr_find(n, "ignore_index");
}

static void emit_loss(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *t = n->in[1], *w = n->nin > 2 ? n->in[2] : NULL;
	const ir_value *lp = n->op == OP_SOFTMAXCE && n->nout > 1 ? n->out[1] : NULL;
	const char *red = ir_attr_string(n, "reduction", "mean");
	ir_attr *ig = ir_attr_find(n, "ignore_index");
	node_comment(E, n, red);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = rt_class_loss(%s, %s, %s, %d, %s, %s, %s, %s, %s, %s, %d, %lld);", emit_ref(E, n->out[0]),
		lp && is_stored(E, lp) ? emit_ref(E, lp) : "NULL", emit_ref(E, x), n->op == OP_SOFTMAXCE, emit_ref(E, t),
		w ? emit_ref(E, w) : "NULL", emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
		emit_dim(E, dims_prod(&x->shape, 2, x->shape.rank)),
		!strcmp(red, "none") ? "RT_LOSS_NONE" : !strcmp(red, "sum") ? "RT_LOSS_SUM" : "RT_LOSS_MEAN", ig != NULL,
		ig ? (long long)ig->i : 0LL);
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

static const char *scatter_red(const ir_node *n)
{
	const char *r = ir_attr_string(n, "reduction", "none");
	return !strcmp(r, "add") ? "RT_SCATTER_ADD" : !strcmp(r, "mul") ? "RT_SCATTER_MUL"
	       : !strcmp(r, "max") ? "RT_SCATTER_MAX" : !strcmp(r, "min") ? "RT_SCATTER_MIN" : "RT_SCATTER_NONE";
}

/* DepthToSpace/SpaceToDepth (rt_transpose of a 6-D view), ConvTranspose,
 * ScatterElements, ScatterND, GatherND, InstanceNormalization. */
static void emit_layout(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	const char *xr = emit_ref(E, x), *yr = emit_ref(E, y), *T = ctype(x);
	node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	switch (n->op) {
	case OP_DEPTHTOSPACE: case OP_SPACETODEPTH: {
		int64_t b = ir_attr_int(n, "blocksize", 1), N = x->shape.d[0].k, C = x->shape.d[1].k, H = x->shape.d[2].k,
			W = x->shape.d[3].k;
		int64_t v[6];
		const char *perm;
		if (n->op == OP_SPACETODEPTH) {
			int64_t t[6] = {N, C, H / b, b, W / b, b};
			memcpy(v, t, sizeof v);
			perm = "{0, 3, 5, 1, 2, 4}";
		} else if (!strcmp(ir_attr_string(n, "mode", "DCR"), "CRD")) {
			int64_t t[6] = {N, C / (b * b), b, b, H, W};
			memcpy(v, t, sizeof v);
			perm = "{0, 1, 4, 2, 5, 3}";
		} else {
			int64_t t[6] = {N, b, b, C / (b * b), H, W};
			memcpy(v, t, sizeof v);
			perm = "{0, 3, 4, 1, 5, 2}";
		}
		if (!ir_dim_is_const(x->shape.d[0]))
			ew_line(E->w, "/* N = %s at run time */", emit_dim(E, x->shape.d[0]));
		char *dims = arena_printf(E->A, "%s", emit_dim(E, x->shape.d[0]));
		for (int i = 1; i < 6; i++)
			dims = arena_printf(E->A, "%s, %lld", dims, (long long)v[i]);
		ew_line(E->w, "rt_transpose(%s, %s, sizeof(%s), 6, (const int64_t[]){%s}, (const int[])%s);", yr, xr, T,
			dims, perm);
		break;
	}
	case OP_CONVTRANSPOSE: {
		const ir_value *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL;
		int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK], ysp[IR_MAX_RANK];
		int nsp = infer_convt_geometry(n, k, st, pads, dil, ysp);
		ew_line(E->w, "rt_conv_transpose(%s, %s, %s, %s, %d, %s, %s, %s, %lld, %s, %s, %s, %s);", yr, xr,
			emit_ref(E, w), b ? emit_ref(E, b) : "NULL", nsp, dims_lit(E, &x->shape, 0), ints_lit(E, ysp, nsp),
			emit_dim(E, y->shape.d[1]), (long long)ir_attr_int(n, "group", 1), ints_lit(E, k, nsp),
			ints_lit(E, st, nsp), ints_lit(E, pads, 2 * nsp), ints_lit(E, dil, nsp));
		break;
	}
	case OP_SCATTERELEMENTS:
		ew_line(E->w, "int gst = rt_scatter_elements(%s, %s, sizeof(%s), %d, %d, %s, %s, %s, %s, %d, %s);", yr, xr,
			T, x->dtype == DT_F32, r, dims_lit(E, &x->shape, 0), emit_ref(E, n->in[1]), emit_ref(E, n->in[2]),
			dims_lit(E, &n->in[1]->shape, 0), axis_of(ir_attr_int(n, "axis", 0), r), scatter_red(n));
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		break;
	case OP_SCATTERND: {
		const ir_value *ix = n->in[1];
		int q = (int)ix->shape.d[ix->shape.rank - 1].k;
		ew_line(E->w, "int gst = rt_scatter_nd(%s, %s, sizeof(%s), %d, %d, %s, %s, %s, %d, %s, %s);", yr, xr, T,
			x->dtype == DT_F32, r, dims_lit(E, &x->shape, 0), emit_ref(E, ix),
			emit_dim(E, dims_prod(&ix->shape, 0, ix->shape.rank - 1)), q, emit_ref(E, n->in[2]), scatter_red(n));
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		break;
	}
	case OP_GATHERND: {
		const ir_value *ix = n->in[1];
		int qr = ix->shape.rank, q = (int)ix->shape.d[qr - 1].k, bd = (int)ir_attr_int(n, "batch_dims", 0);
		ew_line(E->w, "int gst = rt_gather_nd(%s, %s, sizeof(%s), %d, %s, %d, %s, %s, %d);", yr, xr, T, r,
			dims_lit(E, &x->shape, 0), bd, emit_ref(E, ix), emit_dim(E, dims_prod(&ix->shape, bd, qr - 1)), q);
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		break;
	}
	case OP_REVERSESEQ: {
		int ta = (int)ir_attr_int(n, "time_axis", 0);
		ew_line(E->w, "int gst = rt_reverse_sequence(%s, %s, sizeof(%s), %s, %s, %s, %d, %s);", yr, xr, T,
			emit_dim(E, x->shape.d[ta]), emit_dim(E, x->shape.d[1 - ta]), emit_dim(E, dims_prod(&x->shape, 2, r)),
			ta, emit_ref(E, n->in[1]));
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		break;
	}
	case OP_TFIDF: {
		const ir_attr *cnt = ir_attr_find(n, "ngram_counts"), *ix = ir_attr_find(n, "ngram_indexes");
		const ir_attr *pool = ir_attr_find(n, "pool_int64s"), *wt = ir_attr_find(n, "weights");
		const char *mode = ir_attr_string(n, "mode", "TF");
		char *wl = "";
		for (int i = 0; wt && i < wt->n; i++)
			wl = arena_printf(E->A, "%s%s%s", wl, i ? ", " : "", emit_float(E, wt->floats[i], DT_F32));
		ew_line(E->w, "static const int64_t pool[] = {%s};", ints_list(E, pool->ints, pool->n));
		ew_line(E->w, "static const int64_t levels[] = {%s};", ints_list(E, cnt->ints, cnt->n));
		ew_line(E->w, "static const int64_t columns[] = {%s};", ints_list(E, ix->ints, ix->n));
		if (wt)
			ew_line(E->w, "static const float weights[] = {%s};", wl);
		ew_line(E->w, "rt_tfidf(%s, %s, %d, %s, %s, %s, pool, %d, levels, %d, columns, %s, %lld, %lld, %lld, %s);", yr,
			xr, x->dtype == DT_I32, emit_dim(E, dims_prod(&x->shape, 0, r - 1)), emit_dim(E, x->shape.d[r - 1]),
			emit_dim(E, y->shape.d[r - 1]), pool->n, cnt->n, wt ? "weights" : "NULL",
			(long long)ir_attr_int(n, "min_gram_length", 1), (long long)ir_attr_int(n, "max_gram_length", 1),
			(long long)ir_attr_int(n, "max_skip_count", 0),
			!strcmp(mode, "IDF") ? "RT_TFIDF_IDF" : !strcmp(mode, "TFIDF") ? "RT_TFIDF_TFIDF" : "RT_TFIDF_TF");
		break;
	}
	case OP_INSTANCENORM:
		ew_line(E->w, "rt_instancenorm(%s, %s, %s, %s, %s, %s, %s, %s);", yr, xr, emit_ref(E, n->in[1]),
			emit_ref(E, n->in[2]), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
			emit_dim(E, dims_prod(&x->shape, 2, r)), emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32));
		break;
	default: UNREACHABLE();
	}
	ew_close(E->w, "");
}

/* Det, Einsum, LRN, MeanVarianceNormalization, MaxUnpool, DFT, STFT through
 * runtime/rt_linalg.c and rt_nn.c (MelWeightMatrix is always folded). */
static void emit_linalg(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, f64 = x->dtype == DT_F64;
	const char *xr = emit_ref(E, x), *yr = emit_ref(E, y), *call = NULL;
	switch (n->op) {
	case OP_DET:
		call = arena_printf(E->A, "rt_det(%s, %s, %d, %s, %s)", yr, xr, f64, emit_dim(E, dims_prod(&x->shape, 0, r - 2)),
				    emit_dim(E, x->shape.d[r - 1]));
		break;
	case OP_EINSUM: {
		infer_einsum p;
		char err[300];
		if (infer_einsum_plan(n, &p, err, sizeof err)) {
			diag_node(E->D, n, "internal: %s", err);
			return;
		}
		char *ops = "", *ranks = "", *dims = "", *labs = "";
		for (int o = 0; o < p.nops; o++) {
			ops = arena_printf(E->A, "%s%s%s", ops, o ? ", " : "", emit_ref(E, n->in[o]));
			ranks = arena_printf(E->A, "%s%s%d", ranks, o ? ", " : "", p.rank[o]);
			for (int a = 0; a < p.rank[o]; a++) {
				int first = !*dims;
				dims = arena_printf(E->A, "%s%s%s", dims, first ? "" : ", ", emit_dim(E, n->in[o]->shape.d[a]));
				labs = arena_printf(E->A, "%s%s%d", labs, first ? "" : ", ", p.labels[o][a]);
			}
		}
		node_comment(E, n, ir_attr_string(n, "equation", ""));
		ew_open(E->w, "%s", "");
		ew_line(E->w, "int gst = rt_einsum(%s, %d, %d, (const void *const[]){%s}, (const int[]){%s}, "
			"(const int64_t[]){%s}, (const int[]){%s}, %d, %d);", yr, f64, p.nops, ops, ranks,
			*dims ? dims : "0", *labs ? labs : "0", p.nlab, p.nout);
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		ew_close(E->w, "");
		return;
	}
	case OP_LRN:
		node_comment(E, n, NULL);
		ew_line(E->w, "rt_lrn(%s, %s, %s, %s, %s, %lld, %s, %s, %s);", yr, xr, emit_dim(E, x->shape.d[0]),
			emit_dim(E, x->shape.d[1]), emit_dim(E, dims_prod(&x->shape, 2, r)),
			(long long)ir_attr_int(n, "size", 1), emit_float(E, ir_attr_float(n, "alpha", 1e-4f), DT_F32),
			emit_float(E, ir_attr_float(n, "beta", 0.75f), DT_F32),
			emit_float(E, ir_attr_float(n, "bias", 1.0f), DT_F32));
		return;
	case OP_MVN: {
		ir_attr *a = ir_attr_find(n, "axes");
		int mask[IR_MAX_RANK] = {0};
		const int64_t def[3] = {0, 2, 3};
		for (int i = 0; i < (a ? a->n : 3); i++)
			mask[axis_of(a ? a->ints[i] : def[i], r)] = 1;
		char *m = "";
		for (int i = 0; i < r; i++)
			m = arena_printf(E->A, "%s%s%d", m, i ? ", " : "", mask[i]);
		call = arena_printf(E->A, "rt_mvn(%s, %s, %d, %s, (const unsigned char[]){%s})", yr, xr, r,
				    dims_lit(E, &x->shape, 0), *m ? m : "0");
		break;
	}
	case OP_MAXUNPOOL: {
		int64_t ysp[IR_MAX_RANK];
		int nsp = infer_unpool_geometry(n, ysp);
		ASSERT(nsp == r - 2);
		char *idims = arena_printf(E->A, "%s, %s", emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]));
		for (int i = 0; i < nsp; i++)
			idims = arena_printf(E->A, "%s, %lld", idims, (long long)ysp[i]);
		call = arena_printf(E->A, "rt_max_unpool(%s, %s, %s, %s, %d, (const int64_t[]){%s}, %s)", yr, xr,
				    emit_ref(E, n->in[1]), emit_numel(E, &x->shape), r, idims, dims_lit(E, &y->shape, 0));
		break;
	}
	case OP_DFT: {
		int ax = axis_of(ir_attr_int(n, "axis", 1), r);
		const ir_value *dl = n->nin > 1 ? n->in[1] : NULL;
		const char *len = emit_dim(E, x->shape.d[ax]);
		const char *nfft = dl ? arena_printf(E->A, "%lld", (long long)infer_elem_int(dl, 0)) : len;
		call = arena_printf(E->A, "rt_dft(%s, %s, %d, %s, %s, %s, %s, %s, %s, %d)", yr, xr, f64,
				    emit_dim(E, dims_prod(&x->shape, 0, ax)), len,
				    emit_dim(E, dims_prod(&x->shape, ax + 1, r - 1)), emit_dim(E, x->shape.d[r - 1]), nfft,
				    emit_dim(E, y->shape.d[ax]), (int)ir_attr_int(n, "inverse", 0));
		break;
	}
	case OP_STFT: {
		const ir_value *w = n->nin > 2 ? n->in[2] : NULL;
		int64_t nfft = w ? w->shape.d[0].k : infer_elem_int(n->in[3], 0);
		call = arena_printf(E->A, "rt_stft(%s, %s, %d, %s, %s, %s, %lld, %s, %lld, %s, %s)", yr, xr, f64,
				    emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]), emit_dim(E, x->shape.d[2]),
				    (long long)infer_elem_int(n->in[1], 0), w ? emit_ref(E, w) : "NULL", (long long)nfft,
				    emit_dim(E, y->shape.d[1]), emit_dim(E, y->shape.d[2]));
		break;
	}
	case OP_MELWEIGHT:
		diag_node(E->D, n, "MelWeightMatrix of %s elements is larger than cellc folds at compile time",
			  emit_numel(E, &y->shape));
		return;
	default: UNREACHABLE();
	}
	node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = %s;", call);
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

/* NonZero, Compress, Unique, NonMaxSuppression: the kernel returns the
 * data-dependent length into m->dd_len[] (emit_dd_slot); the outputs are
 * sized for the bound of ir_value.dd_axis and written packed. */
static void emit_datadep(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, slot = emit_dd_slot(E->g, n);
	if (slot < 0 || !is_stored(E, y)) {
		diag_node(E->D, n, "internal: a data-dependent output has no length slot or no storage");
		return;
	}
	const char *len = arena_printf(E->A, "m->dd_len[%d]", slot), *xr = emit_ref(E, x), *yr = emit_ref(E, y);
	node_comment(E, n, arena_printf(E->A, "length %s at run time, at most %s", len,
					safe(E, ir_dim_str(E->A, E->g, y->shape.d[y->dd_axis]))));
	ew_open(E->w, "%s", "");
	switch (n->op) {
	case OP_NONZERO:
		ew_line(E->w, "int gst = rt_nonzero(&%s, %s, %s, %d, %d, %s);", len, yr, xr, (int)x->dtype, r,
			r ? dims_lit(E, &x->shape, 0) : "NULL");
		break;
	case OP_COMPRESS: {
		ir_attr *a = ir_attr_find(n, "axis");
		int axis = a ? axis_of(a->i, r) : 0;
		ir_dim outer = a ? dims_prod(&x->shape, 0, axis) : ir_dim_const(1);
		ir_dim cnt = a ? x->shape.d[axis] : ir_shape_numel(&x->shape);
		ir_dim inner = a ? dims_prod(&x->shape, axis + 1, r) : ir_dim_const(1);
		ew_line(E->w, "int gst = rt_compress(&%s, %s, %s, sizeof(%s), %s, %s, %s, %s, %s);", len, yr, xr, ctype(x),
			emit_dim(E, outer), emit_dim(E, cnt), emit_dim(E, inner), emit_ref(E, n->in[1]),
			emit_dim(E, n->in[1]->shape.d[0]));
		break;
	}
	case OP_UNIQUE: {
		ir_attr *a = ir_attr_find(n, "axis");
		int axis = a ? axis_of(a->i, r) : 0;
		ir_dim outer = a ? dims_prod(&x->shape, 0, axis) : ir_dim_const(1);
		ir_dim cnt = a ? x->shape.d[axis] : ir_shape_numel(&x->shape);
		ir_dim inner = a ? dims_prod(&x->shape, axis + 1, r) : ir_dim_const(1);
		const char *o[3];
		for (int k = 1; k <= 3; k++)
			o[k - 1] = k < n->nout && n->out[k] && is_stored(E, n->out[k]) ? emit_ref(E, n->out[k]) : "NULL";
		ew_line(E->w, "int gst = rt_unique(&%s, %s, %s, %s, %s, %s, %d, %s, %s, %s, %d);", len, yr, o[0], o[1], o[2], xr,
			(int)x->dtype, emit_dim(E, outer), emit_dim(E, cnt), emit_dim(E, inner),
			ir_attr_int(n, "sorted", 1) != 0);
		break;
	}
	case OP_NMS: {
		const ir_value *sc = n->in[1];
		const ir_value *mx = n->nin > 2 ? n->in[2] : NULL, *iou = n->nin > 3 ? n->in[3] : NULL;
		const ir_value *st = n->nin > 4 ? n->in[4] : NULL;
		ew_line(E->w, "int gst = rt_nms(&%s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %s, %d);", len, yr, xr, emit_ref(E, sc),
			emit_dim(E, x->shape.d[0]), emit_dim(E, sc->shape.d[1]), emit_dim(E, x->shape.d[1]),
			mx ? arena_printf(E->A, "%s[0]", emit_ref(E, mx)) : "0",
			iou ? arena_printf(E->A, "%s[0]", emit_ref(E, iou)) : "0.0f", st != NULL,
			st ? arena_printf(E->A, "%s[0]", emit_ref(E, st)) : "0.0f",
			(int)ir_attr_int(n, "center_point_box", 0));
		break;
	}
	default: UNREACHABLE();
	}
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

static void emit_size(emit_ctx *E, ir_node *n)
{
	node_comment(E, n, NULL);
	ew_line(E->w, "%s[0] = %s;", emit_ref(E, n->out[0]), emit_numel(E, &n->in[0]->shape));
}

/* ---- ai.onnx.preview.training optimisers --------------------------------------- */

/* Momentum, Adam, Adagrad: one call per optimised tensor of the kernels that
 * rt_optim_update uses (runtime/rt_optim.c), with the ONNX specification's
 * coefficients: Momentum's beta is 1 while T == 0; Adam's bias correction
 * moves into the step size R sqrt(1 - beta^T) / (1 - alpha^T) (T > 0) with
 * epsilon added to sqrt(H_new) itself, and 1 - norm_coefficient_post scales
 * the result; Adagrad's R / (1 + T decay_factor).  R and T are read at run
 * time (R may be double). */
static void emit_optim(emit_ctx *E, ir_node *n)
{
	int per = n->op == OP_ADAM ? 4 : 3, nt = (n->nin - 2) / per;
	const char *R = emit_ref(E, n->in[0]), *T = emit_ref(E, n->in[1]);
	float wd = ir_attr_float(n, "norm_coefficient", 0.0f);
	node_comment(E, n, arena_printf(E->A, "%d tensor%s", nt, nt == 1 ? "" : "s"));
	ew_open(E->w, "%s", "");
	ew_line(E->w, "const float r = (float)%s[0];", R);
	ew_line(E->w, "const int64_t t = %s[0];", T);
	const char *lr = "r";
	if (n->op == OP_ADAM) {
		double alpha = ir_attr_float(n, "alpha", 0.9f), beta = ir_attr_float(n, "beta", 0.999f);
		ew_line(E->w, "const float r_adj = t > 0 ? (float)((double)r * sqrt(1.0 - pow(%s, (double)t)) / "
			"(1.0 - pow(%s, (double)t))) : r;", emit_float(E, beta, DT_F64), emit_float(E, alpha, DT_F64));
		lr = "r_adj";
	} else if (n->op == OP_ADAGRAD) {
		ew_line(E->w, "const float r_adj = (float)((double)r / (1.0 + (double)t * %s));",
			emit_float(E, ir_attr_float(n, "decay_factor", 0.0f), DT_F64));
		lr = "r_adj";
	}
	for (int j = 0; j < nt; j++) {
		const ir_value *X = n->in[2 + j];
		const char *x = emit_ref(E, X), *g = emit_ref(E, n->in[2 + nt + j]), *s1 = emit_ref(E, n->in[2 + 2 * nt + j]);
		const char *xn = n->out[j] ? emit_ref(E, n->out[j]) : NULL;
		const char *s1n = n->out[nt + j] ? emit_ref(E, n->out[nt + j]) : NULL;
		const char *cnt = emit_numel(E, &X->shape);
		if (!xn || !s1n || (n->op == OP_ADAM && !n->out[2 * nt + j])) {
			diag_node(E->D, n, "internal: an output of the optimiser has no storage");
			return;
		}
		switch (n->op) {
		case OP_MOMENTUM: {
			int nesterov = strcmp(ir_attr_string(n, "mode", "standard"), "nesterov") == 0;
			ew_line(E->w, "rt_momentum_kernel(%s, %s, %s, %s, %s, %s, %s, %s, %s, t > 0 ? %s : 1.0f, %d);", xn, s1n,
				x, g, s1, cnt, lr, emit_float(E, wd, DT_F32),
				emit_float(E, ir_attr_float(n, "alpha", 0.0f), DT_F32),
				emit_float(E, ir_attr_float(n, "beta", 0.0f), DT_F32), nesterov);
			break;
		}
		case OP_ADAM: {
			const char *s2 = emit_ref(E, n->in[2 + 3 * nt + j]), *s2n = emit_ref(E, n->out[2 * nt + j]);
			ew_line(E->w, "rt_adam_kernel(%s, %s, %s, NULL, %s, %s, %s, %s, %s, %s, 1.0f, %s, %s, %s, %s, %s);",
				xn, s1n, s2n, x, g, s1, s2, cnt, lr,
				emit_float(E, ir_attr_float(n, "epsilon", 1e-6f), DT_F32), emit_float(E, wd, DT_F32),
				emit_float(E, ir_attr_float(n, "alpha", 0.9f), DT_F64),
				emit_float(E, ir_attr_float(n, "beta", 0.999f), DT_F64),
				emit_float(E, 1.0 - (double)ir_attr_float(n, "norm_coefficient_post", 0.0f), DT_F32));
			break;
		}
		default:        /* Adagrad */
			ew_line(E->w, "rt_adagrad_kernel(%s, %s, %s, %s, %s, %s, %s, %s, %s);", xn, s1n, x, g, s1, cnt, lr,
				emit_float(E, wd, DT_F32), emit_float(E, ir_attr_float(n, "epsilon", 1e-6f), DT_F32));
			break;
		}
	}
	ew_close(E->w, "");
}

/* ---- dispatch --------------------------------------------------------------- */

void emit_node(emit_ctx *E, ir_node *n)
{
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && n->out[k]->shape.rank < 0) {
			diag_node(E->D, n, "internal: output '%s' has no shape", n->out[k]->name);
			return;
		}
	switch (n->op) {
	case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN: case OP_IDENTITY:
		emit_view(E, n);
		return;
	case OP_TRANSPOSE: emit_transpose(E, n); return;
	case OP_SLICE: emit_slice(E, n); return;
	case OP_SPLIT: case OP_CONCAT: emit_split_concat(E, n); return;
	case OP_GATHER: emit_gather(E, n); return;
	case OP_SHAPE: emit_shape(E, n); return;
	case OP_CONSTOFSHAPE: emit_const_of_shape(E, n); return;
	case OP_GEMM: emit_gemm(E, n); return;
	case OP_MATMUL: emit_matmul(E, n); return;
	case OP_SOFTMAX: case OP_LOGSOFTMAX: emit_softmax(E, n); return;
	case OP_RECURRENCE:
		/* a block of its own: its locals (T, B, states, s0, ...) */
		ew_open(E->w, "%s", "");
		emit_recurrence(E, n);
		ew_close(E->w, "");
		return;
	case OP_MOMENTUM: case OP_ADAM: case OP_ADAGRAD: emit_optim(E, n); return;
	case OP_REDUCESUM: {
		int lo, hi;
		if (n->in[0]->dtype == DT_F32 && emit_reduce_run(n, &lo, &hi))
			train_op_emit(E, n);
		else
			emit_reduce(E, n);
		return;
	}
	case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCEPROD: case OP_REDUCEL1:
	case OP_REDUCEL2: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP: case OP_REDUCESUMSQUARE:
		emit_reduce(E, n);
		return;
	case OP_ARGMAX: case OP_ARGMIN: emit_argmax(E, n); return;
	case OP_CONV: emit_conv(E, n); return;
	case OP_QUANTIZELINEAR: case OP_DEQUANTIZELINEAR: emit_quant_linear(E, n); return;
	case OP_DYNQUANTIZELINEAR: emit_dyn_quant(E, n); return;
	case OP_MATMULINTEGER: case OP_QLINEARMATMUL: emit_qmatmul(E, n); return;
	case OP_CONVINTEGER: case OP_QLINEARCONV: emit_qconv(E, n); return;
	case OP_PAD: emit_pad(E, n); return;
	case OP_RESIZE: emit_resize(E, n); return;
	case OP_GRIDSAMPLE: emit_gridsample(E, n); return;
	case OP_ROIALIGN: emit_roialign(E, n); return;
	case OP_SIZE: emit_size(E, n); return;
	case OP_NONZERO: case OP_COMPRESS: case OP_UNIQUE: case OP_NMS: emit_datadep(E, n); return;
	case OP_MAXPOOL: case OP_AVGPOOL: case OP_GLOBALAVGPOOL: case OP_GLOBALMAXPOOL: emit_pool(E, n); return;
	case OP_LAYERNORM: case OP_BATCHNORM: emit_norm(E, n); return;
	case OP_DROPOUT: emit_dropout(E, n); return;
	case OP_RANDOMUNIFORM: case OP_RANDOMNORMAL: case OP_RANDOMUNIFORMLIKE: case OP_RANDOMNORMALLIKE:
	case OP_BERNOULLI:
		emit_random(E, n);
		return;
	case OP_TRILU: case OP_CUMSUM: case OP_HARDMAX: case OP_EYELIKE: case OP_RANGE: case OP_GATHERELEMENTS:
	case OP_ONEHOT: case OP_TILE: case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: case OP_TOPK:
		emit_misc(E, n);
		return;
	case OP_DEPTHTOSPACE: case OP_SPACETODEPTH: case OP_CONVTRANSPOSE: case OP_SCATTERELEMENTS: case OP_SCATTERND:
	case OP_GATHERND: case OP_INSTANCENORM: case OP_REVERSESEQ: case OP_TFIDF:
		emit_layout(E, n);
		return;
	case OP_DET: case OP_EINSUM: case OP_LRN: case OP_MVN: case OP_MAXUNPOOL: case OP_DFT: case OP_STFT:
	case OP_MELWEIGHT:
		emit_linalg(E, n);
		return;
	case OP_SOFTMAXCE: case OP_NLLLOSS:
		if (is_train_ce(n))
			train_op_emit(E, n);
		else
			emit_loss(E, n);
		return;
	case OP_SLICESCATTER: case OP_SOFTMAXCEGRAD:
	case OP_MSELOSS: case OP_MSELOSSGRAD: case OP_MATEXP: case OP_CONVGRAD: case OP_PADGRAD: case OP_CLASSLOSSGRAD:
		train_op_emit(E, n);
		return;
	case OP_LSTM: case OP_GRU: case OP_RNN:
		diag_node(E->D, n, "internal: %s reached the emitter without being lowered", ir_op_name(n->op));
		return;
	default:
		break;
	}
	if (!loopable(n)) {
		diag_node(E->D, n, "no emitter for %s", ir_op_name(n->op));
		return;
	}
	if (n->out[0]->dtype == DT_STRING || !ir_dtype_ctype(n->out[0]->dtype)) {
		diag_node(E->D, n, "%s tensors are not supported", ir_dtype_name(n->out[0]->dtype));
		return;
	}
	if (!emit_fused(E, &n, 1))
		diag_node(E->D, n, "inputs do not broadcast to the output shape %s", shape_str(E, n->out[0]));
}
