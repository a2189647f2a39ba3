"""Fault injection: from each settled example fleet, break one input of compose-model-deployment at a time.

For every steady state (a ModelDeployment that runs replicas once its fleet
settles) and every fault class, the function must drop nothing without a user
reason, leave what runs unchanged, and report each fault that must be reported
(``Scheduled`` not True, with a warning naming the input). The user's own
changes (scaling down, deleting the cluster a replica runs on) are the
controls: they remove exactly what they say, and only once that is safe.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.names import replica_key, usage_key_ordinal
from tests.faults.campaign import run, run_cluster_faults, run_lifecycles
from tests.faults.faults import CONTROLS, FAULTS, Injection
from tests.faults.judge import judge
from tests.faults.lifecycle import LIFECYCLES, Play, play
from tests.faults.pools import judge_removal, removals
from tests.faults.steady import FLEETS, Call, Steady, steady_states

# Fleets whose deployments run replicas once settled (the others only show scheduling failures).
RUNNING = [f for f in FLEETS if f not in ("scheduling/bad-cel", "scheduling/no-matching-cluster")]


def _each(fleet: str) -> list[Steady]:
    states = list(steady_states(fleet))
    assert states, f"no ModelDeployment runs replicas in {fleet} once it settles"
    return states


def test_the_steady_states_are_steady() -> None:
    # Guards the suite: every steady state answers itself unchanged, so any change below is the fault's doing.
    ids = []
    for fleet in RUNNING:
        for steady in _each(fleet):
            verdict = judge(Injection("", steady.call), steady.call.run())
            assert verdict.ok, f"{steady.id}: {verdict.describe()}"
            ids.append(steady.id)
    assert len(ids) >= 14


@pytest.mark.parametrize("fault", [pytest.param(name, id=name) for name in FAULTS])
@pytest.mark.parametrize("fleet", [pytest.param(name, id=name) for name in RUNNING])
def test_a_fault_drops_nothing_changes_nothing_and_is_reported(fleet: str, fault: str) -> None:
    totals = run([fleet], {fault: FAULTS[fault]})
    assert totals.runs, f"{fault} has no target in {fleet}"
    assert totals.failures == []


def test_scaling_down_removes_exactly_the_highest_ordinal() -> None:
    for fleet in RUNNING:
        for steady in _each(fleet):
            (injection,) = CONTROLS["scale-down"](steady)
            got = injection.call.run()
            verdict = judge(injection, got)
            assert verdict.ok, f"{steady.id}: {verdict.describe()}"
            desired = got.get("desired", {}).get("resources", {})
            assert injection.removes, steady.id
            assert not injection.removes & set(desired), f"{steady.id}: {sorted(injection.removes & set(desired))}"


def _serving(replica: dict[str, Any], observed_like: dict[str, Any]) -> dict[str, Any]:
    """A composed replica as observed once it serves: Ready, reachable on its cluster's gateway."""
    name = replica["metadata"]["name"]
    status = {
        "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
        "readyVerdict": True,
        "endpoint": {"url": "http://198.51.100.7/", "host": f"{name}.{replica['metadata']['namespace']}.replicas"},
    }
    return {**replica, "metadata": {**observed_like["metadata"], **replica["metadata"]}, "status": status}


def _hosted(call: Call, cluster: str) -> set[str]:
    return {
        k
        for k, v in call.observed.items()
        if k.startswith("replica-") and v["spec"]["inferenceClusterRef"]["name"] == cluster
    }


def _with_endpoints(keys: set[str]) -> set[str]:
    return keys | {k.replace("replica-", "endpoint-") for k in keys}


