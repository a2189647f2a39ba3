"""The golden render cases: every Modelplane XR in examples/, rendered with its fleet as required resources.

Two sources of cases:

- ``FLEETS``: sets of example directories applied together; every Modelplane
  XR in them renders with all their manifests as required resources;
- the scheduling scenarios, one per directory of ``examples/scheduling``: each
  ModelDeployment renders with its scenario's manifests, step by step where
  ``tests/golden/scenarios.py`` lists steps (a step may start from what the
  previous one composed).
"""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.kinds import GROUP
from modelplane.names import replica_host
from modelplane.render import RenderInputs, RenderOutput, render, to_yaml
from modelplane.repo import ROOT, load_composition
from tests.golden.scenarios import STEPS, Step

EXAMPLES = ROOT / "examples"
SCENARIOS = EXAMPLES / "scheduling"
GOLDEN = Path(__file__).resolve().parent / "files"

# A fleet is the set of example directories that are applied together; its
# manifests are the required resources every render in it may ask for.
FLEETS: dict[str, tuple[str, ...]] = {
    "quickstart": ("quickstart",),
    "fleet": ("platform", "models"),
    "replicas": ("replicas",),
    # The autoscaling example's deployment and service, on the platform's clusters (its ScaledObject is not an XR).
    "autoscaling": ("platform", "autoscaling"),
    # The ModelCache examples, on the platform's clusters.
    "model-cache": ("platform", "model-cache"),
    # The ModelBatchRun examples: on the platform's spare GPUs, and through the models' assistant service.
    "batch": ("platform", "models", "batch"),
    # Two teams' FleetQuotas and priorities, on the platform's clusters.
    "quotas": ("platform", "quotas"),
}
# What controllers would have composed and reported for a fleet beyond its examples' own objects
# (``fixtures/<fleet>.yaml``): required resources of its renders, never rendered themselves. An object
# of an example's kind, namespace and name replaces that example's in the fleet.
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# When a simulated serving resource became Ready (as in observed.yaml).
SERVING_SINCE = "2025-01-01T00:00:00Z"

Manifest = dict[str, Any]
_Key = tuple[str, str, str]  # kind, namespace, name


@dataclass(frozen=True)
class Case:
    """One XR of one example file and where its golden output lives.

    Attributes:
        id: The case's id, also the pytest id.
        source: The example file the XR comes from.
        xr: The XR as rendered (after any step's patch).
        fleet: The required resources (``--required-resources``): the manifests applied with it but the XR.
        golden: The golden file.
        observed: The observed composed resources (``--observed-resources``), if any.
    """

    id: str
    source: Path
    xr: Manifest
    fleet: tuple[Manifest, ...]
    golden: Path
    observed: tuple[Manifest, ...] = ()


def _observed_statuses() -> dict[_Key, Manifest]:
    """What live controllers would report for the examples' objects (``observed.yaml``), by kind, namespace, name."""
    entries = yaml.safe_load_all((Path(__file__).resolve().parent / "observed.yaml").read_text())
    return {(e["kind"], e.get("namespace", ""), e["name"]): e["status"] for e in entries if isinstance(e, dict)}


# The examples carry no status (live controllers write it); a render of one XR needs its fleet as observed.
OBSERVED = _observed_statuses()


def as_observed(doc: Manifest) -> Manifest:
    """``doc`` with the status live controllers would report for it (observed.yaml), unless it has one."""
    status = OBSERVED.get(_key(doc))
    return doc if status is None or "status" in doc else {**doc, "status": copy.deepcopy(status)}


