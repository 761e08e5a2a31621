"""run.py: the experiments of experiments/README.md, each one command.

    python3 experiments/run.py EXPERIMENT [--smoke [--jobs N]] [--steps N] [--torch-steps N]
                                          [--threads N] [--out DIR] [--cellc PATH]
                                          [--only LABEL,...] [--speed] [--resume]

EXPERIMENT is one of the names of EXPERIMENTS below (`make exp-NAME` runs it).
Every model is a `.cell` file in experiments/EXPERIMENT/, compiled with
`cellc compile --train`; the emitted training program (NAME_train) trains it.
Beside it, a PyTorch 1.13 script of the same model (experiments/torch_cells.py
reads the same `.cell` file) starts from the same weights (the weights file
cellc writes), sees the same batches (the training program's shuffle,
replayed by tasks.py) and uses the same optimiser.

A full run writes, under --out (default experiments/results/EXPERIMENT):
    curves.csv   model,step,loss,seconds          the generated C, every step
    torch.csv    model,step,loss,seconds          PyTorch, its measured steps
    speed.csv    per model: seconds per iteration of both, the ratio, the whole
                 run's wall time (PyTorch's extrapolated past its measured steps)
    *.svg        the curves (and, for `gradients`, ||dL/dh_t|| against t)
    report.md    the numbers and the command that made them, machine included
    runs.csv     per model: the steps, threads and command of its curve
--only LABEL,... runs those models of the experiment (their labels, as in
speed.csv) and keeps the other models' results under --out, read again when it
writes: two processes (two checkouts, each its own build/experiments) can share
the experiment's models, one core each.
--speed measures again, without training anew, the seconds per iteration of
both sides for every model whose results are under --out: the generated
program and the PyTorch script for --torch-steps steps each from the same
initial weights and batches, in this run (both skip their first step), and
rewrites speed.csv, torch.csv and report.md; the curves stay.
--resume continues each model's full run from the checkpoint its training
program left (build/experiments/EXPERIMENT/LABEL.ckpt, a space in LABEL as _;
written after every epoch), where there is one, with the program's --resume:
the steps of an uninterrupted run, its step and epoch logs kept up to the
checkpoint.  Its wall time is then the program's own count (the epoch log's
seconds), which the checkpoint carries over from the run cut off.
--smoke runs each model for 20 iterations at a small T in build/experiments/
and prints PASS/FAIL lines (the harness group `experiments`): the first loss
and the trajectory of the generated program must match PyTorch's (in float64)
within 1e-4 relative at every step up to the first where the trajectory is
chaotic at float32's resolution (CHAOS below).  --jobs N checks N
experiments at once, each in a process of its own (the harness passes its
CELLC_TEST_JOBS).
"""
import argparse
import csv
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import svg  # noqa: E402
import tasks  # noqa: E402
import tensorfile  # noqa: E402
import torch_cells  # noqa: E402

SMOKE_STEPS = 20
SMOKE_RTOL = 1e-4
# The smoke check compares the generated program with PyTorch in float64, the
# trajectory of the exact arithmetic, and says how far it follows it.  Where
# that trajectory is chaotic at float32's resolution, no float32
# implementation can follow it: the check compares the steps up to the first
# at which PyTorch float64 started from the weights nudged by one float32
# rounding (each times 1 +- 2^-24) is more than CHAOS (a tenth of the
# tolerance) off the run from the weights as they are, and says how many that
# was.  On the smoke data that cuts the orthogonal RNNs (dtriv and
# momentum_dtriv: 3 steps) and the tanh RNNs of the gradient experiment (12
# and 18 steps); every other run is compared over all 20.  PyTorch's own
# float32 run is no measure of this: its float32 matrix_exp puts it 3e-5 off
# float64 at step 2 of dtriv's smoke run, where the generated program, whose
# exponential is in double, is within 6e-7 of float64 for 6 steps (3e-5 for
# 10).  The nudge underestimates a float32 implementation's own error: on
# the gradient experiment's tanh RNN the generated program is about 17 times
# as far from float64 as the nudged run, so CHAOS is a tenth of the
# tolerance; the last step compared there is 5e-5 off, a factor of 2 inside
# the tolerance (the earlier cut-off by PyTorch float32 compared the same 12).
CHAOS = 1e-5
FIVE = ["lstm", "momentum_lstm", "adam_lstm", "rmsprop_lstm", "srlstm"]

# Each experiment: its task and sizes (full, smoke), the models (experiments/
# NAME/MODEL.cell), the loss, and the optimiser runs, one per curve:
# (label, model, optimiser options of NAME_train).  `steps` is the full run.
ADDING = dict(task="adding", T=750, smoke_T=30, batch=50, test=1000, loss="mse", steps=3000, torch_steps=5,
              runs=[(m, m, "--optimizer adam --lr 2e-4") for m in FIVE], about="adding problem, T = 750")
NAG = dict(
    task="addition", T=80, smoke_T=20, batch=100, test=1000, loss="mse", steps=10000, torch_steps=50, tol=0.04,
    runs=[("sgd", "rnn_echo", "--optimizer sgd --lr 1e-3 --clip 1"),
          ("cm", "rnn_echo", "--optimizer cm --lr 1e-3 --mu-max 0.99 --final-low 1000 --clip 1"),
          ("nag", "rnn_echo", "--optimizer nag --lr 1e-3 --mu-max 0.99 --final-low 1000 --clip 1")],
    about="Sutskever et al. 2013: an echo-state RNN on the addition problem, T = 80, "
          "SGD against classical momentum and NAG with the momentum schedule")
