"""``modelplane preview --explain NAMESPACE/NAME``: why a ModelDeployment's replicas go where they go.

The explanation runs with the scheduler's own predicates (``modelplane.scheduling.explain``)
on the fleet as the deployment saw it when its replicas were last decided (``Fleet.decided``),
as long as that explains its status: the same replicas on the same clusters, and replicas left
unplaced for the reason its ``Scheduled`` condition gives. A deployment that could not place a
replica tries again on every reconcile, so its reason may have changed since (a cluster that was
not Ready then is now, and a pool is too small instead): then the explanation runs on the settled
fleet, which its last reconcile read. Every message is printed once, in full, and referred to by
number from the tables: nothing is hidden behind "and N more".

With ``spec.modelCacheRef`` the ModelCache is taken from the same fleet, read as
compose-model-deployment reads it (``copy_of``, its Ready copies by ``ready_clusters``), so the
cache rank is the scheduler's; the tables gain a ``cache`` column.

The FleetQuotas and FleetPriorityClasses are taken from the same fleet and read as
compose-model-deployment reads them (``quotas_for``): the quotas whose published namespaces (or,
before they publish, whose selector) take the deployment's namespace, and the value of its
``spec.priority``. So a deployment a quota holds back is explained as ``QuotaExceeded`` with the
quota's figures, as its ``Scheduled`` condition says, not as fitting where capacity alone allows.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import TypeVar

import pydantic
from rich.text import Text

from modelplane.capacity import replica_occupancy
from modelplane.modelcache.phase import Phase
from modelplane.modelcache.use import CacheCopy, copy_of
from modelplane.preview.document import dump, plain, versioned
from modelplane.preview.fitted import FittedTable
from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Key, Manifest
from modelplane.preview.tables import console, plain_ends, table
from modelplane.preview.view import condition
from modelplane.pricing import amount
from modelplane.problems import describe, invalid
from modelplane.scheduling import InvalidDeploymentError
from modelplane.scheduling.explain import (
    NO_COPY,
    CacheRank,
    ClusterCheck,
    Explanation,
    PoolCheck,
    Step,
    explain,
)
from modelplane.scheduling.priority import answer_to
from modelplane.scheduling.quotas import Quota, Quotas, quota_of
from modelplane.scheduling.rejection import RejectReason
from modelplane.scheduling.view import build_view, cluster_facts
from modelplane_models.fleet_priority_class import FleetPriorityClass
from modelplane_models.fleet_quota import FleetQuota
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica

M = TypeVar("M", InferenceCluster, InferenceClass, ModelReplica, FleetQuota, FleetPriorityClass)


class ExplainError(LookupError):
    """The deployment to explain is not in the fleet, or cannot be scheduled at all."""


def _parse(manifests: Iterable[Manifest], kind: str, model: type[M]) -> list[M]:
    out = []
    for m in manifests:
        if m.get("kind") == kind:
            try:
                out.append(model.model_validate(m))
            except pydantic.ValidationError:
                continue
    return out


def explain_deployment(fleet: Fleet, name: str) -> Explanation:
    """Explain the ModelDeployment ``name`` (``namespace/name``) of a settled fleet.

    Raises:
        ExplainError: no such ModelDeployment, or it has no valid serving shape.
    """
    namespace, _, short = name.rpartition("/")
    key: Key = ("ModelDeployment", namespace, short)
    state = fleet.states.get(key)
    if state is None:
        known = ", ".join("/".join(k[1:]) for k in fleet.states if k[0] == "ModelDeployment") or "none"
        msg = f"no ModelDeployment {name} among the manifests (there are: {known})"
        raise ExplainError(msg)
    try:
        deployment = ModelDeployment.model_validate(state.xr)
        decided = fleet.decided.get(key)
        if decided is not None:
            explanation = _explain_on(deployment, decided)
            if _explains(explanation, state.xr):
                return explanation
        return _explain_on(deployment, tuple(s.xr for k, s in fleet.states.items() if k != key))
    except pydantic.ValidationError as err:
        msg = f"ModelDeployment {name} cannot be scheduled: {describe(invalid(err))}"
        raise ExplainError(msg) from err
    except InvalidDeploymentError as err:
        msg = f"ModelDeployment {name} cannot be scheduled: {err}"
        raise ExplainError(msg) from err


def _explain_on(deployment: ModelDeployment, seen: Sequence[Manifest]) -> Explanation:
    """Explain ``deployment`` on the fleet ``seen``: the clusters' published capacity, its own replicas, its cache."""
    clusters = (f for f in map(cluster_facts, _parse(seen, "InferenceCluster", InferenceCluster)) if f)
    view = build_view(clusters, _parse(seen, "InferenceClass", InferenceClass))
    own = (h for h in map(replica_occupancy, _parse(seen, "ModelReplica", ModelReplica)) if h is not None)
    return explain(deployment, view, own=own, cache=_cache(deployment, seen), quotas=quotas_for(deployment, seen))


