"""Run every fault class on every steady state of the example fleets, and count what went wrong.

``python -m tests.faults.campaign`` prints the totals (steady states, fault
classes, runs, drops without a user reason, silent runs, silent changes; for
the lifecycle classes, plays, calls, drops and calls below the Ready bound; for
the InferenceCluster's classes, runs, drops and silent runs) and each failure;
the fault tests assert the same totals are zero.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from tests.faults.faults import FAULTS, Fault
from tests.faults.judge import judge
from tests.faults.lifecycle import LIFECYCLES, Lifecycle, play
from tests.faults.pools import judge_removal, removals
from tests.faults.steady import FLEETS, steady_states


@dataclass
class Totals:
    """What a campaign ran and what went wrong."""

    steady: int = 0
    runs: int = 0
    drops: int = 0
    silent: int = 0
    changed: int = 0
    failures: list[str] = field(default_factory=list)


def run(fleets: list[str], faults: dict[str, Fault]) -> Totals:
    """Inject each of ``faults`` into each steady state of ``fleets``."""
    totals = Totals()
    for fleet in fleets:
        for steady in steady_states(fleet):
            totals.steady += 1
            for name, fault in faults.items():
                for injection in fault(steady):
                    verdict = judge(injection, injection.call.run())
                    totals.runs += 1
                    totals.drops += len(verdict.dropped)
                    totals.silent += bool(verdict.silent)
                    totals.changed += bool(verdict.changed)
                    if not verdict.ok:
                        totals.failures.append(f"{steady.id} {name}[{injection.target}]: {verdict.describe()}")
    return totals


@dataclass
class LifeTotals:
    """What the lifecycle classes played and what went wrong."""

    plays: int = 0
    calls: int = 0
    drops: int = 0
    below: int = 0
    failures: list[str] = field(default_factory=list)


def run_lifecycles(fleets: list[str], lifecycles: dict[str, Lifecycle]) -> LifeTotals:
    """Play each of ``lifecycles`` from each steady state of ``fleets``."""
    totals = LifeTotals()
    for fleet in fleets:
        for steady in steady_states(fleet):
            for name, lifecycle in lifecycles.items():
                for p in lifecycle(steady):
                    outcome = play(p)
                    totals.plays += 1
                    totals.calls += outcome.calls
                    totals.drops += len(outcome.drops)
                    totals.below += len(outcome.below)
                    for why in (*outcome.drops, *outcome.below):
                        totals.failures.append(f"{steady.id} {name}[{p.target}]: {why}")
    return totals


# compose-inference-cluster's fault classes: a change to one cluster, judged on what that cluster composes.
CLUSTER_FAULTS = {"pool-removed-from-spec": removals}


@dataclass
class ClusterTotals:
    """What the InferenceCluster's classes ran and what went wrong."""

    runs: int = 0
    drops: int = 0
    silent: int = 0
    failures: list[str] = field(default_factory=list)


def run_cluster_faults(fleets: list[str]) -> ClusterTotals:
    """Take each pool of each cluster of ``fleets`` out of its spec, and judge what the cluster composes."""
    totals = ClusterTotals()
    for fleet in fleets:
        for name, fault in CLUSTER_FAULTS.items():
            for removal in fault(fleet):
                verdict = judge_removal(removal, removal.call.run())
                totals.runs += 1
                totals.drops += len(verdict.dropped)
                totals.silent += bool(verdict.silent)
                if not verdict.ok:
                    dropped = f"dropped {', '.join(verdict.dropped)}; " if verdict.dropped else ""
                    what = f"{fleet} {name}[{removal.cluster}/{removal.pool}]"
                    totals.failures.append(f"{what}: {dropped}{verdict.silent}")
    return totals


def main() -> int:
    """Run the whole campaign; exit 1 when anything was dropped, changed or left unreported."""
    totals = run(list(FLEETS), FAULTS)
    sys.stdout.write(
        f"{totals.steady} steady states x {len(FAULTS)} fault classes: {totals.runs} runs, "
        f"{totals.drops} drops without a user reason, {totals.silent} silent runs, "
        f"{totals.changed} runs that changed what runs\n"
    )
    for failure in totals.failures:
        sys.stdout.write(f"  {failure}\n")
    life = run_lifecycles(list(FLEETS), LIFECYCLES)
    sys.stdout.write(
        f"{len(LIFECYCLES)} lifecycle classes: {life.plays} plays, {life.calls} calls, "
        f"{life.drops} drops without a user reason, {life.below} calls below the Ready bound\n"
    )
    for failure in life.failures:
        sys.stdout.write(f"  {failure}\n")
    clusters = run_cluster_faults(list(FLEETS))
    sys.stdout.write(
        f"{len(CLUSTER_FAULTS)} InferenceCluster classes: {clusters.runs} runs, "
        f"{clusters.drops} drops without a user reason, {clusters.silent} silent runs\n"
    )
    for failure in clusters.failures:
        sys.stdout.write(f"  {failure}\n")
    return 1 if totals.failures or life.failures or clusters.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
