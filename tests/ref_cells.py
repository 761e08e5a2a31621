"""ref_cells.py: PyTorch reference implementations of every cell of
docs/cells.md (the golden-data oracle of the `cells` test group),
written from docs/cells.md and not from cellc's cell library.

The model followed is the MomentumLSTM of the MomentumRNN paper's appendix
(Nguyen et al. 2020): a cell module holding two nn.Linear maps, x2h (W_x,
b_x: the input projection u_t) and h2h (W_h, b_h: the recurrent projection
r_t), whose forward applies the input dynamic to u_t *before* the gates:

    vy    = mu * v + s * x2h(x)          # momentum on the input projection
    gates = vy + h2h(hx)                 # then the base cell as usual

Every `<dynamic>_<base>` pair is the same shape of code: `Dynamic.step`
turns u_t into d_t (carrying v, m or q), `Base.step` combines d_t with the
recurrent projection (docs/cells.md sections 2 and 3).  The other cells of
docs/cells.md section 4 (iRNN/SiRNN, causal momentum attention, heavy-ball RNN,
FastRNN) are separate classes.

Weights are plain dicts {param name: ndarray} with the names and layouts of
docs/cells.md / compiler/cell/cells.h (nn.Linear layout [out, in], gate rows in
PyTorch order ifgo / rzn); `param_shapes` lists them for a cell, so that the
test generators draw random weights and write the weights file.  Everything
runs in the dtype given (float32 for the golden data, float64 to measure how
accurate the float32 golden is).

    run_layer(cell, opts, params, x, dtype) -> (Y [T,B,H], finals {state: [B,n]})
"""
import math

import numpy as np
import torch

DYNAMICS = ("plain", "momentum", "nag", "adam", "rmsprop")
BASES = ("rnn", "lstm", "gru", "dtriv")
GATES = {"rnn": 1, "lstm": 4, "gru": 3, "dtriv": 1}

# option defaults (docs/cells.md; the cell library documents the same values)
DEFAULTS = {
    "momentum": {"mu": 0.6, "s": 0.6},
    "nag": {"s": 0.6, "restart": 0, "form": "momentum"},
    "adam": {"mu": 0.6, "s": 0.6, "beta": 0.999, "eps": 1e-16},
    "rmsprop": {"s": 0.6, "beta": 0.999, "eps": 1e-16},
    "plain": {},
}


def split_name(cell):
    """'momentum_lstm' -> ('momentum', 'lstm'); 'lstm' -> ('plain', 'lstm')."""
    if cell in BASES:
        return "plain", cell
    dyn, _, base = cell.partition("_")
    if dyn not in DYNAMICS or base not in BASES:
        raise KeyError("not a <dynamic>_<base> cell: %s" % cell)
    return dyn, base


def T(a, dtype):
    """a as a tensor of dtype; a tensor keeps its autograd graph (the
    gradient oracle of tests/gen_grad_cases.py passes leaf tensors)."""
    if isinstance(a, torch.Tensor):
        return a.to(dtype)
    return torch.as_tensor(np.asarray(a), dtype=dtype)


# ---- input dynamics (docs/cells.md section 3)--------------------------------

