/* emit_ops.c: C for the nodes of the root graph other than recurrences:
 * emit_node, one case per operator, and the helpers every operator family
 * shares (emit_ops.h).  This file holds the families of data movement
 * (views, Transpose, Slice, Split, Concat, Gather: libcellrt's generic
 * kernels of runtime/rt_ops.c, with element sizes) and of products and
 * softmax (Gemm and MatMul call rt_sgemm); the others are
 *   emit_elem.c    element-wise loops and fused groups (emit_elem_expr);
 *   emit_nn.c      reductions, convolutions, quantization, padding, image
 *                  sampling, pooling, normalisations, randomness, optimisers;
 *   emit_tensor.c  index and generator loops, layout and scatter/gather,
 *                  linear algebra and signals, data-dependent lengths, losses.
 * Shape-determining inputs are constants here (pass_infer), and every
 * dimension prints through emit_dim, so one emitted kernel serves all
 * values of the dimension symbols.
 *
 * Legend: M, N, K matrix sizes; outer/n/inner the three-way split of a
 * tensor around one axis.
 */
#include "emit.h"
#include "emit_ops.h"
#include "infer.h"
#include "cellrt.h"
#include "util.h"

#include <string.h>

/* ---- small helpers -------------------------------------------------------- */

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

/* Text safe in a comment. */
const char *ops_safe(emit_ctx *E, const char *s)
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
void ops_node_comment(emit_ctx *E, const ir_node *n, const char *what)
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
	ew_line(E->w, "/* %s '%s'%s%s: %s -> %s%s%s */", ir_op_name(n->op), ops_safe(E, n->name),
		from ? " from " : "", ops_safe(E, from), ins, outs, what ? "; " : "", what ? what : "");
}

