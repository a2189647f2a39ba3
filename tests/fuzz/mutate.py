"""Mutations of a RunFunctionRequest, as hypothesis strategies, applied to its protobuf Structs in place.

A mutation names where it applies (the observed XR, one observed composed
resource, or one required resource) and a path in that object, then does one
thing there: delete the field, set it to null, replace it with any JSON value
(type swaps, huge and negative numbers, unicode, huge strings, bounded deep
nesting) or wrap it in a list. Whole-input mutations drop or blank an observed
resource, and drop, empty, shrink or grow a required resource's answer.
Paths are enumerated once per seed; a mutation whose path an earlier one
removed does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb
from hypothesis import strategies as st

from tests.fuzz.corpus import Seed

Step = str | int
Path = tuple[Step, ...]

XR = "xr"
OBSERVED = "observed"
REQUIRED = "required"

# Field names the functions read: swapped-in objects use them, so wrong shapes land where they are read.
_KEYS = (
    "status", "conditions", "type", "status", "reason", "message", "spec", "metadata", "name", "namespace",
    "labels", "annotations", "kind", "apiVersion", "atProvider", "manifest", "endpoint", "url", "host",
    "addresses", "value", "allocated", "quota", "flavorsUsage", "resourceGroups", "flavors", "resources",
    "nodePools", "className", "scheduler", "kai", "kueue", "queue", "replicas", "readyReplicas", "workers",
    "topology", "template", "containers", "ports", "containerPort", "poolName", "cel", "devices", "gateway",
    "address", "capacity", "pools", "providerConfigRef", "backendName", "containerStatuses", "state", "waiting",
)  # fmt: skip
_WORDS = (
    "", "True", "False", "Unknown", "Ready", "Synced", "Available", "Programmed", "Accepted", "KAI", "Kueue",
    "None", "KServe", "Native", "Existing", "GKE", "EKS", "AKS", "Queue", "ClusterQueue", "ResourceFlavor",
    "Pod", "Deployment", "LeaderWorkerSet", "LLMInferenceService", "Namespace", "nvidia.com/gpu", "http://x/",
    "https://[::1]:8443/v1", "::", "-", "a" * 64, "ü/ñ☃\u202e\x00", "1", "-1", "1e400", "8Gi",
    "2025-01-01T00:00:00Z", "not-a-time", "device.attributes['x'].y ==",
)  # fmt: skip
_NUMBERS = (0, -1, 1, 2, 8, 2**31 - 1, 2**31, 2**53, -(2**53), 1e300, -1e300, 0.5, -0.0, 1e-300)
_DEEP = 20  # levels of nesting a swapped-in value may add (a protobuf parser refuses 100 messages deep)


def _nest(depth: int, key: str | None, leaf: Any) -> Any:
    """``leaf`` under ``depth`` levels of one-key objects (or one-item lists when ``key`` is None)."""
    out = leaf
    for _ in range(depth):
        out = [out] if key is None else {key: out}
    return out


_scalars = (
    st.none()
    | st.booleans()
    | st.sampled_from(_NUMBERS)
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(_WORDS)
    | st.text(max_size=24)
    | st.sampled_from(("x" * 100_000, "é" * 50_000))
)
_objects = st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=6), st.deferred(lambda: values), max_size=4)
values: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3),
    max_leaves=12,
) | st.builds(
    _nest,
    st.integers(1, _DEEP),
    st.sampled_from((*_KEYS[:6], None)),
    _scalars,
)


@dataclass(frozen=True)
class Where:
    """An object of the request: the XR, an observed composed resource (by key) or a required one."""

    region: str
    key: str = ""
    index: int = 0


@dataclass(frozen=True)
class Mutation:
    """One change to a request (``value`` only for ``replace`` and ``add-item``)."""

    op: str
    where: Where
    path: Path = ()
    value: Any = None


@dataclass(frozen=True)
class Prepared:
    """A seed with the paths of each of its objects enumerated."""

    seed: Seed
    paths: dict[Where, tuple[Path, ...]]

    def regions(self) -> list[str]:
        """The regions this seed has something in."""
        return sorted({w.region for w in self.paths})

    def objects(self, region: str) -> list[Where]:
        """The objects of one region."""
        return [w for w in self.paths if w.region == region]


def _walk(struct: structpb.Struct, prefix: Path, out: list[Path]) -> None:
    for name, value in struct.fields.items():
        _walk_value(value, (*prefix, name), out)


def _walk_value(value: structpb.Value, path: Path, out: list[Path]) -> None:
    out.append(path)
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        _walk(value.struct_value, path, out)
    elif kind == "list_value":
        for i, item in enumerate(value.list_value.values):
            _walk_value(item, (*path, i), out)


def _paths(struct: structpb.Struct) -> tuple[Path, ...]:
    out: list[Path] = []
    _walk(struct, (), out)
    return tuple(sorted(out, key=lambda p: tuple(str(s) for s in p)))


def prepare(seed: Seed) -> Prepared:
    """Enumerate every path of every object of ``seed``'s request."""
    req = seed.parse()
    paths = {Where(XR): _paths(req.observed.composite.resource)}
    for key in sorted(req.observed.resources):
        paths[Where(OBSERVED, key)] = _paths(req.observed.resources[key].resource)
    for name in sorted(req.required_resources):
        items = req.required_resources[name].items
        # A requirement answered with nothing is still a place to add an object to.
        paths[Where(REQUIRED, name, -1)] = ()
        for index, item in enumerate(items):
            paths[Where(REQUIRED, name, index)] = _paths(item.resource)
    return Prepared(seed, paths)


