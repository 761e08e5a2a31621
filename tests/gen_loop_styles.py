"""gen_loop_styles.py: traced PyTorch loops in the styles of issue 46, each
class written as the tutorial, example repository or paper's repository it
follows writes it (in this project's own words: the forms kept, the code
not copied), for the harness group loop_styles.

The styles, and the models that carry them (MODELS below; `source` in each
case.json names what was read before writing the class):

  a second phase fed the model's own output
      pytorch/examples' time_sequence_prediction in double precision with its
      `future` steps; the PyTorch char-RNN generation tutorial sampling with
      topk into a one-hot; the PyTorch seq2seq tutorial's Bahdanau decoder
      (topk, squeeze(-1).detach()); the chatbot tutorial's
      GreedySearchDecoder (torch.max, tokens grown by torch.cat); the
      bentrevett/pytorch-seq2seq attention decoder (argmax, writes into
      outputs[t]); an LSTM encoder-decoder forecaster (lkulowski style,
      outputs[t] = prediction fed back); a ConvLSTM encoder-decoder
      (holmdk style) whose decoder is fed its own last output; the
      spro/practical-pytorch char-RNN primed and then sampled by argmax
  nn.GRU / nn.LSTM called once per step with sequence length 1
      the seq2seq tutorial's classic encoder (token by token into
      encoder_outputs[ei]) and attention decoder; pytorch/examples'
      word_language_model RNNModel fed one token per call (two layers);
      the decoders above
  a convolutional cell
      jhhuang96/ConvLSTM-PyTorch (seq-first frames, Conv2d + GroupNorm over
      cat(x, h)) and its ConvGRU as an encoder-forecaster over zero frames;
      automan000's peephole ConvLSTM (a Conv2d per gate and source, a `step`
      loop over one input, states in a list of tuples, effective steps);
      a Moving-MNIST ConvLSTM over [B, C, T, H, W] (X[:, :, t], peepholes
      of the frame's size, output[:, :, t] = H)
  element-wise recurrences over a computed tensor split along time
      salesforce/pytorch-qrnn with window 2 and a hidden state; the fastai
      forget-mult, batch-first and backwards; StefOe's IndRNN (unbind, a
      BatchNorm1d between layers) and Sunnydreamrain's IndRNN_onlyrecurrent
      (`for input_t in input`, Linear and BatchNorm over time)
  per-step reads of tables
      PyPOTS's GRU-D backbone (X[:, t, :], masks, deltas, LOCF values and
      the empirical mean as inputs, `range(self.n_steps)`); a GRU-D whose
      decays are computed over the whole sequence and read by step; a GRU
      cell fed a sinusoidal table's row per step; a clockwork RNN whose
      active modules are a per-step constant
  linear state updates, a dead last step
      the PyTorch char-RNN classification tutorial (i2h(cat(input, hidden)),
      the last step's i2h unused); the conditional char-RNN fed a whole
      name; a discretised state-space model's recurrent scan; a diagonal
      linear recurrence (LRU style)
  double precision, lists of lists, stacks along any axis, x[:, t] on 4-D
  and 5-D inputs
      a double GRUCell; LSTMCells whose states are a list of [h, c] lists,
      outputs stacked on axis 2; spectrogram frames [B, T, C, F] read by
      x[:, t]; video frames [B, T, C, H, W] through a CNN into an LSTMCell;
      image rows img[:, 0, t] of a 4-D batch; PyTorch's own custom_lstms.py
      (a LayerNorm LSTM over input.unbind(0), a reversed layer)

Each model is exported once (opset 13, 14 or 17), traced at T = 8, with a
dynamic time axis where the export allows it:
  CASE/model.onnx
  CASE/test_data_set_0/     the traced T (8), batch 2 (1 where the model
                            holds batch 1)
  CASE/test_data_set_1/     T = 12 from the same file (a dynamic time
                            axis); for a model whose only loops generate
                            (each step fed the one before: T is the
                            model's own), other inputs at that T
  CASE/other/model.onnx, CASE/other/test_data_set_0/
                            where the export cannot hold a dynamic time
                            axis: the same weights exported at T = 12
  CASE/case.json            model, class, source (what its style follows),
      style (tags), loops: one entry per loop of the source, in order, each
      {cell: the docs/cells.md cell `cellc info` must name (with its hidden
      size) or null (not a known cell: not checked), generated: the steps
      of a loop whose T is the model's own or null, onnx: the recurrences
      of an ONNX recurrent operator (a whole-sequence nn.GRU/nn.LSTM: 1, 2
      when bidirectional) or 0 for a traced loop}, T, second_T, second
      ("dynamic", "inputs" or "export"), dynamic_axes, hidden, batch, tol
      ("f64" for double precision models)

Goldens come from the PyTorch model itself (eval mode, no_grad,
torch.manual_seed per model, numpy inputs from a per-case seed).  Models
that feed back an argmax or topk are checked for ties first: every step's
two largest scores differ by at least MARGIN, or other inputs are drawn, so
that a float32 rounding cannot change the token.

usage: gen_loop_styles.py OUTDIR [MODEL ...]      (every model, about 15 seconds)
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

INPUT, HIDDEN, VOCAB, CATS, BATCH, T_TRACE, T_OTHER = 3, 8, 11, 4, 2, 8, 12
FRAME_C, FRAME_H, FRAME_W = 2, 5, 6
MARGIN = 1e-3
SOS_token = 0


# =============================================================================
# A second phase fed the model's own output
# =============================================================================

class SineWavePredictor(nn.Module):
    """pytorch/examples time_sequence_prediction/train.py's Sequence: two
    LSTMCells and a Linear in one loop over input.split(1, dim=1) of a
    [B, T] series in double precision (the example calls .double() and
    makes its zero states with dtype=torch.double), then `future` more
    steps fed their own prediction; torch.cat(outputs, dim=1).  (Its older
    form, input.chunk(input.size(1), dim=1), does not export: PyTorch 1.13
    refuses an unsafe_chunk of a traced count.)"""

    def __init__(self, hidden, future=3):
        super().__init__()
        self.hidden = hidden
        self.future = future
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
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
        return torch.cat(outputs, dim=1)


class NameGenRNN(nn.Module):
    """The PyTorch char_rnn_generation_tutorial's RNN: i2h and i2o over
    cat(category, input, hidden) -- the new hidden state is a linear
    function, no activation -- then o2o over cat(hidden, output), dropout
    and LogSoftmax."""

    def __init__(self, n_categories, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, input, hidden):
        input_combined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output_combined = torch.cat((hidden, output), 1)
        output = self.o2o(output_combined)
        output = self.dropout(output)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


class NameSampler(nn.Module):
    """The tutorial's sample(): from a category and a start letter (one-hot
    [1, n_letters], batch 1), max_length steps, each step's topk(1) letter
    made the next step's one-hot input (scatter_ into zeros: the tutorial
    rebuilds it in Python, which a trace cannot follow); no EOS break."""

    def __init__(self, n_categories, n_letters, hidden, max_length=T_TRACE):
        super().__init__()
        self.rnn = NameGenRNN(n_categories, n_letters, hidden, n_letters)
        self.max_length = max_length

    def forward(self, category_tensor, input):
        hidden = self.rnn.initHidden()
        outputs = []
        for i in range(self.max_length):
            output, hidden = self.rnn(category_tensor, input, hidden)
            topv, topi = output.topk(1)
            outputs.append(output)
            input = torch.zeros_like(input).scatter_(1, topi, 1.0)
        return torch.cat(outputs, 0)


class TutorialEncoderRNN(nn.Module):
    """The PyTorch seq2seq_translation_tutorial's EncoderRNN (current
    version): embedding, dropout, one batch-first nn.GRU over the sentence."""

    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    """The tutorial's additive attention: Va(tanh(Wa(query) + Ua(keys))),
    squeeze(2).unsqueeze(1), softmax, bmm with the keys."""

    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class TutorialAttnDecoderRNN(nn.Module):
    """The tutorial's AttnDecoderRNN: a start token made with
    torch.empty(...).fill_(SOS_token), forward_step per step (embedding,
    the query hidden.permute(1, 0, 2), the attention's context cat'ed to
    the embedding, a one-step batch-first nn.GRU, out), greedy decoding by
    `_, topi = decoder_output.topk(1)` and topi.squeeze(-1).detach(); the
    step outputs torch.cat'ed on dim 1, then log_softmax."""

    def __init__(self, hidden_size, output_size, max_length, dropout_p=0.1):
        super().__init__()
        self.max_length = max_length
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []
        for i in range(self.max_length):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()
        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


class TutorialTranslator(nn.Module):
    """The tutorial's evaluate(): encoder, then the decoder with no target."""

    def __init__(self, vocab, hidden, max_length=6):
        super().__init__()
        self.encoder = TutorialEncoderRNN(vocab, hidden)
        self.decoder = TutorialAttnDecoderRNN(hidden, vocab, max_length)

    def forward(self, input_tensor):
        encoder_outputs, encoder_hidden = self.encoder(input_tensor)
        decoder_outputs, decoder_hidden, attentions = self.decoder(encoder_outputs, encoder_hidden)
        return decoder_outputs, attentions


class ChatEncoderRNN(nn.Module):
    """The PyTorch chatbot tutorial's EncoderRNN: a shared embedding, a
    bidirectional nn.GRU, the two directions' outputs summed by slicing."""

    def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
        super().__init__()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embedding = embedding
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                          dropout=(0 if n_layers == 1 else dropout), bidirectional=True)

    def forward(self, input_seq, hidden=None):
        embedded = self.embedding(input_seq)
        outputs, hidden = self.gru(embedded, hidden)
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
        return outputs, hidden


class LuongAttn(nn.Module):
    """The chatbot tutorial's Attn layer, method 'dot': torch.sum of the
    product over the hidden axis, .t(), softmax(dim=1).unsqueeze(1)."""

    def __init__(self, method, hidden_size):
        super().__init__()
        if method not in ("dot", "general"):
            raise ValueError(method)
        self.method = method
        if method == "general":
            self.attn = nn.Linear(hidden_size, hidden_size)

    def dot_score(self, hidden, encoder_output):
        return torch.sum(hidden * encoder_output, dim=2)

    def general_score(self, hidden, encoder_output):
        energy = self.attn(encoder_output)
        return torch.sum(hidden * energy, dim=2)

    def forward(self, hidden, encoder_outputs):
        if self.method == "general":
            attn_energies = self.general_score(hidden, encoder_outputs)
        else:
            attn_energies = self.dot_score(hidden, encoder_outputs)
        attn_energies = attn_energies.t()
        return F.softmax(attn_energies, dim=1).unsqueeze(1)


class LuongAttnDecoderRNN(nn.Module):
    """The chatbot tutorial's decoder, one step per call: embedding and its
    dropout, a one-step nn.GRU, the attention over every encoder output
    recomputed from the new state, bmm, concat, tanh, out, softmax."""

    def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
        super().__init__()
        self.n_layers = n_layers
        self.embedding = embedding
        self.embedding_dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
        self.concat = nn.Linear(hidden_size * 2, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)
        self.attn = LuongAttn(attn_model, hidden_size)

    def forward(self, input_step, last_hidden, encoder_outputs):
        embedded = self.embedding(input_step)
        embedded = self.embedding_dropout(embedded)
        rnn_output, hidden = self.gru(embedded, last_hidden)
        attn_weights = self.attn(rnn_output, encoder_outputs)
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
        rnn_output = rnn_output.squeeze(0)
        context = context.squeeze(1)
        concat_input = torch.cat((rnn_output, context), 1)
        concat_output = torch.tanh(self.concat(concat_input))
        output = self.out(concat_output)
        output = F.softmax(output, dim=1)
        return output, hidden


class GreedySearchDecoder(nn.Module):
    """The chatbot tutorial's GreedySearchDecoder (batch 1): the decoder's
    state from encoder_hidden[:n_layers], a start token torch.ones(1, 1) *
    SOS, torch.max(decoder_output, dim=1) giving the score and the token,
    tokens and scores grown by torch.cat from empty tensors, the token
    unsqueezed back to [1, 1]."""

    def __init__(self, vocab, hidden, max_length=6):
        super().__init__()
        embedding = nn.Embedding(vocab, hidden)
        self.encoder = ChatEncoderRNN(hidden, embedding)
        self.decoder = LuongAttnDecoderRNN("dot", embedding, hidden, vocab)
        self.max_length = max_length

    def forward(self, input_seq):
        encoder_outputs, encoder_hidden = self.encoder(input_seq)
        decoder_hidden = encoder_hidden[:self.decoder.n_layers]
        decoder_input = torch.ones(1, 1, dtype=torch.long) * SOS_token
        all_tokens = torch.zeros([0], dtype=torch.long)
        all_scores = torch.zeros([0])
        for _ in range(self.max_length):
            decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
            decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
            all_tokens = torch.cat((all_tokens, decoder_input), dim=0)
            all_scores = torch.cat((all_scores, decoder_scores), dim=0)
            decoder_input = torch.unsqueeze(decoder_input, 0)
        return all_tokens, all_scores


