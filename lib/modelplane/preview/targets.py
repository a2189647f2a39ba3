"""Group every object of a simulated fleet by where it would be applied."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Manifest, is_modelplane

CONTROL_PLANE = "control plane"
# provider-kubernetes Objects carry a manifest that lands on another cluster.
_REMOTE_OBJECT_GROUPS = ("kubernetes.crossplane.io", "kubernetes.m.crossplane.io")
# provider-helm Releases install a chart into the cluster their ProviderConfig reaches.
_HELM_GROUPS = ("helm.crossplane.io", "helm.m.crossplane.io")


@dataclass(frozen=True)
class Target:
    """One place objects are applied to, and the objects, in a stable order."""

    name: str
    objects: tuple[Manifest, ...]


def _is_remote_object(obj: Manifest) -> bool:
    return obj.get("kind") == "Object" and str(obj.get("apiVersion", "")).split("/")[0] in _REMOTE_OBJECT_GROUPS


def _is_release(obj: Manifest) -> bool:
    return obj.get("kind") == "Release" and str(obj.get("apiVersion", "")).split("/")[0] in _HELM_GROUPS


def _cluster_of_config(fleet: Fleet) -> dict[str, str]:
    """The InferenceCluster each ProviderConfig name reaches (a cluster's configs are named after it)."""
    out = {key[2]: key[2] for key in fleet.states if key[0] == "InferenceCluster"}
    for key, s in fleet.states.items():
        name = s.xr.get("status", {}).get("providerConfigRef", {}).get("name") if key[0] == "InferenceCluster" else None
        if name:
            out[str(name)] = key[2]
    return out


def helm_targets(fleet: Fleet) -> dict[str, list[Manifest]]:
    """Every composed Helm Release by the InferenceCluster it installs into ("" for the control plane)."""
    cluster_of_config = _cluster_of_config(fleet)
    out: dict[str, list[Manifest]] = {}
    for state in fleet.states.values():
        for obj in state.composed:
            if _is_release(obj):
                config = str(obj.get("spec", {}).get("providerConfigRef", {}).get("name", ""))
                out.setdefault(cluster_of_config.get(config, ""), []).append(obj)
    return {k: sorted(v, key=lambda r: str(r.get("metadata", {}).get("name", ""))) for k, v in sorted(out.items())}


def group_by_target(fleet: Fleet) -> list[Target]:
    """Return the control plane's objects first, then each workload cluster's.

    A workload cluster's group lists the manifests provider-kubernetes applies there and the Helm
    Releases that install into it (the Releases themselves live on the control plane too).
    """
    cluster_of_config = _cluster_of_config(fleet)
    control: list[Manifest] = [*fleet.others]
    remote: dict[str, list[Manifest]] = {}
    for state in fleet.states.values():
        control.append(state.xr)
        for obj in state.composed:
            if is_modelplane(obj):
                continue  # listed as an XR of its own
            control.append(obj)
            if _is_remote_object(obj):
                config = str(obj.get("spec", {}).get("providerConfigRef", {}).get("name", ""))
                target = cluster_of_config.get(config, f"providerConfig {config or '(none)'}")
                manifest = obj.get("spec", {}).get("forProvider", {}).get("manifest")
                if manifest:
                    remote.setdefault(f"cluster {target}", []).append(manifest)
            elif _is_release(obj):
                config = str(obj.get("spec", {}).get("providerConfigRef", {}).get("name", ""))
                if config in cluster_of_config:
                    remote.setdefault(f"cluster {cluster_of_config[config]}", []).append(obj)
    return [Target(CONTROL_PLANE, tuple(control))] + [Target(n, tuple(remote[n])) for n in sorted(remote)]


def to_yaml(targets: list[Target]) -> str:
    """Render targets as one YAML stream, each section headed by a comment naming its target."""
    parts = []
    for target in targets:
        for obj in target.objects:
            parts.append(f"# target: {target.name}\n" + yaml.safe_dump(obj, sort_keys=True))
    return "---\n".join(parts)
