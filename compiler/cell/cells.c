/* cells.c: the built-in cells of docs/cells.md -- options, parameters, states,
 * initialisers and the lowering of a CELL node to a RECURRENCE.
 *
 * The math is documented once, in cells.h; this file implements exactly that.
 * Every base cell (rnn, lstm, gru, dtriv) is crossed with every input dynamic
 * (plain, momentum, nag, adam, rmsprop); irnn, momentum_attention,
 * heavy_ball_rnn and fastrnn stand alone.
 *
 * The lowering builds the step body from plain IR so that the generic passes
 * make it fast: the input projection u = x W_x^T + b_x is a body GEMM of the
 * per-step input (pass_hoist moves it before the loop as one GEMM over T*B
 * rows), the recurrent product is one GEMM of the state, and everything else
 * is element-wise over [B, H] gate blocks (Slices on the last axis of the
 * products are column offsets), which pass_fuse puts into one loop.  That is
 * why a dynamic's [B, G] state (v, m, q) is carried as one [B, H] state per
 * gate block: the whole step stays one fused loop over [B, H], and the CELL
 * node's [B, G] initial/final states are cut/joined outside the loop.
 * Step schedules (NAG's mu_t, attention's length weights) are rank-0 values
 * of the step number (RECURRENCE has_step), computed once per step.
 */
#include "cells.h"
#include "cellrt.h"
#include "infer.h"
#include "ir_build.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table --------------------------------------------------------------- */

typedef enum { K_RNN, K_LSTM, K_GRU, K_DTRIV, K_IRNN, K_ATTN, K_HB, K_FAST } cell_kind;
typedef enum { D_PLAIN, D_MOMENTUM, D_NAG, D_ADAM, D_RMSPROP, D_NONE } cell_dyn;

static const char *const base_names[] = {"rnn", "lstm", "gru", "dtriv"};
static const char *const dyn_names[] = {"plain", "momentum", "nag", "adam", "rmsprop"};

enum { MAX_OPTS = 16 };

struct cell_def {
	char name[32];
	cell_kind kind;
	cell_dyn dyn;
	cell_option opts[MAX_OPTS];
	int nopts;
	char doc[768];
};

enum { NCELLS = 4 * 5 + 4 };
static cell_def cells[NCELLS];
static int ncells;

static const char *const init_words = "pytorch|reference|orthogonal|eye|kaiming|sparse|echo";

static void add_opt(cell_def *c, const char *name, cell_optkind kind, double def, const char *words,
		    const char *doc)
{
	ASSERT(c->nopts < MAX_OPTS);
	c->opts[c->nopts++] = (cell_option){name, kind, def, words, doc};
}

static void build_table(void)
{
	if (ncells)
		return;
	for (int b = 0; b < 4; b++)
		for (int d = 0; d < 5; d++) {
			cell_def *c = &cells[ncells++];
			snprintf(c->name, sizeof c->name, "%s_%s", dyn_names[d], base_names[b]);
			c->kind = (cell_kind)b;
			c->dyn = (cell_dyn)d;
		}
	const char *other[] = {"irnn", "momentum_attention", "heavy_ball_rnn", "fastrnn"};
	for (int i = 0; i < 4; i++) {
		cell_def *c = &cells[ncells++];
		snprintf(c->name, sizeof c->name, "%s", other[i]);
		c->kind = (cell_kind)(K_IRNN + i);
		c->dyn = D_NONE;
	}
	for (int i = 0; i < ncells; i++) {
		cell_def *c = &cells[i];
		add_opt(c, "hidden", CELL_OPT_INT, 0, NULL, "hidden size H (required)");
		add_opt(c, "init", CELL_OPT_WORD, 0, init_words, "initialiser of the parameters");
		if (c->kind == K_LSTM)
			add_opt(c, "fg_init", CELL_OPT_NUM, 1.0, NULL, "forget-gate bias (b_x and b_h)");
		if (c->kind == K_RNN)
			add_opt(c, "act", CELL_OPT_WORD, 0, "tanh|relu", "activation");
		switch (c->dyn) {
		case D_MOMENTUM:
			add_opt(c, "mu", CELL_OPT_NUM, 0.6, NULL, "momentum");
			add_opt(c, "s", CELL_OPT_NUM, 0.6, NULL, "step size");
			break;
		case D_NAG:
			add_opt(c, "s", CELL_OPT_NUM, 0.6, NULL, "step size");
			add_opt(c, "restart", CELL_OPT_INT, 0, NULL, "restart period F (0: never)");
			add_opt(c, "form", CELL_OPT_WORD, 0, "momentum|extrapolate", "NAG form");
			break;
		case D_ADAM:
			add_opt(c, "mu", CELL_OPT_NUM, 0.6, NULL, "momentum");
			/* fall through */
		case D_RMSPROP:
			add_opt(c, "s", CELL_OPT_NUM, 0.6, NULL, "step size");
			add_opt(c, "beta", CELL_OPT_NUM, 0.999, NULL, "running-square decay");
			add_opt(c, "eps", CELL_OPT_NUM, 1e-16, NULL, "added inside the square root");
			break;
		default:
			break;
		}
		switch (c->kind) {
		case K_IRNN:
			add_opt(c, "K", CELL_OPT_INT, 1, NULL, "inner steps (1: SiRNN)");
			add_opt(c, "g0", CELL_OPT_WORD, 0, "h|zero", "start of the inner steps");
			add_opt(c, "alpha", CELL_OPT_NUM, 1.0, NULL, "decay");
			add_opt(c, "act", CELL_OPT_WORD, 0, "relu|tanh", "activation");
			break;
		case K_ATTN:
			add_opt(c, "key", CELL_OPT_INT, 0, NULL, "key size dk (0: hidden)");
			add_opt(c, "mu", CELL_OPT_NUM, 0.6, NULL, "momentum");
			add_opt(c, "s", CELL_OPT_NUM, 0.6, NULL, "step size");
			add_opt(c, "weighting", CELL_OPT_WORD, 0, "recurrent|length", "key weighting");
			break;
		case K_HB:
			add_opt(c, "steps", CELL_OPT_INT, 1, NULL, "explicit Euler steps per input");
			add_opt(c, "act", CELL_OPT_WORD, 0, "identity|tanh", "h' = act(m): HB or generalised HB");
			break;
		default:
			break;
		}
		char doc[sizeof c->doc];
		char *p = doc;
		size_t left = sizeof doc;
		int w = snprintf(p, left, "%s: options", c->name);
		for (int k = 0; k < c->nopts && w > 0 && (size_t)w < left; k++) {
			const cell_option *o = &c->opts[k];
			p += w;
			left -= (size_t)w;
			if (o->kind == CELL_OPT_WORD)
				w = snprintf(p, left, " %s=%s", o->name, o->words);
			else if (!strcmp(o->name, "hidden"))
				w = snprintf(p, left, " hidden (required)");
			else
				w = snprintf(p, left, " %s=%g", o->name, o->def);
		}
		if (w > 0 && (size_t)w < left)
			snprintf(p + w, left - (size_t)w, "; equations: see cells.h");
		memcpy(c->doc, doc, sizeof doc);
	}
}

const cell_def *cell_find(const char *name)
{
	build_table();
	if (!name)
		return NULL;
	char buf[32];
	for (int b = 0; b < 4; b++)
		if (!strcmp(name, base_names[b])) {
			snprintf(buf, sizeof buf, "plain_%s", base_names[b]);
			name = buf;
		}
	if (!strcmp(name, "sirnn"))
		name = "irnn";
	for (int i = 0; i < ncells; i++)
		if (!strcmp(cells[i].name, name))
			return &cells[i];
	return NULL;
}

const char *cell_name(const cell_def *c) { return c->name; }
const char *cell_doc(const cell_def *c) { return c->doc; }
int cell_count(void) { build_table(); return ncells; }
const cell_def *cell_at(int i) { build_table(); return i >= 0 && i < ncells ? &cells[i] : NULL; }

