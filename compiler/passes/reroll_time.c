/* reroll_time.c: pass_reroll's fourth job, the time axis of a recurrence it
 * built: a dimension symbol when that is sound (reroll_make_time_symbolic:
 * the sequences graph inputs read only through their slices, the graph
 * after the loop re-inferring with a symbolic T, a Reshape's baked target
 * following it; stacked layers' loops become symbolic together, back to
 * the first layer's; an axis a traced x.unbind() had fixed gets its name
 * back), else the traced steps sliced (reroll_slice_traced_steps) and the
 * reason kept as time_note. */
#include "infer.h"
#include "reroll.h"
#include "util.h"

#include <string.h>

/* Ops downstream of the loop whose result does not bake in the traced T
 * when the time axis is none of the axes their parameters name. */
static int time_safe(const ir_node *n)
{
	switch (ir_ops[n->op].kind) {
	case OPK_ELEM: case OPK_LINALG: return 1;
	default: break;
	}
	switch (n->op) {
	case OP_SOFTMAX: case OP_LOGSOFTMAX: case OP_TRANSPOSE: case OP_CAST: case OP_GATHER:
	case OP_SQUEEZE: case OP_UNSQUEEZE: case OP_SLICE: case OP_CONCAT:
	case OP_RESHAPE:        /* its target re-derived: reshape_follows */
		return 1;
	default:
		return 0;
	}
}

enum { CHAIN_MAX = 12, IR_MAX_INPUTS_SAVE = 16 };

/* v is computed from weights and constants only (shape constants included:
 * a Shape of an input is folded into one), looking at most *budget values
 * back (0 when that is not enough). */
static int value_free(const ir_value *v, int *budget)
{
	if (v->kind == VAL_WEIGHT || v->kind == VAL_CONST)
		return 1;
	if (v->kind != VAL_TEMP || !v->producer || --*budget <= 0)
		return 0;
	for (int k = 0; k < v->producer->nin; k++)
		if (v->producer->in[k] && !value_free(v->producer->in[k], budget))
			return 0;
	return 1;
}

/* The graph input a sequence is computed from, through nodes that keep
 * its time axis where it is and read nothing else that depends on T: the
 * [.., .., 1] column view of pass_canon, an embedding lookup
 * Gather(table, tokens), element-wise work with constants, Cast.  Returns
 * the input (x itself when x is one) and, in chain[0 .. *n), the nodes from
 * the input to x in order; NULL when x is computed otherwise. */
static ir_value *seq_input(ir_value *x, int axis, ir_node **chain, int *n, int *in_axis)
{
	ir_node *rev[CHAIN_MAX];
	int k = 0;
	ir_value *v = x;
	while (v->kind != VAL_INPUT) {
		ir_node *p = v->producer;
		if (!p || k >= CHAIN_MAX || p->nout != 1 || v->shape.rank <= axis)
			return NULL;
		ir_value *data = NULL;
		const ir_attr *perm = p->op == OP_TRANSPOSE ? ir_attr_find(p, "perm") : NULL;
		if (p->op == OP_TRANSPOSE && p->nin == 1 && p->in[0] && p->in[0]->shape.rank == v->shape.rank) {
			/* x.transpose(0, 1) of the input: the time axis moves */
			int r = v->shape.rank, a = r - 1 - axis;    /* no perm: reversed axes */
			if (perm && perm->kind == ATTR_INTS && perm->n == r)
				a = (int)perm->ints[axis];
			if (a < 0 || a >= r)
				return NULL;
			axis = a;
			data = p->in[0];
		} else if (p->op == OP_UNSQUEEZE && p->nin == 2 && ir_value_is_const(p->in[1])) {
			for (int64_t i = 0; i < ir_shape_const_numel(&p->in[1]->shape); i++) {
				int64_t a = ir_const_int(p->in[1], i);
				if (a < 0)
					a += v->shape.rank;
				if (a <= axis)
					return NULL;
			}
			data = p->in[0];
		} else if (p->op == OP_GATHER && p->nin == 2 && ir_attr_int(p, "axis", 0) == 0 &&
			   p->in[0] && (p->in[0]->kind == VAL_WEIGHT || p->in[0]->kind == VAL_CONST) &&
			   p->in[1] && p->in[1]->shape.rank > axis) {
			data = p->in[1];        /* tokens [B, T] -> [B, T, E] */
		} else if (p->op == OP_CAST || (ir_ops[p->op].kind == OPK_ELEM && p->nin == 1)) {
			data = p->in[0];
		} else if (p->op == OP_SLICE && p->nin >= 4 && p->in[3] && ir_value_is_const(p->in[3]) &&
			   ir_shape_const_numel(&p->in[3]->shape) == 1 && p->in[0] &&
			   p->in[0]->shape.rank == v->shape.rank &&
			   (ir_const_int(p->in[3], 0) == axis || ir_const_int(p->in[3], 0) == axis - v->shape.rank)) {
			data = p->in[0];        /* x[:-1], x[1:] on the time axis (re-inferred) */
		} else if (p->op == OP_CONCAT && (ir_attr_int(p, "axis", 0) == axis ||
						  ir_attr_int(p, "axis", 0) == axis - v->shape.rank)) {
			/* a start token in front: the one input computed from a graph
			 * input's values; the others from weights and constants */
			for (int q = 0; q < p->nin; q++) {
				int budget = 64;
				if (p->in[q] && !value_free(p->in[q], &budget)) {
					if (data)
						return NULL;
					data = p->in[q];
				}
			}
		} else if (ir_ops[p->op].kind == OPK_ELEM && p->nin == 2) {
			for (int q = 0; q < 2; q++)
				if (p->in[q] && p->in[1 - q] && ir_value_is_const(p->in[1 - q]) &&
				    p->in[1 - q]->shape.rank < v->shape.rank - axis &&
				    ir_shape_eq(&p->in[q]->shape, &v->shape))
					data = p->in[q];
		}
		if (!data || data->shape.rank <= axis || (v != x && v->nuses != 1))
			return NULL;
		rev[k++] = p;
		v = data;
	}
	if (chain) {
		for (int i = 0; i < k; i++)
			chain[i] = rev[k - 1 - i];
		*n = k;
	}
	if (in_axis)
		*in_axis = axis;
	return v;
}