def quotas_for(deployment: ModelDeployment, seen: Sequence[Manifest]) -> Quotas:
    """The FleetQuotas of the deployment's namespace and its priority's value, as compose-model-deployment reads them.

    A ``spec.priority`` that cannot be used (no such class, or a quota does not allow it) places
    nothing in the scheduler (its ``Scheduled`` says why); here it counts as no priority, so the
    quotas still explain what they would allow.
    """
    namespace = (deployment.metadata.namespace if deployment.metadata is not None else None) or ""
    found = (quota_of(q) for q in _parse(seen, "FleetQuota", FleetQuota))
    classes = {
        c.metadata.name: c.spec.value
        for c in _parse(seen, "FleetPriorityClass", FleetPriorityClass)
        if c.metadata is not None and c.metadata.name and c.spec is not None
    }
    name = (deployment.spec.priority or "") if deployment.spec is not None else ""
    return answer_to((q for q in found if isinstance(q, Quota)), classes, namespace, name)[0]


def _cache(deployment: ModelDeployment, seen: Sequence[Manifest]) -> CacheCopy | None:
    """The ModelCache ``spec.modelCacheRef`` names, in the deployment's namespace, as read (None: not found)."""
    ref = deployment.spec.modelCacheRef if deployment.spec is not None else None
    if ref is None:
        return None
    namespace = deployment.metadata.namespace if deployment.metadata is not None else None
    for m in seen:
        meta = m.get("metadata") or {}
        if m.get("kind") == "ModelCache" and meta.get("name") == ref.name and meta.get("namespace") == namespace:
            return copy_of(m)
    return None


def _explains(exp: Explanation, xr: Manifest) -> bool:
    """Whether ``exp`` tells the deployment's status: where its replicas are, and why the rest are not."""
    placed = {str(p.get("replica", "")): str(p.get("cluster", "")) for p in xr.get("status", {}).get("placements", [])}
    if {s.replica: s.chosen for s in exp.steps if s.chosen} != placed:
        return False
    unplaced = [s for s in exp.steps if not s.chosen]
    return not unplaced or unplaced[0].reason == condition(xr, "Scheduled").reason


class _Notes:
    """Messages numbered once each, so a table refers to a message instead of repeating it."""

    def __init__(self) -> None:
        self.messages: dict[str, int] = {}

    def ref(self, message: str) -> str:
        if not message:
            return ""
        number = self.messages.setdefault(message, len(self.messages) + 1)
        return f" [{number}]"


def _cordoned(check: ClusterCheck) -> str:
    """Whether the cluster takes no new replicas by the platform team's act, and which."""
    if check.deleting:
        return "deleting"
    if check.draining:
        return "draining"
    return _yes(check.cordoned)


def _yes(ok: bool) -> str:  # noqa: FBT001 - a cell from a boolean
    return "yes" if ok else "no"


def _check(pool: PoolCheck, name: str, order: Sequence[str]) -> str:
    """A pool check's cell: ok, failed, or not reached (a failure before it stops the judging)."""
    if not pool.failed:
        return "ok"
    if pool.failed == name:
        return "FAIL"
    reached = order.index(pool.failed) > order.index(name) if pool.failed in order else True
    return "ok" if reached else "-"


_ORDER = ("class", "cel", "topology", "nodes", "capacity")


def _cluster_rows(exp: Explanation, notes: _Notes) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for c in exp.clusters:
        ready = _yes(c.ready) if c.ready else f"no ({c.not_ready})"
        # The copy's phase (its message referred to), only for a deployment with spec.modelCacheRef.
        cache = (c.cache + notes.ref(_copy_message(exp, c)),) if exp.cache is not None else ()
        verdict = "eligible" if c.verdict == "eligible" else c.verdict + notes.ref(c.message)
        rows.append((c.cluster, "match" if c.selected else "no match", _cordoned(c), ready, *cache, verdict))
    return rows


def _copy_message(exp: Explanation, c: ClusterCheck) -> str:
    """The cache's status message for its copy on ``c``, naming the cache and the cluster ("" when it says none)."""
    if exp.cache is None or not c.cache_message or c.cache == Phase.READY:
        return ""  # a Ready copy's message ("completed") explains nothing
    return f"ModelCache {exp.cache.name} on {c.cluster}: {c.cache_message}"


