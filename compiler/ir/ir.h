/* ir.h: the intermediate representation every pass works on.
 *
 * A compilation is one root graph: values (tensors) and nodes (operations from
 * ops.def) in topological order.  Shapes are symbolic: each dimension is a
 * monomial k * s0^p0 * s1^p1 ... over the graph's dimension symbols (batch,
 * sequence length, ...) so that one compiled model serves every batch size and
 * sequence length the source model allows.  The only structured node is the
 * RECURRENCE (see below): ONNX LSTM/GRU/RNN, Loop, Scan, re-rolled traces and
 * native cells all become one, so later passes handle one shape of loop.
 *
 * Ownership: everything lives in the compilation's arena (arena.h).  Values
 * point to their producer; nodes point to their input and output values.  A
 * body graph may use values of its enclosing graphs directly (weights,
 * constants, loop-invariant tensors): those are its "captures".
 *
 * Legend used in comments: T time steps, B batch, I input size, H hidden size,
 * G gate rows (4H for LSTM, 3H for GRU, H for RNN), D directions.
 */
#ifndef CELLC_IR_H
#define CELLC_IR_H

#include <stdint.h>
#include <stddef.h>

#include "arena.h"

/* ---- operations: one row per op in ops.def -------------------------------- */

typedef enum {
	OPK_ELEM, OPK_SHAPE, OPK_LINALG, OPK_RNN, OPK_STRUCT, OPK_OTHER
} ir_opkind;

typedef enum {
#define OP(e, name, mi, ma, mo, mx, kind, sem) OP_##e,
#include "ops.def"
#undef OP
	OP_COUNT
} ir_op;

typedef struct ir_opinfo {
	const char *name;       /* ONNX op_type / native spelling */
	int min_in, max_in;     /* arity of inputs (optional ones counted in max) */
	int min_out, max_out;   /* arity of outputs */
	ir_opkind kind;
	const char *semantics;  /* the one-line comment of its ops.def row */
} ir_opinfo;

extern const ir_opinfo ir_ops[OP_COUNT];
const char *ir_op_name(ir_op op);
int ir_op_lookup(const char *name);     /* -1 if unknown */

/* ---- element types: numbered as ONNX TensorProto.DataType ---------------- */

typedef enum {
	DT_UNDEF = 0, DT_F32 = 1, DT_U8 = 2, DT_I8 = 3, DT_U16 = 4, DT_I16 = 5,
	DT_I32 = 6, DT_I64 = 7, DT_STRING = 8, DT_BOOL = 9, DT_F16 = 10, DT_F64 = 11,
	DT_U32 = 12, DT_U64 = 13, DT_BF16 = 16, DT_COUNT_ = 17
} ir_dtype;

const char *ir_dtype_name(ir_dtype t);  /* "f32", "i64", ... (native spelling) */
const char *ir_dtype_ctype(ir_dtype t); /* "float", "int64_t", ...; NULL if not supported */
size_t ir_dtype_size(ir_dtype t);       /* bytes per element; 0 if not supported */
int ir_dtype_lookup(const char *name);  /* from the native spelling; -1 if unknown */

/* ---- symbolic dimensions ------------------------------------------------- */

enum { IR_MAX_RANK = 8, IR_MAX_SYMS = 16, IR_MAX_CHOICES = 8 };

/* k * prod(sym[i] ^ pow[i]).  A plain constant has all pow zero.  k < 0 never
 * occurs in a shape; it is used only for "unknown" (see IR_DIM_UNKNOWN). */
typedef struct ir_dim {
	int64_t k;                      /* constant factor */
	uint8_t pow[IR_MAX_SYMS];       /* exponent of each graph symbol */
} ir_dim;

#define IR_DIM_UNKNOWN (-1)

typedef struct ir_shape {
	int rank;                       /* -1: rank unknown */
	ir_dim d[IR_MAX_RANK];          /* d[0] outermost; row-major */
} ir_shape;

ir_dim ir_dim_const(int64_t k);
ir_dim ir_dim_sym(int sym);
ir_dim ir_dim_mul(ir_dim a, ir_dim b);
int ir_dim_div(ir_dim a, ir_dim b, ir_dim *q);  /* 1 if b divides a exactly */
int ir_dim_eq(ir_dim a, ir_dim b);
int ir_dim_is_const(ir_dim a);
int ir_dim_known(ir_dim a);                      /* not IR_DIM_UNKNOWN */
ir_dim ir_shape_numel(const ir_shape *s);        /* product of all dims */
int ir_shape_eq(const ir_shape *a, const ir_shape *b);

/* A derived symbol's definition: a size expression of earlier symbols.
 *   IR_SYM_LIN   floor((c[0] * s0 + c[1] * s1 + ... + off) / div), div >= 1:
 *                x[:-1] of a time axis T has T - 1 steps (ir_sym_offset), a
 *                strided Conv over a run-time length L floor((L - 64) / 128)
 *                (ir_sym_floor), torch.cat of two run-time lengths T1 + T2
 *                (ir_sym_lin); exact: the model needs the division to leave
 *                nothing over (a Reshape of [6 * B] into [12, -1] needs B
 *                even: `B_over2 = B / 2`), which the generated code checks
 *   IR_SYM_MIN   min(x, y), IR_SYM_MAX  max(x, y): x the symbol a, y the
 *                symbol b or, b < 0, the constant off (x[:, :10] of a
 *                run-time length T has min(T, 10) rows: ir_sym_minmax)
 *   IR_SYM_SCALE scale(x, s): a Resize of a run-time length x (the symbol
 *                a) by a float32 scale s that is no multiple of 1/64, its
 *                output size as ONNX Runtime computes it, the float32
 *                product of s and x truncated (rt_resize_size: W by 1.3 is
 *                scale(W, 1.3), 13 at W = 10 where the real product in
 *                double would floor to 12; ir_sym_scale)
 * Kept canonical, so that the same size is one symbol (ir_sym_canonical):
 * a LIN's terms are atoms (symbols that are not a LIN without a divisor:
 * those are expanded into their own terms), at least one, not one term
 * alone with factor 1 or no divisor and no offset (that is a monomial),
 * the factors and the divisor without a common factor, no floor of a
 * floor with factor 1 (one floor), and without a divisor the last term's
 * factor positive (T1 - T2 is -1 times T2 - T1); a MIN/MAX's operands two
 * symbols in index order that are not offsets of one symbol, or a symbol
 * and a constant; a SCALE's operand a symbol that is not pinned, its scale
 * positive, finite and no multiple of 1/64 (a scale p / 2^k is the floor
 * floor(p x / 2^k), which is what ONNX Runtime's float32 product gives
 * while p x < 2^24; emit_resize checks the product at run time). */
