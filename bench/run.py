"""run.py: `make bench` -- cellc's generated code beside PyTorch and ONNX Runtime.

usage: /usr/bin/python3 bench/run.py          (make bench builds cellc, libcellrt
                                               and onnxruntime-node first)

Measures, in one run on this machine, the time per sequence (T = 784, input 1)
of every case with three implementations:
  cellc    the C that build/cellc emits for the case's ONNX file, built by its
           own Makefile, timed by bench/time_cellc.c (which also measures the
           machine's limits for the case: sgemv/sgemm GFLOP/s and the read
           bandwidth of a buffer the size of the recurrent weights)
           and, in a second build of the same timer (time_cellc_gemm), the rate
           of the recurrent products inside their calls (bench/gemm_time.c)
  ort      ONNX Runtime CPU (onnxruntime-node) on the same ONNX file
  torch    PyTorch 1.13 CPU on the model the file was exported from
and, at batch 1, cellc's builds of the same file with --weights bf16 and
--weights int8 (the "Reduced precision" section: their times, their limits
at 2 and 1 bytes per weight, their outputs against ONNX Runtime's float32
ones), with 1 and 2 threads (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS, ONNX Runtime's
intraOpNumThreads, torch.set_num_threads), and prints the table with the
ratios and the targets of issue 6; writes build/bench/results.csv and
build/bench/results.svg.  It never fails on a slow number: exit status 0
unless something could not be built at all.

Cases (bench/cells.py): nn.LSTM exported to ONNX (`onnx`); MomentumLSTM,
AdamLSTM and SRLSTM as Python-loop cells, exported scripted (`script`: one
ONNX Loop) and, for MomentumLSTM at the largest hidden size, traced
(`trace`: 784 copies of the step).  Exports are kept in build/bench/models
and made again only when bench/cells.py or gen_models.py change.  PyTorch
1.13's ONNX export is quadratic in the length of a traced loop (100 steps
13 s, 200 steps 59 s of CPU; 784 steps 15-20 minutes), so by default
(BENCH_TRACE=auto) a traced case runs only when its export exists and is
otherwise reported n/a; BENCH_TRACE=1 makes the export (once), BENCH_TRACE=0
leaves traced cases out, BENCH_TRACE_ALL=1 traces every custom cell and
size; hidden 128 and
256; batch 1 and 128; and one training step of nn.LSTM and MomentumLSTM at
batch 128, hidden 256 (BENCH_TRAIN_H): forward, cross-entropy on a linear
head over the last step (10 classes), backward, RMSprop update of every
parameter (lr 1e-3).  PyTorch runs cells.train_step; cellc compiles the same
model written as a .cell file (export `cell`: build/bench/cc/train_*/, the
`lstm` / `momentum_lstm` cell, mu 0.6, s 0.6, and `linear(last(h), out=10)`)
with `cellc compile --train --loss ce`, and bench/time_train.c times the
emitted run (loss and gradients) plus rt_optim's RMSprop update, with
flush-to-zero as the emitted training program sets it.  A column that cannot
be measured says why ("n/a (...)"), never a made-up number.

Repetitions (medians; fewer for the slow PyTorch cases), after 0.3 s of
untimed runs (inference; OpenBLAS's idle threads spin for about 0.1 s after
they start): cellc and ONNX Runtime 11 at batch 1 and 5 at batch 128;
PyTorch inference 5 and 3;
PyTorch training 1 (a step takes 10-50 s); cellc training 3 after one
untimed step (BENCH_TRAIN_CELLC_REPS).  Environment knobs:
BENCH_THREADS ("1 2"), BENCH_H ("128 256"), BENCH_B ("1 128"),
BENCH_CELLS ("lstm momentum_lstm adam_lstm sr_lstm"), BENCH_TRAIN (1; 0
skips the training cases), BENCH_TRAIN_REPS (1), BENCH_TRAIN_H ("256"), BENCH_INTERLEAVE (5: rounds of the
interleaved re-timing that the comparison with nn.LSTM uses, see interleave()),
BENCH_TRACE (auto), BENCH_TRACE_ALL (0).
On an idle 2-core machine a whole run takes about 10 minutes, a third of it
the four PyTorch training steps (plus the traced export when it is made).

OpenBLAS: 0.3.21 (Debian 12) does not know some recent CPUs and then falls
back to its generic "Prescott" kernels; the run measures sgemm/sgemv with
the detected kernels and, when they are the generic ones on an AVX-512 or
AVX2 CPU, runs every OpenBLAS user (the cellc column and the limits) with
OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2) instead.  An
OPENBLAS_CORETYPE already in the environment is kept.
"""
import csv
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B_DIR = os.path.join(ROOT, "build", "bench")
MODELS = os.path.join(B_DIR, "models")
CELLC = os.path.join(ROOT, "build", "cellc")
PY = "/usr/bin/python3"
NODE_PATH = os.path.join(ROOT, "build", "ort", "node_modules")
T, I = 784, 1
CELL_NAMES = {"lstm": "nn.LSTM", "momentum_lstm": "MomentumLSTM", "adam_lstm": "AdamLSTM",
              "sr_lstm": "SRLSTM"}


def env_list(name, default):
    return os.environ.get(name, default).split()


THREADS = [int(t) for t in env_list("BENCH_THREADS", "1 2")]
HS = [int(h) for h in env_list("BENCH_H", "128 256")]
BS = [int(b) for b in env_list("BENCH_B", "1 128")]
CELLS = env_list("BENCH_CELLS", "lstm momentum_lstm adam_lstm sr_lstm")
TRAIN = os.environ.get("BENCH_TRAIN", "1") != "0"
TRAIN_REPS = int(os.environ.get("BENCH_TRAIN_REPS", "1"))
TRAIN_HS = [int(h) for h in env_list("BENCH_TRAIN_H", "256")]
TRAIN_CELLC_REPS = int(os.environ.get("BENCH_TRAIN_CELLC_REPS", "3"))
# rounds of the interleaved re-timing behind "within 5% of nn.LSTM" (0: none)
INTERLEAVE_ROUNDS = int(os.environ.get("BENCH_INTERLEAVE", "5"))
TRAIN_CELLS = [c for c in ("lstm", "momentum_lstm") if c in CELLS]
TRACE_ALL = os.environ.get("BENCH_TRACE_ALL", "0") != "0"
TRACE = os.environ.get("BENCH_TRACE", "auto")   # 0, 1 or auto (see the module comment)


def reps_fast(B):
    return 11 if B == 1 else 5


def reps_torch(B):
    return 5 if B == 1 else 3


def log(msg):
    print(msg, flush=True)


def kv(line):
    return dict(re.findall(r"(\w+)=(\S+)", line))


