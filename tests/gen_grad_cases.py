"""gen_grad_cases.py: fixtures of the `grad` test group (issue 5): models of
every cell family with a head and a loss, and the gradients PyTorch autograd
computes for them, for `cellc verify --train` (never from cellc).

For each case OUTDIR/<case>/ holds
  model.cell + model.weights     a `.cell` model (tests/gen_cell_cases.py's
                                 Model/Layer, references tests/ref_cells.py)
  or model.onnx                  an ONNX front end: nn.LSTM/GRU/RNN exports
                                 (as tests/gen_torch_exports.py), a traced
                                 MomentumLSTM (tests/ref_momentum.py, re-rolled
                                 by cellc) and a scripted one (one ONNX Loop,
                                 tests/ref_scripted.py)
  test_data_set_N/input_K.pb     the model inputs in order, then `target`
                                 (int64 for ce/ce-all, f32 otherwise), then
                                 `mask` (masked-mse only)
  test_data_set_N/output_K.pb    in the train graph's order (docs/training.md):
                                 the model outputs, `loss`, `grad.<P>` for every
                                 trainable parameter in source order (.cell
                                 declaration order; ONNX float initializers
                                 in initializer-list order), `grad.<X>` for
                                 every f32 model input (data and initial states),
                                 and for .cell models whose first layer carries
                                 h (all but momentum attention) `dstate`
                                 [T, B, H]: the total dL/dh_t of that layer
                                 (through the outputs and the later steps)
  case.json                      loss, loss output, expected result
and OUTDIR/tests.tsv lists the runs of the group, one per line:
  <name> TAB <model> TAB <case dir> TAB <loss> TAB <loss output or -> TAB
  <expect: pass | refuse> TAB <words the refusal message must contain>

Losses (docs/training.md, PyTorch reduction='mean'):
  ce          cross_entropy(logits [B, C], target int64 [B])   (heads on last())
  ce-all      cross_entropy over every step: logits [T, B, C], target [T, B],
              mean over T*B
  mse         mse_loss(y, target of y's shape)
  masked-mse  sum(mask * (y - target)^2) / sum(mask); mask 0/1 of y's shape
              from per-sequence lengths (steps t < len_b are 1)
The loss always reads the first model output except where a case names
`--loss-output`.

The written values are PyTorch float64 rounded to float32 (outputs, loss,
gradients; the weights and inputs are float32 values).  Every case is also
run in float32; the per-tensor relative norm error of the float32 gradients
against float64, ||g32 - g64|| / ||g64||, must stay below ACC_LIMIT (1e-5, a
tenth of verify's default --grad-rtol 1e-4): a case where float32 rounding
alone comes near the tolerance is changed, not loosened.  OUTDIR/accuracy.tsv
records the worst tensor per case.  For the ONNX exports the gradient of each
initializer is mapped from PyTorch's parameter gradients through the
exporter's layout change (gate reorder iofc / zrh, bias concatenation,
transposed MatMul weights), each map checked to reproduce the initializer
exactly from the parameters.

Self-check: before writing anything, torch.autograd.gradcheck (central finite
differences in float64) runs on the loss of every reference family at tiny
sizes (T = 3, B = 2, H = 3), so the references' autograd graph is complete (no
value taken through numpy, no detached state).

dtriv cells: `cellc compile --train` differentiates the matrix exponential
(M = base expm(S) at run time); momentum_dtriv is checked like every other
cell.

usage: gen_grad_cases.py OUTDIR
"""
import copy
import io
import json
import os
import shutil
import sys
import warnings
import zlib

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_cell_cases as G  # noqa: E402
import ref_cells as R  # noqa: E402
import onnx_ref  # noqa: E402
import ref_momentum  # noqa: E402
import ref_scripted  # noqa: E402
import tensorfile  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

ACC_LIMIT = 1e-5
LOSSES = ("ce", "ce-all", "mse", "masked-mse")


def seed_of(*parts):
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7fffffff


def write_pb(path, arr, name):
    arr = np.asarray(arr)
    arr = arr if arr.ndim == 0 else np.ascontiguousarray(arr)    # the loss is rank 0
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


# ---- losses ---------------------------------------------------------------------

def loss_of(kind, y, target, mask):
    """The loss of docs/training.md on output y (torch), target/mask tensors."""
    if kind == "ce":
        assert y.dim() == 2, "ce cases use a [B, C] head"
        return torch.nn.functional.cross_entropy(y, target)
    if kind == "ce-all":
        assert y.dim() == 3
        return torch.nn.functional.cross_entropy(y.reshape(-1, y.shape[-1]), target.reshape(-1))
    if kind == "mse":
        return torch.nn.functional.mse_loss(y, target)
    if kind == "masked-mse":
        return (mask * (y - target) ** 2).sum() / mask.sum()
    raise ValueError(kind)


def make_target(kind, yshape, rng, time_axis=0):
    """(target ndarray, mask ndarray or None) for an output of shape yshape;
    time_axis: the time axis of a rank-3 output (masks follow lengths)."""
    if kind == "ce":
        return rng.randint(0, yshape[-1], size=yshape[:-1]).astype(np.int64), None
    if kind == "ce-all":
        return rng.randint(0, yshape[-1], size=yshape[:-1]).astype(np.int64), None
    t = rng.randn(*yshape).astype(np.float32)
    if kind == "mse":
        return t, None
    mask = np.zeros(yshape, np.float32)
    if len(yshape) == 3:
        Tn, B = (yshape[0], yshape[1]) if time_axis == 0 else (yshape[1], yshape[0])
        for b in range(B):
            n = max(1, Tn - (b * 3) % max(Tn, 1)) if b else Tn   # sequence 0 full length
            if time_axis == 0:
                mask[:n, b] = 1
            else:
                mask[b, :n] = 1
    else:
        mask[...] = rng.randint(0, 2, size=yshape)
        mask.reshape(-1)[0] = 1
    return t, mask


# ---- one evaluation: outputs, loss, gradients in a dtype --------------------------

class Evaluation:
    """outs: [tensor]; loss; grads: {name: tensor} for every name of wrt."""

    def __init__(self, outs, loss, grads):
        self.outs, self.loss, self.grads = outs, loss, grads


