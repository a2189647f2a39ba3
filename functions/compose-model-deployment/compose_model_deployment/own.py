"""What a ModelDeployment already runs, from its own observed composed resources.

The fleet's ModelReplica list (a required resource) can be empty, stale or
leave the deployment's replicas out; the observed composed resources cannot:
they are what Crossplane composed for this deployment. So the deployment reads
its replicas (``replica-N``) from them: where each runs, what shape, whether it
is Ready and where it is reachable. A composed replica that does not read is
kept exactly as it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.replicas import read_replica
from modelplane import protojson
from modelplane.capacity import DeploymentKey, Occupancy
from modelplane.fnkit.structs import bounds, readiness_at
from modelplane.memo import once
from modelplane.names import (
    PLACED_BY_ANNOTATION,
    REPLACES_ANNOTATION,
    REVISION_LABEL,
    replica_key_ordinal,
    replica_ordinal,
)
from modelplane.routing.backend_tls import UpstreamTLS, read_tls
from modelplane.scheduling import DecidedBy, Decision, serving_shape, shape_revision
from modelplane.scheduling.revision import CACHE_KEYS, ROLE_KEYS, SHAPE_KEYS
from modelplane_models.model_deployment import Placement1 as StatusPlacement


@dataclass(frozen=True)
class OwnReplica:
    """One composed ModelReplica as observed.

    Attributes:
        occupancy: Where it runs and what it holds, with the revision of the shape it runs.
        spec: Its observed spec (a view into the request: copied only when it is kept as is).
        url: The URL it reports in ``status.endpoint``, if any.
        host: The Host header it reports there, if any.
        tls: How the control plane verifies its gateway, as it reports it there (https only), if any.
        placed_by: Its ``PLACED_BY_ANNOTATION`` as written (kept as it is), if any.
    """

    occupancy: Occupancy
    spec: structpb.Struct
    url: str | None = None
    host: str | None = None
    tls: UpstreamTLS | None = None
    placed_by: str | None = None

    @property
    def decision(self) -> Decision | None:
        """Why it was placed where it runs, as recorded when it was placed; None when not recorded or unreadable."""
        return read_placed_by(self.placed_by) if self.placed_by is not None else None


@dataclass(frozen=True)
class Own:
    """The deployment's composed replicas by ordinal: those that read, and why the others do not.

    ``unsure`` holds the ordinals of replicas that read but do not say whether they are Ready
    (no status yet, no Ready condition, or one that is neither True nor False) or carry no
    revision label to vouch for their spec: a choice of which replica to retire or remove would
    hang on them. Writing them back (with their label) settles the latter by the next call.

    ``going`` holds the replicas being deleted (``metadata.deletionTimestamp``): retired or
    removed by an earlier call, or deleted by hand. They are not the deployment's any more: never
    written back (a write could create one again once it is gone), counted or retired again;
    they only hold their GPUs and ordinals until they are gone.
    """

    replicas: dict[int, OwnReplica] = field(default_factory=dict)
    unreadable: dict[int, str] = field(default_factory=dict)
    unsure: set[int] = field(default_factory=set)
    going: dict[int, Occupancy | None] = field(default_factory=dict)


_KEYS = (*SHAPE_KEYS, *ROLE_KEYS, *CACHE_KEYS)
_WHY_LENGTH = bounds(StatusPlacement, "why").max_length  # status.placements[].why, where it is shown


def placed_by(decision: Decision) -> str:
    """The ``PLACED_BY_ANNOTATION`` value recording ``decision``: deterministic, compact JSON."""
    body = {"decidedBy": str(decision.decided_by), "why": decision.message[:_WHY_LENGTH]}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=4096)  # a replica's record is read at every call of its deployment: once per distinct text
def read_placed_by(text: str) -> Decision | None:
    """The decision a ``PLACED_BY_ANNOTATION`` value records; None when it does not read as one (edited by hand)."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    decided_by, why = body.get("decidedBy"), body.get("why")
    if decided_by not in _DECIDED_BY or not isinstance(why, str) or not why:
        return None
    return Decision(DecidedBy(decided_by), why[:_WHY_LENGTH])


