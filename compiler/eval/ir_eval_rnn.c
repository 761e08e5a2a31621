/* ir_eval_rnn.c: the reference interpreter's ONNX LSTM, GRU and RNN, from the
 * equations of the ONNX specification.
 *
 * One batch row of one direction at a time, step by step, in double: the
 * input projection, then the operator's gates (LSTM: i o f c with optional
 * peepholes and input_forget; GRU: z r h, with linear_before_reset or
 * not; RNN: one), clipped where the node says, through its activations
 * (the names and alpha/beta of the ONNX list, defaults as ONNX Runtime
 * reads them).  Y, Y_h and Y_c are rounded to float32 as ev_as_type
 * rounds; layout 1 swaps the batch and time (or direction) axes.  The
 * passes lower these operators into RECURRENCE nodes (pass_lower_rnn.c);
 * nothing of that lowering is used here. */
#include "ir_eval_ops.h"

#include <math.h>
#include <string.h>

/* An activation the RNN operators name, with its alpha and beta. */
typedef struct ract {
	const char *name;
	double alpha, beta;
} ract;

static int lower_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if ((*a | 32) != (*b | 32))
			return 0;
	return *a == *b;
}

/* The ONNX RNN activations; activation_alpha/beta are consumed in order by
 * the functions that take them (ONNX Runtime's reading), else defaults. */
static double ract_apply(const ract *f, double x)
{
	const char *n = f->name;
	if (lower_eq(n, "Sigmoid")) return 1 / (1 + exp(-x));
	if (lower_eq(n, "Tanh")) return tanh(x);
	if (lower_eq(n, "Relu")) return x > 0 ? x : 0;
	if (lower_eq(n, "Affine")) return f->alpha * x + f->beta;
	if (lower_eq(n, "LeakyRelu")) return x >= 0 ? x : f->alpha * x;
	if (lower_eq(n, "ThresholdedRelu")) return x > f->alpha ? x : 0;
	if (lower_eq(n, "ScaledTanh")) return f->alpha * tanh(f->beta * x);
	if (lower_eq(n, "HardSigmoid")) return fmax(0, fmin(1, f->alpha * x + f->beta));
	if (lower_eq(n, "Elu")) return x >= 0 ? x : f->alpha * (exp(x) - 1);
	if (lower_eq(n, "Softsign")) return x / (1 + fabs(x));
	return log(1 + exp(x));     /* Softplus (ract_of accepted only these names) */
}

static int ract_of(ev_run *r, const ir_node *n, int nact, int ndir, ract *acts)
{
	static const char *const lstm[] = {"Sigmoid", "Tanh", "Tanh"}, *const gru[] = {"Sigmoid", "Tanh"},
				 *const rnn[] = {"Tanh"};
	static const char *const known[] = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
					    "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
	const char *const *def = nact == 3 ? lstm : nact == 2 ? gru : rnn;
	ir_attr *nm = ir_attr_find(n, "activations"), *al = ir_attr_find(n, "activation_alpha"),
		*be = ir_attr_find(n, "activation_beta");
	int ia = 0, ib = 0;
	for (int k = 0; k < nact * ndir; k++) {
		const char *name = nm && nm->n > 0 ? nm->strings[k % nm->n] : def[k % nact];
		int ok = 0;
		for (size_t j = 0; j < sizeof known / sizeof *known; j++)
			ok |= lower_eq(name, known[j]);
		if (!ok)
			return ev_noref(r, n, "activation %s has no reference", name);
		int takes_a = lower_eq(name, "LeakyRelu") || lower_eq(name, "ThresholdedRelu") || lower_eq(name, "Elu") ||
			      lower_eq(name, "Affine") || lower_eq(name, "ScaledTanh") || lower_eq(name, "HardSigmoid");
		int takes_b = lower_eq(name, "Affine") || lower_eq(name, "ScaledTanh") || lower_eq(name, "HardSigmoid");
		double da = lower_eq(name, "LeakyRelu") ? 0.01 : lower_eq(name, "HardSigmoid") ? 0.2 : 1.0;
		double db = lower_eq(name, "HardSigmoid") ? 0.5 : lower_eq(name, "Affine") ? 0.0 : 1.0;
		acts[k].name = name;
		acts[k].alpha = takes_a && al && ia < al->n ? al->floats[ia++] : da;
		acts[k].beta = takes_b && be && ib < be->n ? be->floats[ib++] : db;
	}
	return 0;
}

/* One ONNX LSTM, GRU or RNN node as ev_rnn runs it, with the running
 * values of the batch row it is at. */
typedef struct rnn_ev {
	ir_op op;
	int G, D, layout, lbr, coupled;        /* gates; directions; attributes */
	double clip;                            /* < 0: none */
	int64_t T, B, I, H;
	const ev_tensor *X, *L, *H0, *C0;       /* inputs (L, H0, C0 may be NULL) */
	ev_tensor *Y, *Yh, *Yc;                 /* outputs */
	double *h, *c;                          /* [H] the state and the LSTM's cell */
	double *a, *rh;                         /* [G*H] gate pre-activations; [H] the next h */
} rnn_ev;

