"""make_corpus.py: seed corpora of the fuzz targets (tests/fuzz/), made from
the test fixtures under tests/out/ and a few files written here, plus the
dictionaries.  Nothing binary is committed: `make fuzz` runs this.

usage: make_corpus.py OUTDIR      (OUTDIR/<target>/ for every target)

Seeds per target (at most MAX_SEEDS, deduplicated by content):
  onnx, onnx_train  ONNX models of the fixtures up to 64 KiB, spread over sizes
  cell              examples/*.cell, the .cell fixtures, and `cellc dump`
                    texts (graph blocks) of small ONNX and .cell models
  bind              the --bind files of the loop fixtures (.pb)
  export            weights file + model pairs of the export fixtures, in
                    the target's format (2-byte length, weights, model)
  tensorfile        *.weights of the fixtures
  testdata          input/output .pb and .npy of the fixtures
  traindata         IDX and .npy arrays of every dtype and both byte orders,
                    gzip of them (Python's gzip and zlib, with sync flushes)
"""
import glob
import gzip
import hashlib
import os
import struct
import subprocess
import sys
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "out")
MAX_SEEDS = 400
TARGETS = ("onnx", "onnx_train", "cell", "bind", "export", "tensorfile", "testdata", "traindata")


def files(patterns, limit):
    seen = set()
    out = []
    for p in patterns:
        for f in glob.glob(os.path.join(ROOT, p), recursive=True):
            if os.path.isfile(f) and os.path.getsize(f) <= limit and f not in seen:
                seen.add(f)
                out.append(f)
    out.sort(key=lambda f: (os.path.getsize(f), f))
    return out


class Corpus:
    def __init__(self, outdir, target):
        self.dir = os.path.join(outdir, target)
        os.makedirs(self.dir, exist_ok=True)
        self.n = 0

    def add(self, data):
        if self.n >= MAX_SEEDS:
            return
        h = hashlib.sha1(data).hexdigest()
        path = os.path.join(self.dir, h)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(data)
            self.n += 1

    def add_files(self, paths):
        for p in paths:
            with open(p, "rb") as f:
                self.add(f.read())


def dumps(paths):
    """`cellc dump` texts: the IR as a graph block, after load and after all passes."""
    for p in paths:
        for after in ("load", "plan"):
            r = subprocess.run([os.path.join(ROOT, "build", "cellc"), "dump", p, "--after", after],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=60)
            if r.returncode == 0 and len(r.stdout) <= 64 * 1024:
                yield r.stdout


def idx_bytes(a):
    codes = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D,
             np.float64: 0x0E}
    head = struct.pack(">BBBB", 0, 0, codes[a.dtype.type], a.ndim) + struct.pack(">%dI" % a.ndim, *a.shape)
    return head + a.astype(a.dtype.newbyteorder(">")).tobytes()


def npy_bytes(a, version=(1, 0)):
    import io
    from numpy.lib import format as npf
    b = io.BytesIO()
    npf.write_array(b, a, version=version, allow_pickle=False)
    return b.getvalue()


def train_arrays():
    rng = np.random.default_rng(17)
    out = []
    for dt in (np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64):
        a = (rng.standard_normal((3, 4)) * 20).astype(dt)
        out.append(idx_bytes(a))
        out.append(npy_bytes(a))
        out.append(npy_bytes(a.astype(a.dtype.newbyteorder(">"))))
    out.append(npy_bytes(rng.standard_normal((2, 3)).astype(np.float32), (2, 0)))
    out.append(npy_bytes(np.arange(5, dtype=np.int64)))
    out.append(npy_bytes(np.zeros((0, 3), np.float32)))
    out.append(idx_bytes(np.arange(6, dtype=np.uint8)))
    gz = []
    for raw in out[:6]:
        gz.append(gzip.compress(raw))
        c = zlib.compressobj(6, zlib.DEFLATED, 31)     # gzip wrapper, with sync flushes
        gz.append(c.compress(raw[:7]) + c.flush(zlib.Z_SYNC_FLUSH) + c.compress(raw[7:]) + c.flush())
    c = zlib.compressobj(0, zlib.DEFLATED, -15)         # raw deflate, stored blocks
    gz.append(c.flush(zlib.Z_SYNC_FLUSH) + c.compress(b"abc") + c.flush())
    return out + gz


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py OUTDIR")
    outdir = sys.argv[1]
    os.chdir(ROOT)
    c = {t: Corpus(outdir, t) for t in TARGETS}
    models = files(["tests/out/**/*.onnx", "examples/*.onnx"], 64 * 1024)
    spread = models[:: max(1, len(models) // MAX_SEEDS)]
    c["onnx"].add_files(spread)
    c["onnx_train"].add_files([m for m in models if "/grad" in m or "/torch/" in m] + spread)
    cells = files(["examples/*.cell", "tests/out/**/*.cell"], 64 * 1024)
    for text in dumps(models[:: max(1, len(models) // 40)][:40] + cells[:: max(1, len(cells) // 20)][:20]):
        c["cell"].add(text)
    c["cell"].add_files(cells)
    c["bind"].add_files(files(["tests/out/loop/**/*.pb"], 64 * 1024))
    for d in sorted(glob.glob("tests/out/export/*/")):
        w, m = os.path.join(d, "new.weights"), os.path.join(d, "model.onnx")
        if os.path.exists(w) and os.path.exists(m) and os.path.getsize(w) < 65536 and os.path.getsize(m) < 65536:
            wb, mb = open(w, "rb").read(), open(m, "rb").read()
            c["export"].add(struct.pack(">H", len(wb)) + wb + mb)
    c["tensorfile"].add_files(files(["tests/out/**/*.weights"], 64 * 1024))
    c["testdata"].add_files(files(["tests/out/onnx_node/**/*.pb", "tests/out/**/*.npy"], 16 * 1024)[:: 7])
    for b in train_arrays():
        c["traindata"].add(b)
    for t in TARGETS:
        print("make_corpus: %s: %d seeds" % (t, c[t].n))


if __name__ == "__main__":
    main()
