"""``modelplane preview --explain``: every cluster and pool checked, the score that decided; golden outputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from modelplane.preview import command
from modelplane.preview.command import run_preview
from modelplane.preview.explain import explain_deployment
from modelplane.preview.findings import Exit
from tests.golden.cases import observed_examples

GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLES = observed_examples()
# MODELPLANE_UPDATE_GOLDENS=1 rewrites the golden files; review the diff.
UPDATE = os.environ.get("MODELPLANE_UPDATE_GOLDENS") == "1"


def check_golden(name: str, got: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(got)
    assert path.is_file(), f"no golden {path}: run with MODELPLANE_UPDATE_GOLDENS=1"
    assert got == path.read_text()


@pytest.mark.parametrize(
    ("deployment", "flags", "golden", "code"),
    [
        pytest.param("ml-team/llama-70b", [], "explain-llama-70b.txt", Exit.OK, id="llama-70b"),
        # Offline some of their clusters never become Ready: replicas left unplaced, so exit 5.
        pytest.param("ml-team/deepseek-r1-pd", [], "explain-deepseek-r1-pd.txt", Exit.UNPLACED, id="deepseek-r1-pd"),
        pytest.param("ml-team/llama-8b-fp8", [], "explain-llama-8b-fp8.txt", Exit.UNPLACED, id="llama-8b-fp8"),
        # It fills a cluster while another has GPUs free: best fit, and the figures that decided.
        pytest.param(
            "ml-team/kimi-k2", ["--assume-ready"], "explain-kimi-k2-ready.txt", Exit.OK, id="kimi-k2-assume-ready"
        ),
        # Two equal candidates: the tie-break decides, and says so.
        pytest.param(
            "ml-team/llama-8b-autoscaled",
            ["--assume-ready"],
            "explain-llama-8b-autoscaled-ready.txt",
            Exit.OK,
            id="llama-8b-autoscaled-assume-ready",
        ),
    ],
)
def test_explain_golden(
    deployment: str, flags: list[str], golden: str, code: Exit, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*flags, "--width", "120", "--explain", deployment, str(EXAMPLES / "platform"), str(EXAMPLES / "models")]
    assert command.main(args) == code
    check_golden(golden, capsys.readouterr().out)


def test_explain_scores_cost_first_with_a_cost_column(capsys: pytest.CaptureFixture[str]) -> None:
    """CostOptimized: the scoring table gains the replica's cost per hour, and it decides before spread."""
    scenario = EXAMPLES / "scheduling" / "cost-optimized" / "step-2"
    args = ["--assume-ready", "--width", "120", "--explain", "ml-team/llama-70b-cost", str(scenario)]
    assert command.main(args) == Exit.OK
    check_golden("explain-cost-optimized.txt", capsys.readouterr().out)


