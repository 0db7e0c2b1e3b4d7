#!/usr/bin/env bash
# Static checks of the Kubernetes manifests in deploy/k8s (no cluster):
# tests/deploy/check_k8s.py, with the `ferry` binary whose `node --help`
# gives the option names node.toml and the StatefulSet may use.
#   FERRY_BIN=path/to/ferry tests/deploy/k8s_manifests.sh [check_k8s.py options]
# Exit status: 0 ok, 1 a check failed, 2 it could not run (no PyYAML).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export FERRY_BIN=${FERRY_BIN:-$root/build/apps/ferry}
# Debian's python3 has python3-yaml; another python3 first on PATH may not.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
exec "$py" "$root/tests/deploy/check_k8s.py" "$@"
