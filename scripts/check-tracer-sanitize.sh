#!/usr/bin/env bash
# The tracing library under the sanitizers, inside real MPI jobs: built with ThreadSanitizer, then with
# AddressSanitizer and UndefinedBehaviorSanitizer, and preloaded (after the sanitizer's runtime, which
# must be loaded first) into a 2-rank MPI_THREAD_MULTIPLE program whose four threads call MPI at once.
# Each runs with the call sites by return address, and under AddressSanitizer with MPIADVISE_STACK_DEPTH=4
# too (libunwind, and the stacks each thread remembers: libtrace/callsite.c reads other frames' return
# addresses). Not under ThreadSanitizer: at a thread's end libunwind's own destructor of its thread-local
# cache locks a mutex that ThreadSanitizer intercepts after it has let the thread go, and the job dies
# in ThreadSanitizer (with the tracer of before the remembered stacks as well).
# Passes when every job ends as it does untraced, prints the same checksum, and no sanitizer reports.
# Usage: scripts/check-tracer-sanitize.sh BUILD_DIR [PROGRAM]   (BUILD_DIR holds gen/; PROGRAM, by default
# BUILD_DIR/tests/programs/openmpi/threads, is tests/programs/threads.c built for the MPI of $MPICC)
set -u
build=${1:-build}
cc=${MPICC:-mpicc.openmpi}
src=(libtrace/core.c libtrace/buffers.c libtrace/comm.c libtrace/callsite.c libtrace/metadata.c libtrace/papi.c
     libtrace/support.c libtrace/clock.c libtrace/probe.c "$build/gen/wrappers.c")
program=${2:-$build/tests/programs/openmpi/threads}
[ -x "$program" ] || { echo "check-tracer-sanitize: $program is not built (make tests)"; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_=(mpirun --oversubscribe -np 2 --mca btl self,vader)
expected=$("${mpirun_[@]}" "$program" 2>/dev/null | grep checksum)
[ -n "$expected" ] || { echo "check-tracer-sanitize: the untraced run printed no checksum"; exit 1; }

failed=0
for kind in thread address,undefined; do
  lib="$build/lib/libmpiadvise-san-${kind/,/-}.so"
  case $kind in
    thread) runtime=$(gcc -print-file-name=libtsan.so) ;;
    address,undefined) runtime=$(gcc -print-file-name=libasan.so) ;;
  esac
  mkdir -p "$(dirname "$lib")"
  if ! $cc -std=gnu11 -O1 -g -fno-omit-frame-pointer -fsanitize="$kind" -fPIC -shared -Ilibtrace -I"$build/gen" \
       -Wno-unused-parameter -o "$lib" "${src[@]}" -lzstd -lpapi -ldl -lpthread 2>"$lib.log"; then
    echo "check-tracer-sanitize: building the tracer with -fsanitize=$kind failed:"; cat "$lib.log"; failed=1; continue
  fi
  depths="1 4"
  [ "$kind" = thread ] && depths=1
  for depth in $depths; do
  dir=$(mktemp -d)
  # Open MPI's own code is not instrumented: its leaks are not ours, and ThreadSanitizer cannot see the
  # ordering its progress engine gives; the tracer's threads and buffers are what is checked here.
  out=$("${mpirun_[@]}" -x LD_PRELOAD="$runtime:$PWD/$lib" -x MPIADVISE_DIR="$dir" -x MPIADVISE_STACK_DEPTH=$depth \
        -x TSAN_OPTIONS="halt_on_error=1 report_signal_unsafe=0 exitcode=66 suppressions=$PWD/scripts/tsan-openmpi.supp" \
        -x ASAN_OPTIONS="detect_leaks=0 halt_on_error=1 exitcode=66" -x UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1" \
        "$program" 2>&1)
  status=$?
  logs=$(ls "$dir"/rank-*.mpa 2>/dev/null | wc -l)
  if [ $status -ne 0 ] || ! grep -q -- "$expected" <<<"$out" || grep -qE "ThreadSanitizer|AddressSanitizer|runtime error" <<<"$out" ||
     [ "$logs" -ne 2 ]; then
    echo "check-tracer-sanitize: -fsanitize=$kind, stack depth $depth: exit $status, $logs logs; output:"
    printf '%s\n' "$out" | head -80
    failed=1
  else
    echo "check-tracer-sanitize: -fsanitize=$kind, stack depth $depth: clean (2 ranks x 4 threads, $logs logs, $expected)"
  fi
  rm -rf "$dir"
  done
done
exit $failed
