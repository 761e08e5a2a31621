"""gen_trace_wild.py: traced PyTorch exports of recurrent models written the
way other people write them (issue 14), for the harness group trace_wild.

gen_trace_cases.py and gen_trace_forms.py trace one model family written in
one style (tests/ref_momentum.py).  Here every model is its own class, as a
different author would write it: nn.Linear or raw nn.Parameter weights,
torch.mm / @ / F.linear / torch.addmm / nn.LSTMCell, gates by chunk, split,
slicing or view-and-index, sigmoid as torch.sigmoid, F.sigmoid or an
nn.Sigmoid module, states made in forward() with torch.zeros (so the exporter
folds step 1's products against zeros) or passed in stacked [L, B, H],
pixel-by-pixel inputs [B, T], shape no-ops around every step, a Python
restart counter for NAG, embeddings on int64 tokens, stacked layers each with
its own time loop, dropout (eval mode), a head on every step or only on the
last, a learned start token, batch_first or seq-first, returning the last
output or (out, (h, c)).  The cells are those of docs/cells.md: momentum, Adam,
RMSProp and NAG (with restart) LSTMs, momentum GRU and RNN, plain LSTM, GRU
and RNN, plus FastGRNN (not a docs/cells.md cell: expected_cell null).

Then the loops issue 43's survey found left unrolled, each written as its
public source writes it: a two-layer ConvLSTM over frames [B, T, C, H, W]
(Conv2d over cat(frame, h), lists of per-layer outputs and states), a
QRNN's CPU forget-mult over (f * x).split(1, dim=0), GRU-D with values,
last observations, masks and time deltas as separate inputs sliced per step
by [:, i:i+1, :] and torch.squeeze() (rolled: a Squeeze without axes that
drops the sliced axis alone is a per-step slice), nn.LSTMCell over x.split(1, dim=1)
(the MomentumRNN authors' own models have a generator of their own,
tests/gen_authors.py), the PyTorch examples' time-sequence predictor with `future`
steps fed their own prediction, and a rollout that only generates.  Their
recurrences count the model's time loops whether cellc rolls them or not;
one that stays unrolled must be listed as a fallback (the harness's
fallback/CASE), and tests/trace_wild_limits.txt says why it stays unrolled.

Each model is exported at one to three of opsets 13, 14 and 17 (some with
dynamic batch and/or time axes), traced at T = 8, into the ONNX backend
layout:
  CASE/model.onnx                  CASE = MODEL_opsetN
  CASE/test_data_set_0/            the traced sizes (T = 8, batch 2)
      input_K.pb, output_K.pb      in the order of the graph's inputs/outputs
  CASE/test_data_set_1/            T = 12, when the export's time axis is
                                   dynamic and another T is sound
  CASE/test_data_set_2/            batch 3, when the batch axis is dynamic
  CASE/case.json                   model, style (tags), family,
      expected_cell (the docs/cells.md cell string `cellc info` prints, or null),
      recurrences (time loops in the model: one per layer), T, opset,
      dynamic_axes, symbolic_time (the re-rolled recurrence must run any T:
      every step is the same computation, or differs only in a first/last
      step; true also for static exports, where no other-T data set is
      written because the file's shapes are fixed; false for NAG without
      restart, whose 8 traced steps never restart, so the period is
      unknown), table (that case: the coefficients are a table of T values),
      second_T (the T of test_data_set_1 or null), loop_T (the steps the
      rolled loop runs at T: fewer when steps run before it), generated
      (the steps of each generated loop, each step fed what the step before
      computed: its T is the model's own, fixed and no fallback), hidden
Goldens come from running the PyTorch model itself (eval mode, no_grad,
torch.manual_seed per model, numpy inputs from a per-case seed).  Before a
data set is written, the model's outputs are recomputed in float64 numpy
from docs/cells.md's equations with the weights read out of the module
(ref_outputs; ConvLSTM, QRNN, GRU-D and the forecasters from their own
equations): a model that does not compute its expected_cell stops the
generator.  (eps is the one option this cannot see: 1e-8 and 1e-16 inside
the root give the same float32 outputs here.)

usage: gen_trace_wild.py OUTDIR [MODEL ...]       (every model, ~40 seconds)
       gen_trace_wild.py --long OUTDIR [MODEL ...]
           784-step traces (input 1 or embedding width 1, hidden 32, batch 1)
           at opset 13 of the MODELs named (default: the pixel models), each
           with a twin MODEL_opset13_T8_mnist of the same sizes for the size
           check.  Not run by `make fixtures`: PyTorch 1.13's export time
           grows faster than linearly with the traced length.  Measured on
           the 2-core CI machine (one export at a time, momlstm_pixel: input
           1, hidden 32, batch 1, T = 784): see LONG_TIMES below.
"""
import json
import math
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_io  # noqa: E402
from golden_io import flatten, write_pb  # noqa: E402

warnings.filterwarnings("ignore")

INPUT, HIDDEN, CLASSES, VOCAB, BATCH, T_TRACE, T_OTHER = 3, 8, 4, 11, 2, 8, 12

# Export times of one 784-step trace (gen_trace_wild.py --long DIR
# momlstm_pixel on the 2-core machine; filled in from the measurements).
LONG_TIMES = """
"""


# =============================================================================
# Momentum LSTM
# =============================================================================

class MomentumLSTMCell(nn.Module):
    """A cell class driven by a wrapper: nn.Linear projections, gates by
    chunk, torch.sigmoid."""

    def __init__(self, input_size, hidden_size, mu=0.6, s=0.6):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)
        self.mu = mu
        self.s = s

    def forward(self, input, hx):
        h, c, v = hx
        v = self.mu * v + self.s * self.ih(input)
        gates = v + self.hh(h)
        ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
        ingate = torch.sigmoid(ingate)
        forgetgate = torch.sigmoid(forgetgate)
        cellgate = torch.tanh(cellgate)
        outgate = torch.sigmoid(outgate)
        c = (forgetgate * c) + (ingate * cellgate)
        h = outgate * torch.tanh(c)
        return h, c, v


