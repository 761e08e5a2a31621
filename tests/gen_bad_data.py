#!/usr/bin/env python3
"""gen_bad_data.py SET DIR: data sets for `cellc verify` made from SET, a
data set whose outputs an oracle computed (the cli group passes
tests/out/rnn_cases/lstm_symbolic/test_data_set_0: ONNX LSTM, inputs X
f32[T, N, 4], sequence_lens i32[N], initial_h and initial_c f32[1, N, 5];
outputs Y, Y_h, Y_c).  Nothing here computes an output: each set is SET's
tensors, converted or spoilt.

  npy/               every tensor as a .npy file (what --testbench reads):
                     must pass as SET does
  npy_sets/          npy/ as test_data_set_0 (the multi-set layout)
  npy_wrong_shape/   npy/ with input_0.npy f32[T, N, 3]
  npy_wrong_dtype/   npy/ with input_1.npy int64 (sequence_lens is int32)
  wrong_shape/       input_0.pb f32[T, N, 3]
  wrong_dtype/       input_0.pb float64
  wrong_name/        input_0.pb's TensorProto named 'x', not 'X'
  swapped/           input_2.pb and input_3.pb exchanged (initial_c where
                     initial_h belongs: same shape, the names tell)
  output_shape/      output_1.pb (Y_h) f32[1, N, 4]
Every spoilt set must be refused (exit 2, the file and the tensor named),
not scored as a mismatch.

gen_bad_data.py --npy SET DIR: SET's tensors as .npy files in DIR only (for
a model whose shape input verify binds from the data)."""
import glob
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    t = onnx.load_tensor(path)
    return t.name, numpy_helper.to_array(t)


def save_pb(path, name, a):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())


def copy_set(src, dst):
    os.makedirs(dst, exist_ok=True)
    for p in glob.glob(os.path.join(src, "*.pb")):
        shutil.copy(p, dst)


def npy_set(src, dst):
    os.makedirs(dst, exist_ok=True)
    for p in glob.glob(os.path.join(src, "*.pb")):
        np.save(os.path.join(dst, os.path.basename(p)[:-3] + ".npy"), load(p)[1])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--npy":
        shutil.rmtree(sys.argv[3], ignore_errors=True)
        npy_set(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) != 3:
        sys.exit("usage: gen_bad_data.py [--npy] SET DIR")
    src, d = sys.argv[1], sys.argv[2]
    shutil.rmtree(d, ignore_errors=True)
    npy_set(src, os.path.join(d, "npy"))
    npy_set(src, os.path.join(d, "npy_sets", "test_data_set_0"))

    npy_set(src, os.path.join(d, "npy_wrong_shape"))
    x = load(os.path.join(src, "input_0.pb"))[1]
    np.save(os.path.join(d, "npy_wrong_shape", "input_0.npy"), x[:, :, :3])
    npy_set(src, os.path.join(d, "npy_wrong_dtype"))
    lens = load(os.path.join(src, "input_1.pb"))[1]
    assert lens.dtype == np.int32
    np.save(os.path.join(d, "npy_wrong_dtype", "input_1.npy"), lens.astype(np.int64))

    for case in ("wrong_shape", "wrong_dtype", "wrong_name", "swapped", "output_shape"):
        copy_set(src, os.path.join(d, case))
    name, x = load(os.path.join(src, "input_0.pb"))
    assert name == "X" and x.shape[2] == 4
    save_pb(os.path.join(d, "wrong_shape", "input_0.pb"), name, x[:, :, :3])
    save_pb(os.path.join(d, "wrong_dtype", "input_0.pb"), name, x.astype(np.float64))
    save_pb(os.path.join(d, "wrong_name", "input_0.pb"), "x", x)
    h, c = load(os.path.join(src, "input_2.pb")), load(os.path.join(src, "input_3.pb"))
    assert (h[0], c[0]) == ("initial_h", "initial_c")
    save_pb(os.path.join(d, "swapped", "input_2.pb"), *c)
    save_pb(os.path.join(d, "swapped", "input_3.pb"), *h)
    name, yh = load(os.path.join(src, "output_1.pb"))
    assert name == "Y_h" and yh.shape[2] == 5
    save_pb(os.path.join(d, "output_shape", "output_1.pb"), name, yh[:, :, :4])


if __name__ == "__main__":
    main()
