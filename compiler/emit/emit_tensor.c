/* emit_tensor.c: the rest of the root graph's operators: index and
 * generator loops printed in place (Trilu, CumSum, Hardmax, EyeLike, Range,
 * OneHot, the windows) and TopK, Tile, GatherElements; layout changes and
 * scatter/gather (DepthToSpace, ConvTranspose, ScatterElements, ScatterND,
 * GatherND, ReverseSequence, TfIdfVectorizer, InstanceNormalization); linear
 * algebra and signals (Det, Einsum, LRN, MVN, MaxUnpool, DFT, STFT); the
 * operators of data-dependent length (NonZero, Compress, Unique,
 * NonMaxSuppression); and the classification losses.
 */
#include "emit.h"
#include "emit_ops.h"
#include "infer.h"
#include "util.h"

#include <string.h>

/* ---- index and generator loops ----------------------------------------------- */

/* What the kernels of one family read about their node: the first input
 * and output, their references (taken once, in the family's order, so the
 * use marks are the same whichever operator it is) and the element type. */
typedef struct op_io {
	const ir_value *x, *y;  /* in[0], out[0] */
	int r;                  /* x's rank */
	const char *xr, *yr;    /* emit_ref of x and y */
	const char *T;          /* the element's C type */
} op_io;

static void trilu(emit_ctx *E, const ir_node *n, const op_io *o)
{
	const ir_value *k = n->nin > 1 ? n->in[1] : NULL;
	int r = o->r;
	ew_line(E->w, "const int64_t rows = %s, cols = %s, k = %s;", emit_dim(E, o->x->shape.d[r - 2]),
		emit_dim(E, o->x->shape.d[r - 1]), k ? arena_printf(E->A, "%s[0]", emit_ref(E, k)) : "0");
	ew_line(E->w, "for (int64_t b = 0; b < %s; b++)", emit_dim(E, dims_prod(&o->x->shape, 0, r - 2)));
	ew_line(E->w, "	for (int64_t i = 0; i < rows; i++)");
	ew_line(E->w, "		for (int64_t j = 0; j < cols; j++)");
	ew_line(E->w, "			%s[(b * rows + i) * cols + j] = j - i %s k ? %s[(b * rows + i) * cols + j] : (%s)0;", o->yr,
		ir_attr_int(n, "upper", 1) ? ">=" : "<=", o->xr, o->T);
}

/* "const int64_t outer = .., cnt = .., inner = ..;" around axis. */
static void three_way(emit_ctx *E, const ir_shape *s, int axis)
{
	ew_line(E->w, "const int64_t outer = %s, cnt = %s, inner = %s;", emit_dim(E, dims_prod(s, 0, axis)),
		emit_dim(E, s->d[axis]), emit_dim(E, dims_prod(s, axis + 1, s->rank)));
}

static void cumsum(emit_ctx *E, const ir_node *n, const op_io *o)
{
	int axis = axis_of(ir_const_int(n->in[1], 0), o->r);
	int rev = (int)ir_attr_int(n, "reverse", 0), ex = (int)ir_attr_int(n, "exclusive", 0);
	three_way(E, &o->x->shape, axis);
	ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
	ew_open(E->w, "	for (int64_t i = 0; i < inner; i++)");
	ew_line(E->w, "%s acc = 0;", o->T);
	ew_open(E->w, "for (int64_t s = 0; s < cnt; s++)");
	ew_line(E->w, "const int64_t j = (o * cnt + %s) * inner + i;", rev ? "cnt - 1 - s" : "s");
	if (ex) {
		ew_line(E->w, "const %s v = %s[j];", o->T, o->xr);
		ew_line(E->w, "%s[j] = acc;", o->yr);
		ew_line(E->w, "acc += v;");
	} else {
		ew_line(E->w, "acc += %s[j];", o->xr);
		ew_line(E->w, "%s[j] = acc;", o->yr);
	}
	ew_close(E->w, "");
	ew_close(E->w, "");
}