class Dynamic:
    """Turns the input projection u_t [B, R] into the term d_t that replaces
    it; `states` names the extra carried states (each [B, R])."""

    def __init__(self, name, opts):
        self.name = name
        o = dict(DEFAULTS[name])
        o.update({k: v for k, v in opts.items() if k in o})
        self.o = o
        if name == "rmsprop":
            self.o["mu"] = 0.0
        self.states = {"plain": (), "momentum": ("v",), "nag": ("v",), "adam": ("v", "m"),
                       "rmsprop": ("v", "m")}[name]
        if name == "nag" and o["form"] == "extrapolate":
            self.states = ("q",)

    def mu_t(self, t):
        """NAG schedule: k = ((t-1) mod F) + 1 (k = t when F = 0),
        mu_t = (k-1)/(k+2); t is 1-based."""
        F = int(self.o["restart"])
        k = ((t - 1) % F) + 1 if F > 0 else t
        return (k - 1.0) / (k + 2.0)

    def step(self, u, st, t):
        """u [B,R]; st: dict of this dynamic's states (updated in place);
        returns d_t.  (nag form=extrapolate is handled by the base: see
        Base.preact.)"""
        o = self.o
        if self.name == "plain":
            return u
        if self.name == "momentum":
            st["v"] = o["mu"] * st["v"] + o["s"] * u
            return st["v"]
        if self.name == "nag":
            st["v"] = self.mu_t(t) * st["v"] + o["s"] * u
            return st["v"]
        # adam, rmsprop (mu = 0): eps inside the square root
        st["v"] = o["mu"] * st["v"] + o["s"] * u
        st["m"] = o["beta"] * st["m"] + (1.0 - o["beta"]) * u * u
        return st["v"] / torch.sqrt(st["m"] + o["eps"])


# ---- base cells (docs/cells.md section 2) ---------------------------------------

def modrelu(z, b):
    return torch.sign(z) * torch.relu(torch.abs(z) + b)


def dtriv_matrix(A, base, dtype):
    """M = base . expm(S), S = triu(A,1) - triu(A,1)^T, computed in float64
    and rounded to dtype (the matrix is a function of the weights only;
    differentiable when A and base are tensors)."""
    A64 = T(A, torch.float64)
    S = torch.triu(A64, 1) - torch.triu(A64, 1).T
    M = T(base, torch.float64) @ torch.matrix_exp(S)
    return M.to(dtype)


def frozen_params(cell):
    """Names of the parameters a training build holds fixed (no gradient,
    not updated): dtriv's base (docs/cells.md)."""
    if cell in OTHER_CELLS or cell == "momentum_attention":
        return ()
    return ("base",) if split_name(cell)[1] == "dtriv" else ()


def param_shapes(cell, opts, I, H):
    """[(param name, shape)] of a built-in cell (names without the layer
    prefix), in the order the cell library lists them."""
    if cell in OTHER_CELLS:
        return OTHER_CELLS[cell].param_shapes(opts, I, H)
    if cell == "momentum_attention":
        return attention_param_shapes(opts, I, H)
    _, base = split_name(cell)
    R = GATES[base] * H
    if base == "dtriv":
        return [("W_x", (R, I)), ("A", (H, H)), ("base", (H, H)), ("b", (H,))]
    return [("W_x", (R, I)), ("b_x", (R,)), ("W_h", (R, H)), ("b_h", (R,))]


