/* reroll_build.c: pass_reroll's third job, the RECURRENCE in the copies'
 * place: the stacked outputs and other reads after the loop
 * (reroll_find_stacks), then the body (one copy of the template), its
 * inputs (sequences, coefficient tables or the NAG schedule, states), the
 * node, the reads after the loop (reversals, Gathers of single steps) and
 * the new node list (reroll_build_recurrence).  Runs after reroll_match.c;
 * reroll_time.c then decides the time axis. */
#include "infer.h"
#include "ir_build.h"
#include "reroll.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where a value of copy t is read outside the steps: 1 if a tail node or a
 * graph output reads it. */
static int used_outside(const rr *R, const ir_value *v)
{
	int id = reroll_vid(R, v);
	if (id < 0)
		return 0;
	if (reroll_is_graph_output(R, v))
		return 1;
	for (int j = R->cstart[id]; j < R->cstart[id + 1]; j++)
		if (R->cons[j] >= 0 && R->label[R->cons[j]] == LBL_TAIL)
			return 1;
	return 0;
}

/* Whether template value tv is read after the loop as a final state. */
static int is_final(const rr *R, int tv)
{
	int final = 0;
	for (int s = 0; s < R->nstate; s++)
		final |= R->state_out[s] == tv;
	return final;
}

/* ---- the stacks and the reads after the loop ----------------------------------------- */

/* Whether node n is a stacking Concat of the copies' Unsqueeze(y_t)
 * (T + 1 entries: the first from before the loop, the prologue's): 1 with
 * *st. */
static int stack_at(const rr *R, ir_node *n, int off, stack *st);

static int stack_of(const rr *R, ir_node *n, stack *st)
{
	if (n->op != OP_CONCAT || n->nin < R->T)
		return 0;
	int off = n->nin - R->T;
	if ((n->nin == R->T || n->nin == R->T + 1) &&
	    (!off || (reroll_label_of(R, n->in[0]) == LBL_PREFIX && !R->reverse)) && stack_at(R, n, off, st))
		return 1;
	/* the steps' entries among others: the first run of T entries that are
	 * the copies' values in step order */
	for (off = 0; off + R->T <= n->nin; off++)
		if (stack_at(R, n, off, st)) {
			st->pre = NULL;
			st->off = off;
			st->extra = n->nin != R->T;
			return 1;
		}
	return 0;
}

/* n's entries off .. off + T are the copies' values of one template value,
 * each with a unit axis at the concat axis: Unsqueeze(y_t) of a value y
 * (a [B, N] step output unsqueezed on axis 0 or 1; or any other y held as
 * its matrix, reroll_matrix, unsqueezed on axis 0), or y_t itself when it
 * has that unit axis with only unit axes before it (a [1, B, N] output of
 * a one-step nn.GRU, torch.cat on axis 0) or is [B, 1, N] stacked on axis
 * 1 (a batch-first decoder's per-step logits, torch.cat on axis 1). */
static int stack_at(const rr *R, ir_node *n, int off, stack *st)
{
	int tv = -1, ok = 1;
	for (int t = 0; t < R->T && ok; t++) {
		int x = -1;
		for (int u = 0; u < R->ntv && x < 0; u++)
			if (R->map[t][u] == n->in[t + off])
				x = u;
		ok = x >= 0 && (tv < 0 || tv == x);
		tv = x;
	}
	if (!ok)
		return 0;
	int64_t ax = ir_attr_int(n, "axis", 0);
	if (ax < 0)
		ax += n->out[0]->shape.rank;
	ir_shape m;
	ir_value *e = R->tval[tv], *y = e;
	ir_node *u = e->producer;
	int r = e->shape.rank;
	if (ax < 0 || ax >= r || !ir_dim_eq(e->shape.d[ax], ir_dim_const(1)))
		return 0;
	if (u && u->op == OP_UNSQUEEZE && ir_value_is_const(u->in[1]) && ir_shape_const_numel(&u->in[1]->shape) == 1) {
		int64_t uax = ir_const_int(u->in[1], 0);
		if (uax < 0)
			uax += r;
		if (uax == ax && u->in[0] && reroll_vid(R, u->in[0]) >= 0 && R->tvof[u->in[0]->id] >= 0 &&
		    ((r == 3 && ax <= 1 && u->in[0]->shape.rank == 2) || ax == 0))
			y = u->in[0];
	}
	if (y->dtype != DT_F32 || !reroll_matrix(R, y, &m))
		return 0;
	if (y == e) {
		/* no Unsqueeze: the entry itself, with unit axes only before ax
		 * (stacked on axis 0), or [B, 1, N] (a head over a [B, 1, I] step
		 * of a batch-first decoder) stacked on axis 1: the recurrence's
		 * [B, T, N] of its matrix [B, N] */
		if (ax == 1 && r == 3 && ir_dim_eq(m.d[0], e->shape.d[0]) && !ir_dim_eq(m.d[0], ir_dim_const(1))) {
			*st = (stack){n, R->tvof[y->id], 1, off ? n->in[0] : NULL, 0, 0};
			return 1;
		}
		if (ax != 0)
			return 0;
	} else if (y->shape.rank != 2 && ax != 0) {
		return 0;
	}
	*st = (stack){n, R->tvof[y->id], (int)(y->shape.rank == 2 && y != e ? ax : 0), off ? n->in[0] : NULL, 0, 0};
	return 1;
}

/* Whether copy value v is read after the loop other than by a stack. */
static int read_after(const rr *R, const build *B, const ir_value *v)
{
	int id = reroll_vid(R, v);
	if (id < 0)
		return 0;
	int outside = reroll_is_graph_output(R, v);
	for (int j = R->cstart[id]; j < R->cstart[id + 1] && !outside; j++) {
		int c = R->cons[j];
		if (c < 0 || R->label[c] != LBL_TAIL)
			continue;
		int in_stack = 0;
		for (int s = 0; s < B->nstack; s++)
			in_stack |= B->stacks[s].concat == R->g->nodes[c];
		outside = !in_stack;
	}
	return outside;
}

/* Whether tv is among list[0 .. n). */
static int has_tv(const int *list, int n, int tv)
{
	int in = 0;
	for (int k = 0; k < n; k++)
		in |= list[k] == tv;
	return in;
}

/* The values read after the loop: from the last copy (B->last_tv, finals
 * excepted), or from others (B->each_tv: a model returning its steps'
 * outputs as a list, read from a stacked output; the last copy's value of
 * such a value comes from it too). */
