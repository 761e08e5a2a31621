"""gen_eval_ops_cases.py: fixtures of the harness group `eval_ref` for the
operators only cellc's own passes make (pass_grad.c, cells.c), which no
ONNX test has: ConvGrad, PadGrad, ClassLossGrad and MatrixExp, each alone
in a graph of the native text format (model.cell, one node), its expected
output from PyTorch in float64 (autograd of conv1d/conv2d, F.pad and
nll_loss; torch.linalg.matrix_exp), never from cellc.

The training build's validation checks these operators' references only
against central differences of the same references' forward operators (and
MatrixExp's gradient is itself a MatrixExp): a reference that is wrong the
same way in both passes that check, so this oracle is the one that can
catch it.

Layout: OUT/<case>/model.cell and test_data_set_0/input_K.pb (the graph's
inputs in order) and output_0.pb; inputs float32 (integer targets int64),
outputs float64 results rounded to float32.  Fixed seed.

usage: gen_eval_ops_cases.py OUT
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from onnx import numpy_helper

RNG = np.random.RandomState(4043)
TYPES = {np.dtype(np.float32): "f32", np.dtype(np.int64): "i64"}


def attr_text(attrs):
    def one(v):
        if isinstance(v, str):
            return '"%s"' % v
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(str(x) for x in v) + "]"
        return str(v)
    return " {" + ", ".join("%s = %s" % (k, one(v)) for k, v in attrs.items()) + "}" if attrs else ""


def write_case(root, name, op, inputs, attrs, expected):
    """inputs: [(name, ndarray)], the node's inputs in order."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    lines = ["graph %s {" % name]
    for n, a in inputs:
        lines.append("\tinput %%%s: %s[%s]" % (n, TYPES[a.dtype], ", ".join(str(x) for x in a.shape)))
    lines.append("\t%%y = %s(%s)%s" % (op, ", ".join("%" + n for n, _ in inputs), attr_text(attrs)))
    lines += ["\toutput %y", "}", ""]
    with open(os.path.join(d, "model.cell"), "w") as f:
        f.write("\n".join(lines))
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(np.asarray(expected, dtype=np.float32), "y").SerializeToString())


def f32(*shape, scale=1.0):
    return (RNG.uniform(-1, 1, shape) * scale).astype(np.float32)


def t64(a, grad=False):
    return torch.tensor(a, dtype=torch.float64, requires_grad=grad)


# ---- MatrixExp ------------------------------------------------------------------

def matexp_cases(root):
    s = np.array([[0.0, 1.3], [-1.3, 0.0]], dtype=np.float32)
    rot = np.array([[np.cos(1.3), np.sin(1.3)], [-np.sin(1.3), np.cos(1.3)]])
    assert np.allclose(torch.linalg.matrix_exp(t64(s)).numpy(), rot)
    a13 = np.triu(f32(13, 13, scale=2.0), 1)
    mats = {"matexp_rotation": s, "matexp_small_3": f32(3, 3, scale=0.2), "matexp_large_5": f32(5, 5, scale=3.0),
            "matexp_skew_13": (a13 - a13.T).astype(np.float32), "matexp_nilpotent_4": np.triu(f32(4, 4), 1)}
    for name, x in mats.items():
        write_case(root, name, "MatrixExp", [("x", x)], {}, torch.linalg.matrix_exp(t64(x)).numpy())


# ---- ConvGrad -------------------------------------------------------------------

def conv_cases(root):
    # (name, X shape, W shape, strides, pads [begins.., ends..], dilations, group)
    for name, xs, ws, st, pads, dil, grp in [
            ("conv1d", (2, 3, 9), (4, 3, 3), [1], [1, 1], [1], 1),
            ("conv1d_stride_pad_dil", (2, 4, 11), (6, 2, 3), [2], [2, 1], [2], 2),
            ("conv2d", (1, 2, 5, 6), (3, 2, 2, 3), [1, 2], [0, 1, 1, 0], [1, 1], 1)]:
        nsp = len(xs) - 2
        x, w = f32(*xs), f32(*ws)
        X, W = t64(x, True), t64(w, True)
        torch_pad = []
        for a in reversed(range(nsp)):          # F.pad: last axis first
            torch_pad += [pads[a], pads[nsp + a]]
        conv = F.conv1d if nsp == 1 else F.conv2d
        Y = conv(F.pad(X, torch_pad), W, stride=st, dilation=dil, groups=grp)
        dy = f32(*Y.shape)
        dX, dW = torch.autograd.grad(Y, (X, W), t64(dy))
        attrs = {"group": grp, "strides": st, "pads": pads, "dilations": dil}
        for wrt, want in ((0, dX), (1, dW)):
            write_case(root, "convgrad_%s_wrt%d" % (name, wrt), "ConvGrad", [("x", x), ("w", w), ("dy", dy)],
                       dict(wrt=wrt, **attrs), want.numpy())


