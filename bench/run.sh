#!/usr/bin/env bash
# make bench: tracer overhead and log size, measured side by side in one run. Measures and prints; asserts
# nothing.
#
#   (a) one rank sending to itself and (b) two ranks exchanging, each a loop of MPI_Irecv / MPI_Isend /
#       MPI_Waitall with 8-byte messages (bench/p2p_loop.c), run REPS times interleaved as
#       untraced, traced (default settings), traced with MPIADVISE_STACK_DEPTH=4, untraced, ...
#       The program times its own loop after a warm-up, so start-up is not in the figures.
#   (p) one rank polling: MPI_Test and MPI_Iprobe that find nothing, 100 of them to every 3 other calls
#       (bench/p2p_loop.c poll), timed like (a).
#   (c) a 1-D halo exchange on 4 ranks (oversubscribed on small machines) for log bytes and memory.
#   (d) replay throughput of the analyzer on a synthetic trace of 64 ranks x 1 M events, and the cost of the
#       report's advice in simulations of that trace; the trace's ops as compact op streams, their bytes
#       an op, unpacked and packed, how fast a cursor reads them and the simulation walks them, the wait
#       states found walking them by entry beside the trace's, their sums by site, the computations, the
#       phases' marks and the hot spots from the packed streams beside the trace's, and the simulation's
#       peak walking them with the trace let go (bench/replay_bench.cpp).
#   (e) mpiadvise replay of mpiadvise-synth's logs (a halo of 64 ranks x BENCH_REPORT_EVENTS, default 20000
#       calls each): the log to prediction path, reading and matching included, in calls per second and
#       bytes per call; then mpiadvise report --format json of them with one thread and with every CPU, side
#       by side: time, peak memory, bytes per call, and whether the two reports are the same; then mpiadvise
#       replay of an all-to-all of 16 ranks x BENCH_COLL_EVENTS (100000) and an allreduce of 8 bytes on 1024
#       ranks x BENCH_COLL_LARGE_EVENTS (1000): collectives walked as their algorithms run them; and what a
#       rank costs beside its calls: the peak of mpiadvise report of a halo of BENCH_RANK_CALLS (409600)
#       calls on 64 ranks against the same calls on 4096.
#   (f) the replay spread over 2 MPI processes (mpirun -np 2, analyzer/replay_peers.hpp) against the replay
#       alone, side by side: speed-up, rounds of exchange, memory per process, and whether the results are
#       the same (bench/spread_bench.cpp); on the ring of (d) and on mpiadvise-synth's logs.
#   (g) the report of a large run in bounded memory: mpiadvise-synth writes the logs of a halo of 1024 ranks x
#       10^9 calls in all (BENCH_LARGE_CALLS), and mpiadvise report --format json runs on them with its address
#       space limited to 4 GiB (BENCH_LARGE_LIMIT_MIB, as ulimit -v does): its time and peak, or its refusal,
#       which names the memory it would need and the part of the run that fits (--until T); then the report
#       of the part of X seconds it names elsewhere (--from S --until S+X) ten times T into the run (--from
#       10T --until 10T+X), as a user who wants the steady state rather than the start would run it, under
#       the same limit (where that is refused, the shorter part the refusal names).
#
# (a)-(c) run under the MPI named by BENCH_MPI (openmpi or mpich; `make bench` runs them under each MPI
# built), with the tracing library built for it; BENCH_REPLAY=0 leaves (d), (e), (f) and (g) out.
#
# Environment: BUILD (default build), BENCH_MPI (openmpi), MPICC and MPIRUN (that MPI's: mpicc.openmpi,
#   mpirun.openmpi; mpicc.mpich, mpirun.mpich), PYTHON (python3),
#   BENCH_REPS (5), BENCH_ITERS (loop iterations per run; 3 calls each; default 200000),
#   BENCH_HALO_ITERS (20000; 6 calls each), BENCH_KEEP=1 keeps the logs in $BUILD/bench/runs,
#   BENCH_REPLAY_RANKS (64), BENCH_REPLAY_EVENTS (events per rank, 1000000) and BENCH_REPLAY_REPEATS (3: (d)
#   prints the median replay of that many, and their range).
set -eu
cd "$(dirname "$0")/.."