static void hardmax(emit_ctx *E, const ir_node *n, const op_io *o)
{
	three_way(E, &o->x->shape, axis_of(ir_attr_int(n, "axis", -1), o->r));
	ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
	ew_open(E->w, "	for (int64_t i = 0; i < inner; i++)");
	ew_line(E->w, "int64_t best = 0;");
	ew_line(E->w, "for (int64_t s = 1; s < cnt; s++)");
	ew_line(E->w, "	if (%s[(o * cnt + s) * inner + i] > %s[(o * cnt + best) * inner + i])", o->xr, o->xr);
	ew_line(E->w, "		best = s;");
	ew_line(E->w, "for (int64_t s = 0; s < cnt; s++)");
	ew_line(E->w, "	%s[(o * cnt + s) * inner + i] = s == best;", o->yr);
	ew_close(E->w, "");
}

static void eyelike(emit_ctx *E, const ir_node *n, const op_io *o)
{
	ew_line(E->w, "for (int64_t i = 0; i < %s; i++)", emit_dim(E, o->y->shape.d[0]));
	ew_line(E->w, "	for (int64_t j = 0; j < %s; j++)", emit_dim(E, o->y->shape.d[1]));
	ew_line(E->w, "		%s[i * %s + j] = j - i == %lld;", o->yr, emit_dim(E, o->y->shape.d[1]),
		(long long)ir_attr_int(n, "k", 0));
}

static void range(emit_ctx *E, const ir_node *n, const op_io *o)
{
	ew_line(E->w, "for (int64_t i = 0; i < %s; i++)", emit_dim(E, o->y->shape.d[0]));
	ew_line(E->w, "	%s[i] = (%s)(%s[0] + (%s)i * %s[0]);", o->yr, o->T, o->xr, o->T, emit_ref(E, n->in[2]));
}

static void onehot(emit_ctx *E, const ir_node *n, const op_io *o)
{
	int axis = axis_of(ir_attr_int(n, "axis", -1), o->r + 1);
	const char *v = emit_ref(E, n->in[2]), *dep = emit_dim(E, o->y->shape.d[axis]);
	ew_line(E->w, "const int64_t outer = %s, inner = %s, depth = %s;", emit_dim(E, dims_prod(&o->x->shape, 0, axis)),
		emit_dim(E, dims_prod(&o->x->shape, axis, o->r)), dep);
	ew_line(E->w, "for (int64_t o = 0; o < outer; o++)");
	ew_open(E->w, "	for (int64_t i = 0; i < inner; i++)");
	ew_line(E->w, "int64_t h = (int64_t)%s[o * inner + i];", o->xr);
	ew_line(E->w, "if (h < 0)");
	ew_line(E->w, "	h += depth;");
	ew_line(E->w, "for (int64_t s = 0; s < depth; s++)");
	ew_line(E->w, "	%s[(o * depth + s) * inner + i] = %s[s == h];", o->yr, v);
	ew_close(E->w, "");
}

/* Hann, Hamming, Blackman: folded unless larger than the folding limit,
 * then the values as a table. */
static void window(emit_ctx *E, const ir_node *n, const op_io *o)
{
	int64_t m = o->y->shape.d[0].k;
	int per = (int)ir_attr_int(n, "periodic", 1);
	for (int64_t i = 0; i < m; i++)
		ew_line(E->w, "%s[%lld] = (%s)%s;", o->yr, (long long)i, o->T,
			emit_float(E, infer_window(n->op, i, m, per), DT_F64));
}

