"""Simulate a fleet offline: render every XR, feed composed XRs back, repeat until stable.

Each pass renders every XR known at its start with the whole fleet as required
resources and the XR's own previous composed resources as observed state. XRs
that a pass composes (ModelReplicas, ModelEndpoints, ServingStacks...) join the
fleet and are rendered in the next pass. The loop ends when a pass changes
nothing, or fails after ``max_passes``.

Simulated state comes from the manifests: a ``status`` written in a manifest
stands for what a live system observed, so it wins over what a render reports
for the same field (conditions are merged by type).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from modelplane.preview.manifests import Key, Loaded, Manifest, is_modelplane, key_of
from modelplane.render import RenderInputs, RenderOutput, render

DEFAULT_MAX_PASSES = 20  # a healthy world (--assume-ready) of examples/platform + models settles in 11

Renderer = Callable[[RenderInputs], RenderOutput]
# How a composed resource that is not an XR is observed (the world the fleet runs in).
World = Callable[[Manifest], Manifest]
# What a manifest's status (what a live system observed) becomes as the simulated fleet changes.
Observer = Callable[[Manifest, Mapping["Key", "XRState"]], "dict[str, Any] | None"]


class DidNotConvergeError(RuntimeError):
    """The fleet still changed after the last allowed pass."""


@dataclass(frozen=True)
class XRState:
    """One XR of the simulated fleet after a pass."""

    xr: Manifest
    composed: tuple[Manifest, ...] = ()
    results: tuple[dict[str, Any], ...] = ()
    parent: Key | None = None  # the XR that composed this one; None for the user's manifests


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
    """Overlay a manifest's simulated status on a rendered one (simulated wins)."""
    merged = dict(rendered or {})
    for name, value in (simulated or {}).items():
        if name == "conditions":
            by_type = {c.get("type"): c for c in merged.get("conditions", [])}
            by_type.update({c.get("type"): c for c in value})
            merged["conditions"] = sorted(by_type.values(), key=lambda c: str(c.get("type")))
        else:
            merged[name] = value
    return merged


def _named(child: Manifest, parent: Key) -> Manifest:
    """Give a composed XR that only has generateName a stable name, as the API server would."""
    meta = child.get("metadata", {})
    if meta.get("name"):
        return child
    resource_name = meta.get("annotations", {}).get("crossplane.io/composition-resource-name", "")
    digest = hashlib.sha256(f"{parent}/{resource_name}".encode()).hexdigest()[:5]
    return {**child, "metadata": {**meta, "name": f"{meta.get('generateName', 'x-')}{digest}"}}


def _with_uid(xr: Manifest) -> Manifest:
    """The XR as the API server stores it, with a UID stable across passes.

    Its composed resources' owner references carry the UID, and the renderer checks that what
    an XR observes is controlled by it.
    """
    meta = xr.get("metadata", {})
    if meta.get("uid"):
        return xr
    name = f"{xr.get('apiVersion', '')}/{xr.get('kind', '')}/{meta.get('namespace', '')}/{meta.get('name', '')}"
    return {**xr, "metadata": {**meta, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"modelplane-preview:{name}"))}}


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
    replicas = (c for c in composed if is_modelplane(c) and c.get("kind") == "ModelReplica")
    return sorted(replicas, key=lambda c: json.dumps(c, sort_keys=True))


def _fingerprint(states: Mapping[Key, XRState]) -> dict[Key, str]:
    return {k: json.dumps([s.xr, s.composed], sort_keys=True) for k, s in states.items()}


def simulate(
    loaded: Loaded,
    compositions: Mapping[str, Manifest],
    *,
    max_passes: int = DEFAULT_MAX_PASSES,
    renderer: Renderer = render,
    world: World | None = None,
    observe: Observer | None = None,
) -> Fleet:
    """Render the fleet until nothing changes.

    Args:
        loaded: The manifests of the fleet.
        compositions: The Composition of each kind, by kind.
        max_passes: Give up after this many passes.
        renderer: The render implementation (the in-process renderer by default).
        world: How composed resources other than XRs are observed; None (the default) observes
            them as composed, with no status (``modelplane.preview.world.healthy`` simulates a
            live, healthy system).
        observe: How a manifest's status follows the simulated fleet (e.g. a scheduler's observed
            GPUs grow with the replicas the simulation makes Ready); None keeps it as written.

    Raises:
        DidNotConvergeError: the fleet still changed in the last pass; the
            message names the objects that did.

    """
    sources = {key_of(x): x for x in loaded.xrs}
    states = {k: XRState(xr=x) for k, x in sorted(sources.items())}
    changed: list[Key] = []
    decided: dict[Key, tuple[Manifest, ...]] = {}
    for n in range(1, max_passes + 1):
        before = _fingerprint(states)
        errors: dict[Key, str] = {}
        # One XR at a time, each seeing what the ones before it composed, as a
        # control plane that reconciles them one by one would.
        for key in list(states):
            state = states.get(key)
            if state is None:  # its parent stopped composing it earlier in this pass
                continue
            # Not the XR itself: the render engine stores it already, and a required copy would replace it
            # (losing its UID and its references to what it composed).
            required = [s.xr for k, s in states.items() if k != key] + list(loaded.others)
            try:
                out = renderer(
                    RenderInputs(
                        xr=(xr := _with_uid(state.xr)),
                        composition=compositions[key[0]],
                        observed=[_owned(o, xr) for o in _observed(state, states, world)],
                        required=required,
                    )
                )
            except Exception as err:  # noqa: BLE001 - a failing XR is reported, the rest goes on
                errors[key] = str(err)
                continue
            if _children(out.composed) != _children(state.composed) or key not in decided:
                decided[key] = tuple(required)
            states = _apply(sources, states, key, out, observe)
            if observe is not None and key[0] == "ModelDeployment":
                # Its replicas' clusters publish what they now hold before the next deployment reads them.
                states = _refresh(sources, states, _hosts(state.composed) | _hosts(out.composed), observe)
        if observe is not None:
            states = _observe(sources, states, observe)
        after = _fingerprint(states)
        if after == before:
            return Fleet(states=states, others=loaded.others, passes=n, errors=errors, decided=decided)
        changed = sorted(k for k, v in after.items() if before.get(k) != v)
    names = ", ".join(f"{k[0]} {'/'.join(filter(None, k[1:]))}" for k in changed[:10])
    msg = f"the fleet did not settle after {max_passes} passes; still changing: {names}"
    raise DidNotConvergeError(msg)


