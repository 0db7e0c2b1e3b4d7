#!/usr/bin/env bash
# Runs the real Prometheus against a local 3-node ferry cluster with a config
# derived from deploy/monitoring/prometheus.yml:
#   - the file_sd job(s) read a temporary targets file naming the 3 nodes'
#     metrics endpoints, the static job(s) list the same 3 endpoints;
#   - scrape and evaluation every 1 s, the alert rules from deploy/monitoring;
# then, after a small `ferry job`, checks that /api/v1/targets shows every
# target up, that up{job=J} sums to 3 for every job, that path decisions,
# registered bytes and the GET duration histogram are there for all 3
# instances, that every dashboard and rule expr evaluates without an error,
# that every rule is healthy, and that one node's /metrics passes
# promtool check metrics. Everything it starts is stopped on any exit.
# Exit 0: all good; 1: something is wrong (named on stderr); 77: a tool it
# needs (prometheus, promtool, python3 with yaml) is missing.
# Env: FERRY_BIN (default build/apps/ferry), FERRY_MONITORING_DIR (default
# deploy/monitoring).
set -euo pipefail
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
root=$(cd "$(dirname "$0")/../.." && pwd)
mon=${FERRY_MONITORING_DIR:-$root/deploy/monitoring}
ferry=${FERRY_BIN:-$root/build/apps/ferry}
export FERRY_BIN=$ferry # cluster.sh runs this binary
cluster=$root/deploy/local/cluster.sh
me=prometheus_scrape
nodes=3

# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need_python_yaml
command -v prometheus >/dev/null || skip "prometheus not found (apt-get install prometheus)"
command -v promtool >/dev/null || skip "promtool not found (apt-get install prometheus)"
[ -f "$mon/prometheus.yml" ] || fail "missing $mon/prometheus.yml"
[ -x "$ferry" ] || fail "ferry binary $ferry not found or not executable (set FERRY_BIN)"

