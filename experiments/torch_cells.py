"""torch_cells.py: the experiments' models in PyTorch, written the way the
papers' authors write theirs (an nn.Module per cell, a Python loop over time),
from the equations of docs/cells.md.

The model itself is read from the experiment's `.cell` file, so that the
PyTorch script and the generated C train the same network: `load_cell(path)`
understands the small part of the format the experiments use,

    input x: f32[seq, batch, I]
    h1 = CELL(x, hidden=H, key=value, ...)
    y  = linear(last(h1), out=C)         (or linear(h1, out=C): every step)
    output y

and builds a module whose parameters carry the `.cell` parameter names
(`h1.W_x`, ..., `y.weight`, `y.bias`), so that the initial weights come from
the weights file `cellc compile --train` writes and both sides start equal.
"""
import re

import torch
import torch.nn.functional as F

# base -> (gate blocks G/H); dynamics -> the states they add
BASES = {"rnn": 1, "lstm": 4, "gru": 3, "dtriv": 1}
DYNAMICS = ("plain", "momentum", "nag", "adam", "rmsprop")
DEFAULTS = {"mu": 0.6, "s": 0.6, "beta": 0.999, "eps": 1e-16, "restart": 0, "act": "tanh",
            "K": 1, "alpha": 1.0, "g0": "h", "form": "momentum"}


def nag_mu(t, restart):
    """mu_t of the NAG schedule for the 1-based step t (docs/cells.md 3)."""
    k = ((t - 1) % restart) + 1 if restart > 0 else t
    return (k - 1) / (k + 2)


def modrelu(z, b):
    return torch.sign(z) * F.relu(torch.abs(z) + b)


class MomentumFamily(torch.nn.Module):
    """{plain, momentum, nag, adam, rmsprop} x {rnn, lstm, dtriv}: the input
    projection u_t = W_x x_t + b_x runs through an optimiser's update rule
    (the dynamic) before it meets the recurrent term."""

    def __init__(self, base, dyn, inputs, hidden, opt):
        super().__init__()
        self.base, self.dyn, self.hidden = base, dyn, hidden
        self.opt = dict(DEFAULTS, **opt)
        G = BASES[base] * hidden
        self.W_x = torch.nn.Parameter(torch.zeros(G, inputs))
        if base == "dtriv":
            self.A = torch.nn.Parameter(torch.zeros(hidden, hidden))
            # the base is held fixed (docs/cells.md: only a retraction would
            # change it; --train builds freeze it): read from the weights, not trained
            self.base_m = torch.nn.Parameter(torch.zeros(hidden, hidden), requires_grad=False)
            self.b = torch.nn.Parameter(torch.zeros(hidden))
        else:
            self.b_x = torch.nn.Parameter(torch.zeros(G))
            self.W_h = torch.nn.Parameter(torch.zeros(G, hidden))
            self.b_h = torch.nn.Parameter(torch.zeros(G))

    def cell_names(self):
        """(.cell parameter name, tensor) in the order the .cell declares them."""
        if self.base == "dtriv":
            return [("W_x", self.W_x), ("A", self.A), ("base", self.base_m), ("b", self.b)]
        return [("W_x", self.W_x), ("b_x", self.b_x), ("W_h", self.W_h), ("b_h", self.b_h)]

    def forward(self, x, keep=None):
        """x [T, B, I] -> hidden states [T, B, H].  keep: a list that receives
        each h_t (retain_grad'ed), for the gradient picture."""
        T, B, _ = x.shape
        H, o = self.hidden, self.opt
        if self.base == "dtriv":
            U = torch.triu(self.A, 1)
            M = self.base_m @ torch.matrix_exp(U - U.t())
        G = self.W_x.shape[0]
        h = x.new_zeros(B, H)
        c = x.new_zeros(B, H)
        v = x.new_zeros(B, G)
        m = x.new_zeros(B, G)
        out = []
        for t in range(T):
            # the input projection of the step, inside the loop as the papers'
            # code has it (x2h(x_t)); a projection of the whole sequence first
            # and u_all[t] in the loop would give backward one zero-filled
            # [T, B, G] gradient per step, quadratic in T
            u = x[t] @ self.W_x.t() if self.base == "dtriv" else F.linear(x[t], self.W_x, self.b_x)
            if self.dyn == "plain":
                d = u
            elif self.dyn == "momentum":
                v = o["mu"] * v + o["s"] * u
                d = v
            elif self.dyn == "nag":
                v = nag_mu(t + 1, int(o["restart"])) * v + o["s"] * u
                d = v
            elif self.dyn == "adam":
                v = o["mu"] * v + o["s"] * u
                m = o["beta"] * m + (1 - o["beta"]) * (u * u)
                d = v / torch.sqrt(m + o["eps"])
            else:  # rmsprop
                v = o["s"] * u
                m = o["beta"] * m + (1 - o["beta"]) * (u * u)
                d = v / torch.sqrt(m + o["eps"])
            if self.base == "dtriv":
                h = modrelu(d + h @ M, self.b)
            else:
                a = d + h @ self.W_h.t() + self.b_h
                if self.base == "rnn":
                    h = torch.relu(a) if o["act"] == "relu" else torch.tanh(a)
                else:
                    i, f, g, og = a.chunk(4, dim=1)
                    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                    h = torch.sigmoid(og) * torch.tanh(c)
            if keep is not None:
                h.retain_grad()
                keep.append(h)
            out.append(h)
        return torch.stack(out)


