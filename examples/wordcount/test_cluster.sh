#!/usr/bin/env bash
# The job on a local cluster: ferry's own cluster script starts three
# wordcount_node processes (FERRY_BIN), the job joins them with --nodes.
# Usage: test_cluster.sh CLUSTER_SH WORDCOUNT_NODE WORDCOUNT
set -euo pipefail
cluster=$1
export FERRY_BIN=$2
job=$3
export FERRY_CLUSTER_DIR
FERRY_CLUSTER_DIR=$(mktemp -d /tmp/wordcount-cluster.XXXXXX)
export UCX_NET_DEVICES=lo
trap '"$cluster" stop >/dev/null 2>&1 || true; rm -rf "$FERRY_CLUSTER_DIR"' EXIT
"$cluster" start 3
"$job" --words 300000 --shards 12 --nodes "$("$cluster" endpoints)"
