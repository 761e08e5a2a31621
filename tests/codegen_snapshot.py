#!/usr/bin/python3
"""codegen_snapshot.py: what cellc generates for every model of the suite,
as a manifest of hashes, so that a refactoring can show it changed nothing.

    python3 tests/codegen_snapshot.py write MANIFEST [--cellc build/cellc] [--jobs N]
    python3 tests/codegen_snapshot.py compare OLD NEW

`write` compiles every model the fixtures generated (tests/out/**/model.onnx,
the .cell files there and in examples/), each with its default options and,
for .cell models and the training fixtures, with --train too, and records per
compilation the SHA-256 of every file written (or, for a refusal, of its
exit status and message), each compiled from the repository's root with
its relative path into the same directory in every run (the generated
header names the command).  Compare manifests written by binaries built at
the same path (the Makefile names the runtime's location), e.g. the old
and the new build/cellc of one tree.  Nothing is kept but the manifest.  `compare`
lists the compilations whose files differ and exits 1 if any do.  It needs
the fixtures (`make -s -k fixtures`); it is a tool for refactorings, not a
test: the expected output is the compiler's own, from before the change.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def jobs_of(root):
    """(key, argv tail) for every compilation of the snapshot."""
    out = []
    models = sorted(glob.glob(os.path.join(root, "tests/out/**/model.onnx"), recursive=True))
    models = [m for m in models if "_work" not in m]
    cells = sorted(glob.glob(os.path.join(root, "tests/out/**/*.cell"), recursive=True))
    cells = [c for c in cells if "_work" not in c]
    cells += sorted(glob.glob(os.path.join(root, "examples/*.cell")))
    for m in models:
        rel = os.path.relpath(m, root)
        out.append((rel, [rel]))
        if "/train" in rel or "/grad" in rel:
            out.append((rel + " --train", [rel, "--train"]))
    for c in cells:
        rel = os.path.relpath(c, root)
        out.append((rel, [rel]))
        out.append((rel + " --train", [rel, "--train"]))
    return out


def one(cellc, key, args):
    # the same output directory for the same compilation in every run: the
    # generated header names the command line
    d = os.path.join(tempfile.gettempdir(), "cellc_snap", hashlib.sha1(key.encode()).hexdigest()[:16])
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    try:
        env = dict(os.environ, CELLC_VALIDATE="0")
        p = subprocess.run([cellc, "compile"] + args + ["-o", d, "--name", "model"], env=env, cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        files = {}
        if p.returncode != 0:
            msg = p.stderr.decode("utf-8", "replace").replace(d, "OUT")
            files["(refused)"] = hashlib.sha256(("%d\n%s" % (p.returncode, msg)).encode()).hexdigest()
        for f in sorted(os.listdir(d)):
            path = os.path.join(d, f)
            if os.path.isfile(path):
                with open(path, "rb") as fh:
                    files[f] = hashlib.sha256(fh.read().replace(d.encode(), b"OUT")).hexdigest()
        return key, files
    except subprocess.TimeoutExpired:
        return key, {"(timeout)": ""}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("manifest")
    w.add_argument("--cellc", default=os.path.join(ROOT, "build", "cellc"))
    w.add_argument("--jobs", type=int, default=os.cpu_count())
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    a = ap.parse_args()
    if a.cmd == "write":
        todo = jobs_of(ROOT)
        if not todo:
            sys.exit("codegen_snapshot: no models under tests/out (run `make -s -k fixtures` first)")
        res = {}
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for key, files in ex.map(lambda t: one(os.path.abspath(a.cellc), *t), todo):
                res[key] = files
        with open(a.manifest, "w") as f:
            json.dump(res, f, indent=0, sort_keys=True)
        nref = sum(1 for v in res.values() if "(refused)" in v)
        print("codegen_snapshot: %d compilations (%d refused) into %s" % (len(res), nref, a.manifest))
        return
    old, new = (json.load(open(p)) for p in (a.old, a.new))
    diff = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    for k in diff:
        o, n = old.get(k, {}), new.get(k, {})
        files = sorted(f for f in set(o) | set(n) if o.get(f) != n.get(f))
        print("differs: %s: %s" % (k, ", ".join(files)))
    print("codegen_snapshot: %d of %d compilations differ" % (len(diff), len(set(old) | set(new))))
    sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
