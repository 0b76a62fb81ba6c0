#!/usr/bin/env bash
# make demo: install what is missing, build, trace an example MPI program on 2 ranks (a pipeline whose
# 128 KiB items go by rendezvous under Open MPI's TCP eager limit), print its report, and write it as an
# HTML page (build/demo-report.html) and the run as a Perfetto timeline (build/demo-timeline.json).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
make -s all
# Open MPI refuses to start as root unless told
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
dir=build/demo-logs
rm -rf "$dir"
run="mpirun -np 2 --mca pml ob1 --mca btl self,tcp build/examples/pipeline"
echo "== mpiadvise run --dir $dir -- $run"
./build/bin/mpiadvise run --dir "$dir" -- $run
echo
echo "== mpiadvise report $dir"
./build/bin/mpiadvise report "$dir"
echo
echo "== mpiadvise report $dir --format html -o build/demo-report.html"
./build/bin/mpiadvise report "$dir" --format html -o build/demo-report.html
echo "== mpiadvise export $dir --format perfetto --predicted -o build/demo-timeline.json"
./build/bin/mpiadvise export "$dir" --format perfetto --predicted -o build/demo-timeline.json
echo
echo "The report as a page with charts: $PWD/build/demo-report.html (open it in a browser; it needs no network)."
echo "The run as a timeline, measured and predicted: $PWD/build/demo-timeline.json (open it in ui.perfetto.dev)."
