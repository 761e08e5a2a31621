"""gen_data_if.py: If nodes decided by the data at run time (issue 45 point
3), written the way people write them in scripted modules, for the harness
group data_if.

Each model is its own class, in its own author's style; torch.jit.script
keeps the Python `if`, so the export has an If at the top level whose
condition is computed from an input's values.  cellc compiles it as a C
branch: the nodes only one branch needs run only when it is taken
(pass_branch.c), the outputs selected after.
  - wake_cascade: an openWakeWord-like two-stage detector.  A GRU scores
    every chunk; `if bool(p.max() > 0.5):` an LSTM verifier runs over the
    same frames, else the score is zeros.  Batch-first frames [B, T, 8];
  - flag_switch: a bool flag input (`if bool(use_fine):`) chooses between a
    two-layer and a one-layer head; the flag is data, not a constant;
  - energy_gate: a VAD-like gate over a chunk [B, L] carrying a GRU cell's
    state h: `if energy > thr:` a strided Conv1d and the cell update, else
    the state passes through unchanged and the probability is zero (one
    branch's output is a graph input itself);
  - elif_chain: `if m > 0.3: ... elif m < -0.3: ... else: ...` on the
    mean of the input: an If inside the else branch of another.
Layout:
  CASE/model.onnx
  CASE/test_data_set_K/   two sizes of every dynamic axis, each with data
                          that takes every branch (found by seeded search;
                          the generator fails if a branch is never taken)
  CASE/case.json          model, style, branches (the data sets' branch
                          numbers), info (strings `cellc info` prints)
  wake_cascade/stream/    for tests/api/test_branch_step.c: x.bin [B, T, 8]
                          and prefix.bin [T, B, 1], PyTorch's score on
                          x[:, :t + 1] for every t (the verifier's branch
                          taken at some steps and not at others), dims.txt
Goldens come from the scripted module (eval mode, no_grad), checked against
an eager run of the same class; weights from torch.manual_seed, inputs from
a numpy seed per case.

usage: gen_data_if.py OUTDIR
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
from torch import nn

from gen_size_if import write_set

warnings.filterwarnings("ignore")


class WakeCascade(nn.Module):
    """GRU detector, `if bool(p.max() > 0.5):` an LSTM verifier over the same frames, else zeros"""

    def __init__(self):
        super().__init__()
        self.det = nn.GRU(8, 16, batch_first=True)
        self.det_head = nn.Linear(16, 1)
        self.verify = nn.LSTM(8, 24, batch_first=True)
        self.verify_head = nn.Linear(24, 1)

    def forward(self, frames):
        h, hn = self.det(frames)
        p = torch.sigmoid(self.det_head(h[:, -1]))
        if bool(p.max() > 0.5):
            y, st = self.verify(frames)
            score = torch.sigmoid(self.verify_head(y[:, -1])) * p
        else:
            score = torch.zeros_like(p)
        return score

    def branch(self, frames):
        h, _ = self.det(frames)
        return int(torch.sigmoid(self.det_head(h[:, -1])).max() > 0.5)


class FlagSwitch(nn.Module):
    """a bool flag input picks a two-layer or a one-layer head"""

    def __init__(self):
        super().__init__()
        self.fine1 = nn.Linear(6, 12)
        self.fine2 = nn.Linear(12, 3)
        self.coarse = nn.Linear(6, 3)

    def forward(self, x, use_fine):
        if bool(use_fine):
            out = self.fine2(torch.tanh(self.fine1(x)))
        else:
            out = self.coarse(x)
        return out

    def branch(self, x, use_fine):
        return int(bool(use_fine))


class EnergyGate(nn.Module):
    """`if energy > thr:` a strided Conv1d and a hand-written GRU cell update, else the state passes through"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 4, stride=4)
        self.x2g = nn.Linear(4, 30)
        self.h2g = nn.Linear(10, 30)
        self.out = nn.Linear(10, 1)
        self.thr = 1.0

    def forward(self, chunk, h):
        energy = (chunk * chunk).mean()
        if energy > self.thr:
            f = torch.relu(self.conv(chunk.unsqueeze(1))).mean(2)
            xr, xz, xn = self.x2g(f).chunk(3, 1)
            hr, hz, hn = self.h2g(h).chunk(3, 1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            h_new = (1 - z) * n + z * h
            prob = torch.sigmoid(self.out(h_new))
        else:
            h_new = h
            prob = torch.zeros(h.size(0), 1)
        return prob, h_new

    def branch(self, chunk, h):
        return int(float((chunk * chunk).mean()) > self.thr)


class ElifChain(nn.Module):
    """`if m > 0.3: ... elif m < -0.3: ... else: ...` on the input's mean"""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(5, 5)
        self.down = nn.Linear(5, 5)

    def forward(self, x):
        m = x.mean()
        if m > 0.3:
            y = torch.relu(self.up(x))
        elif m < -0.3:
            y = torch.sigmoid(self.down(x))
        else:
            y = x * 0.5
        return y

    def branch(self, x):
        m = float(x.mean())
        return 2 if m > 0.3 else 1 if m < -0.3 else 0


def frames(B, T, rng):
    return [(rng.standard_normal((B, T, 8)) * rng.uniform(0.2, 3.0)).astype(np.float32)]


def flag_inputs(B, T, rng):
    return [rng.standard_normal((B, T, 6)).astype(np.float32), np.array(rng.integers(0, 2) == 1)]


def chunk_state(B, L, rng):
    return [(rng.standard_normal((B, L)) * rng.uniform(0.5, 1.5)).astype(np.float32),
            (rng.standard_normal((B, 10)) * 0.5).astype(np.float32)]


def shifted(B, T, rng):
    return [(rng.standard_normal((B, T, 5)) * 0.3 + rng.uniform(-0.8, 0.8)).astype(np.float32)]


# name -> (class, inputs(B, T, rng), input names, output names, dynamic axes, sizes (B, T) of the sets,
#          number of branches, info strings)
MODELS = {
    "wake_cascade": (WakeCascade, frames, ["frames"], ["score"], {"frames": {0: "B", 1: "T"}}, [(1, 12), (3, 7)],
                     2, ["run-time branches (1):", "a C branch;"]),
    "flag_switch": (FlagSwitch, flag_inputs, ["x", "use_fine"], ["out"], {"x": {0: "B", 1: "T"}},
                    [(2, 4), (1, 9)], 2, ["run-time branches (1):", "a C branch;"]),
    "energy_gate": (EnergyGate, chunk_state, ["chunk", "h"], ["prob", "h_new"], {"chunk": {0: "B", 1: "L"},
                    "h": {0: "B"}}, [(2, 16), (1, 24)], 2, ["run-time branches (1):", "a C branch;"]),
    "elif_chain": (ElifChain, shifted, ["x"], ["y"], {"x": {0: "B", 1: "T"}}, [(2, 3), (4, 6)], 3,
                   ["run-time branches (", "a C branch;"]),
}


def outputs_of(module, ins):
    with torch.no_grad():
        y = module(*[torch.from_numpy(np.array(a)) for a in ins])
    return [t.numpy() for t in (y if isinstance(y, tuple) else (y,))]


def inputs_taking(eager, gen_in, B, T, rng, nbranch, name):
    """One input per branch at sizes (B, T), found by a seeded search."""
    found = {}
    for _ in range(400):
        ins = gen_in(B, T, rng)
        with torch.no_grad():
            k = eager.branch(*[torch.from_numpy(np.array(a)) for a in ins])
        found.setdefault(k, ins)
        if len(found) == nbranch:
            return [found[k] for k in sorted(found)], sorted(found)
    raise SystemExit("gen_data_if.py: %s: no data take every branch at B=%d T=%d (found %s)" %
                     (name, B, T, sorted(found)))


def write_stream(d, eager, scripted):
    """wake_cascade/stream: frames whose detector crosses 0.5 partway, and
    PyTorch's score on every prefix."""
    rng = np.random.default_rng(7)
    B, T = 2, 10
    for _ in range(2000):
        x = (rng.standard_normal((B, T, 8)) * rng.uniform(0.5, 3.0)).astype(np.float32)
        taken = []
        for t in range(T):
            with torch.no_grad():
                taken.append(eager.branch(torch.from_numpy(x[:, :t + 1])))
        # the verifier skipped at some step, then taken later: a stale state would show
        if 0 in taken and 1 in taken[taken.index(0):]:
            break
    else:
        raise SystemExit("gen_data_if.py: wake_cascade: no stream takes the verifier after skipping it")
    pre = np.stack([outputs_of(scripted, [x[:, :t + 1]])[0] for t in range(T)]).astype(np.float32)
    s = os.path.join(d, "stream")
    os.makedirs(s)
    x.tofile(os.path.join(s, "x.bin"))
    pre.tofile(os.path.join(s, "prefix.bin"))
    with open(os.path.join(s, "dims.txt"), "w") as f:
        f.write("%d %d %s\n" % (B, T, "".join(map(str, taken))))


def make_case(outdir, name, seed):
    cls, gen_in, in_names, out_names, dyn, sets, nbranch, info = MODELS[name]
    torch.manual_seed(seed)
    eager = cls().eval()
    scripted = torch.jit.script(eager)
    rng = np.random.default_rng(seed)
    data, branches = [], []
    for B, T in sets:
        ins, ks = inputs_taking(eager, gen_in, B, T, rng, nbranch, name)
        data += ins
        branches += ks
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(scripted, tuple(torch.from_numpy(np.array(a)) for a in data[0]), f, opset_version=14,
                          input_names=in_names, output_names=out_names, dynamic_axes=dyn)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert "If" in ops, "%s: expected an If, got %s" % (name, ops)
    d = os.path.join(outdir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, ins in enumerate(data):
        want = outputs_of(scripted, ins)
        for a, b in zip(want, outputs_of(eager, ins)):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6), "%s: scripted and eager runs disagree" % name
        write_set(os.path.join(d, "test_data_set_%d" % k), in_names, ins, out_names, want)
    if name == "wake_cascade":
        write_stream(d, eager, scripted)
    case = {"model": name, "style": (cls.__doc__ or "").strip(), "branches": branches, "info": info}
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, indent=1)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for k, name in enumerate(sorted(MODELS)):
        make_case(out, name, 3100 + 10 * k)
        print("  %s" % name)
    print("gen_data_if: %d cases in %s" % (len(MODELS), out))


if __name__ == "__main__":
    main()
