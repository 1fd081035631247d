"""The gold path of both sides (tau2's dual control): who does what, in which order.

A tau2 task's gold actions name their ``requestor``: the agent calls its tools, the user calls
the tools on its own device (telecom's phone, mock's notification inbox). The gold path is those
actions in order, followed by a fix for every env assertion the gold actions leave false (a
tool of the assertion's side that makes it hold, as the domain's toolkit declares in
``assertion_fixes``). The expert plays the agent's part of it and asks the user for the user's
part by the tools' names (as tau2's tech-support manual does); the gold-path user carries out
each of its actions once every agent action before it is done and the agent has asked for it
(named the tool, or said its words: "airplane mode" for ``toggle_airplane_mode``).

The reference world the grader compares against stays tau2's: the gold actions replayed, no
fixes (see ``reward.gold_world``).
"""

from __future__ import annotations

import copy
from typing import Any

from agentgym.envs.tooluse.actions import format_call
from agentgym.envs.tooluse.reward import assertion_met
from agentgym.envs.tooluse.tasks import GoldAction, TauGold
from agentgym.envs.tooluse.world import TERMINATE_TOOLS, Requestor, World

CLOSING = "Is there anything else I can help you with?"
ASK_USER = "Please do the following on your side, then tell me what you see: {calls}."


def gold_path(reference: World, gold: TauGold) -> tuple[list[GoldAction], World]:
    """(the gold actions plus assertion fixes, the world both sides reach by following them),
    from ``reference``: the fresh world with the gold actions replayed (left untouched)."""
    world = copy.deepcopy(reference)
    path = list(gold.actions or [])
    for assertion in gold.env_assertions:
        if assertion_met(world, assertion):
            continue
        requestor: Requestor = "user" if assertion.get("env_type") == "user" else "assistant"
        fixer = world.toolkit(requestor).assertion_fixes.get(assertion["func_name"])
        fix = fixer(assertion.get("arguments", {})) if fixer else None
        if fix is not None:
            world.call(*fix, requestor)
            path.append(GoldAction(name=fix[0], arguments=fix[1], requestor=requestor))
    return path, world


def expert_plan(path: list[GoldAction], gold: TauGold) -> list[str]:
    """The agent's moves: its tool calls, a request for each run of user actions, what must be
    said, then the closing move (the gold transfer, or a closing question)."""
    plan: list[str] = []
    asks: list[str] = []
    terminal = []
    for action in path:
        if action.requestor == "user":
            asks.append(format_call(action.name, action.arguments))
            continue
        if asks:
            plan.append(ASK_USER.format(calls="; ".join(asks)))
            asks = []
        if action.name in TERMINATE_TOOLS:
            terminal.append(action)
        else:
            plan.append(format_call(action.name, action.arguments))
    if asks:
        plan.append(ASK_USER.format(calls="; ".join(asks)))
    needles = gold.outputs + gold.communicate_info
    if needles:
        plan.append("Here is what you asked for: " + "; ".join(needles) + ".")
    plan += [format_call(a.name, a.arguments) for a in terminal[:1]] or [CLOSING]
    return plan


def due_user_actions(
    path: list[GoldAction], calls: list[tuple[str, dict[str, Any], Requestor]], performed: int
) -> list[GoldAction]:
    """The user's next gold actions: those after the ``performed`` ones it has carried out,
    up to the first agent action in the path that no agent call has matched yet."""
    due, seen = [], 0
    agent_calls = [(n, a) for n, a, r in calls if r == "assistant"]
    for action in path:
        if action.requestor == "user":
            if seen >= performed:
                due.append(action)
            seen += 1
        elif seen >= performed and not any(action.matches(n, a) for n, a in agent_calls):
            break
    return due


def asked_for(action: GoldAction, message: str) -> bool:
    """Whether the agent's message asks for this user action: it names the tool, or says what
    the tool acts on (the name without its verb: ``toggle_wifi_calling`` -> "wifi calling")."""
    text = message.lower().replace("-", "")
    name = action.name.lower()
    words = name.split("_")
    return name in text or (len(words) > 1 and " ".join(words[1:]) in text)
