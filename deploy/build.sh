#!/usr/bin/env bash
# Configures and builds ferry. Usage: deploy/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_DIR defaults to build/. Uses every core unless FERRY_JOBS is set.
# FERRY_TARGETS (space separated) builds only those targets, e.g. "ferry".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}
shift || true
jobs=${FERRY_JOBS:-$(nproc)}
# A new build directory uses Ninja where it is installed: at -j2 it keeps both
# cores busy across library boundaries, where make waits for each library.
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=${FERRY_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
targets=()
for t in ${FERRY_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
