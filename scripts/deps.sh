#!/usr/bin/env bash
# Installs the Debian packages mpiadvise builds and tests with, if any is missing.
set -eu
# python3-mpi4py: a Python MPI program's pickled messages (tests/mpi_p2p.cpp); clang and its runtimes:
# the clang build, the sanitizers and libFuzzer in CI
# mpich, libmpich-dev: MPICH 4.0 beside Open MPI (mpicc.mpich, mpirun.mpich: calibrate and the MPICH tests)
# libc6-dbg: libc's detached debug file in Debian's /usr/lib/debug/.build-id layout (tests/unit_symbols.cpp)
# libotf2-trace-dev, otf2-tools: mpiadvise export --format otf2, and otf2-print to read its archives back
# libjs-chart.js: Chart.js, inlined into report --format html; chromium, chromium-driver, python3-selenium:
# the tests open that page in headless Chromium (tests/browser_check.py)
packages="build-essential pkg-config python3 openmpi-bin libopenmpi-dev gfortran libzstd-dev zstd libunwind-dev
  libpapi-dev papi-tools catch2 libcli11-dev nlohmann-json3-dev libfmt-dev libdw-dev libelf-dev libtomlplusplus-dev
  libc6-dbg python3-mpi4py clang libclang-rt-14-dev mpich libmpich-dev libotf2-trace-dev otf2-tools
  libjs-chart.js chromium chromium-driver python3-selenium"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "mpiadvise: installing$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
