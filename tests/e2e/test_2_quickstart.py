"""Scenarios 2, 4, 5 and 6 on the quickstart, in order, as a user meets them.

2. ``kubectl apply -f examples/quickstart`` with its kubeconfig Secret pointing
   at workload API server ``workload-a``: the class Valid, the cluster Ready
   with capacity, the deployment Scheduled, the replica's objects on the
   workload server, then (through the stand-in) replica Ready; routing mode
   Pool (the default): the deployment's InferencePool and endpoint picker on
   workload-a (the picker's pod bound by kube-scheduler), the replica's
   LLMInferenceService joining that pool, the pool's ModelEndpoint composed and
   the ModelService's HTTPRoute weighted to it; ``kubectl get`` prints each
   kind's columns.
4. ``kubectl scale modeldeployment/qwen --replicas=3`` through the scale
   subresource: the cluster has two GPUs, so two replicas run on workload-a and
   the third waits with a reason; back to 1, the first replica stays.
5. Never drop: delete the InferenceClass, make the cluster NotReady, cordon it,
   break its kubeconfig Secret: the workload stays on workload-a, a new replica
   waits with a reason; restore each and it heals.
6. Delete the ModelDeployment and the ModelService: what they composed is gone
   from the control plane and from workload-a.
"""

from __future__ import annotations

import base64
import functools
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import (
    WORKLOAD_GATEWAY_NAMESPACE,
    auth_policy_name,
    endpoint_picker_name,
    pool_endpoint_name,
    pool_host,
    pool_name,
    traffic_policy_name,
)
from modelplane.routing.gateway import GATEWAY_NAMESPACE
from modelplane.routing.workload_tls import CA_NAME, GATEWAY_TLS_HOSTNAME, SERVING_CERTIFICATE, SERVING_SECRET
from tests.e2e import routing
from tests.e2e.figures import Stopwatch
from tests.e2e.kube import Kube, condition
from tests.e2e.placement import wait_placed
from tests.e2e.plane import CROSSPLANE_NAMESPACE, Plane
from tests.e2e.tools import REPO
from tests.e2e.world import (
    OBJECT,
    cluster_gone,
    conditions,
    eventually,
    landed,
    manifest_of,
    present,
    ready,
    remote_objects,
    replicas_of,
    wait_condition,
    xr,
)

pytestmark = pytest.mark.e2e

QUICKSTART = REPO / "examples" / "quickstart"
NS = "default"
WORKLOAD = "workload-a"
SECRET = "quickstart-kubeconfig"  # noqa: S105 - a Secret's name
# The ModelEndpoint of qwen's pool on the quickstart cluster (routing mode Pool, the default).
POOL_ENDPOINT = pool_endpoint_name("qwen", "quickstart")
HTTP_ROUTE = ("gateway.networking.k8s.io/v1", "HTTPRoute")
# How long "stays" is watched for after the fault has been seen: every XR involved has reacted to
# it by then (they are woken by watches, within a second or two here).
HOLD_SECONDS = 6.0
_CLOCKS: dict[str, Stopwatch] = {}


def _docs() -> list[dict[str, Any]]:
    return [d for p in sorted(QUICKSTART.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text()) if d]


@pytest.fixture(scope="module")
def quickstart(plane: Plane) -> Iterator[Plane]:
    """The quickstart applied once for the module; the whole fleet removed afterwards."""
    plane.connect("quickstart", WORKLOAD, SECRET)
    watch = Stopwatch("quickstart")
    plane.kube.kubectl(["apply", "-f", str(QUICKSTART)])
    _CLOCKS["quickstart"] = watch
    yield plane
    for doc in reversed(_docs()):
        name, namespace = doc["metadata"]["name"], doc["metadata"].get("namespace")
        plane.kube.delete(kinds.API_VERSION, doc["kind"], name, namespace)
    eventually(
        "the quickstart's ServingStack Gateway to leave workload-a",
        lambda: (
            plane.workloads[WORKLOAD].kube.get(
                "gateway.networking.k8s.io/v1", "Gateway", "modelplane", "modelplane-system"
            )
            is None
        ),
    )
    cluster_gone(plane.kube, "quickstart")


