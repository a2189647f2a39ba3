"""A composed resource's metadata, as Crossplane derives it from the XR before applying it."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from modelplane.render.model import (
    ANNOTATION_RESOURCE_NAME,
    LABEL_CLAIM_NAME,
    LABEL_CLAIM_NAMESPACE,
    LABEL_COMPOSITE,
    RenderError,
)

__all__ = ["child_name", "controller_of", "generate_name", "render_metadata", "validate_name"]

_MAX_NAME = 63
_HASH_LENGTH = 12
_MAX_SUBDOMAIN = 253
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
# k8s.io/apiserver's SimpleNameGenerator suffix: five characters from an alphabet without vowels.
_RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM_LENGTH = 5


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the owner reference marked as controller."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return ref
    return None


def _owner_reference(ref: Mapping[str, Any]) -> dict[str, Any]:
    """An owner reference as the typed struct writes it back."""
    out = {k: ref.get(k, "") for k in ("apiVersion", "kind", "name", "uid")}
    out.update({k: ref[k] for k in ("controller", "blockOwnerDeletion") if ref.get(k) is not None})
    return out


def render_metadata(cd: dict[str, Any], xr: Mapping[str, Any], name: str) -> None:
    """``RenderComposedResourceMetadata``: generateName, namespace, labels and the XR as controller.

    Raises:
        RenderError: The resource already has another controller.
    """
    meta = cd.setdefault("metadata", {})
    xmeta = xr.get("metadata") or {}
    xlabels = xmeta.get("labels") or {}
    prefix = str(xlabels.get(LABEL_COMPOSITE, ""))
    if not meta.get("name") and not meta.get("generateName"):
        meta["generateName"] = f"{prefix}-"
    if xmeta.get("namespace"):
        meta["namespace"] = xmeta["namespace"]
    if name:
        meta.setdefault("annotations", {})[ANNOTATION_RESOURCE_NAME] = name
    labels = meta.setdefault("labels", {})
    labels[LABEL_COMPOSITE] = prefix
    if xlabels.get(LABEL_CLAIM_NAME) and xlabels.get(LABEL_CLAIM_NAMESPACE):
        labels[LABEL_CLAIM_NAME] = xlabels[LABEL_CLAIM_NAME]
        labels[LABEL_CLAIM_NAMESPACE] = xlabels[LABEL_CLAIM_NAMESPACE]
    owner = {
        "apiVersion": xr.get("apiVersion", ""),
        "kind": xr.get("kind", ""),
        "name": xmeta.get("name", ""),
        "uid": xmeta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    current = controller_of(cd)
    if current is not None and current.get("uid", "") != owner["uid"]:
        msg = (
            f'cannot render metadata for composed resource "{name}": cannot set controller reference: '
            f"{meta.get('name', '')} is already controlled by {current.get('kind', '')} "
            f"{current.get('name', '')} (UID {current.get('uid', '')})"
        )
        raise RenderError(msg)
    refs = [_owner_reference(r) for r in meta.get("ownerReferences") or () if isinstance(r, Mapping)]
    for i, r in enumerate(refs):
        if r["uid"] == owner["uid"]:
            refs[i] = owner
            break
    else:
        refs.append(owner)
    meta["ownerReferences"] = refs


def child_name(parent: str, parent_uid: str, child: str) -> str:
    """``names.ChildName``: the parent's name and a hash of its UID and the child's name, at most 63 characters."""
    suffix = hashlib.sha256((parent_uid + child).encode()).hexdigest()[:_HASH_LENGTH]
    if parent and not parent.endswith("-"):
        parent += "-"
    full = parent + suffix
    if len(full) <= _MAX_NAME:
        return full
    keep = _MAX_NAME - _HASH_LENGTH
    if keep > 0 and not parent[:keep].endswith("-"):
        return parent[: keep - 1] + "-" + suffix
    return parent[:keep] + suffix


def generate_name(cd: dict[str, Any]) -> None:
    """``NameGenerator.GenerateName``: a name from generateName, stable when the XR has a UID.

    Without the controller's UID Crossplane falls back to a random suffix, as
    the API server's generateName does. This picks one such suffix from a hash
    of generateName and the composition resource name instead, so that a
    render stays deterministic.
    """
    meta = cd.setdefault("metadata", {})
    if meta.get("name") or not meta.get("generateName"):
        return
    generate = str(meta["generateName"])
    owner = controller_of(cd)
    resource_name = str((meta.get("annotations") or {}).get(ANNOTATION_RESOURCE_NAME, ""))
    if resource_name and owner is not None and owner.get("uid"):
        meta["name"] = child_name(generate, str(owner["uid"]), resource_name)
        return
    digest = hashlib.sha256(f"{generate}\x00{resource_name}".encode()).digest()
    meta["name"] = generate + "".join(_RANDOM_ALPHABET[b % len(_RANDOM_ALPHABET)] for b in digest[:_RANDOM_LENGTH])


def validate_name(cd: Mapping[str, Any], name: str) -> None:
    """``names.ValidateName``: a composed resource's name is an RFC 1123 subdomain (RBAC names may hold colons).

    Raises:
        RenderError: It is not.
    """
    value = str((cd.get("metadata") or {}).get("name", ""))
    group = str(cd.get("apiVersion", "")).rpartition("/")[0]
    rbac = group == "rbac.authorization.k8s.io" and cd.get("kind") in _RBAC_KINDS
    checked = value.replace(":", "") if rbac else value
    if len(checked) > _MAX_SUBDOMAIN or not _SUBDOMAIN.match(checked):
        msg = (
            f'cannot apply composed resource "{name}" because it has an invalid name "{value}". '
            "Must be a valid RFC 1123 subdomain name."
        )
        raise RenderError(msg)
