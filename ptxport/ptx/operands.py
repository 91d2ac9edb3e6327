"""Operand and constant-expression rules of the PTX parser, the literals they read, and the
classification of an instruction's modifiers against the instruction table.

`OperandRules` is a part of the parser (parser.py's `_Parser` derives from it): it reads
tokens through the parser's `tok`, `_advance`, `_accept`, `_expect` and `_unexpected`.
"""

from __future__ import annotations

import struct

from ptxport.ptx import ast
from ptxport.ptx.isa import OPS
from ptxport.ptx.isa._base import Op
from ptxport.ptx.lexer import Lexer, int_value


class StatementError(Exception):
    """One syntax error; caught at the statement it happened in."""

    def __init__(self, pos: int, message: str, text: str = ""):
        super().__init__(message)
        self.pos, self.message, self.text = pos, message, text


class OperandRules:
    """The operand rules of the recursive descent (a mixin of the parser)."""

    # --- operands --------------------------------------------------------------------------

    # operand := primary ['|' value]
    def _operand(self) -> ast.Operand:
        first = self._primary()
        if self._accept("|"):
            return ast.PredPair(first, self._value())
        return first

    # primary := '!' operand | '_' | '{' operand {',' operand} '}' | '[' bracketed ']'
    #          | '(' [operand {',' operand}] ')' | value
    def _primary(self) -> ast.Operand:
        kind = self.tok[0]
        if kind == "!":
            self._advance()
            return ast.Not(self._primary())
        if kind == "_":
            self._advance()
            return ast.SINK
        if kind == "{":
            self._advance()
            return ast.Vector(self._operand_list("}"))
        if kind == "[":
            self._advance()
            elements = self._operand_list("]")
            if len(elements) != 1:
                return ast.Bracketed(elements)
            address = self._address(elements[0])
            if isinstance(address, ast.Address) and self.tok[1] == ".unified":
                self._advance()  # `[a].unified`: a generic address known to be unified
                return ast.Address(address.base, address.offset, unified=True)
            return address
        if kind == "(":
            self._advance()
            if self._accept(")"):
                return ast.Parenthesized(())
            return ast.Parenthesized(self._operand_list(")"))
        return self._value()

    def _operand_list(self, close: str) -> tuple:
        items = [self._operand()]
        while self._accept(","):
            items.append(self._operand())
        self._expect(close, f"',' or '{close}'")
        return tuple(items)

    def _address(self, inner: ast.Operand) -> ast.Operand:
        """`[x]` with one element: a register or variable plus offset, or an absolute address."""
        if isinstance(inner, ast.Name):
            return ast.Address(inner, 0)
        if isinstance(inner, ast.SymbolOffset):
            return ast.Address(ast.Name(inner.name), inner.offset)
        if isinstance(inner, ast.IntImm):
            return ast.Address(None, inner.value)
        return ast.Bracketed((inner,))

    # value := ID ['.' component] [('+' | '-') expr] | FLOAT | ['-'] FLOAT | expr
    def _value(self) -> ast.Operand:
        kind, text, pos = self.tok
        if kind == "id":
            self._advance()
            component = None
            if self.tok[0] == "dot" and self.tok[2] == pos + len(text):
                component = self._advance()[1][1:]
            offset = self._offset()
            if offset or self.tok[0] in ("+", "-"):
                return ast.SymbolOffset(text, offset)
            return ast.Name(text, component)
        if kind in ("hexf", "flt") or (kind == "-" and self._peek_kind() in ("hexf", "flt")):
            negative = self._accept("-")
            return float_literal(self._advance()[1], negative)
        if kind == "-" and self._peek_kind() == "id":
            self._advance()
            return ast.Neg(self._value())
        return ast.IntImm(self._const_expr())

    def _peek_kind(self) -> str:
        return Lexer(self.text, self.lexer.pos).next()[0]

    def _offset(self) -> int:
        """An optional `+expr` / `-expr` after a symbol or register."""
        if self.tok[0] == "+":
            self._advance()
            return self._const_expr()
        if self.tok[0] == "-":
            self._advance()
            return -self._const_unary()
        return 0

    def _int(self, what: str) -> int:
        kind, text, pos = self.tok
        if kind != "int":
            raise self._unexpected(f"expected {what}")
        self._advance()
        return int_literal(text, pos)

    # --- constant expressions (PTX ISA 4.6: C's operators and precedence) ---------------------

    _BINARY = {
        "||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6,
        "<": 7, ">": 7, "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9,
        "*": 10, "/": 10, "%": 10,
    }

    def _const_expr(self, min_prec: int = 0) -> int:
        value = self._const_unary()
        while True:
            op = self.tok[0]
            prec = self._BINARY.get(op)
            if op == "?" and min_prec == 0:
                self._advance()
                then = self._const_expr()
                self._expect(":", "':' in a conditional expression")
                other = self._const_expr()
                value = then if value else other
                continue
            if prec is None or prec <= min_prec:
                return value
            pos = self._advance()[2]
            value = fold(op, value, self._const_expr(prec), pos)

    def _const_unary(self) -> int:
        kind, text, pos = self.tok
        if kind == "int":
            self._advance()
            return int_literal(text, pos)
        if kind == "(":
            self._advance()
            value = self._const_expr()
            self._expect(")", "')'")
            return value
        if kind in ("-", "+", "~", "!"):
            self._advance()
            value = self._const_unary()
            return wrap64({"-": -value, "+": value, "~": ~value, "!": int(not value)}[kind])
        raise self._unexpected("expected an operand")


