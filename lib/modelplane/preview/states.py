"""The simulated fleet's state: every XR, indexed the ways the simulation reads it, and the functions it runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, TypeVar, cast, overload

from modelplane.preview.manifests import Key, Manifest
from modelplane.preview.views import VIEWS
from modelplane.render.model import RenderError, Runner
from modelplane.render.runners import load_runner
from modelplane.render.store import Catalog
from modelplane.render.store import key_of as render_key

__all__ = ["Functions", "States", "XRState", "cluster_of", "with_uid"]

T = TypeVar("T")
R = TypeVar("R")
G = TypeVar("G", Key, str)  # what a ``_Groups`` groups keys by


@dataclass(frozen=True)
class XRState:
    """One XR of the simulated fleet after a pass."""

    xr: Manifest
    composed: tuple[Manifest, ...] = ()
    results: tuple[dict[str, Any], ...] = ()
    parent: Key | None = None  # the XR that composed this one; None for the user's manifests


def with_uid(xr: Manifest) -> Manifest:
    """The XR as the API server stores it, with a UID stable across passes.

    Its composed resources' owner references carry the UID, and the renderer checks that what
    an XR observes is controlled by it.
    """
    meta = xr.get("metadata", {})
    if meta.get("uid"):
        return xr
    name = f"{xr.get('apiVersion', '')}/{xr.get('kind', '')}/{meta.get('namespace', '')}/{meta.get('name', '')}"
    return {**xr, "metadata": {**meta, "uid": _uid(name)}}


@lru_cache(maxsize=65536)
def _uid(name: str) -> str:
    """The UID of the XR ``name`` (worked out once: every step of the simulation asks again)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"modelplane-preview:{name}"))


class States(Mapping[Key, XRState]):
    """The simulated fleet: every XR's state, indexed the ways the simulation reads it.

    Every XR is also in ``catalog`` (with the manifests that are not XRs), the required
    resources each render reads through, so a render costs what it reads, not what the
    fleet holds.
    """

    def __init__(self, others: Iterable[Manifest]) -> None:
        """An empty fleet in a world of ``others``."""
        self._states: dict[Key, XRState] = {}
        self.catalog = Catalog(others, stamp=True, views=VIEWS)
        self._children: _Groups[Key] = _Groups()  # by parent
        self._on_cluster: _Groups[str] = _Groups()  # ModelReplicas, by the cluster their spec names
        self._kinds: _Groups[str] = _Groups()
        # Each state's XR as the catalog holds it (``with_uid``), worked out once per state.
        self._stored: dict[Key, Manifest] = {}
        # What each key was before its first change since ``mark`` (None: it was not there).
        self._journal: dict[Key, XRState | None] = {}
        self._memo: dict[tuple[str, int], tuple[object, object]] = {}
        self._memo_by: dict[tuple[str, int], tuple[object, tuple[object, ...], object]] = {}

    def __getitem__(self, key: Key) -> XRState:  # noqa: D105
        return self._states[key]

    def __iter__(self) -> Iterator[Key]:  # noqa: D105
        return iter(self._states)

    def __len__(self) -> int:  # noqa: D105
        return len(self._states)

    def __contains__(self, key: object) -> bool:  # noqa: D105 - the dict's own, not Mapping's through __getitem__
        return key in self._states

    @overload
    def get(self, key: Key, /) -> XRState | None: ...
    @overload
    def get(self, key: Key, /, default: XRState | T) -> XRState | T: ...
    def get(self, key: Key, /, default: object = None) -> object:
        """``key``'s state, or ``default``: the dict's own, not Mapping's through ``__getitem__``."""
        return self._states.get(key, default)

    def put(self, key: Key, state: XRState) -> None:
        """Set ``key``'s state (and index it)."""
        old = self._states.get(key)
        if old is state:
            return
        self._journal.setdefault(key, old)
        self._states[key] = state
        if old is None or old.xr is not state.xr:
            self._stored[key] = with_uid(state.xr)
            self.catalog.put(self._stored[key])
        if old is not None and old.parent != state.parent and old.parent is not None:
            self._children.discard(old.parent, key)
        if state.parent is not None:
            self._children.add(state.parent, key)
        self._kinds.add(key[0], key)
        if key[0] == "ModelReplica":
            if old is not None:
                self._on_cluster.discard(cluster_of(old.xr), key)
            self._on_cluster.add(cluster_of(state.xr), key)

    def drop(self, key: Key) -> None:
        """Remove ``key`` (and its index entries)."""
        old = self._states.pop(key, None)
        if old is None:
            return
        self._journal.setdefault(key, old)
        del self._stored[key]
        self.catalog.delete(render_key(old.xr))
        if old.parent is not None:
            self._children.discard(old.parent, key)
        self._kinds.discard(key[0], key)
        if key[0] == "ModelReplica":
            self._on_cluster.discard(cluster_of(old.xr), key)

    def stored(self, key: Key) -> Manifest:
        """``key``'s XR as the catalog holds it (``with_uid``): the same object while its state's XR stays."""
        return self._stored[key]

    def children(self, key: Key) -> list[Key]:
        """The XRs ``key`` composed, by key (a list the caller must not change)."""
        # Every key in the group has ``key`` as its parent: ``put`` and ``drop`` move it when that changes.
        return self._children.ordered(key)

    def of_kind(self, kind: str) -> list[tuple[Key, XRState]]:
        """The XRs of ``kind``, by key."""
        return [(k, self._states[k]) for k in self._kinds.ordered(kind)]

    def keys_of(self, kind: str) -> list[Key]:
        """The keys of the XRs of ``kind``, in the order they were added (that of iterating the fleet)."""
        return self._kinds.added(kind)

    def mark(self) -> None:
        """Start a new ``changes``: what changes from now on."""
        self._journal = {}

    def changes(self) -> dict[Key, XRState | None]:
        """Every key put or dropped since ``mark``, with its state then (None: it was not there)."""
        return dict(self._journal)

    def replicas_on(self, cluster: str) -> list[tuple[Key, XRState]]:
        """The ModelReplicas whose spec names InferenceCluster ``cluster``, by key."""
        return [(k, self._states[k]) for k in self._on_cluster.ordered(cluster)]

    def memo(self, name: str, obj: T, derive: Callable[[T], R]) -> R:
        """``derive(obj)``, worked out once per object: the simulation replaces an object it changes."""
        found = self._memo.get((name, id(obj)))
        if found is not None and found[0] is obj:
            return cast("R", found[1])
        value = derive(obj)
        self._memo[(name, id(obj))] = (obj, value)  # holding obj keeps its id from being reused
        return value

    def memo_by(self, name: str, obj: object, inputs: Sequence[object], derive: Callable[[], R]) -> R:
        """``derive()`` for ``obj``, worked out again only when one of ``inputs`` is another object.

        For what ``obj`` becomes as the fleet changes (a cluster's published capacity follows its
        replicas): the simulation replaces an object it changes, so the same objects derive the same.
        """
        slot = (name, id(obj))
        found = self._memo_by.get(slot)
        if (
            found is not None
            and found[0] is obj
            and len(found[1]) == len(inputs)
            and all(a is b for a, b in zip(found[1], inputs, strict=True))
        ):
            return cast("R", found[2])
        value = derive()
        self._memo_by[slot] = (obj, tuple(inputs), value)  # holding them keeps their ids from being reused
        return value

    def snapshot(self) -> dict[Key, XRState]:
        """The states now, by key."""
        return dict(sorted(self._states.items()))


