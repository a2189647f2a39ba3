"""Real Kueue on a workload API server: its manager out of cluster on loopback, its webhooks registered by URL.

Kueue holds a queued workload with its webhooks (a pod of a queued Deployment gets
the ``kueue.x-k8s.io/admission`` scheduling gate on create) and admits it by its
ClusterQueue's quota. Out of cluster that takes three things the Helm chart would do:

- the webhooks: Kueue's own webhook manifests (shipped with the binary by
  ``tools/e2e/tools.sh``), each pointed at ``https://127.0.0.1:<port>/<path>``
  with the tier's CA; only those for the kinds Modelplane's workloads are and
  Kueue's own, and, as the chart does, the pod-based ones only for the namespaces
  Kueue manages;
- a serving certificate for 127.0.0.1 (internal certificate management off: it
  issues certificates for a Service name the API server cannot reach here);
- with that off, Kueue reads a metrics certificate from a fixed path
  (``/etc/kueue/metrics/certs``, a Secret volume in a cluster): the process runs in
  a private mount namespace where an overlay of /etc holds it (the host's /etc is
  untouched).

Only the integrations Modelplane's composed workloads use are on: ``pod`` and
``deployment`` (the Native backend's Deployments), ``leaderworkerset.x-k8s.io/
leaderworkerset`` (multi-node workers). Kueue manages only the namespaces given
(``managedJobsNamespaceSelector``), so the other scenarios on the same API server
run as before.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests import loopback
from tests.e2e.kube import ApiError, Kube
from tests.e2e.plane import (
    SHARED_CRDS,
    ApiServer,
    apply_crds,
    ensure_namespace,
    free_port,
    wait_established,
    yaml_documents,
)
from tests.e2e.procs import Process, Supervisor, wait_for
from tests.pki import CA

NAMESPACE = "kueue-system"
WEBHOOKS_NAME = "modelplane-e2e-kueue"
INTEGRATIONS = ("pod", "deployment", "leaderworkerset.x-k8s.io/leaderworkerset")
# The API groups of the webhooks registered: Kueue's own kinds and the workloads Modelplane composes.
WEBHOOK_GROUPS = frozenset({"", "apps", "kueue.x-k8s.io", "leaderworkerset.x-k8s.io"})
# Webhooks on these resources act on user workloads: limited to the managed namespaces, as the chart does.
POD_BASED = frozenset({"pods", "deployments", "statefulsets", "leaderworkersets"})
METRICS_CERTS = "/etc/kueue/metrics/certs"
START_TIMEOUT = 120.0


def namespace_selector(namespaces: Iterable[str]) -> dict[str, Any]:
    """A selector of the namespaces named (by the label the API server sets on every namespace)."""
    return {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(namespaces)}]
    }


def configuration(*, webhook_port: int, health_port: int, cert_dir: Path, namespaces: Iterable[str]) -> dict[str, Any]:
    """Kueue's Configuration: loopback only, no leader election, no internal certificates, our integrations."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": namespace_selector(namespaces),
        "integrations": {"frameworks": list(INTEGRATIONS)},
    }


def webhook_configurations(
    manifests: Iterable[Mapping[str, Any]], *, port: int, ca_pem: bytes, namespaces: Iterable[str]
) -> list[dict[str, Any]]:
    """Kueue's Mutating/ValidatingWebhookConfigurations, served at ``https://127.0.0.1:<port>``.

    Kept: the webhooks whose rules are all on ``WEBHOOK_GROUPS``; the pod-based ones get the
    managed namespaces' selector.
    """
    import base64  # noqa: PLC0415 - only here

    bundle = base64.b64encode(ca_pem).decode()
    out = []
    selector = namespace_selector(namespaces)
    for doc in manifests:
        if doc.get("kind") not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        hooks = []
        for hook in doc.get("webhooks") or []:
            rules = hook.get("rules") or []
            groups = {g for r in rules for g in r.get("apiGroups") or []}
            if not rules or not groups <= WEBHOOK_GROUPS:
                continue
            path = hook["clientConfig"]["service"]["path"]
            kept = {k: v for k, v in hook.items() if k != "clientConfig"}
            kept["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            if {res for r in rules for res in r.get("resources") or []} & POD_BASED:
                kept["namespaceSelector"] = selector
            kept["timeoutSeconds"] = 10
            hooks.append(kept)
        kind = str(doc["kind"])
        out.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": f"{WEBHOOKS_NAME}-{kind.removesuffix('WebhookConfiguration').lower()}"},
                "webhooks": hooks,
            }
        )
    return out


