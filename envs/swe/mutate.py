"""SWE-smith-style bug injection: small, syntax-preserving mutations of one function at a time.

Each mutation rewrites one node of a function's body (a comparison, an arithmetic or boolean
operator, a small integer or boolean constant, a ``not``, the order of two call arguments, a
returned value, a one-line statement) and leaves every other character of the file as it was, so
the diff an agent must find is one line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

SWAP_COMPARE: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
SWAP_BINOP: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
}


@dataclass(frozen=True)
class Mutation:
    """One mutated function: its file, name, source before and after, and the operator used."""

    path: str
    function: str
    original: str
    mutated: str
    operator: str
    line: int
    """Line of the change in the file (1-based)."""


def functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """Module-level functions and the methods of module-level classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, ast.FunctionDef))


def _replacement(node: ast.AST, source: str) -> Iterator[tuple[str, str]]:
    """(operator name, new source of ``node``) for every mutation of this node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAP_COMPARE:
        yield (
            "compare",
            ast.unparse(
                ast.Compare(node.left, [SWAP_COMPARE[type(node.ops[0])]()], node.comparators)
            ),
        )
    elif isinstance(node, ast.BinOp) and type(node.op) in SWAP_BINOP:
        yield (
            "arithmetic",
            ast.unparse(ast.BinOp(node.left, SWAP_BINOP[type(node.op)](), node.right)),
        )
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolean", ast.unparse(ast.BoolOp(other, node.values))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "negation", ast.unparse(node.operand)
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        yield "constant", repr(not node.value)
    elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= 2:
        yield "off-by-one", repr(node.value + 1)
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not node.keywords:
        if not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            args = [node.args[1], node.args[0], *node.args[2:]]
            yield "argument-order", ast.unparse(ast.Call(node.func, args, []))
    elif isinstance(node, ast.Return) and node.value is not None and node.lineno == node.end_lineno:
        yield "return-value", "return None"
    elif isinstance(node, (ast.Assign, ast.AugAssign)) and node.lineno == node.end_lineno:
        yield "dropped-statement", "pass"


def _offsets(source: str) -> list[int]:
    starts, total = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(total)
        total += len(line.encode("utf-8"))
    return starts


def mutations(path: str, source: str) -> Iterator[Mutation]:
    """Every single-node mutation of every function in ``source``, in file order."""
    tree = ast.parse(source)
    raw = source.encode("utf-8")
    starts = _offsets(source)
    for func in functions(tree):
        f_start = starts[func.lineno - 1] + func.col_offset
        f_end = starts[(func.end_lineno or func.lineno) - 1] + (func.end_col_offset or 0)
        original = raw[f_start:f_end].decode()
        body = func.body[1:] if ast.get_docstring(func) else func.body
        for stmt in body:
            for node in ast.walk(stmt):
                if not hasattr(node, "end_col_offset"):
                    continue
                a = starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
                b = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
                for op, new in _replacement(node, source):
                    mutated = (raw[f_start:a] + new.encode() + raw[b:f_end]).decode()
                    if mutated != original and _compiles(mutated):
                        yield Mutation(path, func.name, original, mutated, op, node.lineno)  # type: ignore[attr-defined]


def _compiles(text: str) -> bool:
    import textwrap

    try:
        ast.parse(textwrap.dedent(text))
        return True
    except SyntaxError:
        return False
