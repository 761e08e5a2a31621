"""test_cell_format.py: the native .cell format (compiler/cell/txt_*.c), harness
group "cell_format".  Prints one PASS/FAIL line per test; exit 1 on failure.

  roundtrip   `cellc dump X --after P` for P in load..schedule, parsed back and
              printed again (`--after load`): the text must be identical, for
              every examples/*.cell and for ONNX models of tests/out (PyTorch
              exports, traced loops, rnn_cases, the official LSTM/GRU/RNN node
              tests, FLOAT16 casts, NonZero)
  reinfer     the FLOAT16 casts dumped as loaded infer as the models do
  train_names a --train build dumped after grad and compiled again: its
              backward loops' values have the names of the direct
              compilation's (g_h1_c_next: pass_grad's grad_of and
              recomputes, printed and read back)
  errors      malformed .cell files: exit 2, the expected message at
              FILE:LINE:COL, the source line and a caret under the column
  fuzz        random truncations and byte mutations of the examples (and of
              a dump) under build-san/cellc: exit 0 or 2, no sanitizer report,
              no crash (fixed seed)

With CELLC_TEST_SAMPLE=K (make check-quick) it round-trips 2K of the models
and runs 4K of the fuzz cases, spread over their lists.

usage: test_cell_format.py CELLC CELLC_SAN OUTDIR   (run with /usr/bin/python3: onnx)
"""
import glob
import os
import shutil
import random
import re
import subprocess
import sys

