"""A change stepped through the reconcile from the base's settled state: the waves its rollouts take.

The simulation applies HEAD to BASE's settled fleet (``simulate(start=...)``) and calls a
``Recorder`` after every pass. In the simulated, healthy world a rollout moves one wave per
change of its replicas; a wave is a pass in which some deployment's replicas change (one
surged, retired, updated in place or moved). Readiness between waves gives the minimum Ready,
and every pass's replicas the GPUs in use at the peak per cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Key
from modelplane.preview.states import XRState
from modelplane.preview.view import ReplicaView, replica_view

_REVISION_LABEL = "modelplane.ai/revision"


@dataclass(frozen=True)
class Seen:
    """One replica as one pass left it."""

    deployment: str  # namespace/name
    replica: str  # name
    cluster: str
    where: str  # "cluster [pools]"
    revision: str
    gpus: int
    ready: bool

    @property
    def identity(self) -> tuple[str, str, str]:
        """What a wave changes: the replica, where it runs and the revision it runs (not its readiness)."""
        return (self.replica, self.where, self.revision)


Snapshot = tuple[Seen, ...]


def where(r: ReplicaView) -> str:
    """A replica's cluster and pools, e.g. ``us-east-kai [h100]``."""
    pools = ", ".join(f"{x.role} {x.pool}" if len(r.roles) > 1 else x.pool for x in r.roles)
    return f"{r.cluster} [{pools}]"


class Recorder:
    """Called after every pass: keeps each distinct set of replicas the fleet went through."""

    def __init__(self, start: Mapping[Key, XRState]) -> None:
        """Start from the replicas of the base's settled fleet."""
        self._views: dict[int, tuple[XRState, ReplicaView]] = {}
        self.snapshots: list[Snapshot] = [self._snapshot(start)]

    def __call__(self, _pass: int, states: Mapping[Key, XRState]) -> None:
        """Record the replicas after a pass, when they changed."""
        now = self._snapshot(states)
        if now != self.snapshots[-1]:
            self.snapshots.append(now)

    def _view(self, state: XRState) -> ReplicaView:
        found = self._views.get(id(state))
        if found is None or found[0] is not state:
            found = (state, replica_view(state))
            self._views[id(state)] = found  # holding the state keeps its id from being reused
        return found[1]

    def _snapshot(self, states: Mapping[Key, XRState]) -> Snapshot:
        out = []
        for key, state in sorted(states.items()):
            if key[0] != "ModelReplica":
                continue
            view = self._view(state)
            meta = state.xr.get("metadata") or {}
            deployment = str(((state.xr.get("spec") or {}).get("deploymentRef") or {}).get("name", ""))
            out.append(
                Seen(
                    deployment=f"{key[1]}/{deployment}",
                    replica=key[2],
                    cluster=view.cluster,
                    where=where(view),
                    revision=str((meta.get("labels") or {}).get(_REVISION_LABEL, "")),
                    gpus=view.gpus,
                    ready=view.ready,
                )
            )
        return tuple(out)


@dataclass(frozen=True)
class WaveStep:
    """What one wave does to one deployment."""

    wave: int
    deployment: str
    surged: tuple[str, ...]  # "replica on cluster [pools]"
    retired: tuple[str, ...]
    updated: tuple[str, ...]  # in place (the same replica, a new revision or pools)
    ready: int  # the fewest Ready replicas while the wave lasted
    desired: int


@dataclass(frozen=True)
class Move:
    """A replica that leaves a cluster and the one that replaces it elsewhere."""

    deployment: str
    replica: str
    before: str
    after: str
    replacement: str


@dataclass(frozen=True)
class Stay:
    """A replica that should move (its cluster drains) but stays, and why."""

    replica: str  # namespace/name
    where: str
    why: str


