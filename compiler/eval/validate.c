/* validate.c: translation validation (CELLC_VALIDATE=1).
 *
 * compile_run calls validate_stage after every stage.  The first graph the
 * reference interpreter (ir_eval.c) can run, on random inputs of the
 * graph's own shapes with every size symbol given a value, is the
 * baseline; after each later pass the graph runs again on the same inputs
 * and every output the baseline had is compared (|got - ref| <= 1e-4 +
 * 1e-4 |ref|: float rounding, not a changed computation).  An output whose
 * length the data decide (NonZero, Unique, Compress, NonMaxSuppression:
 * ir_value.data_dep, sized in the IR for a bound) is the reference's exact
 * result at its run-time length, compared whole: a pass that changed the
 * length changed the shape, a difference too.  A difference is
 * an error naming the pass and the first value that changed, with the node
 * that makes it (values are the same IR objects before and after a pass,
 * which rewrites the graph in place).  A graph the interpreter cannot run
 * (an operator it does not know) is not validated: the pass is listed as
 * such, never counted as checked, and the next graph that runs becomes the
 * baseline again.  A training build's gradients (after `grad`) are
 * checked against central differences of its loss, in double, at a few
 * elements of every grad.* output; the graph with its gradients is then the
 * baseline of the later passes.  Precision changes (--weights bf16/int8) end
 * the validation; what was and was not
 * checked goes to stderr with CELLC_VALIDATE=2, or to the file
 * CELLC_VALIDATE_LOG (a line per compilation), so that a test suite can
 * count it.  CELLC_VALIDATE_FAULT=PASS changes a weight after PASS: the
 * test that shows the validation catches a changed computation. */
#include "validate.h"
#include "ir_eval.h"
#include "passes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct validate {
	int level;              /* CELLC_VALIDATE: 1 errors, 2 also the summary */
	int done;               /* stopped for good (precision, training) */
	int have_base;          /* a baseline run exists (runs[cur ^ 1]) */
	arena runA[2];
	ev_run run[2];
	int cur;                /* the run of the graph after this stage */
	arena inA;              /* the inputs and symbol values, for every run */
	int nin;
	const char **in_name;
	ev_tensor **in;
	/* the free size symbols given values, by name: a unification or the
	 * dropping of unused symbols (ir_sym_gc) renumbers the table */
	const char *sym_name[IR_MAX_SYMS];
	int64_t sym[IR_MAX_SYMS];
	int nsyms;
	char checked[400], skipped[800];
	const char *reached;    /* the last stage seen */
	uint64_t rng;
};

int validate_level(void)
{
	const char *e = getenv("CELLC_VALIDATE");
	return e && *e && strcmp(e, "0") != 0 ? atoi(e) > 1 ? 2 : 1 : 0;
}

validate *validate_new(void)
{
	int level = validate_level();
	if (!level)
		return NULL;
	validate *V = calloc(1, sizeof *V);
	if (!V)
		return NULL;
	V->level = level;
	arena_init(&V->runA[0]);
	arena_init(&V->runA[1]);
	arena_init(&V->inA);
	V->rng = 0x9e3779b97f4a7c15ULL;
	return V;
}

static double uniform(validate *V)
{
	V->rng ^= V->rng << 13;
	V->rng ^= V->rng >> 7;
	V->rng ^= V->rng << 17;
	return (double)(V->rng >> 11) / 9007199254740992.0;
}

/* The values V gave g's free symbols, by name, into val[] (-1: none yet). */
static void sym_values(const validate *V, const ir_graph *g, int64_t *val)
{
	for (int i = 0; i < IR_MAX_SYMS; i++)
		val[i] = -1;
	for (int i = 0; i < g->nsyms; i++)
		for (int j = 0; ir_sym_free(g, i) && j < V->nsyms; j++)
			if (!strcmp(V->sym_name[j], g->syms[i]))
				val[i] = V->sym[j];
}

/* From now on g's free symbols have the values val[]. */
static void sym_remember(validate *V, const ir_graph *g, const int64_t *val)
{
	V->nsyms = 0;
	for (int i = 0; i < g->nsyms; i++)
		if (ir_sym_free(g, i)) {
			V->sym_name[V->nsyms] = g->syms[i];
			V->sym[V->nsyms++] = val[i];
		}
}

