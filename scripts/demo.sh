#!/usr/bin/env bash
# make demo: install what is missing, build, trace an example MPI program on 2 ranks, print the summary.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
make -s all
# Open MPI refuses to start as root unless told
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
dir=build/demo-logs
rm -rf "$dir"
echo "== mpiadvise run -- mpirun -np 2 --mca pml ob1 --mca btl self,tcp build/examples/pingpong_late 65536 20 10"
./build/bin/mpiadvise run --dir "$dir" -- mpirun -np 2 --mca pml ob1 --mca btl self,tcp \
  build/examples/pingpong_late 65536 20 10
echo
echo "== mpiadvise dump --summary $dir"
./build/bin/mpiadvise dump --summary "$dir"
