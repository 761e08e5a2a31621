/* ode.c: the ODE blocks and ODE-RNN hybrids of the native format (ode.h;
 * docs/cells.md, "ODE blocks"): their options, parameters, initialisers,
 * the checks of an OdeBlock or OdeRnn node and its shapes.  The solvers and the dynamics are the
 * runtime's (runtime/rt_ode.c); the emitter prints one call per block.
 */
#include "ode.h"

#include "cellrt.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* defaults: scipy's solve_ivp tolerances; a fixed-step solve takes 10 steps */
#define DEF_RTOL 1e-3
#define DEF_ATOL 1e-6
#define DEF_STEPS 10
#define DEF_MAX_STEPS 10000

int ode_is_block(const char *name) { return rt_ode_model_lookup(name) >= 0; }

int ode_rnn_model(const char *name)
{
	if (!strcmp(name, "ode_rnn"))
		return RT_ODE_NODE;
	if (!strcmp(name, "hbnode_rnn"))
		return RT_ODE_HBNODE;
	if (!strcmp(name, "ghbnode_rnn"))
		return RT_ODE_GHBNODE;
	return -1;
}

static const char *const option_names[] = {"hidden", "solver", "t0", "t1", "steps", "rtol", "atol", "max_steps",
					   "augment"};

const char *ode_option_list(void) { return "hidden, solver, t0, t1, steps, rtol, atol, max_steps, augment (anode)"; }

static int is_int_option(const char *key)
{
	return !strcmp(key, "hidden") || !strcmp(key, "steps") || !strcmp(key, "max_steps") || !strcmp(key, "augment");
}

/* anode's P: the attribute, 0 for the other models */
static int64_t augment_of(const ir_node *n) { return ir_attr_int(n, "augment", 0); }

int ode_check_option(const char *key, double num, const char *word, char *err, size_t errlen)
{
	int known = 0;
	for (size_t i = 0; i < COUNTOF(option_names); i++)
		known |= !strcmp(option_names[i], key);
	if (!known) {
		snprintf(err, errlen, "unknown option '%s' for an ODE block (options: %s)", key, ode_option_list());
		return -1;
	}
	if (!strcmp(key, "solver")) {
		if (!word || rt_ode_method_lookup(word) < 0) {
			snprintf(err, errlen, "solver must be euler, midpoint, rk4 or dopri5");
			return -1;
		}
		return 0;
	}
	if (word) {
		snprintf(err, errlen, "%s must be a number", key);
		return -1;
	}
	if (is_int_option(key) && (num != floor(num) || num < 1 || num > 1e9)) {
		snprintf(err, errlen, "%s must be an integer between 1 and 1000000000", key);
		return -1;
	}
	if ((!strcmp(key, "rtol") || !strcmp(key, "atol")) && !(num >= 0 && num < 1)) {
		snprintf(err, errlen, "%s must be a number in [0, 1)", key);
		return -1;
	}
	if ((!strcmp(key, "t0") || !strcmp(key, "t1")) && !isfinite(num)) {
		snprintf(err, errlen, "%s must be a finite number", key);
		return -1;
	}
	return 0;
}

static const ode_opt *find(const ode_opt *o, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(o[i].name, name))
			return &o[i];
	return NULL;
}

int ode_set_attrs(ir_node *n, const ode_opt *opts, int nopts, char *err, size_t errlen)
{
	const ode_opt *solver = find(opts, nopts, "solver"), *hidden = find(opts, nopts, "hidden");
	const char *sv = solver ? solver->word : "dopri5";
	const rt_ode_tableau *T = &rt_ode_tableaus[rt_ode_method_lookup(sv)];
	if (!hidden) {
		snprintf(err, errlen, "an ODE block needs the option hidden=N (the state size)");
		return -1;
	}
	/* the options of the other kind of solver are refused, not ignored */
	static const char *const adaptive_only[] = {"rtol", "atol", "max_steps"};
	for (size_t i = 0; i < COUNTOF(adaptive_only); i++)
		if (!T->adaptive && find(opts, nopts, adaptive_only[i])) {
			snprintf(err, errlen, "%s applies to the adaptive solver dopri5 only; solver=%s takes "
				 "steps=N equal steps", adaptive_only[i], sv);
			return -1;
		}
	if (T->adaptive && find(opts, nopts, "steps")) {
		snprintf(err, errlen, "steps applies to the fixed-step solvers (euler, midpoint, rk4); dopri5 "
			 "chooses its steps by rtol and atol (max_steps bounds them)");
		return -1;
	}
	const ode_opt *o;
	if (n->op == OP_ODERNN && ((o = find(opts, nopts, "t0")) || (o = find(opts, nopts, "t1")))) {
		snprintf(err, errlen, "%s does not apply to an ODE-RNN hybrid: each step flows over its "
			 "observation's gap, the input dt", o->name);
		return -1;
	}
	int anode = !strcmp(ir_attr_string(n, "model", ""), "anode");
	if (!anode && (o = find(opts, nopts, "augment"))) {
		snprintf(err, errlen, "augment applies to anode only (the zeros appended to its state)");
		return -1;
	}
	ir_attr_set_string(n, "solver", sv);
	ir_attr_set_int(n, "hidden", (int64_t)hidden->num);
	if (anode)
		ir_attr_set_int(n, "augment", (o = find(opts, nopts, "augment")) ? (int64_t)o->num : 1);
	if (n->op == OP_ODEBLOCK) {
		ir_attr_set_float(n, "t0", (o = find(opts, nopts, "t0")) ? o->num : 0);
		ir_attr_set_float(n, "t1", (o = find(opts, nopts, "t1")) ? o->num : 1);
	}
	if (T->adaptive) {
		double rtol = (o = find(opts, nopts, "rtol")) ? o->num : DEF_RTOL;
		double atol = (o = find(opts, nopts, "atol")) ? o->num : DEF_ATOL;
		if (rtol + atol <= 0) {
			snprintf(err, errlen, "rtol and atol cannot both be 0");
			return -1;
		}
		ir_attr_set_float(n, "rtol", rtol);
		ir_attr_set_float(n, "atol", atol);
		ir_attr_set_int(n, "max_steps", (o = find(opts, nopts, "max_steps")) ? (int64_t)o->num : DEF_MAX_STEPS);
	} else {
		ir_attr_set_int(n, "steps", (o = find(opts, nopts, "steps")) ? (int64_t)o->num : DEF_STEPS);
	}
	return 0;
}

