#!/usr/bin/env bash
# tests/gpu/run.sh: the check of the CUDA staging layer on a GPU machine,
# unattended, in well under 10 minutes:
#  1. builds ferry with CUDA (build-gpu/, Release) against the Debian
#     packages installed, or, where the image lacks them, the ones carried
#     in .debs/ (deploy/fetch-gpu-debs.sh), unpacked under /tmp/ferry-root;
#  2. refuses, clearly and with a non-zero status, when there is no GPU or
#     no driver (after building, so a machine without one still checks
#     that the real backend compiles and links);
#  3. runs the cuda tests: the fake's, and the real driver's (none of those
#     may be skipped on a GPU machine);
#  4. runs one remote staging READ and WRITE between two processes on the
#     real driver (RemoteStagingOnTheDriver, FERRY_TEST_REAL_CUDA=1);
#  5. runs the staged-copy benchmark (staged D2H and H2D through 1, 4, 16
#     and 64 MiB chunks against direct pinned copies, 4 MiB to 1 GiB) and
#     prints its JSON, also written to $OUT/staging-bench.json.
# Usage: tests/gpu/run.sh   (device: carry .debs; OUT is set there)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/build-gpu/out}"
mkdir -p "$out"
jobs="$(nproc)"
prefix_args=()

if ! pkg-config --exists ucx 2>/dev/null || [ ! -e /usr/include/caf/all.hpp ]; then
  if [ ! -d "$root/.debs" ]; then
    echo "gpu check: CAF and UCX are not installed and no .debs/ was carried" >&2
    echo "gpu check: run deploy/fetch-gpu-debs.sh where Debian's registry is reachable" >&2
    exit 2
  fi
  deps=/tmp/ferry-root
  mkdir -p "$deps"
  for f in "$root"/.debs/*.deb; do dpkg -x "$f" "$deps"; done
  lib="$deps/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export UCX_MODULE_DIR="$lib/ucx"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$deps/usr/share/pkgconfig"
  prefix_args=(-DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_INCLUDE_PATH="$deps/usr/include")
  echo "gpu check: building against the carried packages in $deps"
fi

echo "gpu check: building (build-gpu, Release, CUDA on)"
cmake -S "$root" -B "$root/build-gpu" -DCMAKE_BUILD_TYPE=Release -DFERRY_WITH_CUDA=ON \
  "${prefix_args[@]}" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 3; }
grep -q "CUDA=ON" "$out/configure.log" || {
  echo "gpu check: the CUDA toolkit was not found (see configure.log)" >&2; exit 3; }
cmake --build "$root/build-gpu" -j"$jobs" --target ferry ferry_staging_tests \
  ferry_gpu_payload_tests ferry_gpu_peer ferry_remote_staging_tests \
  > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 3; }

staging_tests="$root/build-gpu/tests/staging/ferry_staging_tests"
if ! "$staging_tests" --gtest_filter='*CudaDriver.TheDefaultLibrary*' 2>&1 | grep -q "a CUDA driver is installed here"; then
  echo "gpu check: built; refusing to go on: this machine has no usable CUDA driver or GPU" >&2
  "$staging_tests" --gtest_filter='*CudaBackend*driver*' 2>&1 | grep -m1 "no driver backend" >&2 || true
  exit 4
fi

echo "gpu check: the cuda tests (the fake and the real driver)"
"$staging_tests" --gtest_filter='*Cuda*' 2>&1 | tee "$out/staging-tests.log" | tail -3
if grep -q "SKIPPED.*driver" "$out/staging-tests.log"; then
  echo "gpu check: a real-driver test was skipped on a GPU machine" >&2; exit 5
fi
grep -q "FAILED" "$out/staging-tests.log" && { echo "gpu check: cuda tests failed" >&2; exit 5; }
(cd "$root/build-gpu" && UCX_NET_DEVICES=lo ctest -L cuda -j4 --output-on-failure) \
  > "$out/ctest-cuda.log" 2>&1 || { tail -40 "$out/ctest-cuda.log"; exit 5; }

echo "gpu check: remote staging, one READ and one WRITE between two processes on the driver"
FERRY_TEST_REAL_CUDA=1 UCX_NET_DEVICES=lo \
  "$root/build-gpu/tests/staging/ferry_remote_staging_tests" \
  --gtest_filter='RemoteStagingOnTheDriver.*' > "$out/remote-staging.log" 2>&1 \
  || { tail -40 "$out/remote-staging.log"; exit 7; }
tail -3 "$out/remote-staging.log"

echo "gpu check: the staged-copy benchmark"
"$root/build-gpu/apps/ferry" bench --scenarios 'cuda_*' --sizes 4M,16M,64M,256M,1G \
  --warmup 1 --repeats 5 --json "$out/staging-bench.json" > "$out/staging-bench.txt" 2>&1 \
  || { tail -30 "$out/staging-bench.txt"; exit 6; }
grep -E "cuda_staged_.*/ cuda_direct" "$out/staging-bench.txt" || true
cat "$out/staging-bench.json"
