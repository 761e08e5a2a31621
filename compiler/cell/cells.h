/* cells.h: the library of named recurrent cells (docs/cells.md), for the `.cell`
 * front end (parser) and pass_lower_cell.
 *
 * A layer `y = NAME(x, key=value, ...)` of a `.cell` model becomes one CELL
 * node (ops.def; docs/cell-format.md):
 *   inputs   [X, init_state_0 .. init_state_{n_states-1}, param_0 .. param_{n_params-1}]
 *            X is [T, B, I] (seq_axis 0) or [B, T, I] (seq_axis 1); an init
 *            state may be NULL (zeros); params in the order cell_params gives.
 *   outputs  [Y, final_state_0 ..]: Y stacked over time with X's time axis,
 *            [T, B, H] (or [B, T, H]); final states [B, size] (may be NULL).
 *   attrs    cell (string, canonical name: "momentum_lstm", "lstm" is
 *            canonicalised to "plain_lstm" by cell_find's def->name),
 *            hidden (int), n_params, n_states (ints), seq_axis (int), and the
 *            layer's options: numbers as ATTR_FLOAT (or ATTR_INT), identifiers
 *            and strings as ATTR_STRING.
 * pass_lower_cell (right after pass_infer) turns every CELL node into one
 * RECURRENCE whose body is plain IR (GEMM transB=1, Slice on the last axis,
 * element-wise ops), so cells go through the same hoisting and fusion as ONNX
 * LSTMs: the input projection u = x W_x^T + b_x becomes one GEMM over T*B rows
 * before the loop and the dynamics fuse into the step's element-wise loop.
 *
 * ==== The math (exactly what the lowering computes; tests follow this) ====
 *
 * Notation: t is 1-based; x_t [I]; h [H]; parameter layouts as nn.Linear
 * ([out, in], y = W x + b); gate blocks in PyTorch order.  Every state starts
 * at zero unless the model passes an initial value.
 *
 * Base cells: u_t = W_x x_t + b_x (all gate rows), r_t = W_h h_{t-1} + b_h,
 * a_t = d_t + r_t where d_t is the dynamic's output (d_t = u_t for plain).
 *   rnn     G = H.   h_t = act(a_t), act = tanh (default) | relu (option act)
 *   lstm    G = 4H, blocks [i f g o]: i,f,o = sigmoid, g = tanh,
 *           c_t = f*c_{t-1} + i*g, h_t = o*tanh(c_t).   states h, c
 *   gru     G = 3H, blocks [r z n]: r = sigmoid(d_r + r_r), z = sigmoid(d_z + r_z),
 *           n = tanh(d_n + r * r_n) (r_n includes b_hn),
 *           h_t = (1 - z)*n + z*h_{t-1}
 *   dtriv   G = H, params W_x [H, I] (no b_x), A [H, H], base [H, H], b [H]
 *           (no W_h / b_h): h_t = modrelu(d_t + h_{t-1} M; b),
 *           modrelu(z; b) = sign(z) * relu(|z| + b),
 *           M = base . expm(S), S = triu(A,1) - triu(A,1)^T (A's strict upper
 *           triangle only), computed at compile time in double precision;
 *           h_{t-1} M is the row vector times M (not transposed).
 * Dynamics (applied to all G rows of u_t, b_x included):
 *   plain     d_t = u_t
 *   momentum  v_t = mu*v_{t-1} + s*u_t;  d_t = v_t          (state v [B, G])
 *   nag       k = ((t-1) mod F) + 1 (k = t when F = restart = 0),
 *             mu_t = (k-1)/(k+2);  v_t = mu_t*v_{t-1} + s*u_t;  d_t = v_t
 *             form=extrapolate (rnn, lstm, dtriv: the cells where a_t is the sum
 *             d_t + r_t; r_t = h_{t-1} M for dtriv): q_t = r_t - s*u_t,
 *             a_t = q_t + mu_t*(q_t - q_{t-1}), q_0 = 0 (state q [B, G], no v);
 *             rejected for gru (its r_n term is gated).
 *   adam      v_t = mu*v_{t-1} + s*u_t; m_t = beta*m_{t-1} + (1-beta)*u_t*u_t;
 *             d_t = v_t / sqrt(m_t + eps)                   (states v, m)
 *   rmsprop   adam with mu = 0 (option mu not accepted)
 *   Options (defaults): mu 0.6, s 0.6, beta 0.999, eps 1e-16 (inside the
 *   root), restart 0, form momentum.
 *   Dynamic states are [B, G]; the recurrence carries them split per gate
 *   block, the CELL node's final states are whole [B, G] (gate order).
 *   State order of a layer: base states (h | h, c), then v, then m (or q).
 *
 * Other cells:
 *   irnn (option K >= 1 inner steps, default 1 = SiRNN; g0 = h (default) | zero;
 *        alpha 1.0; act relu (default) | tanh).  Params W_x [H, I], b_x [H],
 *        W_h [H, H] (U), eta [K, H] (init 0.01).  Per input step m:
 *          g_0 = h_{m-1} (or 0);  for k = 1..K:
 *          g_k = g_{k-1} + eta_k * (act(W_h (g_{k-1} + h_{m-1}) + W_x x_m + b_x)
 *                                   - alpha*(g_{k-1} + h_{m-1}))
 *          h_m = g_K.   state h.
 *   momentum_attention (options key = dk (default hidden), mu 0.6, s 0.6,
 *        weighting = recurrent (default) | length).  Params W_q [dk, I], b_q [dk],
 *        W_k [dk, I], b_k [dk], W_v [H, I], b_v [H].  phi(z) = elu(z) + 1,
 *        q = phi(W_q x + b_q), k = phi(W_k x + b_k), v = W_v x + b_v.
 *        recurrent: p_t = mu*p_{t-1} + k v^T;  S_t = S_{t-1} + s*p_t;
 *        length:    S_t = S_{t-1} + w_t * k v^T,
 *                   w_t = s*(1 - mu^(L-t+1))/(1 - mu) (s*(L-t+1) when mu = 1),
 *                   L = the number of steps of the run (T);
 *        both:      z_t = z_{t-1} + k;  y_t = (q^T S_t) / (q^T z_t + 1e-6)  [H].
 *        states S [B, dk*H] (row-major dk x H), z [B, dk], p [B, dk*H]
 *        (recurrent only).
 *   heavy_ball_rnn (options steps n >= 1 (default 1), act identity (HB,
 *        default) | tanh (generalised HB)).  Params W_x [H, I], b_x [H],
 *        W_h [H, H], b_h [H], w [1], c [1]; gamma = sigmoid(w), xi = softplus(c).
 *        Per input step t: m <- m + W_x x_t + b_x (the input kicks the
 *        velocity), then n explicit Euler steps of size 1/n over [0, 1] of
 *          h' = act(m),  m' = -gamma*m + tanh(W_h h + b_h) - xi*h:
 *          h_k = h_{k-1} + (1/n)*act(m_{k-1})
 *          m_k = m_{k-1} + (1/n)*(-gamma*m_{k-1} + tanh(W_h h_{k-1} + b_h) - xi*h_{k-1})
 *        y_t = h after the n steps.  states h, m.  Init: w = 0, c = 0.
 *   fastrnn  Params W_x [H, I], b_x [H], W_h [H, H], alpha [1] (init -3),
 *        beta [1] (init 3): h_t = sigmoid(beta)*h_{t-1}
 *                                 + sigmoid(alpha)*tanh(W_x x_t + b_x + W_h h_{t-1}).
 *
 * Initialisers (option init, default pytorch; docs/cells.md section 6, rt_init.c):
 *   pytorch     every parameter uniform(-1/sqrt(H), 1/sqrt(H)) (nn.RNN/LSTM/GRU),
 *               except the cell-specific ones below
 *   reference   W_x orthogonal, W_h eye(G, H), biases 0 (the authors' LSTM init)
 *   orthogonal  W_x and W_h orthogonal, biases 0
 *   eye         W_h eye(G, H), W_x as pytorch, biases 0
 *   kaiming     W_x and W_h Kaiming normal (std sqrt(2/fan_in)), biases 0
 *   sparse      W_x and W_h Martens sparse (15 N(0,1) incoming weights per
 *               unit, fewer when fan_in < 15), biases 0
 *   echo        W_h echo-state (15 non-zeros per unit, spectral radius 1.1
 *               of the square [H, H] blocks), W_x as pytorch, biases 0
 *   LSTM bases: the forget block of b_x and of b_h is set to fg_init
 *   (default 1.0) when init=reference or when fg_init is given.
 *   Cell-specific: dtriv A "henaff" (A[2i][2i+1] ~ U(-pi, pi)), base eye,
 *   b U(-0.01, 0.01), W_x Kaiming normal; irnn eta 0.01; fastrnn alpha -3,
 *   beta 3; heavy_ball_rnn w 0, c 0.
 */
