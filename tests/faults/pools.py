"""The fault class "pool removed from spec", on the InferenceCluster's side.

From each settled example fleet, each pool a ModelReplica runs on is taken out of
its InferenceCluster's ``spec.nodePools`` (an admissible spec, as fuzzing found), and
compose-inference-cluster is asked about the cluster with the fleet's ModelReplicas
and its composed resources as observed. Nothing composed may be dropped: the pool's
cloud object (GKE NodePool, EKS NodeGroup, AKS node pool) is kept while replicas run
on it, and the cluster lists the pool in ``status.removingPools`` and names its
replicas in ``PoolsRemoved``. The control: a pool no replica runs on is removed, and
nothing else. The ModelDeployment's side is the lifecycle class of the same name.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_inference_cluster.fn import FunctionRunner
from modelplane.preview.command import run_preview
from modelplane.render.store import Store
from tests.faults.steady import FLEETS

_RESOURCE_NAME = "crossplane.io/composition-resource-name"


@dataclass
class ClusterCall:
    """One request to compose-inference-cluster, as plain dicts: the XR, its composed resources, the world."""

    xr: dict[str, Any]
    observed: dict[str, dict[str, Any]]
    world: list[dict[str, Any]] = field(default_factory=list)

    def run(self) -> dict[str, Any]:
        """Ask once for what the function requires, answer from the world, and return the response as a dict."""
        req = fnv1.RunFunctionRequest(
            observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(self.xr)))
        )
        for key, body in self.observed.items():
            req.observed.resources[key].resource.update(body)
        first = asyncio.run(FunctionRunner().RunFunction(req, None))
        store = Store(self.world)
        for name, selector in first.requirements.resources.items():
            store.fetch(selector, req.required_resources[name])
        got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
        return got


@dataclass(frozen=True)
class Removal:
    """One pool taken out of one cluster's spec."""

    cluster: str
    pool: str
    call: ClusterCall
    replicas: tuple[str, ...]  # the ModelReplicas on it ("namespace/name"); none for the control


def _pools_of(replica: dict[str, Any]) -> set[str]:
    spec = replica.get("spec") or {}
    return {
        p for p in (spec.get("poolName"), *((spec.get(r) or {}).get("poolName") for r in ("prefill", "decode"))) if p
    }


_Composed = dict[str, dict[str, Any]]


@functools.cache
def _settled(fleet: str) -> tuple[tuple[dict[str, Any], ...], tuple[tuple[dict[str, Any], _Composed], ...]]:
    """The settled fleet's objects, and each InferenceCluster with its composed resources by composition key."""
    result = run_preview(list(FLEETS[fleet]), assume_ready=True).fleet
    world = tuple(copy.deepcopy([s.xr for s in result.states.values()] + [dict(o) for o in result.others]))
    clusters = []
    for key, state in sorted(result.states.items()):
        if key[0] == "InferenceCluster":
            composed = {c.get("metadata", {}).get("annotations", {}).get(_RESOURCE_NAME, ""): c for c in state.composed}
            clusters.append((copy.deepcopy(state.xr), copy.deepcopy(composed)))
    return world, tuple(clusters)


def removals(fleet: str) -> Iterator[Removal]:
    """Each pool of each cluster taken out of its spec, with the replicas on it (none: the control)."""
    world, clusters = _settled(fleet)
    replicas = [o for o in world if o.get("kind") == "ModelReplica"]
    for xr, observed in clusters:
        name = xr["metadata"]["name"]
        for pool in [p["name"] for p in xr.get("spec", {}).get("nodePools") or []]:
            on = sorted(
                f"{r['metadata'].get('namespace', '')}/{r['metadata']['name']}"
                for r in replicas
                if (r.get("spec") or {}).get("inferenceClusterRef", {}).get("name") == name and pool in _pools_of(r)
            )
            changed = copy.deepcopy(xr)
            changed["spec"]["nodePools"] = [p for p in changed["spec"]["nodePools"] if p["name"] != pool]
            # The cluster as the API server holds it after the user's edit: the world reads the new spec too.
            others = [o for o in world if not (o.get("kind") == "InferenceCluster" and o["metadata"]["name"] == name)]
            call = ClusterCall(changed, copy.deepcopy(observed), copy.deepcopy([*others, changed]))
            yield Removal(name, pool, call, tuple(on))


@dataclass(frozen=True)
class ClusterVerdict:
    """What one removal did wrong: composed resources dropped, and what it failed to report."""

    dropped: tuple[str, ...]
    silent: str

    @property
    def ok(self) -> bool:
        return not (self.dropped or self.silent)


def judge_removal(removal: Removal, got: dict[str, Any]) -> ClusterVerdict:
    """Drops: observed resources missing, but the pool itself once no replica runs on it (the user's change)."""
    desired = got.get("desired", {}).get("resources", {})
    removes = set() if removal.replicas else {f"nodepool-{removal.pool}"}
    dropped = tuple(k for k in sorted(removal.call.observed) if k not in desired and k not in removes)
    status = got.get("desired", {}).get("composite", {}).get("resource", {}).get("status", {})
    listed = {p["name"]: p for p in status.get("removingPools") or []}
    condition: dict[str, Any] = next((c for c in got.get("conditions", []) if c.get("type") == "PoolsRemoved"), {})
    if not removal.replicas:
        silent = f"pool {removal.pool} is listed as removing with no replica on it" if removal.pool in listed else ""
        return ClusterVerdict(dropped, silent)
    silent = ""
    if removal.pool not in listed or listed[removal.pool].get("remaining") != len(removal.replicas):
        silent = f"status.removingPools does not count pool {removal.pool}'s {len(removal.replicas)} replica(s)"
    elif condition.get("status") != "STATUS_CONDITION_FALSE" or removal.replicas[0] not in condition.get("message", ""):
        silent = f"PoolsRemoved does not name {removal.replicas[0]}"
    return ClusterVerdict(dropped, silent)
