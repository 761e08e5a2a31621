"""gen_deploy_cases.py: fixtures of the "deploy" test group (golden
regression kits, deployment modes, the ONNX Runtime oracle), derived from
the PyTorch exports of gen_torch_exports.py (nn.LSTM, nn.GRU; directory
OUTDIR/../torch) and gen_trace_cases.py (a traced Python-loop MomentumLSTM
with a Linear head, dynamic batch and time; directory OUTDIR/../trace),
both made first.  The golden values stay PyTorch's; this script only
repackages or damages them:

  OUTDIR/<case>/corrupt/test_data_set_0   set 0 of the case with one golden
        output value moved far out of tolerance (the test program must fail)
  OUTDIR/<case>/npy/test_data_set_0       set 1 of the case as input_K.npy /
        output_K.npy (the .npy convention of `cellc compile --testbench`)
  OUTDIR/<case>/perturbed.onnx            the case's model with its largest
        weight changed by +0.1 everywhere (golden data of the original model,
        whether PyTorch's or ONNX Runtime's, must then fail)

usage: gen_deploy_cases.py OUTDIR
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper

# (fixture directory beside OUTDIR, case)
CASES = [("torch", "lstm_opset14_bf_l1_init_last"), ("torch", "gru_opset17_bidirectional_l1_sf"),
         ("trace", "momentum_lstm_opset14_T8")]


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def main():
    out = sys.argv[1]
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(out, exist_ok=True)
    for fixture, case in CASES:
        src = os.path.join(parent, fixture, case)
        if not os.path.isdir(src):
            sys.exit("gen_deploy_cases.py: %s is missing (make the %s fixtures first)" % (src, fixture))
        dst = os.path.join(out, case)
        os.makedirs(dst, exist_ok=True)

        # one golden value corrupted
        s0 = os.path.join(src, "test_data_set_0")
        c0 = os.path.join(dst, "corrupt", "test_data_set_0")
        shutil.copytree(s0, c0)
        t = read_pb(os.path.join(c0, "output_0.pb"))
        a = numpy_helper.to_array(t).copy()
        a.flat[a.size // 2] += np.float32(1.0)
        t2 = numpy_helper.from_array(a, t.name)
        with open(os.path.join(c0, "output_0.pb"), "wb") as f:
            f.write(t2.SerializeToString())
        print("%s: corrupted output_0 at flat index %d" % (case, a.size // 2))

        # the .npy convention
        s1 = os.path.join(src, "test_data_set_1")
        n1 = os.path.join(dst, "npy", "test_data_set_0")
        os.makedirs(n1)
        for name in sorted(os.listdir(s1)):
            if name.endswith(".pb"):
                arr = numpy_helper.to_array(read_pb(os.path.join(s1, name)))
                np.save(os.path.join(n1, name[:-3] + ".npy"), arr)

        # a deliberately wrong model
        m = onnx.load(os.path.join(src, "model.onnx"))
        big = max(m.graph.initializer, key=lambda i: int(np.prod(i.dims)) if i.data_type == 1 else -1)
        w = numpy_helper.to_array(big).copy() + np.float32(0.1)
        big.CopyFrom(numpy_helper.from_array(w.astype(np.float32), big.name))
        onnx.save(m, os.path.join(dst, "perturbed.onnx"))
        print("%s: perturbed initializer %s %s" % (case, big.name, list(w.shape)))


if __name__ == "__main__":
    main()
