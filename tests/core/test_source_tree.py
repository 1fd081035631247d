"""A clone's root imports as an install does: the README's example runs there without `-e`.

A plain `pip install .` puts no finder of its own on the path, so Python started at the clone's root
imports the clone's `agentgym/`, whose `envs/`, `agents/`, `sandbox/` and `tasks/` sit beside it. The
subprocess drops setuptools' editable finder (what `-e` adds) to stand where a plain install
leaves a user; `scripts/check-base-install.sh` runs the same from a fresh venv with both installs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import tomllib

from agentgym.source_tree import REMAPPED, source_root

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_EDITABLE_FINDER = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
import agentgym
env = agentgym.make("Clarify-v0")
obs, info = env.reset(seed=0, options={"task": "clarify-products-test-0000"})
import agentgym.envs, agentgym.agents, agentgym.sandbox, agentgym.tasks
print(agentgym.envs.__file__, agentgym.tasks.__file__)
"""


def test_the_clone_root_imports_envs_from_its_own_folders():
    out = subprocess.run(
        [sys.executable, "-c", WITHOUT_EDITABLE_FINDER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    envs_init, tasks_init = out.stdout.split()
    assert Path(envs_init) == ROOT / "envs" / "__init__.py"
    assert Path(tasks_init) == ROOT / "tasks" / "__init__.py"


def test_only_the_four_folders_join_the_package():
    code = "import agentgym, importlib.util; print(importlib.util.find_spec('agentgym.tests'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "None", out.stderr


def test_the_mapping_is_pyprojects():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_dir = pyproject["tool"]["setuptools"]["package-dir"]
    assert {k: v for k, v in package_dir.items() if k != "agentgym"} == REMAPPED


def test_an_installed_copy_is_left_alone(tmp_path):
    site = tmp_path / "site-packages"
    (site / "agentgym" / "envs").mkdir(parents=True)
    assert source_root(site / "agentgym") is None
    assert source_root(ROOT / "agentgym") == ROOT