/* The sliced input of rec's sequence s (x[0:T] of reroll_slice_traced_steps), or NULL. */
static ir_value *traced_slice_source(const ir_node *rec, int s)
{
	ir_value *v = rec->in[s];
	ir_node *p = v ? v->producer : NULL;
	if (!p || p->op != OP_SLICE || v->role != IR_ROLE_TRACE_STEPS || v->nuses != 1)
		return NULL;
	return p->in[0];
}

/* The recurrence of F whose whole stacked output x is (on the time axis
 * axis), read by nothing else: the recurrence, and x's length in *T. */
static ir_node *fixed_producer(const fixed_recs *F, ir_value *x, int axis, ir_dim *T)
{
	ir_node *p = x->producer;
	int at = -1;
	for (int i = 0; F && p && i < F->n; i++)
		if (F->rec[i] == p)
			at = i;
	if (at < 0 || x->nuses != 1)
		return NULL;
	int ns = (int)ir_attr_int(p, "n_state", 0), nseq = (int)ir_attr_int(p, "n_seq", 0);
	const ir_attr *oa = ir_attr_find(p, "out_axis"), *sa = ir_attr_find(p, "seq_axis");
	int k = -1;
	for (int j = ns; j < p->nout; j++)
		if (p->out[j] == x)
			k = j - ns;
	if (k < 0 || !oa || k >= oa->n || oa->ints[k] != axis || !sa || nseq < 1 || sa->n < nseq ||
	    x->shape.rank <= axis || !ir_dim_is_const(x->shape.d[axis]))
		return NULL;
	*T = x->shape.d[axis];
	return p;
}

/* The earlier recurrences x is read through (stacked layers, each with a
 * loop of its own, whose time axes stayed fixed while a later layer's
 * per-step reads of its output held them): up[0] the one whose whole
 * stacked output x is, up[1] the one whose stacked output up[0] reads
 * whole, ... to the first layer, whose every sequence is a traced slice of
 * one symbolic length or (a static export) a graph input of the traced
 * length, or a sequence computed from one (seq_input: an embedding
 * lookup), read by it alone.  Returns how many (0: none) and the first
 * layer's sequence length in *len. */
static int fixed_upstream(const fixed_recs *F, ir_value *x, int axis, ir_node **up, ir_dim *len)
{
	for (int n = 0; n < FIXED_MAX; n++) {
		ir_dim T;
		ir_node *p = fixed_producer(F, x, axis, &T);
		if (!p)
			return 0;
		up[n] = p;
		const ir_attr *sa = ir_attr_find(p, "seq_axis");
		int nseq = (int)ir_attr_int(p, "n_seq", 0);
		ir_dim dl;
		if (nseq == 1 && !traced_slice_source(p, 0) && p->in[0] && fixed_producer(F, p->in[0], (int)sa->ints[0], &dl)) {
			x = p->in[0];           /* a layer over an earlier layer */
			axis = (int)sa->ints[0];
			continue;
		}
		for (int s = 0; s < nseq; s++) {
			ir_value *src = traced_slice_source(p, s);
			if (!src) {
				src = p->in[s];
				ir_value *xi = src ? seq_input(src, (int)sa->ints[s], NULL, NULL, NULL) : NULL;
				if (!xi || xi->nuses != 1 || src->nuses != 1)
					return 0;
			}
			if (src->shape.rank <= sa->ints[s])
				return 0;
			ir_dim d = src->shape.d[sa->ints[s]];
			if ((ir_dim_is_const(d) && !ir_dim_eq(d, T)) || (s > 0 && !ir_dim_eq(d, *len)))
				return 0;
			*len = d;
		}
		return n + 1;
	}
	return 0;
}

