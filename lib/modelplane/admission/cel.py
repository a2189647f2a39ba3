"""``x-kubernetes-validations``: every CEL rule of a schema, evaluated at its node with cel-python."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from modelplane.admission.documents import JSON, Schema
from modelplane.admission.openapi import fmt_path, type_name

# Functions and macros of standard CEL that Kubernetes' CEL environment and
# cel-python 0.5.0 both provide. A rule calling anything else either does not
# compile on the API server or cannot be evaluated here.
PORTABLE_CEL_FUNCTIONS = frozenset(
    {
        "has",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        "size",
        "matches",
        "startsWith",
        "endsWith",
        "contains",
        "int",
        "uint",
        "double",
        "string",
        "bool",
        "type",
        "duration",
        "timestamp",
        # optionals (oldSelf of an optionalOldSelf rule): Kubernetes 1.29+, evaluated here by _OPTIONAL_FUNCTIONS
        "hasValue",
        "value",
    }
)


# --------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry and where it sits in a schema."""

    kind: str
    path: str  # schema path: "spec.devices[*]", "spec.devices[*].attributes[*]"
    rule: str
    message: str
    field_path: str = ""
    optional_old_self: bool = False  # oldSelf is an optional, absent on create (Kubernetes 1.29+)

    @property
    def id(self) -> str:
        """The rule, named by kind, schema path and text."""
        return f"{self.kind} {self.path}: {self.rule}"

    @property
    def transition(self) -> bool:
        """Whether the rule compares with the old object (on create only with ``optionalOldSelf``)."""
        return re.search(r"\boldSelf\b", self.rule) is not None

    def evaluated(self, old: object) -> bool:
        """Whether the API server evaluates the rule given the old value (``ABSENT`` when there is none)."""
        return not self.transition or self.optional_old_self or old is not ABSENT


@dataclass(frozen=True)
class Evaluation:
    """The outcome of one rule at one node of one object."""

    rule: Rule
    field: str  # instance path: "spec.devices[0]"
    passed: bool
    error: str | None = None  # set when the rule could not be evaluated
    value_type: str = "object"  # the JSON type of the node's value, as the API server reports it


# --------------------------------------------------------------------------
# CEL


def _lower_ascii(s: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(s.lower())


def _upper_ascii(s: celtypes.StringType) -> celtypes.StringType:
    return celtypes.StringType(s.upper())


class _Absent:
    """No old value: on create, or a field the old object did not have."""

    def __repr__(self) -> str:
        return "optional.none()"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class _Present:
    """An optional holding an old value (``oldSelf`` of an ``optionalOldSelf`` rule on update)."""

    value: Any


def _has_value(optional: object) -> celtypes.BoolType:
    return celtypes.BoolType(isinstance(optional, _Present))


def _value(optional: object) -> Any:  # noqa: ANN401 - any CEL value
    if not isinstance(optional, _Present):
        msg = "optional.none() dereference"
        raise ValueError(msg)  # cel-python turns it into an evaluation error, as CEL does
    return optional.value


# The few Kubernetes CEL library functions the CRDs we validate against use, and the optional
# type's methods (an optionalOldSelf rule's oldSelf). Our own XRDs must stick to
# PORTABLE_CEL_FUNCTIONS (tested).
_KUBERNETES_FUNCTIONS: dict[str, Any] = {
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "hasValue": _has_value,
    "value": _value,
}

_ENV = celpy.Environment()


@functools.cache
def compile_rule(rule: str) -> celpy.Runner:
    """Compile a CEL rule with cel-python; raises ``CELParseError`` when it does not parse."""
    return _ENV.program(_ENV.compile(rule), functions=_KUBERNETES_FUNCTIONS)


STRING_LITERAL = re.compile(r"'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", re.S)
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def rule_function_names(rule: str) -> set[str]:
    """Names of the functions and macros a CEL rule calls (string literals ignored)."""
    return set(_CALL.findall(STRING_LITERAL.sub("''", rule)))


def _to_cel(value: JSON, node: Schema | None) -> Any:  # noqa: ANN401, PLR0911 - any CEL value, one return per JSON type
    """Convert JSON to CEL values typed by the schema, as the API server binds ``self``."""
    node = node or {}
    dynamic = node.get("x-kubernetes-int-or-string") or ("type" not in node)
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, (int, float)):
        if node.get("type") == "number" or isinstance(value, float):
            return celtypes.DoubleType(float(value))
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        items = node.get("items") if not dynamic or "items" in node else None
        return celtypes.ListType([_to_cel(v, items if isinstance(items, dict) else None) for v in value])
    if isinstance(value, dict):
        props = node.get("properties", {})
        additional = node.get("additionalProperties")
        return celtypes.MapType(
            {
                celtypes.StringType(k): _to_cel(
                    v, props.get(k) if k in props else additional if isinstance(additional, dict) else None
                )
                for k, v in value.items()
            }
        )
    return json_to_cel(value)