tmp=$(mktemp -d /tmp/ferry-prometheus-scrape-XXXXXX)
export FERRY_CLUSTER_DIR=$tmp/cluster
prom_pid=
cluster_started=0
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    if [ -s "$tmp/prometheus.log" ]; then
      echo "$me: prometheus log (tail):" >&2
      tail -n 15 "$tmp/prometheus.log" >&2
    fi
    for f in "$FERRY_CLUSTER_DIR"/node-*.log; do
      [ -s "$f" ] || continue
      echo "$me: $(basename "$f") (tail):" >&2
      tail -n 5 "$f" >&2
    done
  fi
  if [ -n "$prom_pid" ] && kill -0 "$prom_pid" 2>/dev/null; then
    kill -TERM "$prom_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$prom_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$prom_pid" 2>/dev/null || true
    wait "$prom_pid" 2>/dev/null || true
  fi
  if [ "$cluster_started" = 1 ]; then
    # Every node gets SIGTERM at once (each takes a second or two to exit);
    # cluster.sh stop then waits for them, kills a stuck one, tidies up.
    for f in "$FERRY_CLUSTER_DIR"/node-*.pid; do
      if [ -s "$f" ]; then kill -TERM "$(cat "$f")" 2>/dev/null || true; fi
    done
    "$cluster" stop >/dev/null 2>&1 || echo "$me: cluster.sh stop had to kill a node" >&2
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A free loopback port: bind port 0, read it, close (prometheus binds it next).
free_port() {
  "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# 1. The cluster.
cluster_started=1
"$cluster" start "$nodes" >"$tmp/cluster.out" 2>&1 ||
  { cat "$tmp/cluster.out" >&2; fail "deploy/local/cluster.sh start $nodes"; }
metrics_eps=()
for i in $(seq 1 "$nodes"); do
  read -r _ m _ <"$FERRY_CLUSTER_DIR/node-$i.ready"
  metrics_eps+=("127.0.0.1:$m")
done
say "cluster up: nodes $("$cluster" endpoints), metrics ${metrics_eps[*]}"

# 2. The targets file and the derived config.
mkdir -p "$tmp/targets" "$tmp/data"
"$py" - "$tmp/targets/ferry-nodes.json" "${metrics_eps[@]}" <<'EOF'
import json, sys
json.dump([{"targets": sys.argv[2:], "labels": {"cluster": "prometheus-scrape-test"}}],
          open(sys.argv[1], "w"), indent=2)
EOF
"$py" - "$mon/prometheus.yml" "$tmp/prometheus.yml" "$tmp/targets/ferry-nodes.json" \
  "$tmp/jobs" "${metrics_eps[@]}" <<'EOF' || fail "could not derive a config from $mon/prometheus.yml"
import os, sys, yaml
src, dst, targets_file, jobs_out = sys.argv[1:5]
eps = sys.argv[5:]
base = os.path.dirname(os.path.abspath(src))
cfg = yaml.safe_load(open(src)) or {}
g = cfg.setdefault("global", {})
g["scrape_interval"] = "1s"
g["scrape_timeout"] = "1s"
g["evaluation_interval"] = "1s"
cfg.pop("alerting", None)  # no Alertmanager here
cfg["rule_files"] = [p if os.path.isabs(p) else os.path.join(base, p)
                     for p in cfg.get("rule_files", []) or []]
jobs = []
for sc in cfg.get("scrape_configs", []) or []:
    kinds = []
    for k in ("scrape_interval", "scrape_timeout"):
        sc.pop(k, None)
    if sc.get("file_sd_configs"):
        for sd in sc["file_sd_configs"]:
            sd["files"] = [targets_file]
            sd["refresh_interval"] = "1s"
        kinds.append("file_sd")
    if sc.get("static_configs"):
        sc["static_configs"] = [{"targets": eps, "labels": {"cluster": "prometheus-scrape-test"}}]
        kinds.append("static")
    other = [k for k in sc if k.endswith("_sd_configs") and k != "file_sd_configs"]
    if other:
        sys.exit(f"job {sc.get('job_name')}: cannot point {other} at a local cluster")
    if kinds:
        jobs.append((sc["job_name"], "+".join(kinds)))
if not any("file_sd" in k for _, k in jobs):
    sys.exit(f"{src}: no file_sd_configs job")
yaml.safe_dump(cfg, open(dst, "w"), sort_keys=False)
with open(jobs_out, "w") as f:
    for name, kind in jobs:
        f.write(f"{name} {kind}\n")
EOF
promtool check config "$tmp/prometheus.yml" >"$tmp/promtool.out" 2>&1 ||
  { cat "$tmp/promtool.out" >&2; fail "promtool check config on the derived config"; }
jobs=()
while read -r name kind; do
  jobs+=("$name")
  say "job $name ($kind): ${metrics_eps[*]}"
done <"$tmp/jobs"

# 3. Prometheus, on a free port (a few tries, in case another process took it).
url=
for _ in 1 2 3; do
  port=$(free_port)
  prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >"$tmp/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 1 150); do
    kill -0 "$prom_pid" 2>/dev/null || break
    if "$py" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
      "http://127.0.0.1:$port/-/ready" 2>/dev/null; then
      url=http://127.0.0.1:$port
      break
    fi
    sleep 0.2
  done
  [ -n "$url" ] && break
  kill -KILL "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true
  prom_pid=
done
[ -n "$url" ] || fail "prometheus did not become ready (3 tries)"
say "prometheus ready at $url"

# 4. Traffic, and one node's /metrics through promtool.
timeout 60 "$ferry" job --nodes "$("$cluster" endpoints)" --mib 16 >"$tmp/job.log" 2>&1 ||
  { tail -n 20 "$tmp/job.log" >&2; fail "ferry job failed"; }
say "ferry job: $(grep -m1 'path decisions' "$tmp/job.log" | sed 's/^ *//')"
"$py" -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=10).read())' \
  "http://${metrics_eps[0]}/metrics" >"$tmp/scrape.prom" ||
  fail "could not scrape http://${metrics_eps[0]}/metrics"
promtool check metrics <"$tmp/scrape.prom" >"$tmp/promtool.out" 2>&1 ||
  { cat "$tmp/promtool.out" >&2; fail "promtool check metrics on http://${metrics_eps[0]}/metrics"; }
say "promtool check metrics on http://${metrics_eps[0]}/metrics: ok"

# 5. The checks against Prometheus' API, retried for up to 45 s until they all
# hold; the last round's complaints are the failure message.
"$py" - "$url" "$nodes" "$mon" "${jobs[@]}" <<'EOF' || fail "Prometheus did not see the cluster as expected (see above)"
import json, re, sys, time, urllib.error, urllib.parse, urllib.request
import yaml
url, nodes, mon = sys.argv[1], int(sys.argv[2]), sys.argv[3]
jobs = sys.argv[4:]
# $job as Grafana's "All" expands it: the names as one regex, inside a PromQL
# double-quoted string (so a regex backslash is written twice).
job_re = "|".join(re.sub(r'([.^$*+?()\[\]{}|\\])', r'\\\\\1', j) for j in jobs)

