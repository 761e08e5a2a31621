/* ir_eval.c: the reference interpreter of the IR (ir_eval.h).
 *
 * Every node is computed from its definition in ops.def and the ONNX
 * specification, in double, by loops over concrete indices; element-wise
 * operators evaluate elem.def's expressions (compiled here in double, the
 * same table the emitters print).  The recurrence runs its body once per
 * step on the step's slices, as ir.h defines it.  No kernel of libcellrt
 * and no code of a pass is used: a rewrite that changes what a graph
 * computes shows as a difference between two runs of this file. */
#include "ir_eval.h"
#include "ir_eval_ops.h"
#include "elem.h"
#include "infer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- values ------------------------------------------------------------------------ */

static uint64_t hash_ptr(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

ev_tensor *ev_get(const ev_run *r, const ir_value *v)
{
	const ev_map *m = &r->vals;
	if (!m->cap || !v)
		return NULL;
	for (int64_t i = (int64_t)(hash_ptr(v) & (uint64_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
		if (!m->key[i])
			return NULL;
		if (m->key[i] == v)
			return m->val[i];
	}
}

static void put(ev_run *r, const ir_value *v, ev_tensor *t)
{
	ev_map *m = &r->vals;
	if (2 * (m->count + 1) > m->cap) {
		int64_t cap = m->cap ? 2 * m->cap : 256;
		const ir_value **key = arena_array(r->A, (size_t)cap, sizeof *key);
		ev_tensor **val = arena_array(r->A, (size_t)cap, sizeof *val);
		for (int64_t i = 0; i < m->cap; i++)
			if (m->key[i]) {
				int64_t j = (int64_t)(hash_ptr(m->key[i]) & (uint64_t)(cap - 1));
				while (key[j])
					j = (j + 1) & (cap - 1);
				key[j] = m->key[i];
				val[j] = m->val[i];
			}
		m->key = key;
		m->val = val;
		m->cap = cap;
	}
	int64_t i = (int64_t)(hash_ptr(v) & (uint64_t)(m->cap - 1));
	while (m->key[i] && m->key[i] != v)
		i = (i + 1) & (m->cap - 1);
	if (!m->key[i])
		m->count++;
	m->key[i] = v;
	m->val[i] = t;
}

static int vstop(ev_run *r, const ir_node *n, int noref, const char *fmt, va_list ap)
{
	vsnprintf(r->why, sizeof r->why, fmt, ap);
	r->at = n;
	r->noref = noref;
	return 1;
}

int ev_stop(ev_run *r, const ir_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vstop(r, n, 0, fmt, ap);
	va_end(ap);
	return 1;
}

int ev_noref(ev_run *r, const ir_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vstop(r, n, 1, fmt, ap);
	va_end(ap);
	return 1;
}

int64_t ev_dim(const ev_run *r, const ir_graph *g, ir_dim d)
{
	const ir_graph *root = g;
	while (root->parent)
		root = root->parent;
	if (!ir_dim_known(d))
		return -1;
	int64_t v = d.k;
	for (int i = 0; i < IR_MAX_SYMS; i++)
		for (int p = 0; p < d.pow[i]; p++) {
			int64_t s = ir_sym_value(root, i, r->sym);      /* a derived one from its base's */
			v *= s;
		}
	return v;
}

ev_tensor *ev_new(ev_run *r, ir_dtype dt, int rank, const int64_t *d)
{
	ev_tensor *t = arena_alloc(r->A, sizeof *t);
	t->dt = dt;
	t->rank = rank;
	t->n = 1;
	for (int i = 0; i < rank; i++) {
		t->d[i] = d[i];
		t->n *= d[i];
	}
	t->x = arena_array(r->A, (size_t)(t->n ? t->n : 1), sizeof *t->x);
	return t;
}

int ev_shape_of(const ev_run *r, const ir_graph *g, const ir_value *v, int64_t *d)
{
	if (v->shape.rank < 0)
		return -1;
	for (int i = 0; i < v->shape.rank; i++)
		if ((d[i] = ev_dim(r, g, v->shape.d[i])) < 0)
			return -1;
	return v->shape.rank;
}

ev_tensor *ev_of_value(ev_run *r, const ir_graph *g, const ir_value *v)
{
	int64_t d[IR_MAX_RANK];
	int rank = ev_shape_of(r, g, v, d);
	if (rank < 0)
		return NULL;
	ev_tensor *t = ev_new(r, v->dtype, rank, d);
	if (v->sym) {
		for (int64_t i = 0; i < t->n; i++)
			t->x[i] = (double)ev_dim(r, g, v->sym[i]);
	} else if (v->data) {
		for (int64_t i = 0; i < t->n; i++)
			t->x[i] = v->dtype == DT_F32 ? ((const float *)v->data)[i] : ir_const_num(v, i);
	}
	return t;
}

/* ---- element types ---------------------------------------------------------------------- */

int ev_is_float(ir_dtype t) { return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16; }

/* While central differences run (a Gradient node here, a training build's
 * gradients in validate.c: ev_exact), floats are not rounded to float32:
 * the differences need double's resolution. */
static int exact_floats;

void ev_exact(int on) { exact_floats = on; }

/* v as a value of type t: float32 rounding, integer wrap-around. */
double ev_as_type(ir_dtype t, double v)
{
	switch (t) {
	case DT_F32: case DT_F16: case DT_BF16: return exact_floats ? v : (double)(float)v;
	case DT_F64: return v;
	case DT_BOOL: return v != 0.0;
	case DT_I8: return (double)(int8_t)(int64_t)v;
	case DT_U8: return (double)(uint8_t)(int64_t)v;
	case DT_I16: return (double)(int16_t)(int64_t)v;
	case DT_U16: return (double)(uint16_t)(int64_t)v;
	case DT_I32: return (double)(int32_t)(int64_t)v;
	case DT_U32: return (double)(uint32_t)(int64_t)v;
	default: return trunc(v);
	}
}

/* A float32 value of a FLOAT16 tensor (a Cast to it: ir_value.narrow)
 * rounded to float16, to nearest with ties to even, or of a BFLOAT16 one
 * to bfloat16 by keeping its upper 16 bits (the official Cast data
 * truncate). */
static double narrow_round(ir_dtype t, double v)
{
	if (isnan(v))
		return v;
	if (t == DT_BF16) {
		float f = (float)v;
		uint32_t u;
		memcpy(&u, &f, sizeof u);
		u &= 0xffff0000u;
		memcpy(&f, &u, sizeof f);
		return f;
	}
	double a = fabs(v), q;
	if (a >= 65520.0)
		return v > 0 ? INFINITY : -INFINITY;
	int e;
	frexp(a, &e);                   /* a = m 2^e, m in [0.5, 1): 11 significant bits */
	q = a < 0x1p-14 ? 0x1p-24 : ldexp(1.0, e - 11);
	return nearbyint(v / q) * q;
}

/* ---- element-wise: elem.def's float expressions (elem_double) ---------------------------- */

/* Offset in t of output index idx (rank R) under broadcasting. */
int64_t ev_bcast_off(const ev_tensor *t, int R, const int64_t *idx)
{
	int64_t off = 0;
	for (int i = 0; i < t->rank; i++) {
		int j = i + R - t->rank;
		off = off * t->d[i] + (t->d[i] == 1 ? 0 : idx[j]);
	}
	return off;
}

void ev_next_index(int64_t *idx, const int64_t *d, int R)
{
	for (int i = R - 1; i >= 0; i--) {
		if (++idx[i] < d[i])
			return;
		idx[i] = 0;
	}
}

static int eval_elem(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int R = 0;
	int64_t d[IR_MAX_RANK];
	for (int k = 0; k < n->nin; k++)
		if (in[k] && in[k]->rank > R)
			R = in[k]->rank;
	for (int i = 0; i < R; i++) {
		d[i] = 1;
		for (int k = 0; k < n->nin; k++) {
			const ev_tensor *t = in[k];
			int j = t ? i - (R - t->rank) : -1;
			if (j < 0 || t->d[j] == 1)
				continue;
			if (d[i] != 1 && d[i] != t->d[j])
				return ev_stop(r, n, "operands of %s cannot be broadcast together", ir_op_name(n->op));
			d[i] = t->d[j];
		}
	}
	ir_dtype odt = n->out[0]->dtype;
	ev_tensor *o = ev_new(r, odt, R, d);
	int64_t idx[IR_MAX_RANK] = {0};
	ir_dtype idt = in[0] ? in[0]->dt : odt;
	int integer = !ev_is_float(idt) && n->op != OP_WHERE;
	for (int64_t e = 0; e < o->n; e++, ev_next_index(idx, d, R)) {
		double a[8] = {0};
		for (int k = 0; k < n->nin && k < 8; k++)
			a[k] = in[k] ? in[k]->x[ev_bcast_off(in[k], R, idx)] : 0.0;
		double v;
		switch (n->op) {
		case OP_CLIP: {
			double lo = n->nin > 1 && in[1] ? a[1] : -INFINITY, hi = n->nin > 2 && in[2] ? a[2] : INFINITY;
			v = a[0] < lo ? lo : a[0] > hi ? hi : a[0];
			break;
		}
		case OP_MIN: case OP_MAX: case OP_SUM: case OP_MEAN:
			v = a[0];
			for (int k = 1; k < n->nin; k++)
				v = n->op == OP_MIN ? fmin(v, a[k]) : n->op == OP_MAX ? fmax(v, a[k]) : v + a[k];
			if (n->op == OP_MEAN)
				v /= n->nin;
			break;
		default:
			if (integer && n->op == OP_DIV) {
				if (a[1] == 0.0)
					return ev_stop(r, n, "integer division by zero");
				v = trunc(a[0] / a[1]);
			} else if (n->op == OP_MOD) {
				if (integer && a[1] == 0.0)
					return ev_stop(r, n, "integer Mod by zero");
				v = fmod(a[0], a[1]);
				if (!ir_attr_int(n, "fmod", 0) && v != 0.0 && (v < 0) != (a[1] < 0))
					v += a[1];
			} else if (n->op == OP_BITSHIFT) {
				/* unsigned operands; a shift of the width or more gives 0 */
				uint64_t x = (uint64_t)a[0], s = (uint64_t)a[1];
				int left = !strcmp(ir_attr_string(n, "direction", "LEFT"), "LEFT");
				v = s >= 64 ? 0.0 : (double)(left ? x << s : x >> s);
			} else if (n->op == OP_ISINF) {
				v = isinf(a[0]) && ((a[0] > 0 && ir_attr_int(n, "detect_positive", 1)) ||
						    (a[0] < 0 && ir_attr_int(n, "detect_negative", 1)));
			} else if (n->op == OP_SHRINK) {
				double l = ir_attr_float(n, "lambd", 0.5f), b = ir_attr_float(n, "bias", 0.0f);
				v = a[0] < -l ? a[0] + b : a[0] > l ? a[0] - b : 0;
			} else if (elem_double(n->op)) {
				v = elem_double(n->op)(n, a);
			} else {
				return ev_noref(r, n, "no reference for element-wise %s", ir_op_name(n->op));
			}
		}
		o->x[e] = ev_as_type(odt, v);
	}
	out[0] = o;
	return 0;
}

/* ---- data movement ------------------------------------------------------------------- */

/* The output of n as the IR shapes it, holding x's elements in order
 * (Reshape, Squeeze, Unsqueeze, Flatten, Identity). */
static int eval_view(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int64_t d[IR_MAX_RANK];
	int rank = ev_shape_of(r, g, n->out[0], d);
	if (rank < 0)
		return ev_stop(r, n, "the output's shape is not known");
	if (n->out[0]->data_dep && rank > 0 && in[0]->rank > 0)
		d[0] = in[0]->d[0];     /* the run's length, which the view keeps (ir_dd_passes) */
	ev_tensor *o = ev_new(r, n->out[0]->dtype, rank, d);
	if (o->n != in[0]->n)
		return ev_stop(r, n, "%s of %lld elements to %lld", ir_op_name(n->op), (long long)in[0]->n,
			    (long long)o->n);
	memcpy(o->x, in[0]->x, (size_t)o->n * sizeof *o->x);
	out[0] = o;
	return 0;
}

static int eval_transpose(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0];
	int64_t perm[IR_MAX_RANK], d[IR_MAX_RANK], st[IR_MAX_RANK];
	ir_attr *p = ir_attr_find(n, "perm");
	for (int i = 0; i < x->rank; i++)
		perm[i] = p && p->n == x->rank ? p->ints[i] : x->rank - 1 - i;
	int64_t m = 1;
	for (int i = x->rank - 1; i >= 0; i--) {
		st[i] = m;
		m *= x->d[i];
	}
	for (int i = 0; i < x->rank; i++)
		d[i] = x->d[perm[i]];
	ev_tensor *o = ev_new(r, x->dt, x->rank, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < o->n; e++, ev_next_index(idx, d, x->rank)) {
		int64_t off = 0;
		for (int i = 0; i < x->rank; i++)
			off += idx[i] * st[perm[i]];
		o->x[e] = x->x[off];
	}
	out[0] = o;
	return 0;
}

/* The elements Slice takes from x: per axis the first index, the step
 * and the count (d), from the starts, ends, axes, steps inputs S, E, A, P
 * (opset 10 form; norm_slice made older ones so), clamped as the
 * specification says. */
static int slice_geometry(ev_run *r, const ir_node *n, const ev_tensor *x, ev_tensor *const *sl, int64_t *start,
			  int64_t *step, int64_t *d)
{
	for (int i = 0; i < x->rank; i++) {
		start[i] = 0;
		step[i] = 1;
		d[i] = x->d[i];
	}
	const ev_tensor *S = sl[0], *E = sl[1], *A = sl[2], *P = sl[3];
	if (!S || !E)
		return ev_stop(r, n, "%s without starts or ends", ir_op_name(n->op));
	for (int64_t k = 0; k < S->n; k++) {
		int64_t a = A ? ev_norm_axis(ev_ival(A, k), x->rank) : k, dim;
		if (a < 0 || a >= x->rank)
			return ev_stop(r, n, "%s axis out of range", ir_op_name(n->op));
		dim = x->d[a];
		int64_t s = ev_ival(S, k), e = E->x[k] >= 9.2e18 ? INT64_MAX : E->x[k] <= -9.2e18 ? INT64_MIN : ev_ival(E, k);
		int64_t p = P ? ev_ival(P, k) : 1;
		if (p == 0)
			return ev_stop(r, n, "%s step 0", ir_op_name(n->op));
		if (s < 0)
			s += dim;
		if (e < 0 && e != INT64_MIN)
			e += dim;
		if (p > 0) {
			s = s < 0 ? 0 : s > dim ? dim : s;
			e = e < 0 ? 0 : e > dim ? dim : e;
			d[a] = e > s ? (e - s + p - 1) / p : 0;
		} else {
			s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			d[a] = s > e ? (s - e + (-p) - 1) / (-p) : 0;
		}
		start[a] = s;
		step[a] = p;
	}
	return 0;
}

/* The offset in x of element idx of the slice. */
static int64_t slice_off(const ev_tensor *x, const int64_t *start, const int64_t *step, const int64_t *idx)
{
	int64_t off = 0;
	for (int i = 0; i < x->rank; i++)
		off = off * x->d[i] + start[i] + idx[i] * step[i];
	return off;
}

static int eval_slice(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0];
	int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], d[IR_MAX_RANK];
	ev_tensor *sl[4] = {in[1], in[2], n->nin > 3 ? in[3] : NULL, n->nin > 4 ? in[4] : NULL};
	if (slice_geometry(r, n, x, sl, start, step, d))
		return 1;
	ev_tensor *o = ev_new(r, x->dt, x->rank, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < o->n; e++, ev_next_index(idx, d, x->rank))
		o->x[e] = x->x[slice_off(x, start, step, idx)];
	out[0] = o;
	return 0;
}

