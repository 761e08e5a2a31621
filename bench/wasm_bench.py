"""wasm_bench.py: Silero VAD v5 in WebAssembly, the module cellc generates
against onnxruntime-web, part of `make bench` (issue 47).

At 16 kHz (512-sample chunks after 64 of context, batch 1, the state
carried) on the espeak-ng recording of tests/test_silero.py, in Node, one
thread each, in one process (bench/wasm_bench.mjs):
  cellc        the model as examples/silero_vad.sh --web builds it (cellc
               compile --bind sr=16000 --dim input_1=576 --carry state=stateN
               --js, make TARGET=wasm32: SIMD128 kernels), through its
               JavaScript API (silero.mjs), model.step per chunk
  ORT web      onnxruntime-web (npm, pinned: make web), its WebAssembly
               backend (ort.wasm.bundle.min.mjs and ort-wasm-simd-threaded
               .wasm), SIMD, numThreads 1, on silero_vad_v5.onnx
  us/chunk     median over ROUNDS alternating rounds of each side's median
               pass (PASSES passes over the recording), wall and process CPU
               time (a fairer figure on a machine shared with other work)
  download     what a web page fetches: silero.wasm + silero.mjs +
               silero.weights against ort.wasm.bundle.min.mjs +
               ort-wasm-simd-threaded.wasm + silero_vad_v5.onnx, raw and
               gzip -9 (what a server compressing them sends)
Also the largest difference of the two sides' speech probabilities.  Prints
a table and writes build/bench/wasm.csv.  Never fails on a slow number; exit
status 1 when something cannot be built or run (2: the models or the npm
packages cannot be fetched).

usage: wasm_bench.py [ROUNDS] [PASSES]
"""
import csv
import gzip
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import test_silero as ts  # noqa: E402  (fetch, recording)

WORK = os.path.join(ROOT, "build", "bench", "wasm")
WEB = os.path.join(ROOT, "build", "web")
DIST = os.path.join(WEB, "node_modules", "onnxruntime-web", "dist")


def run(cmd, env=None, fail=1):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if p.returncode != 0:
        print("wasm_bench: %s failed: %s" % (" ".join(cmd[:3]), (p.stderr or p.stdout).strip()[:600]))
        sys.exit(fail)
    return p.stdout


def sizes(files):
    """(raw bytes, gzip -9 bytes) of the files together"""
    raw = gz = 0
    for f in files:
        with open(f, "rb") as h:
            b = h.read()
        raw += len(b)
        gz += len(gzip.compress(b, 9))
    return raw, gz


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    os.makedirs(WORK, exist_ok=True)
    models, skip, err = ts.fetch(os.path.join(WORK, "pkg"), ts.VAD_WEB)
    if not models:
        print("wasm_bench: %s" % (skip or err))
        sys.exit(2)
    run(["make", "--no-print-directory", "-s", "-C", ROOT, "web"], fail=2)
    for v in ("v4", "v5"):      # the example script finds them and fetches nothing
        dst = os.path.join(WORK, os.path.basename(models[v]))
        if not os.path.exists(dst):
            os.link(models[v], dst)
    run([os.path.join(ROOT, "examples", "silero_vad.sh"), "--web"], {"SILERO_DIR": WORK})
    rec, _ = ts.recording(WORK)
    web = os.path.join(WORK, "web")
    out = run(["node", os.path.join(ROOT, "bench", "wasm_bench.mjs"), os.path.join(web, "silero.mjs"),
               os.path.join(web, "silero.weights"), DIST, models["v5"], rec[16000][1], str(rounds), str(passes)])
    v = dict(kv.split("=") for line in out.splitlines() for kv in line.split())
    ours = [os.path.join(web, f) for f in ("silero.wasm", "silero.mjs", "silero.weights")]
    theirs = [os.path.join(DIST, f) for f in ("ort.wasm.bundle.min.mjs", "ort-wasm-simd-threaded.wasm")] + \
        [models["v5"]]
    (craw, cgz), (oraw, ogz) = sizes(ours), sizes(theirs)
    row = {"chunks": v["chunks"], "cellc_us_per_chunk": v["cellc_us_per_chunk"],
           "ort_web_us_per_chunk": v["ort_us_per_chunk"],
           "speedup": "%.2f" % (float(v["ort_us_per_chunk"]) / float(v["cellc_us_per_chunk"])),
           "cellc_cpu_us_per_chunk": v["cellc_cpu_us_per_chunk"], "ort_web_cpu_us_per_chunk": v["ort_cpu_us_per_chunk"],
           "cpu_speedup": "%.2f" % (float(v["ort_cpu_us_per_chunk"]) / float(v["cellc_cpu_us_per_chunk"])),
           "cellc_download_bytes": craw, "ort_web_download_bytes": oraw, "smaller": "%.1f" % (oraw / craw),
           "cellc_gzip_bytes": cgz, "ort_web_gzip_bytes": ogz, "smaller_gzip": "%.1f" % (ogz / cgz),
           "max_prob_diff": v["max_prob_diff"]}
    with open(os.path.join(ROOT, "build", "bench", "wasm.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(row))
        wr.writeheader()
        wr.writerow(row)
    print("Silero VAD v5 in WebAssembly, Node %s, 16 kHz, 512-sample chunks, batch 1, one thread each "
          "(%d rounds x %d passes of %s chunks)" % (run(["node", "--version"]).strip(), rounds, passes, v["chunks"]))
    print("%-10s %12s %12s %14s %14s" % ("", "us/chunk", "CPU us/chunk", "download", "gzip -9"))
    print("%-10s %12s %12s %11.2f MB %11.2f MB" % ("cellc", row["cellc_us_per_chunk"], row["cellc_cpu_us_per_chunk"],
                                                   craw / 1e6, cgz / 1e6))
    print("%-10s %12s %12s %11.2f MB %11.2f MB" % ("ORT web", row["ort_web_us_per_chunk"],
                                                   row["ort_web_cpu_us_per_chunk"], oraw / 1e6, ogz / 1e6))
    print("%-10s %11sx %11sx %13sx %13sx" % ("ratio", row["speedup"], row["cpu_speedup"], row["smaller"],
                                             row["smaller_gzip"]))
    print("(cellc: silero.wasm + silero.mjs + silero.weights; ORT web: ort.wasm.bundle.min.mjs + "
          "ort-wasm-simd-threaded.wasm + silero_vad_v5.onnx; probabilities differ by at most %s)" % v["max_prob_diff"])


if __name__ == "__main__":
    main()
