/* compile.c: the whole pipeline in one place.
 *
 * compile_stages[] lists every stage of a compilation, from reading the
 * model to writing C:
 *
 *   load -> [infer -> seq -> loops]* -> onestep -> canon -> gates -> reroll -> cells -> lower
 *   -> select -> merge -> hoist -> split -> grad -> fuse -> precision
 *   -> schedule -> plan -> emit
 *
 * The bracketed stages resolve what inference alone cannot see through
 * (ONNX Loop/Scan, sequences, optionals, If; passes.h): they run as rounds
 * until a round changes nothing, then their finish functions run (in
 * reverse order).  compile_run drives it for every command (compile,
 * verify, dump, info): after each stage that succeeded it runs ir_verify
 * when checking is on (CELLC_VERIFY; inside the rounds the structure only,
 * since shapes after a pending node are not known yet), then the caller's
 * hook (what `info` prints), and stops after the stage the caller names
 * (`dump --after`, `verify`'s look at the model as loaded; a resolving
 * stage: once the rounds are over).  The emit stage is the caller's: it
 * knows what to write (compile: the model, its testbench and training
 * program; verify: the model its driver links).  No other file runs passes.
 * With CELLC_VALIDATE set, the graph after every stage also runs in the
 * reference interpreter and a pass that changed its outputs is an error
 * (validate.c: translation validation).
 */
#include "compile.h"
#include "onnx.h"
#include "train.h"
#include "txt.h"
#include "util.h"
#include "validate.h"

#include <string.h>

const compile_stage compile_stages[] = {
	{"load", STAGE_LOAD, .run = NULL},
	{"infer", STAGE_RESOLVE, .round = pass_infer, .finish = infer_finish},
	{"seq", STAGE_RESOLVE, .round = pass_seq, .finish = seq_finish, .claims = seq_claims},
	{"loops", STAGE_RESOLVE, .round = pass_loops, .claims = loops_claims},
	{"onestep", STAGE_PASS, .run = pass_onestep},
	{"canon", STAGE_PASS, .run = pass_canon},
	{"gates", STAGE_PASS, .run = pass_gates},
	{"reroll", STAGE_PASS, .run = pass_reroll},
	{"cells", STAGE_PASS, .run = pass_lower_cell},
	{"lower", STAGE_PASS, .run = pass_lower_rnn},
	{"select", STAGE_PASS, .run = pass_select},
	{"merge", STAGE_PASS, .run = pass_merge},
	{"hoist", STAGE_PASS, .run = pass_hoist},
	{"split", STAGE_PASS, .run = pass_split},
	{"grad", STAGE_PASS, .run = pass_grad},
	{"fuse", STAGE_PASS, .run = pass_fuse},
	{"precision", STAGE_PASS, .run = pass_precision},
	{"branch", STAGE_PASS, .run = pass_branch},
	{"schedule", STAGE_PASS, .run = pass_schedule},
	{"plan", STAGE_PASS, .run = pass_plan},
	{"emit", STAGE_EMIT, .run = NULL},
};
const int compile_nstages = (int)COUNTOF(compile_stages);

/* The resolving stages: compile_stages[first, end). */
static void resolving(int *first, int *end)
{
	int i = 0;
	while (compile_stages[i].kind != STAGE_RESOLVE)
		i++;
	*first = i;
	while (i < compile_nstages && compile_stages[i].kind == STAGE_RESOLVE)
		i++;
	*end = i;
}

int resolve_claims(const ir_node *n)
{
	int first, end;
	resolving(&first, &end);
	for (int i = first; i < end; i++)
		if (compile_stages[i].claims && compile_stages[i].claims(n))
			return 1;
	return 0;
}

/* Rounds of the resolving stages on g until one changes nothing; the
 * number of errors (*failed: the stage that reported the first).  The
 * rounds go on after an error without the stage that reported it (which
 * would report it again), as far as what does not depend on it allows: a
 * model with two independent mistakes (a shape error before a Loop, and
 * the Loop's run-time condition) has both reported. */
