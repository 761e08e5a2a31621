"""gen_torch_wild.py: models built on nn.LSTM / nn.GRU / nn.RNN the way other
people write them, exported by torch.onnx.export, in the ONNX backend layout
(CASE/model.onnx, CASE/test_data_set_N/input_K.pb, output_K.pb) for `cellc
verify`; the expected outputs are PyTorch's own (torch 1.13, float32).

gen_torch_exports.py sweeps one template (a cell and a Linear head) over its
switches.  Here every model is its own class in the manner of a different
author, after forms common in tutorials, papers' code and deployed models:
a sentiment classifier that flattens every step's sigmoid and keeps the last
(view(batch, -1)[:, -1]), bidirectional text classifiers that concatenate
h_n[-2] and h_n[-1] or read out[:, -1], states made of zeros in forward() and
detached, attention pooling by softmax over time and bmm, max and mean
pooling over time, a character language model over view(-1, H), two LSTM
modules stacked by hand with dropout and a residual sum, a convolutional
front end (CRNN), permute from batch-first data, LayerNorm on the outputs,
images read as pixel sequences, h_n viewed as [layers, directions, batch,
hidden], a streaming GRU whose state is an input and an output, a
decoder that runs a GRU one step at a time for a fixed number of steps
(also with attention over the encoder and greedy feedback, as the PyTorch
translation tutorial),
the top three steps by a score (topk over the time axis),
nn.MultiheadAttention and nn.TransformerEncoderLayer over recurrent
outputs, sequence
autoencoders that repeat or expand h_n over time, concat pooling,
learned initial states, one LSTM on a pair of sequences, padded batches of given lengths through pack_padded_sequence (sorted or
not, with pad_packed_sequence, with the states as inputs), and a head run
on every step before the last step is kept: on the sequence
(fc(out)[:, -1, :], sigmoid(score(out)).squeeze(-1)[:, -1], a slice
tanh(fc(out))[:, -1:, :]) or on the
batch and time rows flattened (view(seq_len * batch, -1) through two
Linear layers and log_softmax, then view(seq_len, batch, -1)[-1];
reshape(-1, out.size(2)) and back by x.size()).

Each model is exported at opset 14 with dynamic batch and sequence axes
(where its form allows) at batch 2, T = 8, and carries three data sets: the
export size, batch 3 at T = 11, batch 1 at T = 5 (the GEMV path).  Seeds are
fixed per model.  A model with lengths takes them as an int64 input
(one row of the whole length, the others shorter).  PyTorch's exporter
makes the states of a packed LSTM or GRU from the traced batch size unless
they are inputs: those models (PackedLSTM, PackedBiGRU) are exported with
the batch fixed, as its warning asks.  SentimentRNN makes its states from the batch size with
weight.new(...), which the tracer records as constants of the traced batch:
its export with a dynamic batch axis (SentimentRNN_dynamic_batch, data at
batch 2 only, T = 8 and 11) runs only at batch 2, as ONNX Runtime runs it:
cellc must compile it for batch 2 with a warning saying so (the batch made
2 by the node that broadcasts the state against it), and its export with the batch fixed (SentimentRNN; T = 8 and 11)
must verify.  DeepSpeechConv (a strided Conv2d over a spectrogram's
frames) and CRNNWidth (a MaxPool2d over a text line's width) run their
recurrences over a size expression of the run-time length and must
verify at every length from one build.  ConvPoolLSTM halves the length with a MaxPool1d: its export with a
dynamic time axis (ConvPoolLSTM_dynamic_seq) must verify at T = 8, 11 and 5
from one build (its LSTM runs floor(seq / 2) steps, a size expression),
and its export with T fixed at 8 must verify (batch 2, 3 and 1).
PyramidalListener stacks neighbouring frames twice with view(batch, time //
2, feat * 2): its data sets are at T = 8, 12 and 4 (the lengths must divide
by 4), verified from one build.  ContextCatGRU concatenates two inputs of
run-time lengths along time (its GRU runs seq2 + seq steps), PadToLongest pads
one input by the difference of the two lengths (seq - seq2), TruncatedLSTM
reads x[:, :10] (min(seq, 10) steps, data at T = 8, 11 and 5) and
LastKMeanGRU averages out[:, -4:] (min(seq, 4) steps, data at T = 8, 11 and
3), GatherFramesGRU cuts overlapping frames with torch.arange indices
(floor((seq - 1) / 2) frames): each verified at every length from one build.

case.json: model (the class), tags (the forms it uses), stacked (per
recurrence, in the order `cellc dump` lists them, whether it must keep its
output sequence: 1 where some step other than the final state's is read, 0
where only the final state is, or nothing, or only the step computed first:
a reverse recurrence's under a bidirectional out[:, -1], which then runs
that step alone; a direction of which nothing is read is not run and not
listed), refused and fix (for an export cellc must refuse: text
its message must hold, and the options that compile it for its data sets;
else absent), fixed_size (for an export whose model fixes a size the file
leaves dynamic: text the warning of `cellc compile` must hold; else absent), traced_loops (the Python loops over time the trace unrolled:
the decoders' fixed step loops, each step fed the step before's output,
which cellc lists as a fallback; 0 for the others).

usage: gen_torch_wild.py OUTDIR [CASE ...]
"""
import contextlib
import io
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

warnings.filterwarnings("ignore")

VOCAB, EMB, INPUT, HIDDEN, CLASSES = 20, 6, 4, 8, 3


# ---- the models ---------------------------------------------------------------------------

