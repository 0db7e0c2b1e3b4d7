#!/usr/bin/env bash
# deploy/netns/cluster.sh end to end: three ferry nodes in their own network
# namespaces, the example job across them (UCX over the veths), membership seen
# through `ferry stat --json`, a SIGKILLed host and a cut link dropped within
# their bounds, and nothing left behind by `down`.
# Exit 0: passed, 1: failed, 77: skipped (not root, or no usable `ip netns`).
# FERRY_BIN picks the binary; FERRY_NETNS_NODE_ARGS adds node options (a long
# --connection-timeout-ms makes the cut check fail, as it should).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cluster=$root/deploy/netns/cluster.sh
ferry=${FERRY_BIN:-$root/build/apps/ferry}
drop_s=${NETNS_TEST_DROP_S:-10}     # kill and cut: dropped within this many seconds
know_s=${NETNS_TEST_KNOW_S:-10}     # membership: learned within this many seconds

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v jq >/dev/null || skip "no jq"
# A unique prefix per run; the probe namespace is named like one of this run's,
# so a leftover of it is removed by `down` as well.
prefix=fnxt$(printf '%06d' $(($$ % 1000000)))
ip netns add "$prefix-0" 2>/dev/null || skip "ip netns add is not permitted here"
ip netns del "$prefix-0"

for _ in $(seq 1 30); do [ -x "$ferry" ] && break; sleep 1; done   # mid-rebuild?
[ -x "$ferry" ] || { echo "FAIL: $ferry not built"; exit 1; }

export FERRY_BIN=$ferry FERRY_NETNS_PREFIX=$prefix FERRY_NETNS_OWNER=$$
# State dirs of earlier runs killed before their trap ran (a run lasts < 1 min);
# their namespaces and nodes go in `up`'s sweep (their owner is gone).
find /tmp -maxdepth 1 -name 'fnx-test-*' -type d -mmin +10 -exec rm -rf {} + 2>/dev/null
FERRY_NETNS_DIR=$(mktemp -d /tmp/fnx-test-XXXXXX); export FERRY_NETNS_DIR
export FERRY_NETNS_JOB_TIMEOUT_S=60 FERRY_NETNS_READY_TIMEOUT_S=20
failed=0
t_start=$(date +%s%N)
ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
fail() { echo "FAIL: $*"; failed=1; }

leftovers() {
  { ip netns list 2>/dev/null | awk '{print $1}'
    ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1; } |
    grep -E "^$prefix(-[0-9]+|br|[hn][0-9]+)$" || true
}
finish() {
  local rc=$? d
  trap - EXIT INT TERM HUP
  [ "$rc" = 0 ] || failed=1
  "$cluster" down >/dev/null 2>&1 || true
  d=$(leftovers)
  [ -z "$d" ] || { echo "FAIL: left behind after down:" $d; failed=1; "$cluster" down >/dev/null 2>&1; }
  if [ "$failed" != 0 ]; then
    for f in "$FERRY_NETNS_DIR"/node-*.log; do
      [ -e "$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$f"; }
    done
  fi
  rm -rf "$FERRY_NETNS_DIR"
  echo "total $(ms "$t_start") ms"
  if [ "$failed" = 0 ]; then echo PASS; exit 0; else echo FAIL; exit 1; fi
}
trap finish EXIT
trap 'echo "interrupted"; failed=1; exit 130' INT TERM HUP

worker() { cut -d' ' -f3 "$FERRY_NETNS_DIR/node-$1.ready"; }
ep() { echo "$net.$((10 + $1)):$(cut -d' ' -f1 "$FERRY_NETNS_DIR/node-$1.ready")"; }
# Does host $1 list host $2 (its worker id at its address)? 0 yes, 1 no,
# 2 no answer (that never counts as "no").
lists() {
  local got
  got=$("$cluster" peers "$1" 2>/dev/null) || return 2
  grep -qx "$(worker "$2") $(ep "$2")" <<<"$got"
}
# Waits up to $3 s until host $1 lists host $2 ($4 = yes) or no longer does ($4 = no).
await() {
  local a=$1 b=$2 bound=$3 want=$4 t0 r
  t0=$(date +%s%N)
  while :; do
    lists "$a" "$b"; r=$?
    [ "$r" = 0 ] && [ "$want" = yes ] && break
    [ "$r" = 1 ] && [ "$want" = no ] && break
    if [ $(( ($(date +%s%N) - t0) / 1000000000 )) -ge "$bound" ]; then
      fail "host $a: listing host $b is still not '$want' after ${bound} s; it knows:"
      "$cluster" peers "$a" 2>&1 | sed "s/^/    /" || echo "    (no answer from host $a)"
      return 1
    fi
    sleep 0.1
  done
  echo "ok: host $a lists host $b: $want ($(ms "$t0") ms)"
}

