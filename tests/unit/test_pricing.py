"""Prices and carbon figures as the platform team writes them, read exactly; bad ones name their field."""

from __future__ import annotations

from decimal import Decimal

import pytest

from modelplane.capacity import ClusterInfo, ClusterSummary, PoolInfo, summarize
from modelplane.capacity.pools import as_occupancy
from modelplane.capacity.published import PoolClass, cost_status
from modelplane.capacity.summary import Listed
from modelplane.classes import review_class
from modelplane.pricing import (
    DEFAULT_POWER_WATTS,
    ClassPrice,
    amount,
    class_price,
    cluster_price,
    decimal_of,
    grams_per_gpu_hour,
    price_per_gpu_hour,
)
from modelplane.topology import Role
from modelplane_models.inference_class import InferenceClass
from tests.unit.fleet import Shape, gpu_class, replica


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("4.10", Decimal("4.10"), id="two-places"),
        pytest.param("0", Decimal(0), id="zero"),
        pytest.param("0.000001", Decimal("0.000001"), id="six-places"),
        pytest.param("123456789", Decimal(123456789), id="nine-digits"),
        pytest.param("-1", None, id="negative"),
        pytest.param("4,10", None, id="comma"),
        pytest.param("4.", None, id="trailing-point"),
        pytest.param(".5", None, id="leading-point"),
        pytest.param("01.5", None, id="leading-zero"),
        pytest.param("1.0000001", None, id="seven-places"),
        pytest.param("1e3", None, id="exponent"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="absent"),
    ],
)
def test_decimal_of(text: str | None, want: Decimal | None) -> None:
    assert decimal_of(text) == want


@pytest.mark.parametrize(
    ("per_gpu_hour", "currency", "field"),
    [
        pytest.param("4.10", None, "spec.cost.currency", id="cost-without-currency"),
        pytest.param(None, "USD", "spec.cost.perGPUHour", id="currency-without-cost"),
        pytest.param("-4.10", "USD", "spec.cost.perGPUHour", id="negative-price"),
        pytest.param("4.1.0", "USD", "spec.cost.perGPUHour", id="malformed-price"),
        pytest.param("4.10", "usd", "spec.cost.currency", id="lowercase-currency"),
        pytest.param("4.10", "DOLLARS", "spec.cost.currency", id="long-currency"),
    ],
)
def test_a_bad_class_cost_names_its_field_and_prices_nothing(
    per_gpu_hour: str | None, currency: str | None, field: str
) -> None:
    price = class_price(per_gpu_hour, currency, None)
    assert price.per_gpu_hour is None
    assert price.problem is not None
    assert price.problem.field == field


@pytest.mark.parametrize(
    ("cost", "field"),
    [
        pytest.param({"perGPUHour": "-1", "currency": "USD"}, "spec.cost.perGPUHour", id="negative"),
        pytest.param({"perGPUHour": "1", "currency": "US"}, "spec.cost.currency", id="short-currency"),
    ],
)
def test_the_class_review_refuses_a_bad_cost(cost: dict[str, str], field: str) -> None:
    body = gpu_class("x").model_dump(exclude_none=True, by_alias=True)
    body["spec"]["cost"] = cost
    klass = InferenceClass.model_validate(body)
    assert klass.spec is not None
    assert [p.field for p in review_class(klass.spec).problems] == [field]


@pytest.mark.parametrize(
    ("multiplier", "grams", "want_multiplier", "problem"),
    [
        pytest.param(None, None, Decimal(1), None, id="default-one"),
        pytest.param("0.6", 30, Decimal("0.6"), None, id="discount"),
        pytest.param("-0.6", None, None, "spec.cost.multiplier", id="negative-multiplier"),
        pytest.param("x", None, None, "spec.cost.multiplier", id="malformed-multiplier"),
    ],
)
def test_cluster_price(
    multiplier: str | None, grams: int | None, want_multiplier: Decimal | None, problem: str | None
) -> None:
    price = cluster_price(multiplier, grams)
    assert price.multiplier == want_multiplier
    assert price.grams_per_kwh == grams
    assert (price.problem.field if price.problem else None) == problem


def test_a_pool_figure_is_its_class_times_its_cluster() -> None:
    klass = class_price("4.10", "USD", 500)
    assert price_per_gpu_hour(klass, cluster_price("0.5", None)) == Decimal("2.05")
    assert price_per_gpu_hour(klass, cluster_price("x", None)) is None
    assert grams_per_gpu_hour(klass, cluster_price(None, 400)) == Decimal(200)
    assert grams_per_gpu_hour(klass, cluster_price(None, None)) is None
    assert grams_per_gpu_hour(ClassPrice(), cluster_price(None, 1000)) == Decimal(DEFAULT_POWER_WATTS)


@pytest.mark.parametrize(
    ("value", "places", "want"),
    [
        pytest.param(Decimal("32.8"), 2, "32.80", id="pads"),
        pytest.param(Decimal("0.7025"), 2, "0.7025", id="keeps-more"),
        pytest.param(Decimal("5600.000"), 0, "5600", id="whole"),
        pytest.param(Decimal(0), 2, "0.00", id="zero"),
    ],
)
def test_amount(value: Decimal, places: int, want: str) -> None:
    assert amount(value, places=places) == want


def _summary(*replicas: tuple[str, str]) -> tuple[ClusterInfo, ClusterSummary]:
    info = ClusterInfo(
        "c", {}, cordoned=False, ready=True, not_ready="", pools=(PoolInfo("h", "h100", 2), PoolInfo("f", "free", 2))
    )
    listed = []
    for name, pool in replicas:
        occupancy = as_occupancy(
            replica(name, cluster="c", pools={Role.UNIFIED: pool}, shapes={Role.UNIFIED: Shape(tensor=4)}, ready=True)
        )
        assert occupancy is not None
        listed.append(Listed(occupancy))
    return info, summarize(info, {"h100": 8, "free": 8}, listed)


@pytest.mark.parametrize(
    ("replicas", "classes", "multiplier", "want"),
    [
        pytest.param(
            [("a", "h"), ("b", "h"), ("c", "f")],
            {"h100": class_price("4.10", "USD", None), "free": ClassPrice()},
            None,
            {"perHour": "32.80", "currency": "USD", "unpricedGPUs": 4},
            id="held-gpus-at-their-price",
        ),
        pytest.param(
            [("a", "h")],
            {"h100": class_price("4.10", "USD", None), "free": ClassPrice()},
            "0.5",
            {"perHour": "8.20", "currency": "USD"},
            id="times-the-multiplier",
        ),
        pytest.param(
            [],
            {"h100": class_price("4.10", "USD", None), "free": ClassPrice()},
            None,
            {"perHour": "0.00", "currency": "USD"},
            id="priced-but-idle",
        ),
        pytest.param(
            [("a", "h")],
            {"h100": class_price("4.10", "USD", None), "free": class_price("1", "EUR", None)},
            None,
            None,
            id="mixed-currencies",
        ),
        pytest.param([("a", "h")], {"h100": ClassPrice(), "free": ClassPrice()}, None, None, id="no-price"),
        pytest.param([("a", "h")], {"h100": class_price("4.10", "USD", None)}, "x", None, id="bad-multiplier"),
    ],
)
def test_cluster_cost_status(
    replicas: list[tuple[str, str]],
    classes: dict[str, ClassPrice],
    multiplier: str | None,
    want: dict[str, object] | None,
) -> None:
    info, summary = _summary(*replicas)
    pool_classes = {n: PoolClass(8, None, None, p) for n, p in classes.items()}
    assert cost_status(info.pools, pool_classes, summary, cluster_price(multiplier, None)) == want
