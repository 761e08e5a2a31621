"""gen_torch_exports.py: PyTorch exports of nn.LSTM / nn.GRU / nn.RNN models
with a Linear head, in the ONNX backend layout (CASE/model.onnx,
CASE/test_data_set_N/input_K.pb, output_K.pb) so that `cellc verify` checks
them; the expected outputs are PyTorch's own (torch 1.13, float32).

The matrix: for each cell, opsets 13/14/17 x batch_first false/true, and
across those six cases every combination of 1/2 layers and with/without
initial states (passed as graph inputs); heads alternate between a Linear
over every step and Linear + LogSoftmax on the last step.  All of them export
with dynamic_axes on batch and sequence and carry three data sets: the export
size, a different batch size and length, and batch 1 (the GEMV path).
Extras: bidirectional, nn.RNN with relu, and T = 784 sequences (input 1,
hidden 32) as in pixel-by-pixel MNIST, one static and one dynamic.
Seeds are fixed; a case's seed depends only on its position in the list.

usage: gen_torch_exports.py OUTDIR
"""
import io
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

warnings.filterwarnings("ignore")   # torch.onnx's UserWarnings about batch_first/initial states


class Net(torch.nn.Module):
    """cell -> Linear head.  head "seq": Linear on every step's output, also
    returns the final states; head "last": LogSoftmax(Linear(last step));
    head "slice": the same on the last step sliced as a range of one step
    (out[-1:], squeezed or reshaped); head "size": on the last step indexed
    by the sequence length less one (out[out.size(0) - 1]); head "narrow": the
    same as a range of one step from there (out.narrow(0, T - 1, 1)); head "mean": on
    the sum over time divided by the length (the length as data)."""

    def __init__(self, cell, input_size, hidden, layers, batch_first, bidirectional,
                 head, classes, nonlinearity=None):
        super().__init__()
        kw = dict(num_layers=layers, batch_first=batch_first, bidirectional=bidirectional)
        if nonlinearity:
            kw["nonlinearity"] = nonlinearity
        self.cell_kind = cell
        self.rnn = getattr(torch.nn, cell)(input_size, hidden, **kw)
        self.fc = torch.nn.Linear(hidden * (2 if bidirectional else 1), classes)
        self.head = head
        self.batch_first = batch_first

    def forward(self, x, *state):
        if self.cell_kind == "LSTM":
            out, (h, c) = self.rnn(x, tuple(state) if state else None)
            finals = (h, c)
        else:
            out, h = self.rnn(x, state[0] if state else None)
            finals = (h,)
        if self.head == "seq":
            return (self.fc(out),) + finals
        if self.head == "slice":    # the last step kept as a range of one: out[-1:]
            last = out[:, -1:, :].reshape(out.shape[0], -1) if self.batch_first else out[-1:].squeeze(0)
        elif self.head == "size":   # the last step indexed by the length: out[out.size(0) - 1]
            last = out[:, x.shape[1] - 1, :] if self.batch_first else out[out.size(0) - 1]
        elif self.head == "narrow":  # the last step as a range from the length less one
            last = (out.narrow(1, x.shape[1] - 1, 1).squeeze(1) if self.batch_first
                    else out.narrow(0, out.size(0) - 1, 1).squeeze(0))
        elif self.head == "mean":   # the mean over time as a sum over the length
            last = torch.sum(out, 1) / x.size(1) if self.batch_first else out.sum(0) / out.size(0)
        else:
            last = out[:, -1] if self.batch_first else out[-1]
        return (torch.log_softmax(self.fc(last), dim=-1), finals[0])