enum { IR_SYM_FREE, IR_SYM_LIN, IR_SYM_MIN, IR_SYM_MAX, IR_SYM_SCALE };
typedef struct ir_symdef {
	uint8_t op;                     /* IR_SYM_* */
	uint8_t exact;                  /* LIN with div > 1: the division is exact */
	int64_t c[IR_MAX_SYMS];         /* LIN: each earlier symbol's factor (0: none) */
	int64_t off;                    /* LIN: the constant term; MIN/MAX, b < 0: the constant */
	int64_t div;                    /* LIN: the divisor (>= 1) */
	int a, b;                       /* MIN/MAX: the operands (b < 0: the constant off);
	                                   SCALE: a the operand, b -1 */
	float scale;                    /* SCALE: the factor (float32, as the Resize's scales hold it) */
} ir_symdef;

/* ---- values --------------------------------------------------------------- */

typedef enum {
	VAL_TEMP,       /* produced by a node */
	VAL_INPUT,      /* graph input supplied at run time */
	VAL_WEIGHT,     /* initializer: data in the weights file */
	VAL_CONST,      /* compile-time constant: data in `data` (or `sym`) */
	VAL_STEP,       /* body graph input: a per-step slice or a carried state */
} ir_valkind;

struct ir_node;
struct ir_graph;

/* The role a pass gave a value for a later decision to read (never the
 * text of origin, which is provenance for comments only).  `cellc dump`
 * prints it as ` role KEYWORD` at the end of a declaration line, and as
 * ` role %NAME KEYWORD` after the attributes of the node line that defines
 * NAME; the text reads it back (txt_graph.c), which like ir_verify checks
 * that it stands where it may (ir_role_fits).  The roles:
 *   step_coef     a per-step coefficient that pass_reroll found as T
 *                 different scalars in a trace and reads from a table: a
 *                 sequence input of the recurrence body (recognize.c)
 *   nag_schedule  a per-step coefficient that follows the NAG restart
 *                 schedule, computed in the body from the step number t:
 *                 the schedule's last node, its Div (pass_reroll, recognize.c)
 *   trace_steps   x[0:T], a Slice of a sequence to the steps a trace read,
 *                 which a recurrence of pass_reroll reads while its time
 *                 axis stays the traced T (pass_reroll, fixed_upstream)
 *   projection    u_t, an input projection x_t W^T + b computed before the
 *                 loop for every step: the sequence input of a recurrence
 *                 body that pass_hoist made (recognize.c reads it as the
 *                 input term of a gate)
 *   condition     a Loop's condition carried as a [1, 1] f32 state (1 or 0,
 *                 starting at 1): the run stops after the first step whose
 *                 new value is 0 (lower_loop.c; ir_rec_cond_state)
 * ROLE(enum, keyword, where it may stand). */
#define IR_ROLES(ROLE) \
	ROLE(IR_ROLE_NONE, none, "any value") \
	ROLE(IR_ROLE_STEP_COEF, step_coef, "an f32 sequence input of a recurrence body") \
	ROLE(IR_ROLE_NAG_SCHEDULE, nag_schedule, "a value a node of a recurrence body makes") \
	ROLE(IR_ROLE_TRACE_STEPS, trace_steps, "the result of a Slice") \
	ROLE(IR_ROLE_PROJECTION, projection, "an f32 sequence input of a recurrence body") \
	ROLE(IR_ROLE_CONDITION, condition, "an f32 [1, 1] state input of a recurrence body")

typedef enum {
#define IR_ROLE_ENUM(e, kw, where) e,
	IR_ROLES(IR_ROLE_ENUM)
#undef IR_ROLE_ENUM
	IR_ROLE_COUNT
} ir_role;

const char *ir_role_keyword(ir_role r);
int ir_role_lookup(const char *keyword);        /* -1 if unknown */
const char *ir_role_where(ir_role r);           /* "the result of a Slice", ... */
/* Whether role r may stand on a value of this kind and dtype (DT_UNDEF: not
 * known yet), made by a node of op `op` (-1: none), in a recurrence body or
 * not.  (That a step_coef input is a sequence input is checked with the
 * recurrence's attributes.) */
int ir_role_fits(ir_role r, ir_valkind kind, ir_dtype dt, int op, int in_body);

typedef struct ir_value {
	const char *name;       /* unique in the compilation; ONNX tensor name if any */
	ir_valkind kind;
	ir_dtype dtype;
	ir_shape shape;
	void *data;             /* VAL_WEIGHT/VAL_CONST: row-major contents, dtype */
	ir_dim *sym;            /* VAL_CONST int64 whose elements are symbolic dims
	                           (results of Shape arithmetic); NULL otherwise */
	struct ir_node *producer; /* VAL_TEMP: the node writing it */
	struct ir_graph *graph; /* graph that owns it */
	int is_output;          /* also a graph output */
	int frozen;             /* f32 VAL_WEIGHT of a training build held fixed: no
	                           parameter, no gradient (dtriv's base; --freeze) */
	ir_dtype narrow;        /* DT_F16 or DT_BF16: an f32 value that stands for an ONNX
	                           FLOAT16 / BFLOAT16 tensor (computed in float32, its
	                           values of that type where a Cast made them); else 0;
	                           dumped as ` narrow f16` after the type */
	int nuses;              /* number of node inputs referring to it (ir_recount) */
	int id;                 /* dense index for passes' side tables */
	/* filled by the memory planner */
	int slot;               /* workspace slot, -1 if none (input/weight/output) */
	const char *origin;     /* what the user called it, for comments */
	ir_role role;           /* what a pass made it for (above); IR_ROLE_NONE mostly */
	/* pass_grad, for the names of the emitted code only: the forward value
	 * whose gradient this is (the whole dL/dv, not a partial sum), and, in
	 * a backward recurrence's body, the forward body's value that this
	 * value recomputes.  `cellc dump` prints them after the attributes of
	 * the node line that makes the value, ` grad_of %NAME %V` and
	 * ` recomputes %NAME %V`; the text reads them back, ir_verify checks
	 * that V is a value the compilation defines (ir_replace_uses moves
	 * them to the value that replaces V) */
	const struct ir_value *grad_of, *recomputes;
	/* ONNX sequences and optionals (lower_seq.c): resolved at compile time
	 * into lists of tensor values; they never reach the emitter */
	int seq;                /* IR_TENSOR, IR_SEQ or IR_OPT */
	int resolved;           /* seq != IR_TENSOR: elem holds the value */
	int nelem;              /* IR_SEQ: element count; IR_OPT: 0 (none) or 1 */
	struct ir_value **elem; /* [nelem] tensors (IR_OPT: a tensor or an IR_SEQ) */
	/* Data-dependent length (NonZero, Unique, Compress, NonMaxSuppression,
	 * the stacked outputs of a recurrence that stops on its condition
	 * (has_cond); set by infer_shape.c): when data_dep is 1, shape.d[dd_axis]
	 * is only the compile-time upper bound of that axis, the capacity the
	 * buffer is sized for; the producer's kernel computes the actual length
	 * at run time and writes the tensor packed at its actual dims (the first
	 * elements of the buffer, row-major).  Such a value may only be an
	 * output of the root graph or the input of a node that keeps the length
	 * row by row (ir_dd_passes: a view or an element-wise operator on axis
	 * 0, whose output has the length too); every other consumer is refused
	 * by infer_node.  The generated API returns the length
	 * (NAME_output_dims, docs/deploying.md). */
	int data_dep;
	int dd_axis;
} ir_value;

