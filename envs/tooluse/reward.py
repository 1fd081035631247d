"""Grading as tau-bench and tau2-bench grade.

- tau-bench v1: reward 1 iff the final database hashes equal to a fresh database after replaying
  the gold actions (transfer excluded) *and* every required output appears in some message to
  the user (lower-cased, commas removed).
- tau2-bench: the product of the components in the task's ``reward_basis``: DB (hash match with
  the gold replay, user database included), ENV_ASSERTION, ACTION (1 iff every gold action is
  matched by some tool call of either side, requestor not compared, as tau2 does), COMMUNICATE (substring, as tau2 does in English), and
  NL_ASSERTION, which needs an LLM judge: without one it is left *unscored* (reported, not
  multiplied in) whenever the task has assertions to judge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.tooluse.tasks import TauConfig, TauGold
from agentgym.envs.tooluse.world import TERMINATE_TOOLS, Domain, Requestor, World

Judge = Callable[[list[str], list[dict[str, Any]]], list[bool]]
"""Judges NL assertions against a transcript: (assertions, messages) -> one verdict each."""


@dataclass
class RewardInfo:
    """The reward and how it was reached."""

    reward: float
    components: dict[str, float] = field(default_factory=dict)
    unscored: list[str] = field(default_factory=list)
    db_match: bool | None = None
    outputs: dict[str, bool] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """For ``info["reward_info"]``."""
        return {
            "reward": self.reward,
            "components": self.components,
            "unscored": self.unscored,
            "db_match": self.db_match,
            "outputs": self.outputs,
        }


def gold_world(domain: Domain, config: TauConfig, gold: TauGold) -> World:
    """A fresh world with the initial state and the gold actions replayed (errors ignored)."""
    world = World(domain)
    world.apply_initial_state(config.initial_state)
    for action in gold.actions or []:
        if domain.style == "tau_bench" and action.name in TERMINATE_TOOLS:
            continue
        world.call(action.name, action.arguments, action.requestor)
    return world


def assertion_met(world: World, assertion: dict[str, Any]) -> bool:
    """A tau2 env assertion on the final state. One whose function raises because the record it
    checks does not exist (an agent that never created it) counts as not met; tau2 would end the
    evaluation with that error instead."""
    try:
        return world.run_assertion(assertion)
    except (ValueError, KeyError):
        return False


def communicated(needle: str, messages: list[str]) -> bool:
    """tau-bench's check: the string, lower-cased, in some agent message lower-cased sans commas."""
    return any(needle.lower() in m.lower().replace(",", "") for m in messages)


def tau_bench_reward(world: World, reference: World, gold: TauGold, said: list[str]) -> RewardInfo:
    """tau-bench v1's ``calculate_reward``."""
    db_match = world.same_state(reference)
    outputs = {o: communicated(o, said) for o in gold.outputs}
    reward = float(db_match and all(outputs.values()))
    return RewardInfo(reward, {"DB": float(db_match)}, db_match=db_match, outputs=outputs)


def tau2_reward(
    world: World,
    reference: World,
    gold: TauGold,
    said: list[str],
    calls: list[tuple[str, dict[str, Any], Requestor]],
    transcript: list[dict[str, Any]],
    judge: Judge | None = None,
) -> RewardInfo:
    """tau2-bench's ``evaluate_simulation`` (evaluation type ALL) for a finished episode."""
    basis = gold.reward_basis or ["DB", "COMMUNICATE"]
    parts: dict[str, float] = {}
    db_match = None
    if "DB" in basis:
        db_match = (
            True
            if gold.actions is None and not gold.env_assertions
            else world.same_state(reference)
        )
        parts["DB"] = float(db_match)
    if "ENV_ASSERTION" in basis:
        parts["ENV_ASSERTION"] = float(all(assertion_met(world, a) for a in gold.env_assertions))
    if "ACTION" in basis and gold.actions:
        hits = [any(a.matches(n, args) for n, args, _ in calls) for a in gold.actions]
        parts["ACTION"] = float(all(hits))
    elif "ACTION" in basis:
        parts["ACTION"] = 1.0
    outputs = {c: communicated(c, said) for c in gold.communicate_info}
    if "COMMUNICATE" in basis:
        parts["COMMUNICATE"] = float(all(outputs.values()))
    unscored = []
    if "NL_ASSERTION" in basis:
        if not gold.nl_assertions:
            parts["NL_ASSERTION"] = 1.0
        elif judge is None:
            unscored.append("NL_ASSERTION")
        else:
            parts["NL_ASSERTION"] = float(all(judge(gold.nl_assertions, transcript)))
    reward = 1.0
    for value in parts.values():
        reward *= value
    return RewardInfo(reward, parts, unscored, db_match, outputs)
