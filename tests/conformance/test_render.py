"""Every example XR renders the same under the real ``crossplane render`` as under ``modelplane render``.

For each golden case (every Modelplane XR under examples/, with its fleet as
required resources and, for a later step of a scheduling scenario, what the
previous step composed as observed resources) the real CLI v2.5 runs the
shipped Composition through Crossplane core's XR reconciler
(``--crossplane-binary``) against every function served over gRPC
(Development runtime, see conftest.py), and ``modelplane render`` runs the
same files in-process. The two stdout streams must be equal after
``normalize`` (the order of the engine's per-resource events, see
lib/modelplane/render/normalize.py): what the reconciler adds (resource
references, conditions, events) is compared like the rest. Anything the CLI
prints that we do not is a bug in ours. Skipped without the CLI and its engine,
except in CI.
"""

from __future__ import annotations

import contextlib
import difflib
import io

import pytest

from modelplane.render import command
from modelplane.render.normalize import normalize
from tests.conformance.conftest import Rendered
from tests.golden.cases import cases

CASES = [pytest.param(c.id, id=c.id) for c in cases()]


def _modelplane_render(r: Rendered) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = command.main([str(r.xr), "--composition", str(r.composition), *r.flags])
    return rc, out.getvalue(), err.getvalue()


def test_every_case_is_rendered(cli_renders: dict[str, Rendered]) -> None:
    # 46 today; a case that silently disappears must not shrink the comparison.
    assert len(cli_renders) == len(CASES) > 0
    kinds = {r.case.xr["kind"] for r in cli_renders.values()}
    assert kinds >= {"InferenceClass", "InferenceCluster", "InferenceGateway", "ModelDeployment", "ModelService"}
    # The later steps of the scheduling scenarios go through --observed-resources too.
    assert any("--observed-resources" in r.flags for r in cli_renders.values())


@pytest.mark.parametrize("case_id", CASES)
def test_crossplane_render_matches_modelplane_render(case_id: str, cli_renders: dict[str, Rendered]) -> None:
    r = cli_renders[case_id]
    assert r.proc.returncode == 0, r.proc.stderr
    rc, ours, err = _modelplane_render(r)
    assert rc == 0, err
    want, got = normalize(r.proc.stdout), normalize(ours)
    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), "crossplane", "modelplane"))
    assert got == want, diff
    # The golden file is what modelplane render prints, so the real CLI agrees with it too.
    assert normalize(r.case.golden.read_text()) == want
    # What only the reconciler adds is there: it is compared, not normalised away.
    assert "resourceRefs:" in want
    assert "type: Responsive" in want
    assert "reason: SelectComposition" in want
