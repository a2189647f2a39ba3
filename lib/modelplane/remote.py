"""Wrap a manifest as a provider-kubernetes Object that lands it on a workload cluster.

A namespaced XR composes only namespaced resources in its own namespace
(Crossplane v2), so remote manifests ride in the namespaced
``kubernetes.m.crossplane.io`` Object, which reaches its cluster through a
``ClusterProviderConfig`` the InferenceCluster publishes in
``status.providerConfigRef``. The Object's readiness is derived from the
remote object itself, per kind, so an XR is Ready only when what it runs is.

An Object whose readiness or data follows its remote object asks to be watched
(``spec.watch``): provider-kubernetes v1.2.1 re-reads a Ready Object only at
its ``--poll`` and one that is not Ready every 30 s, so without a watch a
workload turning Ready reaches its ModelReplica up to 30 s late, once per
replica and per rollout wave. The field is alpha and inert unless the provider
runs with ``--enable-watches``: the platform team turns watching on where the
feature gate lives (docs/install.md). Objects ready once created are not
watched: nothing they report would be waited for, and each watched kind costs
the provider an informer per cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

OBJECT_API_VERSION = "kubernetes.m.crossplane.io/v1alpha1"
PROVIDER_CONFIG_KIND = "ClusterProviderConfig"


class Readiness(StrEnum):
    """provider-kubernetes readiness policies (``spec.readiness.policy``)."""

    SUCCESSFUL_CREATE = "SuccessfulCreate"
    DERIVE_FROM_OBJECT = "DeriveFromObject"
    ALL_TRUE = "AllTrue"
    DERIVE_FROM_CEL_QUERY = "DeriveFromCelQuery"


@dataclass(frozen=True)
class ReadinessRule:
    """How an Object's Ready condition follows the remote object."""

    policy: Readiness
    cel_query: str = ""

    def spec(self) -> dict[str, str]:
        """The Object's ``spec.readiness``."""
        out = {"policy": str(self.policy)}
        if self.cel_query:
            out["celQuery"] = self.cel_query
        return out


# Kinds with no status of their own are ready once they exist; workloads follow their own signals.
_BY_KIND: dict[str, ReadinessRule] = {
    "Namespace": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "Service": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "ResourceClaimTemplate": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "PodGroup": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "HTTPRoute": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    # Configuration, RBAC, monitors and routing objects: nothing to wait for once they exist.
    "ConfigMap": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "ServiceAccount": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "Role": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "RoleBinding": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "InferencePool": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "InferenceObjective": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "PodMonitor": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "ServiceMonitor": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "PrometheusRule": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "Deployment": ReadinessRule(
        Readiness.DERIVE_FROM_CEL_QUERY,
        "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')"
        " && has(object.status.readyReplicas) && object.status.readyReplicas == object.spec.replicas",
    ),
    "LeaderWorkerSet": ReadinessRule(
        Readiness.DERIVE_FROM_CEL_QUERY,
        "object.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
    ),
    # A ModelCache's copy: the claim exists once created; the hydration Job and KServe's node-local
    # copies are ready when the weights are there.
    "PersistentVolumeClaim": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "LocalModelNodeGroup": ReadinessRule(Readiness.SUCCESSFUL_CREATE),
    "Job": ReadinessRule(
        Readiness.DERIVE_FROM_CEL_QUERY,
        "has(object.status.conditions)"
        " && object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')",
    ),
    "LocalModelCache": ReadinessRule(
        Readiness.DERIVE_FROM_CEL_QUERY,
        "has(object.status.copies) && has(object.status.copies.total) && object.status.copies.total > 0"
        " && has(object.status.copies.available) && object.status.copies.available == object.status.copies.total",
    ),
    "LLMInferenceService": ReadinessRule(
        Readiness.DERIVE_FROM_CEL_QUERY,
        "object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
    ),
}
_DEFAULT = ReadinessRule(Readiness.DERIVE_FROM_OBJECT)


def readiness_for(kind: str) -> ReadinessRule:
    """The readiness rule for a remote object of ``kind`` (DeriveFromObject when none is known)."""
    return _BY_KIND.get(kind, _DEFAULT)


def wrap(
    manifest: Mapping[str, Any],
    *,
    name: str,
    namespace: str,
    provider_config: str,
    readiness: ReadinessRule | None = None,
    observe_only: bool = False,
) -> dict[str, Any]:
    """Return a namespaced provider-kubernetes Object carrying ``manifest`` to a cluster.

    Args:
        manifest: The remote object, as it should exist on the workload cluster.
        name: The Object's name on the control plane (stable; see ``modelplane.names``).
        namespace: The Object's namespace: the composing XR's namespace.
        provider_config: The name of the ClusterProviderConfig that reaches the cluster.
        readiness: How the Object's readiness follows the remote object; by default
            the rule for the manifest's kind.
        observe_only: Only read the remote object (management policy Observe), e.g.
            a scheduler's status objects; Crossplane never creates, changes or deletes it.
            Watched, as is every Object whose readiness follows its remote object.
    """
    rule = readiness if readiness is not None else readiness_for(str(manifest.get("kind", "")))
    spec: dict[str, Any] = {
        "forProvider": {"manifest": dict(manifest)},
        "providerConfigRef": {"kind": PROVIDER_CONFIG_KIND, "name": provider_config},
        "readiness": rule.spec(),
    }
    if observe_only:
        spec["managementPolicies"] = ["Observe"]
    if observe_only or rule.policy is not Readiness.SUCCESSFUL_CREATE:
        spec["watch"] = True
    return {
        "apiVersion": OBJECT_API_VERSION,
        "kind": "Object",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def observed_manifest(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The remote object as provider-kubernetes last observed it (``status.atProvider.manifest``)."""
    manifest = obj.get("status", {}).get("atProvider", {}).get("manifest")
    return manifest if isinstance(manifest, Mapping) else None


# Every management action but Delete: for remote objects that others may share (a namespace).
KEEP_ON_DELETE = ("Observe", "Create", "Update", "LateInitialize")


def keep_on_delete(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Return the Object ``obj`` (from ``wrap``) so that deleting it leaves the remote object in place."""
    return {**obj, "spec": {**obj["spec"], "managementPolicies": list(KEEP_ON_DELETE)}}
