#!/usr/bin/env bash
# Fetches, into .debs/ (ignored by git), the Debian 12 packages ferry builds
# against and runs with that a GPU machine's image lacks (CAF, UCX,
# msgpack-c, nlohmann/json, prometheus-cpp, libnuma, GoogleTest, CLI11,
# spdlog, xxHash), so tests/gpu/run.sh can build there: carry `.debs` in
# the device run, and run.sh unpacks them under /tmp/ferry-root (never /).
# Run it here, where Debian's registry is reachable; it needs no root.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.debs"
mkdir -p "$out"
cd "$out"
packages=(
  libcaf-dev libcaf-core0.17 libcaf-io0.17 libcaf-openssl0.17
  libucx-dev libucx0
  libmsgpack-cxx-dev nlohmann-json3-dev
  prometheus-cpp-dev libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0
  libcivetweb1 libcivetweb-dev
  libnuma-dev libnuma1
  libgtest-dev libcli11-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9
  libxxhash-dev
)
apt-get download "${packages[@]}" >/dev/null
du -sh "$out"
echo "fetch-gpu-debs: ${#packages[@]} packages in .debs/ (carry '.debs' in the device run)"
