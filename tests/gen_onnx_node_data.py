"""gen_onnx_node_data.py: generates the official ONNX backend node tests with
python3-onnx's own generator (`onnx.backend.test.cmd_tools generate-data`),
unchanged, into OUTDIR/node/<test>/ (model.onnx, test_data_set_N/).

A test whose expected data onnx 1.12 computed from other attributes than its
model carries gets a second copy, OUTDIR/corrected/<test>/: the same model and
inputs, the outputs recomputed by onnx's own reference function of the
operator (the one the generator called) with the attributes the node
actually has, missing ones at the operator schema's defaults.  The harness
runs it there and says so (tests/onnx_node_tests.txt, `=name reason`):

  test_adam_multiple  the generator passes epsilon = 1e-2 to apply_adam but
                      leaves it off the node, so the node has the schema's
                      default, 1e-6

onnx 1.12's case files still use the numpy aliases np.float/np.int/np.bool/
np.object that numpy 1.24 removed; they are restored (as the builtins they
always aliased) before the generator is imported.  Nothing else is touched.

usage: gen_onnx_node_data.py OUTDIR
"""
import os
import sys
import warnings

import numpy as np

with warnings.catch_warnings():
    warnings.simplefilter("ignore")         # np.object's FutureWarning on lookup
    for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
        if not hasattr(np, alias):
            setattr(np, alias, builtin)

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnx.backend.test import cmd_tools  # noqa: E402


def node_attrs(node, domain, opset):
    """{name: value} of node's attributes, missing ones at the schema's default."""
    schema = onnx.defs.get_schema(node.op_type, opset, domain)
    attrs = {}
    for name, a in schema.attributes.items():
        if a.default_value.name:
            attrs[name] = onnx.helper.get_attribute_value(a.default_value)
    for a in node.attribute:
        attrs[a.name] = onnx.helper.get_attribute_value(a)
    return attrs


def adam_outputs(node, attrs, ins):
    """Adam's outputs (X_new..., V_new..., H_new...) by onnx's apply_adam."""
    from onnx.backend.test.case.node.adam import apply_adam
    r, t, rest = ins[0], ins[1], ins[2:]
    n = len(rest) // 4
    xs, gs, vs, hs = rest[:n], rest[n:2 * n], rest[2 * n:3 * n], rest[3 * n:]
    res = [apply_adam(r, t, xs[i], gs[i], vs[i], hs[i], attrs["norm_coefficient"],
                      attrs["norm_coefficient_post"], attrs["alpha"], attrs["beta"], attrs["epsilon"])
           for i in range(n)]
    return [np.asarray(res[i][k], dtype=xs[i].dtype) for k in range(3) for i in range(n)]


CORRECTED = {"test_adam_multiple": adam_outputs}


def correct(out, name, fn):
    """OUTDIR/corrected/NAME: NAME's model and inputs, outputs recomputed by fn."""
    src = os.path.join(out, "node", name)
    dst = os.path.join(out, "corrected", name)
    model = onnx.load(os.path.join(src, "model.onnx"))
    (node,) = model.graph.node
    opset = max(o.version for o in model.opset_import if o.domain == node.domain)
    attrs = node_attrs(node, node.domain, opset)
    sets = sorted(d for d in os.listdir(src) if d.startswith("test_data_set_"))
    for s in sets:
        os.makedirs(os.path.join(dst, s), exist_ok=True)
        ins = []
        for k in range(len(node.input)):
            t = onnx.TensorProto()
            with open(os.path.join(src, s, "input_%d.pb" % k), "rb") as f:
                t.ParseFromString(f.read())
            ins.append(numpy_helper.to_array(t))
            with open(os.path.join(dst, s, "input_%d.pb" % k), "wb") as f:
                f.write(t.SerializeToString())
        outs = fn(node, attrs, ins)
        assert len(outs) == len(node.output), name
        for k, (o, oname) in enumerate(zip(outs, node.output)):
            with open(os.path.join(dst, s, "output_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(o, oname).SerializeToString())
    onnx.save(model, os.path.join(dst, "model.onnx"))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_onnx_node_data.py OUTDIR")
    out = os.path.abspath(sys.argv[1])
    np.random.seed(0)                       # some cases draw random inputs
    sys.argv = ["onnx-backend-test-tools", "generate-data", "-o", out]
    cmd_tools.main()
    for name, fn in sorted(CORRECTED.items()):
        correct(out, name, fn)
    n = len(os.listdir(os.path.join(out, "node")))
    print("gen_onnx_node_data: %d node tests in %s/node" % (n, out))


if __name__ == "__main__":
    main()
