/* recognize.c: which cell of docs/cells.md a recovered recurrence computes.
 *
 * The body of a re-rolled trace is whatever the exporter wrote: operand
 * order, `(1 - beta) * u * u` versus `u * u * (1 - beta)`, Slice versus
 * Split for the gate chunks.  So the body is read through a small algebra:
 * every value is expanded into a polynomial -- a sum of terms
 * c * [mu_t] * f1 * f2 over "factors" (body inputs, products, non-linear
 * results) -- through Add, Sub, Neg and Mul, stopping at the carried states'
 * new values.  The cells are then checked as identities between such
 * polynomials:
 *   rnn   h' = tanh(a)                     a = d + W_h h + b_h
 *   lstm  c' = f c + i g, h' = o tanh(c')  i f g o = the four column blocks of a
 *   gru   h' = n - z n + z h, z = sigmoid(d_z + r_z), r = sigmoid(d_r + r_r),
 *         n = tanh(d_n + r r_n)            (blocks of d and of r = W_h h + b_h)
 *   dtriv h' = sign(a) relu(|a| + b)       a = d + h M (modrelu; M a matrix of
 *                                          the model, b a vector: no W_h, no b_h)
 * and the input dynamic d, with u = W_x x_t + b_x:
 *   plain     d = u
 *   momentum  d = v',  v' = mu v + s u
 *   nag       as momentum with mu the per-step coefficient (has_step schedule
 *             or table; pass_reroll records the restart period)
 *   adam      d = v' / sqrt(m' + eps),  m' = beta m + (1 - beta) u u
 *   rmsprop   d = s u / sqrt(m' + eps), or adam's form with mu = 0
 * and NAG's form=extrapolate, which replaces a = d + r as a whole:
 *   a = q' + mu_t (q' - q),  q' = r - s u  (q a carried state; rnn, lstm, dtriv)
 * A recurrence that passes gets attributes cell and hidden; any other gets
 * cell = "generic" and cell_note with the first identity that failed.
 * Nothing else changes: recognised or not, the body goes through the same
 * hoisting and fusion (recognize_describe reports what they made of it).
 */
#include "recognize.h"
#include "passes.h"
#include "reroll.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { MAXT = 8 };

typedef struct term {
	double c;
	int dyn;                /* times the per-step coefficient mu_t */
	int nf;
	const ir_value *f[2];   /* factors, sorted by address */
} term;

typedef struct poly {
	int n, ok;
	term t[MAXT];
} poly;

typedef struct rctx {
	const ir_node *rec;
	const ir_graph *b;
	int nseq, nstate;
	unsigned own;           /* the cell's own states (h, and c of an lstm), a bit each */
	const char *why;
	const ir_value *sched;  /* a scalar the body computes from its counters that */
	int64_t sched_F;        /* follows the NAG schedule of restart period sched_F */
} rctx;

static int scalar_const(const ir_value *v, double *x)
{
	/* weights stay factors: a scalar parameter (FastGRNN's zeta, nu) is
	 * trained, so its value is no coefficient of the cell */
	if (!v || !ir_value_is_const(v) || v->sym || ir_shape_const_numel(&v->shape) != 1)
		return 0;
	*x = ir_const_num(v, 0);
	return 1;
}

/* The per-step coefficient of pass_reroll (a table input or the
 * schedule), or the scalar that a scripted loop's counter makes follow the
 * schedule (find_schedule). */
static int is_step_coef(const rctx *C, const ir_value *v)
{
	if (v == C->sched)
		return 1;
	if (v->kind == VAL_STEP && v->role == IR_ROLE_STEP_COEF)
		return 1;
	return v->role == IR_ROLE_NAG_SCHEDULE && v->producer && v->producer->op == OP_DIV;
}

/* The restart period of the NAG schedule the step's coefficient follows:
 * pass_reroll's (attribute nag_restart), or the one the body's counter
 * runs (C->sched_F); -1 when neither. */
static int64_t nag_restart(const rctx *C)
{
	return C->sched ? C->sched_F : ir_attr_int(C->rec, "nag_restart", -1);
}

enum { SCHED_STEPS = 256 };

/* A scalar the body multiplies a matrix by, computed from the loop's own
 * counters, whose values over SCHED_STEPS steps are the NAG schedule with
 * a restart period (recognize_run_scalars): C->sched and C->sched_F. */
static void find_schedule(rctx *C)
{
	float tab[SCHED_STEPS];
	int have[SCHED_STEPS];
	for (int t = 0; t < SCHED_STEPS; t++)
		have[t] = 1;
	for (int i = 0; i < C->b->nnodes && !C->sched; i++) {
		const ir_node *n = C->b->nodes[i];
		for (int k = 0; n->op == OP_MUL && n->nin == 2 && k < 2 && !C->sched; k++) {
			const ir_value *c = n->in[k], *m = n->in[1 - k];
			int amb;
			if (!c || !m || !c->producer || c->producer->graph != C->b || m->shape.rank < 2 ||
			    ir_shape_const_numel(&c->shape) != 1 ||
			    !recognize_run_scalars(C->rec, c, SCHED_STEPS, tab))
				continue;
			int64_t F = reroll_nag_period(tab, have, SCHED_STEPS, &amb);
			if (F >= 1 && !amb) {
				C->sched = c;
				C->sched_F = F;
			}
		}
	}
}