class MomentumLSTM(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = MomentumLSTMCell(input_size, hidden_size)

    def forward(self, input):
        seq_len, batch = input.size(0), input.size(1)
        h = torch.zeros(batch, self.hidden_size)
        c = torch.zeros(batch, self.hidden_size)
        v = torch.zeros(batch, 4 * self.hidden_size)
        outputs = []
        for t in range(seq_len):
            h, c, v = self.cell(input[t], (h, c, v))
            outputs.append(h)
        return torch.stack(outputs), (h, c)


class PixelMomLSTM(nn.Module):
    """Pixel MNIST: x [B, 784] one pixel per step, raw parameters stored
    [in, out] and torch.mm, gates by slicing, a classifier on the last step."""

    def __init__(self, nhid, nclass, mu=0.9, lr=0.5):
        super().__init__()
        self.nhid = nhid
        self.mu, self.lr = mu, lr
        self.W = nn.Parameter(torch.Tensor(1, 4 * nhid))
        self.U = nn.Parameter(torch.Tensor(nhid, 4 * nhid))
        self.b = nn.Parameter(torch.Tensor(4 * nhid))
        self.classifier = nn.Linear(nhid, nclass)
        stdv = 1.0 / math.sqrt(nhid)
        for w in (self.W, self.U, self.b):
            w.data.uniform_(-stdv, stdv)

    def forward(self, x):
        n = self.nhid
        h = torch.zeros(x.size(0), n)
        c = torch.zeros(x.size(0), n)
        vel = torch.zeros(x.size(0), 4 * n)
        for t in range(x.size(1)):
            pix = x[:, t].view(-1, 1)
            vel = self.mu * vel + self.lr * (torch.mm(pix, self.W) + self.b)
            gates = vel + torch.mm(h, self.U)
            i = torch.sigmoid(gates[:, :n])
            f = torch.sigmoid(gates[:, n:2 * n])
            g = torch.tanh(gates[:, 2 * n:3 * n])
            o = torch.sigmoid(gates[:, 3 * n:])
            c = f * c + i * g
            h = o * torch.tanh(c)
        return self.classifier(h)


class MomLSTMLayer(nn.Module):
    def __init__(self, in_dim, hid, mu, step):
        super().__init__()
        self.hid, self.mu, self.step = hid, mu, step
        self.w_ih = nn.Linear(in_dim, 4 * hid)
        self.w_hh = nn.Linear(hid, 4 * hid)

    def forward(self, xs, h, c):
        v = xs.new_zeros(xs.size(0), 4 * self.hid)
        ys = []
        for t in range(xs.size(1)):
            v = self.mu * v + self.step * self.w_ih(xs[:, t])
            i, f, g, o = (v + self.w_hh(h)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            ys.append(h)
        return torch.stack(ys, 1), h, c


class StackedMomLSTM(nn.Module):
    """Two layers, each with its own time loop; states passed in and returned
    stacked [L, B, H]; dropout between layers and before the head."""

    def __init__(self, ninp, nhid, nout, nlayers=2):
        super().__init__()
        self.layers = nn.ModuleList([MomLSTMLayer(ninp if l == 0 else nhid, nhid, 0.5, 0.8)
                                     for l in range(nlayers)])
        self.drop = nn.Dropout(0.3)
        self.decoder = nn.Linear(nhid, nout)

    def forward(self, x, h0, c0):
        out = x
        hs, cs = [], []
        for l, layer in enumerate(self.layers):
            out, h, c = layer(out, h0[l], c0[l])
            out = self.drop(out)
            hs.append(h)
            cs.append(c)
        return self.decoder(out), torch.stack(hs, 0), torch.stack(cs, 0)


class MomLSTMShapes(nn.Module):
    """Shape no-ops around every step: the input re-viewed to its own shape,
    squeezed gates, states kept [1, B, H]."""

    def __init__(self, input_size, hidden_size, n_out):
        super().__init__()
        self.H = hidden_size
        self.Wx = nn.Parameter(torch.randn(4 * hidden_size, input_size) * 0.4)
        self.Wh = nn.Parameter(torch.randn(4 * hidden_size, hidden_size) * 0.3)
        self.bx = nn.Parameter(torch.randn(4 * hidden_size) * 0.3)
        self.bh = nn.Parameter(torch.randn(4 * hidden_size) * 0.3)
        self.out = nn.Linear(hidden_size, n_out)
        self.gamma = 0.7     # momentum
        self.eta = 0.4       # step size

    def forward(self, x):
        B = x.size(1)
        state_h = torch.zeros(B, self.H).unsqueeze(0)
        state_c = torch.zeros(B, self.H).unsqueeze(0)
        state_v = torch.zeros(B, 4 * self.H).unsqueeze(0)
        outs = []
        for t in range(x.size(0)):
            xt = x[t].view(-1, x.size(2))
            h, c, v = state_h.squeeze(0), state_c.squeeze(0), state_v.squeeze(0)
            v = self.gamma * v + self.eta * (xt @ self.Wx.t() + self.bx)
            gates = (v + h @ self.Wh.t() + self.bh).squeeze()
            i, f, g, o = gates.chunk(4, -1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            state_h, state_c, state_v = h.unsqueeze(0), c.unsqueeze(0), v.unsqueeze(0)
            outs.append(self.out(state_h.squeeze(0)))
        return torch.stack(outs, 0)


# =============================================================================
# Adam LSTM
# =============================================================================

class AdamLSTM(nn.Module):
    """batch_first, F.linear with raw weights laid out like nn.LSTM's,
    torch.split for the gates, nn.Sigmoid / nn.Tanh modules, grad.pow(2),
    eps 1e-8 (the paper's value), a head at every step stacked on dim 1."""

    def __init__(self, input_size, hidden_size, num_classes, mu=0.5, s=0.7, beta=0.9, eps=1e-8):
        super().__init__()
        self.hidden_size = hidden_size
        self.mu, self.s, self.beta, self.eps = mu, s, beta, eps
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(4 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(4 * hidden_size))
        self.act_gate = nn.Sigmoid()
        self.act_cell = nn.Tanh()
        self.fc = nn.Linear(hidden_size, num_classes)
        self.reset_parameters()

    def reset_parameters(self):
        k = 1.0 / math.sqrt(self.hidden_size)
        for name, p in self.named_parameters():
            if not name.startswith("fc"):
                nn.init.uniform_(p, -k, k)

    def forward(self, x):
        B, T, _ = x.shape
        H = self.hidden_size
        h = torch.zeros(B, H, device=x.device)
        c = torch.zeros(B, H, device=x.device)
        vel = torch.zeros(B, 4 * H, device=x.device)
        sq = torch.zeros(B, 4 * H, device=x.device)
        logits = []
        for t in range(T):
            grad = F.linear(x[:, t, :], self.weight_ih, self.bias_ih)
            vel = self.mu * vel + self.s * grad
            sq = self.beta * sq + (1. - self.beta) * grad.pow(2)
            pre = vel / torch.sqrt(sq + self.eps) + F.linear(h, self.weight_hh, self.bias_hh)
            i, f, g, o = torch.split(pre, H, dim=1)
            c = self.act_gate(f) * c + self.act_gate(i) * self.act_cell(g)
            h = self.act_gate(o) * self.act_cell(c)
            logits.append(self.fc(h))
        return torch.stack(logits, dim=1)


class PixelAdamLSTM(nn.Module):
    """Pixel by pixel: x[:, t].unsqueeze(1), gates viewed [B, 4, H] and
    indexed, torch.div, log_softmax of a head on the last step."""

    def __init__(self, hidden, classes, mu=0.6, s=0.5, beta=0.8):
        super().__init__()
        self.hidden = hidden
        self.x2h = nn.Linear(1, 4 * hidden)
        self.h2h = nn.Linear(hidden, 4 * hidden, bias=False)
        self.fc = nn.Linear(hidden, classes)
        self.mu, self.s, self.beta, self.eps = mu, s, beta, 1e-16
        with torch.no_grad():
            self.x2h.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        bsz = x.shape[0]
        h = torch.zeros(bsz, self.hidden)
        c = torch.zeros(bsz, self.hidden)
        v = torch.zeros(bsz, 4 * self.hidden)
        m = torch.zeros(bsz, 4 * self.hidden)
        for t in range(x.shape[1]):
            u = self.x2h(x[:, t].unsqueeze(1))
            v = self.mu * v + self.s * u
            m = self.beta * m + (1 - self.beta) * (u * u)
            gates = torch.div(v, torch.sqrt(m + self.eps)) + self.h2h(h)
            gates = gates.view(bsz, 4, self.hidden)
            i, f, g, o = gates[:, 0], gates[:, 1], gates[:, 2], gates[:, 3]
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
        return F.log_softmax(self.fc(h), dim=1)


def adam_lstm_step(x, state, p, hp):
    """One step as a free function over a ParameterDict (torch.addmm)."""
    h, c, v, m = state
    u = torch.addmm(p["b_x"], x, p["W_x"].t())
    v = hp["mu"] * v + hp["s"] * u
    m = hp["beta"] * m + (1 - hp["beta"]) * u * u
    a = v / torch.sqrt(m + hp["eps"]) + torch.addmm(p["b_h"], h, p["W_h"].t())
    H = h.shape[1]
    i = torch.sigmoid(a[:, 0 * H:1 * H])
    f = torch.sigmoid(a[:, 1 * H:2 * H])
    g = torch.tanh(a[:, 2 * H:3 * H])
    o = torch.sigmoid(a[:, 3 * H:4 * H])
    c = f * c + i * g
    h = o * torch.tanh(c)
    return h, c, v, m


class FunctionalAdamLSTM(nn.Module):
    def __init__(self, n_in, n_hid):
        super().__init__()
        self.n_hid = n_hid
        self.params = nn.ParameterDict({
            "W_x": nn.Parameter(torch.randn(4 * n_hid, n_in) / math.sqrt(n_in)),
            "W_h": nn.Parameter(torch.randn(4 * n_hid, n_hid) / math.sqrt(n_hid)),
            "b_x": nn.Parameter(torch.rand(4 * n_hid) - 0.5),
            "b_h": nn.Parameter(torch.rand(4 * n_hid) - 0.5),
        })
        self.hp = dict(mu=0.3, s=0.9, beta=0.95, eps=1e-16)

    def forward(self, seq):
        B = seq.shape[1]
        state = (torch.zeros(B, self.n_hid), torch.zeros(B, self.n_hid),
                 torch.zeros(B, 4 * self.n_hid), torch.zeros(B, 4 * self.n_hid))
        hs = []
        for x in seq:                                   # iterating the tensor: x = seq[t]
            state = adam_lstm_step(x, state, self.params, self.hp)
            hs.append(state[0])
        h, c = state[0], state[1]
        return torch.stack(hs), (h, c)


# =============================================================================
# RMSProp LSTM
# =============================================================================

class RMSPropLSTMShapes(nn.Module):
    """batch_first; x_t.view(-1, x.size(-1)), squeezed gates, states kept
    [1, B, H] (unsqueeze(0) to store, squeeze(0) to read)."""

    def __init__(self, d_in, d_hid, d_out, s=0.8, beta=0.9):
        super().__init__()
        self.d_hid = d_hid
        self.inp = nn.Linear(d_in, 4 * d_hid)
        self.rec = nn.Linear(d_hid, 4 * d_hid)
        self.head = nn.Linear(d_hid, d_out)
        self.s, self.beta, self.eps = s, beta, 1e-16

    def forward(self, x):
        hidden = (torch.zeros(1, x.size(0), self.d_hid), torch.zeros(1, x.size(0), self.d_hid))
        msq = torch.zeros(x.size(0), 4 * self.d_hid).unsqueeze(0)
        ys = []
        for t in range(x.size(1)):
            h_prev, c_prev = hidden[0].squeeze(0), hidden[1].squeeze(0)
            xt = x[:, t].view(-1, x.size(-1))
            u = self.inp(xt)
            m = self.beta * msq.squeeze(0) + (1 - self.beta) * u * u
            gates = (self.s * u / torch.sqrt(m + self.eps) + self.rec(h_prev)).squeeze()
            ig, fg, gg, og = torch.chunk(gates, 4, dim=gates.dim() - 1)
            c = torch.sigmoid(fg) * c_prev + torch.sigmoid(ig) * torch.tanh(gg)
            h = torch.sigmoid(og) * torch.tanh(c)
            hidden = (h.unsqueeze(0), c.unsqueeze(0))
            msq = m.unsqueeze(0)
            ys.append(h)
        return self.head(torch.stack(ys, 1)), hidden[0]


class RMSPropLSTMLM(nn.Module):
    """Language model: nn.Embedding on int64 tokens [T, B], torch.rsqrt,
    a decoder at every step."""

    def __init__(self, ntoken, ninp, nhid, lr=0.6, alpha=0.8):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.i2h = nn.Linear(ninp, 4 * nhid)
        self.h2h = nn.Linear(nhid, 4 * nhid)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.lr, self.alpha = nhid, lr, alpha

    def forward(self, tokens):
        emb = self.encoder(tokens)
        bsz = tokens.size(1)
        hx = torch.zeros(bsz, self.nhid)
        cx = torch.zeros(bsz, self.nhid)
        sq = torch.zeros(bsz, 4 * self.nhid)
        out = []
        for i in range(emb.size(0)):
            g = self.i2h(emb[i])
            sq = self.alpha * sq + (1 - self.alpha) * g * g
            pre = self.lr * g * torch.rsqrt(sq + 1e-16) + self.h2h(hx)
            ingate, forgetgate, cellgate, outgate = pre.chunk(4, 1)
            cx = torch.sigmoid(forgetgate) * cx + torch.sigmoid(ingate) * torch.tanh(cellgate)
            hx = torch.sigmoid(outgate) * torch.tanh(cx)
            out.append(self.decoder(hx))
        return torch.stack(out)


# =============================================================================
# NAG LSTM (SRLSTM: scheduled restart)
# =============================================================================

class SRLSTM(nn.Module):
    """NAG with restart every F steps counted in a Python int: the momentum
    coefficient k/(k+3) becomes a different constant in every traced step."""

    def __init__(self, input_size, hidden_size, output_size, restart=3, step=0.6):
        super().__init__()
        self.hidden_size = hidden_size
        self.restart, self.step = restart, step
        self.i2h = nn.Linear(input_size, 4 * hidden_size)
        self.h2h = nn.Linear(hidden_size, 4 * hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, inputs):
        B = inputs.size(1)
        h = torch.zeros(B, self.hidden_size)
        c = torch.zeros(B, self.hidden_size)
        v = torch.zeros(B, 4 * self.hidden_size)
        k = 0
        outputs = []
        for t in range(inputs.size(0)):
            mu = k / (k + 3.0)
            v = mu * v + self.step * self.i2h(inputs[t])
            i, f, g, o = (v + self.h2h(h)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(self.h2o(h))
            k += 1
            if k % self.restart == 0:
                k = 0
        return torch.stack(outputs, 0), h


def restart_schedule(n, period):
    return torch.tensor([(t % period) / (t % period + 3.0) for t in range(n)], dtype=torch.float32)


class PixelNAGLSTM(nn.Module):
    """Pixel MNIST NAG LSTM whose schedule is a registered buffer indexed by
    t; weights as parameters with @ and a transposed layout."""

    def __init__(self, hidden, classes, restart=4, s=0.7, max_len=1000):
        super().__init__()
        self.hidden, self.s = hidden, s
        self.register_buffer("mom", restart_schedule(max_len, restart))
        self.w_in = nn.Parameter(torch.randn(1, 4 * hidden) * 0.5)
        self.b_in = nn.Parameter(torch.randn(4 * hidden) * 0.2)
        self.w_rec = nn.Parameter(torch.randn(hidden, 4 * hidden) / math.sqrt(hidden))
        self.b_rec = nn.Parameter(torch.randn(4 * hidden) * 0.2)
        self.readout = nn.Linear(hidden, classes)

    def forward(self, pixels):
        n = pixels.shape[0]
        h = torch.zeros(n, self.hidden)
        c = torch.zeros(n, self.hidden)
        v = torch.zeros(n, 4 * self.hidden)
        for t in range(pixels.shape[1]):
            x = pixels[:, t].unsqueeze(1)
            v = self.mom[t] * v + self.s * (x @ self.w_in + self.b_in)
            z = v + h @ self.w_rec + self.b_rec
            i, f, g, o = z.split(self.hidden, 1)
            c = f.sigmoid() * c + i.sigmoid() * g.tanh()
            h = o.sigmoid() * c.tanh()
        return self.readout(h)


class NesterovLSTM(nn.Module):
    """NAG without restart (mu_t = (t-1)/(t+2), t from 1), deprecated
    F.sigmoid / F.tanh, torch.mm, chunk(dim=-1); returns the last h."""

    def __init__(self, n_input, n_hidden):
        super().__init__()
        self.n_hidden = n_hidden
        self.weight_x = nn.Parameter(torch.randn(n_input, 4 * n_hidden) * 0.3)
        self.weight_h = nn.Parameter(torch.randn(n_hidden, 4 * n_hidden) * 0.3)
        self.bias = nn.Parameter(torch.zeros(4 * n_hidden))
        self.bias_h = nn.Parameter(torch.zeros(4 * n_hidden))
        with torch.no_grad():
            self.bias[n_hidden:2 * n_hidden] = 1.0          # forget gate bias
            self.bias_h.uniform_(-0.3, 0.3)
        self.s = 0.5

    def forward(self, X):
        T, B = X.shape[0], X.shape[1]
        h = torch.zeros(B, self.n_hidden)
        c = torch.zeros(B, self.n_hidden)
        v = torch.zeros(B, 4 * self.n_hidden)
        for t in range(1, T + 1):
            mu_t = (t - 1) / (t + 2)
            v = mu_t * v + self.s * (torch.mm(X[t - 1], self.weight_x) + self.bias)
            a = v + torch.mm(h, self.weight_h) + self.bias_h
            i, f, g, o = a.chunk(4, dim=-1)
            c = F.sigmoid(f) * c + F.sigmoid(i) * F.tanh(g)
            h = F.sigmoid(o) * F.tanh(c)
        return h


# =============================================================================
# Momentum GRU
# =============================================================================

class MomentumGRUClassifier(nn.Module):
    """Embedding on int64 tokens [B, T], chunk(3), only the last step's
    output is returned."""

    def __init__(self, vocab, emb, hidden, n_classes, mu=0.7, s=0.5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.W = nn.Linear(emb, 3 * hidden)
        self.U = nn.Linear(hidden, 3 * hidden)
        self.fc = nn.Linear(hidden, n_classes)
        self.hidden, self.mu, self.s = hidden, mu, s

    def forward(self, tokens):
        e = self.embedding(tokens)
        h = torch.zeros(tokens.size(0), self.hidden)
        v = torch.zeros(tokens.size(0), 3 * self.hidden)
        for t in range(tokens.size(1)):
            v = self.mu * v + self.s * self.W(e[:, t, :])
            wr, wz, wn = v.chunk(3, 1)
            ur, uz, un = self.U(h).chunk(3, 1)
            r = torch.sigmoid(wr + ur)
            z = torch.sigmoid(wz + uz)
            n = torch.tanh(wn + r * un)
            h = (1 - z) * n + z * h
        return self.fc(h)


class MomGRUDecoder(nn.Module):
    """Teacher-forced decoder: a learned start token is the first input, then
    x[t-1]; the first step's input is a parameter, not a slice of x."""

    def __init__(self, dim, hidden, out_dim, mu=0.8, s=0.3):
        super().__init__()
        self.start = nn.Parameter(torch.randn(1, dim))
        self.x_proj = nn.Linear(dim, 3 * hidden)
        self.h_proj = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, out_dim)
        self.hidden, self.mu, self.s = hidden, mu, s

    def forward(self, target):
        T, B, _ = target.shape
        h = torch.zeros(B, self.hidden)
        v = torch.zeros(B, 3 * self.hidden)
        inp = self.start.expand(B, -1)
        preds = []
        for t in range(T):
            v = self.mu * v + self.s * self.x_proj(inp)
            hr, hz, hn = self.h_proj(h).chunk(3, -1)
            xr, xz, xn = v.chunk(3, -1)
            r = torch.sigmoid(xr + hr)
            z = torch.sigmoid(xz + hz)
            n = torch.tanh(xn + r * hn)
            h = (1. - z) * n + z * h
            preds.append(self.out(h))
            inp = target[t]
        return torch.stack(preds)


class MomGRUCatStart(nn.Module):
    """Teacher forcing written with torch.cat: the decoder reads a learned
    start-of-sequence vector, then y[:, :-1] (batch_first); parameters as
    raw [in, out] matrices used with torch.addmm; the velocity called m;
    gates by slicing the columns."""

    def __init__(self, dim, hidden, out_dim, mu=0.7, s=0.4):
        super().__init__()
        self.sos = nn.Parameter(torch.randn(dim))
        self.W_ih = nn.Parameter(torch.randn(dim, 3 * hidden) * 0.4)
        self.b_ih = nn.Parameter(torch.randn(3 * hidden) * 0.1)
        self.W_hh = nn.Parameter(torch.randn(hidden, 3 * hidden) * 0.4)
        self.b_hh = nn.Parameter(torch.randn(3 * hidden) * 0.1)
        self.proj = nn.Linear(hidden, out_dim)
        self.hidden, self.mu, self.s = hidden, mu, s

    def forward(self, y):
        B, H = y.size(0), self.hidden
        sos = self.sos.view(1, 1, -1).expand(B, 1, -1)
        dec_in = torch.cat([sos, y[:, :-1]], dim=1)
        h = y.new_zeros(B, H)
        m = y.new_zeros(B, 3 * H)
        outs = []
        for t in range(dec_in.size(1)):
            m = self.mu * m + self.s * torch.addmm(self.b_ih, dec_in[:, t], self.W_ih)
            gh = torch.addmm(self.b_hh, h, self.W_hh)
            r = torch.sigmoid(m[:, :H] + gh[:, :H])
            z = torch.sigmoid(m[:, H:2 * H] + gh[:, H:2 * H])
            n = torch.tanh(m[:, 2 * H:] + r * gh[:, 2 * H:])
            h = (1 - z) * n + z * h
            outs.append(self.proj(h))
        return torch.stack(outs, dim=1)


class NextStepLSTM(nn.Module):
    """A forecaster: predicts step t+1 of a series from steps 0..t, so the
    LSTM reads series[:-1] (seq-first) one step at a time by index;
    nn.LSTMCell, predictions torch.stack'ed."""

    def __init__(self, n_features, hidden):
        super().__init__()
        self.cell = nn.LSTMCell(n_features, hidden)
        self.head = nn.Linear(hidden, n_features)

    def forward(self, series):
        inputs = series[:-1]
        h = torch.zeros(series.shape[1], self.cell.hidden_size)
        c = torch.zeros_like(h)
        preds = []
        for t in range(inputs.shape[0]):
            h, c = self.cell(inputs[t], (h, c))
            preds.append(self.head(h))
        return torch.stack(preds)


class MomGRUSepGates(nn.Module):
    """A Linear per gate and a velocity per gate (the 3H rows of v split in
    three), F.sigmoid, batch_first, returns (out, h)."""

    def __init__(self, input_dim, hidden_dim, mu=0.6, s=0.9):
        super().__init__()
        self.W_xr = nn.Linear(input_dim, hidden_dim)
        self.W_xz = nn.Linear(input_dim, hidden_dim)
        self.W_xn = nn.Linear(input_dim, hidden_dim)
        self.W_hr = nn.Linear(hidden_dim, hidden_dim)
        self.W_hz = nn.Linear(hidden_dim, hidden_dim)
        self.W_hn = nn.Linear(hidden_dim, hidden_dim)
        self.hidden_dim, self.mu, self.s = hidden_dim, mu, s

    def forward(self, x):
        batch_size, seq_len, _ = x.size()
        h_t = torch.zeros(batch_size, self.hidden_dim)
        v_r = torch.zeros(batch_size, self.hidden_dim)
        v_z = torch.zeros(batch_size, self.hidden_dim)
        v_n = torch.zeros(batch_size, self.hidden_dim)
        hidden_seq = []
        for t in range(seq_len):
            x_t = x[:, t, :]
            v_r = self.mu * v_r + self.s * self.W_xr(x_t)
            v_z = self.mu * v_z + self.s * self.W_xz(x_t)
            v_n = self.mu * v_n + self.s * self.W_xn(x_t)
            r_t = F.sigmoid(v_r + self.W_hr(h_t))
            z_t = F.sigmoid(v_z + self.W_hz(h_t))
            n_t = torch.tanh(v_n + r_t * self.W_hn(h_t))
            h_t = (1 - z_t) * n_t + z_t * h_t
            hidden_seq.append(h_t.unsqueeze(1))
        return torch.cat(hidden_seq, dim=1), h_t


# =============================================================================
# Momentum RNN
# =============================================================================

class MomentumRNNKeras(nn.Module):
    """Keras-like: a kernel without bias plus a separate bias, a recurrent
    kernel without bias; returns only the final state."""

    def __init__(self, units, input_dim, momentum=0.6, step_size=0.9):
        super().__init__()
        self.units = units
        self.kernel = nn.Linear(input_dim, units, bias=False)
        self.recurrent_kernel = nn.Linear(units, units, bias=False)
        self.bias = nn.Parameter(torch.rand(units) - 0.5)
        self.momentum, self.step_size = momentum, step_size

    def forward(self, inputs):                      # [B, T, F]
        state = torch.zeros(inputs.shape[0], self.units)
        velocity = torch.zeros(inputs.shape[0], self.units)
        for t in range(inputs.shape[1]):
            velocity = self.momentum * velocity + self.step_size * (self.kernel(inputs[:, t]) + self.bias)
            state = torch.tanh(velocity + self.recurrent_kernel(state))
        return state


class PixelMomRNN(nn.Module):
    """Pixels [B, T]; states kept [1, B, H] (unsqueeze(0) / squeeze(0)), a
    head at every step stacked on dim 1."""

    def __init__(self, hid, ncls, mu=0.5, s=1.0):
        super().__init__()
        self.hid = hid
        self.rnn_in = nn.Linear(1, hid)
        self.rnn_hh = nn.Linear(hid, hid)
        self.cls = nn.Linear(hid, ncls)
        self.mu, self.s = mu, s

    def forward(self, img):
        hidden = torch.zeros(1, img.size(0), self.hid)
        mom = torch.zeros(1, img.size(0), self.hid)
        scores = []
        for t in range(img.size(1)):
            px = img[:, t].unsqueeze(1)
            mom = (self.mu * mom.squeeze(0) + self.s * self.rnn_in(px)).unsqueeze(0)
            hidden = torch.tanh(mom.squeeze(0) + self.rnn_hh(hidden.squeeze(0))).unsqueeze(0)
            scores.append(self.cls(hidden.squeeze(0)))
        return torch.stack(scores, dim=1)


# =============================================================================
# plain LSTM / GRU / RNN written by hand
# =============================================================================

class ConcatLSTM(nn.Module):
    """One Linear over cat([x, h]): the input and recurrent weights in one
    matrix, one bias."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.linear = nn.Linear(input_size + hidden_size, 4 * hidden_size)

    def forward(self, x):
        h = torch.zeros(x.size(1), self.hidden_size)
        c = torch.zeros(x.size(1), self.hidden_size)
        outs = []
        for t in range(x.size(0)):
            combined = torch.cat([x[t], h], dim=1)
            gates = self.linear(combined)
            i, f, g, o = torch.chunk(gates, 4, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs, dim=0), (h, c)


class TextbookLSTM(nn.Module):
    """Eight Linears, one per gate and source (W_ii, W_hi, ...), batch_first,
    dropout (eval) before a head at every step."""

    def __init__(self, input_sz, hidden_sz, n_out):
        super().__init__()
        self.hidden_sz = hidden_sz
        self.W_ii, self.W_hi = nn.Linear(input_sz, hidden_sz), nn.Linear(hidden_sz, hidden_sz)
        self.W_if, self.W_hf = nn.Linear(input_sz, hidden_sz), nn.Linear(hidden_sz, hidden_sz)
        self.W_ig, self.W_hg = nn.Linear(input_sz, hidden_sz), nn.Linear(hidden_sz, hidden_sz)
        self.W_io, self.W_ho = nn.Linear(input_sz, hidden_sz), nn.Linear(hidden_sz, hidden_sz)
        self.dropout = nn.Dropout(p=0.5)
        self.fc = nn.Linear(hidden_sz, n_out)

    def forward(self, x):
        bs, seq_sz, _ = x.size()
        h_t, c_t = torch.zeros(bs, self.hidden_sz), torch.zeros(bs, self.hidden_sz)
        ys = []
        for t in range(seq_sz):
            x_t = x[:, t, :]
            i_t = torch.sigmoid(self.W_ii(x_t) + self.W_hi(h_t))
            f_t = torch.sigmoid(self.W_if(x_t) + self.W_hf(h_t))
            g_t = torch.tanh(self.W_ig(x_t) + self.W_hg(h_t))
            o_t = torch.sigmoid(self.W_io(x_t) + self.W_ho(h_t))
            c_t = f_t * c_t + i_t * g_t
            h_t = o_t * torch.tanh(c_t)
            ys.append(self.fc(self.dropout(h_t)))
        return torch.stack(ys, dim=1)


class StackedLSTMCells(nn.Module):
    """nn.LSTMCell per layer, each layer its own loop over time; initial
    states passed in [L, B, H]; returns (out, (h_n, c_n))."""

    def __init__(self, input_size, hidden_size, num_layers=2):
        super().__init__()
        self.cells = nn.ModuleList([nn.LSTMCell(input_size if l == 0 else hidden_size, hidden_size)
                                    for l in range(num_layers)])

    def forward(self, x, h0, c0):
        layer_in = x
        h_n, c_n = [], []
        for l, cell in enumerate(self.cells):
            h, c = h0[l], c0[l]
            outs = []
            for t in range(layer_in.size(0)):
                h, c = cell(layer_in[t], (h, c))
                outs.append(h)
            layer_in = torch.stack(outs)
            h_n.append(h)
            c_n.append(c)
        return layer_in, (torch.stack(h_n), torch.stack(c_n))


class ManualGRU(nn.Module):
    """Parameters named and laid out like nn.GRU's (weight_ih_l0 [3H, I]),
    F.linear, chunk(3, 1), returns (out, h_n[None])."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.weight_ih_l0 = nn.Parameter(torch.empty(3 * hidden_size, input_size))
        self.weight_hh_l0 = nn.Parameter(torch.empty(3 * hidden_size, hidden_size))
        self.bias_ih_l0 = nn.Parameter(torch.empty(3 * hidden_size))
        self.bias_hh_l0 = nn.Parameter(torch.empty(3 * hidden_size))
        bound = 1 / math.sqrt(hidden_size)
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, input):
        h = torch.zeros(input.shape[1], self.hidden_size)
        output = []
        for x in input.unbind(0):
            gi = F.linear(x, self.weight_ih_l0, self.bias_ih_l0)
            gh = F.linear(h, self.weight_hh_l0, self.bias_hh_l0)
            i_r, i_z, i_n = gi.chunk(3, 1)
            h_r, h_z, h_n = gh.chunk(3, 1)
            resetgate = torch.sigmoid(i_r + h_r)
            updategate = torch.sigmoid(i_z + h_z)
            newgate = torch.tanh(i_n + resetgate * h_n)
            h = newgate + updategate * (h - newgate)
            output.append(h)
        return torch.stack(output, 0), h[None]


class GRUCellClassifier(nn.Module):
    """nn.Embedding + nn.GRUCell in a loop, dropout on the embeddings (eval),
    a head on the last step only; batch_first tokens."""

    def __init__(self, vocab_size, embed_dim, hidden_dim, num_class):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.emb_drop = nn.Dropout(0.2)
        self.gru = nn.GRUCell(embed_dim, hidden_dim)
        self.head = nn.Sequential(nn.Dropout(0.5), nn.Linear(hidden_dim, num_class))
        self.hidden_dim = hidden_dim

    def forward(self, text):
        embedded = self.emb_drop(self.embed(text))
        hidden = torch.zeros(text.size(0), self.hidden_dim)
        for i in range(embedded.size(1)):
            hidden = self.gru(embedded[:, i], hidden)
        return self.head(hidden)


class ElmanRNN(nn.Module):
    """x @ W_ih.t() + b_ih + h @ W_hh.t() + b_hh, seq-first, (out, h)."""

    def __init__(self, n_in, n_hid):
        super().__init__()
        self.W_ih = nn.Parameter(torch.randn(n_hid, n_in) * 0.5)
        self.W_hh = nn.Parameter(torch.randn(n_hid, n_hid) * 0.4)
        self.b_ih = nn.Parameter(torch.randn(n_hid) * 0.1)
        self.b_hh = nn.Parameter(torch.randn(n_hid) * 0.1)

    def forward(self, xs):
        h = torch.zeros(xs.shape[1], self.W_hh.shape[0])
        hs = []
        for t in range(xs.shape[0]):
            h = torch.tanh(xs[t] @ self.W_ih.t() + self.b_ih + h @ self.W_hh.t() + self.b_hh)
            hs.append(h)
        return torch.stack(hs), h


class ScriptedMmLSTM(nn.Module):
    """The step a torch.jit.script function written with torch.mm and the
    biases added after the products (PyTorch's custom-LSTM examples), called
    from a traced loop over x[t]; states passed in [1, B, H].  The
    scripted torch.mm exports as Gemm(beta=0) followed by Add."""

    def __init__(self, n_in, n_hid):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.randn(4 * n_hid, n_in) * 0.3)
        self.weight_hh = nn.Parameter(torch.randn(4 * n_hid, n_hid) * 0.3)
        self.bias_ih = nn.Parameter(torch.randn(4 * n_hid) * 0.5)
        self.bias_hh = nn.Parameter(torch.randn(4 * n_hid) * 0.5)

    def forward(self, x, h0, c0):
        h, c = h0[0], c0[0]
        outs = []
        for t in range(x.size(0)):
            h, c = mm_lstm_step(x[t], h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
            outs.append(h)
        return torch.stack(outs), h.unsqueeze(0), c.unsqueeze(0)


@torch.jit.script
def mm_lstm_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    gates = torch.mm(x, w_ih.t()) + b_ih + torch.mm(h, w_hh.t()) + b_hh
    i, f, g, o = gates.chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


class PixelRNNCell(nn.Module):
    """nn.RNNCell over pixels x[:, t].unsqueeze(1); head on the last step."""

    def __init__(self, hidden, classes):
        super().__init__()
        self.cell = nn.RNNCell(1, hidden, nonlinearity="tanh")
        self.fc = nn.Linear(hidden, classes)
        self.hidden = hidden

    def forward(self, x):
        hx = torch.zeros(x.size(0), self.hidden)
        for t in range(x.size(1)):
            hx = self.cell(x[:, t].unsqueeze(1), hx)
        return self.fc(hx)


# =============================================================================
# FastGRNN (z and h~ share W x + U h; scalar zeta, nu)
# =============================================================================

class FastGRNNCell(nn.Module):
    """The EdgeML-style cell: W [in, hid], U [hid, hid], torch.matmul, biases
    [1, hid], zeta and nu [1, 1] parameters."""

    def __init__(self, input_size, hidden_size, zeta_init=1.0, nu_init=-4.0):
        super().__init__()
        self.W = nn.Parameter(0.3 * torch.randn(input_size, hidden_size))
        self.U = nn.Parameter(0.3 * torch.randn(hidden_size, hidden_size))
        self.bias_gate = nn.Parameter(torch.ones(1, hidden_size))
        self.bias_update = nn.Parameter(torch.ones(1, hidden_size))
        self.zeta = nn.Parameter(zeta_init * torch.ones(1, 1))
        self.nu = nn.Parameter(nu_init * torch.ones(1, 1))

    def forward(self, input, state):
        pre_comp = torch.matmul(input, self.W) + torch.matmul(state, self.U)
        z = torch.sigmoid(pre_comp + self.bias_gate)
        c = torch.tanh(pre_comp + self.bias_update)
        return z * state + (torch.sigmoid(self.zeta) * (1.0 - z) + torch.sigmoid(self.nu)) * c


class FastGRNN(nn.Module):
    def __init__(self, input_size, hidden_size, batch_first=False):
        super().__init__()
        self.cell = FastGRNNCell(input_size, hidden_size)
        self.hidden_size, self.batch_first = hidden_size, batch_first

    def forward(self, input):
        if self.batch_first:
            input = input.transpose(0, 1)
        h = torch.zeros(input.size(1), self.hidden_size)
        hiddens = []
        for t in range(input.size(0)):
            h = self.cell(input[t], h)
            hiddens.append(h)
        out = torch.stack(hiddens)
        if self.batch_first:
            out = out.transpose(0, 1)
        return out, h


class PixelFastGRNN(nn.Module):
    """Pixels; bias-free Linears for W and U, 0-d zeta and nu, the update
    written as ((1 - z) * zeta' + nu') * h~ + z * h."""

    def __init__(self, hidden, classes):
        super().__init__()
        self.W = nn.Linear(1, hidden, bias=False)
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.b_z = nn.Parameter(torch.randn(hidden) * 0.5)
        self.b_h = nn.Parameter(torch.randn(hidden) * 0.5)
        self.zeta = nn.Parameter(torch.tensor(1.5))
        self.nu = nn.Parameter(torch.tensor(-2.0))
        self.fc = nn.Linear(hidden, classes)
        self.hidden = hidden

    def forward(self, x):
        h = torch.zeros(x.shape[0], self.hidden)
        for t in range(x.shape[1]):
            a = self.W(x[:, t].unsqueeze(-1)) + self.U(h)
            z = torch.sigmoid(a + self.b_z)
            h_tilde = torch.tanh(a + self.b_h)
            h = ((1 - z) * torch.sigmoid(self.zeta) + torch.sigmoid(self.nu)) * h_tilde + z * h
        return self.fc(h)


# =============================================================================
# Models the issue 43 survey found unrolled: ConvLSTM, QRNN's forget-mult,
# GRU-D, nn.LSTMCell over x.split(1, 1), a forecaster's generated future
# steps
# =============================================================================

class ConvLSTMCell(nn.Module):
    """ndrplz/ConvLSTM_pytorch style: one Conv2d over cat(frame, h) on the
    channel axis, its 4 * hidden channels split as i, f, o, g."""

    def __init__(self, input_dim, hidden_dim, kernel_size, bias=True):
        super().__init__()
        self.input_dim, self.hidden_dim = input_dim, hidden_dim
        self.kernel_size = kernel_size
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.conv = nn.Conv2d(input_dim + hidden_dim, 4 * hidden_dim, kernel_size, padding=self.padding, bias=bias)

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        stacked = torch.cat([input_tensor, h_cur], dim=1)
        cc_i, cc_f, cc_o, cc_g = torch.split(self.conv(stacked), self.hidden_dim, dim=1)
        c_next = torch.sigmoid(cc_f) * c_cur + torch.sigmoid(cc_i) * torch.tanh(cc_g)
        h_next = torch.sigmoid(cc_o) * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (torch.zeros(batch_size, self.hidden_dim, height, width),
                torch.zeros(batch_size, self.hidden_dim, height, width))


class ConvLSTM(nn.Module):
    """Frames [B, T, C, H, W] (batch_first); a cell per layer, each layer its
    own loop over frames cur_layer_input[:, t, :, :, :]; returns the lists
    (per-layer stacked outputs, per-layer [h, c]) of every layer."""

    def __init__(self, input_dim, hidden_dim, kernel_size, num_layers, batch_first=True,
                 return_all_layers=True):
        super().__init__()
        if not isinstance(hidden_dim, list):
            hidden_dim = [hidden_dim] * num_layers
        self.hidden_dim, self.num_layers = hidden_dim, num_layers
        self.batch_first, self.return_all_layers = batch_first, return_all_layers
        self.cell_list = nn.ModuleList([
            ConvLSTMCell(input_dim if i == 0 else hidden_dim[i - 1], hidden_dim[i], kernel_size)
            for i in range(num_layers)])

    def forward(self, input_tensor):
        if not self.batch_first:
            input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
        b, _, _, h, w = input_tensor.size()
        hidden_state = [cell.init_hidden(b, (h, w)) for cell in self.cell_list]
        layer_output_list, last_state_list = [], []
        seq_len = input_tensor.size(1)
        cur_layer_input = input_tensor
        for layer_idx in range(self.num_layers):
            h, c = hidden_state[layer_idx]
            output_inner = []
            for t in range(seq_len):
                h, c = self.cell_list[layer_idx](cur_layer_input[:, t, :, :, :], [h, c])
                output_inner.append(h)
            layer_output = torch.stack(output_inner, dim=1)
            cur_layer_input = layer_output
            layer_output_list.append(layer_output)
            last_state_list.append([h, c])
        if not self.return_all_layers:
            layer_output_list, last_state_list = layer_output_list[-1:], last_state_list[-1:]
        return layer_output_list, last_state_list


def cpu_forget_mult(f, x, hidden_init=None):
    """salesforce/pytorch-qrnn's CPU forget-mult: h_t = f_t x_t + (1 - f_t)
    h_{t-1} over (f * x).split(1, dim=0), each step viewed back to
    [B, H]; without an initial state the first step has no second term."""
    result = []
    forgets = f.split(1, dim=0)
    prev_h = hidden_init
    for i, h in enumerate((f * x).split(1, dim=0)):
        if prev_h is not None:
            h = h + (1 - forgets[i]) * prev_h
        h = h.view(h.size()[1:])
        result.append(h)
        prev_h = h
    return torch.stack(result)


class QRNNLayer(nn.Module):
    """Window 1, output gate: one Linear for Z, F, O over the whole sequence
    (seq-first), zoneout scaling F in eval mode, then the forget-mult."""

    def __init__(self, input_size, hidden_size, zoneout=0.1):
        super().__init__()
        self.hidden_size, self.zoneout = hidden_size, zoneout
        self.linear = nn.Linear(input_size, 3 * hidden_size)

    def forward(self, X, hidden=None):
        seq_len, batch_size, _ = X.size()
        Y = self.linear(X).view(seq_len, batch_size, 3 * self.hidden_size)
        Z, F_, O = Y.chunk(3, dim=2)
        Z = torch.tanh(Z)
        F_ = torch.sigmoid(F_)
        if self.zoneout:
            F_ = F_ * (1 - self.zoneout)
        C = cpu_forget_mult(F_.contiguous(), Z.contiguous(), hidden)
        H = torch.sigmoid(O) * C
        return H, C[-1:, :, :]


class QRNN(nn.Module):
    """Stacked QRNNLayers, no initial state, dropout between layers (eval);
    returns (output, h_n [L, B, H])."""

    def __init__(self, input_size, hidden_size, num_layers=2, dropout=0.2):
        super().__init__()
        self.layers = nn.ModuleList([QRNNLayer(input_size if l == 0 else hidden_size, hidden_size)
                                     for l in range(num_layers)])
        self.num_layers, self.dropout = num_layers, dropout

    def forward(self, input):
        next_hidden = []
        for i, layer in enumerate(self.layers):
            input, hn = layer(input)
            next_hidden.append(hn)
            if self.dropout and i < self.num_layers - 1:
                input = F.dropout(input, p=self.dropout, training=self.training)
        next_hidden = torch.cat(next_hidden, 0).view(self.num_layers, *next_hidden[0].size()[-2:])
        return input, next_hidden


class FilterLinear(nn.Module):
    """A Linear whose weight is masked by a fixed 0/1 matrix (the identity:
    one decay per feature), as GRU-D implementations write gamma_x."""

    def __init__(self, in_features, out_features, filter_square_matrix):
        super().__init__()
        self.register_buffer("filter_square_matrix", filter_square_matrix)
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        stdv = 1.0 / math.sqrt(in_features)
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input):
        return F.linear(input, self.filter_square_matrix.mul(self.weight), self.bias)


class GRUD(nn.Module):
    """GRU-D (Che et al. 2018) in the zhiyongc/GRU-D style: the values, the
    last observed values, the masks and the time deltas as separate inputs
    [B, T, D], each sliced per step with [:, i:i+1, :] and squeezed; decays
    exp(-max(0, .)) on the input (per feature) and the hidden state; gates
    by Linears over cat(x, h, mask); outputs grown by torch.cat."""

    def __init__(self, input_size, hidden_size, x_mean):
        super().__init__()
        self.hidden_size = hidden_size
        self.register_buffer("X_mean", torch.as_tensor(x_mean, dtype=torch.float32))
        self.register_buffer("zeros_x", torch.zeros(input_size))
        self.register_buffer("zeros_h", torch.zeros(hidden_size))
        self.zl = nn.Linear(2 * input_size + hidden_size, hidden_size)
        self.rl = nn.Linear(2 * input_size + hidden_size, hidden_size)
        self.hl = nn.Linear(2 * input_size + hidden_size, hidden_size)
        self.gamma_x_l = FilterLinear(input_size, input_size, torch.eye(input_size))
        self.gamma_h_l = nn.Linear(input_size, hidden_size)

    def step(self, x, x_last_obsv, x_mean, h, mask, delta):
        delta_x = torch.exp(-torch.max(self.zeros_x, self.gamma_x_l(delta)))
        delta_h = torch.exp(-torch.max(self.zeros_h, self.gamma_h_l(delta)))
        x = mask * x + (1 - mask) * (delta_x * x_last_obsv + (1 - delta_x) * x_mean)
        h = delta_h * h
        combined = torch.cat((x, h, mask), 1)
        z = torch.sigmoid(self.zl(combined))
        r = torch.sigmoid(self.rl(combined))
        h_tilde = torch.tanh(self.hl(torch.cat((x, r * h, mask), 1)))
        return (1 - z) * h + z * h_tilde

    def forward(self, X, X_last_obsv, Mask, Delta):
        Hidden_State = torch.zeros(X.size(0), self.hidden_size)
        outputs = None
        for i in range(X.size(1)):
            Hidden_State = self.step(torch.squeeze(X[:, i:i + 1, :]), torch.squeeze(X_last_obsv[:, i:i + 1, :]),
                                     self.X_mean, Hidden_State, torch.squeeze(Mask[:, i:i + 1, :]),
                                     torch.squeeze(Delta[:, i:i + 1, :]))
            if outputs is None:
                outputs = Hidden_State.unsqueeze(1)
            else:
                outputs = torch.cat((outputs, Hidden_State.unsqueeze(1)), 1)
        return outputs


class SplitLSTMCell(nn.Module):
    """nn.LSTMCell over x.split(1, dim=1) of a batch-first [B, T, I] input,
    each chunk squeezed back to [B, I]; outputs stacked on dim 1, a head on
    every step."""

    def __init__(self, input_size, hidden_size, num_classes):
        super().__init__()
        self.lstm = nn.LSTMCell(input_size, hidden_size)
        self.fc = nn.Linear(hidden_size, num_classes)

    def forward(self, x):
        h_t = torch.zeros(x.size(0), self.lstm.hidden_size)
        c_t = torch.zeros(x.size(0), self.lstm.hidden_size)
        outputs = []
        for x_t in x.split(1, dim=1):
            h_t, c_t = self.lstm(x_t.squeeze(1), (h_t, c_t))
            outputs.append(h_t)
        return self.fc(torch.stack(outputs, dim=1))


class FrameSoftmaxRNN(nn.Module):
    """Frames [B, T, F] batch-first, each frame x[:, t] through a softmax
    before torch.cat with the state: a node of the step that needs the
    step's rows in one piece, which a batch-first sequence does not hold
    (every T-th row; issue 46's refused TIMIT body); a head on every step,
    torch.stack(dim=1)."""

    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.Linear(n_in + hidden, hidden)
        self.head = nn.Linear(hidden, n_out)

    def forward(self, frames):
        h = frames.new_zeros(frames.size(0), self.hidden)
        outs = []
        for t in range(frames.size(1)):
            x = F.softmax(frames[:, t], dim=-1)
            h = torch.tanh(self.cell(torch.cat([x, h], 1)))
            outs.append(self.head(h))
        return torch.stack(outs, 1)


class SeriesFuture(nn.Module):
    """pytorch/examples' time-sequence predictor: two nn.LSTMCells and a
    Linear in one loop over input.split(1, dim=1) of a [B, T] series, then
    `future` more steps, each fed the previous prediction; torch.stack of
    all predictions."""

    def __init__(self, hidden, future=3):
        super().__init__()
        self.hidden, self.future = hidden, future
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden)
        c_t = torch.zeros(input.size(0), self.hidden)
        h_t2 = torch.zeros(input.size(0), self.hidden)
        c_t2 = torch.zeros(input.size(0), self.hidden)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(self.future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.stack(outputs, dim=1)


class SeriesRollout(nn.Module):
    """A forecaster that only generates: from the last observation [B, I],
    nn.LSTMCell then a Linear back to the input size, each prediction the
    next step's input, `steps` predictions torch.stack'ed [B, steps, I]."""

    def __init__(self, n_features, hidden, steps=T_TRACE):
        super().__init__()
        self.cell = nn.LSTMCell(n_features, hidden)
        self.out = nn.Linear(hidden, n_features)
        self.steps = steps

    def forward(self, last_obs):
        h = last_obs.new_zeros(last_obs.size(0), self.cell.hidden_size)
        c = torch.zeros_like(h)
        pred = last_obs
        preds = []
        for _ in range(self.steps):
            h, c = self.cell(pred, (h, c))
            pred = self.out(h)
            preds.append(pred)
        return torch.stack(preds, 1)


# =============================================================================
# nn.LSTM / nn.GRU / nn.RNN modules called once per step in a Python loop
# =============================================================================
# Each call is a one-step ONNX LSTM/GRU/RNN node whose initial state is the
# previous call's final state; the exporter writes an Identity of the shared
# weights for every call.  Written as tutorials and blog posts write them.

class TutorialEncoderGRU(nn.Module):
    """The PyTorch seq2seq tutorial's encoder: an EncoderRNN module
    (embedding, .view(1, 1, -1), nn.GRU) run one token at a time by the
    training loop's `for ei in range(input_length)`, from initHidden()'s
    zeros(1, 1, H); batch 1, tokens [T, 1]; the encoder outputs gathered in
    a list and the last hidden state through a Linear."""

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size)

        def forward(self, input, hidden):
            embedded = self.embedding(input).view(1, 1, -1)
            output = embedded
            output, hidden = self.gru(output, hidden)
            return output, hidden

        def initHidden(self):
            return torch.zeros(1, 1, self.hidden_size)

    def __init__(self, vocab, hidden, classes):
        super().__init__()
        self.encoder = self.EncoderRNN(vocab, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, input_tensor):
        encoder_hidden = self.encoder.initHidden()
        encoder_outputs = []
        for ei in range(input_tensor.size(0)):
            encoder_output, encoder_hidden = self.encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs.append(encoder_output[0, 0])
        return torch.stack(encoder_outputs), self.out(encoder_hidden[0])


class StepLSTMForecaster(nn.Module):
    """A forecasting blog's loop: nn.LSTM(batch_first=True) fed one step at
    a time, x[:, t:t+1, :], the (h, c) tuple made with x.new_zeros and
    carried by the loop, a prediction from out[:, -1] at every step,
    torch.stack(preds, 1)."""

    def __init__(self, n_features, hidden):
        super().__init__()
        self.hidden = hidden
        self.lstm = nn.LSTM(n_features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 1)

    def forward(self, x):
        h = x.new_zeros(1, x.size(0), self.hidden)
        c = x.new_zeros(1, x.size(0), self.hidden)
        preds = []
        for t in range(x.size(1)):
            out, (h, c) = self.lstm(x[:, t:t + 1, :], (h, c))
            preds.append(self.fc(out[:, -1]))
        return torch.stack(preds, 1)


class StepRNNDefaultState(nn.Module):
    """nn.RNN called on x[t].view(1, B, -1) with no state at the first call
    (hidden=None: PyTorch's zeros), its returned state fed to the next
    call; the last state through a Linear."""

    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.rnn = nn.RNN(n_in, n_hidden)
        self.head = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        hidden = None
        for t in range(x.size(0)):
            _, hidden = self.rnn(x[t].view(1, x.size(1), -1), hidden)
        return self.head(hidden[-1])


class StepGRUDetach(nn.Module):
    """A streaming token model (an RL or online-learning style): tokens
    [B, T], each step's embedding unsqueezed to [B, 1, E] for an nn.GRU
    (batch_first), the state h.detach()'ed between steps, logits at every
    step stacked on dim 1."""

    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed, hidden, batch_first=True)
        self.logits = nn.Linear(hidden, vocab)
        self.hidden = hidden

    def forward(self, tokens):
        h = torch.zeros(1, tokens.shape[0], self.hidden)
        outs = []
        for t in range(tokens.shape[1]):
            o, h = self.gru(self.emb(tokens[:, t]).unsqueeze(1), h)
            h = h.detach()
            outs.append(self.logits(o.squeeze(1)))
        return torch.stack(outs, dim=1)