EXPERIMENTS = {
    "adding": ADDING,
    "adding-short": dict(ADDING, T=200, smoke_T=20, steps=1000, torch_steps=20, models_dir="adding",
                         about="adding problem, T = 200 (the quick run)"),
    "copying": dict(
        task="copying", T=100, smoke_T=10, batch=50, test=1000, loss="ce-all", steps=1000, torch_steps=20,
        runs=[(m, m, "--optimizer adam --lr 2e-4") for m in FIVE],
        about="copying problem, T = 100 (120 steps a sequence)"),
    "pixel": dict(
        task="pixels", T=784, smoke_T=49, batch=128, test=10000, loss="ce", steps=23 * 469, torch_steps=3,
        runs=[("lstm", "lstm", "--optimizer rmsprop --lr 1e-3 --alpha 0.9 --clip 1"),
              ("momentum_lstm", "momentum_lstm", "--optimizer rmsprop --lr 1e-3 --alpha 0.9 --clip 1"),
              ("lstm permuted", "lstm", "--optimizer rmsprop --lr 1e-3 --alpha 0.9 --clip 1 --permute 7"),
              ("momentum_lstm permuted", "momentum_lstm",
               "--optimizer rmsprop --lr 1e-3 --alpha 0.9 --clip 1 --permute 7")],
        about="pixel-by-pixel Fashion-MNIST (784 steps of one pixel), plain and permuted"),
    "gradients": dict(
        task="pixels", T=784, smoke_T=49, batch=128, test=0, loss="ce", steps=100, torch_steps=3,
        # the orthogonal RNNs' A at a tenth of the rate, as Lezcano-Casado's
        # DTRIV runs train their skew-symmetric parameter (lr_orth = lr / 10)
        runs=[(m, m, "--optimizer rmsprop --lr 1e-3 --alpha 0.9 --clip 1 --permute 7" +
               (" --lr-group h1.A=1e-4" if "dtriv" in m else ""))
              for m in ("rnn", "momentum_rnn", "dtriv", "momentum_dtriv")],
        grad_norms=True,
        about="||dL/dh_t|| on permuted pixel-by-pixel Fashion-MNIST, at initialisation and after training"),
    "nag": NAG,
    "nag-multiplication": dict(NAG, task="multiplication", models_dir="nag",
                               about="Sutskever et al. 2013: an echo-state RNN on the multiplication problem, "
                                     "T = 80, SGD against classical momentum and NAG with the momentum schedule"),
    "nag-memorization": dict(
        NAG, task="memorization", loss="ce-all", tol=None, seq_acc=True, models_dir="nag",
        runs=[(label, "rnn_echo_bits", opts) for label, _, opts in NAG["runs"]],
        about="Sutskever et al. 2013: an echo-state RNN on the 5-bit memorization problem, T = 80, "
              "SGD against classical momentum and NAG with the momentum schedule"),
    "irnn": dict(
        task="adding", T=200, smoke_T=20, batch=50, test=1000, loss="mse", steps=1000, torch_steps=20,
        runs=[("irnn", "irnn", "--optimizer adam --lr 2e-4"), ("lstm", "lstm", "--optimizer adam --lr 2e-4")],
        about="the incremental RNN against the LSTM on the adding problem, T = 200"),
}


def log(msg):
    print(msg, flush=True)


def sh(cmd, env=None, cwd=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                       cwd=cwd)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


def thread_env(n):
    env = dict(os.environ)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CELLRT_NUM_THREADS"):
        env[k] = str(n)
    return env


# ---- data -------------------------------------------------------------------------

