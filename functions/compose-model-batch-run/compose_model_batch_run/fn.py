"""The ModelBatchRun function: place a batch run, compose its Job (or CronJob) on its cluster, report how it went.

Each call:

1. parses the run and resolves it (``modelplane.batch.work``); what is wrong becomes the Scheduled
   condition, naming the field, and everything composed is kept;
2. reads the fleet (``fleet``), and for mode Service the ModelService and its endpoints;
3. decides where the run goes: where its worker already is (a run never moves once composed), else
   through the fleet scheduler on spare GPUs (Dedicated, ``modelplane.batch.placement``) or to the
   cluster hosting most of the service's Ready endpoints (Service, ``modelplane.batch.service``);
4. composes the run's objects there in provider-kubernetes Objects (``worker``), and Observe-only
   collections of its pods and Jobs; for mode Service also the run's low-priority InferenceObjective
   on each cluster where the service has a pool (``modelplane.batch.objectives``);
5. lifts the phase, times and counts from what the cluster reports (``status``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_batch_run import fleet, status, worker
from compose_model_batch_run.fleet import Found
from compose_model_batch_run.worker import Target
from modelplane import protojson
from modelplane.backends.resolve import ResolveError
from modelplane.batch.objectives import KEY_PREFIX, Marking, marking
from modelplane.batch.observed import JOB, collection, observed
from modelplane.batch.placement import Placed, place
from modelplane.batch.runs import Phase
from modelplane.batch.service import ServiceTarget, target
from modelplane.batch.work import BatchWork, Mode, resolve
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep, wait
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.layout import CONDITION, METADATA, conform
from modelplane.names import (
    BATCH_CLUSTER_ANNOTATION,
    BATCH_DIGEST_ANNOTATION,
    BATCH_JOBS_KEY,
    BATCH_JOBS_LABEL,
    BATCH_NAMESPACE_KEY,
    BATCH_PODS_KEY,
    BATCH_PODS_LABEL,
    BATCH_POOL_ANNOTATION,
    BATCH_RUN_LABEL,
    BATCH_WORKER_KEY,
    MAX_COLLECTION_NAME,
    batch_label,
    cluster_label,
    object_name,
)
from modelplane.problems import Problem, describe
from modelplane.remote import Readiness, ReadinessRule, keep_on_delete, wrap
from modelplane.schedulers import SchedulerSettingsError, UnknownSchedulerError
from modelplane.scheduling.view import build_view, cluster_facts
from modelplane_models.model_batch_run import ModelBatchRun

# What is read of the run's worker Object: where it was placed, what it carries, and the Job or CronJob there.
_WORKER = {"metadata": METADATA, "status": {"conditions": [CONDITION], **observed(JOB)["status"]}}
# The Job or CronJob Object is Ready once it exists: how the run goes is its phase, not the Object's readiness.
_EXISTS = ReadinessRule(Readiness.SUCCESSFUL_CREATE)
# A finished one-shot run's Job is only observed (and deleted with the run): never created again once the
# cluster deletes it (ttlAfterFinished), never changed.
_FINISHED_POLICIES = ["Observe", "Delete"]
_WORKER_KINDS = frozenset({"Job", "CronJob"})


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Resolve the run, read the fleet, decide where it goes, compose it there, then status and conditions."""
    own = _own(req)
    xr = parse_or_keep(ledger, log, ModelBatchRun, _invalid)
    if xr is None:
        _write_status(rsp, status.kept(own))
        return
    # 1. The run resolved.
    work = resolve(xr)
    if isinstance(work, list):
        keep_all(ledger, log, _invalid(work))
        _write_status(rsp, status.kept(own))
        return
    # 2. What it reads.
    fleet.request(rsp, work)
    if not fleet.fetched(req, work):
        wait(ledger, log, Type.SCHEDULED, Reason.WAITING_FOR_FLEET, "reading the fleet")
        _write_status(rsp, status.kept(own))
        return
    found = fleet.read(req, rsp, work)
    spec = protojson.struct_to_dict(req.observed.composite.resource).get("spec") or {}
    # 3. Where it goes.
    current = inputs.observed(req, rsp, BATCH_WORKER_KEY, _WORKER)
    decided = _decide(work, found, spec, current)
    if isinstance(decided, Condition):
        keep_all(ledger, log, decided)
        _write_status(rsp, status.kept(own))
        return
    # 4. Its objects on that cluster (and a Service-mode run's objectives on its service's pools).
    marked = _marking(work, found)
    _write_objectives(ledger, work, marked, {BATCH_RUN_LABEL: batch_label(work.name)})
    if marked is not None and marked.summary():
        decided = dataclasses.replace(decided, note=marked.summary())
    written = _write(ledger, work, decided, spec, found, current)
    if isinstance(written, Condition):
        keep_all(ledger, log, written)
        _write_status(rsp, {**status.kept(own), "cluster": decided.cluster})
        return
    # 5. How it goes.
    remote = _remote(current)
    seen = _seen(work, remote, found, own)
    if remote is None and (trouble := _not_applied(current)):
        seen = status.Observed(seen.phase, f"{seen.message}: {trouble}", seen.status)
    _report(rsp, work, decided, seen, composed=remote is not None, changed=written)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _own(req: fnv1.RunFunctionRequest) -> dict[str, Any]:
    """The run's own status as it last wrote it (what does not fit is left out)."""
    whole = protojson.struct_to_dict(req.observed.composite.resource)
    return dict(conform({"status": whole.get("status") or {}}, status.OWN).value.get("status") or {})