/* ---- options ------------------------------------------------------------------ */

int cell_options(const cell_def *c, const cell_option **opts)
{
	*opts = c->opts;
	return c->nopts;
}

static const cell_option *find_opt(const cell_def *c, const char *key)
{
	for (int i = 0; i < c->nopts; i++)
		if (!strcmp(c->opts[i].name, key))
			return &c->opts[i];
	return NULL;
}

static int word_ok(const char *words, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = words; *p;) {
		const char *e = strchr(p, '|');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, w, n))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

int cell_check_option(const cell_def *c, const char *key, double num, const char *word, char *err,
		      size_t errlen)
{
	const cell_option *o = find_opt(c, key);
	if (!o) {
		int w = snprintf(err, errlen, "unknown option '%s' for %s (options:", key, c->name);
		for (int i = 0; i < c->nopts && w > 0 && (size_t)w < errlen; i++)
			w += snprintf(err + w, errlen - (size_t)w, " %s", c->opts[i].name);
		if (w > 0 && (size_t)w < errlen)
			snprintf(err + w, errlen - (size_t)w, ")");
		return -1;
	}
	if (o->kind == CELL_OPT_WORD) {
		if (!word) {
			snprintf(err, errlen, "%s must be one of %s, not a number", key, o->words);
			return -1;
		}
		if (!word_ok(o->words, word)) {
			snprintf(err, errlen, "%s must be one of %s, not '%s'", key, o->words, word);
			return -1;
		}
		return 0;
	}
	if (word) {
		snprintf(err, errlen, "%s must be a number, not '%s'", key, word);
		return -1;
	}
	if (!isfinite(num)) {
		snprintf(err, errlen, "%s must be a finite number", key);
		return -1;
	}
	if (o->kind == CELL_OPT_INT && num != floor(num)) {
		snprintf(err, errlen, "%s must be an integer, not %g", key, num);
		return -1;
	}
	struct { const char *k; double lo, hi; } range[] = {
		{"hidden", 1, 1 << 20}, {"K", 1, 1024}, {"steps", 1, 1024}, {"restart", 0, 1e9},
		{"eps", 0, 1e30}, {"key", 0, 1 << 20}, {"beta", 0, 1},
	};
	for (size_t i = 0; i < COUNTOF(range); i++)
		if (!strcmp(range[i].k, key) && (num < range[i].lo || num > range[i].hi)) {
			snprintf(err, errlen, "%s must lie in [%g, %g], not %g", key, range[i].lo, range[i].hi,
				 num);
			return -1;
		}
	return 0;
}

/* Attributes of a CELL node that are structure, not options. */
static int structural(const char *name)
{
	return !strcmp(name, "cell") || !strcmp(name, "n_params") || !strcmp(name, "n_states") ||
	       !strcmp(name, "seq_axis");
}

int cell_check_options(const cell_def *c, const ir_node *n, diag *D)
{
	int errs = 0;
	char err[512];
	for (int i = 0; i < n->nattrs; i++) {
		const ir_attr *a = &n->attrs[i];
		if (structural(a->name))
			continue;
		double num = a->kind == ATTR_FLOAT ? a->f : (double)a->i;
		const char *word = a->kind == ATTR_STRING ? a->s : NULL;
		if (a->kind != ATTR_FLOAT && a->kind != ATTR_INT && a->kind != ATTR_STRING) {
			diag_node(D, n, "option %s of %s must be a number or a word", a->name, c->name);
			errs++;
			continue;
		}
		if (cell_check_option(c, a->name, num, word, err, sizeof err)) {
			diag_node(D, n, "%s", err);
			errs++;
		}
	}
	if (!ir_attr_find(n, "hidden")) {
		diag_node(D, n, "%s needs option hidden (the hidden size)", c->name);
		errs++;
	}
	if (!errs && c->dyn == D_NAG && c->kind == K_GRU && !strcmp(cell_opt_word(c, n, "form"), "extrapolate")) {
		diag_node(D, n, "form=extrapolate is defined for rnn, lstm and dtriv (the cells whose "
			  "pre-activation is a plain sum); gru gates its recurrent n term");
		errs++;
	}
	return errs;
}

double cell_opt_num(const cell_def *c, const ir_node *n, const char *key)
{
	const ir_attr *a = n ? ir_attr_find(n, key) : NULL;
	if (a && a->kind == ATTR_FLOAT)
		return a->f;
	if (a && a->kind == ATTR_INT)
		return (double)a->i;
	const cell_option *o = find_opt(c, key);
	return o ? o->def : 0;
}

const char *cell_opt_word(const cell_def *c, const ir_node *n, const char *key)
{
	const ir_attr *a = n ? ir_attr_find(n, key) : NULL;
	if (a && a->kind == ATTR_STRING)
		return a->s;
	const cell_option *o = find_opt(c, key);
	if (!o || !o->words)
		return "";
	/* the first word is the default; a static copy per option is enough */
	static char buf[MAX_OPTS * NCELLS][24];
	int idx = (int)((c - cells) * MAX_OPTS + (o - c->opts));
	const char *e = strchr(o->words, '|');
	size_t len = e ? (size_t)(e - o->words) : strlen(o->words);
	if (len >= sizeof buf[0])
		len = sizeof buf[0] - 1;
	memcpy(buf[idx], o->words, len);
	buf[idx][len] = 0;
	return buf[idx];
}

/* ---- parameters and states ---------------------------------------------------------- */

static int gates(const cell_def *c)
{
	return c->kind == K_LSTM ? 4 : c->kind == K_GRU ? 3 : 1;
}

static int64_t key_size(const cell_def *c, const ir_node *opts, int64_t H)
{
	int64_t dk = (int64_t)cell_opt_num(c, opts, "key");
	return dk > 0 ? dk : H;
}

static void param(cell_param *out, int *k, int max, const char *name, int rank, int64_t d0, int64_t d1)
{
	if (*k < max)
		out[*k] = (cell_param){name, rank, {d0, rank > 1 ? d1 : 0}, 0};
	(*k)++;
}

int cell_params(const cell_def *c, const ir_node *opts, int64_t I, int64_t H, cell_param *out, int max)
{
	int k = 0;
	int64_t G = gates(c) * H;
	switch (c->kind) {
	case K_RNN: case K_LSTM: case K_GRU:
		param(out, &k, max, "W_x", 2, G, I);
		param(out, &k, max, "b_x", 1, G, 0);
		param(out, &k, max, "W_h", 2, G, H);
		param(out, &k, max, "b_h", 1, G, 0);
		break;
	case K_DTRIV:
		param(out, &k, max, "W_x", 2, H, I);
		param(out, &k, max, "A", 2, H, H);
		param(out, &k, max, "base", 2, H, H);
		if (k <= max)
			out[k - 1].fixed = 1;
		param(out, &k, max, "b", 1, H, 0);
		break;
	case K_IRNN:
		param(out, &k, max, "W_x", 2, H, I);
		param(out, &k, max, "b_x", 1, H, 0);
		param(out, &k, max, "W_h", 2, H, H);
		param(out, &k, max, "eta", 2, (int64_t)cell_opt_num(c, opts, "K"), H);
		break;
	case K_ATTN: {
		int64_t dk = key_size(c, opts, H);
		param(out, &k, max, "W_q", 2, dk, I);
		param(out, &k, max, "b_q", 1, dk, 0);
		param(out, &k, max, "W_k", 2, dk, I);
		param(out, &k, max, "b_k", 1, dk, 0);
		param(out, &k, max, "W_v", 2, H, I);
		param(out, &k, max, "b_v", 1, H, 0);
		break;
	}
	case K_HB:
		param(out, &k, max, "W_x", 2, H, I);
		param(out, &k, max, "b_x", 1, H, 0);
		param(out, &k, max, "W_h", 2, H, H);
		param(out, &k, max, "b_h", 1, H, 0);
		param(out, &k, max, "w", 1, 1, 0);
		param(out, &k, max, "c", 1, 1, 0);
		break;
	case K_FAST:
		param(out, &k, max, "W_x", 2, H, I);
		param(out, &k, max, "b_x", 1, H, 0);
		param(out, &k, max, "W_h", 2, H, H);
		param(out, &k, max, "alpha", 1, 1, 0);
		param(out, &k, max, "beta", 1, 1, 0);
		break;
	}
	return k <= max ? k : -1;
}

