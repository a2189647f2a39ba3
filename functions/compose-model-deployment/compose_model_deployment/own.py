"""What a ModelDeployment already runs, from its own observed composed resources.

The fleet's ModelReplica list (a required resource) can be empty, stale or
leave the deployment's replicas out; the observed composed resources cannot:
they are what Crossplane composed for this deployment. So the deployment reads
its replicas (``replica-N``) from them: where each runs, what shape, whether it
is Ready and where it is reachable. A composed replica that does not read is
kept exactly as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb

from compose_model_deployment.fleet import read_replica
from modelplane.capacity import DeploymentKey, Holding
from modelplane.names import replica_key_ordinal
from modelplane.scheduling import serving_shape, shape_revision
from modelplane.scheduling.revision import ROLE_KEYS, SHAPE_KEYS


@dataclass(frozen=True)
class OwnReplica:
    """One composed ModelReplica as observed.

    Attributes:
        holding: Where it runs and what it holds, with the revision of the shape it runs.
        spec: Its observed spec (a view into the request: copied only when it is kept as is).
        url: The URL it reports in ``status.endpoint``, if any.
        host: The Host header it reports there, if any.
    """

    holding: Holding
    spec: structpb.Struct
    url: str | None = None
    host: str | None = None


@dataclass(frozen=True)
class Own:
    """The deployment's composed replicas by ordinal: those that read, and why the others do not."""

    replicas: dict[int, OwnReplica] = field(default_factory=dict)
    unreadable: dict[int, str] = field(default_factory=dict)


_KEYS = (*SHAPE_KEYS, *ROLE_KEYS)
REPLACES_ANNOTATION = "modelplane.ai/replaces"
"""On a replica placed because another's cluster is lost: that replica's name (failover holds while it is lost)."""


def struct_shape(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The serving shape of a spec's Struct ``fields`` as plain values (``modelplane.scheduling.serving_shape``)."""
    return serving_shape({k: json_format.MessageToDict(spec[k]) for k in (*SHAPE_KEYS, *ROLE_KEYS) if k in spec})


def read_own(req: fnv1.RunFunctionRequest, key: DeploymentKey) -> Own:
    """Read the deployment ``key``'s composed ModelReplicas from ``req``'s observed resources."""
    own = Own()
    # A deployment's replicas share a shape or two: hash each distinct one once (1,000 replicas: 0.35 s).
    revisions: dict[tuple[bytes, ...], str] = {}
    for name in sorted(req.observed.resources):
        ordinal = replica_key_ordinal(name)
        if ordinal is None:
            continue
        struct = req.observed.resources[name].resource
        holding, why = read_replica(struct)
        if holding is not None and not holding.roles:
            why = "its spec names no pool"
        if holding is None or why:
            own.unreadable[ordinal] = why
            continue
        spec = struct.fields["spec"].struct_value
        endpoint = _object(struct.fields.get("status"), "endpoint")
        exact = tuple(spec.fields[k].SerializeToString(deterministic=True) if k in spec.fields else b"" for k in _KEYS)
        if exact not in revisions:
            revisions[exact] = shape_revision(struct_shape(spec.fields))
        metadata = _object_of(struct.fields.get("metadata"))
        replaces = _text(_object(metadata.fields.get("annotations"), "") if metadata else None, REPLACES_ANNOTATION)
        own.replicas[ordinal] = OwnReplica(
            holding=replace(holding, deployment=key, revision=revisions[exact], replaces=replaces or ""),
            spec=spec,
            url=_text(endpoint, "url"),
            host=_text(endpoint, "host"),
        )
    return own


def _object_of(value: structpb.Value | None) -> structpb.Struct | None:
    return value.struct_value if value is not None and value.HasField("struct_value") else None


def _object(value: structpb.Value | None, name: str) -> structpb.Struct | None:
    if value is None or not value.HasField("struct_value"):
        return None
    if not name:
        return value.struct_value
    inner = value.struct_value.fields.get(name)
    return inner.struct_value if inner is not None and inner.HasField("struct_value") else None


def _text(struct: structpb.Struct | None, name: str) -> str | None:
    value = struct.fields.get(name) if struct is not None else None
    if value is None or not value.HasField("string_value"):
        return None
    return value.string_value or None
