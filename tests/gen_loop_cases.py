"""gen_loop_cases.py: ONNX Loop and Scan cases for `cellc verify`, in the ONNX
backend layout (CASE/model.onnx, CASE/test_data_set_N/input_K.pb,
output_K.pb).

1. scripted/: torch.jit.script of the momentum family (tests/ref_scripted.py:
   a Python loop over time around the cell, a Linear head on every step)
   exported at opsets 13, 14 and 17 with dynamic T and B.  Each export is one
   ONNX Loop (trip count Shape(x)[0], x[t] by Gather on the iteration number,
   per-step head outputs collected by SequenceEmpty/SequenceInsert/
   ConcatFromSequence), plus batch-first variants (x[:, t], stack on axis 1)
   and ys[-1] (SequenceAt).  Data sets at T = 8, 64 and 784; the expected outputs
   are PyTorch's, from the eager tests/ref_momentum.Net with the same weights
   (and the scripted module is checked to agree with it here).
2. onnx/: hand-written Loop/Scan models (onnx.helper) covering what the
   exporters' cases do not: Scan input/output axes and directions, Scan-8's
   batch axis, a Loop with a constant trip count and a loop-invariant capture,
   x[t:t+1] indexing, a Loop that its condition ends early, a Loop carrying a ragged sequence (unrolled), an If
   in a Loop body on the iteration number or on the data (a select);
   expected
   outputs from numpy written from the ONNX operator specification here.
3. bad/: models cellc must refuse with a located error (expect.txt holds the
   text the message must contain): a data-dependent condition with no bound
   on the iterations, a trip count
   only known at run time; for sequences resolved at compile time
   (compiler/passes/lower_seq.c): a Loop carrying a sequence with a run-time trip
   count, a data-dependent condition or more iterations than cellc unrolls,
   a run-time SequenceInsert position, a run-time If condition (at the top
   level; in a Loop body when its branches give different shapes), an unbound
   sequence input.

Seeds are fixed.  usage: gen_loop_cases.py OUTDIR
"""
import io
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_momentum  # noqa: E402
import ref_scripted  # noqa: E402

warnings.filterwarnings("ignore")

I, H, C = 3, 16, 5
SETS = [(8, 2), (64, 3), (784, 1)]      # (T, B) per data set


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def write_case(d, model, sets, in_names, out_names):
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (ins, outs) in enumerate(sets):
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        for j, (n, a) in enumerate(zip(in_names, ins)):
            write_pb(os.path.join(ds, "input_%d.pb" % j), a, n)
        for j, (n, a) in enumerate(zip(out_names, outs)):
            write_pb(os.path.join(ds, "output_%d.pb" % j), a, n)


# ---- 1. scripted PyTorch exports ------------------------------------------------

def scripted_case(outdir, name, opset, seed, batch_first=False, with_last=False):
    """batch_first: x[:, t] (Gather on axis 1) and torch.stack(ys, 1)
    (ConcatFromSequence on axis 1); with_last: ys[-1] (SequenceAt)."""
    ref = ref_momentum.make_model(name, I, H, C, seed, batch_first=batch_first)
    net = ref_scripted.load_from(ref_scripted.make_model(name, I, H, C, batch_first, with_last), ref)
    sm = torch.jit.script(net)
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(B, T, I, generator=g) if batch_first else torch.randn(T, B, I, generator=g)
          for T, B in SETS]
    outs = ["y", "h"] + (["last"] if with_last else [])
    tb = {0: "B", 1: "T"} if batch_first else {0: "T", 1: "B"}
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(sm, (xs[0],), f, opset_version=opset, input_names=["x"], output_names=outs,
                          dynamic_axes={"x": tb, "y": tb, "h": {0: "B"}, "last": {0: "B"}})
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    loops = [n for n in model.graph.node if n.op_type == "Loop"]
    assert len(loops) == 1, "expected one Loop, got %s" % [n.op_type for n in model.graph.node]
    sets = []
    for x in xs:
        with torch.no_grad():
            want = [a.numpy() for a in ref(x)]
            if with_last:
                want.append(want[0][:, -1] if batch_first else want[0][-1])
            got = [a.numpy() for a in sm(x)]
        for a, b in zip(want, got):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-6), "scripted module disagrees with ref_momentum"
        sets.append(([x.numpy()], want))
    tag = ("_bf" if batch_first else "") + ("_last" if with_last else "")
    write_case(os.path.join(outdir, "scripted", "%s_opset%d%s" % (name, opset, tag)), model, sets, ["x"],
               outs)


