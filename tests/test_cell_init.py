"""test_cell_init.py CELLC FIXTURES WORK: the initialisers of .cell models
(docs/cells.md section 6, compiler/cell/cells.h "Initialisers") through the parser and
`cellc compile`, checked in numpy against their definitions; fixtures from
tests/gen_cell_init_cases.py (FIXTURES/init).  Prints PASS/FAIL lines.

The emitted NAME.weights holds the parameters as the compiled code uses
them: the hoisting pass pre-sums b_x + b_h of plain cells (NAME.b_xh) and
splits b_h of cells with a dynamic per gate block (NAME.b_h0 ..), dtriv's
A and base become M = base expm(S), momentum attention's W_q, W_k, W_v are
merged into one matrix.  `params` undoes the split; a sum is checked as a
sum.  Checks (every one can fail):
  pytorch     |w| <= 1/sqrt(H) (W_x too, not 1/sqrt(I)), max |w| near the
              bound, mean and variance of U(-b, b) within 5 standard errors;
              linear heads 1/sqrt(in); fg_init sets both forget blocks exactly
  orthogonal  W W^T = I (rows <= cols) or W^T W = I (rows > cols), |err| < 1e-5;
              biases 0
  eye         W_h = eye(G, H) exactly; W_x as pytorch; biases 0
  reference   W_x orthogonal, W_h = eye(G, H), biases 0 except the forget
              block of b_x and of b_h = fg_init (1.0 by default); for lstm
              the pre-summed b_xh forget block = 2 fg_init
  kaiming     N(0, 2/fan_in): mean, std (within 4%), kurtosis ~3; biases 0
  sparse      exactly min(15, fan_in) non-zeros per row (unit), the non-zeros
              N(0, 1) (pooled mean/std), columns spread; biases 0
  echo        every square [H, H] block of W_h: 15 non-zeros per row,
              spectral radius 1.1 within 1e-3 (numpy eigvals); W_x pytorch
  dtriv       M = expm(S) of Henaff's A: block-diagonal 2x2 rotations,
              orthogonal; b in U(-0.01, 0.01); W_x Kaiming N(0, 2/I)
  irnn        eta = 0.01; attention / user cells: U(-1/sqrt(H), 1/sqrt(H))
  determinism same file again -> identical bytes; another seed -> different
              values; no `seed` line = seed 0; an extra statement leaves the
              other parameters as they were
  override    `weights "FILE"` wins over init=orthogonal/reference: the
              emitted tensors equal the file's (b_xh = b_x + b_h)
  errors      missing tensor, wrong shape, wrong dtype, no file: exit 2 and
              FILE:LINE:COL naming the tensor, one error only (no "'h1' is
              not defined" after it), no output written
"""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

GATES = {"rnn": 1, "lstm": 4, "gru": 3}
RESULTS = []


def report(name, ok, detail=""):
    RESULTS.append(ok)
    print("%s cell_init/%s%s" % ("PASS" if ok else "FAIL", name, (" " + detail) if detail else ""), flush=True)


