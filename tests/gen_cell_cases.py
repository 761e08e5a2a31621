"""gen_cell_cases.py: fixtures of the `cells` test group: `.cell` models of
every cell of docs/cells.md, their weights files and golden data in the ONNX
backend layout, with expected outputs from the PyTorch references of
tests/ref_cells.py (never from cellc).

For each case OUTDIR/<case>/ holds
  model.cell                     the model (symbolic dims seq, batch)
  model.weights                  random weights from a fixed seed, written
                                 with tests/tensorfile.py (names <layer>.<param>)
  test_data_set_N/input_0.pb     x [T, B, I] (or [B, T, I] for batch_first)
  test_data_set_N/output_K.pb    the model's outputs, PyTorch float32
and OUTDIR/tests.tsv lists the verify runs of the group, one per line:
  <test name> TAB <model.cell> TAB <case dir with the golden data>...
A run may verify one case's model against another case's golden data: the
equality tests of issue 3 (momentum_lstm(mu=0, s=1) == lstm, rmsprop ==
adam(mu=0), nag(restart=1) == momentum(mu=0), a user-defined cell ==
its built-in) are verify runs of different models against the same data;
test_ref_cells.py asserts that the PyTorch references themselves agree.

Every data set is also computed in float64; OUTDIR/accuracy.tsv records, per
case, max |y32 - y64| / (1e-5 + 1e-4 |y64|) (test_ref_cells.py requires it to
be < 0.25, so the float32 golden is accurate enough for verify's tolerances),
max |y32 - y64| and max |y|.

Sizes: every cell at (T, B) in {(1, 1), (7, 3), (100, 64), (784, 3)}; the full
T x B grid {1, 7, 100, 784} x {1, 3, 64} for momentum_lstm, adam_lstm,
nag_lstm(restart) and momentum_gru; hidden sizes 5, 13, 20 (none a multiple
of 8).

usage: gen_cell_cases.py OUTDIR
"""
import os
import shutil
import sys
import zlib

import numpy as np
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cells as R  # noqa: E402
import tensorfile  # noqa: E402

torch.set_num_threads(1)

SMALL = [(1, 1), (7, 3), (100, 64), (784, 3)]
FULL = [(t, b) for t in (1, 7, 100, 784) for b in (1, 3, 64)]
ATOL, RTOL = 1e-5, 1e-4


def seed_of(*parts):
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7fffffff


def fmt(v):
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    return repr(float(v))


# ---- models -------------------------------------------------------------------

class Layer:
    """One layer statement; rscale scales the recurrent weights drawn for it
    (W_h, dtriv's base) to keep long runs well-conditioned (not an option)."""

    def __init__(self, name, cell, src, hidden, rscale=1.0, bscale=1.0, **opts):
        self.name, self.cell, self.src, self.hidden, self.opts = name, cell, src, hidden, opts
        self.rscale, self.bscale = rscale, bscale
        # adam / rmsprop divide by sqrt(m), m ~ running mean of u*u: d_t is
        # (nearly) scale-free in u, so an element of u near 0 turns float
        # rounding of u into O(1) errors of d (in any implementation).  Such
        # layers on the model input get u bounded away from 0: x uniform in
        # [-1, 1], |W_x x| <= 0.5 and |b_x| in [0.7, 1.2].
        self.uoff = src == "x" and cell.split("_")[0] in ("adam", "rmsprop")


