"""gen_ode_cases.py: fixtures of the `ode` test group: `.cell` models of the
ODE blocks of docs/cells.md (node, hbnode, ghbnode, anode, sonode) and of
the ODE-RNN
hybrids (ode_rnn, hbnode_rnn, ghbnode_rnn) under every solver, with
expected outputs from a float64 PyTorch implementation of the same model and
the same solver written here (never from cellc), and scipy's solve_ivp as an
independent float64 check of that implementation.

For each case OUTDIR/<case>/ holds
  model.cell                     h = MODEL(x, hidden=H, solver=..., ...),
                                 s = ode_stats(h); output h, s
  model.weights                  random weights from a fixed seed (tensorfile.py)
  test_data_set_N/input_0.pb     x [B, I]
  test_data_set_N/output_0.pb    h(t1) [B, H] of the float64 solve, as float32
  test_data_set_N/output_1.pb    int64 [3]: the NFE, accepted and rejected steps
                                 of that solve (the generated code must take
                                 exactly these steps)
A hybrid's case (rnn_*) reads x [T, B, I] (input_0) and its gaps dt [T, B]
(input_1: 0.25 or, after a dropped sample (10%), 0.5, times a jitter in
[0.8, 1.2]) and outputs h [T, B, H] and the stats summed over the sequence.
OUTDIR/tests.tsv lists the verify runs: name, model, case dir, atol, rtol
(fixed-step solvers: atol 1e-5, rtol 0; dopri5: the solver's own rtol and
atol, the latter at least 1e-5, the float32 rounding of the state).
OUTDIR/scipy.tsv: per dopri5 case and data set, the largest difference of
h(t1) from scipy's RK45 at rtol 1e-10 and the bound it must stay under
(20 (atol + rtol max|z|)); per model, the same for rk4 at 2000 steps (bound
1e-8: the dynamics written here are scipy's).
OUTDIR/bad/<name>/model.cell and expect.txt: models cellc must refuse
(exit 2) with that message; OUTDIR/limit/: a dopri5 block whose max_steps
is too small, which must fail at run time with the step-limit status.

usage: gen_ode_cases.py OUTDIR
"""
import math
import os
import shutil
import sys
import zlib

import numpy as np
import torch
from onnx import numpy_helper
from scipy.integrate import solve_ivp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

torch.set_num_threads(1)
F64 = torch.float64


def seed_of(*parts):
    return zlib.crc32("/".join(str(p) for p in parts).encode()) & 0x7fffffff


# ---- the solvers (the algorithm of runtime/rt_ode.c, docs/cells.md) ----------

