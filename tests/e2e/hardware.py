"""The GPU nodes of each InferenceCluster, simulated from the platform's own declaration.

For every InferenceCluster connected to one of the tier's workload API servers
(``target``), each pool gets ``nodeCount`` nodes labelled
``modelplane.ai/pool=<pool>``, managed by kwok (which plays their kubelet),
and per node the ``ResourceSlice`` the GPU's DRA driver would publish: one
device per unit of ``count`` of each DRA device of the pool's InferenceClass,
with exactly the attributes and capacity the class declares. The
``DeviceClass`` objects the composed ResourceClaimTemplates name select the
driver's devices. Allocation is then kube-scheduler's alone.

Like a cloud's node pool, a node is created once: one a scenario deletes
(``lose``) stays gone. The nodes of a cluster that is gone are removed. As the
node lifecycle controller would (it does not run: see ``tests/e2e/plane.py``),
the not-ready taint a new node is given is lifted once kwok reports it Ready.

The module also counts what the summary line reports: pods kube-scheduler
bound, ResourceClaims it allocated, nodes created.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane import kinds
from modelplane.names import POOL_LABEL
from tests.e2e.kube import ApiError, Kube

Manifest = dict[str, Any]
CLUSTER_LABEL = "e2e.modelplane.ai/cluster"
KWOK_LABEL = ("type", "kwok")
RESOURCE_API = "resource.k8s.io/v1"
# The API server taints every new node with it (TaintNodesByCondition) until it is Ready.
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
# What a GPU node offers besides its accelerators: room for any pod the scenarios ask for.
NODE_ALLOCATABLE = {"cpu": "96", "memory": "1024Gi", "pods": "110"}


def node_name(cluster: str, pool: str, index: int) -> str:
    return f"{cluster}-{pool}-{index}"


def dra_devices(klass: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The class's devices a DRA driver publishes (``claim: DRA``)."""
    return [d for d in klass.get("spec", {}).get("devices") or [] if d.get("claim", "DRA") == "DRA"]


def node(cluster: str, pool: str, index: int) -> Manifest:
    """One simulated node of ``pool`` (kwok makes it Ready)."""
    key, value = KWOK_LABEL
    name = node_name(cluster, pool, index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                POOL_LABEL: pool,
                CLUSTER_LABEL: cluster,
                key: value,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": {"allocatable": dict(NODE_ALLOCATABLE), "capacity": dict(NODE_ALLOCATABLE)},
    }


def resource_slices(node_obj: Mapping[str, Any], klass: Mapping[str, Any]) -> list[Manifest]:
    """The ResourceSlices a node of ``klass`` publishes: one per DRA driver, owned by the node."""
    meta = node_obj["metadata"]
    by_driver: dict[str, list[Manifest]] = {}
    for device in dra_devices(klass):
        entries = by_driver.setdefault(str(device["driver"]), [])
        for i in range(int(device.get("count", 1))):
            entry: Manifest = {"name": f"{device['name']}-{i}"}
            if device.get("attributes"):
                entry["attributes"] = dict(device["attributes"])
            if device.get("capacity"):
                entry["capacity"] = dict(device["capacity"])
            entries.append(entry)
    out = []
    for driver, devices in sorted(by_driver.items()):
        owner = {"apiVersion": "v1", "kind": "Node", "name": meta["name"]}
        if meta.get("uid"):
            owner["uid"] = meta["uid"]
        out.append(
            {
                "apiVersion": RESOURCE_API,
                "kind": "ResourceSlice",
                "metadata": {
                    "name": f"{meta['name']}-{driver.replace('.', '-')}",
                    "labels": {CLUSTER_LABEL: meta["labels"][CLUSTER_LABEL]},
                    "ownerReferences": [owner] if meta.get("uid") else [],
                },
                "spec": {
                    "driver": driver,
                    "nodeName": meta["name"],
                    "pool": {"name": meta["name"], "generation": 1, "resourceSliceCount": 1},
                    "devices": devices,
                },
            }
        )
    return out


def device_classes(classes: Iterable[Mapping[str, Any]]) -> list[Manifest]:
    """A DeviceClass per ``deviceClassName`` the classes name, selecting its driver's devices."""
    drivers: dict[str, set[str]] = {}
    for klass in classes:
        for device in dra_devices(klass):
            if device.get("deviceClassName"):
                drivers.setdefault(str(device["deviceClassName"]), set()).add(str(device["driver"]))
    out = []
    for name, found in sorted(drivers.items()):
        expression = " || ".join(f'device.driver == "{d}"' for d in sorted(found))
        out.append(
            {
                "apiVersion": RESOURCE_API,
                "kind": "DeviceClass",
                "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expression}}]},
            }
        )
    return out


def pools(cluster: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """(pool, class, nodeCount) of each of the cluster's pools."""
    return [
        (str(p["name"]), str(p.get("className", "")), int(p.get("nodeCount", 0)))
        for p in cluster.get("spec", {}).get("nodePools") or []
    ]


@dataclass
class Counts:
    """What kube-scheduler did on the workload servers, as seen (distinct UIDs)."""

    pods: set[str] = field(default_factory=set)
    claims: set[str] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)