# ---- 2. hand-written Loop/Scan models ---------------------------------------------

def f32(*shape, rng):
    return rng.standard_normal(shape).astype(np.float32)


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def save_graph(outdir, name, nodes, inputs, outputs, inits, opset, sets, dyn_out=False):
    # output types from the expected values (dyn_out: rank only, the sets' lengths differ)
    outputs = [vi(o.name, TensorProto.FLOAT, [None] * a.ndim if dyn_out else list(a.shape))
               for o, a in zip(outputs, sets[0][1])]
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    write_case(os.path.join(outdir, "onnx", name), model, sets, [i.name for i in inputs],
               [o.name for o in outputs])


def scan_ref(inits, xs, body, in_axes, in_dirs, out_axes, out_dirs):
    """Scan (opset 9+) from the specification: body(states, slices) ->
    (states, outputs)."""
    T = xs[0].shape[in_axes[0]]
    st = list(inits)
    outs = None
    for i in range(T):
        sl = [np.take(x, T - 1 - i if d else i, axis=a) for x, a, d in zip(xs, in_axes, in_dirs)]
        st, ys = body(st, sl)
        if outs is None:
            outs = [[None] * T for _ in ys]
        for k, y in enumerate(ys):
            outs[k][T - 1 - i if out_dirs[k] else i] = y
    return st, [np.stack(o, axis=a) for o, a in zip(outs, out_axes)]


