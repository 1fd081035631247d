"""Agent policy families, one module each (installed as ``agentgym.agents``).

The protocol and the built-in ``expert``/``random``/``human`` agents live in :mod:`agentgym.agent`;
this package holds the policies of the methods (trained policies, teachers); the generic model
agent (``openai:``, ``litellm:``, ``hf:``) is the core's :mod:`agentgym.chat_agent`.
Each is an ``--agent PREFIX:ARG`` spec through one line in ``BUILTIN_PREFIXES``: registration is
by ``module:function`` string, so it imports no agent module, and needs no entry point (other
distributions use the ``agentgym.agents`` entry-point group instead).
"""

from agentgym.agent import register_agent

BUILTIN_PREFIXES: dict[str, str] = {
    # PREFIX: module:function below agentgym.agents, called as function(ARG, env)
    "also": "also:also_agent",
    "pa_moe": "pa_moe:pa_moe_agent",
}


def register_agents() -> None:
    """Register every agent of this package (the core calls this before its first lookup)."""
    for prefix, ref in BUILTIN_PREFIXES.items():
        register_agent(prefix, f"{__name__}.{ref}")
