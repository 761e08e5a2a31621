/* emit_instance.c: the model instance in NAME.c: its struct, create,
 * destroy and reset, the constant tensors, the weights (a weights file,
 * written here and checked tensor by tensor when loaded, or
 * --embed-weights' static arrays), the workspace allocator, and
 * --no-malloc's arena: its layout and its size at the largest dims
 * (NAME_ARENA_BYTES).
 */
#include "cellrt.h"
#include "emit.h"
#include "emit_tabs.h"
#include "util.h"

#include <string.h>

/* An initializer's elements 0..n, per to a line, each elem(E, data, i);
 * the last line ends with tail. */
typedef const char *elem_fn(emit_ctx *E, const void *data, int64_t i);

static void init_lines(emit_ctx *E, int64_t n, int per, elem_fn *elem, const void *data, const char *tail)
{
	for (int64_t i = 0; i < n; i += per) {
		char *line = "";
		for (int64_t j = i; j < n && j < i + per; j++)
			line = arena_printf(E->A, "%s%s%s", line, j > i ? ", " : "", elem(E, data, j));
		ew_line(E->w, "%s%s", line, i + per < n ? "," : tail);
	}
}

static const char *value_elem(emit_ctx *E, const void *v, int64_t i)
{
	return emit_scalar(E, v, i);
}

static const char *float_elem(emit_ctx *E, const void *p, int64_t i)
{
	return emit_float(E, ((const float *)p)[i], DT_F32);
}

static const char *int32_elem(emit_ctx *E, const void *p, int64_t i)
{
	return arena_printf(E->A, "%ld", (long)((const int32_t *)p)[i]);
}

static const char *int8_elem(emit_ctx *E, const void *p, int64_t i)
{
	return arena_printf(E->A, "%d", ((const int8_t *)p)[i]);
}

/* The product that stores weight v packed in int8 (store_i8, pass_schedule:
 * all its readers are such products, of one transB), or NULL. */
static const ir_node *i8_store_of(const ir_graph *g, const ir_value *v)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *m = g->nodes[i];
		if (m->op == OP_GEMM && m->nin > 1 && m->in[1] == v && ir_attr_int(m, "store_i8", 0))
			return m;
		const ir_node *b = m->body ? i8_store_of(m->body, v) : NULL;
		if (b)
			return b;
	}
	return NULL;
}

/* The C type of weight k's instance member's elements. */
static const char *weight_ctype(emit_ctx *E, int k)
{
	const ir_value *v = E->tabs->weights[k];
	return E->o->embed_weights && i8_store_of(E->g, v) ? "int8_t" : ctype(v);
}

/* ---- blocks of NAME.c ----------------------------------------------------- */

