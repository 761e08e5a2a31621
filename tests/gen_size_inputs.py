"""gen_size_inputs.py: loops whose trip count is a value the caller passes
(issue 45 point 3), and a Range to such a value, written the way people
script them, for the harness group size_inputs.

A scripted `for _ in range(...)` over a tensor or `int` argument exports as
a Loop whose trip count M is computed from a graph input (int64, one
element).  cellc makes that input a size: the symbol of its name, which the
scan outputs' shapes and the recurrence's step count are expressions of.
Each model is its own class, in its own author's style:
  - greedy_feedback: a decoder that feeds its own output back as the next
    input, `for i in range(int(n))`, a list of outputs stacked on axis 0
    (y: [n, B, 4]);
  - refine_twice: `max_len: int` typed argument, `range(max_len * 2)`, only
    the final state returned (no output has the count in its shape);
  - ticks_plus_one: `range(int(steps) + 1)`, outputs unsqueezed and
    concatenated batch-first (y: [B, steps + 1, 6]);
  - sinusoid_positions: no loop: `torch.arange(int(length))` (a Range whose
    limit is the input), sin and cos of a learned frequency (pe: [length,
    16]);
  - token_decoder: a greedy decoder: an embedding lookup of the token it
    fed back, a GRU-like update written out, argmax of the logits; the
    tokens (int64 [max_len, B], stacked as float parts inside the loop) and
    the logits are scan outputs;
  - eos_decoder: greedy decoding that stops once every row has produced the
    end token: `for _ in range(int(max_len))` with a `break` (M the
    largest int64, the condition `i + 1 < max_len and not done`), a bool
    flag per row carried; tokens [steps run, B];
  - eos_batch_first: the same decoder returning `torch.stack(toks, 1)`:
    the data-dependent axis moved by a Transpose (tokens [B, steps run]);
  - last_token: a decoder that also returns `toks[-1]` (a
    Gather of the run's last row) and `len(toks)` (a count of the steps
    carried), a per-row bool flag its first carried
    value (a stacked output's rows are its own, not the first state's);
  - until_stop: `while i < n and not stop:` (no M, a counter carried),
    stopping on the first row's prediction; ys [steps run, B, 3];
  - int32_count (written with onnx.helper, numpy goldens): a converter's
    loop whose count is an int32 input, Cast to int64 for M; n * 2 in int32
    an output;
  - future_predictor: a time-series predictor's `future` steps (`future:
    int`), an LSTM cell written with chunk(4, 1), its output fed back and
    the outputs concatenated on axis 1 (pred: [B, future]).
Layout:
  CASE/model.onnx
  CASE/test_data_set_0/, test_data_set_1/   two values of the count (and two
                                            batch sizes where the batch is
                                            dynamic)
  CASE/zero/test_data_set_0/                (where PyTorch runs it) the count
                                            0, no step, which cellc refuses at
                                            run time (every size is at least 1)
  CASE/api_x.bin, api_y.bin                 data set 0's first input and first
                                            output as raw float32, for the C
                                            API test tests/api/test_size_input.c
  CASE/case.json    model, style, info (strings `cellc info` prints)
For the loops that may end early (EARLY), data set 0 ends before the count
and data set 1 runs all of it, which the generator asserts.
Goldens come from the scripted module (eval mode, no_grad), checked against
an eager run of the same class; weights from torch.manual_seed, inputs from
a numpy seed per case.

usage: gen_size_inputs.py OUTDIR
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

from gen_size_if import write_set   # the data set layout of the backend tests

warnings.filterwarnings("ignore")


class GreedyFeedback(nn.Module):
    """feeds its own output back, for i in range(int(n)), torch.stack of the outputs"""

    def __init__(self):
        super().__init__()
        self.ih = nn.Linear(4, 8)
        self.hh = nn.Linear(8, 8)
        self.out = nn.Linear(8, 4)

    def forward(self, x, n):
        h = torch.zeros(x.size(0), 8)
        ys = []
        for i in range(int(n)):
            h = torch.tanh(self.ih(x) + self.hh(h))
            x = torch.tanh(self.out(h))
            ys.append(x)
        return torch.stack(ys, 0)


class RefineTwice(nn.Module):
    """max_len: int argument, range(max_len * 2), the final state only"""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x, max_len: int):
        h = torch.zeros_like(x)
        for _ in range(max_len * 2):
            h = torch.tanh(self.lin(h) + x)
        return h


class TicksPlusOne(nn.Module):
    """range(int(steps) + 1), outputs unsqueezed and concatenated batch-first"""

    def __init__(self):
        super().__init__()
        self.w = nn.Linear(6, 6, bias=False)

    def forward(self, x, steps):
        h = x
        outs = []
        for _ in range(int(steps) + 1):
            h = torch.sigmoid(self.w(h)) * h + x
            outs.append(h.unsqueeze(1))
        return torch.cat(outs, 1)


class FuturePredictor(nn.Module):
    """time-series predictor's `future` steps: an LSTM cell written with chunk(4, 1), its output fed back"""

    def __init__(self):
        super().__init__()
        self.gates = nn.Linear(1 + 12, 48)
        self.proj = nn.Linear(12, 1)

    def forward(self, last, future: int):
        h = torch.zeros(last.size(0), 12)
        c = torch.zeros(last.size(0), 12)
        outputs = []
        out = last
        for _ in range(future):
            i, f, g, o = self.gates(torch.cat((out, h), 1)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            out = self.proj(h)
            outputs += [out]
        return torch.cat(outputs, dim=1)


class SinusoidPositions(nn.Module):
    """positional encoding made on the fly: torch.arange(int(length)), sin and cos of a learned frequency"""

    def __init__(self):
        super().__init__()
        self.freq = nn.Parameter(torch.rand(1, 8))

    def forward(self, x, length):
        pos = torch.arange(int(length)).to(torch.float32)
        ang = pos.unsqueeze(1) * self.freq + x
        return torch.cat([torch.sin(ang), torch.cos(ang)], 1)


class TokenDecoder(nn.Module):
    """greedy decoding: an embedding of the token fed back, a GRU-like update written out, argmax of the logits"""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 5)
        self.zr = nn.Linear(5 + 8, 16)
        self.cand = nn.Linear(5 + 8, 8)
        self.head = nn.Linear(8, 10)

    def forward(self, h, max_len):
        tok = torch.zeros(h.size(0), dtype=torch.long)
        toks = []
        logits = []
        for _ in range(int(max_len)):
            e = self.emb(tok)
            zr = torch.sigmoid(self.zr(torch.cat([e, h], 1)))
            z, r = zr.chunk(2, 1)
            c = torch.tanh(self.cand(torch.cat([e, r * h], 1)))
            h = (1 - z) * h + z * c
            lg = self.head(h)
            tok = lg.argmax(1)
            toks.append(tok)
            logits.append(lg)
        return torch.stack(toks, 0), torch.stack(logits, 0)


