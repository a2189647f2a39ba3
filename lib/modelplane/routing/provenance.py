"""No hijack: a ModelEndpoint carrying a ``modelplane.ai/`` label is routed only if modelplane composed it.

The ``modelplane.ai/`` labels are modelplane's: a ModelService selecting
``modelplane.ai/deployment=X`` means the endpoints ModelDeployment X composed.
Labels are free for anyone who may write a ModelEndpoint, so a label alone
proves nothing; the controller reference Crossplane sets on every composed
resource (``metadata.ownerReferences[]`` with ``controller: true``, naming the
composite) does. An owner reference is namespace-local, so a controller named
X in the endpoint's namespace is ModelDeployment X of that namespace.

Hand-made endpoints (external APIs) carry only their user's labels and are
routed by them as before; one that also carries a ``modelplane.ai/`` label is
refused, so it cannot take a share of a deployment's traffic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.names import DEPLOYMENT_LABEL

PREFIX = "modelplane.ai/"
# The kind that composes ModelEndpoints (per replica and per pool), in the modelplane.ai group.
COMPOSER_KIND = "ModelDeployment"
_GROUP = PREFIX.rstrip("/")


def _controller(owners: Sequence[Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the owner reference marked as controller."""
    return next((o for o in owners if isinstance(o, Mapping) and o.get("controller") is True), None)


def refusal(namespace: str, name: str, labels: Mapping[str, str], owners: Sequence[Any]) -> str | None:
    """Why the endpoint ``namespace/name`` gets no traffic despite matching, or None when it may be routed.

    An endpoint with no ``modelplane.ai/`` label may always be routed. One with such a label
    must be controlled by a ModelDeployment of the modelplane.ai group, and, when it carries
    ``modelplane.ai/deployment=X``, by ModelDeployment X.
    """
    ours = sorted((k, v) for k, v in labels.items() if k.startswith(PREFIX))
    if not ours:
        return None
    controller = _controller(owners) or {}
    group = str(controller.get("apiVersion", "")).partition("/")[0]
    composer = group == _GROUP and controller.get("kind") == COMPOSER_KIND
    deployment = labels.get(DEPLOYMENT_LABEL)
    if composer and (deployment is None or controller.get("name") == deployment):
        return None
    if deployment is not None:
        shown, by = f"{DEPLOYMENT_LABEL}={deployment}", f"ModelDeployment {deployment}"
    else:
        shown, by = f"{ours[0][0]}={ours[0][1]}", "a ModelDeployment"
    return (
        f"ModelEndpoint {namespace}/{name} carries {shown} but was not composed by {by}: it gets no traffic "
        f"(the {PREFIX} labels are modelplane's; select a hand-made endpoint by your own labels)"
    )
