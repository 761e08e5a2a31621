"""long_trace_report.py: what cellc makes of 784-step traces, per writing style
(issue 14's size and build-time check; a measurement, not a timed test).

LONG_DIR holds `gen_trace_wild.py --long LONG_DIR MODEL ...` output: for each
model MODEL_opset13_T784/ and its short twin MODEL_opset13_T8_mnist/ (same
sizes, 8 steps).  For each pair it runs

  cellc info       the `recurrence over` lines of the long trace
  cellc verify     the long trace against its PyTorch golden (test_data_set_0)
  cellc compile    both; the bytes of the emitted .c and .h, with comments,
                   string literals and tensor-derived names stripped as
                   tests/test_trace.py counts them (the code proper), and raw
  make -C OUT      both builds with the emitted Makefile, timed (gcc, -O2)

and prints one Markdown table row per model, then exits 1 if a long trace
does not verify, does not roll, or emits more code than its twin.

usage: long_trace_report.py CELLC LONG_DIR
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


def code_bytes(out_dir):
    raw = stripped = 0
    for f in glob.glob(os.path.join(out_dir, "*.c")) + glob.glob(os.path.join(out_dir, "*.h")):
        with open(f) as fh:
            text = fh.read()
        raw += len(text)
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
        text = re.sub(r"\b(w|st|rec)_\w+", r"\1_", text)
        stripped += len(text)
    return raw, stripped


def build(cellc, model):
    """(stripped bytes, raw bytes, cellc seconds, make seconds) or an error string."""
    tmp = tempfile.mkdtemp(prefix="cellc_long_")
    try:
        t0 = time.time()
        rc, _, err = run([cellc, "compile", model, "-o", tmp, "--name", "m"])
        t1 = time.time()
        if rc != 0:
            return "compile failed: " + err.strip()[:200]
        raw, stripped = code_bytes(tmp)
        rc, _, err = run(["make", "-C", tmp])
        t2 = time.time()
        if rc != 0:
            return "make failed: " + err.strip()[:200]
        return stripped, raw, t1 - t0, t2 - t1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cellc, long_dir = sys.argv[1], sys.argv[2]
    # (a case without case.json is still being written)
    longs = sorted(d for d in os.listdir(long_dir) if d.endswith("_T784") and
                   os.path.exists(os.path.join(long_dir, d, "case.json")))
    if not longs:
        sys.exit("long_trace_report.py: no *_T784 case in %s" % long_dir)
    ok = True
    print("| model | styles | cellc info (T = 784) | verify | code bytes T=8 / T=784 (raw) | "
          "cellc + make seconds T=8 / T=784 |")
    print("|---|---|---|---|---|---|")
    for n in longs:
        prefix = n[:-len("_T784")]
        twin = prefix + "_T8_mnist"
        with open(os.path.join(long_dir, n, "case.json")) as f:
            case = json.load(f)
        model = os.path.join(long_dir, n, "model.onnx")
        short = os.path.join(long_dir, twin, "model.onnx")
        rc, out, err = run([cellc, "info", model])
        lines = [l.strip() for l in out.splitlines() if l.strip().startswith("recurrence over")]
        info = "; ".join(lines) if lines else "not rolled: " + " ".join(
            l.strip() for l in (out + err).splitlines() if "not rolled" in l or "stays" in l)[:200]
        rc, vout, verr = run([cellc, "verify", model, "--data", os.path.join(long_dir, n, "test_data_set_0")])
        verified = rc == 0
        a, b = build(cellc, short), build(cellc, model)
        if isinstance(a, str) or isinstance(b, str):
            print("| %s | %s | %s | %s | %s | |" % (case["model"], ", ".join(case["style"]), info,
                                                   "yes" if verified else "NO", a if isinstance(a, str) else b))
            ok = False
            continue
        same = b[0] <= a[0]
        ok &= verified and bool(lines) and same
        print("| %s | %s | %s | %s | %d / %d (%d / %d)%s | %.2f + %.2f / %.2f + %.2f |" % (
            case["model"], ", ".join(case["style"]), info, "yes" if verified else "NO",
            a[0], b[0], a[1], b[1], "" if same else " LARGER", a[2], a[3], b[2], b[3]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
