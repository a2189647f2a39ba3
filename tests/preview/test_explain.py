"""``modelplane preview --explain``: every cluster and pool checked, the score that decided; golden outputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from modelplane.preview import command
from modelplane.preview.command import run_preview
from modelplane.preview.explain import explain_deployment
from modelplane.repo import ROOT

GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLES = ROOT / "examples"
# MODELPLANE_UPDATE_GOLDENS=1 rewrites the golden files; review the diff.
UPDATE = os.environ.get("MODELPLANE_UPDATE_GOLDENS") == "1"


def check_golden(name: str, got: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(got)
    assert path.is_file(), f"no golden {path}: run with MODELPLANE_UPDATE_GOLDENS=1"
    assert got == path.read_text()


@pytest.mark.parametrize(
    "deployment",
    [
        pytest.param("ml-team/llama-70b", id="llama-70b"),
        pytest.param("ml-team/deepseek-r1-pd", id="deepseek-r1-pd"),
        pytest.param("ml-team/llama-8b-fp8", id="llama-8b-fp8"),
    ],
)
def test_explain_golden(deployment: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--width", "120", "--explain", deployment, str(EXAMPLES / "platform"), str(EXAMPLES / "models")]
    assert command.main(args) == 0
    check_golden(f"explain-{deployment.split('/')[1]}.txt", capsys.readouterr().out)


def test_explain_agrees_with_the_scheduler() -> None:
    preview = run_preview([EXAMPLES / "platform", EXAMPLES / "models"], assume_ready=True)
    compared = 0
    for key, state in preview.fleet.states.items():
        if key[0] != "ModelDeployment":
            continue
        placed = {p["replica"]: p["cluster"] for p in state.xr.get("status", {}).get("placements", [])}
        explanation = explain_deployment(preview.fleet, f"{key[1]}/{key[2]}")
        chosen = {s.replica: s.chosen for s in explanation.steps if s.chosen}
        assert chosen == placed, key
        compared += len(placed)
    assert compared >= 8


def test_explain_shows_every_cluster_and_each_message_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = list(yaml.safe_load_all((EXAMPLES / "quickstart" / "cluster.yaml").read_text()))
    cluster = docs[0]
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for name in ("class.yaml", "deployment.yaml"):
        (fleet / name).write_text((EXAMPLES / "quickstart" / name).read_text())
    # Five clusters whose pools the selector rejects with the same CEL error, and one Ready match.
    clusters = []
    for i in range(6):
        c = yaml.safe_load(yaml.safe_dump(cluster))
        c["metadata"]["name"] = f"edge-{i}"
        clusters.append(c)
    (fleet / "clusters.yaml").write_text(yaml.safe_dump_all(clusters))
    deployment = yaml.safe_load((fleet / "deployment.yaml").read_text())
    deployment["spec"]["nodeSelector"]["cel"] = 'device.attributes["gpu.nvidia.com"].productName.startsWith(1)'
    (fleet / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    assert command.main(["--width", "160", "--explain", "default/qwen", str(fleet)]) == 0
    out = capsys.readouterr().out
    assert "more" not in out
    for i in range(6):
        assert f" edge-{i} " in out
    messages = out.split("Messages")[1].strip().splitlines()
    assert len(messages) == len(set(messages))
    # The same CEL error on six pools is one message, referred to six times.
    cel = [m for m in messages if "CELError" in m or "startsWith" in m]
    assert len(cel) <= 2, cel


def test_explain_an_unknown_deployment_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--explain", "default/nope", str(EXAMPLES / "quickstart")]) == 1
    assert "no ModelDeployment default/nope among the manifests (there are: default/qwen)" in capsys.readouterr().err
