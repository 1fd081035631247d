"""tau-bench's and tau2's ``calculate`` tool without ``eval``: same results, bounded work.

Both benchmarks check the characters (digits, ``+ - * / ( ) .``, spaces) and then ``eval`` the
expression, so ``9**9**9`` runs for ever and a 100,000-deep parenthesis crashes the parser. Here
the expression is parsed with :mod:`ast` and only numbers, unary signs and ``+ - * / // % **`` are
evaluated, with Python's own arithmetic (so every ordinary expression gives the benchmarks' exact
result string), and with limits on length, nesting, exponents and integer size.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

MAX_CHARS = 1_000
MAX_INT_BITS = 4_096
"""Integers beyond this (about 1,233 digits) are refused: an exact product of two of them is cheap,
but powers of them are not."""

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


def calculate(expression: str) -> str:
    """The value rounded to 2 decimals, as a string (``"4.0"`` for ``2 + 2``)."""
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")
    if len(expression) > MAX_CHARS:
        raise ValueError(f"Expression too long (at most {MAX_CHARS} characters)")
    try:
        return str(round(float(_value(ast.parse(expression.strip(), mode="eval").body)), 2))
    except (RecursionError, MemoryError):
        raise ValueError("Expression nested too deeply") from None


def _value(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _checked(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        try:
            return _checked(_BINARY[type(node.op)](left, right))
        except OverflowError:
            raise ValueError("Result too large") from None
    raise ValueError("Unsupported expression")


def _check_power(base: float, exponent: float) -> None:
    """Refuse powers whose exact result would exceed ``MAX_INT_BITS`` (floats overflow by themselves)."""
    exact = isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1
    if exact and exponent * max(1, abs(base).bit_length() - 1) > MAX_INT_BITS:
        raise ValueError("Result too large")


def _checked(value: float) -> float:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ValueError("Result too large")
    return value
