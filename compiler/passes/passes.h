/* passes.h: every pass of the pipeline, in the order compile.c runs them.
 *
 * Each pass file (pass_NAME.c) opens with its contract: what it requires,
 * what it produces, what it breaks.  Passes report user errors through the
 * diag and return the number of errors they found (0 = success); ir_verify
 * runs after every pass in test builds (CELLC_VERIFY=1 or `cellc -V`).
 */
#ifndef CELLC_PASSES_H
#define CELLC_PASSES_H

#include "diag.h"
#include "ir.h"

typedef struct pass_opts {
	int train;              /* --train: derived weights at run time, pass_grad runs */
	struct train_opts *topts; /* --train: the loss (train.h); set with train */
	int no_hoist;           /* --no-hoist: keep input projections in the loop (tests) */
	int no_fuse;            /* --no-fuse: one loop per element-wise op (tests) */
	int no_malloc;          /* --no-malloc: no allocation at run time (pass_schedule packs
	                           no weights) */
	int embed_weights;      /* --embed-weights: the weights are the program's constants
	                           (with no_malloc and --weights int8, pass_schedule stores
	                           the int8 products' weights packed: store_i8) */
	int weights;            /* --weights: a weights_mode (pass_precision) */
} pass_opts;

/* --weights: the precision of the products' weights (pass_precision.c).
 * weights_mode_names[] spells them on the command line; lookup: -1 when s
 * names none. */
typedef enum { WEIGHTS_F32, WEIGHTS_BF16, WEIGHTS_INT8, WEIGHTS_COUNT } weights_mode;
extern const char *const weights_mode_names[WEIGHTS_COUNT];
int weights_mode_lookup(const char *s);

/* ---- the resolving stages: infer, seq, loops ----------------------------------
 *
 * An ONNX Loop/Scan, a sequence, an optional or an If is a structure that
 * shape inference cannot see through, and each needs what inference folds
 * before it (a trip count, a position, a condition are usually shape
 * arithmetic), while the shapes of everything after it come from its
 * rewrite.  So these three stages run as rounds, in this order, until a
 * round changes nothing (compile.c: STAGE_RESOLVE):
 *   infer  infers and folds every node it can; a node that seq or loops
 *          claims, and every node after it, is left for a later round
 *          (its tensor outputs unknown), without an error;
 *   seq    resolves the sequence, optional and If nodes whose inputs are
 *          settled (lower_seq.c), leaving a Loop's accumulation to loops;
 *   loops  expands the Loop/Scan nodes whose inputs are settled into
 *          RECURRENCE nodes or unrolled copies (lower_loop.c), their bodies
 *          resolved first by resolve_body.
 * A round function returns its errors and sets *changed when it rewrote a
 * node; the finish functions run once after the last round, in reverse
 * order.  Recurrence bodies are walked by all three, as the root is. */
typedef int (*round_fn)(ir_graph *g, diag *D, int *changed);

/* Graph inputs whose value is a size (size_inputs.c): an int64 input of
 * one element that a count operand reads (a Loop's trip count M) becomes a
 * free symbol of its name, recorded in ir_graph.sym_value, and its readers
 * read the symbolic constant.  Run by compile.c on the loaded graph, before
 * the resolving stages.  Returns the errors (too many symbols). */
int size_inputs(ir_graph *g, diag *D);

/* Shape and dtype inference with constant folding and symbolic Shape
 * arithmetic (pass_infer.c).  Requires: a loaded graph.  Round: infers the
 * nodes no other resolving stage claims (resolve_claims), as far as their
 * inputs are known.  Finish: every value has dtype and shape;
 * shape-determining inputs are constants; no Constant/Shape arithmetic, no
 * Loop, Scan, sequence, optional or If left; dead nodes removed. */
int pass_infer(ir_graph *g, diag *D, int *changed);
int infer_finish(ir_graph *g, diag *D);
/* Sequences, optionals, If and SequenceMap resolved at compile time
 * (lower_seq.c).  Finish: sequence graph outputs replaced by their tensors,
 * sequence operators still in use reported. */
int pass_seq(ir_graph *g, diag *D, int *changed);
int seq_finish(ir_graph *g, diag *D);
int seq_claims(const ir_node *n);
/* ONNX Loop/Scan -> RECURRENCE nodes, or unrolled (lower_loop.c). */
int pass_loops(ir_graph *g, diag *D, int *changed);
int loops_claims(const ir_node *n);
/* Whether a resolving stage other than infer rewrites n (compile.c asks
 * each stage's claims function). */
int resolve_claims(const ir_node *n);
/* The rounds of the resolving stages on a body graph (a Loop's body before
 * its expansion, an unrolled iteration, an If branch), until nothing
 * changes; the number of errors. */
int resolve_body(ir_graph *body, diag *D);
/* Whether every input of n is settled: a tensor of known type, a resolved
 * sequence or optional, a value of an enclosing graph, or a sequence that
 * a node in kept (a sequence node seq leaves in place: a Loop's
 * accumulation, a SplitToSequence view) makes.  The stages walk in order
 * and add to kept the sequence nodes they find settled and left. */
struct infer_set;
int resolve_settled(const ir_graph *g, const ir_node *n, const struct infer_set *kept);

/* Shape no-ops removed, rank-2 sequences read as [B, 1] columns: one
 * spelling of what authors write in many ways (pass_canon.c). */