def _pool_rows(c: ClusterCheck, notes: _Notes, *, roles: bool) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for i, p in enumerate(c.pools):
        free = "-" if p.free_before is None else f"{p.free_before} → {'-' if p.free_after is None else p.free_after}"
        verdict = "fits" if not p.failed else p.reason + notes.ref(p.message)
        klass = p.class_name + (" FAIL" if p.failed == "class" else "")
        row = [c.cluster if i == 0 else "", p.pool, klass]
        row += [_check(p, name, _ORDER) for name in ("cel", "topology", "nodes")]
        row += [free, "-" if p.nodes_fit is None else str(p.nodes_fit), verdict]
        rows.append(tuple(row[:1] + ([p.role] if roles else []) + row[1:]))
    return rows


def _step_rows(step: Step, *, cost: str, copies: dict[str, str] | None) -> list[tuple[str, ...]]:
    """A replica's candidates; with ``cost`` ("money" or "carbon") the figure that decides first.

    With ``copies`` (each cluster's copy of the deployment's ModelCache) the copy's phase, which
    ranks next: Ready first.
    """
    if not step.candidates:
        dashes = ("-",) * (5 + bool(cost) + (copies is not None))
        # A quota's refusal depends on the replicas placed before this one: its figures are below the table.
        said = "a quota has no room: below" if step.reason == str(RejectReason.QUOTA_EXCEEDED) else None
        return [(step.replica, *dashes, "unplaced", f"{step.reason} ({said or 'no cluster above is eligible'})")]
    rows: list[tuple[str, ...]] = []
    for i, c in enumerate(step.candidates):
        chosen = c.cluster == step.chosen and i == 0
        figure = ("-" if c.cost is None else amount(c.cost, places=2 if cost == "money" else 0),) if cost else ()
        cache = (copies.get(c.cluster, NO_COPY),) if copies is not None else ()
        rows.append(
            (
                step.replica if i == 0 else "",
                c.cluster,
                ", ".join(c.pools),
                *figure,
                *cache,
                str(c.spread),
                str(c.stranded),
                str(c.left),
                "chosen" if chosen else "",
                step.decided_by if chosen else "",
            )
        )
    return rows


def _scoring(exp: Explanation) -> FittedTable:
    """The scoring of each replica; with CostOptimized or CarbonAware the replica's figure per hour decides first.

    With ``spec.modelCacheRef`` a ``cache`` column: a Ready copy ranks next (``Placer.candidates``).
    """
    columns = ["replica", "candidate", "pools", "spread", "stranded", "left", "decision", "decided by"]
    first = [f"cost {exp.unit}"] if exp.unit else []
    first += ["cache"] if exp.cache is not None else []
    columns[3:3] = first
    ranks = ([exp.unit] if exp.unit else []) + (["cache Ready"] if exp.cache is not None else [])
    if ranks:
        title = f"Scoring (lowest wins: {', then '.join(ranks)}, then spread, then best fit, then GPUs left, then name)"
    else:
        title = (
            "Scoring (lowest wins: spread, then best fit = GPUs stranded on the nodes taken, then GPUs left, then name)"
        )
    scoring = table(*columns, title=title)
    cost = ("carbon" if exp.unit.startswith("gCO2") else "money") if exp.unit else ""
    copies = {c.cluster: c.cache for c in exp.clusters} if exp.cache is not None else None
    for step in exp.steps:
        for row in _step_rows(step, cost=cost, copies=copies):
            scoring.add_row(*row)
    return scoring


def render_explanation(
    exp: Explanation, placements: Sequence[tuple[str, str]], *, width: int = 120, color: bool = False
) -> str:
    """The explanation as tables: clusters, pools, then the scoring of each replica, then the messages."""
    notes = _Notes()
    out = io.StringIO()
    c = console(out, width=width, color=color)
    c.print(Text(f"Explain ModelDeployment {exp.deployment}", style="bold"))
    c.print(f"clusterSelector: {exp.selector}")
    for role in exp.roles:
        c.print(f"replica {role}")
    if exp.strategy:
        c.print(f"spec.placement.strategy: {exp.strategy}")
    if exp.cache is not None:
        c.print(f"spec.modelCacheRef: {_cache_line(exp.cache)}")
    for line in exp.quotas:
        c.print(line)
    now = ", ".join(f"{r} → {cl}" for r, cl in placements) or "none"
    c.print(f"placed now: {now}")
    c.print("decided on the fleet as the deployment saw it when it last placed replicas; every other deployment's")
    c.print("replicas hold their GPUs, this deployment's are placed afresh in ordinal order")
    c.print()

    cache = ("cache",) if exp.cache is not None else ()
    clusters = table("cluster", "clusterSelector", "cordoned", "ready", *cache, "verdict", title="Clusters")
    for row in _cluster_rows(exp, notes):
        clusters.add_row(*row)
    c.print(clusters)

    roles = len(exp.roles) > 1
    columns = ["cluster", *(["role"] if roles else []), "pool", "class", "CEL", "topology", "nodes"]
    title = "Pools (checked in order; - not reached; room: nodes a worker fits on)"
    pools = table(*columns, "free → after", "room", "verdict", title=title)
    for check in exp.clusters:
        for row in _pool_rows(check, notes, roles=roles):
            pools.add_row(*row)
    c.print(pools)

    c.print(_scoring(exp))
    for line in _step_lines(exp):
        c.print(line)
    if notes.messages:
        c.print()
        c.print(Text("Messages", style="bold"))
        for message, number in notes.messages.items():
            c.print(f"  [{number}] {message}")
    return plain_ends(out.getvalue())


