"""compose-inference-cluster publishes its cloud objects (status.cloudResourceRefs) whatever path a call takes.

Each ModelReplica on the cluster gets a Crossplane Usage of the objects it depends on from this list, so
it must name every cloud object the cluster has: on every cloud, with a pool kept while being removed,
while the cluster is being deleted, and while the call keeps everything (an input not fetched yet, an
invalid spec). An Existing cluster has none.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.test_compose_inference_cluster import _class, _cluster, _replica, _req, _run, _status

GKE, EKS, AKS = (
    "container.gcp.m.upbound.io/v1beta1",
    "eks.aws.m.upbound.io/v1beta1",
    "containerservice.azure.m.upbound.io/v1beta1",
)
NS = "crossplane-system"


def _ref(api: str, kind: str, name: str, pool: str = "") -> dict[str, str]:
    out = {"apiVersion": api, "kind": kind, "name": name, "namespace": NS}
    return {**out, "pool": pool} if pool else out


def _deleting(xr: dict[str, Any]) -> dict[str, Any]:
    xr["metadata"]["deletionTimestamp"] = "2026-11-29T10:00:00Z"
    return xr


def _old_pool() -> dict[str, Any]:
    return {"apiVersion": GKE, "kind": "NodePool", "metadata": {"name": "c-old", "namespace": NS}, "spec": {}}


@pytest.mark.parametrize(
    ("source", "xr", "kwargs", "want"),
    [
        pytest.param(
            "GKE",
            None,
            {},
            [
                _ref(GKE, "Cluster", "c"),
                _ref(GKE, "NodePool", "c-h100", "h100"),
                _ref(GKE, "NodePool", "c-system", "system"),
            ],
            id="gke",
        ),
        pytest.param(
            "EKS",
            None,
            {},
            [
                # The access entry writes the kubeconfig a replica's remote objects are deleted through.
                _ref(EKS, "Cluster", "c"),
                _ref(EKS, "ClusterAuth", "c"),
                _ref(EKS, "NodeGroup", "c-h100", "h100"),
                _ref(EKS, "NodeGroup", "c-system", "system"),
            ],
            id="eks",
        ),
        pytest.param(
            "AKS",
            None,
            {},
            [_ref(AKS, "KubernetesCluster", "c"), _ref(AKS, "KubernetesClusterNodePool", "c-h100", "h100")],
            id="aks",
        ),
        pytest.param("Existing", None, {}, None, id="existing-has-none"),
        pytest.param(
            "GKE",
            _deleting(_cluster("GKE")),
            {},
            [
                _ref(GKE, "Cluster", "c"),
                _ref(GKE, "NodePool", "c-h100", "h100"),
                _ref(GKE, "NodePool", "c-system", "system"),
            ],
            id="gke-being-deleted",
        ),
        pytest.param(
            "GKE",
            None,
            {"observed": {"nodepool-old": _old_pool()}, "replicas": [_replica(pool="old")]},
            [
                _ref(GKE, "Cluster", "c"),
                _ref(GKE, "NodePool", "c-h100", "h100"),
                _ref(GKE, "NodePool", "c-old", "old"),
                _ref(GKE, "NodePool", "c-system", "system"),
            ],
            id="pool-removed-kept-while-a-replica-runs",
        ),
        pytest.param(
            "GKE",
            None,
            {"observed": {"nodepool-old": _old_pool()}, "fetched": False},
            [_ref(GKE, "NodePool", "c-old", "old")],
            id="inputs-not-fetched-keep-and-publish",
        ),
    ],
)
def test_the_cluster_publishes_its_cloud_objects(
    source: str, xr: dict[str, Any] | None, kwargs: dict[str, Any], want: list[dict[str, str]] | None
) -> None:
    classes = [_class("h100", source if source != "Existing" else None)]
    rsp = _run(_req(xr or _cluster(source), classes=classes, **kwargs))
    assert _status(rsp).get("cloudResourceRefs") == want


def test_an_invalid_spec_keeps_and_publishes_what_it_keeps() -> None:
    xr = _cluster("GKE")
    xr["spec"]["nodePools"][0]["nodeCount"] = "many"
    rsp = _run(_req(xr, classes=[_class("h100", "GKE")], observed={"nodepool-old": _old_pool()}))
    assert _status(rsp) == {"cloudResourceRefs": [_ref(GKE, "NodePool", "c-old", "old")], "readyVerdict": False}


def test_the_refs_are_published_beside_the_rest_of_the_status() -> None:
    rsp = _run(_req(_cluster("GKE"), classes=[_class("h100", "GKE")]))
    status = _status(rsp)
    assert {"providerConfigRef", "capacity", "cloudResourceRefs"} <= set(status)