def make_data(spec, T, ntrain, work, smoke):
    """Train and test files for the task; returns (train args, test args, arrays
    for PyTorch: x_train, y_train)."""
    os.makedirs(work, exist_ok=True)
    task = spec["task"]
    if task == "pixels" and smoke:
        # 7x7 images of a class template plus noise (tasks.images): T = 49, the
        # same --input pixels path, and no dependence on the data package
        imgs, labs = tasks.images(ntrain, 7, 10, 4242)
        timgs, tlabs = imgs[:0], labs[:0]
    elif task == "pixels":
        imgs = tasks.read_idx(os.path.join(tasks.FASHION, "train-images-idx3-ubyte.gz"))
        labs = tasks.read_idx(os.path.join(tasks.FASHION, "train-labels-idx1-ubyte.gz")).astype(np.int64)
        timgs = tasks.read_idx(os.path.join(tasks.FASHION, "t10k-images-idx3-ubyte.gz"))
        tlabs = tasks.read_idx(os.path.join(tasks.FASHION, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
        imgs, labs = imgs[:ntrain], labs[:ntrain]     # the first ntrain of the 60000
    if task == "pixels":
        files = {}
        for name, a in (("train-images", imgs), ("train-labels", labs), ("test-images", timgs),
                        ("test-labels", tlabs)):
            files[name] = os.path.join(work, name + ".idx")
            tasks.write_idx(files[name], a)
        tr = ["--train-data", files["train-images"], "--train-labels", files["train-labels"],
              "--input", "pixels", "--scale"]
        te = (["--test-data", files["test-images"], "--test-labels", files["test-labels"]]
              if spec["test"] and len(timgs) else [])
        return tr, te, (imgs, labs)
    gen = getattr(tasks, task)
    x, y = gen(ntrain, T, 1000 + T)
    tr = ["--train-data", tasks.save(work, "X.npy", x), "--train-labels", tasks.save(work, "Y.npy", y)]
    te = []
    if spec["test"] and not smoke:
        tx, ty = gen(spec["test"], T, 2000 + T)
        te = ["--test-data", tasks.save(work, "TX.npy", tx), "--test-labels", tasks.save(work, "TY.npy", ty)]
    return tr, te, (x, y)


def torch_inputs(spec, data, rows, permute):
    """x [T, B, I] and the target of the rows, as the training program fills them."""
    if spec["task"] == "pixels":
        imgs, labs = data
        x = tasks.pixels(imgs[rows], permute)
        return torch.from_numpy(np.ascontiguousarray(x.transpose(1, 0, 2))), torch.from_numpy(labs[rows])
    x, y = data
    return torch.from_numpy(np.ascontiguousarray(x[rows].transpose(1, 0, 2))), torch.from_numpy(y[rows])


def loss_of(kind, out, y):
    if kind == "mse":
        return F.mse_loss(out, y)
    if kind == "ce":
        return F.cross_entropy(out, y)
    T, B, C = out.shape         # ce-all: logits [T, B, C], labels [B, T]
    return F.cross_entropy(out.reshape(T * B, C), y.t().reshape(T * B))


# ---- the two sides ----------------------------------------------------------------

def opt_args(s):
    """The training program's options as a dict; --lr-group, which repeats,
    as a list of (prefix, lr)."""
    a = s.split()
    o = {}
    for i in range(0, len(a) - 1, 2):
        if a[i] == "--lr-group":
            prefix, _, lr = a[i + 1].partition("=")
            o.setdefault("lr-group", []).append((prefix, float(lr)))
        elif a[i].startswith("--"):
            o[a[i][2:]] = a[i + 1]
    return o


_built = set()


def build(cellc, model_cell, loss, work):
    """Compiles and builds the training program, once per process: a program
    left from an earlier cellc would measure that cellc, and the runs of one
    experiment that share a model share its program."""
    name = os.path.splitext(os.path.basename(model_cell))[0]
    d = os.path.join(work, "build_" + name)
    if (cellc, model_cell, loss, d) not in _built:
        shutil.rmtree(d, ignore_errors=True)
        sh([cellc, "compile", model_cell, "-o", d, "--train", "--loss", loss])
        sh(["make", "--no-print-directory", "-s", "-C", d, name + "_train"])
        _built.add((cellc, model_cell, loss, d))
    return os.path.join(d, name + "_train"), os.path.join(d, name + ".weights")


def run_c(prog, args, threads, csvpath, extra=(), diverge_ok=False, resume=False):
    """Runs the training program; with diverge_ok, a run stopped by a NaN or
    infinite loss (exit 1, docs/training.md) is a result: its message is
    returned in place of stdout and the logged steps are kept.  A resumed
    run (args hold --resume) keeps the step log's rows up to its checkpoint."""
    if os.path.exists(csvpath) and not resume:
        os.remove(csvpath)
    t0 = time.time()
    cmd = [prog] + args + ["--log", csvpath, "--quiet"] + list(extra)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       env=thread_env(threads))
    if p.returncode != 0 and not (diverge_ok and p.returncode == 1 and "stopping" in p.stderr):
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    out = p.stdout if p.returncode == 0 else "DIVERGED " + p.stderr.splitlines()[0]
    wall = time.time() - t0
    rows = []
    with open(csvpath) as f:
        for r in csv.DictReader(f):
            rows.append((int(r["step"]), float(r["loss"]), float(r["seconds"])))
    return rows, out, wall


class PaperMomentum:
    """Classical momentum and NAG as Sutskever et al. (2013) write them, with
    the momentum schedule mu_t = min(1 - 2^(-1 - log2(floor(t/250) + 1)), mu_max)
    and the final low-momentum phase (docs/training.md): for NAG the model is
    evaluated at p + mu_t v, the point whose gradient the update needs."""

    def __init__(self, params, kind, lr, mu_max, final_low, total):
        self.ps, self.kind, self.lr = params, kind, lr
        self.mu_max, self.final_low, self.total = mu_max, final_low, total
        self.v = [torch.zeros_like(p) for p in params]
        self.p = [p.detach().clone() for p in params]
        self.t = 0

    def mu(self, t):
        m = min(1 - 2 ** (-1 - math.log2(math.floor(t / 250) + 1)), self.mu_max)
        if self.final_low and t >= self.total - self.final_low:
            m = min(m, 0.9)
        return m

    def point(self):
        """Put the point where the gradient is taken into the parameters."""
        mu = self.mu(self.t) if self.kind == "nag" else 0.0
        with torch.no_grad():
            for q, p, v in zip(self.ps, self.p, self.v):
                q.copy_(p + mu * v)

    def final(self):
        """The parameters proper (what the training program evaluates)."""
        with torch.no_grad():
            for q, p in zip(self.ps, self.p):
                q.copy_(p)

    def step(self):
        mu = self.mu(self.t)
        with torch.no_grad():
            for q, p, v in zip(self.ps, self.p, self.v):
                v.mul_(mu).sub_(self.lr * q.grad)
                p.add_(v)
        self.t += 1


def make_torch_opt(o, named, total):
    """The optimiser over named = [(weights-file name, parameter)]; each
    --lr-group PREFIX=LR gives the parameters whose name starts with PREFIX
    their own rate, the longest prefix winning (as the training program)."""
    kind = o["optimizer"]
    lr = float(o["lr"])
    params = [p for _, p in named]
    if "lr-group" in o:
        def rate(name):
            hits = [(len(pre), r) for pre, r in o["lr-group"] if name.startswith(pre)]
            return max(hits)[1] if hits else lr
        groups = {}
        for name, p in named:
            groups.setdefault(rate(name), []).append(p)
        params = [{"params": ps, "lr": r} for r, ps in groups.items()]
        if kind not in ("adam", "rmsprop", "sgd"):
            raise ValueError("--lr-group with %s: not in the PyTorch scripts" % kind)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr)
    if kind == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, alpha=float(o.get("alpha", 0.99)))
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=float(o.get("momentum", 0)))
    return PaperMomentum(params, kind, lr, float(o.get("mu-max", 0.99)), int(o.get("final-low", 0)), total)