void emit_blk_struct(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	if (!E->o->embed_weights)
		ew_line(E->w, "rt_tensorfile wf;       /* the weights file; the weight pointers point into it */");
	if (!E->o->embed_weights && E->o->no_malloc)
		ew_line(E->w, "rt_tensor wtab[%d];      /* its table (no allocation) */",
			t->nweights ? t->nweights : 1);
	if (E->o->no_malloc) {
		ew_line(E->w, "unsigned char *ws;      /* workspace: a part of the caller's arena */");
		ew_line(E->w, "size_t ws_size;         /* bytes at ws (enough for the largest dims) */");
	} else {
		ew_line(E->w, "unsigned char *ws;      /* workspace, 64-byte aligned, grown on demand */");
		ew_line(E->w, "size_t ws_size;         /* bytes allocated at ws */");
	}
	ew_line(E->w, "int started;            /* 0 after reset: recurrences start from their initial state */");
	if (emit_step_runs_branches(E->g))
		ew_line(E->w, "int stepping;           /* 1 in %s_step: the branches of run-time Ifs all run, so that "
			"their recurrences advance at every step */", t->name);
	if (emit_dd_count(E->g))
		ew_line(E->w, "int64_t dd_len[%d];       /* data-dependent lengths of the last run (%s_output_dims) */",
			emit_dd_count(E->g), t->name);
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		const char *decl = arena_printf(E->A, "const %s *%s;", weight_ctype(E, k), t->wname[k]);
		int pad = strlen(decl) < 24 ? 24 - (int)strlen(decl) : 1;  /* comments in one column */
		ew_line(E->w, "%s%*s/* %s %s */", decl, pad, "", emit_cmt(E->A, v->name), emit_shape_comment(E, v));
	}
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			emit_rec_state_decls(E, E->g->nodes[i]);
	if (E->g->train)
		ew_line(E->w, "int fwd_only;           /* NAME_set_forward_only: skip the gradients */");
	if (emit_rng_count(E->g))
		ew_line(E->w, "rt_rng rng[%d];%*s/* a random stream per random node (%s_seed) */", emit_rng_count(E->g),
			emit_rng_count(E->g) < 10 ? 10 : 9, "", E->tabs->name);
	for (int k = 0; k < t->ncarry; k++)
		ew_line(E->w, "%s *carry%d[2]; size_t carry%d_n; /* carried state '%s' <- '%s': two buffers, "
			"carry_cur the current */", ctype(E->g->inputs[t->carry_in[k]]), k, k,
			emit_cmt(E->A, E->g->inputs[t->carry_in[k]]->name), emit_cmt(E->A, E->g->outputs[t->carry_out[k]]->name));
	if (t->ncarry)
		ew_line(E->w, "int carry_cur, carry_live; /* carry_live = 0 after reset: the next stream call starts from zeros */");
}

static void blk_destroy(emit_ctx *E)
{
	if (E->o->no_malloc) {
		ew_line(E->w, "(void)m; /* everything lives in the caller's arena */");
		return;
	}
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			emit_rec_state_free(E, E->g->nodes[i]);
	for (int k = 0; k < E->tabs->ncarry; k++) {
		ew_line(E->w, "free(m->carry%d[0]);", k);
		ew_line(E->w, "free(m->carry%d[1]);", k);
	}
}

void emit_blk_reset(emit_ctx *E)
{
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			emit_rec_state_reset(E, E->g->nodes[i]);
	if (E->tabs->ncarry)
		ew_line(E->w, "m->carry_live = 0; /* the next %s_stream starts from zero state */", E->tabs->name);
}

/* Static const arrays for the constants the code refers to (marked while
 * the forward function was printed); symbolic ones are locals of forward. */
void emit_blk_consts(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	int any = 0;
	for (int k = 0; k < t->nconsts; k++) {
		const ir_value *v = t->consts[k];
		if (!t->used_const[k] || v->sym)
			continue;
		int64_t n = ir_shape_const_numel(&v->shape);
		ASSERT(n >= 0);
		if (!any)
			ew_line(E->w, "/* constant tensors */");
		any = 1;
		ew_line(E->w, "/* %s %s */", emit_cmt(E->A, v->name), emit_shape_comment(E, v));
		if (n == 0) {
			/* C has no empty arrays; nothing reads this element */
			ew_line(E->w, "static const %s c_%d[1] = {0};", ctype(v), k);
			continue;
		}
		ew_open(E->w, "static const %s c_%d[%lld] =", ctype(v), k, (long long)n);
		init_lines(E, n, 8, value_elem, v, "");
		ew_close(E->w, ";");
	}
	if (!any)
		ew_line(E->w, "/* (no constant tensors) */");
}

/* The name of weight v in the weights file: its IR name, shortened with a
 * hash when it does not fit the file's name field. */
static const char *weight_name(arena *A, const ir_value *v)
{
	size_t n = strlen(v->name);
	if (n < RT_TF_NAME)
		return v->name;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)v->name[i];
		h *= 0x100000001b3ull;
	}
	/* 142 bytes of the name, '~', 16 hex digits: 159 bytes and the NUL */
	return arena_printf(A, "%.142s~%016llx", v->name, (unsigned long long)h);
}

/* The head of load_weights for a weights file, up to the opened file in
 * m->wf: read by rt_tf_open, or copied from its image[bytes] in memory
 * (NAME_create_mem), or (no_malloc) read into the arena part buf[cap] and
 * described in m->wtab. */
