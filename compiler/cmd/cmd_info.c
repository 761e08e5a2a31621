/* cmd_info.c: `cellc info MODEL`: what a model contains and what cellc makes
 * of it.
 *
 * Prints the producer, opset, dimension symbols, inputs and outputs with
 * dtypes and symbolic shapes, node counts by op as loaded, the recurrent
 * operators (cell kind, hidden size, direction, time and batch dims, layout),
 * the recurrences they were lowered to, the weights that will go into
 * NAME.weights, the fallbacks (compile.h: a traced loop left unrolled, a
 * time axis left fixed) and whether the emitted code offers the streaming
 * step (--werror-fallback: exit status 2 when there is a fallback).
 * Whatever stage fails, what was learned before it is still printed; the
 * exit status is then 2 with the reasons on stderr.
 *
 * `cellc info --unsupported MODEL` instead loads and compiles the whole
 * model without stopping at the first refused node (diag's collect mode)
 * and lists every operator with nodes that cellc refuses: how many, and
 * the first reason.
 */
#include "cmd.h"
#include "emit.h"
#include "recognize.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void print_usage(FILE *f)
{
	fputs("usage: cellc info MODEL [--bind NAME=FILE.pb|NUMBER]... [--dim SYM=N|OTHER]... [--unsupported]\n"
	      "                  [--werror-fallback]\n"
	      "\n"
	      "Describes MODEL (.onnx or .cell): producer, opset, inputs and outputs,\n"
	      "dimension symbols, operators, recurrences, weights, streaming support.\n"
	      "  --bind NAME=FILE.pb   compile graph input NAME as the constant stored in FILE.pb\n"
	      "  --bind NAME=NUMBER    the same for a scalar input given on the command line\n"
	      "  --dim SYM=N           fix dimension symbol SYM to the size N (as for compile)\n"
	      "  --dim SYM=OTHER       make symbol SYM the same as symbol OTHER\n"
	      "  --unsupported         list every operator whose nodes cellc refuses, with the\n"
	      "                        number of nodes and the first reason (all of them, not\n"
	      "                        only the first errors)\n"
	      "  --werror-fallback     a fallback (a traced loop left unrolled, a time axis left\n"
	      "                        fixed: listed under \"fallbacks\") is an error\n"
	      "Exit status: 0 ok (--unsupported: nothing refused), 2 model refused, a fallback\n"
	      "with --werror-fallback, or command line rejected.\n", f);
}

static const char *tname(arena *A, const ir_value *v)
{
	const char *t = arena_printf(A, "%s%s", ir_dtype_name(v->dtype), ir_shape_str(A, v->graph, &v->shape));
	if (v->data_dep && v->dd_axis >= 0 && v->dd_axis < v->shape.rank)
		t = arena_printf(A, "%s  (axis %d data-dependent, at most %s)", t, v->dd_axis,
				 ir_dim_str(A, v->graph, v->shape.d[v->dd_axis]));
	return t;
}

static void print_values(arena *A, const char *title, int n, ir_value *const *v)
{
	printf("%s (%d):\n", title, n);
	for (int i = 0; i < n; i++)
		printf("  %-24s %s\n", v[i] ? v[i]->name : "_", v[i] ? tname(A, v[i]) : "");
}

/* The ONNX recurrent operators as loaded and shaped: one line each. */
static void print_rnn_ops(arena *A, const ir_graph *g)
{
	int n = 0;
	for (int i = 0; i < g->nnodes; i++)
		n += ir_ops[g->nodes[i]->op].kind == OPK_RNN;
	if (!n)
		return;
	printf("recurrent operators (%d):\n", n);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *nd = g->nodes[i];
		if (ir_ops[nd->op].kind != OPK_RNN)
			continue;
		int64_t layout = ir_attr_int(nd, "layout", 0);
		const ir_value *x = nd->nin > 0 ? nd->in[0] : NULL;
		const char *T = "?", *B = "?";
		if (x && x->shape.rank == 3) {
			T = ir_dim_str(A, g, x->shape.d[layout ? 1 : 0]);
			B = ir_dim_str(A, g, x->shape.d[layout ? 0 : 1]);
		}
		printf("  %s '%s' hidden %" PRId64 " %s, T=%s, B=%s, layout %" PRId64 "%s\n",
		       ir_op_name(nd->op), nd->name ? nd->name : "", ir_attr_int(nd, "hidden_size", 0),
		       ir_attr_string(nd, "direction", "forward"), T, B, layout,
		       nd->nin > 4 && nd->in[4] ? ", sequence_lens" : "");
	}
}