/* SliceScatter (training): zeros shaped like X with U written where Slice
 * would read X (inputs X U starts ends [axes steps]). */
static int eval_slicescatter(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0], *u = in[1];
	int64_t start[IR_MAX_RANK], step[IR_MAX_RANK], d[IR_MAX_RANK];
	ev_tensor *sl[4] = {in[2], in[3], n->nin > 4 ? in[4] : NULL, n->nin > 5 ? in[5] : NULL};
	if (slice_geometry(r, n, x, sl, start, step, d))
		return 1;
	ev_tensor *o = ev_new(r, x->dt, x->rank, x->d);
	int64_t idx[IR_MAX_RANK] = {0}, cnt = 1;
	for (int i = 0; i < x->rank; i++)
		cnt *= d[i];
	if (u->n != cnt)
		return ev_stop(r, n, "U of %lld elements for a slice of %lld", (long long)u->n, (long long)cnt);
	for (int64_t e = 0; e < u->n; e++, ev_next_index(idx, d, x->rank))
		o->x[slice_off(x, start, step, idx)] = u->x[e];
	out[0] = o;
	return 0;
}

static int eval_gather(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0], *ix = in[1];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 0), x->rank);
	if (a < 0 || a >= x->rank)
		return ev_stop(r, n, "Gather axis out of range");
	int64_t d[IR_MAX_RANK], rank = 0, outer = 1, inner = 1;
	for (int i = 0; i < a; i++) {
		d[rank++] = x->d[i];
		outer *= x->d[i];
	}
	for (int i = 0; i < ix->rank; i++)
		d[rank++] = ix->d[i];
	for (int i = a + 1; i < x->rank; i++) {
		d[rank++] = x->d[i];
		inner *= x->d[i];
	}
	ev_tensor *o = ev_new(r, x->dt, (int)rank, d);
	int64_t e = 0;
	for (int64_t p = 0; p < outer; p++)
		for (int64_t q = 0; q < ix->n; q++) {
			int64_t j = ev_ival(ix, q);
			if (j < 0)
				j += x->d[a];
			if (j < 0 || j >= x->d[a])
				return ev_stop(r, n, "Gather index %lld out of range", (long long)ev_ival(ix, q));
			for (int64_t s = 0; s < inner; s++)
				o->x[e++] = x->x[(p * x->d[a] + j) * inner + s];
		}
	out[0] = o;
	return 0;
}

