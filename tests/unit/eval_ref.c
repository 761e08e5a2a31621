/* eval_ref.c: the reference interpreter (compiler/eval/ir_eval.c) against an
 * oracle's data.
 *
 *   eval_ref NAME MODEL DATA..
 *
 * loads MODEL through the resolving stages (compile_build(.., "loops"): the
 * graph validation takes its first baseline from), reads each DATA (an ONNX
 * backend data set, input_N.pb / output_N.pb, or a directory of
 * test_data_set_* ones) with compiler/cmd/testdata.h's readers, runs ev_graph on
 * every set and compares every output with the expected tensor
 * (|got - expected| <= 1e-5 + 1e-3 |expected|).
 *
 * The resolving stages fold what has constant inputs (a window, a
 * MelWeightMatrix, Shape: the folder's result is then all the compiled
 * graph holds) and rewrite some operators into others (CastLike into
 * Cast).  So the model also runs as loaded, before any of that, when the
 * resolved graph ran no node or lacks an operator the loaded one has: its
 * values typed from the resolved graph's of the same name (the loader
 * leaves them untyped), its inputs all from the data set.  Its outputs
 * must match too; a loaded graph that cannot be typed so, or that the
 * reference stops in (a Loop, a sequence), adds nothing, and leaves a
 * folded model not compared.  It prints one line:
 *   PASS NAME ...                  every output of every set matched
 *   FAIL NAME ...                  a value, a shape, or a run that stopped
 *                                  on a graph the reference should know
 *   NOREF NAME OP: why             an operator (or a form of one) the
 *                                  reference has no definition for
 *   SKIP NAME why                  cellc does not load the model, or the data
 *                                  do not fit it (no comparison made)
 * then "N passed, M failed"; exit status 1 after a FAIL, else 0.  The
 * expected data come from outside cellc (onnx's reference, PyTorch,
 * tests/ref_rnn.py): a wrong reference value fails here. */
#include "compile.h"
#include "ir_eval.h"
#include "testdata.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RTOL 1e-3
#define ATOL 1e-5

/* The model's inputs and outputs as loaded (the data sets' order). */
typedef struct loaded {
	int nin, nout;
	const char **in, **out;
	ir_dtype *in_narrow, *out_narrow;
} loaded;

static void at_load(const char *stage, ir_graph *g, void *ctx)
{
	loaded *l = ctx;
	if (strcmp(stage, "load"))
		return;
	l->nin = g->ninputs;
	l->nout = g->noutputs;
	l->in = arena_array(g->A, (size_t)g->ninputs + 1, sizeof *l->in);
	l->out = arena_array(g->A, (size_t)g->noutputs + 1, sizeof *l->out);
	l->in_narrow = arena_array(g->A, (size_t)g->ninputs + 1, sizeof *l->in_narrow);
	l->out_narrow = arena_array(g->A, (size_t)g->noutputs + 1, sizeof *l->out_narrow);
	for (int k = 0; k < g->ninputs; k++) {
		l->in[k] = g->inputs[k]->name;
		l->in_narrow[k] = g->inputs[k]->narrow;
	}
	for (int k = 0; k < g->noutputs; k++) {
		l->out[k] = g->outputs[k]->name;
		l->out_narrow[k] = g->outputs[k]->narrow;
	}
}

static int find(const char **names, int n, const char *name)
{
	for (int j = 0; j < n; j++)
		if (names[j] && !strcmp(names[j], name))
			return j;
	return -1;
}

