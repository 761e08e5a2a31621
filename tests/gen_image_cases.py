"""gen_image_cases.py: the image-sampling operators (Resize, Upsample,
GridSample, RoiAlign) in the forms the official ONNX tests of onnx 1.12 do
not reach, in the ONNX backend layout (CASE/model.onnx,
CASE/test_data_set_0/input_K.pb, output_K.pb) so that `cellc verify` checks
them.

Oracles, none of them cellc:
  - PyTorch 1.13's own outputs for its exports of F.interpolate (nearest,
    bilinear, bicubic, trilinear; scale_factor or size; align_corners; a
    dynamic batch axis) at opsets 9 (Upsample), 10 (Resize-10), 11 (roi and
    scales as empty inputs) and 13, and of F.grid_sample at opset 16 (every
    mode x padding_mode x align_corners, a grid reaching beyond the image);
  - onnx 1.12's reference of the Resize test cases (interpolate_nd in
    onnx/backend/test/case/node/resize.py) for opset 18 (`axes`,
    `keep_aspect_ratio_policy`), whose sizes are picked so that the policy's
    rounding is exact, and, through the tf_crop_and_resize box that maps
    coordinates the same way, for the coordinate modes it does not know
    (half_pixel_symmetric of opset 19, tf_half_pixel_for_nn of opset 11);
  - the official test data themselves, for the older or newer spellings the
    specification defines to mean the same: Upsample-7 (scales attribute) of
    test_upsample_nearest, RoiAlign-10 (no coordinate_transformation_mode:
    output_half_pixel) of test_roialign_aligned_false, Resize-11 (roi and
    scales as empty initializers) of two opset-13 Resize tests, GridSample-20 (modes
    linear and cubic) of the opset-16 GridSample tests;
  - PyTorch's outputs at three image sizes of one export whose height and
    width are dynamic (skip_up_dynamic_hw: F.interpolate to another
    tensor's size, and by scale_factor 2);
  - onnx 1.12's reference, point by point (interpolate_nd_with_x, in
    double), for a Resize by scales that are no multiple of 1/64 (1.3, 0.7,
    0.6) over a run-time width (scale_runtime_*: one model, data sets at many
    widths), the output size as ONNX Runtime computes it: the float32 product
    of scale and width, truncated (upsamplebase.h, ComputeOutputShape; at
    widths 10, 20, 30, .. the product lands on the integer in float32, just
    below it in double), whatever a tf_crop_and_resize roi says.
Seeds are fixed.

usage: gen_image_cases.py OUTDIR
"""
import io
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import helper, numpy_helper
from onnx.backend.test.case.node import resize as onnx_resize

warnings.filterwarnings("ignore")


def write_case(outdir, name, model, inputs, outputs):
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, arrs in (("input", inputs), ("output", outputs)):
        for k, (nm, a) in enumerate(arrs):
            t = numpy_helper.from_array(np.ascontiguousarray(a), nm)
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, k)), "wb") as f:
                f.write(t.SerializeToString())


