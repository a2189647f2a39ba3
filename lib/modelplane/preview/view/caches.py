"""Model caches of a fleet: each ModelCache's copy per cluster, and the replicas waiting for one."""

from __future__ import annotations

from modelplane.conditions import Reason, Type
from modelplane.preview.fleet import Fleet
from modelplane.preview.view.model import CacheCopyView
from modelplane.preview.view.read import condition, display_name, of_kind


def _waiting(fleet: Fleet) -> dict[tuple[str, str, str], list[str]]:
    """The replicas that wait for their cache's copy, by (namespace, cache, cluster)."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for key, state in of_kind(fleet, "ModelReplica"):
        if condition(state.xr, Type.DEPLOYED).reason != Reason.CACHE_NOT_READY:
            continue
        spec = state.xr.get("spec", {})
        cache = str(spec.get("modelCache", {}).get("name", ""))
        cluster = str(spec.get("inferenceClusterRef", {}).get("name", ""))
        out.setdefault((key[1], cache, cluster), []).append(display_name(key))
    return out


def cache_views(fleet: Fleet) -> tuple[CacheCopyView, ...]:
    """Each ModelCache's copies as its status lists them, with the replicas waiting on each cluster."""
    waiting = _waiting(fleet)
    rows = []
    for key, state in of_kind(fleet, "ModelCache"):
        entries = state.xr.get("status", {}).get("clusters") or []
        listed = set()
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            cluster = str(entry.get("name", ""))
            listed.add(cluster)
            rows.append(
                CacheCopyView(
                    cache=display_name(key),
                    cluster=cluster,
                    phase=str(entry.get("phase", "")),
                    message=str(entry.get("message", "")),
                    waiting=tuple(sorted(waiting.get((key[1], key[2], cluster), ()))),
                )
            )
        # Replicas waiting on a cluster the cache does not list yet (Follow stages it on the next pass).
        for (namespace, cache, cluster), names in sorted(waiting.items()):
            if (namespace, cache) == (key[1], key[2]) and cluster not in listed:
                rows.append(CacheCopyView(display_name(key), cluster, "Pending", "", tuple(sorted(names))))
    return tuple(rows)
