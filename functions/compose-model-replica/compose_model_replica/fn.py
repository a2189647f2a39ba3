"""The ModelReplica function: compose one serving instance on its workload cluster.

Each call reads the replica's InferenceCluster and the InferenceClass of each
chosen pool through required resources, resolves the replica into pure
``ReplicaWork``, lets the cluster's backend and scheduler write the remote
objects, wraps each in a provider-kubernetes Object for that cluster, and lifts
the replica's status from what those Objects (and the replica's pods) observed.
When the cluster or a class cannot be read it keeps what it composed before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pydantic
import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_replica import current
from compose_model_replica.observe import pods_collection
from modelplane import protojson
from modelplane.backends import (
    ObservedRemote,
    Remote,
    RemoteStatus,
    ReplicaWork,
    UnknownBackendError,
    compose_remote,
    lift_status,
)
from modelplane.backends.resolve import ResolveError, resolve
from modelplane.backends.status import POD, REMOTE
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.keep import hold, keep_observed
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import InvalidXRError, invalid, parse_composite
from modelplane.kinds import API_VERSION
from modelplane.names import (
    DEPLOYMENT_LABEL,
    MAX_COLLECTION_NAME,
    OBSERVED_PODS_LABEL,
    REPLICA_LABEL,
    object_name,
    replica_host,
)
from modelplane.problems import Problem, describe
from modelplane.remote import OBJECT_API_VERSION, keep_on_delete, observed_manifest, wrap
from modelplane.schedulers import SchedulerSettingsError, UnknownSchedulerError
from modelplane.topology import TopologyError, replica_footprint
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica, Spec

CLUSTER = "cluster"
PODS = "pods"
PODS_KEY = "pods"  # composition key of the ObservedObjectCollection
# What the replica reads of the Objects carrying its remote objects, and of those carrying its pods.
_OBSERVED_REMOTE = {"status": {"atProvider": {"manifest": REMOTE}}}
_OBSERVED_POD = {"status": {"atProvider": {"manifest": POD}}}


def class_requirement(name: str) -> str:
    """The required-resource name under which the InferenceClass ``name`` is asked for."""
    return f"class-{name}"


class FunctionRunner(ComposeRunner):
    """Runs the ModelReplica function."""

    def __init__(self) -> None:
        """Create the runner."""
        super().__init__(compose)


def _undeployed(reason: Reason, message: str) -> Condition:
    return Condition(Type.DEPLOYED, Status.FALSE, reason, message)


@dataclass(frozen=True)
class _Replica:
    """The replica being composed: its model and its spec as written (templates pass through as dicts)."""

    model: ModelReplica
    name: str
    namespace: str
    spec: Mapping[str, Any]


def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, log: structlog.stdlib.BoundLogger) -> None:
    """Resolve the cluster and classes, compose the remote objects, then status and conditions."""
    try:
        xr = parse_composite(req, ModelReplica)
        if xr.spec is None or (problems := _shape_problems(xr.spec)):
            raise InvalidXRError(problems if xr.spec is not None else [Problem("spec", "required")])
    except InvalidXRError as err:
        hold(req, rsp, log, _undeployed(Reason.INVALID_SPEC, f"the ModelReplica is invalid: {err}"))
        return
    meta = xr.metadata
    # The spec as written, with every field the model checked (templates pass through as written).
    spec = xr.spec.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    replica = _Replica(xr, (meta.name if meta else None) or "", (meta.namespace if meta else None) or "", spec)
    _request(rsp, CLUSTER, "InferenceCluster", match_name=replica.spec["inferenceClusterRef"]["name"])
    pods_where = (replica.namespace, {OBSERVED_PODS_LABEL: replica.name})
    _request(rsp, PODS, "Object", api_version=OBJECT_API_VERSION, where=pods_where)
    try:
        footprint = replica_footprint(xr.spec) if xr.spec is not None else None
    except TopologyError as err:
        hold(req, rsp, log, _undeployed(Reason.INVALID_SPEC, str(err)))
        return
    if footprint is not None:
        _write_gpus(rsp, footprint)
    cluster = _cluster(req, rsp, log, replica)
    if cluster is None:
        return
    pools = {p.name: p.className for p in cluster.spec.nodePools or []} if cluster.spec else {}
    class_names = sorted({pools[p] for p in _pools(replica.spec) if p in pools})
    for name in class_names:
        _request(rsp, class_requirement(name), "InferenceClass", match_name=name)
    if not all(class_requirement(n) in req.required_resources for n in class_names):
        keep_observed(req, rsp)
        set_conditions(rsp, Condition(Type.DEPLOYED, Status.UNKNOWN, Reason.WAITING_FOR_CLUSTER, "reading the classes"))
        set_ready(rsp, ready=False)
        return
    classes = {n: c for n in class_names if (c := _first(req, class_requirement(n), InferenceClass)) is not None}
    cluster_dump = cluster.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    try:
        work = resolve(replica.name, replica.namespace, replica.spec, cluster_dump, classes, _labels(replica))
        remotes = compose_remote(
            work, cluster.spec.serving.backend or "" if cluster.spec and cluster.spec.serving else ""
        )
    except ResolveError as err:
        hold(req, rsp, log, _undeployed(err.reason, str(err)))
        return
    except (UnknownBackendError, UnknownSchedulerError, SchedulerSettingsError) as err:
        hold(req, rsp, log, _undeployed(Reason.UNSUPPORTED, str(err)))
        return
    provider_config = (
        cluster.status.providerConfigRef.name if cluster.status and cluster.status.providerConfigRef else ""
    )
    _write_desired(req, rsp, replica, remotes, provider_config or "")
    state = lift_status([r.key for r in remotes], _observed(req, rsp, remotes), _pods(req, rsp))
    lagging = _behind(req, rsp, remotes)
    if state.ready and lagging:
        # Ready, but about an older spec than the one composed now: not Ready until the change is served.
        state = replace(state, ready=False, reason="Updating", message="; ".join(lagging))
    address = cluster.status.gateway.address if cluster.status and cluster.status.gateway else None
    _write_status(rsp, work, state, address)


def _shape_problems(spec: Spec) -> list[Problem]:
    """The XRD's serving-shape rules, which the model does not check: exactly one shape, each field set."""
    unified = spec.nodeSelector is not None or spec.workers is not None or spec.poolName is not None
    if unified == (spec.prefill is not None or spec.decode is not None):
        message = "exactly one serving shape: unified (spec.nodeSelector, spec.workers, spec.poolName) or disaggregated"
        return [Problem("spec", message)]
    if not unified:
        missing = [r for r in ("prefill", "decode") if getattr(spec, r) is None]
        return [Problem(f"spec.{r}", "required with disaggregated serving") for r in missing]
    missing = [f for f in ("nodeSelector", "workers", "poolName") if getattr(spec, f) is None]
    return [Problem(f"spec.{f}", "required with unified serving") for f in missing]


