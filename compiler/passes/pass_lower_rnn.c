/* pass_lower_rnn.c: ONNX LSTM / GRU / RNN -> one RECURRENCE per direction.
 *
 * requires: pass_infer (every value has dtype and shape; X is [T, B, I] or
 *           [B, T, I] with T and B constant or symbolic).
 * produces: no OPK_RNN node is left.  Each direction becomes a RECURRENCE (see
 *           ir.h) whose body is plain IR: one GEMM for x_t W^T (+ pre-summed
 *           bias), one GEMM for h R^T (two for GRU with linear_before_reset=0,
 *           whose second product needs r (.) h), Slices on the last axis for the
 *           gate blocks and element-wise gate math.  Weights are split per
 *           direction (and per gate block where needed) into new VAL_WEIGHT
 *           values now, so later passes see ordinary matrices.  Y / Y_h / Y_c
 *           are assembled outside the recurrences with Unsqueeze (+ Concat for
 *           bidirectional), initial states are cut per direction with Squeeze
 *           (one direction) or Gather (two).
 * breaks:   nothing; the original W/R/B/P values may be left unused (the
 *           emitter writes only weights that are used).
 *
 * Semantics follow the ONNX specification, with onnxruntime's conventions
 * where the specification is silent: activation_alpha/activation_beta are
 * consumed in order only by activations that take them (LeakyRelu,
 * ThresholdedRelu and Elu take alpha; Affine, ScaledTanh and HardSigmoid take
 * alpha and beta), defaults are those of the ONNX operators of the same name;
 * `clip` bounds the pre-activations of the gates (after peepholes), not the
 * cell state fed to h(); input_forget couples f = 1 - i; one set of
 * activations for a bidirectional node serves both directions.
 *
 * Legend: T steps, B batch, I input size, H hidden size, G = gates * H,
 * D directions.
 */
#include "elem.h"
#include "infer.h"
#include "ir_build.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* ---- activations ------------------------------------------------------- */

typedef struct act {
	ir_op op;
	float alpha, beta;
} act;

/* The activations the ONNX RNN operators name (by their ops.def spelling);
 * activation_alpha and activation_beta are the first and second attribute of
 * the op's elem.def row, with its defaults (those of the ONNX operator). */
static const ir_op act_ops[] = {
	OP_RELU, OP_TANH, OP_SIGMOID, OP_AFFINE, OP_LEAKYRELU, OP_THRELU, OP_SCALEDTANH,
	OP_HARDSIGMOID, OP_ELU, OP_SOFTSIGN, OP_SOFTPLUS,
};

static int same_name_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
		char y = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
		if (x != y)
			return 0;
	}
	return *a == *b;
}

/* ---- lowering context ---------------------------------------------------- */

typedef struct lower {
	ir_graph *g;            /* root graph */
	diag *D;
	ir_node *src;           /* the ONNX node being lowered */
	const char *origin;     /* "LSTM 'name'" for provenance comments */
	int ndir;               /* 1 or 2 */
	int layout;             /* 0: [T, B, .]  1: [B, T, .] */
	int64_t H, I;           /* hidden and input size */
	int ngates;             /* 4 LSTM, 3 GRU, 1 RNN */
	float clip;             /* < 0: none */
	act acts[6];            /* per direction: nact each */
	int nact;               /* activations per direction: 3, 2, 1 */
	ir_dim T, B;            /* time and batch dims of X */
	int errors;
	ir_build bld;           /* how the lowering makes its nodes (origin, inference) */
	/* small constants made so far, shared by the nodes of one graph */
	struct small_const { ir_graph *g; ir_dtype dt; double v; ir_value *c; } consts[32];
	int nconsts;
	rnn_parts *parts;       /* the weight parts of the stage's layers so far */
} lower;

/* ---- weight parts, one per part of a source weight ----------------------- */

/* A part of an ONNX weight (rows of a direction of W, R or P; a summed
 * bias block) is made once per stage: layers that read the same W (a
 * module called at every step of a traced loop, then written as steps by
 * pass_onestep; two calls of one module on two inputs) read one weight,
 * so that the steps they make are the same and the weights file holds it
 * once.  The key is the source value and what was cut from it. */
typedef struct part_key {
	const ir_value *src;
	char kind;              /* 'w' weight_rows, 'b' bias_sum, 'r' bias_r_block */
	int dir;                /* the direction, + 4 * the layer's directions */
	int64_t a, b, c, d, e;
} part_key;

struct rnn_parts {
	int n, cap;
	part_key *key;
	ir_value **v;
};

rnn_parts *lower_rnn_parts(arena *A)
{
	rnn_parts *P = arena_alloc(A, sizeof *P);
	memset(P, 0, sizeof *P);
	return P;
}

static ir_value *part_find(lower *L, const part_key *k)
{
	rnn_parts *P = L->parts;
	for (int i = 0; P && i < P->n; i++)
		if (memcmp(&P->key[i], k, sizeof *k) == 0)
			return P->v[i];
	return NULL;
}

static ir_value *part_keep(lower *L, const part_key *k, ir_value *v)
{
	rnn_parts *P = L->parts;
	if (!P || !v)
		return v;
	if (P->n == P->cap) {
		int cap = P->cap ? 2 * P->cap : 16;
		P->key = arena_grow(L->g->A, P->key, (size_t)P->n, (size_t)cap, sizeof *P->key);
		P->v = arena_grow(L->g->A, P->v, (size_t)P->n, (size_t)cap, sizeof *P->v);
		P->cap = cap;
	}
	P->key[P->n] = *k;
	P->v[P->n++] = v;
	return v;
}

