"""gen_grad_ops.py: fixtures of the `grad_ops` test group (issue 15.4): the
gradients of the differentiable operators of recurrent models' training
graphs (Conv 1-D, LayerNormalization, BatchNormalization in training mode,
the Reduce family, Where, Pad, Min/Max, SoftmaxCrossEntropyLoss and
NegativeLogLikelihoodLoss), against PyTorch autograd in float64, for
`cellc verify --train` (never from cellc).

Two kinds of models:
  torch.onnx.export of small recurrent modules (a Conv1d front end with
  LayerNorm before a GRU; Conv1d + BatchNorm1d exported in training mode
  before an RNN; an LSTM tagger whose graph ends in a masked, class-weighted
  cross entropy; a torch.cat and an F.pad over two run-time lengths before
  a GRU), the gradients taken through the module itself;
  onnx.helper graphs that reach every attribute (keepdims, axes as input or
  attribute, pad modes, variadic Min/Max with ties, every loss reduction,
  ignore_index, weights, log_prob, auto_pad, groups, dilations), the
  reference a PyTorch transcription of the ONNX specification.

Layout as tests/gen_grad_cases.py: OUT/<case>/model.onnx,
test_data_set_0/input_K.pb (the model inputs, then `target`) and
output_K.pb (the model outputs, loss, grad.<initializer> for every float
initializer in initializer order, grad.<input> for every f32 input), and
OUT/tests.tsv with the group's runs (name, model, case dir, loss, loss
output, pass | refuse, words the refusal must contain).

Conventions the references follow (docs/training.md): Min/Max and
ReduceMax/ReduceMin split the gradient evenly among the elements equal to
the result (torch.maximum gives each of two tied inputs half, torch.amax /
torch.amin over a stack 1/k each); ReduceL2 has gradient 0 where the norm
is 0; the class weights of the losses are differentiated (written out, as
torch's nll_loss does not differentiate its weight argument).

The written values are float64 results rounded to float32; every case also
runs in float32 and the relative norm error of the float32 gradients must
stay below 1e-5 (a tenth of verify's --grad-rtol 1e-4).  Fixed seeds.

usage: gen_grad_ops.py OUT
"""
import copy
import io
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_grad_cases as G  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

ACC_LIMIT = 1e-5
TESTS = []
ACCURACY = []


def write_pb(path, arr, name):
    arr = np.asarray(arr)
    arr = arr if arr.ndim == 0 else np.ascontiguousarray(arr)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr, name).SerializeToString())


def loss_of(kind, y, target):
    if kind == "ce":
        return F.cross_entropy(y, target)
    if kind == "mse":
        return F.mse_loss(y, target)
    raise ValueError(kind)


def rel_err(a, b):
    a, b = a.double(), b.double()
    nb = float(b.norm())
    return float((a - b).norm()) / nb if nb > 0 else float((a - b).norm())


def write_case(outdir, name, model, inputs, forward, grads, kind, loss_output=None, zero_ok=()):
    """model: ModelProto; inputs: [(name, ndarray)] in the model's order;
    forward(dtype, inputs {name: ndarray}) -> (leaves {key: leaf tensor},
    outputs [tensor]); grads: [(written name, fn(grads {key: tensor}) ->
    tensor)] in the train graph's order; zero_ok: written names whose
    reference may be zero (buffers the loss does not reach)."""
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    out_names = [o.name for o in model.graph.output]
    assert [i.name for i in model.graph.input] == [n for n, _ in inputs], (name, [i.name for i in model.graph.input])
    li = out_names.index(loss_output) if loss_output else 0
    rng = np.random.RandomState(G.seed_of(name, "target"))
    vals = dict(inputs)
    with torch.no_grad():
        y = forward(torch.float64, vals)[1][li]
    if kind == "ce":
        target = rng.randint(0, y.shape[-1], size=tuple(y.shape[:-1])).astype(np.int64)
    else:
        target = np.asarray(rng.randn(*y.shape), np.float32)
    ev = {}
    for dt in (torch.float64, torch.float32):
        leaves, outs = forward(dt, vals)
        tg = torch.as_tensor(target) if kind == "ce" else torch.as_tensor(target, dtype=dt)
        loss = loss_of(kind, outs[li], tg)
        keys = list(leaves)
        gs = torch.autograd.grad(loss, [leaves[k] for k in keys], allow_unused=True)
        gd = {k: torch.zeros_like(leaves[k]) if g is None else g for k, g in zip(keys, gs)}
        ev[dt] = ([o.detach() for o in outs], loss.detach(), gd)
    o64, l64, g64 = ev[torch.float64]
    _, _, g32 = ev[torch.float32]
    ds = os.path.join(d, "test_data_set_0")
    for j, (n, a) in enumerate(list(inputs) + [("target", target)]):
        write_pb(os.path.join(ds, "input_%d.pb" % j), a, n)
    outs = [(n, o64[j]) for j, n in enumerate(out_names)] + [("loss", l64)]
    worst = (0.0, "")
    for gname, fn in grads:
        a, b = fn(g64), fn(g32)
        if not np.isfinite(float(a.norm())) or (float(a.norm()) == 0.0 and gname not in zero_ok):
            raise SystemExit("%s: %s is zero or not finite" % (name, gname))
        r = rel_err(b, a)
        worst = max(worst, (r, gname))
        outs.append((gname, a))
    for j, (n, a) in enumerate(outs):
        write_pb(os.path.join(ds, "output_%d.pb" % j), a.numpy().astype(np.float32), n)
    ACCURACY.append((name, worst[0], worst[1]))
    TESTS.append((name, os.path.join(d, "model.onnx"), d, kind, loss_output or "-", "pass", ""))
    print("%-28s %-4s worst float32 grad error %.2g (%s)" % (name, kind, worst[0], worst[1]))