/* Time dim of a recurrence: its first sequence input on its time axis. */
static ir_dim rec_time(const ir_node *n)
{
	const ir_attr *ax = ir_attr_find(n, "seq_axis");
	int axis = ax && ax->kind == ATTR_INTS && ax->n > 0 ? (int)ax->ints[0] : 0;
	if (ir_attr_int(n, "n_seq", 0) > 0 && n->nin > 0 && n->in[0] && axis >= 0 &&
	    axis < n->in[0]->shape.rank)
		return n->in[0]->shape.d[axis];
	return ir_dim_const(IR_DIM_UNKNOWN);
}

/* The input whose value is the first recurrence's step count (a Loop's
 * trip count given as an input: size_inputs.c), or NULL. */
static const char *first_rec_value(const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_RECURRENCE) {
			int s = ir_dim_one_sym(rec_time(g->nodes[i]));
			return s >= 0 ? g->sym_value[s] : NULL;
		}
	return NULL;
}

static int has_cond(const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (ir_rec_cond_state(g->nodes[i]) >= 0)
			return 1;
	return 0;
}

static void print_recurrences(arena *A, const ir_graph *g, const char *name)
{
	int n = 0;
	for (int i = 0; i < g->nnodes; i++)
		n += g->nodes[i]->op == OP_RECURRENCE;
	printf("recurrences (%d):\n", n);
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *nd = g->nodes[i];
		if (nd->op != OP_RECURRENCE)
			continue;
		ir_dim T = rec_time(nd);
		printf("  '%s' %s, T=%s, %" PRId64 " sequence input(s), %" PRId64 " state(s), "
		       "%" PRId64 " stacked output(s), %d body nodes%s%s%s\n",
		       nd->name ? nd->name : "", ir_attr_int(nd, "reverse", 0) ? "reverse" : "forward",
		       ir_dim_str(A, g, T), ir_attr_int(nd, "n_seq", 0), ir_attr_int(nd, "n_state", 0),
		       ir_attr_int(nd, "n_out", 0), nd->body ? nd->body->nnodes : 0,
		       ir_attr_int(nd, "has_lens", 0) ? ", sequence_lens" : "",
		       nd->origin ? ", from " : "", nd->origin ? nd->origin : "");
		if (ir_rec_cond_state(nd) >= 0)
			printf("    stops when its condition is false (at most %s steps); its stacked outputs have the "
			       "steps run (%s_output_dims)\n", ir_dim_str(A, g, T), name);
		const char *rd = recognize_describe(A, g, nd);   /* recovered loops (recognize.h) */
		if (rd)
			printf("    %s\n", rd);
	}
}

/* The Ifs decided at run time (lower_seq.c: a select per output) and how
 * many nodes of each branch run only when it is taken (pass_branch.c). */
static void print_branches(const ir_graph *g)
{
	const ir_value *seen[64];
	int ns = 0;
	for (int i = 0; i < g->nnodes && ns < 64; i++) {
		const ir_node *w = g->nodes[i];
		if (w->op != OP_WHERE || !ir_attr_int(w, "if_select", 0))
			continue;
		int known = 0;
		for (int k = 0; k < ns; k++)
			known |= seen[k] == w->in[0];
		if (!known)
			seen[ns++] = w->in[0];
	}
	if (!ns)
		return;
	printf("run-time branches (%d):\n", ns);
	for (int k = 0; k < ns; k++) {
		const char *ifn = "?";
		const ir_node *sel = NULL;
		int cnt[2] = {0, 0};
		for (int i = 0; i < g->nnodes; i++) {
			const ir_node *n = g->nodes[i];
			int when;
			if (n->op == OP_WHERE && ir_attr_int(n, "if_select", 0) && n->in[0] == seen[k] && !sel) {
				sel = n;
				ifn = n->origin ? n->origin : n->name ? n->name : "?";
			}
			if (ir_guard(n, &when) == seen[k])
				cnt[when]++;
		}
		int outer_when;
		const ir_value *outer = sel ? ir_guard(sel, &outer_when) : NULL;
		if (outer && !(cnt[0] + cnt[1]))
			printf("  If '%s' on '%s': inside the %s branch of the If on '%s', which runs both of its branches "
			       "when it is taken; a select per output\n", ifn, seen[k]->name, outer_when ? "then" : "else",
			       outer->name);
		else if (cnt[0] + cnt[1])
			printf("  If '%s' on '%s': a C branch; %d node(s) of the then branch and %d of the else branch run "
			       "only when it is taken\n", ifn, seen[k]->name, cnt[1], cnt[0]);
		else
			printf("  If '%s' on '%s': both branches computed, a select per output (%s)\n", ifn,
			       seen[k]->name, g->train ? "a --train build runs both for the backward pass"
						   : "no node is read by one branch alone");
	}
}

