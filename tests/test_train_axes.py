"""test_train_axes.py: the generated training program takes the batch and
time axes from the model's input as declared, whatever lies between the
input and the recurrence (issue 43 point 3).

Each model below is an nn.Module as people write it, exported by
torch.onnx.export with dynamic batch and time axes, compiled with
`cellc compile --train`, built with the emitted Makefile and trained by the
generated NAME_train program (SGD, --no-shuffle, cross-entropy) on .npy data
laid out as the model's input is declared ([N, T, I] for batch_first, [N, T]
for tokens, [N, T, I] samples of a time-major model), with transposes, an
embedding, a convolution or a second recurrence between the input and the
first recurrence.  The oracle is the
same module trained by torch.optim.SGD in float64 from the same float32
weights and batches: every optimiser step's loss (the program's --log) must
be within 1e-4 relative of PyTorch's.

usage: test_train_axes.py WORKDIR        (prints PASS/FAIL lines, then
                                         "N passed, M failed"; exit 1 on a failure)
"""
import csv
import io
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLC = os.path.join(ROOT, "build", "cellc")
warnings.filterwarnings("ignore")
I, H, C, T, N = 5, 12, 4, 7, 10
VOCAB = 11
BATCH, EPOCHS, LR = 4, 2, 0.5


class GRUBatchFirstLast(nn.Module):
    """nn.GRU(batch_first=True), a Linear on out[:, -1]"""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(I, H, batch_first=True)
        self.fc = nn.Linear(H, C)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class EmbedLSTMBatchFirst(nn.Module):
    """tokens [B, T] -> nn.Embedding -> nn.LSTM(batch_first=True) -> h_n[-1]"""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, I)
        self.rnn = nn.LSTM(I, H, batch_first=True)
        self.out = nn.Linear(H, C)

    def forward(self, tokens):
        _, (h, _) = self.rnn(self.emb(tokens))
        return self.out(h[-1])


class LSTMTimeMajor(nn.Module):
    """time-major x [T, B, I], nn.LSTM, head on the last step of out"""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(I, H)
        self.fc = nn.Linear(H, C)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[-1])


class StackedGRUsBatchFirst(nn.Module):
    """two nn.GRU modules (batch_first), one after the other, a mean over
    time into the head"""

    def __init__(self):
        super().__init__()
        self.g1 = nn.GRU(I, H, batch_first=True)
        self.g2 = nn.GRU(H, H, batch_first=True)
        self.fc = nn.Linear(H, C)

    def forward(self, x):
        a, _ = self.g1(x)
        b, _ = self.g2(torch.tanh(a))
        return self.fc(b.mean(1))


class PermutedInputLSTM(nn.Module):
    """batch-first data permuted by hand to time-major (x.permute(1, 0, 2))
    before a time-major nn.LSTM, head on h_n"""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(I, H)
        self.fc = nn.Linear(H, C)

    def forward(self, x):
        _, (h, _) = self.rnn(x.permute(1, 0, 2))
        return self.fc(h[0])


class ConvFrontLSTM(nn.Module):
    """batch-first x [B, T, I] -> Conv1d over time (channels first, same
    padding) -> ReLU -> nn.LSTM(batch_first=True), head on out[:, -1]"""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(I, 6, 3, padding=1)
        self.rnn = nn.LSTM(6, H, batch_first=True)
        self.fc = nn.Linear(H, C)

    def forward(self, x):
        z = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        out, _ = self.rnn(z)
        return self.fc(out[:, -1])