static void after_reads(rr *R, build *B)
{
	B->last_tv = arena_array(R->A, (size_t)R->ntv + 1, sizeof *B->last_tv);
	B->each_tv = arena_array(R->A, (size_t)R->ntv + 1, sizeof *B->each_tv);
	for (int t = 0; t < R->T; t++)
		for (int tv = 0; tv < R->ntv; tv++) {
			if (!read_after(R, B, R->map[t][tv]))
				continue;
			if (t != R->T - 1) {
				if (!has_tv(B->each_tv, B->neach, tv))
					B->each_tv[B->neach++] = tv;
				continue;
			}
			int dup = has_tv(B->last_tv, B->nlast, tv);
			for (int s = 0; s < R->nstate; s++)
				dup |= R->state_out[s] == tv;   /* read as a final state */
			if (!dup)
				B->last_tv[B->nlast++] = tv;
		}
	int nl = 0;
	for (int k = 0; k < B->nlast; k++)
		if (!has_tv(B->each_tv, B->neach, B->last_tv[k]))
			B->last_tv[nl++] = B->last_tv[k];
	B->nlast = nl;
}

/* The stack Concats, the values read after the loop, and the stacking
 * Unsqueezes not copied into the body (those whose only reader is their
 * Concat). */
int reroll_find_stacks(rr *R, build *B)
{
	B->stacks = arena_array(R->A, (size_t)R->nn + 1, sizeof *B->stacks);
	B->drop = arena_alloc(R->A, (size_t)R->nt + 1);
	for (int i = 0; i < R->nn; i++)
		if (R->label[i] == LBL_TAIL && stack_of(R, R->g->nodes[i], &B->stacks[B->nstack]))
			B->nstack++;
	after_reads(R, B);
	for (int j = 0; j < R->nt; j++) {
		ir_node *n = R->tn[j];
		if (n->op != OP_UNSQUEEZE)
			continue;
		/* (one that the last step's value is also read from after the
		 * loop stays: ptb/momentumnet.py's GRU stacks hy.unsqueeze(0) and
		 * returns the last one as its state) */
		int only_stack = n->out[0]->nuses == 1 && !has_tv(B->last_tv, B->nlast, R->tvof[n->out[0]->id]);
		for (int s = 0; s < B->nstack; s++)
			if (B->stacks[s].concat->in[R->m + B->stacks[s].off + (B->stacks[s].pre != NULL)] == n->out[0] &&
			    only_stack)
				B->drop[j] = 1;
	}
	return 0;
}

/* ---- the recurrence ------------------------------------------------------------------ */

static ir_value *step_value(ir_graph *body, const char *name, const ir_shape *s, const char *origin)
{
	ir_value *v = ir_value_new(body, name, VAL_STEP, DT_F32);
	v->shape = *s;
	v->origin = origin;
	return v;
}

static ir_shape shape2(ir_dim a, ir_dim b)
{
	ir_shape s = {.rank = 2};
	s.d[0] = a;
	s.d[1] = b;
	return s;
}

/* Node m of graph h, its output made (out, or a new value of dtype dt),
 * appended to h when list is NULL, else added to list[*n], and inferred:
 * its output, or NULL. */
static ir_value *place(ir_graph *h, ir_node *m, ir_value *out, ir_dtype dt, const char *origin, ir_node **list, int *n)
{
	m->out[0] = out ? out : ir_value_new(h, NULL, VAL_TEMP, dt);
	m->out[0]->producer = m;
	m->origin = origin;
	if (list)
		list[(*n)++] = m;
	else
		ir_append(h, m);
	diag q;
	diag_init(&q, "reroll");
	q.quiet = 1;
	return infer_node(h, m, &q) ? NULL : m->out[0];
}

/* x (a value held as its matrix, reroll_matrix, or the value it stands
 * for: the same elements in the same order) as shape `to`, into out (a new
 * value when NULL), by nodes of graph h: appended to h when list is NULL,
 * else added to list[*n]; the last node's output is returned.  Where the
 * two shapes differ by unit axes only ([1, B, N] and [B, N], [T, 1, H] and
 * [T, H]) a Squeeze of x's unit axes and an Unsqueeze of to's, which
 * hold for any T and batch; else a Reshape to the constant shape. */
static ir_value *view_as(ir_graph *g, ir_graph *h, ir_value *x, const ir_shape *to, ir_value *out, ir_node **list,
			 int *n)
{
	ir_dim a[IR_MAX_RANK], c[IR_MAX_RANK];
	int na = 0, nc = 0;
	int64_t sq[IR_MAX_RANK], us[IR_MAX_RANK];
	int nsq = 0, nus = 0;
	for (int i = 0; i < x->shape.rank; i++)
		if (ir_dim_eq(x->shape.d[i], ir_dim_const(1)))
			sq[nsq++] = i;
		else
			a[na++] = x->shape.d[i];
	for (int i = 0; i < to->rank; i++)
		if (ir_dim_eq(to->d[i], ir_dim_const(1)))
			us[nus++] = i;
		else
			c[nc++] = to->d[i];
	int units = na == nc;
	for (int i = 0; units && i < na; i++)
		units = ir_dim_eq(a[i], c[i]);
	struct { ir_op op; ir_value *c; } step[2];
	int ns = 0;
	if (!units)
		step[ns++].op = OP_RESHAPE, step[ns - 1].c = ir_const_dims(g, to->d, to->rank);
	if (units && nsq)
		step[ns++].op = OP_SQUEEZE, step[ns - 1].c = ir_const_i64(g, NULL, nsq, sq);
	if (units && nus)
		step[ns++].op = OP_UNSQUEEZE, step[ns - 1].c = ir_const_i64(g, NULL, nus, us);
	if (!ns && out)         /* the same shape into a value of its own */
		step[ns++].op = OP_IDENTITY, step[ns - 1].c = NULL;
	ir_value *v = x;
	for (int k = 0; k < ns; k++) {
		ir_node *m = ir_node_new(h, step[k].op, NULL, step[k].c ? 2 : 1, 1);
		m->in[0] = v;
		if (step[k].c)
			m->in[1] = step[k].c;
		v = place(h, m, k == ns - 1 ? out : NULL, DT_F32, "a value of a traced loop held as a [B, N] matrix", list,
			  n);
		if (!v)
			return NULL;
	}
	return v;
}

/* Cast(x, to) into out (a new value when NULL) in graph h, appended or
 * added to list[*n] as view_as does: an integer state carried as f32. */
static ir_value *cast_as(ir_graph *h, ir_value *x, ir_dtype to, ir_value *out, ir_node **list, int *n)
{
	if (x->dtype == to && !out)
		return x;
	ir_node *m = ir_node_new(h, OP_CAST, NULL, 1, 1);
	m->in[0] = x;
	ir_attr_set_int(m, "to", to);
	return place(h, m, out, to, "an integer value of a traced loop carried as f32", list, n);
}

