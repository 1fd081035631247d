"""Agent policy families, one module each (installed as ``agentgym.agents``).

The protocol and the built-in ``expert``/``random``/``human`` agents live in :mod:`agentgym.agent`;
this package holds the policies of the methods (trained policies, teachers); the generic model
agent (``openai:``, ``litellm:``, ``hf:``) is the core's :mod:`agentgym.chat_agent`.
Each is an ``--agent PREFIX:ARG`` spec through one line in pyproject's
``[project.entry-points."agentgym.agents"]`` (``PREFIX = "agentgym.agents.MODULE:function"``), as
any other distribution adds its agents: the core names no module of this package, and an agent
module is imported only when its spec is first used.
"""
