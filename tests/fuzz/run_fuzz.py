"""run_fuzz.py: runs the libFuzzer targets of tests/fuzz/ (built by `make
fuzz` into build-fuzz/) from the repository root.

  run_fuzz.py smoke [SECONDS] [--jobs N]
      every target (N at once) over (up to SMOKE_SEEDS of) its seed corpus, then SECONDS (default 8) of fuzzing
      from a scratch copy of it; one `PASS|FAIL fuzz/<target>` line each (a
      crash, sanitizer report, leak, timeout or out-of-memory of the fuzzer
      fails, with the reproducer saved in build-fuzz/artifacts/); the seeds
      are never modified.  `make fuzz-smoke` and the harness group `fuzz`.
  run_fuzz.py campaign TARGET SECONDS [RUNS]
      a longer run of one target (SECONDS, or RUNS executions if that comes
      first; TMPDIR is where the compile targets write their C: a tmpfs such
      as /dev/shm makes them faster), its corpus kept in build-fuzz/work/TARGET
      (grows across campaigns), final statistics, and the edges covered in
      each source file of compiler/ and runtime/ (-print_coverage); appends
      one line to build-fuzz/campaigns.tsv:
      target, seconds, executions, exec/s, cov, ft, corpus size, crashes,
      and the per-file coverage in build-fuzz/coverage_TARGET.tsv.

A reproducer is replayed with build-fuzz/fuzz_TARGET FILE.
"""
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FZ = os.path.join(ROOT, "build-fuzz")
TARGETS = ("onnx", "onnx_train", "cell", "bind", "export", "tensorfile", "testdata", "traindata")
DICTS = {"onnx": "onnx.dict", "onnx_train": "onnx.dict", "export": "onnx.dict", "bind": "onnx.dict",
         "cell": "cell.dict"}
SMOKE_SEEDS = 150       # seeds a smoke run starts from (evenly spread over the corpus)
ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1:allocator_may_return_null=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    # the targets fuzz the compiler; translation validation (a reference
    # run of every pass, central differences of a training build) would
    # spend the time budget of an input many times over under the sanitizers
    "CELLC_VALIDATE": "0",
}


def flags(target, seconds, artifacts):
    f = ["-max_len=65536", "-timeout=30", "-rss_limit_mb=2560", "-malloc_limit_mb=1024",
         "-max_total_time=%d" % seconds, "-print_final_stats=1", "-close_fd_mask=3",
         "-artifact_prefix=%s/" % artifacts]
    if target in DICTS:
        f.append("-dict=%s" % os.path.join(ROOT, "tests", "fuzz", DICTS[target]))
    return f


def env():
    e = dict(os.environ)
    e.update(ENV)
    return e


def stats(text):
    s = {}
    for k in ("number_of_executed_units", "average_exec_per_sec", "new_units_added", "peak_rss_mb"):
        m = re.search(r"stat::%s:\s*(\d+)" % k, text)
        s[k] = int(m.group(1)) if m else 0
    m = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", text)
    s["cov"], s["ft"], s["corp"] = (int(x) for x in m[-1]) if m else (0, 0, 0)
    return s


