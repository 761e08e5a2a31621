/* txt_model.c: `model NAME { ... }` blocks -> IR.
 *
 *   input x: f32[seq, batch, 28] [layout batch_first]   graph input; names in the
 *                                                  dims become dimension symbols
 *   weights "FILE"        parameters come from this tensor file (all of them)
 *   seed N                seed of the initialisers otherwise (default 0)
 *   h = CELL(v, k=val..)  a layer: one CELL node (built-in cells, cells.h) or
 *                         one RECURRENCE (cells defined in the file, txt_cell.c)
 *   y = linear(v, out=N[, bias=false])   Gemm over the last axis
 *   y = last(v)           the last time step (Gather on the time axis)
 *   y = softmax(v) | log_softmax | sigmoid | tanh | relu  (also nested)
 *   output a, b
 *
 * Every value remembers its time axis (0, 1, or none after last()), so a
 * stack of layers keeps the input's layout.  Layers and linear heads own
 * parameters named "<statement>.<param>", so they must be the outermost call
 * of their statement.  Parameters without a weights file are initialised
 * here: built-in cells through cell_param_init, linear heads and cells
 * defined in the file with PyTorch's default (U(-1/sqrt(fan), 1/sqrt(fan)),
 * fan = in_features for linear, H for cells), each from an rt_rng seeded
 * with cell_param_seed(seed, statement name, parameter name) -- so a
 * parameter's values depend only on the model seed and its own name.
 */
#include "txt.h"
#include "cellrt.h"
#include "cells.h"
#include "ode.h"
#include "infer.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef struct mval {
	const char *name;
	ir_value *v;
	int seq_axis;           /* 0 or 1; -1: no time axis */
} mval;

typedef struct mctx {
	txt *X;
	ir_graph *g;
	mval *vals;
	int nvals;
	txt_weights W;
	uint64_t seed;
	int have_weights;
	const char *stmt;       /* name of the statement being built */
	int depth;
} mctx;

static mval *lookup(mctx *m, const char *name)
{
	for (int i = 0; i < m->nvals; i++)
		if (strcmp(m->vals[i].name, name) == 0)
			return &m->vals[i];
	return NULL;
}

static void bind(mctx *m, const char *name, ir_value *v, int seq_axis)
{
	m->vals = arena_grow(m->X->A, m->vals, (size_t)m->nvals, (size_t)m->nvals + 1, sizeof *m->vals);
	m->vals[m->nvals++] = (mval){name, v, seq_axis};
}

/* Runs shape inference on a node we built; errors point at `at`. */
static int infer_at(mctx *m, ir_node *n, const txt_tok *at)
{
	diag q;
	diag_init(&q, m->X->path);
	q.quiet = 1;
	if (infer_node(m->g, n, &q) == 0 && q.nerrors == 0)
		return 1;
	const char *msg = strstr(q.last, "error: ");
	txt_error(m->X, at, "%s", msg ? msg + 7 : q.last);
	return 0;
}

static ir_node *node1(mctx *m, ir_op op, ir_value *a, ir_value *b, ir_value *c, const char *outname)
{
	int nin = c ? 3 : b ? 2 : 1;
	ir_node *n = ir_node_new(m->g, op, NULL, nin, 1);
	n->in[0] = a;
	if (b)
		n->in[1] = b;
	if (c)
		n->in[2] = c;
	n->out[0] = ir_value_new(m->g, outname, VAL_TEMP, DT_UNDEF);
	return n;
}

/* ---- parameters ---- */

static ir_value *new_param(mctx *m, const char *layer, const char *pname, int rank, const int64_t *dims,
			   const txt_tok *at, int *from_file)
{
	const char *name = arena_printf(m->X->A, "%s.%s", layer, pname);
	if (ir_find_value(m->g, name)) {
		txt_error(m->X, at, "parameter '%s' defined twice", name);
		return NULL;
	}
	ir_value *w = ir_value_new(m->g, name, VAL_WEIGHT, DT_F32);
	w->shape.rank = rank;
	int64_t n = 1;
	for (int i = 0; i < rank; i++) {
		w->shape.d[i] = ir_dim_const(dims[i]);
		n *= dims[i];
	}
	*from_file = 0;
	if (!txt_budget_ok(m->X, at, n, sizeof(float), name))
		return NULL;
	if (m->have_weights) {
		int r = txt_weights_fill(m->X, &m->W, w, at, 1);
		if (r <= 0)
			return NULL;
		*from_file = 1;
	} else {
		w->data = arena_alloc(m->X->A, (size_t)n * sizeof(float) + 1);
	}
	return w;
}