/* Dim d (after the time axis became the symbol Tin) in terms of the trace:
 * every symbol of Tin's base at its traced value (Tin at L, a symbol derived
 * from it at L plus its offset).  Returns whether d involves such a symbol
 * and, when before is given, whether d at the trace equals before. */
static int traced_as(ir_graph *g, ir_dim Tin, int64_t L, ir_dim d, const ir_dim *before)
{
	int base = ir_dim_one_sym(Tin);
	if (base < 0 || ir_dim_is_const(d))
		return 0;
	int64_t boff;
	int root = ir_sym_root(g, base, &boff);
	L -= boff;
	base = root;
	int involved = 0;
	for (int i = 0; i < g->nsyms; i++) {
		int64_t off;
		if (!d.pow[i] || ir_sym_root(g, i, &off) != base)
			continue;
		involved = 1;
		int64_t v = L + off;
		for (int p = 0; p < d.pow[i]; p++)
			if (v < 1 || __builtin_mul_overflow(d.k, v, &d.k))
				return 0;
		d.pow[i] = 0;
	}
	return involved && (!before || ir_dim_eq(d, *before));
}

/* Whether the values rec starts from (initial states, a stacked output's
 * entry before the loop's) are computed with a weight matrix the body
 * multiplies by: a step ran before the loop (a start token's). */
static int has_prologue_step(rr *R, ir_node *rec)
{
	ir_graph *g = R->g;
	char *wt = arena_alloc(R->A, (size_t)g->nvalues + 1);
	for (int i = 0; i < rec->body->nnodes; i++) {
		ir_node *n = rec->body->nodes[i];
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] && n->in[k]->kind == VAL_WEIGHT && n->in[k]->shape.rank >= 2 &&
			    n->in[k]->graph == g && n->in[k]->id >= 0 && n->in[k]->id < g->nvalues)
				wt[n->in[k]->id] = 1;
	}
	ir_value **todo = arena_array(R->A, (size_t)g->nvalues + 1, sizeof *todo);
	char *seen = arena_alloc(R->A, (size_t)g->nvalues + 1);
	int sp = 0, nseq = (int)ir_attr_int(rec, "n_seq", 0), ns = (int)ir_attr_int(rec, "n_state", 0);
	for (int k = nseq; k < rec->nin && k < nseq + ns; k++)
		todo[sp++] = rec->in[k];
	for (int i = 0; i < g->nnodes; i++)
		for (int k = ns; k < rec->nout; k++)
			if (g->nodes[i]->op == OP_CONCAT && g->nodes[i]->nin == 2 && rec->out[k] &&
			    g->nodes[i]->in[1] == rec->out[k])
				todo[sp++] = g->nodes[i]->in[0];
	while (sp > 0) {
		ir_value *v = todo[--sp];
		if (!v || v->graph != g || v->id < 0 || v->id >= g->nvalues || seen[v->id])
			continue;
		seen[v->id] = 1;
		if (wt[v->id])
			return 1;
		ir_node *p = v->producer;
		for (int k = 0; p && k < p->nin; k++)
			if (p->in[k] && sp < g->nvalues)
				todo[sp++] = p->in[k];
	}
	return 0;
}

/* rec's sequence s becomes Slice(x, 0, en) of it on its time axis, a node
 * placed just before rec: the loop reads the first steps of x (en < 0:
 * all but the last -en); its result has the given role.  Returns 1 when
 * the slice does not infer. */
static int slice_sequence(rr *R, ir_node *rec, int s, int64_t en, const char *origin, ir_role role)
{
	ir_graph *g = R->g;
	diag q;
	diag_init(&q, R->D->file);
	q.quiet = 1;
	/* the trace read steps 0 .. en - 1 of the sequence, so the model needs
	 * that many (at fewer, the trace's own Gather fails): a least value
	 * of a run-time length, which makes the slice en steps long */
	/* (the time axis of the recurrence's input: a sequence of frames read
	 * through its time-major [T, B, N] view has it first) */
	const ir_attr *sa = ir_attr_find(rec, "seq_axis");
	int ax = sa && sa->n > s ? (int)sa->ints[s] : R->seq[s].axis;
	ir_dim d = rec->in[s]->shape.d[ax];
	if (en > 0 && !ir_dim_is_const(d) && !ir_sym_need(g, d, en))
		return 1;
	ir_node *sl = reroll_axis_slice(g, rec->in[s], 0, en, ax, 1, NULL);
	sl->origin = origin;
	sl->out[0]->role = role;
	if (infer_node(g, sl, &q))
		return 1;
	rec->in[s] = sl->out[0];
	ir_node **nodes = arena_array(R->A, (size_t)g->nnodes + 1, sizeof *nodes);
	int k = 0;
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i] == rec)
			nodes[k++] = sl;
		nodes[k++] = g->nodes[i];
	}
	ir_set_nodes(g, nodes, k);
	return 0;
}

