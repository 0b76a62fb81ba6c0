#!/bin/sh
# Trace an MPI test case built from the base of a change and from the change itself, and gate the one
# against the other with mpiadvise. Used by the GitLab CI and GitHub Actions examples beside it.
#   mpi-gate.sh "BASELINE_PROGRAM [ARGS]" "CANDIDATE_PROGRAM [ARGS]"
# Environment:
#   NP           ranks (default 2)
#   MPIRUN       the launcher and its options (default: mpirun, with --allow-run-as-root and
#                --oversubscribe when those are needed, as in a CI container)
#   GATE_OPTS    more options for mpiadvise gate, e.g. "--max-regression 10% --budget send_wait<=20%"
#   OUT          where the logs, reports and gate results go (default gate-out)
#   MPIADVISE    the mpiadvise command (default: mpiadvise on the PATH)
# Writes OUT/{baseline,candidate}-logs/, OUT/report.json and OUT/report.md (the candidate's report),
# OUT/gate.xml (JUnit), OUT/gate.md and OUT/gate.json. Exits with the gate's status: 0 passed,
# 1 regression, 2 usage or input error.
set -eu
[ $# -eq 2 ] || { echo "usage: mpi-gate.sh \"BASELINE_PROGRAM [ARGS]\" \"CANDIDATE_PROGRAM [ARGS]\"" >&2; exit 2; }
NP=${NP:-2}
OUT=${OUT:-gate-out}
MPIADVISE=${MPIADVISE:-mpiadvise}
if [ -z "${MPIRUN:-}" ]; then
  MPIRUN="mpirun --oversubscribe"
  [ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
fi
rm -rf "$OUT"
mkdir -p "$OUT"
# shellcheck disable=SC2086 # the commands and options are word lists
$MPIADVISE run --dir "$OUT/baseline-logs" -- $MPIRUN -np "$NP" $1
# shellcheck disable=SC2086
$MPIADVISE run --dir "$OUT/candidate-logs" -- $MPIRUN -np "$NP" $2
$MPIADVISE report --format json -o "$OUT/report.json" "$OUT/candidate-logs"
$MPIADVISE report --format md -o "$OUT/report.md" "$OUT/candidate-logs"
status=0
# shellcheck disable=SC2086
$MPIADVISE gate --baseline "$OUT/baseline-logs" --candidate "$OUT/report.json" \
  --junit "$OUT/gate.xml" --markdown "$OUT/gate.md" --json "$OUT/gate.json" ${GATE_OPTS:-} || status=$?
exit $status