def _invalid(problems: list[Problem]) -> Condition:
    return Condition(
        Type.SCHEDULED, Status.FALSE, Reason.INVALID_SPEC, f"the ModelBatchRun is invalid: {describe(problems)}"
    )


def _decide(
    work: BatchWork, found: Found, spec: Mapping[str, Any], current: Mapping[str, Any] | None
) -> Target | Condition:
    """Where the run goes: where its worker is, or a new place (a condition says why there is none)."""
    annotations = ((current or {}).get("metadata") or {}).get("annotations") or {}
    cluster = annotations.get(BATCH_CLUSTER_ANNOTATION, "")
    if work.mode is Mode.SERVICE:
        return _client(work, found, cluster, current)
    if cluster:
        return Target(cluster, annotations.get(BATCH_POOL_ANNOTATION, ""), why="where its worker was placed")
    facts = [f for f in (cluster_facts(m) for m, _ in found.clusters.values()) if f is not None]
    view = build_view(facts, found.classes.values())
    placed = place(work.name, work.namespace, spec, view, found.holdings, cache=work.cache, copy=found.cache)
    if isinstance(placed, Placed):
        return Target(placed.cluster, placed.pool, why=placed.why)
    reason = Reason(placed.reason) if placed.reason in set(Reason) else Reason.INSUFFICIENT_CAPACITY
    return Condition(Type.SCHEDULED, Status.FALSE, reason, placed.message)


def _client(work: BatchWork, found: Found, cluster: str, current: Mapping[str, Any] | None) -> Target | Condition:
    """Where a Service-mode client goes (``cluster``: where it was composed, "" for none yet)."""
    chosen = target(work.service, found.service, found.endpoints, found.replicas, found.clusters, work.endpoint)
    if isinstance(chosen, ServiceTarget):
        if cluster and cluster != chosen.cluster:
            # A client already composed stays where it is; only the URL it posts to follows the service.
            return Target(cluster, url=chosen.url, why="where its client was placed")
        why = f"{chosen.ready} Ready endpoint(s) of ModelService {work.service} there"
        return Target(chosen.cluster, url=chosen.url, why=why)
    if cluster:
        # The client runs, or ran: it stays as it is (posting where it posted), and the run says why.
        why = f"where its client was placed; {chosen.message}"
        return Target(cluster, url=_posted_to(current), why=why, warning=chosen.message)
    return Condition(Type.SCHEDULED, Status.FALSE, _service_reason(chosen.reason), chosen.message)


def _posted_to(current: Mapping[str, Any] | None) -> str:
    """The URL the composed client posts to ("" when it cannot be read)."""
    manifest = ((current or {}).get("spec") or {}).get("forProvider", {}).get("manifest") or {}
    spec = manifest.get("spec") or {}
    job = (spec.get("jobTemplate") or {}).get("spec") or spec
    containers = ((job.get("template") or {}).get("spec") or {}).get("containers") or [{}]
    env = containers[0].get("env") or [] if isinstance(containers[0], Mapping) else []
    return next((str(e.get("value", "")) for e in env if e.get("name") == "MODELPLANE_BATCH_URL"), "")