class SentimentRNN(nn.Module):
    """Embedding, a 2-layer LSTM with dropout between layers, a hidden state
    made by init_hidden from the batch size, every step through Linear and
    sigmoid, then view(batch, -1)[:, -1]: the last step's probability."""
    tags = ["tokens", "init_hidden", "view_flatten", "last_of_flattened"]
    # the head runs on every step before the last is kept, behind a
    # Reshape that splits the merged batch and time rows: pass_hoist moves
    # the Gather of the last step before the merge (sink_gather_rows), and
    # the head runs on that step alone
    stacked = [1, 0]

    def __init__(self):
        super().__init__()
        self.n_layers, self.hidden_dim = 2, HIDDEN
        self.embedding = nn.Embedding(VOCAB, EMB)
        self.lstm = nn.LSTM(EMB, HIDDEN, 2, dropout=0.5, batch_first=True)
        self.dropout = nn.Dropout(0.3)
        self.fc = nn.Linear(HIDDEN, 1)
        self.sig = nn.Sigmoid()

    def init_hidden(self, batch_size):
        weight = next(self.parameters()).data
        return (weight.new(self.n_layers, batch_size, self.hidden_dim).zero_(),
                weight.new(self.n_layers, batch_size, self.hidden_dim).zero_())

    def forward(self, x):
        batch_size = x.size(0)
        hidden = self.init_hidden(batch_size)
        embeds = self.embedding(x)
        lstm_out, hidden = self.lstm(embeds, hidden)
        lstm_out = lstm_out.contiguous().view(-1, self.hidden_dim)
        out = self.dropout(lstm_out)
        out = self.fc(out)
        sig_out = self.sig(out)
        sig_out = sig_out.view(batch_size, -1)
        sig_out = sig_out[:, -1]
        return sig_out


class BiLSTMText(nn.Module):
    """Embedding, a bidirectional 2-layer LSTM, the last layer's two final
    states concatenated (hidden[-2], hidden[-1]), dropout, Linear."""
    tags = ["tokens", "bidirectional", "cat_final_states"]
    stacked = [1, 1, 0, 0]

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB)
        self.rnn = nn.LSTM(EMB, HIDDEN, num_layers=2, bidirectional=True, dropout=0.2)
        self.fc = nn.Linear(HIDDEN * 2, CLASSES)
        self.dropout = nn.Dropout(0.5)

    def forward(self, text):
        embedded = self.dropout(self.embedding(text))
        output, (hidden, cell) = self.rnn(embedded)
        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        return self.fc(hidden)


class LSTMForecaster(nn.Module):
    """Time-series regression: zero states made in forward() with
    requires_grad_ and detached, batch_first, Linear on out[:, -1, :]."""
    tags = ["zeros_in_forward", "detach", "batch_first", "out_last"]
    stacked = [1, 0]

    def __init__(self, input_dim=INPUT, hidden_dim=HIDDEN, layer_dim=2, output_dim=1):
        super(LSTMForecaster, self).__init__()
        self.hidden_dim = hidden_dim
        self.layer_dim = layer_dim
        self.lstm = nn.LSTM(input_dim, hidden_dim, layer_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, output_dim)

    def forward(self, x):
        h0 = torch.zeros(self.layer_dim, x.size(0), self.hidden_dim).requires_grad_()
        c0 = torch.zeros(self.layer_dim, x.size(0), self.hidden_dim).requires_grad_()
        out, (hn, cn) = self.lstm(x, (h0.detach(), c0.detach()))
        out = self.fc(out[:, -1, :])
        return out


class GRUNet(nn.Module):
    """GRU with the state as an argument, ReLU then Linear on out[:, -1];
    returns the prediction and the new state."""
    tags = ["state_input", "state_output", "batch_first", "out_last", "relu_head"]
    stacked = [1, 0]
    state = ("h", 2)        # name, layers

    def __init__(self, input_dim=INPUT, hidden_dim=HIDDEN, output_dim=2, n_layers=2):
        super(GRUNet, self).__init__()
        self.gru = nn.GRU(input_dim, hidden_dim, n_layers, batch_first=True, dropout=0.2)
        self.fc = nn.Linear(hidden_dim, output_dim)
        self.relu = nn.ReLU()

    def forward(self, x, h):
        out, h = self.gru(x, h)
        out = self.fc(self.relu(out[:, -1]))
        return out, h


class AttnBiGRU(nn.Module):
    """Bidirectional GRU, additive attention over time: scores from
    tanh(Linear(out)) and a vector, softmax over the time axis, the
    weighted sum by bmm."""
    tags = ["bidirectional", "attention", "softmax_time", "bmm", "batch_first"]
    stacked = [1, 1]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.W = nn.Linear(2 * HIDDEN, 2 * HIDDEN)
        self.v = nn.Linear(2 * HIDDEN, 1, bias=False)
        self.out = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.gru(x)                               # [B, T, 2H]
        scores = self.v(torch.tanh(self.W(out)))           # [B, T, 1]
        weights = F.softmax(scores, dim=1)
        context = torch.bmm(weights.transpose(1, 2), out).squeeze(1)
        return self.out(context)


class MaxPoolLSTM(nn.Module):
    """Max over time of the outputs (torch.max(out, dim=1)), Linear."""
    tags = ["max_pool_time", "batch_first"]
    stacked = [1]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.linear = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        lstm_out, _ = self.lstm(x)
        pooled, _ = torch.max(lstm_out, dim=1)
        return self.linear(pooled)


class MeanPoolGRU(nn.Module):
    """Mean over time (out.mean(dim=0)) of a sequence-first GRU, Linear,
    log_softmax."""
    tags = ["mean_pool_time", "log_softmax"]
    stacked = [1]

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(INPUT, HIDDEN, num_layers=1)
        self.cls = nn.Linear(HIDDEN, CLASSES)

    def forward(self, seq):
        out, _ = self.rnn(seq)
        return F.log_softmax(self.cls(out.mean(dim=0)), dim=-1)