/* The runtime's enumerator of a solver or model name: "dopri5" -> RT_ODE_DOPRI5. */
static const char *upper_enum(emit_ctx *E, const char *name)
{
	char *r = arena_printf(E->A, "RT_ODE_%s", name);
	for (char *p = r; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	return r;
}

/* An ODE block or hybrid (compiler/cell/ode.h): one call of the runtime's
 * solver, each setting printed from the node's attributes (ir_verify
 * checked them). */
static void emit_odeblock(emit_ctx *E, ir_node *n)
{
	const char *model = ir_attr_string(n, "model", ""), *solver = ir_attr_string(n, "solver", "");
	const ir_attr *rtol = ir_attr_find(n, "rtol"), *atol = ir_attr_find(n, "atol");
	const ir_value *x = n->in[0], *st = n->nout > 1 ? n->out[1] : NULL;
	int rnn = n->op == OP_ODERNN, p = 1 + rnn;     /* the first parameter */
	ops_node_comment(E, n, arena_printf(E->A, "%s, solver %s", model, solver));
	ew_open(E->w, "%s", "");
	ew_line(E->w, "const rt_ode_opts o_ = {.method = %s, .steps = %lld, .rtol = %.17g, .atol = %.17g, "
		".max_steps = %lld};", upper_enum(E, solver), (long long)ir_attr_int(n, "steps", 0),
		rtol ? rtol->f : 0.0, atol ? atol->f : 0.0, (long long)ir_attr_int(n, "max_steps", 0));
	ew_line(E->w, "int64_t stats_[3];     /* NFE, accepted and rejected steps */");
	/* the hybrid's parameters after W_x, b_x, W_u: W_h, b_h [, w [, c]] */
	const char *rest = rnn ? arena_printf(E->A, "%s, %s, %s, %s", emit_ref(E, n->in[p + 3]),
					      emit_ref(E, n->in[p + 4]),
					      n->nin > p + 5 ? emit_ref(E, n->in[p + 5]) : "NULL",
					      n->nin > p + 6 ? emit_ref(E, n->in[p + 6]) : "NULL") : NULL;
	/* the block's: all of them, in order */
	char *params = "";
	for (int k = p; !rnn && k < n->nin; k++)
		params = arena_printf(E->A, "%s%s%s", params, k > p ? ", " : "", emit_ref(E, n->in[k]));
	if (rnn)
		ew_line(E->w, "int st_ = rt_ode_rnn_f32(%s, &o_, %s, %s, %lld, %lld, %s, %s, %s, %s, %s, %s, %s, "
			"stats_);", upper_enum(E, model), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
			(long long)x->shape.d[2].k, (long long)ir_attr_int(n, "hidden", 0), emit_ref(E, x),
			emit_ref(E, n->in[1]), emit_ref(E, n->in[2]), emit_ref(E, n->in[3]), emit_ref(E, n->in[4]),
			rest, emit_ref(E, n->out[0]));
	else
		ew_line(E->w, "int st_ = rt_ode_block_f32(%s, &o_, %.17g, %.17g, %s, %lld, %lld, %lld, %s, "
			"(const float *const[]){%s}, %s, stats_);", upper_enum(E, model), ir_attr_find(n, "t0")->f,
			ir_attr_find(n, "t1")->f, emit_dim(E, x->shape.d[0]), (long long)x->shape.d[1].k,
			(long long)ir_attr_int(n, "hidden", 0), (long long)ir_attr_int(n, "augment", 0),
			emit_ref(E, x), params, emit_ref(E, n->out[0]));
	if (st && (st->nuses || st->is_output))
		ew_line(E->w, "memcpy(%s, stats_, sizeof stats_);", emit_ref(E, st));
	ew_line(E->w, "if (st_ != RT_OK)");
	ew_line(E->w, "\treturn st_;");
	ew_close(E->w, "");
}


/* True when v has its own storage the group must write. */
int ops_is_stored(emit_ctx *E, const ir_value *v)
{
	if (ir_storage(v) != v)
		return 0;
	return (v->is_output && v->graph == E->g) || v->slot >= 0 || ir_output_backing(v);
}

/* "(const int64_t[]){d0, d1, ..}" of the dims of s from axis `from` on. */
const char *ops_dims_lit(emit_ctx *E, const ir_shape *s, int from)
{
	char *r = "";
	for (int i = from; i < s->rank; i++)
		r = arena_printf(E->A, "%s%s%s", r, i > from ? ", " : "", emit_dim(E, s->d[i]));
	return arena_printf(E->A, "(const int64_t[]){%s}", *r ? r : "0");
}

/* "v0, v1, ..." ("0" when empty: C has no empty initialiser lists). */
const char *ops_ints_list(emit_ctx *E, const int64_t *v, int n)
{
	char *r = "";
	for (int i = 0; i < n; i++)
		r = arena_printf(E->A, "%s%s%lld", r, i ? ", " : "", (long long)v[i]);
	return n ? r : "0";
}

const char *ops_ints_lit(emit_ctx *E, const int64_t *v, int n)
{
	return arena_printf(E->A, "(const int64_t[]){%s}", ops_ints_list(E, v, n));
}

const char *ops_pads_lit(emit_ctx *E, const ir_node *n, const int64_t *pads, const int64_t *k, const int64_t *st,
			 const int64_t *dil, int nsp)
{
	int upper = !strcmp(ir_attr_string((ir_node *)n, "auto_pad", "NOTSET"), "SAME_UPPER");
	const ir_attr *os = ir_attr_find((ir_node *)n, "output_shape"), *op = ir_attr_find((ir_node *)n, "output_padding");
	char *r = "";
	for (int i = 0; i < 2 * nsp; i++) {
		int a = i % nsp;
		const char *v = arena_printf(E->A, "%lld", (long long)pads[i]);
		long long span = (long long)(dil[a] * (k[a] - 1) + 1);
		if (n->op == OP_CONVTRANSPOSE && infer_convt_pads_at_run_time(n, a))
			v = arena_printf(E->A, "rt_convt_pad(%s, %lld, %lld, %lld, %lld, %d, %d)",
					 emit_dim(E, n->in[0]->shape.d[2 + a]), (long long)st[a], span,
					 (long long)(op ? op->ints[a] : 0), (long long)os->ints[os->n - nsp + a], upper, i >= nsp);
		else if (n->op != OP_CONVTRANSPOSE && infer_pads_at_run_time(n, a))
			v = arena_printf(E->A, "rt_same_pad(%s, %lld, %lld, %d, %d)", emit_dim(E, n->in[0]->shape.d[2 + a]),
					 (long long)st[a], span, upper, i >= nsp);
		r = arena_printf(E->A, "%s%s%s", r, i ? ", " : "", v);
	}
	return arena_printf(E->A, "(const int64_t[]){%s}", nsp ? r : "0");
}

/* ---- data movement ------------------------------------------------------- */

/* Reshape, Squeeze, Unsqueeze, Flatten, Identity: the same elements. */
static void emit_view(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	if (ir_storage(y) != y) {
		ops_node_comment(E, n, "a view: no code");
		return;
	}
	const char *dst = emit_ref(E, y), *src = emit_ref(E, x);
	if (!strcmp(dst, src)) {
		ops_node_comment(E, n, "a view, already in the output's buffer: no code");
		return;
	}
	ops_node_comment(E, n, "copy");
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
	ops_node_comment(E, n, NULL);
	if (r <= 1) {
		ew_line(E->w, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", emit_ref(E, y), emit_ref(E, x),
			emit_numel(E, &y->shape), ctype(y));
		return;
	}
	ew_open(E->w, "%s", "");
	ew_line(E->w, "static const int perm[%d] = {%s};", r, ps);
	if (x->data_dep) {
		/* the run's length on x's data-dependent axis (x is packed at its
		 * actual dims): the output is packed at its own */
		char *xd = "";
		for (int i = 0; i < r; i++)
			xd = arena_printf(E->A, "%s%s%s", xd, i ? ", " : "",
					  i == x->dd_axis ? arena_printf(E->A, "m->dd_len[%d]", emit_dd_slot(E->g, ir_dd_source(x)))
							  : emit_dim(E, x->shape.d[i]));
		ew_line(E->w, "const int64_t xdims[%d] = {%s}; /* axis %d: the length of this run */", r, xd, x->dd_axis);
	} else {
		ew_line(E->w, "const int64_t xdims[%d] = %s;", r, dims_init(E, &x->shape));
	}
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
	ops_node_comment(E, n, NULL);
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
	ops_node_comment(E, n, NULL);
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
	ops_node_comment(E, n, x->data_dep ? "on the data-dependent axis: its length this run; indices checked at "
			 "run time" : "indices checked at run time");
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = rt_gather(%s, %s, sizeof(%s), %s, %s, %s, %s, %d, %s);", emit_ref(E, y),
		emit_ref(E, x), ctype(y), emit_dim(E, dims_prod(&x->shape, 0, axis)),
		x->data_dep ? arena_printf(E->A, "m->dd_len[%d]", emit_dd_slot(E->g, ir_dd_source(x)))
			    : emit_dim(E, x->shape.d[axis]), emit_dim(E, dims_prod(&x->shape, axis + 1, r)),
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
	ops_node_comment(E, n, NULL);
	for (int64_t i = start; i < end; i++)
		ew_line(E->w, "%s[%lld] = %s;", emit_ref(E, y), (long long)(i - start), emit_dim(E, x->shape.d[i]));
}

static void emit_const_of_shape(emit_ctx *E, ir_node *n)
{
	const ir_value *y = n->out[0];
	ir_attr *va = ir_attr_find(n, "value");
	const char *v = va && va->kind == ATTR_TENSOR && va->t && ir_value_is_const(va->t)
		? emit_scalar(E, va->t, 0) : "0";
	ops_node_comment(E, n, NULL);
	if (!ops_is_stored(E, y))
		return;
	ew_line(E->w, "for (int64_t i = 0; i < %s; i++)", emit_numel(E, &y->shape));
	ew_line(E->w, "\t%s[i] = %s;", emit_ref(E, y), v);
}

/* ---- linear algebra and softmax ------------------------------------------ */

/* The products (and Softmax) run in the precision of their inputs: the
 * runtime's functions' prefix ("s" or "d", as BLAS names them), NULL after
 * reporting inputs of another type or of mixed types (infer refuses both). */
static const char *gemm_prec(emit_ctx *E, ir_node *n)
{
	ir_dtype t = n->in[0]->dtype;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && (n->in[k]->dtype != t || (t != DT_F32 && t != DT_F64))) {
			diag_node(E->D, n, "%s is compiled for float32 or float64 tensors of one type (input %d is %s)",
				  ir_op_name(n->op), k, ir_dtype_name(n->in[k]->dtype));
			return NULL;
		}
	return t == DT_F64 ? "d" : "s";
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
	const char *p = gemm_prec(E, n);
	if (!p)
		return;
	ir_dtype dt = n->in[0]->dtype;
	const ir_value *a = n->in[0], *b = n->in[1], *c = n->nin > 2 ? n->in[2] : NULL, *y = n->out[0];
	int ta = ir_attr_int(n, "transA", 0) != 0, tb = ir_attr_int(n, "transB", 0) != 0;
	float alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	ir_dim M = a->shape.d[ta ? 1 : 0], K = a->shape.d[ta ? 0 : 1], N = b->shape.d[tb ? 0 : 1];
	const char *yr = emit_ref(E, y);
	/* B stored packed in int8 (store_i8, pass_schedule): its only copy */
	int i8 = ir_attr_int(n, "store_i8", 0) != 0;
	const char *sM = emit_dim(E, M), *sN = emit_dim(E, N), *sK = emit_dim(E, K);
	ops_node_comment(E, n, i8 ? "Y = alpha * A B^T + beta * C, B stored in int8 (rt_gemv_pack_i8)"
				  : "Y = alpha * op(A) op(B) + beta * C");
	if (c && beta != 0 && is_bias_row(&c->shape)) {
		/* C a row vector (a bias): added by the product's own kernel */
		if (i8)
			ew_line(E->w, "rt_gemm_packed_i8(%s, 0, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", sM, sN, sN,
				sK, emit_float(E, alpha, dt), emit_ref(E, a), sK, emit_ref(E, b), emit_float(E, beta, dt),
				emit_ref(E, c), yr, sN);
		else
			ew_line(E->w, "rt_%sgemm_bias(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", p, ta,
				tb, sM, sN, sK, emit_float(E, alpha, dt), emit_ref(E, a), emit_dim(E, ta ? M : K),
				emit_ref(E, b), emit_dim(E, tb ? K : N), emit_float(E, beta, dt), emit_ref(E, c), yr, sN);
		return;
	}
	if (c && beta != 0) {
		/* Y = C broadcast, then the product accumulates onto it */
		loop L;
		const ir_shape *cs = &c->shape;
		ASSERT(ops_loop_plan(E, &L, &y->shape, &cs, 1));
		const char *cr = emit_ref(E, c);
		ops_loop_open(E, &L);
		ew_line(E->w, "%s[%s] = %s[%s];", yr, L.oidx, cr, L.idx[0]);
		ops_loop_close(E, &L);
	}
	if (i8)
		ew_line(E->w, "rt_gemm_packed_i8(%s, 0, %s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, %s);", sM, sN, sN, sK,
			emit_float(E, alpha, dt), emit_ref(E, a), sK, emit_ref(E, b),
			emit_float(E, c && beta != 0 ? beta : 0, dt), yr, sN);
	else
		ew_line(E->w, "rt_%sgemm(%d, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", p, ta, tb, sM, sN, sK,
			emit_float(E, alpha, dt), emit_ref(E, a), emit_dim(E, ta ? M : K), emit_ref(E, b),
			emit_dim(E, tb ? K : N), emit_float(E, c && beta != 0 ? beta : 0, dt), yr, sN);
}

