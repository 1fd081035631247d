"""Package discovery for the folders that install under another name (envs/ as agentgym.envs ...).

setuptools' automatic discovery does not follow pyproject's ``package-dir``, so the packages were
listed by hand there; here they are found, and a new env or method folder needs no edit. The rest
of the configuration is in pyproject.toml.
"""

import runpy
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
REMAPPED: dict[str, str] = runpy.run_path(str(ROOT / "agentgym" / "source_tree.py"))["REMAPPED"]
"""Installed name -> source folder, as pyproject's ``package-dir`` maps them (one list, which the
source-tree finder also uses)."""


def packages(root: Path = ROOT) -> list[str]:
    """Every package: agentgym/ and its subpackages, each remapped folder and its subpackages."""
    found = find_packages(where=str(root), include=["agentgym", "agentgym.*"])
    for name, folder in REMAPPED.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(where=str(root / folder))]
    return sorted(found)


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import packages()
    setup(packages=packages())
