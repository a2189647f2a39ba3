"""Admit the loaded manifests as the API server would, before anything is rendered.

A refused manifest is not rendered, as ``kubectl apply`` would not have
created it; an admitted one is rendered as stored, with the schema's defaults
applied. A ``status`` is not admitted: the API server ignores it on create
(the status subresource), and the preview takes it as what a live system
observed. A kind no schema describes (no XRD, no CRD under the shared CRDs, not
built in) is not refused, since the cluster may well have its CRD, but it is
listed as not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.admission import validate
from modelplane.admission.catalog import validator_for
from modelplane.admission.report import Refusal, refusal
from modelplane.preview.manifests import Key, Loaded, Manifest, is_modelplane, key_of


@dataclass(frozen=True)
class Refused:
    """One manifest the API server would refuse."""

    key: Key
    source: str
    refusal: Refusal


@dataclass(frozen=True)
class Admission:
    """The manifests admitted (defaults applied), those refused, and those no schema could check."""

    loaded: Loaded
    refused: tuple[Refused, ...]
    unchecked: tuple[Key, ...]


def admit(loaded: Loaded) -> Admission:
    """Check every manifest of ``loaded``; return what the API server would store and what it would refuse."""
    xrs: list[Manifest] = []
    others: list[Manifest] = []
    refused: list[Refused] = []
    unchecked: list[Key] = []
    for manifest in (*loaded.xrs, *loaded.others):
        key = key_of(manifest)
        status = manifest.get("status")
        result = validate({k: v for k, v in manifest.items() if k != "status"})
        if not result.schema_found and not is_modelplane(manifest):
            unchecked.append(key)
            others.append(manifest)
            continue
        source = loaded.sources.get(key, "")
        validator = validator_for(str(manifest.get("apiVersion", "")), key[0])
        why = refusal(manifest, result, source, validator.fields_at if validator is not None else None)
        if why is not None:
            refused.append(Refused(key, source, why))
            continue
        stored = result.object if status is None else {**result.object, "status": status}
        (xrs if is_modelplane(manifest) else others).append(stored)
    admitted = Loaded(tuple(xrs), tuple(others), loaded.sources)
    return Admission(admitted, tuple(refused), tuple(unchecked))
