"""Make ``crossplane render`` output and ours comparable byte for byte.

The two streams differ in one documented place only: the ``uid`` of the
controller owner reference on composed resources. The v2.2 CLI copies the
XR's (usually absent, so ``uid: ""``); our engine, like Crossplane v2.3's
render engine, derives a stable UUID from the XR's kind, namespace and name.
Condition times need no normalising: both print the fixed
``2024-01-01T00:00:00Z``.

The normalisation is textual on purpose: re-parsing and re-printing would hide
the very formatting differences (key order, quoting, folding) the
conformance test exists to catch.
"""

from __future__ import annotations

import re

__all__ = ["UID_PLACEHOLDER", "normalize"]

UID_PLACEHOLDER = "<uid>"

# Block-style YAML as go-yaml prints it: an owner reference's uid is a
# "uid: <value>" line, either its own line or the first of a sequence item.
_UID_LINE = re.compile(r"^(?P<indent>[ ]*(?:- )?)uid: .*$", re.MULTILINE)


def normalize(stream: str) -> str:
    """Replace every ``uid:`` value in a rendered YAML stream with a placeholder."""
    return _UID_LINE.sub(lambda m: f"{m.group('indent')}uid: {UID_PLACEHOLDER}", stream)
