"""compose-model-deployment, routing mode Pool: one InferencePool per deployment per cluster.

A fleet of two clusters (east with room for two replicas, west for one) runs a
deployment; what a call composes is checked as a user of the workload clusters and
the control-plane route would: one pool per cluster, valid against the real CRDs,
and the cluster's endpoint weighted by its Ready replicas. The deployment composes a
ModelPool per cluster; what lands on the cluster is what compose-model-pool composes
of it, so the tests run each ModelPool through that function too.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pydantic
import pytest
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from compose_model_deployment.fn import FunctionRunner
from compose_model_pool.fn import FunctionRunner as PoolRunner
from modelplane.scheduling import serving_shape, shape_revision
from tests.unit.fleet import NAMESPACE, Pool, Shape, cluster, deployment, gpu_class

# The validation harness, imported as the function tests import it (tests/functions/conftest.py).
import xrds  # isort: skip

API = "modelplane.ai/v1alpha1"
TP8 = Shape(tensor=8)  # one replica per 8-GPU node
H100 = gpu_class("h100")


def _dump(model: pydantic.BaseModel) -> dict[str, Any]:
    body = model.model_dump(exclude_none=True, by_alias=True)
    return {**body, "apiVersion": API, "kind": type(model).__name__}


def _cluster(name: str, nodes: int, *, prometheus: str = "Installed", backend: str = "Native") -> dict[str, Any]:
    body = _dump(cluster(name, Pool("gpu", "h100", nodes), labels={"region": name}))
    body["spec"]["serving"] = {"backend": backend}
    body["spec"]["observability"] = {"prometheus": prometheus}
    body["status"]["providerConfigRef"] = {"name": name, "kind": "ClusterProviderConfig"}
    return body


def _xr(replicas: int, routing: dict[str, Any] | None = None, shape: Shape = TP8) -> dict[str, Any]:
    return _dump(deployment("llm", replicas=replicas, shape=shape, routing=routing))


def _tls(where: str) -> dict[str, Any]:
    return {"caSecretRef": {"name": f"{where}-gateway-ca", "namespace": "crossplane-system"}, "hostname": "gw.example"}


def _replica(
    ordinal: int, where: str, *, ready: bool = True, shape: Shape = TP8, https: bool = False
) -> dict[str, Any]:
    spec = {
        "inferenceClusterRef": {"name": where},
        "deploymentRef": {"name": "llm"},
        "poolName": "gpu",
        "nodeSelector": shape.node_selector(),
        "workers": shape.workers(),
        "routing": {"mode": "Pool"},
    }
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if ready:
        status["endpoint"] = {"url": f"http://{where}.example/", "host": f"llm-{ordinal}.ml.replicas.modelplane.ai"}
        if https:
            status["endpoint"] |= {"url": f"https://{where}.example/", "tls": _tls(where)}
    labels = {"modelplane.ai/deployment": "llm", "modelplane.ai/revision": shape_revision(serving_shape(spec))}
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {"name": f"llm-{ordinal}", "namespace": NAMESPACE, "labels": labels},
        "spec": spec,
        "status": status,
    }


def _run(
    xr: dict[str, Any], observed: dict[str, dict[str, Any]], clusters: tuple[dict[str, Any], ...]
) -> dict[str, Any]:
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(xr))),
    )
    for key, body in observed.items():
        req.observed.resources[key].resource.update(body)
    replicas = [b for b in observed.values() if b.get("kind") == "ModelReplica"]
    no_quotas: list[dict[str, Any]] = []
    for name, items in (
        ("clusters", list(clusters)),
        ("classes", [_dump(H100)]),
        ("replicas", replicas),
        ("quotas", no_quotas),
        ("priorityclasses", no_quotas),
    ):
        req.required_resources[name].SetInParent()
        for item in items:
            req.required_resources[name].items.add().resource.update(item)
    got: dict[str, Any] = json_format.MessageToDict(asyncio.run(FunctionRunner().RunFunction(req, None)))
    return got


def _whole(value: Any) -> Any:
    """``value`` with each integral number an int, as the API server reads what a Struct's doubles say."""
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _desired(got: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: _whole(v["resource"]) for k, v in got.get("desired", {}).get("resources", {}).items()}


def _routed(got: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in got.get("conditions", []) if c["type"] == "Routed")


