/* emit_api.c: the public API, declared in NAME.h and defined in NAME.c
 * around forward: the provenance and the dims legend, NAME_run and
 * NAME_step, streaming with carried state (--carry: NAME_stream,
 * NAME_carried), NAME_seed for the random streams, the generic interface
 * (the io tables, NAME_bind_dims, NAME_io_shape, NAME_output_dims,
 * NAME_run_generic), and a --train build's NAME_param,
 * NAME_set_forward_only and NAME_save (docs/training.md); and for the
 * JavaScript API of a WebAssembly build (--js, templates/model.mjs.in)
 * what it cannot ask the module: the dims' names, the time symbol, the
 * carried pairs.
 */
#include "emit.h"
#include "emit_tabs.h"
#include "infer.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- random streams ---------------------------------------------------------- */

/* The random nodes of the root graph (infer_draws_random) are numbered in node
 * order; stream k is the instance field m->rng[k] (cellrt.h, "random
 * operators"). */
int emit_rng_count(const ir_graph *g)
{
	int k = 0;
	for (int i = 0; i < g->nnodes; i++)
		k += infer_draws_random(g->nodes[i]);
	return k;
}

int emit_rng_index(emit_ctx *E, const ir_node *n)
{
	int k = 0;
	for (int i = 0; i < E->g->nnodes && E->g->nodes[i] != n; i++)
		k += infer_draws_random(E->g->nodes[i]);
	return k;
}

/* A node's seed attribute as the 64-bit seed of its stream: an integral
 * value (Dropout's int, or the random operators' float holding an integer)
 * is that integer (two's complement for negatives); any other float, its
 * IEEE double bits.  0 and *has = 0 without the attribute. */
static uint64_t seed_attr(const ir_node *n, int *has)
{
	const ir_attr *a = ir_attr_find(n, "seed");
	*has = a != NULL;
	if (!a)
		return 0;
	if (a->kind == ATTR_INT)
		return (uint64_t)a->i;
	double f = a->f;
	if (f == floor(f) && fabs(f) < 9.2e18)
		return (uint64_t)(int64_t)f;
	uint64_t bits;
	memcpy(&bits, &f, sizeof bits);
	return bits;
}

/* ---- blocks of NAME.h --------------------------------------------------- */

void emit_blk_provenance(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew_line(E->w, " * command: %s", emit_cmt(E->A, E->o->cmdline ? E->o->cmdline : "(not recorded)"));
	ew_line(E->w, " * model:   %s (FNV-1a 64: %016llx)", emit_cmt(E->A, g->source ? g->source : "(unknown)"),
		(unsigned long long)g->source_hash);
	ew_line(E->w, " * producer: %s; default-domain opset %d",
		emit_cmt(E->A, g->producer && *g->producer ? g->producer : "(unknown)"), g->opset);
	/* the dimension legend: where each symbol of the dims struct comes from */
	for (int i = 0; i < g->nsyms; i++) {
		const char *from = "given by the caller";
		if (!ir_sym_free(g, i)) {
			ew_line(E->w, " *          %s: computed, %s%s", emit_cmt(E->A, g->syms[i]),
				emit_cmt(E->A, ir_sym_def_str(E->A, g, i)), g->sym_pin[i] ?
				arena_printf(E->A, ", which must be %lld", (long long)g->sym_pin[i]) :
				g->symdef[i].exact ? ", which must divide exactly" : "");
			continue;
		}
		if (g->sym_value[i])
			from = arena_printf(E->A, "the value of input '%s' (which must hold it)",
					    emit_cmt(E->A, g->sym_value[i]));
		for (int k = 0; k < g->ninputs && !strcmp(from, "given by the caller"); k++)
			for (int a = 0; a < g->inputs[k]->shape.rank; a++)
				if (ir_dim_eq(g->inputs[k]->shape.d[a], ir_dim_sym(i))) {
					from = arena_printf(E->A, "axis %d of input '%s'", a, emit_cmt(E->A, g->inputs[k]->name));
					break;
				}
		ew_line(E->w, " * %s %s (d->%s): %s%s", i ? "         " : "dims:    ", emit_cmt(E->A, g->syms[i]),
			E->tabs->sym[i], from, E->tabs->time_sym == i ? "; the time steps T of the recurrences" : "");
	}
}

void emit_blk_dims(emit_ctx *E)
{
	if (E->g->nsyms == 0)
		ew_line(E->w, "int64_t unused_;        /* the model has no dimension symbols */");
	for (int i = 0; i < E->g->nsyms; i++)
		if (ir_sym_free(E->g, i))
			ew_line(E->w, "int64_t %s;%*s/* symbol '%s' */", E->tabs->sym[i],
			(int)(strlen(E->tabs->sym[i]) < 16 ? 16 - strlen(E->tabs->sym[i]) : 1), "",
			emit_cmt(E->A, E->g->syms[i]));
}

static int is_c_keyword(const char *s)
{
	return emit_is_keyword(s) || !strcmp(s, "m") || !strcmp(s, "d") || s[0] == '_' || !strncmp(s, "rt_", 3);
}