static void init_uniform(ir_value *w, uint64_t seed, float bound)
{
	rt_rng r;
	rt_rng_seed(&r, seed);
	rt_init_uniform(w->data, ir_shape_const_numel(&w->shape), bound, &r);
}

ir_value *txt_model_param(txt *X, ir_graph *g, txt_layer *L, const char *pname, int rank,
			  const int64_t *dims, const txt_tok *at, int64_t fan)
{
	mctx m = {.X = X, .g = g, .W = *L->W, .have_weights = L->W->tf != NULL};
	int from_file;
	ir_value *w = new_param(&m, L->name, pname, rank, dims, at, &from_file);
	if (w && !from_file)
		init_uniform(w, cell_param_seed(L->seed, L->name, pname), 1.0f / sqrtf((float)fan));
	return w;
}

/* ---- call arguments ---- */

static ir_value *expr(mctx *m, int *seq_axis, const txt_tok **at);

/* key=value options after the first argument. */
static int parse_opts(mctx *m, txt_opt **opts, int *nopts)
{
	txt *X = m->X;
	*opts = NULL;
	*nopts = 0;
	while (txt_accept(X, ',')) {
		const txt_tok *k = txt_peek(X);
		if (k->kind != TK_IDENT || !txt_is_punct(txt_peek_at(X, 1), '=')) {
			txt_error(X, k, "expected an option 'name=value', found %s", txt_tok_desc(X, k));
			return 0;
		}
		txt_next(X);
		txt_next(X);
		txt_opt o = {.name = k->str, .at = k};
		const txt_tok *v = txt_peek(X);
		if (v->kind == TK_STRING || (v->kind == TK_IDENT && !txt_is_word(v, "inf") &&
					     !txt_is_word(v, "nan"))) {
			txt_next(X);
			o.is_string = 1;
			o.s = v->str;
		} else if (!txt_parse_number(X, &o.num, &o.is_float, "an option value")) {
			return 0;
		}
		for (int i = 0; i < *nopts; i++)
			if (strcmp((*opts)[i].name, o.name) == 0) {
				txt_error(X, k, "option '%s' given twice", o.name);
				return 0;
			}
		*opts = arena_grow(X->A, *opts, (size_t)*nopts, (size_t)*nopts + 1, sizeof **opts);
		(*opts)[(*nopts)++] = o;
	}
	return txt_expect(X, ')', "to close the call");
}

static txt_opt *find_opt(txt_opt *o, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(o[i].name, name) == 0)
			return &o[i];
	return NULL;
}

/* ---- layers of built-in cells ---- */

