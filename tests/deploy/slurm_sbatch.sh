#!/usr/bin/env bash
# Runs deploy/slurm/ferry.sbatch on a real single-host Slurm (slurmctld +
# slurmd + a private munged, all under a scratch directory and on
# 127.0.0.1), checks that the ferry job succeeded on 3 nodes (in plain and
# with mutual TLS), then that a task whose node cannot start fails the batch
# job quickly. Tears every daemon and process it started down again, also
# on failure.
# Exit 77 (skip) without root or without slurm-wlm/munge.
#   FERRY_BIN                  the ferry binary (default: the repo build)
#   FERRY_SLURM_TEST_TLS       0: skip the TLS submission
#   FERRY_SLURM_TEST_NEGATIVE  0: skip the failing submission
set -uo pipefail

[ "$(id -u)" = 0 ] || { echo "slurm_sbatch: SKIP (needs root)"; exit 77; }
for t in slurmctld slurmd sbatch scontrol sinfo squeue scancel munged mungekey python3; do
  command -v "$t" >/dev/null || { echo "slurm_sbatch: SKIP ($t not installed)"; exit 77; }
done

root=$(cd "$(dirname "$0")/../.." && pwd)
ferry=${FERRY_BIN:-$root/build/apps/ferry}
# The binary may be replaced by a rebuild just now: wait a little for it.
for _ in $(seq 1 60); do [ -x "$ferry" ] && break; sleep 0.5; done
[ -x "$ferry" ] || { echo "slurm_sbatch: FAIL: no ferry binary at $ferry" >&2; exit 1; }

t0=$SECONDS
scratch=$(mktemp -d /tmp/ferry-slurm-test.XXXXXX)
# munged wants every directory above its socket searchable by all.
chmod 755 "$scratch"
# Every process started here carries this, so the teardown finds leftovers
# (slurmstepd, tasks, ferry nodes) by it and ends them by pid.
mark="FERRY_SLURM_TEST_SCRATCH=$scratch"
munge_pid=
jobs_submitted=()
status=1

log() { echo "slurm_sbatch: [$((SECONDS - t0))s] $*"; }

# Run a snapshot of the binary, so a rebuild during the test (the linker
# writes a new file) cannot pull it away mid-job: a hard link where the
# file system allows one, else a copy.
ln "$ferry" "$scratch/ferry" 2>/dev/null || cp "$ferry" "$scratch/ferry" || { echo "slurm_sbatch: FAIL: cannot copy $ferry" >&2; rm -rf "$scratch"; exit 1; }
ferry=$scratch/ferry

# Pids of live processes whose environment holds $mark.
marked_pids() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = $$ ] && continue
    grep -qxF "$mark" <<<"$(tr '\0' '\n' 2>/dev/null <"/proc/$p/environ")" && echo "$p"
  done
}

# TERM the given pids, wait up to $1 seconds, KILL what is left.
end_pids() {
  local wait_s=$1 p i left
  shift
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null
  for ((i = 0; i < wait_s * 10; i++)); do
    left=0
    for p in "$@"; do kill -0 "$p" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && return 0
    sleep 0.1
  done
  for p in "$@"; do
    kill -0 "$p" 2>/dev/null && { echo "slurm_sbatch: killing leftover pid $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null))" >&2; kill -KILL "$p" 2>/dev/null; }
  done
  return 0
}

