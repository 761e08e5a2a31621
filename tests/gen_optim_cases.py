"""gen_optim_cases.py OUTDIR: fixtures of the `optim` test group, the
optimisers of runtime/rt_optim.c (docs/training.md, "Optimisers").

Each case OUTDIR/CASE/ runs an optimiser for STEPS updates on two parameter
tensors (two parameter groups with their own learning rates, as PyTorch's
param_groups) of a noisy quadratic: the gradient of parameter k at step t is
    g = a_k * x + noise_k[t]
where x is the parameter buffer (for NAG: the look-ahead point p + mu v), so
the state of the optimiser feeds back into its gradients.  Optionally the
gradients are clipped by their global L2 norm before the update.

  config.txt   "key value" lines: kind, lr0, lr1, steps, clip and the rt_optim
               fields (momentum, dampening, nesterov, weight_decay, alpha,
               centered, beta1, beta2, amsgrad, eps, lr_decay,
               initial_accumulator_value, schedule, mu_max, final_mu,
               final_low_steps, total_steps)
  data.bin     tensor file (tests/tensorfile.py): p0 p1 (initial parameters),
               a0 a1, noise0 noise1 [steps, n], and the oracle's trajectory
               traj0 traj1 [steps, n] (parameters after each update), norm
               [steps] (the norm clipping returned; clipped cases), mu [steps]
               (CM/NAG: the momentum of each update), look0 look1 [steps, n]
               (NAG: the look-ahead point after each update)

OUTDIR/onnx/CASE/ (model.onnx, test_data_set_N/input_K.pb, output_K.pb):
the ONNX ai.onnx.preview.training operators Momentum (standard and
nesterov), Adam and Adagrad at update counts T > 0 (onnx's own node tests all
run at T = 0, where Momentum's beta and Adam's bias correction do not act),
several tensors per node, every attribute, R in float64; expected outputs
from the reference functions of onnx's own test cases (apply_momentum,
apply_nesterov, apply_adam, apply_adagrad), run through `cellc verify`.

OUTDIR/onnx_bad/CASE/model.onnx and OUTDIR/onnx_bad/cases.tsv (name, model,
strings the error must contain): malformed uses of those operators, which
`build-san/cellc compile` must refuse with exit 2 and a located message.

Oracles: PyTorch 1.13's torch.optim (SGD, RMSprop, Adam, Adagrad with
foreach=False) and torch.nn.utils.clip_grad_norm_, float32; classical
momentum and NAG from the formulas of Sutskever et al. (2013) written out
here in float32 numpy with explicit p and v (no reparametrisation), the
gradient evaluated at p + mu v.  Fixed seeds.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

SHAPES = [(5, 3), (7,)]

# name: (kind, steps, lr0, lr1, clip, options)
CASES = {
    "sgd_plain": ("sgd", 25, 0.1, 0.05, 0, {}),
    "sgd_momentum_dampening_wd": ("sgd", 25, 0.05, 0.1, 0, dict(momentum=0.9, dampening=0.1, weight_decay=0.01)),
    "sgd_nesterov": ("sgd", 30, 0.05, 0.02, 0, dict(momentum=0.9, nesterov=1, weight_decay=0.001)),
    "sgd_nesterov_clip": ("sgd", 30, 0.05, 0.02, 0.5, dict(momentum=0.9, nesterov=1)),
    "rmsprop": ("rmsprop", 25, 0.01, 0.02, 0, {}),
    "rmsprop_momentum_centered_wd": ("rmsprop", 25, 0.01, 0.005, 0,
                                     dict(alpha=0.9, momentum=0.5, centered=1, weight_decay=0.01, eps=1e-6)),
    "rmsprop_clip": ("rmsprop", 25, 0.01, 0.01, 1.0, dict(momentum=0.9)),
    "adam": ("adam", 25, 0.01, 0.03, 0, {}),
    "adam_wd_amsgrad": ("adam", 30, 0.02, 0.01, 0,
                        dict(beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.01, amsgrad=1)),
    "adam_clip": ("adam", 25, 0.01, 0.01, 0.3, {}),
    "adagrad": ("adagrad", 25, 0.1, 0.05, 0, {}),
    "adagrad_decay_init_wd": ("adagrad", 25, 0.1, 0.2, 0,
                              dict(lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.001, eps=1e-8)),
    "cm_constant": ("cm", 30, 0.05, 0.02, 0, dict(schedule=0, momentum=0.9)),
    "nag_constant": ("nag", 30, 0.05, 0.02, 0, dict(schedule=0, momentum=0.9, weight_decay=0.001)),
    "nag_constant_clip": ("nag", 30, 0.05, 0.02, 0.8, dict(schedule=0, momentum=0.95)),
    # the schedule steps at t = 250, 500, ...: mu 0.5, 0.75, 0.833, 0.875, 0.9,
    # 0.917 (t >= 1250) capped at mu_max, then the final phase drops it to 0.9
    "cm_schedule_final": ("cm", 1400, 0.01, 0.005, 0,
                          dict(schedule=1, mu_max=0.995, final_mu=0.9, final_low_steps=100, total_steps=1400)),
    "nag_schedule_final": ("nag", 1400, 0.01, 0.005, 0,
                           dict(schedule=1, mu_max=0.995, final_mu=0.9, final_low_steps=100, total_steps=1400,
                                weight_decay=0.0001)),
    "nag_schedule_cap": ("nag", 800, 0.01, 0.02, 2.0, dict(schedule=1, mu_max=0.8)),
}

DEFAULTS = dict(momentum=0.0, dampening=0.0, nesterov=0, weight_decay=0.0, alpha=0.99, centered=0,
                beta1=0.9, beta2=0.999, amsgrad=0, eps=1e-8, lr_decay=0.0, initial_accumulator_value=0.0,
                schedule=1, mu_max=0.99, final_mu=0.9, final_low_steps=0, total_steps=0)


def torch_optimizer(kind, params, lrs, o):
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, lrs)]
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=lrs[0], momentum=o["momentum"], dampening=o["dampening"],
                               nesterov=bool(o["nesterov"]), weight_decay=o["weight_decay"], foreach=False)
    if kind == "rmsprop":
        return torch.optim.RMSprop(groups, lr=lrs[0], alpha=o["alpha"], eps=o["eps"], momentum=o["momentum"],
                                   centered=bool(o["centered"]), weight_decay=o["weight_decay"], foreach=False)
    if kind == "adam":
        return torch.optim.Adam(groups, lr=lrs[0], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                                weight_decay=o["weight_decay"], amsgrad=bool(o["amsgrad"]), foreach=False)
    if kind == "adagrad":
        return torch.optim.Adagrad(groups, lr=lrs[0], lr_decay=o["lr_decay"], weight_decay=o["weight_decay"],
                                   initial_accumulator_value=o["initial_accumulator_value"], eps=o["eps"],
                                   foreach=False)
    raise ValueError(kind)


def run_torch(kind, steps, lrs, clip, o, p0, a, noise):
    params = [torch.nn.Parameter(torch.from_numpy(p.copy())) for p in p0]
    opt = torch_optimizer(kind, params, lrs, o)
    traj = [np.zeros((steps,) + p.shape, np.float32) for p in p0]
    norms = np.zeros(steps, np.float32)
    for t in range(steps):
        opt.zero_grad()
        with torch.no_grad():
            for k, p in enumerate(params):
                p.grad = torch.from_numpy(a[k]) * p.detach() + torch.from_numpy(noise[k][t])
        if clip:
            norms[t] = float(torch.nn.utils.clip_grad_norm_(params, clip))
        opt.step()
        for k, p in enumerate(params):
            traj[k][t] = p.detach().numpy()
    return traj, norms, None, None


def paper_mu(o, step):
    """Sutskever et al.'s momentum for update `step` (1-based): t = step - 1."""
    if o["schedule"]:
        t = step - 1
        mu = min(1.0 - 2.0 ** (-1.0 - math.log2(math.floor(t / 250) + 1)), o["mu_max"])
    else:
        mu = o["momentum"]
    if o["final_low_steps"] > 0 and step > o["total_steps"] - o["final_low_steps"]:
        mu = min(mu, o["final_mu"])
    return mu