static void open_weights_fn(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	int nw = E->tabs->nweights;
	if (E->o->no_malloc) {
		ew_fn_open(w, "static int load_weights(%s *m, const char *path, unsigned char *buf, size_t cap)", n);
		ew_line(w, "if (!path)");
		ew_line(w, "\treturn %s;", nw ? "RT_ERR_ARG" : "RT_OK");
		ew_line(w, "size_t size;");
		ew_line(w, "int st = rt_tf_read_into(path, buf, cap, &size);");
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\tst = rt_tf_open_view(&m->wf, buf, size, m->wtab, %d);", nw ? nw : 1);
	} else {
		ew_fn_open(w, "static int load_weights(%s *m, const char *path, const void *image, size_t bytes)", n);
		ew_line(w, "if (!path && !image)");
		ew_line(w, "\treturn %s;", nw ? "RT_ERR_ARG" : "RT_OK");
		ew_line(w, "int st = path ? rt_tf_open(&m->wf, path) : rt_tf_open_copy(&m->wf, image, bytes);");
	}
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
}

/* Weight v stored packed in int8 (store_i8 on product gm): the bytes of
 * rt_gemv_pack_i8, the layout rt_gemm_packed_i8 reads, made here from the
 * rounded weights (the same q, pass_precision), as a struct of its parts:
 * N scales, N row sums, then the int8 values (from byte 8 N: the head's
 * padding to 64 bytes, then the blocks). */
static void embedded_i8(emit_ctx *E, int k, const ir_value *v, const ir_node *gm)
{
	ew *w = E->w;
	int tb = ir_attr_int(gm, "transB", 0) != 0;
	int64_t N = v->shape.d[tb ? 0 : 1].k, K = v->shape.d[tb ? 1 : 0].k;
	size_t bytes = rt_gemv_pack_i8_size(N, K);
	int8_t *P = arena_array(E->A, (bytes + 3) / 4, 4);
	rt_gemv_pack_i8(tb, N, K, v->data, v->shape.d[1].k, P);
	ew_line(w, "/* %s %s: --weights int8, stored as rt_gemv_pack_i8 packs it for its %lld outputs (%zu bytes; "
		"as float32: %lld) */", emit_cmt(E->A, v->name), emit_shape_comment(E, v), (long long)N, bytes,
		(long long)(4 * N * K));
	ew_open(w, "_Alignas(64) static const struct");
	ew_line(w, "float scale[%lld];%*s/* the step of each output's int8 weights */", (long long)N, 8, "");
	ew_line(w, "int32_t rsum[%lld];%*s/* the sum of each output's int8 weights */", (long long)N, 8, "");
	ew_line(w, "int8_t q[%lld];%*s/* the head's padding, then blocks of 256 outputs: [K / 4][outputs][4] */",
		(long long)(bytes - 8 * (size_t)N), 8, "");
	ew_close(w, arena_printf(E->A, " wd_%d = {", k));
	w->indent++;
	ew_open(w, "%s", "");
	init_lines(E, N, 8, float_elem, P, "");
	ew_close(w, ",");
	ew_open(w, "%s", "");
	init_lines(E, N, 16, int32_elem, P + 4 * N, "");
	ew_close(w, ",");
	ew_open(w, "%s", "");
	init_lines(E, (int64_t)bytes - 8 * N, 24, int8_elem, P + 8 * N, "");
	ew_close(w, "");
	w->indent--;
	ew_line(w, "};");
	ew_line(w, "%s", "");
}

/* --embed-weights: the weights as static arrays, 64-byte aligned like the
 * tensors of a weights file (int8 products' weights of --no-malloc builds
 * packed, store_i8), and load_weights pointing the w_ members at them. */
