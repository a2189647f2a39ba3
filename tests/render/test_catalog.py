"""A catalog of required resources shared by many renders: it answers as the store would, and says when it changed."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.store import Catalog, Reads, Store, key_of
from tests.render.test_store import OBJECTS, _cm, _names


def _selector(**kw: Any) -> fnv1.ResourceSelector:
    labels = kw.pop("labels", None)
    rs = fnv1.ResourceSelector(**kw)
    if labels is not None:
        rs.match_labels.labels.update(labels)
    return rs


@pytest.mark.parametrize(
    "selector",
    [
        pytest.param(_selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"}), id="labels"),
        pytest.param(_selector(api_version="v1", kind="ConfigMap", labels={}), id="all-of-kind"),
        pytest.param(_selector(api_version="v1", kind="ConfigMap", namespace="team-a", labels={}), id="namespace"),
        pytest.param(_selector(api_version="v1", kind="ConfigMap", match_name="b"), id="by-name"),
        pytest.param(_selector(api_version="v2", kind="ConfigMap", match_name="c"), id="by-name-version"),
        pytest.param(_selector(api_version="v1", kind="ConfigMap", match_name="nope"), id="missing"),
    ],
)
def test_catalog_answers_as_a_store_of_the_same_objects(selector: fnv1.ResourceSelector) -> None:
    through = Store([], catalog=Catalog(OBJECTS))
    assert _names(through.fetch(selector)) == _names(Store(OBJECTS).fetch(selector))


def test_what_the_store_holds_replaces_the_catalog_and_the_xr_is_never_read_from_it() -> None:
    xr = _cm("b", tier="cpu")  # the same key as a catalog object: the XR wins over its catalog copy
    store = Store([xr], catalog=Catalog(OBJECTS), hidden=key_of(xr))
    gpu = _selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"})
    assert "/b" not in _names(store.fetch(gpu))
    store.delete(key_of(_cm("c", tier="gpu")))
    assert "/c" not in _names(store.fetch(gpu))
    store.put(_cm("d", tier="gpu"))
    assert "/d" in _names(store.fetch(gpu))


def test_a_put_of_equal_content_keeps_the_version_and_a_change_bumps_it() -> None:
    catalog = Catalog([_cm("a", tier="gpu")], stamp=True)
    key = key_of(_cm("a"))
    first = catalog.entry(key)
    assert first is not None
    assert first.obj["metadata"]["resourceVersion"] == str(first.version)
    assert not catalog.put(_cm("a", tier="gpu"))
    assert catalog.put(_cm("a", tier="cpu"))
    second = catalog.entry(key)
    assert second is not None
    assert second.version > first.version


@pytest.mark.parametrize(
    ("change", "current"),
    [
        pytest.param(lambda c: c.put(_cm("x", tier="cpu")), True, id="unrelated-object"),
        pytest.param(lambda c: c.put(_cm("b", tier="gpu")), True, id="equal-content"),
        pytest.param(lambda c: c.put(_cm("b", tier="gpu", extra="1")), False, id="read-object-changed"),
        pytest.param(lambda c: c.put(_cm("e", tier="gpu")), False, id="new-object-matches"),
        pytest.param(lambda c: c.delete(key_of(_cm("c", tier="gpu"))), False, id="read-object-deleted"),
    ],
)
def test_reads_say_whether_a_render_would_read_the_same_again(change: Any, current: bool) -> None:
    catalog = Catalog(OBJECTS)
    reads = Reads()
    store = Store([], catalog=catalog, reads=reads)
    store.fetch(_selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"}))
    assert reads.current(catalog)
    change(catalog)
    assert reads.current(catalog) is current


def test_labels_that_are_not_strings_are_never_matched_and_never_raise() -> None:
    odd = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "odd", "labels": {"tier": {"not": "text"}}}}
    catalog = Catalog([odd, *OBJECTS])
    gpu = _selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"})
    assert "/odd" not in _names(Store([], catalog=catalog).fetch(gpu))
