"""The render engine's in-memory store: keys, replacement and how a resource selector is answered."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from modelplane.render.store import Store, key_of


def _cm(name: str, namespace: str = "", *, api_version: str = "v1", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": "ConfigMap", "metadata": meta}


OBJECTS = [
    _cm("b", tier="gpu"),
    _cm("a", "team-b", tier="gpu"),
    _cm("a", "team-a", tier="cpu"),
    _cm("c", tier="gpu"),
    _cm("c", api_version="v2", tier="gpu"),
    {"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "other-group", "labels": {"tier": "gpu"}}},
]


def _names(resources: fnv1.Resources) -> list[str]:
    out = []
    for item in resources.items:
        meta = json_format.MessageToDict(item.resource)["metadata"]
        out.append(f"{meta.get('namespace', '')}/{meta['name']}")
    return out


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param(fnv1.ResourceSelector(api_version="v1", kind="ConfigMap", match_name="b"), ["/b"], id="by-name"),
        pytest.param(
            fnv1.ResourceSelector(api_version="v1", kind="ConfigMap", match_name="a"),
            [],
            id="by-name-without-namespace-finds-only-cluster-scoped",
        ),
        pytest.param(
            fnv1.ResourceSelector(api_version="v1", kind="ConfigMap", namespace="team-a", match_name="a"),
            ["team-a/a"],
            id="by-name-in-namespace",
        ),
        pytest.param(
            fnv1.ResourceSelector(
                api_version="v1", kind="ConfigMap", match_labels=fnv1.MatchLabels(labels={"tier": "gpu"})
            ),
            # Every namespace, sorted by namespace/name; neither v2 nor another group.
            ["/b", "/c", "team-b/a"],
            id="by-labels-across-namespaces-sorted",
        ),
        pytest.param(
            fnv1.ResourceSelector(
                api_version="v1",
                kind="ConfigMap",
                namespace="team-b",
                match_labels=fnv1.MatchLabels(labels={"tier": "gpu"}),
            ),
            ["team-b/a"],
            id="by-labels-in-namespace",
        ),
        pytest.param(
            fnv1.ResourceSelector(api_version="v1", kind="ConfigMap"),
            ["/b", "/c", "team-a/a", "team-b/a"],
            id="every-one-of-a-kind",
        ),
    ],
)
def test_fetch(selector: fnv1.ResourceSelector, want: list[str]) -> None:
    assert _names(Store(OBJECTS).fetch(selector)) == want


def test_a_later_object_replaces_an_earlier_one_with_the_same_key() -> None:
    first, second = _cm("a", "ns", tier="one"), _cm("a", "ns", tier="two")
    store = Store([first, second])
    assert store.get(key_of(first)) == second
    assert key_of(first) == ("", "v1", "ConfigMap", "ns", "a")


def test_reads_are_copies() -> None:
    obj = _cm("a")
    store = Store([obj])
    got = store.get(key_of(obj))
    assert got is not None
    got["metadata"]["name"] = "changed"
    assert store.get(key_of(obj)) == obj
    store.delete(key_of(obj))
    assert store.get(key_of(obj)) is None