static int eval_concat(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x0 = in[0];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 0), x0->rank);
	int64_t d[IR_MAX_RANK], outer = 1, inner = 1;
	for (int i = 0; i < x0->rank; i++)
		d[i] = x0->d[i];
	d[a] = 0;
	for (int k = 0; k < n->nin; k++)
		d[a] += in[k]->d[a];
	for (int i = 0; i < a; i++)
		outer *= d[i];
	for (int i = a + 1; i < x0->rank; i++)
		inner *= d[i];
	ev_tensor *o = ev_new(r, n->out[0]->dtype, x0->rank, d);
	int64_t e = 0;
	for (int64_t p = 0; p < outer; p++)
		for (int k = 0; k < n->nin; k++) {
			int64_t m = in[k]->d[a] * inner;
			memcpy(o->x + e, in[k]->x + p * m, (size_t)m * sizeof *o->x);
			e += m;
		}
	out[0] = o;
	return 0;
}

static int eval_split(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", 0), x->rank);
	int64_t outer = 1, inner = 1, at = 0;
	for (int i = 0; i < a; i++)
		outer *= x->d[i];
	for (int i = a + 1; i < x->rank; i++)
		inner *= x->d[i];
	for (int k = 0; k < n->nout; k++) {
		int64_t d[IR_MAX_RANK];
		if (!n->out[k])
			continue;
		if (ev_shape_of(r, g, n->out[k], d) != x->rank)
			return ev_stop(r, n, "the shape of Split's output %d is not known", k);
		ev_tensor *o = ev_new(r, x->dt, x->rank, d);
		for (int64_t p = 0; p < outer; p++)
			memcpy(o->x + p * d[a] * inner, x->x + (p * x->d[a] + at) * inner,
			       (size_t)(d[a] * inner) * sizeof *o->x);
		at += d[a];
		out[k] = o;
	}
	return 0;
}

static int eval_expand(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int64_t d[IR_MAX_RANK];
	int R = ev_shape_of(r, g, n->out[0], d);
	if (R < 0)
		return ev_stop(r, n, "the output's shape is not known");
	ev_tensor *o = ev_new(r, in[0]->dt, R, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < o->n; e++, ev_next_index(idx, d, R))
		o->x[e] = in[0]->x[ev_bcast_off(in[0], R, idx)];
	out[0] = o;
	return 0;
}

static int eval_tile(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0], *rep = in[1];
	int64_t d[IR_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		d[i] = x->d[i] * ev_ival(rep, i);
	ev_tensor *o = ev_new(r, x->dt, x->rank, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t e = 0; e < o->n; e++, ev_next_index(idx, d, x->rank)) {
		int64_t off = 0;
		for (int i = 0; i < x->rank; i++)
			off = off * x->d[i] + idx[i] % x->d[i];
		o->x[e] = x->x[off];
	}
	out[0] = o;
	return 0;
}

/* ---- products and reductions ------------------------------------------------------------- */

/* MatMul with numpy's broadcasting of the batch axes (rank 1 operands
 * promoted and their axis removed again). */