_FIELD_OPS = ("delete", "null", "replace", "replace", "replace", "wrap")
_WHOLE_OPS = {
    XR: (),
    OBSERVED: ("drop-observed", "blank-observed"),
    REQUIRED: ("drop-requirement", "empty-requirement", "drop-item", "duplicate-item", "add-item"),
}


def _object_mutations(where: Where, paths: tuple[Path, ...]) -> st.SearchStrategy[Mutation]:
    whole = _WHOLE_OPS[where.region]
    ops = st.sampled_from((_FIELD_OPS if paths else ()) + whole or ("add-item",))
    at = st.sampled_from(paths) if paths else st.just(())

    @st.composite
    def draw_one(draw: st.DrawFn) -> Mutation:
        op = draw(ops)
        if op in whole or not paths:
            return Mutation(op, where, value=draw(_objects) if op == "add-item" else None)
        return Mutation(op, where, draw(at), draw(values) if op == "replace" else None)

    return draw_one()


def mutation(prepared: Prepared, *, inputs_only: bool = False) -> st.SearchStrategy[Mutation] | None:
    """One mutation of ``prepared``'s request: a region, then an object of it, then what to do there.

    With ``inputs_only`` the XR and required objects' fields are left alone: observed composed
    resources are corrupted, required answers lost (None when the request has neither).
    Strategies are built once per seed (building them for every draw costs more than drawing).
    """
    key = (prepared.seed.id, inputs_only)
    if key not in _MUTATIONS:
        regions = [
            st.one_of(
                [
                    _object_mutations(w, () if inputs_only and r == REQUIRED else prepared.paths[w])
                    for w in prepared.objects(r)
                ]
            )
            for r in prepared.regions()
            if not (inputs_only and r == XR)
        ]
        _MUTATIONS[key] = st.one_of(regions) if regions else None
    return _MUTATIONS[key]


_MUTATIONS: dict[tuple[str, bool], st.SearchStrategy[Mutation] | None] = {}


@dataclass(frozen=True)
class Mutated:
    """A seed and the mutations applied to it."""

    seed: Seed
    mutations: tuple[Mutation, ...]

    @property
    def may_change_meaning(self) -> bool:
        """Whether a mutation may have made a change a user could make: any to the XR or a required object's fields.

        Otherwise the request only lost inputs (a required answer dropped, emptied, shrunk) or had what
        runs corrupted (observed composed resources): no reason to remove anything composed.
        """
        return any(m.where.region == XR or (m.where.region == REQUIRED and m.op in _FIELD_OPS) for m in self.mutations)

    def request(self) -> fnv1.RunFunctionRequest:
        """The seed's request with the mutations applied."""
        req = self.seed.parse()
        for m in self.mutations:
            apply(req, m)
        return req


def mutated(prepared: Sequence[Prepared], max_mutations: int = 4) -> st.SearchStrategy[Mutated]:
    """A seed of ``prepared`` with 1 to ``max_mutations`` mutations, half of the time only losing or corrupting inputs.

    Those requests are the ones the never-drop property speaks of: give them as many draws.
    """
    options = []
    for p in prepared:
        for strategy in (mutation(p), mutation(p, inputs_only=True)):
            if strategy is not None:
                options.append(
                    st.builds(
                        Mutated, st.just(p.seed), st.lists(strategy, min_size=1, max_size=max_mutations).map(tuple)
                    )
                )
    return st.one_of(options)


