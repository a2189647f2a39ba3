from __future__ import annotations

from typing import Any

import pytest

from modelplane.scheduling.labels import label_selector
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