static int resolve_rounds(ir_graph *g, diag *D, const char **failed)
{
	enum { MAX_ROUNDS = 100000 };   /* each round rewrites a node, so a model has fewer */
	int first, end, errs0 = D->nerrors;
	unsigned failing = 0;   /* the stages that reported an error (bit i - first) */
	resolving(&first, &end);
	for (int changed = 1, round = 0; changed; round++) {
		if (round == MAX_ROUNDS) {
			diag_error(D, "graph '%s': Loop, sequence and If rewrites did not settle after %d rounds "
				      "(a cellc bug: please report the model)", g->name, (int)MAX_ROUNDS);
			*failed = compile_stages[first].name;
			return 1;
		}
		changed = 0;
		for (int i = first; i < end; i++) {
			if (failing & 1u << (i - first))
				continue;
			int ch = 0, e0 = D->nerrors, errs = compile_stages[i].round(g, D, &ch);
			if (errs || D->nerrors != e0) {
				failing |= 1u << (i - first);
				if (!*failed)
					*failed = compile_stages[i].name;
			}
			changed |= ch;
			/* a body reads its enclosing graphs; a graph with errors
			 * is left as the failed node left it */
			if (compile_checking() && !g->parent && !*failed)
				ir_verify_structure(g, compile_stages[i].name);
		}
	}
	return *failed ? (D->nerrors - errs0 ? D->nerrors - errs0 : 1) : 0;
}

int resolve_body(ir_graph *body, diag *D)
{
	const char *failed = NULL;
	return resolve_rounds(body, D, &failed);
}

/* The resolving stages on the root graph: the rounds, then each stage's
 * finish, the last stage's first. */
static int resolve_graph(ir_graph *g, diag *D, const char **failed)
{
	int first, end, errs = resolve_rounds(g, D, failed);
	resolving(&first, &end);
	for (int i = end - 1; i >= first && !errs; i--) {
		if (compile_stages[i].finish)
			errs = compile_stages[i].finish(g, D);
		if (errs || D->nerrors)
			*failed = compile_stages[i].name;
	}
	return errs ? errs : D->nerrors;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* The front end the file's suffix picks; NULL after diagnostics. */
static ir_graph *load(arena *A, diag *D, const compile_job *j)
{
	A->file = j->model;
	ir_names_reset();
	ir_graph *g;
	if (has_suffix(j->model, ".cell")) {
		if (j->nbind)
			diag_error(D, "--bind and --dim apply to ONNX models; a .cell model has no such inputs "
				      "(its symbols are sized at run time)");
		g = j->nbind ? NULL : txt_load(A, D, j->model);
	} else {
		g = onnx_load_bound(A, D, j->model, j->nbind, j->bind);
	}
	if (!g || D->nerrors || size_inputs(g, D))
		return NULL;
	for (int i = 0; j->po && j->po->train && i < g->nsyms; i++)
		if (g->sym_value[i])
			diag_error(D, "--train: input '%s' is a size the model reads at run time (a Loop's trip count "
				      "or a Range's limit), and a training build takes its sizes from the data set's "
				      "samples; compile it for one value: --bind %s=N", g->sym_value[i], g->sym_value[i]);
	if (D->nerrors)
		return NULL;
	if (j->po && j->po->train && !g->train)
		train_collect_params(g, j->po->topts, D);
	else if (j->po && j->po->train && j->po->topts->nfreeze)
		diag_error(D, "the model is a training build already: its weights say which are held fixed "
			      "('frozen'), not --freeze");
	else if (j->po && j->po->train && (g->train->loss != j->po->topts->loss ||
					   !j->po->topts->loss_output != !g->train->loss_output ||
					   (g->train->loss_output &&
					    strcmp(g->train->loss_output, j->po->topts->loss_output) != 0)))
		diag_error(D, "the model is a training build already (its 'train' line: loss %s%s%s); "
			      "--train asks for another loss", train_loss_name(g->train->loss),
			   g->train->loss_output ? ", output " : "", g->train->loss_output ? g->train->loss_output : "");
	return D->nerrors ? NULL : g;
}

int compile_checking(void)
{
	const char *e = getenv("CELLC_VERIFY");
	return e && *e && strcmp(e, "0") != 0;
}

/* ---- fallbacks ---- */

/* Recurrences whose time axis pass_reroll left fixed (attribute time_note)
 * where the model could run other lengths (a generated sequence's steps are
 * the model's own: no fallback): the k-th of them in g's order, or NULL. */
static const ir_node *fixed_time(const ir_graph *g, int k)
{
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i]->op == OP_RECURRENCE && ir_attr_string(g->nodes[i], "time_note", NULL) &&
		    !ir_attr_int(g->nodes[i], "generated", 0) && k-- == 0)
			return g->nodes[i];
	return NULL;
}