def test_a_deleted_cluster_keeps_its_replicas_until_their_replacements_serve() -> None:
    retired = 0
    for fleet in RUNNING:
        for steady in _each(fleet):
            for injection in FAULTS["cluster-deleting"](steady):
                call, cluster = injection.call, injection.target
                first = call.run()
                assert judge(injection, first).ok
                desired = {k: v["resource"] for k, v in first["desired"]["resources"].items()}
                fresh = sorted(k for k in desired if k.startswith("replica-") and k not in call.observed)
                # The replacements come up; the cluster is still being deleted.
                after = call.copy()
                after.observed |= {k: _serving(desired[k], next(iter(call.observed.values()))) for k in fresh}
                second = after.run()
                left = set(second["desired"]["resources"])
                gone = {k for k in _hosted(call, cluster) if k not in left}
                # Each replacement that serves retires at most one replica there, with its endpoint, and says so.
                assert len(gone) <= len(fresh), f"{steady.id}[{cluster}]: retired {sorted(gone)} for {fresh}"
                assert not {k.replace("replica-", "endpoint-") for k in gone} & left
                normal = [r["message"] for r in second.get("results", []) if r["severity"] == "SEVERITY_NORMAL"]
                assert len([m for m in normal if m.startswith("retired ")]) == len(gone), normal
                assert judge(Injection(cluster, after, removes=frozenset(_with_endpoints(gone))), second).ok
                retired += len(gone)
    assert retired, "no steady state had room to replace a replica: the control proves nothing"


def test_a_deleted_cloud_clusters_objects_stay_used_while_its_replicas_run_and_a_drop_is_seen() -> None:
    # The cloud objects are kept by the replicas' Usages (status.cloudResourceRefs): each stays while its replica does.
    checked = 0
    for steady in steady_states("platform+models"):
        for injection in FAULTS["cluster-deleting"](steady):
            used = sorted(k for k in injection.call.observed if k.startswith("usage-"))
            if not used:
                continue
            got = injection.call.run()
            desired = got["desired"]["resources"]
            kept = [k for k in used if replica_key(usage_key_ordinal(k) or 0) in desired]
            assert all(k in desired for k in kept), f"{steady.id}: {sorted(set(kept) - set(desired))}"
            assert judge(injection, got).ok
            desired.pop(kept[0])
            assert kept[0] in judge(injection, got).dropped
            checked += 1
    assert checked, "no steady state runs a replica on a cloud cluster: the control proves nothing"


def _stack_usages(desired: dict[str, Any]) -> list[str]:
    """The Usages of a ServingStack anchor (a ConfigMap) among desired resources."""
    return sorted(
        k for k, v in desired.items() if k.startswith("usage-") and v["resource"]["spec"]["of"]["kind"] == "ConfigMap"
    )


def test_a_deleted_clusters_stack_stays_used_while_its_replicas_run_and_a_missing_usage_is_seen() -> None:
    # Every cluster, Existing ones too, publishes its ServingStack's anchor (status.stackResourceRefs): each
    # replica on a cluster being deleted keeps a Usage of it, which holds the stack's Helm releases and
    # gateway until the replica has moved. The judge counts one missing as a drop: removed while its replica
    # stays, and also never composed (which the rule on Usages observed before could not see).
    checked = 0
    for fleet in RUNNING:
        for steady in _each(fleet):
            for injection in FAULTS["cluster-deleting"](steady):
                hosted = _hosted(injection.call, injection.target)
                got = injection.call.run()
                desired = got["desired"]["resources"]
                used = [k for k in _stack_usages(desired) if replica_key(usage_key_ordinal(k) or 0) in hosted]
                assert len(used) == len(hosted), f"{steady.id}[{injection.target}]: {used} for {sorted(hosted)}"
                assert judge(injection, got).ok
                desired.pop(used[0])
                # Removed while its replica stays (observed before), and missing for a replica there.
                dropped = judge(injection, got).dropped
                assert used[0] in dropped, f"{steady.id}: {used[0]} removed, not seen"
                missing = [d for d in dropped if d.startswith("Usage of ConfigMap")]
                assert len(missing) == 1, f"{steady.id}: {used[0]} missing, not seen"
                never = injection.call.copy()
                never.observed.pop(used[0])
                assert used[0] in never.run()["desired"]["resources"]  # composed then: no drop
                assert judge(Injection(injection.target, never), got).dropped == tuple(missing)
                checked += 1
    assert checked >= 14, "too few replicas on a cluster publishing its stack's anchor: the control proves little"