class DynCell:
    """One `<dynamic>_<base>` cell as a per-step module (MomentumLSTM shape)."""

    def __init__(self, cell, opts, params, dtype):
        self.dyn_name, self.base = split_name(cell)
        self.dyn = Dynamic(self.dyn_name, opts)
        self.act = opts.get("act", "tanh")
        p = {k: T(v, dtype) for k, v in params.items()}
        self.W_x = p["W_x"]
        self.b_x = p.get("b_x")
        self.H = p["W_x"].shape[0] // GATES[self.base]
        if self.base == "dtriv":
            self.M = dtriv_matrix(params["A"], params["base"], dtype)
            self.b = p["b"]
        else:
            self.W_h, self.b_h = p["W_h"], p["b_h"]
        self.dtype = dtype
        self.extrapolate = self.dyn_name == "nag" and self.dyn.o["form"] == "extrapolate"

    def init_state(self, B):
        R = self.W_x.shape[0]
        st = {"h": torch.zeros(B, self.H, dtype=self.dtype)}
        if self.base == "lstm":
            st["c"] = torch.zeros(B, self.H, dtype=self.dtype)
        for s in self.dyn.states:
            st[s] = torch.zeros(B, R, dtype=self.dtype)
        return st

    def x2h(self, x):
        u = x @ self.W_x.T
        return u + self.b_x if self.b_x is not None else u

    def h2h(self, h):
        if self.base == "dtriv":
            return h @ self.M
        return h @ self.W_h.T + self.b_h

    def step(self, x, st, t):
        """x [B,I], st: states (replaced); t 1-based.  Returns h_t."""
        u = self.x2h(x)
        r = self.h2h(st["h"])
        if self.extrapolate:
            # nag form=extrapolate: q_t = r_t - s u_t, a_t = q_t + mu_t (q_t - q_{t-1})
            q = r - self.dyn.o["s"] * u
            a = q + self.dyn.mu_t(t) * (q - st["q"])
            st["q"] = q
            return self.combine(a, None, st)
        d = self.dyn.step(u, st, t)
        if self.base == "gru":
            return self.combine(d, r, st)
        return self.combine(d + r, None, st)

    def combine(self, a, r, st):
        """a: pre-activation (d + r), or d with r separate for the GRU."""
        H, h = self.H, st["h"]
        if self.base == "rnn":
            h = torch.tanh(a) if self.act == "tanh" else torch.relu(a)
        elif self.base == "lstm":
            i, f, g, o = a[:, :H], a[:, H:2 * H], a[:, 2 * H:3 * H], a[:, 3 * H:]
            c = torch.sigmoid(f) * st["c"] + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            st["c"] = c
        elif self.base == "gru":
            if r is None:
                raise ValueError("gru has no extrapolate form")
            rr = torch.sigmoid(a[:, :H] + r[:, :H])
            z = torch.sigmoid(a[:, H:2 * H] + r[:, H:2 * H])
            n = torch.tanh(a[:, 2 * H:] + rr * r[:, 2 * H:])
            h = (1 - z) * n + z * h
        else:
            h = modrelu(a, self.b)
        st["h"] = h
        return h


# ---- section 3 cells --------------------------------------------------------

class FastRNN:
    """FastRNN: h_t = sigmoid(beta) h_{t-1}
                      + sigmoid(alpha) tanh(W_x x_t + b_x + W_h h_{t-1})."""

    @staticmethod
    def param_shapes(opts, I, H):
        return [("W_x", (H, I)), ("b_x", (H,)), ("W_h", (H, H)), ("alpha", (1,)), ("beta", (1,))]

    def __init__(self, cell, opts, params, dtype):
        self.p = {k: T(v, dtype) for k, v in params.items()}
        self.H = self.p["W_h"].shape[0]
        self.dtype = dtype

    def init_state(self, B):
        return {"h": torch.zeros(B, self.H, dtype=self.dtype)}

    def step(self, x, st, t):
        p, h = self.p, st["h"]
        h = torch.sigmoid(p["beta"]) * h + torch.sigmoid(p["alpha"]) * torch.tanh(
            x @ p["W_x"].T + p["b_x"] + h @ p["W_h"].T)
        st["h"] = h
        return h


class IRNN:
    """iRNN / SiRNN (options K >= 1, g0 = h | zero, alpha, act = relu | tanh):
    per input step m, K inner steps from g_0 = h_{m-1} (g0=h) or 0 (g0=zero):
      g_k = g_{k-1} + eta_k * (act(W_h (g_{k-1} + h_{m-1}) + W_x x_m + b_x)
                               - alpha (g_{k-1} + h_{m-1}))
    h_m = g_K; eta [K, H] (one learnable vector per inner step)."""

    @staticmethod
    def param_shapes(opts, I, H):
        K = int(opts.get("K", 1))
        return [("W_x", (H, I)), ("b_x", (H,)), ("W_h", (H, H)), ("eta", (K, H))]

    def __init__(self, cell, opts, params, dtype):
        self.p = {k: T(v, dtype) for k, v in params.items()}
        self.K = int(opts.get("K", 1))
        self.alpha = float(opts.get("alpha", 1.0))
        self.act = opts.get("act", "relu")
        self.g0 = opts.get("g0", "h")
        self.H = self.p["W_h"].shape[0]
        self.dtype = dtype

    def init_state(self, B):
        return {"h": torch.zeros(B, self.H, dtype=self.dtype)}

    def step(self, x, st, t):
        p, h = self.p, st["h"]
        act = torch.relu if self.act == "relu" else torch.tanh
        wx = x @ p["W_x"].T + p["b_x"]
        g = h if self.g0 == "h" else torch.zeros_like(h)
        for k in range(self.K):
            gh = g + h
            g = g + p["eta"][k] * (act(gh @ p["W_h"].T + wx) - self.alpha * gh)
        st["h"] = g
        return g