enum { IR_TENSOR = 0, IR_SEQ = 1, IR_OPT = 2 };

/* ---- attributes ------------------------------------------------------------ */

typedef enum {
	ATTR_INT, ATTR_FLOAT, ATTR_STRING, ATTR_INTS, ATTR_FLOATS, ATTR_STRINGS,
	ATTR_TENSOR, ATTR_GRAPH
} ir_attrkind;

typedef struct ir_attr {
	const char *name;
	ir_attrkind kind;
	int64_t i;              /* ATTR_INT */
	double f;               /* ATTR_FLOAT: an ONNX float32 exactly, a .cell number as written */
	const char *s;          /* ATTR_STRING */
	int n;                  /* element count of the list kinds */
	int64_t *ints;          /* ATTR_INTS [n] */
	float *floats;          /* ATTR_FLOATS [n] */
	const char **strings;   /* ATTR_STRINGS [n] */
	ir_value *t;            /* ATTR_TENSOR: a VAL_CONST */
	struct ir_graph *g;     /* ATTR_GRAPH */
} ir_attr;

/* ---- nodes ---------------------------------------------------------------- */

/* Where a recurrence came from (ir_node.rec_source), for the decisions that
 * depend on it (a scripted Loop's or Scan's body is respelled as a trace's
 * and, when no named cell is found, compiled as written); op_type only
 * says so in comments.  `cellc dump` prints it as ` source KEYWORD` after a
 * recurrence's attributes; the text reads it back; the text and ir_verify
 * check that only a recurrence has one.  The sources:
 *   none         not said (a hand-written graph), or not a recurrence
 *   traced_loop  the steps of a traced loop, rolled by pass_reroll
 *   onnx_loop    an ONNX Loop (lower_loop.c)
 *   onnx_scan    an ONNX Scan (lower_loop.c)
 *   onnx_rnn     an ONNX LSTM, GRU or RNN node (pass_lower_rnn)
 *   cell         a layer of a built-in cell of a .cell model (cells.c)
 *   cell_def     a layer of a cell the .cell file defines (txt_cell.c)
 *   backward     the backward pass of a recurrence (pass_grad)
 * REC_SOURCE(enum, keyword). */
#define IR_REC_SOURCES(REC_SOURCE) \
	REC_SOURCE(IR_REC_NONE, none) \
	REC_SOURCE(IR_REC_TRACED, traced_loop) \
	REC_SOURCE(IR_REC_ONNX_LOOP, onnx_loop) \
	REC_SOURCE(IR_REC_ONNX_SCAN, onnx_scan) \
	REC_SOURCE(IR_REC_ONNX_RNN, onnx_rnn) \
	REC_SOURCE(IR_REC_CELL, cell) \
	REC_SOURCE(IR_REC_CELL_DEF, cell_def) \
	REC_SOURCE(IR_REC_BACKWARD, backward)

typedef enum {
#define IR_REC_SOURCE_ENUM(e, kw) e,
	IR_REC_SOURCES(IR_REC_SOURCE_ENUM)
#undef IR_REC_SOURCE_ENUM
	IR_REC_SOURCE_COUNT
} ir_rec_source;

const char *ir_rec_source_keyword(ir_rec_source s);
int ir_rec_source_lookup(const char *keyword);  /* -1 if unknown */

typedef struct ir_node {
	ir_op op;
	const char *name;       /* ONNX node name, or made up by the loader/pass */
	const char *op_type;    /* op type as the source spelled it (diagnostics) */
	const char *domain;     /* "" for the default ONNX domain */
	int opset;              /* opset version the source node was written against */
	int nin, nout;
	ir_value **in;          /* [nin]; NULL entries for omitted optional inputs */
	ir_value **out;         /* [nout]; NULL entries for omitted optional outputs */
	int nattrs;
	ir_attr *attrs;         /* [nattrs] */
	struct ir_graph *body;  /* OP_RECURRENCE: the step */
	struct ir_graph *graph; /* graph the node was made in (its arena) */
	const char *origin;     /* provenance: source nodes it came from (comments) */
	int group;              /* fusion group (pass_fuse), 0 = none */
	int id;                 /* dense index for passes' side tables */
	int unrolled;           /* 1 + the index in the root's unrolled[] of the ONNX Loop
	                           whose iteration this node is a copy of (onnx_loop_unroll;
	                           pass_reroll counts what it left), 0 otherwise */
	ir_rec_source rec_source; /* OP_RECURRENCE: where it came from (above); else IR_REC_NONE */
} ir_node;

/* A recurrence from a scripted loop: an ONNX Loop or Scan. */
int ir_rec_scripted(const ir_node *n);

/* Recurrence (OP_RECURRENCE), the one structured node.
 *
 * Attributes:  n_seq, n_state, n_out (ints); reverse (int 0/1);
 *              seq_axis  ints[n_seq]  time axis of each sequence input (0 or 1);
 *              out_axis  ints[n_out]  time axis of each stacked output (0 or 1);
 *              has_lens  int          last input is sequence_lens (int32 [B]);
 *              has_step  int          0, 1 or 2: step scalars the body reads (below).
 * Inputs:  seq_0..seq_{n_seq-1}   per-step inputs, time on seq_axis, batch on the
 *                                 other of axes 0/1: [T, B, ...] or [B, T, ...]
 *          init_0..init_{n_state-1}  initial states (NULL: zeros)
 *          [lens]                 sequence_lens: batch row b runs lens[b] steps
 * Outputs: final_0..final_{n_state-1}  states after the last step (per row: its
 *                                 own last step when lens is given); may be NULL
 *          out_0..out_{n_out-1}   per-step outputs stacked on out_axis; rows past
 *                                 their length are zero; may be NULL
 * Body:    inputs  x_0..x_{n_seq-1} (seq slices without the time axis),
 *                  s_0..s_{n_state-1} (states at t-1)
 *                  [has_step >= 1] t: f32 scalar (rank 0), the 1-based number of
 *                  the step in processing order (reverse: the first step run is
 *                  1), counted on across NAME_step calls of a stream;
 *                  [has_step == 2] L: f32 scalar, the number of steps of this
 *                  run (T of the call)
 *          outputs s'_0.. (states at t), y_0.. (per-step outputs)
 *          may use values of enclosing graphs (weights, hoisted projections).
 * A state whose body input has the role condition (ir_rec_cond_state: a
 * Loop's condition, [1, 1], 1 or 0) stops the run after the first step
 * that makes it 0: T is then a bound, the stacked outputs have the steps
 * run on axis 0 (data_dep, dd_axis 0; out_axis 0) and zeros past them,
 * and the final states are those of the last step run.
 * reverse=1 runs each row from its last valid step down to step 0. */