/* Whether n changes only the shape of what it reads: the Identity a
 * scripted Loop's body may end in (a state that is also a per-step
 * output), the Reshape that lower_loop.c carries a [1, B, H] state in
 * ([1, B*H]), the Squeeze / Unsqueeze of a step that takes and gives its
 * states [1, B, H] (ptb/momentumnet.py's hx.squeeze(), hy.unsqueeze(0)):
 * the elements in the same order. */
static int is_view(const ir_node *n)
{
	switch (n->op) {
	case OP_IDENTITY: return n->nin == 1;
	case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN: return 1;
	default: return 0;
	}
}

/* A state output through views to the value the step computes. */
static const ir_value *thru_views(const ir_value *v)
{
	for (int k = 0; k < 8 && v && v->producer && is_view(v->producer); k++)
		v = v->producer->in[0];
	return v;
}

static int state_index_out(const rctx *C, const ir_value *v)
{
	for (int s = 0; s < C->nstate; s++)
		if (C->b->outputs[s] == v || thru_views(C->b->outputs[s]) == v)
			return s;
	return -1;
}

/* The state v is, or is a view of (index), or -1. */
static int state_index_in(const rctx *C, const ir_value *v)
{
	v = thru_views(v);
	for (int s = 0; s < C->nstate; s++)
		if (C->b->inputs[C->nseq + s] == v)
			return s;
	return -1;
}

static poly leaf(const ir_value *v)
{
	poly p = {.n = 1, .ok = 1};
	p.t[0] = (term){1.0, 0, 1, {v, NULL}};
	return p;
}

static poly cpoly(double c)
{
	poly p = {.n = 1, .ok = 1};
	p.t[0] = (term){c, 0, 0, {NULL, NULL}};
	return p;
}

static int same_factors(const term *a, const term *b)
{
	return a->nf == b->nf && a->dyn == b->dyn && a->f[0] == b->f[0] && a->f[1] == b->f[1];
}

static void add_term(poly *p, term t)
{
	if (!p->ok)
		return;
	if (t.nf == 2 && (uintptr_t)t.f[0] > (uintptr_t)t.f[1]) {
		const ir_value *x = t.f[0];
		t.f[0] = t.f[1];
		t.f[1] = x;
	}
	for (int i = 0; i < p->n; i++)
		if (same_factors(&p->t[i], &t)) {
			p->t[i].c += t.c;
			return;
		}
	if (p->n == MAXT) {
		p->ok = 0;
		return;
	}
	p->t[p->n++] = t;
}

static poly padd(poly a, poly b, double sb)
{
	for (int i = 0; i < b.n; i++) {
		term t = b.t[i];
		t.c *= sb;
		add_term(&a, t);
	}
	a.ok &= b.ok;
	return a;
}

static poly pmul(poly a, poly b, const ir_value *self)
{
	poly r = {.ok = a.ok && b.ok};
	for (int i = 0; i < a.n && r.ok; i++)
		for (int j = 0; j < b.n && r.ok; j++) {
			term x = a.t[i], y = b.t[j];
			if (x.nf + y.nf > 2 || x.dyn + y.dyn > 1)
				return leaf(self);
			term t = {x.c * y.c, x.dyn + y.dyn, x.nf + y.nf, {NULL, NULL}};
			int k = 0;
			for (int q = 0; q < x.nf; q++)
				t.f[k++] = x.f[q];
			for (int q = 0; q < y.nf; q++)
				t.f[k++] = y.f[q];
			add_term(&r, t);
		}
	return r.ok ? r : leaf(self);
}

/* v as a polynomial; new state values other than `root` stay factors. */
static poly expand(const rctx *C, const ir_value *v, const ir_value *root, int depth)
{
	double x;
	if (scalar_const(v, &x))
		return cpoly(x);
	int si = state_index_in(C, v);
	if (si >= 0)
		return leaf(C->b->inputs[C->nseq + si]);        /* a view of a state is the state */
	const ir_node *n = v->producer;
	if (!n || n->graph != C->b || depth > 24 || (v != root && state_index_out(C, v) >= 0))
		return leaf(v);
	switch (n->op) {
	case OP_ADD:
		return padd(expand(C, n->in[0], root, depth + 1), expand(C, n->in[1], root, depth + 1), 1.0);
	case OP_SUB:
		return padd(expand(C, n->in[0], root, depth + 1), expand(C, n->in[1], root, depth + 1), -1.0);
	case OP_NEG:
		return padd(cpoly(0.0), expand(C, n->in[0], root, depth + 1), -1.0);
	case OP_IDENTITY:
		return expand(C, n->in[0], root, depth + 1);
	case OP_MUL: {
		for (int k = 0; k < 2; k++)
			if (is_step_coef(C, n->in[k])) {
				poly p = expand(C, n->in[1 - k], root, depth + 1);
				for (int i = 0; i < p.n; i++) {
					if (p.t[i].dyn)
						return leaf(v);
					p.t[i].dyn = 1;
				}
				return p;
			}
		return pmul(expand(C, n->in[0], root, depth + 1), expand(C, n->in[1], root, depth + 1), v);
	}
	default:
		return leaf(v);
	}
}