class HeavyBallRNN:
    """Heavy-ball RNN (options steps n >= 1, act = identity | tanh); gamma =
    sigmoid(w), xi = softplus(c).  Per input step: m <- m + W_x x_t + b_x,
    then n explicit Euler steps of size 1/n over [0, 1] of
      h' = act(m),  m' = -gamma m + tanh(W_h h + b_h) - xi h
    (both updates from the values of the previous sub-step); y_t = h."""

    @staticmethod
    def param_shapes(opts, I, H):
        return [("W_x", (H, I)), ("b_x", (H,)), ("W_h", (H, H)), ("b_h", (H,)), ("w", (1,)), ("c", (1,))]

    def __init__(self, cell, opts, params, dtype):
        self.p = {k: T(v, dtype) for k, v in params.items()}
        self.n = int(opts.get("steps", 1))
        self.act = opts.get("act", "identity")
        self.H = self.p["W_h"].shape[0]
        self.dtype = dtype

    def init_state(self, B):
        return {"h": torch.zeros(B, self.H, dtype=self.dtype), "m": torch.zeros(B, self.H, dtype=self.dtype)}

    def step(self, x, st, t):
        p = self.p
        gamma = torch.sigmoid(p["w"])
        xi = torch.nn.functional.softplus(p["c"])
        act = torch.tanh if self.act == "tanh" else (lambda z: z)
        h, m = st["h"], st["m"] + x @ p["W_x"].T + p["b_x"]
        dt = 1.0 / self.n
        for _ in range(self.n):
            h, m = (h + dt * act(m),
                    m + dt * (-gamma * m + torch.tanh(h @ p["W_h"].T + p["b_h"]) - xi * h))
        st["h"], st["m"] = h, m
        return h


def momentum_attention(opts, params, x, dtype):
    """Causal momentum attention (options key = dk (default hidden), mu, s,
    weighting = recurrent | length), x [T,B,I] -> y [T,B,H]:
      q = phi(W_q x + b_q), k = phi(W_k x + b_k), v = W_v x + b_v, phi = elu + 1
      recurrent: p_t = mu p_{t-1} + k v^T, S_t = S_{t-1} + s p_t
      length:    S_t = S_{t-1} + w_t k v^T, w_t = s (1 - mu^(L-t+1)) / (1 - mu)
                 (s (L-t+1) when mu = 1), L = T
      z_t = z_{t-1} + k, y_t = q^T S_t / (q^T z_t + 1e-6)."""
    p = {k: T(v, dtype) for k, v in params.items()}
    x = T(x, dtype)
    mu = float(opts.get("mu", 0.6))
    s = float(opts.get("s", 0.6))
    weighting = opts.get("weighting", "recurrent")
    Tn, B = x.shape[0], x.shape[1]
    dk, H = p["W_q"].shape[0], p["W_v"].shape[0]

    def phi(z):
        return torch.nn.functional.elu(z) + 1

    S = torch.zeros(B, dk, H, dtype=dtype)
    P = torch.zeros(B, dk, H, dtype=dtype)
    z = torch.zeros(B, dk, dtype=dtype)
    ys = []
    for t in range(1, Tn + 1):
        xt = x[t - 1]
        q = phi(xt @ p["W_q"].T + p["b_q"])
        k = phi(xt @ p["W_k"].T + p["b_k"])
        v = xt @ p["W_v"].T + p["b_v"]
        kv = k[:, :, None] * v[:, None, :]
        if weighting == "length":
            w = s * (Tn - t + 1) if mu == 1.0 else s * (1 - mu ** (Tn - t + 1)) / (1 - mu)
            S = S + w * kv
        else:
            P = mu * P + kv
            S = S + s * P
        z = z + k
        num = torch.einsum("bd,bdh->bh", q, S)
        den = (q * z).sum(1, keepdim=True) + 1e-6
        ys.append(num / den)
    return torch.stack(ys), {"S": S.reshape(B, dk * H), "z": z, "p": P.reshape(B, dk * H)}


