"""gen_authors.py: the MomentumRNN authors' own models (issue 46 point 1),
for the harness group `authors`.

The momentum cells come from one paper, whose authors released their code
(minhtannguyen/MomentumRNN on GitHub): the per-step cells of
mnist-timit/momentumnet.py (LSTMCell, MomentumLSTMCell, AdamLSTMCell,
NesterovLSTMCell), the orthogonal DTRIV cells of mnist-timit/orthogonal.py
(a cached retraction B = base . expm(skew(A)) behind a Parametrization
property, modrelu; OrthogonalRNN, OrthogonalMomentumRNN, OrthogonalAdamRNN,
OrthogonalNesterovRNN), the loops of mnist.py (pixel MNIST and permuted
MNIST, the head on the last step) and timit.py / timit_div.py (frames
[B, T, 129], batch-first, a head on every step), and the word-level layers
of ptb/momentumnet.py (LSTM, MomentumLSTM, AdamLSTM, NesterovLSTM, GRU: one
loop over the whole sequence each) under ptb/model_momentum.py's RNNModel
(embedding, locked dropout, WeightDrop, three layers, states passed in
[1, B, H] and returned).  Tests cannot fetch GitHub and the project writes
its own code, so every class here is written again, one test class per
author class, in other words but keeping the authors' forms: the
torch.unbind loops, squeeze() without axes, the states made inside forward
(torch.zeros, new_zeros with requires_grad), the per-step x.size(0) and
x.view(-1, x.size(1)), the chunk of the gates, F.sigmoid / F.tanh and
torch.mul, the Python restart counter iter_indx, the permutation buffer,
the TIMIT head on every step, `hx.squeeze() if hx.shape[1] > 1 else hx[0]`.
(Each class was compared with the repository's code by hand once; the
docstrings name the class it follows.)

Every loop family of the repository: at MNIST, PMNIST and TIMIT the cells
lstm, mlstm (momentum), alstm (Adam), rlstm (Adam with mu = 0: RMSProp),
nlstm (Nesterov, the extrapolating form, restart 2), dtriv, mdtriv, adtriv,
rdtriv (mu = 0), ndtriv (restart 2); at PTB the word models LSTM, MLSTM,
ALSTM, NLSTM (restart 2) and GRU.  Hyper-parameters from the repository's
recipes.md.  Each model is exported two ways, as its users would:
  traced    torch.onnx.export of the module itself, traced at T = 8 with
            dynamic batch and time axes (PyTorch 1.13 takes minutes to
            trace-export a 784-step loop: the 8-step trace is the file, and
            re-rolled it runs any T);
  scripted  the loop torch.jit.script'ed around the step torch.jit.trace'd
            (ScriptedPixelLoop, ScriptedFrameLoop, ScriptedWordLayer: the
            authors' loops with the cell's signature chosen by hasattr, which
            TorchScript decides when it compiles), exported with dynamic axes.
The DTRIV cells' recurrent matrix B is a cached buffer at export time: the
authors evaluate under torch.no_grad(), where Parametrization.B returns the
cached _B, so every export runs under torch.no_grad() too (the matrix
exponential itself, torch.matrix_exp here as the authors' expm, has no ONNX
export; the file holds B as a weight, and cellc names the cell dtriv from
modrelu(u + h B)).  The permuted models' permutation is a buffer of T
indices: the traced PMNIST models (T = 8) run their T only; the 784-step
PMNIST is the scripted export at T = 784 (the loop is not unrolled, so the
export takes seconds).

Layout (tests/out/authors):
  CASE/model.onnx                  CASE = LOOP_FAMILY_EXPORT (pmnist_mlstm_traced, ...)
  CASE/test_data_set_0/            the export's sizes (T = 8, batch 2; T = 784 for
                                   the scripted PMNIST)
  CASE/test_data_set_1/            T = 784, batch 2, when the time axis is dynamic
  CASE/test_data_set_2/            batch 3
  CASE/case.json                   loop, family, export, opset, expected_cell (the
      docs/cells.md cell `cellc info` must print), recurrences (one per layer),
      traced_loops (recurrences of a traced export, 0 for a scripted one),
      symbolic_time, T, loop_T, hidden, second_T, style
Goldens come from the PyTorch models themselves (eval mode, no_grad,
torch.manual_seed per model, numpy inputs from a per-case seed).  Before a
data set is written, the outputs are recomputed in float64 from
docs/cells.md's equations (tests/ref_cells.py, with the weights read out of
the modules: for DTRIV the matrix from A and base, so the cached B is
checked too): a model that does not compute its expected_cell stops the
generator.

usage: gen_authors.py OUTDIR [CASE_PREFIX ...]
"""
import json
import math
import os
import sys
import time
import warnings
from typing import List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ref_cells as RC  # noqa: E402
from golden_io import write_pb  # noqa: E402

warnings.filterwarnings("ignore")

HIDDEN, BATCH, T_TRACE, T_LONG = 8, 2, 8, 784
MNIST_CLASSES, TIMIT_FEATURES = 10, 129
VOCAB, LAYERS = 20, 3


# =============================================================================
# mnist-timit/momentumnet.py: one step of an LSTM, four input dynamics
# =============================================================================

def lstm_tail(gates, cx):
    """The gate math every LSTM of the repository writes the same way:
    gates.chunk(4, 1) as i, f, g, o, F.sigmoid / F.tanh, torch.mul."""
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = F.sigmoid(ingate)
    forgetgate = F.sigmoid(forgetgate)
    cellgate = F.tanh(cellgate)
    outgate = F.sigmoid(outgate)
    cy = torch.mul(cx, forgetgate) + torch.mul(ingate, cellgate)
    hy = torch.mul(outgate, F.tanh(cy))
    return hy, cy


class StepCell(nn.Module):
    """What the four momentumnet.py cells share: x2h and h2h Linears with
    the repository's reset_parameters (x2h orthogonal, h2h the identity,
    both biases zero but for the forget block, fg_init in each; -4 for
    speech) and the options given as attributes (mu, epsilon, mus)."""

    def __init__(self, input_size, hidden_size, fg_init=1.0, **options):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        for name, value in options.items():
            setattr(self, name, value)
        self.x2h = nn.Linear(input_size, 4 * hidden_size)
        self.h2h = nn.Linear(hidden_size, 4 * hidden_size)
        nn.init.orthogonal_(self.x2h.weight)
        nn.init.eye_(self.h2h.weight)
        for proj in (self.x2h, self.h2h):
            nn.init.zeros_(proj.bias)
            proj.bias.data[hidden_size:2 * hidden_size].fill_(fg_init)


class StepLSTM(StepCell):
    """After momentumnet.py's LSTMCell: forward(x, hidden) -> (hy, (hy, cy))."""

    def forward(self, x, hidden):
        hx, cx = hidden
        x = x.view(-1, x.size(1))
        gates = self.x2h(x) + self.h2h(hx)
        gates = gates.squeeze()
        hy, cy = lstm_tail(gates, cx)
        return hy, (hy, cy)


class StepMomentumLSTM(StepCell):
    """After MomentumLSTMCell (options mu, epsilon): the velocity vy = mu v +
    epsilon x2h(x) takes the input projection's place; forward(x, hidden,
    v) -> (hy, (hy, cy), vy)."""

    def forward(self, x, hidden, v):
        hx, cx = hidden
        x = x.view(-1, x.size(1))
        v = v.view(-1, v.size(1))
        vy = self.mu * v + self.epsilon * self.x2h(x)
        gates = vy + self.h2h(hx)
        gates = gates.squeeze()
        hy, cy = lstm_tail(gates, cx)
        return hy, (hy, cy), vy


