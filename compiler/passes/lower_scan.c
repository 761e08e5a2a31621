/* lower_scan.c: ONNX Scan -> a RECURRENCE for pass_loops (lower_loop.c
 * describes the whole lowering and handles Loop): Scan-8's batch axis, the
 * scan inputs (time moved to axis 0, reversed where the directions differ)
 * and the scan outputs (stacked, moved back to their axes).  lower_loop.h:
 * what the two share.
 */
#include "lower_loop.h"
#include "infer.h"
#include "passes.h"
#include "util.h"

#include <string.h>

/* ---- Scan ------------------------------------------------------------------------- */

/* Scan-8: batch axis 0 everywhere, compiled for batch 1 (the body sees one
 * batch entry): the inputs' batch axis squeezed away. */
static int scan_squeeze_batch(lx *X, ir_value **ins)
{
	ir_node *n = X->n;
	for (int k = 0; k < n->nin; k++) {
		ir_value *v = ins[k];
		if (v->shape.rank < 1 || !ir_dim_is_const(v->shape.d[0]) || v->shape.d[0].k != 1)
			return fail(X, "Scan-8 input '%s' has shape %s; cellc compiles Scan-8 with batch size 1",
				    v->name, shp(X, &v->shape));
		int64_t zero = 0;
		ir_node *nd = ir_build_node(&X->bld, X->g, OP_SQUEEZE, 2, NULL, 1);
		nd->in[0] = v;
		nd->in[1] = lx_ints_const(X->g, 1, &zero);
		if (!(ins[k] = lx_pre(X, nd)))
			return 1;
	}
	X->unbatch = 1;
	return 0;
}

/* The scanned inputs: time moved to axis 0, reversed where their direction
 * is not the first's, their lengths the same; the body's per-step inputs. */
static int scan_inputs(lx *X, ir_value *const *ins, int N, int64_t M, const ir_attr *ia, const ir_attr *iax)
{
	ir_graph *b = X->b;
	int dir0 = ia ? (int)ia->ints[0] : 0;
	X->reverse = dir0 != 0;
	for (int k = 0; k < M; k++) {
		ir_value *x = ins[N + k];
		int r = x->shape.rank;
		int64_t ax = iax ? iax->ints[k] : 0, dir = ia ? ia->ints[k] : 0;
		if (ax < -r || ax >= r || (dir != 0 && dir != 1))
			return fail(X, "scan input %d ('%s', %s): axis %lld or direction %lld is out of range",
				    k, x->name, shp(X, &x->shape), (long long)ax, (long long)dir);
		if (ax < 0)
			ax += r;
		if (ax != 0) {
			int64_t perm[IR_MAX_RANK];
			lx_move_perm(r, (int)ax, 0, perm);
			if (!(x = lx_pre_transpose(X, x, perm)))
				return 1;
		}
		if (dir != dir0) {
			ir_node *nd = lx_reverse_node(X, x);
			if (!(x = lx_pre(X, nd)))
				return 1;
		}
		if (k == 0)
			X->T = x->shape.d[0];
		else if (!ir_dim_eq(X->T, x->shape.d[0]))
			return fail(X, "scan inputs have different lengths (%s and %s)",
				    ir_dim_str(X->A, ir_root(X->g), X->T),
				    ir_dim_str(X->A, ir_root(X->g), x->shape.d[0]));
		ir_value *bv = b->inputs[N + k];
		bv->dtype = x->dtype;
		bv->shape.rank = r - 1;
		for (int i = 1; i < r; i++)
			bv->shape.d[i - 1] = x->shape.d[i];
		X->seq_outer[X->nseq] = x;
		X->seq_body[X->nseq++] = bv;
	}
	if (ir_dim_is_const(X->T) && X->T.k < 1)
		return fail(X, "scans a sequence of length 0, which cellc does not compile");
	return 0;
}

/* The scan outputs: stacked outputs, with their time axes and directions. */
static int scan_outputs(lx *X, int N, int K, const ir_attr *oa, const ir_attr *oax)
{
	ir_node *n = X->n;
	ir_graph *b = X->b;
	for (int k = 0; k < K; k++) {
		ir_value *y = b->outputs[N + k];
		int r = y->shape.rank + 1;
		int64_t ax = oax ? oax->ints[k] : 0, dir = oa ? oa->ints[k] : 0;
		if (ax < -r || ax >= r || (dir != 0 && dir != 1))
			return fail(X, "scan output %d: axis %lld or direction %lld is out of range", k, (long long)ax,
				    (long long)dir);
		X->y_body[k] = y;
		X->y_final[k] = N + k < n->nout ? n->out[N + k] : NULL;
		X->y_axis[k] = (int)(ax < 0 ? ax + r : ax);
		X->y_rev[k] = (dir != 0) != X->reverse;
	}
	X->ny = K;
	return 0;
}

ir_node **lx_expand_scan(lx *X, int *count)
{
	ir_node *n = X->n;
	ir_graph *b = X->b;
	int v8 = n->opset < 9;
	int64_t M = ir_attr_int(n, "num_scan_inputs", -1);
	int N = n->nin - (int)M;
	if (M < 1 || N < 0) {
		fail(X, "attribute 'num_scan_inputs' must be between 1 and the number of inputs (%d)", n->nin);
		return NULL;
	}
	if (b->ninputs != n->nin || b->noutputs < N) {
		fail(X, "body has %d inputs and %d outputs; this Scan needs %d inputs and at least %d outputs",
		     b->ninputs, b->noutputs, n->nin, N);
		return NULL;
	}
	int K = b->noutputs - N;
	if (N + M + K > MAXIO) {
		fail(X, "has more than %d inputs and outputs", MAXIO);
		return NULL;
	}
	ir_attr *ia = ir_attr_find(n, v8 ? "directions" : "scan_input_directions");
	ir_attr *iax = v8 ? NULL : ir_attr_find(n, "scan_input_axes");
	ir_attr *oa = v8 ? NULL : ir_attr_find(n, "scan_output_directions");
	ir_attr *oax = v8 ? NULL : ir_attr_find(n, "scan_output_axes");
	if ((ia && ia->n != M) || (iax && iax->n != M) || (oa && oa->n != K) || (oax && oax->n != K)) {
		fail(X, "scan direction/axis attributes must list one entry per scan input (%lld) or "
		     "output (%d)", (long long)M, K);
		return NULL;
	}
	ir_value *ins[MAXIO];
	for (int k = 0; k < n->nin; k++) {
		ins[k] = n->in[k];
		if (!ins[k]) {
			fail(X, "input %d is missing", k);
			return NULL;
		}
	}
	if (v8 && scan_squeeze_batch(X, ins))
		return NULL;
	if (scan_inputs(X, ins, N, M, ia, iax))
		return NULL;
	for (int k = 0; k < N; k++) {
		ir_value *in = b->inputs[k];
		in->dtype = ins[k]->dtype;
		in->shape = ins[k]->shape;
	}
	if (X->infer(X->cx, b))
		return NULL;
	for (int k = 0; k < N; k++) {
		X->st_init[k] = ins[k];
		X->st_in[k] = b->inputs[k];
		X->st_out[k] = b->outputs[k];
		X->st_final[k] = k < n->nout ? n->out[k] : NULL;
	}
	X->nst = N;
	if (lx_check_states(X))
		return NULL;
	if (scan_outputs(X, N, K, oa, oax) || lx_build(X))
		return NULL;
	*count = X->nrep;
	return X->rep;
}
