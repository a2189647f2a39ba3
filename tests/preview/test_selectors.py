"""The DRA CEL selectors the preview compiles at admission: which fields, and how an error is located."""

from __future__ import annotations

from typing import Any

import pytest

from modelplane.admission.xrd import definitions
from modelplane.cel import CELCompileError, compile_selector
from modelplane.preview.selectors import SELECTOR_FIELD, cel_selectors, compile_errors, located


def _cel_properties(schema: dict[str, Any], path: str) -> list[tuple[str, str]]:
    found = []
    for name, prop in schema.get("properties", {}).items():
        if name == SELECTOR_FIELD:
            found.append((f"{path}.{name}", str(prop.get("description", ""))))
        found += _cel_properties(prop, f"{path}.{name}")
    if "items" in schema:
        found += _cel_properties(schema["items"], f"{path}[]")
    return found


def test_every_cel_field_in_the_xrds_is_a_dra_selector() -> None:
    # selectors.py compiles every property named "cel" in the DRA device-selector environment.
    found = [
        (f"{kind} {path}", description)
        for kind, d in sorted(definitions().items())
        for path, description in _cel_properties(d.schema, "")
    ]
    assert len(found) >= 8, found  # unified, prefill and decode with their devices, of deployments and replicas
    for where, description in found:
        assert "DRA device-selector" in " ".join(description.split()), where


def test_cel_selectors_finds_every_one_with_its_path() -> None:
    manifest = {
        "spec": {
            "prefill": {"nodeSelector": {"cel": "a", "devices": [{"name": "nic", "cel": "b"}]}},
            "decode": {"nodeSelector": {"cel": "c"}},
            "workers": {"template": {"metadata": {"labels": {"cel": 1}}}},
        },
        "metadata": {"annotations": {"cel": "not under spec"}},
    }
    assert list(cel_selectors(manifest)) == [
        ("spec.decode.nodeSelector.cel", "c"),
        ("spec.prefill.nodeSelector.cel", "a"),
        ("spec.prefill.nodeSelector.devices[0].cel", "b"),
    ]


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        pytest.param(
            "device.driver ==",
            "compilation failed: ERROR: <input>:1:17: syntax error: expected an expression, found end of input\n"
            " | device.driver ==\n"
            " | ................^",
            id="end-of-line",
        ),
        pytest.param(
            'device.driver == "x" &&\n  device.nope',
            "compilation failed: ERROR: <input>:2:9: type error: undefined field 'nope'\n"
            " |   device.nope\n"
            " | ........^",
            id="second-line",
        ),
        pytest.param(
            "device.driver",
            "compilation failed: must evaluate to bool or the unknown type, not string",
            id="no-position",
        ),
    ],
)
def test_located(expression: str, want: str) -> None:
    with pytest.raises(CELCompileError) as caught:
        compile_selector(expression)
    assert located(expression, caught.value) == want


def test_compile_errors_one_per_selector_that_does_not_compile() -> None:
    manifest = {"spec": {"nodeSelector": {"cel": 'device.driver == "x"', "devices": [{"cel": "1 +"}, {"cel": "2"}]}}}
    errors = compile_errors(manifest)
    assert [e.split(": Invalid value: ")[0] for e in errors] == [
        "spec.nodeSelector.devices[0].cel",
        "spec.nodeSelector.devices[1].cel",
    ]
    assert errors[0].startswith('spec.nodeSelector.devices[0].cel: Invalid value: "1 +": compilation failed: ERROR:')