def clip_numpy(grads, max_norm):
    norm = np.float32(math.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grads)))
    coef = np.float32(max_norm) / (norm + np.float32(1e-6))
    if coef < 1:
        grads = [g * coef for g in grads]
    return grads, norm


def run_paper(kind, steps, lrs, clip, o, p0, a, noise):
    """Classical momentum / NAG exactly as the paper writes them, float32."""
    f32 = np.float32
    p = [x.copy() for x in p0]
    v = [np.zeros_like(x) for x in p0]
    wd = f32(o["weight_decay"])
    traj = [np.zeros((steps,) + x.shape, np.float32) for x in p0]
    look = [np.zeros((steps,) + x.shape, np.float32) for x in p0]
    norms = np.zeros(steps, np.float32)
    mus = np.zeros(steps, np.float32)
    for t in range(steps):
        mu = f32(paper_mu(o, t + 1))
        mus[t] = mu
        # the point whose gradient the update uses
        at = [x + mu * y for x, y in zip(p, v)] if kind == "nag" else p
        grads = [a[k] * at[k] + noise[k][t] for k in range(len(p))]
        if clip:
            grads, norms[t] = clip_numpy(grads, clip)
        for k in range(len(p)):
            g = grads[k] + wd * at[k]
            v[k] = mu * v[k] - f32(lrs[k]) * g
            p[k] = p[k] + v[k]
            traj[k][t] = p[k]
        mu_next = f32(paper_mu(o, t + 2))
        for k in range(len(p)):
            look[k][t] = p[k] + mu_next * v[k]
    return traj, norms, mus, (look if kind == "nag" else None)