BUILD="${BUILD:-build}"
MPI="${BENCH_MPI:-openmpi}"
MPICC="${MPICC:-mpicc.$MPI}"
MPIRUN="${MPIRUN:-mpirun.$MPI}"
PYTHON="${PYTHON:-python3}"
REPS="${BENCH_REPS:-5}"
ITERS="${BENCH_ITERS:-200000}"
WARMUP=$((ITERS / 10))
HALO_ITERS="${BENCH_HALO_ITERS:-20000}"
HALO_CELLS=2000

case "$BUILD" in /*) build_abs="$BUILD" ;; *) build_abs="$PWD/$BUILD" ;; esac
lib="$build_abs/lib/mpiadvise/$MPI/libmpiadvise.so"
if [ ! -f "$lib" ]; then
  echo "bench: $lib is missing; build first (make BUILD=$BUILD)" >&2
  exit 1
fi

# ---- the bench programs ------------------------------------------------------------------------------
bin="$build_abs/bench/$MPI"
mkdir -p "$bin"
for p in p2p_loop halo; do
  if [ ! -x "$bin/$p" ] || [ "bench/$p.c" -nt "$bin/$p" ] || [ bench/bench_common.h -nt "$bin/$p" ]; then
    # MPICH's MPI_STATUSES_IGNORE (a cast 1) trips gcc's -Wstringop-overflow
    "$MPICC" -O2 -g -Wall -Wextra -Wno-stringop-overflow -o "$bin/$p" "bench/$p.c"
  fi
done
if [ ! -x "$bin/clock_cost" ] || [ bench/clock_cost.c -nt "$bin/clock_cost" ] ||
  [ bench/bench_common.h -nt "$bin/clock_cost" ]; then
  "${CC:-cc}" -O2 -g -Wall -Wextra -o "$bin/clock_cost" bench/clock_cost.c
fi

# ---- a clean environment: untraced means no preload at all; traced means the defaults ------------------
unset LD_PRELOAD MPIADVISE MPIADVISE_DIR MPIADVISE_STACK_DEPTH MPIADVISE_BUFFER MPIADVISE_PAPI \
  MPIADVISE_ZSTD_LEVEL
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

runs="$bin/runs"
rm -rf "$runs"
mkdir -p "$runs"
results="$runs/results.txt"
: >"$results"

# run_one NAME REP MODE NP PROGRAM ARGS...   MODE: untraced | traced | depth4
run_one() {
  local name=$1 rep=$2 mode=$3 np=$4
  shift 4
  local dir="$runs/$name-$mode-$rep" env=() vars=() v
  case "$mode" in
    untraced) ;;
    traced) vars=("LD_PRELOAD=$lib" "MPIADVISE_DIR=$dir") ;;
    depth4) vars=("LD_PRELOAD=$lib" "MPIADVISE_DIR=$dir" MPIADVISE_STACK_DEPTH=4) ;;
  esac
  # Open MPI's mpirun forwards a variable with -x NAME=VALUE, MPICH's Hydra with -genv NAME VALUE
  for v in ${vars[@]+"${vars[@]}"}; do
    if [ "$MPI" = openmpi ]; then env+=(-x "$v"); else env+=(-genv "${v%%=*}" "${v#*=}"); fi
  done
  local over=()
  [ "$MPI" = openmpi ] && over=(--oversubscribe)
  local out
  if ! out=$(timeout 120 "$MPIRUN" ${over[@]+"${over[@]}"} -np "$np" ${env[@]+"${env[@]}"} "$@" 2>"$runs/stderr")
  then
    echo "bench: this run failed: $MPIRUN -np $np ${env[*]:-} $*" >&2
    cat "$runs/stderr" >&2
    exit 1
  fi
  [ "$mode" = untraced ] && dir=-
  printf '%s\n' "$out" | grep '^BENCH ' |
    sed "s|^BENCH |RUN name=$name rep=$rep mode=$mode np=$np dir=$dir |" >>"$results"
}

cpus=$(nproc 2>/dev/null || echo "?")
halo_reps=$(( REPS < 3 ? REPS : 3 ))
# MPICH's ranks poll without yielding: 4 of them on 2 CPUs took over 120 s for what Open MPI's do in 2 s
HALO_NP=4
[ "$MPI" = mpich ] && [ "$cpus" != "?" ] && [ "$cpus" -lt 4 ] && HALO_NP=2
export HALO_NP
version=$("$MPIRUN" --version 2>/dev/null | grep -m1 -iE 'openrte|open mpi|version' | sed -E 's/.*[ :\t]([0-9]+\.[0-9.]+).*/\1/')
echo "mpiadvise bench: BUILD=$BUILD, $MPI $version, $cpus CPUs," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') before the runs"
echo "  (a), (b), (p): $REPS x (untraced, traced, traced with MPIADVISE_STACK_DEPTH=4)," \
  "$((3 * ITERS)) timed calls per rank per run ((p): $((103 * (ITERS / 25)))); (c): $halo_reps x the same, $((6 * HALO_ITERS)) calls per rank"
