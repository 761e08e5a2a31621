/* emit_train_ops.c: C for the training ops of ops.def (the block
 * "training"): ReduceSum over one run of axes, SliceScatter, MatrixExp, the
 * losses with their gradients, and the gradients of Conv, Pad and the class
 * losses (ConvGrad, PadGrad, ClassLossGrad: calls of runtime/rt_nn.c).  Their
 * shape rules are train_ops_infer.c's, beside the other inference code;
 * where the losses' operands are is its table (train.h, train_loss_args_of).
 *
 * pass_grad makes these nodes; they appear only in the root graph of a
 * --train compilation.  ReduceSum here sums over one contiguous run of axes
 * (pass_grad makes one node per run), so the emitted loop is the three-way
 * split outer x n x inner.  The losses follow PyTorch's reductions
 * (cross_entropy and mse_loss with reduction='mean'); masked MSE divides by
 * sum(mask) (docs/training.md).
 */
#include "emit.h"
#include "infer.h"
#include "train.h"
#include "util.h"

#include <string.h>

static int norm_axis(int64_t a, int r) { return (int)(a < 0 ? a + r : a); }

/* ---- C ---------------------------------------------------------------------------- */

int emit_reduce_run(const ir_node *n, int *lo, int *hi)
{
	unsigned char red[IR_MAX_RANK];
	int r = n->in[0]->shape.rank;
	*lo = *hi = -1;
	if (n->nin < 2 || !n->in[1] || infer_reduce_axes(n, r, red))
		return 0;
	for (int a = 0; a < r; a++)
		if (red[a]) {
			if (*lo >= 0 && *hi != a - 1)
				return 0;
			if (*lo < 0)
				*lo = a;
			*hi = a;
		}
	return *lo >= 0;
}

static ir_dim prod(const ir_shape *s, int from, int to)
{
	ir_dim p = ir_dim_const(1);
	for (int i = from; i < to; i++)
		p = ir_dim_mul(p, s->d[i]);
	return p;
}

static void comment(emit_ctx *E, const ir_node *n)
{
	char *ins = "";
	for (int k = 0; k < n->nin; k++)
		if (n->in[k])
			ins = arena_printf(E->A, "%s%s%s", ins, *ins ? ", " : "",
					   ir_shape_str(E->A, E->g, &n->in[k]->shape));
	ew_line(E->w, "/* %s: %s -> %s%s */", ir_op_name(n->op), ins,
		ir_shape_str(E->A, E->g, &n->out[0]->shape), n->attrs && ir_attr_int(n, "backward", 0) ? " (backward)" : "");
}

static void emit_reducesum(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int lo, hi, r = x->shape.rank;
	ASSERT(emit_reduce_run(n, &lo, &hi));
	const char *outer = emit_dim(E, prod(&x->shape, 0, lo)), *cnt = emit_dim(E, prod(&x->shape, lo, hi + 1)),
		   *inner = emit_dim(E, prod(&x->shape, hi + 1, r));
	comment(E, n);
	ew_open(E->w, "%s", "");
	/* dst and src rather than y and x: names a model's inputs and outputs
	 * have less often (a kernel's local keeps them in_k / out_k in NAME.c) */
	ew_line(E->w, "float *dst = %s;", emit_ref(E, y));
	ew_line(E->w, "const float *src = %s;", emit_ref(E, x));
	ew_line(E->w, "const int64_t outer = %s, cnt = %s, inner = %s;", outer, cnt, inner);
	ew_line(E->w, "memset(dst, 0, (size_t)(outer * inner) * sizeof(float));");
	ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
	ew_line(E->w, "\tfor (int64_t k = 0; k < cnt; k++) {");
	ew_line(E->w, "\t\tRT_IVDEP /* dst and src never overlap (the planner gives them disjoint storage) */");
	ew_line(E->w, "\t\tfor (int64_t i = 0; i < inner; i++)");
	ew_line(E->w, "\t\t\tdst[o * inner + i] += src[(o * cnt + k) * inner + i];");
	ew_line(E->w, "\t}");
	ew_close(E->w, "");
}

