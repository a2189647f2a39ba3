"""compose-inference-cluster republishes its ServingStack's anchor (status.stackResourceRefs) on every path.

Each ModelReplica on the cluster gets a Crossplane Usage of the anchor from this list, which keeps every
Helm release and gateway Object of the stack while the replica runs, even once the cluster is deleted: on
every source (an Existing cluster too), while the call keeps everything (an input not fetched yet, an
invalid spec), and not before the stack reports its anchor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.functions.test_compose_inference_cluster import _class, _cluster, _req, _run, _status

ANCHOR = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c-stack-anchor", "namespace": "crossplane-system"}


def _stack(status: dict[str, Any] | None) -> dict[str, Any]:
    """The cluster's ServingStack as observed, with ``status``."""
    out: dict[str, Any] = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ServingStack", "metadata": {"name": "c"}}
    return {**out, "status": status} if status is not None else out


def _invalid(xr: dict[str, Any]) -> dict[str, Any]:
    xr["spec"]["nodePools"][0]["nodeCount"] = "many"
    return xr


@pytest.mark.parametrize(
    ("source", "change", "stack", "fetched", "want"),
    [
        pytest.param("Existing", None, {"anchorRef": ANCHOR}, True, [ANCHOR], id="existing"),
        pytest.param("GKE", None, {"anchorRef": ANCHOR}, True, [ANCHOR], id="gke"),
        pytest.param("Existing", None, {"anchorRef": ANCHOR}, False, [ANCHOR], id="inputs-not-fetched"),
        pytest.param("Existing", _invalid, {"anchorRef": ANCHOR}, True, [ANCHOR], id="invalid-spec"),
        pytest.param("Existing", None, {}, True, None, id="not-reported-yet"),
        pytest.param("Existing", None, None, True, None, id="stack-without-status"),
        pytest.param(
            "Existing", None, {"anchorRef": {**ANCHOR, "namespace": 7}}, True, None, id="malformed-ref-left-out"
        ),
    ],
)
def test_the_cluster_republishes_its_stacks_anchor(
    source: str,
    change: Callable[[dict[str, Any]], Any] | None,
    stack: dict[str, Any] | None,
    fetched: bool,
    want: list[dict[str, str]] | None,
) -> None:
    xr = _cluster(source)
    if change is not None:
        change(xr)
    classes = [_class("h100", source if source != "Existing" else None)]
    rsp = _run(_req(xr, classes=classes, observed={"serving-stack": _stack(stack)}, fetched=fetched))
    assert _status(rsp).get("stackResourceRefs") == want