static ir_value *builtin_layer(mctx *m, const cell_def *def, const txt_tok *at, ir_value *x, int ax,
			       txt_opt *opts, int nopts)
{
	txt *X = m->X;
	char err[400];
	int bad = 0;
	ir_node *n = ir_node_new(m->g, OP_CELL, m->stmt, 1, 1);
	ir_attr_set_string(n, "cell", cell_name(def));
	for (int i = 0; i < nopts; i++) {
		txt_opt *o = &opts[i];
		if (cell_check_option(def, o->name, o->num, o->is_string ? o->s : NULL, err, sizeof err)) {
			txt_error(X, o->at, "%s", err);
			bad = 1;
			continue;
		}
		if (o->is_string) {
			ir_attr_set_string(n, o->name, o->s);
			continue;
		}
		const cell_option *co;
		int nco = cell_options(def, &co), isint = !strcmp(o->name, "hidden");
		for (int k = 0; k < nco; k++)
			if (!strcmp(co[k].name, o->name) && co[k].kind == CELL_OPT_INT)
				isint = 1;
		if (isint && (o->num != floor(o->num) || fabs(o->num) > 1e15)) {
			txt_error(X, o->at, "option '%s' must be an integer", o->name);
			bad = 1;
		} else if (isint) {
			ir_attr_set_int(n, o->name, (int64_t)o->num);
		} else {
			ir_attr_set_float(n, o->name, o->num);
		}
	}
	if (!find_opt(opts, nopts, "hidden")) {
		txt_error(X, at, "%s needs the option hidden=N (the state size)", cell_name(def));
		return NULL;
	}
	if (bad)
		return NULL;
	int64_t H = ir_attr_int(n, "hidden", 0);
	if (H < 1 || H > (1 << 20)) {
		txt_error(X, find_opt(opts, nopts, "hidden")->at, "hidden must be between 1 and %d", 1 << 20);
		return NULL;
	}
	int64_t I = x->shape.d[2].k;
	cell_param ps[CELL_MAX_PARAMS];
	cell_state ss[CELL_MAX_STATES];
	int np = cell_params(def, n, I, H, ps, CELL_MAX_PARAMS);
	int ns = cell_states(def, n, I, H, ss, CELL_MAX_STATES);
	if (np < 0 || ns < 0) {
		diag q;
		diag_init(&q, X->path);
		q.quiet = 1;
		cell_check_options(def, n, &q);
		const char *msg = strstr(q.last, "error: ");
		txt_error(X, at, "invalid options for %s%s%s", cell_name(def), msg ? ": " : "",
			  msg ? msg + 7 : "");
		return NULL;
	}
	ir_attr_set_int(n, "n_params", np);
	ir_attr_set_int(n, "n_states", ns);
	ir_attr_set_int(n, "seq_axis", ax);
	n->nin = 1 + ns + np;
	n->nout = 1 + ns;
	n->in = arena_array(m->g->A, (size_t)n->nin, sizeof *n->in);
	n->out = arena_array(m->g->A, (size_t)n->nout, sizeof *n->out);
	n->in[0] = x;
	for (int k = 0; k < np; k++) {
		int from_file;
		ir_value *w = new_param(m, m->stmt, ps[k].name, ps[k].rank, ps[k].dims, at, &from_file);
		if (!w)
			return NULL;
		w->frozen = ps[k].fixed;
		if (!from_file && cell_param_init(def, n, I, H, &ps[k],
						  cell_param_seed(m->seed, m->stmt, ps[k].name), w->data)) {
			txt_error(X, at, "could not initialise parameter %s.%s", m->stmt, ps[k].name);
			return NULL;
		}
		n->in[1 + ns + k] = w;
	}
	ir_value *y = ir_value_new(m->g, m->stmt, VAL_TEMP, x->dtype);
	y->shape = x->shape;
	y->shape.d[2] = ir_dim_const(H);
	n->out[0] = y;
	ir_append(m->g, n);
	return y;
}

/* ---- ODE blocks (ode.h) ---- */