def onnx_cases(outdir):
    rng = np.random.default_rng(7)
    # (a) Scan-9+ with an axis-1 input scanned in reverse, a forward axis-0
    #     input, and outputs on axis 1 (prepended) and axis 0: an
    #     Elman-style body with a captured weight.
    W = f32(4, 4, rng=rng) * 0.5
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
         helper.make_node("Add", ["hw", "xa"], ["s1"]),
         helper.make_node("Mul", ["s1", "xb"], ["s2"]),
         helper.make_node("Tanh", ["s2"], ["h_out"]),
         helper.make_node("Add", ["h_out", "xb"], ["y0"]),
         helper.make_node("Sigmoid", ["h_out"], ["y1"])],
        "scan_body",
        [vi("h_in", TensorProto.FLOAT, [2, 4]), vi("xa", TensorProto.FLOAT, [2, 4]),
         vi("xb", TensorProto.FLOAT, [2, 4])],
        [vi("h_out", TensorProto.FLOAT, [2, 4]), vi("y0", TensorProto.FLOAT, [2, 4]),
         vi("y1", TensorProto.FLOAT, [2, 4])])
    node = helper.make_node("Scan", ["h0", "xa", "xb"], ["hT", "y0s", "y1s"], body=body, num_scan_inputs=2,
                            scan_input_axes=[1, 0], scan_input_directions=[1, 0],
                            scan_output_axes=[1, 0], scan_output_directions=[1, 0])
    T = 6
    h0, xa, xb = f32(2, 4, rng=rng), f32(2, T, 4, rng=rng), f32(T, 2, 4, rng=rng)

    def elman(st, sl):
        h = np.tanh((st[0] @ W + sl[0]) * sl[1]).astype(np.float32)
        return [h], [h + sl[1], 1 / (1 + np.exp(-h))]
    (hT,), (y0s, y1s) = scan_ref([h0], [xa, xb], elman, [1, 0], [1, 0], [1, 0], [1, 0])
    save_graph(outdir, "scan_axes_directions", [node],
               [vi("h0", TensorProto.FLOAT, [2, 4]), vi("xa", TensorProto.FLOAT, [2, T, 4]),
                vi("xb", TensorProto.FLOAT, [T, 2, 4])],
               [vi("hT", TensorProto.FLOAT, None), vi("y0s", TensorProto.FLOAT, None),
                vi("y1s", TensorProto.FLOAT, None)],
               [numpy_helper.from_array(W, "W")], 16,
               [([h0, xa, xb], [hT, y0s.astype(np.float32), y1s.astype(np.float32)])])

    # (b) Scan-8: batch axis 0 (batch 1), scan axis 1, reversed, two states.
    body8 = helper.make_graph(
        [helper.make_node("Add", ["a_in", "x"], ["a_out"]),
         helper.make_node("Mul", ["b_in", "x"], ["b_out"]),
         helper.make_node("Sub", ["a_out", "b_out"], ["y"])],
        "scan8_body",
        [vi("a_in", TensorProto.FLOAT, [3]), vi("b_in", TensorProto.FLOAT, [3]), vi("x", TensorProto.FLOAT, [3])],
        [vi("a_out", TensorProto.FLOAT, [3]), vi("b_out", TensorProto.FLOAT, [3]), vi("y", TensorProto.FLOAT, [3])])
    node8 = helper.make_node("Scan", ["", "a0", "b0", "x"], ["aT", "bT", "ys"], body=body8, num_scan_inputs=1,
                             directions=[1])
    T = 5
    a0, b0, x = f32(1, 3, rng=rng), f32(1, 3, rng=rng), f32(1, T, 3, rng=rng)
    a, b = a0[0], b0[0]
    ys = [None] * T
    for i in range(T):
        xt = x[0, T - 1 - i]
        a, b = a + xt, b * xt
        ys[i] = a - b
    save_graph(outdir, "scan8_reverse", [node8],
               [vi("a0", TensorProto.FLOAT, [1, 3]), vi("b0", TensorProto.FLOAT, [1, 3]),
                vi("x", TensorProto.FLOAT, [1, T, 3])],
               [vi("aT", TensorProto.FLOAT, None), vi("bT", TensorProto.FLOAT, None),
                vi("ys", TensorProto.FLOAT, None)], [], 8,
               [([a0, b0, x], [a[None], b[None], np.stack(ys)[None].astype(np.float32)])])

    # (c) Loop-13 with a constant trip count (smaller than x's length), the
    #     condition passed through, x[t] by Gather on an input and on a
    #     captured weight (both longer than the trip count), a Gemm by a
    #     captured weight, one scan output.  (x[t:t+1] by Slice: the official
    #     test_loop11.)
    W2 = f32(3, 3, rng=rng) * 0.5
    lbody = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Gather", ["x", "it"], ["xt"], axis=0),
         helper.make_node("Gather", ["z", "it"], ["zt"], axis=0),
         helper.make_node("Gemm", ["h_in", "W2"], ["hw"]),
         helper.make_node("Add", ["hw", "xt"], ["s"]),
         helper.make_node("Mul", ["s", "zt"], ["s2"]),
         helper.make_node("Tanh", ["s2"], ["h_out"]),
         helper.make_node("Relu", ["h_out"], ["y"])],
        "loop_body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("h_in", TensorProto.FLOAT, [2, 3])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2, 3]),
         vi("y", TensorProto.FLOAT, [2, 3])],
        initializer=[])
    M = 5
    lnode = helper.make_node("Loop", ["M", "cond", "h0"], ["hT", "ys"], body=lbody)
    h0, x, z = f32(2, 3, rng=rng), f32(7, 2, 3, rng=rng), f32(6, 2, 3, rng=rng)
    h, ys = h0, []
    for i in range(M):
        h = np.tanh((h @ W2 + x[i]) * z[i]).astype(np.float32)
        ys.append(np.maximum(h, 0))
    save_graph(outdir, "loop_const_trip", [lnode],
               [vi("h0", TensorProto.FLOAT, [2, 3]), vi("x", TensorProto.FLOAT, [7, 2, 3])],
               [vi("hT", TensorProto.FLOAT, None), vi("ys", TensorProto.FLOAT, None)],
               [numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(z, "z"),
                numpy_helper.from_array(np.array(M, np.int64), "M"),
                numpy_helper.from_array(np.array(True), "cond")], 13,
               [([h0, x], [h, np.stack(ys)])])

    # (c2) an early exit: M = 20 and the body's condition h[0] != 0 (a bool
    #     Cast of the state's first element), a scan output; data set 0
    #     stops after 3 iterations, data set 1 runs all 20 (the loop of
    #     the specification: the condition a body returns decides the next
    #     iteration)
    ebody = helper.make_graph(
        [helper.make_node("Add", ["h_in", "one_f"], ["h_out"]),
         helper.make_node("Mul", ["h_out", "two_f"], ["y"]),
         helper.make_node("Gather", ["h_out", "i0"], ["e"], axis=0),
         helper.make_node("Cast", ["e"], ["c_out"], to=TensorProto.BOOL)],
        "exit_body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("h_in", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2]), vi("y", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.array(1, np.float32), "one_f"),
                     numpy_helper.from_array(np.array(2, np.float32), "two_f"),
                     numpy_helper.from_array(np.array(0, np.int64), "i0")])
    sets = []
    for h0 in (np.array([-3, 5], np.float32), np.array([-30.5, 1], np.float32)):
        h, ys = h0, []
        for i in range(20):
            h = (h + 1).astype(np.float32)
            ys.append(h * 2)
            if h[0] == 0:
                break
        sets.append(([h0], [h, np.stack(ys)]))
    assert len(sets[0][1][1]) == 3 and len(sets[1][1][1]) == 20
    save_graph(outdir, "loop_early_exit", [helper.make_node("Loop", ["M", "", "h0"], ["hT", "ys"], body=ebody)],
               [vi("h0", TensorProto.FLOAT, [2])],
               [vi("hT", TensorProto.FLOAT, None), vi("ys", TensorProto.FLOAT, None)],
               [numpy_helper.from_array(np.array(20, np.int64), "M")], 13, sets, dyn_out=True)

    # (d) the trip count Shape(x)[0] with the index an initializer (not a
    #     Constant), x of symbolic length: the Gather folds to the symbol,
    #     a constant however its operands are stored (a fuzzed seed found
    #     it made a weight without data); two data sets of other lengths
    W3 = f32(3, 3, rng=rng) * 0.5
    dbody = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Gather", ["x", "it"], ["xt"], axis=0),
         helper.make_node("MatMul", ["h_in", "W3"], ["hw"]),
         helper.make_node("Add", ["hw", "xt"], ["s"]),
         helper.make_node("Tanh", ["s"], ["h_out"])],
        "sym_trip_body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("h_in", TensorProto.FLOAT, [2, 3])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2, 3]),
         vi("h_out", TensorProto.FLOAT, [2, 3])])
    sets = []
    for T in (4, 9):
        h0, x = f32(2, 3, rng=rng), f32(T, 2, 3, rng=rng)
        h, ys = h0, []
        for i in range(T):
            h = np.tanh(h @ W3 + x[i]).astype(np.float32)
            ys.append(h)
        sets.append(([h0, x], [h, np.stack(ys)]))
    save_graph(outdir, "loop_sym_trip_init_index",
               [helper.make_node("Shape", ["x"], ["shape"]),
                helper.make_node("Gather", ["shape", "zero"], ["T"], axis=0),
                helper.make_node("Loop", ["T", "", "h0"], ["hT", "ys"], body=dbody)],
               [vi("h0", TensorProto.FLOAT, [2, 3]), vi("x", TensorProto.FLOAT, ["T", 2, 3])],
               [vi("hT", TensorProto.FLOAT, None), vi("ys", TensorProto.FLOAT, None)],
               [numpy_helper.from_array(W3, "W3"), numpy_helper.from_array(np.array(0, np.int64), "zero")], 13,
               sets, dyn_out=True)

    # (e) an If in a Loop body on the iteration number (it % 2 == 0) and on
    #     the data (sum(h) > 0): both branches computed, Where selects
    #     (compiler/passes/lower_seq.c); the branches read the carried state
    def if_body(name, cond_nodes):
        then_g = helper.make_graph([helper.make_node("Mul", ["h_in", "two"], ["ta"]),
                                    helper.make_node("Add", ["ta", "xi"], ["a"])], "then", [],
                                   [vi("a", TensorProto.FLOAT, [2, 3])],
                                   initializer=[numpy_helper.from_array(np.array(0.5, np.float32), "two")])
        else_g = helper.make_graph([helper.make_node("Sub", ["xi", "h_in"], ["b"])], "else", [],
                                   [vi("b", TensorProto.FLOAT, [2, 3])])
        return helper.make_graph(
            cond_nodes + [helper.make_node("If", ["flag"], ["h_out"], then_branch=then_g, else_branch=else_g),
                          helper.make_node("Tanh", ["h_out"], ["y"])],
            name + "_body",
            [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
             vi("h_in", TensorProto.FLOAT, [2, 3])],
            [vi("c_in", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2, 3]),
             vi("y", TensorProto.FLOAT, [2, 3])])
    counter = [helper.make_node("Mod", ["it", "two_i"], ["m"]),
               helper.make_node("Equal", ["m", "zero_i"], ["flag"])]
    data = [helper.make_node("ReduceSum", ["h_in"], ["sum"], keepdims=0),
            helper.make_node("Greater", ["sum", "zero_f"], ["flag"])]
    M = 5
    h0, xi = f32(2, 3, rng=rng), f32(2, 3, rng=rng)
    for name, cnodes, pick in (("loop_if_counter", counter, lambda i, h: i % 2 == 0),
                               ("loop_if_data", data, lambda i, h: h.sum() > 0)):
        h, ys = h0, []
        for i in range(M):
            h = (h * np.float32(0.5) + xi) if pick(i, h) else (xi - h)
            ys.append(np.tanh(h))
        lnode = helper.make_node("Loop", ["M", "", "h0"], ["hT", "ys"], body=if_body(name, cnodes))
        save_graph(outdir, name, [lnode], [vi("h0", TensorProto.FLOAT, [2, 3]), vi("xi", TensorProto.FLOAT, [2, 3])],
                   [vi("hT", TensorProto.FLOAT, None), vi("ys", TensorProto.FLOAT, None)],
                   [numpy_helper.from_array(np.array(M, np.int64), "M"),
                    numpy_helper.from_array(np.array(2, np.int64), "two_i"),
                    numpy_helper.from_array(np.array(0, np.int64), "zero_i"),
                    numpy_helper.from_array(np.array(0, np.float32), "zero_f")], 13,
                   [([h0, xi], [h.astype(np.float32), np.stack(ys).astype(np.float32)])])