/* a key with no padding bytes left undefined (memcmp compares it whole) */
static part_key part_of(const ir_value *src, char kind, int dir, int64_t a, int64_t b, int64_t c, int64_t d,
			int64_t e)
{
	part_key k;
	memset(&k, 0, sizeof k);
	k.src = src;
	k.kind = kind;
	k.dir = dir;
	k.a = a;
	k.b = b;
	k.c = c;
	k.d = d;
	k.e = e;
	return k;
}

static ir_value *op2(lower *L, ir_graph *g, ir_op op, ir_value *a, ir_value *b)
{
	ir_value *in[2] = {a, b};
	return ir_build_op(&L->bld, g, op, 2, in);
}

/* A scalar f32 or one-element i64 constant of graph g, made once. */
static ir_value *small_const(lower *L, ir_graph *g, ir_dtype dt, double v)
{
	for (int i = 0; i < L->nconsts; i++)
		if (L->consts[i].g == g && L->consts[i].dt == dt && L->consts[i].v == v)
			return L->consts[i].c;
	int64_t iv = (int64_t)v;
	ir_value *c = dt == DT_F32 ? ir_const_f32_scalar(g, NULL, (float)v) : ir_const_i64(g, NULL, 1, &iv);
	if (L->nconsts < (int)COUNTOF(L->consts))
		L->consts[L->nconsts++] = (struct small_const){g, dt, v, c};
	return c;
}

static ir_value *f32_scalar(lower *L, ir_graph *g, float v) { return small_const(L, g, DT_F32, v); }
static ir_value *i64_1(lower *L, ir_graph *g, int64_t v) { return small_const(L, g, DT_I64, (double)v); }

/* Y = A B^T (+ C): the only product form the lowering makes. */
static ir_value *gemm(lower *L, ir_graph *g, ir_value *a, ir_value *w, ir_value *bias)
{
	ir_value *in[3] = {a, w, bias};
	ir_node *n = ir_build_node(&L->bld, g, OP_GEMM, bias ? 3 : 2, in, 1);
	ir_attr_set_int(n, "transB", 1);
	return ir_build_done(&L->bld, n, NULL);
}

/* Columns [k*H, (k+1)*H) of a [B, G] value: a gate block. */
static ir_value *block(lower *L, ir_graph *g, ir_value *v, int k)
{
	ir_value *in[4] = {v, i64_1(L, g, k * L->H), i64_1(L, g, (k + 1) * L->H), i64_1(L, g, 1)};
	return ir_build_op(&L->bld, g, OP_SLICE, 4, in);
}

/* Activation a(clip(x)). */
static ir_value *activate(lower *L, ir_graph *g, const act *a, ir_value *x, int clip)
{
	if (clip && L->clip >= 0) {
		ir_value *in[3] = {x, f32_scalar(L, g, -L->clip), f32_scalar(L, g, L->clip)};
		x = ir_build_op(&L->bld, g, OP_CLIP, 3, in);
	}
	ir_node *n = ir_build_node(&L->bld, g, a->op, 1, &x, 1);
	const elem_attr *at = elem_row_of(a->op)->attrs;
	if (at[0].name)
		ir_attr_set_float(n, at[0].name, a->alpha);
	if (at[1].name)
		ir_attr_set_float(n, at[1].name, a->beta);
	return ir_build_done(&L->bld, n, NULL);
}

/* ---- weights ------------------------------------------------------------- */

static int is_initializer(const ir_value *v)
{
	return v && v->data && (v->kind == VAL_WEIGHT || v->kind == VAL_CONST);
}

/* Checks that input `idx` (named `what`) is an f32 initializer of the given
 * constant shape.  Absent optional inputs pass when !required. */
static int check_weight(lower *L, int idx, const char *what, int rank, const int64_t *dims)
{
	ir_value *v = idx < L->src->nin ? L->src->in[idx] : NULL;
	if (!v)
		return 1;
	if (!is_initializer(v) && !ir_weights_at_run_time(L->g)) {
		diag_node(L->D, L->src, "%s must be an initializer (a constant tensor), not a run-time "
			  "input; bind it with --bind %s=FILE.pb", what, v->name);
		L->errors++;
		return 0;
	}
	if (v->dtype != DT_F32) {
		diag_node(L->D, L->src, "%s has element type %s; only f32 recurrent layers are supported",
			  what, ir_dtype_name(v->dtype));
		L->errors++;
		return 0;
	}
	int ok = v->shape.rank == rank;
	for (int i = 0; ok && i < rank; i++)
		ok = ir_dim_is_const(v->shape.d[i]) && v->shape.d[i].k == dims[i];
	if (!ok) {
		char want[96];
		int p = 0;
		for (int i = 0; i < rank; i++)
			p += snprintf(want + p, sizeof want - (size_t)p, "%s%lld", i ? ", " : "",
				      (long long)dims[i]);
		diag_node(L->D, L->src, "%s has shape %s, expected [%s]", what,
			  ir_shape_str(L->g->A, L->g, &v->shape), want);
		L->errors++;
		return 0;
	}
	return 1;
}

static ir_value *src_in(lower *L, int idx) { return idx < L->src->nin ? L->src->in[idx] : NULL; }

