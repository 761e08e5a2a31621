"""gen_onnx_node_data.py: generates the official ONNX backend node tests with
python3-onnx's own generator (`onnx.backend.test.cmd_tools generate-data`),
unchanged, into OUTDIR/node/<test>/ (model.onnx, test_data_set_N/).

onnx 1.12's case files still use the numpy aliases np.float/np.int/np.bool/
np.object that numpy 1.24 removed; they are restored (as the builtins they
always aliased) before the generator is imported.  Nothing else is touched.

usage: gen_onnx_node_data.py OUTDIR
"""
import os
import sys
import warnings

import numpy as np

with warnings.catch_warnings():
    warnings.simplefilter("ignore")         # np.object's FutureWarning on lookup
    for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
        if not hasattr(np, alias):
            setattr(np, alias, builtin)

from onnx.backend.test import cmd_tools  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_onnx_node_data.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    np.random.seed(0)                       # some cases draw random inputs
    sys.argv = ["onnx-backend-test-tools", "generate-data", "-o", out]
    cmd_tools.main()
    n = len(os.listdir(os.path.join(out, "node")))
    print("gen_onnx_node_data: %d node tests in %s/node" % (n, out))


if __name__ == "__main__":
    main()