static void emit_slicescatter(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *u = n->in[1], *y = n->out[0];
	const ir_value *starts = n->in[2], *axes = n->nin > 4 ? n->in[4] : NULL,
		       *steps = n->nin > 5 ? n->in[5] : NULL;
	int r = x->shape.rank;
	const char *st[IR_MAX_RANK], *sp[IR_MAX_RANK];
	for (int i = 0; i < r; i++)
		st[i] = "0", sp[i] = "1";
	int64_t cnt = ir_shape_const_numel(&starts->shape);
	for (int64_t i = 0; i < cnt; i++) {
		int a = axes ? norm_axis(ir_const_int(axes, i), r) : (int)i;
		int64_t s0 = ir_const_int(starts, i), step = steps ? ir_const_int(steps, i) : 1;
		ASSERT(a >= 0 && a < r && step > 0);
		st[a] = arena_printf(E->A, "rt_slice_start(%lld, %s, %lld)", (long long)s0,
				     emit_dim(E, x->shape.d[a]), (long long)step);
		sp[a] = arena_printf(E->A, "%lld", (long long)step);
	}
	char *ss = "", *ps = "", *yd = "", *ud = "";
	for (int i = 0; i < r; i++) {
		ss = arena_printf(E->A, "%s%s%s", ss, i ? ", " : "", st[i]);
		ps = arena_printf(E->A, "%s%s%s", ps, i ? ", " : "", sp[i]);
		yd = arena_printf(E->A, "%s%s%s", yd, i ? ", " : "", emit_dim(E, y->shape.d[i]));
		ud = arena_printf(E->A, "%s%s%s", ud, i ? ", " : "", emit_dim(E, u->shape.d[i]));
	}
	comment(E, n);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "float *y = %s;", emit_ref(E, y));
	ew_line(E->w, "const float *u = %s;", emit_ref(E, u));
	ew_line(E->w, "memset(y, 0, (size_t)%s * sizeof(float));", emit_numel(E, &y->shape));
	if (r == 0) {
		ew_line(E->w, "y[0] = u[0];");
		ew_close(E->w, "");
		return;
	}
	ew_line(E->w, "const int64_t ydims[%d] = {%s}, udims[%d] = {%s};", r, yd, r, ud);
	ew_line(E->w, "const int64_t start[%d] = {%s}, step[%d] = {%s};", r, ss, r, ps);
	ew_line(E->w, "int64_t ystr[%d], total = 1;", r);
	ew_line(E->w, "for (int a = %d; a >= 0; a--) { ystr[a] = a == %d ? 1 : ystr[a + 1] * ydims[a + 1]; total *= udims[a]; }",
		r - 1, r - 1);
	ew_open(E->w, "for (int64_t e = 0; e < total; e++)");
	ew_line(E->w, "int64_t rem = e, off = 0;");
	ew_open(E->w, "for (int a = %d; a >= 0; a--)", r - 1);
	ew_line(E->w, "off += (start[a] + (rem %% udims[a]) * step[a]) * ystr[a];");
	ew_line(E->w, "rem /= udims[a];");
	ew_close(E->w, "");
	ew_line(E->w, "y[off] += u[e];");
	ew_close(E->w, "");
	ew_close(E->w, "");
}