def refuse_case(outdir, name, model, words, kind="mse"):
    d = os.path.join(outdir, name)
    os.makedirs(d)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    TESTS.append((name, os.path.join(d, "model.onnx"), d, kind, "-", "refuse", ",".join(words)))


# ---- torch.onnx.export of recurrent modules ------------------------------------------

def export_case(outdir, name, net, xs, in_names, out_names, kind, opset=17, training=False, loss_output=None,
                reference=None, dynamic_axes=None):
    """net: float32 module; xs: [ndarray] inputs (f32 ones get gradients);
    reference(module, tensors) -> outputs, when the reference differs from
    the module's forward in form (not value: checked here)."""
    f = io.BytesIO()
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    net.train(training)
    snap = copy.deepcopy(net.state_dict())
    with torch.no_grad():
        torch.onnx.export(net, tuple(torch.from_numpy(a) for a in xs), f, opset_version=opset,
                          input_names=in_names, output_names=out_names, training=mode, do_constant_folding=False,
                          dynamic_axes=dynamic_axes)
    net.load_state_dict(snap)       # the export ran the module once (running statistics)
    model = onnx.load_from_string(f.getvalue())
    used = set()
    for node in model.graph.node:
        used.update(node.input)
    P = {n: p.detach() for n, p in net.named_parameters()}
    Bf = {n: b for n, b in net.named_buffers()}
    cands = G.candidates(net)
    grads, zero_ok, covered = [], [], []
    for init in model.graph.initializer:
        if init.data_type != TensorProto.FLOAT or init.name not in used:
            continue
        a = numpy_helper.to_array(init)
        if init.name in Bf:         # running statistics (the export's forward updated them)
            shape = a.shape
            grads.append(("grad." + init.name, (lambda s: lambda g: torch.zeros(s, dtype=torch.float64))(shape)))
            zero_ok.append("grad." + init.name)
            continue
        hits = [(dsc, fn, srcs) for dsc, fn, srcs in cands
                if tuple(fn(P).shape) == a.shape and np.array_equal(fn(P).numpy(), a)]
        if len(hits) != 1:
            raise SystemExit("%s: initializer %s %s: %d parameter maps match" % (name, init.name, a.shape, len(hits)))
        grads.append(("grad." + init.name, (lambda fn: lambda g: fn(g))(hits[0][1])))
        covered += list(hits[0][2])
    if sorted(covered) != sorted(P):
        raise SystemExit("%s: parameters not mapped exactly once: %s vs %s" % (name, sorted(covered), sorted(P)))
    f32_in = [n for n, a in zip(in_names, xs) if a.dtype == np.float32]
    grads += [("grad." + n, (lambda n: lambda g: g[n])(n)) for n in f32_in]
    nets = {torch.float64: copy.deepcopy(net).double(), torch.float32: copy.deepcopy(net)}

    def forward(dt, vals):
        m = nets[dt]
        m.load_state_dict({k: v.to(dt) if v.is_floating_point() else v for k, v in snap.items()})
        m.train(training)
        leaves = dict(m.named_parameters())
        ts = []
        for n in in_names:
            a = vals[n]
            if a.dtype == np.float32:
                t = torch.tensor(np.asarray(a, np.float64), dtype=dt, requires_grad=True)
                leaves[n] = t
            else:
                t = torch.from_numpy(a)
            ts.append(t)
        if reference:
            with torch.no_grad():
                own, mine = m(*ts), reference(m, ts)
                for a, b in zip(mine, own):
                    assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), "%s: reference differs from the module" % name
        outs = reference(m, ts) if reference else m(*ts)
        outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        return leaves, outs
    write_case(outdir, name, model, list(zip(in_names, xs)), forward, grads, kind, loss_output, zero_ok)


