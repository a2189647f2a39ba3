"""Read a running control plane's Modelplane objects with ``kubectl``, as the base of a plan.

``kubectl get modelplane --all-namespaces -o yaml`` lists every object of the
``modelplane`` category (every XRD declares it), with the status the control
plane observed; the user's kubeconfig and context apply as for any kubectl call.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from modelplane import documents
from modelplane.preview.manifests import Key, Loaded, Manifest, ManifestError, is_modelplane, key_of

CATEGORY = "modelplane"
# Fields the API server sets that say nothing about what an object is.
_SERVER_FIELDS = ("managedFields", "resourceVersion", "creationTimestamp", "generation", "selfLink")
_TIMEOUT_SECONDS = 120


def kubectl_command(context: str | None = None) -> list[str]:
    """The kubectl command line that lists the control plane's Modelplane objects."""
    command = ["kubectl", "get", CATEGORY, "--all-namespaces", "-o", "yaml"]
    return command + (["--context", context] if context else [])


def _clean(obj: Manifest) -> Manifest:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_FIELDS}
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k != "kubectl.kubernetes.io/last-applied-configuration"
    }
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return {**obj, "metadata": meta}


def parse_list(text: str, source: str) -> Loaded:
    """The objects of a ``kubectl get -o yaml`` List.

    Raises:
        ManifestError: the output is not a List of Kubernetes objects.
    """
    try:
        doc = documents.load_value(text)
    except documents.DocumentError as err:
        msg = f"{source}: not YAML: {err}"
        raise ManifestError(msg) from err
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        msg = f"{source}: want a List with items"
        raise ManifestError(msg)
    xrs: list[Manifest] = []
    others: list[Manifest] = []
    sources: dict[Key, str] = {}
    for item in doc["items"]:
        if not isinstance(item, dict) or not item.get("kind") or not (item.get("metadata") or {}).get("name"):
            msg = f"{source}: an item without kind or metadata.name"
            raise ManifestError(msg)
        obj = _clean(item)
        sources[key_of(obj)] = source
        (xrs if is_modelplane(obj) else others).append(obj)
    return Loaded(tuple(xrs), tuple(others), sources)


def read_live(context: str | None = None, *, command: Sequence[str] | None = None) -> Loaded:
    """Every Modelplane object of the control plane kubectl reaches.

    Raises:
        ManifestError: kubectl is missing, fails, or prints something that is not a List.
    """
    argv = list(command or kubectl_command(context))
    if shutil.which(argv[0]) is None:
        msg = f"{argv[0]} not found on PATH (--live reads the control plane with kubectl)"
        raise ManifestError(msg)
    try:
        done = subprocess.run(  # noqa: S603 - a fixed kubectl command line, no shell
            argv, capture_output=True, text=True, check=False, timeout=_TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired as err:
        msg = f"{' '.join(argv)}: no answer after {_TIMEOUT_SECONDS}s"
        raise ManifestError(msg) from err
    if done.returncode != 0:
        msg = f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}"
        raise ManifestError(msg)
    return parse_list(done.stdout, "live control plane")
