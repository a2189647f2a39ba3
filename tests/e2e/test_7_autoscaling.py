"""KEDA scales a ModelDeployment on what its engines feel, and Modelplane spends the fleet's money well (issue 24).

The worked example (``examples/autoscaling/``) runs as written, but in namespace
``e2e-autoscaling`` on the tier's fleet (``tests/e2e/autoscaling/platform.yaml``:
two priced KServe clusters with the prometheus-operator), placed with
``spec.placement.strategy: CostOptimized`` (the example's fleet has no prices),
and with the ScaledObject's intervals shortened so the scenario takes a minute,
not an hour.

What runs for real: KEDA's operator and metrics server (out of cluster, the
metrics server behind the control plane's aggregation layer), the HPA
controller KEDA's HPA is run by, and Prometheus evaluating the recording rules
Modelplane composed in its PrometheusRules. What stands in (monitoring.py):
each replica's ``/metrics`` (no engine runs), whose waiting requests the test
sets, and the prometheus-operator turning PodMonitors and PrometheusRules into
Prometheus' configuration.

0. The deployment's one replica runs on the dear cluster (``DEAR``): the cheap
   one's pool is empty. The cheap pool then grows; the replica stays (placement
   is sticky).
1. Load: ``LOAD`` requests waiting: KEDA raises spec.replicas to ``MAX``; every
   new replica goes to the cheap cluster (``CHEAP``), which has room for them
   all, although the dear one has room too; they turn Ready and the route's
   weight per cluster follows its Ready replicas.
2. No load: KEDA lowers spec.replicas to ``MIN``; the dear replica (the oldest,
   lowest ordinal) leaves first, then the cheap ones; at every poll at least
   ``MIN`` replicas are Ready.
3. Zero: without the ScaledObject (KEDA keeps its minimum), ``kubectl scale
   --replicas=0``: no replica is left, the deployment says ``ScaledToZero`` and
   is Ready, and the service's route sends every request to its 503 filter;
   scaled back to ``MIN``, the replica turns Ready and the route serves again.

Each distinct state is a step; the steps (replicas per cluster, Ready, route
weights, status.cost) and the times to scale up and down are printed in the
run's summary (figures and notes).
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
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
HTTP_ROUTE_FILTER = ("gateway.envoyproxy.io/v1alpha1", "HTTPRouteFilter")
# KEDA and the HPA act within seconds; each new replica then goes through a scheduling round,
# its workload's start, and provider-kubernetes' poll before it reads Ready. Generous: the
# tier runs on two loaded cores.
SCALE_TIMEOUT = 360.0
# The example's timings are for replicas that load weights for minutes; these for the stand-in.
E2E_BEHAVIOR = {
    "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": MAX, "periodSeconds": 1}]},
    "scaleDown": {"stabilizationWindowSeconds": 2, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 5}]},
}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _replica_prices() -> dict[str, Decimal]:
    """What one replica (one GPU: tensor 1) costs per hour on each cluster: class perGPUHour x multiplier."""
    docs = _docs(HERE / "platform.yaml")
    per_gpu = {
        d["metadata"]["name"]: Decimal(d["spec"]["cost"]["perGPUHour"]) for d in docs if d["kind"] == "InferenceClass"
    }
    prices = {}
    for doc in (d for d in docs if d["kind"] == "InferenceCluster"):
        (pool,) = doc["spec"]["nodePools"]
        multiplier = Decimal(doc["spec"].get("cost", {}).get("multiplier", "1"))
        prices[doc["metadata"]["name"]] = per_gpu[pool["className"]] * multiplier
    return prices


PRICES = _replica_prices()
CHEAP = min(PRICES, key=PRICES.__getitem__)
DEAR = max(PRICES, key=PRICES.__getitem__)
# The cheap pool's nodes (one GPU each) once it grows: room for every replica the scale-up adds.
CHEAP_NODES = MAX - MIN


@dataclass
class Scaling:
    """The running fleet, its monitoring and KEDA; what the scale-up left for the scale-down."""

    plane: Plane
    engines: Engines
    prometheus: Prometheus
    operator: Operator
    steps: list[str] = field(default_factory=list)
    scaled_up: bool = False
    scaled_down: bool = False
    # Since when the route has weighted a cluster with no Ready replica (None: it does not), and the longest spell.
    unready_weighted_since: float | None = None
    longest_unready_weighted: float = 0.0


@dataclass(frozen=True)
class Step:
    """One poll of the deployment: what was asked, where its replicas are, which are Ready."""

    wanted: int
    placed: dict[str, int]
    ready: dict[str, int]

    @property
    def ready_total(self) -> int:
        return sum(self.ready.values())


def _secret(cluster: str) -> str:
    return f"{cluster}-kubeconfig"


def _in_e2e(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An example document moved to the scenario's namespace and fleet (its gateway, its clusters, its strategy)."""
    out = copy.deepcopy(dict(doc))
    if out["kind"] == "Namespace":
        out["metadata"]["name"] = NS
        return out
    out["metadata"]["namespace"] = NS
    if out["kind"] == "ModelDeployment":
        out["spec"]["clusterSelector"] = {"matchLabels": {"modelplane.ai/fleet": NS}}
        out["spec"]["placement"] = {"strategy": "CostOptimized"}
        assert out["spec"]["workers"]["topology"] == {"tensor": 1}, "PRICES assumes one GPU per replica"
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


