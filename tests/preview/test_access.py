"""The Services table's access column: how the service's gateway authenticates, then which clients it allows."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.preview.view.services import access_of

KEYS = {"apiKeys": {"secretRefs": [{"name": "keys"}]}}
JWT = {"jwt": {"issuer": "https://auth.example.com", "jwksURI": "https://auth.example.com/jwks"}}


def _service(clients: list[str] | None = None, gateway: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if clients is not None:
        spec["access"] = {"clients": clients}
    if gateway is not None:
        spec["gatewayRef"] = {"name": gateway}
    return {"spec": spec}


@pytest.mark.parametrize(
    ("service", "auth", "want"),
    [
        pytest.param(_service(), KEYS, "key: any", id="api-keys-any-client"),
        pytest.param(_service(["team-b", "team-a"]), KEYS, "key: team-a, team-b", id="api-keys-listed-clients"),
        pytest.param(_service(), JWT, "jwt: any", id="jwt"),
        pytest.param(_service(["ops"]), {**KEYS, **JWT}, "key+jwt: ops", id="both"),
        pytest.param(_service(["ops"]), {"mode": "None"}, "open", id="mode-none"),
        pytest.param(_service(), None, "open", id="gateway-without-auth"),
        pytest.param(_service(gateway="elsewhere"), KEYS, "-", id="gateway-not-in-the-manifests"),
    ],
)
def test_access_of(service: dict[str, Any], auth: dict[str, Any] | None, want: str) -> None:
    gateway: dict[str, Any] = {"spec": {} if auth is None else {"auth": auth}}
    assert access_of(service, {"default": gateway}) == want