/* Every fallback (compile.h): what compiles correctly, but with code that
 * grows with T or without a streaming step. */
static void print_fallbacks(arena *A, const ir_graph *g)
{
	int n = compile_nfallbacks(g);
	printf("fallbacks (%d)%s\n", n, n ? ":" : "");
	for (int k = 0; k < n; k++)
		printf("  %s\n", compile_fallback_text(A, g, k));
}

/* Weights the emitted code loads: VAL_WEIGHT values some node still uses
 * (lowering splits the ONNX W/R/B into new ones and leaves the old unused). */
typedef struct wcount {
	arena *A;
	const ir_value **seen;  /* [n] distinct weights found so far */
	int n, cap;
	uint64_t bytes;
} wcount;

static void count_weights(wcount *w, const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *nd = g->nodes[i];
		for (int j = 0; j < nd->nin; j++) {
			const ir_value *v = nd->in[j];
			int dup = 0;
			for (int k = 0; v && k < w->n && !dup; k++)
				dup = w->seen[k] == v;
			if (!v || v->kind != VAL_WEIGHT || dup)
				continue;
			if (w->n == w->cap) {
				int cap = 2 * w->cap + 16;
				w->seen = arena_grow(w->A, (void *)w->seen, (size_t)w->n, (size_t)cap,
						     sizeof *w->seen);
				w->cap = cap;
			}
			w->seen[w->n++] = v;
			int64_t ne = ir_shape_const_numel(&v->shape);
			if (ne > 0)
				w->bytes += (uint64_t)ne * ir_dtype_size(v->dtype);
		}
		if (nd->body)
			count_weights(w, nd->body);
	}
}

/* --unsupported: every refused operator, counted; 0 when there is none. */
static int list_unsupported(const char *model, int nbind, const onnx_binding *bind)
{
	arena A;
	arena_init(&A);
	diag D;
	diag_init(&D, model);
	D.collect = 1;
	compile_job j = {.model = model, .nbind = nbind, .bind = bind};
	compile_run(&A, &D, &j);
	ir_graph *g = j.g;
	int nodes = 0, ops = 0;
	for (int i = 0; i < D.nkinds; i++)
		if (*D.kinds[i].op) {
			nodes += D.kinds[i].n;
			ops++;
		}
	int rc = g && !D.nerrors ? 0 : 2;
	if (!ops && rc == 0)
		printf("%s: no operator is refused\n", model);
	else if (ops)
		printf("%s: %d node%s of %d operator%s refused%s:\n", model, nodes, nodes == 1 ? "" : "s", ops,
		       ops == 1 ? "" : "s", D.nkinds == DIAG_KINDS ? " (at least)" : "");
	int done[DIAG_KINDS] = {0};
	for (int k = 0; k < ops; k++) {
		int best = -1;
		for (int i = 0; i < D.nkinds; i++)
			if (!done[i] && *D.kinds[i].op && (best < 0 || D.kinds[i].n > D.kinds[best].n))
				best = i;
		done[best] = 1;
		printf("  %-24s %6d  %s\n", D.kinds[best].op, D.kinds[best].n, D.kinds[best].first);
	}
	if (rc)
		fprintf(stderr, "cellc info: %s would not be compiled\n", model);
	arena_free(&A);
	return rc;
}

/* The pipeline's hook: what each stage lets us tell, printed as soon as
 * it is known, so that a failure later still leaves it on the screen. */
typedef struct info_ctx {
	arena *A;
	const char *model;
	int nfixed;             /* sizes fixed to a constant when the interface was printed */
	const char **fixed;     /* [nfixed] their names */
} info_ctx;

/* The sizes infer fixed to a constant that a later pass made symbols again
 * (pass_reroll: a traced x.unbind() over a dynamic axis rolled back into a
 * loop that runs any length), and the inputs as they are now. */