/* What the steps of reroll_make_time_symbolic share. */
typedef struct tsym {
	rr *R;
	ir_node *rec;
	fixed_recs *F;
	ir_graph *g;
	int T;
	ir_value *x0;           /* the first sequence */
	ir_dim d0;              /* its length: a symbol when have_sym */
	int have_sym;           /* the sequences' time axis is symbolic already */
	int64_t L;              /* a static export's traced length of the sequences */
	ir_node *up;            /* the earlier loop whose stacked output x0 is (fixed_upstream) */
	ir_node *chain[FIXED_MAX]; /* up, the loop whose output up reads, .., the first layer's */
	int nchain;
	int at, at_up;          /* positions of rec and of the first layer's loop */
	/* the attempt, undone on failure */
	int nv, saved_nsyms;
	ir_shape *saved;        /* [nv] every value's shape before */
	ir_node *re_node[IR_MAX_INPUTS_SAVE];   /* sequence re_seq of re_node read re_old before */
	int re_seq[IR_MAX_INPUTS_SAVE];
	ir_value *re_old[IR_MAX_INPUTS_SAVE];
	int nre;
	ir_dim Ts, Tin, Tc;     /* the loop's length, the sequences', the traced one */
} tsym;

/* Why the sequences keep the traced T (NULL: they may take a symbol):
 * every one a graph input (or computed from one: seq_input) read only by
 * the loop, of one length; a static export's loop may leave the last steps
 * unread (S->L). */
static const char *sequences_fixed(tsym *S)
{
	rr *R = S->R;
	int T = S->T;
	/* A dynamic time axis's traced length is not in the file: the loop is
	 * taken to read all of it.  After a first step that reads something
	 * else, the loop may as well leave the last step unread (x[t-1] after a
	 * start token): the file cannot tell, T stays. */
	if (S->have_sym && !S->up && has_prologue_step(R, S->rec))
		return arena_printf(R->A, "T stays %d: a step before the loop (a start token's) reads no step of "
				    "'%s', and with a dynamic time axis the file cannot tell whether the loop "
				    "reads all of it or leaves its last step (x[t-1] after the start token); "
				    "export it with a static time axis, or give the loop torch.cat([start, "
				    "x[:-1]]) to read", T, S->x0->name);
	for (int s = 0; s < R->nseq && !S->up; s++) {
		ir_value *x = R->seq[s].src;
		ir_dim dx = x->shape.d[R->seq[s].axis];
		if (ir_dim_is_const(dx) && dx.k != T) {
			/* a static export whose loop leaves the last steps unread
			 * (a first step before it that reads a start token, or
			 * range(T - 1)): the loop runs that many fewer steps than the
			 * input has at any length (a derived symbol) */
			if (S->have_sym || S->up || dx.k < T || (s > 0 && dx.k != S->L))
				return arena_printf(R->A, "T stays %d: the loop reads %d of the %lld steps of '%s'", T, T,
						    (long long)dx.k, x->name);
			S->L = dx.k;
		}
		if (S->have_sym) {
			if (!ir_dim_eq(x->shape.d[R->seq[s].axis], S->d0))
				return arena_printf(R->A, "T stays %d: the sequences have different lengths", T);
			continue;
		}
		ir_value *xi = seq_input(x, R->seq[s].axis, NULL, NULL, NULL);
		if (!xi)
			return arena_printf(R->A, "T stays %d: the sequence '%s' is computed, not a graph input",
					    T, x->name);
		if (xi != x && xi->nuses != 1)
			return arena_printf(R->A, "T stays %d: the sequence '%s' is also read outside the "
					    "loop", T, xi->name);
		if (x->nuses != 1)
			return arena_printf(R->A, "T stays %d: the sequence '%s' is also read outside the "
					    "loop", T, x->name);
		for (int s2 = 0; s2 < s; s2++)
			if (R->seq[s2].src == x)
				return arena_printf(R->A, "T stays %d: '%s' is read on two axes", T, x->name);
	}
	return NULL;
}

/* Whether a symbol or a graph input of g is called name. */
static int name_taken(const ir_graph *g, const char *name)
{
	int clash = 0;
	for (int i = 0; i < g->nsyms; i++)
		clash |= strcmp(g->syms[i], name) == 0;
	for (int i = 0; i < g->ninputs; i++)
		clash |= strcmp(g->inputs[i]->name, name) == 0;
	return clash;
}

/* The name of a new symbol: the one the export gave the time axis before
 * a traced x.unbind() fixed it (attribute time_name of rec or of the
 * earlier loop), else T, or T2, T3, .. when taken. */
static const char *symbol_name(const tsym *S)
{
	const ir_graph *g = S->g;
	const char *pinned = ir_attr_string(S->rec, "time_name", NULL);
	for (int k = 0; !pinned && k < S->nchain; k++)
		pinned = ir_attr_string(S->chain[k], "time_name", NULL);
	if (pinned && !name_taken(g, pinned))
		return pinned;
	const char *sname = "T";
	for (int k = 2; k < 100 && name_taken(g, sname); k++)
		sname = arena_printf(S->R->A, "T%d", k);
	return sname;
}

