"""A Dedicated ModelBatchRun's worker shape is ModelDeployment's: the XRD copies those schemas verbatim.

The fleet scheduler reads a run's clusterSelector, nodeSelector and workers as a one-replica
deployment's (``modelplane.batch.placement``), and compose-model-batch-run builds its pod with the
replicas' own code; a copy that drifted would admit what that code cannot read.
"""

from __future__ import annotations

from typing import Any

import pytest
import xrds


def _spec(kind: str) -> dict[str, Any]:
    properties: dict[str, Any] = xrds.definitions()[kind].schema["properties"]["spec"]["properties"]
    return properties


def _without_descriptions(node: Any) -> Any:
    """The schema as the API server enforces it (a piece's description says where it is used)."""
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


@pytest.mark.parametrize("field", ["clusterSelector", "nodeSelector", "workers"])
def test_the_worker_shape_is_the_deployments(field: str) -> None:
    run, deployment = _spec("ModelBatchRun")[field], _spec("ModelDeployment")[field]
    assert _without_descriptions(run) == _without_descriptions(deployment)
    # Below the top level every description is the deployment's too.
    assert run.get("properties") == deployment.get("properties")