static void print_freed(arena *A, const ir_graph *g, const info_ctx *c)
{
	int any = 0;
	for (int k = 0; k < c->nfixed; k++)
		for (int i = 0; i < g->nsyms; i++)
			if (ir_sym_free(g, i) && !strcmp(g->syms[i], c->fixed[k])) {
				printf("%s%s is a dimension symbol again: the traced loop over the x.unbind() that "
				       "fixed it is rolled, and runs any length\n", any ? "           " : "sizes now: ",
				       c->fixed[k]);
				any = 1;
			}
	if (any)
		print_values(A, "inputs now", g->ninputs, g->inputs);
}

/* Outputs whose inferred shape the file declares otherwise (a size where
 * inference has another or a symbol, another rank): the file's shapes are
 * hints, the inferred ones are used. */
static void print_declared(arena *A, const ir_graph *g)
{
	int first = 1;
	for (int i = 0; i < g->ndeclared; i++) {
		const struct ir_declared *d = &g->declared[i];
		const ir_value *o = NULL;
		for (int k = 0; k < g->noutputs && !o; k++)
			if (!strcmp(g->outputs[k]->name, d->name))
				o = g->outputs[k];
		if (!o || o->seq != IR_TENSOR || o->shape.rank < 0)
			continue;
		int differ = o->shape.rank != d->rank;
		const char *text = "";
		for (int a = 0; a < d->rank; a++) {
			ir_dim x = a < o->shape.rank ? o->shape.d[a] : ir_dim_const(0);
			if (d->dim[a] >= 0)     /* a name is an unknown size, not a disagreement */
				differ |= !ir_dim_is_const(x) || x.k != d->dim[a];
			text = arena_printf(A, "%s%s%s", text, a ? ", " : "", d->dim[a] >= 0 ?
					    arena_printf(A, "%lld", (long long)d->dim[a]) : d->dim[a] == -1 ? d->param[a] : "?");
		}
		if (!differ)
			continue;
		printf("%s%s is %s%s; the file declares [%s] (a hint: the inferred shape is used)\n",
		       first ? "declared:  " : "           ", o->name, ir_dtype_name(o->dtype),
		       ir_shape_str(A, g, &o->shape), text);
		first = 0;
	}
}

static void print_stage(const char *stage, ir_graph *g, void *ctx)
{
	const info_ctx *c = ctx;
	arena *A = c->A;
	if (!strcmp(stage, "load")) {
		printf("model:     %s\n", c->model);
		printf("producer:  %s\n", g->producer && *g->producer ? g->producer : "(not given)");
		printf("opset:     %d\n", g->opset);
		printf("nodes:     %d (", g->nnodes);
		int opcount[OP_COUNT] = {0}, first = 1;
		for (int i = 0; i < g->nnodes; i++)
			opcount[g->nodes[i]->op]++;
		for (int op = 0; op < OP_COUNT; op++)
			if (opcount[op]) {
				printf("%s%s %d", first ? "" : ", ", ir_op_name((ir_op)op), opcount[op]);
				first = 0;
			}
		printf(")\n");
	} else if (!strcmp(stage, "infer")) {
		/* shapes are known: the interface */
		printf("symbols:   ");
		for (int i = 0; i < g->nsyms; i++)
			if (ir_sym_free(g, i) && ir_sym_least(g, i) > 1)
				printf("%s%s (at least %lld)", i ? ", " : "", g->syms[i], (long long)ir_sym_least(g, i));
			else if (ir_sym_free(g, i) && g->sym_value[i])
				printf("%s%s (the value of input '%s')", i ? ", " : "", g->syms[i], g->sym_value[i]);
			else if (ir_sym_free(g, i))
				printf("%s%s", i ? ", " : "", g->syms[i]);
			else
				printf("%s%s (= %s%s%s)", i ? ", " : "", g->syms[i], ir_sym_def_str(A, g, i),
				       g->sym_pin[i] ? ", must be " : g->symdef[i].exact ? ", which must divide exactly" : "",
				       g->sym_pin[i] ? arena_printf(A, "%lld", (long long)g->sym_pin[i]) : "");
		printf("%s\n", g->nsyms ? "" : "(none: every shape is fixed)");
		/* sizes an operator's contract made one (ir_sym_link) */
		for (int i = 0; i < g->nlinks; i++) {
			const ir_sym_link *l = &g->links[i];
			int pinned = 0;
			for (int k = 0; k < g->nsyms; k++)
				pinned |= !strcmp(g->syms[k], l->name);
			if (l->at_least)
				printf("%s%s must be at least %lld: required by node '%s' (%s); checked once per call\n",
				       i ? "           " : "sizes:     ", l->name, (long long)l->value, l->node, l->why);
			else if (l->into)
				printf("%s%s is %s: node '%s' (%s)\n", i ? "           " : "sizes:     ", l->name, l->into,
				       l->node, l->why);
			else if (pinned)
				printf("%s%s must be %lld: required by node '%s' (%s); checked once per call\n",
				       i ? "           " : "sizes:     ", l->name, (long long)l->value, l->node, l->why);
			else
				printf("%s%s must be %lld: fixed by node '%s' (%s); warning: the model runs for that "
				       "size only\n", i ? "           " : "sizes:     ", l->name, (long long)l->value,
				       l->node, l->why);
		}
		print_values(A, "inputs", g->ninputs, g->inputs);
		print_values(A, "outputs", g->noutputs, g->outputs);
		print_declared(A, g);
		print_rnn_ops(A, g);
		info_ctx *w = ctx;
		w->fixed = arena_array(A, (size_t)g->nlinks + 1, sizeof *w->fixed);
		for (int i = 0; i < g->nlinks; i++)
			if (!g->links[i].at_least && !g->links[i].into)
				w->fixed[w->nfixed++] = g->links[i].name;
	}
}

