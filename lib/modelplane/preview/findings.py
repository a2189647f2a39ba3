"""What a CI gates on: the preview's findings and its exit code.

Exit codes (documented in ``modelplane preview --help`` and the README):

- 0: every manifest admitted, every replica placed, every service routed;
- 1: the preview could not run (unreadable manifests, no Composition, the fleet did not settle);
- 2: usage error (argparse);
- 3: a manifest the API server would refuse, or a DRA CEL selector that does not compile (it is not rendered);
- 4: a function error (a Fatal result or an exception while rendering);
- 5: replicas left unplaced, or a pool whose InferenceClass is not found, which offers none a place
  (``--allow-unscheduled`` accepts them);
- 6: services that route nowhere (judged only with ``--assume-ready``: offline nothing serves; a
  selector that matches nothing any deployment would compose is judged offline too;
  ``--allow-unrouted`` accepts them).

When several apply, the lowest of 3-6 wins: a refused manifest explains what follows from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from modelplane.preview.admit import Refused
from modelplane.preview.references import missing_class
from modelplane.preview.view import FleetView


class Exit(IntEnum):
    """The exit codes of ``modelplane preview``."""

    OK = 0
    FAILED = 1
    USAGE = 2
    REFUSED = 3
    FUNCTION_ERROR = 4
    UNPLACED = 5
    UNROUTED = 6


@dataclass(frozen=True)
class Finding:
    """One thing that fails the gate: its exit code, the object and why."""

    code: Exit
    object: str
    text: str


def findings(view: FleetView, refused: Iterable[Refused], *, routing_judged: bool) -> tuple[Finding, ...]:
    """Everything in a preview that a CI should stop on, most severe first."""
    out = [Finding(Exit.REFUSED, f"{r.key[0]} {'/'.join(filter(None, r.key[1:]))}", r.refusal.message) for r in refused]
    out += [Finding(Exit.FUNCTION_ERROR, name, text) for name, text in sorted(view.errors.items())]
    classes = {c.name for c in view.classes}
    for cluster in view.clusters:
        for index, pool in enumerate(cluster.pools):
            if pool.class_name not in classes:
                text = missing_class(pool.pool, index, pool.class_name, classes)
                out.append(Finding(Exit.UNPLACED, f"InferenceCluster {cluster.name}", text))
    for d in view.deployments:
        if d.placed < d.desired:
            why = f": {d.scheduled.reason}" if d.scheduled.reason else ""
            out.append(Finding(Exit.UNPLACED, f"ModelDeployment {d.name}", f"placed {d.placed} of {d.desired}{why}"))
    for s in view.services:
        causes = list(s.unmatched)
        if routing_judged and not s.routed.true:
            causes.insert(0, f"not routed: {s.routed.reason or s.routed.status}")
        if causes:
            out.append(Finding(Exit.UNROUTED, f"ModelService {s.name}", "; ".join(causes)))
    return tuple(out)


def exit_code(found: Sequence[Finding], *, allow_unscheduled: bool = False, allow_unrouted: bool = False) -> Exit:
    """The exit code of a preview with ``found``, less what the flags accept."""
    allowed = {Exit.UNPLACED} if allow_unscheduled else set()
    if allow_unrouted:
        allowed.add(Exit.UNROUTED)
    codes = [f.code for f in found if f.code not in allowed]
    return min(codes) if codes else Exit.OK
