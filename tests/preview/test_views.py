"""A ModelReplica's render stands while what it reads of its cluster stays, and only then."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench import preview_fleet
from modelplane.preview import fleet, states
from modelplane.preview.command import preview_loaded
from modelplane.preview.manifests import load_dir
from modelplane.preview.views import replica_view_of_cluster
from modelplane.render import RenderInputs, RenderOutput, render
from tests.preview.test_preview import CLUSTER

PUBLISHED: dict[str, Any] = {
    **CLUSTER,
    "metadata": {"name": "edge", "labels": {"region": "local"}, "resourceVersion": "7"},
    "status": {
        "providerConfigRef": {"kind": "ProviderConfig", "name": "edge"},
        "gateway": {"address": "10.0.0.1"},
        "capacity": {"declared": 3, "inUse": 1, "free": 2},
        "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
    },
}


def _changed(path: str, value: Any) -> dict[str, Any]:
    """``PUBLISHED`` with the field at dotted ``path`` set to ``value``."""
    obj = copy.deepcopy(PUBLISHED)
    *parents, last = path.split(".")
    at: dict[str, Any] = obj
    for name in parents:
        at = at[name]
    at[last] = value
    return obj


@pytest.mark.parametrize(
    ("after", "stands"),
    [
        pytest.param(_changed("status.capacity.inUse", 2), True, id="capacity-in-use"),
        pytest.param(_changed("status.conditions", []), True, id="conditions"),
        pytest.param(_changed("metadata.resourceVersion", "8"), True, id="resource-version"),
        pytest.param(_changed("status.providerConfigRef.name", "other"), False, id="provider-config"),
        pytest.param(_changed("status.gateway.address", "10.0.0.2"), False, id="gateway-address"),
        pytest.param(_changed("spec.nodePools", []), False, id="node-pools"),
        pytest.param(_changed("metadata.labels", {"region": "far"}), False, id="labels"),
        pytest.param(_changed("status.capacity", "lots"), False, id="capacity-that-does-not-validate"),
        pytest.param(_changed("status.conditions", [{"type": 5}]), False, id="conditions-that-do-not-validate"),
    ],
)
def test_a_replica_sees_a_change_to_its_cluster_only_where_it_reads(after: dict[str, Any], stands: bool) -> None:
    assert (replica_view_of_cluster(after) == replica_view_of_cluster(PUBLISHED)) is stands


def _simulate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, views: bool) -> tuple[fleet.Fleet, Counter[str]]:
    """Preview a small synthetic fleet (``--assume-ready``), counting renders by kind; with or without views."""
    if not views:
        monkeypatch.setattr(states, "VIEWS", {})
    tmp_path.mkdir()
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(preview_fleet.manifests(3, 12, 2)))
    renders: Counter[str] = Counter()

    def counted(inputs: RenderInputs) -> RenderOutput:
        renders[str(inputs.xr.get("kind"))] += 1
        return render(inputs)

    monkeypatch.setattr(fleet, "render", counted)
    original = fleet.simulate
    monkeypatch.setattr("modelplane.preview.command.simulate", lambda *a, **kw: original(*a, **kw, renderer=counted))
    out = preview_loaded(load_dir(tmp_path), str(tmp_path), assume_ready=True).fleet
    monkeypatch.undo()
    return out, renders


def test_replicas_not_rendered_for_their_clusters_capacity_settle_the_same_fleet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    every, rendered_every = _simulate(tmp_path / "every", monkeypatch, views=False)
    viewed, rendered_viewed = _simulate(tmp_path / "viewed", monkeypatch, views=True)
    assert (viewed.states, viewed.passes, viewed.errors, viewed.decided) == (
        every.states,
        every.passes,
        every.errors,
        every.decided,
    )
    assert rendered_viewed["ModelReplica"] < rendered_every["ModelReplica"]
