"""gen_quant_cases.py: ONNX models quantized the way ONNX Runtime's dynamic
quantizer writes them, for `cellc verify --oracle onnxruntime` (harness group
quantized): the expected outputs are ONNX Runtime's own on the same file.

Three PyTorch exports (torch.onnx.export, opset 13/14/17) are rewritten as
ONNX Runtime's quantize_dynamic rewrites a float model:
  - each LSTM becomes com.microsoft DynamicQuantizeLSTM: W and R transposed
    to [num_directions, K, 4*hidden] and quantized, with their scales and
    zero points as initializers (inputs 8 to 11);
  - each MatMul by an initializer becomes DynamicQuantizeLinear (the
    activations, uint8) -> MatMulInteger (int8 or uint8 weights, a zero
    point per tensor) -> Cast to float -> Mul by the product of the scales.
The weights are quantized as that tool does (its formulas, written here):
symmetric int8 in [-127, 127] with scale max|w| / 127 and zero point 0, per
tensor or per output column; or asymmetric uint8 with scale (max - min) /
255 over a range that contains 0 and zero point round(-min / scale).
A QDQ model (ONNX Runtime's static quantization format) of a fourth export
keeps the LSTM in float32, as that format does, and wraps its head's
MatMul: DequantizeLinear on the int8 weight (per output column, axis 1),
QuantizeLinear -> DequantizeLinear on the activation (uint8, a fixed scale
and zero point for the LSTM's (-1, 1) output, as calibration would give).
A fifth model is written with onnx.helper directly: a reverse
DynamicQuantizeLSTM with peepholes, constant sequence lengths and initial
states, per-output int8 weights.  Two more are quantized and then fused as
ONNX Runtime's graph optimiser saves them (fuse_matmuls): the head as
com.microsoft MatMulIntegerToFloat (int8) and as DynamicQuantizeMatMul
(uint8 with a zero point, bidirectional), each with its bias.

Each case is CASE/model.onnx and CASE/case.json (the `cellc verify` options
the harness passes: the dims of the run, and the tolerance options when not
the harness's QUANT_TOL).  Seeds are fixed.

usage: gen_quant_cases.py OUTDIR
       gen_quant_cases.py --quantize IN.onnx OUT.onnx
(the second form: IN quantized as ONNX Runtime's quantize_dynamic does with
its defaults, int8 weights per tensor: make bench's quantized peer)
"""
import io
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, TensorProto

warnings.filterwarnings("ignore")


def quantize(w, axis, per_channel, qtype):
    """w quantized along `axis` kept (per_channel) or as a whole: (q, scale,
    zero point) with scale/zp of shape [w.shape[axis]] or []."""
    red = tuple(i for i in range(w.ndim) if i != axis) if per_channel else None
    lo = np.minimum(w.min(axis=red), 0.0)
    hi = np.maximum(w.max(axis=red), 0.0)
    if qtype == "int8":
        absmax = np.maximum(np.abs(lo), np.abs(hi))
        scale = (2 * absmax / 254.0).astype(np.float32)
        scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
        zp = np.zeros_like(scale, dtype=np.int8)
        qmin, qmax, dt = -127, 127, np.int8
    else:
        scale = ((hi - lo) / 255.0).astype(np.float32)
        scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
        zp = np.clip(np.round(0 - lo / scale), 0, 255).astype(np.uint8)
        qmin, qmax, dt = 0, 255, np.uint8
    shape = [1] * w.ndim
    if per_channel:
        shape[axis] = w.shape[axis]
    q = np.clip(np.round(w / scale.reshape(shape)) + zp.reshape(shape).astype(np.float32), qmin, qmax).astype(dt)
    return q, scale, zp


def init(g, name):
    for t in g.initializer:
        if t.name == name:
            return t
    return None


def set_nodes(g, nodes):
    """g's nodes replaced by nodes, and the initializers no node reads any
    more dropped (the float weights a quantized node replaced)."""
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)


