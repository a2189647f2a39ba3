"""Where a Service-mode run's client goes, and what it posts to: the cluster hosting most of its Ready endpoints.

The client posts to the ModelService's own address (``status.address``, on the InferenceGateway),
so it is routed, limited and authenticated like any caller. It runs on a cluster that hosts the
service's replicas: the cluster of each Ready endpoint the service matched is its ModelReplica's
(``spec.replicaRef``), or the cluster its label names (a deployment's pool endpoint in routing mode
Pool). A hand-written endpoint of an external API has no cluster and hosts nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.names import CLUSTER_LABEL, SERVING_ANNOTATION, cluster_label

FIELD = "spec.modelServiceRef.name"


@dataclass(frozen=True)
class ServiceTarget:
    """Where the client runs and what it posts to."""

    cluster: str
    url: str
    ready: int  # Ready endpoints of the service on that cluster


@dataclass(frozen=True)
class ServiceProblem:
    """Why the client cannot run now: a condition reason and a message naming the field."""

    reason: str
    message: str


def _ready(endpoint: Mapping[str, Any]) -> bool:
    annotations = (endpoint.get("metadata") or {}).get("annotations") or {}
    if annotations.get(SERVING_ANNOTATION) == "false":
        return False
    conditions = (endpoint.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _cluster_of(endpoint: Mapping[str, Any], replicas: Mapping[str, str], clusters: Mapping[str, str]) -> str:
    """The cluster an endpoint's traffic lands on ("" for none known): its replica's, or its label's."""
    replica = ((endpoint.get("spec") or {}).get("replicaRef") or {}).get("name")
    if replica:
        return replicas.get(str(replica), "")
    label = ((endpoint.get("metadata") or {}).get("labels") or {}).get(CLUSTER_LABEL)
    return clusters.get(str(label), "") if label else ""


def target(
    name: str,
    service: Mapping[str, Any] | None,
    endpoints: Iterable[Mapping[str, Any]],
    replicas: Iterable[Mapping[str, Any]],
    clusters: Iterable[str],
    endpoint: str,
) -> ServiceTarget | ServiceProblem:
    """The client's cluster and URL for ModelService ``name`` (``service``: as read, None when not found).

    Args:
        name: The ModelService's name (``spec.modelServiceRef.name``).
        service: The ModelService, None when it does not exist.
        endpoints: The ModelEndpoints of the run's namespace.
        replicas: The ModelReplicas of the run's namespace.
        clusters: The InferenceClusters' names.
        endpoint: The run's OpenAI endpoint (``spec.endpoint``).
    """
    if service is None:
        return ServiceProblem("ServiceNotFound", f"{FIELD}: ModelService {name} not found in the run's namespace")
    status = service.get("status") or {}
    matched = sorted({str(e) for entry in status.get("endpoints") or [] for e in entry.get("endpoints") or []})
    by_name = {str((e.get("metadata") or {}).get("name", "")): e for e in endpoints}
    on = {
        str((r.get("metadata") or {}).get("name", "")): str(
            ((r.get("spec") or {}).get("inferenceClusterRef") or {}).get("name", "")
        )
        for r in replicas
    }
    labels = {cluster_label(c): c for c in sorted(clusters)}
    ready = [by_name[e] for e in matched if e in by_name and _ready(by_name[e])]
    hosting = Counter(c for c in (_cluster_of(e, on, labels) for e in ready) if c)
    if not hosting:
        why = f"{len(matched)} matched, {len(ready)} Ready" + (", none on an InferenceCluster" if ready else "")
        return ServiceProblem("NoReadyEndpoints", f"{FIELD}: ModelService {name} has no Ready endpoint ({why})")
    address = str(status.get("address") or "")
    if not address:
        return ServiceProblem("WaitingForAddress", f"{FIELD}: ModelService {name} has no address yet")
    cluster, count = min(hosting.items(), key=lambda item: (-item[1], item[0]))
    return ServiceTarget(cluster, address.rstrip("/") + endpoint, count)
