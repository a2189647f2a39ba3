"""Scenario 3: a two-cluster fleet (KAI on workload-a, Kueue on workload-b) and a canary over two deployments.

The live system's placements (each ModelReplica's cluster and pool) and the
ModelService's route weights must be what ``modelplane preview --assume-ready``
says for the same manifests: the preview must agree with the real system.

In-cluster routing (mode Pool, ``docs/routing.md``): each deployment's
InferencePool, endpoint picker, HTTPRoute (Native e2e-kueue), InferenceObjective
and monitors (e2e-kueue runs the prometheus-operator) are accepted by their
workload API server, the control-plane route points at each cluster's pool, and
scaling chat-stable from 2 to 3 replicas leaves its pool as it is and changes
its cluster's weight.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.names import (
    ENDPOINT_PICKER_LABEL,
    endpoint_picker_name,
    pool_endpoint_name,
    pool_host,
    pool_name,
    replica_name,
)
from tests.e2e import routing
from tests.e2e.figures import Stopwatch
from tests.e2e.kube import Kube
from tests.e2e.placement import wait_placed
from tests.e2e.plane import Plane
from tests.e2e.tools import REPO
from tests.e2e.world import cluster_gone, eventually, landed, replicas_of, wait_condition, xr

pytestmark = pytest.mark.e2e

FLEET = Path(__file__).resolve().parent / "fleet"
# How long the fleet's replicas may take to turn Ready from their pods (see the wait below).
REPLICAS_READY_TIMEOUT = 300.0
NS = "e2e-fleet"
CLUSTERS = {"e2e-kai": "workload-a", "e2e-kueue": "workload-b"}
DEPLOYMENTS = ("chat-stable", "chat-canary")
# Where each deployment runs (its clusterSelector's region), hence where its pool is.
POOLS = {"chat-stable": "e2e-kueue", "chat-canary": "e2e-kai"}
# A replica added: composed, its objects applied, its pod bound and Ready, seen at provider-kubernetes' poll.
SCALE_TIMEOUT = 240.0
HTTP_ROUTE = ("gateway.networking.k8s.io/v1", "HTTPRoute")


def _secret(cluster: str) -> str:
    return f"{cluster}-kubeconfig"


@pytest.fixture(scope="module")
def fleet(plane: Plane) -> Iterator[Plane]:
    """The fleet applied once; removed afterwards."""
    for cluster, workload in CLUSTERS.items():
        plane.connect(cluster, workload, _secret(cluster))
    # The platform team's part first, then the ML team's: a deployment applied together with its
    # clusters lands on whichever cluster became Ready first and stays there (sticky placement),
    # while the preview settles as if every cluster were Ready from the start.
    plane.kube.kubectl(["apply", "-f", str(FLEET / "platform.yaml")])
    for cluster in CLUSTERS:
        wait_condition(plane.kube, "InferenceCluster", cluster, None, "Ready")
    watch = Stopwatch("fleet")
    plane.kube.kubectl(["apply", "-f", str(FLEET / "models.yaml")])
    _CLOCKS["fleet"] = watch
    yield plane
    for path in sorted(FLEET.glob("*.yaml"), reverse=True):
        for doc in reversed([d for d in yaml.safe_load_all(path.read_text()) if d]):
            if doc["apiVersion"] == kinds.API_VERSION:
                meta = doc["metadata"]
                plane.kube.delete(kinds.API_VERSION, doc["kind"], meta["name"], meta.get("namespace"))
    for cluster in CLUSTERS:
        cluster_gone(plane.kube, cluster)


_CLOCKS: dict[str, Stopwatch] = {}


def _placements(replicas: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Replica name -> (cluster, pools) as the ModelReplicas say."""
    out = {}
    for r in replicas:
        spec = r["spec"]
        pools = tuple(sorted({str(p) for p in _pools(spec)}))
        out[str(r["metadata"]["name"])] = (str(spec["inferenceClusterRef"]["name"]), pools)
    return out


def _pools(spec: Mapping[str, Any]) -> list[str]:
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in ("pool", "poolName") and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(spec)
    return found


def _weights(route: Mapping[str, Any]) -> dict[str, int]:
    return {
        str(b["name"]): int(b.get("weight", 1)) for rule in route["spec"]["rules"] for b in rule.get("backendRefs", [])
    }


