"""modelplane preview: load a directory, render to a fixed point, summarise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.kinds import KINDS
from modelplane.preview import command
from modelplane.preview.fleet import DidNotConvergeError, merge_status, simulate
from modelplane.preview.manifests import ManifestError, load_dir
from modelplane.render import RenderInputs, RenderOutput
from modelplane.repo import ROOT, load_composition

CLASS = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceClass",
    "metadata": {"name": "l4"},
    "spec": {
        "devices": [
            {
                "name": "gpu",
                "driver": "gpu.nvidia.com",
                "deviceClassName": "gpu.nvidia.com",
                "count": 2,
                "attributes": {"productName": {"string": "NVIDIA L4"}},
            }
        ]
    },
}
CLUSTER = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "InferenceCluster",
    "metadata": {"name": "edge", "labels": {"region": "local"}},
    "spec": {
        "cluster": {"source": "Existing", "existing": {"secretRef": {"namespace": "x", "name": "kc", "key": "k"}}},
        "nodePools": [{"name": "pool-a", "className": "l4", "nodeCount": 3}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]},
}
SCALED_OBJECT = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "s", "namespace": "n"}}


def _write(tmp_path: Path, *docs: dict[str, Any]) -> Path:
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path


def _compositions() -> dict[str, dict[str, Any]]:
    return {k.kind: load_composition(k.kind) for k in KINDS}


def test_summary_of_a_small_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main([str(_write(tmp_path, CLASS, CLUSTER, SCALED_OBJECT))]) == 0
    out = capsys.readouterr().out
    # The cluster composes its ServingStack, which renders in the next pass.
    assert "settled after 3 pass(es)" in out
    assert "l4: 2 accelerator(s) per node; Valid: True (Valid): the class is valid" in out
    assert "edge: Existing, scheduler None, backend KServe; Ready: True (Available) [region=local]" in out
    assert "pool pool-a (l4): 3 nodes x 2 GPUs = 6 declared, 0 in use, 6 free (source: Declared)" in out
    # The kubeconfig Secret is not among the manifests: the preview says so instead of hiding it.
    assert "Warning InferenceCluster edge: KubeconfigNotFound: Secret x/kc not found" in out


def test_yaml_output_lists_every_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main([str(_write(tmp_path, CLASS, CLUSTER, SCALED_OBJECT)), "--output", "yaml"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert {("InferenceClass", "l4"), ("InferenceCluster", "edge"), ("ScaledObject", "s")} <= kinds
    # The cluster composes its ProviderConfigs and ServingStack, which composes its releases.
    assert {("ClusterProviderConfig", "edge"), ("ServingStack", "edge"), ("Release", "edge-lws")} <= kinds
    # The simulated Ready condition of the manifest survives the render.
    cluster = next(d for d in docs if d["kind"] == "InferenceCluster")
    assert {"type": "Ready", "status": "True", "reason": "Available"} in cluster["status"]["conditions"]


@pytest.mark.parametrize(
    ("docs", "want"),
    [
        pytest.param([CLASS, CLASS], "is also defined in", id="duplicate"),
        pytest.param([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}], "has no metadata.name", id="no-name"),
        pytest.param([{"kind": "ConfigMap"}], "needs apiVersion and kind", id="no-api-version"),
    ],
)
def test_bad_manifests_are_refused(tmp_path: Path, docs: list[dict[str, Any]], want: str) -> None:
    with pytest.raises(ManifestError, match=want):
        load_dir(_write(tmp_path, *docs))


def test_empty_dir_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main([str(tmp_path)]) == 1
    assert "no .yaml files found" in capsys.readouterr().err


def test_a_fleet_that_keeps_changing_fails_clearly(tmp_path: Path) -> None:
    calls = {"n": 0}

    def restless(inputs: RenderInputs) -> RenderOutput:
        calls["n"] += 1
        xr = {**inputs.xr, "status": {"generation": calls["n"]}}
        return RenderOutput(xr=xr, composed=[], results=[], context={})

    with pytest.raises(DidNotConvergeError, match=r"did not settle after 3 passes; still changing: InferenceClass l4"):
        simulate(load_dir(_write(tmp_path, CLASS)), _compositions(), max_passes=3, renderer=restless)


def test_composed_xrs_join_the_fleet_and_leave_when_dropped(tmp_path: Path) -> None:
    replica = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": "r", "namespace": "n"},
    }
    composes = {"on": True}

    def parent(inputs: RenderInputs) -> RenderOutput:
        composed = [replica] if inputs.xr["kind"] == "InferenceClass" and composes["on"] else []
        return RenderOutput(xr={**inputs.xr, "status": {}}, composed=composed, results=[], context={})

    loaded = load_dir(_write(tmp_path, CLASS))
    fleet = simulate(loaded, _compositions(), renderer=parent)
    assert ("ModelReplica", "n", "r") in fleet.states
    assert fleet.states[("ModelReplica", "n", "r")].parent == ("InferenceClass", "", "l4")
    composes["on"] = False
    assert ("ModelReplica", "n", "r") not in simulate(loaded, _compositions(), renderer=parent).states


@pytest.mark.parametrize(
    ("simulated", "rendered", "want"),
    [
        pytest.param(None, {"a": 1}, {"a": 1}, id="no-simulated-status"),
        pytest.param({"a": 2}, {"a": 1, "b": 1}, {"a": 2, "b": 1}, id="simulated-wins"),
        pytest.param(
            {"conditions": [{"type": "Ready", "status": "True"}]},
            {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Valid", "status": "True"}]},
            {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Valid", "status": "True"}]},
            id="conditions-merge-by-type",
        ),
    ],
)
def test_merge_status(simulated: dict[str, Any] | None, rendered: dict[str, Any], want: dict[str, Any]) -> None:
    assert merge_status(simulated, rendered) == want


def test_quickstart_preview(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main([str(ROOT / "examples" / "quickstart")]) == 0
    out = capsys.readouterr().out
    # The one-GPU deployment lands on the quickstart cluster and takes one of its two L4s.
    assert "pool l4 (nvidia-l4): 2 nodes x 1 GPUs = 2 declared, 1 in use, 1 free (source: Declared)" in out
    assert "replicas: default/qwen-0 on pool(s) l4" in out
    assert "default/qwen: 0/1 ready; Scheduled: True (Scheduled): placed 1 of 1" in out


def test_replicas_of_the_whole_fleet_never_overcommit(capsys: pytest.CaptureFixture[str]) -> None:
    examples = ROOT / "examples"
    assert command.main([str(examples / "platform"), str(examples / "models")]) == 0
    out = capsys.readouterr().out
    assert "OVERCOMMITTED" not in out
    # Each deployment is rendered seeing the replicas composed before it: kimi-k2 (TP8 x PP2) fills
    # eu-west-kueue's two nodes, so both llama-70b replicas go to us-east-kai.
    assert "replicas: ml-team/kimi-k2-0 on pool(s) h100" in out
    assert "replicas: ml-team/llama-70b-0 on pool(s) h100; ml-team/llama-70b-1 on pool(s) h100" in out