class CharLM(nn.Module):
    """Character language model: tokens sequence-first, LSTM with its
    state passed in and returned, every step decoded through
    view(-1, H), logits viewed back to [T, B, V]."""
    tags = ["tokens", "state_input", "state_output", "view_every_step"]
    stacked = [1]
    state = ("hc", 1)

    def __init__(self):
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, EMB)
        self.rnn = nn.LSTM(EMB, HIDDEN, 1)
        self.decoder = nn.Linear(HIDDEN, VOCAB)
        self.nhid = HIDDEN

    def forward(self, input, h, c):
        emb = self.encoder(input)
        output, (h, c) = self.rnn(emb, (h, c))
        decoded = self.decoder(output.view(output.size(0) * output.size(1), output.size(2)))
        return decoded.view(output.size(0), output.size(1), decoded.size(1)), h, c


class TwoLSTMs(nn.Module):
    """Two nn.LSTM modules stacked by hand with dropout between them, the
    second one's h_n[-1] into Linear."""
    tags = ["stacked_modules", "dropout", "h_n_last"]
    stacked = [1, 0]

    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTM(input_size=INPUT, hidden_size=12, batch_first=True)
        self.drop = nn.Dropout(0.25)
        self.lstm2 = nn.LSTM(input_size=12, hidden_size=HIDDEN, batch_first=True)
        self.dense = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        x, _ = self.lstm1(x)
        x = self.drop(x)
        x, (h, _) = self.lstm2(x)
        return self.dense(h[-1])


class ResidualLSTM(nn.Module):
    """Two LSTMs of the same width with a residual sum of their outputs,
    Linear on the last step."""
    tags = ["residual", "stacked_modules", "out_last"]
    stacked = [1, 0]

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(INPUT, HIDDEN)
        self.l1 = nn.LSTM(HIDDEN, HIDDEN)
        self.l2 = nn.LSTM(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        x = self.proj(x)
        y1, _ = self.l1(x)
        y2, _ = self.l2(y1)
        y = y1 + y2
        return self.head(y[-1])


class CRNN(nn.Module):
    """Keyword spotting: Conv1d over [batch, features, time] (same
    padding), BatchNorm, ReLU, permute to [time, batch, channels], GRU,
    Linear on the last step."""
    tags = ["conv_front_end", "batchnorm", "permute", "out_last"]
    stacked = [0]
    layout = "bft"          # the input is [batch, features, time]

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(INPUT, 6, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm1d(6)
        self.gru = nn.GRU(6, HIDDEN)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = x.permute(2, 0, 1)
        out, _ = self.gru(x)
        return self.fc(out[-1])


class PermutedInputLSTM(nn.Module):
    """Batch-first data permuted to a sequence-first LSTM, out[-1]."""
    tags = ["permute", "out_last"]
    stacked = [1, 0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, num_layers=2)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        x = x.permute(1, 0, 2)
        output, _ = self.lstm(x)
        return self.fc(output[-1])


class LayerNormGRU(nn.Module):
    """GRU, LayerNorm on every step's output, Linear on every step."""
    tags = ["layernorm", "every_step"]
    stacked = [1]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.norm = nn.LayerNorm(HIDDEN)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.fc(self.norm(y))


class PixelRNN(nn.Module):
    """Images [batch, rows, cols] read as a sequence of pixels:
    x.view(x.size(0), -1, 1), a tanh RNN, Linear on out[:, -1, :]."""
    tags = ["pixels", "view_sequence", "out_last", "batch_first"]
    stacked = [0]
    layout = "image"

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(1, HIDDEN, batch_first=True, nonlinearity="tanh")
        self.fc = nn.Linear(HIDDEN, 10)

    def forward(self, x):
        x = x.view(x.size(0), -1, 1)
        out, _ = self.rnn(x)
        return self.fc(out[:, -1, :])


class HnViewBi(nn.Module):
    """Bidirectional 2-layer LSTM, h_n viewed as [layers, directions,
    batch, hidden], the last layer's two directions moved to the batch's
    rows and flattened."""
    tags = ["bidirectional", "h_n_view", "transpose_reshape"]
    stacked = [1, 1, 0, 0]

    def __init__(self):
        super().__init__()
        self.num_layers = 2
        self.lstm = nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        _, (h_n, _) = self.lstm(x)
        h_n = h_n.view(self.num_layers, 2, x.size(0), HIDDEN)[-1]
        h = h_n.transpose(0, 1).reshape(x.size(0), 2 * HIDDEN)
        return self.fc(h)


class BiLSTMLastStep(nn.Module):
    """Bidirectional LSTM, Linear on out[:, -1, :] (the forward direction's
    last step beside the backward direction's first)."""
    tags = ["bidirectional", "out_last", "batch_first"]
    stacked = [0, 0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


class StreamingGRU(nn.Module):
    """A deployed streaming GRU: the state [1, batch, H] comes in and goes
    out, a Linear and sigmoid on every step."""
    tags = ["state_input", "state_output", "every_step", "sigmoid"]
    stacked = [1]
    state = ("h", 1)

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(INPUT, HIDDEN)
        self.gru = nn.GRU(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, 1)

    def forward(self, x, state):
        x = torch.relu(self.inp(x))
        y, state = self.gru(x, state)
        return torch.sigmoid(self.out(y)), state


class GreedyDecoder(nn.Module):
    """An encoder GRU, then a decoder GRU run one step at a time for a
    fixed number of steps, feeding back its own Linear output."""
    tags = ["encoder_decoder", "step_loop", "fixed_steps"]
    # the decoder's one-step calls chain their states: written as their
    # steps (pass_onestep), then rolled as a generated loop (each step fed
    # the one before's [1, B, 2] output) whose outputs torch.cat stacks
    stacked = [0, 1]
    traced_loops = 1
    STEPS = 4

    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(INPUT, HIDDEN)
        self.dec = nn.GRU(2, HIDDEN)
        self.proj = nn.Linear(HIDDEN, 2)

    def forward(self, x):
        _, h = self.enc(x)
        inp = torch.zeros(1, x.size(1), 2)
        outs = []
        for _ in range(self.STEPS):
            o, h = self.dec(inp, h)
            inp = self.proj(o)
            outs.append(inp)
        return torch.cat(outs, dim=0)


class AttnSeq2Seq(nn.Module):
    """Translation as the PyTorch tutorial writes it: an embedding and GRU
    encoder, then a decoder run step by step for a fixed number of steps,
    each with additive (Bahdanau) attention over the encoder's outputs
    (tanh(Wa q + Ua keys), softmax, bmm), the embedding of its previous
    greedy prediction (argmax) and a one-step GRU; log_softmax over the
    vocabulary."""
    tags = ["tokens", "encoder_decoder", "attention", "bmm", "argmax_feedback", "step_loop", "batch_first"]
    # the encoder's keys, then the decoder's steps (see GreedyDecoder): a
    # generated loop whose first step reads the encoder's h_n [1, B, H]
    # where the others read h.unsqueeze(0) of the step before, its token
    # fed back as an f32 state, its [B, 1, V] logits stacked on axis 1
    stacked = [1, 1]
    traced_loops = 1
    STEPS = 4

    def __init__(self):
        super().__init__()
        self.src_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.encoder = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
        self.tgt_embedding = nn.Embedding(VOCAB, HIDDEN)
        self.Wa, self.Ua, self.Va = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, 1)
        self.decoder = nn.GRU(2 * HIDDEN, HIDDEN, batch_first=True)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, src):
        keys, hidden = self.encoder(self.src_embedding(src))
        token = torch.zeros(src.size(0), 1, dtype=torch.long)
        outputs = []
        for _ in range(self.STEPS):
            query = hidden.permute(1, 0, 2)
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).squeeze(2).unsqueeze(1)
            context = torch.bmm(F.softmax(scores, dim=-1), keys)
            step, hidden = self.decoder(torch.cat((self.tgt_embedding(token), context), dim=2), hidden)
            logits = self.out(step)
            outputs.append(logits)
            token = logits.argmax(-1)
        return F.log_softmax(torch.cat(outputs, dim=1), dim=-1)


