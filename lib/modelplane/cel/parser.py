"""CEL source text to :mod:`~modelplane.cel.nodes`, as cel-go's parser reads it.

The grammar, literals, escapes, reserved words, macros (``has``, ``all``, ``exists``,
``exists_one``, ``map``, ``filter``, the two-variable comprehensions, ``optMap``, ``optFlatMap``
and ``cel.bind``) and the two recursion limits follow cel-go v0.26 with the options Kubernetes
enables (optional syntax on, identifier escapes off).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

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
    MapEntry,
    Select,
)
from modelplane.cel.values import INT64_MAX, UINT64_MAX, Uint, Value

# cel-go's defaults: the parse-tree nesting limit and the visitor's recursion limit.
MAX_RECURSION_DEPTH = 250

RESERVED = frozenset(
    {
        "as", "break", "const", "continue", "else", "false", "for", "function", "if", "import", "in",
        "let", "loop", "package", "namespace", "null", "return", "true", "var", "void", "while",
    }
)  # fmt: skip

_UNUSED_ITER_VAR = "#unused"
_PUNCTUATION = ("==", "!=", "<=", ">=", "&&", "||", "<", ">", "[", "]", "{", "}", "(", ")", ".", ",", "-", "!", "?",
                ":", "+", "*", "/", "%")  # fmt: skip
_KEYWORDS = {"true": "true", "false": "false", "null": "null", "in": "in"}
_RELATIONS = {"<": "_<_", "<=": "_<=_", ">=": "_>=_", ">": "_>_", "==": "_==_", "!=": "_!=_", "in": "@in"}
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'",
                   '"': '"', "`": "`", "?": "?"}  # fmt: skip
_HEX = frozenset("0123456789abcdefABCDEF")


class ParseError(Exception):
    """The text is not a CEL expression; the message says where and why.

    Attributes:
        offset: Where in the text (0-based characters), when known.
        detail: Why, without the offset.
    """

    def __init__(self, message: str, *, offset: int | None = None, detail: str = "") -> None:
        """Record the message, and where and why apart for a caller that locates the error itself."""
        super().__init__(message)
        self.offset = offset
        self.detail = detail or message


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # punctuation, a keyword, "ident", "int", "uint", "float", "string", "bytes" or "eof"
    text: str
    offset: int


def parse(text: str) -> tuple[Expr, int]:
    """Parse ``text`` into an expression tree, returning it and the number of node ids used.

    Raises:
        ParseError: ``text`` is not valid CEL.

    """
    parser = _Parser(_tokenize(text))
    try:
        return parser.parse(), parser.next_id
    except ParseError as e:
        if e.offset is None:  # raised about the token last read
            e.offset = parser.tokens[max(parser.pos - 1, 0)].offset
        raise


# ---------------------------------------------------------------------------------------------
# Lexer


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n\f":
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c.isascii() and (
            c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isascii() and text[i + 1].isdigit())
        ):
            token = _number(text, i)
        elif c in "\"'":
            token = _string(text, i, i, "string")
        elif c.isascii() and (c.isalpha() or c == "_"):
            token = _word(text, i)
        else:
            token = _punctuation(text, i)
        tokens.append(token)
        i = token.offset + len(token.text)
    tokens.append(_Token("eof", "", n))
    return tokens


def _digits(text: str, i: int, allowed: str | frozenset[str] = "0123456789") -> int:
    while i < len(text) and text[i] in allowed:
        i += 1
    return i


def _number(text: str, start: int) -> _Token:
    n = len(text)
    if text.startswith("0x", start) and start + 2 < n and text[start + 2] in _HEX:
        end = _digits(text, start + 2, _HEX)
        if end < n and text[end] in "uU":
            return _Token("uint", text[start : end + 1], start)
        return _Token("int", text[start:end], start)
    end = _digits(text, start)
    is_float = False
    if end < n and text[end] == "." and end + 1 < n and text[end + 1].isascii() and text[end + 1].isdigit():
        end = _digits(text, end + 1)
        is_float = True
    if end < n and text[end] in "eE":
        exp = end + 1
        if exp < n and text[exp] in "+-":
            exp += 1
        if exp < n and text[exp].isascii() and text[exp].isdigit():
            end = _digits(text, exp)
            is_float = True
    if is_float:
        return _Token("float", text[start:end], start)
    if end < n and text[end] in "uU":
        return _Token("uint", text[start : end + 1], start)
    return _Token("int", text[start:end], start)


def _word(text: str, start: int) -> _Token:
    end = start
    while end < len(text) and text[end].isascii() and (text[end].isalnum() or text[end] == "_"):
        end += 1
    word = text[start:end]
    if end < len(text) and text[end] in "\"'":
        if word in ("r", "R"):
            return _string(text, start, end, "string")
        if word in ("b", "B"):
            return _string(text, start, end, "bytes")
        if len(word) == 2 and word[0] in "bB" and word[1] in "rR":
            return _string(text, start, end, "bytes")
    return _Token(_KEYWORDS.get(word, "ident"), word, start)


def _string(text: str, start: int, quote_at: int, kind: str) -> _Token:
    raw = text[start:quote_at].lower().endswith("r")
    q = text[quote_at]
    triple = text.startswith(q * 3, quote_at)
    i = quote_at + (3 if triple else 1)
    n = len(text)
    while i < n:
        c = text[i]
        if triple and text.startswith(q * 3, i):
            return _Token(kind, text[start : i + 3], start)
        if not triple and c == q:
            return _Token(kind, text[start : i + 1], start)
        if not triple and c in "\r\n":
            break
        if c == "\\" and not raw:
            i += _escape_length(text, i)
            continue
        i += 1
    msg = f"unterminated string literal at offset {start}"
    raise ParseError(msg, offset=start, detail="unterminated string literal")


def _escape_length(text: str, i: int) -> int:
    """Length of the escape sequence at ``text[i]`` (a backslash), as the lexer accepts them."""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if nxt in _SIMPLE_ESCAPES:
        return 2
    for letter, count in (("x", 2), ("X", 2), ("u", 4), ("U", 8)):
        if nxt == letter and len(text) >= i + 2 + count and all(h in _HEX for h in text[i + 2 : i + 2 + count]):
            return 2 + count
    if nxt in "0123" and len(text) >= i + 4 and all(d in "01234567" for d in text[i + 2 : i + 4]):
        return 4
    msg = f"invalid escape sequence at offset {i}"
    raise ParseError(msg, offset=i, detail="invalid escape sequence")


def _punctuation(text: str, i: int) -> _Token:
    for p in _PUNCTUATION:
        if text.startswith(p, i):
            return _Token(p, p, i)
    msg = f"token recognition error at offset {i}: {text[i]!r}"
    raise ParseError(msg, offset=i, detail=f"token recognition error: {text[i]!r}")


def _unescape(token: str, *, is_bytes: bool) -> str | bytes:
    body = token[1:] if is_bytes else token
    raw = body[0] in "rR"
    if raw:
        body = body[1:]
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    body = body[3:-3] if len(body) >= 6 and body[:3] in ('"""', "'''") else body[1:-1]
    if raw or "\\" not in body:
        return body.encode() if is_bytes else body
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[nxt].encode()
            i += 2
            continue
        if nxt in "xXuU":
            width = {"x": 2, "X": 2, "u": 4, "U": 8}[nxt]
            if is_bytes and nxt in "uU":
                msg = "unable to unescape string"
                raise ParseError(msg)
            code = int(body[i + 2 : i + 2 + width], 16)
            i += 2 + width
        else:
            code = int(body[i + 1 : i + 4], 8)
            i += 4
        if is_bytes and nxt not in "uU":
            out.append(code)
            continue
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            msg = "invalid unicode code point"
            raise ParseError(msg)
        out += chr(code).encode()
    if is_bytes:
        return bytes(out)
    return out.decode()


