/* lower.h: the lowering of ONNX control flow and sequences into tensor
 * operators and recurrences: the resolving stages `seq` (lower_seq.c) and
 * `loops` (lower_loop.c), whose rounds (pass_seq, pass_loops: passes.h)
 * call these functions on nodes whose inputs are settled.  The names keep
 * the onnx_ prefix of the operators they lower.
 */
#ifndef CELLC_LOWER_H
#define CELLC_LOWER_H

#include "diag.h"
#include "ir.h"

/* ONNX Loop/Scan -> RECURRENCE (lower_loop.c).  pass_loops calls it on a
 * Loop/Scan node n of graph g whose inputs (and the values its body reads)
 * are settled: inferred and folded (passes.h, resolve_settled).  infer(cx,
 * body) must resolve, infer and fold the nodes of a body graph and return
 * the number of errors (pass_loops: resolve_body).  Returns the nodes that
 * replace n, in order (the RECURRENCE with its outputs set; the others still
 * to be inferred), count in *count; NULL after reporting errors.  Users of
 * sequences the loop accumulates (ConcatFromSequence, SequenceAt,
 * SequenceLength later in g) are rewritten in place into tensor operators. */
typedef int (*onnx_infer_fn)(void *cx, ir_graph *body);
ir_node **onnx_loop_expand(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int *count);
/* Whether op is an ONNX sequence operator: pass_seq leaves those that read
 * a Loop's accumulation to onnx_loop_expand, and its finish reports the ones
 * still in use with onnx_seq_leftovers (g and its bodies; returns the
 * number of errors). */
int onnx_is_seq_op(ir_op op);
int onnx_seq_leftovers(ir_graph *g, diag *D);

/* Sequences, optionals and If resolved at compile time (lower_seq.c).
 * onnx_seq_node: pass_seq calls it on every node seq_claims (passes.h)
 * whose inputs are settled.
 * Returns 0: not its business (or a Loop's accumulation, left to
 * onnx_loop_expand); 1: resolved: the node is gone, its outputs resolved or
 * produced by the *count nodes in *rep (the node itself among them when it
 * was rewritten into a tensor operator), still to be inferred; -1 after
 * reporting an error (or when an input's producer failed). */
int onnx_seq_node(ir_graph *g, ir_node *n, diag *D, ir_node ***rep, int *count);
/* Whether Loop n carries a resolved sequence or optional (other than the
 * SequenceEmpty accumulation, unless that is a graph output and the trip
 * count a small constant) or reads one: onnx_loop_expand then unrolls it with
 * onnx_loop_unroll (same contract as onnx_loop_expand). */
int onnx_loop_needs_unroll(const ir_node *n);
/* The bound a Loop's condition puts on its iterations (lower_loop.c): the
 * body's condition output is a conjunction (And, Python's short-circuit
 * `and`: If(a) else false, Where(a, b, false); or the term alone) of
 * which one term compares a counter with a value X from outside the loop,
 * `c + k < X` (Less, Greater mirrored, LessOrEqual), c the iteration number
 * or a carried integer that starts at a constant c0 and goes up by 1 each
 * iteration.  Returns X (NULL: no such term) and *off such that the loop
 * runs at most X + *off iterations: PyTorch's export of `for i in
 * range(max_len): ... break` (M the largest int64, `i + 1 < max_len` and
 * the break in the condition) runs at most max_len.  Structural: shapes
 * and folding are not needed (size_inputs.c calls it before inference). */
const ir_value *onnx_loop_cond_limit(const ir_node *n, int64_t *off);
/* A sequence SplitToSequence(x) of one slice per index of its axis that only
 * SequenceAt and SequenceLength read stays a view of x (lower_seq.c):
 * onnx_split_view returns its SplitToSequence node (axis normalised, keep:
 * the slices keep the axis) or NULL; onnx_split_at rewrites SequenceAt n of
 * such a view in place into Gather(x, position, axis), followed by the
 * Unsqueeze *extra (to be placed after n) when the slices keep the axis.
 * Returns 1 when it rewrote n.  lower_loop.c rewrites a body's reads before
 * mapping its iteration number, so that x[t] becomes a scanned input. */
const ir_node *onnx_split_view(const ir_value *S, int *axis, int *keep);
int onnx_split_at(ir_graph *g, ir_node *n, ir_node **extra);
ir_node **onnx_loop_unroll(ir_graph *g, ir_node *n, diag *D, onnx_infer_fn infer, void *cx, int *count);
/* Root graph outputs that are resolved sequences/optionals -> their tensors
 * as outputs named by onnx_seq_flatten.  Returns the number of errors. */
int onnx_seq_outputs(ir_graph *g, diag *D);
/* The tensors value v stands for and their output names: v itself as
 * `name`; a sequence's elements as name_0, name_1, ...; an optional's value
 * as the optional itself (none: no tensors).  Returns the count (at most
 * max), -1 for nested sequences or more than max. */
int onnx_seq_flatten(arena *A, const ir_value *v, const char *name, ir_value **vals, const char **names,
		     int max);
#endif