/* A new f32 weight [rows, cols] (cols 0: a vector [rows]) named after the
 * ONNX node, filled by the caller. */
static ir_value *new_weight(lower *L, const char *what, int dir, int64_t rows, int64_t cols)
{
	ir_shape s = {.rank = cols ? 2 : 1};
	s.d[0] = ir_dim_const(rows);
	if (cols)
		s.d[1] = ir_dim_const(cols);
	const char *name = arena_printf(L->g->A, "%s.%s%s", L->src->name, what,
					L->ndir == 2 ? (dir ? "_reverse" : "_forward") : "");
	if (ir_find_value(L->g, name))
		name = ir_unique_name(L->g, name);
	ir_value *v = ir_const_new(L->g, name, DT_F32, &s, NULL);
	v->kind = VAL_WEIGHT;
	v->origin = L->origin;
	return v;
}

/* Rows [row0, row0 + rows) of direction dir of a [D, ., cols] initializer,
 * as a matrix [rows, cols] (rows 0: one row as a vector [cols]). */
/* --train: elements [off, off + n) of the flattened src, computed at run time
 * by root nodes before the recurrence (rows 0: a vector [n], else [rows, n / rows]). */
static ir_value *run_part(lower *L, ir_value *src, int64_t off, int64_t n, int64_t rows)
{
	ir_graph *g = L->g;
	int64_t total = ir_shape_const_numel(&src->shape), flat[1] = {total};
	ir_value *in2[2] = {src, ir_const_i64(g, NULL, 1, flat)};
	ir_value *f = ir_build_op(&L->bld, g, OP_RESHAPE, 2, in2);
	ir_value *v = f;
	if (off != 0 || n != total) {
		ir_value *in4[4] = {f, ir_const_i64(g, NULL, 1, &off), ir_const_i64(g, NULL, 1, &(int64_t){off + n}),
				    ir_const_i64(g, NULL, 1, &(int64_t){0})};
		v = ir_build_op(&L->bld, g, OP_SLICE, 4, in4);
	}
	if (rows) {
		int64_t d[2] = {rows, n / rows};
		ir_value *in[2] = {v, ir_const_i64(g, NULL, 2, d)};
		v = ir_build_op(&L->bld, g, OP_RESHAPE, 2, in);
	}
	return v;
}

static ir_value *weight_rows_made(lower *L, int idx, const char *what, int dir, int64_t row0,
				  int64_t rows, int64_t cols);

static ir_value *weight_rows(lower *L, int idx, const char *what, int dir, int64_t row0,
			     int64_t rows, int64_t cols)
{
	part_key k = part_of(src_in(L, idx), 'w', dir + 4 * L->ndir, row0, rows, cols, ir_weights_at_run_time(L->g), 0);
	ir_value *v = part_find(L, &k);
	return v ? v : part_keep(L, &k, weight_rows_made(L, idx, what, dir, row0, rows, cols));
}

static ir_value *weight_rows_made(lower *L, int idx, const char *what, int dir, int64_t row0,
				  int64_t rows, int64_t cols)
{
	ir_value *src = src_in(L, idx);
	if (ir_weights_at_run_time(L->g)) {
		int64_t per_dir = ir_shape_const_numel(&src->shape) / L->ndir;
		return run_part(L, src, dir * per_dir + row0 * cols, (rows ? rows : 1) * cols, rows);
	}
	int64_t per_dir = ir_shape_const_numel(&src->shape) / L->ndir;
	ir_value *v = rows ? new_weight(L, what, dir, rows, cols) : new_weight(L, what, dir, cols, 0);
	rows = rows ? rows : 1;
	memcpy(v->data, (const float *)src->data + dir * per_dir + row0 * cols,
	       (size_t)(rows * cols) * sizeof(float));
	return v;
}

/* Bias of direction dir for gate blocks [k0, k1): Wb + Rb per block, Rb left
 * out for the blocks in [skip0, skip1) (GRU's Rbh with linear_before_reset).
 * NULL when the node has no B. */
static ir_value *bias_sum_made(lower *L, int dir, int k0, int k1, int skip0, int skip1, const char *what);

static ir_value *bias_sum(lower *L, int dir, int k0, int k1, int skip0, int skip1, const char *what)
{
	ir_value *Bv = src_in(L, 3);
	if (!Bv)
		return NULL;
	/* H is part of the key: the blocks are k * H wide */
	part_key k = part_of(Bv, 'b', dir + 4 * L->ndir, k0, k1, skip0, skip1, L->H * 2 + ir_weights_at_run_time(L->g));
	ir_value *v = part_find(L, &k);
	return v ? v : part_keep(L, &k, bias_sum_made(L, dir, k0, k1, skip0, skip1, what));
}

