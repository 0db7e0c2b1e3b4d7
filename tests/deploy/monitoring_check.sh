#!/usr/bin/env bash
# Checks the monitoring files in deploy/monitoring:
#   1. promtool check config (prometheus.yml, with its rule_files and file_sd
#      targets), promtool check rules and promtool test rules;
#   2. ferry-dashboard.json is JSON, schemaVersion and a datasource variable
#      are there, and every panel (rows aside) has targets, each with an expr;
#   3. one real `ferry node` runs a small `ferry job`; its /metrics scrape
#      passes promtool check metrics, and every ferry_* name used in a rule or
#      dashboard expr is served by it (NAME_bucket/_sum/_count of a histogram,
#      _sum/_count of a summary), with the label names the exprs match on or
#      aggregate by.
# Exit 0: all good; 1: something is wrong (named on stderr); 77: a tool it
# needs (promtool, python3 with yaml) is missing.
# Env: FERRY_BIN (default build/apps/ferry), FERRY_MONITORING_DIR (default
# deploy/monitoring; point it at a copy to check edited files).
set -euo pipefail
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo}
root=$(cd "$(dirname "$0")/../.." && pwd)
mon=${FERRY_MONITORING_DIR:-$root/deploy/monitoring}
ferry=${FERRY_BIN:-$root/build/apps/ferry}
me=monitoring_check

# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need_python_yaml
command -v promtool >/dev/null || skip "promtool not found (apt-get install prometheus)"

config=$mon/prometheus.yml
rules=$mon/ferry-alerts.yml
rule_tests=$mon/ferry-alerts.test.yml
dashboard=$mon/ferry-dashboard.json
for f in "$config" "$rules" "$dashboard"; do
  [ -f "$f" ] || fail "missing $f"
done

tmp=$(mktemp -d /tmp/ferry-monitoring-check-XXXXXX)
node_pid=
node_log=0   # 1 while a failure is the node's: show its log
cleanup() {
  local rc=$?
  if [ -n "$node_pid" ] && kill -0 "$node_pid" 2>/dev/null; then
    kill -TERM "$node_pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$node_pid" 2>/dev/null || true
    wait "$node_pid" 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ] && [ "$node_log" = 1 ] && [ -s "$tmp/node.log" ]; then
    echo "$me: node log (tail):" >&2
    tail -n 20 "$tmp/node.log" >&2
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. promtool. check config resolves rule_files and file_sd files relative to
# the config file and checks the rule files as well.
promtool check config "$config" >"$tmp/promtool.out" 2>&1 ||
  { cat "$tmp/promtool.out" >&2; fail "promtool check config $config"; }
promtool check rules "$rules" >"$tmp/promtool.out" 2>&1 ||
  { cat "$tmp/promtool.out" >&2; fail "promtool check rules $rules"; }
if [ -f "$rule_tests" ]; then
  (cd "$(dirname "$rule_tests")" && promtool test rules "$(basename "$rule_tests")") \
    >"$tmp/promtool.out" 2>&1 ||
    { cat "$tmp/promtool.out" >&2; fail "promtool test rules $rule_tests"; }
fi
# promtool passes a file_sd file that does not exist: the example must be there.
"$py" - "$config" <<'EOF' || fail "file_sd targets of $config (see above)"
import glob, json, os, sys, yaml
cfg_path = sys.argv[1]
base = os.path.dirname(os.path.abspath(cfg_path))
cfg = yaml.safe_load(open(cfg_path)) or {}
bad, n = 0, 0
for sc in cfg.get("scrape_configs", []) or []:
    for sd in sc.get("file_sd_configs", []) or []:
        for pat in sd.get("files", []) or []:
            n += 1
            full = pat if os.path.isabs(pat) else os.path.join(base, pat)
            matches = glob.glob(full)
            if not matches:
                print(f"job {sc.get('job_name')!r}: file_sd file {pat} ({full}) does not exist",
                      file=sys.stderr)
                bad += 1
            for m in matches:
                if not m.endswith(".json"):
                    continue  # promtool check config has read YAML ones
                try:
                    groups = json.load(open(m))
                except Exception as e:
                    print(f"{m}: not valid JSON: {e}", file=sys.stderr)
                    bad += 1
                    continue
                if not isinstance(groups, list) or not groups or not all(
                        isinstance(g, dict) and g.get("targets") for g in groups):
                    print(f'{m}: want a list of {{"targets": [...], "labels": {{...}}}}',
                          file=sys.stderr)
                    bad += 1