def _service_reason(reason: str) -> Reason:
    return {
        "ServiceNotFound": Reason.SERVICE_NOT_FOUND,
        "NoReadyEndpoints": Reason.NO_READY_ENDPOINTS,
        "WaitingForAddress": Reason.WAITING_FOR_ADDRESS,
    }.get(reason, Reason.NO_READY_ENDPOINTS)


def _marking(work: BatchWork, found: Found) -> Marking | None:
    """A Service-mode run's objectives (None: its service cannot be read, so those composed are kept)."""
    if work.mode is not Mode.SERVICE or found.service is None:
        return None
    return marking(work.name, work.namespace, found.service, found.pools)


def _write_objectives(ledger: Ledger, work: BatchWork, marked: Marking | None, labels: Mapping[str, str]) -> None:
    """Each pool's InferenceObjective, through its own cluster's ProviderConfig.

    One composed before and not written now stays until the run is deleted: its pool may only be unseen
    this call (the ModelPools or the ModelService did not read), and on a pool that is gone it is inert.
    """
    if work.mode is not Mode.SERVICE:
        return
    for objective in marked.objectives if marked is not None else ():
        key = f"{KEY_PREFIX}{cluster_label(objective.cluster)}"
        obj = wrap(
            objective.manifest,
            name=object_name(work.name, key),
            namespace=work.namespace,
            provider_config=objective.provider_config,
        )
        obj["metadata"]["labels"] = dict(labels)
        ledger.put(key, obj, ready=True)
    # ``keep`` leaves alone what was written above.
    composed = [k for k in ledger.req.observed.resources if k.startswith(KEY_PREFIX)]
    ledger.keep(composed, "the run's InferenceObjective stays until the run is deleted")


def _provider_config(cluster: Mapping[str, Any]) -> str:
    return str(((cluster.get("status") or {}).get("providerConfigRef") or {}).get("name") or "")


def _write(
    ledger: Ledger,
    work: BatchWork,
    target: Target,
    spec: Mapping[str, Any],
    found: Found,
    current: Mapping[str, Any] | None,
) -> bool | Condition:
    """Compose the run's objects on ``target.cluster``; True when a one-shot Job is kept although the spec changed."""
    if target.cluster not in found.clusters:
        why = f"InferenceCluster {target.cluster} (where the run was placed) not found: its objects are kept"
        return Condition(Type.SCHEDULED, Status.FALSE, Reason.CLUSTER_NOT_FOUND, why)
    _, cluster = found.clusters[target.cluster]
    config = _provider_config(cluster)
    if not config:
        why = f"InferenceCluster {target.cluster} has not published status.providerConfigRef yet"
        return Condition(Type.SCHEDULED, Status.UNKNOWN, Reason.CLUSTER_NOT_READY, why)
    try:
        mount = worker.cache_mount(work, target, found.cache, current)
        parts = worker.parts(work, target, spec, cluster, found.classes, mount)
    except ResolveError as err:
        return Condition(Type.SCHEDULED, Status.FALSE, err.reason, f"InferenceCluster {target.cluster}: {err}")
    except (UnknownSchedulerError, SchedulerSettingsError) as err:
        message = f"InferenceCluster {target.cluster}: {err}"
        return Condition(Type.SCHEDULED, Status.FALSE, Reason.CLUSTER_NOT_READY, message)
    labels = {BATCH_RUN_LABEL: batch_label(work.name)}
    changed = False
    for part in parts:
        obj = wrap(
            part.manifest,
            name=object_name(work.name, part.key),
            namespace=work.namespace,
            provider_config=config,
            readiness=_EXISTS if part.manifest["kind"] in _WORKER_KINDS else None,
        )
        obj["metadata"]["labels"] = dict(labels)
        if part.key == BATCH_NAMESPACE_KEY:
            obj = keep_on_delete(obj)  # the namespace is shared with the namespace's replicas and runs
        if part.key == BATCH_WORKER_KEY:
            changed = _write_worker(ledger, work, target, obj, current)
            continue
        ledger.put(part.key, obj, ready=True)
    for key, kind, label in _collections(work):
        name = object_name(work.name, key, MAX_COLLECTION_NAME)
        made = collection(
            name=name,
            namespace=work.namespace,
            provider_config=config,
            kind=kind,
            run=labels[BATCH_RUN_LABEL],
            label=label,
        )
        ledger.put(key, made, ready=True)
    ledger.remove_unwritten(lambda _: True, lambda key: f"{key}: the run's spec no longer composes it")
    return changed


