"""compose-model-deployment and replicas whose state is in flux: being deleted, or Ready for an older spec.

Both were seen on the e2e control plane during a rolling upgrade: a replica the
deployment had retired was adopted again while it was being deleted (and counted
as an updated replica), and a replica whose spec had just been changed in place
was counted Ready on its previous spec's condition. Either let the rollout take
the next replica down early.
"""

from __future__ import annotations

import pytest

from tests.functions.test_compose_model_deployment_hold import (
    World,
    _desired,
    _run,
    _scheduled,
    _xr,
)

DELETED_AT = "2026-01-01T00:00:00Z"


def _deleting(body: dict[str, object], *, readable: bool = True) -> dict[str, object]:
    meta = body["metadata"]
    assert isinstance(meta, dict)
    meta["deletionTimestamp"] = DELETED_AT
    meta["finalizers"] = ["composite.apiextensions.crossplane.io"]
    if not readable:
        body["spec"] = "broken"
    return body


@pytest.mark.parametrize("readable", [pytest.param(True, id="readable"), pytest.param(False, id="unreadable")])
def test_a_replica_being_deleted_is_never_written_back_counted_or_its_name_reused(readable: bool) -> None:
    world = World()
    world.observed["replica-0"] = _deleting(world.observed["replica-0"], readable=readable)
    got = _run(world)
    desired = _desired(got)
    # Writing it back could create it again once it is gone; its endpoint goes with it.
    assert "replica-0" not in desired
    assert "endpoint-0" not in desired
    # It no longer counts: a replacement is placed, under a new name while the old one is going.
    assert desired["replica-1"]["spec"]["inferenceClusterRef"] == {"name": "west"}
    replacement = desired["replica-2"]["spec"]["inferenceClusterRef"]["name"]
    # Its GPUs are still taken until it is gone (as far as it can be read).
    assert replacement == "south" if readable else replacement in ("east", "south")
    placements = got["desired"]["composite"]["resource"]["status"]["placements"]
    assert [p["replica"] for p in placements] == ["llm-1", "llm-2"]
    assert _scheduled(got)["status"] == "STATUS_CONDITION_TRUE"


def test_a_retired_replica_being_deleted_is_not_adopted_by_the_rollout() -> None:
    """The e2e upgrade: llm-0 retired (being deleted, old revision); it must not be updated or counted."""
    world = World()
    world.xr = _xr()
    world.xr["spec"]["workers"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.12.0"
    world.observed["replica-0"] = _deleting(world.observed["replica-0"])
    got = _run(world)
    desired = _desired(got)
    assert "replica-0" not in desired
    status = got["desired"]["composite"]["resource"]["status"]
    assert "llm-0" not in [p["replica"] for p in status["placements"]]
    assert status["updatedReplicas"] <= 1, status


@pytest.mark.parametrize(
    ("observed_generation", "removed"),
    [
        pytest.param(3, False, id="ready-for-an-older-generation-waits"),
        pytest.param(4, True, id="ready-for-this-generation-settles"),
        pytest.param(None, True, id="no-observed-generation-taken-as-is"),
    ],
)
def test_ready_for_an_older_generation_does_not_count(observed_generation: int | None, removed: bool) -> None:
    """Scaling 2 -> 1 removes one replica only once every replica says whether it is Ready for its spec."""
    world = World()
    world.xr = _xr(replicas=1)
    body = world.observed["replica-1"]
    body["metadata"]["generation"] = 4
    if observed_generation is not None:
        body["status"]["conditions"][0]["observedGeneration"] = observed_generation
    got = _run(world)
    kept = sorted(k for k in _desired(got) if k.startswith("replica-"))
    assert (kept == ["replica-0"]) is removed, kept
    if not removed:
        scheduled = _scheduled(got)
        assert "every replica says whether it is Ready" in scheduled["message"], scheduled


def test_a_replica_only_the_fleet_list_shows_being_deleted_is_not_adopted() -> None:
    """Seen live: Crossplane stopped passing the retired replica while the fleet's list still showed it going."""
    world = World()
    going = _deleting(world.observed.pop("replica-0"))
    world.observed.pop("endpoint-0")
    world.replicas = [going, world.observed["replica-1"]]
    got = _run(world)
    desired = _desired(got)
    assert "replica-0" not in desired
    # Its GPUs on east are still taken and its name is not reused: the replacement goes to south as llm-2.
    assert desired["replica-2"]["spec"]["inferenceClusterRef"] == {"name": "south"}
    placements = got["desired"]["composite"]["resource"]["status"]["placements"]
    assert [p["replica"] for p in placements] == ["llm-1", "llm-2"]