static int eval_matmul(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	ev_tensor a = *in[0], b = *in[1];
	int va = a.rank == 1, vb = b.rank == 1;
	if (va) {
		a.rank = 2;
		a.d[1] = a.d[0];
		a.d[0] = 1;
	}
	if (vb) {
		b.rank = 2;
		b.d[1] = 1;
	}
	int64_t M = a.d[a.rank - 2], K = a.d[a.rank - 1], N = b.d[b.rank - 1];
	if (b.d[b.rank - 2] != K)
		return ev_stop(r, n, "MatMul of [.., %lld] by [%lld, ..]", (long long)K, (long long)b.d[b.rank - 2]);
	int R = a.rank > b.rank ? a.rank : b.rank;
	int64_t d[IR_MAX_RANK];
	ev_tensor ab = a, bb = b;     /* the batch axes alone */
	ab.rank -= 2;
	bb.rank -= 2;
	for (int i = 0; i < R - 2; i++) {
		int ja = i - (R - 2 - ab.rank), jb = i - (R - 2 - bb.rank);
		int64_t x = ja >= 0 ? ab.d[ja] : 1, y = jb >= 0 ? bb.d[jb] : 1;
		if (x != y && x != 1 && y != 1)
			return ev_stop(r, n, "MatMul batch axes cannot be broadcast");
		d[i] = x == 1 ? y : x;
	}
	int64_t batch = 1;
	for (int i = 0; i < R - 2; i++)
		batch *= d[i];
	d[R - 2] = M;
	d[R - 1] = N;
	ev_tensor *o = ev_new(r, n->out[0]->dtype, R, d);
	int64_t idx[IR_MAX_RANK] = {0};
	for (int64_t q = 0; q < batch; q++, ev_next_index(idx, d, R - 2)) {
		int64_t oa = ev_bcast_off(&ab, R - 2, idx) * M * K, ob = ev_bcast_off(&bb, R - 2, idx) * K * N;
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double s = 0;
				for (int64_t k = 0; k < K; k++)
					s += a.x[oa + i * K + k] * b.x[ob + k * N + j];
				o->x[(q * M + i) * N + j] = ev_as_type(o->dt, s);
			}
	}
	if (va || vb) {         /* drop the promoted axes */
		int k = 0;
		for (int i = 0; i < R; i++)
			if (!((va && i == R - 2) || (vb && i == R - 1)))
				o->d[k++] = d[i];
		o->rank = k;
	}
	out[0] = o;
	return 0;
}

static int eval_gemm(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *A = in[0], *B = in[1], *C = n->nin > 2 ? in[2] : NULL;
	int ta = (int)ir_attr_int(n, "transA", 0), tb = (int)ir_attr_int(n, "transB", 0);
	double alpha = ir_attr_float(n, "alpha", 1.0f), beta = ir_attr_float(n, "beta", 1.0f);
	if (A->rank != 2 || B->rank != 2)
		return ev_stop(r, n, "Gemm of rank %d by rank %d", A->rank, B->rank);
	int64_t M = ta ? A->d[1] : A->d[0], K = ta ? A->d[0] : A->d[1], N = tb ? B->d[0] : B->d[1];
	if ((tb ? B->d[1] : B->d[0]) != K)
		return ev_stop(r, n, "Gemm inner sizes differ");
	int64_t d[2] = {M, N};
	ev_tensor *o = ev_new(r, n->out[0]->dtype, 2, d);
	int64_t idx[2] = {0, 0};
	for (int64_t e = 0; e < M * N; e++, ev_next_index(idx, d, 2)) {
		int64_t i = idx[0], j = idx[1];
		double s = 0;
		for (int64_t k = 0; k < K; k++)
			s += A->x[ta ? k * A->d[1] + i : i * A->d[1] + k] * B->x[tb ? j * B->d[1] + k : k * B->d[1] + j];
		s *= alpha;
		if (C)
			s += beta * C->x[ev_bcast_off(C, 2, idx)];
		o->x[e] = ev_as_type(o->dt, s);
	}
	out[0] = o;
	return 0;
}

static int eval_softmax(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0];
	int a = (int)ev_norm_axis(ir_attr_int(n, "axis", -1), x->rank);
	int64_t outer = 1, inner = 1, m = x->d[a];
	for (int i = 0; i < a; i++)
		outer *= x->d[i];
	for (int i = a + 1; i < x->rank; i++)
		inner *= x->d[i];
	ev_tensor *o = ev_new(r, x->dt, x->rank, x->d);
	ev_log_softmax(x->x, outer, m, inner, o->x);
	for (int64_t e = 0; e < o->n; e++)
		o->x[e] = ev_as_type(x->dt, n->op == OP_SOFTMAX ? exp(o->x[e]) : o->x[e]);
	out[0] = o;
	return 0;
}

void ev_log_softmax(const double *x, int64_t outer, int64_t m, int64_t inner, double *y)
{
	for (int64_t p = 0; p < outer; p++)
		for (int64_t s = 0; s < inner; s++) {
			double mx = -INFINITY, sum = 0;
			for (int64_t k = 0; k < m; k++)
				mx = fmax(mx, x[(p * m + k) * inner + s]);
			for (int64_t k = 0; k < m; k++)
				sum += exp(x[(p * m + k) * inner + s] - mx);
			for (int64_t k = 0; k < m; k++)
				y[(p * m + k) * inner + s] = x[(p * m + k) * inner + s] - mx - log(sum);
		}
}