class StepNesterovLSTM(StepCell):
    """After NesterovLSTMCell (option epsilon), the extrapolating form: vy =
    h2h(hx) - epsilon x2h(x), gates = vy + (k-1)/(k+2) (vy - v) with k the
    loop's restart counter; forward(x, hidden, v, k) -> (hy, (hy, cy), vy)."""

    def forward(self, x, hidden, v, k):
        hx, cx = hidden
        x = x.view(-1, x.size(1))
        v = v.view(-1, v.size(1))
        vy = self.h2h(hx) - self.epsilon * self.x2h(x)
        gates = vy + (k - 1.0) / (k + 2.0) * (vy - v)
        gates = gates.squeeze()
        hy, cy = lstm_tail(gates, cx)
        return hy, (hy, cy), vy


class StepAdamLSTM(StepCell):
    """After AdamLSTMCell (options mu, epsilon, mus): first and second
    moments of the input projection (grad_val), eps 1e-16 inside the root; s
    viewed by v's width as the authors wrote it; forward(x, hidden, v, s) ->
    (hy, (hy, cy), vy, sy)."""

    def forward(self, x, hidden, v, s):
        hx, cx = hidden
        x = x.view(-1, x.size(1))
        v = v.view(-1, v.size(1))
        s = s.view(-1, v.size(1))
        grad_val = self.x2h(x)
        vy = self.mu * v + self.epsilon * grad_val
        sy = self.mus * s + (1.0 - self.mus) * (grad_val * grad_val)
        gates = vy / torch.sqrt(sy + 1e-16) + self.h2h(hx)
        gates = gates.squeeze()
        hy, cy = lstm_tail(gates, cx)
        return hy, (hy, cy), vy, sy


# =============================================================================
# mnist-timit/orthogonal.py, parametrization.py, initialization.py: DTRIV
# =============================================================================

def skew_diag_(A, angles):
    """initialization.py's create_diag_: A = D - D^T with the angles on the
    first superdiagonal at even positions."""
    n = A.size(0)
    sup = torch.zeros(n - 1)
    sup[::2] = angles
    D = torch.diag(sup, diagonal=1)
    with torch.no_grad():
        A.copy_(D - D.T)
    return A


