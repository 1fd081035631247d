"""The core (``agentgym/``) reaches plug-ins only through registries: no module of it names
``agentgym.agents``, ``agentgym.envs``, ``agentgym.sandbox``, ``experiments`` or ``tests``, by an
import statement at any depth, an ``import_module`` string or a ``"module:attr"`` reference. The one
exception is the CLI's ``sandbox`` subcommand, which is the sandbox's own command line."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "agentgym"
PLUGINS = ("agentgym.agents", "agentgym.envs", "agentgym.sandbox", "experiments", "tests")
ALLOWED = {("cli.py", "sandbox")}
"""(file under agentgym/, function) pairs allowed to import a plug-in: ``agentgym sandbox``."""
IMPORTERS = {"import_module", "__import__", "find_spec", "load_ref", "run_module"}
"""Calls whose string argument is a module path."""
MODULE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.\w+)*(?::[\w.]+)?")


def is_plugin(module: str, bare: bool = True) -> bool:
    """``module`` is a plug-in package or below one (``bare=False``: below one only)."""
    return any((bare and module == p) or module.startswith(p + ".") for p in PLUGINS)


def _package(path: Path) -> str:
    """The package a source file's relative imports resolve against."""
    return ".".join(path.relative_to(ROOT).parent.parts)


def violations(source: str, package: str, filename: str = "") -> list[str]:
    """Every way ``source`` (a module of ``package``) names a plug-in module, one line each."""
    tree = ast.parse(source)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (filename, node.name) in ALLOWED
        ):
            allowed |= {id(n) for n in ast.walk(node)}
    constants = {  # module-level NAME = "text", followed when a name is passed to an importer
        t.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    found = []

    def flag(node: ast.AST, what: str) -> None:
        if id(node) not in allowed:
            found.append(f"{filename}:{getattr(node, 'lineno', '?')}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if is_plugin(alias.name):
                    flag(node, f"import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            for name in [base] + [f"{base}.{a.name}" for a in node.names]:
                if is_plugin(name):
                    flag(node, f"from {base} import ...")
                    break
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            for arg in node.args[:1]:
                text = arg.value if isinstance(arg, ast.Constant) else None
                text = constants.get(arg.id) if isinstance(arg, ast.Name) else text
                if (
                    called in IMPORTERS
                    and isinstance(text, str)
                    and is_plugin(text.partition(":")[0])
                ):
                    flag(node, f"{called}({text!r})")
        elif isinstance(node, ast.Name) and node.id == "__path__":
            flag(node, "reaches packages outside agentgym/ through __path__")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if MODULE_PATH.fullmatch(text) and (
                (":" in text and is_plugin(text.partition(":")[0]))
                or is_plugin(text, bare=False)  # a bare name may be an entry-point group's
            ):
                flag(node, f"the module path {text!r}")
    return found


def test_the_scanner_finds_every_form():
    source = """
import agentgym.envs
import experiments.kit as kit
from agentgym.sandbox.providers import provider_names
from agentgym import agents
from tests import support
from ..envs import household
import importlib
importlib.import_module("agentgym.agents")
importlib.import_module(IN_TREE)
NOTES = "agentgym.envs.household.notes:room_notes"
WORKER = ["python3", "-m", "agentgym.sandbox.worker"]
def sandbox():
    from agentgym.sandbox.cli import sandbox_app
IN_TREE = "experiments"
__path__.append("..")
"""
    lines = sorted(int(f.split(":")[1]) for f in violations(source, "agentgym.sub", "x.py"))
    assert lines == [2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 16]  # not line 8, `import importlib`
    cli = sorted(int(f.split(":")[1]) for f in violations(source, "agentgym.sub", "cli.py"))
    assert cli == [n for n in lines if n != 14]  # the CLI's sandbox subcommand may


@pytest.mark.parametrize(
    "fine",
    [
        'GROUP = "agentgym.envs"',  # an entry-point group is not a module
        'from agentgym.registry import spec\nprint("tests: 3")',
        'import_module("agentgym.train.policy")',
        'REF = "agentgym.chat_agent:hf_agent"',
        'DOC = """Envs live in agentgym.envs.household (see envs/)."""',
    ],
)
def test_the_scanner_leaves_the_core_alone(fine):
    assert violations(fine, "agentgym", "x.py") == []


def test_no_core_module_names_a_plugin():
    found = [
        line
        for path in sorted(CORE.rglob("*.py"))
        for line in violations(
            path.read_text(encoding="utf-8"), _package(path), str(path.relative_to(CORE))
        )
    ]
    assert not found, "the core names plug-in modules (use a registry):\n" + "\n".join(found)
