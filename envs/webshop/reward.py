"""WebShop's purchase reward (``web_agent_site/engine/goal.py`` ``get_reward``), reimplemented.

``reward = r_type * (attribute matches + option matches + price ok) / (|attributes| + |options| + 1)``

- **r_type** (is it the right kind of product?): 1.0, lowered to 0.5 when neither the search
  query, nor two levels of the category breadcrumb, nor more than 20% of the goal title's nouns
  match; 0.1 when under 10% of the nouns match; 0.0 when none do. Nouns are the title tokens that
  spaCy tags ``NOUN``/``PROPN``; the catalog stores them per product (``title_nouns``), duplicates
  included, exactly as ``get_type_reward`` counts them (``|set ∩ set| / len(list)``).
- **attributes**: a goal attribute matches when ``token_set_ratio`` with one of the product's
  attributes is above 85, or when it is a substring of the title, features or description.
- **options**: each *purchased* option matches when its value (after ``normalize_color``) equals a
  goal option (option names listed in ``EXACT_MATCH_OPTS``), is fuzzily above 85 (other names),
  or occurs in the title, features or description. WebShop counts purchased options, so choosing
  extra options can push the reward above 1; the env reports ``score = min(reward, 1)``.
- **price**: 1 when the price is at most ``price_upper``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentgym.envs.webshop.text import normalize_color, token_set_ratio

EXACT_MATCH_OPTS = ("size",)
FUZZY_THRESHOLD = 85


class Purchasable(Protocol):
    """What the reward reads from a product (``catalog.Product`` has it)."""

    @property
    def query(self) -> str: ...
    @property
    def product_category(self) -> str: ...
    @property
    def title_nouns(self) -> tuple[str, ...]: ...
    @property
    def attributes(self) -> tuple[str, ...]: ...
    @property
    def text_lower(self) -> tuple[str, str, str]: ...


@dataclass(frozen=True)
class GoalSpec:
    """The parts of a WebShop goal the reward needs (the goal product is given separately)."""

    attributes: tuple[str, ...]
    goal_options: tuple[str, ...]
    """Wanted option values (WebShop uses the values of ``goal_options`` when it is a dict)."""
    price_upper: float


def type_reward(purchased: Purchasable, goal: Purchasable) -> dict[str, Any]:
    """``get_type_reward``: r_type with query_match, category_match and title_score."""
    query_match = purchased.query == goal.query
    bought = {part.strip() for part in purchased.product_category.split("›")}
    wanted = {part.strip() for part in goal.product_category.split("›")}
    category_match = len(bought & wanted) >= 2
    desired = goal.title_nouns
    common = len(set(purchased.title_nouns) & set(desired))
    title_score = 0.2 if not desired else common / len(desired)
    return {
        "r_type": r_type_rule(query_match, category_match, title_score),
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def r_type_rule(query_match: bool, category_match: bool, title_score: float) -> float:
    """1.0 if any signal matches (title: over 20% of nouns), else 0.5; 0.1 under 10%; 0 at 0."""
    if title_score == 0.0:
        return 0.0
    if title_score < 0.1:
        return 0.1
    return 1.0 if (query_match or category_match or title_score > 0.2) else 0.5


def _in_text(value: str, product: Purchasable) -> bool:
    title, features, description = product.text_lower
    return value in title or value in features or value in description


def attribute_matches(purchased: Purchasable, attributes: Sequence[str]) -> int:
    """``get_attribute_reward``'s count of goal attributes the product has."""
    matches = 0
    for wanted in attributes:
        if any(
            token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in purchased.attributes
        ) or _in_text(wanted, purchased):
            matches += 1
    return matches


def option_matches(
    purchased: Purchasable, goal_options: Sequence[str], options: Mapping[str, str]
) -> int:
    """``get_option_reward``'s count of purchased options that match a goal option."""
    wanted = [normalize_color(o) for o in goal_options]
    matches = 0
    for name, raw in options.items():
        value = normalize_color(raw)
        if name.lower() in EXACT_MATCH_OPTS:
            matched = value in wanted
        else:
            matched = any(token_set_ratio(g, value) > FUZZY_THRESHOLD for g in wanted)
        if matched or _in_text(value, purchased):
            matches += 1
    return matches


def get_reward(
    purchased: Purchasable,
    goal_product: Purchasable,
    goal: GoalSpec,
    price: float,
    options: Mapping[str, str],
) -> tuple[float, dict[str, Any]]:
    """WebShop's reward for buying ``purchased`` at ``price`` with ``options``, and its parts."""
    info = type_reward(purchased, goal_product)
    n_attributes, n_options = len(goal.attributes), len(goal.goal_options)
    denominator = n_attributes + n_options + 1
    r_price = price <= goal.price_upper if goal.price_upper > 0 else None
    n_att = attribute_matches(purchased, goal.attributes)
    n_opt = option_matches(purchased, goal.goal_options, options)
    reward = (n_att + n_opt + bool(r_price)) / denominator * info["r_type"]
    r_att = n_att / n_attributes if n_attributes else None  # WebShop divides by zero here
    info.update(r_att=r_att, w_att=n_attributes / denominator)
    if n_options:
        info.update(r_option=n_opt / n_options, w_option=n_options / denominator)
    if r_price is not None:
        info.update(r_price=r_price, w_price=1 / denominator)
    return reward, info