static void topk(emit_ctx *E, const ir_node *n, const op_io *o)
{
	const ir_value *x = o->x;
	int r = o->r, axis = axis_of(ir_attr_int(n, "axis", -1), r);
	const ir_value *ix = n->nout > 1 ? n->out[1] : NULL;
	if (!ix || !ops_is_stored(E, ix)) {
		diag_node(E->D, n, "internal: TopK's Indices have no storage");
		return;
	}
	ew_line(E->w, "rt_topk_%s(%s, %s, %s, %s, %s, %s, %s, %d);", ir_dtype_name(x->dtype), o->yr, emit_ref(E, ix), o->xr,
		emit_dim(E, dims_prod(&x->shape, 0, axis)), emit_dim(E, x->shape.d[axis]),
		emit_dim(E, dims_prod(&x->shape, axis + 1, r)), emit_dim(E, o->y->shape.d[axis]),
		(int)ir_attr_int(n, "largest", 1));
}

static void tile(emit_ctx *E, const ir_node *n, const op_io *o)
{
	ir_shape rep = {.rank = o->r};  /* the repeats, run-time sizes among them */
	for (int a = 0; a < o->r; a++)
		rep.d[a] = infer_elem_dim(n->in[1], a);
	ew_line(E->w, "rt_tile(%s, %s, sizeof(%s), %d, %s, %s);", o->yr, o->xr, o->T, o->r, ops_dims_lit(E, &o->x->shape, 0),
		ops_dims_lit(E, &rep, 0));
}

static void gather_elements(emit_ctx *E, const ir_node *n, const op_io *o)
{
	const ir_value *ix = n->in[1];
	ew_line(E->w, "int gst = rt_gather_elements(%s, %s, sizeof(%s), %d, %s, %s, %d, %s, %d);", o->yr, o->xr, o->T, o->r,
		ops_dims_lit(E, &o->x->shape, 0), emit_ref(E, ix), ix->dtype == DT_I32 ? 6 : 7, ops_dims_lit(E, &ix->shape, 0),
		axis_of(ir_attr_int(n, "axis", 0), o->r));
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "	return gst;");
}

/* Trilu, CumSum, Hardmax, EyeLike, Range, OneHot, the windows: loops
 * printed here; TopK, Tile and GatherElements: rt_nn.c.  Each in a block
 * of its own after the node's comment. */
void emit_misc(emit_ctx *E, ir_node *n)
{
	op_io o = {.x = n->in[0], .y = n->out[0], .r = n->in[0]->shape.rank};
	o.xr = emit_ref(E, o.x), o.yr = emit_ref(E, o.y), o.T = ctype(o.y);
	ops_node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	switch (n->op) {
	case OP_TRILU: trilu(E, n, &o); break;
	case OP_CUMSUM: cumsum(E, n, &o); break;
	case OP_HARDMAX: hardmax(E, n, &o); break;
	case OP_EYELIKE: eyelike(E, n, &o); break;
	case OP_RANGE: range(E, n, &o); break;
	case OP_ONEHOT: onehot(E, n, &o); break;
	case OP_HANNWINDOW: case OP_HAMMINGWINDOW: case OP_BLACKMANWINDOW: window(E, n, &o); break;
	case OP_TOPK: topk(E, n, &o); break;
	case OP_TILE: tile(E, n, &o); break;
	case OP_GATHERELEMENTS: gather_elements(E, n, &o); break;
	default: UNREACHABLE();
	}
	ew_close(E->w, "");
}

/* ---- losses ------------------------------------------------------------------ */

/* The training form of SoftmaxCrossEntropyLoss (pass_grad's: [N, C], mean,
 * no weights, no ignore_index, no log_prob) has its own loop in
 * emit_train_ops.c. */
int ops_is_train_ce(const ir_node *n)
{
	return n->op == OP_SOFTMAXCE && n->nin == 2 && (n->nout == 1 || !n->out[1]) && n->in[0]->shape.rank == 2 &&
	       !strcmp(ir_attr_string(n, "reduction", "mean"), "mean") && !ir_attr_find(n, "ignore_index");
}

