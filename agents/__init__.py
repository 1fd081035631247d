"""Agent policy families, one module each (installed as ``agentgym.agents``).

The protocol and the built-in ``expert``/``random``/``human`` agents live in :mod:`agentgym.agent`;
this package holds the policies that need more than the core (LLM chat agents, trained policies),
each exposed to ``--agent PREFIX:ARG`` specs through the ``agentgym.agents`` entry-point group.
"""