if n == 0:
    print(f"{cfg_path}: no file_sd_configs job", file=sys.stderr)
    bad += 1
sys.exit(1 if bad else 0)
EOF
say "promtool check config, check rules and test rules: ok"

# 2. The dashboard's shape; its exprs and the rules' exprs go to $tmp/exprs.json.
"$py" - "$dashboard" "$rules" "$tmp/exprs.json" <<'EOF' || fail "dashboard or rules (see above)"
import json, sys, yaml
dash_path, rules_path, out_path = sys.argv[1:4]
errors = []
try:
    with open(dash_path) as f:
        dash = json.load(f)
except Exception as e:
    print(f"{dash_path}: not valid JSON: {e}", file=sys.stderr)
    sys.exit(1)
if not isinstance(dash, dict):
    print(f"{dash_path}: not a JSON object", file=sys.stderr)
    sys.exit(1)
sv = dash.get("schemaVersion")
if not isinstance(sv, int) or sv < 30:
    errors.append(f"schemaVersion {sv!r}: want a number of at least 30 (Grafana 8+)")
if not dash.get("title"):
    errors.append("no title")
tvars = dash.get("templating", {}).get("list", [])
ds_vars = [v.get("name") for v in tvars if v.get("type") == "datasource"]
if not ds_vars:
    errors.append("no datasource variable in templating.list")

def walk(panels):
    for p in panels:
        yield p
        yield from walk(p.get("panels", []) or [])

exprs = []
ids = set()
panels = list(walk(dash.get("panels", []) or []))
if not [p for p in panels if p.get("type") != "row"]:
    errors.append("no panels")
for p in panels:
    title = p.get("title") or f"panel id {p.get('id')}"
    pid = p.get("id")
    if pid in ids:
        errors.append(f"panel {title!r}: id {pid} used twice")
    ids.add(pid)
    if p.get("type") == "row":
        continue
    if "gridPos" not in p:
        errors.append(f"panel {title!r}: no gridPos")
    targets = p.get("targets") or []
    if not targets:
        errors.append(f"panel {title!r}: no targets")
    for t in targets:
        e = t.get("expr")
        if not isinstance(e, str) or not e.strip():
            errors.append(f"panel {title!r}: target {t.get('refId')!r} has no expr")
        else:
            exprs.append({"where": f"dashboard panel {title!r} target {t.get('refId')}",
                          "expr": e})
    ds = json.dumps(p.get("datasource"))
    if ds_vars and not any(f"${{{v}}}" in ds or f"${v}" in ds for v in ds_vars):
        errors.append(f"panel {title!r}: datasource {ds} is not the datasource variable")

with open(rules_path) as f:
    rules = yaml.safe_load(f)
n_rules = 0
for g in (rules or {}).get("groups", []):
    for r in g.get("rules", []):
        n_rules += 1
        name = r.get("alert") or r.get("record")
        exprs.append({"where": f"rule {name!r}", "expr": str(r.get("expr", ""))})
if n_rules == 0:
    errors.append(f"{rules_path}: no rules")
for e in errors:
    print(f"{dash_path}: {e}", file=sys.stderr)
with open(out_path, "w") as f:
    json.dump(exprs, f)
sys.exit(1 if errors else 0)
EOF
say "dashboard: valid JSON, every panel has targets with an expr"