# =============================================================================
# The table: how each model is built, fed and exported
# =============================================================================

def seq_first(T, B, I, rng, H=None):
    return [rng.standard_normal((T, B, I)).astype(np.float32)]


def batch_first(T, B, I, rng, H=None):
    return [rng.standard_normal((B, T, I)).astype(np.float32)]


def pixels(T, B, I, rng, H=None):
    return [rng.random((B, T)).astype(np.float32)]


def tokens_bt(T, B, I, rng, H=None):
    return [rng.integers(0, VOCAB, (B, T)).astype(np.int64)]


def tokens_tb(T, B, I, rng, H=None):
    return [rng.integers(0, VOCAB, (T, B)).astype(np.int64)]


FRAME_C, FRAME_H, FRAME_W = 2, 5, 6


def frames(T, B, I, rng, H=None):
    return [rng.standard_normal((B, T, FRAME_C, FRAME_H, FRAME_W)).astype(np.float32)]


def grud_feed(T, B, I, rng, H=None):
    """values, last observed values, masks (1 observed) and the time since
    the last observation, each [B, T, I]."""
    mask = (rng.random((B, T, I)) < 0.6).astype(np.float32)
    x = (rng.standard_normal((B, T, I)) * mask).astype(np.float32)
    last = rng.standard_normal((B, T, I)).astype(np.float32)
    delta = (3 * rng.random((B, T, I))).astype(np.float32)
    return [x, last, mask, delta]


