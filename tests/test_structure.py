"""test_structure.py: checks issue 2's "fast by construction" on the IR that
`cellc dump` prints after the last pass (the native text format), for every
model given that contains LSTM/GRU/RNN nodes.  For each recurrence:

  hoisted   no GEMM inside the step body reads a per-step input: the input
            projection of all time steps is a GEMM in the root graph, over
            T*B rows, that feeds the recurrence's sequence input (through
            views: Reshape, Flatten, Squeeze, Unsqueeze, Transpose);
  biases    that hoisted GEMM carries the bias (pre-summed Wb + Rb) when the
            ONNX node has B, and the body adds no bias weight -- except GRU
            with linear_before_reset=1, where Rbh must stay inside r * (...);
  one GEMM  the gates share one recurrent GEMM per step (two for GRU with
            linear_before_reset=0, whose candidate gate multiplies r * h by
            Rh, so it cannot share);
  fused     every other body node belongs to a fusion group, and there are
            no more groups than recurrent GEMMs (one loop per GEMM result).

usage: test_structure.py CELLC DIR...   (each DIR holds case directories
with model.onnx; PASS/FAIL lines; exit 1 on failure)
"""
import os
import re
import subprocess
import sys

import onnx
from onnx import helper

NODE = re.compile(r"^\s*(?P<outs>(?:%\S+|_)(?:, (?:%\S+|_))*) = (?P<op>\w+)\((?P<args>[^)]*)\)"
                  r"(?: \{(?P<attrs>[^}]*)\})?(?: source \w+)?(?: role %\S+ \w+)*(?P<body> body \{)?\s*"
                  r"(?:#(?P<comment>.*))?$")
INPUT = re.compile(r"^\s*input (%\S+):")
WEIGHT = re.compile(r"^\s*weight (%\S+):")
VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity"}


def parse_dump(text):
    """Returns (root nodes, weights, recurrences); a node is a dict with op,
    outs, args, attrs, comment; a recurrence also has body (nodes) and
    body_inputs."""
    root, weights, recs = [], set(), []
    stack = []          # open recurrence bodies
    for line in text.splitlines():
        m = WEIGHT.match(line)
        if m:
            weights.add(m.group(1))
            continue
        if stack and line.strip() == "}":
            stack.pop()
            continue
        m = INPUT.match(line)
        if m and stack:
            stack[-1]["body_inputs"].append(m.group(1))
            continue
        m = NODE.match(line)
        if not m:
            continue
        n = {"op": m.group("op"), "outs": [s.strip() for s in m.group("outs").split(",")],
             "args": [a.strip() for a in m.group("args").split(",") if a.strip()],
             "attrs": m.group("attrs") or "", "comment": m.group("comment") or ""}
        (stack[-1]["body"] if stack else root).append(n)
        if n["op"] == "Recurrence":
            n["body"], n["body_inputs"] = [], []
            recs.append(n)
            if m.group("body"):
                stack.append(n)
    return root, weights, recs


def attr_int(n, key):
    m = re.search(r"\b%s = (-?\d+)" % key, n["attrs"])
    return int(m.group(1)) if m else None


def source_node_name(n):
    m = re.search(r'node "([^"]*)"', n["comment"])
    return m.group(1) if m else ""


def group_of(n):
    m = re.search(r"\bgroup (\d+)", n["comment"])
    return int(m.group(1)) if m else None