/* Parameter name of input/output k in the header: the tensor's name as an
 * identifier when that is unambiguous, else in_k / out_k. */
const char *emit_io_param_name(emit_ctx *E, int out, int k)
{
	ir_graph *g = E->g;
	const char *id = emit_c_ident(E->A, (out ? g->outputs : g->inputs)[k]->name);
	const char *fallback = arena_printf(E->A, "%s_%d", out ? "out" : "in", k);
	if (is_c_keyword(id) || strlen(id) > 48)
		return fallback;
	for (int o = 0; o <= 1; o++)
		for (int j = 0; j < (o ? g->noutputs : g->ninputs); j++)
			if ((o != out || j != k) &&
			    !strcmp(emit_c_ident(E->A, (o ? g->outputs : g->inputs)[j]->name), id))
				return fallback;
	if (!strncmp(id, "in_", 3) || !strncmp(id, "out_", 4))
		return fallback;
	return id;
}

/* The name of input/output k in the function bodies of NAME.c: the
 * header's where name_io found it safe (forward's placeholders, in_k /
 * out_k, until then). */
static const char *io_src_name(emit_ctx *E, int out, int k)
{
	const char **names = out ? E->tabs->out_name : E->tabs->in_name;
	return names ? names[k] : arena_printf(E->A, "%s_%d", out ? "out" : "in", k);
}

/* The parameter list of run/step/forward.  `header`: the tensor names with
 * shape comments (the header); otherwise the names the function bodies use
 * (io_src_name). */
const char *emit_io_params(emit_ctx *E, int header, int shapes)
{
	ir_graph *g = E->g;
	char *s = arena_printf(E->A, "%s *m, const %s_dims *d", E->tabs->name, E->tabs->name);
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			const ir_value *v = (out ? g->outputs : g->inputs)[k];
			const char *pn = header ? emit_io_param_name(E, out, k) : io_src_name(E, out, k);
			s = arena_printf(E->A, "%s,\n\t\t%s%s *%s", s, out ? "" : "const ", ctype(v), pn);
			int renamed = header && strcmp(pn, v->name);
			/* FLOAT16 / BFLOAT16 tensors pass as float (computed in float32) */
			const char *narrow = !header || !v->narrow ? ""
					     : v->narrow == DT_F16 ? " float16 values as float"
								    : " bfloat16 values as float";
			if (header && (shapes || renamed || *narrow))
				s = arena_printf(E->A, "%s /* %s%s%s%s%s%s */", s, renamed ? "'" : "",
						 renamed ? emit_cmt(E->A, v->name) : "", renamed ? "'" : "",
						 renamed && shapes ? " " : "", shapes ? emit_shape_comment(E, v) : "",
						 *narrow && !shapes && !renamed ? narrow + 1 : narrow);
		}
	return s;
}

static const char *io_args(emit_ctx *E, const char *dims)
{
	char *s = arena_printf(E->A, "m, %s", dims);
	for (int k = 0; k < E->g->ninputs; k++)
		s = arena_printf(E->A, "%s, %s", s, io_src_name(E, 0, k));
	for (int k = 0; k < E->g->noutputs; k++)
		s = arena_printf(E->A, "%s, %s", s, io_src_name(E, 1, k));
	return s;
}

/* ---- carried state (cellc compile --carry IN=OUT) --------------------------- */

static int carried(emit_ctx *E, int out, int k)
{
	for (int j = 0; j < E->tabs->ncarry; j++)
		if ((out ? E->tabs->carry_out[j] : E->tabs->carry_in[j]) == k)
			return j;
	return -1;
}

/* The parameters of NAME_stream: emit_io_params without the carried tensors. */
static const char *stream_params(emit_ctx *E, int header)
{
	ir_graph *g = E->g;
	char *s = arena_printf(E->A, "%s *m, const %s_dims *d", E->tabs->name, E->tabs->name);
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			if (carried(E, out, k) >= 0)
				continue;
			const ir_value *v = (out ? g->outputs : g->inputs)[k];
			const char *pn = header ? emit_io_param_name(E, out, k) : io_src_name(E, out, k);
			s = arena_printf(E->A, "%s,\n\t\t%s%s *%s", s, out ? "" : "const ", ctype(v), pn);
			if (header)
				s = arena_printf(E->A, "%s /* %s */", s, emit_shape_comment(E, v));
		}
	return s;
}