static int eval_reduce(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *x = in[0];
	unsigned char red[IR_MAX_RANK];
	memset(red, 0, sizeof red);
	const ev_tensor *ax = n->nin > 1 ? in[1] : NULL;
	ir_attr *aa = ir_attr_find(n, "axes");
	int64_t cnt = ax ? ax->n : aa ? aa->n : 0;
	if (cnt == 0 && !ir_attr_int(n, "noop_with_empty_axes", 0))
		memset(red, 1, (size_t)x->rank);
	for (int64_t i = 0; i < cnt; i++) {
		int64_t a = ev_norm_axis(ax ? ev_ival(ax, i) : aa->ints[i], x->rank);
		if (a < 0 || a >= x->rank)
			return ev_stop(r, n, "reduction axis out of range");
		red[a] = 1;
	}
	int keep = (int)ir_attr_int(n, "keepdims", 1);
	int64_t d[IR_MAX_RANK], kd[IR_MAX_RANK];
	int R = 0;
	for (int i = 0; i < x->rank; i++) {
		kd[i] = red[i] ? 1 : x->d[i];
		if (!red[i] || keep)
			d[R++] = kd[i];
	}
	ev_tensor *o = ev_new(r, n->out[0]->dtype, R, d);
	ev_tensor k0 = {.rank = x->rank};
	memcpy(k0.d, kd, sizeof kd);
	double *acc = arena_array(r->A, (size_t)(o->n ? o->n : 1), sizeof *acc);
	int64_t *cnts = arena_array(r->A, (size_t)(o->n ? o->n : 1), sizeof *cnts);
	for (int64_t e = 0; e < o->n; e++)
		acc[e] = n->op == OP_REDUCEMAX ? -INFINITY : n->op == OP_REDUCEMIN ? INFINITY :
			 n->op == OP_REDUCEPROD ? 1 : 0;
	int64_t idx[IR_MAX_RANK] = {0};
	/* ReduceLogSumExp: the largest element subtracted first, added back after */
	double *mx = arena_array(r->A, (size_t)(o->n ? o->n : 1), sizeof *mx);
	for (int64_t e = 0; e < o->n; e++)
		mx[e] = n->op == OP_REDUCELOGSUMEXP ? -INFINITY : 0;
	for (int64_t e = 0; n->op == OP_REDUCELOGSUMEXP && e < x->n; e++, ev_next_index(idx, x->d, x->rank)) {
		int64_t q = ev_bcast_off(&k0, x->rank, idx);
		mx[q] = fmax(mx[q], x->x[e]);
	}
	for (int64_t e = 0; e < o->n; e++)
		mx[e] = isinf(mx[e]) ? 0 : mx[e];
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < x->n; e++, ev_next_index(idx, x->d, x->rank)) {
		int64_t q = ev_bcast_off(&k0, x->rank, idx);
		double v = x->x[e];
		switch (n->op) {
		case OP_REDUCEMAX: acc[q] = fmax(acc[q], v); break;
		case OP_REDUCEMIN: acc[q] = fmin(acc[q], v); break;
		case OP_REDUCEPROD: acc[q] *= v; break;
		case OP_REDUCESUMSQUARE: acc[q] += v * v; break;
		case OP_REDUCEL1: acc[q] += fabs(v); break;
		case OP_REDUCEL2: acc[q] += v * v; break;
		case OP_REDUCELOGSUMEXP: acc[q] += exp(v - mx[q]); break;
		default: acc[q] += v; break;
		}
		cnts[q]++;
	}
	for (int64_t e = 0; e < o->n; e++) {
		double v = acc[e];
		if (n->op == OP_REDUCEMEAN)
			v = cnts[e] ? v / (double)cnts[e] : NAN;
		else if (n->op == OP_REDUCEL2)
			v = sqrt(v);
		else if (n->op == OP_REDUCELOGSUM || n->op == OP_REDUCELOGSUMEXP)
			v = mx[e] + log(v);
		o->x[e] = ev_as_type(o->dt, v);
	}
	out[0] = o;
	return 0;
}

/* ---- the recurrence --------------------------------------------------------------------- */

static int eval_graph_nodes(ev_run *r, ir_graph *g);
static int eval_node(ev_run *r, ir_graph *g, ir_node *n);

/* Slice t of x along axis a (0 or 1), without that axis. */
static ev_tensor *time_slice(ev_run *r, const ev_tensor *x, int a, int64_t t)
{
	int64_t d[IR_MAX_RANK], k = 0, outer = 1, inner = 1;
	for (int i = 0; i < x->rank; i++)
		if (i != a)
			d[k++] = x->d[i];
	for (int i = 0; i < a; i++)
		outer *= x->d[i];
	for (int i = a + 1; i < x->rank; i++)
		inner *= x->d[i];
	ev_tensor *o = ev_new(r, x->dt, (int)k, d);
	for (int64_t p = 0; p < outer; p++)
		memcpy(o->x + p * inner, x->x + (p * x->d[a] + t) * inner, (size_t)inner * sizeof *o->x);
	return o;
}

/* A RECURRENCE node as eval_recurrence runs it. */
typedef struct rec_ev {
	ir_node *n;
	ir_graph *b;                    /* its body */
	ev_tensor **in;                 /* its inputs' values */
	int nseq, ns, nout, hs, rev;    /* n_seq, n_state, n_out, has_step, reverse */
	const ir_attr *sa;              /* seq_axis */
	int64_t T, B;
	int cond;                       /* the state that is its condition (ir_rec_cond_state), or -1 */
	const ev_tensor *L;             /* the lengths (has_lens), or NULL */
	ev_tensor ***ys;                /* [nout][T] the per-step outputs of each step */
} rec_ev;

/* Step q of row `row` (time t of `steps`): the body's inputs fed (slice t
 * of each sequence, the states cur, the step counters), its nodes run, its
 * new states into cur and its per-step outputs into ys (with lengths, row
 * `row` of them alone). */
static int rec_step(ev_run *r, rec_ev *e, ev_tensor **cur, int64_t q, int64_t t, int64_t steps, int64_t row)
{
	ir_graph *b = e->b;
	int nseq = e->nseq, ns = e->ns;
	for (int k = 0; k < nseq; k++) {
		int a = e->sa && e->sa->n > k ? (int)e->sa->ints[k] : 0;
		put(r, b->inputs[k], time_slice(r, e->in[k], a, t));
	}
	for (int k = 0; k < ns; k++)
		put(r, b->inputs[nseq + k], cur[k]);
	if (e->hs >= 1) {
		ev_tensor *tv = ev_new(r, DT_F32, 0, NULL);
		tv->x[0] = (double)(q + 1);
		put(r, b->inputs[nseq + ns], tv);
	}
	if (e->hs == 2) {
		ev_tensor *lv = ev_new(r, DT_F32, 0, NULL);
		lv->x[0] = (double)steps;
		put(r, b->inputs[nseq + ns + 1], lv);
	}
	if (eval_graph_nodes(r, b))
		return 1;
	for (int k = 0; k < ns; k++) {
		cur[k] = ev_get(r, b->outputs[k]);
		if (!cur[k])
			return ev_stop(r, e->n, "the body's state output %d was not computed", k);
	}
	for (int j = 0; j < e->nout; j++) {
		ev_tensor *y = ev_get(r, b->outputs[ns + j]);
		if (!y)
			return ev_stop(r, e->n, "the body's output %d was not computed", j);
		if (!e->L) {
			e->ys[j][t] = y;
		} else {        /* row `row` of y into the stacked output */
			if (!e->ys[j][t])
				e->ys[j][t] = ev_new(r, y->dt, y->rank, y->d);
			int64_t per = y->n / e->B;
			memcpy(e->ys[j][t]->x + row * per, y->x + row * per, (size_t)per * sizeof *y->x);
		}
	}
	return 0;
}

/* Row `row` run over its steps from the initial states st (without lengths,
 * the one row is the whole batch), its final states into fin. */
static int rec_row(ev_run *r, rec_ev *e, ev_tensor **st, ev_tensor **fin, int64_t row)
{
	int ns = e->ns;
	int64_t T = e->T;
	/* with lengths, the state rows of row `row` alone are followed:
	 * the whole batch runs, and only row `row`'s results are kept */
	ev_tensor **cur = arena_array(r->A, (size_t)ns + 1, sizeof *cur);
	memcpy(cur, st, (size_t)ns * sizeof *cur);
	int64_t steps = e->L ? ev_ival(e->L, row) : T;
	if (steps < 0 || steps > T)
		return ev_stop(r, e->n, "sequence length %lld of row %lld outside [0, %lld]", (long long)steps,
			    (long long)row, (long long)T);
	for (int64_t q = 0; q < steps; q++) {
		if (rec_step(r, e, cur, q, e->rev ? steps - 1 - q : q, steps, row))
			return 1;
		if (e->cond >= 0 && cur[e->cond]->x[0] == 0) {
			e->T = q + 1;           /* the condition ended the loop: the steps run */
			break;
		}
	}
	for (int k = 0; k < ns; k++) {
		if (!e->L) {
			fin[k] = cur[k];
		} else {
			int64_t per = cur[k]->n / e->B;
			memcpy(fin[k]->x + row * per, cur[k]->x + row * per, (size_t)per * sizeof *fin[k]->x);
		}
	}
	return 0;
}

