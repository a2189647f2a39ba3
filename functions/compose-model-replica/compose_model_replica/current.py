"""Whether what a replica observes of a remote object is about the spec it composes now.

A replica reads each remote object from its Object's ``status.atProvider.manifest``.
During an in-place update (a new image rolled to a replica where it runs) that
can still show the previous spec, Ready, in three ways, each seen on a real
control plane:

1. the Object does not carry the change yet: the function writes it in this
   very call, so the observed ``spec.forProvider.manifest`` is the previous one;
2. provider-kubernetes has not applied the Object's latest generation yet (its
   Synced condition's ``observedGeneration`` is behind ``metadata.generation``):
   ``atProvider`` shows the remote object from before the change;
3. the remote object's own controller has not observed its latest generation
   (``status.observedGeneration`` behind ``metadata.generation``): its Ready
   condition is about the previous spec.

In each case a Ready workload says nothing about the spec the replica runs now,
and a deployment that counted the replica Ready would take the next one down
too early. A missing ``observedGeneration`` is not read as behind: not every
controller writes one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.layout import Layout

# What is read of an observed Object (``object`` passes the carried manifest through as it is).
OBJECT: Layout = {
    "metadata": {"generation": int},
    "spec": {"forProvider": {"manifest": object}},
    "status": {
        "conditions": [{"type": str, "observedGeneration": int}],
        "atProvider": {
            "manifest": {
                "kind": str,
                "metadata": {"name": str, "generation": int},
                "status": {"observedGeneration": int},
            }
        },
    },
}


def carries(have: Any, want: Any) -> bool:  # noqa: ANN401 - any JSON values
    """Whether ``have`` holds every field of ``want`` as ``want`` has it (lists item by item, of the same length).

    Numbers compare by value (a protobuf Struct carries every number as a double);
    fields ``want`` does not name may be there (what the API server adds).
    """
    if isinstance(want, Mapping):
        return isinstance(have, Mapping) and all(
            (k in have and carries(have[k], v)) or (v is None and k not in have) for k, v in want.items()
        )
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(carries(h, w) for h, w in zip(have, want, strict=True))
        )
    if isinstance(want, bool) or isinstance(have, bool):
        return isinstance(have, bool) and have == want
    if isinstance(want, int | float):
        return isinstance(have, int | float) and float(have) == float(want)
    return bool(have == want)


def behind(observed: Mapping[str, Any], desired: Mapping[str, Any]) -> str:
    """Why the Object ``observed`` (conformed to ``OBJECT``) may not show ``desired`` served; "" when it does.

    Args:
        observed: The Object as observed.
        desired: The manifest the replica composes for it now.
    """
    name = f"{desired.get('kind')} {desired.get('metadata', {}).get('name')}"
    carried = observed.get("spec", {}).get("forProvider", {}).get("manifest")
    if not carries(carried, desired):
        return f"{name}: the change is being written to its Object"
    generation = observed.get("metadata", {}).get("generation")
    conditions = observed.get("status", {}).get("conditions") or []
    synced = next((c.get("observedGeneration") for c in conditions if c.get("type") == "Synced"), None)
    if generation is not None and synced is not None and synced != generation:
        return f"{name}: provider-kubernetes has not applied generation {generation} of its Object yet"
    remote = observed.get("status", {}).get("atProvider", {}).get("manifest") or {}
    wanted = remote.get("metadata", {}).get("generation")
    seen = remote.get("status", {}).get("observedGeneration")
    if wanted is not None and seen is not None and seen != wanted:
        return f"{name}: its controller has not observed generation {wanted} yet (it last observed {seen})"
    return ""
