"""gen_train_cases.py: fixtures of the `train` and `fd` test groups (issue 5).

1. Trajectories, OUTDIR/<case>/ (the `train` group): 50 optimiser steps of
     momentum_lstm_rmsprop_clip  .cell MomentumLSTM + RMSprop, gradient-norm
                                 clipping active on most steps
     adam_lstm_adam              .cell AdamLSTM + Adam
     onnx_lstm_sgd_nesterov      an nn.LSTM export + SGD, Nesterov momentum,
                                 weight decay
   from fixed initial weights (model.weights beside model.cell; the ONNX
   initializers) on fixed data: X.npy float32 [N, T, I], Y.npy int64 [N],
   batches in order, no shuffling: batch k (0-based) is rows
   [kB, (k+1)B) mod N (N is a multiple of B).  Every model reads x as
   [T, B, I] (seq first) and ends in a [B, C] head on the last step; the loss
   is ce (PyTorch cross_entropy, mean).  Files:
     model.cell + model.weights | model.onnx
     X.npy, Y.npy
     cmd.txt       the options of NAME_train (docs/training.md) that
                   reproduce the run, relative to the case directory; the
                   harness adds --log
     compile.txt   extra options of `cellc compile --train` (the loss)
     losses.csv    `step,loss`: step 1..50, the batch loss before that step's
                   update, PyTorch float64 (printed with 9 significant digits)
   The same run in PyTorch float32 must stay within TRAJ_ACC (1e-5, a tenth
   of the harness's 1e-4) of float64 at every step, or the case is changed.

   OUTDIR/fd_driver/inputs.tensors: the inputs of tests/train/fd_mock.c,
   the stand-in model with which the fd group tests fd_check.c itself.

2. Finite differences, OUTDIR/fd/<case>/ (the `fd` group, tests/train/fd_check.c
   on the compiled C): tiny models (T <= 4, B <= 2, H <= 4) of the cell
   families and both front ends, with
     model.cell + model.weights | model.onnx
     inputs.tensors  every input of the train graph by name (model inputs,
                     target [, mask]), a cellc tensor file
     fd.json         compile options (the loss) and eps, rtol, atol
   Tolerance (float32), |fd - g| <= ATOL + RTOL |g| with eps = 1e-2,
   ATOL = 1e-4, RTOL = 2e-3: the loss L = O(1) is evaluated in float32 with
   a rounding error |dL| of a few ulp (~1e-6) at these sizes, so a central
   difference carries about 2 dL / (2 eps) = 1e-4 of rounding (ATOL); its
   truncation error eps^2/6 |d3L| is 1.7e-5 |d3L|, within RTOL |g| for the
   smooth cells here (weights O(1)).  The probes are the element of largest
   |g|, one picked element and a random +-1 direction over the whole tensor.
   The generator replays the exact probes of fd_check.c on the PyTorch
   float32 reference and requires (a) every probe to pass within FD_MARGIN
   (half) of the tolerance -- measured: at most ~12% -- so a correct float32
   implementation meets it, and (b) a gradient 10% off in any one tensor to
   fail a probe, so the check has teeth (a missing BPTT term, a wrong gate
   block or a sign error is far more than 10%).  Cells with kinks (relu,
   modrelu) are left out: a kink within eps of a probe breaks differencing.

usage: gen_train_cases.py OUTDIR
"""
import copy
import io
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_cell_cases as G  # noqa: E402
import gen_grad_cases as GG  # noqa: E402
import onnx_ref  # noqa: E402
import ref_momentum  # noqa: E402
import tensorfile  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(1)

STEPS = 50
TRAJ_ACC = 1e-5
FD_EPS, FD_RTOL, FD_ATOL = 1e-2, 2e-3, 1e-4
FD_MARGIN = 0.5


# ---- 1. trajectories -----------------------------------------------------------

def batches(X, Y, B):
    N = X.shape[0]
    assert N % B == 0
    for k in range(STEPS):
        rows = [(k * B + j) % N for j in range(B)]
        yield X[rows].transpose(1, 0, 2), Y[rows]     # x [T, B, I]


def make_data(seed, N, Tn, I, C):
    """Sequences whose class shows in their mean (so the loss falls)."""
    rng = np.random.RandomState(seed)
    Y = rng.randint(0, C, size=N).astype(np.int64)
    centers = rng.randn(C, I)
    X = (rng.randn(N, Tn, I) * 0.8 + 0.6 * centers[Y][:, None, :]).astype(np.float32)
    return X, Y