class Model:
    """A chain of layers and heads.  stmts: Layer, or tuples
    ('linear', name, src, out, last) / ('act', name, fn, src)."""

    def __init__(self, name, I, stmts, outputs, batch_first=False, cells_text="", ref_cells=None):
        self.name, self.I, self.stmts, self.outputs = name, I, stmts, outputs
        self.batch_first = batch_first
        self.cells_text = cells_text        # user-defined cells (equations)
        self.ref_cells = ref_cells or {}    # user cell name -> reference cell name

    def sizes(self):
        """{value name: feature size}"""
        sz = {"x": self.I}
        for s in self.stmts:
            if isinstance(s, Layer):
                sz[s.name] = s.hidden
            elif s[0] == "linear":
                sz[s[1]] = s[3]
            else:
                sz[s[1]] = sz[s[3]]
        return sz

    def params(self):
        """[(full name, shape, layer stmt)] in statement order."""
        sz = self.sizes()
        out = []
        for s in self.stmts:
            if isinstance(s, Layer):
                cell = self.ref_cells.get(s.cell, s.cell)
                for pn, shape in R.param_shapes(cell, s.opts, sz[s.src], s.hidden):
                    out.append(("%s.%s" % (s.name, pn), shape, s))
            elif s[0] == "linear":
                out.append(("%s.weight" % s[1], (s[3], sz[s[2]]), s))
                out.append(("%s.bias" % s[1], (s[3],), s))
        return out

    def frozen(self):
        """The full names of the parameters a training build holds fixed."""
        return {"%s.%s" % (s.name, pn) for s in self.stmts if isinstance(s, Layer)
                for pn in R.frozen_params(self.ref_cells.get(s.cell, s.cell))}

    def text(self):
        lines = []
        if self.cells_text:
            lines.append(self.cells_text.strip("\n"))
            lines.append("")
        lines.append("# generated by tests/gen_cell_cases.py")
        lines.append("model %s {" % self.name)
        if self.batch_first:
            lines.append("    input x: f32[batch, seq, %d] layout batch_first" % self.I)
        else:
            lines.append("    input x: f32[seq, batch, %d]" % self.I)
        lines.append('    weights "model.weights"')
        for s in self.stmts:
            if isinstance(s, Layer):
                opts = "".join(", %s=%s" % (k, fmt(v)) for k, v in s.opts.items())
                lines.append("    %s = %s(%s, hidden=%d%s)" % (s.name, s.cell, s.src, s.hidden, opts))
            elif s[0] == "linear":
                src = "last(%s)" % s[2] if s[4] else s[2]
                lines.append("    %s = linear(%s, out=%d)" % (s[1], src, s[3]))
            else:
                lines.append("    %s = %s(%s)" % (s[1], s[2], s[3]))
        lines.append("    output %s" % ", ".join(self.outputs))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def ref(self, weights, x, dtype):
        """Outputs (tensors) for input x (in the model's layout)."""
        x = torch.as_tensor(x, dtype=dtype)
        if self.batch_first:
            x = x.transpose(0, 1)
        vals = {"x": x}
        last = set()
        for s in self.stmts:
            if isinstance(s, Layer):
                cell = self.ref_cells.get(s.cell, s.cell)
                pre = s.name + "."
                p = {k[len(pre):]: v for k, v in weights.items() if k.startswith(pre)}
                vals[s.name], _ = R.run_layer(cell, s.opts, p, vals[s.src], dtype)
            elif s[0] == "linear":
                W = torch.as_tensor(weights[s[1] + ".weight"], dtype=dtype)
                b = torch.as_tensor(weights[s[1] + ".bias"], dtype=dtype)
                v = vals[s[2]][-1] if s[4] else vals[s[2]]
                if s[4] or s[2] in last:
                    last.add(s[1])
                vals[s[1]] = v @ W.T + b
            else:
                fn = {"log_softmax": lambda v: torch.log_softmax(v, -1),
                      "softmax": lambda v: torch.softmax(v, -1), "sigmoid": torch.sigmoid,
                      "tanh": torch.tanh, "relu": torch.relu}[s[2]]
                vals[s[1]] = fn(vals[s[3]])
                if s[3] in last:
                    last.add(s[1])
        outs = []
        for o in self.outputs:
            v = vals[o]
            if self.batch_first and o not in last:
                v = v.transpose(0, 1)
            outs.append(v.contiguous())
        return outs


