#!/usr/bin/env bash
# One task of a ferry Slurm job step: `srun` runs one of these per ferry node
# (deploy/slurm/ferry.sbatch does that). Every task starts a `ferry node` on
# its host and publishes "HOST PORT METRICS_PORT WORKER_ID" in a directory all
# tasks see; task 0 then runs `ferry job` across every node and writes a done
# marker with the job's exit code; the other tasks wait for that marker, stop
# their node and exit. Whatever happens, a task stops its node when it exits.
#
# Knobs (environment; deploy/slurm/README.md has the details):
#   FERRY_BIN               the ferry binary (default: the repo build, else `ferry` on PATH)
#   FERRY_SLURM_DIR         shared state directory (default $SLURM_SUBMIT_DIR/ferry-$SLURM_JOB_ID)
#   FERRY_BIND              address to listen on (default 0.0.0.0)
#   FERRY_ADVERTISE         host name peers are told (default $(hostname), or FERRY_BIND if set)
#   FERRY_IFACE             bind to and advertise this interface's IPv4 address instead
#   FERRY_PORT_BASE         gateway port = base + SLURM_PROCID (default: any free port)
#   FERRY_METRICS_PORT_BASE metrics port = base + SLURM_PROCID (default: FERRY_METRICS_PORT)
#   FERRY_METRICS_PORT      metrics port when no base is set (default 0: any; -1: off)
#   FERRY_JOIN_FLAG         node option that joins task 0's node (default --join; empty: none)
#   FERRY_NODE_ARGS         extra `ferry node` options (%h: advertised host, %t: task id)
#   FERRY_JOB_ARGS          extra `ferry job` options (task 0)
#   FERRY_START_TIMEOUT     seconds to wait for nodes to come up (default 120)
#   FERRY_JOB_TIMEOUT       seconds the job may run (default 3600)
#   FERRY_STOP_TIMEOUT      seconds a node gets to stop after SIGTERM (default 45)
# Functions run from traps and from wait_for, which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