static void embedded_weights(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	if (t->nweights)
		ew_line(w, "/* the weights (--embed-weights), 64-byte aligned */");
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		int64_t n = ir_shape_const_numel(&v->shape);
		const ir_node *gm = i8_store_of(E->g, v);
		if (gm) {
			embedded_i8(E, k, v, gm);
			continue;
		}
		ew_line(w, "/* %s %s */", emit_cmt(E->A, v->name), emit_shape_comment(E, v));
		if (n == 0) {
			ew_line(w, "_Alignas(64) static const %s wd_%d[1] = {0};", ctype(v), k);
			continue;
		}
		ew_open(w, "_Alignas(64) static const %s wd_%d[%lld] =", ctype(v), k, (long long)n);
		init_lines(E, n, 8, value_elem, v, "");
		ew_close(w, ";");
		ew_line(w, "%s", "");
	}
	ew_fn_open(w, "static int load_weights(%s *m)", t->name);
	if (!t->nweights)
		ew_line(w, "(void)m; /* the model has no weights */");
	for (int k = 0; k < t->nweights; k++)
		ew_line(w, i8_store_of(E->g, t->weights[k]) ? "m->%s = (const int8_t *)&wd_%d;" : "m->%s = wd_%d;",
			t->wname[k], k);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

void emit_blk_load_weights(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	if (E->o->embed_weights) {
		embedded_weights(E);
		return;
	}
	if (t->nweights == 0) {
		ew_line(w, "/* The model has no weights: the weights file, if given, must be empty. */");
		open_weights_fn(E);
		ew_line(w, "return m->wf.count == 0 ? RT_OK : RT_ERR_MISMATCH;");
		ew_close(w, "");
		return;
	}
	ew_line(w, "/* What the weights file must hold, in order of the w_ members. */");
	ew_open(w, "static const struct weight_desc");
	ew_line(w, "const char *name;       /* tensor name in the file */");
	ew_line(w, "int dtype, rank;        /* ONNX TensorProto.DataType code, number of dims */");
	ew_line(w, "int64_t dims[%d];        /* [rank] */", RT_TF_MAXRANK);
	ew_close(w, arena_printf(E->A, " weight_desc[%d] = {", t->nweights));
	w->indent++;
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		char *dims = "";
		for (int i = 0; i < v->shape.rank; i++) {
			ASSERT(ir_dim_is_const(v->shape.d[i]));
			dims = arena_printf(E->A, "%s%s%lld", dims, i ? ", " : "", (long long)v->shape.d[i].k);
		}
		ew_line(w, "{%s, %d, %d, {%s}},", emit_c_string(E->A, weight_name(E->A, v)), (int)v->dtype,
			v->shape.rank, dims);
	}
	w->indent--;
	ew_line(w, "};");
	ew_line(w, "%s", "");
	ew_line(w, "/* Opens the weights file and points the w_ members into it, after");
	ew_line(w, " * checking every tensor's name, dtype and shape. */");
	open_weights_fn(E);
	if (E->g->train) {
		/* a checkpoint also holds '@'-named tensors (optimiser state), ignored here */
		ew_line(w, "int nplain = 0;");
		ew_line(w, "for (int i = 0; i < m->wf.count; i++)");
		ew_line(w, "\tnplain += m->wf.t[i].name[0] != '@';");
		ew_line(w, "if (nplain != %d)", t->nweights);
	} else {
		ew_line(w, "if (m->wf.count != %d)", t->nweights);
	}
	ew_line(w, "\treturn RT_ERR_MISMATCH;");
	ew_line(w, "const void *p[%d];", t->nweights);
	ew_open(w, "for (int i = 0; i < %d; i++)", t->nweights);
	ew_line(w, "const struct weight_desc *wd = &weight_desc[i];");
	ew_line(w, "st = rt_tf_expect(&m->wf, wd->name, wd->dtype, wd->rank, wd->dims, &p[i]);");
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_close(w, "");
	for (int k = 0; k < t->nweights; k++)
		ew_line(w, "m->%s = p[%d];", t->wname[k], k);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