def draw_weights(model, seed):
    """Random weights: uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for matrices
    and biases (PyTorch's scale, drawn from our own generator), with the
    cell-specific parameters in ranges that keep every cell well-conditioned
    over 784 steps (checked by the float64 run)."""
    rng = np.random.RandomState(seed)
    w = {}
    for name, shape, s in model.params():
        pn = name.split(".", 1)[1]
        fan = shape[-1] if len(shape) == 2 else None
        if isinstance(s, Layer):
            H = s.hidden
            if pn == "A":
                a = rng.uniform(-0.6, 0.6, shape)
            elif pn == "base":       # orthogonal times 0.8: a contraction, so rounding does not pile up
                a = 0.8 * s.rscale * np.linalg.qr(rng.randn(*shape))[0]
            elif pn == "b" and len(shape) == 1:     # modrelu bias: <= 0 keeps modrelu continuous
                a = rng.uniform(-0.3, 0.0, shape)
            elif s.uoff and pn == "W_x":
                a = rng.uniform(-0.5 / shape[1], 0.5 / shape[1], shape)
            elif s.uoff and pn == "b_x":
                a = rng.uniform(0.7, 1.2, shape) * rng.choice([-1.0, 1.0], shape)
            elif pn == "eta":
                a = rng.uniform(0.05, 0.5, shape)
            elif pn in ("alpha", "beta"):
                a = rng.uniform(-1.0, 1.0, shape)
            elif pn == "w":             # heavy ball: damping gamma = sigmoid(w) in (0.73, 0.88)
                a = rng.uniform(1.0, 2.0, shape)
            elif pn == "c":             # xi = softplus(c) in (0.20, 0.47) < gamma: a stable oscillator
                a = rng.uniform(-1.5, -0.5, shape)
            else:
                k = 1.0 / np.sqrt(fan if fan else H)
                a = rng.uniform(-k, k, shape) * (s.rscale if pn == "W_h" else s.bscale if pn == "b_x" else 1.0)
        else:
            k = 1.0 / np.sqrt(shape[1] if len(shape) == 2 else model.sizes()[s[2]])
            a = rng.uniform(-k, k, shape)
        w[name] = a.astype(np.float32)
    return w


# ---- writing ------------------------------------------------------------------

ACCURACY = []
AGREE = []
TESTS = []


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def write_case(outdir, case, model, grid, seed=None, weights=None, same=()):
    """Writes model, weights and one data set per (T, B) of grid; returns the
    weights (so that other cases can share them).  same: (name, Model) pairs
    whose PyTorch reference must give the same outputs on this case's data
    with these weights (recorded in AGREE, checked by test_ref_cells.py)."""
    d = os.path.join(outdir, case)
    os.makedirs(d)
    seed = seed_of(case) if seed is None else seed
    if weights is None:
        weights = draw_weights(model, seed)
    names = [n for n, _, _ in model.params()]
    tensorfile.write(os.path.join(d, "model.weights"), [(n, weights[n]) for n in names])
    with open(os.path.join(d, "model.cell"), "w") as f:
        f.write(model.text())
    worst, worst_abs, max_out = 0.0, 0.0, 0.0
    for k, (Tn, B) in enumerate(grid):
        rng = np.random.RandomState(seed_of(case, Tn, B))
        shape = (B, Tn, model.I) if model.batch_first else (Tn, B, model.I)
        uniform = any(isinstance(st, Layer) and st.uoff for st in model.stmts)
        x = (rng.uniform(-1, 1, shape) if uniform else rng.randn(*shape)).astype(np.float32)
        w64 = {n: v.astype(np.float64) for n, v in weights.items()}
        y32 = model.ref(weights, x, torch.float32)
        y64 = model.ref(w64, x.astype(np.float64), torch.float64)
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        write_pb(os.path.join(ds, "input_0.pb"), x, "x")
        for j, (a, b) in enumerate(zip(y32, y64)):
            a64 = a.double()
            err = (a64 - b).abs()
            ratio = err / (ATOL + RTOL * b.abs())
            if float(ratio.max()) > worst:
                worst = float(ratio.max())
                where = np.unravel_index(int(ratio.argmax()), tuple(ratio.shape))
                print("  %s T=%d B=%d output %d: err/tol %.3g at %s (y64 %.6g, y32 %.6g)" % (
                    case, Tn, B, j, worst, where, float(b[where]), float(a[where])))
            worst_abs = max(worst_abs, float(err.max()))
            max_out = max(max_out, float(b.abs().max()))
            write_pb(os.path.join(ds, "output_%d.pb" % j), a.numpy().astype(np.float32), model.outputs[j])
        for other, om in same:
            for a, b in zip(y32, om.ref(weights, x, torch.float32)):
                diff = float((a.double() - b.double()).abs().max())
                AGREE.append((other, case, Tn, B, diff))
    ACCURACY.append((case, worst, worst_abs, max_out))
    return weights


