"""The InferenceCluster function: the cluster, the ProviderConfigs that reach it, its ServingStack, its capacity.

For a cloud source (GKE, EKS, AKS) it composes the managed cluster and one
node pool per ``spec.nodePools[]`` entry, shaped by each pool's class, plus a
small system pool; for an Existing cluster it checks the kubeconfig Secret.
For every source it composes the provider-kubernetes and provider-helm
ClusterProviderConfigs that reach the cluster and the cluster's ServingStack,
and, with a KAI or Kueue scheduler, Observe-only Objects of the scheduler's
status objects whose figures become ``status.capacity``. A pool or input that
goes missing never drops what was composed: it is kept, and a condition says why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from compose_inference_cluster.capacity import (
    capacity_condition,
    cluster_pools,
    listed_replicas,
    overcommitted_condition,
)
from modelplane.capacity import summarize
from modelplane.capacity.adapters import scheduler_snapshot
from modelplane.capacity.kai import QUEUE as KAI_QUEUE
from modelplane.capacity.kueue import API_VERSION as KUEUE_API_VERSION
from modelplane.capacity.kueue import CLUSTER_QUEUE, RESOURCE_FLAVOR, flavor_names, flavors_whole
from modelplane.capacity.published import capacity_status, pool_classes
from modelplane.capacity.snapshot import PoolObservations, pool_observations
from modelplane.clusters import compose_cloud, plan_pools
from modelplane.clusters.types import pool_key
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.keep import hold, keep_observed
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import InvalidXRError, invalid, parse_composite
from modelplane.kinds import API_VERSION
from modelplane.names import (
    CANNOT_MOVE_ANNOTATION,
    CLUSTER_LABEL,
    CONTROL_PLANE_NAMESPACE,
    KUBECONFIG_KEY,
    bounded_name,
    cluster_label,
    kubeconfig_secret,
)
from modelplane.problems import Problem, describe
from modelplane.remote import Readiness, ReadinessRule, observed_manifest, wrap
from modelplane.shapes import METADATA, Shape
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster, Spec

CLASSES = Requirement("classes", API_VERSION, "InferenceClass")
REPLICAS = Requirement("replicas", API_VERSION, "ModelReplica")
KUBECONFIG = "kubeconfig"  # the required Secret of an Existing cluster

PROVIDER_CONFIG_KIND = "ClusterProviderConfig"
KUBERNETES_PC = ("kubernetes.m.crossplane.io/v1alpha1", "kubernetes-provider-config")
HELM_PC = ("helm.m.crossplane.io/v1beta1", "helm-provider-config")
STACK_KEY = "serving-stack"
QUEUE_KEY = "scheduler-queue"
FLAVOR_PREFIX = "scheduler-flavor-"
KAI_API_VERSION = "scheduling.run.ai/v2"
# What the function reads of its inputs besides the XR: class specs are validated by their model.
_CLASS: Shape = {"metadata": METADATA}
_STACK: Shape = {"status": {"gateway": {"address": str}}}
# Observe-only Objects never gate readiness: they only exist to carry the remote object's status back.
_OBSERVE = ReadinessRule(Readiness.SUCCESSFUL_CREATE)


class FunctionRunner(ComposeRunner):
    """Runs the InferenceCluster function."""

    def __init__(self) -> None:
        """Create the runner."""
        super().__init__(compose)


@dataclass(frozen=True)
class _Kubeconfig:
    """Where the cluster's kubeconfig is read from."""

    namespace: str
    name: str
    key: str