int compile_nfallbacks(const ir_graph *g)
{
	int n = g->nunrolled;
	while (fixed_time(g, n - g->nunrolled))
		n++;
	return n;
}

const char *compile_fallback_text(arena *A, const ir_graph *g, int k)
{
	ASSERT(k >= 0 && k < compile_nfallbacks(g));
	if (k >= g->nunrolled) {
		const ir_node *rec = fixed_time(g, k - g->nunrolled);
		return arena_printf(A, "recurrence '%s'%s%s runs a fixed number of steps (no streaming step, no "
				    "other length): %s", rec->name ? rec->name : "?", rec->origin ? ", from " : "",
				    rec->origin ? rec->origin : "", ir_attr_string(rec, "time_note", ""));
	}
	const ir_unrolled *u = &g->unrolled[k];
	if (u->why == WHY_ONNX_LOOP)
		return arena_printf(A, "Loop '%s' of %d iterations stays unrolled (the emitted code grows with the "
				    "trip count: %d nodes, %d per iteration): %s", u->seq, u->steps, u->nodes,
				    u->per_step, ir_unrolled_why_text(u->why));
	const char *s = arena_printf(A, "a traced loop of %d steps over '%s' stays unrolled (the emitted code "
				     "grows with T: %d nodes, %d per step): %s", u->steps, u->seq, u->nodes,
				     u->per_step, ir_unrolled_why_text(u->why));
	if (u->step >= 0 && u->node)
		s = arena_printf(A, "%s; steps %d and %d differ first at node '%s' (%s) of step %d, which has "
				 "no counterpart in step %d", s, u->step < u->vs ? u->step : u->vs,
				 u->step < u->vs ? u->vs : u->step, u->node,
				 u->op >= 0 && u->op < OP_COUNT ? ir_op_name((ir_op)u->op) : "?", u->step, u->vs);
	return s;
}

int compile_fallbacks(arena *A, const ir_graph *g, diag *D, compile_fallback_mode mode)
{
	int n = mode == FALLBACK_QUIET ? 0 : compile_nfallbacks(g);
	for (int k = 0; k < n; k++) {
		const char *s = compile_fallback_text(A, g, k);
		if (mode == FALLBACK_ERROR)
			diag_error(D, "%s (--werror-fallback)", s);
		else
			diag_warn(D, "%s", s);
	}
	return mode == FALLBACK_ERROR ? n : 0;
}


void compile_fixed_sizes(arena *A, const ir_graph *g, diag *D)
{
	for (int i = 0; i < g->nlinks; i++) {
		const ir_sym_link *l = &g->links[i];
		int pinned = -1;
		for (int k = 0; k < g->nsyms; k++)
			if (!strcmp(g->syms[k], l->name))
				pinned = k;
		if (l->into)
			continue;
		if (l->at_least)
			diag_warn(D, "size '%s' must be at least %lld: required by node '%s' (%s); the generated code "
				  "checks it once per call", l->name, (long long)l->value, l->node, l->why);
		else if (pinned >= 0)
			diag_warn(D, "size '%s' = %s must be %lld: required by node '%s' (%s); the generated code checks "
				  "it once per call", l->name, ir_sym_def_str(A, g, pinned), (long long)l->value, l->node,
				  l->why);
		else
			diag_warn(D, "size '%s' must be %lld: fixed by node '%s' (%s); the generated code accepts "
				  "that size only and its NAME_bind_dims checks the inputs for it", l->name,
				  (long long)l->value, l->node, l->why);
	}
}

