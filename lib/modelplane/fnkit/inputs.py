"""Read observed and required resources at a function's edge: the one input policy.

Observed and required resources reach a function unchecked: a controller, a
provider or a person may have written anything there. Every function reads
them under one policy:

1. A reader declares what it reads of an input: a layout (``modelplane.layout``)
   for ``observed``/``required``, a generated model for ``read_one``.
2. A field that does not fit is read as absent, and a Warning result names the
   object and the field. Absent is what a reader already handles (no address
   yet, no condition yet), so nothing is decided on a value that is not there.
3. An object a decision needs whole (a cluster to place on, a replica to count)
   and that does not read whole is *unreadable*: a required resource is left
   out of the decision and named; a composed resource is kept exactly as it is
   (``modelplane.fnkit.ledger``) and named. Never dropped, never guessed.

The XR itself is parsed into its generated model once (``modelplane.fnkit.preamble``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pydantic
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson
from modelplane.fnkit.structs import Fields, UnclearError, described, readiness_at
from modelplane.layout import Layout, conform
from modelplane.problems import Problem
from modelplane.readiness import READY, Readiness

# Problems named per object in one warning; the rest are counted.
_SHOWN_PROBLEMS = 3
T = TypeVar("T")
M = TypeVar("M", bound=pydantic.BaseModel)


def report(rsp: fnv1.RunFunctionResponse, what: str, problems: tuple[Problem, ...] | list[Problem]) -> None:
    """Warn that fields of ``what`` were read as absent (once per message)."""
    if not problems:
        return
    shown = "; ".join(str(p) for p in problems[:_SHOWN_PROBLEMS])
    more = f" (and {len(problems) - _SHOWN_PROBLEMS} more)" if len(problems) > _SHOWN_PROBLEMS else ""
    message = f"{what} is malformed, read without the fields that do not fit: {shown}{more}"
    if not any(r.message == message for r in rsp.results):
        response.warning(rsp, message)


def read(
    rsp: fnv1.RunFunctionResponse,
    what: str,
    struct: structpb.Struct,
    layout: dict[str, Layout],
    problems: list[Problem] | None = None,
) -> dict[str, Any]:
    """``struct`` as a dict conformed to ``layout``, warning about what did not fit (also added to ``problems``)."""
    conformed = conform(protojson.struct_to_dict(struct), layout)
    report(rsp, what, conformed.problems)
    if problems is not None:
        problems.extend(conformed.problems)
    return conformed.value


def observed(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    key: str,
    layout: dict[str, Layout],
    problems: list[Problem] | None = None,
) -> dict[str, Any] | None:
    """The observed composed resource ``key`` conformed to ``layout``; None when it is not observed."""
    found = req.observed.resources.get(key)
    if found is None:
        return None
    return read(rsp, f"observed composed resource {key!r}", found.resource, layout, problems)


def required(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    name: str,
    layout: dict[str, Layout],
    keep: Callable[[structpb.Struct], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """The required resources answered under ``name``, each conformed to ``layout`` (none when not fetched).

    ``keep``, when given, is asked first of each resource as it came (reading a few fields in
    place): those it refuses are neither converted nor checked, so a list of many costs what the
    few kept cost.
    """
    found = req.required_resources.get(name)
    for index, item in enumerate(found.items if found is not None else ()):
        if keep is not None and not keep(item.resource):
            continue
        yield read(rsp, f"required resource {described(item.resource, name, index)}", item.resource, layout)


def ready(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, key: str, typ: str = READY) -> Readiness:
    """Condition ``typ`` of the observed composed resource ``key``, warning when its conditions are malformed."""
    found = req.observed.resources.get(key)
    problems: list[Problem] = []
    said = readiness_at(found.resource.fields if found is not None else None, typ, problems)
    report(rsp, f"observed composed resource {key!r}", problems)
    return said


@dataclass(frozen=True)
class Read(Generic[T]):
    """What one object reads as: a value (None: nothing to decide with), or why it was left out."""

    value: T | None
    skipped: str | None = None
    why: str = ""  # for a skipped object: why, without its kind and name


def read_one(
    kind: str,
    struct: structpb.Struct,
    fast: Callable[[Fields], T | None] | None,
    model: type[M],
    of_model: Callable[[M], T | None],
) -> Read[T]:
    """Read an object in place with ``fast``; when a field is unclear, through its ``model`` instead (rule 3)."""
    if fast is not None:
        try:
            return Read(fast(struct.fields))
        except UnclearError:
            pass
    item = protojson.struct_to_dict(struct)
    try:
        parsed = model.model_validate(item)
    except pydantic.ValidationError as err:
        metadata = item.get("metadata")
        name = metadata.get("name", "?") if isinstance(metadata, dict) else "?"
        first = err.errors()[0]
        why = f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}" if first["loc"] else str(first["msg"])
        return Read(None, f"{kind} {name}: {first['msg']}", why)
    return Read(of_model(parsed))