int emit_write_weights(emit_ctx *E, const char *path)
{
	struct emit_tabs *t = E->tabs;
	rt_tensor *ts = arena_array(E->A, (size_t)(t->nweights ? t->nweights : 1), sizeof *ts);
	for (int k = 0; k < t->nweights; k++) {
		const ir_value *v = t->weights[k];
		ts[k].name = weight_name(E->A, v);
		ts[k].dtype = (int)v->dtype;
		ts[k].rank = v->shape.rank;
		for (int i = 0; i < v->shape.rank; i++)
			ts[k].dims[i] = v->shape.d[i].k;
		ts[k].data = v->data;
		ts[k].nbytes = (size_t)ir_shape_const_numel(&v->shape) * ir_dtype_size(v->dtype);
	}
	int st = rt_tf_write(path, t->nweights, ts);
	if (st != RT_OK)
		diag_error(E->D, "cannot write %s: %s", path, rt_status_str(st));
	return st != RT_OK;
}

/* The workspace allocator, when the forward function uses a slot. */
void emit_blk_ws_reserve(emit_ctx *E)
{
	ew *w = E->w;
	if (!E->tabs->ws_used) {
		ew_line(w, "/* (the model needs no workspace) */");
		return;
	}
	if (E->o->no_malloc) {
		ew_line(w, "/* The workspace is a part of the arena, sized for the largest dims, which");
		ew_line(w, " * forward has checked: this only guards that promise. */");
		ew_fn_open(w, "static int ws_reserve(%s *m, size_t need)", E->tabs->name);
		ew_line(w, "return need <= m->ws_size ? RT_OK : RT_ERR_SHAPE;");
		ew_close(w, "");
		return;
	}
	ew_line(w, "/* Makes sure the workspace holds at least `need` bytes; its contents are");
	ew_line(w, " * scratch, so growing does not copy them. */");
	ew_fn_open(w, "static int ws_reserve(%s *m, size_t need)", E->tabs->name);
	ew_line(w, "if (need <= m->ws_size)");
	ew_line(w, "\treturn RT_OK;");
	ew_line(w, "free(m->ws);");
	ew_line(w, "m->ws_size = 0;");
	ew_line(w, "m->ws = aligned_alloc(64, ALIGN64(need));");
	ew_line(w, "if (!m->ws)");
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	ew_line(w, "m->ws_size = ALIGN64(need);");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

/* ---- memory: allocation or the caller's arena ---------------------------- */

/* Value of d with every symbol at its largest value (no_malloc); -1 when
 * that overflows. */
static int64_t dim_at_max(emit_ctx *E, ir_dim d)
{
	int64_t v = d.k;
	for (int i = 0; i < E->g->nsyms; i++) {
		/* a derived size: its largest over the free symbols' ranges */
		int64_t m = d.pow[i] ? ir_sym_max_value(E->g, i, E->o->max_dims) : 0;
		for (int p = 0; p < d.pow[i]; p++)
			if (m < 1 || m == INT64_MAX || __builtin_mul_overflow(v, m, &v))
				return -1;
	}
	return v;
}

static int64_t align64(int64_t n) { return (n + 63) & ~(int64_t)63; }

/* Bytes of state k of recurrence n at the largest dims; -1 on overflow. */
static int64_t state_max_bytes(emit_ctx *E, const ir_node *n, int k)
{
	int nseq = (int)ir_attr_int(n, "n_seq", 0);
	int64_t c = dim_at_max(E, ir_shape_numel(&n->body->inputs[nseq + k]->shape));
	return c < 0 || c > INT64_MAX / 8 ? -1 : align64(4 * c + 1);
}

/* Bytes of one buffer of carried state k at the largest dims; -1 on overflow. */
static int64_t carry_max_bytes(emit_ctx *E, int k)
{
	const ir_value *v = E->g->inputs[E->tabs->carry_in[k]];
	int64_t c = dim_at_max(E, ir_shape_numel(&v->shape));
	return c < 0 || c > INT64_MAX / 16 ? -1 : align64((int64_t)ir_dtype_size(v->dtype) * c + 1);
}

/* An upper bound of sizeof(struct NAME) on common ABIs (checked by a static
 * assertion in NAME.c): 8 bytes per pointer, size_t or int. */
static int64_t struct_bytes(emit_ctx *E)
{
	int64_t b = 32 + 24 + 8 * E->tabs->nweights + 32 * E->tabs->ncarry + 8;
	if (!E->o->embed_weights)
		b += 32 + (E->o->no_malloc ? 96 * (E->tabs->nweights ? E->tabs->nweights : 1) : 0);
	for (int i = 0; i < E->g->nnodes; i++)
		if (E->g->nodes[i]->op == OP_RECURRENCE)
			b += 16 * ir_attr_int(E->g->nodes[i], "n_state", 0);
	return align64(b + 64);
}

static int64_t arena_bytes(emit_ctx *E)
{
	int64_t b = struct_bytes(E) + align64(E->tabs->wfile_bytes) + E->tabs->ws_max;
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *n = E->g->nodes[i];
		if (n->op == OP_RECURRENCE)
			for (int k = 0; k < ir_attr_int(n, "n_state", 0); k++)
				b += state_max_bytes(E, n, k);
	}
	for (int k = 0; k < E->tabs->ncarry; k++)
		b += 2 * carry_max_bytes(E, k);
	return b;
}