def run(cmd, env=None, timeout=900, cwd=None):
    """(returncode, stdout, stderr); returncode None on a timeout."""
    e = dict(os.environ)
    e.update(env or {})
    try:
        p = subprocess.run(cmd, env=e, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % timeout


def first_line(text, limit=70):
    for ln in text.splitlines():
        ln = ln.strip()
        if ln:
            ln = re.sub(r"^\S*cellc: ", "", ln)
            return ln[:limit]
    return "no message"


# ---- machine ----------------------------------------------------------------

def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("flags"):
                    return set(ln.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def build_c():
    os.makedirs(os.path.join(B_DIR, "out"), exist_ok=True)
    cc = os.environ.get("CC", "cc")
    warn = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wshadow"]
    lim = os.path.join(B_DIR, "limits.o")
    steps = [
        [cc, "-O3", "-march=native"] + warn + ["-c", os.path.join(ROOT, "bench/limits.c"),
                                                "-o", lim],
        [cc, "-O2"] + warn + ["-o", os.path.join(B_DIR, "machine"),
                              os.path.join(ROOT, "bench/machine.c"), lim,
                              "-lopenblas", "-lpthread", "-lm"],
    ]
    for s in steps:
        rc, out, err = run(s)
        if rc != 0:
            sys.exit("bench: cannot build: %s\n%s" % (" ".join(s), err))
    return lim


def machine(threads, coretype):
    env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    cmd = [os.path.join(B_DIR, "machine"), str(threads)]
    for H in HS:
        for B in BS:
            cmd += [str(H), str(B)]
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    else:
        cmd = ["env", "-u", "OPENBLAS_CORETYPE"] + cmd
    rc, out, err = run(cmd, env)
    if rc != 0:
        sys.exit("bench: machine failed: " + err)
    lines = out.splitlines()
    info = kv(lines[0])
    info["limits"] = {}
    for ln in lines[1:]:
        d = kv(ln)
        info["limits"][(int(d["H"]), int(d["B"]))] = d
    return info


def choose_coretype():
    """(coretype or None, report lines) -- see the module comment."""
    preset = os.environ.get("OPENBLAS_CORETYPE")
    auto = machine(1, None)
    flags = cpu_flags()
    want = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
    lines = ["OpenBLAS detects this CPU as %s" % auto["core"]]
    if preset:
        chosen = preset
        lines.append("OPENBLAS_CORETYPE=%s from the environment is used" % preset)
    elif auto["core"] in ("Prescott", "Core2", "Nehalem", "Atom", "Dunnington", "Penryn") and want:
        chosen = want
        lines.append("those are its generic kernels on a CPU with %s: every OpenBLAS user "
                     "here runs with OPENBLAS_CORETYPE=%s" % ("AVX-512" if want == "SkylakeX"
                                                              else "AVX2", want))
    else:
        chosen = None
    forced = machine(1, chosen) if chosen else None
    lines.append("main-memory read bandwidth (1 GiB buffer, 1 thread): %s GB/s" % (
        (forced or auto)["dram_gbs"]))
    for (H, B), d in sorted(auto["limits"].items()):
        what = "sgemv" if B == 1 else "sgemm"
        a = float(d[what + "_gflops"])
        s = "  %s [%d x %d] x [%d]%s, 1 thread: %s %.1f GFLOP/s" % (
            what, B, H, 4 * H, "" if B == 1 else "^T", auto["core"], a)
        if forced:
            f = float(forced["limits"][(H, B)][what + "_gflops"])
            s += ", %s %.1f GFLOP/s (x%.2f)" % (forced["core"], f, f / a if a else float("nan"))
        lines.append(s)
    return chosen, lines


# ---- models -------------------------------------------------------------------

def batches(cell, H, how):
    """The batch sizes a model runs at: the fixture's trace fixes batch 1."""
    return [1] if mname(cell, H, how) in FIXTURE else BS


def model_names():
    names = []
    if TRACE != "0" and "momentum_lstm" in CELLS:
        names.append(("momentum_lstm", 32, "trace"))
    for cell in CELLS:
        for H in HS:
            if cell == "lstm":
                names.append(("lstm", H, "onnx"))
            elif TRACE != "0" and (TRACE_ALL or (cell == "momentum_lstm" and H == max(HS))):
                names += [(cell, H, "trace"), (cell, H, "script")]
            else:
                names.append((cell, H, "script"))
    return names


def mname(cell, H, how):
    return "%s_h%d_%s" % (cell, H, how)


# the committed 784-step traced MomentumLSTM export (tests/gen_trace_cases.py --long:
# input 1, hidden 32, batch 1, a 4-class linear head on every step), timed by default:
# the traced case at the bench's own sizes needs an export of 15-20 minutes
FIXTURE = {mname("momentum_lstm", 32, "trace"): (
    os.path.join(ROOT, "tests", "fixtures", "trace_long", "momentum_lstm.tar.xz"),
    "./momentum_lstm_opset13_T784/model.onnx")}


def torch_key(cell, H, how, B):
    """bench/torch_bench.py's case for a model: the fixture's model is
    tests/ref_momentum.py's (cell "fixture_CELL"), the others bench/cells.py's."""
    if mname(cell, H, how) in FIXTURE:
        cell = "fixture_" + cell
    return "infer:%s:%d:%d:%d:%d" % (cell, H, B, T, reps_torch(B))


def gen_models():
    """Exports every model that is missing or older than its scripts;
    returns {name: export seconds or None} and {name: error}."""
    deps = max(os.path.getmtime(os.path.join(ROOT, "bench", f))
               for f in ("cells.py", "gen_models.py"))
    os.makedirs(MODELS, exist_ok=True)
    todo = []
    for cell, H, how in model_names():
        n = mname(cell, H, how)
        p = os.path.join(MODELS, n + ".onnx")
        src = os.path.getmtime(FIXTURE[n][0]) if n in FIXTURE else deps
        if not os.path.exists(p) or os.path.getmtime(p) < src:
            todo.append(n)
    errors = {}
    for n in [n for n in todo if n in FIXTURE]:
        todo.remove(n)
        archive, member = FIXTURE[n]
        try:
            with tarfile.open(archive) as tf:
                data = tf.extractfile(member).read()
            with open(os.path.join(MODELS, n + ".onnx"), "wb") as f:
                f.write(data)
            log("  %s: %s from %s" % (n, member, os.path.relpath(archive, ROOT)))
        except (OSError, KeyError, tarfile.TarError) as e:
            errors[n] = "cannot read %s: %s" % (os.path.relpath(archive, ROOT), e)
    if TRACE != "1":
        for n in [n for n in todo if n.endswith("_trace")]:
            todo.remove(n)
            errors[n] = ("traced export not made: PyTorch 1.13 takes 15-20 CPU minutes for "
                         "784 steps; `make bench BENCH_TRACE=1` makes it once")
    if todo:
        log("exporting %d ONNX model(s) from PyTorch (a traced 784-step export takes "
            "PyTorch 15-20 CPU minutes; exports are kept in build/bench/models)" % len(todo))
        for n in todo:
            rc, out, err = run([PY, os.path.join(ROOT, "bench/gen_models.py"), MODELS, n],
                               timeout=1800)
            if rc != 0:
                errors[n] = "export failed: " + first_line(err)
            else:
                log("  " + out.strip())
    return errors


def quantize_for_ort():
    """The batch-1 ONNX exports of nn.LSTM (cell "lstm") quantized as ONNX
    Runtime's quantize_dynamic does (tests/gen_quant_cases.py --quantize:
    DynamicQuantizeLSTM, int8 weights): ONNX Runtime's quantized peer of
    cellc's --weights int8.  Returns {name: path}."""
    out = {}
    for cell, H, how in model_names():
        n = mname(cell, H, how)
        src = os.path.join(MODELS, n + ".onnx")
        if cell != "lstm" or how != "onnx" or 1 not in batches(cell, H, how) or not os.path.exists(src):
            continue
        dst = os.path.join(MODELS, n + "_ortq.onnx")
        rc, out_, err = run([PY, os.path.join(ROOT, "tests/gen_quant_cases.py"), "--quantize", src, dst])
        if rc == 0:
            out[n] = dst
        else:
            log("  %s: not quantized for ONNX Runtime: %s" % (n, first_line(err)))
    return out


TRAIN_CELL = {"lstm": "lstm(x, hidden=%d)", "momentum_lstm": "momentum_lstm(x, hidden=%d, mu=0.6, s=0.6)"}


def build_gemm_timer(cmd, timer):
    """The timer of cmd built again as TIMER_gemm, with -DBENCH_GEMM_TIME and
    bench/gemm_time.c wrapping libcellrt's products: the products timed
    inside their calls.  None, or why it does not build."""
    gcmd = cmd[:cmd.index("-o")] + ["-DBENCH_GEMM_TIME", "-o", timer + "_gemm"] + \
        cmd[cmd.index("-o") + 2:] + [os.path.join(ROOT, "bench/gemm_time.c"),
                                     "-Wl,--wrap=rt_sgemm,--wrap=rt_sgemm_bias,--wrap=rt_sgemm_packed,"
                                     "--wrap=rt_gemv_packed,--wrap=rt_gemv_packed_bf16,--wrap=rt_gemv_packed_bf16x,"
                                     "--wrap=rt_gemv_split_bf16,"
                                     "--wrap=rt_gemv_packed_i8,--wrap=rt_gemv_packed_i8q,"
                                     "--wrap=rt_gemv_quant_i8"]
    rc, out, err = run(gcmd)
    return None if rc == 0 else "product timer does not build: " + first_line(err)


def build_cellc_train(cell, H, lim):
    """The training case of cell at hidden size H: writes the .cell model
    (bench/cells.py's model with cells.Classifier's head: a linear layer on
    the last step to 10 classes), compiles it with `cellc compile --train
    --loss ce` and builds bench/time_train.c against it.  Returns (timer
    path, weights path, (compile s, build s), None) or (None, None, None,
    reason)."""
    name = "train_%s_h%d" % (cell, H)
    d = os.path.join(B_DIR, "cc", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    src = os.path.join(d, name + ".cell")
    with open(src, "w") as f:
        f.write("# %s: written by bench/run.py (the training case; bench/cells.py)\n"
                "model %s {\n    input x: f32[seq, batch, %d]\n    seed 0\n"
                "    h = %s\n    y = linear(last(h), out=10)\n    output y\n}\n" % (
                    os.path.basename(src), name, I, TRAIN_CELL[cell] % H))
    t0 = time.time()
    rc, out, err = run([CELLC, "compile", src, "-o", d, "--name", name, "--train", "--loss", "ce"],
                       timeout=600)
    secs = time.time() - t0
    if rc != 0:
        return None, None, None, "cellc --train: " + first_line(err or out)
    t0 = time.time()
    rc, out, err = run(["make", "-s", "-C", d, "lib%s.a" % name], timeout=600)
    secs = (secs, time.time() - t0)
    if rc != 0:
        return None, None, None, "generated code does not build: " + first_line(err)
    timer = os.path.join(d, "time_train")
    cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
           "-Wshadow", "-I" + os.path.join(ROOT, "runtime"), "-I" + os.path.join(ROOT, "bench"),
           "-DCELLC_MODEL=" + name, "-include", os.path.join(d, name + ".h"), "-o", timer,
           os.path.join(ROOT, "bench/time_train.c"), lim, os.path.join(d, "lib%s.a" % name),
           os.path.join(ROOT, "build/libcellrt.a"), "-lopenblas", "-lpthread", "-lm", "-fopenmp"]
    rc, out, err = run(cmd)
    if rc != 0:
        return None, None, None, "timer does not build: " + first_line(err)
    why = build_gemm_timer(cmd, timer)
    if why:
        return None, None, None, why
    return timer, os.path.join(d, name + ".weights"), secs, None


def build_cellc_model(name, lim, weights="f32"):
    """Compiles MODELS/name.onnx with cellc (--weights weights) and builds the
    timer.  Returns (timer path, weights path, (cellc compile seconds, seconds
    to build the generated C with its Makefile), None) or
    (None, None, None, reason)."""
    d = os.path.join(B_DIR, "cc", name + ("" if weights == "f32" else "_" + weights))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    t0 = time.time()
    rc, out, err = run([CELLC, "compile", os.path.join(MODELS, name + ".onnx"), "-o", d,
                        "--name", name, "--weights", weights], timeout=600)
    secs = time.time() - t0
    if rc != 0:
        return None, None, None, "cellc: " + first_line(err or out)
    t0 = time.time()
    rc, out, err = run(["make", "-s", "-C", d], timeout=600)
    secs = (secs, time.time() - t0)
    if rc != 0:
        return None, None, None, "generated code does not build: " + first_line(err)
    timer = os.path.join(d, "time_cellc")
    cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror",
           "-I" + os.path.join(ROOT, "runtime"), "-I" + os.path.join(ROOT, "bench"),
           "-DCELLC_MODEL=" + name, "-include", os.path.join(d, name + ".h"), "-o", timer,
           os.path.join(ROOT, "bench/time_cellc.c"), lim, os.path.join(d, "lib%s.a" % name),
           os.path.join(ROOT, "build/libcellrt.a"), "-lopenblas", "-lpthread", "-lm", "-fopenmp"]
    rc, out, err = run(cmd)
    if rc != 0:
        return None, None, None, "timer does not build: " + first_line(err)
    why = build_gemm_timer(cmd, timer)
    if why:
        return None, None, None, why
    return timer, os.path.join(d, name + ".weights"), secs, None


# ---- the table -------------------------------------------------------------------

def fmt_ms(v):
    if isinstance(v, str):
        return v
    if v >= 1000:
        return "%.2f s" % (v / 1000)
    return "%.2f ms" % v if v >= 10 else "%.3f ms" % v


def ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0:
        return a / b
    return None


LOAD_START = ""


def main():
    global LOAD_START
    LOAD_START = " ".join("%.1f" % v for v in os.getloadavg())
    t_start = time.time()
    if not os.path.exists(CELLC):
        sys.exit("bench: build/cellc is missing (run `make bench`)")
    if not os.path.isdir(os.path.join(NODE_PATH, "onnxruntime-node")):
        sys.exit("bench: onnxruntime-node is missing (run `make ort`)")
    lim = build_c()
    coretype, core_report = choose_coretype()
    blas_env = {"OPENBLAS_CORETYPE": coretype} if coretype else {}
    log("== OpenBLAS and the machine (bench/machine.c)")
    for ln in core_report:
        log(ln)

    export_err = gen_models()
    ortq = quantize_for_ort()
    models = {}
    reduced = {m: {} for m in REDUCED}     # the same models with --weights bf16 / int8, at batch 1
    compile_s = {}
    for cell, H, how in model_names():
        n = mname(cell, H, how)
        if n in export_err:
            models[n] = (None, None, export_err[n])
            continue
        timer, weights, secs, why = build_cellc_model(n, lim)
        models[n] = (timer, weights, why)
        compile_s[n] = secs
        if 1 in batches(cell, H, how):
            for m in REDUCED:
                timer, weights, secs, why = build_cellc_model(n, lim, m)
                reduced[m][n] = (timer, weights, why)
    trainers = {}
    if TRAIN:
        for cell in TRAIN_CELLS:
            for H in TRAIN_HS:
                timer, weights, secs, why = build_cellc_train(cell, H, lim)
                trainers[(cell, H)] = (timer, weights, why)
                compile_s["train_%s_h%d_cell" % (cell, H)] = secs

    rows = []
    for threads in THREADS:
        tenv = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
        tenv.update(blas_env)
        log("== %d thread%s" % (threads, "s" if threads > 1 else ""))
        # PyTorch: one process for every case of this thread count
        tcases = []
        for cell, H, how in model_names():
            for B in batches(cell, H, how):
                key = torch_key(cell, H, how, B)
                if key not in tcases:
                    tcases.append(key)
                if B == 1 and "int8" in REDUCED:
                    tcases.append("q" + key)       # quantize_dynamic's int8 (time_reduced's peer)
        if TRAIN:
            for cell in TRAIN_CELLS:
                for H in TRAIN_HS:
                        tcases.append("train:%s:%d:128:%d:%d" % (cell, H, T, TRAIN_REPS))
        torch_ms = {}
        torch_engine = "?"
        log("  PyTorch: %d cases" % len(tcases))
        rc, out, err = run([PY, os.path.join(ROOT, "bench/torch_bench.py"), str(threads)] + tcases,
                           tenv, timeout=3600)
        for ln in out.splitlines():
            case = ln.split()[0]
            torch_ms[case] = (float(kv(ln)["torch_ms"]), float(kv(ln)["cpu_ms"]))
            torch_engine = kv(ln).get("engine", "?")
        torch_fail = "n/a (PyTorch: %s)" % first_line(err) if rc != 0 else "n/a"

        for cell, H, how in model_names():
            n = mname(cell, H, how)
            timer, weights, why = models[n]
            path = os.path.join(MODELS, n + ".onnx")
            ort = {}
            ort_err = "n/a (ONNX Runtime gave no result)"
            if os.path.exists(path) and n not in export_err:
                rc, out, err = run(["node", os.path.join(ROOT, "bench/ort_bench.js"), path, str(T),
                                    str(I), "5", str(threads)] + [str(b) for b in batches(cell, H, how)],
                                   dict(tenv, NODE_PATH=NODE_PATH,
                                        ORT_BENCH_OUT=os.path.join(B_DIR, "out", n + "_ort")),
                                   timeout=1800)
                for ln in out.splitlines():
                    d = kv(ln)
                    if "B" in d:
                        ort[int(d["B"])] = (float(d["ort_ms"]), float(d["load_s"]),
                                            float(d["cpu_ms"]))
                if rc != 0:
                    ort_err = "n/a (ONNX Runtime: %s)" % (kv(out).get("ort_error") or
                                                          first_line(err))
            ortq_ms = None
            if n in ortq:
                rc, out, err = run(["node", os.path.join(ROOT, "bench/ort_bench.js"), ortq[n], str(T),
                                    str(I), "5", str(threads), "1"],
                                   dict(tenv, NODE_PATH=NODE_PATH), timeout=1800)
                d = kv(out.splitlines()[0]) if rc == 0 and out.strip() else {}
                ortq_ms = float(d["ort_ms"]) if "ort_ms" in d else \
                    "n/a (ONNX Runtime: %s)" % (kv(out).get("ort_error") or first_line(err))
            for B in batches(cell, H, how):
                row = {"mode": "infer", "cell": cell, "export": how, "H": H, "B": B,
                       "threads": threads}
                if B == 1 and ortq_ms is not None:
                    row["ort_int8_ms"] = ortq_ms
                if B in ort:
                    row["ort_ms"], row["ort_load_s"], row["ort_cpu_ms"] = ort[B]
                else:
                    row["ort_ms"] = (ort_err if os.path.exists(path) and n not in export_err
                                     else "n/a (%s)" % export_err.get(n, "no model"))
                key = torch_key(cell, H, how, B)
                row["torch_ms"], row["torch_cpu_ms"] = torch_ms.get(key, (torch_fail, None))
                if B == 1 and "q" + key in torch_ms:
                    row["torch_int8_ms"] = torch_ms["q" + key][0]
                    row["torch_int8_engine"] = torch_engine
                if timer:
                    cmd = [timer, weights, str(T), str(B), str(H), str(reps_fast(B)), str(threads)]
                    mine = os.path.join(B_DIR, "out", "%s_cellc_%d.bin" % (n, B))
                    if B == 1:  # outputs compared at batch 1 (small)
                        cmd.append(mine)
                    rc, out, err = run(cmd, tenv, timeout=1800)
                    if rc == 0:
                        d = kv(out)
                        row["cellc_ms"] = float(d["cellc_ms"])
                        row["cellc_cpu_ms"] = float(d["cpu_ms"])
                        for k in ("sgemv_gflops", "sgemm_gflops", "bw_weights_gbs",
                                  "weights_bytes"):
                            row[k] = float(d[k])
                        row["core"] = d["core"]
                        row["max_abs_diff"] = agreement(mine, os.path.join(
                            B_DIR, "out", "%s_ort_%d.bin" % (n, B))) if B == 1 else None
                    else:
                        row["cellc_ms"] = "n/a (run failed: %s)" % first_line(err)
                    rc, out, err = run([timer + "_gemm"] + cmd[1:7], tenv, timeout=1800)
                    if rc == 0:
                        row["gemm_calls_gflops"] = float(kv(out)["gemm_gflops"])
                else:
                    row["cellc_ms"] = "n/a (%s)" % why
                for m in REDUCED:
                    if B == 1 and n in reduced[m]:
                        time_reduced(row, n, m, reduced[m][n], tenv)
                rows.append(row)
                log("  %-13s %-6s H=%-3d B=%-3d cellc %-12s ort %-12s torch %s" % (
                    cell, how, H, B, fmt_ms(row["cellc_ms"])[:40], fmt_ms(row["ort_ms"])[:40],
                    fmt_ms(row["torch_ms"])[:40]))
        if TRAIN:
            for cell in TRAIN_CELLS:
                for H in TRAIN_HS:
                    key = "train:%s:%d:128:%d:%d" % (cell, H, T, TRAIN_REPS)
                    tm, tc = torch_ms.get(key, (torch_fail, None))
                    row = {"mode": "train", "cell": cell, "export": "cell", "H": H, "B": 128,
                           "threads": threads, "ort_ms": "n/a (inference only)",
                           "torch_ms": tm, "torch_cpu_ms": tc}
                    timer, weights, why = trainers[(cell, H)]
                    if timer:
                        rc, out, err = run([timer, weights, str(T), "128", str(TRAIN_CELLC_REPS)],
                                           tenv, timeout=1800)
                        if rc == 0:
                            d = kv(out)
                            row["cellc_ms"] = float(d["train_ms"])
                            row["cellc_cpu_ms"] = float(d["cpu_ms"])
                            for k in ("first_ms", "first_cpu_ms", "run_cpu_ms", "optim_cpu_ms",
                                      "fwd_ms", "fwd_cpu_ms", "loss_first", "loss_last"):
                                row["train_" + k] = float(d[k])
                            # the products' profile (time_train_gemm: one more step)
                            rc, out, err = run([timer + "_gemm", weights, str(T), "128", "1", str(H),
                                                str(threads)], tenv, timeout=1800)
                            if rc == 0:
                                for k, v in kv(out).items():
                                    row["train_" + k] = float(v)
                        else:
                            row["cellc_ms"] = "n/a (run failed: %s)" % first_line(err)
                    else:
                        row["cellc_ms"] = "n/a (%s)" % why
                    rows.append(row)
                    log("  %-13s train  H=%-3d B=128 cellc %-12s torch %s" % (
                        cell, H, fmt_ms(row["cellc_ms"])[:40], fmt_ms(row["torch_ms"])[:40]))
    interleave(rows, models, blas_env)
    finish(rows, compile_s, models, core_report, coretype, time.time() - t_start)


# --weights modes timed beside float32 at batch 1: the bytes of one weight
REDUCED = {"bf16": 2, "int8": 1}


def time_reduced(row, n, mode, built, tenv):
    """The --weights mode build of model n at batch 1: time, CPU time and its
    outputs against ONNX Runtime's float32 ones (row[mode + "_*"])."""
    timer, weights, why = built
    if not timer:
        row[mode + "_ms"] = "n/a (%s)" % why
        return
    mine = os.path.join(B_DIR, "out", "%s_%s_1.bin" % (n, mode))
    rc, out, err = run([timer, weights, str(T), "1", str(row["H"]), str(reps_fast(1)),
                        str(row["threads"]), mine], dict(tenv, BENCH_WEIGHT_BYTES=str(REDUCED[mode])),
                       timeout=1800)
    if rc != 0:
        row[mode + "_ms"] = "n/a (run failed: %s)" % first_line(err)
        return
    d = kv(out)
    row[mode + "_ms"], row[mode + "_cpu_ms"] = float(d["cellc_ms"]), float(d["cpu_ms"])
    row[mode + "_weights_bytes"] = float(d["weights_bytes"])
    row[mode + "_bw_gbs"] = float(d["bw_weights_gbs"])
    row[mode + "_max_abs_diff"] = agreement(mine, os.path.join(B_DIR, "out", "%s_ort_1.bin" % n))
    # the gap's profile: the time in the recurrent products (time_cellc_gemm,
    # the thread that spent the most in them) and the rest of the step
    rc, out, err = run([timer + "_gemm", weights, str(T), "1", str(row["H"]), str(reps_fast(1)),
                        str(row["threads"])], tenv, timeout=1800)
    if rc == 0 and "gemm_ms" in kv(out):
        row[mode + "_prod_ms"] = float(kv(out)["gemm_ms"])
        row[mode + "_prod_wall_ms"] = float(kv(out)["wall_ms"])


def interleave(rows, models, blas_env):
    """The momentum cells' "within 5% of nn.LSTM" compares two cellc timings;
    taken minutes apart on a shared machine they differ by more than 5% by
    themselves.  So every cellc model of a (threads, H, B) case runs again,
    round-robin (INTERLEAVE_ROUNDS rounds, at most 3 at batch > 1, the order turned each round, no
    limit measurement), and that comparison uses the median over the rounds
    of each model's median (row["pair_ms"], row["pair_cpu_ms"])."""
    if INTERLEAVE_ROUNDS < 1:
        return
    log("== Interleaved rounds for the comparison with nn.LSTM (%d rounds)" % INTERLEAVE_ROUNDS)
    for threads in THREADS:
        tenv = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
                "BENCH_NO_LIMITS": "1"}
        tenv.update(blas_env)
        for H in HS:
            for B in BS:
                case = [r for r in rows if r["mode"] == "infer" and r["H"] == H and r["B"] == B
                        and r["threads"] == threads and models[mname(r["cell"], H, r["export"])][0]
                        and isinstance(r.get("cellc_ms"), float)]
                if len(case) < 2:
                    continue
                got = {id(r): ([], []) for r in case}
                for k in range(INTERLEAVE_ROUNDS if B == 1 else min(INTERLEAVE_ROUNDS, 3)):
                    for r in case[k % len(case):] + case[:k % len(case)]:
                        timer, weights, _ = models[mname(r["cell"], H, r["export"])]
                        rc, out, err = run([timer, weights, str(T), str(B), str(H), str(reps_fast(B)),
                                            str(threads)], tenv, timeout=1800)
                        if rc == 0:
                            d = kv(out)
                            got[id(r)][0].append(float(d["cellc_ms"]))
                            got[id(r)][1].append(float(d["cpu_ms"]))
                for r in case:
                    ms, cpu = got[id(r)]
                    if ms:
                        r["pair_ms"], r["pair_cpu_ms"] = statistics.median(ms), statistics.median(cpu)
                log("  threads=%d H=%-3d B=%-3d " % (threads, H, B) + "  ".join(
                    "%s/%s %s" % (r["cell"], r["export"], fmt_ms(r.get("pair_ms", "n/a"))) for r in case))