/* Body nodes computing the NAG restart schedule from the step number t
 * (1-based, f32): mu = (k - 1) / (k + 2), k = fmod(t - 1, F) + 1 (k = t when
 * F = 0). */
static ir_value *schedule_value(rr *R, build *B, int64_t F)
{
	ir_graph *b = B->body;
	ir_value *k = B->bstep;
	ir_shape sc = {.rank = 0};
	struct sop { ir_op op; float c; int fmod; } prog[4];
	int np = 0;
	if (F > 0) {
		prog[np++] = (struct sop){OP_SUB, 1.0f, 0};
		prog[np++] = (struct sop){OP_MOD, (float)F, 1};
		prog[np++] = (struct sop){OP_ADD, 1.0f, 0};
	}
	for (int i = 0; i < np; i++) {
		ir_node *n = ir_node_new(b, prog[i].op, NULL, 2, 1);
		n->in[0] = k;
		n->in[1] = ir_const_f32_scalar(R->g, NULL, prog[i].c);
		if (prog[i].fmod)
			ir_attr_set_int(n, "fmod", 1);
		n->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
		n->out[0]->shape = sc;
		n->out[0]->producer = n;
		n->origin = "NAG restart schedule";
		ir_append(b, n);
		k = n->out[0];
	}
	ir_value *num, *den;
	ir_node *a = ir_node_new(b, OP_SUB, NULL, 2, 1), *d = ir_node_new(b, OP_ADD, NULL, 2, 1);
	a->in[0] = d->in[0] = k;
	a->in[1] = ir_const_f32_scalar(R->g, NULL, 1.0f);
	d->in[1] = ir_const_f32_scalar(R->g, NULL, 2.0f);
	num = a->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
	den = d->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
	num->shape = den->shape = sc;
	num->producer = a;
	den->producer = d;
	a->origin = d->origin = "NAG restart schedule";
	ir_append(b, a);
	ir_append(b, d);
	ir_node *q = ir_node_new(b, OP_DIV, NULL, 2, 1);
	q->in[0] = num;
	q->in[1] = den;
	q->out[0] = ir_value_new(b, NULL, VAL_TEMP, DT_F32);
	q->out[0]->shape = sc;
	q->out[0]->producer = q;
	q->origin = "NAG restart schedule";
	q->out[0]->role = IR_ROLE_NAG_SCHEDULE;
	ir_append(b, q);
	return q->out[0];
}

/* Slice(x, st, en, axis, step) on one axis; its output is out, or a new
 * value of x's dtype when out is NULL. */
ir_node *reroll_axis_slice(ir_graph *g, ir_value *x, int64_t st, int64_t en, int64_t ax, int64_t sp,
			   ir_value *out)
{
	ir_node *sl = ir_node_new(g, OP_SLICE, NULL, 5, 1);
	sl->in[0] = x;
	sl->in[1] = ir_const_i64(g, NULL, 1, &st);
	sl->in[2] = ir_const_i64(g, NULL, 1, &en);
	sl->in[3] = ir_const_i64(g, NULL, 1, &ax);
	sl->in[4] = ir_const_i64(g, NULL, 1, &sp);
	sl->out[0] = out ? out : ir_value_new(g, NULL, VAL_TEMP, x->dtype);
	sl->out[0]->producer = sl;
	return sl;
}

/* Slice(y, -1, INT64_MIN, axis, -1): y reversed on its time axis, into out
 * (a new value when NULL). */
static ir_node *reversal(ir_graph *g, ir_value *y, int axis, ir_value *out)
{
	ir_node *sl = reroll_axis_slice(g, y, -1, INT64_MIN, axis, -1, out);
	sl->origin = "steps of a reversed traced loop in the order it ran them";
	return sl;
}

/* What the steps of reroll_build_recurrence share. */
typedef struct rb {
	rr *R;
	build *B;
	ir_graph *g, *b;        /* the root graph; the body */
	const char *name;       /* the recurrence's, and its body values' prefix */
	int ax0;                /* the first sequence's time axis: the outputs' */
	ir_dim Bd;              /* the batch dimension */
	int64_t *period;        /* [ncoef] NAG restart period; -1: a table */
	int has_step;           /* a coefficient follows the schedule: the body reads t */
	int ntab, nseq;         /* tables; body sequences (the tables included) */
	ir_value **tabs;        /* [ntab] the tables, read as sequences */
	ir_node **pre;          /* [npre] nodes placed before the recurrence (tables expanded) */
	int npre;
	int nout;               /* outputs besides the states */
	ir_node *rec;
	int64_t *out_axis;      /* [nout] */
	ir_node **rev;          /* [nrev] nodes right after it: reversals, prologue Concats */
	int nrev;
	ir_node **post;         /* [npost] Gathers of single steps (NULL: none), each
	                           perhaps followed by the Reshape to its value's shape */
	int npost;
	ir_shape *smat;         /* [nstate] the matrix each state is carried as */
	ir_value **sview;       /* [nstate] the body's state in the template's shape */
	ir_value **msrc, **mdst;/* [nmat] body values and the matrices made of them */
	int nmat;
	ir_value **qview;       /* [nseq] the body's per-step slice in the template's shape */
	int64_t *seq_axis;      /* [nseq] each sequence input's time axis (0 where it was transposed) */
	diag q;                 /* quiet: a failure is a reason, not an error */
} rb;

/* The recurrence's name: one that does not depend on T, so that the
 * emitted C does not either. */
static const char *loop_name(const rr *R)
{
	const char *name = arena_printf(R->A, "traced_loop%d", R->round);
	for (int k = 2; ir_find_value(R->g, arena_printf(R->A, "%s.s0", name)); k++)
		name = arena_printf(R->A, "traced_loop%d_%d", R->round, k);
	return name;
}

/* Each coefficient: a NAG schedule the body computes from t (period >= 0),
 * or a table of the traced steps' values that holds T fixed. */
static void coef_periods(rb *K, const char **time_note, int *symbolic_ok)
{
	rr *R = K->R;
	int T = R->T;
	K->period = arena_array(R->A, (size_t)R->ncoef + 1, sizeof *K->period);
	for (int i = 0; i < R->ncoef; i++) {
		int amb;
		int64_t *period = K->period;
		period[i] = reroll_nag_period(R->coefs[i].tab, R->coefs[i].have, T, &amb);
		if (period[i] >= 0 && !amb)
			K->has_step = 1;
		else if (period[i] >= 0)
			*time_note = arena_printf(R->A, "T stays %d: a per-step coefficient follows the NAG "
						  "schedule without a restart within the %d traced steps, "
						  "so its restart period (none, or any period >= %d) is unknown",
						  T, T, T);
		else
			*time_note = arena_printf(R->A, "T stays %d: a per-step coefficient is a table of %d "
						  "values that follows no known schedule", T, T);
		if (period[i] < 0 || amb) {
			*symbolic_ok = 0;
			period[i] = -1;
		} else {
			K->has_step = 1;
		}
	}
	for (int i = 0; i < R->ncoef; i++)
		K->ntab += K->period[i] < 0;
}

