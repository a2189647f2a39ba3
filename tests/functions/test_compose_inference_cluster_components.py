"""compose-inference-cluster: spec.servingStack.components and spec.registry reach the ServingStack as they are;
what the stack reports of its components (status.components, ComponentsReady) is the cluster's to publish."""

from __future__ import annotations

from typing import Any

import pytest
import xrds
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from tests.functions.test_compose_inference_cluster import _cluster, _conditions, _desired, _req, _run, _status

COMPONENTS: dict[str, dict[str, Any]] = {
    "certManager": {"mode": "Existing", "controller": {"namespace": "security", "name": "cert-manager"}},
    "gateway": {"version": "v1.9.0", "values": {"deployment": {"replicas": 2}}},
    "draDriver": {"mode": "Disabled"},
}
REGISTRY = {
    "charts": "oci://mirror.example.com/charts",
    "images": "mirror.example.com",
    "pullSecretRef": {"name": "mirror-credentials"},
}


def _with(**spec: Any) -> dict[str, Any]:
    xr = _cluster()
    xr["spec"].update(spec)
    return xr


def _stack_observed(components: list[dict[str, Any]], conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ServingStack",
        "metadata": {"name": "c"},
        "status": {"components": components, "conditions": conditions},
    }


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({}, {}, id="none"),
        pytest.param(
            {"servingStack": {"components": COMPONENTS}},
            {
                "components": {
                    "certManager": COMPONENTS["certManager"],
                    # The mode defaults to Managed, as the API server would have written it.
                    "gateway": {"mode": "Managed", **COMPONENTS["gateway"]},
                    "draDriver": {"mode": "Disabled"},
                }
            },
            id="components",
        ),
        pytest.param({"registry": REGISTRY}, {"registry": REGISTRY}, id="registry"),
    ],
)
def test_components_and_registry_reach_the_stack_as_they_are(spec: dict[str, Any], want: dict[str, Any]) -> None:
    stack = _desired(_run(_req(_with(**spec))))["serving-stack"]
    assert {k: v for k, v in stack["spec"].items() if k in ("components", "registry")} == want
    result = xrds.validate(stack)
    assert result.ok, result.errors


MISSING = {
    "name": "scheduler",
    "mode": "Existing",
    "ready": False,
    "neededBy": "All",
    "message": "API kueue.x-k8s.io/v1beta2 not found",
}
LWS = {"name": "lws", "mode": "Managed", "ready": True, "version": "0.10.0", "neededBy": "All"}


def test_the_cluster_publishes_the_stack_s_components_and_its_condition() -> None:
    said = {
        "type": "ComponentsReady",
        "status": "False",
        "reason": "ComponentMissing",
        "message": "scheduler (Existing): API kueue.x-k8s.io/v1beta2 not found",
    }
    observed = {"serving-stack": _stack_observed([MISSING, LWS], [said])}
    rsp = _run(_req(_cluster(), observed=observed))
    assert _status(rsp)["components"] == [LWS, MISSING]  # sorted by name
    assert _conditions(rsp)["ComponentsReady"] == ("FALSE", "ComponentMissing")
    (condition,) = [c for c in rsp.conditions if c.type == "ComponentsReady"]
    assert condition.message == said["message"]


def test_why_the_stack_is_not_ready_reaches_the_cluster() -> None:
    installing = {
        "type": "Installed",
        "status": "False",
        "reason": "WaitingForDependencies",
        "message": "kserve-llmisvc waits for cert-manager (Existing)",
    }
    rsp = _run(_req(_cluster(), observed={"serving-stack": _stack_observed([], [installing])}))
    (stack_ready,) = [c for c in rsp.conditions if c.type == "StackReady"]
    assert stack_ready.status == fnv1.STATUS_CONDITION_FALSE
    assert stack_ready.message == "ServingStack c is not ready yet: kserve-llmisvc waits for cert-manager (Existing)"


@pytest.mark.parametrize(
    "components",
    [
        pytest.param([{"name": "lws", "mode": "Sometimes", "ready": True}], id="unknown-mode-dropped"),
        pytest.param([{"mode": "Managed", "ready": True}], id="no-name-left-out"),
        pytest.param("not-a-list", id="not-a-list"),
    ],
)
def test_a_malformed_stack_status_is_published_without_what_does_not_fit(components: Any) -> None:
    observed = {"serving-stack": _stack_observed(components, [])}
    status = _status(_run(_req(_cluster(), observed=observed)))
    for entry in status.get("components", []):
        assert entry.get("mode") in (None, "Managed", "Existing", "Disabled")
        assert entry.get("name")
