#!/usr/bin/env bash
# Runs each Catch2 binary given and prints the total: "tests: N passed, M failed" (test cases).
set -u
passed=0
failed=0
for bin in "$@"; do
  echo "== $(basename "$bin")"
  out=$("$bin" 2>&1)
  status=$?
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
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
