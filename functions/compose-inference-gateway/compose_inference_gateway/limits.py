"""An InferenceGateway's rate-limit counters and Envoy AI Gateway: ``spec.rateLimit`` and ``spec.aiGateway``.

The Redis TLS client certificate Secret is asked for by name on every call (in Envoy Gateway's
namespace, where its rate-limit service mounts it) only to say whether it exists. A missing one
composes nothing less; the gateway is not Ready and ``RateLimitReady`` names the field.
"""

from __future__ import annotations

from typing import Any

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from compose_inference_gateway.charts import Charts
from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.status import set_conditions
from modelplane.routing import GATEWAY_NAMESPACE
from modelplane.routing.gateway_values import Extras, Redis, ai_gateway_releases
from modelplane_models.inference_gateway import Spec

_CERTIFICATE = "redis-certificate"


def plan_of(spec: Spec) -> Extras:
    """Read ``spec.rateLimit`` and ``spec.aiGateway``."""
    redis = spec.rateLimit.redis if spec.rateLimit else None
    certificate = redis.secretRef.name if redis and redis.secretRef else None
    return Extras(Redis(redis.address, certificate) if redis else None, spec.aiGateway == "Enabled")


def request_secret(rsp: fnv1.RunFunctionResponse, extras: Extras) -> None:
    """Ask for the Redis certificate Secret by name (on every call, or Crossplane stops sending it)."""
    if extras.redis is not None and extras.redis.certificate:
        Requirement(_CERTIFICATE, "v1", "Secret").request(
            rsp, name=extras.redis.certificate, namespace=GATEWAY_NAMESPACE
        )


def desired(name: str, provider_config: dict[str, str], extras: Extras, charts: Charts) -> dict[str, dict[str, Any]]:
    """Envoy AI Gateway's Releases, with ``spec.components.aiGateway``, when ``spec.aiGateway`` is Enabled."""
    if not extras.ai_gateway:
        return {}
    return ai_gateway_releases(name, provider_config, charts.ai_gateway, charts.registry)


def report(rsp: fnv1.RunFunctionResponse, req: fnv1.RunFunctionRequest, extras: Extras) -> Condition:
    """Set ``RateLimitReady`` (with a warning when a Secret is missing) and return it."""
    counters = condition(req, extras)
    set_conditions(rsp, counters)
    if counters.reason == Reason.SECRET_NOT_FOUND:
        response.warning(rsp, counters.message)
    return counters


def condition(req: fnv1.RunFunctionRequest, extras: Extras) -> Condition:
    """``RateLimitReady``: where limits are counted, or which field names a Secret that is not there."""
    tokens = "; ModelService token limits are counted" if extras.ai_gateway else ""
    if extras.redis is None:
        message = (
            "no spec.rateLimit.redis: each Envoy replica counts ModelService limits on its own (local); "
            "token limits need spec.rateLimit.redis and spec.aiGateway Enabled"
        )
        return Condition(Type.RATE_LIMIT_READY, Status.TRUE, Reason.LOCAL_COUNTERS, message)
    if extras.redis.certificate:
        if _CERTIFICATE not in req.required_resources:
            message = f"reading the Redis certificate Secret in {GATEWAY_NAMESPACE}"
            return Condition(Type.RATE_LIMIT_READY, Status.UNKNOWN, Reason.WAITING_FOR_INPUTS, message)
        if not req.required_resources[_CERTIFICATE].items:
            message = (
                f"spec.rateLimit.redis.secretRef.name: Secret {GATEWAY_NAMESPACE}/{extras.redis.certificate} not "
                "found (Envoy Gateway's rate-limit service cannot reach Redis until it exists)"
            )
            return Condition(Type.RATE_LIMIT_READY, Status.FALSE, Reason.SECRET_NOT_FOUND, message)
    tls = " with TLS" if extras.redis.certificate else ""
    if not extras.ai_gateway:
        tokens = "; token limits need spec.aiGateway Enabled"
    message = f"ModelService limits are global, counted in Redis at {extras.redis.address}{tls}{tokens}"
    return Condition(Type.RATE_LIMIT_READY, Status.TRUE, Reason.REDIS_COUNTERS, message)
