"""mpi_scaling.py: data-parallel training over MPI on this machine, and a
model of its scaling to more nodes (part of `make bench`).

usage: /usr/bin/python3 bench/mpi_scaling.py    (needs build/cellc, mpicc, mpirun)

Compiles an LSTM classifier (row-by-row 28x28 images: T = 28 steps of I =
28 values, hidden BENCH_MPI_H, a linear head to 10 classes) with `cellc
compile --train --loss ce`, builds its training program with `make
NAME_train MPI=1`, and times epochs of BENCH_MPI_N random samples at global
batch BENCH_MPI_B (Adam, clipping) as
  1 rank  x 1 thread    the baseline
  2 ranks x 1 thread    data-parallel: each rank half of every batch
  1 rank  x 2 threads   the same two cores used by threads instead
(OPENBLAS_NUM_THREADS and CELLRT_NUM_THREADS set per run, mpirun --bind-to
none).  Each run trains 3 epochs and the fastest counts (the first also
pays for warm-up); the epoch log gives the epoch's training time (no test
set, so no evaluation) and the program's epoch line, with several ranks,
rank 0's time inside the per-step MPI_Allreduce, which includes waiting
for the slower rank.

The compute of one rank per step, t_c(b), at per-rank batches b = B, B/2,
B/4, B/8 is measured as process CPU time of one rank with one thread
(3 epochs minus 1 epoch, over the steps of 2), which a busy machine
inflates far less than wall-clock time.
The all-reduce alone (bench/allreduce_time.c: the same MPI_Allreduce of
the gradient buffer between 2 ranks, the ranks lined up by a barrier first)
separates the transfer from the waiting.  The load average is printed with
the results: on a machine that other work keeps busy the 2-rank numbers
mostly measure waiting for a descheduled rank.

From these, the speed-up two idle cores would give: t_c(B) / (t_c(B/2) +
the all-reduce alone), printed beside the measured one.  t_c(b) is fitted
as c0 + c1 b (least squares; c0 is what does not shrink with the batch:
streaming the weights at every time step).

Then the model: per step a rank computes t_c(B/P) and the ranks sum G =
4 x parameters bytes; a ring all-reduce moves 2 (P-1)/P G bytes per rank
and has 2 (P-1) latency terms, so
    t_step(P) = t_c(B/P) + 2 (P-1) a + 2 (P-1)/P G / bw
with the compute measured here and two assumed networks (10 Gb/s Ethernet:
a = 20 us, bw = 1.1 GB/s; 100 Gb/s InfiniBand: a = 2 us, bw = 11 GB/s);
it prints the predicted speed-up for P = 2..64 nodes and the model and
batch sizes from which a cluster pays off (efficiency >= 0.8 at 8 nodes).
Writes build/bench/mpi_scaling.csv.  BENCH_MPI_REUSE=1 reuses the model
directory and data already in build/bench/mpi (no cellc needed: timing the
same files on another machine).  Never fails on a slow number; exit
status 1 only when something cannot be built or run.
"""
import csv
import os
import re
import shutil
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLC = os.path.join(ROOT, "build", "cellc")
OUT = os.path.join(ROOT, "build", "bench", "mpi")
H = int(os.environ.get("BENCH_MPI_H", "128"))
N = int(os.environ.get("BENCH_MPI_N", "2048"))
B = int(os.environ.get("BENCH_MPI_B", "128"))
REUSE = os.environ.get("BENCH_MPI_REUSE", "0") == "1"
T, I, C = 28, 28, 10
NETS = (("10 Gb/s Ethernet", 20e-6, 1.1e9), ("100 Gb/s InfiniBand", 2e-6, 11e9))
EPOCH = re.compile(r"^epoch \d+/\d+: .*\(([\d.]+) s, [\d.]+ samples/s(?:; (\d+) ranks, all-reduce ([\d.]+) s)?\)",
                   re.M)


def log(msg):
    print(msg, flush=True)


def run(cmd, env=None, timeout=1800):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def build():
    name = "mpi_lstm_h%d" % H
    d = os.path.join(OUT, name)
    src = os.path.join(OUT, name + ".cell")
    os.makedirs(OUT, exist_ok=True)
    if REUSE and os.path.exists(os.path.join(d, "Makefile")):
        return make(d, name)
    with open(src, "w") as f:
        f.write("# %s: written by bench/mpi_scaling.py\nmodel %s {\n    input x: f32[seq, batch, %d]\n"
                "    seed 1\n    h = lstm(x, hidden=%d)\n    y = linear(last(h), out=%d)\n    output y\n}\n"
                % (name, name, I, H, C))
    shutil.rmtree(d, ignore_errors=True)
    rc, out, err = run([CELLC, "compile", src, "-o", d, "--name", name, "--train", "--loss", "ce"])
    if rc != 0:
        sys.exit("mpi_scaling: cellc compile --train: " + err.strip())
    return make(d, name)


