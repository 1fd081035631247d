"""Scripted negotiation partners for offline episodes (verifiable scenarios only).

Every partner is a :class:`Negotiator`: it holds a *demand* (the value, 0..1 and beyond, it
insists on for itself: 1 = its full points or its target price), proposes the deal that meets the
demand, accepts the other side's open proposal once it is worth at least the demand, and leaves
after an agreement. Strategies differ in how the demand moves:

===============  ===========================================================================
hardliner        opens at 1.3, concedes 0.015 per turn, never below 0.7
conceder         opens at 1.0, concedes 0.12 per turn, down to 0.2
tit-for-tat      opens at 1.15, concedes 0.05 once, then mirrors the other side: concedes what
                 it conceded last turn and hardens by what it hardened
switcher         non-stationary: until turn ``switch`` (default 10) it *yields to pressure*
                 (concedes 0.10 when the other side did not concede, 0.02 when it did); from
                 then on it *retaliates*: when the other side concedes c it concedes 1.5c + 0.05,
                 when it does not it hardens by 0.05 + 0.05 x (share of the other side's turns
                 without a concession so far) - it remembers how it was treated
===============  ===========================================================================

"Conceding" is measured on the partner's own scale: how much more the other side's new proposal
is worth to it than the previous one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl

from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.game import GameState, open_offer_utility, utility
from agentgym.envs.social.moves import Move, render_move
from agentgym.envs.social.negotiation import ItemDeal, PriceDeal

CONCEDED = 0.01
"""A change in value below this is no concession."""


@dataclass
class Stance:
    """How a negotiator moves its demand."""

    opening: float = 1.1
    step: float = 0.06
    """Concession per own turn, whatever the other side does."""
    reciprocity: float = 0.0
    """Extra concession per unit the other side conceded last turn (negative: hardens back)."""
    floor: float = 0.3
    """Lowest demand."""
    integrative: bool = False
    """Among equally good divisions, give the other side what it seems to value most."""
    talk_every: int = 0
    """Speak instead of moving every N-th own turn (0: never)."""
    talk: str = "question"
    """What to say on talking turns: ``question`` or ``acknowledge``."""


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
        self.update(config, state, seat)
        self.demand = max(self.stance.floor, self.demand)
        offer = open_offer_utility(state, config, seat)
        turns_left = config.max_turns - state.turn
        if offer is not None and (
            offer >= min(1.0, self.demand) or (turns_left <= 2 and offer >= self.stance.floor)
        ):
            return "action: accept"
        own_turns = sum(e.seat == seat for e in state.events)
        if self.stance.talk_every and own_turns % self.stance.talk_every == 1:
            return f"speak: {TALK[self.stance.talk]}"
        return "action: " + render_move(self.proposal(config, state, seat), config.deal)

    def update(self, config: SocialConfig, state: GameState, seat: int) -> None:
        """Move the demand before acting (strategies override)."""
        if any(e.seat == seat for e in state.events):
            self.demand -= self.stance.step + self.stance.reciprocity * last_concession(
                config, state, seat
            )

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


def last_concession(config: SocialConfig, state: GameState, seat: int) -> float:
    """How much the other side's last turn improved its proposal (for ``seat``); 0 when that
    turn was no proposal (talk, a refusal) or its first one."""
    theirs = [e for e in state.events if e.seat == 1 - seat]
    if not theirs or theirs[-1].move is None or theirs[-1].move.kind not in ("propose", "offer"):
        return 0.0
    values = other_offers(config, state, seat)
    return values[-1] - values[-2] if len(values) >= 2 else 0.0


def other_wishes(deal: ItemDeal, state: GameState, seat: int) -> dict[str, float]:
    """Units of each item the other side has asked for, on average: a guess at what it values."""
    asks = [dict(m.share) for m in state.offers_made[1 - seat]]
    return {
        i: sum(a.get(i, 0) for a in asks) / max(1, len(asks)) / deal.counts[i] for i in deal.counts
    }


TALK = {
    "question": "What matters most to you in this deal? Tell me what you need and I will see what I can do.",
    "acknowledge": "I understand where you are coming from, and I appreciate that you are working with me.",
}


# ---------------------------------------------------------------------------- strategies
class TitForTat(Negotiator):
    """Concedes once, then mirrors the other side's last concession (or hardening)."""

    def update(self, config: SocialConfig, state: GameState, seat: int) -> None:
        own = sum(e.seat == seat for e in state.events)
        if own == 1:
            self.demand -= 0.05
        elif own > 1:
            self.demand = min(
                self.stance.opening, self.demand - last_concession(config, state, seat)
            )


@dataclass
class Switcher(Negotiator):
    """Yields to pressure until ``switch``, then retaliates against it (see the module table)."""

    switch: int = 10

    def update(self, config: SocialConfig, state: GameState, seat: int) -> None:
        if not any(e.seat == seat for e in state.events):
            return
        conceded = last_concession(config, state, seat)
        if state.turn < self.switch:
            self.demand -= 0.02 if conceded > CONCEDED else 0.10
            return
        if conceded > CONCEDED:
            self.demand -= 1.5 * conceded + 0.05
        else:
            self.demand = min(
                self.stance.opening, self.demand + 0.05 + 0.05 * stubbornness(config, state, seat)
            )


def stubbornness(config: SocialConfig, state: GameState, seat: int) -> float:
    """Share of the other side's proposals that conceded nothing on the previous one."""
    values = other_offers(config, state, seat)
    steps = [b - a for a, b in zip(values, values[1:], strict=False)]
    return sum(s <= CONCEDED for s in steps) / len(steps) if steps else 0.0


STRATEGIES: dict[str, Negotiator] = {
    "hardliner": Negotiator(Stance(opening=1.3, step=0.015, floor=0.7), "hardliner"),
    "conceder": Negotiator(Stance(opening=1.0, step=0.12, floor=0.2), "conceder"),
    "tit-for-tat": TitForTat(Stance(opening=1.15, step=0.0, floor=0.3), "tit-for-tat"),
    "switcher": Switcher(Stance(opening=1.2, step=0.0, floor=0.2), "switcher"),
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
