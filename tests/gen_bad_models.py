"""gen_bad_models.py: malformed and unsupported ONNX models, each with what
`cellc compile` must say about it.

Every case must make `build-san/cellc compile MODEL -o DIR` (the compiler
built with AddressSanitizer and UndefinedBehaviorSanitizer) exit with status
2, print an error that contains each expected substring (always the model's
path; the node's name and the offending name or value where there is one),
and produce no sanitizer report.  tests/run.sh checks that, reading the
manifest written here: OUTDIR/cases.tsv (UTF-8), one case per line,
    NAME <TAB> MODEL_PATH <TAB> SUBSTRING [<TAB> SUBSTRING ...]

many_unsupported holds 44 nodes of four operators cellc does not have, more
than the 20 errors cellc prints: its expected substring is the count of the
rest by operator ("... and 24 more errors (4 distinct: ...)"), worked out
here from the order of the nodes, and OUTDIR/many_unsupported/expect.json
holds what `cellc info --unsupported` must list (every operator, its count).

usage: gen_bad_models.py OUTDIR
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

T, B, I, H = 4, 2, 3, 5
MANIFEST = []


def lstm_graph(node_name="lstm", W=None, R=None, attrs=None, w_name="W", extra_nodes=(),
               inits=None, outputs=None):
    rng = np.random.RandomState(7)
    W = rng.randn(1, 4 * H, I).astype(np.float32) if W is None else W
    R = rng.randn(1, 4 * H, H).astype(np.float32) if R is None else R
    a = dict(hidden_size=H)
    a.update(attrs or {})
    node = helper.make_node("LSTM", ["X", w_name, "R"], ["Y", "Y_h"], name=node_name, **a)
    if inits is None:
        inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R")]
    outs = outputs or [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, B, H])]
    return helper.make_graph([node] + list(extra_nodes), "bad",
                             [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
                             outs, inits)


def bare_tensor(name, dims, dtype=TensorProto.FLOAT):
    """A TensorProto header with no data (helper.make_tensor insists on data)."""
    t = TensorProto()
    t.name, t.data_type = name, dtype
    t.dims.extend(dims)
    return t


def model_of(graph, opset=14):
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="cellc-tests")


def emit(outdir, name, data, *expect, fname=None):
    """Writes model bytes (or a model) to OUTDIR/name/<fname or name.onnx>."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, fname or (name + ".onnx"))
    if isinstance(data, onnx.ModelProto):
        data = data.SerializeToString()
    if data is not None:
        with open(path, "wb") as f:
            f.write(data)
    MANIFEST.append((name, path) + tuple(e for e in expect if e))


# cellc prints the first MAX_ERRORS errors, then counts the rest by operator
MAX_ERRORS = 20


def many_unsupported(outdir):
    """A chain of nodes of unknown operators (each reads the previous one's
    output, so they are loaded, and refused, in this order) beside a
    supported Relu that gives the graph its output."""
    runs = [("NoSuchOpAlpha", "", 12), ("NoSuchOpBeta", "", 10), ("Custom", "com.example", 3),
            ("NoSuchOpAlpha", "", 9), ("NoSuchOpBeta", "", 6), ("NoSuchOpDelta", "", 4)]
    nodes, prev, order = [helper.make_node("Relu", ["X"], ["Y"], name="relu")], "X", []
    for op, domain, n in runs:
        for _ in range(n):
            k = len(order)
            nodes.append(helper.make_node(op, [prev], ["u%d" % k], name="bad_%d" % k, domain=domain or None))
            prev = "u%d" % k
            order.append(domain + "." + op if domain else op)
    g = helper.make_graph(nodes, "many_unsupported",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [T, B, I])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.example", 1)],
                          producer_name="cellc-tests")
    hidden, first = {}, {}
    for i, op in enumerate(order):
        first.setdefault(op, i)
        if i >= MAX_ERRORS:
            hidden[op] = hidden.get(op, 0) + 1
    ranked = sorted(hidden, key=lambda op: (-hidden[op], first[op]))
    cap = "... and %d more errors (%d distinct: %s)" % (
        sum(hidden.values()), len(hidden), ", ".join("%s \u00d7%d" % (op, hidden[op]) for op in ranked))
    counts = {op: order.count(op) for op in first}
    emit(outdir, "many_unsupported", m, "node 'bad_0' (NoSuchOpAlpha, opset 14)", cap)
    with open(os.path.join(outdir, "many_unsupported", "expect.json"), "w") as f:
        json.dump({"nodes": len(order), "ops": counts,
                   "reasons": {"NoSuchOpAlpha": "unsupported operator NoSuchOpAlpha",
                               "com.example.Custom": "operator domain 'com.example' is not supported"}}, f)