class _Groups(Generic[G]):
    """Keys by group, in the order added, and sorted as last asked for (worked out again once a group changes)."""

    def __init__(self) -> None:
        self._groups: dict[G, dict[Key, None]] = {}
        self._sorted: dict[G, list[Key]] = {}

    def add(self, group: G, key: Key) -> None:
        found = self._groups.setdefault(group, {})
        if key not in found:
            found[key] = None
            self._sorted.pop(group, None)

    def discard(self, group: G, key: Key) -> None:
        found = self._groups.get(group)
        if found is not None and key in found:
            del found[key]
            self._sorted.pop(group, None)

    def added(self, group: G) -> list[Key]:
        return list(self._groups.get(group, ()))

    def ordered(self, group: G) -> list[Key]:
        found = self._sorted.get(group)
        if found is None:
            found = self._sorted[group] = sorted(self._groups.get(group, ()))
        return found


def cluster_of(xr: Manifest) -> str:
    """The InferenceCluster a ModelReplica names (``spec.inferenceClusterRef.name``)."""
    return str(((xr.get("spec") or {}).get("inferenceClusterRef") or {}).get("name", ""))


class Functions(Mapping[str, Runner]):
    """Modelplane's function runners, each loaded once for the whole simulation.

    As a deployed function serves call after call from one process, so what a function
    remembers between calls (what it read of an unchanged object) serves here too.
    """

    def __init__(self) -> None:
        """None loaded yet."""
        self._loaded: dict[str, Runner] = {}

    def __getitem__(self, ref: str) -> Runner:  # noqa: D105
        if ref not in self._loaded:
            try:
                self._loaded[ref] = load_runner(ref)
            except LookupError as err:
                raise RenderError(str(err)) from err
        return self._loaded[ref]

    def __contains__(self, ref: object) -> bool:  # noqa: D105
        return True  # every ref is tried: an unknown one fails as the render engine's own loader fails it

    def __iter__(self) -> Iterator[str]:  # noqa: D105
        return iter(self._loaded)

    def __len__(self) -> int:  # noqa: D105
        return len(self._loaded)