class Interp(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.interpolate(x, **self.kw)


class Grid(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x, g):
        return F.grid_sample(x, g, **self.kw)


def export(outdir, name, net, args, opset, names, dynamic=None):
    f = io.BytesIO()
    torch.onnx.export(net, tuple(args), f, opset_version=opset, input_names=names, output_names=["y"],
                      dynamic_axes=dynamic, do_constant_folding=True)
    model = onnx.load_from_string(f.getvalue())
    ops = sorted({n.op_type for n in model.graph.node})
    print("%s: opset %d, operators %s" % (name, opset, " ".join(ops)))
    with torch.no_grad():
        y = net(*args).numpy()
    write_case(outdir, name, model, [(n, a.numpy()) for n, a in zip(names, args)], [("y", y)])
    return ops


def torch_cases(outdir):
    rng = torch.Generator().manual_seed(5)
    x4 = torch.randn(2, 3, 5, 7, generator=rng)
    cases = [
        # name, interpolate arguments, input, opsets, the operator the export must use
        ("nearest_x2", dict(scale_factor=2.0, mode="nearest"), x4, (9, 10, 11, 13)),
        ("nearest_size", dict(size=(8, 4), mode="nearest"), x4, (11, 13)),
        ("bilinear_x2", dict(scale_factor=2.0, mode="bilinear", align_corners=False), x4, (11, 13)),
        ("bilinear_down", dict(scale_factor=0.5, mode="bilinear", align_corners=False), x4, (13,)),
        ("bilinear_corners", dict(size=(9, 4), mode="bilinear", align_corners=True), x4, (11, 13)),
        ("bicubic_x3", dict(scale_factor=3.0, mode="bicubic", align_corners=False), x4, (11, 13)),
        ("bicubic_corners", dict(size=(4, 10), mode="bicubic", align_corners=True), x4, (13,)),
        ("trilinear", dict(scale_factor=(2.0, 1.5, 0.5), mode="trilinear", align_corners=False),
         torch.randn(1, 2, 3, 4, 6, generator=rng), (13,)),
        ("linear_1d", dict(size=11, mode="linear", align_corners=False), torch.randn(2, 3, 4, generator=rng), (13,)),
    ]
    for name, kw, x, opsets in cases:
        for opset in opsets:
            ops = export(outdir, "%s_opset%d" % (name, opset), Interp(**kw), [x], opset, ["x"])
            want = "Upsample" if opset < 10 else "Resize"
            assert want in ops, (name, opset, ops)
    # a dynamic batch axis: the scales stay constants, the batch a symbol
    export(outdir, "bilinear_x2_dynamic_batch_opset13", Interp(scale_factor=2.0, mode="bilinear"), [x4], 13, ["x"],
           dynamic={"x": {0: "batch"}, "y": {0: "batch"}})
    # GridSample (opset 16): the grid reaches 20% beyond the image on each side
    img = torch.randn(2, 3, 4, 6, generator=rng)
    grid = torch.rand(2, 5, 3, 2, generator=rng) * 2.4 - 1.2
    for mode in ("bilinear", "nearest", "bicubic"):
        for pad in ("zeros", "border", "reflection"):
            for ac in (False, True):
                ops = export(outdir, "gridsample_%s_%s_ac%d" % (mode, pad, ac),
                             Grid(mode=mode, padding_mode=pad, align_corners=ac), [img, grid], 16, ["x", "grid"])
                assert "GridSample" in ops, ops


def resize18_cases(outdir):
    """Resize-18 axes and keep_aspect_ratio_policy; expected values from onnx
    1.12's reference with the full-rank scales the specification implies."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 4, 6)).astype(np.float32)
    cases = [
        # name, attributes, scales or sizes of the listed axes, full-rank scale factors, output size
        ("axes_scales", dict(axes=[3, 2], mode="linear"), ("scales", np.array([1.5, 2.0], np.float32)),
         [1, 1, 2.0, 1.5]),
        ("axes_sizes_cubic", dict(axes=[-1], mode="cubic"), ("sizes", np.array([9], np.int64)), None),
        ("not_larger", dict(axes=[2, 3], mode="linear", keep_aspect_ratio_policy="not_larger"),
         ("sizes", np.array([8, 20], np.int64)), [1, 1, 2.0, 2.0]),        # min(8/4, 20/6) = 2: [8, 12]
        ("not_smaller", dict(axes=[2, 3], mode="nearest", keep_aspect_ratio_policy="not_smaller"),
         ("sizes", np.array([2, 9], np.int64)), [1, 1, 1.5, 1.5]),         # max(2/4, 9/6) = 1.5: [6, 9]
    ]
    for name, attrs, (kind, val), factors in cases:
        inputs = ["X", "", "scales" if kind == "scales" else "", "sizes" if kind == "sizes" else ""]
        while inputs[-1] == "":
            inputs.pop()
        node = helper.make_node("Resize", inputs, ["Y"], **attrs)
        mode = attrs["mode"]
        coeffs = {"linear": onnx_resize.linear_coeffs, "cubic": onnx_resize.cubic_coeffs,
                  "nearest": onnx_resize.nearest_coeffs}[mode]
        if factors is None:     # sizes of some axes, no policy: the others keep their size
            size = list(x.shape)
            for a, v in zip(attrs["axes"], val):
                size[a] = int(v)
            y = onnx_resize.interpolate_nd(x, coeffs, output_size=size)
        else:
            y = onnx_resize.interpolate_nd(x, coeffs, scale_factors=np.array(factors))
        y = y.astype(np.float32)
        graph = helper.make_graph(
            [node], name, [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, x.shape),
                           helper.make_tensor_value_info(kind, onnx.TensorProto.FLOAT if kind == "scales"
                                                         else onnx.TensorProto.INT64, val.shape)],
            [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, y.shape)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        print("resize18_%s: Y %s" % (name, y.shape))
        write_case(outdir, "resize18_" + name, model, [("X", x), (kind, val)], [("Y", y)])


def roi_cases(outdir):
    """Coordinate modes onnx 1.12's reference does not know, each an affine
    map x_ori = a + b x: the same map is tf_crop_and_resize with the roi
    start = a / (in - 1), end = start + b (out - 1) / (in - 1), which the
    reference computes (the roi keeps every x_ori inside the input, so no
    extrapolation).  Resize-19 half_pixel_symmetric (scales; in * scale not an
    integer, so its offset is not 0) and Resize-11 tf_half_pixel_for_nn
    (sizes, nearest)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    cases = [
        # name, opset, coordinate mode, mode, scales or sizes, per-axis map (in, out, scale) -> (a, b)
        ("resize19_half_pixel_symmetric", 19, "half_pixel_symmetric", "linear",
         ("scales", np.array([1, 1, 0.7, 0.6], np.float32)),
         lambda n, o, sc: (n / 2 * (1 - o / (n * sc)) + 0.5 / sc - 0.5, 1 / sc)),
        ("resize11_tf_half_pixel_for_nn", 11, "tf_half_pixel_for_nn", "nearest",
         ("sizes", np.array([1, 2, 2, 3], np.int64)),
         lambda n, o, sc: (0.5 / sc, 1 / sc)),
    ]
    for name, opset, coord, mode, (kind, val), amap in cases:
        if kind == "scales":
            out = [int(np.floor(np.float32(n) * v)) for n, v in zip(x.shape, val)]
            scales = [float(v) for v in val]
        else:
            out = [int(v) for v in val]
            scales = [o / n for n, o in zip(x.shape, out)]
        r = len(x.shape)
        roi = np.zeros(2 * r)
        for ax, (n, o, sc) in enumerate(zip(x.shape, out, scales)):
            if n == o and sc == 1.0:
                roi[ax], roi[r + ax] = 0.0, 1.0     # the identity
                continue
            a, b = amap(n, o, sc)
            roi[ax] = a / (n - 1)
            roi[r + ax] = roi[ax] + b * (o - 1) / (n - 1)
            assert 0 <= a and a + b * (o - 1) <= n - 1, (name, ax)
        coeffs = onnx_resize.linear_coeffs if mode == "linear" else onnx_resize.nearest_coeffs
        y = onnx_resize.interpolate_nd(x, coeffs, output_size=out, roi=roi,
                                       coordinate_transformation_mode="tf_crop_and_resize").astype(np.float32)
        inputs = ["X", "roi0" if opset == 11 else "", "scales" if kind == "scales" else "scales0" if opset == 11
                  else "", "sizes" if kind == "sizes" else ""]
        while inputs[-1] == "":
            inputs.pop()
        node = helper.make_node("Resize", inputs, ["Y"], mode=mode, coordinate_transformation_mode=coord)
        inits = [numpy_helper.from_array(np.zeros(0, np.float32), nm) for nm in ("roi0", "scales0") if nm in inputs]
        graph = helper.make_graph(
            [node], name, [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, x.shape),
                           helper.make_tensor_value_info(kind, onnx.TensorProto.FLOAT if kind == "scales"
                                                         else onnx.TensorProto.INT64, val.shape)],
            [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, y.shape)], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        print("%s: Y %s" % (name, y.shape))
        write_case(outdir, name, model, [("X", x), (kind, val)], [("Y", y)])