static void stream_decls(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	const char *n = t->name;
	ew_line(w, "%s", "");
	ew_line(w, "/* Streaming with carried state (cellc compile --carry): one call of the model");
	ew_line(w, " * whose state inputs are the instance's, the state outputs of the previous");
	ew_line(w, " * call (zeros after create and %s_reset), so that consecutive calls continue", n);
	ew_line(w, " * one stream with no copying by the caller.  Carried, k = 0..%d:", t->ncarry - 1);
	for (int k = 0; k < t->ncarry; k++)
		ew_line(w, " *   %d: input '%s' <- output '%s' %s", k, emit_cmt(E->A, E->g->inputs[t->carry_in[k]]->name),
			emit_cmt(E->A, E->g->outputs[t->carry_out[k]]->name), emit_shape_comment(E, E->g->inputs[t->carry_in[k]]));
	ew_line(w, " * A stream keeps its dims: others return RT_ERR_SHAPE until %s_reset. */", n);
	ew_line(w, "#define %s_NUM_CARRIED %d", n, t->ncarry);
	ew_line(w, "int %s_stream(%s);", n, stream_params(E, 1));
	ew_line(w, "/* Carried state k as the last %s_stream left it (the last call's output),", n);
	ew_line(w, " * its element count in *count (if not NULL); NULL before the first call after");
	ew_line(w, " * create or reset (the state is zeros then) or for another k. */");
	ew_line(w, "const void *%s_carried(const %s *m, int k, int64_t *count);", n, n);
}

static void api_stream(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	ir_graph *g = E->g;
	const char *n = t->name;
	ew_line(w, "%s", "");
	ew_fn_open(w, "int %s_stream(%s)", n, stream_params(E, 0));
	ew_line(w, "if (!m || !d)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	emit_dims_check(E, E->o->no_malloc);
	for (int i = 0; i < g->nsyms; i++)
		t->used_sym[i] = 1;
	emit_dims_locals(E);
	for (int i = 0; i < g->nsyms; i++)
		if (!ir_sym_is_offset(g, i))
			ew_line(w, "(void)d_%s;", t->sym[i]);
	for (int k = 0; k < t->ncarry; k++) {
		const ir_value *v = g->inputs[t->carry_in[k]];
		ew_line(w, "const size_t n%d = (size_t)%s;", k, emit_numel(E, &v->shape));
		ew_line(w, "if (m->carry_live && n%d != m->carry%d_n)", k, k);
		ew_line(w, "\treturn RT_ERR_SHAPE; /* a stream keeps its dims until reset */");
		if (!E->o->no_malloc) {
			ew_open(w, "if (n%d != m->carry%d_n || !m->carry%d[0])", k, k, k);
			ew_line(w, "free(m->carry%d[0]);", k);
			ew_line(w, "free(m->carry%d[1]);", k);
			ew_line(w, "m->carry%d[0] = aligned_alloc(64, ALIGN64(sizeof(%s) * n%d + 1));", k, ctype(v), k);
			ew_line(w, "m->carry%d[1] = aligned_alloc(64, ALIGN64(sizeof(%s) * n%d + 1));", k, ctype(v), k);
			ew_line(w, "m->carry%d_n = 0;", k);
			ew_line(w, "if (!m->carry%d[0] || !m->carry%d[1])", k, k);
			ew_line(w, "\treturn RT_ERR_NOMEM;");
			ew_close(w, "");
		}
		ew_line(w, "m->carry%d_n = n%d;", k, k);
	}
	ew_open(w, "if (!m->carry_live)");
	for (int k = 0; k < t->ncarry; k++)
		ew_line(w, "memset(m->carry%d[m->carry_cur], 0, sizeof(%s) * n%d);", k,
			ctype(g->inputs[t->carry_in[k]]), k);
	ew_close(w, "");
	ew_line(w, "m->started = 0; /* the model's own recurrences start from the state inputs */");
	char *args = "m, d";
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			int j = carried(E, out, k);
			args = j < 0 ? arena_printf(E->A, "%s, %s", args, io_src_name(E, out, k))
				     : arena_printf(E->A, "%s, m->carry%d[%sm->carry_cur]", args, j, out ? "!" : "");
		}
	ew_line(w, "int st = forward(%s);", args);
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_line(w, "m->carry_cur = !m->carry_cur;");
	ew_line(w, "m->carry_live = 1;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	ew_fn_open(w, "const void *%s_carried(const %s *m, int k, int64_t *count)", n, n);
	ew_line(w, "if (!m || !m->carry_live)");
	ew_line(w, "\treturn NULL;");
	ew_line(w, "switch (k) {");
	for (int k = 0; k < t->ncarry; k++) {
		ew_line(w, "case %d:", k);
		ew_line(w, "\tif (count)");
		ew_line(w, "\t\t*count = (int64_t)m->carry%d_n;", k);
		ew_line(w, "\treturn m->carry%d[m->carry_cur];", k);
	}
	ew_line(w, "default:");
	ew_line(w, "\treturn NULL;");
	ew_line(w, "}");
	ew_close(w, "");
}

/* Resolves --carry's names; 1 after errors. */
int emit_resolve_carry(emit_ctx *E)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	const emit_opts *o = E->o;
	t->carry_in = arena_array(E->A, (size_t)o->ncarry + 1, sizeof *t->carry_in);
	t->carry_out = arena_array(E->A, (size_t)o->ncarry + 1, sizeof *t->carry_out);
	for (int j = 0; j < o->ncarry; j++) {
		int ki = -1, ko = -1;
		for (int k = 0; k < g->ninputs; k++)
			if (!strcmp(g->inputs[k]->name, o->carry_in[j]))
				ki = k;
		for (int k = 0; k < g->noutputs; k++)
			if (!strcmp(g->outputs[k]->name, o->carry_out[j]))
				ko = k;
		const char *pair = arena_printf(E->A, "--carry %s=%s", o->carry_in[j], o->carry_out[j]);
		if (ki < 0) {
			diag_error(E->D, "%s: the compiled model has no input '%s' (a bound input is no input)", pair,
				   o->carry_in[j]);
			continue;
		}
		if (ko < 0) {
			diag_error(E->D, "%s: the model has no output '%s'", pair, o->carry_out[j]);
			continue;
		}
		const ir_value *vi = g->inputs[ki], *vo = g->outputs[ko];
		if (vi->dtype != vo->dtype || !ir_shape_eq(&vi->shape, &vo->shape)) {
			diag_error(E->D, "%s: the input is %s%s but the output %s%s; a carried state must keep its type "
				   "and shape", pair, ir_dtype_name(vi->dtype), ir_shape_str(E->A, g, &vi->shape),
				   ir_dtype_name(vo->dtype), ir_shape_str(E->A, g, &vo->shape));
			continue;
		}
		if (carried(E, 0, ki) >= 0 || carried(E, 1, ko) >= 0) {
			diag_error(E->D, "%s: input '%s' or output '%s' is carried twice", pair, vi->name, vo->name);
			continue;
		}
		t->carry_in[t->ncarry] = ki;
		t->carry_out[t->ncarry++] = ko;
	}
	return E->D->nerrors > 0;
}

