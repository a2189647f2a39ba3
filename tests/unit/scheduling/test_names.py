from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.scheduling import replica_name, replica_ordinal

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.mark.parametrize(
    ("deployment", "ordinal", "want"),
    [
        pytest.param("llama-70b", 0, "llama-70b-0", id="plain"),
        pytest.param("llama-70b", 12, "llama-70b-12", id="two-digits"),
        pytest.param("a" * 61, 0, "a" * 61 + "-0", id="just-fits"),
        pytest.param("a" * 62, 0, "a" * 52 + "-f506898c-0", id="too-long-hashed"),
        pytest.param("llama.70b", 1, "llama-70b-a0f85dd3-1", id="dots-hashed"),
    ],
)
def test_replica_name(deployment: str, ordinal: int, want: str) -> None:
    assert replica_name(deployment, ordinal) == want


def test_replica_name_refuses_negative_ordinals() -> None:
    with pytest.raises(ValueError, match="negative"):
        replica_name("llm", -1)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        pytest.param("llm-3", 3, id="ours"),
        pytest.param("llm-03", None, id="leading-zero"),
        pytest.param("llm-x", None, id="not-a-number"),
        pytest.param("other-3", None, id="other-deployment"),
        pytest.param("llm-canary-0", None, id="longer-prefix"),
    ],
)
def test_replica_ordinal(name: str, want: int | None) -> None:
    assert replica_ordinal("llm", name) == want


deployment_names = st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?", fullmatch=True)


@given(deployment_names, st.integers(0, 100_000))
def test_names_are_dns_labels_that_round_trip(deployment: str, ordinal: int) -> None:
    name = replica_name(deployment, ordinal)
    assert len(name) <= 63
    assert DNS_LABEL.match(name)
    assert replica_ordinal(deployment, name) == ordinal


@given(deployment_names, st.integers(0, 1000), st.integers(0, 1000))
def test_ordinals_give_distinct_names(deployment: str, a: int, b: int) -> None:
    assert (replica_name(deployment, a) == replica_name(deployment, b)) == (a == b)
