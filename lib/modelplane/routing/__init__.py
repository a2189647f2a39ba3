"""Routing: the control-plane gateway, endpoint Backends and ModelService routes (pure, no SDK)."""

from modelplane.routing.backend import BACKEND_API_VERSION, BACKEND_GROUP, backend
from modelplane.routing.gateway import (
    CONTROLLER_NAME,
    GATEWAY_NAMESPACE,
    SUPPORTS_BACKEND_PATH_REWRITE,
    GatewayRef,
    Listener,
    address,
    certificate_grant,
    gateway,
    gateway_class,
    gateway_ref,
    release,
)
from modelplane.routing.route import (
    BackendRef,
    Endpoint,
    GroupResult,
    RoutePlan,
    Selection,
    http_route,
    plan_route,
    route_accepted,
)
from modelplane.routing.unavailable import unavailable_filter
from modelplane.routing.urls import EndpointURL, HostKind, InvalidURLError, parse_url
from modelplane.routing.weights import MAX_WEIGHT, Group, Share, split_weights

__all__ = [
    "BACKEND_API_VERSION",
    "BACKEND_GROUP",
    "CONTROLLER_NAME",
    "GATEWAY_NAMESPACE",
    "MAX_WEIGHT",
    "SUPPORTS_BACKEND_PATH_REWRITE",
    "BackendRef",
    "Endpoint",
    "EndpointURL",
    "GatewayRef",
    "Group",
    "GroupResult",
    "HostKind",
    "InvalidURLError",
    "Listener",
    "RoutePlan",
    "Selection",
    "Share",
    "address",
    "backend",
    "certificate_grant",
    "gateway",
    "gateway_class",
    "gateway_ref",
    "http_route",
    "parse_url",
    "plan_route",
    "release",
    "route_accepted",
    "split_weights",
    "unavailable_filter",
]