static ir_value *bias_sum_made(lower *L, int dir, int k0, int k1, int skip0, int skip1, const char *what)
{
	ir_value *Bv = src_in(L, 3);
	int64_t G = L->ngates * L->H;
	if (ir_weights_at_run_time(L->g)) {
		int64_t r0 = k0, r1 = k1 < skip0 || skip0 >= skip1 ? k1 : skip0;
		if (r1 <= r0)
			return run_part(L, Bv, dir * 2 * G + k0 * L->H, (k1 - k0) * L->H, 0);
		ir_value *rbv = run_part(L, Bv, dir * 2 * G + G + r0 * L->H, (r1 - r0) * L->H, 0);
		if (r1 < k1) {
			/* the blocks [skip0, k1) take Wb alone: add Rb to the front part */
			ir_value *front = run_part(L, Bv, dir * 2 * G + r0 * L->H, (r1 - r0) * L->H, 0);
			ir_value *back = run_part(L, Bv, dir * 2 * G + r1 * L->H, (k1 - r1) * L->H, 0);
			ir_value *in[2] = {op2(L, L->g, OP_ADD, front, rbv), back};
			ir_node *c = ir_build_node(&L->bld, L->g, OP_CONCAT, 2, in, 1);
			ir_attr_set_int(c, "axis", 0);
			return ir_build_done(&L->bld, c, NULL);
		}
		return op2(L, L->g, OP_ADD, run_part(L, Bv, dir * 2 * G + k0 * L->H, (k1 - k0) * L->H, 0), rbv);
	}
	const float *wb = (const float *)Bv->data + dir * 2 * G, *rb = wb + G;
	ir_value *v = new_weight(L, what, dir, (k1 - k0) * L->H, 0);
	float *o = v->data;
	for (int k = k0; k < k1; k++)
		for (int64_t j = 0; j < L->H; j++) {
			int64_t e = k * L->H + j;
			*o++ = wb[e] + (k >= skip0 && k < skip1 ? 0.0f : rb[e]);
		}
	return v;
}

/* Rb of gate block k of direction dir alone ([H]); NULL if no B or zero. */
static ir_value *bias_r_block_made(lower *L, int dir, int k, const char *what);

static ir_value *bias_r_block(lower *L, int dir, int k, const char *what)
{
	ir_value *Bv = src_in(L, 3);
	if (!Bv)
		return NULL;
	part_key key = part_of(Bv, 'r', dir + 4 * L->ndir, k, L->H, L->ngates, ir_weights_at_run_time(L->g), 0);
	ir_value *v = part_find(L, &key);
	return v ? v : part_keep(L, &key, bias_r_block_made(L, dir, k, what));
}

static ir_value *bias_r_block_made(lower *L, int dir, int k, const char *what)
{
	ir_value *Bv = src_in(L, 3);
	int64_t G = L->ngates * L->H;
	if (ir_weights_at_run_time(L->g))
		return run_part(L, Bv, dir * 2 * G + G + k * L->H, L->H, 0);
	const float *rb = (const float *)Bv->data + dir * 2 * G + G + k * L->H;
	int nonzero = 0;
	for (int64_t j = 0; j < L->H; j++)
		nonzero |= rb[j] != 0.0f;
	if (!nonzero)
		return NULL;
	ir_value *v = new_weight(L, what, dir, L->H, 0);
	memcpy(v->data, rb, (size_t)L->H * sizeof(float));
	return v;
}

/* ---- attributes ----------------------------------------------------------- */

static int parse_acts(lower *L, const act *defaults)
{
	ir_attr *names = ir_attr_find(L->src, "activations");
	ir_attr *al = ir_attr_find(L->src, "activation_alpha");
	ir_attr *be = ir_attr_find(L->src, "activation_beta");
	int want = L->nact * L->ndir;
	if (!names || names->kind != ATTR_STRINGS || names->n == 0) {
		for (int i = 0; i < want; i++)
			L->acts[i] = defaults[i % L->nact];
		return 1;
	}
	if (names->n != want && names->n != L->nact) {
		diag_node(L->D, L->src, "activations lists %d functions; expected %d", names->n, want);
		L->errors++;
		return 0;
	}
	int ia = 0, ib = 0;
	for (int i = 0; i < want; i++) {
		const char *s = names->strings[i % names->n];
		size_t k = 0;
		while (k < COUNTOF(act_ops) && !same_name_nocase(ir_op_name(act_ops[k]), s))
			k++;
		if (k == COUNTOF(act_ops)) {
			diag_node(L->D, L->src, "unsupported activation '%s' (supported: Relu, Tanh, "
				  "Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
				  "HardSigmoid, Elu, Softsign, Softplus)", s);
			L->errors++;
			return 0;
		}
		const elem_attr *at = elem_row_of(act_ops[k])->attrs;
		act a = {act_ops[k], (float)at[0].def, (float)at[1].def};
		if (at[0].name && al && al->kind == ATTR_FLOATS && ia < al->n)
			a.alpha = al->floats[ia++];
		if (at[1].name && be && be->kind == ATTR_FLOATS && ib < be->n)
			a.beta = be->floats[ib++];
		L->acts[i] = a;
	}
	return 1;
}

/* ---- per-direction bodies --------------------------------------------------- */

typedef struct dir_io {
	ir_graph *body;
	ir_value *x, *h, *c;    /* body inputs: x_t [B, I], states [B, H] */
	ir_value *h2, *c2;      /* new states */
} dir_io;

static ir_value *step_input(lower *L, ir_graph *body, const char *name, ir_dim rows, int64_t cols)
{
	ir_value *v = ir_value_new(body, ir_free_name(body, arena_printf(L->g->A, "%s.%s", body->name, name)), VAL_STEP, DT_F32);
	v->shape.rank = 2;
	v->shape.d[0] = rows;
	v->shape.d[1] = ir_dim_const(cols);
	v->origin = L->origin;
	return v;
}