def last_obs(T, B, I, rng, H=None):
    return [rng.standard_normal((B, I)).astype(np.float32)]


def with_states(layers, bf):
    def make(T, B, I, rng, H):
        x = batch_first(T, B, I, rng) if bf else seq_first(T, B, I, rng)
        return x + [(0.5 * rng.standard_normal((layers, B, H))).astype(np.float32) for _ in range(2)]
    return make


def mom(base, mu, s):
    return "momentum_%s(mu=%g, s=%g)" % (base, mu, s)


# name -> dict(build(I, H, C) -> module, family, expected_cell, style tags,
#   feed(T, B, I, rng) -> inputs, ins/outs (ONNX names), axes: per input
#   (time axis, batch axis), exports: [(opset, dynamic)] with dynamic one of
#   None, "b" (batch), "bt" (batch and time), and optionally a batch size
#   (case MODEL_opsetN_bB), recurrences, sound (another T
#   computes the same recurrence), table (a per-step coefficient whose
#   schedule the trace cannot show: cellc may name the cell only up to its
#   first option), pixel (input size 1 by construction), fixed_batch (the
#   model runs one batch size: no data set at another)
MODELS = {
    "momlstm_cellclass": dict(
        build=lambda I, H, C: MomentumLSTM(I, H), family="momentum_lstm", expected_cell=mom("lstm", 0.6, 0.6),
        style=["cell_class", "nn_linear", "chunk", "torch_sigmoid", "zeros_in_forward", "seq_first",
               "returns_out_h_c"],
        feed=seq_first, ins=["input"], outs=["output", "h_n", "c_n"], axes={"input": (0, 1)},
        exports=[(13, None), (14, "bt")]),
    "momlstm_pixel": dict(
        build=lambda I, H, C: PixelMomLSTM(H, C), family="momentum_lstm", expected_cell=mom("lstm", 0.9, 0.5),
        style=["pixel_rank2", "view_-1_1", "nn_parameter_in_out", "torch_mm", "slice_gates",
               "no_recurrent_bias", "zeros_in_forward", "head_last_step_only"],
        feed=pixels, ins=["x"], outs=["logits"], axes={"x": (1, 0)}, pixel=True,
        exports=[(14, "b"), (17, None)]),
    "momlstm_stacked": dict(
        build=lambda I, H, C: StackedMomLSTM(I, H, C), family="momentum_lstm", expected_cell=mom("lstm", 0.5, 0.8),
        style=["stacked_layers", "loop_per_layer", "states_passed_in_stacked", "returns_states_stacked",
               "new_zeros", "dropout_eval", "batch_first", "chunk_dim_-1", "head_every_step"],
        feed=with_states(2, True), ins=["x", "h0", "c0"], outs=["y", "h_n", "c_n"],
        axes={"x": (1, 0), "h0": (None, 1), "c0": (None, 1)}, recurrences=2,
        exports=[(14, "bt"), (17, None)]),
    "momlstm_shapes": dict(
        build=lambda I, H, C: MomLSTMShapes(I, H, C), family="momentum_lstm", expected_cell=mom("lstm", 0.7, 0.4),
        style=["shape_noops", "view_same_shape", "gates_squeeze", "state_1BH_unsqueeze_squeeze",
               "nn_parameter", "matmul_at_t", "zeros_in_forward", "seq_first", "head_every_step"],
        feed=seq_first, ins=["x"], outs=["y"], axes={"x": (0, 1)},
        exports=[(13, None), (17, "bt")]),
    "adamlstm_split": dict(
        build=lambda I, H, C: AdamLSTM(I, H, C), family="adam_lstm",
        expected_cell="adam_lstm(mu=0.5, s=0.7, beta=0.9, eps=1e-08)",
        style=["f_linear", "nn_parameter", "split_gates", "sigmoid_module", "pow2", "eps_1e-8",
               "zeros_in_forward", "batch_first", "head_every_step", "stack_dim1"],
        feed=batch_first, ins=["x"], outs=["logits"], axes={"x": (1, 0)},
        exports=[(14, "bt"), (17, None)]),
    "adamlstm_pixel": dict(
        build=lambda I, H, C: PixelAdamLSTM(H, C), family="adam_lstm",
        expected_cell="adam_lstm(mu=0.6, s=0.5, beta=0.8, eps=1e-16)",
        style=["pixel_rank2", "unsqueeze_1", "nn_linear", "no_recurrent_bias", "view_B_4_H_index_gates",
               "torch_div", "zeros_in_forward", "head_last_step_only", "log_softmax"],
        feed=pixels, ins=["pixels"], outs=["log_probs"], axes={"pixels": (1, 0)}, pixel=True,
        exports=[(13, None), (14, "bt")]),
    "adamlstm_functional": dict(
        build=lambda I, H, C: FunctionalAdamLSTM(I, H), family="adam_lstm",
        expected_cell="adam_lstm(mu=0.3, s=0.9, beta=0.95, eps=1e-16)",
        style=["free_step_function", "parameter_dict", "torch_addmm", "slice_gates", "iterate_tensor",
               "tuple_state", "zeros_in_forward", "seq_first", "returns_out_h_c"],
        feed=seq_first, ins=["seq"], outs=["hs", "h", "c"], axes={"seq": (0, 1)},
        exports=[(13, None), (17, None)]),
    "rmslstm_shapes": dict(
        build=lambda I, H, C: RMSPropLSTMShapes(I, H, C), family="rmsprop_lstm",
        expected_cell="rmsprop_lstm(s=0.8, beta=0.9, eps=1e-16)",
        style=["shape_noops", "view_same_shape", "gates_squeeze", "state_1BH_unsqueeze_squeeze", "nn_linear",
               "chunk", "zeros_in_forward", "batch_first", "head_over_stack", "returns_out_h"],
        feed=batch_first, ins=["x"], outs=["y", "h"], axes={"x": (1, 0)},
        # at batch 1 gates.squeeze() also drops the batch axis: the gate math
        # runs on [4H] vectors against [1, H] states
        exports=[(14, "bt"), (17, None), (13, None, 1)]),
    "rmslstm_lm": dict(
        build=lambda I, H, C: RMSPropLSTMLM(VOCAB, I, H), family="rmsprop_lstm",
        expected_cell="rmsprop_lstm(s=0.6, beta=0.8, eps=1e-16)",
        style=["embedding_int64", "rsqrt", "nn_linear", "chunk", "zeros_in_forward", "seq_first",
               "head_every_step"],
        feed=tokens_tb, ins=["tokens"], outs=["logits"], axes={"tokens": (0, 1)},
        exports=[(13, None), (14, "bt")]),
    "naglstm_counter": dict(
        build=lambda I, H, C: SRLSTM(I, H, C), family="nag_lstm", expected_cell="nag_lstm(s=0.6, restart=3)",
        style=["python_int_restart_counter", "per_step_constant", "nn_linear", "chunk", "zeros_in_forward",
               "seq_first", "head_every_step", "returns_out_h"],
        feed=seq_first, ins=["inputs"], outs=["outputs", "h"], axes={"inputs": (0, 1)},
        exports=[(13, None), (17, "bt")]),
    "naglstm_pixel_buffer": dict(
        build=lambda I, H, C: PixelNAGLSTM(H, C), family="nag_lstm", expected_cell="nag_lstm(s=0.7, restart=4)",
        style=["pixel_rank2", "unsqueeze_1", "schedule_buffer_indexed", "nn_parameter_in_out", "matmul_at",
               "split_gates", "tensor_method_sigmoid", "zeros_in_forward", "head_last_step_only"],
        feed=pixels, ins=["pixels"], outs=["scores"], axes={"pixels": (1, 0)}, pixel=True,
        exports=[(14, "b"), (17, None)]),
    "naglstm_norestart": dict(
        build=lambda I, H, C: NesterovLSTM(I, H), family="nag_lstm", expected_cell="nag_lstm(s=0.5, restart=0)",
        style=["one_based_range", "per_step_constant", "nn_parameter_in_out", "torch_mm", "chunk_dim_-1",
               "f_sigmoid_deprecated", "forget_bias_1", "zeros_in_forward", "seq_first", "returns_last_h"],
        feed=seq_first, ins=["X"], outs=["h"], axes={"X": (0, 1)},
        # 8 steps never restart: restart 0 and any restart > 8 trace alike,
        # so the schedule is a table of 8 values and T must stay 8
        sound=False, table=True,
        exports=[(13, None), (14, "bt")]),
    "momgru_embed": dict(
        build=lambda I, H, C: MomentumGRUClassifier(VOCAB, I, H, C), family="momentum_gru",
        expected_cell=mom("gru", 0.7, 0.5),
        style=["embedding_int64", "nn_linear", "chunk", "zeros_in_forward", "batch_first",
               "head_last_step_only"],
        feed=tokens_bt, ins=["tokens"], outs=["logits"], axes={"tokens": (1, 0)},
        exports=[(14, "bt"), (17, None)]),
    "momgru_start_token": dict(
        build=lambda I, H, C: MomGRUDecoder(I, H, C), family="momentum_gru", expected_cell=mom("gru", 0.8, 0.3),
        style=["learned_start_token", "first_step_differs", "teacher_forcing", "expand", "nn_linear",
               "chunk_dim_-1", "zeros_in_forward", "seq_first", "head_every_step"],
        feed=seq_first, ins=["target"], outs=["preds"], axes={"target": (0, 1)},
        exports=[(13, None), (17, "bt")], loop_offset=1,
        # With a dynamic time axis the file does not hold the traced length:
        # this model at T = 8 (start, then x[0..6]) and one that runs a first
        # step on the start token and then `for t in range(T)` over x at T = 7
        # export the same graph, and they differ at every other T.  The time
        # axis of that export cannot soundly be extended (cellc keeps T = 7 and
        # says why); the static export (T known) and momgru_cat_start (the
        # shifted input written with torch.cat) can.
        dynamic_time_ambiguous=True),
    "momgru_cat_start": dict(
        build=lambda I, H, C: MomGRUCatStart(I, H, C), family="momentum_gru", expected_cell=mom("gru", 0.7, 0.4),
        style=["learned_start_token", "cat_start_then_drop_last", "first_step_differs", "teacher_forcing",
               "torch_addmm", "column_slices", "new_zeros", "batch_first", "stack_dim1"],
        feed=batch_first, ins=["y"], outs=["y_hat"], axes={"y": (1, 0)},
        exports=[(14, None), (17, "bt")]),
    "lstm_next_step": dict(
        build=lambda I, H, C: NextStepLSTM(I, H), family="lstm", expected_cell="plain_lstm",
        style=["drop_last_step", "next_step_prediction", "nn_lstmcell", "zeros_like", "seq_first",
               "head_every_step"],
        feed=seq_first, ins=["series"], outs=["preds"], axes={"series": (0, 1)},
        exports=[(13, "bt"), (17, None)]),
    "momgru_sepgates": dict(
        build=lambda I, H, C: MomGRUSepGates(I, H), family="momentum_gru", expected_cell=mom("gru", 0.6, 0.9),
        style=["linear_per_gate", "velocity_per_gate", "f_sigmoid_deprecated", "zeros_in_forward",
               "batch_first", "cat_unsqueezed_outputs", "returns_out_h"],
        feed=batch_first, ins=["x"], outs=["hidden_seq", "h_t"], axes={"x": (1, 0)},
        exports=[(13, None), (14, "bt")]),
    "momrnn_keras": dict(
        build=lambda I, H, C: MomentumRNNKeras(H, I), family="momentum_rnn", expected_cell=mom("rnn", 0.6, 0.9),
        style=["keras_like", "bias_separate_parameter", "no_recurrent_bias", "nn_linear_nobias",
               "zeros_in_forward", "batch_first", "returns_last_h"],
        feed=batch_first, ins=["inputs"], outs=["state"], axes={"inputs": (1, 0)},
        exports=[(13, None), (17, None)]),
    "momrnn_pixel": dict(
        build=lambda I, H, C: PixelMomRNN(H, C), family="momentum_rnn", expected_cell=mom("rnn", 0.5, 1),
        style=["pixel_rank2", "unsqueeze_1", "state_1BH_unsqueeze_squeeze", "shape_noops", "nn_linear",
               "zeros_in_forward", "head_every_step", "stack_dim1"],
        feed=pixels, ins=["img"], outs=["scores"], axes={"img": (1, 0)}, pixel=True,
        exports=[(14, "bt"), (17, "b")]),
    "lstm_concat": dict(
        build=lambda I, H, C: ConcatLSTM(I, H), family="lstm", expected_cell="plain_lstm",
        style=["linear_over_cat_x_h", "one_bias", "torch_chunk", "zeros_in_forward", "seq_first",
               "returns_out_h_c"],
        feed=seq_first, ins=["x"], outs=["out", "h", "c"], axes={"x": (0, 1)},
        exports=[(13, None), (14, "bt")]),
    "lstm_textbook": dict(
        build=lambda I, H, C: TextbookLSTM(I, H, C), family="lstm", expected_cell="plain_lstm",
        style=["linear_per_gate_and_source", "zeros_in_forward", "batch_first", "dropout_eval",
               "head_every_step", "stack_dim1"],
        feed=batch_first, ins=["x"], outs=["y"], axes={"x": (1, 0)},
        exports=[(14, "bt"), (17, None)]),
    "lstm_cells_stacked": dict(
        build=lambda I, H, C: StackedLSTMCells(I, H), family="lstm", expected_cell="plain_lstm",
        style=["nn_lstmcell", "stacked_layers", "loop_per_layer", "states_passed_in_stacked",
               "returns_states_stacked", "seq_first", "returns_out_h_c"],
        feed=with_states(2, False), ins=["x", "h0", "c0"], outs=["out", "h_n", "c_n"],
        axes={"x": (0, 1), "h0": (None, 1), "c0": (None, 1)}, recurrences=2,
        exports=[(13, None), (17, "bt")]),
    "gru_manual": dict(
        build=lambda I, H, C: ManualGRU(I, H), family="gru", expected_cell="plain_gru",
        style=["nn_gru_layout_parameters", "f_linear", "chunk", "unbind_loop", "h_plus_z_times_diff",
               "zeros_in_forward", "seq_first", "returns_out_h_none_index"],
        feed=seq_first, ins=["input"], outs=["output", "h_n"], axes={"input": (0, 1)},
        exports=[(13, None), (17, None)]),
    "gru_cell_classifier": dict(
        build=lambda I, H, C: GRUCellClassifier(VOCAB, I, H, C), family="gru", expected_cell="plain_gru",
        style=["nn_grucell", "embedding_int64", "dropout_eval", "sequential_head", "zeros_in_forward",
               "batch_first", "head_last_step_only"],
        feed=tokens_bt, ins=["text"], outs=["logits"], axes={"text": (1, 0)},
        exports=[(14, "b"), (17, None)]),
    "lstm_scripted_mm": dict(
        build=lambda I, H, C: ScriptedMmLSTM(I, H), family="lstm", expected_cell="plain_lstm",
        style=["jit_script_step", "torch_mm", "bias_after_mm", "index_t", "states_passed_in_stacked",
               "seq_first", "returns_out_h_c"],
        feed=with_states(1, False), ins=["x", "h0", "c0"], outs=["out", "h_n", "c_n"],
        axes={"x": (0, 1), "h0": (None, 1), "c0": (None, 1)},
        exports=[(14, None), (17, "bt")]),
    "rnn_elman": dict(
        build=lambda I, H, C: ElmanRNN(I, H), family="rnn", expected_cell="plain_rnn",
        style=["nn_parameter", "matmul_at_t", "zeros_in_forward", "seq_first", "returns_out_h"],
        feed=seq_first, ins=["xs"], outs=["hs", "h"], axes={"xs": (0, 1)},
        exports=[(13, None), (17, None)]),
    "rnn_cell_pixel": dict(
        build=lambda I, H, C: PixelRNNCell(H, C), family="rnn", expected_cell="plain_rnn",
        style=["nn_rnncell", "pixel_rank2", "unsqueeze_1", "zeros_in_forward", "head_last_step_only"],
        feed=pixels, ins=["x"], outs=["logits"], axes={"x": (1, 0)}, pixel=True,
        exports=[(14, "bt"), (17, None)]),
    "fastgrnn_cell": dict(
        build=lambda I, H, C: FastGRNN(I, H, batch_first=True), family="fastgrnn", expected_cell=None,
        style=["cell_class", "nn_parameter_in_out", "torch_matmul", "scalar_params_1x1", "transpose_batch_first",
               "zeros_in_forward", "returns_out_h"],
        feed=batch_first, ins=["input"], outs=["output", "h"], axes={"input": (1, 0)},
        exports=[(13, None), (14, "bt"), (17, None)]),
    "fastgrnn_pixel": dict(
        build=lambda I, H, C: PixelFastGRNN(H, C), family="fastgrnn", expected_cell=None,
        style=["pixel_rank2", "unsqueeze_-1", "nn_linear_nobias", "scalar_params_0d", "zeros_in_forward",
               "head_last_step_only"],
        feed=pixels, ins=["x"], outs=["y"], axes={"x": (1, 0)}, pixel=True,
        exports=[(14, "b"), (17, "bt")]),
    "convlstm_frames": dict(
        build=lambda I, H, C: ConvLSTM(FRAME_C, [4, 3], (3, 3), 2), family="convlstm", expected_cell=None,
        style=["ndrplz_convlstm", "conv2d_over_cat_x_h", "frames_5d", "batch_first", "split_gates_dim1",
               "init_hidden_zeros", "stacked_layers", "loop_per_layer", "lists_per_layer", "return_all_layers"],
        feed=frames, ins=["frames"], outs=["out_0", "out_1", "h_0", "c_0", "h_1", "c_1"],
        axes={"frames": (1, 0)}, recurrences=2,
        exports=[(13, None), (17, "bt")]),
    "qrnn_forget_mult": dict(
        build=lambda I, H, C: QRNN(I, H), family="qrnn", expected_cell=None,
        style=["salesforce_qrnn", "cpu_forget_mult", "split_1_dim0_of_product", "view_size_1_on",
               "no_initial_state", "first_step_differs", "linear_over_sequence", "zoneout_eval",
               "stacked_layers", "loop_per_layer", "seq_first", "returns_out_h_stacked"],
        feed=seq_first, ins=["input"], outs=["output", "h_n"], axes={"input": (0, 1)}, recurrences=2,
        # ((f * x).split(1, dim=0) over a dynamic time axis exports a Split of fixed sizes)
        exports=[(13, None), (14, "b")]),
    "grud_slices": dict(
        build=lambda I, H, C: GRUD(I, H, torch.linspace(-0.5, 0.5, I)), family="grud", expected_cell=None,
        style=["zhiyongc_grud", "separate_mask_delta_inputs", "slice_i_i+1_squeeze", "filter_linear",
               "decay_exp_max0", "linear_over_cat", "cat_grown_outputs", "zeros_in_forward", "batch_first"],
        feed=grud_feed, ins=["X", "X_last_obsv", "Mask", "Delta"], outs=["outputs"],
        axes={"X": (1, 0), "X_last_obsv": (1, 0), "Mask": (1, 0), "Delta": (1, 0)},
        exports=[(13, None), (17, "b")]),
    "lstmcell_split": dict(
        build=lambda I, H, C: SplitLSTMCell(I, H, C), family="lstm", expected_cell="plain_lstm",
        style=["nn_lstmcell", "split_1_dim1", "squeeze_1", "batch_first", "zeros_in_forward",
               "head_over_stack", "stack_dim1"],
        feed=batch_first, ins=["x"], outs=["y"], axes={"x": (1, 0)},
        # (x.split(1, dim=1) over a dynamic time axis does not export: unsafe_chunk)
        exports=[(13, None), (17, "b")]),
    "frames_softmax_rnn": dict(
        build=lambda I, H, C: FrameSoftmaxRNN(I, H, C), family="rnn", expected_cell=None,
        style=["batch_first", "softmax_of_step_input", "linear_over_cat_x_h", "new_zeros", "head_every_step",
               "stack_dim1"],
        feed=batch_first, ins=["frames"], outs=["y"], axes={"frames": (1, 0)},
        exports=[(14, "bt"), (17, None)]),
    "series_future": dict(
        build=lambda I, H, C: SeriesFuture(H), family="lstm", expected_cell=None,
        style=["pytorch_examples_time_sequence", "two_lstmcells_one_loop", "split_1_dim1", "pixel_rank2",
               "future_steps_fed_back", "list_plus_equals", "stack_dim1", "zeros_in_forward"],
        feed=pixels, ins=["input"], outs=["outputs"], axes={"input": (1, 0)}, pixel=True, recurrences=2,
        # the future steps: a generated sequence of its own 3 steps
        generated=[3], long=False, exports=[(14, None), (17, "b")]),
    "series_rollout": dict(
        build=lambda I, H, C: SeriesRollout(I, H), family="lstm", expected_cell="plain_lstm",
        style=["generated_sequence", "output_fed_back", "no_input_sequence", "nn_lstmcell", "new_zeros",
               "zeros_like", "stack_dim1"],
        feed=last_obs, ins=["last_obs"], outs=["preds"], axes={"last_obs": (None, 0)},
        # the model runs its `steps` (T = 8) and no other number: a generated
        # sequence, whose fixed T is no fallback
        sound=False, generated=[8],
        exports=[(13, None), (17, "b")]),
    "gru_tutorial_encoder": dict(
        build=lambda I, H, C: TutorialEncoderGRU(VOCAB, H, C), family="gru", expected_cell="plain_gru",
        style=["pytorch_seq2seq_tutorial", "module_per_step", "one_step_nn_gru", "embedding_int64",
               "view_1_1_-1", "init_hidden", "batch_1", "list_of_outputs", "stack_dim0"],
        feed=tokens_tb, ins=["input_tensor"], outs=["encoder_outputs", "logits"],
        # (.view(1, 1, -1) makes the batch 1: only the time axis is dynamic)
        axes={"input_tensor": (0, None)}, fixed_batch=True, exports=[(13, "bt", 1), (17, None, 1)]),
    "lstm_step_forecaster": dict(
        build=lambda I, H, C: StepLSTMForecaster(I, H), family="lstm", expected_cell="plain_lstm",
        style=["module_per_step", "one_step_nn_lstm", "batch_first", "slice_t_t+1", "new_zeros",
               "tuple_state", "head_every_step", "out_-1", "stack_dim1"],
        feed=batch_first, ins=["x"], outs=["preds"], axes={"x": (1, 0)},
        exports=[(14, "bt"), (17, None)]),
    "rnn_step_default_state": dict(
        build=lambda I, H, C: StepRNNDefaultState(I, H, C), family="rnn", expected_cell="plain_rnn",
        style=["module_per_step", "one_step_nn_rnn", "hidden_none_first", "view_1_B_-1", "seq_first",
               "head_last_state"],
        feed=seq_first, ins=["x"], outs=["y"], axes={"x": (0, 1)},
        exports=[(13, "bt"), (14, None)]),
    "gru_step_detach": dict(
        build=lambda I, H, C: StepGRUDetach(VOCAB, I, H), family="gru", expected_cell="plain_gru",
        style=["module_per_step", "one_step_nn_gru", "embedding_int64", "tokens_batch_first", "unsqueeze_1",
               "detach_state", "zeros_in_forward", "head_every_step", "stack_dim1"],
        feed=tokens_bt, ins=["tokens"], outs=["logits"], axes={"tokens": (1, 0)},
        exports=[(14, "bt"), (17, None)]),
}


