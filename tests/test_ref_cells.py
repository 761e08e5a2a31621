"""test_ref_cells.py: checks the PyTorch cell references of tests/ref_cells.py
(the oracle of the `cells` group) against independent oracles, the identities
docs/cells.md states, and tests/tensorfile.py against the format; and reports the
float32-vs-float64 accuracy of every golden data set that gen_cell_cases.py
wrote.  Prints `PASS|FAIL ref_cells/<name> detail` lines (harness group
"ref_cells").

  - plain lstm / gru / rnn(tanh, relu) equal torch.nn.LSTM / GRU / RNN with
    the same weights (PyTorch gate order, so no reordering);
  - momentum_lstm(mu=0, s=1) equals nn.LSTM (the appendix's MomentumLSTM
    reduces to the LSTM);
  - the identities the `cells` group turns into verify runs, on every base:
    momentum(mu=0, s=1) == plain, rmsprop == adam(mu=0),
    nag(restart=1) == momentum(mu=0);
  - momentum against its closed form v_t = s sum_j mu^(t-j) u_j; adam against
    a numpy transcription; the NAG schedule (1-based form against the
    paper's 0-based (t mod F)/(t mod F + 3));
  - dtriv: M orthogonal, and A = 0, base = I gives h_t = modrelu(u_t + h_{t-1});
  - iRNN K = 1 against its formula, both g_0 choices;
  - tensorfile: FNV-1a-64 test vectors, encode/decode round trip, rank 0;
  - agree.tsv: the PyTorch references of the models that the cells group
    verifies against another model's golden data reproduce that data;
  - accuracy.tsv of the generated cases: float32 golden vs float64 run well
    inside the verify tolerances (below a quarter of atol 1e-5 + rtol 1e-4 |y|).

usage: test_ref_cells.py [CELLS_FIXTURE_DIR]
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cells as R  # noqa: E402
import tensorfile  # noqa: E402

RESULTS = []


def check(name, ok, detail=""):
    RESULTS.append(ok)
    print("%s ref_cells/%s%s" % ("PASS" if ok else "FAIL", name, " " + detail if detail else ""), flush=True)


def close(name, a, b, tol=1e-6):
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    if a.shape != b.shape:
        check(name, False, "shapes %s vs %s" % (tuple(a.shape), tuple(b.shape)))
        return
    err = float((a - b).abs().max()) if a.numel() else 0.0
    check(name, err <= tol, "max_abs=%.3g" % err)


def weights(cell, opts, I, H, seed, scale=0.5):
    rng = np.random.RandomState(seed)
    return {k: rng.uniform(-scale, scale, s).astype(np.float64)
            for k, s in R.param_shapes(cell, opts, I, H)}


def data(Tn, B, I, seed):
    return np.random.RandomState(seed).randn(Tn, B, I)


D64 = torch.float64


def torch_module_checks():
    I, H, Tn, B = 4, 5, 9, 3
    x = data(Tn, B, I, 1)
    for base, mod in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU), ("rnn", torch.nn.RNN),
                      ("rnn_relu", torch.nn.RNN)):
        cell = base.split("_")[0]
        opts = {"act": "relu"} if base == "rnn_relu" else {}
        p = weights(cell, opts, I, H, 2)
        kw = {"nonlinearity": "relu"} if base == "rnn_relu" else {}
        m = mod(I, H, **kw).double()
        with torch.no_grad():
            m.weight_ih_l0[:] = torch.tensor(p["W_x"])
            m.weight_hh_l0[:] = torch.tensor(p["W_h"])
            m.bias_ih_l0[:] = torch.tensor(p["b_x"])
            m.bias_hh_l0[:] = torch.tensor(p["b_h"])
            want, _ = m(torch.tensor(x))
        got, _ = R.run_layer(cell, opts, p, x, D64)
        close("%s_vs_torch_nn" % base, got, want, 1e-12)
        if cell == "lstm":
            got, _ = R.run_layer("momentum_lstm", {"mu": 0.0, "s": 1.0}, p, x, D64)
            close("momentum_lstm_mu0_s1_vs_torch_nn_lstm", got, want, 1e-12)


def identity_checks():
    I, H, Tn, B = 3, 6, 12, 2
    x = data(Tn, B, I, 3)
    for base in R.BASES:
        p = weights(base, {}, I, H, 4)
        if base == "dtriv":
            p["b"] = -np.abs(p["b"])
        plain, _ = R.run_layer(base, {}, p, x, D64)
        m0, _ = R.run_layer("momentum_" + base, {"mu": 0.0, "s": 1.0}, p, x, D64)
        close("momentum_%s_mu0_s1_eq_%s" % (base, base), m0, plain, 1e-12)
        o = {"s": 0.7, "beta": 0.8, "eps": 1e-8}
        rms, _ = R.run_layer("rmsprop_" + base, o, p, x, D64)
        ad, _ = R.run_layer("adam_" + base, dict(o, mu=0.0), p, x, D64)
        close("rmsprop_%s_eq_adam_%s_mu0" % (base, base), rms, ad, 1e-12)
        nag, _ = R.run_layer("nag_" + base, {"s": 0.7, "restart": 1}, p, x, D64)
        mom, _ = R.run_layer("momentum_" + base, {"mu": 0.0, "s": 0.7}, p, x, D64)
        close("nag_%s_restart1_eq_momentum_%s_mu0" % (base, base), nag, mom, 1e-12)
        # and the identities are not vacuous: adam(mu != 0) and nag(restart 0) differ
        ad2, _ = R.run_layer("adam_" + base, dict(o, mu=0.5), p, x, D64)
        nag0, _ = R.run_layer("nag_" + base, {"s": 0.7, "restart": 0}, p, x, D64)
        check("identities_%s_not_vacuous" % base,
              float((ad2 - ad).abs().max()) > 1e-3 and float((nag0 - mom).abs().max()) > 1e-3)


def closed_form_checks():
    I, H, Tn, B = 3, 4, 10, 2
    x = data(Tn, B, I, 5)
    p = weights("rnn", {}, I, H, 6)
    mu, s = 0.7, 0.4
    u = x @ p["W_x"].T + p["b_x"]
    h = np.zeros((B, H))
    hs = []
    for t in range(Tn):
        v = s * sum(mu ** (t - j) * u[j] for j in range(t + 1))
        h = np.tanh(v + h @ p["W_h"].T + p["b_h"])
        hs.append(h)
    got, _ = R.run_layer("momentum_rnn", {"mu": mu, "s": s}, p, x, D64)
    close("momentum_rnn_closed_form", got, np.stack(hs), 1e-12)

    beta, eps = 0.85, 1e-6
    v = np.zeros((B, H))
    m = np.zeros((B, H))
    h = np.zeros((B, H))
    hs = []
    for t in range(Tn):
        v = mu * v + s * u[t]
        m = beta * m + (1 - beta) * u[t] ** 2
        h = np.tanh(v / np.sqrt(m + eps) + h @ p["W_h"].T + p["b_h"])
        hs.append(h)
    got, _ = R.run_layer("adam_rnn", {"mu": mu, "s": s, "beta": beta, "eps": eps}, p, x, D64)
    close("adam_rnn_numpy", got, np.stack(hs), 1e-12)

    for F in (0, 1, 3, 5):
        d = R.Dynamic("nag", {"restart": F})
        got = [d.mu_t(t) for t in range(1, 21)]
        if F == 0:
            want = [(t - 1) / (t + 2) for t in range(1, 21)]
        else:
            want = [(t0 % F) / (t0 % F + 3) for t0 in range(20)]
        check("nag_schedule_restart%d" % F, np.allclose(got, want, atol=1e-15),
              "first %s" % ", ".join("%.3g" % g for g in got[:6]))
    check("nag_schedule_values", np.allclose([R.Dynamic("nag", {}).mu_t(t) for t in (1, 2, 3, 4)],
                                             [0, 1 / 4, 2 / 5, 3 / 6]))
    # nag form=extrapolate against its formula on the LSTM
    pl = weights("lstm", {}, I, H, 7)
    ul = x @ pl["W_x"].T + pl["b_x"]
    h = np.zeros((B, H))
    c = np.zeros((B, H))
    q0 = np.zeros((B, 4 * H))
    hs = []
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    for t in range(Tn):
        k = t + 1
        mut = (k - 1) / (k + 2)
        q = h @ pl["W_h"].T + pl["b_h"] - s * ul[t]
        a = q + mut * (q - q0)
        q0 = q
        i, f, g, o = np.split(a, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        hs.append(h)
    got, _ = R.run_layer("nag_lstm", {"s": s, "form": "extrapolate"}, pl, x, D64)
    close("nag_lstm_extrapolate_formula", got, np.stack(hs), 1e-12)


def dtriv_checks():
    H, I, Tn, B = 7, 3, 5, 2
    rng = np.random.RandomState(8)
    A = rng.randn(H, H)
    base = np.linalg.qr(rng.randn(H, H))[0]
    M = R.dtriv_matrix(A, base, D64).numpy()
    check("dtriv_M_orthogonal", np.allclose(M @ M.T, np.eye(H), atol=1e-12))
    p = {"W_x": rng.randn(H, I), "A": np.zeros((H, H)), "base": np.eye(H), "b": -0.1 * np.ones(H)}
    x = data(Tn, B, I, 9)
    h = np.zeros((B, H))
    hs = []
    for t in range(Tn):
        z = x[t] @ p["W_x"].T + h
        h = np.sign(z) * np.maximum(np.abs(z) - 0.1, 0)
        hs.append(h)
    got, _ = R.run_layer("dtriv", {}, p, x, D64)
    close("dtriv_identity_formula", got, np.stack(hs), 1e-12)


def irnn_checks():
    H, I, Tn, B = 4, 3, 6, 2
    x = data(Tn, B, I, 10)
    for g0 in ("h", "zero"):
        opts = {"K": 1, "g0": g0, "alpha": 1.0}
        p = weights("irnn", opts, I, H, 11)
        h = np.zeros((B, H))
        hs = []
        for t in range(Tn):
            g = h if g0 == "h" else np.zeros_like(h)
            pre = (g + h) @ p["W_h"].T + x[t] @ p["W_x"].T + p["b_x"]
            h = g + p["eta"][0] * (np.maximum(pre, 0) - (g + h))
            hs.append(h)
        got, _ = R.run_layer("irnn", opts, p, x, D64)
        close("irnn_K1_g0_%s_formula" % g0, got, np.stack(hs), 1e-12)


def attention_checks():
    I, H, dk, Tn, B = 3, 4, 5, 9, 2
    x = data(Tn, B, I, 12)
    opts = {"key": dk, "mu": 0.7, "s": 0.4}
    p = weights("momentum_attention", opts, I, H, 13)
    rec, _ = R.run_layer("momentum_attention", opts, p, x, D64)
    ln, _ = R.run_layer("momentum_attention", dict(opts, weighting="length"), p, x, D64)
    close("attention_length_eq_recurrent_at_last_step", ln[-1], rec[-1], 1e-12)
    check("attention_length_differs_before_last", float((ln[:-1] - rec[:-1]).abs().max()) > 1e-3)
    # explicit (batched) form of the recurrence: key l weighted at step i by
    # s (1 - mu^(i-l+1)) / (1 - mu)
    phi = lambda z: np.where(z > 0, z + 1, np.exp(z))  # noqa: E731
    q = phi(x @ p["W_q"].T + p["b_q"])
    k = phi(x @ p["W_k"].T + p["b_k"])
    v = x @ p["W_v"].T + p["b_v"]
    ys = []
    for i in range(Tn):
        w = np.array([0.4 * (1 - 0.7 ** (i - l + 1)) / (1 - 0.7) for l in range(i + 1)])
        S = np.einsum("l,lbd,lbh->bdh", w, k[:i + 1], v[:i + 1])
        z = k[:i + 1].sum(0)
        ys.append(np.einsum("bd,bdh->bh", q[i], S) / ((q[i] * z).sum(1, keepdims=True) + 1e-6))
    close("attention_recurrent_batched_form", rec, np.stack(ys), 1e-12)


def heavy_ball_checks():
    I, H, Tn, B = 3, 4, 6, 2
    x = data(Tn, B, I, 14)
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    for n, act in ((1, "identity"), (3, "tanh")):
        opts = {"steps": n, "act": act}
        p = weights("heavy_ball_rnn", opts, I, H, 15)
        gamma, xi = sig(p["w"]), np.log1p(np.exp(p["c"]))
        f = np.tanh if act == "tanh" else (lambda z: z)
        h = np.zeros((B, H))
        m = np.zeros((B, H))
        hs = []
        for t in range(Tn):
            m = m + x[t] @ p["W_x"].T + p["b_x"]
            for _ in range(n):
                h_new = h + f(m) / n
                m = m + (-gamma * m + np.tanh(h @ p["W_h"].T + p["b_h"]) - xi * h) / n
                h = h_new
            hs.append(h)
        got, _ = R.run_layer("heavy_ball_rnn", opts, p, x, D64)
        close("heavy_ball_steps%d_%s_formula" % (n, act), got, np.stack(hs), 1e-12)
    p = weights("fastrnn", {}, I, H, 16)
    h = np.zeros((B, H))
    hs = []
    for t in range(Tn):
        h = sig(p["beta"]) * h + sig(p["alpha"]) * np.tanh(x[t] @ p["W_x"].T + p["b_x"] + h @ p["W_h"].T)
        hs.append(h)
    got, _ = R.run_layer("fastrnn", {}, p, x, D64)
    close("fastrnn_formula", got, np.stack(hs), 1e-12)


def tensorfile_checks():
    vec = {b"": 0xcbf29ce484222325, b"a": 0xaf63dc4c8601ec8c, b"foobar": 0x85944171f73967e8}
    check("tensorfile_fnv1a64_vectors", all(tensorfile.fnv1a64(k) == v for k, v in vec.items()))
    ts = [("h1.W_x", np.arange(15, dtype=np.float32).reshape(3, 5)), ("s", np.array(2.5, np.float32)),
          ("i", np.array([1, -2], np.int64)), ("e", np.zeros((0, 3), np.float32))]
    img = tensorfile.encode(ts)
    back = tensorfile.decode(img)
    ok = [n for n, _ in back] == [n for n, _ in ts] and all(
        a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b) for (_, a), (_, b) in zip(ts, back))
    check("tensorfile_round_trip", ok and len(img) % 1 == 0 and img[:8] == b"CELLTNSR")
    bad = bytearray(img)
    bad[-1] ^= 1
    try:
        tensorfile.decode(bytes(bad))
        check("tensorfile_checksum_detected", False)
    except tensorfile.FormatError:
        check("tensorfile_checksum_detected", True)


def accuracy_checks(fixdir):
    path = os.path.join(fixdir, "accuracy.tsv")
    if not os.path.exists(path):
        check("accuracy/fixtures", False, "no %s (fixtures not generated)" % path)
        return
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for name, ratio, max_abs, max_out in rows:
        # error of the float32 golden, relative to the verify tolerance
        # atol 1e-5 + rtol 1e-4 |ref|: must be a small fraction of it, since
        # cellc's own float32 rounding (of about the same size) adds to it
        r = float(ratio)
        check("accuracy/%s" % name, r < 0.25, "f32-vs-f64 err/tol=%.3g max_abs=%s max|y|=%s" % (r, max_abs, max_out))


def agree_checks(fixdir):
    """The models that the cells group verifies against another case's golden
    data: their PyTorch references must give that data (same weights)."""
    path = os.path.join(fixdir, "agree.tsv")
    if not os.path.exists(path):
        check("agree/fixtures", False, "no %s (fixtures not generated)" % path)
        return
    worst = {}
    with open(path) as f:
        for line in f:
            other, case, Tn, B, d = line.split("\t")
            key = "%s_on_%s_data" % (other, case)
            worst[key] = max(worst.get(key, 0.0), float(d))
    for key, d in sorted(worst.items()):
        # the identities are exact in real arithmetic; in float32 the two
        # computations round differently (e.g. mu*v + s*u with mu = 0)
        check("agree/%s" % key, d <= 1e-6, "max_abs=%.3g" % d)
    check("agree/count", len(worst) >= 7, "%d model pairs" % len(worst))


def main():
    torch_module_checks()
    identity_checks()
    closed_form_checks()
    dtriv_checks()
    irnn_checks()
    attention_checks()
    heavy_ball_checks()
    tensorfile_checks()
    if len(sys.argv) > 1:
        accuracy_checks(sys.argv[1])
        agree_checks(sys.argv[1])
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
