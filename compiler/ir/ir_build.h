/* ir_build.h: the IR rewrite toolkit (ir_build.c).  What the passes and
 * front ends use to change a graph, instead of a private copy each:
 *
 *   ir_replace_uses   every read of one value reads another
 *   ir_drop_dead      dead-code removal (nodes nothing needs; optionally values)
 *   ir_live           the liveness ir_drop_dead decides by, for a pass to read
 *   ir_build_*        new nodes: inputs, outputs, provenance, appended and
 *                     inferred (infer_node) as they are made
 *   ir_clone_node     a node doing what another does, with every attribute
 *   ir_rewrite_nodes  nodes replaced in place by what a rewrite makes of them
 *   ir_inline_step    a recurrence of one step written as its step's nodes
 *
 * Where the callers differed in what they needed, the difference is an
 * option below, documented with the callers that take it; none of them
 * changes what the others do.
 */
#ifndef CELLC_IR_BUILD_H
#define CELLC_IR_BUILD_H

#include "diag.h"
#include "ir.h"

/* ---- replacing a value -------------------------------------------------------------- */

/* Every input of a node of g (but `except`, which may be NULL) that reads
 * `from` reads `to` instead, and every result of those nodes that pass_grad
 * linked to `from` (ir_value.grad_of, recomputes) is linked to `to`.
 * Returns the number of reads replaced.
 *   IR_USES_NESTED   also the nodes of the bodies nested in g's nodes
 *                    (ir_node.body, at any depth): `from` may be captured
 *                    there (pass_canon: a view dropped in the root whose
 *                    result a recurrence's body reads);
 *   IR_USES_GRAPHS   also the graphs of g's graph attributes (ATTR_GRAPH:
 *                    the branches of an If not inlined yet; at any depth,
 *                    and the bodies in them with IR_USES_NESTED: onnx_loop's
 *                    value replaced in a Loop body and all it holds);
 *   IR_USES_OUTPUTS  also the output list of g and of each graph visited
 *                    (a body output that is `from`: pass_hoist, onnx_loop's
 *                    bodies).  The values' is_output flags stay as they are.
 * Without IR_USES_NESTED and IR_USES_GRAPHS only g's own nodes change.  Use
 * counts (nuses) are not updated: ir_recount after. */
enum {
	IR_USES_NESTED = 1 << 0,
	IR_USES_GRAPHS = 1 << 1,
	IR_USES_OUTPUTS = 1 << 2,
};
int ir_replace_uses(ir_graph *g, const ir_value *from, ir_value *to, const ir_node *except, unsigned flags);

/* ---- dead code ---------------------------------------------------------------------- */

/* Drops the nodes of g (the root or a body; nested bodies are not swept)
 * that nothing needs, keeping the order of the others; returns how many
 * went.  A node is live when one of its outputs is needed; besides, by
 * default a node with a body (a recurrence) is always live, and a node with
 * no outputs never is.  A value of g is needed:
 *   by default ("counted"): when it has uses as last counted (nuses > 0, from
 *     an ir_recount of g or of a graph around it) or is an output of g
 *     (is_output, or in g's output list).  The nodes go to the fixpoint: a
 *     node that goes takes its reads off the counts (reads in its body
 *     included), so what only it read goes as well.  On return the counts
 *     are as ir_recount would make them, an output of a node that went has
 *     no producer and the node ids are the new positions;
 *   IR_DEAD_LOCAL: when it is in g's output list, or read by a live node
 *     of g or by a node of a body or an If branch nested in one (any depth;
 *     a nested body's outputs count as read).  Nothing of the values is trusted or changed:
 *     neither nuses nor is_output nor producers (a body being built, whose
 *     counts are not made yet: onnx_loop, pass_split, pass_grad).
 * Options:
 *   IR_DEAD_ONCE    (counted only) one sweep on the counts as they are: the
 *                   nodes whose outputs nothing reads now go, what only they
 *                   read stays (pass_canon's bodies between its rounds);
 *   IR_DEAD_BODIES  a node with a body is live only when an output is
 *                   needed, as any other (pass_infer's final sweep, the
 *                   backward bodies of pass_grad, pass_hoist's unread
 *                   recurrences);
 *   IR_DEAD_SINKS   a node with no outputs is live (pass_split);
 *   IR_DEAD_TEMPS   then the temporaries of g that no node of g produces
 *                   any more and nothing needs leave g's value list
 *                   (pass_canon, pass_reroll);
 *   IR_DEAD_VALUES  then every value of g that nothing needs leaves the
 *                   list, but graph inputs (kind VAL_INPUT, or in g's input
 *                   list), values a node of g produces and tensors an
 *                   attribute of g's nodes holds (pass_infer, onnx_loop).
 *                   With these two, the ids of the values that stay are
 *                   their new positions (a value whose id was not its
 *                   position stays, as it is);
 *   IR_DEAD_VALUES_ONLY  every node stays (counts as live): only values go,
 *                   with IR_DEAD_TEMPS or IR_DEAD_VALUES (onnx_loop, after
 *                   rewriting a body its sweep had left). */
enum {
	IR_DEAD_ONCE = 1 << 0,
	IR_DEAD_BODIES = 1 << 1,
	IR_DEAD_SINKS = 1 << 2,
	IR_DEAD_LOCAL = 1 << 3,
	IR_DEAD_TEMPS = 1 << 4,
	IR_DEAD_VALUES = 1 << 5,
	IR_DEAD_VALUES_ONLY = 1 << 6,
};
int ir_drop_dead(ir_graph *g, unsigned flags);

