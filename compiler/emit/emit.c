/* emit.c: writes a compiled model -- DIR/NAME.h, NAME.c, NAME.weights, a
 * Makefile and a CMakeLists.txt -- from the planned root graph (emit_model),
 * and a --train build's training program.
 *
 * The fixed text of every file is a template (templates/NAME.in, embedded into
 * cellc) with two kinds of markers: `@KEY@` inside a line is replaced by a
 * string (NAME, VERSION, ...), and a line holding only `@@BLOCK@@` is
 * replaced by the output of the block's printer (emit_blk_*, emit_tabs.h),
 * indented like the marker.  The printers only read the IR: shapes, slots
 * (pass_plan), fusion groups (pass_fuse) and recurrences (emit_rec.c) are
 * decided before.
 *
 * The forward function is printed into memory first (emit_forward.c): while
 * printing, emit_ref and emit_dim mark which inputs, outputs, constants,
 * workspace slots and dimension symbols the code uses, so the declarations
 * printed around it are exactly the used ones (the emitted code compiles
 * with -Wall -Wextra -Werror, where an unused local is an error).
 *
 * Naming in emitted code: dims `d_<sym>`, inputs and outputs the names of
 * their parameters in NAME.h (`x`, `grad_h1_W_h`) or, where a function that
 * takes one reads that name already, `in_<k>` / `out_<k>` (name_io),
 * weights `m->w_<name>` and recurrent states `m->st_<name>` (the tensor's
 * name as a C identifier, h1.W_x -> m->w_h1_W_x, numbered on a clash:
 * emit_names.c's member_name), constants `c_<k>`, workspace parts
 * `ws_<what they hold>` (emit_slot_name; `ws-><what they hold>` in a
 * function that takes them as its struct `<fn>_ws`), the time loop of a recurrence
 * `rec_<name>()` (print_rec_function), a --train build's root backward part
 * `backward()` (print_backward, both emit_forward.c), the gradients in a
 * backward recurrence's step `g_<forward value>` (emit_rec.c).
 *
 * Deployment modes (emit_opts; docs/deploying.md): the weights come from
 * NAME.weights (checked, then pointed into) or, with embed_weights, from
 * 64-byte aligned static const arrays in NAME.c; memory is allocated on
 * demand (workspace, recurrent states) or, with no_malloc, carved at create
 * time out of one caller-provided arena whose size cellc computes for the
 * largest dims (--max-dim) and prints into NAME.h as NAME_ARENA_BYTES
 * (emit_instance.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "emit.h"
#include "emit_tabs.h"
#include "cellrt.h"
#include "version.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- templates ----------------------------------------------------------- */

typedef void (*block_fn)(emit_ctx *E);

typedef struct tpl_env {
	const char *const *keys;        /* inline markers @KEY@ */
	const char *const *vals;
	int nkeys;
	const char *const *blocks;      /* block markers @@BLOCK@@ */
	const block_fn *fns;
	int nblocks;
} tpl_env;

static int is_key_char(char c) { return (c >= 'A' && c <= 'Z') || c == '_'; }

static void tpl_line(emit_ctx *E, const tpl_env *env, const char *s, size_t n)
{
	FILE *f = E->w->f;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '@') {
			size_t j = i + 1;
			while (j < n && is_key_char(s[j]))
				j++;
			if (j < n && j > i + 1 && s[j] == '@') {
				int k;
				for (k = 0; k < env->nkeys; k++)
					if (strlen(env->keys[k]) == j - i - 1 &&
					    !strncmp(env->keys[k], s + i + 1, j - i - 1))
						break;
				if (k == env->nkeys)
					die("internal error: template marker @%.*s@ has no value", (int)(j - i - 1), s + i + 1);
				fputs(env->vals[k], f);
				i = j;
				continue;
			}
		}
		fputc(s[i], f);
	}
	fputc('\n', f);
}