# ---- 2b. a Loop carrying a ragged sequence (unrolled by compiler/passes/lower_seq.c) --------

def seq_cases(outdir):
    """A Loop whose carried sequence gains a tensor of another shape each
    iteration (h_t[:, :t+1]), started from SequenceConstruct(h0), beside a
    carried tensor and a scan output, computed from run-time inputs; the
    sequence is a graph output (compared tensor by tensor) and is read by
    SequenceLength and SequenceAt; and a SequenceEmpty accumulation whose
    sequence is a graph output.  Expected values from numpy."""
    rng = np.random.default_rng(11)
    W2 = f32(3, 3, rng=rng) * 0.5
    seq_t = helper.make_tensor_sequence_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("MatMul", ["h_in", "W2"], ["hw"]),
         helper.make_node("Add", ["hw", "x"], ["s"]),
         helper.make_node("Tanh", ["s"], ["h_out"]),
         helper.make_node("Add", ["it", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["end", "zero"], ["ends"]),
         helper.make_node("Slice", ["h_out", "zero", "ends", "one1"], ["part"]),
         helper.make_node("SequenceInsert", ["s_in", "part"], ["s_out"]),
         helper.make_node("Relu", ["h_out"], ["y"])],
        "seq_body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("h_in", TensorProto.FLOAT, [2, 3]), seq_t("s_in", TensorProto.FLOAT, [2, "k"])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2, 3]),
         seq_t("s_out", TensorProto.FLOAT, [2, "k"]), vi("y", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(np.array(1, np.int64), "one"),
                     numpy_helper.from_array(np.array([0], np.int64), "zero"),
                     numpy_helper.from_array(np.array([1], np.int64), "one1")])
    M = 3
    nodes = [helper.make_node("SequenceConstruct", ["h0"], ["s0"]),
             helper.make_node("Loop", ["M", "", "h0", "s0"], ["hT", "sT", "ys"], body=body),
             helper.make_node("SequenceLength", ["sT"], ["n"]),
             helper.make_node("SequenceAt", ["sT", "minus1"], ["last"])]
    h0, x = f32(2, 3, rng=rng), f32(2, 3, rng=rng)
    h, parts, ys = h0, [h0], []
    for i in range(M):
        h = np.tanh(h @ W2 + x).astype(np.float32)
        parts.append(h[:, :i + 1])
        ys.append(np.maximum(h, 0))
    graph = helper.make_graph(
        nodes, "loop_ragged_seq",
        [vi("h0", TensorProto.FLOAT, [2, 3]), vi("x", TensorProto.FLOAT, [2, 3])],
        [vi("hT", TensorProto.FLOAT, [2, 3]), seq_t("sT", TensorProto.FLOAT, [2, "k"]),
         vi("ys", TensorProto.FLOAT, [M, 2, 3]), vi("n", TensorProto.INT64, []),
         vi("last", TensorProto.FLOAT, [2, M])],
        initializer=[numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(np.array(M, np.int64), "M"),
                     numpy_helper.from_array(np.array(-1, np.int64), "minus1")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    d = os.path.join(outdir, "onnx", "loop_ragged_seq")
    write_case(d, model, [([h0, x], [])], ["h0", "x"], [])
    ds = os.path.join(d, "test_data_set_0")
    outs = [h, parts, np.stack(ys), np.array(M + 1, np.int64), parts[-1]]
    for j, (name, a) in enumerate(zip(["hT", "sT", "ys", "n", "last"], outs)):
        msg = (numpy_helper.from_list([np.ascontiguousarray(p) for p in a], name) if isinstance(a, list)
               else numpy_helper.from_array(a if a.ndim == 0 else np.ascontiguousarray(a), name))
        with open(os.path.join(ds, "output_%d.pb" % j), "wb") as f:
            f.write(msg.SerializeToString())
    # SequenceEmpty accumulation (what scripted exports write) whose sequence
    # is a graph output: unrolled into sT2_0..sT2_{M-1}
    acc = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("MatMul", ["h_in", "W2"], ["hw"]),
         helper.make_node("Add", ["hw", "x"], ["s"]),
         helper.make_node("Tanh", ["s"], ["h_out"]),
         helper.make_node("Relu", ["h_out"], ["y"]),
         helper.make_node("SequenceInsert", ["s_in", "y"], ["s_out"])],
        "acc_body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         vi("h_in", TensorProto.FLOAT, [2, 3]), seq_t("s_in", TensorProto.FLOAT, [2, 3])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2, 3]),
         seq_t("s_out", TensorProto.FLOAT, [2, 3])])
    g2 = helper.make_graph(
        [helper.make_node("SequenceEmpty", [], ["e"], dtype=TensorProto.FLOAT),
         helper.make_node("Loop", ["M", "", "h0", "e"], ["hT", "sT2"], body=acc)],
        "loop_seq_output",
        [vi("h0", TensorProto.FLOAT, [2, 3]), vi("x", TensorProto.FLOAT, [2, 3])],
        [vi("hT", TensorProto.FLOAT, [2, 3]), seq_t("sT2", TensorProto.FLOAT, [2, 3])],
        initializer=[numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(np.array(M, np.int64), "M")])
    m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 13)])
    m2.ir_version = 7
    onnx.checker.check_model(m2)
    d2 = os.path.join(outdir, "onnx", "loop_seq_output")
    write_case(d2, m2, [([h0, x], [])], ["h0", "x"], [])
    with open(os.path.join(d2, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(h, "hT").SerializeToString())
    with open(os.path.join(d2, "test_data_set_0", "output_1.pb"), "wb") as f:
        f.write(numpy_helper.from_list(ys, "sT2").SerializeToString())
    # the same data with one element of the sequence's tensor 2 off by 1e-3:
    # verify must fail on sT_2 alone (harness.py, loop/seq_perturbed)
    bad = os.path.join(d, "perturbed")
    shutil.copytree(ds, bad)
    parts[2] = parts[2].copy()
    parts[2][1, 1] += 1e-3
    with open(os.path.join(bad, "output_1.pb"), "wb") as f:
        f.write(numpy_helper.from_list([np.ascontiguousarray(p) for p in parts], "sT").SerializeToString())


# ---- 3. models cellc must refuse ------------------------------------------------------

def bad_cases(outdir):
    def save(name, nodes, inputs, outputs, inits, expect):
        graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 7
        onnx.checker.check_model(model)
        d = os.path.join(outdir, "bad", name)
        os.makedirs(d, exist_ok=True)
        onnx.save(model, os.path.join(d, "model.onnx"))
        with open(os.path.join(d, "expect.txt"), "w") as f:
            f.write(expect + "\n")

    # the body's condition depends on the state and nothing bounds the
    # iterations (no M): a `while` cellc cannot size
    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "one_f"], ["h_out"]),
         helper.make_node("Gather", ["h_out", "i0"], ["e"], axis=0),
         helper.make_node("Cast", ["e"], ["c_out"], to=TensorProto.BOOL)],
        "body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("h_in", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.array(1, np.float32), "one_f"),
                     numpy_helper.from_array(np.array(0, np.int64), "i0")])
    save("loop_unbounded_cond", [helper.make_node("Loop", ["", "c0", "h0"], ["hT"], body=body)],
         [vi("h0", TensorProto.FLOAT, [2])], [vi("hT", TensorProto.FLOAT, [2])],
         [numpy_helper.from_array(np.array(True), "c0")],
         "its condition bounds the iterations by no value cellc can follow")
    # same body without the early exit, but M is computed at run time from
    # data (the longest of the lengths: a value no size of the model states;
    # an input that is M itself is a size, tests/gen_size_inputs.py)
    body2 = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["h_in", "one_f"], ["h_out"])],
        "body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("h_in", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.array(1, np.float32), "one_f")])
    save("loop_runtime_trip_count",
         [helper.make_node("ReduceMax", ["lens"], ["longest"], keepdims=0),
          helper.make_node("Cast", ["longest"], ["M"], to=TensorProto.INT64),
          helper.make_node("Loop", ["M", "", "h0"], ["hT"], body=body2)],
         [vi("lens", TensorProto.FLOAT, [3]), vi("h0", TensorProto.FLOAT, [2])], [vi("hT", TensorProto.FLOAT, [2])],
         [], "trip count M ('M') is not a compile-time constant")

    # ---- sequences resolved at compile time (compiler/passes/lower_seq.c): the forms
    # whose length, positions or branches depend on run-time data
    seq_t = helper.make_tensor_sequence_value_info
    seq_body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])],
        "body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         seq_t("s_in", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), seq_t("s_out", TensorProto.FLOAT, [2])])
    x2 = numpy_helper.from_array(np.ones(2, np.float32), "x")
    construct = helper.make_node("SequenceConstruct", ["x"], ["s0"])
    cat = helper.make_node("ConcatFromSequence", ["sT"], ["y"], axis=0)
    save("seq_loop_runtime_trip_count",
         [construct, helper.make_node("Loop", ["M", "", "s0"], ["sT"], body=seq_body), cat],
         [vi("M", TensorProto.INT64, [])], [vi("y", TensorProto.FLOAT, ["n"])], [x2],
         "carries a sequence and has no constant trip count M")
    save("seq_loop_too_long",
         [construct, helper.make_node("Loop", ["M", "", "s0"], ["sT"], body=seq_body), cat],
         [], [vi("y", TensorProto.FLOAT, ["n"])],
         [x2, numpy_helper.from_array(np.array(5000, np.int64), "M")],
         "it runs 5000 iterations, more than the 1024 cellc unrolls")
    flag_body = helper.make_graph(
        [helper.make_node("Identity", ["flag"], ["c_out"]),
         helper.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])],
        "body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
         seq_t("s_in", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), seq_t("s_out", TensorProto.FLOAT, [2])])
    save("seq_loop_data_dependent_cond",
         [construct, helper.make_node("Loop", ["M", "", "s0"], ["sT"], body=flag_body), cat],
         [vi("flag", TensorProto.BOOL, [])], [vi("y", TensorProto.FLOAT, ["n"])],
         [x2, numpy_helper.from_array(np.array(3, np.int64), "M")],
         "the body's condition output is not a compile-time constant in iteration 0")
    save("seq_insert_runtime_position",
         [construct, helper.make_node("SequenceInsert", ["s0", "x", "pos"], ["s1"]),
          helper.make_node("ConcatFromSequence", ["s1"], ["y"], axis=0)],
         [vi("pos", TensorProto.INT64, [])], [vi("y", TensorProto.FLOAT, ["n"])], [x2],
         "position 'pos' is not a compile-time constant")
    # a top-level If on a flag input is a C branch (tests/gen_data_if.py), but
    # only where its branches agree in shape: one [2], the other [4]
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["a"])], "then", [],
                               [vi("a", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["b"], axis=0)], "else", [],
                               [vi("b", TensorProto.FLOAT, [4])])
    save("if_runtime_cond",
         [helper.make_node("If", ["flag"], ["y"], then_branch=then_g, else_branch=else_g)],
         [vi("flag", TensorProto.BOOL, [])], [vi("y", TensorProto.FLOAT, [None])], [x2],
         "which needs one shape; the condition is computed from graph input(s) 'flag', which --bind can fix")
    # in a loop body a run-time If is a select of both branches, which needs
    # one shape from both
    then_g = helper.make_graph([helper.make_node("Identity", ["h_in"], ["a"])], "then", [],
                               [vi("a", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Concat", ["h_in", "h_in"], ["b"], axis=0)], "else", [],
                               [vi("b", TensorProto.FLOAT, [4])])
    sel_body = helper.make_graph(
        [helper.make_node("Equal", ["it", "i0"], ["first"]),
         helper.make_node("If", ["first"], ["y"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["h_in"], ["h_out"])],
        "body",
        [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("h_in", TensorProto.FLOAT, [2])],
        [vi("c_in", TensorProto.BOOL, []), vi("h_out", TensorProto.FLOAT, [2]), vi("y", TensorProto.FLOAT, [2])])
    save("loop_if_shapes",
         [helper.make_node("Loop", ["M", "", "x"], ["hT", "ys"], body=sel_body)],
         [], [vi("hT", TensorProto.FLOAT, [2]), vi("ys", TensorProto.FLOAT, ["n", 2])],
         [x2, numpy_helper.from_array(np.array(3, np.int64), "M"),
          numpy_helper.from_array(np.array(0, np.int64), "i0")],
         "the branches of an If with a data-dependent condition give")
    save("seq_input_unbound",
         [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)],
         [seq_t("s", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, ["n"])], [],
         "graph input 's' is a sequence; cellc resolves sequences and optionals at compile time: "
         "bind it with --bind s=FILE.pb")
    # malformed or mismatched bindings of a sequence input (compile --bind
    # s=FILE.pb, run by the sanitizer build: harness.py loop/bind/*)
    d = os.path.join(outdir, "bad_bind")
    os.makedirs(d, exist_ok=True)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)], "seq_bind",
        [seq_t("s", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, ["n"])]),
        opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, os.path.join(d, "model.onnx"))
    good = numpy_helper.from_list([np.ones(2, np.float32), np.zeros(2, np.float32)], "s").SerializeToString()
    files = {
        "truncated": (good[:len(good) - 3], "not a valid SequenceProto file"),
        "tensor_proto": (numpy_helper.from_array(np.ones(2, np.float32), "s").SerializeToString(),
                         "not a valid SequenceProto"),
        "int64_elements": (numpy_helper.from_list([np.ones(2, np.int64)], "s").SerializeToString(),
                           "holds INT64 tensors; the model declares FLOAT"),
        "garbage": (bytes(range(256)) * 4, "not a valid SequenceProto file"),
        "nested": (numpy_helper.from_list([[np.ones(2, np.float32)]], "s").SerializeToString(),
                   "holds values other than tensors"),
        "empty_concat": (numpy_helper.from_list([], "s", dtype=TensorProto.FLOAT).SerializeToString(),
                         "ConcatFromSequence of an empty sequence"),
    }
    with open(os.path.join(d, "cases.tsv"), "w") as f:
        for name, (data, expect) in sorted(files.items()):
            with open(os.path.join(d, name + ".pb"), "wb") as g:
                g.write(data)
            f.write("%s\t%s\n" % (name, expect))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_loop_cases.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    n = 0
    for k, name in enumerate(ref_scripted.MODELS):
        for j, opset in enumerate((13, 14, 17)):
            scripted_case(out, name, opset, 4000 + 10 * k + j)
            n += 1
    scripted_case(out, "momentum_lstm", 14, 4900, batch_first=True, with_last=True)
    scripted_case(out, "momentum_gru", 17, 4901, with_last=True)
    n += 2
    onnx_cases(out)
    seq_cases(out)
    bad_cases(out)
    print("gen_loop_cases: %d scripted cases, onnx and bad cases in %s" % (n, out))


if __name__ == "__main__":
    main()
