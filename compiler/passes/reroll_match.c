/* reroll_match.c: pass_reroll's second job, proving the copies one step:
 * the template (copy R->m, reroll_build_template) and every other copy
 * matched against it node by node (reroll_match_all), which finds the
 * carried states, the initial states and the per-step coefficients.  Runs
 * after reroll_find.c; reroll_build.c builds from what it records. */
#include "canon.h"
#include "infer.h"
#include "ir_build.h"
#include "reroll.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the template -------------------------------------------------------------------- */

static int seq_of_anchor_value(const rr *R, const ir_value *v, int t)
{
	for (int s = 0; s < R->nseq; s++)
		if (R->seq[s].anchor[t]->out[0] == v)
			return s;
	return -1;
}

/* v is the per-step slice of a sequence at some step (its anchor's
 * output, or the Slice before an anchor Squeeze). */
static int is_slice_value(const rr *R, const ir_value *v)
{
	for (int t = 0; t < R->T; t++)
		for (int s = 0; s < R->nseq; s++)
			if (R->seq[s].anchor[t]->out[0] == v || (R->seq[s].aux && R->seq[s].aux[t] &&
								  R->seq[s].aux[t]->out[0] == v))
				return 1;
	return 0;
}

int reroll_build_template(rr *R)
{
	int m = R->m;
	R->nt = R->ncopy[m];
	R->tn = arena_array(R->A, (size_t)R->nt, sizeof *R->tn);
	R->ti = arena_array(R->A, (size_t)R->nt, sizeof *R->ti);
	R->tvof = arena_array(R->A, (size_t)R->nv, sizeof *R->tvof);
	R->stateof = arena_array(R->A, (size_t)R->nv, sizeof *R->stateof);
	for (int v = 0; v < R->nv; v++)
		R->tvof[v] = R->stateof[v] = -1;
	int cap = 0;
	for (int j = 0; j < R->nt; j++)
		cap += R->g->nodes[R->copy[m][j]]->nout;
	R->tval = arena_array(R->A, (size_t)cap + 1, sizeof *R->tval);
	R->state_in = arena_array(R->A, (size_t)R->nv + 1, sizeof *R->state_in);
	for (int j = 0; j < R->nt; j++) {
		ir_node *n = R->g->nodes[R->copy[m][j]];
		R->tn[j] = n;
		if (n->body)
			return reroll_fail(R, WHY_STRUCTURED);
		R->ti[j] = arena_array(R->A, (size_t)n->nin + 1, sizeof **R->ti);
		for (int k = 0; k < n->nin; k++) {
			ir_value *v = n->in[k];
			tin *x = &R->ti[j][k];
			int id = reroll_vid(R, v), s;
			if (!v)
				x->kind = IN_NONE;
			else if (id >= 0 && R->tvof[id] >= 0)
				*x = (tin){IN_INT, R->tvof[id], NULL};
			else if ((s = seq_of_anchor_value(R, v, m)) >= 0)
				*x = (tin){IN_SEQ, s, NULL};
			else if (reroll_label_of(R, v) == m - 1 && !R->anchor_of[v->producer->id]) {
				if (R->stateof[id] < 0) {
					R->stateof[id] = R->nstate;
					R->state_in[R->nstate++] = v;
				}
				*x = (tin){IN_STATE, R->stateof[id], NULL};
			} else if (reroll_label_of(R, v) == LBL_PREFIX) {
				*x = (tin){IN_CAP, 0, v};
			} else {
				return reroll_fail(R, WHY_FAR_READ);
			}
		}
		for (int k = 0; k < n->nout; k++) {
			int id = reroll_vid(R, n->out[k]);
			if (id >= 0) {
				R->tvof[id] = R->ntv;
				R->tval[R->ntv++] = n->out[k];
			}
		}
	}
	if (R->nstate == 0)
		return reroll_fail(R, WHY_NO_STATE);
	/* a state is carried as an f32 matrix: an f32 value, or an integer one
	 * that f32 holds exactly (a greedy decoder's token, fed back) */
	for (int s = 0; s < R->nstate; s++) {
		ir_shape mat;
		const ir_value *v = R->state_in[s];
		if (!reroll_matrix(R, v, &mat) ||
		    (v->dtype != DT_F32 && !((v->dtype == DT_I64 || v->dtype == DT_I32) && ir_index_exact_in_f32(v))))
			return reroll_fail(R, WHY_STATE_TYPE);
	}
	R->state_out = arena_array(R->A, (size_t)R->nstate, sizeof *R->state_out);
	for (int s = 0; s < R->nstate; s++)
		R->state_out[s] = -1;
	R->map = arena_array(R->A, (size_t)R->T, sizeof *R->map);
	R->sin = arena_array(R->A, (size_t)R->T, sizeof *R->sin);
	for (int t = 0; t < R->T; t++) {
		R->map[t] = arena_array(R->A, (size_t)R->ntv + 1, sizeof **R->map);
		R->sin[t] = arena_array(R->A, (size_t)R->nstate, sizeof **R->sin);
	}
	memcpy(R->map[m], R->tval, (size_t)R->ntv * sizeof *R->tval);
	memcpy(R->sin[m], R->state_in, (size_t)R->nstate * sizeof *R->state_in);
	R->matched = arena_alloc(R->A, (size_t)R->nn + 1);
	R->done = arena_alloc(R->A, (size_t)R->T + 1);
	R->done[m] = 1;
	for (int j = 0; j < R->nt; j++)
		R->matched[R->copy[m][j]] = 1;
	return 0;
}

