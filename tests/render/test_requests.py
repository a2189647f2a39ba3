"""A function's request kept between renders holds what a request built anew would hold, call after call."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.requests import KeptRequests, with_required
from modelplane.render.store import Catalog, Store, key_of
from tests.render.test_store import OBJECTS, _cm


def _requirements(**selectors: fnv1.ResourceSelector) -> fnv1.Requirements:
    out = fnv1.Requirements()
    for name, rs in selectors.items():
        out.resources[name].CopyFrom(rs)
    return out


def _labels(**labels: str) -> fnv1.ResourceSelector:
    rs = fnv1.ResourceSelector(api_version="v1", kind="ConfigMap")
    rs.match_labels.labels.update(labels)
    return rs


def _base(name: str, *, context: bool) -> fnv1.RunFunctionRequest:
    req = fnv1.RunFunctionRequest()
    req.observed.composite.resource.update({"kind": "XR", "metadata": {"name": name}})
    req.meta.tag = name
    if context:
        req.context.update({"from": name})
    return req


_GPU, _CPU = _labels(tier="gpu"), _labels(tier="cpu")
_BY_NAME = fnv1.ResourceSelector(api_version="v1", kind="ConfigMap", match_name="b")


# Each case: calls in turn, each with its step's request, a change to the catalog before it, and what it requires.
Call = tuple[fnv1.RunFunctionRequest, Callable[[Catalog], object], fnv1.Requirements]
CASES = [
    pytest.param(
        [
            (_base("x", context=True), lambda _: None, _requirements(gpu=_GPU, cpu=_CPU)),
            (_base("y", context=False), lambda _: None, _requirements(gpu=_GPU, cpu=_CPU)),
        ],
        id="same-answers-another-xr",
    ),
    pytest.param(
        [
            (_base("x", context=False), lambda _: None, _requirements(gpu=_GPU)),
            (_base("x", context=False), lambda c: c.put(_cm("c", tier="gpu", extra="1")), _requirements(gpu=_GPU)),
            (_base("x", context=False), lambda c: c.put(_cm("d", tier="gpu")), _requirements(gpu=_GPU)),
            (_base("x", context=False), lambda c: c.delete(key_of(_cm("b"))), _requirements(gpu=_GPU, b=_BY_NAME)),
        ],
        id="answers-that-change",
    ),
    pytest.param(
        [
            (_base("x", context=False), lambda _: None, _requirements(gpu=_GPU, b=_BY_NAME)),
            (_base("y", context=True), lambda _: None, _requirements(b=_CPU)),
            (_base("z", context=False), lambda _: None, _requirements()),
        ],
        id="requirements-that-change",
    ),
]


def _kept(
    kept: KeptRequests, base: fnv1.RunFunctionRequest, store: Store, requirements: fnv1.Requirements
) -> fnv1.RunFunctionRequest:
    """The step's request ``base`` written into the kept one, as ``run_pipeline`` writes it, then refilled."""
    kept.start("fn").MergeFrom(base)
    return kept.fill("fn", store, requirements)


@pytest.mark.parametrize("calls", CASES)
def test_a_kept_request_is_the_request_built_anew(calls: list[Call]) -> None:
    catalog = Catalog(OBJECTS)
    kept = KeptRequests()
    for base, change, requirements in calls:
        change(catalog)
        got = _kept(kept, base, Store([], catalog=catalog), requirements)
        want = with_required(base, Store([], catalog=catalog), requirements)
        assert got == want
        assert got.HasField("context") == want.HasField("context")


def test_a_kept_request_is_the_same_request_call_after_call() -> None:
    store, kept = Store([], catalog=Catalog(OBJECTS)), KeptRequests()
    first = _kept(kept, _base("x", context=False), store, _requirements(gpu=_GPU))
    assert _kept(kept, _base("y", context=False), store, _requirements(gpu=_GPU)) is first
