"""gen_script_wild.py: torch.jit.script loops written the way people write
them (issue 14 point 3), for the harness group script_wild.

tests/gen_loop_cases.py scripts one model family in one style
(tests/ref_scripted.py: `for t in range(x.size(0))`, x[t], a list of head
outputs).  Here every model is its own class, as a different author would
write it, and each export must compile to ONE recurrence:
  - `for x_t in torch.unbind(x, 1)` / `x.unbind(0)` (SplitToSequence with
    SequenceLength as the trip count and SequenceAt at the iteration number
    in the body), `for x_t in x.split(1, 1)` (slices that keep the axis);
  - `for t in range(x.size(1))` with x[:, t], `range(x.shape[0])` with x[t],
    `range(x.size(0) - 1)` (a forecaster), a loop over torch.cat([start,
    y[:, :-1]], 1) (teacher forcing): trip counts one less than the time axis;
  - outputs by list append + torch.stack (ConcatFromSequence new_axis=1),
    by h.unsqueeze(1) + torch.cat(outs, 1) (new_axis=0 on axis 1), or
    `ys += [h]`;
  - `for i, x_t in enumerate(torch.unbind(x, 1))` and `zip(x.unbind(0),
    mask.unbind(0))` (the trip count a ReduceMin over the lengths);
  - a NAG restart written `k += 1; if k % F == 0: k = 1` (an int64 counter
    carried by the Loop, an If on it in the body), a counter from 2^40 whose
    value mod 5 scales each step (exact only with the whole int64 carried), a restart that zeroes the
    velocity under `if t % F == 0:` (If on the loop counter choosing a
    tensor), `if t == 0:` with x[t] read in both branches, a step scale
    `1.0 if i % 2 == 0 else 0.5`, torch.where on the cell state,
    torch.where masking finished rows by a lengths input and a float mask
    mixed into the state update;
  - nn.Linear (MatMul + Add on slices of unknown rank) or raw nn.Parameter
    weights with F.linear / @, gates by chunk or by slicing.
Exported at opsets 13, 14 and 17 with dynamic batch and time axes.  Layout:
  CASE/model.onnx
  CASE/test_data_set_0/   T = 8, batch 2 (the export's example sizes)
  CASE/test_data_set_1/   T = 13, batch 3 (the same file at another T)
  CASE/case.json          model, opset, style, expect ("ok", or "error"
                          with the text the located refusal must contain)
  CASE/stream/            (STREAM models) data set 1's x.bin [T, B, I] and
                          prefix.bin [T, B, H], the h of every prefix, and
                          dims.txt "T B I H S": the loop breaks after step S
                          (S steps of T run), for tests/api/test_break_step.c
Goldens come from the scripted module itself (eval mode, no_grad), weights
from torch.manual_seed per model, inputs from a numpy seed per case; each
model is also checked against an eager run of the same class before its data
is written.

usage: gen_script_wild.py OUTDIR
"""
import io
import json
import os
import shutil
import sys
import warnings
from typing import List, Tuple

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

warnings.filterwarnings("ignore")

I, H = 3, 8
SETS = [(8, 2), (13, 3)]        # (T, B) of test_data_set_0 and _1


# ---- the models ----------------------------------------------------------------

class UnbindMomentumLSTM(nn.Module):
    """batch-first MomentumLSTM over torch.unbind(x, 1), outputs stacked on 1"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.x2h = nn.Linear(I, 4 * H)
        self.h2h = nn.Linear(H, 4 * H)
        self.mu, self.s = 0.6, 0.5

    def forward(self, x):
        B = x.size(0)
        h = torch.zeros(B, self.hid)
        c = torch.zeros(B, self.hid)
        v = torch.zeros(B, 4 * self.hid)
        outs: List[torch.Tensor] = []
        for x_t in torch.unbind(x, 1):
            v = self.mu * v + self.s * self.x2h(x_t)
            gates = v + self.h2h(h)
            i, f, g, o = gates.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, 1), h


class UnbindParamGRU(nn.Module):
    """time-first GRU with raw parameters, `for xt in x.unbind(0)`, gates by
    slicing, every h stacked"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.W = nn.Parameter(torch.randn(3 * H, I) * 0.4)
        self.U = nn.Parameter(torch.randn(3 * H, H) * 0.4)
        self.b = nn.Parameter(torch.randn(3 * H) * 0.1)

    def forward(self, x):
        h = torch.zeros(x.shape[1], self.hid)
        hs = []
        for xt in x.unbind(0):
            a = F.linear(xt, self.W, self.b)
            r_ = h @ self.U.t()
            r = torch.sigmoid(a[:, :self.hid] + r_[:, :self.hid])
            z = torch.sigmoid(a[:, self.hid:2 * self.hid] + r_[:, self.hid:2 * self.hid])
            n = torch.tanh(a[:, 2 * self.hid:] + r * r_[:, 2 * self.hid:])
            h = (1 - z) * n + z * h
            hs.append(h)
        return torch.stack(hs), h


