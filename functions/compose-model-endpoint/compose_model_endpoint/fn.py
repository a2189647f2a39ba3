"""The ModelEndpoint function: parse the endpoint's URL and compose its Envoy Gateway Backend.

A malformed URL is reported in the ``Valid`` condition, naming the problem, and
any Backend composed before is kept: routes that send to it keep working
until the user fixes the URL.
"""

from __future__ import annotations

import functools

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.names import BACKEND_KEY
from modelplane.problems import Problem, describe
from modelplane.routing import InvalidURLError, backend, parse_url
from modelplane_models.model_endpoint import ModelEndpoint


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Parse the URL, write the Backend, then status, conditions and readiness."""
    xr = parse_or_keep(ledger, log, ModelEndpoint, _invalid)
    if xr is None:
        return
    try:
        url = parse_url(xr.spec.url if xr.spec else "")
    except InvalidURLError as err:
        keep_all(ledger, log, Condition(Type.VALID, Status.FALSE, Reason.INVALID_URL, f"spec.url: {err}"))
        return
    name, namespace = name_of(xr), namespace_of(xr)
    # Envoy Gateway reports a Backend it can use as Accepted.
    accepted = inputs.ready(req, rsp, BACKEND_KEY, "Accepted").true
    ledger.put(BACKEND_KEY, backend(name, namespace, url), ready=accepted)
    resource.update(rsp.desired.composite, {"status": {"backendName": name}})
    tls = "over TLS " if url.tls else ""
    message = f"sends {tls}to {url.kind} {url.host} port {url.port}"
    set_conditions(rsp, Condition(Type.VALID, Status.TRUE, Reason.VALID, message))
    set_ready(rsp, ready=accepted)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _invalid(problems: list[Problem]) -> Condition:
    message = f"the ModelEndpoint is invalid: {describe(problems)}"
    return Condition(Type.VALID, Status.FALSE, Reason.INVALID_URL, message)