def run_trajectory(params, loss_fn, X, Y, B, make_opt, clip, dtype, frozen=()):
    """params: {name: ndarray float32}; loss_fn(leaves {name: tensor}, x, y,
    dtype) -> loss; the params named in frozen are held fixed (no gradient,
    not trained).  Returns ([losses], [grad norms before clipping])."""
    leaves = {n: torch.tensor(np.asarray(a, np.float64), dtype=dtype, requires_grad=n not in frozen)
              for n, a in params.items()}
    trained = [v for n, v in leaves.items() if n not in frozen]
    opt = make_opt(trained)
    losses, norms = [], []
    for x, y in batches(X, Y, B):
        opt.zero_grad()
        loss = loss_fn(leaves, torch.as_tensor(x, dtype=dtype), torch.as_tensor(y), dtype)
        loss.backward()
        if clip:
            norms.append(float(torch.nn.utils.clip_grad_norm_(trained, clip)))
        opt.step()
        losses.append(float(loss))
    return losses, norms


def write_trajectory(outdir, name, writer, params, loss_fn, X, Y, B, make_opt, clip, cmd, compile_opts,
                     frozen=()):
    l64, n64 = run_trajectory(params, loss_fn, X, Y, B, make_opt, clip, torch.float64, frozen)
    l32, _ = run_trajectory(params, loss_fn, X, Y, B, make_opt, clip, torch.float32, frozen)
    err = max(abs(a - b) / abs(b) for a, b in zip(l32, l64))
    if err > TRAJ_ACC:
        sys.exit("%s: float32 trajectory off by %.3g relative (> %g)" % (name, err, TRAJ_ACC))
    if l64[-1] > 0.9 * l64[0]:
        sys.exit("%s: the loss does not fall (%.4g -> %.4g): a weak test" % (name, l64[0], l64[-1]))
    if clip:
        clipped = sum(1 for n in n64 if n > clip)
        if clipped < STEPS // 2:
            sys.exit("%s: clipping active on %d steps only" % (name, clipped))
    d = os.path.join(outdir, name)
    os.makedirs(d)
    writer(d)
    np.save(os.path.join(d, "X.npy"), X)
    np.save(os.path.join(d, "Y.npy"), Y)
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write(cmd + "\n")
    with open(os.path.join(d, "compile.txt"), "w") as f:
        f.write(compile_opts + "\n")
    with open(os.path.join(d, "losses.csv"), "w") as f:
        f.write("step,loss\n")
        for k, v in enumerate(l64):
            f.write("%d,%.9g\n" % (k + 1, v))
    print("%-32s loss %.4f -> %.4f, float32 vs float64 %.2g%s" % (
        name, l64[0], l64[-1], err, ", clipped on %d steps" % sum(1 for n in n64 if n > clip) if clip else ""))


def cell_trajectory(outdir, name, cell, opts, make_opt, clip, cmd, seed, frozen=(), compile_opts="--loss ce"):
    """frozen: parameters held fixed by the --freeze of compile_opts (and
    those the cell holds fixed, dtriv's base)."""
    N, Tn, I, H, C, B = 48, 12, 6, 16, 4, 8
    L = G.Layer
    model = GG.cell_model(name.replace("_", "")[:16], [L("h1", cell, "x", H, **opts)], "last", C, I)
    weights = G.draw_weights(model, seed)
    pnames = [n for n, _, _ in model.params()]
    X, Y = make_data(seed, N, Tn, I, C)

    def loss_fn(leaves, x, y, dtype):
        return torch.nn.functional.cross_entropy(model.ref(leaves, x, dtype)[0], y)

    def writer(d):
        tensorfile.write(os.path.join(d, "model.weights"), [(n, weights[n]) for n in pnames])
        with open(os.path.join(d, "model.cell"), "w") as f:
            f.write(model.text().replace("gen_cell_cases.py", "gen_train_cases.py"))
    write_trajectory(outdir, name, writer, {n: weights[n] for n in pnames}, loss_fn, X, Y, B, make_opt,
                     clip, cmd % dict(B=B), compile_opts, set(frozen) | model.frozen())