static int near(double a, double b) { return fabs(a - b) <= 1e-6 * fmax(1.0, fabs(b)); }

/* The coefficient of the term with factors (f0[, f1]) and dyn; NAN if absent. */
static double coef_of(const poly *p, const ir_value *f0, const ir_value *f1, int dyn)
{
	term want = {0, dyn, f1 ? 2 : f0 ? 1 : 0, {f0, f1}};
	if (want.nf == 2 && (uintptr_t)want.f[0] > (uintptr_t)want.f[1]) {
		want.f[0] = f1;
		want.f[1] = f0;
	}
	for (int i = 0; i < p->n; i++)
		if (same_factors(&p->t[i], &want))
			return p->t[i].c;
	return NAN;
}

static const ir_value *unary_in(const ir_value *v, ir_op op)
{
	return v && v->producer && v->producer->op == op ? v->producer->in[0] : NULL;
}

/* v = column block k of width H of some value: returns the value, sets *k. */
static const ir_value *block_of(const ir_value *v, int64_t H, int *k)
{
	const ir_node *n = v ? v->producer : NULL;
	if (!n)
		return NULL;
	if (n->op == OP_SLICE && n->nin >= 4 && ir_value_is_const(n->in[1]) && ir_value_is_const(n->in[2]) &&
	    ir_value_is_const(n->in[3]) && ir_shape_const_numel(&n->in[1]->shape) == 1) {
		const ir_value *x = n->in[0];
		int64_t ax = ir_const_int(n->in[3], 0), st = ir_const_int(n->in[1], 0);
		int64_t en = ir_const_int(n->in[2], 0);
		/* gates[:, 3 * n:]: an end past the axis is its end */
		if (x->shape.rank == 2 && ir_dim_is_const(x->shape.d[1]) && en > x->shape.d[1].k)
			en = x->shape.d[1].k;
		if (x->shape.rank != 2 || (ax != 1 && ax != -1) || (n->nin > 4 && n->in[4] &&
		    ir_const_int(n->in[4], 0) != 1))
			return NULL;
		if (st % H || en != st + H)
			return NULL;
		*k = (int)(st / H);
		return x;
	}
	if (n->op == OP_SPLIT && v->shape.rank == 2 && v->shape.d[1].k == H) {
		int64_t ax = ir_attr_int(n, "axis", 0);
		if (ax != 1 && ax != -1)
			return NULL;
		for (int o = 0; o < n->nout; o++)
			if (n->out[o] == v) {
				*k = o;
				return n->in[0];
			}
	}
	return NULL;
}

/* Whether body value v is computed from one of the cell's own states (C->own). */
static int reads_own_state(const rctx *C, const ir_value *v, int depth)
{
	for (int s = 0; s < C->nstate; s++)
		if ((C->own >> s & 1) && C->b->inputs[C->nseq + s] == v)
			return 1;
	const ir_node *n = v ? v->producer : NULL;
	if (!n || n->graph != C->b || depth > 32)
		return depth > 32;
	for (int k = 0; k < n->nin; k++)
		if (n->in[k] && reads_own_state(C, n->in[k], depth + 1))
			return 1;
	return 0;
}

/* u = x_t W^T + b (or the hoisted u_t itself): the input projection, of a
 * sequence input, or of what the step is fed otherwise, computed without
 * the cell's own states (a forecaster's previous prediction carried as a
 * state of its own, a decoder's embedded previous token). */
static int is_input_proj(const rctx *C, const ir_value *v)
{
	for (int s = 0; s < C->nseq; s++)
		if (C->b->inputs[s] == v)
			return v->role == IR_ROLE_PROJECTION && v->producer == NULL && v->shape.rank == 2;
	const ir_node *n = v->producer;
	if (!n || n->op != OP_GEMM || ir_attr_int(n, "transA", 0) || n->nin < 2 || !n->in[1] ||
	    n->in[1]->graph == C->b)
		return 0;
	for (int s = 0; s < C->nseq; s++)
		if (n->in[0] == C->b->inputs[s])
			return 1;
	return C->own && !reads_own_state(C, n->in[0], 0);
}

/* r = h W^T + b: the recurrent projection of state h (index). */
static int is_rec_proj(const rctx *C, const ir_value *v, int *h)
{
	const ir_node *n = v->producer;
	if (!n || n->op != OP_GEMM || ir_attr_int(n, "transA", 0))
		return 0;
	*h = state_index_in(C, n->in[0]);
	return *h >= 0;
}

