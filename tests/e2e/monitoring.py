"""A real Prometheus fed the way the prometheus-operator would feed it, scraping stand-in engines.

No engine runs here (no GPU runs vLLM), so each replica's ``/metrics`` is served by
``Engines``: ``vllm:num_requests_waiting`` and ``vllm:kv_cache_usage_perc``, the
deployment's waiting requests (set by the test) shared evenly over its Ready
replicas. A replica that is not Ready answers 503, so its scrape fails and ``up``
is 0, as for an engine still loading its weights.

``Operator`` stands in for the prometheus-operator: it reads the PodMonitors and
PrometheusRules Modelplane composed on the workload API servers and turns them
into Prometheus' own configuration: a file-discovered target per PodMonitor,
labelled as its relabelings say (plus ``namespace``, as the operator adds), and
a rule file per PrometheusRule, reloaded when they change. The recording rules
Prometheus evaluates are the ones Modelplane composed, unchanged.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from modelplane import kinds
from modelplane.monitoring import DEPLOYMENT_METRIC_LABEL, MONITORING_API_VERSION, REPLICA_METRIC_LABEL
from tests.e2e.kube import Kube, is_true
from tests.e2e.procs import Supervisor, wait_for

# Short scrape and evaluation intervals: the scenario waits on them.
INTERVAL = "1s"
POLL = 0.5


@dataclass(frozen=True)
class _Replica:
    namespace: str
    deployment: str
    name: str


class Engines:
    """Every replica's stand-in ``/metrics``, on one loopback port, at ``/<namespace>/<replica>/metrics``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[str, str], float] = {}
        self._ready: dict[_Replica, bool] = {}
        engines = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = engines.exposition(self.path)
                self.send_response(200 if body is not None else 503)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write((body or "not serving\n").encode())

            def log_message(self, *_args: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="engines", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def path(namespace: str, replica: str) -> str:
        return f"/{namespace}/{replica}/metrics"

    def set_waiting(self, namespace: str, deployment: str, requests: float) -> None:
        """The requests waiting in all of ``deployment``'s engines together (the load the test applies)."""
        with self._lock:
            self._waiting[namespace, deployment] = requests

    def set_replicas(self, ready: Mapping[_Replica, bool]) -> None:
        with self._lock:
            self._ready = dict(ready)

    def exposition(self, path: str) -> str | None:
        """The metrics of the replica at ``path``; None when it is unknown or not Ready (it is not serving)."""
        parts = path.strip("/").split("/")
        if len(parts) != 3 or parts[2] != "metrics":
            return None
        namespace, name = parts[0], parts[1]
        with self._lock:
            replica = next((r for r in self._ready if (r.namespace, r.name) == (namespace, name)), None)
            if replica is None or not self._ready[replica]:
                return None
            key = (replica.namespace, replica.deployment)
            serving = sum(1 for r, up in self._ready.items() if up and (r.namespace, r.deployment) == key)
            waiting = self._waiting.get(key, 0.0) / max(serving, 1)
        kv = min(1.0, 0.1 + waiting / 50)
        model = f'model_name="{replica.deployment}"'
        return (
            "# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{{{model}}} {waiting}\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{{{model}}} {kv}\n"
        )


class Prometheus:
    """Debian's Prometheus, scraping file-discovered targets and loading a directory of rule files."""

    def __init__(self, sup: Supervisor, binary: Path, work: Path, port: int) -> None:
        self.dir = work
        self.targets = work / "targets.json"
        self.rules = work / "rules"
        self.rules.mkdir(parents=True, exist_ok=True)
        self.targets.write_text("[]")
        self.url = f"http://127.0.0.1:{port}"
        config = {
            "global": {"scrape_interval": INTERVAL, "scrape_timeout": INTERVAL, "evaluation_interval": INTERVAL},
            "rule_files": [str(self.rules / "*.yaml")],
            "scrape_configs": [
                {"job_name": "engines", "file_sd_configs": [{"files": [str(self.targets)], "refresh_interval": "1s"}]}
            ],
        }
        (work / "prometheus.yml").write_text(yaml.safe_dump(config))
        sup.start(
            "prometheus",
            [
                str(binary),
                f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-lifecycle",
            ],
        )

    def wait_ready(self) -> None:
        def ready() -> bool:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as rsp:  # noqa: S310 - our loopback server
                return bool(rsp.status == 200)

        wait_for("Prometheus /-/ready", ready, timeout=60)

    def reload(self) -> None:
        request = urllib.request.Request(f"{self.url}/-/reload", method="POST")  # noqa: S310 - our loopback server
        with urllib.request.urlopen(request, timeout=5):  # noqa: S310
            pass

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=5) as rsp:  # noqa: S310 - our loopback server
            body = json.loads(rsp.read())
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, expr: str) -> float | None:
        """The single value ``expr`` evaluates to now; None when it has no series."""
        found = self.query(expr)
        return float(found[0]["value"][1]) if found else None