/* A per-step table as the body's sequence input nt: the body value (an f32
 * [B, 1] step input named NAME.WHATi), and the table tab[0 .. T) as a [T,
 * B, 1] (or [B, T, 1]) sequence; with a symbolic batch size [T, 1, 1]
 * expanded at run time (a node before the recurrence). */
static ir_unrolled_why table_input(rb *K, int nt, const float *tab, const char *what, int i, const char *origin,
				   ir_value **body_in)
{
	rr *R = K->R;
	build *B = K->B;
	ir_graph *g = K->g;
	int T = R->T, ax0 = K->ax0;
	ir_dim Bd = K->Bd;
	ir_shape s1 = shape2(Bd, ir_dim_const(1));
	*body_in = B->bseq[R->nseq + nt] =
		step_value(K->b, ir_free_name(K->b, arena_printf(R->A, "%s.%s%d", K->name, what, i)), &s1, origin);
	ir_shape ts = {.rank = 3};
	int64_t rows = ir_dim_is_const(Bd) ? Bd.k : 1;
	ts.d[ax0] = ir_dim_const(T);
	ts.d[1 - ax0] = ir_dim_const(rows);
	ts.d[2] = ir_dim_const(1);
	ir_value *tv = ir_const_new(g, ir_free_name(g, arena_printf(R->A, "%s.table%d", K->name, nt)), DT_F32, &ts, NULL);
	float *d = tv->data;
	for (int t = 0; t < T; t++)
		for (int64_t r = 0; r < rows; r++)
			d[ax0 == 0 ? t * rows + r : r * T + t] = tab ? tab[R->reverse ? T - 1 - t : t] : 0.0f;
	if (!ir_dim_is_const(Bd)) {
		ir_node *e = ir_node_new(g, OP_EXPAND, NULL, 2, 1);
		ir_value *shp = ir_value_new(g, NULL, VAL_CONST, DT_I64);
		shp->shape.rank = 1;
		shp->shape.d[0] = ir_dim_const(3);
		shp->sym = arena_array(R->A, 3, sizeof *shp->sym);
		shp->sym[ax0] = ir_dim_const(T);
		shp->sym[1 - ax0] = Bd;
		shp->sym[2] = ir_dim_const(1);
		e->in[0] = tv;
		e->in[1] = shp;
		e->out[0] = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
		e->out[0]->producer = e;
		e->origin = origin;
		if (infer_node(g, e, &K->q))
			return WHY_INT_COEF;
		K->pre[K->npre++] = e;
		tv = e->out[0];
	}
	K->tabs[nt] = tv;
	return WHY_NONE;
}

/* Coefficient i as the body's table input nt. */
static ir_unrolled_why coef_table(rb *K, int i, int nt)
{
	build *B = K->B;
	ir_unrolled_why why = table_input(K, nt, K->R->coefs[i].tab, "coef", i, "per-step coefficient table", &B->bcoef[i]);
	if (!why)
		B->bcoef[i]->role = IR_ROLE_STEP_COEF;
	return why;
}

/* The body's inputs: sequences, tables, states, [t]; then the schedules
 * the body computes from t. */
static ir_unrolled_why body_inputs(rb *K)
{
	rr *R = K->R;
	build *B = K->B;
	ir_graph *b = K->b;
	/* a generated loop reads no sequence: a sequence of zeros of its T
	 * steps, which the body does not read, gives the recurrence its T */
	int pad = R->nseq + K->ntab == 0;
	K->nseq = R->nseq + K->ntab + pad;
	B->bseq = arena_array(R->A, (size_t)K->nseq + 1, sizeof *B->bseq);
	B->bstate = arena_array(R->A, (size_t)R->nstate, sizeof *B->bstate);
	B->bcoef = arena_array(R->A, (size_t)R->ncoef + 1, sizeof *B->bcoef);
	K->qview = arena_array(R->A, (size_t)R->nseq + 1, sizeof *K->qview);
	for (int s = 0; s < R->nseq; s++) {
		/* a slice of another rank than 2 (a frame [B, C, H, W] of [B, T, C,
		 * H, W]) is read as its matrix [B, C H W] */
		ir_value *a = R->seq[s].anchor[R->m]->out[0];
		ir_shape m;
		if (!reroll_matrix(R, a, &m) || !ir_dim_eq(m.d[0], R->batch))
			return WHY_INT_SEQ;
		B->bseq[s] = step_value(b, ir_free_name(b, arena_printf(R->A, "%s.x%d", K->name, s)), &m, R->seq[s].src->name);
	}
	K->tabs = arena_array(R->A, (size_t)K->ntab + pad + 1, sizeof *K->tabs);
	K->pre = arena_array(R->A, (size_t)K->ntab + pad + 2 * R->nstate + 2 * R->nseq + 1, sizeof *K->pre);
	for (int i = 0, nt = 0; i < R->ncoef; i++) {
		if (K->period[i] >= 0)
			continue;
		ir_unrolled_why why = coef_table(K, i, nt++);
		if (why)
			return why;
	}
	if (pad) {
		ir_value *unread;
		ir_unrolled_why why = table_input(K, 0, NULL, "steps", 0, "the steps of a generated sequence", &unread);
		if (why)
			return why;
		K->ntab = 1;
	}
	K->smat = arena_array(R->A, (size_t)R->nstate + 1, sizeof *K->smat);
	K->sview = arena_array(R->A, (size_t)R->nstate + 1, sizeof *K->sview);
	for (int s = 0; s < R->nstate; s++) {
		if (!reroll_matrix(R, R->state_in[s], &K->smat[s]))
			return WHY_STATE_SHAPE;
		B->bstate[s] = step_value(b, ir_free_name(b, arena_printf(R->A, "%s.s%d", K->name, s)), &K->smat[s],
					  R->state_in[s]->name);
	}
	if (K->has_step) {
		B->bstep = ir_value_new(b, ir_free_name(b, arena_printf(R->A, "%s.t", K->name)), VAL_STEP, DT_F32);
		B->bstep->shape.rank = 0;
		B->bstep->origin = "step number";
	}
	b->ninputs = K->nseq + R->nstate + K->has_step;
	b->inputs = arena_array(R->A, (size_t)b->ninputs, sizeof *b->inputs);
	memcpy(b->inputs, B->bseq, (size_t)K->nseq * sizeof *b->inputs);
	memcpy(b->inputs + K->nseq, B->bstate, (size_t)R->nstate * sizeof *b->inputs);
	if (K->has_step)
		b->inputs[K->nseq + R->nstate] = B->bstep;
	for (int i = 0; i < R->ncoef; i++)
		if (K->period[i] >= 0)
			B->bcoef[i] = schedule_value(R, B, K->period[i]);
	return WHY_NONE;
}

