"""The ModelEndpoint function: parse the endpoint's URL and compose its Envoy Gateway Backend.

A malformed URL is reported in the ``Valid`` condition, naming the problem, and
any Backend composed before is kept: routes that send to it keep working
until the user fixes the URL.

With ``spec.tls`` the Backend is verified against a private CA (a workload
cluster's gateway): ``upstream`` copies the CA certificate beside the endpoint
and composes the BackendTLSPolicy (``modelplane.routing.backend_tls``).
"""

from __future__ import annotations

import functools

import structlog
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_endpoint.upstream import Upstream, remove_upstream, resolve_upstream, write_upstream
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.names import BACKEND_KEY
from modelplane.problems import Problem, describe
from modelplane.routing import EndpointURL, InvalidURLError, backend, parse_url
from modelplane_models.model_endpoint import ModelEndpoint


def compose(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, ledger: Ledger, log: structlog.stdlib.BoundLogger
) -> None:
    """Parse the URL, resolve the upstream's CA, write the Backend (and its TLS policy), then status."""
    xr = parse_or_keep(ledger, log, ModelEndpoint, _invalid)
    if xr is None:
        return
    try:
        url = parse_url(xr.spec.url if xr.spec else "")
    except InvalidURLError as err:
        keep_all(ledger, log, Condition(Type.VALID, Status.FALSE, Reason.INVALID_URL, f"spec.url: {err}"))
        return
    name, namespace = name_of(xr), namespace_of(xr)
    upstream = resolve_upstream(req, rsp, namespace, xr.spec.tls if xr.spec else None, url)
    if isinstance(upstream, Condition):
        # Without the CA the Backend cannot be verified: what runs stays as it is until it can.
        keep_all(ledger, log, upstream)
        return
    # Envoy Gateway reports a Backend it can use as Accepted.
    accepted = inputs.ready(req, rsp, BACKEND_KEY, "Accepted").true
    ledger.put(BACKEND_KEY, backend(name, namespace, url, verified_by_policy=upstream is not None), ready=accepted)
    if upstream is not None:
        verified = write_upstream(ledger, name, namespace, upstream)
    else:
        verified = True
        remove_upstream(ledger)
    resource.update(rsp.desired.composite, {"status": {"backendName": name}})
    set_conditions(rsp, Condition(Type.VALID, Status.TRUE, Reason.VALID, _sends(url, upstream)))
    set_ready(rsp, ready=accepted and verified)


FunctionRunner = functools.partial(ComposeRunner, compose)


def _sends(url: EndpointURL, upstream: Upstream | None) -> str:
    where = f"{url.kind} {url.host} port {url.port}"
    if upstream is not None:
        return (
            f"sends over TLS to {where}, verified as {upstream.tls.hostname} against "
            f"Secret {upstream.tls.ca_namespace}/{upstream.tls.ca_secret}"
        )
    return f"sends {'over TLS ' if url.tls else ''}to {where}"


def _invalid(problems: list[Problem]) -> Condition:
    message = f"the ModelEndpoint is invalid: {describe(problems)}"
    return Condition(Type.VALID, Status.FALSE, Reason.INVALID_URL, message)