@functools.cache
def observed_examples() -> Path:
    """A copy of examples/ whose objects carry the status live controllers would report (``observed.yaml``).

    For tests of what a manifest's status means (a cluster observed Ready, GPUs a scheduler observes in use).
    """
    root = Path(tempfile.mkdtemp(prefix="modelplane-observed-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for source in sorted(EXAMPLES.rglob("*.yaml")):
        target = root / "examples" / source.relative_to(EXAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        docs = [as_observed(d) if isinstance(d, dict) else d for d in yaml.safe_load_all(source.read_text())]
        target.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return root / "examples"


def _docs(paths: Iterable[Path]) -> list[tuple[Path, Manifest]]:
    return [(p, as_observed(d)) for p in paths for d in yaml.safe_load_all(p.read_text()) if isinstance(d, dict)]


def _is_xr(doc: Mapping[str, Any]) -> bool:
    return str(doc.get("apiVersion", "")).split("/")[0] == GROUP


def _is_deployment(doc: Mapping[str, Any]) -> bool:
    return doc.get("kind") == "ModelDeployment" and _is_xr(doc)


def _key(doc: Mapping[str, Any]) -> _Key:
    meta = doc.get("metadata") or {}
    return (str(doc.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))


def _without(fleet: Iterable[Manifest], xr: Manifest) -> tuple[Manifest, ...]:
    """The fleet but the XR itself: the render engine stores the XR already, and a required copy would replace it."""
    return tuple(d for d in fleet if _key(d) != _key(xr))


def _file_name(doc: Mapping[str, Any]) -> str:
    kind, namespace, name = _key(doc)
    return "-".join(filter(None, (kind.lower(), namespace, name)))


def _fleet_cases() -> list[Case]:
    out, seen = [], set()
    for fleet, dirs in FLEETS.items():
        files = sorted(p for d in dirs for p in (EXAMPLES / d).rglob("*.yaml"))
        docs = _docs(files)
        manifests = _with_fixtures(fleet, [d for _, d in docs])
        for path, doc in docs:
            if not _is_xr(doc):
                continue
            name = _file_name(doc)
            rel = path.relative_to(EXAMPLES).with_suffix("")
            golden = GOLDEN / rel / f"{name}.yaml"
            # A directory in two fleets (platform) renders in the first: one golden file, one case.
            if golden in seen:
                continue
            seen.add(golden)
            out.append(Case(f"{fleet}/{rel}/{name}", path, doc, _without(manifests, doc), golden))
    return out


def _with_fixtures(fleet: str, manifests: list[Manifest]) -> tuple[Manifest, ...]:
    """The fleet's manifests with its fixtures (``FIXTURES``) added, each replacing an example of its key."""
    path = FIXTURES / f"{fleet}.yaml"
    if not path.is_file():
        return tuple(manifests)
    fixtures = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    replaced = {_key(d) for d in fixtures}
    return (*(m for m in manifests if _key(m) not in replaced), *fixtures)


def _merge(doc: Any, patch: Any) -> Any:
    """``doc`` with the JSON merge patch ``patch`` (RFC 7386) applied."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(doc) if isinstance(doc, Mapping) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


def _other(doc: Manifest, step: Step) -> Manifest | None:
    """An object of a step that is not a ModelDeployment, with the step's patch for it (None: left out)."""
    key = f"{doc.get('kind', '')}/{(doc.get('metadata') or {}).get('name', '')}"
    if key not in step.others:
        return doc
    patch = step.others[key]
    return None if patch is None else _merge(doc, patch)


def _serving(resource: Manifest, gateways: Mapping[str, Mapping[str, Any]]) -> Manifest:
    """A composed resource as observed once it serves: Ready, and for a replica its endpoint."""
    out = copy.deepcopy(resource)
    status = out.setdefault("status", {})
    status["conditions"] = [
        {"type": "Ready", "status": "True", "reason": "Available", "lastTransitionTime": SERVING_SINCE}
    ]
    if out.get("kind") == "ModelReplica":
        cluster = out["spec"]["inferenceClusterRef"]["name"]
        meta = out["metadata"]
        gateway = gateways.get(cluster) or {"url": f"http://{cluster}"}
        status["endpoint"] = {
            "url": str(gateway.get("url") or f"http://{gateway.get('address')}").rstrip("/") + "/",
            "host": replica_host(meta["name"], meta["namespace"]),
            **({"tls": gateway["tls"]} if "tls" in gateway else {}),
        }
    return out


def _gateways(docs: Iterable[Manifest]) -> dict[str, dict[str, Any]]:
    """The simulated gateway of each InferenceCluster (its address, URL and CA), by name."""
    return {
        _key(d)[2]: dict(gateway)
        for d in docs
        if d.get("kind") == "InferenceCluster"
        and (gateway := ((d.get("status") or {}).get("gateway") or {}))
        and gateway.get("address")
    }


def _scenario_cases(directory: Path) -> list[Case]:
    """The cases of one scenario, step by step (rendering a step when the next one carries it)."""
    steps = STEPS.get(directory.name, (Step(""),))
    out: list[Case] = []
    composed: dict[_Key, list[Manifest]] = {}  # what the previous step composed, per XR
    for n, step in enumerate(steps):
        if step.carry and n == 0:
            msg = f"scenario {directory.name}: its first step {step.name!r} has no previous step to carry"
            raise ValueError(msg)
        where = directory / step.dir
        paths = [where / f for f in step.files] if step.files else sorted(where.glob("*.yaml"))
        docs: list[tuple[Path, Manifest]] = []
        for p, d in _docs(paths):
            doc = _merge(d, step.patch) if _is_deployment(d) else _other(d, step)
            if doc is not None:
                docs.append((p, doc))
        manifests = [d for _, d in docs]
        carried = composed if step.carry else {}
        if step.serving:
            gateways = _gateways(manifests)
            carried = {k: [_serving(r, gateways) for r in rs] for k, rs in carried.items()}
        fleet = (*manifests, *(r for rs in carried.values() for r in rs if r.get("kind") == "ModelReplica"))
        composed = {}
        carried_next = n + 1 < len(steps) and steps[n + 1].carry
        for path, doc in docs:
            if not _is_deployment(doc):
                continue
            name = _file_name(doc)
            parts = ("scheduling", directory.name, step.name, name)
            golden = GOLDEN.joinpath(*filter(None, parts[:-1])) / f"{name}.yaml"
            observed = tuple(carried.get(_key(doc), ()))
            case = Case("/".join(filter(None, parts)), path, doc, _without(fleet, doc), golden, observed)
            out.append(case)
            if carried_next:
                composed[_key(doc)] = render_output(case).composed
    return out


def cases() -> list[Case]:
    """Every golden case, in a stable order."""
    scenarios = sorted(d for d in SCENARIOS.iterdir() if d.is_dir()) if SCENARIOS.is_dir() else []
    return [*_fleet_cases(), *(c for d in scenarios for c in _scenario_cases(d))]


def render_output(case: Case) -> RenderOutput:
    """Render a case in-process."""
    composition = load_composition(case.xr["kind"])
    return render(RenderInputs(xr=case.xr, composition=composition, observed=case.observed, required=case.fleet))


def render_case(case: Case) -> str:
    """Render a case the way ``modelplane render XR --required-resources FLEET [-o OBSERVED] -r`` prints it."""
    return to_yaml(render_output(case), include_function_results=True, include_context=False)
