"""Make ``crossplane render`` output and ours comparable byte for byte.

Crossplane's render engine emits one event per composed resource that is not
yet ready (or not yet valid, or moved to the XR's namespace) while walking a
Go map, so their order changes from run to run; ours sorts them by
composition resource name. ``normalize`` sorts every run of such ``Result``
documents. Nothing else is random: UIDs are derived from the XR and
condition times are fixed by the CLI.

The normalisation is textual on purpose: re-parsing and re-printing would hide
the very formatting differences (key order, quoting, folding) the
conformance test exists to catch.
"""

from __future__ import annotations

import re

__all__ = ["normalize"]

_SEPARATOR = "---\n"
_SEPARATOR_LINE = re.compile(r"(?m)^---\n")
# A Result document of a per-resource event, as go-yaml prints it (a long message folds onto indented lines).
_PER_RESOURCE = re.compile(
    r"^apiVersion: render\.crossplane\.io/v1beta1\nkind: Result\n"
    r"message: [\"']?(?:Composed resource |cannot create composed resource )[^\n]*(?:\n  [^\n]*)*\n"
    r"reason: (?:ComposeResources|NamespaceOverridden)\n",
)


def normalize(stream: str) -> str:
    """Sort each run of consecutive per-resource event documents in a rendered YAML stream."""
    if not stream.startswith(_SEPARATOR):
        return stream
    # A separator is a line of its own; inside a block scalar "---" is indented.
    docs = _SEPARATOR_LINE.split(stream[len(_SEPARATOR) :])
    out: list[str] = []
    run: list[str] = []
    for doc in docs:
        if _PER_RESOURCE.match(doc):
            run.append(doc)
            continue
        out.extend(sorted(run))
        run = []
        out.append(doc)
    out.extend(sorted(run))
    return "".join(_SEPARATOR + d for d in out)
