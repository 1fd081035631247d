"""Task config and gold of ``agentgym/WebShop-v0``, and WebShop's goal arithmetic.

A task names its target product by ASIN; the rest of WebShop's goal (name, query, category,
breadcrumb) is read from the catalog, so suites stay small. WebShop's price limit rule and
instruction wording live here too (``web_agent_site/engine/goal.py``: ``PRICE_RANGE``,
``get_human_goals``, ``get_synthetic_goals``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentgym.envs.webshop.reward import GoalSpec

PRICE_RANGE = tuple(10.0 * i for i in range(1, 100))
"""WebShop's price limits: $10, $20, ... $990."""
NO_PRICE_LIMIT = 1_000_000.0
"""WebShop's ``price_upper`` when no limit in :data:`PRICE_RANGE` fits (price >= $980)."""


class WebShopConfig(BaseModel):
    """``Task.config`` of ``agentgym/WebShop-v0``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    catalog: str = "bundled"
    """``bundled`` (the catalog shipped with agentgym) or a path to a catalog JSON file."""
    max_steps: int = Field(default=15, ge=1, le=1000)
    """Actions (valid or not) before the episode is truncated unsolved (ReAct ran 15)."""


class WebShopGold(BaseModel):
    """``Task.gold``: WebShop's goal fields that are not in the catalog."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    asin: str = Field(min_length=1)
    """The product the instruction was written for (type reward compares against it)."""
    attributes: list[str] = Field(default_factory=list)
    """Wanted attributes (WebShop's ``attributes``)."""
    goal_options: dict[str, str] | list[str] = Field(default_factory=dict)
    """Wanted options: name -> value (synthetic goals) or bare values (human goals)."""
    price_upper: float = Field(gt=0)
    """Price limit; ``1000000`` means none."""

    def option_values(self) -> list[str]:
        """The wanted option values, as ``get_reward`` reads them."""
        if isinstance(self.goal_options, Mapping):
            return list(self.goal_options.values())
        return list(self.goal_options)

    def spec(self) -> GoalSpec:
        """What the reward needs besides the goal product."""
        return GoalSpec(tuple(self.attributes), tuple(self.option_values()), self.price_upper)


def price_limit(price: float, rng: random.Random) -> tuple[float, str]:
    """WebShop's ``price_upper`` and its instruction suffix for a product of ``price``.

    The limit is the larger of two limits drawn from the four :data:`PRICE_RANGE` steps above the
    price; with fewer than two steps left there is no limit and no suffix.
    """
    steps = [p for p in PRICE_RANGE if p > price][:4]
    if len(steps) < 2:
        return NO_PRICE_LIMIT, ""
    _, upper = sorted(rng.sample(steps, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def synthetic_instruction(query: str, goal_options: Mapping[str, str], price_text: str) -> str:
    """A tau2 listing's goal wording: ``Find me <query> with <name>: <value>, and ...``."""
    return synthetic_instruction_text(f"Find me {query}", goal_options, price_text)


def synthetic_instruction_text(
    instruction: str, goal_options: Mapping[str, str], price_text: str
) -> str:
    """``get_synthetic_goals``' wording over a record's instruction: ``<instruction> with <name>:
    <value>, and ...`` then the price clause."""
    option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
    return f"{instruction}{' with ' + option_text if option_text else ''}{price_text}"


def human_instruction(instruction: str, price_text: str) -> str:
    """``get_human_goals``' wording: the written instruction without its full stop, + price."""
    return instruction.strip(".") + price_text


def gold_dict(
    asin: str, attributes: list[str], goal_options: dict[str, str], upper: float
) -> dict[str, Any]:
    """A validated ``Task.gold`` dict."""
    gold = WebShopGold(
        asin=asin, attributes=attributes, goal_options=goal_options, price_upper=upper
    )
    return gold.model_dump()
