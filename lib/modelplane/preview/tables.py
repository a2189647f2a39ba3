"""The preview as tables people read: fitted to the terminal, coloured there, plain when piped."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from modelplane.preview.admit import Refused
from modelplane.preview.findings import Exit, Finding
from modelplane.preview.fitted import FittedTable
from modelplane.preview.markdown import MarkdownConsole, closed
from modelplane.preview.view import BackendView, Condition, FleetView, ReleaseView, ReplicaView

# Column headers a reader scans for; the same words in the README walkthrough.
_GOOD, _BAD, _DIM = "green", "red", "dim"

# Set while rendering Markdown: every renderer (the preview, the plan, --explain) prints through console().
_MARKDOWN: ContextVar[bool] = ContextVar("markdown", default=False)


@contextmanager
def markdown_output() -> Iterator[None]:
    """Within this block, ``console`` writes Markdown (``--output markdown``) instead of fitted text."""
    token = _MARKDOWN.set(True)
    try:
        yield
    finally:
        _MARKDOWN.reset(token)


def console(out: io.StringIO, *, width: int, color: bool) -> Console:
    """A console writing to ``out``: ``width`` columns, colour only when asked (a terminal).

    Within ``markdown_output``, a console that writes Markdown instead.
    """
    if _MARKDOWN.get():
        return MarkdownConsole(out)
    return Console(
        file=out,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
        emoji=False,
        markup=False,  # names and messages are data, never rich markup ("[h100]" is a pool)
        soft_wrap=True,  # prose lines stay whole (greppable in a log); tables still fit the width
    )


def table(*columns: str, title: str = "", wrap: str = "") -> FittedTable:
    """A table in the preview's style: a header rule, no borders, fitted to the console's width.

    Figures stay whole; one column (``wrap``, else the last) wraps first, names shorten with ``…``,
    and columns that cannot all fit continue in a second band (see ``modelplane.preview.fitted``).
    """
    return FittedTable(*columns, title=title, wrap=wrap)


def state(c: Condition, *, good: str = "") -> Text:
    """A condition as a short coloured word: its reason when it holds or not."""
    word = good or c.reason or c.status
    if c.true:
        return Text(word if good else (c.reason or "True"), style=_GOOD)
    return Text(c.reason or c.status, style=_BAD if c.status == "False" else _DIM)


def _gpus(n: int | None) -> str:
    return "-" if n is None else str(n)


def _where(replicas: Iterable[ReplicaView]) -> str:
    lines = []
    for r in replicas:
        if len(r.roles) == 1:
            roles = f"{r.roles[0].pool}"
        else:
            roles = ", ".join(f"{x.role} {x.pool} ({x.gpus} GPUs)" for x in r.roles)
        lines.append(f"{r.name} → {r.cluster} [{roles}]")
    return "\n".join(lines) or "-"


def _release_row(t: FittedTable, target: str, releases: Sequence[ReleaseView]) -> None:
    if not releases:
        return
    prefix = target.removeprefix("cluster ") + "-"
    charts = ", ".join(f"{r.name.removeprefix(prefix)} ({r.chart} {r.version})" for r in releases)
    known = [r for r in releases if r.ready is not None]
    ready = f"{sum(1 for r in known if r.ready)}/{len(releases)}" if known else "-"
    t.add_row(target, charts, ready)


@dataclass(frozen=True)
class Outcome:
    """What the preview found besides the fleet: refusals, findings, notes, and why replicas are unplaced."""

    refused: Sequence[Refused] = ()
    found: Sequence[Finding] = ()
    notes: Sequence[str] = ()
    why: Mapping[str, Sequence[str]] = field(default_factory=dict)


def render(
    view: FleetView, outcome: Outcome, *, width: int = 120, color: bool = False, only_findings: bool = False
) -> str:
    """The preview's text: refusals, tables of GPUs, clusters, deployments, services, quotas, releases, then findings.

    With ``only_findings``, the refusals and findings alone (a plan prints its own tables).
    """
    out = io.StringIO()
    c = console(out, width=width, color=color)
    if only_findings:
        _refused(c, outcome.refused)
        _findings(c, outcome.found)
        return plain_ends(out.getvalue())
    passes = "pass" if view.passes == 1 else "passes"
    head = f"Modelplane preview of {view.source}: {view.objects} objects, settled after {view.passes} {passes}"
    c.print(Text(head, style="bold"))
    for note in outcome.notes:
        c.print(f"note: {note}")
    c.print()
    _refused(c, outcome.refused)
    _gpu_table(c, view)
    _cluster_table(c, view)
    _deployment_table(c, view, outcome.why)
    _service_table(c, view)
    _pool_table(c, view)
    _cache_table(c, view)
    _batch_table(c, view)
    _quota_table(c, view)
    _release_table(c, view)
    _messages(c, view)
    _findings(c, outcome.found)
    return plain_ends(out.getvalue())


def _refused(c: Console, refused: Sequence[Refused]) -> None:
    if not refused:
        return
    c.print(Text("Refused by admission (not rendered)", style="bold"))
    for r in refused:
        c.print(Text(r.refusal.message, style=_BAD))
        for hint in r.refusal.hints:
            c.print(f"  hint: {hint}")
    c.print()


def _gpu_table(c: Console, view: FleetView) -> None:
    t = table(
        "cluster", "pool", "class", "nodes x GPUs", "declared", "observed", "in use", "free", "source", title="GPUs"
    )
    for cl in view.clusters:
        for i, p in enumerate(cl.pools):
            free = Text(str(p.free), style=_GOOD if p.free else _DIM)
            if p.overcommitted:
                free = Text(f"{p.free} (OVERCOMMITTED by {p.overcommitted})", style=_BAD)
            row = (p.pool, p.class_name, f"{p.nodes} x {p.gpus_per_node}", str(p.declared), _gpus(p.observed))
            t.add_row(cl.name if i == 0 else "", *row, str(p.in_use), free, p.source)
    c.print(t)


def _cluster_table(c: Console, view: FleetView) -> None:
    priced = any(cl.cost for cl in view.clusters)  # a cost column only where a cluster reports one
    columns = ("cluster", "source", "scheduler", "backend", "ready", "serving stack", *(("cost",) if priced else ()))
    t = table(*columns, "labels", title="Clusters")
    for cl in view.clusters:
        ready = Text("Cordoned", style=_BAD) if cl.cordoned else state(cl.ready)
        stack = "-"
        if cl.stack is not None:
            stack = (cl.stack.ready.reason or cl.stack.ready.status) + (
                f", gateway {cl.stack.gateway}" if cl.stack.gateway else ""
            )
        labels = ", ".join(f"{k}={v}" for k, v in cl.labels.items())
        cost = (cl.cost or "-",) if priced else ()
        t.add_row(cl.name, cl.source, cl.scheduler, cl.backend, ready, stack, *cost, labels)
    c.print(t)
    for cl in view.clusters:
        if not cl.ready.true and cl.ready.message:
            c.print(Text(f"  {cl.name}: {cl.ready.message}", style=_DIM))
    c.print()


def _deployment_table(c: Console, view: FleetView, why: Mapping[str, Sequence[str]]) -> None:
    priced = any(d.cost for d in view.deployments)  # a cost column only where a deployment reports one
    columns = ("deployment", "ready", "placed", "GPUs/replica", "shape", *(("cost",) if priced else ()), "where")
    t = table(*columns, title="Deployments")
    for d in view.deployments:
        placed = Text(f"{d.placed}/{d.desired}", style=_GOOD if d.placed >= d.desired else _BAD)
        cost = (d.cost or "-",) if priced else ()
        t.add_row(
            d.name, f"{d.ready}/{d.desired}", placed, _gpus(d.gpus_per_replica), d.shape, *cost, _where(d.replicas)
        )
    c.print(t)
    for d in view.deployments:
        if d.placed >= d.desired:
            continue
        c.print(
            Text(f"  {d.name}: placed {d.placed} of {d.desired} ({d.scheduled.reason or 'not scheduled'})", style=_BAD)
        )
        for line in why.get(d.name, [d.scheduled.message]):
            c.print(f"    {line}")
    if any(d.placed < d.desired for d in view.deployments):
        c.print("  (modelplane preview --explain NAMESPACE/NAME shows every check and score)")
    c.print()


def backend_line(b: BackendView) -> str:
    """One backend of the Services table: ``name: weight → share``, then its tier and how traffic reaches it.

    ``openai: 1 → 100.0% (tier 1, fallback)``: Envoy's per-request fallback (its share is of the
    fallback's weight); ``(tier 2, priority 2)``: a priority on the service's AIGatewayRoute;
    ``(tier 1)``: the control plane gives it the weights once no lower tier has a Ready endpoint.
    A single-tier service's backends carry no note.
    """
    notes = [f"tier {b.tier}"] if b.tier is not None else []
    notes += ["fallback"] if b.fallback else []
    notes += [f"priority {b.priority}"] if b.priority is not None else []
    return f"{b.name}: {b.weight} → {b.share:.1f}%" + (f" ({', '.join(notes)})" if notes else "")


def _service_table(c: Console, view: FleetView) -> None:
    t = table("service", "address", "access", "limits", "routed", "backends (weight → share)", title="Services")
    for s in view.services:
        backends = "\n".join(backend_line(b) for b in s.backends) or "-"
        t.add_row(s.name, s.address or "-", s.access, s.limits, state(s.routed), backends)
    c.print(t)
    for s in view.services:
        if not s.routed.true and s.routed.message:
            c.print(Text(f"  {s.name}: {s.routed.message}", style=_DIM))
    c.print()


def _pool_table(c: Console, view: FleetView) -> None:
    if not view.pools:
        return
    t = table(
        "deployment", "cluster", "InferencePool", "endpoint picker", "weight", "monitors", title="In-cluster routing"
    )
    for p in view.pools:
        picker = f"{p.profile}, {p.failure_mode}" + (f", x{p.picker_replicas}" if p.picker_replicas > 1 else "")
        if p.priority is not None:
            picker += f", priority {p.priority}"
        weight = "-" if p.weight is None else f"{p.weight} Ready"
        t.add_row(p.deployment, p.cluster, p.pool, picker, weight, ", ".join(p.monitors) or "-")
    c.print(t)
    c.print()


def _cache_table(c: Console, view: FleetView) -> None:
    if not view.caches:
        return
    t = table("cache", "cluster", "phase", "waiting replicas", "message", title="Model caches")
    for copy in view.caches:
        t.add_row(copy.cache, copy.cluster, copy.phase, ", ".join(copy.waiting) or "-", copy.message or "-")
    c.print(t)
    c.print()


def _batch_table(c: Console, view: FleetView) -> None:
    if not view.batches:
        return
    t = table("cluster", "run", "mode", "schedule", "phase", "requests", "message", title="Batch runs")
    for b in view.batches:
        where = f"{b.cluster} ({b.pool})" if b.pool else b.cluster or "-"
        t.add_row(where, b.run, b.mode, b.schedule or "once", b.phase, b.requests or "-", b.message or "-")
    c.print(t)
    c.print()


def _quota_table(c: Console, view: FleetView) -> None:
    if not view.quotas:
        return
    t = table("quota", "namespaces", "limit", "in use", "per class", "per priority", title="Quotas")
    for q in view.quotas:
        used = "-" if q.allows is None else Text(f"{q.in_use}/{q.allows}", style=_BAD if q.in_use > q.allows else "")
        t.add_row(
            q.quota,
            ", ".join(q.namespaces) or "-",
            q.limit,
            used,
            "\n".join(q.classes) or "-",
            "\n".join(q.priorities) or "-",
        )
    c.print(t)
    said = set()
    for q in view.quotas:
        if q.quota in said or q.within.true or not q.within.message:
            continue
        said.add(q.quota)
        c.print(Text(f"  {q.quota}: {q.within.message}", style=_DIM))
    c.print()


def _release_table(c: Console, view: FleetView) -> None:
    t = table(
        "installs into", "releases (chart version)", "ready", title="Helm releases", wrap="releases (chart version)"
    )
    for cl in view.clusters:
        _release_row(t, f"cluster {cl.name}", cl.releases)
    _release_row(t, "control plane", view.control_plane_releases)
    c.print(t)


def _messages(c: Console, view: FleetView) -> None:
    if not view.messages:
        return
    c.print(Text("Messages", style="bold"))
    for m in view.messages:
        c.print(Text(f"  {m.severity} {m.object}: {m.text}", style=_BAD if m.severity != "Normal" else ""))
    c.print()


def _findings(c: Console, found: Sequence[Finding]) -> None:
    if not found:
        return
    c.print(Text("Findings", style="bold"))
    for f in found:
        text = "refused by admission (above)" if f.code is Exit.REFUSED else f.text
        c.print(Text(f"  [exit {int(f.code)}] {f.object}: {text}", style=_BAD))
    c.print()


def plain_ends(text: str) -> str:
    """Drop the padding rich adds at the end of lines (it only shows as noise in a diff or a log).

    Every renderer ends with this: in Markdown it also closes the last fenced block.
    """
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return closed(text) if _MARKDOWN.get() else text


def verdict(code: Exit, found: Sequence[Finding], *, width: int = 120, color: bool = False) -> str:
    """The last line: the exit code and what it stands for."""
    out = io.StringIO()
    c = console(out, width=width, color=color)
    if code is Exit.OK:
        accepted = f" ({len(found)} accepted by --allow-* flags)" if found else ""
        c.print(Text(f"exit 0: OK{accepted}", style=f"bold {_GOOD}"))
    else:
        c.print(Text(f"exit {int(code)}: {_MEANING[code]}", style=f"bold {_BAD}"))
    return plain_ends(out.getvalue())


_MEANING = {
    Exit.FAILED: "the preview could not run",
    Exit.USAGE: "usage error",
    Exit.REFUSED: "a manifest the API server would refuse",
    Exit.FUNCTION_ERROR: "a function error",
    Exit.UNPLACED: "replicas left unplaced",
    Exit.UNROUTED: "services that route nowhere",
}