def onnx_trajectory(outdir):
    name = "onnx_lstm_sgd_nesterov"
    N, Tn, I, H, C, B = 40, 10, 5, 12, 3, 8
    torch.manual_seed(7001)
    net = GG.RNNNet("LSTM", I, H, C, "last").eval()
    X, Y = make_data(7001, N, Tn, I, C)
    f = io.BytesIO()
    ex = torch.from_numpy(X[:B].transpose(1, 0, 2).copy())
    with torch.no_grad():
        torch.onnx.export(net, (ex,), f, opset_version=14, input_names=["x"], output_names=["y", "h_n"],
                          dynamic_axes={"x": {0: "seq", 1: "batch"}, "y": {0: "batch"}, "h_n": {1: "batch"}})
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    GG.onnx_param_map(model, net)       # every initializer is a parameter's exact image
    check_export(name, model, net, [X[:B].transpose(1, 0, 2).copy()])
    nets = {torch.float32: copy.deepcopy(net), torch.float64: copy.deepcopy(net).double()}
    params = {n: p.detach().numpy().copy() for n, p in net.named_parameters()}

    def run(dtype, make_opt):
        m = nets[dtype]
        with torch.no_grad():
            for n, p in m.named_parameters():
                p.copy_(torch.as_tensor(params[n], dtype=dtype))
        opt = make_opt(list(m.parameters()))
        losses = []
        for x, y in batches(X, Y, B):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(torch.as_tensor(x, dtype=dtype))[0], torch.as_tensor(y))
            loss.backward()
            opt.step()
            losses.append(float(loss))
        return losses

    def make_opt(ps):
        return torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    l64, l32 = run(torch.float64, make_opt), run(torch.float32, make_opt)
    cmd = ("--train-data X.npy --train-labels Y.npy --batch %d --max-steps %d --epochs 1000 --no-shuffle "
           "--optimizer sgd --lr 0.1 --momentum 0.9 --nesterov --weight-decay 0.001 --seed 1" % (B, STEPS))
    # write_trajectory's checks with the module run in place of leaves
    err = max(abs(a - b) / abs(b) for a, b in zip(l32, l64))
    if err > TRAJ_ACC or l64[-1] > 0.9 * l64[0]:
        sys.exit("%s: float32 error %.3g, loss %.4g -> %.4g" % (name, err, l64[0], l64[-1]))
    d = os.path.join(outdir, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "X.npy"), X)
    np.save(os.path.join(d, "Y.npy"), Y)
    with open(os.path.join(d, "cmd.txt"), "w") as f:
        f.write(cmd + "\n")
    with open(os.path.join(d, "compile.txt"), "w") as f:
        f.write("--loss ce --loss-output y\n")
    with open(os.path.join(d, "losses.csv"), "w") as f:
        f.write("step,loss\n")
        for k, v in enumerate(l64):
            f.write("%d,%.9g\n" % (k + 1, v))
    print("%-32s loss %.4f -> %.4f, float32 vs float64 %.2g" % (name, l64[0], l64[-1], err))


def check_export(name, model, net, xs):
    """The exported graph computes the module's outputs (the numpy
    interpreter tests/onnx_ref.py on the export's own sizes)."""
    with torch.no_grad():
        want = [o.numpy() for o in net(*[torch.from_numpy(a) for a in xs])]
    for a, b in zip(onnx_ref.run(model, xs), want):
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5), "%s: the export differs from PyTorch" % name


def trajectories(outdir):
    cell_trajectory(
        outdir, "momentum_lstm_rmsprop_clip", "momentum_lstm", dict(mu=0.6, s=0.6),
        lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9, eps=1e-8), 0.1,
        "--train-data X.npy --train-labels Y.npy --batch %(B)d --max-steps 50 --epochs 1000 --no-shuffle "
        "--optimizer rmsprop --lr 0.01 --alpha 0.9 --eps 1e-8 --clip 0.1 --seed 1", 7101)
    cell_trajectory(
        outdir, "adam_lstm_adam", "adam_lstm", dict(mu=0.5, s=0.7, beta=0.9),
        lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.9, 0.999), eps=1e-8), None,
        "--train-data X.npy --train-labels Y.npy --batch %(B)d --max-steps 50 --epochs 1000 --no-shuffle "
        "--optimizer adam --lr 0.01 --beta1 0.9 --beta2 0.999 --eps 1e-8 --seed 1", 7102)
    # parameters held fixed: dtriv's base (the cell freezes it), and a
    # recurrent matrix frozen by `cellc compile --freeze`
    cell_trajectory(
        outdir, "dtriv_adam_base_fixed", "dtriv", {},
        lambda ps: torch.optim.Adam(ps, lr=0.01), None,
        "--train-data X.npy --train-labels Y.npy --batch %(B)d --max-steps 50 --epochs 1000 --no-shuffle "
        "--optimizer adam --lr 0.01 --seed 1", 7103)
    cell_trajectory(
        outdir, "lstm_sgd_freeze_wh", "lstm", {},
        lambda ps: torch.optim.SGD(ps, lr=0.2, momentum=0.9), None,
        "--train-data X.npy --train-labels Y.npy --batch %(B)d --max-steps 50 --epochs 1000 --no-shuffle "
        "--optimizer sgd --lr 0.2 --momentum 0.9 --seed 1", 7104, frozen=("h1.W_h",),
        compile_opts="--loss ce --freeze h1.W_h")
    onnx_trajectory(outdir)


