"""The fleet as the scheduler reads it, straight from the request's protobuf Structs.

Converting a Struct to a dict and validating it as a whole model costs about half
a millisecond an object: most of a call on a fleet of hundreds of clusters and
replicas. The scheduler needs a few fields of each cluster and replica, so they
are read in place into ``ClusterInfo`` and ``Holding``. Every field read is checked
as its generated model checks it (type, bounds, pattern, presence when required);
an object that does not read cleanly goes through its model instead, so it is
used, or skipped with the model's own message, exactly as the model decides.
Fields the scheduler does not read are not validated: a replica whose pod
template the API server would now refuse still holds its GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, TypeVar

import pydantic
from crossplane.function import resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.capacity import (
    ClusterInfo,
    DeploymentKey,
    Holding,
    Observed,
    PoolInfo,
    RoleHolding,
    Source,
    cluster_info,
    replica_holding,
    role_holding,
)
from modelplane.fnkit.required import Requirement
from modelplane.kinds import API_VERSION
from modelplane.names import REVISION_LABEL
from modelplane.topology import Role
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_replica import ModelReplica

CLUSTERS = Requirement("clusters", API_VERSION, "InferenceCluster")
CLASSES = Requirement("classes", API_VERSION, "InferenceClass")
REPLICAS = Requirement("replicas", API_VERSION, "ModelReplica")
REQUIREMENTS = (CLUSTERS, CLASSES, REPLICAS)

# The generated models' patterns, whole-string (pydantic's `$` does not match before a final newline).
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SOURCES = frozenset(Source)
_NULL = (None, "null_value")

Fields = Mapping[str, Any]
"""The ``fields`` of a protobuf Struct: names to ``Value`` messages."""
Value = Any
"""A ``google.protobuf.Value``, or None for a field that is absent."""


class _UnclearError(Exception):
    """A field does not read as its model expects: let the model parse the object."""


@dataclass(frozen=True)
class Fleet:
    """The fleet as the scheduler reads it.

    Attributes:
        clusters: The InferenceClusters with a name and a spec that are not being deleted.
        classes: The InferenceClasses that validate.
        replicas: What each ModelReplica with a name and a spec holds.
        skipped: The objects left out because they do not validate, each with why.
        unreadable: The InferenceClusters that exist but cannot be read, by name, with why.
        deleting: The InferenceClusters being deleted (left out of ``clusters``).
        draining: The InferenceClusters that drain (``spec.drain``).
        not_ready_since: For InferenceClusters whose Ready condition is not True, its
            ``lastTransitionTime`` as written (RFC 3339), when it has one.
        going: The ModelReplicas being deleted (also in ``replicas``: they hold GPUs until gone).
    """

    clusters: list[ClusterInfo]
    classes: list[InferenceClass]
    replicas: list[Holding]
    skipped: list[str]
    unreadable: dict[str, str] = field(default_factory=dict)
    deleting: frozenset[str] = frozenset()
    draining: frozenset[str] = frozenset()
    not_ready_since: dict[str, str] = field(default_factory=dict)
    going: list[Holding] = field(default_factory=list)


T = TypeVar("T")
M = TypeVar("M", InferenceCluster, InferenceClass, ModelReplica)
_Identity = tuple[str, str]


@dataclass(frozen=True)
class _Read(Generic[T]):
    """What one object reads as: a value (None: nothing to schedule with), or why it was left out."""

    value: T | None
    skipped: str | None = None
    why: str = ""  # for a skipped object: why, without its kind and name


class FleetReader:
    """Reads the fleet of each call, reusing what it read from objects it saw unchanged in the previous one.

    The API server gives an object a new ``resourceVersion`` whenever it changes,
    so an object with the ``uid`` and ``resourceVersion`` of one already read
    reads the same: in steady state a call reads only what changed. Objects
    without both (rendered from files) are read every time. Only the objects of
    the previous call are kept, so memory follows the fleet's size.
    """

    def __init__(self) -> None:
        """Start with nothing read."""
        self._previous: dict[str, dict[_Identity, _Read[Any]]] = {}

    def read(self, req: fnv1.RunFunctionRequest) -> Fleet:
        """Read the fetched InferenceClusters, InferenceClasses and ModelReplicas of ``req``."""
        clusters = self._read_each(CLUSTERS, req, _cluster, InferenceCluster, cluster_info)
        classes = self._read_each(CLASSES, req, None, InferenceClass, _same)
        replicas = self._read_each(REPLICAS, req, _holding, ModelReplica, replica_holding)
        skipped = [r.skipped for reads in (clusters, classes, replicas) for r in reads if r.skipped is not None]
        # A cluster being deleted is leaving the fleet; one that exists but does not read is not.
        deleting, unreadable = set(), {}
        for struct, read in zip(CLUSTERS.structs(req), clusters, strict=True):
            name, gone = _name_and_deleting(struct.fields)
            if gone:
                deleting.add(name)
            elif read.value is None and name:
                unreadable[name] = read.why or "it has no spec"
        present = [c for c in _values(clusters) if c.name not in deleting]
        draining, since = set(), {}
        names = {c.name for c in present}
        for struct in CLUSTERS.structs(req):
            name, drains, when = _drain_and_since(struct.fields)
            if name in names and drains:
                draining.add(name)
            if name in names and when:
                since[name] = when
        going = [
            read.value
            for struct, read in zip(REPLICAS.structs(req), replicas, strict=True)
            if read.value is not None and _name_and_deleting(struct.fields)[1]
        ]
        return Fleet(
            present,
            _values(classes),
            _values(replicas),
            skipped,
            unreadable,
            frozenset(deleting),
            frozenset(draining),
            since,
            going,
        )

    def _read_each(
        self,
        requirement: Requirement,
        req: fnv1.RunFunctionRequest,
        fast: Callable[[Fields], T | None] | None,
        model: type[M],
        of_model: Callable[[M], T | None],
    ) -> list[_Read[T]]:
        previous = self._previous.get(requirement.name, {})
        current: dict[_Identity, _Read[Any]] = {}
        reads: list[_Read[T]] = []
        for struct in requirement.structs(req):
            identity = _identity(struct.fields)
            read = previous.get(identity) if identity is not None else None
            if read is None:
                read = _read_one(requirement, struct, fast, model, of_model)
            if identity is not None:
                current[identity] = read
            reads.append(read)
        self._previous[requirement.name] = current
        return reads


def _same(klass: InferenceClass) -> InferenceClass:
    return klass


def _name_and_deleting(fields: Fields) -> tuple[str, bool]:
    """An object's ``metadata.name`` ("" when it has none) and whether it has a ``deletionTimestamp``."""
    metadata = fields.get("metadata")
    if metadata is None or not metadata.HasField("struct_value"):
        return "", False
    meta = metadata.struct_value.fields
    name = meta.get("name")
    deleting = meta.get("deletionTimestamp")
    return (
        name.string_value if name is not None else "",
        deleting is not None and deleting.WhichOneof("kind") not in _NULL,
    )


