"""Scenario 10: a cluster that already runs cert-manager and Kueue is adopted, and a FleetQuota keeps two teams apart.

The scenario (``tests/e2e/tenancy/``): before the platform exists, the tier installs what a
platform team's cluster would already run on workload server ``workload-a``: cert-manager's and
Kueue's CRDs (served there from the start: ``plane.WORKLOAD_CRDS`` and the cert-manager stand-in
CRDs) and their controllers' Deployments, ``cert-manager/cert-manager`` and
``kueue-system/kueue-controller-manager``, which the real deployment controller, kube-scheduler
and kwok make Available (no controller binary runs in their pods: kwok plays them). Then
InferenceCluster ``e2e-adopted`` (Kueue, Native) with ``servingStack.components`` certManager and
scheduler ``Existing``, and FleetQuota ``e2e-tenancy`` over the namespaces labelled
``e2e.modelplane.ai/tenancy: shared`` (4 accelerators of class ``e2e-tenancy-l4``; the pool has 8).

1. Adopted, not re-installed: the cluster's ``ComponentsReady`` is True, its ``status.components``
   says certManager and scheduler are Existing and ready, and no provider-helm Release of the
   cert-manager or Kueue chart is composed (the other Managed components' Releases are); the
   Deployments the tier installed are untouched.
2. The quota across two namespaces: ``chat`` (team a, 3 replicas of one L4) is placed whole and the
   quota publishes 3 in use; ``embed`` (team b, 2 replicas) then gets one, and its second is
   ``QuotaExceeded`` with the quota's figures; the quota publishes 4 of 4 in use, counted per
   deployment of both namespaces.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import CONTROL_PLANE_NAMESPACE
from tests.e2e.kube import Kube, condition
from tests.e2e.plane import CROSSPLANE_NAMESPACE, Plane
from tests.e2e.world import cluster_gone, conditions, eventually, replicas_of, wait_condition, xr

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent / "tenancy"
CLUSTER, WORKLOAD = "e2e-adopted", "workload-a"
SECRET = f"{CLUSTER}-kubeconfig"
QUOTA, CLASS = "e2e-tenancy", "e2e-tenancy-l4"
TEAM_A, TEAM_B = "e2e-tenancy-a", "e2e-tenancy-b"
RELEASE = ("helm.m.crossplane.io/v1beta1", "Release")
# What the tier installs beforehand, as the Existing checks read it (docs/install.md): each
# component's API (an APIService the API server keeps for every group and version a CRD serves)
# and its controller's Deployment, which must be Available.
EXISTING = {
    "certManager": ("v1.cert-manager.io", ("cert-manager", "cert-manager")),
    "scheduler": ("v1beta2.kueue.x-k8s.io", ("kueue-system", "kueue-controller-manager")),
}
# The charts Existing components must not install (modelplane.charts: cert-manager's, Kueue's).
NOT_INSTALLED = {"cert-manager", "kueue"}
# The cluster Ready, then a chain of XRs (deployment, replicas) each woken by a watch or a 10 s poll.
TIMEOUT = 240.0


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((HERE / name).read_text()) if d]


def _controller(namespace: str, name: str) -> dict[str, Any]:
    """A component's controller Deployment as the tier installs it: one pod, which kwok runs on a GPU node."""
    labels = {"app.kubernetes.io/name": name, "e2e.modelplane.ai/preinstalled": "true"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "manager", "image": f"e2e.invalid/{name}:preinstalled"}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        },
    }


def _preinstalled() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _, (namespace, name) in EXISTING.values():
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        out.append(_controller(namespace, name))
    return out


@pytest.fixture(scope="module")
def tenancy(plane: Plane) -> Iterator[Plane]:
    """The components installed beforehand, then the platform (cluster Ready); removed afterwards."""
    workload = plane.workloads[WORKLOAD].kube
    preinstalled = _preinstalled()
    for doc in preinstalled:
        workload.apply(doc)
    for api, _ in EXISTING.values():
        eventually(f"APIService {api} on {WORKLOAD}", lambda a=api: workload.get(*_API_SERVICE, a))  # type: ignore[misc]
    plane.connect(CLUSTER, WORKLOAD, SECRET)
    try:
        plane.kube.kubectl(["apply", "-f", str(HERE / "platform.yaml")])
        wait_condition(plane.kube, "InferenceCluster", CLUSTER, None, "Ready", timeout=TIMEOUT)
        yield plane
    finally:
        _clean_up(plane, workload, preinstalled)


_API_SERVICE = ("apiregistration.k8s.io/v1", "APIService")


def _clean_up(plane: Plane, workload: Kube, preinstalled: list[dict[str, Any]]) -> None:
    kube = plane.kube
    models = _docs("models.yaml")
    for doc in models:
        if doc["kind"] == "ModelDeployment":
            kube.delete(kinds.API_VERSION, "ModelDeployment", doc["metadata"]["name"], doc["metadata"]["namespace"])
    for doc in models:
        if doc["kind"] == "ModelDeployment":
            name, ns = doc["metadata"]["name"], doc["metadata"]["namespace"]
            eventually(f"{name}'s replicas to go", lambda n=name, s=ns: not replicas_of(kube, n, s), TIMEOUT)  # type: ignore[misc]
    for doc in reversed(_docs("platform.yaml")):
        kube.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace"))
    for doc in models:
        if doc["kind"] == "Namespace":
            kube.delete("v1", "Namespace", doc["metadata"]["name"])
    # The kubeconfig last: provider-kubernetes needs it to delete what the cluster put on workload-a.
    cluster_gone(kube, CLUSTER)
    kube.delete("v1", "Secret", SECRET, CROSSPLANE_NAMESPACE)
    for doc in reversed(preinstalled):
        workload.delete(doc["apiVersion"], doc["kind"], doc["metadata"]["name"], doc["metadata"].get("namespace"))