/* Per-step output j stacked along its out_axis a: the steps' values, zero
 * where a row had no such step (the IR's shape when no step ran). */
static int rec_stack(ev_run *r, const ir_graph *g, rec_ev *e, int j, int a, ev_tensor **out)
{
	ir_node *n = e->n;
	int64_t T = e->T;
	ev_tensor *y0 = NULL;
	for (int64_t t = 0; t < T && !y0; t++)
		y0 = e->ys[j][t];
	int64_t yd[IR_MAX_RANK];
	if (!y0) {          /* no step ran: the shape from the IR */
		if (ev_shape_of(r, g, n->out[e->ns + j], yd) < 0)
			return ev_stop(r, n, "stacked output %d of no step", j);
		*out = ev_new(r, n->out[e->ns + j]->dtype, n->out[e->ns + j]->shape.rank, yd);
		return 0;
	}
	int k = 0;
	for (int i = 0; i <= y0->rank; i++)
		yd[i] = i == a ? T : y0->d[k++];
	ev_tensor *o = ev_new(r, y0->dt, y0->rank + 1, yd);
	int64_t outer = 1, inner = 1;
	for (int i = 0; i < a; i++)
		outer *= yd[i];
	for (int i = a + 1; i <= y0->rank; i++)
		inner *= yd[i];
	for (int64_t t = 0; t < T; t++)
		if (e->ys[j][t])       /* rows past their length stay zero */
			for (int64_t p = 0; p < outer; p++)
				memcpy(o->x + (p * T + t) * inner, e->ys[j][t]->x + p * inner,
				       (size_t)inner * sizeof *o->x);
	*out = o;
	return 0;
}

static int eval_recurrence(ev_run *r, const ir_graph *g, ir_node *n, ev_tensor **in, ev_tensor **out)
{
	ir_graph *b = n->body;
	int nseq = (int)ir_attr_int(n, "n_seq", 0), ns = (int)ir_attr_int(n, "n_state", 0);
	int nout = (int)ir_attr_int(n, "n_out", 0), rev = (int)ir_attr_int(n, "reverse", 0);
	int lens = (int)ir_attr_int(n, "has_lens", 0), hs = (int)ir_attr_int(n, "has_step", 0);
	ir_attr *sa = ir_attr_find(n, "seq_axis"), *oa = ir_attr_find(n, "out_axis");
	if (!b || nseq < 1 || b->ninputs != nseq + ns + hs || b->noutputs != ns + nout)
		return ev_noref(r, n, "a recurrence of a form the reference does not know");
	int ax0 = sa && sa->n ? (int)sa->ints[0] : 0;
	const ev_tensor *x0 = in[0];
	rec_ev e = {.n = n, .b = b, .in = in, .nseq = nseq, .ns = ns, .nout = nout, .hs = hs, .rev = rev,
		    .sa = sa, .T = x0->d[ax0], .B = x0->d[1 - ax0], .cond = ir_rec_cond_state(n)};
	if (e.cond >= 0 && (lens || rev))
		return ev_noref(r, n, "a recurrence its condition ends, with lengths or reversed");
	ev_tensor **st = arena_array(r->A, (size_t)ns + 1, sizeof *st);
	for (int k = 0; k < ns; k++) {
		st[k] = in[nseq + k];
		if (!st[k]) {
			st[k] = ev_of_value(r, b, b->inputs[nseq + k]);
			if (!st[k])
				return ev_stop(r, n, "the shape of state %d is not known", k);
		}
	}
	e.L = lens ? in[nseq + ns] : NULL;
	/* per row when lengths are given: each row's own steps (a row b runs
	 * lens[b] steps, reverse from its last valid one) */
	int64_t rows = e.L ? e.B : 1;
	e.ys = arena_array(r->A, (size_t)nout + 1, sizeof *e.ys);
	for (int j = 0; j < nout; j++)
		e.ys[j] = arena_array(r->A, (size_t)e.T + 1, sizeof *e.ys[j]);
	ev_tensor **fin = arena_array(r->A, (size_t)ns + 1, sizeof *fin);
	for (int k = 0; k < ns; k++)
		fin[k] = ev_new(r, st[k]->dt, st[k]->rank, st[k]->d);
	for (int64_t row = 0; row < rows; row++)
		if (rec_row(r, &e, st, fin, row))
			return 1;
	for (int k = 0; k < ns; k++)
		out[k] = fin[k];
	for (int j = 0; j < nout; j++)
		if (n->out[ns + j] && rec_stack(r, g, &e, j, oa && oa->n > j ? (int)oa->ints[j] : 0, &out[ns + j]))
			return 1;
	return 0;
}


/* ---- training operators ------------------------------------------------------------- */

/* MseLoss and its gradient (ops.def). */
static int eval_mse(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int grad = n->op == OP_MSELOSSGRAD, o0 = grad ? 1 : 0;
	const ev_tensor *y = in[o0], *t = in[o0 + 1], *m = n->nin > o0 + 2 ? in[o0 + 2] : NULL;
	if (y->n != t->n || (m && m->n != y->n))
		return ev_stop(r, n, "%s of tensors of different sizes", ir_op_name(n->op));
	double den = 0, sum = 0;
	for (int64_t e = 0; e < y->n; e++) {
		double w = m ? m->x[e] : 1;
		den += w;
		sum += w * (y->x[e] - t->x[e]) * (y->x[e] - t->x[e]);
	}
	if (!grad) {
		ev_tensor *o = ev_new(r, n->out[0]->dtype, 0, NULL);
		o->x[0] = ev_as_type(o->dt, den > 0 ? sum / den : 0);
		out[0] = o;
		return 0;
	}
	ev_tensor *o = ev_new(r, y->dt, y->rank, y->d);
	for (int64_t e = 0; e < y->n; e++)
		o->x[e] = ev_as_type(o->dt, den > 0 ? in[0]->x[0] * 2 * (m ? m->x[e] : 1) * (y->x[e] - t->x[e]) / den : 0);
	out[0] = o;
	return 0;
}

/* SoftmaxCrossEntropyLossGrad: dloss (softmax(scores) - onehot(labels)) / N
 * over scores [N, C]. */
static int eval_sce_grad(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ev_tensor *dl = in[0], *x = in[1], *t = in[2];
	if (x->rank != 2 || t->n != x->d[0])
		return ev_stop(r, n, "SoftmaxCrossEntropyLossGrad of scores other than [N, C]");
	int64_t N = x->d[0], C = x->d[1];
	ev_tensor *o = ev_new(r, x->dt, 2, x->d);
	ev_log_softmax(x->x, N, C, 1, o->x);
	for (int64_t i = 0; i < N; i++) {
		int64_t lab = ev_ival(t, i);
		for (int64_t c = 0; c < C; c++)
			o->x[i * C + c] = ev_as_type(o->dt, dl->x[0] * (exp(o->x[i * C + c]) - (c == lab)) / (double)N);
	}
	out[0] = o;
	return 0;
}