class ConvLnGru(torch.nn.Module):
    """[B, T, I] -> Conv1d over time (same length) -> LayerNorm -> GRU -> Linear on the last step."""

    def __init__(self, I, F_, H, C):
        super().__init__()
        self.conv = torch.nn.Conv1d(I, F_, 3, padding=1)
        self.ln = torch.nn.LayerNorm(F_)
        self.gru = torch.nn.GRU(F_, H, batch_first=True)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, x):
        z = self.conv(x.transpose(1, 2)).transpose(1, 2)
        out, _ = self.gru(torch.tanh(self.ln(z)))
        return self.fc(out[:, -1])


class ConvBnRnn(torch.nn.Module):
    """[T, B, I] -> strided, dilated, grouped Conv1d -> BatchNorm1d (training) -> RNN -> Linear per step."""

    def __init__(self, I, F_, H, C):
        super().__init__()
        self.conv = torch.nn.Conv1d(I, F_, 3, stride=2, padding=2, dilation=2, groups=I, bias=False)
        self.bn = torch.nn.BatchNorm1d(F_)
        self.rnn = torch.nn.RNN(F_, H)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, x):
        z = self.bn(self.conv(x.permute(1, 2, 0)))      # [B, F, T']
        out, _ = self.rnn(torch.tanh(z).permute(2, 0, 1))
        return self.fc(out)


class LstmTagger(torch.nn.Module):
    """An LSTM tagger [B, T, I] whose graph ends in a class-weighted, masked
    cross entropy over every step (labels ignore_index -1): outputs the
    mean loss, the per-token losses of the sum form with another ignore
    index, and the logits."""

    def __init__(self, I, H, C):
        super().__init__()
        self.lstm = torch.nn.LSTM(I, H, batch_first=True)
        self.fc = torch.nn.Linear(H, C)
        self.cw = torch.nn.Parameter(torch.rand(C) + 0.5)

    def forward(self, x, labels):
        out, _ = self.lstm(x)
        logits = self.fc(out).transpose(1, 2)          # [B, C, T]
        mean = F.cross_entropy(logits, labels, weight=self.cw, ignore_index=-1)
        lp = F.log_softmax(logits, 1)
        tok = F.nll_loss(lp, labels, reduction="none", ignore_index=-1)
        return mean, tok, logits


class LnLstm(torch.nn.Module):
    """A layer-normalised LSTM cell (Ba et al. 2016) written as a Python loop
    over the steps of x [T, B, I] (traced: cellc re-rolls it, so the
    LayerNormalization nodes sit in the recurrence body), a Linear head on
    every step."""

    def __init__(self, I, H, C):
        super().__init__()
        self.H = H
        self.wx = torch.nn.Linear(I, 4 * H, bias=False)
        self.wh = torch.nn.Linear(H, 4 * H)
        self.ln_x = torch.nn.LayerNorm(4 * H)
        self.ln_h = torch.nn.LayerNorm(4 * H)
        self.ln_c = torch.nn.LayerNorm(H)
        self.fc = torch.nn.Linear(H, C)
        with torch.no_grad():       # distinct values: the initializers map to the parameters by value
            for ln in (self.ln_x, self.ln_h, self.ln_c):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.uniform_(-0.3, 0.3)

    def forward(self, x):
        h = torch.zeros(x.shape[1], self.H, dtype=x.dtype)
        c = torch.zeros(x.shape[1], self.H, dtype=x.dtype)
        ys = []
        for t in range(x.shape[0]):
            a = self.ln_x(self.wx(x[t])) + self.ln_h(self.wh(h))
            i, f, g, o = a.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(self.ln_c(c))
            ys.append(self.fc(h))
        return torch.stack(ys)


