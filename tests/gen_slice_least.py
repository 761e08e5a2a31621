#!/usr/bin/env python3
"""gen_slice_least.py DIR: a model whose output is x[-2:] of a symbolic time
axis (ONNX Slice, starts -2, ends INT64_MAX), with two data sets whose
expected outputs numpy computes: T = 3 (two rows) and T = 1 (one row, where
a fixed [2, 3] result cannot hold: the generated code must refuse that run,
not read past its input).  The harness's cli group runs `cellc verify` on
each and `cellc info` on the model."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_slice_least.py DIR")
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    inits = [numpy_helper.from_array(np.array([-2], np.int64), "starts"),
             numpy_helper.from_array(np.array([np.iinfo(np.int64).max], np.int64), "ends"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="tail")
    model = helper.make_model(helper.make_graph([node], "tail", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    rng = np.random.RandomState(5)
    for name, T in (("long", 3), ("short", 1)):
        s = os.path.join(d, name)
        os.makedirs(s, exist_ok=True)
        a = rng.randn(T, 3).astype(np.float32)
        for f, arr, n in (("input_0.pb", a, "x"), ("output_0.pb", a[-2:], "y")):
            with open(os.path.join(s, f), "wb") as fh:
                fh.write(numpy_helper.from_array(arr, n).SerializeToString())


if __name__ == "__main__":
    main()