const char *reroll_pinned_time_name(rr *R)
{
	for (int s = 0; s < R->nseq && !R->gen; s++) {
		/* the Split itself, or a Slice pass_gates made of one part of it
		 * (its origin: the Split's name) */
		const ir_node *a = R->seq[s].anchor[0];
		const ir_node *sp = R->seq[s].aux[0] ? R->seq[s].aux[0]
				    : a && a->nin > 0 && a->in[0] ? a->in[0]->producer : NULL;
		const char *from = !sp ? NULL : sp->op == OP_SPLIT ? sp->name : sp->op == OP_SLICE ? sp->origin : NULL;
		if (!from)
			continue;
		for (int i = 0; i < R->g->nlinks; i++) {
			const ir_sym_link *l = &R->g->links[i];
			if (!l->at_least && !l->into && l->node && !strcmp(l->node, from) && l->value == R->T)
				return l->name;
		}
	}
	return NULL;
}

/* Whether n is one of the earlier loops S frees. */
static int in_chain(const tsym *S, const ir_node *n)
{
	for (int k = 0; k < S->nchain; k++)
		if (S->chain[k] == n)
			return 1;
	return 0;
}

/* Why the nodes after the recurrence (and after the first of the earlier
 * ones whose outputs it reads) keep T (NULL: every one keeps T out of its
 * parameters). */
static const char *downstream_fixed(tsym *S)
{
	ir_graph *g = S->g;
	int T = S->T;
	S->at = S->at_up = -1;
	for (int i = 0; i < g->nnodes; i++) {
		if (g->nodes[i] == S->rec)
			S->at = i;
		if (S->nchain && g->nodes[i] == S->chain[S->nchain - 1])
			S->at_up = i;
	}
	if (S->up && S->at_up > S->at)
		return arena_printf(S->R->A, "T stays %d: the loop over '%s' comes after its reader", T, S->x0->name);
	for (int i = (S->up ? S->at_up : S->at) + 1; i < g->nnodes; i++)
		if (g->nodes[i] != S->rec && !in_chain(S, g->nodes[i]) && !time_safe(g->nodes[i]))
			return arena_printf(S->R->A, "T stays %d: node '%s' (%s) after the loop may depend on the "
					    "traced length", T, g->nodes[i]->name, ir_op_name(g->nodes[i]->op));
	return NULL;
}

/* The earlier loops read their sequences whole again (S->re_* keeps what
 * they read), from the first layer's on, and their stacked outputs get the
 * symbolic length.  1 when too many sequences are reconnected to undo. */
static int upstream_whole(tsym *S)
{
	diag q;
	diag_init(&q, S->R->D->file);
	q.quiet = 1;
	for (int c = S->nchain - 1; c >= 0; c--) {
		ir_node *up = S->chain[c];
		int nseq = (int)ir_attr_int(up, "n_seq", 0);
		const ir_attr *sa = ir_attr_find(up, "seq_axis");
		for (int s = 0; s < nseq; s++) {
			ir_value *whole = traced_slice_source(up, s);
			if (c + 1 < S->nchain && up->in[s] && up->in[s]->producer == S->chain[c + 1])
				continue;       /* the earlier layer's output: its shape is set */
			if (!whole) {
				/* a static export's graph input (or a sequence computed from
				 * one): its time axis becomes the symbol */
				ir_node *ch[CHAIN_MAX];
				int nc = 0, xa = (int)sa->ints[s];
				ir_value *xi = seq_input(up->in[s], xa, ch, &nc, &xa);
				xi->shape.d[xa] = S->Ts;
				for (int k = 0; k < nc; k++)
					infer_node(S->g, ch[k], &q);
				continue;
			}
			if (S->nre == IR_MAX_INPUTS_SAVE)
				return 1;
			S->re_node[S->nre] = up;
			S->re_seq[S->nre] = s;
			S->re_old[S->nre++] = up->in[s];
			up->in[s]->nuses--;
			up->in[s] = whole;
			whole->nuses++;
		}
		int ns = (int)ir_attr_int(up, "n_state", 0);
		const ir_attr *oa = ir_attr_find(up, "out_axis");
		for (int k = ns; k < up->nout; k++)
			if (up->out[k])
				up->out[k]->shape.d[oa->ints[k - ns]] = S->Ts;
	}
	return 0;
}

/* The graph inputs get the symbol; a sequence computed from one (a slice
 * x[:-1], a start token concatenated in front) gets the length that
 * re-infers, which must be its traced one at the traced length; the
 * recurrence's stacked outputs get the loop's.  Why not (NULL: they do). */