static void emit_ce(emit_ctx *E, ir_node *n)
{
	const train_loss_args *a = train_loss_args_of(n->op);
	const ir_value *s = n->in[a->x], *lab = n->in[a->target];
	int grad = a->dloss >= 0;
	comment(E, n);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "const float *s = %s;", emit_ref(E, s));
	ew_line(E->w, "const int64_t *lab = %s;", emit_ref(E, lab));
	ew_line(E->w, "const int64_t N = %s, C = %s;", emit_dim(E, s->shape.d[0]), emit_dim(E, s->shape.d[1]));
	if (grad) {
		ew_line(E->w, "float *ds = %s;", emit_ref(E, n->out[0]));
		ew_line(E->w, "const float scale = %s[0] / (float)N;", emit_ref(E, n->in[a->dloss]));
	} else {
		ew_line(E->w, "double sum = 0;");
	}
	ew_open(E->w, "for (int64_t r = 0; r < N; r++)");
	ew_line(E->w, "const float *z = s + r * C;");
	ew_line(E->w, "float mx = z[0];");
	ew_line(E->w, "for (int64_t c = 1; c < C; c++) mx = z[c] > mx ? z[c] : mx;");
	ew_line(E->w, "double se = 0;");
	ew_line(E->w, "for (int64_t c = 0; c < C; c++) se += exp((double)z[c] - mx);");
	ew_line(E->w, "const int64_t t = lab[r] < 0 || lab[r] >= C ? 0 : lab[r]; /* labels outside [0, C) count as class 0 */");
	if (grad) {
		ew_line(E->w, "for (int64_t c = 0; c < C; c++)");
		ew_line(E->w, "\tds[r * C + c] = scale * (float)(exp((double)z[c] - mx) / se - (c == t ? 1.0 : 0.0));");
	} else {
		ew_line(E->w, "sum += log(se) + mx - z[t];");
	}
	ew_close(E->w, "");
	if (!grad)
		ew_line(E->w, "%s[0] = (float)(sum / (double)N);", emit_ref(E, n->out[0]));
	ew_close(E->w, "");
}

static void emit_mse(emit_ctx *E, ir_node *n)
{
	const train_loss_args *a = train_loss_args_of(n->op);
	const ir_value *y = n->in[a->x], *t = n->in[a->target], *m = n->nin > a->opt ? n->in[a->opt] : NULL;
	int grad = a->dloss >= 0;
	comment(E, n);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "const float *y = %s, *t = %s;", emit_ref(E, y), emit_ref(E, t));
	if (m)
		ew_line(E->w, "const float *mk = %s;", emit_ref(E, m));
	ew_line(E->w, "const int64_t n = %s;", emit_numel(E, &y->shape));
	ew_line(E->w, "double den = %s;", m ? "0" : "(double)n");
	if (m)
		ew_line(E->w, "for (int64_t i = 0; i < n; i++) den += mk[i];");
	if (grad) {
		ew_line(E->w, "float *dy = %s;", emit_ref(E, n->out[0]));
		ew_line(E->w, "const float scale = den > 0 ? (float)(2.0 * %s[0] / den) : 0.0f;",
			emit_ref(E, n->in[a->dloss]));
		ew_line(E->w, "for (int64_t i = 0; i < n; i++)");
		ew_line(E->w, "\tdy[i] = scale * %s(y[i] - t[i]);", m ? "mk[i] * " : "");
	} else {
		ew_line(E->w, "double sum = 0;");
		ew_line(E->w, "for (int64_t i = 0; i < n; i++)");
		ew_line(E->w, "\tsum += %s(double)(y[i] - t[i]) * (y[i] - t[i]);", m ? "mk[i] * " : "");
		ew_line(E->w, "%s[0] = den > 0 ? (float)(sum / den) : 0.0f;", emit_ref(E, n->out[0]));
	}
	ew_close(E->w, "");
}

static void emit_matexp(emit_ctx *E, ir_node *n)
{
	comment(E, n);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int st_ = rt_expm(%s, %s, %s);", emit_ref(E, n->out[0]), emit_ref(E, n->in[0]),
		emit_dim(E, n->in[0]->shape.d[0]));
	ew_line(E->w, "if (st_ != RT_OK)");
	ew_line(E->w, "\treturn st_;");
	ew_close(E->w, "");
}

static const char *dims_of(emit_ctx *E, const ir_shape *s)
{
	char *r = "";
	for (int i = 0; i < s->rank; i++)
		r = arena_printf(E->A, "%s%s%s", r, i ? ", " : "", emit_dim(E, s->d[i]));
	return arena_printf(E->A, "(const int64_t[]){%s}", *r ? r : "0");
}

static const char *ints_of(emit_ctx *E, const int64_t *v, int n)
{
	char *r = "";
	for (int i = 0; i < n; i++)
		r = arena_printf(E->A, "%s%s%lld", r, i ? ", " : "", (long long)v[i]);
	return arena_printf(E->A, "(const int64_t[]){%s}", n ? r : "0");
}