def to_value(data: Any) -> structpb.Value:
    """A protobuf Value holding the JSON value ``data``."""
    value = structpb.Value()
    if data is None:
        value.null_value = structpb.NULL_VALUE
    elif isinstance(data, bool):
        value.bool_value = data
    elif isinstance(data, int | float):
        value.number_value = float(data)
    elif isinstance(data, str):
        value.string_value = data
    elif isinstance(data, list):
        value.list_value.SetInParent()
        for item in data:
            value.list_value.values.add().CopyFrom(to_value(item))
    else:
        value.struct_value.SetInParent()
        for k, v in data.items():
            value.struct_value.fields[str(k)].CopyFrom(to_value(v))
    return value


def _target(req: fnv1.RunFunctionRequest, where: Where) -> structpb.Struct | None:
    if where.region == XR:
        return req.observed.composite.resource
    if where.region == OBSERVED:
        return req.observed.resources[where.key].resource if where.key in req.observed.resources else None
    items = req.required_resources[where.key].items if where.key in req.required_resources else []
    return items[where.index].resource if 0 <= where.index < len(items) else None


def _parent(root: structpb.Struct, path: Path) -> structpb.Struct | structpb.ListValue | None:
    """The Struct or ListValue holding the last step of ``path``, or None when the path is gone."""
    node: structpb.Struct | structpb.ListValue = root
    for step in path[:-1]:
        child = _child(node, step)
        if child is None:
            return None
        kind = child.WhichOneof("kind")
        if kind == "struct_value":
            node = child.struct_value
        elif kind == "list_value":
            node = child.list_value
        else:
            return None
    return node if _child(node, path[-1]) is not None else None


def _child(node: structpb.Struct | structpb.ListValue, step: Step) -> structpb.Value | None:
    if isinstance(node, structpb.Struct):
        return node.fields[step] if isinstance(step, str) and step in node.fields else None
    return node.values[step] if isinstance(step, int) and step < len(node.values) else None


def _set(node: structpb.Struct | structpb.ListValue, step: Step, value: structpb.Value) -> None:
    if isinstance(node, structpb.Struct):
        node.fields[str(step)].CopyFrom(value)
    else:
        node.values[int(step)].CopyFrom(value)


def apply(req: fnv1.RunFunctionRequest, m: Mutation) -> None:
    """Apply ``m`` to ``req`` in place."""
    if m.op in _WHOLE_OPS[m.where.region]:
        _apply_whole(req, m)
        return
    root = _target(req, m.where)
    parent = _parent(root, m.path) if root is not None else None
    if parent is None:
        return
    step = m.path[-1]
    if m.op == "delete":
        if isinstance(parent, structpb.Struct):
            del parent.fields[str(step)]
        else:
            del parent.values[int(step)]
    elif m.op == "null":
        _set(parent, step, to_value(None))
    elif m.op == "replace":
        _set(parent, step, to_value(m.value))
    elif m.op == "wrap":
        wrapped = structpb.Value()
        wrapped.list_value.values.add().CopyFrom(_child(parent, step))
        _set(parent, step, wrapped)


def _apply_whole(req: fnv1.RunFunctionRequest, m: Mutation) -> None:
    key = m.where.key
    if m.op == "drop-observed" and key in req.observed.resources:
        del req.observed.resources[key]
    elif m.op == "blank-observed" and key in req.observed.resources:
        req.observed.resources[key].resource.Clear()
    elif m.op == "drop-requirement" and key in req.required_resources:
        del req.required_resources[key]
    elif m.op == "empty-requirement" and key in req.required_resources:
        del req.required_resources[key].items[:]
    elif m.op == "add-item" and key in req.required_resources:
        req.required_resources[key].items.add().resource.CopyFrom(to_value(m.value).struct_value)
    elif key in req.required_resources and 0 <= m.where.index < len(req.required_resources[key].items):
        items = req.required_resources[key].items
        if m.op == "drop-item":
            del items[m.where.index]
        elif m.op == "duplicate-item":
            items.add().CopyFrom(items[m.where.index])
