"""What of a render gets validated: the XR (with its spec back), each composed resource, each remote manifest."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tests.conformance.cli import ANNOTATION_RESOURCE_NAME
from tests.conformance.openapi_crds import GVK

RENDER_GROUP = "render.crossplane.io"
# provider-kubernetes Objects carry the object they create on the remote cluster here.
OBJECT_GROUPS = frozenset({"kubernetes.crossplane.io", "kubernetes.m.crossplane.io"})


@dataclass(frozen=True)
class Target:
    """One object to validate and where it came from."""

    origin: str  # e.g. "composed[gpu-pool]", "composed[pool].manifest"
    obj: dict[str, Any]

    @property
    def group(self) -> str:
        """The object's API group (``core`` for the core group), for the counts."""
        return GVK.of(self.obj).group or "core"


def _manifests(origin: str, obj: dict[str, Any]) -> Iterator[Target]:
    """``obj`` and, when it is a provider-kubernetes Object, its manifest (recursively)."""
    yield Target(origin, obj)
    if GVK.of(obj).group in OBJECT_GROUPS and GVK.of(obj).kind == "Object":
        manifest = ((obj.get("spec") or {}).get("forProvider") or {}).get("manifest")
        if isinstance(manifest, dict):
            yield from _manifests(f"{origin}.manifest", manifest)


def targets(xr: Mapping[str, Any], rendered: list[dict[str, Any]]) -> Iterator[Target]:
    """Everything of one render to validate.

    ``rendered`` is the document stream ``crossplane render`` printed for the
    XR ``xr``: the XR, the composed resources, then (with ``-r``) results.
    The rendered XR gets the input's ``spec`` and ``metadata`` back (as
    ``--include-full-xr`` does) so its desired status is validated against
    the full XRD schema. Results and the context are not resources.
    """
    head, *rest = rendered
    yield Target("xr", {**head, "spec": xr.get("spec", {}), "metadata": xr.get("metadata", {})})
    for doc in rest:
        gvk = GVK.of(doc)
        if gvk.group == RENDER_GROUP:
            continue
        name = str(((doc.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME))
        yield from _manifests(f"composed[{name}]", doc)