mm_geom ops_matmul_geometry(const ir_value *a, const ir_value *b, const ir_value *y)
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
	const char *p = gemm_prec(E, n);
	if (!p)
		return;
	const char *one = n->in[0]->dtype == DT_F64 ? "1.0" : "1.0f", *zero = n->in[0]->dtype == DT_F64 ? "0.0" : "0.0f";
	const ir_value *a = n->in[0], *b = n->in[1], *y = n->out[0];
	mm_geom G = ops_matmul_geometry(a, b, y);
	ir_dim M = G.M, K = G.K, N = G.N;
	ir_shape ab = G.ab, bb = G.bb, yb = G.yb;
	ir_dim bnum = ir_shape_numel(&bb);
	const char *ar = emit_ref(E, a), *br = emit_ref(E, b), *yr = emit_ref(E, y);
	const char *sM = emit_dim(E, M), *sN = emit_dim(E, N), *sK = emit_dim(E, K);
	ops_node_comment(E, n, NULL);
	if (ir_dim_is_const(bnum) && bnum.k == 1) {
		/* B is one matrix: every row of every batch of A in one product */
		ir_dim rows = ir_dim_mul(ir_shape_numel(&ab), M);
		ew_line(E->w, "rt_%sgemm(0, 0, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s);", p, emit_dim(E, rows),
			sN, sK, one, ar, sK, br, sN, zero, yr, sN);
		return;
	}
	loop L;
	const ir_shape *ops[2] = {&ab, &bb};
	if (!ops_loop_plan(E, &L, &yb, ops, 2)) {
		diag_node(E->D, n, "MatMul batch dimensions do not broadcast");
		return;
	}
	ops_loop_open(E, &L);
	ew_line(E->w, "rt_%sgemm(0, 0, %s, %s, %s, %s, %s + %s, %s, %s + %s, %s, %s, %s + %s, %s);", p, sM, sN,
		sK, one, ar, mul_str(E, factor(E, L.idx[0]), emit_dim(E, ir_dim_mul(M, K))), sK, br,
		mul_str(E, factor(E, L.idx[1]), emit_dim(E, ir_dim_mul(K, N))), sN, zero, yr,
		mul_str(E, factor(E, L.oidx), emit_dim(E, ir_dim_mul(M, N))), sN);
	ops_loop_close(E, &L);
}

