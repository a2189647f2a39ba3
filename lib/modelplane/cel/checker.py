"""Static type checking of a parsed expression, a port of cel-go's checker.

The result maps every node id to its type and every call to the overloads it may resolve to at
runtime; the cost estimator and the planner read both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.cel import types as t
from modelplane.cel.decls import FUNCTIONS, Overload
from modelplane.cel.nodes import (
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
from modelplane.cel.values import Uint

# The variables and type names the environment declares, and the fields of ``device``.
TYPE_IDENTS: dict[str, Type] = {
    "bool": t.BOOL,
    "bytes": t.BYTES,
    "double": t.DOUBLE,
    "google.protobuf.Duration": t.DURATION,
    "int": t.INT,
    "list": t.list_of(t.param("A")),
    "map": t.map_of(t.param("A"), t.param("B")),
    "null_type": t.NULL,
    "string": t.STRING,
    "google.protobuf.Timestamp": t.TIMESTAMP,
    "type": t.TYPE,
    "uint": t.UINT,
}
VARIABLES: dict[str, Type] = {"device": t.DEVICE}
STRUCT_FIELDS: dict[str, dict[str, Type]] = {
    t.DEVICE.name: {
        "driver": t.STRING,
        "attributes": t.map_of(t.STRING, t.map_of(t.STRING, t.ANY)),
        "capacity": t.map_of(t.STRING, t.map_of(t.STRING, t.QUANTITY)),
    },
}


class CheckError(Exception):
    """The expression does not type-check; the message says why, ``offset`` where (once known)."""

    offset: int | None = None


@dataclass
class Checked:
    """What the checker learnt: node types, call overloads, and which identifiers name types."""

    types: dict[int, Type] = field(default_factory=dict)
    overloads: dict[int, list[str]] = field(default_factory=dict)
    type_idents: dict[int, Type] = field(default_factory=dict)


def check(root: Expr) -> Checked:
    """Type-check ``root``.

    Raises:
        CheckError: A reference, field, overload or type does not fit.

    """
    checker = _Checker()
    checker.check(root)
    result = Checked(overloads=checker.overloads, type_idents=checker.type_idents)
    for node_id, node_type in checker.types.items():
        result.types[node_id] = t.substitute(checker.mapping, node_type, params_to_dyn=True)
    return result


def qualified_name(e: Expr) -> str | None:
    """``a.b.c`` for a chain of selections on an identifier, else ``None``."""
    if isinstance(e, Ident):
        return e.name
    if isinstance(e, Select) and not e.test_only:
        prefix = qualified_name(e.operand)
        return None if prefix is None else f"{prefix}.{e.field}"
    return None


class _Checker:
    def __init__(self) -> None:
        self.types: dict[int, Type] = {}
        self.overloads: dict[int, list[str]] = {}
        self.type_idents: dict[int, Type] = {}
        self.mapping: t.Mapping = {}
        self.scopes: list[dict[str, Type]] = []
        self.free_vars = 0

    # bookkeeping

    def set_type(self, e: Expr, typ: Type) -> None:
        self.types[e.id] = typ

    def type_of(self, e: Expr) -> Type:
        return self.types[e.id]

    def new_type_var(self) -> Type:
        self.free_vars += 1
        return t.param(f"_var{self.free_vars - 1}")

    def assignable(self, t1: Type, t2: Type) -> bool:
        m = t.is_assignable(self.mapping, t1, t2)
        if m is None:
            return False
        self.mapping = m
        return True

    def lookup_ident(self, name: str) -> tuple[Type, bool] | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name], False
        if name in VARIABLES:
            return VARIABLES[name], False
        if name in TYPE_IDENTS:
            return t.type_of(TYPE_IDENTS[name]), True
        return None

    # the walk

    def check(self, e: Expr) -> None:
        try:
            self.check_node(e)
        except CheckError as err:
            if err.offset is None:  # the innermost node being checked is where it fails
                err.offset = e.offset
            raise

    def check_node(self, e: Expr) -> None:
        match e:
            case Literal():
                self.set_type(e, _literal_type(e.value))
            case Ident():
                self.check_ident(e)
            case Select():
                self.check_select(e)
            case Call():
                self.check_call(e)
            case CreateList():
                self.check_list(e)
            case CreateMap():
                self.check_map(e)
            case CreateStruct():
                raise CheckError(f"undeclared reference to '{e.type_name}' (in container '')")
            case Comprehension():
                self.check_comprehension(e)
            case _:
                raise CheckError(f"unexpected expression {type(e).__name__}")

    def check_ident(self, e: Ident) -> None:
        found = self.lookup_ident(e.name.removeprefix("."))
        if found is None:
            raise CheckError(f"undeclared reference to '{e.name}' (in container '')")
        typ, is_type = found
        self.set_type(e, typ)
        if is_type:
            self.type_idents[e.id] = typ.params[0]

    def check_select(self, e: Select) -> None:
        qualified = qualified_name(e)
        if qualified is not None and not e.test_only:
            found = self.lookup_ident(qualified)
            if found is not None and found[1]:
                self.set_type(e, found[0])
                self.type_idents[e.id] = found[0].params[0]
                return
        result = self.check_select_field(e.operand, e.field, optional=False)
        if e.test_only:
            result = t.BOOL
        self.set_type(e, t.substitute(self.mapping, result, params_to_dyn=False))

    def check_select_field(self, operand: Expr, name: str, *, optional: bool) -> Type:
        self.check(operand)
        operand_type = t.substitute(self.mapping, self.type_of(operand), params_to_dyn=False)
        target, is_opt = t.unwrap_optional(operand_type)
        result = t.ERROR
        if target.kind == "map":
            result = target.params[1]
        elif target.kind == "struct":
            fields = STRUCT_FIELDS.get(target.name)
            if fields is None or name not in fields:
                raise CheckError(f"undefined field '{name}'")
            result = fields[name]
        elif target.kind == "param":
            self.assignable(t.DYN, target)
            result = t.DYN
        else:
            if not t.is_dyn_or_error(target):
                raise CheckError(f"type '{target}' does not support field selection")
            result = t.DYN
        if is_opt or optional:
            return t.optional_of(result)
        return result

    def check_call(self, e: Call) -> None:
        if e.function == "_?._":
            self.check_opt_select(e)
            return
        for arg in e.args:
            self.check(arg)
        if e.target is None:
            overloads = FUNCTIONS.get(e.function.removeprefix("."))
            if overloads is None:
                raise CheckError(f"undeclared reference to '{e.function}' (in container '')")
            self.resolve(e, overloads, None)
            return
        prefix = qualified_name(e.target)
        if prefix is not None:
            overloads = FUNCTIONS.get(f"{prefix}.{e.function}".removeprefix("."))
            if overloads is not None:
                # ``sets.contains(a, b)``: a namespaced global function, not a member call.
                e.function, e.target = f"{prefix}.{e.function}".removeprefix("."), None
                self.resolve(e, overloads, None)
                return
        self.check(e.target)
        overloads = FUNCTIONS.get(e.function)
        if overloads is None:
            raise CheckError(f"undeclared reference to '{e.function}' (in container '')")
        self.resolve(e, overloads, e.target)

    def check_opt_select(self, e: Call) -> None:
        operand, name = e.args
        if not isinstance(name, Literal) or not isinstance(name.value, str):
            raise CheckError("unsupported optional field selection")
        result = self.check_select_field(operand, name.value, optional=True)
        self.set_type(name, t.STRING)
        self.set_type(e, t.substitute(self.mapping, result, params_to_dyn=False))
        self.overloads[e.id] = ["select_optional_field"]

    def resolve(self, e: Call, overloads: tuple[Overload, ...], target: Expr | None) -> None:
        arg_types = ([self.type_of(target)] if target is not None else []) + [self.type_of(a) for a in e.args]
        result: Type | None = None
        ids: list[str] = []
        for overload in overloads:
            if overload.member != (target is not None):
                continue
            if e.function in ("_&&_", "_||_"):
                for arg, arg_type in zip(e.args, arg_types, strict=True):
                    if not self.assignable(arg_type, t.BOOL):
                        raise CheckError(f"expected type 'bool' but found '{arg_type}' at offset {arg.offset}")
                self.overloads[e.id] = [overload.id]
                self.set_type(e, t.BOOL)
                return
            signature = (*overload.args, overload.result)
            if overload.params:
                subs: t.Mapping = {name: self.new_type_var() for name in overload.params}
                signature = tuple(t.substitute(subs, x, params_to_dyn=False) for x in signature)
            m = t.is_assignable_list(self.mapping, arg_types, list(signature[:-1]))
            if m is None:
                continue
            self.mapping = m
            ids.append(overload.id)
            fn_result = t.substitute(self.mapping, signature[-1], params_to_dyn=False)
            if result is None:
                result = fn_result
            elif not t.is_dyn(result) and fn_result != result:
                result = t.DYN
        if result is None:
            shown = [str(t.substitute(self.mapping, x, params_to_dyn=True)) for x in arg_types]
            applied = f"{shown[0]}.({', '.join(shown[1:])})" if target is not None else f"({', '.join(shown)})"
            raise CheckError(f"found no matching overload for '{e.function}' applied to '{applied}'")
        self.overloads[e.id] = ids
        self.set_type(e, result)

    def check_list(self, e: CreateList) -> None:
        elems: Type | None = None
        for i, element in enumerate(e.elements):
            self.check(element)
            elem_type = self.type_of(element)
            if i in e.optional:
                elem_type, is_opt = t.unwrap_optional(elem_type)
                if not is_opt and not t.is_dyn(elem_type):
                    raise CheckError(f"expected type '{t.optional_of(elem_type)}' but found '{elem_type}'")
            elems = self.join(elems, elem_type)
        self.set_type(e, t.list_of(elems if elems is not None else self.new_type_var()))

    def check_map(self, e: CreateMap) -> None:
        keys: Type | None = None
        values: Type | None = None
        for entry in e.entries:
            self.check(entry.key)
            keys = self.join(keys, self.type_of(entry.key))
            self.check(entry.value)
            value_type = self.type_of(entry.value)
            if entry.optional:
                value_type, is_opt = t.unwrap_optional(value_type)
                if not is_opt and not t.is_dyn(value_type):
                    raise CheckError(f"expected type '{t.optional_of(value_type)}' but found '{value_type}'")
            values = self.join(values, value_type)
        if keys is None or values is None:
            keys, values = self.new_type_var(), self.new_type_var()
        self.set_type(e, t.map_of(keys, values))

    def join(self, previous: Type | None, current: Type) -> Type:
        if previous is None:
            return current
        if self.assignable(previous, current):
            return t.most_general(previous, current)
        # HomogeneousAggregateLiterals: Kubernetes refuses mixed literals.
        raise CheckError(f"expected type '{previous}' but found '{current}'")

    def check_comprehension(self, e: Comprehension) -> None:
        self.check(e.iter_range)
        self.check(e.accu_init)
        range_type = t.substitute(self.mapping, self.type_of(e.iter_range), params_to_dyn=False)
        accu_type = self.type_of(e.accu_init)
        self.scopes.append({e.accu_var: accu_type})
        var2_type: Type | None = None
        if range_type.kind == "list":
            var_type = range_type.params[0]
            if e.iter_var2:
                var_type, var2_type = t.INT, var_type
        elif range_type.kind == "map":
            var_type = range_type.params[0]
            if e.iter_var2:
                var2_type = range_type.params[1]
        elif range_type.kind in ("dyn", "error", "param"):
            self.assignable(t.DYN, range_type)
            var_type = t.DYN
            var2_type = t.DYN if e.iter_var2 else None
        else:
            raise CheckError(
                f"expression of type '{range_type}' cannot be range of a comprehension (must be list, map, or dynamic)"
            )
        scope = {e.iter_var: var_type}
        if e.iter_var2 and var2_type is not None:
            scope[e.iter_var2] = var2_type
        self.scopes.append(scope)
        self.check(e.loop_condition)
        self.assert_type(e.loop_condition, t.BOOL)
        self.check(e.loop_step)
        self.assert_type(e.loop_step, accu_type)
        self.scopes.pop()
        self.check(e.result)
        self.scopes.pop()
        self.set_type(e, t.substitute(self.mapping, self.type_of(e.result), params_to_dyn=False))

    def assert_type(self, e: Expr, expected: Type) -> None:
        actual = self.type_of(e)
        if not self.assignable(expected, actual):
            raise CheckError(f"expected type '{expected}' but found '{actual}'")


_LITERAL_TYPES: dict[type, Type] = {
    type(None): t.NULL,
    bool: t.BOOL,
    Uint: t.UINT,
    int: t.INT,
    float: t.DOUBLE,
    str: t.STRING,
    bytes: t.BYTES,
}


def _literal_type(value: object) -> Type:
    found = _LITERAL_TYPES.get(type(value))
    if found is None:
        raise CheckError(f"unexpected literal {value!r}")
    return found
