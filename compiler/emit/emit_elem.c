/* emit_elem.c: element-wise nodes (and Cast and Expand, which are
 * element-wise copies) as typed loops printed in place: one loop nest over
 * the output shape, with every input indexed through its own strides, zero
 * on broadcast axes.  Adjacent axes on which every operand behaves alike
 * are merged first, so equal shapes give a single flat loop and a bias row
 * gives two loops.  A fusion group (pass_fuse) whose nodes share one output
 * shape is one loop whose intermediate values are locals; a value is stored
 * only when it has storage (a workspace slot from pass_plan, or a graph
 * output).  The expression of each operator is elem.def's, printed for the
 * output's type (emit_elem_expr, which the recurrence emitter uses too).
 */
#include "elem.h"
#include "emit.h"
#include "emit_ops.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- loop nests with broadcasting ----------------------------------------- */

/* Plans the nest; 0 if some operand does not broadcast to dom. */
int ops_loop_plan(emit_ctx *E, loop *L, const ir_shape *dom, const ir_shape *const *ops, int nops)
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

void ops_loop_open(emit_ctx *E, const loop *L)
{
	if (L->naxes == 0)
		ew_open(E->w, "%s", "");
	for (int m = 0; m < L->naxes; m++)
		ew_open(E->w, "for (int64_t %s = 0; %s < %s; %s++)", L->var[m], L->var[m], L->ext[m], L->var[m]);
}

void ops_loop_close(emit_ctx *E, const loop *L)
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

/* ---- loops of element-wise nodes and fused groups ---------------------------- */

/* Nodes printed by the element-wise loop machinery. */
int ops_loopable(const ir_node *n)
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
int ops_elem_loop(emit_ctx *E, ir_node **nodes, int count)
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
		stored |= ops_is_stored(E, nodes[i]->out[0]);
	if (!stored) {
		/* nothing to write (e.g. a chain of Identity nodes whose values
		 * are all views of one buffer) */
		for (int i = 0; i < count; i++)
			ops_node_comment(E, nodes[i], "result unused: no code");
		return 1;
	}
	loop L;
	if (!ops_loop_plan(E, &L, dom, shapes, nops))
		return 0;

	const char **refs = arena_array(E->A, (size_t)nops + 1, sizeof *refs);
	for (int j = 0; j < nops; j++)
		refs[j] = emit_ref(E, ops[j]);
	if (count == 1) {
		ops_node_comment(E, nodes[0], NULL);
	} else {
		ew_line(E->w, "/* fused group, one loop over %s:", shape_str(E, nodes[0]->out[0]));
		for (int i = 0; i < count; i++) {
			const ir_node *n = nodes[i];
			const char *from = n->origin && strcmp(n->origin, n->name) ? n->origin : NULL;
			ew_line(E->w, " *   t%d = %s '%s'%s%s%s", i, ir_op_name(n->op), ops_safe(E, n->name),
				from ? " from " : "", ops_safe(E, from), i + 1 == count ? " */" : "");
		}
	}
	ops_loop_open(E, &L);
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
		if (ops_is_stored(E, y))
			ew_line(E->w, "%s[%s] = %s;", emit_ref(E, y), L.oidx, local ? arena_printf(E->A, "t%d", i) : e);
	}
	ops_loop_close(E, &L);
	return 1;
}

void emit_group(emit_ctx *E, ir_node **nodes, int count)
{
	if (count > 1 && ops_elem_loop(E, nodes, count))
		return;
	/* One by one, every value then needs storage: pass_fuse only groups
	 * nodes of one output shape, so this is for callers' single nodes. */
	for (int i = 0; i < count; i++) {
		ASSERT(count == 1 || ir_storage(nodes[i]->out[0]) != nodes[i]->out[0] ||
		       ops_is_stored(E, nodes[i]->out[0]));
		emit_node(E, nodes[i]);
	}
}
