"""agentgym as a verifiers environment: ``vf-eval agentgym-env --env.taskset.suite
textarena/GuessTheNumber-v0 -n 20``. The classes live in ``agentgym.integrations.verifiers``."""

from agentgym.integrations.verifiers import AgentgymEnv, AgentgymTaskset

__all__ = ["AgentgymEnv", "AgentgymTaskset"]