int ode_params(int model, int rnn, int64_t I, int64_t H, int64_t P, ode_param *out)
{
	int k = 0;
	/* f's layer maps the state its model feeds it: [h | 0_P] (anode), [h | v] (sonode), h */
	int64_t rows = model == RT_ODE_ANODE ? H + P : H;
	int64_t cols = model == RT_ODE_ANODE ? H + P : model == RT_ODE_SONODE ? 2 * H : H;
	out[k++] = (ode_param){"W_x", 2, {H, I}};
	out[k++] = (ode_param){"b_x", 1, {H, 0}};
	if (rnn)
		out[k++] = (ode_param){"W_u", 2, {H, H}};
	if (model == RT_ODE_SONODE) {
		out[k++] = (ode_param){"W_v", 2, {H, I}};
		out[k++] = (ode_param){"b_v", 1, {H, 0}};
	}
	out[k++] = (ode_param){"W_h", 2, {rows, cols}};
	out[k++] = (ode_param){"b_h", 1, {rows, 0}};
	if (model == RT_ODE_HBNODE || model == RT_ODE_GHBNODE)
		out[k++] = (ode_param){"w", 1, {1, 0}};
	if (model == RT_ODE_GHBNODE)
		out[k++] = (ode_param){"c", 1, {1, 0}};
	return k;
}

void ode_param_init(const ode_param *p, int64_t H, uint64_t seed, float *data)
{
	int64_t n = p->dims[0] * (p->rank > 1 ? p->dims[1] : 1);
	if (!strcmp(p->name, "w") || !strcmp(p->name, "c")) {
		rt_init_const(data, n, p->name[0] == 'w' ? -3.0f : 0.0f);
		return;
	}
	rt_rng r;
	rt_rng_seed(&r, seed);
	rt_init_uniform(data, n, (float)(1.0 / sqrt((double)H)), &r);
}

/* The attribute name of kind k, or a message naming it. */
static const char *need(arena *A, const ir_node *n, const char *name, ir_attrkind k)
{
	const ir_attr *a = ir_attr_find(n, name);
	if (!a || a->kind != k)
		return arena_printf(A, "an ODE node needs the %s attribute %s", k == ATTR_STRING ? "string" :
				    k == ATTR_INT ? "integer" : "float", name);
	return NULL;
}

