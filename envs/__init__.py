"""Built-in agentgym environments, registered through the ``agentgym.envs`` entry point.

Registration is by ``module:Class`` string, so importing this package imports no env module.
"""

from agentgym.registry import register


def register_envs() -> None:
    """Register every built-in env with agentgym and Gymnasium."""
    register(
        "Clarify-v0",
        "agentgym.envs.clarify.env:ClarifyEnv",
        description="Intent clarification (20 questions) over real products and movies",
    )
