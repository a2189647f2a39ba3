"""The ModelCache function: stage a model's weights on the clusters that keep a copy, and say how far each got.

Each call reads every InferenceCluster and the ModelReplicas that use the cache (``fleet``), decides
which clusters keep a copy (``modelplane.modelcache.targets``), composes each copy's objects in
provider-kubernetes Objects on its cluster (``copies``), and lifts each copy's phase from its
observed hydration Job or LocalModelCache into ``status.clusters``. A copy a replica may still
mount is kept as it is; an input that is missing or unreadable keeps what was composed before.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_cache import copies, fleet
from compose_model_cache.fleet import Fleet
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import parse_or_keep, wait
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.modelcache.nodelocal import NodeLocalSourceError
from modelplane.modelcache.phase import CopyState, Phase
from modelplane.modelcache.storage import StorageClass, size_exceeds
from modelplane.modelcache.targets import Placement, targets
from modelplane.modelcache.work import (
    CacheWork,
    InvalidSizeError,
    StorageType,
    size_in_bytes,
    sources,
)
from modelplane.names import (
    CLUSTER_LABEL,
    HYDRATION_RETRY_ANNOTATION,
    MODEL_CACHE_LABEL,
    cache_claim_name,
    cache_key,
    cache_key_cluster,
    cache_label,
    cluster_label,
    object_name,
)
from modelplane.problems import Problem, describe
from modelplane.remote import keep_on_delete, wrap
from modelplane.scheduling.labels import label_selector
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_cache import ModelCache, Spec
from modelplane_models.model_deployment import ClusterSelector

# Why a cluster's copy is not composed as the spec asks, most pressing first (the Deployed condition names the first).
_PRECEDENCE = (
    Reason.UNSUPPORTED,
    Reason.SIZE_EXCEEDS_STORAGE,
    Reason.SECRET_NOT_FOUND,
    Reason.CLUSTER_NOT_FOUND,
    Reason.CLUSTER_NOT_READY,
    Reason.DEPLOYING,
)


@dataclass(frozen=True)
class _Copy:
    """One cluster's entry of ``status.clusters``, and why its objects are not all applied (None: they are)."""

    cluster: str
    state: CopyState
    issue: tuple[Reason, str] | None = None


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Decide the clusters, compose each copy, then status, the Deployed condition and readiness."""
    xr = parse_or_keep(ledger, log, ModelCache, _invalid, _problems)
    if xr is None or xr.spec is None:
        return
    name, namespace = name_of(xr), namespace_of(xr)
    fleet.request(rsp, name, namespace)
    work = _work(name, namespace, xr.spec, (xr.metadata.annotations if xr.metadata else None) or {})
    if not fleet.fetched(req):
        wait(ledger, log, Type.DEPLOYED, Reason.WAITING_FOR_CLUSTER, "reading the clusters and the cache's replicas")
        return
    found = fleet.read(req, rsp, name)
    observed = _observed_by_cluster(ledger)
    readable = {cluster_label(n) for n, c in found.clusters.items() if c is not None}
    selector = _selector(xr.spec)
    selected = [n for n, c in found.clusters.items() if c is not None and _selects(selector, c)]
    placement = Placement(xr.spec.placement or Placement.FOLLOW)
    decided = targets(placement, selected, found.users, found.unreadable_users, set(observed) - {""}, readable)
    staged = [
        _stage(ledger, work, found, cluster, observed.get(cluster_label(cluster), [])) for cluster in decided.clusters
    ]
    for kept in decided.kept:
        ledger.keep(observed[kept.label], kept.why)
        state = copies.best_observed(req, rsp, observed[kept.label])
        staged.append(_Copy(kept.cluster, CopyState(state.phase, kept.why, state.since)))
    for label in decided.removed:
        ledger.remove(observed[label], f"no cluster selection or replica keeps the copy on {label} any more")
    ledger.keep(observed.get("", []), "not a key compose-model-cache composes")
    _write_status(rsp, work, sorted(staged, key=lambda c: c.cluster))


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    return Condition(
        Type.DEPLOYED, Status.FALSE, Reason.INVALID_SPEC, f"the ModelCache is invalid: {describe(problems)}"
    )


def _problems(xr: ModelCache) -> list[Problem]:
    """The XRD's rules the model does not check: exactly one source, a size above zero, no image for NodeLocal."""
    spec = xr.spec
    if spec is None:
        return [Problem("spec", "required")]
    out = []
    if len(sources(spec)) != 1:
        out.append(Problem("spec.source", "must set exactly one of huggingFace, s3, http or oci"))
    try:
        size_in_bytes(spec.size)
    except InvalidSizeError as err:
        out.append(Problem("spec.size", str(err).removeprefix("spec.size: ")))
    if spec.source.oci is not None and spec.storage is not None and spec.storage.type == "NodeLocal":
        out.append(
            Problem("spec.source.oci", "needs storage type PVC (KServe's node-local copies cannot read an image)")
        )
    return out


