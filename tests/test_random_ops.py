"""test_random_ops.py CELLC WORKDIR: the random operators end to end (group
random_ops).  Their outputs cannot be compared with a reference value by value,
so each model below is compiled (`cellc compile --name m`), built with its
Makefile and run by tests/api/test_random.c, and its outputs are checked for
what the operator's specification fixes:

  shape and dtype       from the attributes (shape, dtype) or the input;
  range                 RandomUniform in [low, high]; Bernoulli 0/1 (exactly 0
                        where p = 0 and 1 where p = 1); Dropout 0 or x / (1 - ratio),
                        the mask true where kept;
  moments               mean and variance (uniform, normal), the count of ones or
                        of dropped elements, each within 5 standard errors for the
                        sample size (a correct generator fails one with
                        probability below 1e-6; the seeds are fixed);
  streams               the C API of docs/deploying.md ("Random numbers"): a new
                        instance draws as any other (run-time seed 0), the streams
                        go on from run to run, m_seed(m, 0) restarts them, m_reset
                        leaves them, another run-time seed changes the nodes
                        without a seed attribute and not those with one; two nodes
                        with the same seed attribute draw the same numbers, two
                        without draw different ones.

Prints `PASS|FAIL random_ops/CASE/CHECK detail` lines.  The expectations come
from the ONNX specification (onnx.defs), not from cellc.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import mapping, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tensorfile  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGMAS = 5
N = 20000
failures = 0


def report(name, ok, detail=""):
    global failures
    failures += not ok
    print("%s random_ops/%s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)


def within(what, got, want, se):
    """'' when |got - want| <= SIGMAS se, else why not."""
    if abs(got - want) <= SIGMAS * se:
        return ""
    return "%s %.6g, expected %.6g +- %d x %.3g; " % (what, got, want, SIGMAS, se)


def uniform_check(low, high):
    def check(y, ins):
        y = y.astype(np.float64).ravel()
        n = y.size
        why = "" if (y.min() >= low and y.max() <= high) else "values outside [%g, %g]; " % (low, high)
        w = high - low
        why += within("mean", y.mean(), (low + high) / 2, w / np.sqrt(12 * n))
        # variance of U(a, b): w^2 / 12, the estimate's standard error sqrt((mu4 - s^4) / n), mu4 = w^4 / 80
        why += within("variance", y.var(), w * w / 12, np.sqrt((w ** 4 / 80 - w ** 4 / 144) / n))
        return why
    return check


def normal_check(mean, scale):
    def check(y, ins):
        y = y.astype(np.float64).ravel()
        n = y.size
        why = within("mean", y.mean(), mean, scale / np.sqrt(n))
        why += within("variance", y.var(), scale * scale, scale * scale * np.sqrt(2.0 / n))
        z = (y - mean) / scale
        p1 = 0.6826894921370859     # P(|z| < 1)
        why += within("share within 1 sd", np.mean(np.abs(z) < 1), p1, np.sqrt(p1 * (1 - p1) / n))
        return why
    return check


def bernoulli_check(y, ins):
    p = ins[0].astype(np.float64).ravel()
    y = y.astype(np.float64).ravel()
    if not np.all((y == 0) | (y == 1)):
        return "values other than 0 and 1"
    if np.any(y[p == 0] != 0) or np.any(y[p == 1] != 1):
        return "a certain outcome (p = 0 or 1) came out otherwise"
    return within("ones", y.sum(), p.sum(), np.sqrt((p * (1 - p)).sum()))


def dropout_check(ratio):
    def check(y, ins):
        x = ins[0].astype(np.float64).ravel()
        y = y.astype(np.float64).ravel()
        scaled = x / (1 - ratio)
        kept = np.abs(y - scaled) <= 1e-6 * np.abs(scaled)
        dropped = y == 0
        if not np.all(kept | dropped):
            return "an element neither 0 nor x / (1 - ratio)"
        return within("dropped", dropped.sum(), x.size * ratio, np.sqrt(x.size * ratio * (1 - ratio)))
    return check


def mask_check(y_name):
    """The mask is true exactly where Y kept X (X below has no zeros)."""
    def check(mask, ins, outs):
        kept = outs[y_name].ravel() != 0
        return "" if np.array_equal(mask.ravel().astype(bool), kept) else "the mask disagrees with the output"
    return check


def vi(name, dt, shape):
    return h.make_tensor_value_info(name, dt, shape)


# case: (nodes, inputs [(name, array)], outputs [(name, onnx dtype, shape, check, seeded)], initializers)
P = np.random.RandomState(3).uniform(0, 1, (100, 200)).astype(np.float32)
P[0, :10] = 0
P[1, :10] = 1
X = np.random.RandomState(4).randn(100, 200).astype(np.float32) + 3    # no zeros
CASES = {
    "uniform": (
        [h.make_node("RandomUniform", [], ["u"], shape=[200, 100], low=-1.0, high=3.0),
         h.make_node("RandomUniform", [], ["u64"], shape=[N], dtype=T.DOUBLE, seed=7.0)],
        [], [("u", T.FLOAT, [200, 100], uniform_check(-1, 3), False),
             ("u64", T.DOUBLE, [N], uniform_check(0, 1), True)], []),
    "normal": (
        [h.make_node("RandomNormal", [], ["n"], shape=[4, 5000], mean=2.0, scale=0.5),
         h.make_node("RandomNormal", [], ["n64"], shape=[N], dtype=T.DOUBLE, seed=3.0)],
        [], [("n", T.FLOAT, [4, 5000], normal_check(2, 0.5), False),
             ("n64", T.DOUBLE, [N], normal_check(0, 1), True)], []),
    "like": (
        [h.make_node("RandomUniformLike", ["p"], ["ul"], dtype=T.DOUBLE, low=5.0, high=6.0),
         h.make_node("RandomNormalLike", ["p"], ["nl"], scale=3.0, seed=11.0),
         h.make_node("Bernoulli", ["p"], ["b"], dtype=T.BOOL),
         h.make_node("Bernoulli", ["p"], ["b64"], dtype=T.INT64, seed=5.0),
         h.make_node("Bernoulli", ["p"], ["bf"])],
        [("p", P)],
        [("ul", T.DOUBLE, [100, 200], uniform_check(5, 6), False),
         ("nl", T.FLOAT, [100, 200], normal_check(0, 3), True),
         ("b", T.BOOL, [100, 200], bernoulli_check, False),
         ("b64", T.INT64, [100, 200], bernoulli_check, True),
         ("bf", T.FLOAT, [100, 200], bernoulli_check, False)], []),
    "dropout": (
        [h.make_node("Dropout", ["x", "r", "t"], ["y", "mask"]),
         h.make_node("Dropout", ["x", "r2", "t"], ["y2"], seed=9)],
        [("x", X)],
        [("y", T.FLOAT, [100, 200], dropout_check(0.2), False),
         ("mask", T.BOOL, [100, 200], mask_check("y"), False),
         ("y2", T.FLOAT, [100, 200], dropout_check(0.6), True)],
        [numpy_helper.from_array(np.array(0.2, np.float32), "r"),
         numpy_helper.from_array(np.array(0.6, np.float32), "r2"),
         numpy_helper.from_array(np.array(True), "t")]),
    "same_seed": (
        [h.make_node("RandomUniform", [], ["s1"], shape=[1000], seed=4.0),
         h.make_node("RandomUniform", [], ["s2"], shape=[1000], seed=4.0),
         h.make_node("RandomUniform", [], ["f1"], shape=[1000]),
         h.make_node("RandomUniform", [], ["f2"], shape=[1000])],
        [], [("s1", T.FLOAT, [1000], uniform_check(0, 1), True), ("s2", T.FLOAT, [1000], uniform_check(0, 1), True),
             ("f1", T.FLOAT, [1000], uniform_check(0, 1), False),
             ("f2", T.FLOAT, [1000], uniform_check(0, 1), False)], []),
}


def run(cmd, log):
    with open(log, "ab") as f:
        f.write(("$ " + " ".join(cmd) + "\n").encode())
        r = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
    return r.returncode


def main():
    cellc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    flags = ["-lopenblas", "-lm", "-fopenmp"]
    for case, (nodes, inputs, outputs, inits) in CASES.items():
        d = os.path.join(work, case)
        os.makedirs(d, exist_ok=True)
        log = os.path.join(d, "log.txt")
        open(log, "w").close()
        g = h.make_graph(nodes, case, [vi(n, mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
                                       for n, a in inputs],
                         [vi(n, dt, shape) for n, dt, shape, _, _ in outputs], inits)
        model = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        tensorfile.write(os.path.join(d, "inputs.tf"), inputs)
        binary = os.path.join(d, "test_random")
        ok = (run([cellc, "compile", os.path.join(d, "model.onnx"), "-o", os.path.join(d, "m"), "--name", "m"], log) == 0
              and run(["make", "--no-print-directory", "-s", "-C", os.path.join(d, "m")], log) == 0
              and run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-g", "-Iruntime",
                       "-I" + os.path.join(d, "m"), "tests/api/test_random.c", "-o", binary,
                       os.path.join(d, "m", "libm.a"), os.path.join("build", "libcellrt.a")] + flags, log) == 0
              and run([binary, os.path.join(d, "m", "m.weights"), os.path.join(d, "inputs.tf"), d], log) == 0)
        report("%s/build_and_run" % case, ok, "" if ok else "(log: %s)" % log)
        if not ok:
            continue
        runs = [dict(tensorfile.read(os.path.join(d, "run_%d.tf" % r))) for r in range(6)]
        ins = [a for _, a in inputs]
        want_dt = {T.FLOAT: np.float32, T.DOUBLE: np.float64, T.BOOL: np.bool_, T.INT64: np.int64}
        for name, dt, shape, check, seeded in outputs:
            y = runs[0][name]
            why = ""
            if y.dtype != np.dtype(want_dt[dt]) or list(y.shape) != shape:
                why = "%s%s, expected %s%s; " % (y.dtype, list(y.shape), np.dtype(want_dt[dt]), shape)
            else:
                why = check(y, ins, runs[0]) if name == "mask" else check(y, ins)
            report("%s/%s/values" % (case, name), not why, why or "shape, dtype, range and moments")
            same = lambda a, b: np.array_equal(runs[a][name], runs[b][name])
            facts = [("a second run draws anew", not same(0, 1)),
                     ("m_seed(m, 0) restarts the streams", same(0, 2)),
                     ("m_reset leaves the streams", same(1, 3)),
                     ("another run-time seed %s" % ("leaves a seeded node" if seeded else "changes the draws"),
                      same(0, 4) == seeded),
                     ("a second instance draws the same", same(0, 5))]
            if name == "mask":
                facts = facts[1:]       # a mask may repeat only by chance: its run 1 is checked with y
            bad = [f for f, good in facts if not good]
            report("%s/%s/streams" % (case, name), not bad, "; ".join(bad) if bad else
                   "new draws per run, m_seed restarts, m_reset leaves, %s, instances alike" %
                   ("seed attribute fixed" if seeded else "run-time seed"))
    r0 = dict(tensorfile.read(os.path.join(work, "same_seed", "run_0.tf"))) \
        if os.path.exists(os.path.join(work, "same_seed", "run_0.tf")) else None
    if r0 is not None:
        report("same_seed/equal_seeds_equal_draws", np.array_equal(r0["s1"], r0["s2"]))
        report("same_seed/unseeded_nodes_differ", not np.array_equal(r0["f1"], r0["f2"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
