"""The ModelEndpoint function: parse the endpoint's URL and compose its Envoy Gateway Backend.

A malformed URL is reported in the ``Valid`` condition, naming the problem, and
any Backend composed before is kept: routes that send to it keep working
until the user fixes the URL.
"""

from __future__ import annotations

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.keep import hold
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import InvalidXRError, parse_composite
from modelplane.names import BACKEND_KEY
from modelplane.routing import InvalidURLError, backend, parse_url
from modelplane_models.model_endpoint import ModelEndpoint


class FunctionRunner(ComposeRunner):
    """Runs the ModelEndpoint function."""

    def __init__(self) -> None:
        """Create the runner."""
        super().__init__(compose)


def compose(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, log: structlog.stdlib.BoundLogger) -> None:
    """Parse the URL, write the Backend, then status, conditions and readiness."""
    try:
        xr = parse_composite(req, ModelEndpoint)
        url = parse_url(xr.spec.url if xr.spec else "")
    except (InvalidXRError, InvalidURLError) as err:
        message = f"spec.url: {err}" if isinstance(err, InvalidURLError) else f"the ModelEndpoint is invalid: {err}"
        hold(req, rsp, log, Condition(Type.VALID, Status.FALSE, Reason.INVALID_URL, message))
        return
    meta = xr.metadata
    name, namespace = (meta.name if meta else None) or "", (meta.namespace if meta else None) or ""
    resource.update(rsp.desired.resources[BACKEND_KEY], backend(name, namespace, url))
    # Envoy Gateway reports a Backend it can use as Accepted.
    accepted = inputs.is_ready(req, rsp, BACKEND_KEY, "Accepted")
    rsp.desired.resources[BACKEND_KEY].ready = fnv1.READY_TRUE if accepted else fnv1.READY_FALSE
    resource.update(rsp.desired.composite, {"status": {"backendName": name}})
    tls = "over TLS " if url.tls else ""
    message = f"sends {tls}to {url.kind} {url.host} port {url.port}"
    set_conditions(rsp, Condition(Type.VALID, Status.TRUE, Reason.VALID, message))
    set_ready(rsp, ready=accepted)