#ifndef CELLC_CELLS_H
#define CELLC_CELLS_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"

typedef struct cell_def cell_def;       /* opaque: one built-in cell */

/* The cell of that name ("lstm", "momentum_lstm", "plain_gru", "irnn", ...);
 * NULL if unknown. */
const cell_def *cell_find(const char *name);
const char *cell_name(const cell_def *c);       /* canonical name */
const char *cell_doc(const cell_def *c);        /* options and equations, one paragraph */
int cell_count(void);                           /* the built-in cells, for listings */
const cell_def *cell_at(int i);

/* ---- options ---- */

typedef enum { CELL_OPT_NUM, CELL_OPT_INT, CELL_OPT_WORD } cell_optkind;

typedef struct cell_option {
	const char *name;
	cell_optkind kind;
	double def;             /* default of NUM/INT options */
	const char *words;      /* WORD: allowed values "a|b|c", the first is the default */
	const char *doc;
} cell_option;

/* The options the cell accepts (hidden, init and fg_init included). */
int cell_options(const cell_def *c, const cell_option **opts);
/* Checks one option as the parser reads it: 0 if fine, else -1 with a
 * message in err ("unknown option 'foo' for momentum_lstm (options: ...)",
 * "mu must be a number", "act must be tanh or relu").  num is used for
 * numbers, word for identifiers/strings (exactly one is given: word NULL
 * means a number). */
