"""The in-memory API server the render engine reconciles against.

Crossplane's render engine (``crossplane internal render``) runs the real XR
reconciler against a fake client over one store occupancy, in this order, the
XR, the observed composed resources, the required resources and the
credentials. Objects are keyed by apiVersion, kind, namespace and name, so a
later one replaces an earlier one with the same key: a required resource that
is the XR itself replaces the XR the reconciler then reads.

A caller that renders many XRs against one large set of required resources (the
preview's fleet) hands them over once as a ``Catalog``: a versioned index shared by
every render, read through and never written, so a render costs what it reads, not
what the fleet holds. Each render's ``Store`` records which catalog entries it read
(``Reads``), so the caller knows when rendering again could give another answer.
A catalog given ``views`` tells a reader that looks at only part of an object (a ModelReplica
at its cluster's spec, not its capacity) the version at which that part last changed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2

from modelplane.protojson import copy_json
from modelplane.render.structs import to_struct, to_wire
from modelplane.render.wire import FIELD_1, length_delimited

__all__ = ["Answered", "Catalog", "Key", "Query", "Reads", "Store", "View", "key_of"]

Key = tuple[str, str, str, str, str]  # group, version, kind, namespace, name
# One catalog read: what was asked (a name, or a group/kind/namespace/labels query) and the versions it saw.
Query = tuple[str, str, str, str, str, tuple[tuple[str, str], ...] | None]
# What a reader's output depends on, of an object it reads: equal views, equal output. When in doubt, the whole object.
View = Callable[[Mapping[str, Any]], Hashable]
# A catalog's whole answer to a query (``Store.refill``): the catalog, the query, the object left out, what it matched.
Answered = tuple["Catalog", Query, Key | None, tuple[tuple[Key, int], ...]]


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def key_of(obj: Mapping[str, Any]) -> Key:
    """Where ``obj`` lives in the store."""
    meta = obj.get("metadata") or {}
    group, version = _group_version(str(obj.get("apiVersion", "")))
    return group, version, str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    """``obj``'s labels that a selector can match (string values)."""
    labels = (obj.get("metadata") or {}).get("labels")
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): v for k, v in labels.items() if isinstance(v, str)}


def _labels_match(obj: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == val for k, val in labels.items())


@dataclass
class _Entry:
    obj: dict[str, Any]
    version: int
    source: Mapping[str, Any]  # as put, before any resourceVersion was stamped on it
    struct: struct_pb2.Struct | None = None  # built on first read, shared by every render that reads it
    resource: bytes | None = None  # the same, as a Resource message's bytes (``_resource``)
    item: bytes | None = None  # the same, as an item of a Resources message's bytes (``_item``)
    # By reader kind (``Catalog`` views): what the reader sees of the object, and the version since when it has.
    seen: dict[str, tuple[Hashable, int]] = field(default_factory=dict)

    def version_for(self, reader: str) -> int:
        """The version of what ``reader`` sees of the object."""
        found = self.seen.get(reader)
        return self.version if found is None else found[1]


