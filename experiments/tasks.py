"""tasks.py: the data of the experiments, made from fixed seeds, and the
batch order of the emitted training program, replayed for the PyTorch side.

Every task writes NumPy files the training program reads (docs/training.md):
samples [N, T, I] float32, targets [N, 1] float32 (mse) or labels int64 [N]
(ce) / [N, T] (ce-all).

- adding (the momentum-RNN paper's appendix; Arjovsky et al.'s form): two
  channels, values U[0, 1), one marker in each half of the sequence; target
  the sum of the two marked values; MSE.  Predicting 1 (the mean) gives an
  MSE of 1/6, the baseline a model must beat.
- copying (the same appendix; Arjovsky et al.'s form): T + 20 steps, one-hot
  over 10 symbols: 10 data symbols from 1..8, then T - 1 blanks (0), the
  delimiter 9, and 10 blanks; the target is T + 10 blanks and then the 10
  data symbols; cross entropy over every step (classes 0..8).  The baseline,
  blanks then uniform guesses, is 10 ln 8 / (T + 20).
- addition (Hochreiter & Schmidhuber 1997, experiment 4, at a fixed length
  T, as Martens & Sutskever 2011 and Sutskever et al. 2013 use it): values
  U[-1, 1], one marker among the first 10 steps and one among the first
  T/2 - 1 other steps; the first and last steps' marker channel is -1;
  target 0.5 + (X1 + X2) / 4; a case is wrong when |error| > 0.04.
- multiplication (the same paper's experiment 5, at a fixed length T, the
  second problem of Martens & Sutskever 2011 and Sutskever et al. 2013):
  the addition problem's sequences with values U[0, 1] and the target
  X1 * X2 (predicting its mean, 0.225 as X1 is 0 when the first step is
  marked, gives an MSE of about 0.049).
- memorization (the 5-bit problem of Martens & Sutskever 2011 and Sutskever
  et al. 2013, after Hochreiter & Schmidhuber 1997): T + 10 steps, one-hot
  over 4 input symbols: 5 bits (symbols 0 and 1), T - 1 distractors (2), the
  trigger (3) and 5 distractors; the target is the blank class 2 for T + 5
  steps and then the 5 bits; cross entropy over every step (classes 0..2).
  A sequence is wrong when any step's prediction is (--seq-acc).  Blanks
  and then guesses give 5 ln 2 / (T + 10) per step.
- pixels: Fashion-MNIST images (Debian's dataset-fashion-mnist), read from
  the IDX files as the training program reads them (--input pixels --scale
  [--permute SEED]).
"""
import gzip
import os
import struct

import numpy as np

MASK = (1 << 64) - 1


# ---- the training program's random stream (runtime/rt_init.c) -----------------------