/* The ONNX Gradient node (inputs xs, then y): d sum(y) / d x for each x by
 * central differences in double, every node before the Gradient node run
 * again with one element of x moved by +-h.  Bounded: at most 4096
 * elements in all. */
enum { GRAD_MAX_ELEMS = 4096 };

static double sum_y_with(ev_run *r, ir_graph *g, int upto, const ir_value *x, const ev_tensor *xv,
			 const ir_value *y, int *failed)
{
	arena A;
	arena_init(&A);
	ev_run s = {.A = &A};
	memcpy(s.sym, r->sym, sizeof s.sym);
	for (int k = 0; k < g->ninputs; k++)
		put(&s, g->inputs[k], ev_get(r, g->inputs[k]));
	ev_tensor *xc = ev_new(&s, xv->dt, xv->rank, xv->d);
	memcpy(xc->x, xv->x, (size_t)xv->n * sizeof *xc->x);
	put(&s, x, xc);
	double sum = 0;
	for (int i = 0; i < upto && !*failed; i++) {
		ir_node *m = g->nodes[i];
		int makes_x = 0;
		for (int k = 0; k < m->nout; k++)
			makes_x |= m->out[k] == x;
		if (!makes_x && eval_node(&s, g, m)) {
			snprintf(r->why, sizeof r->why, "%s", s.why);
			r->at = s.at;
			*failed = 1;
		}
	}
	const ev_tensor *yv = *failed ? NULL : ev_get(&s, y);
	for (int64_t e = 0; yv && e < yv->n; e++)
		sum += yv->x[e];
	if (!*failed && !yv) {
		snprintf(r->why, sizeof r->why, "Gradient: y was not computed");
		*failed = 1;
	}
	arena_free(&A);
	return sum;
}

static int eval_gradient(ev_run *r, ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int nx = n->nin - 1, at = -1;
	for (int i = 0; i < g->nnodes && at < 0; i++)
		if (g->nodes[i] == n)
			at = i;
	if (at < 0 || g->parent)
		return ev_stop(r, n, "a Gradient node outside the root graph");
	int64_t total = 0;
	for (int k = 0; k < nx; k++)
		total += in[k]->n;
	if (total > GRAD_MAX_ELEMS)
		return ev_stop(r, n, "Gradient of %lld elements: more than the %d central differences allow",
			    (long long)total, GRAD_MAX_ELEMS);
	int failed = 0, was = exact_floats;
	exact_floats = 1;
	for (int k = 0; k < nx && !failed; k++) {
		ev_tensor *x = in[k], *o = ev_new(r, DT_F32, x->rank, x->d), *xv = ev_new(r, x->dt, x->rank, x->d);
		memcpy(xv->x, x->x, (size_t)x->n * sizeof *xv->x);
		for (int64_t e = 0; e < x->n && !failed; e++) {
			double h = 1e-6 * fmax(1.0, fabs(x->x[e]));
			xv->x[e] = x->x[e] + h;
			double up = sum_y_with(r, g, at, n->in[k], xv, n->in[nx], &failed);
			xv->x[e] = x->x[e] - h;
			double dn = sum_y_with(r, g, at, n->in[k], xv, n->in[nx], &failed);
			xv->x[e] = x->x[e];
			o->x[e] = (up - dn) / (2 * h);
		}
		out[k] = o;
	}
	exact_floats = was;
	if (failed)
		r->at = r->at ? r->at : n;
	return failed;
}

/* ---- nodes ---------------------------------------------------------------------------- */

/* The ONNX control flow, sequence and optional operators, which have no
 * reference because no graph the reference runs for validation or eval_ref
 * holds one: both take the graph at the end of the resolving stages, and
 * those replace every one (lower_loop.c: Loop and Scan by recurrences or
 * unrolled copies; lower_seq.c: If and SequenceMap inlined, sequences and
 * optionals resolved into their tensors, the Sequence* and Optional* nodes
 * into tensor nodes or constants) or fail the compilation (a sequence node
 * still read: onnx_seq_leftovers; a node whose outputs no round determined:
 * infer_finish), and infer_finish's remove_dead drops what is left unread.
 * Only a graph as loaded (eval_ref's second run) can hold one. */
static int resolved_away(ir_op op)
{
	switch (op) {
	case OP_LOOP: case OP_SCAN: case OP_IF: case OP_SEQMAP: case OP_OPTIONAL: case OP_OPTHAS: case OP_OPTGET:
	case OP_SEQEMPTY: case OP_SEQINSERT: case OP_SEQCONCAT: case OP_SEQAT: case OP_SEQLEN: case OP_SEQCONSTRUCT:
	case OP_SEQERASE: case OP_SPLITTOSEQ:
		return 1;
	default:
		return 0;
	}
}

/* Cast, and CastLike: Cast to the type of its second input, which stands
 * for FLOAT16 / BFLOAT16 when narrow (infer turns it into that Cast; it
 * runs as CastLike in a graph as loaded, eval_ref). */
static int eval_cast(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	const ir_value *like = n->op == OP_CASTLIKE ? n->in[1] : NULL;
	ev_tensor *o = ev_new(r, like ? like->dtype : n->out[0]->dtype, in[0]->rank, in[0]->d);
	ir_dtype to = like ? (like->narrow ? like->narrow : like->dtype) : (ir_dtype)ir_attr_int(n, "to", o->dt);
	int narrow = (to == DT_F16 || to == DT_BF16) && ev_is_float(o->dt);
	for (int64_t e = 0; e < o->n; e++)
		o->x[e] = narrow ? narrow_round(to, in[0]->x[e]) : ev_as_type(o->dt, in[0]->x[e]);
	out[0] = o;
	return 0;
}

/* Shape: the sizes of axes start .. end of its input. */
static int eval_shape(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int64_t s0 = ir_attr_int(n, "start", 0), e0 = ir_attr_int(n, "end", in[0]->rank);
	s0 = ev_norm_axis(s0, in[0]->rank);
	e0 = e0 > in[0]->rank ? in[0]->rank : ev_norm_axis(e0, in[0]->rank);
	s0 = s0 < 0 ? 0 : s0;
	int64_t len = e0 > s0 ? e0 - s0 : 0;
	ev_tensor *o = ev_new(r, DT_I64, 1, &len);
	for (int64_t i = 0; i < len; i++)
		o->x[i] = (double)in[0]->d[s0 + i];
	out[0] = o;
	return 0;
}

/* ConstantOfShape: attribute value (0 without it) in the shape its input gives. */
static int eval_constofshape(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	int64_t d[IR_MAX_RANK];
	int rank = (int)in[0]->n;
	if (rank > IR_MAX_RANK)
		return ev_stop(r, n, "ConstantOfShape of rank %d", rank);
	for (int i = 0; i < rank; i++)
		d[i] = ev_ival(in[0], i);
	ev_tensor *o = ev_new(r, n->out[0]->dtype, rank, d);
	ir_attr *va = ir_attr_find(n, "value");
	double v = va && va->t && (va->t->data || va->t->sym) ? (va->t->dtype == DT_F32 ?
		   ((const float *)va->t->data)[0] : ir_const_num(va->t, 0)) : 0.0;
	for (int64_t e = 0; e < o->n; e++)
		o->x[e] = v;
	out[0] = o;
	return 0;
}