def external_model(outdir, name, location, nbytes=None, offset=None, length=None, write_file=True):
    """LSTM whose W lives in an external file at `location` (as written in
    the model, relative to the model's directory unless absolute)."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    rng = np.random.RandomState(3)
    W = rng.randn(1, 4 * H, I).astype(np.float32)
    raw = W.tobytes()
    if write_file:
        target = location if os.path.isabs(location) else os.path.join(d, location)
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        with open(target, "wb") as f:
            f.write(raw[:nbytes] if nbytes is not None else raw)
    wt = bare_tensor("W", W.shape)
    wt.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = wt.external_data.add()
            e.key, e.value = k, str(v)
    R = rng.randn(1, 4 * H, H).astype(np.float32)
    g = lstm_graph(node_name=name + "_lstm", inits=[wt, numpy_helper.from_array(R, "R")])
    return model_of(g)


def emit_text(outdir, name, text, *expect):
    """A native .cell model (text) and what its error must name."""
    emit(outdir, name, text.encode(), *expect, fname=name + ".cell")


RECURRENCE = """graph g {
	input %%x: f32[%s]
	input %%h0: f32[%s]
	%%hT, %%y = Recurrence(%%x, %%h0) {n_seq = 1, n_state = 1, n_out = 1, reverse = 0, seq_axis = [0], \
out_axis = [0], has_lens = 0, has_step = 0} body {  # %s  node "rec_node"
		input %%bx: f32[3, 5]
		input %%bh: f32[3, 5]
		%%s = Add(%%bx, %%bh)
		output %%s, %%s
	}
	output %%hT, %%y
}
"""


def nested_seq_loops(M):
    """Two nested Loops of M iterations appending x to a carried sequence:
    M*M SequenceInserts, each copying the whole list when unrolled."""
    vi, seq_t = helper.make_tensor_value_info, helper.make_tensor_sequence_value_info
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c2_in"], ["c2_out"]),
         helper.make_node("SequenceInsert", ["s2_in", "x"], ["s2_out"], name="inner_insert")],
        "inner", [vi("it2", TensorProto.INT64, []), vi("c2_in", TensorProto.BOOL, []),
                  seq_t("s2_in", TensorProto.FLOAT, [2])],
        [vi("c2_out", TensorProto.BOOL, []), seq_t("s2_out", TensorProto.FLOAT, [2])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Loop", ["M", "", "s_in"], ["s_out"], body=inner, name="inner_loop")],
        "outer", [vi("it", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []),
                  seq_t("s_in", TensorProto.FLOAT, [2])],
        [vi("c_out", TensorProto.BOOL, []), seq_t("s_out", TensorProto.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x"], ["s0"]),
         helper.make_node("Loop", ["M", "", "s0"], ["sT"], body=outer, name="outer_loop"),
         helper.make_node("SequenceAt", ["sT", "m1"], ["y"])],
        "nested", [vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.array(M, np.int64), "M"),
                     numpy_helper.from_array(np.array(-1, np.int64), "m1")])
    m = model_of(g, 13)
    m.ir_version = 7
    return m


def robustness_cases(out, W):
    """Issue 17: types stated by the text format are checked, not trusted;
    the memory budget (--max-memory) is enforced before allocating; nested
    unrolling is bounded in all."""
    # a Recurrence's annotation against its body: a wrong type used to size
    # the output buffer (heap overflow in the emitted code)
    # derived dimension symbols (T_minus_1 = T - 1) that do not define one
    for name, sym, what in (("sym_derived_offset_zero", "U = T - 0", "offset 0 out of range"),
                            ("sym_derived_unknown_base", "U = Q + 1", "expected a symbol declared before it"),
                            ("sym_derived_of_derived", "V = T - 1, U = V - 1", "not in canonical form"),
                            ("sym_derived_product", "U = T * 2", "expected '+' or '-'"),
                            ("sym_floor_common_factor", "U = floor(2 * T / 4)", "not in canonical form"),
                            ("sym_floor_div_one", "U = floor(T / 1)", "a divisor D of 2"),
                            ("sym_pin_free", "U = floor((T + 1) / 2) == 0", "'==' and a constant of 1")):
        emit_text(out, name, "graph g {\n\tsymbols T, %s\n\tinput %%x: f32[T, 3]\n\t%%y = Relu(%%x)\n"
                  "\toutput %%y\n}\n" % sym, "symbol '", what)
    # made-up names continue past the largest %NAME<N> of the text (a name
    # ending in 2^31 - 1 overflowed the counter: fuzz_cell finding)
    emit_text(out, "made_up_name_counter", "graph g {\n\tinput %x: f32[2, 3]\n\t%t2147483647 = Relu(%x)\n"
              "\t%a = Relu(%t2147483647)\n\t%b = Relu(%a)\n\t%y = Frobnicate(%b)\n\toutput %y\n}\n",
              "Frobnicate")
    # a training build's record (`train` line, `param K`, the `backward`
    # annotation) is checked against the graph as it is read
    TRAIN = ("graph g {\n\ttrain loss \"mse\"%s\n\tinput %%x: f32[2, 3]\n\tinput %%target: f32[2, 3]\n"
             "\tweight %%w: f32[3, 3]%s\n\t%%y = MatMul(%%x, %%w)\n"
             "\t%%loss = MseLoss(%%y, %%target)\n\t%%d = MseLossGrad(%%loss, %%y, %%target)%s\n"
             "\t%%gw = Gemm(%%x, %%d) {transA = 1}\n\toutput %%y, %%loss, %%gw\n}\n")
    GRADED = (", x_input 0, batch_axis 1, time_axis 0, logits_output 0, loss_output_index 1, classes 0, "
              "forward_outputs 1")
    for name, text, what in (
            ("train_unknown_loss", TRAIN.replace('"mse"', '"hinge"') % ("", " param 0", ""), "ce, ce-all"),
            ("train_partly_graded", TRAIN % (", x_input 0, classes 0", " param 0", ""), "gives all of"),
            ("train_output_out_of_range", TRAIN % (GRADED.replace("loss_output_index 1", "loss_output_index 7"),
                                                    " param 0", "  # f32[2, 3]  node \"d\" backward"),
             "do not fit the graph"),
            ("train_no_backward_node", TRAIN % (GRADED, " param 0", ""), "annotation 'backward'"),
            ("train_param_twice", TRAIN.replace("\tweight %%w: f32[3, 3]%s\n",
                                                "\tweight %%w: f32[3, 3]%s\n\tweight %%v: f32[3] param 0\n")
             % ("", " param 0", ""), "both param 0"),
            ("train_weight_not_param", TRAIN % (GRADED, "", "  # f32[2, 3]  node \"d\" backward"), "which is no 'param'"),
            ("train_param_without_train", TRAIN.replace("\ttrain loss \"mse\"%s\n", "%s") % ("", " param 0", ""),
             "training build")):
        emit_text(out, name, text, what)
    # fuzz finding (session 11): DepthToSpace with blocksize 0 in a graph
    # block, which skips the ONNX loader's attribute checks (a division by zero)
    emit_text(out, "depthtospace_blocksize_0", "graph g {\n\tinput %x: f32[1, 8, 2, 3]\n"
              "\t%y = DepthToSpace(%x) {blocksize = 0, mode = \"DCR\"}\n\toutput %y\n}\n",
              "blocksize 0 is not between 1 and 65536")
    emit_text(out, "rec_annotation_wrong_type", RECURRENCE % ("4, 3, 5", "3, 5", "f32[1], f32[4, 3, 5]"),
              "rec_node", "stated as f32[1]", "f32[3, 5]")
    emit_text(out, "rec_annotation_wrong_dtype", RECURRENCE % ("4, 3, 5", "3, 5", "f32[3, 5], i64[4, 3, 5]"),
              "rec_node", "stated as i64")
    emit_text(out, "rec_body_input_mismatch", RECURRENCE % ("4, 3, 7", "3, 5", "_, _"),
              "rec_node", "body input 0", "f32[3, 7]")
    emit_text(out, "rec_state_input_mismatch", RECURRENCE % ("4, 3, 5", "3, 2", "_, _"),
              "rec_node", "body input 1", "f32[3, 2]")
    emit_text(out, "rec_has_step_out_of_range",
              (RECURRENCE % ("4, 3, 5", "3, 5", "_, _")).replace("has_step = 0", "has_step = 7"),
              "has_step 0, 1 or 2")
    base = RECURRENCE % ("4, 3, 5", "3, 5", "_, _")
    emit_text(out, "rec_lens_not_int32", base.replace("has_lens = 0", "has_lens = 1")
              .replace("(%x, %h0)", "(%x, %h0, %h0)"), "rec_node", "lengths input 'h0'", "i32[3]")
    emit_text(out, "rec_step_not_scalar", base.replace("has_step = 0", "has_step = 1")
              .replace("\t\tinput %bh: f32[3, 5]\n", "\t\tinput %bh: f32[3, 5]\n\t\tinput %st: i64[2]\n"),
              ":4:", "step counter")
    # sizes that pass the per-dimension limits but not the budget
    emit_text(out, "budget_cell_param",
              "cell big(x; h) {\n    param W[1073741824, 16]\n    h' = tanh(h)\n}\n"
              "model m {\n    input x: f32[seq, batch, 16]\n    h1 = big(x, hidden=4)\n    output h1\n}\n",
              ":2:11:", "h1.W", "memory budget", "--max-memory")
    # a refused parameter read by the cell's equations: its name stays bound
    # to no value (a NULL dereference after the located error, issue 43)
    BIG_CELL = ("cell big(x; h) {\n    param %s\n    h' = %s\n}\n"
                "model m {\n    input x: f32[seq, batch, 16]\n    h1 = big(x, hidden=4)\n    output h1\n}\n")
    emit_text(out, "budget_cell_param_read", BIG_CELL % ("W[1073741824, 16]", "tanh(W @ x)"),
              ":2:11:", "h1.W", "memory budget")
    emit_text(out, "budget_cell_param_read_second", BIG_CELL % ("W[H, I], U[1073741824, 16]", "tanh(W @ x + U @ h)"),
              ":2:20:", "h1.U", "memory budget")
    emit_text(out, "budget_cell_bias_read", BIG_CELL % ("b[1073741824], W[H, I]", "modrelu(W @ x, b)"),
              ":2:11:", "h1.b", "memory budget")
    # shapes whose dimensions each pass the limit but whose element count
    # overflows int64 (signed overflow in ir_dim_mul before issue 43)
    for name, decl in (("shape_overflow_weight", "weight %w: f32[3037000500, 3037000500, 3]"),
                       ("shape_overflow_const", "const %w: f32[4294967296, 4294967296] = elided fnv1a:0"),
                       ("shape_overflow_input", "input %w: f32[2147483648, 2147483648, 2147483648]")):
        emit_text(out, name, "graph g {\n\tinput %%x: f32[4]\n\t%s\n\t%%y = Add(%%x, %%x)\n\toutput %%y\n}\n" % decl,
                  ":3:", "overflows int64")
    emit_text(out, "shape_overflow_model_input",
              "model m {\n    input x: f32[2147483648, 2147483648, 2147483648]\n    h1 = lstm(x, hidden=4)\n"
              "    output h1\n}\n", ":2:17:", "overflows int64")
    emit_text(out, "budget_lstm_hidden",
              "model m {\n    input x: f32[seq, batch, 3]\n    h1 = lstm(x, hidden=1048576)\n    output h1\n}\n",
              ":3:", "memory budget")
    emit_text(out, "budget_graph_weight",
              "graph g {\n\tinput %x: f32[4]\n\tweight %w: f32[1073741824, 2]\n\t%y = Add(%x, %x)\n\toutput %y\n}\n",
              ":3:", "'w'", "memory budget")
    emit_text(out, "budget_graph_const",
              "graph g {\n\tinput %x: f32[4]\n\tconst %c: f32[1073741824] = elided fnv1a:0\n"
              "\t%y = Add(%x, %x)\n\toutput %y\n}\n", ":3:", "'c'", "memory budget")
    # an initializer whose external data would be 8 GiB: refused before reading
    t = bare_tensor("W", [1, 4 * H, 1 << 29])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin"
    emit(out, "budget_external_data", model_of(lstm_graph("lstm_ext_huge", inits=[
        t, numpy_helper.from_array(np.zeros((1, 4 * H, H), np.float32), "R")])), "'W'", "memory budget")
    # nested loops carrying a sequence: 128 x 128 inserts of an ever longer list
    emit(out, "unroll_nested_loops", nested_seq_loops(128), "inner_insert", "unrolling budget")


def image_cases(out):
    """Resize/Upsample/GridSample forms cellc refuses (exit 2, located)."""
    F = TensorProto.FLOAT

    def one(name, opset, nodes, inputs, inits, *expect):
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, F if n != "sz" else TensorProto.INT64, s)
                                            for n, s in inputs],
                              [helper.make_tensor_value_info("Y", F, None)], initializer=inits)
        emit(out, name, model_of(g, opset), *expect)

    x = [("X", [1, 1, 4, 4])]
    sc = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc")
    # scales computed at run time from a graph input
    one("resize_runtime_scales", 13,
        [helper.make_node("Abs", ["s"], ["sa"], name="abs_s"),
         helper.make_node("Resize", ["X", "", "sa"], ["Y"], name="resize_rt")],
        x + [("s", [4])], [], "resize_rt", "'scales'", "must be a constant", "graph input 's'")
    one("resize_antialias", 18, [helper.make_node("Resize", ["X", "", "sc"], ["Y"], name="resize_aa", mode="linear",
                                                  antialias=1)], x, [sc], "resize_aa", "antialias")
    one("resize_scales_and_sizes", 13,
        [helper.make_node("Resize", ["X", "", "sc", "sz0"], ["Y"], name="resize_both")], x,
        [sc, numpy_helper.from_array(np.array([1, 1, 8, 8], np.int64), "sz0")], "resize_both", "exactly one")
    one("resize_bad_mode", 13, [helper.make_node("Resize", ["X", "", "sc"], ["Y"], name="resize_area",
                                                 mode="area")], x, [sc], "resize_area", "'mode'", "area")
    one("resize10_nearest_downscale", 10,
        [helper.make_node("Resize", ["X", "half"], ["Y"], name="resize10_down")], x,
        [numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "half")], "resize10_down", "downsample")
    one("upsample_opset10", 10, [helper.make_node("Upsample", ["X", "sc"], ["Y"], name="up10")], x, [sc],
        "up10", "deprecated")
    # a run-time axis resizes by any scale (scale(W, 1.3)), but only an axis of one
    # symbol: twice W (a Concat of it with itself) by 1.3 has no size expression
    one("resize_symbolic_axis", 13, [helper.make_node("Concat", ["X", "X"], ["X2"], name="twice", axis=3),
                                     helper.make_node("Resize", ["X2", "", "sc13"], ["Y"], name="resize_sym")],
        [("X", [1, 1, 4, "W"])], [numpy_helper.from_array(np.array([1, 1, 2, 1.3], np.float32), "sc13")],
        "resize_sym", "run-time size 2*W", "no symbol of its own")
    # keep_aspect_ratio_policy over a run-time axis: its common scale is known at run time only
    one("resize_policy_symbolic_axis", 18,
        [helper.make_node("Resize", ["X", "", "", "sz2"], ["Y"], name="resize_keep", axes=[2, 3],
                          keep_aspect_ratio_policy="not_larger")],
        [("X", [1, 1, 4, "W"])], [numpy_helper.from_array(np.array([8, 8], np.int64), "sz2")],
        "resize_keep", "run-time size W", "keep_aspect_ratio_policy not_larger")
    # ConvTranspose: ONNX Runtime refuses an output_shape of stride * D + span or
    # more (D = 3, stride 2, span 3: 9 is the most) and an output_padding not below
    # the stride or the dilation
    w = numpy_helper.from_array(np.ones((1, 1, 3), np.float32), "w")
    one("convt_output_shape_long", 13, [helper.make_node("ConvTranspose", ["X", "w"], ["Y"], name="convt_long",
                                                         strides=[2], output_shape=[10])],
        [("X", [1, 1, 3])], [w], "convt_long", "output_shape 10", "at least 4", "ONNX Runtime refuses 3")
    one("convt_output_padding", 13, [helper.make_node("ConvTranspose", ["X", "w"], ["Y"], name="convt_opad",
                                                      strides=[2], output_padding=[2])],
        [("X", [1, 1, "L"])], [w], "convt_opad", "output_padding 2", "below its stride or its dilation (2)")
    one("gridsample_5d", 20, [helper.make_node("GridSample", ["X", "G"], ["Y"], name="grid5")],
        [("X", [1, 1, 2, 3, 4]), ("G", [1, 2, 3, 4, 3])], [], "grid5", "2-D GridSample")
    # a required shape input left empty (fuzz_onnx_train finding: a NULL value
    # reached the "must be a constant" message)
    one("pad_pads_empty", 13, [helper.make_node("Pad", ["X", ""], ["Y"], name="pad_nopads")], x, [],
        "pad_nopads", "input 1 ('pads') is missing")
    # fuzz finding (session 11): an empty input in a variadic Sum (a NULL
    # operand reached the broadcast)
    one("sum_input_empty", 13, [helper.make_node("Sum", ["X", "", "X"], ["Y"], name="sum_hole")], x, [],
        "sum_hole", "input 1 is missing")
    one("gridsample16_linear", 16, [helper.make_node("GridSample", ["X", "G"], ["Y"], name="grid16",
                                                     mode="linear")],
        x + [("G", [1, 2, 2, 2])], [], "grid16", "bilinear nearest bicubic")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_bad_models.py OUTDIR")
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    good = model_of(lstm_graph()).SerializeToString()

    # --- not a valid protobuf encoding of ModelProto
    emit(out, "truncated_half", good[:len(good) // 2])
    emit(out, "truncated_last_byte", good[:-1])
    emit(out, "garbage_text", b"this is not an onnx model\n" * 8)
    emit(out, "garbage_bytes", bytes(np.random.RandomState(11).randint(0, 256, 512, dtype=np.uint8)))
    emit(out, "empty_file", b"")
    # ir_version (field 1, int64) sent as length-delimited; graph (field 7,
    # message) sent as a varint
    emit(out, "wrong_wire_type_ir_version", good + b"\x0a\x01\x00")
    emit(out, "wrong_wire_type_graph", good + b"\x38\x01")
    # a huge length prefix for the graph field
    emit(out, "length_past_end", good + b"\x3a\xff\xff\xff\xff\x0f")
    emit(out, "missing_file", None, fname="does_not_exist.onnx")
    emit(out, "directory_as_model", None, fname="dir.onnx")
    os.makedirs(os.path.join(out, "directory_as_model", "dir.onnx"))

    # --- shapes that disagree
    rng = np.random.RandomState(5)
    emit(out, "lstm_W_bad_shape",
         model_of(lstm_graph("lstm_w_shape", W=rng.randn(1, 4 * H + 1, I).astype(np.float32))),
         "lstm_w_shape")
    emit(out, "lstm_R_bad_shape",
         model_of(lstm_graph("lstm_r_shape", R=rng.randn(1, 4 * H, H + 1).astype(np.float32))),
         "lstm_r_shape")
    emit(out, "lstm_hidden_size_mismatch",
         model_of(lstm_graph("lstm_hs", attrs=dict(hidden_size=H + 1))), "lstm_hs")
    emit(out, "lstm_X_rank2", model_of(helper.make_graph(
        [helper.make_node("LSTM", ["X", "W", "R"], ["", "Y_h"], name="lstm_rank", hidden_size=H)], "bad",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, I])],
        [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.randn(1, 4 * H, I).astype(np.float32), "W"),
         numpy_helper.from_array(rng.randn(1, 4 * H, H).astype(np.float32), "R")])), "lstm_rank")

    def binary(name, op, sa, sb, node):
        g = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"], name=node)], "bad",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, sa),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, sb)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        emit(out, name, model_of(g), node)
    binary("add_incompatible", "Add", [2, 3], [4], "add_node")
    binary("mul_incompatible", "Mul", [2, 3, 4], [2, 4], "mul_node")
    binary("matmul_incompatible", "MatMul", [2, 3], [4, 5], "matmul_node")
    g = helper.make_graph([helper.make_node("Reshape", ["a", "shape"], ["y"], name="reshape_node")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([7], np.int64), "shape")])
    emit(out, "reshape_wrong_count", model_of(g), "reshape_node")
    g = helper.make_graph([helper.make_node("Concat", ["a", "b"], ["y"], name="concat_node", axis=0)], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    emit(out, "concat_mismatch", model_of(g), "concat_node")

    # --- data-dependent lengths: only graph outputs may have one; Scatter
    # after its deprecation; TfIdfVectorizer pools cellc cannot take
    # (a Transpose of it, torch.nonzero's form, compiles: datadep nonzero_transposed;
    # a Cast would read NonZero's rows past the length, which are undefined)
    g = helper.make_graph([helper.make_node("NonZero", ["a"], ["nz"], name="nonzero_node"),
                           helper.make_node("Cast", ["nz"], ["y"], name="cast_node", to=TensorProto.FLOAT)], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    emit(out, "nonzero_consumed", model_of(g), "node 'cast_node'", "input 0 ('nz') has a data-dependent length",
         "NonZero 'nonzero_node'", "only as an output of the model")
    g = helper.make_graph([helper.make_node("Compress", ["a", "c"], ["sel"], name="compress_node", axis=1),
                           helper.make_node("Identity", ["sel"], ["y"], name="identity_node")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("c", TensorProto.BOOL, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    emit(out, "compress_consumed", model_of(g), "node 'identity_node'", "('sel') has a data-dependent length",
         "Compress 'compress_node'")
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("NonZero", ["a"], ["nz"], name="nonzero_in_body")], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("nz", TensorProto.INT64, None)])
    g = helper.make_graph([helper.make_node("Loop", ["M", ""], ["scan"], body=body, name="loop_node")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("scan", TensorProto.INT64, None)],
                          [numpy_helper.from_array(np.array(2, np.int64), "M")])
    emit(out, "nonzero_in_loop_body", model_of(g, 13), "node 'nonzero_in_body'", "not inside a loop body")
    g = helper.make_graph([helper.make_node("Scatter", ["a", "i", "u"], ["y"], name="scatter_node")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("i", TensorProto.INT64, [1, 3]),
                           helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    emit(out, "scatter_opset11", model_of(g, 11), "scatter_node", "deprecated since opset 11")

    def tfidf(name, node, **attrs):
        g = helper.make_graph([helper.make_node("TfIdfVectorizer", ["x"], ["y"], name=node, **attrs)], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.INT64, [6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        return model_of(g, 9)
    base = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0, ngram_counts=[0, 2])
    emit(out, "tfidf_pool_strings", tfidf("tfidf_pool_strings", "tfidf_strings", pool_strings=["a", "b", "c", "d"],
                                          ngram_indexes=[0, 1, 2], **base), "tfidf_strings", "pool_strings")
    emit(out, "tfidf_index_count", tfidf("tfidf_index_count", "tfidf_count", pool_int64s=[1, 2, 3, 4],
                                         ngram_indexes=[0, 1], **base),
         "tfidf_count", "the pool holds 3 n-grams but ngram_indexes has 2 entries")

    # --- names that are never defined, cycles
    emit(out, "missing_initializer", model_of(lstm_graph("lstm_missing", w_name="W_undefined")),
         "lstm_missing", "W_undefined")
    emit(out, "graph_output_undefined", model_of(lstm_graph(
        outputs=[helper.make_tensor_value_info("ghost", TensorProto.FLOAT, None)])), "ghost")
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["a"], name="cyc1"),
                           helper.make_node("Relu", ["a"], ["b"], name="cyc2")], "bad",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    emit(out, "cycle", model_of(g))

    # --- unsupported operators and attribute values
    # Einsum whose ellipsis axes broadcast (1 against 4): valid ONNX that cellc refuses
    g = helper.make_graph([helper.make_node("Einsum", ["a", "b"], ["y"], name="einsum_node",
                                            equation="...ij,...jk->...ik")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 2, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2, 4])])
    emit(out, "unsupported_einsum_broadcast", model_of(g, 13), "Einsum", "einsum_node", "broadcast")
    # an equation whose terms do not fit the operands, a DFT on the batch axis
    g = helper.make_graph([helper.make_node("Einsum", ["a"], ["y"], name="einsum_rank", equation="ijk->k")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    emit(out, "einsum_equation_rank", model_of(g, 13), "einsum_rank", "3 letters for an operand of rank 2")
    g = helper.make_graph([helper.make_node("DFT", ["a"], ["y"], name="dft_batch", axis=0)], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 8, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    emit(out, "dft_batch_axis", model_of(g, 17), "dft_batch", "signal axis")
    g = helper.make_graph([helper.make_node("FusedGemm", ["a", "b"], ["y"], name="ms_node",
                                            domain="com.microsoft")], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)])
    emit(out, "unsupported_domain", m, "FusedGemm", "ms_node")
    # com.microsoft DynamicQuantizeLSTM (read as an LSTM on dequantized
    # weights): W given in float, and R's per-output scale one short
    for tag, wdt, rs in (("float_weights", TensorProto.FLOAT, 8), ("scale_length", TensorProto.INT8, 7)):
        ws = [helper.make_tensor("W", wdt, [1, 3, 8], [1] * 24),
              helper.make_tensor("R", TensorProto.INT8, [1, 2, 8], [1] * 16),
              helper.make_tensor("ws", TensorProto.FLOAT, [1], [0.1]),
              helper.make_tensor("wz", wdt, [1], [0]),
              helper.make_tensor("rs", TensorProto.FLOAT, [1, rs], [0.1] * rs),
              helper.make_tensor("rz", TensorProto.INT8, [1, rs], [0] * rs)]
        g = helper.make_graph([helper.make_node("DynamicQuantizeLSTM", ["x", "W", "R", "", "", "", "", "", "ws", "wz",
                                                                         "rs", "rz"], ["y"], name="dq_" + tag,
                                                domain="com.microsoft", hidden_size=2)], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], ws)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)])
        emit(out, "dynquant_lstm_" + tag, m, "dq_" + tag,
             "W must be an int8 or uint8" if tag == "float_weights" else "R_scale (float) and R_zero_point")
    # com.microsoft MatMulIntegerToFloat / DynamicQuantizeMatMul (read as the
    # standard operators around a MatMulInteger): too few inputs, and a
    # float B, which MatMulInteger refuses
    mi = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])]
    bf = [helper.make_tensor("bf", TensorProto.FLOAT, [3, 4], [0.5] * 12),
          helper.make_tensor("bs", TensorProto.FLOAT, [], [0.1])]
    for tag, op, ins, words in (("mmitf_arity", "MatMulIntegerToFloat", ["a", "bf", "bs"], "4 to 7 inputs"),
                                ("dqmm_float_b", "DynamicQuantizeMatMul", ["a", "bf", "bs"], "must be u8 or i8")):
        g = helper.make_graph([helper.make_node(op, ins, ["y"], name=tag, domain="com.microsoft")], "bad", mi,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], bf)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("com.microsoft", 1)])
        emit(out, tag, m, tag, words)
    # random operators and training modes: attribute values cellc cannot honour
    f = TensorProto.FLOAT
    g = helper.make_graph([helper.make_node("RandomUniform", [], ["y"], name="ru_noshape")], "bad", [],
                          [helper.make_tensor_value_info("y", f, [2])])
    emit(out, "random_uniform_no_shape", model_of(g, 15), "shape", "ru_noshape")
    g = helper.make_graph([helper.make_node("RandomNormal", [], ["y"], name="rn_int", shape=[2],
                                            dtype=TensorProto.INT32)], "bad", [],
                          [helper.make_tensor_value_info("y", TensorProto.INT32, [2])])
    emit(out, "random_normal_int_dtype", model_of(g, 15), "i32", "rn_int")
    g = helper.make_graph([helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop_all")], "bad",
                          [helper.make_tensor_value_info("x", f, [4])], [helper.make_tensor_value_info("y", f, [4])],
                          [numpy_helper.from_array(np.array(1.0, np.float32), "r"),
                           numpy_helper.from_array(np.array(True), "t")])
    emit(out, "dropout_training_ratio_one", model_of(g, 15), "[0, 1)", "drop_all")
    g = helper.make_graph([helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                                            ["y", "rm", "rv", "sm", "sv"], name="bn_old_train")], "bad",
                          [helper.make_tensor_value_info("x", f, [2, 3, 4])] +
                          [helper.make_tensor_value_info(n, f, [3]) for n in "sbmv"],
                          [helper.make_tensor_value_info("y", f, [2, 3, 4])] +
                          [helper.make_tensor_value_info(n, f, [3]) for n in ("rm", "rv", "sm", "sv")])
    emit(out, "batchnorm_training_opset9", model_of(g, 9), "opsets before 14", "bn_old_train")
    body = helper.make_graph([helper.make_node("RandomUniformLike", ["s_in"], ["r"], name="draw_in_body"),
                              helper.make_node("Add", ["s_in", "r"], ["s_out"]),
                              helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("s_in", f, [2, 3])],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("s_out", f, [2, 3])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "c", "x"], ["y"], body=body, name="loop")], "bad",
                          [helper.make_tensor_value_info("x", f, [2, 3])], [helper.make_tensor_value_info("y", f, [2, 3])],
                          [numpy_helper.from_array(np.array(3, np.int64), "M"),
                           numpy_helper.from_array(np.array(True), "c")])
    emit(out, "random_in_loop_body", model_of(g, 15), "loop body", "draw_in_body")
    emit(out, "lstm_direction_sideways",
         model_of(lstm_graph("lstm_sideways", attrs=dict(direction="sideways"))), "sideways", "lstm_sideways")
    emit(out, "lstm_activation_unknown",
         model_of(lstm_graph("lstm_gelu", attrs=dict(activations=["Sigmoid", "Gelu", "Tanh"]))),
         "Gelu", "lstm_gelu")
    emit(out, "lstm_activation_count",
         model_of(lstm_graph("lstm_nact", attrs=dict(activations=["Sigmoid", "Tanh"]))), "lstm_nact")
    bad_attr = lstm_graph("lstm_hs_float")
    bad_attr.node[0].attribute[0].CopyFrom(helper.make_attribute("hidden_size", 5.0))
    emit(out, "lstm_hidden_size_wrong_type", model_of(bad_attr), "hidden_size", "lstm_hs_float")

    # --- initializer contents that do not match their header
    W = rng.randn(1, 4 * H, I).astype(np.float32)
    t = numpy_helper.from_array(W, "W")
    t.raw_data = t.raw_data[:-4]
    emit(out, "raw_data_short", model_of(lstm_graph("lstm_raw", inits=[
        t, numpy_helper.from_array(rng.randn(1, 4 * H, H).astype(np.float32), "R")])), "raw_data")
    t = helper.make_tensor("W", TensorProto.FLOAT, W.shape, W.flatten().tolist())
    del t.float_data[-3:]
    emit(out, "typed_data_short", model_of(lstm_graph("lstm_typed", inits=[
        t, numpy_helper.from_array(rng.randn(1, 4 * H, H).astype(np.float32), "R")])))
    t = bare_tensor("W", [2 ** 40, 2 ** 40, 2 ** 40])
    t.raw_data = b"\0" * 16
    emit(out, "dims_overflow", model_of(lstm_graph("lstm_huge", inits=[
        t, numpy_helper.from_array(rng.randn(1, 4 * H, H).astype(np.float32), "R")])))
    t = numpy_helper.from_array(W, "W")
    t.dims[1] = -(4 * H)
    emit(out, "negative_dim", model_of(lstm_graph("lstm_negdim", inits=[
        t, numpy_helper.from_array(rng.randn(1, 4 * H, H).astype(np.float32), "R")])))
    t = numpy_helper.from_array(W, "W")
    t.data_type = 0
    emit(out, "undefined_dtype", model_of(lstm_graph("lstm_nodtype", inits=[
        t, numpy_helper.from_array(rng.randn(1, 4 * H, H).astype(np.float32), "R")])))

    # --- external data: confined to the model's directory, sizes checked
    with open(os.path.join(out, "outside.bin"), "wb") as f:
        f.write(W.tobytes())
    emit(out, "external_parent_dir", external_model(out, "external_parent_dir", "../outside.bin",
                                                    write_file=False), "../outside.bin")
    emit(out, "external_dotdot_inside", external_model(out, "external_dotdot_inside",
                                                       "sub/../../outside.bin", write_file=False),
         "sub/../../outside.bin")
    d = os.path.abspath(os.path.join(out, "external_absolute"))
    emit(out, "external_absolute", external_model(out, "external_absolute", os.path.join(d, "w.bin")),
         os.path.join(d, "w.bin"))
    emit(out, "external_missing_file", external_model(out, "external_missing_file", "nope.bin",
                                                      write_file=False), "nope.bin")
    emit(out, "external_too_short", external_model(out, "external_too_short", "w.bin", nbytes=40), "w.bin")
    emit(out, "external_length_mismatch", external_model(out, "external_length_mismatch", "w.bin",
                                                         length=8), "w.bin")
    emit(out, "external_offset_past_end", external_model(out, "external_offset_past_end", "w.bin",
                                                         offset=1 << 20), "w.bin")

    # --- image sampling: what cellc refuses, with the node and the reason named
    image_cases(out)

    # --- more errors than are printed: counted by operator
    many_unsupported(out)

    robustness_cases(out, W)

    with open(os.path.join(out, "cases.tsv"), "w", encoding="utf-8") as f:
        for row in MANIFEST:
            f.write("\t".join(row) + "\n")
    print("gen_bad_models: %d cases in %s" % (len(MANIFEST), out))


if __name__ == "__main__":
    main()