# ---- 2. finite-difference cases --------------------------------------------------

def probe_index(k, n):
    return (k * 2654435761 + 12345) % n


def probe_sign(k, j):
    M = (1 << 64) - 1
    h = ((j * 0x9E3779B97F4A7C15) & M) ^ ((k * 0xBF58476D1CE4E5B9) & M)
    h ^= h >> 31
    return 1 if (h >> 7) & 1 else -1


def f32(v):
    return float(np.float32(v))


def ratio(fd, g):
    return abs(fd - g) / (FD_ATOL + FD_RTOL * abs(g))


def replay(tensors, loss32):
    """The probes of fd_check.c on a float32 reference.  tensors: [(name,
    get() -> float32 ndarray (flat copy), set(flat ndarray), g flat ndarray)]
    in fd_check's order (parameters, then f32 inputs); loss32() -> float.
    Returns the worst |fd - g| / (ATOL + RTOL |g|), after checking that the
    probes would catch a gradient 10% off in any one tensor."""
    worst = 0.0
    for k, (name, get, put, g) in enumerate(tensors):
        a = get()
        n = a.size
        res = []
        for i in (int(np.argmax(np.abs(g))), probe_index(k, n)):
            b = a.copy()
            b[i] = f32(float(a[i]) + FD_EPS)
            put(b)
            lp = loss32()
            b[i] = f32(float(a[i]) - FD_EPS)
            put(b)
            lm = loss32()
            put(a)
            h = f32(float(a[i]) + FD_EPS) - f32(float(a[i]) - FD_EPS)
            res.append(((lp - lm) / h, float(g[i])))
        s = FD_EPS / np.sqrt(n)
        sg = np.array([probe_sign(k, j) for j in range(n)], np.float64)
        put((a.astype(np.float64) + sg * s).astype(np.float32))
        lp = loss32()
        put((a.astype(np.float64) - sg * s).astype(np.float32))
        lm = loss32()
        put(a)
        res.append(((lp - lm) / (2 * FD_EPS), float((sg * g.astype(np.float64)).sum() / np.sqrt(n))))
        worst = max([worst] + [ratio(fd, gv) for fd, gv in res])
        if max(ratio(fd, 0.9 * gv) for fd, gv in res) <= 1.0:
            sys.exit("fd: a gradient of %s 10%% off would pass (|g| max %.3g): make it larger" % (
                name, float(np.abs(g).max())))
    return worst


FD_ROWS = []


def write_fd(outdir, name, writer, inputs, kind, extra_compile, worst):
    d = os.path.join(outdir, "fd", name)
    os.makedirs(d)
    writer(d)
    tensorfile.write(os.path.join(d, "inputs.tensors"), inputs)
    with open(os.path.join(d, "fd.json"), "w") as f:
        json.dump(dict(compile=["--loss", kind] + extra_compile, eps=FD_EPS, rtol=FD_RTOL, atol=FD_ATOL,
                       replay_worst=worst), f)
    FD_ROWS.append((name, worst))
    print("fd %-30s %-10s float32 replay: worst |fd-g|/tol %.3f" % (name, kind, worst))
    if worst > FD_MARGIN:
        sys.exit("fd %s: the float32 reference needs %.2f of the tolerance (> %g)" % (name, worst, FD_MARGIN))