def evaluate(forward, leaves, dtype, kind, target, mask, loss_index):
    """forward(tensors {name: leaf}) -> [outputs]; leaves: {name: ndarray}
    (parameters and f32 inputs) made leaf tensors of dtype."""
    t = {n: torch.tensor(np.asarray(a, np.float64), dtype=dtype, requires_grad=True) for n, a in leaves.items()}
    if hasattr(forward, "bind"):
        t.update(forward.bind(dtype, leaves))
    outs = forward(t, dtype)
    tg = torch.as_tensor(target) if target.dtype == np.int64 else torch.as_tensor(target, dtype=dtype)
    mk = None if mask is None else torch.as_tensor(mask, dtype=dtype)
    loss = loss_of(kind, outs[loss_index], tg, mk)
    rec = list(getattr(forward, "recorded", ()))
    gs = torch.autograd.grad(loss, list(t.values()) + rec, allow_unused=True)
    grads = {}
    for (n, v), g in zip(t.items(), gs):
        grads[n] = torch.zeros_like(v) if g is None else g
    if rec:     # the total derivative at each h_t (through the outputs and later steps)
        grads["dstate"] = torch.stack([torch.zeros_like(v) if g is None else g
                                       for v, g in zip(rec, gs[len(t):])])
    return Evaluation([o.detach() for o in outs], loss.detach(), grads)


class record_first_layer:
    """While active, the first cell ref_cells makes records its state h_t
    after every step into rec (the tensor the outputs and the next step
    use, so the gradient at it is the total dL/dh_t: docs/training.md's `dstate`)."""

    def __init__(self, rec):
        self.rec = rec

    def __enter__(self):
        self.orig, rec, armed = R.make_cell, self.rec, [True]

        def make(cell, opts, params, dtype):
            c = self.orig(cell, opts, params, dtype)
            if armed[0]:
                armed[0] = False
                step = c.step

                def recording(x, st, t):
                    h = step(x, st, t)
                    assert h is st["h"]
                    rec.append(h)
                    return h
                c.step = recording
            return c
        R.make_cell = make

    def __exit__(self, *a):
        R.make_cell = self.orig


def rel_err(a, b):
    a, b = a.double(), b.double()
    nb = float(b.norm())
    return float((a - b).norm()) / nb if nb > 0 else float((a - b).norm())


# ---- writing a case ------------------------------------------------------------

ACCURACY = []
TESTS = []


def write_case(outdir, name, model_file, writer, out_names, sets, kind, loss_output=None,
               expect="pass", refuse_words=()):
    """writer(d): writes the model file(s) into d.  sets: list of callables
    k -> (inputs [(name, arr)], leaves {name: arr}, forward, grad_list
    [(written name, fn(grads) -> tensor)], yshape_fn, time_axis)."""
    d = os.path.join(outdir, name)
    os.makedirs(d)
    writer(d)
    li = out_names.index(loss_output) if loss_output else 0
    worst = (0.0, "")
    for k, make in enumerate(sets):
        inputs, leaves, forward, grad_list, time_axis = make()
        rng = np.random.RandomState(seed_of(name, "target", k))
        # output shape from a float64 forward without gradients
        with torch.no_grad():
            y = forward({n: torch.as_tensor(np.asarray(a, np.float64)) for n, a in leaves.items()},
                        torch.float64)[li]
        target, mask = make_target(kind, tuple(y.shape), rng, time_axis)
        e64 = evaluate(forward, leaves, torch.float64, kind, target, mask, li)
        e32 = evaluate(forward, leaves, torch.float32, kind, target, mask, li)
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        ins = list(inputs) + [("target", target)] + ([("mask", mask)] if mask is not None else [])
        for j, (n, a) in enumerate(ins):
            write_pb(os.path.join(ds, "input_%d.pb" % j), a, n)
        outs = [(n, e64.outs[j]) for j, n in enumerate(out_names)] + [("loss", e64.loss)]
        for gname, fn in grad_list:
            g64, g32 = fn(e64.grads), fn(e32.grads)
            r = rel_err(g32, g64)
            if r > worst[0]:
                worst = (r, "%s set %d" % (gname, k))
            if not np.isfinite(float(g64.norm())) or float(g64.norm()) == 0.0:
                raise SystemExit("%s set %d: %s is zero or not finite" % (name, k, gname))
            outs.append((gname, g64))
        if "dstate" in e64.grads:
            r = rel_err(e32.grads["dstate"], e64.grads["dstate"])
            worst = max(worst, (r, "dstate set %d" % k))
            outs.append(("dstate", e64.grads["dstate"]))
        r = rel_err(e32.loss.reshape(1), e64.loss.reshape(1))
        worst = max(worst, (r, "loss set %d" % k))
        for j, (n, a) in enumerate(outs):
            write_pb(os.path.join(ds, "output_%d.pb" % j), a.numpy().astype(np.float32), n)
    ACCURACY.append((name, worst[0], worst[1]))
    if worst[0] > ACC_LIMIT:
        print("INACCURATE %s: float32 gradient error %.3g (%s) > %g" % (name, worst[0], worst[1], ACC_LIMIT))
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(dict(loss=kind, loss_output=loss_output, expect=expect,
                       refuse_words=list(refuse_words)), f)
    TESTS.append((name, os.path.join(d, model_file), d, kind, loss_output or "-", expect,
                  ",".join(refuse_words)))
    print("%-44s %-10s worst float32 grad error %.2g (%s)" % (name, kind, worst[0], worst[1]))


# ---- a step of many products ----------------------------------------------------

WIDE_K = 260    # products U a_k in one step; with W_h h and the state h: 262 saved values


