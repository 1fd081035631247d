"""Built-in agentgym environments, registered through the ``agentgym.envs`` entry point.

Registration is by ``module:Class`` string, so importing this package imports no env module.
"""

from agentgym.registry import register

BUILTIN_ENVS: list[tuple[str, str, str]] = [
    # (id, entry point, one-line description)
    (
        "Clarify-v0",
        "agentgym.envs.clarify.env:ClarifyEnv",
        "Intent clarification (20 questions) over real products and movies",
    ),
    (
        "KBQA-v0",
        "agentgym.envs.kbqa.env:KBQAEnv",
        "Knowledge-base QA over MetaQA with KBQA-R1's actions (joins, merge, order, compare, count)",
    ),
]


def register_envs() -> None:
    """Register every built-in env with agentgym and Gymnasium."""
    for env_id, entry_point, description in BUILTIN_ENVS:
        register(env_id, entry_point, description=description)