def agreement(a, b):
    """max |a - b| over two raw float32 files (None when either is missing)."""
    import numpy as np
    if not (os.path.exists(a) and os.path.exists(b)):
        return None
    x, y = np.fromfile(a, np.float32), np.fromfile(b, np.float32)
    if x.shape != y.shape:
        return float("inf")
    return float(np.max(np.abs(x.astype(np.float64) - y))) if x.size else 0.0


def derive(rows):
    """Adds the ratios and limits to every row (in place).  The limits of a
    (H, B, threads) case are the best each timer measured for it: they are
    the machine's, whatever the model, and on a shared machine a single
    measurement can be low."""
    best = {}
    for r in rows:
        if "bw_weights_gbs" in r:
            b = best.setdefault((r["H"], r["B"], r["threads"]), {})
            for k in ("sgemv_gflops", "sgemm_gflops", "bw_weights_gbs"):
                b[k] = max(b.get(k, 0.0), r[k])
    for r in rows:
        if "bw_weights_gbs" in r:
            r.update(best[(r["H"], r["B"], r["threads"])])
    lstm, lstm_cpu = {}, {}
    for r in rows:
        if r["mode"] == "infer" and r["cell"] == "lstm":
            lstm[(r["H"], r["B"], r["threads"])] = r.get("pair_ms", r.get("cellc_ms"))
            lstm_cpu[(r["H"], r["B"], r["threads"])] = r.get("pair_cpu_ms", r.get("cellc_cpu_ms"))
    for r in rows:
        c = r.get("cellc_ms")
        r["ort_over_cellc"] = ratio(r.get("ort_ms"), c)
        r["torch_over_cellc"] = ratio(r.get("torch_ms"), c)
        r["cpu_ort_over_cellc"] = ratio(r.get("ort_cpu_ms"), r.get("cellc_cpu_ms"))
        r["cpu_torch_over_cellc"] = ratio(r.get("torch_cpu_ms"), r.get("cellc_cpu_ms"))
        r["vs_cellc_lstm"] = r["cpu_vs_cellc_lstm"] = None
        if r["mode"] == "infer" and r["cell"] != "lstm":
            r["vs_cellc_lstm"] = ratio(r.get("pair_ms", c), lstm.get((r["H"], r["B"], r["threads"])))
            r["cpu_vs_cellc_lstm"] = ratio(r.get("pair_cpu_ms", r.get("cellc_cpu_ms")),
                                           lstm_cpu.get((r["H"], r["B"], r["threads"])))
        if "bw_weights_gbs" in r and r["bw_weights_gbs"] > 0:
            flops = 2.0 * r["B"] * 4 * r["H"] * r["H"] * T
            if r["B"] == 1:
                # streaming the recurrent weights once per step at the measured bandwidth
                r["limit_ms"] = T * r["weights_bytes"] / (r["bw_weights_gbs"] * 1e9) * 1e3
            else:
                # the recurrent GEMMs at the measured sgemm throughput
                r["limit_ms"] = flops / (r["sgemm_gflops"] * 1e9) * 1e3
            r["cellc_over_limit"] = ratio(c, r["limit_ms"])
            for m in REDUCED:
                if r["B"] == 1 and isinstance(r.get(m + "_ms"), float) and r.get(m + "_bw_gbs"):
                    # the reduced recurrent weights streamed once per step at
                    # the bandwidth measured for a buffer of their size
                    r[m + "_limit_ms"] = T * r[m + "_weights_bytes"] / (r[m + "_bw_gbs"] * 1e9) * 1e3
                    r[m + "_over_limit"] = ratio(r[m + "_ms"], r[m + "_limit_ms"])
                    r["f32_over_" + m] = ratio(c, r[m + "_ms"])
            if isinstance(r.get("int8_ms"), float):
                r["torch_int8_over_int8"] = ratio(r.get("torch_int8_ms"), r["int8_ms"])
                r["ort_int8_over_int8"] = ratio(r.get("ort_int8_ms"), r["int8_ms"])
            r["rec_gemm_gflops"] = flops / (c * 1e-3) / 1e9 if isinstance(c, float) else None
            peak = r["sgemv_gflops"] if r["B"] == 1 else r["sgemm_gflops"]
            # in the calls (time_cellc_gemm): the products' own rate
            r["rec_gemm_fraction"] = ratio(r.get("gemm_calls_gflops"), peak)
            # the whole time counted as product time: a lower bound
            r["rec_gemm_fraction_all"] = ratio(r["rec_gemm_gflops"], peak)