"$bin/clock_cost" >>"$results"

start=$(date +%s)
for rep in $(seq 1 "$REPS"); do
  for mode in untraced traced depth4; do
    run_one self "$rep" "$mode" 1 "$bin/p2p_loop" self "$ITERS" "$WARMUP"
  done
  for mode in untraced traced depth4; do
    run_one pair "$rep" "$mode" 2 "$bin/p2p_loop" pair "$ITERS" "$WARMUP"
  done
  for mode in untraced traced depth4; do
    run_one poll "$rep" "$mode" 1 "$bin/p2p_loop" poll "$((ITERS / 25))" "$((WARMUP / 25))"
  done
done
for rep in $(seq 1 "$halo_reps"); do
  for mode in untraced traced depth4; do
    run_one halo "$rep" "$mode" "$HALO_NP" "$bin/halo" "$HALO_ITERS" "$HALO_CELLS"
  done
done

"$PYTHON" bench/report.py "$results" "$cpus"
echo "($(($(date +%s) - start)) s of runs; load average" \
  "$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') after)"
if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "logs and raw results kept in $runs"; else rm -rf "$runs"; fi

# ---- (d) the analyzer: replay throughput on a synthetic trace (BENCH_REPLAY_RANKS x BENCH_REPLAY_EVENTS) ----
[ "${BENCH_REPLAY:-1}" = 0 ] && exit 0
if [ ! -x "$bin/replay_bench" ] || [ bench/replay_bench.cpp -nt "$bin/replay_bench" ] ||
  [ "$build_abs/lib/libmpiadvise-analyzer.a" -nt "$bin/replay_bench" ]; then
  "${CXX:-g++}" -std=c++20 -O2 -Ianalyzer -Ilibtrace -I"$build_abs/gen" -o "$bin/replay_bench" bench/replay_bench.cpp \
    "$build_abs/lib/libmpiadvise-analyzer.a" -lzstd -lfmt -ldw -lelf -ltomlplusplus
fi
echo
MPIADVISE_PARAMS_DIR="$PWD/share/params" "$bin/replay_bench" "${BENCH_REPLAY_RANKS:-64}" "${BENCH_REPLAY_EVENTS:-1000000}" \
  "${BENCH_REPLAY_REPEATS:-3}"

