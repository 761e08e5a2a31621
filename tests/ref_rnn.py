"""ref_rnn.py: an independent numpy reference for the ONNX LSTM, GRU and RNN
operators, written from the operator specification (onnx.defs schema docs,
opset 14), used as the oracle for the cases made by gen_rnn_cases.py.

It is deliberately plain: one Python loop over batch rows and time steps,
float64 arithmetic, no vectorised tricks shared with the compiler.  Its own
correctness is checked against the official ONNX node test data
(test_ref_rnn.py), which comes from the different implementation in
onnx/backend/test/case/node/{lstm,gru,rnn}.py.

Conventions where the specification is terse (the same as ONNX Runtime):
  - gate order in W/R/B: LSTM i,o,f,c; GRU z,r,h; RNN a single gate.
  - `clip` bounds the pre-activation of every gate (after adding biases and
    peepholes) to [-clip, clip]; the cell state fed to h() is not clipped.
  - `input_forget=1` couples the gates as f = 1 - i.
  - `sequence_lens`: batch row b runs only over its first L_b steps (a
    reverse direction runs from step L_b-1 down to 0); Y is 0 at steps
    t >= L_b and Y_h/Y_c hold the state after the last step processed.
  - activation_alpha / activation_beta are consumed in the order of the
    activation list, by the activations that take that parameter; missing
    ones take the defaults of the corresponding ONNX operator.  (The test
    cases are chosen so that a positional reading gives the same values.)
  - layout=1: X [B,T,I], Y [B,T,D,H], initial_h/c and Y_h/Y_c [B,D,H];
    layout=0: X [T,B,I], Y [T,D,B,H], states [D,B,H].
"""

import numpy as np

# name -> (function(x, alpha, beta), default alpha, default beta); None = the
# activation takes no such parameter.
ACTIVATIONS = {
    "Relu": (lambda x, a, b: np.maximum(x, 0.0), None, None),
    "Tanh": (lambda x, a, b: np.tanh(x), None, None),
    "Sigmoid": (lambda x, a, b: 1.0 / (1.0 + np.exp(-x)), None, None),
    "Affine": (lambda x, a, b: a * x + b, 1.0, 0.0),
    "LeakyRelu": (lambda x, a, b: np.where(x >= 0, x, a * x), 0.01, None),
    "ThresholdedRelu": (lambda x, a, b: np.where(x >= a, x, 0.0), 1.0, None),
    "ScaledTanh": (lambda x, a, b: a * np.tanh(b * x), 1.0, 1.0),
    "HardSigmoid": (lambda x, a, b: np.minimum(np.maximum(a * x + b, 0.0), 1.0), 0.2, 0.5),
    "Elu": (lambda x, a, b: np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0))), 1.0, None),
    "Softsign": (lambda x, a, b: x / (1.0 + np.abs(x)), None, None),
    "Softplus": (lambda x, a, b: np.logaddexp(0.0, x), None, None),
}

# per operator: number of gates, number of activations per direction, defaults
OPS = {
    "LSTM": (4, 3, ["Sigmoid", "Tanh", "Tanh"]),
    "GRU": (3, 2, ["Sigmoid", "Tanh"]),
    "RNN": (1, 1, ["Tanh"]),
}


def _bind_activations(names, alphas, betas):
    """Returns a list of unary callables, consuming alpha/beta in order."""
    alphas = list(alphas or [])
    betas = list(betas or [])
    out = []
    for name in names:
        fn, da, db = ACTIVATIONS[name]
        a = alphas.pop(0) if (da is not None and alphas) else da
        b = betas.pop(0) if (db is not None and betas) else db
        out.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    return out


