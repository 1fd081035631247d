"""Scripted negotiation partners for offline episodes (verifiable scenarios only).

Every partner is a :class:`Negotiator`: it holds a *demand* (the value, 0..1 and beyond, it
insists on for itself: 1 = its full points or its target price), proposes the deal that meets the
demand, accepts the other side's open proposal once it is worth at least the demand, and leaves
after an agreement. Before each of its turns it moves the demand by a fixed step and by its
*reactions* to the other side's last turn, read from that turn's words and move
(:mod:`agentgym.envs.social.tactics`: cooperative talk, firm talk or a firm stand, reasoned
argument, the size of a concession). Negative numbers concede, positive ones harden:

===============  ===========================================================================
hardliner        opens at 1.3, concedes 0.015 a turn, never below 0.7; ignores cooperative talk
                 and does not return concessions; firmness -0.02, argument -0.03
conceder         opens at 1.0, concedes 0.12 a turn, down to 0.2; firmness -0.04 (pressure
                 makes it concede even faster)
tit-for-tat      opens at 1.15, concedes 0.05 once, then mirrors: returns a concession in full
                 and a hardening in full; firmness +0.05, cooperative talk -0.03
switcher         non-stationary, anchors at 1.15, concedes 0.02 a turn, never below 0.4;
                 switches at turn ``switch`` (default 10). *Phase A* (before): cooperative
                 and trusting - cooperative talk -(0.08 + 0.08 x trust), firmness +0.10
                 (it hardens), argument -0.02, returns half of a concession. *Phase B* (from
                 then on): exploitative - cooperative talk +0.08 (read as weakness),
                 concessions exploited (hardens by half of what it got), firmness -(0.06 +
                 0.10 x credibility), argument -0.04. Trust and credibility are the shares of
                 cooperative and firm turns among the other side's last 4: it reacts to the
                 history, so a threat after a run of soft turns moves it less. Against a
                 plain negotiator (proposals only, no talk) it moves only by its step and
                 its answer to concessions; the talk that pays changes at the switch
===============  ===========================================================================

A demand never rises above the opening nor falls below the floor. "Conceding" is measured on the
partner's own scale: how much more the other side's new proposal is worth to it than the previous
one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl

from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.game import GameState, open_offer_utility, utility
from agentgym.envs.social.moves import Move, render_move
from agentgym.envs.social.negotiation import ItemDeal, PriceDeal
from agentgym.envs.social.tactics import TALK, TurnTags, share, turn_tags


@dataclass(frozen=True)
class Reactions:
    """Demand changes in answer to the other side's last turn (negative: concede)."""

    cooperative: float = 0.0
    """When the turn was cooperative talk."""
    firm: float = 0.0
    """When it was firm talk or a firm stand."""
    argument: float = 0.0
    """When it argued with reasons or evidence."""
    reciprocity: float = 0.0
    """Times the value it conceded (1: returned in full, negative: exploited)."""
    trust: float = 0.0
    """Added to ``cooperative`` x the share of cooperative turns among the other's last 4."""
    credibility: float = 0.0
    """Added to ``firm`` x the share of firm turns among the other's last 4."""

    def change(self, turns: list[TurnTags]) -> float:
        """The demand change for the last of ``turns`` (the other side's turns so far)."""
        if not turns:
            return 0.0
        last, delta = turns[-1], -self.reciprocity * turns[-1].concession
        if last.cooperative:
            delta += self.cooperative + self.trust * share(turns, "cooperative")
        if last.firm:
            delta += self.firm + self.credibility * share(turns, "firm")
        if "argument" in last.tags:
            delta += self.argument
        return delta


@dataclass
class Stance:
    """How a negotiator moves its demand and what it says."""

    opening: float = 1.1
    step: float = 0.06
    """Concession per own turn, whatever the other side does."""
    floor: float = 0.3
    """Lowest demand."""
    reactions: Reactions = field(default_factory=Reactions)
    integrative: bool = False
    """Among divisions worth the same to it, give the other side what it seems to value most."""
    talk_every: int = 0
    """Speak instead of moving on every N-th own turn (0: never)."""
    talk: str = ""
    """The talk tactic (a key of :data:`~agentgym.envs.social.tactics.TALK`)."""


