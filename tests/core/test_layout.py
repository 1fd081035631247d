"""Where things live: an adapter never defines an env. Env families (TextArena's games, skyrl-gym's
GSM8K envs) live in ``envs/``; ``agentgym/integrations/`` holds only adapters to other stacks, and
the ``agentgym.envs`` entry points name env packages, never an adapter."""

from __future__ import annotations

import importlib
import pkgutil
import types
from pathlib import Path

import gymnasium
import tomllib
from pettingzoo import ParallelEnv

import agentgym.integrations
from agentgym.env import TextEnv
from agentgym.parallel_env import TextParallelEnv
from agentgym.plugins import load_ref

ROOT = Path(__file__).resolve().parents[2]
ENV_BASES = (TextEnv, TextParallelEnv, gymnasium.Env, ParallelEnv)
ADAPTER_ENVS = {
    "agentgym.integrations.openenv.client.OpenEnvEnv": "the client of any OpenEnv server: it "
    "translates OpenEnv's reset/step into the Env contract and has no rules of its own",
}
"""Env classes that are adapters (a remote env seen through another stack's protocol)."""


def integration_modules() -> list[types.ModuleType]:
    """Every module under ``agentgym/integrations/`` that imports here (an adapter whose library
    is not installed is left out)."""
    modules = [agentgym.integrations]
    prefix = agentgym.integrations.__name__ + "."
    for info in pkgutil.walk_packages(agentgym.integrations.__path__, prefix):
        try:
            modules.append(importlib.import_module(info.name))
        except ImportError:
            continue
    return modules


def all_subclasses(base: type) -> set[type]:
    found, todo = set(), [base]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def envs_defined_under(package: str) -> list[str]:
    """The env classes (by ``module.qualname``) whose module is ``package`` or below it: those the
    modules expose and any built since (classes made inside functions included)."""
    names = set()
    for cls in {c for base in ENV_BASES for c in {base, *all_subclasses(base)}}:
        if cls.__module__ == package or cls.__module__.startswith(package + "."):
            names.add(f"{cls.__module__}.{cls.__qualname__}")
    return sorted(names)


def test_no_env_class_is_defined_under_integrations():
    modules = {m.__name__ for m in integration_modules()}
    assert "agentgym.integrations.skyrl_gym" in modules
    misplaced = [n for n in envs_defined_under("agentgym.integrations") if n not in ADAPTER_ENVS]
    assert misplaced == [], f"env classes belong in envs/<family>/, not in an adapter: {misplaced}"


def test_the_check_finds_an_env_class_made_inside_a_function():
    def build() -> type:
        class Inner(TextParallelEnv):
            pass

        Inner.__module__ = "elsewhere.integrations.adapter"
        return Inner

    keep = build()
    assert envs_defined_under("elsewhere.integrations") == [
        "elsewhere.integrations.adapter.test_the_check_finds_an_env_class_made_inside_a_function."
        "<locals>.build.<locals>.Inner"
    ]
    assert keep.__name__ == "Inner"


def test_env_entry_points_name_env_packages_and_resolve():
    """pyproject's ``agentgym.envs`` group, read from the source (the installed metadata may be
    older): each entry is a registrar in ``agentgym.envs``, and it imports."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    group = pyproject["project"]["entry-points"]["agentgym.envs"]
    assert {"builtin", "textarena", "skyrl"} <= set(group)
    for name, ref in group.items():
        assert ref.split(":")[0].split(".")[:2] == ["agentgym", "envs"], (name, ref)
        assert callable(load_ref(ref)), (name, ref)