/* ---- graphs --------------------------------------------------------------- */

typedef struct ir_graph {
	arena *A;               /* the compilation's arena */
	struct ir_graph *parent;/* enclosing graph for bodies; NULL for the root */
	const char *name;
	int nnodes, capnodes;
	ir_node **nodes;        /* [nnodes] in topological order */
	int ninputs, noutputs;
	ir_value **inputs;      /* [ninputs] graph inputs (VAL_INPUT / VAL_STEP) */
	ir_value **outputs;     /* [noutputs] graph outputs */
	int nvalues, capvalues;
	ir_value **values;      /* every value owned by this graph */
	/* root graph only: */
	int nsyms;
	const char *syms[IR_MAX_SYMS]; /* names of dimension symbols */
	/* How each symbol's value is had: given by the caller (IR_SYM_FREE), or
	 * derived, a size expression of earlier symbols (ir_symdef, above)
	 * computed once per call by the generated code, never given by the
	 * caller, and checked to be at least 1 where it sizes something.  To
	 * every monomial rule a derived symbol is a symbol of its own. */
	ir_symdef symdef[IR_MAX_SYMS];
	/* a derived symbol an operator's contract requires to be a constant (a
	 * Squeeze of an axis a strided Conv made: floor((L + 320) / 512) must
	 * be 1): every shape has the constant, the symbol stays for the
	 * generated code to check it (ir_sym_unify); 0: none */
	int64_t sym_pin[IR_MAX_SYMS];
	/* free: the least value the symbol may take at run time when above 1
	 * (0: 1), which a shape decision assumed (a constant slice bound on a
	 * symbolic axis, x[-2:]: ir_sym_need); the generated code checks it */
	int64_t sym_min[IR_MAX_SYMS];
	/* free: the name of the graph input (int64, one element) whose value
	 * the symbol is: a size the model reads from its data, such as a Loop's
	 * trip count given as an input (`max_len`; size_inputs.c).  Nodes read
	 * the symbolic constant instead; the caller gives the symbol with the
	 * other dims and the generated code checks the input holds it.  NULL:
	 * a size of the inputs' shapes, or given by the caller. */
	const char *sym_value[IR_MAX_SYMS];
	/* sizes an operator's contract made one (ir_sym_unify, below) */
	int nlinks;
	struct ir_sym_link *links;     /* [nlinks] in the order they were made */
	int unify_ok;           /* pass_infer is running: ir_sym_unify may change symbols */
	/* Ifs decided by a size (lower_seq.c: `if x.shape[-1] == 1:` where the
	 * size is known only at run time and the branches differ in shape):
	 * the i-th such If met takes the branch its option choice_take[i] names
	 * (0: the first preference) and records how many options it had; the
	 * option's condition on the size is recorded as a link (pinned or at
	 * least).  compile.c tries the other options when a compilation fails
	 * after one (compile_run), and so chooses the first that compiles. */
	int nchoices;           /* size-decided Ifs met */
	int nchoice_fixed;      /* choice_take[0, n) prescribed by compile_run */
	signed char choice_take[IR_MAX_CHOICES], choice_nopt[IR_MAX_CHOICES];
	/* The shapes the source file declares for the graph outputs (ONNX: the
	 * output's TypeProto, which exporters fill from the traced run).  Only
	 * a hint: the shapes cellc uses are inferred, and `cellc info` names an
	 * output whose inferred shape disagrees with the file's.  [ndeclared] */
	int ndeclared;
	struct ir_declared {
		const char *name;       /* the output */
		int rank;
		int64_t dim[IR_MAX_RANK];       /* >= 0 a size; -1 a name (dim_param); -2 none */
		const char *param[IR_MAX_RANK]; /* dim -1: the name */
	} *declared;
	int choice_hold;        /* compile_run may retry: an If with another option
	                           holds the diagnostics from then on (diag.hold) */
	int opset;              /* default-domain opset of the source */
	const char *producer;   /* producer name and version, for the provenance header */
	const char *source;     /* model file path */
	uint64_t source_hash;   /* FNV-1a of the model file, for provenance */
	int64_t uniq;           /* counter of made-up names (ir_unique_name) */
	int64_t unroll_spent;   /* root: body nodes copied and sequence elements listed by
	                           lower_seq.c's unrolling, against its budget */
	int nunrolled;          /* root: traced loops pass_reroll left unrolled */
	struct ir_unrolled *unrolled; /* [nunrolled] (below) */
	struct ir_train *train; /* a training build (below); NULL for inference */
	int has_gradient;       /* root: the model holds an ONNX Gradient node (set by
	                           ir_node_new): its weights are derived at run time,
	                           as in a training build (ir_weights_at_run_time) */
} ir_graph;

/* A traced loop left unrolled: pass_reroll found T >= 3 per-step slices
 * x[0], .., x[T-1] of a sequence read by the computation of the steps, and
 * did not make them one recurrence; or T >= 3 steps that read no slice,
 * each fed what the one before computed (why WHY_NO_SLICES; seq: what the
 * first step is fed); or (why WHY_ONNX_LOOP) an ONNX Loop the
 * loader unrolled (lower_seq.c: it carries sequences or per-step values
 * other than float32) whose iterations pass_reroll did not roll back; its
 * seq is the Loop's name.  The graph keeps T copies of the step:
 * correct, but the emitted code grows with T and has no streaming step.
 * Recorded on the root graph (ir_unrolled_add), printed by `cellc dump` as
 *   unrolled "x", steps 8, nodes 164, per_step 20, why sizes, step 1, vs 2, node "Relu_3", op Relu
 * (the text reads it back), listed by `cellc info` under "fallbacks" and
 * reported by `cellc compile` and `cellc verify` (a warning, or an error
 * with --werror-fallback: compile.h, compile_fallbacks). */
