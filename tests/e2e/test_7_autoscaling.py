"""KEDA scales a ModelDeployment on what its engines feel, on the real control plane (issue 24).

The worked example (``examples/autoscaling/``) runs as written, but in namespace
``e2e-autoscaling`` on the tier's fleet (``tests/e2e/autoscaling/platform.yaml``:
two KServe clusters with the prometheus-operator, four GPUs) and with the
ScaledObject's intervals shortened so the scenario takes a minute, not an hour.

What runs for real: KEDA's operator and metrics server (out of cluster, the
metrics server behind the control plane's aggregation layer), the HPA
controller KEDA's HPA is run by, and Prometheus evaluating the recording rules
Modelplane composed in its PrometheusRules. What stands in (monitoring.py):
each replica's ``/metrics`` (no engine runs), whose waiting requests the test
sets, and the prometheus-operator turning PodMonitors and PrometheusRules into
Prometheus' configuration.

1. Load: ``LOAD`` requests waiting, on a 1-replica deployment: KEDA raises
   spec.replicas to ``MAX``; Modelplane places the new replicas, they turn
   Ready, and the route's weight per cluster follows its Ready replicas.
2. No load: KEDA lowers spec.replicas to ``MIN``; at every poll at least
   ``MIN`` replicas are Ready.

Each distinct state is a step; the steps (replicas per cluster) and the times
to scale up and down are printed in the run's summary (figures and notes).
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane import kinds
from modelplane.monitoring import QUEUE_PER_READY_REPLICA
from modelplane.names import pool_endpoint_name
from tests.e2e import keda
from tests.e2e.figures import FIGURES, NOTES
from tests.e2e.kube import Kube, Manifest, condition
from tests.e2e.monitoring import Engines, Operator, Prometheus
from tests.e2e.plane import CROSSPLANE_NAMESPACE, Plane, free_port
from tests.e2e.tools import REPO
from tests.e2e.world import deleting, eventually, ready, replicas_of, wait_condition, xr

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parent / "autoscaling"
EXAMPLE = REPO / "examples" / "autoscaling"
EXAMPLE_NS = "ml-team"
NS = "e2e-autoscaling"
CLUSTERS = {"scale-a": "workload-a", "scale-b": "workload-b"}
DEPLOYMENT = "chat"
MIN, MAX = 1, 4
# Waiting requests over the whole deployment: 20 over a threshold of 5 per replica asks for 4.
LOAD = 20.0
HTTP_ROUTE = ("gateway.networking.k8s.io/v1", "HTTPRoute")
SCALED_OBJECT = ("keda.sh/v1alpha1", "ScaledObject")
POLL = 0.5
# KEDA and the HPA act within seconds; each new replica then goes through a scheduling round,
# its workload's start, and provider-kubernetes' 10 s poll before it reads Ready.
SCALE_TIMEOUT = 240.0
# The example's timings are for replicas that load weights for minutes; these for the stand-in.
E2E_BEHAVIOR = {
    "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": MAX, "periodSeconds": 1}]},
    "scaleDown": {"stabilizationWindowSeconds": 2, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 5}]},
}


@dataclass
class Scaling:
    """The running fleet, its monitoring and KEDA."""

    plane: Plane
    engines: Engines
    prometheus: Prometheus
    operator: Operator
    steps: list[str] = field(default_factory=list)


def _secret(cluster: str) -> str:
    return f"{cluster}-kubeconfig"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _in_e2e(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An example document moved to the scenario's namespace and fleet (its gateway, its clusters)."""
    out = copy.deepcopy(dict(doc))
    if out["kind"] == "Namespace":
        out["metadata"]["name"] = NS
        return out
    out["metadata"]["namespace"] = NS
    if out["kind"] == "ModelDeployment":
        out["spec"]["clusterSelector"] = {"matchLabels": {"modelplane.ai/fleet": NS}}
    if out["kind"] == "ModelService":
        out["spec"]["gatewayRef"] = {"name": NS}
    return out


def _scaled_object(prometheus: Prometheus) -> dict[str, Any]:
    """The example's ScaledObject, pointed at the tier's Prometheus, with the scenario's short intervals."""
    (doc,) = _docs(EXAMPLE / "scaledobject.yaml")
    out = _in_e2e(doc)
    spec = out["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (MIN, MAX), "the example's bounds changed"
    spec["pollingInterval"] = 1
    spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] = E2E_BEHAVIOR
    (trigger,) = spec["triggers"]
    query = str(trigger["metadata"]["query"])
    assert query.count(f'namespace="{EXAMPLE_NS}"') == 2, query
    trigger["metadata"]["query"] = query.replace(f'namespace="{EXAMPLE_NS}"', f'namespace="{NS}"')
    trigger["metadata"]["serverAddress"] = prometheus.url
    return out


