"""gen_datadep_cases.py: models whose outputs have a data-dependent length
(NonZero, Unique, Compress, NonMaxSuppression), with golden data from numpy
(np.nonzero, np.unique, np.compress, and NonMaxSuppression written here in
numpy from the ONNX specification), for the harness group `datadep`.

OUTDIR/ok/<case>/model.onnx + test_data_set_N/: `cellc verify` must pass.
The cases go beyond the official node tests: symbolic dims in the bound
(several data sets of different sizes), lengths 0 and the full bound,
omitted optional outputs, several such nodes in one model, a constant
max_output_boxes_per_class (a tighter bound), many random boxes.
OUTDIR/mismatch/<case>/: golden data whose length differs from what the
model computes (the expected output of another input): `cellc verify` must
fail, naming the shape.

usage: gen_datadep_cases.py OUTDIR
"""
import os
import shutil
import sys

import numpy as np
from onnx import helper, mapping, numpy_helper

RNG = np.random.RandomState(2027)


def write_case(root, name, nodes, inputs, outputs, sets, inits=(), opset=13):
    """inputs/outputs: (name, numpy dtype, shape with str dims for symbols);
    sets: [(input arrays, output arrays)]."""
    d = os.path.join(root, name)
    os.makedirs(d)

    def vi(n, dt, shape):
        return helper.make_tensor_value_info(n, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)], shape)
    g = helper.make_graph(nodes, name, [vi(*i) for i in inputs], [vi(*o) for o in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="cellc-tests")
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for k, (ins, outs) in enumerate(sets):
        s = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(s)
        for j, a in enumerate(ins):
            with open(os.path.join(s, "input_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(a), inputs[j][0]).SerializeToString())
        for j, a in enumerate(outs):
            with open(os.path.join(s, "output_%d.pb" % j), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(a), outputs[j][0]).SerializeToString())


# ---- the oracles -------------------------------------------------------------

def nonzero(x):
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def unique(x, axis, sorted_):
    """Y, indices, inverse_indices, counts as the ONNX specification defines
    them (numpy's unique, reordered by first occurrence when not sorted)."""
    y, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis)
    inv = inv.reshape(-1)
    if not sorted_:
        order = np.argsort(idx, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        y = np.take(y, order, axis=0 if axis is None else axis)
        idx, cnt, inv = idx[order], cnt[order], rank[inv]
    return y, idx.astype(np.int64), inv.astype(np.int64), cnt.astype(np.int64)


def iou(a, b, center):
    def corners(v):
        if center:
            return v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2
        return min(v[0], v[2]), min(v[1], v[3]), max(v[0], v[2]), max(v[1], v[3])
    ay1, ax1, ay2, ax2 = corners(a)
    by1, bx1, by2, bx2 = corners(b)
    area_a, area_b = (ay2 - ay1) * (ax2 - ax1), (by2 - by1) * (bx2 - bx1)
    if area_a <= 0 or area_b <= 0:
        return 0.0
    ih, iw = min(ay2, by2) - max(ay1, by1), min(ax2, bx2) - max(ax1, bx1)
    if ih <= 0 or iw <= 0:
        return 0.0
    inter = ih * iw
    return inter / (area_a + area_b - inter)


def nms(boxes, scores, max_out, iou_thr, score_thr, center):
    """The specification's greedy selection, per batch and class."""
    rows = []
    for b in range(boxes.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            order = [i for i in np.argsort(-s, kind="stable") if score_thr is None or s[i] > score_thr]
            taken = []
            for i in order:
                if len(taken) >= max_out:
                    break
                if all(iou(boxes[b, j], boxes[b, i], center) <= iou_thr for j in taken):
                    taken.append(i)
            rows += [[b, c, i] for i in taken]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


# ---- the cases -----------------------------------------------------------------

def ok_cases(root):
    # NonZero over a symbolic batch: bound 4*N, lengths 0, some and all
    xs = [np.zeros((2, 4), np.float32), (RNG.rand(3, 4) > 0.5).astype(np.float32) * RNG.randn(3, 4).astype(np.float32),
          RNG.rand(5, 4).astype(np.float32) + 1]
    write_case(root, "nonzero_symbolic", [helper.make_node("NonZero", ["x"], ["y"])],
               [("x", np.float32, ["N", 4])], [("y", np.int64, [2, None])],
               [([x], [nonzero(x)]) for x in xs])
    # NonZero of int32 rank 3 and bool rank 1 in one model (two lengths)
    a = RNG.randint(-2, 3, (2, 3, 4)).astype(np.int32)
    b = RNG.rand(7) > 0.6
    write_case(root, "nonzero_two", [helper.make_node("NonZero", ["a"], ["ya"]),
                                     helper.make_node("NonZero", ["b"], ["yb"])],
               [("a", np.int32, [2, 3, 4]), ("b", np.bool_, [7])],
               [("ya", np.int64, [3, None]), ("yb", np.int64, [1, None])],
               [([a, b], [nonzero(a), nonzero(b)])])
    # Compress along a symbolic axis and flattened, a condition shorter than the axis
    sets = []
    for n in (3, 6):
        x = RNG.randn(2, n, 3).astype(np.float32)
        c1 = RNG.rand(n) > 0.5
        c2 = RNG.rand(4) > 0.3
        sets.append(([x, c1, c2], [np.compress(c1, x, axis=1), np.compress(c2, x)]))
    write_case(root, "compress_axes", [helper.make_node("Compress", ["x", "c1"], ["y1"], axis=-2),
                                       helper.make_node("Compress", ["x", "c2"], ["y2"])],
               [("x", np.float32, [2, "T", 3]), ("c1", np.bool_, ["T"]), ("c2", np.bool_, [4])],
               [("y1", np.float32, [2, None, 3]), ("y2", np.float32, [None])], sets, opset=11)
    # Unique: sorted and not, with and without axis, every dtype kind, an omitted output
    x = RNG.randint(0, 4, (4, 5)).astype(np.int64)
    for axis in (None, 0, 1):
        for s in (0, 1):
            attrs = {"sorted": s}
            if axis is not None:
                attrs["axis"] = axis
            xx = np.repeat(x[:2], 2, axis=0) if axis == 0 else x
            y, idx, inv, cnt = unique(xx, axis, s)
            write_case(root, "unique_%s_%s" % ("flat" if axis is None else "axis%d" % axis,
                                                "sorted" if s else "first"),
                       [helper.make_node("Unique", ["x"], ["y", "idx", "inv", "cnt"], **attrs)],
                       [("x", np.int64, list(xx.shape))],
                       [("y", np.int64, None), ("idx", np.int64, None), ("inv", np.int64, None),
                        ("cnt", np.int64, None)], [([xx], [y, idx, inv, cnt])], opset=11)
    xf = np.round(RNG.randn(3, 6, 2), 0).astype(np.float64)
    xf[:, 3] = xf[:, 1]
    y, idx, inv, cnt = unique(xf, 1, 0)
    write_case(root, "unique_f64_axis1_first_no_indices",
               [helper.make_node("Unique", ["x"], ["y", "", "inv", "cnt"], axis=1, sorted=0)],
               [("x", np.float64, [3, 6, 2])],
               [("y", np.float64, None), ("inv", np.int64, None), ("cnt", np.int64, None)],
               [([xf], [y, inv, cnt])], opset=11)
    xb = RNG.rand(9) > 0.5
    y, idx, inv, cnt = unique(xb, None, 1)
    write_case(root, "unique_bool_y_only", [helper.make_node("Unique", ["x"], ["y"])],
               [("x", np.bool_, [9])], [("y", np.bool_, None)], [([xb], [y])], opset=11)
    # NonMaxSuppression: random boxes, both box formats, a constant max
    # (bound batches * classes * 3) and a run-time one with a score threshold
    for center in (0, 1):
        nb, nc, nbox = 2, 3, 20
        if center:
            bx = np.concatenate([RNG.rand(nb, nbox, 2) * 4, RNG.rand(nb, nbox, 2) + 0.5], axis=2)
        else:
            bx = RNG.rand(nb, nbox, 4) * 4
        bx = bx.astype(np.float32)
        sc = RNG.rand(nb, nc, nbox).astype(np.float32)
        mx = np.array([3], np.int64)
        thr = np.array([0.3], np.float32)
        write_case(root, "nms_const_max_center%d" % center,
                   [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"], ["sel"],
                                     center_point_box=center)],
                   [("boxes", np.float32, [nb, nbox, 4]), ("scores", np.float32, [nb, nc, nbox])],
                   [("sel", np.int64, [None, 3])],
                   [([bx, sc], [nms(bx, sc, 3, 0.3, None, center)])], inits=[("max", mx), ("iou", thr)], opset=11)
        st = np.array([0.4], np.float32)
        write_case(root, "nms_runtime_max_center%d" % center,
                   [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou", "st"], ["sel"],
                                     center_point_box=center)],
                   [("boxes", np.float32, [nb, nbox, 4]), ("scores", np.float32, [nb, nc, nbox]),
                    ("max", np.int64, [1]), ("iou", np.float32, [1]), ("st", np.float32, [1])],
                   [("sel", np.int64, [None, 3])],
                   [([bx, sc, np.array([m], np.int64), np.array([0.5], np.float32), st],
                     [nms(bx, sc, m, 0.5, 0.4, center)]) for m in (0, 4, 100)], opset=11)
    # torch.nonzero's export: NonZero then Transpose, the indices [N, rank]
    # (np.argwhere); no element, some, and every element of a symbolic batch
    xs = [np.zeros((2, 3), np.float32), (RNG.rand(4, 3) > 0.5).astype(np.float32), np.ones((3, 3), np.float32)]
    write_case(root, "nonzero_transposed", [helper.make_node("NonZero", ["x"], ["nz"]),
                                            helper.make_node("Transpose", ["nz"], ["y"], perm=[1, 0])],
               [("x", np.float32, ["N", 3])], [("y", np.int64, [None, 2])],
               [([x], [np.argwhere(x).astype(np.int64)]) for x in xs])


def mismatch_cases(root):
    """The golden output of another input, of another length."""
    x = np.array([[1, 0, 2], [0, 0, 3]], np.float32)
    other = np.array([[1, 0, 2], [0, 5, 3]], np.float32)
    write_case(root, "nonzero_length", [helper.make_node("NonZero", ["x"], ["y"])],
               [("x", np.float32, [2, 3])], [("y", np.int64, [2, None])], [([x], [nonzero(other)])])
    bx = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [2, 2, 3, 3]]], np.float32)
    sc = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    write_case(root, "nms_length", [helper.make_node("NonMaxSuppression", ["b", "s", "m", "i"], ["sel"])],
               [("b", np.float32, [1, 3, 4]), ("s", np.float32, [1, 1, 3])], [("sel", np.int64, [None, 3])],
               [([bx, sc], [nms(bx, sc, 10, 0.95, None, 0)])],
               inits=[("m", np.array([10], np.int64)), ("i", np.array([0.5], np.float32))], opset=11)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_datadep_cases.py OUTDIR")
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    ok_cases(os.path.join(out, "ok"))
    mismatch_cases(os.path.join(out, "mismatch"))
    print("gen_datadep_cases: %d cases, %d mismatches" % (len(os.listdir(os.path.join(out, "ok"))),
                                                          len(os.listdir(os.path.join(out, "mismatch")))))


if __name__ == "__main__":
    main()
