"""gen_f64.py: models that compute in double precision (issue 45 point 5),
for the harness group f64.

People run models in float64 when they want the digits: a time-series
example that calls `.double()` on its module and data, a signal front end
checked against a double-precision reference, a graph an exporter wrote in
double because the data was numpy's default type.  cellc compiles them in
double: products through rt_dgemm (OpenBLAS's dgemm/dgemv), convolutions
through rt_conv_f64 (im2col over rt_dgemm), and the element-wise, softmax,
pooling, normalisation and reduction kernels in double.  Each case is its
own author's style:
  - sine_predictor: after the time-series example that predicts sine waves
    (two LSTM cells of 51 written as nn.LSTMCell, a Linear head, states made
    inside forward with `input.size(0)`, the series cut by
    `input.split(1, dim=1)`, then `future` steps that feed the
    prediction back), `.double()`; the batch dynamic.  Its traced loop is
    left unrolled (recurrences are float32), which `cellc info` says;
  - conv_front: a speech-feature front end in double: Conv1d with stride
    and padding, BatchNorm1d (eval), ReLU, MaxPool1d(2), a grouped Conv1d,
    the mean over time, Linear and LogSoftmax; batch and frames dynamic;
  - attention_block: one self-attention block in double: Linear q, k, v,
    `q @ k.transpose(-2, -1) / math.sqrt(d)`, softmax, `@ v`, a residual
    and LayerNorm; batch and length dynamic;
  - gemm_forms: written with onnx.helper (a converter's output): Gemm with
    transA/transB, alpha and beta and a C matrix, a C row and a C column;
    Gemm with beta 0 whose bias comes after as an Add (the form that once
    lost its bias); MatMul with broadcast batch axes, of a vector by a
    matrix and of a matrix by a vector; Softmax on a middle axis.  Goldens
    from numpy in float64, written out here operation by operation.
Layout:
  CASE/model.onnx
  CASE/test_data_set_K/   two sizes of every dynamic axis
  CASE/case.json          model, style, info (strings `cellc info` prints),
                          oracle (the --dim flags for `verify --oracle
                          onnxruntime`, where ONNX Runtime's CPU provider
                          runs every node in double; it has no double Conv)
Weights from torch.manual_seed (numpy seeds for gemm_forms); PyTorch's
goldens from the eager module in double, checked against the traced module.

usage: gen_f64.py OUTDIR
"""
import io
import json
import math
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from gen_size_if import write_set
# the time-series example's model, as tests/gen_loop_styles.py writes it after
# pytorch/examples (two LSTMCells of 51 here)
from gen_loop_styles import SineWavePredictor

warnings.filterwarnings("ignore")


