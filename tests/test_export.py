"""test_export.py: `cellc export MODEL.onnx WEIGHTS -o OUT.onnx` against the
fixtures of tests/gen_export_cases.py.  Prints one `PASS|FAIL export/...`
line per test; exit status 1 on any failure.

For every case (nn.LSTM, nn.GRU, traced MomentumLSTM, an initializer in an
ONNX Loop body):
  run           `cellc export --strict --report` exits 0 and reports every
                initializer replaced (and the checkpoint's '@' tensors ignored)
  initializers  OUT's initializers equal the WEIGHTS tensors bit for bit, in
                the source's order and names
  unchanged     everything else equals the source model (protobuf message
                equality after putting the source's initializers into OUT);
                the decorated case keeps metadata, doc strings, the float_data
                storage and a field unknown to the schema
  checker       onnx.checker.check_model(full_check=True) passes
  onnxruntime   ONNX Runtime (npm onnxruntime-node, templates/ort_run.js) on
                OUT reproduces PyTorch's outputs of the module with the new
                weights (the Loop: numpy's) at atol 1e-5 + rtol 1e-4; the
                source model must not
  san           build-san/cellc writes the same bytes, with no sanitizer report
Error cases (on the LSTM case, through build/cellc and build-san/cellc): each
exits 2 with a message naming the file and the tensor, leaves no OUT (nor a
temporary beside it), and an OUT that existed before is left as it was;
40 randomly damaged models and weights files through build-san/cellc exit 0
or 2 with no sanitizer report.

usage: test_export.py CELLC CELLC_SAN CASES_DIR WORK_DIR ORT_DIR
"""
import glob
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
SAN_MARKERS = ("runtime error", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")
ATOL, RTOL = 1e-5, 1e-4

failed = 0


def report(name, ok, detail=""):
    global failed
    failed += not ok
    print("%s export/%s%s" % ("PASS" if ok else "FAIL", name, " " + detail if detail else ""), flush=True)


def run(cmd, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, cwd=ROOT, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def short(s, n=300):
    s = " | ".join(l.strip() for l in s.splitlines() if l.strip())
    return s[:n] + ("..." if len(s) > n else "")


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def all_initializers(graph):
    """The initializers of graph and of the graphs nested in its nodes'
    attributes, depth first (the order cellc export reports them in)."""
    res = list(graph.initializer)
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("g"):
                res += all_initializers(a.g)
            for g in a.graphs:
                res += all_initializers(g)
    return res


def data_set(case_dir):
    d = os.path.join(case_dir, "test_data_set_0")
    ins = [read_pb(p) for p in sorted(glob.glob(os.path.join(d, "input_*.pb")))]
    outs = [read_pb(p) for p in sorted(glob.glob(os.path.join(d, "output_*.pb")))]
    return ins, outs


# ---- ONNX Runtime through node ---------------------------------------------

CODES = {np.dtype(np.float32): 1, np.dtype(np.int64): 7, np.dtype(np.int32): 6, np.dtype(np.float64): 11}


def ort_run(model, inputs, work, ort_dir):
    """Runs model on inputs [(name, array)] with onnxruntime-node; returns
    [(name, array)] or raises RuntimeError with its message."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    lines = []
    for k, (name, a) in enumerate(inputs):
        fn = "input_%d.bin" % k
        a.astype(a.dtype.newbyteorder("<")).tofile(os.path.join(work, fn))
        lines.append("\t".join([name, str(CODES[a.dtype]), ",".join(str(d) for d in a.shape), fn]))
    with open(os.path.join(work, "inputs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    rc, out, err = run(["node", os.path.join(ROOT, "templates", "ort_run.js"), model, work],
                       {"NODE_PATH": os.path.join(ort_dir, "node_modules")})
    if rc != 0:
        raise RuntimeError("onnxruntime: exit %d: %s" % (rc, short(err)))
    res = []
    types = {1: np.float32, 7: np.int64, 6: np.int32, 11: np.float64}
    with open(os.path.join(work, "outputs.txt")) as f:
        for line in f.read().splitlines():
            name, code, dims, fn = line.split("\t")
            shape = tuple(int(d) for d in dims.split(",")) if dims else ()
            a = np.fromfile(os.path.join(work, fn), dtype=np.dtype(types[int(code)]).newbyteorder("<"))
            res.append((name, a.reshape(shape)))
    return res


def compare(got, want):
    """None if every output matches at ATOL + RTOL, else the reason."""
    if [n for n, _ in got] != [n for n, _ in want]:
        return "outputs %s, expected %s" % ([n for n, _ in got], [n for n, _ in want])
    for (n, g), (_, w) in zip(got, want):
        if g.shape != w.shape:
            return "%s: shape %s, expected %s" % (n, g.shape, w.shape)
        err = np.abs(g.astype(np.float64) - w)
        bad = err > ATOL + RTOL * np.abs(w)
        if bad.any():
            return "%s: %d of %d values off, max abs error %.3g" % (n, int(bad.sum()), bad.size, err.max())
    return None


# ---- the cases ---------------------------------------------------------------

def case_tests(cellc, cellc_san, case_dir, work, ort_dir):
    name = os.path.basename(case_dir)
    with open(os.path.join(case_dir, "case.json")) as f:
        info = json.load(f)
    model = os.path.join(case_dir, "model.onnx")
    weights = os.path.join(case_dir, "new.weights")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "out.onnx")
    if os.path.exists(out):
        os.remove(out)
    rc, so, se = run([cellc, "export", model, weights, "-o", out, "--strict", "--report"])
    tensors = tensorfile.read(weights)
    nskip = sum(1 for n, _ in tensors if n.startswith("@"))
    want_lines = ["%s %s" % ("replaced" if n in info["float32"] else "kept    ", n) for n in info["initializers"]]
    summary = "%d of %d initializers replaced (%d checkpoint tensors '@...' ignored); wrote %s" % (
        len(info["float32"]), len(info["initializers"]), nskip, out)
    got_lines = so.splitlines()
    ok = rc == 0 and len(got_lines) == len(want_lines) + 1 and got_lines[-1] == summary and all(
        g.startswith(w + " ") for g, w in zip(got_lines, want_lines))
    report("%s/run" % name, ok, "" if ok else "exit %d: %s %s" % (rc, short(se), short(so)))
    if rc != 0 or not os.path.exists(out):
        return
    if info["checkpoint"] and nskip == 0:
        report("%s/checkpoint" % name, False, "the checkpoint case has no '@' tensors")

    src = onnx.load(model)
    exp = onnx.load(out)
    # (1) the initializers hold the new values, bit for bit
    new = {n: a for n, a in tensors if not n.startswith("@")}
    bad = []
    if [t.name for t in all_initializers(exp.graph)] != info["initializers"]:
        bad.append("initializer names/order changed")
    for t in all_initializers(exp.graph):
        a = numpy_helper.to_array(t)
        ref = new.get(t.name)
        if ref is None:
            ref = numpy_helper.to_array([s for s in all_initializers(src.graph) if s.name == t.name][0])
        if a.dtype != ref.dtype or a.shape != ref.shape or a.tobytes() != ref.tobytes():
            bad.append(t.name)
    report("%s/initializers" % name, not bad, "%d float32 tensors replaced" % len(new) if not bad
           else "differ from WEIGHTS: %s" % bad)

    # everything else as it was
    bad = []
    both = onnx.ModelProto()
    both.CopyFrom(exp)
    for dst, t in zip(all_initializers(both.graph), all_initializers(src.graph)):
        dst.CopyFrom(t)
    if both != src or both.SerializeToString(deterministic=True) != src.SerializeToString(deterministic=True):
        bad.append("the model differs from the source apart from its initializers")
    if info["decorated"]:
        if not exp.metadata_props or exp.metadata_props[0].value != "cellc export test":
            bad.append("metadata_props lost")
        if "kept by cellc export" not in exp.graph.doc_string or not exp.doc_string:
            bad.append("doc strings lost")
        t0 = exp.graph.initializer[0]
        if not len(t0.float_data) or t0.HasField("raw_data"):
            bad.append("initializer '%s' no longer in float_data" % t0.name)
        with open(out, "rb") as f:
            if info["unknown_marker"].encode() not in f.read():
                bad.append("the unknown field was dropped")
    report("%s/unchanged" % name, not bad, "; ".join(bad))

    # (3) the ONNX checker
    try:
        onnx.checker.check_model(exp, full_check=True)
        report("%s/checker" % name, True)
    except Exception as e:      # noqa: BLE001 -- any checker complaint fails
        report("%s/checker" % name, False, "%s: %s" % (type(e).__name__, short(str(e))))

    # (2) ONNX Runtime on OUT == PyTorch with the new weights; the source model must differ
    ins, outs = data_set(case_dir)
    try:
        why = compare(ort_run(out, ins, os.path.join(work, "ort_out"), ort_dir), outs)
        report("%s/onnxruntime" % name, why is None, why or "%d outputs within atol %g + rtol %g" % (
            len(outs), ATOL, RTOL))
        why = compare(ort_run(model, ins, os.path.join(work, "ort_src"), ort_dir), outs)
        report("%s/source_differs" % name, why is not None, "the source model also matches the new outputs"
               if why is None else "")
    except (RuntimeError, OSError, KeyError, ValueError) as e:
        report("%s/onnxruntime" % name, False, str(e))

    # the sanitizer build writes the same file
    out_san = os.path.join(work, "out_san.onnx")
    if os.path.exists(out_san):
        os.remove(out_san)
    rc, so, se = run([cellc_san, "export", model, weights, "-o", out_san, "--strict"], SAN_ENV)
    marker = [m for m in SAN_MARKERS if m in se]
    same = rc == 0 and not marker and open(out_san, "rb").read() == open(out, "rb").read()
    report("%s/san" % name, same, "" if same else "exit %d%s: %s" % (rc, " %s" % marker if marker else "",
                                                                    short(se)))


# ---- error cases ---------------------------------------------------------------

def error_cases(case_dir, work):
    """[(name, argv after 'export', expected substrings of stderr, OUT)]; makes
    the files they need under work."""
    os.makedirs(work, exist_ok=True)
    model = os.path.join(case_dir, "model.onnx")
    good = tensorfile.read(os.path.join(case_dir, "new.weights"))
    f32 = [(n, a) for n, a in good if not n.startswith("@")]
    n0, a0 = f32[0]
    shape_name, shape_arr = next((n, a) for n, a in f32 if a.ndim >= 2)

    def weights(fname, tensors):
        p = os.path.join(work, fname)
        tensorfile.write(p, tensors)
        return p

    def out(tag):
        return os.path.join(work, "out_%s.onnx" % tag)

    cases = []
    w = weights("unknown.weights", f32 + [("no_such_tensor", np.zeros(3, np.float32))])
    cases.append(("unknown_tensor", [model, w, "-o", out("unknown")], [w, "no_such_tensor", "no initializer"],
                  out("unknown")))
    w = weights("dtype.weights", [(n, a.astype(np.float64) if n == n0 else a) for n, a in f32])
    cases.append(("dtype_mismatch", [model, w, "-o", out("dtype")], [w, "'%s'" % n0, "DOUBLE", "FLOAT", model],
                  out("dtype")))
    w = weights("shape.weights", [(n, a.T.copy() if n == shape_name else a) for n, a in f32])
    cases.append(("shape_mismatch", [model, w, "-o", out("shape")],
                  [w, "'%s'" % shape_name, "[%s]" % ",".join(str(d) for d in shape_arr.shape)], out("shape")))
    w = weights("strict.weights", f32[1:])
    cases.append(("strict_missing", [model, w, "-o", out("strict"), "--strict"], [w, "'%s'" % n0, "--strict"],
                  out("strict")))
    # the same name twice (rt_tf_open refuses it; tensorfile.py will not write it: patch the table)
    dup = bytearray(tensorfile.encode([(n0, a0), ("x" * len(n0), a0)]))
    dup[64 + 256:64 + 256 + len(n0)] = n0.encode()
    struct.pack_into("<Q", dup, 40, tensorfile.fnv1a64(bytes(dup[64:])))
    w = os.path.join(work, "duplicate.weights")
    open(w, "wb").write(dup)
    cases.append(("duplicate_tensor", [model, w, "-o", out("dup")], [w, "cannot read the weights file"],
                  out("dup")))
    with open(os.path.join(case_dir, "new.weights"), "rb") as f:
        img = bytearray(f.read())
    w = os.path.join(work, "corrupt.weights")
    img2 = bytearray(img)
    img2[-1] ^= 0x40                       # a data byte: the checksum fails
    open(w, "wb").write(img2)
    cases.append(("corrupt_weights", [model, w, "-o", out("corrupt")], [w, "checksum"], out("corrupt")))
    w = os.path.join(work, "truncated.weights")
    open(w, "wb").write(img[:len(img) // 2])
    cases.append(("truncated_weights", [model, w, "-o", out("trunc_w")], [w, "cannot read the weights file"],
                  out("trunc_w")))
    w = os.path.join(case_dir, "new.weights")
    cases.append(("weights_is_onnx", [model, model, "-o", out("wonnx")], [model, "weights file"], out("wonnx")))
    m = os.path.join(work, "truncated.onnx")
    with open(model, "rb") as f:
        src = f.read()
    open(m, "wb").write(src[:len(src) - 40])
    cases.append(("truncated_model", [m, w, "-o", out("trunc_m")], [m, "not a valid ONNX model"], out("trunc_m")))
    m = os.path.join(work, "missing.onnx")
    cases.append(("missing_model", [m, w, "-o", out("missing")], [m, "cannot read the model"], out("missing")))
    cases.append(("weights_as_model", [w, w, "-o", out("wmodel")], [w, "not a valid ONNX model"], out("wmodel")))
    # initializers in an external data file: refused, naming the tensor
    ext_dir = os.path.join(work, "external")
    shutil.rmtree(ext_dir, ignore_errors=True)
    os.makedirs(ext_dir)
    em = onnx.load(model)
    onnx.save_model(em, os.path.join(ext_dir, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.data", size_threshold=0)
    m = os.path.join(ext_dir, "model.onnx")
    ext = [t.name for t in onnx.load(m, load_external_data=False).graph.initializer
           if t.data_location == onnx.TensorProto.EXTERNAL]
    cases.append(("external_data", [m, w, "-o", out("external")], [m, "'%s'" % ext[0], "external file 'model.data'"],
                  out("external")))
    cell = os.path.join(ROOT, "examples", sorted(p for p in os.listdir(os.path.join(ROOT, "examples"))
                                                 if p.endswith(".cell"))[0])
    cases.append(("cell_model", [cell, w, "-o", out("cell")], [cell, 'weights "FILE"', w], out("cell")))
    cases.append(("out_dir_missing", [model, w, "-o", os.path.join(work, "no_such_dir", "out.onnx")],
                  [os.path.join(work, "no_such_dir", "out.onnx"), "cannot create"],
                  os.path.join(work, "no_such_dir", "out.onnx")))
    cases.append(("no_out", [model, w], ["no -o OUT.onnx"], None))
    cases.append(("unknown_option", [model, w, "-o", out("opt"), "--fast"], ["--fast"], out("opt")))
    # an initializer name used in the main graph and in a Loop body: ambiguous
    am = onnx.load(os.path.join(os.path.dirname(case_dir), "loop_body", "model.onnx"))
    am.graph.initializer.append(numpy_helper.from_array(np.zeros((4, 4), np.float32), "U"))
    m = os.path.join(work, "ambiguous.onnx")
    onnx.save(am, m)
    w = weights("ambiguous.weights", [("U", np.ones((4, 4), np.float32))])
    cases.append(("ambiguous_name", [m, w, "-o", out("ambiguous")], [w, "'U'", "2 initializers of that name"],
                  out("ambiguous")))
    w = os.path.join(case_dir, "new.weights")
    # an OUT that exists already is left as it was when the export fails
    kept = out("kept")
    cases.append(("existing_out_kept", [model, os.path.join(work, "unknown.weights"), "-o", kept],
                  ["no_such_tensor"], kept))
    return cases


def run_error(tag, cellc, env, name, argv, want, out):
    full = "errors/%s/%s" % (tag, name)
    sentinel = b"an older file the failed export must not touch\n"
    if out:
        if os.path.exists(out):
            os.remove(out)
        if name == "existing_out_kept":
            open(out, "wb").write(sentinel)
    rc, so, se = run([cellc, "export"] + argv, env)
    why = []
    if rc != 2:
        why.append("exit %d (want 2)" % rc)
    why += ["lacks %r" % w for w in want if w not in se]
    why += ["sanitizer: %s" % m for m in SAN_MARKERS if m in se]
    if out:
        d = os.path.dirname(out)
        if name == "existing_out_kept":
            if open(out, "rb").read() != sentinel:
                why.append("the existing OUT was changed")
        elif os.path.exists(out):
            why.append("OUT was written")
        if os.path.isdir(d) and glob.glob(os.path.join(glob.escape(d), os.path.basename(out) + ".tmp.*")):
            why.append("a temporary file was left")
    report(full, not why, "; ".join(why) + (": " + short(se) if why else "") if why else short(se, 160))


def partial_export(cellc, case_dir, work):
    """Without --strict a WEIGHTS file may hold some initializers only: those
    are replaced, the others keep the source's values."""
    model = os.path.join(case_dir, "model.onnx")
    tensors = [(n, a) for n, a in tensorfile.read(os.path.join(case_dir, "new.weights")) if not n.startswith("@")]
    w = os.path.join(work, "partial.weights")
    tensorfile.write(w, tensors[1:])
    out = os.path.join(work, "partial.onnx")
    rc, so, se = run([cellc, "export", model, w, "-o", out])
    if rc != 0:
        report("errors/partial_without_strict", False, "exit %d: %s" % (rc, short(se)))
        return
    src = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(out).graph.initializer}
    n0 = tensors[0][0]
    ok = np.array_equal(got[n0], src[n0]) and all(np.array_equal(got[n], a) for n, a in tensors[1:])
    report("errors/partial_without_strict", ok, "'%s' kept, %d replaced" % (n0, len(tensors) - 1) if ok
           else "wrong initializer values")


def fuzz(cellc_san, case_dir, work):
    """Damaged models and weights files (fixed seed): build-san/cellc must
    exit 0 or 2, never crash or report memory errors, and write OUT only on 0."""
    rng = np.random.default_rng(5)
    model = os.path.join(case_dir, "model.onnx")
    weights = os.path.join(case_dir, "new.weights")
    imgs = {p: open(p, "rb").read() for p in (model, weights)}
    bad, codes = [], {0: 0, 2: 0}
    for k in range(40):
        target = model if k % 2 == 0 else weights
        img = bytearray(imgs[target])
        for _ in range(1 + k % 4):
            img[int(rng.integers(len(img)))] = int(rng.integers(256))
        if k % 5 == 4:
            img = img[:int(rng.integers(len(img)))]
        p = os.path.join(work, "fuzz%s" % (".onnx" if target == model else ".weights"))
        open(p, "wb").write(img)
        out = os.path.join(work, "fuzz_out.onnx")
        if os.path.exists(out):
            os.remove(out)
        argv = [cellc_san, "export", p if target == model else model, p if target == weights else weights, "-o", out]
        rc, so, se = run(argv, SAN_ENV)
        if rc not in (0, 2) or any(m in se for m in SAN_MARKERS) or (rc == 2) == os.path.exists(out) \
                or (rc == 2 and "error" not in se):
            bad.append("case %d: exit %d: %s" % (k, rc, short(se, 200)))
        else:
            codes[rc] += 1
    report("errors/san/fuzz", not bad, bad[0] if bad else "40 damaged files: %d exported, %d refused" % (
        codes[0], codes[2]))


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    cellc, cellc_san, cases_dir, work, ort_dir = sys.argv[1:]
    if not os.path.exists(os.path.join(ort_dir, "node_modules", "onnxruntime-node", "package.json")):
        rc, so, se = run(["make", "--no-print-directory", "-s", "ort"])
        report("onnxruntime_install", rc == 0, "" if rc == 0 else "make ort: %s" % short(se))
    shutil.rmtree(work, ignore_errors=True)
    for name, argv, want in (("help", ["export", "--help"], "usage: cellc export MODEL.onnx WEIGHTS -o OUT.onnx"),
                             ("listed_in_help", ["--help"], "cellc export  MODEL.onnx WEIGHTS -o OUT.onnx")):
        rc, so, se = run([cellc] + argv)
        report(name, rc == 0 and want in so, "" if rc == 0 and want in so else "exit %d: %s" % (rc, short(so)))
    cases = sorted(d for d in glob.glob(os.path.join(cases_dir, "*")) if os.path.isdir(d))
    if len(cases) != 4:
        report("cases", False, "expected 4 cases in %s, found %d" % (cases_dir, len(cases)))
    for c in cases:
        case_tests(cellc, cellc_san, c, os.path.join(work, os.path.basename(c)), ort_dir)
    lstm = os.path.join(cases_dir, "lstm")
    ew = os.path.join(work, "errors")
    errs = error_cases(lstm, ew)
    for tag, exe, env in (("cellc", cellc, None), ("san", cellc_san, SAN_ENV)):
        for name, argv, want, out in errs:
            run_error(tag, exe, env, name, argv, want, out)
    partial_export(cellc, lstm, ew)
    fuzz(cellc_san, lstm, ew)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