class BiGRUBridgeEncoder(nn.Module):
    """bentrevett/pytorch-seq2seq notebook 3's Encoder: a bidirectional
    nn.GRU, its initial decoder state tanh(fc(cat(hidden[-2], hidden[-1])))."""

    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.GRU(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        embedded = self.dropout(self.embedding(src))
        outputs, hidden = self.rnn(embedded)
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class AdditiveAttention(nn.Module):
    """The notebook's Attention: the state repeated src_len times, the
    encoder outputs permuted batch first, tanh(attn_fc(cat)), v_fc,
    squeeze(2), softmax(dim=1)."""

    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn_fc = nn.Linear(enc_hid_dim * 2 + dec_hid_dim, dec_hid_dim)
        self.v_fc = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_length = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_length, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn_fc(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v_fc(energy).squeeze(2)
        return torch.softmax(attention, dim=1)


class AttnGRUDecoder(nn.Module):
    """The notebook's Decoder, one step per call: input.unsqueeze(0), the
    weighted encoder outputs by bmm, cat with the embedding into a one-step
    nn.GRU (hidden.unsqueeze(0)), fc_out over cat(output, weighted,
    embedded); returns hidden.squeeze(0)."""

    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.GRU(enc_hid_dim * 2 + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear(enc_hid_dim * 2 + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, encoder_outputs):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs)
        a = a.unsqueeze(1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        weighted = torch.bmm(a, encoder_outputs)
        weighted = weighted.permute(1, 0, 2)
        rnn_input = torch.cat((embedded, weighted), dim=2)
        output, hidden = self.rnn(rnn_input, hidden.unsqueeze(0))
        embedded = embedded.squeeze(0)
        output = output.squeeze(0)
        weighted = weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        return prediction, hidden.squeeze(0), a.squeeze(1)


class AttnSeq2Seq(nn.Module):
    """The notebook's Seq2Seq.forward in evaluation (teacher forcing ratio
    0: every step fed `top1 = output.argmax(1)`): outputs preallocated by
    torch.zeros(trg_length, batch, vocab) and written by outputs[t] =
    output for t in 1 .. trg_length - 1, the first input trg[0, :]."""

    def __init__(self, vocab, emb, hidden, teacher_forcing_ratio=0.0):
        super().__init__()
        attn = AdditiveAttention(hidden, hidden)
        self.encoder = BiGRUBridgeEncoder(vocab, emb, hidden, hidden, 0.5)
        self.decoder = AttnGRUDecoder(vocab, emb, hidden, hidden, 0.5, attn)
        self.teacher_forcing_ratio = teacher_forcing_ratio

    def forward(self, src, trg):
        batch_size = src.shape[1]
        trg_length = trg.shape[0]
        trg_vocab_size = self.decoder.output_dim
        outputs = torch.zeros(trg_length, batch_size, trg_vocab_size)
        encoder_outputs, hidden = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_length):
            output, hidden, _ = self.decoder(input, hidden, encoder_outputs)
            outputs[t] = output
            teacher_force = self.teacher_forcing_ratio > 0.5    # random.random() < ratio, ratio 0
            top1 = output.argmax(1)
            input = trg[t] if teacher_force else top1
        return outputs


class lstm_encoder(nn.Module):
    """An LSTM encoder-decoder forecaster as lkulowski/LSTM_encoder_decoder
    writes it (lower-case class names, self.hidden kept on the module): an
    nn.LSTM over the whole window, x_input.view(T, B, input_size)."""

    def __init__(self, input_size, hidden_size, num_layers=1):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)

    def forward(self, x_input):
        lstm_out, self.hidden = self.lstm(x_input.view(x_input.shape[0], x_input.shape[1], self.input_size))
        return lstm_out, self.hidden


class lstm_decoder(nn.Module):
    """The decoder: a one-step nn.LSTM on x_input.unsqueeze(0), a Linear
    back to the input size on lstm_out.squeeze(0)."""

    def __init__(self, input_size, hidden_size, num_layers=1):
        super().__init__()
        self.lstm = nn.LSTM(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        self.linear = nn.Linear(hidden_size, input_size)

    def forward(self, x_input, encoder_hidden_states):
        lstm_out, self.hidden = self.lstm(x_input.unsqueeze(0), encoder_hidden_states)
        output = self.linear(lstm_out.squeeze(0))
        return output, self.hidden


class lstm_seq2seq(nn.Module):
    """predict(): the encoder's (h, c) handed to the decoder, the window's
    last row input_tensor[-1, :, :] its first input, each prediction
    written into outputs[t] (torch.zeros(target_len, B, F)) and fed back."""

    def __init__(self, input_size, hidden_size, target_len=5):
        super().__init__()
        self.encoder = lstm_encoder(input_size, hidden_size)
        self.decoder = lstm_decoder(input_size, hidden_size)
        self.target_len = target_len

    def forward(self, input_tensor):
        outputs = torch.zeros(self.target_len, input_tensor.shape[1], input_tensor.shape[2])
        encoder_output, encoder_hidden = self.encoder(input_tensor)
        decoder_input = input_tensor[-1, :, :]
        decoder_hidden = encoder_hidden
        for t in range(self.target_len):
            decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden)
            outputs[t] = decoder_output
            decoder_input = decoder_output
        return outputs


class CharRNN(nn.Module):
    """spro/practical-pytorch char-rnn-generation's model: encoder
    Embedding on input.view(1, -1), a one-step nn.GRU on input.view(1, 1,
    -1), decoder Linear on output.view(1, -1); init_hidden zeros."""

    def __init__(self, input_size, hidden_size, output_size, n_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.encoder = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers)
        self.decoder = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        input = self.encoder(input.view(1, -1))
        output, hidden = self.gru(input.view(1, 1, -1), hidden)
        output = self.decoder(output.view(1, -1))
        return output, hidden

    def init_hidden(self):
        return torch.zeros(self.n_layers, 1, self.hidden_size)


class PrimeThenGenerate(nn.Module):
    """The repository's generate(): the priming string fed one character
    at a time for `len(prime_str) - 1` steps, then predict_len steps from
    its last character, each fed the previous step's choice (argmax here:
    the tutorial samples with torch.multinomial, which no export
    reproduces).  Returns the logits of every generated step."""

    def __init__(self, vocab, hidden, predict_len=6):
        super().__init__()
        self.decoder = CharRNN(vocab, hidden, vocab)
        self.predict_len = predict_len

    def forward(self, prime_input):
        hidden = self.decoder.init_hidden()
        for p in range(prime_input.size(0) - 1):
            _, hidden = self.decoder(prime_input[p], hidden)
        inp = prime_input[-1]
        logits = []
        for p in range(self.predict_len):
            output, hidden = self.decoder(inp, hidden)
            logits.append(output)
            inp = output.argmax(dim=1)
        return torch.cat(logits, 0)


# =============================================================================
# nn.GRU / nn.LSTM called once per step
# =============================================================================

class ClassicEncoderRNN(nn.Module):
    """The seq2seq tutorial's first EncoderRNN: embedding(input).view(1, 1,
    -1) into a one-step nn.GRU; initHidden() zeros(1, 1, H)."""

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


class ClassicAttnDecoderRNN(nn.Module):
    """Its first AttnDecoderRNN: attention weights from a Linear over
    cat(embedded[0], hidden[0]) with max_length outputs, bmm with the
    encoder outputs (unsqueeze(0) both), attn_combine, relu, a one-step
    nn.GRU, log_softmax(out(output[0]))."""

    def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=T_OTHER):
        super().__init__()
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.max_length = max_length
        self.embedding = nn.Embedding(self.output_size, self.hidden_size)
        self.attn = nn.Linear(self.hidden_size * 2, self.max_length)
        self.attn_combine = nn.Linear(self.hidden_size * 2, self.hidden_size)
        self.dropout = nn.Dropout(dropout_p)
        self.gru = nn.GRU(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, self.output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        embedded = self.dropout(embedded)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = self.attn_combine(output).unsqueeze(0)
        output = F.relu(output)
        output, hidden = self.gru(output, hidden)
        output = F.log_softmax(self.out(output[0]), dim=1)
        return output, hidden, attn_weights


class ClassicTranslator(nn.Module):
    """The tutorial's evaluate() (batch 1, tokens [T, 1]): `for ei in
    range(input_length)` through the encoder one token at a time, each
    output added into encoder_outputs[ei] of a zeros(max_length, H); then
    decode_length greedy steps, decoder_output.data.topk(1) and
    topi.squeeze().detach() as the next input (no EOS break)."""

    def __init__(self, vocab, hidden, max_length=T_OTHER, decode_length=5):
        super().__init__()
        self.max_length = max_length
        self.decode_length = decode_length
        self.encoder = ClassicEncoderRNN(vocab, hidden)
        self.decoder = ClassicAttnDecoderRNN(hidden, vocab, max_length=max_length)

    def forward(self, input_tensor):
        encoder_hidden = self.encoder.initHidden()
        input_length = input_tensor.size(0)
        encoder_outputs = torch.zeros(self.max_length, self.encoder.hidden_size)
        for ei in range(input_length):
            encoder_output, encoder_hidden = self.encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] += encoder_output[0, 0]
        decoder_input = torch.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        decoded = []
        attentions = []
        for di in range(self.decode_length):
            decoder_output, decoder_hidden, decoder_attention = self.decoder(
                decoder_input, decoder_hidden, encoder_outputs)
            attentions.append(decoder_attention.data)
            decoded.append(decoder_output)
            topv, topi = decoder_output.data.topk(1)
            decoder_input = topi.squeeze().detach()
        return torch.cat(decoded, 0), torch.cat(attentions, 0)