_DECIDED_BY = frozenset(str(d) for d in DecidedBy)


def struct_shape(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The serving shape of a spec's Struct ``fields`` as plain values (``modelplane.scheduling.serving_shape``)."""
    return serving_shape({k: json_format.MessageToDict(spec[k]) for k in _KEYS if k in spec})


# Revisions by the exact bytes of the shape's fields: a fleet's deployments and replicas share a few shapes.
_REVISIONS: dict[tuple[bytes, ...], str] = {}
_MAX_REVISIONS = 4096


def spec_revision(spec: Mapping[str, Any]) -> str:
    """``shape_revision`` of a spec's Struct ``fields``, hashed once per distinct shape."""
    exact = tuple(spec[k].SerializeToString(deterministic=True) if k in spec else b"" for k in _KEYS)
    found = _REVISIONS.get(exact)
    if found is None:
        if len(_REVISIONS) >= _MAX_REVISIONS:
            _REVISIONS.clear()
        found = _REVISIONS[exact] = shape_revision(struct_shape(spec))
    return found


@dataclass(frozen=True)
class _Reading:
    """What one composed replica reads as for one deployment: everything ``read_own`` takes of it but its spec.

    ``going``: it is being deleted (with what it holds, or None when that does not read);
    ``unreadable``: why it cannot be read; else ``occupancy``, ``unsure`` and what its status and
    annotations say (``OwnReplica``).
    """

    going: bool = False
    held: Occupancy | None = None
    unreadable: str | None = None
    unsure: bool = False
    url: str | None = None
    host: str | None = None
    tls: UpstreamTLS | None = None
    placed_by: str | None = None


# What each composed replica reads as, by its exact bytes and the deployment reading it: a deployment reads
# its replicas at every call, mostly unchanged since the last. The bytes pin everything read (the replica
# alone); the results are shared, read-only (frozen).
_READINGS: dict[tuple[bytes, DeploymentKey], _Reading] = {}
_MAX_READINGS = 8192


def _reading(struct: structpb.Struct, key: DeploymentKey) -> _Reading:
    """``_read``, once per distinct replica and deployment."""
    return once(_READINGS, (struct.SerializeToString(), key), partial(_read, struct, key), _MAX_READINGS)


def forget() -> None:
    """Forget the revisions already hashed and the replicas already read (a cold read, for the bench)."""
    _REVISIONS.clear()
    _READINGS.clear()
    read_placed_by.cache_clear()


def read_own(req: fnv1.RunFunctionRequest, key: DeploymentKey) -> Own:
    """Read the deployment ``key``'s composed ModelReplicas from ``req``'s observed resources."""
    own = Own()
    for name in sorted(req.observed.resources):
        ordinal = replica_key_ordinal(name)
        if ordinal is None:
            continue
        struct = req.observed.resources[name].resource
        read = _reading(struct, key)
        if read.going:
            own.going[ordinal] = read.held
        elif read.unreadable is not None:
            own.unreadable[ordinal] = read.unreadable
        elif read.held is not None:
            if read.unsure:
                own.unsure.add(ordinal)
            own.replicas[ordinal] = OwnReplica(
                read.held, struct.fields["spec"].struct_value, read.url, read.host, read.tls, read.placed_by
            )
    return own


def _read(struct: structpb.Struct, key: DeploymentKey) -> _Reading:
    """What one composed replica of the deployment ``key`` reads as."""
    occupancy, why = read_replica(struct)
    metadata = _object_of(struct.fields.get("metadata"))
    if _deleting(metadata):
        # Its GPUs are held as it reads; one that does not read still keeps its ordinal.
        held = replace(occupancy, deployment=key, ready=False) if occupancy and occupancy.roles else None
        return _Reading(going=True, held=held)
    if occupancy is not None and not occupancy.roles:
        why = "its spec names no pool"
    if occupancy is None or why:
        return _Reading(unreadable=why)
    spec = struct.fields["spec"].struct_value
    endpoint = _object(struct.fields.get("status"), "endpoint")
    revision = spec_revision(spec.fields)  # a deployment's replicas share a shape or two: hashed once
    # The revision label is written with the spec: a spec that does not hash to it was changed (or
    # corrupted) behind the deployment's back, so what it runs is not known: keep it as it is.
    why = _revision_problem(metadata, revision)
    if why:
        return _Reading(unreadable=why)
    # Which replica to retire hangs on it: a Ready condition about an older spec says nothing.
    ready = readiness_at(struct.fields).settled
    annotations = _object(metadata.fields.get("annotations"), "") if metadata else None
    replaces = _text(annotations, REPLACES_ANNOTATION)
    return _Reading(
        held=replace(occupancy, deployment=key, revision=revision, replaces=replaces or "", ready=bool(ready)),
        unsure=ready is None or not _labelled(metadata),
        url=_text(endpoint, "url"),
        host=_text(endpoint, "host"),
        tls=_tls(endpoint),
        placed_by=_string(annotations, PLACED_BY_ANNOTATION),
    )


def _revision_problem(metadata: structpb.Struct | None, revision: str) -> str:
    """Why the replica's revision label contradicts its spec; "" when it agrees or is absent.

    Without the label (a replica composed before revisions were labelled, or by hand, or a label
    lost) its spec is read as it is, but does not settle a retirement (``Own.unsure``).
    """
    labels = _object(metadata.fields.get("labels"), "") if metadata is not None else None
    label = labels.fields.get(REVISION_LABEL) if labels is not None else None
    where = f"metadata.labels[{REVISION_LABEL}]"
    if label is None:
        return ""
    if not label.HasField("string_value"):
        return f"{where}: expected a string, the revision of its spec ({revision})"
    if label.string_value != revision:
        return f"{where}: {label.string_value[:_SHOWN]!r}, but its spec is revision {revision}"
    return ""


def _labelled(metadata: structpb.Struct | None) -> bool:
    labels = _object(metadata.fields.get("labels"), "") if metadata is not None else None
    return labels is not None and REVISION_LABEL in labels.fields


_SHOWN = 63  # a label value's longest valid length: more is never a revision


def add_going(own: Own, listed: Iterable[Occupancy], key: DeploymentKey) -> None:
    """Take as going the deployment's replicas the fleet's list shows being deleted.

    Crossplane may stop passing a composed resource it is deleting while the fleet's list
    still shows it: read as the deployment's from the list, it would be adopted, and written
    again, while it goes. A deletion is never undone, so the list's word wins over an
    observed copy that does not show it yet.
    """
    for occupancy in listed:
        ordinal = replica_ordinal(key.name, occupancy.name) if occupancy.deployment == key else None
        if ordinal is None or ordinal in own.unreadable or ordinal in own.going:
            continue
        own.replicas.pop(ordinal, None)
        own.unsure.discard(ordinal)
        own.going[ordinal] = replace(occupancy, ready=False)


def _deleting(metadata: structpb.Struct | None) -> bool:
    value = metadata.fields.get("deletionTimestamp") if metadata is not None else None
    return value is not None and value.HasField("string_value") and bool(value.string_value)


def _object_of(value: structpb.Value | None) -> structpb.Struct | None:
    return value.struct_value if value is not None and value.HasField("struct_value") else None


def _object(value: structpb.Value | None, name: str) -> structpb.Struct | None:
    if value is None or not value.HasField("struct_value"):
        return None
    if not name:
        return value.struct_value
    inner = value.struct_value.fields.get(name)
    return inner.struct_value if inner is not None and inner.HasField("struct_value") else None


def _tls(endpoint: structpb.Struct | None) -> UpstreamTLS | None:
    value = endpoint.fields.get("tls") if endpoint is not None else None
    if value is None or not value.HasField("struct_value"):
        return None
    return read_tls(protojson.struct_to_dict(value.struct_value))


def _text(struct: structpb.Struct | None, name: str) -> str | None:
    value = struct.fields.get(name) if struct is not None else None
    if value is None or not value.HasField("string_value"):
        return None
    return value.string_value or None


def _string(struct: structpb.Struct | None, name: str) -> str | None:
    """A string field as written, "" included (kept as it is); None when absent or not a string."""
    value = struct.fields.get(name) if struct is not None else None
    return value.string_value if value is not None and value.HasField("string_value") else None
