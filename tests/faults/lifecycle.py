"""Lifecycle fault classes: a change played call after call from a steady state, as the control plane would.

A drain, a pool taken out of its cluster's spec, a cluster lost past the failover
grace and back, a rollout whose surge replica turns unready, and a serving replica
its cluster gives to a higher priority are not one bad input but a sequence. Each
class starts from a steady state, changes the world at given calls, and plays
compose-model-deployment: what a call composes is observed by the next (a new or
rewritten replica turns Ready one call later, unless it cannot), the fleet's
ModelReplicas follow, and the XR's conditions carry the lastTransitionTime
Crossplane would stamp. Each call is judged: a replica removed without a user
reason is a drop (the user's reasons: it leaves a draining cluster or a pool being
removed, gives way to a higher priority its quota lets preempt it, runs an older
revision, or is surplus once a lost cluster is back), so is a Usage removed while
its replica stays, or a replica desired without a Usage of its cluster's
ServingStack anchor; and the Ready replicas the function keeps unchanged never
fall below ``replicas - maxUnavailable`` (or below those Ready before the call,
when fewer serve: a replica on a lost cluster cannot serve, whatever the function
does).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from crossplane.function import resource

from compose_inference_cluster.removing import removing_pools, removing_status
from modelplane.names import replica_key, usage_key_ordinal
from modelplane.scheduling.strategy import DEFAULT_FAILOVER
from tests.faults.judge import stack_unkept
from tests.faults.steady import Call, Steady

T0 = datetime(2026, 1, 1, tzinfo=UTC)
_STEP = timedelta(seconds=30)
_CALLS = 16
_REVISION = "modelplane.ai/revision"
_V_NEXT = "vllm/vllm-openai:v0.99.0"  # an image no example uses: a new revision
_GIVES_WAY = "it gives way to replicas of a higher priority"
_NEWCOMER = "prod-team/prod-0"  # the replica of a higher priority a cluster gives a serving replica to


@dataclass(frozen=True)
class Play:
    """One lifecycle played from one steady state.

    Attributes:
        target: What it acts on (a cluster, or "" for the deployment).
        call: The steady state's request.
        changes: What happens to the world before a call, by call index.
        unready: Replicas that never turn Ready once composed or rewritten (by name).
        lost: The cluster that is lost, and the calls during which it is.
    """

    target: str
    call: Call
    changes: dict[int, Callable[[Call], None]] = field(default_factory=dict)
    unready: frozenset[str] = frozenset()
    lost: tuple[str, range] = ("", range(0))


@dataclass
class Outcome:
    """What a play did wrong (drops without a user reason, calls below the Ready bound), and where it ended."""

    calls: int = 0
    drops: list[str] = field(default_factory=list)
    below: list[str] = field(default_factory=list)
    min_ready: int | None = None
    where: dict[str, str] = field(default_factory=dict)


def _replicas(call: Call) -> dict[str, dict[str, Any]]:
    return {v["metadata"]["name"]: v for k, v in call.observed.items() if k.startswith("replica-")}


def _ready(body: dict[str, Any]) -> bool:
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _cluster(call: Call, name: str) -> dict[str, Any] | None:
    return next((c for c in call.required["clusters"] if c.get("metadata", {}).get("name") == name), None)


def _stamp(call: Call, got: dict[str, Any], now: datetime) -> None:
    """Carry the call's conditions into the XR's status, a new lastTransitionTime only on a change."""
    status = call.xr.setdefault("status", {})
    before = {c.get("type"): c for c in status.get("conditions") or []}
    out = []
    for c in got.get("conditions", []):
        new = {
            "type": c["type"],
            "status": c["status"].removeprefix("STATUS_CONDITION_").title(),
            "reason": c.get("reason", ""),
            "message": c.get("message", ""),
        }
        old = before.get(c["type"])
        same = old is not None and all(old.get(k) == new[k] for k in ("status", "reason", "message"))
        new["lastTransitionTime"] = old["lastTransitionTime"] if same and old else now.strftime("%Y-%m-%dT%H:%M:%SZ")
        out.append(new)
    status["conditions"] = out


def _observe(call: Call, got: dict[str, Any], play: Play, *, lost: str) -> None:
    """The next call observes what this one composed; the fleet's ModelReplicas follow."""
    template = next((v for v in _replicas(call).values() if _ready(v)), None)
    desired = {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}
    observed: dict[str, dict[str, Any]] = {}
    for key, body in desired.items():
        before = call.observed.get(key)
        item = copy.deepcopy(body)
        if body.get("kind") == "ModelReplica":
            same = before is not None and before.get("spec") == body.get("spec")
            where = body["spec"].get("inferenceClusterRef", {}).get("name")
            serves = same and body["metadata"]["name"] not in play.unready and where != lost
            status = copy.deepcopy((before or template or {}).get("status") or {})
            status.setdefault("conditions", [])
            status["conditions"] = [c for c in status["conditions"] if c.get("type") != "Ready"]
            status["conditions"].append({"type": "Ready", "status": "True" if serves else "False"})
            status["readyVerdict"] = serves  # its function's verdict, as it publishes it beside the condition
            if not serves:
                status.pop("endpoint", None)
            item["status"] = status
        elif before is not None:
            item["status"] = before.get("status", {})
        observed[key] = item
    call.observed = observed
    deployment = call.xr["metadata"]["name"]
    others = [
        r for r in call.required["replicas"] if (r.get("spec") or {}).get("deploymentRef", {}).get("name") != deployment
    ]
    call.required["replicas"] = others + [v for v in observed.values() if v.get("kind") == "ModelReplica"]