/* The dynamic term d: writes the cell's prefix ("momentum(mu=.., s=..)"). */
static const char *dynamic_of(rctx *C, arena *A, const ir_value *d, const char **opts)
{
	poly p = expand(C, d, d, 0);
	/* plain */
	if (p.ok && p.n == 1 && p.t[0].nf == 1 && p.t[0].c == 1.0 && !p.t[0].dyn && is_input_proj(C, p.t[0].f[0])) {
		*opts = "";
		return "plain";
	}
	int sv = state_index_out(C, d);
	if (sv >= 0) {
		/* momentum / nag: v' = mu v + s u */
		poly q = expand(C, d, d, 0);
		const ir_value *vin = C->b->inputs[C->nseq + sv];
		const ir_value *u = NULL;
		for (int i = 0; i < q.n; i++)
			if (q.t[i].nf == 1 && is_input_proj(C, q.t[i].f[0]))
				u = q.t[i].f[0];
		if (!q.ok || q.n != 2 || !u) {
			C->why = "the dynamic's state is not mu*v + s*u";
			return NULL;
		}
		double s = coef_of(&q, u, NULL, 0), mu = coef_of(&q, vin, NULL, 0), mut = coef_of(&q, vin, NULL, 1);
		if (isnan(s)) {
			C->why = "the dynamic's state is not mu*v + s*u";
			return NULL;
		}
		if (!isnan(mut) && near(mut, 1.0)) {
			int64_t F = nag_restart(C);
			*opts = F >= 0 ? arena_printf(A, "s=%g, restart=%" PRId64, s, F)
				       : arena_printf(A, "s=%g, schedule=table of %" PRId64 " steps", s,
						      ir_attr_int(C->rec, "traced_steps", 0));
			return "nag";
		}
		if (isnan(mu)) {
			C->why = "the dynamic's state is not mu*v + s*u";
			return NULL;
		}
		*opts = arena_printf(A, "mu=%g, s=%g", mu, s);
		return "momentum";
	}
	/* adam / rmsprop: num / sqrt(m' + eps) */
	const ir_node *dv = d->producer;
	const ir_value *sq = dv && dv->op == OP_DIV ? unary_in(dv->in[1], OP_SQRT) : NULL;
	if (!sq) {
		C->why = "the input dynamic is none of plain, momentum, nag, adam, rmsprop";
		return NULL;
	}
	poly den = expand(C, sq, sq, 0);
	const ir_value *mo = NULL;
	double eps = 0;
	for (int i = 0; i < den.n; i++) {
		if (den.t[i].nf == 1 && state_index_out(C, den.t[i].f[0]) >= 0 && den.t[i].c == 1.0)
			mo = den.t[i].f[0];
		else if (den.t[i].nf == 0)
			eps = den.t[i].c;
	}
	if (!den.ok || den.n != 2 || !mo) {
		C->why = "the denominator is not sqrt(m + eps)";
		return NULL;
	}
	int sm = state_index_out(C, mo);
	poly mp = expand(C, mo, mo, 0);
	const ir_value *min = C->b->inputs[C->nseq + sm], *u = NULL;
	for (int i = 0; i < mp.n; i++)
		if (mp.t[i].nf == 2 && mp.t[i].f[0] == mp.t[i].f[1] && is_input_proj(C, mp.t[i].f[0]))
			u = mp.t[i].f[0];
	double beta = coef_of(&mp, min, NULL, 0), omb = u ? coef_of(&mp, u, u, 0) : NAN;
	if (!mp.ok || mp.n != 2 || isnan(beta) || isnan(omb) || !near(omb, 1.0 - beta)) {
		C->why = "the second moment is not beta*m + (1-beta)*u*u";
		return NULL;
	}
	poly num = expand(C, dv->in[0], dv->in[0], 0);
	int snum = state_index_out(C, dv->in[0]);
	if (snum >= 0) {
		const ir_value *vin = C->b->inputs[C->nseq + snum];
		double s = coef_of(&num, u, NULL, 0), mu = coef_of(&num, vin, NULL, 0);
		if (!num.ok || num.n != 2 || isnan(s) || isnan(mu)) {
			C->why = "the first moment is not mu*v + s*u";
			return NULL;
		}
		if (near(mu, 0.0)) {
			/* docs/cells.md: rmsprop is adam with mu = 0 (the velocity
			 * v' = 0 v + s u still carried): named by its own name */
			*opts = arena_printf(A, "s=%g, beta=%g, eps=%g", s, beta, eps);
			return "rmsprop";
		}
		*opts = arena_printf(A, "mu=%g, s=%g, beta=%g, eps=%g", mu, s, beta, eps);
		return "adam";
	}
	double s = coef_of(&num, u, NULL, 0);
	if (!num.ok || num.n != 1 || isnan(s)) {
		C->why = "the numerator is not s*u";
		return NULL;
	}
	*opts = arena_printf(A, "s=%g, beta=%g, eps=%g", s, beta, eps);
	return "rmsprop";
}

