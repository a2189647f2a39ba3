"""split_weights: a selector's weight split evenly over its endpoints, as exact reduced integers."""

from __future__ import annotations

from fractions import Fraction

import pytest

from modelplane.routing import MAX_WEIGHT, Group, split_weights


def _weights(*groups: Group) -> dict[str, int]:
    return {s.endpoint: s.weight for s in split_weights(groups)}


@pytest.mark.parametrize(
    ("groups", "want"),
    [
        pytest.param([Group(1, ("a",))], {"a": 1}, id="one-endpoint"),
        pytest.param([Group(1, ("a", "b", "c"))], {"a": 1, "b": 1, "c": 1}, id="even-split"),
        pytest.param(
            [Group(90, ("fp8-0", "fp8-1")), Group(10, ("bf16-0",))],
            {"bf16-0": 2, "fp8-0": 9, "fp8-1": 9},
            id="canary-90-10-over-2-and-1",
        ),
        pytest.param([Group(80, ("a",)), Group(20, ())], {"a": 1}, id="selector-matching-none"),
        pytest.param([Group(1, ("a",)), Group(0, ("b",))], {"a": 1, "b": 0}, id="zero-weight-stays-attached"),
        pytest.param([Group(0, ("a",)), Group(5, ())], {"a": 0}, id="nothing-with-weight"),
        pytest.param(
            [Group(2, ("a", "b", "c")), Group(1, ("d", "e"))], {"a": 4, "b": 4, "c": 4, "d": 3, "e": 3}, id="lcm"
        ),
        pytest.param([Group(1, ("a", "b")), Group(1, ("b",))], {"a": 1, "b": 3}, id="overlapping-selectors-add"),
        pytest.param([Group(7, ("a", "a"))], {"a": 1}, id="duplicates-count-once"),
        pytest.param([Group(500, ("a",)), Group(300, ("b",))], {"a": 5, "b": 3}, id="gcd"),
        # Pool endpoints weigh their cluster's Ready replicas: 2 on east, 1 on west.
        pytest.param([Group(1, ("east", "west"), {"east": 2, "west": 1})], {"east": 2, "west": 1}, id="by-share"),
        pytest.param(
            [Group(80, ("east", "west"), {"east": 3, "west": 1}), Group(20, ("canary",))],
            {"canary": 1, "east": 3, "west": 1},
            id="shares-within-a-canary",
        ),
        pytest.param([Group(1, ("a", "b"), {"a": 0, "b": 0})], {"a": 0, "b": 0}, id="no-share-sends-nothing"),
    ],
)
def test_split(groups: list[Group], want: dict[str, int]) -> None:
    assert _weights(*groups) == want


def test_rounding_when_exact_ratios_exceed_the_gateway_maximum() -> None:
    # 1000000 over 7 endpoints and 1 over 11: exact integers would be 11000000 and 7 per endpoint.
    got = _weights(Group(1_000_000, tuple(f"a{i}" for i in range(7))), Group(1, tuple(f"b{i}" for i in range(11))))
    assert max(got.values()) == MAX_WEIGHT
    assert {got[f"a{i}"] for i in range(7)} == {MAX_WEIGHT}
    # A positive share is never rounded to nothing.
    assert {got[f"b{i}"] for i in range(11)} == {1}


def test_fractions_are_exact_shares_of_all_traffic() -> None:
    shares = split_weights([Group(90, ("a", "b")), Group(10, ("c",))])
    assert [(s.endpoint, s.fraction) for s in shares] == [
        ("a", Fraction(9, 20)),
        ("b", Fraction(9, 20)),
        ("c", Fraction(1, 10)),
    ]
    assert all(s.fraction == 0 for s in split_weights([Group(0, ("a",))]))