class Hardware:
    """A thread that keeps each connected InferenceCluster's simulated nodes, slices and device classes."""

    def __init__(self, control: Kube, servers: Mapping[str, Kube], interval: float = 1.0) -> None:
        self._control = control
        self._servers = dict(servers)
        self._targets: dict[str, str] = {}
        self._created: set[tuple[str, str]] = set()  # (server, node) created once
        self._interval = interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="e2e-hardware", daemon=True)
        self.counts = Counts()
        self.errors: list[str] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def target(self, cluster: str, server: str) -> None:
        """InferenceCluster ``cluster``'s nodes live on workload server ``server``."""
        if server in self._servers:
            with self._lock:
                self._targets[cluster] = server

    def lose(self, server: str, name: str) -> None:
        """Node ``name`` is lost: delete it (its slices go with it) and never recreate it."""
        with self._lock:
            self._created.add((server, name))
        self._servers[server].delete("v1", "Node", name)

    def nodes(self, server: str, cluster: str, pool: str | None = None) -> list[Manifest]:
        """The simulated nodes of ``cluster`` (and ``pool``) on ``server``."""
        labels = {CLUSTER_LABEL: cluster, **({POOL_LABEL: pool} if pool else {})}
        return self._servers[server].list("v1", "Node", labels=labels)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.reconcile()
                self._count()
            except (ApiError, OSError) as err:
                self.errors = [*self.errors[-19:], str(err)[:300]]

    def reconcile(self) -> None:
        clusters = {c["metadata"]["name"]: c for c in self._control.list(kinds.API_VERSION, "InferenceCluster")}
        classes = {c["metadata"]["name"]: c for c in self._control.list(kinds.API_VERSION, "InferenceClass")}
        with self._lock:
            targets = dict(self._targets)
        for server, kube in self._servers.items():
            mine = {name: clusters[name] for name, s in targets.items() if s == server and name in clusters}
            for klass in device_classes(c for c in classes.values()):
                if kube.get(RESOURCE_API, "DeviceClass", klass["metadata"]["name"]) is None:
                    kube.apply(klass)
            want: set[str] = set()
            for cluster_name, cluster in sorted(mine.items()):
                for pool, class_name, count in pools(cluster):
                    for i in range(count):
                        want.add(node_name(cluster_name, pool, i))
                        self._ensure_node(server, kube, cluster_name, pool, i, classes.get(class_name))
            for existing in kube.list("v1", "Node", labels=dict([KWOK_LABEL])):
                name = existing["metadata"]["name"]
                if name not in want and not existing["metadata"].get("deletionTimestamp"):
                    kube.delete("v1", "Node", name)
                    with self._lock:
                        self._created.discard((server, name))

    def _ensure_node(
        self, server: str, kube: Kube, cluster: str, pool: str, index: int, klass: Mapping[str, Any] | None
    ) -> None:
        name = node_name(cluster, pool, index)
        with self._lock:
            created = (server, name) in self._created
        found = kube.get("v1", "Node", name)
        if found is None:
            if created:
                return  # lost: a node pool would replace it, the scenario says when
            found = kube.create(node(cluster, pool, index))
            with self._lock:
                self._created.add((server, name))
                self.counts.nodes.add(str(found["metadata"]["uid"]))
        self._untaint(kube, found)
        if klass is None:
            return  # the class is gone: the hardware is not, its slices stay as they are
        for slice_obj in resource_slices(found, klass):
            current = kube.get(RESOURCE_API, "ResourceSlice", slice_obj["metadata"]["name"])
            if current is None or current.get("spec", {}).get("devices") != slice_obj["spec"]["devices"]:
                kube.apply(slice_obj)

    @staticmethod
    def _untaint(kube: Kube, found: Mapping[str, Any]) -> None:
        """What the node lifecycle controller does for a node that turned Ready: lift its not-ready taint."""
        taints = found.get("spec", {}).get("taints") or []
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in found.get("status", {}).get("conditions") or []
        )
        kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
        if ready and len(kept) != len(taints):
            kube.patch("v1", "Node", found["metadata"]["name"], {"spec": {"taints": kept or None}})

    def _count(self) -> None:
        for kube in self._servers.values():
            for pod in kube.list("v1", "Pod"):
                scheduled = [
                    c for c in pod.get("status", {}).get("conditions") or [] if c.get("type") == "PodScheduled"
                ]
                if pod.get("spec", {}).get("nodeName") and scheduled and scheduled[0].get("status") == "True":
                    self.counts.pods.add(str(pod["metadata"]["uid"]))
            for claim in kube.list(RESOURCE_API, "ResourceClaim"):
                if claim.get("status", {}).get("allocation"):
                    self.counts.claims.add(str(claim["metadata"]["uid"]))
