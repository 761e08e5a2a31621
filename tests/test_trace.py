"""test_trace.py: what `cellc` makes of traced loops beyond their numbers
(tests/gen_trace_cases.py; `cellc verify` of the same cases runs in the
harness group "trace").  One PASS/FAIL line each:

  info/CASE     `cellc info` names the docs/cells.md cell the trace computes (the
                string tests/ref_momentum.py's expected_cell gives), with its
                hidden size; the time axis is symbolic ("any length") exactly
                when case.json says it must be, and otherwise a note says why
  size/MODEL    the emitted C of the T = 64 trace is not larger than that of
                the T = 8 trace (comments and string literals -- the
                exporter's names -- stripped: the code does not grow with T)
  long/MODEL_T784
                the 784-step traces in LONG_DIR (tests/fixtures/trace_long/,
                one archive per model of the momentum family; input 1, hidden
                32, batch 1): info as above, and size: emitted C not larger
                than that of the model's short twin MODEL_opset13_TK_mnist
                (K = 8; 64 for NAG restart 40, whose 8-step trace keeps a
                table and a fixed T -- twin and long case must both have a
                symbolic time axis); the compile time of each 784-step trace
                is printed (measured, not a timed test)

With --forms, TRACE_DIR holds tests/gen_trace_forms.py's cases (other loop
styles, names FORM_MODEL_opsetN_TK):
  info/CASE     as above; the list form (T separate outputs) keeps T fixed
                with a note saying so
  unrolled/CASE a loop cellc must leave unrolled (case.json "expect":
                "unrolled": steps that differ): no recurrence in `cellc
                info` (its values are verified like the others)
  error/CASE    exports cellc rejects (case.json "expect": "error"): `cellc
                compile` exits 2 with an error naming the ONNX node
  fallback/CASE (every case of both directories that compiles) the fallbacks
                of `cellc info --werror-fallback` (docs/commands.md#fallbacks):
                a loop left unrolled ("expect": "unrolled") is listed as a
                traced loop of T steps that stays unrolled, with the nodes
                left unrolled, the reason and the first two steps that differ
                and the node where, and exits 2; `cellc compile` warns the
                same and exits 0, with --werror-fallback exits 2 and writes
                nothing, and so does `cellc verify --werror-fallback`; a rolled loop whose time axis stays fixed
                (symbolic_time false) is listed as such (exit 2); any other
                case has no fallback, exit 0
  size/MODEL    as above, except for the list form, whose T outputs each
                take a copy out of the stacked output: there the T = 64 code
                may exceed the T = 8 code by at most OUTPUT_BYTES per extra
                output (the step itself must not be copied)

usage: test_trace.py [--forms] CELLC TRACE_DIR [LONG_DIR]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def report(name, ok, detail=""):
    print("%s trace/%s%s" % ("PASS" if ok else "FAIL", name, " " + detail if detail else ""), flush=True)
    return ok


# bytes of emitted C allowed per extra graph output of the list form: one
# Gather out of the stacked output plus the output's entries in the header's
# tables (about 330 bytes today); far less than a copy of a step (a
# MomentumLSTM step is a dozen operations of 200-500 bytes each)
OUTPUT_BYTES = 400


def check_error(cellc, case_dir, name):
    tmp = tempfile.mkdtemp(prefix="cellc_trace_")
    try:
        rc, out, err = run([cellc, "compile", os.path.join(case_dir, "model.onnx"), "-o", tmp])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    first = err.strip().splitlines()[0] if err.strip() else ""
    ok = rc == 2 and re.search(r"model\.onnx: node '[^']+' \(\w+, opset \d+\): error: ", err)
    return report("error/" + name, bool(ok), "exit %d: %s" % (rc, first[:200]))


UNROLLED = re.compile(r"a traced loop of (\d+) steps over '[^']+' stays unrolled \(the emitted code grows "
                      r"with T: (\d+) nodes, (\d+) per step\): [^;\n]+(; steps \d+ and \d+ differ first at "
                      r"node '[^']+' \(\w+\) of step \d+, which has no counterpart in step \d+)?")


def check_fallback(cellc, case_dir, name):
    """fallback/CASE (see the module's docstring)."""
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    model = os.path.join(case_dir, "model.onnx")
    rc, out, err = run([cellc, "info", "--werror-fallback", model])
    m = re.search(r"^fallbacks \((\d+)\)", out, re.M)
    if not m:
        return report("fallback/" + name, False, "exit %d, no 'fallbacks' line: %s" % (rc, err.strip()[:200]))
    listed = [l.strip() for l in out[m.end():].splitlines()[1:1 + int(m.group(1))]]
    unrolled = [u for u in (UNROLLED.match(l) for l in listed) if u]
    fixed = [l for l in listed if "runs a fixed number of steps" in l and "T stays" in l]
    if case.get("expect") == "unrolled":
        u = unrolled[0] if len(unrolled) == 1 and len(listed) == 1 else None
        if not u or int(u.group(1)) != case["T"] or not u.group(4) or int(u.group(2)) < case["T"] * int(u.group(3)) // 2:
            return report("fallback/" + name, False, "expected one traced loop of %d steps left unrolled, with its "
                          "size and the node where two steps differ; listed: %s" % (case["T"], listed))
        if rc != 2 or "error: a traced loop of %d steps" % case["T"] not in err:
            return report("fallback/" + name, False, "info --werror-fallback: exit %d, expected 2 with the error" % rc)
        tmp = tempfile.mkdtemp(prefix="cellc_trace_")
        try:
            rc1, _, err1 = run([cellc, "compile", model, "-o", os.path.join(tmp, "warn"), "--name", "m"])
            rc2, _, err2 = run([cellc, "compile", model, "-o", os.path.join(tmp, "err"), "--name", "m",
                                "--werror-fallback"])
            wrote = os.path.exists(os.path.join(tmp, "err", "m.c"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        if rc1 != 0 or "warning: " + listed[0] not in err1:
            return report("fallback/" + name, False, "compile: exit %d, expected 0 with the warning: %s" % (
                rc1, err1.strip()[:200]))
        if rc2 != 2 or wrote or "error: " + listed[0] not in err2:
            return report("fallback/" + name, False, "compile --werror-fallback: exit %d%s, expected 2 and no "
                          "files" % (rc2, ", wrote m.c" if wrote else ""))
        rc3, _, err3 = run([cellc, "verify", model, "--data", case_dir, "--werror-fallback"])
        if rc3 != 2 or "error: " + listed[0] not in err3:
            return report("fallback/" + name, False, "verify --werror-fallback: exit %d, expected 2 with the "
                          "error" % rc3)
        return report("fallback/" + name, True, listed[0][:160])
    if unrolled:
        return report("fallback/" + name, False, "a rolled loop listed as unrolled: %s" % unrolled[0].group(0))
    if not case["symbolic_time"]:
        ok = len(fixed) == 1 and len(listed) == 1 and rc == 2
        return report("fallback/" + name, ok, "exit %d, %s" % (rc, listed[:1]) if not ok else fixed[0][:160])
    ok = not listed and rc == 0
    return report("fallback/" + name, ok, "" if ok else "exit %d, unexpected fallbacks %s" % (rc, listed))


def check_info(cellc, case_dir, name):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    if case.get("expect") == "error":
        return check_error(cellc, case_dir, name)
    if case.get("expect") == "unrolled":
        rc, out, err = run([cellc, "info", os.path.join(case_dir, "model.onnx")])
        n = sum(1 for l in out.splitlines() if l.strip().startswith("recurrence over"))
        return report("unrolled/" + name, rc == 0 and n == 0,
                      "exit %d, %d recurrences (expected none)" % (rc, n))
    rc, out, err = run([cellc, "info", os.path.join(case_dir, "model.onnx")])
    if rc != 0:
        return report("info/" + name, False, "exit %d: %s" % (rc, err.strip()[:200]))
    lines = [l.strip() for l in out.splitlines() if l.strip().startswith("recurrence over")]
    if len(lines) != 1:
        return report("info/" + name, False, "%d 'recurrence over' lines, expected 1" % len(lines))
    line = lines[0]
    cell = case["cell"]
    if case["symbolic_time"] or (case.get("fixed_outputs") and not case.get("table")):
        want = "cell %s, hidden %d" % (cell, case["hidden"])
    else:
        # NAG traced over fewer steps than its restart period: the schedule
        # is a table and the period unknown
        want = "cell %s(s=" % cell.split("(")[0]
    if want not in line:
        return report("info/" + name, False, "%r lacks %r" % (line, want))
    symbolic = "any length" in line
    if symbolic != case["symbolic_time"]:
        return report("info/" + name, False, "time axis %s, expected %s: %r" % (
            "symbolic" if symbolic else "fixed", "symbolic" if case["symbolic_time"] else "fixed", line))
    if not symbolic and "T stays %d" % case["T"] not in out:
        return report("info/" + name, False, "no note saying why T stays fixed")
    if "T=%d steps" % case["T"] not in line and not symbolic:
        return report("info/" + name, False, "%r does not give T=%d" % (line, case["T"]))
    if case.get("fixed_outputs") and "%d separate outputs" % case["fixed_outputs"] not in out:
        return report("info/" + name, False, "no note naming the %d separate outputs" % case["fixed_outputs"])
    return report("info/" + name, True, line)


def code_size(cellc, model):
    """Bytes of the emitted C and header without comments, and compile time."""
    tmp = tempfile.mkdtemp(prefix="cellc_trace_")
    try:
        t0 = time.time()
        rc, out, err = run([cellc, "compile", model, "-o", tmp, "--name", "m"])
        took = time.time() - t0
        if rc != 0:
            return None, took, err.strip()[:200]
        text = ""
        for f in ("m.c", "m.h"):
            with open(os.path.join(tmp, f)) as fh:
                text += fh.read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        # names are data, not code (the exporter numbers them by graph size)
        text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', text)
        # ... and so are the instance members named after tensors and states,
        # and the workspace parts named after what they hold (emit_slot_name)
        text = re.sub(r"\b(w|st|rec|ws)_\w+", r"\1_", text)
        # ... and the members of the workspace structs (ws->h1_h_seq,
        # .Gemm17 = ..., float *Gemm17;), which are filled and laid out
        # several to a line as their names' lengths allow: whitespace is
        # not code either
        text = re.sub(r"\bws->\w+", "ws->", text)
        text = re.sub(r"\.\w+ = ", ". = ", text)
        text = re.sub(r"\*\w+;", "*;", text)
        text = re.sub(r"\s+", " ", text)
        return len(text), took, ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_size(cellc, name, short, longer, extra_outputs=0, short_T=8):
    """size/NAME; returns (passed, compile time of the longer trace)."""
    a, _, ea = code_size(cellc, short)
    b, took, eb = code_size(cellc, longer)
    if a is None or b is None:
        return report("size/" + name, False, "compile failed: %s" % (ea or eb)), took
    allowed = extra_outputs * OUTPUT_BYTES
    return report("size/" + name, b <= a + allowed, "%d bytes of code for the longer trace, %d for T = %d%s "
                  "(compile %.2f s)" % (b, a, short_T, " + %d allowed for %d more outputs" % (allowed, extra_outputs)
                                        if extra_outputs else "", took)), took


def check_long(cellc, long_dir):
    """long/MODEL_T784: info and size of every 784-step trace in LONG_DIR."""
    names = sorted(d for d in os.listdir(long_dir) if os.path.isdir(os.path.join(long_dir, d)))
    longs = [n for n in names if n.endswith("_T784")]
    if not longs:
        return report("long", False, "no *_T784 case in %s" % long_dir)
    ok = True
    for n in longs:
        prefix = n[:-len("_T784")]                      # MODEL_opset13
        name = "long/%s_T784" % prefix.rsplit("_opset", 1)[0]
        ok &= check_info(cellc, os.path.join(long_dir, n), name)
        ok &= check_fallback(cellc, os.path.join(long_dir, n), name)
        twins = [t for t in names if re.fullmatch(re.escape(prefix) + r"_T\d+_mnist", t)]
        if len(twins) != 1:
            ok &= report("size/" + name, False, "%d short twins %s_TK_mnist, expected 1" % (len(twins), prefix))
            continue
        cases = []
        for d in (twins[0], n):
            with open(os.path.join(long_dir, d, "case.json")) as f:
                cases.append(json.load(f))
        if cases[0]["symbolic_time"] != cases[1]["symbolic_time"]:
            ok &= report("size/" + name, False, "%s and %s differ in symbolic_time: not the same program" % (
                twins[0], n))
            continue
        passed, took = check_size(cellc, name, os.path.join(long_dir, twins[0], "model.onnx"),
                                  os.path.join(long_dir, n, "model.onnx"), short_T=cases[0]["T"])
        ok &= passed
        print("# compile time of %s: %.2f s" % (n, took))
    return ok


def main():
    args = sys.argv[1:]
    forms = "--forms" in args
    args = [a for a in args if a != "--forms"]
    if len(args) not in (2, 3) or (forms and len(args) != 2):
        sys.exit(__doc__)
    cellc, trace = args[0], args[1]
    ok = True
    cases = sorted(d for d in os.listdir(trace) if os.path.isdir(os.path.join(trace, d)))
    for c in cases:
        ok &= check_info(cellc, os.path.join(trace, c), c)
        with open(os.path.join(trace, c, "case.json")) as f:
            if json.load(f).get("expect") != "error":
                ok &= check_fallback(cellc, os.path.join(trace, c), c)
    models = sorted({c.rsplit("_T", 1)[0] for c in cases})
    for m in models:
        short = os.path.join(trace, m + "_T8", "model.onnx")
        longer = os.path.join(trace, m + "_T64", "model.onnx")
        with open(os.path.join(trace, m + "_T8", "case.json")) as f:
            case = json.load(f)
        if case.get("expect") in ("error", "unrolled"):
            continue
        same_form = case["symbolic_time"]   # else T = 8 keeps a table
        if not forms and not same_form:
            continue
        if os.path.exists(short) and os.path.exists(longer):
            extra = case["fixed_outputs"] // 8 * (64 - 8) if case.get("fixed_outputs") else 0
            ok &= check_size(cellc, m, short, longer, extra)[0]
        elif forms and case["form"] != "revlist":    # revlist: T = 8 only
            ok &= report("size/" + m, False, "the T = 64 case is missing")
    if len(args) == 3:
        ok &= check_long(cellc, args[2])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