rank=${SLURM_PROCID:?ferry-task.sh runs under srun (SLURM_PROCID is not set)}
ntasks=${SLURM_NTASKS:?ferry-task.sh runs under srun (SLURM_NTASKS is not set)}
me="ferry-task $rank/$ntasks"
say() { echo "[$me] $*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ferry=${FERRY_BIN:-$root/build/apps/ferry}
# Installed (share/ferry/deploy): the packaged `ferry` on PATH.
if [ -z "${FERRY_BIN:-}" ] && [ ! -x "$ferry" ] && command -v ferry >/dev/null; then
  ferry=$(command -v ferry)
fi

jobid=${SLURM_JOB_ID:?ferry-task.sh runs under srun (SLURM_JOB_ID is not set)}
base_dir=${FERRY_SLURM_DIR:-${SLURM_SUBMIT_DIR:-$PWD}/ferry-$jobid}
# One subdirectory per job step, so a second srun in the same job, or a
# FERRY_SLURM_DIR shared by many jobs, never sees another step's files.
state=$base_dir/step-$jobid.${SLURM_STEP_ID:-0}
start_timeout=${FERRY_START_TIMEOUT:-120}
job_timeout=${FERRY_JOB_TIMEOUT:-3600}
stop_timeout=${FERRY_STOP_TIMEOUT:-45}
join_flag=${FERRY_JOIN_FLAG---join}

node_pid=
job_pid=
published=0
done_file=$state/done

# Writes $2 into $1 atomically (a rename in the same directory), so a reader
# on another host never sees half a line.
put() {
  local tmp
  tmp=$(mktemp "$1.tmp.XXXXXX") || return 1
  printf '%s\n' "$2" >"$tmp" && mv -f "$tmp" "$1"
}

fail_marker() { [ "$published" = 1 ] || put "$state/node-$rank.failed" "$1" || true; }

node_alive() { [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; }

# SIGTERM the node, wait (bounded) for it, SIGKILL it if it ignored that.
# Returns 0 when the node stopped by itself with exit code 0.
stop_node() {
  [ -n "$node_pid" ] || return 0
  local pid=$node_pid code=0 i
  node_pid=
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < stop_timeout * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "node (pid $pid) ignored SIGTERM for ${stop_timeout}s; killing it; the end of its log ($state/node-$rank.log):"
      tail -n 30 "$state/node-$rank.log" >&2 2>/dev/null
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null
      return 1
    fi
  fi
  wait "$pid" 2>/dev/null || code=$?
  if [ "$code" != 0 ]; then
    say "node (pid $pid) exited with $code; the end of its log ($state/node-$rank.log):"
    tail -n 20 "$state/node-$rank.log" >&2 2>/dev/null
    return 1
  fi
  return 0
}

cleanup() {
  local rc=$?
  trap - EXIT TERM INT HUP
  if [ -n "$job_pid" ] && kill -0 "$job_pid" 2>/dev/null; then
    kill -TERM "$job_pid" 2>/dev/null
    wait "$job_pid" 2>/dev/null
  fi
  [ "$rc" = 0 ] || fail_marker "task $rank exited with $rc"
  # Task 0 always leaves a done marker, so the others stop now, not at their timeout.
  if [ "$rank" = 0 ] && [ ! -e "$done_file" ]; then
    put "$done_file" "$([ "$rc" = 0 ] && echo 1 || echo "$rc")" || true
  fi
  stop_node || { [ "$rc" != 0 ] || rc=1; }
  exit "$rc"
}
trap cleanup EXIT
trap 'say "SIGTERM"; exit 143' TERM
trap 'say "SIGINT"; exit 130' INT
trap 'say "SIGHUP"; exit 129' HUP

mkdir -p "$state" || { say "cannot create $state"; exit 1; }
if [ ! -x "$ferry" ]; then
  say "ferry binary '$ferry' not found (set FERRY_BIN)"
  exit 1
fi

bind=${FERRY_BIND:-0.0.0.0}
if [ -n "${FERRY_ADVERTISE:-}" ]; then
  advertise=$FERRY_ADVERTISE
elif [ -n "${FERRY_BIND:-}" ] && [ "$FERRY_BIND" != 0.0.0.0 ]; then
  advertise=$FERRY_BIND
else
  advertise=$(hostname)
fi
if [ -n "${FERRY_IFACE:-}" ]; then
  addr=$(ip -o -4 addr show dev "$FERRY_IFACE" 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
  [ -n "$addr" ] || { say "no IPv4 address on interface $FERRY_IFACE"; exit 1; }
  bind=$addr
  advertise=${FERRY_ADVERTISE:-$addr}
fi

port=0
[ -z "${FERRY_PORT_BASE:-}" ] || port=$((FERRY_PORT_BASE + rank))
metrics=${FERRY_METRICS_PORT:-0}
[ -z "${FERRY_METRICS_PORT_BASE:-}" ] || metrics=$((FERRY_METRICS_PORT_BASE + rank))

# Reads "HOST PORT METRICS WORKER_ID" of task $1 into ep_host ep_port; 0 when complete.
read_endpoint() {
  local f=$state/node-$1.endpoint h p m w
  [ -s "$f" ] || return 1
  read -r h p m w <"$f" || true
  [ -n "${w:-}" ] || return 1
  ep_host=$h ep_port=$p
}

# Waits until no other task has failed and `$1 args` succeeds, bounded by
# start_timeout; gives up when this task's node (once started) dies.
wait_for() {
  local i f
  for ((i = 0; i < start_timeout * 10; i++)); do
    "$@" && return 0
    for f in "$state"/node-*.failed; do
      [ -e "$f" ] || continue
      say "gave up: $(cat "$f" 2>/dev/null)"
      return 1
    done
    if [ -n "$node_pid" ] && ! node_alive; then
      local code=0
      wait "$node_pid" 2>/dev/null || code=$?
      node_pid=
      say "node exited with $code while starting; the end of its log:"
      tail -n 20 "$state/node-$rank.log" >&2 2>/dev/null
      return 1
    fi
    [ ! -e "$done_file" ] || { say "task 0 finished before this task was up"; return 1; }
    sleep 0.1
  done
  say "timed out after ${start_timeout}s waiting for: $*"
  return 1
}

# Every task but 0 joins the cluster through task 0's node.
join=()
if [ "$rank" != 0 ] && [ -n "$join_flag" ]; then
  wait_for read_endpoint 0 || exit 1
  join=("$join_flag" "$ep_host:$ep_port")
fi

extra=()
if [ -n "${FERRY_NODE_ARGS:-}" ]; then
  args=${FERRY_NODE_ARGS//%h/$advertise}
  args=${args//%t/$rank}
  read -ra extra <<<"$args"
fi

ready=$state/node-$rank.ready
rm -f "$ready" "$state/node-$rank.failed"
say "starting node on $bind (advertised as $advertise), port $port${join:+, ${join[*]}}${extra:+, ${extra[*]}}"
"$ferry" node --port "$port" --bind "$bind" --advertise "$advertise" \
  --metrics-port "$metrics" --ready-file "$ready" "${join[@]}" "${extra[@]}" \
  >"$state/node-$rank.log" 2>&1 &
node_pid=$!
put "$state/node-$rank.pid" "$(hostname) $node_pid" || true

# The node writes its ready file once it listens.
ready_ok() {
  local p m w
  [ -s "$ready" ] || return 1
  read -r p m w <"$ready" || true
  : "$p" "$m"
  [ -n "${w:-}" ]
}
wait_for ready_ok || exit 1
read -r node_port node_metrics node_worker <"$ready"
put "$state/node-$rank.endpoint" "$advertise $node_port $node_metrics $node_worker" || exit 1
published=1
say "node up: $advertise:$node_port (metrics $node_metrics, worker $node_worker)"

if [ "$rank" = 0 ]; then
  all_published() {
    local i
    nodes=
    for ((i = 0; i < ntasks; i++)); do
      read_endpoint "$i" || return 1
      nodes+=${nodes:+,}$ep_host:$ep_port
    done
  }
  wait_for all_published || exit 1
  job_args=()
  [ -z "${FERRY_JOB_ARGS:-}" ] || read -ra job_args <<<"$FERRY_JOB_ARGS"
  say "running: ferry job --nodes $nodes ${job_args[*]}"
  # In the background, so a SIGTERM reaches the trap at once.
  timeout --kill-after=30 "$job_timeout" "$ferry" job --nodes "$nodes" "${job_args[@]}" &
  job_pid=$!
  code=0
  wait "$job_pid" || code=$?
  job_pid=
  [ "$code" != 124 ] || say "the job ran past FERRY_JOB_TIMEOUT=${job_timeout}s"
  say "job exited with $code"
  put "$done_file" "$code"
  exit "$code"
fi

# The other tasks: serve until task 0 is done, bounded, and not past their node.
limit=$((start_timeout + job_timeout + 60))
for ((i = 0; i < limit * 5; i++)); do
  if [ -e "$done_file" ]; then
    say "task 0 done (job exit code $(cat "$done_file" 2>/dev/null)); stopping the node"
    exit 0
  fi
  if ! node_alive; then
    code=0
    wait "$node_pid" 2>/dev/null || code=$?
    node_pid=
    say "node died (exit code $code) before the job was done; the end of its log:"
    tail -n 20 "$state/node-$rank.log" >&2 2>/dev/null
    exit 1
  fi
  sleep 0.2
done
say "no done marker from task 0 within ${limit}s; stopping the node"
exit 1