class Catalog:
    """Required resources shared by many renders: indexed by group and kind, versioned per object.

    The caller owns the objects it puts and must not change them afterwards (it puts a
    new object instead); a put whose content equals the stored one keeps its version.
    With ``stamp``, an object put without a ``metadata.resourceVersion`` gets its version
    there, as an API server would give it one: functions that remember what they read by
    ``uid`` and ``resourceVersion`` then read an unchanged object once.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        *,
        stamp: bool = False,
        views: Mapping[tuple[str, str], Mapping[str, View]] | None = None,
    ) -> None:
        """Load ``objects`` in order (a later one replaces an earlier one with the same key).

        ``views``, by the group and kind of an object read, then by the kind of its reader: what
        that reader's output depends on. A put that leaves a reader's view as it was keeps the
        version that reader is told (``answer``), so its render stands.
        """
        self._views = views or {}
        self._by_kind: dict[tuple[str, str], dict[Key, _Entry]] = {}
        # Keys by (group, kind, label, value): a label query reads its candidates, not the kind.
        self._by_label: dict[tuple[str, str, str, str], set[Key]] = {}
        # When each kind last changed, and the answers given since: unchanged kinds answer from memory.
        self._changed: dict[tuple[str, str], int] = {}
        self._answers: dict[tuple[Query, str], tuple[int, tuple[tuple[Key, int], ...]]] = {}
        # The last answer to each (query, hidden key), and the bytes of the Resources message it makes.
        self._resources: dict[tuple[Query, Key | None], tuple[tuple[tuple[Key, int], ...], bytes]] = {}
        self._clock = 0
        self._stamp = stamp
        for obj in objects:
            self.put(obj)

    def put(self, obj: Mapping[str, Any]) -> bool:
        """Create or replace ``obj``; return whether the catalog changed."""
        key = key_of(obj)
        bucket = self._by_kind.setdefault((key[0], key[2]), {})
        entry = bucket.get(key)
        if entry is not None and (entry.source is obj or entry.source == obj):
            return False
        self._clock += 1
        stored = dict(obj)
        meta = stored.get("metadata")
        if self._stamp and isinstance(meta, Mapping) and not meta.get("resourceVersion"):
            stored["metadata"] = {**meta, "resourceVersion": str(self._clock)}
        if entry is not None:
            self._unindex(key, entry)
        bucket[key] = _Entry(stored, self._clock, obj, seen=self._seen(key, stored, entry))
        for label in _labels(stored).items():
            self._by_label.setdefault((key[0], key[2], *label), set()).add(key)
        self._changed[key[0], key[2]] = self._clock
        return True

    def _seen(self, key: Key, obj: Mapping[str, Any], before: _Entry | None) -> dict[str, tuple[Hashable, int]]:
        """What each reader with a view of ``key``'s kind sees of ``obj``, and since which version."""
        seen = {}
        for reader, view in self._views.get((key[0], key[2]), {}).items():
            now = view(obj)
            was = before.seen.get(reader) if before is not None else None
            seen[reader] = (now, was[1] if was is not None and was[0] == now else self._clock)
        return seen

    def delete(self, key: Key) -> bool:
        """Remove the object at ``key``; return whether there was one."""
        entry = self._by_kind.get((key[0], key[2]), {}).pop(key, None)
        if entry is None:
            return False
        self._clock += 1
        self._unindex(key, entry)
        self._changed[key[0], key[2]] = self._clock
        return True

    def _unindex(self, key: Key, entry: _Entry) -> None:
        for label in _labels(entry.obj).items():
            self._by_label.get((key[0], key[2], *label), set()).discard(key)

    @property
    def clock(self) -> int:
        """The catalog's version: it moves on with every put or delete that changes it."""
        return self._clock

    def changed(self, group: str, kind: str) -> int:
        """The version at which an object of ``group`` and ``kind`` was last put or deleted (0: never)."""
        return self._changed.get((group, kind), 0)

    def entry(self, key: Key) -> _Entry | None:
        """The entry at ``key``, or None."""
        return self._by_kind.get((key[0], key[2]), {}).get(key)

    def fill(self, query: Query, into: fnv1.Resources, hidden: Key | None = None) -> None:
        """Add to ``into`` what a store answers ``query`` with from this catalog alone (never ``hidden``).

        Sorted by namespace and name, merged as one serialized message: each object's part of
        it is built once per version, the whole once per answer (a fleet's renders ask the same
        queries over and over), and parsing it is all a render pays.
        """
        if hidden is not None and (hidden[0], hidden[2]) != (query[0], query[2]):
            hidden = None  # not of the kind asked for: the same answer as for any other reader
        answer = self.answer(query)
        slot = (query, hidden)
        kept = self._resources.get(slot)
        if kept is None or kept[0] != answer:
            kept = self._resources[slot] = (answer, b"".join(self._items(answer, hidden)))
        into.MergeFromString(kept[1])

    def _items(self, answer: tuple[tuple[Key, int], ...], hidden: Key | None) -> Iterator[bytes]:
        for key, _ in _listed(answer, hidden):
            entry = self.entry(key)
            if entry is not None:
                yield _item(entry)

    def update(
        self,
        before: tuple[tuple[Key, int], ...],
        now: tuple[tuple[Key, int], ...],
        into: fnv1.Resources,
        hidden: Key | None = None,
    ) -> bool:
        """Bring ``into`` from what ``fill`` wrote for the answer ``before`` to the answer ``now``, item by item.

        Only the objects whose version changed are written again. Returns False, writing nothing,
        when ``now`` does not list the same objects in the same order (``fill`` then writes it anew).
        """
        was, listed = _listed(before, hidden), _listed(now, hidden)
        if len(into.items) != len(was) or [k for k, _ in was] != [k for k, _ in listed]:
            return False
        entries = [self.entry(key) for key, _ in listed]
        if any(e is None for e in entries):
            return False
        for i, ((_, old), (_, new), entry) in enumerate(zip(was, listed, entries, strict=True)):
            if old != new and entry is not None:
                item = into.items[i]
                item.Clear()
                item.MergeFromString(_resource(entry))
        return True

    def kind(self, group: str, kind: str) -> Iterator[tuple[Key, _Entry]]:
        """Every entry of ``group`` and ``kind``."""
        yield from self._by_kind.get((group, kind), {}).items()

    def answer(self, query: Query, reader: str = "") -> tuple[tuple[Key, int], ...]:
        """The keys and versions ``query`` matches now (what a render that asked it would see).

        The versions are those of what ``reader`` (a kind) sees of each object (see ``views``).
        """
        group, version, kind, namespace, name, labels = query
        if labels is None:
            entry = self.entry((group, version, kind, namespace, name))
            return () if entry is None else (((group, version, kind, namespace, name), entry.version_for(reader)),)
        changed = self._changed.get((group, kind), 0)
        remembered = self._answers.get((query, reader))
        if remembered is not None and remembered[0] >= changed:
            return remembered[1]
        bucket = self._by_kind.get((group, kind), {})
        entries: Iterable[tuple[Key, _Entry]]
        if labels:
            candidates = min((self._by_label.get((group, kind, *label), set()) for label in labels), key=len)
            entries = ((k, bucket[k]) for k in candidates if k in bucket)
        else:
            entries = bucket.items()
        wanted = dict(labels)
        found = tuple(
            sorted(
                (k, e.version_for(reader))
                for k, e in entries
                if not (version and k[1] and version != k[1])
                and not (namespace and k[3] != namespace)
                and _labels_match(e.obj, wanted)
            )
        )
        self._answers[query, reader] = (self._clock, found)
        return found