static void append(char *buf, size_t cap, const char *fmt, const char *a, const char *b)
{
	size_t n = strlen(buf);
	if (n + 2 < cap)
		snprintf(buf + n, cap - n, fmt, a, b ? b : "");
}

/* The inputs of the first graph run: values for its symbols (2 + i, at
 * least their least value) and random tensors of its inputs' shapes
 * (floats uniform in [-1, 1], integers 1, booleans 0 or 1).  The sizes
 * are large enough for the steps a traced loop reads (10 and up). */
static int make_inputs(validate *V, ir_graph *g, ev_run *r)
{
	for (int i = 0; i < g->nsyms; i++) {
		int64_t least = ir_sym_least(g, i);
		r->sym[i] = least > 10 + i ? least : 10 + i;
	}
	sym_remember(V, g, r->sym);
	V->nin = g->ninputs;
	V->in_name = arena_array(&V->inA, (size_t)g->ninputs + 1, sizeof *V->in_name);
	V->in = arena_array(&V->inA, (size_t)g->ninputs + 1, sizeof *V->in);
	for (int k = 0; k < g->ninputs; k++) {
		const ir_value *v = g->inputs[k];
		ev_run tmp = *r;
		tmp.A = &V->inA;
		ev_tensor *t = v->seq == IR_TENSOR ? ev_of_value(&tmp, g, v) : NULL;
		if (!t) {
			snprintf(r->why, sizeof r->why, "input '%s' has no concrete shape", v->name);
			return 1;
		}
		for (int64_t e = 0; e < t->n; e++)
			t->x[e] = v->dtype == DT_F32 || v->dtype == DT_F64 ? (double)(float)(2 * uniform(V) - 1)
				  : v->dtype == DT_BOOL ? (double)(uniform(V) < 0.5) : 1.0;
		V->in_name[k] = v->name;
		V->in[k] = t;
	}
	return 0;
}

/* Bytes a reference run of g takes at most: every value in double, a
 * recurrence's body values once per step (a run keeps them all). */
static double run_bytes(const validate *V, const ir_graph *g, double steps)
{
	ev_run probe = {0};
	sym_values(V, g, probe.sym);
	double total = 0;
	for (int i = 0; i < g->nvalues; i++) {
		const ir_value *v = g->values[i];
		double n = 1;
		for (int a = 0; a < v->shape.rank; a++) {
			int64_t d = ev_dim(&probe, g, v->shape.d[a]);
			n *= d > 0 ? (double)d : 1;
		}
		total += 8 * n * steps + 64;
	}
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		if (!n->body)
			continue;
		ir_attr *sa = ir_attr_find(n, "seq_axis");
		int64_t T = sa && sa->n && n->nin > 0 && n->in[0] && n->in[0]->shape.rank > sa->ints[0]
				    ? ev_dim(&probe, g, n->in[0]->shape.d[sa->ints[0]]) : 1;
		total += run_bytes(V, n->body, steps * (double)(T > 0 ? T : 1));
	}
	return total;
}