/* 0 if got matches want; else 1 with what differs in msg. */
static int compare(const ev_tensor *got, const ev_tensor *want, char *msg, size_t cap)
{
	int same = got->rank == want->rank;
	for (int i = 0; same && i < got->rank; i++)
		same = got->d[i] == want->d[i];
	if (!same || got->n != want->n) {
		snprintf(msg, cap, "shape differs (%d axes, %lld elements; expected %d axes, %lld elements)", got->rank,
			 (long long)got->n, want->rank, (long long)want->n);
		return 1;
	}
	for (int64_t e = 0; e < got->n; e++) {
		double x = got->x[e], y = want->x[e];
		if ((isnan(x) && isnan(y)) || x == y)
			continue;
		if (!(fabs(x - y) <= ATOL + RTOL * fabs(y))) {
			snprintf(msg, cap, "element %lld is %.9g, expected %.9g", (long long)e, x, y);
			return 1;
		}
	}
	return 0;
}

typedef enum { R_PASS, R_FAIL, R_NOREF, R_SKIP } verdict;

#define MAX_BIND 16

/* The graph input an error asks to bind (cellc's "... comes from graph
 * input 'NAME': bind it"), or NULL. */
static const char *bind_wanted(arena *A, const char *err)
{
	const char *p = strstr(err, "graph input '");
	if (!p)
		return NULL;
	p += strlen("graph input '");
	const char *q = strchr(p, '\'');
	return q ? arena_printf(A, "%.*s", (int)(q - p), p) : NULL;
}

/* The model resolved for data set t: the inputs cellc needs constant (a
 * TopK's K, a Reshape's shape) bound to the set's values, as `cellc
 * verify` does; the others stay inputs the reference reads. */
static ir_graph *resolve(arena *A, const char *model, const loaded *l0, const td_set *t, int *nbind,
			 const char **bound, char *msg, size_t cap)
{
	for (;;) {
		onnx_binding bind[MAX_BIND];
		for (int b = 0; b < *nbind; b++) {
			int q = find(l0->in, l0->nin, bound[b]);
			bind[b] = (onnx_binding){.name = bound[b], .path = arena_printf(A, "%s/input_%d.pb", t->dir, q)};
		}
		diag D;
		diag_init(&D, model);
		D.quiet = 1;
		ir_graph *g = compile_build(A, &D, model, *nbind, bind, NULL, "loops");
		if (g)
			return g;
		const char *want = bind_wanted(A, D.last);
		if (!want || find(l0->in, l0->nin, want) < 0 || find(bound, *nbind, want) >= 0 || *nbind == MAX_BIND) {
			snprintf(msg, cap, "cellc does not load it: %s", D.last[0] ? D.last : "(no message)");
			return NULL;
		}
		bound[(*nbind)++] = want;
	}
}

/* Runs g on data set t (its inputs by name among the model's l0) and
 * compares the outputs; *compared counts them, *ran the nodes run (0: SKIP,
 * the graph was folded; -1: it did not run). */
