"""The requests a pipeline step's function is called with, what it requires fetched into them."""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.store import Answered, Store

__all__ = ["KeptRequests", "with_required"]


def with_required(base: fnv1.RunFunctionRequest, store: Store, current: fnv1.Requirements) -> fnv1.RunFunctionRequest:
    """``base`` with what ``current`` requires fetched into it."""
    nxt = fnv1.RunFunctionRequest()
    nxt.CopyFrom(base)  # the bootstrap resources and schemas of the step stay
    for name, rs in current.resources.items():
        target = nxt.required_resources[name]
        target.Clear()
        store.fetch(rs, into=target)
    for name, rs in current.extra_resources.items():
        store.fetch(rs, into=nxt.extra_resources[name])
    # No schemas are supplied to render, so every required schema is empty.
    for name in current.schemas:
        nxt.required_schemas[name].SetInParent()
    return nxt


class KeptRequests:
    """Each function's last request, kept between renders and refilled in place for its next call.

    A fleet's renders call a function again and again with the same large answers (every
    InferenceCluster, to each ModelDeployment): parsing one into a new request costs more than
    the call. A kept request keeps what it holds of an answer that did not change
    (``Store.refill``) and takes everything else from the step's request anew. Only for
    functions that never write their request (Modelplane's), rendered one at a time against
    one catalog.
    """

    def __init__(self) -> None:
        """None kept yet."""
        self._kept: dict[str, tuple[fnv1.RunFunctionRequest, dict[str, Answered | None]]] = {}

    def with_required(
        self, ref: str, base: fnv1.RunFunctionRequest, store: Store, current: fnv1.Requirements
    ) -> fnv1.RunFunctionRequest:
        """What ``with_required`` gives, built in the request kept for ``ref``."""
        if base.required_resources or current.extra_resources:
            return with_required(base, store, current)  # answers the step's own request holds: built anew
        call, held = self._kept.get(ref) or (fnv1.RunFunctionRequest(), {})
        for name in _ALL_BUT_REQUIRED:
            call.ClearField(name)
        call.MergeFrom(base)
        for name in [n for n in call.required_resources if n not in current.resources]:
            del call.required_resources[name]
            held.pop(name, None)
        for name, rs in current.resources.items():
            held[name] = store.refill(rs, call.required_resources[name], held.get(name))
        for name in current.schemas:
            call.required_schemas[name].SetInParent()
        self._kept[ref] = (call, held)
        return call


_ALL_BUT_REQUIRED = tuple(f.name for f in fnv1.RunFunctionRequest.DESCRIPTOR.fields if f.name != "required_resources")
