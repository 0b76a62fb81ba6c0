#!/bin/sh
# Trace an MPI test case built from the base of a change and from the change itself, and gate the one
# against the other with mpiadvise. Used by the GitLab CI and GitHub Actions examples beside it.
#   mpi-gate.sh "BASELINE_PROGRAM [ARGS]" "CANDIDATE_PROGRAM [ARGS]"
# Environment:
#   NP           ranks (default 2)
#   RUNS         runs of each side (default 2), traced in turn (baseline, candidate, candidate, baseline,
#                ...): one run's noise band holds nothing of how a shared runner's speed moves between
#                runs, and the turns make a drift of its speed move both sides alike (mpiadvise-gate(1))
#   MPIRUN       the launcher and its options (default: mpirun, with --allow-run-as-root and
#                --oversubscribe when those are needed, as in a CI container)
#   GATE_OPTS    more options for mpiadvise gate, e.g. "--max-regression 10% --budget send_wait<=20%"
#   OUT          where the logs, reports and gate results go (default gate-out)
#   MPIADVISE    the mpiadvise command (default: mpiadvise on the PATH)
# Writes OUT/{baseline,candidate}-logs/run-N/, OUT/report.json and OUT/report.md (the report of the
# candidate's first run),
# OUT/gate.xml (JUnit), OUT/gate.md and OUT/gate.json. Exits with the gate's status: 0 passed,
# 1 regression, 2 usage or input error.
set -eu
[ $# -eq 2 ] || { echo "usage: mpi-gate.sh \"BASELINE_PROGRAM [ARGS]\" \"CANDIDATE_PROGRAM [ARGS]\"" >&2; exit 2; }
NP=${NP:-2}
RUNS=${RUNS:-2}
bad_runs() { echo "mpi-gate.sh: RUNS=$RUNS is not a number of runs (1 or more)" >&2; exit 2; }
case "$RUNS" in '' | *[!0-9]*) bad_runs ;; esac
[ "$RUNS" -ge 1 ] || bad_runs
OUT=${OUT:-gate-out}
MPIADVISE=${MPIADVISE:-mpiadvise}
if [ -z "${MPIRUN:-}" ]; then
  MPIRUN="mpirun --oversubscribe"
  [ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
fi
rm -rf "$OUT"
mkdir -p "$OUT"
mkdir -p "$OUT/baseline-logs" "$OUT/candidate-logs"
# trace SIDE N PROGRAM_AND_ARGS
trace() {
  # shellcheck disable=SC2086 # the commands and options are word lists
  $MPIADVISE run --dir "$OUT/$1-logs/run-$2" -- $MPIRUN -np "$NP" $3
}
i=1
while [ "$i" -le "$RUNS" ]; do
  if [ $((i % 2)) -eq 1 ]; then
    trace baseline "$i" "$1"
    trace candidate "$i" "$2"
  else
    trace candidate "$i" "$2"
    trace baseline "$i" "$1"
  fi
  i=$((i + 1))
done
$MPIADVISE report --format json -o "$OUT/report.json" "$OUT/candidate-logs/run-1"
$MPIADVISE report --format md -o "$OUT/report.md" "$OUT/candidate-logs/run-1"
status=0
# shellcheck disable=SC2086
$MPIADVISE gate --baseline "$OUT/baseline-logs" --candidate "$OUT/candidate-logs" \
  --junit "$OUT/gate.xml" --markdown "$OUT/gate.md" --json "$OUT/gate.json" ${GATE_OPTS:-} || status=$?
exit $status