class IndexCatMomentumRNN(nn.Module):
    """batch-first momentum RNN, `for t in range(x.size(1))` with x[:, t],
    h.unsqueeze(1) collected and joined by torch.cat(outs, 1)"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.W = nn.Linear(I, H)
        self.U = nn.Linear(H, H, bias=False)
        self.mu = 0.7

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hid)
        v = torch.zeros(x.size(0), self.hid)
        outs = []
        for t in range(x.size(1)):
            v = self.mu * v + self.W(x[:, t])
            h = torch.tanh(v + self.U(h))
            outs.append(h.unsqueeze(1))
        return torch.cat(outs, 1)


class NAGLSTMRestartIf(nn.Module):
    """NAG-style LSTM whose restart is a Python counter: `k += 1; if k % F ==
    0: k = 1`, mu = (k - 1) / (k + 2); torch.where on the cell state; loop
    over torch.unbind(x, 1)"""

    def __init__(self, F_: int = 3):
        super().__init__()
        self.hid = H
        self.F = F_
        self.i2h = nn.Linear(I, 4 * H)
        self.h2h = nn.Linear(H, 4 * H)

    def forward(self, x):
        B = x.size(0)
        h = torch.zeros(B, self.hid)
        c = torch.zeros(B, self.hid)
        v = torch.zeros(B, 4 * self.hid)
        k = 0
        outs: List[torch.Tensor] = []
        for x_t in torch.unbind(x, 1):
            k += 1
            if k % self.F == 0:
                k = 1
            mu = (k - 1.0) / (k + 2.0)
            v = mu * v + 0.5 * self.i2h(x_t)
            g = v + self.h2h(h)
            i, f, gg, o = g.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
            h = torch.where(c > 1.0, 0.5 * c, torch.sigmoid(o) * torch.tanh(c))
            outs.append(h)
        return torch.stack(outs, 1), h


class MaskedGRU(nn.Module):
    """time-first GRU over `range(x.shape[0])` whose finished rows keep their
    state: torch.where((lengths > t).unsqueeze(1), new, old)"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.ih = nn.Linear(I, 3 * H)
        self.hh = nn.Linear(H, 3 * H)

    def forward(self, x, lengths):
        h = torch.zeros(x.size(1), self.hid)
        for t in range(x.shape[0]):
            a = self.ih(x[t])
            b = self.hh(h)
            ar, az, an = a.chunk(3, 1)
            br, bz, bn = b.chunk(3, 1)
            r = torch.sigmoid(ar + br)
            z = torch.sigmoid(az + bz)
            n = torch.tanh(an + r * bn)
            hn = (1 - z) * n + z * h
            h = torch.where((lengths > t).unsqueeze(1), hn, h)
        return h


class RestartZeroRNN(nn.Module):
    """momentum RNN whose velocity restarts under `if t % F == 0:` (an If on
    the loop counter choosing a tensor), `ys += [h]`"""

    def __init__(self, F_: int = 4):
        super().__init__()
        self.hid = H
        self.F = F_
        self.x2h = nn.Linear(I, H)
        self.h2h = nn.Linear(H, H)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.hid)
        v = torch.zeros(x.size(1), self.hid)
        ys: List[torch.Tensor] = []
        for t in range(x.size(0)):
            if t % self.F == 0:
                v = torch.zeros_like(v)
            v = 0.9 * v + self.x2h(x[t])
            h = torch.tanh(v + self.h2h(h))
            ys += [h]
        return torch.stack(ys, 0), h


