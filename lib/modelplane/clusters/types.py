"""What the cloud builders take and return."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]

EXTERNAL_NAME = "crossplane.io/external-name"


@dataclass(frozen=True)
class PoolPlan:
    """One node pool to provision.

    Attributes:
        name: The pool's name (``spec.nodePools[].name``).
        class_name: Its InferenceClass.
        nodes: ``nodeCount``.
        min_nodes: ``minNodeCount``, when set.
        max_nodes: ``maxNodeCount``, when set.
        zones: ``zones``.
        shape: The class's provisioning block for the cluster's cloud (``provisioning.gke`` ...).
    """

    name: str
    class_name: str
    nodes: int
    min_nodes: int | None
    max_nodes: int | None
    zones: tuple[str, ...]
    shape: Mapping[str, Any]

    @property
    def autoscaled(self) -> bool:
        """Whether either autoscaler bound is set."""
        return self.min_nodes is not None or self.max_nodes is not None


@dataclass(frozen=True)
class CloudCluster:
    """The managed resources of one cloud cluster.

    Attributes:
        resources: Each managed resource by composition resource name.
        cluster: The composition resource name of the cluster itself.
        pools: The composition resource name of each node pool, by pool name (the system pool included).
    """

    resources: Mapping[str, Manifest]
    cluster: str
    pools: Mapping[str, str] = field(default_factory=dict)


def managed(api_version: str, kind: str, name: str, namespace: str, for_provider: Manifest, **spec: Any) -> Manifest:  # noqa: ANN401 - spec fields
    """A namespaced managed resource."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"forProvider": for_provider, **spec},
    }


SYSTEM_POOL = "system"
