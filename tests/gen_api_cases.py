"""gen_api_cases.py: models and expected outputs for the emitted-API test
(tests/api/test_stream.c): single LSTM / GRU / RNN models whose only input is
X with symbolic dims [T, N, I], compiled with `cellc compile --name m`.
Expected outputs come from tests/ref_rnn.py, stored as raw little-endian
float32 files so the C test reads them without a protobuf parser:
    CASE/model.onnx, CASE/dims.txt ("T N I H D NOUT"), CASE/x.bin,
    CASE/y.bin, CASE/y_h.bin[, CASE/y_c.bin]    (ONNX layout 0 shapes)
A second batch size (CASE/b2_*) checks that N is really dynamic.

usage: gen_api_cases.py OUTDIR
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_rnn import rnn_ref  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def make_case(out, name, op, seed, I=3, H=6, direction="forward", **attrs):
    rng = np.random.RandomState(seed)
    D = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    W = (rng.randn(D, G * H, I) * 0.5).astype(np.float32)
    R = (rng.randn(D, G * H, H) * 0.5).astype(np.float32)
    B = (rng.randn(D, 2 * G * H) * 0.3).astype(np.float32)
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    node = helper.make_node(op, ["X", "W", "R", "B"], outs, name=name + "_node", hidden_size=H,
                            direction=direction, **attrs)
    shapes = {"Y": ["T", D, "N", H], "Y_h": [D, "N", H], "Y_c": [D, "N", H]}
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "N", I])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outs],
                          [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
                           numpy_helper.from_array(B, "B")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], producer_name="cellc-tests")
    onnx.checker.check_model(model)
    d = os.path.join(out, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for prefix, T, N in (("", 7, 2), ("b2_", 5, 3)):
        X = rng.randn(T, N, I).astype(np.float32)
        Y, Yh, Yc = rnn_ref(op, X, W, R, B, hidden_size=H, direction=direction, **attrs)
        with open(os.path.join(d, prefix + "dims.txt"), "w") as f:
            f.write("%d %d %d %d %d %d\n" % (T, N, I, H, D, len(outs)))
        for fname, arr in (("x", X), ("y", Y), ("y_h", Yh), ("y_c", Yc)):
            if arr is not None:
                arr.astype("<f4").tofile(os.path.join(d, prefix + fname + ".bin"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_api_cases.py OUTDIR")
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    make_case(out, "lstm", "LSTM", 1)
    make_case(out, "gru", "GRU", 2, linear_before_reset=1)
    make_case(out, "rnn", "RNN", 3)
    make_case(out, "lstm_clip", "LSTM", 4, clip=0.8)
    print("gen_api_cases: 4 cases in %s" % out)


if __name__ == "__main__":
    main()
