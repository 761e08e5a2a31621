"""torch_bench.py: PyTorch CPU timings of the benchmark's cases (bench/cells.py).

usage: torch_bench.py THREADS CASE...

CASE is MODE:CELL:H:B:T:REPS (CELL fixture_NAME: tests/ref_momentum.py's
model NAME with its 4-class head on every step, the model of the committed
784-step traces) with MODE infer (the model's forward under
torch.no_grad, time per sequence), qinfer (the same after
torch.quantization.quantize_dynamic to int8 weights: nn.LSTM, nn.GRU and
nn.Linear modules, the engine this PyTorch build has, printed as engine=)
or train (one training step: forward,
cross-entropy on a linear head over the last step, backward, RMSprop update,
docs/training.md).  torch.set_num_threads(THREADS) (and one inter-op
thread).  The input is x [T, B, 1] ~ U(-1, 1) from a fixed seed.  Untimed
runs warm up for 0.3 s, at least one (inference only), then REPS timed runs; prints per case
`CASE torch_ms=MEDIAN min_ms=.. cpu_ms=.. reps=..` (cpu_ms: the process's
CPU time per run, all threads).
"""
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cells  # noqa: E402

warnings.filterwarnings("ignore")
WARMUP_S = 0.3


def run_case(case):
    mode, cell, H, B, T, reps = case.split(":")
    H, B, T, reps = int(H), int(B), int(T), int(reps)
    g = torch.Generator().manual_seed(7)
    x = torch.rand(T, B, 1, generator=g) * 2 - 1
    if cell.startswith("fixture_"):
        # the committed 784-step trace's model (tests/gen_trace_cases.py --long):
        # tests/ref_momentum.py's Python loop with a 4-class head on every step
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
            __file__))), "tests"))
        import ref_momentum
        net = ref_momentum.make_model(cell[len("fixture_"):], 1, H, 4, 784)
    else:
        net = cells.make(cell, 1, H)
    if mode == "qinfer":
        net = torch.quantization.quantize_dynamic(net, {torch.nn.LSTM, torch.nn.GRU, torch.nn.Linear},
                                                  dtype=torch.qint8)
    if mode in ("infer", "qinfer"):
        def once():
            with torch.no_grad():
                net(x)
    else:
        model = cells.Classifier(net.train(), H)
        opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
        target = torch.randint(0, 10, (B,), generator=g)

        def once():
            cells.train_step(model, opt, x, target)
    times, cpu = [], []
    # a training step takes 10-50 s: its first run is timed (no warm-up)
    if mode != "train":
        # untimed runs for WARMUP_S (at least one), as bench/time_cellc.c does
        w0 = time.perf_counter()
        once()
        while time.perf_counter() - w0 < WARMUP_S:
            once()
    for r in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        once()
        if r >= 0:
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    print("%s torch_ms=%.4f min_ms=%.4f cpu_ms=%.4f reps=%d engine=%s" % (
        case, 1e3 * median(times), 1e3 * min(times), 1e3 * median(cpu), reps,
        torch.backends.quantized.engine), flush=True)


def median(v):
    s, n = sorted(v), len(v)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def main():
    threads = int(sys.argv[1])
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    for case in sys.argv[2:]:
        run_case(case)


if __name__ == "__main__":
    main()
