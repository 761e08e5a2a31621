"""test_install.py: cellc installed as a new user installs it (issue 20).

Copies the checkout (git's tracked and untracked-but-not-ignored files:
no build outputs, no fixtures) to a temporary directory, builds it there
with `make -j2 install PREFIX=P`, deletes the copy and then, with only P/bin
(and the system's directories) on PATH and P/lib/pkgconfig on
PKG_CONFIG_PATH, from a directory outside any source tree:

  - checks the installed files: cellc, cellrt.h, the static and shared
    libraries of both flavours (soname libcellrt.so.MAJOR), the .pc files,
    the man pages; a DESTDIR staging install writes the same files with the
    final prefix in the .pc files, and its uninstall removes them;
  - compiles an ONNX model (examples/lstm_classifier.onnx with its PyTorch
    test data) and a `.cell` model (tests/out/cells/momentum_lstm, PyTorch
    golden data of gen_cell_cases.py) with `--testbench`, finds no path of
    the deleted copy or of this checkout in the emitted files, and builds and
    runs each golden test (PyTorch's outputs) with the emitted Makefile (the
    OpenBLAS and BLAS=none runtimes, and CELLRT=this checkout), with CMake through the emitted
    CMakeLists.txt (add_subdirectory, when cmake is installed) and by hand
    against the shared library from pkg-config;
  - runs `cellc verify --data` on both (without PKG_CONFIG_PATH: the
    emitted Makefile must find the runtime in cellc's own prefix) and `cellc verify --oracle
    onnxruntime` on the ONNX model (onnxruntime-node from the cache
    directory an installed cellc uses, XDG_CACHE_HOME/cellc/ort, here a
    link to this checkout's build/ort, made by `make ort` when missing);
  - renders the man pages with `groff -ww` (no warning) and `man -l` (their
    .TH naming this version), and finds `man cellc` through MANPATH;
  - compares, per command, the options of `cellc COMMAND --help`, of the
    command's parser (compiler/cmd/cmd_*.c), of the man page and of the option
    reference docs/commands.md: all four must list the same options;
  - `make uninstall PREFIX=P` (from this checkout: uninstalling needs no
    build) leaves P empty.

Prints one `PASS|FAIL install/NAME detail` line per check.  Expected values
come from outside cellc: PyTorch's golden data, ONNX Runtime, the file lists
of the issue.  The temporary directory is removed when every check passed.

usage: test_install.py LOGDIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = re.search(r'#define CELLC_VERSION "([^"]+)"',
                    open(os.path.join(ROOT, "compiler", "base", "version.h")).read()).group(1)
MAJOR = VERSION.split(".")[0]
COMMANDS = ("compile", "verify", "dump", "info", "export")
CELL_CASE = os.path.join(ROOT, "tests", "out", "cells", "momentum_lstm")

failed = 0


def report(name, ok, detail=""):
    global failed
    failed += not ok
    print("%s install/%s%s" % ("PASS" if ok else "FAIL", name, " " + detail if detail else ""), flush=True)
    return ok


class Runner:
    def __init__(self, logdir):
        self.logdir, self.n = logdir, 0
        os.makedirs(logdir, exist_ok=True)

    def __call__(self, name, cmd, cwd, env=None, timeout=900, shell=False):
        """Runs cmd; returns (rc, stdout, stderr), logged to LOGDIR/NN_name.log."""
        self.n += 1
        log = os.path.join(self.logdir, "%02d_%s.log" % (self.n, re.sub(r"[^\w.-]", "_", name)))
        try:
            p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout, shell=shell)
            rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, out, err = None, "", "timed out after %d s" % timeout
        except OSError as e:
            rc, out, err = 127, "", str(e)
        with open(log, "w") as f:
            f.write("$ %s\n# cwd %s\n# exit status %s\n--- stdout\n%s\n--- stderr\n%s" % (
                cmd if shell else " ".join(cmd), cwd, rc, out, err))
        self.last_log = log
        return rc, out, err


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])[:300]


def copy_checkout(dst):
    """The source files of the checkout (what a clone or tarball holds)."""
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, subs, names in os.walk(ROOT):
            rel = os.path.relpath(d, ROOT)
            subs[:] = [s for s in subs if os.path.normpath(os.path.join(rel, s)) not in
                       ("build", "build-san", os.path.join("tests", "out"), ".git")]
            files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    n = 0
    for f in files:
        if not f or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, f)) or dst, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(dst, f))
        n += 1
    return n


def installed_files(prefix):
    out = set()
    for d, _, names in os.walk(prefix):
        out |= {os.path.relpath(os.path.join(d, n), prefix) for n in names}
    return out


EXPECTED = {"bin/cellc", "include/cellrt.h", "lib/pkgconfig/cellrt.pc", "lib/pkgconfig/cellrt-noblas.pc",
            "share/man/man1/cellc.1", "share/man/man5/cellc-cell.5"}
for _lib in ("libcellrt", "libcellrt-noblas"):
    EXPECTED |= {"lib/%s.a" % _lib, "lib/%s.so" % _lib, "lib/%s.so.%s" % (_lib, MAJOR),
                 "lib/%s.so.%s" % (_lib, VERSION)}


def check_files(prefix, tag):
    got = installed_files(prefix)
    ok = got == EXPECTED
    report("%s/files" % tag, ok, "%d files" % len(got) if ok else "missing %s, unexpected %s" % (
        sorted(EXPECTED - got), sorted(got - EXPECTED)))


# ---- option lists -----------------------------------------------------------------

OPT = re.compile(r"(?<![\w-])(--?[a-z][a-z0-9-]*)")
IGNORED = {"-h", "--help"}


def opts_of(text):
    return {o for o in OPT.findall(text)} - IGNORED


def help_options(text):
    """Options defined by `--help`: lines '  -x, --opt ARG   description'."""
    found = set()
    for line in text.splitlines():
        if re.match(r"^  -", line):
            found |= opts_of(re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0] + " ")
    return found


def parser_options(cmd):
    src = open(os.path.join(ROOT, "compiler", "cmd", "cmd_%s.c" % cmd)).read()
    found = set(re.findall(r'cmd_opt_value\(argc, argv, &i, "(-[^"]+)"', src))
    found |= set(re.findall(r'strcmp\(a, "(-[^"]+)"\)', src))
    if "cmd_train_opt(" in src:     # the training options' shared parser (cmd_compile.c)
        shared = open(os.path.join(ROOT, "compiler", "cmd", "cmd_compile.c")).read()
        body = shared[shared.index("int cmd_train_opt("):]
        body = body[:body.index("\n}\n")]
        found |= set(re.findall(r'cmd_opt_value\(argc, argv, i, "(-[^"]+)"', body))
        found |= set(re.findall(r'strcmp\(argv\[\*i\], "(-[^"]+)"\)', body))
    return found - IGNORED


def man_options(text):
    """Per command: the options of the .TP entries under `.SS "cellc CMD ..."`."""
    per, cur, lines = {}, None, text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r'^\.SS "cellc (\w+)', line)
        if m:
            cur = m.group(1)
            per[cur] = set()
        elif line.startswith(".SH"):
            cur = None
        elif line == ".TP" and cur and i + 1 < len(lines):
            tag = re.sub(r"\\f[BIRP]", "", lines[i + 1]).replace("\\-", "-")
            per[cur] |= opts_of(tag)
    return per


DOC_OPTIONS = os.path.join("docs", "commands.md")    # the option reference


def doc_options(text):
    """Per command: the options in the first column of the tables under
    `## cellc CMD` of docs/commands.md (up to the next `## ` heading)."""
    per, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^## cellc (\w+)", line)
        if m:
            cur = m.group(1)
            per[cur] = set()
        elif line.startswith("## ") or line.startswith("# "):
            cur = None
        elif cur and line.startswith("| `-"):
            per[cur] |= opts_of(line.split("|")[1])
    return per


def check_options(run, env, cwd, prefix):
    man = man_options(open(os.path.join(prefix, "share", "man", "man1", "cellc.1")).read())
    doc = doc_options(open(os.path.join(ROOT, DOC_OPTIONS)).read())
    for cmd in COMMANDS:
        rc, out, err = run("help_" + cmd, ["cellc", cmd, "--help"], cwd, env)
        views = {"--help": help_options(out), "parser": parser_options(cmd),
                 "man": man.get(cmd, set()), DOC_OPTIONS: doc.get(cmd, set())}
        union = set().union(*views.values())
        gaps = ["%s lacks %s" % (k, " ".join(sorted(union - v))) for k, v in views.items() if union - v]
        report("options/%s" % cmd, rc == 0 and not gaps and len(union) > 0,
               "%d options agree in --help, parser, man page, %s" % (len(union), DOC_OPTIONS) if rc == 0 and not gaps
               else "; ".join(gaps) or "exit %s" % rc)
    rc, out, _ = run("help", ["cellc", "--help"], cwd, env)
    report("options/usage", rc == 0 and ".cell" in out and all("cellc %s" % c in out for c in COMMANDS),
           "every command and both model kinds named" if rc == 0 else "exit %s" % rc)


# ---- one model through the installed cellc --------------------------------------------

CMAKE_APP = """cmake_minimum_required(VERSION 3.13)
project(app C)
add_subdirectory(../{gen} {gen})
add_executable({name}_test ../{gen}/{name}_test.c)
target_link_libraries({name}_test PRIVATE {name})
"""


def check_model(run, env, work, tag, model, data, forbidden):
    name = "net_" + tag
    gen = "gen_" + tag
    gdir = os.path.join(work, gen)
    rc, out, err = run(tag + "_compile", ["cellc", "compile", model, "-o", gen, "--name", name,
                                          "--testbench", data], work, env)
    if not report("%s/compile" % tag, rc == 0, "exit %s %s" % (rc, tail(err))):
        return
    leaks = []
    for f in sorted(os.listdir(gdir)):
        text = open(os.path.join(gdir, f), "rb").read().decode(errors="replace")
        leaks += ["%s names %s" % (f, p) for p in forbidden if p in text]
    report("%s/no_source_tree" % tag, not leaks and os.path.exists(os.path.join(gdir, "CMakeLists.txt")),
           "; ".join(leaks) or "Makefile, CMakeLists.txt and sources name no source tree")

    def golden(sub, cmd, cwd, shell=False):
        rc, out, err = run("%s_%s" % (tag, sub), cmd, cwd, env, shell=shell)
        m = re.search(r"^(\d+) passed, (\d+) failed", out, re.M)
        ok = rc == 0 and m and int(m.group(1)) > 0 and m.group(2) == "0"
        report("%s/%s" % (tag, sub), ok, m.group(0) if ok else "exit %s %s" % (rc, tail(out + err)))

    golden("make_test", ["make", "-s", "test"], gdir)
    golden("make_test_noblas", ["sh", "-c", "make -s clean && make -s BLAS=none test"], gdir)
    if tag == "onnx":   # CELLRT=DIR: the runtime of a build tree (this checkout's) instead
        golden("make_test_build_tree", ["sh", "-c", "make -s clean && make -s CELLRT='%s' test" % ROOT], gdir)
    # the shared library, linked by hand the way docs/install.md says
    golden("shared_lib", 'cc -std=c11 -O2 $(pkg-config --cflags cellrt) -o shared_test %s_test.c lib%s.a '
           '$(pkg-config --libs cellrt) -fopenmp -Wl,-rpath,$(pkg-config --variable=libdir cellrt) && '
           'ldd shared_test | grep -q "libcellrt.so.%s => $(pkg-config --variable=libdir cellrt)/" && '
           './shared_test' % (name, name, MAJOR), gdir, shell=True)
    if shutil.which("cmake"):
        app = os.path.join(work, "cmake_" + tag)
        os.makedirs(app)
        with open(os.path.join(app, "CMakeLists.txt"), "w") as f:
            f.write(CMAKE_APP.format(gen=gen, name=name))
        rc, out, err = run(tag + "_cmake_configure", ["cmake", "-S", ".", "-B", "build"], app, env)
        if rc == 0:
            rc, out, err = run(tag + "_cmake_build", ["cmake", "--build", "build"], app, env)
        if rc != 0:
            report("%s/cmake" % tag, False, "exit %s %s" % (rc, tail(out + err)))
        else:
            golden("cmake", [os.path.join(app, "build", "%s_test" % name)], gdir)
    else:
        report("%s/cmake" % tag, False, "cmake is not installed (make deps installs it)")
    # without PKG_CONFIG_PATH: the emitted Makefile looks in the installed cellc's prefix
    bare = {k: v for k, v in env.items() if k != "PKG_CONFIG_PATH"}
    rc, out, err = run(tag + "_verify", ["cellc", "verify", model, "--data", data], work, bare)
    m = re.search(r"^(\d+) passed, (\d+) failed", out, re.M)
    report("%s/verify" % tag, rc == 0 and m and int(m.group(1)) > 0,
           m.group(0) if rc == 0 and m else "exit %s %s" % (rc, tail(out + err)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: test_install.py LOGDIR")
    run = Runner(os.path.abspath(sys.argv[1]))
    tmp = tempfile.mkdtemp(prefix="cellc-install-")
    src, prefix, work = (os.path.join(tmp, d) for d in ("src", "prefix", "work"))
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKE", "CELLC_SHARE", "CELLC_ORT_DIR",
                             "PKG_CONFIG_PATH", "CELLRT", "CELLRT_PC", "BLAS", "CFLAGS")}

    n = copy_checkout(src)
    rc, out, err = run("build_install", ["make", "-j2", "install", "PREFIX=" + prefix], src, base_env, 1800)
    if not report("build_install", rc == 0 and n > 0, "%d files copied, make -j2 install: exit %s %s" % (
            n, rc, tail(err) if rc else "")):
        print("install: kept %s" % tmp)
        return 1
    check_files(prefix, "prefix")
    rc, out, _ = run("soname", ["readelf", "-d", os.path.join(prefix, "lib", "libcellrt.so.%s" % VERSION)], tmp)
    want = "libcellrt.so.%s" % MAJOR
    report("soname", rc == 0 and "Library soname: [%s]" % want in out and
           os.readlink(os.path.join(prefix, "lib", want)) == "libcellrt.so.%s" % VERSION,
           "soname %s, link to libcellrt.so.%s" % (want, VERSION))
    stage = os.path.join(tmp, "stage")
    rc, out, err = run("destdir_install", ["make", "install", "DESTDIR=" + stage, "PREFIX=/opt/cellc"], src,
                       base_env)
    staged = os.path.join(stage, "opt", "cellc")
    pc = open(os.path.join(staged, "lib", "pkgconfig", "cellrt.pc")).read() if rc == 0 else ""
    report("destdir/install", rc == 0 and "prefix=/opt/cellc\n" in pc and installed_files(staged) == EXPECTED,
           "DESTDIR staging, prefix=/opt/cellc in cellrt.pc" if rc == 0 else "exit %s %s" % (rc, tail(err)))
    rc, out, err = run("destdir_uninstall", ["make", "uninstall", "DESTDIR=" + stage, "PREFIX=/opt/cellc"], src,
                       base_env)
    left = os.listdir(staged) if os.path.isdir(staged) else []
    report("destdir/uninstall", rc == 0 and not left, "left %s" % left if left else "staged prefix empty")
    shutil.rmtree(src)

    # the installed tool alone
    env = dict(base_env)
    env["PATH"] = os.pathsep.join([os.path.join(prefix, "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
    env["PKG_CONFIG_PATH"] = os.path.join(prefix, "lib", "pkgconfig")
    env["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
    os.makedirs(work)
    rc, out, _ = run("version", ["sh", "-c", "command -v cellc && cellc --version"], work, env)
    report("path", rc == 0 and out.split() == [os.path.join(prefix, "bin", "cellc"), "cellc", VERSION],
           out.strip().replace("\n", " "))
    rc, out, _ = run("pkgconfig", ["sh", "-c", "pkg-config --modversion cellrt cellrt-noblas && "
                                   "pkg-config --cflags --libs cellrt && pkg-config --variable=archive cellrt-noblas"],
                     work, env)
    report("pkgconfig", rc == 0 and out.split() == [VERSION, VERSION, "-I%s/include" % prefix,
                                                    "-L%s/lib" % prefix, "-lcellrt",
                                                    "%s/lib/libcellrt-noblas.a" % prefix], " ".join(out.split()))

    forbidden = [src, ROOT]
    shutil.copy(os.path.join(ROOT, "examples", "lstm_classifier.onnx"), work)
    shutil.copytree(os.path.join(ROOT, "examples", "lstm_classifier"), os.path.join(work, "onnx_data"))
    check_model(run, env, work, "onnx", "lstm_classifier.onnx", "onnx_data", forbidden)
    if os.path.isfile(os.path.join(CELL_CASE, "model.cell")):
        shutil.copytree(CELL_CASE, os.path.join(work, "cell_model"))
        check_model(run, env, work, "cell", os.path.join("cell_model", "model.cell"), "cell_model", forbidden)
    else:
        report("cell/fixtures", False, "%s not generated (make tests/out/cells/.stamp)" % CELL_CASE)

    # verify --oracle onnxruntime: onnxruntime-node where an installed cellc looks
    ort = os.path.join(ROOT, "build", "ort")
    if not os.path.isfile(os.path.join(ort, "node_modules", "onnxruntime-node", "package.json")):
        run("make_ort", ["make", "-s", "ort"], ROOT, base_env)
    os.makedirs(os.path.join(env["XDG_CACHE_HOME"], "cellc"))
    os.symlink(ort, os.path.join(env["XDG_CACHE_HOME"], "cellc", "ort"))
    rc, out, err = run("oracle", ["cellc", "verify", "lstm_classifier.onnx", "--oracle", "onnxruntime",
                                  "--inputs", "2", "--dim", "batch=3", "--dim", "seq=7"], work, env)
    m = re.search(r"^(\d+) passed, 0 failed", out, re.M)
    report("oracle", rc == 0 and m is not None and "installing" not in err,
           m.group(0) + " (ONNX Runtime from XDG_CACHE_HOME/cellc/ort)" if rc == 0 and m
           else "exit %s %s" % (rc, tail(out + err)))

    # man pages
    for page in ("man1/cellc.1", "man5/cellc-cell.5"):
        path = os.path.join(prefix, "share", "man", page)
        rc, out, err = run("groff_" + page, ["groff", "-ww", "-z", "-man", "-Tutf8", path], work, env)
        rc2, out2, err2 = run("man_" + page, ["man", "-l", path], work, dict(env, MANWIDTH="80", MANPAGER="cat",
                                                                            PAGER="cat"))
        th = re.search(r'^\.TH .*"cellc ([^"]+)"', open(path).read(), re.M)
        report("man/" + os.path.basename(page), rc == 0 and not err.strip() and rc2 == 0 and not err2.strip()
               and "SEE ALSO" in out2 and th is not None and th.group(1) == VERSION, "groff -ww: no warning; man -l: %d lines" % len(out2.splitlines())
               if rc == 0 and not err.strip() and rc2 == 0 else tail(err + err2))
    rc, out, err = run("man_lookup", ["man", "cellc"], work, dict(env, MANPATH=os.path.join(prefix, "share", "man"),
                                                                  MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
    report("man/lookup", rc == 0 and "cellc info --unsupported" in out, "man cellc through MANPATH"
           if rc == 0 else tail(err))

    check_options(run, env, work, prefix)

    rc, out, err = run("uninstall", ["make", "-s", "uninstall", "PREFIX=" + prefix], ROOT, base_env)
    left = installed_files(prefix) | set(os.listdir(prefix))
    report("uninstall", rc == 0 and not left, "prefix empty" if rc == 0 and not left else
           "exit %s, left %s" % (rc, sorted(left)))
    if failed:
        print("install: kept %s" % tmp)
    else:
        shutil.rmtree(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
