"""Which route kind carries a ModelService, and writing it: an HTTPRoute on Envoy Gateway, or Envoy AI Gateway's route.

An HTTPRoute is the default. The service goes through Envoy AI Gateway when its limits count
tokens or it has more tiers than Envoy Gateway's two (``limits.through_ai_gateway``); the other
kind's route and fallback copies go, so one route at a time carries the service.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_model_service import failover, limits
from modelplane.fnkit.ledger import Ledger
from modelplane.names import ROUTE_KEY
from modelplane.routing import GatewayRef, RoutePlan, http_route
from modelplane.routing.limits import LimitsPlan


@dataclass(frozen=True)
class Written:
    """What writing the route decided: its kind, whether it is accepted, the traffic policy parts, refusals."""

    ai: bool
    accepted: bool
    traffic_parts: dict[str, Any]
    refused: list[str] = field(default_factory=list)


def write_route(  # noqa: PLR0913 - the service, where it is routed, and the plan and limits that shape the route
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    ledger: Ledger,
    *,
    service: tuple[str, str],
    ref: GatewayRef,
    path: str,
    plan: RoutePlan,
    limited: LimitsPlan,
    many_tiers: bool,
    accepted: bool,
) -> Written:
    """Write the route of ``service`` (name, namespace) for ``plan``; ``accepted`` is the HTTPRoute's observed state."""
    name, namespace = service
    if limits.through_ai_gateway(req, limited, many_tiers=many_tiers):
        ai_accepted, problems = limits.put_ai_route(ledger, name, namespace, ref, plan, limited)
        return Written(ai=True, accepted=ai_accepted, traffic_parts=failover.write_ai(ledger, plan), refused=problems)
    ledger.put(ROUTE_KEY, http_route(name, namespace, path, ref, plan), ready=accepted)
    limits.remove_ai_route(ledger)
    return Written(ai=False, accepted=accepted, traffic_parts=failover.write(req, rsp, ledger, name, namespace, plan))
