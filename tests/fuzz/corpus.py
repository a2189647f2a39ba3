"""Realistic requests to fuzz from: what each function is asked once the example fleets settle.

Every example fleet is previewed in a healthy world (``--assume-ready``) with
runners that record the requests they answer; the last request of each XR is
one seed (it carries its observed composed resources and required resources as
Crossplane would send them). The scheduling scenarios add ModelDeployment
seeds, and a few seeds get what the healthy world does not simulate: pods of a
replica, and the status of a cluster's KAI Queue or Kueue ClusterQueue.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.kinds import KINDS, Kind
from modelplane.names import (
    BATCH_JOBS_LABEL,
    BATCH_PODS_LABEL,
    CONTROL_PLANE_NAMESPACE,
    OBSERVED_FOR_ANNOTATION,
    REPLICA_LABEL,
    ROLE_LABEL,
    gateway_ca_secret,
)
from modelplane.preview.fleet import simulate
from modelplane.preview.manifests import Loaded, load_dir
from modelplane.preview.world import assumed_kubeconfigs, healthy, observed_status
from modelplane.remote import OBJECT_API_VERSION
from modelplane.render import RenderInputs, RenderOutput, render
from modelplane.render.runners import configure_cli_logging, load_runner
from modelplane.repo import ROOT, load_composition
from tests.golden.cases import Case, cases

FLEETS = (
    ("quickstart",),
    ("platform", "models"),
    ("replicas",),
    ("platform", "model-cache"),
    ("platform", "models", "batch"),
    ("platform", "quotas"),
)
_STATUS = ROOT / "tests" / "unit" / "capacity" / "status"
# The composition keys compose-inference-cluster observes its scheduler's status objects under.
_QUEUE_KEY = "scheduler-queue"
_FLAVOR_PREFIX = "scheduler-flavor-"
_PODS = "pods"


@dataclass(frozen=True)
class Seed:
    """One realistic request of one function.

    Attributes:
        id: Where it comes from (fleet or scenario, then the XR's name).
        kind: The kind of the XR, which names the function.
        request: The request, serialized (seeds are shared: each use parses its own copy).
    """

    id: str
    kind: str
    request: bytes = field(repr=False)

    def parse(self) -> fnv1.RunFunctionRequest:
        """A fresh copy of the request."""
        req = fnv1.RunFunctionRequest()
        req.ParseFromString(self.request)
        return req


class _Recorder:
    """A function runner that keeps the last request it answered for each XR."""

    def __init__(self, kind: Kind, seen: dict[tuple[str, str], fnv1.RunFunctionRequest]) -> None:
        self._kind = kind
        self._inner = load_runner(kind.function_ref)
        self._seen = seen

    async def RunFunction(self, req: fnv1.RunFunctionRequest, ctx: None) -> fnv1.RunFunctionResponse:
        meta = req.observed.composite.resource["metadata"]
        key = (self._kind.kind, f"{meta['namespace'] + '/' if 'namespace' in meta else ''}{meta['name']}")
        copied = fnv1.RunFunctionRequest()
        copied.CopyFrom(req)
        self._seen[key] = copied
        # The generated servicer is untyped; name the call's type once here.
        run: Callable[[fnv1.RunFunctionRequest, None], Awaitable[fnv1.RunFunctionResponse]] = self._inner.RunFunction
        return await run(req, ctx)


def _recording(seen: dict[tuple[str, str], fnv1.RunFunctionRequest]) -> dict[str, Any]:
    return {k.function_ref: _Recorder(k, seen) for k in KINDS}


def _fleet_seeds() -> list[Seed]:
    compositions = {k.kind: load_composition(k.kind) for k in KINDS}
    out = []
    for dirs in FLEETS:
        seen: dict[tuple[str, str], fnv1.RunFunctionRequest] = {}
        runners = _recording(seen)

        def renderer(inputs: RenderInputs, runners: dict[str, Any] = runners) -> RenderOutput:
            return render(dataclasses.replace(inputs, functions=runners))

        # The examples carry no status: seed from the healthy world `modelplane preview --assume-ready` simulates.
        loaded = load_dir(*(ROOT / "examples" / d for d in dirs))
        secrets, _ = assumed_kubeconfigs(loaded)
        loaded = Loaded(loaded.xrs, loaded.others + secrets + _gateway_cas(loaded), loaded.sources)
        simulate(loaded, compositions, renderer=renderer, world=healthy, observe=observed_status)
        fleet = "+".join(dirs)
        out += [Seed(f"{fleet}/{kind}/{name}", kind, r.SerializeToString()) for (kind, name), r in sorted(seen.items())]
    return out


def _gateway_cas(loaded: Loaded) -> tuple[dict[str, Any], ...]:
    """The CA Secret each cluster's ServingStack publishes (through provider-kubernetes, which the healthy
    world does not run), so that the endpoints verifying its gateway settle as they would live."""
    data = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nfuzz seed\n-----END CERTIFICATE-----\n").decode()
    return tuple(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"namespace": CONTROL_PLANE_NAMESPACE, "name": gateway_ca_secret(str(xr["metadata"]["name"]))},
            "data": {"ca.crt": data},
        }
        for xr in loaded.xrs
        if xr.get("kind") == "InferenceCluster"
    )


def _scenario_seeds(all_cases: Iterable[Case]) -> list[Seed]:
    out = []
    for case in all_cases:
        if not case.id.startswith("scheduling/"):
            continue
        seen: dict[tuple[str, str], fnv1.RunFunctionRequest] = {}
        inputs = RenderInputs(
            xr=case.xr,
            composition=load_composition(case.xr["kind"]),
            observed=case.observed,
            required=case.fleet,
            functions=_recording(seen),
        )
        render(inputs)
        out += [Seed(case.id, kind, r.SerializeToString()) for (kind, _), r in sorted(seen.items())]
    return out


def _object_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A provider-kubernetes Object as observed carrying ``manifest``."""
    return {
        "apiVersion": OBJECT_API_VERSION,
        "kind": "Object",
        "metadata": {"name": f"pod-{manifest['metadata']['name']}"},
        "status": {"atProvider": {"manifest": manifest}},
    }


