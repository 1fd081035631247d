"""The package's modules import one another without circles.

The graph is built statically: every module of ``agentgym/`` and of the folders installed as
``agentgym.envs``, ``agentgym.agents`` and ``agentgym.sandbox``, with an edge for each import that
runs when the module is imported (at module level, in a class body, under ``if``/``try``/``with``),
but not those under ``if TYPE_CHECKING:``. An edge points at the deepest module an import names
(``from a.b import c`` is ``a.b.c`` when that is a module, else ``a.b``); the parent packages a
dotted import also runs are left out, as every import graph tool does, since a package is being
initialised before its modules are.

Two graphs are checked: the one of import time, and the one that adds the imports deferred into
functions. A deferred import that closes a circle is a circle all the same, only hidden: the two
modules still need each other, and which loads first decides whether it works.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "agentgym": ROOT / "agentgym",
    "agentgym.envs": ROOT / "envs",
    "agentgym.agents": ROOT / "agents",
    "agentgym.sandbox": ROOT / "sandbox",
}
"""Each package of the distribution and the folder it is installed from (pyproject's
``package-dir``)."""


def modules() -> dict[str, Path]:
    """Every module of the distribution by dotted name (a package by its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for package, folder in FOLDERS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if any(not p.isidentifier() for p in parts):  # data or template folders
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_in(
    body: list[ast.stmt], deferred: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run when the module runs (``deferred``: and those
    in its functions, which run when they are called); never those under ``TYPE_CHECKING``."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if deferred:
                yield from imports_in(node.body, deferred)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from imports_in(node.body, deferred)
            yield from imports_in(node.orelse, deferred)
        else:  # class bodies, try/except/else/finally, with, for, while, match
            for field in ("body", "orelse", "finalbody"):
                yield from imports_in(getattr(node, field, []), deferred)
            for handler in getattr(node, "handlers", []):
                yield from imports_in(handler.body, deferred)
            for case in getattr(node, "cases", []):
                yield from imports_in(case.body, deferred)


def _deepest(name: str, known: dict[str, Path]) -> str | None:
    """The deepest module of ours that ``name`` is or lies in, or None (another library)."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = ".".join(parts[:n])
        if candidate in known:
            return candidate
    return None


def imports_of(module: str, path: Path, known: dict[str, Path], deferred: bool = False) -> set[str]:
    """The modules of ours that ``module`` imports when it is imported (``deferred``: or when
    one of its functions runs)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in imports_in(ast.parse(path.read_text(encoding="utf-8")).body, deferred):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            names = [f"{base}.{alias.name}" for alias in node.names]
        out |= {t for t in (_deepest(n, known) for n in names) if t is not None}
    return out - {module}


@functools.cache
def import_graph(deferred: bool = False) -> dict[str, set[str]]:
    """Each module of the distribution -> the modules of it that it imports at import time
    (``deferred``: or in any of its functions)."""
    known = modules()
    return {m: imports_of(m, p, known, deferred) for m, p in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_graph_sees_the_package() -> None:
    graph = import_graph()
    assert "agentgym.train.trainer" in graph and "agentgym.envs.clarify" in graph
    assert "agentgym.train.config" in graph["agentgym.train.trainer"]


def test_tarjan_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_tarjan_agrees_with_networkx() -> None:
    nx = pytest.importorskip("networkx")
    graph = import_graph(deferred=True)
    expected = nx.DiGraph([(a, b) for a, targets in graph.items() for b in targets])
    components = [sorted(c) for c in nx.strongly_connected_components(expected) if len(c) > 1]
    assert cycles(graph) == sorted(components)


def _shown(found: list[list[str]]) -> str:
    return f"{len(found)} import circle(s):\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_import_circles() -> None:
    found = cycles(import_graph())
    assert not found, _shown(found)


def test_no_deferred_import_circles() -> None:
    found = cycles(import_graph(deferred=True))
    assert not found, _shown(found)


def test_train_config_imports_no_torch() -> None:
    """The trainer's config is a leaf: importing it, to read or check a config, loads no torch."""
    code = "import agentgym.train.config, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