void emit_loss(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *t = n->in[1], *w = n->nin > 2 ? n->in[2] : NULL;
	const ir_value *lp = n->op == OP_SOFTMAXCE && n->nout > 1 ? n->out[1] : NULL;
	const char *red = ir_attr_string(n, "reduction", "mean");
	ir_attr *ig = ir_attr_find(n, "ignore_index");
	ops_node_comment(E, n, red);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = rt_class_loss(%s, %s, %s, %d, %s, %s, %s, %s, %s, %s, %d, %lld);", emit_ref(E, n->out[0]),
		lp && ops_is_stored(E, lp) ? emit_ref(E, lp) : "NULL", emit_ref(E, x), n->op == OP_SOFTMAXCE, emit_ref(E, t),
		w ? emit_ref(E, w) : "NULL", emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
		emit_dim(E, dims_prod(&x->shape, 2, x->shape.rank)),
		!strcmp(red, "none") ? "RT_LOSS_NONE" : !strcmp(red, "sum") ? "RT_LOSS_SUM" : "RT_LOSS_MEAN", ig != NULL,
		ig ? (long long)ig->i : 0LL);
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

/* ---- layout, scatter and gather ---------------------------------------------- */

static const char *scatter_red(const ir_node *n)
{
	const char *r = ir_attr_string(n, "reduction", "none");
	return !strcmp(r, "add") ? "RT_SCATTER_ADD" : !strcmp(r, "mul") ? "RT_SCATTER_MUL"
	       : !strcmp(r, "max") ? "RT_SCATTER_MAX" : !strcmp(r, "min") ? "RT_SCATTER_MIN" : "RT_SCATTER_NONE";
}

/* DepthToSpace / SpaceToDepth: rt_transpose of the 6-D view the mode
 * gives. */
static void depth_to_space(emit_ctx *E, const ir_node *n, const op_io *o)
{
	const ir_value *x = o->x;
	int64_t b = ir_attr_int(n, "blocksize", 1), N = x->shape.d[0].k, C = x->shape.d[1].k,
		H = x->shape.d[2].k, W = x->shape.d[3].k;
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
	ew_line(E->w, "rt_transpose(%s, %s, sizeof(%s), 6, (const int64_t[]){%s}, (const int[])%s);", o->yr, o->xr, o->T,
		dims, perm);
}


static void tfidf(emit_ctx *E, const ir_node *n, const op_io *o)
{
	const ir_value *x = o->x;
	int r = o->r;
	const ir_attr *cnt = ir_attr_find(n, "ngram_counts"), *ix = ir_attr_find(n, "ngram_indexes");
	const ir_attr *pool = ir_attr_find(n, "pool_int64s"), *wt = ir_attr_find(n, "weights");
	const char *mode = ir_attr_string(n, "mode", "TF");
	char *wl = "";
	for (int i = 0; wt && i < wt->n; i++)
		wl = arena_printf(E->A, "%s%s%s", wl, i ? ", " : "", emit_float(E, wt->floats[i], DT_F32));
	ew_line(E->w, "static const int64_t pool[] = {%s};", ops_ints_list(E, pool->ints, pool->n));
	ew_line(E->w, "static const int64_t levels[] = {%s};", ops_ints_list(E, cnt->ints, cnt->n));
	ew_line(E->w, "static const int64_t columns[] = {%s};", ops_ints_list(E, ix->ints, ix->n));
	if (wt)
		ew_line(E->w, "static const float weights[] = {%s};", wl);
	ew_line(E->w, "rt_tfidf(%s, %s, %d, %s, %s, %s, pool, %d, levels, %d, columns, %s, %lld, %lld, %lld, %s);", o->yr,
		o->xr, x->dtype == DT_I32, emit_dim(E, dims_prod(&x->shape, 0, r - 1)), emit_dim(E, x->shape.d[r - 1]),
		emit_dim(E, o->y->shape.d[r - 1]), pool->n, cnt->n, wt ? "weights" : "NULL",
		(long long)ir_attr_int(n, "min_gram_length", 1), (long long)ir_attr_int(n, "max_gram_length", 1),
		(long long)ir_attr_int(n, "max_skip_count", 0),
		!strcmp(mode, "IDF") ? "RT_TFIDF_IDF" : !strcmp(mode, "TFIDF") ? "RT_TFIDF_TFIDF" : "RT_TFIDF_TF");
}