# name -> (class, data (rng) -> samples [N, ...], batch axis of the input,
#          input name, dynamic axes of the input)
MODELS = {
    "gru_batch_first_last": (GRUBatchFirstLast, lambda r: r.standard_normal((N, T, I)), 0, {0: "batch", 1: "seq"}),
    "embed_lstm_batch_first": (EmbedLSTMBatchFirst, lambda r: r.integers(0, VOCAB, (N, T)), 0,
                               {0: "batch", 1: "seq"}),
    "lstm_time_major": (LSTMTimeMajor, lambda r: r.standard_normal((N, T, I)), 1, {0: "seq", 1: "batch"}),
    "stacked_grus_batch_first": (StackedGRUsBatchFirst, lambda r: r.standard_normal((N, T, I)), 0,
                                 {0: "batch", 1: "seq"}),
    "conv_front_lstm": (ConvFrontLSTM, lambda r: r.standard_normal((N, T, I)), 0, {0: "batch", 1: "seq"}),
    "permuted_input_lstm": (PermutedInputLSTM, lambda r: r.standard_normal((N, T, I)), 0, {0: "batch", 1: "seq"}),
}


def torch_losses(net, data, labels, bax):
    """Per-step losses of SGD over the batches in order (the last may be
    short), float64 from the module's float32 weights."""
    net = net.double()
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    out = []
    for _ in range(EPOCHS):
        for s in range(0, N, BATCH):
            xb = torch.from_numpy(data[s:s + BATCH])
            if xb.dtype == torch.float32:
                xb = xb.double()
            if bax == 1:
                xb = xb.transpose(0, 1)
            loss = nn.functional.cross_entropy(net(xb), torch.from_numpy(labels[s:s + BATCH]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            out.append(loss.item())
    return out


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    return p.returncode, p.stdout.decode(errors="replace")


def check(work, name, seed):
    cls, make_data, bax, dyn = MODELS[name]
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    torch.manual_seed(seed)
    net = cls().eval()
    rng = np.random.default_rng(seed)
    data = make_data(rng)
    data = data.astype(np.int64 if data.dtype.kind == "i" else np.float32)
    labels = rng.integers(0, C, N).astype(np.int64)
    example = torch.from_numpy(data[:3] if bax == 0 else data[:3].transpose(1, 0, *range(2, data.ndim)).copy())
    f = io.BytesIO()
    torch.onnx.export(net, (example,), f, opset_version=14, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": dyn, "y": {0: "batch"}})
    with open(os.path.join(d, "model.onnx"), "wb") as fh:
        fh.write(f.getvalue())
    np.save(os.path.join(d, "x.npy"), data)
    np.save(os.path.join(d, "y.npy"), labels)
    want = torch_losses(net, data, labels, bax)
    gen = os.path.join(d, "gen")
    rc, out = run([CELLC, "compile", os.path.join(d, "model.onnx"), "--train", "-o", gen, "--name", "m"])
    if rc != 0:
        return False, "cellc compile --train: exit %d: %s" % (rc, out.strip()[-300:])
    rc, out = run(["make", "-s", "-C", gen, "m_train"])
    if rc != 0:
        return False, "make m_train: exit %d: %s" % (rc, out.strip()[-300:])
    log = os.path.join(d, "log.csv")
    rc, out = run([os.path.join(gen, "m_train"), "--train-data", os.path.join(d, "x.npy"), "--train-labels",
                   os.path.join(d, "y.npy"), "--optimizer", "sgd", "--lr", str(LR), "--batch", str(BATCH),
                   "--epochs", str(EPOCHS), "--no-shuffle", "--log", log])
    if rc != 0:
        return False, "m_train: exit %d: %s" % (rc, out.strip()[-300:])
    with open(log) as fh:
        got = [float(r["loss"]) for r in csv.DictReader(fh)]
    if len(got) != len(want):
        return False, "%d steps logged, PyTorch took %d" % (len(got), len(want))
    rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, want))
    if rel > 1e-4:
        return False, "loss trajectory differs from PyTorch's by %.3g relative (%s vs %s)" % (rel, got, want)
    return True, "%d steps, max relative difference %.2g" % (len(got), rel)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(1)
    npass = nfail = 0
    for k, name in enumerate(sorted(MODELS)):
        try:
            ok, detail = check(work, name, 4300 + k)
        except Exception as e:         # a crash of the test is a failure, never a pass
            ok, detail = False, "%s: %s" % (type(e).__name__, e)
        print("%s train_axes/%s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
        npass += ok
        nfail += not ok
    print("%d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
