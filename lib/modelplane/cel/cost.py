"""The worst-case cost estimate the API server checks a selector against (cel-go's ``checker.Cost``).

A port of cel-go v0.26's cost estimator with Kubernetes' ``library.CostEstimator`` and the DRA
size estimator, which bounds every map and string reachable through ``device`` (32 attributes
per device, 64-character values, 63-character domains). Kubernetes refuses an expression whose
estimate exceeds :data:`MAX_COST` when a ResourceClaim is created.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from modelplane.cel import types as t
from modelplane.cel.checker import Checked
from modelplane.cel.nodes import (
    ACCUMULATOR,
    Call,
    Comprehension,
    CreateList,
    CreateMap,
    CreateStruct,
    Expr,
    Ident,
    Literal,
    Select,
)
from modelplane.cel.types import Type

MAX_COST: Final = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
U64: Final = 2**64 - 1
_TWO_TO_64: Final = math.ldexp(1.0, 64)
STRING_TRAVERSAL: Final = 0.1
REGEX_LENGTH: Final = 0.25

# The DRA environment's bounds (k8s.io/api/resource/v1): a path from ``device`` to its maximum size.
_MAX_ATTRIBUTES = 32
_DRIVER_MAX = 63
_DOMAIN_MAX = 63
_ID_MAX = 32
_ATTRIBUTE_VALUE_MAX = 64
_SETS_FACTOR: Final = {
    "list_sets_contains_list": 1.0,
    "list_sets_intersects_list": 1.0,
    "list_sets_equivalent_list": 2.0,
}


@dataclass(frozen=True)
class _Decl:
    """The part of a Kubernetes ``DeclType`` the size estimator walks."""

    max_elements: int
    fields: dict[str, _Decl] = field(default_factory=dict)
    key: _Decl | None = None
    elem: _Decl | None = None
    is_attribute: bool = False


_ATTRIBUTE = _Decl(_ATTRIBUTE_VALUE_MAX, is_attribute=True)
_QUANTITY = _Decl(0)
_DOMAIN = _Decl(_DOMAIN_MAX)
_ID = _Decl(_ID_MAX)
_DEVICE = _Decl(
    0,
    fields={
        "driver": _Decl(_DRIVER_MAX),
        "attributes": _Decl(_MAX_ATTRIBUTES, key=_DOMAIN, elem=_Decl(_MAX_ATTRIBUTES, key=_ID, elem=_ATTRIBUTE)),
        "capacity": _Decl(_MAX_ATTRIBUTES, key=_DOMAIN, elem=_Decl(_MAX_ATTRIBUTES, key=_ID, elem=_QUANTITY)),
    },
)


@dataclass(frozen=True)
class Est:
    """A ``[min, max]`` estimate (of a cost or of a size), saturating at 2^64-1 like cel-go's."""

    min: int
    max: int

    def add(self, other: Est) -> Est:
        """Sum of estimates."""
        return Est(_add(self.min, other.min), _add(self.max, other.max))

    def multiply(self, other: Est) -> Est:
        """Product of estimates."""
        return Est(_mul(self.min, other.min), _mul(self.max, other.max))

    def factor(self, per_unit: float) -> Est:
        """Multiply by a cost factor, rounding up."""
        return Est(_factor(self.min, per_unit), _factor(self.max, per_unit))

    def union(self, other: Est) -> Est:
        """The widest of both."""
        return Est(min(self.min, other.min), max(self.max, other.max))

    __add__ = add


UNKNOWN: Final = Est(0, U64)
ONE: Final = Est(1, 1)
ZERO: Final = Est(0, 0)


def _add(x: int, y: int) -> int:
    return U64 if y > 0 and x > U64 - y else x + y


def _mul(x: int, y: int) -> int:
    return U64 if y != 0 and x > U64 // y else x * y


def _factor(x: int, y: float) -> int:
    x_float = float(x)
    if x_float > 0 and y > 0 and x_float > float(U64) / y:
        return U64
    ceil = math.ceil(x_float * y)
    if ceil >= _TWO_TO_64:
        return U64
    return int(ceil)


@dataclass
class _Node:
    """cel-go's ``AstNode``: what a function estimator sees of an argument."""

    path: list[str] | None
    type: Type
    expr: Expr | None
    size: Est | None


@dataclass
class _Entry:
    container: str
    key: Est
    val: Est

    def union(self, other: _Entry | None) -> _Entry | None:
        if other is None:
            return None
        return _Entry(self.container, self.key.union(other.key), self.val.union(other.val))


