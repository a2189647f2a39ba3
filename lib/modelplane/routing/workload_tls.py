"""TLS on the workload gateway: the cert-manager chain that gives it a serving certificate.

Each workload cluster is its own small PKI, all of it in the gateway's namespace
there (``WORKLOAD_GATEWAY_NAMESPACE``), through cert-manager (``cert-manager.io/v1``,
installed by the ServingStack):

1. a self-signed ``Issuer`` bootstraps
2. a CA ``Certificate`` (``isCA``), whose Secret backs
3. a CA ``Issuer``, which signs
4. the gateway's serving ``Certificate`` for ``GATEWAY_TLS_HOSTNAME``; its Secret is
   the HTTPS listener's ``certificateRefs``.

The control plane verifies the gateway against the CA certificate alone: the
provider-kubernetes Object carrying the CA Certificate copies the CA Secret's
``ca.crt`` (never ``tls.key``) into a connection Secret on the control plane
(``connection_details``). No private key leaves the cluster.
"""

from __future__ import annotations

from typing import Any

from modelplane.names import WORKLOAD_GATEWAY_NAMESPACE

CERT_MANAGER_API_VERSION = "cert-manager.io/v1"
CERT_MANAGER_GROUP = "cert-manager.io"
# The name the gateway's certificate is issued for, sent as SNI and verified by the control plane.
# Replica and pool hosts (``a.b.replicas.modelplane.ai``) are two labels under their suffix, which
# no wildcard matches, and they travel as the Host header, not as SNI: one fixed name per cluster's
# own CA is enough, since a certificate of cluster A never verifies against cluster B's CA.
GATEWAY_TLS_HOSTNAME = "gateway.modelplane.ai"
CA_KEY = "ca.crt"
SELF_SIGNED_ISSUER = "modelplane-selfsigned"
CA_NAME = "modelplane-gateway-ca"  # the CA Certificate, its Secret and the CA Issuer
SERVING_CERTIFICATE = "modelplane-gateway"
SERVING_SECRET = "modelplane-gateway-tls"  # noqa: S105 - a Secret's name, not a secret
HTTPS_LISTENER = "https"
HTTP_LISTENER = "http"
_KEY = {"algorithm": "ECDSA", "size": 256}


def _meta(kind: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": CERT_MANAGER_API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "namespace": WORKLOAD_GATEWAY_NAMESPACE},
    }


def _issuer_ref(name: str) -> dict[str, str]:
    return {"name": name, "kind": "Issuer", "group": CERT_MANAGER_GROUP}


def self_signed_issuer() -> dict[str, Any]:
    """Step 1: the Issuer that signs the CA with its own key."""
    return {**_meta("Issuer", SELF_SIGNED_ISSUER), "spec": {"selfSigned": {}}}


def ca_certificate() -> dict[str, Any]:
    """Step 2: the cluster's CA; cert-manager writes it (key included) to the Secret ``CA_NAME`` there."""
    return {
        **_meta("Certificate", CA_NAME),
        "spec": {
            "isCA": True,
            "commonName": CA_NAME,
            "secretName": CA_NAME,
            "privateKey": dict(_KEY),
            "issuerRef": _issuer_ref(SELF_SIGNED_ISSUER),
        },
    }


def ca_issuer() -> dict[str, Any]:
    """Step 3: the Issuer signing with the CA."""
    return {**_meta("Issuer", CA_NAME), "spec": {"ca": {"secretName": CA_NAME}}}


def serving_certificate() -> dict[str, Any]:
    """Step 4: the gateway's certificate for ``GATEWAY_TLS_HOSTNAME``, in the Secret ``SERVING_SECRET``."""
    return {
        **_meta("Certificate", SERVING_CERTIFICATE),
        "spec": {
            "secretName": SERVING_SECRET,
            "dnsNames": [GATEWAY_TLS_HOSTNAME],
            "privateKey": dict(_KEY),
            "issuerRef": _issuer_ref(CA_NAME),
        },
    }


def connection_details() -> list[dict[str, str]]:
    """What the CA Certificate's Object copies to its connection Secret: the CA Secret's ``ca.crt`` only."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "name": CA_NAME,
            "namespace": WORKLOAD_GATEWAY_NAMESPACE,
            "fieldPath": f"data[{CA_KEY}]",
            "toConnectionSecretKey": CA_KEY,
        }
    ]


def https_listener(port: int) -> dict[str, Any]:
    """The Gateway listener terminating TLS with the serving certificate."""
    return {
        "name": HTTPS_LISTENER,
        "protocol": "HTTPS",
        "port": port,
        "tls": {"mode": "Terminate", "certificateRefs": [{"group": "", "kind": "Secret", "name": SERVING_SECRET}]},
        "allowedRoutes": {"namespaces": {"from": "All"}},
    }


def http_listener(port: int) -> dict[str, Any]:
    """The plain HTTP listener (``spec.gateway.insecure``, or kept from before TLS)."""
    return {
        "name": HTTP_LISTENER,
        "protocol": "HTTP",
        "port": port,
        "allowedRoutes": {"namespaces": {"from": "All"}},
    }
