"""The ModelReplica function: compose one serving instance on its workload cluster.

Each call reads the replica's InferenceCluster and the InferenceClass of each
chosen pool through required resources, resolves the replica into pure
``ReplicaWork``, lets the cluster's backend and scheduler write the remote
objects, wraps each in a provider-kubernetes Object for that cluster, and lifts
the replica's status from what those Objects (and the replica's pods) observed.
When the cluster or a class cannot be read it keeps what it composed before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pydantic
import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf.struct_pb2 import Struct

from compose_model_replica import current
from compose_model_replica.cache import CACHE, read_cache
from compose_model_replica.observe import pods_collection
from modelplane import protojson
from modelplane.backends import (
    ObservedRemote,
    Remote,
    RemoteStatus,
    ReplicaWork,
    UnknownBackendError,
    UnsupportedModelUriError,
    compose_remote,
    lift_status,
)
from modelplane.backends.monitor import metrics_warning
from modelplane.backends.resolve import ResolveError, resolve
from modelplane.backends.status import POD, REMOTE
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep, wait
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.kinds import API_VERSION
from modelplane.memo import once
from modelplane.modelcache.use import KSERVE, CacheUse
from modelplane.names import (
    DEPLOYMENT_LABEL,
    MAX_COLLECTION_NAME,
    OBSERVED_PODS_LABEL,
    PODS_KEY,
    REPLICA_LABEL,
    object_name,
    replica_host,
)
from modelplane.problems import Problem, describe, invalid
from modelplane.remote import OBJECT_API_VERSION, keep_on_delete, observed_manifest, wrap
from modelplane.routing.picker import InvalidPickerConfigError
from modelplane.schedulers import SchedulerSettingsError, UnknownSchedulerError
from modelplane.topology import TopologyError, replica_footprint
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

CLUSTER = Requirement("cluster", API_VERSION, "InferenceCluster")
PODS = Requirement("pods", OBJECT_API_VERSION, "Object")
# What the replica reads of the Objects carrying its remote objects, and of those carrying its pods.
_OBSERVED_REMOTE = {"status": {"atProvider": {"manifest": REMOTE}}}
_OBSERVED_POD = {"status": {"atProvider": {"manifest": POD}}}


# Every InferenceClass, asked for with the cluster: the classes a replica needs are named by its
# cluster's pools, and asking for them by name only once the cluster is read costs a third call
# to the function on every reconcile. A fleet has a handful of classes.
CLASSES = Requirement("classes", API_VERSION, "InferenceClass")


def _undeployed(reason: Reason, message: str) -> Condition:
    return Condition(Type.DEPLOYED, Status.FALSE, reason, message)


@dataclass(frozen=True)
class _Replica:
    """The replica being composed: its model and its spec as written (templates pass through as dicts)."""

    model: ModelReplica
    name: str
    namespace: str
    spec: Mapping[str, Any]


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Resolve the cluster and classes, compose the remote objects, then status and conditions."""
    xr = parse_or_keep(ledger, log, ModelReplica, _invalid, _shape_problems)
    if xr is None or xr.spec is None:
        return
    # The spec as written, with every field the model checked (templates pass through as written).
    spec = xr.spec.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    replica = _Replica(xr, name_of(xr), namespace_of(xr), spec)
    CLUSTER.request(rsp, name=replica.spec["inferenceClusterRef"]["name"])
    CLASSES.request(rsp)
    PODS.request(rsp, labels={OBSERVED_PODS_LABEL: replica.name}, namespace=replica.namespace)
    if "modelCache" in replica.spec:
        CACHE.request(rsp, name=replica.spec["modelCache"]["name"], namespace=replica.namespace)
    try:
        footprint = replica_footprint(xr.spec)
    except TopologyError as err:
        keep_all(ledger, log, _undeployed(Reason.INVALID_SPEC, str(err)))
        return
    _write_gpus(rsp, footprint)
    cluster = _cluster(req, ledger, log, replica)
    if cluster is None:
        return
    written = [{"name": p.name, "className": p.className} for p in cluster.spec.nodePools or []] if cluster.spec else []
    node_pools = [*written, *_kept_pools(cluster)]
    pools = {p["name"]: p["className"] for p in node_pools}
    class_names = sorted({pools[p] for p in _pools(replica.spec) if p in pools})
    backend = cluster.spec.serving.backend or "" if cluster.spec and cluster.spec.serving else ""
    use = _classes_and_cache(req, ledger, log, replica, needs_classes=bool(class_names), backend=backend)
    if use is None:
        return
    classes = _classes(req, set(class_names))
    cluster_dump = cluster.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)
    cluster_dump.setdefault("spec", {})["nodePools"] = node_pools
    try:
        work = resolve(replica.name, replica.namespace, replica.spec, cluster_dump, classes, _labels(replica))
        remotes = compose_remote(replace(work, cache=use.mount, model_uri=use.model_uri), backend)
    except (ResolveError, InvalidPickerConfigError) as err:
        reason = err.reason if isinstance(err, ResolveError) else Reason.INVALID_SPEC
        keep_all(ledger, log, _undeployed(reason, str(err)))
        if reason == Reason.POOL_NOT_FOUND:
            _still_serving(req, rsp, replica, cluster)
        return
    except (UnknownBackendError, UnknownSchedulerError, SchedulerSettingsError, UnsupportedModelUriError) as err:
        keep_all(ledger, log, _undeployed(Reason.UNSUPPORTED, str(err)))
        return
    unmonitored = metrics_warning(work)
    if unmonitored is not None:
        response.warning(rsp, unmonitored)
    provider_config = (
        cluster.status.providerConfigRef.name if cluster.status and cluster.status.providerConfigRef else ""
    )
    _write_desired(ledger, replica, remotes, provider_config or "")
    state = lift_status([r.key for r in remotes], _observed(req, rsp, remotes), _pods(req, rsp))
    lagging = _behind(req, rsp, remotes)
    if state.ready and lagging:
        # Ready, but about an older spec than the one composed now: not Ready until the change is served.
        state = replace(state, ready=False, reason="Updating", message="; ".join(lagging))
    _write_status(rsp, work, state, _gateway_endpoint(cluster))