/* ---- matching copies ----------------------------------------------------------------- */

coef *reroll_coef_at(rr *R, int node, int k)
{
	for (int i = 0; i < R->ncoef; i++)
		if (R->coefs[i].node == node && R->coefs[i].k == k)
			return &R->coefs[i];
	return NULL;
}

/* Copy t has value v where the template has constant c (position node, k). */
static int match_const(rr *R, int t, int node, int k, const ir_value *c, const ir_value *v, int commit)
{
	coef *cf = reroll_coef_at(R, node, k);
	if (!cf && (v == c || reroll_same_const(v, c, 0)))
		return 1;
	/* a per-step coefficient: f32 scalars that reroll_differ */
	if (!reroll_has_data(v) || !reroll_has_data(c) || v->dtype != DT_F32 || c->dtype != DT_F32 ||
	    ir_shape_const_numel(&v->shape) != 1 || ir_shape_const_numel(&c->shape) != 1 ||
	    v->kind != VAL_CONST || v->shape.rank != c->shape.rank)
		return 0;
	if (!commit)
		return 1;
	if (!cf) {
		if (R->ncoef % 8 == 0)
			R->coefs = arena_grow(R->A, R->coefs, (size_t)R->ncoef, (size_t)R->ncoef + 8,
					      sizeof *R->coefs);
		cf = &R->coefs[R->ncoef++];
		cf->node = node;
		cf->k = k;
		cf->tab = arena_array(R->A, (size_t)R->T, sizeof *cf->tab);
		cf->have = arena_array(R->A, (size_t)R->T, sizeof *cf->have);
		/* copies matched before agreed with the template's value */
		for (int s = 0; s < R->T; s++) {
			cf->tab[s] = *(const float *)c->data;
			cf->have[s] = R->done[s];
		}
	}
	cf->tab[t] = *(const float *)v->data;
	cf->have[t] = 1;
	return 1;
}

/* Whether node n of copy t can be template node j; records state-ins and
 * coefficients when it can (undone by the caller on failure? no: checked
 * first with commit = 0, then recorded with commit = 1). */
