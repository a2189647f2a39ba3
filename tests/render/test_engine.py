"""The in-process renderer end to end: one reconcile, its XR, composed resources, events and context."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import json_format

from modelplane import protojson
from modelplane.render import RenderError, RenderInputs, RenderOutput, render
from modelplane.render.composed import child_name
from modelplane.render.model import CONDITION_TIME
from modelplane.render.reconciler import xr_uid
from modelplane.render.requests import KeptRequests
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
CM = {"apiVersion": "v1", "kind": "ConfigMap"}

_comp = toy_composition


def _name(resource_name: str) -> str:
    return child_name("thing-", UID, resource_name)


def _composed(name: str, data: dict[str, str] | None = None, *, fixed_name: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "annotations": {"crossplane.io/composition-resource-name": name},
        "labels": {"crossplane.io/composite": "thing"},
        "namespace": "ns",
        "ownerReferences": [OWNER],
        "name": fixed_name or _name(name),
    }
    if not fixed_name:
        meta["generateName"] = "thing-"
    return {**CM, "metadata": meta, **({"data": data} if data is not None else {})}


def _unowned(composed: dict[str, Any]) -> dict[str, Any]:
    meta = {**composed["metadata"], "generateName": "thing-", "ownerReferences": [{**OWNER, "uid": ""}]}
    return {**composed, "metadata": meta}


def _cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    c = {"type": type_, "status": status, "reason": reason, "lastTransitionTime": CONDITION_TIME}
    return {**c, "message": message} if message else c


AVAILABLE = _cond("Ready", "True", "Available")


def _xr(*conditions: dict[str, Any], refs: Sequence[str] = (), status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The XR the reconciler leaves: its references, the status, and Responsive, the functions', Synced and Ready."""
    *custom, ready = conditions or (AVAILABLE,)
    return {
        "apiVersion": "example.org/v1",
        "kind": "XThing",
        "metadata": {"name": "thing", "namespace": "ns"},
        "spec": {"crossplane": {"resourceRefs": [{**CM, "name": n} for n in refs]}},
        "status": {
            **(status or {}),
            "conditions": [
                _cond("Responsive", "True", "WatchCircuitClosed"),
                *custom,
                _cond("Synced", "True", "ReconcileSuccess"),
                ready,
            ],
        },
    }


def _event(severity: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "render.crossplane.io/v1beta1",
        "kind": "Result",
        "severity": severity,
        "reason": reason,
        "message": message,
    }


SELECTED = _event("Normal", "SelectComposition", "Successfully selected composition: c")


def _unready(*names: str) -> list[dict[str, Any]]:
    return [_event("Normal", "ComposeResources", f'Composed resource "{n}" is not yet ready') for n in names]


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {**CM, "metadata": {"name": name, "labels": labels}}


def _ctx(fields: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "render.crossplane.io/v1beta1", "kind": "Context", "fields": fields or {}}


@dataclass(frozen=True)
class Case:
    scripts: list[dict[str, Any]]
    want: RenderOutput
    required: list[dict[str, Any]] = field(default_factory=list)
    observed: list[dict[str, Any]] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)
    calls: int = 1


