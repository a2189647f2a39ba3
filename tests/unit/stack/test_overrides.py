"""A Managed chart as a cluster installs it: the table's row, then the registry's mirrors, then the component's own."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.charts import CHARTS, Component
from modelplane.stack.overrides import Overrides, Registry, install, merge_values, mirrored

CERT_MANAGER = CHARTS[Component.CERT_MANAGER]
GATEWAY = CHARTS[Component.ENVOY_GATEWAY]


@pytest.mark.parametrize(
    ("base", "over", "want"),
    [
        pytest.param({"a": 1}, {}, {"a": 1}, id="nothing-over"),
        pytest.param({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}, {"a": {"b": 1, "c": 3}}, id="objects-merge"),
        pytest.param({"a": [1, 2]}, {"a": [3]}, {"a": [3]}, id="lists-replace"),
        pytest.param({"a": {"b": 1}}, {"a": "x"}, {"a": "x"}, id="a-scalar-replaces-an-object"),
        pytest.param({"a": "x"}, {"a": {"b": 1}}, {"a": {"b": 1}}, id="an-object-replaces-a-scalar"),
        pytest.param({}, {"a": {"b": {"c": 1}}}, {"a": {"b": {"c": 1}}}, id="new-keys"),
        pytest.param({"a": {"b": 1}}, {"a": None}, {"a": None}, id="null-replaces"),
    ],
)
def test_values_merge_key_by_key_ours_as_base(base: dict[str, Any], over: dict[str, Any], want: dict[str, Any]) -> None:
    before = repr(base)
    assert merge_values(base, over) == want
    assert repr(base) == before  # ours is never changed in place


@pytest.mark.parametrize(
    ("image", "mirror", "want"),
    [
        pytest.param(
            "quay.io/jetstack/cert-manager-controller",
            "mirror.example.com/hub",
            "mirror.example.com/hub/jetstack/cert-manager-controller",
            id="host-replaced",
        ),
        pytest.param(
            "kserve/storage-initializer", "m.example.com", "m.example.com/kserve/storage-initializer", id="hub"
        ),
        pytest.param("docker.io", "m.example.com:5000/x/", "m.example.com:5000/x", id="bare-registry"),
        pytest.param("localhost/a/b", "m.example.com", "m.example.com/a/b", id="localhost"),
        pytest.param("registry:5000/a", "m.example.com", "m.example.com/a", id="host-with-port"),
    ],
)
def test_an_image_from_a_mirror_keeps_its_upstream_path(image: str, mirror: str, want: str) -> None:
    assert mirrored(image, mirror) == want


@pytest.mark.parametrize(
    ("overrides", "registry", "want"),
    [
        pytest.param(Overrides(), Registry(), (CERT_MANAGER.repository, CERT_MANAGER.version, None), id="defaults"),
        pytest.param(
            Overrides(version="v1.19.0"), Registry(), (CERT_MANAGER.repository, "v1.19.0", None), id="version"
        ),
        pytest.param(
            Overrides(),
            Registry("oci://mirror.example.com/charts", None, "creds"),
            ("oci://mirror.example.com/charts", CERT_MANAGER.version, "creds"),
            id="chart-mirror-with-its-secret",
        ),
        pytest.param(
            Overrides(repository="https://charts.example.com"),
            Registry("oci://mirror.example.com/charts", None, "creds"),
            ("https://charts.example.com", CERT_MANAGER.version, None),
            id="own-repository-wins-without-the-mirror-s-secret",
        ),
    ],
)
def test_the_chart_comes_from_the_component_then_the_mirror_then_the_table(
    overrides: Overrides, registry: Registry, want: tuple[str, str, str | None]
) -> None:
    got = install(CERT_MANAGER, overrides, registry)
    assert (got.repository, got.version, got.pull_secret) == want
    assert got.chart is CERT_MANAGER


def test_values_layer_the_table_the_image_mirror_and_the_component() -> None:
    registry = Registry(images="mirror.example.com")
    mine = {"image": {"repository": "mine/controller"}, "crds": {"keep": False}, "replicaCount": 2}
    got = install(CERT_MANAGER, Overrides(values=mine), registry).values
    assert got["crds"] == {"enabled": True, "keep": False}  # ours, with the user's key merged in
    assert got["replicaCount"] == 2
    assert got["image"] == {"repository": "mine/controller"}  # the user's wins over the mirror's
    assert got["webhook"] == {"image": {"repository": "mirror.example.com/jetstack/cert-manager-webhook"}}


def test_without_a_mirror_or_values_ours_are_passed_as_they_are() -> None:
    assert install(GATEWAY, Overrides()).values == GATEWAY.values


def test_values_go_to_the_main_chart_only() -> None:
    crds = CHARTS[Component.KSERVE_CRDS]
    assert install(crds, Overrides(values={"a": 1}), user_values=False).values == {}


def test_a_chart_with_base_values_drops_ours() -> None:
    got = install(GATEWAY, Overrides(values={"deployment": {"replicas": 2}}), base_values={})
    assert got.values == {"deployment": {"replicas": 2}}
