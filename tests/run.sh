#!/bin/sh
# run.sh: every test of `make check`.
#
# 1. makes the fixtures under tests/out/ (tests/tests.mk: regenerated only
#    when missing or when their generator changed);
# 2. runs every test group (tests/harness.py): prints one PASS/FAIL line per
#    test and ends with exactly one line "N passed, M failed"; exits non-zero
#    on any failure.
#
# Expects build/cellc and build-san/cellc to be built (`make all san`, as
# `make check` does).  Arguments select groups: sh tests/run.sh onnx_node bad
# --quick (`make check-quick`): only the fixtures and groups of the quick tier,
# on a sample of their cases (harness.py's QUICK_GROUPS, CELLC_TEST_SAMPLE).
# Environment: CELLC_TEST_JOBS (parallel tests, default: CPUs),
# CELLC_TEST_TIMEOUT (hang guard per test, seconds), MAKE.
cd "$(dirname "$0")/.." || exit 2
PY=/usr/bin/python3
MAKE=${MAKE:-make}

# A generator that fails leaves its group without a stamp; the harness then
# reports that group's fixtures as a failure, so keep going (-k).
fixtures=fixtures
for a in "$@"; do [ "$a" = --quick ] && fixtures=fixtures-quick; done
# The generators are independent processes (tests.mk orders the few that
# read another's output), so they run CELLC_TEST_JOBS (default: CPUs) at once.
jobs=${CELLC_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
$MAKE --no-print-directory -s -k -j"$jobs" $fixtures || echo "run.sh: some fixtures could not be generated" >&2

# Every compilation of the tests checks the IR after each pass (ir_verify,
# compiler/cmd/compile.c): an inconsistency aborts the test that made it.
CELLC_VERIFY=1
export CELLC_VERIFY
# ... and runs each pass's result in the reference interpreter against the
# graph before it (translation validation, compiler/eval/validate.c): a pass that
# changes what the model computes fails the test that compiled it.  What
# each compilation validated goes to the log the group `validate` reads.
CELLC_VALIDATE=1
CELLC_VALIDATE_LOG="$(pwd)/tests/out/logs/validate.log"
export CELLC_VALIDATE CELLC_VALIDATE_LOG
mkdir -p tests/out/logs && : > "$CELLC_VALIDATE_LOG"
exec "$PY" tests/harness.py "$@"
