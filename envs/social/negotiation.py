"""Verifiable negotiations: items, points and prices parsed from Sotopia goals, and deal arithmetic.

Two Sotopia sources have outcomes a rule can check. *deal-or-no-deal*: the scenario lists the
items ("3 books, 2 hats, and 1 ball") and each private goal gives that agent's points per item.
*craigslist_bargains*: the scenario gives the listing price and each goal gives a role (buyer or
seller) and a private target price. Agreements are made with structured ``action`` moves (see
:mod:`agentgym.envs.social.moves`), so the outcome of an episode is exact.
"""

from __future__ import annotations

import itertools
import re
from typing import Literal

from pydantic import BaseModel, Field, model_validator

_PRICE = re.compile(r"\$\s?(\d+(?:,\d{3})*(?:\.\d+)?)")


class ItemDeal(BaseModel):
    """A deal-or-no-deal division: item counts and each side's points per unit."""

    kind: Literal["items"] = "items"
    counts: dict[str, int] = Field(min_length=1)
    """Units of each item (singular names: ``book``, ``hat``, ``ball``)."""
    values: list[dict[str, int]] = Field(min_length=2, max_length=2)
    """Points per unit, per agent (seat 0, seat 1)."""

    @model_validator(mode="after")
    def _same_items(self) -> ItemDeal:
        for seat, vals in enumerate(self.values):
            if set(vals) != set(self.counts):
                raise ValueError(
                    f"values of seat {seat} name {sorted(vals)}, the items are {sorted(self.counts)}"
                )
        return self

    def points(self, seat: int, share: dict[str, int]) -> int:
        """Points ``seat`` gets from the units in ``share``."""
        return sum(self.values[seat][item] * n for item, n in share.items())

    def max_points(self, seat: int) -> int:
        """Points ``seat`` would get with every unit."""
        return self.points(seat, self.counts)

    def rest(self, share: dict[str, int]) -> dict[str, int]:
        """What the other side gets when one side takes ``share``."""
        return {item: self.counts[item] - share.get(item, 0) for item in self.counts}

    def allocations(self) -> list[dict[str, int]]:
        """Every possible share for one side (all units of every item split in two)."""
        items = sorted(self.counts)
        ranges = [range(self.counts[i] + 1) for i in items]
        return [dict(zip(items, combo, strict=True)) for combo in itertools.product(*ranges)]


class PriceDeal(BaseModel):
    """A craigslist bargain: listing price, roles and private target prices."""

    kind: Literal["price"] = "price"
    listing: float = Field(gt=0)
    roles: list[Literal["buyer", "seller"]] = Field(min_length=2, max_length=2)
    targets: list[float] = Field(min_length=2, max_length=2)

    @model_validator(mode="after")
    def _one_of_each(self) -> PriceDeal:
        if sorted(self.roles) != ["buyer", "seller"]:
            raise ValueError(f"roles must be one buyer and one seller, got {self.roles}")
        if min(self.targets) <= 0:
            raise ValueError(f"target prices must be positive, got {self.targets}")
        return self

    @property
    def span(self) -> float:
        """Width of the scoring scale: listing price minus the buyer's target (at least 1% of it)."""
        buyer = self.targets[self.roles.index("buyer")]
        return max(self.listing - buyer, 0.01 * self.listing)

    def utility(self, seat: int, price: float) -> float:
        """0..1: 1 at or beyond the seat's own target, 0 one ``span`` on the wrong side of it."""
        target = self.targets[seat]
        gain = (target - price) if self.roles[seat] == "buyer" else (price - target)
        return min(1.0, max(0.0, 1.0 + gain / self.span))


Deal = ItemDeal | PriceDeal


# ---------------------------------------------------------------------------- parsing goals
def singular(word: str) -> str:
    """``books`` -> ``book``, ``peaches`` -> ``peach``, ``ball`` -> ``ball``."""
    word = word.lower()
    for suffix in ("ches", "shes", "xes"):
        if word.endswith(suffix):
            return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def parse_counts(scenario: str) -> dict[str, int]:
    """Item counts from a deal-or-no-deal scenario ("3 books, 2 hats, and 1 ball")."""
    counts: dict[str, int] = {}
    for raw, word in re.findall(r"\b(\d+)\s+([a-z]+)", scenario.lower()):
        counts[singular(word)] = int(raw)
    if len(counts) < 2:
        raise ValueError(f"found no item list in scenario {scenario[:80]!r}")
    return counts


def parse_values(goal: str, items: list[str]) -> dict[str, int]:
    """Points per unit for each item from one agent's goal, whatever the phrasing."""
    info = goal.lower().split("extra information:", 1)[-1]
    info = re.split(r"<strategy_hint>", info)[0]
    values: dict[str, int] = {}
    for item in items:
        forms = rf"(?:{item}|{item}s|{item}es)"
        patterns = [
            rf"{forms}[^.,;]*?(?:worth|give you|gives you|as|at|=|equals)\s*(\d+)\s*point",
            rf"(?:1|one|an?|each|the)\s+{forms}\s*(?:=|equals|is)\s*(\d+)",
            rf"{forms}\s+(?:is|are)\s+(\d+)\s*point",
        ]
        for pattern in patterns:
            if m := re.search(pattern, info):
                values[item] = int(m.group(1))
                break
        else:
            raise ValueError(f"no points for {item!r} in goal {goal[:100]!r}")
    return values


def parse_item_deal(scenario: str, goals: list[str]) -> ItemDeal:
    """An :class:`ItemDeal` from a deal-or-no-deal scenario and its two goals."""
    counts = parse_counts(scenario)
    return ItemDeal(counts=counts, values=[parse_values(g, sorted(counts)) for g in goals])


def parse_price_deal(scenario: str, goals: list[str]) -> PriceDeal:
    """A :class:`PriceDeal` from a craigslist scenario (listing price) and its two goals."""
    listing = _PRICE.search(scenario)
    if listing is None:
        raise ValueError(f"no listing price in scenario {scenario[:80]!r}")
    roles: list[Literal["buyer", "seller"]] = []
    targets = []
    for goal in goals:
        role = re.search(r"\b(buyer|seller)\b", goal.lower())
        price = _PRICE.search(goal)
        if role is None or price is None:
            raise ValueError(f"no role and target price in goal {goal[:100]!r}")
        roles.append("buyer" if role.group(1) == "buyer" else "seller")
        targets.append(float(price.group(1).replace(",", "")))
    return PriceDeal(listing=float(listing.group(1).replace(",", "")), roles=roles, targets=targets)


def parse_deal(source: str, scenario: str, goals: list[str]) -> Deal | None:
    """The verifiable deal of a scenario, or None for sources without one."""
    if source == "deal-or-no-deal":
        return parse_item_deal(scenario, goals)
    if source == "craigslist_bargains":
        return parse_price_deal(scenario, goals)
    return None
