"""Shape a reconcile into what ``crossplane render`` prints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.protojson import copy_json
from modelplane.render import goyaml
from modelplane.render.conditions import get_conditions
from modelplane.render.model import ANNOTATION_RESOURCE_NAME, CONDITION_TIME, RenderOutput

__all__ = ["include_full_xr", "replace_condition_times", "to_yaml"]


def replace_condition_times(obj: dict[str, Any]) -> None:
    """``render.ReplaceConditionTimestamps``: every condition at the fixed time, re-read as typed conditions.

    A status that is not an object is left alone; one without conditions gets
    a null list, as the Go code writes it.
    """
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    conditions = get_conditions(obj)
    for c in conditions:
        c["lastTransitionTime"] = CONDITION_TIME
    status["conditions"] = conditions or None


def sort_composed(composed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Composed resources by composition resource name (a stable sort, as the CLI's)."""

    def name(c: Mapping[str, Any]) -> str:
        return str(((c.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME, ""))

    return sorted(composed, key=name)


def to_yaml(output: RenderOutput, *, include_function_results: bool, include_context: bool) -> str:
    """The YAML stream ``crossplane render`` prints for ``output``."""
    docs: list[Mapping[str, Any]] = [output.xr, *output.composed]
    if include_function_results:
        docs.extend(output.results)
    if include_context and output.context is not None:
        docs.append(output.context)
    return "".join("---\n" + goyaml.dump_document(d) for d in docs)


def _merge(dst: dict[str, Any], src: Mapping[str, Any]) -> None:
    """``mergo.Merge(dst, src, WithOverride)`` on JSON objects: maps merge, anything else is replaced."""
    for k, v in src.items():
        if isinstance(v, Mapping) and isinstance(dst.get(k), dict) and dst[k]:
            _merge(dst[k], v)
        else:
            dst[k] = copy_json(v)


def include_full_xr(output: RenderOutput, xr: Mapping[str, Any]) -> RenderOutput:
    """``--include-full-xr``: the rendered XR merged over the input XR."""
    full = copy_json(dict(xr))
    _merge(full, output.xr)
    return RenderOutput(xr=full, composed=output.composed, results=output.results, context=output.context)
