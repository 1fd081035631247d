"""Conformance kit and test doubles, shipped so third-party envs run the same checks we do.

``check_env(env)`` = Gymnasium's ``check_env`` plus the agentgym contract;
``check_parallel_env(env)`` = PettingZoo's ``parallel_api_test`` plus text spaces. ``NoOpEnv`` and
``noop_suite`` exercise the runner machinery (benchmarks, resume tests); they never stand in for a
real environment.
"""

from agentgym.testing.conformance import ConformanceError, check_env, check_parallel_env
from agentgym.testing.noop import NoOpEnv, noop_suite, register_test_envs
from agentgym.testing.scripted_client import ScriptedClient

__all__ = [
    "ConformanceError",
    "NoOpEnv",
    "ScriptedClient",
    "check_env",
    "check_parallel_env",
    "noop_suite",
    "register_test_envs",
]
