"""The conformance kit, run over every registered env (new envs are checked automatically)."""

import warnings

import pytest

import agentgym
from agentgym.testing import ConformanceError, NoOpEnv, check_env, noop_suite


@pytest.mark.parametrize("env_id", [s.id for s in agentgym.list_envs()])
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
