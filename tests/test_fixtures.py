"""test_fixtures.py: checks the generated golden data before cellc is judged
by it.  Every case of tests/out/torch (PyTorch's outputs) and
tests/out/rnn_cases (ref_rnn / numpy expectations) is evaluated with the
numpy interpreter onnx_ref.py on each of its data sets and must agree with
the stored outputs.  For the PyTorch exports this shows that the exported
graph really is dynamic in batch and length (the extra data sets use other
sizes than the export example) and that ref_rnn.py agrees with PyTorch on
multi-layer models; for our own cases, that each model says what its
expected outputs assume (attributes, opset forms, external data).

usage: test_fixtures.py DIR...    (PASS/FAIL lines; exit 1 on failure)
"""
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_ref  # noqa: E402


def read_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def check_case(d):
    model = onnx.load(os.path.join(d, "model.onnx"))     # also loads external data
    sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    if not sets:
        return False, "no data sets"
    worst = 0.0
    for ds in sets:
        ins = [read_pb(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                                          key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        want = [read_pb(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")),
                                           key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
        got = onnx_ref.run(model, ins)
        if len(got) != len(want):
            return False, "%s: %d outputs, expected %d" % (os.path.basename(ds), len(got), len(want))
        for k, (g, w) in enumerate(zip(got, want)):
            g = np.asarray(g)
            if g.shape != w.shape:
                return False, "%s output %d: shape %s, stored %s" % (os.path.basename(ds), k, g.shape, w.shape)
            err = np.abs(g.astype(np.float64) - w.astype(np.float64))
            if err.size:
                worst = max(worst, float(err.max()))
            if (err > 1e-5 + 1e-4 * np.abs(w.astype(np.float64))).any():
                return False, "%s output %d: max_abs=%.3g" % (os.path.basename(ds), k, float(err.max()))
    return True, "%d data sets, max_abs=%.3g" % (len(sets), worst)


def main():
    failed = total = 0
    for root in sys.argv[1:]:
        group = os.path.basename(os.path.normpath(root))
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if not os.path.isdir(d):
                continue
            total += 1
            try:
                ok, msg = check_case(d)
            except Exception as e:
                ok, msg = False, "%s: %s" % (type(e).__name__, e)
            print("%s fixtures/%s/%s %s" % ("PASS" if ok else "FAIL", group, name, msg))
            failed += not ok
    if total == 0:
        print("FAIL fixtures/none no case directories under %s" % " ".join(sys.argv[1:]))
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
