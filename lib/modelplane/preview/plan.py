"""The preview of a change: what applying HEAD does relative to BASE.

Both sides are simulated the same way; the plan compares what they compose:
replicas added, moved, reshaped or removed; GPUs in use and free per cluster;
the objects applied to each target (the control plane and every workload
cluster), added, changed or removed; and every service's route, backend by
backend, with its share of the traffic before and after.
"""

from __future__ import annotations

import difflib
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from rich.console import Console
from rich.text import Text

from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Manifest
from modelplane.preview.tables import console, plain_ends, table
from modelplane.preview.targets import group_by_target
from modelplane.preview.transition import Transition, where
from modelplane.preview.view import FleetView

# Metadata the API server or the simulation sets: not part of what a change applies.
_VOLATILE_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink")


@dataclass(frozen=True)
class ReplicaChange:
    """One replica that a change adds, moves, reshapes or removes."""

    change: str  # added, moved, replaced, reshaped, removed
    replica: str  # namespace/name ("namespace/old → new" when a replica of the deployment replaces it)
    before: str  # "cluster [pools]", "" when added
    after: str  # "" when removed


@dataclass(frozen=True)
class ClusterGpus:
    """GPUs in use and free on one cluster, before and after (None: the cluster is not on that side)."""

    cluster: str
    in_use: tuple[int | None, int | None]
    free: tuple[int | None, int | None]


@dataclass(frozen=True)
class TargetChanges:
    """The objects applied to one target that a change adds, changes or removes."""

    target: str
    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass(frozen=True)
class RouteChange:
    """One service whose route changes: each backend's share of the traffic before and after (percent)."""

    service: str
    before: tuple[tuple[str, float], ...]
    after: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Plan:
    """What applying HEAD changes relative to BASE."""

    base: str
    head: str
    replicas: tuple[ReplicaChange, ...]
    gpus: tuple[ClusterGpus, ...]
    objects: tuple[TargetChanges, ...]
    routes: tuple[RouteChange, ...]
    # How HEAD is reached from BASE's settled state (None: the two sides were simulated apart).
    transition: Transition | None = None

    @property
    def empty(self) -> bool:
        """Whether the change changes nothing."""
        return not (
            self.replicas
            or self.objects
            or self.routes
            or any(g.in_use[0] != g.in_use[1] for g in self.gpus)
            or (self.transition is not None and (self.transition.steps or self.transition.stays))
        )


def _replicas(view: FleetView) -> dict[str, tuple[str, tuple[Any, ...], str]]:
    out = {}
    for d in view.deployments:
        namespace = d.name.split("/")[0]
        for r in d.replicas:
            shape = tuple((x.role, x.gpus_per_node, x.nodes) for x in r.roles)
            out[f"{namespace}/{r.name}"] = (where(r), shape, d.name)
    return out


def _replica_changes(base: FleetView, head: FleetView) -> tuple[ReplicaChange, ...]:
    before, after = _replicas(base), _replicas(head)
    out = []
    for name in sorted(before.keys() & after.keys()):
        b, a = before[name], after[name]
        if a[0] != b[0]:
            out.append(ReplicaChange("moved", name, b[0], a[0]))
        elif a[1] != b[1]:
            out.append(ReplicaChange("reshaped", name, b[0], a[0]))
    # A replica gone and one new in the same deployment: the new one replaces it (a rollout, a drain).
    added = sorted(after.keys() - before.keys())
    for name in sorted(before.keys() - after.keys()):
        b = before[name]
        new = next((n for n in added if after[n][2] == b[2]), None)
        if new is None:
            out.append(ReplicaChange("removed", name, b[0], ""))
            continue
        added.remove(new)
        a = after[new]
        moved = a[0].split(" [")[0] != b[0].split(" [")[0]
        out.append(ReplicaChange("moved" if moved else "replaced", f"{name} → {new.split('/')[-1]}", b[0], a[0]))
    out += [ReplicaChange("added", n, "", after[n][0]) for n in added]
    return tuple(sorted(out, key=lambda c: c.replica))