/* ---- training (cellc compile --train) ------------------------------------- */

/* The declarations of a train build's extra API (docs/training.md). */
static void train_decls(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	const ir_train *t = E->g->train;
	ew_line(w, "%s", "");
	ew_line(w, "/* ---- training (cellc compile --train --loss %s) ----", train_loss_name(t->loss));
	ew_line(w, " * Inputs after the model's: target%s.  Outputs after the model's: loss,",
		t->loss == TRAIN_MASKED_MSE ? ", mask" : "");
	ew_line(w, " * grad.<P> per parameter, grad.<X> per f32 input, dstate (find them by");
	ew_line(w, " * name with %s_io_name).  The parameters are the tensors of %s.weights. */", n, n);
	ew_line(w, "#define %s_TRAIN 1", n);
	ew_line(w, "#define %s_NUM_PARAMS %d", n, t->nparams);
	ew_line(w, "struct rt_tensor;");
	ew_line(w, "/* k-th trainable parameter: name, mutable data, element count. */");
	ew_line(w, "int %s_param(%s *m, int k, const char **name, float **data, int64_t *numel);", n, n);
	ew_line(w, "/* 1: the next runs compute only the model's outputs and the loss (the");
	ew_line(w, " * gradient outputs are left untouched); 0: everything. */");
	ew_line(w, "int %s_set_forward_only(%s *m, int on);", n, n);
	ew_line(w, "/* Writes the parameters and the caller's extra tensors (names starting with");
	ew_line(w, " * '@', e.g. optimiser state) atomically as a weights file %s_create accepts. */", n);
	ew_line(w, "int %s_save(%s *m, const char *path, int nextra, const struct rt_tensor *extra);", n, n);
	ew_line(w, "typedef struct %s_train_info {", n);
	ew_line(w, "\tint x_input;            /* the data input */");
	ew_line(w, "\tint batch_axis, time_axis; /* of the data input */");
	ew_line(w, "\tint loss_kind;          /* 0 ce, 1 ce-all, 2 mse, 3 masked-mse */");
	ew_line(w, "\tint logits_output;      /* the output the loss reads */");
	ew_line(w, "\tint loss_output_index;  /* the output `loss` */");
	ew_line(w, "\tint nclasses;           /* ce, ce-all: classes; else 0 */");
	ew_line(w, "} %s_train_info;", n);
	ew_line(w, "extern const %s_train_info %s_TRAIN_INFO;", n, n);
}

/* The definitions: parameters are weights (w_ members pointing into the loaded
 * weights file, whose memory is the instance's own). */