def wide_cell_text(name, K):
    """A user cell whose step makes K + 1 products, each read by what comes
    after it, so that the forward saves every one for the backward: more
    than the 256 that pass_grad once kept (and the 64 stacked outputs the
    emitter once took).  split names at most 64 values: g is cut in two
    levels, into K blocks of H columns."""
    groups = -(-K // 60)
    assert K % groups == 0
    per = K // groups
    lines = ["cell %s(x; h) {" % name,
             "    # pass_grad: %d saved products" % (K + 1),
             "    param W_x[%d*H, I], W_h[%d*H, H], b[%d*H], U[H, H]" % (K, K, K),
             "    g = W_x @ x + W_h @ h + b",
             "    %s = split(g, %d)" % (", ".join("q_%d" % j for j in range(groups)), groups)]
    for j in range(groups):
        lines.append("    %s = split(q_%d, %d)" % (", ".join("g_%d" % k for k in range(j * per, (j + 1) * per)),
                                                  j, per))
    lines.append("    s_0 = U @ sigmoid(g_0)")
    for k in range(1, K):
        lines.append("    s_%d = 0.98 * s_%d + 0.02 * (U @ sigmoid(g_%d + s_%d))" % (k, k - 1, k, k - 1))
    lines += ["    h' = tanh(s_%d)" % (K - 1), "    out h'", "}"]
    return "\n".join(lines) + "\n"


def wide_products(K):
    """The reference of wide_cell_text(K), written from its equations:
      g = W_x x + W_h h + b, cut into K blocks g_k of H columns
      s_0 = U sigmoid(g_0);  s_k = 0.98 s_{k-1} + 0.02 U sigmoid(g_k + s_{k-1})
      h' = tanh(s_{K-1})"""
    class WideProducts:
        @staticmethod
        def param_shapes(opts, I, H):
            return [("W_x", (K * H, I)), ("W_h", (K * H, H)), ("b", (K * H,)), ("U", (H, H))]

        def __init__(self, cell, opts, params, dtype):
            self.p = {k: R.T(v, dtype) for k, v in params.items()}
            self.H = self.p["U"].shape[0]
            self.dtype = dtype

        def init_state(self, B):
            return {"h": torch.zeros(B, self.H, dtype=self.dtype)}

        def step(self, x, st, t):
            p, H = self.p, self.H
            g = x @ p["W_x"].T + st["h"] @ p["W_h"].T + p["b"]
            s = torch.sigmoid(g[:, :H]) @ p["U"].T
            for k in range(1, K):
                s = 0.98 * s + 0.02 * (torch.sigmoid(g[:, k * H:(k + 1) * H] + s) @ p["U"].T)
            st["h"] = torch.tanh(s)
            return st["h"]
    return WideProducts


# beside ref_cells.py's own references, where Model.params and Model.ref look them up
R.OTHER_CELLS["wide_products"] = wide_products(WIDE_K)
R.OTHER_CELLS["wide_products_k3"] = wide_products(3)       # the self-check's size


# ---- .cell models ----------------------------------------------------------------

# (T, B) of the second data set, in turn.  T = 1 from zero initial states
# makes grad.W_h exactly zero (r_1 = W_h 0): the generator refuses zero
# reference gradients, so T = 1 is used where initial states are inputs.
ROTATE = [(100, 3), (100, 1)]
ROTATE_INIT = [(1, 1), (100, 3), (1, 3), (100, 1)]


def cell_model(name, layers, head, C, I, batch_first=False, cells_text="", ref_cells=None,
               extra_out=False):
    """layers: [Layer]; head: 'last' (linear(last(h)) -> [B, C]) or 'seq'
    (linear(h) on every step -> [T, B, C]).  extra_out: the last layer's
    sequence is a second output (not used by the loss)."""
    top = layers[-1].name
    stmts = list(layers) + [("linear", "y", top, C, head == "last")]
    outs = ["y"] + ([top] if extra_out else [])
    return G.Model(name, I, stmts, outs, batch_first=batch_first, cells_text=cells_text,
                   ref_cells=ref_cells)


def cell_case(outdir, name, model, kind, grid, loss_output=None, expect="pass", refuse_words=()):
    # dstate: dL/dh_t of the first layer, for cells whose first state is h
    first = model.stmts[0]
    dstate = first.cell not in R.SEQ_CELLS
    weights = G.draw_weights(model, seed_of(name))
    pnames = [n for n, _, _ in model.params()]
    uniform = any(isinstance(s, G.Layer) and s.uoff for s in model.stmts)

    def writer(d):
        tensorfile.write(os.path.join(d, "model.weights"), [(n, weights[n]) for n in pnames])
        with open(os.path.join(d, "model.cell"), "w") as f:
            f.write(model.text().replace("# generated by tests/gen_cell_cases.py",
                                         "# generated by tests/gen_grad_cases.py"))

    rec = []

    def forward(t, dtype):
        rec.clear()
        if not dstate:
            return model.ref({n: t[n] for n in pnames}, t["x"], dtype)
        with record_first_layer(rec):
            return model.ref({n: t[n] for n in pnames}, t["x"], dtype)
    forward.recorded = rec

    def mk(Tn, B):
        def make():
            rng = np.random.RandomState(seed_of(name, Tn, B))
            shape = (B, Tn, model.I) if model.batch_first else (Tn, B, model.I)
            x = (rng.uniform(-1, 1, shape) if uniform else rng.randn(*shape)).astype(np.float32)
            leaves = dict(weights)
            leaves["x"] = x
            grads = [("grad." + n, (lambda n: lambda g: g[n])(n)) for n in pnames if n not in model.frozen()]
            grads.append(("grad.x", lambda g: g["x"]))
            return [("x", x)], leaves, forward, grads, 1 if model.batch_first else 0
        return make

    write_case(outdir, name, "model.cell", writer, model.outputs, [mk(Tn, B) for Tn, B in grid],
               kind, loss_output, expect, refuse_words)


def cell_cases(outdir):
    L = G.Layer
    k = [0]

    def grid():
        k[0] += 1
        return [(7, 3), ROTATE[k[0] % 2]]

    def loss():
        return LOSSES[k[0] % 4]

    def one(name, cell, H=5, I=4, C=5, **opts):
        kind = loss()
        head = "last" if kind == "ce" else "seq"
        m = cell_model(name, [L("h1", cell, "x", H, **opts)], head, C, I)
        cell_case(outdir, name, m, kind, grid())

    # base cells
    one("lstm", "lstm", H=5, I=4)
    one("gru", "gru", H=13, I=7)
    one("rnn_tanh", "rnn", H=5, I=9, rscale=0.8)
    one("rnn_relu", "rnn", H=13, I=4, act="relu", rscale=0.5)
    # the momentum family: every dynamic on lstm, gru, rnn
    for base in ("lstm", "gru", "rnn"):
        rs = dict(rscale=0.8) if base == "rnn" else {}
        one("momentum_" + base, "momentum_" + base, H=5, I=4, mu=0.6, s=0.6, **rs)
        one("adam_" + base, "adam_" + base, H=13, I=7, mu=0.5, s=0.5, beta=0.9, **rs)
        one("rmsprop_" + base, "rmsprop_" + base, H=5, I=9, s=0.6, beta=0.9, **rs)
        one("nag_" + base, "nag_" + base, H=13, I=4, s=0.2, bscale=0.1, **rs)
        one("nag_%s_restart3" % base, "nag_" + base, H=5, I=7, s=0.5, restart=3, **rs)
    one("nag_lstm_extrapolate_restart5", "nag_lstm", H=5, I=4, s=0.5, form="extrapolate", restart=5)
    # section 3 cells
    one("irnn_K1", "irnn", H=5, I=4)
    one("irnn_K3_tanh", "irnn", H=13, I=7, K=3, act="tanh", alpha=0.5)
    one("fastrnn", "fastrnn", H=5, I=9)
    one("heavy_ball_rnn", "heavy_ball_rnn", H=13, I=4, rscale=0.2)
    one("heavy_ball_rnn_tanh_steps4", "heavy_ball_rnn", H=5, I=7, steps=4, act="tanh", rscale=0.2)
    one("momentum_attention", "momentum_attention", H=5, I=4)
    one("momentum_attention_length_key", "momentum_attention", H=5, I=9, key=3, mu=0.5, s=0.9,
        weighting="length")
    # a user-defined cell (equations)
    m = cell_model("ug", [L("h1", "momentum_gru_softsign", "x", 13, mu=0.7, s=0.5)], "last", 5, 7,
                   cells_text=G.USER_GRU_SOFTSIGN,
                   ref_cells={"momentum_gru_softsign": "user_momentum_gru_softsign"})
    cell_case(outdir, "user_momentum_gru_softsign", m, "ce", [(7, 3), (100, 1)])
    # a step of 261 products, all saved for the backward (pass_grad's tables grow)
    m = cell_model("wide", [L("h1", "wide_products", "x", 2)], "last", 3, 3,
                   cells_text=wide_cell_text("wide_products", WIDE_K))
    cell_case(outdir, "user_wide_products", m, "ce", [(7, 3), (20, 1)])
    # a stack with a second output, the loss on a named output
    m = G.Model("stack", 7, [L("h1", "momentum_lstm", "x", 13, mu=0.6, s=0.6),
                             L("h2", "gru", "h1", 5),
                             ("linear", "y", "h2", 4, False)], ["h2", "y"])
    cell_case(outdir, "stack_momentum_lstm_gru_loss_output", m, "mse", [(7, 3), (100, 3)], loss_output="y")
    # batch_first input and output
    m = cell_model("bf", [L("h1", "momentum_gru", "x", 5, mu=0.7, s=0.5)], "seq", 3, 4,
                   batch_first=True, extra_out=True)
    cell_case(outdir, "batch_first_momentum_gru_masked", m, "masked-mse", [(7, 3), (100, 1)])
    m = cell_model("bfce", [L("h1", "lstm", "x", 5)], "seq", 4, 4, batch_first=True)
    cell_case(outdir, "batch_first_lstm_ce_all", m, "ce-all", [(7, 3), (100, 1)])
    # dtriv: the gradient goes through the matrix exponential
    m = cell_model("dt", [L("h1", "momentum_dtriv", "x", 5)], "last", 5, 4)
    cell_case(outdir, "momentum_dtriv", m, "ce", [(7, 3)])


# ---- ONNX front ends -------------------------------------------------------------

def reorder(w, order, H, axis=0):
    """Gate blocks of PyTorch order (ifgo / rzn) -> ONNX order (iofc / zrh):
    order lists, per ONNX block, the PyTorch block index."""
    return torch.cat([w.narrow(axis, j * H, H) for j in order], axis)


ONNX_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2), "RNN": (0,)}