def make_cases():
    cases = []
    combos = [(1, False), (2, True), (2, False), (1, True), (2, True), (1, False)]
    for cell in ("LSTM", "GRU", "RNN"):
        for oi, opset in enumerate((13, 14, 17)):
            for bf in (False, True):
                k = oi * 2 + bf
                layers, init = combos[k]
                cases.append(dict(
                    name="%s_opset%d_%s_l%d_%s_%s" % (cell.lower(), opset, "bf" if bf else "sf", layers,
                                                       "init" if init else "noinit",
                                                       "seq" if k % 2 == 0 else "last"),
                    cell=cell, opset=opset, batch_first=bf, layers=layers, init=init,
                    head="seq" if k % 2 == 0 else "last"))
    cases += [
        dict(name="lstm_opset14_bidirectional_l2_bf_init", cell="LSTM", opset=14, batch_first=True,
             layers=2, init=True, bidirectional=True, head="seq"),
        dict(name="gru_opset17_bidirectional_l1_sf", cell="GRU", opset=17, batch_first=False,
             layers=1, init=False, bidirectional=True, head="last"),
        dict(name="rnn_opset14_relu_l2_bf_init", cell="RNN", opset=14, batch_first=True, layers=2,
             init=True, nonlinearity="relu", head="seq"),
        dict(name="lstm_opset17_sf_l2_noinit_slice_last", cell="LSTM", opset=17, batch_first=False, layers=2,
             init=False, head="slice"),
        dict(name="gru_opset13_bf_l1_init_slice_last", cell="GRU", opset=13, batch_first=True, layers=1,
             init=True, head="slice"),
        # the sequence length as data (issue: dimension sizes read by run-time
        # nodes), also at T = 1, where the index T - 1 is 0
        dict(name="lstm_opset14_sf_l1_noinit_size_last", cell="LSTM", opset=14, batch_first=False, layers=1,
             init=False, head="size", extra_sets=[(2, 11), (3, 1)]),
        dict(name="gru_opset17_bf_l2_init_size_last", cell="GRU", opset=17, batch_first=True, layers=2,
             init=True, head="size", extra_sets=[(2, 11), (1, 1)]),
        dict(name="gru_opset14_bf_l1_noinit_narrow_last", cell="GRU", opset=14, batch_first=True, layers=1,
             init=False, head="narrow", extra_sets=[(2, 11), (3, 1)]),
        dict(name="lstm_opset17_sf_l1_init_narrow_last", cell="LSTM", opset=17, batch_first=False, layers=1,
             init=True, head="narrow", extra_sets=[(2, 11), (1, 1)]),
        dict(name="lstm_opset13_bf_l1_init_mean", cell="LSTM", opset=13, batch_first=True, layers=1,
             init=True, head="mean", extra_sets=[(2, 11), (3, 1)]),
        dict(name="rnn_opset14_sf_l1_noinit_mean", cell="RNN", opset=14, batch_first=False, layers=1,
             init=False, head="mean", extra_sets=[(2, 11), (1, 1)]),
        dict(name="lstm_opset14_T784_static", cell="LSTM", opset=14, batch_first=True, layers=1,
             init=False, head="last", input_size=1, hidden=32, classes=10, T=784, B=2,
             dynamic=False),
        dict(name="gru_opset17_T784_dynamic", cell="GRU", opset=17, batch_first=False, layers=1,
             init=True, head="seq", input_size=1, hidden=32, classes=10, T=784, B=1,
             extra_sets=[(2, 300)]),
    ]
    return cases


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def export_case(outdir, seed, c):
    torch.manual_seed(seed)
    I, H = c.get("input_size", 4), c.get("hidden", 8)
    T, B = c.get("T", 7), c.get("B", 3)
    bidir = c.get("bidirectional", False)
    D = 2 if bidir else 1
    net = Net(c["cell"], I, H, c["layers"], c["batch_first"], bidir, c["head"],
              c.get("classes", 5), c.get("nonlinearity")).eval()
    lstm = c["cell"] == "LSTM"
    bf = c["batch_first"]

    def inputs(b, t):
        x = torch.randn(b, t, I) if bf else torch.randn(t, b, I)
        st = []
        if c["init"]:
            st.append(torch.randn(c["layers"] * D, b, H))
            if lstm:
                st.append(torch.randn(c["layers"] * D, b, H))
        return [x] + st

    in_names = ["x"] + (["h0", "c0"][:2 if lstm else 1] if c["init"] else [])
    if c["head"] == "seq":
        out_names = ["y", "h_n"] + (["c_n"] if lstm else [])
    else:
        out_names = ["logp", "h_n"]
    dynamic = None
    if c.get("dynamic", True):
        dynamic = {"x": {0: "batch", 1: "seq"} if bf else {0: "seq", 1: "batch"}}
        for n in in_names[1:]:
            dynamic[n] = {1: "batch"}
        for n in out_names:
            if n == "y":
                dynamic[n] = {0: "batch", 1: "seq"} if bf else {0: "seq", 1: "batch"}
            elif n == "logp":
                dynamic[n] = {0: "batch"}
            else:
                dynamic[n] = {1: "batch"}
    example = inputs(B, T)
    f = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(net, tuple(example), f, opset_version=c["opset"], input_names=in_names,
                          output_names=out_names, dynamic_axes=dynamic)
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model)
    d = os.path.join(outdir, c["name"])
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    onnx.save(model, os.path.join(d, "model.onnx"))
    sets = [example]
    if dynamic is not None:
        for (b, t) in c.get("extra_sets", [(2, 11), (1, 4)]):
            sets.append(inputs(b, t))
    graph_in = [i.name for i in model.graph.input]
    graph_out = [o.name for o in model.graph.output]
    assert graph_in == in_names and graph_out == out_names, (graph_in, graph_out)
    for k, ins in enumerate(sets):
        with torch.no_grad():
            outs = net(*ins)
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        for j, (n, a) in enumerate(zip(in_names, ins)):
            write_pb(os.path.join(ds, "input_%d.pb" % j), a.numpy(), n)
        for j, (n, a) in enumerate(zip(out_names, outs)):
            write_pb(os.path.join(ds, "output_%d.pb" % j), a.numpy(), n)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_torch_exports.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    cases = make_cases()
    for seed, c in enumerate(cases):
        export_case(out, 1000 + seed, c)
    print("gen_torch_exports: %d cases in %s" % (len(cases), out))


if __name__ == "__main__":
    main()
