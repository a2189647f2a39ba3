"""The scheduler with the real DRA CEL environment (``modelplane.cel``) on the example fleet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.scheduling import (
    Claim,
    ClassDevice,
    DeviceVersion,
    RejectReason,
    Schedule,
    SelectorError,
    match_cel,
)
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica
from tests.golden.cases import as_observed
from tests.unit.fleet import Pool, Shape, cluster, deployment, gpu_class, plan, replicas_of

EXAMPLES = Path(__file__).parents[3] / "examples"
GPU = ClassDevice(
    name="gpu",
    driver="gpu.nvidia.com",
    claim=Claim.DRA,
    count=8,
    attributes={"architecture": "Hopper", "cudaComputeCapability": DeviceVersion("9.0.0")},
    capacity={"memory": "80Gi"},
)


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        pytest.param('device.attributes["gpu.nvidia.com"].architecture == "Hopper"', True, id="string"),
        pytest.param('device.attributes["gpu.nvidia.com"].architecture == "Ampere"', False, id="string-differs"),
        pytest.param('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0', True, id="quantity"),
        pytest.param(
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("141Gi")) >= 0', False, id="quantity-less"
        ),
        pytest.param(
            'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.9.0"))',
            True,
            id="version",
        ),
        pytest.param(
            'device.driver == "ib.nvidia.com" && device.attributes["ib.nvidia.com"].x == 1', False, id="guard"
        ),
    ],
)
def test_match_cel(expression: str, want: bool) -> None:
    assert match_cel(expression, GPU) is want


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param('device.attributes["gpu.nvidia.com"].missing == 1', "no such key: missing", id="missing-key"),
        pytest.param("device.driver ==", "syntax error", id="syntax"),
        pytest.param("1 + 1", "must evaluate to bool", id="not-bool"),
    ],
)
def test_match_cel_errors_name_the_expression(expression: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        match_cel(expression, GPU)
    assert caught.value.expression == expression
    assert message in caught.value.message


def test_default_matcher_reports_a_bad_expression() -> None:
    got = plan(
        deployment("llama", shape=Shape(cel="device.driver ==")),
        [cluster("a", Pool("h100", "h100", 1))],
        [gpu_class("h100")],
        matcher=match_cel,
    )
    assert got.reason is RejectReason.CEL_ERROR
    assert "spec.nodeSelector.cel: syntax error" in got.message
    assert "(in 'device.driver ==')" in got.message


def _load(kind: str, directory: Path) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(directory.rglob("*.yaml")):
        docs += [as_observed(d) for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == kind]
    return docs


def _fleet(*, provisioned: bool) -> tuple[list[InferenceCluster], list[InferenceClass], list[ModelDeployment]]:
    """The example fleet; ``provisioned`` gives the clusters without a status a Ready one."""
    ready = {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]}
    clusters = [
        InferenceCluster.model_validate(d if "status" in d or not provisioned else d | {"status": ready})
        for d in _load("InferenceCluster", EXAMPLES / "platform")
    ]
    classes = [InferenceClass.model_validate(d) for d in _load("InferenceClass", EXAMPLES / "platform")]
    deployments = [ModelDeployment.model_validate(d) for d in _load("ModelDeployment", EXAMPLES / "models")]
    return clusters, classes, deployments


def _placed(result: Schedule) -> dict[str, tuple[str, ...]]:
    return {p.replica: (p.cluster, *(r.pool for r in p.roles)) for p in result.placements}


def test_example_fleet_fills_up_deployment_by_deployment() -> None:
    clusters, classes, deployments = _fleet(provisioned=True)
    replicas: list[ModelReplica] = []
    got: dict[str, tuple[str, ...]] = {}
    for dep in deployments:
        result = plan(dep, clusters, classes, replicas, matcher=match_cel)
        assert result.complete, result.message
        got |= _placed(result)
        replicas += replicas_of(result, dep)
    assert got == {
        # Decode needs 140Gi: only the H200 pool; prefill (any 80Gi Hopper) joins it on that cluster.
        "deepseek-r1-pd-0": ("gke-us-central1", "h200", "h200"),
        # Two whole nodes with InfiniBand: the idle Kueue cluster fits exactly (best fit).
        "kimi-k2-0": ("eu-west-kueue", "h100"),
        # Best fit by node: KAI reports a node of us-east-kai with exactly 4 GPUs free (the H200 node
        # DeepSeek left would strand 1); spread sends the second replica to the other cluster.
        "llama-70b-0": ("us-east-kai", "h100"),
        "llama-70b-1": ("gke-us-central1", "h200"),
        "llama-8b-autoscaled-0": ("aks-westeurope", "h100"),
        "llama-8b-fp8-0": ("gke-us-central1", "l4"),
        "llama-8b-fp8-1": ("gke-us-central1", "l4"),
        "llama-8b-bf16-0": ("gke-us-central1", "l4"),
    }


def test_example_fleet_before_the_gke_cluster_is_ready() -> None:
    clusters, classes, deployments = _fleet(provisioned=False)
    (deepseek,) = [d for d in deployments if d.metadata and d.metadata.name == "deepseek-r1-pd"]
    got = plan(deepseek, clusters, classes, matcher=match_cel)
    assert got.reason is RejectReason.NO_MATCHING_POOLS
    assert got.message.startswith("placed 0 of 1: deepseek-r1-pd-0: NoMatchingPools: 3 of 5 clusters match")
    assert "1 NotReady (gke-us-central1: no Ready condition yet)" in got.message
    assert "decode pool h100: spec.decode.nodeSelector.cel matches no DRA device of nvidia-h100-8" in got.message
