"""gen_grad_smoke.py: small gradient cases for the `grad` test group (cellc
compile --train), written independently of cellc:

  .cell models (one layer of a docs/cells.md cell + a linear head): forward and
  gradients from tests/ref_cells.py (PyTorch, written from docs/cells.md) with
  autograd, random weights written as the model's weights file;
  ONNX exports of nn.LSTM / nn.GRU classifiers: forward and gradients with
  respect to the ONNX initializers by PyTorch autograd through the ONNX
  LSTM/GRU equations (gate orders iofc / zrh), checked against the exported
  module's own output;
  traced Python-loop cells of tests/ref_momentum.py (re-rolled by cellc),
  gradients by autograd through the module;
  gradient_graph/: models that carry an ONNX Gradient node (compiled without
  --train): an ONNX LSTM with its weights as graph inputs or initializers,
  traced and scripted (Loop) momentum cells with their weights moved to
  graph inputs, batch-first too; loss sum(y * y), gradients w.r.t. the input
  and every weight by autograd (float64).

Layout (the train graph of docs/training.md): OUT/<case>/model.cell or
model.onnx, test_data_set_0/input_k.pb (model inputs, then target [, mask])
and output_k.pb named by TensorProto (model outputs, loss, grad.<P>,
grad.<X>, dstate).  Fixed seeds.

usage: gen_grad_smoke.py OUT
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cells  # noqa: E402
import tensorfile  # noqa: E402


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


# a user cell written as equations: the built-in momentum_lstm spelled out
# (examples/my_cell.cell), checked against ref_cells' momentum_lstm
USER_MOMENTUM_LSTM = """cell my_momentum_lstm(x; h, c, v[4*H]) {
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


def cell_case(out, cell, opts, loss, T=5, B=3, I=3, H=4, C=5, seed=0, head=True, user=None):
    """user: (cell name, definition) of a user cell computing `cell`."""
    rng = np.random.default_rng(seed)
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    params = {k: (rng.standard_normal(s) * 0.4).astype(np.float32) for k, s in ref_cells.param_shapes(cell, opts, I, H)}
    Wy = (rng.standard_normal((C, H)) * 0.4).astype(np.float32); by = (rng.standard_normal(C) * 0.1).astype(np.float32)
    x = rng.standard_normal((T, B, I)).astype(np.float32)
    tw = [("h1." + k, v) for k, v in params.items()]
    if head: tw += [("y.weight", Wy), ("y.bias", by)]
    tensorfile.write(out + "/w.weights", tw)
    optstr = "".join(", %s=%s" % (k, v) for k, v in opts.items())
    with open(out + "/model.cell", "w") as f:
        if user:
            f.write(user[1])
        f.write('model m {\n input x: f32[seq, batch, %d]\n weights "w.weights"\n h1 = %s(x, hidden=%d%s)\n' % (
            I, user[0] if user else cell, H, optstr))
        if head:
            f.write(' y = linear(%s, out=%d)\n output y\n}\n' % ("last(h1)" if loss == "ce" else "h1", C))
        else:
            f.write(' output h1\n}\n')
    c = ref_cells.make_cell(cell, opts, params, torch.float32)
    P = {}
    for k in params:
        t = torch.tensor(params[k], requires_grad=True); P[k] = t
    c.W_x = P["W_x"]; c.b_x = P.get("b_x"); c.W_h = P.get("W_h"); c.b_h = P.get("b_h")
    Wy_t = torch.tensor(Wy, requires_grad=True); by_t = torch.tensor(by, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    st = c.init_state(B)
    hs = []
    for t in range(T):
        h = c.step(xt[t], st, t + 1); h.retain_grad(); hs.append(h)
    Y = torch.stack(hs)
    if head:
        y = (Y[-1] if loss == "ce" else Y) @ Wy_t.T + by_t
    else:
        y = Y
    ins = [("x", x)]
    if loss == "ce":
        tgt = rng.integers(0, C, size=(B,)).astype(np.int64)
        L = torch.nn.functional.cross_entropy(y, torch.tensor(tgt))
    elif loss == "ce-all":
        tgt = rng.integers(0, C, size=(T, B)).astype(np.int64)
        L = torch.nn.functional.cross_entropy(y.reshape(T * B, -1), torch.tensor(tgt).reshape(-1))
    else:
        tgt = rng.standard_normal(tuple(y.shape)).astype(np.float32)
        if loss == "mse":
            L = torch.nn.functional.mse_loss(y, torch.tensor(tgt))
        else:
            m = (rng.random(tuple(y.shape)) < 0.6).astype(np.float32)
            L = ((torch.tensor(m) * (y - torch.tensor(tgt)) ** 2).sum() / torch.tensor(m).sum())
    ins.append(("target", tgt))
    if loss == "masked-mse": ins.append(("mask", m))
    L.backward()
    outs = [("y" if head else "h1", y.detach().numpy()), ("loss", np.array(L.item(), np.float32))]
    outs += [("grad.h1." + k, P[k].grad.numpy()) for k in params]
    if head: outs += [("grad.y.weight", Wy_t.grad.numpy()), ("grad.y.bias", by_t.grad.numpy())]
    outs += [("grad.x", xt.grad.numpy()), ("dstate", torch.stack([h.grad for h in hs]).numpy())]
    for k, (n, a) in enumerate(ins): write_pb("%s/test_data_set_0/input_%d.pb" % (out, k), a, n)
    for k, (n, a) in enumerate(outs): write_pb("%s/test_data_set_0/output_%d.pb" % (out, k), a, n)


class Net(torch.nn.Module):
    def __init__(s, kind, I, H, C, layers, bidir, init=False):
        super().__init__()
        s.rnn = getattr(torch.nn, kind)(I, H, num_layers=layers, bidirectional=bidir)
        s.fc = torch.nn.Linear(H * (2 if bidir else 1), C)
        s.init = init

    def forward(s, x, h0=None, c0=None):
        if s.init:
            y, _ = s.rnn(x, (h0, c0) if c0 is not None else h0)
        else:
            y, _ = s.rnn(x)
        return s.fc(y[-1])


def onnx_case(out, kind="LSTM", layers=1, bidir=False, T=6, B=3, I=4, H=5, C=3, seed=0, init=False):
    """init: initial states h0 (and c0) as graph inputs, their gradients too."""
    torch.manual_seed(seed)
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    net = Net(kind, I, H, C, layers, bidir, init)
    x = torch.randn(T, B, I)
    nd_ = layers * (2 if bidir else 1)
    states = [torch.randn(nd_, B, H) * 0.5 for _ in range(2 if kind == "LSTM" else 1)] if init else []
    names = ["x"] + (["h0", "c0"][:len(states)])
    dyn = {"x": {0: "seq", 1: "batch"}}
    dyn.update({n: {1: "batch"} for n in names[1:]})
    torch.onnx.export(net, (x, *states), out + "/model.onnx", input_names=names, output_names=["y"],
                      dynamic_axes=dyn, opset_version=14)
    st = [torch.tensor(a.numpy(), requires_grad=True) for a in states]
    m = onnx.load(out + "/model.onnx")
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    # map torch parameters to the initializers they were exported as, by value
    leaves = {n: torch.tensor(a.astype(np.float32), requires_grad=True) for n, a in inits.items() if a.dtype == np.float32}
    # forward from the ONNX initializers (ONNX LSTM/GRU semantics, gate orders iofc / zrh)
    G = 4 if kind == "LSTM" else 3
    nodes = [n for n in m.graph.node if n.op_type == kind]
    xt = torch.tensor(x.numpy(), requires_grad=True)
    h_in = xt
    for li, nd in enumerate(nodes):
        W, R, Bv = (leaves[nd.input[k]] for k in (1, 2, 3))
        D = W.shape[0]
        ys = []
        for d in range(D):
            h = st[0][li * D + d] if st else torch.zeros(B, H)
            c = st[1][li * D + d] if len(st) > 1 else torch.zeros(B, H)
            seq = range(T) if d == 0 else range(T - 1, -1, -1)
            outs = [None] * T
            for t in seq:
                g = h_in[t] @ W[d].T + Bv[d][:G * H] + h @ R[d].T + (Bv[d][G * H:] if kind == "LSTM" else 0)
                if kind == "LSTM":
                    i, o, f, cc = (g[:, k * H:(k + 1) * H] for k in range(4))
                    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
                    h = torch.sigmoid(o) * torch.tanh(c)
                else:
                    gx = h_in[t] @ W[d].T + Bv[d][:G * H]
                    lbr = [a.i for a in nd.attribute if a.name == "linear_before_reset"]
                    z = torch.sigmoid(gx[:, :H] + h @ R[d][:H].T + Bv[d][G * H:G * H + H])
                    r = torch.sigmoid(gx[:, H:2 * H] + h @ R[d][H:2 * H].T + Bv[d][G * H + H:G * H + 2 * H])
                    if lbr and lbr[0]:
                        n = torch.tanh(gx[:, 2 * H:] + r * (h @ R[d][2 * H:].T + Bv[d][G * H + 2 * H:]))
                    else:
                        n = torch.tanh(gx[:, 2 * H:] + (r * h) @ R[d][2 * H:].T + Bv[d][G * H + 2 * H:])
                    h = (1 - z) * n + z * h
                outs[t] = h
            ys.append(torch.stack(outs))
        h_in = torch.cat(ys, dim=2)
    fcw = [n for n, a in inits.items() if a.shape == tuple(net.fc.weight.shape) and np.allclose(a, net.fc.weight.detach().numpy())][0]
    fcb = [n for n, a in inits.items() if a.shape == tuple(net.fc.bias.shape) and np.allclose(a, net.fc.bias.detach().numpy())][0]
    y = h_in[-1] @ leaves[fcw].T + leaves[fcb]
    ref = net(x, *states).detach().numpy()
    assert np.allclose(ref, y.detach().numpy(), atol=1e-5), "onnx-semantics forward disagrees with torch"
    tgt = torch.randint(0, C, (B,))
    L = torch.nn.functional.cross_entropy(y, tgt)
    L.backward()
    write_pb(out + "/test_data_set_0/input_0.pb", x.numpy(), "x")
    for k, a in enumerate(states):
        write_pb(out + "/test_data_set_0/input_%d.pb" % (k + 1), a.numpy(), names[k + 1])
    write_pb(out + "/test_data_set_0/input_%d.pb" % (len(states) + 1), tgt.numpy().astype(np.int64), "target")
    outs = [("y", y.detach().numpy()), ("loss", np.array(L.item(), np.float32))]
    used = {i for n in m.graph.node for i in n.input}
    outs += [("grad." + t.name, (leaves[t.name].grad if leaves[t.name].grad is not None else torch.zeros_like(leaves[t.name])).numpy())
             for t in m.graph.initializer if t.name in leaves and t.name in used]
    outs += [("grad.x", xt.grad.numpy())]
    outs += [("grad." + names[k + 1], a.grad.numpy()) for k, a in enumerate(st)]
    for k, (n, a) in enumerate(outs):
        write_pb("%s/test_data_set_0/output_%d.pb" % (out, k), a, n)


def generic_case(out, cell, opts, loss, T=5, B=3, I=3, H=4, C=5, seed=0):
    """Any cell of ref_cells through run_layer, parameters as autograd leaves
    (no dstate: run_layer does not expose the per-step states)."""
    rng = np.random.default_rng(seed)
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    shapes = ref_cells.param_shapes(cell, opts, I, H)
    params = {k: (rng.standard_normal(sh) * 0.4).astype(np.float32) for k, sh in shapes}
    Wy = (rng.standard_normal((C, H)) * 0.4).astype(np.float32)
    by = (rng.standard_normal(C) * 0.1).astype(np.float32)
    x = rng.standard_normal((T, B, I)).astype(np.float32)
    tensorfile.write(out + "/w.weights", [("h1." + k, v) for k, v in params.items()] +
                     [("y.weight", Wy), ("y.bias", by)])
    optstr = "".join(", %s=%s" % (k, v) for k, v in opts.items())
    with open(out + "/model.cell", "w") as f:
        f.write('model m {\n input x: f32[seq, batch, %d]\n weights "w.weights"\n h1 = %s(x, hidden=%d%s)\n'
                ' y = linear(last(h1), out=%d)\n output y\n}\n' % (I, cell, H, optstr, C))
    leaves = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    Wy_t, by_t = torch.tensor(Wy, requires_grad=True), torch.tensor(by, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    keep, keep_dm = ref_cells.T, ref_cells.dtriv_matrix
    ref_cells.T = lambda a, dtype: a if torch.is_tensor(a) else keep(a, dtype)

    def dtriv_matrix(A, base, dtype):
        # ref_cells.dtriv_matrix (docs/cells.md: M = base expm(S), S = triu(A,1) - triu(A,1)^T,
        # in float64), kept differentiable
        S = torch.triu(A.double(), 1) - torch.triu(A.double(), 1).T
        return (base.double() @ torch.matrix_exp(S)).to(dtype)
    ref_cells.dtriv_matrix = dtriv_matrix
    try:
        Y, _ = ref_cells.run_layer(cell, opts, leaves, xt)
    finally:
        ref_cells.T, ref_cells.dtriv_matrix = keep, keep_dm
    y = Y[-1] @ Wy_t.T + by_t
    tgt = rng.integers(0, C, size=(B,)).astype(np.int64)
    L = torch.nn.functional.cross_entropy(y, torch.tensor(tgt))
    L.backward()
    write_pb(out + "/test_data_set_0/input_0.pb", x, "x")
    write_pb(out + "/test_data_set_0/input_1.pb", tgt, "target")
    outs = [("y", y.detach().numpy()), ("loss", np.array(L.item(), np.float32))]
    outs += [("grad.h1." + k, leaves[k].grad.numpy()) for k in params if k not in ref_cells.frozen_params(cell)]
    outs += [("grad.y.weight", Wy_t.grad.numpy()), ("grad.y.bias", by_t.grad.numpy()), ("grad.x", xt.grad.numpy())]
    for k, (n, a) in enumerate(outs):
        write_pb("%s/test_data_set_0/output_%d.pb" % (out, k), a, n)


GENERIC_CASES = [
    ("irnn_K2", "irnn", {"K": 2}, "ce"),
    ("momentum_attention", "momentum_attention", {}, "ce"),
    ("heavy_ball_rnn_tanh_steps2", "heavy_ball_rnn", {"steps": 2, "act": "tanh"}, "ce"),
    ("fastrnn", "fastrnn", {}, "ce"),
    ("dtriv", "dtriv", {}, "ce"),
    ("momentum_dtriv", "momentum_dtriv", {}, "ce"),
]

def trace_case(out, model, opset=14, T=8, B=3, I=3, H=8, C=4, seed=0, batch_first=False, scripted=False):
    """A PyTorch Python-loop cell (tests/ref_momentum.py) traced to ONNX (T
    copies of the step, re-rolled by cellc) or, scripted, the same weights in
    tests/ref_scripted.py's torch.jit.script module (an ONNX Loop); loss
    ce-all on the per-step logits y; gradients by autograd through the eager
    module w.r.t. the initializers, matched to its parameters by value (the
    exporter may store fc.weight transposed)."""
    import ref_momentum
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    net = ref_momentum.make_model(model, I, H, C, seed, batch_first=batch_first)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, T, I) if batch_first else (T, B, I)).astype(np.float32)
    tb = {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}
    if scripted:
        import ref_scripted
        sm = torch.jit.script(ref_scripted.load_from(ref_scripted.make_model(model, I, H, C, batch_first), net))
        with torch.no_grad():
            torch.onnx.export(sm, (torch.from_numpy(x),), out + "/model.onnx", opset_version=opset,
                              input_names=["x"], output_names=["y", "h"],
                              dynamic_axes={"x": tb, "y": tb, "h": {0: "batch"}})
    else:
        torch.onnx.export(net, (torch.from_numpy(x),), out + "/model.onnx", opset_version=opset,
                          input_names=["x"], output_names=["y", "h"], dynamic_axes={"x": tb})
    m = onnx.load(out + "/model.onnx")
    xt = torch.tensor(x, requires_grad=True)
    y, h = net(xt)
    tgt = rng.integers(0, C, size=tuple(y.shape[:2])).astype(np.int64)
    L = torch.nn.functional.cross_entropy(y.reshape(-1, C), torch.from_numpy(tgt).reshape(-1))
    L.backward()
    params = dict(net.named_parameters())
    outs = [("y", y.detach().numpy()), ("loss", np.array(L.item(), np.float32))]

    def used_in(graph):
        u = set()
        for n in graph.node:
            u |= set(n.input)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    u |= used_in(a.g)
        return u
    used = used_in(m.graph)
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype != np.float32 or t.name not in used:
            continue
        g = None
        for pn, p in params.items():
            pv = p.detach().numpy()
            if pv.shape == a.shape and np.array_equal(pv, a):
                g = p.grad.numpy()
            elif pv.ndim == 2 and pv.T.shape == a.shape and np.array_equal(pv.T, a):
                g = p.grad.numpy().T
        if g is None:
            raise SystemExit("trace_case: initializer %s matches no parameter" % t.name)
        outs.append(("grad." + t.name, g))
    outs.append(("grad.x", xt.grad.numpy()))
    write_pb(out + "/test_data_set_0/input_0.pb", x, "x")
    write_pb(out + "/test_data_set_0/input_1.pb", tgt, "target")
    for k, (n, a) in enumerate(outs):
        write_pb("%s/test_data_set_0/output_%d.pb" % (out, k), a, n)


TRACE_CASES = [
    ("trace_momentum_lstm", "momentum_lstm", 14, False, False),
    ("trace_nag_lstm_r2", "nag_lstm_r2", 14, False, False),
    ("trace_adam_lstm_bf", "adam_lstm", 17, True, False),
    ("trace_momentum_gru", "momentum_gru", 14, False, False),
    ("script_momentum_lstm", "momentum_lstm", 14, False, True),
    ("script_rmsprop_lstm_bf", "rmsprop_lstm", 17, True, True),
]

CELL_CASES = [
    ("lstm_ce", "lstm", {}, "ce"),
    ("lstm_mse", "lstm", {}, "mse"),
    ("lstm_ce_all", "lstm", {}, "ce-all"),
    ("momentum_lstm_ce", "momentum_lstm", {"mu": 0.6, "s": 0.6}, "ce"),
    ("momentum_lstm_masked_mse", "momentum_lstm", {}, "masked-mse"),
    ("adam_lstm_ce", "adam_lstm", {}, "ce"),
    ("rmsprop_gru_mse", "rmsprop_gru", {}, "mse"),
    ("gru_ce", "gru", {}, "ce"),
    ("rnn_ce", "rnn", {}, "ce"),
    ("nag_rnn_ce", "nag_rnn", {}, "ce"),
    ("nag_lstm_ce", "nag_lstm", {}, "ce"),
    ("momentum_gru_ce_all", "momentum_gru", {}, "ce-all"),
]
class LensNet(torch.nn.Module):
    """nn.LSTM/GRU -> head on the final hidden state (Y_h) of the last layer."""

    def __init__(s, kind, I, H, C, bidir):
        super().__init__()
        s.rnn = getattr(torch.nn, kind)(I, H, bidirectional=bidir)
        s.fc = torch.nn.Linear(H * (2 if bidir else 1), C)

    def forward(s, x):
        _, hn = s.rnn(x)
        hn = hn[0] if isinstance(hn, tuple) else hn
        return s.fc(torch.cat([hn[k] for k in range(hn.shape[0])], dim=1))


def lens_case(out, kind="LSTM", bidir=False, T=7, B=4, I=4, H=5, C=3, seed=0):
    """sequence_lens: the export gets a graph input `lens` (int32 [B]) wired
    into the recurrent node; the reference runs the ONNX equations per row
    over its own length (the reverse direction from its last valid step) and
    takes Y_h = each row's state after its last valid step."""
    torch.manual_seed(seed)
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    net = LensNet(kind, I, H, C, bidir)
    x = torch.randn(T, B, I)
    torch.onnx.export(net, (x,), out + "/model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "seq", 1: "batch"}}, opset_version=14)
    m = onnx.load(out + "/model.onnx")
    nd = [n for n in m.graph.node if n.op_type == kind][0]
    while len(nd.input) < 5:
        nd.input.append("")
    nd.input[4] = "lens"
    m.graph.input.append(onnx.helper.make_tensor_value_info("lens", onnx.TensorProto.INT32, ["batch"]))
    onnx.save(m, out + "/model.onnx")
    lens = np.array([T, 1, T - 2, 3][:B], np.int32)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    leaves = {n: torch.tensor(a, requires_grad=True) for n, a in inits.items() if a.dtype == np.float32}
    W, R, Bv = (leaves[nd.input[k]] for k in (1, 2, 3))
    G = 4 if kind == "LSTM" else 3
    xt = torch.tensor(x.numpy(), requires_grad=True)
    finals = []
    for d in range(W.shape[0]):
        rows = []
        for b in range(B):
            h = torch.zeros(1, H)
            c = torch.zeros(1, H)
            steps = range(lens[b]) if d == 0 else range(lens[b] - 1, -1, -1)
            for t in steps:
                xb = xt[t, b:b + 1]
                gx = xb @ W[d].T + Bv[d][:G * H]
                if kind == "LSTM":
                    g = gx + h @ R[d].T + Bv[d][G * H:]
                    i, o, f, cc = (g[:, k * H:(k + 1) * H] for k in range(4))
                    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
                    h = torch.sigmoid(o) * torch.tanh(c)
                else:
                    z = torch.sigmoid(gx[:, :H] + h @ R[d][:H].T + Bv[d][G * H:G * H + H])
                    r = torch.sigmoid(gx[:, H:2 * H] + h @ R[d][H:2 * H].T + Bv[d][G * H + H:G * H + 2 * H])
                    n = torch.tanh(gx[:, 2 * H:] + r * (h @ R[d][2 * H:].T + Bv[d][G * H + 2 * H:]))
                    h = (1 - z) * n + z * h
            rows.append(h)
        finals.append(torch.cat(rows, 0))
    fcw = [n for n, a in inits.items() if a.shape == tuple(net.fc.weight.shape) and np.allclose(a, net.fc.weight.detach().numpy())][0]
    fcb = [n for n, a in inits.items() if a.shape == tuple(net.fc.bias.shape) and np.allclose(a, net.fc.bias.detach().numpy())][0]
    y = torch.cat(finals, 1) @ leaves[fcw].T + leaves[fcb]
    tgt = torch.randint(0, C, (B,))
    L = torch.nn.functional.cross_entropy(y, tgt)
    L.backward()
    write_pb(out + "/test_data_set_0/input_0.pb", x.numpy(), "x")
    write_pb(out + "/test_data_set_0/input_1.pb", lens, "lens")
    write_pb(out + "/test_data_set_0/input_2.pb", tgt.numpy().astype(np.int64), "target")
    outs = [("y", y.detach().numpy()), ("loss", np.array(L.item(), np.float32))]
    outs += [("grad." + t.name, leaves[t.name].grad.numpy()) for t in m.graph.initializer
             if t.name in leaves and leaves[t.name].grad is not None]
    outs += [("grad.x", xt.grad.numpy())]
    for k, (n, a) in enumerate(outs):
        write_pb("%s/test_data_set_0/output_%d.pb" % (out, k), a, n)


def op_case(out, op, attrs, fn, B=4, N=6, seed=0):
    """One element-wise/softmax operator after a MatMul with an initializer,
    built with onnx.helper: y = op(x @ W + b); mse loss; the reference is the
    same formula in PyTorch (written from the ONNX operator definitions)."""
    from onnx import helper, TensorProto
    rng = np.random.default_rng(seed)
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    W = (rng.standard_normal((N, N)) * 0.8).astype(np.float32)
    b = (rng.standard_normal(N) * 0.3).astype(np.float32)
    x = rng.standard_normal((B, N)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["z0"]), helper.make_node("Add", ["z0", "b"], ["z"])]
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(b, "b")]
    e = np.array([2.5], np.float32)
    if op == "Pow":
        # sigmoid(z) ^ e with a trainable exponent e [1] (a positive base)
        nodes += [helper.make_node("Sigmoid", ["z"], ["s"]), helper.make_node("Pow", ["s", "e"], ["y"])]
        inits.append(numpy_helper.from_array(e, "e"))
    else:
        nodes.append(helper.make_node(op, ["z"], ["y"], **attrs))
    g = helper.make_graph(nodes, op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", N])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", N])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_operatorsetid("", 14)]), out + "/model.onnx")
    Wt, bt, xt, et = (torch.tensor(a, requires_grad=True) for a in (W, b, x, e))
    y = torch.sigmoid(xt @ Wt + bt) ** et if op == "Pow" else fn(xt @ Wt + bt)
    tgt = rng.standard_normal((B, N)).astype(np.float32)
    L = torch.nn.functional.mse_loss(y, torch.from_numpy(tgt))
    L.backward()
    write_pb(out + "/test_data_set_0/input_0.pb", x, "x")
    write_pb(out + "/test_data_set_0/input_1.pb", tgt, "target")
    outs = [("y", y.detach().numpy()), ("loss", np.array(L.item(), np.float32)), ("grad.W", Wt.grad.numpy()),
            ("grad.b", bt.grad.numpy())]
    if op == "Pow":
        outs.append(("grad.e", et.grad.numpy()))
    outs.append(("grad.x", xt.grad.numpy()))
    for k, (n, a) in enumerate(outs):
        write_pb("%s/test_data_set_0/output_%d.pb" % (out, k), a, n)


