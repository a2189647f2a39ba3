"""The in-process renderer: pipeline, requirements, readiness and output shape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from modelplane.render import RenderError, RenderInputs, RenderOutput, render, to_yaml
from modelplane.render.engine import CONDITION_TIME, xr_uid
from tests.render.toys import ToyRunner, toy_composition

XR: dict[str, Any] = {
    "apiVersion": "example.org/v1",
    "kind": "XThing",
    "metadata": {"name": "thing", "namespace": "ns"},
    "spec": {"size": 2},
}
UID = xr_uid(XR)
OWNER = {
    "apiVersion": "example.org/v1",
    "blockOwnerDeletion": True,
    "controller": True,
    "kind": "XThing",
    "name": "thing",
    "uid": UID,
}


_comp = toy_composition


def _composed(name: str, data: dict[str, str], *, fixed_name: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "annotations": {"crossplane.io/composition-resource-name": name},
        "labels": {"crossplane.io/composite": "thing"},
        "namespace": "ns",
        "ownerReferences": [OWNER],
    }
    meta.update({"name": fixed_name} if fixed_name else {"generateName": "thing-"})
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def _xr(*conditions: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    conds = [{**c, "lastTransitionTime": CONDITION_TIME} for c in conditions]
    return {
        "apiVersion": "example.org/v1",
        "kind": "XThing",
        "metadata": {"name": "thing", "namespace": "ns"},
        "status": {**(status or {}), "conditions": conds},
    }


AVAILABLE = {"type": "Ready", "status": "True", "reason": "Available"}
CM = {"apiVersion": "v1", "kind": "ConfigMap"}


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {**CM, "metadata": {"name": name, "labels": labels}}


def _ctx(fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "render.crossplane.io/v1beta1", "kind": "Context", "fields": fields or {}}


def _result(step: str, severity: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "render.crossplane.io/v1beta1",
        "kind": "Result",
        "step": step,
        "severity": severity,
        "message": message,
    }


@dataclass(frozen=True)
class Case:
    scripts: list[dict[str, Any]]
    want: RenderOutput
    required: list[dict[str, Any]] = field(default_factory=list)
    observed: list[dict[str, Any]] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    calls: int = 1


CASES = [
    pytest.param(Case([{}], RenderOutput(_xr(AVAILABLE), [], [], _ctx())), id="nothing-composed-is-available"),
    pytest.param(
        Case(
            [
                {
                    "resources": {
                        "b": {"resource": {**CM, "data": {"k": "v"}}, "ready": "True"},
                        "a": {"resource": {**CM, "metadata": {"name": "fixed"}}},
                    }
                }
            ],
            RenderOutput(
                _xr({"type": "Ready", "status": "False", "reason": "Creating", "message": "Unready resources: a"}),
                [{**CM, "metadata": _composed("a", {}, fixed_name="fixed")["metadata"]}, _composed("b", {"k": "v"})],
                [],
                _ctx(),
            ),
        ),
        id="composed-sorted-named-and-unready",
    ),
    pytest.param(
        Case(
            [{"resources": {n: {"resource": CM} for n in ("d", "c", "b", "a")}}],
            RenderOutput(
                _xr(
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "Creating",
                        "message": "Unready resources: a, b, c, and 1 more",
                    }
                ),
                [{**CM, "metadata": _composed(n, {})["metadata"]} for n in ("a", "b", "c", "d")],
                [],
                _ctx(),
            ),
        ),
        id="unready-message-names-three",
    ),
    pytest.param(
        Case(
            [{"resources": {"a": {"resource": CM}}, "compositeReady": "True", "compositeStatus": {"phase": "Up"}}],
            RenderOutput(
                _xr(AVAILABLE, status={"phase": "Up"}), [{**CM, "metadata": _composed("a", {})["metadata"]}], [], _ctx()
            ),
        ),
        id="composite-ready-overrides-resources",
    ),
    pytest.param(
        Case(
            [
                {
                    "conditions": [
                        {"type": "Scheduled", "status": "False", "reason": "NoCapacity", "message": "0 of 2 placed"},
                        {"type": "Ready", "status": "False", "reason": "Ignored"},
                    ],
                    "results": [{"severity": "Warning", "message": "careful"}, {"severity": "Normal", "message": "ok"}],
                },
                {"conditions": [{"type": "Scheduled", "status": "True", "reason": "Placed"}]},
            ],
            RenderOutput(
                _xr(AVAILABLE, {"type": "Scheduled", "status": "True", "reason": "Placed"}),
                [],
                [_result("s0", "SEVERITY_WARNING", "careful"), _result("s0", "SEVERITY_NORMAL", "ok")],
                _ctx(),
            ),
            calls=2,
        ),
        id="conditions-merge-and-system-ones-ignored",
    ),
    pytest.param(
        Case(
            [
                {
                    "require": {
                        "one": {**CM, "name": "b"},
                        "gpu": {**CM, "matchLabels": {"tier": "gpu"}},
                        "other-ns": {**CM, "name": "b", "namespace": "elsewhere"},
                    }
                }
            ],
            RenderOutput(
                _xr(
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "Creating",
                        "message": "Unready resources: required-gpu, required-one, and required-other-ns",
                    }
                ),
                [
                    _composed("required-gpu", {"names": "a,c"}, fixed_name="required-gpu"),
                    _composed("required-one", {"names": "b"}, fixed_name="required-one"),
                    _composed("required-other-ns", {"names": "<none>"}, fixed_name="required-other-ns"),
                ],
                [],
                _ctx(),
            ),
            required=[
                _cm("c", tier="gpu"),
                _cm("b", tier="cpu"),
                _cm("a", tier="gpu"),
                {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "b"}},
            ],
            calls=2,
        ),
        id="required-resources-fetched-on-second-call",
    ),
    pytest.param(
        Case(
            [
                {"setContext": {"k": {"n": 1}}},
                {"contextToResource": {"key": "k", "resource": "got"}},
                {"contextToResource": {"key": "seed", "resource": "seeded"}},
            ],
            RenderOutput(
                _xr(
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "Creating",
                        "message": "Unready resources: got, seeded",
                    }
                ),
                [
                    _composed("got", {"value": '{"n": 1.0}'}, fixed_name="got"),
                    _composed("seeded", {"value": '"v"'}, fixed_name="seeded"),
                ],
                [],
                _ctx({"k": {"n": 1}, "seed": "v"}),
            ),
            context={"seed": "v"},
            calls=3,
        ),
        id="context-flows-between-steps",
    ),
    pytest.param(
        Case(
            [{"resources": {"a": {"resource": {**CM, "metadata": {"name": "ignored"}}, "ready": "True"}}}],
            RenderOutput(_xr(AVAILABLE), [_composed("a", {}, fixed_name="thing-x1")], [], _ctx()),
            observed=[
                {
                    **CM,
                    "metadata": {"name": "thing-x1", "annotations": {"crossplane.io/composition-resource-name": "a"}},
                }
            ],
        ),
        id="observed-resource-keeps-its-name",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_render(case: Case) -> None:
    toy = ToyRunner()
    got = render(
        RenderInputs(
            xr=XR,
            composition=_comp(*case.scripts),
            observed=case.observed,
            required=case.required,
            context=case.context,
            functions={"toy": toy},
        )
    )
    want = case.want
    if case.observed:
        # An observed resource keeps its name; this one has no data.
        want.composed[0].pop("data", None)
    assert got == want
    assert toy.calls == case.calls


@pytest.mark.parametrize(
    ("scripts", "functions", "message"),
    [
        pytest.param(
            [{"results": [{"severity": "Fatal", "message": "never"}]}],
            {"toy": ToyRunner()},
            'pipeline step "s0" returned a fatal result: never',
            id="fatal-result",
        ),
        pytest.param(
            [{"flapRequirements": True}],
            {"toy": ToyRunner()},
            'cannot run pipeline step "s0": requirements didn\'t stabilize after the maximum number of iterations (5)',
            id="requirements-never-stabilise",
        ),
        pytest.param(
            [{}],
            {"other": ToyRunner()},
            'cannot run pipeline step "s0": unknown Function "toy" - it is not among the functions supplied (other)',
            id="unknown-function",
        ),
    ],
)
def test_render_errors(scripts: list[dict[str, Any]], functions: dict[str, ToyRunner], message: str) -> None:
    with pytest.raises(RenderError) as err:
        render(RenderInputs(xr=XR, composition=_comp(*scripts), functions=functions))
    assert str(err.value) == message


def test_flapping_function_is_called_six_times() -> None:
    toy = ToyRunner()
    with pytest.raises(RenderError):
        render(RenderInputs(xr=XR, composition=_comp({"flapRequirements": True}), functions={"toy": toy}))
    assert toy.calls == 6


@pytest.mark.parametrize(
    ("composition", "message"),
    [
        pytest.param(
            {**_comp(), "kind": "CompositionRevision"},
            "not a composition: CompositionRevision/c",
            id="not-a-composition",
        ),
        pytest.param(
            {
                **_comp(),
                "spec": {**_comp()["spec"], "compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "XOther"}},
            },
            "composition's compositeTypeRef.kind (XOther) does not match XR's kind (XThing)",
            id="kind-mismatch",
        ),
        pytest.param(
            {**_comp(), "spec": {**_comp()["spec"], "mode": "Resources"}},
            'render only supports Composition Function pipelines: Composition "c" must use spec.mode: Pipeline',
            id="not-a-pipeline",
        ),
    ],
)
def test_bad_composition(composition: dict[str, Any], message: str) -> None:
    with pytest.raises(RenderError) as err:
        render(RenderInputs(xr=XR, composition=composition, functions={}))
    assert str(err.value) == message


def test_to_yaml_orders_documents() -> None:
    out = RenderOutput(
        xr={"kind": "X"},
        composed=[{"kind": "A"}, {"kind": "B"}],
        results=[{"kind": "Result"}],
        context={"kind": "Context"},
    )
    cases = {
        (False, False): "---\nkind: X\n---\nkind: A\n---\nkind: B\n",
        (True, True): "---\nkind: X\n---\nkind: A\n---\nkind: B\n---\nkind: Result\n---\nkind: Context\n",
    }
    for (results, context), want in cases.items():
        assert to_yaml(out, include_function_results=results, include_context=context) == want


def test_xr_uid_is_the_v2_3_render_uid() -> None:
    # uuid.NewSHA1(uuid.Nil, "example.org/v1, Kind=XThing\x00ns\x00thing") as computed by Go.
    assert UID == "5275b665-b576-530c-bbc0-76f60ca475f1"
    assert xr_uid({**XR, "metadata": {**XR["metadata"], "uid": "given"}}) == "given"