def make(d, name):
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", d, name + "_train", "MPI=1", "CELLRT=" + ROOT])
    if rc != 0:
        sys.exit("mpi_scaling: make %s_train MPI=1: %s" % (name, (err + out).strip()[-500:]))
    return os.path.join(d, name + "_train")


def mpi_env(threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), CELLRT_NUM_THREADS=str(threads),
               OMPI_MCA_btl_vader_single_copy_mechanism="none")
    if os.getuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def allreduce_alone(floats):
    """Median microseconds of the MPI_Allreduce of `floats` floats between 2 ranks."""
    exe = os.path.join(OUT, "allreduce_time")
    rc, out, err = run(["mpicc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                        os.path.join(ROOT, "bench", "allreduce_time.c"), "-o", exe])
    if rc != 0:
        log("  allreduce_time does not build: %s" % err.strip()[-300:])
        return None
    rc, out, err = run(["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2", exe, str(floats), "200"],
                       mpi_env(1))
    m = re.search(r"median_us=([\d.]+)", out)
    if rc != 0 or not m:
        log("  allreduce_time failed (exit %d): %s" % (rc, err.strip()[-300:]))
        return None
    return float(m.group(1)) * 1e-6


def data():
    r = np.random.RandomState(0)
    x = os.path.join(OUT, "x.npy")
    y = os.path.join(OUT, "y.npy")
    if REUSE and os.path.exists(x) and os.path.exists(y):
        return x, y
    np.save(x, r.randn(N, T, I).astype(np.float32))
    np.save(y, r.randint(0, C, N).astype(np.int64))
    return x, y


def train_args(x, y, batch, epochs, extra=()):
    return ["--train-data", x, "--train-labels", y, "--batch", str(batch), "--epochs", str(epochs),
            "--optimizer", "adam", "--lr", "1e-3", "--clip", "1", "--quiet", "--seed", "1"] + list(extra)


def epoch(binary, x, y, ranks, threads, batch):
    """(seconds, all-reduce seconds or None, all-reduce floats or None) of the
    fastest of 3 epochs, wall clock."""
    elog = os.path.join(OUT, "epochs.csv")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-x", "OPENBLAS_NUM_THREADS", "-x",
           "CELLRT_NUM_THREADS", "-np", str(ranks), binary] + train_args(x, y, batch, 3, ["--epoch-log", elog])
    rc, out, err = run(cmd, mpi_env(threads))
    if rc != 0:
        log("  run failed (exit %d): %s" % (rc, err.strip()[-300:]))
        return None
    # the epoch's time from the epoch log (seconds since the start, to the
    # millisecond; no test set, so no evaluation in it); all-reduce from stdout
    with open(elog) as f:
        ends = [float(line.split(",")[4]) for line in f.read().splitlines()[1:] if line]
    ar = [float(m.group(3)) if m.group(3) else None for m in EPOCH.finditer(out)]
    if len(ends) != 3 or len(ar) != 3:
        log("  expected 3 epochs, got: %s" % out.strip()[-300:])
        return None
    rows = [(e - s, a) for e, s, a in zip(ends, [0.0] + ends[:-1], ar)]
    floats = re.search(r"all-reduce of (\d+) floats", out)
    return min(rows) + (int(floats.group(1)) if floats else None,)


def cpu_per_step(binary, x, y, batch):
    """Process CPU seconds per optimiser step of one rank, one thread, at
    batch `batch`: (CPU of 3 epochs - CPU of 1 epoch) / the steps of 2
    epochs, which leaves out loading and the first steps' warm-up and does
    not count time the process waits for a CPU."""
    import resource
    cpu = []
    for epochs in (1, 3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        rc, out, err = run([binary] + train_args(x, y, batch, epochs), mpi_env(1))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if rc != 0:
            log("  run failed (exit %d): %s" % (rc, err.strip()[-300:]))
            return None
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return (cpu[1] - cpu[0]) / (2 * ((N + batch - 1) // batch))


def main():
    for tool in ("mpicc", "mpirun"):
        if not shutil.which(tool):
            log("mpi_scaling: no %s (Debian: libopenmpi-dev openmpi-bin; `make deps`)" % tool)
            return 1
    if not REUSE and not os.access(CELLC, os.X_OK):
        log("mpi_scaling: build/cellc is not built")
        return 1
    binary = build()
    x, y = data()
    steps = (N + B - 1) // B
    log("== Data-parallel training over MPI: LSTM I=%d H=%d T=%d, %d classes; one epoch = %d samples, "
        "global batch %d (%d steps)" % (I, H, T, C, N, B, steps))
    log("  machine: %d CPUs, load average %.1f %.1f %.1f before the runs" % ((os.cpu_count() or 0,) + os.getloadavg()))
    runs = {}
    for ranks, threads in ((1, 1), (2, 1), (1, 2)):
        got = epoch(binary, x, y, ranks, threads, B)
        runs[(ranks, threads)] = got
        if got:
            secs, ar, _ = got
            log("  wall clock, %d rank%s x %d thread%s: epoch %6.2f s%s" % (
                ranks, "s" if ranks > 1 else " ", threads, "s" if threads > 1 else " ", secs,
                "" if ar is None else ", in the all-reduce %.3f s (%.0f%%; %.2f ms per step, waiting for the "
                "other rank included)" % (ar, 100 * ar / secs, 1e3 * ar / steps)))
    base, two, thr = runs[(1, 1)], runs[(2, 1)], runs[(1, 2)]
    if base and two:
        log("  speed-up of 2 ranks over 1 rank: %.2fx" % (base[0] / two[0]))
    if base and thr:
        log("  speed-up of 2 threads in 1 rank: %.2fx" % (base[0] / thr[0]))
    params = two[2] - 1 if two and two[2] else 4 * H * (I + H) + 8 * H + C * H + C
    G = 4.0 * (params + 1)
    alone = allreduce_alone(params + 1)
    if alone is not None:
        log("  the all-reduce alone (%d floats = %.0f KB, 2 ranks lined up by a barrier): %.3f ms per step, "
            "%.3f s per epoch" % (params + 1, G / 1e3, 1e3 * alone, alone * steps))
    # compute per step against the per-rank batch, in CPU time (robust on a busy machine)
    bs = [b for b in (B, B // 2, B // 4, B // 8) if b >= 1]
    tcs = {}
    for b in bs:
        t = cpu_per_step(binary, x, y, b)
        if t is not None:
            tcs[b] = t
    if B not in tcs:
        return 1
    log("  compute per step (CPU time, 1 rank, 1 thread): " + ", ".join(
        "batch %d %.1f ms" % (b, 1e3 * t) for b, t in sorted(tcs.items(), reverse=True)))
    # t_c(b) = c0 + c1 b, least squares (c0: streaming the weights every time step)
    bb = np.array(sorted(tcs), float)
    tt = np.array([tcs[int(b)] for b in bb])
    c1, c0 = np.polyfit(bb, tt, 1) if len(bb) >= 2 else (tt[0] / bb[0], 0.0)
    c0, c1 = max(c0, 0.0), max(c1, 0.0)

    def tc(b):
        return c0 + c1 * b

    tc_full = tcs[B]
    if alone is not None and B // 2 in tcs:
        log("  projected for 2 idle cores: t_c(%d) / (t_c(%d) + the all-reduce alone) = %.2fx" % (
            B, B // 2, tc_full / (tcs[B // 2] + alone)))
    log("== Scaling model: t_step(P) = t_c(B/P) + 2(P-1) a + 2(P-1)/P G/bw, t_c(b) = %.2f ms + %.3f ms x b, "
        "G = %.0f KB" % (1e3 * c0, 1e3 * c1, G / 1e3))
    rows = []
    for net, a, bw in NETS:
        line = []
        for P in (2, 4, 8, 16, 32, 64):
            t = tc(B / P) + 2 * (P - 1) * a + 2 * (P - 1) / P * G / bw
            sp = tc_full / t
            line.append("P=%d %.1fx" % (P, sp))
            rows.append({"network": net, "P": P, "t_step_ms": 1e3 * t, "speedup": sp})
        log("  %-20s %s" % (net + ":", "  ".join(line)))
    # when does a cluster pay off: the all-reduce at most 20% of a step at 8
    # nodes needs t_c(B/8) >= 4 t_comm(8)
    for net, a, bw in NETS:
        comm8 = 14 * a + 1.75 * G / bw
        log("  %s: at 8 nodes the all-reduce stays under 20%% of a step when a rank computes >= %.1f ms "
            "per step (this model: %.1f ms at batch %d/8)" % (net, 4e3 * comm8, 1e3 * tc(B / 8), B))
    os.makedirs(os.path.join(ROOT, "build", "bench"), exist_ok=True)
    with open(os.path.join(ROOT, "build", "bench", "mpi_scaling.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["what", "ranks", "threads", "batch", "seconds", "allreduce_s"])
        for (r, t), got in runs.items():
            if got:
                w.writerow(["epoch wall", r, t, B, "%.4f" % got[0], "" if got[1] is None else "%.4f" % got[1]])
        if alone is not None:
            w.writerow(["allreduce alone per epoch", 2, 1, B, "", "%.6f" % (alone * steps)])
        for b, t in sorted(tcs.items()):
            w.writerow(["compute cpu per step", 1, 1, b, "%.6f" % t, ""])
        for row in rows:
            w.writerow(["model epoch " + row["network"], row["P"], 1, B, "%.4f" % (row["t_step_ms"] * steps / 1e3),
                        ""])
    return 0


if __name__ == "__main__":
    sys.exit(main())