def test_explain_golden_model_cache(capsys: pytest.CaptureFixture[str]) -> None:
    """spec.modelCacheRef: a cache column; the Ready copy decides first; the replica placed elsewhere waits."""
    fleet = [str(EXAMPLES / "platform"), str(EXAMPLES / "model-cache")]
    args = ["--assume-ready", "--width", "120", "--explain", "ml-team/llama-70b-cached", *fleet]
    assert command.main(args) == Exit.OK
    out = capsys.readouterr().out
    check_golden("explain-model-cache.txt", out)
    flat = [" ".join(line.split()) for line in out.splitlines()]
    # As observed (tests/golden/observed.yaml): Ready on us-east-kai, still downloading on eu-west-kueue.
    assert "spec.modelCacheRef: llama-70b (policy Required): Ready on us-east-kai; a Ready copy ranks first" in flat
    assert any(line.startswith("us-east-kai match no yes Ready eligible") for line in flat)
    assert any(line.startswith("eu-west-kueue match no yes Hydrating [") for line in flat)
    assert any(line.startswith("llama-70b-cached-0 us-east-kai h100 Ready") and "Cache" in line for line in flat)
    assert any(line.startswith("llama-70b-cached-1: CacheNotReady (policy Required)") for line in flat)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_explain_document_carries_the_cache(output: str, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = [str(EXAMPLES / "platform"), str(EXAMPLES / "model-cache")]
    assert command.main(["-o", output, "--assume-ready", "--explain", "ml-team/llama-70b-cached", *fleet]) == Exit.OK
    doc = yaml.safe_load(capsys.readouterr().out)  # JSON is YAML
    assert doc["cache"] == {"name": "llama-70b", "policy": "Required", "found": True, "ready": ["us-east-kai"]}
    copies = {c["cluster"]: c["cache"] for c in doc["clusters"]}
    assert (copies["us-east-kai"], copies["eu-west-kueue"], copies["aks-westeurope"]) == ("Ready", "Hydrating", "-")
    steps = {s["replica"]: s for s in doc["steps"]}
    assert steps["llama-70b-cached-0"]["decidedBy"] == "Cache"
    assert not steps["llama-70b-cached-0"]["waits"]
    assert "copy on eu-west-kueue is Hydrating" in steps["llama-70b-cached-1"]["waits"]


@pytest.mark.parametrize(
    ("fleet", "least", "decided_by"),
    [
        pytest.param(["platform", "models"], 8, "", id="platform-and-models"),
        # The Ready copy decides a placement: explain must rank by the cache as the scheduler does.
        pytest.param(["platform", "model-cache"], 2, "Cache", id="model-cache"),
        # A quota holds some replicas back: explain places the others where the scheduler did.
        pytest.param(["platform", "quotas"], 4, "", id="quotas"),
    ],
)
def test_explain_agrees_with_the_scheduler(fleet: list[str], least: int, decided_by: str) -> None:
    preview = run_preview([EXAMPLES / d for d in fleet], assume_ready=True)
    compared = 0
    reasons = set()
    for key, state in preview.fleet.states.items():
        if key[0] != "ModelDeployment":
            continue
        placed = {
            p["replica"]: (p["cluster"], p["decidedBy"], p["why"])
            for p in state.xr.get("status", {}).get("placements", [])
        }
        explanation = explain_deployment(preview.fleet, f"{key[1]}/{key[2]}")
        # Where, and why (status reads it back from the annotation written when the replica was placed).
        chosen = {s.replica: (s.chosen, s.decided_by, s.why) for s in explanation.steps if s.chosen}
        assert chosen == placed, key
        compared += len(placed)
        reasons |= {by for _, by, _ in placed.values()}
    assert compared >= least
    assert not decided_by or decided_by in reasons


def test_explain_shows_every_cluster_and_each_message_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = list(yaml.safe_load_all((EXAMPLES / "quickstart" / "cluster.yaml").read_text()))
    cluster = docs[0]
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for name in ("class.yaml", "deployment.yaml"):
        (fleet / name).write_text((EXAMPLES / "quickstart" / name).read_text())
    # Six clusters whose pools the selector rejects with the same CEL error.
    clusters = []
    for i in range(6):
        c = yaml.safe_load(yaml.safe_dump(cluster))
        c["metadata"]["name"] = f"edge-{i}"
        clusters.append(c)
    (fleet / "clusters.yaml").write_text(yaml.safe_dump_all(clusters))
    deployment = yaml.safe_load((fleet / "deployment.yaml").read_text())
    deployment["spec"]["nodeSelector"]["cel"] = 'device.attributes["gpu.nvidia.com"].model == "H100"'
    (fleet / "deployment.yaml").write_text(yaml.safe_dump(deployment))
    # The error is the expression's on every device: nothing is placed, so the deployment's exit code is 5.
    assert command.main(["--width", "160", "--explain", "default/qwen", str(fleet)]) == Exit.UNPLACED
    out = capsys.readouterr().out
    assert "more" not in out
    for i in range(6):
        assert f" edge-{i} " in out
    messages = out.split("Messages")[1].strip().splitlines()
    assert len(messages) == len(set(messages))
    # The same CEL error on six pools is one message, referred to six times.
    cel = [m for m in messages if "CELError" in m or '"model"' in m or "no such key" in m]
    assert len(cel) <= 2, cel


def test_explain_an_unknown_deployment_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--explain", "default/nope", str(EXAMPLES / "quickstart")]) == 1
    assert "no ModelDeployment default/nope among the manifests (there are: default/qwen)" in capsys.readouterr().err


def test_explain_never_offers_a_draining_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Reported: with a cluster set to spec.drain, the scheduler placed every replica elsewhere while
    # --explain listed the drained cluster as "cordoned: no ... eligible" and chose it for a replica.
    scenario = EXAMPLES / "scheduling" / "drain" / "step-1"
    docs = list(yaml.safe_load_all((scenario / "fleet.yaml").read_text()))
    for doc in docs:
        if doc and doc.get("kind") == "InferenceCluster" and doc["metadata"]["name"] == "drain-a":
            doc["spec"]["drain"] = True
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "deployment.yaml").write_text((scenario / "deployment.yaml").read_text())
    preview = run_preview([tmp_path], assume_ready=True)
    explanation = explain_deployment(preview.fleet, "ml-team/llama-70b-drain")
    checks = {c.cluster: c for c in explanation.clusters}
    assert checks["drain-a"].draining
    assert checks["drain-a"].verdict == "Cordoned"
    assert "drains (spec.drain)" in checks["drain-a"].message
    assert {s.chosen for s in explanation.steps} == {"drain-b"}
    assert all(c.cluster != "drain-a" for s in explanation.steps for c in s.candidates)
    placed = {
        p["cluster"]
        for k, s in preview.fleet.states.items()
        if k[0] == "ModelDeployment"
        for p in s.xr.get("status", {}).get("placements", [])
    }
    assert placed == {"drain-b"}
    # And as a user reads it.
    assert (
        command.main(["--assume-ready", "--width", "120", "--explain", "ml-team/llama-70b-drain", str(tmp_path)]) == 0
    )
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith(" drain-a ") and "match" in line)
    assert "draining" in row
    assert "eligible" not in row