def _cluster_doc(name: str) -> dict[str, Any]:
    (doc,) = (
        d for d in _docs(HERE / "platform.yaml") if d["kind"] == "InferenceCluster" and d["metadata"]["name"] == name
    )
    return doc


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
    up: Scaling | None = None
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
        if up is not None and up.steps:
            NOTES.append("autoscaling steps: " + " | ".join(up.steps))
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


def _cost(deployment: Mapping[str, Any]) -> str:
    cost = deployment.get("status", {}).get("cost") or {}
    return f"{cost['perHour']} {cost.get('currency', '')}/h" if "perHour" in cost else "none"


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


def _time_unready_weighted(up: Scaling, weights: Mapping[str, int], ready_per_cluster: Mapping[str, int]) -> None:
    """Time how long the route keeps a weight on a cluster none of whose replicas is Ready (printed, not asserted)."""
    now = time.monotonic()
    unready = [
        c for c in CLUSTERS if weights.get(pool_endpoint_name(DEPLOYMENT, c), 0) > 0 and not ready_per_cluster.get(c)
    ]
    if unready and up.unready_weighted_since is None:
        up.unready_weighted_since = now
    elif not unready:
        up.unready_weighted_since = None
    if up.unready_weighted_since is not None:
        up.longest_unready_weighted = max(up.longest_unready_weighted, now - up.unready_weighted_since)


def _step(up: Scaling, phase: str, began: float) -> Step:
    """Record the state when it changed (in ``up.steps``) and return it."""
    kube = up.plane.kube
    deployment = xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}
    replicas = _serving(kube)
    step = Step(
        wanted=int(deployment.get("spec", {}).get("replicas", -1)),
        placed=_per_cluster(replicas, only_ready=False),
        ready=_per_cluster(replicas, only_ready=True),
    )
    signal = up.prometheus.value(
        f'max({QUEUE_PER_READY_REPLICA}{{namespace="{NS}",modelplane_deployment="{DEPLOYMENT}"}})'
    )
    weights = _weights(kube)
    _time_unready_weighted(up, weights, step.ready)
    state = (
        f"spec.replicas {step.wanted}, replicas per cluster {step.placed}, Ready {step.ready}, "
        f"route weights {weights}, status.cost {_cost(deployment)}"
    )
    if not up.steps or not up.steps[-1].endswith(state):
        queue = "none" if signal is None else f"{signal:g}"
        up.steps.append(f"{phase} +{time.monotonic() - began:.1f}s: queue/Ready replica {queue}; {state}")
    return step


def _wait_cost(kube: Kube, per_cluster: Mapping[str, int]) -> None:
    """Wait for status.cost to be what ``per_cluster`` replicas cost at the fleet's prices (it follows placement)."""
    want = sum((PRICES[c] * n for c, n in per_cluster.items()), Decimal(0))

    def cost() -> bool:
        found = (xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}).get("status", {}).get("cost") or {}
        return found.get("currency") == "USD" and Decimal(found.get("perHour", "-1")) == want

    eventually(f"status.cost.perHour {want} USD for {dict(per_cluster)}", cost)