class Operator:
    """The prometheus-operator stand-in: PodMonitors and PrometheusRules on the workload servers into Prometheus."""

    def __init__(self, control: Kube, workloads: Mapping[str, Kube], prometheus: Prometheus, engines: Engines) -> None:
        self.control = control
        self.workloads = workloads
        self.prometheus = prometheus
        self.engines = engines
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="prometheus-operator", daemon=True)
        self._rules: dict[str, str] = {}
        self._targets = ""
        self.errors: list[str] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            try:
                self.sync()
            except Exception as err:  # noqa: BLE001 - a failed round is retried; the last errors are kept
                self.errors = [*self.errors[-9:], f"{time.strftime('%X')} {err!r}"]

    def sync(self) -> None:
        """One round: targets and replica readiness from the PodMonitors, rule files from the PrometheusRules."""
        targets, replicas = [], {}
        rules: dict[str, str] = {}
        for cluster, kube in sorted(self.workloads.items()):
            for monitor in kube.list(MONITORING_API_VERSION, "PodMonitor"):
                target = self._target(monitor)
                if target is None:
                    continue
                labels = target["labels"]
                replica = _Replica(labels["namespace"], labels[DEPLOYMENT_METRIC_LABEL], labels[REPLICA_METRIC_LABEL])
                replicas[replica] = is_true(
                    self.control.get(kinds.API_VERSION, "ModelReplica", replica.name, replica.namespace), "Ready"
                )
                targets.append(target)
            for rule in kube.list(MONITORING_API_VERSION, "PrometheusRule"):
                meta = rule["metadata"]
                groups = (rule.get("spec") or {}).get("groups") or []
                rules[f"{cluster}-{meta['namespace']}-{meta['name']}.yaml"] = yaml.safe_dump({"groups": groups})
        self.engines.set_replicas(replicas)
        text = json.dumps(sorted(targets, key=lambda t: json.dumps(t, sort_keys=True)), sort_keys=True)
        if text != self._targets:
            staged = self.prometheus.targets.with_suffix(".tmp")
            staged.write_text(text)
            staged.replace(self.prometheus.targets)
            self._targets = text
        if rules != self._rules:
            for stale in set(self._rules) - set(rules):
                (self.prometheus.rules / stale).unlink(missing_ok=True)
            for name, body in rules.items():
                (self.prometheus.rules / name).write_text(body)
            self.prometheus.reload()
            self._rules = rules

    def _target(self, monitor: Mapping[str, Any]) -> dict[str, Any] | None:
        """The file_sd entry for a PodMonitor's engine: its relabelings' labels, and ``namespace``."""
        meta = monitor["metadata"]
        endpoints = (monitor.get("spec") or {}).get("podMetricsEndpoints") or []
        if not endpoints:
            return None
        labels = {
            str(r["targetLabel"]): str(r["replacement"])
            for r in endpoints[0].get("relabelings") or []
            if r.get("action", "replace") == "replace" and "targetLabel" in r and "replacement" in r
        }
        if DEPLOYMENT_METRIC_LABEL not in labels or REPLICA_METRIC_LABEL not in labels:
            return None
        labels["namespace"] = str(meta["namespace"])
        labels["__metrics_path__"] = self.engines.path(labels["namespace"], labels[REPLICA_METRIC_LABEL])
        return {"targets": [f"127.0.0.1:{self.engines.port}"], "labels": labels}