class EosDecoder(nn.Module):
    """greedy decoding until every row has produced the end token 2 (or max_len): `for _ in range(int(max_len))`
    with a `break`, a done flag per row carried, an Elman step written with Linear layers"""
    STEPS_AXIS = 0      # where torch.stack puts the steps

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.ih = nn.Linear(4, 8)
        self.hh = nn.Linear(8, 8, bias=False)
        self.head = nn.Linear(8, 6)
        self.steps_axis = self.STEPS_AXIS
        with torch.no_grad():
            self.head.bias[2] -= 0.05    # the end token within a few steps for some inputs, not all

    def forward(self, h, max_len):
        tok = torch.zeros(h.size(0), dtype=torch.long)
        done = torch.zeros(h.size(0), dtype=torch.bool)
        toks = []
        for _ in range(int(max_len)):
            h = torch.tanh(self.ih(self.emb(tok)) + self.hh(h))
            tok = self.head(h).argmax(1)
            toks.append(tok)
            done = done | (tok == 2)
            if bool(done.all()):
                break
        return torch.stack(toks, self.steps_axis), h


class EosBatchFirst(EosDecoder):
    """the same decoder as another author returns it: the tokens batch-first, `torch.stack(toks, 1)`"""
    STEPS_AXIS = 1


class LastTokenDecoder(nn.Module):
    """greedy decoding that also returns the last token, `toks[-1]`, and the steps run, `len(toks)`; it stops
    once every row has produced the
    end token 3; an Elman step over torch.cat([embedding, h], 1); a per-row `finished` flag is the first value the
    loop carries"""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.step = nn.Linear(4 + 8, 8)
        self.out = nn.Linear(8, 6)

    def forward(self, h, max_len):
        finished = torch.zeros(h.size(0), dtype=torch.bool)
        tok = torch.zeros(h.size(0), dtype=torch.long)
        toks = []
        for _ in range(int(max_len)):
            h = torch.tanh(self.step(torch.cat([self.emb(tok), h], 1)))
            tok = self.out(h).argmax(-1)
            finished = finished | (tok == 3)
            toks.append(tok)
            if bool(finished.all()):
                break
        return torch.stack(toks), toks[-1], len(toks)


