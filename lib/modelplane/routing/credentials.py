"""The Envoy Gateway HTTPRouteFilter a ModelEndpoint with ``spec.credentials`` composes.

The filter names the Secret: Envoy Gateway reads the value (its key ``credential``) and injects
it upstream, so the credential never passes through a composed object. ModelService routes put
the filter on the endpoint's backendRef only, so no other upstream of the route receives it.
"""

from __future__ import annotations

from typing import Any

from modelplane.routing.backend import BACKEND_API_VERSION

# The only Secret key Envoy Gateway's credentialInjection reads.
CREDENTIAL_KEY = "credential"
DEFAULT_HEADER = "Authorization"


def credentials_filter(name: str, namespace: str, secret: str, header: str = DEFAULT_HEADER) -> dict[str, Any]:
    """An HTTPRouteFilter injecting Secret ``secret``'s ``credential`` into ``header``, replacing a client's value.

    Overwriting matters: a client calls the gateway with its own key (often in Authorization),
    which must not reach the hosted API, and the hosted API must get the endpoint's key.
    """
    injection = {"header": header, "overwrite": True, "credential": {"valueRef": {"name": secret}}}
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "HTTPRouteFilter",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"credentialInjection": injection},
    }
