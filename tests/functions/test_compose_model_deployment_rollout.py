"""Rolling updates, drains and failover through the ModelDeployment function, call after call.

Each test starts from the steady state of ``test_compose_model_deployment_hold``
(llm-0 on east, llm-1 on west, one free cluster south; one 8-GPU node each) and
plays the control plane: what a call composes is observed by the next, a new
replica turns Ready one call after it is composed, and the XR's conditions are
carried with the lastTransitionTime Crossplane would stamp. The clock is injected.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from google.protobuf import json_format

from compose_model_deployment.fn import FunctionRunner
from tests.functions.test_compose_model_deployment_hold import REVISION, World, _cluster_named, _xr
from tests.unit.fleet import Shape

SERVING = "modelplane.ai/serving"
REVISION_LABEL = "modelplane.ai/revision"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
V12 = Shape(tensor=8, template={"spec": {"containers": [{"name": "main", "image": "vllm/vllm-openai:v0.12.0"}]}})


def _call(world: World, now: datetime) -> dict[str, Any]:
    rsp = asyncio.run(FunctionRunner(clock=lambda: now).RunFunction(world.request(), None))
    got: dict[str, Any] = json_format.MessageToDict(rsp)
    return got


def _condition(got: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == kind)


def _stamp(world: World, got: dict[str, Any], now: datetime) -> None:
    """Carry the call's conditions into the XR's status, as Crossplane does (a new time only on a change)."""
    status = world.xr.setdefault("status", {})
    before = {c["type"]: c for c in status.get("conditions", [])}
    conditions = []
    for c in got.get("conditions", []):
        status_text = c["status"].removeprefix("STATUS_CONDITION_").title()
        new = {"type": c["type"], "status": status_text, "reason": c["reason"], "message": c.get("message", "")}
        old = before.get(c["type"])
        same = old is not None and all(old[k] == new[k] for k in ("status", "reason", "message"))
        new["lastTransitionTime"] = old["lastTransitionTime"] if same and old else now.strftime("%Y-%m-%dT%H:%M:%SZ")
        conditions.append(new)
    status["conditions"] = conditions


def _observe(world: World, got: dict[str, Any], *, hold_back: frozenset[str] = frozenset()) -> None:
    """What the call composed is observed next: replicas Ready one call after they appear (but ``hold_back``)."""
    desired = {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}
    observed: dict[str, dict[str, Any]] = {}
    for key, body in desired.items():
        before = world.observed.get(key)
        item = copy.deepcopy(body)
        if body.get("kind") == "ModelReplica":
            same = before is not None and before.get("spec") == body.get("spec")
            ready = same and body["metadata"]["name"] not in hold_back
            if same and before is not None and before["status"]["conditions"][0]["status"] == "False":
                ready = ready and True
            item["status"] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
            if ready:
                where = body["spec"]["inferenceClusterRef"]["name"]
                host = f"{body['metadata']['name']}.ml.replicas.modelplane.ai"
                item["status"]["endpoint"] = {"url": f"http://{where}.example/", "host": host}
        elif before is not None:
            item["status"] = before.get("status", {})
        observed[key] = item
    world.observed = observed


def _ready(world: World) -> set[str]:
    return {
        v["metadata"]["name"]
        for k, v in world.observed.items()
        if k.startswith("replica-") and v["status"]["conditions"][0]["status"] == "True"
    }


def _serving_routes(world: World) -> set[str]:
    """Endpoints that carry traffic: composed, and not annotated as not serving."""
    return {
        v["metadata"]["name"]
        for k, v in world.observed.items()
        if k.startswith("endpoint-")
        and (v["metadata"].get("annotations") or {}).get("modelplane.ai/serving") != "false"
    }


def _where(world: World) -> dict[str, tuple[str, str]]:
    return {
        v["metadata"]["name"]: (
            v["spec"]["inferenceClusterRef"]["name"],
            v["metadata"]["labels"]["modelplane.ai/revision"],
        )
        for k, v in world.observed.items()
        if k.startswith("replica-")
    }


def _roll(world: World, *, steps: int = 12, hold_back: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Call until nothing changes; each step's Ready replicas, routes, placements and Progressing reason."""
    trace = []
    now = T0
    for _ in range(steps):
        got = _call(world, now)
        _stamp(world, got, now)
        _observe(world, got, hold_back=hold_back)
        trace.append(
            {
                "ready": sorted(_ready(world)),
                "routes": sorted(_serving_routes(world)),
                "where": _where(world),
                "progressing": _condition(got, "Progressing")["reason"] if got.get("conditions") else "",
                "status": got["desired"]["composite"]["resource"].get("status", {}),
            }
        )
        if len(trace) > 1 and trace[-1]["where"] == trace[-2]["where"] and trace[-1]["ready"] == trace[-2]["ready"]:
            break
        now += timedelta(seconds=30)
    return trace