def _drain_and_since(fields: Fields) -> tuple[str, bool, str]:
    """A cluster's name, whether ``spec.drain`` is true, and when its Ready condition last left True ("")."""
    name, _ = _name_and_deleting(fields)
    spec = fields.get("spec")
    drain = spec.struct_value.fields.get("drain") if spec is not None and spec.HasField("struct_value") else None
    drains = drain is not None and drain.HasField("bool_value") and drain.bool_value
    status = fields.get("status")
    when = ""
    conditions = status.struct_value.fields.get("conditions") if status is not None else None
    for item in conditions.list_value.values if conditions is not None and conditions.HasField("list_value") else ():
        condition = item.struct_value.fields if item.HasField("struct_value") else {}
        kind, state, time = condition.get("type"), condition.get("status"), condition.get("lastTransitionTime")
        if kind is not None and kind.string_value == "Ready":
            if state is not None and state.string_value != "True" and time is not None:
                when = time.string_value
            break
    return name, drains, when


def read_replica(struct: structpb.Struct) -> tuple[Holding | None, str]:
    """What one ModelReplica holds, read as the fleet's are; None and why when it cannot be read."""
    read = _read_one(REPLICAS, struct, _holding, ModelReplica, replica_holding)
    if read.value is None:
        return None, read.why or "it has no name or spec"
    return read.value, ""


def _values(reads: Iterable[_Read[T]]) -> list[T]:
    return [r.value for r in reads if r.value is not None]


def _identity(fields: Fields) -> _Identity | None:
    """The object's ``uid`` and ``resourceVersion``, when it has both."""
    metadata = fields.get("metadata")
    if metadata is None:
        return None
    meta = metadata.struct_value.fields
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    if uid is None or version is None or not uid.string_value or not version.string_value:
        return None
    return uid.string_value, version.string_value


def _read_one(
    requirement: Requirement,
    struct: structpb.Struct,
    fast: Callable[[Fields], T | None] | None,
    model: type[M],
    of_model: Callable[[M], T | None],
) -> _Read[T]:
    # One malformed object must not stop the fleet from being scheduled: leave it out and say so.
    if fast is not None:
        try:
            return _Read(fast(struct.fields))
        except _UnclearError:
            pass
    item = resource.struct_to_dict(struct)
    try:
        parsed = model.model_validate(item)
    except pydantic.ValidationError as err:
        metadata = item.get("metadata")
        name = metadata.get("name", "?") if isinstance(metadata, dict) else "?"
        first = err.errors()[0]
        why = f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}" if first["loc"] else str(first["msg"])
        return _Read(None, f"{requirement.kind} {name}: {first['msg']}", why)
    return _Read(of_model(parsed))


