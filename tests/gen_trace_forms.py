"""gen_trace_forms.py: traced PyTorch exports of the momentum family
(tests/ref_momentum.py) written in the other styles a Python loop over time
takes (issue 4), in the layout of tests/gen_trace_cases.py (CASE/model.onnx,
CASE/test_data_set_N/{input_0,output_K}.pb from PyTorch, CASE/case.json):

  unbind   for x_t in x.unbind(time): one Split into T unit slices, each
           Squeezed (torch.split(x, 1, time) exports the same at opsets 13
           and 17)
  split    [s.squeeze(time) for s in torch.split(x, 1, time)]
  splitidx [s[0] (s[:, 0]) for s in torch.split(x, 1, time)]: a Gather of
           each unit slice
  reversed for x_t in reversed(x.unbind(time)): a reverse recurrence (the
           stacked outputs in the order the loop ran)
  revlist  reversed and list together, for NAG/SR-LSTM (restart 2: the
           schedule; restart 40 over 8 steps: a per-step table, which the
           reverse recurrence must read in the order the loop ran)
  uneven   x[t], with relu on the odd steps' inputs: the copies differ, so
           cellc leaves the loop unrolled (case.json "expect": "unrolled":
           no recurrence in `cellc info`) and must still compute it right
  lastx2   x[t], the last step's input doubled first: work that only the
           last step does, on its input slice, which a rolled loop would
           consume: unrolled too, and right (T = 8, opsets 13 and 17)
  list     forward returns (head(h_1), .., head(h_T), h_1, .., h_T): 2T
           separate graph outputs (h_T is also the final state), so T is
           fixed by the model's interface
  stack    torch.stack([head(h_t) for each t], time): the head inside the loop
  chunk    x.chunk(T, time): exported through SplitToSequence/Equal/Where;
           with a static time axis the sequence is T slices known at compile
           time (compiler/passes/lower_seq.c) and the trace re-rolls like the others;
           with a dynamic one the chunk size is arithmetic on the time symbol
           (seq - 1), which cellc refuses with a located compile error
Gate chunks are Splits inside the step (the LSTM's chunk(4, 1), the GRU's
chunk(3, 1)) in every form.

Matrix: momentum_lstm and momentum_gru, every form above at
opsets 13 (seq-first, static), 14 (dynamic batch and time axes) and 17
(batch_first), T = 8 and 64; revlist for nag_lstm_r2 at opset 17 and
nag_lstm_r40 at opset 13, T = 8.  At opset 14 unbind/reversed/split/splitidx
export a Split of fixed sizes along the dynamic time axis (split/splitidx
also an If per part on its unit size, decided then), which holds the axis
at the traced length until the loop over its parts is rolled: then the
axis is the export's symbol again, and those cases run any T like the
others.  chunk exports a chunk size computed from the time symbol: those
cases (T = 8 only) must fail with an error naming the node (case.json
"expect": "error").  case.json says, for the others, the expected cell, whether the
time axis is symbolic, and "fixed_outputs" (the list form: 2T outputs).
Data sets: the traced size; T = 50 for T = 8 exports whose time axis
extends; batch 3 for dynamic exports.  Seeds fixed, by position.

usage: gen_trace_forms.py OUTDIR
"""
import json
import multiprocessing
import os
import sys
import time
import warnings

import numpy as np
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_momentum as R  # noqa: E402

warnings.filterwarnings("ignore")

INPUT, HIDDEN, CLASSES, BATCH = 3, 8, 4, 2
FORMS = ("unbind", "split", "splitidx", "list", "stack", "reversed", "uneven")
FORM_MODELS = ("momentum_lstm", "momentum_gru")


class FormNet(R.Net):
    """ref_momentum.Net with the loop written in another style."""

    def __init__(self, form, base, dyn, input_size, hidden, classes, batch_first=False, **opt):
        super().__init__(base, dyn, input_size, hidden, classes, batch_first=batch_first, **opt)
        self.form = form

    def forward(self, x):
        tax = 1 if self.batch_first else 0
        T, B = x.shape[tax], x.shape[1 - tax]
        st = self.cell.init_state(B)
        if self.form == "unbind":
            xs = x.unbind(tax)
        elif self.form == "split":
            xs = [s.squeeze(tax) for s in torch.split(x, 1, tax)]
        elif self.form == "splitidx":
            xs = [s[:, 0] if self.batch_first else s[0] for s in torch.split(x, 1, tax)]
        elif self.form in ("reversed", "revlist"):
            xs = list(reversed(x.unbind(tax)))
        elif self.form == "chunk":
            xs = [s.squeeze(tax) for s in x.chunk(T, tax)]
        else:
            xs = [x[:, t] if self.batch_first else x[t] for t in range(T)]
        hs = []
        for t, xt in enumerate(xs):
            if self.form == "uneven" and t % 2:
                xt = torch.relu(xt)
            if self.form == "lastx2" and t == len(xs) - 1:
                xt = 2 * xt
            st = self.cell(xt, st, t + 1)
            hs.append(st["h"])
        if self.form in ("list", "revlist"):
            return tuple(self.fc(h) for h in hs) + tuple(hs)
        if self.form == "stack":
            return torch.stack([self.fc(h) for h in hs], tax), st["h"]
        return self.fc(torch.stack(hs, tax)), st["h"]


