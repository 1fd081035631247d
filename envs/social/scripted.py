"""Scripted agents for the player's seat, as ``--agent scripted:NAME`` specs.

``scripted:hardliner`` (``conceder``, ``tit-for-tat``, ``switcher``) plays the partner strategies
of :mod:`agentgym.envs.social.partners` in the player's seat. ``scripted:follower`` is the
*strategy follower*: a negotiator whose concession behaviour is set by the strategy instruction
in its prompt - the observation lines that start with ``Strategy:`` (what a prompt optimiser such
as ALSO writes). It reads the instruction's words, not an arm number, through this table (matches
combine; no instruction = the base stance: opens at 1.1, concedes 0.06 a turn):

=============================================================  ================================
words in the instruction                                       behaviour
=============================================================  ================================
batna, walk away, alternative, firm, anchor, leverage          opens 0.25 higher, concedes x0.3
reciproc, tit-for-tat, mirror, in kind, match                  also concedes what the other side
                                                               conceded last turn; base x0.5
grit, unilateral, de-escalat, goodwill, concession             concedes 0.05 more a turn
integrative, logroll, trade, interest, interdependence, joint  gives the items the other side
                                                               seems to value; concedes x0.8
listen, question, probe, ask                                   asks a question every 2nd turn
face, validat, acknowledg, presentation, empath                acknowledges every 3rd turn
rational, persua, evidence, controversy, argument, logic       concedes x0.8
=============================================================  ================================
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from agentgym.envs.social.partners import Negotiator, Stance, make_negotiator

RULES: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("batna", "walk away", "alternative", "firm", "anchor", "leverage"), {"opening": 0.25, "step_x": 0.3}),
    (("reciproc", "tit-for-tat", "mirror", "in kind", "match"), {"reciprocity": 1.0, "step_x": 0.5}),
    (("grit", "unilateral", "de-escalat", "goodwill", "concession"), {"step_add": 0.05}),
    (("integrative", "logroll", "trade", "interest", "interdependence", "joint"), {"integrative": True, "step_x": 0.8}),
    (("listen", "question", "probe", "ask"), {"talk_every": 2, "talk": "question"}),
    (("face", "validat", "acknowledg", "presentation", "empath"), {"talk_every": 3, "talk": "acknowledge"}),
    (("rational", "persua", "evidence", "controversy", "argument", "logic"), {"step_x": 0.8}),
]  # fmt: skip
"""(words, effect) pairs; see the module table."""
BASE = Stance(opening=1.1, step=0.06, reciprocity=0.0, floor=0.3)
_STRATEGY_LINE = re.compile(r"^\s*strategy\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def stance_for(instruction: str) -> Stance:
    """The stance an instruction text asks for (the module table)."""
    text = instruction.lower()
    stance, step_x, step_add = replace(BASE), 1.0, 0.0
    for words, effect in RULES:
        if not any(w in text for w in words):
            continue
        stance.opening += effect.get("opening", 0.0)
        stance.reciprocity = max(stance.reciprocity, effect.get("reciprocity", 0.0))
        stance.integrative |= effect.get("integrative", False)
        if "talk_every" in effect and not stance.talk_every:
            stance.talk_every, stance.talk = effect["talk_every"], effect["talk"]
        step_x *= effect.get("step_x", 1.0)
        step_add += effect.get("step_add", 0.0)
    stance.step = BASE.step * step_x + step_add
    return stance


def strategy_text(observation: str) -> str:
    """The last ``Strategy:`` line of an observation ("" if there is none)."""
    found = _STRATEGY_LINE.findall(observation)
    return found[-1].strip() if found else ""


class ScriptedPlayer:
    """Plays the player's seat with a scripted negotiator (reads the env's state, like ``expert``)."""

    def __init__(
        self,
        env: Any,
        negotiator: Negotiator,
        follow_strategy: bool = False,
        seat: int | None = None,
    ) -> None:
        self.env = env.unwrapped
        self.negotiator = negotiator
        self.follow_strategy = follow_strategy
        self.seat = seat
        """The seat to play; None: the single-agent env's ``config.seat``."""
        self.name = f"scripted:{'follower' if follow_strategy else negotiator.name}"

    def reset(self, info: dict[str, Any]) -> None:
        self.negotiator.reset()

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self.env
        game = getattr(
            env.state, "game", env.state
        )  # SocialEnv wraps the game, the parallel env not
        seat = env.config.seat if self.seat is None else self.seat
        if self.follow_strategy:
            self.negotiator.stance = stance_for(strategy_text(observation))
            if not any(e.seat == seat for e in game.events):
                self.negotiator.demand = self.negotiator.stance.opening
        return self.negotiator.act(env.config, game, seat)


def scripted_agent(arg: str, env: Any) -> ScriptedPlayer:
    """Entry point of ``--agent scripted:NAME`` (``follower`` or a partner strategy)."""
    if arg == "follower":
        return ScriptedPlayer(env, Negotiator(replace(BASE), "follower"), follow_strategy=True)
    return ScriptedPlayer(env, make_negotiator(arg))