class RNNModel(nn.Module):
    """pytorch/examples word_language_model's RNNModel (LSTM, two layers):
    drop(encoder(input)), the nn.LSTM, drop, decoder, view(-1, ntoken),
    log_softmax; init_hidden from weight.new_zeros."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


class TokenStreamLM(nn.Module):
    """The example's model fed one time step per call (tokens[i].unsqueeze(0),
    [1, B]) as a streaming reader does, the (h, c) tuple of [2, B, H]
    carried; the per-step log-probabilities stacked, the final states."""

    def __init__(self, vocab, emb, hidden):
        super().__init__()
        self.model = RNNModel("LSTM", vocab, emb, hidden, 2)

    def forward(self, tokens):
        hidden = self.model.init_hidden(tokens.size(1))
        outs = []
        for i in range(tokens.size(0)):
            output, hidden = self.model(tokens[i].unsqueeze(0), hidden)
            outs.append(output)
        return torch.stack(outs), hidden[0], hidden[1]


class GlobalAttention(nn.Module):
    """OpenNMT-py's GlobalAttention, 'general': the query through
    linear_in, bmm against the memory bank, softmax, the context by bmm,
    linear_out over cat(context, query), tanh."""

    def __init__(self, dim):
        super().__init__()
        self.linear_in = nn.Linear(dim, dim, bias=False)
        self.linear_out = nn.Linear(dim * 2, dim, bias=False)

    def forward(self, source, memory_bank):
        h_t = self.linear_in(source).unsqueeze(1)
        align = torch.bmm(h_t, memory_bank.transpose(1, 2))
        align_vectors = F.softmax(align.squeeze(1), dim=-1)
        c = torch.bmm(align_vectors.unsqueeze(1), memory_bank).squeeze(1)
        attn_h = torch.tanh(self.linear_out(torch.cat([c, source], 1)))
        return attn_h, align_vectors


class InputFeedDecoder(nn.Module):
    """OpenNMT-py's InputFeedRNNDecoder, teacher forced: the target's
    embeddings split one step at a time (emb.split(1)), each cat'ed with the
    previous attentional vector (input feeding) into an nn.LSTMCell, the
    attention over the memory bank [B, S, H] recomputed every step, the
    decoder outputs stacked; the encoder's states and memory bank are
    inputs."""

    def __init__(self, vocab, emb_dim, hidden):
        super().__init__()
        self.hidden_size = hidden
        self.embeddings = nn.Embedding(vocab, emb_dim)
        self.rnn = nn.LSTMCell(emb_dim + hidden, hidden)
        self.attn = GlobalAttention(hidden)
        self.dropout = nn.Dropout(0.3)

    def forward(self, tgt, memory_bank, h0, c0):
        emb = self.embeddings(tgt)
        dec_state = (h0, c0)
        input_feed = h0.new_zeros(h0.size(0), self.hidden_size)
        dec_outs = []
        for emb_t in emb.split(1):
            decoder_input = torch.cat([emb_t.squeeze(0), input_feed], 1)
            rnn_output, c = self.rnn(decoder_input, dec_state)
            dec_state = (rnn_output, c)
            decoder_output, p_attn = self.attn(rnn_output, memory_bank)
            decoder_output = self.dropout(decoder_output)
            input_feed = decoder_output
            dec_outs += [decoder_output]
        return torch.stack(dec_outs)


# =============================================================================
# Convolutional cells
# =============================================================================

class CLSTMCell(nn.Module):
    """jhhuang96/ConvLSTM-PyTorch's CLSTM_cell: frames seq-first [S, B, C,
    H, W] read by inputs[index, ...], one Conv2d + GroupNorm over cat(x, hx)
    split into i, f, g, o with torch.split; zero states when none is given;
    returns torch.stack(output_inner) and (hy, cy).  The loop runs seq_len,
    which the caller passes (the frames' count here)."""

    def __init__(self, shape, input_channels, filter_size, num_features):
        super().__init__()
        self.shape = shape
        self.input_channels = input_channels
        self.num_features = num_features
        self.padding = (filter_size - 1) // 2
        self.conv = nn.Sequential(
            nn.Conv2d(input_channels + num_features, 4 * num_features, filter_size, 1, self.padding),
            nn.GroupNorm(2, 4 * num_features))

    def forward(self, inputs=None, hidden_state=None, seq_len=10):
        if hidden_state is None:
            hx = torch.zeros(inputs.size(1), self.num_features, self.shape[0], self.shape[1])
            cx = torch.zeros(inputs.size(1), self.num_features, self.shape[0], self.shape[1])
        else:
            hx, cx = hidden_state
        output_inner = []
        for index in range(seq_len):
            if inputs is None:
                x = torch.zeros(hx.size(0), self.input_channels, self.shape[0], self.shape[1])
            else:
                x = inputs[index, ...]
            combined = torch.cat((x, hx), 1)
            gates = self.conv(combined)
            ingate, forgetgate, cellgate, outgate = torch.split(gates, self.num_features, dim=1)
            ingate = torch.sigmoid(ingate)
            forgetgate = torch.sigmoid(forgetgate)
            cellgate = torch.tanh(cellgate)
            outgate = torch.sigmoid(outgate)
            cy = (forgetgate * cx) + (ingate * cellgate)
            hy = outgate * torch.tanh(cy)
            output_inner.append(hy)
            hx = hy
            cx = cy
        return torch.stack(output_inner), (hy, cy)


class CLSTMEncoder(nn.Module):
    def __init__(self, channels, features):
        super().__init__()
        self.cell = CLSTMCell((FRAME_H, FRAME_W), channels, 3, features)

    def forward(self, frames):
        outputs, (h, c) = self.cell(frames, None, seq_len=frames.size(0))
        return outputs, h, c


class CGRUCell(nn.Module):
    """The repository's CGRU_cell: z and r from one Conv2d + GroupNorm over
    cat(x, h) split by torch.split, the candidate from a second Conv2d +
    GroupNorm over cat(x, r * h); with inputs None it runs on zero frames
    (the forecaster's decoder)."""

    def __init__(self, shape, input_channels, filter_size, num_features):
        super().__init__()
        self.shape = shape
        self.input_channels = input_channels
        self.num_features = num_features
        self.padding = (filter_size - 1) // 2
        self.conv1 = nn.Sequential(
            nn.Conv2d(input_channels + num_features, 2 * num_features, filter_size, 1, self.padding),
            nn.GroupNorm(2, 2 * num_features))
        self.conv2 = nn.Sequential(
            nn.Conv2d(input_channels + num_features, num_features, filter_size, 1, self.padding),
            nn.GroupNorm(1, num_features))

    def forward(self, inputs=None, hidden_state=None, seq_len=10):
        if hidden_state is None:
            htprev = torch.zeros(inputs.size(1), self.num_features, self.shape[0], self.shape[1])
        else:
            htprev = hidden_state
        output_inner = []
        for index in range(seq_len):
            if inputs is None:
                x = torch.zeros(htprev.size(0), self.input_channels, self.shape[0], self.shape[1])
            else:
                x = inputs[index, ...]
            combined_1 = torch.cat((x, htprev), 1)
            gates = self.conv1(combined_1)
            zgate, rgate = torch.split(gates, self.num_features, dim=1)
            z = torch.sigmoid(zgate)
            r = torch.sigmoid(rgate)
            combined_2 = torch.cat((x, r * htprev), 1)
            ht = self.conv2(combined_2)
            ht = torch.tanh(ht)
            htnext = (1 - z) * htprev + z * ht
            output_inner.append(htnext)
            htprev = htnext
        return torch.stack(output_inner), htnext


class CGRUForecaster(nn.Module):
    """An encoder-forecaster of CGRU cells (the repository's encoder.py /
    decoder.py, one stage each): the encoder over the observed frames, the
    forecaster from its state over `future` zero frames."""

    def __init__(self, channels, features, future=4):
        super().__init__()
        self.encoder = CGRUCell((FRAME_H, FRAME_W), channels, 3, features)
        self.forecaster = CGRUCell((FRAME_H, FRAME_W), channels, 3, features)
        self.future = future

    def forward(self, frames):
        _, state = self.encoder(frames, None, seq_len=frames.size(0))
        predictions, _ = self.forecaster(None, state, seq_len=self.future)
        return predictions


class PeepholeConvLSTMCell(nn.Module):
    """automan000/Convolutional_LSTM_PyTorch's ConvLSTMCell: a Conv2d per
    gate and source (Wxi with bias, Whi without, ...), peephole weights
    Wci, Wcf, Wco of shape [1, C, H, W] made by init_hidden (the repository
    makes them zeros on first use; here they are made in __init__ and drawn
    small, so that they count)."""

    def __init__(self, input_channels, hidden_channels, kernel_size, shape):
        super().__init__()
        self.input_channels = input_channels
        self.hidden_channels = hidden_channels
        self.padding = int((kernel_size - 1) / 2)
        conv = lambda cin, bias: nn.Conv2d(cin, hidden_channels, kernel_size, 1, self.padding, bias=bias)
        self.Wxi, self.Whi = conv(input_channels, True), conv(hidden_channels, False)
        self.Wxf, self.Whf = conv(input_channels, True), conv(hidden_channels, False)
        self.Wxc, self.Whc = conv(input_channels, True), conv(hidden_channels, False)
        self.Wxo, self.Who = conv(input_channels, True), conv(hidden_channels, False)
        self.Wci = nn.Parameter(0.1 * torch.randn(1, hidden_channels, shape[0], shape[1]))
        self.Wcf = nn.Parameter(0.1 * torch.randn(1, hidden_channels, shape[0], shape[1]))
        self.Wco = nn.Parameter(0.1 * torch.randn(1, hidden_channels, shape[0], shape[1]))

    def forward(self, x, h, c):
        ci = torch.sigmoid(self.Wxi(x) + self.Whi(h) + c * self.Wci)
        cf = torch.sigmoid(self.Wxf(x) + self.Whf(h) + c * self.Wcf)
        cc = cf * c + ci * torch.tanh(self.Wxc(x) + self.Whc(h))
        co = torch.sigmoid(self.Wxo(x) + self.Who(h) + cc * self.Wco)
        ch = co * torch.tanh(cc)
        return ch, cc

    def init_hidden(self, batch_size, hidden, shape):
        return (torch.zeros(batch_size, hidden, shape[0], shape[1]),
                torch.zeros(batch_size, hidden, shape[0], shape[1]))


class PeepholeConvLSTM(nn.Module):
    """The repository's ConvLSTM: one image [B, C, H, W] fed to every one
    of `step` steps, the layers run inside the step loop, their states a
    list of (h, c) tuples made at step 0 (getattr of 'cell{i}'), the last
    layer's output kept at the effective steps."""

    def __init__(self, input_channels, hidden_channels, kernel_size, step=5, effective_step=(2, 4)):
        super().__init__()
        self.input_channels = [input_channels] + hidden_channels
        self.hidden_channels = hidden_channels
        self.num_layers = len(hidden_channels)
        self.step = step
        self.effective_step = list(effective_step)
        self._all_layers = []
        for i in range(self.num_layers):
            name = "cell{}".format(i)
            cell = PeepholeConvLSTMCell(self.input_channels[i], self.hidden_channels[i], kernel_size,
                                        (FRAME_H, FRAME_W))
            setattr(self, name, cell)
            self._all_layers.append(cell)

    def forward(self, input):
        internal_state = []
        outputs = []
        for step in range(self.step):
            x = input
            for i in range(self.num_layers):
                name = "cell{}".format(i)
                if step == 0:
                    bsize, _, height, width = x.size()
                    (h, c) = getattr(self, name).init_hidden(batch_size=bsize, hidden=self.hidden_channels[i],
                                                             shape=(height, width))
                    internal_state.append((h, c))
                (h, c) = internal_state[i]
                x, new_c = getattr(self, name)(x, h, c)
                internal_state[i] = (x, new_c)
            if step in self.effective_step:
                outputs.append(x)
        return outputs[0], outputs[1], x, new_c


class FrameConvLSTMCell(nn.Module):
    """The Moving-MNIST ConvLSTM of a widely read tutorial: the activation
    chosen by name, one Conv2d over cat([X, H_prev], dim=1) chunked in four,
    peepholes W_ci, W_co, W_cf of the frame's size [C, H, W]."""

    def __init__(self, in_channels, out_channels, kernel_size, padding, activation, frame_size):
        super().__init__()
        self.activation = torch.tanh if activation == "tanh" else torch.relu
        self.conv = nn.Conv2d(in_channels=in_channels + out_channels, out_channels=4 * out_channels,
                              kernel_size=kernel_size, padding=padding)
        self.W_ci = nn.Parameter(0.1 * torch.randn(out_channels, *frame_size))
        self.W_co = nn.Parameter(0.1 * torch.randn(out_channels, *frame_size))
        self.W_cf = nn.Parameter(0.1 * torch.randn(out_channels, *frame_size))

    def forward(self, X, H_prev, C_prev):
        conv_output = self.conv(torch.cat([X, H_prev], dim=1))
        i_conv, f_conv, C_conv, o_conv = torch.chunk(conv_output, chunks=4, dim=1)
        input_gate = torch.sigmoid(i_conv + self.W_ci * C_prev)
        forget_gate = torch.sigmoid(f_conv + self.W_cf * C_prev)
        C = forget_gate * C_prev + input_gate * self.activation(C_conv)
        output_gate = torch.sigmoid(o_conv + self.W_co * C)
        H = output_gate * self.activation(C)
        return H, C


class FrameConvLSTM(nn.Module):
    """Its ConvLSTM layer: X [B, C, T, H, W] (time on axis 2), the output
    preallocated [B, C_out, T, H, W] and written output[:, :, time_step] =
    H, each step reading X[:, :, time_step]."""

    def __init__(self, in_channels, out_channels, kernel_size, padding, activation, frame_size):
        super().__init__()
        self.out_channels = out_channels
        self.convLSTMcell = FrameConvLSTMCell(in_channels, out_channels, kernel_size, padding, activation,
                                              frame_size)

    def forward(self, X):
        batch_size, _, seq_len, height, width = X.size()
        output = torch.zeros(batch_size, self.out_channels, seq_len, height, width)
        H = torch.zeros(batch_size, self.out_channels, height, width)
        C = torch.zeros(batch_size, self.out_channels, height, width)
        for time_step in range(seq_len):
            H, C = self.convLSTMcell(X[:, :, time_step], H, C)
            output[:, :, time_step] = H
        return output


class FrameSeq2Seq(nn.Module):
    """Its Seq2Seq: nn.Sequential of the ConvLSTM layer and a BatchNorm3d,
    then a Conv2d over the last frame output[:, :, -1] and a sigmoid."""

    def __init__(self, num_channels, num_kernels, kernel_size, padding, activation, frame_size):
        super().__init__()
        self.sequential = nn.Sequential()
        self.sequential.add_module("convlstm1", FrameConvLSTM(num_channels, num_kernels, kernel_size, padding,
                                                              activation, frame_size))
        self.sequential.add_module("batchnorm1", nn.BatchNorm3d(num_features=num_kernels))
        self.conv = nn.Conv2d(num_kernels, num_channels, kernel_size, padding=padding)

    def forward(self, X):
        output = self.sequential(X)
        output = self.conv(output[:, :, -1])
        return torch.sigmoid(output)


class NdrplzConvLSTMCell(nn.Module):
    """The ndrplz/ConvLSTM_pytorch cell that many repositories reuse: one
    Conv2d over cat([input_tensor, h_cur], dim=1), torch.split by the
    hidden size into i, f, o, g."""

    def __init__(self, input_dim, hidden_dim, kernel_size, bias):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.conv = nn.Conv2d(input_dim + hidden_dim, 4 * hidden_dim, kernel_size, padding=self.padding, bias=bias)

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined = torch.cat([input_tensor, h_cur], dim=1)
        cc_i, cc_f, cc_o, cc_g = torch.split(self.conv(combined), self.hidden_dim, dim=1)
        i = torch.sigmoid(cc_i)
        f = torch.sigmoid(cc_f)
        o = torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        h_next = o * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (torch.zeros(batch_size, self.hidden_dim, height, width),
                torch.zeros(batch_size, self.hidden_dim, height, width))


class EncoderDecoderConvLSTM(nn.Module):
    """A video-prediction EncoderDecoderConvLSTM (holmdk style): two encoder
    cells in one loop over x[:, t, :, :] of [B, T, C, H, W], the encoder
    vector h_t2; two decoder cells for future_step steps fed the encoder
    vector, then their own last output (encoder_vector = h_t4); the outputs
    stacked on dim 1, permuted to [B, C, T, H, W], a Conv3d and a sigmoid."""

    def __init__(self, nf, in_chan, future_step=3):
        super().__init__()
        cell = lambda cin: NdrplzConvLSTMCell(cin, nf, (3, 3), True)
        self.encoder_1_convlstm = cell(in_chan)
        self.encoder_2_convlstm = cell(nf)
        self.decoder_1_convlstm = cell(nf)
        self.decoder_2_convlstm = cell(nf)
        self.decoder_CNN = nn.Conv3d(nf, 1, kernel_size=(1, 3, 3), padding=(0, 1, 1))
        self.future_step = future_step

    def autoencoder(self, x, seq_len, future_step, h_t, c_t, h_t2, c_t2, h_t3, c_t3, h_t4, c_t4):
        outputs = []
        for t in range(seq_len):
            h_t, c_t = self.encoder_1_convlstm(input_tensor=x[:, t, :, :], cur_state=[h_t, c_t])
            h_t2, c_t2 = self.encoder_2_convlstm(input_tensor=h_t, cur_state=[h_t2, c_t2])
        encoder_vector = h_t2
        for t in range(future_step):
            h_t3, c_t3 = self.decoder_1_convlstm(input_tensor=encoder_vector, cur_state=[h_t3, c_t3])
            h_t4, c_t4 = self.decoder_2_convlstm(input_tensor=h_t3, cur_state=[h_t4, c_t4])
            encoder_vector = h_t4
            outputs += [h_t4]
        outputs = torch.stack(outputs, 1)
        outputs = outputs.permute(0, 2, 1, 3, 4)
        outputs = self.decoder_CNN(outputs)
        outputs = torch.nn.Sigmoid()(outputs)
        return outputs

    def forward(self, x):
        b, seq_len, _, h, w = x.size()
        h_t, c_t = self.encoder_1_convlstm.init_hidden(batch_size=b, image_size=(h, w))
        h_t2, c_t2 = self.encoder_2_convlstm.init_hidden(batch_size=b, image_size=(h, w))
        h_t3, c_t3 = self.decoder_1_convlstm.init_hidden(batch_size=b, image_size=(h, w))
        h_t4, c_t4 = self.decoder_2_convlstm.init_hidden(batch_size=b, image_size=(h, w))
        return self.autoencoder(x, seq_len, self.future_step, h_t, c_t, h_t2, c_t2, h_t3, c_t3, h_t4, c_t4)


# =============================================================================
# Element-wise recurrences over a computed tensor split along time
# =============================================================================

class CPUForgetMult(nn.Module):
    """salesforce/pytorch-qrnn's CPUForgetMult module: over (f * x).split(1,
    dim=0), h + (1 - f) * prev_h, then h.view(h.size()[1:])."""

    def forward(self, f, x, hidden_init=None):
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


class QRNNWindow2(nn.Module):
    """The repository's QRNNLayer with window 2 and a given hidden state:
    x_{t-1} made by cat([X[:1] * 0, X[:-1]]) and cat'ed with X on the
    feature axis, one Linear for Z, F, O (view, chunk(3, dim=2)),
    functional tanh / sigmoid, the forget-mult from the hidden state (so
    that every step has its (1 - f) h term), the output gate; returns (H,
    C[-1:])."""

    def __init__(self, input_size, hidden_size, window=2):
        super().__init__()
        self.window = window
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.linear = nn.Linear(self.window * self.input_size, 3 * self.hidden_size)
        self.forget_mult = CPUForgetMult()

    def forward(self, X, hidden):
        seq_len, batch_size, _ = X.size()
        Xm1 = [X[:1, :, :] * 0]
        if len(X) > 1:
            Xm1.append(X[:-1, :, :])
        Xm1 = torch.cat(Xm1, 0)
        source = torch.cat([X, Xm1], 2)
        Y = self.linear(source)
        Y = Y.view(seq_len, batch_size, 3 * self.hidden_size)
        Z, F_, O = Y.chunk(3, dim=2)
        Z = torch.tanh(Z)
        F_ = torch.sigmoid(F_)
        Z = Z.contiguous()
        F_ = F_.contiguous()
        C = self.forget_mult(F_, Z, hidden)
        H = torch.sigmoid(O) * C
        return H, C[-1:, :, :]


def forget_mult_CPU(x, f, first_h=None, batch_first=True, backward=False):
    """fastai's CPU forget-mult: x and f split along the time axis (dim 1
    batch first), the unit axis kept, prev_h = x f (+ (1 - f) prev_h), the
    steps taken backwards for a backward layer, torch.cat on the time axis."""
    result = []
    dim = (1 if batch_first else 0)
    forgets = f.split(1, dim=dim)
    inputs = x.split(1, dim=dim)
    prev_h = None if first_h is None else first_h.unsqueeze(dim)
    idx_range = range(len(inputs) - 1, -1, -1) if backward else range(len(inputs))
    for i in idx_range:
        prev_h = inputs[i] * forgets[i] if prev_h is None else inputs[i] * forgets[i] + (1 - forgets[i]) * prev_h
        if backward:
            result.insert(0, prev_h)
        else:
            result.append(prev_h)
    return torch.cat(result, dim=dim)


class FastaiQRNNLayer(nn.Module):
    """A fastai-style QRNNLayer, batch first: one Linear, chunk(3, dim=2),
    tanh / sigmoid, the forget-mult from a zero state, the output gate."""

    def __init__(self, input_size, hidden_size, backward=False):
        super().__init__()
        self.hidden_size, self.backward = hidden_size, backward
        self.linear = nn.Linear(input_size, 3 * hidden_size)

    def forward(self, inp, hid):
        z, f, o = self.linear(inp).chunk(3, dim=2)
        z, f = torch.tanh(z), torch.sigmoid(f)
        c = forget_mult_CPU(z, f, hid, batch_first=True, backward=self.backward)
        output = torch.sigmoid(o) * c
        return output, c[:, 0 if self.backward else -1]


class FastaiBiQRNN(nn.Module):
    """Two such layers, forward and backward, from zero states made with
    inp.new_zeros; outputs cat'ed on the feature axis, the final states
    stacked."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.fwd = FastaiQRNNLayer(input_size, hidden_size)
        self.bwd = FastaiQRNNLayer(input_size, hidden_size, backward=True)

    def forward(self, inp):
        hid = inp.new_zeros(inp.size(0), self.hidden_size)
        out_f, h_f = self.fwd(inp, hid)
        out_b, h_b = self.bwd(inp, hid)
        return torch.cat([out_f, out_b], dim=2), torch.stack([h_f, h_b])


class IndRNNCell(nn.Module):
    """StefOe/indrnn-pytorch's IndRNNCell: relu(F.linear(input, weight_ih,
    bias_ih) + torch.mul(weight_hh, hx)), weight_hh a vector."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.Tensor(hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.Tensor(hidden_size))
        self.bias_ih = nn.Parameter(torch.Tensor(hidden_size))
        nn.init.normal_(self.weight_ih, 0, 0.5)
        nn.init.uniform_(self.weight_hh, 0, 1)
        nn.init.normal_(self.bias_ih, 0, 0.1)
        self.activation = F.relu

    def forward(self, input, hx):
        return self.activation(F.linear(input, self.weight_ih, self.bias_ih) + torch.mul(self.weight_hh, hx))