def qdq_model(m):
    """The MatMul nodes by a 2-D initializer in QDQ form, in place."""
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    nodes = []
    for n in g.node:
        if n.op_type == "MatMul" and n.input[1] in inits and numpy_helper.to_array(inits[n.input[1]]).ndim == 2:
            w = numpy_helper.to_array(inits[n.input[1]])
            q, s, z = quantize(w, 1, True, "int8")
            a, p = n.input[0], n.name or "matmul"
            g.initializer.extend([numpy_helper.from_array(q, p + "_W_q"), numpy_helper.from_array(s, p + "_W_s"),
                                  numpy_helper.from_array(z, p + "_W_zp"),
                                  numpy_helper.from_array(np.float32(2.0 / 255), p + "_a_s"),
                                  numpy_helper.from_array(np.uint8(128), p + "_a_zp")])
            nodes += [
                helper.make_node("DequantizeLinear", [p + "_W_q", p + "_W_s", p + "_W_zp"], [p + "_W"], axis=1,
                                 name=p + "_dq_w"),
                helper.make_node("QuantizeLinear", [a, p + "_a_s", p + "_a_zp"], [a + "_q"], name=p + "_q_a"),
                helper.make_node("DequantizeLinear", [a + "_q", p + "_a_s", p + "_a_zp"], [a + "_dq"],
                                 name=p + "_dq_a"),
                helper.make_node("MatMul", [a + "_dq", p + "_W"], list(n.output), name=p)]
        else:
            nodes.append(n)
    set_nodes(g, nodes)
    return m


def fuse_matmuls(g, nodes, fused):
    """What ONNX Runtime's graph optimiser makes of the quantized MatMuls
    (its saved optimised model): fused "to_float", MatMulInteger -> Cast ->
    Mul(scales) -> Mul becomes com.microsoft MatMulIntegerToFloat; fused
    "dynamic", the DynamicQuantizeLinear before it goes too, into
    DynamicQuantizeMatMul; either takes a following Add of a bias
    initializer as its bias input."""
    inits = {t.name for t in g.initializer}
    by_out = {o: n for n in nodes for o in n.output}
    readers = {}
    for n in nodes:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    drop, out = set(), []
    for n in nodes:
        if n.op_type != "MatMulInteger":
            continue
        p = n.name[:-len("_mmi")]
        dql, cast = by_out[n.input[0]], readers[n.output[0]][0]
        scales = by_out[p + "_s"]
        deq = readers[cast.output[0]][0]
        y, bias = deq.output[0], ""
        nxt = readers.get(y, [])
        if len(nxt) == 1 and nxt[0].op_type == "Add" and (set(nxt[0].input) & inits):
            bias = [i for i in nxt[0].input if i in inits][0]
            drop.add(id(nxt[0]))
            y = nxt[0].output[0]
        if fused == "dynamic":
            f = helper.make_node("DynamicQuantizeMatMul", [dql.input[0], n.input[1], scales.input[1], n.input[3],
                                                           bias], [y], name=p + "_dqmm", domain="com.microsoft")
            drop.add(id(dql))
        else:
            f = helper.make_node("MatMulIntegerToFloat", [n.input[0], n.input[1], scales.input[0],
                                                          scales.input[1], n.input[2], n.input[3], bias],
                                 [y], name=p + "_mmitf", domain="com.microsoft")
        drop |= {id(cast), id(scales), id(deq)}
        out.append((id(n), f))
    repl = dict(out)
    return [repl.get(id(n), n) for n in nodes if id(n) not in drop]


