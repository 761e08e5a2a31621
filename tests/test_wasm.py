"""test_wasm.py: the JavaScript API of a WebAssembly build (cellc compile
--js, make TARGET=wasm32) and the Silero VAD web page (issue 47), in Node and
in headless Chromium.  Prints one `PASS|FAIL|SKIP cross_wasm32/...` line per check;
exit status 1 on any failure.  Run by the harness group cross_wasm32.

lstm/node/..., lstm/chromium/...
             an nn.LSTM export (the torch fixture LSTM_DIR: PyTorch's
             goldens) compiled with --js and built with make TARGET=wasm32,
             loaded over HTTP through NAME.mjs (tests/wasm/check_kit.mjs, the
             same checks in both): model.run on every golden set (dims bound
             from the inputs' shapes) and model.step one time step at a time
             (the time axes from `cellc info`), at the testbench's
             tolerances; an input of the wrong length, a dim of another name
             and a corrupted weights file refused with errors that name them;
             in Node also made from paths on disk.
silero/node/..., silero/chromium/...
             Silero VAD v5 (npm @ricky0123/vad-web, pinned and checked as
             the silero group fetches it) as examples/silero_vad.sh --web
             builds it (--bind sr=16000 --dim input_1=576 --carry
             state=stateN --js): model.step chunk by chunk over the espeak-ng
             recording of tests/test_silero.py, every probability within
             1e-5 + 1e-4 |ref| and the carried state (model.state()) within
             1e-4 + 1e-3 |ref| of ONNX Runtime's stream (tests/silero/
             ort_stream.js, the state fed back), and state() null after a
             reset.
page/...     the web page (examples/silero_vad.html) in Chromium, the
             recording picked in its file input: every chunk's probability
             within 1e-5 + 1e-4 |ref| of ONNX Runtime's, within 1e-4 of what
             the native example prints (examples/silero_vad.sh v5, 4
             decimals), and its speech segments the native example's, line
             for line; a screenshot in WORK/silero_page.png.
A check that needs the npm registry (the Silero package, onnxruntime-node,
playwright-core: WEB_DIR, make web) is SKIPped with the reason when it
cannot be reached; a missing Chromium fails, naming the Debian package.

usage: test_wasm.py CELLC WORK ORT_DIR WEB_DIR LSTM_DIR
"""
import json
import os
import re
import shutil
import sys

import numpy as np
from onnx import load_tensor, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import test_silero as ts  # noqa: E402  (fetch, recording, run: the silero group's)

failed = 0
# the tolerances of the testbench (x86's) and of Silero's state (v5: test_silero.STATE_TOL)
ATOL, RTOL = 1e-5, 1e-4
STATE_ATOL, STATE_RTOL = ts.STATE_TOL["v5"]


def report(name, ok, detail=""):
    global failed
    word = "SKIP" if ok is None else "PASS" if ok else "FAIL"
    failed += ok is False
    print("%s cross_wasm32/%s%s" % (word, name, " " + detail if detail else ""), flush=True)


run = ts.run     # (rc, stdout, stderr) of a command with env added


def drive(web_dir, *args):
    """tests/wasm/drive.mjs: its PASS/FAIL lines, reported under wasm/."""
    rc, o, e = run(["node", os.path.join(ROOT, "tests", "wasm", "drive.mjs"), ROOT] + list(args),
                   env={"NODE_PATH": os.path.join(web_dir, "node_modules")})
    lines = [l for l in o.splitlines() if re.match(r"^(PASS|FAIL) ", l)]
    for l in lines:
        word, name, detail = (l.split(" ", 2) + [""])[:3]
        report(name, word == "PASS", detail)
    if rc != 0 and not any(l.startswith("FAIL") for l in lines):
        report("drive/" + args[0], False, "exit %s: %s" % (rc, ts.first(e or o)))
    return o


def rel(path):
    return os.path.relpath(path, ROOT)


def time_axes(cellc, model):
    """{inputs, outputs}: each one's axis of the symbol model_step advances
    (None: none), from `cellc info`; None when the model has no step."""
    rc, o, e = run([cellc, "info", model])
    m = re.search(r"advances one step of '([^']+)'", o)
    if rc != 0 or not m:
        return None
    axes = {}
    for part in ("inputs", "outputs"):
        sec = re.search(r"^%s \(\d+\):\n((?:  .*\n)*)" % part, o, re.M).group(1)
        axes[part] = []
        for line in sec.splitlines():
            dims = [d.strip() for d in re.search(r"\[(.*)\]", line).group(1).split(",")]
            axes[part].append(dims.index(m.group(1)) if m.group(1) in dims else None)
    return axes