def henaff_(A):
    return skew_diag_(A, A.new(A.size(0) // 2).uniform_(-np.pi, np.pi))


def cayley_(A):
    theta = A.new(A.size(0) // 2).uniform_(0., np.pi / 2.)
    return skew_diag_(A, -torch.sqrt((1. - torch.cos(theta)) / (1. + torch.cos(theta))))


class CachedRetraction(nn.Module):
    """After Parametrization and Orthogonal: the skew parameter A, the
    base, and the matrix B = base . expm(triu(A, 1) - triu(A, 1)^T) computed
    on first use and kept in the buffer _B (recomputed only when autograd
    needs it); in the dynamic mode the first computation also moves B into
    the base and zeroes A (rebase); forward(input) = input.matmul(self.B)."""

    def __init__(self, size, init_skew, mode):
        super().__init__()
        self.A = nn.Parameter(torch.empty(size, size))
        self.register_buffer("_B", None)
        self.register_buffer("base", torch.empty(size, size))
        self.mode = mode
        self.k = 0
        init_skew(self.A)
        nn.init.eye_(self.base)

    def retraction(self, A, base):
        A = A.triu(diagonal=1)
        A = A - A.t()
        return base.mm(torch.matrix_exp(A))

    @property
    def B(self):
        fresh = self._B is None
        if fresh or (not self._B.grad_fn and torch.is_grad_enabled()):
            self._B = self.retraction(self.A, self.base)
            if self.mode == "dynamic" and fresh and self.k == 0:
                with torch.no_grad():
                    self.base.data.copy_(self._B.data)
                    self.A.data.zero_()
                self.k = 1
        return self._B

    def forward(self, input):
        return input.matmul(self.B)


class ModReLU(nn.Module):
    """After orthogonal.py's modrelu: sign(z) relu(|z| + b), b uniform in
    +-0.01."""

    def __init__(self, features):
        super().__init__()
        self.features = features
        self.b = nn.Parameter(torch.Tensor(features))
        self.b.data.uniform_(-0.01, 0.01)

    def forward(self, inputs):
        norm = torch.abs(inputs)
        biased_norm = norm + self.b
        magnitude = nn.functional.relu(biased_norm)
        phase = torch.sign(inputs)
        return phase * magnitude


class DtrivBase(nn.Module):
    """What the four orthogonal cells share: the kernels and default_hidden
    (new_zeros with requires_grad, as the authors make the state)."""

    def __init__(self, input_size, hidden_size, init_skew, mode):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        self.recurrent_kernel = CachedRetraction(hidden_size, init_skew, mode)
        self.input_kernel = nn.Linear(in_features=input_size, out_features=hidden_size, bias=False)
        self.nonlinearity = ModReLU(hidden_size)
        nn.init.kaiming_normal_(self.input_kernel.weight.data, nonlinearity="relu")

    def default_hidden(self, input):
        return input.new_zeros(input.size(0), self.hidden_size, requires_grad=True)


class DtrivRNN(DtrivBase):
    """After OrthogonalRNN: forward(input, hidden) -> (out, out)."""

    def forward(self, input, hidden):
        input = self.input_kernel(input)
        hidden = self.recurrent_kernel(hidden)
        out = input + hidden
        out = self.nonlinearity(out)
        return out, out


class DtrivMomentumRNN(DtrivBase):
    """After OrthogonalMomentumRNN: forward(input, hidden, v) -> (out, out, vy)."""

    def __init__(self, input_size, hidden_size, init_skew, mode, mu, epsilon):
        super().__init__(input_size, hidden_size, init_skew, mode)
        self.mu, self.epsilon = mu, epsilon

    def forward(self, input, hidden, v):
        vy = self.mu * v + self.epsilon * self.input_kernel(input)
        out = vy + self.recurrent_kernel(hidden)
        out = self.nonlinearity(out)
        return out, out, vy


class DtrivAdamRNN(DtrivBase):
    """After OrthogonalAdamRNN: forward(input, hidden, v, s) -> (out, out, vy, sy)."""

    def __init__(self, input_size, hidden_size, init_skew, mode, mu, epsilon, mus):
        super().__init__(input_size, hidden_size, init_skew, mode)
        self.mu, self.epsilon, self.mus = mu, epsilon, mus

    def forward(self, input, hidden, v, s):
        grad_val = self.input_kernel(input)
        vy = self.mu * v + self.epsilon * grad_val
        sy = self.mus * s + (1.0 - self.mus) * (grad_val * grad_val)
        out = vy / torch.sqrt(sy + 1e-16) + self.recurrent_kernel(hidden)
        out = self.nonlinearity(out)
        return out, out, vy, sy


class DtrivNesterovRNN(DtrivBase):
    """After OrthogonalNesterovRNN, the momentum form with mu = (k-1)/(k+2):
    forward(input, hidden, v, k) -> (out, out, vy)."""

    def __init__(self, input_size, hidden_size, init_skew, mode, epsilon):
        super().__init__(input_size, hidden_size, init_skew, mode)
        self.epsilon = epsilon

    def forward(self, input, hidden, v, k):
        vy = (k - 1.0) / (k + 2.0) * v + self.epsilon * self.input_kernel(input)
        out = vy + self.recurrent_kernel(hidden)
        out = self.nonlinearity(out)
        return out, out, vy


DTRIV = (DtrivRNN, DtrivMomentumRNN, DtrivAdamRNN, DtrivNesterovRNN)


# =============================================================================
# mnist.py and timit.py / timit_div.py: the loops
# =============================================================================

class PixelModel(nn.Module):
    """After mnist.py's Model: pixels [B, T], the permutation buffer applied
    when permuted, the state by the cell's kind (default_hidden of the first
    column for DTRIV, torch.zeros pairs for the LSTMs; velocities and second
    moments torch.zeros), `for input in torch.unbind(inputs, dim=1)` with the
    counter iter_indx (the Nesterov cells restart it), input.unsqueeze(dim=1),
    the head on the last step's output."""

    def __init__(self, rnn, hidden_size, n_classes, permute, restart, seq_len):
        super().__init__()
        self.hidden_size, self.permute, self.restart = hidden_size, permute, restart
        self.register_buffer("permutation", torch.LongTensor(np.random.RandomState(0).permutation(seq_len)))
        self.rnn = rnn
        self.lin = nn.Linear(hidden_size, n_classes)

    def forward(self, inputs):
        if self.permute:
            inputs = inputs[:, self.permutation]
        if isinstance(self.rnn, DTRIV):
            state = self.rnn.default_hidden(inputs[:, 0, ...])
        else:
            state = (torch.zeros((inputs.size(0), self.hidden_size), device=inputs.device),
                     torch.zeros((inputs.size(0), self.hidden_size), device=inputs.device))
        width = self.hidden_size if isinstance(self.rnn, DTRIV) else 4 * self.hidden_size
        if isinstance(self.rnn, (StepMomentumLSTM, StepNesterovLSTM, DtrivMomentumRNN, DtrivNesterovRNN)):
            v = torch.zeros((inputs.size(0), width), device=inputs.device)
        elif isinstance(self.rnn, (StepAdamLSTM, DtrivAdamRNN)):
            v = torch.zeros((inputs.size(0), width), device=inputs.device)
            s = torch.zeros((inputs.size(0), width), device=inputs.device)
        iter_indx = 0
        for input in torch.unbind(inputs, dim=1):
            iter_indx = iter_indx + 1
            if isinstance(self.rnn, (StepMomentumLSTM, DtrivMomentumRNN)):
                out_rnn, state, v = self.rnn(input.unsqueeze(dim=1), state, v)
            elif isinstance(self.rnn, (StepAdamLSTM, DtrivAdamRNN)):
                out_rnn, state, v, s = self.rnn(input.unsqueeze(dim=1), state, v, s)
            elif isinstance(self.rnn, (StepNesterovLSTM, DtrivNesterovRNN)):
                out_rnn, state, v = self.rnn(input.unsqueeze(dim=1), state, v, k=iter_indx)
                if self.restart > 0 and not (iter_indx % self.restart):
                    iter_indx = 0
            else:
                out_rnn, state = self.rnn(input.unsqueeze(dim=1), state)
        return self.lin(out_rnn)


class FrameModel(nn.Module):
    """After timit.py's (and timit_div.py's) Model: frames [B, T, F]
    batch-first, each frame fed whole to the cell, states as in PixelModel,
    the head self.lin on every step's output, torch.stack(outputs, dim=1)."""

    def __init__(self, rnn, hidden_size, n_out, restart):
        super().__init__()
        self.hidden_size, self.restart = hidden_size, restart
        self.rnn = rnn
        self.lin = nn.Linear(hidden_size, n_out)

    def forward(self, inputs):
        if isinstance(self.rnn, DTRIV):
            state = self.rnn.default_hidden(inputs[:, 0, ...])
        else:
            state = (torch.zeros((inputs.size(0), self.hidden_size), device=inputs.device),
                     torch.zeros((inputs.size(0), self.hidden_size), device=inputs.device))
        width = self.hidden_size if isinstance(self.rnn, DTRIV) else 4 * self.hidden_size
        if isinstance(self.rnn, (StepMomentumLSTM, StepNesterovLSTM, DtrivMomentumRNN, DtrivNesterovRNN)):
            v = torch.zeros((inputs.size(0), width), device=inputs.device)
        elif isinstance(self.rnn, (StepAdamLSTM, DtrivAdamRNN)):
            v = torch.zeros((inputs.size(0), width), device=inputs.device)
            s = torch.zeros((inputs.size(0), width), device=inputs.device)
        outputs = []
        iter_indx = 0
        for input in torch.unbind(inputs, dim=1):
            iter_indx = iter_indx + 1
            if isinstance(self.rnn, (StepMomentumLSTM, DtrivMomentumRNN)):
                out_rnn, state, v = self.rnn(input, state, v)
            elif isinstance(self.rnn, (StepAdamLSTM, DtrivAdamRNN)):
                out_rnn, state, v, s = self.rnn(input, state, v, s)
            elif isinstance(self.rnn, (StepNesterovLSTM, DtrivNesterovRNN)):
                out_rnn, state, v = self.rnn(input, state, v, k=iter_indx)
                if self.restart > 0 and not (iter_indx % self.restart):
                    iter_indx = 0
            else:
                out_rnn, state = self.rnn(input, state)
            outputs.append(self.lin(out_rnn))
        return torch.stack(outputs, dim=1)


# The scripted loops: the same loops, torch.jit.script'ed, around a step the
# user torch.jit.trace'd.  TorchScript cannot ask a traced module its class,
# so the cell's signature is told by marker attributes, which hasattr decides
# while TorchScript compiles (the other branches are never compiled).

def mark_signature(loop, cell):
    if isinstance(cell, DTRIV):
        loop.orthogonal = True
    if isinstance(cell, (StepMomentumLSTM, DtrivMomentumRNN)):
        loop.velocity = True
    if isinstance(cell, (StepAdamLSTM, DtrivAdamRNN)):
        loop.moments = True
    if isinstance(cell, (StepNesterovLSTM, DtrivNesterovRNN)):
        loop.nesterov = True


class ScriptedPixelLoop(nn.Module):
    """PixelModel's forward as a TorchScript loop around a traced cell (the
    restart counter an int carried by the Loop, k passed to the traced
    step as a float tensor; `not (iter_indx % restart)` written
    `iter_indx % restart == 0`, since the exporter has no Not of an int)."""

    def __init__(self, traced, cell, hidden_size, n_classes, permute, restart, seq_len):
        super().__init__()
        self.hidden_size, self.restart = hidden_size, restart
        self.permute = permute
        self.register_buffer("permutation", torch.LongTensor(np.random.RandomState(0).permutation(seq_len)))
        self.rnn = traced
        self.lin = nn.Linear(hidden_size, n_classes)
        mark_signature(self, cell)

    def forward(self, inputs):
        if self.permute:
            inputs = inputs[:, self.permutation]
        width = 4 * self.hidden_size
        if hasattr(self, "orthogonal"):
            width = self.hidden_size
        v = torch.zeros((inputs.size(0), width))
        s = torch.zeros((inputs.size(0), width))
        h = inputs.new_zeros(inputs.size(0), self.hidden_size)
        c = torch.zeros((inputs.size(0), self.hidden_size))
        iter_indx = 0
        for input in torch.unbind(inputs, dim=1):
            iter_indx = iter_indx + 1
            if hasattr(self, "orthogonal"):
                if hasattr(self, "velocity"):
                    h, h, v = self.rnn(input.unsqueeze(dim=1), h, v)
                elif hasattr(self, "moments"):
                    h, h, v, s = self.rnn(input.unsqueeze(dim=1), h, v, s)
                elif hasattr(self, "nesterov"):
                    h, h, v = self.rnn(input.unsqueeze(dim=1), h, v, torch.tensor(float(iter_indx)))
                else:
                    h, h = self.rnn(input.unsqueeze(dim=1), h)
            else:
                if hasattr(self, "velocity"):
                    h, (h, c), v = self.rnn(input.unsqueeze(dim=1), (h, c), v)
                elif hasattr(self, "moments"):
                    h, (h, c), v, s = self.rnn(input.unsqueeze(dim=1), (h, c), v, s)
                elif hasattr(self, "nesterov"):
                    h, (h, c), v = self.rnn(input.unsqueeze(dim=1), (h, c), v, torch.tensor(float(iter_indx)))
                else:
                    h, (h, c) = self.rnn(input.unsqueeze(dim=1), (h, c))
            if self.restart > 0 and iter_indx % self.restart == 0:
                iter_indx = 0
        return self.lin(h)


class ScriptedFrameLoop(nn.Module):
    """FrameModel's forward as a TorchScript loop around a traced cell."""

    def __init__(self, traced, cell, hidden_size, n_out, restart):
        super().__init__()
        self.hidden_size, self.restart = hidden_size, restart
        self.rnn = traced
        self.lin = nn.Linear(hidden_size, n_out)
        mark_signature(self, cell)

    def forward(self, inputs):
        width = 4 * self.hidden_size
        if hasattr(self, "orthogonal"):
            width = self.hidden_size
        v = torch.zeros((inputs.size(0), width))
        s = torch.zeros((inputs.size(0), width))
        h = inputs.new_zeros(inputs.size(0), self.hidden_size)
        c = torch.zeros((inputs.size(0), self.hidden_size))
        outputs: List[torch.Tensor] = []
        iter_indx = 0
        for input in torch.unbind(inputs, dim=1):
            iter_indx = iter_indx + 1
            if hasattr(self, "orthogonal"):
                if hasattr(self, "velocity"):
                    h, h, v = self.rnn(input, h, v)
                elif hasattr(self, "moments"):
                    h, h, v, s = self.rnn(input, h, v, s)
                elif hasattr(self, "nesterov"):
                    h, h, v = self.rnn(input, h, v, torch.tensor(float(iter_indx)))
                else:
                    h, h = self.rnn(input, h)
            else:
                if hasattr(self, "velocity"):
                    h, (h, c), v = self.rnn(input, (h, c), v)
                elif hasattr(self, "moments"):
                    h, (h, c), v, s = self.rnn(input, (h, c), v, s)
                elif hasattr(self, "nesterov"):
                    h, (h, c), v = self.rnn(input, (h, c), v, torch.tensor(float(iter_indx)))
                else:
                    h, (h, c) = self.rnn(input, (h, c))
            if self.restart > 0 and iter_indx % self.restart == 0:
                iter_indx = 0
            outputs.append(self.lin(h))
        return torch.stack(outputs, dim=1)


# =============================================================================
# ptb/momentumnet.py: layers that loop over the whole sequence
# =============================================================================

def word_init(layer, hidden_size, forget_rows):
    """The word layers' reset_parameters: weight_ih orthogonal, weight_hh
    the identity, the biases 1 on forget_rows and 0 elsewhere."""
    nn.init.orthogonal_(layer.weight_ih)
    nn.init.eye_(layer.weight_hh)
    for b in (layer.bias_ih, layer.bias_hh):
        nn.init.zeros_(b)
        b.data[forget_rows].fill_(1.0)


def squeezed(t):
    """The layers' `t.squeeze() if t.shape[1] > 1 else t[0]` of a [1, B, n] state."""
    return t.squeeze() if t.shape[1] > 1 else t[0]


class WordLayer(nn.Module):
    """What the five word layers share: raw parameters [rows, in] and
    forward's loop `for x in torch.unbind(input_, dim=0)` over the cell
    method, the outputs `out.squeeze()` (or out[0] at batch 1) stacked on
    dim 0; the states travel [1, B, n] between steps."""

    gates = 4

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        rows = self.gates * hidden_size
        self.weight_ih = nn.Parameter(torch.Tensor(rows, input_size))
        self.weight_hh = nn.Parameter(torch.Tensor(rows, hidden_size))
        self.bias_ih = nn.Parameter(torch.Tensor(rows))
        self.bias_hh = nn.Parameter(torch.Tensor(rows))
        forget = slice(0, hidden_size) if self.gates == 3 else slice(hidden_size, 2 * hidden_size)
        word_init(self, hidden_size, forget)

    def forward(self, input_, *carried):
        outputs = []
        for x in torch.unbind(input_, dim=0):
            out_rnn, *carried = self.cell(x, *carried)
            if out_rnn.shape[1] > 1:
                outputs.append(out_rnn.squeeze())
            else:
                outputs.append(out_rnn[0])
        return (torch.stack(outputs, dim=0), *carried)


class WordLSTM(WordLayer):
    """After ptb/momentumnet.py's LSTM: gates = x W_ih^T + h W_hh^T + b_ih + b_hh."""

    def cell(self, x, hidden):
        hx, cx = hidden
        hx, cx = squeezed(hx), squeezed(cx)
        x = x.view(-1, x.size(1))
        gates = torch.mm(x, self.weight_ih.t()) + torch.mm(hx, self.weight_hh.t()) + self.bias_ih + self.bias_hh
        hy, cy = lstm_tail(gates, cx)
        return hy.unsqueeze(0), (hy.unsqueeze(0), cy.unsqueeze(0))


class WordMomentumLSTM(WordLayer):
    """After ptb/momentumnet.py's MomentumLSTM."""

    def __init__(self, input_size, hidden_size, mu, epsilon):
        super().__init__(input_size, hidden_size)
        self.mu, self.epsilon = mu, epsilon

    def cell(self, x, hidden, v):
        hx, cx = hidden
        hx, cx = squeezed(hx), squeezed(cx)
        x = x.view(-1, x.size(1))
        v = squeezed(v)
        vy = self.mu * v + self.epsilon * (torch.mm(x, self.weight_ih.t()) + self.bias_ih)
        gates = vy + (torch.mm(hx, self.weight_hh.t()) + self.bias_hh)
        hy, cy = lstm_tail(gates, cx)
        return hy.unsqueeze(0), (hy.unsqueeze(0), cy.unsqueeze(0)), vy.unsqueeze(0)


class WordAdamLSTM(WordLayer):
    """After ptb/momentumnet.py's AdamLSTM."""

    def __init__(self, input_size, hidden_size, mu, epsilon, mus):
        super().__init__(input_size, hidden_size)
        self.mu, self.epsilon, self.mus = mu, epsilon, mus

    def cell(self, x, hidden, v, s):
        hx, cx = hidden
        hx, cx = squeezed(hx), squeezed(cx)
        x = x.view(-1, x.size(1))
        v, s = squeezed(v), squeezed(s)
        grad_val = torch.mm(x, self.weight_ih.t()) + self.bias_ih
        vy = self.mu * v + self.epsilon * grad_val
        sy = self.mus * s + (1.0 - self.mus) * (grad_val * grad_val)
        gates = vy / torch.sqrt(sy + 1e-16) + (torch.mm(hx, self.weight_hh.t()) + self.bias_hh)
        hy, cy = lstm_tail(gates, cx)
        return hy.unsqueeze(0), (hy.unsqueeze(0), cy.unsqueeze(0)), vy.unsqueeze(0), sy.unsqueeze(0)


class WordNesterovLSTM(WordLayer):
    """After ptb/momentumnet.py's NesterovLSTM: the momentum form with
    mu = (k-1)/(k+2), its own restart counter in forward."""

    def __init__(self, input_size, hidden_size, epsilon, restart):
        super().__init__(input_size, hidden_size)
        self.epsilon, self.restart = epsilon, restart

    def cell(self, x, hidden, v, k):
        hx, cx = hidden
        hx, cx = squeezed(hx), squeezed(cx)
        x = x.view(-1, x.size(1))
        v = squeezed(v)
        vy = (k - 1.0) / (k + 2.0) * v + self.epsilon * (torch.mm(x, self.weight_ih.t()) + self.bias_ih)
        gates = vy + (torch.mm(hx, self.weight_hh.t()) + self.bias_hh)
        hy, cy = lstm_tail(gates, cx)
        return hy.unsqueeze(0), (hy.unsqueeze(0), cy.unsqueeze(0)), vy.unsqueeze(0)

    def forward(self, input_, hidden, v):
        outputs = []
        iter_indx = 0
        for x in torch.unbind(input_, dim=0):
            iter_indx = iter_indx + 1
            out_rnn, hidden, v = self.cell(x, hidden, v, k=iter_indx)
            if self.restart > 0 and iter_indx % self.restart == 0:
                iter_indx = 0
            if out_rnn.shape[1] > 1:
                outputs.append(out_rnn.squeeze())
            else:
                outputs.append(out_rnn[0])
        return torch.stack(outputs, dim=0), hidden, v


class WordGRU(WordLayer):
    """After ptb/momentumnet.py's GRU: gates r, i (update), n by chunk(3, 1),
    hy = newgate + inputgate (hidden - newgate); reset-gate biases 1."""

    gates = 3

    def cell(self, x, hidden):
        hidden = squeezed(hidden)
        x = x.view(-1, x.size(1))
        gi = torch.mm(x, self.weight_ih.t()) + self.bias_ih
        gh = torch.mm(hidden, self.weight_hh.t()) + self.bias_hh
        i_r, i_i, i_n = gi.chunk(3, 1)
        h_r, h_i, h_n = gh.chunk(3, 1)
        resetgate = torch.sigmoid(i_r + h_r)
        inputgate = torch.sigmoid(i_i + h_i)
        newgate = torch.tanh(i_n + resetgate * h_n)
        hy = newgate + inputgate * (hidden - newgate)
        hy = hy.unsqueeze(0)
        return hy, hy


class WeightDropped(nn.Module):
    """After ptb/weight_drop.py's WeightDrop on weight_hh: the raw weight
    is a parameter `weight_hh_raw`; before each call the layer's weight_hh
    is set to its dropout (in eval mode the raw weight's .data)."""

    def __init__(self, module, dropout):
        super().__init__()
        self.module, self.dropout = module, dropout
        w = module.weight_hh
        del module._parameters["weight_hh"]
        module.register_parameter("weight_hh_raw", nn.Parameter(w.data))

    def forward(self, *args):
        w = F.dropout(self.module.weight_hh_raw, p=self.dropout, training=self.training)
        if not self.training:
            w = w.data
        setattr(self.module, "weight_hh", w)
        return self.module.forward(*args)


def locked_dropout(x, p, training):
    """ptb/locked_dropout.py's LockedDropout: one mask per sequence (the
    identity in eval mode)."""
    if not training or not p:
        return x
    m = x.data.new(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)
    return m.expand_as(x) * x


class WordModel(nn.Module):
    """After ptb/model_momentum.py's RNNModel: tokens [T, B] through the
    embedding (embedded_dropout: the plain table in eval mode) and locked
    dropout, the layers in turn (each with its own states from the lists
    hidden, v, s), the last layer's output viewed [T * B, H] for the
    decoder's input; returns (result, hidden, v[, s]) as the authors do."""

    def __init__(self, layers, ntoken, ninp, kind, dropouti=0.4, dropouth=0.25, dropout=0.4):
        super().__init__()
        self.kind = kind
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnns = nn.ModuleList(layers)
        self.dropouti, self.dropouth, self.dropout = dropouti, dropouth, dropout
        self.encoder.weight.data.uniform_(-0.1, 0.1)

    def forward(self, input, hidden, v=None, s=None):
        emb = F.embedding(input, self.encoder.weight)
        emb = locked_dropout(emb, self.dropouti, self.training)
        raw_output = emb
        new_hidden, new_velocity, new_scale = [], [], []
        for l, rnn in enumerate(self.rnns):
            if self.kind in ("MLSTM", "NLSTM"):
                raw_output, new_h, new_v = rnn(raw_output, hidden[l], v[l])
                new_velocity.append(new_v)
            elif self.kind == "ALSTM":
                raw_output, new_h, new_v, new_s = rnn(raw_output, hidden[l], v[l], s[l])
                new_velocity.append(new_v)
                new_scale.append(new_s)
            else:
                raw_output, new_h = rnn(raw_output, hidden[l])
            new_hidden.append(new_h)
            if l != len(self.rnns) - 1:
                raw_output = locked_dropout(raw_output, self.dropouth, self.training)
        output = locked_dropout(raw_output, self.dropout, self.training)
        result = output.view(output.size(0) * output.size(1), output.size(2))
        if self.kind in ("MLSTM", "NLSTM"):
            return result, new_hidden, new_velocity
        if self.kind == "ALSTM":
            return result, new_hidden, new_velocity, new_scale
        return result, new_hidden


class WordStep(nn.Module):
    """One word layer's cell method as a module for torch.jit.trace, its
    (h, c) pair taken and returned as two tensors (the exporter cannot
    follow tuples through a trace inside a script)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, *flat):
        if isinstance(self.layer, WordGRU):
            return self.layer.cell(x, *flat)
        out, (h, c), *rest = self.layer.cell(x, (flat[0], flat[1]), *flat[2:])
        return (out, h, c, *rest)


class ScriptedWordLayer(nn.Module):
    """A word layer's forward as a TorchScript loop around its traced cell
    (the layer's kind by marker attributes, as the scripted loops above;
    the Nesterov layer's restart counter an int carried by the Loop)."""

    def __init__(self, traced, layer):
        super().__init__()
        self.step = traced
        self.restart = getattr(layer, "restart", 0)
        if isinstance(layer, WordGRU):
            self.gru = True
        if isinstance(layer, WordMomentumLSTM):
            self.velocity = True
        if isinstance(layer, WordAdamLSTM):
            self.moments = True
        if isinstance(layer, WordNesterovLSTM):
            self.nesterov = True

    def forward(self, input_, h, c, v, s):
        outputs: List[torch.Tensor] = []
        iter_indx = 0
        for x in torch.unbind(input_, dim=0):
            iter_indx = iter_indx + 1
            if hasattr(self, "gru"):
                out_rnn, h = self.step(x, h)
            elif hasattr(self, "velocity"):
                out_rnn, h, c, v = self.step(x, h, c, v)
            elif hasattr(self, "moments"):
                out_rnn, h, c, v, s = self.step(x, h, c, v, s)
            elif hasattr(self, "nesterov"):
                out_rnn, h, c, v = self.step(x, h, c, v, torch.tensor(float(iter_indx)))
            else:
                out_rnn, h, c = self.step(x, h, c)
            if self.restart > 0 and iter_indx % self.restart == 0:
                iter_indx = 0
            # (the authors' `out_rnn.squeeze() if out_rnn.shape[1] > 1 else
            # out_rnn[0]` trips an internal assert of the 1.13 exporter in
            # a scripted loop; out_rnn[0] is the same at batch > 1)
            outputs.append(out_rnn[0])
        return torch.stack(outputs, dim=0), h, c, v, s


class ScriptedWordModel(nn.Module):
    """WordModel with its layers scripted (ScriptedWordLayer), itself
    traced by the export: every layer's loop is an ONNX Loop."""

    def __init__(self, model, scripted):
        super().__init__()
        self.kind = model.kind
        self.encoder = model.encoder
        self.rnns = nn.ModuleList(scripted)

    def forward(self, input, *flat):
        """input, then the states flat in state_layout's order."""
        st = per_state(self.kind, flat)
        raw_output = F.embedding(input, self.encoder.weight)
        new_hidden, new_velocity, new_scale = [], [], []
        for l, rnn in enumerate(self.rnns):
            h = st["h"][l]
            c = st["c"][l] if "c" in st else h
            vl = st["v"][l] if "v" in st else h
            sl = st["s"][l] if "s" in st else h
            raw_output, h, c, vl, sl = rnn(raw_output, h, c, vl, sl)
            new_hidden.append(h if self.kind == "GRU" else (h, c))
            new_velocity.append(vl)
            new_scale.append(sl)
        result = raw_output.view(raw_output.size(0) * raw_output.size(1), raw_output.size(2))
        # flat, as the export flattens WordModel's outputs (torch.jit.trace
        # returns no lists of tuples)
        pairs = [x for hc in new_hidden for x in hc] if self.kind != "GRU" else new_hidden
        more = new_velocity if self.kind in ("MLSTM", "NLSTM") else []
        if self.kind == "ALSTM":
            more = new_velocity + new_scale
        return tuple([result] + pairs + more)


# =============================================================================
# The families, as recipes.md runs them
# =============================================================================

# family -> (cell, options as recipes.md gives them for MNIST / TIMIT)
CELL_FAMILIES = {
    "lstm": ("lstm", {}, {}),
    "mlstm": ("momentum_lstm", dict(mu=0.6, epsilon=0.6), dict(mu=0.3, epsilon=0.1)),
    "alstm": ("adam_lstm", dict(mu=0.6, epsilon=0.6, mus=0.1), dict(mu=0.3, epsilon=0.1, mus=0.999)),
    "rlstm": ("rmsprop_lstm", dict(mu=0.0, epsilon=0.6, mus=0.9), dict(mu=0.0, epsilon=0.1, mus=0.999)),
    "nlstm": ("nag_lstm", dict(epsilon=1.0, restart=2), dict(epsilon=0.1, restart=2)),
    "dtriv": ("dtriv", {}, {}),
    "mdtriv": ("momentum_dtriv", dict(mu=0.6, epsilon=0.9), dict(mu=0.3, epsilon=0.1)),
    "adtriv": ("adam_dtriv", dict(mu=0.3, epsilon=0.3, mus=0.8), dict(mu=0.3, epsilon=0.1, mus=0.9)),
    "rdtriv": ("rmsprop_dtriv", dict(mu=0.0, epsilon=0.3, mus=0.9), dict(mu=0.0, epsilon=0.1, mus=0.9)),
    "ndtriv": ("nag_dtriv", dict(epsilon=0.3, restart=2), dict(epsilon=0.1, restart=2)),
}

WORD_FAMILIES = {
    "LSTM": ("lstm", {}),
    "MLSTM": ("momentum_lstm", dict(mu=0.0, epsilon=0.6)),
    "ALSTM": ("adam_lstm", dict(mu=0.3, epsilon=0.6, mus=0.999)),
    "NLSTM": ("nag_lstm", dict(epsilon=0.6, restart=2)),
    "GRU": ("gru", {}),
}


def make_cell(family, I, H, timit):
    """The step cell of a family (mnist.py / timit.py's choice of class)."""
    _, mnist_o, timit_o = CELL_FAMILIES[family]
    o = timit_o if timit else mnist_o
    fg = -4.0 if timit else 1.0
    init, mode = (henaff_ if timit else cayley_), "dynamic"
    if family == "lstm":
        return StepLSTM(I, H, fg)
    if family == "mlstm":
        return StepMomentumLSTM(I, H, fg, mu=o["mu"], epsilon=o["epsilon"])
    if family in ("alstm", "rlstm"):
        return StepAdamLSTM(I, H, fg, mu=o["mu"], epsilon=o["epsilon"], mus=o["mus"])
    if family == "nlstm":
        return StepNesterovLSTM(I, H, fg, epsilon=o["epsilon"])
    if family == "dtriv":
        return DtrivRNN(I, H, init, mode)
    if family == "mdtriv":
        return DtrivMomentumRNN(I, H, init, mode, o["mu"], o["epsilon"])
    if family in ("adtriv", "rdtriv"):
        return DtrivAdamRNN(I, H, init, mode, o["mu"], o["epsilon"], o["mus"])
    return DtrivNesterovRNN(I, H, init, mode, o["epsilon"])


def expected_cell(cell, o):
    """The docs/cells.md cell string `cellc info` prints (recognize.c's order)."""
    dyn, base = RC.split_name(cell)
    if dyn == "plain":
        return "plain_" + base
    if dyn == "momentum":
        return "%s(mu=%g, s=%g)" % (cell, o["mu"], o["epsilon"])
    if dyn == "adam":
        return "%s(mu=%g, s=%g, beta=%g, eps=1e-16)" % (cell, o["mu"], o["epsilon"], o["mus"])
    if dyn == "rmsprop":
        return "%s(s=%g, beta=%g, eps=1e-16)" % (cell, o["epsilon"], o["mus"])
    form = ", form=extrapolate" if base == "lstm" and "restart" in o and o.get("extrapolate") else ""
    return "%s(s=%g, restart=%d%s)" % (cell, o["epsilon"], o["restart"], form)


def ref_opts(cell, o):
    """tests/ref_cells.py's options for family options o."""
    dyn, base = RC.split_name(cell)
    r = {}
    if "mu" in o:
        r["mu"] = o["mu"]
    if "epsilon" in o:
        r["s"] = o["epsilon"]
    if "mus" in o:
        r["beta"] = o["mus"]
    if dyn == "nag":
        r["restart"] = o["restart"]
        r["form"] = "extrapolate" if o.get("extrapolate") else "momentum"
    return r


# =============================================================================
# Cases
# =============================================================================

OPSETS = (13, 14, 17)


def case_list():
    """Every case: dict(name, loop, family, export, opset)."""
    cases = []
    k = 0
    for loop in ("mnist", "pmnist", "timit"):
        for fam in CELL_FAMILIES:
            for export in ("traced", "scripted"):
                cases.append(dict(name="%s_%s_%s" % (loop, fam, export), loop=loop, family=fam, export=export,
                                  opset=OPSETS[k % 3]))
                k += 1
    for fam in WORD_FAMILIES:
        for export in ("traced", "scripted"):
            cases.append(dict(name="ptb_%s_%s" % (fam.lower(), export), loop="ptb", family=fam, export=export,
                              opset=OPSETS[k % 3]))
            k += 1
    return cases


def model_seed(name):
    return 4600 + sum((i + 1) * ord(ch) for i, ch in enumerate(name)) % 100000


def family_opts(spec):
    if spec["loop"] == "ptb":
        return dict(WORD_FAMILIES[spec["family"]][1])
    o = dict(CELL_FAMILIES[spec["family"]][2 if spec["loop"] == "timit" else 1])
    if spec["family"] == "nlstm":
        o["extrapolate"] = True
    return o


def family_cell(spec):
    if spec["loop"] == "ptb":
        return WORD_FAMILIES[spec["family"]][0]
    return CELL_FAMILIES[spec["family"]][0]


def build_word_layers(kind, ninp, nhid, o):
    layers = []
    for l in range(LAYERS):
        I = ninp if l == 0 else nhid
        if kind == "LSTM":
            layer = WordLSTM(I, nhid)
        elif kind == "MLSTM":
            layer = WordMomentumLSTM(I, nhid, o["mu"], o["epsilon"])
        elif kind == "ALSTM":
            layer = WordAdamLSTM(I, nhid, o["mu"], o["epsilon"], o["mus"])
        elif kind == "NLSTM":
            layer = WordNesterovLSTM(I, nhid, o["epsilon"], o["restart"])
        else:
            layer = WordGRU(I, nhid)
        layers.append(layer)
    return layers


def build(spec, T):
    """(module to export, eager module for the goldens, input names, output
    names, input maker(T, B, rng), dynamic axes)."""
    torch.manual_seed(model_seed(spec["name"]))
    loop, fam, H = spec["loop"], spec["family"], HIDDEN
    o = family_opts(spec)
    restart = o.get("restart", 0)
    if loop in ("mnist", "pmnist"):
        cell = make_cell(fam, 1, H, False)
        permute = loop == "pmnist"
        eager = PixelModel(cell, H, MNIST_CLASSES, permute, restart, T).eval()
        feed = lambda T_, B, rng: [rng.uniform(0, 1, (B, T_)).astype(np.float32)]
        ins, outs = ["inputs"], ["logits"]
        axes = {"inputs": {0: "batch", 1: "time"}}
    elif loop == "timit":
        cell = make_cell(fam, TIMIT_FEATURES, H, True)
        eager = FrameModel(cell, H, TIMIT_FEATURES, restart).eval()
        feed = lambda T_, B, rng: [rng.standard_normal((B, T_, TIMIT_FEATURES)).astype(np.float32)]
        ins, outs = ["inputs"], ["outputs"]
        axes = {"inputs": {0: "batch", 1: "time"}}
    else:
        layers = build_word_layers(fam, H, H, o)
        if fam == "MLSTM":
            layers = [WeightDropped(layer, 0.5) for layer in layers]
        eager = WordModel(layers, VOCAB, H, fam).eval()
        layout = state_layout(fam)

        def feed(T_, B, rng):
            x = [rng.integers(0, VOCAB, (T_, B)).astype(np.int64)]
            for n, _ in layout:
                w = 4 * H if n in ("v", "s") else H
                a = rng.standard_normal((1, B, w))
                # (a second moment is a mean of squares: never negative)
                x.append((0.3 * (np.abs(a) if n == "s" else a)).astype(np.float32))
            return x
        ins = ["tokens"] + ["%s%d" % (n, l) for n, l in layout]
        outs = ["result"] + ["%s%d_out" % (n, l) for n, l in layout]
        # Only the time axis (bptt) is dynamic, the batch is the one the
        # authors train or evaluate at: the trace of the decoder input's
        # output.view(output.size(0) * output.size(1), ...) holds T * B as
        # a constant, and in a scripted layer's Loop the step's squeeze()
        # (no axes) of a [1, batch, H] state has an unknown rank, the
        # carried states no shape, which the exporter's own checker refuses.
        axes = {"tokens": {0: "time"}}
    return eager, ins, outs, feed, axes


def state_layout(kind):
    """The word model's states as the export flattens its arguments
    (hidden, v, s): [(state, layer)], h and c of each layer in turn, then
    every layer's v, then every layer's s."""
    pairs = [(n, l) for l in range(LAYERS) for n in ("h" if kind == "GRU" else "hc")]
    extra = {"MLSTM": "v", "NLSTM": "v", "ALSTM": "vs"}.get(kind, "")
    return pairs + [(n, l) for n in extra for l in range(LAYERS)]


def per_state(kind, flat):
    """{state: [value of each layer]} from values in state_layout order."""
    d = {}
    for (n, l), a in zip(state_layout(kind), flat):
        d.setdefault(n, [None] * LAYERS)[l] = a
    return d


def word_args(spec, arrays):
    """The WordModel call's arguments from the flat inputs."""
    fam = spec["family"]
    t = [torch.from_numpy(a) for a in arrays]
    st = per_state(fam, t[1:])
    if fam == "GRU":
        return (t[0], st["h"])
    args = (t[0], list(zip(st["h"], st["c"])))
    return args + tuple(st[n] for n in "vs" if n in st)


def call_args(spec, arrays):
    if spec["loop"] == "ptb":
        return word_args(spec, arrays)
    return tuple(torch.from_numpy(a) for a in arrays)


def flat(y):
    if isinstance(y, (tuple, list)):
        return [t for item in y for t in flat(item)]
    return [y]


def scripted_module(spec, eager, arrays):
    """The loop torch.jit.script'ed around the traced step."""
    loop, H = spec["loop"], HIDDEN
    if loop == "ptb":
        scripted = []
        x = F.embedding(torch.from_numpy(arrays[0]), eager.encoder.weight)
        args = word_args(spec, arrays)
        for l, layer in enumerate(eager.rnns):
            inner = layer.module if isinstance(layer, WeightDropped) else layer
            if isinstance(layer, WeightDropped):
                inner.weight_hh = inner.weight_hh_raw.data
            step_in = [x[0]]
            if spec["family"] == "GRU":
                step_in.append(args[1][l])
            else:
                step_in += list(args[1][l])
                if spec["family"] in ("MLSTM", "NLSTM", "ALSTM"):
                    step_in.append(args[2][l])
                if spec["family"] == "ALSTM":
                    step_in.append(args[3][l])
                if spec["family"] == "NLSTM":
                    step_in.append(torch.tensor(1.0))
            traced = torch.jit.trace(WordStep(inner), tuple(step_in))
            scripted.append(torch.jit.script(ScriptedWordLayer(traced, inner)))
            x = layer(x, *[a[l] for a in args[1:]])[0]
        # (the export's tracer does not follow script modules inside a plain
        # module; torch.jit.trace does, and the export takes its result)
        return torch.jit.trace(ScriptedWordModel(eager, scripted).eval(),
                               tuple(torch.from_numpy(a) for a in arrays))
    cell = eager.rnn
    B = arrays[0].shape[0]
    x = torch.from_numpy(arrays[0])
    step_x = x[:, 0].unsqueeze(1) if loop != "timit" else x[:, 0]
    h = torch.zeros(B, H)
    width = H if isinstance(cell, DTRIV) else 4 * H
    v = torch.zeros(B, width)
    state = h if isinstance(cell, DTRIV) else (h, torch.zeros(B, H))
    ex = [step_x, state]
    if isinstance(cell, (StepMomentumLSTM, DtrivMomentumRNN, StepNesterovLSTM, DtrivNesterovRNN)):
        ex.append(v)
    if isinstance(cell, (StepAdamLSTM, DtrivAdamRNN)):
        ex += [v, torch.zeros(B, width)]
    if isinstance(cell, (StepNesterovLSTM, DtrivNesterovRNN)):
        ex.append(torch.tensor(1.0))
    traced = torch.jit.trace(cell, tuple(ex))
    if loop == "timit":
        m = ScriptedFrameLoop(traced, cell, H, TIMIT_FEATURES, eager.restart)
    else:
        m = ScriptedPixelLoop(traced, cell, H, MNIST_CLASSES, eager.permute, eager.restart,
                              eager.permutation.numel())
    m.lin = eager.lin
    if loop == "pmnist":
        m.permutation = eager.permutation
    return torch.jit.script(m.eval())


# =============================================================================
# Self-check against docs/cells.md (tests/ref_cells.py, float64)
# =============================================================================

def npw(t):
    return t.detach().double().numpy()


def lin(x, mod):
    y = x @ npw(mod.weight).T
    return y + npw(mod.bias) if mod.bias is not None else y


def cell_params(cell):
    """The step cell's parameters in docs/cells.md's names and layouts."""
    if isinstance(cell, DTRIV):
        rk = cell.recurrent_kernel
        return dict(W_x=npw(cell.input_kernel.weight), A=npw(rk.A), base=npw(rk.base),
                    b=npw(cell.nonlinearity.b))
    return dict(W_x=npw(cell.x2h.weight), b_x=npw(cell.x2h.bias), W_h=npw(cell.h2h.weight),
                b_h=npw(cell.h2h.bias))


def word_params(layer):
    inner = layer.module if isinstance(layer, WeightDropped) else layer
    w_hh = inner.weight_hh_raw if isinstance(layer, WeightDropped) else inner.weight_hh
    return dict(W_x=npw(inner.weight_ih), b_x=npw(inner.bias_ih), W_h=npw(w_hh), b_h=npw(inner.bias_hh))


def run_ref(cell, opts, params, xs, init):
    """tests/ref_cells.py's cell over xs [T, B, I] from the states init
    (dict of [B, n] arrays; missing ones zero): (hs [T, B, H], finals)."""
    c = RC.make_cell(cell, opts, params, torch.float64)
    x = torch.from_numpy(xs)
    st = c.init_state(x.shape[1])
    for k, a in init.items():
        st[k] = torch.from_numpy(a)
    ys = [c.step(x[t], st, t + 1) for t in range(x.shape[0])]
    return torch.stack(ys).numpy(), {k: v.numpy() for k, v in st.items()}


def ref_outputs(spec, eager, arrays):
    cell, o = family_cell(spec), family_opts(spec)
    ro = ref_opts(cell, o)
    x = arrays[0]
    if spec["loop"] in ("mnist", "pmnist"):
        px = x[:, npw(eager.permutation).astype(np.int64)] if spec["loop"] == "pmnist" else x
        hs, _ = run_ref(cell, ro, cell_params(eager.rnn), px.T[:, :, None].astype(np.float64), {})
        return [lin(hs[-1], eager.lin)]
    if spec["loop"] == "timit":
        hs, _ = run_ref(cell, ro, cell_params(eager.rnn), x.transpose(1, 0, 2).astype(np.float64), {})
        return [lin(hs, eager.lin).transpose(1, 0, 2)]
    fam = spec["family"]
    ref_name = {"h": "h", "c": "c", "v": "v", "s": "m"}       # tests/ref_cells.py's
    given = per_state(spec["family"], arrays[1:])
    out = npw(eager.encoder.weight)[arrays[0]]
    finals = {}
    for l, layer in enumerate(eager.rnns):
        init = {ref_name[n]: given[n][l][0].astype(np.float64) for n in given}
        out, st = run_ref(cell, ro, word_params(layer), out, init)
        finals.update({(n, l): st[ref_name[n]][None] for n in given})
    return [out.reshape(-1, out.shape[2])] + [finals[nl] for nl in state_layout(spec["family"])]


def self_check(spec, eager, arrays, ys):
    """The model's outputs ys against docs/cells.md in float64; 784 float32
    steps of an orthogonal recurrence (whose state never decays) drift
    further from float64 than 8 do."""
    refs = ref_outputs(spec, eager, arrays)
    tol = 1e-3 if arrays[0].shape[1 if spec["loop"] != "ptb" else 0] > 100 else 1e-5
    assert len(refs) == len(ys), (spec["name"], len(refs), len(ys))
    for k, (r, y) in enumerate(zip(refs, ys)):
        y = y.detach().numpy().astype(np.float64)
        if r.shape != y.shape or not np.allclose(y, r, rtol=10 * tol, atol=tol):
            err = np.abs(y - r).max() if r.shape == y.shape else "shape %s vs %s" % (r.shape, y.shape)
            raise AssertionError("%s: output %d differs from the docs/cells.md reference (%s)" % (spec["name"], k, err))


# =============================================================================
# Export and golden data
# =============================================================================

def eager_outputs(spec, eager, arrays):
    with torch.no_grad():
        ys = flat(eager(*call_args(spec, arrays)))
    return ys


def data_set(case_dir, k, spec, eager, ins, outs, arrays):
    d = os.path.join(case_dir, "test_data_set_%d" % k)
    os.makedirs(d, exist_ok=True)
    ys = eager_outputs(spec, eager, arrays)
    assert len(ys) == len(outs), (spec["name"], outs, len(ys))
    self_check(spec, eager, arrays, ys)
    for i, (a, n) in enumerate(zip(arrays, ins)):
        write_pb(os.path.join(d, "input_%d.pb" % i), a, n)
    for i, (y, n) in enumerate(zip(ys, outs)):
        write_pb(os.path.join(d, "output_%d.pb" % i), y.detach().numpy(), n)


def make_case(out, spec):
    name = spec["name"]
    case_dir = os.path.join(out, name)
    os.makedirs(case_dir, exist_ok=True)
    rng = np.random.default_rng(model_seed(name))
    # a scripted PMNIST model is exported at its real length (the
    # permutation is a buffer of T indices; the Loop is not unrolled)
    fixed_T = spec["loop"] == "pmnist"
    T0 = T_LONG if fixed_T and spec["export"] == "scripted" else T_TRACE
    eager, ins, outs, feed, axes = build(spec, T0)
    x = feed(T0, BATCH, rng)
    t0 = time.time()
    with torch.no_grad():
        eager(*call_args(spec, x))          # the DTRIV matrices cached, as after training
        module = eager if spec["export"] == "traced" else scripted_module(spec, eager, x)
        if fixed_T:
            axes = {n: {a: s for a, s in ax.items() if s != "time"} for n, ax in axes.items()}
        args = call_args(spec, x) if spec["export"] == "traced" else tuple(torch.from_numpy(a) for a in x)
        torch.onnx.export(module, args, os.path.join(case_dir, "model.onnx"),
                          opset_version=spec["opset"], input_names=ins, output_names=outs, dynamic_axes=axes)
    took = time.time() - t0
    data_set(case_dir, 0, spec, eager, ins, outs, x)
    k, second_T = 1, None
    if not fixed_T:
        second_T = T_LONG
        data_set(case_dir, k, spec, eager, ins, outs, feed(T_LONG, BATCH, rng))
        k += 1
    if any("batch" in ax.values() for ax in axes.values()):
        data_set(case_dir, k, spec, eager, ins, outs, feed(T0, BATCH + 1, rng))
    recs = LAYERS if spec["loop"] == "ptb" else 1
    # 784 float32 steps of an orthogonal recurrence (its state never
    # decays) drift from PyTorch's by rounding as much as from float64
    # (the self-check above): a wider tolerance for the DTRIV cells
    tol = ["--atol", "5e-4", "--rtol", "1e-3"] if "dtriv" in spec["family"] else None
    info = dict(loop=spec["loop"], family=spec["family"], export=spec["export"], opset=spec["opset"],
                expected_cell=expected_cell(family_cell(spec), family_opts(spec)), recurrences=recs,
                traced_loops=recs if spec["export"] == "traced" else 0,
                # the permutation buffer holds T: fixed in both exports, a
                # fallback of the traced one only (the scripted file's T is
                # its static input's)
                symbolic_time=not fixed_T, fixed_fallback=fixed_T and spec["export"] == "traced",
                T=T0, loop_T=T0, hidden=HIDDEN, tol=tol,
                second_T=second_T, batch=BATCH, dynamic_axes=axes,
                style=["momentumrnn_authors", spec["loop"], spec["export"]] +
                (["head_last_step_only"] if spec["loop"] in ("mnist", "pmnist") else []))
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(info, f, indent=1)
    print("%-32s opset %d export %.1fs" % (name, spec["opset"], took), flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, only = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for spec in case_list():
        if not only or any(spec["name"].startswith(p) for p in only):
            make_case(out, spec)


if __name__ == "__main__":
    main()