static const char *sequences_symbolic(tsym *S)
{
	rr *R = S->R;
	ir_graph *g = S->g;
	int T = S->T;
	const char *chain_why = NULL;
	ir_dim Tin0 = S->Tin;
	for (int s = 0; s < R->nseq; s++) {
		ir_node *chain[CHAIN_MAX];
		int nc = 0;
		int xa = R->seq[s].axis;
		ir_value *x = R->seq[s].src;
		ir_value *xi = seq_input(x, R->seq[s].axis, chain, &nc, &xa);
		ir_dim D = Tin0;
		if (S->have_sym) {
			/* a dynamic time axis: the sequences keep theirs (checked equal) */
			D = x->shape.d[R->seq[s].axis];
		} else if (xi && xi != x) {
			ir_dim Lx = x->shape.d[R->seq[s].axis], Lin = xi->shape.d[xa];
			xi->shape.d[xa] = Tin0;
			diag q0;
			diag_init(&q0, R->D->file);
			q0.quiet = 1;
			for (int c = 0; c < nc; c++)
				infer_node(g, chain[c], &q0);
			D = x->shape.d[R->seq[s].axis];
			if (!S->have_sym && !(ir_dim_is_const(Lin) && traced_as(g, Tin0, Lin.k, D, &Lx)))
				chain_why = arena_printf(R->A, "T stays %d: the length of the sequence '%s' does not "
							 "follow that of '%s'", T, x->name, xi->name);
		}
		x->shape.d[R->seq[s].axis] = D;
		/* a sequence of another rank read through its [T, B, N] view (a
		 * Transpose and a Reshape, reroll_build.c) */
		ir_node *view[2];
		int nview = 0;
		for (ir_value *ri = S->rec->in[s]; ri != x && nview < 2 && ri->producer; ri = ri->producer->in[0])
			view[nview++] = ri->producer;
		for (int k = nview - 1; k >= 0 && view[nview - 1]->in[0] == x; k--) {
			diag q1;
			diag_init(&q1, R->D->file);
			q1.quiet = 1;
			infer_node(g, view[k], &q1);
		}
		if (s == 0)
			S->Tin = D;
		else if (!ir_dim_eq(D, S->Tin) && !chain_why)
			chain_why = arena_printf(R->A, "T stays %d: the sequences have different lengths", T);
	}
	if (!S->have_sym && !chain_why && !ir_dim_eq(S->Tin, Tin0)) {
		/* a computed sequence: the loop's length from its length */
		S->Ts = S->Tin;
		if (S->L != T && !ir_sym_offset(g, S->Tin, T - S->L, &S->Ts))
			chain_why = arena_printf(R->A, "T stays %d: no dimension symbol is left", T);
	}
	int ns = (int)ir_attr_int(S->rec, "n_state", 0);
	const ir_attr *oa = ir_attr_find(S->rec, "out_axis");
	for (int k = ns; k < S->rec->nout; k++) {
		ir_value *o = S->rec->out[k];
		if (o)
			o->shape.d[oa->ints[k - ns]] = S->Ts;
	}
	return chain_why;
}

/* Whether dim d is the loop's length or the sequences' at the trace. */
static int is_time_dim(const tsym *S, ir_dim d)
{
	return !ir_dim_is_const(d) && (ir_dim_eq(d, S->Ts) || traced_as(S->g, S->Tin, S->L, d, NULL));
}

/* Why node n, re-inferred, makes T part of the computation (NULL: it does
 * not): every dim of its outputs that changed (before: the shapes before)
 * must be the traced T become the symbol, a Gather on the time axis must
 * pick the last step, a Slice may only reverse it, and Softmax must work
 * along another axis.  (A Concat along the time axis is sound: its length
 * re-infers to the symbol whose traced value it had, 1 + (T - 1).) */
static const char *node_fixes_time(const tsym *S, const ir_node *n, const ir_shape *before)
{
	rr *R = S->R;
	int T = S->T;
	for (int k = 0; k < n->nout && k < 8; k++) {
		if (!n->out[k])
			continue;
		ir_shape a = before[k], b = n->out[k]->shape;
		int ok = a.rank == b.rank;
		for (int d = 0; d < a.rank && ok; d++)
			ok = ir_dim_eq(a.d[d], b.d[d]) || (ir_dim_eq(a.d[d], S->Tc) && ir_dim_eq(b.d[d], S->Ts)) ||
			     traced_as(S->g, S->Tin, S->L, b.d[d], &a.d[d]);
		if (!ok)
			return arena_printf(R->A, "T stays %d: node '%s' (%s) changes the time axis",
					    T, n->name, ir_op_name(n->op));
	}
	if (n->op == OP_GATHER) {
		ir_value *x = n->in[0];
		int64_t ax = ir_attr_int(n, "axis", 0);
		if (ax < 0)
			ax += x->shape.rank;
		if (ax >= 0 && ax < x->shape.rank && ir_dim_eq(x->shape.d[ax], S->Ts) &&
		    !(ir_value_is_const(n->in[1]) && ir_shape_const_numel(&n->in[1]->shape) == 1 &&
		      ir_const_int(n->in[1], 0) == -1))
			return arena_printf(R->A, "T stays %d: node '%s' picks a fixed step", T, n->name);
	}
	if (n->op == OP_SLICE) {
		ir_value *x = n->in[0];
		const char *why = NULL;
		for (int e = 0; e < ir_shape_const_numel(&n->in[3]->shape); e++) {
			int64_t a = ir_const_int(n->in[3], e);
			/* reversing the whole axis does not depend on its length */
			int whole_rev = n->nin >= 5 && n->in[1] && n->in[2] && n->in[4] &&
					ir_const_int(n->in[1], e) == -1 && ir_const_int(n->in[2], e) == INT64_MIN &&
					ir_const_int(n->in[4], e) == -1;
			if (a >= 0 && a < x->shape.rank && ir_dim_eq(x->shape.d[a], S->Ts) && !whole_rev)
				why = arena_printf(R->A, "T stays %d: node '%s' slices the time axis", T, n->name);
		}
		return why;
	}
	if (n->op == OP_SOFTMAX || n->op == OP_LOGSOFTMAX) {
		ir_value *x = n->in[0];
		int64_t ax = ir_attr_int(n, "axis", -1);
		if (ax < 0)
			ax += x->shape.rank;
		if (ax >= 0 && ax < x->shape.rank && ir_dim_eq(x->shape.d[ax], S->Ts))
			return arena_printf(R->A, "T stays %d: node '%s' (%s) works along the time axis",
					    T, n->name, ir_op_name(n->op));
	}
	return NULL;
}