CELLC, CELLC_SAN, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
PASSES = ["load", "infer", "lower", "hoist", "fuse", "plan", "schedule"]
SAN_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
SAN_MARKERS = ("runtime error", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")
SAMPLE = int(os.environ.get("CELLC_TEST_SAMPLE", "0") or 0)
failed = 0


def spread(items, k):
    """k of items spread evenly over the list, its first and last among them
    (all of them when k is 0 or the list no longer)."""
    if not k or len(items) <= k:
        return items
    if k == 1:
        return items[:1]
    return [items[i * (len(items) - 1) // (k - 1)] for i in range(k)]


def report(name, ok, detail=""):
    global failed
    failed += not ok
    print("%s cell_format/%s %s" % ("PASS" if ok else "FAIL", name, detail))


def run(cmd, env=None, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


ELIDED = re.compile(r"elided fnv1a:[0-9a-f]{16}")


def body(text):
    """The dump without its first line ('# IR after PASS').  Constants the
    printer elided (more than 32 elements) come back as zeros (with a
    warning), so their hashes are not compared."""
    text = text.split("\n", 1)[1] if "\n" in text else ""
    return ELIDED.sub("elided", text)


# ---- round trips ----------------------------------------------------------

def binds(model):
    """--bind options for the official node tests, whose weights are graph
    inputs: W, R, B, P from test_data_set_0 (lowering needs them constant)."""
    if "onnx_node" not in model:
        return []
    import onnx
    g = onnx.load(model).graph
    init = {t.name for t in g.initializer}
    names = [i.name for i in g.input if i.name not in init]
    d = os.path.join(os.path.dirname(model), "test_data_set_0")
    out = []
    for k, n in enumerate(names):
        if n in ("W", "R", "B", "P") and os.path.exists(os.path.join(d, "input_%d.pb" % k)):
            out += ["--bind", "%s=%s" % (n, os.path.join(d, "input_%d.pb" % k))]
    return out


def roundtrip(name, model):
    bad = []
    bind = binds(model)
    for p in PASSES:
        rc, out, err = run([CELLC, "dump", model, "--after", p] + bind)
        if rc != 0:
            bad.append("%s: dump exit %d: %s" % (p, rc, err.strip()[:200]))
            continue
        path = os.path.join(OUT, "%s.%s.cell" % (name.replace("/", "_"), p))
        with open(path, "w") as f:
            f.write(out)
        rc2, out2, err2 = run([CELLC, "dump", path, "--after", "load"])
        if rc2 != 0:
            bad.append("%s: re-read exit %d: %s" % (p, rc2, err2.strip()[:200]))
        elif body(out2) != body(out):
            a, b = body(out).splitlines(), body(out2).splitlines()
            k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
            bad.append("%s: line %d differs: %r vs %r" % (p, k + 2, a[k] if k < len(a) else "",
                                                           b[k] if k < len(b) else ""))
    report("roundtrip/" + name, not bad, "; ".join(bad)[:400])


def reinfer(name, model):
    """A model dumped as loaded and read back infers to what the model
    infers to: what inference decides from (an input standing for a
    FLOAT16 tensor, ` narrow f16`, makes CastLike round to float16) is in
    the text."""
    rc, out, err = run([CELLC, "dump", model, "--after", "load"])
    path = os.path.join(OUT, "%s.load.cell" % name.replace("/", "_"))
    with open(path, "w") as f:
        f.write(out)
    rc1, want, e1 = run([CELLC, "dump", model, "--after", "infer"])
    rc2, got, e2 = run([CELLC, "dump", path, "--after", "infer"])
    a, b = body(want).splitlines(), body(got).splitlines()
    k = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    ok = rc == rc1 == rc2 == 0 and a == b
    report("reinfer/" + name, ok, "" if ok else "exit %d, %d, %d; line %d: %r vs %r" %
           (rc, rc1, rc2, k + 2, a[k] if k < len(a) else "", b[k] if k < len(b) else ""))


def strip_comments(c_text):
    """C text without comments, provenance lines and blank lines (a graph read
    back from a dump lost the origins that only comments show)."""
    c_text = re.sub(r"/\*.*?\*/", "", c_text, flags=re.S)
    return "\n".join(l.rstrip() for l in c_text.splitlines() if l.strip())


def train_api(d):
    """What a training build's emitter takes from the train record: the
    header without comments, NAME_TRAIN_INFO, the parameter table of
    m_param and where the backward part starts (m->fwd_only)."""
    with open(os.path.join(d, "m.h")) as f:
        h = strip_comments(f.read())
    with open(os.path.join(d, "m.c")) as f:
        c = strip_comments(f.read())
    fn = re.search(r"int m_param\(.*?\n}", c, re.S)
    return [h, [l for l in c.splitlines() if "TRAIN_INFO" in l or "fwd_only" in l], fn.group(0) if fn else None]


def train_roundtrip(name, model, loss):
    """A training build's dump read back compiles to the same training API:
    the train line, the param marks and the backward annotation carry
    everything the emitter reads of it.  (The step code itself may differ:
    the passes run again over the read-back graph and may merge what the
    first run left, e.g. the two equal products of d(x*x).)"""
    rc, out, err = run([CELLC, "dump", model, "--train", "--loss", loss])
    if rc != 0:
        report("train_roundtrip/" + name, False, "dump --train exit %d: %s" % (rc, err.strip()[:200]))
        return
    path = os.path.join(OUT, "%s.train.cell" % name)
    with open(path, "w") as f:
        f.write(out)
    got = {}
    for tag, src, opts in (("direct", model, ["--train", "--loss", loss]), ("dump", path, [])):
        d = os.path.join(OUT, "%s.train.%s" % (name, tag))
        shutil.rmtree(d, ignore_errors=True)
        rc, o, e = run([CELLC, "compile", src, "-o", d, "--name", "m"] + opts)
        if rc != 0:
            report("train_roundtrip/" + name, False, "compile of the %s exit %d: %s" % (tag, rc, e.strip()[:200]))
            return
        got[tag] = train_api(d)
    parts = ("the header", "TRAIN_INFO and the backward's start", "m_param")
    diff = [parts[i] for i in range(3) if got["direct"][i] != got["dump"][i]]
    ok = not diff and got["dump"][2] is not None and any("TRAIN_INFO =" in l for l in got["dump"][1])
    report("train_roundtrip/" + name, ok,
           "the dump of the --train build compiles to the same training API" if ok else
           "the read-back dump differs in: %s" % ", ".join(diff or ["(no training API)"]))


def backward_names(path):
    """The locals of the backward time loops (rec_*backward* in m.c) that
    pass_grad's links name (reg_name, emit_rec.c): g_h1_c_next, the
    gradient of h1.c_next, and h1_c_next, a value the step recomputes;
    numbered ones (v12, g_v4) aside, which count the values of a graph."""
    with open(path) as f:
        c = f.read()
    names = set()
    for m in re.finditer(r"^static int rec_\w*backward\w*\(.*?^}", c, re.S | re.M):
        for d in re.finditer(r"\bconst float (\w+) =", re.sub(r"/\*.*?\*/", "", m.group(0), flags=re.S)):
            if not re.fullmatch(r"(g_)?v\d+", d.group(1)):
                names.add(d.group(1))
    return names


def train_names(name, model, loss):
    """A training build dumped after grad and compiled again names the
    backward loops' values as the direct compilation does: the dump prints
    which forward value each gradient is of and which one each recomputed
    value is (` grad_of %G %V`, ` recomputes %R %V`) and the text reads
    them back."""
    rc, out, err = run([CELLC, "dump", model, "--after", "grad", "--train", "--loss", loss])
    if rc != 0:
        report("train_names/" + name, False, "dump --after grad exit %d: %s" % (rc, err.strip()[:200]))
        return
    path = os.path.join(OUT, "%s.grad.cell" % name)
    with open(path, "w") as f:
        f.write(out)
    rc, again, err = run([CELLC, "dump", path, "--after", "load"])
    if rc != 0 or body(again) != body(out):
        report("train_names/" + name, False, "the dump after grad does not read back to the same text (exit %d)%s"
               % (rc, ": " + err.strip()[:200] if rc else ""))
        return
    got = {}
    for tag, src, opts in (("direct", model, ["--train", "--loss", loss]), ("dump", path, [])):
        d = os.path.join(OUT, "%s.names.%s" % (name, tag))
        shutil.rmtree(d, ignore_errors=True)
        rc, o, e = run([CELLC, "compile", src, "-o", d, "--name", "m"] + opts)
        if rc != 0:
            report("train_names/" + name, False, "compile of the %s exit %d: %s" % (tag, rc, e.strip()[:200]))
            return
        got[tag] = backward_names(os.path.join(d, "m.c"))
    a, b = got["direct"], got["dump"]
    ok = a == b and any(n.startswith("g_") for n in a)
    report("train_names/" + name, ok, "%d names of the backward loops, %d gradients (g_...)" %
           (len(a), sum(n.startswith("g_") for n in a)) if ok else
           "direct only: %s; dump only: %s" % (" ".join(sorted(a - b)) or "-", " ".join(sorted(b - a)) or "-"))


def roundtrips():
    models = [(os.path.basename(f), f) for f in sorted(glob.glob("examples/*.cell"))]
    if len(models) < 3:
        report("roundtrip/examples", False, "expected at least 3 examples/*.cell")
    for d in sorted(glob.glob("tests/out/torch/*/model.onnx"))[:12]:
        models.append(("torch/" + d.split("/")[-2], d))
    # traced loops re-rolled into recurrences: their dumps hold made-up names
    # (%t32) that a constant made while reading took before (fuzz_cell)
    for d in sorted(glob.glob("tests/out/trace/*_opset14_T8/model.onnx"))[:6]:
        models.append(("trace/" + d.split("/")[-2], d))
    # a traced loop left unrolled: its `unrolled` line (a fallback) reads back
    for d in sorted(glob.glob("tests/out/trace_forms/uneven_*_opset14_T8/model.onnx"))[:1]:
        models.append(("trace_forms/" + d.split("/")[-2], d))
    for d in sorted(glob.glob("tests/out/rnn_cases/*/model.onnx"))[:8]:
        models.append(("rnn_cases/" + d.split("/")[-2], d))
    node = sorted(glob.glob("tests/out/onnx_node/node/test_lstm_*/model.onnx") +
                  glob.glob("tests/out/onnx_node/node/test_gru_*/model.onnx") +
                  glob.glob("tests/out/onnx_node/node/test_rnn_*/model.onnx") +
                  glob.glob("tests/out/onnx_node/node/test_simple_rnn_*/model.onnx"))
    for d in node:
        models.append(("onnx_node/" + d.split("/")[-2], d))
    # f32 values standing for FLOAT16 tensors (` narrow f16`: the CastLike
    # they decide), lengths the data decide (the annotation's
    # `data-dependent axis A <= N`)
    narrow = []
    for d in ("test_castlike_DOUBLE_to_FLOAT16", "test_cast_FLOAT16_to_FLOAT", "test_nonzero_example"):
        if os.path.exists("tests/out/onnx_node/node/%s/model.onnx" % d):
            models.append(("onnx_node/" + d, "tests/out/onnx_node/node/%s/model.onnx" % d))
            narrow += models[-1:] if "16" in d else []
    # size expressions of each kind on the symbols line (a Resize's scale(W, 1.3), a
    # ConvTranspose's output_shape over a run-time length) read back after every pass
    for d in ("resize_scale", "convt_output_shape", "size_sums", "slice_tail_min"):
        models.append(("ir/infer/" + d, "tests/ir/infer/%s/input.cell" % d))
    # the ODE block and hybrid: their solver settings as attributes
    for d in ("ode_block", "ode_rnn"):
        models.append(("ir/cells/" + d, "tests/ir/cells/%s/input.cell" % d))
    if len(models) < 10:
        report("roundtrip/models", False, "fixtures missing: only %d models" % len(models))
    for name, m in spread(models, 2 * SAMPLE):
        roundtrip(name, m)
    for name, m, loss in (("fashion_lstm", "examples/fashion_lstm.cell", "ce"),
                          ("fashion_momentum_lstm", "examples/fashion_momentum_lstm.cell", "ce"),
                          ("stacked_mse", "examples/stacked.cell", "mse")):
        train_roundtrip(name, m, loss)
    for name, m in narrow:
        reinfer(name, m)
    for name, m, loss in (("fashion_lstm", "examples/fashion_lstm.cell", "ce"),
                          ("stacked_mse", "examples/stacked.cell", "mse"),
                          ("grad_links", "tests/ir/grad/links/input.cell", "ce")):
        train_names(name, m, loss)


# ---- located errors ----------------------------------------------------------

HEAD = "model m {\n    input x: f32[seq, batch, 4]\n"
ERRORS = [
    # (name, text, [(line, col, message substring)])
    ("unknown_cell", HEAD + "    h = lstmm(x, hidden=8)\n    output h\n}\n",
     [(3, 9, "unknown cell or function 'lstmm'")]),
    ("unknown_option", HEAD + "    h = lstm(x, hidden=8, mu=0.5)\n    output h\n}\n",
     [(3, 27, "mu")]),
    ("missing_hidden", HEAD + "    h = momentum_lstm(x, mu=0.5)\n    output h\n}\n",
     [(3, 9, "hidden")]),
    ("bad_value", HEAD + "    h = lstm(x, hidden=8, init=nonsense)\n    output h\n}\n",
     [(3, 27, "init")]),
    ("trailing_tokens", HEAD + "    h = lstm(x, hidden=8) extra\n    g = gru(x, hidden=0.5)\n"
     "    output h\n}\n", [(3, 27, "expected the end of the line"), (4, 16, "hidden")]),
    ("undefined_value", HEAD + "    y = linear(last(q), out=3)\n    output y\n}\n",
     [(3, 21, "'q' is not defined")]),
    ("last_of_last", HEAD + "    h = lstm(x, hidden=8)\n    y = linear(last(last(h)), out=2)\n"
     "    output y\n}\n", [(4, 16, "last() needs a sequence")]),
    ("unterminated_string", HEAD + "    weights \"w.weights\n    output x\n}\n",
     [(3, 13, "unterminated string")]),
    ("bad_char", HEAD + "    h = lstm(x, hidden=8) $\n    output h\n}\n",
     [(3, 27, "unexpected character '$'")]),
    ("no_output", HEAD + "    h = lstm(x, hidden=8)\n}\n", [(4, 1, "no 'output' line")]),
    ("missing_weights_file", HEAD.replace("\n", "\n    weights \"nonexistent.weights\"\n", 1) +
     "    output x\n}\n", [(2, 13, "cannot read weights file")]),
    ("builtin_name", "cell lstm(x; h) {\n    h' = x\n}\n" + HEAD + "    output x\n}\n",
     [(1, 6, "name of a built-in cell")]),
    ("gemm_shape", "cell c1(x; h) {\n    param W[H, I], U[H, H]\n    h' = tanh(W @ x + U @ x)\n}\n"
     + HEAD + "    h = c1(x, hidden=8)\n    output h\n}\n", [(3, 25, "'h.U' is [8, 8]")]),
    ("elementwise_shape", "cell c2(x; h) {\n    param W[H, I]\n    h' = W @ x + x\n}\n"
     + HEAD + "    h = c2(x, hidden=8)\n    output h\n}\n", [(3, 16, "operands of '+' do not match")]),
    ("state_shape", "cell c3(x; h, v[2*H]) {\n    param W[H, I]\n    v' = W @ x\n    h' = v'\n}\n"
     + HEAD + "    h = c3(x, hidden=8)\n    output h\n}\n", [(3, 8, "state v is [B, 16]")]),
    ("split_parts", "cell c4(x; h) {\n    param W[3*H, I]\n    a, b = split(W @ x, 3)\n"
     "    h' = a\n}\n" + HEAD + "    h = c4(x, hidden=8)\n    output h\n}\n",
     [(3, 12, "split into 3 parts assigned to 2 names")]),
    ("cell_unknown_option", "cell c5(x; h) {\n    option mu = 0.5\n    param W[H, I]\n"
     "    h' = mu * (W @ x)\n}\n" + HEAD + "    h = c5(x, hidden=8, nu=1)\n    output h\n}\n",
     [(8, 25, "cell 'c5' has no option 'nu'")]),
    ("state_never_set", "cell c6(x; h, c) {\n    param W[H, I]\n    h' = W @ x\n}\n"
     + HEAD + "    h = c6(x, hidden=8)\n    output h\n}\n", [(4, 1, "state c of cell 'c6' never")]),
    ("graph_unknown_op", "graph g {\n\topset 17\n\tinput %x: f32[2]\n\t%y = Frob(%x)\n\toutput %y\n}\n",
     [(4, 7, "unknown operation 'Frob'")]),
    ("graph_undefined", "graph g {\n\topset 17\n\tinput %x: f32[2]\n\t%y = Relu(%z)\n\toutput %y\n}\n",
     [(4, 12, "'%z' is not defined")]),
    ("graph_bad_symbol", "graph g {\n\topset 17\n\tinput %x: f32[n, 2]\n\toutput %x\n}\n",
     [(3, 16, "unknown dimension symbol 'n'")]),
    ("graph_const_count", "graph g {\n\tconst %c: i64[3] = [1, 2]\n\toutput %c\n}\n",
     [(2, 26, "expected ','")]),
    ("graph_arity", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x, %x)\n\toutput %y\n}\n",
     [(3, 7, "Relu takes 1 to 1 inputs")]),
    ("graph_bad_role", "graph g {\n\topset 17\n\tinput %x: f32[2] role frob\n\toutput %x\n}\n",
     [(3, 24, "expected a role after 'role'")]),
    ("graph_role_not_output", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x) role %x trace_steps\n"
     "\toutput %y\n}\n", [(3, 21, "expected an output of this node")]),
    ("graph_role_misplaced", "graph g {\n\tinput %x: f32[2] role trace_steps\n\t%y = Relu(%x)\n"
     "\toutput %y\n}\n", [(2, 19, "role trace_steps marks the result of a Slice")]),
    ("graph_link_not_output", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x) grad_of %x %x\n"
     "\toutput %y\n}\n", [(3, 24, "expected an output of this node (%name) after 'grad_of'")]),
    ("graph_link_undefined", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x) grad_of %y %z\n"
     "\toutput %y\n}\n", [(3, 27, "'grad_of' names '%z', which no line of the graph defines")]),
    ("graph_link_self", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x) grad_of %y %y\n"
     "\toutput %y\n}\n", [(3, 27, "'%y' cannot be the gradient of itself")]),
    ("graph_recomputes_root", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x) recomputes %y %x\n"
     "\toutput %y\n}\n", [(3, 16, "'recomputes' marks a value of a backward recurrence's body")]),
    ("graph_narrow_not_f32", "graph g {\n\tinput %x: i64[2] narrow f16\n\toutput %x\n}\n",
     [(2, 19, "'narrow' marks an f32 value")]),
    ("graph_narrow_bad", "graph g {\n\tinput %x: f32[2] narrow f64\n\toutput %x\n}\n",
     [(2, 26, "expected f16 or bf16 after 'narrow'")]),
    ("graph_sizes_no_eq", "graph g {\n\tsizes \"b\" 3, node \"n\", why \"w\"\n\toutput\n}\n",
     [(2, 12, "expected '=' or '>=' after the symbol's name")]),
    ("graph_sizes_zero", "graph g {\n\tsizes \"b\" = 0, node \"n\", why \"w\"\n\toutput\n}\n",
     [(2, 14, "size 0 out of range")]),
    ("graph_sizes_no_why", "graph g {\n\tsizes \"b\" = \"a\", node \"n\"\n\toutput\n}\n",
     [(3, 2, "then node \"NAME\" and why")]),
    ("graph_sizes_declared", "graph g {\n\tsymbols b\n\tsizes \"b\" = 2, node \"n\", why \"w\"\n"
     "\tinput %x: f32[b]\n\toutput %x\n}\n", [(3, 2, "'b' was made one with another size")]),
    ("graph_sizes_least_undeclared", "graph g {\n\tsymbols b\n\tsizes \"b\" >= 4, node \"n\", why \"w\"\n"
     "\tinput %x: f32[b]\n\toutput %x\n}\n", [(3, 2, "'b' >= 4 needs a free symbol that 'symbols' declares with a "
                                           "least value of at least 4")]),
    ("graph_sizes_least_symbol", "graph g {\n\tsymbols b >= 4\n\tsizes \"b\" >= \"a\", node \"n\", why \"w\"\n"
     "\tinput %x: f32[b]\n\toutput %x\n}\n", [(3, 15, "'>=' takes the least value, a number")]),
    ("graph_value_not_name", "graph g {\n\tsymbols n = value n\n\tinput %n: i64[]\n\toutput %n\n}\n",
     [(2, 20, "symbol 'n' = value: expected the input's name (%NAME)")]),
    ("graph_value_f32", "graph g {\n\tsymbols n = value %n\n\tinput %n: f32[]\n\toutput %n\n}\n",
     [(2, 20, "symbol 'n' = value %n: that must be an input of the graph of type i64[], i64[1], i32[] or i32[1], not f32")]),
    ("graph_value_missing", "graph g {\n\tsymbols n = value %m\n\tinput %n: i64[]\n\toutput %n\n}\n",
     [(2, 20, "that must be an input of the graph of type i64[], i64[1], i32[] or i32[1] (there is none)")]),
    ("graph_value_read", "graph g {\n\tsymbols n = value %n\n\tinput %n: i64[]\n\t%y = Neg(%n)\n"
     "\toutput %y\n}\n", [(2, 20, "node '%Neg")]),
    # a Resize's size scale(x, s) (ir_symdef IR_SYM_SCALE): a multiple of 1/64 is the floor, s > 0
    ("graph_scale_dyadic", "graph g {\n\tsymbols T, U = scale(T, 0.5)\n\tinput %x: f32[T, U]\n\toutput %x\n}\n",
     [(2, 13, "symbol 'U': not in canonical form: a scale that is a multiple of 1/64 makes a floor")]),
    ("graph_scale_zero", "graph g {\n\tsymbols T, U = scale(T, 0)\n\tinput %x: f32[T, U]\n\toutput %x\n}\n",
     [(2, 26, "symbol 'U': scale(x, s) wants a positive finite float32 s")]),
    ("graph_source_not_recurrence", "graph g {\n\tinput %x: f32[2]\n\t%y = Relu(%x) source onnx_loop\n"
     "\toutput %y\n}\n", [(3, 16, "Relu has no source")]),
]