def _pod(replica: str, role: str, n: int, status: dict[str, Any]) -> dict[str, Any]:
    name = f"{replica}-{role}-{n}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {REPLICA_LABEL: replica, ROLE_LABEL: role}},
        "status": status,
    }


def _with_pods(seed: Seed) -> Seed:
    """A ModelReplica seed whose pods are observed: one Ready, one pulling a bad image, one unschedulable."""
    req = seed.parse()
    replica = str(req.observed.composite.resource["metadata"]["name"])
    spec = req.observed.composite.resource["spec"]
    roles = [r for r in ("prefill", "decode") if r in spec] or ["unified"]
    statuses: list[dict[str, Any]] = [
        {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]},
        {
            "containerStatuses": [
                {"name": "engine", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}
            ]
        },
        {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3"}]},
    ]
    pods = req.required_resources[_PODS]
    del pods.items[:]
    for role in roles:
        for n, status in enumerate(statuses):
            pods.items.add().resource.CopyFrom(resource.dict_to_struct(_object_of(_pod(replica, role, n, status))))
    return Seed(f"{seed.id}+pods", seed.kind, req.SerializeToString())


def _with_batch_runs(seed: Seed) -> Seed | None:
    """A ModelBatchRun seed whose Job finished and whose pods reported (a scheduled run's, two runs)."""
    req = seed.parse()
    if "worker" not in req.observed.resources:
        return None
    run = str(req.observed.composite.resource["metadata"]["name"])
    finished = {
        "startTime": "2026-11-28T02:00:00Z",
        "completionTime": "2026-11-28T03:00:00Z",
        "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-28T03:00:00Z"}],
    }
    worker = req.observed.resources["worker"].resource
    manifest = resource.struct_to_dict(worker["spec"]["forProvider"]["manifest"])
    if manifest.get("kind") == "CronJob":
        manifest["status"] = {"active": [{"name": f"{run}-2"}], "lastScheduleTime": "2026-11-29T02:00:00Z"}
        jobs = [(f"{run}-1", finished), (f"{run}-2", {"startTime": "2026-11-29T02:00:00Z", "active": 1, "ready": 1})]
    else:
        manifest["status"] = finished
        jobs = [(str(manifest["metadata"]["name"]), finished)]
    _observe(req, "worker", manifest)
    message = '{"total": 10, "completed": 9, "failed": 1, "results": "pvc://out/o.jsonl"}'
    for requirement, label, items in (
        (
            "jobs",
            BATCH_JOBS_LABEL,
            [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": n}, "status": s} for n, s in jobs],
        ),
        ("pods", BATCH_PODS_LABEL, [_batch_pod(n, message) for n, _ in jobs]),
    ):
        found = req.required_resources[requirement]
        del found.items[:]
        for item in items:
            obj = _object_of(item)
            obj["metadata"]["labels"] = {label: run}
            found.items.add().resource.CopyFrom(resource.dict_to_struct(obj))
    return Seed(f"{seed.id}+runs", seed.kind, req.SerializeToString())


def _batch_pod(job: str, message: str) -> dict[str, Any]:
    terminated = {"exitCode": 0, "reason": "Completed", "message": message}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{job}-abcde", "labels": {"batch.kubernetes.io/job-name": job}},
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [{"name": "worker", "state": {"terminated": terminated}}],
        },
    }