def candidates(net):
    """[(description, fn(params {name: tensor}) -> tensor)]: every tensor an
    ONNX export may store as an initializer, as a linear function of the
    PyTorch parameters (so the same fn maps parameter gradients)."""
    cands = []
    for n, p in net.named_parameters():
        cands.append((n, (lambda n: lambda P: P[n])(n), (n,)))
        if p.dim() == 2:
            cands.append((n + "^T", (lambda n: lambda P: P[n].t())(n), (n,)))
    for mname, mod in net.named_modules():
        if isinstance(mod, (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)):
            kind = type(mod).__name__
            order, H = ONNX_ORDER[kind], mod.hidden_size
            pre = mname + "." if mname else ""
            dirs = ["", "_reverse"] if mod.bidirectional else [""]
            for layer in range(mod.num_layers):
                sfx = "_l%d" % layer
                wi = [pre + "weight_ih" + sfx + d for d in dirs]
                wh = [pre + "weight_hh" + sfx + d for d in dirs]
                bi, bh = [pre + "bias_ih" + sfx + d for d in dirs], [pre + "bias_hh" + sfx + d for d in dirs]

                # ONNX's [num_directions, ...]: the forward direction, then the reverse
                def W(P, ns=wi):
                    return torch.stack([reorder(P[n], order, H) for n in ns])

                def Rm(P, ns=wh):
                    return torch.stack([reorder(P[n], order, H) for n in ns])

                def Bb(P, a=bi, b=bh):
                    return torch.stack([torch.cat([reorder(P[x], order, H), reorder(P[y], order, H)])
                                        for x, y in zip(a, b)])
                cands += [(kind + " W" + sfx, W, tuple(wi)), (kind + " R" + sfx, Rm, tuple(wh)),
                          (kind + " B" + sfx, Bb, tuple(bi + bh))]
    return cands


def onnx_param_map(model, net):
    """[(initializer name, fn)] for the float initializers used by the graph,
    in initializer order; each fn reproduces its initializer exactly from
    the float32 parameters, and every parameter is used exactly once."""
    used = set()

    def walk(graph):            # Loop/Scan bodies read outer initializers too
        for node in graph.node:
            used.update(node.input)
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for g in a.graphs:
                    walk(g)
    walk(model.graph)
    P = {n: p.detach() for n, p in net.named_parameters()}
    cands = candidates(net)
    out, covered = [], []
    for init in model.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or init.name not in used:
            continue
        a = numpy_helper.to_array(init)
        hits = [(d, fn, srcs) for d, fn, srcs in cands
                if tuple(fn(P).shape) == a.shape and np.array_equal(fn(P).numpy(), a)]
        if len(hits) != 1:
            raise SystemExit("initializer %s %s: %d parameter maps match (%s)" % (
                init.name, a.shape, len(hits), [h[0] for h in hits]))
        out.append((init.name, hits[0][1]))
        covered += list(hits[0][2])
    if sorted(covered) != sorted(P):
        raise SystemExit("parameters not mapped exactly once: %s vs %s" % (sorted(covered), sorted(P)))
    return out