int cell_check_option(const cell_def *c, const char *key, double num, const char *word,
		      char *err, size_t errlen);
/* Checks every option of CELL node n (unknown, missing required hidden,
 * ranges, cross-option rules); reports with diag_node.  Returns the number
 * of errors. */
int cell_check_options(const cell_def *c, const ir_node *n, diag *D);
/* Option values of node n (defaults when absent). */
double cell_opt_num(const cell_def *c, const ir_node *n, const char *key);
const char *cell_opt_word(const cell_def *c, const ir_node *n, const char *key);

/* ---- parameters and states ---- */

enum { CELL_MAX_PARAMS = 16, CELL_MAX_STATES = 8 };

typedef struct cell_param {
	const char *name;       /* "W_x", "b_x", "W_h", "b_h", "A", ... */
	int rank;               /* 1 or 2 */
	int64_t dims[2];
	int fixed;              /* held fixed by a training build (the weight is frozen):
	                           dtriv's base, which only a retraction would change */
} cell_param;

/* Parameters of a layer with input size I and hidden size H and the options
 * of `opts` (a CELL node with its attrs; NULL: defaults), in CELL-node input
 * order.  Returns the count (<= max), or -1 if the options are invalid. */
int cell_params(const cell_def *c, const ir_node *opts, int64_t I, int64_t H, cell_param *out,
		int max);

typedef struct cell_state {
	const char *name;       /* "h", "c", "v", "m", "q", "S", "z", "p" */
	int64_t size;           /* columns: the state is [B, size] */
} cell_state;

/* States of a layer (init-state inputs and final-state outputs of the CELL
 * node, in order).  Returns the count or -1. */
int cell_states(const cell_def *c, const ir_node *opts, int64_t I, int64_t H, cell_state *out,
		int max);

/* Fills parameter p (one of cell_params' results) with its initialiser,
 * chosen by the layer's init / fg_init options.  seed: use
 * cell_param_seed(model seed, layer name, param name).  0 or -1. */
int cell_param_init(const cell_def *c, const ir_node *opts, int64_t I, int64_t H,
		    const cell_param *p, uint64_t seed, float *data);
uint64_t cell_param_seed(uint64_t model_seed, const char *layer, const char *param);

/* Shapes of the CELL node's outputs from its inputs (pass_infer calls it). */
int cell_infer(ir_graph *g, ir_node *n, diag *D);

/* The lowering: replaces CELL node n of root graph g by nodes appended to
 * g (a RECURRENCE and the assembly around it).  Returns the error count. */
int cell_lower(ir_graph *g, ir_node *n, diag *D);

#endif
