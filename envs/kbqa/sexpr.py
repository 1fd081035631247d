"""Gold logical forms: GrailQA-style S-expressions, compiled into KBQA-R1 action sequences.

    (JOIN r X)          subjects s with (s r x), x in X      -> Find_relation[X | ~r]
    (JOIN (R r) X)      objects o with (x r o), x in X       -> Find_relation[X | r]
    (AND A B)           A and B; (AND type B) keeps B's members of the type -> Merge[...]
    (COUNT X)           -> Count[X]
    (ARGMAX X r)        members of X with the largest r      -> Order[MAX | X | r] (ARGMIN: MIN)
    (lt r v) ...        every subject with an r value < v    -> Compare[lt | r | v] (le gt ge eq ne)
    (TC X r t)          members of X with r in time t        -> Time_constraint[r | t], Merge

Executing the compiled actions with the env's executor is how gold answers are produced and how
the expert plays; the reference sequence is also Referenced Rejection Sampling's hint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SExpr = str | list["SExpr"]
COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


class SExprError(ValueError):
    """A malformed or unsupported S-expression; the message names the part."""


def parse(text: str) -> SExpr:
    """Parse one S-expression into nested lists of atoms."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text)
    expr, rest = _read(tokens, text)
    if rest:
        raise SExprError(f"trailing tokens {' '.join(rest)!r} in {text!r}")
    return expr


def _read(tokens: list[str], text: str) -> tuple[SExpr, list[str]]:
    if not tokens:
        raise SExprError(f"unexpected end of {text!r}")
    head, rest = tokens[0], tokens[1:]
    if head == ")":
        raise SExprError(f"unexpected ')' in {text!r}")
    if head != "(":
        return head, rest
    items: list[SExpr] = []
    while rest and rest[0] != ")":
        item, rest = _read(rest, text)
        items.append(item)
    if not rest:
        raise SExprError(f"unclosed '(' in {text!r}")
    return items, rest[1:]


def to_actions(text: str, types: Iterable[str]) -> list[str]:
    """The reference action sequence of an S-expression, ending with ``Answer[#k]``."""
    compiler = _Compiler(set(types))
    top = compiler.emit(parse(text))
    if not top.startswith("#"):
        raise SExprError(f"{text!r} is a bare atom, not a query")
    return [*compiler.actions, f"Answer[{top}]"]


def relations_of(text: str) -> set[str]:
    """Every relation an S-expression uses (for zero-shot splits)."""
    found: set[str] = set()

    def walk(e: SExpr) -> None:
        if isinstance(e, list):
            op = e[0] if e and isinstance(e[0], str) else ""
            if op == "JOIN":
                rel = e[1]
                found.add(rel[1] if isinstance(rel, list) else rel)  # type: ignore[arg-type]
            elif op in ("ARGMAX", "ARGMIN") or op in COMPARISONS:
                found.add(str(e[2] if op.startswith("ARG") else e[1]))
            elif op == "TC":
                found.add(str(e[2]))
            for item in e[1:]:
                walk(item)

    walk(parse(text))
    return found


class _Compiler:
    def __init__(self, types: set[str]) -> None:
        self.types = types
        self.actions: list[str] = []

    def add(self, action: str) -> str:
        self.actions.append(action)
        return f"#{len(self.actions) - 1}"

    def emit(self, e: SExpr) -> str:
        if isinstance(e, str):
            return e
        if not e or not isinstance(e[0], str):
            raise SExprError(f"expected an operator, got {e!r}")
        op, args = e[0], e[1:]
        handler = getattr(self, f"_{op.lower()}", None)
        if handler is None:
            raise SExprError(f"unsupported operator {op!r}")
        try:
            return str(handler(*args))
        except TypeError:
            raise SExprError(f"wrong number of arguments to {op}: {e!r}") from None

    def _join(self, relation: SExpr, expr: SExpr) -> str:
        if isinstance(relation, list):
            if len(relation) != 2 or relation[0] != "R":
                raise SExprError(f"expected (R relation), got {relation!r}")
            return self.add(f"Find_relation[{self.emit(expr)} | {relation[1]}]")
        return self.add(f"Find_relation[{self.emit(expr)} | ~{relation}]")

    def _and(self, first: SExpr, second: SExpr) -> str:
        if isinstance(first, str) and first in self.types:
            return self.add(f"Merge[{self.emit(second)} | {first}]")
        a = self.emit(first)
        return self.add(f"Merge[{a} | {self.emit(second)}]")

    def _count(self, expr: SExpr) -> str:
        return self.add(f"Count[{self.emit(expr)}]")

    def _argmax(self, expr: SExpr, relation: SExpr) -> str:
        return self.add(f"Order[MAX | {self.emit(expr)} | {relation}]")

    def _argmin(self, expr: SExpr, relation: SExpr) -> str:
        return self.add(f"Order[MIN | {self.emit(expr)} | {relation}]")

    def _tc(self, expr: SExpr, relation: SExpr, time: SExpr) -> str:
        members = self.emit(expr)
        window = self.add(f"Time_constraint[{relation} | {time}]")
        return self.add(f"Merge[{members} | {window}]")

    def _comparison(self, op: str, relation: SExpr, value: SExpr) -> str:
        return self.add(f"Compare[{op} | {relation} | {value}]")

    def __getattr__(self, name: str) -> object:
        op = name.lstrip("_")
        if op in COMPARISONS:
            return lambda relation, value: self._comparison(op, relation, value)
        raise AttributeError(name)