@dataclass
class Kueue:
    """One running Kueue manager and the webhook configurations that route to it."""

    server: ApiServer
    sup: Supervisor
    process: Process
    webhooks: list[dict[str, Any]]
    work: Path

    def stop(self) -> None:
        """Unregister the webhooks first (pods must not wait on a stopped server), then stop Kueue by PID."""
        for hook in self.webhooks:
            with contextlib.suppress(ApiError):
                self.server.kube.delete(hook["apiVersion"], hook["kind"], hook["metadata"]["name"])
        self.sup.stop_one(self.process)
        shutil.rmtree(self.work / "overlay", ignore_errors=True)


def start(
    sup: Supervisor,
    ca: CA,
    server: ApiServer,
    *,
    binary: Path,
    config_dir: Path,
    work: Path,
    namespaces: Iterable[str],
) -> Kueue:
    """Install Kueue's CRDs on ``server``, start Kueue against it, register its webhooks once it serves."""
    managed = sorted(namespaces)
    kube = server.kube
    crds = apply_crds(kube, yaml_documents([SHARED_CRDS / "kueue"]))
    wait_established(kube, crds)
    ensure_namespace(kube, NAMESPACE)
    work.mkdir(parents=True, exist_ok=True)
    tls = ca.issue(f"kueue-{server.name}")
    webhook_port, health_port = free_port(), free_port()
    config = work / "kueue-config.yaml"
    config.write_text(
        yaml.safe_dump(
            configuration(webhook_port=webhook_port, health_port=health_port, cert_dir=tls.path, namespaces=managed)
        )
    )
    process = sup.start(f"kueue-{server.name}", _argv(binary, config, kube, tls.path, work))
    kueue = Kueue(server, sup, process, [], work)
    try:
        wait_for(
            f"Kueue on {server.name} to be ready",
            lambda: _ready(sup, health_port) and loopback.listening(webhook_port),
            timeout=START_TIMEOUT,
        )
        manifests = yaml_documents([config_dir / "webhook-manifests.yaml"])
        kueue.webhooks = webhook_configurations(manifests, port=webhook_port, ca_pem=ca.pem, namespaces=managed)
        for hook in kueue.webhooks:
            kube.apply(hook)
    except BaseException:
        kueue.stop()
        raise
    return kueue


def _argv(binary: Path, config: Path, kube: Kube, certs: Path, work: Path) -> list[str]:
    """Kueue in a private mount namespace whose /etc (an overlay) holds its metrics certificate."""
    upper, scratch = work / "overlay" / "upper", work / "overlay" / "work"
    upper.mkdir(parents=True, exist_ok=True)
    scratch.mkdir(parents=True, exist_ok=True)
    q = shlex.quote
    script = " && ".join(
        [
            f"mount -t overlay overlay -o lowerdir=/etc,upperdir={q(str(upper))},workdir={q(str(scratch))} /etc",
            f"mkdir -p {METRICS_CERTS}",
            f"cp {q(str(certs / 'tls.crt'))} {q(str(certs / 'tls.key'))} {METRICS_CERTS}/",
            f"KUBECONFIG={q(str(kube.kubeconfig))} exec {q(str(binary))} --config={q(str(config))}"
            " --feature-gates=VisibilityOnDemand=false",
        ]
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]


def _ready(sup: Supervisor, port: int) -> bool:
    import urllib.request  # noqa: PLC0415 - only here

    sup.check()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as rsp:
        return bool(rsp.status == 200)