def api(path, **params):
    q = ("?" + urllib.parse.urlencode(params)) if params else ""
    try:
        with urllib.request.urlopen(url + path + q, timeout=5) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:  # Prometheus says why in a JSON body
        try:
            body = json.load(e)
        except Exception:
            raise RuntimeError(f"{path} {params}: HTTP {e.code}") from None
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
    return body["data"]

def query(expr):
    return api("/api/v1/query", query=expr)

exprs = []
dash = json.load(open(f"{mon}/ferry-dashboard.json"))
def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []) or [])
for p in walk(dash.get("panels", [])):
    for t in p.get("targets", []) or []:
        e = (t.get("expr") or "").replace("$job", job_re).replace("$instance", ".*")
        exprs.append((f"dashboard panel {p.get('title')!r} {t.get('refId')}",
                      e.replace("$__rate_interval", "1m").replace("$__interval", "15s")))
rules = yaml.safe_load(open(f"{mon}/ferry-alerts.yml"))
for g in rules.get("groups", []):
    for r in g.get("rules", []):
        exprs.append((f"rule {r.get('alert') or r.get('record')!r}", str(r["expr"])))

def instances(expr, positive=False):
    res = query(expr)["result"]
    return {s["metric"].get("instance") for s in res
            if not positive or float(s["value"][1]) > 0}

def check():
    problems = []
    active = api("/api/v1/targets", state="active")["activeTargets"]
    for j in jobs:
        ts = [t for t in active if t["labels"].get("job") == j]
        up = [t for t in ts if t["health"] == "up"]
        if len(up) != nodes:
            problems.append(f"job {j}: {len(up)} of {len(ts)} targets up, want {nodes}: "
                            + "; ".join(f"{t['scrapeUrl']} {t['health']} {t.get('lastError', '')}"
                                        for t in ts))
        res = query(f'sum(up{{job="{j}"}})')["result"]
        v = float(res[0]["value"][1]) if res else 0
        if v != nodes:
            problems.append(f'sum(up{{job="{j}"}}) is {v:g}, want {nodes}')
        for what, expr, positive in [
            ("path decisions", f'sum by (instance) (ferry_rendezvous_rdma_path_total{{job="{j}"}})', True),
            ("registered bytes", f'ferry_rdma_registered_bytes{{job="{j}"}}', False),
            ("GET duration histogram", f'ferry_rendezvous_rdma_get_duration_seconds_count{{job="{j}"}}', False),
            ("GET duration buckets", f'count by (instance) (ferry_rendezvous_rdma_get_duration_seconds_bucket{{job="{j}"}})', False),
            ("finished gets", f'sum by (instance) (ferry_rendezvous_gets_total{{job="{j}",result="ok"}})', True),
        ]:
            got = instances(expr, positive)
            if len(got) != nodes:
                problems.append(f"job {j}: {what} ({expr}{' > 0' if positive else ''}) "
                                f"for {len(got)} instances, want {nodes}: {sorted(got)}")
    fatal = False
    for where, e in exprs:
        try:
            query(e)
        except Exception as ex:
            if "bad_data" in str(ex):  # a parse error: no use waiting
                fatal = True
            problems.append(f"{where}: {ex}")
    n_rules = 0
    for g in api("/api/v1/rules")["groups"]:
        for r in g["rules"]:
            n_rules += 1
            if r.get("health") != "ok":
                problems.append(f"rule {r.get('name')!r}: health {r.get('health')} {r.get('lastError', '')}")
    if n_rules == 0:
        problems.append("Prometheus loaded no rules")
    return problems, n_rules, fatal

deadline = time.monotonic() + 45
while True:
    try:
        problems, n_rules, fatal = check()
    except Exception as ex:
        problems, n_rules, fatal = [f"API: {ex}"], 0, False
    if not problems or fatal or time.monotonic() > deadline:
        break
    time.sleep(1)
if problems:
    if fatal:
        problems = [p for p in problems if "bad_data" in p]
    for p in problems:
        print(p, file=sys.stderr)
    sys.exit(1)
firing = [a["labels"]["alertname"] for a in api("/api/v1/alerts")["alerts"]]
print(f"prometheus_scrape: jobs {', '.join(jobs)}: {nodes} targets up each; path decisions, "
      f"registered bytes, GET histogram for all {nodes} instances; {len(exprs)} exprs evaluate; "
      f"{n_rules} rules healthy; alerts pending/firing: {firing or 'none'}")
EOF
say "PASS"
