"""modelplane.clusters.usage and its names: which Usages keep what a replica runs on, and what they are named."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.clusters.usage import Replica, UsedRef, published, replica_usages
from modelplane.names import pool_key, pool_of_key, replica_key, usage_key, usage_key_ordinal, usage_name

SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
GKE = "container.gcp.m.upbound.io/v1beta1"
CLUSTER = UsedRef("Cluster", "east", GKE, "crossplane-system")
GPU = UsedRef("NodePool", "east-gpu", GKE, "crossplane-system", "gpu")
OTHER = UsedRef("NodePool", "east-other", GKE, "crossplane-system", "other")
# The serving stack's controllers and the workload gateway run on the system pool: every replica uses it.
SYSTEM = UsedRef("NodePool", "east-system", GKE, "crossplane-system", "system")
ANCHOR = UsedRef("ConfigMap", "east-stack-anchor", "v1", "crossplane-system")


def _replica(*pools: str) -> Replica:
    return Replica(3, "llm-3", "ml", "llm", "east", frozenset(pools))


@pytest.mark.parametrize(
    ("replica", "refs", "want"),
    [
        pytest.param(
            _replica("gpu"), [CLUSTER, GPU, OTHER], ["usage-3-cluster-east", "usage-3-nodepool-east-gpu"], id="its-pool"
        ),
        pytest.param(
            _replica("gpu", "other"),
            [OTHER, GPU, CLUSTER, GPU],
            ["usage-3-cluster-east", "usage-3-nodepool-east-gpu", "usage-3-nodepool-east-other"],
            id="two-roles-any-order-once-each",
        ),
        pytest.param(
            _replica("gpu"),
            [CLUSTER, GPU, OTHER, SYSTEM],
            ["usage-3-cluster-east", "usage-3-nodepool-east-gpu", "usage-3-nodepool-east-system"],
            id="the-system-pool-too",
        ),
        pytest.param(
            _replica("gpu"), [ANCHOR], ["usage-3-configmap-east-stack-anchor"], id="existing-cluster-its-stack"
        ),
        pytest.param(_replica("gpu"), [], [], id="nothing-published"),
        pytest.param(_replica(), [CLUSTER, GPU], ["usage-3-cluster-east"], id="no-pool-read"),
    ],
)
def test_replica_usages(replica: Replica, refs: list[UsedRef], want: list[str]) -> None:
    assert list(replica_usages(replica, refs)) == want


def test_a_usage_is_of_the_object_by_the_replica() -> None:
    (usage,) = replica_usages(_replica(), [CLUSTER]).values()
    assert usage["metadata"] == {
        "name": "llm-3-cluster-east",
        "namespace": "ml",
        "labels": {"modelplane.ai/deployment": "llm", "modelplane.ai/cluster": "east"},
    }
    assert usage["spec"]["of"]["resourceRef"] == {"name": "east", "namespace": "crossplane-system"}
    assert usage["spec"]["by"]["resourceRef"] == {"name": "llm-3"}
    assert usage["spec"]["replayDeletion"] is True


@pytest.mark.parametrize(
    ("entry", "want"),
    [
        pytest.param(GPU.status(), GPU, id="a-pool"),
        pytest.param(CLUSTER.status(), CLUSTER, id="no-pool"),
        pytest.param({**CLUSTER.status(), "namespace": ""}, None, id="no-namespace"),
        pytest.param({**CLUSTER.status(), "name": 7}, None, id="name-not-a-string"),
        pytest.param(
            {**GPU.status(), "pool": ["gpu"]},
            UsedRef("NodePool", "east-gpu", GKE, "crossplane-system"),
            id="pool-not-a-string",
        ),
    ],
)
def test_a_published_entry_reads_back(entry: dict[str, Any], want: UsedRef | None) -> None:
    assert UsedRef.of(entry) == want


def test_published_is_sorted_and_unique() -> None:
    assert published([OTHER, CLUSTER, GPU, CLUSTER]) == [CLUSTER.status(), GPU.status(), OTHER.status()]


@pytest.mark.parametrize(
    ("key", "want"),
    [
        pytest.param(usage_key(0, "NodePool", "east-gpu"), 0, id="usage"),
        pytest.param(usage_key(12, "Cluster", "a.b"), 12, id="dotted-object"),
        pytest.param("usage-01-cluster-east", None, id="leading-zero"),
        pytest.param("usage-3", None, id="no-object"),
        pytest.param(replica_key(3), None, id="a-replica"),
    ],
)
def test_usage_key_ordinal(key: str, want: int | None) -> None:
    assert usage_key_ordinal(key) == want


@pytest.mark.parametrize(
    ("key", "want"),
    [
        pytest.param(pool_key("h100"), "h100", id="pool"),
        pytest.param(pool_key(""), None, id="no-name"),
        pytest.param("cluster", None, id="the-cluster"),
    ],
)
def test_pool_of_key(key: str, want: str | None) -> None:
    assert pool_of_key(key) == want


@given(
    replica=st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z"),
    kind=st.sampled_from(["Cluster", "ClusterAuth", "KubernetesClusterNodePool"]),
    name=st.from_regex(r"\A[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z"),
)
def test_usage_names_are_subdomains_and_distinct_per_object(replica: str, kind: str, name: str) -> None:
    got = usage_name(replica, kind, name)
    assert len(got) <= 253 and SUBDOMAIN.match(got)
    assert got == usage_name(replica, kind, name)
    assert got != usage_name(replica, "NodePool", name)