def official_cases():
    """The official test cases of these operators as onnx 1.12's case files
    build them (model and data in memory), by name."""
    from onnx.backend.test.case import node as cases
    from onnx.backend.test.case.node import gridsample, roialign, upsample
    onnx_resize.Resize.export_resize_upsample_sizes_nearest()
    onnx_resize.Resize.export_resize_downsample_scales_linear()
    upsample.Upsample.export_nearest()
    roialign.RoiAlign.export_roialign_aligned_false()
    gridsample.GridSample.export_gridsample()
    gridsample.GridSample.export_gridsample_paddingmode()
    gridsample.GridSample.export_gridsample_mode_aligncorners()
    return {t.name: t for t in cases._NodeTestCases}


def respelled_cases(outdir):
    """Official tests rewritten into another opset's spelling of the same
    computation; the expected data stay the official ones."""
    tests = official_cases()

    def copy(test, name, opset, edit, drop_inputs=0):
        model = onnx.ModelProto()
        model.CopyFrom(test.model)
        edit(model.graph.node[0])
        if model.graph.node[0].op_type == "Resize" and opset == 11:
            # Resize-11 cannot omit roi and scales: empty initializers
            node = model.graph.node[0]
            while len(node.input) < 3:
                node.input.append("")
            for k, nm in ((1, "roi0"), (2, "scales0")):
                if not node.input[k]:
                    node.input[k] = nm
                    model.graph.initializer.append(numpy_helper.from_array(np.zeros(0, np.float32), nm))
        del model.opset_import[:]
        model.opset_import.append(helper.make_opsetid("", opset))
        inputs, outputs = test.data_sets[0]
        names = [i.name for i in model.graph.input]
        if drop_inputs:
            keep = list(model.graph.input)[:len(names) - drop_inputs]
            del model.graph.input[:]
            model.graph.input.extend(keep)
            inputs = inputs[:len(names) - drop_inputs]
        write_case(outdir, name, model, list(zip(names, inputs)),
                   list(zip([o.name for o in model.graph.output], outputs)))
        print("%s: %s at opset %d" % (name, test.name, opset))

    def upsample7(node):       # scales input -> attribute
        scales = tests["test_upsample_nearest"].data_sets[0][0][1]
        del node.input[1:]
        node.attribute.append(helper.make_attribute("scales", [float(v) for v in scales]))

    def roialign10(node):      # no coordinate_transformation_mode: output_half_pixel
        keep = [a for a in node.attribute if a.name != "coordinate_transformation_mode"]
        del node.attribute[:]
        node.attribute.extend(keep)

    def gridsample20(node):    # mode bilinear -> linear, bicubic -> cubic
        for a in node.attribute:
            if a.name == "mode":
                a.s = {b"bilinear": b"linear", b"bicubic": b"cubic"}.get(a.s, a.s)

    copy(tests["test_upsample_nearest"], "official_upsample7_nearest", 7, upsample7, drop_inputs=1)
    copy(tests["test_resize_upsample_sizes_nearest"], "official_resize11_sizes_nearest", 11, lambda node: None)
    copy(tests["test_resize_downsample_scales_linear"], "official_resize11_scales_linear", 11, lambda node: None)
    copy(tests["test_roialign_aligned_false"], "official_roialign10_aligned_false", 10, roialign10)
    for t in ("test_gridsample", "test_gridsample_bicubic", "test_gridsample_nearest",
              "test_gridsample_reflection_padding", "test_gridsample_aligncorners_true"):
        copy(tests[t], "official_gridsample20" + t[len("test_gridsample"):], 20, gridsample20)