/* Range: start, start + delta, .. up to limit (not included). */
static int eval_range(ev_run *r, const ir_node *n, ev_tensor **in, ev_tensor **out)
{
	double st = in[0]->x[0], lim = in[1]->x[0], dl = in[2]->x[0];
	int64_t len = dl == 0 ? 0 : (int64_t)ceil((lim - st) / dl);
	len = len < 0 ? 0 : len;
	ev_tensor *o = ev_new(r, n->out[0]->dtype, 1, &len);
	for (int64_t e = 0; e < len; e++)
		o->x[e] = ev_as_type(o->dt, st + (double)e * dl);
	out[0] = o;
	return 0;
}

/* The values of node n's inputs into in; a constant or weight not yet
 * seen is made from its data.  1 after ev_stop or ev_noref. */
static int node_inputs(ev_run *r, const ir_node *n, ev_tensor **in)
{
	for (int k = 0; k < n->nin; k++) {
		const ir_value *v = n->in[k];
		if (!v)
			continue;
		in[k] = ev_get(r, v);
		if (!in[k] && (v->data || v->sym) && (v->kind == VAL_CONST || v->kind == VAL_WEIGHT)) {
			in[k] = ev_of_value(r, v->graph, v);
			if (in[k])
				put(r, v, in[k]);
		}
		if (!in[k])
			return ev_stop(r, n, "input '%s' has no value", v->name ? v->name : "?");
		if (v->seq != IR_TENSOR)
			return ev_noref(r, n, "a sequence or optional input");
	}
	return 0;
}

/* One node run on its inputs' values, one case per operator: a table. */
static int eval_node(ev_run *r, ir_graph *g, ir_node *n)
{
	ev_tensor **in = arena_array(r->A, (size_t)n->nin + 1, sizeof *in);
	ev_tensor **out = arena_array(r->A, (size_t)n->nout + 1, sizeof *out);
	if (node_inputs(r, n, in))
		return 1;
	int err;
	const ir_opinfo *oi = &ir_ops[n->op];
	r->nodes++;
	switch (n->op) {
	case OP_IDENTITY: case OP_RESHAPE: case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_FLATTEN:
		err = eval_view(r, g, n, in, out);
		break;
	case OP_TRANSPOSE: err = eval_transpose(r, n, in, out); break;
	case OP_SLICE: err = eval_slice(r, n, in, out); break;
	case OP_GATHER: err = eval_gather(r, n, in, out); break;
	case OP_CONCAT: err = eval_concat(r, n, in, out); break;
	case OP_SPLIT: err = eval_split(r, g, n, in, out); break;
	case OP_EXPAND: err = eval_expand(r, g, n, in, out); break;
	case OP_TILE: err = eval_tile(r, n, in, out); break;
	case OP_MATMUL: err = eval_matmul(r, n, in, out); break;
	case OP_GEMM: err = eval_gemm(r, n, in, out); break;
	case OP_SOFTMAX: case OP_LOGSOFTMAX: err = eval_softmax(r, n, in, out); break;
	case OP_REDUCESUM: case OP_REDUCEMEAN: case OP_REDUCEMAX: case OP_REDUCEMIN: case OP_REDUCEPROD:
	case OP_REDUCESUMSQUARE: case OP_REDUCEL1: case OP_REDUCEL2: case OP_REDUCELOGSUM: case OP_REDUCELOGSUMEXP:
		err = eval_reduce(r, n, in, out);
		break;
	case OP_CAST: case OP_CASTLIKE: err = eval_cast(r, n, in, out); break;
	case OP_SHAPE: err = eval_shape(r, n, in, out); break;
	case OP_CONSTOFSHAPE: err = eval_constofshape(r, n, in, out); break;
	case OP_RANGE: err = eval_range(r, n, in, out); break;
	case OP_RECURRENCE: err = eval_recurrence(r, g, n, in, out); break;
	case OP_LSTM: case OP_GRU: case OP_RNN: err = ev_rnn(r, g, n, in, out); break;       /* ir_eval_rnn.c */
	case OP_SLICESCATTER: err = eval_slicescatter(r, n, in, out); break;
	case OP_MSELOSS: case OP_MSELOSSGRAD: err = eval_mse(r, n, in, out); break;
	case OP_SOFTMAXCEGRAD: err = eval_sce_grad(r, n, in, out); break;
	case OP_GRADIENT: err = eval_gradient(r, g, n, in, out); break;
	case OP_CELL: err = ev_cell(r, g, n, in, out); break;       /* ir_eval_cell.c */
	default:
		if (oi->kind == OPK_ELEM)
			err = eval_elem(r, n, in, out);
		else if (ev_ops[n->op])
			err = ev_ops[n->op](r, g, n, in, out);
		else if (resolved_away(n->op))
			err = ev_noref(r, n, "%s is resolved at compile time (lower_loop.c, lower_seq.c): no graph the "
				      "reference validates holds one", ir_op_name(n->op));
		else
			err = ev_noref(r, n, "no reference for %s", ir_op_name(n->op));
	}
	if (err)
		return err;
	for (int k = 0; k < n->nout; k++)
		if (n->out[k] && out[k])
			put(r, n->out[k], out[k]);
	return 0;
}

static int eval_graph_nodes(ev_run *r, ir_graph *g)
{
	for (int i = 0; i < g->nnodes; i++)
		if (eval_node(r, g, g->nodes[i]))
			return 1;
	return 0;
}

void ev_put(ev_run *r, const ir_value *v, ev_tensor *t) { put(r, v, t); }

int ev_graph_upto(ev_run *r, ir_graph *g, ev_tensor *const *in, int nin, int upto)
{
	for (int k = 0; k < g->ninputs; k++) {
		if (k >= nin || !in[k])
			return ev_stop(r, NULL, "no value for input '%s'", g->inputs[k]->name);
		if (!ev_get(r, g->inputs[k]))   /* (one put before stays: ev_put) */
			put(r, g->inputs[k], in[k]);
	}
	for (int i = 0; i < upto && i < g->nnodes; i++)
		if (eval_node(r, g, g->nodes[i]))
			return 1;
	if (upto < g->nnodes)
		return 0;
	/* an output the folder made a constant is read by no node */
	for (int k = 0; k < g->noutputs; k++) {
		const ir_value *v = g->outputs[k];
		if (!ev_get(r, v) && (v->data || v->sym) && (v->kind == VAL_CONST || v->kind == VAL_WEIGHT)) {
			ev_tensor *t = ev_of_value(r, g, v);
			if (t)
				put(r, v, t);
		}
	}
	return 0;
}

int ev_graph(ev_run *r, ir_graph *g, ev_tensor *const *in, int nin)
{
	return ev_graph_upto(r, g, in, nin, g->nnodes);
}