def _floor(xr: dict[str, Any], got: dict[str, Any]) -> int:
    """``replicas - maxUnavailable``; with at least 1 unavailable while no surge fits (the in-place fallback)."""
    spec = xr["spec"]
    replicas = int(spec.get("replicas", 1))
    unavailable = ((spec.get("strategy") or {}).get("rollingUpdate") or {}).get("maxUnavailable", 0)
    unavailable = int(unavailable) if isinstance(unavailable, int) else 0
    progressing: dict[str, Any] = next((c for c in got.get("conditions", []) if c.get("type") == "Progressing"), {})
    if "one replica at a time" in progressing.get("message", ""):
        unavailable = max(unavailable, 1)
    # A replica that gives way to a higher priority and fits nowhere else goes one at a time at maxUnavailable 0.
    if any(_GIVES_WAY in r.get("message", "") for r in got.get("results", [])):
        unavailable = max(unavailable, 1)
    return replicas - unavailable


def play(p: Play) -> Outcome:
    """Play ``p`` and judge every call."""
    call = p.call.copy()
    out = Outcome()
    now = T0
    replicas = int(call.xr["spec"].get("replicas", 1))
    for index in range(_CALLS):
        if index in p.changes:
            p.changes[index](call)
        lost = p.lost[0] if index in p.lost[1] else ""
        before = _replicas(call)
        usages = {k for k in call.observed if usage_key_ordinal(k) is not None}
        got = call.run(now)
        desired = got.get("desired", {}).get("resources", {})
        # A replica's Usages keep its cloud cluster and pools: they go with it, never while it stays.
        out.drops += [f"call {index}: {k} removed, its replica kept" for k in sorted(usages) if _exposed(k, desired)]
        # And its cluster's ServingStack, through the stack's anchor, as long as it is desired there.
        bodies = {k: v["resource"] for k, v in desired.items()}
        out.drops += [f"call {index}: {d} missing" for d in stack_unkept(call.required.get("clusters", []), bodies)]
        _stamp(call, got, now)
        _observe(call, got, p, lost=lost)
        after = _replicas(call)
        status = got.get("desired", {}).get("composite", {}).get("resource", {}).get("status", {})
        revision = status.get("observedRevision", "")
        draining = {c["metadata"]["name"] for c in call.required["clusters"] if (c.get("spec") or {}).get("drain")}
        removing = _removing(call)
        preempted = _preempted(call)
        for name in sorted(set(before) - set(after)):
            body = before[name]
            where = body["spec"].get("inferenceClusterRef", {}).get("name")
            old = body["metadata"].get("labels", {}).get(_REVISION) != revision
            surplus = not lost and len(after) >= replicas
            given = f"{body['metadata'].get('namespace', '')}/{name}" in preempted
            if where in draining or old or surplus or given or {(where, p) for p in _pools(body)} & removing:
                continue
            out.drops.append(f"call {index}: {name} removed")
        # The function may take a Ready replica away (retire it, or rewrite it in place) only while the
        # Ready ones it keeps stay at the bound; replicas that stopped serving on their own are not its doing.
        ready_before = sum(_ready(v) for v in before.values())
        bound = min(ready_before, _floor(call.xr, got))
        ready = sum(_ready(v) for n, v in before.items() if n in after and after[n].get("spec") == v.get("spec"))
        out.min_ready = ready if out.min_ready is None else min(out.min_ready, ready)
        if ready < bound:
            out.below.append(f"call {index}: {ready} Ready kept, below {bound}")
        out.calls += 1
        now += _STEP
    out.where = {n: v["spec"].get("inferenceClusterRef", {}).get("name", "") for n, v in _replicas(call).items()}
    return out


