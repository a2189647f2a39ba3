"""The fleet scheduler: where each replica of a ModelDeployment runs.

``schedule`` takes the deployment, the fleet as every caller sees it
(``modelplane.scheduling.view.FleetView``) and what the deployment observes of its
own replicas (``Existing``), and:

1. reads the deployment (``request``) and its existing replicas (``reconcile``), and resolves
   its placement strategy against the fleet (``costs``: what it places by first, or Spread);
2. starts from each pool's published free capacity, in which a replica the pool counted
   already holds its GPUs: kept where it runs it takes nothing more, moved, reshaped or
   released it gives them back; and, for a replica that fits nowhere, from what the pools
   would have once replicas of a lower priority not serving yet gave way, then serving ones too
   whose FleetQuotas allow it (``preemption: LowerPriority``); every placement
   stays within the FleetQuotas of the deployment's namespace (``gate``);
3. decides each existing replica (``reconcile.keep_existing``): sticky, held, leaving,
   lost, moved, or removed by a scale-down;
4. applies one wave of the rollout (``waves.apply_wave``) and places (``passes``) with
   the placement engine (``placer.Placer``);
5. when no surge replica fits anywhere, rolls in place, one replica at a time;
6. when a leaving replica would be retired while its replacement fits nowhere, keeps it (not when
   only a FleetQuota refuses the replacement and the accelerators the retirement gives back let it wait);
   A replica that gives way to a higher priority is retired all the same, within maxUnavailable,
   or one at a time when maxUnavailable is 0 and its replacement fits nowhere;
7. when a replica fits only once this call's retirements release their GPUs, says it is
   pending on them rather than unplaced; so is one placed in the place of serving replicas of a
   lower priority, which its cluster lists as preempted, until they are gone;
8. names each placement's state, sums the rollout up, and what the placements cost and emit.

Pure and deterministic: the result depends on the inputs' contents, not their order.
"""

from __future__ import annotations

from dataclasses import replace

from modelplane.scheduling.costs import objective_of, spend_of
from modelplane.scheduling.gate import QuotaGate
from modelplane.scheduling.passes import Outcome, place_pass
from modelplane.scheduling.placer import Placer
from modelplane.scheduling.quotas import Quotas
from modelplane.scheduling.reconcile import Existing, Kept, keep_existing, read_replicas
from modelplane.scheduling.rejection import RejectReason
from modelplane.scheduling.request import InvalidDeploymentError, request_of
from modelplane.scheduling.result import Pending, Schedule
from modelplane.scheduling.view import FleetView
from modelplane.scheduling.waves import (
    apply_wave,
    blocked,
    falls_back,
    leaving_retired,
    pending_of,
    preempted_stuck,
    summary,
    waiting_for_preempted,
    with_states,
)
from modelplane_models.model_deployment import ModelDeployment

__all__ = ["Existing", "InvalidDeploymentError", "schedule"]