FunctionRunner = functools.partial(ComposeRunner, compose)


def _still_serving(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, replica: _Replica, cluster: InferenceCluster
) -> None:
    """Whether a replica kept as composed, its pool gone from its cluster's spec, still serves, as observed.

    Its workload runs on until its ModelDeployment has moved it (the cluster keeps a pool out of its
    spec while replicas run there); reporting it not Ready for its pool alone would let a rollout
    retire it before its replacement serves.
    """
    keys = sorted(k for k in req.observed.resources if k != PODS_KEY)
    observed = []
    for key in keys:
        found = inputs.observed(req, rsp, key, _OBSERVED_REMOTE)
        if found is not None:
            observed.append(ObservedRemote(key, observed_manifest(found), ""))
    state = lift_status(keys, observed, _pods(req, rsp)) if keys else None
    if state is None or not state.ready:
        return
    response.set_conditions(
        rsp, resource.Condition(typ=str(Type.SERVING), status=str(Status.TRUE), reason=state.reason)
    )
    gateway = _gateway_endpoint(cluster)
    if gateway:
        endpoint = {**gateway, "host": replica_host(replica.name, replica.namespace)}
        status = protojson.struct_to_dict(rsp.desired.composite.resource).get("status", {})
        resource.update(rsp.desired.composite, {"status": {**status, "endpoint": endpoint}})
    set_ready(rsp, ready=True)


def _kept_pools(cluster: InferenceCluster) -> list[dict[str, str]]:
    """Pools out of the cluster's spec that it keeps while replicas run there, with their class (when published).

    A replica on such a pool goes on running, and serving, until its ModelDeployment has moved it.
    """
    listed = cluster.spec.nodePools or [] if cluster.spec else []
    in_spec = {p.name for p in listed}
    kept = cluster.status.removingPools or [] if cluster.status else []
    return [{"name": p.name, "className": p.className} for p in kept if p.className and p.name not in in_spec]


def _classes_and_cache(
    req: fnv1.RunFunctionRequest,
    ledger: Ledger,
    log: structlog.stdlib.BoundLogger,
    replica: _Replica,
    *,
    needs_classes: bool,
    backend: str,
) -> CacheUse | None:
    """How the replica uses its ModelCache; None (having said why) while an input is not fetched, or it waits."""
    if needs_classes and not CLASSES.fetched(req):
        wait(ledger, log, Type.DEPLOYED, Reason.WAITING_FOR_CLUSTER, "reading the classes")
        return None
    if "modelCache" in replica.spec and not CACHE.fetched(req):
        wait(ledger, log, Type.DEPLOYED, Reason.WAITING_FOR_CLUSTER, "reading the ModelCache")
        return None
    cluster_name = replica.spec["inferenceClusterRef"]["name"]
    use = read_cache(req, replica.spec, cluster_name=cluster_name, backend=backend or KSERVE)
    if use.unmounted:
        response.warning(ledger.rsp, f"spec.modelCache: {use.unmounted}")
    if use.waiting:
        _wait_for_cache(ledger, log, use.waiting)
        return None
    return use