OP_CASES = [
    ("op_hardsigmoid", "HardSigmoid", {"alpha": 0.3, "beta": 0.4}, lambda z: torch.clamp(0.3 * z + 0.4, 0, 1)),
    ("op_thresholdedrelu", "ThresholdedRelu", {"alpha": 0.2}, lambda z: torch.where(z > 0.2, z, torch.zeros_like(z))),
    ("op_softmax", "Softmax", {}, lambda z: torch.softmax(z, -1)),
    ("op_logsoftmax", "LogSoftmax", {}, lambda z: torch.log_softmax(z, -1)),
    ("op_elu", "Elu", {"alpha": 0.7}, lambda z: torch.nn.functional.elu(z, 0.7)),
    ("op_softsign", "Softsign", {}, lambda z: z / (1 + z.abs())),
    ("op_leakyrelu", "LeakyRelu", {"alpha": 0.1}, lambda z: torch.nn.functional.leaky_relu(z, 0.1)),
    ("op_pow", "Pow", {}, None),
]

ONNX_CASES = [
    ("onnx_lstm", "LSTM", 1, False, False),
    ("onnx_lstm_2layer", "LSTM", 2, False, False),
    ("onnx_lstm_bidir", "LSTM", 1, True, False),
    ("onnx_gru_2layer_bidir", "GRU", 2, True, False),
    ("onnx_lstm_init", "LSTM", 1, False, True),
    ("onnx_lstm_2layer_bidir_init", "LSTM", 2, True, True),
    ("onnx_gru_init", "GRU", 1, False, True),
]