/* A block (dt NULL: x [batch, I]) or an ODE-RNN hybrid (x [T, B, I], dt [T, B]). */
static ir_value *ode_block(mctx *m, const txt_tok *at, ir_value *x, int ax, ir_value *dt, txt_opt *opts,
			   int nopts)
{
	txt *X = m->X;
	char err[400];
	int rnn = dt != NULL;
	if (m->depth > 1) {
		txt_error(X, at, "an ODE block must be the outermost call of its statement (its parameters "
			  "are named after the statement): write 'NAME = %s(...)' on its own line", at->str);
		return NULL;
	}
	if (!rnn && (x->shape.rank != 2 || !ir_dim_is_const(x->shape.d[1]) || x->shape.d[1].k < 1)) {
		txt_error(X, at, "%s maps x [batch, I] (I constant) to its initial state; its input is %s%s",
			  at->str, ir_shape_str(X->A, m->g, &x->shape),
			  x->shape.rank == 3 ? ", a sequence (the ODE-RNN hybrids are NAME_rnn(x, dt, ...))" : "");
		return NULL;
	}
	if (rnn && (x->shape.rank != 3 || ax != 0 || !ir_dim_is_const(x->shape.d[2]) || x->shape.d[2].k < 1)) {
		txt_error(X, at, "%s runs over a sequence x [T, B, I] (time first, I constant); its input is %s",
			  at->str, ir_shape_str(X->A, m->g, &x->shape));
		return NULL;
	}
	if (rnn && (dt->dtype != DT_F32 || dt->shape.rank != 2 || !ir_dim_eq(dt->shape.d[0], x->shape.d[0]) ||
		    !ir_dim_eq(dt->shape.d[1], x->shape.d[1]))) {
		txt_error(X, at, "%s takes the gaps dt f32 [T, B] of its input %s; dt is %s %s", at->str,
			  ir_shape_str(X->A, m->g, &x->shape), ir_dtype_name(dt->dtype),
			  ir_shape_str(X->A, m->g, &dt->shape));
		return NULL;
	}
	if (x->dtype != DT_F32) {
		txt_error(X, at, "%s takes f32 input", at->str);
		return NULL;
	}
	ode_opt *oo = arena_array(X->A, (size_t)(nopts ? nopts : 1), sizeof *oo);
	int bad = 0;
	for (int i = 0; i < nopts; i++) {
		txt_opt *o = &opts[i];
		if (ode_check_option(o->name, o->num, o->is_string ? o->s : NULL, err, sizeof err)) {
			txt_error(X, o->at, "%s", err);
			bad = 1;
		}
		oo[i] = (ode_opt){o->name, o->num, o->is_string ? o->s : NULL};
	}
	if (bad)
		return NULL;
	int model = rnn ? ode_rnn_model(at->str) : rt_ode_model_lookup(at->str);
	static const char *const model_names[] = {"node", "hbnode", "ghbnode", "anode", "sonode"};
	ir_node *n = ir_node_new(m->g, rnn ? OP_ODERNN : OP_ODEBLOCK, m->stmt, 1, 2);
	ir_attr_set_string(n, "model", model_names[model]);
	if (ode_set_attrs(n, oo, nopts, err, sizeof err)) {
		txt_error(X, at, "%s", err);
		return NULL;
	}
	int64_t I = x->shape.d[x->shape.rank - 1].k, H = ir_attr_int(n, "hidden", 0);
	if (H > (1 << 20)) {
		txt_error(X, at, "hidden must be between 1 and %d", 1 << 20);
		return NULL;
	}
	ode_param ps[ODE_MAX_PARAMS];
	int np = ode_params(model, rnn, I, H, ir_attr_int(n, "augment", 0), ps);
	n->nin = 1 + rnn + np;
	n->in = arena_array(m->g->A, (size_t)n->nin, sizeof *n->in);
	n->in[0] = x;
	if (rnn)
		n->in[1] = dt;
	for (int k = 0; k < np; k++) {
		int from_file;
		ir_value *w = new_param(m, m->stmt, ps[k].name, ps[k].rank, ps[k].dims, at, &from_file);
		if (!w)
			return NULL;
		if (!from_file)
			ode_param_init(&ps[k], H, cell_param_seed(m->seed, m->stmt, ps[k].name), w->data);
		n->in[1 + rnn + k] = w;
	}
	n->out[0] = ir_value_new(m->g, m->stmt, VAL_TEMP, DT_UNDEF);
	n->out[1] = ir_value_new(m->g, arena_printf(X->A, "%s.stats", m->stmt), VAL_TEMP, DT_UNDEF);
	if (!infer_at(m, n, at))
		return NULL;
	ir_append(m->g, n);
	return n->out[0];
}

/* ode_stats(h): the stats output of the ODE block that made h */
static ir_value *ode_stats(mctx *m, const txt_tok *at, ir_value *x)
{
	for (int i = 0; i < m->g->nnodes; i++) {
		ir_node *n = m->g->nodes[i];
		if ((n->op == OP_ODEBLOCK || n->op == OP_ODERNN) && n->out[0] == x) {
			/* the statement's name names the output, as for any other value */
			if (m->depth == 1 && !ir_find_value(m->g, m->stmt) && !strcmp(n->out[1]->name,
			    arena_printf(m->X->A, "%s.stats", n->out[0]->name)))
				n->out[1]->name = m->stmt;
			return n->out[1];
		}
	}
	txt_error(m->X, at, "ode_stats() takes the value of an ODE block or hybrid (node, hbnode_rnn, ...) itself");
	return NULL;
}

static ir_value *layer(mctx *m, const txt_tok *at, ir_value *x, int ax, txt_opt *opts, int nopts)
{
	txt *X = m->X;
	if (m->depth > 1) {
		txt_error(X, at, "a layer must be the outermost call of its statement (its parameters "
			  "are named after the statement): write 'NAME = %s(...)' on its own line", at->str);
		return NULL;
	}
	if (ax < 0 || x->shape.rank != 3) {
		txt_error(X, at, "%s runs over a sequence [T, B, I] (or [B, T, I]); its input is %s%s", at->str,
			  ir_shape_str(X->A, m->g, &x->shape), ax < 0 ? " without a time axis" : "");
		return NULL;
	}
	if (!ir_dim_is_const(x->shape.d[2]) || x->shape.d[2].k < 1) {
		txt_error(X, at, "%s needs a constant input size; its input is %s", at->str,
			  ir_shape_str(X->A, m->g, &x->shape));
		return NULL;
	}
	const cell_def *def = cell_find(at->str);
	if (def)
		return builtin_layer(m, def, at, x, ax, opts, nopts);
	txt_celldef *c = txt_find_cell(X, at->str);
	ASSERT(c);
	txt_layer L = {m->stmt, at, x, ax, opts, nopts, &m->W, m->seed, NULL};
	ir_value *y = txt_cell_apply(X, m->g, c, &L);
	for (int i = 0; y && i < nopts; i++)
		if (!opts[i].used) {
			txt_error(X, opts[i].at, "cell '%s' has no option '%s'", c->name, opts[i].name);
			y = NULL;
		}
	return y;
}