def _grow_cheap_pool(kube: Kube) -> None:
    """The cheap cluster's reserved pool comes online with ``CHEAP_NODES`` nodes (as a cloud's node pool grows)."""
    doc = _cluster_doc(CHEAP)
    (pool,) = doc["spec"]["nodePools"]
    assert pool["nodeCount"] == 0, "the scenario expects the cheap pool to start empty"
    pool["nodeCount"] = CHEAP_NODES
    kube.kubectl(["apply", "-f", "-"], stdin=yaml.safe_dump(doc))

    def declared() -> bool:
        status = (xr(kube, "InferenceCluster", CHEAP) or {}).get("status", {})
        pools = status.get("capacity", {}).get("pools") or []
        return [p.get("declared") for p in pools] == [CHEAP_NODES]

    eventually(f"InferenceCluster {CHEAP} declaring {CHEAP_NODES} GPUs", declared, SCALE_TIMEOUT)


def test_keda_scales_up_onto_the_cheapest_cluster_first(scaling: Scaling) -> None:
    kube = scaling.plane.kube
    assert PRICES[CHEAP] < PRICES[DEAR]
    # 0. The one replica runs where there was room: the dear cluster. The cheap pool grows; it stays.
    assert _step(scaling, "start", time.monotonic()).placed == {DEAR: MIN}
    _wait_cost(kube, {DEAR: MIN})
    _grow_cheap_pool(kube)
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
    assert _step(scaling, "start", time.monotonic()).placed == {DEAR: MIN}, "a running replica moved"

    # 1. Load: KEDA asks for MAX; every new replica goes to the cheap cluster although the dear one has room.
    began = time.monotonic()
    scaling.engines.set_waiting(NS, DEPLOYMENT, LOAD)

    # A probe's exception only means "not yet" to eventually(): a broken rule ends the wait and is asserted after.
    broken: list[str] = []

    def up(*, settled: bool) -> bool:
        step = _step(scaling, "up", began)
        if step.placed.get(DEAR, 0) > MIN:
            broken.append(f"a new replica went to the dear cluster {DEAR}: {step}")
        return bool(broken) or (_settled(scaling, MAX) if settled else step.wanted == MAX)

    eventually(f"spec.replicas raised to {MAX}", lambda: up(settled=False), SCALE_TIMEOUT)
    assert not broken, "\n".join([*broken, "steps:", *scaling.steps])
    FIGURES["autoscaling: load -> spec.replicas raised to max (s)"] = round(time.monotonic() - began, 1)
    eventually(
        f"{MAX} Ready replicas, scraped, the route's weights following them", lambda: up(settled=True), SCALE_TIMEOUT
    )
    assert not broken, "\n".join([*broken, "steps:", *scaling.steps])
    FIGURES["autoscaling: load -> max replicas Ready and routed (s)"] = round(time.monotonic() - began, 1)
    expected = {DEAR: MIN, CHEAP: MAX - MIN}
    # Waited for, not read once: the settled wait above saw the weights follow, but a ModelReplica's Ready
    # has been seen to drop for ~200 ms right after (Crossplane core writing an XR's status from a stale
    # read, as far as the tier's timeline shows), and the route follows it: a read then fails a true claim.
    eventually(
        f"the Ready replicas {expected} and the route's weights following them",
        lambda: _per_cluster(_serving(kube), only_ready=True) == expected and _weights_follow(kube, expected),
        SCALE_TIMEOUT,
    )
    ready_per_cluster = expected
    deployment = xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}
    assert condition(deployment, "PlacementStrategy").get("reason") == "CostOptimized", condition(
        deployment, "PlacementStrategy"
    )
    new = [p for p in deployment["status"]["placements"] if p["cluster"] == CHEAP]
    assert [p.get("decidedBy") for p in new] == ["Cost"] * (MAX - MIN), new
    _wait_cost(kube, ready_per_cluster)
    NOTES.append(f"autoscaling: why a new replica went to {CHEAP}: {new[0].get('why')}")
    scaling.scaled_up = True