/* it = f(clip(Xt Wi^T + Ht-1 Ri^T + Pi (.) Ct-1 + Wbi + Rbi)), ... (ONNX LSTM) */
static void body_lstm(lower *L, dir_io *io, int dir)
{
	ir_graph *g = io->body;
	int64_t H = L->H, I = L->I;
	const act *f = &L->acts[dir * 3], *ga = &L->acts[dir * 3 + 1], *h = &L->acts[dir * 3 + 2];
	int input_forget = ir_attr_int(L->src, "input_forget", 0) != 0;
	ir_value *P = src_in(L, 7);

	ir_value *gx = gemm(L, g, io->x, weight_rows(L, 1, "W", dir, 0, 4 * H, I),
			    bias_sum(L, dir, 0, 4, 0, 0, "B"));
	ir_value *gh = gemm(L, g, io->h, weight_rows(L, 2, "R", dir, 0, 4 * H, H), NULL);
	/* gate blocks in ONNX order i, o, f, c; peepholes in order i, o, f */
	ir_value *pre[4];
	for (int k = 0; k < 4; k++)
		pre[k] = (k == 2 && input_forget) ? NULL
			: op2(L, g, OP_ADD, block(L, g, gx, k), block(L, g, gh, k));
	ir_value *Pi = NULL, *Po = NULL, *Pf = NULL;
	if (P) {
		Pi = weight_rows(L, 7, "P_i", dir, 0, 0, H);
		Po = weight_rows(L, 7, "P_o", dir, 1, 0, H);
		if (!input_forget)
			Pf = weight_rows(L, 7, "P_f", dir, 2, 0, H);
	}
	ir_value *in_i = Pi ? op2(L, g, OP_ADD, pre[0], op2(L, g, OP_MUL, Pi, io->c)) : pre[0];
	ir_value *i = activate(L, g, f, in_i, 1);
	ir_value *fg;
	if (input_forget) {
		fg = op2(L, g, OP_SUB, f32_scalar(L, g, 1.0f), i);
	} else {
		ir_value *in_f = Pf ? op2(L, g, OP_ADD, pre[2], op2(L, g, OP_MUL, Pf, io->c)) : pre[2];
		fg = activate(L, g, f, in_f, 1);
	}
	ir_value *cc = activate(L, g, ga, pre[3], 1);
	ir_value *c2 = op2(L, g, OP_ADD, op2(L, g, OP_MUL, fg, io->c), op2(L, g, OP_MUL, i, cc));
	ir_value *in_o = Po ? op2(L, g, OP_ADD, pre[1], op2(L, g, OP_MUL, Po, c2)) : pre[1];
	ir_value *o = activate(L, g, f, in_o, 1);
	io->h2 = op2(L, g, OP_MUL, o, activate(L, g, h, c2, 0));
	io->c2 = c2;
}

/* zt = f(..z), rt = f(..r), ht = g(Xt Wh^T + (rt (.) Ht-1) Rh^T + Rbh + Wbh)
 * or, linear_before_reset: g(Xt Wh^T + rt (.) (Ht-1 Rh^T + Rbh) + Wbh);
 * Ht = (1 - zt) (.) ht + zt (.) Ht-1 (ONNX GRU). */
static void body_gru(lower *L, dir_io *io, int dir)
{
	ir_graph *g = io->body;
	int64_t H = L->H, I = L->I;
	const act *f = &L->acts[dir * 2], *ga = &L->acts[dir * 2 + 1];
	int lbr = ir_attr_int(L->src, "linear_before_reset", 0) != 0;

	/* Rbh stays out of the pre-summed bias when it is multiplied by r */
	ir_value *gx = gemm(L, g, io->x, weight_rows(L, 1, "W", dir, 0, 3 * H, I),
			    bias_sum(L, dir, 0, 3, lbr ? 2 : 3, 3, "B"));
	ir_value *gh = gemm(L, g, io->h, weight_rows(L, 2, lbr ? "R" : "R_zr", dir, 0, lbr ? 3 * H : 2 * H, H),
			    NULL);
	ir_value *z = activate(L, g, f, op2(L, g, OP_ADD, block(L, g, gx, 0), block(L, g, gh, 0)), 1);
	ir_value *r = activate(L, g, f, op2(L, g, OP_ADD, block(L, g, gx, 1), block(L, g, gh, 1)), 1);
	ir_value *hn;
	if (lbr) {
		ir_value *ghn = block(L, g, gh, 2);
		ir_value *rbh = bias_r_block(L, dir, 2, "Rb_h");
		if (rbh)
			ghn = op2(L, g, OP_ADD, ghn, rbh);
		hn = op2(L, g, OP_MUL, r, ghn);
	} else {
		ir_value *rh = op2(L, g, OP_MUL, r, io->h);
		hn = gemm(L, g, rh, weight_rows(L, 2, "R_h", dir, 2 * H, H, H), NULL);
	}
	ir_value *n = activate(L, g, ga, op2(L, g, OP_ADD, block(L, g, gx, 2), hn), 1);
	ir_value *keep = op2(L, g, OP_MUL, z, io->h);
	ir_value *upd = op2(L, g, OP_MUL, op2(L, g, OP_SUB, f32_scalar(L, g, 1.0f), z), n);
	io->h2 = op2(L, g, OP_ADD, upd, keep);
}

