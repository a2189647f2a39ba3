"""What a render takes and gives, and the names Crossplane gives things."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1

from modelplane.render.requests import KeptRequests
from modelplane.render.store import Catalog, Reads

__all__ = [
    "ANNOTATION_RESOURCE_NAME",
    "CONDITION_TIME",
    "LABEL_CLAIM_NAME",
    "LABEL_CLAIM_NAMESPACE",
    "LABEL_COMPOSITE",
    "RENDER_API_VERSION",
    "RenderError",
    "RenderInputs",
    "RenderOutput",
    "Runner",
]

RENDER_API_VERSION = "render.crossplane.io/v1beta1"
ANNOTATION_RESOURCE_NAME = "crossplane.io/composition-resource-name"
LABEL_COMPOSITE = "crossplane.io/composite"
LABEL_CLAIM_NAME = "crossplane.io/claim-name"
LABEL_CLAIM_NAMESPACE = "crossplane.io/claim-namespace"

# crossplane render replaces every condition's lastTransitionTime with this
# fixed time (the engine's real clock would only be noise).
CONDITION_TIME = "2024-01-01T00:00:00Z"

Runner = grpcv1.FunctionRunnerServiceServicer


class RenderError(Exception):
    """The render cannot complete: bad input, an unknown function or a fatal result."""


@dataclass(frozen=True)
class RenderInputs:
    """What one render needs.

    Attributes:
        xr: The composite resource, as read from its YAML file.
        composition: The Pipeline-mode Composition.
        observed: Observed composed resources (with their
            ``crossplane.io/composition-resource-name`` annotation).
        required: Resources the functions may require (``--required-resources``).
        context: Initial function context, key to JSON value.
        functions: Runners by functionRef name; ``None`` loads Modelplane's own
            with ``modelplane.render.runners.load_runner``.
        credentials: Secrets (``v1/Secret`` dicts, base64 ``data``) that steps'
            ``credentials`` name (``--function-credentials``).
        catalog: More required resources, read through from a shared index instead of
            copied in (the preview's fleet); the XR itself is never read from it.
        requirements: What each step required when this XR was last rendered
            (``RenderOutput.requirements``): a step that requires the same again is called
            once. Only for functions that leave the context alone (Modelplane's).
        requests: Each function's request, kept from render to render of one ``catalog``
            (``modelplane.render.requests.KeptRequests``): a call with ``requirements`` is made
            in it, so what it holds of an unchanged answer is not parsed again. Only for
            functions that never write their request (Modelplane's).
    """

    xr: dict[str, Any]
    composition: dict[str, Any]
    observed: Sequence[dict[str, Any]] = ()
    required: Sequence[dict[str, Any]] = ()
    context: Mapping[str, Any] = field(default_factory=dict)
    functions: Mapping[str, Runner] | None = None
    credentials: Sequence[dict[str, Any]] = ()
    catalog: Catalog | None = None
    requirements: Mapping[str, fnv1.Requirements] = field(default_factory=dict)
    requests: KeptRequests | None = None


@dataclass(frozen=True)
class RenderOutput:
    """What ``crossplane render`` prints, as dicts.

    Attributes:
        xr: The XR as the reconciler left it: apiVersion, kind, name (and
            namespace), ``spec.crossplane.resourceRefs`` and the status (the
            desired one the pipeline returned, plus the conditions).
        composed: Desired composed resources, sorted by composition resource name.
        results: The events the reconcile emitted, in order, as ``Result`` objects.
        context: The context the last step returned, as a ``Context`` object
            (None when it returned none).
        reads: What the render read from the inputs' catalog (empty without one).
        requirements: What each step's last call required, by step name.
    """

    xr: dict[str, Any]
    composed: list[dict[str, Any]]
    results: list[dict[str, Any]]
    context: dict[str, Any] | None
    reads: Reads = field(default_factory=Reads)
    # How the render was reached, not what it printed: not part of its value.
    requirements: Mapping[str, fnv1.Requirements] = field(default_factory=dict, compare=False)