/* State s as the template reads it: the body's state input, or it
 * reshaped from its matrix (once, before the first reader). */
static ir_value *state_in_shape(rb *K, int s)
{
	ir_value *in = K->B->bstate[s];
	const ir_value *tv = K->R->state_in[s];
	if (ir_shape_eq(&in->shape, &tv->shape) && tv->dtype == DT_F32)
		return in;
	if (!K->sview[s]) {
		ir_value *v = ir_shape_eq(&in->shape, &tv->shape) ? in : view_as(K->g, K->b, in, &tv->shape, NULL, NULL, NULL);
		K->sview[s] = v ? cast_as(K->b, v, tv->dtype, NULL, NULL, NULL) : NULL;
	}
	return K->sview[s];
}

/* Sequence s's per-step slice as the template reads it: the body's input,
 * or it reshaped from its matrix (once, before the first reader). */
static ir_value *seq_in_shape(rb *K, int s)
{
	ir_value *in = K->B->bseq[s];
	const ir_value *a = K->R->seq[s].anchor[K->R->m]->out[0];
	if (ir_shape_eq(&in->shape, &a->shape))
		return in;
	if (!K->qview[s])
		K->qview[s] = view_as(K->g, K->b, in, &a->shape, NULL, NULL, NULL);
	return K->qview[s];
}

/* Body value o as the matrix it is carried or stacked as (reshaped at the
 * end of the body when it is not one); NULL when it has none. */
static ir_value *body_matrix(rb *K, ir_value *o)
{
	ir_shape m;
	if (!o || o->dtype != DT_F32 || !reroll_matrix(K->R, o, &m))
		return NULL;
	if (ir_shape_eq(&m, &o->shape))
		return o;
	for (int i = 0; i < K->nmat; i++)       /* one view a value, however many outputs read it */
		if (K->msrc[i] == o)
			return K->mdst[i];
	K->msrc = arena_grow(K->R->A, K->msrc, (size_t)K->nmat, (size_t)K->nmat + 1, sizeof *K->msrc);
	K->mdst = arena_grow(K->R->A, K->mdst, (size_t)K->nmat, (size_t)K->nmat + 1, sizeof *K->mdst);
	K->msrc[K->nmat] = o;
	return K->mdst[K->nmat++] = view_as(K->g, K->b, o, &m, NULL, NULL, NULL);
}

/* The body's nodes: the template's, reading the body's inputs (stacking
 * Unsqueezes left out). */
static ir_unrolled_why body_nodes(rb *K)
{
	rr *R = K->R;
	build *B = K->B;
	ir_graph *b = K->b;
	B->bval = arena_array(R->A, (size_t)R->ntv + 1, sizeof *B->bval);
	for (int j = 0; j < R->nt; j++) {
		if (B->drop[j])
			continue;
		ir_node *tn = R->tn[j];
		ir_node *n = ir_clone_node(b, tn, tn->name, -1, IR_CLONE_SOURCE | IR_CLONE_SHARE_ATTRS);
		n->origin = tn->origin ? tn->origin : tn->name;
		for (int k = 0; k < tn->nin; k++) {
			const tin *x = &R->ti[j][k];
			switch (x->kind) {
			case IN_NONE: n->in[k] = NULL; break;
			case IN_INT: n->in[k] = B->bval[x->idx]; break;
			case IN_SEQ: n->in[k] = seq_in_shape(K, x->idx); break;
			case IN_STATE: n->in[k] = state_in_shape(K, x->idx); break;
			case IN_CAP: n->in[k] = x->cap; break;
			case IN_COEF: {
				int ci = (int)(reroll_coef_at(R, j, k) - R->coefs);
				n->in[k] = B->bcoef[ci];
				break;
			}
			}
			if (tn->in[k] && !n->in[k])
				return WHY_INT_ORDER;
		}
		for (int k = 0; k < tn->nout; k++) {
			if (!tn->out[k])
				continue;
			/* a step value that is also a graph output (the list form: one
			 * output per step), or that is read after the loop at this
			 * step (T stays fixed), keeps its name on the graph's side,
			 * where it is read out of the recurrence; the body's copy gets
			 * a name of its own */
			const char *nm = tn->out[k]->name;
			if (tn->out[k]->is_output ||
			    (used_outside(R, tn->out[k]) && !is_final(R, R->tvof[tn->out[k]->id])))
				nm = ir_unique_name(b, arena_printf(R->A, "%s_step", nm));
			ir_value *o = ir_value_new(b, nm, VAL_TEMP, tn->out[k]->dtype);
			o->origin = tn->out[k]->origin;
			o->producer = n;
			n->out[k] = o;
			B->bval[R->tvof[tn->out[k]->id]] = o;
		}
		if (infer_node(b, n, &K->q))
			return WHY_REINFER;
		ir_append(b, n);
	}
	return WHY_NONE;
}

/* The body's outputs: new states, stacked outputs, last-step values,
 * values of single steps (which hold T fixed). */
static ir_unrolled_why body_outputs(rb *K, const char **time_note, int *symbolic_ok)
{
	rr *R = K->R;
	build *B = K->B;
	ir_graph *b = K->b;
	int T = R->T;
	K->nout = B->nstack + B->nlast + B->neach;
	b->noutputs = R->nstate + K->nout;
	b->outputs = arena_array(R->A, (size_t)b->noutputs + 1, sizeof *b->outputs);
	for (int s = 0; s < R->nstate; s++) {
		ir_value *o = B->bval[R->state_out[s]];
		if (!o || !ir_shape_eq(&o->shape, &R->state_in[s]->shape) || o->dtype != R->state_in[s]->dtype ||
		    !(o = cast_as(b, o, DT_F32, NULL, NULL, NULL)) || !(o = body_matrix(K, o)) ||
		    !ir_shape_eq(&o->shape, &B->bstate[s]->shape))
			return WHY_STATE_SHAPE;
		b->outputs[s] = o;
	}
	for (int k = 0; k < B->nstack; k++)
		if (!(b->outputs[R->nstate + k] = body_matrix(K, B->bval[B->stacks[k].tv])))
			return WHY_EACH_TYPE;
	for (int k = 0; k < B->nlast; k++) {
		ir_value *o = body_matrix(K, B->bval[B->last_tv[k]]);
		if (!o)
			return WHY_LAST_TYPE;
		b->outputs[R->nstate + B->nstack + k] = o;
	}
	for (int k = 0; k < B->neach; k++) {
		ir_value *o = body_matrix(K, B->bval[B->each_tv[k]]);
		if (!o) {
			if (getenv("CELLC_DEBUG_REROLL"))
				fprintf(stderr, "reroll: per-step value '%s' read after the loop\n",
					R->tval[B->each_tv[k]]->name);
			return WHY_EACH_TYPE;
		}
		b->outputs[R->nstate + B->nstack + B->nlast + k] = o;
	}
	if (B->neach) {
		int outs = 0;
		for (int k = 0; k < B->neach; k++)
			for (int t = 0; t < T; t++)
				outs += reroll_is_graph_output(R, R->map[t][B->each_tv[k]]);
		*symbolic_ok = 0;
		*time_note = outs >= T
			? arena_printf(R->A, "T stays %d: the model returns the steps' values as %d "
				       "separate outputs", T, outs)
			: arena_printf(R->A, "T stays %d: values of single steps are read after the loop", T);
	}
	for (int k = 0; k < b->noutputs; k++)
		if (!b->outputs[k])
			return WHY_INT_OUTPUT;
	return WHY_NONE;
}

