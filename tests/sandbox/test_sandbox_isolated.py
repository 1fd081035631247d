"""Any registered env, isolated in a sandbox through the generic worker: same contract, same
observations, a crashed worker replaced."""

from __future__ import annotations

import json

import pytest

import agentgym
from agentgym.sandbox.isolated_env import IsolatedEnv, RemoteError
from agentgym.sandbox.local import bwrap_works
from agentgym.sandbox.testing import require_docker
from agentgym.sandbox.worker import Worker, to_json
from agentgym.testing import check_env

TASK = "clarify-products-test-0000"
ACTIONS = ["ask[product=Bookshelf]", "nonsense", "answer[1]"]


def trace(env, actions):
    out = [env.reset(seed=3, options={"task": TASK})[0]]
    for a in actions:
        out.append(env.step(a)[:4])
    return out


@pytest.fixture(scope="module", params=["local", "docker"])
def isolated(request):
    if request.param == "docker":
        require_docker(need_current_image=True)
    elif not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    env = IsolatedEnv("Clarify-v0", provider=request.param)
    yield env
    env.close()


def test_isolated_env_passes_the_conformance_kit(isolated):
    check_env(isolated)


def test_isolated_env_matches_the_in_process_env(isolated):
    assert trace(isolated, ACTIONS) == trace(agentgym.make("Clarify-v0"), ACTIONS)
    assert isolated.system_prompt == agentgym.make("Clarify-v0").system_prompt
    assert isolated.env_class == "agentgym.envs.clarify.env:ClarifyEnv"


def test_a_crashed_worker_is_replaced_mid_episode(isolated):
    isolated.reset(seed=3, options={"task": TASK})
    first = isolated.step(ACTIONS[0])
    isolated.provider.remove(isolated._handle)  # the worker's sandbox vanishes
    before = isolated.restarts
    second = isolated.step(ACTIONS[2])
    assert isolated.restarts == before + 1
    reference = agentgym.make("Clarify-v0")
    reference.reset(seed=3, options={"task": TASK})
    assert (
        first[:4] == reference.step(ACTIONS[0])[:4] and second[:4] == reference.step(ACTIONS[2])[:4]
    )


def test_env_errors_come_back_as_exceptions(isolated):
    with pytest.raises(KeyError, match="no task 'nope'"):
        isolated.reset(options={"task": "nope"})


def test_worker_protocol_in_process():
    worker = Worker()
    assert not worker.handle({"id": 1, "op": "step", "action": "x"})["ok"]
    made = worker.handle({"id": 2, "op": "make", "env_id": "Clarify-v0"})
    assert made["ok"] and made["protocol"] == 1 and made["suite"] == "clarify/test"
    reply = worker.handle({"id": 3, "op": "reset", "seed": 0, "options": {"task": TASK}})
    assert reply["task"]["id"] == TASK and json.dumps(reply)
    bad = worker.handle({"id": 4, "op": "fly"})
    assert bad["error"] == "ValueError" and "unknown op" in bad["message"]
    assert to_json({"a": (1, {2}), "b": None}) == {"a": [1, [2]], "b": None}


def test_unknown_env_fails_clearly():
    if not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    with pytest.raises((KeyError, RemoteError), match="no environment 'Nope-v0'"):
        IsolatedEnv("Nope-v0", provider="local")


def test_the_runner_evaluates_isolated_envs(monkeypatch, tmp_path):
    """What ``agentgym eval --isolate local`` does: the runner's envs are IsolatedEnv proxies."""
    if not bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    from agentgym.registry import EnvSpec
    from agentgym.task import TaskSuite

    made: list[IsolatedEnv] = []
    build = EnvSpec.make

    def make(self, isolate=None, **kwargs):  # the runner builds every env through its spec
        made.append(build(self, isolate, **kwargs))
        return made[-1]

    monkeypatch.setattr(EnvSpec, "make", make)
    suite = TaskSuite.load("clarify/test").filter(limit=4)
    try:
        result = agentgym.evaluate(
            suite, "expert", concurrency=2, db=tmp_path / "runs.db", isolate="local"
        )
        assert result.progress.done == 4 and result.progress.successes == 4
        assert made and all(isinstance(env, IsolatedEnv) for env in made)
    finally:
        for env in made:
            env.close()
