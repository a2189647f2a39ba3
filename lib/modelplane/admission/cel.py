"""``x-kubernetes-validations``: every CEL rule of a schema, evaluated at its node with cel-python."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
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
        return _reads_old_self(self.rule)

    def evaluated(self, old: object) -> bool:
        """Whether the API server evaluates the rule given the old value (``ABSENT`` when there is none)."""
        return not self.transition or self.optional_old_self or old is not ABSENT


@functools.cache
def _reads_old_self(rule: str) -> bool:
    return re.search(r"\boldSelf\b", rule) is not None


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


# Verdicts by rule, schema node and what of the value the rule reads (``reads``): a fleet's
# manifests repeat the same blocks (topologies, templates, pools) many times over, and
# evaluating a rule is slow next to projecting its value. The node is kept beside its verdict,
# so an id reused by another node cannot answer for it. Only verdicts without an error are
# remembered: an error's message may quote a part of the value the projection leaves out.
_VERDICTS: dict[tuple[str, int, str], tuple[Schema, tuple[bool, str | None]]] = {}
_MAX_VERDICTS = 65536


@dataclass
class Reads:
    """What a rule reads of one value it reaches from ``self``.

    A value reached but not read at all (``has(self.f)`` only asks whether ``f`` is there) has
    every flag off and no fields.
    """

    whole: bool = False  # compared, computed with, passed to a function: all of it
    size: bool = False  # size(v) or v.size(): its length
    each: Reads | None = None  # iterated by a macro: each item of a list, each key of a map
    fields: dict[str, Reads] = field(default_factory=dict)  # v.f: fields selected


_Tree = lark.Tree[Any]
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
# cel-python's two other macros bind differently (reduce: two variables; min: none).
_OTHER_MACROS = frozenset({"reduce", "min"})
# Nodes of cel-python's grammar that wrap one sub-expression unchanged.
_WRAPPERS = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member", "primary"}
)


class _Unknown(Exception):  # noqa: N818 - a signal, caught in reads()
    """A construct whose reads of ``self`` are not modelled: the rule reads all of it."""


def _unwrap(tree: _Tree) -> _Tree:
    """The expression a chain of one-child grammar nodes (and parentheses) wraps."""
    while (tree.data in _WRAPPERS or tree.data == "paren_expr") and len(tree.children) == 1:
        (child,) = tree.children
        if not isinstance(child, lark.Tree):
            break
        tree = child
    return tree


def _ident(tree: _Tree) -> str | None:
    tree = _unwrap(tree)
    if tree.data == "ident" and len(tree.children) == 1:
        return str(tree.children[0])
    return None


class _Reader:
    """Walks a rule's syntax tree, recording what each path from ``self`` reads (``Reads``)."""

    def __init__(self) -> None:
        self.root = Reads()

    def path(self, tree: _Tree, env: dict[str, Reads | None]) -> Reads | None:
        """The value ``tree`` denotes, when it is ``self``, a macro variable or a field of either."""
        tree = _unwrap(tree)
        if tree.data == "ident":
            name = _ident(tree)
            if name in env:
                return env[name]
            return self.root if name == "self" else None
        if tree.data == "member_dot":
            target, name_token = tree.children
            found = self.path(target, env)
            if found is None:
                self.use(target, env)
                return None
            return found.fields.setdefault(str(name_token), Reads())
        return None

    def use(self, tree: _Tree, env: dict[str, Reads | None]) -> None:
        """Record that the value of ``tree`` is used whole."""
        found = self.path(tree, env)
        if found is not None:
            found.whole = True
            return
        tree = _unwrap(tree)
        if tree.data in {"dot_ident", "dot_ident_arg"}:
            raise _Unknown  # a name resolved from the root (.self)
        if tree.data == "ident_arg":
            self.call(str(tree.children[0]), tree.children[1:], env)
        elif tree.data == "member_dot_arg":
            self.method(tree.children[0], str(tree.children[1]), tree.children[2:], env)
        elif tree.data != "member_dot":  # member_dot: path() has used its target
            for child in tree.children:
                if isinstance(child, lark.Tree):
                    self.use(child, env)

    def call(self, name: str, rest: list[Any], env: dict[str, Reads | None]) -> None:
        args = _args(rest)
        if name == "has" and len(args) == 1:
            arg = _unwrap(args[0])
            if arg.data == "member_dot":
                target = self.path(arg.children[0], env)
                if target is not None:
                    target.fields.setdefault(str(arg.children[1]), Reads())
                    return
        if name == "size" and len(args) == 1 and (found := self.path(args[0], env)) is not None:
            found.size = True
            return
        for arg in args:
            self.use(arg, env)

    def method(self, target: _Tree, name: str, rest: list[Any], env: dict[str, Reads | None]) -> None:
        args = _args(rest)
        if name in _OTHER_MACROS:
            raise _Unknown
        if name in _MACROS:
            var = _ident(args[0]) if len(args) == 2 else None  # a variable and an expression
            if var is None:
                raise _Unknown
            found = self.path(target, env)
            if found is None:
                self.use(target, env)
                self.use(args[1], {**env, var: None})
                return
            found.each = found.each or Reads()
            self.use(args[1], {**env, var: found.each})
            return
        if name == "size" and not args and (found := self.path(target, env)) is not None:
            found.size = True
            return
        self.use(target, env)
        for arg in args:
            self.use(arg, env)


