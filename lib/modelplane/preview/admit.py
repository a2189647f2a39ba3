"""Admit the loaded manifests as the API server would, before anything is rendered.

A refused manifest is not rendered, as ``kubectl apply`` would not have
created it; an admitted one is rendered as stored, with the schema's defaults
applied. A ``status`` is not admitted: the API server ignores it on create
(the status subresource), and the preview takes it as what a live system
observed.

The preview is stricter than the API server in two ways, both refusals:
the DRA CEL selectors a manifest carries are compiled (``selectors``), and a
kind that cannot exist is refused: one of our group, one of a built-in group
(no CRD can join a group without a dot), or one of our kinds under a
misspelt group. Any other kind no schema describes (no XRD, no CRD under the
shared CRDs, not built in) is not refused, since the cluster may well have its
CRD, but it is listed as not checked. Every refusal names its file and, where
one is near, the value that was likely meant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from modelplane import kinds
from modelplane.admission import validate
from modelplane.admission.catalog import validator_for
from modelplane.admission.report import Refusal, refusal
from modelplane.admission.validator import Result
from modelplane.admission.xrd import definitions
from modelplane.preview.hints import builtin_types, enum_hints, group_of, nearest, type_hints
from modelplane.preview.manifests import Key, Loaded, Manifest, is_modelplane, key_of
from modelplane.preview.selectors import HINT as CEL_HINT
from modelplane.preview.selectors import compile_errors


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
    # Per unchecked manifest, what it was likely meant to be (e.g. "kind: did you mean ScaledObject?").
    unchecked_hints: Mapping[Key, tuple[str, ...]] = field(default_factory=dict)


def _cannot_exist(manifest: Manifest) -> bool:
    """Whether no cluster can serve the manifest's type, so the API server would refuse it whatever is installed."""
    api_version, kind = str(manifest.get("apiVersion", "")), str(manifest.get("kind", ""))
    group = group_of(api_version)
    if is_modelplane(manifest):
        return True
    if "." not in group and any(group_of(v) == group for v, _ in builtin_types()):
        return True  # a built-in group (core, apps, batch...): CRD groups need a dot
    return kind in definitions() and nearest(group, [kinds.GROUP]) is not None


def _named(why: Refusal, source: str) -> Refusal:
    """``why`` naming its file: kubectl names it for a bad request, not for an invalid object."""
    if not source or f'"{source}"' in why.message:
        return why
    return Refusal(f'error when creating "{source}": {why.message}', why.hints)


def _refusal(manifest: Manifest, result: Result, source: str) -> Refusal | None:
    """Why the API server, or the preview's stricter admission, refuses ``manifest``; None if admitted."""
    api_version, kind = str(manifest.get("apiVersion", "")), str(manifest.get("kind", ""))
    if not result.schema_found:
        why = refusal(manifest, result, source)
        if why is None:
            return None
        return Refusal(why.message, (*why.hints, *type_hints(api_version, kind, anywhere=True)))
    validator = validator_for(api_version, kind)
    why = refusal(manifest, result, source, validator.fields_at if validator is not None else None)
    if why is not None:
        strict_decoding = "strict decoding error" in why.message
        hints = () if strict_decoding else tuple(enum_hints(result.errors))
        return Refusal(why.message, (*why.hints, *hints))
    errors = compile_errors(result.object) if is_modelplane(manifest) else []
    if not errors:
        return None
    name = str((manifest.get("metadata") or {}).get("name", ""))
    head = f'The {kind} "{name}" is invalid: '
    message = head + errors[0] if len(errors) == 1 else head + "".join(f"\n* {e}" for e in errors)
    return Refusal(message, (CEL_HINT,))


def admit(loaded: Loaded) -> Admission:
    """Check every manifest of ``loaded``; return what the API server would store and what it would refuse."""
    xrs: list[Manifest] = []
    others: list[Manifest] = []
    refused: list[Refused] = []
    unchecked: list[Key] = []
    hints: dict[Key, tuple[str, ...]] = {}
    for manifest in (*loaded.xrs, *loaded.others):
        key = key_of(manifest)
        status = manifest.get("status")
        result = validate({k: v for k, v in manifest.items() if k != "status"})
        if not result.schema_found and not _cannot_exist(manifest):
            unchecked.append(key)
            others.append(manifest)
            near = type_hints(str(manifest.get("apiVersion", "")), key[0], anywhere=False)
            if near:
                hints[key] = tuple(near)
            continue
        source = loaded.sources.get(key, "")
        why = _refusal(manifest, result, source)
        if why is not None:
            refused.append(Refused(key, source, _named(why, source)))
            continue
        stored = result.object if status is None else {**result.object, "status": status}
        (xrs if is_modelplane(manifest) else others).append(stored)
    admitted = Loaded(tuple(xrs), tuple(others), loaded.sources)
    return Admission(admitted, tuple(refused), tuple(unchecked), hints)