def onnx_case(outdir, name, net, export, in_names, out_names, kind, grid, make_inputs, time_axis=0,
              check=None, check_sizes=None):
    """net: float32 module (forward(*inputs) -> outputs); export(path);
    make_inputs(T, B, rng) -> [ndarray] in in_names order.  check(model,
    inputs, outputs): asserts that the exported graph computes the
    reference's outputs (default: the numpy interpreter tests/onnx_ref.py)
    at check_sizes (default: grid)."""
    d_tmp = io.BytesIO()
    export(d_tmp)
    model = onnx.load_from_string(d_tmp.getvalue())
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == in_names, [i.name for i in model.graph.input]
    assert [o.name for o in model.graph.output] == out_names, [o.name for o in model.graph.output]
    pmap = onnx_param_map(model, net)
    base = {n: p.detach().numpy().copy() for n, p in net.named_parameters()}
    net32 = copy.deepcopy(net)
    n64 = copy.deepcopy(net).double()
    ints_now = {}       # the integer inputs (tokens, lengths) of the data set being made: not leaves

    def forward(t, dtype):
        """The module's own parameters carry the values of t (nn.LSTM keeps
        flat copies of its weights: substituting tensors would lose their
        gradients), so the gradient leaves are the module's parameters."""
        m = net32 if dtype == torch.float32 else n64
        with torch.no_grad():
            for n, p in m.named_parameters():
                if p is not t[n]:
                    p.copy_(t[n])
        old = torch.get_default_dtype()
        torch.set_default_dtype(dtype)      # the modules' zero states follow it
        try:
            outs = m(*[t[n] if n in t else torch.from_numpy(ints_now[n]) for n in in_names])
        finally:
            torch.set_default_dtype(old)
        return list(outs) if isinstance(outs, (tuple, list)) else [outs]

    def bind(dtype, leaves):
        m = net32 if dtype == torch.float32 else n64
        with torch.no_grad():
            for n, p in m.named_parameters():
                p.copy_(torch.as_tensor(np.asarray(leaves[n], np.float64), dtype=dtype))
        return dict(m.named_parameters())
    forward.bind = bind

    def writer(d):
        onnx.save(model, os.path.join(d, "model.onnx"))

    def mk(Tn, B):
        def make():
            rng = np.random.RandomState(seed_of(name, Tn, B))
            xs = make_inputs(Tn, B, rng)
            floats = [n for n, a in zip(in_names, xs) if a.dtype.kind == "f"]
            ints_now.clear()
            ints_now.update((n, a) for n, a in zip(in_names, xs) if n not in floats)
            leaves = dict(base)
            leaves.update((n, a) for n, a in zip(in_names, xs) if n in floats)
            grads = [("grad." + iname, (lambda fn: lambda g: fn(g))(fn)) for iname, fn in pmap]
            grads += [("grad." + n, (lambda n: lambda g: g[n])(n)) for n in floats]
            return list(zip(in_names, xs)), leaves, forward, grads, time_axis
        return make

    for Tn, B in check_sizes or grid:
        xs = make_inputs(Tn, B, np.random.RandomState(seed_of(name, "check", Tn, B)))
        with torch.no_grad():
            want = [o.numpy() for o in forward({**{n: p for n, p in net.named_parameters()},
                                                **{n: torch.from_numpy(a) for n, a in zip(in_names, xs)}},
                                               torch.float32)]
        got = check(xs) if check else onnx_ref.run(model, xs)
        for n, a, b in zip(out_names, got, want):
            assert np.allclose(a, b, rtol=1e-4, atol=1e-5), "%s: the export's %s differs from PyTorch" % (name, n)
    write_case(outdir, name, "model.onnx", writer, out_names, [mk(Tn, B) for Tn, B in grid], kind)


class RNNNet(torch.nn.Module):
    """nn.LSTM/GRU/RNN -> Linear head: on the last step ('last', [B, C]
    logits) or on every step ('seq'); initial states as inputs (init)."""

    def __init__(self, kind, I, H, C, head, batch_first=False, nonlinearity=None, layers=1):
        super().__init__()
        kw = dict(batch_first=batch_first, num_layers=layers)
        if nonlinearity:
            kw["nonlinearity"] = nonlinearity
        self.kind, self.head, self.bf = kind, head, batch_first
        self.rnn = getattr(torch.nn, kind)(I, H, **kw)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, x, *state):
        if self.kind == "LSTM":
            out, (h, c) = self.rnn(x, tuple(state) if state else None)
        else:
            out, h = self.rnn(x, state[0] if state else None)
        if self.head == "seq":
            return self.fc(out), h
        last = out[:, -1] if self.bf else out[-1]
        return self.fc(last), h


def torch_export_cases(outdir):
    I, H, C = 4, 5, 5
    specs = [  # name, kind, head, batch_first, init, loss, opset, layers, extra
        ("onnx_lstm_init_ce", "LSTM", "last", False, True, "ce", 14, 1, {}),
        ("onnx_lstm_bf_mse", "LSTM", "seq", True, False, "mse", 17, 1, {}),
        ("onnx_lstm_l2_ce_all", "LSTM", "seq", False, True, "ce-all", 13, 2, {}),
        ("onnx_gru_init_ce_all", "GRU", "seq", False, True, "ce-all", 14, 1, {}),
        ("onnx_gru_bf_ce", "GRU", "last", True, False, "ce", 17, 1, {}),
        ("onnx_rnn_tanh_masked", "RNN", "seq", False, True, "masked-mse", 14, 1, {}),
        ("onnx_rnn_relu_bf_mse", "RNN", "seq", True, False, "mse", 13, 1, dict(nonlinearity="relu")),
    ]
    for k, (name, kind, head, bf, init, loss, opset, layers, extra) in enumerate(specs):
        torch.manual_seed(5000 + k)
        net = RNNNet(kind, I, H, C, head, bf, layers=layers, **extra).eval()
        if kind == "RNN":       # keep 100 steps of the plain RNN well-conditioned
            with torch.no_grad():
                net.rnn.weight_hh_l0.mul_(0.6)
        lstm = kind == "LSTM"
        in_names = ["x"] + (["h0", "c0"][:2 if lstm else 1] if init else [])
        out_names = ["y", "h_n"]

        def make_inputs(Tn, B, rng, bf=bf, init=init, lstm=lstm, layers=layers):
            x = rng.randn(*((B, Tn, I) if bf else (Tn, B, I))).astype(np.float32)
            st = [0.5 * rng.randn(layers, B, H).astype(np.float32) for _ in range(2 if lstm else 1)] if init else []
            return [x] + st

        tb = {0: "batch", 1: "seq"} if bf else {0: "seq", 1: "batch"}
        dyn = {"x": tb, "h_n": {1: "batch"}, "y": tb if head == "seq" else {0: "batch"}}
        for n in in_names[1:]:
            dyn[n] = {1: "batch"}
        ex = [torch.from_numpy(a) for a in make_inputs(7, 3, np.random.RandomState(1))]

        def export(f, net=net, ex=ex, opset=opset, in_names=in_names, dyn=dyn):
            with torch.no_grad():
                torch.onnx.export(net, tuple(ex), f, opset_version=opset, input_names=in_names,
                                  output_names=out_names, dynamic_axes=dyn)
        grid = [(7, 3), ROTATE_INIT[k % 4] if init else ROTATE[k % 2]]
        ta = 1 if bf else 0
        onnx_case(outdir, name, net, export, in_names, out_names, loss, grid, make_inputs, ta)


