"""Read a settled fleet's objects: by kind, as their generated models, and their conditions."""

from __future__ import annotations

from typing import TypeVar

import pydantic

from modelplane.preview.fleet import Fleet
from modelplane.preview.manifests import Key, Manifest
from modelplane.preview.states import XRState
from modelplane.preview.view.model import Condition
from modelplane_models.inference_class import InferenceClass
from modelplane_models.inference_cluster import InferenceCluster
from modelplane_models.model_deployment import ModelDeployment
from modelplane_models.model_replica import ModelReplica

M = TypeVar("M", InferenceCluster, InferenceClass, ModelReplica, ModelDeployment)


def display_name(key: Key) -> str:
    """An object's name as the preview shows it: ``namespace/name``, or ``name`` when cluster-scoped."""
    return "/".join(filter(None, key[1:]))


def condition(xr: Manifest, typ: str) -> Condition:
    """The condition ``typ`` of ``xr`` (Unknown when it has none)."""
    for c in xr.get("status", {}).get("conditions", []):
        if c.get("type") == typ:
            return Condition(typ, str(c.get("status", "Unknown")), str(c.get("reason", "")), str(c.get("message", "")))
    return Condition(typ)


def per_hour(xr: Manifest) -> str:
    """``status.cost`` as one cell, e.g. ``32.80 USD/h``; "" when the object reports no cost."""
    cost = xr.get("status", {}).get("cost")
    if not isinstance(cost, dict) or not cost.get("perHour"):
        return ""
    return f"{cost['perHour']} {cost.get('currency', '')}/h"


def of_kind(fleet: Fleet, kind: str) -> list[tuple[Key, XRState]]:
    """The fleet's objects of ``kind``, in the fleet's order."""
    return [(k, s) for k, s in fleet.states.items() if k[0] == kind]


def models(fleet: Fleet, kind: str, model: type[M]) -> list[M]:
    """The fleet's objects of ``kind`` that read as ``model``; one that does not is left out."""
    parsed = []
    for _key, state in of_kind(fleet, kind):
        try:
            parsed.append(model.model_validate(state.xr))
        except pydantic.ValidationError:
            continue  # shown as it is; the function reports what is wrong with it
    return parsed