# =============================================================================
# Self-check: every model against docs/cells.md written once more in numpy
# =============================================================================
# The goldens are the models' own outputs; this check makes sure that each
# model computes the cell its case.json names (expected_cell), so that a
# re-rolled recurrence recognised as another cell is cellc's error, not the
# model's.  float64 numpy, weights read out of the module in docs/cells.md's
# layout (W_x [rows, in], b_x, W_h [rows, H], b_h), the model's head applied
# by hand.  Run for every model before it is exported.

def npw(t):
    return t.detach().double().numpy()


def sig(a):
    return 1.0 / (1.0 + np.exp(-a))


def lin(x, mod):
    y = x @ npw(mod.weight).T
    return y + npw(mod.bias) if mod.bias is not None else y


def cells_md(base, dyn, o, Wx, bx, Wh, bh, xs, h0=None, c0=None):
    """docs/cells.md sections 2-3 (and FastGRNN): xs [T, B, I] -> (hs [T, B, H], c_T)."""
    T, B = xs.shape[0], xs.shape[1]
    R, H = Wh.shape
    h = np.zeros((B, H)) if h0 is None else h0
    c = np.zeros((B, H)) if c0 is None else c0
    v, m = np.zeros((B, R)), np.zeros((B, R))
    hs = []
    for t in range(1, T + 1):
        u = xs[t - 1] @ Wx.T + bx
        if dyn == "plain":
            d = u
        elif dyn in ("momentum", "nag"):
            if dyn == "nag":
                k = ((t - 1) % o["restart"]) + 1 if o["restart"] else t
                mu = (k - 1) / (k + 2)
            else:
                mu = o["mu"]
            v = mu * v + o["s"] * u
            d = v
        elif dyn == "adam":
            v = o["mu"] * v + o["s"] * u
            m = o["beta"] * m + (1 - o["beta"]) * u * u
            d = v / np.sqrt(m + o["eps"])
        elif dyn == "rmsprop":
            m = o["beta"] * m + (1 - o["beta"]) * u * u
            d = o["s"] * u / np.sqrt(m + o["eps"])
        r = h @ Wh.T + bh
        if base == "rnn":
            h = np.tanh(d + r)
        elif base == "lstm":
            a = d + r
            i, f, g, q = (a[:, k * H:(k + 1) * H] for k in range(4))
            c = sig(f) * c + sig(i) * np.tanh(g)
            h = sig(q) * np.tanh(c)
        elif base == "gru":
            rg = sig(d[:, :H] + r[:, :H])
            z = sig(d[:, H:2 * H] + r[:, H:2 * H])
            n = np.tanh(d[:, 2 * H:] + rg * r[:, 2 * H:])
            h = (1 - z) * n + z * h
        elif base == "fastgrnn":
            z = sig(d + r + o["b_z"])
            ht = np.tanh(d + r + o["b_h"])
            h = (sig(o["zeta"]) * (1 - z) + sig(o["nu"])) * ht + z * h
        hs.append(h)
    return np.stack(hs), c


