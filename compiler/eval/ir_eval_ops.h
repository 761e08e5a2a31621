/* ir_eval_ops.h: internal to the reference interpreter (ir_eval.c, the
 * core: element-wise, views, products, reductions, recurrences;
 * ir_eval_ops.c, the operators beyond them: convolutions, pools,
 * normalisations, losses, indexing, quantization, signals, the training
 * gradients; ir_eval_dd.c, those whose output length depends on the data;
 * ir_eval_rnn.c, ONNX LSTM, GRU and RNN; ir_eval_cell.c, the native Cell
 * layer and MatrixExp).  Not for the passes or the emitters, which never
 * call the interpreter. */
#ifndef CELLC_IR_EVAL_OPS_H
#define CELLC_IR_EVAL_OPS_H

#include "ir_eval.h"

/* Stops the run at node n with a reason (ev_run.why); returns 1. */
int ev_stop(ev_run *r, const ir_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ev_stop for a limit of the reference (ev_run.noref): an operator, an
 * attribute or a form it has no definition for, or one it cannot
 * reproduce (random draws). */
int ev_noref(ev_run *r, const ir_node *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The concrete shape of v into d; its rank, or -1 if some size is unknown. */
int ev_shape_of(const ev_run *r, const ir_graph *g, const ir_value *v, int64_t *d);
int ev_is_float(ir_dtype t);
/* v as a value of type t: float32 rounding, integer wrap-around. */
double ev_as_type(ir_dtype t, double v);
/* Offset in t of output index idx (rank R) under broadcasting. */
int64_t ev_bcast_off(const ev_tensor *t, int R, const int64_t *idx);
/* The next row-major index of a tensor of sizes d (rank R). */
void ev_next_index(int64_t *idx, const int64_t *d, int R);
/* log softmax of x [outer, m, inner] along its middle axis into y (same
 * layout), the largest element subtracted first: Softmax, LogSoftmax, the
 * class losses and their gradients share it. */
void ev_log_softmax(const double *x, int64_t outer, int64_t m, int64_t inner, double *y);

static inline int64_t ev_ival(const ev_tensor *t, int64_t i) { return (int64_t)t->x[i]; }
static inline int64_t ev_norm_axis(int64_t a, int r) { return a < 0 ? a + r : a; }

/* The product of d[0..n-1]. */
int64_t ev_prod(const int64_t *d, int n);
/* An INTS attribute of cnt values, or def for each when absent. */
void ev_ints_or(const ir_node *n, const char *name, int cnt, int64_t def, int64_t *v);
/* A new tensor of dtype dt with x's shape. */
ev_tensor *ev_new_like(ev_run *r, ir_dtype dt, const ev_tensor *x);

/* E = expm(S), S [n, n] in double (scaling and squaring; scratch in r's
 * arena); -1 if S is not finite.  ir_eval_cell.c. */
int ev_expm(ev_run *r, const double *S, int64_t n, double *E);

/* One operator's reference: inputs in[k] (NULL where omitted), outputs
 * out[k] (left NULL where not computed); 0, or ev_stop's 1. */
typedef int (*ev_op_fn)(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
/* ir_eval_ops.c's operators, by op (NULL: not there). */
extern const ev_op_fn ev_ops[OP_COUNT];
/* ir_eval_dd.c: the operators whose output length depends on the data. */
int ev_nonzero(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_compress(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_unique(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_nms(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
/* ir_eval_math.c: Det and Einsum, sampling, signals, sequences, the
 * optimisers, TfIdfVectorizer. */
int ev_det(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_einsum(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_resize(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_gridsample(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_roialign(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_dft(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_stft(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_window(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_melweight(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_lrn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_mvn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_reverseseq(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_maxunpool(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_optim(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_tfidf(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
/* ir_eval_rnn.c: ONNX LSTM, GRU and RNN from the specification's equations. */
int ev_rnn(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
/* ir_eval_cell.c: a native Cell layer from the equations of docs/cells.md,
 * and MatrixExp. */
int ev_cell(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);
int ev_matexp(ev_run *r, const ir_graph *g, const ir_node *n, ev_tensor **in, ev_tensor **out);

#endif