static int nag_extrapolate(const cell_def *c, const ir_node *opts)
{
	return c->dyn == D_NAG && !strcmp(cell_opt_word(c, opts, "form"), "extrapolate");
}

int cell_states(const cell_def *c, const ir_node *opts, int64_t I, int64_t H, cell_state *out, int max)
{
	(void)I;
	int k = 0;
	int64_t G = gates(c) * H;
#define ST(nm, sz) do { if (k < max) out[k] = (cell_state){nm, sz}; k++; } while (0)
	switch (c->kind) {
	case K_ATTN: {
		int64_t dk = key_size(c, opts, H);
		ST("S", dk * H);
		ST("z", dk);
		if (strcmp(cell_opt_word(c, opts, "weighting"), "length"))
			ST("p", dk * H);
		return k <= max ? k : -1;
	}
	case K_HB:
		ST("h", H);
		ST("m", H);
		return k <= max ? k : -1;
	default:
		break;
	}
	ST("h", H);
	if (c->kind == K_LSTM)
		ST("c", H);
	switch (c->dyn) {
	case D_MOMENTUM: ST("v", G); break;
	case D_NAG: ST(nag_extrapolate(c, opts) ? "q" : "v", G); break;
	case D_ADAM: case D_RMSPROP: ST("v", G); ST("m", G); break;
	default: break;
	}
#undef ST
	return k <= max ? k : -1;
}

/* ---- initialisers ------------------------------------------------------------------- */

