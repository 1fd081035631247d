"""Negotiation moves: structured ``action`` arguments that make agreements verifiable.

=====================  =================================================================
``propose ITEM=N, ...``  divide items: the units *you* take (unnamed items: 0); the rest is
                         the other side's. Example: ``propose book=2, hat=0, ball=1``
``offer $PRICE``         bargain: the price you propose (``offer $420`` or ``offer 420``)
``accept``               accept the other side's latest proposal or offer: the deal is made
``reject``               turn down the other side's latest proposal or offer
=====================  =================================================================

Any other ``action`` argument is an ordinary physical action with no effect on the deal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentgym.envs.social.negotiation import ItemDeal, PriceDeal, singular

_MOVE = re.compile(r"^\s*(propose|offer|accept|reject)\b\s*:?\s*(.*)$", re.IGNORECASE | re.DOTALL)
_PAIR = re.compile(r"([a-zA-Z]+)\s*[=:]\s*(\d+)")
_AMOUNT = re.compile(r"^\$?\s*(\d+(?:,\d{3})*(?:\.\d+)?)\s*$")


class MoveError(ValueError):
    """A negotiation move that does not fit the deal; the message says what is allowed."""


@dataclass(frozen=True)
class Move:
    """A parsed negotiation move: ``kind`` in propose/offer/accept/reject."""

    kind: str
    share: tuple[tuple[str, int], ...] = ()
    """For ``propose``: (item, units the proposer takes), sorted by item."""
    price: float | None = None
    """For ``offer``."""


def move_syntax(deal: ItemDeal | PriceDeal) -> str:
    """The move syntax for this kind of deal, with an example."""
    if isinstance(deal, ItemDeal):
        example = ", ".join(f"{item}={n // 2}" for item, n in sorted(deal.counts.items()))
        return (
            f'"action" moves: "propose {example}" (the units you take; the rest go to the other '
            'side), "accept" (the other side\'s latest proposal), "reject".'
        )
    return (
        f'"action" moves: "offer ${deal.listing:g}" (the price you propose), "accept" '
        '(the other side\'s latest offer), "reject".'
    )


def parse_move(argument: str, deal: ItemDeal | PriceDeal) -> Move | None:
    """The move in an ``action`` argument; None if it is no negotiation move."""
    m = _MOVE.match(argument)
    if m is None:
        return None
    kind, rest = m.group(1).lower(), m.group(2).strip()
    if kind in ("accept", "reject"):
        return Move(kind)
    if kind == "propose" and isinstance(deal, ItemDeal):
        return Move(kind, share=_share(rest, deal))
    if kind == "offer" and isinstance(deal, PriceDeal):
        amount = _AMOUNT.match(rest)
        if amount is None:
            raise MoveError(f"offer needs a price, e.g. offer ${deal.listing:g}; got {rest!r}")
        return Move(kind, price=float(amount.group(1).replace(",", "")))
    raise MoveError(f"{kind!r} does not apply to this negotiation. {move_syntax(deal)}")


def _share(text: str, deal: ItemDeal) -> tuple[tuple[str, int], ...]:
    pairs = _PAIR.findall(text)
    if not pairs:
        raise MoveError(f"propose needs ITEM=N pairs. {move_syntax(deal)}")
    share = dict.fromkeys(deal.counts, 0)
    for word, raw in pairs:
        item = singular(word)
        if item not in deal.counts:
            raise MoveError(
                f"unknown item {word!r}; the items are {', '.join(sorted(deal.counts))}"
            )
        if int(raw) > deal.counts[item]:
            raise MoveError(f"there are only {deal.counts[item]} {item}(s), not {raw}")
        share[item] = int(raw)
    return tuple(sorted(share.items()))


def render_move(move: Move, deal: ItemDeal | PriceDeal) -> str:
    """A move as its canonical ``action`` argument."""
    if move.kind == "propose":
        return "propose " + ", ".join(f"{i}={n}" for i, n in move.share)
    if move.kind == "offer":
        return f"offer ${move.price:g}"
    return move.kind
