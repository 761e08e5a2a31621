"""test_train_prog.py: the training program (templates/train_main.c) and its
runtime parts (runtime/rt_data.c, rt_inflate.c, rt_svg.c), driven against
the hand-written mock model of tests/train/ (mock.c: the API of a `cellc
compile --train` build, gradient checked by finite differences).

Prints one `PASS|FAIL train_prog/<name> detail` line per test; exit status
1 on any failure.  Oracles: Python's gzip and numpy for the readers,
PyTorch (torch.optim, clip_grad_norm_) for the loss trajectories, an
uninterrupted run for --resume, Python's xml parser for the plots,
tests/tensorfile.py for checkpoints.

usage: test_train_prog.py CELLC WORKDIR
"""
import gzip
import os
import pty
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import tensorfile  # noqa: E402

RT = os.path.join(ROOT, "runtime")
TR = os.path.join(HERE, "train")
SAN = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
       "-fno-omit-frame-pointer"]
SAN_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
SAN_MARKERS = ("runtime error", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")
I, C = 28, 10           # the mock's default sizes

failures = 0


def report(name, ok, detail=""):
    global failures
    failures += not ok
    print("%s train_prog/%s%s" % ("PASS" if ok else "FAIL", name, " " + detail if detail else ""), flush=True)


def sh(cmd, env=None, timeout=600, cwd=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout,
                       cwd=cwd)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def short(text, n=300):
    text = " | ".join(l.strip() for l in text.splitlines() if l.strip())
    return text[:n]


# ---- builds -------------------------------------------------------------------------

def build_tools(work):
    """test_data (plain and sanitized) and the finite-difference checks."""
    srcs = [os.path.join(RT, f) for f in ("rt_data.c", "rt_inflate.c", "rt_svg.c", "rt_status.c",
                                          "rt_tensorfile.c")]
    tools = {}
    for tag, flags in (("plain", ["-O2", "-g"]), ("san", SAN)):
        out = os.path.join(work, "test_data_" + tag)
        rc, o, e = sh(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror"] + flags + ["-I" + RT,
                      os.path.join(TR, "test_data.c")] + srcs + ["-lm", "-o", out])
        report("build/test_data_" + tag, rc == 0, short(e))
        tools[tag] = out if rc == 0 else None
    return tools


def lib_has_optim():
    rc, out, _ = sh(["nm", os.path.join(ROOT, "build", "libcellrt.a")])
    return rc == 0 and re.search(r" T rt_optim_update$", out, re.M) is not None


def prologue(name):
    """What `cellc compile --train` puts before templates/train_main.c
    (compiler/emit/emit.c, emit_train_program)."""
    return ("/* %s_train.c (test copy) */\n#define _POSIX_C_SOURCE 200809L\n#define CELLC_MODEL %s\n"
            "#include \"%s.h\"\n\n" % (name, name, name))


def build_mock(cellc, work, tag, defines=(), san=False):
    """A model directory made by `cellc compile` (for its Makefile), with the
    mock model put in place of the compiled one, built by `make mock_train`."""
    d = os.path.join(work, "mock_" + tag)
    shutil.rmtree(d, ignore_errors=True)
    rc, o, e = sh([cellc, "compile", os.path.join(ROOT, "examples", "momentum_lstm.cell"), "-o", d,
                   "--name", "mock"])
    if rc != 0:
        report("build/mock_" + tag, False, "cellc compile: " + short(e))
        return None
    with open(os.path.join(TR, "mock.c")) as f:
        src = f.read()
    cflags = ["-O1" if san else "-O2", "-g"] + (SAN[2:] if san else []) + list(defines)
    if not lib_has_optim():
        # libcellrt has no optimisers yet: the test double of rt_optim.c
        with open(os.path.join(TR, "mock_optim.c")) as f:
            src += "\n" + f.read()
        shutil.copy(os.path.join(TR, "mock_optim.h"), d)
        cflags += ["-D_POSIX_C_SOURCE=200809L", "-include", "mock_optim.h"]
    with open(os.path.join(d, "mock.c"), "w") as f:
        f.write(src)
    shutil.copy(os.path.join(TR, "mock.h"), d)
    with open(os.path.join(ROOT, "templates", "train_main.c")) as f:
        tpl = f.read()
    with open(os.path.join(d, "mock_train.c"), "w") as f:
        f.write(prologue("mock") + tpl)
    rc, o, e = sh(["make", "--no-print-directory", "-s", "-C", d, "mock_train", "CFLAGS=" + " ".join(cflags),
                   "CELLRT=" + ROOT])
    report("build/mock_" + tag, rc == 0, short(e + o))
    return os.path.join(d, "mock_train") if rc == 0 else None


def write_weights(path, seed, c=C, i=I):
    r = np.random.RandomState(seed)
    tensorfile.write(path, [("rec.a", np.full(i, 0.5, np.float32)),
                            ("head.weight", (r.randn(c, i) * 0.1).astype(np.float32)),
                            ("head.bias", np.zeros(c, np.float32))])


# ---- data files ----------------------------------------------------------------------

def idx_bytes(a):
    codes = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D,
             np.float64: 0x0E}
    code = codes[a.dtype.type]
    head = bytes([0, 0, code, a.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in a.shape)
    return head + a.astype(a.dtype.newbyteorder(">")).tobytes()


def npy_bytes(a, version=None):
    import io
    b = io.BytesIO()
    if version:
        np.lib.format.write_array(b, a, version=version)
    else:
        np.save(b, a)
    return b.getvalue()


def check_read(tool, path, want, name, san):
    out = path + ".out"
    rc, o, e = sh([tool, "read", path, out], env=SAN_ENV if san else None)
    if any(m in e for m in SAN_MARKERS):
        return report(name, False, "sanitizer report: " + short(e))
    if rc != 0:
        return report(name, False, "exit %d: %s" % (rc, short(o + e)))
    got = o.split()
    names = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
             "float32": np.float32, "float64": np.float64}
    ok = got[0] in names and np.dtype(names[got[0]]) == want.dtype.newbyteorder("=") and \
        [int(x) for x in got[2:]] == list(want.shape)
    if ok:
        data = np.fromfile(out, dtype=names[got[0]]).reshape(want.shape)
        ok = np.array_equal(data, want.astype(want.dtype.newbyteorder("=")), equal_nan=True)
    report(name, ok, "" if ok else "got %s" % o.strip())


def check_reject(tool, path, name, want_text=None):
    rc, o, e = sh([tool, "read", path, path + ".out"], env=SAN_ENV)
    if any(m in e for m in SAN_MARKERS):
        return report(name, False, "sanitizer report: " + short(e))
    ok = rc == 1 and o.startswith("error ") and os.path.basename(path) in o and \
        (want_text is None or want_text in o)
    report(name, ok, "" if ok else "exit %d: %s" % (rc, short(o + e)))