class SplitAdamLSTM(nn.Module):
    """batch-first Adam-style LSTM over x.split(1, 1) (slices keep the time
    axis: squeezed in the body), state tuple, last h returned"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.wx = nn.Linear(I, 4 * H)
        self.wh = nn.Linear(H, 4 * H)
        self.mu, self.s, self.beta, self.eps = 0.5, 0.7, 0.9, 1e-6

    def step(self, u, state: Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]):
        h, c, v, m = state
        v = self.mu * v + self.s * u
        m = self.beta * m + (1 - self.beta) * u * u
        g = v / torch.sqrt(m + self.eps) + self.wh(h)
        i, f, gg, o = g.chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c, v, m

    def forward(self, x):
        B = x.size(0)
        z = torch.zeros(B, 4 * self.hid)
        state = (torch.zeros(B, self.hid), torch.zeros(B, self.hid), z, z)
        for xs in x.split(1, 1):
            state = self.step(self.wx(xs.squeeze(1)), state)
        return state[0]


class EnumerateRNN(nn.Module):
    """batch-first RNN over `for i, x_t in enumerate(torch.unbind(x, 1))`
    (trip count ReduceMin(INT64_MAX, T)), a step scale `1.0 if i % 2 == 0
    else 0.5` (an If on the counter), outputs stacked on 1"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.inp = nn.Linear(I, H)
        self.rec = nn.Linear(H, H)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hid)
        outs: List[torch.Tensor] = []
        for i, x_t in enumerate(torch.unbind(x, 1)):
            h = torch.tanh(self.inp(x_t) + self.rec(h)) * (1.0 if i % 2 == 0 else 0.5)
            outs.append(h)
        return torch.stack(outs, 1)


