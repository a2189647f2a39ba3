"""Properties of compose-model-deployment under combined faults, from settled example fleets.

Any combination of faults (inputs gone, unreadable or empty, changes that cannot
run, replicas that stop serving, clusters being deleted) drops nothing and
changes nothing that runs; when one of them must be reported, ``Scheduled`` is
not True; and ``Scheduled`` is never True while a replica is held.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.faults.faults import FAULTS, Injection
from tests.faults.judge import judge
from tests.faults.steady import Steady, steady_states

FLEETS = ("platform+models", "scheduling/scale", "scheduling/disaggregated", "scheduling/insufficient-capacity")


@st.composite
def combined(draw: st.DrawFn) -> tuple[Injection, list[str], bool]:
    """A steady state with one to three faults injected one after the other; whether one must be reported.

    A fault must be reported unless a cluster is also being deleted: the replicas there leave anyway, so a
    fault that touches only them (their class gone) holds nothing and may go unsaid.
    """
    steady = draw(st.sampled_from([s for fleet in FLEETS for s in steady_states(fleet)]))
    names = draw(st.lists(st.sampled_from(sorted(FAULTS)), min_size=1, max_size=3, unique=True))
    injection = Injection("", steady.call)
    reported = deleting = False
    applied = []
    for name in names:
        options = list(FAULTS[name](Steady(steady.fleet, steady.name, injection.call)))
        if not options:
            continue  # its target went with an earlier fault
        picked = draw(st.sampled_from(options))
        injection = Injection(picked.target, picked.call, unready=picked.unready)
        reported |= bool(picked.names)
        deleting |= picked.progress
        applied.append(f"{name}[{picked.target}]")
    return Injection("", injection.call, unready=None), applied, reported and not deleting


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(combined())
def test_combined_faults_never_drop_or_change_what_runs(case: tuple[Injection, list[str], bool]) -> None:
    injection, applied, must_report = case
    got = injection.call.run()
    verdict = judge(injection, got)
    assert not verdict.dropped, applied
    assert not verdict.changed, applied
    scheduled = next(c for c in got["conditions"] if c["type"] == "Scheduled")
    if must_report:
        assert scheduled["status"] != "STATUS_CONDITION_TRUE", applied
    if scheduled["status"] == "STATUS_CONDITION_TRUE":
        placements = got["desired"]["composite"]["resource"].get("status", {}).get("placements", [])
        held = [p["replica"] for p in placements if p.get("state") in ("Held", "Lost")]
        assert not held, f"{applied}: Scheduled is True while {held} are held"
