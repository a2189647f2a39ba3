"""What fnkit remembers or writes directly reads and writes exactly as before: conditions, responses, requirements."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function import resource, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.conditions import Condition, Reason, Status, Type
from modelplane.fnkit import structs
from modelplane.fnkit.required import Requirement
from modelplane.fnkit.runner import respond
from modelplane.fnkit.status import set_conditions
from modelplane.problems import Problem
from modelplane.readiness import Readiness

READY = {"type": "Ready", "status": "True", "reason": "Available", "message": "up", "observedGeneration": 2}
SYNCED = {"type": "Synced", "status": "False", "reason": "ReconcileError", "message": "boom"}


def _read(obj: dict[str, Any], typ: str, *, strict: bool, check: bool) -> tuple[Readiness | str, list[Problem]]:
    """``readiness_at`` of ``obj`` (or "unclear"), and the problems it named."""
    problems: list[Problem] = []
    try:
        said: Readiness | str = structs.readiness_at(
            resource.dict_to_struct(obj).fields, typ, problems if check else None, strict=strict
        )
    except structs.UnclearError:
        said = "unclear"
    return said, problems


# (object, condition type, strict, whether problems are asked for): read cold, then again from what was remembered.
CONDITIONS = [
    pytest.param({"status": {"conditions": [READY, SYNCED]}}, "Ready", False, True, id="ready"),
    pytest.param({"status": {"conditions": [READY, SYNCED]}}, "Synced", False, True, id="same-list-other-type"),
    pytest.param({"status": {"conditions": [READY, SYNCED]}}, "Ready", False, False, id="unchecked"),
    pytest.param({"metadata": {"generation": 3}, "status": {"conditions": [READY]}}, "Ready", False, True, id="behind"),
    pytest.param(
        {"metadata": {"generation": 2}, "status": {"conditions": [READY]}}, "Ready", False, True, id="current"
    ),
    pytest.param({"status": {"conditions": [1, READY]}}, "Ready", False, True, id="entry-number"),
    pytest.param(
        {"status": {"conditions": [{"type": "Ready", "status": True}, READY]}}, "Ready", False, True, id="status-bool"
    ),
    pytest.param({"status": {"conditions": [{"type": "Ready"}]}}, "Ready", True, False, id="strict-no-status"),
    pytest.param({"status": {"conditions": [READY]}}, "Ready", True, False, id="strict-fits"),
    pytest.param(
        {"apiVersion": "modelplane.ai/v1alpha1", "status": {"readyVerdict": False, "conditions": [READY]}},
        "Ready",
        False,
        True,
        id="verdict",
    ),
]


@pytest.mark.parametrize(("obj", "typ", "strict", "check"), CONDITIONS)
def test_a_list_of_conditions_reads_the_same_remembered(
    obj: dict[str, Any], typ: str, *, strict: bool, check: bool
) -> None:
    structs.forget()
    cold = _read(obj, typ, strict=strict, check=check)
    assert structs._CONDITIONS
    assert _read(obj, typ, strict=strict, check=check) == cold
    # Each way of reading the same list is remembered apart.
    for other_typ, other_strict, other_check in (
        (typ, False, False),
        (typ, False, True),
        (typ, True, False),
        ("Synced" if typ == "Ready" else "Ready", strict, check),
    ):
        structs.forget()
        alone = _read(obj, other_typ, strict=other_strict, check=other_check)
        assert _read(obj, typ, strict=strict, check=check) == cold
        assert _read(obj, other_typ, strict=other_strict, check=other_check) == alone


def test_conditions_remembered_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    structs.forget()
    monkeypatch.setattr(structs, "_CONDITIONS_BUDGET", 3 * structs._CONDITION_OVERHEAD)
    objects = [{"status": {"conditions": [{**READY, "message": f"up {i}"}]}} for i in range(10)]
    cold = [_read(o, "Ready", strict=False, check=True) for o in objects]
    assert len(structs._CONDITIONS) <= 3
    assert structs._CONDITIONS.held <= 3 * structs._CONDITION_OVERHEAD
    assert [_read(o, "Ready", strict=False, check=True) for o in objects] == cold
    assert [c[0].message for c in cold] == [f"up {i}" for i in range(10)]  # type: ignore[union-attr]


# (tag, desired composite, desired resources, context)
REQUESTS = [
    pytest.param("", None, {}, None, id="empty"),
    pytest.param("t1", {"kind": "X", "spec": {"n": 1}}, {"a": {"kind": "A"}}, {"k": "v"}, id="full"),
]


@pytest.mark.parametrize(("tag", "composite", "resources", "context"), REQUESTS)
def test_respond_is_the_sdks_response(
    tag: str, composite: dict[str, Any] | None, resources: dict[str, dict[str, Any]], context: dict[str, Any] | None
) -> None:
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag=tag))
    if composite is not None:
        req.desired.composite.resource.update(composite)
    for key, obj in resources.items():
        req.desired.resources[key].resource.update(obj)
    if context is not None:
        req.context.update(context)
    assert respond(req) == response.to(req)
    assert respond(req).SerializeToString(deterministic=True) == response.to(req).SerializeToString(deterministic=True)


CONDITION_SETS = [
    pytest.param((), id="none"),
    pytest.param((Condition(Type.VALID, Status.TRUE, Reason.VALID),), id="no-message"),
    pytest.param(
        (
            Condition(Type.VALID, Status.FALSE, Reason.INVALID_SPEC, "spec.x: bad"),
            Condition(Type.SCHEDULED, Status.UNKNOWN, Reason.SCHEDULED, "waiting"),
        ),
        id="two-with-messages",
    ),
]


@pytest.mark.parametrize("conditions", CONDITION_SETS)
def test_set_conditions_writes_what_the_sdk_writes(conditions: tuple[Condition, ...]) -> None:
    ours, sdk = fnv1.RunFunctionResponse(), fnv1.RunFunctionResponse()
    set_conditions(ours, *conditions)
    response.set_conditions(
        sdk,
        *(
            resource.Condition(typ=c.type, status=c.status, reason=c.reason, message=c.message or None)
            for c in conditions
        ),
    )
    assert ours == sdk


# (name, labels, namespace): as the SDK asks, an empty matchLabels set explicitly.
SELECTORS = [
    pytest.param("one", None, "", id="by-name"),
    pytest.param("one", None, "ns", id="by-name-in-namespace"),
    pytest.param("", {"a": "b", "c": "d"}, "", id="by-labels"),
    pytest.param("", {}, "ns", id="every-one-in-namespace"),
    pytest.param("", None, "", id="every-one"),
]


@pytest.mark.parametrize(("name", "labels", "namespace"), SELECTORS)
def test_a_requirement_asks_as_the_sdk_does(name: str, labels: dict[str, str] | None, namespace: str) -> None:
    requirement = Requirement("things", "example.org/v1", "Thing")
    ours, sdk = fnv1.RunFunctionResponse(), fnv1.RunFunctionResponse()
    # Asked twice: the second replaces the first whole.
    requirement.request(ours, name="other", labels={"x": "y"}, namespace="elsewhere")
    requirement.request(ours, name=name, labels=labels, namespace=namespace)
    where = namespace or None
    if name:
        response.require_resources(sdk, "things", "example.org/v1", "Thing", match_name=name, namespace=where)
    else:
        response.require_resources(
            sdk, "things", "example.org/v1", "Thing", match_labels=dict(labels or {}), namespace=where
        )
        sdk.requirements.resources["things"].match_labels.SetInParent()
    assert ours == sdk
    assert ours.requirements.resources["things"].WhichOneof("match") == ("match_name" if name else "match_labels")


# (metadata, identity)
IDENTITIES = [
    pytest.param({"uid": "u", "resourceVersion": "7"}, ("u", "7"), id="both"),
    pytest.param({"uid": "u"}, None, id="no-version"),
    pytest.param({"uid": "", "resourceVersion": "7"}, None, id="empty-uid"),
    pytest.param({"uid": "u", "resourceVersion": ""}, None, id="empty-version"),
    pytest.param(None, None, id="no-metadata"),
]


@pytest.mark.parametrize(("metadata", "want"), IDENTITIES)
def test_identity(metadata: dict[str, Any] | None, want: tuple[str, str] | None) -> None:
    obj = {"metadata": metadata} if metadata is not None else {}
    assert structs.identity(resource.dict_to_struct(obj).fields) == want