def np_lstm_cell(x, h, c, cell):
    """one nn.LSTMCell step in float64 (gates i, f, g, o)."""
    H = h.shape[1]
    a = x @ npw(cell.weight_ih).T + npw(cell.bias_ih) + h @ npw(cell.weight_hh).T + npw(cell.bias_hh)
    c = sig(a[:, H:2 * H]) * c + sig(a[:, :H]) * np.tanh(a[:, 2 * H:3 * H])
    return sig(a[:, 3 * H:]) * np.tanh(c), c


def np_conv2d_same(x, w, b):
    """x [B, C, H, W] (*) w [O, C, kh, kw], zero padding kh//2, kw//2."""
    kh, kw = w.shape[2], w.shape[3]
    Hh, Ww = x.shape[2], x.shape[3]
    xp = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    y = np.zeros((x.shape[0], w.shape[0], Hh, Ww))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("bchw,oc->bohw", xp[:, :, i:i + Hh, j:j + Ww], w[:, :, i, j])
    return y + b[None, :, None, None]


def np_convlstm(net, x):
    """x [B, T, C, H, W] -> (per-layer [B, T, hid, H, W], per-layer (h, c))."""
    outs, states = [], []
    for cell in net.cell_list:
        B, T, _, Hh, Ww = x.shape
        hid = cell.hidden_dim
        h, c = np.zeros((B, hid, Hh, Ww)), np.zeros((B, hid, Hh, Ww))
        hs = []
        for t in range(T):
            a = np_conv2d_same(np.concatenate([x[:, t], h], 1), npw(cell.conv.weight), npw(cell.conv.bias))
            i, f, o, g = (a[:, k * hid:(k + 1) * hid] for k in range(4))
            c = sig(f) * c + sig(i) * np.tanh(g)
            h = sig(o) * np.tanh(c)
            hs.append(h)
        x = np.stack(hs, 1)
        outs.append(x)
        states.append((h, c))
    return outs, states


