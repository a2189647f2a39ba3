"""A ModelService routed through Envoy AI Gateway: its AIGatewayRoute and one AIServiceBackend per Backend.

A service whose tokens are limited needs the AI gateway's filter on its route, which counts each
response's tokens (``llmRequestCosts``); that filter is on the HTTPRoute Envoy AI Gateway generates
from an AIGatewayRoute, named as the AIGatewayRoute. So such a service composes an AIGatewayRoute
with its own name in place of its HTTPRoute, and the policies that targeted the HTTPRoute by name
(the service's BackendTrafficPolicy and SecurityPolicy) target the generated one unchanged.

An AIGatewayRoute matches headers only, not paths (Envoy AI Gateway v1.1): the generated route serves
the OpenAI paths at the gateway's root (``/v1/chat/completions``), and a request reaches this service
by naming it in ``SERVICE_HEADER`` (``<namespace>/<name>``). Each AIServiceBackend wraps an endpoint's
Envoy Gateway Backend; the endpoint's ``rewritePath`` becomes the OpenAI schema's prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.routing.backend import BACKEND_GROUP
from modelplane.routing.gateway import GATEWAY_GROUP, GatewayRef
from modelplane.routing.route import NO_TIMEOUT

AI_GATEWAY_API_VERSION = "aigateway.envoyproxy.io/v1beta1"
AI_GATEWAY_GROUP = "aigateway.envoyproxy.io"
# The header a request names its token-limited service in: ``<namespace>/<name>``.
SERVICE_HEADER = "x-modelplane-service"
# The API the AI gateway speaks to the model servers (the one ModelEndpoints serve).
SCHEMA = "OpenAI"


def service_id(namespace: str, name: str) -> str:
    """What a request sends in ``SERVICE_HEADER`` to reach ModelService ``namespace``/``name``."""
    return f"{namespace}/{name}"


def backend_ref(name: str, weight: int, priority: int | None = None) -> dict[str, Any]:
    """One backendRef of the route: AIServiceBackend ``name`` with ``weight`` (and its ``priority`` tier, if any).

    Envoy AI Gateway sends to the lowest priority whose backends are healthy, by weight among them.
    """
    ref: dict[str, Any] = {"name": name, "weight": weight}
    if priority is not None:
        ref["priority"] = priority
    return ref


def ai_service_backend(name: str, namespace: str, backend: str, rewrite_path: str = "/") -> dict[str, Any]:
    """The AIServiceBackend wrapping Envoy Gateway Backend ``backend``, reached at ``rewrite_path`` + ``/v1``."""
    return {
        "apiVersion": AI_GATEWAY_API_VERSION,
        "kind": "AIServiceBackend",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schema": {"name": SCHEMA, "prefix": f"{rewrite_path.rstrip('/')}/v1"},
            "backendRef": {"group": BACKEND_GROUP, "kind": "Backend", "name": backend},
        },
    }


# The headers Envoy AI Gateway injects an API key in, and the BackendSecurityPolicy type of each
# (lower case: header names are case-insensitive). Both read the Secret's key ``API_KEY_SECRET_KEY``.
_CREDENTIAL_TYPES = {"authorization": ("APIKey", "apiKey"), "x-api-key": ("AnthropicAPIKey", "anthropicAPIKey")}
API_KEY_SECRET_KEY = "apiKey"  # noqa: S105 - the name of a Secret's key, not a secret


def injects_in(header: str) -> bool:
    """Whether Envoy AI Gateway can inject an API key in ``header`` (Authorization or x-api-key)."""
    return header.lower() in _CREDENTIAL_TYPES


def backend_security_policy(name: str, namespace: str, target: str, secret: str, header: str) -> dict[str, Any]:
    """The BackendSecurityPolicy giving AIServiceBackend ``target`` the API key in Secret ``secret``.

    ``header`` must be one ``injects_in`` accepts: Authorization (sent as ``Bearer <key>``) or
    x-api-key (Anthropic's). The Secret is named, never read: Envoy AI Gateway reads its ``apiKey``.
    """
    kind, field = _CREDENTIAL_TYPES[header.lower()]
    return {
        "apiVersion": AI_GATEWAY_API_VERSION,
        "kind": "BackendSecurityPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRefs": [{"group": AI_GATEWAY_GROUP, "kind": "AIServiceBackend", "name": target}],
            "type": kind,
            field: {"secretRef": {"name": secret}},
        },
    }


def ai_gateway_route(
    name: str,
    namespace: str,
    gateway: GatewayRef,
    refs: Sequence[Mapping[str, Any]],
    costs: Sequence[Mapping[str, str]],
) -> dict[str, Any]:
    """The AIGatewayRoute named as the service: requests naming it in ``SERVICE_HEADER`` go to ``refs``.

    Args:
        name: The service's name (also the HTTPRoute Envoy AI Gateway generates).
        namespace: The service's namespace.
        gateway: The Gateway the route attaches to.
        refs: The backendRefs (``backend_ref``), in order.
        costs: The ``llmRequestCosts`` the route counts (the service's token limits read them).
    """
    rule: dict[str, Any] = {
        "matches": [{"headers": [{"type": "Exact", "name": SERVICE_HEADER, "value": service_id(namespace, name)}]}],
        # A token stream can run for minutes, as on the service's HTTPRoute.
        "timeouts": {"request": NO_TIMEOUT},
    }
    if refs:
        rule["backendRefs"] = [dict(r) for r in refs]
    spec: dict[str, Any] = {
        "parentRefs": [
            {"group": GATEWAY_GROUP, "kind": "Gateway", "name": gateway.name, "namespace": gateway.namespace}
        ],
        "rules": [rule],
    }
    if costs:
        spec["llmRequestCosts"] = [dict(c) for c in costs]
    return {
        "apiVersion": AI_GATEWAY_API_VERSION,
        "kind": "AIGatewayRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
