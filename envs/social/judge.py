"""Sotopia's seven evaluation dimensions and the rule-based judge of verifiable scenarios.

An :class:`Evaluation` holds one agent's raw scores in Sotopia's ranges; ``overall`` is Sotopia's
overall score (their mean), ``normalized`` is ALSO's per-turn reward (each dimension min-max scaled
to 0..1 from its range, then averaged). The :class:`RuleJudge` scores deal-or-no-deal and
craigslist episodes deterministically from the structured moves and the text:

=================================  ============================================================
goal (0..10)                       10 x the agreed deal's value to the agent (points / all
                                   points; price on the target scale of
                                   :meth:`PriceDeal.utility`); before any agreement, the value of
                                   the other side's open proposal; 0 if the episode ends without
                                   a deal
financial_and_material_benefits    goal - 5 once a deal is agreed, 0 without one
(-5..5)
relationship (-5..5)               +2 for an agreement, -2 for leaving without one, -1 per
                                   hostile utterance
knowledge (0..10)                  2 per distinct proposal the other side made (what the agent
                                   learned of the other's preferences), at most 10
secret (-10..0)                    -10 if the agent's own utterances contain its secret (60% of
                                   the secret's content words), else 0
social_rules (-10..0)              -3 per hostile utterance (insults, threats), at least -10
believability (0..10)              10 - 2 per malformed or impossible action - 1 per utterance
                                   repeated word for word, at least 0
=================================  ============================================================
"""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, Field, model_validator

from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.game import GameState, agreed_utility, open_offer_utility

DIMENSIONS: dict[str, tuple[float, float]] = {
    "believability": (0, 10),
    "relationship": (-5, 5),
    "knowledge": (0, 10),
    "secret": (-10, 0),
    "social_rules": (-10, 0),
    "financial_and_material_benefits": (-5, 5),
    "goal": (0, 10),
}
"""Sotopia's dimensions and their score ranges."""
HOSTILE = re.compile(
    r"\b(idiot|stupid|moron|shut up|hate you|liar|scam(?:mer)?|or else|i'll hurt|threaten|"
    r"you'll regret|pathetic|loser|damn you)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z]{4,}")


class Evaluation(BaseModel):
    """One agent's scores on Sotopia's seven dimensions, with the judge's reasoning."""

    scores: dict[str, float]
    reasoning: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _in_range(self) -> Evaluation:
        if set(self.scores) != set(DIMENSIONS):
            raise ValueError(
                f"scores must name exactly {sorted(DIMENSIONS)}, got {sorted(self.scores)}"
            )
        for dim, value in self.scores.items():
            lo, hi = DIMENSIONS[dim]
            if not lo <= value <= hi:
                raise ValueError(f"{dim} = {value} is outside its range {lo}..{hi}")
        return self

    @property
    def overall(self) -> float:
        """Sotopia's overall score: the mean of the raw scores."""
        return sum(self.scores.values()) / len(self.scores)

    @property
    def normalized(self) -> float:
        """ALSO's reward: the mean of the scores min-max scaled to 0..1."""
        parts = [
            (v - DIMENSIONS[d][0]) / (DIMENSIONS[d][1] - DIMENSIONS[d][0])
            for d, v in self.scores.items()
        ]
        return sum(parts) / len(parts)

    @property
    def goal(self) -> float:
        """The episode's score: the goal dimension scaled to 0..1. Sotopia's headline metric is
        goal completion; the mean over all seven dimensions credits a harmless agent that gets
        nothing (an empty deal: believability 10, secret 0, social rules 0 give it about 0.5)."""
        return self.scores["goal"] / DIMENSIONS["goal"][1]

    def summary(self) -> dict[str, object]:
        """Scores, overall, normalized and goal, as plain data for ``info``."""
        return {
            "scores": dict(self.scores),
            "overall": self.overall,
            "normalized": self.normalized,
            "goal": self.goal,
        }


class Judge(Protocol):
    """Scores both agents of an episode (so far, or at its end)."""

    def evaluate(self, config: SocialConfig, state: GameState) -> list[Evaluation]:
        """One :class:`Evaluation` per seat."""
        ...


class JudgeError(RuntimeError):
    """The judge could not score the episode (a failed call, or no verifiable outcome)."""


def clip(value: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, value))


class RuleJudge:
    """Deterministic judge of scenarios with a verifiable deal (see the module table)."""

    def evaluate(self, config: SocialConfig, state: GameState) -> list[Evaluation]:
        if config.deal is None:
            raise JudgeError(
                f"scenario {config.codename!r} ({config.source}) has no verifiable outcome; the "
                "rule-based judge scores only deal-or-no-deal and craigslist scenarios: use an LLM judge"
            )
        return [self._seat(config, state, seat) for seat in (0, 1)]

    def _seat(self, config: SocialConfig, state: GameState, seat: int) -> Evaluation:
        said = [
            e.action.argument
            for e in state.events
            if e.seat == seat and e.action.action_type == "speak"
        ]
        hostile = sum(bool(HOSTILE.search(s)) for s in said)
        invalid = sum(not e.valid for e in state.events if e.seat == seat)
        repeats = len(said) - len(set(said))
        agreed = agreed_utility(state, config, seat)
        value = (
            agreed
            if agreed is not None
            else (0.0 if state.done else open_offer_utility(state, config, seat) or 0.0)
        )
        left_without_deal = state.left == seat and agreed is None
        other_offers = {m for m in state.offers_made[1 - seat]}
        scores = {
            "goal": round(10 * value, 4),
            "financial_and_material_benefits": round(10 * agreed - 5, 4)
            if agreed is not None
            else 0.0,
            "relationship": clip(2 * (agreed is not None) - 2 * left_without_deal - hostile, -5, 5),
            "knowledge": min(10.0, 2.0 * len(other_offers)),
            "secret": -10.0 if leaks(config.agents[seat].secret, said) else 0.0,
            "social_rules": max(-10.0, -3.0 * hostile),
            "believability": clip(10.0 - 2 * invalid - repeats, 0, 10),
        }
        return Evaluation(scores=scores, reasoning={"judge": "rule-based"})


def leaks(secret: str, utterances: list[str]) -> bool:
    """Whether one utterance holds at least 60% of the secret's content words (4+ letters)."""
    words = set(_WORD.findall(secret.lower()))
    if not words:
        return False
    return any(len(words & set(_WORD.findall(u.lower()))) >= 0.6 * len(words) for u in utterances)