static int fits(rr *R, int t, int j, ir_node *n, int commit)
{
	ir_node *tn = R->tn[j];
	int id = reroll_nid(R, n);
	/* in the first copy, work on the initial states alone was computed
	 * before the loop (it depends on no per-step slice).  There, one node
	 * may also stand for several template nodes: states that start equal
	 * (one torch.zeros for h and every velocity) make their first updates
	 * the same expression, which the exporter computed once; the inputs
	 * are checked below like any other, so the node computes what each of
	 * those template nodes would */
	if (id < 0 || (R->label[id] != t && !(t == 0 && R->label[id] == LBL_PREFIX)) || (R->matched[id] && t) ||
	    R->anchor_of[id] || n->op != tn->op ||
	    n->nin != tn->nin || n->nout != tn->nout || n->body || !reroll_same_attrs(n, tn))
		return 0;
	for (int k = 0; k < n->nin; k++) {
		const tin *x = &R->ti[j][k];
		ir_value *v = n->in[k];
		if ((x->kind == IN_NONE) != (v == NULL))
			return 0;
		switch (x->kind) {
		case IN_NONE:
			break;
		case IN_INT: {
			ir_value *e = R->map[t][x->idx];
			if (!e || (e != v && !(e->graph != R->g && reroll_same_const(e, v, 1))))
				return 0;
			break;
		}
		case IN_SEQ:
			if (v != R->seq[x->idx].anchor[t]->out[0])
				return 0;
			break;
		case IN_STATE: {
			ir_value *e = R->sin[t][x->idx];
			if (e) {
				if (e != v && !reroll_same_const(e, v, 1))
					return 0;
			} else {
				int l = reroll_label_of(R, v);
				if (l >= t || l == LBL_TAIL || (t > 0 && l != t - 1))
					return 0;
				if (commit)
					R->sin[t][x->idx] = v;
			}
			break;
		}
		case IN_CAP: case IN_COEF:
			if (v == x->cap)
				break;
			if (reroll_label_of(R, v) != LBL_PREFIX)
				return 0;
			if (!match_const(R, t, j, k, x->cap, v, commit))
				return 0;
			break;
		}
	}
	return 1;
}

static void commit_match(rr *R, int t, int j, ir_node *n)
{
	if (getenv("CELLC_DEBUG_REROLL") && getenv("CELLC_DEBUG_REROLL")[0] == '3')
		fprintf(stderr, "reroll: copy %d: %s is %s\n", t, n->name, R->tn[j]->name);
	fits(R, t, j, n, 1);
	R->map_again = R->matched[n->id];
	R->matched[n->id] = 1;
	R->map_node = n->id;
	ir_node *tn = R->tn[j];
	for (int k = 0; k < n->nout; k++) {
		int tv = reroll_vid(R, tn->out[k]) >= 0 ? R->tvof[tn->out[k]->id] : -1;
		if (tv >= 0)
			R->map[t][tv] = n->out[k];
	}
}

/* Restart period of the NAG schedule in tab[0..T) (mu_t = (k-1)/(k+2),
 * entries with have[t] = 0 unknown): F in 1..T-1 when the table restarts,
 * 0 when it matches "never restarts" within T steps (then any F >= T fits
 * too: *ambiguous), -1 if no schedule. */
int64_t reroll_nag_period(const float *tab, const int *have, int T, int *ambiguous)
{
	*ambiguous = 0;
	for (int64_t F = 1; F <= T; F++) {
		int ok = 1;
		for (int t = 0; t < T && ok; t++) {
			double k = (double)(F == T ? t : t % F) + 1.0;
			float mu = (float)((k - 1.0) / (k + 2.0));
			ok = !have[t] || fabsf(mu - tab[t]) <= 1e-6f;
		}
		if (ok) {
			*ambiguous = F == T;
			return F == T ? 0 : F;
		}
	}
	return -1;
}

/* A constant for template input (j, k) in copy 0 when every input of the
 * node is known there as a constant; NULL otherwise.  States nobody has
 * seen yet are taken to start at zero (checked later against the trace). */