/* Ht = f(Xt Wi^T + Ht-1 Ri^T + Wbi + Rbi) (ONNX RNN) */
static void body_rnn(lower *L, dir_io *io, int dir)
{
	ir_graph *g = io->body;
	ir_value *gx = gemm(L, g, io->x, weight_rows(L, 1, "W", dir, 0, L->H, L->I),
			    bias_sum(L, dir, 0, 1, 0, 0, "B"));
	ir_value *gh = gemm(L, g, io->h, weight_rows(L, 2, "R", dir, 0, L->H, L->H), NULL);
	io->h2 = activate(L, g, &L->acts[dir], op2(L, g, OP_ADD, gx, gh), 1);
}

/* ---- outer graph ------------------------------------------------------------ */

/* Initial state of direction dir from initial_h / initial_c ([D, B, H], or
 * [B, D, H] for layout 1) as [B, H]; NULL when absent (zeros). */
static ir_value *init_state(lower *L, int idx, int dir)
{
	ir_value *v = src_in(L, idx);
	if (!v)
		return NULL;
	int64_t ax = L->layout ? 1 : 0;
	if (L->ndir == 1) {
		ir_value *in[2] = {v, i64_1(L, L->g, ax)};
		return ir_build_op(&L->bld, L->g, OP_SQUEEZE, 2, in);
	}
	int64_t d = dir;
	ir_shape s0 = {.rank = 0};
	ir_value *in[2] = {v, ir_const_new(L->g, NULL, DT_I64, &s0, &d)};
	ir_node *n = ir_build_node(&L->bld, L->g, OP_GATHER, 2, in, 1);
	ir_attr_set_int(n, "axis", ax);
	return ir_build_done(&L->bld, n, NULL);
}

/* out = per-direction parts [.., B, H] joined on a new axis `ax`. */
static void assemble(lower *L, ir_value *out, ir_value *const *parts, int64_t ax)
{
	ir_graph *g = L->g;
	if (L->ndir == 1) {
		ir_value *in[2] = {parts[0], i64_1(L, g, ax)};
		ir_build_done(&L->bld, ir_build_node(&L->bld, g, OP_UNSQUEEZE, 2, in, 1), out);
		return;
	}
	ir_value *u[2];
	for (int d = 0; d < 2; d++) {
		ir_value *in[2] = {parts[d], i64_1(L, g, ax)};
		u[d] = ir_build_op(&L->bld, g, OP_UNSQUEEZE, 2, in);
	}
	ir_node *n = ir_build_node(&L->bld, g, OP_CONCAT, 2, u, 1);
	ir_attr_set_int(n, "axis", ax);
	ir_build_done(&L->bld, n, out);
}

static ir_value *rec_output(lower *L, int rank, const ir_dim *d)
{
	ir_value *v = ir_value_new(L->g, NULL, VAL_TEMP, DT_F32);
	v->shape.rank = rank;
	for (int i = 0; i < rank; i++)
		v->shape.d[i] = d[i];
	v->origin = L->origin;
	return v;
}

/* sequence_lens that is a constant equal to T for every row changes nothing. */
static int lens_trivial(lower *L, ir_value *lens)
{
	if (!ir_value_is_const(lens) || !ir_dim_is_const(L->T))
		return 0;
	int64_t n = ir_shape_const_numel(&lens->shape);
	for (int64_t b = 0; b < n; b++)
		if (ir_const_int(lens, b) != L->T.k)
			return 0;
	return 1;
}

/* The layer's attributes: gates and activations per direction, directions
 * (*first_reverse: one direction, reversed), layout, clip. */
static int read_layer_attrs(lower *L, int *first_reverse)
{
	ir_node *src = L->src;
	diag *D = L->D;
	switch (src->op) {
	case OP_LSTM: L->ngates = 4; L->nact = 3; break;
	case OP_GRU: L->ngates = 3; L->nact = 2; break;
	default: L->ngates = 1; L->nact = 1; break;
	}

	const char *dirs = ir_attr_string(src, "direction", "forward");
	*first_reverse = 0;
	if (!strcmp(dirs, "forward")) {
		L->ndir = 1;
	} else if (!strcmp(dirs, "reverse")) {
		L->ndir = 1;
		*first_reverse = 1;
	} else if (!strcmp(dirs, "bidirectional")) {
		L->ndir = 2;
	} else {
		diag_node(D, src, "direction '%s' is not forward, reverse or bidirectional", dirs);
		return 1;
	}
	L->layout = (int)ir_attr_int(src, "layout", 0);
	if (L->layout != 0 && L->layout != 1) {
		diag_node(D, src, "layout %d is not 0 or 1", L->layout);
		return 1;
	}
	ir_attr *clip = ir_attr_find(src, "clip");
	if (clip) {
		L->clip = clip->kind == ATTR_FLOAT ? clip->f : (float)clip->i;
		if (!(L->clip >= 0)) {
			diag_node(D, src, "clip must be a non-negative threshold");
			return 1;
		}
	}
	return 0;
}

