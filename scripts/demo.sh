#!/usr/bin/env bash
# make demo: install what is missing, build, trace an example MPI program on 2 ranks, print its summary,
# its LogGPS replay and a sweep of the eager limit S.
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
echo
echo "== mpiadvise replay $dir        (LogGPS: where the time goes, measured and predicted)"
./build/bin/mpiadvise replay "$dir"
echo
echo "== mpiadvise whatif $dir --sweep S=16K..256K        (what raising the eager limit S would do)"
./build/bin/mpiadvise whatif "$dir" --sweep S=16K..256K
