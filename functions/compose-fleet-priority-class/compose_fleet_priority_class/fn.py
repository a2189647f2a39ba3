"""The FleetPriorityClass function: report the class's value and mark it ready.

A FleetPriorityClass composes nothing: the schema refuses what it can (a value out of bounds, a
changed value), so a class that parses is valid. ModelDeployments read the class itself.
"""

from __future__ import annotations

import functools

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import read_xr
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.problems import describe
from modelplane_models.fleet_priority_class import FleetPriorityClass


def compose(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    _ledger: Ledger,  # a priority class composes nothing: there is nothing to keep
    log: structlog.stdlib.BoundLogger,
) -> None:
    """Read the class, then write its status, condition and readiness."""
    xr = read_xr(req, FleetPriorityClass)
    if isinstance(xr, list) or xr.spec is None:
        message = describe(xr) if isinstance(xr, list) else "spec: required"
        log.info("invalid priority class", problems=message)
        response.warning(rsp, f"FleetPriorityClass is invalid: {message}")
        set_conditions(rsp, Condition(Type.VALID, Status.FALSE, Reason.INVALID_SPEC, message))
        set_ready(rsp, ready=False)
        return
    resource.update(rsp.desired.composite, {"status": {"value": xr.spec.value}})
    message = f"value {xr.spec.value}"
    set_conditions(rsp, Condition(Type.VALID, Status.TRUE, Reason.VALID, message))
    set_ready(rsp, ready=True)


FunctionRunner = functools.partial(ComposeRunner, compose)
