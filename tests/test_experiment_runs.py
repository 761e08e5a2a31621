"""test_experiment_runs.py CELLC OUT: experiments/run.py's bookkeeping of full
runs (issue 21), on the irnn experiment (adding problem) at a few steps.

    --only        some models trained, the others' results under --out kept,
                  and read again when the run writes (two processes can share
                  an experiment: the other may write while this one trains);
    --speed       both sides measured again, the curves kept as they were;
    --resume      a run cut off after some of its steps, continued from the
                  checkpoint its program left, gives the uninterrupted run's
                  curve;
    runs.csv      a command with a comma read back whole;
    refusals      an unknown --only label, --only with --speed, --resume with
                  --speed.

Every curve of the generated program is also checked against PyTorch's run of
the same model from the same weights and batches (the first_steps_max_rel
column of speed.csv, within 1e-4), so a run that wrote the wrong model's
numbers under a label fails here.  Prints PASS/FAIL lines for the harness."""
import csv
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUN = os.path.join(ROOT, "experiments", "run.py")
sys.path.insert(0, os.path.join(ROOT, "experiments"))
import run  # noqa: E402

EXP = "irnn"
TOL = 1e-4


def table(out, fname):
    with open(os.path.join(out, fname)) as f:
        return list(csv.DictReader(f))


def steps_of(out):
    """{label: (steps in runs.csv, rows in curves.csv)}"""
    rows = {}
    for r in table(out, "curves.csv"):
        rows[r["model"]] = rows.get(r["model"], 0) + 1
    return {r["model"]: (int(r["steps"]), rows.get(r["model"], 0)) for r in table(out, "runs.csv")}


def agreement(out):
    return {r["model"]: float(r["first_steps_max_rel"]) for r in table(out, "speed.csv")}


def report(name, ok, detail):
    print("%s experiments/runs/%s %s" % ("PASS" if ok else "FAIL", name, detail))
    return ok


def cli(args):
    p = subprocess.run([sys.executable, RUN, EXP] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    return p.returncode, p.stdout + p.stderr


def main():
    cellc, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(out, ignore_errors=True)
    spec = run.EXPERIMENTS[EXP]
    ok = True

    # --only, twice in sequence: the second keeps the first's model
    base = ["--cellc", cellc, "--out", out, "--torch-steps", "2"]
    rc1, log1 = cli(base + ["--steps", "3", "--only", "irnn"])
    rc2, log2 = cli(base + ["--steps", "4", "--only", "lstm"])
    got = steps_of(out) if rc1 == rc2 == 0 else {}
    agree = agreement(out) if got else {}
    ok &= report("only_keeps_others", got == {"irnn": (3, 3), "lstm": (4, 4)} and
                 all(agree.get(m, 1) < TOL for m in ("irnn", "lstm")),
                 "exit %d/%d, runs.csv and curves.csv %s, agreement with PyTorch %s%s" % (
                     rc1, rc2, got, agree, "" if rc1 == rc2 == 0 else ": " + (log1 + log2)[-400:]))

    # a second process writes its model while this one trains: this one's
    # results must keep it (the results on disk are read when writing)
    out2 = out + "_concurrent"
    shutil.rmtree(out2, ignore_errors=True)
    real_run_c = run.run_c
    other = {"done": False}

    def run_c_with_other(*a, **k):
        if not other["done"]:
            other["done"] = True
            # the same steps: both share build/experiments/irnn's data files
            run.full(EXP, spec, cellc, out2, 1, 3, 2, "the other process", ["lstm"])
        return real_run_c(*a, **k)
    run.run_c = run_c_with_other
    try:
        run.full(EXP, spec, cellc, out2, 1, 3, 2, "this process", ["irnn"])
    finally:
        run.run_c = real_run_c
    got = steps_of(out2)
    ok &= report("only_concurrent", got == {"irnn": (3, 3), "lstm": (3, 3)},
                 "runs.csv and curves.csv after the other process wrote mid-run: %s" % got)

    # --resume: a run stopped after 2 of its 4 steps (its program's
    # --max-steps 2, given last, writes the checkpoint a cut-off run leaves)
    # and continued gives the uninterrupted run's curve, step for step
    out3 = out + "_resume"
    shutil.rmtree(out3, ignore_errors=True)

    def curve(label):
        return [(r["step"], r["loss"]) for r in table(out3, "curves.csv") if r["model"] == label]
    run.full(EXP, spec, cellc, out3, 1, 4, 2, "whole", ["irnn"])
    whole = curve("irnn")

    def cut_off(prog, args, threads, csvpath, extra=(), **k):
        return real_run_c(prog, args, threads, csvpath, list(extra) + ["--max-steps", "2"], **k)
    run.run_c = cut_off
    try:
        run.full(EXP, spec, cellc, out3, 1, 4, 2, "cut off", ["irnn"])
    finally:
        run.run_c = real_run_c
    cut = curve("irnn")
    run.full(EXP, spec, cellc, out3, 1, 4, 2, "resumed", ["irnn"], resume=True)
    resumed = curve("irnn")
    ok &= report("resume_continues", len(whole) == 4 and cut == whole[:2] and resumed == whole,
                 "uninterrupted %s, cut off %s, resumed %s" % (whole, cut, resumed))

    # --speed: new speed columns, the same curves
    with open(os.path.join(out, "curves.csv")) as f:
        curves = f.read()
    rc, log = cli(["--cellc", cellc, "--out", out, "--speed", "--torch-steps", "3"])
    with open(os.path.join(out, "curves.csv")) as f:
        same = f.read() == curves
    with open(os.path.join(out, "report.md")) as f:
        text = f.read()
    agree = agreement(out) if rc == 0 else {}
    ok &= report("speed_keeps_curves", rc == 0 and same and "Speed columns: `" in text and
                 all(agree.get(m, 1) < TOL for m in ("irnn", "lstm")),
                 "exit %d, curves unchanged: %s, speed line: %s, agreement %s%s" % (
                     rc, same, "Speed columns: `" in text, agree, "" if rc == 0 else ": " + log[-400:]))

    # a command with a comma (--only a,b) is read back whole from runs.csv
    rc, log = cli(base + ["--steps", "2", "--only", "irnn,lstm"])
    cmds = [(r["command"], r.get(None)) for r in table(out, "runs.csv")] if rc == 0 else []
    ok &= report("command_read_back", len(cmds) == 2 and all(c.endswith("--only irnn,lstm") and extra is None
                                                              for c, extra in cmds),
                 "exit %d, runs.csv commands %s" % (rc, cmds))

    # refusals: exit 2, the reason named, nothing written
    for name, args, words in (("only_unknown", ["--only", "gru"], "no such model in irnn"),
                              ("only_with_speed", ["--only", "lstm", "--speed"], "--only names models"),
                              ("resume_with_speed", ["--resume", "--speed"], "--resume continues full runs")):
        before = os.listdir(out)
        rc, log = cli(["--cellc", cellc, "--out", out] + args)
        ok &= report(name, rc == 2 and words in log and os.listdir(out) == before,
                     "exit %d, %r" % (rc, log.strip().splitlines()[-1] if log.strip() else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
