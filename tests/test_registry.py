import subprocess
import sys
import warnings
from importlib.metadata import EntryPoint

import gymnasium
import pytest

import agentgym
from agentgym import registry


def test_every_env_is_in_gymnasiums_registry():
    ids = [s.id for s in agentgym.list_envs()]
    assert "agentgym/Clarify-v0" in ids
    for env_id in ids:
        assert env_id in gymnasium.registry


def test_gymnasium_make_works_in_a_fresh_process():
    code = (
        "import agentgym, gymnasium; env = gymnasium.make('agentgym/Clarify-v0'); "
        "obs, info = env.reset(seed=0); print(info['task_id'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("clarify-")


def test_gymnasium_module_prefix_needs_no_import():
    """Gymnasium's own form ``module:id`` imports agentgym itself (nothing imported beforehand)."""
    code = (
        "import gymnasium; env = gymnasium.make('agentgym:agentgym/Clarify-v0'); "
        "obs, info = env.reset(seed=0); print(info['task_id'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("clarify-")


def test_make_with_or_without_namespace():
    assert type(agentgym.make("Clarify-v0")) is type(agentgym.make("agentgym/Clarify-v0"))
    assert agentgym.make("Clarify-v0").spec.id == "agentgym/Clarify-v0"


def test_unknown_id_suggests_close_matches():
    with pytest.raises(KeyError, match="Did you mean 'agentgym/Clarify-v0'"):
        agentgym.make("Clarfy-v0")


def test_broken_plugin_warns_and_is_skipped(monkeypatch):
    broken = EntryPoint(
        name="broken", value="no_such_module_xyz:register", group=registry.ENTRY_POINT_GROUP
    )
    monkeypatch.setattr(registry, "entry_points", lambda group: [broken])
    monkeypatch.setattr(registry, "_plugins_loaded", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.load_plugins()
    assert any("plugin 'broken'" in str(w.message) for w in caught)
    assert "agentgym/Clarify-v0" in [s.id for s in agentgym.list_envs()]


def test_import_has_no_side_effects(tmp_path):
    code = "import agentgym, agentgym.cli, agentgym.testing"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert out.stdout == "" and out.stderr == "" and list(tmp_path.iterdir()) == []