def test_readers(tools, work):
    d = os.path.join(work, "data")
    os.makedirs(d, exist_ok=True)
    r = np.random.RandomState(1)
    arrays = {
        "u8": r.randint(0, 256, (7, 5, 3)).astype(np.uint8),
        "i8": r.randint(-128, 128, (4, 6)).astype(np.int8),
        "i16": r.randint(-30000, 30000, (9,)).astype(np.int16),
        "i32": r.randint(-2**31, 2**31 - 1, (3, 4)).astype(np.int32),
        "f32": r.randn(2, 3, 4).astype(np.float32),
        "f64": r.randn(5, 2).astype(np.float64),
    }
    for san in (False, True):
        tool = tools["san" if san else "plain"]
        if not tool:
            continue
        tag = "san/" if san else ""
        for k, a in arrays.items():
            p = os.path.join(d, "a_%s.idx" % k)
            with open(p, "wb") as f:
                f.write(idx_bytes(a))
            check_read(tool, p, a, "%sidx/%s" % (tag, k), san)
            with gzip.open(p + ".gz", "wb") as f:
                f.write(idx_bytes(a))
            check_read(tool, p + ".gz", a, "%sidx/%s.gz" % (tag, k), san)
        npys = dict(f32=r.randn(6, 4, 3).astype(np.float32), f64=r.randn(3, 2),
                    i64=r.randint(-10**12, 10**12, (11,)).astype(np.int64),
                    i32=r.randint(-1000, 1000, (2, 2)).astype(np.int32),
                    u8=r.randint(0, 256, (5, 5)).astype(np.uint8),
                    f32_big=r.randn(4, 3).astype(">f4"), i64_big=np.arange(6, dtype=">i8").reshape(2, 3),
                    scalar=np.array(3.5, np.float32), empty=np.zeros((0, 4), np.float32))
        for k, a in npys.items():
            p = os.path.join(d, "b_%s.npy" % k)
            with open(p, "wb") as f:
                f.write(npy_bytes(a))
            check_read(tool, p, a, "%snpy/%s" % (tag, k), san)
        a = npys["f32"]
        p = os.path.join(d, "b_v2.npy")
        with open(p, "wb") as f:
            f.write(npy_bytes(a, (2, 0)))
        check_read(tool, p, a, "%snpy/version2" % tag, san)
        with gzip.open(os.path.join(d, "b_f32.npy.gz"), "wb") as f:
            f.write(npy_bytes(a))
        check_read(tool, os.path.join(d, "b_f32.npy.gz"), a, "%snpy/gz" % tag, san)
    tool = tools["san"]
    if not tool:
        return
    # truncated and hostile files: an error naming the file, no sanitizer report
    good_idx = idx_bytes(arrays["u8"])
    good_npy = npy_bytes(npys["f32"])
    bad = {
        "idx_cut_header": good_idx[:9],
        "idx_cut_data": good_idx[:-1],
        "idx_trailing": good_idx + b"x",
        "idx_type": bytes([0, 0, 0x07, 1, 0, 0, 0, 1, 5]),
        "idx_rank": bytes([0, 0, 0x08, 200]) + b"\0" * 800,
        "idx_huge": bytes([0, 0, 0x0D, 3]) + b"\xff\xff\xff\xff" * 3,
        "npy_cut_header": good_npy[:40],
        "npy_cut_data": good_npy[:-5],
        "npy_trailing": good_npy + b"\0" * 4,
        "npy_fortran": npy_bytes(np.asfortranarray(np.ones((3, 4), np.float32))),
        "npy_complex": npy_bytes(np.ones(3, np.complex64)),
        "npy_object_dict": b"\x93NUMPY\x01\x00\x20\x00{'descr': [('a','<f4')], }       \n",
        "npy_negative": b"\x93NUMPY\x01\x00\x40\x00{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }   \n",
        "npy_hl_past_end": b"\x93NUMPY\x01\x00\xff\xff{'descr'",
        "npy_huge_shape": b"\x93NUMPY\x01\x00\x50\x00{'descr': '<f8', 'fortran_order': False, "
                          b"'shape': (4294967296, 4294967296, 4294967296), }\n",
        "npy_rank9": b"\x93NUMPY\x01\x00\x50\x00{'descr': '<f4', 'fortran_order': False, "
                     b"'shape': (1,1,1,1,1,1,1,1,1), }           \n",
        "npy_version9": b"\x93NUMPY\x09\x00\x10\x00{}              ",
        "garbage": b"hello world, not data",
        "empty": b"",
        "gzip_cut": gzip.compress(good_idx)[:-10],
        "gzip_crc": bytearray(gzip.compress(good_idx)),
    }
    bad["gzip_crc"][-6] ^= 0xff
    bad["gzip_crc"] = bytes(bad["gzip_crc"])
    for k, b in bad.items():
        p = os.path.join(d, "bad_%s" % k)
        with open(p, "wb") as f:
            f.write(b)
        check_reject(tool, p, "san/reject/" + k)
    check_reject(tool, os.path.join(d, "no_such_file"), "san/reject/missing")
    # every prefix of a gzipped IDX file and of a .npy file is refused
    gz = gzip.compress(good_idx)
    cut_ok, cut_detail = True, ""
    for name, blob in (("gz", gz), ("npy", good_npy), ("idx", good_idx)):
        for n in sorted(set(list(range(0, min(len(blob), 80))) + list(range(80, len(blob), 7)))):
            p = os.path.join(d, "cut_%s" % name)
            with open(p, "wb") as f:
                f.write(blob[:n])
            rc, o, e = sh([tool, "read", p, p + ".out"], env=SAN_ENV)
            if rc != 1 or any(m in e for m in SAN_MARKERS) or "cut_" not in o:
                cut_ok, cut_detail = False, "%s cut at %d: exit %d %s" % (name, n, rc, short(o + e))
                break
    report("san/reject/every_prefix", cut_ok, cut_detail)
    # random corruption of compressed data never crashes
    rnd = random.Random(5)
    crash = ""
    for trial in range(200):
        b = bytearray(gz)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(10, len(b))] = rnd.randrange(256)
        p = os.path.join(d, "fuzz.gz")
        with open(p, "wb") as f:
            f.write(b)
        rc, o, e = sh([tool, "read", p, p + ".out"], env=SAN_ENV)
        if rc not in (0, 1) or any(m in e for m in SAN_MARKERS):
            crash = "trial %d: exit %d %s" % (trial, rc, short(e))
            break
    report("san/reject/fuzz_gzip", not crash, crash)


