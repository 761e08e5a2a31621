"""gen_export_cases.py: fixtures of the `export` group (`cellc export`,
trained weights back into the source ONNX model).

Each case CASE/ holds
  model.onnx      a PyTorch export of a model with seed S (the "untrained"
                  source model)
  new.weights     a cellc weights file (tests/tensorfile.py) holding, under
                  the initializer names of model.onnx, the initializers that
                  torch.onnx.export writes for the same architecture built
                  with seed S + 1 (the "trained" weights): PyTorch's exporter,
                  not cellc, maps the module parameters to the ONNX tensors.
                  Only float32 initializers go in (the trainable parameters);
                  the checkpoint case adds "@opt/..." and "@train/..." tensors
  test_data_set_0 input_K.pb (model inputs) and output_K.pb: PyTorch's
                  outputs of the seed S + 1 module, which ONNX Runtime must
                  reproduce on the exported model
  case.json       what the test needs to know (the initializer names, which
                  ones are float32, extra checks)

Cases: nn.LSTM + Linear (2 layers, initial states as inputs, dynamic axes;
its model.onnx also gets metadata_props, a doc string, one initializer moved
from raw_data to float_data and a top-level field unknown to the ONNX schema,
all of which the export must keep), nn.GRU + Linear (batch_first, opset 17),
and the traced MomentumLSTM of tests/ref_momentum.py (opset 14, a Python loop
over 8 steps, with a checkpoint-like weights file), and an ONNX Loop made with
onnx.helper whose body graph holds an initializer (expected outputs from
numpy, loop_ref, written from the Loop specification).  Seeds are fixed.

usage: gen_export_cases.py OUTDIR
"""
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_torch_exports as GT  # noqa: E402
import ref_momentum as R  # noqa: E402
import tensorfile  # noqa: E402

warnings.filterwarnings("ignore")

# A length-delimited field 1000 at the top level of the ModelProto: no ONNX
# schema knows it, so protobuf keeps it as an unknown field.
UNKNOWN_MARKER = b"cellc-export-unknown-field-marker"
UNKNOWN_FIELD = bytes([0xC2, 0x3E, len(UNKNOWN_MARKER)]) + UNKNOWN_MARKER   # tag (1000 << 3) | 2


def write_pb(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export(net, example, path, opset, in_names, out_names, dynamic_axes):
    torch.onnx.export(net, tuple(torch.from_numpy(a) for a in example), path, opset_version=opset,
                      input_names=in_names, output_names=out_names, dynamic_axes=dynamic_axes or None)


def initializers(path):
    return [(t.name, numpy_helper.to_array(t)) for t in onnx.load(path).graph.initializer]


def make_case(out, name, build, seed, example, data, opset, in_names, out_names, dynamic_axes,
              decorate=False, checkpoint=False):
    """build(seed) -> torch module; example: the export inputs; data: the
    inputs of the data set (run through the seed + 1 module by PyTorch)."""
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    torch.manual_seed(seed)
    old = build(seed).eval()
    new = build(seed + 1).eval()
    model = os.path.join(d, "model.onnx")
    export(old, example, model, opset, in_names, out_names, dynamic_axes)
    with tempfile.TemporaryDirectory() as tmp:
        new_path = os.path.join(tmp, "new.onnx")
        export(new, example, new_path, opset, in_names, out_names, dynamic_axes)
        new_inits = initializers(new_path)
    old_inits = initializers(model)
    # the exporter names initializers by graph position: both exports agree
    if [(n, a.shape, a.dtype) for n, a in old_inits] != [(n, a.shape, a.dtype) for n, a in new_inits]:
        sys.exit("%s: the two exports have different initializers" % name)
    f32 = [(n, a) for n, a in new_inits if a.dtype == np.float32]
    if not f32 or any(np.array_equal(a, b) for (_, a), (_, b) in zip(old_inits, new_inits)
                      if a.dtype == np.float32 and a.size > 1):
        sys.exit("%s: the new weights must differ from the old ones" % name)
    extra = []
    if checkpoint:
        rng = np.random.default_rng(seed)
        extra = [("@opt/%s/m" % n, rng.standard_normal(a.shape).astype(np.float32)) for n, a in f32[:2]]
        extra += [("@train/step", np.array(123, np.int64)), ("@train/lr", np.array(0.01, np.float32))]
        extra = extra[:1] + f32[:1] + extra[1:]         # '@' tensors need not come last
        f32 = f32[1:]
    tensorfile.write(os.path.join(d, "new.weights"), extra + f32)

    if decorate:
        m = onnx.load(model)
        m.doc_string = "source model of the export test"
        m.graph.doc_string = "graph doc string kept by cellc export"
        p = m.metadata_props.add()
        p.key, p.value = "trained_by", "cellc export test"
        t = m.graph.initializer[0]          # raw_data -> float_data
        a = numpy_helper.to_array(t)
        t.ClearField("raw_data")
        t.float_data.extend(a.ravel().tolist())
        with open(model, "wb") as fh:
            fh.write(m.SerializeToString() + UNKNOWN_FIELD)
        m2 = onnx.load(model)
        if numpy_helper.to_array(m2.graph.initializer[0]).tobytes() != a.tobytes():
            sys.exit("%s: float_data rewrite changed the values" % name)

    with torch.no_grad():
        ys = new(*[torch.from_numpy(a) for a in data])
    ys = ys if isinstance(ys, tuple) else (ys,)
    for k, (a, n) in enumerate(zip(data, in_names)):
        write_pb(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), a, n)
    for k, (y, n) in enumerate(zip(ys, out_names)):
        write_pb(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), y.numpy(), n)
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(dict(initializers=[n for n, _ in old_inits],
                       float32=[n for n, a in old_inits if a.dtype == np.float32],
                       inputs=in_names, outputs=out_names, decorated=decorate,
                       checkpoint=checkpoint, unknown_marker=UNKNOWN_MARKER.decode() if decorate else ""),
                  fh)
    print("%-24s %d initializers, %d float32" % (name, len(old_inits), len([1 for _, a in old_inits
                                                                             if a.dtype == np.float32])))


