"""``modelplane preview DIR [DIR...]``: the main job, an offline preview of a fleet a CI can gate on."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from modelplane.conditions import Reason
from modelplane.kinds import KINDS
from modelplane.preview.admit import Admission, admit
from modelplane.preview.collector import paused
from modelplane.preview.document import JSON, dump, fields, plain, versioned
from modelplane.preview.explain import ExplainError, explain_deployment, explain_sides, why_unplaced
from modelplane.preview.findings import Exit, Finding, exit_code, findings
from modelplane.preview.fleet import DEFAULT_MAX_PASSES, DidNotConvergeError, Fleet, simulate
from modelplane.preview.live import read_live
from modelplane.preview.manifests import STDIN, Key, Loaded, ManifestError, load_dir, source_name
from modelplane.preview.plan import plan, render_plan, unified_diff
from modelplane.preview.tables import Outcome, markdown_output, render, verdict
from modelplane.preview.targets import group_by_target, to_yaml
from modelplane.preview.transition import Recorder, Transition, transition
from modelplane.preview.view import FleetView, build
from modelplane.preview.world import assumed_gateway_cas, assumed_kubeconfigs, healthy, live_status, observed_status
from modelplane.render.runners import configure_cli_logging
from modelplane.repo import CompositionNotFoundError, load_composition

_EPILOG = """exit codes:
  0  every manifest admitted, every replica placed, every service routed
  1  the preview could not run (unreadable manifests, no Composition, the fleet did not settle)
  2  usage error
  3  a manifest the API server would refuse, or a DRA CEL selector that does not compile (not rendered)
  4  a function error (a Fatal result or an exception while rendering)
  5  replicas left unplaced, or a pool whose InferenceClass is not found (accepted with --allow-unscheduled)
  6  services that route nowhere (judged with --assume-ready, except a selector that matches nothing any
     deployment would compose; accepted with --allow-unrouted)