/* The RECURRENCE node: its inputs (sequences, tables, initial states:
 * NULL for zeros) and its finals (the last copy's states read after the
 * loop). */
/* An initial state the recurrence cannot take (CELLC_DEBUG_REROLL says which). */
static ir_unrolled_why init_shape_fail(const rr *R, int s, const ir_value *init)
{
	if (getenv("CELLC_DEBUG_REROLL"))
		fprintf(stderr, "reroll: state %d: initial '%s' %s %s, state '%s' %s %s\n", s, init ? init->name : "?",
			init ? ir_dtype_name(init->dtype) : "", init ? ir_shape_str(R->A, R->g, &init->shape) : "",
			R->state_in[s]->name, ir_dtype_name(R->state_in[s]->dtype),
			ir_shape_str(R->A, R->g, &R->state_in[s]->shape));
	return WHY_INIT_SHAPE;
}

static ir_unrolled_why rec_node(rb *K)
{
	rr *R = K->R;
	ir_graph *g = K->g;
	ir_node *rec = K->rec = ir_node_new(g, OP_RECURRENCE, K->name, K->nseq + R->nstate, R->nstate + K->nout);
	rec->body = K->b;
	rec->rec_source = IR_REC_TRACED;
	rec->origin = arena_printf(R->A, "a traced loop (%s .. %s)", R->tn[0]->name, R->tn[R->nt - 1]->name);
	K->seq_axis = arena_array(R->A, (size_t)K->nseq + 1, sizeof *K->seq_axis);
	for (int s = 0; s < K->nseq; s++)
		K->seq_axis[s] = s < R->nseq ? R->seq[s].axis : K->ax0;
	for (int s = 0; s < R->nseq; s++) {
		ir_value *x = R->seq[s].src;
		rec->in[s] = x;
		if (x->shape.rank <= 3)
			continue;
		/* [T, B, ...] as [T, B, N]: the first two axes kept (0) and the
		 * rest one (-1), so that it holds for any T and batch; [B, T, ...]
		 * transposed to that first, so that a step's frames are whole
		 * rows (a Conv reads them) */
		if (R->seq[s].axis == 1) {
			ir_node *tr = ir_node_new(g, OP_TRANSPOSE, NULL, 1, 1);
			int64_t perm[IR_MAX_RANK];
			for (int a = 0; a < x->shape.rank; a++)
				perm[a] = a < 2 ? 1 - a : a;
			tr->in[0] = x;
			ir_attr_set_ints(tr, "perm", x->shape.rank, perm);
			if (!(x = place(g, tr, NULL, DT_F32, "a batch-first sequence of frames in time order", K->pre,
					&K->npre)))
				return WHY_INT_SEQ;
			K->seq_axis[s] = 0;
		}
		ir_node *m = ir_node_new(g, OP_RESHAPE, NULL, 2, 1);
		int64_t keep[3] = {0, 0, -1};
		m->in[0] = x;
		m->in[1] = ir_const_i64(g, NULL, 3, keep);
		if (!(rec->in[s] = place(g, m, NULL, DT_F32, "a sequence of another rank read as [T, B, N]", K->pre,
					 &K->npre)))
			return WHY_INT_SEQ;
	}
	for (int i = 0; i < K->ntab; i++)
		rec->in[R->nseq + i] = K->tabs[i];
	for (int s = 0; s < R->nstate; s++) {
		ir_value *init = R->sin[0][s];
		int zero = !init || reroll_zero_value(init);
		if (init && !zero && init->dtype != DT_F32) {
			/* an integer state's first value: a constant f32 holds exactly
			 * (a start token), or an index as the steps make */
			int exact = ir_index_exact_in_f32(init) || reroll_has_data(init);
			int64_t n = reroll_has_data(init) ? ir_shape_const_numel(&init->shape) : 0;
			for (int64_t i = 0; i < n; i++)
				exact &= fabs(ir_const_num(init, i)) <= (double)(1 << 24);
			if (!exact || !(init = cast_as(g, init, DT_F32, NULL, K->pre, &K->npre)))
				return init_shape_fail(R, s, init);
		}
		if (!zero && init->graph != g)
			return WHY_INT_INIT;
		if (!zero && !ir_shape_eq(&init->shape, &R->state_in[s]->shape))
			return init_shape_fail(R, s, init);
		if (!zero && !ir_shape_eq(&init->shape, &K->smat[s]) &&
		    !(init = view_as(g, g, init, &K->smat[s], NULL, K->pre, &K->npre)))
			return init_shape_fail(R, s, R->sin[0][s]);
		rec->in[K->nseq + s] = zero ? NULL : init;
	}
	K->out_axis = arena_array(R->A, (size_t)K->nout + 1, sizeof *K->out_axis);
	ir_value **last = R->map[R->T - 1];
	for (int s = 0; s < R->nstate; s++) {
		ir_value *v = last[R->state_out[s]];
		rec->out[s] = v && used_outside(R, v) ? v : NULL;
		if (rec->out[s] && (!ir_shape_eq(&v->shape, &K->smat[s]) || v->dtype != DT_F32)) {
			/* the final state as its f32 matrix, made back into v after */
			ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			y->shape = K->smat[s];
			rec->out[s] = y;
			if (v->dtype != DT_F32) {
				ir_value *shaped = view_as(g, g, y, &v->shape, NULL, K->rev, &K->nrev);
				if (!shaped || !cast_as(g, shaped, v->dtype, v, K->rev, &K->nrev))
					return WHY_STATE_SHAPE;
			} else {
				view_as(g, g, y, &v->shape, v, K->rev, &K->nrev);
			}
		}
	}
	return WHY_NONE;
}