class TopKSteps(nn.Module):
    """A GRU scoring every step, the three best steps of each sequence
    (values and indices: topk over the run-time time axis)."""
    tags = ["topk_time", "batch_first", "int64_output"]
    stacked = [1]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.score = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.score(out).squeeze(-1).topk(3, dim=1)


class BiLSTMSelfAttention(nn.Module):
    """A bidirectional LSTM, nn.MultiheadAttention over its outputs (two
    heads, batch first), a residual LayerNorm, the mean over time."""
    tags = ["bidirectional", "multihead_attention", "layernorm", "residual", "mean_pool_time", "batch_first"]
    stacked = [1, 1]
    export_with_grad = True

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.attn = nn.MultiheadAttention(2 * HIDDEN, 2, batch_first=True)
        self.norm = nn.LayerNorm(2 * HIDDEN)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.lstm(x)
        a, _ = self.attn(out, out, out)
        return self.fc(self.norm(out + a).mean(1))


class GRUTransformer(nn.Module):
    """A GRU under an nn.TransformerEncoderLayer (batch first), Linear on
    the first position."""
    tags = ["transformer_encoder_layer", "first_position", "batch_first"]
    stacked = [1]
    export_with_grad = True

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.encoder = nn.TransformerEncoderLayer(HIDDEN, 2, 16, dropout=0.0, batch_first=True)
        self.fc = nn.Linear(HIDDEN, 2)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(self.encoder(out)[:, 0])


class LSTMAutoencoder(nn.Module):
    """Sequence autoencoder (anomaly detection): the encoder's h_n[-1]
    repeated over time with repeat(1, T, 1) (a Tile by the run-time length),
    a decoder LSTM, Linear on every step."""
    tags = ["autoencoder", "repeat_time", "h_n_last", "batch_first", "every_step"]
    stacked = [0, 1]

    def __init__(self):
        super().__init__()
        self.encoder = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.decoder = nn.LSTM(HIDDEN, HIDDEN, batch_first=True)
        self.output_layer = nn.Linear(HIDDEN, INPUT)

    def forward(self, x):
        _, (hidden, _) = self.encoder(x)
        z = hidden[-1].unsqueeze(1).repeat(1, x.size(1), 1)
        decoded, _ = self.decoder(z)
        return self.output_layer(decoded)


class GRUAutoencoder(nn.Module):
    """The same with GRUs, sequence first, h_n expanded over time."""
    tags = ["autoencoder", "expand_time", "every_step"]
    stacked = [0, 1]

    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(INPUT, HIDDEN)
        self.dec = nn.GRU(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, INPUT)

    def forward(self, x):
        _, h = self.enc(x)
        y, _ = self.dec(h.expand(x.size(0), -1, -1))
        return self.out(y)


