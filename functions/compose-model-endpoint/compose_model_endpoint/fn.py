"""The ModelEndpoint function: parse the endpoint's URL and compose its Envoy Gateway Backend.

A malformed URL is reported in the ``Valid`` condition, naming the problem, and
any Backend composed before is kept: routes that send to it keep working
until the user fixes the URL. An endpoint with ``spec.credentials`` also composes
the HTTPRouteFilter that injects them (``modelplane.routing.credentials``); its
Secret is asked for by name only to say whether it exists and has the key Envoy
Gateway reads (the value is never read). While it does not, the filter is kept
but not published in ``status.credentialsFilterName``, the endpoint is not Ready
(services send it nothing: a hosted API would refuse every request), and
``CredentialsReady`` names the field.

With ``spec.tls`` the Backend is verified against a private CA (a workload
cluster's gateway): ``upstream`` copies the CA certificate beside the endpoint
and composes the BackendTLSPolicy (``modelplane.routing.backend_tls``).
"""

from __future__ import annotations

import functools

import structlog
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_endpoint.upstream import Upstream, remove_upstream, resolve_upstream, write_upstream
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.preamble import keep_all, parse_or_keep
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.runner import ComposeRunner
from modelplane.fnkit.status import set_conditions, set_ready
from modelplane.fnkit.xr import name_of, namespace_of
from modelplane.names import BACKEND_KEY, CREDENTIALS_KEY, credentials_filter_name
from modelplane.problems import Problem, describe
from modelplane.routing import EndpointURL, InvalidURLError, backend, parse_url
from modelplane.routing.credentials import CREDENTIAL_KEY, DEFAULT_HEADER, credentials_filter
from modelplane_models.model_endpoint import Credentials, ModelEndpoint

# The Secret spec.credentials.secretRef names, asked for by name in the endpoint's namespace.
SECRET = Requirement("credentials-secret", "v1", "Secret")


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
    status = {"backendName": name}
    credentials = _credentials(req, rsp, ledger, name, namespace, xr.spec.credentials if xr.spec else None)
    if credentials is not None:
        set_conditions(rsp, credentials)
        if credentials.status == Status.TRUE:
            status["credentialsFilterName"] = credentials_filter_name(name)
        else:
            response.warning(rsp, credentials.message)
            log.info("credentials not ready", reason=str(credentials.reason), message=credentials.message)
    ledger.remove([CREDENTIALS_KEY], "spec.credentials is not set")
    resource.update(rsp.desired.composite, {"status": status})
    set_conditions(rsp, Condition(Type.VALID, Status.TRUE, Reason.VALID, _sends(url, upstream)))
    set_ready(rsp, ready=accepted and verified and (credentials is None or credentials.status == Status.TRUE))


FunctionRunner = functools.partial(ComposeRunner, compose)


def _credentials(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    ledger: Ledger,
    name: str,
    namespace: str,
    credentials: Credentials | None,
) -> Condition | None:
    """Write the credentials filter and say whether its Secret is there; None without ``spec.credentials``."""
    if credentials is None:
        return None
    secret, header = credentials.secretRef.name, credentials.header or DEFAULT_HEADER
    SECRET.request(rsp, name=secret, namespace=namespace)
    ledger.put(
        CREDENTIALS_KEY, credentials_filter(credentials_filter_name(name), namespace, secret, header), ready=True
    )
    field = "spec.credentials.secretRef.name"
    if not SECRET.fetched(req):
        return Condition(Type.CREDENTIALS_READY, Status.UNKNOWN, Reason.WAITING_FOR_INPUTS, f"reading Secret {secret}")
    found = SECRET.first(req)
    if found is None:
        message = f"{field}: Secret {namespace}/{secret} not found; the endpoint gets no traffic until it exists"
        return Condition(Type.CREDENTIALS_READY, Status.FALSE, Reason.SECRET_NOT_FOUND, message)
    # The API server returns data only; stringData is what a manifest (an in-process render) may carry.
    keys = {
        key
        for field_name in ("data", "stringData")
        if field_name in found.fields and found.fields[field_name].HasField("struct_value")
        for key in found.fields[field_name].struct_value.fields
    }
    if CREDENTIAL_KEY not in keys:
        message = (
            f"{field}: Secret {namespace}/{secret} has no key {CREDENTIAL_KEY!r} (the one Envoy Gateway injects); "
            "the endpoint gets no traffic until it has"
        )
        return Condition(Type.CREDENTIALS_READY, Status.FALSE, Reason.SECRET_NOT_FOUND, message)
    message = f"the gateway sends Secret {secret}'s {CREDENTIAL_KEY} in header {header}, replacing a client's"
    return Condition(Type.CREDENTIALS_READY, Status.TRUE, Reason.CREDENTIALS_INJECTED, message)


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
