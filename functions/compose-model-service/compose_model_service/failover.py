"""What a ModelService's fallback tier composes: a fallback Backend copy per endpoint, and its traffic policy parts.

Each endpoint of a fallback tier that Envoy fails over to per request is sent to through the
service's own copy of its Backend (``spec.fallback: true``): the endpoint's Backend is shared by
every service that selects it. A copy no longer referenced is kept while its endpoint is in the
route (the control plane moving traffic between tiers must not delete what Envoy may be sending
to); it goes once the service no longer selects the endpoint.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.fnkit import inputs
from modelplane.fnkit.ledger import Ledger
from modelplane.names import FALLBACK_KEY_PREFIX, fallback_backend_name
from modelplane.routing import RoutePlan
from modelplane.routing.tiers import fallback_backend, traffic_parts


def write(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    ledger: Ledger,
    service: str,
    namespace: str,
    plan: RoutePlan,
) -> dict[str, Any]:
    """Write the fallback Backends of ``plan``; return the BackendTrafficPolicy parts failing over needs."""
    for b in plan.backends:
        if b.fallback and b.endpoint.url is not None:
            key = f"{FALLBACK_KEY_PREFIX}{b.endpoint.name}"
            obj = fallback_backend(fallback_backend_name(service, b.endpoint.name), namespace, b.endpoint.url)
            ledger.put(key, obj, ready=inputs.ready(req, rsp, key, "Accepted").true)
    in_route = [f"{FALLBACK_KEY_PREFIX}{b.endpoint.name}" for b in plan.backends]
    ledger.keep(in_route, "its endpoint is in the route, not a fallback Envoy fails over to now")
    ledger.remove_unwritten(
        lambda key: key.startswith(FALLBACK_KEY_PREFIX),
        lambda key: f"the service no longer selects ModelEndpoint {key.removeprefix(FALLBACK_KEY_PREFIX)}",
    )
    return traffic_parts(fallback=plan.fails_over)


def write_ai(ledger: Ledger, plan: RoutePlan) -> dict[str, Any]:
    """Through Envoy AI Gateway, tiers are backendRef priorities: no fallback copies; the same health checks, retries.

    The copies composed for the HTTPRoute go with it (the AI gateway's route replaces it).
    """
    ledger.remove_unwritten(
        lambda key: key.startswith(FALLBACK_KEY_PREFIX),
        lambda _key: "the service is routed through Envoy AI Gateway, whose priorities fail over",
    )
    return traffic_parts(fallback=len(plan.tiers) > 1)