def _wait_for_cache(ledger: Ledger, log: structlog.stdlib.BoundLogger, why: str) -> None:
    """Compose no workload until the cache's copy on the cluster is Ready (nothing is composed yet to keep)."""
    ledger.keep_all(why)
    log.info("waiting for the model cache", message=why)
    set_conditions(ledger.rsp, _undeployed(Reason.CACHE_NOT_READY, why))
    response.set_conditions(
        ledger.rsp,
        resource.Condition(typ=str(Type.SERVING), status=str(Status.FALSE), reason=str(Reason.CACHE_NOT_READY)),
    )
    set_ready(ledger.rsp, ready=False)


def _invalid(problems: list[Problem]) -> Condition:
    return _undeployed(Reason.INVALID_SPEC, f"the ModelReplica is invalid: {describe(problems)}")


def _shape_problems(xr: ModelReplica) -> list[Problem]:
    """The XRD's serving-shape rules, which the model does not check: exactly one shape, each field set."""
    spec = xr.spec
    if spec is None:
        return [Problem("spec", "required")]
    unified = spec.nodeSelector is not None or spec.workers is not None or spec.poolName is not None
    if unified == (spec.prefill is not None or spec.decode is not None):
        message = "exactly one serving shape: unified (spec.nodeSelector, spec.workers, spec.poolName) or disaggregated"
        return [Problem("spec", message)]
    if not unified:
        missing = [r for r in ("prefill", "decode") if getattr(spec, r) is None]
        return [Problem(f"spec.{r}", "required with disaggregated serving") for r in missing]
    missing = [f for f in ("nodeSelector", "workers", "poolName") if getattr(spec, f) is None]
    return [Problem(f"spec.{f}", "required with unified serving") for f in missing]


def _classes(req: fnv1.RunFunctionRequest, names: set[str]) -> dict[str, InferenceClass]:
    """The readable InferenceClasses among ``names``; a missing or unreadable one is left out."""
    out = {}
    for struct in CLASSES.structs(req):
        name = struct.fields["metadata"].struct_value.fields["name"].string_value if "metadata" in struct.fields else ""
        if name not in names or name in out:
            continue
        klass = _once(_CLASSES, struct, _read_class)
        if klass is not None:
            out[name] = klass
    return dict(sorted(out.items()))


def _read_class(struct: Struct) -> InferenceClass | None:
    """The class's model; None when it does not validate."""
    try:
        return InferenceClass.model_validate(protojson.struct_to_dict(struct))
    except pydantic.ValidationError:
        return None


def _cluster(
    req: fnv1.RunFunctionRequest, ledger: Ledger, log: structlog.stdlib.BoundLogger, replica: _Replica
) -> InferenceCluster | None:
    """The replica's cluster, or None after keeping everything and saying why it cannot be used."""
    name = replica.spec["inferenceClusterRef"]["name"]
    if not CLUSTER.fetched(req):
        wait(ledger, log, Type.DEPLOYED, Reason.WAITING_FOR_CLUSTER, "reading the cluster")
        return None
    found = CLUSTER.first(req)
    if found is None:
        message = f"spec.inferenceClusterRef: InferenceCluster {name} not found"
        keep_all(ledger, log, _undeployed(Reason.CLUSTER_NOT_FOUND, message))
        return None
    cluster = _read_cluster(found)
    if isinstance(cluster, str):
        message = f"spec.inferenceClusterRef: InferenceCluster {name} is invalid: {cluster}"
        keep_all(ledger, log, _undeployed(Reason.CLUSTER_NOT_READY, message))
        return None
    if cluster.status is None or cluster.status.providerConfigRef is None or not cluster.status.providerConfigRef.name:
        message = f"InferenceCluster {name} has not published status.providerConfigRef yet"
        keep_all(ledger, log, _undeployed(Reason.CLUSTER_NOT_READY, message))
        return None
    return cluster


