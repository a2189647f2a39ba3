"""A catalog of required resources shared by many renders: it answers as the store would, and says when it changed."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.store import Catalog, Query, Reads, Store, key_of
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
    alone = Store(OBJECTS).fetch(selector)
    assert _names(through.fetch(selector)) == _names(alone)
    assert through.fetch(selector) == alone  # the same objects whole, asked again (answered from memory)


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


def _data_view(obj: Mapping[str, Any]) -> Hashable:
    """A reader that looks at a ConfigMap's data only."""
    return json.dumps(obj.get("data"), sort_keys=True)


def _with(name: str, data: dict[str, str], **labels: str) -> dict[str, Any]:
    return {**_cm(name, **labels), "data": data}


@pytest.mark.parametrize(
    ("reader", "after", "same"),
    [
        pytest.param("Viewer", _with("a", {"k": "1"}, tier="cpu"), True, id="unread-label-change-keeps-version"),
        pytest.param("Viewer", _with("a", {"k": "2"}, tier="gpu"), False, id="read-data-change-bumps-version"),
        pytest.param("Other", _with("a", {"k": "1"}, tier="cpu"), False, id="reader-without-view-sees-every-change"),
        pytest.param("", _with("a", {"k": "1"}, tier="cpu"), False, id="no-reader-sees-every-change"),
    ],
)
def test_a_reader_with_a_view_is_told_a_new_version_only_when_its_view_changes(
    reader: str, after: dict[str, Any], same: bool
) -> None:
    catalog = Catalog([_with("a", {"k": "1"}, tier="gpu")], views={("", "ConfigMap"): {"Viewer": _data_view}})
    by_name: Query = ("", "v1", "ConfigMap", "", "a", None)
    everything: Query = ("", "v1", "ConfigMap", "", "", ())
    reads = Reads(seen={q: catalog.answer(q, reader) for q in (by_name, everything)}, reader=reader)
    assert catalog.put(after)
    assert reads.current(catalog) is same


def test_a_view_that_changes_and_changes_back_still_bumps_the_version() -> None:
    catalog = Catalog([_with("a", {"k": "1"})], views={("", "ConfigMap"): {"Viewer": _data_view}})
    by_name: Query = ("", "v1", "ConfigMap", "", "a", None)
    reads = Reads(seen={by_name: catalog.answer(by_name, "Viewer")}, reader="Viewer")
    catalog.put(_with("a", {"k": "2"}))
    catalog.put(_with("a", {"k": "1"}))
    assert not reads.current(catalog)


@pytest.mark.parametrize(
    ("change", "want"),
    [
        pytest.param(lambda c: c.put(_cm("d", tier="gpu")), ["/b", "/c", "/c", "/d", "team-b/a"], id="added"),
        pytest.param(lambda c: c.put(_cm("b", tier="cpu")), ["/c", "/c", "team-b/a"], id="relabelled-out"),
        pytest.param(lambda c: c.delete(key_of(_cm("c"))), ["/b", "/c", "team-b/a"], id="deleted"),
        pytest.param(lambda c: c.put(_cm("b", tier="gpu")), ["/b", "/c", "/c", "team-b/a"], id="put-unchanged"),
    ],
)
def test_a_query_asked_again_is_answered_from_the_catalog_as_it_is_now(
    change: Callable[[Catalog], object], want: list[str]
) -> None:
    catalog = Catalog(OBJECTS)
    gpu = _selector(api_version="", kind="ConfigMap", labels={"tier": "gpu"})
    Store([], catalog=catalog).fetch(gpu)
    change(catalog)
    assert _names(Store([], catalog=catalog).fetch(gpu)) == want
    assert _names(Store([], catalog=catalog).fetch(gpu)) == _names(Store(list(_objects(catalog))).fetch(gpu))


def _objects(catalog: Catalog) -> list[dict[str, Any]]:
    return [e.obj for k in ("", "apps") for _, e in catalog.kind(k, "ConfigMap")]