def build(cellc, model, out, name, args):
    """cellc compile --js, make TARGET=wasm32: None, or what failed."""
    shutil.rmtree(out, ignore_errors=True)
    rc, o, e = run([cellc, "compile", model, "-o", out, "--name", name, "--js"] + args)
    if rc != 0:
        return "cellc compile: %s" % ts.first(e)
    rc, o, e = run(["make", "--no-print-directory", "-s", "-C", out, "CELLRT=" + ROOT, "TARGET=wasm32"])
    return None if rc == 0 else "make TARGET=wasm32: %s" % ts.first(e + o, 4)


def lstm_kit(cellc, work, fixture):
    """The kit of the LSTM fixture: its path, or None after a FAIL."""
    out = os.path.join(work, "lstm")
    model = os.path.join(fixture, "model.onnx")
    err = build(cellc, model, out, "lstm", [])
    report("lstm/build", err is None, err or "lstm.mjs, lstm.wasm")
    if err:
        return None
    sets = []
    for s in sorted(d for d in os.listdir(fixture) if d.startswith("test_data_set_")):
        one = {"name": s, "inputs": [], "outputs": []}
        for kind in ("input", "output"):
            k = 0
            while os.path.exists(os.path.join(fixture, s, "%s_%d.pb" % (kind, k))):
                t = load_tensor(os.path.join(fixture, s, "%s_%d.pb" % (kind, k)))
                a = numpy_helper.to_array(t)
                f = "%s_%s_%d.bin" % (s, kind, k)
                a.astype(a.dtype.newbyteorder("<")).tofile(os.path.join(out, f))
                one[kind + "s"].append({"file": f, "dtype": t.data_type, "dims": list(a.shape)})
                k += 1
        sets.append(one)
    kit = {"name": "lstm", "module": "lstm.mjs", "wasm": "lstm.wasm", "weights": "lstm.weights", "atol": ATOL,
           "rtol": RTOL, "sets": sets, "step": time_axes(cellc, model)}
    path = os.path.join(out, "kit.json")
    with open(path, "w") as f:
        json.dump(kit, f)
    return path


def silero(cellc, work, ort_dir):
    """examples/silero_vad.sh --web and v5 on the recording, ONNX Runtime's
    stream: (kit path, page dir, the native example's output, ORT's
    outputs, the WAV), or None after a SKIP or FAIL."""
    sdir = os.path.join(work, "silero")
    os.makedirs(sdir, exist_ok=True)
    models, skip, err = ts.fetch(os.path.join(sdir, "pkg"), ts.VAD_WEB)
    if not models:
        report("silero/fetch", None if skip else False, skip or err)
        return None
    if not ts.ort_ready(ort_dir):
        rc, o, e = run(["make", "--no-print-directory", "-s", "-C", ROOT, "ort"])
        if rc != 0:
            report("silero/ort", None, "skipped: onnxruntime-node could not be installed (npm registry "
                   "unreachable?): %s" % ts.first(e))
            return None
    # the example script's folder holds the models, so it fetches nothing
    for v in ("v4", "v5"):
        shutil.copy(models[v], os.path.join(sdir, os.path.basename(models[v])))
    rec, _ = ts.recording(sdir)
    wav, f32 = rec[16000]
    env = {"SILERO_DIR": sdir}
    rc, o, e = run([os.path.join(ROOT, "examples", "silero_vad.sh"), "--web"], env=env)
    report("silero/web_build", rc == 0, "exit %s: %s" % (rc, ts.first(e + o, 4)) if rc else "silero_vad.sh --web")
    if rc != 0:
        return None
    rc, native, e = run([os.path.join(ROOT, "examples", "silero_vad.sh"), "v5", wav], env=env)
    report("silero/native_example", rc == 0, "exit %s: %s" % (rc, ts.first(e + native, 4)) if rc else
           "%d chunk lines" % len(re.findall(r" s  ", native)))
    if rc != 0:
        return None
    ref = os.path.join(sdir, "ort.f32")
    rc, o, e = run(["node", os.path.join(ROOT, "tests", "silero", "ort_stream.js"), models["v5"], f32, "16000", "512",
                    "64", ref, "state=stateN:2x1x128"], env={"NODE_PATH": os.path.join(ort_dir, "node_modules")})
    if rc != 0:
        report("silero/ort_stream", False, "ONNX Runtime: %s" % ts.first(o + e))
        return None
    web = os.path.join(sdir, "web")
    shutil.copy(f32, os.path.join(web, "audio.f32"))
    shutil.copy(ref, os.path.join(web, "ort.f32"))
    kit = {"name": "silero", "module": "silero.mjs", "wasm": "silero.wasm", "weights": "silero.weights",
           "atol": ATOL, "rtol": RTOL, "sets": [], "step": None,
           "stream": {"audio": "audio.f32", "chunk": 512, "context": 64, "ref": "ort.f32", "state": 256,
                      "state_atol": STATE_ATOL, "state_rtol": STATE_RTOL}}
    path = os.path.join(web, "kit.json")
    with open(path, "w") as f:
        json.dump(kit, f)
    return path, web, native, np.fromfile(ref, np.float32).reshape(-1, 257)[:, 0], wav