# T = 100: the longest gradient check
LONG_CASES = [
    ("long_momentum_lstm_T100", "momentum_lstm", {}, "ce"),
    ("long_adam_gru_T100", "adam_gru", {}, "mse"),
]


# ---- ONNX Gradient graphs (ai.onnx.preview.training) ------------------------------
#
# A model, a loss sum(y * y) over one of its outputs, and a Gradient node
# whose xs are the data input and the weights; the weights either stay
# initializers or become graph inputs (given by the data set).  Compiled
# without --train: the Gradient node is the model's own.  Gradients by
# PyTorch autograd (float64) through the same computation.

def with_gradient(m, y_name, xs, as_inputs, shapes):
    """m with loss = ReduceSum(y * y) and Gradient(xs) as outputs `loss`,
    `d_<x>` (of shapes[x]); the initializers named in as_inputs moved to
    graph inputs."""
    from onnx import helper
    g = m.graph
    moved = [t for t in g.initializer if t.name in as_inputs]
    for t in moved:
        g.initializer.remove(t)
        g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    g.node.extend([
        helper.make_node("Mul", [y_name, y_name], ["gg_sq"], name="gg_sq"),
        helper.make_node("ReduceSum", ["gg_sq"], ["loss"], name="gg_loss", keepdims=0),
        helper.make_node("Gradient", list(xs), ["d_" + x for x in xs], name="gg_grad",
                         domain="ai.onnx.preview.training", xs=list(xs), y="loss"),
    ])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("loss", onnx.TensorProto.FLOAT, []))
    for x in xs:
        g.output.append(helper.make_tensor_value_info("d_" + x, onnx.TensorProto.FLOAT, list(shapes[x])))
    m.opset_import.append(helper.make_opsetid("ai.onnx.preview.training", 1))
    return m


