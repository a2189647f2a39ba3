"""Did-you-mean: the known value nearest to one that names nothing, and the references that resolve to nothing."""

from __future__ import annotations

import pytest

from modelplane.preview.hints import enum_hints, nearest, type_hints
from modelplane.preview.references import missing_class, selectable, unmatched_selectors


@pytest.mark.parametrize(
    ("word", "known", "want"),
    [
        pytest.param("kai", ["None", "KAI", "Kueue"], "KAI", id="case"),
        pytest.param("llama8b", ["llama-8b", "llama-70b"], "llama-8b", id="near"),
        pytest.param("KAI", ["None", "KAI", "Kueue"], None, id="known"),
        pytest.param("Slurm", ["None", "KAI", "Kueue"], None, id="nothing-near"),
        pytest.param("x", [], None, id="nothing-known"),
    ],
)
def test_nearest(word: str, known: list[str], want: str | None) -> None:
    assert nearest(word, known) == want


@pytest.mark.parametrize(
    ("errors", "want"),
    [
        pytest.param(
            ['spec.scheduler.type: Unsupported value: "kai": supported values: "None", "KAI", "Kueue"'],
            ['spec.scheduler.type: did you mean "KAI"?'],
            id="one",
        ),
        pytest.param(
            ['* spec.a: Unsupported value: "x": supported values: "X"', "spec.b: Required value"],
            ['spec.a: did you mean "X"?'],
            id="listed-among-others",
        ),
        pytest.param(['spec.a: Unsupported value: "zzz": supported values: "X"'], [], id="nothing-near"),
        pytest.param(["spec.a: Invalid value: 1"], [], id="not-an-enum-error"),
    ],
)
def test_enum_hints(errors: list[str], want: list[str]) -> None:
    assert enum_hints(errors) == want


@pytest.mark.parametrize(
    ("api_version", "kind", "anywhere", "want"),
    [
        pytest.param(
            "modelplane.ai/v1alpha1", "modeldeployment", True, ["kind: did you mean ModelDeployment?"], id="case"
        ),
        pytest.param(
            "modelplane.ai/v1beta1",
            "ModelDeploymnet",
            True,
            ["apiVersion: did you mean modelplane.ai/v1alpha1?", "kind: did you mean ModelDeployment?"],
            id="both",
        ),
        pytest.param("v1", "ConfigMap", True, [], id="known"),
        pytest.param("apps/v1", "Deployment", True, [], id="known-apps"),
        pytest.param("v1", "Deployment", True, ["apiVersion: did you mean apps/v1?"], id="wrong-group"),
        pytest.param("example.com/v1", "Secert", False, [], id="only-its-own-group"),
    ],
)
def test_type_hints(api_version: str, kind: str, anywhere: bool, want: list[str]) -> None:
    assert type_hints(api_version, kind, anywhere=anywhere) == want


def test_missing_class_names_pool_field_and_class() -> None:
    assert missing_class("l4", 1, "nvidia-l40", ["nvidia-l4", "nvidia-h100-8"]) == (
        "pool l4: spec.nodePools[1].className: InferenceClass nvidia-l40 not found (did you mean nvidia-l4?); "
        "the pool offers no GPUs to place replicas on"
    )


def _service(*selectors: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"name": "s", "namespace": "ml"},
        "spec": {"endpoints": [{"selector": s} for s in selectors]},
    }


@pytest.mark.parametrize(
    ("selectors", "want"),
    [
        pytest.param([{"matchLabels": {"modelplane.ai/deployment": "a"}}], [], id="a-deployment"),
        pytest.param([{"matchLabels": {"provider": "openai"}}], [], id="a-hand-written-endpoint"),
        pytest.param([{}], [], id="empty-matches-everything"),
        pytest.param(
            [{"matchExpressions": [{"key": "modelplane.ai/deployment", "operator": "In", "values": ["a", "b"]}]}],
            [],
            id="expression",
        ),
        pytest.param(
            [{"matchLabels": {"modelplane.ai/deployment": "a"}}, {"matchLabels": {"provider": "opena1"}}],
            [
                "spec.endpoints[1].selector (provider=opena1) matches no ModelEndpoint, and no ModelDeployment in ml "
                "composes one it would match; did you mean provider=openai?"
            ],
            id="second-entry",
        ),
        pytest.param(
            [{"matchExpressions": [{"key": "tier", "operator": "Exists"}]}],
            [
                "spec.endpoints[0].selector (tier) matches no ModelEndpoint, and no ModelDeployment in ml "
                "composes one it would match"
            ],
            id="expression-matching-nothing",
        ),
    ],
)
def test_unmatched_selectors(selectors: list[dict[str, object]], want: list[str]) -> None:
    assert list(unmatched_selectors(_service(*selectors), selectable([{"provider": "openai"}], ["a"]))) == want
