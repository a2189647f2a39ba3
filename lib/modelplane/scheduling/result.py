"""What the scheduler decided for one ModelDeployment: its placements, what is left unplaced, where a rollout stands.

The parts of the answer have their own modules: a replica's ``Placement``
(``placement.py``) and why one is ``Unplaced`` (``rejection.py``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from modelplane.capacity import DeploymentKey
from modelplane.scheduling.costs import Spend, StrategyNote
from modelplane.scheduling.placement import Placement, State
from modelplane.scheduling.rejection import RejectReason, Unplaced


@dataclass(frozen=True)
class Pending:
    """A replica of a rollout or a drain that fits once GPUs this deployment releases are free.

    The replicas it waits for were retired (or removed) by this call or an earlier one and still
    hold their GPUs; the replica is placed on the next call after they are gone. Progress, not a
    scheduling failure.

    Attributes:
        replica: The ModelReplica's name.
        ordinal: Its ordinal.
        cluster: Where it fits once they are released.
        releasing: The replicas whose GPUs it waits for, on that cluster, by name.
        preempted: They are serving replicas of a lower priority, of other deployments ("namespace/name"),
            that give way to this one (their cluster's ``status.capacity.preempted``).
    """

    replica: str
    ordinal: int
    cluster: str
    releasing: tuple[str, ...]
    preempted: bool = False


@dataclass(frozen=True)
class Schedule:
    """The placements of one ModelDeployment's replicas.

    Attributes:
        deployment: The ModelDeployment.
        desired: Replicas wanted (``spec.replicas``).
        placements: Replicas that are composed, by ordinal: placed, kept, and
            leaving ones (held because their cluster is being deleted) until they are retired.
        unplaced: The first replicas without a placement (at most ``LISTED``), by ordinal.
        removed: Existing replicas that scaling down removes, in removal order.
        unmanaged: Existing replicas of the deployment whose names the scheduler
            did not give (never kept, moved or removed; their GPUs are counted).
        shortfall: Wanted replicas without a placement (``len(unplaced)`` or more).
        retired: Replicas retired now: they were leaving (their cluster drains or is
            being deleted) or ran an older revision, and enough replicas are Ready without them.
        waiting: Replicas beyond ``spec.replicas`` that scaling down leaves in place
            for now, because which to remove depends on an input that cannot be read or
            a replica that does not say whether it is Ready (retirements wait alike).
        rollout: Where a rollout, a drain or a failover stands (None without a revision).
        pending: Replicas that fit once GPUs this deployment releases are free (not unplaced).
        serving: The existing replicas observed Ready, by name.
        preempted: Serving replicas retired now because they give way to a higher priority (a FleetQuota's
            ``status.preempted`` or a cluster's ``status.capacity.preempted`` lists them), within the
            rollout's maxSurge/maxUnavailable: a subset of ``retired``.
        note: Whether ``spec.placement.strategy`` applies, and what is used instead when it cannot
            (None for Spread, which always applies).
        spend: What the placements cost and emit per hour.
    """

    deployment: DeploymentKey
    desired: int
    placements: tuple[Placement, ...]
    unplaced: tuple[Unplaced, ...]
    removed: tuple[str, ...]
    unmanaged: tuple[str, ...]
    shortfall: int = 0
    retired: tuple[str, ...] = ()
    waiting: int = 0
    rollout: Rollout | None = None
    pending: tuple[Pending, ...] = ()
    serving: frozenset[str] = frozenset()
    moved: tuple[tuple[str, str, str], ...] = ()  # (replica, from, to): off a cluster it overcommitted
    preempted: tuple[str, ...] = ()
    note: StrategyNote | None = None
    spend: Spend = field(default_factory=Spend)

    @property
    def placed(self) -> int:
        """Wanted replicas placed or serving, at most ``desired``.

        A replica counts when it is placed to stay (current, surge, held or of an
        older revision) or, while it is leaving or lost, as long as it serves.
        """
        return min(
            self.desired,
            sum(1 for p in self.placements if p.state in _PLACED or p.replica in self.serving),
        )

    @property
    def leaving(self) -> tuple[str, ...]:
        """Replicas whose cluster drains or is being deleted, still composed, by ordinal."""
        return tuple(p.replica for p in self.placements if p.state is State.LEAVING)

    @property
    def lost(self) -> tuple[str, ...]:
        """Replicas kept on a lost cluster, by ordinal."""
        return tuple(p.replica for p in self.placements if p.state is State.LOST)

    @property
    def complete(self) -> bool:
        """Whether every wanted replica has a placement."""
        return not self.shortfall

    @property
    def reason(self) -> RejectReason | None:
        """The reason of the first unplaced replica, or None when all are placed."""
        return self.unplaced[0].reason if self.unplaced else None

    @property
    def held(self) -> tuple[Placement, ...]:
        """The placements kept with their observed spec, by ordinal."""
        return tuple(p for p in self.placements if p.held is not None)

    @property
    def message(self) -> str:
        """A one-line summary, e.g. ``placed 2 of 3: llama-2: InsufficientCapacity: ...``.

        Leaving and lost replicas are said apart: ``placed 3 of 3 (2 leaving: llm-0, llm-2)``.
        """
        head = f"placed {self.placed} of {self.desired}"
        moving = [
            f"{len(names)} {what}: {', '.join(names)}"
            for what, names in (("leaving", self.leaving), ("lost", self.lost))
            if names
        ]
        if moving:
            head += f" ({'; '.join(moving)})"
        if not self.unplaced:
            return head
        groups: dict[tuple[RejectReason, str], list[str]] = defaultdict(list)
        for u in self.unplaced:
            groups[u.reason, u.message].append(u.replica)
        more = self.shortfall - len(self.unplaced)
        parts = []
        for i, ((reason, message), names) in enumerate(groups.items()):
            listed = ", ".join(names) + (f" and {more} more" if more > 0 and i == len(groups) - 1 else "")
            parts.append(f"{listed}: {reason}: {message}")
        return f"{head}: {'; '.join(parts)}"


_PLACED = frozenset({State.CURRENT, State.UPDATING, State.SURGE, State.HELD, State.OUTDATED})


@dataclass(frozen=True)
class Rollout:
    """Where a rollout stands after this call.

    Attributes:
        revision: The revision replicas move to.
        updated: Replicas of that revision (Ready or not), in-place updates of this call included.
        outdated: Replicas of an older revision that stay for now, by ordinal.
        leaving: Replicas that stay for now although their cluster drains or is being deleted.
        lost: Replicas kept on a lost cluster while replacements run elsewhere.
        waiting: Replicas of the current revision that are not Ready yet (the rollout waits for them).
        retired_old: Replicas of an older revision retired now.
        retired_draining: Replicas retired now because their cluster drains.
        retired_pool_removed: Replicas retired now because their pool is being removed from their cluster.
        retired_preempted: Replicas retired now because they give way to a higher priority.
        pending: Replicas that wait for GPUs this deployment releases, each with whose (see ``Pending``).
        blocked: Why leaving replicas cannot move ("" when they can, or none is leaving).
        fallback: Why the rollout updates in place one at a time ("" when it surges as configured).
        paused: Whether ``spec.paused`` holds the rollout.
    """

    revision: str
    updated: int
    outdated: tuple[str, ...] = ()
    leaving: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    retired_old: tuple[str, ...] = ()
    retired_draining: tuple[str, ...] = ()
    retired_pool_removed: tuple[str, ...] = ()
    retired_preempted: tuple[str, ...] = ()
    fallback: str = ""
    paused: bool = False
    pending: tuple[Pending, ...] = ()
    blocked: str = ""

    @property
    def complete(self) -> bool:
        """Whether every replica runs the current revision where it should, none waiting."""
        return not (self.outdated or self.leaving or self.waiting or self.pending)