class SkipUp(torch.nn.Module):
    """A U-Net's skip connection over a run-time image size: a strided Conv2d
    down, F.interpolate back to the skip's own size (size=x.shape[2:]:
    sizes computed from Shape), concatenated and fused; and a scale_factor=2
    nearest upsampling of the downsampled map."""

    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.fuse = torch.nn.Conv2d(7, 2, 3, padding=1)

    def forward(self, x):
        d = torch.relu(self.down(x))
        u = F.interpolate(d, size=x.shape[2:], mode="bilinear", align_corners=False)
        v = F.interpolate(d, scale_factor=2.0, mode="nearest")
        return self.fuse(torch.cat([x, u], 1)), v


def dynamic_cases(outdir):
    """Resize over run-time sizes (issue 45 point 1): one export with batch,
    height and width dynamic, data sets at three sizes (odd ones, and one
    narrower than the kernel), PyTorch's outputs."""
    rng = torch.Generator().manual_seed(11)
    torch.manual_seed(11)
    net = SkipUp().eval()
    sizes = [(1, 16, 12), (2, 9, 7), (1, 2, 1)]
    xs = [torch.randn(b, 3, h, w, generator=rng) for b, h, w in sizes]
    f = io.BytesIO()
    torch.onnx.export(net, (xs[0],), f, opset_version=14, input_names=["x"], output_names=["y", "v"],
                      dynamic_axes={"x": {0: "B", 2: "H", 3: "W"}})
    model = onnx.load_from_string(f.getvalue())
    assert "Resize" in {n.op_type for n in model.graph.node}
    d = os.path.join(outdir, "skip_up_dynamic_hw_opset14")
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, x in enumerate(xs):
        with torch.no_grad():
            y, v = net(x)
        s = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(s)
        for kind, arrs in (("input", [("x", x)]), ("output", [("y", y), ("v", v)])):
            for j, (nm, a) in enumerate(arrs):
                with open(os.path.join(s, "%s_%d.pb" % (kind, j)), "wb") as fh:
                    fh.write(numpy_helper.from_array(np.ascontiguousarray(a.numpy()), nm).SerializeToString())
    print("skip_up_dynamic_hw_opset14: sizes %s" % sizes)


def ort_size(n, scale):
    """ONNX Runtime's output size of an axis of n by scale: the float32
    product, truncated."""
    return int(np.float32(scale) * np.float32(n))


