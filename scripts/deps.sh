#!/usr/bin/env bash
# Installs the Debian packages mpiadvise builds and tests with, if any is missing.
set -eu
packages="build-essential pkg-config python3 openmpi-bin libopenmpi-dev gfortran libzstd-dev zstd libunwind-dev
  libpapi-dev papi-tools catch2 libcli11-dev nlohmann-json3-dev libfmt-dev libdw-dev libelf-dev libtomlplusplus-dev
  mpich libmpich-dev"
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