def errors():
    for name, text, want in ERRORS:
        path = os.path.join(OUT, "err_%s.cell" % name)
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = run([CELLC, "dump", path])
        bad = []
        if rc != 2:
            bad.append("exit %d, expected 2" % rc)
        lines = err.splitlines()
        src = text.splitlines()
        for line, col, sub in want:
            head = "%s:%d:%d: error: " % (path, line, col)
            k = next((i for i, l in enumerate(lines) if l.startswith(head) and sub in l), None)
            if k is None:
                bad.append("no '%s...%s' in: %s" % (head, sub, " | ".join(lines[:6])[:300]))
                continue
            # the source line, then the caret under the column
            want_src = "  " + (src[line - 1] if line <= len(src) else "")
            if k + 2 >= len(lines) or lines[k + 1] != want_src:
                bad.append("source line missing after %s" % head)
            elif lines[k + 2] != "  " + " " * (col - 1) + "^":
                bad.append("caret not at column %d: %r" % (col, lines[k + 2]))
        report("errors/" + name, not bad, "; ".join(bad)[:400])


# ---- fuzz -----------------------------------------------------------------------

def fuzz():
    rng = random.Random(20261121)
    seeds = []
    for f in sorted(glob.glob("examples/*.cell")):
        with open(f, "rb") as fh:
            seeds.append(fh.read())
    rc, out, err = run([CELLC, "dump", "examples/my_cell.cell", "--after", "plan"])
    if rc == 0:
        seeds.append(out.encode())
    if not seeds:
        report("fuzz/seeds", False, "no examples")
        return
    alphabet = b"(){}[],:;=+-*/@?%\"'#\\\n\t _ax0123456789.eE\x00\xff"
    cases = []
    for i in range(48):
        s = bytearray(rng.choice(seeds))
        kind = i % 4
        if kind == 0:
            s = s[:rng.randrange(len(s) + 1)]
        else:
            for _ in range(rng.randint(1, 6)):
                p = rng.randrange(len(s) + 1)
                if kind == 1:
                    s[p:p + 1] = bytes([rng.choice(alphabet)])
                elif kind == 2:
                    del s[p:p + rng.randint(1, 12)]
                else:
                    q = rng.randrange(len(s) + 1)
                    s[p:p] = s[q:q + rng.randint(1, 40)]
        cases.append(bytes(s))
    # hostile shapes: deep nesting, huge numbers, long names
    cases.append(b"cell c(x; h) {\n h' = " + b"(" * 5000 + b"x" + b")" * 5000 + b"\n}\n")
    cases.append(b"model m {\n input x: f32[99999999999999999999, 2]\n output x\n}\n")
    cases.append(b"graph g {\n input %x: f32[" + b"1, " * 20 + b"1]\n output %x\n}\n")
    cases.append(b"model " + b"a" * 100000 + b" {\n}\n")
    bad = []
    cases = spread(list(enumerate(cases)), 4 * SAMPLE)     # (the files keep their numbers)
    for i, data in cases:
        path = os.path.join(OUT, "fuzz_%03d.cell" % i)
        with open(path, "wb") as f:
            f.write(data)
        try:
            rc, out, err = run([CELLC_SAN, "dump", path], env=SAN_ENV, timeout=60)
        except subprocess.TimeoutExpired:
            bad.append("%s: timed out" % path)
            continue
        if rc not in (0, 2) or any(m in err for m in SAN_MARKERS):
            bad.append("%s: exit %d %s" % (path, rc, err.strip().splitlines()[-1:] if err.strip() else ""))
    report("fuzz/%d_cases" % len(cases), not bad, "; ".join(map(str, bad))[:600])


def main():
    os.makedirs(OUT, exist_ok=True)
    roundtrips()
    errors()
    fuzz()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