@pytest.mark.parametrize("lifecycle", [pytest.param(name, id=name) for name in LIFECYCLES])
@pytest.mark.parametrize("fleet", [pytest.param(name, id=name) for name in RUNNING])
def test_a_lifecycle_drops_nothing_and_keeps_ready_at_the_bound(fleet: str, lifecycle: str) -> None:
    totals = run_lifecycles([fleet], {lifecycle: LIFECYCLES[lifecycle]})
    assert totals.plays, f"{lifecycle} has no target in {fleet}"
    assert totals.failures == []


def test_the_plays_move_replicas_and_hold_what_must_hold() -> None:
    # Guards the plays themselves: a clean verdict must not come from a play that did nothing.
    (steady,) = steady_states("scheduling/drain")
    drained = {p.target: play(p) for p in LIFECYCLES["cluster-drained"](steady)}
    assert "drain-a" not in drained["drain-a"].where.values()
    assert drained["drain-a"].min_ready == 3
    (rollout,) = LIFECYCLES["rollout-surge-unready"](steady)
    held = play(rollout)
    # The surge never serves: the rollout waits on it, every old replica still serving.
    assert held.min_ready == 3
    assert sorted(held.where) == sorted(
        [
            *(steady.call.observed[k]["metadata"]["name"] for k in steady.call.observed if k.startswith("replica-")),
            *rollout.unready,
        ]
    )


class _Dropping(Call):
    """A function that forgets its highest replica on the third call: the judge must see it."""

    calls = 0

    def run(self, now: Any = None) -> dict[str, Any]:
        got = super().run(now)
        _Dropping.calls += 1
        if _Dropping.calls == 3:
            resources = got["desired"]["resources"]
            top = max(k for k in resources if k.startswith("replica-"))
            resources.pop(top)
        return got


def test_the_lifecycle_judge_sees_a_drop() -> None:
    (steady,) = steady_states("scheduling/scale")
    base = steady.call
    _Dropping.calls = 0
    outcome = play(Play("", _Dropping(base.xr, base.observed, base.required)))
    assert outcome.drops and outcome.drops[0].startswith("call 2: ")


@pytest.mark.parametrize("fleet", [pytest.param(name, id=name) for name in FLEETS])
def test_a_pool_removed_from_spec_keeps_what_runs_on_it_and_says_so(fleet: str) -> None:
    totals = run_cluster_faults([fleet])
    assert totals.runs, f"no pool in {fleet}"
    assert totals.failures == []


def test_a_removed_pool_without_replicas_is_deleted_and_a_drop_is_seen() -> None:
    # Guards the class: its control removes exactly the empty pool, and its judge sees a cloud pool dropped.
    found = {(r.cluster, r.pool): r for r in removals("platform+models")}
    empty = found["eks-us-west-2", "h100"]
    assert not empty.replicas
    got = empty.call.run()
    assert judge_removal(empty, got).ok
    assert "nodepool-h100" in empty.call.observed
    assert "nodepool-h100" not in got["desired"]["resources"]
    used = found["gke-us-central1", "l4"]
    got = used.call.run()
    assert got["desired"]["resources"]["nodepool-l4"]["resource"]["kind"] == "NodePool"
    got["desired"]["resources"].pop("nodepool-l4")
    assert judge_removal(used, got).dropped == ("nodepool-l4",)


def test_a_removed_pools_replicas_move_off_it() -> None:
    (steady,) = steady_states("scheduling/drain")
    moved = {p.target: play(p) for p in LIFECYCLES["pool-removed-from-spec"](steady)}
    assert "drain-a" not in moved["drain-a/hgx"].where.values()
    assert moved["drain-a/hgx"].min_ready == 3


def test_a_preempted_replica_moves_off_surge_first() -> None:
    # Guards the class: the replica its cluster gives away does leave, and Ready never dips while room exists.
    (steady,) = steady_states("scheduling/preempted")
    (given,) = LIFECYCLES["serving-replica-preempted"](steady)
    outcome = play(given)
    assert outcome.drops == []
    assert outcome.where == {"llama-8b-preempted-1": "preempted-b"}
    assert outcome.min_ready == 1
