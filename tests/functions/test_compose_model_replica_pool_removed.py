"""compose-model-replica on a pool that left its cluster's spec.nodePools: what runs is kept and, while it
serves, the replica stays Ready (its ModelDeployment moves it, surge-first); with the pool's class published
in status.removingPools it resolves as before."""

from __future__ import annotations

from typing import Any

import pytest

from tests.functions.replica_fixtures import cluster, gpu_class, replica, request
from tests.functions.test_compose_model_replica import (
    DEPLOYMENT_READY,
    READY_ENDPOINT,
    _conditions,
    _observed,
    _resources,
    _run,
)


def _without_gpu(*, published: str | None = None, kept: bool = True) -> dict[str, Any]:
    """Cluster east with its pool gpu taken out of the spec; ``kept``: listed in status.removingPools."""
    body = cluster(backend="Native")
    body["spec"]["nodePools"] = [p for p in body["spec"]["nodePools"] if p["name"] != "gpu"]
    if kept:
        entry: dict[str, Any] = {"name": "gpu", "remaining": 1, "replicas": ["ml/llm-0"]}
        if published:
            entry["className"] = published
        body["status"]["removingPools"] = [entry]
    return body


@pytest.mark.parametrize(
    ("body", "serving", "deployed", "ready"),
    [
        # The cluster published the pool's class: the replica resolves and is composed as before.
        pytest.param(_without_gpu(published="h100"), DEPLOYMENT_READY, "Deployed", True, id="class-published"),
        # No class to resolve with (the spec says nothing of the pool): kept as composed, Ready while it serves.
        pytest.param(_without_gpu(), DEPLOYMENT_READY, "PoolNotFound", True, id="class-unknown-still-serving"),
        pytest.param(_without_gpu(kept=False), DEPLOYMENT_READY, "PoolNotFound", True, id="not-listed-yet"),
        pytest.param(_without_gpu(), None, "PoolNotFound", False, id="not-serving-is-not-ready"),
    ],
)
def test_a_replica_on_a_pool_out_of_the_spec_keeps_running_and_says_whether_it_serves(
    body: dict[str, Any], serving: dict[str, Any] | None, deployed: str, ready: bool
) -> None:
    observed = _observed("tp4", "Native", {"workload-unified": serving} if serving else {})
    before = _run(
        request(replica("tp4"), cluster_body=cluster(backend="Native"), classes=(gpu_class(),), observed=observed)
    )
    out = _run(request(replica("tp4"), cluster_body=body, classes=(gpu_class(),), observed=observed))
    # Nothing that runs is dropped or rewritten: recomposed as before, or kept exactly as observed.
    got = _resources(out)
    if deployed == "Deployed":
        assert got == _resources(before)
    else:
        assert {k: v["spec"] for k, v in got.items()} == {k: v["spec"] for k, v in observed.items()}
    conditions = _conditions(out)
    assert conditions["Deployed"]["reason"] == deployed
    composite = out["desired"]["composite"]
    assert composite["ready"] == ("READY_TRUE" if ready else "READY_FALSE")
    assert (conditions.get("Serving", {}).get("status") == "STATUS_CONDITION_TRUE") is ready
    assert composite["resource"]["status"].get("endpoint") == (READY_ENDPOINT if ready else None)