/* Direction d's weights: W [G*H, I], R [G*H, H], Wb, Rb [G*H] and P [3H]
 * (NULL where absent), activations and order. */
typedef struct rnn_dir {
	const double *w, *rr, *wb, *rb, *p;
	const ract *f;
	int rev;
} rnn_dir;

static double clipped(double clip, double v)
{
	return clip >= 0 ? fmax(-clip, fmin(clip, v)) : v;
}

/* Where the state of row b of direction d starts in Y_h, Y_c, initial_h and initial_c. */
static int64_t rnn_st(const rnn_ev *e, int d, int64_t b)
{
	return (e->layout ? b * e->D + d : d * e->B + b) * e->H;
}

/* a = x_t W^T + Wb, row b at step t. */
static void rnn_input(rnn_ev *e, const rnn_dir *w, int64_t t, int64_t b)
{
	int64_t T = e->T, B = e->B, I = e->I;
	for (int64_t g = 0; g < e->G * e->H; g++) {
		double s = w->wb ? w->wb[g] : 0;
		for (int64_t i = 0; i < I; i++)
			s += e->X->x[e->layout ? (b * T + t) * I + i : (t * B + b) * I + i] * w->w[g * I + i];
		e->a[g] = s;
	}
}

/* The LSTM's step (gates i o f c): c updated in place, the next h in rh. */
static void lstm_step(rnn_ev *e, const rnn_dir *w)
{
	int64_t H = e->H, G = e->G;
	double *a = e->a, *h = e->h, *c = e->c, clip = e->clip;
	const double *p = w->p;
	const ract *f = w->f;
	for (int64_t g = 0; g < G * H; g++) {
		double s = w->rb ? w->rb[g] : 0;
		for (int64_t k = 0; k < H; k++)
			s += h[k] * w->rr[g * H + k];
		a[g] += s;
	}
	for (int64_t j = 0; j < H; j++) {
		double ai = a[j] + (p ? p[j] * c[j] : 0), af = a[2 * H + j] + (p ? p[2 * H + j] * c[j] : 0);
		double ac = a[3 * H + j];
		ai = clipped(clip, ai);
		af = clipped(clip, af);
		ac = clipped(clip, ac);
		double ig = ract_apply(&f[0], ai), fg = e->coupled ? 1 - ig : ract_apply(&f[0], af);
		c[j] = fg * c[j] + ig * ract_apply(&f[1], ac);
		double ao = clipped(clip, a[H + j] + (p ? p[H + j] * c[j] : 0));
		e->rh[j] = ract_apply(&f[0], ao) * ract_apply(&f[2], c[j]);
	}
}

/* The GRU's step (gates z r h; linear_before_reset or not): the next h in rh. */
static void gru_step(ev_run *r, rnn_ev *e, const rnn_dir *w)
{
	int64_t H = e->H, G = e->G;
	double *a = e->a, *h = e->h, clip = e->clip;
	const double *rr = w->rr, *rb = w->rb;
	const ract *f = w->f;
	double *hr = arena_array(r->A, (size_t)(G * H), sizeof *hr);
	for (int64_t g = 0; g < G * H; g++) {
		double s = rb ? rb[g] : 0;
		for (int64_t k = 0; k < H; k++)
			s += h[k] * rr[g * H + k];
		hr[g] = s;
	}
	for (int64_t j = 0; j < H; j++) {
		double az = clipped(clip, a[j] + hr[j]), ar = clipped(clip, a[H + j] + hr[H + j]);
		double z = ract_apply(&f[0], az), rg = ract_apply(&f[0], ar), ah;
		if (e->lbr) {
			ah = a[2 * H + j] + rg * hr[2 * H + j];
		} else {
			double s = rb ? rb[2 * H + j] : 0;
			for (int64_t k = 0; k < H; k++) {
				double rk = ract_apply(&f[0], clipped(clip, a[H + k] + hr[H + k]));
				s += rk * h[k] * rr[(2 * H + j) * H + k];
			}
			ah = a[2 * H + j] + s;
		}
		ah = clipped(clip, ah);
		e->rh[j] = (1 - z) * ract_apply(&f[1], ah) + z * h[j];
	}
}

/* The plain RNN's step: the next h in rh. */
static void rnn_step(rnn_ev *e, const rnn_dir *w)
{
	int64_t H = e->H;
	for (int64_t j = 0; j < H; j++) {
		double s = e->a[j] + (w->rb ? w->rb[j] : 0);
		for (int64_t k = 0; k < H; k++)
			s += e->h[k] * w->rr[j * H + k];
		e->rh[j] = ract_apply(&w->f[0], clipped(e->clip, s));
	}
}

/* Row b of direction d run over its steps (sequence_lens[b] of them), into
 * Y, Y_h and Y_c. */
