"""What a ModelBatchRun reads besides itself: the fleet, its ModelService (mode Service), and what runs on its cluster.

Every call asks for every InferenceCluster; a Dedicated run also for every InferenceClass, every
ModelBatchRun (the workers of the others hold GPUs) and its spec.modelCacheRef's ModelCache; a
Service-mode run for its ModelService and the ModelEndpoints, ModelReplicas and ModelPools of its
namespace (the pools its requests are marked on); and every run for the Observe-only Objects its
collections make of its pods and Jobs. Each object is read under the one input policy
(``modelplane.fnkit.inputs``): a field that does not fit is absent, an object that does not read is
named in a warning and left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pydantic
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import protojson
from modelplane.batch.objectives import POOL
from modelplane.batch.observed import JOB, POD, observed
from modelplane.batch.placement import Holding, gpus_of
from modelplane.batch.work import BatchWork, Mode
from modelplane.fnkit import inputs
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import string_at
from modelplane.kinds import API_VERSION
from modelplane.layout import CONDITION, METADATA, Layout
from modelplane.modelcache.use import CacheCopy, copy_of
from modelplane.names import BATCH_JOBS_LABEL, BATCH_PODS_LABEL, batch_label
from modelplane.problems import describe, invalid
from modelplane.remote import OBJECT_API_VERSION
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster

CLUSTERS = Requirement("clusters", API_VERSION, "InferenceCluster")
CLASSES = Requirement("classes", API_VERSION, "InferenceClass")
RUNS = Requirement("runs", API_VERSION, "ModelBatchRun")
SERVICE = Requirement("service", API_VERSION, "ModelService")
ENDPOINTS = Requirement("endpoints", API_VERSION, "ModelEndpoint")
REPLICAS = Requirement("replicas", API_VERSION, "ModelReplica")
POOLS = Requirement("pools", API_VERSION, "ModelPool")
CACHE = Requirement("cache", API_VERSION, "ModelCache")
PODS = Requirement("pods", OBJECT_API_VERSION, "Object")
JOBS = Requirement("jobs", OBJECT_API_VERSION, "Object")

M = TypeVar("M", bound=pydantic.BaseModel)

_RUN = {
    "metadata": METADATA,
    "spec": {"mode": str, "schedule": str, "workers": {"topology": {"tensor": int, "dataLocal": int}}},
    "status": {"phase": str, "cluster": str, "pool": str},
}
_SERVICE = {"metadata": METADATA, "status": {"address": str, "endpoints": [{"endpoints": [str]}]}}
_ENDPOINT = {"metadata": METADATA, "spec": {"replicaRef": {"name": str}}, "status": {"conditions": [CONDITION]}}
_REPLICA = {"metadata": METADATA, "spec": {"inferenceClusterRef": {"name": str}}}
# A run's worker holds its GPUs while it waits or runs: a one-shot run in these phases, a scheduled one while Running.
_HOLDING = frozenset({"Scheduled", "Running"})


@dataclass(frozen=True)
class Found:
    """What the call read.

    Attributes:
        clusters: The InferenceClusters that read, by name, as models and as written.
        classes: The InferenceClasses that read, by name.
        holdings: The workers of the other Dedicated runs.
        service: Mode Service: the ModelService (None: not found).
        endpoints: Mode Service: the ModelEndpoints of the namespace.
        replicas: Mode Service: the ModelReplicas of the namespace.
        pools: Mode Service: the ModelPools of the namespace.
        cache: Mode Dedicated with spec.modelCacheRef: its ModelCache as read (None: not found, or none).
        pods: The run's pods as observed on its cluster.
        jobs: A scheduled run's Jobs as observed on its cluster.
    """

    clusters: Mapping[str, tuple[InferenceCluster, dict[str, Any]]]
    classes: Mapping[str, InferenceClass]
    holdings: tuple[Holding, ...] = ()
    service: dict[str, Any] | None = None
    endpoints: tuple[dict[str, Any], ...] = ()
    replicas: tuple[dict[str, Any], ...] = ()
    pools: tuple[dict[str, Any], ...] = ()
    cache: CacheCopy | None = None
    pods: tuple[dict[str, Any], ...] = field(default=())
    jobs: tuple[dict[str, Any], ...] = field(default=())


def _needs(work: BatchWork) -> tuple[Requirement, ...]:
    if work.mode is Mode.DEDICATED:
        return (CLUSTERS, CLASSES, RUNS, PODS, JOBS, *((CACHE,) if work.cache is not None else ()))
    return (CLUSTERS, SERVICE, ENDPOINTS, REPLICAS, POOLS, PODS, JOBS)


def request(rsp: fnv1.RunFunctionResponse, work: BatchWork) -> None:
    """Ask for what the run reads (on every call, or Crossplane stops sending it)."""
    run = batch_label(work.name)
    CLUSTERS.request(rsp)
    if work.mode is Mode.DEDICATED:
        CLASSES.request(rsp)
        RUNS.request(rsp)
        if work.cache is not None:
            CACHE.request(rsp, name=work.cache.name, namespace=work.namespace)
    else:
        SERVICE.request(rsp, name=work.service, namespace=work.namespace)
        ENDPOINTS.request(rsp, namespace=work.namespace)
        REPLICAS.request(rsp, namespace=work.namespace)
        POOLS.request(rsp, namespace=work.namespace)
    PODS.request(rsp, labels={BATCH_PODS_LABEL: run}, namespace=work.namespace)
    JOBS.request(rsp, labels={BATCH_JOBS_LABEL: run}, namespace=work.namespace)


def fetched(req: fnv1.RunFunctionRequest, work: BatchWork) -> bool:
    """Whether Crossplane has answered every requirement of the run."""
    return all(r.fetched(req) for r in _needs(work))


def _models(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, requirement: Requirement, model: type[M]
) -> dict[str, tuple[M, dict[str, Any]]]:
    """Each object of ``requirement`` that reads as ``model``, by name, with the object as written."""
    out: dict[str, tuple[M, dict[str, Any]]] = {}
    for struct in requirement.structs(req):
        name = string_at(struct, "metadata", "name") or ""
        item = protojson.struct_to_dict(struct)
        try:
            out.setdefault(name, (model.model_validate(item), item))
        except pydantic.ValidationError as err:
            response.warning(rsp, f"{requirement.kind} {name} cannot be read: {describe(invalid(err))}")
    return dict(sorted(out.items()))


def _holdings(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, work: BatchWork) -> tuple[Holding, ...]:
    out = []
    for run in inputs.required(req, rsp, RUNS.name, _RUN):
        meta, spec, status = run.get("metadata", {}), run.get("spec", {}), run.get("status", {})
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if key == f"{work.namespace}/{work.name}" or spec.get("mode", "Dedicated") != "Dedicated":
            continue
        phase = status.get("phase", "")
        holds = phase == "Running" if spec.get("schedule") else phase in _HOLDING
        if holds and status.get("cluster") and status.get("pool"):
            out.append(Holding(key, status["cluster"], status["pool"], gpus_of(spec)))
    return tuple(sorted(out, key=lambda h: h.run))


def _manifests(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, requirement: Requirement, layout: dict[str, Layout]
) -> tuple[dict[str, Any], ...]:
    """The remote objects the Observe-only Objects of ``requirement`` carry, as observed."""
    found = (
        o.get("status", {}).get("atProvider", {}).get("manifest")
        for o in inputs.required(req, rsp, requirement.name, observed(layout))
    )
    return tuple(m for m in found if m)


def read(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, work: BatchWork) -> Found:
    """Read what was fetched (``fetched`` is True)."""
    clusters = _models(req, rsp, CLUSTERS, InferenceCluster)
    pods, jobs = _manifests(req, rsp, PODS, POD), _manifests(req, rsp, JOBS, JOB)
    if work.mode is Mode.DEDICATED:
        classes = {n: m for n, (m, _) in _models(req, rsp, CLASSES, InferenceClass).items()}
        cache = next((copy_of(protojson.struct_to_dict(s)) for s in CACHE.structs(req)), None)
        return Found(clusters, classes, _holdings(req, rsp, work), cache=cache, pods=pods, jobs=jobs)
    service = next(inputs.required(req, rsp, SERVICE.name, _SERVICE), None)
    return Found(
        clusters,
        {},
        service=service,
        endpoints=tuple(inputs.required(req, rsp, ENDPOINTS.name, _ENDPOINT)),
        replicas=tuple(inputs.required(req, rsp, REPLICAS.name, _REPLICA)),
        pools=tuple(inputs.required(req, rsp, POOLS.name, POOL)),
        pods=pods,
        jobs=jobs,
    )
