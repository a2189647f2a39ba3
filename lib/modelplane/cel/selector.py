"""Compiling a device selector once and matching devices with it."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from modelplane.cel import checker as type_checker
from modelplane.cel import cost, interpreter, parser
from modelplane.cel import types as t
from modelplane.cel.device import Device
from modelplane.cel.errors import CELCompileError, CELEvaluationError
from modelplane.cel.functions import compile_regex
from modelplane.cel.nodes import Call, CreateList, CreateMap, Expr, Literal, children
from modelplane.cel.values import EvalError, Value, type_name

MAX_LENGTH: Final = 10 * 1024  # resourceapi.CELSelectorExpressionMaxLength, in bytes
COST_LIMIT: Final = cost.MAX_COST  # the runtime limit the kube-scheduler applies
_CACHE_SIZE: Final = 1024
_RECURSION_LIMIT: Final = 12_000


@dataclass(frozen=True, eq=False)
class Selector:
    """A compiled DRA device selector.

    Attributes:
        expression: The source text.
        max_cost: Kubernetes' worst-case cost estimate for it (at most 1,000,000).

    """

    expression: str
    max_cost: int
    _program: interpreter.Fn

    def matches(self, device: Device) -> bool:
        """Report whether ``device`` satisfies the selector.

        Raises:
            CELEvaluationError: The expression fails on this device (a missing attribute, a type
                mismatch at runtime, a non-bool result, the cost limit), naming the reason.

        """
        return self.evaluate(device)[0]

    def evaluate(self, device: Device) -> tuple[bool, int]:
        """Like :meth:`matches`, also returning the cost the evaluation spent."""
        try:
            variables: dict[str, Value] = {"device": device.cel_value}
        except EvalError as e:
            raise CELEvaluationError(self.expression, str(e)) from None
        activation = interpreter.Activation(variables, COST_LIMIT)
        try:
            result = self._program(activation)
            if activation.cost > COST_LIMIT:
                raise interpreter.CostLimitExceeded
        except interpreter.CostLimitExceeded:
            raise CELEvaluationError(self.expression, "operation cancelled: actual cost limit exceeded") from None
        except EvalError as e:
            raise CELEvaluationError(self.expression, str(e)) from None
        except RecursionError:
            raise CELEvaluationError(self.expression, "expression too deeply nested to evaluate") from None
        except Exception as e:  # noqa: BLE001 (the user-CEL boundary: any failure is this expression's)
            raise CELEvaluationError(self.expression, f"internal error: {type(e).__name__}: {e}") from None
        if type(result) is not bool:
            reason = f"CEL result of type {type_name(result)} could not be converted to bool"
            raise CELEvaluationError(self.expression, reason)
        return result, activation.cost


_cache: OrderedDict[str, Selector | CELCompileError] = OrderedDict()
_lock = threading.Lock()


def compile_selector(expression: str) -> Selector:
    """Compile a DRA device-selector expression, once per distinct text.

    The expression gets what Kubernetes gives it when a ResourceClaim is created: at most 10 KiB,
    parsed and type-checked in the DRA environment, a ``bool`` (or unknown-typed) result, and a
    worst-case cost estimate of at most 1,000,000.

    Raises:
        CELCompileError: The expression is refused, naming the expression and the reason.

    """
    with _lock:
        cached = _cache.get(expression)
        if cached is not None:
            _cache.move_to_end(expression)
    if cached is None:
        try:
            cached = _compile(expression)
        except CELCompileError as e:
            cached = e
        with _lock:
            _cache[expression] = cached
            if len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(cached, CELCompileError):
        raise CELCompileError(cached.expression, cached.reason, offset=cached.offset, detail=cached.detail)
    return cached


def _compile(expression: str) -> Selector:
    # Parsing, checking and evaluating recurse once per nesting level; Kubernetes allows 250
    # levels of each kind, which needs more frames than Python's default limit of 1000.
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    if len(expression.encode()) > MAX_LENGTH:
        raise CELCompileError(expression, f"expression longer than {MAX_LENGTH} bytes")
    try:
        root, _ = parser.parse(expression)
    except parser.ParseError as e:
        detail = f"syntax error: {e.detail}"
        raise CELCompileError(expression, f"syntax error: {e}", offset=e.offset, detail=detail) from None
    except RecursionError:
        raise CELCompileError(expression, "expression too deeply nested") from None
    try:
        return _compile_checked(expression, root)
    except RecursionError:
        raise CELCompileError(expression, "expression too deeply nested") from None


def _compile_checked(expression: str, root: Expr) -> Selector:
    try:
        checked = type_checker.check(root)
    except type_checker.CheckError as e:
        raise CELCompileError(expression, f"type error: {e}", offset=e.offset) from None
    result = checked.types[root.id]
    if result not in (t.BOOL, t.ANY):
        raise CELCompileError(expression, f"must evaluate to bool or the unknown type, not {result}")
    _validate(expression, root, checked)
    estimate = cost.estimate(root, checked)
    if estimate.max > cost.MAX_COST:
        raise CELCompileError(expression, f"too complex, exceeds cost limit (estimated cost {estimate.max})")
    try:
        program = interpreter.plan(root, checked)
    except interpreter.PlanError as e:
        raise CELCompileError(expression, str(e)) from None
    return Selector(expression, estimate.max, program)


def _validate(expression: str, root: Expr, checked: type_checker.Checked) -> None:
    """cel-go's AST validators that Kubernetes enables: homogeneous literals and regex literals."""
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        e, in_format = stack.pop()
        if isinstance(e, CreateList) and not in_format:
            _same_types(expression, e.offset, [checked.types[x.id] for x in e.elements], e.optional)
        if isinstance(e, CreateMap) and not in_format:
            _same_types(expression, e.offset, [checked.types[x.key.id] for x in e.entries], frozenset())
            values = [checked.types[x.value.id] for x in e.entries]
            optional = frozenset(i for i, x in enumerate(e.entries) if x.optional)
            _same_types(expression, e.offset, values, optional)
        if isinstance(e, Call) and e.function == "matches" and e.args and isinstance(e.args[0], Literal):
            pattern = e.args[0].value
            if isinstance(pattern, str):
                try:
                    compile_regex(pattern)
                except EvalError:
                    raise CELCompileError(expression, "invalid matches argument", offset=e.args[0].offset) from None
        format_call = isinstance(e, Call) and e.function == "format"
        stack.extend((child, in_format or format_call) for child in children(e))


def _same_types(expression: str, offset: int, found: list[t.Type], optional: frozenset[int]) -> None:
    first: t.Type | None = None
    for i, typ in enumerate(found):
        actual = typ.params[0] if i in optional and typ.params else typ
        if first is None:
            first = actual
        elif not t.is_equivalent(first, actual):
            raise CELCompileError(expression, f"expected type '{first}' but found '{actual}'", offset=offset)
