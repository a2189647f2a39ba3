"""Which ModelEndpoints carrying modelplane.ai/ labels may be routed (no hijack)."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.routing.provenance import refusal

API = "modelplane.ai/v1alpha1"


def _ref(kind: str = "ModelDeployment", name: str = "llama", api: str = API, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "controller": True, **extra}


@pytest.mark.parametrize(
    ("labels", "owners", "refused"),
    [
        pytest.param({"team": "ml"}, [], None, id="users-labels-only"),
        pytest.param({"modelplane.ai/deployment": "llama"}, [_ref()], None, id="composed-by-its-deployment"),
        pytest.param(
            {"modelplane.ai/deployment": "llama", "modelplane.ai/cluster": "gpu-1"}, [_ref()], None, id="pool-endpoint"
        ),
        pytest.param({"modelplane.ai/cluster": "gpu-1"}, [_ref(name="any")], None, id="no-deployment-label-composed"),
        pytest.param(
            {"modelplane.ai/deployment": "llama"},
            [{"apiVersion": API, "kind": "ModelDeployment", "name": "other"}, _ref()],
            None,
            id="the-controller-among-owners",
        ),
        pytest.param(
            {"modelplane.ai/deployment": "llama"},
            [],
            "ModelEndpoint ml/e carries modelplane.ai/deployment=llama but was not composed by ModelDeployment llama",
            id="no-owner",
        ),
        pytest.param(
            {"modelplane.ai/deployment": "llama"},
            [_ref(name="other")],
            "ModelEndpoint ml/e carries modelplane.ai/deployment=llama but was not composed by ModelDeployment llama",
            id="another-deployment",
        ),
        pytest.param(
            {"modelplane.ai/deployment": "llama"},
            [_ref(controller=False)],
            "ModelEndpoint ml/e carries modelplane.ai/deployment=llama but was not composed by ModelDeployment llama",
            id="owner-not-controller",
        ),
        pytest.param(
            {"modelplane.ai/deployment": "llama"},
            [_ref(api="evil.example/v1")],
            "ModelEndpoint ml/e carries modelplane.ai/deployment=llama but was not composed by ModelDeployment llama",
            id="another-group",
        ),
        pytest.param(
            {"modelplane.ai/cluster": "gpu-1"},
            [_ref(kind="ModelService")],
            "ModelEndpoint ml/e carries modelplane.ai/cluster=gpu-1 but was not composed by a ModelDeployment",
            id="another-modelplane-kind",
        ),
        pytest.param(
            {"modelplane.ai/deployment": "llama"},
            ["not-a-reference", 3, None],
            "ModelEndpoint ml/e carries modelplane.ai/deployment=llama but was not composed by ModelDeployment llama",
            id="malformed-owners",
        ),
    ],
)
def test_refusal(labels: dict[str, str], owners: list[Any], refused: str | None) -> None:
    got = refusal("ml", "e", labels, owners)
    if refused is None:
        assert got is None
    else:
        assert got is not None and got.startswith(refused) and "it gets no traffic" in got
