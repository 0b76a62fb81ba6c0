#!/usr/bin/env bash
# make bench, the gate: false alarms and detections of mpiadvise gate on a loaded machine. Measures and
# prints; asserts nothing.
#
#   False alarms: PAIRS pairs of unchanged runs (baseline, candidate) of examples/halo.c and of
#   examples/pipeline.c at their default settings, 2 ranks, under Open MPI's default transport and under
#   --mca btl self,tcp; each pair gated, log directory against log directory. Any failure is a false alarm.
#   Detections: DETECT pairs of tests/programs/two_sites.c under TCP, one call site's message 48 KiB in the
#   baseline and 256 KiB in the candidate (past the eager limit): the gate must fail naming that line.
#   While the runs go, LOAD busy loops (default: one per CPU) load the cores, as another job would.
#
# Environment: BUILD (default build), MPICC (mpicc), MPIRUN (mpirun), BENCH_GATE_PAIRS (20),
#   BENCH_GATE_DETECT (10), BENCH_GATE_LOAD (CPUs; 0: no load), BENCH_KEEP=1 keeps the logs.
set -eu
cd "$(dirname "$0")/.."

BUILD="${BUILD:-build}"
MPICC="${MPICC:-mpicc}"
MPIRUN="${MPIRUN:-mpirun}"
PAIRS="${BENCH_GATE_PAIRS:-20}"
DETECT="${BENCH_GATE_DETECT:-10}"
cpus=$(nproc 2>/dev/null || echo 2)
LOAD="${BENCH_GATE_LOAD:-$cpus}"

case "$BUILD" in /*) build_abs="$BUILD" ;; *) build_abs="$PWD/$BUILD" ;; esac
mpiadvise="$build_abs/bin/mpiadvise"
for f in "$mpiadvise" "$build_abs/examples/halo" "$build_abs/examples/pipeline"; do
  [ -x "$f" ] || { echo "bench: $f is missing; build first (make BUILD=$BUILD)" >&2; exit 1; }
done
bin="$build_abs/bench"
mkdir -p "$bin"
two_sites="$bin/two_sites"
if [ ! -x "$two_sites" ] || [ tests/programs/two_sites.c -nt "$two_sites" ]; then
  "$MPICC" -O1 -g -Iexamples -o "$two_sites" tests/programs/two_sites.c
fi

unset LD_PRELOAD MPIADVISE MPIADVISE_DIR MPIADVISE_STACK_DEPTH MPIADVISE_BUFFER MPIADVISE_PAPI MPIADVISE_ZSTD_LEVEL
root=()
[ "$(id -u)" -eq 0 ] && root=(--allow-run-as-root)
runs="$bin/gate-runs"
rm -rf "$runs"
mkdir -p "$runs"

# the load: busy loops, ended by their process ids when this script ends
load_pids=()
stop_load() { for p in ${load_pids[@]+"${load_pids[@]}"}; do kill "$p" 2>/dev/null || true; done; }
trap stop_load EXIT
for _ in $(seq 1 "$LOAD"); do
  (while :; do :; done) &
  load_pids+=($!)
done

# trace DIR MPIRUN_OPTIONS... -- PROGRAM ARGS...
trace() {
  local dir=$1
  shift
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  if ! timeout 300 "$mpiadvise" run --dir "$dir" -- "$MPIRUN" "${root[@]}" --oversubscribe -np 2 \
    ${opts[@]+"${opts[@]}"} "$@" >"$runs/out" 2>&1; then
    echo "bench: this run failed: $MPIRUN -np 2 ${opts[*]:-} $*" >&2
    cat "$runs/out" >&2
    exit 1
  fi
}

# gate BASELINE CANDIDATE JSON: the gate's exit status (0 passed, 1 failed)
gate() {
  local status=0
  "$mpiadvise" gate --baseline "$1" --candidate "$2" --json "$3" >"$runs/gate.out" 2>&1 || status=$?
  if [ "$status" -gt 1 ]; then
    echo "bench: mpiadvise gate failed with status $status" >&2
    cat "$runs/gate.out" >&2
    exit 1
  fi
  return "$status"
}

# the worst time figure of a verdict: how much of what it was allowed it used (1 = at the limit)
worst_use() {
  python3 - "$1" <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
use, what = 0.0, "-"
for c in g["checks"]:
    for f in c["figures"]:
        if f["kind"] == "time" and f["limit"] is not None and f["limit"] > f["baseline"]:
            u = (f["candidate"] - f["baseline"]) / (f["limit"] - f["baseline"])
            if u > use:
                use, what = u, c["name"] + " " + f["figure"]
print(f"{use:.2f} {what}")
EOF
}

echo "mpiadvise bench, gate: $PAIRS pairs of unchanged runs per program and transport, $DETECT pairs with a" \
  "message grown from 48 KiB to 256 KiB; $LOAD busy loops on $cpus CPUs; load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the start"
start=$(date +%s)
total_alarms=0
total_pairs=0
for program in halo pipeline; do
  for transport in default tcp; do
    opts=()
    [ "$transport" = tcp ] && opts=(--mca btl self,tcp)
    alarms=0
    uses=()
    for i in $(seq 1 "$PAIRS"); do
      a="$runs/$program-$transport-$i-a" b="$runs/$program-$transport-$i-b"
      trace "$a" ${opts[@]+"${opts[@]}"} -- "$build_abs/examples/$program"
      trace "$b" ${opts[@]+"${opts[@]}"} -- "$build_abs/examples/$program"
      if ! gate "$a" "$b" "$runs/verdict.json"; then
        alarms=$((alarms + 1))
        grep '^regression:' "$runs/gate.out" | sed "s|^|  false alarm, pair $i: |"
      fi
      uses+=("$(worst_use "$runs/verdict.json")")
      [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$a" "$b"
    done
    worst=$(printf '%s\n' "${uses[@]}" | sort -rn | head -1)
    median=$(printf '%s\n' "${uses[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')
    printf '  %-9s %-8s false alarms %2d of %2d; share of the allowed growth used: median %s, most %s\n' \
      "$program" "$transport" "$alarms" "$PAIRS" "$median" "$worst"
    total_alarms=$((total_alarms + alarms))
    total_pairs=$((total_pairs + PAIRS))
  done
done

detected=0
named=0
line=$(grep -n 'site B' tests/programs/two_sites.c | head -1 | cut -d: -f1)
for i in $(seq 1 "$DETECT"); do
  a="$runs/grown-$i-a" b="$runs/grown-$i-b"
  trace "$a" --mca btl self,tcp -- "$two_sites" 49152 49152
  trace "$b" --mca btl self,tcp -- "$two_sites" 49152 262144
  if ! gate "$a" "$b" "$runs/verdict.json"; then
    detected=$((detected + 1))
    grep -q "^regression: .*two_sites.c:$line " "$runs/gate.out" && named=$((named + 1))
  fi
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$a" "$b"
done
stop_load
echo "  false alarms: $total_alarms of $total_pairs unchanged pairs"
echo "  detections:   $detected of $DETECT pairs with two_sites.c:$line grown from 48 KiB to 256 KiB" \
  "(the failure names that line in $named)"
echo "($(($(date +%s) - start)) s; load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the end)"
if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "logs kept in $runs"; else rm -rf "$runs"; fi