def fold(op: str, a: int, b: int, pos: int) -> int:
    if op in ("/", "%") and b == 0:
        raise StatementError(pos, "division by zero in a constant expression", op)
    if op in ("<<", ">>") and not 0 <= b < 64:
        raise StatementError(pos, f"shift by {b} in a constant expression", op)
    if op in ("/", "%"):
        # C truncates toward zero; exactly, in integers (a float quotient is wrong past 2**53).
        quotient = abs(a) // abs(b) if (a < 0) == (b < 0) else -(abs(a) // abs(b))
        return quotient if op == "/" else a - quotient * b
    return wrap64({
        "||": lambda: int(bool(a or b)), "&&": lambda: int(bool(a and b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
        "*": lambda: a * b,
    }[op]())


def wrap64(value: int) -> int:
    """Constant expressions are evaluated in 64 bits (PTX ISA 4.6.2): a result outside
    [-2**63, 2**64) wraps around, as it would in a 64-bit register."""
    if -(1 << 63) <= value < (1 << 64):
        return value
    value &= (1 << 64) - 1
    return value


def int_literal(text: str, pos: int) -> int:
    try:
        value = int_value(text)
    except ValueError:
        raise StatementError(pos, f"malformed integer constant '{text}'", text) from None
    if value >= 1 << 64:
        raise StatementError(pos, f"integer constant '{text}' does not fit in 64 bits", text)
    return value


def float_literal(text: str, negative: bool) -> ast.FloatImm:
    if text[:2] in ("0f", "0F"):
        bits, width = int(text[2:], 16), 32
    elif text[:2] in ("0d", "0D"):
        bits, width = int(text[2:], 16), 64
    else:
        bits, width = struct.unpack("<Q", struct.pack("<d", float(text)))[0], 64
    if negative:
        bits ^= 1 << (width - 1)
    return ast.FloatImm(bits, width)


# --- modifier classification ---------------------------------------------------------------------

_INDEX: dict[str, dict[str, str]] = {}


def modifier_index(op: Op) -> dict[str, str]:
    """modifier value -> group name ('' for a type) for one opcode."""
    index = _INDEX.get(op.name)
    if index is None:
        index = {t: "" for t in op.types}
        for group, values in op.groups.items():
            for value in values.values:
                index.setdefault(value, group)
        _INDEX[op.name] = index
    return index


def classify(opcode: str, modifiers: str, pos: int) -> ast.Spec:
    op = OPS.get(opcode)
    if op is None:
        raise StatementError(pos, f"unknown instruction '{opcode}'", opcode)
    words = tuple(modifiers[1:].split(".")) if modifiers else ()
    index = modifier_index(op)
    types: list[str] = []
    groups: dict[str, str | tuple[str, ...]] = {}
    for word in words:
        group = index.get(word)
        if group is None:
            raise StatementError(pos, f"'.{word}' is not a modifier of '{opcode}' "
                              f"(see {op.url})", f"{opcode}{modifiers}")
        if group == "":
            types.append(word)
        elif op.groups[group].multi:
            # Repeats are kept: `wmma.mma.row.row` gives the layouts of A and B in order.
            groups[group] = groups.get(group, ()) + (word,)
        elif group in groups:
            raise StatementError(pos, f"'.{groups[group]}' and '.{word}' both given to '{opcode}' "
                              f"(at most one {group} modifier)", f"{opcode}{modifiers}")
        else:
            groups[group] = word
    return ast.Spec(opcode, words, tuple(types), groups)
