"""An InferenceGateway's caller auth: what ``spec.auth`` composes, the Secrets it names, and its condition.

Each API key Secret is asked for by name on every call (in ``KEYS_NAMESPACE``) only to say
whether it exists: its values are never read, converted or reported. A missing Secret composes
nothing less (Envoy Gateway answers 500 on the routes of a policy it cannot translate: closed, not
open); the gateway is not Ready and ``AuthReady`` names the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit.required import Requirement
from modelplane.names import (
    CLIENT_ID_POLICY_KEY,
    GATEWAY_AUTH_KEY,
    KEYS_GRANT_KEY,
    auth_policy_name,
    client_id_policy_name,
    keys_grant_name,
)
from modelplane.routing import GatewayRef
from modelplane.routing.auth import (
    CLIENT_ID_HEADER,
    KEYS_NAMESPACE,
    ApiKeys,
    Auth,
    Jwt,
    auth_policy,
    client_id_policy,
    keys_grant,
)
from modelplane_models.inference_gateway import Spec

# Required resources api-keys-0, api-keys-1, ...: one per spec.auth.apiKeys.secretRefs[] entry.
_SECRET = "api-keys"  # noqa: S105 - a requirement name, not a secret


class Mode(StrEnum):
    """How the gateway treats callers."""

    REQUIRED = "Required"
    NONE = "None"
    UNSET = "Unset"  # no spec.auth: a gateway created before the field existed


@dataclass(frozen=True)
class Plan:
    """What ``spec.auth`` says."""

    mode: Mode
    auth: Auth = field(default_factory=Auth)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The API key Secrets' names, in ``spec.auth.apiKeys.secretRefs`` order."""
        return self.auth.api_keys.secrets if self.auth.api_keys is not None else ()


def plan_of(spec: Spec) -> Plan:
    """Read ``spec.auth`` (the XRD refuses Required without credentials and None with them)."""
    auth = spec.auth
    if auth is None:
        return Plan(Mode.UNSET)
    if auth.mode == "None":
        return Plan(Mode.NONE)
    keys = None
    if auth.apiKeys is not None:
        keys = ApiKeys(tuple(r.name for r in auth.apiKeys.secretRefs), auth.apiKeys.header or "Authorization")
    jwt = None
    if auth.jwt is not None:
        audiences = tuple(a.root for a in auth.jwt.audiences or [])
        jwt = Jwt(auth.jwt.issuer, auth.jwt.jwksURI, audiences)
    return Plan(Mode.REQUIRED, Auth(keys, jwt))


def request_secrets(rsp: fnv1.RunFunctionResponse, plan: Plan) -> None:
    """Ask for each API key Secret by name (on every call, or Crossplane stops sending them)."""
    for index, secret in enumerate(plan.secrets):
        Requirement(f"{_SECRET}-{index}", "v1", "Secret").request(rsp, name=secret, namespace=KEYS_NAMESPACE)


def desired(name: str, ref: GatewayRef, plan: Plan) -> dict[str, dict[str, Any]]:
    """The auth objects to compose: the client-id header cleared always, the policy and grant when Required."""
    out = {CLIENT_ID_POLICY_KEY: client_id_policy(client_id_policy_name(name), ref)}
    if plan.mode is Mode.REQUIRED:
        out[GATEWAY_AUTH_KEY] = auth_policy(auth_policy_name(name), ref, plan.auth)
        if plan.secrets:
            out[KEYS_GRANT_KEY] = keys_grant(keys_grant_name(name), ref, plan.secrets)
    return out


def condition(req: fnv1.RunFunctionRequest, plan: Plan) -> Condition:
    """``AuthReady``: what callers need, or which field names a Secret that is not there."""
    if plan.mode is Mode.UNSET:
        message = (
            "spec.auth is not set (the gateway was created before it existed): every caller is accepted; "
            "set spec.auth.apiKeys or spec.auth.jwt, or spec.auth.mode None"
        )
        return Condition(Type.AUTH_READY, Status.FALSE, Reason.AUTH_NOT_CONFIGURED, message)
    if plan.mode is Mode.NONE:
        message = "spec.auth.mode is None: every caller is accepted, with no client id (for development only)"
        return Condition(Type.AUTH_READY, Status.FALSE, Reason.AUTH_DISABLED, message)
    names = [f"{_SECRET}-{i}" for i in range(len(plan.secrets))]
    if any(n not in req.required_resources for n in names):
        message = f"reading the API key Secrets in {KEYS_NAMESPACE}"
        return Condition(Type.AUTH_READY, Status.UNKNOWN, Reason.WAITING_FOR_INPUTS, message)
    missing = [
        f"spec.auth.apiKeys.secretRefs[{i}].name: Secret {KEYS_NAMESPACE}/{secret} not found"
        for i, (n, secret) in enumerate(zip(names, plan.secrets, strict=True))
        if not req.required_resources[n].items
    ]
    if missing:
        message = "; ".join(missing) + " (Envoy Gateway answers 500 to every caller until it exists)"
        return Condition(Type.AUTH_READY, Status.FALSE, Reason.SECRET_NOT_FOUND, message)
    ways = []
    if plan.auth.api_keys is not None:
        ways.append(f"an API key in header {plan.auth.api_keys.header}")
    if plan.auth.jwt is not None:
        ways.append(f"a JWT from {plan.auth.jwt.issuer}")
    message = f"callers need {' and '.join(ways)}; their client id is forwarded in {CLIENT_ID_HEADER}"
    return Condition(Type.AUTH_READY, Status.TRUE, Reason.AUTH_REQUIRED, message)