def attention_param_shapes(opts, I, H):
    dk = int(opts.get("key", H))
    return [("W_q", (dk, I)), ("b_q", (dk,)), ("W_k", (dk, I)), ("b_k", (dk,)), ("W_v", (H, I)), ("b_v", (H,))]


class UserMomentumGRUSoftsign:
    """The novel cell of the `cells` group (written there as equations): a
    momentum GRU whose candidate uses softsign instead of tanh.
      v' = mu v + s (W_x x + b_x);  g = W_h h + b_h
      r = sigmoid(v'_r + g_r), z = sigmoid(v'_z + g_z), n = softsign(v'_n + r g_n)
      h' = (1 - z) n + z h"""

    @staticmethod
    def param_shapes(opts, I, H):
        return [("W_x", (3 * H, I)), ("b_x", (3 * H,)), ("W_h", (3 * H, H)), ("b_h", (3 * H,))]

    def __init__(self, cell, opts, params, dtype):
        self.p = {k: T(v, dtype) for k, v in params.items()}
        self.mu, self.s = float(opts.get("mu", 0.6)), float(opts.get("s", 0.6))
        self.H = self.p["W_h"].shape[1]
        self.dtype = dtype

    def init_state(self, B):
        return {"h": torch.zeros(B, self.H, dtype=self.dtype),
                "v": torch.zeros(B, 3 * self.H, dtype=self.dtype)}

    def step(self, x, st, t):
        p, H, h = self.p, self.H, st["h"]
        v = self.mu * st["v"] + self.s * (x @ p["W_x"].T + p["b_x"])
        g = h @ p["W_h"].T + p["b_h"]
        r = torch.sigmoid(v[:, :H] + g[:, :H])
        z = torch.sigmoid(v[:, H:2 * H] + g[:, H:2 * H])
        n = torch.nn.functional.softsign(v[:, 2 * H:] + r * g[:, 2 * H:])
        h = (1 - z) * n + z * h
        st["h"], st["v"] = h, v
        return h


OTHER_CELLS = {"fastrnn": FastRNN, "irnn": IRNN, "heavy_ball_rnn": HeavyBallRNN,
               "user_momentum_gru_softsign": UserMomentumGRUSoftsign}


def make_cell(cell, opts, params, dtype):
    if cell in OTHER_CELLS:
        return OTHER_CELLS[cell](cell, opts, params, dtype)
    return DynCell(cell, opts, params, dtype)


def run_layer(cell, opts, params, x, dtype=torch.float32):
    """Runs a cell over x [T,B,I] (ndarray or tensor) from zero states;
    returns (Y [T,B,H] tensor, {state: final value})."""
    if cell in SEQ_CELLS:
        return SEQ_CELLS[cell](opts, params, x, dtype)
    c = make_cell(cell, opts, params, dtype)
    x = T(x, dtype)
    st = c.init_state(x.shape[1])
    ys = []
    for t in range(x.shape[0]):
        ys.append(c.step(x[t], st, t + 1))
    return torch.stack(ys), st


SEQ_CELLS = {"momentum_attention": momentum_attention}
