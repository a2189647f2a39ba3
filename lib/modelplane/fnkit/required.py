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
    """Resources a function needs, by apiVersion and kind: by name, by labels, or every one."""

    name: str
    api_version: str
    kind: str

    def request(
        self,
        rsp: fnv1.RunFunctionResponse,
        *,
        name: str = "",
        labels: Mapping[str, str] | None = None,
        namespace: str = "",
    ) -> None:
        """Ask Crossplane for the resources (needed on every call, or it stops sending them).

        Args:
            rsp: The response to ask in.
            name: Only the resource of this name.
            labels: Otherwise only the resources with these labels (every one when None or empty).
            namespace: Only those in this namespace (every namespace when "").
        """
        # As ``response.require_resources`` does (the selector replaced whole), written in place.
        selector = rsp.requirements.resources[self.name]
        selector.Clear()
        selector.api_version = self.api_version
        selector.kind = self.kind
        if name:
            selector.match_name = name
        else:
            if labels:
                selector.match_labels.labels.update(labels)
            # An empty matchLabels selects every object of the kind. The SDK sets none for an empty map,
            # and a selector with no match at all is not a valid requirement: set it explicitly.
            selector.match_labels.SetInParent()
        if namespace:
            selector.namespace = namespace

    def fetched(self, req: fnv1.RunFunctionRequest) -> bool:
        """Whether Crossplane has answered this requirement (possibly with nothing)."""
        return self.name in req.required_resources

    def items(self, req: fnv1.RunFunctionRequest) -> Iterator[dict[str, Any]]:
        """The fetched resources as dicts, converted one at a time."""
        for struct in self.structs(req):
            yield protojson.struct_to_dict(struct)

    def first(self, req: fnv1.RunFunctionRequest) -> structpb.Struct | None:
        """The first fetched resource as it came (for a requirement by name); None when there is none."""
        return next(self.structs(req), None)

    def structs(self, req: fnv1.RunFunctionRequest) -> Iterator[structpb.Struct]:
        """The fetched resources as they came, unconverted (reading a few fields in place is far cheaper)."""
        requirement = req.required_resources.get(self.name)
        if requirement is not None:
            for item in requirement.items:
                yield item.resource
