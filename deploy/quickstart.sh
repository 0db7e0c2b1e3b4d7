#!/usr/bin/env bash
# Quick start, part one: installs what is missing, builds, then runs the
# example distributed job on a local 3-node cluster and stops the cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"
echo "== building ferry"
"$root/deploy/build.sh" "$root/build"
echo "== running the example job on a local 3-node cluster"
exec "$root/deploy/local/run-job.sh" "$@"