def run_torch(spec, model_cell, weights, data, o, nsamples, steps, total, threads, seed=1, test=None,
              dtype=torch.float32, fused=False, nudge=0.0):
    """Losses and per-step seconds of the first `steps` steps of the run; with
    test = (x, y) and a --tol or seq_acc, also the share of test samples right; with
    nudge, every initial weight times 1 + nudge or 1 - nudge (a fixed draw)."""
    torch.set_num_threads(threads)
    torch.set_default_dtype(dtype)
    try:
        return _run_torch(spec, model_cell, weights, data, o, nsamples, steps, total, seed, test, dtype, fused,
                          nudge)
    finally:
        torch.set_default_dtype(torch.float32)


def _run_torch(spec, model_cell, weights, data, o, nsamples, steps, total, seed, test, dtype, fused, nudge):
    net, head = torch_cells.load_cell(model_cell)
    torch_cells.set_weights(net, head, tensorfile.read(weights))
    if nudge:
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for _, p in net.cell_params(head):
                p.mul_(1 + nudge * (2 * torch.randint(0, 2, p.shape, generator=g) - 1).to(p.dtype))
    named = [(n, p) for n, p in net.cell_params(head) if p.requires_grad]     # frozen ones apart
    if fused:                   # the same network through nn.LSTM / nn.RNN
        net.cell = torch_cells.Fused(net.cell)
        named = list(zip([n for n, _ in named], net.cell.layer_params + [net.head.weight, net.head.bias]))
    params = [p for _, p in named]
    opt = make_torch_opt(o, named, total)
    clip = float(o["clip"]) if "clip" in o else None
    permute = int(o["permute"]) if "permute" in o else None
    losses, secs = [], []
    for _, rows in tasks.batches(seed, nsamples, spec["batch"], 10 ** 6, steps):
        x, y = torch_inputs(spec, data, rows, permute)
        x, y = x.to(dtype), (y.to(dtype) if y.is_floating_point() else y)
        t0 = time.time()
        if isinstance(opt, PaperMomentum):
            opt.point()
        for p in params:
            p.grad = None
        loss = loss_of(spec["loss"], net(x), y)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        secs.append(time.time() - t0)
        losses.append(float(loss))
    if test is None:
        return losses, secs
    if isinstance(opt, PaperMomentum):
        opt.final()
    with torch.no_grad():
        out = net(torch.from_numpy(np.ascontiguousarray(test[0].transpose(1, 0, 2))).to(dtype))
        if spec.get("seq_acc"):     # logits [T, B, C], labels [B, T]: every step right
            right = (out.argmax(2).t() == torch.from_numpy(test[1])).all(dim=1)
        else:
            right = (torch.abs(out - torch.from_numpy(test[1]).to(dtype)) <= float(spec["tol"])).all(dim=1)
    return losses, secs, float(right.double().mean())


def zero_one_args(spec):
    """The training program's options for the experiment's test accuracy: the
    share of test cases within --tol (mse), or of sequences right at every
    step (--seq-acc, ce-all)."""
    return ["--tol", str(spec["tol"])] if spec.get("tol") else ["--seq-acc"] if spec.get("seq_acc") else []


def torch_grad_norms(spec, model_cell, weights, data, rows, permute, threads):
    """||dL/dh_t|| over the batch `rows`, every t, at the given weights."""
    torch.set_num_threads(threads)
    net, head = torch_cells.load_cell(model_cell)
    torch_cells.set_weights(net, head, tensorfile.read(weights))
    x, y = torch_inputs(spec, data, rows, permute)
    keep = []
    loss_of(spec["loss"], net(x, keep), y).backward()
    return [float(h.grad.norm()) for h in keep]


def c_grad_norms(prog, weights, spec, work, data, rows, o, threads):
    """The training program's ||dL/dh_t|| (--grad-norms) on one batch: a data
    set of exactly that batch, one epoch, learning rate 0."""
    d = os.path.join(work, "probe")
    os.makedirs(d, exist_ok=True)
    if spec["task"] == "pixels":
        imgs, labs = data
        tasks.write_idx(os.path.join(d, "x.idx"), imgs[rows])
        tasks.write_idx(os.path.join(d, "y.idx"), labs[rows])
        dargs = ["--train-data", os.path.join(d, "x.idx"), "--train-labels", os.path.join(d, "y.idx"),
                 "--input", "pixels", "--scale"]
    else:
        x, y = data
        dargs = ["--train-data", tasks.save(d, "x.npy", x[rows]), "--train-labels", tasks.save(d, "y.npy", y[rows])]
    if "permute" in o:
        dargs += ["--permute", o["permute"]]
    path = os.path.join(d, "norms.csv")
    sh([prog] + dargs + ["--weights", weights, "--batch", str(len(rows)), "--epochs", "1", "--no-shuffle",
                         "--optimizer", "sgd", "--lr", "0", "--grad-norms", path, "--quiet"], env=thread_env(threads))
    with open(path) as f:
        return [float(r["grad_norm"]) for r in csv.DictReader(f)]


# ---- results on disk ------------------------------------------------------------------

def no_results():
    return dict(curves={}, tcurves={}, speed={}, epochs={}, norms={}, diverged={}, runs={})


