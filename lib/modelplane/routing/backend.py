"""The Envoy Gateway Backend a ModelEndpoint composes."""

from __future__ import annotations

from typing import Any

from modelplane.routing.urls import EndpointURL, HostKind

BACKEND_API_VERSION = "gateway.envoyproxy.io/v1alpha1"
BACKEND_GROUP = "gateway.envoyproxy.io"


def backend(name: str, namespace: str, url: EndpointURL, *, verified_by_policy: bool = False) -> dict[str, Any]:
    """A Backend sending traffic to ``url``'s host and port, over TLS for https.

    TLS verifies the upstream against the system's well-known CAs and, for a DNS
    name, presents it as SNI; with ``verified_by_policy`` a BackendTLSPolicy
    (``modelplane.routing.backend_tls``) says both instead, and the Backend says
    nothing of TLS (a CA list and the well-known CAs cannot both be set).
    """
    if url.kind is HostKind.DNS:
        endpoint = {"fqdn": {"hostname": url.host, "port": url.port}}
    else:
        endpoint = {"ip": {"address": url.host, "port": url.port}}
    spec: dict[str, Any] = {"endpoints": [endpoint]}
    if url.tls and not verified_by_policy:
        tls: dict[str, Any] = {"wellKnownCACertificates": "System"}
        if url.kind is HostKind.DNS:
            tls["sni"] = url.host
        spec["tls"] = tls
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "Backend",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