def _exposed(usage: str, desired: dict[str, Any]) -> bool:
    ordinal = usage_key_ordinal(usage)
    return ordinal is not None and replica_key(ordinal) in desired and usage not in desired


def _hosts(call: Call) -> list[str]:
    return sorted({v["spec"]["inferenceClusterRef"]["name"] for v in _replicas(call).values()})


def _pools(replica: dict[str, Any]) -> set[str]:
    spec = replica.get("spec") or {}
    return {
        p for p in (spec.get("poolName"), *((spec.get(r) or {}).get("poolName") for r in ("prefill", "decode"))) if p
    }


def _removing(call: Call) -> set[tuple[str, str]]:
    """The (cluster, pool) pairs the clusters keep out of their spec (``status.removingPools``)."""
    return {
        (c["metadata"]["name"], p.get("name"))
        for c in call.required["clusters"]
        for p in ((c.get("status") or {}).get("removingPools") or [])
    }


def _preempted(call: Call) -> set[str]:
    """The serving replicas ("namespace/name") the clusters give to a higher priority (``capacity.preempted``)."""
    return {
        e.get("replica", "")
        for c in call.required["clusters"]
        for e in (((c.get("status") or {}).get("capacity") or {}).get("preempted") or [])
    }


def drain(steady: Steady) -> Iterator[Play]:
    """Each cluster a replica runs on drains."""
    for host in _hosts(steady.call):

        def start(call: Call, host: str = host) -> None:
            cluster = _cluster(call, host)
            if cluster is not None:
                cluster.setdefault("spec", {})["drain"] = True

        yield Play(host, steady.call, {0: start})


def pool_removed(steady: Steady) -> Iterator[Play]:
    """Each pool a replica runs on is taken out of its cluster's spec.nodePools.

    Before every call the cluster publishes ``status.removingPools`` from the fleet's
    ModelReplicas as compose-inference-cluster does (its own code), so the pool stays
    listed while replicas run on it and leaves the list once they have moved.
    """
    hosted = sorted(
        {(v["spec"]["inferenceClusterRef"]["name"], p) for v in _replicas(steady.call).values() for p in _pools(v)}
    )
    for host, pool in hosted:

        def publish(call: Call, host: str = host) -> None:
            cluster = _cluster(call, host)
            if cluster is None:
                return
            in_spec = {p.get("name") for p in (cluster.get("spec") or {}).get("nodePools") or []}
            structs = (resource.dict_to_struct(r) for r in call.required["replicas"])
            kept = removing_status(removing_pools(structs, host, in_spec))
            status = cluster.setdefault("status", {})
            status.pop("removingPools", None)
            if kept:
                status["removingPools"] = kept

        def remove(call: Call, host: str = host, pool: str = pool) -> None:
            cluster = _cluster(call, host)
            if cluster is not None:
                spec = cluster.setdefault("spec", {})
                spec["nodePools"] = [p for p in spec.get("nodePools") or [] if p.get("name") != pool]
            publish(call)

        yield Play(f"{host}/{pool}", steady.call, {0: remove, **dict.fromkeys(range(1, _CALLS), publish)})