def load_results(out):
    """What write_results wrote under out (empty where nothing was): the
    curves and the rest, keyed by model label, for --only and --speed."""
    def rows(fname):
        path = os.path.join(out, fname)
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return list(csv.DictReader(f))
    res = no_results()
    for fname, key in (("curves.csv", "curves"), ("torch.csv", "tcurves")):
        for r in rows(fname):
            res[key].setdefault(r["model"], []).append((int(r["step"]), float(r["loss"]), float(r["seconds"])))
    for r in rows("speed.csv"):
        res["speed"][r["model"]] = (r["model"], float(r["c_s_per_iter"]), float(r["torch_s_per_iter"]),
                                    float(r["speedup"]), float(r["c_wall_s"]), float(r["torch_wall_s_est"]),
                                    float(r["first_steps_max_rel"]), float(r.get("torch_fused_s_per_iter", "nan")),
                                    float(r.get("speedup_vs_fused", "nan")))
    for r in rows("epochs.csv"):
        res["epochs"].setdefault(r["model"], []).append(
            [r[k] for k in ("model", "epoch", "train_loss", "test_loss", "test_acc", "step")])
    for r in rows("grad_norms.csv"):
        init, trained = res["norms"].setdefault(r["model"], ([], []))
        (init if r["when"] == "init" else trained).append(float(r["grad_norm"]))
    for r in rows("runs.csv"):
        res["runs"][r["model"]] = (int(r["steps"]), int(r["threads"]), r["command"])
    report = os.path.join(out, "report.md")
    if os.path.exists(report):
        with open(report) as f:
            text = f.read()
        for line in text.splitlines():
            if " stopped: `" in line:
                label, _, msg = line.partition(" stopped: `")
                res["diverged"][label] = msg.rstrip("`")
    return res


# ---- one experiment ---------------------------------------------------------------

def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores, %s, PyTorch %s" % (cpu, os.cpu_count() or 0, platform.platform(), torch.__version__)


def smoke(name, spec, cellc, out, threads):
    """20 steps of every run at a small T: the generated program against PyTorch."""
    T, B = spec["smoke_T"], spec["batch"]
    n = SMOKE_STEPS * B
    work = os.path.join(out, name)
    tr, _, data = make_data(spec, T, n, work, smoke=True)
    tset = te = None
    if spec.get("tol"):         # the zero-one error of --tol at 5x the tolerance:
        spec = dict(spec, tol=5 * spec["tol"])     # a 20-step model is far off
    if spec.get("tol") or spec.get("seq_acc"):     # the zero-one error on a test set
        tset = getattr(tasks, spec["task"])(500, T, 3000 + T)
        te = ["--test-data", tasks.save(work, "TX.npy", tset[0]), "--test-labels", tasks.save(work, "TY.npy", tset[1]),
              ] + zero_one_args(spec)
    mdir = os.path.join(HERE, spec.get("models_dir", name))
    ok = True
    for label, model, opts in spec["runs"]:
        test = "experiments/%s/%s" % (name, label.replace(" ", "_"))
        try:
            cell = os.path.join(mdir, model + ".cell")
            prog, weights = build(cellc, cell, spec["loss"], work)
            o = opt_args(opts)
            if "final-low" in o:        # the low-momentum phase: the last 5 of the 20 steps
                opts = opts.replace("--final-low %s" % o["final-low"], "--final-low 5")
                o["final-low"] = "5"
            args = tr + ["--batch", str(B), "--epochs", "1", "--seed", "1"] + opts.split()
            elog = os.path.join(work, label.replace(" ", "_") + "_epochs.csv")
            if te:
                args += te + ["--epoch-log", elog]
            rows, _, _ = run_c(prog, args, threads, os.path.join(work, label.replace(" ", "_") + ".csv"))
            res = run_torch(spec, cell, weights, data, o, n, SMOKE_STEPS, SMOKE_STEPS, threads, test=tset,
                            dtype=torch.float64)
            want = res[0]
            nudged, _ = run_torch(spec, cell, weights, data, o, n, SMOKE_STEPS, SMOKE_STEPS, threads,
                                  dtype=torch.float64, nudge=2.0 ** -24)
            compared = next((k for k, (a, b) in enumerate(zip(nudged, want)) if abs(a - b) > CHAOS * abs(b)),
                            SMOKE_STEPS)
            if len(rows) != SMOKE_STEPS:
                raise RuntimeError("the program logged %d steps, not %d" % (len(rows), SMOKE_STEPS))
            worst, at = 0.0, 0
            for (step, got, _), ref in zip(rows[:compared], want):
                r = abs(got - ref) / abs(ref)
                if not r <= worst:
                    worst, at = r, step
            detail = "T %d: loss %.6g -> %.6g, worst rel %.2g at step %d of %d%s" % (
                T, want[0], want[-1], worst, at, compared,
                " (then weights one float32 rounding apart part by %.1g: CHAOS)" % (
                    abs(nudged[compared] - want[compared]) / abs(want[compared])) if compared < SMOKE_STEPS else "")
            if spec.get("grad_norms"):
                rows0 = list(range(B))
                gc = c_grad_norms(prog, weights, spec, work, data, rows0, o, threads)
                gt = torch_grad_norms(spec, cell, weights, data, rows0, int(o["permute"]) if "permute" in o else None,
                                      threads)
                gerr = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(gc, gt)) if len(gc) == len(gt) else 1.0
                detail += ", ||dL/dh_t|| rel %.2g over %d steps" % (gerr, len(gt))
                if not gerr <= SMOKE_RTOL:
                    worst = max(worst, 1.0)
            if te:                      # the same share of the 500 test cases right
                with open(elog) as f:
                    acc = float(list(csv.DictReader(f))[-1]["test_acc"])
                detail += ", test %s: %.3f (PyTorch %.3f)" % (
                    "within %g" % spec["tol"] if spec.get("tol") else "sequences right", acc, res[2])
                if abs(acc - res[2]) > 1.5 / 500:
                    worst = max(worst, 1.0)
            passed = worst <= SMOKE_RTOL
            if worst > SMOKE_RTOL and not spec.get("grad_norms"):
                detail += " (> %g)" % SMOKE_RTOL
        except (RuntimeError, ValueError, KeyError, OSError) as e:
            passed, detail = False, str(e).strip().splitlines()[0][:300]
        ok &= passed
        log("%s %s %s" % ("PASS" if passed else "FAIL", test, detail))
    return ok


