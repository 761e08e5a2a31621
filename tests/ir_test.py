"""ir_test.py: the IR text tests of tests/ir/ (harness group "ir").

Each case is a directory tests/ir/PASS/CASE/ holding
  input.cell     a small model that shows what PASS does (a `graph` or
                 `model` block; its first comment lines say what to look at)
  expected.txt   the output of `cellc dump input.cell --after PASS`
  args           (optional) more `cellc dump` options, on one line
and, in input.cell, lines
  # expect: WHAT BEFORE -> AFTER
stating what the pass must change, as counts in the dump of the stage before
PASS (for infer, seq and loops, which run as rounds: the stage before them)
and in the dump after it.  WHAT is an operator name (node lines calling
it, bodies included), `nodes` (every node line), `groups` (distinct fusion
groups), `slots` (distinct workspace slots), `attr:NAME=VALUE` (node lines
whose attributes include `NAME = VALUE`, VALUE as the dump prints it, without
spaces), `role:ROLE` (values given that role, on their declaration or on
the node line defining them: ` role ROLE`, ` role %NAME ROLE`),
`source:SOURCE` (recurrences saying ` source SOURCE`; compiler/ir/ir.h lists
roles and sources), `grad_of` or `recomputes` (values that pass_grad linked
to the forward value they are the gradient of or compute again: ` grad_of
%NAME %V`, ` recomputes %NAME %V` on node lines).  These counts are written by
hand from what the pass promises (its contract in compiler/passes/pass_PASS.c), so a
case fails when the pass stops doing its job even if expected.txt was
regenerated without reading it.

  check   every case (or the CASEs named, as PASS/CASE): the dump, made with
          ir_verify between passes (CELLC_VERIFY=1), must exit 0, equal
          expected.txt and meet the expect lines; without CASEs, also that
          every pass has at least 2 cases.  One PASS/FAIL line per
          case, a diff of the first differences on failure; exit 1 if any
          failed.
  update  rewrites expected.txt of every case (or the CASEs named) from the
          dump, after checking the expect lines, and lists what changed:
          review `git diff tests/ir` before committing it.

usage: ir_test.py CELLC check|update [PASS/CASE...]   (`make ir-test CASE=..`,
       `make ir-update [CASE=..]`)
"""
import difflib
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IR = os.path.join("tests", "ir")
EXPECT = re.compile(r"^#\s*expect:\s*(\S+)\s+(\d+)\s*->\s*(\d+)\s*$")
NODE = re.compile(r"^\s*(?:[%_][^=]*)=\s*([A-Za-z][A-Za-z0-9_]*)\(")


def stages(cellc):
    """The stages `cellc dump --after` accepts, in pipeline order (from its usage text)."""
    p = subprocess.run([cellc, "dump", "--help"], stdout=subprocess.PIPE, universal_newlines=True)
    m = re.search(r"one of:\s*\n\s*([a-z, ]+)\n", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit("ir_test.py: cannot read the pass list from `%s dump --help`" % cellc)
    return [s.strip() for s in m.group(1).split(",")]


def rounds(cellc):
    """The stages that run as rounds (`dump --after` any of them shows the
    graph after the last round), from the same usage text."""
    p = subprocess.run([cellc, "dump", "--help"], stdout=subprocess.PIPE, universal_newlines=True)
    m = re.search(r"\(([a-z, ]+) and ([a-z]+) run as rounds", p.stdout)
    return [s.strip() for s in m.group(1).split(",")] + [m.group(2)] if m else []


def before_stage(order, group, stage):
    """The stage whose dump a case's `# expect:` lines compare with: the one
    before it, or before its rounds."""
    i = order.index(group[0] if stage in group else stage)
    return order[i - 1]


def cases(want):
    if want:
        return [os.path.join(IR, c.strip("/")) for c in want]
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(IR, "*", "*", "input.cell")))


