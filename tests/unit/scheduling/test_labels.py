from __future__ import annotations

from typing import Any

import pytest

from modelplane.scheduling.labels import cluster_selector_text, label_selector
from modelplane_models.model_deployment import ClusterSelector

LABELS = {"tier": "prod", "region": "us-east", "gpu": ""}


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param(None, True, id="unset-matches-all"),
        pytest.param({}, True, id="empty-matches-all"),
        pytest.param({"matchLabels": {"tier": "prod"}}, True, id="label-equal"),
        pytest.param({"matchLabels": {"tier": "dev"}}, False, id="label-differs"),
        pytest.param({"matchLabels": {"zone": "a"}}, False, id="label-missing"),
        pytest.param({"matchLabels": {"tier": "prod", "region": "eu"}}, False, id="labels-are-anded"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["dev", "prod"]}]}, True, id="in"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["dev"]}]}, False, id="not-in-set"
        ),
        pytest.param({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, False, id="in-absent"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["dev"]}]}, True, id="notin"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]}, False, id="notin-hit"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True, id="notin-absent"
        ),
        pytest.param({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, True, id="exists-empty-value"),
        pytest.param({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False, id="exists-absent"),
        pytest.param({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True, id="does-not-exist"),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False, id="exists-after-all"),
        pytest.param(
            {
                "matchLabels": {"tier": "prod"},
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["eu-west"]}],
            },
            False,
            id="labels-and-expressions-are-anded",
        ),
    ],
)
def test_label_selector(selector: dict[str, Any] | None, want: bool) -> None:
    parsed = label_selector(ClusterSelector.model_validate(selector) if selector is not None else None)
    assert parsed.matches(LABELS) is want


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param(None, "", id="unset"),
        pytest.param({}, "", id="empty"),
        pytest.param({"matchLabels": {"tier": "prod", "env": "lab"}}, "env=lab,tier=prod", id="labels-sorted"),
        pytest.param(
            {"matchExpressions": [{"key": "region", "operator": "In", "values": ["sa-west-1", "sa-east-1"]}]},
            "region in (sa-east-1,sa-west-1)",
            id="in-values-sorted",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "region", "operator": "In", "values": ["sa-east-1"]}]},
            "region in (sa-east-1)",
            id="in-one-value-stays-in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["dev"]}]},
            "tier notin (dev)",
            id="notin",
        ),
        pytest.param({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, "gpu", id="exists"),
        pytest.param({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, "!gpu", id="does-not-exist"),
        pytest.param(
            {
                "matchLabels": {"tier": "prod"},
                "matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}],
            },
            "region in (eu),tier=prod",
            id="requirements-sorted-by-key",
        ),
    ],
)
def test_cluster_selector_text_reads_as_kubectl_prints_it(selector: dict[str, Any] | None, want: str) -> None:
    parsed = None if selector is None else ClusterSelector.model_validate(selector)
    assert cluster_selector_text(parsed) == want
