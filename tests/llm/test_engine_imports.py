"""The engine package's modules form no import circle, and importing it loads neither torch nor
vLLM (the base install imports it to read engine names and dtypes)."""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import agentgym.llm.engine as package

PACKAGE = "agentgym.llm.engine"
FOLDER = Path(package.__file__).parent


def _imports(path: Path) -> set[str]:
    """Engine modules ``path`` imports, at module level or inside functions alike."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}
    return {n for n in found if n == PACKAGE or (FOLDER / f"{n.rsplit('.', 1)[1]}.py").is_file()}


def test_the_engine_modules_import_each_other_in_no_circle():
    graph = {
        PACKAGE if p.stem == "__init__" else f"{PACKAGE}.{p.stem}": _imports(p)
        for p in FOLDER.glob("*.py")
    }
    assert len(graph) >= 12
    for name, deps in graph.items():  # a submodule that imported the package would loop back
        if name != PACKAGE:
            assert PACKAGE not in deps, f"{name} imports the package itself"
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as e:
        raise AssertionError(f"import circle: {' -> '.join(e.args[1])}") from None
    assert order.index(f"{PACKAGE}.request") < order.index(f"{PACKAGE}.llm_engine")


def test_importing_the_package_loads_neither_torch_nor_vllm():
    code = (
        "import sys, agentgym.llm.engine as e; "
        "e.load_engine, e.check_dtype, e.Engine; "
        "print(sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
