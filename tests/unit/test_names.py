from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.names import (
    MAX_COLLECTION_NAME,
    MAX_HELM_RELEASE,
    REPLICA_HOST_SUFFIX,
    gateway_release_name,
    helm_release_name,
    object_name,
    replica_host,
)

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


@pytest.mark.parametrize(
    ("replica", "key", "limit", "want"),
    [
        pytest.param("qwen-0", "pods", MAX_COLLECTION_NAME, "qwen-0-pods", id="short-unchanged"),
        pytest.param("r" * 58, "pods", MAX_COLLECTION_NAME, "r" * 58 + "-pods", id="exactly-63"),
        pytest.param("r" * 61 + "-0", "pods", MAX_COLLECTION_NAME, "r" * 54 + "-b656eb7e", id="63-char-replica-cut"),
        pytest.param("r" * 61 + "-0", "deployment-unified", 253, "r" * 61 + "-0-deployment-unified", id="object-fits"),
    ],
)
def test_object_name(replica: str, key: str, limit: int, want: str) -> None:
    got = object_name(replica, key, limit)
    assert len(got) <= limit
    assert got == want


@given(st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True), st.sampled_from(["pods", "namespace"]))
def test_collection_names_fit_and_stay_distinct(replica: str, key: str) -> None:
    name = object_name(replica, key, MAX_COLLECTION_NAME)
    assert len(name) <= MAX_COLLECTION_NAME
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)
    assert name == object_name(replica, key, MAX_COLLECTION_NAME)  # stable
    assert name != object_name(replica + "x" if len(replica) < 63 else replica[:-1], key, MAX_COLLECTION_NAME)


@pytest.mark.parametrize(
    ("owner", "component", "want"),
    [
        pytest.param("gpu-east", "kserve", "gpu-east-kserve", id="short-unchanged"),
        pytest.param("a" * 46, "kserve", "a" * 46 + "-kserve", id="53-just-fits"),
        pytest.param("a" * 47, "kserve", None, id="54-hashed"),
        pytest.param("gpu.east", "kserve", None, id="dots-hashed"),
    ],
)
def test_helm_release_name(owner: str, component: str, want: str | None) -> None:
    name = helm_release_name(owner, component)
    if want is not None:
        assert name == want
    else:
        assert name != f"{owner}-{component}"
    assert len(name) <= MAX_HELM_RELEASE
    assert DNS_LABEL.match(name), name


@given(SUBDOMAIN, st.sampled_from(["kserve", "envoy-gateway", "kai-scheduler", "lws", "cert-manager"]))
def test_helm_release_names_helm_accepts_and_stay_distinct(owner: str, component: str) -> None:
    """Helm refuses a release name over 53 characters: a long ServingStack or gateway must still install."""
    name = helm_release_name(owner, component)
    assert len(name) <= MAX_HELM_RELEASE
    assert DNS_LABEL.match(name), name
    assert name == helm_release_name(owner, component)
    assert name != helm_release_name(owner + "x", component)
    assert gateway_release_name(owner) == helm_release_name(owner, "envoy-gateway")