def _request(
    rsp: fnv1.RunFunctionResponse,
    name: str,
    kind: str,
    *,
    api_version: str = API_VERSION,
    match_name: str = "",
    where: tuple[str, Mapping[str, str]] = ("", {}),
) -> None:
    """Ask for ``kind`` by name, or by labels (``where``: namespace and labels)."""
    selector = fnv1.ResourceSelector(api_version=api_version, kind=kind)
    if match_name:
        selector.match_name = match_name
    else:
        selector.match_labels.SetInParent()
        selector.match_labels.labels.update(where[1])
        if where[0]:
            selector.namespace = where[0]
    rsp.requirements.resources[name].CopyFrom(selector)


def _first_raw(req: fnv1.RunFunctionRequest, name: str) -> dict[str, Any] | None:
    items = req.required_resources[name].items if name in req.required_resources else []
    return protojson.struct_to_dict(items[0].resource) if items else None


def _first(req: fnv1.RunFunctionRequest, name: str, model: type[InferenceClass]) -> InferenceClass | None:
    raw = _first_raw(req, name)
    if raw is None:
        return None
    try:
        return model.model_validate(raw)
    except pydantic.ValidationError:
        return None


def _cluster(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, log: structlog.stdlib.BoundLogger, replica: _Replica
) -> InferenceCluster | None:
    """The replica's cluster, or None after keeping everything and saying why it cannot be used."""
    name = replica.spec["inferenceClusterRef"]["name"]
    if CLUSTER not in req.required_resources:
        keep_observed(req, rsp)
        set_conditions(rsp, Condition(Type.DEPLOYED, Status.UNKNOWN, Reason.WAITING_FOR_CLUSTER, "reading the cluster"))
        set_ready(rsp, ready=False)
        return None
    raw = _first_raw(req, CLUSTER)
    if raw is None:
        hold(
            req,
            rsp,
            log,
            _undeployed(Reason.CLUSTER_NOT_FOUND, f"spec.inferenceClusterRef: InferenceCluster {name} not found"),
        )
        return None
    try:
        cluster = InferenceCluster.model_validate(raw)
    except pydantic.ValidationError as err:
        message = f"spec.inferenceClusterRef: InferenceCluster {name} is invalid: {describe(invalid(err))}"
        hold(req, rsp, log, _undeployed(Reason.CLUSTER_NOT_READY, message))
        return None
    if cluster.status is None or cluster.status.providerConfigRef is None or not cluster.status.providerConfigRef.name:
        message = f"InferenceCluster {name} has not published status.providerConfigRef yet"
        hold(req, rsp, log, _undeployed(Reason.CLUSTER_NOT_READY, message))
        return None
    return cluster