/* X, W and R, and the weights' shapes; T, B, I and H from them. */
static int check_layer_inputs(lower *L)
{
	ir_graph *g = L->g;
	ir_node *src = L->src;
	diag *D = L->D;
	ir_value *X = src->in[0], *W = src_in(L, 1), *R = src_in(L, 2);
	if (!X || !W || !R) {
		diag_node(D, src, "X, W and R are required");
		return 1;
	}
	if (X->dtype != DT_F32) {
		diag_node(D, src, "X has element type %s; only f32 recurrent layers are supported",
			  ir_dtype_name(X->dtype));
		return 1;
	}
	if (X->shape.rank != 3 || !ir_dim_is_const(X->shape.d[2])) {
		diag_node(D, src, "X must be 3-D with a constant input size, got %s",
			  ir_shape_str(g->A, g, &X->shape));
		return 1;
	}
	L->T = X->shape.d[L->layout ? 1 : 0];
	L->B = X->shape.d[L->layout ? 0 : 1];
	L->I = X->shape.d[2].k;
	if (R->shape.rank != 3 || !ir_dim_is_const(R->shape.d[2])) {
		diag_node(D, src, "R must be 3-D [num_directions, gates*hidden_size, hidden_size], got %s",
			  ir_shape_str(g->A, g, &R->shape));
		return 1;
	}
	L->H = ir_attr_int(src, "hidden_size", R->shape.d[2].k);
	if (L->H <= 0) {
		diag_node(D, src, "hidden_size must be positive");
		return 1;
	}
	int64_t G = L->ngates * L->H, D_ = L->ndir;
	int64_t wd[3] = {D_, G, L->I}, rd[3] = {D_, G, L->H}, bd[2] = {D_, 2 * G}, pd[2] = {D_, 3 * L->H};
	check_weight(L, 1, "W", 3, wd);
	check_weight(L, 2, "R", 3, rd);
	check_weight(L, 3, "B", 2, bd);
	if (src->op == OP_LSTM)
		check_weight(L, 7, "P", 2, pd);
	return 0;
}

/* The initial states' and sequence_lens' types and shapes (errors counted
 * in L); *lens_out: sequence_lens, NULL where it changes nothing. */
static void check_states_and_lens(lower *L, ir_value **lens_out)
{
	ir_graph *g = L->g;
	ir_node *src = L->src;
	diag *D = L->D;
	int64_t D_ = L->ndir;
	/* initial states: [D, B, H] (layout 0) or [B, D, H] */
	for (int idx = 5; idx <= (src->op == OP_LSTM ? 6 : 5); idx++) {
		ir_value *v = src_in(L, idx);
		if (!v)
			continue;
		ir_dim want[3] = {ir_dim_const(D_), L->B, ir_dim_const(L->H)};
		if (L->layout) {
			want[0] = L->B;
			want[1] = ir_dim_const(D_);
		}
		ir_shape ws = {.rank = 3, .d = {want[0], want[1], want[2]}};
		if (v->dtype != DT_F32 || !ir_shape_eq(&v->shape, &ws)) {
			diag_node(D, src, "%s has type %s %s, expected f32 %s",
				  idx == 5 ? "initial_h" : "initial_c", ir_dtype_name(v->dtype),
				  ir_shape_str(g->A, g, &v->shape), ir_shape_str(g->A, g, &ws));
			L->errors++;
		}
	}
	ir_value *lens = src_in(L, 4);
	if (lens) {
		ir_shape ls = {.rank = 1, .d = {L->B}};
		if (lens->dtype != DT_I32 || !ir_shape_eq(&lens->shape, &ls)) {
			diag_node(D, src, "sequence_lens has type %s %s, expected i32 [%s]",
				  ir_dtype_name(lens->dtype), ir_shape_str(g->A, g, &lens->shape),
				  ir_dim_str(g->A, g, L->B));
			L->errors++;
		}
		if (lens_trivial(L, lens))
			lens = NULL;
	}
	*lens_out = lens;
}

/* The step body of direction dir: inputs x_t, h[, c]; outputs the new
 * states, then y_t = H_t. NULL after an error. */
static ir_graph *direction_body(lower *L, int dir, const char *bname, int nstate)
{
	ir_graph *g = L->g;
	ir_node *src = L->src;
	dir_io io = {.body = ir_graph_new(g->A, g, bname)};
	io.x = step_input(L, io.body, "x", L->B, L->I);
	io.h = step_input(L, io.body, "h", L->B, L->H);
	if (nstate == 2)
		io.c = step_input(L, io.body, "c", L->B, L->H);
	if (src->op == OP_LSTM)
		body_lstm(L, &io, dir);
	else if (src->op == OP_GRU)
		body_gru(L, &io, dir);
	else
		body_rnn(L, &io, dir);
	if (L->errors)
		return NULL;

	ir_graph *body = io.body;
	body->ninputs = 1 + nstate;
	body->inputs = arena_array(g->A, 3, sizeof *body->inputs);
	body->inputs[0] = io.x;
	body->inputs[1] = io.h;
	if (nstate == 2)
		body->inputs[2] = io.c;
	body->noutputs = nstate + 1;
	body->outputs = arena_array(g->A, 3, sizeof *body->outputs);
	body->outputs[0] = io.h2;
	if (nstate == 2)
		body->outputs[1] = io.c2;
	body->outputs[nstate] = io.h2;   /* y_t = H_t */
	return body;
}

/* The layer's outputs, and their parts made by each direction's recurrence. */
typedef struct layer_outs {
	ir_value *Y, *Yh, *Yc;
	ir_value *ys[2], *hs[2], *cs[2];
} layer_outs;

/* The RECURRENCE of direction dir, running body: X, the initial states
 * [and lens] in; the final states and the stacked y_t (o's parts) out. */