/* a = d + r (r the recurrent projection of state h): returns d's single
 * factor, or NULL. */
/* The terms of a sum: the leaves of the tree of Adds under v (at most
 * 8), without looking into products. */
static int add_terms(const rctx *C, const ir_value *v, const ir_value **t, int n, int depth)
{
	const ir_node *p = v ? v->producer : NULL;
	if (n < 0 || !v)
		return -1;
	if (!p || p->graph != C->b || p->op != OP_ADD || p->nin != 2 || depth > 8 || state_index_out(C, v) >= 0 ||
	    !ir_shape_eq(&p->in[0]->shape, &v->shape) || !ir_shape_eq(&p->in[1]->shape, &v->shape)) {
		if (n >= 8)
			return -1;
		t[n] = v;
		return n + 1;
	}
	n = add_terms(C, p->in[0], t, n, depth + 1);
	return add_terms(C, p->in[1], t, n, depth + 1);
}

static const ir_value *split_pre(rctx *C, const ir_value *a, int hstate, int *ok)
{
	const ir_value *terms[8], *d = NULL;
	int n = add_terms(C, a, terms, 0, 0), have_r = 0;
	*ok = 0;
	for (int i = 0; i < n; i++) {
		int h;
		if (is_rec_proj(C, terms[i], &h) && h == hstate)
			have_r++;
		else if (!d)
			d = terms[i];
		else
			return NULL;
	}
	*ok = n > 0 && have_r == 1 && d;
	return d;
}

/* b is a vector [H] the body reads from outside (modrelu's bias). */
static int outer_vector(const rctx *C, const ir_value *b, int64_t H)
{
	return b && b->graph != C->b && b->shape.rank == 1 && ir_dim_is_const(b->shape.d[0]) && b->shape.d[0].k == H;
}

/* h' = sign(a) * relu(|a| + b), orthogonal.py's modrelu in any operand
 * order: returns a (NULL: not a modrelu). */
static const ir_value *modrelu_of(const rctx *C, const ir_value *h2, int64_t H)
{
	const ir_node *m = h2->producer;
	if (!m || m->op != OP_MUL || m->nin != 2)
		return NULL;
	for (int k = 0; k < 2; k++) {
		const ir_value *a = unary_in(m->in[k], OP_SIGN), *z = unary_in(m->in[1 - k], OP_RELU);
		const ir_node *ad = z ? z->producer : NULL;
		for (int j = 0; a && ad && ad->op == OP_ADD && ad->nin == 2 && j < 2; j++)
			if (unary_in(ad->in[j], OP_ABS) == a && outer_vector(C, ad->in[1 - j], H))
				return a;
	}
	return NULL;
}

/* NAG's form=extrapolate: a = q' + mu_t (q' - q) with q' = r - s u a
 * state (q its value before the step) and r the recurrent projection of
 * state hstate.  Returns the cell's options ("s=.., restart=.., form=
 * extrapolate"), or NULL with C->why. */
static const char *extrapolate_of(rctx *C, arena *A, const ir_value *a, int hstate)
{
	poly p = expand(C, a, a, 0);
	const ir_value *q2 = NULL;
	for (int i = 0; i < p.n; i++)
		if (p.t[i].nf == 1 && !p.t[i].dyn && state_index_out(C, p.t[i].f[0]) >= 0)
			q2 = p.t[i].f[0];
	int sq = q2 ? state_index_out(C, q2) : -1;
	const ir_value *q = sq >= 0 ? C->b->inputs[C->nseq + sq] : NULL;
	if (!p.ok || p.n != 3 || !q2 || !near(coef_of(&p, q2, NULL, 0), 1.0) || !near(coef_of(&p, q2, NULL, 1), 1.0) ||
	    !near(coef_of(&p, q, NULL, 1), -1.0))
		return NULL;
	poly r = expand(C, q2, q2, 0);
	const ir_value *u = NULL, *rp = NULL;
	for (int i = 0; i < r.n; i++) {
		int h;
		if (r.t[i].nf == 1 && is_input_proj(C, r.t[i].f[0]))
			u = r.t[i].f[0];
		else if (r.t[i].nf == 1 && is_rec_proj(C, r.t[i].f[0], &h) && h == hstate)
			rp = r.t[i].f[0];
	}
	if (!r.ok || r.n != 2 || !u || !rp || !near(coef_of(&r, rp, NULL, 0), 1.0)) {
		C->why = "the extrapolated state is not q' = W_h h + b_h - s*u";
		return NULL;
	}
	double s = -coef_of(&r, u, NULL, 0);
	int64_t F = nag_restart(C);
	return F >= 0 ? arena_printf(A, "s=%g, restart=%" PRId64 ", form=extrapolate", s, F)
		      : arena_printf(A, "s=%g, schedule=table of %" PRId64 " steps, form=extrapolate", s,
				     ir_attr_int(C->rec, "traced_steps", 0));
}