/* y reversed on the time axis by a node after the recurrence when the loop
 * ran backwards (the recurrence stacks step k at time T-1-k, the trace in
 * processing order); else y. */
static ir_value *in_trace_order(rb *K, ir_value *y)
{
	if (!K->R->reverse)
		return y;
	K->rev[K->nrev] = reversal(K->g, y, K->ax0, NULL);
	return K->rev[K->nrev++]->out[0];
}

/* A new [T, B, N] (or [B, T, N]) output of the recurrence stacking body
 * value bo, as its output o (o counted after the states). */
static ir_value *stacked_output(rb *K, int o)
{
	const ir_value *bo = K->b->outputs[K->R->nstate + o];
	ir_shape ys = {.rank = 3};
	ys.d[K->ax0] = ir_dim_const(K->R->T);
	ys.d[1 - K->ax0] = bo->shape.d[0];
	ys.d[2] = bo->shape.d[1];
	ir_value *y = ir_value_new(K->g, NULL, VAL_TEMP, DT_F32);
	y->shape = ys;
	K->rec->out[K->R->nstate + o] = y;
	K->out_axis[o] = K->ax0;
	return y;
}

/* Gather(y, t, axis) into out: one step of a stacked output. */
static ir_node *step_gather(ir_graph *g, ir_value *y, int64_t t, int axis, ir_value *out, const char *origin)
{
	ir_node *ga = ir_node_new(g, OP_GATHER, NULL, 2, 1);
	ga->in[0] = y;
	ga->in[1] = ir_const_i64(g, NULL, 1, &t);
	ga->in[1]->shape.rank = 0;
	ir_attr_set_int(ga, "axis", axis);
	ga->out[0] = out;
	ga->origin = origin;
	return ga;
}


/* The recurrence's stacked output k as graph value want (its shape): the
 * output itself when it has that shape, else an output of the shape the
 * recurrence makes ([T, rows, cols] on axis 0, [rows, T, cols] on 1, of the
 * body output's matrix) reshaped into want after it. */
static void stacked_as(rb *K, int k, ir_value *want)
{
	rr *R = K->R;
	const ir_value *bo = K->b->outputs[R->nstate + k];
	int ax = (int)K->out_axis[k];
	ir_shape got = {.rank = 3};
	got.d[ax] = ir_dim_const(R->T);
	got.d[1 - ax] = bo->shape.d[0];
	got.d[2] = bo->shape.d[1];
	if (ir_shape_eq(&got, &want->shape)) {
		K->rec->out[R->nstate + k] = want;
		return;
	}
	ir_value *y = ir_value_new(K->g, NULL, VAL_TEMP, DT_F32);
	y->shape = got;
	K->rec->out[R->nstate + k] = y;
	view_as(K->g, K->g, y, &want->shape, want, K->rev, &K->nrev);
}

/* The stacked outputs: the trace's Concat output, produced by the
 * recurrence, or after it by a reversal or a Concat behind the prologue
 * step's entry, or the steps' entries of a Concat that keeps others. */
static void rec_stacks(rb *K)
{
	rr *R = K->R;
	build *B = K->B;
	ir_graph *g = K->g;
	for (int k = 0; k < B->nstack; k++) {
		ir_value *c = B->stacks[k].concat->out[0];
		int ax = B->stacks[k].axis;
		K->out_axis[k] = ax;
		if (B->stacks[k].extra) {
			/* the Concat stays where it is, the steps' T entries one
			 * stacked output (in the trace's order) */
			ir_node *cc = B->stacks[k].concat;
			int off = B->stacks[k].off, n = 0;
			ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32), *in_order = y;
			y->shape = cc->in[off]->shape;
			y->shape.d[ax] = ir_dim_const(R->T);
			stacked_as(K, k, y);
			if (R->reverse) {
				K->rev[K->nrev++] = reversal(g, y, ax, NULL);
				in_order = K->rev[K->nrev - 1]->out[0];
			}
			ir_value **in = arena_array(R->A, (size_t)cc->nin, sizeof *in);
			for (int i = 0; i < cc->nin; i++)
				if (i < off || i >= off + R->T)
					in[n++] = cc->in[i];
				else if (i == off)
					in[n++] = in_order;
			cc->in = in;
			cc->nin = n;
		} else if (B->stacks[k].pre) {
			/* the prologue's entry, then the steps' */
			ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			y->shape = c->shape;
			y->shape.d[ax] = ir_dim_const(R->T);
			stacked_as(K, k, y);
			ir_node *cc = ir_node_new(g, OP_CONCAT, NULL, 2, 1);
			cc->in[0] = B->stacks[k].pre;
			cc->in[1] = y;
			cc->out[0] = c;
			c->producer = cc;
			ir_attr_set_int(cc, "axis", ax);
			cc->origin = "the prologue step's value before the loop's";
			K->rev[K->nrev++] = cc;
		} else if (R->reverse) {
			ir_value *y = ir_value_new(g, NULL, VAL_TEMP, DT_F32);
			y->shape = c->shape;
			stacked_as(K, k, y);
			K->rev[K->nrev++] = reversal(g, y, ax, c);
		} else {
			stacked_as(K, k, c);
		}
	}
}

/* Gather(y, t, axis) into v, through a Reshape when v is no matrix: the
 * nodes onto K->post. */
static void step_read(rb *K, ir_value *y, int64_t t, ir_value *v, const char *origin)
{
	ir_shape m;
	reroll_matrix(K->R, v, &m);
	if (ir_shape_eq(&m, &v->shape)) {
		K->post[K->npost++] = step_gather(K->g, y, t, K->ax0, v, origin);
		return;
	}
	ir_value *row = ir_value_new(K->g, NULL, VAL_TEMP, DT_F32);
	K->post[K->npost++] = step_gather(K->g, y, t, K->ax0, row, origin);
	row->producer = K->post[K->npost - 1];
	ir_shape rs = {.rank = 2, .d = {y->shape.d[1 - K->ax0], y->shape.d[2]}};
	row->shape = rs;
	view_as(K->g, K->g, row, &v->shape, v, K->post, &K->npost);
}

/* The values read after the loop from the last copy (Gather(-1) of a
 * stacked output) and from single copies (Gather(t)). */