# ---- (e) the report on synthetic logs: one thread against every CPU ----
echo
report_events="${BENCH_REPORT_EVENTS:-20000}"
synth_dir="$build_abs/bench/synth-halo"
rm -rf "$synth_dir"
"$build_abs/bin/mpiadvise-synth" --ranks 64 --events "$report_events" --pattern halo -o "$synth_dir" >/dev/null
"$PYTHON" - "$build_abs/bin/mpiadvise" "$synth_dir" "$((64 * report_events))" <<'PY'
import os, resource, subprocess, sys, time
mpiadvise, logs, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpus = len(os.sched_getaffinity(0))
def measure(args):
    # each in a process of its own, so that its peak is its own
    code = ("import resource, subprocess, sys, time\n"
            "t = time.monotonic()\n"
            "out = subprocess.run(sys.argv[1:], capture_output=True, check=True).stdout\n"
            "sys.stdout.buffer.write(b'%f %d\\n' % (time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + out)\n")
    out = subprocess.run([sys.executable, "-c", code, mpiadvise] + args, capture_output=True, check=True).stdout
    head, _, report = out.partition(b"\n")
    seconds, kib = head.split()
    return float(seconds), int(kib), report
def run(threads):
    return measure(["report", "--format", "json", "--threads", str(threads), logs])
