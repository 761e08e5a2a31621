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
none).  Each run trains 2 epochs and the faster epoch counts (the first
also pays for first-touch allocation); the program's epoch line gives the
epoch's training time (evaluation excluded) and, with several ranks, rank
0's time inside the per-step MPI_Allreduce (which includes waiting for the
slower rank).  Also 1 rank at half the batch: the compute of one rank's
share, to separate the smaller-GEMM loss from the communication.

The all-reduce alone (bench/allreduce_time.c: the same MPI_Allreduce of
the gradient buffer between 2 ranks, the ranks lined up by a barrier first)
separates the transfer from the waiting.  The load average is printed with
the results: on a machine that other work keeps busy the 2-rank numbers
mostly measure waiting for a descheduled rank.

From these, the speed-up two idle cores would give: t_c(B) / (t_c(B/2) +
the all-reduce alone), printed beside the measured one.

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


def epoch(binary, x, y, ranks, threads, batch):
    """(seconds, all-reduce seconds or None, parameters) of the faster of 2 epochs."""
    env = mpi_env(threads)
    elog = os.path.join(OUT, "epochs.csv")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-x", "OPENBLAS_NUM_THREADS", "-x",
           "CELLRT_NUM_THREADS", "-np", str(ranks), binary, "--train-data", x, "--train-labels", y,
           "--batch", str(batch), "--epochs", "2", "--optimizer", "adam", "--lr", "1e-3", "--clip", "1",
           "--quiet", "--seed", "1", "--epoch-log", elog]
    rc, out, err = run(cmd, env)
    if rc != 0:
        log("  run failed (exit %d): %s" % (rc, err.strip()[-300:]))
        return None
    # the epoch's time from the epoch log (seconds since the start, to the
    # millisecond; no test set, so no evaluation in it); all-reduce from stdout
    with open(elog) as f:
        ends = [float(line.split(",")[4]) for line in f.read().splitlines()[1:] if line]
    ar = [float(m.group(3)) if m.group(3) else None for m in EPOCH.finditer(out)]
    if len(ends) != 2 or len(ar) != 2:
        log("  expected 2 epochs, got: %s" % out.strip()[-300:])
        return None
    rows = [(ends[0], ar[0]), (ends[1] - ends[0], ar[1])]
    floats = re.search(r"all-reduce of (\d+) floats", out)
    return min(rows) + (int(floats.group(1)) if floats else None,)


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
    for ranks, threads, batch in ((1, 1, B), (2, 1, B), (1, 2, B), (1, 1, B // 2)):
        got = epoch(binary, x, y, ranks, threads, batch)
        runs[(ranks, threads, batch)] = got
        if got:
            secs, ar, _ = got
            log("  %d rank%s x %d thread%s, batch %3d: epoch %7.2f s%s" % (
                ranks, "s" if ranks > 1 else " ", threads, "s" if threads > 1 else " ", batch, secs,
                "" if ar is None else ", all-reduce %.3f s (%.1f%% of the epoch, %.2f ms per step)" % (
                    ar, 100 * ar / secs, 1e3 * ar / steps)))
    base, two, thr, half = (runs.get(k) for k in ((1, 1, B), (2, 1, B), (1, 2, B), (1, 1, B // 2)))
    params = two[2] - 1 if two and two[2] else 4 * H * (I + H) + 8 * H + C * H + C
    G = 4.0 * (params + 1)
    rows = []
    if base and two:
        log("  speed-up of 2 ranks over 1 rank: %.2fx (all-reduce %.1f%% of the 2-rank epoch)" % (
            base[0] / two[0], 100 * two[1] / two[0]))
    if base and thr:
        log("  speed-up of 2 threads in 1 rank: %.2fx" % (base[0] / thr[0]))
    alone = allreduce_alone(params + 1)
    if alone is not None:
        log("  the all-reduce alone (%d floats, 2 ranks lined up by a barrier): %.3f ms per step, "
            "%.3f s per epoch" % (params + 1, 1e3 * alone, alone * steps))
    if not base:
        return 1
    tc_full = base[0] / steps
    # the compute of a rank's share at other per-rank batches: measured at B and
    # B/2, per sample beyond that (a conservative straight line in 1/batch)
    tc_half = half[0] / (2 * steps) if half else tc_full / 2
    log("== Scaling model: t_step(P) = t_c(B/P) + 2(P-1) a + 2(P-1)/P G/bw, G = %.0f KB of gradients per step"
        % (G / 1e3))
    log("  measured here: t_c(%d) = %.1f ms, t_c(%d) = %.1f ms per step (1 thread)" % (
        B, 1e3 * tc_full, B // 2, 1e3 * tc_half))
    if alone is not None:
        log("  projected for 2 idle cores (or nodes with shared-memory speed): t_c(%d) / (t_c(%d) + the all-reduce "
            "alone) = %.2fx" % (B, B // 2, tc_full / (tc_half + alone)))
    if two:
        per_step = two[1] / steps
        log("  measured here: all-reduce %.2f ms per step between 2 ranks on one machine (shared memory; "
            "includes waiting for the slower rank)" % (1e3 * per_step))

    def tc(b):
        # per-step compute at per-rank batch b: t(b) = c0 + c1 b through the two measurements
        c1 = (tc_full - tc_half) / (B - B // 2)
        c0 = tc_full - c1 * B
        return max(c0, 0.0) + c1 * b

    for net, a, bw in NETS:
        line = []
        for P in (2, 4, 8, 16, 32, 64):
            t = tc(B / P) + 2 * (P - 1) * a + 2 * (P - 1) / P * G / bw
            s = tc_full / t
            line.append("P=%d %.1fx" % (P, s))
            rows.append({"network": net, "P": P, "t_step_ms": 1e3 * t, "speedup": s, "efficiency": s / P})
        log("  %-20s %s" % (net + ":", "  ".join(line)))
    # when does a cluster pay off: efficiency at 8 nodes >= 0.8 needs
    # t_c(B/8) >= 4 t_comm(8), i.e. compute per step per rank against the bytes
    for net, a, bw in NETS:
        comm8 = 14 * a + 1.75 * G / bw
        log("  %s: 8 nodes run at >= 80%% efficiency when a rank's compute per step is >= %.1f ms "
            "(here %.1f ms at batch %d/8)" % (net, 4e3 * comm8, 1e3 * tc(B / 8), B))
    with open(os.path.join(ROOT, "build", "bench", "mpi_scaling.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["what", "ranks", "threads", "batch", "epoch_s", "allreduce_s"])
        for (r, t, b), got in runs.items():
            if got:
                w.writerow(["measured", r, t, b, "%.4f" % got[0], "" if got[1] is None else "%.4f" % got[1]])
        if alone is not None:
            w.writerow(["allreduce_alone", 2, 1, B, "", "%.6f" % (alone * steps)])
        for row in rows:
            w.writerow(["model " + row["network"], row["P"], 1, B, "%.4f" % (row["t_step_ms"] * steps / 1e3), ""])
    return 0


if __name__ == "__main__":
    sys.exit(main())