/* A Reshape after the loop whose target the trace baked as constants,
 * each the product of consecutive axes of its input at the traced length
 * (output.view(output.size(0) * output.size(1), ...): [T * B, H] of
 * [T, B, H] written [16, H]): the target becomes those products of the
 * input's axes now.  No other reading of such a target runs at another
 * length (the constant holds T's traced value), so this is the one the
 * trace means.  Returns whether it rewrote the target. */
static int reshape_follows(tsym *S, ir_node *n)
{
	ir_value *x = n->in[0], *shp = n->nin > 1 ? n->in[1] : NULL;
	if (n->op != OP_RESHAPE || !x || !shp || !ir_value_is_const(shp) || shp->shape.rank != 1 ||
	    x->id < 0 || x->id >= S->nv || S->g->values[x->id] != x)
		return 0;
	const ir_shape *was = &S->saved[x->id], *now = &x->shape;
	int64_t m = ir_shape_const_numel(&shp->shape);
	if (was->rank != now->rank || m < 1 || m > IR_MAX_RANK)
		return 0;
	ir_dim to[IR_MAX_RANK];
	int a = 0, changed = 0;
	for (int64_t j = 0; j < m; j++) {
		ir_dim e = infer_elem_dim(shp, j), w = ir_dim_const(1), v = ir_dim_const(1);
		if (ir_dim_is_const(e) && e.k < 1)
			return 0;       /* 0 and -1 re-infer by themselves */
		while (a < was->rank && !ir_dim_eq(w, e)) {
			w = ir_dim_mul(w, was->d[a]);
			v = ir_dim_mul(v, now->d[a++]);
		}
		if (!ir_dim_eq(w, e))
			return 0;
		changed |= !ir_dim_eq(v, e);
		to[j] = v;
	}
	if (a != was->rank || !changed)
		return 0;
	n->in[1]->nuses--;
	n->in[1] = ir_const_dims(S->g, to, (int)m);
	n->in[1]->nuses++;
	return 1;
}

/* The nodes after the loop that read the time axis, re-inferred: why T
 * stays (NULL: the graph re-infers with the symbol). */
static const char *reinfer_after(tsym *S)
{
	ir_graph *g = S->g;
	diag q;
	diag_init(&q, S->R->D->file);
	q.quiet = 1;
	for (int i = (S->up ? S->at_up : S->at) + 1; i < g->nnodes; i++) {
		ir_node *n = g->nodes[i];
		if (n == S->rec || in_chain(S, n))
			continue;
		ir_shape before[8];
		for (int k = 0; k < n->nout && k < 8; k++)
			before[k] = n->out[k] ? n->out[k]->shape : (ir_shape){.rank = -1};
		int touches = 0;
		for (int k = 0; k < n->nin; k++)
			if (n->in[k])
				for (int a = 0; a < n->in[k]->shape.rank; a++)
					touches |= is_time_dim(S, n->in[k]->shape.d[a]);
		if (!touches)
			continue;
		ir_value *target = n->nin > 1 ? n->in[1] : NULL;
		if (n->op == OP_RESHAPE && S->nre < IR_MAX_INPUTS_SAVE && reshape_follows(S, n)) {
			S->re_node[S->nre] = n;         /* (undo puts the constant back) */
			S->re_seq[S->nre] = 1;
			S->re_old[S->nre++] = target;
		}
		if (infer_node(g, n, &q))
			return arena_printf(S->R->A, "T stays %d: node '%s' (%s) does not infer with a symbolic "
					    "length", S->T, n->name, ir_op_name(n->op));
		const char *why = node_fixes_time(S, n, before);
		if (why)
			return why;
	}
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i]->kind == VAL_CONST)
			return arena_printf(S->R->A, "T stays %d: output '%s' is a constant", S->T, g->outputs[i]->name);
	return NULL;
}

/* Puts back what the attempt changed: shapes, symbols, the earlier loop's
 * inputs. */