@pytest.fixture(scope="module")
def scaling(plane: Plane) -> Iterator[Scaling]:
    """The fleet, Prometheus fed by the stand-ins, KEDA, and the example's deployment Ready at one replica."""
    for cluster, workload in CLUSTERS.items():
        plane.connect(cluster, workload, _secret(cluster))
    engines = Engines()
    engines.start()
    prometheus = Prometheus(plane.sup, plane.tools.prometheus, plane.work / "prometheus", free_port())
    operator = Operator(plane.kube, {c: plane.workloads[w].kube for c, w in CLUSTERS.items()}, prometheus, engines)
    started: list[Any] = []
    models = [_in_e2e(d) for d in _docs(EXAMPLE / "deployment.yaml")]
    try:
        prometheus.wait_ready()
        operator.start()
        began = time.monotonic()
        started = keda.start(plane)
        FIGURES["autoscaling: KEDA up, its APIService Available (s)"] = round(time.monotonic() - began, 1)
        plane.kube.kubectl(["apply", "-f", str(HERE / "platform.yaml")])
        for cluster in CLUSTERS:
            wait_condition(plane.kube, "InferenceCluster", cluster, None, "Ready")
        for doc in models:
            plane.kube.apply(doc)
        up = Scaling(plane, engines, prometheus, operator)
        eventually("one Ready replica, routed and scraped", lambda: _settled(up, MIN), SCALE_TIMEOUT)
        yield up
    finally:
        plane.kube.delete(*SCALED_OBJECT, DEPLOYMENT, NS)
        if started:
            keda.stop(plane, started)
        operator.stop()
        engines.stop()
        for doc in [*reversed(models), *reversed(_docs(HERE / "platform.yaml"))]:
            meta = doc["metadata"]
            plane.kube.delete(doc["apiVersion"], doc["kind"], meta["name"], meta.get("namespace"))
        for cluster in CLUSTERS:
            plane.kube.delete("v1", "Secret", _secret(cluster), CROSSPLANE_NAMESPACE)
        if operator.errors:
            NOTES.append(f"autoscaling: the prometheus-operator stand-in's last errors: {operator.errors}")


def _serving(kube: Kube) -> list[Manifest]:
    return [r for r in replicas_of(kube, DEPLOYMENT, NS) if not deleting(r)]


def _per_cluster(replicas: list[Manifest], *, only_ready: bool) -> dict[str, int]:
    return dict(
        sorted(
            Counter(
                str(r["spec"]["inferenceClusterRef"]["name"]) for r in replicas if ready(r) or not only_ready
            ).items()
        )
    )


def _weights(kube: Kube) -> dict[str, int]:
    """The ModelService route's weighted backends (a pool endpoint per cluster, mode Pool)."""
    route = kube.get(*HTTP_ROUTE, DEPLOYMENT, NS) or {}
    rules = route.get("spec", {}).get("rules") or []
    return {str(b["name"]): int(b.get("weight", 1)) for rule in rules for b in rule.get("backendRefs") or []}


def _weights_follow(kube: Kube, ready_per_cluster: Mapping[str, int]) -> bool:
    """Whether each cluster's share of the route's weight is its share of the Ready replicas (to 1%)."""
    weights = {k: v for k, v in _weights(kube).items() if v > 0}
    want = {pool_endpoint_name(DEPLOYMENT, c): n for c, n in ready_per_cluster.items() if n}
    if set(weights) != set(want):
        return False
    total_w, total_n = sum(weights.values()), sum(want.values())
    return all(abs(weights[k] / total_w - want[k] / total_n) <= 0.01 for k in want)


def _settled(up: Scaling, count: int) -> bool:
    """``count`` replicas, every one Ready and scraped, the deployment saying so, the route's weights following."""
    kube = up.plane.kube
    replicas = _serving(kube)
    deployment = xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}
    if len(replicas) != count or not all(ready(r) for r in replicas):
        return False
    scraped = up.prometheus.value(f'count(up{{modelplane_deployment="{DEPLOYMENT}",namespace="{NS}"}} == 1)')
    return (
        deployment.get("status", {}).get("readyReplicas") == count
        and scraped == count
        and _weights_follow(kube, _per_cluster(replicas, only_ready=True))
    )