def test_scale_down_removes_the_costliest_replicas_first(scaling: Scaling) -> None:
    if not scaling.scaled_up:
        pytest.skip("needs the scale-up before it (test_keda_scales_up_onto_the_cheapest_cluster_first)")
    kube = scaling.plane.kube
    # 2. No load: KEDA lowers spec.replicas step by step to MIN. The dear replica leaves first (although it is
    # the oldest), no cheap one while it runs, and Ready never drops below MIN.
    began = time.monotonic()
    scaling.engines.set_waiting(NS, DEPLOYMENT, 0.0)
    lowest = MAX
    broken: list[str] = []

    def down() -> bool:
        nonlocal lowest
        step = _step(scaling, "down", began)
        lowest = min(lowest, step.ready_total)
        if step.ready_total < MIN:
            broken.append(f"only {step.ready_total} Ready while scaling down (bound {MIN}): {step}")
        if step.placed.get(DEAR, 0) and step.placed.get(CHEAP, 0) < MAX - MIN:
            broken.append(f"a replica on the cheap cluster {CHEAP} left before the one on {DEAR}: {step}")
        return bool(broken) or (step.wanted == MIN and _settled(scaling, MIN))

    eventually(f"spec.replicas lowered to {MIN}, the rest retired", down, SCALE_TIMEOUT)
    assert not broken, "\n".join([*broken, "steps:", *scaling.steps])
    FIGURES["autoscaling: no load -> min replicas, the rest retired (s)"] = round(time.monotonic() - began, 1)
    FIGURES["autoscaling: fewest Ready replicas while scaling down"] = float(lowest)
    FIGURES["autoscaling: longest the route weighted a cluster with no Ready replica (s)"] = round(
        scaling.longest_unready_weighted, 1
    )
    assert _per_cluster(_serving(kube), only_ready=True) == {CHEAP: MIN}
    _wait_cost(kube, {CHEAP: MIN})
    scaling.scaled_down = True


def _answers_503(kube: Kube) -> bool:
    """Whether the service's route sends every request to its 503 filter, with no backend, and it exists."""
    route = kube.get(*HTTP_ROUTE, DEPLOYMENT, NS) or {}
    rules = route.get("spec", {}).get("rules") or []
    refs = [f.get("extensionRef", {}) for rule in rules for f in rule.get("filters") or []]
    return (
        len(rules) == 1
        and not rules[0].get("backendRefs")
        and [r.get("kind") for r in refs] == ["HTTPRouteFilter"]
        and kube.get(*HTTP_ROUTE_FILTER, refs[0]["name"], NS) is not None
    )


def test_scaled_to_zero_answers_503_and_scales_back(scaling: Scaling) -> None:
    if not scaling.scaled_down:
        pytest.skip("needs the scale-down before it (test_scale_down_removes_the_costliest_replicas_first)")
    kube = scaling.plane.kube
    # KEDA keeps its minimum (1): without the ScaledObject, spec.replicas is the user's (kubectl scale).
    kube.delete(*SCALED_OBJECT, DEPLOYMENT, NS)
    eventually(
        "KEDA's HPA gone",
        lambda: kube.get("autoscaling/v2", "HorizontalPodAutoscaler", f"keda-hpa-{DEPLOYMENT}", NS) is None,
    )
    began = time.monotonic()
    kube.kubectl(["scale", "-n", NS, f"modeldeployment/{DEPLOYMENT}", "--replicas=0"])

    def at_zero() -> bool:
        deployment = xr(kube, "ModelDeployment", DEPLOYMENT, NS) or {}
        service = xr(kube, "ModelService", DEPLOYMENT, NS) or {}
        return (
            not _serving(kube)
            and condition(deployment, "Scheduled").get("reason") == "ScaledToZero"
            and condition(deployment, "Ready").get("status") == "True"
            and condition(service, "Routed").get("reason") == "NoEndpoints"
            and _answers_503(kube)
        )

    eventually("no replica left, ScaledToZero, the route answering 503", at_zero, SCALE_TIMEOUT)
    FIGURES["autoscaling: kubectl scale to 0 -> no replica, route answers 503 (s)"] = round(time.monotonic() - began, 1)
    _step(scaling, "zero", began)
    began = time.monotonic()
    kube.kubectl(["scale", "-n", NS, f"modeldeployment/{DEPLOYMENT}", f"--replicas={MIN}"])
    eventually(
        f"back from zero: {MIN} Ready replica, routed and scraped", lambda: _settled(scaling, MIN), SCALE_TIMEOUT
    )
    FIGURES["autoscaling: kubectl scale 0 -> 1, Ready and routed (s)"] = round(time.monotonic() - began, 1)
    _step(scaling, "from zero", began)
    assert not _answers_503(kube)