class BiLastNet(torch.nn.Module):
    """A bidirectional LSTM, batch first, Linear on out[:, -1] (the forward
    direction's last step beside the reverse direction's first), the only
    output: cellc runs the reverse direction on the last step alone."""

    def __init__(self, I, H, C):
        super().__init__()
        self.rnn = torch.nn.LSTM(I, H, batch_first=True, bidirectional=True)
        self.fc = torch.nn.Linear(2 * H, C)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class FlatHeadNet(torch.nn.Module):
    """A head run on every step and the last step kept, written two ways:
    flat, out.contiguous().view(-1, H) through Linear and tanh, then
    view(batch, T, -1)[:, -1] (the batch and time rows merged, split
    again); or on the sequence, fc(out)[:, -1] (MatMul and Add).  cellc
    runs the head on the last step alone, and the backward starts from the
    final state's gradient."""

    def __init__(self, I, H, C, flat):
        super().__init__()
        self.rnn = torch.nn.LSTM(I, H, batch_first=True)
        self.fc = torch.nn.Linear(H, C)
        self.flat = flat

    def forward(self, x):
        out, _ = self.rnn(x)
        if not self.flat:
            return self.fc(out)[:, -1]
        z = torch.tanh(self.fc(out.contiguous().view(-1, out.size(2))))
        return z.view(x.size(0), x.size(1), -1)[:, -1]


class BiHalvesNet(torch.nn.Module):
    """A bidirectional GRU or LSTM, batch first, its final states read as
    halves of the output: cat(out[:, -1, :H], out[:, 0, H:]) (slices), or
    torch.split(out, H, -1) and the two steps summed (split), or the
    forward direction's half alone, out[:, -1, :H] (forward), or the
    reverse direction's final state alone, h_n[-1] (h_n_last).  cellc keeps
    neither direction's sequence, each backward starts from its final
    state's gradient, and a direction nothing reads is not run (its
    weights' gradients are zero, as in PyTorch)."""

    def __init__(self, I, H, C, kind, form):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(I, H, batch_first=True, bidirectional=True)
        self.fc = torch.nn.Linear(2 * H if form == "slices" else H, C)
        self.H, self.form = H, form

    def forward(self, x):
        out, h = self.rnn(x)
        if self.form == "h_n_last":
            return self.fc((h[0] if isinstance(h, tuple) else h)[-1])
        if self.form == "forward":
            return self.fc(out[:, -1, :self.H])
        if self.form == "slices":
            return self.fc(torch.cat((out[:, -1, :self.H], out[:, 0, self.H:]), dim=1))
        f, b = torch.split(out, self.H, dim=-1)
        return self.fc(f[:, -1] + b[:, 0])


class FlipBiNet(torch.nn.Module):
    """A bidirectional layer written by hand, batch first: one GRU on the
    sequence, one on torch.flip of it (a Slice of step -1), flipped back;
    a head on every step of both (ce-all: the flip's gradient is dy flipped
    back) or on the forward GRU's last step and the backward output's first
    (ce: neither GRU stores a sequence)."""

    def __init__(self, I, H, C, seq):
        super().__init__()
        self.fwd = torch.nn.GRU(I, H, batch_first=True)
        self.bwd = torch.nn.GRU(I, H, batch_first=True)
        self.fc = torch.nn.Linear(2 * H, C)
        self.seq = seq

    def forward(self, x):
        out_f, _ = self.fwd(x)
        out_b, _ = self.bwd(torch.flip(x, dims=[1]))
        out_b = torch.flip(out_b, dims=[1])
        if self.seq:
            return self.fc(torch.cat([out_f, out_b], dim=2))
        return self.fc(torch.cat([out_f[:, -1], out_b[:, 0]], dim=1))


def exporter(net, args, in_names, out_names, dynamic_axes):
    """The export function onnx_case calls: net at opset 14 on args."""
    def export(f):
        with torch.no_grad():
            torch.onnx.export(net, tuple(args), f, opset_version=14, input_names=in_names,
                              output_names=out_names, dynamic_axes=dynamic_axes)
    return export


def float_case(outdir, name, seed, make_net, shape, loss, grid, dynamic_axes, time_axis):
    """An export of make_net() (seeded) with one float32 input x of
    shape(T, B), exported at the grid's first size, through onnx_case."""
    torch.manual_seed(seed)
    net = make_net().eval()

    def make_inputs(Tn, B, rng):
        return [rng.randn(*shape(Tn, B)).astype(np.float32)]

    ex = torch.from_numpy(make_inputs(*grid[0], np.random.RandomState(1))[0])
    export = exporter(net, [ex], ["x"], ["y"], dynamic_axes)
    onnx_case(outdir, name, net, export, ["x"], ["y"], loss, grid, make_inputs, time_axis)