def _work(name: str, namespace: str, spec: Spec, annotations: dict[str, str]) -> CacheWork:
    """The cache resolved (``_problems`` has checked the source and the size)."""
    storage = spec.storage
    pvc = storage.pvc if storage is not None else None
    return CacheWork(
        name=name,
        namespace=namespace,
        source=sources(spec)[0],
        size=spec.size,
        size_bytes=size_in_bytes(spec.size),
        storage=StorageType((storage.type if storage is not None else None) or StorageType.PVC),
        storage_class=(pvc.storageClassName if pvc is not None else None) or "",
        access_mode=(pvc.accessMode if pvc is not None else None) or "ReadOnlyMany",
        retry=annotations.get(HYDRATION_RETRY_ANNOTATION, ""),
    )


def _selector(spec: Spec) -> ClusterSelector | None:
    """``spec.clusterSelector`` as the scheduler's selector reads it; None when unset (it selects no cluster)."""
    if spec.clusterSelector is None:
        return None
    return ClusterSelector.model_validate(spec.clusterSelector.model_dump(mode="json", exclude_none=True))


def _selects(selector: ClusterSelector | None, cluster: InferenceCluster) -> bool:
    if selector is None:
        return False
    labels = (cluster.metadata.labels if cluster.metadata is not None else None) or {}
    return label_selector(selector).matches(labels)


def _observed_by_cluster(ledger: Ledger) -> dict[str, list[str]]:
    """The observed composition keys by the cluster label they are for ("" for a key of no cluster)."""
    out: dict[str, list[str]] = defaultdict(list)
    for key in sorted(ledger.req.observed.resources):
        out[cache_key_cluster(key) or ""].append(key)
    return dict(out)


@dataclass(frozen=True)
class _Blocked:
    """Why a cluster's copy cannot be composed now, and the phase that says so."""

    reason: Reason
    why: str
    phase: Phase = Phase.PENDING


def _usable(work: CacheWork, found: Fleet, cluster: str) -> InferenceCluster | _Blocked:
    """The cluster to compose the copy on, or why it cannot be."""
    if cluster not in found.clusters:
        return _Blocked(Reason.CLUSTER_NOT_FOUND, f"InferenceCluster {cluster} not found")
    ic = found.clusters[cluster]
    if ic is None:
        return _Blocked(Reason.CLUSTER_NOT_READY, f"InferenceCluster {cluster} cannot be read")
    if not _provider_config(ic):
        return _Blocked(
            Reason.CLUSTER_NOT_READY, f"InferenceCluster {cluster} has not published status.providerConfigRef yet"
        )
    if work.storage == StorageType.NODE_LOCAL and _backend(ic) != "KServe":
        backend = _backend(ic)
        why = f"spec.storage.type: NodeLocal needs a KServe cluster; InferenceCluster {cluster} serves with {backend}"
        return _Blocked(Reason.UNSUPPORTED, why, Phase.FAILED)
    too_large = size_exceeds(work, cluster, _storage_classes(ic))
    if too_large is not None:
        return _Blocked(Reason.SIZE_EXCEEDS_STORAGE, too_large, Phase.FAILED)
    return ic


def _storage_classes(cluster: InferenceCluster) -> list[StorageClass]:
    listed = (cluster.spec.storageClasses if cluster.spec is not None else None) or []
    return [StorageClass(c.name, c.maxSize, default=bool(c.default)) for c in listed]


