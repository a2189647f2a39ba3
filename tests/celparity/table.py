"""The CEL parity table (cases.yaml): loading it, and turning its devices into both sides' inputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.cel import Device, SemVer

TABLE = Path(__file__).with_name("cases.yaml")
RESULTS = ("match", "nomatch", "compile-error", "runtime-error")


@dataclass(frozen=True)
class Case:
    """One row: an expression, the device it is evaluated against, and Kubernetes' answer."""

    id: str
    expression: str
    device_name: str
    device: dict[str, Any]
    want: str


def load(path: Path = TABLE) -> list[Case]:
    """Read the table, expanding ``expand`` pieces and resolving device names."""
    data = yaml.safe_load(path.read_text())
    devices: dict[str, dict[str, Any]] = data["devices"]
    cases = []
    for row in data["cases"]:
        if "expand" in row:
            expression = "".join(str(text) * int(times) for text, times in row["expand"])
        else:
            expression = str(row["expression"])
        name = row.get("device", "h100")
        if row["want"] not in RESULTS:
            msg = f"{row['id']}: want must be one of {RESULTS}"
            raise ValueError(msg)
        cases.append(Case(row["id"], expression, name, devices[name], row["want"]))
    return cases


def to_device(spec: dict[str, Any]) -> Device:
    """The :class:`Device` for a table device (typed attributes as in an InferenceClass)."""
    attributes: dict[str, str | int | bool | SemVer] = {}
    for name, typed in (spec.get("attributes") or {}).items():
        ((kind, value),) = typed.items()
        attributes[name] = SemVer(str(value)) if kind == "version" else value
    capacity = {name: str(value) for name, value in (spec.get("capacity") or {}).items()}
    return Device(spec["driver"], attributes, capacity)


def oracle_input(cases: list[Case]) -> list[dict[str, Any]]:
    """The cases as the Go oracle reads them."""
    return [
        {
            "id": case.id,
            "expression": case.expression,
            "device": {
                "driver": case.device["driver"],
                "attributes": {
                    k: {kind: (str(v) if kind == "version" else v) for kind, v in typed.items()}
                    for k, typed in (case.device.get("attributes") or {}).items()
                },
                "capacity": {k: str(v) for k, v in (case.device.get("capacity") or {}).items()},
            },
        }
        for case in cases
    ]