def test_a_query_by_the_xr_leaves_the_xr_out_of_the_answer() -> None:
    catalog = Catalog(OBJECTS)
    gpu = _selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"})
    assert _names(Store([], catalog=catalog, hidden=key_of(_cm("b"))).fetch(gpu)) == ["/c", "team-b/a"]
    assert _names(Store([], catalog=catalog).fetch(gpu)) == ["/b", "/c", "team-b/a"]


def test_an_answer_asked_again_by_readers_of_other_kinds_is_the_same() -> None:
    catalog = Catalog(OBJECTS)
    gpu = _selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"})
    readers = [("example.org", "v1", "XR", "", f"xr-{i}") for i in range(3)]
    assert [_names(Store([], catalog=catalog, hidden=r).fetch(gpu)) for r in readers] == [["/b", "/c", "team-b/a"]] * 3


_GPU = _selector(api_version="v1", kind="ConfigMap", labels={"tier": "gpu"})
_B = _selector(api_version="v1", kind="ConfigMap", match_name="b")


@pytest.mark.parametrize(
    ("selector", "change", "rewritten"),
    [
        pytest.param(_GPU, lambda _: None, False, id="unchanged"),
        pytest.param(
            _GPU,
            lambda c: (c.put(_with("b", {"k": "1"}, tier="gpu")), c.put(_with("c", {"k": "2"}, tier="gpu"))),
            True,
            id="two-read-objects-changed",
        ),
        pytest.param(_GPU, lambda c: c.put(_cm("b", tier="cpu")), True, id="read-object-relabelled-out"),
        pytest.param(_GPU, lambda c: c.put(_cm("x", tier="cpu")), False, id="unrelated-object"),
        pytest.param(_GPU, lambda c: c.put(_with("b", {"k": "1"}, tier="gpu")), True, id="read-object-changed"),
        pytest.param(_GPU, lambda c: c.put(_cm("e", tier="gpu")), True, id="new-object-matches"),
        pytest.param(_GPU, lambda c: c.delete(key_of(_cm("c"))), True, id="read-object-deleted"),
        pytest.param(_B, lambda _: None, False, id="by-name-unchanged"),
        pytest.param(_B, lambda c: c.put(_with("b", {"k": "1"}, tier="gpu")), True, id="by-name-changed"),
        pytest.param(_B, lambda c: c.delete(key_of(_cm("b"))), True, id="by-name-deleted"),
    ],
)
def test_a_refilled_answer_is_what_a_fetch_gives_now(
    selector: fnv1.ResourceSelector, change: Callable[[Catalog], object], rewritten: bool
) -> None:
    # Viewers see only data: a change they do not see must still be written (the content is the object's).
    catalog = Catalog(OBJECTS, views={("", "ConfigMap"): {"Viewer": _data_view}})
    held = fnv1.Resources()
    answer = Store([], catalog=catalog).refill(selector, held, None)
    assert answer is not None
    change(catalog)
    reads = Reads(reader="Viewer")
    again = Store([], catalog=catalog, reads=reads).refill(selector, held, answer)
    fetched = Reads(reader="Viewer")
    assert held == Store([], catalog=catalog, reads=fetched).fetch(selector)
    assert reads.seen == fetched.seen  # the read is recorded as a fetch records it
    assert (again != answer) is rewritten


@pytest.mark.parametrize(
    ("objects", "hidden", "selector"),
    [
        pytest.param([_cm("d", tier="gpu")], None, _GPU, id="store-holds-one-of-the-kind"),
        pytest.param([_cm("b", tier="cpu")], key_of(_cm("b")), _B, id="by-name-the-xr"),
        pytest.param(
            [_cm("n", tier="cpu")],
            None,
            _selector(api_version="v1", kind="ConfigMap", match_name="n"),
            id="by-name-the-stores-own",
        ),
    ],
)
def test_an_answer_not_the_catalogs_alone_is_rewritten_every_time(
    objects: list[dict[str, Any]], hidden: Any, selector: fnv1.ResourceSelector
) -> None:
    catalog = Catalog(OBJECTS)
    held = fnv1.Resources()
    held.items.add().resource.update({"stale": True})
    store = Store(objects, catalog=catalog, hidden=hidden)
    assert store.refill(selector, held, None) is None
    assert held == Store(objects, catalog=catalog, hidden=hidden).fetch(selector)
