"""onnx_ref.py: a small numpy interpreter for ONNX graphs made of the
operators cellc supports (the list of issue 2, plus Split/Expand/Flatten,
Equal/If/Cast/ReduceSum of the exports whose heads read the sequence
length, TopK/ReduceProd/Range/ScatterElements of pack_padded_sequence's, Tile,
and 1-D Conv and MaxPool),
written from the ONNX operator specification, with LSTM/GRU/RNN from
ref_rnn.py.  onnx 1.12 has no reference evaluator and ONNX Runtime is not a
Debian package, so this is what checks the golden data itself: that
PyTorch's outputs at other batch sizes and lengths than the export example
are what the exported graph computes (test_fixtures.py), i.e. that a cellc
failure on them is cellc's.

run(model, inputs) -> list of outputs (graph output order).
"""
import numpy as np
from onnx import helper, mapping, numpy_helper

from ref_rnn import rnn_ref_node


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _axes(node, a, ins, k, opset, since):
    """axes from the input k (opset >= since) or the attribute."""
    if opset >= since:
        return None if len(ins) <= k or ins[k] is None else [int(v) for v in ins[k]]
    return a.get("axes")


def _softmax(x, axis, log, opset):
    if opset < 13:      # coerce to 2-D [prod(d[:axis]), prod(d[axis:])]
        axis = axis % x.ndim
        x2 = x.reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
        return _softmax(x2, 1, log, 13).reshape(x.shape)
    x64 = x.astype(np.float64)
    m = x64 - x64.max(axis=axis, keepdims=True)
    s = np.log(np.exp(m).sum(axis=axis, keepdims=True))
    return ((m - s) if log else np.exp(m - s)).astype(x.dtype)


def _slice(x, starts, ends, axes, steps):
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    sl = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps):
        dim = x.shape[ax]
        # numpy slicing clamps exactly like ONNX once huge values are bounded
        s = max(min(int(s), dim + 1), -dim - 1)
        e = max(min(int(e), dim + 1), -dim - 1)
        sl[ax] = slice(s, e, int(st))
    return x[tuple(sl)]