typedef enum {
#define WHY(e, kw, text) e,
#include "fallback.def"
#undef WHY
	WHY_COUNT
} ir_unrolled_why;

typedef struct ir_unrolled {
	ir_unrolled_why why;    /* why the steps were not rolled (fallback.def) */
	const char *seq;        /* the sequence whose slices the steps read */
	int steps;              /* T, the steps traced */
	int nodes;              /* nodes in the steps (left unrolled), the slices excluded */
	int per_step;           /* nodes of one step (the template step pass_reroll compared with) */
	int step, vs;           /* the first two steps found to differ: `node` of step
	                           `step` has no counterpart in step `vs`; -1: no pair */
	const char *node;       /* that node's name, or NULL */
	int op;                 /* its op (ir_op), or -1 */
} ir_unrolled;

/* Records u on g's root unless the same loop (sequence and T) is there
 * already (a graph dumped after pass_reroll and compiled again). */
void ir_unrolled_add(ir_graph *g, const ir_unrolled *u);
const char *ir_unrolled_why_text(ir_unrolled_why why);
const char *ir_unrolled_why_keyword(ir_unrolled_why why);
int ir_unrolled_why_lookup(const char *keyword);        /* -1 if unknown */

/* A training build: the root graph's `train`, NULL for inference.  In such
 * a build no pass may derive a weight at compile time (a derived weight
 * would get no gradient); its weights are computed at run time from the
 * parameters.  loss and loss_output are what was asked (cellc compile
 * --train --loss L --loss-output NAME); the rest is what pass_grad made of
 * the model, for the emitter (NAME_TRAIN_INFO, docs/training.md).
 * `cellc dump` prints it as the graph's `train` line (the loss, then, once
 * graded, the fields below), ` param K` after the type of the K-th
 * parameter and a `backward` annotation on bwd_start; the text reads it
 * back and ir_verify checks it. */
enum { TRAIN_CE, TRAIN_CE_ALL, TRAIN_MSE, TRAIN_MASKED_MSE, TRAIN_NLOSSES };
typedef struct ir_train {
	int loss;               /* TRAIN_* */
	const char *loss_output;/* --loss-output NAME or NULL: the first output */
	int nparams;            /* trainable parameters: f32 weights of the root */
	ir_value **params;      /* [nparams] in source order */
	int graded;             /* pass_grad has run: the loss and gradients are in the
	                           graph and the fields below are set */
	int x_input, batch_axis, time_axis; /* the data input and its axes */
	int logits_output;      /* the output the loss reads */
	int loss_output_index;  /* the output `loss`; the gradients come after it */
	int nclasses;           /* ce, ce-all: classes (0: not a constant); else 0 */
	int nfwd_outputs;       /* outputs of the model before the training ones */
	struct ir_node *bwd_start; /* first root node of the backward part (all after it are) */
} ir_train;
const char *train_loss_name(int loss);          /* "ce", ...; "?" out of range */
int train_loss_lookup(const char *name);        /* TRAIN_* or -1 */
/* The first f32 weight that b (the root or a body, and the bodies in it)
 * reads and t does not list as a parameter, frozen ones apart, or NULL: a
 * training build derives no weight at compile time (it would get no
 * gradient). */
const ir_value *ir_train_unlisted(const ir_train *t, const ir_graph *b);

/* Whether the compilation of g derives weights at run time from the values
 * they are made of (the parameters or graph inputs), never folding them at
 * compile time: a training build, or a model with an ONNX Gradient node
 * (whose xs may be those values: a folded weight would lose the path). */
int ir_weights_at_run_time(const ir_graph *g);
ir_graph *ir_graph_new(arena *A, ir_graph *parent, const char *name);
ir_graph *ir_root(ir_graph *g);
/* A C identifier made of s, for a symbol's name (symbols name members of
 * the generated NAME_dims struct): other characters become '_'; keywords,
 * names reserved to the implementation and a leading digit get "d_". */
const char *ir_sym_ident(arena *A, const char *s);
/* The graph input (index into g->inputs) whose value symbol s is
 * (ir_graph.sym_value), or -1; the symbol that is input k's value, or -1. */
int ir_sym_value_input(const ir_graph *g, int s);
int ir_input_value_sym(const ir_graph *g, int k);
/* ir_sym_ident of want, made unlike every symbol of g ("_2", "_3", ...). */
const char *ir_sym_fresh_name(ir_graph *g, const char *want);
int ir_sym_add(ir_graph *g, const char *name);           /* index; existing if same name; -1 if full */
/* Symbol i is free: its value is given by the caller (not derived). */
int ir_sym_free(const ir_graph *g, int i);
/* Size expressions (ir_symdef).  The builders take dims that are constants
 * or k times one symbol (one power 1, any k; free or derived) and set *r
 * to the canonical result: a constant, k times one symbol, a derived
 * symbol already there, or a new one named after its terms (T_minus_1,
 * L_div2, T1_plus_T2, min_T_10).  They return 1, or 0 when an operand is
 * another monomial, a number leaves INT32_MAX in magnitude, an exact
 * division cannot be exact, or no symbol is left.
 *   ir_sym_lin     floor((k[0] * d[0] + ... + k[n-1] * d[n-1] + off) / div),
 *                  div >= 1; exact: the division must be exact
 *   ir_sym_offset  d + c
 *   ir_sym_floor   floor((mul * d + off) / div), mul and div >= 1
 *   ir_sym_exact   (mul * d + off) / div, exact (the -1 of a Reshape)
 *   ir_sym_sum     a + sign * b (sign 1 or -1)
 *   ir_sym_minmax  min (op IR_SYM_MIN) or max (IR_SYM_MAX) of x and y: one
 *                  of them where their bounds decide it (min(T, 1) is 1,
 *                  min(T - 1, T) is T - 1)
 *   ir_sym_scale   a Resize's output size of x (a constant or one symbol,
 *                  k = 1) by scale s as ONNX Runtime computes it
 *                  (rt_resize_size): scale(x, s), or floor(p x / 2^k) for
 *                  s = p / 2^k (k <= 6), or the constant; 0 also for s not
 *                  positive and finite, or x k times a symbol with k > 1 */
int ir_sym_lin(ir_graph *g, int n, const ir_dim *d, const int64_t *k, int64_t off, int64_t div, int exact,
	       ir_dim *r);
