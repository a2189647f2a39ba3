"""A timeline of the chain a replica's readiness travels, to find which link a slow wait spends its time in.

Started by the tier when ``MODELPLANE_E2E_TIMELINE`` is set (its log is
``timeline.log`` in the run's log directory; keep it with
``MODELPLANE_E2E_KEEP_LOGS``): one ``kubectl get --watch`` per kind, each change
printed with the time it was seen, the object's resourceVersion, its conditions
(``type=status/reason``) and, for a provider-kubernetes Object, the conditions of
the remote object it last observed. Read beside provider-kubernetes' and
Crossplane core's logs (``MODELPLANE_E2E_DEBUG``), it shows e.g. a workload
Ready on its cluster at t, its Object Ready at t + 28 s, the ModelReplica at
t + 28.1 s.

    python -m tests.e2e.timeline KUBECTL SERVER=KUBECONFIG:RESOURCE[,RESOURCE...] ...
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

# What the tier records, by API server: the control plane's chain and the workloads on each workload server.
CONTROL_PLANE_KINDS = (
    "objects.kubernetes.m.crossplane.io",
    "modelreplicas.modelplane.ai",
    "modeldeployments.modelplane.ai",
    "inferenceclusters.modelplane.ai",
    "servingstacks.modelplane.ai",
)
WORKLOAD_KINDS = ("llminferenceservices.serving.kserve.io", "deployments.apps")
# The kubectl processes started, ended by their PID when this process is told to stop.
_CHILDREN: list[subprocess.Popen[str]] = []


def _conditions(obj: Mapping[str, Any]) -> str:
    found = (obj.get("status") or {}).get("conditions") or []
    return ",".join(f"{c.get('type')}={c.get('status')}/{c.get('reason', '')}" for c in found)


def summary(obj: Mapping[str, Any]) -> str:
    """One line about ``obj``: resourceVersion, generation, being deleted, conditions, what it carries."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    line = f"rv={meta.get('resourceVersion')} gen={meta.get('generation')}"
    if meta.get("deletionTimestamp"):
        line += " deleting"
    line += f" [{_conditions(obj)}]"
    if obj.get("kind") == "Object":
        remote = (status.get("atProvider") or {}).get("manifest") or {}
        line += f" remote {remote.get('kind', '-')}/{(remote.get('metadata') or {}).get('name', '-')}"
        line += f" [{_conditions(remote)}]"
    if "readyVerdict" in status:
        line += f" readyVerdict={status.get('readyVerdict')}"
    if "readyReplicas" in status:
        line += f" readyReplicas={status.get('readyReplicas')}"
    if obj.get("kind") == "InferenceCluster":
        capacity = status.get("capacity") or {}
        pools = ";".join(f"{p.get('name')}:{p.get('nodesByFree')}" for p in capacity.get("pools") or [])
        line += f" pools {pools or '-'} overcommitted {capacity.get('overcommitted') or []}"
    if obj.get("kind") == "ModelReplica":
        line += f" on {((obj.get('spec') or {}).get('inferenceClusterRef') or {}).get('name', '-')}"
    return line


def _watch(kubectl: str, server: str, kubeconfig: str, resource: str, out: TextIO, lock: threading.Lock) -> None:
    argv = [kubectl, f"--kubeconfig={kubeconfig}", "get", resource, "-A", "--watch", "-o", "json"]
    while True:
        proc = subprocess.Popen([*argv, "--output-watch-events"], stdout=subprocess.PIPE, text=True)
        _CHILDREN.append(proc)
        assert proc.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for chunk in proc.stdout:
            buffer += chunk
            try:
                event, _ = decoder.raw_decode(buffer.strip())
            except ValueError:
                continue  # an event spans several lines
            buffer = ""
            obj = event.get("object") or {}
            meta = obj.get("metadata") or {}
            now = time.time()
            stamp = time.strftime("%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}"
            where = f"{meta.get('namespace', '')}/{meta.get('name')}"
            with lock:
                out.write(f"{stamp} {server} {event.get('type')} {obj.get('kind')} {where} {summary(obj)}\n")
                out.flush()
        proc.wait()
        time.sleep(1)  # the API server ended the watch: start another


def _stop(_signum: int, _frame: object) -> None:
    for proc in _CHILDREN:
        proc.terminate()
    sys.exit(0)


def main(argv: Sequence[str]) -> None:
    signal.signal(signal.SIGTERM, _stop)
    kubectl, *specs = argv
    lock = threading.Lock()
    threads = []
    for spec in specs:
        target, _, resources = spec.rpartition(":")
        server, _, kubeconfig = target.partition("=")
        for resource in resources.split(","):
            args = (kubectl, server, kubeconfig, resource, sys.stdout, lock)
            threads.append(threading.Thread(target=_watch, args=args, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main(sys.argv[1:])