static verdict run_set(ir_graph *g, const loaded *l0, ir_graph *scratch, td_set *t, int *compared, int64_t *ran,
		       char *msg, size_t cap)
{
	arena runA;
	arena_init(&runA);
	ev_run r = {.A = &runA};
	verdict vd = R_PASS;
	for (int y = 0; y < IR_MAX_SYMS; y++)
		r.sym[y] = -1;
	ev_tensor **in = arena_array(&runA, (size_t)g->ninputs + 1, sizeof *in);
	for (int k = 0; k < g->ninputs && vd == R_PASS; k++) {
		int q = find(l0->in, l0->nin, g->inputs[k]->name);
		if (q < 0 || g->inputs[k]->seq != IR_TENSOR) {
			snprintf(msg, cap, "input '%s' of the resolved graph is not a tensor input of the model",
				 g->inputs[k]->name);
			vd = R_SKIP;
			break;
		}
		in[k] = ev_of_value(&r, scratch, td_widen(scratch, t->in[q], l0->in_narrow[q]));
		const ir_shape *sh = &g->inputs[k]->shape;
		for (int a = 0; in[k] && a < sh->rank && a < in[k]->rank; a++) {
			int y = ir_dim_one_sym(sh->d[a]);
			if (y >= 0 && ir_sym_free(g, y))
				r.sym[y] = in[k]->d[a];
		}
	}
	if (vd == R_PASS && ev_graph(&r, g, in, g->ninputs)) {
		snprintf(msg, cap, "%s: %s (node '%s', set %s)", r.at ? ir_op_name(r.at->op) : "-", r.why,
			 r.at && r.at->name ? r.at->name : "?", t->dir);
		vd = r.noref ? R_NOREF : R_FAIL;
	}
	*ran = vd == R_PASS ? r.nodes : -1;
	if (vd == R_PASS && !r.nodes) {
		snprintf(msg, cap, "folded at compile time: no node left for the reference to run");
		vd = R_SKIP;
	}
	for (int k = 0; vd == R_PASS && k < g->noutputs; k++) {
		int q = find(l0->out, l0->nout, g->outputs[k]->name);
		q = q < 0 ? k : q;
		if (q >= t->nout || !t->out[q])
			continue;
		if (g->outputs[k]->seq != IR_TENSOR) {
			snprintf(msg, cap, "output '%s' is a sequence or optional (compared by cellc verify)",
				 g->outputs[k]->name);
			vd = R_SKIP;
			break;
		}
		ev_tensor *got = ev_get(&r, g->outputs[k]);
		ev_tensor *want = ev_of_value(&r, scratch, td_widen(scratch, t->out[q], l0->out_narrow[q]));
		char why[300];
		if (!got) {
			snprintf(msg, cap, "output '%s' was not computed (set %s)", g->outputs[k]->name, t->dir);
			vd = R_FAIL;
		} else if (!want) {
			snprintf(msg, cap, "output %d of set %s is unreadable", q, t->dir);
			vd = R_SKIP;
		} else if (compare(got, want, why, sizeof why)) {
			snprintf(msg, cap, "output '%s' of set %s: %s", g->outputs[k]->name, t->dir, why);
			vd = R_FAIL;
		} else {
			(*compared)++;
		}
	}
	arena_free(&runA);
	return vd;
}

/* 1 when root graph lg (as loaded) has an operator that neither res nor
 * its bodies have (folded away or rewritten by the resolving stages). */
static int lost_an_op(const ir_graph *lg, const ir_graph *res)
{
	unsigned char has[OP_COUNT] = {0};
	const ir_graph *stack[64];
	int sp = 0;
	stack[sp++] = res;
	while (sp) {
		const ir_graph *b = stack[--sp];
		for (int i = 0; i < b->nnodes; i++) {
			has[b->nodes[i]->op] = 1;
			if (b->nodes[i]->body && sp < 64)
				stack[sp++] = b->nodes[i]->body;
		}
	}
	for (int i = 0; i < lg->nnodes; i++)
		if (!has[lg->nodes[i]->op])
			return 1;
	return 0;
}

/* Types every node output of lg (as loaded) that the loader left without a
 * dtype or shape from res's value of the same name (a shape only when its
 * sizes are constants: symbols are numbered per graph); 0, or 1 with the
 * value that res does not have. */
static int type_loaded(ir_graph *lg, ir_graph *res, char *msg, size_t cap)
{
	for (int i = 0; i < lg->nnodes; i++) {
		const ir_node *n = lg->nodes[i];
		for (int k = 0; k < n->nout; k++) {
			ir_value *v = n->out[k];
			if (!v || (v->dtype != DT_UNDEF && v->shape.rank >= 0))
				continue;
			const ir_value *w = v->name ? ir_find_value(res, v->name) : NULL;
			if (!w || w->seq != IR_TENSOR || w->dtype == DT_UNDEF) {
				snprintf(msg, cap, "value '%s' of %s has no type", v->name ? v->name : "?",
					 ir_op_name(n->op));
				return 1;
			}
			v->dtype = v->dtype == DT_UNDEF ? w->dtype : v->dtype;
			v->narrow = v->narrow ? v->narrow : w->narrow;
			int sized = w->shape.rank >= 0;
			for (int a = 0; a < w->shape.rank; a++)
				sized &= ir_dim_is_const(w->shape.d[a]);
			if (v->shape.rank < 0 && sized)
				v->shape = w->shape;
		}
	}
	return 0;
}