def _pool_objects(pool: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What compose-model-pool composes of a ModelPool the deployment composed: its Objects, by part."""
    req = fnv1.RunFunctionRequest(
        meta=fnv1.RequestMeta(tag="t"),
        observed=fnv1.State(composite=fnv1.Resource(resource=resource.dict_to_struct(pool))),
    )
    return _desired(json_format.MessageToDict(asyncio.run(PoolRunner().RunFunction(req, None))))


def _remote(desired: dict[str, dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """The remote manifests of ``kind`` the ModelPools compose, by the cluster whose ProviderConfig carries them."""
    return {
        obj["spec"]["providerConfigRef"]["name"]: obj["spec"]["forProvider"]["manifest"]
        for pool in desired.values()
        if pool["kind"] == "ModelPool"
        for obj in _pool_objects(pool).values()
        if obj["spec"]["forProvider"]["manifest"]["kind"] == kind
    }


EAST, WEST = _cluster("east", 2), _cluster("west", 1)
# The steady state: llm-0 and llm-2 on east, llm-1 on west, all Ready.
STEADY = {f"replica-{o}": _replica(o, c) for o, c in ((0, "east"), (1, "west"), (2, "east"))}


def test_one_pool_per_cluster_weighted_by_ready_replicas() -> None:
    got = _run(_xr(3), STEADY | _pool_state(), (EAST, WEST))
    desired = _desired(got)
    pools = _remote(desired, "InferencePool")
    assert sorted(pools) == ["east", "west"]
    assert pools["east"]["spec"]["selector"]["matchLabels"] == {
        "modelplane.ai/deployment": "llm",
        "modelplane.ai/role": "unified",
    }
    assert pools["east"]["spec"]["targetPorts"] == [{"number": 8000}]
    assert pools["east"]["spec"]["endpointPickerRef"] == {
        "kind": "Service",
        "name": "llm-epp",
        "port": {"number": 9002},
        "failureMode": "FailOpen",
    }
    # The endpoint picker: pinned image, its Service's three ports, its config; a route to the pool.
    (epp,) = {d["spec"]["template"]["spec"]["containers"][0]["image"] for d in _remote(desired, "Deployment").values()}
    assert epp == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"
    ports = [p["port"] for p in _remote(desired, "Service")["east"]["spec"]["ports"]]
    assert ports == [9002, 9003, 9090]
    route = _remote(desired, "HTTPRoute")["east"]
    assert route["spec"]["hostnames"] == ["llm.ml.pools.modelplane.ai"]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "llm"}
    ]
    assert sorted(_remote(desired, "ServiceMonitor")) == sorted(_remote(desired, "PrometheusRule")) == ["east", "west"]
    # The control plane routes to each cluster's pool, weighted by the replicas Ready there; no replica endpoints.
    endpoints = {o["metadata"]["name"]: o["spec"] for o in desired.values() if o["kind"] == "ModelEndpoint"}
    assert endpoints == {
        "llm-east": {"url": "http://east.example/", "host": "llm.ml.pools.modelplane.ai", "weight": 2},
        "llm-west": {"url": "http://west.example/", "host": "llm.ml.pools.modelplane.ai", "weight": 1},
    }
    assert _routed(got)["status"] == "STATUS_CONDITION_TRUE"
    assert _routed(got)["message"] == "mode Pool: an InferencePool on east (2 Ready), west (1 Ready)"


def test_every_composed_object_validates_against_the_real_crds() -> None:
    routing = {"priority": 10, "endpointPicker": {"profile": "PrefixCache", "replicas": 2}}
    desired = _desired(_run(_xr(3, routing), STEADY, (EAST, WEST)))
    kinds = set()
    pools = [obj for obj in desired.values() if obj["kind"] == "ModelPool"]
    assert len(pools) == 2
    for key, obj in desired.items():
        assert xrds.validate(obj).errors == (), key
    for pool in pools:
        for key, obj in _pool_objects(pool).items():
            assert xrds.validate(obj).errors == (), key
            manifest = obj["spec"]["forProvider"]["manifest"]
            assert xrds.validate(manifest).errors == (), (key, manifest["kind"])
            kinds.add(manifest["kind"])
    assert kinds >= {"InferencePool", "InferenceObjective", "Deployment", "Role", "ServiceMonitor", "PrometheusRule"}


def test_scaling_from_two_to_three_in_one_cluster_changes_its_weight_not_its_pool() -> None:
    two = {k: v for k, v in STEADY.items() if k != "replica-2"}
    two |= _pool_state(two, replicas=2)
    before = _desired(_run(_xr(2), two, (EAST, WEST)))
    placed = _desired(_run(_xr(3), two, (EAST, WEST)))
    assert placed["replica-2"]["spec"]["inferenceClusterRef"] == {"name": "east"}
    after = _desired(_run(_xr(3), two | {"replica-2": STEADY["replica-2"]}, (EAST, WEST)))
    pool_objects = sorted(k for k in before if k.startswith("pool-") and not k.endswith("-endpoint"))
    assert pool_objects == sorted(k for k in after if k.startswith("pool-") and not k.endswith("-endpoint"))
    assert all(before[k] == after[k] for k in pool_objects)
    weights = {k: (before[k]["spec"]["weight"], after[k]["spec"]["weight"]) for k in before if k.endswith("-endpoint")}
    assert weights == {"pool-east-endpoint": (1, 2), "pool-west-endpoint": (1, 1)}
    # The route keeps its shape: one endpoint per cluster, no replica endpoint.
    assert not any(k.startswith("endpoint-") for k in after)


def test_until_a_cluster_s_pool_serves_its_replicas_keep_their_own_endpoints() -> None:
    desired = _desired(_run(_xr(3), STEADY, (EAST, WEST)))
    assert sorted(k for k in desired if k.startswith("endpoint-")) == ["endpoint-0", "endpoint-1", "endpoint-2"]
    assert desired["pool-east-endpoint"]["spec"]["weight"] == 2


def test_a_cluster_whose_last_replica_leaves_loses_its_pool_and_the_others_keep_theirs() -> None:
    observed = dict(STEADY) | _pool_state()
    got = _run(_xr(2), observed, (EAST, WEST))  # scaled down: llm-2 (east) goes, llm-0 still serves east
    desired = _desired(got)
    assert sorted(_remote(desired, "InferencePool")) == ["east", "west"]
    only_west = {"replica-1": STEADY["replica-1"]} | _pool_state()
    desired = _desired(_run(_xr(1), only_west, (EAST, WEST)))
    assert sorted(_remote(desired, "InferencePool")) == ["west"]
    assert not any(k.startswith("pool-east-") for k in desired)


def test_a_cluster_without_a_provider_config_keeps_its_pool() -> None:
    observed = dict(STEADY) | _pool_state()
    blind = _cluster("east", 2)
    del blind["status"]["providerConfigRef"]
    got = _run(_xr(3), observed, (blind, WEST))
    desired = _desired(got)
    kept = sorted(k for k in observed if k.startswith("pool-east-"))
    assert kept and all(k in desired for k in kept)
    assert "east publish no ProviderConfig" in _routed(got)["message"]


def test_prometheus_none_composes_no_monitors() -> None:
    clusters = (_cluster("east", 2, prometheus="None"), _cluster("west", 1, prometheus="None"))
    desired = _desired(_run(_xr(3), STEADY, clusters))
    assert _remote(desired, "ServiceMonitor") == _remote(desired, "PrometheusRule") == {}
    assert sorted(_remote(desired, "InferencePool")) == ["east", "west"]


def test_a_kserve_cluster_gets_the_pool_but_its_llminferenceservices_route() -> None:
    desired = _desired(_run(_xr(3), STEADY, (_cluster("east", 2, backend="KServe"), WEST)))
    assert sorted(_remote(desired, "InferencePool")) == ["east", "west"]
    assert sorted(_remote(desired, "HTTPRoute")) == ["west"]


_READY = {"conditions": [{"type": "Ready", "status": "True"}]}


@pytest.mark.parametrize(
    ("pool_ready", "endpoints_ready", "east_replica_2_ready", "kept"),
    [
        pytest.param(True, (), True, ["east", "west"], id="no-replica-endpoint-ready-yet-every-pool-serves-on"),
        pytest.param(True, ("endpoint-0", "endpoint-2"), True, ["west"], id="east-replicas-ready-east-pool-goes"),
        pytest.param(True, ("endpoint-0",), True, ["east", "west"], id="one-east-replica-still-waits-east-pool-stays"),
        pytest.param(True, ("endpoint-0", "endpoint-1"), False, [], id="a-replica-not-ready-holds-no-pool"),
        pytest.param(True, ("endpoint-0", "endpoint-1", "endpoint-2"), True, [], id="every-endpoint-ready-pools-go"),
        pytest.param(False, (), True, [], id="a-pool-endpoint-never-ready-serves-nothing-and-goes"),
    ],
)
def test_moving_to_mode_replica_keeps_each_cluster_s_pool_until_its_replica_endpoints_are_ready(
    pool_ready: bool, endpoints_ready: tuple[str, ...], east_replica_2_ready: bool, kept: list[str]
) -> None:
    replicas = dict(STEADY) | {"replica-2": _replica(2, "east", ready=east_replica_2_ready)}
    pools = {k: v if pool_ready else {**v, "status": {}} for k, v in _pool_state().items()}
    composed = _desired(_run(_xr(3, {"mode": "Replica"}), STEADY, (EAST, WEST)))
    endpoints = {k: {**v, "status": _READY} if k in endpoints_ready else v for k, v in composed.items()}
    observed = replicas | pools | {k: v for k, v in endpoints.items() if k.startswith("endpoint-")}
    got = _run(_xr(3, {"mode": "Replica"}), observed, (EAST, WEST))
    desired = _desired(got)
    assert sorted(_remote(desired, "InferencePool")) == kept
    for where in ("east", "west"):
        part = sorted(k for k in desired if k.startswith(f"pool-{where}-"))
        # A cluster's pool is kept whole, exactly as observed, or goes whole.
        assert part == (sorted(k for k in pools if k.startswith(f"pool-{where}-")) if where in kept else [])
        assert all(desired[k]["spec"] == pools[k]["spec"] for k in part)
    # Every replica has its own endpoint meanwhile; it stays in its cluster's pool only while that pool serves.
    assert sorted(k for k in desired if k.startswith("endpoint-")) == ["endpoint-0", "endpoint-1", "endpoint-2"]
    for key, where in (("replica-0", "east"), ("replica-1", "west"), ("replica-2", "east")):
        joined = desired[key]["spec"].get("routing")
        assert joined == ({"mode": "Pool"} if where in kept else None), (key, joined)
    message = _routed(got)["message"]
    assert message.startswith("mode Replica")
    assert all(c in message for c in kept)


@pytest.mark.parametrize(
    ("ready", "own_endpoints"),
    [
        pytest.param((), ["endpoint-0", "endpoint-1", "endpoint-2"], id="nothing-ready-every-replica-keeps-its-own"),
        pytest.param(
            ("pool-east-endpoint",),
            ["endpoint-0", "endpoint-1", "endpoint-2"],
            id="east-endpoint-ready-but-its-pool-not-yet",
        ),
        pytest.param(
            ("pool-east-pool",), ["endpoint-0", "endpoint-1", "endpoint-2"], id="east-pool-ready-but-its-endpoint-not"
        ),
        pytest.param(("pool-east-pool", "pool-east-endpoint"), ["endpoint-1"], id="east-pool-and-endpoint-ready"),
    ],
)
def test_moving_to_mode_pool_keeps_replica_endpoints_until_the_pool_and_its_endpoint_are_ready(
    ready: tuple[str, ...], own_endpoints: list[str]
) -> None:
    endpoints = _desired(_run(_xr(3, {"mode": "Replica"}), STEADY, (EAST, WEST)))
    observed = dict(STEADY) | {k: v for k, v in endpoints.items() if k.startswith("endpoint-")}
    desired = _desired(_run(_xr(3), observed, (EAST, WEST)))
    assert sorted(k for k in desired if k.startswith("endpoint-")) == ["endpoint-0", "endpoint-1", "endpoint-2"]
    assert sorted(k for k in desired if k.startswith("pool-")) == [
        "pool-east-endpoint",
        "pool-east-pool",
        "pool-west-endpoint",
        "pool-west-pool",
    ]
    marked = {k: {**v, "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for k, v in desired.items()}
    observed |= {k: v for k, v in marked.items() if k in ready}
    desired = _desired(_run(_xr(3), observed, (EAST, WEST)))
    # Once east's pool and its endpoint serve, its replicas' own endpoints go; west's stay until its pool serves.
    assert sorted(k for k in desired if k.startswith("endpoint-")) == own_endpoints


def _custom(config: Any) -> dict[str, Any]:
    return {"endpointPicker": {"profile": "Custom", "config": config}}


@pytest.mark.parametrize(
    ("routing", "field", "says"),
    [
        pytest.param(
            {"endpointPicker": {"profile": "Custom"}},
            "spec.routing.endpointPicker.config",
            "required with profile Custom",
            id="custom-without-config",
        ),
        pytest.param(
            _custom({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}),
            "spec.routing.endpointPicker.config",
            "is v1 ConfigMap, not an EndpointPickerConfig",
            id="config-not-an-endpoint-picker-config",
        ),
        pytest.param(
            _custom(
                {
                    "apiVersion": "llm-d.ai/v1alpha1",
                    "kind": "EndpointPickerConfig",
                    "plugins": [{"type": "queue-scorer"}, {"type": "gpu-astrology-scorer"}],
                }
            ),
            "spec.routing.endpointPicker.config.plugins[1].type",
            "unknown plugin type 'gpu-astrology-scorer'",
            id="unknown-plugin-type",
        ),
        pytest.param(
            _custom(
                {
                    "apiVersion": "llm-d.ai/v1alpha1",
                    "kind": "EndpointPickerConfig",
                    "plugins": [{"type": "queue-scorer"}],
                    "schedulingProfiles": [{"name": "default", "plugins": [{"pluginRef": "prefix-cache-scorer"}]}],
                }
            ),
            "spec.routing.endpointPicker.config.schedulingProfiles[0].plugins[0].pluginRef",
            "'prefix-cache-scorer' is not the name (or type) of a plugin",
            id="profile-names-no-plugin",
        ),
    ],
)
def test_a_bad_picker_config_is_a_condition_naming_the_field_and_keeps_every_pool(
    routing: dict[str, Any], field: str, says: str
) -> None:
    observed = dict(STEADY) | _pool_state()
    got = _run(_xr(3, routing), observed, (EAST, WEST))
    routed = _routed(got)
    assert routed["status"] == "STATUS_CONDITION_FALSE"
    assert routed["reason"] == "InvalidSpec"
    assert routed["message"].startswith(f"{field}: ")
    assert says in routed["message"]
    desired = _desired(got)
    pools = sorted(k for k in observed if k.startswith("pool-"))
    assert pools
    assert all(k in desired for k in pools)
    assert all(desired[k]["spec"] == observed[k]["spec"] for k in pools)


def _pool_state(state: dict[str, dict[str, Any]] | None = None, *, replicas: int = 3) -> dict[str, dict[str, Any]]:
    """Every pool object ``state`` (the steady state by default) composes, as observed once applied: Ready."""
    desired = _desired(_run(_xr(replicas), STEADY if state is None else state, (EAST, WEST)))
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    return {k: {**v, "status": ready} for k, v in desired.items() if k.startswith("pool-")}


@pytest.mark.parametrize(
    ("https", "want"),
    [
        pytest.param(
            (True, True, True),
            {
                "llm-east": {"url": "https://east.example/", "tls": _tls("east")},
                "llm-west": {"url": "https://west.example/", "tls": _tls("west")},
            },
            id="every-replica-reports-https",
        ),
        # A cluster moving to TLS: its replicas report https one by one; the pool goes with the first.
        pytest.param(
            (False, False, True),
            {
                "llm-east": {"url": "https://east.example/", "tls": _tls("east")},
                "llm-west": {"url": "http://west.example/"},
            },
            id="https-first-while-a-cluster-moves",
        ),
        pytest.param(
            (False, False, False),
            {"llm-east": {"url": "http://east.example/"}, "llm-west": {"url": "http://west.example/"}},
            id="http-has-no-ca",
        ),
    ],
)
def test_a_pool_endpoint_carries_the_gateway_ca_its_replicas_report(
    https: tuple[bool, bool, bool], want: dict[str, dict[str, Any]]
) -> None:
    observed = {f"replica-{o}": _replica(o, c, https=https[o]) for o, c in ((0, "east"), (1, "west"), (2, "east"))}
    desired = _desired(_run(_xr(3), observed | _pool_state(), (EAST, WEST)))
    endpoints = {o["metadata"]["name"]: o["spec"] for o in desired.values() if o["kind"] == "ModelEndpoint"}
    got = {n: {k: v for k, v in spec.items() if k in {"url", "tls"}} for n, spec in endpoints.items() if "-" in n}
    assert {n: got[n] for n in want} == want


def test_a_replica_endpoint_carries_its_gateway_ca() -> None:
    observed = {f"replica-{o}": _replica(o, c, https=True) for o, c in ((0, "east"), (1, "west"), (2, "east"))}
    desired = _desired(_run(_xr(3, {"mode": "Replica"}), observed, (EAST, WEST)))
    replica_endpoints = {k: v["spec"] for k, v in desired.items() if k.startswith("endpoint-")}
    assert replica_endpoints
    assert all(spec["tls"] == _tls(spec["url"][8:12]) for spec in replica_endpoints.values())