/* dtriv's recurrent term h M: a product of the state by a matrix of the
 * model, with no bias (docs/cells.md: no W_h, no b_h). */
static int plain_rec_proj(const rctx *C, const ir_value *a, int hstate)
{
	const ir_value *terms[8];
	int n = add_terms(C, a, terms, 0, 0);
	for (int i = 0; i < n; i++) {
		int h;
		if (is_rec_proj(C, terms[i], &h) && h == hstate)
			return terms[i]->producer->nin < 3 || !terms[i]->producer->in[2];
	}
	return 1;       /* (no product of the state: the form check says so) */
}

static void cell_lstm_rnn(rctx *C, arena *A, const char **cell, int64_t *hidden)
{
	for (int sh = 0; sh < C->nstate; sh++) {
		const ir_value *h2 = thru_views(C->b->outputs[sh]);
		int64_t H = h2->shape.d[1].k;
		const ir_node *n = h2->producer;
		if (!n || !ir_dim_is_const(h2->shape.d[1]))
			continue;
		const ir_value *a = NULL;
		const char *base = NULL;
		if (n->op == OP_TANH) {
			a = n->in[0];
			base = "rnn";
		} else if (n->op == OP_MUL) {
			/* h' = o * tanh(c'), c' = f c + i g, the gates four distinct
			 * column blocks of one pre-activation, in any order: PyTorch
			 * writes i, f, g, o, ONNX's LSTM i, o, f, c */
			for (int k = 0; k < 2 && !base; k++) {
				const ir_value *c2 = unary_in(n->in[k], OP_TANH);
				const ir_value *og = unary_in(n->in[1 - k], OP_SIGMOID);
				int sc = c2 ? state_index_out(C, c2) : -1, bo;
				const ir_value *src = og ? block_of(og, H, &bo) : NULL;
				if (sc < 0 || !src || !ir_dim_is_const(src->shape.d[1]) || src->shape.d[1].k != 4 * H)
					continue;
				unsigned seen = 1u << bo;       /* the blocks the gates took */
				poly pc = expand(C, c2, c2, 0);
				const ir_value *cin = C->b->inputs[C->nseq + sc];
				int okc = pc.ok && pc.n == 2;
				for (int i = 0; i < pc.n && okc; i++) {
					const term *t = &pc.t[i];
					int b0, b1;
					okc = t->nf == 2 && t->c == 1.0 && !t->dyn;
					if (!okc)
						break;
					const ir_value *x = t->f[0], *y = t->f[1];
					if (x == cin || y == cin) {
						const ir_value *f = unary_in(x == cin ? y : x, OP_SIGMOID);
						okc = f && block_of(f, H, &b0) == src && !(seen & 1u << b0);
						seen |= okc ? 1u << b0 : 0;
					} else {
						const ir_value *si = unary_in(x, OP_SIGMOID), *tg = unary_in(y, OP_TANH);
						if (!si || !tg) {
							si = unary_in(y, OP_SIGMOID);
							tg = unary_in(x, OP_TANH);
						}
						okc = si && tg && block_of(si, H, &b0) == src && block_of(tg, H, &b1) == src &&
						      b0 != b1 && !(seen & (1u << b0 | 1u << b1));
						seen |= okc ? 1u << b0 | 1u << b1 : 0;
					}
				}
				okc = okc && seen == 0xfu;
				if (okc) {
					a = src;
					base = "lstm";
				}
			}
		}
		if (!base && (a = modrelu_of(C, h2, H)) != NULL)
			base = "dtriv";
		if (!base)
			continue;
		/* the cell's own states: h, and c' = f c + i g of an lstm */
		C->own = 1u << sh;
		for (int k = 0; k < 2 && !strcmp(base, "lstm"); k++) {
			const ir_value *c2 = unary_in(n->in[k], OP_TANH);
			int sc = c2 ? state_index_out(C, c2) : -1;
			C->own |= sc >= 0 ? 1u << sc : 0;
		}
		int ok;
		const ir_value *d = split_pre(C, a, sh, &ok);
		const char *opts = ok ? NULL : extrapolate_of(C, A, a, sh), *dyn = "nag";
		if (!ok && !opts) {
			if (!C->why)
				C->why = "the pre-activation is not d + W_h h + b_h";
			continue;
		}
		if (!strcmp(base, "dtriv") && !plain_rec_proj(C, a, sh)) {
			C->why = "the recurrent term of a modrelu cell has a bias (dtriv's is h M)";
			continue;
		}
		if (ok)
			dyn = dynamic_of(C, A, d, &opts);
		if (!dyn)
			return;
		*cell = *opts ? arena_printf(A, "%s_%s(%s)", dyn, base, opts) : arena_printf(A, "%s_%s", dyn, base);
		*hidden = H;
		return;
	}
}