class CatPadGru(torch.nn.Module):
    """A context [B, T1, I] and a chunk [B, T2, I] of run-time lengths, each
    through a Linear and tanh; torch.cat of the two along time (T1 + T2) and
    the context padded with zeros to the chunk's length (F.pad by T2 - T1)
    plus the chunk, concatenated again (T1 + 2 T2 steps), a GRU, Linear on
    every step: the gradients of a Concat and a Pad over sizes known at run
    time (a Split by the parts' lengths, a crop by the pads)."""

    def __init__(self, I, H, C):
        super().__init__()
        self.pa = torch.nn.Linear(I, H)
        self.pb = torch.nn.Linear(I, H)
        self.gru = torch.nn.GRU(H, H, batch_first=True)
        self.fc = torch.nn.Linear(H, C)

    def forward(self, ctx, x):
        a, b = torch.tanh(self.pa(ctx)), torch.tanh(self.pb(x))
        mixed = F.pad(a, (0, 0, 0, b.size(1) - a.size(1))) + b
        out, _ = self.gru(torch.cat([torch.cat([a, b], 1), mixed], 1))
        return self.fc(out)


def tagger_reference(m, ts):
    """The same values by gather (differentiable in the class weights)."""
    x, labels = ts
    out, _ = m.lstm(x)
    logits = m.fc(out).transpose(1, 2)
    lp = F.log_softmax(logits, 1)
    keep = labels != -1
    t = labels.clamp(min=0)
    picked = lp.gather(1, t.unsqueeze(1)).squeeze(1)
    w = m.cw[t] * keep
    mean = -(w * picked).sum() / w.sum()
    tok = -picked * keep
    return mean, tok, logits


def export_cases(outdir):
    rng = np.random.RandomState(151)
    torch.manual_seed(151)
    x = rng.randn(3, 7, 3).astype(np.float32)
    export_case(outdir, "export_conv_ln_gru_ce", ConvLnGru(3, 6, 5, 4), [x], ["x"], ["y"], "ce")
    torch.manual_seed(152)
    net = ConvBnRnn(3, 6, 5, 4)
    with torch.no_grad():
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.5, 0.5)
    x = rng.randn(9, 4, 3).astype(np.float32)
    export_case(outdir, "export_conv_bn_train_rnn_mse", net, [x], ["x"], ["y"], "mse", opset=15, training=True)
    # the same with a run-time batch (the statistics' count computed at run time)
    torch.manual_seed(152)
    net = ConvBnRnn(3, 6, 5, 4)
    x = rng.randn(9, 5, 3).astype(np.float32)
    export_case(outdir, "export_conv_bn_train_dynbatch_mse", net, [x], ["x"], ["y"], "mse", opset=15, training=True,
                dynamic_axes={"x": {1: "batch"}, "y": {1: "batch"}})
    torch.manual_seed(154)
    x = rng.randn(6, 3, 4).astype(np.float32)
    export_case(outdir, "export_ln_lstm_loop_mse", LnLstm(4, 5, 3), [x], ["x"], ["y"], "mse")
    torch.manual_seed(155)
    ctx, x = rng.randn(2, 3, 4).astype(np.float32), rng.randn(2, 5, 4).astype(np.float32)
    export_case(outdir, "export_cat_pad_runtime_lengths_mse", CatPadGru(4, 5, 3), [ctx, x], ["ctx", "x"], ["y"],
                "mse", dynamic_axes={"ctx": {0: "batch", 1: "T1"}, "x": {0: "batch", 1: "T2"},
                                     "y": {0: "batch", 1: "steps"}})
    torch.manual_seed(153)
    x = rng.randn(3, 6, 4).astype(np.float32)
    labels = rng.randint(0, 5, size=(3, 6)).astype(np.int64)
    labels[0, 1] = labels[2, 4] = labels[1, 0] = -1
    export_case(outdir, "export_lstm_masked_ce_mse", LstmTagger(4, 5, 5), [x, labels], ["x", "labels"],
                ["ce", "tok", "logits"], "mse", reference=tagger_reference)


# ---- onnx.helper graphs: every attribute ----------------------------------------------

