"""diff_test.py: differential testing of cellc against ONNX Runtime on random
valid ONNX models (issue 17).

Each model is drawn from a fixed seed by one of these generators, with random
shapes and attributes, built with onnx.helper and checked by onnx.checker:

  rnn      LSTM / GRU / RNN: direction, hidden and input sizes, bias or not,
           initial states, sequence_lens, activations (RNN), GRU's
           linear_before_reset, LSTM peepholes, which of Y / Y_h / Y_c are
           outputs, a Squeeze or Transpose after Y
  elem     chains of element-wise operators with broadcasting (operands of
           other ranks, size-1 axes), Reshape (with 0 and -1), Transpose,
           Unsqueeze / Squeeze, Concat, Slice, MatMul, Gemm, Softmax
  scan     Scan with a recurrent body (tanh or relu cell), forward or reverse
  loop     Loop with a constant trip count carrying a state, outer-scope
           values in the body, a scan output
  traced   a Python loop as a tracer writes it: T unrolled steps of an RNN or
           LSTM cell on Gather'ed time steps, per-step outputs stacked by
           Unsqueeze + Concat (what cellc's reroll pass folds back into a loop);
           the last steps of x may go unread, the first step may read a
           start token (a weight) and the others x[t - 1], the last step's
           input projection may differ (alpha 2)
  pixel    the same over a pixel sequence x [B, T] read one value per step,
           as x[:, t] (Gather on axis 1) then .unsqueeze(1), .view(B, 1) or
           [:, t:t+1]; the last step's input may be scaled or its
           projection differ; a linear head on the last state
  nn       a convolutional front end: Conv (strides, pads, dilations, groups),
           MaxPool / AveragePool (ceil_mode, count_include_pad), inference
           BatchNormalization, Pad (constant, reflect, edge), activations, then
           GlobalAveragePool, LayerNormalization or a reduction (keepdims 0/1)
  gemm     products as exporters spell torch.mm, @, F.linear, addmm and
           nn.Linear: Gemm with every alpha, beta (0 included), transA,
           transB, with or without C (scalar, [N], [1, N]), or MatMul, each
           possibly followed by Add, Sub or Mul of a broadcast constant;
           chained, with activations between
  mmcell   a traced RNN or LSTM loop whose step products are spelled as
           `gemm` draws them (the same spelling every step): a scripted or
           traced cell written with torch.mm and a bias added after it
  quant    a float input quantized (QuantizeLinear, per tensor or per channel,
           uint8 or int8, or DynamicQuantizeLinear) into QLinearConv /
           ConvInteger (strides, pads, dilations, groups, per-channel weight
           zero points and scales, int32 bias), QLinearMatMul / MatMulInteger
           (batched) or MaxPool, with full-range 8-bit weights, back to float
           by DequantizeLinear or Cast

and then run through `cellc verify MODEL --oracle onnxruntime --inputs 1
--seed K`, and (kinds in GRAD_KINDS) their gradients checked by cellc's
translation validation against central differences (check_gradients): cellc draws the random inputs, ONNX Runtime (npm onnxruntime-node,
build/ort) computes the expected outputs, the code cellc emits is compiled
and compared (atol 1e-5 + rtol 1e-4, fixed below).  A model whose outputs
differ, that cellc refuses, or on which cellc crashes is a finding: the model
is kept in OUTDIR/findings/ with the command and its output for replay.  A
model ONNX Runtime itself refuses is a generator bug and counted as such
(never as passed).

usage: diff_test.py OUTDIR [--count N] [--seed S] [--jobs J] [--kinds k,k]
                    [--replay FILE]
--replay FILE adds the models FILE lists ("KIND SEED" per line, `#`
comments): the findings of earlier runs, kept as regression tests
(tests/diff_regressions.txt).
Prints one PASS/FAIL line per model, the per-generator and per-operator
counts, and "N passed, M failed"; exit status 1 on any failure.
"""
import argparse
import collections
import concurrent.futures
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLC = os.path.join(ROOT, "build", "cellc")
TOL = ["--atol", "1e-5", "--rtol", "1e-4"]
F = TensorProto.FLOAT
KINDS = ("rnn", "elem", "scan", "loop", "traced", "quant", "nn", "pixel", "gemm", "mmcell")


def vi(name, shape, dt=F):
    return helper.make_tensor_value_info(name, dt, shape)


def init(rng, name, shape, scale=0.5):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def i64(name, vals):
    return numpy_helper.from_array(np.array(vals, np.int64), name)


