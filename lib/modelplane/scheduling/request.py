"""A ModelDeployment as the scheduler reads it: its key, replicas, selector, roles and strategy."""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.capacity import DeploymentKey
from modelplane.problems import Problem
from modelplane.scheduling.devices import DeviceRequest, RoleRequest
from modelplane.scheduling.labels import LabelSelector, label_selector
from modelplane.scheduling.policy import Policy, policy_of
from modelplane.scheduling.strategy import Strategy, strategy_of
from modelplane.topology import Footprint, Role, TopologyError, replica_footprint
from modelplane_models.model_deployment import ModelDeployment, NodeSelector, NodeSelector1


class InvalidDeploymentError(ValueError):
    """A ModelDeployment the scheduler cannot place at all, naming the field at fault."""

    def __init__(self, problem: Problem) -> None:
        """Carry the problem; the message is its ``field: message`` form."""
        super().__init__(str(problem))
        self.problem = problem


@dataclass(frozen=True)
class Request:
    """What the scheduler places: one deployment's replicas, each of ``roles``.

    Attributes:
        key: The deployment.
        replicas: ``spec.replicas``.
        selector: ``spec.clusterSelector``.
        roles: Per role (unified, or prefill and decode), its node selector and footprint.
        strategy: The rollout and failover settings.
        policy: ``spec.placement``: how replicas are spread, and which a scale-down removes first.
        pool_routing: Whether it is routed through an InferencePool per cluster (``spec.routing`` mode Pool,
            the default), which a cluster's Envoy AI Gateway serves.
    """

    key: DeploymentKey
    replicas: int
    selector: LabelSelector
    roles: tuple[RoleRequest, ...]
    strategy: Strategy
    policy: Policy = field(default_factory=Policy)
    pool_routing: bool = True

    @property
    def multi_node(self) -> bool:
        """Whether a worker of some role spans nodes (a LeaderWorkerSet group)."""
        return any(r.footprint.nodes_per_worker > 1 for r in self.roles)


def request_of(deployment: ModelDeployment) -> Request:
    """Read a ModelDeployment as a ``Request``.

    Raises:
        InvalidDeploymentError: It has no name, no serving shape or an invalid topology.
    """
    metadata, spec = deployment.metadata, deployment.spec
    if metadata is None or not metadata.name:
        raise InvalidDeploymentError(Problem("metadata.name", "required"))
    if spec is None:
        raise InvalidDeploymentError(Problem("spec", "required"))
    try:
        footprints = replica_footprint(spec)
    except TopologyError as error:
        raise InvalidDeploymentError(error.problem) from error
    roles = []
    selector: NodeSelector | NodeSelector1 | None
    for role, fp in footprints.roles:
        if role is Role.UNIFIED:
            selector, field = spec.nodeSelector, "spec.nodeSelector"
        else:
            block = spec.prefill if role is Role.PREFILL else spec.decode
            selector, field = (block.nodeSelector if block else None), f"spec.{role}.nodeSelector"
        if selector is None:
            raise InvalidDeploymentError(Problem(field, "required"))
        devices = tuple(DeviceRequest(d.name, d.cel, d.count or 1) for d in selector.devices or [])
        roles.append(RoleRequest(role, field, selector.cel, devices, fp))
    key = DeploymentKey(metadata.namespace or "", metadata.name)
    replicas = spec.replicas if spec.replicas is not None else 1
    clusters = label_selector(spec.clusterSelector)
    # Routing through a pool is the default, as ``modelplane.routing.picker.routing_of`` reads it.
    pool_routing = not (spec.routing is not None and spec.routing.mode == "Replica")
    return Request(key, replicas, clusters, tuple(roles), strategy_of(spec), policy_of(spec), pool_routing)


def plural(n: int, word: str) -> str:
    """``n word`` or ``n words``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def needs(fp: Footprint) -> str:
    """What one replica's role needs, said for a rejection."""
    return (
        f"needs {plural(fp.workers, 'worker')} of {plural(fp.nodes_per_worker, 'node')}"
        f" x {plural(fp.gpus_per_node, 'GPU')}"
    )
