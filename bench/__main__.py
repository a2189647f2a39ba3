"""``make bench``: RunFunction latency, function start-up and placement quality, against their targets."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bench import cost, latency, preview, quality, scale, startup
from modelplane.kinds import KINDS


def main(argv: Sequence[str] | None = None) -> int:
    """Run every benchmark and print its figures beside its targets."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--calls", type=int, default=latency.CALLS, help="RunFunction calls per latency figure")
    parser.add_argument("--runs", type=int, default=3, help="starts of each function")
    parser.add_argument("--scenarios", type=int, default=1000, help="random fleets for placement quality")
    parser.add_argument("--scale-clusters", type=int, default=scale.CLUSTERS, help="InferenceClusters at fleet scale")
    parser.add_argument("--scale-replicas", type=int, default=scale.REPLICAS, help="ModelReplicas at fleet scale")
    parser.add_argument("--scale-calls", type=int, default=scale.CALLS, help="RunFunction calls per scale figure")
    parser.add_argument(
        "--preview-fleets",
        default=",".join(":".join(map(str, f)) for f in (preview.SMALL, preview.LARGE)),
        help="The two synthetic fleets of the preview figure, as clusters:replicas:services,...",
    )
    args = parser.parse_args(argv)
    print(f"RunFunction of compose-model-deployment, in-process ({args.calls} calls per figure)", flush=True)
    print(
        latency.report([latency.run_configuration(c, o, args.calls) for c in latency.CLUSTERS for o in latency.OTHERS]),
        flush=True,
    )
    print(
        f"\nFleet scale: {args.scale_clusters} InferenceClusters x 2 pools, {args.scale_replicas} ModelReplicas"
        f" ({args.scale_calls} calls per figure)",
        flush=True,
    )
    print(scale.report(*scale.measure_all(args.scale_clusters, args.scale_replicas, args.scale_calls)), flush=True)
    print(scale.fleet_header(args.scale_clusters, args.scale_replicas), flush=True)
    print(
        scale.report_fleet(*scale.measure_fleet(args.scale_clusters, args.scale_replicas, args.scale_calls)),
        flush=True,
    )
    print(f"\nFunction start-up: process start to first gRPC answer (median of {args.runs}), idle RSS after it")
    print(startup.report([startup.measure(kind, args.runs) for kind in KINDS]), flush=True)
    small, large = (tuple(int(n) for n in f.split(":")) for f in args.preview_fleets.split(","))
    print(
        f"\nPreview at fleet scale: CPU seconds of `modelplane preview --assume-ready`, a process each"
        f" (targets for {':'.join(map(str, preview.LARGE))})",
        flush=True,
    )
    print(preview.report(preview.measure(*small), preview.measure(*large)), flush=True)
    print("\nPlacement quality")
    print(quality.report(quality.measure(args.scenarios)))
    print(cost.report(cost.measure(args.scenarios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