static verdict run_case(arena *A, const char *model, int ndata, char **data, char *msg, size_t cap)
{
	diag D;
	diag_init(&D, model);
	D.quiet = 1;
	loaded l0 = {0};
	compile_job j = {.model = model, .stop_after = "load", .after = at_load, .ctx = &l0};
	if (compile_run(A, &D, &j) || !j.g) {
		snprintf(msg, cap, "cellc does not load it: %s", D.last[0] ? D.last : "(no message)");
		return R_SKIP;
	}
	td_list L = {0};
	for (int i = 0; i < ndata; i++)
		if (td_collect(A, "eval_ref", data[i], &L)) {
			snprintf(msg, cap, "cannot read the data sets of %s", data[i]);
			return R_SKIP;
		}
	ir_graph *scratch = ir_graph_new(A, NULL, "data");
	const char *bound[MAX_BIND];
	int nbind = 0, compared = 0, as_loaded = 0;
	verdict vd = L.n ? R_PASS : R_SKIP;
	if (!L.n)
		snprintf(msg, cap, "no data sets");
	for (int s = 0; s < L.n && vd == R_PASS; s++) {
		td_set *t = &L.sets[s];
		if (t->nin != l0.nin || t->nout > l0.nout || td_read(scratch, &D, t)) {
			snprintf(msg, cap, "data set %s: %d inputs, %d outputs for a model of %d and %d %s", t->dir,
				 t->nin, t->nout, l0.nin, l0.nout, D.last);
			vd = R_SKIP;
			break;
		}
		ir_graph *g = resolve(A, model, &l0, t, &nbind, bound, msg, cap);
		int64_t ran = -1;
		vd = g ? run_set(g, &l0, scratch, t, &compared, &ran, msg, cap) : R_SKIP;
		int folded = vd == R_SKIP && ran == 0;
		if (!folded && !(vd == R_PASS && lost_an_op(j.g, g)))
			continue;
		/* folded, or an operator rewritten: the model as loaded too */
		char why[1000];
		int64_t lran = -1;
		verdict lv = type_loaded(j.g, g, why, sizeof why) ? R_SKIP :
			     run_set(j.g, &l0, scratch, t, &as_loaded, &lran, why, sizeof why);
		if (lv == R_FAIL) {
			snprintf(msg, cap, "as loaded: %s", why);
			vd = R_FAIL;
		} else if (folded && lv == R_PASS) {
			vd = R_PASS;
		} else if (folded) {
			snprintf(msg, cap, "folded at compile time: no node left for the reference to run; as loaded: "
				 "%s", why);
		}
	}
	free(L.sets);
	if (vd == R_PASS)
		snprintf(msg, cap, "%d outputs in %d data sets%s%s", compared + as_loaded, L.n,
			 as_loaded ? (compared ? " (as resolved and as loaded)" : " (as loaded: folded at compile time)")
				   : "", nbind ? " (inputs that fix shapes bound to the data)" : "");
	return vd == R_PASS && !(compared + as_loaded) ? R_SKIP : vd;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: eval_ref NAME MODEL DATA..\n");
		return 2;
	}
	arena A;
	arena_init(&A);
	char msg[1400];
	verdict v = run_case(&A, argv[2], argc - 3, argv + 3, msg, sizeof msg);
	static const char *const word[] = {"PASS", "FAIL", "NOREF", "SKIP"};
	printf("%s %s %s\n", word[v], argv[1], msg);
	printf("%d passed, %d failed\n", v == R_PASS, v == R_FAIL);
	arena_free(&A);
	return v == R_FAIL;
}
