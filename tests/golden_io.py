"""golden_io.py: what the generators of traced PyTorch models (gen_trace_wild,
gen_authors, gen_loop_styles) share to write their golden data sets: a
tensor as an ONNX TensorProto file, a module's nested outputs as one list,
and a seed per model that depends on its name alone (stable as models are
added to a generator)."""
import numpy as np
from onnx import numpy_helper


def write_pb(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def flatten(y):
    if isinstance(y, (tuple, list)):
        return [t for item in y for t in flatten(item)]
    return [y]


def model_seed(name, base):
    """base + a hash of the model's name (each generator its own base)."""
    return base + sum((i + 1) * ord(ch) for i, ch in enumerate(name)) % 100000