uint64_t cell_param_seed(uint64_t model_seed, const char *layer, const char *param_name)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ model_seed;
	for (const char *s = layer ? layer : ""; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	h = (h ^ '.') * 0x100000001b3ULL;
	for (const char *s = param_name ? param_name : ""; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

int cell_param_init(const cell_def *c, const ir_node *opts, int64_t I, int64_t H, const cell_param *p,
		    uint64_t seed, float *w)
{
	(void)I;
	rt_rng r;
	rt_rng_seed(&r, seed);
	const char *init = cell_opt_word(c, opts, "init");
	int64_t rows = p->dims[0], cols = p->rank > 1 ? p->dims[1] : 1, n = rows * cols;
	float bound = (float)(1.0 / sqrt((double)H));
	const char *nm = p->name;
	int is_bias = p->rank == 1 && nm[0] == 'b';
	int is_wx = !strcmp(nm, "W_x") || !strcmp(nm, "W_q") || !strcmp(nm, "W_k") || !strcmp(nm, "W_v");
	int is_wh = !strcmp(nm, "W_h");
	int st = RT_OK;
	/* cell-specific parameters first: their own initialisers whatever init says */
	if (c->kind == K_DTRIV && !strcmp(nm, "A")) {
		rt_init_const(w, n, 0);
		for (int64_t i = 0; i + 1 < rows; i += 2)
			w[i * cols + i + 1] = (float)((2 * rt_rng_uniform(&r) - 1) * 3.14159265358979323846);
		return RT_OK;
	}
	if (c->kind == K_DTRIV && !strcmp(nm, "base")) {
		rt_init_eye(w, rows, cols);
		return RT_OK;
	}
	if (c->kind == K_DTRIV && !strcmp(nm, "b")) {
		rt_init_uniform(w, n, 0.01f, &r);
		return RT_OK;
	}
	if (c->kind == K_IRNN && !strcmp(nm, "eta")) {
		rt_init_const(w, n, 0.01f);
		return RT_OK;
	}
	if (c->kind == K_FAST && (!strcmp(nm, "alpha") || !strcmp(nm, "beta"))) {
		rt_init_const(w, n, nm[0] == 'a' ? -3.0f : 3.0f);
		return RT_OK;
	}
	if (c->kind == K_HB && (!strcmp(nm, "w") || !strcmp(nm, "c"))) {
		rt_init_const(w, n, 0.0f);
		return RT_OK;
	}
	if (!strcmp(init, "pytorch")) {
		if (c->kind == K_DTRIV && is_wx)
			rt_init_kaiming_normal(w, rows, cols, &r);
		else
			rt_init_uniform(w, n, bound, &r);
	} else if (is_bias) {
		rt_init_const(w, n, 0.0f);
	} else if (!strcmp(init, "reference")) {
		st = is_wh ? (rt_init_eye(w, rows, cols), RT_OK) : rt_init_orthogonal(w, rows, cols, 1.0f, &r);
	} else if (!strcmp(init, "orthogonal")) {
		st = rt_init_orthogonal(w, rows, cols, 1.0f, &r);
	} else if (!strcmp(init, "eye")) {
		if (is_wh)
			rt_init_eye(w, rows, cols);
		else
			rt_init_uniform(w, n, bound, &r);
	} else if (!strcmp(init, "kaiming")) {
		rt_init_kaiming_normal(w, rows, cols, &r);
	} else if (!strcmp(init, "sparse")) {
		st = rt_init_sparse(w, rows, cols, 15, &r);
	} else if (!strcmp(init, "echo")) {
		if (is_wh) {
			/* each square [H, H] block of W_h (one per gate) */
			for (int64_t b = 0; b + cols <= rows && st == RT_OK; b += cols)
				st = rt_init_echo(w + b * cols, cols, 15, 1.1f, &r);
		} else {
			rt_init_uniform(w, n, bound, &r);
		}
	} else {
		return -1;
	}
	/* LSTM forget blocks of b_x and b_h */
	if (st == RT_OK && c->kind == K_LSTM && is_bias &&
	    (!strcmp(init, "reference") || (opts && ir_attr_find(opts, "fg_init"))))
		rt_init_const(w + H, H, (float)cell_opt_num(c, opts, "fg_init"));
	return st == RT_OK ? 0 : -1;
}

/* ---- shape inference ------------------------------------------------------------------ */

typedef struct layer {
	const cell_def *c;
	ir_node *n;
	int64_t I, H;
	ir_dim T, B;
	int seq_axis;
	int nparams, nstates;
	cell_param params[CELL_MAX_PARAMS];
	cell_state states[CELL_MAX_STATES];
} layer;

/* Reads and checks what the CELL node says about itself. */
static int layer_read(layer *L, ir_graph *g, ir_node *n, diag *D)
{
	memset(L, 0, sizeof *L);
	L->n = n;
	const char *name = ir_attr_string(n, "cell", NULL);
	L->c = cell_find(name);
	if (!L->c) {
		diag_node(D, n, "unknown cell '%s'", name ? name : "(none)");
		return 1;
	}
	if (cell_check_options(L->c, n, D))
		return 1;
	ir_value *X = n->in[0];
	L->seq_axis = (int)ir_attr_int(n, "seq_axis", 0);
	if (!X || X->dtype != DT_F32 || X->shape.rank != 3 || !ir_dim_is_const(X->shape.d[2]) ||
	    (L->seq_axis != 0 && L->seq_axis != 1)) {
		diag_node(D, n, "the input of %s must be f32 [T, B, I] (or [B, T, I]) with a constant I, "
			  "got %s %s", L->c->name, X ? ir_dtype_name(X->dtype) : "nothing",
			  X ? ir_shape_str(g->A, g, &X->shape) : "");
		return 1;
	}
	L->I = X->shape.d[2].k;
	L->H = (int64_t)cell_opt_num(L->c, n, "hidden");
	L->T = X->shape.d[L->seq_axis];
	L->B = X->shape.d[1 - L->seq_axis];
	L->nparams = cell_params(L->c, n, L->I, L->H, L->params, CELL_MAX_PARAMS);
	L->nstates = cell_states(L->c, n, L->I, L->H, L->states, CELL_MAX_STATES);
	ASSERT(L->nparams > 0 && L->nstates > 0);
	if (n->nin != 1 + L->nstates + L->nparams || n->nout < 1 || n->nout > 1 + L->nstates) {
		diag_node(D, n, "%s takes %d inputs (X, %d initial states, %d parameters) and up to %d "
			  "outputs; the node has %d and %d", L->c->name, 1 + L->nstates + L->nparams,
			  L->nstates, L->nparams, 1 + L->nstates, n->nin, n->nout);
		return 1;
	}
	int errs = 0;
	for (int k = 0; k < L->nstates; k++) {
		ir_value *v = n->in[1 + k];
		if (!v)
			continue;
		ir_shape want = {.rank = 2, .d = {L->B, ir_dim_const(L->states[k].size)}};
		if (v->dtype != DT_F32 || !ir_shape_eq(&v->shape, &want)) {
			diag_node(D, n, "initial state %s of %s has type %s %s, expected f32 %s",
				  L->states[k].name, L->c->name, ir_dtype_name(v->dtype),
				  ir_shape_str(g->A, g, &v->shape), ir_shape_str(g->A, g, &want));
			errs++;
		}
	}
	for (int k = 0; k < L->nparams; k++) {
		ir_value *v = n->in[1 + L->nstates + k];
		const cell_param *p = &L->params[k];
		ir_shape want = {.rank = p->rank};
		for (int i = 0; i < p->rank; i++)
			want.d[i] = ir_dim_const(p->dims[i]);
		if (!v || v->dtype != DT_F32 || !ir_shape_eq(&v->shape, &want)) {
			diag_node(D, n, "parameter %s of %s must be f32 %s, got %s %s", p->name, L->c->name,
				  ir_shape_str(g->A, g, &want), v ? ir_dtype_name(v->dtype) : "nothing",
				  v ? ir_shape_str(g->A, g, &v->shape) : "");
			errs++;
		}
	}
	return errs;
}

int cell_infer(ir_graph *g, ir_node *n, diag *D)
{
	layer L;
	if (layer_read(&L, g, n, D))
		return 1;
	ir_value *Y = n->out[0];
	if (Y) {
		Y->dtype = DT_F32;
		Y->shape.rank = 3;
		Y->shape.d[L.seq_axis] = L.T;
		Y->shape.d[1 - L.seq_axis] = L.B;
		Y->shape.d[2] = ir_dim_const(L.H);
	}
	for (int k = 1; k < n->nout; k++)
		if (n->out[k]) {
			n->out[k]->dtype = DT_F32;
			n->out[k]->shape.rank = 2;
			n->out[k]->shape.d[0] = L.B;
			n->out[k]->shape.d[1] = ir_dim_const(L.states[k - 1].size);
		}
	return 0;
}

/* ---- the lowering: building blocks ------------------------------------------------------------ */

typedef struct low {
	layer L;
	ir_graph *g, *b;        /* root graph, body */
	diag *D;
	const char *origin;
	int errors;
	ir_build bld;           /* how the lowering makes its nodes (origin, inference) */
	ir_value *x;            /* body input x_t [B, I] */
	ir_value *t, *len;      /* step scalars (has_step) or NULL */
} low;

static ir_value *op1(low *W, ir_op op, ir_value *a) { return ir_build_op(&W->bld, W->b, op, 1, &a); }

static ir_value *op2(low *W, ir_op op, ir_value *a, ir_value *b)
{
	ir_value *in[2] = {a, b};
	return ir_build_op(&W->bld, W->b, op, 2, in);
}

/* v named layer.what, the cell's own name for it (a gate: h1.i; a new
 * state: h1.c_next), when no value has that name yet. */
static ir_value *named(low *W, ir_value *v, const char *what)
{
	const char *name = arena_printf(W->g->A, "%s.%s", W->L.n->name, what);
	if (v->kind == VAL_TEMP && v->graph == W->b && !ir_name_taken(W->b, name) && !ir_find_value(W->b, name))
		ir_value_rename(v, name);
	return v;
}

static ir_value *cf(low *W, double v) { return ir_const_f32_scalar(W->b, NULL, (float)v); }
static ir_value *add(low *W, ir_value *a, ir_value *b) { return op2(W, OP_ADD, a, b); }
static ir_value *sub(low *W, ir_value *a, ir_value *b) { return op2(W, OP_SUB, a, b); }
static ir_value *mul(low *W, ir_value *a, ir_value *b) { return op2(W, OP_MUL, a, b); }
static ir_value *scale(low *W, double k, ir_value *a) { return k == 1.0 ? a : mul(W, cf(W, k), a); }

/* a x W^T (+ bias) or, transB = 0, a x W. */
static ir_value *gemm(low *W, ir_value *a, ir_value *w, ir_value *bias, int transB)
{
	ir_value *in[3] = {a, w, bias};
	ir_node *n = ir_build_node(&W->bld, W->b, OP_GEMM, bias ? 3 : 2, in, 1);
	ir_attr_set_int(n, "transB", transB);
	return ir_build_done(&W->bld, n, NULL);
}

static ir_value *i64c(ir_graph *g, int64_t v) { return ir_const_i64(g, NULL, 1, &v); }

/* Columns [c0, c1) of a 2-D value of graph g. */
static ir_value *cols(low *W, ir_graph *g, ir_value *v, int64_t c0, int64_t c1)
{
	ir_value *in[4] = {v, i64c(g, c0), i64c(g, c1), i64c(g, 1)};
	return ir_build_op(&W->bld, g, OP_SLICE, 4, in);
}

static ir_value *reshape(low *W, ir_value *v, int rank, const ir_dim *d)
{
	ir_value *shp;
	int symbolic = 0;
	for (int i = 0; i < rank; i++)
		symbolic |= !ir_dim_is_const(d[i]);
	if (!symbolic) {
		int64_t k[IR_MAX_RANK];
		for (int i = 0; i < rank; i++)
			k[i] = d[i].k;
		shp = ir_const_i64(W->b, NULL, rank, k);
	} else {
		shp = ir_value_new(W->b, NULL, VAL_CONST, DT_I64);
		shp->shape.rank = 1;
		shp->shape.d[0] = ir_dim_const(rank);
		shp->sym = arena_array(W->g->A, (size_t)rank, sizeof *shp->sym);
		memcpy(shp->sym, d, (size_t)rank * sizeof *d);
	}
	ir_value *in[2] = {v, shp};
	return ir_build_op(&W->bld, W->b, OP_RESHAPE, 2, in);
}

/* The parameter named nm (a root value with data). */
static ir_value *par(low *W, const char *nm)
{
	for (int k = 0; k < W->L.nparams; k++)
		if (!strcmp(W->L.params[k].name, nm))
			return W->L.n->in[1 + W->L.nstates + k];
	UNREACHABLE();
}

static const float *par_data(low *W, const char *nm)
{
	ir_value *v = par(W, nm);
	if (W->g->train && v->kind == VAL_WEIGHT) {
		diag_node(W->D, W->L.n, "--train: %s computes a derived weight from parameter %s at "
			  "compile time in a way cellc cannot differentiate yet; this cell cannot be "
			  "trained", W->L.c->name, nm);
		W->errors++;
		static const float zero1[1];
		return zero1;
	}
	if (!v->data) {
		diag_node(W->D, W->L.n, "parameter %s of %s must be known at compile time (a weight), "
			  "not computed at run time", nm, W->L.c->name);
		W->errors++;
		static const float zeros[1];
		return zeros;
	}
	return v->data;
}

/* A new weight of the root graph [rows] or [rows, cols] named layer.what. */
static ir_value *new_weight(low *W, const char *what, int64_t rows, int64_t ncols)
{
	ir_shape s = {.rank = ncols ? 2 : 1};
	s.d[0] = ir_dim_const(rows);
	if (ncols)
		s.d[1] = ir_dim_const(ncols);
	const char *name = arena_printf(W->g->A, "%s.%s", W->L.n->name, what);
	if (ir_find_value(W->g, name))
		name = ir_unique_name(W->g, name);
	ir_value *v = ir_const_new(W->g, name, DT_F32, &s, NULL);
	v->kind = VAL_WEIGHT;
	v->origin = W->origin;
	return v;
}

/* Elements [off, off + n) of a parameter as a new vector weight. */
static ir_value *vec_part(low *W, const char *nm, int64_t off, int64_t n, const char *what)
{
	if (W->g->train) {
		/* computed at run time from the parameter, before the recurrence */
		ir_value *p = par(W, nm);
		int64_t zero = 0, end = off + n, all = ir_shape_const_numel(&p->shape);
		if (p->shape.rank != 1) {
			ir_value *rin[2] = {p, ir_const_i64(W->g, NULL, 1, &all)};
			p = ir_build_op(&W->bld, W->g, OP_RESHAPE, 2, rin);
		}
		ir_value *in[4] = {p, ir_const_i64(W->g, NULL, 1, &off), ir_const_i64(W->g, NULL, 1, &end),
				   ir_const_i64(W->g, NULL, 1, &zero)};
		return ir_build_op(&W->bld, W->g, OP_SLICE, 4, in);
	}
	const float *d = par_data(W, nm);
	ir_value *v = new_weight(W, what, n, 0);
	if (W->errors)
		return v;
	memcpy(v->data, d + off, (size_t)n * sizeof(float));
	return v;
}

/* Element 0 of a [1] parameter, in double. */
static double par_scalar(low *W, const char *nm) { return par_data(W, nm)[0]; }

static ir_value *step_value(low *W, const char *nm, int rank, ir_dim d0, int64_t d1)
{
	const char *name = arena_printf(W->g->A, "%s.%s", W->b->name, nm);
	if (ir_name_taken(W->b, name))         /* two layers of one name */
		name = ir_unique_name(W->b, name);
	ir_value *v = ir_value_new(W->b, name, VAL_STEP, DT_F32);
	v->shape.rank = rank;
	if (rank == 2) {
		v->shape.d[0] = d0;
		v->shape.d[1] = ir_dim_const(d1);
	}
	v->origin = W->origin;
	return v;
}

static ir_value *act(low *W, const char *name, ir_value *a)
{
	if (!strcmp(name, "relu"))
		return op1(W, OP_RELU, a);
	if (!strcmp(name, "identity"))
		return a;
	return op1(W, OP_TANH, a);
}

/* ---- the lowering: the body state ------------------------------------------------------ */

/* Body states: one per cell state, or one per gate block for the dynamic
 * states ([B, G] -> nb x [B, H]). */
typedef struct bstate {
	int cell_state;         /* index into L.states */
	int64_t col0, ncols;    /* columns of the cell state it carries */
	ir_value *in, *out;     /* body input and new value */
} bstate;

typedef struct body {
	bstate s[CELL_MAX_STATES * 4];
	int n;
	ir_value *y;            /* the per-step output */
} body;

static int add_states(low *W, body *S, int k, int parts)
{
	int64_t size = W->L.states[k].size, w = size / parts;
	int first = S->n;
	for (int p = 0; p < parts; p++) {
		bstate *s = &S->s[S->n++];
		s->cell_state = k;
		s->col0 = p * w;
		s->ncols = w;
		s->in = step_value(W, parts > 1 ? arena_printf(W->g->A, "%s%d", W->L.states[k].name, p)
						: W->L.states[k].name, 2, W->L.B, w);
	}
	return first;
}

/* ---- the lowering: base cells with dynamics ---------------------------------------------- */

/* mu_t of NAG from the step number (rank-0, once per step). */
static ir_value *nag_mu(low *W)
{
	int64_t F = (int64_t)cell_opt_num(W->L.c, W->L.n, "restart");
	ir_value *k = W->t;     /* k = t when F = 0 */
	if (F > 0) {
		ir_value *in[2] = {sub(W, W->t, cf(W, 1)), cf(W, (double)F)};
		ir_node *m = ir_build_node(&W->bld, W->b, OP_MOD, 2, in, 1);
		ir_attr_set_int(m, "fmod", 1);
		k = add(W, ir_build_done(&W->bld, m, NULL), cf(W, 1));
	}
	return op2(W, OP_DIV, sub(W, k, cf(W, 1)), add(W, k, cf(W, 2)));
}

/* dtriv's M = base . expm(S), S = triu(A,1) - triu(A,1)^T, in double. */
static void matmul_d(const double *a, const double *b, double *c, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++) {
			double s = 0;
			for (int64_t k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}

/* --train: M = base expm(S) by root nodes, from the parameters at run time. */
static ir_value *dtriv_M_train(low *W)
{
	int64_t H = W->L.H;
	ir_shape s = {.rank = 2, .d = {ir_dim_const(H), ir_dim_const(H)}};
	ir_value *mask = ir_const_new(W->g, NULL, DT_F32, &s, NULL);
	float *mk1 = mask->data;
	for (int64_t i = 0; i < H; i++)
		for (int64_t j = 0; j < H; j++)
			mk1[i * H + j] = j > i ? 1.0f : 0.0f;
	ir_value *in[2] = {par(W, "A"), mask};
	ir_value *U = ir_build_op(&W->bld, W->g, OP_MUL, 2, in);
	ir_node *tn = ir_build_node(&W->bld, W->g, OP_TRANSPOSE, 1, &U, 1);
	int64_t perm[2] = {1, 0};
	ir_attr_set_ints(tn, "perm", 2, perm);
	ir_value *sin[2] = {U, ir_build_done(&W->bld, tn, NULL)};
	ir_value *S = ir_build_op(&W->bld, W->g, OP_SUB, 2, sin);
	ir_value *E = ir_build_op(&W->bld, W->g, OP_MATEXP, 1, &S);
	ir_value *min[2] = {par(W, "base"), E};
	return ir_build_op(&W->bld, W->g, OP_MATMUL, 2, min);
}

static ir_value *dtriv_M(low *W)
{
	int64_t H = W->L.H;
	if (W->g->train)
		return dtriv_M_train(W);
	const float *A = par_data(W, "A"), *base = par_data(W, "base");
	ir_value *M = new_weight(W, "M", H, H);
	if (W->errors)
		return M;
	size_t nn = (size_t)(H * H);
	double *S = nn <= SIZE_MAX / 3 / sizeof(double) ? malloc(3 * nn * sizeof(double)) : NULL;
	if (!S)
		arena_oom(W->g->A, 3 * nn * sizeof(double), "dtriv's matrix exponential");
	double *E = S + nn, *Bd = E + nn;
	for (int64_t i = 0; i < H; i++)
		for (int64_t j = 0; j < H; j++) {
			double u = j > i ? A[i * H + j] : 0, l = i > j ? A[j * H + i] : 0;
			S[i * H + j] = u - l;
		}
	if (rt_expm_d(E, S, H)) {
		diag_node(W->D, W->L.n, "cannot compute expm(S) of dtriv's parameter A");
		W->errors++;
	}
	for (size_t i = 0; i < nn; i++)
		Bd[i] = base[i];
	matmul_d(Bd, E, S, H);
	float *m = M->data;
	for (size_t i = 0; i < nn; i++)
		m[i] = (float)S[i];
	free(S);
	return M;
}

/* A base cell's states and where they start in S: h, the LSTM's c, the
 * dynamic's states (one per gate block), Adam's and RMSprop's second one. */
typedef struct base_states {
	int ih, ic, iv, im;     /* -1: none */
} base_states;

static base_states add_base_states(low *W, body *S)
{
	const cell_def *c = W->L.c;
	int nb = (int)gates(c);
	base_states st = {.ih = add_states(W, S, 0, 1), .ic = -1, .iv = -1, .im = -1};
	int next = 1;
	if (c->kind == K_LSTM)
		st.ic = add_states(W, S, next++, 1);
	if (c->dyn != D_PLAIN)
		st.iv = add_states(W, S, next++, nb);
	if (c->dyn == D_ADAM || c->dyn == D_RMSPROP)
		st.im = add_states(W, S, next++, nb);
	return st;
}

/* The products: *u = x W_x^T + b_x (hoisted later), *r = h W_h^T (no bias). */
static void base_products(low *W, ir_value *h, ir_value **u, ir_value **r)
{
	const cell_def *c = W->L.c;
	int64_t G = gates(c) * W->L.H;
	int plain = c->dyn == D_PLAIN;
	if (c->kind == K_DTRIV) {
		*u = gemm(W, W->x, par(W, "W_x"), NULL, 1);
		*r = gemm(W, h, dtriv_M(W), NULL, 0);
		return;
	}
	ir_value *bias = par(W, "b_x");
	if (plain && c->kind != K_GRU && W->g->train) {
		ir_value *in[2] = {par(W, "b_x"), par(W, "b_h")};
		bias = ir_build_op(&W->bld, W->g, OP_ADD, 2, in);
	} else if (plain && c->kind != K_GRU) {
		/* b_x + b_h pre-summed into the input projection */
		const float *bx = par_data(W, "b_x"), *bhd = par_data(W, "b_h");
		bias = new_weight(W, "b_xh", G, 0);
		if (!W->errors)
			for (int64_t i = 0; i < G; i++)
				((float *)bias->data)[i] = bx[i] + bhd[i];
	}
	*u = gemm(W, W->x, par(W, "W_x"), bias, 1);
	/* b_h is the step product's C wherever it is not pre-summed into
	 * the input projection: each gate block of r then holds its part
	 * (the GRU's r_n includes b_hn, as the cell asks), and a training
	 * build's gradient of b_h is the column sum of the product's own
	 * per-step gradient, not one stacked gradient per gate */
	*r = gemm(W, h, par(W, "W_h"), plain && c->kind != K_GRU ? NULL : par(W, "b_h"), 1);
}

/* Each gate block's pre-activation a[k] from its parts of u and r through
 * the input dynamic (whose new states it sets); *rn: the GRU's r_n (with
 * b_hn), which its candidate gates. */
static void gate_preacts(low *W, body *S, const base_states *st, ir_value *u, ir_value *r, ir_value **a,
			 ir_value **rn)
{
	const cell_def *c = W->L.c;
	int64_t H = W->L.H, nb = gates(c);
	int ext = nag_extrapolate(c, W->L.n), iv = st->iv, im = st->im;
	double mu = cell_opt_num(c, W->L.n, "mu"), s = cell_opt_num(c, W->L.n, "s");
	double beta = cell_opt_num(c, W->L.n, "beta"), eps = cell_opt_num(c, W->L.n, "eps");
	if (c->dyn == D_RMSPROP)
		mu = 0;
	ir_value *mut = c->dyn == D_NAG ? nag_mu(W) : NULL;
	for (int k = 0; k < nb; k++) {
		ir_value *uk = nb > 1 ? cols(W, W->b, u, k * H, (k + 1) * H) : u;
		ir_value *rk = nb > 1 ? cols(W, W->b, r, k * H, (k + 1) * H) : r;
		ir_value *d = uk;
		switch (c->dyn) {
		case D_PLAIN:
			break;
		case D_MOMENTUM:
			d = add(W, scale(W, mu, S->s[iv + k].in), scale(W, s, uk));
			S->s[iv + k].out = d;
			break;
		case D_NAG:
			if (ext) {
				ir_value *q = sub(W, rk, scale(W, s, uk));
				S->s[iv + k].out = q;
				a[k] = add(W, q, mul(W, mut, sub(W, q, S->s[iv + k].in)));
				continue;
			}
			d = add(W, mul(W, mut, S->s[iv + k].in), scale(W, s, uk));
			S->s[iv + k].out = d;
			break;
		case D_ADAM: case D_RMSPROP: {
			ir_value *v = mu == 0 ? scale(W, s, uk) : add(W, scale(W, mu, S->s[iv + k].in), scale(W, s, uk));
			ir_value *m = add(W, scale(W, beta, S->s[im + k].in), scale(W, 1 - beta, mul(W, uk, uk)));
			S->s[iv + k].out = v;
			S->s[im + k].out = m;
			d = op2(W, OP_DIV, v, op1(W, OP_SQRT, add(W, m, cf(W, eps))));
			break;
		}
		default:
			UNREACHABLE();
		}
		if (c->kind == K_GRU && k == 2) {
			a[k] = d;               /* n = tanh(d_n + r * r_n): r_n is gated */
			*rn = rk;
		} else {
			a[k] = add(W, d, rk);
		}
	}
}

/* The cell's own update from the pre-activations: the new h (and c). */
static void base_update(low *W, body *S, const base_states *st, ir_value *const *a, ir_value *rn)
{
	const cell_def *c = W->L.c;
	int ih = st->ih, ic = st->ic;
	ir_value *h = S->s[ih].in;
	switch (c->kind) {
	case K_RNN:
		S->s[ih].out = named(W, act(W, cell_opt_word(c, W->L.n, "act"), a[0]), "h_next");
		break;
	case K_LSTM: {
		ir_value *i = named(W, op1(W, OP_SIGMOID, a[0]), "i"), *f = named(W, op1(W, OP_SIGMOID, a[1]), "f");
		ir_value *g = named(W, op1(W, OP_TANH, a[2]), "g"), *o = named(W, op1(W, OP_SIGMOID, a[3]), "o");
		ir_value *c2 = named(W, add(W, mul(W, f, S->s[ic].in), mul(W, i, g)), "c_next");
		S->s[ic].out = c2;
		S->s[ih].out = named(W, mul(W, o, op1(W, OP_TANH, c2)), "h_next");
		break;
	}
	case K_GRU: {
		ir_value *rg = named(W, op1(W, OP_SIGMOID, a[0]), "r"), *z = named(W, op1(W, OP_SIGMOID, a[1]), "z");
		ir_value *nn = named(W, op1(W, OP_TANH, add(W, a[2], mul(W, rg, rn))), "n");
		S->s[ih].out = named(W, add(W, mul(W, sub(W, cf(W, 1), z), nn), mul(W, z, h)), "h_next");
		break;
	}
	case K_DTRIV: {
		ir_value *bm = par(W, "b");
		ir_value *mag = op1(W, OP_RELU, add(W, op1(W, OP_ABS, a[0]), bm));
		S->s[ih].out = mul(W, op1(W, OP_SIGN, a[0]), mag);
		break;
	}
	default:
		UNREACHABLE();
	}
	S->y = S->s[ih].out;
}

/* rnn, lstm, gru and dtriv, each with any input dynamic. */
static void lower_base(low *W, body *S)
{
	base_states st = add_base_states(W, S);
	ir_value *u, *r, *a[4], *rn = NULL;     /* rn: the GRU's r_n (with b_hn) */
	base_products(W, S->s[st.ih].in, &u, &r);
	gate_preacts(W, S, &st, u, r, a, &rn);
	base_update(W, S, &st, a, rn);
}

/* ---- the lowering: the other cells ------------------------------------------------------ */

static void lower_irnn(low *W, body *S)
{
	const cell_def *c = W->L.c;
	int64_t H = W->L.H, K = (int64_t)cell_opt_num(c, W->L.n, "K");
	double alpha = cell_opt_num(c, W->L.n, "alpha");
	const char *an = cell_opt_word(c, W->L.n, "act");
	int ih = add_states(W, S, 0, 1);
	ir_value *h = S->s[ih].in;
	ir_value *u = gemm(W, W->x, par(W, "W_x"), par(W, "b_x"), 1);
	ir_value *g = strcmp(cell_opt_word(c, W->L.n, "g0"), "zero") ? h : NULL;
	for (int64_t k = 0; k < K; k++) {
		ir_value *sum = g ? add(W, g, h) : h;
		ir_value *pre = add(W, gemm(W, sum, par(W, "W_h"), NULL, 1), u);
		ir_value *eta = vec_part(W, "eta", k * H, H, arena_printf(W->g->A, "eta%lld", (long long)k));
		ir_value *step = mul(W, eta, sub(W, act(W, an, pre), scale(W, alpha, sum)));
		g = g ? add(W, g, step) : step;
	}
	S->s[ih].out = g;
	S->y = g;
}

/* --train: f(parameter nm) computed at run time by a root node before the
 * recurrence (a [1] value the body captures), for derived scalars. */
static ir_value *par_run(low *W, const char *nm, ir_op op)
{
	ir_value *p = par(W, nm);
	return ir_build_op(&W->bld, W->g, op, 1, &p);
}

/* Heavy-ball RNN under --train: gamma = sigmoid(w), xi = softplus(c) at run time. */
static void lower_hb_train(low *W, body *S, int64_t n, const char *an)
{
	ir_value *ngamma = par_run(W, "w", OP_SIGMOID);
	ngamma = ir_build_op(&W->bld, W->g, OP_NEG, 1, &ngamma);
	ir_value *xi = par_run(W, "c", OP_SOFTPLUS);
	double dt = 1.0 / (double)n;
	int ih = add_states(W, S, 0, 1), im = add_states(W, S, 1, 1);
	ir_value *h = S->s[ih].in;
	ir_value *m = add(W, S->s[im].in, gemm(W, W->x, par(W, "W_x"), par(W, "b_x"), 1));
	for (int64_t k = 0; k < n; k++) {
		ir_value *f = op1(W, OP_TANH, gemm(W, h, par(W, "W_h"), par(W, "b_h"), 1));
		ir_value *h2 = add(W, h, scale(W, dt, act(W, an, m)));
		ir_value *dm = sub(W, add(W, mul(W, ngamma, m), f), mul(W, xi, h));
		m = add(W, m, scale(W, dt, dm));
		h = h2;
	}
	S->s[ih].out = h;
	S->s[im].out = m;
	S->y = h;
}

static void lower_hb(low *W, body *S)
{
	const cell_def *c = W->L.c;
	int64_t n = (int64_t)cell_opt_num(c, W->L.n, "steps");
	const char *an = cell_opt_word(c, W->L.n, "act");
	if (W->g->train) {
		lower_hb_train(W, S, n, an);
		return;
	}
	double wv = par_scalar(W, "w"), cv = par_scalar(W, "c");
	double gamma = 1.0 / (1.0 + exp(-wv));
	double xi = cv > 30 ? cv : log1p(exp(cv));
	double dt = 1.0 / (double)n;
	int ih = add_states(W, S, 0, 1), im = add_states(W, S, 1, 1);
	ir_value *h = S->s[ih].in;
	ir_value *m = add(W, S->s[im].in, gemm(W, W->x, par(W, "W_x"), par(W, "b_x"), 1));
	for (int64_t k = 0; k < n; k++) {
		ir_value *f = op1(W, OP_TANH, gemm(W, h, par(W, "W_h"), par(W, "b_h"), 1));
		ir_value *h2 = add(W, h, scale(W, dt, act(W, an, m)));
		ir_value *dm = sub(W, add(W, scale(W, -gamma, m), f), scale(W, xi, h));
		m = add(W, m, scale(W, dt, dm));
		h = h2;
	}
	S->s[ih].out = h;
	S->s[im].out = m;
	S->y = h;
}

static void lower_fast(low *W, body *S)
{
	if (W->g->train) {
		/* sigmoid(alpha), sigmoid(beta) at run time from the parameters */
		ir_value *sa = par_run(W, "alpha", OP_SIGMOID), *sb = par_run(W, "beta", OP_SIGMOID);
		int ih = add_states(W, S, 0, 1);
		ir_value *h = S->s[ih].in;
		ir_value *u = gemm(W, W->x, par(W, "W_x"), par(W, "b_x"), 1);
		ir_value *r = gemm(W, h, par(W, "W_h"), NULL, 1);
		S->s[ih].out = add(W, mul(W, sb, h), mul(W, sa, op1(W, OP_TANH, add(W, u, r))));
		S->y = S->s[ih].out;
		return;
	}
	double al = par_scalar(W, "alpha"), be = par_scalar(W, "beta");
	double sa = 1.0 / (1.0 + exp(-al)), sb = 1.0 / (1.0 + exp(-be));
	int ih = add_states(W, S, 0, 1);
	ir_value *h = S->s[ih].in;
	ir_value *u = gemm(W, W->x, par(W, "W_x"), par(W, "b_x"), 1);
	ir_value *r = gemm(W, h, par(W, "W_h"), NULL, 1);
	S->s[ih].out = add(W, scale(W, sb, h), scale(W, sa, op1(W, OP_TANH, add(W, u, r))));
	S->y = S->s[ih].out;
}

static ir_value *phi(low *W, ir_value *z)
{
	ir_node *n = ir_build_node(&W->bld, W->b, OP_ELU, 1, &z, 1);
	ir_attr_set_float(n, "alpha", 1.0f);
	return add(W, ir_build_done(&W->bld, n, NULL), cf(W, 1));
}

static void lower_attn(low *W, body *S)
{
	const cell_def *c = W->L.c;
	int64_t H = W->L.H, dk = key_size(c, W->L.n, H);
	double mu = cell_opt_num(c, W->L.n, "mu"), s = cell_opt_num(c, W->L.n, "s");
	int length = !strcmp(cell_opt_word(c, W->L.n, "weighting"), "length");
	ir_dim B = W->L.B;
	int iS = add_states(W, S, 0, 1), iz = add_states(W, S, 1, 1), ip = length ? -1 : add_states(W, S, 2, 1);
	ir_value *q = phi(W, gemm(W, W->x, par(W, "W_q"), par(W, "b_q"), 1));
	ir_value *k = phi(W, gemm(W, W->x, par(W, "W_k"), par(W, "b_k"), 1));
	/* an explicit copy (Affine 1, 0; Identity would be a view): v is read
	 * from memory by a product, and a column of the merged projection is
	 * not contiguous */
	ir_value *v = op1(W, OP_AFFINE, gemm(W, W->x, par(W, "W_v"), par(W, "b_v"), 1));
	ir_attr_set_float(v->producer, "alpha", 1.0f);
	ir_attr_set_float(v->producer, "beta", 0.0f);
	ir_dim kd[3] = {B, ir_dim_const(dk), ir_dim_const(1)}, vd[3] = {B, ir_dim_const(1), ir_dim_const(H)};
	ir_dim sd[3] = {B, ir_dim_const(dk), ir_dim_const(H)}, qd[3] = {B, ir_dim_const(1), ir_dim_const(dk)};
	ir_dim flat[2] = {B, ir_dim_const(dk * H)}, yd[2] = {B, ir_dim_const(H)};
	ir_value *kv = mul(W, reshape(W, k, 3, kd), reshape(W, v, 3, vd));      /* [B, dk, H] */
	ir_value *S3 = reshape(W, S->s[iS].in, 3, sd), *S2;
	if (length) {
		/* w_t = s (1 - mu^(L-t+1)) / (1 - mu), s (L-t+1) for mu = 1 */
		ir_value *e = add(W, sub(W, W->len, W->t), cf(W, 1));
		ir_value *wt = mu == 1.0 ? scale(W, s, e)
			: scale(W, s / (1.0 - mu), sub(W, cf(W, 1), op2(W, OP_POW, cf(W, mu), e)));
		S2 = add(W, S3, mul(W, wt, kv));
	} else {
		ir_value *p2 = add(W, scale(W, mu, reshape(W, S->s[ip].in, 3, sd)), kv);
		S->s[ip].out = reshape(W, p2, 2, flat);
		S2 = add(W, S3, scale(W, s, p2));
	}
	S->s[iS].out = reshape(W, S2, 2, flat);
	ir_value *z2 = add(W, S->s[iz].in, k);
	S->s[iz].out = z2;
	ir_value *q3 = reshape(W, q, 3, qd);
	ir_value *num = op2(W, OP_MATMUL, q3, S2);                              /* [B, 1, H] */
	ir_value *den = op2(W, OP_MATMUL, q3, reshape(W, z2, 3, kd));           /* [B, 1, 1] */
	ir_value *y3 = op2(W, OP_DIV, num, add(W, den, cf(W, 1e-6)));
	S->y = reshape(W, y3, 2, yd);   /* y_t [B, H] */
}

/* ---- the lowering: the recurrence ---------------------------------------------------------- */

/* Every state of the body has a new value of its own: a value another
 * state also is, or a state's input, is copied.  1 after reporting an
 * internal error. */
static int own_state_outputs(low *W, body *S, ir_node *n)
{
	for (int i = 0; i < S->n; i++)
		if (!S->s[i].out) {
			diag_node(W->D, n, "internal error: %s leaves state %d without a new value", W->L.c->name, i);
			return 1;
		}
	/* a state whose new value is another state's input (or shared) needs a
	 * copy, so that every body output is a value of its own */
	for (int i = 0; i < S->n; i++) {
		int clash = S->s[i].out->kind == VAL_STEP;
		for (int j = 0; j < i; j++)
			clash |= S->s[j].out == S->s[i].out;
		if (clash)
			S->s[i].out = op1(W, OP_IDENTITY, S->s[i].out);
	}
	return 0;
}

/* The body's inputs (x, the states, the step counters) and outputs (the new
 * states, then y). */
static void body_io(low *W, body *S, ir_value *y, int has_step)
{
	ir_graph *b = W->b, *g = W->g;
	b->ninputs = 1 + S->n + has_step;
	b->inputs = arena_array(g->A, (size_t)b->ninputs, sizeof *b->inputs);
	b->inputs[0] = W->x;
	for (int i = 0; i < S->n; i++)
		b->inputs[1 + i] = S->s[i].in;
	if (has_step)
		b->inputs[1 + S->n] = W->t;
	if (has_step == 2)
		b->inputs[2 + S->n] = W->len;
	b->noutputs = S->n + 1;
	b->outputs = arena_array(g->A, (size_t)b->noutputs, sizeof *b->outputs);
	for (int i = 0; i < S->n; i++)
		b->outputs[i] = S->s[i].out;
	b->outputs[S->n] = y;
}

/* The recurrence that replaces CELL node n, appended: X, the initial states
 * (cut per gate block), the final states, y.  Returns the final states
 * (fin[i]: the CELL's own output, or a [B, cols] part of it that
 * join_finals joins). */
static ir_value **append_recurrence(low *W, body *S, ir_node *n, int has_step)
{
	ir_graph *g = W->g;
	ir_node *r = ir_node_new(g, OP_RECURRENCE, n->name, 1 + S->n, S->n + 1);
	r->rec_source = IR_REC_CELL;
	r->origin = W->origin;
	r->body = W->b;
	r->in[0] = n->in[0];
	for (int i = 0; i < S->n; i++) {
		bstate *s = &S->s[i];
		ir_value *init = n->in[1 + s->cell_state];
		if (init && s->ncols != W->L.states[s->cell_state].size)
			init = cols(W, g, init, s->col0, s->col0 + s->ncols);
		r->in[1 + i] = init;
	}
	ir_value **fin = arena_array(g->A, (size_t)S->n, sizeof *fin);
	for (int i = 0; i < S->n; i++) {
		bstate *s = &S->s[i];
		ir_value *want = 1 + s->cell_state < n->nout ? n->out[1 + s->cell_state] : NULL;
		if (!want)
			continue;
		if (s->ncols == W->L.states[s->cell_state].size) {
			fin[i] = want;
		} else {
			fin[i] = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			fin[i]->shape.rank = 2;
			fin[i]->shape.d[0] = W->L.B;
			fin[i]->shape.d[1] = ir_dim_const(s->ncols);
		}
		r->out[i] = fin[i];
	}
	r->out[S->n] = n->out[0];
	int64_t ax = W->L.seq_axis;
	ir_attr_set_int(r, "n_seq", 1);
	ir_attr_set_int(r, "n_state", S->n);
	ir_attr_set_int(r, "n_out", 1);
	ir_attr_set_int(r, "reverse", 0);
	ir_attr_set_ints(r, "seq_axis", 1, &ax);
	ir_attr_set_ints(r, "out_axis", 1, &ax);
	ir_attr_set_int(r, "has_lens", 0);
	ir_attr_set_int(r, "has_step", has_step);
	for (int i = 0; i < r->nout; i++)
		if (r->out[i])
			r->out[i]->producer = r;
	ir_append(g, r);
	return fin;
}

/* The final states split per gate block joined back into the CELL's
 * outputs: a Concat on the last axis. */
static void join_finals(low *W, body *S, ir_node *n, ir_value **fin)
{
	for (int i = 0; i < S->n;) {
		int k = S->s[i].cell_state, parts = 1;
		while (i + parts < S->n && S->s[i + parts].cell_state == k)
			parts++;
		ir_value *want = 1 + k < n->nout ? n->out[1 + k] : NULL;
		if (want && parts > 1) {
			ir_node *cc = ir_build_node(&W->bld, W->g, OP_CONCAT, parts, fin + i, 1);
			ir_attr_set_int(cc, "axis", 1);
			ir_build_done(&W->bld, cc, want);
		}
		i += parts;
	}
}

int cell_lower(ir_graph *g, ir_node *n, diag *D)
{
	low W0 = {.g = g, .D = D}, *W = &W0;
	if (layer_read(&W->L, g, n, D))
		return 1;
	const cell_def *c = W->L.c;
	if (!n->name || !*n->name)
		n->name = ir_unique_name(g, c->name);
	W->origin = arena_printf(g->A, "%s '%s'", c->name, n->name);
	W->bld = (ir_build){.origin = W->origin, .D = D, .blame = W->L.n, .what = "lowered", .errors = &W->errors};
	W->b = ir_graph_new(g->A, g, n->name);
	W->x = step_value(W, "x", 2, W->L.B, W->L.I);
	int has_step = c->dyn == D_NAG ? 1 : 0;
	if (c->kind == K_ATTN && !strcmp(cell_opt_word(c, n, "weighting"), "length"))
		has_step = 2;
	if (has_step) {
		W->t = step_value(W, "t", 0, W->L.B, 0);
		if (has_step == 2)
			W->len = step_value(W, "L", 0, W->L.B, 0);
	}
	body S0, *S = &S0;
	memset(S, 0, sizeof *S);
	switch (c->kind) {
	case K_RNN: case K_LSTM: case K_GRU: case K_DTRIV: lower_base(W, S); break;
	case K_IRNN: lower_irnn(W, S); break;
	case K_HB: lower_hb(W, S); break;
	case K_FAST: lower_fast(W, S); break;
	case K_ATTN: lower_attn(W, S); break;
	}
	if (W->errors)
		return W->errors;
	if (own_state_outputs(W, S, n))
		return 1;
	body_io(W, S, S->y, has_step);
	join_finals(W, S, n, append_recurrence(W, S, n, has_step));
	return W->errors;
}
