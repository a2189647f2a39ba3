"""``modelplane preview DIR [DIR...]``: the main job, an offline preview of a fleet."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from modelplane.fnkit import configure_cli_logging
from modelplane.kinds import KINDS
from modelplane.preview.fleet import DEFAULT_MAX_PASSES, DidNotConvergeError, simulate
from modelplane.preview.manifests import ManifestError, load_dir
from modelplane.preview.summary import summarize
from modelplane.preview.targets import group_by_target, to_yaml
from modelplane.preview.world import healthy
from modelplane.repo import CompositionNotFoundError, load_composition


def main(argv: Sequence[str]) -> int:
    """Run ``modelplane preview``; return the exit code."""
    parser = argparse.ArgumentParser(
        prog="modelplane preview",
        description="Render every Modelplane object in DIR offline, feeding composed objects back "
        "until the fleet settles, and summarise where replicas land.",
    )
    parser.add_argument(
        "dirs",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="Directories (or files) of manifests applied together: classes, clusters, deployments...",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("summary", "yaml"),
        default="summary",
        help="summary (default), or every object as YAML grouped by target cluster.",
    )
    parser.add_argument(
        "--max-passes",
        type=int,
        default=DEFAULT_MAX_PASSES,
        help=f"Give up if the fleet has not settled after this many passes (default {DEFAULT_MAX_PASSES}).",
    )
    parser.add_argument(
        "--assume-ready",
        action="store_true",
        help="Simulate a live, healthy world: every composed resource (provider-kubernetes Objects and "
        "the workloads they carry, Helm releases, cloud clusters and node pools, gateways and routes) "
        "reports the status it would once Ready, so replicas serve, endpoints are composed and services "
        "route. A status written in a manifest still wins.",
    )
    args = parser.parse_args(argv)
    configure_cli_logging()
    try:
        loaded = load_dir(*args.dirs)
        compositions = {k.kind: load_composition(k.kind) for k in KINDS}
        fleet = simulate(loaded, compositions, max_passes=args.max_passes, world=healthy if args.assume_ready else None)
    except (ManifestError, CompositionNotFoundError, DidNotConvergeError, OSError) as err:
        sys.stderr.write(f"modelplane preview: {err}\n")
        return 1
    sys.stdout.write(
        summarize(fleet, " ".join(str(d) for d in args.dirs))
        if args.output == "summary"
        else to_yaml(group_by_target(fleet))
    )
    return 1 if fleet.errors else 0
