"""``modelplane render`` prints what the real ``crossplane render`` prints.

The toy function (toys.py) is served over gRPC for the CLI (Development
runtime) and run in-process for ours; the CLI renders with Crossplane core's
reconciler (``--crossplane-binary``). The two stdout streams must be equal
after normalize() (the order of per-resource events, which the engine walks
from a Go map), and both must fail with the same message. Skipped without the
CLI or the engine (``tools/crossplane.sh [engine]`` builds them) unless
``CI`` is set, where a missing one is a failure.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from modelplane.render import command, goyaml, pipeline
from modelplane.render.normalize import normalize
from tests.render.crossplane_cli import (
    crossplane_binary,
    crossplane_engine,
    functions_manifest,
    run_render,
    serve_functions,
)
from tests.render.toys import ToyRunner, toy_composition

BINARY = crossplane_binary()
ENGINE = crossplane_engine()
if (BINARY is None or ENGINE is None) and not os.environ.get("CI"):
    pytest.skip(
        "the Crossplane CLI or its render engine is not installed (run tools/crossplane.sh and "
        "tools/crossplane.sh engine, or set CROSSPLANE and CROSSPLANE_ENGINE); CI requires them",
        allow_module_level=True,
    )


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"n": name}}


def _xr(*, namespace: str | None = "team-a") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "thing", "labels": {"env": "dev"}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "example.org/v1", "kind": "XThing", "metadata": meta, "spec": {"size": 2, "on": "yes"}}


def _composition(*scripts: dict[str, Any]) -> dict[str, Any]:
    return toy_composition(
        *({"apiVersion": "toy/v1", "kind": "Script", **s} for s in scripts), name="xthings.example.org", step="step-{}"
    )


_RESOURCES = {
    "bucket": {
        "resource": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "true", "b": "1.5", "c": "x: y"}},
        "ready": "True",
    },
    "named": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fixed"}}},
    "10-later": {"resource": {"apiVersion": "v1", "kind": "Secret", "stringData": {"multi": "line one\nline two\n"}}},
}


# The XR's controller reference, as the engine gives _xr() a UID.
_OWNER = {
    "apiVersion": "example.org/v1",
    "kind": "XThing",
    "name": "thing",
    "controller": True,
    "blockOwnerDeletion": True,
}


@dataclass(frozen=True)
class Case:
    xr: dict[str, Any]
    composition: dict[str, Any]
    flags: tuple[str, ...] = ()
    observed: list[dict[str, Any]] = field(default_factory=list)
    required: list[dict[str, Any]] = field(default_factory=list)
    credentials: list[dict[str, Any]] = field(default_factory=list)


def _with_credentials(composition: dict[str, Any], secret: str) -> dict[str, Any]:
    """The composition with its first step reading credentials from Secret team-a/``secret``."""
    step = {
        **composition["spec"]["pipeline"][0],
        "credentials": [{"name": "creds", "source": "Secret", "secretRef": {"namespace": "team-a", "name": secret}}],
    }
    return {**composition, "spec": {**composition["spec"], "pipeline": [step, *composition["spec"]["pipeline"][1:]]}}


_SECRET = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "token", "namespace": "team-a"},
    "data": {"k": "dg=="},
}


CASES = [
    pytest.param(Case(_xr(), _composition({})), id="empty-pipeline"),
    pytest.param(
        Case(
            _xr(),
            _composition(
                {
                    "resources": _RESOURCES,
                    "compositeStatus": {"phase": "Provisioning", "replicas": 3, "ratio": 0.25},
                    "conditions": [
                        {"type": "Scheduled", "status": "True", "reason": "Placed", "message": "on 2 clusters"}
                    ],
                    "results": [
                        {"severity": "Warning", "message": "careful"},
                        {"severity": "Normal", "message": "composed 3"},
                    ],
                }
            ),
            ("--include-function-results",),
        ),
        id="compose-conditions-results",
    ),
    pytest.param(
        Case(_xr(namespace=None), _composition({"resources": _RESOURCES, "compositeReady": "True"}), ("-x",)),
        id="cluster-scoped-full-xr-composite-ready",
    ),
    pytest.param(
        Case(_xr(), _composition({"resources": {"a": _RESOURCES["bucket"]}, "compositeReady": "False"})),
        id="composite-not-ready",
    ),
    pytest.param(
        Case(
            _xr(),
            _composition(
                {
                    "require": {
                        "byname": {"apiVersion": "v1", "kind": "ConfigMap", "name": "one"},
                        "bylabel": {"apiVersion": "v1", "kind": "ConfigMap", "matchLabels": {"tier": "gpu"}},
                        "missing": {"apiVersion": "v1", "kind": "ConfigMap", "name": "nope"},
                    }
                }
            ),
            ("-r",),
            required=[_cm("two", tier="gpu"), _cm("one", tier="gpu"), _cm("three", tier="cpu")],
        ),
        id="required-resources",
    ),
    pytest.param(
        Case(
            _xr(),
            _composition(
                {"setContext": {"from-one": {"n": 1, "s": "x"}}},
                {"contextToResource": {"key": "from-one", "resource": "ctx"}},
                {"contextToResource": {"key": "seed", "resource": "seeded"}},
            ),
            ("--include-context", "--context-values", 'seed={"list": [1, 2.5, "on"]}'),
        ),
        id="context-between-steps",
    ),
    pytest.param(
        Case(
            _xr(),
            _composition({"resources": {"bucket": _RESOURCES["bucket"], "named": _RESOURCES["named"]}}),
            observed=[
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": "thing-abcde",
                        "namespace": "team-a",
                        "annotations": {"crossplane.io/composition-resource-name": "bucket"},
                    },
                }
            ],
        ),
        id="observed-keeps-name",
    ),
    pytest.param(
        Case(
            _xr(),
            _composition(
                {
                    "resources": {
                        "moved": {
                            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "other"}}
                        },
                        "with-status": {
                            "resource": {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "status": {
                                    "phase": "Running",
                                    "conditions": [{"type": "PodReady", "status": "True", "extra": "dropped"}],
                                },
                            },
                            "ready": "True",
                        },
                        "empty-status": {
                            "resource": {"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending"}}
                        },
                    },
                    "compositeSpec": {"size": 9},
                    "results": [
                        {"severity": "Normal", "message": "placed", "reason": "Scheduled"},
                        {"severity": "Unspecified", "message": "from the future"},
                    ],
                }
            ),
            ("-r",),
        ),
        id="namespace-override-statuses-reasons",
    ),
    pytest.param(
        Case(
            {
                **_xr(),
                "metadata": {
                    "name": "thing",
                    "namespace": "team-a",
                    "generation": 3,
                    "labels": {"crossplane.io/composite": "prefix"},
                    "annotations": {"keep": "me"},
                },
                "spec": {"size": 2, "crossplane": {"compositionRef": {"name": "xthings.example.org"}}},
                "status": {
                    "phase": "Old",
                    "conditions": [
                        {
                            "type": "Scheduled",
                            "status": "False",
                            "reason": "Waiting",
                            "lastTransitionTime": "2023-05-05T00:00:00Z",
                        }
                    ],
                },
            },
            _composition(
                {
                    "resources": {"bucket": _RESOURCES["bucket"]},
                    "compositeStatus": {"replicas": 1},
                    "conditions": [{"type": "Scheduled", "status": "True", "reason": "Placed"}],
                }
            ),
            ("-r", "--include-full-xr"),
        ),
        id="xr-with-label-ref-generation-status-full",
    ),
    pytest.param(
        Case(
            _xr(),
            _composition({"resources": {"kept": _RESOURCES["bucket"]}}),
            ("-r",),
            observed=[
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": name,
                        "namespace": "team-a",
                        "annotations": {"crossplane.io/composition-resource-name": name},
                        "ownerReferences": owners,
                    },
                }
                for name, owners in (
                    ("kept", []),
                    ("dropped", [{**_OWNER, "uid": "1f0a367a-a3b9-5c8d-956c-43970bcdebcc"}]),
                    ("orphan", []),
                )
            ],
        ),
        id="observed-garbage-collected",
    ),
    pytest.param(
        Case(
            _xr(),
            _with_credentials(_composition({"resources": {"a": _RESOURCES["bucket"]}}), "token"),
            credentials=[_SECRET],
        ),
        id="step-credentials",
    ),
]


def _write(tmp: Path, case: Case) -> tuple[Path, Path, list[str]]:
    xr, comp = tmp / "xr.yaml", tmp / "composition.yaml"
    xr.write_text(goyaml.dump_document(case.xr))
    comp.write_text(goyaml.dump_document(case.composition))
    flags = list(case.flags)
    for name, docs in (
        ("--observed-resources", case.observed),
        ("--required-resources", case.required),
        ("--function-credentials", case.credentials),
    ):
        if docs:
            path = tmp / f"{name.strip('-')}.yaml"
            path.write_text("".join("---\n" + goyaml.dump_document(d) for d in docs))
            flags += [name, str(path)]
    return xr, comp, flags


def _ours(monkeypatch: pytest.MonkeyPatch, xr: Path, comp: Path, flags: list[str]) -> tuple[int, str, str]:
    monkeypatch.setattr(pipeline, "_loader", lambda: lambda _ref: ToyRunner())
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = command.main([str(xr), "--composition", str(comp), *flags])
    return rc, out.getvalue(), err.getvalue()


def _theirs(tmp: Path, xr: Path, comp: Path, flags: list[str]) -> tuple[int, str, str]:
    if BINARY is None or ENGINE is None:
        pytest.fail("CI is set but the Crossplane CLI or its render engine is not installed: run tools/crossplane.sh")
    with serve_functions({"toy": ToyRunner()}) as targets:
        fns = tmp / "functions.yaml"
        fns.write_text(functions_manifest(targets))
        proc = run_render(BINARY, ENGINE, xr, comp, fns, *flags)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("case", CASES)
def test_matches_crossplane_render(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xr, comp, flags = _write(tmp_path, case)
    rc, stdout, stderr = _theirs(tmp_path, xr, comp, flags)
    assert rc == 0, stderr
    our_rc, ours, our_err = _ours(monkeypatch, xr, comp, flags)
    assert our_rc == 0, our_err
    want, got = normalize(stdout), normalize(ours)
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "crossplane", "modelplane"))
    assert got == want, diff


@pytest.mark.parametrize(
    ("case", "message"),
    [
        pytest.param(
            Case(
                _xr(),
                _composition(
                    {"resources": _RESOURCES}, {"results": [{"severity": "Fatal", "message": "cannot ever work"}]}
                ),
            ),
            'cannot compose resources: pipeline step "step-1" returned a fatal result: cannot ever work',
            id="fatal",
        ),
        pytest.param(
            Case(_xr(), _composition({"flapRequirements": True})),
            'reconcile failed: cannot compose resources: cannot run Composition pipeline step "step-0": '
            "requirements didn't stabilize after the maximum number of iterations (5)",
            id="requirements-never-stabilise",
        ),
        pytest.param(
            Case(
                _xr(),
                _composition({}),
                observed=[
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": name,
                            "namespace": "team-a",
                            "annotations": {"crossplane.io/composition-resource-name": name},
                            "ownerReferences": [{**_OWNER, "uid": "someone-else"}],
                        },
                    }
                    for name in ("a", "b")
                ],
            ),
            "invalid observed resources: [observed resource a has a controller ref but is not controlled by the XR, "
            "observed resource b has a controller ref but is not controlled by the XR]",
            id="observed-controlled-by-another",
        ),
        pytest.param(
            Case(_xr(), _with_credentials(_composition({}), "missing"), credentials=[_SECRET]),
            'reconcile failed: cannot compose resources: cannot get Composition pipeline step "step-0" '
            'credential "creds" from Secret: Secret "missing" not found',
            id="credentials-secret-missing",
        ),
    ],
)
def test_fails_like_crossplane_render(
    case: Case, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    xr, comp, flags = _write(tmp_path, case)
    rc, stdout, stderr = _theirs(tmp_path, xr, comp, flags)
    # The CLI wraps the engine's own error line (and, when the engine failed otherwise than on a
    # fatal result, its exit status) in its own.
    assert (rc, stdout) == (1, "")
    assert stderr.startswith("crossplane: error: cannot render composite resource: crossplane internal render")
    assert f"crossplane: error: cannot render composite resource: {message}\n" in stderr
    want = f"modelplane: error: cannot render composite resource: {message}\n"
    assert _ours(monkeypatch, xr, comp, flags) == (1, "", want)
