"""agentgym: step text environments, evaluate any agent, train agent policies.

>>> import agentgym
>>> env = agentgym.make("Clarify-v0")
>>> obs, info = env.reset(seed=0, options={"task": "clarify-products-test-0000"})
>>> info["task_id"]
'clarify-products-test-0000'
"""

from pathlib import Path as _Path

from agentgym.source_tree import install_finder as _install_finder

_install_finder(_Path(__file__).resolve().parent)  # a clone's root imports as an install does

from agentgym.agent import (
    Action,
    Agent,
    ExpertAgent,
    HumanAgent,
    RandomAgent,
    agent_factory,
    register_agent,
)
from agentgym.env import NoExpert, ResetNeeded, Snapshot, TextEnv
from agentgym.episode import Episode, Step, Usage
from agentgym.parallel_env import TextParallelEnv
from agentgym.registry import EnvSpec, list_envs, load_plugins, make, register, spec
from agentgym.rollout import rollout
from agentgym.runner import RunResult, evaluate
from agentgym.spaces import UnicodeText
from agentgym.store import Store
from agentgym.task import Task, TaskFileError, TaskSuite

__version__ = "0.1.0"

__all__ = [
    "Action",
    "Agent",
    "EnvSpec",
    "Episode",
    "ExpertAgent",
    "HumanAgent",
    "NoExpert",
    "RandomAgent",
    "ResetNeeded",
    "RunResult",
    "Snapshot",
    "Step",
    "Store",
    "Task",
    "TaskFileError",
    "TaskSuite",
    "TextEnv",
    "TextParallelEnv",
    "UnicodeText",
    "Usage",
    "agent_factory",
    "evaluate",
    "list_envs",
    "make",
    "register",
    "register_agent",
    "rollout",
    "spec",
]

# Registers the built-in and third-party envs (in memory only) so gymnasium.make("agentgym/...") works.
load_plugins()
