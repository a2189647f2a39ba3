"""A Service-mode run's requests marked low priority for each endpoint picker of its ModelService.

The client posts to the service's address like any caller, and the control plane sends each request
to one of the service's endpoints. Where an endpoint is a deployment's pool (routing mode Pool), the
pool's endpoint picker (llm-d router, Gateway API Inference Extension) reads the request header
``x-gateway-inference-objective``: the name of an ``InferenceObjective`` in the pool's namespace that
references the pool. Its ``priority`` orders requests when the pool is saturated (higher first;
requests without an objective count as 0).

So the run composes, on each cluster where the service has a pool, an InferenceObjective named after
the run (``modelplane-batch-<run>``, as its ConfigMap) whose priority is one below the pool's
interactive traffic: the deployment's own objective (``spec.routing.priority``) and the callers that
name none (0). The client sends that name with every request.

One name per run, and an objective references one pool: where the service has two deployments' pools
on one cluster (same namespace), the objective references the first by deployment name and the
other pool's picker does not know the name (its batch requests are not marked); ``unmarked`` says
which. Endpoints in routing mode Replica and external ones have no picker: nothing to mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.layout import METADATA, Layout
from modelplane.names import BATCH_RUN_LABEL, batch_label, batch_scripts_name, pool_name

OBJECTIVE_HEADER = "x-gateway-inference-objective"
OBJECTIVE_API_VERSION = "llm-d.ai/v1alpha2"
POOL_GROUP = "inference.networking.k8s.io"
KEY_PREFIX = "objective-"
# A pool's interactive traffic without an InferenceObjective (llm-d: an unset priority is 0).
DEFAULT_PRIORITY = 0
# What is read of a ModelPool (as compose-model-deployment resolves it).
POOL: Layout = {
    "metadata": METADATA,
    "spec": {
        "deploymentRef": {"name": str},
        "inferenceClusterRef": {"name": str},
        "providerConfigRef": {"name": str},
        "priority": int,
    },
}


@dataclass(frozen=True)
class Objective:
    """The run's InferenceObjective for one pool of its service.

    Attributes:
        cluster: The InferenceCluster the pool is on.
        provider_config: That cluster's ProviderConfig (the ModelPool's).
        deployment: The ModelDeployment whose pool it is.
        priority: The objective's priority (below the pool's interactive traffic).
        manifest: The InferenceObjective.
    """

    cluster: str
    provider_config: str
    deployment: str
    priority: int
    manifest: dict[str, Any]


@dataclass(frozen=True)
class Marking:
    """The objectives to compose, and the pools whose requests cannot be marked (``<deployment> on <cluster>``)."""

    objectives: tuple[Objective, ...] = ()
    unmarked: tuple[str, ...] = ()

    def summary(self) -> str:
        """For the Scheduled condition ("" when the service has no pool)."""
        if not self.objectives and not self.unmarked:
            return ""
        marked = ", ".join(f"{o.deployment} on {o.cluster} ({o.priority})" for o in self.objectives)
        out = f"requests marked low priority on {len(self.objectives)} pool(s)" + (f": {marked}" if marked else "")
        if self.unmarked:
            out += f"; not on {', '.join(self.unmarked)} (another pool of the service on its cluster has the name)"
        return out


def objective_name(run: str) -> str:
    """The InferenceObjective of run ``run`` on each pool, and the header value its client sends."""
    return batch_scripts_name(run)


def batch_priority(pool_priority: int | None) -> int:
    """One below the pool's interactive traffic: its deployment's objective and callers naming none."""
    return min(DEFAULT_PRIORITY, pool_priority if pool_priority is not None else DEFAULT_PRIORITY) - 1


def _matched(service: Mapping[str, Any]) -> set[str]:
    entries = (service.get("status") or {}).get("endpoints") or []
    return {str(e) for entry in entries for e in entry.get("endpoints") or []}


def marking(run: str, namespace: str, service: Mapping[str, Any], pools: Iterable[Mapping[str, Any]]) -> Marking:
    """The run's objectives for the pools of ``service`` (``pools``: the ModelPools of the namespace, as read).

    A ModelPool is named as its pool's ModelEndpoint (``<deployment>-<cluster>``): the service's pools
    are those among the endpoints it matched, Ready or not (one that turns Ready takes batch requests).
    """
    matched = _matched(service)
    chosen: dict[str, Objective] = {}
    unmarked: list[str] = []
    ordered = sorted(pools, key=lambda p: (_ref(p, "inferenceClusterRef"), _ref(p, "deploymentRef")))
    for pool in ordered:
        name = str((pool.get("metadata") or {}).get("name", ""))
        cluster, deployment = _ref(pool, "inferenceClusterRef"), _ref(pool, "deploymentRef")
        config = _ref(pool, "providerConfigRef")
        if name not in matched or not cluster or not deployment or not config:
            continue
        if cluster in chosen:
            unmarked.append(f"{deployment} on {cluster}")
            continue
        priority = batch_priority((pool.get("spec") or {}).get("priority"))
        manifest = _manifest(run, namespace, deployment, priority)
        chosen[cluster] = Objective(cluster, config, deployment, priority, manifest)
    return Marking(tuple(chosen.values()), tuple(unmarked))


def _ref(pool: Mapping[str, Any], field: str) -> str:
    return str(((pool.get("spec") or {}).get(field) or {}).get("name") or "")


def _manifest(run: str, namespace: str, deployment: str, priority: int) -> dict[str, Any]:
    return {
        "apiVersion": OBJECTIVE_API_VERSION,
        "kind": "InferenceObjective",
        "metadata": {
            "name": objective_name(run),
            "namespace": namespace,
            "labels": {BATCH_RUN_LABEL: batch_label(run)},
        },
        "spec": {
            "priority": priority,
            "poolRef": {"group": POOL_GROUP, "kind": "InferencePool", "name": pool_name(deployment)},
        },
    }
