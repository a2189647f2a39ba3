"""The YAML writer prints what go-yaml v2 (through sigs.k8s.io/yaml) prints.

Every expected string below is the output of sigs.k8s.io/yaml v1.6.0
JSONToYAML (go-yaml v2.4.3, the versions the pinned CLI builds with) for the
same value, captured once with a throw-away Go program.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.documents import load_all
from modelplane.render.goyaml import dump_document, format_float


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        pytest.param(
            {"b": 1, "a10": 2, "a9": 3, "A": 4, "_x": 5}, "_x: 5\nA: 4\na9: 3\na10: 2\nb: 1\n", id="natural-key-order"
        ),
        pytest.param(
            {"s": ["true", "y", "1", "0x1F", "1:20", "1e3", "", "~", "2024-01-01T00:00:00Z", "v1", "plain text"]},
            's:\n- "true"\n- "y"\n- "1"\n- "0x1F"\n- "1:20"\n- "1e3"\n- ""\n- "~"\n'
            '- "2024-01-01T00:00:00Z"\n- v1\n- plain text\n',
            id="strings-that-would-read-back-as-other-types-are-double-quoted",
        ),
        pytest.param(
            {"k": "a: b", "l": "- x", "m": "#c"}, "k: 'a: b'\nl: '- x'\nm: '#c'\n", id="plain-unsafe-single-quoted"
        ),
        pytest.param({"k": "one\ntwo\n"}, "k: |\n  one\n  two\n", id="multiline-literal"),
        pytest.param(
            {"e": {}, "l": [], "n": None, "t": True}, 'e: {}\nl: []\n"n": null\nt: true\n', id="empty-and-null"
        ),
        pytest.param({"f": 3.0, "g": 0.25, "h": 1234567.5}, "f: 3\ng: 0.25\nh: 1.2345675e+06\n", id="numbers"),
        pytest.param(
            {"long": " ".join(c * 4 for c in "abcdefghijklmnopqrs")},
            "long: aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll mmmm nnnn oooo pppp\n  qqqq rrrr ssss\n",
            id="folded-at-80-columns",
        ),
        pytest.param({"l": [{"a": 1, "b": [2]}]}, "l:\n- a: 1\n  b:\n  - 2\n", id="sequences-not-indented"),
    ],
)
def test_dump_document(obj: dict[str, Any], want: str) -> None:
    assert dump_document(obj) == want


@pytest.mark.parametrize(
    ("f", "want"),
    [
        pytest.param(1e-7, "1e-07", id="small"),
        pytest.param(1e21, "1e+21", id="large"),
        pytest.param(123456.5, "123456.5", id="below-1e6"),
        pytest.param(-0.5, "-0.5", id="negative"),
    ],
)
def test_format_float(f: float, want: str) -> None:
    assert format_float(f) == want


def test_load_all_keeps_timestamps_as_strings() -> None:
    assert load_all("---\na: 2024-01-01\n---\n---\nb: 1\n") == [{"a": "2024-01-01"}, {"b": 1}]