class G:
    """A graph under construction: nodes, initializers, fresh names."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits, self.k = rng, [], [], 0

    def name(self, base):
        self.k += 1
        return "%s_%d" % (base, self.k)

    def node(self, op, ins, nout=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(nout)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.name("n_" + op), **attrs))
        return outs if nout > 1 else outs[0]

    def weight(self, shape, scale=0.5):
        n = self.name("w")
        self.inits.append(init(self.rng, n, shape, scale))
        return n

    def const(self, vals):
        n = self.name("c")
        self.inits.append(i64(n, vals))
        return n


def model_of(nodes, name, inputs, outputs, inits, opset):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="diff_test")
    m.ir_version = 8 if opset >= 15 else 7
    onnx.checker.check_model(m)
    return m


# ---- generators --------------------------------------------------------------------------

def gen_rnn(rng):
    op = rng.choice(["LSTM", "GRU", "RNN"])
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    T, B, I, H = (int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 6)),
                  int(rng.integers(1, 7)))
    direction = rng.choice(["forward", "reverse", "bidirectional"])
    D = 2 if direction == "bidirectional" else 1
    g = G(rng)
    inputs = [vi("X", [T, B, I])]
    ins = ["X", g.weight([D, gates * H, I]), g.weight([D, gates * H, H])]
    attrs = {"hidden_size": H, "direction": str(direction)}
    ops = {op}
    ins.append(g.weight([D, 2 * gates * H]) if rng.random() < 0.7 else "")
    if rng.random() < 0.4:
        inputs.append(vi("sequence_lens", [B], TensorProto.INT32))
        ins.append("sequence_lens")
    else:
        ins.append("")
    if rng.random() < 0.5:
        inputs.append(vi("initial_h", [D, B, H]))
        ins.append("initial_h")
    else:
        ins.append("")
    if op == "LSTM":
        if rng.random() < 0.4:
            inputs.append(vi("initial_c", [D, B, H]))
            ins.append("initial_c")
        else:
            ins.append("")
        if rng.random() < 0.3:
            ins.append(g.weight([D, 3 * H]))
    if op == "RNN" and rng.random() < 0.5:
        attrs["activations"] = [str(rng.choice(["Tanh", "Relu", "Sigmoid"])) for _ in range(D)]
    if op == "GRU":
        attrs["linear_before_reset"] = int(rng.integers(0, 2))
    while ins and ins[-1] == "":
        ins.pop()
    nout = 3 if op == "LSTM" else 2
    outs = ["Y", "Y_h", "Y_c"][:nout]
    keep = [o for o in outs if rng.random() < 0.6] or ["Y"]
    node_outs = [o if o in keep else "" for o in outs]
    while node_outs[-1] == "":
        node_outs.pop()
    nodes = [helper.make_node(op, ins, node_outs, name="rnn", **attrs)]
    shapes = {"Y": [T, D, B, H], "Y_h": [D, B, H], "Y_c": [D, B, H]}
    outputs = []
    for o in keep:
        if o == "Y" and rng.random() < 0.5:
            if D == 1 and rng.random() < 0.5:
                nodes.append(helper.make_node("Squeeze", ["Y", g.const([1])], ["Ys"], name="sq"))
                outputs.append(vi("Ys", [T, B, H]))
                ops.add("Squeeze")
            else:
                nodes.append(helper.make_node("Transpose", ["Y"], ["Yt"], name="tr", perm=[0, 2, 1, 3]))
                outputs.append(vi("Yt", [T, B, D, H]))
                ops.add("Transpose")
        else:
            outputs.append(vi(o, shapes[o]))
    return model_of(nodes, "rnn", inputs, outputs, g.inits, int(rng.choice([13, 14, 17]))), ops


def bshape(rng, shape):
    """A shape that broadcasts against `shape` (trailing-aligned, 1s, fewer axes)."""
    k = int(rng.integers(0, len(shape) + 1))
    return [d if rng.random() < 0.6 else 1 for d in shape[len(shape) - k:]]


def dims_of(v):
    return [d.dim_value for d in v.type.tensor_type.shape.dim]


def broadcastable(a, b):
    """Whether numpy broadcasts shapes a and b together."""
    return all(p == q or p == 1 or q == 1 for p, q in zip(a[::-1], b[::-1]))


def gen_elem(rng):
    g = G(rng)
    r = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 5)) for _ in range(r)]
    inputs = [vi("x", shape)]
    cur, ops = "x", set()
    other = None
    if rng.random() < 0.5:
        os_ = bshape(rng, shape)
        inputs.append(vi("y", os_))
        other = "y"
    unary = ["Sigmoid", "Tanh", "Relu", "Neg", "Abs", "Exp"]
    binary = ["Add", "Sub", "Mul"]
    for _ in range(int(rng.integers(2, 8))):
        c = rng.random()
        numel = int(np.prod(shape)) if shape else 1
        if c < 0.25:
            op = str(rng.choice(unary))
            cur = g.node(op, [cur])
        elif c < 0.5:
            op = str(rng.choice(binary))
            if other is not None and rng.random() < 0.5 and broadcastable(dims_of(inputs[1]), shape):
                # (drawn with the first shape: a Transpose or Reshape since may
                # have made it incompatible, and then a weight takes its place)
                b = other
                other = None
                bs = None
            else:
                bs = bshape(rng, shape)
                b = g.weight(bs)
            args = [cur, b] if rng.random() < 0.5 else [b, cur]
            cur = g.node(op, args)
            if bs is None:
                # the other input may have been the larger one
                oshape = [d for d in inputs[1].type.tensor_type.shape.dim]
                od = [d.dim_value for d in oshape]
                n = max(len(od), len(shape))
                a = [1] * (n - len(shape)) + shape
                bb = [1] * (n - len(od)) + od
                shape = [max(p, q) for p, q in zip(a, bb)]
        elif c < 0.6 and len(shape) >= 2:
            op = "Transpose"
            perm = [int(p) for p in rng.permutation(len(shape))]
            cur = g.node(op, [cur], perm=perm)
            shape = [shape[p] for p in perm]
        elif c < 0.7:
            op = "Reshape"
            dims = []
            left = numel
            for _ in range(int(rng.integers(1, 4)) - 1):
                divs = [d for d in range(1, 5) if left % d == 0]
                d = int(rng.choice(divs))
                dims.append(d)
                left //= d
            dims.append(left)
            spec = list(dims)
            if rng.random() < 0.5:
                spec[int(rng.integers(0, len(spec)))] = -1
            cur = g.node(op, [cur, g.const(spec)])
            shape = dims
        elif c < 0.75 and len(shape) < 4:
            op = "Unsqueeze"
            ax = int(rng.integers(0, len(shape) + 1))
            cur = g.node(op, [cur, g.const([ax])])
            shape = shape[:ax] + [1] + shape[ax:]
        elif c < 0.8 and 1 in shape:
            op = "Squeeze"
            ax = shape.index(1)
            cur = g.node(op, [cur, g.const([ax])])
            shape = shape[:ax] + shape[ax + 1:]
        elif c < 0.85 and shape:
            op = "Concat"
            ax = int(rng.integers(0, len(shape)))
            w = list(shape)
            w[ax] = int(rng.integers(1, 3))
            cur = g.node(op, [cur, g.weight(w)], axis=ax)
            shape = list(shape)
            shape[ax] += w[ax]
        elif c < 0.9 and shape and max(shape) > 1:
            op = "Slice"
            ax = int(np.argmax(shape))
            s = int(rng.integers(0, shape[ax] - 1))
            e = int(rng.integers(s + 1, shape[ax] + 1))
            cur = g.node(op, [cur, g.const([s]), g.const([e]), g.const([ax])])
            shape = list(shape)
            shape[ax] = e - s
        elif c < 0.95 and shape:
            op = "MatMul" if len(shape) != 2 or rng.random() < 0.5 else "Gemm"
            k = int(rng.integers(1, 5))
            if op == "Gemm":
                cur = g.node(op, [cur, g.weight([k, shape[-1]]), g.weight([k])], transB=1)
            else:
                cur = g.node(op, [cur, g.weight([shape[-1], k])])
            shape = shape[:-1] + [k]
        elif shape:
            op = str(rng.choice(["Softmax", "LogSoftmax"]))
            cur = g.node(op, [cur], axis=-1)
        else:
            op = "Tanh"
            cur = g.node(op, [cur])
        ops.add(op)
    g.nodes[-1].output[0] = "out"
    return model_of(g.nodes, "elem", inputs, [vi("out", shape)], g.inits, int(rng.choice([13, 14, 17]))), ops


def gen_scan(rng):
    g = G(rng)
    T, B, I, H = (int(rng.integers(1, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 5)),
                  int(rng.integers(1, 6)))
    act = str(rng.choice(["Tanh", "Relu", "Sigmoid"]))
    W, U, b = g.weight([I, H]), g.weight([H, H]), g.weight([H])
    body = helper.make_graph(
        [helper.make_node("MatMul", ["xt", W], ["xw"]), helper.make_node("MatMul", ["s", U], ["su"]),
         helper.make_node("Add", ["xw", "su"], ["a1"]), helper.make_node("Add", ["a1", b], ["a2"]),
         helper.make_node(act, ["a2"], ["s2"]), helper.make_node("Identity", ["s2"], ["y"])],
        "scan_body", [vi("s", [B, H]), vi("xt", [B, I])], [vi("s2", [B, H]), vi("y", [B, H])])
    rev = int(rng.integers(0, 2))
    node = helper.make_node("Scan", ["s0", "x"], ["sT", "ys"], name="scan", body=body, num_scan_inputs=1,
                            scan_input_directions=[rev], scan_output_directions=[int(rng.integers(0, 2))])
    m = model_of([node], "scan", [vi("s0", [B, H]), vi("x", [T, B, I])],
                 [vi("sT", [B, H]), vi("ys", [T, B, H])], g.inits, int(rng.choice([11, 13, 16])))
    return m, {"Scan", "MatMul", "Add", act}


def gen_loop(rng):
    g = G(rng)
    M, B, H = int(rng.integers(1, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
    W = g.weight([H, H])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("MatMul", ["h", W], ["hw"]),
         helper.make_node("Add", ["hw", "u"], ["a"]), helper.make_node("Tanh", ["a"], ["h2"]),
         helper.make_node("Relu", ["h2"], ["y"])],
        "loop_body", [vi("it", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL), vi("h", [B, H])],
        [vi("c_out", [], TensorProto.BOOL), vi("h2", [B, H]), vi("y", [B, H])])
    g.inits.append(i64("M", M))
    node = helper.make_node("Loop", ["M", "", "h0"], ["hT", "ys"], name="loop", body=body)
    m = model_of([node], "loop", [vi("h0", [B, H]), vi("u", [B, H])],
                 [vi("hT", [B, H]), vi("ys", [M, B, H])], g.inits, int(rng.choice([13, 16])))
    return m, {"Loop", "MatMul", "Add", "Tanh", "Relu"}


def cell_update(g, cell, a, c, ops):
    """The state update of an RNN (tanh) or LSTM (gates i f g o, split on
    axis 1) step from its gate pre-activations a: (h, c)."""
    if cell == "rnn":
        ops.add("Tanh")
        return g.node("Tanh", [a]), c
    i, f, gg, o = g.node("Split", [a], nout=4, axis=1)
    c = g.node("Add", [g.node("Mul", [g.node("Sigmoid", [f]), c]),
                       g.node("Mul", [g.node("Sigmoid", [i]), g.node("Tanh", [gg])])])
    ops |= {"Split", "Sigmoid", "Tanh", "Mul"}
    return g.node("Mul", [g.node("Sigmoid", [o]), g.node("Tanh", [c])]), c


def gen_traced(rng):
    g = G(rng)
    T, B, I, H = (int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(1, 5)),
                  int(rng.integers(1, 6)))
    cell = str(rng.choice(["rnn", "lstm"]))
    k = 4 if cell == "lstm" else 1
    W, U, b = g.weight([k * H, I]), g.weight([k * H, H]), g.weight([k * H])
    # x may hold steps the loop never reads (range(T - 1)), and the first
    # step may read a start token instead of a step of x (then x[t - 1])
    skip, start = int(rng.integers(0, 3)), bool(rng.integers(0, 2))
    S = g.weight([B, I]) if start else None
    h, c = "h0", "c0"
    ys = []
    ops = {"Gather", "Gemm", "Add", "Unsqueeze", "Concat"}
    for t in range(T):
        xt = S if start and t == 0 else g.node("Gather", ["x", g.const(t - 1 if start else t)], axis=0)
        xg = g.node("Gemm", [xt, W, b], transB=1)
        a = g.node("Add", [xg, g.node("Gemm", [h, U], transB=1)])
        h, c = cell_update(g, cell, a, c, ops)
        ys.append(g.node("Unsqueeze", [h, g.const([0])]))
    g.nodes.append(helper.make_node("Concat", ys, ["ys"], name="stack", axis=0))
    g.nodes.append(helper.make_node("Identity", [h], ["hT"], name="last"))
    inputs = [vi("x", [T + skip - start, B, I]), vi("h0", [B, H])] + ([vi("c0", [B, H])] if cell == "lstm" else [])
    opset = int(rng.choice([13, 14, 17]))
    # (a later draw) the last step's input projection differs from the
    # others' (alpha 2): work only the last step does, on its input slice
    if T > 1 and rng.random() < 0.3:
        last = next(n for n in g.nodes if n.output[0] == xg)
        last.attribute.append(helper.make_attribute("alpha", 2.0))
    m = model_of(g.nodes, "traced", inputs, [vi("ys", [T, B, H]), vi("hT", [B, H])], g.inits, opset)
    return m, ops


def gen_pixel(rng):
    g = G(rng)
    T, B, H = int(rng.integers(2, 9)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
    cell = str(rng.choice(["rnn", "lstm"]))
    k = 4 if cell == "lstm" else 1
    W, U, b = g.weight([k * H, 1]), g.weight([k * H, H]), g.weight([k * H])
    how = str(rng.choice(["unsqueeze", "reshape", "slice"]))
    last = str(rng.choice(["same", "same", "scaled", "alpha"]))
    h, c = "h0", "c0"
    ops = {"Gemm", "Add", "Tanh"}
    for t in range(T):
        if how == "slice":
            xt = g.node("Slice", ["x", g.const([t]), g.const([t + 1]), g.const([1])])
        else:
            xt = g.node("Gather", ["x", g.const(t)], axis=1)
            xt = (g.node("Unsqueeze", [xt, g.const([1])]) if how == "unsqueeze"
                  else g.node("Reshape", [xt, g.const([B, 1])]))
        if last == "scaled" and t == T - 1:
            two = g.name("two")
            g.inits.append(numpy_helper.from_array(np.array([2.0], np.float32), two))
            xt = g.node("Mul", [xt, two])
            ops.add("Mul")
        xg = g.node("Gemm", [xt, W, b], transB=1, **({"alpha": 2.0} if last == "alpha" and t == T - 1 else {}))
        a = g.node("Add", [xg, g.node("Gemm", [h, U], transB=1)])
        h, c = cell_update(g, cell, a, c, ops)
    ops |= {"Slice"} if how == "slice" else {"Gather", "Unsqueeze" if how == "unsqueeze" else "Reshape"}
    C = int(rng.integers(1, 4))
    g.nodes.append(helper.make_node("Gemm", [h, g.weight([C, H]), g.weight([C])], ["y"], name="head", transB=1))
    inputs = [vi("x", [B, T]), vi("h0", [B, H])] + ([vi("c0", [B, H])] if cell == "lstm" else [])
    m = model_of(g.nodes, "pixel", inputs, [vi("y", [B, C])], g.inits, int(rng.choice([13, 14, 17])))
    return m, ops


def gen_quant(rng):
    g = G(rng)
    ops = set()
    dt = int(rng.choice([TensorProto.UINT8, TensorProto.INT8]))
    npdt = np.uint8 if dt == TensorProto.UINT8 else np.int8
    lo, hi = (0, 256) if dt == TensorProto.UINT8 else (-128, 128)

    def q8(shape, name="q"):
        n = g.name(name)
        g.inits.append(numpy_helper.from_array(rng.integers(lo, hi, size=shape).astype(npdt), n))
        return n

    def f32(vals, name="s"):
        n = g.name(name)
        g.inits.append(numpy_helper.from_array(np.array(vals, np.float32), n))
        return n

    def i32(vals, name="b"):
        n = g.name(name)
        g.inits.append(numpy_helper.from_array(np.array(vals, np.int32), n))
        return n

    kind = str(rng.choice(["conv", "matmul", "pool"]))
    if kind == "matmul":
        batch = [int(rng.integers(1, 4))] if rng.random() < 0.5 else []
        M, K, N = int(rng.integers(1, 6)), int(rng.integers(1, 40)), int(rng.integers(1, 6))
        shape = batch + [M, K]
    else:
        C = int(rng.integers(1, 4)) * (2 if kind == "conv" and rng.random() < 0.5 else 1)
        shape = [int(rng.integers(1, 3)), C, int(rng.integers(3, 8)), int(rng.integers(3, 8))]
    inputs = [vi("x", shape)]
    # x in [-1, 1) quantized to about +-100 steps
    if rng.random() < 0.25:
        q, xs, xz = g.node("DynamicQuantizeLinear", ["x"], 3)
        ops.add("DynamicQuantizeLinear")
        dt, npdt, lo, hi = TensorProto.UINT8, np.uint8, 0, 256
    else:
        xs = f32(np.float32(rng.uniform(0.005, 0.02)))
        xz = g.name("zp")
        g.inits.append(numpy_helper.from_array(np.array(int(rng.integers(lo // 2, hi // 2 + 1)) if dt == TensorProto.UINT8
                                                        else int(rng.integers(-20, 21)), npdt), xz))
        q = g.node("QuantizeLinear", ["x", xs, xz])
        ops.add("QuantizeLinear")
    ys, yz = f32(np.float32(rng.uniform(0.5, 4.0))), g.name("yzp")
    g.inits.append(numpy_helper.from_array(np.array((lo + hi) // 2, npdt), yz))
    integer = rng.random() < 0.4
    if kind == "matmul":
        w = q8([K, N], "w")
        if integer:
            acc = g.node("MatMulInteger", [q, w, xz, q8([N] if rng.random() < 0.5 else [], "wzp")])
            ops.add("MatMulInteger")
        else:
            cur = g.node("QLinearMatMul", [q, xs, xz, w, f32(np.float32(rng.uniform(0.005, 0.02))), q8([], "wzp"),
                                           ys, yz])
            ops.add("QLinearMatMul")
        oshape = batch + [M, N]
    elif kind == "conv":
        group = int(rng.choice([1, 2])) if C % 2 == 0 else 1
        M = group * int(rng.integers(1, 4))
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        attrs = dict(kernel_shape=[kh, kw], strides=[int(rng.integers(1, 3)), int(rng.integers(1, 3))],
                     pads=[int(rng.integers(0, 2)) for _ in range(4)], dilations=[int(rng.integers(1, 3)), 1],
                     group=group)
        w = q8([M, C // group, kh, kw], "w")
        wz = q8([M] if rng.random() < 0.5 else [], "wzp")
        if integer:
            wz = q8([], "wzp")      # ONNX Runtime's ConvInteger: one weight zero point
            acc = g.node("ConvInteger", [q, w, xz, wz], **attrs)
            ops.add("ConvInteger")
        else:
            wsv = rng.uniform(0.005, 0.02, size=[M]).astype(np.float32)
            ws = f32(wsv if rng.random() < 0.5 else wsv[0])
            if len(g.inits[-2].dims) == 0 and len(g.inits[-1].dims) == 1:
                wz = q8([], "wzp")      # per-channel scales with one zero point
            ins = [q, xs, xz, w, ws, wz, ys, yz]
            if rng.random() < 0.5:
                ins.append(i32(rng.integers(-2000, 2000, size=[M])))
            cur = g.node("QLinearConv", ins, **attrs)
            ops.add("QLinearConv")
        (sh, sw), (dh, dw), p = attrs["strides"], attrs["dilations"], attrs["pads"]
        oshape = [shape[0], M, (shape[2] + p[0] + p[2] - dh * (kh - 1) - 1) // sh + 1,
                  (shape[3] + p[1] + p[3] - dw * (kw - 1) - 1) // sw + 1]
        if oshape[2] < 1 or oshape[3] < 1:
            return gen_quant(rng)
    else:
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        cur = g.node("MaxPool", [q], kernel_shape=[kh, kw], strides=[int(rng.integers(1, 3))] * 2,
                     pads=[int(rng.integers(0, min(kh, kw))) for _ in range(4)] if min(kh, kw) > 1 else [0, 0, 0, 0])
        ops.add("MaxPool")
        integer = False
        ys, yz = xs, xz
        a = {x.name: list(x.ints) for x in g.nodes[-1].attribute}
        oshape = [shape[0], C, (shape[2] + a["pads"][0] + a["pads"][2] - kh) // a["strides"][0] + 1,
                  (shape[3] + a["pads"][1] + a["pads"][3] - kw) // a["strides"][1] + 1]
    if integer:
        g.node("Cast", [acc], to=TensorProto.FLOAT)
        ops.add("Cast")
    else:
        g.node("DequantizeLinear", [cur, ys, yz])
        ops.add("DequantizeLinear")
    g.nodes[-1].output[0] = "out"
    return model_of(g.nodes, "quant", inputs, [vi("out", oshape)], g.inits, 13), ops


def gen_nn(rng):
    """A front end as models put before a recurrence: a chain over [N, C, L] or
    [N, C, H, W] of Conv (kernel, stride, padding, dilation, groups, bias),
    MaxPool / AveragePool (padding, ceil_mode, count_include_pad), inference
    BatchNormalization, Pad (constant, reflect, edge), activations, then
    maybe GlobalAveragePool, LayerNormalization or a reduction with or
    without keepdims.  Shapes are tracked here so that every draw is valid."""
    g = G(rng)
    nsp = int(rng.integers(1, 3))
    shape = [int(rng.integers(1, 3)), int(rng.integers(1, 5))] + [int(rng.integers(4, 9)) for _ in range(nsp)]
    inputs = [vi("x", shape)]
    cur, ops = "x", set()
    opset = int(rng.choice([13, 17]))

    def out_len(n, k, s, d, pb, pe, ceil=False):
        span = d * (k - 1) + 1
        num = n + pb + pe - span
        return (-(-num // s) if ceil else num // s) + 1

    for _ in range(int(rng.integers(1, 5))):
        c = rng.random()
        C, sp = shape[1], shape[2:]
        if c < 0.35:
            M = int(rng.integers(1, 5))
            group = C if (C > 1 and rng.random() < 0.3) else 1
            if group > 1:
                M = C * int(rng.integers(1, 3))
            k = [int(rng.integers(1, 4)) for _ in sp]
            st = [int(rng.integers(1, 3)) for _ in sp]
            dl = [int(rng.integers(1, 3)) for _ in sp]
            pads = [int(rng.integers(0, kk)) for kk in k] * 2
            outl = [out_len(sp[i], k[i], st[i], dl[i], pads[i], pads[len(sp) + i]) for i in range(len(sp))]
            if min(outl) < 1 or any(sp[i] + 2 * pads[i] < dl[i] * (k[i] - 1) + 1 for i in range(len(sp))):
                continue
            w = g.weight([M, C // group] + k)
            ins = [cur, w] + ([g.weight([M])] if rng.random() < 0.6 else [])
            cur = g.node("Conv", ins, kernel_shape=k, strides=st, dilations=dl, pads=pads, group=group)
            shape = [shape[0], M] + outl
            ops.add("Conv")
        elif c < 0.55:
            op = str(rng.choice(["MaxPool", "AveragePool"]))
            if ops and g.nodes[-1].op_type == "Pad":
                # ONNX Runtime 1.x folds a Pad into the pool after it and then
                # refuses its own pads ("Pad should be smaller than kernel")
                continue
            k = [int(rng.integers(1, 4)) for _ in sp]
            st = [int(rng.integers(1, min(kk, 2) + 1)) for kk in k]      # ONNX Runtime: stride <= kernel
            pads = [int(rng.integers(0, kk)) if kk > 1 else 0 for kk in k] * 2
            ceil = int(rng.random() < 0.3)
            outl = [out_len(sp[i], k[i], st[i], 1, pads[i], pads[len(sp) + i], ceil) for i in range(len(sp))]
            # windows fit the padded input; ceil_mode: the last one starts inside it
            if min(outl) < 1 or any(sp[i] + 2 * pads[i] < k[i] for i in range(len(sp))) or \
                    any((outl[i] - 1) * st[i] >= sp[i] + pads[i] for i in range(len(sp))):
                continue
            attrs = dict(kernel_shape=k, strides=st, pads=pads, ceil_mode=ceil)
            if op == "AveragePool":
                attrs["count_include_pad"] = int(rng.random() < 0.5)
            cur = g.node(op, [cur], **attrs)
            shape = shape[:2] + outl
            ops.add(op)
        elif c < 0.65:
            # scales away from 0: a channel scaled to nearly nothing makes the
            # rows a later LayerNormalization divides by their spread nearly
            # constant, where float32 itself gives no 4 correct digits
            mean, var = g.weight([C]), numpy_helper.from_array(
                (rng.random(C) + 0.5).astype(np.float32), g.name("var"))
            scl = numpy_helper.from_array((rng.choice([-1, 1], C) * (rng.random(C) + 0.5)).astype(np.float32),
                                          g.name("scale"))
            g.inits += [var, scl]
            cur = g.node("BatchNormalization", [cur, scl.name, g.weight([C]), mean, var.name],
                         epsilon=float(rng.choice([1e-5, 1e-3])))
            ops.add("BatchNormalization")
        elif c < 0.8:
            mode = str(rng.choice(["constant", "reflect", "edge"]))
            lim = min(sp) - 1 if mode == "reflect" else 2
            pads = [0, 0] + [int(rng.integers(0, lim + 1)) for _ in sp] + [0, 0] + \
                   [int(rng.integers(0, lim + 1)) for _ in sp]
            ins = [cur, g.const(pads)]
            if mode == "constant" and rng.random() < 0.5:
                cv = g.name("cv")
                g.inits.append(numpy_helper.from_array(np.array(rng.standard_normal(), np.float32), cv))
                ins.append(cv)
            cur = g.node("Pad", ins, mode=mode)
            shape = shape[:2] + [sp[i] + pads[2 + i] + pads[len(shape) + 2 + i] for i in range(len(sp))]
            ops.add("Pad")
        else:
            op = str(rng.choice(["Relu", "Sigmoid", "Tanh", "LeakyRelu"]))
            cur = g.node(op, [cur], **({"alpha": 0.1} if op == "LeakyRelu" else {}))
            ops.add(op)
    c = rng.random()
    if c < 0.25:
        cur = g.node("GlobalAveragePool", [cur])
        shape = shape[:2] + [1] * (len(shape) - 2)
        ops.add("GlobalAveragePool")
    elif c < 0.45 and opset >= 17:
        cur = g.node("LayerNormalization", [cur, g.weight([shape[-1]]), g.weight([shape[-1]])], axis=-1)
        ops.add("LayerNormalization")
    elif c < 0.75:
        op = str(rng.choice(["ReduceMean", "ReduceSum", "ReduceMax"]))
        axes = sorted(int(a) for a in rng.choice(len(shape), int(rng.integers(1, len(shape))), replace=False))
        keep = int(rng.random() < 0.5)
        if op == "ReduceSum":
            cur = g.node(op, [cur, g.const(axes)], keepdims=keep)
        else:
            cur = g.node(op, [cur], axes=axes, keepdims=keep)
        shape = [1 if i in axes else d for i, d in enumerate(shape)] if keep else \
                [d for i, d in enumerate(shape) if i not in axes]
        ops.add(op)
    if not g.nodes:
        cur = g.node("Relu", [cur])
        ops.add("Relu")
    g.nodes[-1].output[0] = "out"
    return model_of(g.nodes, "nn", inputs, [vi("out", shape)], g.inits, opset), ops


def product(g, rng, x, w_rows, w_cols, bias_after, ops):
    """x [M, K] times a weight to [M, N] in one of the spellings exporters
    write for torch.mm / @ / F.linear / addmm / nn.Linear: a Gemm with any
    alpha, beta, transA, transB and with or without C, or a MatMul, each
    possibly followed by Add, Sub or Mul of a broadcast constant (the bias a
    scripted cell adds after torch.mm, which a Gemm with beta 0 precedes).
    w_rows x w_cols is the logical [K, N] weight."""
    K, N = w_rows, w_cols
    form = str(rng.choice(["gemm", "gemm", "matmul"]))
    if form == "matmul":
        y = g.node("MatMul", [x, g.weight([K, N])])
        ops.add("MatMul")
    else:
        tb = int(rng.integers(0, 2))
        attrs = {}
        if tb:
            attrs["transB"] = 1
        alpha = float(rng.choice([1.0, 1.0, 0.5, -2.0]))
        if alpha != 1.0 or rng.random() < 0.2:
            attrs["alpha"] = alpha
        beta = float(rng.choice([0.0, 1.0, 1.0, 0.5, 2.0]))
        if beta != 1.0 or rng.random() < 0.2:
            attrs["beta"] = beta
        ins = [x, g.weight([N, K] if tb else [K, N])]
        if rng.random() < 0.6:
            cs = [[N], [1, N], []]
            ins.append(g.weight(cs[int(rng.integers(0, len(cs)))]))
        y = g.node("Gemm", ins, **attrs)
        ops.add("Gemm(beta=%g,C=%d)" % (attrs.get("beta", 1.0), len(ins) == 3))
    if bias_after:
        op = str(rng.choice(["Add", "Add", "Sub", "Mul"]))
        bs = [[N], [1, N], [1]][int(rng.integers(0, 3))]
        b = g.weight(bs)
        y = g.node(op, [y, b] if rng.random() < 0.7 else [b, y])
        ops.add(op)
    return y


def gen_gemm(rng):
    """A product as exporters spell it (product()), possibly transposed
    input (transA), followed by more of them or an activation."""
    g = G(rng)
    M, K = int(rng.integers(1, 5)), int(rng.integers(1, 6))
    ops = set()
    ta = rng.random() < 0.3
    x = "x"
    inputs = [vi("x", [K, M] if ta else [M, K])]
    cur = x
    if ta:
        # Gemm with transA reads x [K, M] as its transpose
        N = int(rng.integers(1, 6))
        attrs = {"transA": 1}
        beta = float(rng.choice([0.0, 1.0, 0.5]))
        attrs["beta"] = beta
        cur = g.node("Gemm", [x, g.weight([K, N]), g.weight([N])], **attrs)
        ops.add("Gemm(transA)")
        K = N
    for _ in range(int(rng.integers(1, 4))):
        N = int(rng.integers(1, 6))
        cur = product(g, rng, cur, K, N, rng.random() < 0.7, ops)
        K = N
        if rng.random() < 0.4:
            cur = g.node("Tanh", [cur])
            ops.add("Tanh")
    g.nodes[-1].output[0] = "out"
    return model_of(g.nodes, "gemm", inputs, [vi("out", [M, K])], g.inits, int(rng.choice([11, 13, 14, 17]))), ops


def gen_mmcell(rng):
    """A traced RNN or LSTM loop whose products are written as a scripted or
    traced cell writes torch.mm / matmul / F.linear / addmm: each product's
    spelling drawn by product(), the bias added after it or not."""
    g = G(rng)
    T, B, I, H = (int(rng.integers(2, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 5)),
                  int(rng.integers(1, 5)))
    cell = str(rng.choice(["rnn", "lstm"]))
    k = 4 if cell == "lstm" else 1
    ops = {"Gather", "Add"}
    # one spelling per product for the whole loop (a loop repeats its body):
    # draw the step's nodes once into a template graph, then repeat them
    seed = int(rng.integers(0, 1 << 30))
    h, c = "h0", "c0"

    def step(xt, h):
        r = np.random.default_rng(seed)
        sub = G(r)
        sub.k = g.k
        a1 = product(sub, r, xt, I, k * H, r.random() < 0.7, ops)
        a2 = product(sub, r, h, H, k * H, r.random() < 0.3, ops)
        g.k = sub.k
        g.nodes.extend(sub.nodes)
        return sub, a1, a2
    shared = {}
    for t in range(T):
        xt = g.node("Gather", ["x", g.const(t)], axis=0)
        sub, a1, a2 = step(xt, h)
        # the weights are the same tensors every step: rename them to the
        # first step's names
        names = [i.name for i in sub.inits]
        if t == 0:
            shared["w"] = names
            g.inits.extend(sub.inits)
        else:
            ren = dict(zip(names, shared["w"]))
            for n in sub.nodes:
                for j, nm in enumerate(n.input):
                    if nm in ren:
                        n.input[j] = ren[nm]
        a = g.node("Add", [a1, a2])
        h, c = cell_update(g, cell, a, c, ops)
    g.nodes.append(helper.make_node("Identity", [h], ["hT"], name="last"))
    inputs = [vi("x", [T, B, I]), vi("h0", [B, H])] + ([vi("c0", [B, H])] if cell == "lstm" else [])
    m = model_of(g.nodes, "mmcell", inputs, [vi("hT", [B, H])], g.inits, int(rng.choice([13, 14, 17])))
    return m, ops


GENS = {"rnn": gen_rnn, "elem": gen_elem, "scan": gen_scan, "loop": gen_loop, "traced": gen_traced,
        "quant": gen_quant, "nn": gen_nn, "pixel": gen_pixel, "gemm": gen_gemm, "mmcell": gen_mmcell}


# ---- running -------------------------------------------------------------------------------

# kinds whose models are differentiable: their gradients are checked too
GRAD_KINDS = ("rnn", "elem", "scan", "loop", "traced", "pixel", "gemm", "mmcell")


def with_gradient_node(model, weights_as_inputs):
    """The model with a Gradient node (ai.onnx.preview.training) of the sum
    of its first output with respect to its float inputs and initializers,
    the gradients as outputs after the model's own; weights_as_inputs: its
    float initializers moved to graph inputs first (a training graph that
    feeds the weights)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    if weights_as_inputs:
        moved = [t for t in g.initializer if t.data_type == F]
        for t in moved:
            g.initializer.remove(t)
            g.input.append(vi(t.name, list(t.dims)))
    y = g.output[0].name
    xs = [i.name for i in g.input if i.type.tensor_type.elem_type == F] + \
         [t.name for t in g.initializer if t.data_type == F]
    g.node.append(helper.make_node("Gradient", xs, ["d_" + x for x in xs], name="diff_gradient",
                                   domain="ai.onnx.preview.training", xs=xs, y=y))
    shapes = {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in g.input}
    shapes.update({t.name: list(t.dims) for t in g.initializer})
    for x in xs:
        g.output.append(vi("d_" + x, shapes[x]))
    m.opset_import.append(helper.make_opsetid("ai.onnx.preview.training", 1))
    return m


