"""gen_trace_cases.py: traced PyTorch exports of the momentum family
(tests/ref_momentum.py: MomentumLSTM, AdamLSTM, RMSPropLSTM, NAG/SR-LSTM with
restart 2 and 40, MomentumGRU, momentum RNN; a Python loop over time around a
cell module, Linear head on every step), in the ONNX backend layout
(CASE/model.onnx, CASE/test_data_set_N/input_0.pb, output_K.pb) so that
`cellc verify` checks them against PyTorch's own outputs, plus
CASE/case.json (model name, expected cell string, traced T, whether the
time axis must become symbolic).

torch.onnx.export traces the loop into T copies of the step; cellc must roll
them back into one recurrence (compiler/passes/pass_reroll.c).  The matrix: every
model at opsets 13, 14 and 17 and T = 8 and 64 (opset 13: seq-first, static
shapes; 14: dynamic batch and time axes; 17: batch_first, static).  Data
sets: the traced size, and for T = 8 exports whose time axis extends, T = 50
(the same weights run by PyTorch for 50 steps); dynamic exports also get a
batch-3 set.  Seeds are fixed; a case's seed depends only on its position.

usage: gen_trace_cases.py OUTDIR                   (the CI matrix, ~1 minute)
       gen_trace_cases.py --long OUTDIR [MODEL ...]
           784-step traces (input 1, hidden 32, batch 1: MNIST pixel by
           pixel) of every model, or of the MODELs named, each with a short
           twin for the size check; two exports at a time

The long cases are committed (tests/fixtures/trace_long/MODEL.tar.xz) because
PyTorch 1.13's export time grows with the square of the traced length or
faster.  784-step exports on a 2-core machine, two at a time: with glibc's
malloc MomentumLSTM took 24 minutes and AdamLSTM 64; under jemalloc (Debian
package libjemalloc2), which halves the time and writes byte-identical
model.onnx files, NAG LSTM took 12 (restart 2) and 16 (restart 40) minutes,
MomentumGRU and RMSPropLSTM 24, the momentum RNN 3:

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
        python3 tests/gen_trace_cases.py --long DIR adam_lstm

Each long case MODEL_opset13_T784 has a twin MODEL_opset13_TK_mnist, the
same sizes traced over K steps, whose emitted C the 784-step code must not
exceed (tests/test_trace.py).  K is 8, except for NAG with restart 40: over 8
steps it never restarts, so its coefficients stay a table and T stays fixed
(case.json symbolic_time false), a different program from the 784-step
trace's symbolic schedule (smaller: 12395 bytes of code against 13347); its
twin is traced over 64 steps, which shows a restart and keeps the time axis
symbolic like the long case.
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


def write_pb(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def data_set(case_dir, k, net, x):
    d = os.path.join(case_dir, "test_data_set_%d" % k)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        y, h = net(torch.from_numpy(x))
    write_pb(os.path.join(d, "input_0.pb"), x, "x")
    write_pb(os.path.join(d, "output_0.pb"), y.numpy(), "y")
    write_pb(os.path.join(d, "output_1.pb"), h.numpy(), "h")


def export(net, x, path, opset, dynamic, batch_first):
    kw = {}
    if dynamic:
        kw["dynamic_axes"] = {"x": {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}}
    torch.onnx.export(net, (torch.from_numpy(x),), path, opset_version=opset, input_names=["x"],
                      output_names=["y", "h"], **kw)


def make_case(out, name, model, opset, T, seed, input_size=INPUT, hidden=HIDDEN, batch=BATCH):
    bf = opset == 17
    dynamic = opset == 14
    net = R.make_model(model, input_size, hidden, CLASSES, seed, batch_first=bf)
    rng = np.random.default_rng(seed)

    def seq(T_, B_):
        shape = (B_, T_, input_size) if bf else (T_, B_, input_size)
        return rng.standard_normal(shape).astype(np.float32)

    case_dir = os.path.join(out, name)
    os.makedirs(case_dir, exist_ok=True)
    x = seq(T, batch)
    t0 = time.time()
    export(net, x, os.path.join(case_dir, "model.onnx"), opset, dynamic, bf)
    took = time.time() - t0
    data_set(case_dir, 0, net, x)
    # The time axis extends to any T unless a per-step coefficient has no
    # known schedule within the trace: NAG restart 40 traced over 8 steps
    # never restarts, so its period is unknown there.
    extends = not (model == "nag_lstm_r40" and T < 40)
    k = 1
    if T == 8 and extends:
        data_set(case_dir, k, net, seq(50, batch))
        k += 1
    if dynamic:
        data_set(case_dir, k, net, seq(T, 3))
        k += 1
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(dict(model=model, cell=R.expected_cell(model), T=T, opset=opset,
                       batch_first=bf, dynamic=dynamic, symbolic_time=extends,
                       hidden=hidden), f)
    print("%-40s export %.1fs" % (name, took))


# --long: model -> (seed of the 784-step trace, T of its twin, seed of the
# twin).  MomentumLSTM's seeds predate the others (its cases are unchanged).
LONG_T = 784
LONG = {
    "momentum_lstm": (784, 8, 784),
    "adam_lstm": (7840, 8, 7851),
    "rmsprop_lstm": (7841, 8, 7852),
    "nag_lstm_r2": (7842, 8, 7853),
    "nag_lstm_r40": (7843, 64, 7854),   # over 8 steps it never restarts: see above
    "momentum_gru": (7844, 8, 7855),
    "momentum_rnn": (7845, 8, 7856),
}
assert set(LONG) == set(R.MODELS)


def long_job(out, model, twin):
    """make_case arguments of MODEL's 784-step trace, or of its short twin."""
    seed, twin_T, twin_seed = LONG[model]
    if twin:
        return (out, "%s_opset13_T%d_mnist" % (model, twin_T), model, 13, twin_T, twin_seed, 1, 32, 1)
    return (out, "%s_opset13_T%d" % (model, LONG_T), model, 13, LONG_T, seed, 1, 32, 1)


def main():
    args = sys.argv[1:]
    long = "--long" in args
    args = [a for a in args if a != "--long"]
    if len(args) < 1 or (len(args) > 1 and not long):
        sys.exit(__doc__)
    out, models = args[0], args[1:]
    if long:
        models = models or list(LONG)
        bad = [m for m in models if m not in LONG]
        if bad:
            sys.exit("gen_trace_cases.py: unknown model %s (one of %s)" % (", ".join(bad), ", ".join(LONG)))
        # the twins first (seconds each), then the 784-step exports
        jobs = [long_job(out, m, twin=True) for m in models] + [long_job(out, m, twin=False) for m in models]
    else:
        jobs = []
        for model in R.MODELS:
            for opset in (13, 14, 17):
                for T in (8, 64):
                    jobs.append((out, "%s_opset%d_T%d" % (model, opset, T), model, opset, T, 1001 + len(jobs)))
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    # two exporters at once (CI has 2 cores); each case has its own seed
    with multiprocessing.Pool(min(2, os.cpu_count() or 1)) as pool:
        pool.starmap(make_case, jobs, chunksize=1)


if __name__ == "__main__":
    main()
