/* recognize_sched.c: the values a per-step coefficient takes when a loop's
 * body computes it from counters the loop carries, for recognize.c.
 *
 * A scripted loop carries its NAG restart counter itself (the
 * MomentumRNN authors' `iter_indx = iter_indx + 1; ...; if not (iter_indx
 * % restart): iter_indx = 0`, and mu = (k - 1) / (k + 2) of it): lower_loop.c
 * makes the counter states of one element (an int64 counter in three f32
 * digits, so that it stays exact), and the body decodes, steps and encodes
 * it.  No shape of the body says which schedule that is; running it does.
 * The scalar part of the body -- the values of one element computed from
 * constants, the step number t and the states of one element -- is run in
 * double from the recurrence's initial states (integers are exact below
 * 2^53), and the coefficient's value at every step is kept; recognize.c
 * compares them with the NAG schedule of docs/cells.md.  Nothing is
 * changed: this only names the cell.  An operator this small evaluator
 * does not know, or a coefficient that depends on anything else (the
 * data, the run's length L), gives no values. */
#include "recognize.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* v holds one element. */
static int one_element(const ir_value *v)
{
	return v && ir_shape_const_numel(&v->shape) == 1 && v->seq == IR_TENSOR;
}

typedef struct sim {
	const ir_graph *b;
	double *val;            /* [b->nvalues] */
	char *known;
} sim;

static int slot(const sim *S, const ir_value *v)
{
	if (v->graph == S->b && v->id >= 0 && v->id < S->b->nvalues && S->b->values[v->id] == v)
		return v->id;
	for (int i = 0; i < S->b->nvalues; i++)
		if (S->b->values[i] == v)
			return i;
	return -1;
}

/* The value of v now: a known body value or a constant of one element. */
static int get(const sim *S, const ir_value *v, double *x)
{
	int i = v ? slot(S, v) : -1;
	if (i >= 0 && S->known[i]) {
		*x = S->val[i];
		return 1;
	}
	if (v && ir_value_is_const(v) && !v->sym && one_element(v)) {
		*x = ir_const_num(v, 0);
		return 1;
	}
	return 0;
}

/* x as a value of dtype dt (what a Cast or an integer operator leaves). */
static double as_dtype(double x, ir_dtype dt)
{
	switch (dt) {
	case DT_F32: return (double)(float)x;
	case DT_BOOL: return x != 0;
	case DT_F64: return x;
	default: return trunc(x);      /* integers: toward zero, as a Cast does */
	}
}

/* One node whose operands are all known: its output, or 0 when this
 * evaluator does not know the operator. */
static int eval(const ir_node *n, const double *a, double *y)
{
	ir_dtype dt = n->out[0]->dtype;
	int integer = dt != DT_F32 && dt != DT_F64;
	switch (n->op) {
	case OP_IDENTITY: case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN: case OP_EXPAND:
		*y = a[0];
		break;
	case OP_CAST: *y = as_dtype(a[0], dt); return 1;
	case OP_NEG: *y = -a[0]; break;
	case OP_ABS: *y = fabs(a[0]); break;
	case OP_FLOOR: *y = floor(a[0]); break;
	case OP_CEIL: *y = ceil(a[0]); break;
	case OP_NOT: *y = a[0] == 0; break;
	case OP_ADD: *y = a[0] + a[1]; break;
	case OP_SUB: *y = a[0] - a[1]; break;
	case OP_MUL: *y = a[0] * a[1]; break;
	case OP_DIV:
		if (a[1] == 0 && integer)
			return 0;
		*y = integer ? trunc(a[0] / a[1]) : a[0] / a[1];
		break;
	case OP_MOD:
		if (a[1] == 0)
			return 0;
		/* fmod = 0: the sign of the divisor (Python's %); fmod = 1: C's */
		*y = ir_attr_int(n, "fmod", 0) ? fmod(a[0], a[1]) : a[0] - floor(a[0] / a[1]) * a[1];
		break;
	case OP_MIN: case OP_MAX:
		if (n->nin != 2)
			return 0;
		*y = n->op == OP_MIN ? fmin(a[0], a[1]) : fmax(a[0], a[1]);
		break;
	case OP_EQUAL: *y = a[0] == a[1]; break;
	case OP_LESS: *y = a[0] < a[1]; break;
	case OP_LESSEQ: *y = a[0] <= a[1]; break;
	case OP_GREATER: *y = a[0] > a[1]; break;
	case OP_GREATEREQ: *y = a[0] >= a[1]; break;
	case OP_AND: *y = a[0] != 0 && a[1] != 0; break;
	case OP_OR: *y = a[0] != 0 || a[1] != 0; break;
	case OP_WHERE: *y = a[0] != 0 ? a[1] : a[2]; break;
	default:
		return 0;
	}
	*y = as_dtype(*y, dt);
	return 1;
}

