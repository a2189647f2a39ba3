"""What a ModelService's route answers while no endpoint serves: a 503 that says why, not Envoy's bare 500.

A route rule whose backends are all gone or weigh 0 makes Envoy Gateway answer 500
(Gateway API's rule for a rule with no valid backend). A deployment scaled to zero,
or whose replicas are all still loading, is unavailable, not broken: the rule then
points at an Envoy Gateway HTTPRouteFilter with a direct response, 503 with an
OpenAI-style error body (what inference clients parse) and a Retry-After.
"""

from __future__ import annotations

import json
from typing import Any

from modelplane.routing.backend import BACKEND_API_VERSION, BACKEND_GROUP

STATUS_CODE = 503
# Seconds a client waits before retrying: about one autoscaler poll plus a scheduling round.
RETRY_AFTER_SECONDS = 30


def unavailable_filter_name(service: str) -> str:
    """The HTTPRouteFilter of ``service``'s 503 (one per ModelService, in its namespace)."""
    return f"{service}-unavailable"


def unavailable_filter(service: str, namespace: str) -> dict[str, Any]:
    """The HTTPRouteFilter answering 503 for ModelService ``namespace/service``."""
    message = (
        f"ModelService {namespace}/{service} has no Ready endpoint: its deployments may be scaled to zero "
        "(spec.replicas 0) or still starting; retry later"
    )
    body = {"error": {"message": message, "type": "service_unavailable", "code": STATUS_CODE}}
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "HTTPRouteFilter",
        "metadata": {"name": unavailable_filter_name(service), "namespace": namespace},
        "spec": {
            "directResponse": {
                "statusCode": STATUS_CODE,
                "contentType": "application/json",
                "body": {"type": "Inline", "inline": json.dumps(body, sort_keys=True)},
                "header": {"add": [{"name": "Retry-After", "value": str(RETRY_AFTER_SECONDS)}]},
            }
        },
    }


def unavailable_ref(service: str) -> dict[str, Any]:
    """The route rule's filter sending every request to the 503."""
    return {
        "type": "ExtensionRef",
        "extensionRef": {"group": BACKEND_GROUP, "kind": "HTTPRouteFilter", "name": unavailable_filter_name(service)},
    }