/* Runs g (its nodes before upto) on the inputs; 0, or 1 with r->why. */
static int run_graph_upto(validate *V, ir_graph *g, ev_run *r, int upto)
{
	sym_values(V, g, r->sym);
	ev_tensor **in = arena_array(r->A, (size_t)g->ninputs + 1, sizeof *in);
	for (int k = 0; k < g->ninputs; k++) {
		for (int j = 0; j < V->nin && !in[k]; j++)
			if (!strcmp(V->in_name[j], g->inputs[k]->name))
				in[k] = V->in[j];
		if (!in[k]) {
			snprintf(r->why, sizeof r->why, "the graph has a new input '%s'", g->inputs[k]->name);
			return 1;
		}
	}
	/* a symbol a pass made (a traced loop's length, re-rolled) takes its
	 * value from the input axis it names; the inputs' sizes must hold */
	for (int k = 0; k < g->ninputs; k++) {
		const ir_shape *s = &g->inputs[k]->shape;
		for (int a = 0; a < s->rank && a < in[k]->rank; a++) {
			int y = ir_dim_one_sym(s->d[a]);
			if (y >= 0 && ir_sym_free(g, y) && r->sym[y] < 0)
				r->sym[y] = in[k]->d[a];
		}
	}
	for (int i = 0; i < g->nsyms; i++)
		if (ir_sym_free(g, i) && r->sym[i] < 0) {
			snprintf(r->why, sizeof r->why, "the pass made a size symbol '%s' that no input's axis gives",
				 g->syms[i]);
			return 1;
		}
	/* from now on those symbols have these values (a training build's
	 * target is sized by them) */
	sym_remember(V, g, r->sym);
	for (int k = 0; k < g->ninputs; k++) {
		const ir_shape *s = &g->inputs[k]->shape;
		int ok = s->rank == in[k]->rank;
		for (int a = 0; ok && a < s->rank; a++)
			ok = ev_dim(r, g, s->d[a]) == in[k]->d[a];
		if (!ok) {
			snprintf(r->why, sizeof r->why, "input '%s' changed shape", g->inputs[k]->name);
			return 1;
		}
	}
	return ev_graph_upto(r, g, in, g->ninputs, upto);
}

static int run_graph(validate *V, ir_graph *g, ev_run *r) { return run_graph_upto(V, g, r, g->nnodes); }

static int close_enough(const ev_tensor *a, const ev_tensor *b, double *err)
{
	*err = 0;
	if (a->n != b->n || a->rank != b->rank)
		return 0;
	for (int i = 0; i < a->rank; i++)
		if (a->d[i] != b->d[i])
			return 0;
	for (int64_t e = 0; e < a->n; e++) {
		double x = a->x[e], y = b->x[e];
		if (isnan(x) && isnan(y))
			continue;
		double d = fabs(x - y);
		if (!(d <= 1e-4 + 1e-4 * fabs(y))) {
			*err = isnan(d) ? INFINITY : d;
			return 0;
		}
	}
	return 1;
}

/* The first value of g (bodies' values through their recurrence's outputs)
 * computed in both runs whose values differ: its producer. */
static const ir_node *first_changed(const ev_run *now, const ev_run *before, const ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++) {
		const ir_node *n = g->nodes[i];
		for (int k = 0; k < n->nout; k++) {
			const ev_tensor *a = n->out[k] ? ev_get(now, n->out[k]) : NULL;
			const ev_tensor *b = n->out[k] ? ev_get(before, n->out[k]) : NULL;
			double err;
			if (a && b && !close_enough(a, b, &err))
				return n;
		}
	}
	return NULL;
}

/* A new input of a training build (target, mask): class labels in [0,
 * classes) for an int64 target, floats otherwise, a mask of 0s and 1s. */
static int add_input(validate *V, ir_graph *g, const ir_value *v, ev_run *r)
{
	ev_run tmp = *r;
	tmp.A = &V->inA;
	ev_tensor *t = ev_of_value(&tmp, g, v);
	int64_t classes = g->train ? g->train->nclasses : 0;
	if (!t || (v->dtype == DT_I64 && classes <= 0))
		return 1;
	for (int64_t e = 0; e < t->n; e++)
		t->x[e] = v->dtype == DT_I64 ? (double)((int64_t)(uniform(V) * (double)classes) % classes)
			  : !strcmp(v->name, "mask") ? (double)(e == 0 || uniform(V) < 0.7)
			  : (double)(float)(2 * uniform(V) - 1);
	const char **nm = arena_array(&V->inA, (size_t)V->nin + 2, sizeof *nm);
	ev_tensor **in = arena_array(&V->inA, (size_t)V->nin + 2, sizeof *in);
	memcpy(nm, V->in_name, (size_t)V->nin * sizeof *nm);
	memcpy(in, V->in, (size_t)V->nin * sizeof *in);
	nm[V->nin] = v->name;
	in[V->nin] = t;
	V->in_name = nm;
	V->in = in;
	V->nin++;
	return 0;
}

/* The loss of g (its nodes before the backward part) with v's value moved
 * to xv, in double. */