def test_an_image_upgrade_rolls_one_replica_at_a_time_and_never_drops_below_two_ready() -> None:
    world = World()
    world.xr = _xr(shape=V12)
    trace = _roll(world)
    assert min(len(step["ready"]) for step in trace) == 2
    assert all(len(step["routes"]) >= 2 for step in trace)
    new = {r for r, (_, revision) in trace[-1]["where"].items() if revision != REVISION}
    assert len(new) == 2 and len(trace[-1]["where"]) == 2
    assert trace[-1]["progressing"] == "RolloutComplete"
    assert "RolloutInProgress" in [s["progressing"] for s in trace]
    # Never more than one replica beyond spec.replicas (maxSurge 1).
    assert max(len(step["where"]) for step in trace) == 3
    assert trace[-1]["status"]["updatedReplicas"] == 2


def test_a_rollback_goes_the_same_way() -> None:
    world = World()
    world.xr = _xr(shape=V12)
    _roll(world)
    world.xr = _xr()
    trace = _roll(world)
    assert {revision for _, revision in trace[-1]["where"].values()} == {REVISION}
    assert min(len(step["ready"]) for step in trace) == 2


def test_paused_stops_the_rollout() -> None:
    world = World()
    world.xr = _xr(shape=V12)
    world.xr["spec"]["paused"] = True
    trace = _roll(world)
    assert {revision for _, revision in trace[-1]["where"].values()} == {REVISION}
    assert trace[-1]["progressing"] == "RolloutPaused"


def test_a_rollout_that_cannot_surge_updates_in_place_one_at_a_time() -> None:
    world = World()
    world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "south"]
    world.xr = _xr(shape=V12)
    got = _call(world, T0)
    progressing = _condition(got, "Progressing")
    assert "no surge replica can be placed" in progressing["message"]
    trace = _roll(world)
    assert min(len(step["ready"]) for step in trace[1:]) >= 1
    assert {revision for _, revision in trace[-1]["where"].values()} != {REVISION}


def test_a_rollout_that_does_not_progress_stalls_naming_the_replica() -> None:
    world = World()
    world.xr = _xr(shape=V12)
    now = T0
    got = _call(world, now)
    _stamp(world, got, now)
    _observe(world, got, hold_back=frozenset({"llm-2"}))
    for minutes in (1, 5, 11):
        now = T0 + timedelta(minutes=minutes)
        got = _call(world, now)
        _stamp(world, got, now)
        _observe(world, got, hold_back=frozenset({"llm-2"}))
    progressing = _condition(got, "Progressing")
    assert progressing["reason"] == "RolloutStalled"
    assert "llm-2 has not become Ready within 600s" in progressing["message"]
    # Still stalled, with the same condition, on the next call.
    got = _call(world, now + timedelta(minutes=1))
    assert _condition(got, "Progressing")["message"] == progressing["message"]


def test_a_drain_moves_replicas_off_the_cluster_surge_first() -> None:
    world = World()
    _cluster_named(world, "east")["spec"]["drain"] = True
    trace = _roll(world)
    assert min(len(step["ready"]) for step in trace) == 2
    assert all(where != "east" for where, _ in trace[-1]["where"].values())
    assert [p["state"] for p in trace[0]["status"]["placements"]] == ["Leaving", "Current", "Surge"]


def test_a_drain_that_cannot_move_says_why() -> None:
    world = World()
    world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "south"]
    _cluster_named(world, "east")["spec"]["drain"] = True
    got = _call(world, T0)
    assert {p["replica"]: p["state"] for p in got["desired"]["composite"]["resource"]["status"]["placements"]} == {
        "llm-0": "Leaving",
        "llm-1": "Current",
    }
    assert "InsufficientCapacity" in _condition(got, "Scheduled")["message"] or "NoMatchingClusters" in str(got)