def _gpus(base: FleetView, head: FleetView) -> tuple[ClusterGpus, ...]:
    def totals(view: FleetView) -> dict[str, tuple[int, int]]:
        return {c.name: (sum(p.in_use for p in c.pools), sum(p.free for p in c.pools)) for c in view.clusters}

    before, after = totals(base), totals(head)
    rows = []
    for name in sorted(before.keys() | after.keys()):
        b, a = before.get(name), after.get(name)
        rows.append(
            ClusterGpus(
                name,
                (b[0] if b else None, a[0] if a else None),
                (b[1] if b else None, a[1] if a else None),
            )
        )
    return tuple(rows)


def _comparable(obj: Manifest) -> str:
    """An object as a change applies it, as one string to compare."""
    return json.dumps(_applied(obj), sort_keys=True, default=str)


def _applied(obj: Manifest) -> dict[str, Any]:
    """An object as a change applies it: no status, no server-set metadata, no owner UIDs."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_METADATA}
    if "ownerReferences" in meta:
        meta["ownerReferences"] = [{k: v for k, v in r.items() if k != "uid"} for r in meta["ownerReferences"]]
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and "crossplane" in spec:
        spec = {k: v for k, v in spec.items() if k != "crossplane"}  # references Crossplane fills in
    body = {k: v for k, v in obj.items() if k not in ("status", "metadata", "spec")}
    return {**body, "metadata": meta, **({"spec": spec} if spec is not None else {})}


def _name(obj: Manifest) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind', '')} {'/'.join(filter(None, (meta.get('namespace'), meta.get('name'))))}"


def _by_target(fleet: Fleet) -> dict[str, dict[str, str]]:
    return {t.name: {_name(o): _comparable(o) for o in t.objects} for t in group_by_target(fleet)}


def _object_changes(base: Fleet, head: Fleet) -> tuple[TargetChanges, ...]:
    before, after = _by_target(base), _by_target(head)
    out = []
    for target in sorted(before.keys() | after.keys(), key=lambda t: (t != "control plane", t)):
        b, a = before.get(target, {}), after.get(target, {})
        added = tuple(sorted(a.keys() - b.keys()))
        removed = tuple(sorted(b.keys() - a.keys()))
        changed = tuple(sorted(k for k in a.keys() & b.keys() if a[k] != b[k]))
        if added or removed or changed:
            out.append(TargetChanges(target, added, changed, removed))
    return tuple(out)


def unified_diff(base: Fleet, head: Fleet) -> str:
    """Every object added, changed or removed, as ``diff -u`` of its YAML, grouped by the target it is applied to.

    Each group starts with a ``# target: NAME`` line; each object's headers name the target and the object.
    """

    def applied(fleet: Fleet) -> dict[str, dict[str, str]]:
        return {
            t.name: {_name(o): yaml.safe_dump(_applied(o), sort_keys=True, default_flow_style=False) for o in t.objects}
            for t in group_by_target(fleet)
        }

    before, after = applied(base), applied(head)
    out = []
    for target in sorted(before.keys() | after.keys(), key=lambda t: (t != "control plane", t)):
        b, a = before.get(target, {}), after.get(target, {})
        hunks = []
        for name in sorted(b.keys() | a.keys()):
            old, new = b.get(name, ""), a.get(name, "")
            if old == new:
                continue
            lines = difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"{target}: {name} (base)",
                tofile=f"{target}: {name} (head)",
            )
            hunks.append("".join(lines))
        if hunks:
            out.append(f"# target: {target}\n" + "".join(hunks))
    return "\n".join(out)


def _routes(base: FleetView, head: FleetView) -> tuple[RouteChange, ...]:
    def shares(view: FleetView) -> dict[str, tuple[tuple[str, float], ...]]:
        return {s.name: tuple((b.name, b.share) for b in s.backends) for s in view.services}

    before, after = shares(base), shares(head)
    return tuple(
        RouteChange(name, before.get(name, ()), after.get(name, ()))
        for name in sorted(before.keys() | after.keys())
        if before.get(name) != after.get(name)
    )


def plan(base: tuple[Fleet, FleetView], head: tuple[Fleet, FleetView], transition: Transition | None = None) -> Plan:
    """What applying ``head`` changes relative to ``base`` (each a settled fleet and its view), and how."""
    return Plan(
        transition=transition,
        base=base[1].source,
        head=head[1].source,
        replicas=_replica_changes(base[1], head[1]),
        gpus=_gpus(base[1], head[1]),
        objects=_object_changes(base[0], head[0]),
        routes=_routes(base[1], head[1]),
    )


def _arrow(pair: tuple[int | None, int | None]) -> str:
    b, a = ("-" if x is None else str(x) for x in pair)
    return b if pair[0] == pair[1] else f"{b} → {a}"


def _shares(backends: Iterable[tuple[str, float]]) -> str:
    return "\n".join(f"{name} {share:.1f}%" for name, share in backends) or "(none)"


def _print_transition(c: Console, t: Transition) -> None:
    """The waves from the base's settled state, the fewest Ready, the GPUs at the peak, moves and stays."""
    if t.steps:
        plural = "s" if t.waves != 1 else ""
        c.print(Text(f"Rollout from the base's settled state: {t.waves} wave{plural}", style="bold"))
        c.print()
        waves = table("wave", "deployment", "surge", "retire", "Ready (min)", title="Waves", wrap="surge")
        for s in t.steps:
            surge = [*s.surged, *(f"{u} (in place)" for u in s.updated)]
            retire = "\n".join(s.retired) or "-"
            waves.add_row(str(s.wave), s.deployment, "\n".join(surge) or "-", retire, f"{s.ready}/{s.desired}")
        c.print(waves)
        ready = table("deployment", "minimum Ready", "desired", title="Minimum Ready during the rollout")
        for deployment, fewest, desired in t.minimum_ready:
            ready.add_row(deployment, str(fewest), str(desired))
        c.print(ready)
        peak = table("cluster", "before", "peak", "at wave", "after", title="GPUs in use at the peak")
        for g in t.gpus:
            peak.add_row(g.cluster, str(g.before), str(g.peak), str(g.wave) if g.wave else "-", str(g.after))
        if not t.gpus:
            peak.add_row("no change", "", "", "", "")
        c.print(peak)
    if t.moves:
        moves = table("replica", "from", "to", "replaced by", title="Moves")
        for m in t.moves:
            moves.add_row(f"{m.deployment.split('/')[0]}/{m.replica}", m.before, m.after, m.replacement)
        c.print(moves)
    if t.stays:
        stays = table("replica", "stays on", "why", title="Replicas that stay", wrap="why")
        for st in t.stays:
            stays.add_row(st.replica, st.where, st.why)
        c.print(stays)