def dump(cellc, case, stage):
    args = []
    if os.path.exists(os.path.join(case, "args")):
        with open(os.path.join(case, "args")) as f:
            args = f.read().split()
    env = dict(os.environ, CELLC_VERIFY="1")
    p = subprocess.run([cellc, "dump", os.path.join(case, "input.cell"), "--after", stage] + args,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def split_attrs(text):
    """The `name = value` items of a dumped attribute block (commas inside
    brackets or strings do not split)."""
    items, depth, quote, cur = [], 0, False, ""
    for ch in text:
        if ch == '"':
            quote = not quote
        elif not quote and ch == "[":
            depth += 1
        elif not quote and ch == "]":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return items + [cur]


ROLE = re.compile(r" role (?:%\S+ )?([a-z_]+)")
SOURCE = re.compile(r" source ([a-z_]+)")
LINK = re.compile(r" (grad_of|recomputes) %\S+ %\S+")


def count(text, what):
    if what.startswith("role:") or what.startswith("source:"):
        kind, want = what.split(":", 1)
        pat = ROLE if kind == "role" else SOURCE
        return sum(1 for l in text.splitlines() for m in pat.finditer(l.split("#", 1)[0]) if m.group(1) == want)
    if what in ("grad_of", "recomputes"):
        return sum(1 for l in text.splitlines() for m in LINK.finditer(l.split("#", 1)[0]) if m.group(1) == what)
    lines = [l for l in text.splitlines() if NODE.match(l.split("#", 1)[0])]
    if what == "nodes":
        return len(lines)
    if what.startswith("attr:") and "=" in what:
        name, val = what[5:].split("=", 1)
        want = "%s=%s" % (name, val)
        return sum(1 for l in lines for attrs in [re.search(r"\{(.*)\}", l.split("  #", 1)[0])]
                   if attrs and any(re.sub(r"\s+", "", a) == want for a in split_attrs(attrs.group(1))))
    if what in ("groups", "slots"):
        key = "group" if what == "groups" else "slot"
        # group ids are per graph (a body's group 1 is not the root's), slot
        # ids are the model's workspace slots, bodies' included
        return len({(len(l) - len(l.lstrip("\t")) if key == "group" else 0, m.group(1))
                    for l in lines for m in [re.search(r"\b%s (\d+)" % key, l.split("#", 1)[-1])] if m})
    return sum(1 for l in lines if NODE.match(l).group(1) == what)


def check_expects(cellc, case, stage, before, after_text):
    """Failures of the `# expect:` lines of the case (a list of strings)."""
    with open(os.path.join(case, "input.cell")) as f:
        ex = [EXPECT.match(l.strip()) for l in f]
    ex = [m for m in ex if m]
    if not ex:
        return ["input.cell has no '# expect:' line"]
    rc, before_text, err = dump(cellc, case, before)
    if rc != 0:
        return ["dump --after %s: exit %d: %s" % (before, rc, err.strip()[:300])]
    bad = []
    for m in ex:
        what, b, a = m.group(1), int(m.group(2)), int(m.group(3))
        got = (count(before_text, what), count(after_text, what))
        if got != (b, a):
            bad.append("%s: %d -> %d, expected %d -> %d" % (what, got[0], got[1], b, a))
    return bad


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("check", "update"):
        sys.exit(__doc__)
    cellc, mode, want = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.chdir(ROOT)
    order = stages(cellc)
    group = rounds(cellc)
    failed = changed = 0
    todo = cases(want)
    if not todo:
        print("FAIL ir/cases no case under %s" % IR)
        return 1
    if mode == "check" and not want:
        # every pass has its directory of cases
        for stage in order[1:]:
            n = len(glob.glob(os.path.join(IR, stage, "*", "input.cell")))
            print("%s ir/%s/coverage %d case(s)%s" % ("PASS" if n >= 2 else "FAIL", stage, n,
                                                      "" if n >= 2 else ", want at least 2"))
            failed += n < 2
    for case in todo:
        name = "ir/" + os.path.relpath(case, IR)
        stage = os.path.basename(os.path.dirname(case))
        if stage not in order or order.index(stage) == 0:
            print("FAIL %s directory %s is not a pass (%s)" % (name, stage, ", ".join(order[1:])))
            failed += 1
            continue
        if not os.path.exists(os.path.join(case, "input.cell")):
            print("FAIL %s no input.cell" % name)
            failed += 1
            continue
        rc, out, err = dump(cellc, case, stage)
        if rc != 0:
            print("FAIL %s dump --after %s: exit %d: %s" % (name, stage, rc, err.strip()[:300]))
            failed += 1
            continue
        bad = check_expects(cellc, case, stage, before_stage(order, group, stage), out)
        exp_path = os.path.join(case, "expected.txt")
        old = open(exp_path).read() if os.path.exists(exp_path) else None
        if mode == "update":
            if old != out:
                with open(exp_path, "w") as f:
                    f.write(out)
                changed += 1
                print("UPDATED %s" % name)
            if bad:
                print("FAIL %s %s" % (name, "; ".join(bad)))
                failed += 1
            continue
        if old is None:
            bad.append("no expected.txt (make ir-update CASE=%s)" % os.path.relpath(case, IR))
        elif old != out:
            diff = list(difflib.unified_diff(old.splitlines(), out.splitlines(), "expected.txt",
                                             "dump --after " + stage, lineterm="", n=1))
            bad.append("dump differs from expected.txt:\n    " + "\n    ".join(diff[:40]))
        print("%s %s%s" % ("FAIL" if bad else "PASS", name, " " + "; ".join(bad) if bad else ""))
        failed += bool(bad)
    if mode == "update":
        print("%d expectation(s) rewritten; review them with `git diff %s`" % (changed, IR))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