def test_inflate(tools, work):
    """rt_gunzip against `gzip -c` of random and structured data."""
    d = os.path.join(work, "inflate")
    os.makedirs(d, exist_ok=True)
    r = random.Random(7)
    blobs = {
        "empty": b"",
        "one": b"x",
        "random_100k": bytes(r.randrange(256) for _ in range(100000)),
        "text": b"".join(b"line %d: the quick brown fox %d\n" % (i, i * i % 97) for i in range(20000)),
        "zeros_1m": b"\0" * 1000000,
        "runs": b"".join(bytes([r.randrange(4)]) * r.randrange(1, 300) for _ in range(3000)),
        "mixed": bytes(r.choice(b"abcd") for _ in range(50000)) + bytes(r.randrange(256) for _ in range(30000)),
    }
    for san in (False, True):
        tool = tools["san" if san else "plain"]
        if not tool:
            continue
        for name, blob in blobs.items():
            if san and len(blob) > 200000:
                continue
            raw = os.path.join(d, name)
            with open(raw, "wb") as f:
                f.write(blob)
            for level in ("-1", "-6", "-9"):
                gz = raw + level + ".gz"
                with open(gz, "wb") as f:
                    subprocess.run(["gzip", "-c", "-n", level, raw], stdout=f, check=True)
                out = gz + ".out"
                rc, o, e = sh([tool, "gunzip", gz, out], env=SAN_ENV if san else None)
                ok = rc == 0 and not any(m in e for m in SAN_MARKERS) and open(out, "rb").read() == blob
                report("%sinflate/%s%s" % ("san/" if san else "", name, level), ok,
                       "" if ok else "exit %d %s" % (rc, short(o + e)))
        # two members, and a file name in the header (gzip -N keeps it)
        raw = os.path.join(d, "text")
        a = subprocess.run(["gzip", "-c", "-N", raw], stdout=subprocess.PIPE, check=True).stdout
        b = subprocess.run(["gzip", "-c", "-1", os.path.join(d, "one")], stdout=subprocess.PIPE, check=True).stdout
        cat = os.path.join(d, "two_members.gz")
        with open(cat, "wb") as f:
            f.write(a + b)
        rc, o, e = sh([tool, "gunzip", cat, cat + ".out"], env=SAN_ENV if san else None)
        ok = rc == 0 and open(cat + ".out", "rb").read() == blobs["text"] + blobs["one"]
        report("%sinflate/two_members" % ("san/" if san else ""), ok, "" if ok else short(o + e))


def test_fashion(tools):
    """Debian's dataset-fashion-mnist, when installed: shapes and contents."""
    base = "/usr/share/datasets/fashion-mnist"
    tool = tools["plain"]
    if not tool or not os.path.isdir(base):
        return
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        p = os.path.join(base, f)
        raw = gzip.open(p).read()
        nd = raw[3]
        dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
        want = np.frombuffer(raw[4 + 4 * nd:], np.uint8).reshape(dims)
        out = os.path.join(os.path.dirname(tool), f + ".out")
        rc, o, e = sh([tool, "read", p, out])
        ok = rc == 0 and o.split()[2:] == [str(x) for x in dims] and \
            np.array_equal(np.fromfile(out, np.uint8).reshape(dims), want)
        report("fashion_mnist/" + f, ok, "" if ok else short(o + e))


def test_svg(tools, work):
    tool = tools["san"]
    if not tool:
        return
    p = os.path.join(work, "awkward.svg")
    rc, o, e = sh([tool, "svg", p], env=SAN_ENV)
    ok = rc == 0 and not any(m in e for m in SAN_MARKERS)
    detail = short(o + e)
    if ok:
        try:
            root = ET.parse(p).getroot()
            texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
            ok = 'a <b> & "c"' in texts and "title <&>" in texts
            detail = "" if ok else "texts: " + texts[:200]
        except ET.ParseError as ex:
            ok, detail = False, "not well-formed: %s" % ex
    report("svg/escaping", ok, detail)


# ---- the training program --------------------------------------------------------------

def make_sets(d, n=200, t=5, seed=0, n_test=60):
    """Sequences [N, T, 28] with labels a linear teacher gives the last steps."""
    os.makedirs(d, exist_ok=True)
    r = np.random.RandomState(seed)
    teacher = r.randn(C, I)
    paths = {}
    for split, m in (("train", n), ("test", n_test)):
        x = r.randn(m, t, I).astype(np.float32)
        h = np.zeros((m, I))
        for s in range(t):
            h = 0.5 * h + x[:, s]
        y = (h @ teacher.T).argmax(1).astype(np.int64)
        np.save(os.path.join(d, split + "_x.npy"), x)
        np.save(os.path.join(d, split + "_y.npy"), y)
        paths[split] = (os.path.join(d, split + "_x.npy"), os.path.join(d, split + "_y.npy"))
    return paths


def read_csv(path):
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f]
    return lines[0].split(","), [l.split(",") for l in lines[1:] if l]


def torch_trajectory(x, y, w, opt, lr, batch, epochs, groups=None, clip=0.0, kind="ce", **kw):
    """Losses of the mock model trained by PyTorch on batches in order."""
    import torch
    torch.set_num_threads(1)
    a = torch.tensor(w["rec.a"], requires_grad=True)
    W = torch.tensor(w["head.weight"], requires_grad=True)
    b = torch.tensor(w["head.bias"], requires_grad=True)
    params = [("rec.a", a), ("head.weight", W), ("head.bias", b)]
    pg = []
    for name, p in params:
        plr = lr
        for pre, glr in sorted((groups or {}).items(), key=lambda g: len(g[0])):
            if name.startswith(pre):
                plr = glr
        pg.append({"params": [p], "lr": plr})
    o = torch.optim.SGD(pg, lr=lr, **kw) if opt == "sgd" else torch.optim.Adam(pg, lr=lr, **kw)
    X, Y = torch.tensor(x), torch.tensor(y)
    losses = []
    for _ in range(epochs):
        for s in range(0, len(X), batch):
            xb, yb = X[s:s + batch], Y[s:s + batch]
            h = torch.zeros(xb.shape[0], I)
            zs = []
            for t in range(xb.shape[1]):
                h = a * h + xb[:, t]
                zs.append(h @ W.T + b)
            z = zs[-1]
            if kind == "ce":
                loss = torch.nn.functional.cross_entropy(z, yb)
            elif kind == "ce-all":      # yb [B, T]
                loss = torch.nn.functional.cross_entropy(torch.stack(zs, 1).reshape(-1, C), yb.reshape(-1))
            elif kind == "mse":
                loss = torch.nn.functional.mse_loss(z, yb)
            else:                       # masked-mse: NaN targets are masked out
                mask = (~torch.isnan(yb)).float()
                loss = (mask * (z - torch.nan_to_num(yb)) ** 2).sum() / mask.sum()
            o.zero_grad()
            loss.backward()
            if clip:
                torch.nn.utils.clip_grad_norm_([a, W, b], clip)
            o.step()
            losses.append(loss.item())
    return losses