@pytest.mark.parametrize(
    ("fleet", "assume_ready"),
    [
        pytest.param(["first"], False, id="first"),
        pytest.param(["platform", "models"], False, id="platform-and-models"),
        pytest.param(["scheduling/no-matching-cluster"], True, id="no-matching-cluster"),
        pytest.param(["scheduling/bad-cel"], True, id="bad-cel"),
    ],
)
def test_every_unplaced_replica_is_explained_by_its_deployments_own_reason(
    fleet: list[str], assume_ready: bool
) -> None:
    # The rule behind "reasons are per cause, never stale": what --explain and the tables say about a
    # replica left unplaced is the reason the deployment's Scheduled condition gives, never an older one.
    preview = run_preview([EXAMPLES / d for d in fleet], assume_ready=assume_ready)
    unplaced = [d for d in preview.view.deployments if d.placed < d.desired]
    assert unplaced
    for d in unplaced:
        steps = explain_deployment(preview.fleet, d.name).steps
        assert [s.reason for s in steps if not s.chosen][:1] == [d.scheduled.reason], d.name


@pytest.mark.parametrize(
    ("deployment", "placed", "figures"),
    [
        # Capacity alone fits it on us-east-kai; team-a's quota is full with chat's 16.
        pytest.param(
            "team-a/eval",
            0,
            "FleetQuota team-a allows 16 nvidia-h100-8 accelerators, 16 in use, 8 requested",
            id="eval",
        ),
        # Two of three fit the team's 8 H100s (a device selector over three classes); the third does not.
        pytest.param(
            "team-b/embed",
            2,
            "FleetQuota team-b allows 8 accelerators matching limits[0].deviceSelector, 8 in use, 4 requested",
            id="embed",
        ),
    ],
)
def test_explain_and_the_scheduler_agree_on_a_quota_limited_deployment(
    deployment: str, placed: int, figures: str
) -> None:
    preview = run_preview([EXAMPLES / "platform", EXAMPLES / "quotas"], assume_ready=True)
    (view,) = [d for d in preview.view.deployments if d.name == deployment]
    assert (view.placed, view.scheduled.reason) == (placed, "QuotaExceeded")
    assert figures in view.scheduled.message
    steps = explain_deployment(preview.fleet, deployment).steps
    assert len([s for s in steps if s.chosen]) == placed
    (unplaced,) = [s for s in steps if not s.chosen]
    assert (unplaced.reason, figures in unplaced.message) == ("QuotaExceeded", True), unplaced


def test_explain_golden_quota(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--assume-ready", "--width", "120", "--explain", "team-b/embed", str(EXAMPLES / "platform")]
    assert command.main([*args, str(EXAMPLES / "quotas")]) == Exit.UNPLACED
    out = capsys.readouterr().out
    assert "FleetQuota team-b: 8 accelerators matching limits[0].deviceSelector, 0 in use by others" in out
    check_golden("explain-embed-quota.txt", out)