def render_plan(p: Plan, *, width: int = 120, color: bool = False) -> str:
    """The plan as tables: replicas, GPUs per cluster, objects per target, routes."""
    out = io.StringIO()
    c = console(out, width=width, color=color)
    c.print(Text(f"Plan: {p.head} against {p.base}", style="bold"))
    if p.empty:
        c.print("no changes")
        return plain_ends(out.getvalue())
    c.print()
    if p.transition is not None:
        _print_transition(c, p.transition)
    replicas = table("change", "replica", "before", "after", title="Replicas" if p.transition is None else "End state")
    for r in p.replicas:
        replicas.add_row(r.change, r.replica, r.before or "-", r.after or "-")
    if not p.replicas:
        replicas.add_row("none", "", "", "")
    c.print(replicas)
    gpus = table("cluster", "GPUs in use", "GPUs free", title="GPUs per cluster (before → after)")
    for g in p.gpus:
        gpus.add_row(g.cluster, _arrow(g.in_use), _arrow(g.free))
    c.print(gpus)
    objects = table("target", "added", "changed", "removed", title="Objects applied, per target")
    for t in p.objects:
        objects.add_row(t.target, str(len(t.added)), str(len(t.changed)), str(len(t.removed)))
    c.print(objects)
    for t in p.objects:
        c.print(f"  {t.target}:")
        for sign, names in (("+", t.added), ("~", t.changed), ("-", t.removed)):
            for name in names:
                c.print(f"    {sign} {name}")
    c.print()
    routes = table("service", "before (share)", "after (share)", title="Routes")
    for route in p.routes:
        routes.add_row(route.service, _shares(route.before), _shares(route.after))
    if not p.routes:
        routes.add_row("no route changes", "", "")
    c.print(routes)
    return plain_ends(out.getvalue())