static void append_direction(lower *L, int dir, int reverse, const char *bname, ir_graph *body, int nstate,
			     ir_value *lens, layer_outs *o)
{
	ir_graph *g = L->g;
	ir_node *src = L->src;
	ir_dim BH[2] = {L->B, ir_dim_const(L->H)};
	/* inputs: X, initial states, [lens]; outputs: finals, Y part */
	int nin = 1 + nstate + (lens ? 1 : 0);
	ir_node *r = ir_node_new(g, OP_RECURRENCE, bname, nin, nstate + 1);
	r->rec_source = IR_REC_ONNX_RNN;
	r->origin = L->origin;
	r->body = body;
	r->in[0] = src->in[0];
	r->in[1] = init_state(L, 5, dir);
	if (nstate == 2)
		r->in[2] = init_state(L, 6, dir);
	if (lens)
		r->in[nin - 1] = lens;
	o->hs[dir] = o->Yh ? rec_output(L, 2, BH) : NULL;
	o->cs[dir] = o->Yc ? rec_output(L, 2, BH) : NULL;
	r->out[0] = o->hs[dir];
	if (nstate == 2)
		r->out[1] = o->cs[dir];
	o->ys[dir] = NULL;
	if (o->Y) {
		ir_dim yd[3] = {L->T, L->B, ir_dim_const(L->H)};
		if (L->layout) {
			yd[0] = L->B;
			yd[1] = L->T;
		}
		o->ys[dir] = rec_output(L, 3, yd);
	}
	r->out[nstate] = o->ys[dir];
	int64_t ax = L->layout;
	ir_attr_set_int(r, "n_seq", 1);
	ir_attr_set_int(r, "n_state", nstate);
	ir_attr_set_int(r, "n_out", 1);
	ir_attr_set_int(r, "reverse", reverse);
	ir_attr_set_ints(r, "seq_axis", 1, &ax);
	ir_attr_set_ints(r, "out_axis", 1, &ax);
	ir_attr_set_int(r, "has_lens", lens != NULL);
	ir_append(g, r);
}

int lower_rnn_node(ir_graph *g, diag *D, ir_node *src, rnn_parts *parts)
{
	lower L0 = {.g = g, .D = D, .src = src, .clip = -1.0f, .parts = parts}, *L = &L0;
	if (!src->name || !*src->name)
		src->name = ir_unique_name(g, ir_op_name(src->op));
	L->origin = arena_printf(g->A, "%s '%s'", ir_op_name(src->op), src->name);
	L->bld = (ir_build){.origin = L->origin, .D = D, .blame = src, .what = "lowered", .errors = &L->errors};
	int first_reverse;
	if (read_layer_attrs(L, &first_reverse) || check_layer_inputs(L))
		return 1;
	ir_value *lens;
	check_states_and_lens(L, &lens);
	static const act lstm_def[3] = {{OP_SIGMOID, 0, 0}, {OP_TANH, 0, 0}, {OP_TANH, 0, 0}};
	static const act gru_def[2] = {{OP_SIGMOID, 0, 0}, {OP_TANH, 0, 0}};
	static const act rnn_def[1] = {{OP_TANH, 0, 0}};
	parse_acts(L, src->op == OP_LSTM ? lstm_def : src->op == OP_GRU ? gru_def : rnn_def);
	if (L->errors)
		return L->errors;

	int nstate = src->op == OP_LSTM ? 2 : 1;
	layer_outs o = {.Y = src->nout > 0 ? src->out[0] : NULL, .Yh = src->nout > 1 ? src->out[1] : NULL,
			.Yc = src->nout > 2 ? src->out[2] : NULL};
	for (int dir = 0; dir < L->ndir; dir++) {
		int reverse = L->ndir == 2 ? dir : first_reverse;
		const char *bname = arena_printf(g->A, "%s%s", src->name,
						 L->ndir == 2 ? (dir ? ".reverse" : ".forward") : "");
		ir_graph *body = direction_body(L, dir, bname, nstate);
		if (!body)
			return L->errors;
		append_direction(L, dir, reverse, bname, body, nstate, lens, &o);
	}
	/* Y: [T, D, B, H] or [B, T, D, H]; Y_h, Y_c: [D, B, H] or [B, D, H] */
	if (o.Y)
		assemble(L, o.Y, o.ys, L->layout ? 2 : 1);
	if (o.Yh)
		assemble(L, o.Yh, o.hs, L->layout ? 1 : 0);
	if (o.Yc)
		assemble(L, o.Yc, o.cs, L->layout ? 1 : 0);
	return L->errors;
}

int lower_rnn_needs_const(ir_op op, int k)
{
	switch (op) {
	case OP_LSTM: return k == 1 || k == 2 || k == 3 || k == 7;
	case OP_GRU: case OP_RNN: return k == 1 || k == 2 || k == 3;
	default: return 0;
	}
}

typedef struct lower_all {
	diag *D;
	rnn_parts *parts;
} lower_all;

static int lower_one(ir_graph *g, ir_node *n, void *ctx)
{
	lower_all *C = ctx;
	return ir_ops[n->op].kind == OPK_RNN ? lower_rnn_node(g, C->D, n, C->parts) : -1;
}

int pass_lower_rnn(ir_graph *g, diag *D, const pass_opts *o)
{
	(void)o;
	/* lowered nodes take the RNN's position */
	lower_all C = {D, lower_rnn_parts(g->A)};
	int errors = ir_rewrite_nodes(g, lower_one, &C);
	ir_recount(g);
	return errors;
}