# 3. A live node after a small job.
[ -x "$ferry" ] || fail "ferry binary $ferry not found or not executable (set FERRY_BIN)"
node_log=1
"$ferry" node --port 0 --metrics-port 0 --ready-file "$tmp/node.ready" >"$tmp/node.log" 2>&1 &
node_pid=$!
for _ in $(seq 1 300); do
  [ -s "$tmp/node.ready" ] && break
  kill -0 "$node_pid" 2>/dev/null || fail "ferry node exited before it was ready"
  sleep 0.1
done
[ -s "$tmp/node.ready" ] || fail "ferry node not ready after 30 s"
read -r port metrics_port _ <"$tmp/node.ready"
timeout 60 "$ferry" job --nodes "127.0.0.1:$port" --mib 16 >"$tmp/job.log" 2>&1 ||
  { tail -n 20 "$tmp/job.log" >&2; fail "ferry job against 127.0.0.1:$port failed"; }

"$py" - "http://127.0.0.1:$metrics_port/metrics" "$tmp/scrape.prom" <<'EOF' ||
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    data = r.read()
with open(sys.argv[2], "wb") as f:
    f.write(data)
EOF
  fail "could not scrape http://127.0.0.1:$metrics_port/metrics"
promtool check metrics <"$tmp/scrape.prom" >"$tmp/promtool.out" 2>&1 ||
  { cat "$tmp/promtool.out" >&2; fail "promtool check metrics on the node's /metrics"; }
say "node 127.0.0.1:$port after a job: /metrics passes promtool check metrics"
node_log=0

"$py" - "$tmp/scrape.prom" "$tmp/exprs.json" <<'EOF' || fail "exprs name series or labels a live node does not serve (see above)"
import json, re, sys
scrape_path, exprs_path = sys.argv[1:3]
types = {}          # family -> type
labels = {}         # sample name -> label names seen
for line in open(scrape_path):
    line = line.rstrip("\n")
    if line.startswith("# TYPE "):
        _, _, fam, typ = line.split(None, 3)
        types[fam] = typ
    elif line and not line.startswith("#"):
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s', line)
        if m:
            names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
            labels.setdefault(m.group(1), set()).update(names)

def family_of(name):
    """The scraped family a series name belongs to, or None."""
    if name in types and types[name] not in ("histogram", "summary"):
        return name
    for suffix, kinds in (("_bucket", ("histogram",)), ("_sum", ("histogram", "summary")),
                          ("_count", ("histogram", "summary"))):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) in kinds:
            return name[: -len(suffix)]
    return None

ferry_families = sorted(f for f in types if f.startswith("ferry_"))
if not ferry_families:
    print("the live scrape has no ferry_* families", file=sys.stderr)
    sys.exit(1)
target_labels = {"job", "instance"}
exprs = json.load(open(exprs_path))
errors = []
used = set()
name_re = re.compile(r'(?<![A-Za-z0-9_:$])(ferry_[A-Za-z0-9_:]+)\s*(\{[^}]*\})?')
for item in exprs:
    where, expr = item["where"], item["expr"]
    seen = set()
    for m in name_re.finditer(expr):
        name, sel = m.group(1), m.group(2) or ""
        fam = family_of(name)
        if fam is None:
            if name in types:
                errors.append(f"{where}: {name} is a {types[name]}; query {name}_bucket, _sum or _count")
            else:
                errors.append(f"{where}: no metric {name} in a live scrape "
                              f"(ferry_* families: {', '.join(ferry_families)})")
            continue
        used.add(name)
        have = labels.get(name, set()) | target_labels
        seen |= have
        for lab in re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"', sel):
            if lab not in have:
                errors.append(f"{where}: {name} has no label {lab!r} (it has {sorted(have)})")
    if seen:
        for group in re.findall(r'\b(?:by|without)\s*\(([^)]*)\)', expr):
            for lab in [s.strip() for s in group.split(",") if s.strip()]:
                if lab not in seen:
                    errors.append(f"{where}: aggregates by {lab!r}, a label none of its "
                                  f"ferry series has (they have {sorted(seen)})")
for e in errors:
    print(e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"monitoring_check: {len(used)} ferry series names in {len(exprs)} exprs, all served: "
      + ", ".join(sorted(used)))
EOF
say "PASS"