# Verdicts by rule, schema node and value: a fleet's manifests repeat the same blocks (topologies,
# templates, pools) many times over, and evaluating a rule is slow next to serialising its value.
# The node is kept beside its verdict, so an id reused by another node cannot answer for it.
_VERDICTS: dict[tuple[str, int, str], tuple[Schema, tuple[bool, str | None]]] = {}
_MAX_VERDICTS = 65536


# ``self`` and what follows it: a field (``self.x``), or a macro or method on the whole (``self.all(``).
_SELF = re.compile(r"\bself\b(\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)(\s*\()?)?")


# How a rule reads a field of ``self``, least to most: only whether it is there, only its size, its value.
_HAS, _SIZE, _VALUE = 0, 1, 2
_WRAPPED = {_HAS: re.compile(r"(?<![\w.])has\s*\(\s*$"), _SIZE: re.compile(r"(?<![\w.])size\s*\(\s*$")}


@functools.cache
def field_uses(rule: str) -> dict[str, int] | None:
    """How a rule reads each field of ``self``: in ``has(self.f)``, in ``size(self.f)``, or more.

    None unless the rule reads ``self`` only as ``self.<field>``. Such a rule's verdict depends on
    those fields alone, as it reads them, so two objects that agree on them get the same verdict.
    """
    text = STRING_LITERAL.sub("''", rule)
    uses: dict[str, int] = {}
    for match in _SELF.finditer(text):
        if match.group(2) is None or match.group(3) is not None:
            return None
        closed = text[match.end() :].lstrip().startswith(")")
        before = text[: match.start()]
        how = next((h for h, p in _WRAPPED.items() if closed and p.search(before)), _VALUE)
        uses[match.group(2)] = max(how, uses.get(match.group(2), _HAS))
    return uses


def _read_part(rule: str, value: JSON) -> JSON:
    """What of ``value`` the verdict of ``rule`` depends on."""
    uses = field_uses(rule)
    if uses is None or not isinstance(value, dict):
        return value
    part: dict[str, JSON] = {}
    for name, how in sorted(uses.items()):
        if name not in value:
            continue
        found = value[name]
        if how == _HAS:
            part[name] = ["present", found is None]
        elif how == _SIZE and isinstance(found, (str, list, dict)):
            part[name] = ["size", len(found)]
        else:
            part[name] = found
    return part


def _evaluate(rule: Rule, value: JSON, node: Schema, old: JSON = ABSENT) -> tuple[bool, str | None]:
    if rule.transition:  # verdicts are cached by the new value alone
        return _evaluate_now(rule, value, node, old)
    try:
        part = _read_part(rule.rule, value)
        key = (rule.rule, id(node), json.dumps(part, sort_keys=True, separators=(",", ":")))
    except (TypeError, ValueError):  # not JSON (a YAML timestamp, say): evaluate it every time
        return _evaluate_now(rule, value, node)
    found = _VERDICTS.get(key)
    if found is not None and found[0] is node:
        return found[1]
    verdict = _evaluate_now(rule, value, node)
    if len(_VERDICTS) >= _MAX_VERDICTS:
        _VERDICTS.clear()
    _VERDICTS[key] = (node, verdict)
    return verdict


