"""Every example XR renders exactly as its golden file says (regenerate with `make goldens`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.golden.cases import GOLDEN, SCENARIOS, Case, cases, render_case
from tests.golden.scenarios import STEPS

CASES = cases()
BY_ID = {c.id: c for c in CASES}


def test_there_are_cases() -> None:
    assert CASES, "no Modelplane XR found under examples/"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_render_matches_golden(case: Case) -> None:
    assert case.golden.is_file(), f"{case.golden} is missing: run `make goldens` and review it"
    assert render_case(case) == case.golden.read_text(), f"{case.id} drifted from its golden file: run `make goldens`"


def test_no_stale_goldens() -> None:
    wanted = {c.golden for c in CASES}
    stale = sorted(str(p) for p in GOLDEN.rglob("*.yaml") if p not in wanted)
    assert not stale, f"golden files no example produces (run `make goldens`): {stale}"


def test_every_scenario_renders_a_deployment() -> None:
    scenarios = sorted(d.name for d in SCENARIOS.iterdir() if d.is_dir())
    rendered = Counter(c.id.split("/")[1] for c in CASES if c.id.startswith("scheduling/"))
    assert scenarios
    assert [s for s in scenarios if not rendered[s]] == []
    assert sorted(set(STEPS) - set(scenarios)) == [], "STEPS names a scenario with no directory"


@dataclass(frozen=True)
class Claim:
    """What a scenario's golden file must show, whatever `make goldens` writes.

    Attributes:
        scheduled: The Scheduled condition's reason.
        placements: Replica -> (cluster, pool per role).
        message: The start of the Scheduled condition's message.
        ready: The replicas whose placement is reported ready.
    """

    scheduled: str
    placements: dict[str, tuple[str, dict[str, str]]]
    message: str = ""
    ready: tuple[str, ...] = ()


def _on(cluster: str, pool: str) -> tuple[str, dict[str, str]]:
    return cluster, {"unified": pool}


# The point of each scenario, so that a scheduler change that breaks one cannot hide in a regenerated golden.
CLAIMS: dict[str, Claim] = {
    # The L4 pool is the best fit for one GPU, though the H100 pool qualifies too.
    "single-gpu/modeldeployment-ml-team-qwen-7b": Claim("Scheduled", {"qwen-7b-0": _on("single-gpu-lab", "l4")}),
    # Two TP=4 replicas on hgx-a, a pool of one 8-GPU node; hgx-b stays whole.
    "tensor-parallel/modeldeployment-ml-team-llama-70b-tp4": Claim(
        "Scheduled",
        {
            "llama-70b-tp4-0": _on("tensor-parallel-hgx", "hgx-a"),
            "llama-70b-tp4-1": _on("tensor-parallel-hgx", "hgx-a"),
        },
    ),
    # A two-node InfiniBand worker fits only the cluster with two InfiniBand nodes.
    "multi-node/modeldeployment-ml-team-kimi-k2-pp2": Claim(
        "Scheduled", {"kimi-k2-pp2-0": _on("multi-node-pair", "hgx")}
    ),
    # 5P3D: prefill on the H100 pool, decode on the H200 pool, one cluster.
    "disaggregated/modeldeployment-ml-team-deepseek-r1-5p3d": Claim(
        "Scheduled", {"deepseek-r1-5p3d-0": ("disaggregated-dc1", {"prefill": "h100", "decode": "h200"})}
    ),
    # The other team's model that holds one of east's nodes, pinned there by its clusterSelector.
    "insufficient-capacity/modeldeployment-analytics-mixtral": Claim(
        "Scheduled", {"mixtral-0": _on("insufficient-capacity-east", "hgx")}
    ),
    "insufficient-capacity/modeldeployment-ml-team-llama-405b-fp8": Claim(
        "InsufficientCapacity",
        {
            "llama-405b-fp8-0": _on("insufficient-capacity-east", "hgx"),
            "llama-405b-fp8-1": _on("insufficient-capacity-west", "hgx"),
        },
        "placed 2 of 3: llama-405b-fp8-2: InsufficientCapacity: 3 of 3 clusters match clusterSelector",
    ),
    "no-matching-cluster/modeldeployment-ml-team-gemma-sa": Claim(
        "NoMatchingClusters", {}, "placed 0 of 1: gemma-sa-0: NoMatchingClusters: 0 of 3 clusters match"
    ),
    "no-matching-cluster/modeldeployment-ml-team-gemma-apac": Claim(
        "NoMatchingClusters", {}, "placed 0 of 1: gemma-apac-0: NoMatchingClusters: 1 of 3 clusters match"
    ),
    "bad-cel/modeldeployment-ml-team-mistral-compile": Claim(
        "CELError", {}, "placed 0 of 1: mistral-compile-0: CELError"
    ),
    "bad-cel/modeldeployment-ml-team-mistral-runtime": Claim(
        "CELError", {}, "placed 0 of 1: mistral-runtime-0: CELError"
    ),
    # Sticky: the replica placed on sticky-old stays there once sticky-new appears, though a fresh
    # placement on the same fleet (the control) takes sticky-new.
    "sticky/1-placed/modeldeployment-ml-team-qwen-235b": Claim("Scheduled", {"qwen-235b-0": _on("sticky-old", "hgx")}),
    "sticky/2-new-cluster/modeldeployment-ml-team-qwen-235b": Claim(
        "Scheduled", {"qwen-235b-0": _on("sticky-old", "hgx")}, ready=("qwen-235b-0",)
    ),
    "sticky/3-control-fresh/modeldeployment-ml-team-qwen-235b": Claim(
        "Scheduled", {"qwen-235b-0": _on("sticky-new", "hgx")}
    ),
    # Spread one per cluster; CostOptimized adds the next replicas where they cost least (cost-west 5.76 USD/h,
    # then cost-north 9.60, at most 2 per cluster); scaled to 2, the costliest go first (cost-east's, then
    # one of cost-north's), and pinned cost-north keeps its last Ready replica, so one of cost-west's goes.
    "cost-optimized/1-spread/modeldeployment-ml-team-llama-70b-cost": Claim(
        "Scheduled",
        {
            "llama-70b-cost-0": _on("cost-east", "hgx"),
            "llama-70b-cost-1": _on("cost-north", "hgx"),
            "llama-70b-cost-2": _on("cost-west", "hgx"),
        },
    ),
    "cost-optimized/2-cost-optimized/modeldeployment-ml-team-llama-70b-cost": Claim(
        "Scheduled",
        {
            "llama-70b-cost-0": _on("cost-east", "hgx"),
            "llama-70b-cost-1": _on("cost-north", "hgx"),
            "llama-70b-cost-2": _on("cost-west", "hgx"),
            "llama-70b-cost-3": _on("cost-west", "hgx"),
            "llama-70b-cost-4": _on("cost-north", "hgx"),
        },
        ready=("llama-70b-cost-0", "llama-70b-cost-1", "llama-70b-cost-2"),
    ),
    "cost-optimized/3-scaled-down/modeldeployment-ml-team-llama-70b-cost": Claim(
        "Scheduled",
        {"llama-70b-cost-1": _on("cost-north", "hgx"), "llama-70b-cost-2": _on("cost-west", "hgx")},
        ready=("llama-70b-cost-1", "llama-70b-cost-2"),
    ),
    # Scale 3 -> 1 -> 3: the lowest ordinal stays where it is; the others come back under their names.
    "scale/1-three/modeldeployment-ml-team-llama-70b-scaled": Claim(
        "Scheduled",
        {
            "llama-70b-scaled-0": _on("scale-b", "hgx"),
            "llama-70b-scaled-1": _on("scale-a", "hgx"),
            "llama-70b-scaled-2": _on("scale-b", "hgx"),
        },
    ),
    "scale/2-one/modeldeployment-ml-team-llama-70b-scaled": Claim(
        "Scheduled", {"llama-70b-scaled-0": _on("scale-b", "hgx")}, ready=("llama-70b-scaled-0",)
    ),
    "scale/3-three/modeldeployment-ml-team-llama-70b-scaled": Claim(
        "Scheduled",
        {
            "llama-70b-scaled-0": _on("scale-b", "hgx"),
            "llama-70b-scaled-1": _on("scale-a", "hgx"),
            "llama-70b-scaled-2": _on("scale-b", "hgx"),
        },
        ready=("llama-70b-scaled-0",),
    ),
    # Upgrade: one replica of the new revision beyond the three at a time; three serve at every step.
    "upgrade/1-running/modeldeployment-ml-team-llama-70b-upgrade": Claim(
        "Scheduled",
        {
            "llama-70b-upgrade-0": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-1": _on("upgrade-a", "hgx"),
            "llama-70b-upgrade-2": _on("upgrade-b", "hgx"),
        },
    ),
    "upgrade/2-surge/modeldeployment-ml-team-llama-70b-upgrade": Claim(
        "Scheduled",
        {
            "llama-70b-upgrade-0": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-1": _on("upgrade-a", "hgx"),
            "llama-70b-upgrade-2": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-3": _on("upgrade-a", "hgx"),
        },
        ready=("llama-70b-upgrade-0", "llama-70b-upgrade-1", "llama-70b-upgrade-2"),
        message="placed 3 of 3",
    ),
    "upgrade/3-one-retired-next-surge/modeldeployment-ml-team-llama-70b-upgrade": Claim(
        "Scheduled",
        {
            "llama-70b-upgrade-1": _on("upgrade-a", "hgx"),
            "llama-70b-upgrade-2": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-3": _on("upgrade-a", "hgx"),
            "llama-70b-upgrade-4": _on("upgrade-a", "hgx"),
        },
        ready=("llama-70b-upgrade-1", "llama-70b-upgrade-2", "llama-70b-upgrade-3"),
        message="placed 3 of 3",
    ),
    "upgrade/4-two-retired-last-surge/modeldeployment-ml-team-llama-70b-upgrade": Claim(
        "Scheduled",
        {
            "llama-70b-upgrade-0": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-2": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-3": _on("upgrade-a", "hgx"),
            "llama-70b-upgrade-4": _on("upgrade-a", "hgx"),
        },
        ready=("llama-70b-upgrade-2", "llama-70b-upgrade-3", "llama-70b-upgrade-4"),
        message="placed 3 of 3",
    ),
    "upgrade/5-done/modeldeployment-ml-team-llama-70b-upgrade": Claim(
        "Scheduled",
        {
            "llama-70b-upgrade-0": _on("upgrade-b", "hgx"),
            "llama-70b-upgrade-3": _on("upgrade-a", "hgx"),
            "llama-70b-upgrade-4": _on("upgrade-a", "hgx"),
        },
        ready=("llama-70b-upgrade-0", "llama-70b-upgrade-3", "llama-70b-upgrade-4"),
    ),
    # Drain: drain-a's replicas move to drain-b one at a time, each retired once its replacement serves.
    "drain/1-running/modeldeployment-ml-team-llama-70b-drain": Claim(
        "Scheduled",
        {
            "llama-70b-drain-0": _on("drain-a", "hgx"),
            "llama-70b-drain-1": _on("drain-b", "hgx"),
            "llama-70b-drain-2": _on("drain-a", "hgx"),
        },
    ),
    # A healthy drain is progress: Scheduled stays True and counts the leaving replicas apart.
    "drain/2-surge/modeldeployment-ml-team-llama-70b-drain": Claim(
        "Scheduled",
        {
            "llama-70b-drain-0": _on("drain-a", "hgx"),
            "llama-70b-drain-1": _on("drain-b", "hgx"),
            "llama-70b-drain-2": _on("drain-a", "hgx"),
            "llama-70b-drain-3": _on("drain-b", "hgx"),
        },
        ready=("llama-70b-drain-0", "llama-70b-drain-1", "llama-70b-drain-2"),
        message="placed 3 of 3 (2 leaving: llama-70b-drain-0, llama-70b-drain-2)",
    ),
    "drain/3-one-retired-next-surge/modeldeployment-ml-team-llama-70b-drain": Claim(
        "Scheduled",
        {
            "llama-70b-drain-1": _on("drain-b", "hgx"),
            "llama-70b-drain-2": _on("drain-a", "hgx"),
            "llama-70b-drain-3": _on("drain-b", "hgx"),
            "llama-70b-drain-4": _on("drain-b", "hgx"),
        },
        ready=("llama-70b-drain-1", "llama-70b-drain-2", "llama-70b-drain-3"),
        message="placed 3 of 3 (1 leaving: llama-70b-drain-2)",
    ),
    "drain/4-drained/modeldeployment-ml-team-llama-70b-drain": Claim(
        "Scheduled",
        {
            "llama-70b-drain-1": _on("drain-b", "hgx"),
            "llama-70b-drain-3": _on("drain-b", "hgx"),
            "llama-70b-drain-4": _on("drain-b", "hgx"),
        },
        ready=("llama-70b-drain-1", "llama-70b-drain-3", "llama-70b-drain-4"),
    ),
    # A pool taken out of the spec: pool-removed-a's replicas on hgx move (here to its new pool hgx-v2, the
    # cluster's other pool still taking replicas) one at a time, each retired once its replacement serves.
    "pool-removed/1-running/modeldeployment-ml-team-llama-70b-pool-removed": Claim(
        "Scheduled",
        {
            "llama-70b-pool-removed-0": _on("pool-removed-a", "hgx"),
            "llama-70b-pool-removed-1": _on("pool-removed-b", "hgx"),
            "llama-70b-pool-removed-2": _on("pool-removed-a", "hgx"),
        },
    ),
    "pool-removed/2-surge/modeldeployment-ml-team-llama-70b-pool-removed": Claim(
        "Scheduled",
        {
            "llama-70b-pool-removed-0": _on("pool-removed-a", "hgx"),
            "llama-70b-pool-removed-1": _on("pool-removed-b", "hgx"),
            "llama-70b-pool-removed-2": _on("pool-removed-a", "hgx"),
            "llama-70b-pool-removed-3": _on("pool-removed-a", "hgx-v2"),
        },
        ready=("llama-70b-pool-removed-0", "llama-70b-pool-removed-1", "llama-70b-pool-removed-2"),
        message="placed 3 of 3 (2 leaving: llama-70b-pool-removed-0, llama-70b-pool-removed-2)",
    ),
    "pool-removed/3-one-retired-next-surge/modeldeployment-ml-team-llama-70b-pool-removed": Claim(
        "Scheduled",
        {
            "llama-70b-pool-removed-1": _on("pool-removed-b", "hgx"),
            "llama-70b-pool-removed-2": _on("pool-removed-a", "hgx"),
            "llama-70b-pool-removed-3": _on("pool-removed-a", "hgx-v2"),
            "llama-70b-pool-removed-4": _on("pool-removed-a", "hgx-v2"),
        },
        ready=("llama-70b-pool-removed-1", "llama-70b-pool-removed-2", "llama-70b-pool-removed-3"),
        message="placed 3 of 3 (1 leaving: llama-70b-pool-removed-2)",
    ),
    "pool-removed/4-moved/modeldeployment-ml-team-llama-70b-pool-removed": Claim(
        "Scheduled",
        {
            "llama-70b-pool-removed-1": _on("pool-removed-b", "hgx"),
            "llama-70b-pool-removed-3": _on("pool-removed-a", "hgx-v2"),
            "llama-70b-pool-removed-4": _on("pool-removed-a", "hgx-v2"),
        },
        ready=("llama-70b-pool-removed-1", "llama-70b-pool-removed-3", "llama-70b-pool-removed-4"),
    ),
    # Preempted for physical capacity: the serving replica moves surge-first, retired once its replacement serves.
    "preempted/1-running/modeldeployment-ml-team-llama-8b-preempted": Claim(
        "Scheduled", {"llama-8b-preempted-0": _on("preempted-a", "hgx")}
    ),
    "preempted/2-surge/modeldeployment-ml-team-llama-8b-preempted": Claim(
        "Scheduled",
        {
            "llama-8b-preempted-0": _on("preempted-a", "hgx"),
            "llama-8b-preempted-1": _on("preempted-b", "hgx"),
        },
        ready=("llama-8b-preempted-0",),
        message="placed 1 of 1 (1 leaving: llama-8b-preempted-0)",
    ),
    "preempted/3-retired/modeldeployment-ml-team-llama-8b-preempted": Claim(
        "Scheduled",
        {"llama-8b-preempted-1": _on("preempted-b", "hgx")},
        ready=("llama-8b-preempted-1",),
    ),
    # Lost and back: lost-b's replicas are replaced on lost-a and kept; when it returns the surplus goes.
    "lost/1-running/modeldeployment-ml-team-llama-70b-lost": Claim(
        "Scheduled",
        {
            "llama-70b-lost-0": _on("lost-b", "hgx"),
            "llama-70b-lost-1": _on("lost-a", "hgx"),
            "llama-70b-lost-2": _on("lost-b", "hgx"),
        },
    ),
    "lost/2-failed-over/modeldeployment-ml-team-llama-70b-lost": Claim(
        "ClusterLost",
        {
            "llama-70b-lost-0": _on("lost-b", "hgx"),
            "llama-70b-lost-1": _on("lost-a", "hgx"),
            "llama-70b-lost-2": _on("lost-b", "hgx"),
            "llama-70b-lost-3": _on("lost-a", "hgx"),
            "llama-70b-lost-4": _on("lost-a", "hgx"),
        },
        ready=("llama-70b-lost-0", "llama-70b-lost-1", "llama-70b-lost-2"),
        message="placed 3 of 3 (2 lost: llama-70b-lost-0, llama-70b-lost-2)",
    ),
    "lost/3-replacement-serves/modeldeployment-ml-team-llama-70b-lost": Claim(
        "ClusterLost",
        {
            "llama-70b-lost-0": _on("lost-b", "hgx"),
            "llama-70b-lost-1": _on("lost-a", "hgx"),
            "llama-70b-lost-2": _on("lost-b", "hgx"),
            "llama-70b-lost-3": _on("lost-a", "hgx"),
            "llama-70b-lost-4": _on("lost-a", "hgx"),
        },
        ready=("llama-70b-lost-0", "llama-70b-lost-1", "llama-70b-lost-2", "llama-70b-lost-3", "llama-70b-lost-4"),
        message="placed 3 of 3 (2 lost: llama-70b-lost-0, llama-70b-lost-2)",
    ),
    "lost/4-back/modeldeployment-ml-team-llama-70b-lost": Claim(
        "Scheduled",
        {
            "llama-70b-lost-0": _on("lost-b", "hgx"),
            "llama-70b-lost-1": _on("lost-a", "hgx"),
            "llama-70b-lost-2": _on("lost-b", "hgx"),
        },
        ready=("llama-70b-lost-0", "llama-70b-lost-1", "llama-70b-lost-2"),
    ),
}


def test_every_scenario_case_has_a_claim() -> None:
    scenario_cases = {c.id.removeprefix("scheduling/") for c in CASES if c.id.startswith("scheduling/")}
    assert sorted(scenario_cases ^ set(CLAIMS)) == []


def _xr_status(case: Case) -> dict[str, Any]:
    docs = list(yaml.safe_load_all(case.golden.read_text()))
    status: dict[str, Any] = next(d for d in docs if d and d["kind"] == case.xr["kind"])["status"]
    return status


@pytest.mark.parametrize(("case_id", "claim"), [pytest.param(k, v, id=k) for k, v in CLAIMS.items()])
def test_scenario_golden_shows_its_claim(case_id: str, claim: Claim) -> None:
    status = _xr_status(BY_ID[f"scheduling/{case_id}"])
    scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert (scheduled["status"], scheduled["reason"]) == (
        "True" if claim.scheduled == "Scheduled" else "False",
        claim.scheduled,
    )
    assert scheduled.get("message", "").startswith(claim.message or f"placed {len(claim.placements)} of")
    got = {p["replica"]: (p["cluster"], p["pools"]) for p in status["placements"]}
    assert got == claim.placements
    assert tuple(p["replica"] for p in status["placements"] if p["ready"]) == claim.ready