def smoke_one(args):
    name, cellc, out, threads = args
    return smoke(name, EXPERIMENTS[name], cellc, out, threads)


def smoke_all(names, cellc, out, threads, jobs):
    """smoke() of every experiment, `jobs` of them at once: each experiment
    has its own work directory and prints whole lines, so running them in
    separate processes changes nothing but the order of the lines."""
    work = [(n, cellc, out, threads) for n in names]
    if jobs == 1 or len(names) == 1:
        return all([smoke_one(w) for w in work])
    import multiprocessing
    # fork: the workers inherit the imported modules; the parent has run no
    # PyTorch operator yet, so no thread pool is copied half-way
    with multiprocessing.get_context("fork").Pool(min(jobs, len(names))) as pool:
        return all(pool.imap_unordered(smoke_one, work, chunksize=1))


def run_setup(name, spec, steps):
    """The data and the per-model arguments of a full-size run."""
    T, B = spec["T"], spec["batch"]
    work = os.path.join(ROOT, "build", "experiments", name)
    ntrain = min(steps * B, 60000) if spec["task"] == "pixels" else steps * B    # one epoch
    log("%s: data (T %d, %d training samples)" % (name, T, ntrain))
    tr, te, data = make_data(spec, T, ntrain, work, smoke=False)
    return work, tr, te, data


def measure_torch(name, spec, label, cell, weights, data, o, nsamples, torch_steps, steps, threads):
    """PyTorch's losses over the first torch_steps steps and its seconds per
    iteration (the first step left out), as the papers' loop and, where the
    model is a plain LSTM or tanh RNN, through nn.LSTM / nn.RNN."""
    log("%s/%s: PyTorch, %d steps" % (name, label, torch_steps))
    tl, ts = run_torch(spec, cell, weights, data, o, nsamples, torch_steps, steps, threads)
    t_it = float(np.mean(ts[1:] if len(ts) > 1 else ts))
    fl, f_it = None, float("nan")
    if torch_cells.fusable(torch_cells.load_cell(cell)[0]):
        log("%s/%s: PyTorch nn.LSTM/nn.RNN, %d steps" % (name, label, torch_steps))
        fl, fs = run_torch(spec, cell, weights, data, o, nsamples, torch_steps, steps, threads, fused=True)
        f_it = float(np.mean(fs[1:] if len(fs) > 1 else fs))
    return tl, ts, t_it, fl, f_it


def agreement(rows, tl, fl):
    """The largest relative distance of PyTorch's losses from the program's."""
    agree = max(abs(a[1] - b) / abs(b) for a, b in zip(rows, tl))
    if fl is not None:
        agree = max(agree, max(abs(a[1] - b) / abs(b) for a, b in zip(rows, fl)))
    return agree