def check_nag_oracle():
    """The oracle's NAG with a constant mu and no clipping is PyTorch's
    SGD(nesterov=True) on the look-ahead point (buf = -v / lr): the two
    independent formulations must agree before either is used."""
    o = dict(DEFAULTS, schedule=0, momentum=0.9, weight_decay=0.001)
    rng = np.random.RandomState(7)
    p0 = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
    a = [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in SHAPES]
    noise = [(0.5 * rng.standard_normal((40,) + s)).astype(np.float32) for s in SHAPES]
    _, _, _, look = run_paper("nag", 40, [0.05, 0.02], 0, o, p0, a, noise)
    ref, _, _, _ = run_torch("sgd", 40, [0.05, 0.02], 0, dict(o, nesterov=1), p0, a, noise)
    for x, y in zip(look, ref):
        err = float(np.max(np.abs(x - y) / (np.abs(y) + 1e-3)))
        if err > 1e-4:
            sys.exit("gen_optim_cases: the NAG oracle disagrees with torch SGD(nesterov) (rel %.3g)" % err)
    print("NAG oracle == torch.optim.SGD(nesterov=True) on the look-ahead point: ok")


# ---- ONNX training operators --------------------------------------------------

# name: (op, attributes, shapes of the optimised tensors, update counts T, R dtype)
ONNX_CASES = {
    "momentum_T": ("Momentum", dict(alpha=0.9, beta=0.1, mode="standard", norm_coefficient=0.01),
                   [(3, 4)], [0, 1, 7], np.float32),
    "nesterov_momentum_T": ("Momentum", dict(alpha=0.95, beta=0.5, mode="nesterov", norm_coefficient=0.001),
                            [(3, 4)], [0, 2, 30], np.float32),
    "momentum_multiple_T": ("Momentum", dict(alpha=0.8, beta=0.7, mode="standard", norm_coefficient=0.0),
                            [(2, 3), (4,), ()], [0, 3], np.float32),
    "adam_T": ("Adam", dict(alpha=0.9, beta=0.999, epsilon=1e-7, norm_coefficient=0.001,
                            norm_coefficient_post=0.01), [(3, 4)], [0, 1, 10], np.float32),
    "adam_multiple_T": ("Adam", dict(alpha=0.95, beta=0.85, epsilon=1e-2, norm_coefficient=0.001),
                        [(1,), (2,)], [0, 2], np.float32),
    "adam_defaults_T": ("Adam", {}, [(5,)], [0, 4], np.float32),
    "adagrad_T": ("Adagrad", dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.001),
                  [(3, 4)], [0, 4, 25], np.float32),
    "adagrad_multiple_R_double": ("Adagrad", dict(decay_factor=0.5), [(2, 2), (3,)], [0, 6], np.float64),
}


def onnx_reference(op, attrs, r, t, xs, gs, states):
    """Expected outputs by onnx's own reference functions (the ones its node
    tests use), with the attribute defaults of the specification."""
    from onnx.backend.test.case.node.adagrad import apply_adagrad
    from onnx.backend.test.case.node.adam import apply_adam
    from onnx.backend.test.case.node.momentum import apply_momentum, apply_nesterov
    outs = []
    for j, (x, g) in enumerate(zip(xs, gs)):
        if op == "Momentum":
            f = apply_nesterov if attrs["mode"] == "nesterov" else apply_momentum
            outs.append(f(r, t, x, g, states[0][j], attrs["norm_coefficient"], attrs["alpha"], attrs["beta"]))
        elif op == "Adam":
            outs.append(apply_adam(r, t, x, g, states[0][j], states[1][j], attrs.get("norm_coefficient", 0.0),
                                   attrs.get("norm_coefficient_post", 0.0), attrs.get("alpha", 0.9),
                                   attrs.get("beta", 0.999), attrs.get("epsilon", 1e-6)))
        else:
            outs.append(apply_adagrad(r, t, x, g, states[0][j], attrs.get("norm_coefficient", 0.0),
                                      attrs.get("epsilon", 1e-6), attrs.get("decay_factor", 0.0)))
    # outputs: every new X, then every new first state, then every new second state
    return [np.asarray(o[k]).astype(np.float32) for k in range(len(outs[0])) for o in outs]