def eval_node(node, ins, opset):
    op, a = node.op_type, _attrs(node)
    x = ins[0] if ins else None
    if op == "Constant":
        return [numpy_helper.to_array(a["value"])]
    if op == "Identity":
        return [x]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Squeeze":
        axes = _axes(node, a, ins, 1, opset, 13)
        if axes is None:
            return [np.squeeze(x)]
        return [np.squeeze(x, axis=tuple(v % x.ndim for v in axes))]
    if op == "Unsqueeze":
        axes = sorted(v % (x.ndim + len(_axes(node, a, ins, 1, opset, 13)))
                      for v in _axes(node, a, ins, 1, opset, 13))
        for v in axes:
            x = np.expand_dims(x, v)
        return [x]
    if op == "Slice":
        if opset < 10:
            return [_slice(x, a["starts"], a["ends"], a.get("axes"), None)]
        get = lambda k: None if len(ins) <= k or ins[k] is None else ins[k]
        return [_slice(x, ins[1], ins[2], get(3), get(4))]
    if op == "Split":
        axis = a.get("axis", 0) % x.ndim
        split = (ins[1] if len(ins) > 1 and ins[1] is not None else None) if opset >= 13 else a.get("split")
        if split is None:
            return list(np.split(x, len(node.output), axis=axis))
        return list(np.split(x, np.cumsum(split)[:-1], axis=axis))
    if op == "Concat":
        return [np.concatenate(ins, axis=a["axis"])]
    if op == "Gather":
        return [np.take(x, ins[1].astype(np.int64), axis=a.get("axis", 0))]
    if op == "Shape":
        s = np.array(x.shape, np.int64)
        return [s[a.get("start", 0):a.get("end", len(s))]]
    if op == "ConstantOfShape":
        v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
        return [np.full(tuple(int(d) for d in x), v.reshape(-1)[0], dtype=v.dtype)]
    if op == "Expand":
        shape = np.broadcast_shapes(x.shape, tuple(int(d) for d in ins[1]))
        return [np.broadcast_to(x, shape).copy()]
    if op == "Reshape":
        shape = [int(d) for d in ins[1]]
        if not a.get("allowzero", 0):
            shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Flatten":
        ax = a.get("axis", 1) % (x.ndim + 1) if x.ndim else 0
        return [x.reshape(int(np.prod(x.shape[:ax], dtype=np.int64)), -1)]
    if op == "Gemm":
        A = x.T if a.get("transA", 0) else x
        B = ins[1].T if a.get("transB", 0) else ins[1]
        y = a.get("alpha", 1.0) * (A.astype(np.float64) @ B.astype(np.float64))
        if len(ins) > 2 and ins[2] is not None:
            y = y + a.get("beta", 1.0) * ins[2]
        return [y.astype(x.dtype)]
    if op == "MatMul":
        return [np.matmul(x.astype(np.float64), ins[1].astype(np.float64)).astype(x.dtype)]
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}
    if op in binary:
        return [binary[op](x, ins[1]).astype(np.result_type(x, ins[1]))]
    if op == "Div":
        if np.issubdtype(x.dtype, np.integer):
            return [(x // ins[1]).astype(x.dtype)]
        return [(x / ins[1]).astype(x.dtype)]
    if op == "Equal":
        return [np.equal(x, ins[1])]
    if op == "Cast":
        return [x.astype(mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])]
    if op == "ReduceSum":
        # opset 13: axes an optional input; empty axes reduce all unless
        # noop_with_empty_axes
        axes = _axes(node, a, ins, 1, opset, 13)
        if not axes:
            if a.get("noop_with_empty_axes", 0):
                return [x]
            axes = list(range(x.ndim))
        y = x.astype(np.float64).sum(axis=tuple(v % x.ndim for v in axes), keepdims=bool(a.get("keepdims", 1)))
        return [np.asarray(y).astype(x.dtype)]
    if op == "ReduceProd":      # axes an attribute before opset 18
        axes = a.get("axes", list(range(x.ndim)))
        y = x.prod(axis=tuple(v % x.ndim for v in axes), keepdims=bool(a.get("keepdims", 1)))
        return [np.asarray(y).astype(x.dtype)]
    if op == "TopK":            # the k largest (or smallest) along axis, ties to the lower index
        axis, k = a.get("axis", -1) % x.ndim, int(ins[1].reshape(-1)[0])
        order = np.argsort(-x if a.get("largest", 1) else x, axis=axis, kind="stable")
        idx = np.take(order, np.arange(k), axis=axis)
        return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]
    if op in ("Conv", "MaxPool") and x.ndim == 3:      # 1-D only: [N, C, L]
        k = a.get("kernel_shape", [ins[1].shape[2]] if op == "Conv" else None)[0]
        st, (p0, p1) = a.get("strides", [1])[0], a.get("pads", [0, 0])
        if a.get("dilations", [1])[0] != 1 or a.get("group", 1) != 1 or a.get("ceil_mode", 0) \
                or a.get("auto_pad", "NOTSET") != "NOTSET":
            raise NotImplementedError("onnx_ref: %s with dilations, groups, ceil_mode or auto_pad" % op)
        fill = 0.0 if op == "Conv" else -np.inf
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p0, p1)), constant_values=fill)
        n = (xp.shape[2] - k) // st + 1
        win = np.stack([xp[:, :, i * st:i * st + k] for i in range(n)], axis=2)     # [N, C, n, k]
        if op == "MaxPool":
            return [win.max(axis=3).astype(x.dtype)]
        y = np.einsum("ncik,mck->nmi", win, ins[1].astype(np.float64))
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2].astype(np.float64)[None, :, None]
        return [y.astype(x.dtype)]
    if op == "Tile":
        return [np.tile(x, ins[1].astype(np.int64))]
    if op == "Range":
        return [np.arange(ins[0], ins[1], ins[2]).astype(ins[0].dtype)]
    if op == "ScatterElements":     # reduction none
        y = np.array(x, copy=True)
        np.put_along_axis(y, ins[1].astype(np.int64) % x.shape[a.get("axis", 0)], ins[2], axis=a.get("axis", 0))
        return [y]
    if op == "Sigmoid":
        return [(1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)]
    if op == "Tanh":
        return [np.tanh(x)]
    if op == "Relu":
        return [np.maximum(x, 0).astype(x.dtype)]
    if op in ("Softmax", "LogSoftmax"):
        axis = a.get("axis", -1 if opset >= 13 else 1)
        return [_softmax(x, axis, op == "LogSoftmax", opset)]
    if op in ("LSTM", "GRU", "RNN"):
        return rnn_ref_node(node, ins)
    if op == "Det":
        return [np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype)]
    if op == "Einsum":
        eq = a["equation"]
        eq = eq.decode() if isinstance(eq, bytes) else eq
        return [np.asarray(np.einsum(eq, *[v.astype(np.float64) for v in ins])).astype(x.dtype)]
    if op == "DFT":
        # opset 17: x [..., 1] real or [..., 2] complex; dft_length zero-pads
        # or cuts the signal axis; onesided keeps bins 0 .. n/2
        axis = a.get("axis", 1) % (x.ndim - 1)
        z = x[..., 0].astype(np.complex128)
        if x.shape[-1] == 2:
            z = z + 1j * x[..., 1]
        n = int(ins[1]) if len(ins) > 1 and ins[1] is not None and ins[1].size else z.shape[axis]
        if n < z.shape[axis]:
            z = np.take(z, np.arange(n), axis=axis)
        elif n > z.shape[axis]:
            pad = [(0, 0)] * z.ndim
            pad[axis] = (0, n - z.shape[axis])
            z = np.pad(z, pad)
        k = np.arange(n)
        sign = 1.0 if a.get("inverse", 0) else -1.0
        w = np.exp(sign * 2j * np.pi * np.outer(k, k) / n)      # the definition, not an FFT
        f = np.moveaxis(np.tensordot(np.moveaxis(z, axis, -1), w, axes=([-1], [1])), -1, axis)
        if a.get("inverse", 0):
            f = f / n
        if a.get("onesided", 0):
            f = np.take(f, np.arange(n // 2 + 1), axis=axis)
        return [np.stack([f.real, f.imag], -1).astype(x.dtype)]
    raise NotImplementedError("onnx_ref: operator %s" % op)


def _graph(g, env, opset):
    """g's nodes on env (its inputs and the outer scope's values); If runs
    the branch its condition picks, with env as the outer scope."""
    env = dict(env)
    env.update({t.name: numpy_helper.to_array(t) for t in g.initializer})
    for node in g.node:
        ins = [env[n] if n else None for n in node.input]
        if node.op_type == "If":
            a = _attrs(node)
            branch = a["then_branch"] if bool(np.asarray(ins[0]).reshape(-1)[0]) else a["else_branch"]
            outs = _graph(branch, env, opset)
        else:
            outs = eval_node(node, ins, opset)
        for name, val in zip(node.output, outs):
            if name:
                env[name] = val
    return [env[o.name] for o in g.output]


def run(model, inputs):
    """inputs: list of arrays in graph input order (initializers excluded)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    g = model.graph
    inits = {t.name for t in g.initializer}
    return _graph(g, dict(zip([i.name for i in g.input if i.name not in inits], inputs)), opset)