static void emit_convgrad(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *w = n->in[1], *dy = n->in[2];
	int64_t k[IR_MAX_RANK], st[IR_MAX_RANK], pads[2 * IR_MAX_RANK], dil[IR_MAX_RANK];
	int nsp = infer_conv_geometry(n, k, st, pads, dil);
	int wrt = (int)ir_attr_int(n, "wrt", 0);
	comment(E, n);
	ew_line(E->w, "rt_conv_grad_%s(%s, %s, %s, %d, %s, %s, %lld, %s, %s, %s, %s);", wrt ? "w" : "x",
		emit_ref(E, n->out[0]), emit_ref(E, dy), emit_ref(E, wrt ? x : w), nsp, dims_of(E, &x->shape),
		emit_dim(E, w->shape.d[0]), (long long)ir_attr_int(n, "group", 1), ints_of(E, k, nsp),
		ints_of(E, st, nsp), ints_of(E, pads, 2 * nsp), ints_of(E, dil, nsp));
}

static void emit_padgrad(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0];
	ir_attr *pa = ir_attr_find(n, "pads");
	const char *mode = ir_attr_string(n, "mode", "constant");
	comment(E, n);
	if (x->shape.rank == 0) {
		ew_line(E->w, "%s[0] = %s[0];", emit_ref(E, n->out[0]), emit_ref(E, n->in[1]));
		return;
	}
	ew_line(E->w, "rt_pad_grad(%s, %s, %d, %s, %s, %s);", emit_ref(E, n->out[0]), emit_ref(E, n->in[1]),
		x->shape.rank, dims_of(E, &x->shape), ints_of(E, pa->ints, pa->n),
		!strcmp(mode, "reflect") ? "RT_PAD_REFLECT" : !strcmp(mode, "edge") ? "RT_PAD_EDGE" : "RT_PAD_CONSTANT");
}

static void emit_classlossgrad(emit_ctx *E, ir_node *n)
{
	const train_loss_args *a = train_loss_args_of(n->op);
	const ir_value *x = n->in[a->x], *t = n->in[a->target], *w = n->nin > a->opt ? n->in[a->opt] : NULL;
	const char *red = ir_attr_string(n, "reduction", "mean");
	ir_attr *ig = ir_attr_find(n, "ignore_index");
	comment(E, n);
	ew_open(E->w, "%s", "");
	int wrt = (int)ir_attr_int(n, "wrt", 0);
	ew_line(E->w, "int gst = rt_class_loss_grad(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %lld);",
		wrt ? "NULL" : emit_ref(E, n->out[0]), wrt ? emit_ref(E, n->out[0]) : "NULL", emit_ref(E, n->in[a->dloss]),
		emit_ref(E, x), emit_ref(E, t), w ? emit_ref(E, w) : "NULL", emit_dim(E, x->shape.d[0]),
		emit_dim(E, x->shape.d[1]), emit_dim(E, prod(&x->shape, 2, x->shape.rank)),
		!strcmp(red, "none") ? "RT_LOSS_NONE" : !strcmp(red, "sum") ? "RT_LOSS_SUM" : "RT_LOSS_MEAN", ig != NULL,
		ig ? (long long)ig->i : 0LL);
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

void train_op_emit(emit_ctx *E, ir_node *n)
{
	switch (n->op) {
	case OP_MATEXP: emit_matexp(E, n); return;
	case OP_REDUCESUM: emit_reducesum(E, n); return;
	case OP_SLICESCATTER: emit_slicescatter(E, n); return;
	case OP_SOFTMAXCE: case OP_SOFTMAXCEGRAD: emit_ce(E, n); return;
	case OP_MSELOSS: case OP_MSELOSSGRAD: emit_mse(E, n); return;
	case OP_CONVGRAD: emit_convgrad(E, n); return;
	case OP_PADGRAD: emit_padgrad(E, n); return;
	case OP_CLASSLOSSGRAD: emit_classlossgrad(E, n); return;
	default:
		UNREACHABLE();
	}
}