def _collections(work: BatchWork) -> list[tuple[str, str, str]]:
    out = [(BATCH_PODS_KEY, "Pod", BATCH_PODS_LABEL)]
    if work.scheduled:
        out.append((BATCH_JOBS_KEY, "Job", BATCH_JOBS_LABEL))
    return out


def _write_worker(
    ledger: Ledger, work: BatchWork, target: Target, obj: dict[str, Any], current: Mapping[str, Any] | None
) -> bool:
    """Put the worker's Object; a one-shot run's Job already created is kept when the spec now asks another."""
    manifest = obj["spec"]["forProvider"]["manifest"]
    annotations = {
        BATCH_CLUSTER_ANNOTATION: target.cluster,
        BATCH_DIGEST_ANNOTATION: worker.digest(manifest),
    }
    if target.pool:
        annotations[BATCH_POOL_ANNOTATION] = target.pool
    obj["metadata"]["annotations"] = annotations
    job = _remote(current)
    if not work.scheduled and job is not None and job.get("kind") == "Job":
        was = ((current or {}).get("metadata") or {}).get("annotations", {}).get(BATCH_DIGEST_ANNOTATION)
        if was is not None and was != annotations[BATCH_DIGEST_ANNOTATION]:
            ledger.keep([BATCH_WORKER_KEY], "a Job cannot change once created")
            return True
        if _finished(job):
            obj["spec"]["managementPolicies"] = list(_FINISHED_POLICIES)
    ledger.put(BATCH_WORKER_KEY, obj, ready=True)
    return False


def _remote(current: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    manifest = ((current or {}).get("status") or {}).get("atProvider", {}).get("manifest")
    return manifest if isinstance(manifest, Mapping) and manifest.get("kind") in _WORKER_KINDS else None


def _finished(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def _not_applied(current: Mapping[str, Any] | None) -> str:
    """Why provider-kubernetes could not apply the Job or CronJob ("" when it could, or has not said)."""
    for c in ((current or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Synced" and c.get("status") == "False":
            return f"the cluster refused it: {c.get('message') or c.get('reason') or 'no reason given'}"
    return ""


def _seen(work: BatchWork, remote: Mapping[str, Any] | None, found: Found, own: Mapping[str, Any]) -> status.Observed:
    """The run as its cluster reports it (``remote``: its Job or CronJob as observed)."""
    if work.scheduled:
        cron_job = remote if remote is not None and remote.get("kind") == "CronJob" else None
        return status.scheduled(work, cron_job, found.jobs, found.pods)
    job = remote if remote is not None and remote.get("kind") == "Job" else None
    return status.one_shot(work, job, found.pods, own)


def _report(
    rsp: fnv1.RunFunctionResponse,
    work: BatchWork,
    target: Target,
    seen: status.Observed,
    *,
    composed: bool,
    changed: bool,
) -> None:
    """Status, the Scheduled condition, warnings for a failed run, and readiness."""
    body = {**seen.status, "cluster": target.cluster}
    if target.pool:
        body["pool"] = target.pool
    _write_status(rsp, body)
    where = f"InferenceCluster {target.cluster}" + (f", pool {target.pool}" if target.pool else "")
    what = "CronJob" if work.scheduled else "Job"
    message = f"{what} on {where} ({target.why}): {seen.message}"
    if target.note:
        message += f"; {target.note}"
    if changed:
        message += "; the spec changed after the Job was created: the Job keeps what it runs (a Job cannot change)"
        response.warning(
            rsp,
            f"spec changed after Job creation on {where}: delete and recreate the ModelBatchRun to run the new spec",
        )
    set_conditions(rsp, Condition(Type.SCHEDULED, Status.TRUE, Reason.SCHEDULED, message))
    if target.warning:
        response.warning(rsp, target.warning)
    if seen.phase in (Phase.FAILED, Phase.EXPIRED):
        response.warning(rsp, seen.message)
    ready = seen.phase is Phase.SUCCEEDED if not work.scheduled else composed
    set_ready(rsp, ready=ready)


def _write_status(rsp: fnv1.RunFunctionResponse, body: Mapping[str, Any]) -> None:
    resource.update(rsp.desired.composite, {"status": dict(body)})
