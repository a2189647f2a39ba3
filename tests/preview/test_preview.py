"""modelplane preview: load a directory, render to a fixed point, summarise."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from modelplane.kinds import KINDS
from modelplane.preview import command
from modelplane.preview.findings import Exit
from modelplane.preview.fleet import DidNotConvergeError, merge_status, simulate
from modelplane.preview.manifests import ManifestError, load_dir
from modelplane.preview.world import gateway_address, healthy
from modelplane.render import RenderInputs, RenderOutput
from modelplane.repo import load_composition
from tests.golden.cases import observed_examples

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
SCALED_OBJECT = {
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledObject",
    "metadata": {"name": "s", "namespace": "n"},
    "spec": {"scaleTargetRef": {"name": "x"}, "triggers": [{"type": "cpu", "metadata": {"value": "50"}}]},
}


def _flat(out: str) -> str:
    """The output with runs of spaces collapsed, so a check reads a table row, not its column widths."""
    return "\n".join(" ".join(line.split()) for line in out.splitlines())


def _write(tmp_path: Path, *docs: dict[str, Any]) -> Path:
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path


def _compositions() -> dict[str, dict[str, Any]]:
    return {k.kind: load_composition(k.kind) for k in KINDS}


def test_summary_of_a_small_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--width", "200", str(_write(tmp_path, CLASS, CLUSTER, SCALED_OBJECT))]) == 0
    out = capsys.readouterr().out
    # The cluster composes its ServingStack, which renders in the same pass, right after it; the
    # next pass takes the stack's GatewayTLS condition into the cluster's; the third changes nothing.
    assert "settled after 3 passes" in out
    assert "edge pool-a l4 3 x 2 6 - 0 6 Declared" in _flat(out)
    assert "edge Existing None KServe Available" in _flat(out)
    # The kubeconfig Secret is not among the manifests: the preview says so instead of hiding it.
    warning = next(line for line in out.splitlines() if line.startswith("  Warning InferenceCluster edge: "))
    assert warning.endswith("KubeconfigNotFound: Secret x/kc not found")


def test_yaml_output_lists_every_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main([str(_write(tmp_path, CLASS, CLUSTER, SCALED_OBJECT)), "--output", "objects"]) == 0
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
    assert command.main([str(tmp_path)]) == Exit.FAILED
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
        # A manifest's Ready stands for what a live system observed: its function would have said the same.
        pytest.param(
            {"conditions": [{"type": "Ready", "status": "True"}]},
            {"readyVerdict": False, "conditions": [{"type": "Ready", "status": "False"}]},
            {"readyVerdict": True, "conditions": [{"type": "Ready", "status": "True"}]},
            id="simulated-ready-sets-the-rendered-verdict",
        ),
        pytest.param(
            {"readyVerdict": False, "conditions": [{"type": "Ready", "status": "True"}]},
            {"readyVerdict": True},
            {"readyVerdict": False, "conditions": [{"type": "Ready", "status": "True"}]},
            id="a-written-verdict-wins",
        ),
        pytest.param(
            {"conditions": [{"type": "Ready", "status": "True"}]},
            {"conditions": []},
            {"conditions": [{"type": "Ready", "status": "True"}]},
            id="no-verdict-rendered-none-added",
        ),
    ],
)
def test_merge_status(simulated: dict[str, Any] | None, rendered: dict[str, Any], want: dict[str, Any]) -> None:
    assert merge_status(simulated, rendered) == want


def test_quickstart_preview(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--width", "200", str(observed_examples() / "quickstart")]) == 0
    out = capsys.readouterr().out
    # The one-GPU deployment lands on the quickstart cluster and takes one of its two L4s.
    assert "quickstart l4 nvidia-l4 2 x 1 2 - 1 1 Declared" in _flat(out)
    assert "default/qwen 0/1 1/1 1 TP1 qwen-0 → quickstart [l4]" in _flat(out)


def test_replicas_of_the_whole_fleet_never_overcommit(capsys: pytest.CaptureFixture[str]) -> None:
    examples = observed_examples()
    # Offline the cloud clusters are still being created: what needs them is unplaced (exit 5).
    assert command.main(["--width", "200", str(examples / "platform"), str(examples / "models")]) == Exit.UNPLACED
    out = capsys.readouterr().out
    assert "OVERCOMMITTED" not in out
    # Each deployment is rendered seeing the replicas composed before it: kimi-k2 (TP8 x PP2) fills
    # eu-west-kueue's two nodes, so both llama-70b replicas go to us-east-kai.
    assert "kimi-k2-0 → eu-west-kueue [h100]" in out
    assert "llama-70b-0 → us-east-kai [h100]\n" in out
    assert "llama-70b-1 → us-east-kai [h100]\n" in out


def test_a_healthy_world_routes_the_canary(capsys: pytest.CaptureFixture[str]) -> None:
    examples = observed_examples()
    assert command.main(["--width", "200", "--assume-ready", str(examples / "platform"), str(examples / "models")]) == 0
    out = capsys.readouterr().out
    assert "OVERCOMMITTED" not in out
    # Every composed resource reports healthy: the cloud clusters come up, replicas serve.
    assert "gke-us-central1 GKE None KServe Available" in _flat(out)
    assert "ml-team/llama-8b-fp8 2/2 2/2 1" in _flat(out)
    assert "ml-team/llama-8b-bf16 1/1 1/1 1" in _flat(out)
    # 90 to the FP8 deployment's pool on its cluster (both its replicas), 10 to the BF16 one's (9:1).
    flat = _flat(out)
    want = (
        "ml-team/llama-8b http://203.0.113.10/ml-team/llama-8b key: any - Routed "
        "llama-8b-bf16-gke-us-central1: 1 → 10.0%\n"
    )
    assert want in flat
    assert "\nllama-8b-fp8-gke-us-central1: 9 → 90.0%\n" in flat
    assert "NoEndpoints" not in out
    # In each cluster one InferencePool per deployment, its endpoint weighing the replicas Ready there.
    assert "ml-team/llama-8b-fp8 gke-us-central1 llama-8b-fp8 Default, FailOpen 2 Ready 2 PodMonitor," in flat
    assert "ml-team/llama-70b us-east-kai llama-70b PrefixCache, FailOpen, priority 100 2 Ready 2 PodMonitor" in flat


def test_a_healthy_world_serves_the_quickstart(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.main(["--width", "200", "--assume-ready", str(observed_examples() / "quickstart")]) == 0
    out = capsys.readouterr().out
    assert "default/qwen 1/1 1/1 1" in _flat(out)
    assert "Routed qwen-quickstart: 1 → 100.0%\n" in _flat(out)  # its pool on cluster quickstart


def test_without_a_healthy_world_nothing_serves(capsys: pytest.CaptureFixture[str]) -> None:
    examples = observed_examples()
    loaded = load_dir(examples / "platform", examples / "models")
    assert simulate(loaded, _compositions()) == simulate(loaded, _compositions(), world=None)
    assert command.main(["--width", "200", str(examples / "platform"), str(examples / "models")]) == Exit.UNPLACED
    out = capsys.readouterr().out
    assert "ml-team/llama-8b http://203.0.113.10/ml-team/llama-8b key: any - NoEndpoints" in _flat(out)
    assert "ml-team/llama-70b 0/2 2/2 4" in _flat(out)
    assert "gke-us-central1 GKE None KServe Creating" in _flat(out)


@pytest.mark.parametrize(
    ("composed", "want"),
    [
        # A Deployment on a workload cluster: the Object is Ready, the Deployment available.
        (
            {
                "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
                "kind": "Object",
                "spec": {
                    "providerConfigRef": {"name": "edge"},
                    "forProvider": {
                        "manifest": {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 3}}
                    },
                },
            },
            {
                "ready": "True",
                "manifest_status": {"readyReplicas": 3, "replicas": 3, "Available": "True"},
            },
        ),
        # A Gateway's own status wins over the simulated one.
        (
            {
                "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
                "kind": "Object",
                "spec": {
                    "providerConfigRef": {"name": "edge"},
                    "forProvider": {
                        "manifest": {
                            "apiVersion": "gateway.networking.k8s.io/v1",
                            "kind": "Gateway",
                            "status": {"addresses": [{"value": "10.0.0.1"}]},
                        }
                    },
                },
            },
            {"ready": "True", "manifest_status": {"addresses": [{"value": "10.0.0.1"}], "Programmed": "True"}},
        ),
        ({"apiVersion": "helm.m.crossplane.io/v1beta1", "kind": "Release"}, {"ready": "True"}),
        ({"apiVersion": "container.gcp.m.upbound.io/v1beta1", "kind": "NodePool"}, {"ready": "True"}),
        ({"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": "Backend"}, {"Accepted": "True"}),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, {}),
    ],
)
def test_healthy_status_per_kind(composed: dict[str, Any], want: dict[str, Any]) -> None:
    got = healthy(composed)

    def conditions(status: dict[str, Any]) -> dict[str, str]:
        return {c["type"]: c["status"] for c in status.get("conditions", [])}

    status = got.get("status", {})
    if "ready" in want:
        assert conditions(status)["Ready"] == want["ready"]
    if "Accepted" in want:
        assert conditions(status)["Accepted"] == want["Accepted"]
    if not want:
        assert got == composed
    if "manifest_status" in want:
        remote = status["atProvider"]["manifest"]["status"]
        for name, value in want["manifest_status"].items():
            assert (conditions(remote)[name] if name[0].isupper() else remote[name]) == value


def test_gateway_addresses_are_stable_documentation_addresses() -> None:
    assert gateway_address("edge") == gateway_address("edge")
    assert gateway_address("edge").startswith("198.51.100.")
    assert gateway_address("edge", control_plane=True).startswith("203.0.113.")


def _fleet_output(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    examples = observed_examples()
    code = command.main(["--width", "200", *args, str(examples / "platform"), str(examples / "models")])
    return code, _flat(capsys.readouterr().out)


def test_assume_ready_keeps_the_observed_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    # us-east-kai's manifest says KAI observes 12 of 32 GPUs in use; the two llama-70b replicas (8 GPUs)
    # are placed there. Offline they are not Ready and count on top; in a healthy world KAI observes
    # them too: 20 either way, never the 12 that other workloads hold minus ours.
    _, offline = _fleet_output(capsys)
    assert "us-east-kai h100 nvidia-h100-8 4 x 8 32 12 20 12 KAI" in offline
    _, healthy_world = _fleet_output(capsys, "--assume-ready")
    assert "us-east-kai h100 nvidia-h100-8 4 x 8 32 20 20 12 KAI" in healthy_world


@pytest.mark.parametrize(
    ("scheduler", "assume_ready", "row"),
    [
        # A running KAI or Kueue counts the replica the healthy world made Ready there (1 GPU).
        pytest.param("KAI", True, "edge pool-a l4 3 x 2 6 1 1 5 KAI", id="kai-live"),
        pytest.param("Kueue", True, "edge pool-a l4 3 x 2 6 1 1 5 Kueue", id="kueue-live"),
        # Offline nothing runs, so no scheduler observes anything: the figure is modelplane's own.
        pytest.param("KAI", False, "edge pool-a l4 3 x 2 6 - 1 5 Declared", id="kai-offline"),
        pytest.param("None", True, "edge pool-a l4 3 x 2 6 - 1 5 Declared", id="default-scheduler-live"),
    ],
)
def test_pool_source_follows_the_cluster_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str, assume_ready: bool, row: str
) -> None:
    settings = {"KAI": {"kai": {"queue": "inference"}}, "Kueue": {"kueue": {"localQueueName": "inference"}}}
    scheduling = {"scheduler": {"type": scheduler, **settings.get(scheduler, {})}}
    spec: dict[str, Any] = {**cast("dict[str, Any]", CLUSTER["spec"]), **scheduling}
    cluster = {**CLUSTER, "spec": spec}
    flags = ["--assume-ready"] if assume_ready else []
    command.main(["--width", "200", *flags, str(_write(tmp_path, CLASS, cluster, DEPLOYMENT))])
    assert row in _flat(capsys.readouterr().out)


def test_assume_ready_makes_an_existing_cluster_reachable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = {**CLUSTER, "status": {}}
    del cluster["status"]
    fleet = _write(tmp_path, CLASS, cluster)
    assert command.main(["--width", "200", str(fleet)]) == 0
    assert "edge Existing None KServe Creating" in _flat(capsys.readouterr().out)
    assert command.main(["--width", "200", "--assume-ready", str(fleet)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "edge Existing None KServe Available" in out
    assert (
        "note: Existing cluster edge is assumed reachable: its kubeconfig Secret x/kc is not among the manifests" in out
    )


def test_the_summary_shows_stacks_gpus_roles_and_releases(capsys: pytest.CaptureFixture[str]) -> None:
    _, out = _fleet_output(capsys, "--assume-ready")
    # The serving stack of each cluster, with its gateway.
    assert re.search(r"us-east-kai Existing KAI KServe Available Available, gateway 198\.51\.100\.\d+ ", out)
    # GPUs per replica and prefill/decode roles by name.
    assert (
        "ml-team/deepseek-r1-pd 1/1 1/1 11 prefill 5 x TP1 + decode 3 x TP2 deepseek-r1-pd-0 → gke-us-central1" in out
    )
    assert "[prefill h200 (5 GPUs), decode h200 (6 GPUs)]" in out
    # Helm releases under the workload cluster they install into; the control plane's own apart.
    # (The list wraps: the releases of one cluster run up to the next "cluster" row.)
    assert re.search(
        r"cluster us-east-kai cert-manager (?:(?!\ncluster ).)*kai-scheduler \(kai-scheduler v[\d.]+\)", out, re.S
    )
    assert "control plane default-envoy-gateway (gateway-helm" in out


def _clusters(n: int, *, ready: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        c = {**CLUSTER, "metadata": {"name": f"edge-{i}", "labels": {"region": "local"}}}
        if not ready:
            del c["status"]
        out.append(c)
    return out


DEPLOYMENT = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelDeployment",
    "metadata": {"name": "m", "namespace": "n"},
    "spec": {
        "replicas": 1,
        "clusterSelector": {"matchLabels": {"region": "local"}},
        "nodeSelector": {"cel": 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'},
        "workers": {"topology": {"tensor": 1}, "template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
    },
}


@pytest.mark.parametrize(
    ("ready", "cel", "want"),
    [
        pytest.param(
            False,
            None,
            "edge-0, edge-1, edge-2, edge-3: NotReady: Ready is False (Creating)",
            id="every-not-ready-cluster",
        ),
        pytest.param(
            True,
            'device.attributes["gpu.nvidia.com"].model == "H100"',
            "edge-0, edge-1, edge-2, edge-3: CELError: pool pool-a: spec.nodeSelector.cel",
            id="one-cel-error-once",
        ),
    ],
)
def test_an_unplaced_deployment_names_every_cause_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ready: bool, cel: str | None, want: str
) -> None:
    deployment = yaml.safe_load(yaml.safe_dump(DEPLOYMENT))
    if cel is not None:
        deployment["spec"]["nodeSelector"]["cel"] = cel
    fleet = _write(tmp_path, CLASS, *_clusters(4, ready=ready), deployment)
    assert command.main(["--width", "200", str(fleet)]) == Exit.UNPLACED
    out = capsys.readouterr().out
    why = [line.strip() for line in out.splitlines() if line.startswith("    edge-")]
    assert len(why) == 1, why
    assert why[0].startswith(want), why
    assert "more" not in out


def test_json_and_yaml_documents(capsys: pytest.CaptureFixture[str]) -> None:
    fleet = str(observed_examples() / "quickstart")
    assert command.main(["--output", "json", fleet]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exitCode"] == 0
    assert [c["name"] for c in doc["fleet"]["clusters"]] == ["quickstart"]
    assert doc["fleet"]["deployments"][0]["replicas"][0]["roles"][0]["pool"] == "l4"
    assert command.main(["--output", "yaml", fleet]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == doc


@pytest.mark.parametrize(
    ("color", "ansi"), [pytest.param("always", True, id="always"), pytest.param("auto", False, id="piped")]
)
def test_colour_only_on_a_terminal_or_when_asked(capsys: pytest.CaptureFixture[str], color: str, ansi: bool) -> None:
    assert command.main(["--color", color, str(observed_examples() / "quickstart")]) == 0
    assert ("\x1b[" in capsys.readouterr().out) == ansi


def test_objects_output_groups_helm_releases_under_the_cluster_they_install_into(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert command.main(["--output", "objects", str(observed_examples() / "quickstart")]) == 0
    sections = capsys.readouterr().out.split("---\n")
    releases = {
        (s.splitlines()[0], yaml.safe_load(s)["metadata"]["name"])
        for s in sections
        if yaml.safe_load(s)["kind"] == "Release"
    }
    assert ("# target: cluster quickstart", "quickstart-lws") in releases
    # The control plane's own Envoy Gateway release is not a workload cluster's.
    assert not any(t == "# target: cluster quickstart" and n == "default-envoy-gateway" for t, n in releases)
