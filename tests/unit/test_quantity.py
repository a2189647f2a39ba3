from __future__ import annotations

from fractions import Fraction

import pytest

from modelplane.quantity import QuantityError, parse_quantity
from modelplane.versions import is_semver


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("80Gi", Fraction(80 * 2**30), id="binary-suffix"),
        pytest.param("1.5Ki", Fraction(1536), id="fractional-binary"),
        pytest.param("500m", Fraction(1, 2), id="milli"),
        pytest.param("2k", Fraction(2000), id="kilo"),
        pytest.param("1e3", Fraction(1000), id="exponent"),
        pytest.param("1E-2", Fraction(1, 100), id="negative-exponent"),
        pytest.param("+.5", Fraction(1, 2), id="leading-dot"),
        pytest.param("-3", Fraction(-3), id="negative"),
        pytest.param(7, Fraction(7), id="int"),
        pytest.param(0.25, Fraction(1, 4), id="float"),
    ],
)
def test_parse_quantity(text: str | int | float, want: Fraction) -> None:
    assert parse_quantity(text) == want


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("80 GiB", id="space-and-unit"),
        pytest.param("80GB", id="two-letter-suffix"),
        pytest.param("", id="empty"),
        pytest.param(" 1", id="leading-space"),
        pytest.param("1.2.3", id="two-dots"),
        pytest.param(True, id="bool"),
    ],
)
def test_parse_quantity_refuses(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("9.0.0", True, id="plain"),
        pytest.param("1.2.3-rc.1+build.5", True, id="pre-release-and-build"),
        pytest.param("9.0", False, id="two-parts"),
        pytest.param("01.0.0", False, id="leading-zero"),
        pytest.param("v1.0.0", False, id="v-prefix"),
    ],
)
def test_is_semver(text: str, want: bool) -> None:
    assert is_semver(text) is want
