#!/usr/bin/env bash
# Starts a local 3-node cluster, runs the example distributed job on it and
# stops the cluster, whatever happens. Extra arguments go to `ferry job`
# (e.g. --mib 512). FERRY_NODES sets the node count.
set -euo pipefail
# Everything stays on loopback, UCX included.
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ferry=${FERRY_BIN:-$root/build/apps/ferry}
# Installed (share/ferry/deploy): the packaged `ferry` on PATH.
if [ -z "${FERRY_BIN:-}" ] && [ ! -x "$ferry" ] && command -v ferry >/dev/null; then
  ferry=$(command -v ferry)
fi
export FERRY_CLUSTER_DIR=${FERRY_CLUSTER_DIR:-$(mktemp -d /tmp/ferry-cluster-XXXXXX)}
trap '"$here/cluster.sh" stop' EXIT
"$here/cluster.sh" start "${FERRY_NODES:-3}"
"$ferry" job --nodes "$("$here/cluster.sh" endpoints)" "$@"
