import subprocess
import sys
import warnings
from importlib.metadata import EntryPoint

import gymnasium
import pytest

import agentgym
from agentgym import plugins, registry


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
    monkeypatch.setattr(plugins, "entry_points", lambda group: [broken])
    monkeypatch.setattr(registry.ENVS, "loaded", False)
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


def test_this_distributions_agents_arrive_through_the_entry_point_group():
    from importlib.metadata import entry_points

    from agentgym.agent import AGENTS, agent_factory

    assert {"also", "pa_moe"} <= {ep.name for ep in entry_points(group="agentgym.agents")}
    assert {"openai", "litellm", "hf", "also", "pa_moe", "search"} <= set(AGENTS.names())
    env = agentgym.make("Clarify-v0")
    assert type(agent_factory("also:expert")(env)).__name__ == "AlsoAgent"


def test_the_agent_registry_reads_its_entry_points_once(monkeypatch):
    from agentgym.agent import AGENTS

    calls = []
    monkeypatch.setattr(plugins, "entry_points", lambda group: calls.append(group) or [])
    monkeypatch.setattr(AGENTS, "items", {})
    monkeypatch.setattr(AGENTS, "entry_points", [])
    monkeypatch.setattr(AGENTS, "loaded", False)
    for _ in range(3):
        assert AGENTS.find("also") is None  # as if never installed: the core names no agent
        assert "hf" in AGENTS.names()
    assert calls == ["agentgym.agents"]


def test_register_agent_gives_a_spec(monkeypatch):
    from agentgym.agent import AGENTS, RandomAgent, agent_factory

    monkeypatch.setitem(AGENTS.items, "seeded", lambda arg, env: RandomAgent(env, int(arg)))
    assert agent_factory("seeded:7")(None).rng.random() == RandomAgent(None, 7).rng.random()
    with pytest.raises(ValueError, match=r"allowed: expert, human, random, llm, .*seeded:\.\.\."):
        agent_factory("seedy:1")


def test_isolate_takes_the_providers_registry(monkeypatch):
    from agentgym.sandbox.local import LocalProvider
    from agentgym.sandbox.providers import PROVIDERS, register_provider

    with pytest.raises(ValueError, match="isolate='mybox': use one of docker, local"):
        registry.check_isolate("mybox")
    monkeypatch.setattr(PROVIDERS, "items", dict(PROVIDERS.items))
    monkeypatch.setattr(registry.ISOLATION, "items", dict(registry.ISOLATION.items))
    register_provider("mybox", LocalProvider)
    registry.check_isolate("mybox")  # a plug-in provider is accepted like a built-in


def test_isolation_comes_from_its_entry_point_group(monkeypatch):
    monkeypatch.setattr(plugins, "entry_points", lambda group: [])  # no sandbox plug-in
    monkeypatch.setattr(registry.ISOLATION, "items", {})
    monkeypatch.setattr(registry.ISOLATION, "entry_points", [])
    monkeypatch.setattr(registry.ISOLATION, "loaded", False)
    with pytest.raises(ValueError, match="isolate='docker': no sandbox plug-in is installed"):
        registry.check_isolate("docker")


def test_a_broken_plugin_item_warns_and_says_so(monkeypatch):
    broken = EntryPoint(name="bad", value="no_such_module_xyz:Provider", group="g")
    monkeypatch.setattr(
        plugins, "entry_points", lambda group, name=None: [broken] if name in (None, "bad") else []
    )
    reg: plugins.Registry[object] = plugins.Registry("widget", "g")
    assert reg.names() == ["bad"]
    with (
        pytest.warns(UserWarning, match="widget plugin 'bad'"),
        pytest.raises(ValueError, match="widget 'bad' is installed but broken"),
    ):
        reg.get("bad")
    with pytest.raises(KeyError, match=r"unknown widget 'nope'; registered: \['bad'\]"):
        reg.get("nope")


@pytest.mark.parametrize(
    "env_id", [s.id for s in agentgym.list_envs() if s.entry_point.startswith("agentgym.envs.")]
)
def test_help_on_every_env_class_shows_its_card(env_id):
    import pydoc

    shown = pydoc.render_doc(registry.spec(env_id).load(), renderer=pydoc.plaintext)
    assert "=" * 20 in shown  # the card's table
    assert env_id.split("/")[1] in shown or env_id.split("/")[1].split("-")[0] in shown
    for row in ("Actions", "Reward", "Expert"):
        assert row in shown, f"{env_id}'s card has no {row} row"


def test_a_lookup_during_another_threads_first_load_waits_for_it(monkeypatch):
    """The first lookups may come from an evaluation's worker threads at once (``hf:`` agents
    read the policy names per episode): none may see the registry half read."""
    import threading
    import time

    go = threading.Event()
    item = EntryPoint(name="x", value="agentgym.agent:RandomAgent", group="g")

    def slow_entry_points(group):
        go.wait(5)
        return [item]

    monkeypatch.setattr(plugins, "entry_points", slow_entry_points)
    reg: plugins.Registry[object] = plugins.Registry("widget", "g")
    seen: list[list[str]] = []
    threads = [threading.Thread(target=lambda: seen.append(reg.names())) for _ in range(2)]
    threads[0].start()
    time.sleep(0.05)  # the first thread is reading the entry points
    threads[1].start()
    time.sleep(0.05)
    go.set()
    for t in threads:
        t.join(5)
    assert seen == [["x"], ["x"]]