def _step(up: Scaling, phase: str, began: float) -> tuple[int, int]:
    """Record the state when it changed; return (spec.replicas, Ready replicas)."""
    kube = up.plane.kube
    deployment = xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}
    wanted = int(deployment.get("spec", {}).get("replicas", -1))
    replicas = _serving(kube)
    ready_now = _per_cluster(replicas, only_ready=True)
    signal = up.prometheus.value(
        f'max({QUEUE_PER_READY_REPLICA}{{namespace="{NS}",modelplane_deployment="{DEPLOYMENT}"}})'
    )
    state = (
        f"spec.replicas {wanted}, replicas per cluster {_per_cluster(replicas, only_ready=False)}, "
        f"Ready {ready_now}, route weights {_weights(kube)}"
    )
    if not up.steps or not up.steps[-1].endswith(state):
        queue = "none" if signal is None else f"{signal:g}"
        up.steps.append(f"{phase} +{time.monotonic() - began:.1f}s: queue/Ready replica {queue}; {state}")
    return wanted, sum(ready_now.values())


def test_keda_scales_the_deployment_on_its_queue_up_and_down(scaling: Scaling) -> None:
    kube = scaling.plane.kube
    kube.apply(_scaled_object(scaling.prometheus))
    eventually(
        "the ScaledObject Ready (KEDA reads the trigger, its HPA targets the ModelDeployment)",
        lambda: condition(kube.get(*SCALED_OBJECT, DEPLOYMENT, NS), "Ready").get("status") == "True",
    )
    hpa = kube.get("autoscaling/v2", "HorizontalPodAutoscaler", f"keda-hpa-{DEPLOYMENT}", NS) or {}
    assert hpa.get("spec", {}).get("scaleTargetRef") == {
        "apiVersion": kinds.API_VERSION,
        "kind": "ModelDeployment",
        "name": DEPLOYMENT,
    }

    # 1. Load: the queue per Ready replica rises to LOAD; KEDA asks for MAX, all are placed and turn Ready.
    began = time.monotonic()
    scaling.engines.set_waiting(NS, DEPLOYMENT, LOAD)
    seen_max = eventually(
        f"spec.replicas raised to {MAX}",
        lambda: _step(scaling, "up", began)[0] == MAX and time.monotonic(),
        SCALE_TIMEOUT,
    )
    FIGURES["autoscaling: load -> spec.replicas raised to max (s)"] = round(seen_max - began, 1)
    eventually(
        f"{MAX} Ready replicas, scraped, the route's weights following them",
        lambda: _step(scaling, "up", began) and _settled(scaling, MAX),
        SCALE_TIMEOUT,
    )
    FIGURES["autoscaling: load -> max replicas Ready and routed (s)"] = round(time.monotonic() - began, 1)
    ready_per_cluster = _per_cluster(_serving(kube), only_ready=True)
    assert sum(ready_per_cluster.values()) == MAX
    assert _weights_follow(kube, ready_per_cluster), (_weights(kube), ready_per_cluster)

    # 2. No load: KEDA lowers spec.replicas step by step to MIN; Ready never drops below MIN.
    began = time.monotonic()
    scaling.engines.set_waiting(NS, DEPLOYMENT, 0.0)
    lowest = MAX

    def down() -> bool:
        nonlocal lowest
        wanted, ready_now = _step(scaling, "down", began)
        lowest = min(lowest, ready_now)
        assert ready_now >= MIN, f"only {ready_now} Ready replicas while scaling down (bound {MIN}): {scaling.steps}"
        return wanted == MIN and _settled(scaling, MIN)

    eventually(f"spec.replicas lowered to {MIN}, the rest retired", down, SCALE_TIMEOUT)
    FIGURES["autoscaling: no load -> min replicas, the rest retired (s)"] = round(time.monotonic() - began, 1)
    FIGURES["autoscaling: fewest Ready replicas while scaling down"] = float(lowest)
    NOTES.append("autoscaling steps: " + " | ".join(scaling.steps))


def test_scale_down_removes_the_costliest_replicas_first() -> None:
    """Follow-up: needs spec.placement.strategy CostOptimized and cluster costs (the cost branch)."""
    xrd = yaml.safe_load((REPO / "apis" / "modeldeployments" / "definition.yaml").read_text())
    spec = xrd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    strategy = spec.get("placement", {}).get("properties", {}).get("strategy", {})
    if "CostOptimized" not in strategy.get("enum", []):
        pytest.skip("ModelDeployment has no spec.placement.strategy CostOptimized yet (issue 24's cost half)")
    pytest.fail("spec.placement.strategy exists: write the cheapest-first / costliest-leaves-first scenario")
