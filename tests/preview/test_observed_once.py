"""The simulation observes each composed resource through ``world`` once, however often its XR renders it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modelplane.kinds import KINDS
from modelplane.preview.fleet import simulate
from modelplane.preview.manifests import load_dir
from modelplane.preview.world import healthy, live_status
from modelplane.repo import load_composition

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "example",
    [
        pytest.param("quickstart", id="quickstart"),
        pytest.param("scheduling/upgrade/step-2", id="upgrade"),
        pytest.param("scheduling/disaggregated", id="disaggregated"),
    ],
)
def test_each_composed_resource_is_observed_through_world_once(example: str) -> None:
    seen: list[dict[str, Any]] = []  # held, so no id is reused while counted

    def world(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj)
        return healthy(obj)

    compositions = {k.kind: load_composition(k.kind) for k in KINDS}
    loaded = load_dir(EXAMPLES / example)
    counted = simulate(loaded, compositions, world=world, observe=live_status)
    again = [obj for i, obj in enumerate(seen) if any(obj is o for o in seen[:i])]
    # A resource its XR composed again the same (an equal object in its place) is seen as it was.
    equal = [obj for i, obj in enumerate(seen) if any(obj == o for o in seen[:i])]
    assert seen
    assert (again, equal) == ([], [])
    # And the fleet settles as it does observed through ``healthy`` itself.
    assert counted == simulate(loaded, compositions, world=healthy, observe=live_status)