class UntilStop(nn.Module):
    """a `while` loop, `while i < n and not stop`, that stops when the first row's prediction turns negative; the
    predictions fed back, stacked batch-first at the end"""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(3 + 6, 6)
        self.read = nn.Linear(6, 3)

    def forward(self, x, max_len):
        n = int(max_len)
        h = torch.zeros(x.size(0), 6)
        y = x
        i = 0
        stop = False
        outs = []
        while i < n and not stop:
            h = torch.tanh(self.cell(torch.cat([y, h], 1)))
            y = self.read(h)
            outs.append(y)
            stop = bool(y[0, 0] < -0.32)
            i += 1
        return torch.stack(outs, 0), h


def count(n):
    return np.array(n, dtype=np.int64)


# name -> (class, inputs(B, n, rng), input names, output names, dynamic axes, (B, n) of the two sets,
#          whether the count is a python int (exported with a plain int), info strings)
MODELS = {
    "greedy_feedback": (GreedyFeedback, lambda B, n, rng: [rng.standard_normal((B, 4)).astype(np.float32), count(n)],
                        ["x", "n"], ["y"], {"x": {0: "B"}, "y": {0: "T", 1: "B"}}, [(2, 5), (3, 2)], False,
                        ["n (the value of input 'n')", "y                        f32[n, B, 4]",
                         "recurrence over T=n steps",
                         "streaming: no (the recurrence runs as many steps as input 'n' says)"]),
    "refine_twice": (RefineTwice, lambda B, n, rng: [rng.standard_normal((B, 6)).astype(np.float32), count(n)],
                     ["x", "max_len"], ["h"], {"x": {0: "B"}, "h": {0: "B"}}, [(2, 3), (1, 1)], True,
                     ["max_len (the value of input 'max_len')", "recurrence over T=2*max_len steps"]),
    "ticks_plus_one": (TicksPlusOne, lambda B, n, rng: [rng.standard_normal((B, 6)).astype(np.float32), count(n)],
                       ["x", "steps"], ["y"], {"x": {0: "B"}, "y": {0: "B", 1: "T"}}, [(2, 4), (3, 1)], False,
                       ["steps_plus_1 (= steps + 1)", "f32[B, steps_plus_1, 6]"]),
    "sinusoid_positions": (SinusoidPositions, lambda B, n, rng: [rng.standard_normal((1, 8)).astype(np.float32),
                                                                   count(n)],
                           ["x", "length"], ["pe"], {"pe": {0: "T"}}, [(1, 9), (1, 3)], False,
                           ["length (the value of input 'length')", "f32[length, 16]"]),
    "token_decoder": (TokenDecoder, lambda B, n, rng: [(rng.standard_normal((B, 8)) * 2).astype(np.float32),
                                                       count(n)],
                      ["h", "max_len"], ["tokens", "logits"], {"h": {0: "B"}, "tokens": {1: "B"},
                                                               "logits": {1: "B"}}, [(3, 9), (2, 4)], False,
                      ["max_len (the value of input 'max_len')", "i64[max_len, B]", "f32[max_len, B, 10]"]),
    "future_predictor": (FuturePredictor, lambda B, n, rng: [rng.standard_normal((B, 1)).astype(np.float32), count(n)],
                         ["last", "future"], ["pred"], {"last": {0: "B"}, "pred": {0: "B", 1: "T"}}, [(3, 7), (2, 4)],
                         True, ["future (the value of input 'future')", "f32[B, future]"]),
    "eos_decoder": (EosDecoder, lambda B, n, rng: [(rng.standard_normal((B, 8)) * 2).astype(np.float32), count(n)],
                    ["h", "max_len"], ["tokens", "hn"], {"h": {0: "B"}, "tokens": {1: "B"}, "hn": {0: "B"}},
                    [(3, 12), (2, 3)], False,
                    ["tokens                   i64[max_len, B]  (axis 0 data-dependent, at most max_len)",
                     "stops when its condition is false (at most max_len steps)"]),
    "eos_batch_first": (EosBatchFirst, lambda B, n, rng: [(rng.standard_normal((B, 8)) * 2).astype(np.float32),
                                                         count(n)],
                        ["h", "max_len"], ["tokens", "hn"], {"h": {0: "B"}, "tokens": {0: "B"}, "hn": {0: "B"}},
                        [(3, 12), (2, 3)], False,
                        ["tokens                   i64[B, max_len]  (axis 1 data-dependent, at most max_len)",
                         "stops when its condition is false (at most max_len steps)"]),
    "last_token": (LastTokenDecoder, lambda B, n, rng: [(rng.standard_normal((B, 8)) * 2).astype(np.float32),
                                                        count(n)],
                   ["h", "max_len"], ["tokens", "last", "steps"], {"h": {0: "B"}, "tokens": {1: "B"}, "last": {0: "B"}},
                   [(3, 12), (2, 4)], False,
                   ["tokens                   i64[max_len, B]  (axis 0 data-dependent, at most max_len)",
                    "last                     i64[B]", "steps                    i64[]"]),
    "until_stop": (UntilStop, lambda B, n, rng: [rng.standard_normal((B, 3)).astype(np.float32), count(n)],
                   ["x", "max_len"], ["ys", "h"], {"x": {0: "B"}, "ys": {1: "B"}, "h": {0: "B"}},
                   [(2, 20), (3, 2)], False,
                   ["ys                       f32[max_len, B, 3]  (axis 0 data-dependent, at most max_len)",
                    "stops when its condition is false (at most max_len steps)"]),
}