/* ---- linear heads, last, activations ---- */

static ir_value *linear(mctx *m, const txt_tok *at, ir_value *x, txt_opt *opts, int nopts)
{
	txt *X = m->X;
	if (m->depth > 1) {
		txt_error(X, at, "linear must be the outermost call of its statement (its parameters are "
			  "named after the statement)");
		return NULL;
	}
	txt_opt *out = NULL, *bias = NULL;
	for (int i = 0; i < nopts; i++) {
		if (!strcmp(opts[i].name, "out"))
			out = &opts[i];
		else if (!strcmp(opts[i].name, "bias"))
			bias = &opts[i];
		else {
			txt_error(X, opts[i].at, "unknown option '%s' for linear (options: out, bias)",
				  opts[i].name);
			return NULL;
		}
	}
	if (!out || out->is_string || out->num != floor(out->num) || out->num < 1 || out->num > (1 << 24)) {
		txt_error(X, out ? out->at : at, "linear needs out=N, a positive integer");
		return NULL;
	}
	int has_bias = 1;
	if (bias) {
		if (!bias->is_string || (strcmp(bias->s, "true") && strcmp(bias->s, "false"))) {
			txt_error(X, bias->at, "bias is true or false");
			return NULL;
		}
		has_bias = !strcmp(bias->s, "true");
	}
	int r = x->shape.rank;
	if (r < 1 || !ir_dim_is_const(x->shape.d[r - 1]) || x->shape.d[r - 1].k < 1) {
		txt_error(X, at, "linear needs a constant last dimension; its input is %s",
			  ir_shape_str(X->A, m->g, &x->shape));
		return NULL;
	}
	int64_t in = x->shape.d[r - 1].k, N = (int64_t)out->num;
	int ff, fb = 0;
	int64_t wd[2] = {N, in};
	ir_value *W = new_param(m, m->stmt, "weight", 2, wd, at, &ff);
	ir_value *b = has_bias ? new_param(m, m->stmt, "bias", 1, &N, at, &fb) : NULL;
	if (!W || (has_bias && !b))
		return NULL;
	float bound = 1.0f / sqrtf((float)in);
	if (!ff)
		init_uniform(W, cell_param_seed(m->seed, m->stmt, "weight"), bound);
	if (b && !fb)
		init_uniform(b, cell_param_seed(m->seed, m->stmt, "bias"), bound);
	ir_value *a = x;
	if (r == 1) {
		txt_error(X, at, "linear needs at least [batch, features]; its input is %s",
			  ir_shape_str(X->A, m->g, &x->shape));
		return NULL;
	}
	if (r > 2) {
		ir_node *f = node1(m, OP_FLATTEN, x, NULL, NULL, NULL);
		ir_attr_set_int(f, "axis", r - 1);
		if (!infer_at(m, f, at))
			return NULL;
		ir_append(m->g, f);
		a = f->out[0];
	}
	ir_node *gm = node1(m, OP_GEMM, a, W, b, r > 2 ? NULL : m->stmt);
	ir_attr_set_int(gm, "transB", 1);
	if (!infer_at(m, gm, at))
		return NULL;
	ir_append(m->g, gm);
	if (r == 2)
		return gm->out[0];
	/* back to the input's leading dims: a shape constant, symbolic where they are */
	ir_dim d[IR_MAX_RANK];
	int symbolic = 0;
	for (int i = 0; i < r; i++) {
		d[i] = i == r - 1 ? ir_dim_const(N) : x->shape.d[i];
		symbolic |= !ir_dim_is_const(d[i]);
	}
	ir_value *shp;
	if (!symbolic) {
		int64_t v[IR_MAX_RANK];
		for (int i = 0; i < r; i++)
			v[i] = d[i].k;
		shp = ir_const_i64(m->g, NULL, r, v);
	} else {
		shp = ir_value_new(m->g, NULL, VAL_CONST, DT_I64);
		shp->shape.rank = 1;
		shp->shape.d[0] = ir_dim_const(r);
		shp->sym = arena_array(m->g->A, (size_t)r, sizeof *shp->sym);
		memcpy(shp->sym, d, (size_t)r * sizeof *d);
	}
	ir_node *rs = node1(m, OP_RESHAPE, gm->out[0], shp, NULL, m->stmt);
	if (!infer_at(m, rs, at))
		return NULL;
	ir_append(m->g, rs);
	return rs->out[0];
}