static ir_value *const_input(rr *R, int j, int k)
{
	const tin *x = &R->ti[j][k];
	switch (x->kind) {
	case IN_INT: {
		ir_value *e = R->map[0][x->idx];
		return e && reroll_has_data(e) ? e : NULL;
	}
	case IN_STATE: {
		ir_value *e = R->sin[0][x->idx];
		if (e)
			return reroll_has_data(e) ? e : NULL;
		ir_value *s = R->state_in[x->idx];
		int64_t n = ir_shape_const_numel(&s->shape);
		if (n < 0)
			return NULL;
		e = ir_const_new(R->scratch, NULL, DT_F32, &s->shape, NULL);
		R->sin[0][x->idx] = e;
		return e;
	}
	case IN_CAP: case IN_COEF: {
		coef *cf = reroll_coef_at(R, j, k);
		if (!cf)
			return x->cap;
		/* a coefficient the exporter folded away in the first step: the
		 * NAG schedule's mu_1 = 0 when the other steps follow it, else the
		 * template's value (the fold is checked against the trace either way) */
		int amb;
		cf->tab[0] = reroll_nag_period(cf->tab, cf->have, R->T, &amb) >= 0 ? 0.0f : *(const float *)x->cap->data;
		cf->have[0] = 1;
		return ir_const_f32_scalar(R->scratch, NULL, cf->tab[0]);
	}
	default:
		return NULL;
	}
}

/* Copy 0 may have template nodes folded away by the exporter (their
 * inputs were all constant: the zero initial states).  Folds them here. */
static int fold_in_copy0(rr *R, int j)
{
	ir_node *tn = R->tn[j];
	ir_node *n = ir_clone_node(R->scratch, tn, NULL, -1, IR_CLONE_SHARE_ATTRS);
	for (int k = 0; k < tn->nin; k++) {
		if (!tn->in[k])
			continue;
		n->in[k] = const_input(R, j, k);
		if (!n->in[k])
			return 0;
	}
	for (int k = 0; k < tn->nout; k++)
		if (tn->out[k]) {
			n->out[k] = ir_value_new(R->scratch, NULL, VAL_TEMP, tn->out[k]->dtype);
			n->out[k]->producer = n;
		}
	diag q;
	diag_init(&q, R->D->file);
	q.quiet = 1;
	if (infer_node(R->scratch, n, &q) || infer_fold(R->scratch, n, &q) != 1)
		return 0;
	for (int k = 0; k < tn->nout; k++) {
		int tv = reroll_vid(R, tn->out[k]) >= 0 ? R->tvof[tn->out[k]->id] : -1;
		if (tv >= 0)
			R->map[0][tv] = n->out[k];
	}
	return 1;
}

/* Of two nodes that both fit a template node (h.unsqueeze(0) returned as
 * a graph output beside the same unsqueeze stacked with the other steps'
 * outputs), the one read the way the template is: by a reader of the
 * template's output (the stacking Concat), and a graph output only where
 * the template's is one. */
static int likeness(const rr *R, const ir_node *tn, const ir_node *n)
{
	int sc = 0;
	for (int k = 0; k < n->nout && k < tn->nout; k++) {
		int a = reroll_vid(R, tn->out[k]), b = reroll_vid(R, n->out[k]);
		if (a < 0 || b < 0)
			continue;
		if (reroll_is_graph_output(R, tn->out[k]) == reroll_is_graph_output(R, n->out[k]))
			sc += 1;
		for (int i = R->cstart[a]; i < R->cstart[a + 1]; i++)
			for (int j = R->cstart[b]; j < R->cstart[b + 1]; j++)
				if (R->cons[i] >= 0 && R->cons[i] == R->cons[j])
					sc += 2;
	}
	return sc;
}

/* How many nodes before the loop lie between n and a reader in the first
 * copy (0: the first copy reads n), at most `left`; -1 if none does. */