# Readers of one value. Absent and null read as None; anything else must have the model's type.
# A set oneof member reads as itself, an unset one as its zero value: only a zero needs asking which is set.


def _need(value: T | None) -> T:
    """A required field: absent or null does not validate."""
    if value is None:
        raise _UnclearError
    return value


def _null(value: Value) -> None:
    if value is not None and value.WhichOneof("kind") not in _NULL:
        raise _UnclearError


def _object(value: Value) -> Fields | None:
    if value is not None:
        fields: Fields = value.struct_value.fields
        if fields or value.HasField("struct_value"):
            return fields
    _null(value)
    return None


def _objects(value: Value, max_length: int | None = None) -> Sequence[Fields]:
    """A list of objects (empty when absent or null)."""
    if value is None:
        return ()
    items = value.list_value.values
    if not items and not value.HasField("list_value"):
        _null(value)
        return ()
    if max_length is not None and len(items) > max_length:
        raise _UnclearError
    return [_need(_object(item)) for item in items]


def _text(value: Value) -> str | None:
    if value is not None:
        text: str = value.string_value
        if text or value.HasField("string_value"):
            return text
    _null(value)
    return None


def _whole(value: Value, low: int | None = None, high: int | None = None) -> int | None:
    if value is not None:
        number: float = value.number_value
        if number or value.HasField("number_value"):
            if not number.is_integer() or (low is not None and number < low) or (high is not None and number > high):
                raise _UnclearError
            return int(number)
    _null(value)
    return None


def _flag(value: Value) -> bool | None:
    if value is not None:
        flag: bool = value.bool_value
        if flag or value.HasField("bool_value"):
            return flag
    _null(value)
    return None


@lru_cache(maxsize=4096)
def _is_label(text: str, max_length: int) -> bool:
    return len(text) <= max_length and _DNS_LABEL.fullmatch(text) is not None


@lru_cache(maxsize=4096)
def _is_subdomain(text: str) -> bool:
    return len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None


def _label(value: Value, max_length: int) -> str | None:
    """A DNS label (``^[a-z0-9]([-a-z0-9]*[a-z0-9])?$``) of at most ``max_length`` characters."""
    text = _text(value)
    if text is not None and not _is_label(text, max_length):
        raise _UnclearError
    return text


def _subdomain(value: Value) -> str | None:
    """A DNS subdomain of at most 253 characters."""
    text = _text(value)
    if text is not None and not _is_subdomain(text):
        raise _UnclearError
    return text


def _labels(value: Value) -> dict[str, str]:
    labels = _object(value)
    if labels is None:
        return {}
    return {key: _need(_text(text)) for key, text in labels.items()}


def _ready_condition(status: Fields | None) -> Fields | None:
    """The first condition of type ``Ready``."""
    for condition in _objects(status.get("conditions")) if status is not None else ():
        if _need(_text(condition.get("type"))) == "Ready":
            return condition
    return None


# InferenceCluster -> ClusterInfo, as ``modelplane.capacity.cluster_info`` reads the model.


def _node_pool(pool: Fields) -> tuple[str, str, int]:
    """A ``spec.nodePools[]`` entry as (name, class, nodes)."""
    name = _need(_label(pool.get("name"), 40))
    class_name = _need(_subdomain(pool.get("className")))
    count = _need(_whole(pool.get("nodeCount"), 0, 1000))
    _whole(pool.get("minNodeCount"), 0, 1000)
    most = _whole(pool.get("maxNodeCount"), 0, 1000)
    return name, class_name, most if most is not None else count


def _observed(status: Fields | None, classes: Mapping[str, str]) -> dict[str, Observed]:
    capacity = _object(status.get("capacity")) if status is not None else None
    observed: dict[str, Observed] = {}
    for pool in _objects(capacity.get("pools")) if capacity is not None else ():
        source = _text(pool.get("source"))
        if source is None or source == Source.DECLARED:
            continue  # derived from ModelReplicas, which capacity counts itself
        if source not in _SOURCES:
            raise _UnclearError
        name, class_name, in_use = _text(pool.get("name")), _text(pool.get("className")), _whole(pool.get("inUse"))
        if name is None or in_use is None:
            continue
        if name not in classes or (class_name is not None and class_name != classes[name]):
            continue
        observed.setdefault(name, Observed(Source(source), max(0, in_use)))
    return observed


def _not_ready(condition: Fields | None) -> str:
    if condition is None:
        return "no Ready condition yet"
    status = _need(_text(condition.get("status")))
    if status != "True":
        detail = ": ".join(x for x in (_text(condition.get("reason")), _text(condition.get("message"))) if x)
        return f"Ready is {status}" + (f" ({detail})" if detail else "")
    return ""


