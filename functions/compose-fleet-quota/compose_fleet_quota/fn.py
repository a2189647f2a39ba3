"""The FleetQuota function: count what the ModelReplicas of the quota's namespaces hold against its limits.

A FleetQuota composes nothing. Each call reads the namespaces the quota selects and their
ModelReplicas (``fleet``), counts its use (``modelplane.quota.count_use``: per limit, per class,
per priority, per deployment; the replicas not serving beyond a limit; with preemption
LowerPriority, the serving replicas a higher priority now takes the place of) and writes it to
``status``, where every ModelDeployment of those namespaces reads it instead of the replicas.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_fleet_quota import fleet
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import read_xr
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.problems import describe
from modelplane.quota import QuotaUse, count_use, quota_status
from modelplane.scheduling.celmatch import match_cel
from modelplane.scheduling.devices import ClassJudge
from modelplane.scheduling.quotas import Quota, covers, quota_of, selector_errors
from modelplane.scheduling.view import class_views
from modelplane_models.fleet_quota import FleetQuota

_SAID = 5  # replicas named in a condition's message


def compose(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    _ledger: Ledger,  # a quota composes nothing: there is nothing to keep
    log: structlog.stdlib.BoundLogger,
) -> None:
    """Read the quota and its namespaces' replicas, count its use, write status and conditions."""
    xr = read_xr(req, FleetQuota)
    quota = quota_of(xr) if not isinstance(xr, list) else None
    if isinstance(xr, list) or quota is None or xr.spec is None:
        message = describe(xr) if isinstance(xr, list) else "spec: required"
        log.info("invalid quota", problems=message)
        response.warning(rsp, f"FleetQuota is invalid: {message}")
        set_conditions(rsp, Condition(Type.VALID, Status.FALSE, Reason.INVALID_SPEC, message))
        set_ready(rsp, ready=False)
        return
    match_labels = dict(xr.spec.namespaceSelector.matchLabels or {})
    fleet.request_namespaces(rsp, quota, match_labels)
    namespaces = fleet.selected(req, quota)
    every = not quota.selector.requirements
    if namespaces is not None:
        fleet.request_replicas(rsp, namespaces, every=every)
    if namespaces is None or not fleet.fetched(req, namespaces, every=every):
        message = "reading the namespaces it selects and their ModelReplicas"
        set_conditions(rsp, Condition(Type.WITHIN_LIMITS, Status.UNKNOWN, Reason.WAITING_FOR_INPUTS, message))
        set_ready(rsp, ready=False)
        return
    read = fleet.read(req, rsp, namespaces)
    judge = ClassJudge(match_cel, class_views(read.classes.values()))
    use = count_use(quota, read.replicas, read.pool_class, lambda limit, c: covers(limit, c, judge))
    resource.update(rsp.desired.composite, {"status": quota_status(namespaces, use)})
    problems = selector_errors(quota, set(read.pool_class.values()), judge)
    for problem in problems:
        response.warning(rsp, f"{problem}: the limit covers that class (a quota errs on the side of its limit)")
    valid = (
        Condition(Type.VALID, Status.FALSE, Reason.CEL_ERROR, "; ".join(problems))
        if problems
        else Condition(Type.VALID, Status.TRUE, Reason.VALID, "the quota is valid")
    )
    within = _within(quota, use)
    if within.status == Status.FALSE:
        log.info("quota beyond a limit", message=within.message)
    set_conditions(rsp, valid, within)
    set_ready(rsp, ready=not problems)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _within(quota: Quota, use: QuotaUse) -> Condition:
    """WithinLimits: every limit holds, or which do not and which replicas give way."""
    parts = [
        f"{u.limit.name}: {u.in_use} in use of {u.limit.accelerators} (serving replicas beyond the limit stay)"
        for u in use.over
    ]
    if use.exceeded:
        parts.append(f"not serving yet beyond a limit, withdrawn by their deployments: {_names(use.exceeded)}")
    if use.preempted:
        parts.append(f"serving, preempted by a higher priority that serves: {_names(use.preempted)}")
    if parts:
        return Condition(Type.WITHIN_LIMITS, Status.FALSE, Reason.OVER_LIMIT, "; ".join(parts))
    figures = ", ".join(f"{u.limit.name} {u.in_use} of {u.limit.accelerators}" for u in use.limits)
    message = f"within every limit: {figures}" if figures else f"FleetQuota {quota.name} has no limits"
    return Condition(Type.WITHIN_LIMITS, Status.TRUE, Reason.WITHIN_LIMITS, message)


def _names(names: Sequence[str]) -> str:
    more = len(names) - _SAID
    return ", ".join(names[:_SAID]) + (f" and {more} more" if more > 0 else "")