static void train_api(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *tb = E->tabs;
	const char *n = tb->name;
	const ir_train *t = E->g->train;
	int np = t->nparams;
	ew_line(w, "%s", "");
	ew_line(w, "/* ---- training ---- */");
	ew_line(w, "%s", "");
	ew_line(w, "const %s_train_info %s_TRAIN_INFO = {%d, %d, %d, %d, %d, %d, %d};", n, n, t->x_input,
		t->batch_axis, t->time_axis, t->loss, t->logits_output, t->loss_output_index, t->nclasses);
	ew_line(w, "%s", "");
	ew_fn_open(w, "int %s_param(%s *m, int k, const char **name, float **data, int64_t *numel)", n, n);
	ew_line(w, "if (!m || k < 0 || k >= %d)", np);
	ew_line(w, "\treturn RT_ERR_ARG;");
	if (np) {
		char *ws = "", *cs = "", *ix = "";
		for (int i = 0; i < np; i++) {
			int wk = emit_find_index(tb->weights, tb->nweights, t->params[i]);
			ASSERT(wk >= 0);
			ws = arena_printf(E->A, "%s%s(float *)m->%s", ws, i ? ", " : "", tb->wname[wk]);
			cs = arena_printf(E->A, "%s%s%lld", cs, i ? ", " : "",
					  (long long)ir_shape_const_numel(&t->params[i]->shape));
			ix = arena_printf(E->A, "%s%s%d", ix, i ? ", " : "", wk);
		}
		ew_line(w, "static const int64_t count[%d] = {%s};", np, cs);
		ew_line(w, "static const int widx[%d] = {%s};   /* weight_desc index */", np, ix);
		ew_line(w, "float *const p[%d] = {%s};", np, ws);
		ew_line(w, "if (name)");
		ew_line(w, "\t*name = weight_desc[widx[k]].name;");
		ew_line(w, "if (data)");
		ew_line(w, "\t*data = p[k];");
		ew_line(w, "if (numel)");
		ew_line(w, "\t*numel = count[k];");
	} else {
		ew_line(w, "(void)name, (void)data, (void)numel;");
	}
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	ew_fn_open(w, "int %s_set_forward_only(%s *m, int on)", n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "m->fwd_only = on != 0;");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
	ew_line(w, "%s", "");
	ew_fn_open(w, "int %s_save(%s *m, const char *path, int nextra, const rt_tensor *extra)", n, n);
	int nw = tb->nweights;
	ew_line(w, "if (!m || !path || nextra < 0 || (nextra && !extra))");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "rt_tensor *t = malloc((size_t)(%d + nextra) * sizeof *t);", nw);
	ew_line(w, "if (!t)");
	ew_line(w, "\treturn RT_ERR_NOMEM;");
	char *wl = "";
	for (int k = 0; k < nw; k++)
		wl = arena_printf(E->A, "%s%s(const void *)m->%s", wl, k ? ", " : "", E->tabs->wname[k]);
	ew_line(w, "const void *const wp[%d] = {%s};", nw ? nw : 1, nw ? wl : "0");
	ew_open(w, "for (int i = 0; i < %d; i++)", nw);
	ew_line(w, "const struct weight_desc *wd = &weight_desc[i];");
	ew_line(w, "t[i].name = wd->name;");
	ew_line(w, "t[i].dtype = wd->dtype;");
	ew_line(w, "t[i].rank = wd->rank;");
	ew_line(w, "size_t cnt = 1;");
	ew_open(w, "for (int a = 0; a < wd->rank; a++)");
	ew_line(w, "t[i].dims[a] = wd->dims[a];");
	ew_line(w, "cnt *= (size_t)wd->dims[a];");
	ew_close(w, "");
	ew_line(w, "t[i].data = wp[i];");
	ew_line(w, "t[i].nbytes = cnt * rt_dtype_size(wd->dtype);");
	ew_close(w, "");
	ew_line(w, "for (int i = 0; i < nextra; i++)");
	ew_line(w, "\tt[%d + i] = extra[i];", nw);
	ew_line(w, "int st = rt_tf_write(path, %d + nextra, t);", nw);
	ew_line(w, "free(t);");
	ew_line(w, "return st;");
	ew_close(w, "");
}

/* ---- run, step, seed ---------------------------------------------------- */

void emit_blk_run_decls(emit_ctx *E)
{
	const char *n = E->tabs->name;
	ew_line(E->w, "/* Runs the whole sequence from the initial state (reset first); the");
	ew_line(E->w, " * recurrent state is left at the last step.  Shapes in terms of %s_dims. */", n);
	ew_line(E->w, "int %s_run(%s);", n, emit_io_params(E, 1, 1));
	if (E->tabs->time_sym >= 0) {
		ew_line(E->w, "%s", "");
		ew_line(E->w, "/* Advances one time step (streaming): like %s_run with %s = 1, but", n,
			E->tabs->sym[E->tabs->time_sym]);
		ew_line(E->w, " * continuing from the state the previous run or step left. */");
		ew_line(E->w, "int %s_step(%s);", n, emit_io_params(E, 1, 0));
	}
	if (E->tabs->ncarry)
		stream_decls(E);
	if (E->g->train)
		train_decls(E);
	ew_line(E->w, "%s", "");
	ew_line(E->w, "/* Whether the model draws random numbers (RandomUniform, RandomNormal, their");
	ew_line(E->w, " * Like forms, Bernoulli, Dropout in training mode): then %s_seed exists. */", n);
	ew_line(E->w, "#define %s_HAS_RANDOM %d", n, emit_rng_count(E->g) ? 1 : 0);
	if (emit_rng_count(E->g)) {
		ew_line(E->w, "/* (Re)starts every random stream (one per random node, xoshiro256**): a");
		ew_line(E->w, " * node with a seed attribute from that seed, the others from `seed` (the");
		ew_line(E->w, " * run-time seed: %s_create uses 0).  Streams go on from call to call", n);
		ew_line(E->w, " * (%s_reset leaves them); the same seed gives the same draws. */", n);
		ew_line(E->w, "int %s_seed(%s *m, uint64_t seed);", n, n);
	}
}