class IndRNN(nn.Module):
    """The repository's IndRNN (seq-first, batch_norm=True, two layers):
    h0 a buffer expanded to the batch, x_T = torch.unbind(x, time_index),
    `for t in range(time_frame)`, torch.stack(outputs, time_index), a
    BatchNorm1d over x.permute(1, 2, 0) between layers; returns the output
    and torch.cat(hiddens, -1)."""

    def __init__(self, input_size, hidden_size, n_layer=2):
        super().__init__()
        self.hidden_size = hidden_size
        self.time_index, self.batch_index = 0, 1
        self.cells = nn.ModuleList([IndRNNCell(input_size if i == 0 else hidden_size, hidden_size)
                                    for i in range(n_layer)])
        self.bns = nn.ModuleList([nn.BatchNorm1d(hidden_size) for _ in range(n_layer)])
        self.register_buffer("h0", torch.zeros(hidden_size))

    def forward(self, x):
        hiddens = []
        i = 0
        for cell in self.cells:
            hx_cell = self.h0.unsqueeze(0).expand(x.size(self.batch_index), self.hidden_size).contiguous()
            outputs = []
            x_T = torch.unbind(x, self.time_index)
            time_frame = len(x_T)
            for t in range(time_frame):
                hx_cell = cell(x_T[t], hx_cell)
                outputs.append(hx_cell)
            x = torch.stack(outputs, self.time_index)
            hiddens.append(hx_cell)
            x = self.bns[i](x.permute(self.batch_index, 2, self.time_index).contiguous()).permute(2, 0, 1)
            i += 1
        return x, torch.cat(hiddens, -1)


