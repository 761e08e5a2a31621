"""gen_size_if.py: If nodes decided by a size known only at run time, written
the way people write them in scripted modules (issue 45 point 3), for the
harness group size_if.

Each model is its own class and compares a run-time size with a constant in
Python (`if y.shape[-1] == 1:`, `if x.size(1) < 16:`, `if x.size(1) > 20:`,
`if x.size(1) > 1:`); torch.jit.script keeps the comparison, so the export
has an If whose condition is Shape arithmetic.  What cellc must make of it:
  - squeeze_if_cell: Silero VAD v5's form.  A strided Conv1d makes the
    length floor(L / 8); `if y.shape[-1] == 1: y = y.squeeze(-1)` feeds an
    LSTM cell written with two Linears.  Only the then branch fits the cell
    (the else branch's product would need the length to be 6), so the
    model compiles for floor(L / 8) == 1, recorded and checked per call;
  - pad_if_short: `if x.size(1) < 16: x = F.pad(...)`: the branches differ
    in shape and only the else branch's condition (L >= 16) is a size cellc
    records, so the model compiles for L >= 16; the `outside` data set
    (L = 10, the pad branch in PyTorch) must then fail `cellc verify`,
    naming the least value, instead of passing or computing garbage;
  - trim_if_long: `if x.size(1) > 20: x = x[:, :20]`: the then branch,
    L >= 21; `outside` at L = 12;
  - mean_if_long: `if x.size(1) > 1: h = x.mean(1) else: h = x[:, 0]`: the
    branches agree in shape, so both are computed and selected at run time:
    one build for every length, T = 1 and T = 5, with nothing recorded.
Layout:
  CASE/model.onnx
  CASE/test_data_set_0/, test_data_set_1/   two sizes of every dynamic axis
  CASE/outside/test_data_set_0/             (where given) a size the model
                                            was not compiled for
  CASE/case.json    model, style, info (strings `cellc info` prints), warn
                    (what `cellc compile` warns, "" for nothing),
                    outside_error (what `cellc verify --data CASE/outside`
                    must say when it fails)
Goldens come from the scripted module (eval mode, no_grad), checked against
an eager run of the same class; weights from torch.manual_seed, inputs from
a numpy seed per case.

usage: gen_size_if.py OUTDIR
"""
import io
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch import nn

warnings.filterwarnings("ignore")


class SqueezeIfCell(nn.Module):
    """strided Conv1d front end, `if y.shape[-1] == 1: y = y.squeeze(-1)`, an LSTM cell of two Linears"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 6, 8, stride=8)
        self.ih = nn.Linear(6, 20)
        self.hh = nn.Linear(5, 20)
        self.head = nn.Linear(5, 1)

    def forward(self, x, h, c):
        y = torch.relu(self.conv(x.unsqueeze(1)))
        if y.shape[-1] == 1:
            y = y.squeeze(-1)
        i, f, g, o = (self.ih(y) + self.hh(h)).chunk(4, 1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h2 = torch.sigmoid(o) * torch.tanh(c2)
        return torch.sigmoid(self.head(h2)), h2, c2


class PadIfShort(nn.Module):
    """`if x.size(1) < 16:` zero-pads a short signal to 16 samples, then a per-sample projection and a mean"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(1, 4)

    def forward(self, x):
        if x.size(1) < 16:
            x = F.pad(x, (0, 16 - x.size(1)))
        return torch.tanh(self.lin(x.unsqueeze(-1))).mean(1)


class TrimIfLong(nn.Module):
    """`if x.size(1) > 20:` keeps the first 20 frames, then a GRU-like gate over the mean"""

    def __init__(self):
        super().__init__()
        self.z = nn.Linear(3, 6)
        self.n = nn.Linear(3, 6)

    def forward(self, x):
        if x.size(1) > 20:
            x = x[:, :20]
        m = x.mean(1)
        return torch.sigmoid(self.z(m)) * torch.tanh(self.n(m))


class MeanIfLong(nn.Module):
    """`if x.size(1) > 1:` averages over time, else takes the only frame: branches of one shape"""

    def __init__(self):
        super().__init__()
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        if x.size(1) > 1:
            h = x.mean(1)
        else:
            h = x[:, 0]
        return self.out(torch.relu(h))


