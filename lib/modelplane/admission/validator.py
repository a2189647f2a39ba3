"""Validate one object against one schema as the API server would: defaults, schema, list types, CEL."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not in the dev extras

from modelplane.admission.cel import ABSENT, Evaluation, evaluation_error, walk_rules
from modelplane.admission.documents import JSON, Schema
from modelplane.admission.objects import apply_defaults, drop_namespace, list_type_errors, metadata_errors
from modelplane.admission.openapi import (
    BLOCKING_VALIDATORS,
    FORMATS,
    RULES_NOT_CHECKED,
    fields_at,
    schema_error_messages,
    to_json_schema,
)


@dataclass(frozen=True)
class Result:
    """What the API server would say about one manifest."""

    object: JSON  # the manifest after defaulting
    errors: tuple[str, ...] = ()
    evaluations: tuple[Evaluation, ...] = field(default=())
    schema_found: bool = True  # False: no XRD, CRD or built-in schema names the kind (errors say so)

    @property
    def ok(self) -> bool:
        """Whether the API server would accept the manifest."""
        return not self.errors


class Validator:
    """Validates objects against one CRD version's schema: defaults, schema, list types, CEL."""

    def __init__(self, kind: str, schema: Schema, *, namespaced: bool, strict: bool = True) -> None:
        """Validate ``kind`` against ``schema``; ``strict`` refuses unknown fields (kubectl's default)."""
        self.kind = kind
        self.schema = schema
        self.namespaced = namespaced
        json_schema = to_json_schema(schema, strict=strict)
        # Every object carries its type meta, declared or not.
        for name in ("apiVersion", "kind"):
            json_schema.setdefault("properties", {}).setdefault(name, {"type": "string"})
        # The API server validates metadata natively (metadata_errors); the schema only restricts the name.
        json_schema.setdefault("properties", {})["metadata"] = to_json_schema(
            schema.get("properties", {}).get("metadata", {"type": "object"}), strict=False
        )
        self._validator = jsonschema.Draft202012Validator(json_schema, format_checker=FORMATS)

    def fields_at(self, path: Sequence[str | int]) -> list[str]:
        """The fields the schema declares for the object at ``path``."""
        return fields_at(self.schema, path)

    def validate(self, manifest: JSON, old: JSON = None) -> Result:
        """Default, then validate ``manifest``; every error the API server would report.

        ``old`` is the object ``manifest`` updates (None: a create), for the transition rules.
        """
        obj = apply_defaults(self.schema, drop_namespace(manifest, namespaced=self.namespaced))
        was = ABSENT if old is None else apply_defaults(self.schema, drop_namespace(old, namespaced=self.namespaced))
        errors: list[str] = []
        if isinstance(obj, dict):
            errors.extend(metadata_errors(obj, namespaced=self.namespaced))
        blocking = False
        for error in sorted(self._validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
            errors.extend(schema_error_messages(error))
            blocking = blocking or error.validator in BLOCKING_VALIDATORS
        errors.extend(list_type_errors(self.schema, obj, []))
        if blocking:
            errors.append(RULES_NOT_CHECKED)
            return Result(object=obj, errors=tuple(errors))
        evaluations = tuple(walk_rules(self.kind, self.schema, obj, [], "", was))
        for e in evaluations:
            if not e.passed:
                errors.append(evaluation_error(e))
        return Result(object=obj, errors=tuple(errors), evaluations=evaluations)
