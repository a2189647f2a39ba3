"""A draining InferenceCluster reports how many ModelReplicas are still on it, and counts as cordoned."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.test_compose_inference_cluster import _cluster, _replica, _req, _run, _status


def _on(name: str, cluster: str, deployment: str | None = "m") -> dict[str, Any]:
    replica = _replica()
    replica["metadata"]["name"] = name
    replica["spec"]["inferenceClusterRef"] = {"name": cluster}
    if deployment is not None:
        replica["spec"]["deploymentRef"] = {"name": deployment}
    return replica


@pytest.mark.parametrize(
    ("drain", "replicas", "want"),
    [
        pytest.param(False, [_on("m-0", "c")], None, id="not-draining"),
        pytest.param(
            True,
            [_on("m-0", "c"), _on("m-1", "other"), _on("x-0", "c", "x"), _on("loose", "c", None)],
            {"remaining": 3, "deployments": ["ml/m", "ml/x"]},
            id="draining-counts-its-own",
        ),
        pytest.param(True, [_on("m-1", "other")], {"remaining": 0, "deployments": []}, id="drained"),
    ],
)
def test_drain_status(drain: bool, replicas: list[dict[str, Any]], want: dict[str, Any] | None) -> None:
    xr = _cluster()
    xr["spec"]["drain"] = drain
    req = _req(xr)
    req.required_resources["replicas"].ClearField("items")
    for replica in replicas:
        req.required_resources["replicas"].items.add().resource.update(replica)
    status = _status(_run(req))
    assert status.get("drain") == want
    assert status["cordoned"] is drain