static void tpl_expand(emit_ctx *E, const char *tpl_name, const tpl_env *env)
{
	const char *t = emit_template(tpl_name);
	if (!t)
		die("internal error: template %s is not embedded", tpl_name);
	while (*t) {
		const char *nl = strchr(t, '\n');
		size_t n = nl ? (size_t)(nl - t) : strlen(t);
		size_t tabs = 0;
		while (tabs < n && t[tabs] == '\t')
			tabs++;
		const char *b = t + tabs;
		size_t bn = n - tabs;
		if (bn > 4 && !strncmp(b, "@@", 2) && !strncmp(b + bn - 2, "@@", 2)) {
			int k;
			for (k = 0; k < env->nblocks; k++)
				if (strlen(env->blocks[k]) == bn - 4 && !strncmp(env->blocks[k], b + 2, bn - 4))
					break;
			if (k == env->nblocks)
				die("internal error: template block @@%.*s@@ has no printer", (int)(bn - 4), b + 2);
			E->w->indent = (int)tabs;
			env->fns[k](E);
			E->w->indent = 0;
		} else {
			tpl_line(E, env, t, n);
		}
		t += n + (nl ? 1 : 0);
	}
}

/* ---- model facts ----------------------------------------------------------- */

/* The symbol of the time axis of the first recurrence, when that axis is one
 * plain symbol given by the caller: then NAME_step runs the model with it
 * set to 1. */
static int find_time_sym(const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (n->op != OP_RECURRENCE || n->nin < 1 || !n->in[0])
			continue;
		ir_attr *ax = ir_attr_find(n, "seq_axis");
		int axis = ax && ax->kind == ATTR_INTS && ax->n > 0 ? (int)ax->ints[0] : 0;
		const ir_shape *s = &n->in[0]->shape;
		if (axis >= s->rank)
			return -1;
		ir_dim d = s->d[axis];
		int sym = -1, count = 0;
		for (int k = 0; k < IR_MAX_SYMS; k++)
			if (d.pow[k]) {
				sym = k;
				count += d.pow[k];
			}
		/* (a count read from an input's value is the input's to say, not 1) */
		return d.k == 1 && count == 1 && ir_sym_free(g, sym) && !g->sym_value[sym] ? sym : -1;
	}
	return -1;
}

int emit_time_sym(const ir_graph *g)
{
	return find_time_sym(g);
}

const char *emit_shape_comment(emit_ctx *E, const ir_value *v)
{
	const char *s = ir_shape_str(E->A, E->g, &v->shape);
	if (v->data_dep)        /* the buffer holds the bound; the run finds the length */
		s = arena_printf(E->A, "%s, axis %d data-dependent: at most %s, the run's length from "
				 "%s_output_dims", s, v->dd_axis, ir_dim_str(E->A, E->g, v->shape.d[v->dd_axis]),
				 E->tabs->name);
	return emit_cmt(E->A, s);
}

/* ---- data-dependent lengths ------------------------------------------------ */

/* n's kernel finds a data-dependent length (not one it only keeps:
 * ir_dd_passes). */
static int has_dd(const ir_node *n)
{
	if (ir_dd_passes(n))
		return 0;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && n->out[k]->data_dep)
			return 1;
	return 0;
}

int emit_step_runs_branches(const ir_graph *g)
{
	if (find_time_sym(g) < 0)
		return 0;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_RECURRENCE && ir_guard(g->nodes[i], NULL))
			return 1;
	return 0;
}

int emit_dd_slot(const ir_graph *g, const ir_node *n)
{
	if (!has_dd(n))
		return -1;
	int slot = 0;
	for (int i = 0; i < g->nnodes && g->nodes[i] != n; i++)
		slot += has_dd(g->nodes[i]);
	return slot;
}

int emit_dd_count(const ir_graph *g)
{
	int cnt = 0;
	for (int i = 0; i < g->nnodes; i++)
		cnt += has_dd(g->nodes[i]);
	return cnt;
}

void emit_blk_forward(emit_ctx *E)
{
	if (E->tabs->rec_fns)
		fputs(E->tabs->rec_fns, E->w->f);
	if (E->tabs->backward)
		fputs(E->tabs->backward, E->w->f);
	fputs(E->tabs->forward, E->w->f);
}

