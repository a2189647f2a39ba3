"""The Services table's access and limits columns: who may call a service, and how often."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.preview.view.services import access_of, limits_of

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


@pytest.mark.parametrize(
    ("limits", "want"),
    [
        pytest.param(None, "-", id="none"),
        pytest.param([], "-", id="empty"),
        pytest.param([{"requestsPerMinute": 600}], "all: 600 req/min", id="every-caller"),
        pytest.param([{"clients": ["all"], "tokensPerMinute": 20000}], "all: 20000 tok/min", id="all-named"),
        pytest.param(
            [
                {"clients": ["team-a", "team-b"], "requestsPerMinute": 60, "tokensPerMinute": 20000},
                {"requestsPerMinute": 600},
            ],
            "team-a, team-b: 60 req/min, 20000 tok/min; all: 600 req/min",
            id="per-client-then-all",
        ),
        pytest.param(["junk", {"clients": "ops", "requestsPerMinute": 5}], "ops: 5 req/min", id="malformed-kept-out"),
    ],
)
def test_limits_of(limits: list[Any] | None, want: str) -> None:
    service: dict[str, Any] = {"spec": {} if limits is None else {"limits": limits}}
    assert limits_of(service) == want
