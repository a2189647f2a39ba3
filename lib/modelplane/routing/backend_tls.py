"""The control plane verifies a workload gateway: the endpoint's CA, copied beside it, and a BackendTLSPolicy.

A ModelEndpoint composed for a workload cluster names, in ``spec.tls``, the
control-plane Secret holding that cluster's gateway CA certificate (``ca.crt``
only; see ``modelplane.routing.workload_tls``) and the name the gateway's
certificate is issued for. A BackendTLSPolicy's ``caCertificateRefs`` are local
to its namespace, so the endpoint copies that one key into a Secret of its own
namespace, and a Gateway API ``BackendTLSPolicy`` attached to its Envoy Gateway
Backend verifies the upstream against it, with the name as SNI and as the name
checked. Envoy Gateway (v1.9) merges a BackendTLSPolicy attached to a Backend
into the Backend's own ``spec.tls``, the policy winning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.routing.backend import BACKEND_GROUP
from modelplane.routing.gateway import GATEWAY_GROUP
from modelplane.routing.workload_tls import CA_KEY

BACKEND_TLS_POLICY_API_VERSION = f"{GATEWAY_GROUP}/v1"


@dataclass(frozen=True)
class UpstreamTLS:
    """How the control plane verifies an endpoint's upstream: the CA Secret and the name to verify.

    Attributes:
        ca_secret: The control-plane Secret (name) with the CA certificate under ``ca.crt``.
        ca_namespace: Its namespace.
        hostname: The name sent as SNI and checked against the upstream's certificate.
    """

    ca_secret: str
    ca_namespace: str
    hostname: str

    def spec(self) -> dict[str, Any]:
        """As ``ModelEndpoint.spec.tls`` (and the gateway's and replica's ``status...tls``) write it."""
        return {"caSecretRef": {"name": self.ca_secret, "namespace": self.ca_namespace}, "hostname": self.hostname}


def read_tls(value: object) -> UpstreamTLS | None:
    """The ``tls`` block as written by ``UpstreamTLS.spec``; None when absent or incomplete."""
    if not isinstance(value, Mapping):
        return None
    ref = value.get("caSecretRef")
    ref = ref if isinstance(ref, Mapping) else {}
    name, namespace, hostname = ref.get("name"), ref.get("namespace"), value.get("hostname")
    if not (isinstance(name, str) and isinstance(namespace, str) and isinstance(hostname, str)):
        return None
    if not (name and namespace and hostname):
        return None
    return UpstreamTLS(name, namespace, hostname)


def ca_copy(name: str, namespace: str, ca_crt: str) -> dict[str, Any]:
    """The CA certificate (``ca_crt``, base64 as in a Secret's data) in a Secret of the endpoint's namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "data": {CA_KEY: ca_crt},
    }


def backend_tls_policy(name: str, namespace: str, backend: str, ca_secret: str, hostname: str) -> dict[str, Any]:
    """The BackendTLSPolicy verifying the Backend ``backend`` against the CA in ``ca_secret`` as ``hostname``."""
    return {
        "apiVersion": BACKEND_TLS_POLICY_API_VERSION,
        "kind": "BackendTLSPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRefs": [{"group": BACKEND_GROUP, "kind": "Backend", "name": backend}],
            "validation": {
                "caCertificateRefs": [{"group": "", "kind": "Secret", "name": ca_secret}],
                "hostname": hostname,
            },
        },
    }


def policy_accepted(observed: Mapping[str, Any] | None, gateway_controller: str) -> bool:
    """Whether the observed BackendTLSPolicy is Accepted by ``gateway_controller`` for some ancestor."""
    ancestors = ((observed or {}).get("status") or {}).get("ancestors") or []
    for ancestor in ancestors:
        if not isinstance(ancestor, Mapping) or ancestor.get("controllerName") != gateway_controller:
            continue
        for cond in ancestor.get("conditions") or []:
            if isinstance(cond, Mapping) and cond.get("type") == "Accepted" and cond.get("status") == "True":
                return True
    return False