def run_train(binary, args, env=None, timeout=300):
    return sh([binary] + args, env=env, timeout=timeout)


def test_options(binary, work, paths):
    tx, ty = paths["train"]
    w = os.path.join(work, "opt.weights")
    write_weights(w, 0)
    base = ["--train-data", tx, "--train-labels", ty, "--weights", w]
    cases = {
        "no_data": ([], "no training data"),
        "no_labels": (["--train-data", tx], "no training labels"),
        "unknown": (base + ["--frobnicate", "1"], "unknown option"),
        "epochs_zero": (base + ["--epochs", "0"], "--epochs"),
        "batch_text": (base + ["--batch", "ten"], "--batch"),
        "lr_negative": (base + ["--lr", "-1"], "--lr"),
        "lr_nan": (base + ["--lr", "nan"], "--lr"),
        "optimizer": (base + ["--optimizer", "lbfgs"], "--optimizer"),
        "input": (base + ["--input", "columns"], "--input"),
        "test_pair": (base + ["--test-data", tx], "--test-data and --test-labels"),
        "ckpt_every": (base + ["--checkpoint-every", "3"], "--checkpoint-every"),
        "lr_group_form": (base + ["--lr-group", "head.weight"], "PREFIX=LR"),
        "lr_group_unused": (base + ["--lr-group", "nosuch.=0.1"], "no parameter name"),
        "missing_value": (base + ["--epochs"], "needs a value"),
        "no_such_data": (["--train-data", tx + ".nope", "--train-labels", ty, "--weights", w], ".nope"),
        "no_such_weights": (["--train-data", tx, "--train-labels", ty, "--weights", w + ".nope"], ".nope"),
        "input_pixels_fit": (base + ["--input", "pixels"], "do not fit"),
        "labels_for_data": (["--train-data", tx, "--train-labels", paths["test"][1], "--weights", w], "samples"),
        "plot_dir": (base + ["--plot", os.path.join(work, "no", "dir")], "--plot"),
        "tol_not_mse": (base + ["--tol", "0.04"], "--tol is for the mse losses"),
        "tol_negative": (base + ["--tol", "-1"], "--tol wants a finite number"),
        "seq_acc_not_ce_all": (base + ["--seq-acc"], "--seq-acc is for the ce-all loss"),
    }
    d = os.path.join(work, "optdata")
    os.makedirs(d, exist_ok=True)
    x = np.load(tx)
    np.save(os.path.join(d, "y_range.npy"), np.full(len(x), C, np.int64))
    cases["label_range"] = (["--train-data", tx, "--train-labels", os.path.join(d, "y_range.npy"),
                             "--weights", w], "outside [0, 10)")
    np.save(os.path.join(d, "y_float.npy"), np.full(len(x), 0.5, np.float32))
    cases["label_float"] = (["--train-data", tx, "--train-labels", os.path.join(d, "y_float.npy"),
                             "--weights", w], "not an integer")
    np.save(os.path.join(d, "x_wide.npy"), np.zeros((len(x), 5, I + 1), np.float32))
    cases["sample_shape"] = (["--train-data", os.path.join(d, "x_wide.npy"), "--train-labels", ty,
                              "--weights", w], "do not fit")
    # output paths are tried before the first step (issue 43): each of these
    # used to fail only when first written, after an epoch of training (the
    # process runs as root in CI, so no case relies on permissions)
    os.makedirs(os.path.join(d, "plot_svg_dir", "loss.svg"), exist_ok=True)
    with open(os.path.join(d, "a_file"), "w") as f:
        f.write("not a directory\n")
    cases["checkpoint_no_dir"] = (base + ["--checkpoint", os.path.join(work, "no", "dir", "ckpt")],
                                  "--checkpoint %s" % os.path.join(work, "no", "dir", "ckpt"))
    cases["checkpoint_is_dir"] = (base + ["--checkpoint", d], "--checkpoint %s: is a directory" % d)
    cases["checkpoint_under_file"] = (base + ["--checkpoint", os.path.join(d, "a_file", "ckpt")],
                                      "cannot write in %s" % os.path.join(d, "a_file"))
    cases["plot_is_file"] = (base + ["--plot", os.path.join(d, "a_file")], "--plot %s" % os.path.join(d, "a_file"))
    cases["plot_svg_is_dir"] = (base + ["--plot", os.path.join(d, "plot_svg_dir")],
                                "cannot write %s" % os.path.join(d, "plot_svg_dir", "loss.svg"))
    for name, (args, text) in cases.items():
        rc, o, e = run_train(binary, args, env=SAN_ENV)
        ok = rc == 2 and text in e and not any(m in e for m in SAN_MARKERS)
        if ok and name.startswith(("checkpoint_", "plot_")) and "epoch" in o:
            ok, e = False, "trained before refusing: " + e
        report("options/" + name, ok, "" if ok else "exit %d: %s" % (rc, short(o + e)))
    rc, o, e = run_train(binary, ["--help"], env=SAN_ENV)
    report("options/help", rc == 0 and "--train-data" in o and "--resume" in o, short(e))
    # every option of --help is in docs/training.md's synopsis of the program
    with open(os.path.join(ROOT, "docs", "training.md")) as f:
        doc = f.read()
    synopsis = doc[doc.index("_train --train-data"):]
    synopsis = synopsis[:synopsis.index("\n\n")]
    missing = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", o)) - set(re.findall(r"--[a-z][a-z0-9-]*", synopsis)))
    report("options/documented", rc == 0 and not missing, "not in docs/training.md's synopsis: %s" % missing)


