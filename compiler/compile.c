/* compile.c: the whole pipeline in one place.
 *
 * compile_stages[] lists every stage of a compilation, from reading the
 * model to writing C:
 *
 *   load -> infer (with the rewrites loops, seq) -> canon -> reroll -> cells
 *   -> lower -> hoist -> split -> grad -> fuse -> schedule -> plan -> emit
 *
 * compile_run drives it for every command (compile, verify, dump, info):
 * after each stage that succeeded it runs ir_verify when checking is on
 * (CELLC_VERIFY), then the caller's hook (what `info` prints), and stops
 * after the stage the caller names (`dump --after`, `verify`'s look at the
 * model as loaded).  The emit stage is the caller's: it knows what to write
 * (compile: the model, its testbench and training program; verify: the
 * model its driver links).  No other file runs passes.
 */
#include "compile.h"
#include "onnx.h"
#include "train.h"
#include "txt.h"
#include "util.h"

#include <string.h>

const compile_stage compile_stages[] = {
	{"load", STAGE_LOAD, NULL},
	{"infer", STAGE_PASS, pass_infer},
	{"canon", STAGE_PASS, pass_canon},
	{"reroll", STAGE_PASS, pass_reroll},
	{"cells", STAGE_PASS, pass_lower_cell},
	{"lower", STAGE_PASS, pass_lower_rnn},
	{"hoist", STAGE_PASS, pass_hoist},
	{"split", STAGE_PASS, pass_split},
	{"grad", STAGE_PASS, pass_grad},
	{"fuse", STAGE_PASS, pass_fuse},
	{"schedule", STAGE_PASS, pass_schedule},
	{"plan", STAGE_PASS, pass_plan},
	{"emit", STAGE_EMIT, NULL},
};
const int compile_nstages = (int)COUNTOF(compile_stages);

/* The rewrites "infer" applies to each node it reaches, in this order
 * (passes.h, infer_resolver).  They are not passes of their own: a Loop's
 * trip count, a sequence position or an If condition is usually shape
 * arithmetic that only inference folds, and the shapes of every node after
 * the Loop come from its expansion, so inference and these rewrites
 * alternate node by node, as often as the model chains them. */
const infer_resolver infer_resolvers[] = {
	{"loops", onnx_loop_resolve, NULL},            /* Loop/Scan -> RECURRENCE (onnx_loop.c) */
	{"seq", onnx_seq_resolve, onnx_seq_finish},    /* sequences, optionals, If (onnx_seq.c) */
};
const int infer_nresolvers = (int)COUNTOF(infer_resolvers);

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
	if (!g || D->nerrors)
		return NULL;
	if (j->po && j->po->train && !g->train)
		train_collect_params(g, j->po->topts);
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

int compile_run(arena *A, diag *D, compile_job *j)
{
	static const pass_opts none;
	const pass_opts *po = j->po ? j->po : &none;
	j->g = NULL;
	j->failed = NULL;
	for (int i = 0; i < compile_nstages; i++) {
		const compile_stage *s = &compile_stages[i];
		int errs = 0;
		if (s->kind == STAGE_LOAD) {
			j->g = load(A, D, j);
			errs = !j->g;
		} else if (s->kind == STAGE_PASS) {
			errs = s->run(j->g, D, po);
		} else if (j->emit) {
			errs = j->emit(j->g, D, j->ctx);
		} else {
			break;          /* no emitter: the pipeline ends with the passes */
		}
		if (errs || D->nerrors) {
			j->failed = s->name;
			return D->nerrors ? D->nerrors : errs;
		}
		if (s->kind != STAGE_EMIT && compile_checking())
			ir_verify(j->g, s->name);
		if (j->after)
			j->after(s->name, j->g, j->ctx);
		if (j->stop_after && strcmp(j->stop_after, s->name) == 0)
			break;
	}
	return 0;
}

ir_graph *compile_build(arena *A, diag *D, const char *model, int nbind, const onnx_binding *bind,
			const pass_opts *po, const char *stop_after)
{
	compile_job j = {.model = model, .nbind = nbind, .bind = bind, .po = po, .stop_after = stop_after};
	return compile_run(A, D, &j) ? NULL : j.g;
}

int compile_dumpable(const char *name)
{
	for (int i = 0; i < compile_nstages; i++)
		if (compile_stages[i].kind != STAGE_EMIT && strcmp(compile_stages[i].name, name) == 0)
			return 1;
	return 0;
}