int ir_sym_offset(ir_graph *g, ir_dim d, int64_t c, ir_dim *r);
int ir_sym_floor(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div, ir_dim *r);
int ir_sym_exact(ir_graph *g, ir_dim d, int64_t mul, int64_t off, int64_t div, ir_dim *r);
int ir_sym_sum(ir_graph *g, ir_dim a, ir_dim b, int sign, ir_dim *r);
int ir_sym_minmax(ir_graph *g, int op, ir_dim x, ir_dim y, ir_dim *r);
int ir_sym_scale(ir_graph *g, ir_dim x, float s, ir_dim *r);
/* Whether the float32 scale s is a multiple of 1/64, p / q with q a power
 * of two up to 64 (ir_sym_scale then makes floor(p x / q)); *p and *q. */
int ir_sym_dyadic(float s, int64_t *p, int64_t *q);
/* Whether a - b is a constant (T + 3 and T - 1; two sums of the same
 * symbols), in *d. */
int ir_sym_diff(const ir_graph *g, ir_dim a, ir_dim b, int64_t *d);
/* Records that dimension d is at least m at run time (a constant, or k
 * times one symbol): as least values of the free symbols it is made of,
 * where that is the one way to have it (a LIN of one term, a MIN of
 * symbols and constants, a MAX with a constant below m, a SCALE).  1 when d is
 * such a dimension or is at least m already, else 0. */
int ir_sym_need(ir_graph *g, ir_dim d, int64_t m);
/* The first exact symbol whose division leaves a remainder for the free
 * symbols' values free[] (-1: none). */
int ir_sym_inexact(const ir_graph *g, const int64_t *free);
/* NULL when symbol s's definition is canonical as ir_symdef says (what the
 * text reader and ir_verify require), else what is wrong, a phrase. */
const char *ir_sym_noncanonical(const ir_graph *g, int s);
/* The one term of LIN symbol s and its factor in *mul: floor((mul * base +
 * off) / div); -1 for a symbol of another kind or of several terms. */
int ir_sym_base(const ir_graph *g, int s, int64_t *mul);
/* s is an offset symbol (a LIN of one term with factor 1, no divisor). */
int ir_sym_is_offset(const ir_graph *g, int s);
/* The symbol that s is an offset of, and the offset: for an offset symbol
 * its term and off, else s itself and 0. */
int ir_sym_root(const ir_graph *g, int s, int64_t *off);
/* The symbols symbol s's definition reads (its terms, or a MIN's, MAX's or
 * SCALE's operands), a bit each; 0 for a free one. */
unsigned ir_sym_operands(const ir_graph *g, int s);
/* The free symbols symbol s is computed from, a bit each (s's own for a
 * free one). */
unsigned ir_sym_frees(const ir_graph *g, int s);
/* The value of symbol s when the free symbols have the values free[]
 * (derived ones computed from them); INT64_MIN on overflow. */
int64_t ir_sym_value(const ir_graph *g, int s, const int64_t *free);
/* The largest value symbol s takes when each free symbol i is between its
 * least value and max[i] (the --max-dim sizes); INT64_MAX when unbounded
 * or on overflow. */
int64_t ir_sym_max_value(const ir_graph *g, int s, const int64_t *max);
/* Symbol s's definition as text: "T - 1", "floor((L - 64) / 128)",
 * "2 * L + 1", "T1 + T2", "min(T, 10)", "scale(W, 1.3)" (the scale's
 * shortest digits that read back as the same float32); "" for a free
 * symbol.  name: how a symbol is written (NULL: its name as it is). */
const char *ir_sym_def_str(arena *A, const ir_graph *g, int s);
const char *ir_sym_def_fmt(arena *A, const ir_graph *g, int s, const char *(*name)(arena *A, const char *sym));
/* The least value of free symbol i at run time: sym_min, at least 1. */
int64_t ir_sym_least(const ir_graph *g, int i);
/* The least value of any symbol s, at least 1: a free one's ir_sym_least,
 * a pinned one's pin, a derived one's least by its definition (a term
 * with a negative factor has none: 1). */
int64_t ir_sym_least_value(const ir_graph *g, int s);
/* v is an index that float32 holds exactly: the output of an ArgMax or
 * ArgMin over an axis of at most 2^24 elements (a greedy decoder's token),
 * seen through views (Unsqueeze, Squeeze, Reshape, Identity, Cast to an
 * integer type). */
int ir_index_exact_in_f32(const ir_value *v);
/* The symbol of a one-symbol monomial d (k = 1, one power 1), else -1. */
int ir_dim_one_sym(ir_dim d);
/* Sizes made one by an operator's contract.  Where an operator requires two
 * sizes to be equal (broadcasting, an LSTM's initial_h batch and X's batch,
 * MatMul's inner sizes, Concat's other axes) and they are two free symbols
 * (two inputs whose batch the file leaves unnamed on each), or a free
 * symbol and a constant (a state made with the traced batch: [batch, 32]
 * against [3, 32]), the symbol `name` is replaced throughout the
 * compilation by symbol `into` (the one declared first) or, into NULL, by
 * the constant `value`, and is gone from the graph's symbols.  What stays
 * is this record: `cellc dump` prints it as the line
 *   sizes "h_1" = "input_0", node "LSTM_3", why "initial_h axis 1 is X's axis 1"
 *   sizes "batch" = 3, node "Add_2", why "broadcasting: axis 0 against 3"
 * (the text reads it back), `cellc info` lists it, and `cellc compile`
 * warns about the fixed ones: the model then runs for that size only.  The
 * generated code checks the inputs against it (NAME_bind_dims: every input
 * axis that is no longer a symbol of its own is compared with the size it
 * must have). */
typedef struct ir_sym_link {
	const char *name;       /* the symbol that is gone */
	const char *into;       /* the symbol it became; NULL: a constant */
	int64_t value;          /* into NULL: the size it must be (>= 1) */
	int at_least;           /* 1: no rewrite; free symbol `name` stays and must be
	                           at least `value` (an If decided by a size:
	                           `sizes "L" >= 2, node ..., why ...`) */
	const char *node;       /* the node whose contract required it */
	const char *why;        /* what the contract required, a phrase */
} ir_sym_link;

/* Makes sizes a and b one, as ir_sym_link describes, when pass_infer is
 * running (root->unify_ok) and a and b are two different free symbols (each
 * k = 1, one power 1) or a free symbol and a constant at least 1 and at
 * least the symbol's least value, and every symbol derived from the one
 * that goes can follow it (base + off >= 1).  Returns 1 after the change
 * (every shape and symbolic constant of the compilation rewritten: the
 * caller's copies of dims are stale and it must infer its node again), or
 * 0 with nothing changed. */