# ---- PadGrad --------------------------------------------------------------------

def pad_cases(root):
    # (name, X shape, pads of every axis [begins.., ends..], mode, F.pad's mode)
    for name, xs, pads, mode, tmode in [
            ("constant", (2, 3, 4), [0, 1, 2, 0, 2, 1], "constant", "constant"),
            ("constant_crop", (2, 3, 5), [0, 0, -1, 0, 2, -2], "constant", "constant"),
            ("edge", (1, 2, 5), [0, 0, 3, 0, 0, 2], "edge", "replicate"),
            ("reflect", (1, 2, 6), [0, 0, 4, 0, 0, 3], "reflect", "reflect"),
            ("wrap", (1, 2, 5), [0, 0, 2, 0, 0, 4], "wrap", "circular"),
            ("reflect_2d", (1, 1, 4, 5), [0, 0, 2, 1, 0, 0, 3, 2], "reflect", "reflect")]:
        r = len(xs)
        x = f32(*xs)
        X = t64(x, True)
        torch_pad = []
        for a in reversed(range(r)):
            torch_pad += [pads[a], pads[r + a]]
        if tmode != "constant":                 # torch pads only the spatial axes there
            torch_pad = torch_pad[:2 * (r - 2)]
        Y = F.pad(X, torch_pad, mode=tmode)
        dy = f32(*Y.shape)
        (dX,) = torch.autograd.grad(Y, (X,), t64(dy))
        write_case(root, "padgrad_" + name, "PadGrad", [("x", x), ("dy", dy)], {"pads": pads, "mode": mode},
                   dX.numpy())


# ---- ClassLossGrad --------------------------------------------------------------

def nll(L, t, w, reduction, ignore):
    """NegativeLogLikelihoodLoss written out (F.nll_loss does not
    differentiate its weight): terms -w[t] L[n, t, d..] where t != ignore."""
    keep = t != ignore if ignore is not None else torch.ones_like(t, dtype=torch.bool)
    tt = torch.where(keep, t, torch.zeros_like(t))
    picked = torch.gather(L, 1, tt.unsqueeze(1)).squeeze(1)
    wt = (w[tt] if w is not None else torch.ones_like(picked)) * keep
    terms = -wt * picked
    if reduction == "none":
        return terms
    return terms.sum() if reduction == "sum" else terms.sum() / wt.sum()


def class_loss_cases(root):
    # (name, L shape, reduction, weights, ignore_index)
    for name, ls, red, weighted, ignore in [
            ("mean", (5, 4), "mean", False, None),
            ("mean_weight_ignore", (6, 5), "mean", True, 2),
            ("sum_weight", (4, 3, 3), "sum", True, None),
            ("none_weight_ignore", (3, 4, 2), "none", True, 1)]:
        logits = t64(f32(*ls, scale=2.0))
        lp = torch.log_softmax(logits, 1).numpy().astype(np.float32)
        tshape = (ls[0],) + ls[2:]
        t = RNG.randint(0, ls[1], tshape).astype(np.int64)
        if ignore is not None:
            t.flat[1] = ignore
        w = RNG.uniform(0.3, 2.0, ls[1]).astype(np.float32) if weighted else None
        L, W = t64(lp, True), t64(w, True) if weighted else None
        loss = nll(L, torch.tensor(t), W, red, ignore)
        dl = f32(*loss.shape) if red == "none" else np.array(RNG.uniform(0.5, 2.0), dtype=np.float32)
        grads = torch.autograd.grad(loss, (L, W) if weighted else (L,), t64(dl))
        ins = [("dloss", dl), ("l", lp), ("t", t)] + ([("w", w)] if weighted else [])
        attrs = {"reduction": red}
        if ignore is not None:
            attrs["ignore_index"] = ignore
        for wrt in range(len(grads)):
            write_case(root, "classlossgrad_%s_wrt%d" % (name, wrt), "ClassLossGrad", ins, dict(wrt=wrt, **attrs),
                       grads[wrt].numpy())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_eval_ops_cases.py OUT")
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    matexp_cases(root)
    conv_cases(root)
    pad_cases(root)
    class_loss_cases(root)


if __name__ == "__main__":
    main()
