#!/usr/bin/env bash
# K ferry "hosts" on one machine: each node in its own network namespace with
# its own address, joined through a bridge. Needs root and iproute2.
#   deploy/netns/cluster.sh up [K]       K namespaces + nodes (default 3); node 2..K join node 1
#   deploy/netns/cluster.sh endpoints    print ADDR:PORT,ADDR:PORT,...
#   deploy/netns/cluster.sh job [ARGS]   ferry job across all nodes (ARGS go to ferry job)
#   deploy/netns/cluster.sh stat [I]     ferry stat of every node (or of host I)
#   deploy/netns/cluster.sh peers I      host I's peers, one "WORKER_ID HOST:PORT" a line
#   deploy/netns/cluster.sh kill I       SIGKILL host I's node
#   deploy/netns/cluster.sh cut I        take host I's link down (its node hangs for the others)
#   deploy/netns/cluster.sh uncut I      bring host I's link back up
#   deploy/netns/cluster.sh down         remove this cluster (idempotent)
#   deploy/netns/cluster.sh down --all   remove every run's namespaces, links and nodes (fnx prefix)
# Environment:
#   FERRY_NETNS_DIR     state dir: pids, ready files, logs (default /tmp/ferry-netns)
#   FERRY_NETNS_PREFIX  name prefix of this run (default fnx<pid of up>); must start with fnx
#   FERRY_NETNS_NET     first three octets of the /24 (default 10.213.0): the bridge gets
#                       .1, host I gets .(10+I); the /24 must be unused on this machine
#   FERRY_NETNS_OWNER   pid of a process owning the run: once it is gone, the next `up`
#                       removes the run's leftovers
#   FERRY_NETNS_UCX_TLS UCX_TLS of every node and client (default tcp: data over the veths)
#   FERRY_NETNS_JOB_FROM root (default: the root namespace, over the bridge) or 1 (namespace 1)
#   FERRY_NETNS_NODE_ARGS extra `ferry node` options; FERRY_BIN the binary
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
ferry=${FERRY_BIN:-$root/build/apps/ferry}
if [ -z "${FERRY_BIN:-}" ] && [ ! -x "$ferry" ] && command -v ferry >/dev/null; then
  ferry=$(command -v ferry)
fi
dir=${FERRY_NETNS_DIR:-/tmp/ferry-netns}
base=fnx                          # every name this script creates starts with this
reg=/run/ferry-netns              # one file per live run: its state dir and owner
lock=/run/ferry-netns.lock
port=${FERRY_NETNS_PORT:-7400}
mport=${FERRY_NETNS_METRICS_PORT:-9400}
ucx_tls=${FERRY_NETNS_UCX_TLS:-tcp}
ready_s=${FERRY_NETNS_READY_TIMEOUT_S:-60}
job_s=${FERRY_NETNS_JOB_TIMEOUT_S:-600}

say() { echo "cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }

need_root() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
  command -v ip >/dev/null || die "needs iproute2 (ip)"
}

# The ferry binary may be briefly missing while it is rebuilt.
need_ferry() {
  local i
  for i in $(seq 1 60); do
    [ -x "$ferry" ] && return 0
    [ "$i" -eq 1 ] && say "waiting for $ferry (up to 60 s)"
    sleep 1
  done
  die "$ferry not built (run deploy/build.sh)"
}

# --join when this ferry has it, else the older --peer. (A binary being rebuilt
# may fail to run for a moment: ask again, a few times.)
join_flag() {
  local help _
  for _ in $(seq 1 10); do
    if help=$("$ferry" node --help 2>/dev/null); then
      if grep -q -- '--join' <<<"$help"; then echo --join; else echo --peer; fi
      return 0
    fi
    sleep 1
  done
  die "$ferry node --help fails"
}