@dataclass
class _Local:
    path: list[str]
    size: Est | None
    entry: _Entry | None


def estimate(root: Expr, checked: Checked) -> Est:
    """The worst-case cost of evaluating ``root`` against any valid device."""
    return _Coster(checked).cost(root)


class _Coster:
    def __init__(self, checked: Checked) -> None:
        self.checked = checked
        self.paths: dict[int, list[str]] = {}
        self.sizes: dict[int, Est] = {}
        self.entries: dict[int, _Entry] = {}
        self.locals: dict[str, list[_Local]] = {}

    # scopes

    def push(self, name: str, path: list[str], size: Est | None, entry: _Entry | None) -> None:
        self.locals.setdefault(name, []).append(_Local(path, size, entry))

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def type_of(self, e: Expr) -> Type:
        return self.checked.types.get(e.id, t.DYN)

    def path(self, e: Expr) -> list[str]:
        if isinstance(e, Ident):
            local = self.peek(e.name)
            if local is not None:
                return list(local.path)
        return list(self.paths.get(e.id, []))

    # the walk

    def cost(self, e: Expr) -> Est:  # noqa: PLR0911 (one case per kind of node)
        match e:
            case Literal():
                return ZERO
            case Ident():
                local = self.peek(e.name)
                self.paths[e.id] = list(local.path) if local is not None else [e.name]
                return ONE
            case Select():
                return self.cost_select(e)
            case Call():
                return self.cost_call(e)
            case CreateList():
                return self.cost_list(e)
            case CreateMap():
                return self.cost_map(e)
            case CreateStruct():
                return sum([self.cost(v) for _, v in e.fields], ZERO).add(Est(40, 40))
            case Comprehension():
                return self.cost_bind(e) if self.is_bind(e) else self.cost_comprehension(e)
            case _:
                return ZERO

    def cost_select(self, e: Select) -> Est:
        if e.test_only:
            return self.cost(e.operand)  # Kubernetes gives presence tests no cost
        total = self.cost(e.operand)
        if self.type_of(e.operand).kind in ("map", "struct", "param"):
            total = total.add(ONE)
        self.paths[e.id] = [*self.path(e.operand), e.field]
        return total

    def cost_list(self, e: CreateList) -> Est:
        total = ZERO
        item = Est(0 if not e.elements else U64, 0)
        for element in e.elements:
            total = total.add(self.cost(element))
            item = item.union(self.size_or_unknown(element))
        self.entries[e.id] = _Entry("list", ONE, item)
        return total.add(Est(10, 10))

    def cost_map(self, e: CreateMap) -> Est:
        total = ZERO
        empty = not e.entries
        key = Est(0 if empty else U64, 0)
        val = Est(0 if empty else U64, 0)
        for entry in e.entries:
            total = total.add(self.cost(entry.key)).add(self.cost(entry.value))
            key = key.union(self.size_or_unknown(entry.key))
            val = val.union(self.size_or_unknown(entry.value))
        self.entries[e.id] = _Entry("map", key, val)
        return total.add(Est(30, 30))

    def cost_comprehension(self, e: Comprehension) -> Est:
        total = self.cost(e.iter_range).add(self.cost(e.accu_init))
        self.push(e.accu_var, self.path(e.accu_init), self.compute_size(e.accu_init), self.entry_size(e.accu_init))
        if e.iter_var2:
            self.push_iter(e.iter_var, e.iter_range, keys=True)
            self.push_iter(e.iter_var2, e.iter_range, keys=False)
        else:
            self.push_single(e.iter_var, e.iter_range)
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        self.pop(e.iter_var)
        if e.iter_var2:
            self.pop(e.iter_var2)
        total = total.add(self.cost(e.result))
        self.pop(e.accu_var)
        count = self.size_or_unknown(e.iter_range)
        total = total.add(Est(_mul(count.min, step.add(loop).min), _mul(count.max, step.add(loop).max)))
        if isinstance(e.accu_init, Literal):
            size = self.compute_size(e.accu_init)
            if size is not None:
                self.sizes[e.id] = size
        elif isinstance(e.accu_init, (CreateList, CreateMap)):
            self.sizes[e.id] = count
            step_entry = self.entry_size(e.loop_step)
            if step_entry is not None:
                self.entries[e.id] = step_entry
        return total

    def push_iter(self, name: str, iter_range: Expr, *, keys: bool) -> None:
        entry = self.entry_size(iter_range)
        container = entry.container if entry is not None else self.type_of(iter_range).kind
        if keys:
            size = entry.key if entry is not None else None
            sub = "@indices" if container == "list" else "@keys"
        else:
            size = entry.val if entry is not None else None
            sub = "@items" if container == "list" else "@values"
        self.push(name, [*self.path(iter_range), sub], size, None)

    def push_single(self, name: str, iter_range: Expr) -> None:
        entry = self.entry_size(iter_range)
        container = entry.container if entry is not None else self.type_of(iter_range).kind
        size = entry.key if entry is not None else None
        sub = "@keys"
        if container == "list":
            size = entry.val if entry is not None else None
            sub = "@items"
        self.push(name, [*self.path(iter_range), sub], size, None)

    @staticmethod
    def is_bind(e: Comprehension) -> bool:
        return (
            isinstance(e.iter_range, CreateList)
            and not e.iter_range.elements
            and isinstance(e.loop_condition, Literal)
            and e.loop_condition.value is False
            and e.accu_var != "__result__"
        )

    def cost_bind(self, e: Comprehension) -> Est:
        total = self.cost(e.iter_range).add(self.cost(e.accu_init))
        self.push(e.accu_var, self.path(e.accu_init), self.compute_size(e.accu_init), self.entry_size(e.accu_init))
        total = total.add(self.cost(e.result))
        self.pop(e.accu_var)
        self.copy_sizes(e, e.result)
        return total

    def cost_call(self, e: Call) -> Est:
        if e.function == "dyn" and e.target is None and len(e.args) == 1:
            arg_cost = self.cost(e.args[0])
            self.copy_sizes(e, e.args[0])
            return ONE.add(arg_cost)
        arg_costs = [self.cost(a) for a in e.args]
        args = [self.node(a) for a in e.args]
        overloads = self.checked.overloads.get(e.id, [])
        if not overloads:
            return ZERO
        total = ZERO
        target: _Node | None = None
        if e.target is not None:
            total = total.add(self.cost(e.target))
            target = self.node(e.target)
        fn_cost = Est(U64, 0)
        result_size: Est | None = None
        for overload in overloads:
            cost, size = self.function_cost(e, overload, target, args, arg_costs)
            fn_cost = fn_cost.union(cost)
            if size is not None:
                result_size = size if result_size is None else result_size.union(size)
            if overload in ("index_list", "index_map") and e.args:
                entry = self.entry_size(e.args[0])
                result_size = entry.val if entry is not None else None
                self.paths[e.id] = [*self.path(e.args[0]), "@items" if overload == "index_list" else "@values"]
            if result_size is None:
                result_size = self.compute_size(e)
        if result_size is not None:
            self.sizes[e.id] = result_size
        return total.add(fn_cost)

    def node(self, e: Expr) -> _Node:
        path: list[str] | None = self.path(e)
        if path and path[0] in (ACCUMULATOR, "__result__"):
            path = None
        return _Node(path, self.type_of(e), e, self.compute_size(e))

    # sizes

    def compute_size(self, e: Expr) -> Est | None:
        if e.id in self.sizes:
            return self.sizes[e.id]
        literal = _expr_size(e)
        if literal is not None:
            return literal
        estimated = self.estimate_size(self.path(e))
        if estimated is not None:
            self.sizes[e.id] = estimated
            return estimated
        typed = _type_size(self.type_of(e))
        if typed is not None:
            return typed
        if isinstance(e, Ident):
            local = self.peek(e.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def size_or_unknown(self, e: Expr) -> Est:
        size = self.compute_size(e)
        return size if size is not None else UNKNOWN

    def entry_size(self, e: Expr) -> _Entry | None:
        if e.id in self.entries:
            return self.entries[e.id]
        if isinstance(e, Ident):
            local = self.peek(e.name)
            if local is not None and local.entry is not None:
                return local.entry
        return None

    def copy_sizes(self, dst: Expr, src: Expr) -> None:
        size = self.compute_size(src)
        if size is not None:
            self.sizes[dst.id] = size
        entry = self.entry_size(src)
        if entry is not None:
            self.entries[dst.id] = entry

    @staticmethod
    def estimate_size(path: list[str] | None) -> Est | None:
        """The DRA size estimator: the maximum size of what a path from ``device`` reaches."""
        if not path or path[0] != "device":
            return None
        node = _DEVICE
        for name in path[1:]:
            if name in ("@items", "@values"):
                if node.elem is None:
                    return None
                node = node.elem
            elif name == "@keys":
                if node.key is None:
                    return None
                node = node.key
            elif name in node.fields:
                node = node.fields[name]
            elif node.elem is _ATTRIBUTE:
                node = _ATTRIBUTE
            else:
                return None
        return Est(0, node.max_elements)

    def arg_size(self, n: _Node) -> Est:
        """Kubernetes' ``sizeEstimate``: the computed size, the estimator's, or unknown."""
        if n.size is not None:
            return n.size
        estimated = self.estimate_size(n.path)
        return estimated if estimated is not None else UNKNOWN

    # function costs

    def function_cost(  # noqa: PLR0911, PLR0912 (cel-go's table of per-overload estimates)
        self, e: Call, overload: str, target: _Node | None, args: list[_Node], arg_costs: list[Est]
    ) -> tuple[Est, Est | None]:
        arg_sum = sum(arg_costs, ZERO) if arg_costs else ZERO
        if overload in _SETS_FACTOR and len(args) == 2:
            lhs, rhs = self.arg_size(args[0]), self.arg_size(args[1])
            return lhs.multiply(rhs).factor(_SETS_FACTOR[overload]).add(ONE).add(arg_sum), None
        k8s = self.kubernetes_cost(e.function, target, args)
        if k8s is not None:
            return k8s[0].add(arg_sum), k8s[1]
        size = self.size_of_node
        match overload:
            case "string_format":
                if target is not None:
                    return size(target).factor(STRING_TRAVERSAL).add(arg_sum), None
            case "string_to_bytes" if len(args) == 1:
                s = size(args[0])
                return s.factor(STRING_TRAVERSAL).add(arg_sum), Est(s.min, _mul(s.max, 4))
            case "bytes_to_string" if len(args) == 1:
                s = size(args[0])
                return s.factor(STRING_TRAVERSAL).add(arg_sum), Est(s.min // 4, s.max)
            case "strings_quote" if len(args) == 1:
                s = size(args[0])
                return s.factor(STRING_TRAVERSAL).add(arg_sum), Est(_add(s.min, 2), _add(_mul(s.max, 2), 2))
            case "starts_with_string" | "ends_with_string" if len(args) == 1:
                return size(args[0]).factor(STRING_TRAVERSAL).add(arg_sum), None
            case "in_list" if len(args) == 2:
                return size(args[1]).factor(1).add(arg_sum), None
            case "matches_string" if target is not None and len(args) == 1:
                string_cost = size(target).add(ONE).factor(STRING_TRAVERSAL)
                regex_cost = size(args[0]).factor(REGEX_LENGTH)
                return string_cost.multiply(regex_cost).add(arg_sum), None
            case "contains_string" if target is not None and len(args) == 1:
                string_cost = size(target).factor(STRING_TRAVERSAL)
                sub_cost = size(args[0]).factor(STRING_TRAVERSAL)
                return string_cost.multiply(sub_cost).add(arg_sum), None
            case "logical_or" | "logical_and":
                lhs, rhs = arg_costs
                return Est(lhs.min, lhs.add(rhs).max), None
            case "conditional":
                result = size(args[1]).union(size(args[2]))
                first, second = self.entry_size(e.args[1]), self.entry_size(e.args[2])
                joined = first.union(second) if first is not None else None
                if joined is not None:
                    self.entries[e.id] = joined
                return arg_costs[0].add(arg_costs[1].union(arg_costs[2])), result
            case "add_string" | "add_bytes" | "add_list" if len(args) == 2:
                result = size(args[0]).add(size(args[1]))
                first, second = self.entry_size(e.args[0]), self.entry_size(e.args[1])
                joined = first.union(second) if first is not None else None
                if joined is not None:
                    self.entries[e.id] = joined
                if overload == "add_list":
                    return ONE.add(arg_sum), result
                return result.factor(STRING_TRAVERSAL).add(arg_sum), result
            case (
                "less_string" | "greater_string" | "less_equals_string" | "greater_equals_string"
                | "less_bytes" | "greater_bytes" | "less_equals_bytes" | "greater_equals_bytes"
                | "equals" | "not_equals"
            ):  # fmt: skip
                lhs, rhs = size(args[0]), size(args[1])
                smallest = min(lhs.max, rhs.max)
                return Est(1 if smallest > 0 else 0, smallest).factor(STRING_TRAVERSAL).add(arg_sum), None
        return ONE.add(arg_sum), None

    @staticmethod
    def size_of_node(n: _Node) -> Est:
        return n.size if n.size is not None else UNKNOWN

    def kubernetes_cost(  # noqa: PLR0911, PLR0912 (Kubernetes' table of per-function estimates)
        self, function: str, target: _Node | None, args: list[_Node]
    ) -> tuple[Est, Est | None] | None:
        size = self.arg_size
        if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
            if target is None:
                return None
            if target.type.params:
                element = _Node(
                    [*target.path, "@items"] if target.path is not None else None, target.type.params[0], None, None
                )
                element_cost = ONE
                if element.type.kind in ("string", "bytes"):
                    element_cost = element_cost.add(size(element).factor(STRING_TRAVERSAL))
                target_size = size(target)
                return Est(_mul(target_size.min, element_cost.min), _mul(target_size.max, element_cost.max)), None
            return size(target).factor(STRING_TRAVERSAL), None
        if function in ("lowerAscii", "upperAscii", "substring", "trim"):
            if target is None:
                return None
            s = size(target)
            return s.factor(STRING_TRAVERSAL), s
        if function == "replace" and target is not None and len(args) >= 2:
            return self.replace_cost(target, args)
        if function == "split" and target is not None:
            s = size(target)
            largest = s.max
            if len(args) > 1 and isinstance(args[1].expr, Literal) and type(args[1].expr.value) is int:
                largest = args[1].expr.value % (U64 + 1)
            return s.factor(2 * STRING_TRAVERSAL), Est(0, largest)
        if function == "join" and target is not None:
            list_size = size(target)
            result = ZERO
            if target.type.params:
                element = _Node(
                    [*target.path, "@items"] if target.path is not None else None, target.type.params[0], None, None
                )
                result = list_size.multiply(size(element))
            if args:
                separators = Est(max(list_size.min - 1, 0), max(list_size.max - 1, 0))
                result = result.add(size(args[0]).multiply(separators))
            return result.factor(STRING_TRAVERSAL), result
        if function in ("find", "findAll") and target is not None and args:
            s = size(target)
            string_cost = s.add(ONE).factor(STRING_TRAVERSAL)
            regex_cost = size(args[0]).factor(REGEX_LENGTH)
            return string_cost.multiply(regex_cost), Est(0, s.max)
        if function in ("quantity", "isQuantity", "semver", "isSemver") and args:
            return size(args[0]).factor(STRING_TRAVERSAL), None
        if function in ("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                        "compareTo", "add", "sub", "major", "minor", "patch"):  # fmt: skip
            return ONE, None
        if function == "_==_" and len(args) == 2:
            lhs, rhs = args
            if lhs.type == rhs.type and lhs.type.kind == "struct" and lhs.type in (t.QUANTITY, t.SEMVER):
                return ONE, None
        return None

    def replace_cost(self, target: _Node, args: list[_Node]) -> tuple[Est, Est | None]:
        size = self.arg_size
        s = size(target)
        old, new = size(args[0]), size(args[1])
        count_min = count_max = retained_min = retained_max = 0
        if old.min == 0:
            count_max = s.max + 1 if s.max < U64 else s.max
            retained_max = s.max
        elif new.max <= old.min:
            retained_max = s.max
        else:
            count_max = math.ceil(s.max / old.min)
        if old.max == 0:
            count_min = s.min + 1 if s.min < U64 else s.min
            retained_min = s.min
        elif old.max <= new.min:
            retained_min = s.min
        else:
            count_min = math.ceil(s.min / old.max)
        result = Est(count_min, count_max).multiply(new).add(Est(retained_min, retained_max))
        return s.factor(2 * STRING_TRAVERSAL), result


def _expr_size(e: Expr) -> Est | None:
    if isinstance(e, Literal):
        v = e.value
        if isinstance(v, str):
            return Est(len(v), len(v))
        if isinstance(v, bytes):
            return Est(len(v), len(v))
        return ONE
    if isinstance(e, CreateList):
        return Est(len(e.elements), len(e.elements))
    if isinstance(e, CreateMap):
        return Est(len(e.entries), len(e.entries))
    return None


def _type_size(typ: Type) -> Est | None:
    if typ.kind in ("bool", "double", "duration", "int", "timestamp", "uint"):
        return ONE
    if t.is_optional(typ):
        return _type_size(typ.params[0])
    return None
