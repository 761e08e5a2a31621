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
  - upsampler_convt_output_shape: ConvTranspose told its output length
    (output_shape) over a run-time number of frames, at stride 2 (NOTSET,
    an odd total padding put more at the start) and at stride 3 (SAME_UPPER
    with output_padding, a total padding below 0 at the least length):
    outputs of 32 and 50 samples, pads computed from the frames per call;
    ONNX Runtime refuses an output_shape of stride * frames + span or more,
    so frames must be at least 16 (the run at 15, data set `short`, is
    refused by the generated code);
  - stretch_scales: a speed perturbation over a run-time number of frames
    by scales that are no multiple of 1/64, as PyTorch exports
    F.interpolate (nearest: asymmetric, floor) by 1.3, then linear by 0.7,
    and a linear Resize of the input to the first's size (sizes from its
    Shape): sizes scale(frames, 1.3) and scale of that by 0.7, the float32
    products ONNX Runtime truncates (13 frames of 10, where the product in
    double floors to 12; lengths from 4 on: at 2 and 3 the stretch by 1.3
    keeps the length, and ONNX Runtime then copies the input instead of
    sampling it, which cellc does as the specification says).
Batch and frames are dynamic; the oracle is ONNX Runtime, through `cellc
verify --oracle onnxruntime` at several lengths (one build each: odd, even,
and shorter than the windows' reach), listed in case.json (oracle: the
--dim flag lists), with info (strings `cellc info` prints) and refused (a
data set the compiled model must refuse, and what `cellc verify` then
says).  Weights from a numpy seed per case.

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


def write_set(d, inputs, outputs):
    """A data set in the backend layout: input_K.pb, output_K.pb."""
    os.makedirs(d)
    for kind, arrs in (("input", inputs), ("output", outputs)):
        for k, (nm, a) in enumerate(arrs):
            with open(os.path.join(d, "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(a), nm).SerializeToString())


def upsampler_convt_output_shape(outdir, rng):
    W = {"w5": rng.standard_normal((4, 6, 5)) * 0.4, "b5": rng.standard_normal(6) * 0.1,
         "w3": rng.standard_normal((4, 1, 3)) * 0.4}
    nodes = [helper.make_node("ConvTranspose", ["z", "w5", "b5"], ["u"], strides=[2], output_shape=[32]),
             helper.make_node("Tanh", ["u"], ["a"]),
             helper.make_node("ConvTranspose", ["z", "w3"], ["v"], strides=[3], output_padding=[1],
                              output_shape=[50], auto_pad="SAME_UPPER")]
    name = "upsampler_convt_output_shape"
    save(outdir, name, nodes, [helper.make_tensor_value_info("z", F, ["batch", 4, "frames"])],
         [helper.make_tensor_value_info("a", F, ["batch", 6, 32]),
          helper.make_tensor_value_info("v", F, ["batch", 1, 50])], W,
         {"model": name, "style": "ConvTranspose with output_shape over run-time frames: NOTSET and SAME_UPPER",
          "info": ["frames (at least 16)", "a                        f32[batch, 6, 32]",
                   "v                        f32[batch, 1, 50]"],
          # totals 3 and -1 (none) at 16, 5 and 2 at 17, 11 and 11 at 20, 33 and 44 at 31
          "oracle": [["batch=2", "frames=16"], ["batch=1", "frames=17"], ["batch=2", "frames=20"],
                     ["batch=1", "frames=31"], ["batch=3", "frames=64"]],
          "refused": [{"data": "short", "want": ["dimensions passed at run time are invalid",
                                                 "below the least value 16"]}]})
    # one frame short of what ONNX Runtime accepts: refused before any output is read
    write_set(os.path.join(outdir, name, "short", "test_data_set_0"),
              [("z", rng.standard_normal((1, 4, 15)).astype(np.float32))],
              [("a", np.zeros((1, 6, 32), np.float32)), ("v", np.zeros((1, 1, 50), np.float32))])


def stretch_scales(outdir, rng):
    S = TensorProto.FLOAT
    consts = {"roi": np.zeros(0), "up": np.array([1, 1, 1, 1.3]), "down": np.array([1, 1, 1, 0.7])}
    nodes = [helper.make_node("Resize", ["x", "roi", "up"], ["a"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             helper.make_node("Resize", ["a", "roi", "down"], ["b"], mode="linear"),
             helper.make_node("Shape", ["a"], ["sa"]),
             helper.make_node("Resize", ["x", "roi", "", "sa"], ["c"], mode="linear"),
             helper.make_node("Add", ["a", "c"], ["d"])]
    save(outdir, "stretch_scales", nodes, [helper.make_tensor_value_info("x", S, ["batch", 4, 1, "frames"])],
         [helper.make_tensor_value_info("b", S, ["batch", 4, 1, "slow"]),
          helper.make_tensor_value_info("d", S, ["batch", 4, 1, "fast"])], consts,
         {"model": "stretch_scales", "style": "F.interpolate's exports by scale factors 1.3 and 0.7 over run-time "
                                              "frames, and to another tensor's size",
          "info": ["frames_scale1_3 (= scale(frames, 1.3))",
                   "frames_scale1_3_scale0_7 (= scale(frames_scale1_3, 0.7))",
                   "d                        f32[batch, 4, 1, frames_scale1_3]"],
          # 13 and 9 at 10, 26 and 18 at 20, 39 and 27 at 30: ONNX Runtime's float32 sizes
          "oracle": [["batch=2", "frames=4"], ["batch=1", "frames=7"], ["batch=2", "frames=10"],
                     ["batch=1", "frames=20"], ["batch=1", "frames=30"], ["batch=2", "frames=77"],
                     ["batch=1", "frames=100"], ["batch=1", "frames=130"]]})


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cases = [kws_same_stride, kws_same_pool_avg, upsampler_convt, upsampler_convt_output_shape, stretch_scales]
    for k, make in enumerate(cases):
        make(out, np.random.default_rng(4800 + k))
        print("  %s" % make.__name__)
    print("gen_converted: %d cases in %s" % (len(cases), out))


if __name__ == "__main__":
    main()
