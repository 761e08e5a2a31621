"""gen_rnn_cases.py: our own ONNX-format test cases for what the official node
tests miss, in the ONNX backend layout (CASE/model.onnx, CASE/test_data_set_N/
input_K.pb, output_K.pb) so that `cellc verify` checks them.

Expected outputs come from oracles outside cellc only:
  - LSTM / GRU / RNN: tests/ref_rnn.py, the numpy reference written from the
    ONNX specification (itself checked against the official data and PyTorch
    by test_ref_rnn.py);
  - the opset variants of Squeeze/Unsqueeze/Split/Slice/Softmax/LogSoftmax:
    a few lines of numpy next to each case, following the specification of
    the opset the model declares;
  - Einsum equations beyond the official five (implicit output, ellipses in
    several places, diagonals, three operands, upper-case labels): numpy's
    einsum; DFT options (onesided, dft_length padding and cutting, complex
    input, inverse, other axes): numpy's fft; Det of a batch: numpy's det.
Weights are random from fixed seeds, so the output is reproducible.

Coverage: directions forward/reverse/bidirectional, layout 0/1, sequence_lens
with unequal lengths (also with reverse and bidirectional), clip,
input_forget, peepholes, non-default activations with activation_alpha/beta,
every subset of outputs, GRU linear_before_reset 0/1, initial_h/initial_c,
symbolic dims with two data sets of different sizes, opset 7 RNN ops,
initializers as typed fields, raw_data and external data files.

usage: gen_rnn_cases.py OUTDIR
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_rnn import rnn_ref  # noqa: E402

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def vinfo(name, arr_or_dtype, shape=None):
    if shape is None:
        arr = arr_or_dtype
        return helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype], arr.shape)
    return helper.make_tensor_value_info(name, arr_or_dtype, shape)


def tensor(name, arr, storage="raw"):
    """Initializer in raw_data ("raw") or in the typed repeated field ("typed")."""
    if storage == "raw":
        return numpy_helper.from_array(arr, name)
    dt = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype]
    return helper.make_tensor(name, dt, arr.shape, arr.flatten().tolist(), raw=False)


def write(outdir, name, model, datasets, external=None):
    """datasets: list of (inputs, outputs), arrays in graph input/output order.
    external: dict of onnx.save keyword arguments for external data."""
    d = os.path.join(outdir, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.checker.check_model(model)
    path = os.path.join(d, "model.onnx")
    if external:
        sub = os.path.dirname(external.get("location", ""))
        if sub:
            os.makedirs(os.path.join(d, sub))
        onnx.save_model(model, path, save_as_external_data=True, size_threshold=0, **external)
    else:
        onnx.save_model(model, path)
    g = model.graph
    for k, (ins, outs) in enumerate(datasets):
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        assert len(ins) == len(g.input) and len(outs) == len(g.output), name
        for j, (vi, a) in enumerate(zip(g.input, ins)):
            with open(os.path.join(ds, "input_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(a, vi.name).SerializeToString())
        for j, (vi, a) in enumerate(zip(g.output, outs)):
            with open(os.path.join(ds, "output_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(a, vi.name).SerializeToString())


# ---- LSTM / GRU / RNN -------------------------------------------------------

NGATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def rnn_case(outdir, name, op, seed, T=6, B=3, I=4, H=5, direction="forward",
             layout=0, lens=None, lens_as="input", init_h=False, init_c=False,
             peep=False, bias=True, outputs=("Y", "Y_h", "Y_c"), opset=14,
             weight_scale=1.0, storage="raw", external=None, sym_dims=None,
             extra_sets=(), **attrs):
    """Builds one single-node model with W/R/B/P as initializers and X,
    sequence_lens, initial_h, initial_c as graph inputs (sequence_lens may be
    an initializer instead: lens_as="init"), and writes it with its expected
    outputs from ref_rnn.  extra_sets: more (T, B, lens) data sets for models
    with symbolic dims."""
    rng = np.random.RandomState(seed)
    D = 2 if direction == "bidirectional" else 1
    G = NGATES[op]
    W = (rng.randn(D, G * H, I) * 0.5 * weight_scale).astype(np.float32)
    R = (rng.randn(D, G * H, H) * 0.5 * weight_scale).astype(np.float32)
    Bv = (rng.randn(D, 2 * G * H) * 0.3).astype(np.float32) if bias else None
    P = (rng.randn(D, 3 * H) * 0.5).astype(np.float32) if peep else None
    if op != "LSTM":
        outputs = tuple(o for o in outputs if o != "Y_c")

    inits = [tensor("W", W, storage), tensor("R", R, storage)]
    if Bv is not None:
        inits.append(tensor("B", Bv, storage))
    if P is not None:
        inits.append(tensor("P", P, storage))
    sym = sym_dims or {}
    tdim, bdim = sym.get("T", T), sym.get("B", B)
    xshape = [bdim, tdim, I] if layout else [tdim, bdim, I]
    sshape = [bdim, D, H] if layout else [D, bdim, H]
    yshape = [bdim, tdim, D, H] if layout else [tdim, D, bdim, H]
    graph_inputs = [vinfo("X", TensorProto.FLOAT, xshape)]
    node_inputs = ["X", "W", "R", "B" if Bv is not None else ""]
    if lens is not None:
        if lens_as == "input":
            graph_inputs.append(vinfo("sequence_lens", TensorProto.INT32, [bdim]))
        else:
            inits.append(tensor("sequence_lens", np.array(lens, np.int32), storage))
        node_inputs.append("sequence_lens")
    else:
        node_inputs.append("")
    if init_h:
        graph_inputs.append(vinfo("initial_h", TensorProto.FLOAT, sshape))
    node_inputs.append("initial_h" if init_h else "")
    if op == "LSTM":
        if init_c:
            graph_inputs.append(vinfo("initial_c", TensorProto.FLOAT, sshape))
        node_inputs += ["initial_c" if init_c else "", "P" if peep else ""]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    all_outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    node_outputs = [o if o in outputs else "" for o in all_outs]
    while node_outputs[-1] == "":
        node_outputs.pop()
    oshape = {"Y": yshape, "Y_h": sshape, "Y_c": sshape}
    graph_outputs = [vinfo(o, TensorProto.FLOAT, oshape[o]) for o in all_outs if o in outputs]
    node_attrs = dict(hidden_size=H, **attrs)
    if direction != "forward":
        node_attrs["direction"] = direction
    if layout:
        node_attrs["layout"] = layout
    node = helper.make_node(op, node_inputs, node_outputs, name=name + "_node", **node_attrs)
    graph = helper.make_graph([node], name, graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="cellc-tests")

    datasets = []
    for (t, b, ls) in [(T, B, lens)] + list(extra_sets):
        X = rng.randn(*([b, t, I] if layout else [t, b, I])).astype(np.float32)
        h0 = rng.randn(*([b, D, H] if layout else [D, b, H])).astype(np.float32) if init_h else None
        c0 = rng.randn(*([b, D, H] if layout else [D, b, H])).astype(np.float32) if init_c else None
        refkw = dict(attrs)
        Y, Yh, Yc = rnn_ref(op, X, W, R, Bv, sequence_lens=ls, initial_h=h0, initial_c=c0,
                            P=P, hidden_size=H, direction=direction, layout=layout, **refkw)
        ins = [X]
        if ls is not None and lens_as == "input":
            ins.append(np.array(ls, np.int32))
        if init_h:
            ins.append(h0)
        if init_c and op == "LSTM":
            ins.append(c0)
        got = {"Y": Y, "Y_h": Yh, "Y_c": Yc}
        datasets.append((ins, [got[o] for o in all_outs if o in outputs]))
    write(outdir, name, model, datasets, external)


def lstm_rnn_cases():
    """(name, op, seed, kwargs) for every recurrent case."""
    acts3 = dict(activations=["HardSigmoid", "ScaledTanh", "LeakyRelu"],
                 activation_alpha=[0.3, 1.5, 0.05], activation_beta=[0.45, 0.8])
    # bidirectional: every activation takes alpha and the beta-takers come
    # first, so a positional and a consumed-in-order reading agree
    # (gates keep a bounded activation so that the values stay moderate)
    acts6 = dict(activations=["HardSigmoid", "ScaledTanh", "Affine", "HardSigmoid", "Elu", "ThresholdedRelu"],
                 activation_alpha=[0.25, 1.2, 0.9, 0.15, 0.7, 0.2], activation_beta=[0.55, 0.9, 0.1, 0.6])
    lens = [6, 2, 4]
    c = []
    add = lambda name, op, **kw: c.append((name, op, len(c) + 1, kw))
    # LSTM
    add("lstm_forward", "LSTM", init_h=True, init_c=True)
    add("lstm_forward_nobias", "LSTM", bias=False)
    add("lstm_reverse", "LSTM", direction="reverse", init_h=True, init_c=True)
    add("lstm_bidirectional", "LSTM", direction="bidirectional")
    add("lstm_bidirectional_init", "LSTM", direction="bidirectional", init_h=True, init_c=True)
    add("lstm_layout1", "LSTM", layout=1, init_h=True, init_c=True)
    add("lstm_bidirectional_layout1", "LSTM", direction="bidirectional", layout=1, init_h=True, init_c=True)
    add("lstm_seqlens", "LSTM", lens=lens)
    add("lstm_seqlens_const", "LSTM", lens=[3, 6, 1], lens_as="init")
    add("lstm_reverse_seqlens", "LSTM", direction="reverse", lens=lens, init_h=True, init_c=True)
    add("lstm_bidirectional_seqlens", "LSTM", direction="bidirectional", lens=lens, init_h=True, init_c=True)
    add("lstm_bidirectional_seqlens_layout1", "LSTM", direction="bidirectional", lens=[1, 6, 3], layout=1)
    add("lstm_clip", "LSTM", clip=0.7, weight_scale=3.0, init_h=True, init_c=True)
    add("lstm_bidirectional_clip", "LSTM", direction="bidirectional", clip=1.1, weight_scale=3.0)
    add("lstm_input_forget", "LSTM", input_forget=1, init_c=True)
    add("lstm_input_forget_peepholes", "LSTM", input_forget=1, peep=True, init_h=True, init_c=True)
    add("lstm_peepholes", "LSTM", peep=True, init_h=True, init_c=True)
    add("lstm_bidirectional_peepholes_seqlens", "LSTM", direction="bidirectional", peep=True, lens=lens)
    add("lstm_activations", "LSTM", **acts3)
    add("lstm_activations_noparam", "LSTM", activations=["Sigmoid", "Softsign", "Softplus"])
    add("lstm_bidirectional_activations", "LSTM", direction="bidirectional", **acts6)
    add("lstm_only_Y", "LSTM", outputs=("Y",))
    add("lstm_only_Y_h", "LSTM", outputs=("Y_h",), init_h=True)
    add("lstm_only_Y_c", "LSTM", outputs=("Y_c",), init_c=True)
    add("lstm_Y_h_Y_c", "LSTM", outputs=("Y_h", "Y_c"), direction="reverse")
    add("lstm_Y_Y_c", "LSTM", outputs=("Y", "Y_c"), direction="bidirectional")
    add("lstm_initial_h_only", "LSTM", init_h=True)
    add("lstm_initial_c_only", "LSTM", init_c=True)
    add("lstm_batch1", "LSTM", B=1, T=9, init_h=True, init_c=True)
    add("lstm_step1", "LSTM", T=1, B=2)
    add("lstm_wide", "LSTM", T=12, B=4, I=16, H=32, direction="bidirectional", lens=[12, 5, 9, 1])
    add("lstm_opset7", "LSTM", opset=7, direction="bidirectional", init_h=True, init_c=True)
    add("lstm_symbolic", "LSTM", sym_dims={"T": "T", "B": "N"}, lens=lens, init_h=True, init_c=True,
        extra_sets=[(3, 2, [3, 1]), (8, 4, [8, 7, 2, 5])])
    add("lstm_symbolic_reverse_layout1", "LSTM", sym_dims={"T": "T", "B": "N"}, layout=1,
        direction="reverse", extra_sets=[(11, 1, None)])
    # GRU
    add("gru_forward", "GRU", init_h=True)
    add("gru_forward_lbr", "GRU", linear_before_reset=1, init_h=True)
    add("gru_reverse", "GRU", direction="reverse")
    add("gru_reverse_lbr", "GRU", direction="reverse", linear_before_reset=1, init_h=True)
    add("gru_bidirectional", "GRU", direction="bidirectional", init_h=True)
    add("gru_bidirectional_lbr_seqlens", "GRU", direction="bidirectional", linear_before_reset=1, lens=lens)
    add("gru_reverse_seqlens", "GRU", direction="reverse", lens=lens, init_h=True)
    add("gru_layout1", "GRU", layout=1, init_h=True)
    add("gru_bidirectional_layout1_lbr", "GRU", direction="bidirectional", layout=1, linear_before_reset=1)
    add("gru_seqlens_layout1", "GRU", layout=1, lens=[2, 6, 5], init_h=True)
    add("gru_clip", "GRU", clip=0.6, weight_scale=3.0)
    add("gru_clip_lbr", "GRU", clip=0.6, weight_scale=3.0, linear_before_reset=1)
    add("gru_activations", "GRU", activations=["HardSigmoid", "ScaledTanh"],
        activation_alpha=[0.3, 1.3], activation_beta=[0.4, 0.7])
    add("gru_bidirectional_activations", "GRU", direction="bidirectional",
        activations=["HardSigmoid", "Affine", "HardSigmoid", "Elu"],
        activation_alpha=[0.3, 0.8, 0.15, 0.9], activation_beta=[0.45, -0.1, 0.55])
    add("gru_only_Y", "GRU", outputs=("Y",), linear_before_reset=1)
    add("gru_only_Y_h", "GRU", outputs=("Y_h",), lens=lens)
    add("gru_nobias", "GRU", bias=False)
    add("gru_batch1", "GRU", B=1, T=8, linear_before_reset=1)
    add("gru_opset7", "GRU", opset=7, direction="reverse", linear_before_reset=1)
    add("gru_symbolic", "GRU", sym_dims={"T": "T", "B": "N"}, init_h=True,
        extra_sets=[(2, 5, None)])
    # RNN
    add("rnn_forward", "RNN", init_h=True)
    add("rnn_reverse", "RNN", direction="reverse")
    add("rnn_reverse_seqlens", "RNN", direction="reverse", lens=lens, init_h=True)
    add("rnn_bidirectional", "RNN", direction="bidirectional", init_h=True)
    add("rnn_bidirectional_layout1_seqlens", "RNN", direction="bidirectional", layout=1, lens=[4, 6, 1])
    add("rnn_layout1", "RNN", layout=1)
    add("rnn_relu", "RNN", activations=["Relu"])
    add("rnn_leakyrelu_default_alpha", "RNN", activations=["LeakyRelu"])
    add("rnn_bidirectional_activations", "RNN", direction="bidirectional",
        activations=["Elu", "Softsign"], activation_alpha=[0.6])
    add("rnn_clip", "RNN", clip=0.4, weight_scale=3.0)
    add("rnn_only_Y", "RNN", outputs=("Y",))
    add("rnn_only_Y_h", "RNN", outputs=("Y_h",), direction="bidirectional")
    add("rnn_nobias_batch1", "RNN", bias=False, B=1, T=7)
    add("rnn_opset7", "RNN", opset=7)
    # initializer storage
    add("lstm_weights_typed", "LSTM", storage="typed", lens=[5, 6, 2], lens_as="init", peep=True)
    add("lstm_weights_external", "LSTM", peep=True, external=dict(all_tensors_to_one_file=True, location="weights.bin"))
    add("gru_weights_external_per_tensor", "GRU", external=dict(all_tensors_to_one_file=False))
    add("rnn_weights_external_subdir", "RNN", direction="bidirectional",
        external=dict(all_tensors_to_one_file=True, location="data/rnn_weights.bin"))
    return c


# ---- opset variants of the shape operators ------------------------------------

def single_node_case(outdir, name, opset, op, inputs, outputs, inits=(), **attrs):
    """inputs / outputs: [(name, array)]; inits: [(name, array, storage)]."""
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _, _ in inits],
                            [n for n, _ in outputs], name=name + "_node", **attrs)
    graph = helper.make_graph([node], name, [vinfo(n, a) for n, a in inputs],
                              [vinfo(n, a) for n, a in outputs],
                              [tensor(n, a, s) for n, a, s in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="cellc-tests")
    write(outdir, name, model, [([a for _, a in inputs], [a for _, a in outputs])])


def softmax_np(x, axis, log, legacy):
    """Softmax per the spec: opset < 13 coerces x to 2-D [prod(d[:axis]),
    prod(d[axis:])] and normalises each row; opset 13 normalises along axis."""
    x = x.astype(np.float64)
    if legacy:
        axis = axis % x.ndim
        x2 = x.reshape(int(np.prod(x.shape[:axis])), -1)
        m = x2 - x2.max(axis=1, keepdims=True)
        s = np.log(np.exp(m).sum(axis=1, keepdims=True))
        y = (m - s) if log else np.exp(m - s)
        return y.reshape(x.shape).astype(np.float32)
    m = x - x.max(axis=axis, keepdims=True)
    s = np.log(np.exp(m).sum(axis=axis, keepdims=True))
    return ((m - s) if log else np.exp(m - s)).astype(np.float32)


def shape_op_cases(outdir):
    rng = np.random.RandomState(1234)
    x = rng.randn(1, 3, 1, 4).astype(np.float32)
    i64 = lambda v: np.array(v, np.int64)
    S = single_node_case
    S(outdir, "squeeze_opset11_attr", 11, "Squeeze", [("x", x)], [("y", x.reshape(3, 4))], axes=[0, 2])
    S(outdir, "squeeze_opset11_negative_axes", 11, "Squeeze", [("x", x)], [("y", x.reshape(3, 1, 4))], axes=[-4])
    S(outdir, "squeeze_opset9_attr", 9, "Squeeze", [("x", x)], [("y", x.reshape(1, 3, 4))], axes=[2])
    S(outdir, "squeeze_opset11_all", 11, "Squeeze", [("x", x)], [("y", x.reshape(3, 4))])
    S(outdir, "squeeze_opset13_input", 13, "Squeeze", [("x", x)], [("y", x.reshape(3, 1, 4))],
      inits=[("axes", i64([0]), "raw")])
    S(outdir, "squeeze_opset13_typed_axes", 13, "Squeeze", [("x", x)], [("y", x.reshape(3, 4))],
      inits=[("axes", i64([-2, 0]), "typed")])
    S(outdir, "squeeze_opset13_all", 13, "Squeeze", [("x", x)], [("y", x.reshape(3, 4))])
    u = rng.randn(3, 4).astype(np.float32)
    S(outdir, "unsqueeze_opset11_attr", 11, "Unsqueeze", [("x", u)], [("y", u.reshape(1, 3, 4, 1))], axes=[0, 3])
    S(outdir, "unsqueeze_opset9_attr", 9, "Unsqueeze", [("x", u)], [("y", u.reshape(3, 1, 4))], axes=[1])
    S(outdir, "unsqueeze_opset11_negative", 11, "Unsqueeze", [("x", u)], [("y", u.reshape(3, 4, 1))], axes=[-1])
    S(outdir, "unsqueeze_opset13_input", 13, "Unsqueeze", [("x", u)], [("y", u.reshape(1, 3, 1, 4))],
      inits=[("axes", i64([2, 0]), "raw")])
    s = rng.randn(2, 5, 3).astype(np.float32)
    S(outdir, "split_opset11_attr", 11, "Split", [("x", s)], [("a", s[:, :2]), ("b", s[:, 2:])], axis=1, split=[2, 3])
    S(outdir, "split_opset9_attr", 9, "Split", [("x", s)], [("a", s[:, :, :1]), ("b", s[:, :, 1:])], axis=2, split=[1, 2])
    S(outdir, "split_opset11_equal", 11, "Split", [("x", s)], [("a", s[:1]), ("b", s[1:])])
    S(outdir, "split_opset13_input", 13, "Split", [("x", s)], [("a", s[:, :1]), ("b", s[:, 1:4]), ("c", s[:, 4:])],
      inits=[("split", i64([1, 3, 1]), "raw")], axis=1)
    S(outdir, "split_opset13_equal_negative_axis", 13, "Split", [("x", s)],
      [("a", s[..., :1]), ("b", s[..., 1:2]), ("c", s[..., 2:])], axis=-1)
    v = rng.randn(4, 6, 5).astype(np.float32)
    S(outdir, "slice_opset9_attr", 9, "Slice", [("x", v)], [("y", v[1:3, :, 2:5])], starts=[1, 2], ends=[3, 100], axes=[0, 2])
    S(outdir, "slice_opset9_default_axes", 9, "Slice", [("x", v)], [("y", v[0:2, 1:-1])], starts=[0, 1], ends=[2, -1])
    S(outdir, "slice_opset10_inputs", 10, "Slice", [("x", v)], [("y", v[:, 1:4])],
      inits=[("starts", i64([1]), "raw"), ("ends", i64([4]), "raw"), ("axes", i64([1]), "raw")])
    S(outdir, "slice_opset13_steps", 13, "Slice", [("x", v)], [("y", v[::-1, 5:0:-2, 1::2])],
      inits=[("starts", i64([-1, 5, 1]), "raw"), ("ends", i64([-1000, 0, 1000]), "raw"),
             ("axes", i64([0, 1, 2]), "raw"), ("steps", i64([-1, -2, 2]), "typed")])
    S(outdir, "slice_opset13_last_axis", 13, "Slice", [("x", v)], [("y", v[..., 2:4])],
      inits=[("starts", i64([2]), "typed"), ("ends", i64([4]), "typed"), ("axes", i64([-1]), "typed")])
    m = rng.randn(2, 3, 4).astype(np.float32) * 3
    for op, log in (("Softmax", False), ("LogSoftmax", True)):
        low = op.lower()
        S(outdir, low + "_opset11_axis1", 11, op, [("x", m)], [("y", softmax_np(m, 1, log, True))], axis=1)
        S(outdir, low + "_opset11_default_axis", 11, op, [("x", m)], [("y", softmax_np(m, 1, log, True))])
        S(outdir, low + "_opset11_axis0", 11, op, [("x", m)], [("y", softmax_np(m, 0, log, True))], axis=0)
        S(outdir, low + "_opset11_axis_negative", 11, op, [("x", m)], [("y", softmax_np(m, -1, log, True))], axis=-1)
        S(outdir, low + "_opset13_axis1", 13, op, [("x", m)], [("y", softmax_np(m, 1, log, False))], axis=1)
        S(outdir, low + "_opset13_default_axis", 13, op, [("x", m)], [("y", softmax_np(m, -1, log, False))])


# ---- Einsum, DFT and Det against numpy ------------------------------------------

def linalg_signal_cases(outdir):
    rng = np.random.RandomState(4321)
    r = lambda *sh: rng.randn(*sh).astype(np.float32)
    S = single_node_case
    eqs = [("implicit_matmul", "ij,jk", [(3, 4), (4, 5)]),
           ("ellipsis_matmul", "...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
           ("implicit_batch", "bij,bjk", [(2, 3, 4), (2, 4, 5)]),
           ("diagonal", "ii->i", [(4, 4)]),
           ("trace", "ii", [(4, 4)]),
           ("three_operands", "ij,jk,kl->li", [(2, 3), (3, 4), (4, 2)]),
           ("outer_implicit", "i,j", [(3,), (2,)]),
           ("upper_case", "Ab,bC->CA", [(2, 3), (3, 4)]),
           ("ellipsis_dot", "...i,...i->...", [(2, 3, 4), (2, 3, 4)]),
           ("permute", "ijk->kij", [(2, 3, 4)]),
           ("trailing_ellipsis", "ij...,jk...->ik...", [(2, 3, 5), (3, 4, 5)]),
           ("ellipsis_middle_diagonal", "bii...->b...i", [(2, 3, 3, 4)]),
           ("ellipsis_trace", "a...a", [(3, 2, 3)])]
    for name, eq, shapes in eqs:
        xs = [r(*sh) for sh in shapes]
        y = np.asarray(np.einsum(eq, *[x.astype(np.float64) for x in xs])).astype(np.float32)
        S(outdir, "einsum_" + name, 12, "Einsum", [("x%d" % j, x) for j, x in enumerate(xs)], [("y", y)], equation=eq)
    x = r(2, 6, 3, 1)
    xr = x[..., 0].astype(np.float64)
    for name, kw, n in (("default", {}, None), ("onesided", {"onesided": 1}, None), ("padded", {}, 8),
                        ("cut", {}, 4), ("onesided_padded", {"onesided": 1}, 9), ("axis2", {"axis": 2}, None)):
        ax = kw.get("axis", 1)
        f = np.fft.rfft(xr, n=n, axis=ax) if kw.get("onesided") else np.fft.fft(xr, n=n, axis=ax)
        y = np.stack([f.real, f.imag], -1).astype(np.float32)
        inits = [("dft_length", np.array(n, np.int64), "raw")] if n is not None else []
        S(outdir, "dft_real_" + name, 17, "DFT", [("x", x)], [("y", y)], inits=inits, **kw)
    xc = r(2, 7, 3, 2)
    z = (xc[..., 0] + 1j * xc[..., 1]).astype(np.complex128)
    f = np.fft.ifft(z, axis=1)
    S(outdir, "dft_complex_inverse", 17, "DFT", [("x", xc)], [("y", np.stack([f.real, f.imag], -1).astype(np.float32))],
      inverse=1)
    f = np.fft.fft(z, n=10, axis=2)
    S(outdir, "dft_complex_axis2_padded", 17, "DFT", [("x", xc)],
      [("y", np.stack([f.real, f.imag], -1).astype(np.float32))], inits=[("dft_length", np.array(10, np.int32), "raw")],
      axis=2)
    a = r(2, 3, 5, 5)
    S(outdir, "det_batch", 11, "Det", [("x", a)], [("y", np.linalg.det(a.astype(np.float64)).astype(np.float32))])
    a64 = rng.randn(4, 4)
    S(outdir, "det_f64", 11, "Det", [("x", a64)], [("y", np.array(np.linalg.det(a64)))])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_rnn_cases.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, op, seed, kw in lstm_rnn_cases():
        rnn_case(out, name, op, seed, **kw)
    shape_op_cases(out)
    linalg_signal_cases(out)
    print("gen_rnn_cases: %d cases in %s" % (len(os.listdir(out)), out))


if __name__ == "__main__":
    main()
