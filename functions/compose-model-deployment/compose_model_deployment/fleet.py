"""The fleet as a ModelDeployment reads it: every InferenceCluster and InferenceClass, and its own ModelReplicas.

Each call costs O(clusters + the deployment's own replicas), not O(fleet): the
deployment does not list the fleet's ModelReplicas. Each InferenceCluster publishes
what a scheduler needs of its pools (free accelerators per node and the replicas it
counted, ``status.capacity.pools[]``), and the deployment lists only the ModelReplicas
labelled as its own, in its namespace. ``modelplane.scheduling.view.build_view``
turns the clusters and classes into the ``FleetView`` the scheduler reads.

Objects are read in place from their protobuf Structs (``clusters``, ``replicas``) and
remembered by ``uid`` and ``resourceVersion``: in steady state a call reads only what
changed, and reuses the view itself when no cluster or class changed. The clusters and
classes of the previous call are remembered (every call reads them all); the replicas of
earlier calls too, up to a bound (each call reads another deployment's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.clusters import cluster_facts, model_facts
from compose_model_deployment.replicas import occupancy_of
from modelplane.capacity import ClusterInfo, DeploymentKey, Occupancy, replica_occupancy
from modelplane.fnkit.inputs import Read, read_one
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.structs import Fields, identity, name_and_deleting
from modelplane.kinds import API_VERSION
from modelplane.names import DEPLOYMENT_LABEL
from modelplane.scheduling import FleetView
from modelplane.scheduling.view import ClusterFacts, build_view
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

CLUSTERS = Requirement("clusters", API_VERSION, "InferenceCluster")
CLASSES = Requirement("classes", API_VERSION, "InferenceClass")
OWN_REPLICAS = Requirement("replicas", API_VERSION, "ModelReplica")
REQUIREMENTS = (CLUSTERS, CLASSES, OWN_REPLICAS)

T = TypeVar("T")
M = TypeVar("M", bound=pydantic.BaseModel)
_Identity = tuple[str, str]
_Reads = dict[_Identity, Read[Any]]
# The deployments' replicas remembered across calls, per generation (two are kept): each entry is one
# replica's ``Occupancy``, under 1 KiB, so a served function holds at most a few MiB of them.
REMEMBERED_REPLICAS = 4096


def request_requirements(rsp: fnv1.RunFunctionResponse, key: DeploymentKey) -> None:
    """Ask for every InferenceCluster and InferenceClass, and the ModelReplicas labelled as ``key``'s."""
    CLUSTERS.request(rsp)
    CLASSES.request(rsp)
    OWN_REPLICAS.request(rsp, labels={DEPLOYMENT_LABEL: key.name}, namespace=key.namespace)


@dataclass(frozen=True)
class Fleet:
    """The fleet as the scheduler reads it.

    Attributes:
        view: The clusters, classes and pools' free capacity.
        listed: The deployment's ModelReplicas as the API server lists them.
        going: Those of ``listed`` being deleted (they hold GPUs until gone).
        skipped: The objects left out because they do not validate, each with why.
        clusters: Every InferenceCluster as it came, by name, those that do not read included (what
            a cluster publishes for its replicas' Usages is read from its status whatever its spec says).
        named: The same, each with its name, in the order they came (a name listed twice, twice).
    """

    view: FleetView
    listed: list[Occupancy] = field(default_factory=list)
    going: list[Occupancy] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    clusters: Mapping[str, structpb.Struct] = field(default_factory=dict)
    named: Sequence[tuple[str, structpb.Struct]] = ()