class Linear_overtime_module(nn.Module):
    """Sunnydreamrain/IndRNN_pytorch's utils: a Linear over [T*B, I] viewed
    back to [T, B, H]."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.input_size, self.hidden_size = input_size, hidden_size

    def forward(self, x):
        y = x.contiguous().view(-1, self.input_size)
        y = self.fc(y)
        return y.view(x.size()[0], x.size()[1], self.hidden_size)


class Batch_norm_overtime(nn.Module):
    """Its BatchNorm over time: BatchNorm1d over x.permute(1, 2, 0)."""

    def __init__(self, hidden_size):
        super().__init__()
        self.bn = nn.BatchNorm1d(hidden_size)

    def forward(self, x):
        x = x.permute(1, 2, 0)
        x = self.bn(x)
        return x.permute(2, 0, 1)


class IndRNNCell_onlyrecurrent(nn.Module):
    """relu(input + hx * weight_hh.unsqueeze(0).expand(B, H)): the input
    already projected."""

    def __init__(self, hidden_size):
        super().__init__()
        self.weight_hh = nn.Parameter(torch.Tensor(hidden_size))
        nn.init.uniform_(self.weight_hh, a=0, b=1)

    def forward(self, input, hx):
        return F.relu(input + hx * self.weight_hh.unsqueeze(0).expand(hx.size(0), len(self.weight_hh)))


class IndRNN_onlyrecurrent(nn.Module):
    """Its recurrent part: h0 from input.data.new(B, H).zero_(), `for
    input_t in input:` (iterating the tensor), torch.stack(outputs, 0)."""

    def __init__(self, hidden_size):
        super().__init__()
        self.indrnn_cell = IndRNNCell_onlyrecurrent(hidden_size)

    def forward(self, input, h0=None):
        if h0 is None:
            h0 = input.data.new(input.size(-2), input.size(-1)).zero_().contiguous()
        outputs = []
        hx_cell = h0
        for input_t in input:
            hx_cell = self.indrnn_cell(input_t, hx_cell)
            outputs.append(hx_cell)
        return torch.stack(outputs, 0)


class IndRNNPlainNet(nn.Module):
    """Its plain stacked net ('bn_before'): per layer the Linear over time,
    the BatchNorm over time, the recurrence; a classifier on the last step
    of the last layer."""

    def __init__(self, input_size, hidden_size, classes, num_layers=2):
        super().__init__()
        self.DIs = nn.ModuleList([Linear_overtime_module(input_size if x == 0 else hidden_size, hidden_size)
                                  for x in range(num_layers)])
        self.RNNs = nn.ModuleList([nn.Sequential(Batch_norm_overtime(hidden_size),
                                                 IndRNN_onlyrecurrent(hidden_size)) for _ in range(num_layers)])
        self.classifier = nn.Linear(hidden_size, classes)

    def forward(self, input):
        rnnoutputs = {"outlayer-1": input}
        for x in range(len(self.RNNs)):
            rnnoutputs["dilayer%d" % x] = self.DIs[x](rnnoutputs["outlayer%d" % (x - 1)])
            rnnoutputs["outlayer%d" % x] = self.RNNs[x](rnnoutputs["dilayer%d" % x])
        temp = rnnoutputs["outlayer%d" % (len(self.RNNs) - 1)][-1]
        return self.classifier(temp)


# =============================================================================
# Per-step reads of tables
# =============================================================================

class TemporalDecay(nn.Module):
    """PyPOTS's TemporalDecay: exp(-relu(F.linear(delta, W, b))), W masked
    by an identity buffer when diag."""

    def __init__(self, input_size, output_size, diag=False):
        super().__init__()
        self.diag = diag
        self.W = nn.Parameter(torch.Tensor(output_size, input_size))
        self.b = nn.Parameter(torch.Tensor(output_size))
        if self.diag:
            self.register_buffer("m", torch.eye(input_size, input_size))
        std_dev = 1.0 / math.sqrt(self.W.size(0))
        self.W.data.uniform_(-std_dev, std_dev)
        self.b.data.uniform_(-std_dev, std_dev)

    def forward(self, delta):
        if self.diag:
            gamma = F.relu(F.linear(delta, self.W * self.m, self.b))
        else:
            gamma = F.relu(F.linear(delta, self.W, self.b))
        return torch.exp(-gamma)


class BackboneGRUD(nn.Module):
    """PyPOTS's BackboneGRUD: `for t in range(self.n_steps)` (a constructor
    constant), X[:, t, :], the mask, the delta and the LOCF values sliced
    per step, the hidden state decayed before it is collected, x imputed
    from the LOCF value and the empirical mean, an nn.GRUCell over
    cat([x_replaced, hidden_state, m]); the collected states stacked on
    dim 1."""

    def __init__(self, n_steps, n_features, rnn_hidden_size):
        super().__init__()
        self.n_steps = n_steps
        self.rnn_hidden_size = rnn_hidden_size
        self.rnn_cell = nn.GRUCell(n_features * 2 + rnn_hidden_size, rnn_hidden_size)
        self.temp_decay_h = TemporalDecay(n_features, rnn_hidden_size, diag=False)
        self.temp_decay_x = TemporalDecay(n_features, n_features, diag=True)

    def forward(self, X, missing_mask, deltas, empirical_mean, X_filledLOCF):
        hidden_state = torch.zeros((X.size()[0], self.rnn_hidden_size))
        representation_collector = []
        for t in range(self.n_steps):
            x = X[:, t, :]
            m = missing_mask[:, t, :]
            d = deltas[:, t, :]
            x_filledLOCF = X_filledLOCF[:, t, :]
            gamma_h = self.temp_decay_h(d)
            gamma_x = self.temp_decay_x(d)
            hidden_state = hidden_state * gamma_h
            representation_collector.append(hidden_state)
            x_h = gamma_x * x_filledLOCF + (1 - gamma_x) * empirical_mean
            x_replaced = m * x + (1 - m) * x_h
            data_input = torch.cat([x_replaced, hidden_state, m], dim=1)
            hidden_state = self.rnn_cell(data_input, hidden_state)
        representation_collector = torch.stack(representation_collector, dim=1)
        return representation_collector, hidden_state


class GRUDDecayTable(nn.Module):
    """A GRU-D whose decays are computed once over the whole [B, T, D]
    deltas (gamma_x, gamma_h: the tables the step then reads by index
    gamma_x[:, t]), the masks and the values read the same way, the cell
    written with Linears over cat(x, h, mask) (zl, rl, hl) and a buffer of
    means; the outputs torch.stack'ed on dim 1, the last state through a
    classifier."""

    def __init__(self, input_size, hidden_size, classes):
        super().__init__()
        self.hidden_size = hidden_size
        self.register_buffer("x_mean", torch.linspace(-0.3, 0.3, input_size))
        self.gamma_x_l = nn.Linear(input_size, input_size)
        self.gamma_h_l = nn.Linear(input_size, hidden_size)
        self.zl = nn.Linear(2 * input_size + hidden_size, hidden_size)
        self.rl = nn.Linear(2 * input_size + hidden_size, hidden_size)
        self.hl = nn.Linear(2 * input_size + hidden_size, hidden_size)
        self.fc = nn.Linear(hidden_size, classes)

    def forward(self, values, masks, deltas, last_obs):
        gamma_x = torch.exp(-torch.relu(self.gamma_x_l(deltas)))
        gamma_h = torch.exp(-torch.relu(self.gamma_h_l(deltas)))
        h = torch.zeros(values.size(0), self.hidden_size)
        outs = []
        for t in range(values.size(1)):
            m = masks[:, t]
            x = m * values[:, t] + (1 - m) * (gamma_x[:, t] * last_obs[:, t] + (1 - gamma_x[:, t]) * self.x_mean)
            h = gamma_h[:, t] * h
            z = torch.sigmoid(self.zl(torch.cat((x, h, m), 1)))
            r = torch.sigmoid(self.rl(torch.cat((x, h, m), 1)))
            h_tilde = torch.tanh(self.hl(torch.cat((x, r * h, m), 1)))
            h = (1 - z) * h + z * h_tilde
            outs.append(h)
        return torch.stack(outs, 1), self.fc(h)


class SinusoidStepGRU(nn.Module):
    """A GRUCell whose input at step t is the frame plus row t of a fixed
    sinusoidal table (a registered buffer of max_len rows, as the PyTorch
    transformer tutorial's PositionalEncoding builds it), read as
    self.pe[t]."""

    def __init__(self, input_size, hidden_size, max_len=16):
        super().__init__()
        pe = torch.zeros(max_len, input_size)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, input_size, 2).float() * (-math.log(100.0) / input_size))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)[:, :input_size // 2]
        self.register_buffer("pe", pe)
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x):
        h = x.new_zeros(x.size(0), self.cell.hidden_size)
        hs = []
        for t in range(x.size(1)):
            h = self.cell(x[:, t] + self.pe[t], h)
            hs.append(h)
        return torch.stack(hs, 1)


class ClockworkRNN(nn.Module):
    """A clockwork RNN (Koutnik et al. 2014) as its PyTorch ports write it:
    the hidden units in modules of periods 1, 2, 4, 8, a module updated at
    step t when t % period == 0 (a per-step constant mask made from the
    Python step number), the recurrent matrix masked block-triangular
    (slower modules feed faster ones)."""

    def __init__(self, input_size, hidden_size, periods=(1, 2, 4, 8)):
        super().__init__()
        self.periods = periods
        size = hidden_size // len(periods)
        self.module_period = [p for p in periods for _ in range(size)]
        self.W_in = nn.Linear(input_size, hidden_size)
        self.W_h = nn.Linear(hidden_size, hidden_size)
        mask = torch.zeros(hidden_size, hidden_size)
        for i, pi in enumerate(self.module_period):
            for j, pj in enumerate(self.module_period):
                if pj >= pi:
                    mask[i, j] = 1.0
        self.register_buffer("mask", mask)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.W_h.out_features)
        outs = []
        for t in range(x.size(1)):
            active = torch.tensor([1.0 if t % p == 0 else 0.0 for p in self.module_period])
            h_new = torch.tanh(self.W_in(x[:, t]) + F.linear(h, self.W_h.weight * self.mask, self.W_h.bias))
            h = active * h_new + (1 - active) * h
            outs.append(h)
        return torch.stack(outs, dim=1)


# =============================================================================
# Linear state updates, a dead last step
# =============================================================================

class CharClassifyRNN(nn.Module):
    """The PyTorch char_rnn_classification_tutorial's RNN: i2h and i2o over
    torch.cat((input, hidden), 1) -- the state update is linear --
    LogSoftmax(dim=1) on the output."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.i2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


class LineClassifier(nn.Module):
    """The tutorial's evaluate(line_tensor): a line one-hot [T, 1, n_letters],
    `for i in range(line_tensor.size()[0])`, the last output returned: the
    last step's new hidden (its i2h) is computed by PyTorch and unused, and
    only the last step's i2o is read."""

    def __init__(self, n_letters, hidden, n_categories):
        super().__init__()
        self.rnn = CharClassifyRNN(n_letters, hidden, n_categories)

    def forward(self, line_tensor):
        hidden = self.rnn.initHidden()
        for i in range(line_tensor.size()[0]):
            output, hidden = self.rnn(line_tensor[i], hidden)
        return output


class ConditionalCharRNN(nn.Module):
    """spro/practical-pytorch conditional-char-rnn's RNN (no softmax in the
    model, o2o over cat(hidden, output)) trained on whole names: the
    category and each letter's one-hot per step, a linear state update; the
    outputs stacked."""

    class RNN(nn.Module):
        def __init__(self, category_size, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(category_size + input_size + hidden_size, hidden_size)
            self.i2o = nn.Linear(category_size + input_size + hidden_size, output_size)
            self.o2o = nn.Linear(hidden_size + output_size, output_size)

        def forward(self, category, input, hidden):
            input_combined = torch.cat((category, input, hidden), 1)
            hidden = self.i2h(input_combined)
            output = self.i2o(input_combined)
            output_combined = torch.cat((hidden, output), 1)
            output = self.o2o(output_combined)
            return output, hidden

        def init_hidden(self):
            return torch.zeros(1, self.hidden_size)

    def __init__(self, n_categories, n_letters, hidden):
        super().__init__()
        self.rnn = self.RNN(n_categories, n_letters, hidden, n_letters)

    def forward(self, category_tensor, input_line_tensor):
        hidden = self.rnn.init_hidden()
        outputs = []
        for i in range(input_line_tensor.size(0)):
            output, hidden = self.rnn(category_tensor, input_line_tensor[i], hidden)
            outputs.append(output)
        return torch.stack(outputs)


class StateSpaceScan(nn.Module):
    """A discretised state-space model's recurrent mode (the annotated S4's
    scan_SSM, in PyTorch): continuous A, B, C made discrete by the bilinear
    rule once, as the annotated S4's setup() does (buffers Ab, Bb, Cb: the
    inverse does not export), then x_k = Ab x_{k-1} + Bb u_k and y_k = C
    x_k, linear, over a [B, L] signal read u[:, k:k+1]."""

    def __init__(self, N, step=0.5):
        super().__init__()
        A = -0.5 * torch.eye(N) + 0.1 * torch.randn(N, N)
        B = torch.randn(N, 1) * 0.5
        C = torch.randn(1, N) * 0.5
        eye = torch.eye(N)
        BL = torch.inverse(eye - (step / 2.0) * A)
        self.register_buffer("Ab", BL @ (eye + (step / 2.0) * A))
        self.register_buffer("Bb", (BL * step) @ B)
        self.register_buffer("Cb", C)

    def forward(self, u):
        x_k = u.new_zeros(u.size(0), self.Ab.size(0))
        ys = []
        for k in range(u.size(1)):
            x_k = x_k @ self.Ab.T + u[:, k:k + 1] @ self.Bb.T
            ys.append(x_k @ self.Cb.T)
        return torch.cat(ys, dim=1)


class DiagonalLinearRecurrence(nn.Module):
    """An LRU-style layer (Orvieto et al. 2023) in real arithmetic: decays
    lambda = exp(-exp(nu_log)) computed before the loop, h = lambda * h +
    gamma * B(x_t) element-wise (no activation), y_t = C(h) + D * x_t; the
    outputs stacked on dim 1."""

    def __init__(self, d_model, d_hidden):
        super().__init__()
        self.nu_log = nn.Parameter(torch.log(-torch.log(torch.rand(d_hidden) * 0.5 + 0.4)))
        self.gamma_log = nn.Parameter(torch.log(torch.sqrt(1 - torch.exp(-torch.exp(self.nu_log.data)) ** 2)))
        self.B = nn.Linear(d_model, d_hidden, bias=False)
        self.C = nn.Linear(d_hidden, d_model, bias=False)
        self.D = nn.Parameter(torch.randn(d_model))

    def forward(self, x):
        lamb = torch.exp(-torch.exp(self.nu_log))
        gamma = torch.exp(self.gamma_log)
        h = torch.zeros(x.shape[0], lamb.shape[0])
        ys = []
        for t in range(x.shape[1]):
            h = lamb * h + gamma * self.B(x[:, t])
            ys.append(self.C(h) + self.D * x[:, t])
        return torch.stack(ys, dim=1)


# =============================================================================
# Double precision, lists of lists, stacks along any axis, 4-D and 5-D x[:, t]
# =============================================================================

class DoubleGRUCellNet(nn.Module):
    """A GRUCell model made .double(): x [B, T, I] float64, x[:, t], the
    state zeros of x's dtype, the outputs stacked on dim 0 and transposed
    to batch first, a head on every step."""

    def __init__(self, input_size, hidden_size, classes):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)
        self.head = nn.Linear(hidden_size, classes)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.cell.hidden_size, dtype=x.dtype)
        outs = []
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
            outs.append(h)
        return self.head(torch.stack(outs, 0).transpose(0, 1))