static int loss_with(validate *V, ir_graph *g, int upto, const ir_value *loss, const ir_value *v,
		     ev_tensor *xv, double *L, char *why, size_t cap)
{
	arena A;
	arena_init(&A);
	ev_run s = {.A = &A};
	int err = 0;
	ev_put(&s, v, xv);
	if (run_graph_upto(V, g, &s, upto)) {
		snprintf(why, cap, "%s", s.why);
		err = 1;
	} else {
		const ev_tensor *l = ev_get(&s, loss);
		err = !l;
		*L = l ? l->x[0] : 0;
		if (!l)
			snprintf(why, cap, "the loss was not computed");
	}
	arena_free(&A);
	return err;
}

/* Values for every input of g that V has none for (the training build's
 * labels, mask); 1 after noting the check skipped. */
static int add_train_inputs(validate *V, ir_graph *g)
{
	ev_run probe = {.A = &V->inA};
	sym_values(V, g, probe.sym);
	for (int k = 0; k < g->ninputs; k++) {
		int known = 0;
		for (int j = 0; j < V->nin; j++)
			known |= !strcmp(V->in_name[j], g->inputs[k]->name);
		if (!known && add_input(V, g, g->inputs[k], &probe)) {
			append(V->skipped, sizeof V->skipped, "grad%s (no values for input '%s'); ", "", g->inputs[k]->name);
			V->have_base = 0;
			return 1;
		}
	}
	return 0;
}

/* Gradient output go (grad.NAME, its value in run r) at `per` elements (its
 * largest, then evenly spread) against central differences of the loss:
 * 0 if they agree (*checked counts them), 1 at the first that does not
 * (element *at: *a from the gradient pass, *fd numerically), -1 if it
 * cannot be checked (why says why). */
static int check_gradient(validate *V, ir_graph *g, ev_run *r, const ir_value *go, int upto, const ir_value *loss,
			  int per, char *why, size_t cap, int *checked, int64_t *at, double *a, double *fd)
{
	const char *on = go->name;
	const ir_value *v = ir_find_value(g, on + 5);
	const ev_tensor *an = ev_get(r, go), *x = v ? ev_get(r, v) : NULL;
	if (!v || !an || !x || an->n != x->n) {
		snprintf(why, cap, "output %s has no value to compare with", on);
		return -1;
	}
	int64_t big = 0;
	for (int64_t e = 1; e < an->n; e++)
		big = fabs(an->x[e]) > fabs(an->x[big]) ? e : big;
	for (int j = 0; j < per && j < an->n; j++) {
		int64_t e = j == 0 ? big : (int64_t)j * an->n / per;
		ev_tensor *xv = ev_new(r, x->dt, x->rank, x->d);
		memcpy(xv->x, x->x, (size_t)x->n * sizeof *xv->x);
		double h = 1e-6 * fmax(1.0, fabs(x->x[e])), up, dn;
		xv->x[e] = x->x[e] + h;
		int failed = loss_with(V, g, upto, loss, v, xv, &up, why, cap);
		xv->x[e] = x->x[e] - h;
		failed = failed || loss_with(V, g, upto, loss, v, xv, &dn, why, cap);
		if (failed)
			return -1;
		*fd = (up - dn) / (2 * h);
		*a = an->x[e];
		*at = e;
		if (!(fabs(*fd - *a) <= 1e-5 + 1e-4 * fmax(fabs(*a), fabs(*fd))))
			return 1;
		(*checked)++;
	}
	return 0;
}

/* The graph with its gradients run again as the baseline of the passes
 * after grad. */
static void train_baseline(validate *V, ir_graph *g)
{
	int c = V->cur;
	arena_free(&V->runA[c]);
	arena_init(&V->runA[c]);
	ev_run *b = &V->run[c];
	memset(b, 0, sizeof *b);
	b->A = &V->runA[c];
	if (run_graph(V, g, b)) {
		V->have_base = 0;
		return;
	}
	V->have_base = 1;
	V->cur ^= 1;
}

/* A training build after `grad`: every grad.<P> and grad.<X> output checked
 * at a few elements (its largest, then evenly spread) against central
 * differences of the loss in double; then the graph is the baseline of the
 * passes after it. */