static void emit_softmax(emit_ctx *E, ir_node *n)
{
	if (!gemm_prec(E, n))
		return;
	const ir_value *x = n->in[0], *y = n->out[0];
	const char *fn = arena_printf(E->A, "%s%s", n->op == OP_SOFTMAX ? "rt_softmax" : "rt_log_softmax",
				      x->dtype == DT_F64 ? "_f64" : "");
	int r = x->shape.rank;
	int axis = axis_of(ir_attr_int(n, "axis", -1), r);
	ops_node_comment(E, n, arena_printf(E->A, "along axis %d", axis));
	if (r == 0) {
		/* one element: softmax 1, log-softmax 0 (NaN and Inf as numpy) */
		ew_line(E->w, "%s(%s, %s, 1, 1, 1);", fn, emit_ref(E, y), emit_ref(E, x));
		return;
	}
	ew_line(E->w, "%s(%s, %s, %s, %s, %s);", fn, emit_ref(E, y), emit_ref(E, x), emit_dim(E, dims_prod(&x->shape, 0, axis)),
		emit_dim(E, x->shape.d[axis]), emit_dim(E, dims_prod(&x->shape, axis + 1, r)));
}

static void emit_size(emit_ctx *E, ir_node *n)
{
	ops_node_comment(E, n, NULL);
	ew_line(E->w, "%s[0] = %s;", emit_ref(E, n->out[0]), emit_numel(E, &n->in[0]->shape));
}

