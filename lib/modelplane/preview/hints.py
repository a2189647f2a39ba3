"""Did-you-mean: the known value nearest to one that names nothing (an enum value, a kind, a name).

A value that differs from a known one only in case is always offered; otherwise the closest
known value, if it is close (``difflib``'s ratio of at least 0.75).
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable, Sequence

from modelplane import kinds
from modelplane.admission.catalog import CRDS_DIR, KUBERNETES_OPENAPI, kubernetes_openapi
from modelplane.admission.xrd import definitions
from modelplane.documents import read_all

_CUTOFF = 0.75
_UNSUPPORTED = re.compile(
    r'^(?P<field>\S+): Unsupported value: (?P<value>"(?:[^"\\]|\\.)*"): supported values: (?P<values>.*)$'
)

ApiType = tuple[str, str]  # (apiVersion, kind)


def nearest(word: str, known: Iterable[str]) -> str | None:
    """The known value ``word`` most likely meant, or None when none is near (or ``word`` is known)."""
    choices = sorted(set(known))
    if word in choices:
        return None
    folded = [c for c in choices if c.casefold() == word.casefold()]
    if folded:
        return folded[0]
    near = difflib.get_close_matches(word, choices, n=1, cutoff=_CUTOFF)
    return near[0] if near else None


def enum_hints(errors: Sequence[str]) -> list[str]:
    """A did-you-mean for each ``Unsupported value`` error of the API server whose value is near a supported one."""
    hints = []
    for error in errors:
        match = _UNSUPPORTED.match(error.removeprefix("* "))
        if match is None:
            continue
        try:
            value = json.loads(match["value"])
            supported = json.loads(f"[{match['values']}]")
        except json.JSONDecodeError:
            continue
        near = nearest(str(value), (str(s) for s in supported))
        if near is not None:
            hints.append(f"{match['field']}: did you mean {json.dumps(near)}?")
    return hints


@functools.cache
def builtin_types() -> frozenset[ApiType]:
    """Our kinds and the built-in Kubernetes kinds, as (apiVersion, kind)."""
    found = {(kinds.API_VERSION, kind) for kind in definitions()}
    if KUBERNETES_OPENAPI.is_file():
        for definition in kubernetes_openapi()["definitions"].values():
            for gvk in definition.get("x-kubernetes-group-version-kind", []):
                group, version = gvk["group"], gvk["version"]
                found.add((f"{group}/{version}" if group else version, gvk["kind"]))
    return frozenset(found)


@functools.cache
def crd_types(group: str) -> frozenset[ApiType]:
    """The served (apiVersion, kind) of the shared CRDs of ``group`` (their files are named after it)."""
    found = set()
    for path in sorted(CRDS_DIR.rglob(f"{group}_*.yaml")) if group else ():
        for crd in read_all(path):
            spec = crd.get("spec", {}) if crd.get("kind") == "CustomResourceDefinition" else {}
            kind = spec.get("names", {}).get("kind", "")
            if spec.get("group") == group:
                found |= {(f"{group}/{v['name']}", kind) for v in spec.get("versions", []) if v.get("served", True)}
    return frozenset(found)


def group_of(api_version: str) -> str:
    """The API group of ``api_version`` ("" for the core group's ``v1``)."""
    return api_version.rpartition("/")[0]


def type_hints(api_version: str, kind: str, *, anywhere: bool) -> list[str]:
    """What a type no schema describes was likely meant to be: a near kind, then the apiVersion that serves it.

    Args:
        api_version: The manifest's apiVersion.
        kind: The manifest's kind.
        anywhere: Look for the kind among our kinds and the built-in ones, whatever the group; else
            only in ``api_version``'s group, the shared CRDs included (a kind of a group the preview
            knows only in part may well be a CRD it has not seen).
    """
    group = group_of(api_version)
    if anywhere:
        known = list(builtin_types())
    else:
        known = [t for t in builtin_types() | crd_types(group) if group_of(t[0]) == group]
    kind_names = {k for _, k in known}
    meant = kind if kind in kind_names else nearest(kind, kind_names)
    if meant is None:
        return []
    versions = sorted(v for v, k in known if k == meant)
    if api_version in versions:
        version: str | None = api_version
    else:
        version = nearest(api_version, versions) or (versions[0] if len(versions) == 1 else None)
    hints = []
    if version is None:
        hints.append(f"apiVersion: {meant} is served as {', '.join(versions)}")
    elif version != api_version:
        hints.append(f"apiVersion: did you mean {version}?")
    if meant != kind:
        hints.append(f"kind: did you mean {meant}?")
    return hints