def loop_model(W0, U):
    """An ONNX Loop over T steps, h <- tanh(h U + x_t W0) with U an initializer
    of the body graph and W0 one of the main graph (made with onnx.helper)."""
    from onnx import TensorProto, helper
    H, I = U.shape[0], W0.shape[0]
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["xt"], axis=0),
         helper.make_node("MatMul", ["xt", "W0"], ["a"]),
         helper.make_node("MatMul", ["h", "U"], ["b"]),
         helper.make_node("Add", ["a", "b"], ["s"]),
         helper.make_node("Tanh", ["s"], ["h2"]),
         helper.make_node("Identity", ["cond"], ["cond2"])],
        "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, ["B", H])],
        [helper.make_tensor_value_info("cond2", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h2", TensorProto.FLOAT, ["B", H]),
         helper.make_tensor_value_info("h2", TensorProto.FLOAT, ["B", H])],
        initializer=[numpy_helper.from_array(U, "U")])
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"]),
         helper.make_node("Gather", ["shape", "zero"], ["T"], axis=0),
         helper.make_node("Loop", ["T", "", "h0"], ["h", "hs"], body=body)],
        "loop_rnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", "B", I]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, ["B", H])],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["B", H]),
         helper.make_tensor_value_info("hs", TensorProto.FLOAT, ["T", "B", H])],
        initializer=[numpy_helper.from_array(W0, "W0"), numpy_helper.from_array(np.array(0, np.int64), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_export_cases")


def loop_ref(x, h0, W0, U):
    """The Loop model in numpy, from the ONNX Loop specification."""
    h, hs = h0, []
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ W0 + h @ U)
        hs.append(h)
    return h.astype(np.float32), np.stack(hs).astype(np.float32)


def make_loop_case(out, seed):
    """An initializer inside a Loop body (oracle: numpy, loop_ref)."""
    d = os.path.join(out, "loop_body")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    rng = np.random.default_rng(seed)
    I, H = 3, 4
    W0, U = (rng.standard_normal((I, H)) * 0.5).astype(np.float32), (rng.standard_normal((H, H)) * 0.5).astype(np.float32)
    W0n, Un = (rng.standard_normal((I, H)) * 0.5).astype(np.float32), (rng.standard_normal((H, H)) * 0.5).astype(np.float32)
    onnx.save(loop_model(W0, U), os.path.join(d, "model.onnx"))
    tensorfile.write(os.path.join(d, "new.weights"), [("U", Un), ("W0", W0n)])
    x, h0 = rng.standard_normal((6, 2, I)).astype(np.float32), rng.standard_normal((2, H)).astype(np.float32)
    for k, (a, n) in enumerate(((x, "x"), (h0, "h0"))):
        write_pb(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), a, n)
    for k, (a, n) in enumerate(zip(loop_ref(x, h0, W0n, Un), ("h", "hs"))):
        write_pb(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), a, n)
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(dict(initializers=["W0", "zero", "U"], float32=["W0", "U"], inputs=["x", "h0"],
                       outputs=["h", "hs"], decorated=False, checkpoint=False, unknown_marker=""), fh)
    print("%-24s 3 initializers, 2 float32 (U in the Loop body)" % "loop_body")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    I, H, C = 3, 6, 4
    rng = np.random.default_rng(2024)

    def f32(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def torch_net(cell, layers, bf, head):
        def build(seed):
            torch.manual_seed(seed)
            return GT.Net(cell, I, H, layers, bf, False, head, C)
        return build

    # nn.LSTM, 2 layers, initial states as inputs, seq-first, dynamic batch and time
    T, B = 5, 2
    axes = {"x": {0: "seq", 1: "batch"}, "h0": {1: "batch"}, "c0": {1: "batch"}, "y": {0: "seq", 1: "batch"}}
    make_case(out, "lstm", torch_net("LSTM", 2, False, "seq"), 11,
              (f32(T, B, I), f32(2, B, H), f32(2, B, H)), (f32(7, 3, I), f32(2, 3, H), f32(2, 3, H)), 14,
              ["x", "h0", "c0"], ["y", "h", "c"], axes, decorate=True)
    # nn.GRU, 1 layer, batch_first, LogSoftmax on the last step, static shapes
    make_case(out, "gru", torch_net("GRU", 1, True, "last"), 21, (f32(B, T, I),), (f32(B, T, I),), 17,
              ["x"], ["y", "h"], None)

    # the traced MomentumLSTM (a Python loop over 8 steps; Linear on every step)
    def momentum(seed):
        return R.make_model("momentum_lstm", I, H, C, seed)
    make_case(out, "momentum_lstm_traced", momentum, 31, (f32(8, B, I),), (f32(8, 3, I),), 14,
              ["x"], ["y", "h"], {"x": {1: "batch"}, "y": {1: "batch"}}, checkpoint=True)
    make_loop_case(out, 41)


if __name__ == "__main__":
    main()