TABLEAUS = {
    "euler": dict(c=[0], a=[[]], b=[1]),
    "midpoint": dict(c=[0, 0.5], a=[[], [0.5]], b=[0, 1]),
    "rk4": dict(c=[0, 0.5, 0.5, 1], a=[[], [0.5], [0, 0.5], [0, 0, 1]], b=[1 / 6, 1 / 3, 1 / 3, 1 / 6]),
    "dopri5": dict(
        c=[0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1, 1],
        a=[[], [1 / 5], [3 / 40, 9 / 40], [44 / 45, -56 / 15, 32 / 9],
           [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
           [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
           [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84]],
        b=[35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
        e=[71 / 57600, 0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40]),
}


class StepLimit(Exception):
    pass


def rms(x):
    return float(torch.sqrt((x * x).mean()))


def solve(F, y, t0, t1, solver, steps=None, rtol=None, atol=None, max_steps=None):
    """y(t1) of y' = F(t, y), y a tensor (the whole batch: one system, one
    step size); returns (y, [nfe, accepted, rejected])."""
    T = TABLEAUS[solver]
    st = [0, 0, 0]

    def f(t, z):
        st[0] += 1
        return F(t, z)

    span, d = abs(t1 - t0), (-1.0 if t1 < t0 else 1.0)
    if span == 0:
        return y, st
    s = len(T["c"])
    if solver != "dopri5":
        h = span / steps
        t = t0
        for k in range(steps):
            hs = d * h
            ks = []
            for i in range(s):
                Y = y
                for j, a in enumerate(T["a"][i]):
                    Y = Y + hs * a * ks[j]
                ks.append(f(t + T["c"][i] * hs, Y))
            y = y + hs * sum(b * kk for b, kk in zip(T["b"], ks))
            st[1] += 1
            t = t0 + d * h * (k + 1)
        return y, st
    # adaptive: the starting step of Hairer, Norsett and Wanner, then error control
    f0 = f(t0, y)
    scale = atol + rtol * y.abs()
    d0, d1 = rms(y / scale), rms(f0 / scale)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    f1 = f(t0 + d * h0, y + d * h0 * f0)
    d2 = rms((f1 - f0) / scale) / h0
    h1 = max(1e-6, h0 * 1e-3) if d1 <= 1e-15 and d2 <= 1e-15 else (0.01 / max(d1, d2)) ** (1 / 5)
    h = min(100 * h0, h1)
    k0, done, t, taken = f0, 0.0, t0, 0
    while done < span:
        if taken >= max_steps:
            raise StepLimit(st)
        last = h >= span - done
        hh = span - done if last else h
        hs = d * hh
        ks = [k0]
        Y = y
        for i in range(1, s):
            Y = y
            for j, a in enumerate(T["a"][i]):
                Y = Y + hs * a * ks[j]
            ks.append(f(t + T["c"][i] * hs, Y))
        y1 = Y          # first same as last: the last stage's input is the result
        err = hs * sum(e * kk for e, kk in zip(T["e"], ks))
        ratio = rms(err / (atol + rtol * torch.maximum(y.abs(), y1.abs())))
        taken += 1
        if not math.isfinite(ratio):
            raise ValueError("non-finite error")
        if ratio > 1:
            st[2] += 1
            h = hh * min(10.0, max(0.2, 0.9 * ratio ** -0.2))
            continue
        y = y1
        st[1] += 1
        done = span if last else done + hh
        t = t1 if last else t0 + d * done
        h = 10 * hh if ratio == 0 else hh * min(10.0, max(1.0, 0.9 * ratio ** -0.2))
        k0 = ks[-1]
    return y, st


# ---- the models ----------------------------------------------------------------

AUGMENT = 2    # anode's P in these cases


def params(model, I, H, rnn=False):
    p = [("W_x", (H, I)), ("b_x", (H,))] + ([("W_u", (H, H))] if rnn else [])
    if model == "anode":
        S = H + AUGMENT
        return p + [("W_h", (S, S)), ("b_h", (S,))]
    if model == "sonode":
        return p + [("W_v", (H, I)), ("b_v", (H,)), ("W_h", (H, 2 * H)), ("b_h", (H,))]
    p += [("W_h", (H, H)), ("b_h", (H,))]
    if model in ("hbnode", "ghbnode"):
        p.append(("w", (1,)))
    if model == "ghbnode":
        p.append(("c", (1,)))
    return p


def dynamics(model, w, H):
    """F(t, z) on z [B, S]: S = H (node), H + P (anode: [h | a]) or 2H
    ([h | m], sonode's [h | v])."""
    Wh, bh = w["W_h"], w["b_h"]
    gamma = torch.sigmoid(w["w"][0]) if model in ("hbnode", "ghbnode") else None
    xi = torch.nn.functional.softplus(w["c"][0]) if model == "ghbnode" else None

    def F(t, z):
        if model == "anode":
            return torch.tanh(z @ Wh.T + bh)
        if model == "sonode":
            return torch.cat([z[:, H:], torch.tanh(z @ Wh.T + bh)], 1)
        h = z[:, :H]
        fh = torch.tanh(h @ Wh.T + bh)
        if model == "node":
            return fh
        m = z[:, H:]
        dm = -gamma * m + fh
        if model == "ghbnode":
            dm = dm - xi * h
        dh = torch.tanh(m) if model == "ghbnode" else m
        return torch.cat([dh, dm], 1)
    return F


def initial(model, w, x, H):
    h0 = x @ w["W_x"].T + w["b_x"]
    if model == "anode":
        return torch.cat([h0, torch.zeros(h0.shape[0], AUGMENT, dtype=h0.dtype)], 1)
    if model == "sonode":
        return torch.cat([h0, x @ w["W_v"].T + w["b_v"]], 1)
    return h0 if model == "node" else torch.cat([h0, torch.zeros_like(h0)], 1)


def hybrid(model, w, x, dt, H, solver, kw):
    """The ODE-RNN hybrid (docs/cells.md): per step, the state flows over
    each row's gap (s from 0 to 1 with the dynamics scaled by dt: one system
    for the batch), then h = tanh(W_x x_t + b_x + W_u h), m kept."""
    T, B, _ = x.shape
    F = dynamics(model, w, H)
    z = torch.zeros(B, H if model == "node" else 2 * H, dtype=F64)
    ys, tot = [], [0, 0, 0]
    for t in range(T):
        sc = dt[t].reshape(B, 1)
        z, st = solve(lambda s, zz: sc * F(s, zz), z, 0.0, 1.0, solver, **kw)
        tot = [a + b for a, b in zip(tot, st)]
        h = torch.tanh(x[t] @ w["W_x"].T + w["b_x"] + z[:, :H] @ w["W_u"].T)
        z = torch.cat([h, z[:, H:]], 1)
        ys.append(h)
    return torch.stack(ys), tot


def draw_weights(model, I, H, seed, rnn=False):
    rng = np.random.RandomState(seed)
    out = {}
    for name, shape in params(model, I, H, rnn):
        if name == "w":                 # damping gamma = sigmoid(w) in (0.05, 0.73)
            a = rng.uniform(-3.0, 1.0, shape)
        elif name == "c":               # xi = softplus(c) in (0.31, 1.31)
            a = rng.uniform(-1.0, 1.0, shape)
        elif name == "W_h":             # strong enough to bend the flow
            a = rng.uniform(-2.0, 2.0, shape) / np.sqrt(shape[1])
        else:
            fan = shape[1] if len(shape) == 2 else I
            a = rng.uniform(-1.0, 1.0, shape) / np.sqrt(fan) * 1.5
        out[name] = a.astype(np.float32)
    return out


def model_text(model, H, opts):
    if model == "anode":
        opts = dict(augment=AUGMENT, **opts)
    o = "".join(", %s=%s" % (k, v) for k, v in opts.items())
    return ("# generated by tests/gen_ode_cases.py\n"
            "model m {\n"
            "    input x: f32[batch, %d]\n"
            "    weights \"model.weights\"\n"
            "    h = %s(x, hidden=%d%s)\n"
            "    s = ode_stats(h)\n"
            "    output h, s\n"
            "}\n") % (I_SIZE, model, H, o)


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


# ---- the cases -----------------------------------------------------------------

I_SIZE = 3
BATCHES = (1, 3, 64)
MODELS = ("node", "hbnode", "ghbnode")
# (solver, options): every fixed-step solver, dopri5 at several tolerances
SOLVES = [
    ("euler", dict(steps=10)),
    ("midpoint", dict(steps=7)),
    ("rk4", dict(steps=5, t1=2.0)),
    ("dopri5", dict(rtol=1e-3, atol=1e-6)),
    ("dopri5", dict(rtol=1e-4, atol=1e-6, t1=3.0)),
    ("dopri5", dict(rtol=1e-6, atol=1e-8)),
    ("dopri5", dict(rtol=1e-5, atol=1e-7, t0=1.0, t1=-1.0)),
    ("dopri5", dict(rtol=1e-5, atol=1e-7, t1=10.0)),      # long enough to reject steps
]
TESTS, SCIPY = [], []
REJECTED = [0]


def case_name(model, solver, opts):
    tag = "_".join("%s%s" % (k, ("%g" % v).replace("-", "m")) for k, v in opts.items())
    return "%s_%s%s" % (model, solver, "_" + tag if tag else "")


def write_case(outdir, model, solver, opts, H=5):
    name = case_name(model, solver, opts)
    d = os.path.join(outdir, name)
    os.makedirs(d)
    w32 = draw_weights(model, I_SIZE, H, seed_of(name))
    tensorfile.write(os.path.join(d, "model.weights"),
                     [("h." + n, w32[n]) for n, _ in params(model, I_SIZE, H)])
    with open(os.path.join(d, "model.cell"), "w") as f:
        f.write(model_text(model, H, dict(solver=solver, **opts)))
    w = {n: torch.tensor(v, dtype=F64) for n, v in w32.items()}
    F = dynamics(model, w, H)
    t0, t1 = opts.get("t0", 0.0), opts.get("t1", 1.0)
    kw = dict(steps=opts.get("steps", 10)) if solver != "dopri5" else dict(
        rtol=opts["rtol"], atol=opts["atol"], max_steps=opts.get("max_steps", 10000))
    for k, B in enumerate(BATCHES):
        rng = np.random.RandomState(seed_of(name, B))
        x = rng.randn(B, I_SIZE).astype(np.float32)
        z0 = initial(model, w, torch.tensor(x, dtype=F64), H)
        z, st = solve(F, z0, t0, t1, solver, **kw)
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        write_pb(os.path.join(ds, "input_0.pb"), x, "x")
        write_pb(os.path.join(ds, "output_0.pb"), z[:, :H].numpy().astype(np.float32), "h")
        write_pb(os.path.join(ds, "output_1.pb"), np.array(st, dtype=np.int64), "s")
        print("  %s B=%d: nfe %d accepted %d rejected %d" % (name, B, *st))
        REJECTED[0] += st[2]
        if solver == "dopri5" and B == 3:
            ref = scipy_solve(F, z0, t0, t1)
            bound = 20 * (opts["atol"] + opts["rtol"] * float(ref.abs().max()))
            SCIPY.append((name, B, float((z - ref).abs().max()), bound))
    if solver == "dopri5":
        atol, rtol = max(opts["atol"], 1e-5), opts["rtol"]
    else:
        atol, rtol = 1e-5, 0.0
    TESTS.append((name, os.path.join(d, "model.cell"), d, atol, rtol))


RNN_NAMES = {"node": "ode_rnn", "hbnode": "hbnode_rnn", "ghbnode": "ghbnode_rnn"}
RNN_SOLVES = [
    ("euler", dict(steps=3)),
    ("midpoint", dict(steps=2)),
    ("rk4", dict(steps=2)),
    ("dopri5", dict(rtol=1e-4, atol=1e-6)),
    ("dopri5", dict(rtol=1e-6, atol=1e-8)),
]
RNN_GRID = ((1, 1), (7, 3), (30, 16))


def write_rnn_case(outdir, model, solver, opts, H=5):
    name = "rnn_" + case_name(model, solver, opts)
    d = os.path.join(outdir, name)
    os.makedirs(d)
    w32 = draw_weights(model, I_SIZE, H, seed_of(name), rnn=True)
    tensorfile.write(os.path.join(d, "model.weights"),
                     [("h." + n, w32[n]) for n, _ in params(model, I_SIZE, H, True)])
    o = "".join(", %s=%s" % (k, v) for k, v in dict(solver=solver, **opts).items())
    with open(os.path.join(d, "model.cell"), "w") as f:
        f.write("# generated by tests/gen_ode_cases.py\n"
                "model m {\n"
                "    input x: f32[seq, batch, %d]\n"
                "    input dt: f32[seq, batch]\n"
                "    weights \"model.weights\"\n"
                "    h = %s(x, dt, hidden=%d%s)\n"
                "    s = ode_stats(h)\n"
                "    output h, s\n"
                "}\n" % (I_SIZE, RNN_NAMES[model], H, o))
    w = {n: torch.tensor(v, dtype=F64) for n, v in w32.items()}
    kw = dict(steps=opts["steps"]) if solver != "dopri5" else dict(
        rtol=opts["rtol"], atol=opts["atol"], max_steps=10000)
    for k, (T, B) in enumerate(RNN_GRID):
        rng = np.random.RandomState(seed_of(name, T, B))
        x = rng.randn(T, B, I_SIZE).astype(np.float32)
        gap = np.where(rng.uniform(size=(T, B)) < 0.1, 0.5, 0.25) * rng.uniform(0.8, 1.2, (T, B))
        dt = gap.astype(np.float32)
        y, st = hybrid(model, w, torch.tensor(x, dtype=F64), torch.tensor(dt, dtype=F64), H, solver, kw)
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        write_pb(os.path.join(ds, "input_0.pb"), x, "x")
        write_pb(os.path.join(ds, "input_1.pb"), dt, "dt")
        write_pb(os.path.join(ds, "output_0.pb"), y.numpy().astype(np.float32), "h")
        write_pb(os.path.join(ds, "output_1.pb"), np.array(st, dtype=np.int64), "s")
        print("  %s T=%d B=%d: nfe %d accepted %d rejected %d" % (name, T, B, *st))
    if solver == "dopri5":
        atol, rtol = max(opts["atol"], 1e-5), opts["rtol"]
    else:
        atol, rtol = 1e-5, 0.0
    TESTS.append((name, os.path.join(d, "model.cell"), d, atol, rtol))


def scipy_solve(F, z0, t0, t1):
    shape = z0.shape

    def fun(t, y):
        return F(t, torch.tensor(y, dtype=F64).reshape(shape)).reshape(-1).numpy()
    r = solve_ivp(fun, (t0, t1), z0.reshape(-1).numpy(), method="RK45", rtol=1e-10, atol=1e-12)
    assert r.success, r.message
    return torch.tensor(r.y[:, -1], dtype=F64).reshape(shape)


def scipy_dynamics_check(model, H=5):
    """rk4 at 2000 steps against scipy: the same flow, to 1e-8."""
    name = "dynamics_" + model
    w32 = draw_weights(model, I_SIZE, H, seed_of(name))
    w = {n: torch.tensor(v, dtype=F64) for n, v in w32.items()}
    F = dynamics(model, w, H)
    x = torch.tensor(np.random.RandomState(seed_of(name)).randn(3, I_SIZE), dtype=F64)
    z0 = initial(model, w, x, H)
    z, _ = solve(F, z0, 0.0, 2.0, "rk4", steps=2000)
    SCIPY.append((name, 3, float((z - scipy_solve(F, z0, 0.0, 2.0)).abs().max()), 1e-8))


SEQ = "input x: f32[seq, batch, 3]\n    input dt: f32[seq, batch]"
BAD = [
    ("rtol_fixed", "h = hbnode(x, hidden=4, solver=euler, rtol=1e-3)",
     "rtol applies to the adaptive solver dopri5 only"),
    ("steps_adaptive", "h = node(x, hidden=4, solver=dopri5, steps=8)",
     "steps applies to the fixed-step solvers"),
    ("solver_word", "h = ghbnode(x, hidden=4, solver=rk45)",
     "solver must be euler, midpoint, rk4 or dopri5"),
    ("no_hidden", "h = hbnode(x, solver=rk4)", "an ODE block needs the option hidden=N"),
    ("unknown_option", "h = hbnode(x, hidden=4, gamma=0.5)", "unknown option 'gamma' for an ODE block"),
    ("augment_not_anode", "h = sonode(x, hidden=4, augment=2)", "augment applies to anode only"),
    ("anode_rnn", SEQ + "\n    h = anode_rnn(x, dt, hidden=4)", "unknown cell or function 'anode_rnn'"),
    ("tolerances_zero", "h = hbnode(x, hidden=4, rtol=0, atol=0)", "rtol and atol cannot both be 0"),
    ("block_on_sequence", SEQ + "\n    h = hbnode(x, hidden=4)",
     "hbnode maps x [batch, I] (I constant) to its initial state; its input is [seq, batch, 3], a sequence"),
    ("hybrid_t1", SEQ + "\n    h = ode_rnn(x, dt, hidden=4, t1=2)", "t1 does not apply to an ODE-RNN hybrid"),
    ("hybrid_no_dt", SEQ + "\n    h = ghbnode_rnn(x, hidden=4)", "ghbnode_rnn takes the gaps dt [T, B] second"),
    ("hybrid_dt_shape", "input x: f32[seq, batch, 3]\n    input dt: f32[seq, 7]\n"
     "    h = hbnode_rnn(x, dt, hidden=4)", "hbnode_rnn takes the gaps dt f32 [T, B] of its input"),
    ("stats_of_other", "h = relu(x)\n    s = ode_stats(h)", "ode_stats() takes the value of an ODE block"),
]


def main(outdir):
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(outdir)
    for model in MODELS:
        for solver, opts in SOLVES:
            write_case(outdir, model, solver, opts)
        scipy_dynamics_check(model)
        for solver, opts in RNN_SOLVES:
            write_rnn_case(outdir, model, solver, opts)
    for model in ("anode", "sonode"):
        for solver, opts in (SOLVES[0], SOLVES[2], SOLVES[3], SOLVES[6]):
            write_case(outdir, model, solver, opts)
        scipy_dynamics_check(model)
    # a larger state: 20 units, rk4 and dopri5
    write_case(outdir, "hbnode", "rk4", dict(steps=12), H=20)
    write_case(outdir, "ghbnode", "dopri5", dict(rtol=1e-4, atol=1e-6, t1=2.0), H=20)
    assert REJECTED[0] >= 10, "the cases must exercise step rejection (%d rejected)" % REJECTED[0]
    with open(os.path.join(outdir, "tests.tsv"), "w") as f:
        for t in TESTS:
            f.write("%s\t%s\t%s\t%g\t%g\n" % t)
    with open(os.path.join(outdir, "scipy.tsv"), "w") as f:
        for name, B, err, bound in SCIPY:
            f.write("%s\t%d\t%.6g\t%.6g\n" % (name, B, err, bound))
            print("  scipy %s B=%d: max |h - scipy| %.3g (bound %.3g)" % (name, B, err, bound))
    for name, stmt, expect in BAD:
        d = os.path.join(outdir, "bad", name)
        os.makedirs(d)
        with open(os.path.join(d, "model.cell"), "w") as f:
            head = "" if stmt.startswith("input") else "input x: f32[batch, 3]\n    "
            f.write("model m {\n    %s%s\n    output h\n}\n" % (head, stmt))
        with open(os.path.join(d, "expect.txt"), "w") as f:
            f.write(expect + "\n")
    # the step limit: a stiff-enough flow and max_steps=3
    d = os.path.join(outdir, "limit")
    shutil.copytree(os.path.join(outdir, case_name("hbnode", "dopri5", dict(rtol=1e-6, atol=1e-8))), d)
    with open(os.path.join(d, "model.cell"), "w") as f:
        f.write(model_text("hbnode", 5, dict(solver="dopri5", rtol=1e-6, atol=1e-8, max_steps=3)))
    with open(os.path.join(outdir, ".stamp"), "w"):
        pass


if __name__ == "__main__":
    main(sys.argv[1])