@dataclass
class Reads:
    """The catalog queries one render (of an XR of kind ``reader``) asked, each with the answer it got."""

    seen: dict[Query, tuple[tuple[Key, int], ...]] = field(default_factory=dict)
    reader: str = field(default="", compare=False)  # the kind whose views (``Catalog``) the answers are in
    # The catalog, its clock and the number of queries when every answer was last found current, and the
    # kinds they ask of (``current``).
    _checked: tuple[Catalog, int, int, frozenset[tuple[str, str]]] | None = field(
        default=None, compare=False, repr=False
    )

    def current(self, catalog: Catalog) -> bool:
        """Whether every query would get the same answer from ``catalog`` now.

        An answer changes only with a put or delete of its kind: while none of the kinds asked
        of changed since every answer was last found current, they all still are.
        """
        checked = self._checked
        if (
            checked is not None
            and checked[0] is catalog
            and checked[2] == len(self.seen)
            and all(catalog.changed(group, kind) <= checked[1] for group, kind in checked[3])
        ):
            return True
        if all(catalog.answer(q, self.reader) == a for q, a in self.seen.items()):
            same = checked is not None and checked[2] == len(self.seen)
            kinds = checked[3] if checked is not None and same else frozenset((q[0], q[2]) for q in self.seen)
            self._checked = (catalog, catalog.clock, len(self.seen), kinds)
            return True
        return False


def _struct(entry: _Entry) -> struct_pb2.Struct:
    if entry.struct is None:
        entry.struct = to_struct(entry.obj)
    return entry.struct