int recognize_run_scalars(const ir_node *rec, const ir_value *c, int steps, float *tab)
{
	const ir_graph *b = rec->body;
	int nseq = (int)ir_attr_int(rec, "n_seq", 0), ns = (int)ir_attr_int(rec, "n_state", 0);
	int hs = (int)ir_attr_int(rec, "has_step", 0);
	if (!b || !one_element(c) || hs > 1 || b->ninputs < nseq + ns + hs || b->noutputs < ns ||
	    ir_attr_int(rec, "has_lens", 0) || ir_attr_int(rec, "reverse", 0))
		return 0;
	arena *A = rec->graph->A;
	sim S = {b, arena_array(A, (size_t)b->nvalues + 1, sizeof *S.val), arena_alloc(A, (size_t)b->nvalues + 1)};
	double *state = arena_array(A, (size_t)ns + 1, sizeof *state);
	char *scalar = arena_alloc(A, (size_t)ns + 1);
	for (int s = 0; s < ns; s++) {
		const ir_value *init = rec->in[nseq + s], *in = b->inputs[nseq + s];
		scalar[s] = one_element(in);
		state[s] = 0;           /* (a missing initial state is zeros) */
		if (scalar[s] && init && !(ir_value_is_const(init) && !init->sym && one_element(init)))
			return 0;       /* a counter that starts from the data */
		if (scalar[s] && init)
			state[s] = ir_const_num(init, 0);
	}
	for (int t = 1; t <= steps; t++) {
		memset(S.known, 0, (size_t)b->nvalues + 1);
		for (int s = 0; s < ns; s++) {
			int i = slot(&S, b->inputs[nseq + s]);
			if (scalar[s] && i >= 0) {
				S.val[i] = state[s];
				S.known[i] = 1;
			}
		}
		int ti = hs ? slot(&S, b->inputs[nseq + ns]) : -1;
		if (ti >= 0) {
			S.val[ti] = t;
			S.known[ti] = 1;
		}
		for (int i = 0; i < b->nnodes; i++) {
			const ir_node *n = b->nodes[i];
			double a[3], y;
			int ok = n->nout == 1 && one_element(n->out[0]) && n->nin <= 3 && n->nin >= 1;
			for (int k = 0; ok && k < n->nin; k++)
				ok = !n->in[k] || (k > 0 && (n->op == OP_RESHAPE || n->op == OP_SQUEEZE || n->op == OP_UNSQUEEZE ||
							    n->op == OP_EXPAND)) || get(&S, n->in[k], &a[k]);
			int o = ok ? slot(&S, n->out[0]) : -1;
			if (o >= 0 && eval(n, a, &y)) {
				S.val[o] = y;
				S.known[o] = 1;
			}
		}
		double x;
		if (!get(&S, c, &x))
			return 0;
		tab[t - 1] = (float)x;
		for (int s = 0; s < ns; s++)
			if (scalar[s] && !get(&S, b->outputs[s], &state[s]))
				return 0;       /* a one-element state the data update */
	}
	return 1;
}
