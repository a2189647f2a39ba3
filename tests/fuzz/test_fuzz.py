"""Fuzz every function from realistic requests: no exception, a valid answer, nothing dropped.

Each target starts from the requests the examples' fleets send once settled
(``tests/fuzz/corpus.py``) and corrupts the XR, the observed composed resources
and the required resources (``tests/fuzz/mutate.py``). Whatever the input:

- ``compose`` raises nothing, in-process (the last-resort guard in the runner
  is not what keeps this test green);
- the response is a valid RunFunctionResponse with no Fatal result;
- when inputs were only lost or corrupted (the XR and the required objects'
  fields are as their users wrote them; observed composed resources corrupted,
  required answers dropped, emptied or shrunk), every observed composed
  resource the uncorrupted request keeps is still desired: an absent or
  unreadable input never shrinks what runs. One corruption is a real change, not
  a loss: a composed resource whose Ready condition says True turned into one that
  says False, or back (``turned``). Which replica scaling down or a rollout retires
  first rightly follows readiness (not Ready ones first, as a ReplicaSet does), and
  no function can tell such a flip from the replica turning unready. Any other
  damage to a condition leaves readiness unknown, and then nothing may be dropped.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, note, settings

from modelplane.kinds import KINDS
from tests.fuzz.corpus import seeds_of
from tests.fuzz.harness import (
    call,
    call_runner,
    composer,
    dropped,
    problems,
    profile,
    quiet_logger,
    runner,
    turned,
)
from tests.fuzz.mutate import Mutated, Prepared, mutated, prepare

# Calls through the gRPC servicer (and its guard) per function: a sample, the in-process target does the rest.
RUNNER_EXAMPLES = 100


@functools.cache
def _prepared(kind: str) -> tuple[Prepared, ...]:
    return tuple(prepare(s) for s in seeds_of(kind))


def _describe(case: Mutated) -> str:
    lines = [f"seed {case.seed.id}"]
    lines += [
        f"  {m.op} {m.where.region}:{m.where.key}[{m.where.index}] {m.path} {m.value!r:.200}" for m in case.mutations
    ]
    return "\n".join(lines)


KIND_PARAMS = [pytest.param(k.kind, id=k.function) for k in KINDS]


@functools.cache
def _kept(kind: str) -> dict[str, frozenset[str]]:
    """What each seed keeps of what it observes, unmutated (a seed that scales down drops replicas)."""
    compose, log = composer(kind), quiet_logger()
    out = {}
    for prepared in _prepared(kind):
        req = prepared.seed.parse()
        out[prepared.seed.id] = frozenset(req.observed.resources) - frozenset(dropped(req, call(compose, req, log)))
    return out


@pytest.mark.parametrize("kind", KIND_PARAMS)
def test_seeds_compose(kind: str) -> None:
    compose, log = composer(kind), quiet_logger()
    assert _prepared(kind), f"no seed for {kind}"
    for prepared in _prepared(kind):
        req = prepared.seed.parse()
        assert problems(req, call(compose, req, log)) == [], prepared.seed.id


@pytest.mark.parametrize("kind", KIND_PARAMS)
def test_compose_survives_any_input(kind: str) -> None:
    compose, log = composer(kind), quiet_logger()

    @profile()
    @given(mutated(_prepared(kind)))
    def check(case: Mutated) -> None:
        note(_describe(case))
        req = case.request()
        rsp = call(compose, req, log)
        assert problems(req, rsp) == []
        if not case.may_change_meaning and not turned(case.seed.parse(), req):
            assert sorted(_kept(kind)[case.seed.id] & set(dropped(req, rsp))) == []

    check()


@pytest.mark.parametrize("kind", KIND_PARAMS)
def test_runner_answers_any_input(kind: str) -> None:
    quiet_logger()
    function_runner = runner(kind)

    @settings(profile(), max_examples=RUNNER_EXAMPLES)
    @given(mutated(_prepared(kind)))
    def check(case: Mutated) -> None:
        note(_describe(case))
        req = case.request()
        rsp = call_runner(function_runner, req)
        assert problems(req, rsp) == []

    check()