static int read_by_copy(const rr *R, const ir_node *n, int left)
{
	int best = -1;
	for (int k = 0; k < n->nout; k++) {
		int v = reroll_vid(R, n->out[k]);
		if (v < 0)
			continue;
		for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++) {
			int r = R->cons[c];
			if (r < 0)
				continue;
			if (R->label[r] == 0)
				return 0;
			if (R->label[r] == LBL_PREFIX && left > 0) {
				int d = read_by_copy(R, R->g->nodes[r], best < 0 ? left - 1 : best - 1);
				if (d >= 0 && (best < 0 || d + 1 < best))
					best = d + 1;
			}
		}
	}
	return best;
}

/* Whether n's constant inputs are those of template node j. */
static int same_consts(const rr *R, int j, const ir_node *n)
{
	for (int k = 0; k < n->nin; k++) {
		const tin *x = &R->ti[j][k];
		if ((x->kind == IN_CAP || x->kind == IN_COEF) && n->in[k] != x->cap && !reroll_same_const(n->in[k], x->cap, 0))
			return 0;
	}
	return 1;
}

/* The better of two nodes that fit template node j in copy t: in the
 * first copy, work before the loop only when the copy reads it, the
 * closer the better (a prologue step's own h2h(h0) is not the first
 * step's); then the one with the template's constants (no new per-step
 * coefficient), then the one read like the template.  -1: not a candidate. */
static int cand_score(const rr *R, int t, int j, const ir_node *n)
{
	int near = 9;
	if (R->matched[n->id])
		return 0;       /* standing for a second template node: the last resort */
	if (t == 0 && R->label[n->id] == LBL_PREFIX) {
		int d = read_by_copy(R, n, 8);
		if (d < 0)
			return -1;
		near = 8 - d;
	}
	return 64 * near + 4 * same_consts(R, j, n) + likeness(R, R->tn[j], n);
}

/* Candidates for template node j in copy t: consumers of a known input. */
static int find_match(rr *R, int t, int j)
{
	ir_node *tn = R->tn[j];
	ir_graph *g = R->g;
	for (int k = 0; k < tn->nin; k++) {
		const tin *x = &R->ti[j][k];
		ir_value *key = NULL;
		if (x->kind == IN_INT)
			key = R->map[t][x->idx];
		else if (x->kind == IN_SEQ)
			key = R->seq[x->idx].anchor[t]->out[0];
		else if (x->kind == IN_STATE)
			key = R->sin[t][x->idx];
		else if (x->kind == IN_CAP && x->cap->kind != VAL_CONST)
			key = x->cap;
		int v = reroll_vid(R, key);
		if (v < 0)
			continue;
		/* weights are read by every copy: only worth it if nothing better */
		if (x->kind == IN_CAP && R->cstart[v + 1] - R->cstart[v] > 4 * R->ncopy[t] + 8)
			continue;
		ir_node *best = NULL;
		int best_score = -1;
		for (int c = R->cstart[v]; c < R->cstart[v + 1]; c++)
			if (R->cons[c] >= 0 && fits(R, t, j, g->nodes[R->cons[c]], 0)) {
				int sc = cand_score(R, t, j, g->nodes[R->cons[c]]);
				if (sc > best_score) {
					best = g->nodes[R->cons[c]];
					best_score = sc;
				}
			}
		if (best) {
			commit_match(R, t, j, best);
			return 1;
		}
		if (x->kind != IN_CAP && reroll_has_data(key) == 0)
			return 0;       /* the copy's node must read this value */
	}
	for (int c = 0; c < R->ncopy[t]; c++)
		if (fits(R, t, j, g->nodes[R->copy[t][c]], 0)) {
			commit_match(R, t, j, g->nodes[R->copy[t][c]]);
			return 1;
		}
	/* the first copy's work on initial states alone sits before the loop;
	 * it is read by the first copy (not by a prologue step's own work) */
	ir_node *best = NULL;
	int best_score = -1;
	for (int i = 0; t == 0 && i < R->nn; i++)
		if (R->label[i] == LBL_PREFIX && fits(R, t, j, g->nodes[i], 0)) {
			int sc = cand_score(R, t, j, g->nodes[i]);
			if (sc > best_score) {
				best = g->nodes[i];
				best_score = sc;
			}
		}
	if (best) {
		commit_match(R, t, j, best);
		return 1;
	}
	return 0;
}

