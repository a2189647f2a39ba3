"""Never drop what runs: one ledger accounts for every observed composed resource of a call.

Crossplane deletes a composed resource that is missing from a function's desired
state. So every writer goes through the call's ``Ledger``, and each observed
composed resource ends the call in one of three ways:

- **desired**: written as the function composes it now (``put``, ``carry``);
- **kept**: carried over as observed (``keep``, ``keep_all``), with why: an input
  is missing or unreadable, or the resource itself cannot be read;
- **removed**: left out on purpose, for the user's reason (``remove``,
  ``remove_unwritten``): a deployment scaled down, a pool deleted from the
  spec, another scheduler chosen.

The runner audits the ledger once ``compose`` returns (``guard``): an observed
resource none of these accounts for is kept unchanged and a warning names it, so
a writer's bug is never an outage. A Fatal result applies nothing at all
(``modelplane.fnkit.runner.fatal``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson

# Fields the API server or a controller owns; desired state must not claim them.
_SERVER_METADATA = ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "ownerReferences")
_NAMED = 5  # resources named in the guard's warning; the rest are counted


class Ledger:
    """What one call does with each observed composed resource: desired, kept (why) or removed (why)."""

    def __init__(self, req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        """Start a call's ledger: nothing accounted for yet."""
        self.req = req
        self.rsp = rsp
        self._kept: dict[str, str] = {}
        self._removed: dict[str, str] = {}

    @property
    def kept(self) -> Mapping[str, str]:
        """The resources kept as observed, with why."""
        return self._kept

    @property
    def removed(self) -> Mapping[str, str]:
        """The observed resources removed on purpose, with the user's reason."""
        return self._removed

    def put(self, key: str, obj: Mapping[str, Any], *, ready: bool | None = None) -> None:
        """Desire ``obj`` under ``key``, and say whether it is ready (Crossplane derives it when None)."""
        # As ``resource.update`` does (each top-level field replaced whole), from a Struct built once per
        # content: a function writes the same objects call after call. Crossplane reads it back as Go
        # does (integral numbers as ints); in-process, the render engine finds that read remembered.
        written = obj if type(obj) is dict else dict(obj)  # a plain dict: what equal content is remembered by
        self.rsp.desired.resources[key].resource.MergeFromString(protojson.struct_wire(written, read_back=True))
        if ready is not None:
            self.mark(key, ready=ready)

    def mark(self, key: str, *, ready: bool) -> None:
        """Say whether the desired resource ``key`` is ready."""
        self.rsp.desired.resources[key].ready = fnv1.READY_TRUE if ready else fnv1.READY_FALSE

    def carry(self, key: str, why: str, written: Mapping[str, Any], fields: Sequence[str] = ("spec",)) -> bool:
        """Desire ``written`` under ``key`` with ``fields`` carried unchanged from the observed resource.

        For a resource whose metadata is written anew while what it runs is kept (a held
        ModelReplica, an endpoint without traffic). Returns False, writing nothing, when
        ``key`` is not observed.
        """
        observed = self.req.observed.resources.get(key)
        if observed is None:
            return False
        desired = self.rsp.desired.resources[key].resource
        desired.Clear()
        desired.update(dict(written))
        for name in fields:
            if name in observed.resource.fields:
                desired.fields[name].CopyFrom(observed.resource.fields[name])
        self._kept[key] = why
        return True

    def keep(self, keys: Iterable[str], why: str, *, annotations: Mapping[str, str] | None = None) -> list[str]:
        """Keep the observed resources ``keys`` exactly as they are (``annotations`` merged in); return those kept.

        Status and server-owned metadata are left out. A resource already desired, or not
        observed, is not touched.
        """
        kept = []
        for key in sorted(set(keys)):
            observed = self.req.observed.resources.get(key)
            if observed is None or key in self.rsp.desired.resources:
                continue
            self.rsp.desired.resources[key].resource.CopyFrom(_without_server_fields(observed.resource))
            if annotations:
                meta = self.rsp.desired.resources[key].resource.fields["metadata"].struct_value
                meta.fields["annotations"].struct_value.update(dict(annotations))
            self._kept[key] = why
            kept.append(key)
        return kept

    def keep_all(self, why: str) -> int:
        """Keep every observed resource not desired yet; return how many."""
        return len(self.keep(self.req.observed.resources, why))

    def remove(self, keys: Iterable[str], why: str) -> None:
        """Leave the observed resources ``keys`` out on purpose, for the user's reason ``why``."""
        for key in keys:
            if key in self.req.observed.resources and key not in self.rsp.desired.resources:
                self._removed[key] = why

    def remove_unwritten(self, family: Callable[[str], bool], why: Callable[[str], str]) -> None:
        """Remove each observed resource of ``family`` this call neither desired nor kept, for ``why(key)``."""
        desired = self.rsp.desired.resources
        for key in sorted(self.req.observed.resources):
            if family(key) and key not in desired and key not in self._removed:
                self._removed[key] = why(key)

    def unaccounted(self) -> list[str]:
        """The observed resources neither desired, kept nor removed, sorted."""
        desired, removed = self.rsp.desired.resources, self._removed
        return sorted(k for k in self.req.observed.resources if k not in desired and k not in removed)

    def guard(self) -> list[str]:
        """Keep whatever the call did not account for, warning that it did not; return what was kept."""
        missing = self.unaccounted()
        if not missing:
            return []
        self.keep(missing, "no writer accounted for it")
        more = f" and {len(missing) - _NAMED} more" if len(missing) > _NAMED else ""
        named = ", ".join(missing[:_NAMED]) + more
        response.warning(
            self.rsp, f"kept {named} unchanged: nothing in this call accounted for it (a bug in the function)"
        )
        return missing


def _without_server_fields(struct: structpb.Struct) -> structpb.Struct:
    out = structpb.Struct()
    out.CopyFrom(struct)
    if "status" in out.fields:
        del out.fields["status"]
    meta = out.fields.get("metadata")
    if meta is not None and meta.HasField("struct_value"):
        for key in _SERVER_METADATA:
            if key in meta.struct_value.fields:
                del meta.struct_value.fields[key]
    return out