def _stage(ledger: Ledger, work: CacheWork, found: Fleet, cluster: str, observed: list[str]) -> _Copy:
    """Compose the copy on ``cluster``, or keep what is there and say why it cannot be composed."""
    req, rsp = ledger.req, ledger.rsp
    ic = _usable(work, found, cluster)
    if isinstance(ic, _Blocked):
        ledger.keep(observed, f"kept: {ic.why}")
        return _Copy(cluster, CopyState(ic.phase, ic.why), (ic.reason, ic.why))
    try:
        wanted = copies.parts(work, [p.name for p in (ic.spec.nodePools if ic.spec else None) or []])
    except NodeLocalSourceError as err:
        ledger.keep(observed, f"kept: {err}")
        return _Copy(cluster, CopyState(Phase.FAILED, str(err)), (Reason.UNSUPPORTED, str(err)))
    labels = {MODEL_CACHE_LABEL: cache_label(work.name), CLUSTER_LABEL: cluster_label(cluster)}
    waiting, state, secret = [], CopyState(Phase.PENDING, ""), copies.missing_secret(work, cluster)
    for part in wanted:
        key = cache_key(cluster, part.part)
        obj = wrap(
            part.manifest,
            name=object_name(work.name, key),
            namespace=work.namespace,
            provider_config=_provider_config(ic),
        )
        if part.manifest["kind"] == "Namespace":
            obj = keep_on_delete(obj)  # the namespace's replicas share it
        obj["metadata"]["labels"] = labels
        ledger.put(key, obj, ready=inputs.ready(req, rsp, key).true)
        if copies.remote(req, rsp, key) is None:
            waiting.append(part.part)
        state = copies.state_of(req, rsp, key, part.manifest["metadata"]["name"], secret) or state
    _leave(ledger, found, cluster, observed)
    issue = (Reason.DEPLOYING, f"waiting for {', '.join(waiting)} on InferenceCluster {cluster}") if waiting else None
    if state.reason is not None:
        issue = (state.reason, state.message)
    return _Copy(cluster, state, issue)


def _leave(ledger: Ledger, found: Fleet, cluster: str, observed: list[str]) -> None:
    """What the copy on ``cluster`` no longer composes: the weights stay while a replica there may use them."""
    using = sorted(u.replica for u in found.users if u.cluster == cluster) + list(found.unreadable_users)
    for key in observed:
        if key in ledger.rsp.desired.resources:
            continue
        if copies.part_of(key) in copies.HOLDS_WEIGHTS and using:
            ledger.keep([key], f"kept: replica {', '.join(using)} may mount it")
        else:
            ledger.remove([key], f"{key}: the cache no longer composes it")


def _provider_config(cluster: InferenceCluster) -> str:
    ref = cluster.status.providerConfigRef if cluster.status is not None else None
    return (ref.name if ref is not None else None) or ""


def _backend(cluster: InferenceCluster) -> str:
    serving = cluster.spec.serving if cluster.spec is not None else None
    return (serving.backend if serving is not None else None) or "KServe"


def _entry(copy: _Copy, work: CacheWork) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": copy.cluster, "phase": str(copy.state.phase)}
    if copy.state.message:
        entry["message"] = copy.state.message
    if copy.state.phase == Phase.READY:
        entry["bytes"] = work.size_bytes
    if copy.state.since:
        entry["since"] = copy.state.since
    return entry


def _write_status(rsp: fnv1.RunFunctionResponse, work: CacheWork, staged: list[_Copy]) -> None:
    ready = sum(1 for c in staged if c.state.phase == Phase.READY)
    status: dict[str, Any] = {"ready": ready, "clusters": [_entry(c, work) for c in staged]}
    if work.storage == StorageType.PVC:
        status["claimName"] = cache_claim_name(work.name)
    resource.update(rsp.desired.composite, {"status": status})
    issues = [c.issue for c in staged if c.issue is not None]
    if issues:
        reason = min((r for r, _ in issues), key=_PRECEDENCE.index)
        message = "; ".join(m for r, m in issues if r == reason)
        set_conditions(rsp, Condition(Type.DEPLOYED, Status.FALSE, reason, message))
    elif staged:
        set_conditions(
            rsp, Condition(Type.DEPLOYED, Status.TRUE, Reason.DEPLOYED, f"copies composed on {len(staged)} cluster(s)")
        )
    else:
        message = "no cluster keeps a copy: spec.clusterSelector selects none and no replica uses the cache"
        set_conditions(rsp, Condition(Type.DEPLOYED, Status.TRUE, Reason.DEPLOYED, message))
    set_ready(rsp, ready=not issues and all(c.state.phase == Phase.READY for c in staged))