# what a user's replay of the logs costs beside the bare simulation of (d): reading, matching, one replay
replay = measure(["replay", logs])
print("replay of a synthetic halo, 64 ranks x %d calls from its logs (mpiadvise replay: reading, matching, "
      "one simulation):" % (calls // 64))
print("  %7.2f s   %5.2f M calls/s   %7.1f MiB peak   %6.1f bytes per call" %
      (replay[0], calls / replay[0] / 1e6, replay[1] / 1024, replay[1] * 1024 / calls))
one = run(1)
many = run(cpus) if cpus > 1 else one
print("report of a synthetic halo, 64 ranks x %d calls (mpiadvise report --format json):" % (calls // 64))
for name, (s, kib, _) in (("1 thread", one), ("%d threads" % cpus, many)):
    print("  %-10s %7.2f s   %7.1f MiB peak   %6.1f bytes per call" % (name, s, kib / 1024, kib * 1024 / calls))
print("  %d threads / 1: %.2fx the speed, %.2fx the memory; the reports %s" %
      (cpus, one[0] / many[0], many[1] / one[1], "are the same" if one[2] == many[2] else "DIFFER"))
PY
rm -rf "$synth_dir"
# collectives, which the replay walks step by step as the library's algorithm runs them: an all-to-all of 16
# ranks of 8 KiB for each (240 messages a call) and an allreduce of 1024 ranks of 8 bytes (a dot product:
# a recursive doubling's 10 rounds)
echo "replay of synthetic collectives from their logs (mpiadvise replay: reading, matching, one simulation):"
for coll in "alltoall 16 ${BENCH_COLL_EVENTS:-100000} 8192" "allreduce 1024 ${BENCH_COLL_LARGE_EVENTS:-1000} 8"; do
  set -- $coll
  "$build_abs/bin/mpiadvise-synth" --ranks "$2" --events "$3" --pattern "$1" --bytes "$4" -o "$synth_dir" >/dev/null
  "$PYTHON" - "$build_abs/bin/mpiadvise" "$synth_dir" "$1" "$2" "$3" "$4" <<'PY'
import resource, subprocess, sys, time
mpiadvise, logs, pattern, ranks, events = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
t = time.monotonic()
subprocess.run([mpiadvise, "replay", logs], capture_output=True, check=True)
s, kib, calls = time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, ranks * events
print("  %-9s %4d ranks x %6d calls of %5d bytes: %6.2f s   %5.2f M calls/s   %7.1f MiB peak   %6.1f bytes per call" %
      (pattern, ranks, events, int(sys.argv[6]), s, calls / s / 1e6, kib / 1024, kib * 1024 / calls))
PY
  rm -rf "$synth_dir"
done
# what a rank costs beside its calls: the report of the same calls made by 64 ranks and by 4096 (each
# log's header, definitions and index, its part of the trace and of the report); before the logs held
# their call names and MPI_COMM_WORLD's members once for the run, 118 KiB a rank (the members: the ranks
# squared)
per_rank_calls="${BENCH_RANK_CALLS:-409600}"
for ranks in 64 4096; do
  "$build_abs/bin/mpiadvise-synth" --ranks "$ranks" --events "$((per_rank_calls / ranks))" --pattern halo \
    -o "$synth_dir-$ranks" >/dev/null
done
"$PYTHON" - "$build_abs/bin/mpiadvise" "$synth_dir" "$per_rank_calls" <<'PY'
import subprocess, sys
mpiadvise, logs, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
def peak(ranks):
    code = ("import resource, subprocess, sys\n"
            "subprocess.run(sys.argv[1:], capture_output=True, check=True)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, mpiadvise, "report", "--format", "json", "--threads", "1",
                          "%s-%d" % (logs, ranks)], capture_output=True, check=True).stdout
    return int(out)
few, many = peak(64), peak(4096)
print("report of %d calls of a halo on 64 ranks and on 4096 (mpiadvise report --format json --threads 1):" % calls)
print("  %7.1f MiB peak, %7.1f MiB peak: %5.1f KiB a rank beside its calls" %
      (few / 1024, many / 1024, (many - few) / (4096 - 64)))
PY
rm -rf "$synth_dir-64" "$synth_dir-4096"

# ---- (f) the replay spread over 2 MPI processes against the replay alone (bench/spread_bench.cpp) ----
# The ring of (d) (BENCH_SPREAD_EVENTS per rank, default 300000), then mpiadvise-synth's halo, pipeline and
# all-to-all of 64 ranks: a cycle through every rank, a 2-D halo, a chain, and collectives whose every step
# crosses between the processes.
MPICXX="${MPICXX:-mpicxx.$MPI}"
# mpi_peers.o, and what it calls in the command's own objects (spread.o: a failing process's one line and
# MPI_Abort; mpi_choice.o, which spread.o names)
spread_objs=("$build_abs/obj/cli/$MPI/mpi_peers.o" "$build_abs/obj/cli/spread.o" "$build_abs/obj/cli/mpi_choice.o")
if [ ! -x "$bin/spread_bench" ] || [ bench/spread_bench.cpp -nt "$bin/spread_bench" ] ||
  [ "$build_abs/lib/libmpiadvise-analyzer.a" -nt "$bin/spread_bench" ] || [ "${spread_objs[0]}" -nt "$bin/spread_bench" ]; then
  "$MPICXX" -std=c++20 -O2 -DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX -Ianalyzer -Ilibtrace -Icli -Ibench -I"$build_abs/gen" \
    -o "$bin/spread_bench" bench/spread_bench.cpp "${spread_objs[@]}" \
    "$build_abs/lib/libmpiadvise-analyzer.a" -lzstd -lfmt -ldw -lelf -ltomlplusplus
fi
echo
spread_run() { MPIADVISE_PARAMS_DIR="$PWD/share/params" $MPIRUN $([ "$MPI" = openmpi ] && echo --allow-run-as-root) -np 2 "$bin/spread_bench" "$@"; }
spread_run 64 "${BENCH_SPREAD_EVENTS:-300000}"
for pattern in halo:30000 pipeline:30000 alltoall:2000; do
  synth_dir="$build_abs/bench/synth-${pattern%%:*}"
  rm -rf "$synth_dir"
  "$build_abs/bin/mpiadvise-synth" --ranks 64 --events "${pattern#*:}" --pattern "${pattern%%:*}" -o "$synth_dir" >/dev/null
  spread_run "$synth_dir" | sed 1s/^/\\n/
  rm -rf "$synth_dir"
done

# ---- (g) the report of a run of 1024 ranks and 10^9 calls, in 4 GiB ----------------------------------
echo
synth_dir="$build_abs/bench/synth-large"
rm -rf "$synth_dir"
"$PYTHON" - "$build_abs/bin" "$synth_dir" "${BENCH_LARGE_CALLS:-1000000000}" "${BENCH_LARGE_LIMIT_MIB:-4096}" <<'PY'
import os, resource, subprocess, sys, time
bindir, logs, calls, limit_mib = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
per_rank = calls // 1024
t = time.monotonic()
subprocess.run([os.path.join(bindir, "mpiadvise-synth"), "--ranks", "1024", "--events", str(per_rank), "--pattern", "halo",
                "-o", logs], check=True, capture_output=True)
synth_s = time.monotonic() - t
log_bytes = sum(e.stat().st_size for e in os.scandir(logs))
# the report in a process of its own, so that the peak is the report's and not the generator's
code = ("import resource, subprocess, sys, time\n"
        "def limit(): resource.setrlimit(resource.RLIMIT_AS, (%d << 20, %d << 20))\n"
        "t = time.monotonic()\n"
        "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit)\n"
        "sys.stdout.write('%%d %%f %%d\\n' %% (p.returncode, time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
        "sys.stdout.write(p.stderr.decode(errors='replace'))\n" % (limit_mib, limit_mib))
out = subprocess.run([sys.executable, "-c", code, os.path.join(bindir, "mpiadvise"), "report", "--format", "json", logs],
                     capture_output=True, check=True, text=True).stdout
head, _, stderr = out.partition("\n")
rc, seconds, kib = int(head.split()[0]), float(head.split()[1]), int(head.split()[2])
print("report of a synthetic halo, 1024 ranks x %d calls (%.3g in all; logs of %.0f MiB, written by mpiadvise-synth in %.0f s),"
      " its address space limited to %d MiB:" % (per_rank, per_rank * 1024, log_bytes / 2**20, synth_s, limit_mib))
if rc == 0:
    print("  %.1f s   %.1f MiB peak   %.1f bytes per call   [target: within 4 GiB: %s]" %
          (seconds, kib / 1024, kib * 1024 / (per_rank * 1024), "met" if kib * 1024 <= 4 << 30 else "missed"))
else:
    lines = stderr.strip().splitlines()
    print("  refused (exit %d) after %.1f s: %s" % (rc, seconds, lines[-1] if lines else "(no message)"))
    print("  [target: within 4 GiB: missed; the report holds a trace of every call, bounded memory needs the calls streamed]")
    import re
    fit = re.search(r"\(--until ([0-9.e+-]+)\)", stderr)
    if fit:
        t_fit = float(fit.group(1))
        # the part it names elsewhere in the run: X seconds, a little less than T (--from S --until S+X)
        later = re.search(r"\(--from S --until S\+([0-9.e+-]+)\)", stderr)
        x_fit = float(later.group(1)) if later else t_fit
        part = ["--from", "%.6g" % (10 * t_fit), "--until", "%.6g" % (10 * t_fit + x_fit)]
        for attempt in range(2):
            out = subprocess.run([sys.executable, "-c", code, os.path.join(bindir, "mpiadvise"), "report", "--format", "json"] +
                                 part + [logs], capture_output=True, check=True, text=True).stdout
            head, _, stderr = out.partition("\n")
            rc, seconds, kib = int(head.split()[0]), float(head.split()[1]), int(head.split()[2])
            shorter = re.search(r"\((--from [0-9.e+-]+ --until [0-9.e+-]+)\)", stderr)
            if rc == 0 or not shorter:
                break
            print("  %s: refused (the part holds more calls than its share of the run's time), which names %s" %
                  (" ".join(part), shorter.group(1)))
            part = shorter.group(1).split()
        if rc == 0:
            print("  %s (a part of the run's steady state, the calls before read and counted, not held): %.1f s, "
                  "%.1f MiB peak" % (" ".join(part), seconds, kib / 1024))
        else:
            lines = stderr.strip().splitlines()
            print("  %s: exit %d: %s" % (" ".join(part), rc, lines[-1] if lines else "(no message)"))
PY
rm -rf "$synth_dir"