def _cluster(fields: Fields) -> ClusterInfo | None:
    metadata, spec = _object(fields.get("metadata")), _object(fields.get("spec"))
    status = _object(fields.get("status"))
    name = _text(metadata.get("name")) if metadata is not None else None
    labels = _labels(metadata.get("labels")) if metadata is not None else {}
    pools: list[tuple[str, str, int]] = []
    cordoned = None
    if spec is not None:
        cordoned = _flag(spec.get("cordoned"))
        pools = [_node_pool(p) for p in _objects(spec.get("nodePools"), 32)]
    not_ready = _not_ready(_ready_condition(status))
    observed = _observed(status, {p[0]: p[1] for p in pools})
    if not name or spec is None:
        return None
    return ClusterInfo(
        name=name,
        labels=labels,
        cordoned=bool(cordoned),
        ready=not not_ready,
        not_ready=not_ready,
        pools=tuple(PoolInfo(n, c, nodes, observed.get(n)) for n, c, nodes in pools),
    )


# ModelReplica -> Holding, as ``modelplane.capacity.replica_holding`` reads the model.


@dataclass(frozen=True)
class _Topology:
    tensor: int
    pipeline: int | None
    data: int | None
    dataLocal: int | None  # noqa: N815 - the API's field name, as ``TopologyLike`` reads it


@dataclass(frozen=True)
class _Workers:
    count: int | None
    topology: _Topology


_Shape = tuple[int | None, int, int | None, int | None, int | None]


def _shape(workers: Fields) -> _Shape:
    """A ``workers`` block as (count, tensor, pipeline, data, dataLocal)."""
    topology = _need(_object(workers.get("topology")))
    return (
        _whole(workers.get("count"), 1, 64),
        _need(_whole(topology.get("tensor"), 1, 32)),
        _whole(topology.get("pipeline"), 1, 64),
        _whole(topology.get("data"), 1, 2048),
        _whole(topology.get("dataLocal"), 1, 32),
    )


@lru_cache(maxsize=4096)
def _role_holding(role: Role, pool: str, shape: _Shape) -> RoleHolding:
    # Replicas share a few shapes and pools: build each role once.
    count, tensor, pipeline, data, data_local = shape
    return role_holding(role, pool, _Workers(count, _Topology(tensor, pipeline, data, data_local)))


def _role(role: Role, fields: Fields | None) -> RoleHolding | None:
    if fields is None:
        return None
    pool = _need(_label(fields.get("poolName"), 63))
    return _role_holding(role, pool, _shape(_need(_object(fields.get("workers")))))


def _holding(fields: Fields) -> Holding | None:
    metadata, spec = _object(fields.get("metadata")), _object(fields.get("spec"))
    status = _object(fields.get("status"))
    name = _text(metadata.get("name")) if metadata is not None else None
    namespace = _text(metadata.get("namespace")) if metadata is not None else None
    ready = False
    for condition in _objects(status.get("conditions")) if status is not None else ():
        if _need(_text(condition.get("type"))) == "Ready" and _need(_text(condition.get("status"))) == "True":
            ready = True
            break
    if spec is None:
        return None
    cluster = _need(_subdomain(_need(_object(spec.get("inferenceClusterRef"))).get("name")))
    owner = _object(spec.get("deploymentRef"))
    deployment = _need(_subdomain(owner.get("name"))) if owner is not None else None
    pool = _label(spec.get("poolName"), 63)
    workers = _object(spec.get("workers"))
    unified = _shape(workers) if workers is not None else None
    prefill = _role(Role.PREFILL, _object(spec.get("prefill")))
    decode = _role(Role.DECODE, _object(spec.get("decode")))
    if metadata is None or not name:
        return None
    roles: tuple[RoleHolding, ...] = ()
    if unified is not None and pool:
        roles = (_role_holding(Role.UNIFIED, pool, unified),)
    elif unified is None and prefill is not None and decode is not None:
        roles = (prefill, decode)
    namespace = namespace or ""
    return Holding(
        namespace=namespace,
        name=name,
        deployment=DeploymentKey(namespace, deployment) if deployment is not None else None,
        cluster=cluster,
        roles=roles,
        ready=ready,
        revision=_revision(metadata),
    )


def _revision(metadata: Fields) -> str:
    """The revision label a replica was composed with ("" without one).

    A replica of this deployment listed in the fleet but missing from its observed resources is then
    not mistaken for one of an older revision (and retired first) because its observed copy was lost.
    """
    labels = metadata.get("labels")
    label = (
        labels.struct_value.fields.get(REVISION_LABEL)
        if labels is not None and labels.HasField("struct_value")
        else None
    )
    return label.string_value if label is not None and label.HasField("string_value") else ""
