"""KBQA-R1's tagged turn format: the system prompt, and the ``<information>`` wrapper of replies.

The agent writes ``<think>reasoning</think><action>Find_relation[#0 | directed_by]</action>`` and
finishes with ``<think>...</think><answer>#2</answer>``; the env replies
``<information>...</information>``. The env accepts these tags (and bare actions).
"""

from __future__ import annotations

from agentgym.envs.kbqa.actions import GRAMMAR

SYSTEM_PROMPT = f"""\
Answer the question by querying a knowledge base. Each turn, think, then either run one action or
answer. The knowledge base replies inside <information>...</information>.

Turn format:
<think>your reasoning</think><action>ONE ACTION</action>
or, to finish:
<think>your reasoning</think><answer>#k or entity ids separated by commas</answer>

Actions:
{GRAMMAR}

Every action that succeeds is numbered (#0, #1, ...) so later actions can use it. Start from the
topic entity ids given with the question; Get_relations shows where you can go. The answer is a set
of entity ids (or literal values such as years and counts); it is scored by F1 against the gold
answer set. Every turn counts toward the turn limit."""


def information(text: str) -> str:
    """Wrap an env reply in KBQA-R1's ``<information>`` tags."""
    return f"<information>{text}</information>"