class IncrementalRNN(torch.nn.Module):
    """irnn (docs/cells.md 4): K inner steps from g_0 = h_{m-1} (or 0)."""

    def __init__(self, inputs, hidden, opt):
        super().__init__()
        self.hidden = hidden
        self.opt = dict(DEFAULTS, **opt)
        self.opt.setdefault("act", "relu")
        K = int(self.opt["K"])
        self.W_x = torch.nn.Parameter(torch.zeros(hidden, inputs))
        self.b_x = torch.nn.Parameter(torch.zeros(hidden))
        self.W_h = torch.nn.Parameter(torch.zeros(hidden, hidden))
        self.eta = torch.nn.Parameter(torch.zeros(K, hidden))

    def cell_names(self):
        return [("W_x", self.W_x), ("b_x", self.b_x), ("W_h", self.W_h), ("eta", self.eta)]

    def forward(self, x, keep=None):
        T, B, _ = x.shape
        o = self.opt
        act = torch.relu if o["act"] == "relu" else torch.tanh
        h = x.new_zeros(B, self.hidden)
        out = []
        for t in range(T):
            u = F.linear(x[t], self.W_x, self.b_x)      # per step, as in MomentumFamily
            g = h if o["g0"] == "h" else torch.zeros_like(h)
            for k in range(self.eta.shape[0]):
                z = g + h
                g = g + self.eta[k] * (act(z @ self.W_h.t() + u) - o["alpha"] * z)
            h = g
            if keep is not None:
                h.retain_grad()
                keep.append(h)
            out.append(h)
        return torch.stack(out)


def make_cell(kind, inputs, hidden, opt):
    if kind in ("irnn", "sirnn"):
        return IncrementalRNN(inputs, hidden, dict(opt, act=opt.get("act", "relu")))
    if kind in BASES:
        return MomentumFamily(kind, "plain", inputs, hidden, opt)
    dyn, _, base = kind.partition("_")
    if dyn not in DYNAMICS or base not in BASES:
        raise ValueError("torch_cells: no PyTorch version of cell %r" % kind)
    return MomentumFamily(base, dyn, inputs, hidden, opt)


class Fused(torch.nn.Module):
    """The same plain LSTM or tanh RNN as torch.nn.LSTM / nn.RNN (PyTorch's
    C++ kernels for the whole sequence): the fastest PyTorch form of the model,
    for the speed comparison.  Same gate order, W_ih = W_x, b_ih = b_x, ..."""

    def __init__(self, cell):
        super().__init__()
        I, H = cell.W_x.shape[1], cell.hidden
        self.rnn = (torch.nn.LSTM(I, H) if cell.base == "lstm" else torch.nn.RNN(I, H))
        with torch.no_grad():
            for a, b in (("weight_ih_l0", cell.W_x), ("weight_hh_l0", cell.W_h), ("bias_ih_l0", cell.b_x),
                         ("bias_hh_l0", cell.b_h)):
                getattr(self.rnn, a).copy_(b)
        self.layer_params = [self.rnn.weight_ih_l0, self.rnn.bias_ih_l0, self.rnn.weight_hh_l0, self.rnn.bias_hh_l0]

    def forward(self, x, keep=None):
        return self.rnn(x)[0]


def fusable(net):
    c = net.cell
    return isinstance(c, MomentumFamily) and c.dyn == "plain" and (
        c.base == "lstm" or (c.base == "rnn" and c.opt["act"] == "tanh"))


class Net(torch.nn.Module):
    """One recurrent layer and a linear head, on the last step or on every step."""

    def __init__(self, layer, cell, head, head_every_step):
        super().__init__()
        self.layer_name, self.cell, self.head = layer, cell, head
        self.every = head_every_step

    def forward(self, x, keep=None):
        hs = self.cell(x, keep)
        return self.head(hs if self.every else hs[-1])

    def cell_params(self, head_name):
        """[(.cell name, tensor)] in the order of the weights file."""
        return ([("%s.%s" % (self.layer_name, n), p) for n, p in self.cell.cell_names()] +
                [("%s.weight" % head_name, self.head.weight), ("%s.bias" % head_name, self.head.bias)])


def _value(s):
    s = s.strip()
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def load_cell(path):
    """(Net, head name) of an experiment's .cell file (the subset above)."""
    text = open(path).read()
    inp = re.search(r"input\s+\w+\s*:\s*f32\[\s*seq\s*,\s*batch\s*,\s*(\d+)\s*\]", text)
    lay = re.search(r"^\s*(\w+)\s*=\s*(\w+)\(\s*\w+\s*,([^)]*)\)", text, re.M)
    head = re.search(r"^\s*(\w+)\s*=\s*linear\((last\()?\s*(\w+)\s*\)?\s*,\s*out\s*=\s*(\d+)\s*\)", text, re.M)
    if not (inp and lay and head) or head.group(3) != lay.group(1):
        raise ValueError("%s: not an experiment model (input [seq, batch, I], one cell, a linear head)" % path)
    opts = {}
    for kv in lay.group(3).split(","):
        k, _, v = kv.partition("=")
        if k.strip():
            opts[k.strip()] = _value(v)
    hidden = int(opts.pop("hidden"))
    for k in ("init", "fg_init"):
        opts.pop(k, None)
    cell = make_cell(lay.group(2), int(inp.group(1)), hidden, opts)
    lin = torch.nn.Linear(hidden, int(head.group(4)))
    return Net(lay.group(1), cell, lin, head.group(2) is None), head.group(1)


def set_weights(net, head_name, tensors):
    """Copy a weights file's tensors [(name, ndarray)] into the module; every
    parameter must be there, with its shape."""
    have = dict(tensors)
    with torch.no_grad():
        for name, p in net.cell_params(head_name):
            if name not in have:
                raise KeyError("weights: no tensor %s" % name)
            a = torch.as_tensor(have[name])
            if tuple(a.shape) != tuple(p.shape):
                raise ValueError("weights: %s is %s, the model wants %s" % (name, tuple(a.shape), tuple(p.shape)))
            p.copy_(a)
