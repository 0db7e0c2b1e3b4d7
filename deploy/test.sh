#!/usr/bin/env bash
# Quick start, part two: installs what is missing, builds, runs the tests.
# Usage: deploy/test.sh [--sanitize] [ctest args...]
#   --sanitize  builds in build-asan/ with ASan + UBSan and runs the tests there.
# CC and CXX choose the compiler of a new build directory (CI builds
# build-asan/ with clang, which also builds the libFuzzer targets).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$root/build
# The tests and the benchmark are on even where the quick start configured
# build/ without them.
cmake_args=(-DFERRY_BUILD_TESTS=ON -DFERRY_WITH_BENCH=ON)
if [ "${1:-}" = "--sanitize" ]; then
  shift
  build_dir=$root/build-asan
  cmake_args+=(-DFERRY_SANITIZE=ON)
  export FERRY_BUILD_TYPE=${FERRY_BUILD_TYPE:-Debug}
  # CAF and prometheus-cpp are not instrumented; container annotations would
  # be false alarms. LeakSanitizer stays on.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_container_overflow=0:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  # A suppressed leak must not print its report either: the tests read the
  # nodes' stderr (one JSON object per line with --log-format json).
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}
fi
"$root/deploy/install-deps.sh"
echo "== building ferry in $build_dir"
# FERRY_CMAKE_ARGS adds cmake options (e.g. -DFERRY_WITH_BENCH=OFF).
# shellcheck disable=SC2206
cmake_args+=(${FERRY_CMAKE_ARGS:-})
"$root/deploy/build.sh" "$build_dir" "${cmake_args[@]}"
echo "== running the tests"
cd "$build_dir"
# A clang build has the libFuzzer targets too (label fuzz): they run here,
# each briefly over its seed corpus; a GCC build has none. (Several -LE
# options exclude only the tests that match all of them: pass one.)
# Two at a time (FERRY_JOBS): the process tests wait more than they compute.
ctest --output-on-failure --timeout 300 -j "${FERRY_JOBS:-2}" "$@"