class ConvFront(nn.Module):
    """Conv1d/BatchNorm1d/ReLU/MaxPool1d/grouped Conv1d, mean over time, Linear, LogSoftmax in double"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(13, 16, kernel_size=5, stride=2, padding=2)
        self.bn = nn.BatchNorm1d(16)
        self.pool = nn.MaxPool1d(2)
        self.dw = nn.Conv1d(16, 16, kernel_size=3, padding=1, groups=4)
        self.fc = nn.Linear(16, 5)

    def forward(self, feats):
        x = self.pool(torch.relu(self.bn(self.conv(feats))))
        x = torch.relu(self.dw(x))
        return torch.log_softmax(self.fc(x.mean(dim=2)), dim=-1)


class AttentionBlock(nn.Module):
    """q/k/v Linear, q @ k^T / sqrt(d), softmax, @ v, residual + LayerNorm in double"""

    def __init__(self, d=12):
        super().__init__()
        self.d = d
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        return self.norm(x + att @ v)


def sine_input(B, T, rng):
    # the example's data: sine waves with random phases, scaled
    t = np.arange(T)[None, :] + rng.integers(-40, 40, size=(B, 1))
    return [np.sin(t / 4.0).astype(np.float64)]


def feats_input(B, T, rng):
    return [rng.standard_normal((B, 13, T))]


def seq_input(B, T, rng):
    return [rng.standard_normal((B, T, 12))]


# name: class, inputs(B, T, rng), input names, output names, dynamic axes,
# (B, T) of the data sets, info strings, --dim flags for --oracle (None:
# ONNX Runtime's CPU provider lacks a node of it in double)
TORCH_MODELS = {
    "sine_predictor": (lambda: SineWavePredictor(51), sine_input, ["input"], ["pred"], {"input": {0: "B"}, "pred": {0: "B"}},
                       [(3, 8), (5, 8)],
                       ["input                    f64[B, 8]", "pred                     f64[B, 11]",
                        "the steps compute in float64, and recurrences run in float32 only"],
                       ["B=2"]),
    "conv_front": (ConvFront, feats_input, ["feats"], ["logp"], {"feats": {0: "B", 2: "T"}, "logp": {0: "B"}},
                   [(2, 40), (3, 57)], ["feats                    f64[B, 13, T]", "logp                     f64[B, 5]"],
                   None),
    "attention_block": (AttentionBlock, seq_input, ["x"], ["y"], {"x": {0: "B", 1: "L"}, "y": {0: "B", 1: "L"}},
                        [(2, 7), (3, 11)], ["x                        f64[B, L, 12]"], ["B=2", "L=5"]),
}


def outputs_of(module, ins):
    with torch.no_grad():
        y = module(*[torch.from_numpy(a) for a in ins])
    return [t.numpy() for t in (y if isinstance(y, tuple) else (y,))]


def torch_case(outdir, name, seed):
    cls, gen_in, in_names, out_names, dyn, sets, info, oracle = TORCH_MODELS[name]
    torch.manual_seed(seed)
    eager = cls().double().eval()
    rng = np.random.default_rng(seed)
    data = [gen_in(B, T, rng) for B, T in sets]
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(eager, tuple(torch.from_numpy(a) for a in data[0]), f, opset_version=17,
                          input_names=in_names, output_names=out_names, dynamic_axes=dyn)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    for vi in list(model.graph.input) + list(model.graph.output):
        assert vi.type.tensor_type.elem_type == TensorProto.DOUBLE, "%s: %s is not double" % (name, vi.name)
    traced = torch.jit.trace(eager, tuple(torch.from_numpy(a) for a in data[0]))
    d = os.path.join(outdir, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, ins in enumerate(data):
        want = outputs_of(eager, ins)
        for a, b in zip(want, outputs_of(traced, ins)):
            assert a.dtype == np.float64 and np.allclose(a, b, rtol=1e-12, atol=1e-13), \
                "%s: traced and eager runs disagree" % name
        write_set(os.path.join(d, "test_data_set_%d" % k), in_names, ins, out_names, want)
    return {"model": name, "style": (cls.__doc__ or "").strip(), "info": info, "oracle": oracle}


# ---- gemm_forms: onnx.helper, numpy goldens ------------------------------------------

def gemm_ref(A, B, C, alpha, beta, ta, tb):
    A = A.T if ta else A
    B = B.T if tb else B
    y = alpha * (A @ B)
    return y + beta * C if C is not None else y


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gemm_forms(outdir, seed):
    rng = np.random.default_rng(seed)
    D = TensorProto.DOUBLE
    W = {"w1": rng.standard_normal((6, 5)),           # x @ w1
         "c1": rng.standard_normal((1, 5)),           # a C row
         "wt": rng.standard_normal((7, 6)),           # B stored [N, K] (transB)
         "w0": rng.standard_normal((6, 4)),
         "cz": rng.standard_normal(4),                # the C of a beta-0 Gemm: not read
         "b0": rng.standard_normal(4),                # the bias of the Add after it
         "wc": rng.standard_normal((6, 2)),
         "bm": rng.standard_normal((2, 3, 6, 5)),     # MatMul [1, 1, B, 6] x [2, 3, 6, 5]
         "v": rng.standard_normal(6),                 # vector by matrix, matrix by vector
         "mv": rng.standard_normal((6, 3))}
    nodes = [
        # y1 = 0.5 x w1 + 2 c1 (C a row [1, 5])
        helper.make_node("Gemm", ["x", "w1", "c1"], ["y1"], alpha=0.5, beta=2.0),
        # y2 = relu(1.5 xt^T wt^T + 0.25 c), xt = x^T stored [6, B], C the input c [B, 7]
        helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0]),
        helper.make_node("Gemm", ["xt", "wt", "c"], ["g2"], transA=1, transB=1, alpha=1.5, beta=0.25),
        helper.make_node("Relu", ["g2"], ["y2"]),
        # y3 = Gemm with beta 0 (its C ignored), then the bias as an Add
        helper.make_node("Gemm", ["x", "w0", "cz"], ["g3"], beta=0.0),
        helper.make_node("Add", ["g3", "b0"], ["y3"]),
        # y4 = x wc - s, s the column [B, 1] of the row sums of x
        helper.make_node("ReduceSum", ["x", "axis1"], ["s"], keepdims=1),
        helper.make_node("Gemm", ["x", "wc", "s"], ["y4"], beta=-1.0),
        # y5 = MatMul with broadcast batch axes, then Softmax on axis 1 of [2, 3, B, 5]
        helper.make_node("Reshape", ["x", "shape4"], ["x4"]),
        helper.make_node("MatMul", ["x4", "bm"], ["m5"]),
        helper.make_node("Softmax", ["m5"], ["y5"], axis=1),
        # y6 = v xt (a vector by a matrix: [B]), y7 = x v (a matrix by a vector), y8 = x mv
        helper.make_node("MatMul", ["v", "xt"], ["y6"]),
        helper.make_node("MatMul", ["x", "v"], ["y7"]),
        helper.make_node("MatMul", ["x", "mv"], ["y8"]),
    ]
    inits = [numpy_helper.from_array(a.astype(np.float64), n) for n, a in W.items()]
    inits.append(numpy_helper.from_array(np.array([1, 1, -1, 6], dtype=np.int64), "shape4"))
    inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"))
    outs = [("y1", ["B", 5]), ("y2", ["B", 7]), ("y3", ["B", 4]), ("y4", ["B", 2]),
            ("y5", [2, 3, "B", 5]), ("y6", ["B"]), ("y7", ["B"]), ("y8", ["B", 3])]
    graph = helper.make_graph(nodes, "gemm_forms", [helper.make_tensor_value_info("x", D, ["B", 6]),
                                                    helper.make_tensor_value_info("c", D, ["B", 7])],
                              [helper.make_tensor_value_info(n, D, s) for n, s in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_f64")
    onnx.checker.check_model(model)
    d = os.path.join(outdir, "gemm_forms")
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, B in enumerate([4, 6]):
        x = rng.standard_normal((B, 6))
        c = rng.standard_normal((B, 7))
        want = [gemm_ref(x, W["w1"], W["c1"], 0.5, 2.0, False, False),
                np.maximum(gemm_ref(x.T, W["wt"], c, 1.5, 0.25, True, True), 0),
                x @ W["w0"] + W["b0"],
                gemm_ref(x, W["wc"], x.sum(axis=1, keepdims=True), 1.0, -1.0, False, False),
                softmax_ref(np.matmul(x.reshape(1, 1, B, 6), W["bm"]), 1),
                W["v"] @ x.T,
                x @ W["v"],
                x @ W["mv"]]
        write_set(os.path.join(d, "test_data_set_%d" % k), ["x", "c"], [x, c], [n for n, _ in outs], want)
    return {"model": "gemm_forms", "style": "onnx.helper: Gemm forms, MatMul broadcast and vector forms, Softmax",
            "info": ["x                        f64[B, 6]"], "oracle": ["B=4"]}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    torch.set_num_threads(1)
    cases = {}
    for k, name in enumerate(sorted(TORCH_MODELS)):
        cases[name] = torch_case(out, name, 4500 + 10 * k)
        print("  %s" % name)
    cases["gemm_forms"] = gemm_forms(out, 4590)
    print("  gemm_forms")
    for name, case in cases.items():
        with open(os.path.join(out, name, "case.json"), "w") as f:
            json.dump(case, f, indent=1)
    print("gen_f64: %d cases in %s" % (len(cases), out))


if __name__ == "__main__":
    main()