class NestedStateLSTM(nn.Module):
    """Stacked nn.LSTMCells in one time loop, the states a list of [h, c]
    lists (one per layer) rebuilt each step, outputs stacked on axis 2
    ([B, H, T]), the final states torch.stack'ed from the nested lists
    ([L, 2, B, H])."""

    def __init__(self, input_size, hidden_size, layers=2):
        super().__init__()
        self.hidden_size = hidden_size
        self.cells = nn.ModuleList([nn.LSTMCell(input_size if l == 0 else hidden_size, hidden_size)
                                    for l in range(layers)])

    def forward(self, x):
        states = [[torch.zeros(x.size(1), self.hidden_size), torch.zeros(x.size(1), self.hidden_size)]
                  for _ in self.cells]
        outs = []
        for t in range(x.size(0)):
            inp = x[t]
            for l, cell in enumerate(self.cells):
                h, c = cell(inp, (states[l][0], states[l][1]))
                states[l] = [h, c]
                inp = h
            outs.append(inp)
        return torch.stack(outs, dim=2), torch.stack([torch.stack(s) for s in states])


class SpectrogramFrameLSTM(nn.Module):
    """Multi-channel spectrogram frames [B, T, C, F]: x[:, t] is a 4-D
    input's frame [B, C, F], reshape(B, -1) into an nn.LSTMCell; the
    states stacked on the last axis ([B, H, T]), then the mean over time."""

    def __init__(self, channels, freqs, hidden):
        super().__init__()
        self.cell = nn.LSTMCell(channels * freqs, hidden)

    def forward(self, x):
        B = x.size(0)
        h = torch.zeros(B, self.cell.hidden_size)
        c = torch.zeros(B, self.cell.hidden_size)
        hs = []
        for t in range(x.size(1)):
            frame = x[:, t]
            h, c = self.cell(frame.reshape(B, -1), (h, c))
            hs.append(h)
        seq = torch.stack(hs, dim=-1)
        return seq, seq.mean(dim=-1)


class VideoCNNLSTM(nn.Module):
    """A video classifier of the CNN-LSTM kind: frames [B, T, C, H, W], each
    frame x[:, t] through a small CNN (Conv2d, ReLU, AdaptiveAvgPool2d,
    flatten) into an nn.LSTMCell, the class scores from the last state."""

    def __init__(self, channels, feat, hidden, classes):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(channels, feat, 3, padding=1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.lstm = nn.LSTMCell(feat, hidden)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        h = c = torch.zeros(x.size(0), self.lstm.hidden_size)
        for t in range(x.size(1)):
            feats = self.cnn(x[:, t])
            h, c = self.lstm(feats, (h, c))
        return self.fc(h)


class RowByRowRNN(nn.Module):
    """MNIST read row by row from a 4-D image batch [B, 1, H, W]: the time
    axis is the image's height, row t is img[:, 0, t] ([B, W]) into an
    nn.RNNCell (tanh); the states stacked on dim 1, a head on the last."""

    def __init__(self, width, hidden, classes):
        super().__init__()
        self.rnn = nn.RNNCell(width, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, img):
        h = torch.zeros(img.size(0), self.rnn.hidden_size)
        hs = []
        for t in range(img.size(2)):
            h = self.rnn(img[:, 0, t], h)
            hs.append(h)
        return torch.stack(hs, dim=1), self.out(h)


class LayerNormLSTMCell(nn.Module):
    """PyTorch's benchmarks/fastrnns/custom_lstms.py LayerNormLSTMCell: the
    input and recurrent products (torch.mm with .t()) each through a
    LayerNorm, chunk(4, 1), the cell state through a third LayerNorm."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.randn(4 * hidden_size, input_size) * 0.3)
        self.weight_hh = nn.Parameter(torch.randn(4 * hidden_size, hidden_size) * 0.3)
        self.layernorm_i = nn.LayerNorm(4 * hidden_size)
        self.layernorm_h = nn.LayerNorm(4 * hidden_size)
        self.layernorm_c = nn.LayerNorm(hidden_size)

    def forward(self, input, state):
        hx, cx = state
        igates = self.layernorm_i(torch.mm(input, self.weight_ih.t()))
        hgates = self.layernorm_h(torch.mm(hx, self.weight_hh.t()))
        gates = igates + hgates
        ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
        ingate = torch.sigmoid(ingate)
        forgetgate = torch.sigmoid(forgetgate)
        cellgate = torch.tanh(cellgate)
        outgate = torch.sigmoid(outgate)
        cy = self.layernorm_c((forgetgate * cx) + (ingate * cellgate))
        hy = outgate * torch.tanh(cy)
        return hy, (hy, cy)


class CustomLSTMCell(nn.Module):
    """custom_lstms.py's LSTMCell: torch.mm of the input and state with the
    transposed weights plus both biases, chunk(4, 1)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.randn(4 * hidden_size, input_size) * 0.3)
        self.weight_hh = nn.Parameter(torch.randn(4 * hidden_size, hidden_size) * 0.3)
        self.bias_ih = nn.Parameter(torch.randn(4 * hidden_size) * 0.1)
        self.bias_hh = nn.Parameter(torch.randn(4 * hidden_size) * 0.1)

    def forward(self, input, state):
        hx, cx = state
        gates = (torch.mm(input, self.weight_ih.t()) + self.bias_ih +
                 torch.mm(hx, self.weight_hh.t()) + self.bias_hh)
        ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
        ingate = torch.sigmoid(ingate)
        forgetgate = torch.sigmoid(forgetgate)
        cellgate = torch.tanh(cellgate)
        outgate = torch.sigmoid(outgate)
        cy = (forgetgate * cx) + (ingate * cellgate)
        hy = outgate * torch.tanh(cy)
        return hy, (hy, cy)


class LSTMLayer(nn.Module):
    """custom_lstms.py's LSTMLayer: inputs = input.unbind(0), `for i in
    range(len(inputs))`, outputs += [out], torch.stack(outputs)."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, input, state):
        inputs = input.unbind(0)
        outputs = []
        for i in range(len(inputs)):
            out, state = self.cell(inputs[i], state)
            outputs += [out]
        return torch.stack(outputs), state


def reverse(lst):
    return lst[::-1]


class ReverseLSTMLayer(nn.Module):
    """custom_lstms.py's ReverseLSTMLayer: reverse(input.unbind(0)), the
    outputs reversed back before torch.stack."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, input, state):
        inputs = reverse(input.unbind(0))
        outputs = []
        for i in range(len(inputs)):
            out, state = self.cell(inputs[i], state)
            outputs += [out]
        return torch.stack(reverse(outputs)), state


class LayerNormLSTM(nn.Module):
    """An LSTMLayer of LayerNormLSTMCells from zero states given as inputs."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.layer = LSTMLayer(LayerNormLSTMCell(input_size, hidden_size))

    def forward(self, input, h0, c0):
        out, (h, c) = self.layer(input, (h0, c0))
        return out, h, c


class CustomBidirLSTM(nn.Module):
    """custom_lstms.py's BidirLSTMLayer: an LSTMLayer and a
    ReverseLSTMLayer of its LSTMCell, each from its own state, outputs
    torch.cat'ed on the last axis."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.directions = nn.ModuleList([LSTMLayer(CustomLSTMCell(input_size, hidden_size)),
                                         ReverseLSTMLayer(CustomLSTMCell(input_size, hidden_size))])

    def forward(self, input, h0, c0):
        outputs = []
        output_states = []
        for i, direction in enumerate(self.directions):
            out, out_state = direction(input, (h0[i], c0[i]))
            outputs += [out]
            output_states += [out_state]
        return torch.cat(outputs, -1), torch.stack([s[0] for s in output_states])


# =============================================================================
# The table: how each model is built, fed and exported
# =============================================================================

def series(T, B, rng):
    return [rng.standard_normal((B, T)).astype(np.float64)]


def seq_first(T, B, rng):
    return [rng.standard_normal((T, B, INPUT)).astype(np.float32)]


def batch_first(T, B, rng, dtype=np.float32):
    return [rng.standard_normal((B, T, INPUT)).astype(dtype)]


def tokens_bt(T, B, rng):
    return [rng.integers(1, VOCAB, (B, T)).astype(np.int64)]


def tokens_tb(T, B, rng):
    return [rng.integers(1, VOCAB, (T, B)).astype(np.int64)]


def one_hots(T, rng):
    x = np.zeros((T, 1, VOCAB), np.float32)
    x[np.arange(T), 0, rng.integers(0, VOCAB, T)] = 1
    return x


def category(rng):
    c = np.zeros((1, CATS), np.float32)
    c[0, rng.integers(0, CATS)] = 1
    return c


def frames_btchw(T, B, rng):
    return [rng.standard_normal((B, T, FRAME_C, FRAME_H, FRAME_W)).astype(np.float32)]


def frames_tbchw(T, B, rng):
    return [rng.standard_normal((T, B, FRAME_C, FRAME_H, FRAME_W)).astype(np.float32)]


def frames_bcthw(T, B, rng):
    return [rng.standard_normal((B, FRAME_C, T, FRAME_H, FRAME_W)).astype(np.float32)]


def grud_feed(T, B, rng, locf_mean=False):
    mask = (rng.random((B, T, INPUT)) < 0.6).astype(np.float32)
    x = (rng.standard_normal((B, T, INPUT)) * mask).astype(np.float32)
    delta = (3 * rng.random((B, T, INPUT))).astype(np.float32)
    last = rng.standard_normal((B, T, INPUT)).astype(np.float32)
    if locf_mean:
        return [x, mask, delta, rng.standard_normal(INPUT).astype(np.float32), last]
    return [x, mask, delta, last]


def with_states(layers, base):
    def make(T, B, rng):
        return base(T, B, rng) + [(0.5 * rng.standard_normal(((layers, B, HIDDEN) if layers else (B, HIDDEN))))
                                  .astype(np.float32) for _ in range(2)]
    return make


def loop(cell=None, generated=None, onnx=0):
    """One loop of the source: the cell `cellc info` must name (None: no
    check), the steps of a generated loop, or an ONNX operator's
    recurrences (onnx > 0: not a traced loop)."""
    return dict(cell=cell, generated=generated, onnx=onnx)


LSTM, GRU, RNN = "plain_lstm", "plain_gru", "plain_rnn"