def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, log: structlog.stdlib.BoundLogger) -> None:
    """Resolve inputs, compose the cluster, its ProviderConfigs, stack and scheduler Objects, then status."""
    CLASSES.request(rsp)
    _request_replicas(req, rsp)
    read = _read_xr(req)
    if isinstance(read, list):
        message = f"invalid: {describe(read)}"
        hold(req, rsp, log, Condition(Type.PROVISIONED, Status.FALSE, Reason.INVALID_SPEC, message))
        return
    xr, name, spec = read
    source = str(spec.get("cluster", {}).get("source", ""))
    existing = spec.get("cluster", {}).get("existing", {}).get("secretRef", {})
    if source == "Existing":
        _request_secret(rsp, existing)
    fetched = (
        CLASSES.fetched(req)
        and REPLICAS.fetched(req)
        and (source != "Existing" or KUBECONFIG in req.required_resources)
    )
    if not fetched:
        # Crossplane answers the requirements and calls again: keep everything meanwhile.
        keep_observed(req, rsp)
        waiting = Condition(Type.PROVISIONED, Status.UNKNOWN, Reason.WAITING_FOR_INPUTS, "reading classes and secrets")
        set_conditions(rsp, waiting)
        set_ready(rsp, ready=False)
        return
    class_specs = _class_specs(req, rsp)
    if source == "Existing":
        kubeconfig = _Kubeconfig(existing["namespace"], existing["name"], existing.get("key", KUBECONFIG_KEY))
        provisioned = _existing_provisioned(req, kubeconfig)
    else:
        kubeconfig = _Kubeconfig(CONTROL_PLANE_NAMESPACE, kubeconfig_secret(name), KUBECONFIG_KEY)
        provisioned = _write_cloud(req, rsp, name, source, spec, class_specs)
    _write_provider_configs(req, rsp, name, kubeconfig)
    stack_ready, address = _write_stack(req, rsp, name, spec)
    objects = _write_scheduler_objects(req, rsp, name, spec.get("scheduler", {}))
    capacity, known, overcommitted = _capacity(req, rsp, xr, spec, objects, class_specs)
    drain = _drain(req, name) if spec.get("drain") is True else None
    status: dict[str, Any] = {
        # A draining cluster takes no new replicas, as kubectl drain cordons first.
        "cordoned": bool(spec.get("cordoned", False)) or spec.get("drain") is True,
        "providerConfigRef": {"name": name, "kind": PROVIDER_CONFIG_KIND},
        "capacity": capacity,
        **({"drain": drain} if drain is not None else {}),
    }
    if address:
        status["gateway"] = {"address": address}
    resource.update(rsp.desired.composite, {"status": status})
    stack = (
        Condition(Type.STACK_READY, Status.TRUE, Reason.AVAILABLE, f"ServingStack {name} is ready")
        if stack_ready
        else Condition(Type.STACK_READY, Status.FALSE, Reason.INSTALLING, f"ServingStack {name} is not ready yet")
    )
    set_conditions(rsp, provisioned, stack, known, _drained(drain), overcommitted)
    if provisioned.status != Status.TRUE and provisioned.reason != Reason.PROVISIONING:
        response.warning(rsp, f"{provisioned.reason}: {provisioned.message}")
    ready = provisioned.status == Status.TRUE and stack_ready
    set_ready(rsp, ready=ready)
    log.debug("composed", cluster=name, ready=ready, capacity_source=known.reason)


def _capacity(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    xr: InferenceCluster,
    spec: Mapping[str, Any],
    objects: Sequence[Mapping[str, Any]],
    class_specs: Mapping[str, InferenceClass],
) -> tuple[dict[str, Any], Condition, Condition]:
    """``status.capacity`` from the scheduler's observed ``objects`` and the replicas, and its two conditions."""
    scheduler = str(spec.get("scheduler", {}).get("type", "None"))
    classes = pool_classes(class_specs)
    pools = [str(p["name"]) for p in spec.get("nodePools") or []]
    device_classes = sorted({c.device_class for c in classes.values() if c.device_class})
    # Kueue without a ClusterQueue to observe has no figures of its own: capacity is the declared one.
    observable = scheduler != "Kueue" or bool(spec.get("scheduler", {}).get("kueue", {}).get("clusterQueueName"))
    snapshot = scheduler_snapshot(scheduler, objects, device_classes) if observable else None
    observations = pool_observations(snapshot, pools) if snapshot is not None else PoolObservations({})
    cluster = cluster_pools(xr, observations)
    replicas = listed_replicas(REPLICAS.structs(req), rsp, cluster.name)
    summary = summarize(cluster, {n: c.per_node for n, c in classes.items()}, replicas)
    known = capacity_condition(spec, classes, snapshot, observations)
    return capacity_status(cluster.pools, classes, summary), known, overcommitted_condition(summary)


def _read_xr(req: fnv1.RunFunctionRequest) -> tuple[InferenceCluster, str, dict[str, Any]] | list[Problem]:
    """The cluster, its name and its spec as written, every field checked by its model; or why it cannot be read."""
    try:
        xr = parse_composite(req, InferenceCluster)
    except InvalidXRError as err:
        return err.problems
    problems = _spec_problems(xr.spec)
    if problems or xr.spec is None:
        return problems
    name = xr.metadata.name if xr.metadata is not None and xr.metadata.name else ""
    return xr, name, xr.spec.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)