def _step_lines(exp: Explanation) -> list[str]:
    """Below the scoring: why each replica went where it went, what it does with the cache there, the GPUs."""
    lines = [f"  {s.replica} → {s.chosen}: {s.why}" for s in exp.steps if s.chosen]
    quota = str(RejectReason.QUOTA_EXCEEDED)
    lines += [f"  {s.replica} unplaced: {s.reason}: {s.message}" for s in exp.steps if s.reason == quota]
    lines += [f"  {s.replica}: {s.preempts}" for s in exp.steps if s.preempts]
    for s in exp.steps:
        if s.waits:
            lines.append(f"  {s.replica}: CacheNotReady (policy Required): {s.waits}")
        elif s.unmounted:
            lines.append(f"  {s.replica}: starts without the cache: {s.unmounted}")
    for s in exp.steps:
        for (cluster, pool, before), (_, _, after) in zip(s.before, s.after, strict=True):
            lines.append(f"  {s.replica}: {cluster}/{pool} free GPUs {before} → {after}")
    return lines


def _cache_line(rank: CacheRank) -> str:
    """The cache ranked by: its name, policy and where its copy is Ready."""
    if not rank.found:
        where = f"ModelCache {rank.name} not found, so no cluster ranks first"
    else:
        where = f"Ready on {', '.join(rank.ready)}" if rank.ready else "Ready on no cluster yet"
    return f"{rank.name} (policy {rank.policy}): {where}; a Ready copy ranks first"


def why_unplaced(exp: Explanation) -> list[str]:
    """One line per distinct reason the selected clusters give, naming every cluster that gives it."""
    groups: dict[str, list[str]] = {}
    for c in exp.clusters:
        if c.selected and c.verdict != "eligible":
            groups.setdefault(f"{c.verdict}: {c.message}" if c.message else c.verdict, []).append(c.cluster)
    if not groups:
        return ["no cluster matches clusterSelector (" + exp.selector + ")"]
    return [f"{', '.join(clusters)}: {reason}" for reason, clusters in groups.items()]


def placements(fleet: Fleet, name: str) -> list[tuple[str, str]]:
    """Where the replicas of the ModelDeployment ``name`` (``namespace/name``) are now: (replica, cluster)."""
    namespace, _, short = name.rpartition("/")
    state = fleet.states.get(("ModelDeployment", namespace, short))
    status = state.xr.get("status", {}) if state is not None else {}
    return [(str(p.get("replica", "")), str(p.get("cluster", ""))) for p in status.get("placements", [])]


def explain_sides(
    sides: Sequence[tuple[str, str, Fleet]], name: str, *, output: str = "table", width: int = 120, color: bool = False
) -> str:
    """Explain ``name`` on each side of a plan (base, then head), or on one fleet when given one.

    A plan asks why a replica moves: both sides answer, each on its own settled fleet. A side
    without the deployment (new in the head, say) says so in its place.

    Args:
        sides: (label, source, fleet): the label ("base", "head"; "" for a single fleet) and the source
            head its explanation, and key it in a document.
        name: ``namespace/name``.
        output: ``table``, ``json`` or ``yaml``.
        width: Columns to fit the tables to.
        color: Whether to colour them.

    Raises:
        ExplainError: the last side (the head) cannot be explained.
    """
    docs: dict[str, object] = {}
    texts = []
    for i, (label, source, fleet) in enumerate(sides):
        try:
            exp = explain_deployment(fleet, name)
        except ExplainError as err:
            if i == len(sides) - 1:
                raise
            docs[label] = {"error": str(err)}
            texts.append(f"{label} ({source}): {err}\n")
            continue
        docs[label] = plain(exp)
        text = render_explanation(exp, placements(fleet, name), width=width, color=color)
        texts.append(f"{label} ({source}):\n{text}" if label else text)
    if output in ("json", "yaml"):
        doc = docs[sides[0][0]] if len(sides) == 1 else docs
        return dump(versioned("Explanation", doc), output)
    return "\n".join(texts)