static const struct {
	const char *name;
	ir_op op;
} act_fns[] = {
	{"sigmoid", OP_SIGMOID}, {"tanh", OP_TANH}, {"relu", OP_RELU}, {"exp", OP_EXP},
	{"log", OP_LOG}, {"abs", OP_ABS}, {"neg", OP_NEG}, {"softplus", OP_SOFTPLUS},
	{"softsign", OP_SOFTSIGN}, {"softmax", OP_SOFTMAX}, {"log_softmax", OP_LOGSOFTMAX},
};

static ir_value *call(mctx *m, const txt_tok *fn, int *seq_axis)
{
	txt *X = m->X;
	txt_next(X);    /* name */
	txt_next(X);    /* ( */
	const txt_tok *at;
	ir_value *x = expr(m, seq_axis, &at);
	if (!x)
		return NULL;
	ir_value *dt = NULL;
	if (ode_rnn_model(fn->str) >= 0) {      /* hybrids take the gaps second */
		int dax;
		const txt_tok *dat;
		if (!txt_expect(X, ',', "and the gaps dt: NAME_rnn(x, dt, ...)"))
			return NULL;
		if (txt_is_punct(txt_peek_at(X, 1), '=')) {
			txt_error(X, txt_peek(X), "%s takes the gaps dt [T, B] second: %s(x, dt, option=value, ...)",
				  fn->str, fn->str);
			return NULL;
		}
		if (!(dt = expr(m, &dax, &dat)))
			return NULL;
	}
	txt_opt *opts;
	int nopts;
	if (!parse_opts(m, &opts, &nopts))
		return NULL;
	const char *name = fn->str;
	if (cell_find(name) || txt_find_cell(X, name)) {
		ir_value *y = layer(m, fn, x, *seq_axis, opts, nopts);
		return y;
	}
	if (ode_is_block(name) || dt)
		return ode_block(m, fn, x, *seq_axis, dt, opts, nopts);
	if (!strcmp(name, "linear"))
		return linear(m, fn, x, opts, nopts);
	if (nopts) {
		txt_error(X, opts[0].at, "%s takes no options", name);
		return NULL;
	}
	const char *outname = m->depth == 1 ? m->stmt : NULL;
	if (!strcmp(name, "ode_stats"))
		return ode_stats(m, fn, x);
	if (!strcmp(name, "last")) {
		if (*seq_axis < 0) {
			txt_error(X, fn, "last() needs a sequence; this value has no time axis");
			return NULL;
		}
		ir_shape s0 = {.rank = 0};
		int64_t minus1 = -1;
		ir_value *idx = ir_const_new(m->g, NULL, DT_I64, &s0, &minus1);
		ir_node *n = node1(m, OP_GATHER, x, idx, NULL, outname);
		ir_attr_set_int(n, "axis", *seq_axis);
		if (!infer_at(m, n, fn))
			return NULL;
		ir_append(m->g, n);
		*seq_axis = -1;
		return n->out[0];
	}
	for (size_t i = 0; i < COUNTOF(act_fns); i++)
		if (!strcmp(name, act_fns[i].name)) {
			ir_node *n = node1(m, act_fns[i].op, x, NULL, NULL, outname);
			if (act_fns[i].op == OP_SOFTMAX || act_fns[i].op == OP_LOGSOFTMAX)
				ir_attr_set_int(n, "axis", -1);
			if (!infer_at(m, n, fn))
				return NULL;
			ir_append(m->g, n);
			return n->out[0];
		}
	UNREACHABLE();
}

static int known_fn(txt *X, const char *name)
{
	if (cell_find(name) || txt_find_cell(X, name) || !strcmp(name, "linear") || !strcmp(name, "last") ||
	    ode_is_block(name) || ode_rnn_model(name) >= 0 || !strcmp(name, "ode_stats"))
		return 1;
	for (size_t i = 0; i < COUNTOF(act_fns); i++)
		if (!strcmp(name, act_fns[i].name))
			return 1;
	return 0;
}