teardown() {
  local rc=$? j pids i p
  trap - EXIT INT TERM
  [ "$status" = 0 ] || [ "$rc" != 0 ] || rc=1
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    for j in "${jobs_submitted[@]}"; do timeout 5 scancel "$j" >/dev/null 2>&1; done
    timeout 10 scontrol shutdown >/dev/null 2>&1
    pids=()
    for p in "$scratch"/slurmctld.pid "$scratch"/slurmd.pid; do
      [ -s "$p" ] && pids+=("$(cat "$p")")
    done
    # Give the daemons time to stop by themselves first.
    for ((i = 0; i < 100; i++)); do
      local alive=0
      for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      [ "$alive" = 0 ] && break
      sleep 0.1
    done
    end_pids 5 "${pids[@]}"
    log "slurm daemons stopped"
  fi
  # slurmstepd, tasks and ferry nodes that outlived the daemons.
  mapfile -t pids < <(marked_pids | grep -vx "${munge_pid:-x}")
  [ "${#pids[@]}" = 0 ] || log "ending leftovers: $(for p in "${pids[@]}"; do printf '%s(%s) ' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)"; done)"
  end_pids 10 "${pids[@]}"
  [ -z "$munge_pid" ] || end_pids 5 "$munge_pid"
  log "munged stopped"
  mapfile -t pids < <(marked_pids)
  if [ "${#pids[@]}" -gt 0 ]; then
    echo "slurm_sbatch: FAIL: processes left behind: ${pids[*]}" >&2
    rc=1
  fi
  if [ "$rc" != 0 ] && [ -d "$scratch" ]; then
    for f in "$scratch"/slurmctld.log "$scratch"/slurmd.log; do
      [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  rm -rf "$scratch"
  log "done, exit $rc"
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() { echo "slurm_sbatch: FAIL: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- munge: a private daemon with its own key and socket
mkdir -m 755 "$scratch/munge-run"
mkdir -m 700 "$scratch/munge"
mungekey -c -k "$scratch/munge/munge.key" || fail "mungekey"
sock=$scratch/munge-run/munge.socket
env "$mark" munged -S "$sock" --key-file="$scratch/munge/munge.key" \
  --pid-file="$scratch/munge-run/munged.pid" --log-file="$scratch/munge/munged.log" \
  --seed-file="$scratch/munge/munged.seed" || fail "munged did not start"
for _ in $(seq 1 50); do [ -s "$scratch/munge-run/munged.pid" ] && [ -S "$sock" ] && break; sleep 0.1; done
munge_pid=$(cat "$scratch/munge-run/munged.pid" 2>/dev/null)
[ -n "$munge_pid" ] || fail "munged wrote no pid file"

# --- slurm.conf: one node, localhost, everything under $scratch
ctld_port=$(free_port)
slurmd_port=$(free_port)
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$(free_port)
mkdir -p "$scratch/state" "$scratch/spool"
export SLURM_CONF=$scratch/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=ferrytest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$scratch/state
SlurmdSpoolDir=$scratch/spool
SlurmctldPidFile=$scratch/slurmctld.pid
SlurmdPidFile=$scratch/slurmd.pid
SlurmctldLogFile=$scratch/slurmctld.log
SlurmdLogFile=$scratch/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=20000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

env "$mark" slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
env "$mark" slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
state_now=
for _ in $(seq 1 150); do
  state_now=$(timeout 5 sinfo -h -n localhost -o %T 2>/dev/null)
  [ "$state_now" = idle ] && break
  sleep 0.2
done
[ "$state_now" = idle ] || fail "node not idle after 30s (sinfo: '${state_now}')"
log "slurm up (ctld :$ctld_port, slurmd :$slurmd_port)"

# What this ferry's node offers. (Read whole, not piped into `grep -q`:
# grep leaving early would kill ferry with SIGPIPE mid-write, and pipefail
# would read that as "not offered"; the ASan build writes slowly enough.)
node_help=$("$ferry" node --help 2>/dev/null)

# Submits ferry.sbatch with 3 tasks; sets job_id, job_state, job_exit, out.
#   submit NAME FERRY_BIN [FERRY_NODE_ARGS [more FERRY_JOB_ARGS]]
submit() {
  local name=$1 fbin=$2 node_args=${3:-} job_args=${4:-} i line
  mkdir -p "$scratch/$name"
  out=$scratch/$name/ferry.out
  # From the repo root, as a user would; the job's files go to $scratch.
  job_id=$(cd "$root" && env "$mark" FERRY_BIN="$fbin" UCX_NET_DEVICES=lo \
    FERRY_BIND=127.0.0.1 FERRY_ADVERTISE=127.0.0.1 \
    FERRY_SLURM_DIR="$scratch/$name/state" FERRY_START_TIMEOUT=30 FERRY_JOB_TIMEOUT=60 \
    FERRY_STOP_TIMEOUT=20 FERRY_NODE_ARGS="$node_args" \
    FERRY_JOB_ARGS="--mib 16 --summary-json $scratch/$name/summary.json $job_args" \
    timeout 20 sbatch --parsable -n 3 --output="$out" --chdir="$scratch/$name" \
    deploy/slurm/ferry.sbatch) || fail "sbatch ($name) failed"
  job_id=${job_id%%;*}
  jobs_submitted+=("$job_id")
  log "$name: submitted job $job_id"
  job_state='' job_exit=''
  for ((i = 0; i < 600; i++)); do
    line=$(timeout 5 scontrol show job -o "$job_id" 2>/dev/null)
    job_state=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
    job_exit=$(sed -n 's/.* ExitCode=\([0-9]*\):\([0-9]*\).*/\1:\2/p' <<<"$line")
    case "$job_state" in
      COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED) break ;;
    esac
    sleep 0.2
  done
  log "$name: job $job_id $job_state, exit $job_exit"
  echo "--- $out"
  cat "$out" 2>/dev/null
  echo "---"
}

# Every ferry node a job started has stopped (pid files: "HOST PID").
nodes_stopped() {
  local f pid
  for f in "$1"/*/node-*.pid; do
    [ -e "$f" ] || continue
    read -r _ pid <"$f"
    ! kill -0 "$pid" 2>/dev/null || { echo "slurm_sbatch: node pid $pid ($f) still runs" >&2; return 1; }
  done
}

# Checks that submission $1 succeeded on 3 nodes that all stopped cleanly.
check_ok() {
  local name=$1 st ports r
  [ "$job_state" = COMPLETED ] || fail "$name: job state $job_state (want COMPLETED)"
  [ "$job_exit" = 0:0 ] || fail "$name: job exit code $job_exit (want 0:0)"
  grep -q 'ferry.sbatch: exit 0' "$out" || fail "$name: no 'ferry.sbatch: exit 0' in the output"
  grep -q 'result *OK' "$out" || fail "$name: no 'result OK' summary in the output"
  python3 - "$scratch/$name/summary.json" <<'EOF' || fail "$name: summary check"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["ok"] is True, s
assert s["nodes"] == 3, s
assert s["shards"] > 0 and s["verified"] == s["shards"], s
assert s["failure"] == "", s
print("slurm_sbatch: summary ok: %d nodes, %d/%d shards verified, %d bytes moved"
      % (s["nodes"], s["verified"], s["shards"], s["bytes_moved"]))
EOF
  st=$(echo "$scratch/$name"/state/step-*)
  [ "$(cat "$st/done" 2>/dev/null)" = 0 ] || fail "$name: done marker: '$(cat "$st/done" 2>/dev/null)'"
  ports=$(cat "$st"/node-*.endpoint 2>/dev/null | awk '{print $2}' | sort -u | wc -l)
  [ "$ports" = 3 ] || fail "$name: $ports distinct node ports published (want 3)"
  for r in 0 1 2; do
    grep -q 'stopped' "$st/node-$r.log" || fail "$name: node $r did not log a clean stop"
  done
  nodes_stopped "$scratch/$name/state" || fail "$name: ferry nodes left running"
}

# --- 1: the job runs on 3 nodes and succeeds
submit ok "$ferry"
check_ok ok

# --- 2: the same with mutual TLS, the options passed through FERRY_NODE_ARGS
# (%h: each node's advertised host names its certificate) and FERRY_JOB_ARGS
if [ "${FERRY_SLURM_TEST_TLS:-1}" != 0 ] && command -v openssl >/dev/null \
    && grep -q -- '--tls-ca' <<<"$node_help"; then
  tls=$scratch/tls
  mkdir -m 700 "$tls"
  (
    cd "$tls" || exit 1
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 \
      -subj /CN=ferry-slurm-test-ca
    for n in 127.0.0.1 job; do
      openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "/CN=$n"
      printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$n.ext"
      openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out "$n.pem" -days 1 -extfile "$n.ext"
    done
  ) >"$scratch/openssl.log" 2>&1 || { cat "$scratch/openssl.log" >&2; fail "making test certificates"; }
  submit tls "$ferry" "--tls-ca $tls/ca.pem --tls-cert $tls/%h.pem --tls-key $tls/%h.key" \
    "--tls-ca $tls/ca.pem --tls-cert $tls/job.pem --tls-key $tls/job.key"
  check_ok tls
else
  log "tls: skipped (no openssl, no --tls-ca in $ferry, or FERRY_SLURM_TEST_TLS=0)"
fi

# --- 3: one task's node cannot start: the batch job fails, soon
if [ "${FERRY_SLURM_TEST_NEGATIVE:-1}" != 0 ]; then
  cat >"$scratch/broken-ferry" <<EOF
#!/bin/sh
if [ "\$1" = node ] && [ "\${SLURM_PROCID:-}" = 2 ]; then
  echo "broken-ferry: task 2 refuses to start a node" >&2
  exit 1
fi
exec "$ferry" "\$@"
EOF
  chmod +x "$scratch/broken-ferry"
  t1=$SECONDS
  submit broken "$scratch/broken-ferry"
  [ "$job_state" = FAILED ] || fail "broken: job state $job_state (want FAILED)"
  [ "${job_exit%%:*}" != 0 ] || fail "broken: job exit code $job_exit (want non-zero)"
  [ $((SECONDS - t1)) -lt 25 ] || fail "broken: took $((SECONDS - t1))s (the start timeout is 30s: no early stop)"
  grep -q 'refuses to start' "$out" || fail "broken: the failing node's log is not in the output"
  [ ! -e "$scratch/broken/summary.json" ] || fail "broken: the job ran anyway"
  nodes_stopped "$scratch/broken/state" || fail "broken: ferry nodes left running"
fi

status=0
log "PASS"
