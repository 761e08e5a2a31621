#!/usr/bin/env python3
"""gen_slice_least.py DIR: two models over a symbolic time axis `seq`, with
data sets whose expected outputs numpy computes.

DIR/tail      y = x[-2:] (ONNX Slice, starts -2, ends INT64_MAX): min(seq, 2)
              rows, the size expression cellc keeps; sets T = 3 (two rows)
              and T = 1 (one row: the same build runs it).
DIR/reflect   y = a reflect Pad of 2 rows on each side of axis 0, which
              needs seq >= 3 (a least value the generated code checks); sets
              T = 4, and T = 2, where ONNX's reflect pad is not defined: the
              generated code must refuse that run, not read past its input.

The harness's cli group runs `cellc info` on each model and `cellc verify`
on each set."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(d, nodes, inits, y_shape):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)
    model = helper.make_model(helper.make_graph(nodes, os.path.basename(d), [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))


def write_set(d, name, a, y):
    s = os.path.join(d, name)
    os.makedirs(s, exist_ok=True)
    for f, arr, n in (("input_0.pb", a, "x"), ("output_0.pb", y, "y")):
        with open(os.path.join(s, f), "wb") as fh:
            fh.write(numpy_helper.from_array(arr, n).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_slice_least.py DIR")
    d = sys.argv[1]
    rng = np.random.RandomState(5)
    tail = os.path.join(d, "tail")
    save(tail, [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="tail")],
         [numpy_helper.from_array(np.array([-2], np.int64), "starts"),
          numpy_helper.from_array(np.array([np.iinfo(np.int64).max], np.int64), "ends"),
          numpy_helper.from_array(np.array([0], np.int64), "axes")], ["rows", 3])
    for name, T in (("long", 3), ("short", 1)):
        a = rng.randn(T, 3).astype(np.float32)
        write_set(tail, name, a, a[-2:])
    refl = os.path.join(d, "reflect")
    save(refl, [helper.make_node("Pad", ["x", "pads"], ["y"], name="mirror", mode="reflect")],
         [numpy_helper.from_array(np.array([2, 0, 2, 0], np.int64), "pads")], ["rows", 3])
    for name, T in (("long", 4), ("short", 2)):
        a = rng.randn(T, 3).astype(np.float32)
        # T = 2: numpy mirrors past the edge, ONNX does not define it; the
        # expected data are never reached (the run must be refused)
        write_set(refl, name, a, np.pad(a, ((2, 2), (0, 0)), mode="reflect"))


if __name__ == "__main__":
    main()