/* NAME_seed: every stream from its node's seed attribute or the run-time seed. */
static void api_seed(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	ew_fn_open(w, "int %s_seed(%s *m, uint64_t seed)", n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	int k = 0, uses = 0;
	for (int i = 0; i < E->g->nnodes; i++) {
		const ir_node *nd = E->g->nodes[i];
		if (!infer_draws_random(nd))
			continue;
		int has;
		uint64_t s = seed_attr(nd, &has);
		if (has)
			ew_line(w, "rt_rng_seed(&m->rng[%d], UINT64_C(%llu)); /* %s '%s': its seed attribute */", k,
				(unsigned long long)s, ir_op_name(nd->op), emit_cmt(E->A, nd->name ? nd->name : "?"));
		else
			ew_line(w, "rt_rng_seed_stream(&m->rng[%d], seed, %d); /* %s '%s' */", k, k, ir_op_name(nd->op),
				emit_cmt(E->A, nd->name ? nd->name : "?"));
		uses |= !has;
		k++;
	}
	if (!uses)
		ew_line(w, "(void)seed; /* every random node has its own seed attribute */");
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

/* ---- the public API around forward --------------------------------------- */

static void api_run(emit_ctx *E)
{
	ew *w = E->w;
	const char *n = E->tabs->name;
	ew_fn_open(w, "int %s_run(%s)", n, emit_io_params(E, 0, 0));
	ew_line(w, "int st = %s_reset(m);", n);
	ew_line(w, "if (st != RT_OK)");
	ew_line(w, "\treturn st;");
	ew_line(w, "return forward(%s);", io_args(E, "d"));
	ew_close(w, "");
	if (E->tabs->time_sym < 0)
		return;
	ew_line(w, "%s", "");
	ew_fn_open(w, "int %s_step(%s)", n, emit_io_params(E, 0, 0));
	ew_line(w, "if (!m || !d)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "%s_dims one = *d;", n);
	ew_line(w, "one.%s = 1;", E->tabs->sym[E->tabs->time_sym]);
	if (emit_step_runs_branches(E->g)) {
		ew_line(w, "m->stepping = 1;");
		ew_line(w, "int st = forward(%s);", io_args(E, "&one"));
		ew_line(w, "m->stepping = 0;");
		ew_line(w, "return st;");
	} else {
		ew_line(w, "return forward(%s);", io_args(E, "&one"));
	}
	ew_close(w, "");
}

static void api_io_tables(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew *w = E->w;
	const char *n = E->tabs->name;
	for (int out = 0; out <= 1; out++) {
		int cnt = out ? g->noutputs : g->ninputs;
		ir_value **vs = out ? g->outputs : g->inputs;
		const char *tag = out ? "outputs" : "inputs";
		char *names = "", *dts = "", *ranks = "";
		for (int k = 0; k < cnt; k++) {
			names = arena_printf(E->A, "%s%s%s", names, k ? ", " : "", emit_c_string(E->A, vs[k]->name));
			dts = arena_printf(E->A, "%s%s%d", dts, k ? ", " : "", (int)vs[k]->dtype);
			ranks = arena_printf(E->A, "%s%s%d", ranks, k ? ", " : "", vs[k]->shape.rank);
		}
		if (cnt == 0)
			names = "NULL", dts = ranks = "-1";
		ew_line(w, "static const char *const %s_name[] = {%s};", tag, names);
		ew_line(w, "static const int %s_dtype[] = {%s};", tag, dts);
		ew_line(w, "static const int %s_rank[] = {%s};", tag, ranks);
	}
	ew_line(w, "%s", "");
	static const struct { const char *fn, *type, *tab, *none; } q[] = {
		{"io_name", "const char *", "name", "NULL"},
		{"io_dtype", "int ", "dtype", "-1"},
		{"io_rank", "int ", "rank", "-1"},
	};
	for (size_t i = 0; i < COUNTOF(q); i++) {
		ew_fn_open(w, "%s%s_%s(int is_output, int k)", q[i].type, n, q[i].fn);
		ew_line(w, "if (k < 0 || k >= (is_output ? %d : %d))", g->noutputs, g->ninputs);
		ew_line(w, "\treturn %s;", q[i].none);
		ew_line(w, "return is_output ? outputs_%s[k] : inputs_%s[k];", q[i].tab, q[i].tab);
		ew_close(w, "");
		ew_line(w, "%s", "");
	}
}

/* The symbol read off dim i of input k: the first input dim that is the
 * symbol alone; -1 if that dim binds none. */
static int binds_symbol(const ir_graph *g, int k, int i)
{
	for (int sy = 0; sy < g->nsyms; sy++)
		for (int kk = 0; kk < g->ninputs && ir_sym_free(g, sy); kk++) {
			const ir_shape *s = &g->inputs[kk]->shape;
			int ii;
			for (ii = 0; ii < s->rank && !ir_dim_eq(s->d[ii], ir_dim_sym(sy)); ii++)
				;
			if (ii < s->rank) {
				if (kk == k && ii == i)
					return sy;
				break;
			}
		}
	return -1;
}

/* The symbols are read off the input dims that are one plain symbol; then
 * every other input dim is checked against its expression. */
static void api_bind_dims(emit_ctx *E, int values)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	ew_capture c;
	emit_clear_marks(E);
	ew_capture_begin(w, &c, 1);
	for (int k = 0; k < g->ninputs; k++) {
		const ir_shape *s = &g->inputs[k]->shape;
		for (int i = 0; i < s->rank; i++) {
			if (binds_symbol(g, k, i) >= 0)
				continue;       /* the dim a symbol is read from */
			ew_line(w, "if (input_dims[%d][%d] != %s)", k, i, emit_dim(E, s->d[i]));
			ew_line(w, "\treturn RT_ERR_SHAPE;");
		}
	}
	char *checks = ew_capture_end(w, &c, E->A);

	int nvalues = 0;
	for (int sy = 0; sy < g->nsyms; sy++)
		nvalues += ir_sym_value_input(g, sy) >= 0;
	if (values)
		ew_fn_open(w, "int %s_bind_values(const int64_t *const *input_dims, const void *const *in, %s_dims *d)",
			   t->name, t->name);
	else
		ew_fn_open(w, "int %s_bind_dims(const int64_t *const *input_dims, %s_dims *d)", t->name, t->name);
	if (!g->ninputs)
		ew_line(w, "(void)input_dims; /* the model has no inputs */");
	if (values && !nvalues)
		ew_line(w, "(void)in; /* no dim is the value of an input */");
	ew_line(w, "if (!d%s%s)", g->ninputs ? " || !input_dims" : "", values && nvalues ? " || !in" : "");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "memset(d, 0, sizeof *d);");
	for (int k = 0; k < g->ninputs; k++) {
		ew_line(w, "if (!input_dims[%d])", k);
		ew_line(w, "\treturn RT_ERR_ARG;");
	}
	for (int sy = 0; sy < g->nsyms; sy++) {
		int found = !ir_sym_free(g, sy);        /* derived: computed */
		int vk = ir_sym_value_input(g, sy);
		if (vk >= 0 && values) {
			ew_line(w, "if (!in[%d])", vk);
			ew_line(w, "\treturn RT_ERR_ARG;");
			ew_line(w, "d->%s = ((const %s *)in[%d])[0]; /* the value of input '%s' */", t->sym[sy],
				g->inputs[vk]->dtype == DT_I32 ? "int32_t" : "int64_t", vk, emit_cmt(E->A, g->inputs[vk]->name));
			continue;
		}
		if (vk >= 0) {
			ew_line(w, "/* symbol '%s' is the value of input '%s': %s_bind_values reads it */",
				emit_cmt(E->A, g->syms[sy]), emit_cmt(E->A, g->inputs[vk]->name), t->name);
			ew_line(w, "return RT_ERR_SHAPE;");
			ew_close(w, "");
			return;
		}
		for (int k = 0; k < g->ninputs && !found; k++) {
			const ir_shape *s = &g->inputs[k]->shape;
			for (int i = 0; i < s->rank && !found; i++)
				if (ir_dim_eq(s->d[i], ir_dim_sym(sy))) {
					ew_line(w, "d->%s = input_dims[%d][%d];", t->sym[sy], k, i);
					found = 1;
				}
		}
		if (!found) {
			ew_line(w, "/* symbol '%s' is no input dim by itself: the caller must set it */",
				emit_cmt(E->A, g->syms[sy]));
			ew_line(w, "return RT_ERR_SHAPE;");
			ew_close(w, "");
			return;
		}
	}
	emit_dims_check(E, 0);
	emit_dims_locals(E);
	fputs(checks, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

static void api_io_shape(emit_ctx *E)
{
	ir_graph *g = E->g;
	struct emit_tabs *t = E->tabs;
	ew *w = E->w;
	ew_capture c;
	emit_clear_marks(E);
	ew_capture_begin(w, &c, 1);
	for (int out = 0; out <= 1; out++) {
		int cnt = out ? g->noutputs : g->ninputs;
		ir_value **vs = out ? g->outputs : g->inputs;
		for (int k = 0; k < cnt; k++) {
			const ir_shape *s = &vs[k]->shape;
			if (s->rank == 0)
				continue;
			ew_open(w, "if (is_output == %d && k == %d)", out, k);
			for (int i = 0; i < s->rank; i++)
				ew_line(w, "dims[%d] = %s;", i, emit_dim(E, s->d[i]));
			ew_close(w, "");
		}
	}
	char *body = ew_capture_end(w, &c, E->A);

	ew_fn_open(w, "int %s_io_shape(const %s_dims *d, int is_output, int k, int64_t *dims)", t->name, t->name);
	ew_line(w, "if (!d || %s_io_rank(is_output, k) < 0 || (!dims && %s_io_rank(is_output, k) > 0))",
		t->name, t->name);
	ew_line(w, "\treturn RT_ERR_ARG;");
	emit_dims_check(E, 0);
	emit_dims_locals(E);
	fputs(body, w->f);
	ew_line(w, "return RT_OK;");
	ew_close(w, "");
}

/* io_shape, then the length the last run found on each data-dependent axis. */
static void api_output_dims(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew *w = E->w;
	const char *n = E->tabs->name;
	ew_fn_open(w, "int %s_output_dims(const %s *m, const %s_dims *d, int k, int64_t *dims)", n, n, n);
	ew_line(w, "if (!m)");
	ew_line(w, "\treturn RT_ERR_ARG;");
	ew_line(w, "int st = %s_io_shape(d, 1, k, dims);", n);
	for (int k = 0; k < g->noutputs; k++) {
		const ir_value *v = g->outputs[k];
		if (!v->data_dep || !ir_dd_source(v))
			continue;
		ew_line(w, "if (st == RT_OK && k == %d) /* '%s': axis %d at most %s */", k, emit_cmt(E->A, v->name),
			v->dd_axis, emit_cmt(E->A, ir_dim_str(E->A, g, v->shape.d[v->dd_axis])));
		ew_line(w, "\tdims[%d] = m->dd_len[%d];", v->dd_axis, emit_dd_slot(g, ir_dd_source(v)));
	}
	ew_line(w, "return st;");
	ew_close(w, "");
}

static void api_run_generic(emit_ctx *E)
{
	ir_graph *g = E->g;
	ew *w = E->w;
	const char *n = E->tabs->name;
	char *args = "m, d";
	for (int k = 0; k < g->ninputs; k++)
		args = arena_printf(E->A, "%s,\n\t\t\t(const %s *)in[%d]", args, ctype(g->inputs[k]), k);
	for (int k = 0; k < g->noutputs; k++)
		args = arena_printf(E->A, "%s,\n\t\t\t(%s *)out[%d]", args, ctype(g->outputs[k]), k);
	ew_fn_open(w, "int %s_run_generic(%s *m, const %s_dims *d, const void *const *in, void *const *out)", n, n, n);
	if (g->ninputs == 0)
		ew_line(w, "(void)in;");
	if (g->noutputs == 0)
		ew_line(w, "(void)out;");
	if (g->ninputs || g->noutputs) {
		ew_line(w, "if (%s)", g->ninputs && g->noutputs ? "!in || !out" : g->ninputs ? "!in" : "!out");
		ew_line(w, "\treturn RT_ERR_ARG;");
	}
	ew_line(w, "return %s_run(%s);", n, args);
	ew_close(w, "");
}

void emit_blk_api(emit_ctx *E)
{
	api_run(E);
	if (E->tabs->ncarry)
		api_stream(E);
	if (emit_rng_count(E->g)) {
		ew_line(E->w, "%s", "");
		api_seed(E);
	}
	ew_line(E->w, "%s", "");
	ew_line(E->w, "/* ---- generic interface ---- */");
	ew_line(E->w, "%s", "");
	api_io_tables(E);
	api_bind_dims(E, 0);
	ew_line(E->w, "%s", "");
	api_bind_dims(E, 1);
	ew_line(E->w, "%s", "");
	api_io_shape(E);
	ew_line(E->w, "%s", "");
	api_output_dims(E);
	ew_line(E->w, "%s", "");
	api_run_generic(E);
	if (E->g->train)
		train_api(E);
}

/* ---- NAME.mjs (--js): the model as its JavaScript API sees it ---------------- */

/* One object literal, MODEL: the members of NAME_dims in order, the symbol
 * NAME_step sets to 1 (null without NAME_step), the --carry pairs as
 * [input, output] positions, and whether the weights are embedded; the io
 * names, dtypes and shapes the API asks the module itself. */
void emit_blk_js_model(emit_ctx *E)
{
	ew *w = E->w;
	struct emit_tabs *t = E->tabs;
	ir_graph *g = E->g;
	char *dims = "";
	for (int i = 0; i < g->nsyms; i++)
		if (ir_sym_free(g, i))
			dims = arena_printf(E->A, "%s%s\"%s\"", dims, *dims ? ", " : "", t->sym[i]);
	char *carried = "";
	for (int k = 0; k < t->ncarry; k++)
		carried = arena_printf(E->A, "%s%s[%d, %d]", carried, k ? ", " : "", t->carry_in[k], t->carry_out[k]);
	ew_line(w, "const MODEL = {");
	ew_line(w, "\tname: \"%s\", nin: %d, nout: %d,", t->name, g->ninputs, g->noutputs);
	ew_line(w, "\tdims: [%s],", dims);
	if (t->time_sym >= 0)
		ew_line(w, "\ttime: \"%s\",", t->sym[t->time_sym]);
	else
		ew_line(w, "\ttime: null,");
	ew_line(w, "\tcarried: [%s],", carried);
	ew_line(w, "\tembedded: %s,", E->o->embed_weights ? "true" : "false");
	ew_line(w, "};");
}
