"""What a FleetQuota publishes in ``status``, from its use (``modelplane.quota.usage``).

One layout, written by ``compose-fleet-quota`` and read back by every ModelDeployment of the
quota's namespaces through ``modelplane.scheduling.quotas.quota_of``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplane.quota.usage import QuotaUse

LISTED_NAMESPACES = 1000  # namespaces listed in status, which deployments look themselves up in
NAMED_REPLICAS = 512  # replicas listed as exceeded or preempted: their deployments look themselves up here


def quota_status(namespaces: Sequence[str], use: QuotaUse) -> dict[str, Any]:
    """``status``: the namespaces, each limit's use (per class, priority and deployment), who is beyond a limit."""
    limits = [
        {
            "name": u.limit.name,
            "accelerators": u.limit.accelerators,
            "inUse": u.in_use,
            "classes": [{"className": c, "inUse": n} for c, n in u.classes.items()],
            "priorities": [
                {**({"name": name} if name else {}), "value": value, "inUse": n, "notServing": pending}
                for (value, name), (n, pending) in u.priorities.items()
            ],
            "deployments": [{"name": d, "inUse": n} for d, n in u.deployments.items()],
        }
        for u in use.limits
    ]
    status: dict[str, Any] = {
        "namespaceCount": len(namespaces),
        "namespaces": list(namespaces[:LISTED_NAMESPACES]),
        "limits": limits,
        "summary": ", ".join(f"{u.limit.name} {u.in_use}/{u.limit.accelerators}" for u in use.limits),
    }
    if use.exceeded:
        status["exceeded"] = list(use.exceeded[:NAMED_REPLICAS])
    if use.preempted:
        status["preempted"] = list(use.preempted[:NAMED_REPLICAS])
    return status
