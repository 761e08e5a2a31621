/* ode.h: the ODE blocks and ODE-RNN hybrids of the native format
 * (docs/cells.md, "ODE blocks"): `h = hbnode(x, hidden=H, solver=dopri5,
 * rtol=R, atol=A, t1=T)` and `h = hbnode_rnn(x, dt, hidden=H, ...)`.
 *
 * A block is one OdeBlock node (ops.def), which the emitter prints as one
 * call of rt_ode_block_f32 (runtime/rt_ode.c):
 *   inputs   X [B, I] f32, then the parameters in rt_ode_block_f32's
 *            order (cellrt.h): exactly the ones the model reads.
 *   outputs  Y [B, H] f32 = h(t1), and stats i64 [3] = the forward NFE,
 *            the accepted and the rejected steps (`ode_stats(h)` in a model).
 *   attrs    model (node | hbnode | ghbnode | anode | sonode), augment
 *            (anode's P, only there), solver (euler | midpoint |
 *            rk4 | dopri5), hidden, t0, t1 (floats), and by the solver
 *            either steps (fixed-step: equal steps over [t0, t1]) or rtol,
 *            atol (floats) and max_steps (dopri5).  Every one is set, none
 *            defaulted later: `cellc dump` shows what the code will do.
 * A hybrid is one OdeRnn node, printed as one call of rt_ode_rnn_f32:
 *   inputs   X [T, B, I], dt [T, B] (f32: each row's gap before the
 *            observation), W_x [H, I], b_x [H], W_u [H, H], W_h [H, H],
 *            b_h [H], [w], [c]
 *   outputs  Y [T, B, H], stats (totals over the sequence)
 *   attrs    as OdeBlock's, without t0 and t1 (each step flows over s in
 *            [0, 1] with the dynamics scaled by the row's gap).
 * The batch is one system: its rows share every step (cellrt.h).
 */
#ifndef CELLC_ODE_H
#define CELLC_ODE_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* 1 when name is an ODE block (node, hbnode, ghbnode, anode, sonode). */
int ode_is_block(const char *name);
/* The model (rt_ode_model) of a hybrid's name (ode_rnn, hbnode_rnn,
 * ghbnode_rnn), or -1. */
int ode_rnn_model(const char *name);

/* One option of a block as the parser reads it (word NULL: a number).
 * 0, or -1 with a message in err. */
int ode_check_option(const char *key, double num, const char *word, char *err, size_t errlen);
/* The options every block accepts, for messages: "hidden, solver, ...". */
const char *ode_option_list(void);

/* Sets the attributes of OdeBlock node n (model set already, options
 * checked one by one) from the layer's options: defaults filled in, the
 * combinations checked.  0, or -1 with a message in err. */
typedef struct ode_opt {
	const char *name;
	double num;
	const char *word;       /* NULL: a number */
} ode_opt;
int ode_set_attrs(ir_node *n, const ode_opt *opts, int nopts, char *err, size_t errlen);
enum { ODE_MAX_PARAMS = 7 };

/* Parameters of the block (rnn 0) or hybrid (rnn 1) of model m
 * (rt_ode_model) with input size I and state size H, in node input order
 * after X (and dt): their count (<= 7). */
typedef struct ode_param {
	const char *name;
	int rank;
	int64_t dims[2];
} ode_param;
int ode_params(int model, int rnn, int64_t I, int64_t H, int64_t P, ode_param *out);
/* The initialiser of a parameter: the matrices and biases uniform in
 * +-1/sqrt(H) (nn.Linear's), w = -3 (gamma = sigmoid(-3)), c = 0
 * (xi = ln 2); a hybrid's W_u as W_h. */
void ode_param_init(const ode_param *p, int64_t H, uint64_t seed, float *data);

/* NULL when the attributes and operand count of OdeBlock node n are
 * consistent, else what is wrong (ir_verify and pass_infer say it). */
const char *ode_check_node(arena *A, const ir_node *n);
/* The shapes of the outputs (pass_infer). */
int ode_infer(ir_graph *g, ir_node *n, diag *D);

#endif
