"""The simulated fleet's indexes follow every put and drop: children, kinds, the XR as stored, what changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from modelplane.preview.manifests import Key
from modelplane.preview.states import States, XRState, with_uid

Op = Callable[[States], None]


def _xr(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "modelplane.ai/v1alpha1", "kind": kind, "metadata": {"name": name}, "spec": spec}


DEP: Key = ("ModelDeployment", "", "d")
OTHER: Key = ("ModelDeployment", "", "e")
R1: Key = ("ModelReplica", "", "r1")
R2: Key = ("ModelReplica", "", "r2")
R3: Key = ("ModelReplica", "", "r3")


def _put(key: Key, parent: Key | None = None, **spec: Any) -> Op:
    return lambda states: states.put(key, XRState(xr=_xr(key[0], key[2], **spec), parent=parent))


def _drop(key: Key) -> Op:
    return lambda states: states.drop(key)


# (ops, what DEP's children then are)
CHILDREN = [
    ("none", [_put(DEP)], []),
    ("sorted, whatever the order put", [_put(DEP), _put(R3, DEP), _put(R1, DEP), _put(R2, DEP)], [R1, R2, R3]),
    ("a dropped child is gone", [_put(R1, DEP), _put(R2, DEP), _drop(R1)], [R2]),
    ("a child moved to another parent is gone", [_put(R1, DEP), _put(R2, DEP), _put(R1, OTHER)], [R2]),
    ("a child that lost its parent is gone", [_put(R1, DEP), _put(R1, None)], []),
    ("put again under the same parent, once", [_put(R1, DEP), _put(R1, DEP, replicas=2)], [R1]),
    ("dropped and composed again", [_put(R1, DEP), _drop(R1), _put(R1, DEP)], [R1]),
]


@pytest.mark.parametrize(("ops", "want"), [c[1:] for c in CHILDREN], ids=[c[0] for c in CHILDREN])
def test_children_follow_every_change_even_once_asked_for(ops: list[Op], want: list[Key]) -> None:
    states = States(())
    for op in ops:
        op(states)
        states.children(DEP)  # asked between changes, as the simulation does
    assert states.children(DEP) == want
    assert states.children(DEP) == sorted(k for k, s in states.items() if s.parent == DEP)


# (ops, the ModelReplica keys in the order ``keys_of`` gives them)
KINDS = [
    ("in the order added", [_put(R3), _put(R1), _put(DEP), _put(R2)], [R3, R1, R2]),
    ("put again keeps its place", [_put(R3), _put(R1), _put(R3, replicas=2)], [R3, R1]),
    ("dropped and put again goes last", [_put(R3), _put(R1), _drop(R3), _put(R3)], [R1, R3]),
]


@pytest.mark.parametrize(("ops", "want"), [c[1:] for c in KINDS], ids=[c[0] for c in KINDS])
def test_keys_of_a_kind_come_in_the_order_of_the_fleet(ops: list[Op], want: list[Key]) -> None:
    states = States(())
    for op in ops:
        op(states)
    assert states.keys_of("ModelReplica") == want
    assert states.keys_of("ModelReplica") == [k for k in states if k[0] == "ModelReplica"]


def test_an_xr_is_stored_with_its_uid_once_per_object() -> None:
    states, xr = States(()), _xr("ModelReplica", "r1")
    states.put(R1, XRState(xr=xr))
    stored = states.stored(R1)
    assert stored == with_uid(xr)
    states.put(R1, XRState(xr=xr, parent=DEP))  # another state, the same XR
    assert states.stored(R1) is stored
    states.put(R1, XRState(xr=_xr("ModelReplica", "r1", replicas=2)))
    assert states.stored(R1) == with_uid(_xr("ModelReplica", "r1", replicas=2))
    assert states.catalog.entry(("modelplane.ai", "v1alpha1", "ModelReplica", "", "r1")) is not None


# (ops before the mark, ops after it, what ``changes`` then holds: key -> was it there at the mark)
CHANGES = [
    ("nothing since", [_put(R1)], [], {}),
    ("put since", [_put(R1)], [_put(R1, replicas=2)], {R1: True}),
    ("added since", [], [_put(R1)], {R1: False}),
    ("dropped since", [_put(R1)], [_drop(R1)], {R1: True}),
    ("put twice since: as at the mark", [_put(R1)], [_put(R1, replicas=2), _put(R1, replicas=3)], {R1: True}),
    ("dropping what is not there changes nothing", [], [_drop(R1)], {}),
]


@pytest.mark.parametrize(("before", "after", "want"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_changes_since_the_mark_hold_each_state_as_it_was(
    before: list[Op], after: list[Op], want: dict[Key, bool]
) -> None:
    states = States(())
    for op in before:
        op(states)
    at_mark = dict(states.items())
    states.mark()
    for op in after:
        op(states)
    changes = states.changes()
    assert {k: v is not None for k, v in changes.items()} == want
    assert all(was is at_mark.get(k) for k, was in changes.items())
    # Every key not among them is the very state it was at the mark.
    assert all(states.get(k) is s for k, s in at_mark.items() if k not in changes)


def test_get_and_in_answer_as_the_mapping_does() -> None:
    states = States(())
    _put(R1)(states)
    assert (R1 in states, R2 in states) == (True, False)
    assert (states.get(R1), states.get(R2), states.get(R2, states[R1])) == (states[R1], None, states[R1])


def _on(cluster: str) -> dict[str, str]:
    return {"name": cluster}


# (ops, the ModelReplicas then on cluster "a", and the ModelReplicas of the fleet)
ON_CLUSTER = [
    (
        "sorted, whatever the order put",
        [_put(R3, inferenceClusterRef=_on("a")), _put(R1, inferenceClusterRef=_on("a"))],
        [R1, R3],
        [R1, R3],
    ),
    (
        "moved to another cluster",
        [_put(R1, inferenceClusterRef=_on("a")), _put(R1, inferenceClusterRef=_on("b"))],
        [],
        [R1],
    ),
    (
        "moved back",
        [
            _put(R1, inferenceClusterRef=_on("a")),
            _put(R1, inferenceClusterRef=_on("b")),
            _put(R1, inferenceClusterRef=_on("a")),
        ],
        [R1],
        [R1],
    ),
    (
        "dropped",
        [_put(R1, inferenceClusterRef=_on("a")), _put(R2, inferenceClusterRef=_on("a")), _drop(R1)],
        [R2],
        [R2],
    ),
]


@pytest.mark.parametrize(("ops", "on_a", "replicas"), [c[1:] for c in ON_CLUSTER], ids=[c[0] for c in ON_CLUSTER])
def test_replicas_on_a_cluster_and_of_a_kind_follow_every_change(
    ops: list[Op], on_a: list[Key], replicas: list[Key]
) -> None:
    states = States(())
    for op in ops:
        op(states)
        # Asked between changes, as the simulation does.
        states.replicas_on("a")
        states.of_kind("ModelReplica")
    assert [k for k, _ in states.replicas_on("a")] == on_a
    assert [(k, s) for k, s in states.of_kind("ModelReplica")] == [(k, states[k]) for k in replicas]