int cmd_info(int argc, char **argv)
{
	const char *model = NULL, *val;
	onnx_binding bind[CMD_MAX_BIND];
	int nbind = 0, unsupported = 0, werror_fallback = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--unsupported")) {
			unsupported = 1;
		} else if (!strcmp(a, "--werror-fallback")) {
			werror_fallback = 1;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--bind", &val))) {
			if (r < 0)
				return 2;
			if (!cmd_add_bind("info", val, bind, &nbind))
				return 2;
		} else if ((r = cmd_opt_value(argc, argv, &i, "--dim", &val))) {
			if (r < 0 || !cmd_add_dim_bind("info", val, bind, &nbind))
				return 2;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "cellc info: unknown option '%s'\n", a);
			print_usage(stderr);
			return 2;
		} else if (model) {
			fprintf(stderr, "cellc info: more than one MODEL ('%s', '%s')\n", model, a);
			return 2;
		} else {
			model = a;
		}
	}
	if (!model) {
		fputs("cellc info: no MODEL given\n", stderr);
		print_usage(stderr);
		return 2;
	}
	if (unsupported)
		return list_unsupported(model, nbind, bind);

	arena A;
	arena_init(&A);
	diag D;
	diag_init(&D, model);
	info_ctx ic = {&A, model, 0, NULL};
	compile_job j = {.model = model, .nbind = nbind, .bind = bind, .after = print_stage, .ctx = &ic};
	int rc = compile_run(&A, &D, &j) ? 2 : 0;
	ir_graph *g = j.g;
	if (j.failed && compile_resolving(j.failed)) {
		printf("symbols:   (inference failed; shapes as declared)\n");
		print_values(&A, "inputs", g->ninputs, g->inputs);
	}
	if (rc == 0) {
		print_freed(&A, g, &ic);
		print_recurrences(&A, g, cmd_default_name(&A, model));
		print_branches(g);
		print_fallbacks(&A, g);
		wcount w = {.A = &A};
		count_weights(&w, g);
		printf("weights:   %d tensors, %" PRIu64 " bytes\n", w.n, w.bytes);
		int ts = emit_time_sym(g);     /* the symbol NAME_step sets to 1 */
		if (ts >= 0)
			printf("streaming: yes (%s_step advances one step of '%s'%s)\n",
			       cmd_default_name(&A, model), g->syms[ts],
			       has_cond(g) ? "; once a loop's condition has ended it, no more steps run" : "");
		else if (first_rec_value(g))
			printf("streaming: no (the recurrence runs as many steps as input '%s' says)\n",
			       first_rec_value(g));
		else
			printf("streaming: no (no recurrence over a time axis that is one symbol of the inputs' "
			       "shapes)\n");
	}
	if (rc == 0 && compile_fallbacks(&A, g, &D, werror_fallback ? FALLBACK_ERROR : FALLBACK_QUIET)) {
		diag_finish(&D);
		fprintf(stderr, "cellc info: %s falls back (--werror-fallback)\n", model);
		arena_free(&A);
		return 2;
	}
	diag_finish(&D);
	if (rc)
		fprintf(stderr, "cellc info: %s could not be %s\n", model,
			!strcmp(j.failed, "load") ? "loaded" : compile_resolving(j.failed) ? "shape-inferred" :
			"compiled");
	arena_free(&A);
	return rc;
}