static void check_train(validate *V, ir_graph *g, diag *D)
{
	if (add_train_inputs(V, g))
		return;
	int upto = g->nnodes;
	for (int i = 0; i < g->nnodes; i++)
		if (g->nodes[i] == g->train->bwd_start) {
			upto = i;
			break;
		}
	const ir_value *loss = NULL;
	int ngrad = 0;
	for (int k = 0; k < g->noutputs; k++) {
		loss = !strcmp(g->outputs[k]->name, "loss") ? g->outputs[k] : loss;
		ngrad += !strncmp(g->outputs[k]->name, "grad.", 5);
	}
	arena A;
	arena_init(&A);
	ev_run r = {.A = &A};
	char why[400] = "";
	ev_exact(1);
	int failed = !loss || run_graph(V, g, &r);
	if (failed)
		snprintf(why, sizeof why, "%s", loss ? r.why : "no loss output");
	/* at most 6 elements per gradient, and about 3e8 values computed by
	 * the central differences in all (a run computes run_bytes / 8) */
	double per_run = run_bytes(V, g, 1) / 8, runs = 3e8 / (per_run > 1 ? per_run : 1);
	int per = ngrad ? (int)fmin(6.0, fmin(200.0, runs) / (2.0 * ngrad)) : 0;
	if (ngrad && per < 1) {
		ev_exact(0);
		arena_free(&A);
		append(V->skipped, sizeof V->skipped, "grad%s (central differences of %s would take too long); ",
		       "", "this model's loss");
		V->have_base = 0;
		return;
	}
	int checked = 0;
	for (int k = 0; k < g->noutputs && !failed; k++) {
		const char *on = g->outputs[k]->name;
		if (strncmp(on, "grad.", 5) != 0)
			continue;
		int64_t e;
		double a, fd;
		int res = check_gradient(V, g, &r, g->outputs[k], upto, loss, per, why, sizeof why, &checked, &e, &a, &fd);
		failed = res < 0;
		if (res > 0) {
			ev_exact(0);
			arena_free(&A);
			diag_error(D, "translation validation: the training build's %s differs from central "
				   "differences of the loss at element %lld: %.9g from the gradient pass, %.9g "
				   "numerically", on, (long long)e, a, fd);
			V->done = 1;
			return;
		}
	}
	ev_exact(0);
	arena_free(&A);
	if (failed) {
		append(V->skipped, sizeof V->skipped, "grad: %s; ", why, NULL);
		V->have_base = 0;
		return;
	}
	char note[80];
	snprintf(note, sizeof note, "grad(%d central differences)", checked);
	append(V->checked, sizeof V->checked, "%s%s ", note, NULL);
	/* the graph with its gradients is the baseline of the later passes */
	train_baseline(V, g);
}

/* CELLC_VALIDATE_FAULT=PASS, for the validation's own test: after PASS,
 * the first element of the first f32 weight or constant a node of the root
 * graph reads grows by 1, as a miscompile would change it; the validation
 * must report that pass. */
static void inject_fault(ir_graph *g, const char *stage)
{
	const char *f = getenv("CELLC_VALIDATE_FAULT");
	if (!f || strcmp(f, stage) != 0)
		return;
	for (int i = g->nnodes - 1; i >= 0; i--)
		for (int k = 0; k < g->nodes[i]->nin; k++) {
			ir_value *v = g->nodes[i]->in[k];
			if (v && v->data && v->dtype == DT_F32 && (v->kind == VAL_WEIGHT || v->kind == VAL_CONST) &&
			    ir_shape_const_numel(&v->shape) > 0) {
				for (int64_t e = 0; e < ir_shape_const_numel(&v->shape); e++)
					((float *)v->data)[e] += 0.5f * (float)(e % 3);
				return;
			}
		}
}