static void undo(tsym *S)
{
	ir_graph *g = S->g;
	for (int v = 0; v < S->nv; v++)
		g->values[v]->shape = S->saved[v];
	g->nsyms = S->saved_nsyms;
	for (int k = S->nre - 1; k >= 0; k--) {
		ir_node *n = S->re_node[k];
		int s = S->re_seq[k];
		n->in[s]->nuses--;
		n->in[s] = S->re_old[k];
		n->in[s]->nuses++;
	}
}

/* Re-infers the graph with the traced T replaced by a dimension symbol; on
 * any doubt puts everything back and explains (the reason returned). */
const char *reroll_make_time_symbolic(rr *R, ir_node *rec, fixed_recs *F)
{
	ir_graph *g = R->g;
	int T = R->T;
	tsym S = {.R = R, .rec = rec, .F = F, .g = g, .T = T, .x0 = R->seq[0].src, .L = T};
	S.d0 = S.x0->shape.d[R->seq[0].axis];
	S.have_sym = !ir_dim_is_const(S.d0);
	/* an earlier loop's stacked output: that loop's symbolic length */
	if (!S.have_sym && R->nseq == 1) {
		ir_dim dl;
		S.nchain = fixed_upstream(F, S.x0, R->seq[0].axis, S.chain, &dl);
		S.up = S.nchain ? S.chain[0] : NULL;
		if (S.up && !ir_dim_is_const(dl)) {
			S.d0 = dl;
			S.have_sym = 1;
		}
	}
	const char *why = sequences_fixed(&S);
	if (why)
		return why;
	/* the symbol: the input's own when it has one, else a new one */
	const char *sname = symbol_name(&S);
	if (!S.have_sym && g->nsyms >= IR_MAX_SYMS)
		return arena_printf(R->A, "T stays %d: no dimension symbol is left", T);
	if ((why = downstream_fixed(&S)))
		return why;
	/* save shapes, try, restore on failure */
	S.nv = g->nvalues;
	S.saved = arena_array(R->A, (size_t)S.nv + 1, sizeof *S.saved);
	for (int v = 0; v < S.nv; v++)
		S.saved[v] = g->values[v]->shape;
	S.saved_nsyms = g->nsyms;
	S.Ts = S.d0;
	if (!S.have_sym)
		S.Ts = ir_dim_sym(ir_sym_add(g, sname));
	/* Tin: the sequences' length; Ts: the loop's, L - T steps fewer */
	S.Tin = S.Ts;
	if (S.L != T && !ir_sym_offset(g, S.Tin, T - S.L, &S.Ts)) {
		g->nsyms = S.saved_nsyms;
		return arena_printf(R->A, "T stays %d: no dimension symbol is left", T);
	}
	S.Tc = ir_dim_const(T);
	if (upstream_whole(&S))
		why = arena_printf(R->A, "T stays %d: the loops before the one over '%s' read too many sequences", T,
				   S.x0->name);
	if (!why)
		why = sequences_symbolic(&S);
	if (!why)
		why = reinfer_after(&S);
	if (why) {
		undo(&S);
		return why;
	}
	/* the loop reads the first Ts of the Tin steps (x[:T - L]: the derived
	 * symbol made above, so the slice infers) */
	for (int s = 0; S.L != T && s < R->nseq; s++)
		if (slice_sequence(R, rec, s, T - S.L, "the steps the loop reads (it leaves the last ones)",
				   IR_ROLE_NONE))
			return arena_printf(R->A, "T stays %d: cannot slice the steps it reads", T);
	/* the axis a traced x.unbind() had fixed is the export's symbol again:
	 * the link that fixed it goes with the Split */
	int freed = !strcmp(sname, ir_attr_string(rec, "time_name", ""));
	for (int k = 0; k < S.nchain; k++)
		freed |= !strcmp(sname, ir_attr_string(S.chain[k], "time_name", ""));
	if (!S.have_sym && freed)
		ir_sym_link_drop(g, sname);
	ir_attr_remove(rec, "time_name");
	for (int k = 0; k < S.nchain; k++) {
		/* no longer fixed: its note goes, and so do the slices (unread now) */
		ir_attr_remove(S.chain[k], "time_note");
		ir_attr_remove(S.chain[k], "time_name");
		for (int i = 0; i < F->n; i++)
			if (F->rec[i] == S.chain[k])
				F->rec[i] = F->rec[--F->n];
	}
	return NULL;
}

/* A symbolic time axis that cannot stay symbolic: the recurrence reads the
 * traced steps only (x[0:T] on the time axis), as the trace did. */
int reroll_slice_traced_steps(rr *R, ir_node *rec)
{
	for (int s = 0; s < R->nseq; s++) {
		ir_value *x = R->seq[s].src;
		ir_dim d = x->shape.d[R->seq[s].axis];
		if (ir_dim_is_const(d) && d.k == R->T)
			continue;
		if (slice_sequence(R, rec, s, R->T, "the steps a trace read", IR_ROLE_TRACE_STEPS)) {
			diag_error(R->D, "cannot slice the %d traced steps of '%s'", R->T, x->name);
			return 1;
		}
	}
	return 0;
}