def _modelplane(args: Sequence[str], env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "modelplane"), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
        env=env,
    )


def _preview() -> list[dict[str, Any]]:
    """Every object `modelplane preview --assume-ready -o objects` renders for the same manifests."""
    done = _modelplane(["preview", "--assume-ready", "-o", "objects", str(FLEET)])
    assert done.returncode == 0, f"modelplane preview failed ({done.returncode}): {done.stderr[-3000:]}"
    return [d for d in yaml.safe_load_all(done.stdout) if isinstance(d, dict)]


def test_fleet_agrees_with_preview(fleet: Plane) -> None:
    plane, watch = fleet, _CLOCKS["fleet"]
    kube = plane.kube
    for name in DEPLOYMENTS:
        wait_condition(kube, "ModelDeployment", name, NS, "Scheduled")
    watch.mark("Scheduled")
    replicas = [r for d in DEPLOYMENTS for r in replicas_of(kube, d, NS)]
    for replica in replicas:
        name = replica["metadata"]["name"]
        workload = plane.workloads[CLUSTERS[replica["spec"]["inferenceClusterRef"]["name"]]].kube
        eventually(f"{name}'s objects on its cluster", functools.partial(landed, kube, workload, name, NS))
    watch.mark("workload objects present")
    # A replica turns Ready at the end of a chain of polls (kube-scheduler and DRA allocation, kwok,
    # the stand-in, provider-kubernetes' poll, Crossplane's requeue): 37-67 s on an idle machine,
    # over 90 s once on a loaded CI run. The bound is generous; the figure below says how long it took.
    for replica in replicas:
        wait_condition(kube, "ModelReplica", replica["metadata"]["name"], NS, "Ready", timeout=REPLICAS_READY_TIMEOUT)
    watch.mark("ModelReplicas Ready")
    wait_condition(kube, "ModelService", "chat", NS, "Routed")
    watch.mark("ModelService Routed")

    preview = _preview()
    expected = _placements([d for d in preview if d.get("kind") == "ModelReplica"])
    live = _placements(replicas_of(kube, "chat-stable", NS) + replicas_of(kube, "chat-canary", NS))
    assert live == expected, "the live placements differ from the preview's"
    (expected_route,) = [
        d
        for d in preview
        if d.get("kind") == "HTTPRoute" and d["metadata"].get("namespace") == NS and d["metadata"]["name"] == "chat"
    ]
    want = _weights(expected_route)

    def route_weights() -> dict[str, int] | None:
        route = kube.get(*HTTP_ROUTE, "chat", NS)
        return _weights(route) if route is not None else None

    # The route gains each endpoint as it becomes Ready: it must settle where the preview says.
    try:
        eventually("the route to weigh every endpoint as the preview does", lambda: route_weights() == want)
    except TimeoutError:
        pytest.fail(f"the live route weights {route_weights()} differ from the preview's {want}")
    watch.mark("route as the preview says")
    # Both clusters are used, each through its own scheduler's shape.
    assert {c for c, _ in live.values()} == set(CLUSTERS), live
    kai = plane.workloads["workload-a"].kube
    kueue = plane.workloads["workload-b"].kube
    assert kai.list("serving.kserve.io/v1alpha2", "LLMInferenceService", NS), "no KServe workload on the KAI cluster"
    deployments = kueue.list("apps/v1", "Deployment", NS)
    # The endpoint pickers are Deployments too, but no GPU workload: Kueue must not hold routing.
    pickers = [d for d in deployments if ENDPOINT_PICKER_LABEL in d["spec"]["template"]["metadata"].get("labels", {})]
    engines = [d for d in deployments if d not in pickers]
    assert engines, "no native workload on the Kueue cluster"
    for d in engines:
        labels = d["spec"]["template"]["metadata"].get("labels", {})
        assert labels.get("kueue.x-k8s.io/queue-name") == "inference", labels
    for d in pickers:
        assert "kueue.x-k8s.io/queue-name" not in d["spec"]["template"]["metadata"].get("labels", {}), d["metadata"]
    assert xr(kube, "ModelService", "chat", NS) is not None


