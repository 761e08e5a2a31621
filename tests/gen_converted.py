"""gen_converted.py: models as converters write them (tf2onnx, keras2onnx,
onnxmltools), where the graph says in attributes what PyTorch's exporter
writes out as numbers, for the harness group converted.

  - kws_same_stride: a keyword spotter over a run-time number of frames as
    tf2onnx converts Keras' padding="same" at stride 2: Conv with
    auto_pad SAME_UPPER and strides 2, Relu, MaxPool SAME_LOWER at stride
    3, a second Conv SAME_LOWER at stride 2, GlobalAveragePool, Gemm and
    Softmax (no pads written: they depend on the length, which ONNX leaves
    to the runtime);
  - kws_same_pool_avg: AveragePool SAME_UPPER at stride 2 (count_include_pad
    0: windows cut by the padding average what they hold) beside a Conv
    SAME_UPPER of 5 taps (ONNX Runtime has no SAME with dilations).
  - upsampler_convt: a vocoder-like upsampler over a run-time number of
    frames: ConvTranspose at stride 2 with pads, LeakyRelu, ConvTranspose
    SAME_UPPER at stride 3 with output_padding (sizes 2 * frames - 1, then
    3 times that, 6 * frames - 3).
Batch and frames are dynamic; the oracle is ONNX Runtime, through `cellc
verify --oracle onnxruntime` at several lengths (one build each: odd, even,
and shorter than the windows' reach), listed in case.json (oracle: the
--dim flag lists), with info (strings `cellc info` prints).  Weights from a
numpy seed per case.

usage: gen_converted.py OUTDIR
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def save(outdir, name, nodes, inputs, outputs, inits, case):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(a.astype(np.float32), n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tf2onnx-like")
    onnx.checker.check_model(model)
    d = os.path.join(outdir, name)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, indent=1)


def kws_same_stride(outdir, rng):
    W = {"w1": rng.standard_normal((8, 10, 4)) * 0.3, "b1": rng.standard_normal(8) * 0.1,
         "w2": rng.standard_normal((8, 8, 3)) * 0.3, "fc": rng.standard_normal((8, 4)), "fb": rng.standard_normal(4)}
    nodes = [helper.make_node("Conv", ["mfcc", "w1", "b1"], ["c1"], auto_pad="SAME_UPPER", strides=[2],
                              kernel_shape=[4]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], auto_pad="SAME_LOWER", strides=[3], kernel_shape=[3]),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], auto_pad="SAME_LOWER", strides=[2], kernel_shape=[3]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=-1)]
    save(outdir, "kws_same_stride", nodes, [helper.make_tensor_value_info("mfcc", F, ["batch", 10, "frames"])],
         [helper.make_tensor_value_info("probs", F, ["batch", 4]),
          helper.make_tensor_value_info("c2", F, ["batch", 8, "frames_out"])], W,
         {"model": "kws_same_stride", "style": "tf2onnx's padding='same' at stride 2 and 3",
          "info": ["c2                       f32[batch, 8, frames_div12]", "frames_div12 (= floor((frames + 11) / 12))"],
          "oracle": [["batch=2", "frames=49"], ["batch=3", "frames=64"], ["batch=1", "frames=5"]]})


def kws_same_pool_avg(outdir, rng):
    W = {"w": rng.standard_normal((6, 3, 5)) * 0.4}
    nodes = [helper.make_node("AveragePool", ["x"], ["a"], auto_pad="SAME_UPPER", strides=[2], kernel_shape=[3]),
             helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2], kernel_shape=[5]),
             helper.make_node("Tanh", ["c"], ["y"])]
    save(outdir, "kws_same_pool_avg", nodes, [helper.make_tensor_value_info("x", F, ["batch", 3, "len"])],
         [helper.make_tensor_value_info("a", F, ["batch", 3, "half"]),
          helper.make_tensor_value_info("y", F, ["batch", 6, "half"])], W,
         {"model": "kws_same_pool_avg", "style": "AveragePool and a Conv of 5 taps, SAME_UPPER at stride 2",
          "info": ["len_div2 (= floor((len + 1) / 2))"],
          "oracle": [["batch=2", "len=7"], ["batch=1", "len=12"], ["batch=2", "len=2"]]})


def upsampler_convt(outdir, rng):
    W = {"w1": rng.standard_normal((4, 6, 4)) * 0.4, "b1": rng.standard_normal(6) * 0.1,
         "w2": rng.standard_normal((6, 1, 3)) * 0.4}
    nodes = [helper.make_node("ConvTranspose", ["z", "w1", "b1"], ["u1"], strides=[2], pads=[1, 2]),
             helper.make_node("LeakyRelu", ["u1"], ["a1"], alpha=0.2),
             helper.make_node("ConvTranspose", ["a1", "w2"], ["u2"], strides=[3], output_padding=[1],
                              auto_pad="SAME_UPPER"),
             helper.make_node("Tanh", ["u2"], ["wave"])]
    save(outdir, "upsampler_convt", nodes, [helper.make_tensor_value_info("z", F, ["batch", 4, "frames"])],
         [helper.make_tensor_value_info("wave", F, ["batch", 1, "samples"])], W,
         {"model": "upsampler_convt", "style": "a vocoder-like upsampler: ConvTranspose with pads, then SAME "
                                               "with output_padding",
          "info": ["frames_x2 (= 2 * frames - 1)", "frames_x6 (= 6 * frames - 3)",
                   "wave                     f32[batch, 1, frames_x6]"],
          "oracle": [["batch=2", "frames=7"], ["batch=1", "frames=16"], ["batch=3", "frames=1"]]})


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cases = [kws_same_stride, kws_same_pool_avg, upsampler_convt]
    for k, make in enumerate(cases):
        make(out, np.random.default_rng(4800 + k))
        print("  %s" % make.__name__)
    print("gen_converted: %d cases in %s" % (len(cases), out))


if __name__ == "__main__":
    main()
