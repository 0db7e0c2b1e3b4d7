#!/usr/bin/env python3
"""Static checks of ferry's Kubernetes manifests (deploy/k8s).

No cluster is needed: every YAML file under the directory is parsed
(multi-document) and checked on its own and against the others:

  every object   apiVersion, kind, metadata.name (a DNS name), label and
                 annotation values are strings, no (kind, name) twice
  StatefulSet    serviceName names a headless Service of the set that
                 publishes not-ready addresses; selector.matchLabels within
                 the pod labels; containers with name, image, named ports;
                 readiness /readyz and liveness (and startup) /healthz on a
                 declared port, the metrics port; every volumeMount's volume
                 exists and its ConfigMap / Secret is in the set; $(VAR)s are
                 declared env vars; the `ferry ... node` command line: its
                 options are real `ferry node` options, --config is a key of
                 the mounted ConfigMap, --advertise is the pod's DNS name,
                 --join reaches a pod of the set on the gateway port;
                 containerPorts gateway/metrics are node.toml's port and
                 metrics-port; the prometheus annotations name the metrics
                 port; terminationGracePeriodSeconds is longer than the
                 shutdown timeout; IPC_LOCK; UCX_NET_DEVICES
  Service        selector matches the StatefulSet's pods, ports resolve to
                 container ports
  ConfigMap      node.toml parses (tomllib); the keys of its [node] table are
                 `ferry node` options (from `$FERRY_BIN node --help`) with
                 values of their type; its tls-* files lie in the mounted
                 Secret
  Secret         data is base64; it holds the keys the StatefulSet reads
  Kustomization  every resource exists, every manifest is a resource, images
                 name a container image
  Dockerfile     a FROM debian:bookworm*, ferry installed from its .deb or
                 copied as a binary in the default and every alternative
                 install stage, COPY sources not hidden by
                 Dockerfile.dockerignore

Prints every failure (FAIL file: what) and exits 1 if there is one, 2 when
it cannot run (no PyYAML, no tomllib). Usage:
  check_k8s.py [--dir DIR] [--ferry-bin PATH]   (defaults: the repository's
  deploy/k8s, $FERRY_BIN or build/apps/ferry)
"""

import argparse
import base64
import binascii
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("check_k8s.py: cannot import yaml: PyYAML is needed "
          "(Debian: apt-get install python3-yaml; the wrapper "
          "tests/deploy/k8s_manifests.sh prefers /usr/bin/python3)",
          file=sys.stderr)
    sys.exit(2)
try:
    import tomllib
except ImportError:
    print("check_k8s.py: cannot import tomllib: Python 3.11 or later is needed",
          file=sys.stderr)
    sys.exit(2)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$")  # IANA_SVC_NAME
KEY_NAME = re.compile(r"^[-._a-zA-Z0-9]+$")
VAR_REF = re.compile(r"(\$+)\(([A-Za-z_][A-Za-z0-9_]*)\)")
API_VERSIONS = {
    "StatefulSet": "apps/v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
}


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key twice in one mapping (PyYAML keeps the
    last silently; kubectl refuses it)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