static void rec_step_reads(rb *K)
{
	rr *R = K->R;
	build *B = K->B;
	int T = R->T;
	K->npost = 0;
	K->post = arena_array(R->A, (size_t)(3 * (B->nlast + B->neach * T)) + 1, sizeof *K->post);
	for (int k = 0; k < B->nlast; k++) {
		int tv = B->last_tv[k];
		ir_value *y = stacked_output(K, B->nstack + k);
		if (is_final(R, tv))
			continue;       /* read as the final state instead */
		y = in_trace_order(K, y);
		step_read(K, y, -1, R->map[T - 1][tv], "last step of a traced loop");
	}
	for (int k = 0; k < B->neach; k++) {
		int tv = B->each_tv[k];
		ir_value *y = in_trace_order(K, stacked_output(K, B->nstack + B->nlast + k));
		int final = is_final(R, tv);
		for (int t = 0; t < T; t++) {
			ir_value *v = R->map[t][tv];
			/* (a value the first copy folded to a constant stays) */
			if (!v || v->kind != VAL_TEMP || reroll_nid(R, v->producer) < 0 || !used_outside(R, v) ||
			    (t == T - 1 && final))
				continue;
			step_read(K, y, t, v, "one step of a traced loop");
		}
	}
}

/* The recurrence's attributes. */
static void rec_attrs(rb *K)
{
	rr *R = K->R;
	ir_node *rec = K->rec;
	int64_t *seq_axis = K->seq_axis;
	ir_attr_set_int(rec, "n_seq", K->nseq);
	ir_attr_set_int(rec, "n_state", R->nstate);
	ir_attr_set_int(rec, "n_out", K->nout);
	ir_attr_set_int(rec, "reverse", R->reverse);
	ir_attr_set_ints(rec, "seq_axis", K->nseq, seq_axis);
	ir_attr_set_ints(rec, "out_axis", K->nout, K->out_axis);
	ir_attr_set_int(rec, "has_lens", 0);
	ir_attr_set_int(rec, "has_step", K->has_step);
	ir_attr_set_int(rec, "traced_steps", R->T);
	for (int i = 0; i < R->ncoef; i++)
		if (K->period[i] >= 0)
			ir_attr_set_int(rec, "nag_restart", K->period[i]);
}

/* The new node list: prefix, tables, recurrence, reversals, gathers, tail;
 * the copies' values go (those re-produced by rec or a gather stay). */
static void splice(rb *K)
{
	rr *R = K->R;
	build *B = K->B;
	ir_graph *g = K->g;
	ir_node *rec = K->rec;
	ir_node **nodes = arena_array(R->A, (size_t)R->nn + (size_t)(K->npost + K->npre + K->nrev) + 2, sizeof *nodes);
	int nn = 0;
	for (int i = 0; i < R->nn; i++)
		if (R->label[i] == LBL_PREFIX)
			nodes[nn++] = g->nodes[i];
	for (int i = 0; i < K->npre; i++)
		nodes[nn++] = K->pre[i];
	nodes[nn++] = rec;
	for (int k = 0; k < K->nrev; k++)
		nodes[nn++] = K->rev[k];
	for (int k = 0; k < K->npost; k++)
		if (K->post[k])
			nodes[nn++] = K->post[k];
	for (int i = 0; i < R->nn; i++) {
		int is_stack = 0;
		for (int k = 0; k < B->nstack; k++)
			is_stack |= B->stacks[k].concat == g->nodes[i] && !B->stacks[k].extra;
		if (R->label[i] == LBL_TAIL && !is_stack)
			nodes[nn++] = g->nodes[i];
	}
	char *keep = arena_alloc(R->A, (size_t)R->nv + 1);
	for (int v = 0; v < R->nv; v++) {
		ir_value *x = g->values[v];
		int p = reroll_nid(R, x->producer);
		keep[v] = x->kind != VAL_TEMP || p < 0 || R->label[p] < 0;
	}
	for (int k = 0; k < rec->nout; k++)
		if (reroll_vid(R, rec->out[k]) >= 0)
			keep[rec->out[k]->id] = 1;
	for (int k = 0; k < K->npost; k++)
		if (K->post[k] && reroll_vid(R, K->post[k]->out[0]) >= 0)
			keep[K->post[k]->out[0]->id] = 1;
	for (int k = 0; k < K->nrev; k++)
		if (reroll_vid(R, K->rev[k]->out[0]) >= 0)
			keep[K->rev[k]->out[0]->id] = 1;
	int nv = 0;
	for (int v = 0; v < g->nvalues; v++)
		if (v >= R->nv || keep[v])
			g->values[nv++] = g->values[v];
	g->nvalues = nv;
	ir_set_nodes(g, nodes, nn);
}

/* After the splice: the new nodes produce their outputs and infer; what
 * only the copies read goes (work on the initial states that only the
 * first copy read, the copies' constants). */
static ir_unrolled_why settle(rb *K)
{
	rr *R = K->R;
	ir_graph *g = K->g;
	ir_node *rec = K->rec;
	for (int k = 0; k < rec->nout; k++)
		if (rec->out[k])
			rec->out[k]->producer = rec;
	for (int k = 0; k < K->nrev; k++) {
		K->rev[k]->out[0]->producer = K->rev[k];
		if (infer_node(g, K->rev[k], &K->q))
			return WHY_INT_REVERSE;
	}
	for (int k = 0; k < K->npost; k++)
		if (K->post[k]) {
			K->post[k]->out[0]->producer = K->post[k];
			if (infer_node(g, K->post[k], &K->q))
				return WHY_INT_GATHER;
		}
	ir_recount(g);
	ir_drop_dead(g, IR_DEAD_TEMPS);
	ir_recount(g);
	int nv = 0;
	for (int v = 0; v < g->nvalues; v++) {
		ir_value *x = g->values[v];
		if ((x->kind == VAL_CONST || x->kind == VAL_WEIGHT) && x->nuses == 0 && !x->is_output &&
		    !reroll_is_graph_output(R, x))
			continue;
		g->values[nv++] = x;
	}
	g->nvalues = nv;
	ir_recount(g);
	return WHY_NONE;
}

ir_unrolled_why reroll_build_recurrence(rr *R, build *B, const char **time_note, int *symbolic_ok)
{
	rb K = {.R = R, .B = B, .g = R->g, .name = loop_name(R), .ax0 = R->gen ? 0 : R->seq[0].axis};
	K.b = B->body = ir_graph_new(R->A, R->g, K.name);
	K.Bd = R->gen ? R->batch : R->seq[0].src->shape.d[1 - K.ax0];
	diag_init(&K.q, R->D->file);
	K.q.quiet = 1;
	*symbolic_ok = 1;
	coef_periods(&K, time_note, symbolic_ok);
	ir_unrolled_why why;
	if ((why = body_inputs(&K)) || (why = body_nodes(&K)) || (why = body_outputs(&K, time_note, symbolic_ok)))
		return why;
	K.rev = arena_array(R->A, (size_t)(3 * K.nout + 2 * R->nstate + 1), sizeof *K.rev);
	if ((why = rec_node(&K)))
		return why;
	rec_stacks(&K);
	rec_step_reads(&K);
	rec_attrs(&K);
	splice(&K);
	return settle(&K);
}
