"""test_fused_bodies.py: recurrence bodies whose gates are chunks of one
element-wise value (PyTorch chunk/split of `v + W_h h + b_h` in scripted
ONNX Loop exports, split() in user-defined .cell cells) compile like the
built-in cells: per step the products (GEMMs) and ONE fused element-wise loop
over [B, H] -- no materialised Slice copies, no second loop for the [B, G]
value or for states (pass_split pushes the slices up to the products, the
per-step inputs and the states).  Checked on `cellc dump` (the IR after the
last pass).  Rank-0 step schedules (NAG's mu_t, once per step) and integer
step arithmetic are not loops and are not counted.

usage: test_fused_bodies.py CELLC MODEL...   (PASS/FAIL lines; exit 1 on failure)
"""
import os
import re
import subprocess
import sys

NODE = re.compile(r"^\t\t(?P<outs>\S.*?) = (?P<op>\w+)\((?P<args>[^)]*)\).*?#\s*(?P<type>\w+)\[(?P<shape>[^\]]*)\]"
                  r"(?P<rest>.*)$")


def bodies(text):
    """Per recurrence body: list of (op, dtype, rank, group)."""
    out, cur = [], None
    for line in text.splitlines():
        if "= Recurrence(" in line and line.startswith("\t%") or line.startswith("\t_"):
            if "= Recurrence(" in line:
                cur = []
                out.append(cur)
            continue
        if cur is not None and line.startswith("\t}"):
            cur = None
            continue
        m = NODE.match(line)
        if cur is not None and m:
            g = re.search(r"\bgroup (\d+)", m.group("rest"))
            rank = len([d for d in m.group("shape").split(",") if d.strip()])
            cur.append((m.group("op"), m.group("type"), rank, int(g.group(1)) if g else None))
    return out


def check(cellc, model):
    p = subprocess.run([cellc, "dump", model], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=300)
    if p.returncode != 0:
        return ["cellc dump: exit %d: %s" % (p.returncode, p.stderr.strip()[:200])], ""
    bs = bodies(p.stdout)
    if not bs:
        return ["no recurrence in the dump"], ""
    errs, info = [], []
    for i, b in enumerate(bs):
        loops = sorted({g for op, t, r, g in b if g is not None and r >= 1})
        stray = [op for op, t, r, g in b if g is None and r >= 1 and op not in ("Gemm", "MatMul")]
        gemms = sum(op in ("Gemm", "MatMul") for op, t, r, g in b)
        if len(loops) != 1:
            errs.append("body %d: %d fused element-wise loops per step (want 1)" % (i, len(loops)))
        if stray:
            errs.append("body %d: nodes outside the fused loop: %s" % (i, ", ".join(stray[:6])))
        info.append("%d GEMM%s + %d loop" % (gemms, "s" if gemms != 1 else "", len(loops)))
    return errs, "; ".join(info)


def main():
    cellc, models = sys.argv[1], sys.argv[2:]
    failed = 0
    for m in models:
        name = os.path.basename(os.path.dirname(m)) if os.path.basename(m).startswith("model.") \
            else os.path.splitext(os.path.basename(m))[0]
        errs, info = check(cellc, m)
        failed += bool(errs)
        print("%s structure/fused_body/%s %s" % ("FAIL" if errs else "PASS", name,
                                                  "; ".join(errs[:3]) if errs else info))
    if not models:
        print("FAIL structure/fused_body/none no models given")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