def test(name, model_case, *data_cases):
    TESTS.append((name, model_case, data_cases or (model_case,)))


# ---- the cases ----------------------------------------------------------------

HS = (5, 13, 20)
IS = (4, 7, 9)


def single(name, cell, H, I, **opts):
    return Model(name, I, [Layer("h1", cell, "x", H, **opts)], ["h1"])


def main(outdir):
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    k = 0

    def nxt():
        nonlocal k
        k += 1
        return HS[k % 3], IS[k % 3]

    # every <dynamic>_<base> pair with default options (momentum family defaults)
    for dyn in R.DYNAMICS:
        for base in R.BASES:
            cell = base if dyn == "plain" else "%s_%s" % (dyn, base)
            H, I = nxt()
            kw = {}
            if dyn == "nag":
                # restart 0: mu_t -> 1, v is a running sum over up to 784
                # steps; s = 0.2 and a small b_x keep it O(1), so that float32
                # rounding stays far below the tolerance.  (Other cases test
                # the default s.)
                kw = dict(s=0.2, bscale=0.1)
            if base == "dtriv" and dyn in ("adam", "rmsprop"):
                # d_t up to s/sqrt(1-beta) (19 for s = 0.6) and modrelu does not saturate:
                # s = 0.2 and a stronger contraction keep h (and its rounding) small
                kw = dict(rscale=0.5, s=0.2)
            write_case(outdir, cell, single("m", cell, H, I, **kw), SMALL)
            test(cell, cell)
    # options: act=relu, non-default mu/s/beta/eps/restart, nag form=extrapolate
    variants = [
        ("rnn_relu", "rnn", dict(act="relu")),
        ("momentum_rnn_relu", "momentum_rnn", dict(act="relu", mu=0.9, s=0.1)),
        ("adam_rnn_relu_opts", "adam_rnn", dict(act="relu", mu=0.5, s=0.3, beta=0.9, eps=1e-8)),
        ("momentum_lstm_opts", "momentum_lstm", dict(mu=0.9, s=0.3)),
        ("momentum_dtriv_opts", "momentum_dtriv", dict(mu=0.3, s=0.9)),
        ("adam_gru_opts", "adam_gru", dict(mu=0.8, s=0.5, beta=0.95, eps=1e-6)),
        ("rmsprop_lstm_opts", "rmsprop_lstm", dict(s=0.8, beta=0.9, eps=1e-8)),
        ("rmsprop_dtriv_opts", "rmsprop_dtriv", dict(s=0.4, beta=0.99)),
        # eps large enough to matter: inside the root, sqrt(m + eps)
        ("adam_lstm_eps_large", "adam_lstm", dict(beta=0.99, eps=0.01)),
        ("rmsprop_rnn_eps_large", "rmsprop_rnn", dict(s=0.3, beta=0.9, eps=0.05)),
        ("nag_gru_restart3", "nag_gru", dict(s=0.5, restart=3)),
        ("nag_rnn_restart5", "nag_rnn", dict(s=0.7, restart=5)),
        ("nag_dtriv_restart4", "nag_dtriv", dict(s=0.6, restart=4)),
        ("nag_lstm_extrapolate", "nag_lstm", dict(s=0.5, form="extrapolate")),
        ("nag_lstm_extrapolate_restart5", "nag_lstm", dict(s=0.5, form="extrapolate", restart=5)),
        # a_t = (1 + mu_t) q_t - mu_t q_{t-1} amplifies oscillating modes: a
        # recurrent matrix of spectral radius ~0.3 keeps these stable
        ("nag_rnn_extrapolate", "nag_rnn", dict(s=0.5, form="extrapolate", rscale=0.5)),
        ("nag_dtriv_extrapolate", "nag_dtriv", dict(s=0.5, form="extrapolate", restart=6, rscale=0.4)),
    ]
    for case, cell, opts in variants:
        H, I = nxt()
        write_case(outdir, case, single("m", cell, H, I, **opts), SMALL)
        test(case, case)

    # the full T x B grid
    full = [("full_momentum_lstm", "momentum_lstm", 20, 9, dict(mu=0.6, s=0.6)),
            ("full_adam_lstm", "adam_lstm", 13, 7, dict(mu=0.6, s=0.6, beta=0.9)),
            ("full_nag_lstm_restart", "nag_lstm", 5, 4, dict(s=0.6, restart=10)),
            ("full_momentum_gru", "momentum_gru", 13, 9, dict(mu=0.7, s=0.5))]
    full_w = {}
    for case, cell, H, I, opts in full:
        same = ()
        if case == "full_momentum_lstm":
            same = [("user_momentum_lstm", user_momentum_lstm_model())]
        full_w[case] = write_case(outdir, case, single("m", cell, H, I, **opts), FULL, same=same)
        test(case, case)

    # section 3 cells
    others = [
        ("irnn_K1", "irnn", dict()),
        ("irnn_K3_g0_zero", "irnn", dict(K=3, g0="zero")),
        ("irnn_K2_tanh_alpha", "irnn", dict(K=2, act="tanh", alpha=0.5)),
        ("irnn_K4_g0_h", "irnn", dict(K=4, g0="h")),
        ("momentum_attention", "momentum_attention", dict()),
        ("momentum_attention_key", "momentum_attention", dict(key=6, mu=0.8, s=0.3)),
        ("momentum_attention_length", "momentum_attention", dict(weighting="length")),
        ("momentum_attention_length_key", "momentum_attention", dict(key=3, mu=0.5, s=0.9, weighting="length")),
        ("momentum_attention_mu1", "momentum_attention", dict(mu=1.0, s=0.05)),
        ("momentum_attention_length_mu1", "momentum_attention", dict(mu=1.0, s=0.05, weighting="length")),
        ("heavy_ball_rnn", "heavy_ball_rnn", dict(rscale=0.2)),
        ("heavy_ball_rnn_tanh_steps4", "heavy_ball_rnn", dict(steps=4, act="tanh", rscale=0.2)),
        ("fastrnn", "fastrnn", dict()),
    ]
    for case, cell, opts in others:
        H, I = nxt()
        write_case(outdir, case, single("m", cell, H, I, **opts), SMALL)
        test(case, case)

    # stacks, heads, batch_first
    stack = Model("stack", 7, [Layer("h1", "momentum_lstm", "x", 20, mu=0.6, s=0.6),
                               Layer("h2", "lstm", "h1", 13),
                               ("linear", "y", "h2", 10, True),
                               ("act", "p", "log_softmax", "y"),
                               ("linear", "z", "h2", 4, False)], ["p", "z"])
    write_case(outdir, "stack_momentum_lstm_lstm_heads", stack, SMALL)
    test("stack_momentum_lstm_lstm_heads", "stack_momentum_lstm_lstm_heads")
    stack3 = Model("stack3", 5, [Layer("a", "adam_gru", "x", 13, beta=0.9),
                                 Layer("b", "nag_rnn", "a", 5, restart=4),
                                 Layer("c", "momentum_dtriv", "b", 20)], ["a", "c"])
    write_case(outdir, "stack3_adam_gru_nag_rnn_momentum_dtriv", stack3, SMALL)
    test("stack3_adam_gru_nag_rnn_momentum_dtriv", "stack3_adam_gru_nag_rnn_momentum_dtriv")
    bf = Model("bf", 9, [Layer("h1", "momentum_gru", "x", 13),
                         ("linear", "y", "h1", 3, True),
                         ("act", "p", "softmax", "y")], ["h1", "p"], batch_first=True)
    write_case(outdir, "batch_first_momentum_gru_head", bf, SMALL)
    test("batch_first_momentum_gru_head", "batch_first_momentum_gru_head")

    # equalities: the same weights through different models against one golden
    eqs = [  # (data case, its cell + opts, other models (case, cell, opts))
        ("eq_momentum_lstm_mu0_s1", "momentum_lstm", dict(mu=0.0, s=1.0), 13, 7,
         [("eq_lstm", "lstm", {})]),
        ("eq_momentum_gru_mu0_s1", "momentum_gru", dict(mu=0.0, s=1.0), 5, 4,
         [("eq_gru", "gru", {})]),
        ("eq_adam_lstm_mu0", "adam_lstm", dict(mu=0.0, s=0.7, beta=0.9, eps=1e-8), 20, 9,
         [("eq_rmsprop_lstm", "rmsprop_lstm", dict(s=0.7, beta=0.9, eps=1e-8))]),
        ("eq_adam_dtriv_mu0", "adam_dtriv", dict(mu=0.0, s=0.5, beta=0.95), 13, 4,
         [("eq_rmsprop_dtriv", "rmsprop_dtriv", dict(s=0.5, beta=0.95))]),
        ("eq_momentum_lstm_mu0", "momentum_lstm", dict(mu=0.0, s=0.8), 20, 7,
         [("eq_nag_lstm_restart1", "nag_lstm", dict(s=0.8, restart=1))]),
        ("eq_momentum_rnn_mu0", "momentum_rnn", dict(mu=0.0, s=0.8), 5, 9,
         [("eq_nag_rnn_restart1", "nag_rnn", dict(s=0.8, restart=1))]),
    ]
    for case, cell, opts, H, I, others_ in eqs:
        same = [(oc, single("m", ocl, H, I, **oo)) for oc, ocl, oo in others_]
        w = write_case(outdir, case, single("m", cell, H, I, **opts), SMALL, same=same)
        test(case, case)
        for (ocase, m) in same:
            write_case(outdir, ocase, m, SMALL, seed=seed_of(case), weights=w)
            test("%s_on_%s_data" % (ocase, case), ocase, case)

    # user-defined cells written as equations
    m = user_momentum_lstm_model()
    # the sizes, options and weights of full_momentum_lstm: also checked against its data
    write_case(outdir, "user_momentum_lstm", m, SMALL, weights=full_w["full_momentum_lstm"])
    test("user_momentum_lstm", "user_momentum_lstm")
    test("user_momentum_lstm_on_builtin_data", "user_momentum_lstm", "full_momentum_lstm")
    m = Model("un", 7, [Layer("h1", "my_nag_lstm", "x", 13, s=0.2, bscale=0.1)], ["h1"],
              cells_text=USER_NAG_LSTM, ref_cells={"my_nag_lstm": "nag_lstm"})
    write_case(outdir, "user_nag_lstm", m, SMALL)
    test("user_nag_lstm", "user_nag_lstm")
    m = Model("ug", 7, [Layer("h1", "momentum_gru_softsign", "x", 13, mu=0.7, s=0.5)], ["h1"],
              cells_text=USER_GRU_SOFTSIGN, ref_cells={"momentum_gru_softsign": "user_momentum_gru_softsign"})
    write_case(outdir, "user_momentum_gru_softsign", m, SMALL)
    test("user_momentum_gru_softsign", "user_momentum_gru_softsign")
    # a user cell stacked on a built-in one, with a head
    m = Model("us", 4, [Layer("h1", "momentum_rnn", "x", 13, act="relu", mu=0.5, s=0.5),
                        Layer("h2", "momentum_gru_softsign", "h1", 5),
                        ("linear", "y", "h2", 3, True)], ["y"],
              cells_text=USER_GRU_SOFTSIGN, ref_cells={"momentum_gru_softsign": "user_momentum_gru_softsign"})
    write_case(outdir, "user_cell_stacked", m, SMALL)
    test("user_cell_stacked", "user_cell_stacked")

    with open(os.path.join(outdir, "tests.tsv"), "w") as f:
        for name, mcase, dcases in TESTS:
            f.write("\t".join([name, os.path.join(outdir, mcase, "model.cell")] +
                              [os.path.join(outdir, c) for c in dcases]) + "\n")
    with open(os.path.join(outdir, "agree.tsv"), "w") as f:
        for row in AGREE:
            f.write("%s\t%s\t%d\t%d\t%.3g\n" % row)
    with open(os.path.join(outdir, "accuracy.tsv"), "w") as f:
        for case, r, a, mo in ACCURACY:
            f.write("%s\t%.4g\t%.3g\t%.3g\n" % (case, r, a, mo))
    bad = [(c, r) for c, r, _, _ in ACCURACY if r >= 0.25]
    print("%d cases, %d verify runs; float32 golden error / tolerance: worst %.3g (%s)" % (
        len(ACCURACY), len(TESTS), max(r for _, r, _, _ in ACCURACY),
        max(ACCURACY, key=lambda a: a[1])[0]))
    for c, r in bad:
        print("inaccurate golden: %s err/tol=%.3g" % (c, r))