def test_trajectories(binary, work, paths):
    """Per-step losses against PyTorch training the same model on the same
    batches (--no-shuffle), with a last short batch."""
    tx, ty = paths["train"]
    x, y = np.load(tx), np.load(ty)
    w = os.path.join(work, "traj.weights")
    write_weights(w, 3)
    init = dict(tensorfile.read(w))
    cases = [
        ("sgd_nesterov", ["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9", "--nesterov",
                          "--weight-decay", "0.01"],
         dict(opt="sgd", lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
        ("adam_groups_clip", ["--optimizer", "adam", "--lr", "0.01", "--lr-group", "head.=0.02",
                              "--lr-group", "head.bias=0.005", "--clip", "0.5"],
         dict(opt="adam", lr=0.01, groups={"head.": 0.02, "head.bias": 0.005}, clip=0.5)),
    ]
    vx, vy = paths["test"]
    for name, args, ref in cases:
        log = os.path.join(work, "traj_%s.csv" % name)
        elog, ck = os.path.join(work, "traj_%s_epochs.csv" % name), os.path.join(work, "traj_%s.ckpt" % name)
        rc, o, e = run_train(binary, ["--train-data", tx, "--train-labels", ty, "--weights", w, "--no-shuffle",
                                      "--batch", "32", "--epochs", "2", "--log", log, "--quiet", "--test-data", vx,
                                      "--test-labels", vy, "--epoch-log", elog, "--checkpoint", ck] + args)
        if rc != 0:
            report("trajectory/" + name, False, "exit %d: %s" % (rc, short(e)))
            continue
        _, rows = read_csv(log)
        got = [float(r[2]) for r in rows]
        kw = dict(ref)
        want = torch_trajectory(x, y, init, kw.pop("opt"), kw.pop("lr"), 32, 2, kw.pop("groups", None),
                                kw.pop("clip", 0.0), **kw)
        ok = len(got) == len(want) == 14
        worst = max(abs(g - r) / max(abs(r), 1e-12) for g, r in zip(got, want)) if ok else float("inf")
        ok = ok and worst <= 1e-4 and want[-1] < want[0]
        report("trajectory/" + name, ok, "%d steps, max rel err %.2e" % (len(got), worst))
        # the epoch's evaluation against numpy with the checkpoint's parameters
        p = dict(tensorfile.read(ck))
        xt, yt = np.load(vx).astype(np.float64), np.load(vy)
        h = np.zeros((len(xt), I))
        for t in range(xt.shape[1]):
            h = p["rec.a"] * h + xt[:, t]
        z = h @ p["head.weight"].T.astype(np.float64) + p["head.bias"]
        m = z.max(1, keepdims=True)
        ce = (np.log(np.exp(z - m).sum(1)) + m[:, 0] - z[np.arange(len(yt)), yt]).mean()
        acc = (z.argmax(1) == yt).mean()
        last = read_csv(elog)[1][-1]
        ok = abs(float(last[2]) - ce) <= 1e-5 * abs(ce) and abs(float(last[3]) - acc) < 1e-9
        report("evaluation/" + name, ok, "test_loss %s test_acc %s; numpy %.7g %.4f" % (last[2], last[3], ce, acc))


def test_losses(builds, work, paths):
    """The ce-all, mse and masked-mse builds of the mock, and batch-first
    ones: label layouts ([N, T] class indices; float targets [N, C], NaN =
    missing), per-step losses against PyTorch, evaluation (loss, accuracy
    per step for ce-all) against numpy."""
    tx, _ = paths["train"]
    vx, _ = paths["test"]
    x, xt = np.load(tx), np.load(vx)
    r = np.random.RandomState(8)
    for tag, (kind, binary) in builds.items():
        if not binary:
            continue
        if kind == "ce":
            y, yt = r.randint(0, C, len(x)).astype(np.int64), r.randint(0, C, len(xt)).astype(np.int64)
        elif kind == "ce-all":
            y, yt = r.randint(0, C, (len(x), x.shape[1])), r.randint(0, C, (len(xt), x.shape[1]))
            y, yt = y.astype(np.int32), yt.astype(np.int64)     # int32 labels are read too
        else:
            y, yt = r.randn(len(x), C).astype(np.float32), r.randn(len(xt), C).astype(np.float32)
            if kind == "masked-mse":
                y[r.rand(*y.shape) < 0.3] = np.nan
                yt[r.rand(*yt.shape) < 0.3] = np.nan
        yp, ytp = os.path.join(work, "sets", "y_%s.npy" % tag), os.path.join(work, "sets", "yt_%s.npy" % tag)
        np.save(yp, y)
        np.save(ytp, yt)
        w = os.path.join(work, "loss_%s.weights" % tag)
        write_weights(w, 8)
        log, elog = os.path.join(work, "traj_%s.csv" % tag), os.path.join(work, "traj_%s_epochs.csv" % tag)
        ck = os.path.join(work, "traj_%s.ckpt" % tag)
        rc, o, e = run_train(binary, ["--train-data", tx, "--train-labels", yp, "--weights", w, "--no-shuffle",
                                      "--batch", "50", "--epochs", "3", "--log", log, "--quiet", "--optimizer", "sgd",
                                      "--lr", "0.05", "--momentum", "0.5", "--dampening", "0.1", "--test-data", vx,
                                      "--test-labels", ytp, "--epoch-log", elog, "--checkpoint", ck])
        if rc != 0:
            report("trajectory/" + tag, False, "exit %d: %s" % (rc, short(e)))
            continue
        got = [float(row[2]) for row in read_csv(log)[1]]
        want = torch_trajectory(x, y.astype(np.int64) if kind == "ce-all" else y, dict(tensorfile.read(w)), "sgd",
                                0.05, 50, 3, kind=kind, momentum=0.5, dampening=0.1)
        ok = len(got) == len(want) == 12
        worst = max(abs(g - q) / max(abs(q), 1e-12) for g, q in zip(got, want)) if ok else float("inf")
        report("trajectory/" + tag, ok and worst <= 1e-4 and want[-1] < want[0],
               "%d steps, max rel err %.2e" % (len(got), worst))
        p = dict(tensorfile.read(ck))
        h = np.zeros((len(xt), I))
        zs = []
        for t in range(xt.shape[1]):
            h = p["rec.a"] * h + xt[:, t].astype(np.float64)
            zs.append(h @ p["head.weight"].T.astype(np.float64) + p["head.bias"])
        last = read_csv(elog)[1][-1]
        if kind in ("ce", "ce-all"):
            z = np.stack(zs, 1) if kind == "ce-all" else zs[-1][:, None]   # [N, T or 1, C]
            yt = yt if kind == "ce-all" else yt[:, None]
            m = z.max(2, keepdims=True)
            lse = np.log(np.exp(z - m).sum(2)) + m[..., 0]
            ce = (lse - np.take_along_axis(z, yt[..., None], 2)[..., 0]).mean()
            acc = (z.argmax(2) == yt).mean()
            ok = abs(float(last[2]) - ce) <= 1e-5 * abs(ce) and abs(float(last[3]) - acc) < 1e-9
            detail = "test_loss %s test_acc %s; numpy %.7g %.4f" % (last[2], last[3], ce, acc)
            if kind == "ce-all":
                # --seq-acc: the same run on test labels that are the final
                # model's predictions, one step changed in about half of the
                # sequences: the share of sequences right is the other half
                ys = z.argmax(2)
                wrong = r.rand(len(ys)) < 0.5
                ys[wrong, r.randint(0, ys.shape[1], wrong.sum())] += 1
                ys %= z.shape[2]
                ysp, slog = os.path.join(work, "sets", "ys_%s.npy" % tag), os.path.join(work, "seq_%s.csv" % tag)
                np.save(ysp, ys.astype(np.int64))
                rc, o, e = run_train(binary, ["--train-data", tx, "--train-labels", yp, "--weights", w,
                                              "--no-shuffle", "--batch", "50", "--epochs", "3", "--quiet",
                                              "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.5",
                                              "--dampening", "0.1", "--test-data", vx, "--test-labels", ysp,
                                              "--epoch-log", slog, "--seq-acc"])
                sacc = float((z.argmax(2) == ys).all(1).mean())
                sgot = read_csv(slog)[1][-1][3] if rc == 0 else "exit %d: %s" % (rc, short(e))
                report("evaluation/%s_seq_acc" % tag, rc == 0 and abs(float(sgot) - sacc) < 1e-9 and 0 < sacc < 1,
                       "test_acc %s; numpy, sequences all right: %.4f" % (sgot, sacc))
        else:
            # per-batch means, weighted by batch size (the program's test loss)
            z, tl = zs[-1], 0.0
            for s0 in range(0, len(xt), 50):
                zb, yb = z[s0:s0 + 50], yt[s0:s0 + 50]
                mk = ~np.isnan(yb)
                tl += ((zb - np.nan_to_num(yb)) ** 2 * mk).sum() / mk.sum() * len(zb)
            tl /= len(xt)
            ok = abs(float(last[2]) - tl) <= 1e-5 * abs(tl) and last[3] == ""
            detail = "test_loss %s; numpy %.7g" % (last[2], tl)
        report("evaluation/" + tag, ok, detail)


def test_resume(binary, work, paths):
    """An interrupted and resumed run gives the uninterrupted run's steps,
    epoch results and final checkpoint."""
    tx, ty = paths["train"]
    vx, vy = paths["test"]
    w = os.path.join(work, "resume.weights")
    write_weights(w, 4)
    common = ["--train-data", tx, "--train-labels", ty, "--test-data", vx, "--test-labels", vy, "--weights", w,
              "--batch", "24", "--epochs", "3", "--seed", "9", "--optimizer", "adam", "--lr", "0.02", "--quiet",
              "--permute", "5"]
    outs = {}
    for tag in ("full", "split"):
        d = os.path.join(work, "resume_" + tag)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        files = ["--log", os.path.join(d, "log.csv"), "--epoch-log", os.path.join(d, "epochs.csv"),
                 "--grad-norms", os.path.join(d, "norms.csv"), "--checkpoint", os.path.join(d, "ckpt"),
                 "--checkpoint-every", "4", "--plot", d]
        if tag == "full":
            rc, o, e = run_train(binary, common + files)
            rcs = [rc]
        else:
            rcs = []
            for k, stop in enumerate((6, 9, 19)):    # mid-epoch, an epoch end (9 per epoch), mid-epoch
                extra = ["--max-steps", str(stop)] + (["--resume", os.path.join(d, "ckpt")] if k else [])
                rc, o, e = run_train(binary, common + files + extra)
                rcs.append(rc)
            rc, o, e = run_train(binary, common + files + ["--resume", os.path.join(d, "ckpt")])
            rcs.append(rc)
        outs[tag] = (d, rcs, e)
    (fd, frc, fe), (sd, src, se) = outs["full"], outs["split"]
    if any(frc) or any(src):
        return report("resume/runs", False, "exit statuses %s %s: %s" % (frc, src, short(fe + se)))
    _, fl = read_csv(os.path.join(fd, "log.csv"))
    _, sl = read_csv(os.path.join(sd, "log.csv"))
    same = [r[:4] for r in fl] == [r[:4] for r in sl]
    report("resume/step_log", same and len(fl) == 27, "%d and %d rows" % (len(fl), len(sl)))
    _, fe_ = read_csv(os.path.join(fd, "epochs.csv"))
    _, se_ = read_csv(os.path.join(sd, "epochs.csv"))
    report("resume/epoch_log", [r[:4] + r[5:] for r in fe_] == [r[:4] + r[5:] for r in se_] and len(fe_) == 3,
           "%s vs %s" % (fe_[-1:], se_[-1:]))
    _, fn = read_csv(os.path.join(fd, "norms.csv"))
    _, sn = read_csv(os.path.join(sd, "norms.csv"))
    report("resume/grad_norms", fn == sn and len(fn) == 3 * 5, "%d and %d rows" % (len(fn), len(sn)))
    a = dict(tensorfile.read(os.path.join(fd, "ckpt")))
    b = dict(tensorfile.read(os.path.join(sd, "ckpt")))
    keys = sorted(k for k in a if k != "@train/seconds")
    same = keys == sorted(k for k in b if k != "@train/seconds") and all(np.array_equal(a[k], b[k]) for k in keys)
    report("resume/checkpoint", same and "@opt/head.weight/exp_avg_sq" in a and int(a["@train/step"][0]) == 27,
           "tensors: %s" % ", ".join(keys[:12]))
    # the final checkpoint is a weights file the model accepts: resume runs no step
    rc, o, e = run_train(binary, common + ["--resume", os.path.join(fd, "ckpt"), "--log", os.path.join(fd, "again.csv")])
    _, again = read_csv(os.path.join(fd, "again.csv"))
    report("resume/finished", rc == 0 and not again and "nothing to train" in o and
           not re.search(r"^epoch ", o, re.M), "exit %d %s" % (rc, short(o + e)))
    # a checkpoint of other settings is refused
    rc, o, e = run_train(binary, common + ["--batch", "25", "--resume", os.path.join(fd, "ckpt")])
    report("resume/other_batch", rc == 2 and "--batch 24" in e, "exit %d %s" % (rc, short(e)))
    # the plots parse as SVG with one line per series
    for f in ("loss.svg", "grad_norms.svg"):
        try:
            root = ET.parse(os.path.join(sd, f)).getroot()
            lines = root.findall("{http://www.w3.org/2000/svg}polyline")
            pts = [tuple(map(float, p.split(","))) for l in lines for p in l.get("points").split()]
            ok = root.tag == "{http://www.w3.org/2000/svg}svg" and len(lines) >= 3 and \
                all(0 <= px <= 720 and 0 <= py <= 420 for px, py in pts)
            report("svg/" + f, ok, "%d polylines, %d points" % (len(lines), len(pts)))
        except (ET.ParseError, OSError, ValueError) as ex:
            report("svg/" + f, False, str(ex))


def test_images(binary, work):
    """IDX images (gzipped) as rows and as permuted pixels, scaled."""
    d = os.path.join(work, "images")
    os.makedirs(d, exist_ok=True)
    r = np.random.RandomState(2)
    imgs = r.randint(0, 256, (64, 28, 28)).astype(np.uint8)
    labels = r.randint(0, C, 64).astype(np.uint8)
    for name, blob in (("x.gz", idx_bytes(imgs)), ("y.gz", idx_bytes(labels))):
        with gzip.open(os.path.join(d, name), "wb") as f:
            f.write(blob)
    w28 = os.path.join(d, "w28.weights")
    write_weights(w28, 0)
    base = ["--train-data", os.path.join(d, "x.gz"), "--train-labels", os.path.join(d, "y.gz"), "--batch", "16",
            "--scale", "--quiet", "--no-shuffle", "--max-steps", "2"]
    rc, o, e = run_train(binary, base + ["--input", "rows", "--weights", w28, "--log", os.path.join(d, "rows.csv")])
    report("images/rows", rc == 0, "exit %d %s" % (rc, short(e)))
    rc2, o2, e2 = run_train(binary, base + ["--input", "pixels", "--weights", w28])
    report("images/pixels_need_I1", rc2 == 2 and "do not fit" in e2, "exit %d %s" % (rc2, short(e2)))
    # the first loss against numpy on the same transformation
    if rc == 0:
        _, rows = read_csv(os.path.join(d, "rows.csv"))
        w = dict(tensorfile.read(w28))
        x = imgs[:16].astype(np.float32) / 255.0
        h = np.zeros((16, I), np.float64)
        for t in range(28):
            h = 0.5 * h + x[:, t]
        z = h @ w["head.weight"].T.astype(np.float64) + w["head.bias"]
        m = z.max(1, keepdims=True)
        ce = (np.log(np.exp(z - m).sum(1)) + m[:, 0] - z[np.arange(16), labels[:16]]).mean()
        got = float(rows[0][2])
        report("images/rows_first_loss", abs(got - ce) <= 1e-4 * abs(ce), "got %.7g want %.7g" % (got, ce))


def test_pixels(binary1, work):
    """--input pixels --permute on a model with I = 1."""
    if not binary1:
        return
    d = os.path.join(work, "images")
    w1 = os.path.join(d, "w1.weights")
    write_weights(w1, 0, i=1)
    log = os.path.join(d, "pixels.csv")
    rc, o, e = run_train(binary1, ["--train-data", os.path.join(d, "x.gz"), "--train-labels", os.path.join(d, "y.gz"),
                                   "--batch", "16", "--scale", "--quiet", "--input", "pixels", "--permute", "3",
                                   "--weights", w1, "--max-steps", "3", "--log", log, "--grad-norms",
                                   os.path.join(d, "pn.csv")])
    ok = rc == 0 and len(read_csv(log)[1]) == 3
    report("images/pixels_permuted", ok, "exit %d %s" % (rc, short(e)))


def test_nan(binary, work, paths):
    """A NaN in the data stops the run with status 1 and keeps the last checkpoint."""
    tx, ty = paths["train"]
    d = os.path.join(work, "nan")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    w = os.path.join(work, "nan.weights")
    write_weights(w, 5)
    for kind, val in (("nan", np.nan), ("inf", np.inf)):
        x = np.load(tx)
        x[3 * 20 + 5, 2, 7] = val           # in the 4th batch of 20
        xp = os.path.join(d, "x_%s.npy" % kind)
        np.save(xp, x)
        ck = os.path.join(d, "ckpt_" + kind)
        rc, o, e = run_train(binary, ["--train-data", xp, "--train-labels", ty, "--weights", w, "--no-shuffle",
                                      "--batch", "20", "--checkpoint", ck, "--checkpoint-every", "1", "--quiet",
                                      "--optimizer", "sgd", "--lr", "0.1"], env=SAN_ENV)
        ok = rc == 1 and "step 4" in e and ("NaN" in e or "infinite" in e) and "kept" in e
        try:
            t = dict(tensorfile.read(ck))
            ok = ok and int(t["@train/step"][0]) == 3
        except Exception as ex:     # noqa: BLE001 -- any failure to read is the failure
            ok, e = False, e + " checkpoint: %s" % ex
        report("nan_stop/" + kind, ok and not any(m in e for m in SAN_MARKERS), "exit %d %s" % (rc, short(e)))


def test_progress(binary, work, paths):
    """A progress bar with \\r on a terminal, plain lines otherwise."""
    tx, ty = paths["train"]
    w = os.path.join(work, "prog.weights")
    write_weights(w, 6)
    args = [binary, "--train-data", tx, "--train-labels", ty, "--weights", w, "--batch", "8", "--epochs", "2"]
    rc, o, e = sh(args)
    ok = rc == 0 and "\r" not in e and "samples/s" in e and re.search(r"^epoch 2/2: train_loss \S+", o, re.M)
    report("progress/plain", bool(ok), short(e))
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(binary, args)
    buf = b""
    t_end = time.time() + 120
    while time.time() < t_end:
        r, _, _ = select.select([fd], [], [], 1)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    _, status = os.waitpid(pid, 0)
    text = buf.decode(errors="replace")
    ok = os.WEXITSTATUS(status) == 0 and "\r" in text and "ETA" in text and "samples/s" in text
    report("progress/tty", ok, repr(text[-200:]))


def test_kill(binary, work, paths):
    """SIGKILL at random moments of a run that writes a large checkpoint
    after every step: the checkpoint always loads (checksum) and resumes."""
    if not binary:
        return
    tx, ty = paths["train"]
    d = os.path.join(work, "kill")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    w = os.path.join(d, "big.weights")
    write_weights(w, 7, c=BIG_C)
    ck = os.path.join(d, "ckpt")
    args = [binary, "--train-data", tx, "--train-labels", ty, "--weights", w, "--batch", "10", "--epochs", "50",
            "--checkpoint", ck, "--checkpoint-every", "1", "--quiet", "--optimizer", "adam"]
    rnd = random.Random(11)
    bad, steps, torn = "", [], 0
    for trial in range(12):
        before = set(os.listdir(d))
        p = subprocess.Popen(args + (["--resume", ck] if os.path.exists(ck) else []), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        time.sleep(rnd.uniform(0.3, 1.2))
        t_end = time.time() + 60          # the first run: at least one checkpoint (a loaded machine)
        while not os.path.exists(ck) and time.time() < t_end and p.poll() is None:
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait()
        torn += len([f for f in set(os.listdir(d)) - before if ".tmp." in f])
        if not os.path.exists(ck):
            continue
        try:
            t = dict(tensorfile.read(ck))      # checks sizes and the FNV-1a checksum
            steps.append(int(t["@train/step"][0]))
            if t["head.weight"].shape != (BIG_C, I) or "@opt/head.weight/exp_avg" not in t:
                bad = "trial %d: checkpoint lacks tensors" % trial
        except Exception as ex:     # noqa: BLE001
            bad = "trial %d: checkpoint unreadable: %s" % (trial, ex)
        if bad:
            break
    if not bad and steps:
        rc, o, e = sh(args[:-5] + ["--resume", ck, "--max-steps", str(steps[-1] + 1), "--quiet"])
        if rc != 0:
            bad = "resume after the kills: exit %d %s" % (rc, short(e))
        elif [f for f in os.listdir(d) if ".tmp." in f]:
            bad = "temporary files left after a complete run: %s" % os.listdir(d)
    ok = not bad and len(steps) >= 6 and steps == sorted(steps)
    report("kill_checkpoint", ok, bad or "steps at the kills %s; %d torn temporary files left" % (steps, torn))


BIG_C = 6000

E2E_MODEL = """model e2e {
    input x: f32[seq, batch, 4]
    seed 3
    h = lstm(x, hidden=8)
    y = linear(last(h), out=3)
    output y
}
"""


def test_compiled(cellc, work):
    """With a cellc that has --train: a real model through `cellc compile
    --train` and `make` (NAME_train is part of `all`), trained on .npy data
    with a test set; interrupted and resumed == uninterrupted.  (Reports
    nothing when this cellc refuses --train.)"""
    d = os.path.join(work, "e2e")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    model = os.path.join(d, "e2e.cell")
    with open(model, "w") as f:
        f.write(E2E_MODEL)
    out = os.path.join(d, "gen")
    rc, o, e = sh([cellc, "compile", model, "-o", out, "--train", "--loss", "ce"])
    if rc != 0 and "not available" in e:
        return
    if rc != 0:
        return report("compiled/compile", False, "exit %d %s" % (rc, short(e)))
    rc, o, e = sh(["make", "--no-print-directory", "-s", "-C", out])
    binary = os.path.join(out, "e2e_train")
    if rc != 0 or not os.access(binary, os.X_OK):
        return report("compiled/make", False, "exit %d %s" % (rc, short(e + o)))
    r = np.random.RandomState(4)
    files = {}
    for split, n in (("train", 96), ("test", 40)):
        x = r.randn(n, 6, 4).astype(np.float32)
        y = (x[:, -2:, :2].sum((1, 2)) > 0).astype(np.int64) + (x[:, -1, 3] > 1)
        files[split] = (os.path.join(d, split + "_x.npy"), os.path.join(d, split + "_y.npy"))
        np.save(files[split][0], x)
        np.save(files[split][1], y)
    common = ["--train-data", files["train"][0], "--train-labels", files["train"][1], "--test-data",
              files["test"][0], "--test-labels", files["test"][1], "--batch", "16", "--epochs", "4", "--quiet",
              "--optimizer", "adam", "--lr", "0.01", "--seed", "2"]
    logs = {}
    for tag in ("full", "split"):
        ck = os.path.join(d, tag + ".ckpt")
        extra = ["--log", os.path.join(d, tag + ".csv"), "--epoch-log", os.path.join(d, tag + "_epochs.csv"),
                 "--checkpoint", ck, "--grad-norms", os.path.join(d, tag + "_norms.csv"), "--plot", d]
        if tag == "full":
            rc, o, e = sh([binary] + common + extra)
        else:
            rc, o, e = sh([binary] + common + extra + ["--max-steps", "9"])
            if rc == 0:
                rc, o, e = sh([binary] + common + extra + ["--resume", ck])
        if rc != 0:
            return report("compiled/train_" + tag, False, "exit %d %s" % (rc, short(e)))
        logs[tag] = (read_csv(os.path.join(d, tag + ".csv"))[1], read_csv(os.path.join(d, tag + "_epochs.csv"))[1],
                     read_csv(os.path.join(d, tag + "_norms.csv"))[1])
    steps, epochs, norms = logs["full"]
    losses = [float(row[2]) for row in steps]
    report("compiled/train", len(steps) == 24 and len(epochs) == 4 and len(norms) == 4 * 6 and
           float(epochs[-1][1]) < float(epochs[0][1]) and all(np.isfinite(losses)),
           "%d steps, train loss %s -> %s, test acc %s" % (len(steps), epochs[0][1], epochs[-1][1], epochs[-1][3]))
    same = [row[:4] for row in logs["split"][0]] == [row[:4] for row in steps] and \
        [row[:4] for row in logs["split"][1]] == [row[:4] for row in epochs] and logs["split"][2] == norms
    report("compiled/resume", same, "")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cellc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tools = build_tools(work)
    for loss, bf in ((0, 0), (1, 0), (2, 0), (3, 0), (0, 1), (1, 1)):
        exe = os.path.join(work, "check_mock%d%d" % (loss, bf))
        rc, o, e = sh(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror"] + SAN + ["-DMOCK_I=3", "-DMOCK_C=4",
                      "-DMOCK_LOSS=%d" % loss, "-DMOCK_BATCH_FIRST=%d" % bf, "-I" + RT, "-I" + TR, os.path.join(TR, "check_mock.c"),
                      os.path.join(TR, "mock.c"), os.path.join(ROOT, "build", "libcellrt.a"), "-lopenblas", "-lm",
                      "-o", exe])
        if rc != 0:
            report("build/check_mock%d%d" % (loss, bf), False, short(e))
            continue
        rc, o, e = sh([exe, work], env=SAN_ENV)
        print(o, end="", flush=True)
        global failures
        failures += rc != 0 or any(m in e for m in SAN_MARKERS)
    test_readers(tools, work)
    test_inflate(tools, work)
    test_fashion(tools)
    test_svg(tools, work)
    plain = build_mock(cellc, work, "plain")
    san = build_mock(cellc, work, "san", san=True)
    pix = build_mock(cellc, work, "i1", defines=["-DMOCK_I=1"])
    big = build_mock(cellc, work, "big", defines=["-DMOCK_C=%d" % BIG_C])
    losses = {tag: (kind, build_mock(cellc, work, tag, defines=["-DMOCK_LOSS=%d" % n, "-DMOCK_BATCH_FIRST=%d" % bf]))
              for n, kind, tag, bf in ((1, "ce-all", "ce-all", 0), (2, "mse", "mse", 0),
                                       (3, "masked-mse", "masked-mse", 0), (0, "ce", "ce_batch_first", 1),
                                       (1, "ce-all", "ce-all_batch_first", 1))}
    paths = make_sets(os.path.join(work, "sets"))
    if san:
        test_options(san, work, paths)
        test_nan(san, work, paths)
    if plain:
        test_trajectories(plain, work, paths)
        test_losses(losses, work, paths)
        test_resume(plain, work, paths)
        test_images(plain, work)
        test_pixels(pix, work)
        test_progress(plain, work, paths)
    test_kill(big, work, paths)
    test_compiled(cellc, work)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