def x(v, digits=2):
    return "-" if v is None else ("%." + str(digits) + "f") % v


def finish(rows, compile_s, models, core_report, coretype, elapsed):
    derive(rows)
    log("")
    log("== Results: time per sequence (T = %d, input 1), median; training: time per step" % T)
    hdr = "%-5s %-13s %-6s %4s %4s %3s | %-10s %-10s %-10s | %7s %7s | %9s %6s | %6s %6s" % (
        "mode", "cell", "export", "H", "B", "thr", "cellc", "ORT", "PyTorch", "ORT/c",
        "torch/c", "limit", "c/lim", "GEMM%", "whole%")
    log(hdr)
    log("-" * len(hdr))
    notes = []
    for r in rows:
        cols = []
        for k in ("cellc_ms", "ort_ms", "torch_ms"):
            v = r.get(k)
            if isinstance(v, str):
                if v not in notes:
                    notes.append(v)
                cols.append("n/a [%d]" % (notes.index(v) + 1))
            else:
                cols.append(fmt_ms(v))
        pct = [("-" if r.get(k) is None else "%.0f%%" % (100 * r[k]))
               for k in ("rec_gemm_fraction", "rec_gemm_fraction_all")]
        log("%-5s %-13s %-6s %4d %4d %3d | %-10s %-10s %-10s | %7s %7s | %9s %6s | %6s %6s" % (
            r["mode"], CELL_NAMES.get(r["cell"], r["cell"]), r["export"], r["H"], r["B"],
            r["threads"], cols[0], cols[1], cols[2], x(r["ort_over_cellc"]),
            x(r["torch_over_cellc"]), fmt_ms(r["limit_ms"]) if "limit_ms" in r else "-",
            x(r.get("cellc_over_limit")), pct[0], pct[1]))
    for k, v in enumerate(notes):
        log("  [%d] %s" % (k + 1, v))
    log("columns: ORT/c, torch/c = how many times faster cellc is; limit = at B=1 T x "
        "(recurrent weights bytes / measured read bandwidth of a buffer that size), at B>1 the "
        "recurrent GEMM FLOPs at the measured sgemm rate; c/lim = cellc / limit; "
        "GEMM% = the rate of the generated code's recurrent products, timed inside their "
        "calls (time_cellc_gemm, bench/gemm_time.c: the sum over threads of FLOPs / time in "
        "the calls), as a share of the measured sgemv (B=1) or sgemm (B>1) throughput of the "
        "same product; whole% = the same with the whole time counted as product time (a "
        "lower bound: recurrent GEMM FLOPs / cellc time)")

    log("")
    log("== The same, process CPU time per sequence (all threads; on a machine shared with "
        "other work this stays near the unloaded time at 1 thread, the wall time does not)")
    for r in rows:
        log("  %-5s %-13s %-6s H=%-3d B=%-3d thr=%d  cellc %-10s ORT %-10s PyTorch %-10s  "
            "ORT/c %5s  torch/c %5s" % (
                r["mode"], CELL_NAMES.get(r["cell"], r["cell"]), r["export"], r["H"], r["B"], r["threads"],
                fmt_ms(r["cellc_cpu_ms"]) if r.get("cellc_cpu_ms") else "n/a",
                fmt_ms(r["ort_cpu_ms"]) if r.get("ort_cpu_ms") else "n/a",
                fmt_ms(r["torch_cpu_ms"]) if r.get("torch_cpu_ms") else "n/a",
                x(r["cpu_ort_over_cellc"]), x(r["cpu_torch_over_cellc"])))
    for r in rows:
        d = r.get("max_abs_diff")
        if d is not None and not d <= 1e-3:
            log("  WARNING: %s/%s H=%d: cellc and ONNX Runtime outputs differ by %g" % (
                r["cell"], r["export"], r["H"], d))
    agreed = [r["max_abs_diff"] for r in rows if r.get("max_abs_diff") is not None]
    if agreed:
        log("cellc's and ONNX Runtime's outputs (batch 1) agree within %.2g (largest "
            "difference over %d cases)" % (max(agreed), len(agreed)))
    log("load average at the start and the end of the run: %s (%d CPUs)" % (
        LOAD_START + " / " + " ".join("%.1f" % v for v in os.getloadavg()), os.cpu_count()))

    log("")
    log("== Machine limits (measured by bench/time_cellc.c in the same run: best of 9, and "
        "the best over the models of a case)")
    seen = set()
    for r in rows:
        if "bw_weights_gbs" in r and (r["H"], r["B"], r["threads"]) not in seen:
            seen.add((r["H"], r["B"], r["threads"]))
            log("  H=%-3d B=%-3d threads=%d: sgemv %.1f GFLOP/s, sgemm %s GFLOP/s, read %.1f GB/s "
                "over %d KiB (OpenBLAS %s)" % (r["H"], r["B"], r["threads"], r["sgemv_gflops"],
                                              "%.1f" % r["sgemm_gflops"] if r["B"] > 1 else "-",
                                              r["bw_weights_gbs"], r["weights_bytes"] / 1024,
                                              r["core"]))

    log("")
    log("== Compile time: cellc compile, then building the generated C (make, cc -O2)")
    for n, s in sorted(compile_s.items()):
        if s is not None:
            log("  %-30s cellc %6.2f s   make %6.2f s" % (n, s[0], s[1]))
    tr = [n for n in compile_s if "momentum_lstm" in n and n.endswith("_trace")]
    for n in sorted(set(mname("momentum_lstm", H, "trace") for H in HS) - set(
            k for k in tr if compile_s[k] is not None)):
        if n in models:
            log("  %-26s n/a (%s)" % (n, models[n][2]))

    log("")
    log("== Targets of issue 6 (each a ratio from this run)")
    for r in rows:
        if r["mode"] != "infer":
            continue
        tag = "%s/%s H=%d B=%d threads=%d" % (CELL_NAMES.get(r["cell"], r["cell"]), r["export"],
                                              r["H"], r["B"], r["threads"])
        checks = []
        if r["cell"] == "lstm" and r["B"] == 1:
            checks = [("ORT/cellc >= 1.3", r["ort_over_cellc"], 1.3, False),
                      ("  same, CPU time", r["cpu_ort_over_cellc"], 1.3, False),
                      ("PyTorch/cellc >= 10", r["torch_over_cellc"], 10, False),
                      ("  same, CPU time", r["cpu_torch_over_cellc"], 10, False),
                      ("cellc/limit <= 1.3", r.get("cellc_over_limit"), 1.3, True)]
            if r["threads"] == 1:
                checks.append(("  same, CPU time", ratio(r.get("cellc_cpu_ms"),
                                                         r.get("limit_ms")), 1.3, True))
        elif r["cell"] == "lstm":
            checks = [("ORT/cellc >= 1", r["ort_over_cellc"], 1.0, False),
                      ("  same, CPU time", r["cpu_ort_over_cellc"], 1.0, False),
                      ("recurrent GEMM >= 90% of sgemm", r.get("rec_gemm_fraction"), 0.9, False),
                      ("  whole time counted as GEMM", r.get("rec_gemm_fraction_all"), 0.9, False)]
            if r["threads"] == 1:
                checks.append(("  same, CPU time", ratio(r.get("limit_ms"),
                                                         r.get("cellc_cpu_ms")), 0.9, False))
        else:
            checks = [("cellc within 5% of cellc nn.LSTM (interleaved)", r["vs_cellc_lstm"], 1.05, True),
                      ("  same, CPU time", r.get("cpu_vs_cellc_lstm"), 1.05, True)]
            if mname(r["cell"], r["H"], r["export"]) in FIXTURE:
                checks = []     # no nn.LSTM of its size
            checks += [("ORT/cellc >= 10 on the same export", r["ort_over_cellc"], 10, False),
                       ("  same, CPU time", r["cpu_ort_over_cellc"], 10, False)]
        for what, v, goal, upper in checks:
            if v is None:
                log("  %-44s %-36s n/a" % (tag, what))
                continue
            ok = v <= goal if upper else v >= goal
            miss = "" if ok else (" (off by x%.2f)" % (v / goal if upper else goal / v))
            log("  %-44s %-36s %6.2f  %s%s" % (tag, what, v, "met" if ok else "NOT met", miss))
    for r in rows:
        if r["mode"] != "train":
            continue
        tag = "train %s H=%d B=%d threads=%d" % (CELL_NAMES[r["cell"]], r["H"], r["B"],
                                                 r["threads"])
        for what, v in (("PyTorch/cellc >= 5", r["torch_over_cellc"]),
                        ("  same, CPU time", r["cpu_torch_over_cellc"])):
            if v is None:
                log("  %-44s %-36s n/a" % (tag, what))
            else:
                log("  %-44s %-36s %6.2f  %s" % (tag, what, v, "met" if v >= 5 else
                                                "NOT met (off by x%.2f)" % (5 / v)))

    low = [r for r in rows if r["mode"] == "infer" and any(m + "_ms" in r for m in REDUCED)]
    if low:
        log("")
        log("== Reduced precision (issue 22): --weights bf16 and int8 at batch 1, the same timer; "
            "limit = T x (the recurrent weights at 2 or 1 bytes / the read bandwidth measured for a "
            "buffer that size); error = max |out - ONNX Runtime float32| over the T x H outputs")
        goals = {"bf16": [("bf16/limit <= 1.3", "bf16_over_limit", 1.3, True),
                          ("f32/bf16 >= 1.7", "f32_over_bf16", 1.7, False)],
                 "int8": [("f32/int8 >= 2.5", "f32_over_int8", 2.5, False),
                          ("torch int8/int8 > 1", "torch_int8_over_int8", 1.0, False),
                          ("ORT int8/int8 > 1", "ort_int8_over_int8", 1.0, False)]}
        for r in low:
            tag = "%s/%s H=%d threads=%d" % (CELL_NAMES.get(r["cell"], r["cell"]), r["export"], r["H"],
                                              r["threads"])
            for m in REDUCED:
                if not isinstance(r.get(m + "_ms"), float):
                    log("  %-34s %s %s" % (tag, m, r.get(m + "_ms", "n/a")))
                    continue
                log("  %-34s f32 %-10s %-4s %-10s f32/%s %5s  limit %-10s %s/limit %5s  error %s (f32 %s)" % (
                    tag, fmt_ms(r.get("cellc_ms")), m, fmt_ms(r[m + "_ms"]), m, x(r.get("f32_over_" + m)),
                    fmt_ms(r[m + "_limit_ms"]) if m + "_limit_ms" in r else "-", m,
                    x(r.get(m + "_over_limit")),
                    "-" if r.get(m + "_max_abs_diff") is None else "%.2g" % r[m + "_max_abs_diff"],
                    "-" if r.get("max_abs_diff") is None else "%.2g" % r["max_abs_diff"]))
                if isinstance(r.get(m + "_prod_ms"), float):
                    lim = r.get(m + "_limit_ms")
                    log("  %-34s profile (the products timed in their calls, mean of a run %s): in the "
                        "recurrent products %s (%sx the limit), the rest %s (element-wise work and, with "
                        "threads, their meeting each step)" % (
                            "", fmt_ms(r[m + "_prod_wall_ms"]), fmt_ms(r[m + "_prod_ms"]),
                            x(r[m + "_prod_ms"] / lim) if lim else "-",
                            fmt_ms(r[m + "_prod_wall_ms"] - r[m + "_prod_ms"])))
                if m == "int8" and "torch_int8_ms" in r:
                    log("  %-34s PyTorch quantize_dynamic int8 (engine %s) %s: %sx cellc int8's time" % (
                        "", r.get("torch_int8_engine"), fmt_ms(r["torch_int8_ms"]),
                        x(r.get("torch_int8_over_int8"))))
                if m == "int8" and "ort_int8_ms" in r:
                    log("  %-34s ONNX Runtime on the file quantized (DynamicQuantizeLSTM) %s: %sx cellc "
                        "int8's time" % ("", fmt_ms(r["ort_int8_ms"]), x(r.get("ort_int8_over_int8"))))
                if r["cell"] == "lstm" and r["H"] == 256:
                    for what, key, goal, upper in goals[m]:
                        v = r.get(key)
                        if v is None:
                            log("    %-30s n/a" % what)
                            continue
                        ok = v <= goal if upper else v >= goal
                        log("    %-30s %6.2f  %s" % (what, v, "met" if ok else "NOT met (off by x%.2f)" % (
                            v / goal if upper else goal / v)))

    train = [r for r in rows if r["mode"] == "train" and "train_run_cpu_ms" in r]
    if train:
        log("")
        log("== cellc's training step (bench/time_train.c), CPU time: forward + backward "
            "(the emitted run), RMSprop update; forward only (set_forward_only)")
        for r in train:
            log("  %-13s H=%-3d B=%-3d thr=%d  step %-10s = run %-10s + RMSprop %-9s  "
                "forward only %-10s  first step %-10s (wall %s)  loss %.4f -> %.4f" % (
                    CELL_NAMES[r["cell"]], r["H"], r["B"], r["threads"],
                    fmt_ms(r["cellc_cpu_ms"]), fmt_ms(r["train_run_cpu_ms"]),
                    fmt_ms(r["train_optim_cpu_ms"]), fmt_ms(r["train_fwd_cpu_ms"]),
                    fmt_ms(r["train_first_cpu_ms"]), fmt_ms(r["train_first_ms"]),
                    r["train_loss_first"], r["train_loss_last"]))
        log("  (the first step also touches every buffer for the first time: PyTorch's one "
            "timed step is such a first step)")
        log("")
        log("== Training at the GEMM rate (issue 22, item 1): every product of one more step timed inside "
            "its call (time_train_gemm, bench/gemm_time.c); sgemm = OpenBLAS's rate for the step's "
            "product [B, H] x [H, 4H] in the same run")
        for r in train:
            tag = "%s H=%d B=%d threads=%d" % (CELL_NAMES[r["cell"]], r["H"], r["B"], r["threads"])
            if "train_gemm_flops" not in r or not r.get("train_sgemm_gflops"):
                log("  %-36s no product profile" % tag)
                continue
            fl, sg = r["train_gemm_flops"], r["train_sgemm_gflops"]
            share = r["train_gemm_s"] / r["train_step_s"]
            rate = fl / r["train_gemm_s"] / 1e9
            whole = fl / (r["cellc_ms"] * 1e-3) / 1e9
            floor_ms = fl / (sg * 1e9) * 1e3
            log("  %-36s products %.1f GFLOP/step, %.0f%% of the step inside them at %.1f GFLOP/s (%.0f%% of "
                "sgemm's %.1f); forward %.0f%%, backward and weight gradients %.0f%% of the step" % (
                    tag, fl / 1e9, 100 * share, rate, 100 * rate / sg, sg,
                    100 * r["train_fwd_ms"] / r["cellc_ms"], 100 * (1 - r["train_fwd_ms"] / r["cellc_ms"])))
            v = whole / sg
            log("    %-44s %6.2f  %s" % ("whole step at >= 80% of sgemm's rate", v,
                                         "met" if v >= 0.8 else "NOT met (off by x%.2f)" % (0.8 / v)))
            if isinstance(r.get("torch_ms"), float):
                t = r["torch_ms"] / r["cellc_ms"]
                log("    %-44s %6.2f  %s (at sgemm's rate the products alone take %s: PyTorch/that = %.2f)" % (
                    "PyTorch/cellc >= 6", t, "met" if t >= 6 else "NOT met (off by x%.2f)" % (6 / t),
                    fmt_ms(floor_ms), r["torch_ms"] / floor_ms))

    os.makedirs(B_DIR, exist_ok=True)
    fields = ["mode", "cell", "export", "H", "B", "threads", "cellc_ms", "ort_ms", "torch_ms",
              "cellc_cpu_ms", "ort_cpu_ms", "torch_cpu_ms", "cpu_ort_over_cellc",
              "cpu_torch_over_cellc",
              "ort_over_cellc", "torch_over_cellc", "vs_cellc_lstm", "pair_ms", "pair_cpu_ms", "limit_ms",
              "cellc_over_limit", "sgemv_gflops", "sgemm_gflops", "bw_weights_gbs",
              "weights_bytes", "max_abs_diff", "rec_gemm_gflops", "gemm_calls_gflops",
              "rec_gemm_fraction", "rec_gemm_fraction_all",
              "ort_load_s", "core", "compile_s", "build_s", "train_run_cpu_ms",
              "train_optim_cpu_ms", "train_fwd_ms", "train_fwd_cpu_ms", "train_first_ms",
              "train_first_cpu_ms",
              "train_loss_first", "train_loss_last", "train_gemm_flops", "train_gemm_s",
              "train_step_s", "train_sgemm_gflops"] + \
        [m + k for m in REDUCED for k in ("_ms", "_cpu_ms", "_limit_ms", "_over_limit", "_max_abs_diff")] + \
        ["f32_over_" + m for m in REDUCED] + ["torch_int8_ms", "torch_int8_over_int8", "ort_int8_ms",
                                            "ort_int8_over_int8"]
    with open(os.path.join(B_DIR, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in fields})
        for n, secs in sorted(compile_s.items()):
            if secs is not None:
                cell, h, how = n.rsplit("_", 2)
                w.writerow({"mode": "compile", "cell": cell, "export": how, "H": h[1:],
                            "compile_s": "%.3f" % secs[0], "build_s": "%.3f" % secs[1]})
    svg(rows, os.path.join(B_DIR, "results.svg"))
    log("")
    log("wrote build/bench/results.csv and build/bench/results.svg (%.0f s in all%s)" % (
        elapsed, "; OPENBLAS_CORETYPE=" + coretype if coretype else ""))


