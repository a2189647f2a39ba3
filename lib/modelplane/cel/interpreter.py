"""Planning a checked expression into Python closures, and running them under a cost limit.

The semantics are cel-go's: ``&&`` and ``||`` absorb errors when the other side decides,
comprehensions stop on a definite answer, ``==`` is heterogeneous, and the planner folds constant
lists, maps and type conversions (so that ``int("x")`` is refused at compile time, as in
Kubernetes). Runtime cost follows cel-go's cost tracker with Kubernetes' call costs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from modelplane.cel import functions as fn
from modelplane.cel import types as t
from modelplane.cel.checker import Checked
from modelplane.cel.decls import OVERLOADS, Overload
from modelplane.cel.nodes import (
    Call,
    Comprehension,
    CreateList,
    CreateMap,
    Expr,
    Ident,
    Literal,
    Select,
)
from modelplane.cel.values import (
    INT64_MAX,
    INT64_MIN,
    NONE,
    UINT64_MAX,
    BoolKey,
    EvalError,
    Optional,
    TypeValue,
    Uint,
    Value,
    compare,
    equal,
    map_find,
    map_key,
    map_keys,
    no_such_overload,
    type_name,
)

Fn = Callable[["Activation"], Value]

_CONVERSIONS: Final = frozenset(
    {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}
)
_REGEX_ARGS: Final = {"matches": 1, "find": 1, "findAll": 1}
_LIST_CREATE_COST: Final = 10
_MAP_CREATE_COST: Final = 30


class PlanError(Exception):
    """The expression cannot become a program (cel-go: "program instantiation failed")."""


class CostLimitExceeded(Exception):  # noqa: N818 (cel-go's name for the condition)
    """The evaluation spent more than the cost limit; never absorbed by ``&&``/``||``."""


class DomainMap(dict[Value, Value]):
    """``device.attributes`` and ``device.capacity``: an unknown domain reads as an empty map."""


class Activation:
    """The variables of one evaluation and the cost it has spent."""

    __slots__ = ("cost", "limit", "vars")

    def __init__(self, variables: dict[str, Value], limit: int) -> None:
        """Start an evaluation with ``variables`` bound and nothing spent."""
        self.vars = variables
        self.cost = 0
        self.limit = limit


class _Lazy:
    """A ``cel.bind`` variable, evaluated when first read (cel-go initialises accumulators lazily)."""

    __slots__ = ("init", "value")

    def __init__(self, init: Fn) -> None:
        self.init = init
        self.value: Value = self

    def get(self, a: Activation) -> Value:
        if self.value is self:
            self.value = self.init(a)
        return self.value


class Planned:
    """A planned node: its closure, and its value when it is a constant."""

    __slots__ = ("const", "fn", "is_const")

    def __init__(self, closure: Fn, const: Value = None, *, is_const: bool = False) -> None:
        """Wrap a closure; ``is_const`` when it always returns ``const``."""
        self.fn = closure
        self.const = const
        self.is_const = is_const


def constant(value: Value) -> Planned:
    """A constant node: free at runtime."""
    return Planned(lambda _a: value, value, is_const=True)


def plan(root: Expr, checked: Checked) -> Fn:
    """Turn a checked expression into a closure.

    Raises:
        PlanError: A constant sub-expression fails (``int("x")``, a bad regex), or the
            expression calls a function this environment declares but cannot evaluate.

    """
    return _Planner(checked).plan(root).fn


class _Planner:
    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.lazy_vars: list[set[str]] = []
        self.accu_vars: list[set[str]] = []

    def plan(self, e: Expr) -> Planned:  # noqa: PLR0911 (one case per kind of node)
        match e:
            case Literal():
                return constant(e.value)
            case Ident():
                return self.ident(e)
            case Select():
                return self.select(e)
            case Call():
                return self.call(e)
            case CreateList():
                return self.create_list(e)
            case CreateMap():
                return self.create_map(e)
            case Comprehension():
                return self.comprehension(e)
            case _:
                raise PlanError(f"unsupported expression {type(e).__name__}")

    def ident(self, e: Ident) -> Planned:
        if e.id in self.checked.type_idents:
            return constant(TypeValue(str(self.checked.type_idents[e.id])))
        name = e.name.removeprefix(".")
        if any(name in scope for scope in self.accu_vars):

            def accumulator(a: Activation) -> Value:
                a.cost += 1
                value = a.vars[name]
                if isinstance(value, EvalError):
                    raise value
                return value

            return Planned(accumulator)
        if any(name in scope for scope in self.lazy_vars):

            def lazy(a: Activation) -> Value:
                a.cost += 1
                value = a.vars[name]
                return value.get(a) if type(value) is _Lazy else value

            return Planned(lazy)

        def variable(a: Activation) -> Value:
            a.cost += 1
            return a.vars[name]

        return Planned(variable)

    def select(self, e: Select) -> Planned:
        if e.id in self.checked.type_idents:
            return constant(TypeValue(str(self.checked.type_idents[e.id])))
        operand = self.plan(e.operand).fn
        field = e.field
        if e.test_only:

            def has(a: Activation) -> Value:
                return _present(operand(a), field)

            return Planned(has)

        def select(a: Activation) -> Value:
            target = operand(a)
            a.cost += 1
            return _qualify(target, field)

        return Planned(select)

    def create_list(self, e: CreateList) -> Planned:
        elements = [self.plan(x) for x in e.elements]
        optional = e.optional
        if all(p.is_const for p in elements):
            return constant(_build_list([p.const for p in elements], optional))
        fns = [p.fn for p in elements]

        def create(a: Activation) -> Value:
            a.cost += _LIST_CREATE_COST
            return _build_list([f(a) for f in fns], optional)

        return Planned(create)

    def create_map(self, e: CreateMap) -> Planned:
        keys = [self.plan(x.key) for x in e.entries]
        values = [self.plan(x.value) for x in e.entries]
        optional = [x.optional for x in e.entries]
        if all(p.is_const for p in (*keys, *values)):
            return constant(_build_map([(k.const, v.const) for k, v in zip(keys, values, strict=True)], optional))
        pairs = [(k.fn, v.fn) for k, v in zip(keys, values, strict=True)]

        def create(a: Activation) -> Value:
            a.cost += _MAP_CREATE_COST
            return _build_map([(k(a), v(a)) for k, v in pairs], optional)

        return Planned(create)

    def comprehension(self, e: Comprehension) -> Planned:
        iter_range = self.plan(e.iter_range).fn
        lazy = e.iter_var == "#unused"
        accu_init = self.plan(e.accu_init).fn
        self.lazy_vars.append({e.accu_var} if lazy else set())
        self.accu_vars.append(set() if lazy else {e.accu_var})
        cond = self.plan(e.loop_condition).fn
        step = self.plan(e.loop_step).fn
        result = self.plan(e.result).fn
        self.lazy_vars.pop()
        self.accu_vars.pop()
        accu_var, var, var2 = e.accu_var, e.iter_var, e.iter_var2
        names = [n for n in (accu_var, var, var2) if n]

        def fold(a: Activation) -> Value:  # noqa: PLR0912 (one loop, kept whole for speed)
            items = iter_range(a)
            variables = a.vars
            saved = {n: variables[n] for n in names if n in variables}
            try:
                if lazy:
                    variables[accu_var] = _Lazy(accu_init)
                    return result(a)
                pairs: list[tuple[Value, Value]]
                if isinstance(items, dict):
                    pairs = (
                        [(k, items[map_key(k)]) for k in map_keys(items)]
                        if var2
                        else [(k, None) for k in map_keys(items)]
                    )
                elif type(items) is list:
                    pairs = [(i, x) for i, x in enumerate(items)] if var2 else [(x, None) for x in items]
                else:
                    raise EvalError(f"got '{type_name(items)}', expected iterable type")
                variables[accu_var] = accu_init(a)
                for first, second in pairs:
                    variables[var] = first
                    if var2:
                        variables[var2] = second
                    if cond(a) is False:
                        break
                    try:
                        variables[accu_var] = step(a)
                    except EvalError as err:  # cel-go keeps the error as the accumulator's value
                        variables[accu_var] = err
                    if a.cost > a.limit:
                        raise CostLimitExceeded
                return result(a)
            finally:
                for n in names:
                    if n in saved:
                        variables[n] = saved[n]
                    else:
                        variables.pop(n, None)

        return Planned(fold)

    # calls

    def call(self, e: Call) -> Planned:
        special = _SPECIAL.get(e.function)
        if special is not None:
            return special(self, e)
        if e.target is not None and self.checked.overloads.get(e.id) in (
            ["optional_or_optional"],
            ["optional_orValue_value"],
        ):
            return self.optional_or(e)
        return self.library_call(e)

    def optional_or(self, e: Call) -> Planned:
        # cel-go evaluates the alternative only when the optional is empty.
        if e.target is None:
            raise PlanError(f"'{e.function}' needs a receiver")
        target = self.plan(e.target).fn
        alternative = self.plan(e.args[0]).fn
        unwrap = e.function == "orValue"

        def optional_or(a: Activation) -> Value:
            value = target(a)
            if type(value) is not Optional:
                return value
            if value.present:
                return value.value if unwrap else value
            return alternative(a)

        return Planned(optional_or)

    def args(self, e: Call) -> list[Planned]:
        planned = [self.plan(x) for x in e.args]
        if e.target is not None:
            planned.insert(0, self.plan(e.target))
        return planned

    def library_call(self, e: Call) -> Planned:
        candidates = [OVERLOADS[i] for i in self.checked.overloads.get(e.id, [])]
        # Values of the types this environment leaves out (timestamps, URLs, IPs...) cannot be
        # made, so their overloads can be dropped; a call left with none is refused.
        overloads = [o for o in candidates if fn.supported(o.id)]
        if not overloads:
            ids = ", ".join(o.id for o in candidates)
            msg = f"function '{e.function}' ({ids}) is not supported by modelplane's CEL environment"
            raise PlanError(msg)
        args = self.args(e)
        name = e.function
        if name in _REGEX_ARGS and len(args) > _REGEX_ARGS[name] and args[_REGEX_ARGS[name]].is_const:
            pattern = args[_REGEX_ARGS[name]].const
            if isinstance(pattern, str):
                try:
                    fn.compile_regex(pattern)
                except EvalError as err:
                    raise PlanError(str(err)) from None
        fns = [p.fn for p in args]
        call = _invoker(overloads, self.static_arg_types(e))
        if name in _CONVERSIONS and len(args) == 1 and args[0].is_const:
            try:
                return constant(call([args[0].const]))
            except EvalError as err:
                raise PlanError(str(err)) from None
        if all(p.is_const for p in args):
            precomputed = self.precompute(name, overloads[0].id, call, [p.const for p in args])
            if precomputed is not None:
                return precomputed
        cost = fn.cost_function(name, overloads[0].id)
        if isinstance(cost, int):
            fixed = cost

            def call_fixed(a: Activation) -> Value:
                result = call([f(a) for f in fns])
                a.cost += fixed
                return result

            return Planned(call_fixed)
        cost_of = cost

        def call_measured(a: Activation) -> Value:
            values = [f(a) for f in fns]
            result = call(values)
            a.cost += cost_of(values, result)
            return result

        return Planned(call_measured)

    @staticmethod
    def precompute(
        name: str, overload_id: str, call: Callable[[list[Value]], Value], values: list[Value]
    ) -> Planned | None:
        """Evaluate a call on constants once (``quantity("80Gi")``), still charging its cost each time.

        A failure is left to runtime, where Kubernetes reports it.
        """
        try:
            result = call(values)
        except EvalError:
            return None
        cost = fn.call_cost(name, overload_id, values, result)

        def precomputed(a: Activation) -> Value:
            a.cost += cost
            return result

        return Planned(precomputed)

    def static_arg_types(self, e: Call) -> list[t.Type]:
        exprs = ([e.target] if e.target is not None else []) + list(e.args)
        return [self.checked.types.get(x.id, t.DYN) for x in exprs]

    # operators

    def logic(self, e: Call) -> Planned:
        left, right = [self.plan(x).fn for x in e.args]
        decisive = e.function == "_||_"

        def logic(a: Activation) -> Value:
            error: EvalError | None = None
            for side in (left, right):
                try:
                    value = side(a)
                except EvalError as err:
                    error = error or err
                    continue
                if value is decisive:
                    return decisive
                if type(value) is not bool:
                    error = error or no_such_overload()
            if error is not None:
                raise error
            return not decisive

        return Planned(logic)

    def conditional(self, e: Call) -> Planned:
        cond, if_true, if_false = [self.plan(x).fn for x in e.args]

        def conditional(a: Activation) -> Value:
            c = cond(a)
            if c is True:
                return if_true(a)
            if c is False:
                return if_false(a)
            raise no_such_overload()

        return Planned(conditional)

    def not_strictly_false(self, e: Call) -> Planned:
        arg = self.plan(e.args[0]).fn

        def not_strictly_false(a: Activation) -> Value:
            try:
                value = arg(a)
            except EvalError:
                return True
            return value is not False

        return Planned(not_strictly_false)

    def unary(self, e: Call) -> Planned:
        arg = self.plan(e.args[0]).fn
        negate = e.function == "-_"

        def unary(a: Activation) -> Value:
            value = arg(a)
            a.cost += 1
            if negate:
                if type(value) is int:
                    if value == INT64_MIN:
                        raise EvalError("integer overflow")
                    return -value
                if type(value) is float:
                    return -value
                raise no_such_overload("-_")
            if type(value) is bool:
                return not value
            raise no_such_overload("!_")

        return Planned(unary)

    def equality(self, e: Call) -> Planned:
        left, right = [self.plan(x).fn for x in e.args]
        negated = e.function == "_!=_"
        cost = fn.cost_function(e.function, "not_equals" if negated else "equals")
        cost_of = cost if not isinstance(cost, int) else (lambda _args, _result: 1)

        def eq(a: Activation) -> Value:
            x, y = left(a), right(a)
            a.cost += cost_of([x, y], None)
            try:
                same = equal(x, y)
            except EvalError:
                if negated:
                    return True
                raise
            return not same if negated else same

        return Planned(eq)

    def relation(self, e: Call) -> Planned:
        left, right = [self.plan(x).fn for x in e.args]
        test = _ORDERINGS[e.function]
        overload = self.checked.overloads.get(e.id, ["less"])[0]
        cost = fn.cost_function(e.function, overload)
        if isinstance(cost, int):
            fixed = cost

            def relation_fixed(a: Activation) -> Value:
                x, y = left(a), right(a)
                a.cost += fixed
                return test(compare(x, y))

            return Planned(relation_fixed)
        cost_of = cost

        def relation(a: Activation) -> Value:
            x, y = left(a), right(a)
            a.cost += cost_of([x, y], None)
            return test(compare(x, y))

        return Planned(relation)

    def arithmetic(self, e: Call) -> Planned:
        left, right = [self.plan(x).fn for x in e.args]
        op = _ARITHMETIC[e.function]
        overload = self.checked.overloads.get(e.id, [""])[0]
        cost = fn.cost_function(e.function, overload)
        if isinstance(cost, int):
            fixed = cost

            def arithmetic_fixed(a: Activation) -> Value:
                result = op(left(a), right(a))
                a.cost += fixed
                return result

            return Planned(arithmetic_fixed)
        cost_of = cost

        def arithmetic(a: Activation) -> Value:
            x, y = left(a), right(a)
            result = op(x, y)
            a.cost += cost_of([x, y], result)
            return result

        return Planned(arithmetic)

    def index(self, e: Call) -> Planned:
        container, key = [self.plan(x).fn for x in e.args]
        optional = e.function == "_[?_]"

        def index(a: Activation) -> Value:
            target, k = container(a), key(a)
            a.cost += 1
            if optional or type(target) is Optional:
                return _optional_index(target, k)
            return _index(target, k)

        return Planned(index)

    def optional_select(self, e: Call) -> Planned:
        operand = self.plan(e.args[0]).fn
        field = e.args[1]
        name = field.value if isinstance(field, Literal) else ""

        def optional_select(a: Activation) -> Value:
            target = operand(a)
            a.cost += 1
            return _optional_index(target, name)

        return Planned(optional_select)

    def membership(self, e: Call) -> Planned:
        element, container = [self.plan(x) for x in e.args]
        value_fn, container_fn = element.fn, container.fn
        free = container.is_const and type(container.const) is list
        if free and not container.const:
            return constant(False)  # noqa: FBT003 (cel-go folds `x in []` without evaluating x)

        def membership(a: Activation) -> Value:
            x, c = value_fn(a), container_fn(a)
            if isinstance(c, dict):
                a.cost += 1
                return map_find(c, x)[0]
            if type(c) is list:
                if not free:
                    a.cost += len(c)
                return any(_elem_equal(x, y) for y in c)
            raise no_such_overload("@in")

        return Planned(membership)

    def map_insert(self, e: Call) -> Planned:
        fns = [self.plan(x).fn for x in e.args]

        def insert(a: Activation) -> Value:
            values = [f(a) for f in fns]
            a.cost += 1
            target = values[0]
            if not isinstance(target, dict):
                raise no_such_overload("cel.@mapInsert")
            source = values[1]
            if len(values) == 3:
                additions: list[tuple[Value, Value]] = [(map_key(source), values[2])]
            elif isinstance(source, dict):
                additions = list(source.items())
            else:
                raise no_such_overload("cel.@mapInsert")
            out = dict(target)
            for k, v in additions:
                key = k.value if type(k) is BoolKey else k
                if map_find(out, key)[0]:
                    raise EvalError(f"insert failed: key {key} already exists")
                out[map_key(key)] = v
            return out

        return Planned(insert)


def _invoker(overloads: list[Overload], static: list[t.Type]) -> Callable[[list[Value]], Value]:
    if len(overloads) == 1 and not any(x.kind in ("dyn", "any", "param", "error") for x in static):
        impl = fn.IMPLS[overloads[0].id]
        return lambda values: impl(*values)

    def dispatch(values: list[Value]) -> Value:
        return fn.dispatch(overloads, values)(*values)

    return dispatch


def _elem_equal(x: Value, y: Value) -> bool:
    try:
        return equal(x, y)
    except EvalError:
        return False


def _present(target: Value, field: str) -> bool:
    if type(target) is DomainMap:
        return True
    if isinstance(target, dict):
        return map_find(target, field)[0]
    if type(target) is Optional:
        return target.present and _present(target.value, field)
    raise EvalError(f"no such key: {field}")


def _qualify(target: Value, field: str) -> Value:
    if isinstance(target, dict):
        found, value = map_find(target, field)
        if found:
            return value
        if type(target) is DomainMap:
            return {}
        raise EvalError(f"no such key: {field}")
    if type(target) is Optional:
        return _optional_index(target, field)
    raise EvalError(f"no such key: {field}")


def _index(target: Value, key: Value) -> Value:
    if isinstance(target, dict):
        found, value = map_find(target, key)
        if found:
            return value
        if type(target) is DomainMap:
            return {}
        raise EvalError(f"no such key: {_show(key)}")
    if type(target) is list:
        index = fn.list_index(key)
        if 0 <= index < len(target):
            return target[index]
        raise EvalError(f"index out of bounds: {_show(key)}")
    raise EvalError(f"no such key: {_show(key)}")


def _optional_index(target: Value, key: Value) -> Value:
    if type(target) is Optional:
        if not target.present:
            return NONE
        target = target.value
    try:
        found, value = fn.lookup(target, key)
    except EvalError:
        return NONE
    if not found and type(target) is DomainMap:
        return Optional({}, present=True)
    return Optional(value, present=True) if found else NONE


def _show(v: Value) -> str:
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is float:
        return fn.format_double(v)
    return str(int(v)) if type(v) is Uint else str(v)


def _build_list(values: list[Value], optional: frozenset[int]) -> list[Value]:
    if not optional:
        return values
    out: list[Value] = []
    for i, v in enumerate(values):
        if i in optional:
            if type(v) is not Optional:
                raise EvalError(f"cannot initialize optional list element from non-optional value {v}")
            if v.present:
                out.append(v.value)
        else:
            out.append(v)
    return out


def _build_map(pairs: list[tuple[Value, Value]], optional: list[bool]) -> dict[Value, Value]:
    out: dict[Value, Value] = {}
    for (k, v), is_optional in zip(pairs, optional, strict=True):
        if type(k) not in (str, int, Uint, bool):
            raise EvalError(f"unsupported key type: {type_name(k)}")
        if is_optional:
            if type(v) is not Optional:
                raise EvalError(f"cannot initialize optional entry '{k}' from non-optional value {v}")
            if not v.present:
                out.pop(map_key(k), None)
                continue
            v = v.value  # noqa: PLW2901 (unwrap the optional in place)
        out[map_key(k)] = v
    return out


def _subtract(x: Value, y: Value) -> Value:
    if type(x) is int and type(y) is int:
        return _checked_int(x - y)
    if type(x) is Uint and type(y) is Uint:
        return _checked_uint(x - y)
    if type(x) is float and type(y) is float:
        return x - y
    raise no_such_overload("_-_")


def _multiply(x: Value, y: Value) -> Value:
    if type(x) is int and type(y) is int:
        return _checked_int(x * y)
    if type(x) is Uint and type(y) is Uint:
        return _checked_uint(x * y)
    if type(x) is float and type(y) is float:
        return x * y
    raise no_such_overload("_*_")


def _divide(x: Value, y: Value) -> Value:
    if type(x) is float and type(y) is float:
        if y == 0.0:
            if x == 0.0 or math.isnan(x):
                return math.nan
            return math.copysign(math.inf, x) * math.copysign(1.0, y)
        return x / y
    if (type(x) is int and type(y) is int) or (type(x) is Uint and type(y) is Uint):
        return _int_divide(x, y, unsigned=type(x) is Uint)
    raise no_such_overload("_/_")


def _int_divide(x: int, y: int, *, unsigned: bool) -> Value:
    if y == 0:
        raise EvalError("division by zero")
    quotient = abs(x) // abs(y)
    quotient = quotient if (x >= 0) == (y >= 0) else -quotient
    return _checked_uint(quotient) if unsigned else _checked_int(quotient)


def _modulo(x: Value, y: Value) -> Value:
    if (type(x) is int and type(y) is int) or (type(x) is Uint and type(y) is Uint):
        return _int_modulo(x, y, unsigned=type(x) is Uint)
    raise no_such_overload("_%_")


def _int_modulo(x: int, y: int, *, unsigned: bool) -> Value:
    if y == 0:
        raise EvalError("modulus by zero")
    if not unsigned and y == -1 and x == INT64_MIN:
        raise EvalError("integer overflow")
    remainder = abs(x) % abs(y)
    remainder = remainder if x >= 0 else -remainder
    return Uint(remainder) if unsigned else remainder


def _checked_int(v: int) -> int:
    if INT64_MIN <= v <= INT64_MAX:
        return v
    raise EvalError("integer overflow")


def _checked_uint(v: int) -> Uint:
    if 0 <= v <= UINT64_MAX:
        return Uint(v)
    raise EvalError("unsigned integer overflow")


_ORDERINGS: Final[dict[str, Callable[[int], bool]]] = {
    "_<_": lambda c: c < 0,
    "_<=_": lambda c: c <= 0,
    "_>_": lambda c: c > 0,
    "_>=_": lambda c: c >= 0,
}
_ARITHMETIC: Final[dict[str, Callable[[Value, Value], Value]]] = {
    "_+_": fn.add,
    "_-_": _subtract,
    "_*_": _multiply,
    "_/_": _divide,
    "_%_": _modulo,
}

_SPECIAL: Final[dict[str, Callable[[_Planner, Call], Planned]]] = {
    "_&&_": _Planner.logic,
    "_||_": _Planner.logic,
    "_?_:_": _Planner.conditional,
    "@not_strictly_false": _Planner.not_strictly_false,
    "!_": _Planner.unary,
    "-_": _Planner.unary,
    "_==_": _Planner.equality,
    "_!=_": _Planner.equality,
    "_<_": _Planner.relation,
    "_<=_": _Planner.relation,
    "_>_": _Planner.relation,
    "_>=_": _Planner.relation,
    "_+_": _Planner.arithmetic,
    "_-_": _Planner.arithmetic,
    "_*_": _Planner.arithmetic,
    "_/_": _Planner.arithmetic,
    "_%_": _Planner.arithmetic,
    "_[_]": _Planner.index,
    "_[?_]": _Planner.index,
    "_?._": _Planner.optional_select,
    "@in": _Planner.membership,
    "cel.@mapInsert": _Planner.map_insert,
}
