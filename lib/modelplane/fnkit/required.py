"""Required resources: ask for them every call and tell "not fetched yet" from "none exist"."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane import protojson


@dataclass(frozen=True)
class Requirement:
    """A set of resources a function needs, by apiVersion and kind, from every namespace."""

    name: str
    api_version: str
    kind: str

    def request(
        self, rsp: fnv1.RunFunctionResponse, *, labels: Mapping[str, str] | None = None, namespace: str = ""
    ) -> None:
        """Ask Crossplane for the resources (needed on every call, or it stops sending them).

        Args:
            rsp: The response to ask in.
            labels: Only the resources with these labels (every one when None).
            namespace: Only those in this namespace (every namespace when "").
        """
        selector = fnv1.ResourceSelector(api_version=self.api_version, kind=self.kind)
        # An empty matchLabels selects every object of the kind, in every namespace. It must be set
        # explicitly: a selector with no match at all is not a valid requirement.
        selector.match_labels.SetInParent()
        selector.match_labels.labels.update(labels or {})
        if namespace:
            selector.namespace = namespace
        rsp.requirements.resources[self.name].CopyFrom(selector)

    def fetched(self, req: fnv1.RunFunctionRequest) -> bool:
        """Whether Crossplane has answered this requirement (possibly with nothing)."""
        return self.name in req.required_resources

    def items(self, req: fnv1.RunFunctionRequest) -> Iterator[dict[str, Any]]:
        """The fetched resources as dicts, converted one at a time."""
        for struct in self.structs(req):
            yield protojson.struct_to_dict(struct)

    def structs(self, req: fnv1.RunFunctionRequest) -> Iterator[structpb.Struct]:
        """The fetched resources as they came, unconverted (reading a few fields in place is far cheaper)."""
        requirement = req.required_resources.get(self.name)
        if requirement is not None:
            for item in requirement.items:
                yield item.resource