def compile_case(cellc, fixtures, work, case):
    out = os.path.join(work, case)
    p = subprocess.run([cellc, "compile", os.path.join(fixtures, case, "model.cell"), "-o", out, "--name", "m"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return p.returncode, p.stderr, os.path.join(out, "m.weights")


def params(path):
    """{name: array} of an emitted weights file, with split biases joined
    (NAME.b_h0, NAME.b_h1, .. -> NAME.b_h)."""
    raw = dict(tensorfile.read(path))
    out = {}
    for n, a in raw.items():
        stem, _, idx = n.rpartition("b_h")
        if idx.isdigit() and stem.endswith("."):
            continue
        out[n] = a
    for n in raw:
        stem, _, idx = n.rpartition("b_h")
        if idx == "0" and stem.endswith("."):
            parts, k = [], 0
            while "%sb_h%d" % (stem, k) in raw:
                parts.append(raw["%sb_h%d" % (stem, k)])
                k += 1
            out[stem + "b_h"] = np.concatenate(parts)
    return out, raw


class Fail(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise Fail(msg)


def base_of(cell):
    b = cell.rpartition("_")[2]
    return b if b in GATES else None


def check_uniform(w, bound, what, stats=True):
    w = w.astype(np.float64).ravel()
    need(np.all(np.abs(w) <= np.float32(bound)), "%s: max |w| %.6g > bound %.6g" % (what, np.abs(w).max(), bound))
    if stats and w.size >= 500:
        n = w.size
        need(np.abs(w).max() > bound * (1 - 20.0 / n), "%s: max |w| %.6g far below the bound %.6g" % (
            what, np.abs(w).max(), bound))
        var = bound ** 2 / 3
        need(abs(w.mean()) < 5 * np.sqrt(var / n), "%s: mean %.4g" % (what, w.mean()))
        # variance of w^2 for U(-b, b): E w^4 - (E w^2)^2 = b^4/5 - b^4/9
        need(abs((w ** 2).mean() - var) < 5 * np.sqrt((bound ** 4 * (1 / 5 - 1 / 9)) / n),
             "%s: E w^2 %.5g, U(-b, b) has %.5g" % (what, (w ** 2).mean(), var))
    return "U(+-%.4g) max %.4g" % (bound, np.abs(w).max())


def check_normal(w, std, what, tol=0.04):
    w = w.astype(np.float64).ravel()
    n = w.size
    need(abs(w.mean()) < 5 * std / np.sqrt(n), "%s: mean %.4g (std %.4g, n %d)" % (what, w.mean(), std, n))
    need(abs(w.std() / std - 1) < tol, "%s: std %.5g, want %.5g" % (what, w.std(), std))
    kurt = ((w - w.mean()) ** 4).mean() / w.var() ** 2
    need(abs(kurt - 3) < 0.5, "%s: kurtosis %.3g, a normal has 3" % (what, kurt))
    return "std %.4g/%.4g" % (w.std(), std)


def check_orthogonal(w, what):
    w = w.astype(np.float64)
    r, c = w.shape
    g = w @ w.T if r <= c else w.T @ w
    err = np.abs(g - np.eye(min(r, c))).max()
    need(err < 1e-5, "%s [%d, %d]: |%s - I| = %.3g" % (what, r, c, "W W^T" if r <= c else "W^T W", err))
    return "orth err %.2g" % err


def check_zero(w, what):
    need(np.all(w == 0), "%s: %d non-zeros, want all zero" % (what, np.count_nonzero(w)))


def eye(r, c):
    e = np.zeros((r, c), np.float32)
    for i in range(min(r, c)):
        e[i, i] = 1
    return e


def check_bias(P, st, cell, H, expect_fg):
    """b_x and b_h (or their sum b_xh): zero except the LSTM forget block,
    which is expect_fg (None: zero as well)."""
    G = GATES[base_of(cell)]
    want = np.zeros(G * H, np.float32)
    if expect_fg is not None:
        want[H:2 * H] = expect_fg
    if st + ".b_xh" in P:
        need(st + ".b_x" not in P and st + ".b_h" not in P, "%s: b_xh beside b_x/b_h" % st)
        got = P[st + ".b_xh"]
        need(got.shape == (G * H,) and np.array_equal(got, 2 * want),
             "%s.b_xh = b_x + b_h: got %s, want %s" % (st, got, 2 * want))
    else:
        for b in ("b_x", "b_h"):
            got = P[st + "." + b]
            need(got.shape == (G * H,) and np.array_equal(got, want), "%s.%s: got %s, want %s" % (st, b, got, want))


def check_layer(P, raw, case, st, cell, I, H, opts):
    init = opts.get("init", "pytorch")
    base = base_of(cell)
    bound = 1 / np.sqrt(H)
    notes = []
    if cell == "linear":        # st, src, out: I is the in-features, H the out
        check_uniform(P[st + ".weight"], 1 / np.sqrt(I), st + ".weight")
        check_uniform(P[st + ".bias"], 1 / np.sqrt(I), st + ".bias")
        return "linear U(+-1/sqrt(%d))" % I
    if cell == "my_rnn":
        for p in ("W_x", "b_x", "W_h", "b_h"):
            check_uniform(P[st + "." + p], bound, st + "." + p)
        return "user cell U(+-1/sqrt(H))"
    if cell == "dtriv":
        M = P[st + ".M"].astype(np.float64)
        check_orthogonal(M, st + ".M")
        ang = []
        for i in range(0, H - 1, 2):
            blk = M[i:i + 2, i:i + 2]
            c, s = blk[0, 0], blk[0, 1]
            need(abs(blk[1, 1] - c) < 1e-5 and abs(blk[1, 0] + s) < 1e-5, "%s.M block %d not a rotation" % (st, i))
            ang.append(np.arctan2(s, c))
        off = M.copy()
        for i in range(0, H - 1, 2):
            off[i:i + 2, i:i + 2] = 0
        if H % 2:
            need(abs(M[H - 1, H - 1] - 1) < 1e-6, "%s.M last diagonal %g" % (st, M[H - 1, H - 1]))
            off[H - 1, H - 1] = 0
        need(np.abs(off).max() < 1e-6, "%s.M: not block diagonal (%.3g)" % (st, np.abs(off).max()))
        need(np.ptp(ang) > 3.0, "%s.M: rotation angles span only %.3g (A ~ U(-pi, pi))" % (st, np.ptp(ang)))
        check_uniform(P[st + ".b"], 0.01, st + ".b", stats=False)
        need(np.abs(P[st + ".b"]).max() > 0.005, "%s.b: max %.3g" % (st, np.abs(P[st + ".b"]).max()))
        return "M rotations, " + check_normal(P[st + ".W_x"], np.sqrt(2.0 / I), st + ".W_x", tol=0.06)
    if cell == "irnn":
        K = opts.get("K", 1)
        for k in range(K):
            need(np.all(raw["%s.eta%d" % (st, k)] == np.float32(0.01)), "%s.eta%d != 0.01" % (st, k))
        for p in ("W_x", "b_x", "W_h"):
            check_uniform(P[st + "." + p], bound, st + "." + p, stats=False)
        return "eta 0.01"
    if cell == "momentum_attention":
        dk = opts.get("key", H)
        mats = [a for n, a in raw.items() if a.ndim == 2 and a.shape == (2 * dk + H, I)]
        vecs = [a for n, a in raw.items() if a.ndim == 1 and a.shape == (2 * dk + H,)]
        need(len(mats) == 1 and len(vecs) == 1, "attention: merged W_q|W_k|W_v not found")
        check_uniform(mats[0], bound, st + ".W_qkv", stats=False)
        check_uniform(vecs[0], bound, st + ".b_qkv", stats=False)
        return "W_q, W_k, W_v U(+-1/sqrt(H))"
    G = GATES[base]
    Wx, Wh = P[st + ".W_x"], P[st + ".W_h"]
    need(Wx.shape == (G * H, I) and Wh.shape == (G * H, H), "%s: shapes %s %s" % (st, Wx.shape, Wh.shape))
    fg = None
    if base == "lstm" and (init == "reference" or "fg_init" in opts):
        fg = np.float32(opts.get("fg_init", 1.0))
    if init == "pytorch":
        notes.append(check_uniform(Wx, bound, st + ".W_x"))
        check_uniform(Wh, bound, st + ".W_h")
        if st + ".b_xh" in P:
            b = P[st + ".b_xh"]
            need(np.all(np.abs(b) <= 2 * np.float32(bound)), "%s.b_xh beyond 2/sqrt(H)" % st)
        else:
            for bn in ("b_x", "b_h"):
                b = P[st + "." + bn].copy()
                if fg is not None:
                    need(np.all(b[H:2 * H] == fg), "%s.%s forget block %s, want %g" % (st, bn, b[H:2 * H], fg))
                    b = np.concatenate([b[:H], b[2 * H:]])
                check_uniform(b, bound, st + "." + bn, stats=False)
        return "; ".join(notes)
    # the rest: biases zero (but the forget blocks)
    check_bias(P, st, cell, H, fg)
    if init == "orthogonal":
        notes.append(check_orthogonal(Wx, st + ".W_x"))
        notes.append(check_orthogonal(Wh, st + ".W_h"))
    elif init == "reference":
        notes.append(check_orthogonal(Wx, st + ".W_x"))
        need(np.array_equal(Wh, eye(G * H, H)), "%s.W_h is not eye(%d, %d)" % (st, G * H, H))
        notes.append("W_h eye, forget %s" % fg)
    elif init == "eye":
        need(np.array_equal(Wh, eye(G * H, H)), "%s.W_h is not eye(%d, %d)" % (st, G * H, H))
        notes.append(check_uniform(Wx, bound, st + ".W_x", stats=False))
    elif init == "kaiming":
        notes.append(check_normal(Wx, np.sqrt(2.0 / I), st + ".W_x"))
        notes.append(check_normal(Wh, np.sqrt(2.0 / H), st + ".W_h"))
    elif init == "sparse":
        nz = []
        for nm, W, fan in (("W_x", Wx, I), ("W_h", Wh, H)):
            cnt = np.count_nonzero(W, axis=1)
            need(np.all(cnt == min(15, fan)), "%s.%s: non-zeros per row %s, want %d" % (
                st, nm, sorted(set(cnt.tolist())), min(15, fan)))
            cols = np.count_nonzero(W, axis=0)
            need(np.all(cols > 0) or fan > W.shape[0] * 15, "%s.%s: a column is never used" % (st, nm))
            nz.append(W[W != 0])
        notes.append(check_normal(np.concatenate(nz), 1.0, st + " non-zeros", tol=0.06))
    elif init == "echo":
        notes.append(check_uniform(Wx, bound, st + ".W_x", stats=False))
        for g in range(G):
            blk = Wh[g * H:(g + 1) * H].astype(np.float64)
            cnt = np.count_nonzero(blk, axis=1)
            need(np.all(cnt == 15), "%s.W_h block %d: non-zeros per row %s" % (st, g, sorted(set(cnt.tolist()))))
            rho = np.abs(np.linalg.eigvals(blk)).max()
            need(abs(rho - 1.1) < 1e-3, "%s.W_h block %d: spectral radius %.6g, want 1.1" % (st, g, rho))
            notes.append("rho %.6f" % rho)
    else:
        raise Fail("no check for init %s" % init)
    return "; ".join(notes)


def sizes_of(case):
    sz = {"x": case["I"]}
    for st, cell, src, hid, _ in case["stmts"]:
        sz[st] = hid
    return sz


def src_of(src):
    return src[5:-1] if src.startswith("last(") else src


def run_case(cellc, fixtures, work, case):
    name = case["case"]
    rc, err, path = compile_case(cellc, fixtures, work, name)
    if rc != 0:
        report(name + "/compile", False, "exit %d: %s" % (rc, err.strip()[:300]))
        return None
    P, raw = params(path)
    sz = sizes_of(case)
    for st, cell, src, hid, opts in case["stmts"]:
        try:
            detail = check_layer(P, raw, name, st, cell, sz[src_of(src)], hid, opts)
            report("%s/%s_%s" % (name, st, cell), True, detail)
        except Fail as e:
            report("%s/%s_%s" % (name, st, cell), False, str(e))
        except KeyError as e:
            report("%s/%s_%s" % (name, st, cell), False, "tensor %s not in %s" % (e, path))
    return path


def check_override(cellc, fixtures, work, case):
    rc, err, path = compile_case(cellc, fixtures, work, "override")
    if rc != 0:
        report("override", False, "exit %d: %s" % (rc, err.strip()[:300]))
        return
    given = dict(tensorfile.read(os.path.join(fixtures, "override", case["given"])))
    P, _ = params(path)
    bad = []
    for n, a in given.items():
        stem = n.rpartition(".")[0]
        if n in P:
            if not np.array_equal(P[n], a):
                bad.append(n)
        elif n.endswith((".b_x", ".b_h")) and stem + ".b_xh" in P:
            s = given[stem + ".b_x"] + given[stem + ".b_h"]
            if np.abs(P[stem + ".b_xh"] - s).max() > 1e-6:
                bad.append(stem + ".b_xh")
        else:
            bad.append(n + " (absent)")
    report("override/weights_file_wins", not bad and len(P) >= 8,
           ("differ: %s" % ", ".join(bad)) if bad else "%d tensors equal the given file" % len(given))


def check_bad(cellc, fixtures, work, case):
    name = case["case"]
    rc, err, path = compile_case(cellc, fixtures, work, name)
    model = os.path.join(fixtures, name, "model.cell")
    want = "%s:%d:" % (model, case["line"])
    first = err.strip().splitlines()[0] if err.strip() else ""
    nerr = err.count(": error: ")
    ok = (rc == 2 and first.startswith(want) and case["what"] in first and "^" in err and nerr == 1
          and not os.path.exists(path))
    report(name, ok, "exit %d: %s" % (rc, first[:200]) if ok else
           "exit %d (want 2), %d errors (want 1: no follow-on errors), first line %r, want %s... naming %s" % (
               rc, nerr, first[:200], want, case["what"]))


def check_determinism(cellc, fixtures, work):
    paths = {}
    for c in ("pytorch", "pytorch_again", "pytorch_seed12", "pytorch_noseed", "pytorch_seed0", "pytorch_extra"):
        rc, err, p = compile_case(cellc, fixtures, work + "_det", c)
        if rc != 0:
            report("determinism/" + c, False, "exit %d: %s" % (rc, err.strip()[:200]))
            return
        paths[c] = p
    a = open(paths["pytorch"], "rb").read()
    report("determinism/same_seed_same_file", a == open(paths["pytorch_again"], "rb").read(),
           "%d bytes" % len(a))
    A, _ = params(paths["pytorch"])
    B, _ = params(paths["pytorch_seed12"])
    same = [n for n in A if n.endswith(("W_x", "W_h", "weight")) and np.mean(A[n] == B[n]) > 0.01]
    report("determinism/other_seed_other_values", not same and set(A) == set(B),
           "identical under seed 12: %s" % same if same else "every weight matrix differs")
    report("determinism/no_seed_is_seed_0",
           open(paths["pytorch_noseed"], "rb").read() == open(paths["pytorch_seed0"], "rb").read(), "")
    E, _ = params(paths["pytorch_extra"])
    diff = [n for n in A if not np.array_equal(A[n], E.get(n))]
    report("determinism/extra_statement_keeps_others",
           not diff and "z.weight" in E and not np.array_equal(E["z.weight"][:, :3], A["y.weight"][:3, :3]),
           "changed: %s" % diff if diff else "%d tensors unchanged" % len(A))


def main(cellc, fixtures, work):
    fixtures = os.path.join(fixtures, "init")
    with open(os.path.join(fixtures, "cases.json")) as f:
        cases = json.load(f)
    for case in cases:
        if case.get("bad"):
            check_bad(cellc, fixtures, work, case)
        elif case.get("given"):
            check_override(cellc, fixtures, work, case)
        else:
            run_case(cellc, fixtures, work, case)
    check_determinism(cellc, fixtures, work)
    return 0 if all(RESULTS) and RESULTS else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