def _listed(answer: tuple[tuple[Key, int], ...], hidden: Key | None) -> list[tuple[Key, int]]:
    """An answer's objects as ``Catalog.fill`` lists them: by namespace and name, without ``hidden``."""
    return [found for found in sorted(answer, key=lambda found: "/".join(found[0][3:])) if found[0] != hidden]


def _resource(entry: _Entry) -> bytes:
    """The bytes of a ``Resource`` message holding ``entry``'s object. Its functions read it back."""
    if entry.resource is None:
        entry.resource = length_delimited(FIELD_1, to_wire(entry.obj))  # Resource.resource
    return entry.resource


def _item(entry: _Entry) -> bytes:
    """The bytes of a ``Resources`` message whose one item holds ``entry``'s object.

    A message's bytes are its fields one after another, so these joined are the bytes of a
    ``Resources`` holding every one of them, in that order.
    """
    if entry.item is None:
        entry.item = length_delimited(FIELD_1, _resource(entry))  # Resources.items
    return entry.item


class Store:
    """Objects by key; what reads return is a copy.

    With a ``catalog``, the required resources are read through from it rather than
    copied in: ``objects`` (the XR and its observed resources) sit under the catalog and
    ``credentials`` over it, as their load order would put them, except that the catalog
    never answers for ``hidden`` (the XR itself). Writes stay in this store.
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]],
        *,
        catalog: Catalog | None = None,
        hidden: Key | None = None,
        credentials: Iterable[Mapping[str, Any]] = (),
        reads: Reads | None = None,
    ) -> None:
        """Load ``objects`` in order (a later one replaces an earlier one with the same key).

        ``objects`` and ``credentials`` are held as given, not copied: the caller leaves them
        unchanged while the store lives (what reads return is a copy all the same).
        """
        self._objects: dict[Key, dict[str, Any] | None] = {}  # None: deleted here, hiding the catalog's
        self._catalog = catalog
        self._hidden = hidden
        self._reads = reads if reads is not None else Reads()
        for obj in objects:
            key = key_of(obj)
            if catalog is None or key == hidden or catalog.entry(key) is None:
                self.put(obj, copy=False)
        for obj in credentials:
            self.put(obj, copy=False)

    def put(self, obj: Mapping[str, Any], *, copy: bool = True) -> None:
        """Create or replace ``obj``; without ``copy``, hold ``obj`` itself (its caller changes it no more)."""
        self._objects[key_of(obj)] = copy_json(dict(obj)) if copy else obj if isinstance(obj, dict) else dict(obj)

    def delete(self, key: Key) -> None:
        """Remove the object at ``key``, if any."""
        if self._catalog is not None and key != self._hidden and self._catalog.entry(key) is not None:
            self._objects[key] = None
        else:
            self._objects.pop(key, None)

    def _from_catalog(self, key: Key) -> _Entry | None:
        if self._catalog is None or key == self._hidden:
            return None
        query: Query = (*key, None)
        self._reads.seen[query] = self._catalog.answer(query, self._reads.reader)
        return self._catalog.entry(key)

    def get(self, key: Key) -> dict[str, Any] | None:
        """The object at ``key``, or None."""
        found = self.peek(key)
        return copy_json(found) if found is not None else None

    def peek(self, key: Key) -> Mapping[str, Any] | None:
        """The object at ``key`` itself, not a copy, or None: for a reader that changes nothing."""
        if key in self._objects:
            return self._objects[key]
        entry = self._from_catalog(key)
        return entry.obj if entry is not None else None

    def fetch(self, rs: fnv1.ResourceSelector, into: fnv1.Resources | None = None) -> fnv1.Resources:
        """Answer a function's resource selector, as ``ExistingRequiredResourcesFetcher`` does.

        The answer is written ``into`` an empty message of a request being built, when given:
        copying a fleet's worth of objects a second time is most of a large render's cost.
        """
        out = fnv1.Resources() if into is None else into
        group, version = _group_version(rs.api_version)
        if rs.WhichOneof("match") == "match_name":
            key = (group, version, rs.kind, rs.namespace, rs.match_name)
            found = self._objects[key] if key in self._objects else self._from_catalog(key)
            if isinstance(found, _Entry):
                out.MergeFromString(_item(found))  # one more item
            elif found is not None:
                out.items.add().resource.CopyFrom(to_struct(found))
            return out
        labels = dict(rs.match_labels.labels) if rs.WhichOneof("match") == "match_labels" else {}
        local = {
            key: obj
            for key, obj in self._objects.items()
            if (key[0], key[2]) == (group, rs.kind)
            and not (version and key[1] and version != key[1])
            and not (rs.namespace and key[3] != rs.namespace)
        }
        if self._catalog is not None and not local:
            # The catalog's answer alone: copied whole from the one message it keeps for it.
            query: Query = (group, version, rs.kind, rs.namespace, "", tuple(sorted(labels.items())))
            self._reads.seen[query] = self._catalog.answer(query, self._reads.reader)
            self._catalog.fill(query, out, self._hidden)
            return out
        items = self._catalog_matches(group, version, rs.kind, rs.namespace, labels)
        for key, obj in local.items():
            # What this store holds replaces the catalog's: deleted, or matching or not as it is now.
            items.pop(key, None)
            if obj is not None and _labels_match(obj, labels):
                items[key] = to_struct(obj)
        # Sorted by namespace and name, so the answer does not depend on input order.
        for key in sorted(items, key=lambda k: "/".join(k[3:])):
            out.items.add().resource.CopyFrom(items[key])
        return out

    def refill(self, rs: fnv1.ResourceSelector, into: fnv1.Resources, held: Answered | None) -> Answered | None:
        """Answer ``rs`` in ``into``, which holds the answer ``held`` (``refill``'s return): rewritten if it changed.

        The read is recorded either way. Returns what identifies the answer written: the query and
        the catalog's versions of what it matched, when the catalog alone answers it; else None (an
        answer that involves this store's own objects is rewritten every time).
        """
        answer = self._catalog_answer(rs)
        if answer is not None and answer == held:
            return answer
        if answer is not None and held is not None and held[:3] == answer[:3]:
            # The same query of the same catalog: the objects that changed are written again, if no more.
            catalog, _, hidden, now = answer
            if catalog.update(held[3], now, into, hidden):
                return answer
        into.Clear()
        self.fetch(rs, into)
        return answer

    def _catalog_answer(self, rs: fnv1.ResourceSelector) -> Answered | None:
        """What identifies the catalog's answer to ``rs`` (the read recorded); None if not the catalog's alone."""
        catalog = self._catalog
        if catalog is None:
            return None
        group, version = _group_version(rs.api_version)
        if rs.WhichOneof("match") == "match_name":
            key = (group, version, rs.kind, rs.namespace, rs.match_name)
            if key in self._objects or key == self._hidden:
                return None
            query: Query = (*key, None)
        else:
            if any((k[0], k[2]) == (group, rs.kind) for k in self._objects):
                return None
            labels = dict(rs.match_labels.labels) if rs.WhichOneof("match") == "match_labels" else {}
            query = (group, version, rs.kind, rs.namespace, "", tuple(sorted(labels.items())))
        self._reads.seen[query] = catalog.answer(query, self._reads.reader)
        hidden = (
            self._hidden
            if self._hidden is not None and (self._hidden[0], self._hidden[2]) == (group, rs.kind)
            else None
        )
        # The versions of the objects themselves (a reader's view may stay while an object changes).
        return (catalog, query, hidden, catalog.answer(query))

    def _catalog_matches(
        self, group: str, version: str, kind: str, namespace: str, labels: Mapping[str, str]
    ) -> dict[Key, struct_pb2.Struct]:
        """What the catalog answers a label query with (and the query and answer, recorded)."""
        if self._catalog is None:
            return {}
        query: Query = (group, version, kind, namespace, "", tuple(sorted(labels.items())))
        answer = self._reads.seen[query] = self._catalog.answer(query, self._reads.reader)
        entries = ((key, self._catalog.entry(key)) for key, _ in answer if key != self._hidden)
        return {key: _struct(entry) for key, entry in entries if entry is not None}