def rnn_ref(op, X, W, R, B=None, sequence_lens=None, initial_h=None,
            initial_c=None, P=None, hidden_size=None, direction="forward",
            activations=None, activation_alpha=None, activation_beta=None,
            clip=None, input_forget=0, layout=0, linear_before_reset=0):
    """Returns (Y, Y_h, Y_c) as float32 arrays (Y_c None unless LSTM)."""
    ngates, nact, default_acts = OPS[op]
    D = 2 if direction == "bidirectional" else 1
    X = np.asarray(X, np.float64)
    if layout == 1:
        X = X.transpose(1, 0, 2)                      # -> [T,B,I]
    T, Bsz, _ = X.shape
    W = np.asarray(W, np.float64)
    R = np.asarray(R, np.float64)
    H = R.shape[-1]
    assert hidden_size is None or hidden_size == H
    assert W.shape[0] == D and W.shape[1] == ngates * H
    B = np.zeros((D, 2 * ngates * H)) if B is None else np.asarray(B, np.float64)

    def state(v):
        if v is None:
            return np.zeros((D, Bsz, H))
        v = np.asarray(v, np.float64)
        return v.transpose(1, 0, 2) if layout == 1 else v   # -> [D,B,H]
    h0, c0 = state(initial_h), state(initial_c)
    P = np.zeros((D, 3 * H)) if P is None else np.asarray(P, np.float64)
    lens = [T] * Bsz if sequence_lens is None else [int(v) for v in sequence_lens]
    names = activations or default_acts * D
    assert len(names) == nact * D, names
    acts = _bind_activations(names, activation_alpha, activation_beta)

    def cl(x):
        return x if clip is None else np.clip(x, -clip, clip)

    Y = np.zeros((T, D, Bsz, H))
    Yh = np.zeros((D, Bsz, H))
    Yc = np.zeros((D, Bsz, H))
    for d in range(D):
        reverse = direction == "reverse" or d == 1
        f_ = acts[d * nact:(d + 1) * nact]
        Wd, Rd = W[d], R[d]
        Wb, Rb = B[d, :ngates * H], B[d, ngates * H:]
        for b in range(Bsz):
            h, c = h0[d, b].copy(), c0[d, b].copy()
            steps = range(lens[b] - 1, -1, -1) if reverse else range(lens[b])
            for t in steps:
                x = X[t, b]
                if op == "LSTM":
                    g = Wd @ x + Rd @ h + Wb + Rb
                    gi, go, gf, gc = (g[k * H:(k + 1) * H] for k in range(4))
                    pi, po, pf = P[d, :H], P[d, H:2 * H], P[d, 2 * H:]
                    i = f_[0](cl(gi + pi * c))
                    f = 1.0 - i if input_forget else f_[0](cl(gf + pf * c))
                    cc = f_[1](cl(gc))
                    c = f * c + i * cc
                    o = f_[0](cl(go + po * c))
                    h = o * f_[2](c)
                elif op == "GRU":
                    gx = Wd @ x + Wb
                    z = f_[0](cl(gx[:H] + Rd[:H] @ h + Rb[:H]))
                    r = f_[0](cl(gx[H:2 * H] + Rd[H:2 * H] @ h + Rb[H:2 * H]))
                    if linear_before_reset:
                        hh = f_[1](cl(gx[2 * H:] + r * (Rd[2 * H:] @ h + Rb[2 * H:])))
                    else:
                        hh = f_[1](cl(gx[2 * H:] + Rd[2 * H:] @ (r * h) + Rb[2 * H:]))
                    h = (1.0 - z) * hh + z * h
                else:
                    h = f_[0](cl(Wd @ x + Rd @ h + Wb + Rb))
                Y[t, d, b] = h
            Yh[d, b], Yc[d, b] = h, c
    if layout == 1:
        Y = Y.transpose(2, 0, 1, 3)                   # [B,T,D,H]
        Yh = Yh.transpose(1, 0, 2)
        Yc = Yc.transpose(1, 0, 2)
    f32 = lambda a: a.astype(np.float32)
    return f32(Y), f32(Yh), (f32(Yc) if op == "LSTM" else None)


def rnn_ref_node(node, inputs):
    """Runs rnn_ref for an onnx NodeProto given its input arrays (list aligned
    with node.input, None for omitted ones).  Returns the list of outputs
    aligned with node.output (None for omitted ones)."""
    from onnx import helper
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    kw = {}
    for k in ("hidden_size", "clip", "input_forget", "layout", "linear_before_reset"):
        if k in attrs:
            kw[k] = attrs[k]
    if "direction" in attrs:
        kw["direction"] = attrs["direction"].decode()
    if "activations" in attrs:
        kw["activations"] = [s.decode() for s in attrs["activations"]]
    for k in ("activation_alpha", "activation_beta"):
        if k in attrs:
            kw[k] = list(attrs[k])
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    args = {}
    for name, val in zip(names, inputs):
        if val is not None:
            args[name] = val
    Y, Yh, Yc = rnn_ref(node.op_type, **args, **kw)
    outs = [Y, Yh, Yc]
    return [outs[k] if (k < len(node.output) and node.output[k]) else None
            for k in range(len(node.output))]
