"""The conformance kit, run over every registered env (new envs are checked automatically)."""

import warnings

import pytest
from gymnasium.spaces import Discrete

import agentgym
from agentgym.testing import (
    ConformanceError,
    NoOpEnv,
    check_env,
    check_parallel_env,
    noop_suite,
)

SLOW_ENVS = {"agentgym/Swe-v0"}
"""Envs whose check takes over a minute here (Swe: every reset copies a repository into a sandbox)."""


@pytest.mark.parametrize(
    "env_id",
    [
        pytest.param(s.id, marks=[pytest.mark.slow] if s.id in SLOW_ENVS else [])
        for s in agentgym.list_envs()
    ],
)
def test_registered_env_conforms(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(agentgym.make(env_id))


class LazyEnv(NoOpEnv):
    """Breaks the contract: inaction succeeds."""

    def _step(self, action):
        obs, reward, terminated, truncated, info = super()._step("noop")
        return obs, reward, terminated, truncated, {**info, "valid": action == "noop"}


class RaisingEnv(NoOpEnv):
    """Breaks the contract: a malformed action raises."""

    def _step(self, action):
        if action != "noop":
            raise ValueError("bad action")
        return super()._step(action)


class ForgetfulEnv(NoOpEnv):
    """Breaks the contract: restore() does not bring the state back."""

    def restore(self, snapshot):
        pass


@pytest.mark.parametrize(
    "env_cls, rule",
    [
        (LazyEnv, "counts as solved after"),
        (RaisingEnv, "raised ValueError"),
        (ForgetfulEnv, r"restore\(\) does not reproduce"),
    ],
)
def test_kit_catches_broken_envs(env_cls, rule):
    with pytest.raises(ConformanceError, match=rule):
        check_env(env_cls(), tasks=noop_suite(1, length=4).tasks)


class EchoParallelEnv(agentgym.TextParallelEnv):
    """Two seats that hear each other; the episode ends after three steps."""

    metadata = {"name": "echo_v0", "render_modes": ["ansi"], "is_parallelizable": True}

    def __init__(self):
        super().__init__(["left", "right"])

    def reset(self, seed=None, options=None):
        self.agents, self.t = list(self.possible_agents), 0
        return dict.fromkeys(self.agents, "start"), {a: {} for a in self.agents}

    def step(self, actions):
        self.t += 1
        left, right = self.possible_agents
        obs = {left: str(actions.get(right))[:80], right: str(actions.get(left))[:80]}
        done = dict.fromkeys(self.agents, self.t >= 3)
        if self.t >= 3:
            self.agents = []
        return obs, dict.fromkeys(obs, 0.0), done, dict.fromkeys(obs, False), {a: {} for a in obs}


class VanishingEnv(EchoParallelEnv):
    """Breaks the contract: the seats leave without being terminated or truncated."""

    def step(self, actions):
        obs, rewards, _, truncated, infos = super().step(actions)
        return obs, rewards, dict.fromkeys(obs, False), truncated, infos


class WarningEnv(EchoParallelEnv):
    """Breaks the contract: it warns (kit warnings are failures, as for single-agent envs)."""

    def reset(self, seed=None, options=None):
        warnings.warn("options are deprecated", DeprecationWarning, stacklevel=2)
        return super().reset(seed, options)


class NumberActionsEnv(EchoParallelEnv):
    """Breaks the contract: actions are numbers, not text."""

    def __init__(self):
        super().__init__()
        self.action_spaces = {a: Discrete(2) for a in self.possible_agents}


def test_parallel_kit_passes_a_conforming_env():
    check_parallel_env(EchoParallelEnv())


@pytest.mark.parametrize(
    "env_cls, rule",
    [
        (VanishingEnv, r"parallel_api_test raised AssertionError.*\[\] != "),
        (WarningEnv, "parallel_api_test warned: options are deprecated"),
        (NumberActionsEnv, "left's action space is Discrete"),
        (NoOpEnv, "not an agentgym.TextParallelEnv"),
    ],
)
def test_parallel_kit_catches_broken_envs(env_cls, rule):
    with pytest.raises(ConformanceError, match=rule):
        check_parallel_env(env_cls())
