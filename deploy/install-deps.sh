#!/usr/bin/env bash
# Installs, idempotently, the Debian 12 packages ferry builds and runs with.
# Packages already present are left alone; apt is only called when one is missing.
# Usage: deploy/install-deps.sh [--job]
#   --job  only what building `ferry` and running the example job needs (the
#          quick start); without it, also what the tests, fuzzing, the docs,
#          the benchmark's plots and the cluster tools (Slurm, Prometheus) need.
set -euo pipefail

# Building the `ferry` binary and its libraries, and running a local cluster.
packages=(
  cmake g++ make ninja-build pkg-config
  libcaf-dev libucx-dev ucx-utils
  libmsgpack-cxx-dev nlohmann-json3-dev prometheus-cpp-dev
  libnuma-dev libcli11-dev libspdlog-dev libxxhash-dev libssl-dev openssl
)
if [ "${1:-}" != "--job" ]; then
  packages+=(
    libgtest-dev clang libfuzzer-14-dev
    gnuplot-nox curl doxygen
    prometheus slurm-wlm munge iproute2 jq python3 python3-yaml
  )
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
