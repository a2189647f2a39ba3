"""compose-model-pool: a ModelPool's spec in, the pool's objects on its cluster out, Ready once all are applied.

What the deployment resolves into the spec (role, port, workers, engine, picker, priority, monitors,
route) is checked the way a user of the workload cluster would see it: which objects exist, what
the InferencePool selects, what the picker runs, and that each validates against the real CRDs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_pool.fn import FunctionRunner

# The validation harness, imported as the function tests import it (tests/functions/conftest.py).
import xrds  # isort: skip

_READY = {"conditions": [{"type": "Ready", "status": "True"}]}
_ALWAYS = ["epp", "epp-config", "epp-role", "epp-rolebinding", "epp-service", "epp-serviceaccount", "inferencepool"]


def _pool(**spec: Any) -> dict[str, Any]:
    body = {
        "deploymentRef": {"name": "llm"},
        "inferenceClusterRef": {"name": "east"},
        "providerConfigRef": {"name": "east-config"},
        "port": 8000,
        **spec,
    }
    meta = {"name": "llm-east", "namespace": "ml"}
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelPool", "metadata": meta, "spec": body}


def _run(pool: dict[str, Any], observed: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(pool))),
    )
    for key, body in (observed or {}).items():
        req.observed.resources[key].resource.update(body)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


def _objects(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["resource"] for k, v in got.get("desired", {}).get("resources", {}).items()}


def _manifests(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["spec"]["forProvider"]["manifest"] for k, v in _objects(got).items()}


def _deployed(got: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == "Deployed")


@pytest.mark.parametrize(
    ("spec", "parts"),
    [
        pytest.param({}, [*_ALWAYS, "route"], id="defaults-a-route-no-monitors-no-objective"),
        pytest.param({"route": False}, _ALWAYS, id="kserve-cluster-no-route"),
        pytest.param(
            {"monitors": True}, [*_ALWAYS, "epp-monitor", "route", "rules"], id="prometheus-operator-monitors"
        ),
        pytest.param({"priority": -5}, [*_ALWAYS, "objective", "route"], id="priority-an-inference-objective"),
    ],
)
def test_the_objects_follow_the_spec(spec: dict[str, Any], parts: list[str]) -> None:
    got = _run(_pool(**spec))
    objects = _objects(got)
    assert sorted(objects) == sorted(parts)
    # Every object is for the pool's cluster, named after the pool, labelled with its deployment and cluster.
    for key, obj in objects.items():
        assert obj["spec"]["providerConfigRef"]["name"] == "east-config"
        assert obj["metadata"]["name"] == f"llm-east-{key}"
        assert obj["metadata"]["labels"] == {"modelplane.ai/deployment": "llm", "modelplane.ai/cluster": "east"}
    if "priority" in spec:
        assert _manifests(got)["objective"]["spec"]["priority"] == spec["priority"]


@pytest.mark.parametrize(
    ("spec", "selector", "port"),
    [
        pytest.param({}, {"modelplane.ai/deployment": "llm", "modelplane.ai/role": "unified"}, 8000, id="unified"),
        pytest.param(
            {"role": "decode", "port": 30000, "engine": "SGLang"},
            {"modelplane.ai/deployment": "llm", "modelplane.ai/role": "decode"},
            30000,
            id="disaggregated-decode-pods",
        ),
        pytest.param(
            {"nodesPerWorker": 2},
            {
                "modelplane.ai/deployment": "llm",
                "modelplane.ai/role": "unified",
                "leaderworkerset.sigs.k8s.io/worker-index": "0",
            },
            8000,
            id="multi-node-leaders-only",
        ),
    ],
)
def test_the_pool_selects_the_serving_pods(spec: dict[str, Any], selector: dict[str, str], port: int) -> None:
    pool = _manifests(_run(_pool(**spec)))["inferencepool"]
    assert pool["spec"]["selector"]["matchLabels"] == selector
    assert pool["spec"]["targetPorts"] == [{"number": port}]


@pytest.mark.parametrize(
    ("spec", "scorers", "handler"),
    [
        pytest.param({}, "prefix-cache-scorer", None, id="default-profile"),
        pytest.param({"role": "decode"}, "prefix-cache-scorer", "pd-profile-handler", id="decode-runs-the-pd-profile"),
    ],
)
def test_the_picker_runs_the_profile(spec: dict[str, Any], scorers: str, handler: str | None) -> None:
    manifests = _manifests(_run(_pool(**spec)))
    config = manifests["epp-config"]["data"]["config.yaml"]
    assert scorers in config
    assert (handler in config) if handler else "pd-profile-handler" not in config
    args = manifests["epp"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--pool-name=llm" in args and "--pool-namespace=ml" in args


def test_every_object_validates_against_the_real_crds() -> None:
    spec = {"monitors": True, "priority": 3, "endpointPicker": {"profile": "PrefixCache", "replicas": 2}}
    pool = _pool(**spec)
    assert xrds.validate(pool).errors == ()
    kinds = set()
    for key, obj in _objects(_run(pool)).items():
        assert xrds.validate(obj).errors == (), key
        manifest = obj["spec"]["forProvider"]["manifest"]
        assert xrds.validate(manifest).errors == (), (key, manifest["kind"])
        kinds.add(manifest["kind"])
    assert kinds == {
        "InferencePool",
        "ConfigMap",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
        "HTTPRoute",
        "InferenceObjective",
        "ServiceMonitor",
        "PrometheusRule",
    }


def test_ready_once_every_object_is_applied() -> None:
    pool = _pool()
    first = _run(pool)
    assert first["desired"]["composite"].get("ready") == "READY_FALSE"
    assert _deployed(first)["reason"] == "Deploying"
    applied = {k: {**v, "status": _READY} for k, v in _objects(first).items()}
    some = dict(list(applied.items())[:3])
    assert _run(pool, some)["desired"]["composite"].get("ready") == "READY_FALSE"
    done = _run(pool, applied)
    assert done["desired"]["composite"].get("ready") == "READY_TRUE"
    assert _deployed(done)["status"] == "STATUS_CONDITION_TRUE"
    assert done["desired"]["composite"]["resource"]["status"] == {
        "readyVerdict": True,
        "poolName": "llm",
        "host": "llm.ml.pools.modelplane.ai",
    }


def test_monitors_turned_off_remove_them_and_keep_the_pool() -> None:
    before = _objects(_run(_pool(monitors=True)))
    observed = {k: {**v, "status": _READY} for k, v in before.items()}
    after = _objects(_run(_pool(monitors=False), observed))
    assert set(before) - set(after) == {"epp-monitor", "rules"}
    assert after["inferencepool"] == before["inferencepool"]


@pytest.mark.parametrize(
    ("picker", "says"),
    [
        pytest.param(
            {"profile": "Custom", "config": {"apiVersion": "v1", "kind": "ConfigMap"}},
            "not an EndpointPickerConfig",
            id="custom-config-of-another-kind",
        ),
        pytest.param(
            {
                "profile": "Custom",
                "config": {
                    "apiVersion": "llm-d.ai/v1alpha1",
                    "kind": "EndpointPickerConfig",
                    "plugins": [{"type": "gpu-astrology-scorer"}],
                },
            },
            "unknown plugin type 'gpu-astrology-scorer'",
            id="custom-config-unknown-plugin",
        ),
    ],
)
def test_a_picker_config_it_cannot_use_keeps_every_object(picker: dict[str, Any], says: str) -> None:
    before = _objects(_run(_pool()))
    observed = {k: {**v, "status": _READY} for k, v in before.items()}
    got = _run(_pool(endpointPicker=picker), observed)
    deployed = _deployed(got)
    assert (deployed["status"], deployed["reason"]) == ("STATUS_CONDITION_FALSE", "InvalidSpec")
    assert says in deployed["message"]
    kept = _objects(got)
    assert sorted(kept) == sorted(observed)
    assert all(kept[k]["spec"] == observed[k]["spec"] for k in observed)


def test_an_invalid_pool_keeps_every_object() -> None:
    before = _objects(_run(_pool()))
    observed = {k: {**v, "status": _READY} for k, v in before.items()}
    broken = _pool()
    broken["spec"]["port"] = "eight thousand"
    got = _run(broken, observed)
    deployed = _deployed(got)
    assert (deployed["status"], deployed["reason"]) == ("STATUS_CONDITION_FALSE", "InvalidSpec")
    assert "spec.port" in deployed["message"]
    assert sorted(_objects(got)) == sorted(observed)
