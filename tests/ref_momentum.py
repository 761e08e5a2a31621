"""ref_momentum.py: the momentum family of docs/cells.md section 3 as PyTorch
modules written the way a researcher writes them: a cell module called in a
Python loop over time, with a Linear head on every step.  Traced by
torch.onnx.export they become T copies of the step (tests/gen_trace_cases.py);
run eagerly they give the golden outputs.

Every model maps x [T, B, I] (or [B, T, I] with batch_first) to
(y = head(h_t) stacked over time, h_T).  Base cells follow PyTorch's block
order (ifgo / rzn): u = x2h(x_t), r = h2h(h_{t-1}), d = dynamic(u), and
  rnn:  h = tanh(d + r)
  lstm: i,f,g,o = chunks of d + r; c = f*c + i*g; h = o*tanh(c)
  gru:  r,z = sigmoid(d_rz + r_rz); n = tanh(d_n + r * r_n); h = (1-z)*n + z*h
Dynamics (t 1-based):
  momentum(mu, s):   v = mu*v + s*u;                          d = v
  nag(s, restart F): k = ((t-1) mod F) + 1 (k = t if F = 0), mu_t = (k-1)/(k+2),
                     v = mu_t*v + s*u;                        d = v
  adam(mu, s, beta, eps): v = mu*v + s*u; m = beta*m + (1-beta)*u*u;
                     d = v / sqrt(m + eps)
  rmsprop(s, beta, eps): adam with mu = 0 (no v state).
"""
import math

import torch


def nag_mu(t, restart):
    """mu_t of docs/cells.md for 1-based t."""
    k = ((t - 1) % restart) + 1 if restart > 0 else t
    return (k - 1) / (k + 2)


class Cell(torch.nn.Module):
    def __init__(self, base, dyn, input_size, hidden, **opt):
        super().__init__()
        rows = {"rnn": 1, "lstm": 4, "gru": 3}[base] * hidden
        self.base, self.dyn, self.hidden, self.rows = base, dyn, hidden, rows
        self.x2h = torch.nn.Linear(input_size, rows)
        self.h2h = torch.nn.Linear(hidden, rows)
        self.mu = opt.get("mu", 0.6)
        self.s = opt.get("s", 0.6)
        self.beta = opt.get("beta", 0.9)
        self.eps = opt.get("eps", 1e-16)
        self.restart = opt.get("restart", 0)

    def init_state(self, B):
        st = {"h": torch.zeros(B, self.hidden)}
        if self.base == "lstm":
            st["c"] = torch.zeros(B, self.hidden)
        if self.dyn in ("momentum", "nag", "adam"):
            st["v"] = torch.zeros(B, self.rows)
        if self.dyn in ("adam", "rmsprop"):
            st["m"] = torch.zeros(B, self.rows)
        return st

    def forward(self, x, st, t):
        u = self.x2h(x)
        new = {}
        if self.dyn == "plain":
            d = u
        elif self.dyn == "momentum":
            d = new["v"] = self.mu * st["v"] + self.s * u
        elif self.dyn == "nag":
            d = new["v"] = nag_mu(t, self.restart) * st["v"] + self.s * u
        elif self.dyn == "adam":
            new["v"] = self.mu * st["v"] + self.s * u
            new["m"] = self.beta * st["m"] + (1 - self.beta) * u * u
            d = new["v"] / torch.sqrt(new["m"] + self.eps)
        elif self.dyn == "rmsprop":
            new["m"] = self.beta * st["m"] + (1 - self.beta) * u * u
            d = self.s * u / torch.sqrt(new["m"] + self.eps)
        else:
            raise ValueError(self.dyn)
        r = self.h2h(st["h"])
        if self.base == "rnn":
            new["h"] = torch.tanh(d + r)
        elif self.base == "lstm":
            i, f, g, o = (d + r).chunk(4, 1)
            i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
            new["c"] = f * st["c"] + i * g
            new["h"] = o * torch.tanh(new["c"])
        else:
            dr, dz, dn = d.chunk(3, 1)
            rr, rz, rn = r.chunk(3, 1)
            rg = torch.sigmoid(dr + rr)
            z = torch.sigmoid(dz + rz)
            n = torch.tanh(dn + rg * rn)
            new["h"] = (1 - z) * n + z * st["h"]
        return new


class Net(torch.nn.Module):
    """cell in a Python loop -> Linear head on every step; returns (y, h_T)."""

    def __init__(self, base, dyn, input_size, hidden, classes, batch_first=False, **opt):
        super().__init__()
        self.cell = Cell(base, dyn, input_size, hidden, **opt)
        self.fc = torch.nn.Linear(hidden, classes)
        self.batch_first = batch_first

    def forward(self, x):
        tax = 1 if self.batch_first else 0
        T, B = x.shape[tax], x.shape[1 - tax]
        st = self.cell.init_state(B)
        outs = []
        for t in range(T):
            st = self.cell(x[:, t] if self.batch_first else x[t], st, t + 1)
            outs.append(st["h"])
        return self.fc(torch.stack(outs, tax)), st["h"]


# The models of issue 4: name -> (base, dynamic, options).
MODELS = {
    "momentum_lstm": ("lstm", "momentum", dict(mu=0.6, s=0.6)),
    "adam_lstm": ("lstm", "adam", dict(mu=0.5, s=0.7, beta=0.9)),
    "rmsprop_lstm": ("lstm", "rmsprop", dict(s=0.8, beta=0.9)),
    "nag_lstm_r2": ("lstm", "nag", dict(s=0.6, restart=2)),
    "nag_lstm_r40": ("lstm", "nag", dict(s=0.6, restart=40)),
    "momentum_gru": ("gru", "momentum", dict(mu=0.7, s=0.5)),
    "momentum_rnn": ("rnn", "momentum", dict(mu=0.6, s=0.9)),
}


def make_model(name, input_size, hidden, classes, seed, batch_first=False):
    base, dyn, opt = MODELS[name]
    torch.manual_seed(seed)
    net = Net(base, dyn, input_size, hidden, classes, batch_first=batch_first, **opt)
    # PyTorch's default init, then a little spread in the biases so that the
    # gates are not all near 0.5
    with torch.no_grad():
        for p in net.parameters():
            if p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    return net.eval()


def expected_cell(name):
    """The string `cellc info` should report for the model (docs/cells.md names)."""
    base, dyn, o = MODELS[name]
    if dyn == "momentum":
        return "momentum_%s(mu=%g, s=%g)" % (base, o["mu"], o["s"])
    if dyn == "adam":
        return "adam_%s(mu=%g, s=%g, beta=%g, eps=%g)" % (base, o["mu"], o["s"], o["beta"],
                                                          o.get("eps", 1e-16))
    if dyn == "rmsprop":
        return "rmsprop_%s(s=%g, beta=%g, eps=%g)" % (base, o["s"], o["beta"], o.get("eps", 1e-16))
    if dyn == "nag":
        return "nag_%s(s=%g, restart=%d)" % (base, o["s"], o["restart"])
    return "%s_%s" % (dyn, base)


if __name__ == "__main__":
    # self-check of the schedule against docs/cells.md's worked values
    assert [nag_mu(t, 0) for t in (1, 2, 3, 4)] == [0, 1 / 4, 2 / 5, 3 / 6]
    assert [nag_mu(t, 2) for t in (1, 2, 3, 4)] == [0, 1 / 4, 0, 1 / 4]
    assert math.isclose(nag_mu(41, 40), 0.0)
    print("ok")