/* ---- dispatch --------------------------------------------------------------- */

/* The one place an operator meets its printer: one case per operator (or
 * per family of operators one printer serves), each only a call, so it is
 * as long as the list of operators and decides nothing; the element-wise
 * operators fall through to one loop at the end. */
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
		ew_line(E->w, "/* recurrence '%s':", ops_safe(E, n->name));
		emit_rec_doc(E, n);
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
		if (ops_is_train_ce(n))
			train_op_emit(E, n);
		else
			emit_loss(E, n);
		return;
	case OP_SLICESCATTER: case OP_SOFTMAXCEGRAD:
	case OP_MSELOSS: case OP_MSELOSSGRAD: case OP_MATEXP: case OP_CONVGRAD: case OP_PADGRAD: case OP_CLASSLOSSGRAD:
		train_op_emit(E, n);
		return;
	case OP_ODEBLOCK: case OP_ODERNN:
		emit_odeblock(E, n);
		return;
	case OP_LSTM: case OP_GRU: case OP_RNN:
		diag_node(E->D, n, "internal: %s reached the emitter without being lowered", ir_op_name(n->op));
		return;
	default:
		break;
	}
	if (!ops_loopable(n)) {
		diag_node(E->D, n, "no emitter for %s", ir_op_name(n->op));
		return;
	}
	if (n->out[0]->dtype == DT_STRING || !ir_dtype_ctype(n->out[0]->dtype)) {
		diag_node(E->D, n, "%s tensors are not supported", ir_dtype_name(n->out[0]->dtype));
		return;
	}
	if (!ops_elem_loop(E, &n, 1))
		diag_node(E->D, n, "inputs do not broadcast to the output shape %s", shape_str(E, n->out[0]));
}