/* Workspace bytes at the largest dims: the slots forward uses, laid out as
 * print_workspace lays them out.  Returns the number of errors. */
int emit_compute_ws_max(emit_ctx *E)
{
	struct emit_tabs *t = E->tabs;
	t->ws_max = 0;
	for (int sl = 0; sl < t->nslots; sl++) {
		if (!t->used_slot[sl])
			continue;
		ir_dim n;
		ir_dtype dt = DT_UNDEF;
		ir_slot_info(E->g, sl, &n, &dt);
		int64_t c = dim_at_max(E, n);
		if (c < 0 || c > INT64_MAX / 16 || t->ws_max > INT64_MAX / 4) {
			diag_error(E->D, "--no-malloc: the workspace for the largest dims does not fit in 64 bits");
			return 1;
		}
		t->ws_max += align64(c * (int64_t)ir_dtype_size(dt));
	}
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *n = E->g->nodes[i];
		if (n->op == OP_RECURRENCE)
			for (int k = 0; k < ir_attr_int(n, "n_state", 0); k++)
				if (state_max_bytes(E, n, k) < 0) {
					diag_error(E->D, "--no-malloc: a recurrent state for the largest dims "
						      "does not fit in 64 bits");
					return 1;
				}
	}
	return 0;
}

static void create_malloc(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	int emb = E->o->embed_weights;
	if (emb) {
		ew_fn_open(w, "int %s_create(%s **mp, const char *weights_path)", n, n);
	} else {
		ew_line(w, "/* %s_create and %s_create_mem: the weights file read from path, or", n, n);
		ew_line(w, " * copied from its image[bytes] in memory (path NULL) */");
		ew_fn_open(w, "static int create_from(%s **mp, const char *path, const void *image, size_t bytes)", n);
	}
	ew_line(w, "if (!mp)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "*mp = NULL;");
	if (emb) {
		ew_line(w, "if (weights_path)");
		ew_line(w, "\treturn RT_ERR_ARG; /* the weights are embedded: pass NULL */");
	}
	ew_line(w, "%s *m = calloc(1, sizeof *m);", n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	ew_line(w, "int st = load_weights(m%s);", emb ? "" : ", path, image, bytes");
	ew_line(w, "if (st == RT_OK)");
	ew_line(w, "\tst = %s_reset(m);", n);
	if (emit_rng_count(E->g)) {
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\tst = %s_seed(m, 0); /* the default run-time seed */", n);
	}
	ew_open(w, "if (st != RT_OK)");
	ew_line(w, "%s_destroy(m);", n);
	ew_line(w, "return st;");
	ew_close(w, "");
	ew_line(w, "*mp = m;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	if (!emb) {
		ew_fn_open(w, "int %s_create(%s **mp, const char *weights_path)", n, n);
		ew_line(w, "return create_from(mp, weights_path, NULL, 0);");
		ew_close(w, "");
		ew_line(w, "%s", "");
		ew_fn_open(w, "int %s_create_mem(%s **mp, const void *weights, size_t bytes)", n, n);
		ew_line(w, "return create_from(mp, NULL, weights, bytes);");
		ew_close(w, "");
		ew_line(w, "%s", "");
	}
	ew_fn_open(w, "void %s_destroy(%s *m)", n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn;");
	blk_destroy(E);
	if (!emb)
		ew_line(w, "rt_tf_close(&m->wf);");
	ew_line(w, "free(m->ws);");
	ew_line(w, "free(m);");
	ew_close(w, "");
}

/* --no-malloc: the instance, the weights file's image, the recurrent states
 * and the workspace are consecutive 64-byte aligned parts of the arena. */
static void create_arena(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	const char *n = t->name;
	int emb = E->o->embed_weights;
	ew_line(w, "/* Arena layout for the largest dims (%s.h): the instance, %sthe recurrent", n,
		emb ? "" : "the weights file, ");
	ew_line(w, " * states and the workspace, each part 64-byte aligned. */");
	ew_line(w, "#define STRUCT_BYTES ((size_t)%lld)", (long long)struct_bytes(E));
	if (!emb)
		ew_line(w, "#define WEIGHTS_BYTES ((size_t)%lld) /* %s.weights, %lld bytes */",
			(long long)align64(t->wfile_bytes), n, (long long)t->wfile_bytes);
	ew_line(w, "#define WS_BYTES ((size_t)%lld)", (long long)t->ws_max);
	ew_line(w, "_Static_assert(sizeof(struct %s) <= STRUCT_BYTES, \"the instance outgrows its arena part\");", n);
	ew_line(w, "%s", "");
	ew_fn_open(w, "int %s_create_in(%s **mp, void *arena, size_t arena_bytes, const char *weights_path)", n, n);
	ew_line(w, "if (!mp)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "*mp = NULL;");
	ew_line(w, "if (!arena || (uintptr_t)arena %% 64 != 0)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "if (arena_bytes < %s_ARENA_BYTES)", n);
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	if (emb) {
		ew_line(w, "if (weights_path)");
		ew_line(w, "\treturn RT_ERR_ARG; /* the weights are embedded: pass NULL */");
	}
	ew_line(w, "%s *m = arena; /* the instance comes first */", n);
	ew_line(w, "unsigned char *p = (unsigned char *)arena;");
	ew_line(w, "memset(m, 0, sizeof *m);");
	ew_line(w, "p += STRUCT_BYTES;");
	if (emb) {
		ew_line(w, "int st = load_weights(m);");
	} else {
		ew_line(w, "int st = load_weights(m, weights_path, p, WEIGHTS_BYTES);");
		ew_line(w, "p += WEIGHTS_BYTES;");
	}
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *nd = E->g->nodes[i];
		if (nd->op != OP_RECURRENCE)
			continue;
		for (int k = 0; k < ir_attr_int(nd, "n_state", 0); k++) {
			ew_line(w, "m->%s = (float *)(void *)p;", emit_state_member(E, nd, k));
			ew_line(w, "p += %lld;", (long long)state_max_bytes(E, nd, k));
		}
	}
	for (int k = 0; k < t->ncarry; k++)
		for (int b = 0; b < 2; b++) {
			ew_line(w, "m->carry%d[%d] = (void *)p;", k, b);
			ew_line(w, "p += %lld;", (long long)carry_max_bytes(E, k));
		}
	ew_line(w, "m->ws = p;");
	ew_line(w, "m->ws_size = WS_BYTES;");
	ew_line(w, "st = %s_reset(m);", n);
	if (emit_rng_count(E->g)) {
		ew_line(w, "if (st == RT_OK)");
		ew_line(w, "\tst = %s_seed(m, 0); /* the default run-time seed */", n);
	}
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_line(w, "*mp = m;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	ew_line(w, "/* Nothing to release: the arena is the caller's. */");
	ew_fn_open(w, "void %s_destroy(%s *m)", n, n);
	ew_line(w, "(void)m;");
	ew_close(w, "");
}

void emit_blk_create(emit_ctx *E)
{
	if (E->o->no_malloc)
		create_arena(E);
	else
		create_malloc(E);
}

/* NAME.h: the build mode, and how an instance is made. */
void emit_blk_create_decls(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	const char *n = t->name;
	ew_line(w, "/* How this file was generated: weights embedded in %s.c (1) or read from", n);
	ew_line(w, " * %s.weights (0); memory from a caller-provided arena (1) or malloc (0);", n);
	ew_line(w, " * whether %s_step exists. */", n);
	ew_line(w, "#define %s_EMBEDDED_WEIGHTS %d", n, E->o->embed_weights ? 1 : 0);
	ew_line(w, "#define %s_NO_MALLOC %d", n, E->o->no_malloc ? 1 : 0);
	ew_line(w, "#define %s_HAS_STEP %d", n, t->time_sym >= 0 ? 1 : 0);
	ew_line(w, "%s", "");
	const char *wdoc = E->o->embed_weights
		? arena_printf(E->A, "The weights are embedded in %s.c: weights_path must be NULL.", n)
		: arena_printf(E->A, "weights_path: the weights file written with this model (%s.weights),", n);
	if (!E->o->no_malloc) {
		ew_line(w, "/* Makes an instance.  %s", wdoc);
		if (!E->o->embed_weights)
			ew_line(w, " * checked (format, checksum, tensor names, dtypes, shapes) before use.");
		ew_line(w, " * %s_destroy frees everything. */", n);
		ew_line(w, "int %s_create(%s **m, const char *weights_path);", n, n);
		if (!E->o->embed_weights) {
			ew_line(w, "/* The same from the bytes of %s.weights already in memory (fetched by a", n);
			ew_line(w, " * web page, in flash): copied, so the caller may free them on return. */");
			ew_line(w, "int %s_create_mem(%s **m, const void *weights, size_t bytes);", n, n);
		}
		ew_line(w, "void %s_destroy(%s *m);", n, n);
		return;
	}
	ew_line(w, "/* --no-malloc: neither this model nor the runtime calls it makes allocates.");
	ew_line(w, " * The instance and all its memory live in an arena the caller provides:");
	ew_line(w, " * at least %s_ARENA_BYTES bytes, 64-byte aligned, left alone until the", n);
	ew_line(w, " * instance is no longer used.  The size holds for dims up to the");
	ew_line(w, " * %s_MAX_* values (cellc compile --max-dim); larger dims are refused", n);
	ew_line(w, " * with RT_ERR_SHAPE. */");
	char *dmax = "";
	for (int i = 0; i < E->g->nsyms; i++)
		if (ir_sym_free(E->g, i)) {
			ew_line(w, "#define %s_MAX_%s INT64_C(%lld)", n, t->sym[i], (long long)E->o->max_dims[i]);
			dmax = arena_printf(E->A, "%s%s%s_MAX_%s", dmax, *dmax ? ", " : "", n, t->sym[i]);
		}
	ew_line(w, "/* the dims at their largest: %s_dims d = %s_DIMS_MAX; */", n, n);
	ew_line(w, "#define %s_DIMS_MAX {%s}", n, *dmax ? dmax : "0");
	ew_line(w, "#define %s_ARENA_BYTES ((size_t)%lld)", n, (long long)arena_bytes(E));
	ew_line(w, "%s", "");
	ew_line(w, "/* Makes an instance inside arena[arena_bytes] (RT_ERR_NOMEM: too small,");
	ew_line(w, " * RT_ERR_ARG: not 64-byte aligned).  %s", wdoc);
	if (!E->o->embed_weights)
		ew_line(w, " * read into the arena and checked like a file given to malloc builds.");
	ew_line(w, " * %s_destroy releases nothing (the arena is the caller's). */", n);
	ew_line(w, "int %s_create_in(%s **m, void *arena, size_t arena_bytes, const char *weights_path);", n, n);
	ew_line(w, "void %s_destroy(%s *m);", n, n);
}