# State of the run in $dir: run prefix, net, K.
load() {
  run=$(cat "$dir/prefix" 2>/dev/null || true)
  net=$(cat "$dir/net" 2>/dev/null || echo "${FERRY_NETNS_NET:-10.213.0}")
  k=$(cat "$dir/k" 2>/dev/null || echo 0)
}
need_run() { load; [ -n "$run" ] || die "no cluster in $dir (run: $0 up)"; }
ns()   { echo "$run-$1"; }         # namespace of host I
hveth() { echo "${run}h$1"; }      # host (bridge) end of host I's veth
nveth() { echo "${run}n$1"; }      # namespace end
addr() { echo "$net.$((10 + $1))"; }
check_host() {
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$k" ] || die "no host '$1' (1..$k)"
}

# Alive and not a zombie waiting for its parent (init here) to reap it.
running() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# Start time of a pid (field 22 of /proc/PID/stat): tells a reused pid apart.
starttime() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null || true; }

# Processes in a namespace, ended: SIGTERM, up to $2 s, then SIGKILL (bounded too).
end_ns_procs() {
  local n=$1 wait_s=$2 pids i
  pids=$(ip netns pids "$n" 2>/dev/null || true)
  [ -n "$pids" ] || return 0
  kill -TERM $pids 2>/dev/null || true
  for i in $(seq 1 $((wait_s * 10))); do
    pids=$(ip netns pids "$n" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    sleep 0.1
  done
  say "$n: pids $pids ignored SIGTERM for ${wait_s} s; killing them"
  kill -KILL $pids 2>/dev/null || true
  for i in $(seq 1 50); do
    [ -n "$(ip netns pids "$n" 2>/dev/null || true)" ] || return 0
    sleep 0.1
  done
  say "$n: pids $(ip netns pids "$n" 2>/dev/null | tr '\n' ' ')survived SIGKILL"
  return 1
}

# Names of a run's namespaces and links (a regex), or of every run's.
ns_re()   { if [ "$1" = "$base" ]; then echo "^${base}[a-z0-9]+-[0-9]+\$"; else echo "^$1-[0-9]+\$"; fi; }
link_re() { if [ "$1" = "$base" ]; then echo "^${base}[a-z0-9]+(br|[hn][0-9]+)\$"; else echo "^$1(br|[hn][0-9]+)\$"; fi; }
ns_list()   { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "$(ns_re "$1")" || true; }
link_list() { ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "$(link_re "$1")" || true; }

# Removes the namespaces and links of run $1 (or of every run, given the base
# prefix), and the processes inside those namespaces. Bounded: ~10 s a namespace.
remove_prefix() {
  local p=$1 n l status=0
  for n in $(ns_list "$p"); do
    end_ns_procs "$n" 10 || status=1
    ip netns del "$n" 2>/dev/null || { say "could not delete namespace $n"; status=1; }
  done
  # Host ends of veths go with their namespace's end; what is left, and the bridges:
  for l in $(link_list "$p"); do ip link del "$l" 2>/dev/null || true; done
  for l in $(link_list "$p"); do say "could not delete link $l"; status=1; done
  return $status
}

# Leftovers of earlier runs that nobody owns any more: the registry entry's owner is
# gone, or none of the run's namespaces holds a process (nodes dead; `up` holds the
# lock while it creates, so no run is caught half made). Called under the lock.
sweep_stale() {
  local runs r owner pid t live n st
  runs=$( { ns_list "$base" | sed -E 's/-[0-9]+$//'
            link_list "$base" | sed -E 's/(br|[hn][0-9]+)$//'
            ls "$reg" 2>/dev/null || true; } | { grep -E "^${base}[a-z0-9]+$" || true; } | sort -u)
  for r in $runs; do
    owner=""
    [ -f "$reg/$r" ] && owner=$(sed -n 's/^owner=//p' "$reg/$r")
    live=0
    if [ -n "$owner" ]; then
      read -r pid t <<<"$owner"
      [ -n "$pid" ] && [ "$(starttime "$pid")" = "$t" ] && live=1
    else
      for n in $(ns_list "$r"); do
        [ -n "$(ip netns pids "$n" 2>/dev/null || true)" ] && live=1
      done
    fi
    [ "$live" = 1 ] && continue
    say "removing leftovers of an earlier run: $r"
    remove_prefix "$r" || true
    st=$(sed -n 's/^dir=//p' "$reg/$r" 2>/dev/null || true)   # its state files; logs stay
    if [ -n "$st" ] && [ "$(cat "$st/prefix" 2>/dev/null)" = "$r" ]; then
      rm -f "$st"/prefix "$st"/k "$st"/net "$st"/join "$st"/node-*.pid "$st"/node-*.ready
    fi
    rm -f "$reg/$r"
  done
}

# The lock (fd 9) serialises `up` and `down --all`; nodes do not inherit it.
with_lock() {
  local wait_s=${1:-60}
  mkdir -p "$(dirname "$lock")"
  exec 9>"$lock"
  flock -w "$wait_s" 9 && return 0
  [ "${2:-}" = anyway ] || die "another cluster.sh held $lock for $wait_s s"
  say "another cluster.sh holds $lock; going on without it"
}

# One address for the run's /24 only: refuse a net that is in use here.
check_net() {
  [[ "$net" =~ ^10\.213\.[0-9]{1,3}$ ]] || die "FERRY_NETNS_NET must be 10.213.X (got $net)"
  if [ -n "$(ip -4 -o addr show to "$net.0/24" 2>/dev/null)" ] || \
     [ -n "$(ip -4 route show to match "$net.1" 2>/dev/null | grep -v '^default')" ]; then
    die "$net.0/24 is already in use on this machine (set FERRY_NETNS_NET=10.213.X)"
  fi
}

node_env() {  # UCX sees only the namespace's veth (and lo is up for the node's own address)
  echo "UCX_NET_DEVICES=$(nveth "$1") UCX_TLS=$ucx_tls"
}

up() {
  local want=${1:-3} i pid jf
  need_root
  [[ "$want" =~ ^[0-9]+$ ]] && [ "$want" -ge 1 ] && [ "$want" -le 99 ] || die "K must be 1..99"
  ip netns list >/dev/null 2>&1 || die "ip netns is not usable here"
  need_ferry
  with_lock
  sweep_stale
  load
  if [ -n "$run" ]; then
    if [ -n "$(ns_list "$run")" ]; then
      die "a cluster ($run) already runs in $dir (run: $0 down)"
    fi
    rm -f "$dir"/prefix "$dir"/k "$dir"/net "$dir"/join "$dir"/node-*.pid "$dir"/node-*.ready
  fi
  run=${FERRY_NETNS_PREFIX:-$base$$}
  [[ "$run" =~ ^${base}[a-z0-9]{1,7}$ ]] && [[ ! "$run" =~ (br|[hn][0-9]+)$ ]] || die "FERRY_NETNS_PREFIX must be $base + 1..7 of [a-z0-9], not ending in br, hN or nN (got $run)"
  net=${FERRY_NETNS_NET:-10.213.0}
  k=$want
  check_net
  jf=$(join_flag)
  mkdir -p "$dir" "$reg"
  local owner_line=""
  if [ -n "${FERRY_NETNS_OWNER:-}" ]; then
    owner_line="owner=$FERRY_NETNS_OWNER $(starttime "$FERRY_NETNS_OWNER")"
  fi
  printf 'dir=%s\n%s\n' "$dir" "$owner_line" >"$reg/$run"
  echo "$run" >"$dir/prefix"; echo "$net" >"$dir/net"; echo "$k" >"$dir/k"; echo "$jf" >"$dir/join"
  # From here on a failure (or Ctrl-C) removes what was made.
  up_done=0
  trap 'if [ "$up_done" != 1 ]; then say "up did not finish; removing $run"; down_run || true; fi' EXIT
  trap 'exit 130' INT TERM HUP

  ip link add "${run}br" type bridge
  ip link set "${run}br" type bridge stp_state 0 forward_delay 0 2>/dev/null || true
  ip addr add "$net.1/24" dev "${run}br"
  ip link set "${run}br" up
  for i in $(seq 1 "$k"); do
    ip netns add "$(ns "$i")"
    ip link add "$(hveth "$i")" type veth peer name "$(nveth "$i")" netns "$(ns "$i")"
    ip link set "$(hveth "$i")" master "${run}br"
    ip link set "$(hveth "$i")" up
    ip -n "$(ns "$i")" link set lo up
    ip -n "$(ns "$i")" addr add "$(addr "$i")/24" dev "$(nveth "$i")"
    ip -n "$(ns "$i")" link set "$(nveth "$i")" up
  done

  for i in $(seq 1 "$k"); do
    local extra=()
    [ "$i" -gt 1 ] && extra=("$jf" "$(addr 1):$port")
    rm -f "$dir/node-$i.ready"
    # setsid (own session: a Ctrl-C meant for a later command leaves the nodes
    # alone), `ip netns exec` and env all exec in place: $! is the node's pid.
    # shellcheck disable=SC2046
    setsid ip netns exec "$(ns "$i")" env $(node_env "$i") \
      "$ferry" node --port "$port" --bind "$(addr "$i")" --advertise "$(addr "$i")" \
      --metrics-port "$mport" --ready-file "$dir/node-$i.ready" "${extra[@]}" \
      ${FERRY_NETNS_NODE_ARGS:-} </dev/null >"$dir/node-$i.log" 2>&1 9>&- &
    echo $! >"$dir/node-$i.pid"
    [ "$i" -eq 1 ] && wait_ready 1   # the others join node 1
  done
  for i in $(seq 2 "$k"); do wait_ready "$i"; done
  # Joiners reach node 1 in the background: wait until node 1 knows all of them
  # (with --join, until every node knows every other; --peer links node 1 only).
  local t0=$SECONDS n=0 waitfor=1
  [ "$jf" = --join ] && waitfor=$(seq 1 "$k")
  for i in $waitfor; do
    while :; do
      n=$(peers "$i" 2>/dev/null | wc -l || true)
      [ "$n" -ge $((k - 1)) ] && break
      [ $((SECONDS - t0)) -lt "$ready_s" ] || break
      sleep 0.2
    done
    [ "$n" -ge $((k - 1)) ] || say "warning: node $i knows $n of $((k - 1)) peers after ${ready_s} s"
  done
  for i in $(seq 1 "$k"); do
    read -r p m _ <"$dir/node-$i.ready"
    echo "host $i: $(addr "$i"):$p (namespace $(ns "$i"), metrics http://$(addr "$i"):$m/metrics, log $dir/node-$i.log)"
  done
  echo "join flag: $jf; UCX_TLS=$ucx_tls; UCX_NET_DEVICES=<the namespace's veth, ${run}nI>"
  up_done=1
  trap - EXIT INT TERM HUP
}

wait_ready() {
  local i=$1 pid
  pid=$(cat "$dir/node-$i.pid")
  for _ in $(seq 1 $((ready_s * 10))); do
    [ -s "$dir/node-$i.ready" ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      say "node $i failed to start:"; cat "$dir/node-$i.log" >&2; return 1
    fi
    sleep 0.1
  done
  say "node $i not ready after ${ready_s} s:"; cat "$dir/node-$i.log" >&2; return 1
}

endpoints() {
  local eps=() i p
  for i in $(seq 1 "$k"); do
    [ -s "$dir/node-$i.ready" ] || continue
    read -r p _ <"$dir/node-$i.ready"
    eps+=("$(addr "$i"):$p")
  done
  (IFS=,; echo "${eps[*]}")
}

# A client (stat, job) from the root namespace reaches the hosts over the bridge;
# FROM=I runs it inside host I's namespace instead.
client() {
  local from=$1; shift
  if [ "$from" = root ]; then
    UCX_NET_DEVICES="${run}br" UCX_TLS=$ucx_tls "$@"
  else
    # shellcheck disable=SC2046
    ip netns exec "$(ns "$from")" env $(node_env "$from") "$@"
  fi
}

stat_json() {  # host I's `ferry stat --json`, bounded
  local i=$1 p
  read -r p _ <"$dir/node-$i.ready"
  client root timeout --foreground -k 2 8 "$ferry" stat --ucx 0 --request-timeout-ms 3000 \
    --node "$(addr "$i"):$p" --json
}

peers() {  # "WORKER_ID HOST:PORT" for each peer host I knows (clients, port 0, left out)
  # jq 1.6 reads numbers as doubles: quote the 64-bit ids first to keep every digit.
  stat_json "$1" | sed -E 's/"(worker_id|incarnation)": *([0-9]+)/"\1": "\2"/g' |
    jq -r '.peers[] | select(.port != 0) | "\(.worker_id) \(.host):\(.port)"'
}

down_run() {
  local status=0 f pid
  [ -n "${run:-}" ] || return 0
  for f in "$dir"/node-*.pid; do   # nodes first, cleanly, while their links are up
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$dir/node-"; then
      kill -TERM "$pid" 2>/dev/null || true
    fi
  done
  remove_prefix "$run" || status=1
  for f in "$dir"/node-*.pid; do   # a node past its namespace may still be exiting
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 50); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then say "node pid $pid still runs"; status=1; fi
  done
  rm -f "$reg/$run" "$dir"/prefix "$dir"/k "$dir"/net "$dir"/join "$dir"/node-*.pid "$dir"/node-*.ready
  return $status
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  up) up "${1:-3}" ;;
  endpoints) need_run; endpoints ;;
  job)
    need_root; need_run; need_ferry
    from=${FERRY_NETNS_JOB_FROM:-root}
    client "$from" timeout --foreground -k 5 "$job_s" "$ferry" job --nodes "$(endpoints)" "$@" ;;
  stat)
    need_root; need_run
    if [ $# -gt 0 ]; then check_host "$1"; hosts=$1; else hosts=$(seq 1 "$k"); fi
    for i in $hosts; do
      read -r p _ <"$dir/node-$i.ready"
      echo "== host $i ($(addr "$i"):$p)"
      client root timeout --foreground -k 2 8 "$ferry" stat --ucx 0 --request-timeout-ms 3000 \
        --node "$(addr "$i"):$p" || echo "(no answer)"
    done ;;
  stat-json) need_root; need_run; check_host "${1:-}"; stat_json "$1" ;;
  peers) need_root; need_run; check_host "${1:-}"; peers "$1" ;;
  kill)
    need_root; need_run; check_host "${1:-}"
    pid=$(cat "$dir/node-$1.pid")
    [ "$(ip netns identify "$pid" 2>/dev/null)" = "$(ns "$1")" ] || die "host $1's node (pid $pid) is not running"
    kill -KILL "$pid"; echo "host $1: node pid $pid killed" ;;
  cut) need_root; need_run; check_host "${1:-}"; ip link set "$(hveth "$1")" down; echo "host $1: link cut" ;;
  uncut) need_root; need_run; check_host "${1:-}"; ip link set "$(hveth "$1")" up; echo "host $1: link up" ;;
  down)
    need_root
    if [ "${1:-}" = --all ]; then
      with_lock 10 anyway
      remove_prefix "$base"; rm -f "$reg"/"$base"*
      load; [ -z "$run" ] || down_run
    else
      load
      [ -n "$run" ] || run=${FERRY_NETNS_PREFIX:-}   # state lost: by its prefix
      if [ -z "$run" ]; then echo "cluster.sh: no cluster in $dir"; exit 0; fi
      down_run
    fi ;;
  *) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0" >&2; exit 2 ;;
esac