class ConvPoolLSTM(nn.Module):
    """Time-series classifier: Conv1d over time (same padding), ReLU,
    MaxPool1d(2) halving the length, an LSTM, Linear on out[:, -1]."""
    tags = ["conv_front_end", "max_pool_time", "batch_first", "out_last"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(INPUT, 6, kernel_size=3, padding=1)
        self.pool = nn.MaxPool1d(2)
        self.lstm = nn.LSTM(6, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        z = self.pool(F.relu(self.conv(x.transpose(1, 2)))).transpose(1, 2)
        out, _ = self.lstm(z)
        return self.fc(out[:, -1])


class ConcatPoolGRU(nn.Module):
    """Concat pooling (fast.ai's text classifiers): the last step, the
    mean and the max over time side by side, Linear."""
    tags = ["concat_pooling", "out_last", "mean_pool_time", "max_pool_time", "batch_first"]
    stacked = [1]

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(3 * HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(torch.cat([out[:, -1], out.mean(1), out.max(1)[0]], 1))


class LearnedInitLSTM(nn.Module):
    """Learned initial states: [1, 1, H] parameters expanded to the batch
    and made contiguous, Linear on out[-1]."""
    tags = ["learned_initial_state", "expand_batch", "out_last"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.h0 = nn.Parameter(torch.randn(1, 1, HIDDEN) * 0.5)
        self.c0 = nn.Parameter(torch.randn(1, 1, HIDDEN) * 0.5)
        self.lstm = nn.LSTM(INPUT, HIDDEN)
        self.fc = nn.Linear(HIDDEN, 2)

    def forward(self, x):
        B = x.size(1)
        out, _ = self.lstm(x, (self.h0.expand(-1, B, -1).contiguous(), self.c0.expand(-1, B, -1).contiguous()))
        return self.fc(out[-1])


class SiameseLSTM(nn.Module):
    """One LSTM on two sequences of different lengths (sentence pairs), the
    two h_n[-1] concatenated, Linear and sigmoid."""
    tags = ["siamese", "shared_weights", "two_inputs", "h_n_last", "batch_first"]
    pair = True
    stacked = [0, 0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(2 * HIDDEN, 1)

    def forward(self, a, b):
        _, (ha, _) = self.lstm(a)
        _, (hb, _) = self.lstm(b)
        return torch.sigmoid(self.fc(torch.cat([ha[-1], hb[-1]], 1)))


class PackedLSTM(nn.Module):
    """Padded token batches of unsorted lengths through
    pack_padded_sequence(enforce_sorted=False) (which the exporter writes as
    a TopK sort of the lengths, the LSTM on sequence_lens and a scatter that
    undoes the sort), Linear on h_n[-1]: each row's state at its own
    length."""
    tags = ["tokens", "lengths", "pack_padded_sequence", "unsorted", "h_n_last"]
    lengths = "any"
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, EMB, padding_idx=0)
        self.lstm = nn.LSTM(EMB, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embedding(x), lengths, batch_first=True,
                                                   enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.fc(h[-1])


class PackedLSTMState(nn.Module):
    """The same with the initial states as inputs (what PyTorch's export
    warning asks for), so the batch stays dynamic: the sort's K is the batch
    size; returns the logits and the final states, in the caller's order."""
    tags = ["lengths", "pack_padded_sequence", "unsorted", "state_input", "state_output"]
    lengths = "any"
    state = ("hc", 1)
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x, lengths, h0, c0):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (h, c) = self.lstm(packed, (h0, c0))
        return self.fc(h[-1]), h, c


class PackedBiGRU(nn.Module):
    """Lengths sorted longest first (enforce_sorted=True), a bidirectional
    GRU on the packed batch, pad_packed_sequence, the sum over time (the
    padding is zeros), Linear."""
    tags = ["lengths", "pack_padded_sequence", "pad_packed_sequence", "bidirectional", "sum_time"]
    lengths = "sorted"
    stacked = [1, 1]

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
        out, _ = self.rnn(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return self.fc(out.sum(dim=1))


class HeadThenLastLSTM(nn.Module):
    """A head on every step of a batch_first LSTM's [batch, T, H] output
    (Linear there is MatMul and Add), then the last step: fc(out)[:, -1, :]."""
    tags = ["batch_first", "every_step_head", "last_after_head"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out)[:, -1, :]


class SliceHeadGRU(nn.Module):
    """A batch_first GRU, Linear and tanh on every step, the last step kept
    as a slice of length one: torch.tanh(fc(out))[:, -1:, :]."""
    tags = ["batch_first", "every_step_head", "slice_last"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.gru(x)
        return torch.tanh(self.fc(out))[:, -1:, :]


class FlatHeadGRU(nn.Module):
    """Time-major 2-layer GRU; out.view(seq_len * batch, -1) through Linear,
    ReLU, Linear and log_softmax, then view(seq_len, batch, -1)[-1]."""
    tags = ["view_flatten", "log_softmax", "last_of_flattened"]
    stacked = [1, 0]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, num_layers=2)
        self.fc1 = nn.Linear(HIDDEN, 16)
        self.fc2 = nn.Linear(16, CLASSES)

    def forward(self, x):
        seq_len, batch, _ = x.shape
        out, _ = self.gru(x)
        z = F.log_softmax(self.fc2(F.relu(self.fc1(out.view(seq_len * batch, -1)))), dim=1)
        return z.view(seq_len, batch, -1)[-1]


class ScoreLastRNN(nn.Module):
    """A tanh RNN scoring every step, torch.sigmoid(score(out)).squeeze(-1),
    and the last step's score: [:, -1]."""
    tags = ["batch_first", "every_step_head", "squeeze", "last_after_head"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(INPUT, HIDDEN, batch_first=True)
        self.score = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return torch.sigmoid(self.score(out)).squeeze(-1)[:, -1]


class ReshapeHeadLSTM(nn.Module):
    """out.reshape(-1, out.size(2)), dropout and Linear on every row, then
    reshape(x.size(0), x.size(1), -1)[:, -1, :]."""
    tags = ["batch_first", "reshape_flatten", "size_arithmetic", "last_of_flattened"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.lstm(x)
        y = self.fc(self.drop(out.reshape(-1, out.size(2))))
        return y.reshape(x.size(0), x.size(1), -1)[:, -1, :]


class BiGRUHalves(nn.Module):
    """Text classifier: embedding, bidirectional GRU, the final states read
    as halves of the output, cat(out[:, -1, :H], out[:, 0, H:])."""
    tags = ["tokens", "bidirectional", "batch_first", "output_halves"]
    stacked = [0, 0]

    def __init__(self):
        super().__init__()
        self.hidden_dim = HIDDEN
        self.embedding = nn.Embedding(VOCAB, EMB)
        self.gru = nn.GRU(EMB, HIDDEN, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.gru(self.embedding(x))
        last = torch.cat((out[:, -1, :self.hidden_dim], out[:, 0, self.hidden_dim:]), dim=1)
        return self.fc(last)


class ChunkBiLSTM(nn.Module):
    """Time-major bidirectional LSTM, its output chunked into the two
    directions, the forward's last step beside the backward's first,
    Linear and log_softmax."""
    tags = ["bidirectional", "chunk", "output_halves"]
    stacked = [0, 0]

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, bidirectional=True)
        self.out = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        outputs, _ = self.lstm(x)
        forward_out, backward_out = outputs.chunk(2, dim=2)
        h = torch.cat([forward_out[-1], backward_out[0]], dim=-1)
        return F.log_softmax(self.out(h), dim=-1)


class ViewDirsBiLSTM(nn.Module):
    """Bidirectional LSTM whose output is viewed as [batch, seq, 2, H]
    and read per direction, o[:, -1, 0] and o[:, 0, 1], then tanh."""
    tags = ["bidirectional", "batch_first", "output_view_dirs"]
    stacked = [0, 0]

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        batch_size, seq_len = x.size(0), x.size(1)
        out, _ = self.rnn(x)
        out = out.view(batch_size, seq_len, 2, HIDDEN)
        fwd, bwd = out[:, -1, 0, :], out[:, 0, 1, :]
        return self.proj(torch.tanh(torch.cat((fwd, bwd), 1)))


class SplitSumBiGRU(nn.Module):
    """Two-layer bidirectional GRU, the top layer's output split into its
    directions with torch.split and their final steps summed."""
    tags = ["bidirectional", "split", "output_halves", "stacked_layers"]
    stacked = [1, 1, 0, 0]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, num_layers=2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(HIDDEN, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        f, b = torch.split(out, HIDDEN, dim=-1)
        return torch.sigmoid(self.fc(f[:, -1] + b[:, 0])).squeeze(-1)


class ForwardHalfBiLSTM(nn.Module):
    """Bidirectional LSTM of which only the forward direction's last step
    is read, out[:, -1, :hidden_size]: the reverse direction is not run."""
    tags = ["bidirectional", "batch_first", "output_halves", "unread_direction"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.hidden_size = HIDDEN
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :self.hidden_size])


class LastHiddenBiGRU(nn.Module):
    """Bidirectional GRU classified from h_n[-1] alone, the reverse
    direction's final state: the forward direction is not run."""
    tags = ["bidirectional", "h_n_last", "unread_direction"]
    stacked = [0]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, bidirectional=True)
        self.classifier = nn.Sequential(nn.Dropout(0.1), nn.Linear(HIDDEN, CLASSES))

    def forward(self, x):
        _, h_n = self.gru(x)
        return self.classifier(h_n[-1])


class FlipBiGRU(nn.Module):
    """A bidirectional layer written by hand: one GRU on the sequence, one
    on torch.flip of it, flipped back; the classifier reads the forward
    GRU's last step and the flipped-back backward output's first."""
    tags = ["bidirectional_by_hand", "flip", "batch_first"]
    stacked = [0, 0]

    def __init__(self):
        super().__init__()
        self.fwd = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.bwd = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        out_f, _ = self.fwd(x)
        out_b, _ = self.bwd(torch.flip(x, dims=[1]))
        out_b = torch.flip(out_b, dims=[1])
        return self.fc(torch.cat([out_f[:, -1, :], out_b[:, 0, :]], dim=-1))


class DeepSpeechConv(nn.Module):
    """Speech recogniser front end after DeepSpeech 2: a spectrogram [batch,
    1, freq, time], Conv2d with stride 2 over both axes (padding 2 and 1),
    Hardtanh, the channels and the halved frequencies flattened per frame, a
    bidirectional GRU over floor((time + 1) / 2) frames, Linear per frame."""
    tags = ["conv2d_front_end", "strided_time", "flatten_freq", "bidirectional", "per_step_head"]
    stacked = [1, 1]
    layout = "b1ft"

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, kernel_size=(5, 3), stride=(2, 2), padding=(2, 1))
        self.gru = nn.GRU(3 * 4, HIDDEN, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        z = F.hardtanh(self.conv(x), 0, 20)                 # [B, 3, 4, T']
        b, c, f, t = z.size()
        z = z.view(b, c * f, t).permute(2, 0, 1)            # [T', B, 12]
        out, _ = self.gru(z)
        return self.fc(out)


class CRNNWidth(nn.Module):
    """Text-line recogniser (CRNN): an image [batch, 1, 8, width], Conv2d
    3x3 same, ReLU, MaxPool2d(2) halving the height and the run-time width,
    the columns as the sequence, a bidirectional LSTM, Linear per column."""
    tags = ["conv2d_front_end", "max_pool_width", "bidirectional", "per_step_head"]
    stacked = [1, 1]
    layout = "b1ft"

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.lstm = nn.LSTM(4 * 4, HIDDEN, bidirectional=True)
        self.fc = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        z = self.pool(F.relu(self.conv(x)))                 # [B, 4, 4, W / 2]
        z = z.flatten(1, 2).permute(2, 0, 1)                # [W / 2, B, 16]
        out, _ = self.lstm(z)
        return self.fc(out)


class PyramidalListener(nn.Module):
    """The listener of Listen, Attend and Spell: pyramidal bidirectional
    LSTMs, each halving the frames by stacking neighbours,
    `x.contiguous().view(batch, time // 2, feat * 2)` with the sizes read
    from `x.size()` (T // 2, then (T // 2) // 2: the frames must divide by
    4, which the model itself requires)."""
    tags = ["frame_stacking", "floor_div_size", "bidirectional", "batch_first"]
    stacked = [1, 1, 1, 1]
    sizes = [(3, 12), (1, 4)]

    def __init__(self):
        super().__init__()
        self.l1 = nn.LSTM(INPUT * 2, HIDDEN, batch_first=True, bidirectional=True)
        self.l2 = nn.LSTM(HIDDEN * 4, HIDDEN, batch_first=True, bidirectional=True)

    def pyramid(self, lstm, x):
        batch, time, feat = x.size()
        x = x.contiguous().view(batch, time // 2, feat * 2)
        out, _ = lstm(x)
        return out

    def forward(self, x):
        return self.pyramid(self.l2, self.pyramid(self.l1, x))


class ContextCatGRU(nn.Module):
    """A streaming recogniser's chunk with its left context (the frames
    kept from the call before, as many as the caller has): torch.cat of the
    context and the chunk along time, both of run-time length, a GRU over
    the seq2 + seq frames, Linear on the last step."""
    tags = ["concat_lengths", "two_inputs", "batch_first", "out_last"]
    stacked = [0]
    pair = True

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x, context):
        out, _ = self.gru(torch.cat([context, x], dim=1))
        return self.fc(out[:, -1])


class PadToLongest(nn.Module):
    """Two feature streams of different run-time lengths, the shorter padded
    with zeros at its end to the longer's length (F.pad by the difference of
    their x.size(1)), summed, an LSTM, Linear on every step."""
    tags = ["pad_to_length", "size_difference", "two_inputs", "batch_first", "per_step_head"]
    stacked = [1]
    pair = True

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x, aux):
        aux = F.pad(aux, (0, 0, 0, x.size(1) - aux.size(1)))
        out, _ = self.lstm(x + aux)
        return self.fc(out)


class TruncatedLSTM(nn.Module):
    """A classifier that reads at most max_len steps (x[:, :self.max_len],
    the truncation of long inputs): data at T = 8 and 5, shorter, and 11,
    longer, all from one build; Linear on h_n[-1]."""
    tags = ["truncate", "min_length", "batch_first", "h_n_last"]
    stacked = [0]
    max_len = 10

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        _, (h, _) = self.lstm(x[:, :self.max_len])
        return self.fc(h[-1])


class LastKMeanGRU(nn.Module):
    """The mean of the last four steps' outputs (out[:, -4:].mean(1), as
    many as there are): T = 8, 11 and 3 from one build, Linear."""
    tags = ["last_k", "min_length", "mean_pool", "batch_first"]
    stacked = [1]
    sizes = [(3, 11), (1, 3)]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[:, -4:].mean(1))


class GatherFramesGRU(nn.Module):
    """Overlapping frames of 3 steps with a hop of 2, cut by hand (x.unfold
    with a run-time length does not export): the frame count from x.size(1)
    in Python integer arithmetic, the indices made with torch.arange, x[:,
    idx] (a Gather of an [n, 3] index over the time axis), each frame
    flattened, a GRU over the (T - 3) // 2 + 1 frames, Linear per frame."""
    tags = ["unfold_like", "arange_indices", "floor_div_size", "batch_first", "per_step_head"]
    stacked = [1]

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3 * INPUT, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        n = (x.size(1) - 3) // 2 + 1
        idx = torch.arange(n).unsqueeze(1) * 2 + torch.arange(3).unsqueeze(0)
        frames = x[:, idx]                                  # [B, n, 3, I]
        out, _ = self.gru(frames.reshape(frames.size(0), frames.size(1), -1))
        return self.fc(out)


MODELS = [SentimentRNN, BiLSTMText, LSTMForecaster, GRUNet, AttnBiGRU, MaxPoolLSTM, MeanPoolGRU,
          CharLM, TwoLSTMs, ResidualLSTM, CRNN, PermutedInputLSTM, LayerNormGRU, PixelRNN, HnViewBi,
          BiLSTMLastStep, StreamingGRU, GreedyDecoder, AttnSeq2Seq, TopKSteps, BiLSTMSelfAttention,
          GRUTransformer, LSTMAutoencoder, GRUAutoencoder, ConvPoolLSTM, ConcatPoolGRU, LearnedInitLSTM,
          SiameseLSTM, PackedLSTM, PackedLSTMState, PackedBiGRU, HeadThenLastLSTM, FlatHeadGRU, ScoreLastRNN,
          ReshapeHeadLSTM, SliceHeadGRU, BiGRUHalves, ChunkBiLSTM, ViewDirsBiLSTM, SplitSumBiGRU,
          ForwardHalfBiLSTM, LastHiddenBiGRU, FlipBiGRU, DeepSpeechConv, CRNNWidth, ContextCatGRU, PadToLongest,
          TruncatedLSTM, LastKMeanGRU, GatherFramesGRU]


# ---- export -------------------------------------------------------------------------------

def inputs_of(cls, model, b, t, gen):
    """(names, tensors, dynamic axes) of cls's inputs at batch b, length t."""
    bf = any(m.batch_first for m in model.modules() if isinstance(m, nn.RNNBase))
    layout = getattr(cls, "layout", "bti" if bf else "tbi")
    tokens = "tokens" in cls.tags
    if layout == "b1ft":                # a spectrogram or a text line: 8 rows, a run-time width
        x = torch.from_numpy(gen.standard_normal((b, 1, 8, t)).astype(np.float32))
        axes = {0: "batch", 3: "seq"}
    elif layout == "image":
        x = torch.from_numpy(gen.uniform(0, 1, (b, t, 2)).astype(np.float32))
        axes = {0: "batch", 1: "rows"}
    elif tokens:
        shape = (b, t) if bf else (t, b)
        x = torch.from_numpy(gen.integers(0, VOCAB, shape).astype(np.int64))
        axes = {0: "batch", 1: "seq"} if bf else {0: "seq", 1: "batch"}
    else:
        shape = {"bti": (b, t, INPUT), "tbi": (t, b, INPUT), "bft": (b, INPUT, t)}[layout]
        x = torch.from_numpy(gen.standard_normal(shape).astype(np.float32))
        axes = {"bti": {0: "batch", 1: "seq"}, "tbi": {0: "seq", 1: "batch"}, "bft": {0: "batch", 2: "seq"}}[layout]
    names, tensors, dyn = ["x"], [x], {"x": axes}
    if getattr(cls, "pair", False):     # a second sequence of its own length, shorter by 2
        names.append("x2")
        tensors.append(torch.from_numpy(gen.standard_normal((b, max(t - 2, 1), INPUT)).astype(np.float32)))
        dyn["x2"] = {0: "batch", 1: "seq2"}
    if hasattr(cls, "lengths"):         # one row of the whole length, the others shorter
        n = np.concatenate([[t], gen.integers(1, t + 1, b - 1)]).astype(np.int64)
        n = -np.sort(-n) if cls.lengths == "sorted" else gen.permutation(n)
        names.append("lengths")
        tensors.append(torch.from_numpy(n))
        dyn["lengths"] = {0: "batch"}
    if hasattr(cls, "state"):
        kind, layers = cls.state
        for n in (["h", "c"] if kind == "hc" else ["h"]):
            names.append(n)
            tensors.append(torch.from_numpy(gen.standard_normal((layers, b, HIDDEN)).astype(np.float32)))
            dyn[n] = {1: "batch"}
    return names, tensors, dyn


def write_pb(path, arr, name):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(np.ascontiguousarray(arr), name).SerializeToString())


def export(outdir, name, seed, cls, dynamic_batch=True, dynamic_seq=True, refused=None, fix=None, fixed_size=None):
    torch.manual_seed(seed)
    model = cls().eval()
    gen = np.random.default_rng(seed)
    names, example, dyn = inputs_of(cls, model, 2, 8, gen)
    fixed = [n for n, on in (("batch", dynamic_batch), ("seq", dynamic_seq)) if not on]
    dyn = {k: {a: n for a, n in v.items() if n not in fixed} for k, v in dyn.items()}
    with torch.no_grad():
        outs = model(*example)
    outs = outs if isinstance(outs, tuple) else (outs,)
    out_names = ["y%d" % k for k in range(len(outs))]
    f = io.BytesIO()
    # under no_grad, eval-mode attention takes PyTorch's fused fast path,
    # which the exporter cannot write: those models export with autograd on
    with torch.no_grad() if not getattr(cls, "export_with_grad", False) else contextlib.nullcontext():
        torch.onnx.export(model, tuple(example), f, opset_version=14, input_names=names,
                          output_names=out_names, dynamic_axes={k: v for k, v in dyn.items() if v})
    onnx_model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(onnx_model)
    d = os.path.join(outdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.save(onnx_model, os.path.join(d, "model.onnx"))
    sizes = [] if refused else [(2, 11)] if fixed_size else {(True, True): [(3, 11), (1, 5)], (False, True): [(2, 11)],
                                (True, False): [(3, 8), (1, 8)], (False, False): []}[dynamic_batch, dynamic_seq]
    sizes = getattr(cls, "sizes", sizes)     # a model that needs other lengths says so
    sets = [example] + [inputs_of(cls, model, b, t, gen)[1] for b, t in sizes]
    for k, ins in enumerate(sets):
        with torch.no_grad():
            outs = model(*ins)
        outs = outs if isinstance(outs, tuple) else (outs,)
        ds = os.path.join(d, "test_data_set_%d" % k)
        os.makedirs(ds)
        for j, (n, a) in enumerate(zip(names, ins)):
            write_pb(os.path.join(ds, "input_%d.pb" % j), a.numpy(), n)
        for j, (n, a) in enumerate(zip(out_names, outs)):
            write_pb(os.path.join(ds, "output_%d.pb" % j), a.numpy(), n)
    case = {"model": cls.__name__, "tags": cls.tags, "stacked": cls.stacked,
            "traced_loops": getattr(cls, "traced_loops", 0)}
    if refused:
        case["refused"], case["fix"] = refused, fix
    if fixed_size:
        case["fixed_size"] = fixed_size
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
        f.write("\n")


# (case name, model, options of export)
CASES = [(m.__name__, m, {"dynamic_batch": m not in (SentimentRNN, PackedLSTM, PackedBiGRU),
                          "dynamic_seq": m is not ConvPoolLSTM}) for m in MODELS] + [
    ("SentimentRNN_dynamic_batch", SentimentRNN, {"fixed_size": "size 'batch' must be 2"}),
    ("ConvPoolLSTM_dynamic_seq", ConvPoolLSTM, {}),
    ("PyramidalListener", PyramidalListener, {})]


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__.strip().splitlines()[-1])
    out, only = args[0], set(args[1:])
    unknown = only - {c[0] for c in CASES}
    if unknown:
        sys.exit("gen_torch_wild.py: no such case: %s" % ", ".join(sorted(unknown)))
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    n = 0
    for seed, (name, cls, opts) in enumerate(CASES):
        if not only or name in only:
            export(out, name, 3000 + seed, cls, **opts)
            n += 1
    print("gen_torch_wild: %d cases in %s" % (n, out))


if __name__ == "__main__":
    main()
