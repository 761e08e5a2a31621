"""cells.py: the benchmark's models as PyTorch modules (docs/cells.md).

Every model maps x [T, B, I] (time first) to y [T, B, H], the hidden state of
every step, which is what nn.LSTM returns as its first output:

  lstm            torch.nn.LSTM (one layer): PyTorch's fused C++ kernel
  momentum_lstm   MomentumLSTM (mu 0.6, s 0.6)          \
  adam_lstm       AdamLSTM (mu 0.6, s 0.6, beta 0.9)      } the way a researcher
  sr_lstm         SRLSTM = nag_lstm, restart 40, s 0.6  /  writes them: a cell
                                                           module in a Python loop

The Python-loop cells follow docs/cells.md section 3: u = x2h(x_t) (nn.Linear,
all four gate blocks), r = h2h(h_{t-1}), d = dynamic(u), a = d + r split
into i, f, g, o (PyTorch's block order), c = f c + i g, h = o tanh(c).
The loop over time is Python's, as in the authors' code: torch.onnx.export
traces it into T copies of the step, torch.jit.script keeps it as a Loop.

train_step() is one training step: forward, a cross-entropy loss on a linear
head over the last step, backward, RMSprop update (docs/training.md).
"""
import torch

CELLS = {
    "lstm": None,
    "momentum_lstm": ("momentum", dict(mu=0.6, s=0.6)),
    "adam_lstm": ("adam", dict(mu=0.6, s=0.6, beta=0.9, eps=1e-16)),
    "sr_lstm": ("nag", dict(s=0.6, restart=40)),
}


class LSTM(torch.nn.Module):
    """nn.LSTM returning only its output sequence."""

    def __init__(self, input_size, hidden):
        super().__init__()
        self.rnn = torch.nn.LSTM(input_size, hidden)

    def forward(self, x):
        return self.rnn(x)[0]


class LoopLSTM(torch.nn.Module):
    """An LSTM with an input dynamic (momentum, adam, nag) in a Python loop."""

    def __init__(self, dyn, input_size, hidden, mu=0.6, s=0.6, beta=0.9, eps=1e-16, restart=0):
        super().__init__()
        self.dyn, self.hidden = dyn, hidden
        self.x2h = torch.nn.Linear(input_size, 4 * hidden)
        self.h2h = torch.nn.Linear(hidden, 4 * hidden)
        self.mu, self.s, self.beta, self.eps, self.restart = mu, s, beta, eps, restart

    def forward(self, x):
        T, B = x.size(0), x.size(1)
        h = torch.zeros(B, self.hidden)
        c = torch.zeros(B, self.hidden)
        v = torch.zeros(B, 4 * self.hidden)
        m = torch.zeros(B, 4 * self.hidden)
        ys = []
        for t in range(T):  # 0-based: range(1, T + 1) would script to a Ceil
            u = self.x2h(x[t])
            if self.dyn == "momentum":
                v = self.mu * v + self.s * u
                d = v
            elif self.dyn == "nag":
                # docs/cells.md's schedule for the 1-based step t + 1
                k = t % self.restart + 1 if self.restart > 0 else t + 1
                v = (k - 1) / (k + 2) * v + self.s * u
                d = v
            else:  # adam
                v = self.mu * v + self.s * u
                m = self.beta * m + (1 - self.beta) * u * u
                d = v / torch.sqrt(m + self.eps)
            i, f, g, o = (d + self.h2h(h)).chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            ys.append(h)
        return torch.stack(ys, 0)


def make(cell, input_size, hidden, seed=0):
    torch.manual_seed(seed)
    if CELLS[cell] is None:
        return LSTM(input_size, hidden).eval()
    dyn, opt = CELLS[cell]
    return LoopLSTM(dyn, input_size, hidden, **opt).eval()


class Classifier(torch.nn.Module):
    """model -> linear head on the last step (training cases: 10 classes)."""

    def __init__(self, body, hidden, classes=10):
        super().__init__()
        self.body = body
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.body(x)[-1])


def train_step(net, opt, x, target):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(x), target)
    loss.backward()
    opt.step()
    return loss