def _observed(state: XRState, states: Mapping[Key, XRState], world: World | None = None) -> list[Manifest]:
    """What an XR observes of its composed resources: composed XRs with the status they report.

    Other composed resources are observed as ``world`` reports them, or as composed without one.
    """
    observed = []
    for composed in state.composed:
        if is_modelplane(composed):
            child = states.get(key_of(composed))
            observed.append(child.xr if child is not None else composed)
        else:
            observed.append(world(composed) if world is not None else composed)
    return observed


def _simulated(
    key: Key, sources: Mapping[Key, Manifest], states: Mapping[Key, XRState], observe: Observer | None
) -> Any:  # noqa: ANN401 - a status or None
    if key not in sources:
        return None
    return observe(sources[key], states) if observe is not None else sources[key].get("status")


def _hosts(composed: Iterable[Manifest]) -> set[Key]:
    """The InferenceClusters the ModelReplicas among ``composed`` run on."""
    return {
        ("InferenceCluster", "", str(c.get("spec", {}).get("inferenceClusterRef", {}).get("name", "")))
        for c in composed
        if c.get("kind") == "ModelReplica"
    }


def _refresh(
    sources: Mapping[Key, Manifest], states: Mapping[Key, XRState], keys: Iterable[Key], observe: Observer
) -> dict[Key, XRState]:
    """Bring the simulated status of ``keys`` up to date with the fleet now."""
    after = dict(states)
    for key in keys:
        state = states.get(key)
        simulated = _simulated(key, sources, states, observe) if state is not None else None
        if state is not None and simulated is not None:
            after[key] = replace(state, xr={**state.xr, "status": merge_status(simulated, state.xr.get("status"))})
    return after


def _observe(sources: Mapping[Key, Manifest], states: Mapping[Key, XRState], observe: Observer) -> dict[Key, XRState]:
    """Bring every manifest's simulated status up to date with the fleet at the end of a pass."""
    after = dict(states)
    for key, state in states.items():
        simulated = _simulated(key, sources, states, observe)
        if simulated is not None:
            after[key] = replace(state, xr={**state.xr, "status": merge_status(simulated, state.xr.get("status"))})
    return after


def _apply(
    sources: Mapping[Key, Manifest],
    states: Mapping[Key, XRState],
    key: Key,
    out: RenderOutput,
    observe: Observer | None = None,
) -> dict[Key, XRState]:
    """Return the fleet after one XR's render: its status, and the XRs it composes."""
    state = states[key]
    base = sources.get(key, state.xr)
    # The XR keeps its own desired spec; its status is what it rendered, under what the manifest simulates.
    xr = {**base, "status": merge_status(_simulated(key, sources, states, observe), out.xr.get("status"))}
    composed = tuple(_named(c, key) if is_modelplane(c) else c for c in out.composed)
    after = dict(states)
    after[key] = XRState(xr=xr, composed=composed, results=tuple(out.results), parent=state.parent)
    children = {key_of(c): c for c in composed if is_modelplane(c)}
    # A composed XR its parent no longer composes is gone, as Crossplane would delete it.
    for gone in [k for k, s in after.items() if s.parent == key and k not in children]:
        del after[gone]
    # XRs composed by a parent take their spec and metadata from the parent's desired state.
    for ckey, child in children.items():
        own = after.get(ckey)
        status = own.xr.get("status") if own else None
        after[ckey] = XRState(
            xr={**child, "status": status} if status else child,
            composed=own.composed if own else (),
            results=own.results if own else (),
            parent=key,
        )
    return dict(sorted(after.items()))
