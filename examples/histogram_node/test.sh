#!/usr/bin/env bash
# The example's test: ferry's own local-cluster script runs two
# histogram_node binaries (FERRY_BIN), the job checks both, the cluster stops.
# Usage: test.sh CLUSTER_SH HISTOGRAM_NODE HISTOGRAM_JOB
set -euo pipefail
cluster=$1
export FERRY_BIN=$2
job=$3
export FERRY_CLUSTER_DIR
FERRY_CLUSTER_DIR=$(mktemp -d /tmp/histogram-cluster.XXXXXX)
export UCX_NET_DEVICES=lo
trap '"$cluster" stop >/dev/null 2>&1 || true; rm -rf "$FERRY_CLUSTER_DIR"' EXIT
"$cluster" start 2
"$job" --nodes "$("$cluster" endpoints)"