/* DepthToSpace/SpaceToDepth (rt_transpose of a 6-D view), ConvTranspose,
 * ScatterElements, ScatterND, GatherND, InstanceNormalization. */
void emit_layout(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank;
	const char *xr = emit_ref(E, x), *yr = emit_ref(E, y), *T = ctype(x);
	const op_io o = {x, y, r, xr, yr, T};
	ops_node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	switch (n->op) {
	case OP_DEPTHTOSPACE: case OP_SPACETODEPTH:
		depth_to_space(E, n, &o);
		break;
	case OP_CONVTRANSPOSE: {
		const ir_value *w = n->in[1], *b = n->nin > 2 ? n->in[2] : NULL;
		infer_convt_geom G;
		int nsp = infer_convt_geometry(n, &G, NULL, 0);
		ew_line(E->w, "rt_conv_transpose(%s, %s, %s, %s, %d, %s, %s, %s, %lld, %s, %s, %s, %s);", yr, xr,
			emit_ref(E, w), b ? emit_ref(E, b) : "NULL", nsp, ops_dims_lit(E, &x->shape, 0), ops_dims_lit(E, &y->shape, 2),
			emit_dim(E, y->shape.d[1]), (long long)ir_attr_int(n, "group", 1), ops_ints_lit(E, G.k, nsp),
			ops_ints_lit(E, G.st, nsp), ops_pads_lit(E, n, G.pads, G.k, G.st, G.dil, nsp), ops_ints_lit(E, G.dil, nsp));
		break;
	}
	case OP_SCATTERELEMENTS:
		ew_line(E->w, "int gst = rt_scatter_elements(%s, %s, sizeof(%s), %d, %d, %s, %s, %s, %s, %d, %s);", yr, xr,
			T, x->dtype == DT_F32, r, ops_dims_lit(E, &x->shape, 0), emit_ref(E, n->in[1]), emit_ref(E, n->in[2]),
			ops_dims_lit(E, &n->in[1]->shape, 0), axis_of(ir_attr_int(n, "axis", 0), r), scatter_red(n));
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		break;
	case OP_SCATTERND: {
		const ir_value *ix = n->in[1];
		int q = (int)ix->shape.d[ix->shape.rank - 1].k;
		ew_line(E->w, "int gst = rt_scatter_nd(%s, %s, sizeof(%s), %d, %d, %s, %s, %s, %d, %s, %s);", yr, xr, T,
			x->dtype == DT_F32, r, ops_dims_lit(E, &x->shape, 0), emit_ref(E, ix),
			emit_dim(E, dims_prod(&ix->shape, 0, ix->shape.rank - 1)), q, emit_ref(E, n->in[2]), scatter_red(n));
		ew_line(E->w, "if (gst != RT_OK)");
		ew_line(E->w, "\treturn gst;");
		break;
	}
	case OP_GATHERND: {
		const ir_value *ix = n->in[1];
		int qr = ix->shape.rank, q = (int)ix->shape.d[qr - 1].k, bd = (int)ir_attr_int(n, "batch_dims", 0);
		ew_line(E->w, "int gst = rt_gather_nd(%s, %s, sizeof(%s), %d, %s, %d, %s, %s, %d);", yr, xr, T, r,
			ops_dims_lit(E, &x->shape, 0), bd, emit_ref(E, ix), emit_dim(E, dims_prod(&ix->shape, bd, qr - 1)), q);
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
	case OP_TFIDF:
		tfidf(E, n, &o);
		break;
	case OP_INSTANCENORM:
		ew_line(E->w, "rt_instancenorm(%s, %s, %s, %s, %s, %s, %s, %s);", yr, xr, emit_ref(E, n->in[1]),
			emit_ref(E, n->in[2]), emit_dim(E, x->shape.d[0]), emit_dim(E, x->shape.d[1]),
			emit_dim(E, dims_prod(&x->shape, 2, r)), emit_float(E, ir_attr_float(n, "epsilon", 1e-5f), DT_F32));
		break;
	default: UNREACHABLE();
	}
	ew_close(E->w, "");
}

/* ---- linear algebra and signals ---------------------------------------------- */

/* Einsum: rt_einsum on the plan infer_einsum_plan makes of the equation
 * (each operand's labels), in a block of its own. */
static void einsum(emit_ctx *E, const ir_node *n, const char *yr, int f64)
{
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
	ops_node_comment(E, n, ir_attr_string(n, "equation", ""));
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = rt_einsum(%s, %d, %d, (const void *const[]){%s}, (const int[]){%s}, "
		"(const int64_t[]){%s}, (const int[]){%s}, %d, %d);", yr, f64, p.nops, ops, ranks,
		*dims ? dims : "0", *labs ? labs : "0", p.nlab, p.nout);
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

/* Det, Einsum, LRN, MeanVarianceNormalization, MaxUnpool, DFT, STFT through
 * runtime/rt_linalg.c and rt_nn.c (MelWeightMatrix is always folded). */
void emit_linalg(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, f64 = x->dtype == DT_F64;
	const char *xr = emit_ref(E, x), *yr = emit_ref(E, y), *call = NULL;
	switch (n->op) {
	case OP_DET:
		call = arena_printf(E->A, "rt_det(%s, %s, %d, %s, %s)", yr, xr, f64, emit_dim(E, dims_prod(&x->shape, 0, r - 2)),
				    emit_dim(E, x->shape.d[r - 1]));
		break;
	case OP_EINSUM:
		einsum(E, n, yr, f64);
		return;
	case OP_LRN:
		ops_node_comment(E, n, NULL);
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
				    ops_dims_lit(E, &x->shape, 0), *m ? m : "0");
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
				    emit_ref(E, n->in[1]), emit_numel(E, &x->shape), r, idims, ops_dims_lit(E, &y->shape, 0));
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
	ops_node_comment(E, n, NULL);
	ew_open(E->w, "%s", "");
	ew_line(E->w, "int gst = %s;", call);
	ew_line(E->w, "if (gst != RT_OK)");
	ew_line(E->w, "\treturn gst;");
	ew_close(E->w, "");
}

/* ---- data-dependent lengths -------------------------------------------------- */

/* NonZero, Compress, Unique, NonMaxSuppression: the kernel returns the
 * data-dependent length into m->dd_len[] (emit_dd_slot); the outputs are
 * sized for the bound of ir_value.dd_axis and written packed. */
void emit_datadep(emit_ctx *E, ir_node *n)
{
	const ir_value *x = n->in[0], *y = n->out[0];
	int r = x->shape.rank, slot = emit_dd_slot(E->g, n);
	if (slot < 0 || !ops_is_stored(E, y)) {
		diag_node(E->D, n, "internal: a data-dependent output has no length slot or no storage");
		return;
	}
	const char *len = arena_printf(E->A, "m->dd_len[%d]", slot), *xr = emit_ref(E, x), *yr = emit_ref(E, y);
	ops_node_comment(E, n, arena_printf(E->A, "length %s at run time, at most %s", len,
					ops_safe(E, ir_dim_str(E->A, E->g, y->shape.d[y->dd_axis]))));
	ew_open(E->w, "%s", "");
	switch (n->op) {
	case OP_NONZERO:
		ew_line(E->w, "int gst = rt_nonzero(&%s, %s, %s, %d, %d, %s);", len, yr, xr, (int)x->dtype, r,
			r ? ops_dims_lit(E, &x->shape, 0) : "NULL");
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
			o[k - 1] = k < n->nout && n->out[k] && ops_is_stored(E, n->out[k]) ? emit_ref(E, n->out[k]) : "NULL";
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