/* ---- files ------------------------------------------------------------------- */

static int check_model(emit_ctx *E)
{
	ir_graph *g = E->g;
	for (int out = 0; out <= 1; out++)
		for (int k = 0; k < (out ? g->noutputs : g->ninputs); k++) {
			const ir_value *v = out ? g->outputs[k] : g->inputs[k];
			if (!ir_dtype_ctype(v->dtype))
				diag_error(E->D, "graph %s '%s' has dtype %s, which cellc cannot compile",
					   out ? "output" : "input", v->name, ir_dtype_name(v->dtype));
			else if (v->shape.rank < 0 || v->shape.rank > RT_TF_MAXRANK)
				diag_error(E->D, "graph %s '%s' has no usable shape", out ? "output" : "input",
					   v->name);
		}
	for (int k = 0; k < E->tabs->nweights; k++) {
		const ir_value *v = E->tabs->weights[k];
		if (!ir_dtype_ctype(v->dtype) || ir_shape_const_numel(&v->shape) < 0 || !v->data ||
		    v->shape.rank > RT_TF_MAXRANK)
			diag_error(E->D, "weight '%s' (%s) cannot be stored", v->name, ir_dtype_name(v->dtype));
	}
	return E->D->nerrors;
}

static int write_file(emit_ctx *E, const char *path, const char *tpl, const tpl_env *env)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		diag_error(E->D, "cannot write %s: %s", path, strerror(errno));
		return 1;
	}
	ew w = {.f = f};
	E->w = &w;
	tpl_expand(E, tpl, env);
	E->w = NULL;
	if (ferror(f) | (fclose(f) != 0)) {
		diag_error(E->D, "cannot write %s: %s", path, strerror(errno));
		return 1;
	}
	return 0;
}

/* The generated Makefile's table of cross targets (TARGET=NAME): the text of
 * templates/targets.mk, which cellc's own Makefile includes (one table). */
static void blk_targets(emit_ctx *E)
{
	const char *t = emit_template("targets.mk");
	ASSERT(t);
	fputs(t, E->w->f);
}

