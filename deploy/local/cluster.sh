#!/usr/bin/env bash
# A local N-node ferry cluster on 127.0.0.1, for trying things by hand.
#   deploy/local/cluster.sh start [N]   start N nodes (default 3), print endpoints
#   deploy/local/cluster.sh endpoints   print HOST:PORT,HOST:PORT,...
#   deploy/local/cluster.sh stat        ferry stat of every node
#   deploy/local/cluster.sh stop        stop every node cleanly (SIGTERM)
# State (pids, ports, logs) lives in $FERRY_CLUSTER_DIR (default /tmp/ferry-cluster).
set -euo pipefail
# Everything stays on loopback, UCX included.
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
root=$(cd "$(dirname "$0")/../.." && pwd)
ferry=${FERRY_BIN:-$root/build/apps/ferry}
# Installed (share/ferry/deploy): the packaged `ferry` on PATH.
if [ -z "${FERRY_BIN:-}" ] && [ ! -x "$ferry" ] && command -v ferry >/dev/null; then
  ferry=$(command -v ferry)
fi
dir=${FERRY_CLUSTER_DIR:-/tmp/ferry-cluster}

endpoints() {
  local eps=()
  for f in "$dir"/node-*.ready; do
    [ -e "$f" ] || continue
    eps+=("127.0.0.1:$(cut -d' ' -f1 "$f")")
  done
  (IFS=,; echo "${eps[*]}")
}

start() {
  local n=${1:-3}
  if [ -n "$(ls "$dir"/node-*.pid 2>/dev/null)" ]; then
    echo "cluster.sh: a cluster already runs in $dir (stop it first)" >&2
    exit 1
  fi
  [ -x "$ferry" ] || { echo "cluster.sh: $ferry not built (run deploy/build.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  for i in $(seq 1 "$n"); do
    "$ferry" node --port 0 --metrics-port 0 --ready-file "$dir/node-$i.ready" \
      >"$dir/node-$i.log" 2>&1 &
    echo $! >"$dir/node-$i.pid"
  done
  for i in $(seq 1 "$n"); do
    for _ in $(seq 1 300); do
      [ -s "$dir/node-$i.ready" ] && break
      if ! kill -0 "$(cat "$dir/node-$i.pid")" 2>/dev/null; then
        echo "cluster.sh: node $i failed to start:" >&2
        cat "$dir/node-$i.log" >&2
        stop
        exit 1
      fi
      sleep 0.1
    done
    [ -s "$dir/node-$i.ready" ] || { echo "cluster.sh: node $i did not start" >&2; stop; exit 1; }
    read -r port metrics _ <"$dir/node-$i.ready"
    echo "node $i: 127.0.0.1:$port (metrics http://127.0.0.1:$metrics/metrics, log $dir/node-$i.log)"
  done
}

stop() {
  local status=0
  for f in "$dir"/node-*.pid; do
    [ -e "$f" ] || continue
    local pid
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then
        echo "cluster.sh: node pid $pid ignored SIGTERM; killing it" >&2
        kill -KILL "$pid" || true
        status=1
      fi
    fi
    rm -f "$f" "${f%.pid}.ready"
  done
  return $status
}

case "${1:-}" in
  start) start "${2:-3}" ;;
  endpoints) endpoints ;;
  stat)
    IFS=, read -ra eps <<<"$(endpoints)"
    for ep in "${eps[@]}"; do "$ferry" stat --node "$ep"; done ;;
  stop) stop ;;
  *) sed -n '2,7p' "$0" >&2; exit 2 ;;
esac
