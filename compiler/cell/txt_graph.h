/* txt_graph.h: what txt_graph.c (declarations, nodes, outputs: the graph
 * block) and txt_value.c (dimensions, types, constant data, attributes)
 * share while reading a `graph NAME { ... }` block.  Private to those two.
 */
#ifndef CELLC_TXT_GRAPH_H
#define CELLC_TXT_GRAPH_H

#include "txt.h"

/* A name -> value table for the whole compilation (txt_graph.c). */
typedef struct vtab {
	ir_value **slot;
	size_t cap, n;
} vtab;

typedef struct gctx {
	txt *X;
	vtab names;
	txt_weights W;
	int64_t maxsuffix;      /* largest N of made-up names "%...N" (ir_unique_name) */
	/* a training build's parameters as the text numbers them (`param K`) */
	int nparams;
	ir_value **params;      /* [nparams] */
	int64_t *param_k;       /* [nparams] */
	const txt_tok *train_at;/* the `train` line, for its errors */
	const txt_tok *value_at[IR_MAX_SYMS];   /* `SYM = value %IN`: %IN, checked after the inputs */
	/* `grad_of %V %F` and `recomputes %V %F` of node lines: F may be a
	 * value of another body, so it is looked up once the graph is read */
	int nlinks;
	struct txt_link *links; /* [nlinks] */
} gctx;

/* A value's link to another (ir_value.grad_of or .recomputes) as a node
 * line gives it: resolved after the graph (txt_graph.c). */
typedef struct txt_link {
	ir_value *v;            /* the node's output */
	int recomputes;         /* 0: grad_of; 1: recomputes */
	const txt_tok *kw;      /* the word, for messages */
	const txt_tok *target;  /* %F */
} txt_link;

/* The index of symbol `name` of root, -1 if there is none. */
int txt_sym_lookup(const ir_graph *root, const char *name);
/* A symbol name: identifier or quoted string. */
const char *txt_sym_name(txt *X);
/* "T >= 2" (after the '>'): the least value of symbol k of g (sym_min). */
void txt_parse_sym_min(txt *X, ir_graph *g, int k);
/* A derived symbol's definition after "NAME =" for symbol k of g. */
void txt_parse_derived_sym(txt *X, ir_graph *g, int k, const txt_tok *at);
/* One dimension as ir_print writes it ("4", "batch", "4*seq*batch"): 1, or
 * 0 after reporting. */
int txt_parse_dim(txt *X, ir_graph *g, ir_dim *d);
/* DATA after '=' for a constant v of known dtype and shape. */
int txt_parse_const_data(gctx *c, ir_graph *g, ir_value *v, const txt_tok *at);
/* One attribute of node n (1, or 0 after reporting); *ngraphs counts its
 * `graph` attributes. */
int txt_parse_attr(gctx *c, ir_graph *g, ir_node *n, int *ngraphs);

#endif
