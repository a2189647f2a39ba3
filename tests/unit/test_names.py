from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.names import REPLICA_HOST_SUFFIX, replica_host

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SUBDOMAIN = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,60}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,60}[a-z0-9])?){0,3}\Z")
LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")


@pytest.mark.parametrize(
    ("replica", "namespace", "want"),
    [
        pytest.param("llama-70b-0", "ml-team", "llama-70b-0.ml-team.replicas.modelplane.ai", id="plain"),
        pytest.param("a" * 63, "ml", "a" * 63 + ".ml.replicas.modelplane.ai", id="label-just-fits"),
        pytest.param("a" * 64, "ml", "a" * 57 + "-ffe05.ml.replicas.modelplane.ai", id="too-long-hashed"),
        pytest.param("llama.70b", "ml", "llama70b-a0f85.ml.replicas.modelplane.ai", id="dots-hashed"),
    ],
)
def test_replica_host(replica: str, namespace: str, want: str) -> None:
    assert replica_host(replica, namespace) == want


@given(SUBDOMAIN, LABEL)
def test_replica_host_is_a_dns_name_under_the_suffix(replica: str, namespace: str) -> None:
    host = replica_host(replica, namespace)
    assert host.endswith(f".{REPLICA_HOST_SUFFIX}")
    assert len(host) <= 253
    assert all(len(label) <= 63 and DNS_LABEL.match(label) for label in host.split("."))
