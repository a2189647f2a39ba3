"""The fault classes injected into a steady state, and what each must (and must not) do.

A fault is a function from a steady state to its injections: one per target
(each cluster, pool or class a replica runs on, each replica) or one for the
deployment. An injection says what the function must report (a ``Scheduled``
condition that is not True and a warning naming ``names``), or that nothing
needs reporting, and which composed resources the user's own change removes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from tests.faults.steady import Call, Steady

_DELETED_AT = "2025-01-01T00:00:00Z"


@dataclass(frozen=True)
class Injection:
    """One fault in one steady state.

    Attributes:
        target: What the fault hits (a cluster, pool, class or replica; "" for the deployment).
        call: The request with the fault in it.
        names: What the warning must name; "" when the fault needs no report.
        reasons: The reasons ``Scheduled`` may give (empty: any reason, when ``names`` is set).
        removes: Composition keys the user's change removes (all others must stay).
        unready: The replica that stopped serving, whose endpoint must stay without traffic.
        progress: The user's own act (a cluster being deleted): a result of any severity naming ``names``
            reports it, and ``Scheduled`` stays True while the replacements can be placed.
    """

    target: str
    call: Call
    names: str = ""
    reasons: frozenset[str] = frozenset()
    removes: frozenset[str] = frozenset()
    unready: int | None = None
    progress: bool = False


Fault = Callable[[Steady], Iterator[Injection]]


def _replicas(call: Call) -> dict[int, dict[str, Any]]:
    return {int(k.split("-")[1]): v for k, v in call.observed.items() if k.startswith("replica-")}


def _hosts(call: Call) -> list[str]:
    return sorted({r["spec"]["inferenceClusterRef"]["name"] for r in _replicas(call).values()})


def _pools(replica: dict[str, Any]) -> list[str]:
    spec = replica["spec"]
    return [spec["poolName"]] if "poolName" in spec else [spec[role]["poolName"] for role in ("prefill", "decode")]


def _hosted_pools(call: Call) -> list[tuple[str, str]]:
    """The (cluster, pool) pairs replicas run on that the cluster still lists (an earlier fault may have changed it)."""
    pairs = {(r["spec"]["inferenceClusterRef"]["name"], p) for r in _replicas(call).values() for p in _pools(r)}
    return sorted((h, p) for h, p in pairs if _pool(call, h, p) is not None)


def _cluster(call: Call, name: str) -> dict[str, Any]:
    return next(c for c in call.required["clusters"] if c.get("metadata", {}).get("name") == name)


def _pool(call: Call, cluster: str, pool: str) -> dict[str, Any] | None:
    found = [c for c in call.required["clusters"] if c.get("metadata", {}).get("name") == cluster]
    pools = found[0].get("spec", {}).get("nodePools") if found else None
    return next((p for p in pools if p.get("name") == pool), None) if isinstance(pools, list) else None


def _class_of(call: Call, cluster: str, pool: str) -> str:
    found = _pool(call, cluster, pool)
    return str(found["className"]) if found is not None else ""


def _roles(xr: dict[str, Any]) -> list[dict[str, Any]]:
    spec = xr["spec"]
    return [spec] if "workers" in spec else [spec["prefill"], spec["decode"]]


def _each_host(mutate: Callable[[Call, str], None], names: str, *reasons: str, progress: bool = False) -> Fault:
    def fault(steady: Steady) -> Iterator[Injection]:
        present = {c.get("metadata", {}).get("name") for c in steady.call.required["clusters"]}
        for host in _hosts(steady.call):
            if host not in present:
                continue  # gone with an earlier fault
            call = steady.call.copy()
            mutate(call, host)
            yield Injection(host, call, names.format(host=host), frozenset(reasons), progress=progress)

    return fault


def _remove_cluster(call: Call, host: str) -> None:
    call.required["clusters"] = [c for c in call.required["clusters"] if c["metadata"]["name"] != host]


def _delete_cluster(call: Call, host: str) -> None:
    _cluster(call, host)["metadata"]["deletionTimestamp"] = _DELETED_AT


def _malform(edit: Callable[[dict[str, Any]], None]) -> Callable[[Call, str], None]:
    def mutate(call: Call, host: str) -> None:
        edit(_cluster(call, host))

    return mutate


def _node_count_text(cluster: dict[str, Any]) -> None:
    pools = cluster.setdefault("spec", {}).get("nodePools")
    if isinstance(pools, list) and pools:
        pools[0]["nodeCount"] = "three"
    else:
        cluster["spec"]["nodePools"] = [{"name": "gpu", "className": "gpu", "nodeCount": "three"}]


def _node_pools_number(cluster: dict[str, Any]) -> None:
    cluster.setdefault("spec", {})["nodePools"] = 7


def _labels_list(cluster: dict[str, Any]) -> None:
    cluster["metadata"]["labels"] = [1]


def _conditions_number(cluster: dict[str, Any]) -> None:
    cluster.setdefault("status", {})["conditions"] = 3


def _no_spec(cluster: dict[str, Any]) -> None:
    cluster.pop("spec", None)


def _pool_renamed(steady: Steady) -> Iterator[Injection]:
    for host, pool in _hosted_pools(steady.call):
        call = steady.call.copy()
        renamed = _pool(call, host, pool)
        if renamed is not None:
            renamed["name"] = f"{pool}-renamed"[:40]
        yield Injection(f"{host}/{pool}", call, f"pool {pool}", frozenset({"PoolNotFound"}))


def _classes(call: Call) -> list[str]:
    return sorted({_class_of(call, h, p) for h, p in _hosted_pools(call)} - {""})


def _class_gone(steady: Steady) -> Iterator[Injection]:
    for klass in _classes(steady.call):
        call = steady.call.copy()
        call.required["classes"] = [c for c in call.required["classes"] if c["metadata"]["name"] != klass]
        yield Injection(klass, call, f"InferenceClass {klass}", frozenset({"ClassNotFound"}))


def _class_malformed(steady: Steady) -> Iterator[Injection]:
    for klass in _classes(steady.call):
        call = steady.call.copy()
        for c in call.required["classes"]:
            if c["metadata"]["name"] == klass:
                c.setdefault("spec", {})["devices"] = 7
        yield Injection(klass, call, f"InferenceClass {klass}", frozenset({"ClassNotFound"}))


def _required_replicas(keep: Callable[[Steady, dict[str, Any]], bool]) -> Fault:
    def fault(steady: Steady) -> Iterator[Injection]:
        call = steady.call.copy()
        call.required["replicas"] = [r for r in call.required["replicas"] if keep(steady, r)]
        yield Injection("", call)

    return fault


def _none(_steady: Steady, _replica: dict[str, Any]) -> bool:
    return False


def _not_own(steady: Steady, replica: dict[str, Any]) -> bool:
    return bool(replica["spec"].get("deploymentRef", {}).get("name") != steady.name)


def _shape(edit: Callable[[Call, dict[str, Any]], None], names: str, *reasons: str) -> Fault:
    def fault(steady: Steady) -> Iterator[Injection]:
        call = steady.call.copy()
        for role in _roles(call.xr):
            edit(call, role)
        yield Injection("", call, names, frozenset(reasons))

    return fault


def _cel_syntax(_call: Call, role: dict[str, Any]) -> None:
    role["nodeSelector"]["cel"] = 'device.attributes["gpu.nvidia.com"].productName =='


def _cel_type(_call: Call, role: dict[str, Any]) -> None:
    role["nodeSelector"]["cel"] = "device.driver + 1 == 2"


def _no_pool_fits(_call: Call, role: dict[str, Any]) -> None:
    role["nodeSelector"]["cel"] = 'device.driver == "no-such-driver.example.com"'


def _beyond_node(call: Call, role: dict[str, Any]) -> None:
    # Twice the GPUs of the largest node among the classes the fleet has (within the XRD's bounds).
    # Another fault may have malformed a class: read only the devices lists that are lists.
    lists = [
        (c.get("spec") or {}).get("devices") if isinstance(c.get("spec"), dict) else None
        for c in call.required["classes"]
    ]
    devices = [d for listed in lists if isinstance(listed, list) for d in listed]
    per_node = max((int(d.get("count", 1)) for d in devices if isinstance(d, dict)), default=8)
    role["workers"]["topology"] = {"tensor": min(32, 2 * per_node)}


def _beyond_bounds(_call: Call, role: dict[str, Any]) -> None:
    role["workers"]["topology"] = {"tensor": 1024}


def _unready(steady: Steady) -> Iterator[Injection]:
    for ordinal, replica in sorted(_replicas(steady.call).items()):
        call = steady.call.copy()
        status = call.observed[f"replica-{ordinal}"]["status"]
        status.pop("endpoint", None)
        for c in status.get("conditions", []):
            if c["type"] in ("Ready", "Serving"):
                c.update({"status": "False", "reason": "Unavailable"})
        status["readyVerdict"] = False  # its function's verdict, as it publishes it beside the condition
        yield Injection(replica["metadata"]["name"], call, unready=ordinal)


def _scale_down(steady: Steady) -> Iterator[Injection]:
    ordinals = sorted(_replicas(steady.call))
    call = steady.call.copy()
    call.xr["spec"]["replicas"] = len(ordinals) - 1
    top = ordinals[-1]
    removes = frozenset(k for k in (f"replica-{top}", f"endpoint-{top}") if k in call.observed)
    yield Injection("", call, removes=removes)


# Fault classes that must not drop anything nor change what runs, with what they must report.
FAULTS: dict[str, Fault] = {
    "cluster-gone": _each_host(_remove_cluster, "InferenceCluster {host}", "ClusterNotFound"),
    # Deleting a cluster is the user's act, like a drain: its replicas move, and an event says why.
    "cluster-deleting": _each_host(_delete_cluster, "InferenceCluster {host}", progress=True),
    "cluster-node-count-text": _each_host(_malform(_node_count_text), "InferenceCluster {host}", "ClusterUnreadable"),
    "cluster-node-pools-number": _each_host(
        _malform(_node_pools_number), "InferenceCluster {host}", "ClusterUnreadable"
    ),
    "cluster-labels-list": _each_host(_malform(_labels_list), "InferenceCluster {host}", "ClusterUnreadable"),
    "cluster-conditions-number": _each_host(
        _malform(_conditions_number), "InferenceCluster {host}", "ClusterUnreadable"
    ),
    "cluster-no-spec": _each_host(_malform(_no_spec), "InferenceCluster {host}", "ClusterUnreadable"),
    "pool-renamed": _pool_renamed,
    "class-gone": _class_gone,
    "class-malformed": _class_malformed,
    "replicas-empty": _required_replicas(_none),
    "replicas-omit-own": _required_replicas(_not_own),
    "cel-syntax-error": _shape(_cel_syntax, "nodeSelector.cel", "CELError"),
    "cel-type-error": _shape(_cel_type, "nodeSelector.cel", "CELError"),
    "no-pool-fits": _shape(_no_pool_fits, "nodeSelector.cel", "SelectorMismatch"),
    "topology-beyond-node": _shape(_beyond_node, "workers.topology", "TopologyExceedsNode"),
    "topology-beyond-xrd": _shape(_beyond_bounds, "tensor", "InvalidSpec"),
    "replica-unready": _unready,
}
# The user's own changes: they may remove exactly what they say.
CONTROLS: dict[str, Fault] = {"scale-down": _scale_down}
