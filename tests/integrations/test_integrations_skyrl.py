"""SkyRL-gym both ways, on the real skyrl-gym package: its built-in GSM8K envs as agentgym envs,
and agentgym envs driven by skyrl-gym's own `make` and init/step loop."""

from __future__ import annotations

import pytest
import skyrl_gym

import agentgym
from agentgym.envs import skyrl, textarena
from agentgym.envs.skyrl import BUILTIN
from agentgym.integrations.skyrl_gym import register_skyrl
from agentgym.testing import check_env


@pytest.fixture(autouse=True, scope="module")
def registered():
    """The families' own registrars, so these tests do not depend on the installed entry points."""
    skyrl.register_envs()
    textarena.register_envs()


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_skyrl_builtin_envs_conform_and_the_expert_solves_them(name):
    env = agentgym.make(f"skyrl/{name}")
    check_env(env)  # its first three tasks, the expert included
    result = agentgym.evaluate(env.suite.filter(limit=5), "expert")
    assert [e.success for e in result.new_episodes] == [True] * 5


def test_a_wrong_answer_scores_zero_as_skyrl_grades_it():
    env = agentgym.make("skyrl/gsm8k")
    env.reset(options={"task": "arith-0"})
    _, reward, terminated, _, info = env.step("#### 1")
    assert terminated and reward == 0.0 and info["valid"] and not info["success"]
    env.reset(options={"task": "arith-0"})
    _, reward, terminated, _, info = env.step("eighty-eight")
    assert terminated and reward == 0.0 and info["valid"] is False


@pytest.mark.parametrize(
    "env_id,task",
    [("textarena/TowerOfHanoi-v0", "TowerOfHanoi-v0-seed3"), ("agentgym/OversightAgent-v0", None)],
)
def test_skyrl_make_and_step_loop_drive_an_agentgym_env_to_the_experts_success(env_id, task):
    name = register_skyrl()
    assert name in skyrl_gym.registry
    env = skyrl_gym.make(name, env_config={}, extras={"env_id": env_id, "task": task, "seed": 0})
    prompt, meta = env.init([{"role": "user", "content": "(the dataset prompt)"}])
    assert prompt[0]["role"] == "system" and prompt[-1]["role"] == "user" and meta["task_id"]
    total, done = 0.0, False
    while not done:
        out = env.step(env.env.unwrapped.expert_action())
        total, done = total + out["reward"], out["done"]
        assert out["observations"] == [] if done else out["observations"][0]["role"] == "user"
    assert env.get_metrics()["success"] == 1.0
    env.close()


def test_skyrl_env_needs_an_env_id():
    register_skyrl()
    with pytest.raises(ValueError, match="env_id"):
        skyrl_gym.make("agentgym", env_config={}, extras={})