def lost_and_back(steady: Steady) -> Iterator[Play]:
    """Each cluster a replica runs on leaves the fleet past the failover grace, then returns."""
    grace = int(DEFAULT_FAILOVER // _STEP.total_seconds())
    for host in _hosts(steady.call):
        kept = copy.deepcopy(_cluster(steady.call, host))

        def leave(call: Call, host: str = host) -> None:
            call.required["clusters"] = [c for c in call.required["clusters"] if c["metadata"]["name"] != host]

        def back(call: Call, kept: dict[str, Any] | None = kept) -> None:
            if kept is not None:
                call.required["clusters"].append(copy.deepcopy(kept))

        yield Play(host, steady.call, {0: leave, grace + 3: back}, lost=(host, range(grace + 3)))


def unready_surge(steady: Steady) -> Iterator[Play]:
    """A new image rolls out and its first surge replica never turns Ready (the rollout must hold)."""
    call = steady.call.copy()
    spec = call.xr["spec"]
    roles = [spec] if "workers" in spec else [spec[r] for r in ("prefill", "decode") if r in spec]
    for role in roles:
        for container in role["workers"]["template"]["spec"]["containers"]:
            container["image"] = _V_NEXT
    ordinals = {int(k.split("-")[1]) for k in call.observed if k.startswith("replica-")}
    # The first surge takes the lowest unused ordinal.
    first = next(i for i in range(len(ordinals) + 1) if i not in ordinals)
    yield Play("", call, {}, unready=frozenset({f"{call.xr['metadata']['name']}-{first}"}))


def preempted(steady: Steady) -> Iterator[Play]:
    """Each serving replica is given by its cluster to a replica of a higher priority (another team's).

    Before every call its cluster lists it in ``status.capacity.preempted`` while it exists, as
    compose-inference-cluster would while the newcomer waits for its GPUs; once it is gone, no longer.
    """
    for name, body in sorted(_replicas(steady.call).items()):
        if not _ready(body):
            continue
        host = body["spec"]["inferenceClusterRef"]["name"]
        victim = f"{body['metadata'].get('namespace', '')}/{name}"

        def publish(call: Call, host: str = host, victim: str = victim, name: str = name) -> None:
            cluster = _cluster(call, host)
            if cluster is None:
                return
            capacity = cluster.setdefault("status", {}).setdefault("capacity", {})
            if name in _replicas(call):
                capacity["preempted"] = [{"replica": victim, "by": _NEWCOMER}]
            else:
                capacity.pop("preempted", None)

        yield Play(f"{host}/{name}", steady.call, dict.fromkeys(range(_CALLS), publish))


Lifecycle = Callable[[Steady], Iterator[Play]]
LIFECYCLES: dict[str, Lifecycle] = {
    "cluster-drained": drain,
    # The user takes a pool out of spec.nodePools: its replicas move surge-first, none is dropped.
    "pool-removed-from-spec": pool_removed,
    "cluster-lost-and-back": lost_and_back,
    "rollout-surge-unready": unready_surge,
    # A cluster gives a serving replica to a higher priority: it moves surge-first, or within maxUnavailable.
    "serving-replica-preempted": preempted,
}
