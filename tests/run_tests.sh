#!/usr/bin/env bash
# Runs each Catch2 binary given and prints the total: "tests: N passed, M failed" (test cases). A binary
# named mpi_* runs once under each MPI of MPA_TEST_MPIS (e.g. "openmpi mpich"; MPA_TEST_MPI tells it which),
# its test cases counted each time; there a test tagged [openmpi-only] runs under Open MPI alone and one
# tagged [mpich-only] under MPICH alone (what it checks exists only in that MPI). Each run's whole output is kept in logs/ beside the binary; the
# failures are named again just before the total, so that the last lines of a CI log say what failed and
# where. Each run has MPA_TEST_TIMEOUT seconds (default 600; the longest, unit_op_stream, took 153 s in a
# run of .ci/run here, and 314 s built with ASan and UBSan, a step .ci/run gives 900 s): a job that hangs
# (MPICH 4.0.2 over UCX now and then does, in MPI_Finalize) fails its binary with the time limit named,
# instead of holding the whole check until CI gives up with nothing said.
# Each run's time is printed after it, and the runs past half the limit are listed again before the total.
# MPA_TEST_JOBS=N (default 1) runs up to N of the programs that need no MPI (unit_*) at once, their results
# printed in order once all have ended; the MPI tests run one at a time after them (each job takes both
# cores of these machines, and some compare times measured under it).
set -u
limit=${MPA_TEST_TIMEOUT:-600}
case "$limit" in '' | *[!0-9]*) echo "run_tests.sh: MPA_TEST_TIMEOUT=$limit is not a number of seconds" >&2; exit 2 ;; esac
jobs=${MPA_TEST_JOBS:-1}
case "$jobs" in '' | *[!0-9]* | 0) echo "run_tests.sh: MPA_TEST_JOBS=$jobs is not a number of programs at once" >&2; exit 2 ;; esac
passed=0
failed=0
failures=""
slow=""
runs=()
for bin in "$@"; do
  case "$(basename "$bin")" in
    mpi_*) for m in ${MPA_TEST_MPIS:-openmpi}; do runs+=("$bin:$m"); done ;;
    *) runs+=("$bin:") ;;
  esac
done

log_of() { echo "$(dirname "$1")/logs/$(basename "$1")${2:+-$2}.log"; }

# one run: its whole output to its log, its exit status and seconds beside it (LOG.status)
run_one() {
  local bin=$1 mpi=$2 log name out status start=$SECONDS
  log=$(log_of "$bin" "$mpi")
  name=$(basename "$bin")${mpi:+ ($mpi)}
  mkdir -p "$(dirname "$log")"
  case "$mpi" in
    openmpi) out=$(MPA_TEST_MPI=$mpi timeout -k 30 "$limit" "$bin" '~[mpich-only]' 2>&1 </dev/null) ;;
    mpich) out=$(MPA_TEST_MPI=$mpi timeout -k 30 "$limit" "$bin" '~[openmpi-only]' 2>&1 </dev/null) ;;
    *) out=$(timeout -k 30 "$limit" "$bin" 2>&1 </dev/null) ;;
  esac
  status=$?
  # 124: stopped at the limit; 137: killed 30 s after that (or by the kernel: then well before the limit)
  if [ "$status" -eq 124 ] || { [ "$status" -eq 137 ] && [ $((SECONDS - start)) -ge "$limit" ]; }; then
    out+=$'\n'"$name: stopped at the limit of $limit s (MPA_TEST_TIMEOUT): a test hung"
  fi
  printf '%s\n' "$out" >"$log"
  echo "$status $((SECONDS - start))" >"$log.status"
}

# a run's result, read back from its log: printed, and counted into the totals
report_one() {
  local bin=$1 mpi=$2 log name out status took line n p f
  log=$(log_of "$bin" "$mpi")
  name=$(basename "$bin")${mpi:+ ($mpi)}
  echo "== $name"
  out=$(cat "$log")
  read -r status took <"$log.status"
  rm -f "$log.status"
  if [ "$status" -ne 0 ]; then
    failures+="-- $name (whole output: $log)"$'\n'
    failures+=$(printf '%s\n' "$out" | grep -E -A8 ': FAILED:$|^[^ ].*: (error|fatal error):|: stopped at the limit of [0-9]+ s' | grep -v '^$' | head -n 60)$'\n'
  fi
  printf '%s\n' "$out" | grep -v '^$' | tail -n 40
  echo "$name: $took s"
  # a run past half its limit is named again before the total: one that grows (a slower machine, the
  # sanitizers, a test added) is seen before the limit fails it
  if [ $((2 * took)) -gt "$limit" ]; then slow+="$name: $took s of the $limit s limit"$'\n'; fi
  if line=$(printf '%s\n' "$out" | grep -E '^All tests passed' | tail -1) && [ -n "$line" ]; then
    n=$(printf '%s' "$line" | sed -E 's/.* in ([0-9]+) test case.*/\1/')
    passed=$((passed + n))
  elif line=$(printf '%s\n' "$out" | grep -E '^test cases:' | tail -1) && [ -n "$line" ]; then
    p=$(printf '%s' "$line" | sed -nE 's/.*\| *([0-9]+) passed.*/\1/p')
    f=$(printf '%s' "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-1}))
  else
    echo "$name: no result (exit status $status)"
    failed=$((failed + 1))
  fi
}

# the programs that need no MPI, up to $jobs at once
pending=()
running=0
for run in "${runs[@]}"; do
  bin=${run%:*}
  mpi=${run##*:}
  [ -z "$mpi" ] && [ "$jobs" -gt 1 ] || continue
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$bin" "" &
  running=$((running + 1))
  pending+=("$run")
done
wait
for run in "${pending[@]}"; do report_one "${run%:*}" ""; done
# the rest one at a time, each printed as it ends
for run in "${runs[@]}"; do
  bin=${run%:*}
  mpi=${run##*:}
  if [ -z "$mpi" ] && [ "$jobs" -gt 1 ]; then continue; fi
  run_one "$bin" "$mpi"
  report_one "$bin" "$mpi"
done
if [ -n "$slow" ]; then
  echo "== past half the time limit (MPA_TEST_TIMEOUT)"
  printf '%s' "$slow"
fi
if [ -n "$failures" ]; then
  echo "== failures"
  printf '%s' "$failures"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