const char *ode_check_node(arena *A, const ir_node *n)
{
	const char *e;
	int rnn = n->op == OP_ODERNN;
	if ((e = need(A, n, "model", ATTR_STRING)) || (e = need(A, n, "solver", ATTR_STRING)) ||
	    (e = need(A, n, "hidden", ATTR_INT)))
		return e;
	if (!rnn && ((e = need(A, n, "t0", ATTR_FLOAT)) || (e = need(A, n, "t1", ATTR_FLOAT))))
		return e;
	if (rnn && (ir_attr_find(n, "t0") || ir_attr_find(n, "t1")))
		return "OdeRnn has t0 or t1 (each step flows over its gap, the input dt)";
	int model = rt_ode_model_lookup(ir_attr_string(n, "model", NULL));
	int method = rt_ode_method_lookup(ir_attr_string(n, "solver", NULL));
	if (model < 0)
		return "the ODE node's model must be node, hbnode, ghbnode, anode or sonode";
	if (method < 0)
		return "the ODE node's solver must be euler, midpoint, rk4 or dopri5";
	if (ir_attr_int(n, "hidden", 0) < 1)
		return "the ODE node's hidden must be at least 1";
	if (!rnn && (!isfinite(ir_attr_find(n, "t0")->f) || !isfinite(ir_attr_find(n, "t1")->f)))
		return "the ODE node's t0 and t1 must be finite";
	if (model == RT_ODE_ANODE ? augment_of(n) < 1 : ir_attr_find(n, "augment") != NULL)
		return "the ODE node's augment must be at least 1 for anode, absent for the other models";
	if (rnn && model > RT_ODE_GHBNODE)
		return "OdeRnn's model must be node, hbnode or ghbnode";
	ode_param ps[ODE_MAX_PARAMS];
	int np = ode_params(model, rnn, 1, 1, augment_of(n), ps);
	if (n->nin != 1 + rnn + np)
		return arena_printf(A, "%s of model %s takes %d inputs (X%s and the parameters), not %d",
				    rnn ? "OdeRnn" : "OdeBlock", ir_attr_string(n, "model", ""), 1 + rnn + np,
				    rnn ? ", dt" : "", n->nin);
	for (int k = 0; k < n->nin; k++)
		if (!n->in[k])
			return "the ODE node's inputs are all required";
	if (rt_ode_tableaus[method].adaptive) {
		if ((e = need(A, n, "rtol", ATTR_FLOAT)) || (e = need(A, n, "atol", ATTR_FLOAT)) ||
		    (e = need(A, n, "max_steps", ATTR_INT)))
			return e;
		double rtol = ir_attr_find(n, "rtol")->f, atol = ir_attr_find(n, "atol")->f;
		if (!(rtol >= 0 && atol >= 0 && rtol + atol > 0))
			return "the ODE node's rtol and atol must be at least 0, not both 0";
		if (ir_attr_int(n, "max_steps", 0) < 1)
			return "the ODE node's max_steps must be at least 1";
		if (ir_attr_find(n, "steps"))
			return "an ODE node with solver dopri5 has a steps attribute (fixed-step solvers only)";
	} else {
		if ((e = need(A, n, "steps", ATTR_INT)))
			return e;
		if (ir_attr_int(n, "steps", 0) < 1)
			return "the ODE node's steps must be at least 1";
		if (ir_attr_find(n, "rtol") || ir_attr_find(n, "atol") || ir_attr_find(n, "max_steps"))
			return "an ODE node with a fixed-step solver has rtol, atol or max_steps (dopri5 only)";
	}
	return NULL;
}

int ode_infer(ir_graph *g, ir_node *n, diag *D)
{
	const char *e = ode_check_node(g->A, n);
	if (e) {
		diag_node(D, n, "%s", e);
		return 1;
	}
	int rnn = n->op == OP_ODERNN, model = rt_ode_model_lookup(ir_attr_string(n, "model", NULL));
	int64_t H = ir_attr_int(n, "hidden", 0);
	const ir_value *x = n->in[0];
	int rank = rnn ? 3 : 2;
	if (x->dtype != DT_F32 || x->shape.rank != rank || !ir_dim_is_const(x->shape.d[rank - 1])) {
		diag_node(D, n, rnn ? "OdeRnn takes X f32 [T, B, I] with a constant I" :
			  "OdeBlock takes X f32 [batch, I] with a constant I");
		return 1;
	}
	if (rnn) {
		const ir_value *dt = n->in[1];
		if (dt->dtype != DT_F32 || dt->shape.rank != 2 || !ir_dim_eq(dt->shape.d[0], x->shape.d[0]) ||
		    !ir_dim_eq(dt->shape.d[1], x->shape.d[1])) {
			diag_node(D, n, "OdeRnn takes dt f32 [T, B], X's first two axes");
			return 1;
		}
	}
	int64_t I = x->shape.d[rank - 1].k;
	ode_param ps[ODE_MAX_PARAMS];
	int np = ode_params(model, rnn, I, H, augment_of(n), ps);
	for (int k = 0; k < np; k++) {
		const ir_value *p = n->in[1 + rnn + k];
		int ok = p->dtype == DT_F32 && p->shape.rank == ps[k].rank;
		for (int d = 0; ok && d < ps[k].rank; d++)
			ok = ir_dim_is_const(p->shape.d[d]) && p->shape.d[d].k == ps[k].dims[d];
		if (!ok) {
			diag_node(D, n, "%s's parameter %s must be f32 [%lld%s%lld]", ir_op_name(n->op), ps[k].name,
				  (long long)ps[k].dims[0], ps[k].rank > 1 ? ", " : "",
				  ps[k].rank > 1 ? (long long)ps[k].dims[1] : 0LL);
			return 1;
		}
	}
	ir_value *y = n->out[0];
	y->dtype = DT_F32;
	y->shape = x->shape;
	y->shape.d[rank - 1] = ir_dim_const(H);
	if (n->nout > 1 && n->out[1]) {
		ir_value *s = n->out[1];
		s->dtype = DT_I64;
		s->shape.rank = 1;
		s->shape.d[0] = ir_dim_const(3);
	}
	return 0;
}
