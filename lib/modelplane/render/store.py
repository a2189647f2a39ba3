"""The in-memory API server the render engine reconciles against.

Crossplane's render engine (``crossplane internal render``) runs the real XR
reconciler against a fake client over one store occupancy, in this order, the
XR, the observed composed resources, the required resources and the
credentials. Objects are keyed by apiVersion, kind, namespace and name, so a
later one replaces an earlier one with the same key: a required resource that
is the XR itself replaces the XR the reconciler then reads.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.structs import to_struct

__all__ = ["Key", "Store", "key_of"]

Key = tuple[str, str, str, str, str]  # group, version, kind, namespace, name


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def key_of(obj: Mapping[str, Any]) -> Key:
    """Where ``obj`` lives in the store."""
    meta = obj.get("metadata") or {}
    group, version = _group_version(str(obj.get("apiVersion", "")))
    return group, version, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Store:
    """Objects by key; what reads return is a copy."""

    def __init__(self, objects: Iterable[Mapping[str, Any]]) -> None:
        """Load ``objects`` in order (a later one replaces an earlier one with the same key)."""
        self._objects: dict[Key, dict[str, Any]] = {}
        for obj in objects:
            self.put(obj)

    def put(self, obj: Mapping[str, Any]) -> None:
        """Create or replace ``obj``."""
        self._objects[key_of(obj)] = copy.deepcopy(dict(obj))

    def delete(self, key: Key) -> None:
        """Remove the object at ``key``, if any."""
        self._objects.pop(key, None)

    def get(self, key: Key) -> dict[str, Any] | None:
        """The object at ``key``, or None."""
        found = self._objects.get(key)
        return copy.deepcopy(found) if found is not None else None

    def fetch(self, rs: fnv1.ResourceSelector) -> fnv1.Resources:
        """Answer a function's resource selector, as ``ExistingRequiredResourcesFetcher`` does."""
        out = fnv1.Resources()
        group, version = _group_version(rs.api_version)
        if rs.WhichOneof("match") == "match_name":
            found = self._objects.get((group, version, rs.kind, rs.namespace, rs.match_name))
            if found is not None:
                out.items.add().resource.CopyFrom(to_struct(found))
            return out
        labels = dict(rs.match_labels.labels) if rs.WhichOneof("match") == "match_labels" else {}
        items = []
        for (g, v, kind, namespace, _), obj in self._objects.items():
            if (g, kind) != (group, rs.kind) or (version and v and version != v):
                continue
            if rs.namespace and namespace != rs.namespace:
                continue
            have = (obj.get("metadata") or {}).get("labels") or {}
            if all(have.get(k) == val for k, val in labels.items()):
                items.append(obj)
        # Sorted by namespace and name, so the answer does not depend on input order.
        for obj in sorted(items, key=lambda o: "/".join(key_of(o)[3:])):
            out.items.add().resource.CopyFrom(to_struct(obj))
        return out
