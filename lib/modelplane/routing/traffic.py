"""The one Envoy Gateway BackendTrafficPolicy on a ModelService's route: its rate limits, health checks and retries.

Envoy Gateway applies a single BackendTrafficPolicy per target (of two on the same route, the
older wins and the other is reported as conflicted), so everything a service sets for how its
backends are called is written into one policy: the limits of ``spec.limits`` (``rateLimit``)
and what the fallback tiers of ``spec.endpoints[].tier`` need (``healthCheck``, ``retry``).
Each feature supplies its own part of the spec; none is composed while no part is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.routing.backend import BACKEND_API_VERSION
from modelplane.routing.gateway import GATEWAY_GROUP


def traffic_policy(name: str, namespace: str, route: str, parts: Mapping[str, Any]) -> dict[str, Any] | None:
    """The BackendTrafficPolicy targeting HTTPRoute ``route`` with ``parts`` (spec fields), or None when all are unset.

    ``parts`` maps a top-level spec field (``rateLimit``, ``healthCheck``, ``retry``, ...) to its value;
    unset (None or empty) parts are left out, so a feature that is off adds nothing.
    """
    spec = {field: value for field, value in sorted(parts.items()) if value}
    if not spec:
        return None
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "BackendTrafficPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"targetRefs": [{"group": GATEWAY_GROUP, "kind": "HTTPRoute", "name": route}], **spec},
    }
