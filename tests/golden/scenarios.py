"""The steps of the scheduling scenarios under examples/scheduling.

Each directory of examples/scheduling is a scenario: a self-contained fleet
(classes, clusters, other deployments' replicas) and the ModelDeployments it
schedules. A scenario not listed in ``STEPS`` is one step: every file of its
directory is applied, and each ModelDeployment is rendered with all of them as
required resources. A listed scenario has a directory per step (``step-1/``,
``step-2/``..., each previewable on its own) and runs its steps in order, each
rendering its ModelDeployments into ``tests/golden/files/scheduling/<scenario>/<step>/``;
several golden steps may apply one step directory, each starting from what the
previous one composed (the waves of one change).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    """One render of a scenario.

    Attributes:
        name: The step's name: the directory of its golden files and part of its case ids.
        dir: The scenario's step directory whose manifests this step applies (``step-2``); empty for
            the scenario directory itself.
        files: The files of that directory applied in this step; empty for all of them.
        patch: A JSON merge patch applied to each ModelDeployment of the step, as
            ``kubectl patch --type merge`` (or ``kubectl scale``) would.
        carry: Start from the previous step: what it composed for a ModelDeployment is that
            deployment's observed composed resources, and every ModelReplica it composed is in
            the fleet (a required resource).
        serving: The carried resources report ``Ready``, and each carried ModelReplica an
            endpoint (its cluster's gateway and its virtual host there), as once their workloads serve.
        others: JSON merge patches for other objects of the step, by ``Kind/name``; None leaves
            the object out of the step (as if it were deleted or not listed).
    """

    name: str
    dir: str = ""
    files: tuple[str, ...] = ()
    patch: Mapping[str, Any] = field(default_factory=dict)
    carry: bool = False
    serving: bool = False
    others: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)


# What the deployment observed in scenario lost: its Failover condition turned to ClusterLost long ago,
# when lost-b left (so the failover grace has passed).
_LOST_SINCE = {
    "status": {
        "conditions": [
            {
                "type": "Failover",
                "status": "True",
                "reason": "ClusterLost",
                "message": "InferenceCluster lost-b has not been in the fleet",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            }
        ]
    }
}

# What pool-removed-a publishes once its pool hgx left the spec with replicas on it.
_POOL_REMOVING = {"InferenceCluster/pool-removed-a": {"status": {"removingPools": [{"name": "hgx", "remaining": 2}]}}}

# What preempted-a publishes once a replica of a higher priority, which fitted nowhere else, takes the place
# of the batch deployment's serving replica (its FleetQuota says preemption LowerPriority).
_PREEMPTED = {
    "InferenceCluster/preempted-a": {
        "status": {
            "capacity": {
                "pools": [
                    {
                        "name": "hgx",
                        "className": "preempted-h100-8",
                        "nodes": 1,
                        "devicesPerNode": 8,
                        "nodesByFree": {"0": 1},
                        "replicas": ["prod-team/llama-70b-prod-0"],
                        "declared": 8,
                        "inUse": 8,
                        "free": 0,
                        "source": "Declared",
                    }
                ],
                "preempted": [{"replica": "ml-team/llama-8b-preempted-0", "by": "prod-team/llama-70b-prod-0"}],
            }
        }
    }
}

STEPS: dict[str, tuple[Step, ...]] = {
    # A running replica stays where it is when a better cluster appears; the control step shows
    # that a fresh placement on the same fleet would take the new cluster.
    "sticky": (
        Step("1-placed", dir="step-1"),
        Step("2-new-cluster", dir="step-2", carry=True, serving=True),
        Step("3-control-fresh", dir="step-2"),
    ),
    # Spread, then CostOptimized: new replicas go to the cheapest cluster with room under maxReplicasPerCluster,
    # and a scale-down removes the costliest first, keeping a pinned cluster's last Ready replica.
    "cost-optimized": (
        Step("1-spread", dir="step-1"),
        Step("2-cost-optimized", dir="step-2", carry=True, serving=True),
        Step("3-scaled-down", dir="step-3", carry=True, serving=True),
    ),
    # 3 -> 1 -> 3: scaling down removes the highest ordinals, scaling up reuses them.
    "scale": (
        Step("1-three", dir="step-1"),
        Step("2-one", dir="step-2", carry=True, serving=True),
        Step("3-three", dir="step-3", carry=True, serving=True),
    ),
    # A new image rolls out a replica at a time: surge one of the new revision, retire an old one once it
    # serves (every carried replica serves in the next step), never fewer than 3 serving.
    "upgrade": (
        Step("1-running", dir="step-1"),
        Step("2-surge", dir="step-2", carry=True, serving=True),
        Step("3-one-retired-next-surge", dir="step-2", carry=True, serving=True),
        Step("4-two-retired-last-surge", dir="step-2", carry=True, serving=True),
        Step("5-done", dir="step-2", carry=True, serving=True),
    ),
    # drain-a drains: its replicas move to drain-b one at a time, each retired once its replacement serves.
    "drain": (
        Step("1-running", dir="step-1"),
        Step("2-surge", dir="step-2", carry=True, serving=True),
        Step("3-one-retired-next-surge", dir="step-2", carry=True, serving=True),
        Step("4-drained", dir="step-2", carry=True, serving=True),
    ),
    # pool-removed-a's pool hgx leaves its spec (replaced by hgx-v2): the cluster keeps it and lists it in
    # status.removingPools (as its function does while replicas run there); its replicas move surge-first.
    "pool-removed": (
        Step("1-running", dir="step-1"),
        Step("2-surge", dir="step-2", carry=True, serving=True, others=_POOL_REMOVING),
        Step("3-one-retired-next-surge", dir="step-2", carry=True, serving=True, others=_POOL_REMOVING),
        Step("4-moved", dir="step-2", carry=True, serving=True, others=_POOL_REMOVING),
    ),
    # preempted-a gives the batch deployment's serving replica to a higher priority: it moves surge-first
    # (a replacement on preempted-b), and is retired once the replacement serves.
    "preempted": (
        Step("1-running", dir="step-1"),
        Step("2-surge", dir="step-1", carry=True, serving=True, others=_PREEMPTED),
        Step("3-retired", dir="step-1", carry=True, serving=True, others=_PREEMPTED),
    ),
    # lost-b leaves the fleet past the failover grace: its replica is replaced on lost-a and kept; then it returns.
    "lost": (
        Step("1-running", dir="step-1"),
        Step("2-failed-over", dir="step-2", patch=_LOST_SINCE, carry=True, serving=True),
        Step("3-replacement-serves", dir="step-2", patch=_LOST_SINCE, carry=True, serving=True),
        Step("4-back", dir="step-3", carry=True, serving=True),
    ),
}