# models whose loop may end before the count: data set k ends early (True) or runs all n steps (False)
EARLY = {"eos_decoder": (True, False), "until_stop": (True, False), "eos_batch_first": (True, False),
         "last_token": (True, False)}
# the axis of the stacked steps in output 0 (EARLY's check), where not 0
STEPS_AXIS = {"eos_batch_first": 1}
# cases added after the others, with seeds of their own (the others keep
# theirs: which data set ends early depends on them)
SEEDS = {"eos_batch_first": 7721, "last_token": 7746}


def run(module, ins, as_int):
    args = [torch.from_numpy(a) for a in ins]
    if as_int:
        args[-1] = int(ins[-1])
    with torch.no_grad():
        y = module(*args)
    # (a Python int, such as len(toks), is an int64 scalar of the export)
    return [t.numpy() if torch.is_tensor(t) else np.array(t, dtype=np.int64)
            for t in (y if isinstance(y, tuple) else (y,))]


def make_case(outdir, name, seed):
    cls, gen_in, in_names, out_names, dyn, sets, as_int, info = MODELS[name]
    torch.manual_seed(seed)
    eager = cls().eval()
    scripted = torch.jit.script(eager)
    rng = np.random.default_rng(seed)
    data = [gen_in(B, n, rng) for B, n in sets]
    args = [torch.from_numpy(a) for a in data[0]]
    if as_int:
        args[-1] = int(data[0][-1])
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(scripted, tuple(args), f, opset_version=14, input_names=in_names,
                          output_names=out_names, dynamic_axes=dyn)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Loop") + ops.count("Range") == 1, "%s: expected one Loop or Range, got %s" % (name, ops)
    d = os.path.join(outdir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    zero = gen_in(sets[0][0], 0, rng)
    try:
        run(eager, zero, as_int)
    except RuntimeError:
        zero = None     # torch.stack of no steps: PyTorch itself refuses the count 0
    for k, ins in enumerate(data + ([zero] if zero is not None else [])):
        want = run(scripted, ins, as_int)
        for a, b in zip(want, run(eager, ins, as_int)):
            assert a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6), \
                "%s: scripted and eager runs disagree" % name
        if name in EARLY and k < len(data):
            steps, n = want[0].shape[STEPS_AXIS.get(name, 0)], int(ins[-1])
            assert (steps < n) == EARLY[name][k], "%s: data set %d runs %d of %d steps" % (name, k, steps, n)
        ds = os.path.join(d, "zero", "test_data_set_0") if k == len(data) else \
            os.path.join(d, "test_data_set_%d" % k)
        write_set(ds, in_names, ins, out_names, want)
    # raw float32 of data set 0 for tests/api/test_size_input.c (greedy_feedback)
    data[0][0].astype("<f4").tofile(os.path.join(d, "api_x.bin"))
    run(scripted, data[0], as_int)[0].astype("<f4").tofile(os.path.join(d, "api_y.bin"))
    case = {"model": name, "style": (cls.__doc__ or "").strip(), "info": info}
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1)
    return d