/* In the first copy, template node j views state s (h.unsqueeze(0): a
 * one-step GRU's h_n) where the initial state is itself a view of a value
 * x0 before the loop (h0 = h_n.squeeze(0) of an encoder's [1, B, H]): the
 * copy reads x0 where the template reads j's result (the attention's
 * query is the encoder's h_n itself), and a view of a view that restores
 * x0's shape is x0 (views keep the elements in order).  The initial state
 * is known once another node of the copy reads it (the GRU's initial_h);
 * until then the node waits for the next round of match_copy. */
static int view_of_initial(rr *R, int j)
{
	ir_node *tn = R->tn[j];
	const tin *x = &R->ti[j][0];
	if (!canon_is_view(tn) || tn->nin < 1 || tn->nout != 1 || !tn->out[0] || x->kind != IN_STATE)
		return 0;
	for (int k = 1; k < tn->nin; k++)
		if (tn->in[k] && (R->ti[j][k].kind != IN_CAP || !reroll_has_data(R->ti[j][k].cap)))
			return 0;
	ir_value *e = R->sin[0][x->idx];
	ir_node *p = e ? e->producer : NULL;
	int tv = reroll_vid(R, tn->out[0]) >= 0 ? R->tvof[tn->out[0]->id] : -1;
	if (!p || !canon_is_view(p) || p->nin < 1 || !p->in[0] || tv < 0 || R->map[0][tv] ||
	    reroll_label_of(R, p->in[0]) != LBL_PREFIX || p->in[0]->dtype != tn->out[0]->dtype ||
	    !ir_shape_eq(&p->in[0]->shape, &tn->out[0]->shape))
		return 0;
	R->map[0][tv] = p->in[0];
	return 1;
}

/* Template node j in copy t: a node of the copy, or (the first copy) work
 * on the initial states alone folded or seen through. */
static int match_node(rr *R, int t, int j, int *nmatched)
{
	if (find_match(R, t, j)) {
		*nmatched += R->label[R->map_node] == t && !R->map_again;
		return 1;
	}
	return t == 0 && (view_of_initial(R, j) || fold_in_copy0(R, j));
}

