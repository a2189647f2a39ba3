"""Why each replica runs where it does: decided when it is placed, recorded on it, reported in status.

A replica placed by a call gets ``modelplane.ai/placed-by`` (the scheduler's decision); on later
calls the observed value is kept exactly as it is and read back into ``status.placements``,
whatever happens to the replica since (held, leaving); a value that does not read is kept but
not reported, and a replica composed before reasons were recorded gets none.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.functions.test_compose_model_deployment_hold import (
    World,
    _delete_east,
    _desired,
    _drop_east,
    _dump,
    _run,
)
from tests.unit.fleet import Pool, cluster

PLACED_BY = "modelplane.ai/placed-by"
EAST = ("TieBreak", "tie-break: equal score with south, first by name")
SOUTH = ("TieBreak", "tie-break: equal score with west, first by name")
BY_HAND = ("BestFit", "best fit: chosen by an operator")


def _annotation(decided_by: str, why: str) -> str:
    return json.dumps({"decidedBy": decided_by, "why": why}, sort_keys=True, separators=(",", ":"))


def _placed(world: World) -> dict[str, Any]:
    """The first call: nothing composed yet, so every replica is placed now."""
    world.observed, world.replicas = {}, None
    return _run(world)


def _observe(world: World, got: dict[str, Any]) -> None:
    """What Crossplane observes next: the replicas as composed, now Ready."""
    world.observed = {}
    for key, body in _desired(got).items():
        if key.startswith("replica-"):
            replica = copy.deepcopy(body)
            replica["status"] = {"conditions": [{"type": "Ready", "status": "True"}]}
            world.observed[key] = replica


def _set_annotation(key: str, value: str | None) -> Callable[[World], None]:
    def mutate(world: World) -> None:
        annotations = world.observed[key]["metadata"].setdefault("annotations", {})
        if value is None:
            annotations.pop(PLACED_BY)
        else:
            annotations[PLACED_BY] = value

    return mutate


def _add_alpha(world: World) -> None:
    # Empty and first by name: a fresh decision would pick it; a kept replica is not decided again.
    world.clusters.append(_dump(cluster("alpha", Pool("gpu", "h100", 2))))


def _nothing(world: World) -> None:
    del world


@dataclass(frozen=True)
class Case:
    change: Callable[[World], None]
    # replica key -> (decidedBy, why) recorded; None: no annotation written and nothing reported
    want: dict[str, tuple[str, str] | None]
    # replica key -> annotation value expected verbatim when it does not read as a decision
    verbatim: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)  # replica name -> status.placements[].state


CASES = [
    pytest.param(Case(_nothing, {"replica-0": EAST, "replica-1": SOUTH}), id="read-back-on-the-next-call"),
    pytest.param(Case(_add_alpha, {"replica-0": EAST, "replica-1": SOUTH}), id="kept-though-the-fleet-changed"),
    pytest.param(
        Case(_drop_east, {"replica-0": EAST, "replica-1": SOUTH}, states={"llm-0": "Held"}),
        id="held-cluster-not-listed",
    ),
    pytest.param(
        Case(
            _delete_east,
            {
                "replica-0": EAST,
                "replica-1": SOUTH,
                # The replacement is placed now: decided now.
                "replica-2": ("OnlyCandidate", "only candidate: no other cluster can take it now"),
            },
            states={"llm-0": "Leaving", "llm-2": "Surge"},
        ),
        id="leaving-keeps-its-reason-and-the-replacement-gets-its-own",
    ),
    pytest.param(
        Case(_set_annotation("replica-0", _annotation(*BY_HAND)), {"replica-0": BY_HAND, "replica-1": SOUTH}),
        id="an-existing-value-is-never-rewritten",
    ),
    pytest.param(
        Case(
            _set_annotation("replica-0", "placed by hand"),
            {"replica-0": None, "replica-1": SOUTH},
            verbatim={"replica-0": "placed by hand"},
        ),
        id="a-value-that-does-not-read-is-kept-and-not-reported",
    ),
    pytest.param(
        Case(_set_annotation("replica-0", None), {"replica-0": None, "replica-1": SOUTH}),
        id="composed-before-reasons-were-recorded",
    ),
]


def test_the_reason_is_written_when_a_replica_is_placed() -> None:
    got = _placed(World())
    desired = _desired(got)
    assert {k: v["metadata"]["annotations"][PLACED_BY] for k, v in desired.items() if k.startswith("replica-")} == {
        "replica-0": _annotation(*EAST),
        "replica-1": _annotation(*SOUTH),
    }
    status = got["desired"]["composite"]["resource"]["status"]
    assert [(p["replica"], p["cluster"], p["decidedBy"], p["why"]) for p in status["placements"]] == [
        ("llm-0", "east", *EAST),
        ("llm-1", "south", *SOUTH),
    ]


@pytest.mark.parametrize("case", CASES)
def test_the_recorded_reason_is_kept_and_reported(case: Case) -> None:
    world = World()
    _observe(world, _placed(world))
    case.change(world)
    got = _run(world)
    desired = _desired(got)
    placements = {p["replica"]: p for p in got["desired"]["composite"]["resource"]["status"]["placements"]}
    assert sorted(k for k in desired if k.startswith("replica-")) == sorted(case.want)
    assert {name: placements[name]["state"] for name in case.states} == case.states
    for key, want in case.want.items():
        annotations = desired[key]["metadata"].get("annotations", {})
        entry = placements[desired[key]["metadata"]["name"]]
        if want is None:
            assert annotations.get(PLACED_BY) == case.verbatim.get(key), key
            assert "decidedBy" not in entry and "why" not in entry, key
        else:
            assert annotations[PLACED_BY] == _annotation(*want), key
            assert (entry["decidedBy"], entry["why"]) == want, key


def test_the_same_call_gives_the_same_answer() -> None:
    world = World()
    _observe(world, _placed(world))
    assert _run(world) == _run(copy.deepcopy(world))