def np_qrnn(net, x):
    """x [T, B, I] -> (out [T, B, H], h_n [L, B, H]); h_0 = f_0 z_0."""
    hn = []
    for layer in net.layers:
        H = layer.hidden_size
        y = lin(x, layer.linear)
        z, f, o = np.tanh(y[..., :H]), sig(y[..., H:2 * H]) * (1 - layer.zoneout), sig(y[..., 2 * H:])
        cs, c = [], None
        for t in range(x.shape[0]):
            c = f[t] * z[t] if c is None else f[t] * z[t] + (1 - f[t]) * c
            cs.append(c)
        x = o * np.stack(cs)
        hn.append(c)
    return x, np.stack(hn)


def np_grud(net, X, last, mask, delta):
    """GRU-D (docs: Che et al.) with the module's weights: [B, T, H]."""
    B, T, D = X.shape
    H = net.hidden_size
    Wgx = npw(net.gamma_x_l.weight) * np.eye(D)
    x_mean = npw(net.X_mean)
    h = np.zeros((B, H))
    hs = []
    for t in range(T):
        x, m, d = X[:, t], mask[:, t], delta[:, t]
        gx = np.exp(-np.maximum(0, d @ Wgx.T + npw(net.gamma_x_l.bias)))
        gh = np.exp(-np.maximum(0, lin(d, net.gamma_h_l)))
        x = m * x + (1 - m) * (gx * last[:, t] + (1 - gx) * x_mean)
        h = gh * h
        comb = np.concatenate([x, h, m], 1)
        z, r = sig(lin(comb, net.zl)), sig(lin(comb, net.rl))
        ht = np.tanh(lin(np.concatenate([x, r * h, m], 1), net.hl))
        h = (1 - z) * h + z * ht
        hs.append(h)
    return np.stack(hs, 1)


def cell_of(expected):
    """(base, dynamic, options) from an expected_cell string."""
    name, _, args = expected.partition("(")
    dyn, base = name.split("_", 1)
    o = {}
    for kv in filter(None, args.rstrip(")").split(", ")):
        k, val = kv.split("=")
        o[k] = float(val)
    o.setdefault("eps", 1e-16)
    if "restart" in o:
        o["restart"] = int(o["restart"])
    return base, dyn, o


