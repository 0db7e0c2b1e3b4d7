#!/usr/bin/env bash
# Three ferry "hosts" in network namespaces: runs the example job across them,
# SIGKILLs host 3 and shows that hosts 1 and 2 drop it from their peers. The
# cluster is removed on every exit (failure and Ctrl-C too). Needs root.
# Arguments go to `ferry job` (e.g. --mib 64). FERRY_NETNS_DROP_TIMEOUT_S
# bounds the wait for the drop (default 10).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
drop_s=${FERRY_NETNS_DROP_TIMEOUT_S:-10}

[ "$(id -u)" -eq 0 ] || { echo "run.sh: needs root (network namespaces)" >&2; exit 1; }
own_dir=
if [ -z "${FERRY_NETNS_DIR:-}" ]; then
  FERRY_NETNS_DIR=$(mktemp -d /tmp/ferry-netns-XXXXXX); own_dir=1
fi
export FERRY_NETNS_DIR
export FERRY_NETNS_OWNER=$$   # if this script dies unannounced, the next `up` cleans up
finish() {
  local rc=$?
  "$cluster" down >/dev/null || { echo "run.sh: down failed; try: $cluster down --all" >&2; rc=1; }
  if [ "$rc" = 0 ] && [ -n "$own_dir" ]; then rm -rf "$FERRY_NETNS_DIR"
  else echo "run.sh: node logs in $FERRY_NETNS_DIR" >&2; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM HUP

echo "== up 3"
"$cluster" up 3
echo "== job"
"$cluster" job "$@"
echo "== peers before"
for i in 1 2; do echo "host $i knows:"; "$cluster" peers "$i" | sed 's/^/  /'; done

addr3=$("$cluster" endpoints | cut -d, -f3)
knew=$("$cluster" peers 2 | grep -c " $addr3\$" || true)
echo "== kill host 3 ($addr3)"
"$cluster" kill 3
t0=$(date +%s%N)
for i in 1 2; do
  while grep -q " $addr3\$" <<<"$("$cluster" peers "$i")"; do
    if [ $(( ($(date +%s%N) - t0) / 1000000000 )) -ge "$drop_s" ]; then
      echo "run.sh: host $i still lists host 3 after ${drop_s} s" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "host $i no longer lists host 3 ($(( ($(date +%s%N) - t0) / 1000000 )) ms after the kill); it knows:"
  "$cluster" peers "$i" | sed 's/^/  /'
done
[ "$knew" != 0 ] || echo "(host 2 never knew host 3: without --join, node 2 only connects to node 1)"
echo "== down"
