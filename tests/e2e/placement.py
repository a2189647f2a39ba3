"""Where kube-scheduler put a replica's pods, and what DRA devices it allocated them, as a user checks it.

``placements`` reads, on the workload server, each pod of a replica: its node
and that node's pool, its ResourceClaim and the devices allocated to it, with
each device's attributes and capacity from the ResourceSlice that published it.
``problems`` says what of that disagrees with what modelplane composed: the
pool, the GPUs per node, the CEL selector, distinct nodes per multi-node group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.cel import CELError, Device, SemVer, compile_selector
from modelplane.names import POOL_LABEL, REPLICA_LABEL
from tests.e2e.kube import Kube

RESOURCE_API = "resource.k8s.io/v1"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


@dataclass(frozen=True)
class Allocated:
    """One allocated device: its request, driver, node (the slice's pool) and what it carries."""

    request: str
    device: str
    node: str
    driver: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]


@dataclass(frozen=True)
class Placement:
    """One pod of a replica as the cluster placed it."""

    pod: str
    group: str  # the multi-node group (its LeaderWorkerSet and group index), or "" for a single-node worker
    node: str
    pool: str
    claim: str
    devices: tuple[Allocated, ...]


def _device_value(attribute: Mapping[str, Any]) -> str | int | bool | SemVer:
    if "version" in attribute:
        return SemVer(str(attribute["version"]))
    for key in ("string", "int", "bool"):
        if key in attribute:
            return attribute[key]  # type: ignore[no-any-return]
    msg = f"unknown attribute {attribute!r}"
    raise ValueError(msg)


def _slices(kube: Kube) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """(driver, pool, device) -> the device as its ResourceSlice publishes it."""
    out: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for s in kube.list(RESOURCE_API, "ResourceSlice"):
        spec = s["spec"]
        for d in spec.get("devices") or []:
            out[(spec["driver"], spec["pool"]["name"], d["name"])] = d
    return out


def placements(kube: Kube, namespace: str, replica: str) -> list[Placement]:
    """Every live pod of ``replica`` that is bound, with its claim's allocation (devices () when none yet)."""
    pods = kube.list("v1", "Pod", namespace, labels={REPLICA_LABEL: replica})
    nodes = {n["metadata"]["name"]: n for n in kube.list("v1", "Node")}
    slices = _slices(kube)
    out = []
    for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
        meta = pod["metadata"]
        node = str(pod.get("spec", {}).get("nodeName") or "")
        if meta.get("deletionTimestamp"):
            continue
        labels = meta.get("labels") or {}
        group = f"{labels[LWS_NAME_LABEL]}/{labels[LWS_GROUP_LABEL]}" if LWS_GROUP_LABEL in labels else ""
        claims = pod.get("status", {}).get("resourceClaimStatuses") or []
        claim_name = str(claims[0].get("resourceClaimName") or "") if claims else ""
        devices: list[Allocated] = []
        if claim_name:
            claim = kube.get(RESOURCE_API, "ResourceClaim", claim_name, namespace) or {}
            results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results") or []
            for r in results:
                published = slices.get((r["driver"], r["pool"], r["device"]), {})
                devices.append(
                    Allocated(
                        request=str(r["request"]),
                        device=str(r["device"]),
                        node=str(r["pool"]),
                        driver=str(r["driver"]),
                        attributes=published.get("attributes") or {},
                        capacity=published.get("capacity") or {},
                    )
                )
        pool = str(nodes.get(node, {}).get("metadata", {}).get("labels", {}).get(POOL_LABEL, "")) if node else ""
        out.append(Placement(str(meta["name"]), group, node, pool, claim_name, tuple(devices)))
    return out


def matches(cel: str, device: Allocated) -> bool:
    """Whether ``device`` satisfies the DRA selector ``cel`` (as kube-scheduler evaluated it)."""
    attributes = {k: _device_value(v) for k, v in device.attributes.items()}
    capacity = {k: str(v.get("value")) for k, v in device.capacity.items()}
    try:
        return compile_selector(cel).matches(Device(device.driver, attributes, capacity))
    except CELError:
        return False


def problems(
    found: Sequence[Placement], *, pool: str, pods: int, gpus_per_node: int, nodes_per_worker: int, cel: str
) -> list[str]:
    """What of the placement disagrees with modelplane's (empty when kube-scheduler did what it said)."""
    out = []
    if len(found) != pods:
        out.append(f"{len(found)} pods, modelplane composed {pods}")
    for p in found:
        if not p.node:
            out.append(f"pod {p.pod} is not bound to a node")
            continue
        if p.pool != pool:
            out.append(f"pod {p.pod} is on node {p.node} of pool {p.pool!r}, the replica names pool {pool!r}")
        gpus = [d for d in p.devices if d.request == p.devices[0].request] if p.devices else []
        if len(gpus) != gpus_per_node:
            out.append(f"pod {p.pod}: {len(gpus)} devices allocated, modelplane says {gpus_per_node} GPUs per node")
        for d in gpus:
            if d.node != p.node:
                out.append(f"pod {p.pod} on {p.node} was allocated {d.device} of node {d.node}")
            if not matches(cel, d):
                out.append(f"pod {p.pod}: device {d.device} does not match {cel!r}")
    groups: dict[str, list[str]] = {}
    for p in found:
        if p.group:
            groups.setdefault(p.group, []).append(p.node)
    for group, nodes in sorted(groups.items()):
        if len(nodes) != nodes_per_worker or len(set(nodes)) != len(nodes):
            out.append(f"group {group} runs on nodes {nodes}, modelplane says {nodes_per_worker} distinct nodes")
    return out


def replica_problems(replica: Mapping[str, Any], found: Sequence[Placement]) -> list[str]:
    """``problems`` for a unified ModelReplica, from what it says: pool, selector and footprint."""
    spec = replica.get("spec", {})
    footprint = replica.get("status", {}).get("gpus", {}).get("unified") or {}
    if not footprint:
        return ["the replica reports no status.gpus.unified footprint"]
    nodes_per_worker = int(footprint.get("nodesPerWorker", 1))
    return problems(
        found,
        pool=str(spec.get("poolName", "")),
        pods=int(footprint.get("workers", 1)) * nodes_per_worker,
        gpus_per_node=int(footprint.get("gpusPerNode", 0)),
        nodes_per_worker=nodes_per_worker,
        cel=str(spec.get("nodeSelector", {}).get("cel", "true")),
    )


def settled(kube: Kube, replica: Mapping[str, Any]) -> list[Placement]:
    """The replica's placements once every pod is bound with devices allocated and none disagrees; else []."""
    meta = replica["metadata"]
    found = placements(kube, str(meta["namespace"]), str(meta["name"]))
    return found if found and not replica_problems(replica, found) else []


def wait_placed(control: Kube, workload: Kube, name: str, namespace: str) -> list[Placement]:
    """Wait until ModelReplica ``name``'s pods are placed as it says; fail naming each disagreement."""
    from tests.e2e.world import eventually, xr  # noqa: PLC0415 - world is the scenarios' vocabulary

    def probe() -> list[Placement]:
        replica = xr(control, "ModelReplica", name, namespace)
        return settled(workload, replica) if replica else []

    try:
        return eventually(f"{name}'s pods bound by kube-scheduler with devices allocated", probe)
    except TimeoutError as err:
        replica = xr(control, "ModelReplica", name, namespace) or {"metadata": {"name": name}}
        found = placements(workload, namespace, name)
        msg = f"{err}; placements {found}; disagreements: {replica_problems(replica, found)}"
        raise AssertionError(msg) from None