def _releases(kube: Kube) -> list[dict[str, Any]]:
    """The provider-helm Releases the cluster's ServingStack composed."""
    return kube.list(*RELEASE, CONTROL_PLANE_NAMESPACE, {"crossplane.io/composite": CLUSTER})


def _chart(release: Mapping[str, Any]) -> str:
    return str(release.get("spec", {}).get("forProvider", {}).get("chart", {}).get("name", ""))


def _components(kube: Kube) -> dict[str, Mapping[str, Any]]:
    cluster = xr(kube, "InferenceCluster", CLUSTER) or {}
    return {str(c.get("name")): c for c in cluster.get("status", {}).get("components") or []}


def test_existing_components_are_adopted_not_installed(tenancy: Plane) -> None:
    kube, workload = tenancy.kube, tenancy.workloads[WORKLOAD].kube
    cluster = wait_condition(kube, "InferenceCluster", CLUSTER, None, "ComponentsReady", timeout=TIMEOUT)
    components = _components(kube)
    for name in EXISTING:
        entry = components.get(name, {})
        assert entry.get("mode") == "Existing", (name, entry)
        assert entry.get("ready") is True, (name, entry, conditions(cluster))
    releases = _releases(kube)
    charts = {_chart(r) for r in releases}
    # The check means something: the Managed components' charts are composed.
    assert {"lws", "gateway-helm", "nvidia-dra-driver-gpu"} <= charts, charts
    assert not charts & NOT_INSTALLED, f"an Existing component's chart was composed: {sorted(charts)}"
    # What the platform team installed is as it was: Modelplane only observes it.
    for _, (namespace, name) in EXISTING.values():
        deployment = workload.get("apps/v1", "Deployment", name, namespace) or {}
        assert deployment.get("metadata", {}).get("generation") == 1, deployment.get("metadata")
        labels = deployment.get("metadata", {}).get("labels", {})
        assert labels.get("e2e.modelplane.ai/preinstalled") == "true", labels


def _quota(kube: Kube) -> Mapping[str, Any]:
    return kube.get(kinds.API_VERSION, "FleetQuota", QUOTA) or {}


def _limit(kube: Kube) -> Mapping[str, Any]:
    limits = _quota(kube).get("status", {}).get("limits") or [{}]
    first: Mapping[str, Any] = limits[0]
    return first


def _per_deployment(kube: Kube) -> dict[str, int]:
    return {str(d["name"]): int(d["inUse"]) for d in _limit(kube).get("deployments") or []}


def _models() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in _docs("models.yaml")}


def test_quota_enforced_across_two_namespaces(tenancy: Plane) -> None:
    kube = tenancy.kube
    models = _models()
    for ns in (TEAM_A, TEAM_B):
        kube.apply(models[ns])
    kube.apply(models["chat"])
    wait_condition(kube, "ModelDeployment", "chat", TEAM_A, "Scheduled", timeout=TIMEOUT)
    assert len(replicas_of(kube, "chat", TEAM_A)) == 3
    # team-b's deployment reads the quota's published use: wait until it counts team-a's replicas.
    try:
        eventually("the quota to count chat's 3 accelerators", lambda: _limit(kube).get("inUse") == 3, TIMEOUT)
    except TimeoutError:
        pytest.fail(f"FleetQuota {QUOTA} publishes {_quota(kube).get('status')}")

    kube.apply(models["embed"])
    embed = wait_condition(kube, "ModelDeployment", "embed", TEAM_B, "Scheduled", "False", timeout=TIMEOUT)
    scheduled = condition(embed, "Scheduled")
    assert scheduled.get("reason") == "QuotaExceeded", conditions(embed)
    figures = f"FleetQuota {QUOTA} allows 4 {CLASS} accelerators, 4 in use, 1 requested"
    assert figures in str(scheduled.get("message")), scheduled
    assert len(replicas_of(kube, "embed", TEAM_B)) == 1
    unschedulable = embed.get("status", {}).get("unschedulable") or []
    assert [u.get("reason") for u in unschedulable] == ["QuotaExceeded"], unschedulable

    want = {f"{TEAM_A}/chat": 3, f"{TEAM_B}/embed": 1}
    try:
        eventually("the quota to count both namespaces, 4 of 4", lambda: _per_deployment(kube) == want, TIMEOUT)
    except TimeoutError:
        pytest.fail(f"FleetQuota {QUOTA} publishes {_quota(kube).get('status')}, want {want}")
    limit = _limit(kube)
    assert limit.get("inUse") == 4, limit
    assert sorted(_quota(kube)["status"].get("namespaces") or []) == [TEAM_A, TEAM_B]
    assert not _quota(kube)["status"].get("exceeded"), _quota(kube)["status"]
