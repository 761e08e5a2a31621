"""silero_bench.py: Silero VAD v4 and v5 in C (cellc) against ONNX Runtime
(npm onnxruntime-node), part of `make bench` (issue 16).

For each model at 16 kHz (512-sample chunks, batch 1, the state carried:
NAME_stream through tests/silero/stream.c; ONNX Runtime through
tests/silero/ort_stream.js, the state fed back from its outputs, one intra-op
thread), on the espeak-ng recording of tests/test_silero.py:
  us/chunk      median over ROUNDS alternating rounds (C, ONNX Runtime, C, ...)
                of each side's median pass over the recording (REPS passes)
  program       the linked driver (tests/silero/stream.c with the model and
                libcellrt, static; OpenBLAS and libc shared) plus its weights
                file, against onnxruntime-node's native files (libonnxruntime.so
                and its Node binding; Node itself not counted)
  peak RSS      of the process running the recording once (/usr/bin/time):
                the C driver against Node running ONNX Runtime (Node included)
Both sides run on one thread: OPENBLAS_NUM_THREADS=1 for the C code (libcellrt's
own kernels), intraOpNumThreads=1 for ONNX Runtime.  Prints a table and
writes build/bench/silero.csv.  Never fails on a slow number; exit status 1
only when something cannot be built or run (2: the models cannot be fetched).

usage: silero_bench.py [ROUNDS] [REPS]
"""
import csv
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import test_silero as ts  # noqa: E402  (fetch, recording, build)

WORK = os.path.join(ROOT, "build", "bench", "silero")
ORT = os.path.join(ROOT, "build", "ort")
CELLC = os.path.join(ROOT, "build", "cellc")


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if p.returncode != 0:
        sys.exit("silero_bench: %s failed: %s" % (" ".join(cmd[:3]), (p.stderr or p.stdout).strip()[:400]))
    return p.stdout, p.stderr


def value(text, key):
    return float(text.split(key + "=")[1].split()[0])


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    os.makedirs(WORK, exist_ok=True)
    models, skip, err = ts.fetch(os.path.join(WORK, "pkg"))
    if not models:
        print("silero_bench: %s" % (skip or err))
        sys.exit(2)
    rec, _ = ts.recording(WORK)
    audio = rec[16000][1]
    ort_native = os.path.join(ORT, "node_modules", "onnxruntime-node", "bin", "napi-v6", "linux", "x64")
    ort_bytes = sum(os.path.getsize(os.path.join(ort_native, f)) for f in os.listdir(ort_native))
    rows = []
    for ver, args, pairs, ctx in (
            ("v4", ["--dim", "sequence=512", "--carry", "h=hn", "--carry", "c=cn"], ["h=hn:2x1x64", "c=cn:2x1x64"], 0),
            ("v5", ["--dim", "input_1=576", "--carry", "state=stateN"],
             ["state=stateN:2x1x128"], 64)):
        out = os.path.join(WORK, ver)
        binary, err = ts.build(CELLC, models[ver], out, "vad", ["--bind", "sr=16000"] + args)
        if err:
            sys.exit("silero_bench: %s: %s" % (ver, err))
        weights = os.path.join(out, "vad.weights")
        c_us, o_us = [], []
        one = {"OPENBLAS_NUM_THREADS": "1"}
        ortenv = {"NODE_PATH": os.path.join(ORT, "node_modules")}
        ortcmd = ["node", os.path.join(ROOT, "tests", "silero", "ort_stream.js"), models[ver], audio, "16000", "512",
                  str(ctx), os.path.join(WORK, "ort.f32")] + pairs
        for _ in range(rounds):
            o, _ = run([binary, weights, audio, "512", "-"], dict(one, BENCH=str(reps)))
            c_us.append(value(o, "c_us_per_chunk"))
            o, _ = run(ortcmd, dict(ortenv, BENCH=str(reps)))
            o_us.append(value(o, "ort_us_per_chunk"))
        _, e = run(["/usr/bin/time", "-f", "maxrss_kb=%M", binary, weights, audio, "512", os.path.join(WORK, "c.f32")],
                   one)
        c_rss = value(e, "maxrss_kb")
        _, e = run(["/usr/bin/time", "-f", "maxrss_kb=%M"] + ortcmd, ortenv)
        o_rss = value(e, "maxrss_kb")
        c, r = statistics.median(c_us), statistics.median(o_us)
        rows.append({"model": ver, "c_us_per_chunk": "%.1f" % c, "ort_us_per_chunk": "%.1f" % r,
                     "speedup": "%.2f" % (r / c), "c_program_bytes": os.path.getsize(binary),
                     "c_weights_bytes": os.path.getsize(weights), "ort_native_bytes": ort_bytes,
                     "c_peak_rss_kb": int(c_rss), "ort_peak_rss_kb": int(o_rss)})
    with open(os.path.join(ROOT, "build", "bench", "silero.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    print("Silero VAD, 16 kHz, 512-sample chunks, batch 1, one thread each (%d rounds x %d passes)" % (rounds, reps))
    print("%-5s %12s %12s %8s %14s %14s %12s %12s" % ("model", "C us/chunk", "ORT us/chunk", "speedup",
                                                     "C program", "ORT native", "C peak RSS", "ORT peak RSS"))
    for r in rows:
        print("%-5s %12s %12s %7sx %11.1f MB %11.1f MB %9.1f MB %9.1f MB" % (
            r["model"], r["c_us_per_chunk"], r["ort_us_per_chunk"], r["speedup"],
            (r["c_program_bytes"] + r["c_weights_bytes"]) / 1e6, r["ort_native_bytes"] / 1e6,
            r["c_peak_rss_kb"] / 1024, r["ort_peak_rss_kb"] / 1024))
    print("(C program: the linked driver plus its weights file; ORT native: libonnxruntime.so + binding,"
          " without Node; peak RSS: whole process, Node included)")


if __name__ == "__main__":
    main()