def bidirectional_cases(outdir):
    float_case(outdir, "onnx_bilstm_last_ce", 5100, lambda: BiLastNet(4, 5, 3), lambda T, B: (B, T, 4), "ce",
               [(7, 3), (5, 2)], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch"}}, 1)
    for k, (name, flat) in enumerate((("onnx_flat_head_last_ce", True), ("onnx_seq_head_last_ce", False))):
        float_case(outdir, name, 5110 + k, lambda: FlatHeadNet(4, 5, 3, flat), lambda T, B: (B, T, 4), "ce",
                   [(7, 3), (5, 2)], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch"}}, 1)
    for k, (name, kind, form) in enumerate((("onnx_bigru_halves_ce", "GRU", "slices"),
                                            ("onnx_bilstm_split_ce", "LSTM", "split"),
                                            ("onnx_bilstm_forward_half_ce", "LSTM", "forward"),
                                            ("onnx_bigru_hn_last_ce", "GRU", "h_n_last"))):
        float_case(outdir, name, 5120 + k, lambda: BiHalvesNet(4, 5, 3, kind, form), lambda T, B: (B, T, 4),
                   "ce", [(7, 3), (5, 2)], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch"}}, 1)
    for k, (name, seq) in enumerate((("onnx_flip_bigru_last_ce", False), ("onnx_flip_bigru_seq_ce_all", True))):
        yaxes = {0: "batch", 1: "seq"} if seq else {0: "batch"}
        float_case(outdir, name, 5130 + k, lambda: FlipBiNet(4, 5, 3, seq), lambda T, B: (B, T, 4),
                   "ce-all" if seq else "ce", [(7, 3), (5, 2)], {"x": {0: "batch", 1: "seq"}, "y": yaxes}, 1)


class EmbedLSTM(torch.nn.Module):
    """Token ids through nn.Embedding into an LSTM, Linear on out[-1]: the
    embedding's gradient adds each step's input gradient to its token's
    row (a Gather by run-time indices)."""

    def __init__(self, V, E, H, C):
        super().__init__()
        self.embedding = torch.nn.Embedding(V, E)
        self.rnn = torch.nn.LSTM(E, H)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, tokens):
        out, _ = self.rnn(self.embedding(tokens))
        return self.fc(out[-1])


class PackedNet(torch.nn.Module):
    """pack_padded_sequence(enforce_sorted=False) of a padded batch, an LSTM,
    Linear on h_n[-1]: the batch reordered by the sorted lengths and back,
    both Gathers by run-time indices (axis 0 of the input, axis 1 of h_n)."""

    def __init__(self, I, H, C):
        super().__init__()
        self.rnn = torch.nn.LSTM(I, H, batch_first=True)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, x, lengths):
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, _) = self.rnn(packed)
        return self.fc(h[-1])


class RepeatAutoencoder(torch.nn.Module):
    """A sequence autoencoder: the encoder's h_n[-1] repeated over the
    length (repeat: a Tile by the run-time T) into a decoder LSTM, Linear on
    every step; the repeat's gradient sums the decoder's input gradients."""

    def __init__(self, I, H):
        super().__init__()
        self.encoder = torch.nn.LSTM(I, H, batch_first=True)
        self.decoder = torch.nn.LSTM(H, H, batch_first=True)
        self.out = torch.nn.Linear(H, I)

    def forward(self, x):
        _, (h, _) = self.encoder(x)
        return self.out(self.decoder(h[-1].unsqueeze(1).repeat(1, x.size(1), 1))[0])


class ConvPoolNet(torch.nn.Module):
    """Conv1d over time, ReLU, MaxPool1d with overlapping windows (kernel 3,
    stride 2: an element can be the maximum of two windows), an LSTM on the
    pooled steps, Linear on out[:, -1]."""

    def __init__(self, I, H, C):
        super().__init__()
        self.conv = torch.nn.Conv1d(I, 6, kernel_size=3, padding=1)
        self.pool = torch.nn.MaxPool1d(3, stride=2)
        self.rnn = torch.nn.LSTM(6, H, batch_first=True)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, x):
        z = self.pool(torch.relu(self.conv(x.transpose(1, 2)))).transpose(1, 2)
        return self.fc(self.rnn(z)[0][:, -1])


def conv_pool_case(outdir):
    # the length stays fixed: cellc pools over constant lengths
    float_case(outdir, "onnx_conv_maxpool_lstm_ce", 5400, lambda: ConvPoolNet(4, 5, 3), lambda T, B: (B, T, 4),
               "ce", [(9, 3), (9, 2)], {"x": {0: "batch"}, "y": {0: "batch"}}, 1)


class CRNNNet(torch.nn.Module):
    """Conv1d over a time axis of any length (same padding, so the length
    stays), ReLU, a GRU, Linear on its last step: the Conv's gradients at a
    run-time length."""

    def __init__(self, I, H, C):
        super().__init__()
        self.conv = torch.nn.Conv1d(I, 6, kernel_size=3, padding=1)
        self.rnn = torch.nn.GRU(6, H)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, x):
        z = torch.relu(self.conv(x)).permute(2, 0, 1)
        return self.fc(self.rnn(z)[0][-1])


def crnn_case(outdir):
    float_case(outdir, "onnx_crnn_ce", 5500, lambda: CRNNNet(4, 5, 3), lambda T, B: (B, 4, T), "ce",
               [(7, 3), (12, 2)], {"x": {0: "batch", 2: "seq"}, "y": {0: "batch"}}, 2)


class TopKNet(torch.nn.Module):
    """A GRU scoring every step, the three highest scores of each sequence
    (topk over the run-time time axis): the gradient reaches only the
    steps picked."""

    def __init__(self, I, H):
        super().__init__()
        self.rnn = torch.nn.GRU(I, H, batch_first=True)
        self.score = torch.nn.Linear(H, 1)

    def forward(self, x):
        return self.score(self.rnn(x)[0]).squeeze(-1).topk(3, dim=1)[0]


def topk_case(outdir):
    float_case(outdir, "onnx_topk_steps_mse", 5600, lambda: TopKNet(4, 5), lambda T, B: (B, T, 4), "mse",
               [(7, 3), (12, 2)], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch"}}, 1)


def autoencoder_case(outdir):
    float_case(outdir, "onnx_repeat_autoencoder_mse", 5300, lambda: RepeatAutoencoder(3, 5), lambda T, B: (B, T, 3),
               "mse", [(7, 3), (5, 2)], {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}}, 1)


def gather_cases(outdir):
    torch.manual_seed(5200)
    V, E, H, C = 11, 4, 5, 3
    net = EmbedLSTM(V, E, H, C).eval()

    def tokens(Tn, B, rng):
        return [rng.randint(0, V, (Tn, B)).astype(np.int64)]

    ex = torch.from_numpy(tokens(7, 3, np.random.RandomState(1))[0])
    export = exporter(net, [ex], ["tokens"], ["y"], {"tokens": {0: "seq", 1: "batch"}, "y": {0: "batch"}})
    onnx_case(outdir, "onnx_embed_lstm_ce", net, export, ["tokens"], ["y"], "ce", [(7, 3), (5, 2)], tokens)

    torch.manual_seed(5201)
    I = 4
    pnet = PackedNet(I, H, C).eval()

    def padded(Tn, B, rng):
        lengths = np.concatenate([[Tn], rng.randint(1, Tn + 1, B - 1)])[rng.permutation(B)]
        return [rng.randn(B, Tn, I).astype(np.float32), lengths.astype(np.int64)]

    pex = [torch.from_numpy(a) for a in padded(7, 3, np.random.RandomState(2))]

    # the exporter fixes the batch (it makes the states of the traced batch size)
    export_packed = exporter(pnet, pex, ["x", "lengths"], ["y"], {"x": {1: "seq"}})
    onnx_case(outdir, "onnx_packed_lstm_ce", pnet, export_packed, ["x", "lengths"], ["y"], "ce", [(7, 3), (5, 3)],
              padded, 1)


