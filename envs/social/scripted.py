"""Scripted agents for the player's seat, as ``--agent scripted:NAME`` specs.

``scripted:hardliner`` (``conceder``, ``tit-for-tat``, ``switcher``) plays the partner strategies
of :mod:`agentgym.envs.social.partners` in the player's seat. ``scripted:follower`` is the
*strategy follower*: a negotiator whose behaviour is set by the strategy instruction in its
prompt - the observation lines that start with ``Strategy:`` (what a prompt optimiser such as
ALSO writes). It reads the instruction's words, not an arm number, through this table; matches
combine, and the first talk tactic matched (table order) is the one it uses. Without an
instruction it opens at 1.0, concedes 0.04 a turn, never talks and proposes every turn. A talk
tactic makes it speak (one of :data:`~agentgym.envs.social.tactics.TALK`'s phrasings) instead
of moving on every 2nd own turn:

================================================================  ==============================
words in the instruction                                          behaviour
================================================================  ==============================
batna, walk away, alternative, anchor, leverage, deadline, firm   opens 0.25 higher, concedes
on, walkaway                                                      x0.15; talk: pressure
credib, competent, principled, authority, self-present            concedes x0.5; talk:
                                                                  credibility
rational, persua, evidence, logic, argument, debate, controvers,  concedes x0.8; talk: argument
objective, standards
grit, unilateral, goodwill, de-escalat                            concedes 0.05 more; talk:
                                                                  goodwill
reciproc, in kind                                                 talk: reciprocity
tit-for-tat, mirror, match their                                  returns the other side's
                                                                  concession (and hardening) in
                                                                  full, +0.03 against a firm
                                                                  stand; concedes x0.5
validat, acknowledg, face, empath, feelings, rapport, gratitude,  talk: empathy
thank, compliment, warm
listen, question, probe, diagnos, ask                             talk: question
joint, interdependen, linked, both sides, together, shared,       talk: joint
relationship, win-win
integrative, logroll, trade, interests, package, expanding        integrative proposals (gives
                                                                  what the other side seems to
                                                                  value); concedes x0.8
================================================================  ==============================
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from agentgym.envs.social.partners import Negotiator, Reactions, Stance, make_negotiator


def _words(*stems: str) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(s) for s in stems) + ")", re.IGNORECASE)


RULES: list[tuple[re.Pattern[str], dict[str, Any]]] = [
    (_words("batna", "walk away", "alternative", "anchor", "leverage", "deadline", "firm on", "walkaway"), {"opening": 0.2, "step_x": 0.15, "talk": "pressure"}),
    (_words("credib", "competent", "principled", "authority", "self-present"), {"step_x": 0.5, "talk": "credibility"}),
    (_words("rational", "persua", "evidence", "logic", "argument", "debate", "controvers", "objective", "standards"), {"step_x": 0.8, "talk": "argument"}),
    (_words("grit", "unilateral", "goodwill", "de-escalat"), {"step_add": 0.05, "talk": "goodwill"}),
    (_words("reciproc", "in kind"), {"talk": "reciprocity"}),
    (_words("tit-for-tat", "mirror", "match their"), {"mirror": True, "step_x": 0.5}),
    (_words("validat", "acknowledg", "face", "empath", "feelings", "rapport", "gratitude", "thank", "compliment", "warm"), {"talk": "empathy"}),
    (_words("listen", "question", "probe", "diagnos", "ask"), {"talk": "question"}),
    (_words("joint", "interdependen", "linked", "both sides", "together", "shared", "relationship", "win-win"), {"talk": "joint"}),
    (_words("integrative", "logroll", "trade", "interests", "package", "expanding"), {"integrative": True, "step_x": 0.8}),
]  # fmt: skip
"""(words, effect) pairs; see the module table."""
BASE = Stance(opening=1.0, step=0.04, floor=0.3)
MIRROR = Reactions(reciprocity=1.0, firm=0.03)
"""How the follower answers the other side when told to mirror it."""
TALK_EVERY = 2
_STRATEGY_LINE = re.compile(r"^\s*strategy\s*:\s*(.+)$", re.IGNORECASE | re.MULTILINE)


def stance_for(instruction: str) -> Stance:
    """The stance an instruction text asks for (the module table)."""
    stance, step_x, step_add = replace(BASE), 1.0, 0.0
    for words, effect in RULES:
        if not words.search(instruction):
            continue
        stance.opening += effect.get("opening", 0.0)
        stance.integrative |= effect.get("integrative", False)
        if effect.get("mirror"):
            stance.reactions = MIRROR
        if "talk" in effect and not stance.talk:
            stance.talk_every, stance.talk = TALK_EVERY, effect["talk"]
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
