#!/usr/bin/env bash
# Runs each Catch2 binary given and prints the total: "tests: N passed, M failed" (test cases). Each
# binary's whole output is kept in logs/ beside it; the failures are named again just before the total,
# so that the last lines of a CI log say what failed and where.
set -u
passed=0
failed=0
failures=""
for bin in "$@"; do
  echo "== $(basename "$bin")"
  mkdir -p "$(dirname "$bin")/logs"
  log="$(dirname "$bin")/logs/$(basename "$bin").log"
  out=$("$bin" 2>&1)
  status=$?
  printf '%s\n' "$out" >"$log"
  if [ "$status" -ne 0 ]; then
    failures+="-- $(basename "$bin") (whole output: $log)"$'\n'
    failures+=$(printf '%s\n' "$out" | grep -E -A4 ': FAILED:$|^[^ ].*: (error|fatal error):' | grep -v '^$' | head -n 30)$'\n'
  fi
  printf '%s\n' "$out" | grep -v '^$' | tail -n 40
  if line=$(printf '%s\n' "$out" | grep -E '^All tests passed' | tail -1) && [ -n "$line" ]; then
    n=$(printf '%s' "$line" | sed -E 's/.* in ([0-9]+) test case.*/\1/')
    passed=$((passed + n))
  elif line=$(printf '%s\n' "$out" | grep -E '^test cases:' | tail -1) && [ -n "$line" ]; then
    p=$(printf '%s' "$line" | sed -nE 's/.*\| *([0-9]+) passed.*/\1/p')
    f=$(printf '%s' "$line" | sed -nE 's/.*\| *([0-9]+) failed.*/\1/p')
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-1}))
  else
    echo "$(basename "$bin"): no result (exit status $status)"
    failed=$((failed + 1))
  fi
done
if [ -n "$failures" ]; then
  echo "== failures"
  printf '%s' "$failures"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