When several apply, the lowest of 3-6 is the exit code.
"""


MIN_WIDTH = 60  # the narrowest width every table fits without cutting a figure


def _width_arg(text: str) -> int:
    try:
        width = int(text)
    except ValueError:
        width = 0
    if width < MIN_WIDTH:
        msg = f"{text!r}: a number of columns, at least {MIN_WIDTH}"
        raise argparse.ArgumentTypeError(msg)
    return width


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="modelplane preview",
        description="Admit every manifest in DIR as the API server would, render the fleet offline (feeding "
        "composed objects back until it settles) and show where replicas land, what they take and how "
        "services route.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dirs",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="Directories (or files) of manifests applied together: classes, clusters, deployments... "
        "A directory with a kustomization.yaml is built with `kustomize build`; - reads a YAML stream from stdin.",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "markdown", "json", "yaml", "objects"),
        default="table",
        help="table (default): tables to read; markdown: the same tables (and plan) as Markdown, for a pull "
        "request comment; json or yaml: the same as a document (camelCase keys, a schemaVersion); "
        "objects: every object as YAML, grouped by the cluster it is applied to.",
    )
    parser.add_argument(
        "--assume-ready",
        action="store_true",
        help="Simulate a live, healthy world: every composed resource (provider-kubernetes Objects and "
        "the workloads they carry, Helm releases, cloud clusters and node pools, gateways and routes) "
        "reports the status it would once Ready, so replicas serve, endpoints are composed and services "
        "route; Existing clusters are reachable. A status written in a manifest still wins, and GPUs a "
        "scheduler observed there grow with the replicas the simulation makes Ready.",
    )
    parser.add_argument(
        "--allow-unscheduled", action="store_true", help="Exit 0 with replicas left unplaced (a partial fleet)."
    )
    parser.add_argument("--allow-unrouted", action="store_true", help="Exit 0 with services that route nowhere.")
    parser.add_argument(
        "--max-passes",
        type=int,
        default=DEFAULT_MAX_PASSES,
        help=f"Give up if the fleet has not settled after this many passes (default {DEFAULT_MAX_PASSES}).",
    )
    parser.add_argument(
        "--explain",
        metavar="NAMESPACE/NAME",
        help="Explain where the replicas of this ModelDeployment go: every cluster and pool checked, with the "
        "verdict, and the score that decided. Exits with the deployment's own code (3 refused, 4 function error, "
        "5 replicas unplaced, else 0). With --against or --live, explained on the base, then on the head.",
    )
    parser.add_argument(
        "--against",
        metavar="BASE_DIR",
        type=Path,
        action="append",
        help="Plan: show what applying DIR changes relative to BASE_DIR (repeat for several directories), e.g. "
        "the main branch checked out beside a pull request: replicas added, moved and removed, GPUs per cluster, "
        "objects per target cluster, routes and weights. The exit code is DIR's.",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="Plan against the running control plane: BASE is every object of the modelplane category, read "
        "with `kubectl get modelplane --all-namespaces -o yaml` and your kubeconfig.",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="With --against or --live: after the plan, a unified diff (diff -u, as kubectl diff) of every "
        "object the change adds, changes or removes, grouped by the target cluster it is applied to.",
    )
    parser.add_argument("--context", help="The kubeconfig context --live reads (default: the current one).")
    parser.add_argument(
        "--width",
        type=_width_arg,
        help=f"Columns to fit tables to, at least {MIN_WIDTH} (default: the terminal's, else $COLUMNS, else 120).",
    )
    parser.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="Colour (default: on a terminal)."
    )
    return parser


@dataclasses.dataclass(frozen=True)
class Preview:
    """One preview: what was admitted and refused, the settled fleet and its views."""

    admission: Admission
    fleet: Fleet
    view: FleetView
    notes: tuple[str, ...]
    loaded: Loaded | None = None  # what was simulated (admitted, with any assumed kubeconfigs)


def run_preview(dirs: Sequence[Path], *, assume_ready: bool, max_passes: int = DEFAULT_MAX_PASSES) -> Preview:
    """Load, admit and simulate the manifests under ``dirs``.

    Raises:
        ManifestError: a file is not a set of manifests.
        CompositionNotFoundError: a kind has no Composition.
        DidNotConvergeError: the fleet did not settle.
        OSError: a file cannot be read.
    """
    source = " ".join(source_name(d) for d in dirs)
    return preview_loaded(load_dir(*dirs), source, assume_ready=assume_ready, max_passes=max_passes)


def preview_loaded(
    manifests: Loaded, source: str, *, assume_ready: bool, max_passes: int = DEFAULT_MAX_PASSES
) -> Preview:
    """Admit and simulate ``manifests`` (read from ``source``); raises as ``run_preview``."""
    admission = admit(manifests)
    loaded = admission.loaded
    notes: tuple[str, ...] = ()
    if assume_ready:
        secrets, notes = assumed_kubeconfigs(loaded)
        loaded = Loaded(loaded.xrs, loaded.others + secrets + assumed_gateway_cas(loaded), loaded.sources)
        notes = ("a live, healthy world (--assume-ready)", *notes)
    else:
        notes = ("offline nothing becomes Ready, so routing is not judged (use --assume-ready)",)
    compositions = {k.kind: load_composition(k.kind) for k in KINDS}
    fleet = simulate(
        loaded,
        compositions,
        max_passes=max_passes,
        world=healthy if assume_ready else None,
        observe=live_status if assume_ready else observed_status,
    )
    return Preview(admission, fleet, build(fleet, source), notes, loaded)


def step_through(base: Preview, head: Preview, *, assume_ready: bool, max_passes: int) -> tuple[Fleet, Transition]:
    """Apply ``head`` to ``base``'s settled fleet as the control plane would; the fleet it settles in, and how.

    A rollout takes a few passes per wave, so the simulation may take ``max_passes`` plus four per replica.

    Raises:
        DidNotConvergeError: the fleet did not settle.
    """
    loaded = head.loaded or head.admission.loaded
    recorder = Recorder(base.fleet.states)
    replicas = sum(1 for k in (*base.fleet.states, *head.fleet.states) if k[0] == "ModelReplica")
    fleet = simulate(
        loaded,
        {k.kind: load_composition(k.kind) for k in KINDS},
        max_passes=max_passes + 4 * replicas,
        world=healthy if assume_ready else None,
        observe=live_status if assume_ready else observed_status,
        start=base.fleet,
        on_pass=recorder,
    )
    return fleet, transition(recorder.snapshots, fleet)


def _width(asked: int | None) -> int:
    """The width asked, else the terminal's, else $COLUMNS, else 120; never below ``MIN_WIDTH``."""
    if asked:
        return asked
    found = 120
    if sys.stdout.isatty():
        found = os.get_terminal_size(sys.stdout.fileno()).columns
    elif os.environ.get("COLUMNS", "").isdigit():
        found = int(os.environ["COLUMNS"])
    return max(found, MIN_WIDTH)


