"""Parse the observed XR of a request into its generated model, once."""

from __future__ import annotations

from typing import Protocol, TypeVar

import pydantic
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import protojson
from modelplane.problems import Problem, invalid

M = TypeVar("M", bound=pydantic.BaseModel)


class _Metadata(Protocol):
    @property
    def name(self) -> str | None: ...
    @property
    def namespace(self) -> str | None: ...


class Object(Protocol):
    """A generated model of a Kubernetes object: every one has an optional ``metadata``."""

    @property
    def metadata(self) -> _Metadata | None:
        """The object's metadata, None when unset."""


class InvalidXRError(ValueError):
    """The observed XR does not fit its schema (admission was bypassed, or the XRD changed)."""

    def __init__(self, problems: list[Problem]) -> None:
        """Keep the problems for the condition message."""
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


def parse_composite(req: fnv1.RunFunctionRequest, model: type[M]) -> M:
    """Return the observed XR as ``model``, without its status.

    Raises:
        InvalidXRError: the XR does not validate; each problem names its field.
    """
    data = protojson.struct_to_dict(req.observed.composite.resource)
    # The status is what functions wrote before and none reads it back: however it looks, it holds nothing up.
    data.pop("status", None)
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as err:
        raise InvalidXRError(invalid(err)) from err


def name_of(xr: Object) -> str:
    """The XR's name ("" when it has none, as an XR the API server admitted always has one)."""
    return (xr.metadata.name if xr.metadata is not None else None) or ""


def namespace_of(xr: Object) -> str:
    """The XR's namespace ("" for a cluster-scoped XR)."""
    return (xr.metadata.namespace if xr.metadata is not None else None) or ""