def fd_cell(outdir, name, cell, kind, Tn=4, B=2, H=3, I=2, C=3, **opts):
    L = G.Layer
    head = "last" if kind == "ce" else "seq"
    model = GG.cell_model("fd", [L("h1", cell, "x", H, **opts)], head, C, I)
    w = G.draw_weights(model, GG.seed_of("fd", name))
    pnames = [n for n, _, _ in model.params()]
    rng = np.random.RandomState(GG.seed_of("fd", name, "x"))
    x = rng.uniform(-1, 1, (Tn, B, I)).astype(np.float32)
    with torch.no_grad():
        y = model.ref({n: torch.as_tensor(a, dtype=torch.float64) for n, a in w.items()}, x, torch.float64)[0]
    target, mask = GG.make_target(kind, tuple(y.shape), rng)
    vals = dict(w)
    vals["x"] = x

    def loss32():
        with torch.no_grad():
            t = {n: torch.as_tensor(a) for n, a in vals.items()}
            tg = torch.as_tensor(target)
            mk = None if mask is None else torch.as_tensor(mask)
            return float(GG.loss_of(kind, model.ref(t, t["x"], torch.float32)[0], tg, mk))
    e = GG.evaluate(lambda t, dt: model.ref(t, t["x"], dt), vals, torch.float64, kind, target, mask, 0)
    tensors = []
    for n in pnames + ["x"]:
        shape = vals[n].shape

        def get(n=n):
            return vals[n].reshape(-1).copy()

        def put(a, n=n, shape=shape):
            vals[n] = a.reshape(shape).astype(np.float32)
        tensors.append((n, get, put, e.grads[n].numpy().reshape(-1)))
    worst = replay(tensors, loss32)

    def writer(d):
        tensorfile.write(os.path.join(d, "model.weights"), [(n, w[n]) for n in pnames])
        with open(os.path.join(d, "model.cell"), "w") as f:
            f.write(model.text().replace("gen_cell_cases.py", "gen_train_cases.py"))
    ins = [("x", x), ("target", target)] + ([("mask", mask)] if mask is not None else [])
    write_fd(outdir, name, writer, ins, kind, [], worst)