def check_gradients(d, model, path, env, weights_as_inputs):
    """The gradients of the model, checked by cellc's translation validation
    (CELLC_VALIDATE=1) against central differences in double: a --train
    build (loss mse on the first output; its grad.* outputs), and the model
    with an ONNX Gradient node (the reference interpreter differentiates the
    node numerically, the grad pass expands it by the rules; the weights
    initializers or, for half the seeds, graph inputs).  Returns
    (verdict, detail, log): "pass" when both were checked and agree, "fail"
    on a difference or a crash, "unchecked" when cellc refused to
    differentiate the model or the interpreter could not run it (the reason
    in detail)."""
    log_path = os.path.join(d, "validate.log")
    genv = dict(env, CELLC_VALIDATE="1", CELLC_VALIDATE_LOG=log_path)
    gpath = os.path.join(d, "gradient.onnx")
    onnx.save(with_gradient_node(model, weights_as_inputs), gpath)
    runs = [("train", [CELLC, "compile", path, "--train", "--loss", "mse", "-o", os.path.join(d, "train")]),
            ("Gradient", [CELLC, "compile", gpath, "-o", os.path.join(d, "gradient")])]
    text, unchecked = "", []
    for what, cmd in runs:
        if os.path.exists(log_path):
            os.remove(log_path)
        try:
            p = subprocess.run(cmd, cwd=ROOT, env=genv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            rc, err = p.returncode, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, err = None, "timed out after 300 s"
        line = open(log_path).read() if os.path.exists(log_path) else ""
        text += "$ %s\n# exit %s\n%s%s\n" % (" ".join(cmd), rc, err, line)
        if "translation validation" in err or rc not in (0, 2):
            first = next((l for l in err.splitlines() if "translation validation" in l or "error" in l), err[:200])
            return "fail", "%s: exit %s: %s" % (what, rc, first[:250]), text
        checked = line.split(": validated: ", 1)[-1].split("|")[0]
        if rc != 0:
            unchecked.append("%s refused: %s" % (what, err.strip().splitlines()[0][:150] if err.strip() else "?"))
        elif "grad" not in checked:
            why = line.split("not validated: ", 1)[-1].split("|")[0].strip()
            unchecked.append("%s not validated: %s" % (what, why[:150]))
    return ("unchecked" if unchecked else "pass"), "; ".join(unchecked), text


def run_one(outdir, seed, kind):
    """Returns (kind, seed, verdict, detail, ops); verdict in pass, fail, invalid."""
    rng = np.random.default_rng(seed)
    model, ops = GENS[kind](rng)
    d = os.path.join(outdir, "work", "%s_%d" % (kind, seed))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    cmd = [CELLC, "verify", path, "--oracle", "onnxruntime", "--inputs", "1", "--seed", str(seed)] + TOL
    env = dict(os.environ)
    env.setdefault("CELLC_ORT_DIR", os.path.join(ROOT, "build", "ort"))
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "timed out after 300 s"
    except OSError as e:        # cellc missing or being rebuilt: a failure of this run, not a pass
        rc, out, err = 127, "", "cannot run %s: %s" % (CELLC, e)
    text = "$ %s\n# exit %s\n--- stdout\n%s\n--- stderr\n%s" % (" ".join(cmd), rc, out, err)
    if rc == 0 and "FAIL" not in out and " passed, 0 failed" in out:
        verdict, detail = "pass", ""
    elif rc == 2 and "onnxruntime refuses" in err:
        verdict, detail = "invalid", "ONNX Runtime refuses the model (a generator bug)"
    else:
        verdict = "fail"
        why = ("mismatch" if rc == 1 else "refused" if rc == 2 else "timeout" if rc is None
               else "not run" if rc == 127 else "crash (exit %s)" % rc)
        lines = [l for l in (err + out).splitlines() if l.strip() and not l.startswith("PASS")]
        detail = "%s: %s" % (why, " | ".join(lines[:2])[:300])
    grad = None
    if verdict == "pass" and kind in GRAD_KINDS:
        grad = check_gradients(d, model, path, env, (seed // 2) % 2 == 1)
        if grad[0] == "fail":
            verdict, detail = "fail", "gradients: " + grad[1]
            text += "\n--- gradients\n" + grad[2]
    if verdict != "pass":
        keep = os.path.join(outdir, "findings", "%s_%d" % (kind, seed))
        os.makedirs(keep, exist_ok=True)
        shutil.copy(path, keep)
        with open(os.path.join(keep, "run.log"), "w") as f:
            f.write(text)
    shutil.rmtree(d, ignore_errors=True)
    return kind, seed, verdict, detail, ops, grad


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("outdir")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("CELLC_TEST_JOBS", "0")) or os.cpu_count())
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--replay")
    a = ap.parse_args()
    kinds = a.kinds.split(",")
    os.makedirs(a.outdir, exist_ok=True)
    items = [(a.outdir, a.seed + i, kinds[i % len(kinds)]) for i in range(a.count)]
    if a.replay:
        with open(a.replay) as f:
            for line in f:
                w = line.split("#")[0].split()
                if len(w) == 2 and w[0] in GENS and (a.outdir, int(w[1]), w[0]) not in items:
                    items.append((a.outdir, int(w[1]), w[0]))
    by_kind = collections.Counter()
    op_count = collections.Counter()
    grads = collections.Counter()
    unchecked = collections.Counter()
    npass = nfail = ninvalid = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for kind, seed, verdict, detail, ops, grad in ex.map(lambda it: run_one(*it), items):
            name = "diff/%s_%d" % (kind, seed)
            if grad:
                grads[grad[0]] += 1
                if grad[0] == "unchecked":
                    unchecked[grad[1].split(":")[0] + ": " + grad[1].split(": ", 1)[-1][:90]] += 1
            by_kind[(kind, verdict)] += 1
            for o in ops:
                op_count[o] += 1
            if verdict == "pass":
                npass += 1
                print("PASS %s" % name, flush=True)
            else:
                nfail += verdict == "fail"
                ninvalid += verdict == "invalid"
                print("FAIL %s %s (model kept in %s)" % (name, detail,
                      os.path.join(a.outdir, "findings", "%s_%d" % (kind, seed))), flush=True)
    print("diff: models per generator: " + ", ".join(
        "%s %d/%d" % (k, by_kind[(k, "pass")], sum(by_kind[(k, v)] for v in ("pass", "fail", "invalid")))
        for k in kinds))
    print("diff: operators covered: " + ", ".join("%s %d" % (o, n) for o, n in sorted(op_count.items())))
    print("diff: gradients (a --train build and an ONNX Gradient node, each against central differences): "
          "%d models checked, %d not checkable, %d failed" % (grads["pass"], grads["unchecked"], grads["fail"]))
    for why, n in unchecked.most_common(8):
        print("diff:   not checkable (%d): %s" % (n, why))
    print("diff: %d mismatches/refusals/crashes, %d models ONNX Runtime refused" % (nfail, ninvalid))
    print("%d passed, %d failed" % (npass, nfail + ninvalid))
    return 1 if nfail or ninvalid else 0


if __name__ == "__main__":
    sys.exit(main())