int emit_model(ir_graph *g, diag *D, const emit_opts *o)
{
	struct emit_tabs tabs = {.time_sym = -1};
	emit_ctx ctx = {.g = g, .A = g->A, .D = D, .o = o, .tabs = &tabs};
	emit_ctx *E = &ctx;
	ASSERT(!g->parent && o && o->name && o->outdir);
	ir_recount(g);
	tabs.name = emit_c_ident(E->A, o->name);
	emit_name_syms(E);
	emit_collect_values(E, g);
	emit_mark_sizes(g, tabs.sizes_sym);
	emit_weight_members(E);
	tabs.used_in = arena_alloc(E->A, (size_t)g->ninputs + 1);
	tabs.used_out = arena_alloc(E->A, (size_t)g->noutputs + 1);
	tabs.used_const = arena_alloc(E->A, (size_t)tabs.nconsts + 1);
	tabs.used_slot = arena_alloc(E->A, (size_t)tabs.nslots + 1);
	tabs.time_sym = find_time_sym(g);
	if (check_model(E) || emit_resolve_carry(E))
		return D->nerrors;
	if (o->no_malloc && g->nsyms && !o->max_dims) {
		diag_error(D, "--no-malloc needs the largest value of every dimension symbol (--max-dim)");
		return D->nerrors;
	}
	for (int i = 0; o->max_dims && i < g->nsyms; i++)
		if (ir_sym_free(g, i) && o->max_dims[i] < ir_sym_least(g, i)) {
			diag_error(D, "--max-dim %s=%lld is below the least value of '%s' (%lld: a slice of that "
				   "axis by a constant bound needs it), so no run could use the arena", g->syms[i],
				   (long long)o->max_dims[i], g->syms[i], (long long)ir_sym_least(g, i));
			return D->nerrors;
		}

	/* The forward function first: it decides which constants are printed. */
	ew mem = {0};
	E->w = &mem;
	tabs.forward = emit_prepare_forward(E);
	E->w = NULL;
	if (D->nerrors)
		return D->nerrors;
	if (o->no_malloc && emit_compute_ws_max(E))
		return D->nerrors;
	const char *dir = o->outdir, *n = tabs.name;
	if (!o->embed_weights) {
		/* first: an arena holds the weights file, whose size it states */
		const char *wpath = arena_printf(E->A, "%s/%s.weights", dir, n);
		if (emit_write_weights(E, wpath))
			return D->nerrors ? D->nerrors : 1;
		FILE *wf = fopen(wpath, "rb");
		if (!wf || fseek(wf, 0, SEEK_END) != 0 || (tabs.wfile_bytes = ftell(wf)) < 0) {
			diag_error(D, "cannot read back %s: %s", wpath, strerror(errno));
			if (wf)
				fclose(wf);
			return D->nerrors;
		}
		fclose(wf);
	}

	char *guard = arena_printf(E->A, "%s_H", tabs.name);
	for (char *p = guard; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	const char *keys[] = {"NAME", "VERSION", "GUARD", "NIN", "NOUT", "CELLRT", "PCDIR"};
	const char *vals[] = {
		tabs.name, CELLC_VERSION, guard, arena_printf(E->A, "%d", g->ninputs),
		arena_printf(E->A, "%d", g->noutputs), o->rtdir ? o->rtdir : "", o->pcdir ? o->pcdir : "",
	};
	const char *blocks[] = {"PROVENANCE", "DIMS", "RUN_DECLS", "STRUCT", "CONSTS", "LOAD_WEIGHTS",
				"CREATE", "CREATE_DECLS", "RESET", "WS_RESERVE", "FORWARD", "API", "TARGETS", "JS_MODEL"};
	const block_fn fns[] = {emit_blk_provenance, emit_blk_dims, emit_blk_run_decls, emit_blk_struct, emit_blk_consts,
				emit_blk_load_weights, emit_blk_create, emit_blk_create_decls, emit_blk_reset, emit_blk_ws_reserve,
				emit_blk_forward, emit_blk_api, blk_targets, emit_blk_js_model};
	tpl_env env = {keys, vals, (int)COUNTOF(keys), blocks, fns, (int)COUNTOF(blocks)};

	if (o->embed_weights)
		remove(arena_printf(E->A, "%s/%s.weights", dir, n));  /* not one of this build's files */
	if (write_file(E, arena_printf(E->A, "%s/%s.h", dir, n), "model.h.in", &env) ||
	    write_file(E, arena_printf(E->A, "%s/%s.c", dir, n), "model.c.in", &env) ||
	    write_file(E, arena_printf(E->A, "%s/Makefile", dir), "Makefile.in", &env) ||
	    write_file(E, arena_printf(E->A, "%s/CMakeLists.txt", dir), "CMakeLists.txt.in", &env) ||
	    (o->js && write_file(E, arena_printf(E->A, "%s/%s.mjs", dir, n), "model.mjs.in", &env)))
		return D->nerrors ? D->nerrors : 1;
	return D->nerrors;
}

/* ---- the training program (--train) ---------------------------------------- */

int emit_train_program(arena *A, diag *D, const emit_opts *o)
{
	const char *text = emit_template("train_main.c");
	ASSERT(text && o && o->name && o->outdir);
	const char *n = emit_c_ident(A, o->name);
	const char *path = arena_printf(A, "%s/%s_train.c", o->outdir, n);
	FILE *f = fopen(path, "w");
	int ok = f != NULL;
	if (f) {
		fprintf(f, "/* %s_train.c: the training program of model %s, generated by cellc %s from\n"
			   " * templates/train_main.c -- do not edit.  Build: make %s_train */\n"
			   "#define _POSIX_C_SOURCE 200809L\n#define CELLC_MODEL %s\n#include \"%s.h\"\n\n",
			n, n, CELLC_VERSION, n, n, n);
		ok = fputs(text, f) >= 0;
		ok &= fclose(f) == 0;
	}
	if (!ok)
		diag_error(D, "cannot write %s: %s", path, strerror(errno));
	return ok ? 0 : 1;
}