def svg(rows, path):
    """Grouped horizontal bars, one group per case, log-scale time."""
    series = [("cellc_ms", "cellc", "#1f77b4"), ("ort_ms", "ONNX Runtime", "#ff7f0e"),
              ("torch_ms", "PyTorch", "#2ca02c")]
    vals = [r.get(k) for r in rows for k, _, _ in series]
    nums = [v for v in vals if isinstance(v, float) and v > 0]
    if not nums:
        nums = [1.0]
    lo = 10 ** math.floor(math.log10(min(nums)))
    hi = 10 ** math.ceil(math.log10(max(nums)))
    left, width, bar, gap, top = 300, 560, 7, 8, 40
    height = top + len(rows) * (3 * bar + gap) + 40

    def xpos(v):
        return left + width * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="10">' % (left + width + 40, height),
           '<text x="10" y="16" font-size="13">cellc vs ONNX Runtime vs PyTorch: time per '
           'sequence (T=%d; training: per step), log scale</text>' % T]
    for k, (_, name, color) in enumerate(series):
        out.append('<rect x="%d" y="24" width="10" height="8" fill="%s"/><text x="%d" y="32">%s'
                   '</text>' % (left + 130 * k, color, left + 130 * k + 14, name))
    e = lo
    while e <= hi * 1.0001:
        xx = xpos(e)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (
            xx, top, xx, height - 30))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (
            xx, height - 18, fmt_ms(e)))
        e *= 10
    y = top
    for r in rows:
        label = "%s %s%s H=%d B=%d t=%d" % (r["mode"], CELL_NAMES.get(r["cell"], r["cell"]),
                                           "" if r["export"] in ("-", "onnx") else
                                           " (" + r["export"] + ")", r["H"], r["B"], r["threads"])
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (
            left - 6, y + 2 * bar, label))
        for k, (key, _, color) in enumerate(series):
            v = r.get(key)
            yy = y + k * bar
            if isinstance(v, float) and v > 0:
                out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s'
                           '</title></rect>' % (left, yy, max(1.0, xpos(v) - left), bar - 1,
                                                color, fmt_ms(v)))
            else:
                out.append('<text x="%d" y="%d" fill="#888" font-size="7">n/a</text>' % (
                    left + 2, yy + bar - 1))
        y += 3 * bar + gap
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