@pytest.mark.parametrize("lost", ["not-ready", "absent"])
def test_a_lost_cluster_is_failed_over_after_the_grace_and_the_surplus_retired_when_it_returns(lost: str) -> None:
    world = World()
    east = _cluster_named(world, "east")
    if lost == "not-ready":
        east["status"] = {
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        }
    else:
        world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "east"]
    world.observed["replica-0"]["status"] = {"conditions": [{"type": "Ready", "status": "False"}]}
    # Within the grace: kept, not replaced; the TTL asks for a call when the grace runs out.
    got = _call(world, T0)
    _stamp(world, got, T0)
    assert sorted(k for k in got["desired"]["resources"] if k.startswith("replica-")) == ["replica-0", "replica-1"]
    assert _condition(got, "Failover")["reason"] == "ClusterLost"
    assert 0 < float(got["meta"]["ttl"].removesuffix("s")) <= 60
    # Past the grace: a replacement elsewhere, the lost replica kept.
    later = T0 + timedelta(minutes=6)
    got = _call(world, later)
    desired = got["desired"]["resources"]
    assert sorted(k for k in desired if k.startswith("replica-")) == ["replica-0", "replica-1", "replica-2"]
    assert desired["replica-2"]["resource"]["spec"]["inferenceClusterRef"] == {"name": "south"}
    assert desired["replica-2"]["resource"]["metadata"]["annotations"] == {
        "modelplane.ai/replaces": "llm-0",
        "modelplane.ai/placed-by": '{"decidedBy":"OnlyCandidate",'
        '"why":"only candidate: no other cluster can take it now"}',
    }
    states = {p["replica"]: p["state"] for p in got["desired"]["composite"]["resource"]["status"]["placements"]}
    assert states == {"llm-0": "Lost", "llm-1": "Current", "llm-2": "Surge"}
    down = frozenset({"llm-0"})  # it cannot turn Ready while its cluster is lost
    _observe(world, got, hold_back=down)
    # The replacement stays even if the grace's clock restarts (the annotation holds the failover).
    world.xr.pop("status", None)
    got = _call(world, later)
    assert "replica-2" in got["desired"]["resources"] and "replica-0" in got["desired"]["resources"]
    _observe(world, got, hold_back=down)
    # The cluster returns: the surplus goes by the normal scale-down order (the not-Ready llm-0 first).
    world.clusters = World().clusters
    got = _call(world, later + timedelta(minutes=1))
    assert sorted(k for k in got["desired"]["resources"] if k.startswith("replica-")) == ["replica-1", "replica-2"]


def test_failover_disabled_keeps_replicas_and_says_so() -> None:
    world = World()
    world.xr["spec"]["failover"] = {"after": "0"}
    world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "east"]
    got = _call(world, T0 + timedelta(hours=2))
    assert sorted(k for k in got["desired"]["resources"] if k.startswith("replica-")) == ["replica-0", "replica-1"]
    assert "failover is disabled" in _condition(got, "Failover")["message"]


def test_every_call_is_deterministic() -> None:
    world = World()
    world.xr = _xr(shape=V12)
    first = _call(world, T0)
    assert all(_call(world, T0) == first for _ in range(3))


def _scheduled_trace(world: World, *, steps: int = 12) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each call's Scheduled and Progressing conditions while rolling until nothing changes."""
    out = []
    now = T0
    for _ in range(steps):
        got = _call(world, now)
        _stamp(world, got, now)
        before = (_where(world), _ready(world))
        _observe(world, got)
        out.append((_condition(got, "Scheduled"), _condition(got, "Progressing")))
        if (_where(world), _ready(world)) == before:
            break
        now += timedelta(seconds=30)
    return out


def test_a_surge_waiting_for_gpus_the_rollout_releases_is_progress_not_a_scheduling_failure() -> None:
    # Three 8-GPU clusters, two TP=8 replicas: the second surge fits only where the first retired replica ran.
    world = World()
    world.xr = _xr(shape=V12)
    trace = _scheduled_trace(world)
    assert [s["status"] for s, _ in trace] == ["STATUS_CONDITION_TRUE"] * len(trace)
    assert all(s["message"] == "placed 2 of 2" for s, _ in trace)
    waiting = [p["message"] for _, p in trace if "GPUs to be released" in p["message"]]
    assert len(waiting) == 1
    assert waiting[0].endswith("llm-3 is waiting for llm-0's GPUs to be released")
    assert trace[-1][1]["reason"] == "RolloutComplete"


def test_a_healthy_drain_keeps_scheduled_true_and_counts_the_leaving_replica_apart() -> None:
    world = World()
    _cluster_named(world, "east")["spec"]["drain"] = True
    trace = _scheduled_trace(world)
    assert [s["status"] for s, _ in trace] == ["STATUS_CONDITION_TRUE"] * len(trace)
    assert trace[0][0]["message"] == "placed 2 of 2 (1 leaving: llm-0)"
    assert trace[-1][0]["message"] == "placed 2 of 2"
    got = _call(World(), T0)
    assert "leaving" not in _condition(got, "Scheduled")["message"]