void validate_stage(validate *V, ir_graph *g, const char *stage, const pass_opts *po, diag *D)
{
	if (V && g)
		V->reached = stage;
	if (!V || V->done || !g || !strcmp(stage, "load"))
		return;         /* (as loaded, the types and shapes are not inferred yet) */
	if (!strcmp(stage, "precision") && po && po->weights != WEIGHTS_F32) {
		append(V->skipped, sizeof V->skipped, "%s%s (the weights' precision changes by design); ",
		       stage, NULL);
		V->done = 1;
		return;
	}
	if (!strcmp(stage, "grad") && g->train) {
		check_train(V, g, D);
		return;
	}
	inject_fault(g, stage);
	int c = V->cur;
	arena_free(&V->runA[c]);
	arena_init(&V->runA[c]);
	ev_run *r = &V->run[c];
	memset(r, 0, sizeof *r);
	r->A = &V->runA[c];
	int failed = !V->nin && !V->have_base && make_inputs(V, g, r);
	/* the reference runs inside the compilation's memory budget
	 * (--max-memory): a graph it cannot run there is not validated */
	double need = failed ? 0 : run_bytes(V, g, 1);
	if (!failed && need > (double)arena_budget / 4) {
		snprintf(r->why, sizeof r->why, "a reference run needs about %.0f MiB, more than a quarter of the "
			 "memory budget (--max-memory)", need / 1048576);
		failed = 1;
	}
	failed = failed || run_graph(V, g, r);
	if (failed) {
		char why[600];
		snprintf(why, sizeof why, "%s%s%s%s", r->why, r->at ? " (node '" : "",
			 r->at && r->at->name ? r->at->name : "", r->at ? "')" : "");
		append(V->skipped, sizeof V->skipped, "%s: %s; ", stage, why);
		V->have_base = 0;
		return;
	}
	/* a re-rolled trace whose length became a symbol computes any length
	 * by design (its generalisation is what the golden tests at other
	 * lengths check); the graph after it is the new baseline */
	int generalised = 0;
	for (int i = 0; i < g->nnodes && !strcmp(stage, "reroll"); i++) {
		const ir_node *n = g->nodes[i];
		ir_attr *sa = n->op == OP_RECURRENCE ? ir_attr_find(n, "seq_axis") : NULL;
		generalised |= sa && sa->n && ir_attr_int(n, "traced_steps", 0) && n->in[0] &&
			       !ir_dim_is_const(n->in[0]->shape.d[sa->ints[0]]);
	}
	if (generalised && V->have_base) {
		append(V->skipped, sizeof V->skipped, "%s%s (a traced length made symbolic); ", stage, NULL);
		V->have_base = 0;
	}
	if (V->have_base) {
		ev_run *b = &V->run[c ^ 1];
		for (int k = 0; k < g->noutputs; k++) {
			const ev_tensor *now = ev_get(r, g->outputs[k]), *was = ev_get(b, g->outputs[k]);
			double err;
			if (!now || !was || close_enough(now, was, &err))
				continue;
			const ir_node *n = first_changed(r, b, g);
			diag_error(D, "translation validation: pass '%s' changed output '%s' (max difference %.3g%s); "
				   "the first value that changed is made by node '%s' (%s)", stage,
				   g->outputs[k]->name, err, now->n != was->n ? ", another shape" : "",
				   n && n->name ? n->name : "?", n ? ir_op_name(n->op) : "?");
			V->done = 1;
			return;
		}
		append(V->checked, sizeof V->checked, "%s%s ", stage, NULL);
	}
	V->have_base = 1;
	V->cur ^= 1;
}

void validate_end(validate *V, const char *model)
{
	if (!V)
		return;
	const char *log = getenv("CELLC_VALIDATE_LOG");
	char line[1400];
	snprintf(line, sizeof line, "%s: validated: %s| not validated: %s| reached: %s\n", model ? model : "?",
		 V->checked[0] ? V->checked : "(none) ", V->skipped[0] ? V->skipped : "(none) ",
		 V->reached ? V->reached : "(nothing)");
	if (!V->reached || !strcmp(V->reached, "load")) {
		line[0] = 0;    /* stopped as loaded (verify's first look): nothing to say */
		log = NULL;
	}
	if (V->level > 1 && line[0])
		fprintf(stderr, "cellc: %s", line);
	if (log && *log) {
		FILE *f = fopen(log, "a");
		if (f) {
			fputs(line, f);
			fclose(f);
		}
	}
	arena_free(&V->runA[0]);
	arena_free(&V->runA[1]);
	arena_free(&V->inA);
	free(V);
}