def document(preview: Preview, found: Sequence[Finding], code: Exit) -> dict[str, JSON]:
    """The preview as one document for ``--output json|yaml`` (without its schemaVersion and kind)."""
    return {
        "source": preview.view.source,
        "exitCode": int(code),
        "notes": list(preview.notes),
        "refused": [
            {"object": f"{r.key[0]} {'/'.join(filter(None, r.key[1:]))}", "file": r.source, **fields(r.refusal)}
            for r in preview.admission.refused
        ],
        "unchecked": [" ".join(filter(None, k)) for k in preview.admission.unchecked],
        "fleet": plain(preview.view),
        "findings": plain(found),
    }


def _unchecked(admission: Admission, key: Key) -> str:
    """The note for a manifest no schema checks: the object, its file, and what it was likely meant to be."""
    source = admission.loaded.sources.get(key, "")
    hints = "".join(f"; {h}" for h in admission.unchecked_hints.get(key, ()))
    return f"not checked (no schema found): {' '.join(filter(None, key))}" + (f" ({source})" if source else "") + hints


def _why_unplaced(preview: Preview) -> dict[str, list[str]]:
    """Every selected cluster's reason, per deployment with replicas left unplaced (none hidden)."""
    why = {}
    for d in preview.view.deployments:
        # A quota, not the clusters, holds it back: the condition says which, with the figures.
        if d.placed < d.desired and d.scheduled.reason != Reason.QUOTA_EXCEEDED:
            try:
                why[d.name] = why_unplaced(explain_deployment(preview.fleet, d.name))
            except ExplainError:
                continue  # the condition's own message is shown instead
    return why


def _base(args: argparse.Namespace) -> Preview | None:
    """The plan's base (``--against`` or ``--live``), or None when it cannot be previewed (said on stderr)."""
    try:
        if args.live:
            return preview_loaded(read_live(args.context), "the live control plane", assume_ready=args.assume_ready)
        return run_preview(args.against, assume_ready=args.assume_ready, max_passes=args.max_passes)
    except (ManifestError, CompositionNotFoundError, DidNotConvergeError, OSError) as err:
        sys.stderr.write(f"modelplane preview: base: {err}\n")
        return None


def _plan(head: Preview, args: argparse.Namespace) -> int:
    base = _base(args)
    if base is None:
        return int(Exit.FAILED)
    if args.live:
        # The live control plane lists what its XRs composed as objects of their own, not as what each
        # composed: the base cannot be stepped from, so the plan compares the two settled fleets.
        change = plan((base.fleet, base.view), (head.fleet, head.view))
    else:
        try:
            settled, how = step_through(base, head, assume_ready=args.assume_ready, max_passes=args.max_passes)
        except DidNotConvergeError as err:
            sys.stderr.write(f"modelplane preview: applying the change to the base: {err}\n")
            return int(Exit.FAILED)
        change = plan((base.fleet, base.view), (settled, build(settled, head.view.source)), how)
    found = findings(head.view, head.admission.refused, routing_judged=args.assume_ready)
    code = exit_code(found, allow_unscheduled=args.allow_unscheduled, allow_unrouted=args.allow_unrouted)
    if args.output in ("json", "yaml"):
        doc = versioned("Plan", {"plan": change, "head": document(head, found, code)})
        sys.stdout.write(dump(doc, args.output))
        return int(code)
    width, color = _text_output(args)
    with _markdown_if(args):
        sys.stdout.write(render_plan(change, width=width, color=color))
        if args.diff:
            sys.stdout.write(_diff(unified_diff(base.fleet, settled), markdown=args.output == "markdown"))
        outcome = Outcome(head.admission.refused, found)
        sys.stdout.write("\n" + render(head.view, outcome, width=width, color=color, only_findings=True))
        sys.stdout.write(verdict(code, found, width=width, color=color))
    return int(code)


