"""The golden render cases: every Modelplane XR in examples/, rendered with its fleet as required resources."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.kinds import GROUP
from modelplane.render import RenderInputs, render, to_yaml
from modelplane.repo import ROOT, load_composition

EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "files"

# A fleet is the set of example directories that are applied together; its
# manifests are the required resources every render in it may ask for.
FLEETS: dict[str, tuple[str, ...]] = {
    "quickstart": ("quickstart",),
    "fleet": ("platform", "models"),
}


@dataclass(frozen=True)
class Case:
    """One XR of one example file and where its golden output lives."""

    id: str
    source: Path
    xr: dict[str, Any]
    fleet: tuple[dict[str, Any], ...]
    golden: Path


def _docs(paths: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    return [(p, d) for p in paths for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]


def cases() -> list[Case]:
    """Every golden case, in a stable order."""
    out = []
    for fleet, dirs in FLEETS.items():
        files = sorted(p for d in dirs for p in (EXAMPLES / d).rglob("*.yaml"))
        docs = _docs(files)
        manifests = tuple(d for _, d in docs)
        for path, doc in docs:
            if str(doc.get("apiVersion", "")).split("/")[0] != GROUP:
                continue
            meta = doc["metadata"]
            name = "-".join(filter(None, [doc["kind"].lower(), meta.get("namespace"), meta["name"]]))
            rel = path.relative_to(EXAMPLES).with_suffix("")
            out.append(Case(f"{fleet}/{rel}/{name}", path, doc, manifests, GOLDEN / rel / f"{name}.yaml"))
    return out


def render_case(case: Case) -> str:
    """Render a case the way `modelplane render XR --required-resources FLEET -r` prints it."""
    output = render(RenderInputs(xr=case.xr, composition=load_composition(case.xr["kind"]), required=list(case.fleet)))
    return to_yaml(output, include_function_results=True, include_context=False)