static void cell_gru(rctx *C, arena *A, const char **cell, int64_t *hidden)
{
	for (int sh = 0; sh < C->nstate; sh++) {
		const ir_value *h2 = thru_views(C->b->outputs[sh]), *hin = C->b->inputs[C->nseq + sh];
		if (!ir_dim_is_const(h2->shape.d[1]))
			continue;
		int64_t H = h2->shape.d[1].k;
		poly p = expand(C, h2, h2, 0);
		if (!p.ok || p.n != 3)
			continue;
		/* n - z n + z h */
		const ir_value *nv = NULL, *z = NULL;
		for (int i = 0; i < p.n; i++)
			if (p.t[i].nf == 1 && p.t[i].c == 1.0)
				nv = p.t[i].f[0];
		for (int i = 0; i < p.n; i++)
			if (p.t[i].nf == 2 && p.t[i].c == 1.0 && (p.t[i].f[0] == hin || p.t[i].f[1] == hin))
				z = p.t[i].f[0] == hin ? p.t[i].f[1] : p.t[i].f[0];
		if (!nv || !z || !near(coef_of(&p, z, nv, 0), -1.0))
			continue;
		const ir_value *zp = unary_in(z, OP_SIGMOID), *np = unary_in(nv, OP_TANH);
		if (!zp || !np)
			continue;
		/* z = sigmoid(block kz of D + block kz of R); the three gates are
		 * distinct column blocks in any order (PyTorch writes r, z, n,
		 * ONNX's GRU z, r, h) */
		poly pz = expand(C, zp, NULL, 0);
		const ir_value *D = NULL, *Rv = NULL;
		int kz = -1;
		for (int i = 0; i < pz.n && pz.ok && pz.n == 2; i++) {
			int k, hs;
			const ir_value *src = block_of(pz.t[i].f[0], H, &k);
			if (!src || (kz >= 0 && k != kz) || pz.t[i].nf != 1 || pz.t[i].c != 1.0)
				break;
			kz = k;
			if (is_rec_proj(C, src, &hs) && hs == sh)
				Rv = src;
			else
				D = src;
		}
		if (!D || !Rv) {
			C->why = "the GRU update gate is not sigmoid(d_z + r_z)";
			return;
		}
		/* n = tanh(block kn of D + r * block kn of R [+ r * b_n]),
		 * r = sigmoid(blocks kr): the recurrent bias of n may be a term
		 * of its own (ONNX's linear_before_reset keeps Rb_h apart) */
		poly pn = expand(C, np, NULL, 0);
		int okn = pn.ok && (pn.n == 2 || pn.n == 3), kn = -1, kr = -1, have_d = 0, have_r = 0;
		const ir_value *rgate = NULL;
		for (int i = 0; i < pn.n && okn; i++) {
			const term *t = &pn.t[i];
			int k = -1, k2 = -1;
			if (t->nf == 1) {
				okn = !have_d && block_of(t->f[0], H, &k) == D && (kn < 0 || k == kn) && t->c == 1.0;
				kn = k;
				have_d = 1;
			} else if (t->nf == 2) {
				int j = block_of(t->f[0], H, &k) == Rv ? 0 : block_of(t->f[1], H, &k) == Rv ? 1 : -1;
				const ir_value *rg = j >= 0 ? unary_in(t->f[1 - j], OP_SIGMOID) : NULL;
				if (j < 0) {
					/* r * b_n: a vector the body reads from outside */
					int jb = t->f[0]->graph != C->b ? 0 : 1;
					const ir_value *b = t->f[jb];
					okn = b->graph != C->b && b->shape.rank == 1 && ir_dim_is_const(b->shape.d[0]) &&
					      b->shape.d[0].k == H && t->c == 1.0 &&
					      (rgate = rgate ? rgate : unary_in(t->f[1 - jb], OP_SIGMOID)) ==
						      unary_in(t->f[1 - jb], OP_SIGMOID);
					continue;
				}
				okn = !have_r && rg && (kn < 0 || k == kn) && t->c == 1.0 && (!rgate || rgate == rg);
				kn = k;
				have_r = 1;
				rgate = rg;
				if (okn) {
					poly pr = expand(C, rg, NULL, 0);
					okn = pr.ok && pr.n == 2 && block_of(pr.t[0].f[0], H, &k) &&
					      block_of(pr.t[1].f[0], H, &k2) && k == k2;
					kr = k;
				}
			} else {
				okn = 0;
			}
		}
		okn = okn && have_d && have_r && kz != kn && kz != kr && kn != kr;
		if (!okn) {
			C->why = "the GRU candidate is not tanh(d_n + r * r_n)";
			return;
		}
		C->own = 1u << sh;
		const char *opts, *dyn = dynamic_of(C, A, D, &opts);
		if (!dyn)
			return;
		*cell = *opts ? arena_printf(A, "%s_gru(%s)", dyn, opts) : arena_printf(A, "%s_gru", dyn);
		*hidden = H;
		return;
	}
}