def _args(rest: list[Any]) -> list[_Tree]:
    """The arguments of a call: its ``exprlist``, if any."""
    if not rest or not isinstance(rest[0], lark.Tree):
        return []
    return [c for c in rest[0].children if isinstance(c, lark.Tree)]


@functools.cache
def reads(rule: str) -> Reads | None:
    """What a rule reads of ``self``; None when it does not parse or reads it in a way not modelled.

    The reads are by field selection (``self.a.b``), presence (``has(self.a)``), size and macro
    iteration (``self.a.all(x, ...)``, ``x`` then reading each item); any other use of a value
    reads all of it. Two values that agree on what a rule reads get the same verdict.
    """
    try:
        tree = compile_rule(rule).ast
        reader = _Reader()
        reader.use(tree, {})
    except (_Unknown, CELParseError, ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return None
    return reader.root


_WHOLE = Reads(whole=True)
_NOTHING = Reads()


def _projection(value: JSON, read: Reads) -> JSON:
    """``value`` as far as ``read`` sees it: equal projections, equal verdicts (JSON, order kept).

    Raises:
        TypeError: a map has a key that is not a string (CEL reads ``True`` as ``"True"``, JSON as ``"true"``).
    """
    if read.whole:
        if not _string_keys(value):
            msg = "a map key is not a string"
            raise TypeError(msg)
        return value
    if read == _NOTHING:  # only whether it is there, which the map holding it tells
        return 0
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            msg = "a map key is not a string"
            raise TypeError(msg)
        keys = list(value) if read.each is not None or read.size else None
        return ["map", keys, {k: _projection(value[k], r) for k, r in read.fields.items() if k in value}]
    if isinstance(value, list):
        if read.each is None:
            return ["list", len(value)]
        return ["list", [_projection(v, read.each) for v in value]]
    return value  # a scalar: all of it


def _string_keys(value: JSON) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _string_keys(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_string_keys(v) for v in value)
    return True


def _evaluate(rule: Rule, value: JSON, node: Schema, old: JSON = ABSENT) -> tuple[bool, str | None]:
    if rule.transition:  # verdicts are remembered by the new value alone
        return _evaluate_now(rule, value, node, old)
    read = reads(rule.rule) or _WHOLE
    try:
        key = (rule.rule, id(node), json.dumps(_projection(value, read), separators=(",", ":")))
    except (TypeError, ValueError, RecursionError):  # not JSON (a map key not a string, say): evaluate every time
        return _evaluate_now(rule, value, node)
    found = _VERDICTS.get(key)
    if found is not None and found[0] is node:
        return found[1]
    verdict = _evaluate_now(rule, value, node)
    if verdict[1] is None:
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
