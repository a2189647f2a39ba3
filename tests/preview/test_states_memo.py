"""What the simulation derives from several objects is worked out again exactly when one of them was replaced."""

from __future__ import annotations

import pytest

from modelplane.preview.states import States

A, B, C = {"name": "a"}, {"name": "b"}, {"name": "c"}
EQUAL_TO_B = {"name": "b"}  # equal, but another object: the simulation replaced it

# (inputs of the second call, whether it is derived again)
CASES = [
    ("the same objects", [A, B], False),
    ("one replaced by an equal object", [A, EQUAL_TO_B], True),
    ("one more", [A, B, C], True),
    ("one fewer", [A], True),
    ("reordered", [B, A], True),
]


@pytest.mark.parametrize(("inputs", "again"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_derived_again_only_when_an_input_is_another_object(inputs: list[object], *, again: bool) -> None:
    states, calls, owner = States(()), [], {"kind": "InferenceCluster"}

    def derive() -> dict[str, int]:
        calls.append(1)
        return {"n": len(calls)}

    first = states.memo_by("x", owner, [A, B], derive)
    second = states.memo_by("x", owner, inputs, derive)
    assert (second is not first) is again
    assert len(calls) == (2 if again else 1)


def test_each_object_and_name_has_its_own_memo() -> None:
    states, one, two = States(()), {"kind": "InferenceCluster"}, {"kind": "InferenceCluster"}
    assert states.memo_by("x", one, [A], lambda: "one") == "one"
    assert states.memo_by("x", two, [A], lambda: "two") == "two"
    assert states.memo_by("y", one, [A], lambda: "y") == "y"
    assert states.memo_by("x", one, [A], lambda: "again") == "one"
