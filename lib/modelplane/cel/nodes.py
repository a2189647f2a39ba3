"""The abstract syntax tree of a parsed CEL expression, macros already expanded."""

from __future__ import annotations

from dataclasses import dataclass, field

from modelplane.cel.values import Value

# The accumulator of the comprehensions the macros expand to; users cannot name it.
ACCUMULATOR = "@result"


@dataclass(eq=False, slots=True)
class Expr:
    """A node; ``id`` is unique within one expression, ``offset`` is where it starts."""

    id: int
    offset: int


@dataclass(eq=False, slots=True)
class Literal(Expr):
    """A constant: bool, int, uint, double, string, bytes or null."""

    value: Value


@dataclass(eq=False, slots=True)
class Ident(Expr):
    """A variable or type name."""

    name: str


@dataclass(eq=False, slots=True)
class Select(Expr):
    """``operand.field``, or ``has(operand.field)`` when ``test_only``."""

    operand: Expr
    field: str
    test_only: bool = False


@dataclass(eq=False, slots=True)
class Call(Expr):
    """A function or operator call; ``target`` is the receiver of a member call."""

    function: str
    args: list[Expr]
    target: Expr | None = None


@dataclass(eq=False, slots=True)
class CreateList(Expr):
    """``[a, ?b]``: ``optional`` holds the indices of the ``?`` elements."""

    elements: list[Expr]
    optional: frozenset[int] = frozenset()


@dataclass(eq=False, slots=True)
class MapEntry:
    """One ``key: value`` of a map literal; ``?key: value`` when ``optional``."""

    key: Expr
    value: Expr
    optional: bool = False


@dataclass(eq=False, slots=True)
class CreateMap(Expr):
    """``{k: v, ...}``."""

    entries: list[MapEntry]


@dataclass(eq=False, slots=True)
class CreateStruct(Expr):
    """``Name{field: value}``: message construction, which this environment has no types for."""

    type_name: str
    fields: list[tuple[str, Expr]] = field(default_factory=list)


@dataclass(eq=False, slots=True)
class Comprehension(Expr):
    """The fold every macro expands to (``all``, ``exists``, ``map``, ``cel.bind``...)."""

    iter_range: Expr
    iter_var: str
    iter_var2: str
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr


def children(e: Expr) -> list[Expr]:  # noqa: PLR0911 (one case per kind of node)
    """The direct sub-expressions of ``e``, in evaluation order."""
    match e:
        case Select(operand=operand):
            return [operand]
        case Call(target=target, args=args):
            return [target, *args] if target is not None else list(args)
        case CreateList(elements=elements):
            return list(elements)
        case CreateMap(entries=entries):
            return [x for entry in entries for x in (entry.key, entry.value)]
        case CreateStruct(fields=fields):
            return [value for _, value in fields]
        case Comprehension():
            return [e.iter_range, e.accu_init, e.loop_condition, e.loop_step, e.result]
        case _:
            return []