static int match_copy(rr *R, int t)
{
	int nmatched = 0;
	/* what copy t reads as states is what copy t-1 computed (checked by fits) */
	if (t > 0 && R->done[t - 1] && R->state_out[0] >= 0)
		for (int s = 0; s < R->nstate; s++)
			if (!reroll_has_data(R->map[t - 1][R->state_out[s]]))
				R->sin[t][s] = R->map[t - 1][R->state_out[s]];
	/* the first copy's initial states are found as its nodes are: a node
	 * that needs one found further on waits for it (rounds until none
	 * is matched) */
	char *wait = arena_alloc(R->A, (size_t)R->nt + 1);
	int nwait = 0;
	for (int j = 0; j < R->nt; j++) {
		if (match_node(R, t, j, &nmatched))
			continue;
		if (t == 0) {
			wait[j] = 1;
			nwait++;
			continue;
		}
		/* the last copy may lack work that only a later step would have used */
		if (t == R->T - 1)
			continue;
		reroll_differ(R, R->m, t, R->tn[j]);
		if (getenv("CELLC_DEBUG_REROLL"))
			fprintf(stderr, "reroll: copy %d has no match for template node '%s'\n", t, R->tn[j]->name);
		return reroll_fail(R, WHY_NOT_ISOMORPHIC);
	}
	for (int round = 1; nwait; round++) {
		int before = nwait;
		for (int j = 0; j < R->nt; j++)
			if (wait[j] && match_node(R, t, j, &nmatched))
				wait[j] = 0, nwait--;
		if (nwait == before) {
			int j = 0;
			while (!wait[j])
				j++;
			reroll_differ(R, R->m, t, R->tn[j]);
			if (getenv("CELLC_DEBUG_REROLL"))
				fprintf(stderr, "reroll: copy %d has no match for template node '%s' (round %d)\n", t,
					R->tn[j]->name, round);
			return reroll_fail(R, WHY_FIRST_STEP);
		}
	}
	if (nmatched != R->ncopy[t] && t == R->T - 1) {
		/* an epilogue: work only the last step does (a head on the last
		 * step's state) runs after the loop, on the last step's values;
		 * not on a step's input slice, which the loop consumes */
		for (int c = 0; c < R->ncopy[t]; c++) {
			const ir_node *x = R->g->nodes[R->copy[t][c]];
			for (int k = 0; k < x->nin && !R->matched[R->copy[t][c]]; k++)
				if (x->in[k] && is_slice_value(R, x->in[k])) {
					reroll_differ(R, t, R->m, x);
					return reroll_fail(R, WHY_LAST_READS_SLICE);
				}
		}
		for (int c = 0; c < R->ncopy[t]; c++)
			if (!R->matched[R->copy[t][c]])
				R->label[R->copy[t][c]] = LBL_TAIL;
	} else if (nmatched != R->ncopy[t]) {
		for (int c = 0; c < R->ncopy[t]; c++)
			if (!R->matched[R->copy[t][c]])
				reroll_differ(R, t, R->m, R->g->nodes[R->copy[t][c]]);
		if (getenv("CELLC_DEBUG_REROLL"))
			for (int c = 0; c < R->ncopy[t]; c++)
				if (!R->matched[R->copy[t][c]])
					fprintf(stderr, "reroll: step %d has node '%s' (%s) that the template lacks\n", t,
						R->g->nodes[R->copy[t][c]]->name, ir_op_name(R->g->nodes[R->copy[t][c]]->op));
		return reroll_fail(R, WHY_EXTRA_NODES);
	}
	R->done[t] = 1;
	return 0;
}

/* States: the template value of copy m that copy m+1 reads where the
 * template reads state s (found through copy m-1, which is matched first). */
static int find_state_outs(rr *R)
{
	for (int s = 0; s < R->nstate; s++) {
		R->state_out[s] = -1;
		for (int tv = 0; tv < R->ntv; tv++)
			if (R->map[R->m - 1][tv] == R->state_in[s])
				R->state_out[s] = tv;
		if (R->state_out[s] < 0)
			return reroll_fail(R, WHY_STATE_NOT_COMPUTED);
	}
	return 0;
}

static int check_links(rr *R)
{
	for (int t = 1; t < R->T; t++)
		for (int s = 0; s < R->nstate; s++) {
			ir_value *want = R->map[t - 1][R->state_out[s]], *got = R->sin[t][s];
			if (!got)
				continue;       /* the last copy need not read every state */
			if (!want || (want != got && !reroll_same_const(want, got, 1)))
				return reroll_fail(R, WHY_OTHER_STATE);
		}
	for (int s = 0; s < R->nstate; s++)
		if (R->sin[0][s] && R->sin[0][s]->graph == R->g && reroll_label_of(R, R->sin[0][s]) != LBL_PREFIX)
			return reroll_fail(R, WHY_INIT_INSIDE);
	return 0;
}

int reroll_match_all(rr *R)
{
	R->scratch = ir_graph_new(R->A, R->g, "reroll.scratch");
	if (match_copy(R, R->m - 1) || find_state_outs(R))
		return 1;
	for (int t = 1; t < R->T; t++)
		if (t != R->m && t != R->m - 1 && match_copy(R, t))
			return 1;
	if (R->m - 1 != 0 && match_copy(R, 0))
		return 1;
	if (R->m - 1 == 0) {
		/* copy 0 was matched first without folding; states never read are zero */
	}
	for (int i = 0; i < R->ncoef; i++)
		R->ti[R->coefs[i].node][R->coefs[i].k].kind = IN_COEF;
	return check_links(R);
}