@dataclass
class Negotiator:
    """A scripted negotiator for one seat; ``act`` returns its action text for the turn."""

    stance: Stance = field(default_factory=Stance)
    name: str = "negotiator"
    demand: float = -1.0

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode (scripted partners ignore the seed: they are deterministic)."""
        self.demand = self.stance.opening

    def act(self, config: SocialConfig, state: GameState, seat: int) -> str:
        """The next action of ``seat`` (it must be ``seat``'s turn)."""
        if config.deal is None:
            raise ValueError(
                f"scripted partners negotiate only verifiable deals, not {config.source!r}"
            )
        if self.demand < 0:
            self.reset()
        if state.agreement is not None:
            return "leave"
        own_turns = sum(e.seat == seat for e in state.events)
        if own_turns:
            self.update(config, state, seat)
        self.demand = min(max(self.stance.floor, self.demand), self.stance.opening)
        offer = open_offer_utility(state, config, seat)
        turns_left = config.max_turns - state.turn
        if offer is not None and (
            offer >= min(1.0, self.demand) or (turns_left <= 2 and offer >= self.stance.floor)
        ):
            return "action: accept"
        if self.stance.talk_every and own_turns % self.stance.talk_every == 1:
            return f"speak: {self.say(state, seat)}"
        return "action: " + render_move(self.proposal(config, state, seat), config.deal)

    def update(self, config: SocialConfig, state: GameState, seat: int) -> None:
        """Move the demand before acting: the step, then the reactions to the other side."""
        self.demand += -self.stance.step + self.reactions(state).change(
            turn_tags(config, state, seat)
        )

    def reactions(self, state: GameState) -> Reactions:
        """The reactions in force now (the switcher changes them)."""
        return self.stance.reactions

    def say(self, state: GameState, seat: int) -> str:
        """This turn's phrasing of the talk tactic (cycled, so it does not repeat verbatim)."""
        lines = TALK[self.stance.talk]
        spoken = sum(e.seat == seat and e.action.action_type == "speak" for e in state.events)
        return lines[spoken % len(lines)]

    def proposal(self, config: SocialConfig, state: GameState, seat: int) -> Move:
        """The move that meets the current demand."""
        assert config.deal is not None
        if isinstance(config.deal, PriceDeal):
            return Move("offer", price=price_for(config.deal, seat, self.demand))
        return Move("propose", share=tuple(sorted(self._share(config.deal, state, seat).items())))

    def _share(self, deal: ItemDeal, state: GameState, seat: int) -> dict[str, int]:
        top = deal.max_points(seat)
        want = min(1.0, self.demand) * top
        enough = [a for a in deal.allocations() if deal.points(seat, a) >= want - 1e-9]
        wish = other_wishes(deal, state, seat)

        def key(a: dict[str, int]) -> tuple[float, float]:
            given = deal.rest(a)
            gift = (
                sum(wish.get(i, 0) * n for i, n in given.items()) if self.stance.integrative else 0
            )
            return (deal.points(seat, a), -gift - 0.001 * sum(given.values()))

        return min(enough, key=key)


def price_for(deal: PriceDeal, seat: int, demand: float) -> float:
    """The price worth ``demand`` to ``seat`` on :meth:`PriceDeal.utility`'s scale."""
    sign = -1 if deal.roles[seat] == "buyer" else 1
    return round(deal.targets[seat] + sign * (demand - 1.0) * deal.span, 2)


def other_offers(config: SocialConfig, state: GameState, seat: int) -> list[float]:
    """Value to ``seat`` of each proposal the other side made, in order."""
    assert config.deal is not None
    return [utility(config.deal, m, 1 - seat, seat) for m in state.offers_made[1 - seat]]


def other_wishes(deal: ItemDeal, state: GameState, seat: int) -> dict[str, float]:
    """Units of each item the other side has asked for, on average: a guess at what it values."""
    asks = [dict(m.share) for m in state.offers_made[1 - seat]]
    return {
        i: sum(a.get(i, 0) for a in asks) / max(1, len(asks)) / deal.counts[i] for i in deal.counts
    }


# ---------------------------------------------------------------------------- strategies
class TitForTat(Negotiator):
    """Concedes once, then mirrors the other side (see the module table)."""

    def update(self, config: SocialConfig, state: GameState, seat: int) -> None:
        if sum(e.seat == seat for e in state.events) == 1:
            self.demand -= 0.05
        super().update(config, state, seat)


PHASE_A = Reactions(cooperative=-0.08, trust=-0.08, firm=0.10, argument=-0.02, reciprocity=0.5)
"""The switcher before the switch: cooperative, trusting, returns half of a concession."""
PHASE_B = Reactions(
    cooperative=0.08, firm=-0.06, credibility=-0.10, argument=-0.04, reciprocity=-0.5
)
"""The switcher after the switch: exploits softness, yields to credible firmness."""


@dataclass
class Switcher(Negotiator):
    """Cooperative until turn ``switch``, exploitative from then on (see the module table)."""

    switch: int = 10

    def reactions(self, state: GameState) -> Reactions:
        return PHASE_A if state.turn < self.switch else PHASE_B


STRATEGIES: dict[str, Negotiator] = {
    "hardliner": Negotiator(
        Stance(1.3, 0.015, 0.7, Reactions(firm=-0.02, argument=-0.03)), "hardliner"
    ),
    "conceder": Negotiator(Stance(1.0, 0.12, 0.2, Reactions(firm=-0.04)), "conceder"),
    "tit-for-tat": TitForTat(
        Stance(1.15, 0.0, 0.3, Reactions(cooperative=-0.03, firm=0.05, reciprocity=1.0)),
        "tit-for-tat",
    ),
    "switcher": Switcher(Stance(1.15, 0.02, 0.4), "switcher"),
}


def make_negotiator(spec: str) -> Negotiator:
    """A fresh negotiator for ``NAME[?switch=N]`` (a name of :data:`STRATEGIES`)."""
    name, _, query = spec.partition("?")
    if name not in STRATEGIES:
        raise ValueError(
            f"unknown scripted partner {name!r}; allowed: {', '.join(sorted(STRATEGIES))}"
        )
    options = dict(parse_qsl(query))
    negotiator = replace(STRATEGIES[name], stance=replace(STRATEGIES[name].stance))
    if "switch" in options:
        if not isinstance(negotiator, Switcher) or not options["switch"].isdigit():
            raise ValueError(
                f"option switch=N (a turn number) applies only to switcher, got {spec!r}"
            )
        negotiator.switch = int(options["switch"])
    if unknown := set(options) - {"switch"}:
        raise ValueError(
            f"unknown partner option(s) {sorted(unknown)} in {spec!r}; allowed: switch"
        )
    negotiator.reset()
    return negotiator