def quantize_model(m, per_channel, qtype, fused=None):
    """ONNX Runtime's dynamic quantization of LSTM and MatMul nodes, in place
    (fused: then its optimiser's fusion of the MatMuls, fuse_matmuls)."""
    g = m.graph
    nodes = []
    inits = {t.name: t for t in g.initializer}
    for n in g.node:
        if n.op_type == "LSTM":
            ins = list(n.input) + [""] * (8 - len(n.input))
            extra = []
            for k, tag in ((1, "W"), (2, "R")):
                w = numpy_helper.to_array(inits[ins[k]])            # [D, 4H, K]
                wt = np.ascontiguousarray(np.transpose(w, (0, 2, 1)))   # [D, K, 4H]
                qs, ss, zs = [], [], []
                for d in range(wt.shape[0]):
                    q, s, z = quantize(wt[d], 1, per_channel, qtype)
                    qs.append(q)
                    ss.append(s)
                    zs.append(z)
                base = "%s_%s_quantized" % (n.name or "lstm", tag)
                g.initializer.extend([
                    numpy_helper.from_array(np.stack(qs), base),
                    numpy_helper.from_array(np.stack(ss).astype(np.float32), base + "_scale"),
                    numpy_helper.from_array(np.stack(zs), base + "_zero_point")])
                ins[k] = base
                extra += [base + "_scale", base + "_zero_point"]
            q = helper.make_node("DynamicQuantizeLSTM", ins + extra, list(n.output),
                                 name=(n.name or "lstm") + "_quant", domain="com.microsoft")
            q.attribute.extend(n.attribute)
            nodes.append(q)
        elif n.op_type == "MatMul" and n.input[1] in inits and \
                numpy_helper.to_array(inits[n.input[1]]).ndim == 2:
            w = numpy_helper.to_array(inits[n.input[1]])                # [K, N]
            q, s, z = quantize(w, 1, False, qtype)
            a = n.input[0]
            p = n.name or "matmul"
            g.initializer.extend([numpy_helper.from_array(q, p + "_B_quantized"),
                                  numpy_helper.from_array(np.float32(s), p + "_B_scale"),
                                  numpy_helper.from_array(z.reshape(()), p + "_B_zero_point")])
            nodes += [
                helper.make_node("DynamicQuantizeLinear", [a], [a + "_q", a + "_scale", a + "_zp"],
                                 name=p + "_dql"),
                helper.make_node("MatMulInteger", [a + "_q", p + "_B_quantized", a + "_zp", p + "_B_zero_point"],
                                 [p + "_int32"], name=p + "_mmi"),
                helper.make_node("Cast", [p + "_int32"], [p + "_f"], to=TensorProto.FLOAT, name=p + "_cast"),
                helper.make_node("Mul", [a + "_scale", p + "_B_scale"], [p + "_s"], name=p + "_scales"),
                helper.make_node("Mul", [p + "_f", p + "_s"], list(n.output), name=p + "_dequant")]
        else:
            nodes.append(n)
    if fused:
        nodes = fuse_matmuls(g, nodes, fused)
    set_nodes(g, nodes)
    m.opset_import.extend([helper.make_opsetid("com.microsoft", 1)])
    return m


class Net(torch.nn.Module):
    def __init__(self, inp, hidden, layers, bidir, head, classes, with_state):
        super().__init__()
        self.rnn = torch.nn.LSTM(inp, hidden, num_layers=layers, bidirectional=bidir)
        self.fc = torch.nn.Linear(hidden * (2 if bidir else 1), classes)
        self.head, self.with_state = head, with_state

    def forward(self, x, *state):
        out, (h, c) = self.rnn(x, tuple(state) if self.with_state else None)
        if self.head == "seq":          # a 3-D MatMul + Add: quantized as MatMulInteger
            return self.fc(out), h, c
        return torch.log_softmax(self.fc(out[-1]), dim=-1), h      # a Gemm: stays float


def export(net, args, names, outs, opset):
    f = io.BytesIO()
    dyn = {n: {0: "seq", 1: "batch"} if n == "x" else {1: "batch"} for n in names}
    torch.onnx.export(net, args, f, input_names=names, output_names=outs, opset_version=opset,
                      dynamic_axes=dyn)
    return onnx.load_from_string(f.getvalue())


def torch_case(out, name, seed, opset, inp, hidden, layers, bidir, head, with_state, per_channel, qtype,
               fused=None):
    """qtype "qdq": the QDQ form (qdq_model) instead of the dynamic one;
    fused: the dynamic one as ONNX Runtime's optimiser saves it."""
    torch.manual_seed(seed)
    net = Net(inp, hidden, layers, bidir, head, 3, with_state).eval()
    D = 2 if bidir else 1
    x = torch.rand(6, 2, inp) * 2 - 1
    args, names = (x,), ["x"]
    if with_state:
        args += (torch.zeros(layers * D, 2, hidden), torch.zeros(layers * D, 2, hidden))
        names += ["h0", "c0"]
    outs = ["y", "hn", "cn"] if head == "seq" else ["y", "hn"]
    m = export(net, args, names, outs, opset)
    m = qdq_model(m) if qtype == "qdq" else quantize_model(m, per_channel, qtype, fused)
    # QDQ computes what ONNX Runtime computes (the same rounding, in float):
    # cellc verify's default tolerances
    write(out, name, m, ["seq=6", "batch=2"], [] if qtype == "qdq" else None)


