"""Every composed object fits its CRD when the XR has the longest name (and namespace) Kubernetes allows.

An XR's name is at most 63 characters in practice: Crossplane labels every
composed resource with it (``crossplane.io/composite``), and a label value is
at most 63. Each seed of the fuzz corpus is renamed to 63 characters (its
namespace too, for a namespaced kind) and every desired composed resource and
every remote manifest an Object carries is validated against its real CRD or
built-in schema (names, label values, and CEL rules such as the
ObservedObjectCollection's ``size(self.metadata.name) < 64``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from crossplane.function import resource

from modelplane.kinds import BY_KIND, KINDS
from modelplane.remote import OBJECT_API_VERSION
from tests.conformance.schemas import validate_any
from tests.fuzz.corpus import seeds_of
from tests.fuzz.harness import call, composer, quiet_logger

# The longest DNS labels: a name a replica ordinal ends, and a namespace.
LONGEST_NAME = "a-very-long-name-" + "n" * 44 + "-0"
LONGEST_NAMESPACE = "a-very-long-namespace-" + "s" * 41


def _json(value: Any) -> Any:
    """``value`` as the API server decodes it: protobuf carries every number as a double, JSON has integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _objects(name: str, obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    yield name, obj
    manifest = (obj.get("spec") or {}).get("forProvider", {}).get("manifest")
    if obj.get("apiVersion") == OBJECT_API_VERSION and isinstance(manifest, dict):
        yield f"{name} (its manifest)", manifest


@pytest.mark.parametrize("kind", [pytest.param(k.kind, id=k.function) for k in KINDS])
def test_composed_names_fit_for_the_longest_xr_names(kind: str) -> None:
    compose, log = composer(kind), quiet_logger()
    assert len(LONGEST_NAME) == len(LONGEST_NAMESPACE) == 63
    errors = []
    for seed in seeds_of(kind):
        req = seed.parse()
        meta = req.observed.composite.resource["metadata"]
        meta["name"] = LONGEST_NAME
        if BY_KIND[kind].namespaced:
            meta["namespace"] = LONGEST_NAMESPACE
        rsp = call(compose, req, log)
        for key, desired in sorted(rsp.desired.resources.items()):
            for what, obj in _objects(key, _json(resource.struct_to_dict(desired.resource))):
                errors += [f"{seed.id} {what}: {e}" for e in validate_any(obj)]
    assert errors == []
