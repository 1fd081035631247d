"""Tactics: what a negotiation turn signals to the other side, read from its words and its move.

Scripted partners react to the *content* of the other side's turns, not to a label: each turn is
read into tags. Talk (``speak`` and ``non-verbal communication``) is tagged by cue words; moves by
what they do to the reader's value (:func:`turn_tags`):

============  ===========================================================================  =======
tag           cues                                                                         family
============  ===========================================================================  =======
empathy       understand, appreciate, respect, fair point, hear you, makes sense, sorry    coop
question      a question mark, tell me, what matters                                       coop
reciprocity   reciprocate, in return, meet me, halfway, in kind, your turn                 coop
goodwill      goodwill, good faith, gesture, move first, de-escalate                       coop
joint         both of us, we both, together, joint, mutual, win-win, linked                coop
pressure      walk away, other offer(s), alternative, final offer, elsewhere, hold firm,   firm
              take it or leave it, no deal, deadline
credibility   experience, track record, expert, I know the value, professional             firm
argument      evidence, comparable, logic, rational, because, the numbers, objective,      reason
              market
concession    a proposal worth more to the reader than the proposer's previous one (by     move
              more than :data:`CONCEDED`)
stand         a proposal that concedes nothing while worth under 0.5 to the reader, or a   firm
              ``reject``
============  ===========================================================================  =======

:data:`TALK` holds the scripted strategy follower's phrasings of each talk tactic (several per
tactic, so that it does not repeat itself word for word, which the rule judge would count against
its believability).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.game import Event, GameState, utility

CONCEDED = 0.01
"""A change in value below this is no concession."""
STAND_BELOW = 0.5
"""A non-conceding proposal worth less than this to the reader is a firm stand."""
COOPERATIVE = frozenset({"empathy", "question", "reciprocity", "goodwill", "joint"})
FIRM = frozenset({"pressure", "credibility", "stand"})
CUES: dict[str, re.Pattern[str]] = {
    tag: re.compile(pattern, re.IGNORECASE)
    for tag, pattern in {
        "empathy": r"\b(understand|appreciate|respect|fair point|hear you|makes sense|sorry)",
        "question": r"\?|\btell me\b|\bwhat matters\b",
        "reciprocity": r"\b(reciprocat|in return|meet me|halfway|in kind|your turn)",
        "goodwill": r"\b(goodwill|good faith|gesture|move first|de-?escalat)",
        "joint": r"\b(both of us|we both|together|joint|mutual|win-win|linked)",
        "pressure": r"\b(walk away|other offers?|alternative|final offer|elsewhere|hold firm|"
        r"take it or leave it|no deal|deadline)",
        "credibility": r"\b(experience|track record|expert|i know the value|professional)",
        "argument": r"\b(evidence|comparable|logic|rational|because|the numbers|objective|market)",
    }.items()
}
TALK: dict[str, tuple[str, ...]] = {
    "pressure": (
        "I have other offers on the table, and I am ready to walk away if this does not improve.",
        "My alternative is solid; this is close to my final offer, so I will hold firm.",
        "I can do better elsewhere, and I am prepared to leave with no deal.",
        "Let me be clear: I have a strong alternative and I will not move much further.",
        "There is a deadline on my side, and I would rather walk away than accept this.",
    ),
    "credibility": (
        "I know the value of this well; I have years of experience with deals like this one.",
        "I have a track record in these deals, and I only ask for what I can justify.",
        "Speaking as someone with real experience here, my position is carefully considered.",
        "As a professional in this area, I can tell you my request is well grounded.",
        "I am an expert in what this is worth, so my offer is not a guess.",
    ),
    "argument": (
        "Look at the evidence: comparable deals settle near my number, because that is its value.",
        "Logically, my proposal is the rational choice for you; the numbers show it is sound.",
        "The market supports my position, and an objective look at the terms bears it out.",
        "My offer is rational because it matches what the market pays for this.",
        "By any objective standard the numbers favour my proposal.",
    ),
    "empathy": (
        "I understand where you are coming from, and I appreciate your position.",
        "That is a fair point, and I respect what you need from this.",
        "I hear you, and what you are asking for makes sense to me.",
        "I am sorry this has been hard; I appreciate your patience with me.",
        "I respect how you see this, and I understand why it matters to you.",
    ),
    "question": (
        "What matters most to you in this deal?",
        "Could you tell me which part of this is most important for you?",
        "How could we adjust the terms so that they work better for you?",
        "Tell me more about what you need; which terms would you change?",
        "What would make this deal feel right to you?",
    ),
    "reciprocity": (
        "I have moved toward you; I hope you will reciprocate in return.",
        "I made a concession - could you meet me halfway in return?",
        "I gave a little ground; now it is your turn to do the same in kind.",
        "I adjusted my offer for you; I would welcome a step in return.",
        "I met some of your concerns; can you meet me halfway?",
    ),
    "goodwill": (
        "As a gesture of goodwill, I will move first and ease my position.",
        "In good faith I am lowering my demands step by step; let us de-escalate.",
        "Here is another goodwill step from my side, made unilaterally.",
        "I am making this concession first, as a gesture, to build good faith.",
        "Let us de-escalate: I ease my position again in good faith.",
    ),
    "joint": (
        "We both win only if we find a deal together.",
        "Our outcomes are linked; let us build a joint solution that works for both of us.",
        "A mutual agreement is better for both of us than no agreement at all.",
        "Working together, we can find a win-win split of this.",
        "We both gain more from a joint deal than from walking off alone.",
    ),
}
"""The strategy follower's phrasings of each talk tactic (each carries its tag's cues)."""


def read_talk(text: str) -> frozenset[str]:
    """The talk tags whose cues occur in ``text``."""
    return frozenset(tag for tag, cue in CUES.items() if cue.search(text))


@dataclass(frozen=True)
class TurnTags:
    """One turn of the other side as the reader sees it."""

    tags: frozenset[str]
    concession: float = 0.0
    """How much more the proposal is worth to the reader than the proposer's previous one
    (negative: it hardened); 0 for talk and first proposals."""

    @property
    def cooperative(self) -> bool:
        return bool(self.tags & COOPERATIVE)

    @property
    def firm(self) -> bool:
        return bool(self.tags & FIRM)


def turn_tags(config: SocialConfig, state: GameState, reader: int) -> list[TurnTags]:
    """Every turn of the other side of ``reader``, in order, read into tags."""
    assert config.deal is not None
    out, previous = [], None
    for event in state.events:
        if event.seat == reader:
            continue
        tags, concession = _talk_tags(event), 0.0
        if event.move is not None and event.move.kind in ("propose", "offer"):
            value = utility(config.deal, event.move, event.seat, reader)
            concession = 0.0 if previous is None else value - previous
            previous = value
            if concession > CONCEDED:
                tags |= {"concession"}
            elif value < STAND_BELOW:
                tags |= {"stand"}
        elif event.move is not None and event.move.kind == "reject":
            tags |= {"stand"}
        out.append(TurnTags(frozenset(tags), concession))
    return out


def _talk_tags(event: Event) -> set[str]:
    if event.action.action_type in ("speak", "non-verbal communication"):
        return set(read_talk(event.action.argument))
    return set()


def share(turns: list[TurnTags], family: str, window: int = 4) -> float:
    """Share of the last ``window`` turns that were ``family`` (``cooperative`` or ``firm``)."""
    recent = turns[-window:]
    return sum(getattr(t, family) for t in recent) / len(recent) if recent else 0.0