def smoke_target(t, seconds, artifacts):
    """One target over its seeds and `seconds` beyond: (passed, its line)."""
    binary = os.path.join(FZ, "fuzz_" + t)
    seeds = os.path.join(FZ, "corpus", t)
    if not os.access(binary, os.X_OK) or not os.path.isdir(seeds):
        return False, "FAIL fuzz/%s %s or its corpus is not built (make fuzz)" % (t, binary)
    work = tempfile.mkdtemp(prefix="cellc_fuzz_smoke_")
    try:
        names = sorted(os.listdir(seeds))
        for f in names[:: max(1, len(names) // SMOKE_SEEDS)]:
            shutil.copy(os.path.join(seeds, f), work)
        cmd = [binary] + flags(t, seconds, artifacts) + [work]
        p = subprocess.run(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=seconds + 600)
        out = p.stdout.decode(errors="replace")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log = os.path.join(FZ, "smoke_%s.log" % t)
    with open(log, "w") as f:
        f.write(out)
    s = stats(out)
    # a slow unit (libFuzzer's report of an input over -report_slow_units
    # seconds) is no failure, as in campaigns; -timeout still catches hangs
    crash = [u for u in re.findall(r"Test unit written to (\S+)", out)
             if not os.path.basename(u).startswith("slow-unit")]
    if p.returncode != 0 or crash or "Done" not in out:
        m = re.search(r"ERROR: (?:AddressSanitizer|LeakSanitizer|libFuzzer)[^\n]*|runtime error[^\n]*", out)
        return False, "FAIL fuzz/%s exit %d: %s; reproducer %s (log %s)" % (
            t, p.returncode, m.group(0) if m else "see log", crash[0] if crash else "-", log)
    return True, "PASS fuzz/%s %d seeds + %d s: %d runs, %d exec/s, cov %d" % (
        t, min(len(os.listdir(seeds)), SMOKE_SEEDS), seconds, s["number_of_executed_units"],
        s["average_exec_per_sec"], s["cov"])


def smoke(seconds, jobs=1):
    """Every target, `jobs` at once (each fuzzer is one process on one core);
    the lines in TARGETS' order."""
    artifacts = os.path.join(FZ, "artifacts")
    os.makedirs(artifacts, exist_ok=True)
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        for ok, line in pool.map(lambda t: smoke_target(t, seconds, artifacts), TARGETS):
            failed += not ok
            print(line, flush=True)
    return 1 if failed else 0


def coverage(text):
    """Per source file: edges covered / edges instrumented, from -print_coverage."""
    per = {}
    for m in re.finditer(r"COVERED_FUNC: hits: \d+ edges: (\d+)/(\d+) \S+ (\S+?):\d+", text):
        f = os.path.relpath(m.group(3), ROOT) if m.group(3).startswith("/") else m.group(3)
        c, n = per.get(f, (0, 0))
        per[f] = (c + int(m.group(1)), n + int(m.group(2)))
    for m in re.finditer(r"UNCOVERED_FUNC: hits: 0 edges: 0/(\d+) \S+ (\S+?):\d+", text):
        f = os.path.relpath(m.group(2), ROOT) if m.group(2).startswith("/") else m.group(2)
        c, n = per.get(f, (0, 0))
        per[f] = (c, n + int(m.group(1)))
    return {f: v for f, v in per.items() if f.startswith(("compiler/", "runtime/"))}


def campaign(target, seconds, runs=0):
    binary = os.path.join(FZ, "fuzz_" + target)
    work = os.path.join(FZ, "work", target)
    artifacts = os.path.join(FZ, "artifacts", target)
    os.makedirs(artifacts, exist_ok=True)
    if not os.path.isdir(work):
        shutil.copytree(os.path.join(FZ, "corpus", target), work)
    cmd = [binary] + flags(target, seconds, artifacts) + ["-print_coverage=1"] + (
        ["-runs=%d" % runs] if runs else []) + [work]
    p = subprocess.run(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode(errors="replace")
    with open(os.path.join(FZ, "campaign_%s.log" % target), "w") as f:
        f.write(out)
    s = stats(out)
    crashes = len([f for f in glob.glob(os.path.join(artifacts, "*")) if not os.path.basename(f).startswith("slow-unit")])
    cov = coverage(out)
    with open(os.path.join(FZ, "coverage_%s.tsv" % target), "w") as f:
        for fn in sorted(cov):
            c, n = cov[fn]
            f.write("%s\t%d\t%d\t%.1f%%\n" % (fn, c, n, 100.0 * c / n if n else 0))
    line = "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\texit %d" % (
        target, seconds, s["number_of_executed_units"], s["average_exec_per_sec"], s["cov"], s["ft"],
        s["corp"], crashes, p.returncode)
    with open(os.path.join(FZ, "campaigns.tsv"), "a") as f:
        f.write(line + "\n")
    print(line)
    return 0


def main():
    a = sys.argv[1:]
    if a and a[0] == "smoke":
        jobs = 1
        if "--jobs" in a:
            k = a.index("--jobs")
            if k + 1 >= len(a) or not a[k + 1].isdigit() or int(a[k + 1]) < 1:
                sys.exit("run_fuzz.py: --jobs wants a count of at least 1")
            jobs = int(a[k + 1])
            a = a[:k] + a[k + 2:]
        return smoke(int(a[1]) if len(a) > 1 else 8, jobs)
    if len(a) >= 3 and a[0] == "campaign" and a[1] in TARGETS:
        return campaign(a[1], int(a[2]), int(a[3]) if len(a) > 3 else 0)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