@pytest.mark.parametrize(
    ("rolling", "room", "want_ready", "want_east"),
    [
        # maxSurge 0: nothing can be surged; the drain retires within maxUnavailable, then replaces elsewhere.
        pytest.param({"maxSurge": 0, "maxUnavailable": 1}, True, 1, False, id="retire-then-replace"),
        # No room anywhere: retiring llm-0 would only lose it; it stays, and Progressing names it and why.
        pytest.param({"maxSurge": 0, "maxUnavailable": 1}, False, 2, True, id="no-room-unavailable-1"),
        pytest.param({"maxSurge": 1, "maxUnavailable": 1}, False, 2, True, id="no-room-surge-1-unavailable-1"),
        pytest.param({"maxSurge": 1, "maxUnavailable": 0}, False, 2, True, id="no-room-unavailable-0"),
    ],
)
def test_a_drain_within_max_unavailable_never_retires_a_replica_it_cannot_replace(
    rolling: dict[str, int], room: bool, want_ready: int, want_east: bool
) -> None:
    world = World()
    world.xr["spec"]["strategy"] = {"rollingUpdate": rolling}
    if not room:
        world.clusters = [c for c in world.clusters if c["metadata"]["name"] != "south"]
    _cluster_named(world, "east")["spec"]["drain"] = True
    trace = _roll(world)
    assert min(len(step["ready"]) for step in trace) == want_ready
    assert ("east" in {where for where, _ in trace[-1]["where"].values()}) is want_east
    assert len(trace[-1]["where"]) == 2
    annotations = [
        (r["resource"]["metadata"].get("annotations") or {}).get("modelplane.ai/cannot-move", "")
        for r in _call(world, T0)["desired"]["resources"].values()
    ]
    # The leaving replica that cannot move says why, for its cluster's drain status.
    assert [a.split(" (")[0] for a in annotations if a] == ([] if room else ["no replacement can be placed"])
    if not room:
        progressing = _condition(_call(world, T0), "Progressing")
        assert progressing["reason"] == "RolloutInProgress"
        assert "llm-0 cannot move: no replacement can be placed (InsufficientCapacity: " in progressing["message"]
        # Past the deadline it stalls, naming the replica that cannot move.
        got = _call(world, T0)
        _stamp(world, got, T0)
        stalled = _condition(_call(world, T0 + timedelta(minutes=11)), "Progressing")
        assert stalled["reason"] == "RolloutStalled"
        assert "; llm-0 could not move within 600s" in stalled["message"]


_ENGINE = {"name": "main", "image": "vllm/vllm-openai:v0.11.0"}
_POD_FIELDS = [
    pytest.param(
        {
            "containers": [{**_ENGINE, "volumeMounts": [{"name": "weights", "mountPath": "/models"}]}],
            "volumes": [{"name": "weights", "persistentVolumeClaim": {"claimName": "llama"}}],
        },
        id="volumes-and-mounts",
    ),
    pytest.param(
        {"containers": [_ENGINE], "initContainers": [{"name": "fetch", "image": "busybox:1.36"}]},
        id="initContainers",
    ),
    pytest.param({"containers": [_ENGINE], "securityContext": {"runAsNonRoot": True}}, id="pod-securityContext"),
    pytest.param(
        {"containers": [{**_ENGINE, "securityContext": {"readOnlyRootFilesystem": True}}]},
        id="container-securityContext",
    ),
    pytest.param({"containers": [_ENGINE], "priorityClassName": "inference-high"}, id="priorityClassName"),
    pytest.param(
        {
            "containers": [_ENGINE],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
                }
            },
        },
        id="affinity",
    ),
]


@pytest.mark.parametrize("pod_spec", _POD_FIELDS)
def test_a_change_of_a_pod_template_field_rolls_out_like_an_image_upgrade(pod_spec: dict[str, Any]) -> None:
    world = World()
    world.xr = _xr(shape=Shape(tensor=8, template={"spec": pod_spec}))
    trace = _roll(world)
    # A new revision on every replica, reached one surge at a time, each replica carrying the field.
    assert {revision for _, revision in trace[-1]["where"].values()} != {REVISION}
    assert len({revision for _, revision in trace[-1]["where"].values()}) == 1
    assert min(len(step["ready"]) for step in trace) == 2
    assert trace[-1]["progressing"] == "RolloutComplete"
    replicas = [v for k, v in world.observed.items() if k.startswith("replica-")]
    assert [r["spec"]["workers"]["template"]["spec"] for r in replicas] == [pod_spec] * 2