def _pools(spec: Mapping[str, Any]) -> list[str]:
    if "poolName" in spec:
        return [str(spec["poolName"])]
    return [str(spec[r]["poolName"]) for r in ("prefill", "decode") if r in spec]


def _labels(replica: _Replica) -> dict[str, str]:
    labels = {REPLICA_LABEL: replica.name}
    deployment = replica.spec.get("deploymentRef", {}).get("name")
    if deployment:
        labels[DEPLOYMENT_LABEL] = str(deployment)
    return labels


def _write_desired(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    replica: _Replica,
    remotes: tuple[Remote, ...],
    provider_config: str,
) -> None:
    for remote in remotes:
        obj = wrap(
            remote.manifest,
            name=object_name(replica.name, remote.key),
            namespace=replica.namespace,
            provider_config=provider_config,
        )
        if remote.manifest.get("kind") == "Namespace":
            obj = keep_on_delete(obj)  # other replicas share it
        resource.update(rsp.desired.resources[remote.key], obj)
        ready = inputs.is_ready(req, rsp, remote.key)
        rsp.desired.resources[remote.key].ready = fnv1.READY_TRUE if ready else fnv1.READY_FALSE
    collection = pods_collection(
        name=object_name(replica.name, PODS_KEY, MAX_COLLECTION_NAME),
        namespace=replica.namespace,
        provider_config=provider_config,
        replica=replica.name,
    )
    resource.update(rsp.desired.resources[PODS_KEY], collection)
    rsp.desired.resources[PODS_KEY].ready = fnv1.READY_TRUE


def _observed(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, remotes: tuple[Remote, ...]
) -> list[ObservedRemote]:
    out = []
    for remote in remotes:
        observed = inputs.observed(req, rsp, remote.key, _OBSERVED_REMOTE)
        if observed is None:
            continue
        synced = inputs.observed_condition(req, rsp, remote.key, "Synced")
        error = (synced.message or synced.reason or "") if synced.status == "False" else ""
        out.append(ObservedRemote(remote.key, observed_manifest(observed), error))
    return out


def _behind(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, remotes: tuple[Remote, ...]) -> list[str]:
    """Why what is observed of each remote object may be about an older spec (``compose_model_replica.current``)."""
    out = []
    for remote in remotes:
        observed = inputs.observed(req, rsp, remote.key, current.OBJECT)
        why = current.behind(observed, remote.manifest) if observed is not None else ""
        if why:
            out.append(why)
    return out


def _pods(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> list[Mapping[str, Any]]:
    found = (observed_manifest(o) for o in inputs.required(req, rsp, PODS, _OBSERVED_POD))
    return [m for m in found if m is not None and m.get("kind") == "Pod"]


def _write_gpus(rsp: fnv1.RunFunctionResponse, footprint: Any) -> None:  # noqa: ANN401 - a ReplicaFootprint
    gpus: dict[str, Any] = {"total": footprint.total_gpus}
    for role, fp in footprint.roles:
        gpus[str(role)] = {
            "nodesPerWorker": fp.nodes_per_worker,
            "gpusPerNode": fp.gpus_per_node,
            "workers": fp.workers,
            "gpus": fp.total_gpus,
        }
    resource.update(rsp.desired.composite, {"status": {"gpus": gpus}})


def _write_status(rsp: fnv1.RunFunctionResponse, work: ReplicaWork, state: RemoteStatus, address: str | None) -> None:
    deployed = Status.TRUE if state.deployed else Status.FALSE
    set_conditions(rsp, Condition(Type.DEPLOYED, deployed, Reason(state.deployed_reason), state.deployed_message))
    # The remote reason is the remote system's word (ImagePullBackOff, Unschedulable...): report it as is.
    response.set_conditions(
        rsp,
        resource.Condition(
            typ=str(Type.SERVING),
            status=str(Status.TRUE if state.ready else Status.FALSE),
            reason=state.reason,
            message=state.message or None,
        ),
    )
    if state.ready and address:
        base = address if "://" in address else f"http://{address}"
        # Every replica of the cluster shares the gateway's address; the Host header picks this one.
        endpoint = {"url": base.rstrip("/") + "/", "host": replica_host(work.name, work.namespace)}
        # update() replaces top-level keys: keep the status.gpus written before.
        status = protojson.struct_to_dict(rsp.desired.composite.resource).get("status", {})
        resource.update(rsp.desired.composite, {"status": {**status, "endpoint": endpoint}})
    set_ready(rsp, ready=state.ready)