_SERVING_KINDS = frozenset({"LLMInferenceService", "ResourceClaimTemplate"})


def _replica_on_workload(plane: Plane, replica: str) -> list[dict[str, Any]]:
    """The replica's remote manifests, once its serving objects and every other one exist on workload-a; else [].

    Crossplane creates a replica's Objects one at a time: the list seen between two of them (only the
    Namespace, say) has landed without being the replica.
    """
    found = landed(plane.kube, plane.workloads[WORKLOAD].kube, replica, NS)
    return found if {m["kind"] for m in found} >= _SERVING_KINDS else []


def test_quickstart_end_to_end(quickstart: Plane) -> None:
    plane, watch = quickstart, _CLOCKS["quickstart"]
    kube = plane.kube
    wait_condition(kube, "InferenceClass", "nvidia-l4", None, "Valid")
    cluster = wait_condition(kube, "InferenceCluster", "quickstart", None, "Ready")
    capacity = cluster["status"]["capacity"]
    assert capacity["declared"] == 2, capacity
    assert cluster["status"]["providerConfigRef"] == {"name": "quickstart", "kind": "ClusterProviderConfig"}
    wait_condition(kube, "ModelDeployment", "qwen", NS, "Scheduled")
    watch.mark("Scheduled")

    (replica,) = eventually("the qwen ModelReplica", lambda: replicas_of(kube, "qwen", NS))
    name = replica["metadata"]["name"]
    assert replica["spec"]["inferenceClusterRef"]["name"] == "quickstart"
    remote = eventually(f"{name}'s objects on {WORKLOAD}", lambda: _replica_on_workload(plane, name))
    watch.mark("workload objects present")
    remote_kinds = {m["kind"] for m in remote}
    assert {"LLMInferenceService", "ResourceClaimTemplate"} <= remote_kinds, remote_kinds
    claim = next(m for m in remote if m["kind"] == "ResourceClaimTemplate")
    assert claim["apiVersion"].startswith("resource.k8s.io/"), claim["apiVersion"]

    wait_condition(kube, "ModelReplica", name, NS, "Ready")
    watch.mark("ModelReplica Ready")
    # Ready because kube-scheduler bound its pod to a node of pool l4 with an L4 allocated.
    (placed,) = wait_placed(kube, plane.workloads[WORKLOAD].kube, name, NS)
    assert placed.pool == "l4", placed
    assert [d.attributes["productName"] for d in placed.devices] == [{"string": "NVIDIA L4"}], placed
    # Routing mode Pool: one InferencePool of the deployment on workload-a, with its endpoint picker.
    workload = plane.workloads[WORKLOAD].kube
    pool = eventually("qwen's InferencePool on workload-a", lambda: routing.pool(workload, "qwen", NS))
    assert pool["spec"]["selector"]["matchLabels"] == {
        "modelplane.ai/deployment": "qwen",
        "modelplane.ai/role": "unified",
    }
    assert pool["spec"]["endpointPickerRef"]["name"] == endpoint_picker_name("qwen"), pool["spec"]
    eventually("qwen's endpoint picker Available, its pod bound", lambda: routing.picker_serving(workload, "qwen", NS))
    service_obj = workload.get("serving.kserve.io/v1alpha2", "LLMInferenceService", name, NS) or {}
    scheduler = service_obj.get("spec", {}).get("router", {}).get("scheduler", {})
    assert scheduler.get("pool", {}).get("ref") == {"name": pool_name("qwen")}, scheduler
    endpoint = wait_condition(kube, "ModelEndpoint", POOL_ENDPOINT, NS, "Ready")
    assert endpoint["metadata"]["labels"]["modelplane.ai/deployment"] == "qwen"
    assert endpoint["spec"]["weight"] == 1, endpoint["spec"]
    assert endpoint["spec"]["host"] == pool_host("qwen", NS), endpoint["spec"]
    # TLS on the hop to the cluster: https to its gateway, verified against the CA its ServingStack's
    # cert-manager issued, which provider-kubernetes copied (ca.crt alone) into a control-plane Secret.
    assert endpoint["spec"]["url"].startswith("https://"), endpoint["spec"]
    assert endpoint["spec"]["tls"] == {
        "caSecretRef": {"name": "quickstart-gateway-ca", "namespace": CROSSPLANE_NAMESPACE},
        "hostname": "gateway.modelplane.ai",
    }, endpoint["spec"]
    published = kube.get("v1", "Secret", "quickstart-gateway-ca", CROSSPLANE_NAMESPACE) or {}
    assert sorted(published.get("data") or {}) == ["ca.crt"], published.get("data")
    copied = kube.get("v1", "Secret", f"{POOL_ENDPOINT}-upstream-ca", NS) or {}
    assert copied.get("data") == published["data"], copied
    assert base64.b64decode(copied["data"]["ca.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")
    policy = kube.get("gateway.networking.k8s.io/v1", "BackendTLSPolicy", POOL_ENDPOINT, NS) or {}
    assert policy["spec"]["validation"]["caCertificateRefs"] == [
        {"group": "", "kind": "Secret", "name": f"{POOL_ENDPOINT}-upstream-ca"}
    ], policy
    # On the workload cluster: the gateway's certificate (from its own CA Issuer) and its HTTPS listener.
    certificate = workload.get("cert-manager.io/v1", "Certificate", SERVING_CERTIFICATE, WORKLOAD_GATEWAY_NAMESPACE)
    assert certificate is not None and certificate["spec"]["dnsNames"] == [GATEWAY_TLS_HOSTNAME], certificate
    assert certificate["spec"]["issuerRef"]["name"] == CA_NAME, certificate["spec"]
    assert workload.get("v1", "Secret", SERVING_SECRET, WORKLOAD_GATEWAY_NAMESPACE) is not None
    listeners = [
        listener
        for gw in workload.list("gateway.networking.k8s.io/v1", "Gateway", WORKLOAD_GATEWAY_NAMESPACE)
        for listener in gw["spec"]["listeners"]
    ]
    served = {
        (li["protocol"], ((li.get("tls") or {}).get("certificateRefs") or [{}])[0].get("name")) for li in listeners
    }
    # HTTPS from the stack's certificate, and no plain HTTP listener (the cluster is not spec.gateway.insecure).
    assert ("HTTPS", SERVING_SECRET) in served and all(protocol != "HTTP" for protocol, _ in served), listeners
    # Once the pool's endpoint serves, the replica's own goes: the route has the pool alone.
    eventually(f"{name}'s own ModelEndpoint to go", lambda: xr(kube, "ModelEndpoint", name, NS) is None)
    wait_condition(kube, "ModelService", "qwen", NS, "Routed")
    watch.mark("ModelService Routed")
    gateway = wait_condition(kube, "InferenceGateway", "default", None, "Ready")
    address = gateway["status"]["address"]
    eventually("the ModelService's address", lambda: _with_address(kube, address))
    # The service routes by the endpoints it last read: the replica's own endpoint leaves its route at
    # the service's next reconcile (a CI run read it a moment before, with the replica's at weight 0).
    backends = eventually(
        f"the route to have the pool endpoint {POOL_ENDPOINT} alone", lambda: _pool_alone(kube, POOL_ENDPOINT)
    )
    assert all(w > 0 for _, w in backends), backends
    # Callers authenticate, and the service is rate limited: the gateway's SecurityPolicy and the
    # service's BackendTrafficPolicy, admitted by the real API server against Envoy Gateway's CRDs and
    # accepted (by the stand-in for its controller) on the gateway.
    auth = eventually(
        "the gateway's SecurityPolicy accepted",
        lambda: _accepted(kube, SECURITY_POLICY, auth_policy_name("default"), GATEWAY_NAMESPACE),
    )
    assert auth["spec"]["apiKeyAuth"]["credentialRefs"][0]["name"] == "quickstart-api-keys", auth["spec"]
    assert auth["spec"]["targetRefs"][0]["kind"] == "Gateway", auth["spec"]
    traffic = eventually(
        "qwen's BackendTrafficPolicy accepted", lambda: _accepted(kube, TRAFFIC_POLICY, traffic_policy_name("qwen"), NS)
    )
    assert traffic["spec"]["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "qwen"}
    ], traffic["spec"]
    (rule,) = traffic["spec"]["rateLimit"]["local"]["rules"]
    assert rule["limit"] == {"requests": 600, "unit": "Minute"}, rule
    limited = wait_condition(kube, "ModelService", "qwen", NS, "Limited")
    assert condition(limited, "Limited")["reason"] == "Limited", limited["status"]
    assert policy_accepted(kube.get("gateway.networking.k8s.io/v1", "BackendTLSPolicy", POOL_ENDPOINT, NS))


SECURITY_POLICY = ("gateway.envoyproxy.io/v1alpha1", "SecurityPolicy")
TRAFFIC_POLICY = ("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy")


def policy_accepted(policy: Mapping[str, Any] | None) -> bool:
    """Whether a policy's status says an ancestor (its Gateway) accepted it, as Envoy Gateway writes."""
    ancestors = (policy or {}).get("status", {}).get("ancestors") or []
    return any(
        c.get("type") == "Accepted" and c.get("status") == "True" for a in ancestors for c in a.get("conditions") or []
    )


def _accepted(kube: Kube, kind: tuple[str, str], name: str, namespace: str) -> Mapping[str, Any] | None:
    policy = kube.get(*kind, name, namespace)
    return policy if policy_accepted(policy) else None


def _pool_alone(kube: Kube, pool_endpoint: str) -> list[tuple[str, int]] | None:
    """The control-plane route's (backend, weight) pairs once they name ``pool_endpoint`` alone."""
    route = kube.get(*HTTP_ROUTE, "qwen", NS)
    if route is None:
        return None
    backends = [(b["name"], b.get("weight", 1)) for rule in route["spec"]["rules"] for b in rule.get("backendRefs", [])]
    return backends if [b for b, _ in backends] == [pool_endpoint] else None


# The quickstart's object of each kind, as `kubectl get` names it, and the columns that must show
# a value once everything is Ready (others may be empty by design, e.g. a class's provider).
QUICKSTART_OBJECTS = [
    pytest.param("inferenceclasses", "nvidia-l4", ["DEVICES"], id="inferenceclasses"),
    pytest.param("inferenceclusters", "quickstart", ["SOURCE", "DEVICES", "FREE", "CORDONED"], id="inferenceclusters"),
    pytest.param("servingstacks", "quickstart", ["BACKEND", "GATEWAY"], id="servingstacks"),
    pytest.param("inferencegateways", "default", ["ADDRESS"], id="inferencegateways"),
    pytest.param("modeldeployments", "qwen", ["REPLICAS", "AVAILABLE", "SCHEDULED"], id="modeldeployments"),
    pytest.param("modelreplicas", "qwen-0", ["CLUSTER", "POOL", "GPUS", "URL"], id="modelreplicas"),
    pytest.param("modelendpoints", "qwen-quickstart", ["URL"], id="modelendpoints"),
    pytest.param("modelservices", "qwen", ["ADDRESS", "ENDPOINTS"], id="modelservices"),
]


def _printer_columns(plural: str) -> list[str]:
    xrd = yaml.safe_load((REPO / "apis" / plural / "definition.yaml").read_text())
    (version,) = [v for v in xrd["spec"]["versions"] if v.get("referenceable")]
    return [str(c["name"]).upper() for c in version.get("additionalPrinterColumns", [])]


def _cells(out: str) -> dict[str, str]:
    """The one row of ``kubectl get`` output, by column (cells cut at the header's column starts)."""
    header, row = out.rstrip("\n").splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", header)]
    names = header.split()
    bounds = [*starts[1:], max(len(row), len(header)) + 1]
    return {name: row[a:b].strip() for name, a, b in zip(names, starts, bounds, strict=True)}


@pytest.mark.parametrize(("plural", "name", "filled"), QUICKSTART_OBJECTS)
def test_kubectl_get_prints_columns(quickstart: Plane, plural: str, name: str, filled: list[str]) -> None:
    args = ["get", plural, name, "-o", "wide"] + (["-n", NS] if _namespaced(plural) else [])
    out = quickstart.kube.kubectl(args)
    print(out)  # noqa: T201 - what a user sees
    cells = _cells(out)
    for column in [*_printer_columns(plural), "SYNCED", "READY"]:
        assert column in cells, f"kubectl get {plural} -o wide has no {column} column: {list(cells)}"
    for column in [*filled, "SYNCED", "READY"]:
        assert cells[column], f"kubectl get {plural} {name}: {column} is empty:\n{out}"
    assert cells["READY"] == "True", out


def _with_address(kube: Kube, gateway: str) -> dict[str, Any] | None:
    """The ModelService once its address is the gateway's, at /<namespace>/<name>."""
    service = xr(kube, "ModelService", "qwen", NS)
    address = (service or {}).get("status", {}).get("address", "")
    return service if address == f"{gateway}/{NS}/qwen" else None


def _namespaced(plural: str) -> bool:
    return next(k for k in kinds.KINDS if k.plural == plural).namespaced


def _scale(plane: Plane, replicas: int) -> None:
    plane.kube.kubectl(["scale", "-n", NS, "modeldeployment/qwen", f"--replicas={replicas}"])


def _placed(plane: Plane) -> list[str]:
    return [r["metadata"]["name"] for r in replicas_of(plane.kube, "qwen", NS)]


def _placed_count(plane: Plane, count: int) -> list[str] | None:
    """The replicas' names once there are ``count`` of them."""
    placed = _placed(plane)
    return placed if len(placed) == count else None


def test_kubectl_scale(quickstart: Plane) -> None:
    plane = quickstart
    kube, workload = plane.kube, plane.workloads[WORKLOAD].kube
    scale = kube.request("GET", kube.path(kinds.API_VERSION, "ModelDeployment", "qwen", NS, "scale"))
    assert scale["kind"] == "Scale", scale
    assert scale["spec"]["replicas"] == 1, scale
    first = _placed(plane)
    _scale(plane, 3)
    # Two GPUs: two replicas run on workload-a; the third waits, and the deployment says why.
    placed = eventually("two replicas placed", lambda: _placed_count(plane, 2))
    for name in placed:
        eventually(f"{name} on {WORKLOAD}", functools.partial(_replica_on_workload, plane, name))
        wait_condition(kube, "ModelReplica", name, NS, "Ready")
    deployment = wait_condition(kube, "ModelDeployment", "qwen", NS, "Scheduled", "False")
    scheduled = condition(deployment, "Scheduled")
    assert scheduled.get("reason") == "InsufficientCapacity", scheduled
    assert workload.list("serving.kserve.io/v1alpha2", "LLMInferenceService", NS), "nothing on workload-a"
    assert len(workload.list("serving.kserve.io/v1alpha2", "LLMInferenceService", NS)) == 2
    scale = kube.request("GET", kube.path(kinds.API_VERSION, "ModelDeployment", "qwen", NS, "scale"))
    assert scale["spec"]["replicas"] == 3, scale

    _scale(plane, 1)
    eventually("back to one replica", lambda: _placed(plane) == first)
    eventually(
        "one LLMInferenceService on workload-a",
        lambda: len(workload.list("serving.kserve.io/v1alpha2", "LLMInferenceService", NS)) == 1,
    )
    wait_condition(kube, "ModelDeployment", "qwen", NS, "Scheduled")
    wait_condition(kube, "ModelReplica", first[0], NS, "Ready")


def _stays(plane: Plane, replica: str, seconds: float = HOLD_SECONDS) -> None:
    """The replica's workload stays on workload-a, and composed, for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert _placed(plane) == [replica], f"the replica set changed: {_placed(plane)}"
        assert _replica_on_workload(plane, replica), f"{replica}'s objects left {WORKLOAD}"
        time.sleep(1.0)


def _healed(plane: Plane, replica: str) -> None:
    kube = plane.kube
    wait_condition(kube, "InferenceCluster", "quickstart", None, "Ready")
    wait_condition(kube, "ModelDeployment", "qwen", NS, "Scheduled")
    wait_condition(kube, "ModelReplica", replica, NS, "Ready")
    assert _replica_on_workload(plane, replica)


def test_never_drop_class_deleted(quickstart: Plane) -> None:
    plane = quickstart
    (replica,) = _placed(plane)
    plane.kube.delete(kinds.API_VERSION, "InferenceClass", "nvidia-l4")
    cluster = wait_condition(plane.kube, "InferenceCluster", "quickstart", None, "CapacityKnown", "False")
    assert condition(cluster, "CapacityKnown").get("reason") == "ClassNotFound", conditions(cluster)
    _stays(plane, replica)
    plane.kube.kubectl(["apply", "-f", str(QUICKSTART / "class.yaml")])
    _healed(plane, replica)


def test_never_drop_cluster_not_ready(quickstart: Plane) -> None:
    plane = quickstart
    (replica,) = _placed(plane)
    # The cluster's serving stack fails (its Envoy Gateway release, as provider-helm would report it).
    standin = plane.standin
    assert standin is not None
    standin.hold("control-plane")
    try:
        plane.kube.patch(
            "helm.m.crossplane.io/v1beta1",
            "Release",
            "quickstart-envoy-gateway",
            {"status": {"conditions": [_false("Ready", "ReconcileError", "stand-in: the release failed")]}},
            namespace=CROSSPLANE_NAMESPACE,
            subresource="status",
        )
        wait_condition(plane.kube, "InferenceCluster", "quickstart", None, "Ready", "False")
        _stays(plane, replica)
        _scale(plane, 2)
        deployment = wait_condition(plane.kube, "ModelDeployment", "qwen", NS, "Scheduled", "False")
        assert _placed(plane) == [replica], f"a replica was placed on a NotReady cluster: {conditions(deployment)}"
        assert condition(deployment, "Scheduled").get("message"), conditions(deployment)
    finally:
        standin.release("control-plane")
    _scale(plane, 1)
    _healed(plane, replica)


def _false(kind: str, reason: str, message: str) -> dict[str, Any]:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {"type": kind, "status": "False", "reason": reason, "message": message, "lastTransitionTime": now}


def test_never_drop_cordoned(quickstart: Plane) -> None:
    plane = quickstart
    (replica,) = _placed(plane)
    plane.kube.patch(kinds.API_VERSION, "InferenceCluster", "quickstart", {"spec": {"cordoned": True}})
    eventually(
        "the cluster to report cordoned",
        lambda: (xr(plane.kube, "InferenceCluster", "quickstart") or {}).get("status", {}).get("cordoned") is True,
    )
    _scale(plane, 2)
    deployment = wait_condition(plane.kube, "ModelDeployment", "qwen", NS, "Scheduled", "False")
    _stays(plane, replica)
    assert "cordon" in condition(deployment, "Scheduled").get("message", "").lower(), conditions(deployment)
    plane.kube.patch(kinds.API_VERSION, "InferenceCluster", "quickstart", {"spec": {"cordoned": False}})
    placed = eventually("the second replica placed after uncordon", lambda: _placed_count(plane, 2))
    assert replica in placed
    _scale(plane, 1)
    eventually("back to one replica", lambda: _placed(plane) == [replica])
    _healed(plane, replica)


def test_never_drop_kubeconfig_broken(quickstart: Plane) -> None:
    plane = quickstart
    (replica,) = _placed(plane)
    secret = plane.kube.get("v1", "Secret", SECRET, CROSSPLANE_NAMESPACE)
    assert secret is not None
    garbage = base64.b64encode(b"apiVersion: v1\nkind: Config\nclusters: []\n").decode()
    plane.kube.patch("v1", "Secret", SECRET, {"data": {"kubeconfig": garbage}}, namespace=CROSSPLANE_NAMESPACE)
    # provider-kubernetes can no longer reach the cluster: its Objects stop syncing.
    eventually(
        f"{replica}'s Objects to report the broken kubeconfig",
        lambda: any(condition(o, "Synced").get("status") == "False" for o in remote_objects(plane.kube, replica, NS)),
    )
    _stays(plane, replica)
    plane.connect("quickstart", WORKLOAD, SECRET)
    eventually(
        f"{replica}'s Objects to sync again",
        lambda: all(condition(o, "Synced").get("status") == "True" for o in remote_objects(plane.kube, replica, NS)),
    )
    _healed(plane, replica)


def test_delete_cleans_both_servers(quickstart: Plane) -> None:
    plane = quickstart
    kube, workload = plane.kube, plane.workloads[WORKLOAD].kube
    (replica,) = _placed(plane)
    objects = remote_objects(kube, replica, NS)
    manifests = [manifest_of(o) for o in objects if _deletes(o)]
    kept = [manifest_of(o) for o in objects if not _deletes(o)]
    assert manifests, "the replica composed nothing to delete"
    kube.delete(kinds.API_VERSION, "ModelService", "qwen", NS)
    kube.delete(kinds.API_VERSION, "ModelDeployment", "qwen", NS)
    eventually("the ModelReplicas to go", lambda: not replicas_of(kube, "qwen", NS))
    eventually(f"the ModelEndpoint {POOL_ENDPOINT} to go", lambda: xr(kube, "ModelEndpoint", POOL_ENDPOINT, NS) is None)
    # The deployment's pool and endpoint picker leave workload-a with it.
    eventually("qwen's InferencePool to leave workload-a", lambda: routing.pool(workload, "qwen", NS) is None)
    eventually(
        "qwen's endpoint picker to leave workload-a",
        lambda: workload.get("apps/v1", "Deployment", endpoint_picker_name("qwen"), NS) is None,
    )
    eventually("the HTTPRoute to go", lambda: kube.get(*HTTP_ROUTE, "qwen", NS) is None)
    eventually(
        "the replica's Objects to go",
        lambda: not [o for o in kube.list(*OBJECT, NS) if o["metadata"]["name"].startswith(f"{replica}-")],
    )
    for manifest in manifests:
        eventually(
            f"{manifest['kind']} {manifest['metadata']['name']} to leave {WORKLOAD}",
            functools.partial(_absent, workload, manifest),
        )
    for manifest in kept:
        assert present(workload, manifest) is not None, f"{manifest['kind']} was to be orphaned, not deleted"
    assert ready(xr(kube, "InferenceCluster", "quickstart"))


def _deletes(obj: Mapping[str, Any]) -> bool:
    """Whether deleting the Object deletes its remote object (its deletion and management policies allow it)."""
    spec = obj["spec"]
    policies = spec.get("managementPolicies") or ["*"]
    return spec.get("deletionPolicy", "Delete") == "Delete" and ("*" in policies or "Delete" in policies)


def _absent(kube: Kube, manifest: Mapping[str, Any]) -> bool:
    return present(kube, manifest) is None
