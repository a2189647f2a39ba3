"""The bounded memo functions read once per distinct content with."""

from __future__ import annotations

from functools import partial

import pytest

from modelplane.memo import once


@pytest.mark.parametrize(
    ("keys", "limit", "reads", "held"),
    [
        pytest.param(["a", "a", "a"], 4, ["a"], ["a"], id="read-once-per-key"),
        pytest.param(["a", "b", "a", "b"], 4, ["a", "b"], ["a", "b"], id="each-key-its-own"),
        pytest.param(["a", "b", "c", "a"], 2, ["a", "b", "c", "a"], ["c", "a"], id="starts-again-past-the-limit"),
    ],
)
def test_once_reads_each_key_once_while_it_holds_it(
    keys: list[str], limit: int, reads: list[str], held: list[str]
) -> None:
    cache: dict[str, str] = {}
    read: list[str] = []

    def reader(key: str) -> str:
        read.append(key)
        return key.upper()

    for key in keys:
        assert once(cache, key, partial(reader, key), limit) == key.upper()
    assert read == reads
    assert list(cache) == held