class FleetReader:
    """Reads the fleet of each call, reusing what it read from objects it saw unchanged before.

    The API server gives an object a new ``resourceVersion`` whenever it changes,
    so an object with the ``uid`` and ``resourceVersion`` of one already read
    reads the same. Objects without both (rendered from files) are read every time.
    Of the clusters and classes, only those of the previous call are kept (every call
    reads them all), so memory follows the fleet's size. The replicas are the calling
    deployment's own: the previous call's are mostly another deployment's, so those of
    earlier calls are kept too, in two generations of at most ``replicas`` each.
    """

    def __init__(self, replicas: int = REMEMBERED_REPLICAS) -> None:
        """Start with nothing read; remember up to twice ``replicas`` replicas read."""
        self._previous: dict[str, _Reads] = {}
        self._older: _Reads = {}  # the replicas' older generation
        self._replicas = replicas
        self._view: tuple[tuple[_Identity, ...], FleetView] | None = None

    def read(self, req: fnv1.RunFunctionRequest, key: DeploymentKey) -> Fleet:
        """Read the fetched InferenceClusters, InferenceClasses and the ModelReplicas of deployment ``key``."""
        clusters, cluster_ids, structs = self._read_each(CLUSTERS, req, cluster_facts, InferenceCluster, model_facts)
        classes, class_ids, _ = self._read_each(CLASSES, req, None, InferenceClass, _same)
        replicas, _, listed = self._read_each(OWN_REPLICAS, req, occupancy_of, ModelReplica, replica_occupancy)
        skipped = [r.skipped for reads in (clusters, classes, replicas) for r in reads if r.skipped is not None]
        ids = [*cluster_ids, *class_ids]
        identities = tuple(i for i in ids if i is not None) if None not in ids else None
        view = self._view[1] if self._view is not None and identities == self._view[0] else None
        if view is None:
            view = _view(structs, clusters, classes)
            if identities is not None:
                self._view = (identities, view)
        # Only its own, in its namespace: a label selector is no proof of ownership.
        mine = [h for h in _values(replicas) if h.deployment == key and h.namespace == key.namespace]
        deleting = {name for name, gone in (name_and_deleting(s.fields) for s in listed) if gone}
        going = [h for h in mine if h.name in deleting]
        # The name a cluster read with (remembered by uid and resourceVersion), else read in place: every
        # cluster of the fleet is named at every call, so not by reading its struct again.
        named = [
            (read.value.info.name if read.value is not None else name_and_deleting(struct.fields)[0], struct)
            for struct, read in zip(structs, clusters, strict=True)
        ]
        return Fleet(view, mine, going, skipped, dict(named), named)

    def _read_each(
        self,
        requirement: Requirement,
        req: fnv1.RunFunctionRequest,
        fast: Callable[[Fields], T | None] | None,
        model: type[M],
        of_model: Callable[[M], T | None],
    ) -> tuple[list[Read[T]], list[_Identity | None], list[structpb.Struct]]:
        previous = self._previous.get(requirement.name, {})
        # The replicas' reads go on into the same generation (the older one is looked up too); the others' start anew.
        across = requirement is OWN_REPLICAS
        older = self._older if across else {}
        current: _Reads = previous if across else {}
        reads: list[Read[T]] = []
        identities: list[_Identity | None] = []
        structs = list(requirement.structs(req))
        for struct in structs:
            found = identity(struct.fields)
            read = (previous.get(found) or older.get(found)) if found is not None else None
            if read is None:
                read = read_one(requirement.kind, struct, fast, model, of_model)
            if found is not None:
                current[found] = read
            reads.append(read)
            identities.append(found)
        if across and len(current) >= self._replicas:
            self._older, current = current, {}
        self._previous[requirement.name] = current
        return reads, identities, structs


def _view(
    structs: Sequence[structpb.Struct], clusters: list[Read[ClusterFacts]], classes: list[Read[InferenceClass]]
) -> FleetView:
    """Build the view; a cluster that exists but does not read is unreadable, or leaving when being deleted."""
    facts: list[ClusterFacts] = []
    unreadable: dict[str, str] = {}
    for struct, read in zip(structs, clusters, strict=True):
        if read.value is not None:
            facts.append(read.value)
            continue
        name, deleting = name_and_deleting(struct.fields)
        if not name:
            continue
        if deleting:
            # Being deleted is the user's act whatever else it says: its replicas leave.
            facts.append(ClusterFacts(_leaving(name)))
        else:
            unreadable[name] = read.why or "it has no spec"
    return build_view(facts, [c.value for c in classes if c.value is not None], unreadable=unreadable)


def _leaving(name: str) -> ClusterInfo:
    return ClusterInfo(name, {}, cordoned=False, ready=False, not_ready="it cannot be read", pools=(), deleting=True)


def _same(klass: InferenceClass) -> InferenceClass:
    return klass


def _values(reads: Iterable[Read[T]]) -> list[T]:
    return [r.value for r in reads if r.value is not None]
