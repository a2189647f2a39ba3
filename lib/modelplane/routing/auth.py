"""Who may call: the gateway's caller authentication and a service's allowed client ids (Envoy Gateway policies).

An InferenceGateway with ``spec.auth`` composes, beside its Gateway:

- a ``ClientTrafficPolicy`` that removes ``CLIENT_ID_HEADER`` from every request before any filter
  runs, so the only value a route or a backend ever sees is the one the gateway set;
- with mode Required, a ``SecurityPolicy`` on the Gateway: API keys (Envoy's api_key_auth, which
  strips a ``Bearer`` prefix, sets the header to the key's client id and, ``sanitize``d, removes the
  key before forwarding) and/or JWTs (the ``sub`` claim copied to the header);
- a ``ReferenceGrant`` letting that policy read the key Secrets in ``KEYS_NAMESPACE``.

A ModelService with ``spec.access.clients`` composes a ``SecurityPolicy`` on its HTTPRoute that
allows only those client ids (authorization on the header, default Deny), merged into the
gateway's (``mergeType``): without the merge, a route's policy replaces the gateway's, and the
route would no longer authenticate at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.routing.backend import BACKEND_API_VERSION, BACKEND_GROUP
from modelplane.routing.gateway import GATEWAY_GROUP, REFERENCE_GRANT_API_VERSION, GatewayRef

# Set by the gateway to the authenticated caller's client id; removed from what callers send.
CLIENT_ID_HEADER = "x-modelplane-client-id"
# Where the API key Secrets live: a namespace that exists wherever Crossplane runs (before the
# gateway installs envoy-gateway-system), as for the gateway's certificate.
KEYS_NAMESPACE = "crossplane-system"
# The JWT claim that names a caller.
CLIENT_ID_CLAIM = "sub"
# A route's policy merged into the gateway's: authentication kept, authorization added.
MERGE_TYPE = "StrategicMerge"


@dataclass(frozen=True)
class ApiKeys:
    """API keys: Secrets (client id → key) and the header a caller sends its key in."""

    secrets: tuple[str, ...]
    header: str = "Authorization"


@dataclass(frozen=True)
class Jwt:
    """JSON Web Tokens: who issues them, for which audiences, and where its signing keys are."""

    issuer: str
    jwks_uri: str
    audiences: tuple[str, ...] = ()


@dataclass(frozen=True)
class Auth:
    """A gateway's caller authentication (mode Required): API keys, JWTs, or both."""

    api_keys: ApiKeys | None = None
    jwt: Jwt | None = None


def _target(kind: str, name: str) -> list[dict[str, str]]:
    return [{"group": GATEWAY_GROUP, "kind": kind, "name": name}]


def client_id_policy(name: str, ref: GatewayRef) -> dict[str, Any]:
    """The ClientTrafficPolicy that removes ``CLIENT_ID_HEADER`` from every request, before any filter runs."""
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "ClientTrafficPolicy",
        "metadata": {"name": name, "namespace": ref.namespace},
        "spec": {
            "targetRefs": _target("Gateway", ref.name),
            "headers": {"earlyRequestHeaders": {"remove": [CLIENT_ID_HEADER]}},
        },
    }


def auth_policy(name: str, ref: GatewayRef, auth: Auth) -> dict[str, Any]:
    """The SecurityPolicy that authenticates every request to the Gateway."""
    spec: dict[str, Any] = {"targetRefs": _target("Gateway", ref.name)}
    if auth.api_keys is not None:
        spec["apiKeyAuth"] = {
            "credentialRefs": [
                {"group": "", "kind": "Secret", "name": secret, "namespace": KEYS_NAMESPACE}
                for secret in auth.api_keys.secrets
            ],
            "extractFrom": [{"headers": [auth.api_keys.header]}],
            "forwardClientIDHeader": CLIENT_ID_HEADER,
            # The caller's key goes no further than the gateway (never to a model server or a hosted API).
            "sanitize": True,
        }
    if auth.jwt is not None:
        provider: dict[str, Any] = {"name": ref.name, "issuer": auth.jwt.issuer}
        if auth.jwt.audiences:
            provider["audiences"] = list(auth.jwt.audiences)
        provider["remoteJWKS"] = {"uri": auth.jwt.jwks_uri}
        # With API keys too, the key's client id is the caller's (one value in the header, not two).
        if auth.api_keys is None:
            provider["claimToHeaders"] = [{"claim": CLIENT_ID_CLAIM, "header": CLIENT_ID_HEADER}]
        spec["jwt"] = {"providers": [provider]}
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "SecurityPolicy",
        "metadata": {"name": name, "namespace": ref.namespace},
        "spec": spec,
    }


def keys_grant(name: str, ref: GatewayRef, secrets: Sequence[str]) -> dict[str, Any]:
    """The ReferenceGrant letting the Gateway's SecurityPolicies read the key Secrets in ``KEYS_NAMESPACE``."""
    return {
        "apiVersion": REFERENCE_GRANT_API_VERSION,
        "kind": "ReferenceGrant",
        "metadata": {"name": name, "namespace": KEYS_NAMESPACE},
        "spec": {
            "from": [{"group": BACKEND_GROUP, "kind": "SecurityPolicy", "namespace": ref.namespace}],
            "to": [{"group": "", "kind": "Secret", "name": secret} for secret in sorted(set(secrets))],
        },
    }


def access_policy(name: str, namespace: str, route: str, clients: Sequence[str]) -> dict[str, Any]:
    """The SecurityPolicy on a service's HTTPRoute allowing only ``clients`` (anyone else: 403)."""
    return {
        "apiVersion": BACKEND_API_VERSION,
        "kind": "SecurityPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "targetRefs": _target("HTTPRoute", route),
            "mergeType": MERGE_TYPE,
            "authorization": {
                "defaultAction": "Deny",
                "rules": [
                    {
                        "name": "clients",
                        "action": "Allow",
                        "principal": {"headers": [{"name": CLIENT_ID_HEADER, "values": sorted(set(clients))}]},
                    }
                ],
            },
        },
    }