def ref_outputs(name, net, arrays):
    """The model's outputs recomputed from docs/cells.md (float64)."""
    spec = MODELS[name]
    if spec["expected_cell"]:
        base, dyn, o = cell_of(spec["expected_cell"])
    else:
        base, dyn, o = "fastgrnn", "plain", {}
    run = lambda Wx, bx, Wh, bh, xs, **kw: cells_md(base, dyn, dict(o, **kw.pop("o", {})), Wx, bx, Wh, bh, xs, **kw)
    x = arrays[0].astype(np.float64) if arrays[0].dtype != np.int64 else arrays[0]
    tb = lambda a: a.transpose(1, 0, 2)                 # [B, T, .] <-> [T, B, .]
    col = lambda px: px.T[:, :, None]                   # pixels [B, T] -> [T, B, 1]
    zero = lambda n: np.zeros(n)
    if name == "momlstm_cellclass":
        cl = net.cell
        hs, c = run(npw(cl.ih.weight), npw(cl.ih.bias), npw(cl.hh.weight), npw(cl.hh.bias), x)
        return [hs, hs[-1], c]
    if name == "momlstm_pixel":
        hs, _ = run(npw(net.W).T, npw(net.b), npw(net.U).T, zero(4 * net.nhid), col(x))
        return [lin(hs[-1], net.classifier)]
    if name == "momlstm_stacked":
        out, hn, cn = tb(x), [], []
        for l, ly in enumerate(net.layers):
            out, c = run(npw(ly.w_ih.weight), npw(ly.w_ih.bias), npw(ly.w_hh.weight), npw(ly.w_hh.bias), out,
                         h0=arrays[1][l].astype(np.float64), c0=arrays[2][l].astype(np.float64))
            hn.append(out[-1])
            cn.append(c)
        return [tb(lin(out, net.decoder)), np.stack(hn), np.stack(cn)]
    if name == "momlstm_shapes":
        hs, _ = run(npw(net.Wx), npw(net.bx), npw(net.Wh), npw(net.bh), x)
        return [lin(hs, net.out)]
    if name == "adamlstm_split":
        hs, _ = run(npw(net.weight_ih), npw(net.bias_ih), npw(net.weight_hh), npw(net.bias_hh), tb(x))
        return [tb(lin(hs, net.fc))]
    if name == "adamlstm_pixel":
        hs, _ = run(npw(net.x2h.weight), npw(net.x2h.bias), npw(net.h2h.weight), zero(4 * net.hidden), col(x))
        y = lin(hs[-1], net.fc)
        return [y - y.max(1, keepdims=True) - np.log(np.exp(y - y.max(1, keepdims=True)).sum(1, keepdims=True))]
    if name == "adamlstm_functional":
        p = {k: npw(v) for k, v in net.params.items()}
        hs, c = run(p["W_x"], p["b_x"], p["W_h"], p["b_h"], x)
        return [hs, hs[-1], c]
    if name == "rmslstm_shapes":
        hs, _ = run(npw(net.inp.weight), npw(net.inp.bias), npw(net.rec.weight), npw(net.rec.bias), tb(x))
        return [tb(lin(hs, net.head)), hs[-1][None]]
    if name == "rmslstm_lm":
        hs, _ = run(npw(net.i2h.weight), npw(net.i2h.bias), npw(net.h2h.weight), npw(net.h2h.bias),
                    npw(net.encoder.weight)[x])
        return [lin(hs, net.decoder)]
    if name == "naglstm_counter":
        hs, _ = run(npw(net.i2h.weight), npw(net.i2h.bias), npw(net.h2h.weight), npw(net.h2h.bias), x)
        return [lin(hs, net.h2o), hs[-1]]
    if name == "naglstm_pixel_buffer":
        hs, _ = run(npw(net.w_in).T, npw(net.b_in), npw(net.w_rec).T, npw(net.b_rec), col(x))
        return [lin(hs[-1], net.readout)]
    if name == "naglstm_norestart":
        hs, _ = run(npw(net.weight_x).T, npw(net.bias), npw(net.weight_h).T, npw(net.bias_h), x)
        return [hs[-1]]
    if name == "momgru_embed":
        hs, _ = run(npw(net.W.weight), npw(net.W.bias), npw(net.U.weight), npw(net.U.bias),
                    tb(npw(net.embedding.weight)[x]))
        return [lin(hs[-1], net.fc)]
    if name == "momgru_start_token":
        B = x.shape[1]
        xs = np.concatenate([np.broadcast_to(npw(net.start), (1, B, x.shape[2])), x[:-1]], 0)
        hs, _ = run(npw(net.x_proj.weight), npw(net.x_proj.bias), npw(net.h_proj.weight), npw(net.h_proj.bias), xs)
        return [lin(hs, net.out)]
    if name == "momgru_cat_start":
        B = x.shape[0]
        xs = np.concatenate([np.broadcast_to(npw(net.sos), (B, 1, x.shape[2])), x[:, :-1]], 1)
        hs, _ = run(npw(net.W_ih).T, npw(net.b_ih), npw(net.W_hh).T, npw(net.b_hh), tb(xs))
        return [tb(lin(hs, net.proj))]
    if name == "lstm_next_step":
        c = net.cell
        hs, _ = run(npw(c.weight_ih), npw(c.bias_ih), npw(c.weight_hh), npw(c.bias_hh), x[:-1])
        return [lin(hs, net.head)]
    if name == "momgru_sepgates":
        cat = lambda *ms: np.concatenate([npw(getattr(net, m).weight) for m in ms], 0)
        catb = lambda *ms: np.concatenate([npw(getattr(net, m).bias) for m in ms], 0)
        hs, _ = run(cat("W_xr", "W_xz", "W_xn"), catb("W_xr", "W_xz", "W_xn"), cat("W_hr", "W_hz", "W_hn"),
                    catb("W_hr", "W_hz", "W_hn"), tb(x))
        return [tb(hs), hs[-1]]
    if name == "momrnn_keras":
        hs, _ = run(npw(net.kernel.weight), npw(net.bias), npw(net.recurrent_kernel.weight), zero(net.units), tb(x))
        return [hs[-1]]
    if name == "momrnn_pixel":
        hs, _ = run(npw(net.rnn_in.weight), npw(net.rnn_in.bias), npw(net.rnn_hh.weight), npw(net.rnn_hh.bias), col(x))
        return [tb(lin(hs, net.cls))]
    if name == "lstm_concat":
        W, I = npw(net.linear.weight), x.shape[2]
        hs, c = run(W[:, :I], npw(net.linear.bias), W[:, I:], zero(W.shape[0]), x)
        return [hs, hs[-1], c]
    if name == "lstm_textbook":
        gates = ("i", "f", "g", "o")
        Wx = np.concatenate([npw(getattr(net, "W_i" + g).weight) for g in gates])
        bx = np.concatenate([npw(getattr(net, "W_i" + g).bias) for g in gates])
        Wh = np.concatenate([npw(getattr(net, "W_h" + g).weight) for g in gates])
        bh = np.concatenate([npw(getattr(net, "W_h" + g).bias) for g in gates])
        hs, _ = run(Wx, bx, Wh, bh, tb(x))
        return [tb(lin(hs, net.fc))]
    if name == "lstm_cells_stacked":
        out, hn, cn = x, [], []
        for l, cl in enumerate(net.cells):
            out, c = run(npw(cl.weight_ih), npw(cl.bias_ih), npw(cl.weight_hh), npw(cl.bias_hh), out,
                         h0=arrays[1][l].astype(np.float64), c0=arrays[2][l].astype(np.float64))
            hn.append(out[-1])
            cn.append(c)
        return [out, np.stack(hn), np.stack(cn)]
    if name == "gru_manual":
        hs, _ = run(npw(net.weight_ih_l0), npw(net.bias_ih_l0), npw(net.weight_hh_l0), npw(net.bias_hh_l0), x)
        return [hs, hs[-1][None]]
    if name == "gru_cell_classifier":
        g = net.gru
        hs, _ = run(npw(g.weight_ih), npw(g.bias_ih), npw(g.weight_hh), npw(g.bias_hh), tb(npw(net.embed.weight)[x]))
        return [lin(hs[-1], net.head[1])]
    if name == "lstm_scripted_mm":
        hs, c = run(npw(net.weight_ih), npw(net.bias_ih), npw(net.weight_hh), npw(net.bias_hh), x,
                    h0=arrays[1][0].astype(np.float64), c0=arrays[2][0].astype(np.float64))
        return [hs, hs[-1][None], c[None]]
    if name == "rnn_elman":
        hs, _ = run(npw(net.W_ih), npw(net.b_ih), npw(net.W_hh), npw(net.b_hh), x)
        return [hs, hs[-1]]
    if name == "rnn_cell_pixel":
        g = net.cell
        hs, _ = run(npw(g.weight_ih), npw(g.bias_ih), npw(g.weight_hh), npw(g.bias_hh), col(x))
        return [lin(hs[-1], net.fc)]
    if name == "fastgrnn_cell":
        cl = net.cell
        H = cl.U.shape[0]
        hs, _ = run(npw(cl.W).T, zero(H), npw(cl.U).T, zero(H), tb(x),
                    o=dict(b_z=npw(cl.bias_gate), b_h=npw(cl.bias_update), zeta=npw(cl.zeta), nu=npw(cl.nu)))
        return [tb(hs), hs[-1]]
    if name == "fastgrnn_pixel":
        H = net.hidden
        hs, _ = run(npw(net.W.weight), zero(H), npw(net.U.weight), zero(H), col(x),
                    o=dict(b_z=npw(net.b_z), b_h=npw(net.b_h), zeta=npw(net.zeta), nu=npw(net.nu)))
        return [lin(hs[-1], net.fc)]
    if name == "convlstm_frames":
        outs, states = np_convlstm(net, x)
        return outs + [s for hc in states for s in hc]
    if name == "qrnn_forget_mult":
        return list(np_qrnn(net, x))
    if name == "grud_slices":
        return [np_grud(net, *[a.astype(np.float64) for a in arrays])]
    if name == "lstmcell_split":
        c = net.lstm
        hs, _ = run(npw(c.weight_ih), npw(c.bias_ih), npw(c.weight_hh), npw(c.bias_hh), tb(x))
        return [tb(lin(hs, net.fc))]
    if name == "frames_softmax_rnn":
        B, Hd = x.shape[0], net.hidden
        h, ys = np.zeros((B, Hd)), []
        for t in range(x.shape[1]):
            e = np.exp(x[:, t] - x[:, t].max(1, keepdims=True))
            h = np.tanh(lin(np.concatenate([e / e.sum(1, keepdims=True), h], 1), net.cell))
            ys.append(lin(h, net.head))
        return [np.stack(ys, 1)]
    if name == "series_future":
        B, Hd = x.shape[0], net.hidden
        h1, c1, h2, c2 = (np.zeros((B, Hd)) for _ in range(4))
        preds = []
        for t in range(x.shape[1] + net.future):
            inp = x[:, t:t + 1] if t < x.shape[1] else preds[-1]
            h1, c1 = np_lstm_cell(inp, h1, c1, net.lstm1)
            h2, c2 = np_lstm_cell(h1, h2, c2, net.lstm2)
            preds.append(lin(h2, net.linear))
        return [np.stack(preds, 1)]
    if name == "series_rollout":
        Hd = net.cell.hidden_size
        h, c, pred = np.zeros((x.shape[0], Hd)), np.zeros((x.shape[0], Hd)), x
        preds = []
        for _ in range(net.steps):
            h, c = np_lstm_cell(pred, h, c, net.cell)
            pred = lin(h, net.out)
            preds.append(pred)
        return [np.stack(preds, 1)]
    if name == "gru_tutorial_encoder":
        g = net.encoder.gru
        hs, _ = run(npw(g.weight_ih_l0), npw(g.bias_ih_l0), npw(g.weight_hh_l0), npw(g.bias_hh_l0),
                    npw(net.encoder.embedding.weight)[x])
        return [hs[:, 0], lin(hs[-1], net.out)]
    if name == "lstm_step_forecaster":
        m = net.lstm
        hs, _ = run(npw(m.weight_ih_l0), npw(m.bias_ih_l0), npw(m.weight_hh_l0), npw(m.bias_hh_l0), tb(x))
        return [tb(lin(hs, net.fc))]
    if name == "rnn_step_default_state":
        m = net.rnn
        hs, _ = run(npw(m.weight_ih_l0), npw(m.bias_ih_l0), npw(m.weight_hh_l0), npw(m.bias_hh_l0), x)
        return [lin(hs[-1], net.head)]
    if name == "gru_step_detach":
        m = net.gru
        hs, _ = run(npw(m.weight_ih_l0), npw(m.bias_ih_l0), npw(m.weight_hh_l0), npw(m.bias_hh_l0),
                    npw(net.emb.weight)[x.T])
        return [tb(lin(hs, net.logits))]
    raise KeyError("no docs/cells.md reference for model %s" % name)


def self_check(name, net, arrays, ys):
    """ys: the model's outputs; raises if docs/cells.md disagrees."""
    refs = ref_outputs(name, net, arrays)
    assert len(refs) == len(ys), name
    for k, (r, y) in enumerate(zip(refs, ys)):
        y = y.detach().numpy().astype(np.float64)
        if r.shape != y.shape or not np.allclose(y, r, rtol=1e-4, atol=1e-5):
            err = np.abs(y - r).max() if r.shape == y.shape else "shape %s vs %s" % (r.shape, y.shape)
            raise AssertionError("%s: output %d differs from the docs/cells.md reference (%s)" % (name, k, err))


# =============================================================================
# export and golden data
# =============================================================================

def model_seed(name):
    return golden_io.model_seed(name, 1400)


def build(name, I, H, C):
    spec = MODELS[name]
    spec["name"] = name
    torch.manual_seed(model_seed(name))
    return spec["build"](I, H, C).eval()


def data_set(case_dir, k, net, spec, arrays):
    d = os.path.join(case_dir, "test_data_set_%d" % k)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        ys = flatten(net(*[torch.from_numpy(a) for a in arrays]))
    assert len(ys) == len(spec["outs"]), (spec["outs"], len(ys))
    self_check(spec["name"], net, arrays, ys)
    for i, (a, n) in enumerate(zip(arrays, spec["ins"])):
        write_pb(os.path.join(d, "input_%d.pb" % i), a, n)
    for i, (y, n) in enumerate(zip(ys, spec["outs"])):
        write_pb(os.path.join(d, "output_%d.pb" % i), y.detach().numpy(), n)


def dynamic_axes(spec, dynamic):
    if not dynamic:
        return None
    axes = {}
    for n in spec["ins"]:
        tax, bax = spec["axes"][n]
        a = {}
        if bax is not None:
            a[bax] = "batch"
        if "t" in dynamic and tax is not None:
            a[tax] = "time"
        if a:
            axes[n] = a
    return axes


def make_case(out, name, opset, dynamic, T=T_TRACE, I=INPUT, H=HIDDEN, B=BATCH, suffix="", fold=True):
    spec = MODELS[name]
    if spec.get("pixel"):
        I = 1
    net = build(name, I, H, CLASSES)
    case = "%s_opset%d%s" % (name, opset, suffix)
    case_dir = os.path.join(out, case)
    os.makedirs(case_dir, exist_ok=True)
    rng = np.random.default_rng(model_seed(case))
    x = spec["feed"](T, B, I, rng, H)
    t0 = time.time()
    torch.onnx.export(net, tuple(torch.from_numpy(a) for a in x), os.path.join(case_dir, "model.onnx"),
                      opset_version=opset, input_names=spec["ins"], output_names=spec["outs"],
                      dynamic_axes=dynamic_axes(spec, dynamic), do_constant_folding=fold)
    took = time.time() - t0
    data_set(case_dir, 0, net, spec, x)
    sound = spec.get("sound", True) and not (dynamic and "t" in dynamic and spec.get("dynamic_time_ambiguous"))
    second_T = None
    k = 1
    if dynamic and "t" in dynamic and sound:
        second_T = T_OTHER
        data_set(case_dir, k, net, spec, spec["feed"](T_OTHER, B, I, rng, H))
        k += 1
    if dynamic and not spec.get("fixed_batch"):
        data_set(case_dir, k, net, spec, spec["feed"](T, B + 1, I, rng, H))
    info = dict(model=name, style=spec["style"], family=spec["family"], expected_cell=spec["expected_cell"],
                recurrences=spec.get("recurrences", 1), T=T, opset=opset,
                dynamic_axes=dynamic_axes(spec, dynamic) or {}, symbolic_time=sound, second_T=second_T,
                table=spec.get("table", False), loop_T=T - spec.get("loop_offset", 0),
                generated=spec.get("generated", []), hidden=H, batch=B)
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(info, f, indent=1)
    print("%-40s export %.1fs" % (case, took), flush=True)
    return took


def main():
    args = sys.argv[1:]
    long = "--long" in args
    nofold = "--no-fold" in args
    args = [a for a in args if a not in ("--long", "--no-fold")]
    if len(args) < 1:
        sys.exit(__doc__)
    out, names = args[0], args[1:]
    bad = [n for n in names if n not in MODELS]
    if bad:
        sys.exit("gen_trace_wild.py: unknown model %s (one of %s)" % (", ".join(bad), ", ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    if long:
        for n in names or [n for n in MODELS if MODELS[n].get("pixel") and MODELS[n].get("long", True)]:
            make_case(out, n, 13, None, T=T_TRACE, I=1, H=32, B=1, suffix="_T8_mnist")
            make_case(out, n, 13, None, T=784, I=1, H=32, B=1, suffix="_T784", fold=not nofold)
        return
    for n in names or MODELS:
        for e in MODELS[n]["exports"]:
            # (opset, dynamic[, batch]): a third entry exports at that batch size
            if len(e) > 2:
                make_case(out, n, e[0], e[1], B=e[2], suffix="_b%d" % e[2])
            else:
                make_case(out, n, e[0], e[1])


if __name__ == "__main__":
    main()