static int run_stages(arena *A, diag *D, compile_job *j, validate *V);

/* What the sizes of a compiled graph are held to: 2 for each size fixed or
 * pinned to a constant, 1 for each least value an If's branch needed (a
 * smaller number: the model runs for more sizes). */
static int restriction(const ir_graph *g)
{
	int r = 0;
	for (int i = 0; i < g->nlinks; i++)
		r += g->links[i].at_least ? 1 : g->links[i].into ? 0 : 2;
	return r;
}

/* The options of the Ifs decided by a size (lower_seq.c: size_if) after a
 * first try g (errs: its errors): every choice of them, depth first from
 * the last If that has another, each tried in a quiet compilation through
 * the passes.  Of those that compile, the one whose sizes are held to
 * least (restriction), the earliest of equals: 1 with take[0, *n) its
 * options; 0 when none compiles. */
static int search_choices(arena *A, const compile_job *j, const ir_graph *g, int errs, signed char *take, int *n)
{
	enum { MAX_TRIES = 64 };
	signed char cur[IR_MAX_CHOICES], nopt[IR_MAX_CHOICES];
	int k = g->nchoices, best = errs ? -1 : restriction(g);
	memcpy(cur, g->choice_take, (size_t)k);
	memcpy(nopt, g->choice_nopt, (size_t)k);
	memcpy(take, cur, (size_t)k);
	*n = k;
	for (int tries = 0; tries < MAX_TRIES; tries++) {
		int i = k - 1;
		while (i >= 0 && cur[i] + 1 >= nopt[i])
			i--;
		if (i < 0)
			break;
		cur[i]++;
		k = i + 1;
		diag Q;
		diag_init(&Q, j->model);
		Q.quiet = 1;
		compile_job q = {.model = j->model, .nbind = j->nbind, .bind = j->bind, .po = j->po,
				 .choice_take = cur, .nchoice = k};
		int e = run_stages(A, &Q, &q, NULL);
		if (!q.g)
			break;
		k = q.g->nchoices;
		memcpy(cur, q.g->choice_take, (size_t)k);
		memcpy(nopt, q.g->choice_nopt, (size_t)k);
		if (!e && !Q.nerrors && (best < 0 || restriction(q.g) < best)) {
			best = restriction(q.g);
			memcpy(take, cur, (size_t)k);
			*n = k;
		}
	}
	return best >= 0;
}

/* With CELLC_VALIDATE, every pass is checked against the reference
 * interpreter (validate.c): a pass that changes what the graph computes is
 * an error naming it.
 *
 * An If decided by a size with more than one option (lower_seq.c) makes
 * the compilation a search: from that If on the first try holds its
 * diagnostics, calls no hook and writes nothing; search_choices tries the
 * other choices.  The compilation then runs again with the choice found,
 * skipping what the first try printed and reported before it held; when
 * no choice compiles, the first try's errors are printed, with a note. */
int compile_run(arena *A, diag *D, compile_job *j)
{
	diag D0 = *D;
	validate *V = validate_new();
	j->choice_hold = 1;
	j->nafter = 0;
	int errs = run_stages(A, D, j, V);
	validate_end(V, j->model);
	if (!D->hold)
		return errs;
	signed char take[IR_MAX_CHOICES];
	int n;
	if (!search_choices(A, j, j->g, errs, take, &n)) {
		diag_flush(D);
		diag_note(D, "cellc compiled this model once for each choice of branch of its If nodes decided by "
			  "a run-time size (a select of both branches, and each branch with the condition it needs "
			  "recorded), and none compiled; the errors above are the first choice's");
		return errs;
	}
	int skip = D->hold_from, after = j->nafter;
	diag_drop(D);
	*D = D0;
	D->skip = skip;
	j->choice_take = take;
	j->nchoice = n;
	j->choice_hold = 0;
	j->skip_after = after;
	j->nafter = 0;
	V = validate_new();
	errs = run_stages(A, D, j, V);
	validate_end(V, j->model);
	j->choice_take = NULL;
	return errs;
}

