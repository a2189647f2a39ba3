"""deploy/crossplane-rbac.yaml grants Crossplane every kind the functions compose beyond its own grants, and no more.

Crossplane's chart and RBAC manager grant it the XRDs' kinds and the providers' kinds; any other
kind a function composes directly on the control plane is forbidden to it until this ClusterRole
aggregates into Crossplane's. The e2e tier runs Crossplane as system:masters, so only this test
can tell the ClusterRole short of what the examples compose.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelplane.preview.command import run_preview

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CRDS = ROOT.parent / "shared" / "crds"
ROLE = ROOT / "deploy" / "crossplane-rbac.yaml"
# Granted to Crossplane already: its XRDs' group (RBAC manager), the providers' groups (RBAC
# manager), its own groups (protection.crossplane.io among them: the Usages ModelDeployments compose
# are reconciled by Crossplane's own usage controller, under its own service account), and what its
# chart's ClusterRole lists (Secrets among them).
_GRANTED_GROUPS = ("modelplane.ai",)
_GRANTED_SUFFIXES = (".crossplane.io", ".upbound.io")
_GRANTED_CORE = {"secrets", "configmaps", "events", "serviceaccounts", "services"}
_COMPOSE_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}
# Core kinds have no CRD to read their plural from.
_CORE_PLURALS = {"Secret": "secrets", "Namespace": "namespaces", "ConfigMap": "configmaps"}


def _plurals() -> dict[tuple[str, str], str]:
    """(group, kind) -> plural, from the real CRDs."""
    out: dict[tuple[str, str], str] = {}
    for path in CRDS.rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                spec = doc.get("spec", {})
                out[(spec.get("group", ""), spec.get("names", {}).get("kind", ""))] = spec.get("names", {}).get(
                    "plural", ""
                )
    return out


def _ai_gateway_fleet(tmp: Path) -> Path:
    """examples/platform and examples/models with the gateway's AI gateway on and every service limited in tokens."""
    shutil.copytree(EXAMPLES / "platform", tmp / "platform")
    shutil.copytree(EXAMPLES / "models", tmp / "models")
    gateway = tmp / "platform" / "gateway.yaml"
    docs = list(yaml.safe_load_all(gateway.read_text()))
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "InferenceGateway":
            doc["spec"]["aiGateway"] = "Enabled"
            doc["spec"]["rateLimit"] = {"redis": {"address": "redis.default:6379"}}
    gateway.write_text(yaml.safe_dump_all(docs))
    for service in (tmp / "models").glob("*.yaml"):
        docs = list(yaml.safe_load_all(service.read_text()))
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") == "ModelService":
                doc["spec"]["limits"] = [{"tokensPerMinute": 200000}]
        service.write_text(yaml.safe_dump_all(docs))
    return tmp


def _fleets(tmp: Path) -> Iterator[tuple[str, list[Path]]]:
    # The scheduling scenarios compose the kinds of examples/platform (their steps are separate fleets).
    for d in sorted(p for p in EXAMPLES.iterdir() if p.is_dir() and p.name not in {"platform", "models", "scheduling"}):
        yield d.name, [d]
    yield "platform+models", [EXAMPLES / "platform", EXAMPLES / "models"]
    ai = _ai_gateway_fleet(tmp)
    yield "platform+models, AI gateway", [ai / "platform", ai / "models"]


def _rules() -> list[dict[str, Any]]:
    return list(yaml.safe_load(ROLE.read_text())["rules"])


def _granted(group: str, resource: str) -> set[str]:
    return {
        verb
        for rule in _rules()
        if group in rule["apiGroups"] and resource in rule["resources"]
        for verb in rule["verbs"]
    }


def _needs_grant(group: str, resource: str) -> bool:
    if group in _GRANTED_GROUPS or group.endswith(_GRANTED_SUFFIXES):
        return False
    return not (group == "" and resource in _GRANTED_CORE)


@pytest.fixture(scope="module")
def composed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], set[str]]:
    """(group, plural) -> the fleets that compose it directly on the control plane."""
    plurals = _plurals()
    out: dict[tuple[str, str], set[str]] = {}
    for name, dirs in _fleets(tmp_path_factory.mktemp("fleets")):
        preview = run_preview(dirs, assume_ready=True)
        for state in preview.fleet.states.values():
            for obj in state.composed:
                group = str(obj.get("apiVersion", "")).rpartition("/")[0]
                kind = str(obj.get("kind", ""))
                plural = plurals.get((group, kind)) or _CORE_PLURALS.get(kind, kind.lower() + "s")
                out.setdefault((group, plural), set()).add(name)
    return out


def test_role_is_aggregated_into_crossplanes() -> None:
    role = yaml.safe_load(ROLE.read_text())
    assert role["kind"] == "ClusterRole"
    assert role["metadata"]["labels"]["rbac.crossplane.io/aggregate-to-crossplane"] == "true"


def test_grants_every_kind_composed_on_the_control_plane(composed: dict[tuple[str, str], set[str]]) -> None:
    missing = {
        f"{group or 'core'}/{plural} (composed by {', '.join(sorted(fleets))}): lacks "
        f"{sorted(_COMPOSE_VERBS - _granted(group, plural))}"
        for (group, plural), fleets in composed.items()
        if _needs_grant(group, plural) and not _granted(group, plural) >= _COMPOSE_VERBS
    }
    assert not missing, "\n".join(sorted(missing))


def test_grants_nothing_composed_by_none(composed: dict[tuple[str, str], set[str]]) -> None:
    # Namespaces are read (FleetQuota's required resources), not composed.
    read_only = {("", "namespaces")}
    unused = {
        f"{group or 'core'}/{resource}"
        for rule in _rules()
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        if (group, resource) not in composed and (group, resource) not in read_only
    }
    assert not unused, f"granted but composed by no example: {sorted(unused)}"


def test_namespaces_are_read_only() -> None:
    assert _granted("", "namespaces") == {"get", "list", "watch"}
