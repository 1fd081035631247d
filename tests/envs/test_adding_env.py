"""docs/envs.md's "An env: 1 folder + 1 line", run as written: the example's folder is
found by setup.py, its data/ matches pyproject's package data, and its one line registers it."""

import ast
import glob
import importlib.util
import re
import sys
from pathlib import Path

import gymnasium
import pytest
import tomllib

import agentgym.envs
from agentgym import registry

ROOT = Path(__file__).resolve().parents[2]
LINE = "envs/__init__.py: the one line, in BUILTIN_ENVS"


def _blocks() -> dict[str, str]:
    """The section's code blocks, keyed by the comment on their first line."""
    text = (ROOT / "docs" / "envs.md").read_text(encoding="utf-8")
    match = re.search(r"^### An env: 1 folder \+ 1 line\n(.*?)^##", text, re.M | re.S)
    assert match, "docs/envs.md lost its 'An env: 1 folder + 1 line' section"
    return dict(re.findall(r"```python\n# ([^\n]+)\n(.*?)```", match.group(1), re.S))


@pytest.fixture
def example(tmp_path, monkeypatch):
    """The example's files written under tmp_path/envs/, a folder agentgym.envs also searches."""
    blocks = _blocks()
    for path, code in blocks.items():
        if path.startswith("envs/guess/"):
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(code, encoding="utf-8")
    monkeypatch.setattr(
        agentgym.envs, "__path__", [*agentgym.envs.__path__, str(tmp_path / "envs")]
    )
    yield tmp_path, blocks
    for name in [m for m in sys.modules if m.startswith("agentgym.envs.guess")]:
        del sys.modules[name]
    registry.ENVS.items.pop("agentgym/Guess-v0", None)
    gymnasium.registry.pop("agentgym/Guess-v0", None)


def test_the_example_is_one_folder_and_one_line(example):
    _, blocks = example
    files = [p for p in blocks if p.startswith("envs/")]
    assert {Path(p).parts[:2] for p in files if p != LINE} == {("envs", "guess")}
    assert len(blocks[LINE].strip().splitlines()) == 1


def test_setup_finds_the_folder_and_packages_its_data(example):
    root, _ = example
    (root / "agentgym").mkdir()
    (root / "agentgym" / "__init__.py").touch()
    (root / "envs" / "guess" / "data").mkdir()
    (root / "envs" / "guess" / "data" / "words.txt").write_text("seven\n")
    spec = importlib.util.spec_from_file_location("agentgym_setup", ROOT / "setup.py")
    assert spec and spec.loader
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)  # defines packages(); setup() runs only as __main__
    assert "agentgym.envs.guess" in setup.packages(root)
    with open(ROOT / "pyproject.toml", "rb") as fh:
        package_data = tomllib.load(fh)["tool"]["setuptools"]["package-data"]["agentgym.envs"]
    shipped = {f for p in package_data for f in glob.glob(str(root / "envs" / p), recursive=True)}
    assert str(root / "envs" / "guess" / "data" / "words.txt") in shipped


def test_the_line_registers_an_env_that_conforms(example, monkeypatch):
    _, blocks = example
    entry = ast.literal_eval("{" + blocks[LINE] + "}")
    monkeypatch.setattr(agentgym.envs, "BUILTIN_ENVS", {**agentgym.envs.BUILTIN_ENVS, **entry})
    agentgym.envs.register_envs()
    assert "agentgym/Guess-v0" in [s.id for s in agentgym.list_envs()]
    exec(compile(blocks["try it"], "docs/envs.md", "exec"), {})  # runs check_env