def model_setup(name, spec, cellc, work, model, opts, nsamples, steps):
    """One model of a run: its .cell file, the built training program and its
    initial weights, the options as a dict, and the --epochs that hold steps
    batches of the nsamples training samples."""
    cell = os.path.join(HERE, spec.get("models_dir", name), model + ".cell")
    prog, weights = build(cellc, cell, spec["loss"], work)
    epochs = max(1, -(-steps * spec["batch"] // nsamples))
    return cell, prog, weights, opt_args(opts), epochs


def full(name, spec, cellc, out, threads, steps, torch_steps, command, only, resume=False):
    B = spec["batch"]
    steps = steps or spec["steps"]
    torch_steps = min(torch_steps or spec["torch_steps"], steps)
    os.makedirs(out, exist_ok=True)
    res = no_results()
    work, tr, te, data = run_setup(name, spec, steps)
    nsamples = len(data[0])
    for label, model, opts in spec["runs"]:
        if only and label not in only:
            continue
        cell, prog, weights, o, epochs = model_setup(name, spec, cellc, work, model, opts, nsamples, steps)
        tag = label.replace(" ", "_")
        ck = os.path.join(work, tag + ".ckpt")
        elog = os.path.join(work, tag + "_epochs.csv")
        args = tr + te + ["--batch", str(B), "--epochs", str(epochs), "--max-steps", str(steps), "--seed", "1",
                          "--checkpoint", ck, "--epoch-log", elog] + opts.split()
        args += zero_one_args(spec)
        resumed = resume and os.path.exists(ck)
        if resumed:
            args += ["--resume", ck]
            log("%s/%s: generated C, %d steps, resumed from %s" % (name, label, steps, ck))
        else:
            log("%s/%s: generated C, %d steps" % (name, label, steps))
            if os.path.exists(elog):
                os.remove(elog)
        rows, stdout, wall = run_c(prog, args, threads, os.path.join(work, tag + ".csv"), diverge_ok=True,
                                   resume=resumed)
        res["curves"][label] = rows
        if stdout.startswith("DIVERGED"):
            log("%s/%s: %s" % (name, label, stdout))
            res["diverged"][label] = stdout[len("DIVERGED "):]
        res["epochs"][label] = []
        if os.path.exists(elog):
            with open(elog) as f:
                for r in csv.DictReader(f):
                    res["epochs"][label].append([label] + [r[k] for k in ("epoch", "train_loss", "test_loss",
                                                                          "test_acc", "step")])
                    if resumed:
                        wall = float(r["seconds"])    # the program's count, the interrupted run's included
        tl, ts, t_it, fl, f_it = measure_torch(name, spec, label, cell, weights, data, o, nsamples, torch_steps,
                                               steps, threads)
        res["tcurves"][label] = list(zip(range(1, len(tl) + 1), tl, np.cumsum(ts)))
        c_it = rows[-1][2] / len(rows)
        res["speed"][label] = (label, c_it, t_it, t_it / c_it, wall, t_it * steps, agreement(rows, tl, fl), f_it,
                               f_it / c_it)
        res["runs"][label] = (steps, threads, command)
        if spec.get("grad_norms"):
            rows0 = list(range(B))
            res["norms"][label] = (c_grad_norms(prog, weights, spec, work, data, rows0, o, threads),
                                   c_grad_norms(prog, ck, spec, work, data, rows0, o, threads))
    # the other models' results as they are on disk now (another process may
    # have written some while this one trained), this run's models replaced
    merged = load_results(out)
    for label in res["curves"]:
        for key, by_label in res.items():
            merged[key].pop(label, None)
            if label in by_label:
                merged[key][label] = by_label[label]
    write_results(name, spec, out, merged, None)


def speed_only(name, spec, cellc, out, threads, torch_steps, command):
    """--speed: both sides' seconds per iteration measured again for the
    models under out, over torch_steps steps each, in this run."""
    res = load_results(out)
    if not res["curves"]:
        raise RuntimeError("%s: no results to measure again (run the experiment first)" % out)
    torch_steps = torch_steps or spec["torch_steps"]
    for label, model, opts in spec["runs"]:
        if label not in res["curves"]:
            continue
        # the first n steps of the full run: its schedule (cm/nag's momentum
        # depends on where the run ends), its batches (its training set, whose
        # size follows its steps)
        full_steps = res["runs"][label][0]
        work, tr, te, data = run_setup(name, spec, full_steps)
        nsamples = len(data[0])
        cell, prog, weights, o, epochs = model_setup(name, spec, cellc, work, model, opts, nsamples,
                                                     full_steps)
        n = max(2, min(torch_steps, len(res["curves"][label])))
        log("%s/%s: generated C, %d steps" % (name, label, n))
        if "final-low" in o:
            # cm/nag's low-momentum phase is the last updates of the full
            # run, past the n measured here: without it the first n steps
            # have the full run's schedule
            n = min(n, full_steps - int(o["final-low"]))
            opts = opts.replace("--final-low %s" % o["final-low"], "")
        args = tr + ["--batch", str(spec["batch"]), "--epochs", str(epochs), "--max-steps", str(n),
                     "--seed", "1"] + opts.split()
        rows, _, _ = run_c(prog, args, threads, os.path.join(work, label.replace(" ", "_") + "_speed.csv"))
        c_it = (rows[-1][2] - rows[0][2]) / (len(rows) - 1)
        tl, ts, t_it, fl, f_it = measure_torch(name, spec, label, cell, weights, data, o, nsamples, n,
                                               full_steps, threads)
        res["tcurves"][label] = list(zip(range(1, len(tl) + 1), tl, np.cumsum(ts)))
        _, _, _, _, wall, _, _, _, _ = res["speed"][label]
        res["speed"][label] = (label, c_it, t_it, t_it / c_it, wall, t_it * full_steps,
                               agreement(res["curves"][label], tl, fl), f_it, f_it / c_it)
    write_results(name, spec, out, res, (command, threads, torch_steps))


def write_results(name, spec, out, res, speed_run):
    """Everything under out, from res (load_results' form); speed_run is
    (command, threads, steps) where --speed measured the speed columns."""
    order = [label for label, _, _ in spec["runs"] if label in res["curves"]]
    curves = res["curves"]
    for fname, cur in (("curves.csv", curves), ("torch.csv", res["tcurves"])):
        with open(os.path.join(out, fname), "w") as f:
            f.write("model,step,loss,seconds\n")
            for label in order:
                for s, l, t in cur.get(label, []):
                    f.write("%s,%d,%.7g,%.3f\n" % (label, s, l, t))
    with open(os.path.join(out, "speed.csv"), "w") as f:
        f.write("model,c_s_per_iter,torch_s_per_iter,speedup,c_wall_s,torch_wall_s_est,first_steps_max_rel,"
                "torch_fused_s_per_iter,speedup_vs_fused\n")
        for label in order:
            f.write("%s,%.4f,%.4f,%.2f,%.1f,%.1f,%.2g,%.4f,%.2f\n" % res["speed"][label])
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")        # a command's "--only a,b" quoted
        w.writerow(["model", "steps", "threads", "command"])
        for label in order:
            w.writerow((label,) + res["runs"][label])
    epochs_rows = [r for label in order for r in res["epochs"].get(label, [])]
    if epochs_rows:
        with open(os.path.join(out, "epochs.csv"), "w") as f:
            f.write("model,epoch,train_loss,test_loss,test_acc,step\n")
            for r in epochs_rows:
                f.write(",".join(r) + "\n")
    smooth = {label: max(1, len(curves[label]) // 100) for label in order}
    series = []
    for label in order:
        xs = [s for s, _, _ in curves[label]]
        ys = [l for _, l, _ in curves[label]]
        k = smooth[label]
        series.append((label, xs[k - 1:], [sum(ys[i - k + 1:i + 1]) / k for i in range(k - 1, len(ys))]))
    ks = sorted(set(smooth.values()))
    svg.plot(os.path.join(out, "loss.svg"), series, "%s: training loss (generated C; mean of %s steps)" % (
        name, "/".join(str(k) for k in ks)), "iteration", "loss", logy=True)
    norms = [(label, res["norms"][label]) for label in order if label in res["norms"]]
    if norms:
        ser = []
        for label, (init, trained) in norms:
            ser.append((label + " (init)", list(range(1, len(init) + 1)), init))
            ser.append((label + " (trained)", list(range(1, len(trained) + 1)), trained))
        svg.plot(os.path.join(out, "grad_norms.svg"), ser, "%s: ||dL/dh_t|| over one batch" % name, "t",
                 "||dL/dh_t||", logy=True)
        with open(os.path.join(out, "grad_norms.csv"), "w") as f:
            f.write("model,when,t,grad_norm\n")
            for label, (init, trained) in norms:
                for when, v in (("init", init), ("trained", trained)):
                    for t, g in enumerate(v):
                        f.write("%s,%s,%d,%.6g\n" % (label, when, t + 1, g))
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("# %s\n\n%s.\n\n" % (name, spec["about"]))
        cmds = {}       # one line per command, in the order of its first curve
        for label in order:
            steps, thr, cmd = res["runs"][label]
            cmds.setdefault((cmd, thr, steps), []).append(label)
        for (cmd, thr, steps), labels in cmds.items():
            f.write("Curves of %s: `%s` (%d steps, %d thread%s)  \n" % (
                ", ".join(labels), cmd, steps, thr, "s" if thr > 1 else ""))
        if speed_run:
            f.write("Speed columns: `%s` (%d steps of each side, %d thread%s)  \n" % (
                speed_run[0], speed_run[2], speed_run[1], "s" if speed_run[1] > 1 else ""))
        f.write("Machine: %s; the same thread count on both sides.\n\n" % machine())
        f.write("| model | steps | first loss | last loss (mean of last 1%) | C s/iter | PyTorch s/iter | speed-up | "
                "C wall s | PyTorch wall s (est.) | PyTorch nn.LSTM/RNN s/iter | speed-up | "
                "first steps, max rel diff |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for label in order:
            (_, c_it, t_it, ratio, wall, twall, agree, f_it, fratio) = res["speed"][label]
            rows = curves[label]
            k = smooth[label]
            last = sum(l for _, l, _ in rows[-k:]) / len(rows[-k:])
            fused = ("%.4f | %.1f×" % (f_it, fratio)) if f_it == f_it else "– | –"
            f.write("| %s | %d | %.4g | %.4g | %.4f | %.4f | %.1f× | %.0f | %.0f | %s | %.1g |\n" % (
                label, len(rows), rows[0][1], last, c_it, t_it, ratio, wall, twall, fused, agree))
        for label in order:
            if label in res["diverged"]:
                f.write("\n%s stopped: `%s`\n" % (label, res["diverged"][label]))
        if epochs_rows:
            f.write("\n| model | epoch | train loss | test loss | test acc | step |\n|---|---|---|---|---|---|\n")
            for r in epochs_rows:
                f.write("| " + " | ".join(r) + " |\n")
        f.write("\n![loss](loss.svg)\n")
        if norms:
            f.write("\n![gradient norms](grad_norms.svg)\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", choices=sorted(EXPERIMENTS) + ["all"])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--torch-steps", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1,
                    help="with --smoke: experiments checked at once, each in its own process")
    ap.add_argument("--out")
    ap.add_argument("--cellc", default=os.path.join(ROOT, "build", "cellc"))
    ap.add_argument("--only", help="LABEL,...: these models only, the others' results kept")
    ap.add_argument("--speed", action="store_true", help="measure the speed columns again, no training")
    ap.add_argument("--resume", action="store_true",
                    help="continue each full run from its last epoch's checkpoint where there is one")
    a = ap.parse_args()
    only = [l.strip() for l in a.only.split(",")] if a.only else None
    if only:
        if a.experiment == "all" or a.smoke or a.speed:
            ap.error("--only names models of one experiment's full run")
        unknown = [l for l in only if l not in [r[0] for r in EXPERIMENTS[a.experiment]["runs"]]]
        if unknown:
            ap.error("--only: %s: no such model in %s (%s)" % (", ".join(unknown), a.experiment, ", ".join(
                r[0] for r in EXPERIMENTS[a.experiment]["runs"])))
    if a.resume and (a.smoke or a.speed):
        ap.error("--resume continues full runs (not --smoke or --speed)")
    # the command as a shell would take it back (a label with a space quoted)
    command = "python3 experiments/run.py " + " ".join(shlex.quote(w) for w in sys.argv[1:])
    # `all --smoke` leaves out adding-short: the same models as adding
    names = ([n for n in sorted(EXPERIMENTS) if not (a.smoke and n == "adding-short")]
             if a.experiment == "all" else [a.experiment])
    if a.jobs < 1:
        ap.error("--jobs wants a count of at least 1")
    if a.jobs > 1 and not a.smoke:
        ap.error("--jobs runs smoke checks side by side (--smoke); a full run measures speed, one at a time")
    if a.smoke:
        return 0 if smoke_all(names, a.cellc, a.out or os.path.join(ROOT, "build", "experiments", "smoke"),
                              a.threads, a.jobs) else 1
    ok = True
    for name in names:
        spec = EXPERIMENTS[name]
        if a.speed:
            speed_only(name, spec, a.cellc, a.out or os.path.join(HERE, "results", name), a.threads,
                       a.torch_steps, command)
        else:
            full(name, spec, a.cellc, a.out or os.path.join(HERE, "results", name), a.threads, a.steps,
                 a.torch_steps, command, only, a.resume)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