def trace_and_loop_cases(outdir):
    I, H, C = 3, 8, 4
    # traced MomentumLSTM: T copies of the step at export, re-rolled by cellc
    net = ref_momentum.make_model("momentum_lstm", I, H, C, 6001)

    def make_inputs(Tn, B, rng):
        return [rng.randn(Tn, B, I).astype(np.float32)]

    ex = torch.from_numpy(make_inputs(8, 2, np.random.RandomState(2))[0])

    def export_trace(f):
        with torch.no_grad():
            torch.onnx.export(net, (ex,), f, opset_version=14, input_names=["x"], output_names=["y", "h"],
                              dynamic_axes={"x": {0: "seq", 1: "batch"}})
    # the traced graph itself computes 8 steps: checked at T = 8 (cellc
    # re-rolls it into a recurrence that runs the data sets' T = 7 and 100)
    onnx_case(outdir, "trace_momentum_lstm_ce_all", net, export_trace, ["x"], ["y", "h"], "ce-all",
              [(7, 3), (100, 1)], make_inputs, check_sizes=[(8, 3), (8, 1)])
    # scripted MomentumLSTM: one ONNX Loop
    ref = ref_momentum.make_model("momentum_lstm", I, H, C, 6002)
    snet = ref_scripted.load_from(ref_scripted.make_model("momentum_lstm", I, H, C), ref)
    sm = torch.jit.script(snet)

    def export_loop(f):
        x0 = torch.from_numpy(make_inputs(8, 2, np.random.RandomState(3))[0])
        tb = {0: "T", 1: "B"}
        with torch.no_grad():
            torch.onnx.export(sm, (x0,), f, opset_version=14, input_names=["x"], output_names=["y", "h"],
                              dynamic_axes={"x": tb, "y": tb, "h": {0: "B"}})
    # gradients from the eager reference (same weights, same math)
    def scripted(xs):       # the scripted module (what was exported) vs the eager reference
        with torch.no_grad():
            return [o.numpy() for o in sm(torch.from_numpy(xs[0]))]
    onnx_case(outdir, "loop_momentum_lstm_masked", ref, export_loop, ["x"], ["y", "h"], "masked-mse",
              [(7, 3), (100, 3)], make_inputs, check=scripted)


# ---- self-check: finite differences of the references ---------------------------

def selfcheck():
    """torch.autograd.gradcheck of every reference family's loss at tiny
    sizes in float64: the autograd graph of the references is complete."""
    L = G.Layer
    fams = [("lstm", {}), ("gru", {}), ("rnn", {}), ("rnn", dict(act="relu")),
            ("momentum_lstm", {}), ("adam_gru", dict(beta=0.9)), ("rmsprop_rnn", dict(beta=0.9)),
            ("nag_lstm", dict(restart=2)), ("nag_lstm", dict(form="extrapolate")),
            ("irnn", dict(K=2)), ("fastrnn", {}), ("heavy_ball_rnn", dict(steps=2, act="tanh")),
            ("momentum_attention", {}), ("momentum_attention", dict(weighting="length")),
            ("momentum_dtriv", {}), ("user_momentum_gru_softsign", {}), ("wide_products_k3", {})]
    n = 0
    for cell, opts in fams:
        for kind in LOSSES:
            head = "last" if kind == "ce" else "seq"
            m = cell_model("fd", [L("h1", cell, "x", 3, **opts)], head, 3, 2)
            w = G.draw_weights(m, seed_of("fd", cell, kind))
            names = [p for p, _, _ in m.params()]
            rng = np.random.RandomState(n)
            x = rng.uniform(-1, 1, (3, 2, 2))
            y = m.ref({k: torch.as_tensor(v, dtype=torch.float64) for k, v in w.items()}, x, torch.float64)[0]
            target, mask = make_target(kind, tuple(y.shape), rng)
            tg = torch.as_tensor(target) if target.dtype == np.int64 else torch.as_tensor(target, dtype=torch.float64)
            mk = None if mask is None else torch.as_tensor(mask, dtype=torch.float64)
            leaves = [torch.tensor(w[p], dtype=torch.float64, requires_grad=True) for p in names]
            leaves.append(torch.tensor(x, dtype=torch.float64, requires_grad=True))

            def f(*ts):
                ws = dict(zip(names, ts[:-1]))
                return loss_of(kind, m.ref(ws, ts[-1], torch.float64)[0], tg, mk)
            ok = torch.autograd.gradcheck(f, tuple(leaves), eps=1e-6, atol=1e-6, rtol=1e-4)
            assert ok
            n += 1
    # the ONNX parameter maps: nn.LSTM with its PyTorch gradients
    print("selfcheck: gradcheck passed for %d reference losses" % n)


def main(outdir):
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    selfcheck()
    cell_cases(outdir)
    torch_export_cases(outdir)
    bidirectional_cases(outdir)
    gather_cases(outdir)
    autoencoder_case(outdir)
    conv_pool_case(outdir)
    crnn_case(outdir)
    topk_case(outdir)
    trace_and_loop_cases(outdir)
    with open(os.path.join(outdir, "tests.tsv"), "w") as f:
        for row in TESTS:
            f.write("\t".join(row) + "\n")
    with open(os.path.join(outdir, "accuracy.tsv"), "w") as f:
        for name, r, where in ACCURACY:
            f.write("%s\t%.3g\t%s\n" % (name, r, where))
    bad = [a for a in ACCURACY if a[1] > ACC_LIMIT]
    worst = max(ACCURACY, key=lambda a: a[1])
    print("%d cases; worst float32 gradient error %.3g (%s, %s)" % (len(ACCURACY), worst[1], worst[0], worst[2]))
    if bad:
        sys.exit("float32 gradients too inaccurate in %d case(s): %s" % (len(bad), ", ".join(b[0] for b in bad)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_grad_cases.py OUTDIR")
    main(sys.argv[1])
