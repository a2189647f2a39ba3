"""The simulation renders an XR again only when something it reads changed, and settles as if it rendered every time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.kinds import BY_KIND, KINDS
from modelplane.preview import fleet
from modelplane.preview.command import preview_loaded
from modelplane.preview.manifests import Key, load_dir
from modelplane.render import RenderInputs, RenderOutput, render
from modelplane.repo import load_composition
from tests.preview.test_preview import CLASS, CLUSTER

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
Renderer = Callable[[RenderInputs], RenderOutput]


def _key(xr: dict[str, Any]) -> Key:
    meta = xr.get("metadata") or {}
    return (str(xr.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _counting(renders: list[RenderInputs]) -> Renderer:
    def counted(inputs: RenderInputs) -> RenderOutput:
        renders.append(inputs)
        return render(inputs)

    return counted


def _simulate(
    monkeypatch: pytest.MonkeyPatch, directory: Path, *, assume_ready: bool, skip_echoes: bool
) -> tuple[fleet.Fleet, list[RenderInputs]]:
    """Preview ``directory``, recording every render; with ``skip_echoes`` as the CLI renders, else every change."""
    renders: list[RenderInputs] = []
    counted = _counting(renders)
    if skip_echoes:
        # The simulation trusts only its own renderer to compose the same from the status it wrote.
        monkeypatch.setattr(fleet, "render", counted)
    original = fleet.simulate
    monkeypatch.setattr("modelplane.preview.command.simulate", lambda *a, **kw: original(*a, **kw, renderer=counted))
    return preview_loaded(load_dir(directory), str(directory), assume_ready=assume_ready).fleet, renders


# Examples simulated both ways: offline and with --assume-ready, a rollout step, a drain, disaggregated serving.
SETTLED_EXAMPLES = [
    pytest.param("quickstart", True, id="quickstart-ready"),
    pytest.param("quickstart", False, id="quickstart-offline"),
    pytest.param("scheduling/upgrade/step-2", True, id="upgrade-ready"),
    pytest.param("scheduling/drain/step-2", True, id="drain-ready"),
    pytest.param("scheduling/disaggregated", True, id="disaggregated-ready"),
]


@pytest.mark.parametrize(("example", "assume_ready"), SETTLED_EXAMPLES)
def test_skipping_a_render_of_its_own_status_settles_the_same_fleet(
    monkeypatch: pytest.MonkeyPatch, example: str, assume_ready: bool
) -> None:
    every, rendered_every = _simulate(monkeypatch, EXAMPLES / example, assume_ready=assume_ready, skip_echoes=False)
    monkeypatch.undo()
    skipped, rendered_skipped = _simulate(monkeypatch, EXAMPLES / example, assume_ready=assume_ready, skip_echoes=True)
    assert (skipped.states, skipped.passes, skipped.errors, skipped.decided) == (
        every.states,
        every.passes,
        every.errors,
        every.decided,
    )
    assert len(rendered_skipped) < len(rendered_every)


def _why(before: tuple[RenderInputs, RenderOutput], inputs: RenderInputs) -> set[str]:
    """What changed, of what a render reads, since the XR's render ``before`` (its inputs and output)."""
    was, out = before
    why = set()
    if {**inputs.xr, "status": None} != {**was.xr, "status": None}:
        why.add("spec or metadata")
    if inputs.xr.get("status") != was.xr.get("status"):
        own = BY_KIND[_key(inputs.xr)[0]].reads_own_status
        why.add("status" if own or inputs.xr.get("status") != out.xr.get("status") else "only the status it wrote")
    if inputs.observed != was.observed:
        why.add("observed")
    if inputs.catalog is not None and not out.reads.current(inputs.catalog):
        why.add("required")
    return why


@pytest.mark.parametrize(("example", "assume_ready"), SETTLED_EXAMPLES[:3])
def test_an_xr_is_rendered_again_only_when_something_it_reads_changed(
    monkeypatch: pytest.MonkeyPatch, example: str, assume_ready: bool
) -> None:
    last: dict[Key, tuple[RenderInputs, RenderOutput]] = {}
    needless: list[str] = []

    def recording(inputs: RenderInputs) -> RenderOutput:
        key = _key(inputs.xr)
        if key in last and _why(last[key], inputs) <= {"only the status it wrote"}:
            needless.append(f"{key}: {_why(last[key], inputs) or 'nothing changed'}")
        out = render(inputs)
        last[key] = (inputs, out)
        return out

    monkeypatch.setattr(fleet, "render", recording)
    original = fleet.simulate
    monkeypatch.setattr("modelplane.preview.command.simulate", lambda *a, **kw: original(*a, **kw, renderer=recording))
    preview_loaded(load_dir(EXAMPLES / example), example, assume_ready=assume_ready)
    assert len(last) > 0
    assert needless == []


def _write(tmp_path: Path, *docs: dict[str, Any]) -> Path:
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path


@pytest.mark.parametrize(
    ("docs", "skip_echoes", "want"),
    [
        pytest.param([CLASS], True, {("InferenceClass", "", "l4"): 1}, id="class-not-rendered-for-its-own-status"),
        pytest.param([CLASS], False, {("InferenceClass", "", "l4"): 2}, id="class-rendered-every-change"),
        pytest.param(
            [CLASS, CLUSTER],
            True,
            {("InferenceClass", "", "l4"): 1},
            id="class-read-by-a-cluster-not-rendered-for-it",
        ),
    ],
)
def test_renders_per_xr(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    docs: list[dict[str, Any]],
    skip_echoes: bool,
    want: dict[Key, int],
) -> None:
    renders: list[RenderInputs] = []
    counted = _counting(renders)
    if skip_echoes:
        monkeypatch.setattr(fleet, "render", counted)
    compositions = {k.kind: load_composition(k.kind) for k in KINDS}
    fleet.simulate(load_dir(_write(tmp_path, *docs)), compositions, renderer=counted)
    counts = Counter(_key(i.xr) for i in renders)
    assert {k: counts[k] for k in want} == want