@dataclass(frozen=True)
class PeakGpus:
    """GPUs in use on one cluster before the rollout, at its peak (and the first wave there) and after."""

    cluster: str
    before: int
    peak: int
    wave: int  # 0: the peak is the start
    after: int


@dataclass(frozen=True)
class Transition:
    """How HEAD is reached from BASE's settled state."""

    steps: tuple[WaveStep, ...]
    minimum_ready: tuple[tuple[str, int, int], ...]  # deployment, fewest Ready, desired (rolled-out ones)
    gpus: tuple[PeakGpus, ...]
    moves: tuple[Move, ...]
    stays: tuple[Stay, ...]

    @property
    def waves(self) -> int:
        """How many waves the change takes."""
        return max((s.wave for s in self.steps), default=0)


def _by_deployment(snapshot: Snapshot) -> dict[str, dict[str, Seen]]:
    out: dict[str, dict[str, Seen]] = {}
    for s in snapshot:
        out.setdefault(s.deployment, {})[s.replica] = s
    return out


def _ready(snapshot: Snapshot, deployment: str) -> int:
    return sum(1 for s in snapshot if s.deployment == deployment and s.ready)


def _desired(fleet: Fleet) -> dict[str, int]:
    out = {}
    for key, state in fleet.states.items():
        if key[0] == "ModelDeployment":
            replicas = (state.xr.get("spec") or {}).get("replicas", 1)
            out[f"{key[1]}/{key[2]}"] = replicas if isinstance(replicas, int) else 1
    return out


def _on(s: Seen) -> str:
    return f"{s.replica} on {s.where}"


def _steps(snapshots: Sequence[Snapshot], desired: Mapping[str, int]) -> tuple[WaveStep, ...]:
    out = []
    wave = 0
    for i in range(1, len(snapshots)):
        before, after = _by_deployment(snapshots[i - 1]), _by_deployment(snapshots[i])
        changed = []
        for deployment in sorted(before.keys() | after.keys()):
            b, a = before.get(deployment, {}), after.get(deployment, {})
            if {s.identity for s in b.values()} != {s.identity for s in a.values()}:
                changed.append((deployment, b, a))
        if not changed:
            continue  # only readiness changed: the wave in progress
        wave += 1
        # The wave lasts until the next change of replicas: its minimum Ready is over all that time.
        end = next(
            (j for j in range(i + 1, len(snapshots)) if _identities(snapshots[j]) != _identities(snapshots[i])),
            len(snapshots),
        )
        for deployment, b, a in changed:
            out.append(
                WaveStep(
                    wave=wave,
                    deployment=deployment,
                    surged=tuple(_on(a[n]) for n in sorted(a.keys() - b.keys())),
                    retired=tuple(_on(b[n]) for n in sorted(b.keys() - a.keys())),
                    updated=tuple(_on(a[n]) for n in sorted(a.keys() & b.keys()) if a[n].identity != b[n].identity),
                    ready=min(_ready(snapshots[j], deployment) for j in range(i - 1, end)),
                    desired=desired.get(deployment, len(a)),
                )
            )
    return tuple(out)


def _identities(snapshot: Snapshot) -> frozenset[tuple[str, str, str, str]]:
    return frozenset((s.deployment, *s.identity) for s in snapshot)


def _minimum_ready(
    snapshots: Sequence[Snapshot], steps: Sequence[WaveStep], desired: Mapping[str, int]
) -> tuple[tuple[str, int, int], ...]:
    rolled = sorted({s.deployment for s in steps})
    return tuple((d, min(_ready(s, d) for s in snapshots), desired.get(d, 0)) for d in rolled)


def _gpus(snapshots: Sequence[Snapshot]) -> tuple[PeakGpus, ...]:
    clusters = sorted({s.cluster for snap in snapshots for s in snap})
    waves = _wave_of(snapshots)
    out = []
    for cluster in clusters:
        used = [sum(s.gpus for s in snap if s.cluster == cluster) for snap in snapshots]
        if len(set(used)) == 1:
            continue  # the rollout never touches it
        peak = max(used)
        out.append(PeakGpus(cluster, used[0], peak, waves[used.index(peak)], used[-1]))
    return tuple(out)


