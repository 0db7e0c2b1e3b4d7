#!/usr/bin/env bash
# Quick start, part one: installs what is missing, builds the `ferry` binary
# and the libraries under it (not the tests: deploy/test.sh builds those),
# then runs the example distributed job on a local 3-node cluster and stops
# the cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
started=$SECONDS
"$root/deploy/install-deps.sh" --job
echo "== building ferry (the binary and its libraries only)"
# The tests and `ferry bench` are left out here; deploy/test.sh turns them on
# in the same build directory and builds only what is left.
FERRY_TARGETS=ferry "$root/deploy/build.sh" "$root/build" -DFERRY_BUILD_TESTS=OFF -DFERRY_WITH_BENCH=OFF
echo "== built in $((SECONDS - started)) s; deploy/test.sh builds the tests, the benchmark" \
     "and the header checks on top (about 5 more minutes on 2 cores) and runs them"
echo "== running the example job on a local 3-node cluster"
exec "$root/deploy/local/run-job.sh" "$@"
