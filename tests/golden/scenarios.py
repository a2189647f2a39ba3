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
    """

    name: str
    files: tuple[str, ...] = ()
    patch: Mapping[str, Any] = field(default_factory=dict)
    carry: bool = False
    serving: bool = False


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
}
