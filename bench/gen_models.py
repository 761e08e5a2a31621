"""gen_models.py: the ONNX files of the benchmark (bench/cells.py models).

usage: gen_models.py OUTDIR NAME...

NAME is CELL_hH_EXPORT: CELL one of bench/cells.py's CELLS, H the hidden
size, EXPORT
  onnx    torch.onnx.export of nn.LSTM (one LSTM operator; dynamic seq and
          batch axes)
  trace   torch.onnx.export of the Python-loop cell at T = 784, batch 1
          (T copies of the step; dynamic batch axis)
  script  torch.onnx.export of torch.jit.script(model) (one ONNX Loop)
Writes OUTDIR/NAME.onnx and prints `NAME export_s=SECONDS` per model.
Input size 1 (MNIST pixel by pixel), opset 14, fixed seeds.
"""
import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cells  # noqa: E402

warnings.filterwarnings("ignore")
T, I = 784, 1


def export(name, path):
    cell, h, how = name.rsplit("_", 2)
    H = int(h[1:])
    net = cells.make(cell, I, H)
    x = torch.randn(T, 1, I)
    axes = {"x": {1: "batch"}, "y": {1: "batch"}}
    if how == "onnx":
        axes = {"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}}
    elif how == "script":
        net = torch.jit.script(net)
        axes = {"x": {0: "seq", 1: "batch"}, "y": {0: "seq", 1: "batch"}}
    torch.onnx.export(net, (x,), path, opset_version=14, input_names=["x"],
                      output_names=["y"], dynamic_axes=axes)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:]:
        path = os.path.join(out, name + ".onnx")
        t0 = time.time()
        export(name, path + ".tmp")
        os.replace(path + ".tmp", path)
        print("%s export_s=%.2f" % (name, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