def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def graph_case(outdir, name, nodes, inputs, inits, outputs, ref, kind="mse", opset=15, loss_output=None):
    """inputs: [(name, ndarray)]; inits: [(name, ndarray f32)] (parameters);
    outputs: [(name, shape)]; ref(t {name: tensor}) -> [outputs]."""
    def vi(n, a):
        ty = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
              np.dtype(np.bool_): TensorProto.BOOL}[a.dtype]
        return helper.make_tensor_value_info(n, ty, list(a.shape))
    g = helper.make_graph(nodes, name, [vi(n, a) for n, a in inputs], [f32(n, s) for n, s in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8

    def forward(dt, vals):
        leaves, t = {}, {}
        for n, a in list(inits) + list(inputs):
            if a.dtype == np.float32:
                t[n] = leaves[n] = torch.tensor(np.asarray(a, np.float64), dtype=dt, requires_grad=True)
            else:
                t[n] = torch.from_numpy(a)
        return leaves, ref(t)
    grads = [("grad." + n, (lambda n: lambda g: g[n])(n)) for n, _ in inits]
    grads += [("grad." + n, (lambda n: lambda g: g[n])(n)) for n, a in inputs if a.dtype == np.float32]
    write_case(outdir, name, model, inputs, forward, grads, kind, loss_output)
    return model


def node(op, ins, outs, **kw):
    return helper.make_node(op, ins, outs, **kw)


def reduce_case(outdir):
    """Every differentiable reduction, keepdims 0 and 1, axes as an input
    (ReduceSum) or an attribute, the default (all axes), negative and
    non-contiguous axes, ties of ReduceMax/ReduceMin from an edge Pad."""
    rng = np.random.RandomState(7)
    B, T, I, Fh = 3, 5, 4, 6
    x = rng.randn(B, T, I).astype(np.float32)
    W = (rng.randn(I, Fh) * 0.5).astype(np.float32)
    nodes = [
        node("MatMul", ["x", "W"], ["mm"]), node("Tanh", ["mm"], ["h"]),             # [B, T, F]
        node("Pad", ["h", "pads"], ["he"], mode="edge"),                             # [B, T + 2, F]: ties
        node("ReduceMean", ["h"], ["a"], axes=[1], keepdims=0),                      # [B, F]
        node("ReduceMax", ["he"], ["b"], axes=[1], keepdims=0),
        node("ReduceMin", ["he"], ["c"], axes=[-2], keepdims=1),                     # [B, 1, F]
        node("ReduceLogSumExp", ["h"], ["d"], axes=[1], keepdims=0),
        node("ReduceL2", ["h"], ["e"], axes=[1], keepdims=1),                        # [B, 1, F]
        node("ReduceSumSquare", ["h"], ["f"], axes=[2], keepdims=1),                 # [B, T, 1]
        node("ReduceSum", ["f", "ax1"], ["f2"], keepdims=0),                         # [B, 1]
        node("ReduceSum", ["h", "ax02"], ["k"], keepdims=1),                         # [1, T, 1]
        node("ReduceMax", ["k"], ["k2"], axes=[1], keepdims=0),                      # [1, 1]
        node("ReduceMean", ["h"], ["m"], keepdims=0),                                # [] (all axes)
        node("ReduceMin", ["h"], ["n"], axes=[0, 2], keepdims=0),                    # [T]
        node("ReduceSum", ["n"], ["n2"], keepdims=1),                                # [1] (no axes: all)
        node("Squeeze", ["c", "ax1"], ["c2"]), node("Squeeze", ["e", "ax1"], ["e2"]),
        node("Mul", ["b", "c2"], ["bc"]), node("Add", ["a", "bc"], ["s1"]), node("Add", ["s1", "d"], ["s2"]),
        node("Mul", ["e2", "f2"], ["s3"]), node("Add", ["s2", "s3"], ["s4"]), node("Add", ["s4", "k2"], ["s5"]),
        node("Add", ["s5", "m"], ["s6"]), node("Mul", ["s6", "n2"], ["y"]),
    ]
    consts = [("pads", np.array([0, 1, 0, 0, 1, 0], np.int64)), ("ax1", np.array([1], np.int64)),
              ("ax02", np.array([0, 2], np.int64))]
    nodes = [node("Constant", [], [n], value=numpy_helper.from_array(a, n)) for n, a in consts] + nodes

    def ref(t):
        h = torch.tanh(t["x"] @ t["W"])
        he = F.pad(h.transpose(1, 2), (1, 1), mode="replicate").transpose(1, 2)
        a = h.mean(1)
        b = torch.amax(he, 1)
        c = torch.amin(he, -2, keepdim=True)
        d = torch.logsumexp(h, 1)
        e = torch.linalg.vector_norm(h, 2, dim=1, keepdim=True)
        f2 = (h * h).sum(2, keepdim=True).sum(1)
        k2 = torch.amax(h.sum((0, 2), keepdim=True), 1)
        m = h.mean()
        n2 = torch.amin(h, (0, 2)).sum().reshape(1)
        return [(a + b * c.squeeze(1) + d + e.squeeze(1) * f2 + k2 + m) * n2]
    graph_case(outdir, "reduce_family_mse", nodes, [("x", x)], [("W", W)], [("y", [B, Fh])], ref, opset=13)


def where_minmax_pad_case(outdir):
    """Pad constant (a trainable value, negative pads cropping), reflect and
    edge; Max and Min of two and three inputs with ties (the interior of
    the reflect and edge pads are the same copies of h); Where with a mask
    input and broadcasting."""
    rng = np.random.RandomState(8)
    B, T, Fh = 2, 6, 4
    x = rng.randn(B, T, Fh).astype(np.float32)
    W = (rng.randn(Fh, Fh) * 0.6).astype(np.float32)
    v = np.array(0.3, np.float32)
    bias = (rng.randn(Fh) * 0.2).astype(np.float32)
    cond = rng.rand(B, T + 3, 1) > 0.4
    pads = np.array([0, 2, 0, 0, 1, 0], np.int64)
    pads_c = np.array([0, 3, -1, 0, 0, 1], np.int64)      # T + 3 rows; F - 1 + 1 columns (crops, then pads)
    nodes = [node("Constant", [], [n], value=numpy_helper.from_array(a, n))
             for n, a in [("pads", pads), ("pads_c", pads_c)]] + [
        node("MatMul", ["x", "W"], ["mm"]), node("Tanh", ["mm"], ["h"]),
        node("Pad", ["h", "pads_c", "v"], ["p1"], mode="constant"),
        node("Pad", ["h", "pads"], ["p2"], mode="reflect"),
        node("Pad", ["h", "pads"], ["p3"], mode="edge"),
        node("Max", ["p2", "p3"], ["mx2"]),
        node("Min", ["p1", "p2", "p3"], ["mn3"]),
        node("Max", ["mx2", "mn3", "bias"], ["mx3"]),
        node("Where", ["cond", "mx3", "mn3"], ["w"]),
        node("Where", ["cond", "p1", "bias"], ["w2"]),
        node("Mul", ["w", "w2"], ["y0"]), node("Add", ["y0", "mx2"], ["y"]),
    ]

    def ref(t):
        h = torch.tanh(t["x"] @ t["W"])
        p1 = F.pad(h[:, :, 1:], (0, 1, 3, 0), value=0.0)
        # the constant value where p1 is padding: rows 0..2 and the last column
        pad_mask = torch.ones_like(p1, dtype=torch.bool)
        pad_mask[:, 3:, :-1] = False
        p1 = torch.where(pad_mask, t["v"] * torch.ones_like(p1), p1)
        ht = h.transpose(1, 2)
        p2 = F.pad(ht, (2, 1), mode="reflect").transpose(1, 2)
        p3 = F.pad(ht, (2, 1), mode="replicate").transpose(1, 2)
        mx2 = torch.maximum(p2, p3)
        mn3 = torch.amin(torch.stack([p1, p2, p3]), 0)
        mx3 = torch.amax(torch.stack(torch.broadcast_tensors(mx2, mn3, t["bias"])), 0)
        c = t["cond"]
        w = torch.where(c, mx3, mn3)
        w2 = torch.where(c, p1, t["bias"].expand_as(p1))
        return [w * w2 + mx2]
    graph_case(outdir, "where_minmax_pad_mse", nodes, [("x", x), ("cond", cond)],
               [("W", W), ("v", v), ("bias", bias)], [("y", [B, T + 3, Fh])], ref, opset=13)


def conv_helper_case(outdir):
    """Conv 1-D: auto_pad SAME_UPPER with stride 2 and groups 2; explicit
    asymmetric pads with dilation and no bias; a 2-D Conv; LayerNorm over
    the last two axes with scale and no bias; BatchNormalization in
    inference mode (gradients of its mean and variance too)."""
    rng = np.random.RandomState(9)
    N, C, L = 2, 4, 9
    x = rng.randn(N, C, L).astype(np.float32)
    W1 = (rng.randn(6, 2, 3) * 0.5).astype(np.float32)
    b1 = (rng.randn(6) * 0.1).astype(np.float32)
    W2 = (rng.randn(4, 6, 2) * 0.4).astype(np.float32)
    W3 = (rng.randn(3, 1, 2, 2) * 0.5).astype(np.float32)
    S = (rng.rand(6) + 0.5).astype(np.float32)
    bs = (rng.rand(4) + 0.5).astype(np.float32)
    bb = (rng.randn(4) * 0.1).astype(np.float32)
    bm = (rng.randn(4) * 0.1).astype(np.float32)
    bv = (rng.rand(4) + 0.5).astype(np.float32)
    nodes = [
        node("Conv", ["x", "W1", "b1"], ["c1"], auto_pad="SAME_UPPER", strides=[2], group=2),   # [N, 6, 5]
        node("Tanh", ["c1"], ["t1"]),
        node("Conv", ["t1", "W2"], ["c2"], pads=[2, 1], dilations=[2]),                      # [N, 4, 6]
        node("BatchNormalization", ["c2", "bs", "bb", "bm", "bv"], ["bn"], epsilon=1e-3),
        node("Unsqueeze", ["bn", "ax1"], ["u"]),                                              # [N, 1, 4, 6]
        node("Conv", ["u", "W3"], ["c3"], pads=[1, 0, 0, 1]),                                 # [N, 3, 4, 6]
        node("LayerNormalization", ["c3", "S"], ["y"], axis=-1, epsilon=1e-4),
    ]
    nodes = [node("Constant", [], ["ax1"], value=numpy_helper.from_array(np.array([1], np.int64), "ax1"))] + nodes

    def ref(t):
        c1 = F.conv1d(F.pad(t["x"], (1, 1)), t["W1"], t["b1"], stride=2, groups=2)
        c2 = F.conv1d(F.pad(torch.tanh(c1), (2, 1)), t["W2"], dilation=2)
        sh = (1, -1, 1)
        bn = (c2 - t["bm"].view(sh)) / torch.sqrt(t["bv"].view(sh) + 1e-3) * t["bs"].view(sh) + t["bb"].view(sh)
        c3 = F.conv2d(F.pad(bn.unsqueeze(1), (0, 1, 1, 0)), t["W3"])
        return [F.layer_norm(c3, (6,), t["S"], None, eps=1e-4)]
    graph_case(outdir, "conv_norm_mse", nodes, [("x", x)],
               [("W1", W1), ("b1", b1), ("W2", W2), ("W3", W3), ("S", S), ("bs", bs), ("bb", bb), ("bm", bm),
                ("bv", bv)], [("y", [N, 3, 4, 6])], ref, opset=17)


def loss_cases(outdir):
    """SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: reductions
    none/sum/mean, ignore_index, weights (trainable), the log_prob output
    feeding the graph, [N, C] and [N, C, D] scores."""
    rng = np.random.RandomState(10)
    N, D, I, C = 4, 3, 5, 6
    x = rng.randn(N, D, I).astype(np.float32)
    W = (rng.randn(I, C) * 0.7).astype(np.float32)
    cw = (rng.rand(C) + 0.5).astype(np.float32)
    lab = rng.randint(0, C, size=(N, D)).astype(np.int64)
    lab[0, 0] = lab[2, 1] = lab[3, 2] = 2          # ignore_index 2 in places (and as a real class elsewhere: none)
    lab2 = lab[:, 0].copy()
    lab2[1] = -5
    perm = np.array([0, 2, 1], np.int64)
    nodes = [
        node("MatMul", ["x", "W"], ["s"]),                                            # [N, D, C]
        node("Transpose", ["s"], ["sc"], perm=[0, 2, 1]),                              # [N, C, D]
        node("SoftmaxCrossEntropyLoss", ["sc", "lab", "cw"], ["l_mean", "logp"], reduction="mean",
             ignore_index=2),
        node("SoftmaxCrossEntropyLoss", ["sc", "lab"], ["l_none"], reduction="none"),  # [N, D]
        node("SoftmaxCrossEntropyLoss", ["sc", "lab", "cw"], ["l_sum"], reduction="sum"),
        node("NegativeLogLikelihoodLoss", ["logp", "lab", "cw"], ["n_none"], reduction="none", ignore_index=2),
        node("Gather", ["logp", "zero"], ["lp0"], axis=2),                              # [N, C]
        node("NegativeLogLikelihoodLoss", ["lp0", "lab2"], ["n_mean"], ignore_index=-5),
        node("NegativeLogLikelihoodLoss", ["lp0", "lab2", "cw"], ["n_sum"], reduction="sum", ignore_index=-5),
        node("ReduceMean", ["logp"], ["lpm"], keepdims=0),
        node("Mul", ["l_none", "n_none"], ["prod"]), node("ReduceSum", ["prod"], ["ps"], keepdims=0),
        node("Add", ["l_mean", "ps"], ["a1"]), node("Mul", ["l_sum", "tenth"], ["a2"]),
        node("Add", ["a1", "a2"], ["a3"]), node("Add", ["a3", "n_mean"], ["a4"]),
        node("Mul", ["n_sum", "lpm"], ["a5"]), node("Add", ["a4", "a5"], ["total"]),
    ]
    consts = [("zero", np.array(0, np.int64)), ("tenth", np.array(0.1, np.float32))]
    nodes = [node("Constant", [], [n], value=numpy_helper.from_array(a, n)) for n, a in consts] + nodes
    del perm

    def nll(lp, t, w, red, ignore):
        keep = t != ignore if ignore is not None else torch.ones_like(t, dtype=torch.bool)
        tt = torch.where(keep, t, torch.zeros_like(t))
        picked = lp.gather(1, tt.unsqueeze(1)).squeeze(1)
        wt = (w[tt] if w is not None else torch.ones_like(picked)) * keep
        l = -wt * picked
        return l if red == "none" else l.sum() if red == "sum" else l.sum() / wt.sum()

    def ref(t):
        sc = (t["x"] @ t["W"]).transpose(1, 2)
        logp = F.log_softmax(sc, 1)
        lab_, lab2_, cw_ = t["lab"], t["lab2"], t["cw"]
        l_mean = nll(logp, lab_, cw_, "mean", 2)
        l_none = nll(logp, lab_, None, "none", None)
        l_sum = nll(logp, lab_, cw_, "sum", None)
        n_none = nll(logp, lab_, cw_, "none", 2)
        lp0 = logp[:, :, 0]
        n_mean = nll(lp0, lab2_, None, "mean", -5)
        n_sum = nll(lp0, lab2_, cw_, "sum", -5)
        total = l_mean + (l_none * n_none).sum() + l_sum * 0.1 + n_mean + n_sum * logp.mean()
        return [total, logp]
    graph_case(outdir, "class_losses_mse", nodes, [("x", x), ("lab", lab), ("lab2", lab2)],
               [("W", W), ("cw", cw)], [("total", []), ("logp", [N, C, D])], ref, opset=13)


def refusals(outdir):
    """Operators without a gradient rule: refused with the node named."""
    x = f32("x", [2, 3])
    for op, words in [("ReduceProd", ["ReduceProd", "no gradient rule"]),
                      ("ReduceL1", ["ReduceL1", "no gradient rule"])]:
        g = helper.make_graph([node("Tanh", ["x"], ["h"]), node(op, ["h"], ["y"], axes=[1], keepdims=0,
                                                                 name="the_reduction")],
                              "r", [x], [f32("y", [2])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        refuse_case(outdir, "refuse_" + op.lower(), m, words + ["the_reduction"])
    # a Resize by a scale that is no multiple of 1/64 over a run-time width
    # compiles (scale(W, 1.3)) but has no gradient rule
    g = helper.make_graph([node("Tanh", ["x"], ["h"]), node("Resize", ["h", "roi", "sc"], ["y"], mode="linear",
                                                          name="the_stretch")],
                          "r", [f32("x", [2, 3, "W"])], [f32("y", [2, 3, "W_out"])],
                          [numpy_helper.from_array(np.zeros(0, np.float32), "roi"),
                           numpy_helper.from_array(np.array([1, 1, 1.3], np.float32), "sc")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    refuse_case(outdir, "refuse_resize_runtime_scale", m, ["Resize", "no gradient rule", "the_stretch"])


def main(outdir):
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    export_cases(outdir)
    reduce_case(outdir)
    where_minmax_pad_case(outdir)
    conv_helper_case(outdir)
    loss_cases(outdir)
    refusals(outdir)
    with open(os.path.join(outdir, "tests.tsv"), "w") as f:
        for row in TESTS:
            f.write("\t".join(row) + "\n")
    with open(os.path.join(outdir, "accuracy.tsv"), "w") as f:
        for name, r, where in ACCURACY:
            f.write("%s\t%.3g\t%s\n" % (name, r, where))
    bad = [a for a in ACCURACY if a[1] > ACC_LIMIT]
    if bad:
        sys.exit("float32 gradients too inaccurate: %s" % ", ".join("%s (%.3g, %s)" % b for b in bad))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_grad_ops.py OUT")
    main(sys.argv[1])