def converted_int32_count(outdir, seed):
    """A converter's loop (tf2onnx writes counts as int32): the int32 input n,
    Cast to int64 for the Loop's M, a state h = tanh(h W + x) scanned, and
    n * 2 computed in int32 as an output.  Written with onnx.helper;
    goldens from numpy in float64, rounded."""
    from onnx import TensorProto as TP, helper as oh, numpy_helper as nh
    rng = np.random.default_rng(seed)
    W = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    F = TP.FLOAT
    body = oh.make_graph(
        [oh.make_node("MatMul", ["h_in", "W"], ["hw"]), oh.make_node("Add", ["hw", "x"], ["pre"]),
         oh.make_node("Tanh", ["pre"], ["h_out"]), oh.make_node("Identity", ["cond_in"], ["cond_out"]),
         oh.make_node("Identity", ["h_out"], ["scan"])], "step",
        [oh.make_tensor_value_info("i", TP.INT64, []), oh.make_tensor_value_info("cond_in", TP.BOOL, []),
         oh.make_tensor_value_info("h_in", F, ["B", 4])],
        [oh.make_tensor_value_info("cond_out", TP.BOOL, []), oh.make_tensor_value_info("h_out", F, ["B", 4]),
         oh.make_tensor_value_info("scan", F, ["B", 4])])
    graph = oh.make_graph(
        [oh.make_node("Cast", ["n"], ["m"], to=TP.INT64),
         oh.make_node("Constant", [], ["go"], value=nh.from_array(np.array(True), "go")),
         oh.make_node("Loop", ["m", "go", "h0"], ["h", "ys"], body=body),
         oh.make_node("Mul", ["n", "two"], ["n2"])], "converted_loop",
        [oh.make_tensor_value_info("x", F, ["B", 4]), oh.make_tensor_value_info("h0", F, ["B", 4]),
         oh.make_tensor_value_info("n", TP.INT32, [])],
        [oh.make_tensor_value_info("h", F, ["B", 4]), oh.make_tensor_value_info("ys", F, ["N", "B", 4]),
         oh.make_tensor_value_info("n2", TP.INT32, [])],
        [nh.from_array(W, "W"), nh.from_array(np.array(2, dtype=np.int32), "two")])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 14)], producer_name="gen_size_inputs")
    onnx.checker.check_model(model)
    name = "int32_count"
    d = os.path.join(outdir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (B, n) in enumerate([(2, 5), (3, 2)]):
        x = rng.standard_normal((B, 4)).astype(np.float32)
        h = rng.standard_normal((B, 4)).astype(np.float32)
        hd, ys = h.astype(np.float64), []
        for _ in range(n):
            hd = np.tanh(hd @ W.astype(np.float64) + x)
            ys.append(hd)
        write_set(os.path.join(d, "test_data_set_%d" % k), ["x", "h0", "n"], [x, h, np.array(n, dtype=np.int32)],
                  ["h", "ys", "n2"], [hd.astype(np.float32), np.stack(ys).astype(np.float32),
                                      np.array(2 * n, dtype=np.int32)])
    case = {"model": name, "style": converted_int32_count.__doc__.split("\n")[0],
            "info": ["n (the value of input 'n')", "n                        i32[]",
                     "ys                       f32[n, B, 4]", "n2                       i32[]"]}
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1)
    return d


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_size_inputs.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for k, name in enumerate(sorted(n for n in MODELS if n not in SEEDS)):
        print("  %s" % make_case(out, name, 7500 + 10 * k))
    for name, seed in SEEDS.items():
        print("  %s" % make_case(out, name, seed))
    print("  %s" % converted_int32_count(out, 7700))
    print("gen_size_inputs: %d cases in %s" % (len(MODELS) + 1, out))


if __name__ == "__main__":
    main()
