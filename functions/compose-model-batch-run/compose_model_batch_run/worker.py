"""What a run puts on its cluster: its namespace, its program's ConfigMap, its worker's claim template, its Job.

A Dedicated worker's pod is a replica's pod (``modelplane.backends``: the template with its DRA claim,
pinned to its pool) with the program wrapping the engine; a Service-mode client's is the program
alone (``modelplane.batch.pods``). Each manifest is wrapped in a provider-kubernetes Object for the
cluster by the caller.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.backends.model import CacheMount
from modelplane.backends.pods import CACHE_VOLUME, claim_template, role_pods
from modelplane.backends.resolve import resolve
from modelplane.batch import pods
from modelplane.batch.placement import mountable
from modelplane.batch.work import BatchWork, Mode
from modelplane.batch.wrapping import batch_wrapping
from modelplane.modelcache.use import CacheCopy
from modelplane.names import (
    BATCH_CLAIM_KEY,
    BATCH_NAMESPACE_KEY,
    BATCH_RUN_LABEL,
    BATCH_SCRIPTS_KEY,
    BATCH_WORKER_KEY,
    REPLICA_LABEL,
    ROLE_LABEL,
    batch_job_name,
    batch_label,
    batch_scripts_name,
)
from modelplane.schedulers import Wrapping
from modelplane_models.inference_class import InferenceClass

# A replica's labels that would make its own selectors (its pods collection, its pool) pick the worker up.
_REPLICA_ONLY = frozenset({REPLICA_LABEL, ROLE_LABEL})


@dataclass(frozen=True)
class Target:
    """Where the run goes: its cluster, the worker's pool (Dedicated) or the URL the client posts to (Service)."""

    cluster: str
    pool: str = ""
    url: str = ""
    why: str = ""
    warning: str = ""  # what the run's user should know, though it goes on
    note: str = ""  # said after how the run goes (a Service-mode run's objectives)


@dataclass(frozen=True)
class Part:
    """One manifest for the cluster, under its composition key."""

    key: str
    manifest: dict[str, Any]


def digest(manifest: Mapping[str, Any]) -> str:
    """A short digest of what a manifest asks (``BATCH_DIGEST_ANNOTATION``)."""
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:16]


def _without_replica_labels(labels: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k not in _REPLICA_ONLY}


def _object_at(value: Any, *path: str) -> Mapping[str, Any]:  # noqa: ANN401 - any JSON value
    """The object at ``path`` under ``value`` ({} where a step is missing or not an object)."""
    for step in path:
        value = value.get(step) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _named(items: Any, name: str) -> Mapping[str, Any]:  # noqa: ANN401 - any JSON value
    """The first object of the list ``items`` whose ``name`` is ``name`` ({} when none)."""
    found = (i for i in (items if isinstance(items, list) else []) if isinstance(i, Mapping) and i.get("name") == name)
    return next(found, {})


def _composed_mount(current: Mapping[str, Any]) -> CacheMount | None:
    """The cache mount of the worker as composed (None: it mounts none, or it cannot be read)."""
    spec = _object_at(current, "spec", "forProvider", "manifest", "spec")
    job = _object_at(spec, "jobTemplate", "spec") or spec  # a CronJob's Job, or the Job
    pod = _object_at(job, "template", "spec")
    claim = _object_at(_named(pod.get("volumes"), CACHE_VOLUME), "persistentVolumeClaim").get("claimName")
    containers = pod.get("containers")
    first = containers[0] if isinstance(containers, list) and containers else {}
    path = _named(first.get("volumeMounts") if isinstance(first, Mapping) else None, CACHE_VOLUME).get("mountPath")
    return CacheMount(claim, path) if isinstance(claim, str) and claim and isinstance(path, str) and path else None


def cache_mount(
    work: BatchWork, target: Target, copy: CacheCopy | None, current: Mapping[str, Any] | None
) -> CacheMount | None:
    """The copy the worker mounts: as composed once its Job or CronJob exists; else the copy Ready on its cluster.

    A worker placed under policy Required is only on a cluster with a Ready copy (``placement``); under
    Preferred, on a cluster without one it starts without it.
    """
    if work.cache is None or work.mode is not Mode.DEDICATED:
        return None
    if current is not None:
        return _composed_mount(current)
    if copy is None or not copy.claim or target.cluster not in mountable(copy):
        return None
    return CacheMount(copy.claim, work.cache.mount_path)


def parts(
    work: BatchWork,
    target: Target,
    spec: Mapping[str, Any],
    cluster: Mapping[str, Any],
    classes: Mapping[str, InferenceClass],
    cache: CacheMount | None = None,
) -> list[Part]:
    """The run's manifests on ``target.cluster`` (``cluster``: that InferenceCluster as written).

    ``cache`` is the ModelCache copy its worker mounts (None: none).

    Raises:
        ResolveError: The worker's pool or class is not there, or a selector does not compile.
        UnknownSchedulerError: The cluster's scheduler is not one Modelplane knows.
        SchedulerSettingsError: The cluster's scheduler lacks a setting it needs.
    """
    labels = {BATCH_RUN_LABEL: batch_label(work.name)}
    scripts = batch_scripts_name(work.name)
    settings = (cluster.get("spec") or {}).get("scheduler") or {}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": work.namespace}}
    out = [
        Part(BATCH_NAMESPACE_KEY, namespace),
        Part(BATCH_SCRIPTS_KEY, pods.scripts_config_map(work, scripts, labels)),
    ]
    if work.mode is Mode.DEDICATED:
        wrapping = batch_wrapping(settings, work.priority, queued=True)
        workers = {**(spec.get("workers") or {}), "count": 1}
        shape = {"nodeSelector": spec.get("nodeSelector") or {}, "workers": workers, "poolName": target.pool}
        replica = dataclasses.replace(resolve(work.name, work.namespace, shape, cluster, classes, labels), cache=cache)
        role = replica.roles[0]
        claim = claim_template(replica, role)
        claim["metadata"]["labels"] = _without_replica_labels(claim["metadata"]["labels"])
        out.append(Part(BATCH_CLAIM_KEY, claim))
        worker = role_pods(replica, role, Wrapping(wrapping.scheduler_name, wrapping.pod_labels))
        pod = pods.worker_pod(work, worker.spec, scripts)
        if wrapping.priority_class:
            pod["priorityClassName"] = wrapping.priority_class
        meta: dict[str, Any] = {"labels": _without_replica_labels(worker.labels)}
        if worker.annotations:
            meta["annotations"] = dict(worker.annotations)
    else:
        wrapping = batch_wrapping(settings, "", queued=False)
        pod = pods.client_pod(work, target.url, scripts)
        meta = {"labels": dict(labels)}
    name = batch_job_name(work.name, scheduled=work.scheduled)
    out.append(Part(BATCH_WORKER_KEY, pods.job(work, name, {**labels, **wrapping.job_labels}, pod, meta)))
    return out
