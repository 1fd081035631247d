"""A clone imports as installed: ``envs/``, ``agents/``, ``sandbox/`` and ``tasks/`` as ``agentgym.*``.

An install lays those folders out inside the package (pyproject's ``package-dir``). In a source
tree they sit beside ``agentgym/``, and Python started at the tree's root finds that ``agentgym/``
first, whatever is installed. So when the package is imported from a source tree, a meta-path
finder maps exactly those four names onto their folders: nothing else of the tree (``tests``,
``experiments``) becomes part of the package, and an installed copy is never mixed in.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

REMAPPED = {
    "agentgym.envs": "envs",
    "agentgym.agents": "agents",
    "agentgym.sandbox": "sandbox",
    "agentgym.tasks": "tasks",
}
"""Package name -> source folder, as pyproject's ``package-dir`` maps them (a test checks both)."""


class SourceTreeFinder(importlib.abc.MetaPathFinder):
    """Finds the remapped packages in one source tree (their subpackages follow their paths)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        folder = REMAPPED.get(fullname)
        if folder is None:
            return None
        init = self.root / folder / "__init__.py"
        return importlib.util.spec_from_file_location(
            fullname, init, submodule_search_locations=[str(init.parent)]
        )


def source_root(package_dir: Path) -> Path | None:
    """The source tree ``package_dir`` (``agentgym/``) belongs to, or None for an installed copy."""
    root = package_dir.parent
    laid_out = all((root / folder / "__init__.py").is_file() for folder in REMAPPED.values())
    if (root / "pyproject.toml").is_file() and laid_out and not (package_dir / "envs").exists():
        return root
    return None


def install_finder(package_dir: Path) -> None:
    """Map the remapped packages onto their folders when ``package_dir`` is in a source tree."""
    root = source_root(package_dir)
    if root is None or any(
        isinstance(f, SourceTreeFinder) and f.root == root for f in sys.meta_path
    ):
        return
    sys.meta_path.insert(0, SourceTreeFinder(root))