int ir_sym_unify(ir_graph *g, ir_dim a, ir_dim b, const char *node, const char *why);
/* Drops the derived symbols nothing uses any more (no shape, symbolic
 * constant or kept symbol's definition; a pinned or exact one holds a
 * run-time check and stays): the steps of a size expression a rule built on
 * the way (x[-4:]'s start max(T - 4, 0) on its way to min(T, 4)).  The
 * symbols left move down as a unification's do; compile_run calls it after
 * every stage, where no index of a symbol is held. */
void ir_sym_gc(ir_graph *g);
/* Records a link as the text's `sizes` line does (no rewrite). */
void ir_sym_link_add(ir_graph *g, const ir_sym_link *l);
/* Drops the link that made symbol `name` a constant (pass_reroll, once the
 * node that fixed it is gone and the size is a symbol of that name again:
 * a traced x.unbind() over a dynamic axis rolled back into a loop). */
void ir_sym_link_drop(ir_graph *g, const char *name);

/* Whether a value of the compilation (bodies included) may already be
 * called name (a hash lookup: true also for the rare collision). */
int ir_name_taken(ir_graph *g, const char *name);
/* name when no value of the compilation has it, else a made-up one from
 * it: for names built from a body's (two layers or loops of one name). */
const char *ir_free_name(ir_graph *g, const char *name);
/* Gives v a new name (the caller checked it is free: ir_name_taken). */
void ir_value_rename(ir_value *v, const char *name);
ir_value *ir_value_new(ir_graph *g, const char *name, ir_valkind kind, ir_dtype dt);
ir_value *ir_const_new(ir_graph *g, const char *name, ir_dtype dt, const ir_shape *s, const void *data);
ir_value *ir_const_i64(ir_graph *g, const char *name, int n, const int64_t *v); /* 1-D */
ir_value *ir_const_f32_scalar(ir_graph *g, const char *name, float v);
/* A shape constant [d0 .. dn-1] (a Reshape's or ConstantOfShape's input):
 * plain int64 values, or symbolic ones (infer.h: symbolic constants). */
ir_value *ir_const_dims(ir_graph *g, const ir_dim *d, int n);
ir_node *ir_node_new(ir_graph *g, ir_op op, const char *name, int nin, int nout);
void ir_append(ir_graph *g, ir_node *n);                  /* add at the end */
void ir_set_nodes(ir_graph *g, ir_node **nodes, int n);   /* replace the node list */
/* Forgets the value names ir_unique_name knows (a new compilation starts). */
void ir_names_reset(void);
char *ir_unique_name(ir_graph *g, const char *base);      /* a fresh value/node name */
ir_value *ir_find_value(ir_graph *g, const char *name);   /* searches enclosing graphs too */
/* The graph inputs v is computed from, through at most `depth` producers,
 * quoted for a message: "'a'", "'a', 'b'"; "" when none. */
const char *ir_source_inputs(arena *A, const ir_value *v, int depth);

/* Run-time branches (pass_branch.c).  A root node with the attributes
 * guard = "NAME" (a bool value of one element) and guard_when = 1 or 0
 * runs only when that value is true (1) or false (0): it computes a value
 * that only the branch of an If taken then needs.  ir_guard: the value (and
 * *when), or NULL for a node that always runs.  ir_node_reads: u reads v,
 * as an operand or in a graph it holds.  ir_guard_read_ok: node u may read
 * v, made by a node guarded by (c, when): u is guarded alike, or u is a
 * select of that If (a Where marked if_select on c) reading v only as the
 * operand it takes when c == when. */
ir_value *ir_guard(const ir_node *n, int *when);
int ir_node_reads(const ir_node *u, const ir_value *v);
int ir_guard_read_ok(const ir_node *u, const ir_value *v, const ir_value *c, int when);

/* attributes */
ir_attr *ir_attr_find(const ir_node *n, const char *name);
int64_t ir_attr_int(const ir_node *n, const char *name, int64_t def);
float ir_attr_float(const ir_node *n, const char *name, float def);
const char *ir_attr_string(const ir_node *n, const char *name, const char *def);
ir_attr *ir_attr_add(ir_node *n, const char *name, ir_attrkind kind);
void ir_attr_set_int(ir_node *n, const char *name, int64_t v);
void ir_attr_set_float(ir_node *n, const char *name, double v);
void ir_attr_set_string(ir_node *n, const char *name, const char *v);
void ir_attr_remove(ir_node *n, const char *name);      /* no such attribute: nothing */
void ir_attr_set_ints(ir_node *n, const char *name, int cnt, const int64_t *v);

/* 1 when output k of op has a data-dependent length (ir_value.data_dep):
 * NonZero, Compress and NonMaxSuppression output 0; Unique's Y, indices and
 * counts (not inverse_indices, one per element of X). */
int ir_op_dd_output(ir_op op, int k);
/* 1 when node n reads a value of data-dependent length and keeps it row by
 * row: its one such input x has it on axis 0 from a recurrence that its
 * condition ends (whose rows past the run are zeros: the node computes
 * defined values there too), n is a view (Identity,
 * Reshape, Squeeze, Unsqueeze, Flatten) or Cast of x, or an element-wise
 * operator whose other operands do not span axis 0 (rank below the
 * output's, or 1 there), and its output has x's rank (element-wise) and
 * x's dim on axis 0: row t of the output is made of row t of x alone, so
 * the run's first rows are the first elements of both buffers. */
int ir_dd_passes(const ir_node *n);
/* Or a Transpose of any value of data-dependent length (torch.stack(toks,
 * 1) of a decoder that breaks: [steps run, B] to [B, steps run]; NonZero's
 * [rank, N] to [N, rank]), whose kernel reads the run's length (the
 * emitter's m->dd_len) and writes the transposed tensor packed, the
 * length now on ir_dd_out_axis; for every other passing node that axis is
 * 0.  -1 when n passes no length. */
int ir_dd_out_axis(const ir_node *n);
/* Whether n reads a value of data-dependent length into one of fixed
 * shape: a Gather on that axis with constant indices (`toks[-1]` of a loop
 * that breaks: SequenceAt(-1) of its stacked tokens), whose kernel takes
 * the run's length as the axis' (negative indices from its end, one past
 * it refused at run time, RT_ERR_INDEX). */
int ir_dd_reads(const ir_node *n);
/* Whether output k of n has a data-dependent length: an ir_op_dd_output,
 * a stacked output of a recurrence with has_cond, or the output of a node
 * that ir_dd_passes. */
int ir_node_dd_output(const ir_node *n, int k);
/* The state of recurrence n that is its condition (role condition: the
 * run stops after the first step that makes it 0), counted among the
 * states; -1 when it runs all its steps. */
int ir_rec_cond_state(const ir_node *n);
/* The node whose kernel finds the length of data-dependent value v: its
 * producer, or the producer of the input that an ir_dd_passes node keeps. */