class Xoshiro:
    """xoshiro256** seeded through splitmix64, as rt_rng_seed / rt_rng_next."""

    def __init__(self, seed):
        self.s = []
        z = seed & MASK
        for _ in range(4):
            z = (z + 0x9E3779B97F4A7C15) & MASK
            x = z
            x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
            self.s.append(x ^ (x >> 31))

    def next(self):
        s = self.s

        def rotl(x, k):
            return ((x << k) | (x >> (64 - k))) & MASK
        out = (rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return out


def fisher_yates(rng, n):
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.next() % (i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def epoch_orders(seed, n, epochs, shuffle=True):
    """The sample order of every epoch, as templates/train_main.c draws it."""
    rng = Xoshiro(seed)
    for _ in range(epochs):
        yield fisher_yates(rng, n) if shuffle else list(range(n))


def batches(seed, n, batch, epochs, steps, shuffle=True):
    """(epoch, [row indices]) of the first `steps` optimiser steps."""
    done = 0
    for e, order in enumerate(epoch_orders(seed, n, epochs, shuffle)):
        for at in range(0, n, batch):
            if done == steps:
                return
            yield e, order[at:at + batch]
            done += 1


def permutation(seed, n):
    """--permute SEED: new[i] = old[p[i]]."""
    return fisher_yates(Xoshiro(seed), n)


# ---- tasks ------------------------------------------------------------------------

def adding(n, T, seed):
    rng = np.random.RandomState(seed)
    x = np.zeros((n, T, 2), np.float32)
    x[:, :, 0] = rng.uniform(0, 1, (n, T))
    a = rng.randint(0, T // 2, n)
    b = rng.randint(T // 2, T, n)
    r = np.arange(n)
    x[r, a, 1] = 1
    x[r, b, 1] = 1
    y = (x[r, a, 0].astype(np.float64) + x[r, b, 0]).astype(np.float32)[:, None]
    return x, y


def copying(n, T, seed):
    rng = np.random.RandomState(seed)
    L = T + 20
    data = rng.randint(1, 9, (n, 10))
    sym = np.zeros((n, L), np.int64)
    sym[:, :10] = data
    sym[:, T + 9] = 9
    y = np.zeros((n, L), np.int64)
    y[:, T + 10:] = data
    x = np.zeros((n, L, 10), np.float32)
    x[np.arange(n)[:, None], np.arange(L)[None, :], sym] = 1
    return x, y


def memorization(n, T, seed):
    rng = np.random.RandomState(seed)
    L = T + 10
    bits = rng.randint(0, 2, (n, 5))
    sym = np.full((n, L), 2, np.int64)
    sym[:, :5] = bits
    sym[:, T + 4] = 3
    y = np.full((n, L), 2, np.int64)
    y[:, T + 5:] = bits
    x = np.zeros((n, L, 4), np.float32)
    x[np.arange(n)[:, None], np.arange(L)[None, :], sym] = 1
    return x, y


def addition(n, T, seed, product=False):
    rng = np.random.RandomState(seed)
    x = np.zeros((n, T, 2), np.float32)
    x[:, :, 0] = rng.uniform(0 if product else -1, 1, (n, T))
    x[:, 0, 1] = -1
    x[:, T - 1, 1] = -1
    y = np.zeros((n, 1), np.float32)
    for k in range(n):
        a = rng.randint(0, 10)
        b = a
        while b == a:
            b = rng.randint(0, T // 2 - 1)
        x[k, a, 1] = 1
        x[k, b, 1] = 1
        if a == 0 or b == 0:
            x[k, 0, 0] = 0
        y[k, 0] = (float(x[k, a, 0]) * float(x[k, b, 0]) if product else
                   0.5 + (float(x[k, a, 0]) + float(x[k, b, 0])) / 4.0)
    return x, y


def multiplication(n, T, seed):
    return addition(n, T, seed, product=True)


FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    zero, dtype, rank = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError("%s: not a uint8 IDX file" % path)
    dims = struct.unpack(">%dI" % rank, raw[4:4 + 4 * rank])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * rank).reshape(dims)


def write_idx(path, a):
    a = np.ascontiguousarray(a, np.uint8)
    with open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, 0x08, a.ndim))
        f.write(struct.pack(">%dI" % a.ndim, *a.shape))
        f.write(a.tobytes())


def images(n, side, classes, seed):
    """Synthetic uint8 images [n, side, side] and labels: a random template
    per class plus noise (the smoke runs of the pixel experiments)."""
    rng = np.random.RandomState(seed)
    templates = rng.uniform(0, 255, (classes, side, side))
    labels = rng.randint(0, classes, n).astype(np.int64)
    x = templates[labels] * 0.6 + rng.uniform(0, 255, (n, side, side)) * 0.4
    return np.clip(x.round(), 0, 255).astype(np.uint8), labels


def pixels(images, permute_seed=None):
    """uint8 [N, H, W] -> float32 [N, H*W, 1] (/255, optionally permuted), as
    the training program's --input pixels --scale [--permute SEED]."""
    n = images.shape[0]
    x = images.reshape(n, -1).astype(np.float32) / np.float32(255)
    if permute_seed is not None:
        x = x[:, permutation(permute_seed, x.shape[1])]
    return x[:, :, None]


def save(d, name, a):
    path = os.path.join(d, name)
    np.save(path, a)
    return path
