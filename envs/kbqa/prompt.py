"""KBQA-R1's tagged turn format: the system prompt, and helpers that write and read turns.

The agent writes ``<think>reasoning</think><action>Find_relation[#0 | directed_by]</action>`` and
finishes with ``<think>...</think><answer>#2</answer>``; the env replies
``<information>...</information>``. The env accepts these tags (and bare actions); these helpers
produce them for prompts, scripted teachers and SFT data.
"""

from __future__ import annotations

import re

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


def action_turn(action: str, think: str = "") -> str:
    """An agent turn running ``action`` (an ``Answer[...]`` becomes an ``<answer>`` block)."""
    match = re.fullmatch(r"\s*Answer\s*\[(.*)\]\s*", action, re.DOTALL | re.IGNORECASE)
    body = f"<answer>{match.group(1).strip()}</answer>" if match else f"<action>{action}</action>"
    return f"<think>{think}</think>{body}"


def split_turn(turn: str) -> tuple[str, str]:
    """``(think, action)`` of a tagged turn; an ``<answer>`` comes back as ``Answer[...]``."""
    think = re.search(r"<think>(.*?)</think>", turn, re.DOTALL)
    action = re.search(r"<action>(.*?)</action>", turn, re.DOTALL)
    answer = re.search(r"<answer>(.*?)</answer>", turn, re.DOTALL)
    body = (
        action.group(1).strip()
        if action
        else f"Answer[{answer.group(1).strip()}]"
        if answer
        else turn.strip()
    )
    return (think.group(1).strip() if think else ""), body