def test_fleet_pods_placed_by_kube_scheduler(fleet: Plane) -> None:
    """Every replica's pods are bound by kube-scheduler to nodes of its pool, with its GPUs allocated.

    The KServe replica's pod names kai-scheduler (placed by a kube-scheduler profile of that name),
    the Native one's a Deployment the real controller runs; both claim through the composed template.
    """
    kube = fleet.kube
    replicas = [r for d in DEPLOYMENTS for r in replicas_of(kube, d, NS)]
    assert replicas, "no replicas"
    per_cluster: dict[str, int] = {}
    for replica in replicas:
        name = replica["metadata"]["name"]
        cluster = replica["spec"]["inferenceClusterRef"]["name"]
        wait_condition(kube, "ModelReplica", name, NS, "Ready")
        placed = wait_placed(kube, fleet.workloads[CLUSTERS[cluster]].kube, name, NS)
        per_cluster[cluster] = per_cluster.get(cluster, 0) + sum(len(p.devices) for p in placed)
    # What the clusters say is in use is what kube-scheduler allocated.
    for cluster, allocated in sorted(per_cluster.items()):
        try:
            eventually(
                f"{cluster}'s capacity.inUse to be {allocated}",
                functools.partial(_in_use_is, kube, cluster, allocated),
            )
        except TimeoutError:
            pytest.fail(
                f"{cluster}: modelplane counts {_in_use(kube, cluster)} GPUs in use, "
                f"kube-scheduler allocated {allocated}"
            )


def test_fleet_routes_through_one_pool_per_cluster(fleet: Plane) -> None:
    """Each cluster's pool objects are accepted by its API server; the control-plane route points at the pools."""
    kube = fleet.kube
    wait_condition(kube, "ModelService", "chat", NS, "Routed")
    watch = Stopwatch("pools")
    for deployment, cluster in POOLS.items():
        workload = fleet.workloads[CLUSTERS[cluster]].kube
        count = len(replicas_of(kube, deployment, NS))
        pool = eventually(
            f"{deployment}'s InferencePool on {cluster}", functools.partial(routing.pool, workload, deployment, NS)
        )
        assert pool["spec"]["selector"]["matchLabels"] == {
            "modelplane.ai/deployment": deployment,
            "modelplane.ai/role": "unified",
        }, pool["spec"]
        assert pool["spec"]["targetPorts"] == [{"number": 8000}], pool["spec"]
        assert pool["spec"]["endpointPickerRef"]["name"] == endpoint_picker_name(deployment), pool["spec"]
        # The real deployment controller runs the picker; kube-scheduler binds its pod to a simulated node.
        eventually(
            f"{deployment}'s endpoint picker Available on {cluster}",
            functools.partial(routing.picker_serving, workload, deployment, NS),
        )
        # The control plane routes to the cluster's pool, weighted by the replicas Ready there.
        endpoint = eventually(
            f"{deployment}'s pool endpoint on {cluster} Ready with weight {count}",
            functools.partial(routing.weighted, kube, deployment, cluster, NS, count),
        )
        assert endpoint["spec"]["host"] == pool_host(deployment, NS), endpoint["spec"]
    watch.mark("pools accepted, pickers Available")
    want = sorted(pool_endpoint_name(d, c) for d, c in POOLS.items())
    try:
        eventually("the route to point at each cluster's pool", lambda: _route_backends(kube) == want)
    except TimeoutError:
        pytest.fail(f"the ModelService routes to {_route_backends(kube)}, not to the pools {want}")
    # No replica keeps an endpoint of its own once its cluster's pool serves: the pools carry the traffic.
    for deployment in POOLS:
        for replica in replicas_of(kube, deployment, NS):
            name = replica["metadata"]["name"]
            eventually(f"{name}'s own ModelEndpoint to go", functools.partial(_no_endpoint, kube, name))

    kueue, kai = fleet.workloads["workload-b"].kube, fleet.workloads["workload-a"].kube
    # e2e-kueue is Native: the pool's HTTPRoute on the cluster's gateway, accepted by the gateway.
    stable = pool_name("chat-stable")
    route = eventually("chat-stable's pool HTTPRoute Accepted", functools.partial(_accepted_route, kueue, stable))
    assert route["spec"]["hostnames"] == [pool_host("chat-stable", NS)], route["spec"]
    assert routing.backends(route) == [stable], route["spec"]
    assert route["spec"]["rules"][0]["backendRefs"][0]["kind"] == "InferencePool", route["spec"]
    objective = eventually(
        "chat-stable's InferenceObjective (spec.routing.priority)",
        functools.partial(kueue.get, *routing.INFERENCE_OBJECTIVE, stable, NS),
    )
    assert objective["spec"]["priority"] == 10, objective["spec"]
    assert objective["spec"]["poolRef"]["name"] == stable, objective["spec"]
    # ... and runs the prometheus-operator: a PodMonitor per replica, the picker's ServiceMonitor, the rules.
    for replica in replicas_of(kube, "chat-stable", NS):
        name = replica["metadata"]["name"]
        monitor = eventually(f"{name}'s PodMonitor", functools.partial(kueue.get, *routing.POD_MONITOR, name, NS))
        endpoints = monitor["spec"]["podMetricsEndpoints"]
        assert [e.get("path") for e in endpoints] == ["/metrics"], endpoints
    picker = endpoint_picker_name("chat-stable")
    eventually("the picker's ServiceMonitor", functools.partial(kueue.get, *routing.SERVICE_MONITOR, picker, NS))
    eventually("chat-stable's PrometheusRule", functools.partial(kueue.get, *routing.PROMETHEUS_RULE, stable, NS))
    # e2e-kai is KServe without Prometheus: its LLMInferenceServices route to the pool, no monitor is composed.
    canary = pool_name("chat-canary")
    (service,) = kai.list("serving.kserve.io/v1alpha2", "LLMInferenceService", NS)
    assert service["spec"]["router"]["scheduler"]["pool"]["ref"] == {"name": canary}, service["spec"]["router"]
    assert kai.get(*routing.HTTP_ROUTE, canary, NS) is None
    assert kai.list(*routing.POD_MONITOR, NS) == []
    watch.mark("routes and monitors checked")


