"""The steps of the scheduling scenarios under examples/scheduling.

Each directory of examples/scheduling is a scenario: a self-contained fleet
(classes, clusters, other deployments' replicas) and the ModelDeployments it
schedules. A scenario not listed in ``STEPS`` is one step: every file of its
directory is applied, and each ModelDeployment is rendered with all of them as
required resources. A listed scenario runs its steps in order, each rendering
its ModelDeployments into ``tests/golden/files/scheduling/<scenario>/<step>/``.
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
        files: The files of the scenario directory applied in this step; empty for all of them.
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
    files: tuple[str, ...] = ()
    patch: Mapping[str, Any] = field(default_factory=dict)
    carry: bool = False
    serving: bool = False
    others: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)


# The image change of scenario upgrade: the whole container, as a merge patch replaces a list.
_V12 = {
    "spec": {
        "workers": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "vllm/vllm-openai:v0.12.0",
                            "args": [
                                "--model=meta-llama/Llama-3.3-70B-Instruct",
                                "--served-model-name=llama-70b",
                                "--tensor-parallel-size=4",
                            ],
                            "ports": [{"name": "http", "containerPort": 8000}],
                            "resources": {"requests": {"cpu": "16", "memory": "128Gi"}},
                        }
                    ]
                }
            }
        }
    }
}
_DRAIN = {"InferenceCluster/drain-a": {"spec": {"drain": True}}}
_LOST_B: dict[str, Mapping[str, Any] | None] = {"InferenceCluster/lost-b": None}
# What the deployment observed: its Failover condition turned to ClusterLost long ago, when lost-b left.
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

STEPS: dict[str, tuple[Step, ...]] = {
    # A running replica stays where it is when a better cluster appears; the control step shows
    # that a fresh placement on the same fleet would take the new cluster.
    "sticky": (
        Step("1-placed", files=("fleet.yaml", "deployment.yaml")),
        Step("2-new-cluster", carry=True, serving=True),
        Step("3-control-fresh"),
    ),
    # 3 -> 1 -> 3: scaling down removes the highest ordinals, scaling up reuses them.
    "scale": (
        Step("1-three"),
        Step("2-one", patch={"spec": {"replicas": 1}}, carry=True, serving=True),
        Step("3-three", carry=True, serving=True),
    ),
    # A new image rolls out a replica at a time: surge one of the new revision, retire an old one once it
    # serves (every carried replica serves in the next step), never fewer than 3 serving.
    "upgrade": (
        Step("1-running"),
        Step("2-surge", patch=_V12, carry=True, serving=True),
        Step("3-one-retired-next-surge", patch=_V12, carry=True, serving=True),
        Step("4-two-retired-last-surge", patch=_V12, carry=True, serving=True),
        Step("5-done", patch=_V12, carry=True, serving=True),
    ),
    # drain-a drains: its replicas move to drain-b one at a time, each retired once its replacement serves.
    "drain": (
        Step("1-running"),
        Step("2-surge", others=_DRAIN, carry=True, serving=True),
        Step("3-one-retired-next-surge", others=_DRAIN, carry=True, serving=True),
        Step("4-drained", others=_DRAIN, carry=True, serving=True),
    ),
    # lost-b leaves the fleet past the failover grace: its replica is replaced on lost-a and kept; then it returns.
    "lost": (
        Step("1-running"),
        Step("2-failed-over", patch=_LOST_SINCE, others=_LOST_B, carry=True, serving=True),
        Step("3-replacement-serves", patch=_LOST_SINCE, others=_LOST_B, carry=True, serving=True),
        Step("4-back", carry=True, serving=True),
    ),
}