# name -> dict(build() -> module, source, style tags, feed(T, B, rng) ->
#   inputs, ins/outs (ONNX names), axes: per input (time axis, batch axis),
#   opset, dynamic: "bt", "t", "b" or None, loops (loop() per loop of the
#   source), batch (default BATCH), second: "dynamic" (T_OTHER from the same
#   file), "export" (T_OTHER exported again) or "inputs" (a model whose
#   loops all generate: other inputs at its own T), f64, margin (the
#   submodule whose output's two largest scores must differ: an argmax or
#   topk fed back))
MODELS = {
    "sine_future_f64": dict(
        build=lambda: SineWavePredictor(HIDDEN).double(), source="pytorch/examples time_sequence_prediction",
        style=["feedback_future_steps", "two_lstmcells_one_loop", "split_1_dim1", "double", "list_plus_equals",
               "cat_dim1", "zeros_in_forward"],
        feed=series, ins=["input"], outs=["outputs"], axes={"input": (1, 0)}, opset=14, dynamic=None,
        second="export", f64=True, loops=[loop(None), loop(None, generated=3)]),
    "charrnn_generate": dict(
        build=lambda: NameSampler(CATS, VOCAB, HIDDEN), source="PyTorch char_rnn_generation_tutorial",
        style=["feedback_topk_one_hot", "linear_state_update", "i2h_i2o_o2o", "cat_category_input_hidden",
               "dropout_eval", "log_softmax", "init_hidden", "batch_1", "generated_only"],
        feed=lambda T, B, rng: [category(rng), one_hots(1, rng)[0]], ins=["category", "start_letter"],
        outs=["log_probs"], axes={"category": (None, None), "start_letter": (None, None)}, opset=17, dynamic=None,
        batch=1, second="inputs", margin="rnn", loops=[loop(None, generated=T_TRACE)]),
    "seq2seq_tutorial_bahdanau": dict(
        build=lambda: TutorialTranslator(VOCAB, HIDDEN), source="PyTorch seq2seq_translation_tutorial (current)",
        style=["feedback_topk", "greedy_decoder", "bahdanau_attention", "one_step_nn_gru_batch_first",
               "empty_fill_sos", "squeeze_-1_detach", "cat_dim1", "encoder_nn_gru"],
        feed=tokens_bt, ins=["input_tensor"], outs=["decoder_outputs", "attentions"], axes={"input_tensor": (1, 0)},
        opset=17, dynamic="bt", second="dynamic", margin="decoder.out",
        loops=[loop(GRU, onnx=1), loop(None, generated=6)]),
    "chatbot_greedy_search": dict(
        build=lambda: GreedySearchDecoder(VOCAB, HIDDEN), source="PyTorch chatbot tutorial (GreedySearchDecoder)",
        style=["feedback_torch_max", "greedy_decoder", "luong_dot_attention", "one_step_nn_gru",
               "shared_embedding", "bidirectional_encoder_summed", "tokens_cat_from_empty", "batch_1", "int64_output"],
        feed=tokens_tb, ins=["input_seq"], outs=["all_tokens", "all_scores"], axes={"input_seq": (0, None)},
        opset=14, dynamic="t", batch=1, second="dynamic", margin="decoder",
        loops=[loop(GRU, onnx=2), loop(None, generated=6)]),
    "bentrevett_attn_seq2seq": dict(
        build=lambda: AttnSeq2Seq(VOCAB, 5, HIDDEN), source="bentrevett/pytorch-seq2seq notebook 3",
        style=["feedback_argmax", "additive_attention_repeat_permute", "one_step_nn_gru", "outputs_t_assign",
               "zeros_preallocated", "bridge_tanh_fc", "bidirectional_encoder", "teacher_forcing_off"],
        feed=lambda T, B, rng: [tokens_tb(T, B, rng)[0], tokens_tb(5, B, rng)[0]], ins=["src", "trg"],
        outs=["outputs"], axes={"src": (0, 1), "trg": (None, 1)}, opset=17, dynamic="bt", second="dynamic",
        margin="decoder", loops=[loop(GRU, onnx=2), loop(None, generated=4)]),
    "lstm_enc_dec_forecast": dict(
        build=lambda: lstm_seq2seq(INPUT, HIDDEN), source="lkulowski/LSTM_encoder_decoder",
        style=["feedback_prediction", "one_step_nn_lstm", "encoder_nn_lstm", "outputs_t_assign",
               "last_row_-1", "self_hidden_attribute", "seq_first"],
        feed=seq_first, ins=["input_tensor"], outs=["outputs"], axes={"input_tensor": (0, 1)}, opset=13,
        dynamic="bt", second="dynamic", loops=[loop(LSTM, onnx=1), loop(LSTM, generated=5)]),
    "charrnn_prime_argmax": dict(
        build=lambda: PrimeThenGenerate(VOCAB, HIDDEN), source="spro/practical-pytorch char-rnn-generation",
        style=["feedback_argmax_embedding", "one_step_nn_gru", "priming_loop", "view_1_-1", "view_1_1_-1",
               "batch_1", "init_hidden", "two_phases"],
        feed=lambda T, B, rng: [rng.integers(0, VOCAB, T).astype(np.int64)], ins=["prime_input"],
        outs=["logits"], axes={"prime_input": (0, None)}, opset=17, dynamic="t", batch=1, second="dynamic",
        margin="decoder.decoder", loops=[loop(GRU), loop(None, generated=6)]),
    "seq2seq_tutorial_classic": dict(
        build=lambda: ClassicTranslator(VOCAB, HIDDEN), source="PyTorch seq2seq_translation_tutorial (first version)",
        style=["one_step_nn_gru_per_token", "encoder_outputs_ei_plus_equals", "zeros_max_length",
               "attn_linear_max_length", "bmm_unsqueeze0", "feedback_topk", "topi_squeeze_detach",
               "data_attribute", "batch_1"],
        feed=lambda T, B, rng: [rng.integers(1, VOCAB, (T, 1)).astype(np.int64)], ins=["input_tensor"],
        outs=["decoded", "attentions"], axes={"input_tensor": (0, None)}, opset=14, dynamic="t", batch=1,
        second="dynamic", margin="decoder", loops=[loop(GRU), loop(None, generated=5)]),
    "word_lm_token_stream": dict(
        build=lambda: TokenStreamLM(VOCAB, 5, HIDDEN), source="pytorch/examples word_language_model",
        style=["one_step_nn_lstm_two_layers", "new_zeros_init_hidden", "getattr_rnn_type", "unsqueeze_0",
               "view_-1_ntoken", "log_softmax", "tuple_state", "stack_dim0"],
        feed=tokens_tb, ins=["tokens"], outs=["log_probs", "h_n", "c_n"], axes={"tokens": (0, 1)}, opset=17,
        dynamic="bt", second="dynamic", loops=[loop(None)]),
    "opennmt_input_feed": dict(
        build=lambda: InputFeedDecoder(VOCAB, 5, HIDDEN), source="OpenNMT-py InputFeedRNNDecoder",
        style=["attention_every_step", "input_feeding", "emb_split_1", "lstmcell", "global_attention_general",
               "teacher_forced", "memory_bank_input", "new_zeros", "list_plus_equals"],
        feed=lambda T, B, rng: [tokens_tb(T, B, rng)[0], rng.standard_normal((B, 6, HIDDEN)).astype(np.float32),
                                (0.5 * rng.standard_normal((B, HIDDEN))).astype(np.float32),
                                (0.5 * rng.standard_normal((B, HIDDEN))).astype(np.float32)],
        ins=["tgt", "memory_bank", "h0", "c0"], outs=["dec_outs"],
        axes={"tgt": (0, 1), "memory_bank": (None, 0), "h0": (None, 0), "c0": (None, 0)}, opset=17, dynamic="b",
        second="export", loops=[loop(None)]),
    "convlstm_seq_first_gn": dict(
        build=lambda: CLSTMEncoder(FRAME_C, 4), source="jhhuang96/ConvLSTM-PyTorch (CLSTM_cell)",
        style=["conv2d_over_cat_x_h", "groupnorm", "frames_seq_first_5d", "index_ellipsis", "split_gates_dim1",
               "stack_dim0", "zeros_when_none"],
        feed=frames_tbchw, ins=["frames"], outs=["outputs", "h", "c"], axes={"frames": (0, 1)}, opset=17,
        dynamic="bt", second="dynamic", loops=[loop(None)]),
    "convgru_forecaster": dict(
        build=lambda: CGRUForecaster(FRAME_C, 4), source="jhhuang96/ConvLSTM-PyTorch (CGRU_cell)",
        style=["conv_gru", "two_convs_groupnorm", "frames_seq_first_5d", "zero_frames_decoder",
               "encoder_forecaster", "r_times_h_in_cat"],
        feed=frames_tbchw, ins=["frames"], outs=["predictions"], axes={"frames": (0, 1)}, opset=17,
        dynamic="bt", second="dynamic", loops=[loop(None), loop(None, generated=4)]),
    "convlstm_peephole_steps": dict(
        build=lambda: PeepholeConvLSTM(FRAME_C, [4, 3], 3), source="automan000/Convolutional_LSTM_PyTorch",
        style=["conv_per_gate_and_source", "peephole_params_chw", "step_loop_same_input",
               "layers_inside_step_loop", "state_list_of_tuples", "getattr_cell_i", "effective_steps",
               "generated_only"],
        feed=lambda T, B, rng: [rng.standard_normal((B, FRAME_C, FRAME_H, FRAME_W)).astype(np.float32)],
        ins=["input"], outs=["out_step2", "out_step4", "h", "c"], axes={"input": (None, 0)}, opset=17,
        dynamic="b", second="inputs", loops=[loop(None, generated=5)]),
    "convlstm_time_axis2": dict(
        build=lambda: FrameSeq2Seq(FRAME_C, 4, (3, 3), (1, 1), "tanh", (FRAME_H, FRAME_W)),
        source="Moving-MNIST ConvLSTM tutorial (ConvLSTMCell / ConvLSTM / Seq2Seq)",
        style=["frames_b_c_t_h_w", "x_index_time_axis2", "output_preallocated_index_assign", "peephole_chw",
               "chunk_4_dim1", "batchnorm3d", "last_frame_-1", "activation_by_name"],
        feed=frames_bcthw, ins=["X"], outs=["Y"], axes={"X": (2, 0)}, opset=17, dynamic="bt", second="dynamic",
        loops=[loop(None)]),
    "convlstm_enc_dec_future": dict(
        build=lambda: EncoderDecoderConvLSTM(4, FRAME_C), source="holmdk Video-Prediction EncoderDecoderConvLSTM",
        style=["frames_btchw_5d", "x_t_5d", "two_cells_one_loop", "feedback_decoder_output", "future_steps",
               "stack_dim1_permute", "conv3d_head", "init_hidden_zeros", "keyword_arguments"],
        feed=frames_btchw, ins=["x"], outs=["y"], axes={"x": (1, 0)}, opset=17, dynamic="bt", second="dynamic",
        loops=[loop(None), loop(None, generated=3)]),
    "qrnn_window2_hidden": dict(
        build=lambda: QRNNWindow2(INPUT, HIDDEN), source="salesforce/pytorch-qrnn (QRNNLayer window 2, CPUForgetMult)",
        style=["forget_mult_split_dim0", "window2_shifted_input", "hidden_init_given", "view_size_1_on",
               "chunk_3_dim2", "output_gate", "c_-1_slice", "seq_first"],
        feed=lambda T, B, rng: with_states(0, seq_first)(T, B, rng)[:2], ins=["X", "hidden"], outs=["H", "C_last"],
        axes={"X": (0, 1), "hidden": (None, 0)}, opset=13, dynamic="bt", second="dynamic", loops=[loop(None)]),
    "fastai_forget_mult_bidir": dict(
        build=lambda: FastaiBiQRNN(INPUT, HIDDEN), source="fastai QRNN (forget_mult_CPU)",
        style=["forget_mult_split_dim1_kept", "batch_first", "backward_range", "result_insert_0", "cat_time_axis",
               "new_zeros", "bidirectional_by_hand"],
        feed=batch_first, ins=["inp"], outs=["output", "h_n"], axes={"inp": (1, 0)}, opset=14, dynamic="bt",
        second="dynamic", loops=[loop(None), loop(None)]),
    "indrnn_unbind_bn": dict(
        build=lambda: IndRNN(INPUT, HIDDEN), source="StefOe/indrnn-pytorch (IndRNN, batch_norm)",
        style=["indrnn_elementwise_recurrence", "relu", "unbind_time_index", "h0_buffer_expand",
               "batchnorm1d_between_layers", "permute_for_bn", "stacked_layers", "cat_hiddens"],
        feed=seq_first, ins=["x"], outs=["y", "h_n"], axes={"x": (0, 1)}, opset=14, dynamic="bt",
        second="dynamic", loops=[loop(None), loop(None)]),
    "indrnn_onlyrecurrent": dict(
        build=lambda: IndRNNPlainNet(INPUT, HIDDEN, 4), source="Sunnydreamrain/IndRNN_pytorch (IndRNN_onlyrecurrent)",
        style=["indrnn_elementwise_recurrence", "iterate_tensor", "linear_over_time_view", "batchnorm_over_time",
               "data_new_zero", "dict_of_layer_outputs", "head_last_step_only", "stacked_layers"],
        feed=seq_first, ins=["input"], outs=["logits"], axes={"input": (0, 1)}, opset=17, dynamic="bt",
        second="dynamic", loops=[loop(None), loop(None)]),
    "grud_pypots": dict(
        build=lambda: BackboneGRUD(T_TRACE, INPUT, HIDDEN), source="WenjieDu/PyPOTS (BackboneGRUD, TemporalDecay)",
        style=["grud", "masks_deltas_locf_inputs", "empirical_mean_input", "range_n_steps_constant",
               "x_t_slices", "temporal_decay_diag_eye", "grucell_over_cat", "collect_before_update", "stack_dim1"],
        feed=lambda T, B, rng: grud_feed(T, B, rng, locf_mean=True),
        ins=["X", "missing_mask", "deltas", "empirical_mean", "X_filledLOCF"], outs=["representation", "h"],
        axes={"X": (1, 0), "missing_mask": (1, 0), "deltas": (1, 0), "empirical_mean": (None, None),
              "X_filledLOCF": (1, 0)}, opset=17, dynamic="b", second="export", loops=[loop(None)],
        # the loop runs self.n_steps: the model at T = 12 is built with n_steps = 12
        build_other=lambda: BackboneGRUD(T_OTHER, INPUT, HIDDEN)),
    "grud_decay_table": dict(
        build=lambda: GRUDDecayTable(INPUT, HIDDEN, 4), source="GRU-D (Che et al. 2018) with decays computed per sequence",
        style=["grud", "decays_computed_then_indexed", "masks_deltas_inputs", "x_t_slices", "linear_over_cat",
               "buffer_means", "stack_dim1"],
        feed=grud_feed, ins=["values", "masks", "deltas", "last_obs"], outs=["hs", "logits"],
        axes={"values": (1, 0), "masks": (1, 0), "deltas": (1, 0), "last_obs": (1, 0)}, opset=17, dynamic="bt",
        second="dynamic", loops=[loop(None)]),
    "gru_sinusoid_table": dict(
        build=lambda: SinusoidStepGRU(4, HIDDEN), source="PyTorch transformer tutorial PositionalEncoding (buffer pe) with a GRUCell",
        style=["constant_table_row_per_step", "buffer_indexed_t", "grucell", "new_zeros", "batch_first",
               "stack_dim1"],
        feed=lambda T, B, rng: [rng.standard_normal((B, T, 4)).astype(np.float32)], ins=["x"], outs=["hs"],
        axes={"x": (1, 0)}, opset=17, dynamic="bt", second="dynamic", loops=[loop(GRU)]),
    "clockwork_rnn": dict(
        build=lambda: ClockworkRNN(INPUT, HIDDEN), source="Clockwork RNN (Koutnik et al. 2014) PyTorch ports",
        style=["per_step_constant_mask", "python_step_modulo", "block_triangular_mask", "f_linear_masked_weight",
               "batch_first", "stack_dim1"],
        feed=batch_first, ins=["x"], outs=["hs"], axes={"x": (1, 0)}, opset=17, dynamic="bt", second="dynamic",
        loops=[loop(None)]),
    "charrnn_classify": dict(
        build=lambda: LineClassifier(VOCAB, HIDDEN, CATS), source="PyTorch char_rnn_classification_tutorial",
        style=["linear_state_update", "i2h_i2o_over_cat", "last_step_i2h_dead", "only_last_output_read",
               "line_tensor_index_i", "size_brackets_0", "log_softmax", "init_hidden", "batch_1"],
        feed=lambda T, B, rng: [one_hots(T, rng)], ins=["line_tensor"], outs=["output"],
        axes={"line_tensor": (0, None)}, opset=13, dynamic="t", batch=1, second="dynamic", loops=[loop(None)]),
    "conditional_charrnn": dict(
        build=lambda: ConditionalCharRNN(CATS, VOCAB, HIDDEN), source="spro/practical-pytorch conditional-char-rnn",
        style=["linear_state_update", "cat_category_input_hidden", "o2o_over_cat_hidden_output", "teacher_forced",
               "stack_dim0", "init_hidden", "batch_1"],
        feed=lambda T, B, rng: [category(rng), one_hots(T, rng)], ins=["category", "input_line"], outs=["outputs"],
        axes={"category": (None, None), "input_line": (0, None)}, opset=17, dynamic="t", batch=1, second="dynamic",
        loops=[loop(None)]),
    "ssm_scan": dict(
        build=lambda: StateSpaceScan(6), source="The Annotated S4 (scan_SSM), in PyTorch",
        style=["linear_state_update", "bilinear_discretisation_buffers", "matmul_transpose_T", "slice_k_k+1",
               "pixel_rank2", "cat_dim1"],
        feed=lambda T, B, rng: [rng.standard_normal((B, T)).astype(np.float32)], ins=["u"], outs=["y"],
        axes={"u": (1, 0)}, opset=17, dynamic="bt", second="dynamic", loops=[loop(None)]),
    "lru_diagonal": dict(
        build=lambda: DiagonalLinearRecurrence(INPUT, HIDDEN), source="LRU (Orvieto et al. 2023) PyTorch ports",
        style=["linear_state_update", "elementwise_decay", "decay_computed_before_loop", "skip_D", "batch_first",
               "stack_dim1"],
        feed=batch_first, ins=["x"], outs=["y"], axes={"x": (1, 0)}, opset=17, dynamic="bt", second="dynamic",
        loops=[loop(None)]),
    "grucell_f64": dict(
        build=lambda: DoubleGRUCellNet(INPUT, HIDDEN, 4).double(), source="a GRUCell model made .double()",
        style=["double", "grucell", "x_t", "zeros_of_x_dtype", "stack_dim0_transpose", "head_every_step"],
        feed=lambda T, B, rng: batch_first(T, B, rng, np.float64), ins=["x"], outs=["y"], axes={"x": (1, 0)},
        opset=17, dynamic="bt", second="dynamic", f64=True, loops=[loop(GRU)]),
    "lstm_nested_state_lists": dict(
        build=lambda: NestedStateLSTM(INPUT, HIDDEN), source="stacked nn.LSTMCells with states as lists of lists",
        style=["state_list_of_lists", "layers_inside_time_loop", "stack_dim2", "stack_of_stacks", "seq_first"],
        feed=seq_first, ins=["x"], outs=["out", "states"], axes={"x": (0, 1)}, opset=14, dynamic="bt",
        second="dynamic", loops=[loop(None)]),
    "spectrogram_4d_lstm": dict(
        build=lambda: SpectrogramFrameLSTM(2, 5, HIDDEN), source="multi-channel spectrogram frames into an LSTMCell",
        style=["x_t_4d", "reshape_B_-1", "lstmcell", "stack_dim_-1", "mean_over_time"],
        feed=lambda T, B, rng: [rng.standard_normal((B, T, 2, 5)).astype(np.float32)], ins=["x"],
        outs=["seq", "pooled"], axes={"x": (1, 0)}, opset=17, dynamic="bt", second="dynamic", loops=[loop(LSTM)]),
    "video_cnn_lstm": dict(
        build=lambda: VideoCNNLSTM(FRAME_C, 5, HIDDEN, 4), source="CNN-LSTM video classifiers",
        style=["x_t_5d", "cnn_per_frame", "adaptive_avg_pool", "lstmcell", "h_equals_c_zeros",
               "head_last_step_only"],
        feed=frames_btchw, ins=["x"], outs=["logits"], axes={"x": (1, 0)}, opset=17, dynamic="bt",
        second="dynamic", loops=[loop(LSTM)]),
    "mnist_rows_4d": dict(
        build=lambda: RowByRowRNN(6, HIDDEN, 4), source="row-by-row MNIST RNNCell classifiers",
        style=["image_4d", "time_axis2", "img_index_0_t", "rnncell_tanh", "stack_dim1", "head_last"],
        feed=lambda T, B, rng: [rng.random((B, 1, T, 6)).astype(np.float32)], ins=["img"], outs=["hs", "logits"],
        axes={"img": (2, 0)}, opset=13, dynamic="bt", second="dynamic", loops=[loop(RNN)]),
    "layernorm_lstm_unbind": dict(
        build=lambda: LayerNormLSTM(INPUT, HIDDEN), source="pytorch benchmarks/fastrnns/custom_lstms.py (LayerNormLSTMCell)",
        style=["layernorm_gates", "layernorm_cell", "torch_mm_t", "unbind_0", "list_plus_equals", "states_as_inputs"],
        feed=with_states(0, seq_first), ins=["input", "h0", "c0"], outs=["out", "h", "c"],
        axes={"input": (0, 1), "h0": (None, 0), "c0": (None, 0)}, opset=17, dynamic="bt", second="dynamic",
        loops=[loop(None)]),
    "custom_bidir_lstm": dict(
        build=lambda: CustomBidirLSTM(INPUT, HIDDEN), source="pytorch benchmarks/fastrnns/custom_lstms.py (BidirLSTMLayer)",
        style=["reverse_list_of_unbind", "torch_mm_t_two_biases", "bidirectional_by_hand", "states_as_inputs",
               "cat_-1", "stack_of_final_h"],
        feed=with_states(2, seq_first), ins=["input", "h0", "c0"], outs=["out", "h_n"],
        axes={"input": (0, 1), "h0": (None, 1), "c0": (None, 1)}, opset=17, dynamic="bt", second="dynamic",
        loops=[loop(LSTM), loop(LSTM)]),
}