/* expr := NAME | FN '(' expr {',' key '=' value} ')' */
static ir_value *expr(mctx *m, int *seq_axis, const txt_tok **at)
{
	txt *X = m->X;
	const txt_tok *t = txt_peek(X);
	*at = t;
	if (m->depth > 32) {
		txt_error(X, t, "calls nested too deeply");
		return NULL;
	}
	if (t->kind != TK_IDENT) {
		txt_error(X, t, "expected a value or a call, found %s", txt_tok_desc(X, t));
		return NULL;
	}
	if (txt_is_punct(txt_peek_at(X, 1), '(')) {
		if (!known_fn(X, t->str)) {
			txt_error(X, t, "unknown cell or function '%s' (cells: lstm, gru, rnn, momentum_lstm, "
				  "...; functions: linear, last, softmax, log_softmax, sigmoid, tanh, relu)",
				  t->str);
			return NULL;
		}
		m->depth++;
		ir_value *v = call(m, t, seq_axis);
		m->depth--;
		return v;
	}
	txt_next(X);
	mval *v = lookup(m, t->str);
	if (!v) {
		txt_error(X, t, "'%s' is not defined (an input or an earlier statement)", t->str);
		return NULL;
	}
	if (!v->v)      /* its statement failed and said why */
		return NULL;
	*seq_axis = v->seq_axis;
	return v->v;
}

/* ---- statements ---- */

static int is_reserved(const char *s)
{
	static const char *const kw[] = {"input", "output", "weights", "seed", "model", "graph", "cell"};
	for (size_t i = 0; i < COUNTOF(kw); i++)
		if (!strcmp(s, kw[i]))
			return 1;
	return 0;
}

static void stmt_input(mctx *m)
{
	txt *X = m->X;
	const txt_tok *nt = txt_peek(X);
	const char *name = txt_expect_ident(X, "the input's name");
	ir_dtype dt;
	ir_shape s;
	if (!name || !txt_expect(X, ':', "before the input's type") ||
	    !txt_parse_type(X, m->g, &dt, &s, 1)) {
		txt_skip_line(X);
		return;
	}
	int ax = 0;
	if (txt_accept_word(X, "layout")) {
		const txt_tok *l = txt_peek(X);
		if (txt_accept_word(X, "batch_first"))
			ax = 1;
		else if (!txt_accept_word(X, "seq_first")) {
			txt_error(X, l, "layout is seq_first ([T, B, ...], the default) or batch_first ([B, T, ...])");
			txt_skip_line(X);
			return;
		}
	}
	if (!txt_end_stmt(X))
		return;
	if (dt == DT_UNDEF || s.rank < 0) {
		txt_error(X, nt, "an input needs a dtype and a shape");
		return;
	}
	for (int i = 0; i < s.rank; i++)
		if (!ir_dim_known(s.d[i])) {
			txt_error(X, nt, "input dimensions are integers or symbol names, not '?'");
			return;
		}
	if (lookup(m, name) || strchr(name, '\'')) {
		txt_error(X, nt, "'%s' is already defined", name);
		return;
	}
	ir_value *v = ir_value_new(m->g, name, VAL_INPUT, dt);
	v->shape = s;
	m->g->inputs = arena_grow(X->A, m->g->inputs, (size_t)m->g->ninputs, (size_t)m->g->ninputs + 1,
				  sizeof *m->g->inputs);
	m->g->inputs[m->g->ninputs++] = v;
	bind(m, name, v, s.rank >= 2 ? ax : -1);
}

static void stmt_assign(mctx *m)
{
	txt *X = m->X;
	const txt_tok *nt = txt_next(X);
	txt_next(X);    /* = */
	if (lookup(m, nt->str) || strchr(nt->str, '\'') || is_reserved(nt->str)) {
		txt_error(X, nt, "'%s' is already defined or reserved; every statement defines a new name",
			  nt->str);
		txt_skip_line(X);
		return;
	}
	m->stmt = nt->str;
	m->depth = 0;
	int ax = -1;
	const txt_tok *at;
	if (!txt_is_punct(txt_peek_at(X, 1), '(')) {
		txt_error(X, txt_peek(X), "expected a call such as lstm(x, hidden=32) or linear(h, out=10)");
		txt_skip_line(X);
		return;
	}
	ir_value *v = expr(m, &ax, &at);
	if (!v) {
		/* bound to nothing, so that later uses do not add "not defined" */
		bind(m, nt->str, NULL, -1);
		txt_skip_line(X);
		return;
	}
	if (!txt_end_stmt(X))
		return;
	bind(m, nt->str, v, ax);
}