void recognize_recurrence(ir_node *rec)
{
	rctx C0 = {.rec = rec, .b = rec->body}, *C = &C0;
	arena *A = rec->graph->A;
	C->nseq = (int)ir_attr_int(rec, "n_seq", 0);
	C->nstate = (int)ir_attr_int(rec, "n_state", 0);
	const char *cell = NULL;
	int64_t hidden = 0;
	if (C->b && C->b->ninputs >= C->nseq + C->nstate && C->b->noutputs >= C->nstate) {
		find_schedule(C);
		cell_lstm_rnn(C, A, &cell, &hidden);
		if (!cell)
			cell_gru(C, A, &cell, &hidden);
	}
	if (cell) {
		ir_attr_set_string(rec, "cell", cell);
		ir_attr_set_int(rec, "hidden", hidden);
		ir_attr_remove(rec, "cell_note");
	} else {
		ir_attr_set_string(rec, "cell", "generic");
		ir_attr_set_string(rec, "cell_note", C->why ? C->why : "no rnn, lstm or gru step found");
	}
}

/* After hoisting and fusion: how the body is compiled. */
static const char *structure(arena *A, const ir_graph *g, const ir_node *rec, int *native)
{
	const ir_graph *b = rec->body;
	int nseq = (int)ir_attr_int(rec, "n_seq", 0), hoisted = 0, gemms = 0, groups = 0, other = 0;
	for (int s = 0; s < nseq && s < rec->nin; s++) {
		const ir_value *x = rec->in[s];
		const ir_node *p = x ? x->producer : NULL;
		while (p && (p->op == OP_RESHAPE || p->op == OP_FLATTEN) && p->in[0])
			p = p->in[0]->producer;
		hoisted += p && p->op == OP_GEMM;
	}
	int seen[256] = {0};
	for (int i = 0; i < b->nnodes; i++) {
		const ir_node *n = b->nodes[i];
		if (n->op == OP_GEMM || n->op == OP_MATMUL)
			gemms++;
		else if (n->group > 0 && n->group < 256 && !seen[n->group]) {
			seen[n->group] = 1;
			groups++;
		} else if (n->group <= 0 && !ir_is_column_view(n) && ir_ops[n->op].kind != OPK_ELEM)
			other++;
	}
	(void)g;
	*native = hoisted >= 1 && gemms == 1 && other == 0 && groups >= 1;
	return arena_printf(A, "%s, %d recurrent product%s, %d fused element-wise loop%s%s", hoisted ?
			    arena_printf(A, "input projection hoisted into %d GEMM%s over all T*B rows", hoisted,
					 hoisted > 1 ? "s" : "") : "no hoisted input projection",
			    gemms, gemms == 1 ? "" : "s", groups, groups == 1 ? "" : "s",
			    other ? arena_printf(A, ", %d other node%s", other, other > 1 ? "s" : "") : "");
}

const char *recognize_describe(arena *A, const ir_graph *g, const ir_node *rec)
{
	const char *cell = ir_attr_string(rec, "cell", NULL);
	if (!cell)
		return NULL;
	const ir_attr *ax = ir_attr_find(rec, "seq_axis");
	int axis = ax && ax->n > 0 ? (int)ax->ints[0] : 0;
	ir_dim T = rec->nin > 0 && rec->in[0] && rec->in[0]->shape.rank > axis ? rec->in[0]->shape.d[axis]
									      : ir_dim_const(0);
	int64_t traced = ir_attr_int(rec, "traced_steps", 0);
	const char *steps = ir_dim_is_const(T) ? arena_printf(A, "T=%" PRId64 " steps", T.k)
		: traced ? arena_printf(A, "T=%s steps (any length; traced with %" PRId64 ")", ir_dim_str(A, g, T), traced)
		: arena_printf(A, "T=%s steps (any length)", ir_dim_str(A, g, T));
	const char *s = arena_printf(A, "recurrence over %s, cell %s", steps, cell);
	if (ir_attr_int(rec, "hidden", 0) > 0)
		s = arena_printf(A, "%s, hidden %" PRId64, s, ir_attr_int(rec, "hidden", 0));
	const char *note = ir_attr_string(rec, "cell_note", NULL);
	if (note)
		s = arena_printf(A, "%s\n      note: %s: %s", s, ir_rec_scripted(rec) ?
				 "not recognised as a named cell (docs/cells.md; the step is compiled as written)" :
				 "not a named cell (docs/cells.md)", note);
	const char *tn = ir_attr_string(rec, "time_note", NULL);
	if (tn)
		s = arena_printf(A, "%s\n      note: %s", s, tn);
	int native = 0;
	s = arena_printf(A, "%s\n      compiled as: %s", s, structure(A, g, rec, &native));
	if (strcmp(cell, "generic") && native)
		s = arena_printf(A, "%s: the fused structure of the native %s cell", s, cell);
	return s;
}