class NextStepLSTM(nn.Module):
    """A forecaster: `for t in range(x.size(0) - 1)` reads x[t] and predicts
    step t + 1 (the trip count is the time axis less one: a derived symbol);
    one nn.Linear over torch.cat([x_t, h]), gates by chunk, a head at every
    step, `preds += [y]` then torch.stack."""

    def __init__(self):
        super().__init__()
        self.gates = nn.Linear(I + H, 4 * H)
        self.head = nn.Linear(H, I)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.head.in_features)
        c = torch.zeros(x.size(1), self.head.in_features)
        preds: List[torch.Tensor] = []
        for t in range(x.size(0) - 1):
            i, f, g, o = self.gates(torch.cat([x[t], h], 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            preds += [self.head(h)]
        return torch.stack(preds)


class StartTokenGRU(nn.Module):
    """Teacher forcing, batch-first: a learned start vector concatenated in
    front of y[:, :-1] (Expand + Concat on the time axis), then
    `for t in range(inp.size(1))` over it with a GRU step on raw parameters;
    returns the last h."""

    def __init__(self):
        super().__init__()
        self.start = nn.Parameter(torch.randn(1, 1, I))
        self.w_x = nn.Parameter(torch.randn(I, 3 * H) * 0.4)
        self.w_h = nn.Parameter(torch.randn(H, 3 * H) * 0.4)
        self.b = nn.Parameter(torch.randn(3 * H) * 0.1)

    def forward(self, y):
        inp = torch.cat([self.start.expand(y.size(0), 1, self.start.size(2)), y[:, :-1]], 1)
        hid = self.w_h.size(0)
        h = torch.zeros(y.size(0), hid)
        for t in range(inp.size(1)):
            gx = inp[:, t] @ self.w_x + self.b
            gh = h @ self.w_h
            r = torch.sigmoid(gx[:, :hid] + gh[:, :hid])
            z = torch.sigmoid(gx[:, hid:2 * hid] + gh[:, hid:2 * hid])
            n = torch.tanh(gx[:, 2 * hid:] + r * gh[:, 2 * hid:])
            h = (1 - z) * n + z * h
        return h


class ZipMaskRNN(nn.Module):
    """momentum RNN over `zip(x.unbind(0), mask.unbind(0))` (two splits, trip
    count min(T, T)); a float mask [T, B] keeps finished rows:
    h = m * h_new + (1 - m) * h"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.W = nn.Parameter(torch.randn(I, H) * 0.5)
        self.U = nn.Parameter(torch.randn(H, H) * 0.3)
        self.mu = 0.5

    def forward(self, x, mask):
        h = torch.zeros(x.size(1), self.hid)
        v = torch.zeros(x.size(1), self.hid)
        for x_t, m_t in zip(x.unbind(0), mask.unbind(0)):
            v = self.mu * v + x_t @ self.W
            hn = torch.tanh(v + h @ self.U)
            m = m_t.unsqueeze(1)
            h = m * hn + (1 - m) * h
        return h


class FirstStepIfGRU(nn.Module):
    """GRU-like cell whose first step has no recurrent term: `if t == 0:`
    around code that reads x[t] in both branches"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.x2h = nn.Linear(I, 2 * H)
        self.h2h = nn.Linear(H, 2 * H)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.hid)
        for t in range(x.size(0)):
            if t == 0:
                z, n = self.x2h(x[t]).chunk(2, 1)
            else:
                z, n = (self.x2h(x[t]) + self.h2h(h)).chunk(2, 1)
            z = torch.sigmoid(z)
            h = (1 - z) * torch.tanh(n) + z * h
        return h


class BigCounterRNN(nn.Module):
    """an int64 step counter far beyond float32's 2^24 (k = 2^40 + 3t): the
    step's gain (k % 5) / 4 is exact only if the carried counter is"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.inp = nn.Linear(I, H)
        self.rec = nn.Linear(H, H)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.hid)
        k = 1099511627776
        for x_t in x.unbind(0):
            k = k + 3
            gain = float(k % 5) / 4.0
            h = torch.tanh(gain * self.inp(x_t) + self.rec(h))
        return h


class BreakRNN(nn.Module):
    """stops when the state's sum passes 1.5: a data-dependent Loop condition
    (data set 1 breaks after 7 of its 13 steps, data set 0 runs all 8)"""

    def __init__(self):
        super().__init__()
        self.hid = H
        self.cell = nn.Linear(I + H, H)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.hid)
        for x_t in x.unbind(0):
            h = torch.tanh(self.cell(torch.cat([x_t, h], 1)))
            if bool(h.sum() > 1.5):
                break
        return h


def with_mask(T, B, rng):
    lens = rng.integers(1, T + 1, size=B)
    lens[0] = T
    return [rng.standard_normal((T, B, I)).astype(np.float32),
            (np.arange(T)[:, None] < lens[None, :]).astype(np.float32)]


def tokens(T, B, rng):
    return [rng.standard_normal((T, B, I)).astype(np.float32)]


def tokens_bf(T, B, rng):
    return [rng.standard_normal((B, T, I)).astype(np.float32)]


def with_lengths(T, B, rng):
    lens = np.sort(rng.integers(1, T + 1, size=B))[::-1].copy()
    lens[0] = T
    return [rng.standard_normal((T, B, I)).astype(np.float32), lens.astype(np.int64)]


TB = {0: "T", 1: "B"}
BT = {0: "B", 1: "T"}

# name -> (class, opsets, inputs(T, B, rng), input names, output names, dynamic axes, expect)
MODELS = {
    "momlstm_unbind_bf": (UnbindMomentumLSTM, (14, 17), tokens_bf, ["x"], ["y", "h"],
                          {"x": BT, "y": BT, "h": {0: "B"}}, None),
    "gru_unbind_param": (UnbindParamGRU, (13,), tokens, ["x"], ["hs", "h"],
                         {"x": TB, "hs": TB, "h": {0: "B"}}, None),
    "momrnn_index_cat": (IndexCatMomentumRNN, (17,), tokens_bf, ["x"], ["y"], {"x": BT, "y": BT}, None),
    "naglstm_restart_if": (NAGLSTMRestartIf, (13, 14), tokens_bf, ["x"], ["y", "h"],
                           {"x": BT, "y": BT, "h": {0: "B"}}, None),
    "gru_mask_lengths": (MaskedGRU, (17,), with_lengths, ["x", "lengths"], ["h"],
                         {"x": TB, "lengths": {0: "B"}, "h": {0: "B"}}, None),
    "rnn_restart_zero_if": (RestartZeroRNN, (13, 17), tokens, ["x"], ["ys", "h"],
                            {"x": TB, "ys": TB, "h": {0: "B"}}, None),
    "adamlstm_split_keep": (SplitAdamLSTM, (14,), tokens_bf, ["x"], ["h"], {"x": BT, "h": {0: "B"}}, None),
    "rnn_enumerate_if": (EnumerateRNN, (17,), tokens_bf, ["x"], ["y"], {"x": BT, "y": BT}, None),
    "momrnn_zip_mask": (ZipMaskRNN, (14,), with_mask, ["x", "mask"], ["h"],
                        {"x": TB, "mask": TB, "h": {0: "B"}}, None),
    "gru_first_step_if": (FirstStepIfGRU, (13,), tokens, ["x"], ["h"], {"x": TB, "h": {0: "B"}}, None),
    "rnn_big_counter": (BigCounterRNN, (17,), tokens, ["x"], ["h"], {"x": TB, "h": {0: "B"}}, None),
    "lstm_next_step_range": (NextStepLSTM, (13, 17), tokens, ["x"], ["preds"], {"x": TB, "preds": TB}, None),
    "gru_start_token_cat": (StartTokenGRU, (14, 17), tokens_bf, ["y"], ["h"], {"y": BT, "h": {0: "B"}}, None),
    "rnn_unbind_break": (BreakRNN, (14,), tokens, ["x"], ["h"], {"x": TB, "h": {0: "B"}}, None),
}

# models whose steps tests/api/test_break_step.c streams (CASE/stream/)
STREAM = ("rnn_unbind_break",)


# ---- writing -------------------------------------------------------------------------

def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def outputs_of(module, ins):
    with torch.no_grad():
        y = module(*[torch.from_numpy(a) for a in ins])
    return [t.numpy() for t in (y if isinstance(y, tuple) else (y,))]


def make_case(outdir, name, opset, seed):
    cls, _, gen_in, in_names, out_names, dyn, expect = MODELS[name]
    torch.manual_seed(seed)
    eager = cls().eval()
    scripted = torch.jit.script(eager)
    rng = np.random.default_rng(seed)
    data = [gen_in(T, B, rng) for T, B in SETS]
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(scripted, tuple(torch.from_numpy(a) for a in data[0]), f, opset_version=opset,
                          input_names=in_names, output_names=out_names, dynamic_axes=dyn)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Loop") == 1, "%s: expected one Loop, got %s" % (name, ops)
    d = os.path.join(outdir, "%s_opset%d" % (name, opset))
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, ins in enumerate(data if not expect else data[:1]):
        want = outputs_of(scripted, ins)
        for a, b in zip(want, outputs_of(eager, ins)):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6), "%s: scripted and eager runs disagree" % name
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        for j, (n, a) in enumerate(zip(in_names, ins)):
            write_pb(os.path.join(ds, "input_%d.pb" % j), a, n)
        for j, (n, a) in enumerate(zip(out_names, want)):
            write_pb(os.path.join(ds, "output_%d.pb" % j), a, n)
    if name in STREAM:
        # every prefix of data set 1 for tests/api/test_break_step.c: the
        # scripted module's h on x[:t + 1], the same from the step the
        # loop breaks at on
        x = data[1][0]
        prefix = np.stack([outputs_of(scripted, [x[:t + 1]])[0] for t in range(x.shape[0])])
        brk = [t for t in range(1, x.shape[0]) if np.array_equal(prefix[t], prefix[t - 1])]
        assert brk and not np.array_equal(prefix[brk[0] - 1], prefix[brk[0] - 2]), \
            "%s: data set 1 does not break mid-sequence" % name
        sd = os.path.join(d, "stream")
        os.makedirs(sd)
        x.astype("<f4").tofile(os.path.join(sd, "x.bin"))
        prefix.astype("<f4").tofile(os.path.join(sd, "prefix.bin"))
        with open(os.path.join(sd, "dims.txt"), "w") as fh:
            fh.write("%d %d %d %d %d\n" % (x.shape[0], x.shape[1], x.shape[2], prefix.shape[2], brk[0]))
    case = {"model": name, "opset": opset, "style": (cls.__doc__ or "").split("\n")[0].strip(),
            "loop_ops": sorted(set(o for o in ops if o not in ("Constant",))),
            "expect": "error" if expect else "ok"}
    if expect:
        case["error"] = expect
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1)
    return d


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_script_wild.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    n = 0
    for k, (name, spec) in enumerate(sorted(MODELS.items())):
        for opset in spec[1]:
            d = make_case(out, name, opset, 5100 + 10 * k + opset)
            print("  %s" % d)
            n += 1
    print("gen_script_wild: %d cases in %s" % (n, out))


if __name__ == "__main__":
    main()