def helper_case(out, name, seed):
    """A reverse DynamicQuantizeLSTM written by hand: peepholes, constant
    sequence lengths, initial states, per-output int8 W and R."""
    rng = np.random.default_rng(seed)
    I, H, B, T = 4, 5, 3, 7
    w = rng.uniform(-0.6, 0.6, (1, I, 4 * H)).astype(np.float32)
    r = rng.uniform(-0.6, 0.6, (1, H, 4 * H)).astype(np.float32)
    qw, sw, zw = quantize(w[0], 1, True, "int8")
    qr, sr, zr = quantize(r[0], 1, True, "int8")
    tensors = [
        ("W", qw[None]), ("R", qr[None]),
        ("B", rng.uniform(-0.2, 0.2, (1, 8 * H)).astype(np.float32)),
        ("lens", np.array([7, 4, 1], dtype=np.int32)),
        ("h0", rng.uniform(-0.5, 0.5, (1, B, H)).astype(np.float32)),
        ("c0", rng.uniform(-0.5, 0.5, (1, B, H)).astype(np.float32)),
        ("P", rng.uniform(-0.3, 0.3, (1, 3 * H)).astype(np.float32)),
        ("W_scale", sw[None]), ("W_zp", zw[None]), ("R_scale", sr[None]), ("R_zp", zr[None])]
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "W", "R", "B", "lens", "h0", "c0", "P",
                                                    "W_scale", "W_zp", "R_scale", "R_zp"],
                            ["y", "yh", "yc"], domain="com.microsoft", hidden_size=H, direction="reverse",
                            name="qlstm")
    g = helper.make_graph(
        [node], "dql_helper",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, B, I])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [T, 1, B, H]),
         helper.make_tensor_value_info("yh", TensorProto.FLOAT, [1, B, H]),
         helper.make_tensor_value_info("yc", TensorProto.FLOAT, [1, B, H])],
        [numpy_helper.from_array(v, n) for n, v in tensors])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)])
    write(out, name, m, [])


def write(out, name, m, dims, tol=None):
    """tol: the verify tolerance options of the float32 run, None for the
    harness's QUANT_TOL (ONNX Runtime quantizes activations, cellc not)."""
    d = os.path.join(out, name)
    os.makedirs(d)
    onnx.save(m, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump({"dims": dims, "tol": tol}, f)


def main():
    if sys.argv[1] == "--quantize":
        onnx.save(quantize_model(onnx.load(sys.argv[2]), False, "int8"), sys.argv[3])
        return
    out = sys.argv[1]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    torch_case(out, "lstm_perchannel_int8_seqhead", 1, 13, 5, 8, 1, False, "seq", False, True, "int8")
    torch_case(out, "lstm_pertensor_int8_bidir", 2, 14, 4, 6, 1, True, "last", False, False, "int8")
    torch_case(out, "lstm_uint8_2layer_states", 3, 17, 3, 7, 2, False, "seq", True, False, "uint8")
    torch_case(out, "lstm_qdq_head", 5, 13, 4, 6, 1, False, "seq", False, True, "qdq")
    helper_case(out, "dqlstm_reverse_peephole_lens", 4)
    torch_case(out, "lstm_int8_matmul_to_float", 6, 13, 5, 8, 1, False, "seq", False, False, "int8", "to_float")
    torch_case(out, "lstm_uint8_dynamic_matmul", 7, 17, 4, 6, 1, True, "seq", False, False, "uint8", "dynamic")
    open(os.path.join(out, ".stamp"), "w").close()


if __name__ == "__main__":
    main()
