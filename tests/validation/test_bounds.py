"""Every XRD bounds what a user can make the functions do: sizes of lists, maps and strings, and the fleet maximums."""

from __future__ import annotations

from typing import Any

import pytest
import xrds

_DEFINITIONS = [pytest.param(d, id=d.kind) for d in xrds.definitions().values()]
# The shape a ModelReplica copies from its ModelDeployment: the bounds must be the same in both,
# or a deployment the API server admits composes a replica it refuses.
_SHAPE = ("nodeSelector", "workers")
_ROLES = ("prefill", "decode")
# The fleet maximums, each with the reason it has: (kind, path) -> maximum.
_MAXIMUMS = {
    # Two composed resources per replica in one response that Crossplane reads with a 4 MiB limit.
    ("ModelDeployment", "spec.replicas"): 1000,
    ("ModelDeployment", "spec.workers.count"): 64,
    # One DRA ResourceClaim is allocated at most 32 devices (AllocationResultsMaxSize).
    ("ModelDeployment", "spec.workers.topology.tensor"): 32,
    ("ModelDeployment", "spec.workers.topology.dataLocal"): 32,
    ("ModelDeployment", "spec.nodeSelector.devices[*].count"): 32,
    # 64 nodes per worker at most (a CEL rule); these are the single factors that allow it.
    ("ModelDeployment", "spec.workers.topology.pipeline"): 64,
    ("ModelDeployment", "spec.workers.topology.data"): 2048,
    ("InferenceCluster", "spec.nodePools[*].nodeCount"): 1000,
    ("InferenceCluster", "spec.nodePools[*].maxNodeCount"): 1000,
    # A ResourceSlice lists at most 128 devices.
    ("InferenceClass", "spec.devices[*].count"): 128,
}


def _spec_nodes(definition: xrds.Definition) -> dict[str, Any]:
    return dict(xrds.iter_nodes(definition.schema["properties"]["spec"], "spec"))


def _unbounded(path: str, node: dict[str, Any]) -> str | None:
    kind = node.get("type")
    if kind == "array" and "maxItems" not in node:
        return f"{path}: a list without maxItems"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict) and "maxProperties" not in node:
        return f"{path}: a map without maxProperties"
    text = kind == "string" or node.get("x-kubernetes-int-or-string")
    if text and "maxLength" not in node and "enum" not in node and not _is_port(node):
        return f"{path}: a string without maxLength"
    return None


def _is_port(node: dict[str, Any]) -> bool:
    # A probe's int-or-string port (a number or an IANA name; the only int-or-string without a pattern)
    # is checked by the workload cluster; a maxLength here would make its generated type a RootModel.
    return bool(node.get("x-kubernetes-int-or-string")) and "pattern" not in node


@pytest.mark.parametrize("definition", _DEFINITIONS)
def test_every_spec_list_map_and_string_is_bounded(definition: xrds.Definition) -> None:
    found = [_unbounded(path, node) for path, node in _spec_nodes(definition).items()]
    assert [f for f in found if f] == []


@pytest.mark.parametrize(
    ("kind", "path", "maximum"), [pytest.param(*k, v, id=f"{k[0]}:{k[1]}") for k, v in _MAXIMUMS.items()]
)
def test_fleet_maximum(kind: str, path: str, maximum: int) -> None:
    nodes = _spec_nodes(xrds.definitions()[kind])
    assert nodes[path].get("maximum") == maximum
    for role in _ROLES if kind == "ModelDeployment" and path.startswith("spec.workers") else ():
        assert nodes[path.replace("spec.", f"spec.{role}.", 1)].get("maximum") == maximum


@pytest.mark.parametrize("field", [pytest.param(f, id=f) for f in _SHAPE])
def test_a_replica_has_its_deployments_shape(field: str) -> None:
    deployment = xrds.definitions()["ModelDeployment"].schema["properties"]["spec"]["properties"]
    replica = xrds.definitions()["ModelReplica"].schema["properties"]["spec"]["properties"]
    assert replica[field] == deployment[field]
    for role in _ROLES:
        assert replica[role]["properties"][field] == deployment[role]["properties"][field]
        assert replica[role].get("x-kubernetes-validations") == deployment[role].get("x-kubernetes-validations")