/* The liveness of ir_drop_dead(g, flags | IR_DEAD_LOCAL) with the values
 * roots[0 .. nroots-1] needed too (those g owns; others are ignored),
 * changing nothing: *node_live (if not NULL) gets a flag per node index of
 * g, *needed (if not NULL) one per value id of g (a value whose id is not
 * its position in g's list reads as not needed); both in g's arena. */
void ir_live(ir_graph *g, ir_value *const *roots, int nroots, unsigned flags, char **node_live, char **needed);

/* ---- building nodes ----------------------------------------------------------------- */

/* How a pass or front end makes its nodes: a description shared by the
 * nodes it makes (one per pass, lowering or gradient context), passed to
 * each call.  Every field may be 0/NULL. */
typedef struct ir_build {
	const char *origin;     /* the nodes' provenance (ir_node.origin) */
	int opset;              /* their opset; 0: the root graph's (ir_node_new's) */
	const char *out_base;   /* base of the made-up names of their outputs
	                           (ir_unique_name); NULL: ir_value_new's */
	diag *D;                /* ir_build_done infers the outputs (infer_node) and
	                           reports a failure here; NULL: no inference */
	const ir_node *blame;   /* the node such a failure names; NULL: the new one */
	const char *what;       /* the failure's words: "internal error: cannot infer
	                           the shape of the WHAT OP" */
	int *errors;            /* counts the failures; NULL: nothing counts */
} ir_build;

/* A node op of graph g (named by ir_node_new) with nin inputs, in[0 ..
 * nin-1] (in may be NULL: all NULL) and nout outputs, all NULL; origin and
 * opset as B says.  Not appended: add attributes, then ir_build_done (or
 * ir_build_out and place it where it goes). */
ir_node *ir_build_node(const ir_build *B, ir_graph *g, ir_op op, int nin, ir_value *const *in, int nout);
/* Output k of n: a new VAL_TEMP of n's graph of dtype dt (named from
 * B->out_base), whose producer is n.  Returns it. */
ir_value *ir_build_out(const ir_build *B, ir_node *n, int k, ir_dtype dt);
/* Finishes n: output 0 is `out` when given, else the one n has, else a new
 * f32 temporary (ir_build_out); the node gets B's origin (when B has one),
 * is appended to its graph and, with B->D, inferred (a failure is reported
 * on B->D and counted in B->errors).  Returns output 0. */
ir_value *ir_build_done(const ir_build *B, ir_node *n, ir_value *out);
/* ir_build_done(B, ir_build_node(B, g, op, nin, in, 1), NULL). */
ir_value *ir_build_op(const ir_build *B, ir_graph *g, ir_op op, int nin, ir_value *const *in);

/* ---- cloning ------------------------------------------------------------------------ */

/* A node of graph g doing what n does: n's op, n->nin inputs read as n's
 * (the caller remaps them), nout outputs (nout < 0: n->nout), all NULL,
 * n's origin as it is, and every attribute of n: in an array of its own,
 * so that changing the clone's attributes leaves n's alone (a rewrite that
 * wants one attribute less removes it from the clone: ir_attr_remove).
 * name NULL: a made-up one (ir_node_new's).  Not appended.
 *   IR_CLONE_SOURCE       also n's op_type, domain and opset (as the source
 *                         spelled it); without it those are ir_node_new's
 *                         (the op's name, the default domain, the root's
 *                         opset);
 *   IR_CLONE_SHARE_ATTRS  the attribute array is n's own (the same pointer):
 *                         pass_split's common subexpressions take nodes with
 *                         one array as having equal attributes.  Then
 *                         neither node's attributes may be changed in
 *                         place (ir_attr_set_* of a name it has). */
enum {
	IR_CLONE_SOURCE = 1 << 0,
	IR_CLONE_SHARE_ATTRS = 1 << 1,
};
ir_node *ir_clone_node(ir_graph *g, const ir_node *n, const char *name, int nout, unsigned flags);

/* ---- rewriting nodes in place ------------------------------------------------------- */

/* Rebuilds g's node list in order: for each node n, rewrite(g, n, ctx)
 * either returns -1 (n stays where it is) or appends to g what n becomes
 * and returns its number of errors (n itself goes unless rewrite appended
 * it).  So the nodes a rewrite makes take the place of the node they
 * replace, before its readers (pass_lower_rnn, pass_onestep).  Returns the
 * errors summed. */
int ir_rewrite_nodes(ir_graph *g, int (*rewrite)(ir_graph *g, ir_node *n, void *ctx), void *ctx);

/* ---- a recurrence of one step as its step ----------------------------------------- */

/* Whether recurrence r of graph g runs exactly one step and can be written
 * as its body (ir_inline_step): every per-step input has a constant 1 on
 * its time axis, no sequence_lens, every state an f32 of known rank where
 * no initial value is given (it starts at zeros), and no node of the body
 * has a body of its own. */
int ir_inline_step_ok(const ir_graph *g, const ir_node *r);
/* Appends to g the nodes that compute what r computes, its body's nodes
 * cloned with every attribute, reading: each per-step input with its time
 * axis squeezed, the initial states (zeros where r has none), step
 * scalars t = L = 1, and the
 * values the body reads from enclosing graphs as they are (the constants
 * the body owns copied into g); r's outputs are written by the new nodes
 * (a final state through an Identity, a stacked output through an
 * Unsqueeze on its time axis), so their readers and names stay.  The new
 * nodes are inferred as made (B->D).  r itself is neither appended nor
 * removed: the caller rebuilds g's node list with the new nodes in r's
 * place (pass_onestep), which ir_inline_step_ok(g, r) must allow.  Returns
 * the number of inference failures (reported on B->D). */
int ir_inline_step(const ir_build *B, ir_graph *g, ir_node *r);

#endif
