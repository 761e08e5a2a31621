"""ref_scripted.py: the momentum family of docs/cells.md section 3 written so that
torch.jit.script accepts it (explicit tensor states instead of the dicts of
tests/ref_momentum.py), for scripted exports: torch.onnx.export of a
scripted module turns the Python loop over time into one ONNX Loop whose body
is one step, with the per-step head outputs collected by SequenceInsert and
stacked by ConcatFromSequence.

Parameter names and math are those of ref_momentum.Net (cell.x2h, cell.h2h,
fc; block order ifgo / rzn), so `load_from(ref_net)` copies its weights and
tests/gen_loop_cases.py checks that both give the same outputs.
Every model maps x [T, B, I] to (y = fc(h_t) stacked over time, h_T).
"""
from typing import List, Tuple

import torch


class ScriptCell(torch.nn.Module):
    def __init__(self, base: str, dyn: str, input_size: int, hidden: int, mu: float = 0.6,
                 s: float = 0.6, beta: float = 0.9, eps: float = 1e-16, restart: int = 0):
        super().__init__()
        rows = {"rnn": 1, "lstm": 4, "gru": 3}[base] * hidden
        self.base, self.dyn, self.hidden, self.rows = base, dyn, hidden, rows
        self.x2h = torch.nn.Linear(input_size, rows)
        self.h2h = torch.nn.Linear(hidden, rows)
        self.mu, self.s, self.beta, self.eps, self.restart = mu, s, beta, eps, restart


class ScriptNet(torch.nn.Module):
    """cell in a scripted loop -> Linear head on every step; (y, h_T).
    batch_first: x [B, T, I], y [B, T, C]."""

    def __init__(self, base: str, dyn: str, input_size: int, hidden: int, classes: int,
                 batch_first: bool = False, **opt):
        super().__init__()
        self.batch_first = batch_first
        self.cell = ScriptCell(base, dyn, input_size, hidden, **opt)
        self.fc = torch.nn.Linear(hidden, classes)
        self.lstm = base == "lstm"
        self.gru = base == "gru"
        self.use_v = dyn in ("momentum", "adam")
        self.use_nag = dyn == "nag"
        self.restart = self.cell.restart
        self.use_m = dyn in ("adam", "rmsprop")
        self.hidden = hidden
        self.rows = self.cell.rows
        self.mu, self.s, self.beta, self.eps = (self.cell.mu, self.cell.s, self.cell.beta,
                                                self.cell.eps)

    def steps(self, x) -> Tuple[List[torch.Tensor], torch.Tensor]:
        """the loop: every step's head output, and h_T"""
        tax = 1 if self.batch_first else 0
        B = x.size(1 - tax)
        h = torch.zeros(B, self.hidden)
        c = torch.zeros(B, self.hidden)
        v = torch.zeros(B, self.rows)
        m = torch.zeros(B, self.rows)
        ys = []
        for t in range(x.size(tax)):
            u = self.cell.x2h(x[:, t] if self.batch_first else x[t])
            if self.use_nag:
                # docs/cells.md's schedule with the 0-based loop index t
                k = t % self.restart + 1 if self.restart > 0 else t + 1
                mu_t = (k - 1) / (k + 2)
                v = mu_t * v + self.s * u
            if self.use_v:
                v = self.mu * v + self.s * u
            if self.use_m:
                m = self.beta * m + (1 - self.beta) * u * u
            if self.use_v and self.use_m:
                d = v / torch.sqrt(m + self.eps)
            elif self.use_m:
                d = self.s * u / torch.sqrt(m + self.eps)
            elif self.use_v or self.use_nag:
                d = v
            else:
                d = u
            r = self.cell.h2h(h)
            if self.lstm:
                i, f, g, o = (d + r).chunk(4, 1)
                i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
                c = f * c + i * g
                h = o * torch.tanh(c)
            elif self.gru:
                dr, dz, dn = d.chunk(3, 1)
                rr, rz, rn = r.chunk(3, 1)
                rg = torch.sigmoid(dr + rr)
                z = torch.sigmoid(dz + rz)
                n = torch.tanh(dn + rg * rn)
                h = (1 - z) * n + z * h
            else:
                h = torch.tanh(d + r)
            ys.append(self.fc(h))
        return ys, h

    def forward(self, x):
        ys, h = self.steps(x)
        return torch.stack(ys, 1 if self.batch_first else 0), h


class ScriptNetLast(ScriptNet):
    """ScriptNet that also returns the last step's head output, read back
    from the list (SequenceAt in the export)."""

    def forward(self, x):
        ys, h = self.steps(x)
        return torch.stack(ys, 1 if self.batch_first else 0), h, ys[-1]


# name -> (base, dynamic, options): the models of ref_momentum.MODELS.  The
# NAG models compute mu_t from the loop index (Mod/Add/Div/Cast on the Loop's
# iteration number in the export).
MODELS = {
    "nag_lstm_r2": ("lstm", "nag", dict(s=0.6, restart=2)),
    "nag_lstm_r40": ("lstm", "nag", dict(s=0.6, restart=40)),
    "momentum_lstm": ("lstm", "momentum", dict(mu=0.6, s=0.6)),
    "adam_lstm": ("lstm", "adam", dict(mu=0.5, s=0.7, beta=0.9)),
    "rmsprop_lstm": ("lstm", "rmsprop", dict(s=0.8, beta=0.9)),
    "momentum_gru": ("gru", "momentum", dict(mu=0.7, s=0.5)),
    "momentum_rnn": ("rnn", "momentum", dict(mu=0.6, s=0.9)),
}


def make_model(name, input_size, hidden, classes, batch_first=False, with_last=False):
    base, dyn, opt = MODELS[name]
    cls = ScriptNetLast if with_last else ScriptNet
    return cls(base, dyn, input_size, hidden, classes, batch_first=batch_first, **opt).eval()


def load_from(net, ref_net):
    """Copies the weights of a ref_momentum.Net (same parameter names)."""
    net.load_state_dict(ref_net.state_dict())
    return net