def _diff(text: str, *, markdown: bool) -> str:
    """The plan's ``--diff``: as is, or fenced as a diff in Markdown."""
    body = text or "no changes\n"
    return f"\n```diff\n{body}```\n" if markdown else f"\nDiff (base → head):\n{body}"


def _text_output(args: argparse.Namespace) -> tuple[int, bool]:
    """The width and colour of text output (Markdown has neither)."""
    color = args.output != "markdown" and (args.color == "always" or (args.color == "auto" and sys.stdout.isatty()))
    return _width(args.width), color


def _markdown_if(args: argparse.Namespace) -> contextlib.AbstractContextManager[None]:
    return markdown_output() if args.output == "markdown" else contextlib.nullcontext()


def _explain(head: Preview, args: argparse.Namespace) -> int:
    """``--explain``, exiting with the deployment's own code; in a plan, explained on the base and the head."""
    namespace, _, name = args.explain.rpartition("/")
    refused = [r for r in head.admission.refused if r.key == ("ModelDeployment", namespace, name)]
    if refused:
        why = refused[0].refusal
        sys.stderr.write(f"modelplane preview: {why.message}\n" + "".join(f"  hint: {h}\n" for h in why.hints))
        return int(Exit.REFUSED)
    sides = [("", head.view.source, head.fleet)]
    if args.against or args.live:
        base = _base(args)
        if base is None:
            return int(Exit.FAILED)
        sides = [("base", base.view.source, base.fleet), ("head", head.view.source, head.fleet)]
    width, color = _text_output(args)
    try:
        with _markdown_if(args):
            sys.stdout.write(explain_sides(sides, args.explain, output=args.output, width=width, color=color))
    except ExplainError as err:
        sys.stderr.write(f"modelplane preview: {err}\n")
        return int(Exit.FAILED)
    found = findings(head.view, head.admission.refused, routing_judged=args.assume_ready)
    own = [f for f in found if f.object == f"ModelDeployment {namespace}/{name}"]
    return int(exit_code(own, allow_unscheduled=args.allow_unscheduled))


def main(argv: Sequence[str]) -> int:
    """Run ``modelplane preview``; return the exit code.

    The cyclic garbage collector waits until the command is done (``modelplane.preview.collector``):
    after a fleet's simulation, every collection the view and the tables set off would rescan it.
    """
    with paused():
        return _run(argv)


def _run(argv: Sequence[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if [*args.dirs, *(args.against or [])].count(STDIN) > 1:
        parser.error("- (stdin) can be read once: give it as one DIR only")
    configure_cli_logging()
    try:
        preview = run_preview(args.dirs, assume_ready=args.assume_ready, max_passes=args.max_passes)
    except (ManifestError, CompositionNotFoundError, DidNotConvergeError, OSError) as err:
        sys.stderr.write(f"modelplane preview: {err}\n")
        return int(Exit.FAILED)
    if args.explain:
        return _explain(preview, args)
    if args.against or args.live:
        return _plan(preview, args)
    if args.diff:
        parser.error("--diff compares with a base: give --against BASE_DIR or --live")
    found = findings(preview.view, preview.admission.refused, routing_judged=args.assume_ready)
    code = exit_code(found, allow_unscheduled=args.allow_unscheduled, allow_unrouted=args.allow_unrouted)
    if args.output == "objects":
        sys.stdout.write(to_yaml(group_by_target(preview.fleet)))
    elif args.output in ("json", "yaml"):
        sys.stdout.write(dump(versioned("Preview", document(preview, found, code)), args.output))
    else:
        width, color = _text_output(args)
        notes = [*preview.notes]
        notes += [_unchecked(preview.admission, k) for k in preview.admission.unchecked]
        why = _why_unplaced(preview)
        outcome = Outcome(preview.admission.refused, found, notes, why)
        with _markdown_if(args):
            sys.stdout.write(render(preview.view, outcome, width=width, color=color))
            sys.stdout.write(verdict(code, found, width=width, color=color))
    return int(code)