def _no_endpoint(kube: Kube, name: str) -> bool:
    return xr(kube, "ModelEndpoint", name, NS) is None


def _route_backends(kube: Kube) -> list[str]:
    return sorted(routing.backends(kube.get(*HTTP_ROUTE, "chat", NS)))


def _accepted_route(kube: Kube, name: str) -> dict[str, Any] | None:
    """The HTTPRoute once every parent it names has Accepted it."""
    route = kube.get(*routing.HTTP_ROUTE, name, NS)
    parents = (route or {}).get("status", {}).get("parents") or []
    accepted = [
        p
        for p in parents
        if any(c.get("type") == "Accepted" and c.get("status") == "True" for c in p.get("conditions") or [])
    ]
    return route if route is not None and parents and len(accepted) == len(parents) else None


def _in_use(kube: Kube, cluster: str) -> int:
    return int((xr(kube, "InferenceCluster", cluster) or {}).get("status", {}).get("capacity", {}).get("inUse", -1))


def _in_use_is(kube: Kube, cluster: str, gpus: int) -> bool:
    return _in_use(kube, cluster) == gpus


def _plan_live(plane: Plane, head: Path) -> dict[str, Any]:
    """``modelplane preview --live --assume-ready -o json HEAD`` with the user's kubeconfig and kubectl."""
    env = {
        **os.environ,
        "KUBECONFIG": str(plane.kube.kubeconfig),
        "PATH": f"{plane.kube.kubectl_binary.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    done = _modelplane(["preview", "--live", "--assume-ready", "-o", "json", str(head)], env)
    assert done.returncode == 0, f"modelplane preview --live failed ({done.returncode}): {done.stderr[-3000:]}"
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def _changed_fleet(out: Path) -> Path:
    """The fleet with chat-stable scaled 3 -> 4 and the canary raised 20 -> 50: a pull request's change."""
    out.mkdir()
    (out / "platform.yaml").write_text((FLEET / "platform.yaml").read_text())
    docs = [d for d in yaml.safe_load_all((FLEET / "models.yaml").read_text()) if d]
    for doc in docs:
        if doc["kind"] == "ModelDeployment" and doc["metadata"]["name"] == "chat-stable":
            doc["spec"]["replicas"] = 4
        if doc["kind"] == "ModelService":
            for endpoint in doc["spec"]["endpoints"]:
                endpoint["weight"] = 50
    (out / "models.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return out


def test_plan_against_the_live_fleet(fleet: Plane, tmp_path: Path) -> None:
    """``--live`` reads the running control plane with kubectl: the same manifests plan no change; a PR's does."""
    kube = fleet.kube
    wait_condition(kube, "ModelService", "chat", NS, "Routed")
    watch = Stopwatch("live plan")

    same = _plan_live(fleet, FLEET)
    watch.mark("plan of the applied manifests")
    plan = same["plan"]
    assert plan["base"] == "the live control plane", plan["base"]
    assert plan["replicas"] == [], f"the applied manifests plan replica changes: {plan['replicas']}"
    assert plan["routes"] == [], f"the applied manifests plan route changes: {plan['routes']}"
    moved = {g["cluster"]: g for g in plan["gpus"] if g["inUse"][0] != g["inUse"][1]}
    assert not moved, f"the applied manifests plan GPU changes: {moved}"
    assert same["head"]["exitCode"] == 0, same["head"]["findings"]

    change = _plan_live(fleet, _changed_fleet(tmp_path / "head"))
    watch.mark("plan of a change")
    plan = change["plan"]
    added = f"{NS}/{replica_name('chat-stable', 3)}"
    assert [(r["change"], r["replica"]) for r in plan["replicas"]] == [("added", added)], plan["replicas"]
    assert plan["replicas"][0]["after"].startswith("e2e-kueue"), plan["replicas"][0]
    gpus = {g["cluster"]: g for g in plan["gpus"]}
    before, after = gpus["e2e-kueue"]["inUse"]
    assert (before, after) == (3, 4), gpus["e2e-kueue"]
    (route,) = plan["routes"]
    canary = {when: sum(s for n, s in route[when] if n.startswith("chat-canary")) for when in ("before", "after")}
    assert canary == {"before": 20.0, "after": 50.0}, route
    # A plan changes nothing: the control plane still runs the applied fleet.
    assert len(replicas_of(kube, "chat-stable", NS)) == 3


def _scale_stable(kube: Kube, replicas: int) -> None:
    kube.kubectl(["scale", "-n", NS, "modeldeployment/chat-stable", f"--replicas={replicas}"])


def _ready_on(kube: Kube, cluster: str, count: int) -> bool:
    """Whether chat-stable has ``count`` replicas, every one Ready on ``cluster``."""
    replicas = replicas_of(kube, "chat-stable", NS)
    return len(replicas) == count and routing.ready_replicas_on(kube, "chat-stable", cluster, NS) == count


def test_scaling_in_one_cluster_changes_its_weight_not_its_pool(fleet: Plane) -> None:
    """chat-stable from 2 to 3 replicas on e2e-kueue: the same InferencePool, the cluster's weight 2 -> 3."""
    kube = fleet.kube
    cluster = POOLS["chat-stable"]
    workload = fleet.workloads[CLUSTERS[cluster]].kube
    _scale_stable(kube, 2)
    eventually("chat-stable at 2 Ready replicas", lambda: _ready_on(kube, cluster, 2), SCALE_TIMEOUT)
    eventually(
        "chat-stable's pool endpoint weighted 2",
        functools.partial(routing.weighted, kube, "chat-stable", cluster, NS, 2),
    )
    before = routing.pool(workload, "chat-stable", NS)
    assert before is not None, "chat-stable's InferencePool left while replicas still run there"
    shape = _route_backends(kube)
    watch = Stopwatch("scale 2 -> 3")
    _scale_stable(kube, 3)
    eventually("chat-stable at 3 Ready replicas", lambda: _ready_on(kube, cluster, 3), SCALE_TIMEOUT)
    endpoint = eventually(
        "chat-stable's pool endpoint weighted 3",
        functools.partial(routing.weighted, kube, "chat-stable", cluster, NS, 3),
    )
    watch.mark("weight 3")
    after = routing.pool(workload, "chat-stable", NS)
    assert routing.unchanged(before, after), f"the InferencePool changed:\n{before}\n->\n{after}"
    assert endpoint["metadata"]["name"] == pool_endpoint_name("chat-stable", cluster)
    # The route keeps its shape: still one backend per cluster's pool.
    assert _route_backends(kube) == shape, (shape, _route_backends(kube))