static void stmt_output(mctx *m, const txt_tok *kw)
{
	txt *X = m->X;
	if (m->g->noutputs) {
		txt_error(X, kw, "a model has one 'output' line (list every output on it)");
		txt_skip_line(X);
		return;
	}
	ir_value *outs[256];
	int n = 0;
	do {
		const txt_tok *t = txt_peek(X);
		const char *name = txt_expect_ident(X, "an output name");
		if (!name) {
			txt_skip_line(X);
			return;
		}
		mval *v = lookup(m, name);
		if (!v) {
			txt_error(X, t, "'%s' is not defined", name);
			continue;
		}
		if (!v->v)      /* its statement failed */
			continue;
		if (v->v->kind == VAL_INPUT) {
			txt_error(X, t, "'%s' is an input; outputs are computed values", name);
			continue;
		}
		if (n == (int)COUNTOF(outs)) {
			txt_error(X, t, "too many outputs");
			break;
		}
		for (int i = 0; i < n; i++)
			if (outs[i] == v->v) {
				txt_error(X, t, "'%s' listed twice", name);
				v = NULL;
				break;
			}
		if (v)
			outs[n++] = v->v;
	} while (txt_accept(X, ','));
	if (!txt_end_stmt(X))
		return;
	m->g->outputs = arena_array(X->A, (size_t)(n ? n : 1), sizeof *outs);
	memcpy(m->g->outputs, outs, (size_t)n * sizeof *outs);
	m->g->noutputs = n;
	for (int i = 0; i < n; i++)
		outs[i]->is_output = 1;
}

ir_graph *txt_model_block(txt *X)
{
	mctx m0 = {0}, *m = &m0;
	m->X = X;
	txt_accept_word(X, "model");
	const txt_tok *nt = txt_peek(X);
	const char *name = txt_expect_ident(X, "the model's name");
	if (!name)
		return NULL;
	m->g = ir_graph_new(X->A, NULL, name);
	m->g->opset = 17;
	m->g->producer = "cellc .cell";
	if (!txt_expect(X, '{', "to open the model"))
		return NULL;
	int statements = 0;
	while (txt_peek(X)->kind != TK_EOF && !txt_is_punct(txt_peek(X), '}')) {
		const txt_tok *t = txt_peek(X);
		X->stmt_start = X->pos;
		if (!t->nl) {
			txt_error(X, t, "expected a new line before %s", txt_tok_desc(X, t));
			txt_skip_line(X);
			continue;
		}
		if (m->g->noutputs && !txt_is_word(t, "output")) {
			txt_error(X, t, "the 'output' line ends the model");
			txt_skip_line(X);
			continue;
		}
		if (txt_accept_word(X, "input")) {
			if (statements) {
				txt_error(X, t, "inputs come before the layers");
				txt_skip_line(X);
				continue;
			}
			stmt_input(m);
		} else if (txt_accept_word(X, "weights")) {
			const txt_tok *s = txt_peek(X);
			if (s->kind != TK_STRING) {
				txt_error(X, s, "expected the weights file's name (a string)");
				txt_skip_line(X);
				continue;
			}
			txt_next(X);
			if (m->have_weights || statements)
				txt_error(X, t, "'weights' comes once, before the layers");
			else if (txt_weights_open(X, &m->W, s))
				m->have_weights = 1;
			txt_end_stmt(X);
		} else if (txt_accept_word(X, "seed")) {
			int64_t v;
			if (txt_parse_int(X, &v, "the seed")) {
				if (statements)
					txt_error(X, t, "'seed' comes before the layers");
				m->seed = (uint64_t)v;
			}
			txt_end_stmt(X);
		} else if (txt_accept_word(X, "output")) {
			stmt_output(m, t);
		} else if (t->kind == TK_IDENT && txt_is_punct(txt_peek_at(X, 1), '=')) {
			statements++;
			stmt_assign(m);
		} else {
			txt_error(X, t, "expected 'input', 'weights', 'seed', 'NAME = ...' or 'output', found %s",
				  txt_tok_desc(X, t));
			txt_skip_line(X);
		}
	}
	const txt_tok *end = txt_peek(X);
	txt_expect(X, '}', "to close the model");
	txt_weights_close(&m->W);
	if (X->D->nerrors > X->errors_at_start)
		return NULL;
	if (!m->g->noutputs) {
		txt_error(X, end, "model '%s' has no 'output' line", name);
		return NULL;
	}
	(void)nt;
	ir_recount(m->g);
	return m->g;
}