CASES = [
    pytest.param(Case([{}], RenderOutput(_xr(), [], [SELECTED], _ctx())), id="nothing-composed-is-available"),
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
                _xr(_cond("Ready", "False", "Creating", "Unready resources: a"), refs=["fixed", _name("b")]),
                [_composed("a", fixed_name="fixed"), _composed("b", {"k": "v"})],
                [SELECTED, *_unready("a")],
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
                    _cond("Ready", "False", "Creating", "Unready resources: a, b, c, and 1 more"),
                    refs=sorted(_name(n) for n in "abcd"),
                ),
                [_composed(n) for n in "abcd"],
                [SELECTED, *_unready(*"abcd")],
                _ctx(),
            ),
        ),
        id="unready-message-names-three",
    ),
    pytest.param(
        Case(
            [{"resources": {"a": {"resource": CM}}, "compositeReady": "True", "compositeStatus": {"phase": "Up"}}],
            RenderOutput(
                _xr(AVAILABLE, refs=[_name("a")], status={"phase": "Up"}),
                [_composed("a")],
                [SELECTED, *_unready("a")],
                _ctx(),
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
                    "results": [
                        {"severity": "Warning", "message": "careful"},
                        {"severity": "Normal", "message": "ok", "reason": "Placed"},
                    ],
                },
                {"conditions": [{"type": "Scheduled", "status": "True", "reason": "Placed"}]},
            ],
            RenderOutput(
                _xr(_cond("Scheduled", "True", "Placed"), AVAILABLE),
                [],
                [
                    SELECTED,
                    _event("Warning", "ComposeResources", 'Pipeline step "s0": careful'),
                    _event("Normal", "Placed", 'Pipeline step "s0": ok'),
                ],
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
                    _cond(
                        "Ready",
                        "False",
                        "Creating",
                        "Unready resources: required-gpu, required-one, and required-other-ns",
                    ),
                    refs=["required-gpu", "required-one", "required-other-ns"],
                ),
                [
                    _composed("required-gpu", {"names": "a,c"}, fixed_name="required-gpu"),
                    _composed("required-one", {"names": "b"}, fixed_name="required-one"),
                    _composed("required-other-ns", {"names": "<none>"}, fixed_name="required-other-ns"),
                ],
                [SELECTED, *_unready("required-gpu", "required-one", "required-other-ns")],
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
                _xr(_cond("Ready", "False", "Creating", "Unready resources: got, seeded"), refs=["got", "seeded"]),
                [
                    _composed("got", {"value": '{"n": 1.0}'}, fixed_name="got"),
                    _composed("seeded", {"value": '"v"'}, fixed_name="seeded"),
                ],
                [SELECTED, *_unready("got", "seeded")],
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
            RenderOutput(_xr(refs=["thing-x1"]), [_composed("a", fixed_name="thing-x1")], [SELECTED], _ctx()),
            observed=[
                {
                    **CM,
                    "metadata": {
                        "name": "thing-x1",
                        "namespace": "ns",
                        "annotations": {"crossplane.io/composition-resource-name": "a"},
                    },
                }
            ],
        ),
        id="observed-resource-keeps-its-name",
    ),
    pytest.param(
        Case(
            [{"resources": {"a": {"resource": CM, "ready": "True"}}}],
            # The reconciler reads back the copy without a UID: the owner reference has none, and the
            # name comes from generateName (a suffix Crossplane draws at random, ours from a hash).
            RenderOutput(
                _xr(refs=["thing-tdnns"]),
                [_unowned(_composed("a", fixed_name="thing-tdnns"))],
                [SELECTED],
                _ctx(),
            ),
            required=[{**XR, "spec": {"size": 7}}],
        ),
        id="the-xr-itself-required-replaces-the-stored-one",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_render(case: Case) -> None:
    _renders_as_wanted(case, ToyRunner())


def _renders_as_wanted(case: Case, toy: ToyRunner) -> None:
    """``case`` rendered with ``toy`` as its function gives what it wants, in the calls it wants."""
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
    assert got == case.want
    assert toy.calls == case.calls


@pytest.mark.parametrize(
    ("scripts", "functions", "message"),
    [
        pytest.param(
            [{"results": [{"severity": "Fatal", "message": "never"}]}],
            {"toy": ToyRunner()},
            'cannot compose resources: pipeline step "s0" returned a fatal result: never',
            id="fatal-result",
        ),
        pytest.param(
            [{"flapRequirements": True}],
            {"toy": ToyRunner()},
            'reconcile failed: cannot compose resources: cannot run Composition pipeline step "s0": '
            "requirements didn't stabilize after the maximum number of iterations (5)",
            id="requirements-never-stabilise",
        ),
        pytest.param(
            [{}],
            {"other": ToyRunner()},
            'reconcile failed: cannot compose resources: cannot run Composition pipeline step "s0": '
            'unknown function "toy" - it is not among the functions supplied (other)',
            id="unknown-function",
        ),
        pytest.param(
            [{"resources": {"a": {"resource": {**CM, "metadata": {"name": "Not_Valid"}}}}}],
            {"toy": ToyRunner()},
            'reconcile failed: cannot compose resources: cannot apply composed resource "a" because it has an '
            'invalid name "Not_Valid". Must be a valid RFC 1123 subdomain name.',
            id="invalid-name",
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
    ("xr", "composition", "message"),
    [
        pytest.param(
            XR,
            {**_comp(), "kind": "CompositionRevision"},
            "not a composition: CompositionRevision/c",
            id="not-a-composition",
        ),
        pytest.param(
            XR,
            {
                **_comp(),
                "spec": {**_comp()["spec"], "compositeTypeRef": {"apiVersion": "example.org/v1", "kind": "XOther"}},
            },
            "composition's compositeTypeRef.kind (XOther) does not match XR's kind (XThing)",
            id="kind-mismatch",
        ),
        pytest.param(
            {**XR, "spec": {"crossplane": {"compositionSelector": {"matchLabels": {"tier": "gold"}}}}},
            _comp(),
            'composition "c" is missing required label "tier"',
            id="selector-label-missing",
        ),
        pytest.param(
            {**XR, "spec": {"crossplane": {"compositionSelector": {"matchLabels": {"tier": "gold"}}}}},
            {**_comp(), "metadata": {"name": "c", "labels": {"tier": "silver"}}},
            'composition "c" has incorrect value for label "tier": want "gold", got "silver"',
            id="selector-label-differs",
        ),
        pytest.param(
            XR,
            {**_comp(), "spec": {**_comp()["spec"], "mode": "Resources"}},
            'render only supports Composition Function pipelines: Composition "c" must use spec.mode: Pipeline',
            id="not-a-pipeline",
        ),
    ],
)
def test_bad_composition(xr: dict[str, Any], composition: dict[str, Any], message: str) -> None:
    with pytest.raises(RenderError) as err:
        render(RenderInputs(xr=xr, composition=composition, functions={}))
    assert str(err.value) == message


def test_xr_uid_is_the_render_engine_uid() -> None:
    # The UIDs Crossplane core v2.4's render engine gave these XRs (uuid.NewSHA1(uuid.Nil, "<gvk>\x00<ns>\x00<name>")).
    assert UID == "5275b665-b576-530c-bbc0-76f60ca475f1"
    assert xr_uid({**XR, "metadata": {"name": "thing", "namespace": "team-a"}}) == (
        "1f0a367a-a3b9-5c8d-956c-43970bcdebcc"
    )
    assert xr_uid({**XR, "metadata": {**XR["metadata"], "uid": "given"}}) == "given"


_REQUIRE_A = {"require": {"a": {"apiVersion": "v1", "kind": "ConfigMap", "name": "a"}}}
_REQUIRE_B = {"require": {"b": {"apiVersion": "v1", "kind": "ConfigMap", "name": "b"}}}


@pytest.mark.parametrize(
    ("before", "now", "calls"),
    [
        pytest.param(_REQUIRE_A, _REQUIRE_A, 1, id="requires-the-same-again-called-once"),
        pytest.param(_REQUIRE_A, _REQUIRE_B, 3, id="requires-something-else-starts-over"),
        pytest.param(_REQUIRE_A, {**_REQUIRE_A, "setContext": {"k": "v"}}, 3, id="writes-the-context-starts-over"),
        pytest.param(
            _REQUIRE_A,
            {**_REQUIRE_A, "results": [{"severity": "Fatal", "message": "no"}]},
            2,
            id="fatal-starts-over",
        ),
        pytest.param({}, _REQUIRE_A, 2, id="required-nothing-before-no-hint"),
    ],
)
@pytest.mark.parametrize("kept", [False, True], ids=["built-anew", "in-a-kept-request"])
def test_a_step_given_what_it_required_last_renders_as_without(
    before: dict[str, Any], now: dict[str, Any], calls: int, kept: bool
) -> None:
    required = [_cm("a"), _cm("b")]
    first = render(RenderInputs(xr=XR, composition=_comp(before), required=required, functions={"toy": ToyRunner()}))
    requests = KeptRequests() if kept else None

    def again(hints: Mapping[str, Any]) -> tuple[RenderOutput | str, int]:
        toy = ToyRunner()
        inputs = RenderInputs(
            xr=XR,
            composition=_comp(now),
            required=required,
            functions={"toy": toy},
            requirements=hints,
            requests=requests,
        )
        try:
            return render(inputs), toy.calls
        except RenderError as err:
            return str(err), toy.calls

    hinted, hinted_calls = again(first.requirements)
    hinted_again, _ = again(first.requirements)  # in what the first left in the kept request, if any
    plain, _ = again({})
    assert hinted == hinted_again == plain
    assert hinted_calls == calls


class RecordingRunner(ToyRunner):
    """A toy that records the required resources each call was given, by requirement name."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[list[str]] = []

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, ctx: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        self.given.append(sorted(req.required_resources))
        return await super().RunFunction(req, ctx)


def test_a_step_with_bootstrap_resources_keeps_them_in_every_call_given_what_it_required() -> None:
    # A kept request is refilled with only what the hint requires: one holding answers of the step's own
    # (bootstrap required resources) is built anew each time, so the function never loses them.
    composition = _comp(_REQUIRE_A)
    step = composition["spec"]["pipeline"][0]
    step["requirements"] = {
        "requiredResources": [{"requirementName": "boot", "apiVersion": "v1", "kind": "ConfigMap", "name": "b"}]
    }
    required, requests = [_cm("a"), _cm("b")], KeptRequests()
    hints: Mapping[str, Any] = {}
    for _ in range(3):
        toy = RecordingRunner()
        out = render(
            RenderInputs(
                xr=XR,
                composition=composition,
                required=required,
                functions={"toy": toy},
                requirements=hints,
                requests=requests,
            )
        )
        assert toy.given[-1] == ["a", "boot"]
        assert all("boot" in given for given in toy.given)
        hints = out.requirements


async def _sleep() -> None:
    await asyncio.sleep(0)


async def _future() -> None:
    # A future the loop resolves later, from a callback it runs.
    waiting = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(waiting.set_result, None)
    await waiting


async def _thread() -> None:
    await asyncio.get_running_loop().run_in_executor(None, lambda: None)


async def _loop_only() -> None:
    asyncio.get_running_loop()  # asks for the loop, never waits


async def _fails() -> None:
    # A future that fails once the loop runs: the error is thrown into the function where it waits.
    waiting = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(waiting.set_exception, ValueError("late"))
    await waiting


class WaitingRunner(ToyRunner):
    """The toy, waiting on ``wait`` (on its event loop) before every call."""

    def __init__(self, wait: Callable[[], Coroutine[Any, Any, None]]) -> None:
        super().__init__()
        self._wait = wait

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, ctx: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        await self._wait()
        return await super().RunFunction(req, ctx)


_WAITS = [
    pytest.param(_sleep, id="sleeps"),
    pytest.param(_future, id="waits-on-a-future"),
    pytest.param(_thread, id="waits-on-a-thread"),
    pytest.param(_loop_only, id="asks-for-the-loop"),
]


@pytest.mark.parametrize("wait", _WAITS)
@pytest.mark.parametrize("case", CASES)
def test_a_function_that_waits_renders_as_one_that_does_not(
    case: Case, wait: Callable[[], Coroutine[Any, Any, None]]
) -> None:
    _renders_as_wanted(case, WaitingRunner(wait))


@pytest.mark.parametrize(
    ("wait", "message"),
    [
        pytest.param(
            _fails,
            'reconcile failed: cannot compose resources: cannot run Composition pipeline step "s0": '
            "function toy raised ValueError: late",
            id="what-it-waits-on-fails",
        ),
        pytest.param(
            _sleep,
            'cannot compose resources: pipeline step "s0" returned a fatal result: never',
            id="fatal-result-after-waiting",
        ),
    ],
)
def test_a_function_that_waits_fails_as_one_that_does_not(
    wait: Callable[[], Coroutine[Any, Any, None]], message: str
) -> None:
    script = {"results": [{"severity": "Fatal", "message": "never"}]}
    with pytest.raises(RenderError) as err:
        render(RenderInputs(xr=XR, composition=_comp(script), functions={"toy": WaitingRunner(wait)}))
    assert str(err.value) == message


@pytest.mark.parametrize("wait", _WAITS)
def test_renders_after_a_waiting_one_run_straight_through(wait: Callable[[], Coroutine[Any, Any, None]]) -> None:
    before = render(RenderInputs(xr=XR, composition=_comp(), functions={"toy": ToyRunner()}))
    waited = render(RenderInputs(xr=XR, composition=_comp(), functions={"toy": WaitingRunner(wait)}))
    assert asyncio.events._get_running_loop() is None  # left as it was found
    after = render(RenderInputs(xr=XR, composition=_comp(), functions={"toy": ToyRunner()}))
    assert before == waited == after


async def _in_a_loop() -> str:
    try:
        render(RenderInputs(xr=XR, composition=_comp(), functions={"toy": ToyRunner()}))
    except RuntimeError as err:
        return str(err)
    return "rendered"


def test_render_inside_a_running_loop_is_refused_as_ever() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert asyncio.run(_in_a_loop()) == "Cannot run the event loop while another loop is running"
        gc.collect()
    # The refused render is closed, not left to warn that it was never awaited.
    assert [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)] == []


class ReadingRunner(ToyRunner):
    """Reads its XR and every observed resource whole, as Modelplane's functions read them, and changes what it read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[tuple[dict[str, Any], dict[str, Any]]] = []  # as read, and as the SDK converts the Struct

    async def RunFunction(
        self, req: fnv1.RunFunctionRequest, context: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Read, then run the script."""
        structs = [req.observed.composite.resource] + [r.resource for _, r in sorted(req.observed.resources.items())]
        for struct in structs:
            read = protojson.struct_to_dict(struct)
            self.read.append((copy.deepcopy(read), json_format.MessageToDict(struct)))
            read.setdefault("metadata", {})["name"] = "changed by the function"  # its own to change
        return await super().RunFunction(req, context)


_READ_OBSERVED: list[Any] = [
    pytest.param({"data": {"a": "1"}}, id="strings"),
    pytest.param({"spec": {"replicas": 3, "ratio": 0.5, "big": 2**60}}, id="numbers"),
    pytest.param({"spec": {"items": [[1, {"x": None}], True], "pad": "p" * 300}}, id="nested and large"),
]


@pytest.mark.parametrize("extra", _READ_OBSERVED)
def test_a_function_reads_its_xr_and_observed_resources_as_their_structs_convert(extra: dict[str, Any]) -> None:
    observed = [{**_composed("a"), **extra}, {**_composed("b"), "data": {"b": "2"}}]
    xr = {**XR, "spec": {**XR["spec"], **extra.get("spec", {})}}
    runner = ReadingRunner()
    for _ in range(2):  # then from what the first render remembered
        render(RenderInputs(xr=xr, composition=_comp({}), observed=observed, functions={"toy": runner}))
    assert len(runner.read) == 6
    for read, converted in runner.read:
        assert json.dumps(read, sort_keys=True) == json.dumps(converted, sort_keys=True)
    assert runner.read[:3] == runner.read[3:]