def _status_objects(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((_STATUS / f"{name}.yaml").read_text()) if d]


def _observe(req: fnv1.RunFunctionRequest, key: str, manifest: Mapping[str, Any]) -> None:
    observed = req.observed.resources[key].resource
    observed.update({"status": {"atProvider": {"manifest": copy.deepcopy(dict(manifest))}}})


def _with_scheduler_status(seed: Seed) -> Seed | None:
    """A KAI or Kueue cluster seed whose Queue (or ClusterQueue and flavors) is observed busy."""
    req = seed.parse()
    scheduler = req.observed.composite.resource["spec"]["scheduler"]["type"]
    if scheduler == "KAI":
        queue, *_ = _status_objects("kai-queue-busy")
        _observe(req, _QUEUE_KEY, queue)
    elif scheduler == "Kueue" and _QUEUE_KEY in req.observed.resources:
        queue, *flavors = _status_objects("kueue-clusterqueue-busy")
        _observe(req, _QUEUE_KEY, queue)
        # As composed: each flavor's Object names the ClusterQueue it was observed for.
        kueue = req.observed.composite.resource["spec"]["scheduler"]["kueue"]
        cluster_queue = str(kueue["clusterQueueName"]) if "clusterQueueName" in kueue else ""
        for flavor in flavors:
            key = _FLAVOR_PREFIX + flavor["metadata"]["name"]
            _observe(req, key, flavor)
            if cluster_queue:
                meta = req.observed.resources[key].resource
                annotations = {OBSERVED_FOR_ANNOTATION: cluster_queue}
                if "metadata" in meta and "annotations" in meta["metadata"]:
                    annotations = {**dict(meta["metadata"]["annotations"]), **annotations}
                meta.update(
                    {"metadata": {**(dict(meta["metadata"]) if "metadata" in meta else {}), "annotations": annotations}}
                )
    else:
        return None
    return Seed(f"{seed.id}+scheduler-status", seed.kind, req.SerializeToString())


def _scheduler(seed: Seed) -> str:
    spec = seed.parse().observed.composite.resource["spec"]
    return str(spec["scheduler"]["type"]) if "scheduler" in spec else "None"


@functools.cache
def seeds() -> tuple[Seed, ...]:
    """Every seed, in a stable order."""
    configure_cli_logging()
    base = _fleet_seeds() + _scenario_seeds(cases())
    extra: list[Seed] = []
    for seed in base:
        if seed.kind == "ModelReplica":
            extra.append(_with_pods(seed))
        elif seed.kind == "InferenceCluster" and _scheduler(seed) in ("KAI", "Kueue"):
            extra += [s for s in (_with_scheduler_status(seed),) if s is not None]
        elif seed.kind == "ModelBatchRun":
            extra += [s for s in (_with_batch_runs(seed),) if s is not None]
    return tuple(base + extra)


def seeds_of(kind: str) -> tuple[Seed, ...]:
    """The seeds of one kind's function."""
    return tuple(s for s in seeds() if s.kind == kind)