class default_dtype:
    """ref_momentum's zero states follow torch's default dtype."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __enter__(self):
        self.old = torch.get_default_dtype()
        torch.set_default_dtype(self.dtype)

    def __exit__(self, *a):
        torch.set_default_dtype(self.old)


def fd_onnx(outdir, name, net, in_names, out_names, example, kind, loss_output):
    """net: float32 module; example: [ndarray] inputs (seq first)."""
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(net, tuple(torch.from_numpy(a) for a in example), f, opset_version=14,
                          input_names=in_names, output_names=out_names)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    pmap = GG.onnx_param_map(model, net)
    check_export(name, model, net, example)
    m32, m64 = copy.deepcopy(net), copy.deepcopy(net).double()
    li = out_names.index(loss_output)
    with torch.no_grad(), default_dtype(torch.float64):
        y = m64(*[torch.as_tensor(a, dtype=torch.float64) for a in example])[li]
    rng = np.random.RandomState(GG.seed_of("fd", name))
    target, mask = GG.make_target(kind, tuple(y.shape), rng)
    tg = torch.as_tensor(target) if target.dtype == np.int64 else None
    xs = [a.copy() for a in example]

    def loss_of(m, dtype, keep_graph):
        ins = [torch.tensor(np.asarray(a, np.float64), dtype=dtype, requires_grad=keep_graph) for a in xs]
        t = tg if tg is not None else torch.as_tensor(target, dtype=dtype)
        mk = None if mask is None else torch.as_tensor(mask, dtype=dtype)
        with default_dtype(dtype):
            return GG.loss_of(kind, m(*ins)[li], t, mk), ins
    # analytic gradients in float64 (parameters, then inputs), mapped to initializers
    loss, ins = loss_of(m64, torch.float64, True)
    gp = torch.autograd.grad(loss, list(m64.parameters()) + ins)
    P = dict(zip([n for n, _ in m64.named_parameters()], gp[:len(list(m64.parameters()))]))
    # element ids: which parameter element each initializer element is
    ids, off = {}, 0
    for n, p in net.named_parameters():
        ids[n] = torch.arange(off, off + p.numel(), dtype=torch.float64).reshape(p.shape)
        off += p.numel()
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()]).numpy().copy()
    names = [n for n, _ in net.named_parameters()]

    def sync():
        o = 0
        with torch.no_grad():
            for p in m32.parameters():
                p.copy_(torch.from_numpy(flat[o:o + p.numel()].reshape(p.shape)))
                o += p.numel()

    def loss32():
        sync()
        with torch.no_grad():
            return float(loss_of(m32, torch.float32, False)[0])
    tensors = []
    for iname, fn in pmap:
        idx = fn(ids).reshape(-1).numpy().astype(np.int64)

        def get(idx=idx):
            return flat[idx].copy()

        def put(a, idx=idx):
            flat[idx] = a
        tensors.append((iname, get, put, fn(P).reshape(-1).numpy()))
    for j, n in enumerate(in_names):
        def get(j=j):
            return xs[j].reshape(-1).copy()

        def put(a, j=j):
            xs[j] = a.reshape(xs[j].shape).astype(np.float32)
        tensors.append((n, get, put, gp[len(names) + j].numpy().reshape(-1)))
    worst = replay(tensors, loss32)

    def writer(d):
        onnx.save(model, os.path.join(d, "model.onnx"))
    inp = list(zip(in_names, example)) + [("target", target)] + ([("mask", mask)] if mask is not None else [])
    write_fd(outdir, name, writer, inp, kind, ["--loss-output", loss_output], worst)


def fd_cases(outdir):
    fd_cell(outdir, "lstm_ce", "lstm", "ce")
    fd_cell(outdir, "gru_ce_all", "gru", "ce-all")
    fd_cell(outdir, "rnn_tanh_mse", "rnn", "mse")
    fd_cell(outdir, "momentum_lstm_masked", "momentum_lstm", "masked-mse")
    fd_cell(outdir, "adam_lstm_ce", "adam_lstm", "ce", beta=0.9)
    fd_cell(outdir, "rmsprop_gru_mse", "rmsprop_gru", "mse", beta=0.9)
    fd_cell(outdir, "nag_rnn_restart2_ce_all", "nag_rnn", "ce-all", restart=2)
    fd_cell(outdir, "nag_lstm_extrapolate_ce", "nag_lstm", "ce", form="extrapolate")
    fd_cell(outdir, "irnn_tanh_K2_mse", "irnn", "mse", K=2, act="tanh")
    fd_cell(outdir, "fastrnn_ce", "fastrnn", "ce")
    fd_cell(outdir, "heavy_ball_tanh_masked", "heavy_ball_rnn", "masked-mse", steps=2, act="tanh")
    fd_cell(outdir, "momentum_attention_ce_all", "momentum_attention", "ce-all")
    # nn.LSTM export with initial states: gradients of x, h0, c0 too
    torch.manual_seed(7201)
    net = GG.RNNNet("LSTM", 2, 3, 3, "last").eval()
    rng = np.random.RandomState(7201)
    ex = [rng.randn(4, 2, 2).astype(np.float32), 0.5 * rng.randn(1, 2, 3).astype(np.float32),
          0.5 * rng.randn(1, 2, 3).astype(np.float32)]
    fd_onnx(outdir, "onnx_lstm_init_ce", net, ["x", "h0", "c0"], ["y", "h_n"], ex, "ce", "y")
    # traced MomentumLSTM (static T = 4: the trace itself), mse on every step
    tnet = ref_momentum.make_model("momentum_lstm", 2, 3, 2, 7202)
    fd_onnx(outdir, "trace_momentum_lstm_mse", tnet, ["x"], ["y", "h"],
            [rng.randn(4, 2, 2).astype(np.float32)], "mse", "y")


def fd_driver_inputs(outdir):
    """Inputs of tests/train/fd_mock.c (the stand-in model the fd group
    tests fd_check.c itself with): x [2, 3], target [2, 4]."""
    rng = np.random.RandomState(7300)
    d = os.path.join(outdir, "fd_driver")
    os.makedirs(d)
    tensorfile.write(os.path.join(d, "inputs.tensors"),
                     [("x", rng.uniform(-1, 1, (2, 3)).astype(np.float32)),
                      ("target", rng.uniform(-1, 1, (2, 4)).astype(np.float32))])


def main(outdir):
    if os.path.exists(outdir):
        shutil.rmtree(outdir)
    os.makedirs(os.path.join(outdir, "fd"))
    trajectories(outdir)
    fd_cases(outdir)
    fd_driver_inputs(outdir)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen_train_cases.py OUTDIR")
    main(sys.argv[1])
