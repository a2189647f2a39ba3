"""A draining InferenceCluster reports how many ModelReplicas are still on it, which cannot move and why
(from the annotation their ModelDeployment sets), its Drained condition, and counts as cordoned."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.store import Store
from tests.functions.test_compose_inference_cluster import _cluster, _replica, _req, _run, _status

STUCK = "no replacement can be placed (InsufficientCapacity: 1 of 2 clusters match clusterSelector)"


def _on(name: str, cluster: str, deployment: str | None = "m", *, stuck: str = "") -> dict[str, Any]:
    replica = _replica()
    replica["metadata"]["name"] = name
    replica["spec"]["inferenceClusterRef"] = {"name": cluster}
    if deployment is not None:
        replica["spec"]["deploymentRef"] = {"name": deployment}
    if stuck:
        replica["metadata"]["annotations"] = {"modelplane.ai/cannot-move": stuck}
    return replica


def _drain_run(drain: bool, replicas: list[dict[str, Any]]) -> fnv1.RunFunctionResponse:
    xr = _cluster()
    xr["spec"]["drain"] = drain
    req = _req(xr)
    req.required_resources["replicas"].ClearField("items")
    for replica in replicas:
        req.required_resources["replicas"].items.add().resource.update(replica)
    return _run(req)


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
        pytest.param(
            True,
            [_on("m-0", "c", stuck=STUCK), _on("m-2", "c", stuck=STUCK), _on("x-0", "c", "x")],
            {
                "remaining": 3,
                "deployments": ["ml/m", "ml/x"],
                "blocked": [{"deployment": "ml/m", "replicas": 2, "reason": STUCK}],
            },
            id="cannot-move-says-why",
        ),
        # Another cluster's stuck replica is not this cluster's business.
        pytest.param(
            True, [_on("m-0", "other", stuck=STUCK)], {"remaining": 0, "deployments": []}, id="stuck-elsewhere"
        ),
    ],
)
def test_drain_status(drain: bool, replicas: list[dict[str, Any]], want: dict[str, Any] | None) -> None:
    status = _status(_drain_run(drain, replicas))
    assert status.get("drain") == want
    assert status["cordoned"] is drain


@pytest.mark.parametrize(
    ("drain", "replicas", "want"),
    [
        pytest.param(False, [_on("m-0", "c")], ("False", "NotDraining", "spec.drain is not set"), id="not-draining"),
        pytest.param(
            True,
            [_on("m-1", "other")],
            ("True", "Drained", "no ModelReplica remains on the cluster"),
            id="drained",
        ),
        pytest.param(
            True,
            [_on("m-0", "c"), _on("x-0", "c", "x")],
            ("False", "Draining", "2 ModelReplica(s) remain, of ml/m, ml/x: moving a wave at a time"),
            id="draining",
        ),
        pytest.param(
            True,
            [_on("m-0", "c", stuck=STUCK), _on("x-0", "c", "x")],
            ("False", "DrainBlocked", f"2 ModelReplica(s) remain, of ml/m, ml/x; cannot move: ml/m (1): {STUCK}"),
            id="blocked-names-the-deployment-and-why",
        ),
    ],
)
def test_drained_condition(drain: bool, replicas: list[dict[str, Any]], want: tuple[str, str, str]) -> None:
    rsp = _drain_run(drain, replicas)
    got = next(c for c in rsp.conditions if c.type == "Drained")
    assert (fnv1.Status.Name(got.status).removeprefix("STATUS_CONDITION_").title(), got.reason, got.message) == want


def _labelled(replica: dict[str, Any], cluster: str) -> dict[str, Any]:
    replica["metadata"]["labels"] = {"modelplane.ai/cluster": cluster}
    return replica


# An upgrade of a running system: m-0 was composed before ModelReplicas carried their cluster's label.
_FLEET = [_on("m-0", "c"), _labelled(_on("m-1", "c"), "c"), _labelled(_on("x-0", "other", "x"), "other")]


@pytest.mark.parametrize(
    ("drain", "labels", "in_use", "remaining"),
    [
        # Only the labelled replica is counted until its deployment labels m-0 on its next reconcile.
        pytest.param(False, {"modelplane.ai/cluster": "c"}, 4, None, id="serving-asks-for-its-label"),
        # A drain reads every replica, labelled or not: it is never declared done with m-0 still there.
        pytest.param(True, {}, 8, 2, id="draining-asks-for-every-replica"),
    ],
)
def test_replicas_are_required_by_the_cluster_label_except_while_draining(
    drain: bool, labels: dict[str, str], in_use: int, remaining: int | None
) -> None:
    xr = _cluster()
    xr["spec"]["drain"] = drain
    first = _run(_req(xr, fetched=False))
    selector = first.requirements.resources["replicas"]
    assert (selector.kind, dict(selector.match_labels.labels), selector.namespace) == ("ModelReplica", labels, "")
    req = _req(xr)
    req.required_resources["replicas"].CopyFrom(Store(_FLEET).fetch(selector))
    status = _status(_run(req))
    assert status["capacity"]["inUse"] == in_use
    assert (status.get("drain") or {}).get("remaining") == remaining


@pytest.mark.parametrize(
    ("drain", "want"),
    [
        pytest.param(False, (["ml/m-0", "ml/x-0"], {"8": 3, "0": 1}), id="serving"),
        # While draining the whole fleet's list is read: another cluster's replicas are not counted here.
        pytest.param(True, (["ml/m-0", "ml/x-0"], {"8": 3, "0": 1}), id="draining-counts-only-its-own"),
    ],
)
def test_the_summary_counts_the_replicas_on_this_cluster(drain: bool, want: tuple[list[str], dict[str, int]]) -> None:
    capacity = _status(_drain_run(drain, [_on("m-0", "c"), _on("m-1", "other"), _on("x-0", "c", "x")]))["capacity"]
    assert (capacity["pools"][0]["replicas"], capacity["pools"][0]["nodesByFree"]) == want
    assert "overcommitted" not in capacity