def check_recurrence(rec, root, weights, onnx_nodes):
    name = source_node_name(rec)
    base = re.sub(r"\.(forward|reverse)$", "", name)
    src = onnx_nodes.get(base)
    if src is None:
        return ["recurrence %r: no ONNX node %r" % (name, base)]
    lbr = 0
    for a in src.attribute:
        if a.name == "linear_before_reset":
            lbr = helper.get_attribute_value(a)
    has_bias = len(src.input) > 3 and src.input[3] != ""
    errs = []
    n_seq = attr_int(rec, "n_seq") or 0
    seq_in = set(rec["body_inputs"][:n_seq])
    gemms = [n for n in rec["body"] if n["op"] in ("Gemm", "MatMul")]
    for g in gemms:
        if g["args"] and g["args"][0] in seq_in:
            errs.append("%s: body GEMM reads the per-step input %s (not hoisted)" % (name, g["args"][0]))
    want = 2 if (src.op_type == "GRU" and not lbr) else 1
    if len(gemms) != want:
        errs.append("%s: %d GEMMs per step, expected %d" % (name, len(gemms), want))
    # the hoisted projection feeding each sequence input
    producer = {o: n for n in root for o in n["outs"]}
    for arg in rec["args"][:n_seq]:
        v, hops = arg, 0
        while v in producer and producer[v]["op"] in VIEWS and hops < 6:
            v, hops = producer[v]["args"][0], hops + 1
        p = producer.get(v)
        if p is None or p["op"] not in ("Gemm", "MatMul"):
            errs.append("%s: sequence input %s is not produced by a hoisted GEMM (%s)" %
                        (name, arg, p["op"] if p else "graph input"))
        elif has_bias and (p["op"] != "Gemm" or len(p["args"]) < 3):
            errs.append("%s: the hoisted GEMM has no bias operand" % name)
    bias_adds = [n for n in rec["body"] if n["op"] == "Add" and any(a in weights for a in n["args"])]
    allowed = 1 if (src.op_type == "GRU" and lbr and has_bias) else 0
    if len(bias_adds) > allowed:
        errs.append("%s: %d bias additions inside the step (biases not pre-summed)" % (name, len(bias_adds)))
    others = [n for n in rec["body"] if n["op"] not in ("Gemm", "MatMul")]
    ungrouped = [n["op"] for n in others if group_of(n) is None]
    if ungrouped:
        errs.append("%s: body nodes outside any fusion group: %s" % (name, ", ".join(ungrouped[:5])))
    groups = {group_of(n) for n in others if group_of(n) is not None}
    if len(groups) > len(gemms):
        errs.append("%s: %d fusion groups for %d GEMMs" % (name, len(groups), len(gemms)))
    return errs


def check_case(cellc, d):
    path = os.path.join(d, "model.onnx")
    model = onnx.load(path, load_external_data=False)
    onnx_nodes = {n.name: n for n in model.graph.node if n.op_type in ("LSTM", "GRU", "RNN")}
    if not onnx_nodes:
        return None
    p = subprocess.run([cellc, "dump", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=300)
    if p.returncode != 0:
        return ["cellc dump: exit %d: %s" % (p.returncode, p.stderr.strip().splitlines()[:1])]
    root, weights, recs = parse_dump(p.stdout)
    if not recs:
        return ["no Recurrence in the dump"]
    errs = []
    for r in recs:
        errs += check_recurrence(r, root, weights, onnx_nodes)
    seen = {re.sub(r"\.(forward|reverse)$", "", source_node_name(r)) for r in recs}
    for n in onnx_nodes:
        if n not in seen:
            errs.append("ONNX node %r became no recurrence" % n)
    return errs


def main():
    cellc, dirs = sys.argv[1], sys.argv[2:]
    failed = total = 0
    for root in dirs:
        group = os.path.basename(os.path.normpath(root))
        for case in sorted(os.listdir(root)):
            d = os.path.join(root, case)
            if not os.path.isfile(os.path.join(d, "model.onnx")):
                continue
            try:
                errs = check_case(cellc, d)
            except Exception as e:
                errs = ["%s: %s" % (type(e).__name__, e)]
            if errs is None:
                continue
            total += 1
            failed += bool(errs)
            print("%s structure/%s/%s %s" % ("FAIL" if errs else "PASS", group, case,
                                             "; ".join(errs[:3]) if errs else "hoisted, fused"))
    if total == 0:
        print("FAIL structure/none no recurrent models found")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