# A /24 of 10.213 that nothing on this machine uses (`up` checks it under its
# lock; a concurrent run may take the one picked here first: then the next).
net=
for x in 0 $(seq 100 109); do
  [ -z "$(ip -4 -o addr show to "10.213.$x.0/24")" ] || continue
  t=$(date +%s%N)
  if out=$(FERRY_NETNS_NET=10.213.$x "$cluster" up 3 2>&1); then net=10.213.$x; break; fi
  grep -q 'is already in use' <<<"$out" && continue
  echo "$out"; echo "FAIL: up 3"; exit 1
done
[ -n "$net" ] || { echo "FAIL: no free 10.213.X.0/24 for up"; exit 1; }
echo "$out"
echo "ok: up 3 ($(ms "$t") ms, prefix $prefix, net $net.0/24)"
join=no   # what up used: --join (every node learns all members) or --peer
[ "$(cat "$FERRY_NETNS_DIR/join")" = --join ] && join=yes

t=$(date +%s%N)
if out=$("$cluster" job --mib 16 2>&1); then
  echo "ok: job --mib 16 ($(ms "$t") ms): $(grep -E 'path decisions' <<<"$out" | sed 's/^ *//')"
else
  fail "job --mib 16 exited non-zero"; echo "$out" | tail -n 20
fi

t=$(date +%s%N)   # the same from inside namespace 1 (client and node 1 share an address)
if out=$(FERRY_NETNS_JOB_FROM=1 "$cluster" job --mib 4 2>&1); then
  echo "ok: job --mib 4 from namespace 1 ($(ms "$t") ms)"
else
  fail "job --mib 4 from namespace 1 exited non-zero"; echo "$out" | tail -n 20
fi

await 1 2 "$know_s" yes
await 1 3 "$know_s" yes
if [ "$join" = yes ]; then
  await 2 3 "$know_s" yes
  await 3 2 "$know_s" yes
else
  echo "note: this ferry has no --join (--peer): node 2 knowing node 3 is not checked"
fi

"$cluster" kill 3 >/dev/null || fail "kill 3"
await 1 3 "$drop_s" no
await 2 3 "$drop_s" no

"$cluster" cut 2 >/dev/null || fail "cut 2"
await 1 2 "$drop_s" no

# A client dialling the cut host gives up within its request timeout (CAF's
# own connect would wait out the kernel's SYN retries, minutes).
t=$(date +%s%N)
UCX_NET_DEVICES="${prefix}br" timeout -k 2 20 "$FERRY_BIN" stat --ucx 0 \
  --request-timeout-ms 2000 --node "$(ep 2)" >/dev/null 2>&1
rc=$?
[ "$rc" -ne 124 ] || fail "ferry stat to the cut host 2 hung (killed after 20 s)"
[ "$rc" -ne 0 ] || fail "ferry stat to the cut host 2 succeeded"
echo "ok: ferry stat to the cut host 2 failed by itself in $(ms "$t") ms"

pids=$(cat "$FERRY_NETNS_DIR"/node-*.pid)
t=$(date +%s%N)
"$cluster" down || fail "down exited non-zero"
d=$(leftovers)
if [ -z "$d" ]; then echo "ok: down ($(ms "$t") ms), nothing with $prefix left"; else fail "left behind:" $d; fi
for p in $pids; do
  st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null || true)   # Z: exited, not yet reaped
  case "$st" in ""|Z|X) ;; *) fail "node pid $p still runs after down (state $st)" ;; esac
done