# =============================================================================
# export and golden data
# =============================================================================

def model_seed(name):
    return golden_io.model_seed(name, 4600)


def build(name, other=False):
    spec = MODELS[name]
    torch.manual_seed(model_seed(name))
    return (spec["build_other"] if other and "build_other" in spec else spec["build"])().eval()


def module_at(net, path):
    for part in path.split("."):
        net = getattr(net, part)
    return net


def run(net, spec, arrays):
    """The model's outputs, and the smallest gap between the two largest
    scores of any step of the `margin` submodule (inf without one)."""
    seen = []
    hook = None
    if spec.get("margin"):
        hook = module_at(net, spec["margin"]).register_forward_hook(
            lambda m, i, o: seen.append((o[0] if isinstance(o, tuple) else o).detach()))
    with torch.no_grad():
        ys = flatten(net(*[torch.from_numpy(a) for a in arrays]))
    if hook:
        hook.remove()
    gap = math.inf
    for s in seen:
        top = torch.topk(s.reshape(-1, s.shape[-1]).double(), 2, dim=-1).values
        gap = min(gap, float((top[:, 0] - top[:, 1]).min()))
    return ys, gap


def draw(net, spec, T, B, rng):
    """Inputs at T and batch B whose fed-back choices have no near-tie."""
    for _ in range(50):
        arrays = spec["feed"](T, B, rng)
        ys, gap = run(net, spec, arrays)
        if gap >= MARGIN:
            return arrays, ys
    raise AssertionError("%s: no inputs without a near-tie of the fed-back scores" % spec["name"])


def data_set(d, spec, arrays, ys):
    os.makedirs(d, exist_ok=True)
    assert len(ys) == len(spec["outs"]), (spec["name"], spec["outs"], len(ys))
    for i, (a, n) in enumerate(zip(arrays, spec["ins"])):
        write_pb(os.path.join(d, "input_%d.pb" % i), a, n)
    for i, (y, n) in enumerate(zip(ys, spec["outs"])):
        write_pb(os.path.join(d, "output_%d.pb" % i), y.detach().numpy(), n)


def dynamic_axes(spec):
    dynamic = spec["dynamic"]
    if not dynamic:
        return None
    axes = {}
    for n in spec["ins"]:
        tax, bax = spec["axes"].get(n, (None, None))
        a = {}
        if "b" in dynamic and bax is not None:
            a[bax] = "batch"
        if "t" in dynamic and tax is not None:
            a[tax] = "time"
        if a:
            axes[n] = a
    return axes


def export(net, spec, arrays, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # (inputs the model ignores: not in the graph; ins lists only what it reads)
    torch.onnx.export(net, tuple(torch.from_numpy(a) for a in arrays), path, opset_version=spec["opset"],
                      input_names=spec["ins"], output_names=spec["outs"], dynamic_axes=dynamic_axes(spec))


def make_case(out, name):
    spec = MODELS[name]
    spec["name"] = name
    net = build(name)
    B = spec.get("batch", BATCH)
    case_dir = os.path.join(out, name)
    os.makedirs(case_dir, exist_ok=True)
    rng = np.random.default_rng(model_seed(name))
    x, ys = draw(net, spec, T_TRACE, B, rng)
    print("%-32s" % name, end=" ", flush=True)
    t0 = time.time()
    export(net, spec, x, os.path.join(case_dir, "model.onnx"))
    took = time.time() - t0
    data_set(os.path.join(case_dir, "test_data_set_0"), spec, x, ys)
    second_T = T_OTHER
    if spec["second"] == "dynamic":
        x2, ys2 = draw(net, spec, T_OTHER, B, rng)
        data_set(os.path.join(case_dir, "test_data_set_1"), spec, x2, ys2)
    elif spec["second"] == "inputs":
        second_T = T_TRACE
        x2, ys2 = draw(net, spec, T_TRACE, B, rng)
        data_set(os.path.join(case_dir, "test_data_set_1"), spec, x2, ys2)
    else:
        other = build(name, other=True)
        x2, ys2 = draw(other, spec, T_OTHER, B, rng)
        export(other, spec, x2, os.path.join(case_dir, "other", "model.onnx"))
        data_set(os.path.join(case_dir, "other", "test_data_set_0"), spec, x2, ys2)
    info = dict(model=name, cls=type(net).__name__, source=spec["source"], style=spec["style"],
                loops=spec["loops"], T=T_TRACE, second_T=second_T, second=spec["second"],
                dynamic_axes=dynamic_axes(spec) or {}, opset=spec["opset"], hidden=HIDDEN, batch=B,
                tol="f64" if spec.get("f64") else "torch")
    with open(os.path.join(case_dir, "case.json"), "w") as f:
        json.dump(info, f, indent=1)
    print("export %.1fs" % took, flush=True)


def main():
    args = sys.argv[1:]
    if len(args) < 1:
        sys.exit(__doc__)
    out, names = args[0], args[1:]
    bad = [n for n in names if n not in MODELS]
    if bad:
        sys.exit("gen_loop_styles.py: unknown model %s (one of %s)" % (", ".join(bad), ", ".join(MODELS)))
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    t0 = time.time()
    for n in names or MODELS:
        make_case(out, n)
    print("%d models in %.0f s" % (len(names or MODELS), time.time() - t0))


if __name__ == "__main__":
    main()