def write_gradient_case(out, m, inputs, loss, grads):
    """inputs: [(name, array)] in the order of m's graph inputs; grads:
    {name: gradient} for each xs."""
    os.makedirs(out + "/test_data_set_0", exist_ok=True)
    onnx.save(m, out + "/model.onnx")
    names = [i.name for i in m.graph.input]
    given = dict(inputs)
    for k, n in enumerate(names):
        write_pb("%s/test_data_set_0/input_%d.pb" % (out, k), given[n].astype(np.float32), n)
    outs = [("loss", np.array(loss, np.float32))] + [("d_" + n, g.astype(np.float32)) for n, g in grads]
    for k, (n, a) in enumerate(outs):
        with open("%s/test_data_set_0/output_%d.pb" % (out, k), "wb") as f:      # rank 0 kept
            f.write(numpy_helper.from_array(a, n).SerializeToString())


def gradient_onnx_lstm(out, weights_as_inputs, T=6, B=3, I=4, H=5, seed=0):
    """An ONNX LSTM (gates iofc) with W, R, B; loss over Y (every step),
    gradients w.r.t. X, W, R, B by autograd through the ONNX equations."""
    from onnx import helper
    rng = np.random.default_rng(seed)
    vals = {"X": rng.standard_normal((T, B, I)), "W": rng.standard_normal((1, 4 * H, I)) * 0.4,
            "R": rng.standard_normal((1, 4 * H, H)) * 0.4, "B": rng.standard_normal((1, 8 * H)) * 0.3}
    vals = {k: v.astype(np.float32) for k, v in vals.items()}
    inits = [] if weights_as_inputs else [numpy_helper.from_array(vals[k], k) for k in "WRB"]
    ins = [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [T, B, I])]
    g = helper.make_graph([helper.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h"], name="lstm",
                                            hidden_size=H)], "lstm", ins,
                          [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    if weights_as_inputs:
        for k in "WRB":
            m.graph.input.append(helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, list(vals[k].shape)))
    m = with_gradient(m, "Y", ["X", "W", "R", "B"], [], {k: v.shape for k, v in vals.items()})
    t = {k: torch.tensor(v.astype(np.float64), requires_grad=True) for k, v in vals.items()}
    W, R, Bb = t["W"][0], t["R"][0], t["B"][0]
    h = torch.zeros(B, H, dtype=torch.float64)
    c = torch.zeros(B, H, dtype=torch.float64)
    ys = []
    for s_ in range(T):
        a = t["X"][s_] @ W.T + h @ R.T + Bb[:4 * H] + Bb[4 * H:]
        i, o, f, cc = a.split(H, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
        h = torch.sigmoid(o) * torch.tanh(c)
        ys.append(h)
    y = torch.stack(ys)[:, None]
    L = (y * y).sum()
    L.backward()
    write_gradient_case(out, m, list(vals.items()), L.item(), [(k, t[k].grad.numpy()) for k in "XWRB"])


def gradient_module_case(out, net, x, tb, opset, scripted_net=None):
    """A traced (or, with scripted_net, scripted: an ONNX Loop) export of a
    tests/ref_momentum.py cell network, its weights moved to graph inputs;
    loss over its per-step output y; gradients by autograd through net."""
    path = out + "/export.onnx"
    os.makedirs(out, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(scripted_net if scripted_net is not None else net, (torch.from_numpy(x),), path,
                          opset_version=opset, input_names=["x"], output_names=["y", "h"],
                          dynamic_axes={"x": tb, "y": tb} if scripted_net is not None else None)
    m = onnx.load(path)
    os.remove(path)
    xt = torch.tensor(x.astype(np.float64), requires_grad=True)
    net = net.double()
    torch.set_default_dtype(torch.float64)      # the states the module makes
    try:
        y, _ = net(xt)
    finally:
        torch.set_default_dtype(torch.float32)
    L = (y * y).sum()
    L.backward()
    params = dict(net.named_parameters())
    used = set()
    for n in m.graph.node:
        used |= set(n.input)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                for b in a.g.node:
                    used |= set(b.input)
    weights, grads = [], []
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.dtype != np.float32 or t.name not in used or a.size < 2:
            continue
        g = None
        for pn, p in params.items():
            pv = p.detach().numpy().astype(np.float32)
            if pv.shape == a.shape and np.array_equal(pv, a):
                g = p.grad.numpy()
            elif pv.ndim == 2 and pv.T.shape == a.shape and np.array_equal(pv.T, a):
                g = p.grad.numpy().T
        if g is None:
            continue            # a constant the exporter made (not a parameter)
        weights.append((t.name, a))
        grads.append((t.name, g))
    if len(grads) < 3:
        raise SystemExit("gradient_module_case: only %d weights matched parameters" % len(grads))
    m = with_gradient(m, "y", ["x"] + [n for n, _ in weights], [n for n, _ in weights],
                      dict([("x", x.shape)] + [(n, a.shape) for n, a in weights]))
    onnx.checker.check_model(m)
    write_gradient_case(out, m, [("x", x)] + weights, L.item(), [("x", xt.grad.numpy())] + grads)


def gradient_graph_cases(out):
    import ref_momentum
    import ref_scripted
    gradient_onnx_lstm(os.path.join(out, "onnx_lstm_weights_as_inputs"), True, seed=900)
    gradient_onnx_lstm(os.path.join(out, "onnx_lstm_weights_as_initializers"), False, seed=901)
    for k, (name, model, bf, scripted) in enumerate([
            ("traced_momentum_lstm", "momentum_lstm", False, False),
            ("traced_momentum_gru_bf", "momentum_gru", True, False),
            ("scripted_momentum_lstm", "momentum_lstm", False, True)]):
        I, H, C, T, B = 3, 6, 4, 7, 2
        net = ref_momentum.make_model(model, I, H, C, 910 + k, batch_first=bf)
        rng = np.random.default_rng(910 + k)
        x = rng.standard_normal((B, T, I) if bf else (T, B, I)).astype(np.float32)
        tb = {0: "batch", 1: "seq"} if bf else {0: "seq", 1: "batch"}
        sm = None
        if scripted:
            sm = torch.jit.script(ref_scripted.load_from(ref_scripted.make_model(model, I, H, C, bf), net))
        gradient_module_case(os.path.join(out, name), net, x, tb, 14, sm)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for i, (name, cell, opts, loss) in enumerate(CELL_CASES):
        cell_case(os.path.join(out, name), cell, opts, loss, seed=100 + i)
    for i, (name, cell, opts, loss) in enumerate(GENERIC_CASES):
        generic_case(os.path.join(out, name), cell, opts, loss, seed=300 + i)
    for i, (name, model, opset, bf, scripted) in enumerate(TRACE_CASES):
        trace_case(os.path.join(out, name), model, opset, seed=400 + i, batch_first=bf, scripted=scripted)
    for i, (name, kind, layers, bidir, init) in enumerate(ONNX_CASES):
        onnx_case(os.path.join(out, name), kind, layers, bidir, seed=200 + i, init=init)
    onnx_case(os.path.join(out, "long_onnx_lstm_2layer_bidir_T100"), "LSTM", 2, True, T=100, B=4, I=5, H=16,
              seed=299)
    cell_case(os.path.join(out, "user_momentum_lstm_mse"), "momentum_lstm", {}, "mse", seed=600,
              user=("my_momentum_lstm", USER_MOMENTUM_LSTM))
    lens_case(os.path.join(out, "onnx_lstm_lens"), "LSTM", False, seed=700)
    lens_case(os.path.join(out, "onnx_lstm_bidir_lens"), "LSTM", True, seed=701)
    lens_case(os.path.join(out, "onnx_gru_bidir_lens"), "GRU", True, seed=702)
    for i, (name, op, attrs, fn) in enumerate(OP_CASES):
        op_case(os.path.join(out, name), op, attrs, fn, seed=800 + i)
    for i, (name, cell, opts, loss) in enumerate(LONG_CASES):
        cell_case(os.path.join(out, name), cell, opts, loss, T=100, B=4, I=5, H=16, seed=500 + i)
    gradient_graph_cases(os.path.join(out, "gradient_graph"))


if __name__ == "__main__":
    main()