def write_onnx_cases(out):
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    for ci, (name, (op, attrs, shapes, steps, rdt)) in enumerate(sorted(ONNX_CASES.items())):
        rng = np.random.RandomState(500 + ci)
        nt, nstate = len(shapes), 2 if op == "Adam" else 1
        sn = ["V", "H"] if op == "Adam" else ["V"] if op == "Momentum" else ["H"]
        ins = ["R", "T"] + ["X%d" % j for j in range(nt)] + ["G%d" % j for j in range(nt)] + \
            ["%s%d" % (s, j) for s in sn for j in range(nt)]
        outs = ["X%d_new" % j for j in range(nt)] + ["%s%d_new" % (s, j) for s in sn for j in range(nt)]
        shape_of = lambda nm: [] if nm in ("R", "T") else list(shapes[int(nm.rstrip("_new")[1:])])
        node = helper.make_node(op, ins, outs, domain="ai.onnx.preview.training", **attrs)
        vi = lambda nm, ty: helper.make_tensor_value_info(nm, ty, shape_of(nm))
        graph = helper.make_graph(
            [node], name, [vi("R", TensorProto.DOUBLE if rdt == np.float64 else TensorProto.FLOAT),
                           vi("T", TensorProto.INT64)] + [vi(nm, TensorProto.FLOAT) for nm in ins[2:]],
            [vi(nm, TensorProto.FLOAT) for nm in outs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.preview.training", 1)],
                                  producer_name="gen_optim_cases.py")
        d = os.path.join(out, "onnx", name)
        os.makedirs(d, exist_ok=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for k, t in enumerate(steps):
            r = np.array(rng.uniform(0.01, 0.2), dtype=rdt)
            tt = np.array(t, dtype=np.int64)
            xs = [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]
            gs = [rng.uniform(-3, 3, s).astype(np.float32) for s in shapes]
            states = [[rng.uniform(0.05 if (op != "Momentum" and (i == 1 or op == "Adagrad")) else -1, 1, s)
                       .astype(np.float32) for s in shapes] for i in range(nstate)]
            expected = onnx_reference(op, attrs, r, tt, xs, gs, states)
            ds = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(ds, exist_ok=True)
            values = [r, tt] + xs + gs + [x for st in states for x in st]
            for j, (nm, a) in enumerate(zip(ins, values)):
                with open(os.path.join(ds, "input_%d.pb" % j), "wb") as f:
                    f.write(numpy_helper.from_array(np.asarray(a), nm).SerializeToString())
            for j, (nm, a) in enumerate(zip(outs, expected)):
                with open(os.path.join(ds, "output_%d.pb" % j), "wb") as f:
                    f.write(numpy_helper.from_array(a, nm).SerializeToString())
        print("onnx/%s: %s, %d tensor(s), T = %s" % (name, op, nt, steps))


def write_onnx_bad(out):
    """Refusals: each model must fail to compile with these strings in the error."""
    import onnx
    from onnx import helper, TensorProto
    d0 = os.path.join(out, "onnx_bad")
    rows = []

    def model(name, op, ins, outs, attrs, dtypes=None, shapes=None, domain="ai.onnx.preview.training",
              imports=(("ai.onnx.preview.training", 1),)):
        dtypes = dtypes or {}
        shapes = shapes or {}

        def vi(nm):
            ty = dtypes.get(nm, TensorProto.INT64 if nm == "T" else TensorProto.FLOAT)
            return helper.make_tensor_value_info(nm, ty, shapes.get(nm, [] if nm in ("R", "T") else [3]))
        node = helper.make_node(op, ins, outs, name=name + "_node", domain=domain, **attrs)
        g = helper.make_graph([node], name, [vi(nm) for nm in ins], [vi(nm) for nm in outs])
        return helper.make_model(g, opset_imports=[helper.make_opsetid(dm, v) for dm, v in imports])

    mom = dict(alpha=0.9, beta=0.1, mode="standard", norm_coefficient=0.0)
    cases = [
        ("momentum_bad_mode", model("momentum_bad_mode", "Momentum", ["R", "T", "X", "G", "V"], ["Xn", "Vn"],
                                    dict(mom, mode="heavy")), ["heavy", "momentum_bad_mode_node"]),
        ("momentum_missing_alpha", model("momentum_missing_alpha", "Momentum", ["R", "T", "X", "G", "V"],
                                         ["Xn", "Vn"], dict(beta=0.1, mode="standard", norm_coefficient=0.0)),
         ["'alpha' is required"]),
        ("adam_input_count", model("adam_input_count", "Adam", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], {}),
         ["multiple of 4"]),
        ("adagrad_output_count", model("adagrad_output_count", "Adagrad", ["R", "T", "X", "G", "H"], ["Xn"], {}),
         ["outputs"]),
        ("adagrad_gradient_shape", model("adagrad_gradient_shape", "Adagrad", ["R", "T", "X", "G", "H"],
                                         ["Xn", "Hn"], {}, shapes={"G": [4]}), ["gradient", "'G'"]),
        ("adam_double_tensors", model("adam_double_tensors", "Adam", ["R", "T", "X", "G", "V", "H"],
                                      ["Xn", "Vn", "Hn"], {}, dtypes={k: TensorProto.DOUBLE for k in "XGVH"}
                                      | {"Xn": TensorProto.DOUBLE, "Vn": TensorProto.DOUBLE,
                                         "Hn": TensorProto.DOUBLE}), ["f64", "only f32"]),
        ("momentum_T_float", model("momentum_T_float", "Momentum", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], mom,
                                   dtypes={"T": TensorProto.FLOAT}), ["T ('T') must be an int64 scalar"]),
        ("adam_domain_version", model("adam_domain_version", "Adam", ["R", "T", "X", "G", "V", "H"],
                                      ["Xn", "Vn", "Hn"], {}, imports=(("ai.onnx.preview.training", 2),)),
         ["version 1, not version 2"]),
        ("momentum_default_domain", model("momentum_default_domain", "Momentum", ["R", "T", "X", "G", "V"],
                                          ["Xn", "Vn"], mom, domain="", imports=(("", 14),)),
         ["unsupported operator Momentum"]),
        ("adagrad_unknown_attribute", model("adagrad_unknown_attribute", "Adagrad", ["R", "T", "X", "G", "H"],
                                            ["Xn", "Hn"], dict(lr_decay=0.1)), ["lr_decay"]),
    ]
    for name, m, expect in cases:
        d = os.path.join(d0, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        rows.append("\t".join([name, path] + expect))
    with open(os.path.join(d0, "cases.tsv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    print("onnx_bad: %d refusal cases" % len(cases))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_optim_cases.py OUTDIR")
    out = sys.argv[1]
    torch.manual_seed(0)
    check_nag_oracle()
    for ci, (name, (kind, steps, lr0, lr1, clip, opts)) in enumerate(sorted(CASES.items())):
        o = dict(DEFAULTS)
        if kind == "adagrad":
            o["eps"] = 1e-10
        if kind in ("cm", "nag"):
            o["momentum"] = 0.9
        o.update(opts)
        rng = np.random.RandomState(100 + ci)
        p0 = [rng.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
        a = [rng.uniform(0.5, 1.5, s).astype(np.float32) for s in SHAPES]
        noise = [(0.5 * rng.standard_normal((steps,) + s)).astype(np.float32) for s in SHAPES]
        run = run_paper if kind in ("cm", "nag") else run_torch
        traj, norms, mus, look = run(kind, steps, [lr0, lr1], clip, o, p0, a, noise)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.txt"), "w") as f:
            f.write("kind %s\nlr0 %r\nlr1 %r\nsteps %d\nclip %r\n" % (kind, lr0, lr1, steps, float(clip)))
            for k in sorted(o):
                f.write("%s %r\n" % (k, o[k]))
        tensors = []
        for k in range(len(SHAPES)):
            tensors += [("p%d" % k, p0[k]), ("a%d" % k, a[k]), ("noise%d" % k, noise[k]), ("traj%d" % k, traj[k])]
            if look is not None:
                tensors.append(("look%d" % k, look[k]))
        if clip:
            tensors.append(("norm", norms))
        if mus is not None:
            tensors.append(("mu", mus))
        tensorfile.write(os.path.join(d, "data.bin"), tensors)
        final = max(float(np.max(np.abs(t[-1]))) for t in traj)
        print("%s: %s, %d steps, final max |p| %.4g%s" % (name, kind, steps, final,
                                                           ", clip norms %.3g..%.3g" % (norms.min(), norms.max())
                                                           if clip else ""))
    write_onnx_cases(out)
    write_onnx_bad(out)


if __name__ == "__main__":
    main()
