"""One wave of a rolling update or a drain, and a whole rollout simulated wave by wave."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modelplane.capacity import DeploymentKey
from modelplane.scheduling.placement import Held, HoldReason, Origin, Placement, State
from modelplane.scheduling.result import Schedule
from modelplane.scheduling.rollout import Member, Wave, wave
from modelplane.scheduling.strategy import duration_seconds, scaled


def _ready(*ordinals: int, in_place: bool = False, leaving: bool = False) -> list[Member]:
    return [Member(o, ready=True, in_place=in_place, leaving=leaving) for o in ordinals]


@pytest.mark.parametrize(
    ("current", "old", "surge", "unavailable", "want"),
    [
        pytest.param([], _ready(0, 1, 2), 1, 0, Wave(frozenset(), frozenset(), 1), id="start-surges-one"),
        pytest.param(
            [Member(3, ready=False)], _ready(0, 1, 2), 1, 0, Wave(frozenset(), frozenset(), 0), id="waits-for-the-surge"
        ),
        pytest.param(
            _ready(3), _ready(0, 1, 2), 1, 0, Wave(frozenset({0}), frozenset(), 1), id="surge-ready-retires-one"
        ),
        pytest.param(
            _ready(3, 4, 5), _ready(0), 1, 0, Wave(frozenset({0}), frozenset(), 0), id="last-old-retires-when-done"
        ),
        pytest.param(
            [], _ready(0, 1, 2, in_place=True), 0, 1, Wave(frozenset(), frozenset({0}), 0), id="no-surge-in-place"
        ),
        pytest.param(
            [], _ready(0, 1, 2, in_place=True), 1, 1, Wave(frozenset(), frozenset({0}), 1), id="surge-and-unavailable"
        ),
        pytest.param(
            [], [Member(0, ready=False, in_place=True), *_ready(1, 2)], 1, 0,
            Wave(frozenset(), frozenset({0}), 1), id="a-broken-old-replica-is-updated-freely",
        ),
        pytest.param(
            _ready(1, 2) + _ready(0, leaving=True), [], 1, 0, Wave(frozenset(), frozenset(), 1),
            id="drain-surges-first",
        ),
        pytest.param(
            _ready(1, 2, 3) + _ready(0, leaving=True), [], 1, 0, Wave(frozenset({0}), frozenset(), 0),
            id="drain-retires-once-replaced",
        ),
        pytest.param(
            _ready(1, 2) + _ready(0, leaving=True), [], 0, 1, Wave(frozenset({0}), frozenset(), 1),
            id="drain-without-surge-within-max-unavailable",
        ),
    ],
)  # fmt: skip
def test_wave(current: list[Member], old: list[Member], surge: int, unavailable: int, want: Wave) -> None:
    assert wave(3, current, old, max_surge=surge, max_unavailable=unavailable) == want


@pytest.mark.parametrize(
    ("current", "old", "surge", "want"),
    [
        pytest.param(
            _ready(1, 2) + _ready(0, leaving=True), [], 0, Wave(frozenset(), frozenset(), 0),
            id="drain-keeps-a-replica-it-cannot-replace",
        ),
        pytest.param(
            _ready(1, 2) + _ready(0, leaving=True), [], 1, Wave(frozenset(), frozenset(), 1),
            id="drain-still-surges",
        ),
        pytest.param(
            _ready(1, 2, 3) + _ready(0, leaving=True), [], 1, Wave(frozenset({0}), frozenset(), 0),
            id="a-replaced-leaving-replica-still-retires",
        ),
        pytest.param(
            _ready(1, 2), _ready(0), 0, Wave(frozenset({0}), frozenset(), 1), id="old-replicas-still-retire",
        ),
    ],
)  # fmt: skip
def test_a_wave_that_keeps_leaving_replicas(current: list[Member], old: list[Member], surge: int, want: Wave) -> None:
    assert wave(3, current, old, max_surge=surge, max_unavailable=1, retire_leaving=False) == want


def test_paused_leaves_old_replicas_alone() -> None:
    got = wave(3, _ready(3), _ready(0, 1, 2, in_place=True), max_surge=1, max_unavailable=1, paused=True)
    assert got == Wave(frozenset({0}), frozenset(), 0) or got.in_place == frozenset()
    assert wave(3, [], _ready(0, 1, 2, in_place=True), max_surge=1, max_unavailable=0, paused=True).add == 0


@pytest.mark.parametrize(
    ("value", "replicas", "round_up", "want"),
    [
        pytest.param(None, 4, True, 1, id="default"),
        pytest.param(2, 4, True, 2, id="count"),
        pytest.param("25%", 3, True, 1, id="percent-up"),
        pytest.param("25%", 3, False, 0, id="percent-down"),
        pytest.param("100%", 3, False, 3, id="all"),
        pytest.param("x%", 3, True, 1, id="unreadable-default"),
    ],
)
def test_scaled(value: int | str | None, replicas: int, round_up: bool, want: int) -> None:
    assert scaled(value, replicas, round_up=round_up, default=1) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("5m", 300.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="hours-minutes"),
        pytest.param("90s", 90.0, id="seconds"),
        pytest.param("0", None, id="disabled"),
        pytest.param("soon", None, id="invalid"),
        pytest.param(None, 300.0, id="absent-default"),
    ],
)
def test_duration_seconds(text: str | None, want: float | None) -> None:
    assert duration_seconds(text) == want


def simulate(
    replicas: int, surge: int, unavailable: int, ready_order: list[int], *, drain: int = 0, in_place: bool = True
) -> list[tuple[int, int]]:
    """Roll ``replicas`` old replicas (``drain`` of them leaving) to the new revision; (Ready, total) per step."""
    old = dict.fromkeys(range(replicas), True)  # ordinal: ready
    leaving = set(range(drain))
    current: dict[int, bool] = {}
    next_ordinal = replicas
    steps = [(replicas, replicas)]
    # Enough calls for every replica to turn Ready at the slowest rate of ``ready_order``.
    for step in range((replicas + 2) * len(ready_order) * 2 + 8):
        members_old = [
            Member(o, r, leaving=o in leaving, in_place=in_place and o not in leaving) for o, r in old.items()
        ]
        members_new = [Member(o, r) for o, r in current.items()]
        w = wave(replicas, members_new, members_old, max_surge=surge, max_unavailable=unavailable)
        for o in w.retire:
            old.pop(o, None)
            current.pop(o, None)
        for o in w.in_place:
            old.pop(o)
            current[o] = False
        for _ in range(w.add):
            current[next_ordinal] = False
            next_ordinal += 1
        steps.append((sum(old.values()) + sum(current.values()), len(old) + len(current)))
        # Some not-Ready replicas of the new revision turn Ready before the next call.
        waiting = sorted(o for o, r in current.items() if not r)
        for o in waiting[: ready_order[step % len(ready_order)]]:
            current[o] = True
        if not old and all(current.values()) and len(current) == replicas:
            break
    assert not old and len(current) == replicas, f"the rollout did not finish: {old=} {current=}"
    return steps


def test_a_three_replica_upgrade_never_drops_below_three_ready() -> None:
    steps = simulate(3, 1, 0, [0, 1])
    assert min(r for r, _ in steps) == 3
    assert max(t for _, t in steps) == 4


@settings(max_examples=300, deadline=None)
@given(
    replicas=st.integers(1, 8),
    surge=st.integers(0, 3),
    unavailable=st.integers(0, 3),
    ready_order=st.lists(st.integers(0, 3), min_size=1, max_size=6).filter(any),
    drain=st.integers(0, 8),
    in_place=st.booleans(),
)
def test_no_step_of_a_rollout_or_drain_drops_ready_below_the_bound(
    replicas: int, surge: int, unavailable: int, ready_order: list[int], drain: int, in_place: bool
) -> None:
    if surge == 0 and unavailable == 0:
        surge = 1
    unavailable = min(unavailable, replicas)
    steps = simulate(replicas, surge, unavailable, ready_order, drain=min(drain, replicas), in_place=in_place)
    assert all(r >= replicas - unavailable for r, _ in steps)
    assert all(t <= replicas + surge for _, t in steps)


def _placement(ordinal: int, state: State) -> Placement:
    held = {State.LEAVING: HoldReason.CLUSTER_DRAINING, State.LOST: HoldReason.CLUSTER_LOST}.get(state)
    return Placement(
        f"llm-{ordinal}", ordinal, "a", (), Origin.KEPT, held=Held(held, "why") if held else None, state=state
    )


@pytest.mark.parametrize(
    ("states", "serving", "want"),
    [
        pytest.param([State.CURRENT] * 3, {0, 1, 2}, "placed 3 of 3", id="steady"),
        pytest.param(
            [State.LEAVING, State.CURRENT, State.LEAVING, State.SURGE], {0, 1, 2},
            "placed 3 of 3 (2 leaving: llm-0, llm-2)", id="drain-leaving-serve",
        ),
        pytest.param(
            [State.LEAVING, State.CURRENT, State.LEAVING, State.SURGE], {1},
            "placed 2 of 3 (2 leaving: llm-0, llm-2)", id="drain-leaving-down",
        ),
        pytest.param(
            [State.LOST, State.CURRENT, State.CURRENT, State.SURGE], {1},
            "placed 3 of 3 (1 lost: llm-0)", id="failed-over",
        ),
        pytest.param(
            [State.OUTDATED, State.OUTDATED, State.OUTDATED, State.SURGE], set(), "placed 3 of 3", id="rollout",
        ),
    ],
)  # fmt: skip
def test_the_schedule_counts_what_the_user_asked_for_and_says_leaving_and_lost_apart(
    states: list[State], serving: set[int], want: str
) -> None:
    placements = tuple(_placement(o, s) for o, s in enumerate(states))
    plan = Schedule(
        DeploymentKey("ml", "llm"), 3, placements, (), (), (), serving=frozenset(f"llm-{o}" for o in serving)
    )
    assert plan.message == want