def schedule(
    deployment: ModelDeployment,
    fleet: FleetView,
    *,
    existing: Existing | None = None,
    cached: frozenset[str] | None = None,
    quotas: Quotas | None = None,
) -> Schedule:
    """Place the replicas of a ModelDeployment on the fleet (see the module's steps).

    Args:
        deployment: The ModelDeployment.
        fleet: The fleet: clusters and their facts, classes, and each pool's free capacity.
        existing: What the deployment observes of its own replicas (see ``Existing``).
        cached: The clusters where ``spec.modelCacheRef``'s copy is Ready: a new replica prefers them
            (``modelplane.scheduling.placer``); None when the deployment references no cache.
        quotas: The FleetQuotas of the deployment's namespace and its priority: nothing is placed
            beyond a quota's limit (``modelplane.scheduling.gate``); None: no quota applies.

    Returns:
        The placements (held ones keep what they run), the replicas left
        unplaced with why, the replicas scaling down removes and those a
        rollout, a drain or a cluster's deletion retires, and the rollout's state.

    Raises:
        InvalidDeploymentError: The deployment has no name, no serving shape or
            an invalid topology.
    """
    # 1. The deployment and what it runs.
    request = request_of(deployment)
    existing = existing or Existing()
    strategy = existing.strategy or request.strategy
    replicas = read_replicas(request.key, existing)
    own, taken = replicas.own, [*replicas.unmanaged, *replicas.shadows]
    resolved = objective_of(request.policy, request.selector, fleet.clusters, fleet.classes)
    # 2. Free capacity as published; the placer knows which of its replicas that already counts.
    free, counted = fleet.free(), fleet.counted()
    clusters, selected = fleet.cluster_list(), fleet.selected(request.selector)
    judge = fleet.judge()

    quotas = quotas or Quotas()
    preemptible = fleet.preemptible(quotas.priority)
    preemptible_serving = fleet.preemptible_serving(quotas.priority)

    def run(kept_now: Kept, add: int, *, release: bool = False) -> Outcome:
        gate = QuotaGate.of(quotas, request.key, clusters, judge)
        placer = Placer(
            request,
            clusters,
            judge,
            free,
            counted,
            fleet.memo,
            objective=resolved.objective,
            cached=cached,
            gate=gate,
            preemptible=preemptible,
            preemptible_serving=preemptible_serving,
            selected=selected,
        )
        return place_pass(placer, kept_now, add, own, taken, existing, release=release)

    # 3. Each existing replica; 4. one wave of the rollout, then the placements.
    decided = keep_existing(
        fleet, judge, request, strategy, own, existing, objective=resolved.objective, quotas=quotas.applying
    )
    kept, add = apply_wave(decided, strategy, request.replicas, None, existing)
    outcome = run(kept, add)
    fallback = ""
    if falls_back(decided, kept, add, outcome.placements, strategy, request.replicas - len(existing.opaque)):
        # 5. No surge replica fits anywhere: roll in place, one replica at a time.
        kept, add = apply_wave(decided, strategy, request.replicas, 1, existing)
        outcome = run(kept, add)
        first = outcome.unplaced[0] if outcome.unplaced else None
        why = f"{first.reason}: {first.message}" if first is not None else "no capacity"
        fallback = f"no surge replica can be placed ({why}): updating in place, one replica at a time"
    why_stuck = outcome.unplaced[0] if outcome.unplaced else None
    retried = leaving_retired(kept, outcome.unplaced)
    if retried and _quota_refused(outcome):
        # A replacement only a quota refuses may fit once the leaving replica retired gives its quota back.
        retried = not _fits_when_freed(outcome, run(kept, add, release=True))
    if retried:
        # 6. A leaving replica retired within maxUnavailable whose replacement fits nowhere would only be lost.
        kept, add = apply_wave(decided, strategy, request.replicas, None, existing, retire_leaving=False)
        outcome = run(kept, add)
    if preempted_stuck(kept, outcome.unplaced, strategy):
        # 6b. A replica that gives way to a higher priority, with maxUnavailable 0 and no room for its
        # replacement anywhere: retired one at a time all the same (a best-effort budget, as Kubernetes'
        # preemption honours a PodDisruptionBudget), or the higher priority would wait for ever.
        kept, add = apply_wave(
            decided, strategy, request.replicas, None, existing, retire_leaving=not retried, preempt_unavailable=1
        )
        outcome = run(kept, add)
    pending: tuple[Pending, ...] = ()
    if outcome.unplaced and (kept.retired or kept.removed):
        # 7. GPUs this deployment's own retirements release are free by a later call: a replica that
        # fits then waits for them (progress), it is not unplaced.
        freed = run(kept, add, release=True)
        pending = pending_of(outcome.placements, freed.placements, kept)
        outcome = Outcome(outcome.placements, freed.unplaced, freed.shortfall, outcome.withdrawn)
    # Leaving replicas that cannot move: say why (their replacement's reason).
    stuck = blocked(why_stuck) if why_stuck is not None and (retried or (outcome.unplaced and kept.leaving)) else ""
    # 8. States and the rollout's summary.
    placements = with_states(outcome.placements, kept, own)
    rollout = summary(existing.revision, placements, kept, own, fallback, paused=strategy.paused)
    pending += waiting_for_preempted(fleet.preempted, placements, own)
    rollout = replace(rollout, pending=pending, blocked=stuck)
    return Schedule(
        deployment=request.key,
        desired=request.replicas,
        placements=tuple(sorted(placements, key=lambda p: p.ordinal)),
        unplaced=tuple(outcome.unplaced),
        removed=(*(o.name for o in kept.removed), *outcome.withdrawn),
        unmanaged=tuple(h.name for h in replicas.unmanaged),
        shortfall=outcome.shortfall,
        retired=tuple(o.name for o in sorted(kept.retired, key=lambda o: o.ordinal)),
        preempted=rollout.retired_preempted,
        waiting=kept.waiting,
        rollout=rollout if existing.revision else None,
        pending=pending,
        serving=frozenset(o.name for o in own if o.occupancy.ready),
        moved=tuple((p.replica, kept.moved[p.ordinal], p.cluster) for p in placements if p.ordinal in kept.moved),
        note=resolved.note,
        spend=spend_of(placements, fleet.clusters, fleet.classes),
    )


def _quota_refused(outcome: Outcome) -> bool:
    """Whether the first replica left unplaced is refused by a FleetQuota (room was there otherwise)."""
    return bool(outcome.unplaced) and outcome.unplaced[0].reason == RejectReason.QUOTA_EXCEEDED


def _fits_when_freed(outcome: Outcome, freed: Outcome) -> bool:
    """Whether fewer replicas stay unplaced once the replicas this wave retires are gone (step 6).

    A leaving replica retired within maxUnavailable gives its quota back: its replacement then waits
    for that (pending) instead of being unplaced, so the retirement is progress, not a loss.
    """
    return len(freed.unplaced) < len(outcome.unplaced)
