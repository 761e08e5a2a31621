"""loop_styles_size.py: the generated code of a 784-step trace of each
loop_styles model against its 8-step trace (issue 46's size check; a
measurement, not a test of `make check`: a long trace takes PyTorch minutes
to export, and an unrolled one takes cellc as long to compile).

For each model of tests/gen_loop_styles.py (all, or those named), this
exports the model as the group does (same class, weights from the same seed,
same opset and dynamic axes), traced at T = 8 and at T = 784 (the length of
the input sequence; for a model whose loops all generate, the steps it
generates, and for PyPOTS's GRU-D its n_steps), each export in its own
process under --timeout seconds, then runs on both files

  cellc info       the `recurrence over` lines (of the long trace, shown)
  cellc verify     the long trace against its PyTorch golden (the same
                   tolerance as the group), under --timeout
  cellc compile    the bytes of the emitted .c and .h, with comments, string
                   literals and tensor-derived names stripped as
                   tests/long_trace_report.py counts them (the code proper)

and prints one Markdown table row per model: the recurrences of the long
trace, whether it verifies, the code bytes at T = 8 and T = 784 and their
ratio (about 1 where every loop rolls; about 98 where the code grows with
T), and the seconds the long export took.  An export or a compilation that
runs out of time is a row that says so.

usage: loop_styles_size.py CELLC OUTDIR [--timeout S] [--long T] [MODEL ...]
       (OUTDIR keeps the exports: MODEL_T8/, MODEL_T784/; an export already
       there, with its case.json, is reused)
"""
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gen_loop_styles as G  # noqa: E402
from long_trace_report import code_bytes  # noqa: E402

# models whose loop length is a constructor parameter rather than the
# input's: built with T steps
BUILD_T = {
    "charrnn_generate": lambda T: G.NameSampler(G.CATS, G.VOCAB, G.HIDDEN, max_length=T),
    "convlstm_peephole_steps": lambda T: G.PeepholeConvLSTM(G.FRAME_C, [4, 3], 3, step=T, effective_step=(2, 4)),
    "grud_pypots": lambda T: G.BackboneGRUD(T, G.INPUT, G.HIDDEN),
}

TOLS = {"torch": ["--atol", "1e-5", "--rtol", "1e-4"], "f64": ["--atol", "1e-9", "--rtol", "1e-7"]}


def export_one(name, T, case_dir):
    """Export MODEL at T into case_dir (model.onnx, test_data_set_0, case.json)."""
    import torch
    spec = G.MODELS[name]
    spec["name"] = name
    torch.set_num_threads(1)
    torch.manual_seed(G.model_seed(name))
    net = (BUILD_T[name](T) if name in BUILD_T else spec["build"]()).eval()
    B = spec.get("batch", G.BATCH)
    rng = G.np.random.default_rng(G.model_seed(name) + T)
    x, ys = G.draw(net, spec, T, B, rng)
    t0 = time.time()
    G.export(net, spec, x, os.path.join(case_dir, "model.onnx"))
    took = time.time() - t0
    G.data_set(os.path.join(case_dir, "test_data_set_0"), spec, x, ys)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(dict(model=name, T=T, export_s=took, tol="f64" if spec.get("f64") else "torch",
                       loops=spec["loops"]), f, indent=1)


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout


def ensure(out, name, T, timeout):
    """The case directory, or a string saying why there is none."""
    d = os.path.join(out, "%s_T%d" % (name, T))
    if os.path.exists(os.path.join(d, "case.json")):
        return d
    rc, _, err = run([sys.executable, os.path.abspath(__file__), "--export", name, str(T), d], timeout)
    if rc is None:
        return "export not done in %d s" % timeout
    if rc != 0:
        return "export failed: " + " ".join(err.strip().splitlines()[-1:])[:160]
    return d


def refusal(err):
    """The first error of cellc's stderr, without the file and node it names."""
    for line in err.splitlines():
        if "error: " in line:
            return "refused: " + line.split("error: ", 1)[1][:90]
    return err.strip()[:90]


def compiled_bytes(cellc, model, work, timeout):
    rc, _, err = run([cellc, "compile", model, "-o", work, "--name", "m"], timeout)
    if rc != 0:
        return None, ("compile timed out" if rc is None else refusal(err))
    return code_bytes(work)[1], None


def main():
    args = sys.argv[1:]
    if args[:1] == ["--export"]:
        export_one(args[1], int(args[2]), args[3])
        return
    timeout, long_T = 600, 784
    for opt in ("--timeout", "--long"):
        if opt in args:
            i = args.index(opt)
            val = int(args[i + 1])
            del args[i:i + 2]
            if opt == "--timeout":
                timeout = val
            else:
                long_T = val
    if len(args) < 2:
        sys.exit(__doc__)
    cellc, out, names = args[0], args[1], args[2:] or list(G.MODELS)
    bad = [n for n in names if n not in G.MODELS]
    if bad:
        sys.exit("loop_styles_size.py: unknown model %s" % ", ".join(bad))
    os.makedirs(out, exist_ok=True)
    print("| model | recurrences at T = %d (`cellc info`) | verify T = %d | code bytes T = 8 / T = %d | ratio "
          "| export s |" % (long_T, long_T, long_T))
    print("|---|---|---|---|---|---|")
    for name in names:
        t0 = time.time()
        short, long_ = ensure(out, name, 8, timeout), ensure(out, name, long_T, timeout)
        if not os.path.isdir(str(long_)) or not os.path.isdir(str(short)):
            why = long_ if not os.path.isdir(str(long_)) else short
            print("| %s | %s | | | | |" % (name, why), flush=True)
            continue
        with open(os.path.join(long_, "case.json")) as f:
            case = json.load(f)
        model = os.path.join(long_, "model.onnx")
        rc, info, err = run([cellc, "info", model], timeout)
        lines = [re.sub(r"; traced with \d+\)", ")", l.strip()) for l in info.splitlines()
                 if l.strip().startswith("recurrence over")]
        m = re.search(r"^recurrences \((\d+)\)", info, re.M)
        total = int(m.group(1)) if m else 0
        shown = "%d: %s" % (total, "; ".join(lines)) if lines else "%d, none from a traced loop" % total
        if rc != 0:
            shown = "info timed out" if rc is None else refusal(err)
        rc, _, verr = run([cellc, "verify", model, "--data", os.path.join(long_, "test_data_set_0")] +
                          TOLS[case["tol"]], timeout)
        verified = "yes" if rc == 0 else ("timed out" if rc is None else "no (%s)" % (
            refusal(verr) if "error: " in verr else
            " ".join(l for l in verr.splitlines() if l.startswith("FAIL"))[:90] or "exit %d" % rc))
        a, why_a = compiled_bytes(cellc, os.path.join(short, "model.onnx"), os.path.join(out, "c", name + "_T8"),
                                  timeout)
        b, why_b = compiled_bytes(cellc, model, os.path.join(out, "c", "%s_T%d" % (name, long_T)), timeout)
        sizes = "%s / %s" % (a, b) if a is not None and b is not None else why_a or why_b
        ratio = "%.2f" % (b / a) if a and b else ""
        print("| %s | %s | %s | %s | %s | %.0f |" % (name, shown, verified, sizes, ratio, case["export_s"]),
              flush=True)
        sys.stderr.write("%s: %.0f s\n" % (name, time.time() - t0))


if __name__ == "__main__":
    main()