static int run_stages(arena *A, diag *D, compile_job *j, validate *V)
{
	static const pass_opts none;
	const pass_opts *po = j->po ? j->po : &none;
	j->g = NULL;
	j->failed = NULL;
	for (int i = 0; i < compile_nstages; i++) {
		const compile_stage *s = &compile_stages[i];
		int errs = 0, last = i;
		if (s->kind == STAGE_LOAD) {
			j->g = load(A, D, j);
			errs = !j->g;
			if (j->g) {
				j->g->nchoice_fixed = j->nchoice;
				if (j->nchoice)
					memcpy(j->g->choice_take, j->choice_take, (size_t)j->nchoice);
				j->g->choice_hold = j->choice_hold;
			}
		} else if (s->kind == STAGE_RESOLVE) {
			while (last + 1 < compile_nstages && compile_stages[last + 1].kind == STAGE_RESOLVE)
				last++;
			errs = resolve_graph(j->g, D, &j->failed);
		} else if (s->kind == STAGE_PASS) {
			errs = s->run(j->g, D, po);
		} else if (D->hold) {
			break;          /* a try (compile_run): nothing is written */
		} else if (j->emit) {
			/* every pass has run: what compiles but falls back is reported
			 * now, before anything is written */
			compile_fixed_sizes(A, j->g, D);
			errs = compile_fallbacks(A, j->g, D, j->fallbacks);
			if (!errs)
				errs = j->emit(j->g, D, j->ctx);
		} else {
			break;          /* no emitter: the pipeline ends with the passes */
		}
		if (errs || D->nerrors) {
			if (!j->failed)
				j->failed = s->name;
			return D->nerrors ? D->nerrors : errs;
		}
		/* the size expressions a stage built on the way and no longer uses */
		if (s->kind != STAGE_EMIT)
			ir_sym_gc(j->g);
		if (V && s->kind != STAGE_EMIT) {
			validate_stage(V, j->g, compile_stages[last].name, po, D);
			if (D->nerrors) {
				j->failed = compile_stages[last].name;
				return D->nerrors;
			}
		}
		/* the resolving stages are done together: each is checked,
		 * reported and can be stopped after as one that ran last */
		for (int k = i; k <= last; k++) {
			const char *name = compile_stages[k].name;
			if (compile_stages[k].kind != STAGE_EMIT && compile_checking())
				ir_verify(j->g, name);
			if (j->after && !D->hold && j->nafter++ >= j->skip_after)
				j->after(name, j->g, j->ctx);
			if (j->stop_after && strcmp(j->stop_after, name) == 0)
				return 0;
		}
		i = last;
	}
	return 0;
}

ir_graph *compile_build(arena *A, diag *D, const char *model, int nbind, const onnx_binding *bind,
			const pass_opts *po, const char *stop_after)
{
	compile_job j = {.model = model, .nbind = nbind, .bind = bind, .po = po, .stop_after = stop_after};
	return compile_run(A, D, &j) ? NULL : j.g;
}

int compile_resolving(const char *name)
{
	for (int i = 0; i < compile_nstages; i++)
		if (compile_stages[i].kind == STAGE_RESOLVE && strcmp(compile_stages[i].name, name) == 0)
			return 1;
	return 0;
}

int compile_dumpable(const char *name)
{
	for (int i = 0; i < compile_nstages; i++)
		if (compile_stages[i].kind != STAGE_EMIT && strcmp(compile_stages[i].name, name) == 0)
			return 1;
	return 0;
}