def _wave_of(snapshots: Sequence[Snapshot]) -> list[int]:
    """The wave each snapshot belongs to (0: before the first)."""
    out, wave = [0], 0
    for i in range(1, len(snapshots)):
        wave += _identities(snapshots[i]) != _identities(snapshots[i - 1])
        out.append(wave)
    return out


def _leaving(fleet: Fleet) -> set[str]:
    """The clusters replicas leave: those that drain, and those no longer in the fleet (see ``_moves``)."""
    clusters = {k[2]: s for k, s in fleet.states.items() if k[0] == "InferenceCluster"}
    return {n for n, s in clusters.items() if (s.xr.get("spec") or {}).get("drain") is True}


def _moves(first: Snapshot, last: Snapshot, leaving: set[str]) -> tuple[Move, ...]:
    """Replicas gone from a cluster they leave, each paired with a replica of its deployment new elsewhere.

    A cluster they leave drains, or is no longer in the fleet; a rollout's replacements elsewhere are no moves.
    """
    start, end = _by_deployment(first), _by_deployment(last)
    present = {s.cluster for s in last}
    out = []
    for deployment in sorted(start.keys() & end.keys()):
        b, a = start[deployment], end[deployment]
        gone = [b[n] for n in sorted(b) if n not in a or a[n].cluster != b[n].cluster]
        new = [a[n] for n in sorted(a) if n not in b or b[n].cluster != a[n].cluster]
        for old in gone:
            if old.cluster not in leaving and old.cluster in present:
                continue
            elsewhere = next((s for s in new if s.cluster != old.cluster), None)
            if elsewhere is None:
                continue
            new.remove(elsewhere)
            out.append(Move(deployment, old.replica, old.where, elsewhere.where, elsewhere.replica))
    return tuple(out)


def _cannot_move(message: str, replica: str) -> str:
    """The reason ``replica cannot move: ...`` in a rollout message, up to the next top-level ``; ``."""
    start = message.find(f"{replica} cannot move: ")
    if start < 0:
        return ""
    text = message[start + len(replica) + len(" cannot move: ") :]
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and text.startswith("; ", i):
            return text[:i]
    return text


def _stays(fleet: Fleet, last: Snapshot) -> tuple[Stay, ...]:
    """Replicas the settled fleet keeps on a cluster they should leave, with their deployment's reason."""
    where_of = {(s.deployment, s.replica): s.where for s in last}
    out = []
    for key, state in sorted(fleet.states.items()):
        if key[0] != "ModelDeployment":
            continue
        status = state.xr.get("status") or {}
        conditions = status.get("conditions", [])
        progressing: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "Progressing"), {})
        for p in status.get("placements") or []:
            if p.get("state") not in ("Leaving", "Lost"):
                continue
            name = str(p.get("replica", ""))
            deployment = f"{key[1]}/{key[2]}"
            why = _cannot_move(str(progressing.get("message", "")), name) or str(p.get("reason", "") or "held")
            out.append(Stay(f"{key[1]}/{name}", where_of.get((deployment, name), str(p.get("cluster", ""))), why))
    return tuple(out)


def transition(snapshots: Sequence[Snapshot], settled: Fleet) -> Transition:
    """The waves, minimum Ready, peak GPUs, moves and stays of the recorded ``snapshots`` (ending in ``settled``)."""
    desired = _desired(settled)
    steps = _steps(snapshots, desired)
    return Transition(
        steps=steps,
        minimum_ready=_minimum_ready(snapshots, steps, desired),
        gpus=_gpus(snapshots),
        moves=_moves(snapshots[0], snapshots[-1], _leaving(settled)),
        stays=_stays(settled, snapshots[-1]),
    )