# Each cluster and class as read, by its exact bytes (which pin all that is read): a cluster's replicas read
# it at every call, mostly unchanged, and every replica reads the fleet's few classes. The models are
# shared: read, never changed. Each cache starts again past ``_MAX_READ`` entries.
_CLUSTERS: dict[bytes, InferenceCluster | str] = {}
_CLASSES: dict[bytes, InferenceClass | None] = {}
_MAX_READ = 1024
R = TypeVar("R")


def _once(cache: dict[bytes, R], struct: Struct, read: Callable[[Struct], R]) -> R:
    """``read(struct)``, once per distinct ``struct`` (while ``cache`` remembers it)."""
    return once(cache, struct.SerializeToString(), functools.partial(read, struct), _MAX_READ)


def _read_cluster(struct: Struct) -> InferenceCluster | str:
    """The cluster's model, or what makes it invalid; once per distinct cluster."""
    return _once(_CLUSTERS, struct, _validate_cluster)


def _validate_cluster(struct: Struct) -> InferenceCluster | str:
    try:
        return InferenceCluster.model_validate(protojson.struct_to_dict(struct))
    except pydantic.ValidationError as err:
        return describe(invalid(err))


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


def _write_desired(ledger: Ledger, replica: _Replica, remotes: tuple[Remote, ...], provider_config: str) -> None:
    for remote in remotes:
        obj = wrap(
            remote.manifest,
            name=object_name(replica.name, remote.key),
            namespace=replica.namespace,
            provider_config=provider_config,
        )
        if remote.manifest.get("kind") == "Namespace":
            obj = keep_on_delete(obj)  # other replicas share it
        ledger.put(remote.key, obj, ready=inputs.ready(ledger.req, ledger.rsp, remote.key).true)
    collection = pods_collection(
        name=object_name(replica.name, PODS_KEY, MAX_COLLECTION_NAME),
        namespace=replica.namespace,
        provider_config=provider_config,
        replica=replica.name,
    )
    ledger.put(PODS_KEY, collection, ready=True)
    # Its remote objects follow from its spec and its cluster's backend and scheduler, all read whole by now:
    # an object they no longer call for (another backend, scheduler or serving shape) is not wanted.
    ledger.remove_unwritten(lambda _: True, lambda key: f"{key}: the replica no longer composes it")


def _observed(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, remotes: tuple[Remote, ...]
) -> list[ObservedRemote]:
    out = []
    for remote in remotes:
        observed = inputs.observed(req, rsp, remote.key, _OBSERVED_REMOTE)
        if observed is None:
            continue
        synced = inputs.ready(req, rsp, remote.key, "Synced")
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
    found = (observed_manifest(o) for o in inputs.required(req, rsp, PODS.name, _OBSERVED_POD))
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


def _gateway_endpoint(cluster: InferenceCluster) -> dict[str, Any] | None:
    """Where the cluster's gateway is reached (``url``) and how it is verified (``tls``); None when unknown.

    A cluster status written before TLS has only ``address``, which its gateway served over plain HTTP.
    """
    gateway = cluster.status.gateway if cluster.status else None
    if gateway is None:
        return None
    if gateway.url:
        out: dict[str, Any] = {"url": gateway.url.rstrip("/") + "/"}
        tls = gateway.tls
        if gateway.url.startswith("https://") and tls is not None and tls.caSecretRef is not None:
            out["tls"] = {
                "caSecretRef": {"name": tls.caSecretRef.name, "namespace": tls.caSecretRef.namespace},
                "hostname": tls.hostname,
            }
        return out
    if gateway.address:
        base = gateway.address if "://" in gateway.address else f"http://{gateway.address}"
        return {"url": base.rstrip("/") + "/"}
    return None


def _write_status(
    rsp: fnv1.RunFunctionResponse, work: ReplicaWork, state: RemoteStatus, gateway: dict[str, Any] | None
) -> None:
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
    if state.ready and gateway:
        # Every replica of the cluster shares the gateway's address; the Host header picks this one.
        endpoint = {**gateway, "host": replica_host(work.name, work.namespace)}
        # update() replaces top-level keys: keep the status.gpus written before.
        status = protojson.struct_to_dict(rsp.desired.composite.resource).get("status", {})
        resource.update(rsp.desired.composite, {"status": {**status, "endpoint": endpoint}})
    set_ready(rsp, ready=state.ready)