def make_net(form, model, seed, batch_first):
    base, dyn, opt = R.MODELS[model]
    torch.manual_seed(seed)
    net = FormNet(form, base, dyn, INPUT, HIDDEN, CLASSES, batch_first=batch_first, **opt)
    with torch.no_grad():
        for p in net.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    return net.eval()


def write_pb(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def data_set(case_dir, k, net, x, names):
    d = os.path.join(case_dir, "test_data_set_%d" % k)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        ys = net(torch.from_numpy(x))
    write_pb(os.path.join(d, "input_0.pb"), x, "x")
    for i, (y, n) in enumerate(zip(ys, names)):
        write_pb(os.path.join(d, "output_%d.pb" % i), y.numpy(), n)


def make_case(out, name, form, model, opset, T, seed):
    bf = opset == 17
    dynamic = opset == 14
    net = make_net(form, model, seed, bf)
    rng = np.random.default_rng(seed)

    def seq(T_, B_):
        shape = (B_, T_, INPUT) if bf else (T_, B_, INPUT)
        return rng.standard_normal(shape).astype(np.float32)

    case_dir = os.path.join(out, name)
    os.makedirs(case_dir, exist_ok=True)
    x = seq(T, BATCH)
    names = (["y%d" % t for t in range(T)] + ["h%d" % t for t in range(T)] if form in ("list", "revlist")
             else ["y", "h"])
    kw = {}
    if dynamic:
        kw["dynamic_axes"] = {"x": {0: "batch", 1: "seq"} if bf else {0: "seq", 1: "batch"}}
    t0 = time.time()
    torch.onnx.export(net, (torch.from_numpy(x),), os.path.join(case_dir, "model.onnx"),
                      opset_version=opset, input_names=["x"], output_names=names, **kw)
    took = time.time() - t0
    # exports cellc rejects (unsupported operators): the compile must fail
    # naming the node
    error = dynamic and form == "chunk"
    data_set(case_dir, 0, net, x, names)
    fixed = form in ("list", "revlist")
    unrolled = form in ("uneven", "lastx2")
    k = 1
    if not error and not fixed and not unrolled and T == 8:
        data_set(case_dir, k, net, seq(50, BATCH), names)
        k += 1
    if not error and dynamic:
        data_set(case_dir, k, net, seq(T, 3), names)
        k += 1
    case = dict(model=model, form=form, cell=R.expected_cell(model), T=T, opset=opset,
                batch_first=bf, dynamic=dynamic, symbolic_time=not fixed, hidden=HIDDEN,
                fixed_outputs=2 * T if fixed else 0, table=model == "nag_lstm_r40" and T < 40)
    if error:
        case["expect"] = "error"
    elif unrolled:
        case["expect"] = "unrolled"
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(case, f)
    print("%-40s export %.1fs" % (name, took))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    jobs = []
    for model in FORM_MODELS:
        for form in FORMS + ("chunk",):
            for opset in (13, 14, 17):
                error = opset == 14 and form == "chunk"
                for T in ((8,) if error else (8, 64)):
                    jobs.append((out, "%s_%s_opset%d_T%d" % (form, model, opset, T), form, model,
                                 opset, T, 2001 + len(jobs)))
    for model, opset in (("nag_lstm_r2", 17), ("nag_lstm_r40", 13)):
        jobs.append((out, "revlist_%s_opset%d_T8" % (model, opset), "revlist", model, opset, 8,
                     2001 + len(jobs)))
    for model in FORM_MODELS:
        for opset in (13, 17):
            jobs.append((out, "lastx2_%s_opset%d_T8" % (model, opset), "lastx2", model, opset, 8,
                         2001 + len(jobs)))
    with multiprocessing.Pool(min(2, os.cpu_count() or 1)) as pool:
        pool.starmap(make_case, jobs, chunksize=1)


if __name__ == "__main__":
    main()
