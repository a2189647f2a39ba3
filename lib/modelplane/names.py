"""Names, labels and composition keys of what Modelplane composes, in one place."""

from __future__ import annotations

from modelplane.scheduling.names import replica_name

__all__ = ["DEPLOYMENT_LABEL", "endpoint_key", "replica_key", "replica_name"]

# Every ModelReplica and ModelEndpoint a ModelDeployment composes carries this label;
# ModelServices select endpoints by it and the scale subresource's selector is built from it.
DEPLOYMENT_LABEL = "modelplane.ai/deployment"


def replica_key(ordinal: int) -> str:
    """The composition resource name of a deployment's replica ``ordinal``."""
    return f"replica-{ordinal}"


def endpoint_key(ordinal: int) -> str:
    """The composition resource name of the endpoint of replica ``ordinal``."""
    return f"endpoint-{ordinal}"