def runtime_scale_cases(outdir):
    """A Resize (or Upsample) by scales that are no multiple of 1/64 over a
    run-time width W (issue 45 point 1): one model each, whose width is the
    symbol W, with data sets at many widths in the one build `cellc verify`
    makes; the expected values from onnx's reference at each output point
    with the output size ONNX Runtime gives (ort_size)."""
    widths = [1, 2, 3, 4, 5, 7, 10, 13, 20, 23, 30, 40, 50, 60, 70, 77, 100, 130]
    cases = [
        # name, opset, op, attributes, width scale, least width, reference coefficients and keywords
        ("scale_runtime_nearest_opset13", 13, "Resize", dict(mode="nearest"), 1.3, 1,
         onnx_resize.nearest_coeffs, {}),
        ("scale_runtime_nearest_ceil_opset11", 11, "Resize",
         dict(mode="nearest", nearest_mode="round_prefer_ceil", coordinate_transformation_mode="asymmetric"), 0.7,
         2, lambda r: onnx_resize.nearest_coeffs(r, mode="round_prefer_ceil"),
         dict(coordinate_transformation_mode="asymmetric")),
        ("scale_runtime_linear_opset13", 13, "Resize", dict(mode="linear"), 0.7, 2, onnx_resize.linear_coeffs, {}),
        ("scale_runtime_linear_pytorch_opset11", 11, "Resize",
         dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), 1.3, 1,
         onnx_resize.linear_coeffs, dict(coordinate_transformation_mode="pytorch_half_pixel")),
        # Resize-10 and Upsample-9: asymmetric; nearest rounds an upsampled coordinate down
        ("scale_runtime_linear_opset10", 10, "Resize", dict(mode="linear"), 0.6, 2, onnx_resize.linear_coeffs,
         dict(coordinate_transformation_mode="asymmetric")),
        ("scale_runtime_upsample9", 9, "Upsample", dict(mode="nearest"), 1.3, 1,
         lambda r: onnx_resize.nearest_coeffs(r, mode="floor"), dict(coordinate_transformation_mode="asymmetric")),
        # the roi crops the coordinates, not the size
        ("scale_runtime_crop_opset13", 13, "Resize",
         dict(mode="linear", coordinate_transformation_mode="tf_crop_and_resize"), 1.3, 1,
         onnx_resize.linear_coeffs, dict(coordinate_transformation_mode="tf_crop_and_resize")),
    ]
    rng = np.random.default_rng(45)
    for name, opset, op, attrs, sc, least, coeffs, kw in cases:
        scales = np.array([1, 1, 1, sc], np.float32)
        roi = np.array([0, 0, 0, 0.2, 1, 1, 1, 0.9], np.float32)
        crop = kw.get("coordinate_transformation_mode") == "tf_crop_and_resize"
        inputs = (["X", "roi", "scales"] if opset >= 11 else ["X", "scales"])
        inits = [numpy_helper.from_array(scales, "scales")]
        if opset >= 11:
            inits.append(numpy_helper.from_array(roi if crop else np.zeros(0, np.float32), "roi"))
        node = helper.make_node(op, inputs, ["Y"], **attrs)
        graph = helper.make_graph(
            [node], name, [helper.make_tensor_value_info("X", onnx.TensorProto.FLOAT, [1, 2, 1, "W"])],
            [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [1, 2, 1, "W_out"])], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 7
        d = os.path.join(outdir, name)
        os.makedirs(d)
        onnx.save(model, os.path.join(d, "model.onnx"))
        k = 0
        for w in widths:
            if w < least:
                continue
            x = rng.standard_normal((1, 2, 1, w)).astype(np.float32)
            out = [1, 2, 1, ort_size(w, sc)]
            y = np.zeros(out)
            for idx in np.ndindex(*out):
                y[idx] = onnx_resize.interpolate_nd_with_x(x, 4, scales.astype(np.float64), list(idx), coeffs,
                                                           roi=roi.astype(np.float64) if crop else None, **kw)
            s = os.path.join(d, "test_data_set_%d" % k)
            os.makedirs(s)
            for kind, nm, a in (("input", "X", x), ("output", "Y", y.astype(np.float32))):
                with open(os.path.join(s, "%s_0.pb" % kind), "wb") as fh:
                    fh.write(numpy_helper.from_array(np.ascontiguousarray(a), nm).SerializeToString())
            k += 1
        print("%s: %s by %g at %d widths" % (name, op, sc, k))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    torch_cases(outdir)
    resize18_cases(outdir)
    roi_cases(outdir)
    respelled_cases(outdir)
    dynamic_cases(outdir)
    runtime_scale_cases(outdir)


if __name__ == "__main__":
    main()
