"""The requests a pipeline step's function is called with, what it requires fetched into them."""

from __future__ import annotations

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.render.store import Answered, Store

__all__ = ["KeptRequests", "require", "with_required"]

# What a kept request takes from the step's request anew: everything but its answers.
_ALL_BUT_REQUIRED = tuple(f.name for f in fnv1.RunFunctionRequest.DESCRIPTOR.fields if f.name != "required_resources")


def with_required(base: fnv1.RunFunctionRequest, store: Store, current: fnv1.Requirements) -> fnv1.RunFunctionRequest:
    """``base`` with what ``current`` requires fetched into it."""
    nxt = fnv1.RunFunctionRequest()
    nxt.CopyFrom(base)  # the bootstrap resources and schemas of the step stay
    return require(nxt, store, current)


def require(call: fnv1.RunFunctionRequest, store: Store, current: fnv1.Requirements) -> fnv1.RunFunctionRequest:
    """``call`` itself, with what ``current`` requires fetched into it (its other answers stay)."""
    for name, rs in current.resources.items():
        target = call.required_resources[name]
        target.Clear()
        store.fetch(rs, into=target)
    for name, rs in current.extra_resources.items():
        store.fetch(rs, into=call.extra_resources[name])
    # No schemas are supplied to render, so every required schema is empty.
    for name in current.schemas:
        call.required_schemas[name].SetInParent()
    return call


class KeptRequests:
    """Each function's last request, kept between renders and refilled in place for its next call.

    A fleet's renders call a function again and again with the same large answers (every
    InferenceCluster, to each ModelDeployment): parsing one into a new request costs more than
    the call. A kept request keeps what it holds of an answer that did not change
    (``Store.refill``) and takes everything else from the step's request anew. Only for
    functions that never write their request (Modelplane's), rendered one at a time against
    one catalog.

    A step's request is written straight into the kept one (``start``, then ``fill``). Never
    one that holds answers of its own (bootstrap required resources), nor for extra resources:
    ``run_pipeline`` builds those anew.
    """

    def __init__(self) -> None:
        """None kept yet."""
        self._kept: dict[str, tuple[fnv1.RunFunctionRequest, dict[str, Answered | None]]] = {}

    def start(self, ref: str) -> fnv1.RunFunctionRequest:
        """The request kept for ``ref``, holding only its answers, for the step's request to be written into.

        Then ``fill`` it (before another ``start`` for ``ref``).
        """
        found = self._kept.get(ref)
        if found is None:
            found = self._kept[ref] = (fnv1.RunFunctionRequest(), {})
        call = found[0]
        for name in _ALL_BUT_REQUIRED:
            call.ClearField(name)
        return call

    def fill(self, ref: str, store: Store, current: fnv1.Requirements) -> fnv1.RunFunctionRequest:
        """The request ``start`` gave for ``ref``, with what ``current`` requires brought up to date in it."""
        call, held = self._kept[ref]
        for name in [n for n in call.required_resources if n not in current.resources]:
            del call.required_resources[name]
            held.pop(name, None)
        for name, rs in current.resources.items():
            held[name] = store.refill(rs, call.required_resources[name], held.get(name))
        for name in current.schemas:
            call.required_schemas[name].SetInParent()
        return call
