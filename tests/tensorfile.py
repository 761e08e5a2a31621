"""tensorfile.py: writer and reader of cellc tensor files (weights files, and
the inputs/outputs `cellc verify` hands to its driver), written from the
format described in runtime/cellrt.h, independently of runtime/rt_tensorfile.c:

  header, 64 bytes: magic "CELLTNSR", u32 version (1), u32 count,
    u64 table offset (64), u64 data offset, u64 file size,
    u64 FNV-1a-64 checksum of bytes [64, file size), 16 bytes zero
  table: count entries of 256 bytes: name (160 bytes, NUL-terminated),
    u32 dtype (ONNX TensorProto codes), u32 rank, i64 dims[8],
    u64 offset (from file start, 64-byte aligned), u64 nbytes, 8 bytes zero
  data: each tensor row-major at its offset.

All integers little-endian; the data offset is the end of the table (64 +
256 count, already 64-byte aligned); padding between tensors is zero; the file
ends right after the last tensor.

    write(path, [(name, ndarray), ...])      (order kept; names unique)
    read(path) -> [(name, ndarray), ...]     checks everything the C reader does
"""
import struct

import numpy as np

MAGIC = b"CELLTNSR"
VERSION = 1
HEADER = 64
ENTRY = 256
ALIGN = 64
NAME = 160
MAXRANK = 8

# ONNX TensorProto.DataType codes <-> numpy dtypes
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
          7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
          13: np.uint64}
CODES = {np.dtype(v): k for k, v in DTYPES.items()}

FNV_BASIS = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3


def fnv1a64(data, h=FNV_BASIS):
    """FNV-1a-64 of bytes, as the C code computes it (wrapping mod 2^64).
    A plain loop: fine for weights files of a few hundred kilobytes."""
    mask = (1 << 64) - 1
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & mask
    return h


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def encode(tensors):
    """The file image (bytes) of a list of (name, ndarray)."""
    tensors = [(n, np.array(a, order="C", copy=True)) for n, a in tensors]   # keeps rank 0
    names = [n for n, _ in tensors]
    if len(set(names)) != len(names):
        raise ValueError("duplicate tensor names")
    count = len(tensors)
    data_off = HEADER + ENTRY * count
    table = bytearray(ENTRY * count)
    pos = data_off
    chunks = []
    for k, (name, a) in enumerate(tensors):
        nb = name.encode()
        if not nb or len(nb) >= NAME or b"\0" in nb:
            raise ValueError("bad tensor name %r" % name)
        if a.dtype not in CODES:
            raise ValueError("unsupported dtype %s" % a.dtype)
        if a.ndim > MAXRANK:
            raise ValueError("rank %d > %d" % (a.ndim, MAXRANK))
        start = _align(pos)
        chunks.append(b"\0" * (start - pos))
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        chunks.append(raw)
        e = k * ENTRY
        table[e:e + len(nb)] = nb
        struct.pack_into("<II", table, e + NAME, CODES[a.dtype], a.ndim)
        struct.pack_into("<8q", table, e + NAME + 8, *(list(a.shape) + [0] * (MAXRANK - a.ndim)))
        struct.pack_into("<QQ", table, e + NAME + 8 + 64, start, len(raw))
        pos = start + len(raw)
    body = bytes(table) + b"".join(chunks)
    size = HEADER + len(body)
    assert size == pos
    head = MAGIC + struct.pack("<IIQQQQ", VERSION, count, HEADER, data_off, size, fnv1a64(body)) + b"\0" * 16
    assert len(head) == HEADER
    return head + body


def write(path, tensors):
    with open(path, "wb") as f:
        f.write(encode(tensors))


class FormatError(Exception):
    pass


def decode(m):
    """Inverse of encode, with the checks rt_tf_open makes; FormatError on a
    bad image."""
    if len(m) < HEADER or m[:8] != MAGIC:
        raise FormatError("not a tensor file (magic)")
    version, count, table, data_off, size, csum = struct.unpack_from("<IIQQQQ", m, 8)
    if version != VERSION or table != HEADER or any(m[48:64]):
        raise FormatError("bad header")
    if size != len(m):
        raise FormatError("size field %d, file %d bytes" % (size, len(m)))
    if data_off != HEADER + ENTRY * count or data_off > size:
        raise FormatError("bad data offset")
    if fnv1a64(m[HEADER:]) != csum:
        raise FormatError("checksum mismatch")
    out = []
    for k in range(count):
        e = HEADER + k * ENTRY
        raw = m[e:e + NAME]
        if b"\0" not in raw or raw[0] == 0:
            raise FormatError("entry %d: bad name" % k)
        name = raw[:raw.index(b"\0")].decode()
        dtype, rank = struct.unpack_from("<II", m, e + NAME)
        dims = struct.unpack_from("<8q", m, e + NAME + 8)
        off, nbytes = struct.unpack_from("<QQ", m, e + NAME + 72)
        if any(m[e + 248:e + 256]) or dtype not in DTYPES or rank > MAXRANK:
            raise FormatError("entry %d (%s): bad dtype/rank/padding" % (k, name))
        if any(dims[rank:]) or any(d < 0 for d in dims[:rank]):
            raise FormatError("entry %d (%s): bad dims" % (k, name))
        dt = np.dtype(DTYPES[dtype]).newbyteorder("<")
        want = int(np.prod(dims[:rank], dtype=np.int64)) * dt.itemsize
        if nbytes != want or off % ALIGN or off < data_off or off + nbytes > size:
            raise FormatError("entry %d (%s): bad offset/size" % (k, name))
        a = np.frombuffer(m, dtype=dt, count=want // dt.itemsize, offset=off).reshape(dims[:rank])
        out.append((name, a.astype(DTYPES[dtype])))
    if len({n for n, _ in out}) != len(out):
        raise FormatError("duplicate names")
    return out


def read(path):
    with open(path, "rb") as f:
        return decode(f.read())