def _evaluate_now(rule: Rule, value: JSON, node: Schema, old: JSON = ABSENT) -> tuple[bool, str | None]:
    activation: dict[str, Any] = {"self": _to_cel(value, node)}
    if rule.transition:
        old_self = ABSENT if old is ABSENT else _to_cel(old, node)
        optional = old_self if old_self is ABSENT else _Present(old_self)
        activation["oldSelf"] = optional if rule.optional_old_self else old_self
    try:
        result = compile_rule(rule.rule).evaluate(activation)
    except Exception as e:  # noqa: BLE001 - any failure is an evaluation error the API server would report
        return False, f"{type(e).__name__}: {e}"
    if isinstance(result, CELEvalError):
        return False, f"CELEvalError: {result}"
    if not isinstance(result, celtypes.BoolType):
        return False, f"rule returned {type(result).__name__}, not bool"
    return bool(result), None


def walk_rules(
    kind: str, node: Schema, value: JSON, path: list[str | int], schema_path: str, old: JSON = ABSENT
) -> Iterator[Evaluation]:
    """Evaluate every rule of ``node`` and its descendants on ``value``.

    ``old`` is the old value at the same place (an update), ``ABSENT`` on create. A transition
    rule (one reading ``oldSelf``) is evaluated only where there is an old value, unless it sets
    ``optionalOldSelf``: then ``oldSelf`` is an optional, ``hasValue()`` false on create. Old
    values are correlated through object fields and maps only, as the API server does for
    atomic lists; a rule inside a list item is evaluated as on create.
    """
    for entry in node.get("x-kubernetes-validations", []):
        rule = Rule(
            kind=kind,
            path=schema_path or "<root>",
            rule=entry["rule"],
            message=entry.get("message", f"failed rule: {entry['rule']}"),
            field_path=entry.get("fieldPath", ""),
            optional_old_self=bool(entry.get("optionalOldSelf", False)),
        )
        if not rule.evaluated(old):
            continue
        passed, error = _evaluate(rule, value, node, old)
        yield Evaluation(rule=rule, field=fmt_path(path), passed=passed, error=error, value_type=type_name(value))
    if isinstance(value, dict):
        props: Schema = node.get("properties", {})
        additional = node.get("additionalProperties")
        for name, item in value.items():
            if item is None:
                continue
            was = old.get(name, ABSENT) if isinstance(old, dict) else ABSENT
            if was is None:
                was = ABSENT
            if name in props:
                sub = f"{schema_path}.{name}" if schema_path else name
                yield from walk_rules(kind, props[name], item, [*path, name], sub, was)
            elif isinstance(additional, dict):
                yield from walk_rules(kind, additional, item, [*path, name], f"{schema_path}[*]", was)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            if item is not None:
                yield from walk_rules(kind, node["items"], item, [*path, i], f"{schema_path}[*]")


def evaluation_error(e: Evaluation) -> str:
    """A failed or unevaluable rule, worded as the API server words it."""
    where = e.field if not e.rule.field_path else f"{e.field}{e.rule.field_path}"
    if e.error is not None:
        return f'{where}: Invalid value: "{e.value_type}": rule {e.rule.rule!r} could not be evaluated: {e.error}'
    return f'{where}: Invalid value: "{e.value_type}": {e.rule.message}'


def iter_rules(kind: str, node: Schema, path: str = "") -> Iterator[Rule]:
    """Every CEL rule in a schema, with its schema path."""
    for entry in node.get("x-kubernetes-validations", []):
        yield Rule(
            kind=kind,
            path=path or "<root>",
            rule=entry["rule"],
            message=entry.get("message", f"failed rule: {entry['rule']}"),
            field_path=entry.get("fieldPath", ""),
            optional_old_self=bool(entry.get("optionalOldSelf", False)),
        )
    for name, sub in node.get("properties", {}).items():
        yield from iter_rules(kind, sub, f"{path}.{name}" if path else name)
    if isinstance(node.get("additionalProperties"), dict):
        yield from iter_rules(kind, node["additionalProperties"], f"{path}[*]")
    if isinstance(node.get("items"), dict):
        yield from iter_rules(kind, node["items"], f"{path}[*]")
