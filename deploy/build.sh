#!/usr/bin/env bash
# Configures and builds ferry. Usage: deploy/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_DIR defaults to build/. Uses every core unless FERRY_JOBS is set.
# FERRY_TARGETS (space separated) builds only those targets, e.g. "ferry".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${1:-$root/build}
shift || true
jobs=${FERRY_JOBS:-$(nproc)}
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=${FERRY_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
targets=()
for t in ${FERRY_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