def _spec_problems(spec: Spec | None) -> list[Problem]:
    """What the XRD's rules refuse and the model does not check, among the fields this function needs."""
    if spec is None:
        return [Problem("spec", "required")]
    out = []
    source = spec.cluster.source
    if getattr(spec.cluster, source.lower()) is None:
        out.append(Problem(f"spec.cluster.{source.lower()}", f"required when spec.cluster.source is {source}"))
    if spec.scheduler is not None and spec.scheduler.type == "KAI" and spec.scheduler.kai is None:
        out.append(Problem("spec.scheduler.kai", "required when spec.scheduler.type is KAI"))
    return out


def _request_replicas(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
    """Ask for the ModelReplicas labelled with this cluster; while it drains, for every ModelReplica.

    A replica composed before its ModelDeployment wrote ``CLUSTER_LABEL`` (an upgrade of a running
    system) is not selected until that deployment's next reconcile labels it: capacity in use may
    read low until then, and converges. A drain must not be declared done on that: while
    ``spec.drain`` is set the whole fleet's list is read, as before the label, so ``_drain`` counts
    labelled or not. Either way each replica is matched by ``spec.inferenceClusterRef`` in place.
    """
    xr = req.observed.composite.resource
    spec = xr.fields.get("spec")
    drain = spec.struct_value.fields.get("drain") if spec is not None else None
    if drain is not None and drain.HasField("bool_value") and drain.bool_value:
        REPLICAS.request(rsp)
        return
    selector = fnv1.ResourceSelector(api_version=REPLICAS.api_version, kind=REPLICAS.kind)
    selector.match_labels.labels[CLUSTER_LABEL] = cluster_label(inputs.string_at(xr, "metadata", "name"))
    rsp.requirements.resources[REPLICAS.name].CopyFrom(selector)


def _request_secret(rsp: fnv1.RunFunctionResponse, ref: Mapping[str, Any]) -> None:
    selector = fnv1.ResourceSelector(
        api_version="v1", kind="Secret", match_name=str(ref.get("name", "")), namespace=str(ref.get("namespace", ""))
    )
    rsp.requirements.resources[KUBECONFIG].CopyFrom(selector)


def _existing_provisioned(req: fnv1.RunFunctionRequest, kubeconfig: _Kubeconfig) -> Condition:
    where = f"Secret {kubeconfig.namespace}/{kubeconfig.name}"
    found = req.required_resources.get(KUBECONFIG)
    if found is None or not found.items:
        return Condition(Type.PROVISIONED, Status.FALSE, Reason.KUBECONFIG_NOT_FOUND, f"{where} not found")
    # Only whether the key is there: a Secret's values are never converted, quoted or reported.
    secret = found.items[0].resource
    if not any(_has_key(secret, field, kubeconfig.key) for field in ("data", "stringData")):
        message = f"{where} has no key {kubeconfig.key!r}"
        return Condition(Type.PROVISIONED, Status.FALSE, Reason.KUBECONFIG_NOT_FOUND, message)
    return Condition(Type.PROVISIONED, Status.TRUE, Reason.PROVISIONED, f"reached through {where} key {kubeconfig.key}")


def _has_key(struct: structpb.Struct, field: str, key: str) -> bool:
    value = struct.fields.get(field)
    return value is not None and value.HasField("struct_value") and key in value.struct_value.fields


def _class_specs(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> dict[str, InferenceClass]:
    """The InferenceClasses with a spec that validates, by name (the others are reported and left out)."""
    out: dict[str, InferenceClass] = {}
    for item in inputs.required(req, rsp, CLASSES.name, _CLASS):
        name = item.get("metadata", {}).get("name")
        if not name:
            continue
        try:
            klass = InferenceClass.model_validate({"spec": item.get("spec")})
        except pydantic.ValidationError as err:
            inputs.report(rsp, f"InferenceClass {name}", invalid(err))
            continue
        if klass.spec is not None:
            out[str(name)] = klass
    return out


def _put(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: str, obj: Mapping[str, Any], *, gate: bool
) -> bool:
    """Desire ``obj`` under ``key``; return whether it is observed Ready (always True when it does not gate)."""
    resource.update(rsp.desired.resources[key], dict(obj))
    ready = inputs.is_ready(req, rsp, key) if gate else True
    rsp.desired.resources[key].ready = fnv1.READY_TRUE if ready else fnv1.READY_FALSE
    return ready


def _write_cloud(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    name: str,
    source: str,
    spec: Mapping[str, Any],
    classes: Mapping[str, InferenceClass],
) -> Condition:
    """Compose the cloud cluster and its pools; refused pools keep what was composed for them."""
    class_specs = {
        n: c.spec.model_dump(mode="json", by_alias=True, exclude_unset=True) for n, c in classes.items() if c.spec
    }
    plans, problems = plan_pools(source, spec.get("nodePools") or [], class_specs)
    settings = spec.get("cluster", {}).get(source.lower(), {})
    cloud = compose_cloud(source, name=name, namespace=CONTROL_PLANE_NAMESPACE, settings=settings, pools=plans)
    waiting = [
        f"{obj['kind']} {obj['metadata']['name']}"
        for key, obj in sorted(cloud.resources.items())
        if not _put(req, rsp, key, obj, gate=True)
    ]
    keep_observed(req, rsp, [pool_key(p.pool) for p in problems])
    if problems:
        reason = Reason(problems[0].reason)
        message = "; ".join(f"pool {p.pool} is not provisioned: {p.message}" for p in problems)
        return Condition(Type.PROVISIONED, Status.FALSE, reason, message)
    if waiting:
        return Condition(Type.PROVISIONED, Status.FALSE, Reason.PROVISIONING, f"waiting for {', '.join(waiting)}")
    return Condition(
        Type.PROVISIONED, Status.TRUE, Reason.PROVISIONED, f"{source} cluster and {len(plans)} pool(s) ready"
    )


def _write_provider_configs(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, name: str, kubeconfig: _Kubeconfig
) -> None:
    credentials = {
        "source": "Secret",
        "secretRef": {"namespace": kubeconfig.namespace, "name": kubeconfig.name, "key": kubeconfig.key},
    }
    for api_version, key in (KUBERNETES_PC, HELM_PC):
        obj = {
            "apiVersion": api_version,
            "kind": PROVIDER_CONFIG_KIND,
            "metadata": {"name": name},
            "spec": {"credentials": credentials},
        }
        _put(req, rsp, key, obj, gate=False)


def _write_stack(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, name: str, spec: Mapping[str, Any]
) -> tuple[bool, str]:
    """Compose the ServingStack; return whether it is Ready and the gateway address it reports."""
    stack = {
        "apiVersion": API_VERSION,
        "kind": "ServingStack",
        "metadata": {"name": name},
        "spec": {
            "providerConfigRef": {"name": name, "kind": PROVIDER_CONFIG_KIND},
            "backend": str(spec.get("serving", {}).get("backend", "KServe")),
            "scheduler": {"type": str(spec.get("scheduler", {}).get("type", "None"))},
        },
    }
    ready = _put(req, rsp, STACK_KEY, stack, gate=True)
    observed = inputs.observed(req, rsp, STACK_KEY, _STACK)
    return ready, str(((observed or {}).get("status", {}).get("gateway") or {}).get("address") or "")


def _observed_manifest(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    key: str,
    shape: Shape,
    problems: list[Problem] | None = None,
) -> Mapping[str, Any] | None:
    observed = inputs.observed(req, rsp, key, {"status": {"atProvider": {"manifest": shape}}}, problems)
    return observed_manifest(observed) if observed is not None else None


def _write_scheduler_objects(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, name: str, scheduler: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """Compose Observe-only Objects of the scheduler's status objects; return what they observed."""
    kind = str(scheduler.get("type", "None"))
    shapes: dict[str, Shape] = {}
    if kind == "KAI":
        queue = {"apiVersion": KAI_API_VERSION, "kind": "Queue", "metadata": {"name": scheduler["kai"]["queue"]}}
        manifests = {QUEUE_KEY: (bounded_name(f"{name}-kai-queue", 253), queue)}
        shapes[QUEUE_KEY] = KAI_QUEUE
    elif kind == "Kueue" and scheduler.get("kueue", {}).get("clusterQueueName"):
        cq_name = scheduler["kueue"]["clusterQueueName"]
        cq = {"apiVersion": KUEUE_API_VERSION, "kind": "ClusterQueue", "metadata": {"name": cq_name}}
        manifests = {QUEUE_KEY: (bounded_name(f"{name}-kueue-clusterqueue", 253), cq)}
        shapes[QUEUE_KEY] = CLUSTER_QUEUE
        unread: list[Problem] = []
        seen = _observed_manifest(req, rsp, QUEUE_KEY, CLUSTER_QUEUE, unread)
        # Flavors are known once the ClusterQueue is observed and read whole; until then keep any observed before.
        flavors = flavor_names(seen) if seen is not None else []
        for flavor in flavors:
            manifest = {"apiVersion": KUEUE_API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor}}
            key = FLAVOR_PREFIX + flavor
            manifests[key] = (bounded_name(f"{name}-kueue-flavor-{flavor}", 253), manifest)
            shapes[key] = RESOURCE_FLAVOR
        if seen is None or unread or not flavors_whole(seen):
            kept = [k for k in req.observed.resources if k.startswith(FLAVOR_PREFIX) and k not in manifests]
            keep_observed(req, rsp, kept)
    else:
        return []
    out: list[Mapping[str, Any]] = []
    for key, (object_name, manifest) in sorted(manifests.items()):
        obj = wrap(
            manifest,
            name=object_name,
            namespace=CONTROL_PLANE_NAMESPACE,
            provider_config=name,
            readiness=_OBSERVE,
            observe_only=True,
        )
        _put(req, rsp, key, obj, gate=False)
        seen_manifest = _observed_manifest(req, rsp, key, shapes[key])
        if seen_manifest is not None:
            out.append(seen_manifest)
    return out


_LISTED_DEPLOYMENTS = 32


def _drain(req: fnv1.RunFunctionRequest, cluster: str) -> dict[str, Any]:
    """A drain's progress: the ModelReplicas on ``cluster``, their ModelDeployments, and which cannot move and why.

    Why comes from the ``cannot-move`` annotation a ModelDeployment sets on a replica whose
    replacement cannot be placed: the replicas this function already lists, nothing more.
    """
    remaining = 0
    deployments: set[str] = set()
    stuck: dict[str, tuple[int, str]] = {}
    for struct in REPLICAS.structs(req):
        if inputs.string_at(struct, "spec", "inferenceClusterRef", "name") != cluster:
            continue
        remaining += 1
        owner = inputs.string_at(struct, "spec", "deploymentRef", "name")
        if not owner:
            continue
        key = f"{inputs.string_at(struct, 'metadata', 'namespace') or ''}/{owner}"
        deployments.add(key)
        why = inputs.string_at(struct, "metadata", "annotations", CANNOT_MOVE_ANNOTATION)
        if why:
            count, first = stuck.get(key, (0, why))
            stuck[key] = (count + 1, min(first, why))
    out: dict[str, Any] = {"remaining": remaining, "deployments": sorted(deployments)[:_LISTED_DEPLOYMENTS]}
    if stuck:
        out["blocked"] = [
            {"deployment": key, "replicas": count, "reason": why}
            for key, (count, why) in sorted(stuck.items())[:_LISTED_DEPLOYMENTS]
        ]
    return out


def _drained(drain: Mapping[str, Any] | None) -> Condition:
    """Drained: True once nothing remains; False while replicas remain, naming those that cannot move and why."""
    if drain is None:
        return Condition(Type.DRAINED, Status.FALSE, Reason.NOT_DRAINING, "spec.drain is not set")
    remaining = int(drain["remaining"])
    if not remaining:
        return Condition(Type.DRAINED, Status.TRUE, Reason.DRAINED, "no ModelReplica remains on the cluster")
    head = f"{remaining} ModelReplica(s) remain, of {', '.join(drain['deployments'])}"
    blocked = drain.get("blocked") or []
    if not blocked:
        return Condition(Type.DRAINED, Status.FALSE, Reason.DRAINING, f"{head}: moving a wave at a time")
    why = "; ".join(f"{b['deployment']} ({b['replicas']}): {b['reason']}" for b in blocked)
    return Condition(Type.DRAINED, Status.FALSE, Reason.DRAIN_BLOCKED, f"{head}; cannot move: {why}")