int pass_canon(ir_graph *g, diag *D, const pass_opts *o);
/* Products and gates in one spelling (per-gate products merged, Add of
 * column blocks, bias forms), on traces and scripted loops' bodies; the
 * Loop/Scan recurrences' cells named (pass_canon.c). */
int pass_gates(ir_graph *g, diag *D, const pass_opts *o);
/* The views of g in one spelling, for passes that make views of views
 * (pass_hoist's moves): a Transpose that moves only unit axes is a Reshape,
 * then the views whose result has their root's shape go (their readers
 * read the root) and nodes nobody reads are removed.  1 if anything
 * changed. */
int canon_views(ir_graph *g);
/* Native cell layers (CELL nodes, cells.h) -> RECURRENCE nodes. */
int pass_lower_cell(ir_graph *g, diag *D, const pass_opts *o);
/* Traced loops (T copies of a step) -> one RECURRENCE each (pass_reroll.c). */
int pass_reroll(ir_graph *g, diag *D, const pass_opts *o);
/* ONNX LSTM/GRU/RNN -> RECURRENCE nodes with element-wise step bodies. */
int pass_lower_rnn(ir_graph *g, diag *D, const pass_opts *o);
/* One ONNX LSTM/GRU/RNN node src of g lowered, its nodes appended to g
 * (the caller rebuilds g's node list, as pass_lower_rnn does); `parts`
 * (lower_rnn_parts, one per stage) makes each part of a source weight
 * once for the nodes of the stage.  Returns the number of errors. */
typedef struct rnn_parts rnn_parts;
rnn_parts *lower_rnn_parts(arena *A);
int lower_rnn_node(ir_graph *g, diag *D, ir_node *src, rnn_parts *parts);
/* Chains of one-step ONNX LSTM/GRU/RNN nodes (a module called once per
 * step of a traced loop) written as their steps, for pass_reroll
 * (pass_onestep.c). */
int pass_onestep(ir_graph *g, diag *D, const pass_opts *o);
/* Whether input k of an ONNX LSTM/GRU/RNN node must be a compile-time
 * constant for pass_lower_rnn (W, R, B and P: the weights are split per
 * direction and gate at compile time); `verify` binds graph inputs feeding
 * them, as it does for inputs that determine shapes. */
int lower_rnn_needs_const(ir_op op, int k);
/* Selections of one step of a stacked output (out[-1], out[:, -1], ...)
 * moved next to their recurrence, which then reads its final state; what
 * nothing reads dropped (pass_select.c). */
int pass_select(ir_graph *g, diag *D, const pass_opts *o);
/* Body products of a recurrence that share their A merged into one over the
 * concatenated weights (pass_merge.c). */
int pass_merge(ir_graph *g, diag *D, const pass_opts *o);
/* Input projections of every recurrence hoisted into one GEMM over T*B rows,
 * bias vectors pre-summed (pass_hoist.c). */
int pass_hoist(ir_graph *g, diag *D, const pass_opts *o);
/* Last-axis slices (gate chunks) of element-wise body values pushed up to
 * products, per-step inputs and states, where they are column views;
 * states read only by such slices split (pass_split.c). */
int pass_split(ir_graph *g, diag *D, const pass_opts *o);
/* --train only (g->train): the loss, and its gradients by reverse-mode
 * differentiation of the root graph, recurrences by backpropagation through
 * time (pass_grad.c; train.h).  Does nothing in inference builds. */
int pass_grad(ir_graph *g, diag *D, const pass_opts *o);
/* Element-wise chains grouped into fused loops (node->group). */
int pass_fuse(ir_graph *g, diag *D, const pass_opts *o);
/* fuse_needs_buffer: v (made by a fused node) is read outside its group, by
 * a product or as a graph output, so it must be stored; otherwise it lives
 * in a local variable of its group's loop (the planner gives it no slot).
 * A step scalar lives in a local of the step, read by every fused loop: it
 * is stored only when a node that is not fused element-wise code, a nested
 * body or the body's outputs read it. */
int fuse_needs_buffer(const ir_value *v);
/* --weights bf16|int8: the products' model weights rounded to bfloat16 or
 * to int8 steps of a scale per output, and the products marked weights =
 * "bf16" or "int8" (pass_precision.c).  precision_operand: n is a product
 * whose B operand such a mode rounds (an f32 model weight of rank 2 with
 * constant dims and data).  precision_int8_row: output j's scale and
 * whether each of its weights is that scale times an integer in [-127,
 * 127] (what pass_precision made and rt_gemv_pack_i8 packs again). */
int pass_precision(ir_graph *g, diag *D, const pass_opts *o);
int precision_operand(const ir_node *n);
int precision_int8_row(const ir_node *n, int64_t j, float *scale);
/* An If decided at run time as a C branch: the nodes only one branch's
 * selects read run only when it is taken (guard, ir.h; pass_branch.c). */
int pass_branch(ir_graph *g, diag *D, const pass_opts *o);
/* How each recurrence runs (threads, where its input projections are
 * computed, packed weights), as attributes the emitter prints
 * (pass_schedule.c has the list). */
int pass_schedule(ir_graph *g, diag *D, const pass_opts *o);
/* Workspace slots for temporaries by liveness (value->slot), sized for
 * what the schedule leaves to store (ir_slot_numel). */
int pass_plan(ir_graph *g, diag *D, const pass_opts *o);

typedef int (*pass_fn)(ir_graph *, diag *, const pass_opts *);

#endif