class Checker:
    def __init__(self, directory, ferry_bin):
        self.dir = directory
        self.ferry_bin = ferry_bin
        self.failures = []
        self.warnings = []
        self.notes = set()
        self.docs = []          # (file, doc)
        self.helps = {}         # subcommand -> {option: (type, default, multi)} or None
        self.choices = {}       # (subcommand, option) -> the values it takes
        self.ferry_missing = False

    # ---- reporting ---------------------------------------------------------
    def fail(self, where, what):
        self.failures.append(f"FAIL {where}: {what}")

    def warn(self, where, what):
        self.warnings.append(f"WARN {where}: {what}")

    def rel(self, path):
        return os.path.relpath(path, self.dir)

    # ---- ferry's options -----------------------------------------------------
    def options(self, sub):
        """{long name: (type, default, multi)} of `ferry SUB --help`, or None
        when the binary is absent."""
        if sub in self.helps:
            return self.helps[sub]
        if not (os.path.isfile(self.ferry_bin) and os.access(self.ferry_bin, os.X_OK)):
            if not self.ferry_missing:
                self.warn(self.ferry_bin, "no ferry binary: the checks of option names "
                          "and value types against `ferry node --help` are SKIPPED")
                self.ferry_missing = True
            self.helps[sub] = None
            return None
        try:
            r = subprocess.run([self.ferry_bin, sub, "--help"], capture_output=True,
                               text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.fail(self.ferry_bin, f"`ferry {sub} --help` did not run: {e}")
            self.helps[sub] = None
            return None
        if r.returncode != 0:
            self.fail(self.ferry_bin, f"`ferry {sub} --help` exited {r.returncode}: "
                      f"{(r.stderr or r.stdout).strip()[:300]}")
            self.helps[sub] = None
            return None
        opts = {}
        # "  --name TYPE[:VALIDATOR][=DEFAULT] [...]"; a validator {a,b} is the set
        # of values the option takes.
        line_re = re.compile(r"^\s+((?:-[\w-]+,)*--[\w-]+)"
                             r"(?:\s+([A-Z]+)(?::(\{[^}]*\}|[^\s=]+))?(?:=(\S*))?(\s+\.\.\.)?)?")
        for line in r.stdout.splitlines():
            m = line_re.match(line)
            if not m:
                continue
            for name in m.group(1).split(","):
                if name.startswith("--"):
                    opts[name[2:]] = (m.group(2), m.group(4), bool(m.group(5)))
                    if m.group(3) and m.group(3).startswith("{"):
                        self.choices[(sub, name[2:])] = m.group(3)[1:-1].split(",")
        if "help" not in opts or len(opts) < 3:
            self.fail(self.ferry_bin, f"`ferry {sub} --help` lists no options "
                      "(not ferry's CLI11 help?)")
        self.helps[sub] = opts
        return opts

    def check_option(self, where, what, sub, name):
        """Whether --NAME is an option of `ferry SUB` (True when unknown)."""
        opts = self.options(sub)
        if opts is None or name in opts:
            return True
        hint = ""
        alt = name.replace("_", "-")
        if alt != name and alt in opts:
            hint = f" (did you mean {alt}? ferry ignores config keys it does not know)"
        self.fail(where, f"{what}: --{name} is not an option of `ferry {sub}`{hint}")
        return False

    # ---- loading ---------------------------------------------------------
    def load(self):
        if not os.path.isdir(self.dir):
            self.fail(self.dir, "no such directory")
            return
        files = []
        for root, dirs, names in os.walk(self.dir):
            dirs.sort()
            for n in sorted(names):
                if n.endswith((".yaml", ".yml")):
                    files.append(os.path.join(root, n))
        if not files:
            self.fail(self.dir, "no YAML files")
        for f in files:
            try:
                with open(f, encoding="utf-8") as fh:
                    docs = list(yaml.load_all(fh, Loader=UniqueKeyLoader))
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                self.fail(self.rel(f), f"does not parse as YAML: {e}")
                continue
            for d in docs:
                if d is None:
                    continue
                self.docs.append((f, d))

    def objects(self, kind):
        return [(f, d) for f, d in self.docs
                if isinstance(d, dict) and d.get("kind") == kind]

    def find(self, kind, name):
        for f, d in self.objects(kind):
            if (d.get("metadata") or {}).get("name") == name:
                return f, d
        return None, None

    # ---- every object ------------------------------------------------------
    def check_common(self):
        seen = {}
        for f, d in self.docs:
            where = self.rel(f)
            if not isinstance(d, dict):
                self.fail(where, f"a document is a {type(d).__name__}, not a mapping")
                continue
            kind, api = d.get("kind"), d.get("apiVersion")
            if not isinstance(kind, str) or not kind:
                self.fail(where, "a document has no kind")
                continue
            if not isinstance(api, str) or not api:
                self.fail(where, f"{kind}: no apiVersion")
            elif kind in API_VERSIONS and api != API_VERSIONS[kind]:
                self.fail(where, f"{kind}: apiVersion {api}, expected {API_VERSIONS[kind]}")
            if kind == "Kustomization":
                continue
            meta = d.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if not isinstance(name, str) or not name:
                self.fail(where, f"{kind}: no metadata.name")
                continue
            pattern = DNS_LABEL if kind in ("Service", "StatefulSet") else DNS_SUBDOMAIN
            if not pattern.match(name) or len(name) > 63:
                self.fail(where, f"{kind}/{name}: the name is not a DNS "
                          f"{'label' if pattern is DNS_LABEL else 'subdomain'}")
            if (kind, name) in seen:
                self.fail(where, f"{kind}/{name} is also defined in {seen[(kind, name)]}")
            seen[(kind, name)] = where
            self.check_meta_strings(where, f"{kind}/{name}", meta)

    def check_meta_strings(self, where, what, meta):
        for field in ("labels", "annotations"):
            m = meta.get(field)
            if m is None:
                continue
            if not isinstance(m, dict):
                self.fail(where, f"{what}: metadata.{field} is not a mapping")
                continue
            for k, v in m.items():
                if not isinstance(v, str):
                    self.fail(where, f"{what}: {field[:-1]} {k}: {v!r} is not a string "
                              "(quote it: the API server takes strings only)")

    # ---- StatefulSet -----------------------------------------------------
    def check_statefulsets(self):
        sets = self.objects("StatefulSet")
        if not sets:
            self.fail(self.dir, "no StatefulSet")
        for f, d in sets:
            self.check_statefulset(self.rel(f), d)

    def check_statefulset(self, where, sts):
        name = sts["metadata"]["name"]
        what = f"StatefulSet/{name}"
        spec = sts.get("spec") or {}
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            self.fail(where, f"{what}: spec.replicas {replicas!r} is not a positive integer")
            replicas = 1
        if spec.get("podManagementPolicy", "OrderedReady") not in ("OrderedReady", "Parallel"):
            self.fail(where, f"{what}: podManagementPolicy {spec.get('podManagementPolicy')!r}")

        service_name = spec.get("serviceName")
        svc = None
        if not isinstance(service_name, str) or not service_name:
            self.fail(where, f"{what}: no spec.serviceName (the headless Service)")
        else:
            _, svc = self.find("Service", service_name)
            if svc is None:
                self.fail(where, f"{what}: serviceName {service_name} is no Service of the set")
            else:
                sspec = svc.get("spec") or {}
                if sspec.get("clusterIP") != "None":
                    self.fail(where, f"{what}: its Service {service_name} is not headless "
                              f"(clusterIP {sspec.get('clusterIP')!r}, want None)")
                if sspec.get("publishNotReadyAddresses") is not True:
                    self.fail(where, f"{what}: its Service {service_name} lacks "
                              "publishNotReadyAddresses: true (pods join before they are ready)")

        template = spec.get("template") or {}
        tmeta = template.get("metadata") or {}
        labels = tmeta.get("labels") or {}
        self.check_meta_strings(where, f"{what} pod template", tmeta)
        match = ((spec.get("selector") or {}).get("matchLabels")) or {}
        if not isinstance(match, dict) or not match:
            self.fail(where, f"{what}: no spec.selector.matchLabels")
        else:
            for k, v in match.items():
                if labels.get(k) != v:
                    self.fail(where, f"{what}: selector {k}={v} is not a pod template label")

        pod = template.get("spec") or {}
        volumes = {}
        for v in pod.get("volumes") or []:
            if not isinstance(v, dict) or not v.get("name"):
                self.fail(where, f"{what}: a volume without a name")
                continue
            if v["name"] in volumes:
                self.fail(where, f"{what}: volume {v['name']} twice")
            volumes[v["name"]] = v
            self.check_volume(where, what, v)
        containers = pod.get("containers") or []
        if not containers:
            self.fail(where, f"{what}: no containers")
        used = set()
        for c in containers:
            self.check_container(where, what, sts, pod, c, volumes, used, svc, replicas)
        for v in volumes:
            if v not in used:
                self.warn(where, f"{what}: volume {v} is mounted nowhere")

    def check_volume(self, where, what, v):
        vname = v["name"]
        if "configMap" in v:
            cm_name = (v["configMap"] or {}).get("name")
            _, cm = self.find("ConfigMap", cm_name)
            if cm is None and not (v["configMap"] or {}).get("optional"):
                self.fail(where, f"{what}: volume {vname}: ConfigMap {cm_name} is not in the set")
            self.check_items(where, what, vname, v["configMap"] or {}, cm, "ConfigMap")
        elif "secret" in v:
            s_name = (v["secret"] or {}).get("secretName")
            _, sec = self.find("Secret", s_name)
            if sec is None and not (v["secret"] or {}).get("optional"):
                self.fail(where, f"{what}: volume {vname}: Secret {s_name} is not in the set")
            self.check_items(where, what, vname, v["secret"] or {}, sec, "Secret")
        elif not any(k in v for k in ("emptyDir", "persistentVolumeClaim", "projected",
                                       "downwardAPI", "hostPath", "ephemeral", "csi")):
            self.fail(where, f"{what}: volume {vname} has no source")
        for src in ("configMap", "secret"):
            mode = (v.get(src) or {}).get("defaultMode") if isinstance(v.get(src), dict) else None
            if mode is not None and (not isinstance(mode, int) or not 0 <= mode <= 0o777):
                self.fail(where, f"{what}: volume {vname}: defaultMode {mode!r} is not 0..0777")

    def check_items(self, where, what, vname, src, obj, kind):
        if obj is None:
            return
        keys = self.object_keys(obj)
        for it in src.get("items") or []:
            if it.get("key") not in keys:
                self.fail(where, f"{what}: volume {vname}: item key {it.get('key')} is not "
                          f"in {kind} {obj['metadata']['name']}")

    @staticmethod
    def object_keys(obj):
        keys = set()
        for field in ("data", "stringData", "binaryData"):
            if isinstance(obj.get(field), dict):
                keys.update(obj[field].keys())
        return keys

    def resolve_file(self, path, mounts, volumes):
        """The (kind, object, key) that a file path of the container reads,
        or (None, None, reason)."""
        best = None
        for m in mounts:
            mp = (m.get("mountPath") or "").rstrip("/")
            if path == mp or path.startswith(mp + "/"):
                if best is None or len(mp) > len(best[0]):
                    best = (mp, m)
        if best is None:
            return None, None, "lies in no volumeMount"
        mp, m = best
        if m.get("subPath"):
            return None, None, f"lies in a subPath mount of {m.get('name')}"
        v = volumes.get(m.get("name"))
        if v is None:
            return None, None, f"lies in mount {m.get('name')} without a volume"
        rel = path[len(mp) + 1:]
        for src, kind, ref in (("configMap", "ConfigMap", "name"),
                               ("secret", "Secret", "secretName")):
            if src in v:
                _, obj = self.find(kind, (v[src] or {}).get(ref))
                if obj is None:
                    return None, None, f"lies in volume {v['name']}, whose {kind} is not in the set"
                items = (v[src] or {}).get("items")
                if items:
                    for it in items:
                        if it.get("path") == rel:
                            return kind, obj, it.get("key")
                    return kind, obj, None
                return kind, obj, rel
        return None, None, f"lies in volume {v['name']}, neither a ConfigMap nor a Secret"

    def check_container(self, where, what, sts, pod, c, volumes, used, svc, replicas):
        cname = c.get("name")
        if not isinstance(cname, str) or not DNS_LABEL.match(cname):
            self.fail(where, f"{what}: a container without a valid name ({cname!r})")
            cname = str(cname)
        cw = f"{what} container {cname}"
        if not isinstance(c.get("image"), str) or not c.get("image"):
            self.fail(where, f"{cw}: no image")

        # ports
        ports_by_name, port_numbers = {}, set()
        ports = c.get("ports") or []
        if not ports:
            self.fail(where, f"{cw}: no ports")
        for p in ports:
            num, pname = p.get("containerPort"), p.get("name")
            if not isinstance(num, int) or isinstance(num, bool) or not 0 < num < 65536:
                self.fail(where, f"{cw}: containerPort {num!r} is not a port number")
                continue
            if num in port_numbers:
                self.fail(where, f"{cw}: containerPort {num} twice")
            port_numbers.add(num)
            if pname is None:
                self.fail(where, f"{cw}: containerPort {num} has no name")
            elif not isinstance(pname, str) or not PORT_NAME.match(pname) or len(pname) > 15:
                self.fail(where, f"{cw}: port name {pname!r} is not an IANA service name "
                          "(lowercase, at most 15 characters)")
            elif pname in ports_by_name:
                self.fail(where, f"{cw}: port name {pname} twice")
            else:
                ports_by_name[pname] = num
        self.container_ports.append((sts, ports_by_name, port_numbers))

        def port_of(ref):
            if isinstance(ref, bool):
                return None
            if isinstance(ref, int):
                return ref if ref in port_numbers else None
            if isinstance(ref, str):
                return ports_by_name.get(ref)
            return None

        # env and $(VAR) references
        env = {}
        for e in c.get("env") or []:
            ename = e.get("name")
            if not isinstance(ename, str) or not ename:
                self.fail(where, f"{cw}: an env entry without a name")
                continue
            if ename in env:
                self.fail(where, f"{cw}: env {ename} twice")
            if "value" in e and not isinstance(e["value"], str):
                self.fail(where, f"{cw}: env {ename}: value {e['value']!r} is not a string (quote it)")
            if isinstance(e.get("value"), str):
                self.check_refs(where, cw, f"env {ename}", e["value"], env)
            env[ename] = e
        for field in ("command", "args"):
            for a in c.get(field) or []:
                if not isinstance(a, str):
                    self.fail(where, f"{cw}: {field} item {a!r} is not a string")
                else:
                    self.check_refs(where, cw, field, a, env)
        if "UCX_NET_DEVICES" not in env:
            self.fail(where, f"{cw}: no env UCX_NET_DEVICES (the pod's interface for UCX, e.g. eth0)")

        def field_path(var):
            e = env.get(var) or {}
            return (((e.get("valueFrom") or {}).get("fieldRef")) or {}).get("fieldPath")

        # volume mounts
        mounts = c.get("volumeMounts") or []
        paths = set()
        for m in mounts:
            mname, mp = m.get("name"), m.get("mountPath")
            if mname not in volumes:
                self.fail(where, f"{cw}: volumeMount {mname} names no volume of the pod")
            used.add(mname)
            if not isinstance(mp, str) or not mp.startswith("/"):
                self.fail(where, f"{cw}: volumeMount {mname}: mountPath {mp!r} is not absolute")
            elif mp in paths:
                self.fail(where, f"{cw}: mountPath {mp} twice")
            paths.add(mp)

        # the ferry command line
        argv = list(c.get("command") or []) + list(c.get("args") or [])
        argv = [a for a in argv if isinstance(a, str)]
        cli = self.parse_ferry_argv(where, cw, argv)
        config_path = cli.get("config")
        node = {}
        config_ok = True   # False: node.toml unreadable, its settings unknown
        if config_path is None:
            self.warn(where, f"{cw}: no --config FILE: node.toml is not read")
        else:
            kind, obj, key = self.resolve_file(config_path, mounts, volumes)
            config_ok = False
            if kind != "ConfigMap":
                self.fail(where, f"{cw}: --config {config_path} "
                          f"{key if kind is None else 'is in a ' + kind + ', not a ConfigMap'}")
            elif key not in self.object_keys(obj):
                self.fail(where, f"{cw}: --config {config_path}: ConfigMap "
                          f"{obj['metadata']['name']} has no key {key}")
            else:
                parsed = self.parse_node_toml(self.rel(self.file_of(obj)),
                                              f"ConfigMap/{obj['metadata']['name']}",
                                              (obj.get("data") or {}).get(key), key)
                config_ok = parsed is not None
                node = parsed or {}
                self.checked_tomls.add(id(obj))

        opts = self.options("node") or {}

        def default(option, fallback):
            d = (opts.get(option) or (None, None, False))[1]
            try:
                return int(d)
            except (TypeError, ValueError):
                return fallback

        # the node's settings: the command line wins over the file
        def setting(option, fallback=None):
            if option in cli["node"]:
                return cli["node"][option][-1]
            if option in node:
                return node[option]
            return fallback

        # tls files: in a Secret the pod mounts
        tls = [o for o in ("tls-ca", "tls-cert", "tls-key") if setting(o) is not None]
        if tls and len(tls) != 3:
            self.fail(where, f"{cw}: only {', '.join(tls)} set: mutual TLS needs "
                      "tls-ca, tls-cert and tls-key")
        for o in tls:
            p = setting(o)
            if not isinstance(p, str):
                continue
            kind, obj, key = self.resolve_file(p, mounts, volumes)
            if kind != "Secret":
                self.fail(where, f"{cw}: {o} {p} "
                          f"{key if kind is None else 'is in a ' + kind + ', not a Secret'}")
            elif key is None or key not in self.object_keys(obj):
                self.fail(where, f"{cw}: {o} {p}: Secret {obj['metadata']['name']} has no key "
                          f"{key or os.path.basename(p)} (or the volume's items do not map it)")

        # ports: gateway and metrics as the node listens on them
        gw = self.as_int(setting("port"))
        metrics = self.as_int(setting("metrics-port"))
        bind = setting("bind", "127.0.0.1")
        if not config_ok:
            self.warn(where, f"{cw}: node.toml unreadable: its ports, bind address and "
                      "shutdown timeout are not checked")
        else:
            if gw is None or gw == 0:
                self.fail(where, f"{cw}: the gateway port is not fixed (node.toml port / "
                          "--port): peers and --join need a known port")
            elif ports_by_name.get("gateway") != gw:
                self.fail(where, f"{cw}: containerPort `gateway` is "
                          f"{ports_by_name.get('gateway')}, the node listens on {gw}")
            if metrics is None or metrics <= 0:
                self.fail(where, f"{cw}: no fixed metrics-port: /metrics, /healthz and "
                          "/readyz are off")
            elif ports_by_name.get("metrics") != metrics:
                self.fail(where, f"{cw}: containerPort `metrics` is "
                          f"{ports_by_name.get('metrics')}, the node's metrics-port is {metrics}")
            if bind in ("127.0.0.1", "localhost", "::1"):
                self.fail(where, f"{cw}: the node binds {bind}: other pods and the kubelet's "
                          "probes cannot reach it (bind 0.0.0.0)")

        # probes: on a declared port (the metrics port), the right paths
        for probe, path, required in (("readinessProbe", "/readyz", True),
                                      ("livenessProbe", "/healthz", True),
                                      ("startupProbe", "/healthz", False)):
            pr = c.get(probe)
            if pr is None:
                if required:
                    self.fail(where, f"{cw}: no {probe} (httpGet {path})")
                continue
            hg = pr.get("httpGet")
            if not isinstance(hg, dict):
                self.fail(where, f"{cw}: {probe} is not an httpGet probe")
                continue
            if hg.get("path") != path:
                self.fail(where, f"{cw}: {probe} path {hg.get('path')!r}, want {path}")
            num = port_of(hg.get("port"))
            if num is None:
                self.fail(where, f"{cw}: {probe} port {hg.get('port')!r} is no declared containerPort")
            elif metrics and num != metrics:
                self.fail(where, f"{cw}: {probe} port {hg.get('port')} ({num}) is not the "
                          f"metrics port {metrics}")

        # prometheus annotations
        ann = ((sts["spec"].get("template") or {}).get("metadata") or {}).get("annotations") or {}
        if ann.get("prometheus.io/scrape") != "true":
            self.fail(where, f"{what}: no pod annotation prometheus.io/scrape: \"true\"")
        elif metrics and ann.get("prometheus.io/port") != str(metrics):
            self.fail(where, f"{what}: annotation prometheus.io/port "
                      f"{ann.get('prometheus.io/port')!r} is not the metrics port {metrics}")
        if ann.get("prometheus.io/path", "/metrics") != "/metrics":
            self.fail(where, f"{what}: annotation prometheus.io/path is not /metrics")

        # --advertise: the pod's own DNS name under the headless Service
        svc_name = svc["metadata"]["name"] if svc else sts["spec"].get("serviceName")
        advertise = setting("advertise")
        if config_ok and bind in ("0.0.0.0", "::") and not advertise:
            self.fail(where, f"{cw}: binds {bind} without --advertise: peers would be told {bind}")
        if isinstance(advertise, str):
            labels = advertise.split(".")
            m = VAR_REF.fullmatch(labels[0])
            if not m or field_path(m.group(2)) != "metadata.name":
                self.fail(where, f"{cw}: --advertise {advertise} does not start with $(VAR) "
                          "of fieldPath metadata.name (the pod's name)")
            if len(labels) < 2 or labels[1] != svc_name:
                self.fail(where, f"{cw}: --advertise {advertise}: the second label is not the "
                          f"headless Service {svc_name}")
            self.check_namespace_label(where, cw, "--advertise", labels, field_path)
        # --join: a pod of this set, on the gateway port
        for j in cli["node"].get("join", []):
            host, _, port = j.rpartition(":")
            labels = host.split(".")
            m = re.fullmatch(re.escape(sts["metadata"]["name"]) + r"-(\d+)", labels[0])
            if not host or not port.isdigit():
                self.fail(where, f"{cw}: --join {j} is not HOST:PORT")
                continue
            if not m or int(m.group(1)) >= replicas:
                self.fail(where, f"{cw}: --join {j}: {labels[0]} is not a pod of the StatefulSet "
                          f"({sts['metadata']['name']}-0 .. -{replicas - 1})")
            if len(labels) < 2 or labels[1] != svc_name:
                self.fail(where, f"{cw}: --join {j}: the second label is not the headless "
                          f"Service {svc_name}")
            self.check_namespace_label(where, cw, "--join", labels, field_path)
            if gw and int(port) != gw:
                self.fail(where, f"{cw}: --join {j}: port {port} is not the gateway port {gw}")

        # graceful shutdown fits in the grace period
        shutdown_ms = self.as_int(setting("shutdown-timeout-ms", default("shutdown-timeout-ms", 30000)))
        grace = pod.get("terminationGracePeriodSeconds", 30)
        if config_ok and shutdown_ms is not None and \
                (not isinstance(grace, int) or grace * 1000 <= shutdown_ms):
            self.fail(where, f"{what}: terminationGracePeriodSeconds {grace!r} is not longer "
                      f"than the shutdown timeout ({shutdown_ms} ms): the kubelet would SIGKILL "
                      "a draining node")

        # registered memory: IPC_LOCK
        caps = ((c.get("securityContext") or {}).get("capabilities") or {})
        if "IPC_LOCK" not in (caps.get("add") or []):
            self.fail(where, f"{cw}: securityContext.capabilities.add lacks IPC_LOCK "
                      "(registered memory is pinned beyond RLIMIT_MEMLOCK)")

    def check_namespace_label(self, where, cw, opt, labels, field_path):
        if len(labels) > 2:
            m = VAR_REF.fullmatch(labels[2])
            if m and field_path(m.group(2)) != "metadata.namespace":
                self.fail(where, f"{cw}: {opt} {'.'.join(labels)}: $({m.group(2)}) is not "
                          "of fieldPath metadata.namespace")

    def check_refs(self, where, cw, field, value, env):
        for m in VAR_REF.finditer(value):
            if len(m.group(1)) % 2 == 0:
                continue  # $$(X) is an escaped literal
            if m.group(2) not in env:
                self.fail(where, f"{cw}: {field} {value!r}: $({m.group(2)}) is no env var "
                          "declared before it (Kubernetes leaves it unexpanded)")

    @staticmethod
    def as_int(v):
        if isinstance(v, bool):
            return None
        if isinstance(v, int):
            return v
        if isinstance(v, str) and re.fullmatch(r"-?\d+", v):
            return int(v)
        return None

    def file_of(self, obj):
        for f, d in self.docs:
            if d is obj:
                return f
        return self.dir

    def parse_ferry_argv(self, where, cw, argv):
        """{'config': FILE or None, 'node': {option: [values]}} of a
        `ferry [--config FILE] node ...` command line."""
        out = {"config": None, "node": {}}
        if not argv or os.path.basename(argv[0]) != "ferry":
            self.fail(where, f"{cw}: the command is not ferry ({argv[:1]})")
            return out
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            a = argv[i]
            if a == "--config" and i + 1 < len(argv):
                out["config"] = argv[i + 1]
                i += 2
            elif a.startswith("--config="):
                out["config"] = a.split("=", 1)[1]
                i += 1
            else:
                self.fail(where, f"{cw}: {a} before the subcommand is not --config FILE")
                i += 1
        if i >= len(argv) or argv[i] != "node":
            self.fail(where, f"{cw}: the subcommand is not node ({argv[i:i + 1]})")
            return out
        i += 1
        opts = self.options("node") or {}
        while i < len(argv):
            a = argv[i]
            if not a.startswith("--"):
                self.fail(where, f"{cw}: {a!r} is not an option of `ferry node`")
                i += 1
                continue
            name, eq, value = a[2:].partition("=")
            self.check_option(where, cw, "node", name)
            flag = name in opts and opts[name][0] is None
            if not eq and not flag:
                if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                    self.fail(where, f"{cw}: --{name} has no value")
                    value = None
                else:
                    value = argv[i + 1]
                    i += 1
            out["node"].setdefault(name, []).append(value)
            i += 1
        return out

    # ---- ConfigMap / node.toml ---------------------------------------------
    def check_configmaps(self):
        for f, cm in self.objects("ConfigMap"):
            where = self.rel(f)
            what = f"ConfigMap/{cm['metadata']['name']}"
            data = cm.get("data") or {}
            if not isinstance(data, dict):
                self.fail(where, f"{what}: data is not a mapping")
                continue
            for k, v in data.items():
                if not isinstance(k, str) or not KEY_NAME.match(k):
                    self.fail(where, f"{what}: key {k!r} is not a valid key name")
                if not isinstance(v, str):
                    self.fail(where, f"{what}: data {k} is not a string")
            if id(cm) not in self.checked_tomls and "node.toml" in data:
                self.parse_node_toml(where, what, data["node.toml"], "node.toml")
        if not any("node.toml" in (cm.get("data") or {}) for _, cm in self.objects("ConfigMap")):
            self.fail(self.dir, "no ConfigMap with a node.toml")

    def parse_node_toml(self, where, what, text, key):
        """The [node] table of a node.toml, its keys and values checked."""
        if not isinstance(text, str):
            self.fail(where, f"{what}: {key} is not a string")
            return None
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            self.fail(where, f"{what}: {key} does not parse as TOML: {e}")
            return None
        for k, v in doc.items():
            if not isinstance(v, dict):
                self.fail(where, f"{what}: {key}: top-level key {k} belongs in the [node] "
                          "table (ferry reads the subcommand's options from [node])")
        node = doc.get("node")
        if not isinstance(node, dict):
            self.fail(where, f"{what}: {key} has no [node] table")
            return None
        opts = self.options("node")
        for k, v in node.items():
            kw = f"{what}: {key} [node] {k}"
            if isinstance(v, dict):
                self.fail(where, f"{kw} is a table, not an option value")
                continue
            if not self.check_option(where, kw, "node", k) or opts is None or k not in opts:
                continue
            typ, _, multi = opts[k]
            values = v if isinstance(v, list) else [v]
            if isinstance(v, list) and not multi:
                self.fail(where, f"{kw}: a list, but --{k} takes one value")
            for x in values:
                ok = {
                    "UINT": isinstance(x, int) and not isinstance(x, bool) and x >= 0,
                    "INT": isinstance(x, int) and not isinstance(x, bool),
                    "BOOLEAN": isinstance(x, bool),
                    "TEXT": isinstance(x, str),
                    "FLOAT": isinstance(x, (int, float)) and not isinstance(x, bool),
                    None: isinstance(x, bool),
                }.get(typ, True)
                if not ok:
                    self.fail(where, f"{kw} = {x!r} is not a {typ or 'flag (true/false)'}")
                choices = self.choices.get(("node", k))
                if ok and choices and str(x) not in choices:
                    self.fail(where, f"{kw} = {x!r} is not one of {', '.join(choices)}")
        return node

    # ---- Service -----------------------------------------------------------
    def check_services(self):
        for f, svc in self.objects("Service"):
            where = self.rel(f)
            what = f"Service/{svc['metadata']['name']}"
            spec = svc.get("spec") or {}
            sel = spec.get("selector")
            if not isinstance(sel, dict) or not sel:
                self.fail(where, f"{what}: no spec.selector")
                continue
            targets = []
            for sts, by_name, numbers in getattr(self, "container_ports", []):
                labels = ((sts["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
                if all(labels.get(k) == v for k, v in sel.items()):
                    targets.append((by_name, numbers))
            if not targets:
                self.fail(where, f"{what}: selector {sel} matches the pods of no StatefulSet")
            ports = spec.get("ports") or []
            if not ports:
                self.fail(where, f"{what}: no ports")
            names = set()
            for p in ports:
                port, pname = p.get("port"), p.get("name")
                if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                    self.fail(where, f"{what}: port {port!r} is not a port number")
                    continue
                if len(ports) > 1 and not pname:
                    self.fail(where, f"{what}: port {port} has no name (needed with several ports)")
                if pname in names:
                    self.fail(where, f"{what}: port name {pname} twice")
                names.add(pname)
                target = p.get("targetPort", port)
                for by_name, numbers in targets:
                    if not ((isinstance(target, str) and target in by_name)
                            or (isinstance(target, int) and target in numbers)):
                        self.fail(where, f"{what}: port {port}: targetPort {target!r} is no "
                                  "containerPort of the selected pods")

    # ---- Secret --------------------------------------------------------------
    def check_secrets(self):
        for f, sec in self.objects("Secret"):
            where = self.rel(f)
            what = f"Secret/{sec['metadata']['name']}"
            typ = sec.get("type", "Opaque")
            keys = self.object_keys(sec)
            if typ == "kubernetes.io/tls" and not {"tls.crt", "tls.key"} <= keys:
                self.fail(where, f"{what}: type kubernetes.io/tls needs keys tls.crt and tls.key "
                          "(use type Opaque for ca.pem, node.pem, node-key.pem)")
            if not keys:
                self.fail(where, f"{what}: no data")
            for field in ("data", "stringData"):
                m = sec.get(field)
                if m is None:
                    continue
                if not isinstance(m, dict):
                    self.fail(where, f"{what}: {field} is not a mapping")
                    continue
                for k, v in m.items():
                    if not isinstance(k, str) or not KEY_NAME.match(k):
                        self.fail(where, f"{what}: key {k!r} is not a valid key name")
                    if not isinstance(v, str):
                        self.fail(where, f"{what}: {field} {k} is not a string")
                    elif field == "data":
                        try:
                            base64.b64decode("".join(v.split()), validate=True)
                        except (binascii.Error, ValueError):
                            self.fail(where, f"{what}: data {k} is not base64 "
                                      "(plain text goes under stringData)")
            if any(isinstance(v, str) and "REPLACE-ME" in v
                   for v in (sec.get("stringData") or {}).values()):
                self.notes.add(f"note: {where} is still the template (placeholders, not "
                               "certificates); see the comment in it")

    # ---- Kustomization ---------------------------------------------------------
    def check_kustomization(self):
        ks = [(f, d) for f, d in self.docs
              if isinstance(d, dict) and d.get("kind") == "Kustomization"]
        if not ks:
            self.fail(self.dir, "no kustomization.yaml (kubectl apply -k)")
        for f, k in ks:
            where = self.rel(f)
            base = os.path.dirname(f)
            listed = set()
            resources = k.get("resources") or []
            if not resources:
                self.fail(where, "no resources")
            for r in resources:
                p = os.path.normpath(os.path.join(base, str(r)))
                listed.add(p)
                if not os.path.exists(p):
                    self.fail(where, f"resource {r} does not exist")
            for df, d in self.docs:
                if (os.path.dirname(df) == base and d is not k and isinstance(d, dict)
                        and d.get("kind") != "Kustomization" and os.path.normpath(df) not in listed):
                    self.fail(where, f"{self.rel(df)} ({d.get('kind')}) is not among the resources")
            images = set()
            for _, sts in self.objects("StatefulSet"):
                for c in (((sts.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []:
                    img = str(c.get("image", ""))
                    images.add(re.sub(r"(@.*|:[^/:]*)$", "", img))
            for im in k.get("images") or []:
                if im.get("name") not in images:
                    self.fail(where, f"images: {im.get('name')} is no container image "
                              f"({', '.join(sorted(images))})")

    # ---- Dockerfile ------------------------------------------------------------
    def check_dockerfile(self):
        path = os.path.join(self.dir, "Dockerfile")
        where = self.rel(path)
        if not os.path.isfile(path):
            self.fail(self.dir, "no Dockerfile")
            return
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        # instructions, continuation lines joined, comments dropped
        insns, cur = [], ""
        for line in text.splitlines():
            s = line.strip()
            if not cur and (not s or s.startswith("#")):
                continue
            if cur and s.startswith("#"):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            insns.append(cur)
            cur = ""
        if cur:
            insns.append(cur)
        args, stages, order = {}, {}, []
        stage = None
        for ins in insns:
            word, _, rest = ins.partition(" ")
            word = word.upper()
            if word == "ARG" and stage is None:
                n, _, v = rest.strip().partition("=")
                args[n.strip()] = v.strip().strip('"')
            elif word == "FROM":
                toks = [t for t in rest.split() if not t.startswith("--")]
                image = toks[0] if toks else ""
                name = toks[2] if len(toks) >= 3 and toks[1].lower() == "as" else f"#{len(order)}"
                stage = {"name": name, "from": image, "insns": []}
                stages[name] = stage
                order.append(stage)
            elif stage is not None:
                stage["insns"].append((word, rest))
        if not order:
            self.fail(where, "no FROM")
            return

        def expand(s):
            return re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), s)

        if not any(re.match(r"^debian:bookworm", st["from"]) for st in order):
            self.fail(where, "no FROM debian:bookworm* (Debian 12)")
        for st in order:
            img = expand(st["from"])
            if img in stages or "$" in st["from"]:
                continue
            if not img.startswith("debian:bookworm"):
                self.fail(where, f"FROM {st['from']}: not a debian:bookworm image")

        def installs(st, seen=()):
            if st["name"] in seen:
                return False
            deb_copied = deb_installed = binary = False
            for word, rest in st["insns"]:
                if word in ("COPY", "ADD"):
                    toks = [t for t in rest.split() if not t.startswith("--")]
                    if any(re.search(r"ferry_\*?[^/]*\.deb$", t) for t in toks[:-1]):
                        deb_copied = True
                    if toks and toks[-1] in ("/usr/bin/ferry", "/usr/local/bin/ferry") and \
                            (any(t.endswith("build/apps/ferry") for t in toks[:-1]) or "--from=" in rest):
                        binary = True
                if word == "RUN" and re.search(r"apt(-get)?\s+install[^&;|]*ferry_\*?[^ ]*\.deb", rest):
                    deb_installed = True
            if (deb_copied and deb_installed) or binary:
                return True
            base = stages.get(expand(st["from"]))
            return base is not None and installs(base, seen + (st["name"],))

        final = order[-1]
        final_base = expand(final["from"])
        if "$" in final_base:
            self.fail(where, f"FROM {final['from']}: an ARG without a default")
        elif not installs(final):
            self.fail(where, f"the image (default stage {final_base}) neither installs ferry's "
                      ".deb (COPY ferry_*.deb + apt-get install ./ferry_*.deb) nor copies "
                      "build/apps/ferry to /usr/bin/ferry")
        if "$" in final["from"]:
            pat = re.sub(r"\$\{?\w+\}?", "(.+)", re.escape(final["from"]).replace(r"\$", "$")
                         .replace(r"\{", "{").replace(r"\}", "}"))
            alts = [st for st in order if re.fullmatch(pat, st["name"])]
            for st in alts:
                if not installs(st):
                    self.fail(where, f"stage {st['name']} (an alternative of FROM "
                              f"{final['from']}) does not install ferry")
            if len(alts) < 2:
                self.warn(where, f"FROM {final['from']}: fewer than two stages to choose from")

        # COPY sources against the build context (the repository root)
        ignore = os.path.join(self.dir, "Dockerfile.dockerignore")
        patterns = []
        if os.path.isfile(ignore):
            with open(ignore, encoding="utf-8") as fh:
                patterns = [l.strip() for l in fh if l.strip() and not l.lstrip().startswith("#")]
        for st in order:
            for word, rest in st["insns"]:
                if word not in ("COPY", "ADD") or "--from=" in rest:
                    continue
                for src in [t for t in rest.split() if not t.startswith("--")][:-1]:
                    src = src.rstrip("/")
                    if self.docker_ignored(patterns, src):
                        self.fail(where, f"COPY {src}: excluded by Dockerfile.dockerignore")
                    if not re.search(r"[*?\[]", src) and not os.path.exists(os.path.join(REPO, src)) \
                            and not src.startswith("build/"):
                        self.fail(where, f"COPY {src}: no such path in the repository")

    @staticmethod
    def docker_ignored(patterns, path):
        def match(pat, p):
            rx = "".join("[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
                         for ch in pat.strip("/"))
            parts = p.split("/")
            return any(re.fullmatch(rx, "/".join(parts[:n])) for n in range(1, len(parts) + 1))
        ignored = False
        for pat in patterns:
            neg = pat.startswith("!")
            pat = pat[1:] if neg else pat
            if match(pat, path):
                ignored = not neg
        return ignored

    # ---- all -----------------------------------------------------------------------
    def run(self):
        self.checked_tomls = set()
        self.container_ports = []
        self.load()
        for check in (self.check_common, self.check_statefulsets, self.check_configmaps,
                      self.check_services, self.check_secrets, self.check_kustomization,
                      self.check_dockerfile):
            try:
                check()
            except Exception as e:  # a manifest of a shape the checks do not expect
                self.fail(self.dir, f"{check.__name__} stopped: {type(e).__name__}: {e} "
                          "(a field of an unexpected type?)")
        if not os.path.isfile(os.path.join(self.dir, "README.md")):
            self.fail(self.dir, "no README.md")
        for w in self.warnings:
            print(w)
        for n in sorted(self.notes):
            print(n)
        for f in self.failures:
            print(f)
        n = len(self.docs)
        if self.failures:
            print(f"check_k8s: {len(self.failures)} failure(s) in {self.dir} ({n} objects)")
            return 1
        print(f"check_k8s: ok ({n} objects, Dockerfile"
              f"{', option names unchecked: no ferry binary' if self.ferry_missing else ''})")
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(REPO, "deploy", "k8s"))
    ap.add_argument("--ferry-bin", default=os.environ.get("FERRY_BIN")
                    or os.path.join(REPO, "build", "apps", "ferry"))
    a = ap.parse_args()
    sys.exit(Checker(os.path.abspath(a.dir), a.ferry_bin).run())


if __name__ == "__main__":
    main()
