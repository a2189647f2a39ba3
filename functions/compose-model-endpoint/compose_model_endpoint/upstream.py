"""An endpoint's upstream CA (``spec.tls``): where it is read from, and what verifies the Backend with it.

1. No ``spec.tls``: nothing to verify against but the system's CAs (the Backend says so itself).
2. ``spec.tls`` with an http URL: refused (the XRD refuses it too).
3. A CA Secret in the endpoint's own namespace is used as it is.
4. Another namespace: only a workload gateway's CA (``<cluster>-gateway-ca`` in
   ``CONTROL_PLANE_NAMESPACE``, as a ServingStack publishes it) is read, so that an endpoint cannot
   copy keys of other Secrets into its namespace; its ``ca.crt``, nothing else, is copied beside the
   endpoint (a BackendTLSPolicy's CA references are local to its namespace).

Until the CA is read the caller keeps what it composed before: a Backend switched to https without its
policy would fail every request.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.fnkit.required import Requirement
from modelplane.layout import Layout
from modelplane.names import BACKEND_TLS_POLICY_KEY, CONTROL_PLANE_NAMESPACE, UPSTREAM_CA_KEY, upstream_ca_name
from modelplane.routing import CONTROLLER_NAME
from modelplane.routing.backend_tls import UpstreamTLS, backend_tls_policy, ca_copy, policy_accepted
from modelplane.routing.urls import EndpointURL
from modelplane.routing.workload_tls import CA_KEY
from modelplane_models.model_endpoint import Tls

CA = Requirement("upstream-ca", "v1", "Secret")
_GATEWAY_CA_SUFFIX = "-gateway-ca"
_SECRET: Layout = {"data": {CA_KEY: str}}
_POLICY: Layout = {"status": {"ancestors": [{"controllerName": str, "conditions": [{"type": str, "status": str}]}]}}


@dataclass(frozen=True)
class Upstream:
    """The CA an endpoint verifies its upstream with: ``tls``, and the ``ca.crt`` to copy (None: used in place)."""

    tls: UpstreamTLS
    ca_data: str | None


def resolve_upstream(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    namespace: str,
    spec: Tls | None,
    url: EndpointURL,
) -> Upstream | Condition | None:
    """The endpoint's upstream CA; None without ``spec.tls``; a Condition when it cannot be used (yet)."""
    # 1. Nothing to verify against but the system's CAs.
    if spec is None:
        return None
    tls = UpstreamTLS(spec.caSecretRef.name, spec.caSecretRef.namespace, spec.hostname)
    # 2. TLS settings for a plain HTTP upstream mean nothing.
    if not url.tls:
        message = "spec.tls: needs an https:// spec.url (TLS verification of a plain HTTP upstream means nothing)"
        return Condition(Type.VALID, Status.FALSE, Reason.INVALID_SPEC, message)
    # 3. A CA beside the endpoint.
    if tls.ca_namespace == namespace:
        return Upstream(tls, None)
    # 4. A workload gateway's CA, copied.
    return _gateway_ca(req, rsp, tls)


def _gateway_ca(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, tls: UpstreamTLS) -> Upstream | Condition:
    if tls.ca_namespace != CONTROL_PLANE_NAMESPACE or not tls.ca_secret.endswith(_GATEWAY_CA_SUFFIX):
        message = (
            f"spec.tls.caSecretRef: {tls.ca_namespace}/{tls.ca_secret} is neither in the endpoint's namespace nor "
            f"a workload gateway's CA (<cluster>{_GATEWAY_CA_SUFFIX} in {CONTROL_PLANE_NAMESPACE})"
        )
        return Condition(Type.VALID, Status.FALSE, Reason.INVALID_SPEC, message)
    CA.request(rsp, name=tls.ca_secret, namespace=tls.ca_namespace)
    where = f"Secret {tls.ca_namespace}/{tls.ca_secret}"
    if not CA.fetched(req):
        return Condition(Type.VALID, Status.FALSE, Reason.WAITING_FOR_INPUTS, f"spec.tls.caSecretRef: reading {where}")
    found = next(inputs.required(req, rsp, CA.name, _SECRET), None)
    data = ((found or {}).get("data") or {}).get(CA_KEY) if found is not None else None
    if not data:
        why = "not found" if found is None else f"has no {CA_KEY}"
        message = (
            f"spec.tls.caSecretRef: {where} {why} (a cluster's gateway publishes it once its certificate is issued)"
        )
        return Condition(Type.VALID, Status.FALSE, Reason.CA_NOT_FOUND, message)
    return Upstream(tls, str(data))


def write_upstream(ledger: Ledger, name: str, namespace: str, upstream: Upstream) -> bool:
    """Compose the CA's copy (when it is not beside the endpoint) and the BackendTLSPolicy; return if accepted."""
    ca_secret = upstream.tls.ca_secret
    if upstream.ca_data is not None:
        ca_secret = upstream_ca_name(name)
        ledger.put(UPSTREAM_CA_KEY, ca_copy(ca_secret, namespace, upstream.ca_data), ready=True)
    else:
        ledger.remove([UPSTREAM_CA_KEY], "spec.tls.caSecretRef names a Secret of the endpoint's own namespace")
    observed = inputs.observed(ledger.req, ledger.rsp, BACKEND_TLS_POLICY_KEY, _POLICY)
    accepted = policy_accepted(observed, CONTROLLER_NAME)
    policy = backend_tls_policy(name, namespace, name, ca_secret, upstream.tls.hostname)
    ledger.put(BACKEND_TLS_POLICY_KEY, policy, ready=accepted)
    return accepted


def remove_upstream(ledger: Ledger) -> None:
    """Without ``spec.tls`` the CA's copy and the policy go: the user's change."""
    ledger.remove([UPSTREAM_CA_KEY, BACKEND_TLS_POLICY_KEY], "spec.tls is not set")
