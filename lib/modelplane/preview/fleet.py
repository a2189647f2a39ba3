"""Simulate a fleet offline: render every XR, feed composed XRs back, repeat until stable.

Each pass goes through every XR known at its start, with the rest of the fleet as
required resources (read through one shared catalog) and the XR's own previous
composed resources as observed state. An XR is rendered again only when what it read
changed; otherwise its last render stands. XRs that a pass composes (ModelReplicas,
ModelEndpoints, ServingStacks...) join the fleet at once and are settled right after
their parent, which sees them settled in the next pass; the InferenceClusters and FleetQuotas
that count a deployment's replicas publish them before the next deployment reads them. The loop ends when a pass
changes nothing, or fails after ``max_passes``.

Simulated state comes from the manifests: a ``status`` written in a manifest
stands for what a live system observed, so it wins over what a render reports
for the same field (conditions are merged by type).
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from modelplane import protojson
from modelplane.kinds import BY_KIND
from modelplane.preview.collector import paused
from modelplane.preview.manifests import Key, Loaded, Manifest, is_modelplane, key_of
from modelplane.preview.states import Functions, States, XRState, cluster_of
from modelplane.readiness import READY, TRUE, VERDICT_FIELD
from modelplane.render import RenderInputs, RenderOutput, render
from modelplane.render.model import ANNOTATION_RESOURCE_NAME
from modelplane.render.requests import KeptRequests
from modelplane.render.store import Catalog

DEFAULT_MAX_PASSES = 20  # a healthy world (--assume-ready) of examples/platform + models settles in 4
# How often a composed XR is rendered again within a pass as what it composes settles (a replica:
# composed, then its workload observed Ready, then its endpoint observed Ready).
_SETTLE_ROUNDS = 4

Renderer = Callable[[RenderInputs], RenderOutput]
# How a composed resource that is not an XR is observed (the world the fleet runs in).
World = Callable[[Manifest], Manifest]
# What a manifest's status (what a live system observed) becomes as the simulated fleet changes.
Observer = Callable[[Manifest, "States"], "dict[str, Any] | None"]
# Called at the end of every pass with its number and the fleet then (a plan records a rollout's waves).
PassHook = Callable[[int, "States"], None]


class DidNotConvergeError(RuntimeError):
    """The fleet still changed after the last allowed pass."""


@dataclass(frozen=True)
class Fleet:
    """The converged fleet."""

    states: dict[Key, XRState]
    others: tuple[Manifest, ...]
    passes: int
    errors: dict[Key, str] = field(default_factory=dict)
    # What each XR saw (its required resources) when it last changed the XRs it composes: for a
    # ModelDeployment, the fleet its placements were decided on.
    decided: dict[Key, tuple[Manifest, ...]] = field(default_factory=dict)


def merge_status(simulated: Mapping[str, Any] | None, rendered: Mapping[str, Any] | None) -> dict[str, Any]:
    """Overlay a manifest's simulated status on a rendered one (simulated wins).

    A simulated Ready condition also sets the rendered ``status.readyVerdict`` (unless the manifest
    writes one): the live function whose Ready the manifest records would have said the same.
    """
    merged = dict(rendered or {})
    for name, value in (simulated or {}).items():
        if name == "conditions":
            by_type = {c.get("type"): c for c in merged.get("conditions", [])}
            by_type.update({c.get("type"): c for c in value})
            merged["conditions"] = sorted(by_type.values(), key=lambda c: str(c.get("type")))
            ready = next((c for c in value if c.get("type") == READY), None)
            if ready is not None and VERDICT_FIELD in merged and VERDICT_FIELD not in (simulated or {}):
                merged[VERDICT_FIELD] = ready.get("status") == TRUE
        else:
            merged[name] = value
    return merged


def _named(child: Manifest, parent: Key) -> Manifest:
    """Give a composed XR that only has generateName a stable name, as the API server would."""
    meta = child.get("metadata", {})
    if meta.get("name"):
        return child
    resource_name = meta.get("annotations", {}).get(ANNOTATION_RESOURCE_NAME, "")
    digest = hashlib.sha256(f"{parent}/{resource_name}".encode()).hexdigest()[:5]
    return {**child, "metadata": {**meta, "name": f"{meta.get('generateName', 'x-')}{digest}"}}


def _resource_name(obj: Manifest) -> str:
    """The name of a composed resource in its XR's composition (``crossplane.io/composition-resource-name``)."""
    return str(((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME, ""))


def _owned(obj: Manifest, xr: Manifest) -> Manifest:
    """A composed resource as the API server stores it: its controller reference carries the XR's UID."""
    meta = obj.get("metadata", {})
    refs = meta.get("ownerReferences")
    if not refs:
        return obj
    uid = xr["metadata"]["uid"]
    owned = [{**r, "uid": uid} if r.get("controller") and not r.get("uid") else r for r in refs]
    return {**obj, "metadata": {**meta, "ownerReferences": owned}}


def _children(composed: Iterable[Manifest]) -> list[Manifest]:
    """The ModelReplicas among composed resources, as composed: a change to them is a placement decided.

    Endpoints, composed once replicas report where they are reachable, decide nothing: counting
    them would move ``decided`` to a later fleet than the one the replicas were placed on.
    """
    return [c for c in composed if is_modelplane(c) and c.get("kind") == "ModelReplica"]


def _placed(now: Iterable[Manifest], before: Iterable[Manifest]) -> bool:
    """Whether the ModelReplicas composed ``now`` differ from those ``before``, in any order."""
    mine, theirs = _children(now), _children(before)
    if mine == theirs:
        return False  # the same, in the same order (a render composes them in a stable one)
    return sorted(mine, key=_canonical) != sorted(theirs, key=_canonical)


def _canonical(obj: Manifest) -> str:
    return json.dumps(obj, sort_keys=True)


@dataclass(frozen=True)
class _Rendered:
    """One XR's last render, with what it was given and what it read: while those stay, so does the render."""

    xr: Manifest
    observed: list[Manifest]
    out: RenderOutput
    # What ``observed`` was seen from (``_observing``), by identity: the same objects are seen the same.
    watched: tuple[Manifest, ...] = ()
    # The state a step found up to date and left as it was (``simulate``'s ``step``); None if it changed it.
    left: XRState | None = None


def simulate(  # noqa: PLR0913, PLR0915 - optional keywords; one loop whose steps are closures
    loaded: Loaded,
    compositions: Mapping[str, Manifest],
    *,
    max_passes: int = DEFAULT_MAX_PASSES,
    renderer: Renderer = render,
    world: World | None = None,
    observe: Observer | None = None,
    start: Fleet | None = None,
    on_pass: PassHook | None = None,
) -> Fleet:
    """Render the fleet until nothing changes.

    An XR is rendered again only when something it reads changed: itself, what it
    observes of its composed resources, or an answer to a query it made of the rest of
    the fleet (``modelplane.render.store.Reads``). Otherwise its last render stands, as it
    would come out the same; so it does when only the XR's status changed, to what that render
    wrote, and its function reads no status of its own (``modelplane.kinds.Kind.reads_own_status``).

    Args:
        loaded: The manifests of the fleet.
        compositions: The Composition of each kind, by kind.
        max_passes: Give up after this many passes.
        renderer: The render implementation (the in-process renderer by default). Only the default
            is trusted to compose the same from the status it wrote, so another is called again for it.
        world: How composed resources other than XRs are observed; None (the default) observes
            them as composed, with no status (``modelplane.preview.world.healthy`` simulates a
            live, healthy system).
        observe: How a manifest's status follows the simulated fleet (e.g. a scheduler's observed
            GPUs grow with the replicas the simulation makes Ready); None keeps it as written.
        start: A settled fleet to apply ``loaded`` to, as a control plane would (see ``_seeded``);
            None starts from nothing.
        on_pass: Called at the end of every pass with its number and the fleet then.

    Raises:
        DidNotConvergeError: the fleet still changed in the last pass; the
            message names the objects that did.

    """
    sources = {key_of(x): x for x in loaded.xrs}
    states = States(loaded.others)
    for k, s in _seeded(sources, start):
        states.put(k, s)
    last: dict[Key, _Rendered] = {}
    functions = Functions()
    requests = KeptRequests()  # Modelplane's functions never write their request
    changed: list[Key] = []
    decided: dict[Key, tuple[Manifest, ...]] = {}
    errors: dict[Key, str] = {}  # the XRs that failed to render in the pass under way
    # The state each XR's last render left it in: a composed XR still in it, whose render stands, is up to date.
    applied: dict[Key, XRState] = {}
    # Only Modelplane's own render is known to compose the same from the status it wrote (``_echoed``).
    skips_echoes = renderer is render

    def seen_as(watched: tuple[Manifest, ...], xr: Manifest, previous: _Rendered | None) -> list[Manifest]:
        """``watched`` as ``xr`` observes them: through ``world`` unless an XR, owned by ``xr``.

        What ``previous`` saw is seen as it saw it: the same object, or an equal one in its place (the
        render composed it again the same). ``world`` is a function of the manifest, so it would observe
        it the same again; seen as the very same object, it makes ``_stands`` a glance.
        """
        if previous is None or previous.xr["metadata"]["uid"] != xr["metadata"]["uid"]:
            return [_owned(obj if is_modelplane(obj) or world is None else world(obj), xr) for obj in watched]
        was = previous.watched
        if len(was) == len(watched) and all(map(operator.is_, was, watched)):
            return previous.observed
        # ``previous`` holds the objects, so their ids are not reused while it is looked up.
        before = {id(obj): seen for obj, seen in zip(was, previous.observed, strict=True)}
        placed: dict[str, int] | None = None  # where each was, by its name in the composition: when asked
        out = []
        for i, obj in enumerate(watched):
            found = before.get(id(obj))
            if found is None and not is_modelplane(obj):
                name = _resource_name(obj)
                j: int | None = i
                if i >= len(was) or _resource_name(was[i]) != name:  # the render composed more, or fewer, before it
                    placed = placed if placed is not None else {_resource_name(o): n for n, o in enumerate(was)}
                    j = placed.get(name)
                if j is not None and _equal(was[j], obj):
                    found = previous.observed[j]
            if found is None:
                found = _owned(obj if is_modelplane(obj) or world is None else world(obj), xr)
            out.append(found)
        return out

    def step(key: Key) -> bool:
        """Bring ``key`` up to date with what it reads; whether it had to be rendered for that."""
        state = states.get(key)
        if state is None:  # its parent stopped composing it earlier in this pass
            return False
        watched = _observing(state, states)
        previous = last.get(key)
        if (
            previous is not None
            and previous.left is state
            and applied.get(key) is state
            and len(previous.watched) == len(watched)
            and all(map(operator.is_, previous.watched, watched))
            and previous.out.reads.current(states.catalog)
        ):
            # Up to date, as the step that left it so found it: itself, what it observes (the same objects)
            # and what it read of the fleet are as they were, so this step would find the same again.
            return False
        xr = states.stored(key)
        observed = seen_as(watched, xr, previous)
        if previous is not None and _stands(previous, xr, observed, states.catalog, echoes=skips_echoes):
            # Its last render stands. One rendered again only to read back its own status still counts
            # as rendered, so the pass goes as it would.
            out, rendered = previous.out, previous.xr != xr
            if not rendered and key not in sources and applied.get(key) is state:
                # Applying the same render to the state it left would leave it as it is.
                last[key] = _Rendered(xr, observed, out, watched, left=state)
                return False
            last[key] = _Rendered(xr, observed, out, watched)
        else:
            try:
                # The rest of the fleet is read through the catalog; never the XR itself: the render
                # engine stores it already, and a required copy would replace it.
                out = renderer(
                    RenderInputs(
                        xr=xr,
                        composition=compositions[key[0]],
                        observed=observed,
                        catalog=states.catalog,
                        functions=functions,
                        requirements=previous.out.requirements if previous is not None else {},
                        requests=requests,
                    )
                )
            except Exception as err:  # noqa: BLE001 - a failing XR is reported, the rest goes on
                last.pop(key, None)
                errors[key] = str(err)
                return False
            last[key] = _Rendered(xr, observed, out, watched)
            errors.pop(key, None)
            rendered = True
        # Whether a deployment's placements changed (its replicas as composed): worked out once a step.
        placed = key[0] == "ModelDeployment" and _placed(out.composed, state.composed)
        if key[0] == "ModelDeployment" and (placed or key not in decided):
            decided[key] = _read(out, states.catalog)  # put in order once, as the fleet settles (``_in_order``)
        _apply(sources, states, key, out, observe)
        applied[key] = states[key]
        if observe is not None and key[0] == "ModelDeployment":
            # Its replicas' clusters publish what they now hold before the next deployment reads them.
            _refresh(sources, states, _hosts(state.composed) | _hosts(out.composed), observe)
        if placed:
            # So do the FleetQuotas that count them: each quota reconciles on its replicas' changes.
            for quota in states.keys_of("FleetQuota"):
                step(quota)
        return rendered

    def visit(key: Key, *, composed: bool) -> bool:
        """Bring ``key`` up to date, then what it composes, settling each composed XR in turn.

        A composed XR (a replica, its endpoint, a cluster's stack) is rendered again as soon as
        what it composes has settled, as a controller watching its composed resources would,
        so its parent sees it settled in the next pass. An XR from the manifests changes at
        most once a pass: a rollout advances one step a pass. A plan (``on_pass``) sees the
        fleet between passes only, so there every XR changes at most once a pass: a replica
        surged in a wave is seen not yet Ready, and the wave's minimum Ready is the true one.

        Returns whether any render (of ``key`` or below it) changed something. A round in which
        none did leaves every input of the next one as it was, so the next would stand: settling stops.
        """
        moved = False
        for round_ in range(_SETTLE_ROUNDS if composed and on_pass is None else 1):
            rendered = step(key)
            if not rendered and round_ > 0:
                return moved
            below = [visit(child, composed=True) for child in states.children(key)]
            moved = moved or rendered or any(below)
            if not rendered and not any(below):
                return moved
        return moved

    # The simulation comes back to an object after tens of thousands of others: its conversions are kept.
    protojson.remember_up_to(protojson.SIMULATION_BUDGET)
    with paused():
        for n in range(1, max_passes + 1):
            states.mark()  # what the pass changes is what it puts or drops
            errors.clear()
            # One XR at a time, each seeing what the ones before it composed, as a
            # control plane that reconciles them one by one would.
            for key in sorted(states):
                visit(key, composed=states.get(key) is not None and states[key].parent is not None)
            if observe is not None:
                _observe(sources, states, observe)
            if on_pass is not None:
                on_pass(n, states)
            changed = sorted(k for k, was in states.changes().items() if _settled(was) != _settled(states.get(k)))
            if not changed:
                return Fleet(
                    states=states.snapshot(),
                    others=loaded.others,
                    passes=n,
                    errors=dict(errors),
                    decided=_in_order(decided),
                )
    names = ", ".join(f"{k[0]} {'/'.join(filter(None, k[1:]))}" for k in changed[:10])
    msg = f"the fleet did not settle after {max_passes} passes; still changing: {names}"
    raise DidNotConvergeError(msg)


def _stands(previous: _Rendered, xr: Manifest, observed: list[Manifest], catalog: Catalog, *, echoes: bool) -> bool:
    """Whether rendering ``xr`` on ``observed`` now would give ``previous``'s output.

    So it would when nothing it reads changed: itself, what it observes, what it read of the
    fleet; and, with ``echoes``, when only its status changed, to what ``previous`` wrote.
    """
    if not _same(previous.observed, observed) or not previous.out.reads.current(catalog):
        return False
    return previous.xr == xr or (echoes and _echoed(previous, xr))


def _same(before: list[Manifest], now: list[Manifest]) -> bool:
    """``before == now``, element by element (``_equal``)."""
    return len(before) == len(now) and all(b is n or _equal(b, n) for b, n in zip(before, now, strict=True))


def _equal(one: Manifest, other: Manifest) -> bool:
    """``one == other``, the status first: what a change to a composed resource changes."""
    return one.get("status") == other.get("status") and one == other


def _echoed(previous: _Rendered, xr: Manifest) -> bool:
    """Whether ``xr`` is the XR ``previous`` rendered, with only the status that render wrote.

    Its function reads no status of its own (``Kind.reads_own_status``), and the render engine
    reads only the conditions, which it sets the same again, so a render of ``xr`` would give
    the same status, composed resources and results as ``previous``.
    """
    kind = BY_KIND.get(str(xr.get("kind", "")))
    if kind is None or kind.reads_own_status or xr.get("status") != previous.out.xr.get("status"):
        return False
    return _without_status(xr) == _without_status(previous.xr)


def _without_status(xr: Manifest) -> Manifest:
    return {k: v for k, v in xr.items() if k != "status"}


def _seeded(sources: Mapping[Key, Manifest], start: Fleet | None) -> list[tuple[Key, XRState]]:
    """The fleet a simulation starts from: ``sources`` alone, or applied to the settled fleet ``start``.

    Applied, as to a control plane: a manifest still there takes its new spec and keeps the status
    and composed resources it had; what its XRs composed stays until they are rendered again; a
    manifest no longer there is deleted with everything it composed.
    """
    fresh = [(k, XRState(xr=x)) for k, x in sorted(sources.items())]
    if start is None:
        return fresh
    kept: dict[Key, bool] = {}

    def keeps(key: Key) -> bool:
        if key not in kept:
            state = start.states.get(key)
            parent = None if state is None else state.parent
            kept[key] = key in sources if parent is None else parent != key and keeps(parent)
        return kept[key]

    out = []
    for key, state in sorted(start.states.items()):
        if not keeps(key):
            continue
        own, status = sources.get(key), state.xr.get("status")
        xr = {**own, "status": status} if own is not None and status else own
        out.append((key, state if xr is None else replace(state, xr=xr, parent=None)))
    return out + [(k, s) for k, s in fresh if k not in start.states]


def _settled(state: XRState | None) -> tuple[Manifest, tuple[Manifest, ...]] | None:
    """What must stop changing for the fleet to have settled: the XR and what it composes (not its events)."""
    return None if state is None else (state.xr, state.composed)


def _read(out: RenderOutput, catalog: Catalog) -> tuple[Manifest, ...]:
    """The objects a render read from the fleet (``_in_order`` sorts them by kind, namespace and name)."""
    keys = {k for answer in out.reads.seen.values() for k, _ in answer}
    return tuple(e.obj for e in map(catalog.entry, keys) if e is not None)


def _in_order(decided: Mapping[Key, tuple[Manifest, ...]]) -> dict[Key, tuple[Manifest, ...]]:
    """``decided`` with what each XR read sorted by kind, namespace and name: once, not at every decision."""
    return {key: tuple(sorted(read, key=key_of)) for key, read in decided.items()}


def _observing(state: XRState, states: Mapping[Key, XRState]) -> tuple[Manifest, ...]:
    """What an XR observes its composed resources through: composed XRs as they are now, with their status.

    Other composed resources are observed as ``world`` reports them, or as composed without one
    (``simulate``'s ``seen_as``).
    """
    observed = []
    for composed in state.composed:
        child = states.get(key_of(composed)) if is_modelplane(composed) else None
        observed.append(child.xr if child is not None else composed)
    return tuple(observed)


def _simulated(key: Key, sources: Mapping[Key, Manifest], states: States, observe: Observer | None) -> Any:  # noqa: ANN401 - a status or None
    if key not in sources:
        return None
    return observe(sources[key], states) if observe is not None else sources[key].get("status")


def _hosts(composed: Iterable[Manifest]) -> set[Key]:
    """The InferenceClusters the ModelReplicas among ``composed`` run on."""
    return {("InferenceCluster", "", cluster_of(c)) for c in composed if c.get("kind") == "ModelReplica"}


def _refresh(sources: Mapping[Key, Manifest], states: States, keys: Iterable[Key], observe: Observer) -> None:
    """Bring the simulated status of ``keys`` up to date with the fleet now.

    Every key's status is worked out from the fleet as it was before any of them changed.
    """
    updates = []
    for key in keys:
        state = states.get(key)
        simulated = _simulated(key, sources, states, observe) if state is not None else None
        if state is not None and simulated is not None:
            updates.append((key, state, simulated))
    for key, state, simulated in updates:
        status = merge_status(simulated, state.xr.get("status"))
        if status != state.xr.get("status"):
            states.put(key, replace(state, xr={**state.xr, "status": status}))


def _observe(sources: Mapping[Key, Manifest], states: States, observe: Observer) -> None:
    """Bring every manifest's simulated status up to date with the fleet at the end of a pass."""
    _refresh(sources, states, sorted(k for k in sources if k in states), observe)


def _apply(
    sources: Mapping[Key, Manifest],
    states: States,
    key: Key,
    out: RenderOutput,
    observe: Observer | None = None,
) -> None:
    """Bring the fleet up to date with one XR's render: its status, and the XRs it composes."""
    state = states[key]
    base = sources.get(key, state.xr)
    # The XR keeps its own desired spec; its status is what it rendered, under what the manifest simulates.
    xr = {**base, "status": merge_status(_simulated(key, sources, states, observe), out.xr.get("status"))}
    composed = tuple(_named(c, key) if is_modelplane(c) else c for c in out.composed)
    if xr == state.xr:
        xr = state.xr  # unchanged: keep the object, so the catalog need not compare it again
    now = XRState(xr=xr, composed=composed, results=tuple(out.results), parent=state.parent)
    if now != state:
        states.put(key, now)  # else the state stays the very same object (``simulate``'s ``applied``)
    children = {key_of(c): c for c in composed if is_modelplane(c)}
    # A composed XR its parent no longer composes is gone, as Crossplane would delete it.
    for gone in states.children(key):
        if gone not in children:
            states.drop(gone)
    # XRs composed by a parent take their spec and metadata from the parent's desired state.
    for ckey, child in children.items():
        own = states.get(ckey)
        status = own.xr.get("status") if own else None
        child_xr = {**child, "status": status} if status else child
        if own is not None and own.xr == child_xr:
            if own.parent == key:
                continue  # as it is
            child_xr = own.xr
        states.put(
            ckey,
            XRState(
                xr=child_xr,
                composed=own.composed if own else (),
                results=own.results if own else (),
                parent=key,
            ),
        )