def user_momentum_lstm_model():
    """The user-defined momentum LSTM with full_momentum_lstm's sizes and
    options (its reference: the built-in momentum_lstm's)."""
    return Model("um", 9, [Layer("h1", "my_momentum_lstm", "x", 20, mu=0.6, s=0.6)], ["h1"],
                 cells_text=USER_MOMENTUM_LSTM, ref_cells={"my_momentum_lstm": "momentum_lstm"})


USER_MOMENTUM_LSTM = """
# momentum_lstm written as equations (docs/cell-format.md)
cell my_momentum_lstm(x; h, c, v[4*H]) {
    option mu = 0.6, s = 0.6
    param W_x[4*H, I], b_x[4*H], W_h[4*H, H], b_h[4*H]
    u  = W_x @ x + b_x
    v' = mu * v + s * u
    a  = v' + W_h @ h + b_h
    i, f, g, o = split(a, 4)
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h' = sigmoid(o) * tanh(c')
    out h'
}
"""

USER_NAG_LSTM = """
# nag_lstm (restart 0, form momentum) as equations: the schedule from t
cell my_nag_lstm(x; h, c, v[4*H]) {
    option s = 0.6
    param W_x[4*H, I], b_x[4*H], W_h[4*H, H], b_h[4*H]
    mu = (t - 1) / (t + 2)
    v' = mu * v + s * (W_x @ x + b_x)
    i, f, g, o = split(v' + W_h @ h + b_h, 4)
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g)
    h' = sigmoid(o) * tanh(c')
}
"""

USER_GRU_SOFTSIGN = """
# a novel cell: momentum GRU with a softsign candidate
cell momentum_gru_softsign(x; h, v[3*H]) {
    option mu = 0.6, s = 0.6
    param W_x[3*H, I], b_x[3*H], W_h[3*H, H], b_h[3*H]
    v' = mu * v + s * (W_x @ x + b_x)
    g  = W_h @ h + b_h
    vr, vz, vn = split(v', 3)
    gr, gz, gn = split(g, 3)
    r  = sigmoid(vr + gr)
    z  = sigmoid(vz + gz)
    n  = softsign(vn + r * gn)
    h' = (1 - z) * n + z * h
    out h'
}
"""

if __name__ == "__main__":
    main(sys.argv[1])