const ir_node *ir_dd_source(const ir_value *v);

/* bookkeeping */
void ir_recount(ir_graph *g);           /* recompute nuses/producer/ids (recursive) */
void ir_rec_drop_seq(ir_node *rec, int k);   /* recurrence rec without sequence input k */
void ir_rec_drop_output(ir_node *n, int j);  /* recurrence n without stacked output j (before schedule) */
int ir_value_is_const(const ir_value *v);               /* VAL_CONST with data */
int64_t ir_const_int(const ir_value *v, int64_t i);     /* element i of an integer const (or weight) */
double ir_const_num(const ir_value *v, int64_t i);      /* element i of a numeric const (or weight) */
int64_t ir_shape_const_numel(const ir_shape *s);         /* -1 unless all dims constant */
/* Element 0 of input k of n when it is an integer constant of one element
 * (a Slice's start, end, axis or step), or dflt when n has no input k: 1;
 * 0 when it is something else. */
int ir_input_int(const ir_node *n, int k, int64_t dflt, int64_t *v);
/* Whether Slice n reverses one axis of its input whole (torch.flip): step
 * -1 from the last index (-1, or n - 1 and past when the size n is known)
 * to past the first (an end at or below -n - 1; INT64_MIN + 1 when the
 * size is not known); that axis, normalised, in *axis. */
int ir_slice_flips(const ir_node *n, int64_t *axis);
/* Gives the product m (a Gemm) the bias c as its C, added once: beta is
 * reset to 1, since a beta that scaled no C (torch.jit.script's
 * Gemm(x, W, beta=0) for torch.mm) must not scale the bias moved in. */
void ir_gemm_set_bias(ir_node *m, ir_value *c);

/* layout (ir_layout.c): what pass_fuse, pass_plan and pass_schedule left in
 * the IR about storage and node kinds, read by later passes and emitters.
 *   ir_storage: the value whose storage v uses: v itself, or for a view (the
 *     output of a Reshape/Squeeze/Unsqueeze/Flatten/Identity that is not a
 *     graph output) the storage of its data input; views get its slot.
 *   ir_has_views: v is the storage of a view (a view of it appears in its
 *     graph), which shares its slot.
 *   ir_output_backing: the graph output whose caller's buffer holds v, or
 *     NULL: v a temporary of the root graph (not itself an output) that a
 *     graph output is a view of (an output listed first for it; not in
 *     --train builds, whose gradient outputs may be NULL).  Such a v has no
 *     slot: its producer writes the output's buffer.
 *   ir_last_axis_slice: n is Slice(x, [st], [en], [axis], [1]) on the last
 *     axis of a 2-D x with a constant number of columns; *st, *en get the
 *     column range.
 *   ir_is_column_view: such a Slice of a product, per-step input or column
 *     view: a column offset, never a copy.
 *   ir_is_fused_elem: an element-wise node of a fusion group.
 *   ir_is_step_scalar: a rank-0 fused f32 node of a body (a schedule such as
 *     NAG's mu_t): computed once per step, a local.
 *   ir_is_generic_step_node: a body node that is neither a product, a column
 *     view nor fused: printed as in the root graph, on workspace buffers.
 *   ir_is_scalar_node: a node of rank-0 body values only (a scripted step
 *     counter's Cast/Mod/Add).
 *   ir_cols_of: the columns of a body value (its last dim; 1 for a scalar).
 *   IR_MAX_ROW_BUFFERS: the most per-thread row pointers (products, Concats,
 *     stored fused values) a threaded recurrence may have (pass_schedule
 *     threads no more, the emitter declares that many).
 *   ir_fused_cols: 1 when every fused loop of body b (step scalars aside)
 *     runs over the same columns, *hc; 0 when they differ or there is none.
 *   ir_out_direct: body value v is scan output k (0-based after the states)
 *     of its recurrence, which pass_schedule marked out_direct: its producer
 *     writes the step's rows of the output, so v has no slot; else -1.
 *   ir_concat_in_place: the body Concat marked in_place that v is an input
 *     of, *col its first column there: v's producer writes those columns
 *     of the Concat's storage, so v has no slot; else NULL. */
const ir_value *ir_storage(const ir_value *v);
const ir_value *ir_output_backing(const ir_value *v);
int ir_has_views(const ir_value *v);
int ir_last_axis_slice(const ir_node *n, int64_t *st, int64_t *en);
int ir_is_column_view(const ir_node *n);
int ir_is_fused_elem(const ir_node *n);
int ir_is_step_scalar(const ir_node *n);
int ir_is_generic_step_node(const ir_node *n);
int ir_is_scalar_node(const ir_node *n);
int ir_fused_cols(const ir_graph *b, ir_dim *hc);
int ir_out_direct(const ir_value *v);
const ir_node *ir_concat_in_place(const ir_value *v, int64_t *col);
/* Storage of the output y of a root Gemm that pass_schedule marked per_step
 * (its recurrence computes it step by step, x_proj): 0 when the fused loops
 * that read it compute it (x_proj "inline": nothing stored); 1 with *numel
 * one step's rows of it (x_proj "step": each step overwrites them); -1 for
 * any other value.  ir_slot_numel: the elements v's slot must hold (one
 * step's rows for a "step" projection, else all of v); pass_plan sizes
 * slots and the emitter lays out the workspace by it. */
int ir_step_storage(const ir_value *y, ir_dim *numel);
ir_dim ir_slot_numel(const ir_value *v);
/* Slot `slot` of root graph g (bodies included): the dtype and the element
 * count it must hold (equal monomials, or the largest constant, of its
 * values' ir_slot_numel: see pass_plan.c); 0 when no value has it. */
int ir_slot_info(const ir_graph *g, int slot, ir_dim *numel, ir_dtype *dt);
ir_dim ir_cols_of(const ir_value *v);
#define IR_MAX_ROW_BUFFERS 64

/* printing (ir_print.c): the native text format, and dims for messages */
#include <stdio.h>
void ir_print(FILE *f, const ir_graph *g);
const char *ir_dim_str(arena *A, const ir_graph *g, ir_dim d);      /* "5", "batch", "4*seq*batch" */
const char *ir_shape_str(arena *A, const ir_graph *g, const ir_shape *s); /* "[seq, batch, 4]" */

/* checking (ir_verify.c): internal consistency after every pass in test builds */
struct diag;
int ir_verify(const ir_graph *g, const char *after_pass);  /* 0 ok; prints and aborts on failure */
/* ir_verify without the dtype and shape checks: between the rounds of the
 * resolving stages (compile.c), where what follows a pending node is not
 * inferred yet */
int ir_verify_structure(const ir_graph *g, const char *after_pass);

#endif