def page(work, web_dir, web, native, ort_probs, wav):
    """The page in Chromium on the recording against ORT and the native example."""
    out, shot = os.path.join(work, "page.json"), os.path.join(work, "silero_page.png")
    for p in (out, shot):
        if os.path.exists(p):
            os.remove(p)
    drive(web_dir, "page", rel(os.path.join(web, "index.html")), wav, out, shot)
    if not os.path.exists(out):
        report("page/load", False, "the page left no result")
        return
    with open(out) as f:
        r = json.load(f)
    if "error" in r:
        report("page/load", False, "%s (console: %s)" % (r["error"], " | ".join(r.get("logs", []))[:300]))
        return
    probs = np.array(r["probs"], np.float32)
    n = len(ort_probs)
    ok = len(probs) == n
    worst = float(np.max(np.abs(probs - ort_probs) / (ATOL + RTOL * np.abs(ort_probs)))) if ok else 0
    report("page/probabilities_vs_onnxruntime", ok and worst <= 1, "%d chunks (ONNX Runtime %d): worst %.3g of the "
           "tolerance" % (len(probs), n, worst))
    printed = np.array([float(l.split()[2]) for l in native.splitlines() if re.match(r"^ *[0-9.]+ s  ", l)])
    ok = len(printed) == len(probs)
    diff = float(np.max(np.abs(probs - printed))) if ok else 0
    report("page/probabilities_vs_native", ok and diff <= 1e-4, "%d chunks (native %d): largest difference %.2g "
           "from the printed 4 decimals" % (len(probs), len(printed), diff))
    want = [l for l in native.splitlines() if l.startswith("speech ")]
    got = r["text"].splitlines()
    report("page/segments", got == want and len(want) >= 3, "page: %s; native: %s" % (
        ", ".join(l[7:] for l in got), ", ".join(l[7:] for l in want)))
    report("page/screenshot", os.path.getsize(shot) > 10000 if os.path.exists(shot) else False, shot)


def main():
    cellc, work, ort_dir, web_dir, fixture = sys.argv[1:6]
    work = os.path.abspath(work)
    if not work.startswith(ROOT + os.sep):
        sys.exit("test_wasm.py: WORK must be under %s (it is served over HTTP)" % ROOT)
    os.makedirs(work, exist_ok=True)
    kits = [k for k in [lstm_kit(cellc, work, fixture)] if k]
    s = silero(cellc, work, ort_dir)
    if s:
        kits.append(s[0])
    for k in kits:
        drive(web_dir, "node", rel(k))
    browser = shutil.which("chromium")
    have_pw = os.path.exists(os.path.join(web_dir, "node_modules", "playwright-core", "package.json"))
    if not have_pw:
        rc, o, e = run(["make", "--no-print-directory", "-s", "-C", ROOT, "web"])
        have_pw = rc == 0
    if not browser:
        report("chromium", False, "no chromium: install the Debian package chromium (make deps)")
    elif not have_pw:
        report("chromium", None, "skipped: playwright-core could not be installed (npm registry unreachable?)")
    else:
        drive(web_dir, "chromium", *[rel(k) for k in kits])
        if s:
            page(work, web_dir, *s[1:])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