def cell_inputs(B, L, rng):
    return [rng.standard_normal((B, L)).astype(np.float32), (rng.standard_normal((B, 5)) * 0.5).astype(np.float32),
            (rng.standard_normal((B, 5)) * 0.5).astype(np.float32)]


def signal(B, L, rng):
    return [rng.standard_normal((B, L)).astype(np.float32)]


def frames(C):
    return lambda B, T, rng: [rng.standard_normal((B, T, C)).astype(np.float32)]


# name -> (class, inputs(B, L, rng), input names, output names, dynamic axes, sizes (B, L) of the two sets,
#          the outside set's sizes or None, info strings, compile warning, outside error)
MODELS = {
    "squeeze_if_cell": (SqueezeIfCell, cell_inputs, ["x", "h", "c"], ["p", "hn", "cn"],
                        {"x": {0: "B", 1: "L"}, "h": {0: "B"}, "c": {0: "B"}}, [(2, 12), (3, 9)], None,
                        ["L_div8 (= floor(L / 8), must be 1)", "L_div8 must be 1: required by node",
                         "If takes its then branch, which is for L_div8 == 1"],
                        "size 'L_div8' = floor(L / 8) must be 1", None),
    "pad_if_short": (PadIfShort, signal, ["x"], ["y"], {"x": {0: "B", 1: "L"}}, [(2, 16), (3, 23)], (2, 10),
                     ["L must be at least 16: required by node", "If takes its else branch, which is for L >= 16"],
                     "size 'L' must be at least 16", "least value"),
    "trim_if_long": (TrimIfLong, frames(3), ["x"], ["y"], {"x": {0: "B", 1: "T"}}, [(2, 24), (1, 31)], (2, 12),
                     ["T must be at least 21: required by node", "If takes its then branch, which is for T >= 21"],
                     "size 'T' must be at least 21", "least value"),
    "mean_if_long": (MeanIfLong, frames(4), ["x"], ["y"], {"x": {0: "B", 1: "T"}}, [(2, 1), (3, 5)], None,
                     ["symbols:   B, T\n"], "", None),
}


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        # (np.ascontiguousarray would make a 0-d array 1-d: copy it instead)
        f.write(numpy_helper.from_array(np.array(arr, copy=True, order="C"), name).SerializeToString())


def outputs_of(module, ins):
    with torch.no_grad():
        y = module(*[torch.from_numpy(a) for a in ins])
    return [t.numpy() for t in (y if isinstance(y, tuple) else (y,))]


def write_set(ds, in_names, ins, out_names, outs):
    os.makedirs(ds)
    for j, (n, a) in enumerate(zip(in_names, ins)):
        write_pb(os.path.join(ds, "input_%d.pb" % j), a, n)
    for j, (n, a) in enumerate(zip(out_names, outs)):
        write_pb(os.path.join(ds, "output_%d.pb" % j), a, n)


def make_case(outdir, name, seed):
    cls, gen_in, in_names, out_names, dyn, sets, outside, info, warn, outside_error = MODELS[name]
    torch.manual_seed(seed)
    eager = cls().eval()
    scripted = torch.jit.script(eager)
    rng = np.random.default_rng(seed)
    data = [gen_in(B, L, rng) for B, L in sets]
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(scripted, tuple(torch.from_numpy(a) for a in data[0]), f, opset_version=14,
                          input_names=in_names, output_names=out_names, dynamic_axes=dyn)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("If") == 1, "%s: expected one If, got %s" % (name, ops)
    d = os.path.join(outdir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, ins in enumerate(data + ([gen_in(outside[0], outside[1], rng)] if outside else [])):
        want = outputs_of(scripted, ins)
        for a, b in zip(want, outputs_of(eager, ins)):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6), "%s: scripted and eager runs disagree" % name
        ds = os.path.join(d, "outside", "test_data_set_0") if k == len(data) else \
            os.path.join(d, "test_data_set_%d" % k)
        write_set(ds, in_names, ins, out_names, want)
    case = {"model": name, "style": (cls.__doc__ or "").strip(), "info": info, "warn": warn}
    if outside:
        case["outside_error"] = outside_error
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1)
    return d


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_size_if.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for k, name in enumerate(sorted(MODELS)):
        print("  %s" % make_case(out, name, 7300 + 10 * k))
    print("gen_size_if: %d cases in %s" % (len(MODELS), out))


if __name__ == "__main__":
    main()