static int rnn_row(ev_run *r, const ir_node *n, rnn_ev *e, const rnn_dir *w, int d, int64_t b)
{
	int64_t T = e->T, B = e->B, H = e->H, D = e->D;
	int64_t len = e->L ? ev_ival(e->L, b) : T;
	if (len < 0 || len > T)
		return ev_stop(r, n, "sequence_lens[%lld] = %lld", (long long)b, (long long)len);
	for (int64_t j = 0; j < H; j++) {
		e->h[j] = e->H0 ? e->H0->x[rnn_st(e, d, b) + j] : 0;
		e->c[j] = e->C0 ? e->C0->x[rnn_st(e, d, b) + j] : 0;
	}
	for (int64_t q = 0; q < len; q++) {
		int64_t t = w->rev ? len - 1 - q : q;
		rnn_input(e, w, t, b);
		if (e->op == OP_LSTM)
			lstm_step(e, w);
		else if (e->op == OP_GRU)
			gru_step(r, e, w);
		else
			rnn_step(e, w);
		memcpy(e->h, e->rh, (size_t)H * sizeof *e->h);
		for (int64_t j = 0; j < H; j++) {
			double v = ev_as_type(DT_F32, e->h[j]);
			if (e->layout)
				e->Y->x[((b * T + t) * D + d) * H + j] = v;
			else
				e->Y->x[((t * D + d) * B + b) * H + j] = v;
		}
	}
	for (int64_t j = 0; j < H; j++) {
		e->Yh->x[rnn_st(e, d, b) + j] = ev_as_type(DT_F32, e->h[j]);
		e->Yc->x[rnn_st(e, d, b) + j] = ev_as_type(DT_F32, e->c[j]);
	}
	return 0;
}

/* Y, Y_h and Y_c (as many as the node has) of every direction and batch row. */
int ev_rnn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int G = n->op == OP_LSTM ? 4 : n->op == OP_GRU ? 3 : 1, nact = n->op == OP_LSTM ? 3 : n->op == OP_GRU ? 2 : 1;
	const char *dir = ir_attr_string(n, "direction", "forward");
	int D = !strcmp(dir, "bidirectional") ? 2 : 1, rev0 = !strcmp(dir, "reverse");
	int layout = (int)ir_attr_int(n, "layout", 0);
	ir_attr *ca = ir_attr_find(n, "clip");
	const ev_tensor *X = in[0], *W = in[1], *R = in[2], *Bv = n->nin > 3 ? in[3] : NULL;
	const ev_tensor *P = n->op == OP_LSTM && n->nin > 7 ? in[7] : NULL;
	if (X->rank != 3)
		return ev_stop(r, n, "X of rank %d", X->rank);
	int64_t T = layout ? X->d[1] : X->d[0], B = layout ? X->d[0] : X->d[1], I = X->d[2];
	int64_t H = ir_attr_int(n, "hidden_size", R->d[2]);
	ract acts[6];
	if (ract_of(r, n, nact, D, acts))
		return 1;
	int64_t yd[4] = {T, D, B, H}, hd[3] = {D, B, H};
	if (layout) {
		yd[0] = B;
		yd[1] = T;
		yd[2] = D;
		hd[0] = B;
		hd[1] = D;
	}
	rnn_ev e = {
		.op = n->op, .G = G, .D = D, .layout = layout, .lbr = (int)ir_attr_int(n, "linear_before_reset", 0),
		.coupled = (int)ir_attr_int(n, "input_forget", 0), .clip = ca ? ca->f : -1,
		.T = T, .B = B, .I = I, .H = H, .X = X, .L = n->nin > 4 ? in[4] : NULL, .H0 = n->nin > 5 ? in[5] : NULL,
		.C0 = n->op == OP_LSTM && n->nin > 6 ? in[6] : NULL,
	};
	e.Y = ev_new(r, DT_F32, 4, yd);
	e.Yh = ev_new(r, DT_F32, 3, hd);
	e.Yc = ev_new(r, DT_F32, 3, hd);
	e.h = arena_array(r->A, (size_t)H, sizeof *e.h);
	e.c = arena_array(r->A, (size_t)H, sizeof *e.c);
	e.a = arena_array(r->A, (size_t)(G * H), sizeof *e.a);
	e.rh = arena_array(r->A, (size_t)H, sizeof *e.rh);
	for (int d = 0; d < D; d++) {
		const double *wb = Bv ? Bv->x + d * 2 * G * H : NULL;
		rnn_dir w = {
			.w = W->x + d * G * H * I, .rr = R->x + d * G * H * H, .wb = wb, .rb = wb ? wb + G * H : NULL,
			.p = P ? P->x + d * 3 * H : NULL, .f = acts + d * nact, .rev = D == 2 ? d == 1 : rev0,
		};
		for (int64_t b = 0; b < B; b++)
			if (rnn_row(r, n, &e, &w, d, b))
				return 1;
	}
	out[0] = e.Y;
	if (n->nout > 1)
		out[1] = e.Yh;
	if (n->nout > 2)
		out[2] = e.Yc;
	return 0;
}