# ---------------------------------------------------------------------------------------------
# Parser


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.next_id = 1
        self.expr_depth = 0
        self.rule_depth: dict[str, int] = {}

    # helpers

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def take(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def accept(self, kind: str) -> _Token | None:
        if self.peek().kind == kind:
            return self.take()
        return None

    def expect(self, kind: str) -> _Token:
        token = self.peek()
        if token.kind != kind:
            raise self.error(token, f"expected {kind!r}")
        return self.take()

    def error(self, token: _Token, what: str) -> ParseError:
        found = "end of input" if token.kind == "eof" else repr(token.text)
        detail = f"{what}, found {found}"
        return ParseError(f"syntax error at offset {token.offset}: {detail}", offset=token.offset, detail=detail)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    @staticmethod
    def check_depth(depth: int) -> int:
        if depth > MAX_RECURSION_DEPTH:
            msg = "max recursion depth exceeded"
            raise ParseError(msg)
        return depth

    # grammar

    def parse(self) -> Expr:
        expr, _ = self.expr()
        token = self.peek()
        if token.kind != "eof":
            raise self.error(token, "unexpected input")
        return expr

    def expr(self) -> tuple[Expr, int]:
        self.expr_depth += 1
        if self.expr_depth > MAX_RECURSION_DEPTH:
            msg = f"expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
            raise ParseError(msg)
        cond, depth = self.conditional_or()
        question = self.accept("?")
        if question is not None:
            if_true, d1 = self.conditional_or()
            self.expect(":")
            if_false, d2 = self.expr()
            depth = self.check_depth(1 + max(depth, d1, d2))
            cond = self.global_call(question.offset, "_?_:_", [cond, if_true, if_false])
        self.expr_depth -= 1
        return cond, depth

    def conditional_or(self) -> tuple[Expr, int]:
        return self.logic("||", "_||_", self.conditional_and)

    def conditional_and(self) -> tuple[Expr, int]:
        return self.logic("&&", "_&&_", self.relation)

    def logic(self, op: str, function: str, parse_operand: Callable[[], tuple[Expr, int]]) -> tuple[Expr, int]:
        first, depth = parse_operand()
        terms: list[Expr] = [first]
        offsets: list[int] = []
        while (token := self.accept(op)) is not None:
            term, d = parse_operand()
            terms.append(term)
            offsets.append(token.offset)
            depth = max(depth, d)
        if len(terms) == 1:
            return first, depth
        return self.balanced(function, terms, offsets, 0, len(offsets) - 1), depth

    def balanced(self, function: str, terms: list[Expr], offsets: list[int], lo: int, hi: int) -> Expr:
        # cel-go builds a balanced tree from a chain of && or ||, which its cost estimate follows.
        mid = (lo + hi + 1) // 2
        left = terms[mid] if mid == lo else self.balanced(function, terms, offsets, lo, mid - 1)
        right = terms[mid + 1] if mid == hi else self.balanced(function, terms, offsets, mid + 1, hi)
        return Call(self.new_id(), offsets[mid], function, [left, right])

    def enter(self, rule: str) -> None:
        # ANTLR's listener: no rule may be entered more than 250 times on the stack at once.
        depth = self.rule_depth.get(rule, 0) + 1
        if depth > MAX_RECURSION_DEPTH:
            msg = f"expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
            raise ParseError(msg)
        self.rule_depth[rule] = depth

    def leave(self, rule: str) -> None:
        self.rule_depth[rule] -= 1

    def relation(self, precedence: int = 0) -> tuple[Expr, int]:
        # ANTLR's left-recursion rewrite: relation[p] : calc ({1 >= p}? op relation[2])*
        self.enter("relation")
        left, depth = self.calc()
        while precedence <= 1 and self.peek().kind in _RELATIONS:
            token = self.take()
            right, d = self.relation(2)
            depth = self.check_depth(1 + max(depth, d))
            left = self.global_call(token.offset, _RELATIONS[token.kind], [left, right])
        self.leave("relation")
        return left, depth

    def calc(self, precedence: int = 0) -> tuple[Expr, int]:
        # calc[p] : unary ({2 >= p}? ('*'|'/'|'%') calc[3] | {1 >= p}? ('+'|'-') calc[2])*
        self.enter("calc")
        left, depth = self.unary()
        while True:
            kind = self.peek().kind
            if kind in ("*", "/", "%") and precedence <= 2:
                right_precedence = 3
            elif kind in ("+", "-") and precedence <= 1:
                right_precedence = 2
            else:
                break
            token = self.take()
            right, d = self.calc(right_precedence)
            depth = self.check_depth(1 + max(depth, d))
            left = self.global_call(token.offset, f"_{token.kind}_", [left, right])
        self.leave("calc")
        return left, depth

    def unary(self) -> tuple[Expr, int]:
        token = self.peek()
        if token.kind == "!":
            count = 0
            while self.accept("!") is not None:
                count += 1
            operand, depth = self.member()
            return (self.global_call(token.offset, "!_", [operand]) if count % 2 else operand), depth
        if token.kind == "-" and self.peek(1).kind not in ("int", "float"):
            count = 0
            while self.accept("-") is not None:
                count += 1
            operand, depth = self.member()
            return (self.global_call(token.offset, "-_", [operand]) if count % 2 else operand), depth
        return self.member()

    def member(self) -> tuple[Expr, int]:
        expr, depth = self.primary()
        while True:
            token = self.peek()
            if token.kind == ".":
                self.take()
                optional = self.accept("?") is not None
                name = self.expect("ident")
                if not optional and self.peek().kind == "(":
                    open_paren = self.take()
                    args, d = self.expr_list(")")
                    depth = self.check_depth(1 + max(depth, d))
                    expr = self.receiver_call(open_paren.offset, name.text, expr, args)
                    continue
                depth = self.check_depth(depth + 1)
                if optional:
                    field = Literal(self.new_id(), name.offset, name.text)
                    expr = Call(self.new_id(), token.offset, "_?._", [expr, field])
                else:
                    expr = Select(self.new_id(), token.offset, expr, name.text)
            elif token.kind == "[":
                self.take()
                optional = self.accept("?") is not None
                index, d = self.expr()
                self.expect("]")
                depth = self.check_depth(1 + max(depth, d))
                expr = self.global_call(token.offset, "_[?_]" if optional else "_[_]", [expr, index])
            else:
                return expr, depth

    def primary(self) -> tuple[Expr, int]:
        token = self.peek()
        kind = token.kind
        if kind in ("ident", "."):
            return self.identifier()
        if kind == "(":
            self.take()
            inner, depth = self.expr()
            self.expect(")")
            return inner, depth
        if kind == "[":
            return self.list_literal()
        if kind == "{":
            return self.map_literal()
        return self.literal(), 0

    def identifier(self) -> tuple[Expr, int]:
        leading = self.accept(".")
        token = self.expect("ident")
        name = ("." if leading else "") + token.text
        nxt = self.peek().kind
        if nxt == "(":
            if token.text in RESERVED:
                raise ParseError(f"reserved identifier: {token.text}")
            self.take()
            args, depth = self.expr_list(")")
            return self.global_call(token.offset, name, args), depth
        if nxt == "{" or (nxt == "." and self._message_name_follows()):
            return self.message(token, leading=leading is not None)
        if token.text in RESERVED:
            raise ParseError(f"reserved identifier: {token.text}")
        return Ident(self.new_id(), token.offset, name), 0

    def _message_name_follows(self) -> bool:
        # ``a.b.C{...}`` is a message literal; ``a.b`` a selection. Look past the dotted name.
        i = 0
        while self.peek(i).kind == "." and self.peek(i + 1).kind == "ident":
            i += 2
        return i > 0 and self.peek(i).kind == "{"

    def message(self, first: _Token, *, leading: bool) -> tuple[Expr, int]:
        parts = [first.text]
        while self.accept(".") is not None:
            parts.append(self.expect("ident").text)
        brace = self.expect("{")
        fields: list[tuple[str, Expr]] = []
        depth = 0
        while self.peek().kind != "}":
            if self.accept("?") is not None:
                pass  # an optional field: parsed, then refused with the message type
            name = self.expect("ident")
            self.expect(":")
            value, d = self.expr()
            depth = max(depth, d)
            fields.append((name.text, value))
            if self.accept(",") is None:
                break
        self.expect("}")
        return CreateStruct(self.new_id(), brace.offset, ("." if leading else "") + ".".join(parts), fields), depth

    def expr_list(self, close: str) -> tuple[list[Expr], int]:
        args: list[Expr] = []
        depth = 0
        if self.accept(close) is not None:
            return args, depth
        while True:
            arg, d = self.expr()
            args.append(arg)
            depth = max(depth, d)
            if self.accept(",") is None:
                break
        self.expect(close)
        return args, depth

    def list_literal(self) -> tuple[Expr, int]:
        bracket = self.take()
        elements: list[Expr] = []
        optional: set[int] = set()
        depth = 0
        while self.peek().kind != "]":
            if self.accept("?") is not None:
                optional.add(len(elements))
            element, d = self.expr()
            elements.append(element)
            depth = max(depth, d)
            if self.accept(",") is None:
                break
        self.expect("]")
        return CreateList(self.new_id(), bracket.offset, elements, frozenset(optional)), depth

    def map_literal(self) -> tuple[Expr, int]:
        brace = self.take()
        entries: list[MapEntry] = []
        depth = 0
        while self.peek().kind != "}":
            optional = self.accept("?") is not None
            key, d1 = self.expr()
            self.expect(":")
            value, d2 = self.expr()
            entries.append(MapEntry(key, value, optional))
            depth = max(depth, d1, d2)
            if self.accept(",") is None:
                break
        self.expect("}")
        return CreateMap(self.new_id(), brace.offset, entries), depth

    def literal(self) -> Expr:
        token = self.take()
        negative = False
        if token.kind == "-":
            negative = True
            token = self.take()
        value: Value
        match token.kind:
            case "int":
                text = token.text
                number = int(text[2:], 16) if text.startswith("0x") else int(text)
                number = -number if negative else number
                if not -(2**63) <= number <= INT64_MAX:
                    msg = f"invalid int literal: {'-' if negative else ''}{text}"
                    raise ParseError(msg)
                value = number
            case "uint":
                text = token.text[:-1]
                number = int(text[2:], 16) if text.startswith("0x") else int(text)
                if number > UINT64_MAX:
                    msg = f"invalid uint literal: {token.text}"
                    raise ParseError(msg)
                value = Uint(number)
            case "float":
                value = float(("-" if negative else "") + token.text)
                if math.isinf(value):
                    msg = f"invalid double literal: {token.text}"
                    raise ParseError(msg)
            case "string" | "bytes" if not negative:
                value = _unescape(token.text, is_bytes=token.kind == "bytes")
            case "true" | "false" if not negative:
                value = token.kind == "true"
            case "null" if not negative:
                value = None
            case _:
                raise self.error(token, "expected an expression")
        return Literal(self.new_id(), token.offset, value)

    # calls and macros

    def global_call(self, offset: int, function: str, args: list[Expr]) -> Expr:
        if function == "has" and len(args) == 1:
            arg = args[0]
            if not isinstance(arg, Select) or arg.test_only:
                msg = "invalid argument to has() macro"
                raise ParseError(msg)
            return Select(self.new_id(), offset, arg.operand, arg.field, test_only=True)
        return Call(self.new_id(), offset, function, args)

    def receiver_call(self, offset: int, function: str, target: Expr, args: list[Expr]) -> Expr:
        expanded = self.expand(offset, function, target, args)
        if expanded is not None:
            return expanded
        return Call(self.new_id(), offset, function, args, target)

    def expand(self, offset: int, function: str, target: Expr, args: list[Expr]) -> Expr | None:  # noqa: PLR0911 (one case per macro)
        n = len(args)
        if n == 2 and function in ("all", "exists", "exists_one"):
            return self.quantifier(offset, function, target, None, args[0], args[1])
        if n == 3 and function in ("all", "exists", "existsOne", "exists_one"):
            return self.quantifier(offset, function, target, args[0], args[1], args[2])
        if function == "map" and n in (2, 3):
            var = self.iter_var(args[0])
            step: Expr = self.call(offset, "_+_", [self.accu(offset), self.list_of(offset, args[-1])])
            if n == 3:
                step = self.call(offset, "_?_:_", [args[1], step, self.accu(offset)])
            return self.fold(offset, target, var, "", self.list_of(offset), self.true(offset), step)
        if function == "filter" and n == 2:
            var = self.iter_var(args[0])
            element = Ident(self.new_id(), args[0].offset, var)
            step = self.call(offset, "_+_", [self.accu(offset), self.list_of(offset, element)])
            step = self.call(offset, "_?_:_", [args[1], step, self.accu(offset)])
            return self.fold(offset, target, var, "", self.list_of(offset), self.true(offset), step)
        if function in ("transformList", "transformMap", "transformMapEntry") and n in (3, 4):
            return self.transform(offset, function, target, args)
        if function in ("optMap", "optFlatMap") and n == 2:
            return self.opt_map(offset, function, target, args)
        if function == "bind" and n == 3 and isinstance(target, Ident) and target.name == "cel":
            if not isinstance(args[0], Ident):
                msg = "cel.bind() variable names must be simple identifiers"
                raise ParseError(msg)
            return self.bind(offset, args[0].name, args[1], args[2])
        return None

    def quantifier(
        self, offset: int, function: str, target: Expr, first: Expr | None, second: Expr, predicate: Expr
    ) -> Expr:
        if first is None:
            var, var2 = self.iter_var(second), ""
        else:
            var, var2 = self.iter_vars(first, second)
        accu = self.accu
        if function == "all":
            init: Expr = self.true(offset)
            cond: Expr = self.call(offset, "@not_strictly_false", [accu(offset)])
            step: Expr = self.call(offset, "_&&_", [accu(offset), predicate])
            result: Expr = accu(offset)
        elif function == "exists":
            init = Literal(self.new_id(), offset, False)  # noqa: FBT003 (a CEL literal)
            cond = self.call(offset, "@not_strictly_false", [self.call(offset, "!_", [accu(offset)])])
            step = self.call(offset, "_||_", [accu(offset), predicate])
            result = accu(offset)
        else:
            init = Literal(self.new_id(), offset, 0)
            cond = self.true(offset)
            one = Literal(self.new_id(), offset, 1)
            step = self.call(offset, "_?_:_", [predicate, self.call(offset, "_+_", [accu(offset), one]), accu(offset)])
            result = self.call(offset, "_==_", [accu(offset), Literal(self.new_id(), offset, 1)])
        return Comprehension(self.new_id(), offset, target, var, var2, ACCUMULATOR, init, cond, step, result)

    def transform(self, offset: int, function: str, target: Expr, args: list[Expr]) -> Expr:
        var, var2 = self.iter_vars(args[0], args[1])
        value = args[-1]
        if function == "transformList":
            init: Expr = self.list_of(offset)
            step: Expr = self.call(offset, "_+_", [self.accu(offset), self.list_of(offset, value)])
        elif function == "transformMap":
            init = CreateMap(self.new_id(), offset, [])
            key = Ident(self.new_id(), offset, var)
            step = self.call(offset, "cel.@mapInsert", [self.accu(offset), key, value])
        else:
            init = CreateMap(self.new_id(), offset, [])
            step = self.call(offset, "cel.@mapInsert", [self.accu(offset), value])
        if len(args) == 4:
            step = self.call(offset, "_?_:_", [args[2], step, self.accu(offset)])
        return Comprehension(
            self.new_id(), offset, target, var, var2, ACCUMULATOR, init, self.true(offset), step, self.accu(offset)
        )

    def opt_map(self, offset: int, function: str, target: Expr, args: list[Expr]) -> Expr:
        if not isinstance(args[0], Ident):
            msg = f"{function}() variable name must be a simple identifier"
            raise ParseError(msg)
        has_value = Call(self.new_id(), offset, "hasValue", [], target)
        value = Call(self.new_id(), offset, "value", [], _copy(target, self))
        bound = self.bind(offset, args[0].name, value, args[1])
        present = self.call(offset, "optional.of", [bound]) if function == "optMap" else bound
        return self.call(offset, "_?_:_", [has_value, present, self.call(offset, "optional.none", [])])

    def bind(self, offset: int, name: str, init: Expr, result: Expr) -> Expr:
        return Comprehension(
            self.new_id(),
            offset,
            self.list_of(offset),
            _UNUSED_ITER_VAR,
            "",
            name,
            init,
            Literal(self.new_id(), offset, False),  # noqa: FBT003 (a CEL literal)
            Ident(self.new_id(), offset, name),
            result,
        )

    def fold(  # noqa: PLR0913, PLR0917 (the parts of a comprehension)
        self, offset: int, target: Expr, var: str, var2: str, init: Expr, cond: Expr, step: Expr
    ) -> Expr:
        return Comprehension(self.new_id(), offset, target, var, var2, ACCUMULATOR, init, cond, step, self.accu(offset))

    @staticmethod
    def iter_var(arg: Expr) -> str:
        if not isinstance(arg, Ident):
            msg = "argument must be a simple name"
            raise ParseError(msg)
        if arg.name in (ACCUMULATOR, "__result__"):
            msg = "iteration variable overwrites accumulator variable"
            raise ParseError(msg)
        return arg.name

    def iter_vars(self, first: Expr, second: Expr) -> tuple[str, str]:
        var, var2 = self.iter_var(first), self.iter_var(second)
        if var == var2:
            msg = f"duplicate variable name: {var}"
            raise ParseError(msg)
        return var, var2

    def call(self, offset: int, function: str, args: list[Expr]) -> Call:
        return Call(self.new_id(), offset, function, args)

    def accu(self, offset: int) -> Ident:
        return Ident(self.new_id(), offset, ACCUMULATOR)

    def true(self, offset: int) -> Literal:
        return Literal(self.new_id(), offset, True)  # noqa: FBT003 (a CEL literal)

    def list_of(self, offset: int, *elements: Expr) -> CreateList:
        return CreateList(self.new_id(), offset, list(elements))


def _copy(e: Expr, parser: _Parser) -> Expr:  # noqa: PLR0911 (one case per kind of node)
    """A deep copy of ``e`` with fresh ids (a macro that uses its target twice needs two)."""
    match e:
        case Literal():
            return Literal(parser.new_id(), e.offset, e.value)
        case Ident():
            return Ident(parser.new_id(), e.offset, e.name)
        case Select():
            return Select(parser.new_id(), e.offset, _copy(e.operand, parser), e.field, e.test_only)
        case Call():
            target = _copy(e.target, parser) if e.target is not None else None
            return Call(parser.new_id(), e.offset, e.function, [_copy(a, parser) for a in e.args], target)
        case CreateList():
            return CreateList(parser.new_id(), e.offset, [_copy(x, parser) for x in e.elements], e.optional)
        case CreateMap():
            entries = [MapEntry(_copy(x.key, parser), _copy(x.value, parser), x.optional) for x in e.entries]
            return CreateMap(parser.new_id(), e.offset, entries)
        case CreateStruct():
            return CreateStruct(parser.new_id(), e.offset, e.type_name, [(n, _copy(v, parser)) for n, v in e.fields])
        case Comprehension():
            return Comprehension(
                parser.new_id(),
                e.offset,
                _copy(e.iter_range, parser),
                e.iter_var,
                e.iter_var2,
                e.accu_var,
                _copy(e.accu_init, parser),
                _copy(e.loop_condition, parser),
                _copy(e.loop_step, parser),
                _copy(e.result, parser),
            )
        case _:
            raise TypeError(e)
