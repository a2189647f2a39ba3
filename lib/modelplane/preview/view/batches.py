"""Batch runs of a fleet, per cluster: where each ModelBatchRun landed, how far it got, its requests."""

from __future__ import annotations

from modelplane.conditions import Type
from modelplane.preview.fleet import Fleet
from modelplane.preview.view.model import BatchRunView
from modelplane.preview.view.read import condition, display_name, of_kind


def _requests(counts: object) -> str:
    if not isinstance(counts, dict) or not all(isinstance(counts.get(k), int) for k in ("total", "completed")):
        return ""
    failed = counts.get("failed")
    return f"{counts['completed']}/{counts['total']}" + (
        f" ({failed} failed)" if isinstance(failed, int) and failed else ""
    )


def batch_views(fleet: Fleet) -> tuple[BatchRunView, ...]:
    """Each ModelBatchRun as its status says it, by cluster (those not placed first), then name."""
    rows = []
    for key, state in of_kind(fleet, "ModelBatchRun"):
        spec, status = state.xr.get("spec", {}), state.xr.get("status", {})
        rows.append(
            BatchRunView(
                cluster=str(status.get("cluster", "")),
                run=display_name(key),
                mode=str(spec.get("mode", "Dedicated")),
                pool=str(status.get("pool", "")),
                schedule=str(spec.get("schedule", "")),
                phase=str(status.get("phase", "Pending")),
                requests=_requests(status.get("requestCounts")),
                message=condition(state.xr, Type.SCHEDULED).message,
            )
        )
    return tuple(sorted(rows, key=lambda r: (r.cluster, r.run)))
