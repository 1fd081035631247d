"""The WebShop oracle: search for the goal, open the best product, choose its options, buy.

It searches with the instruction (price clause removed), falling back to the goal product's title
when the instruction's top 50 misses it. Among the results it targets the goal product, or else
the result that scores best under WebShop's reward with the goal's options. On the target's page
it clicks each wanted option value the product offers, then ``Buy Now``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agentgym.envs.webshop.pages import PRODUCT_WINDOW
from agentgym.envs.webshop.reward import get_reward

if TYPE_CHECKING:
    from agentgym.envs.webshop.env import WebShopEnv

_PRICE_CLAUSE = re.compile(r",? and price lower than [\d.]+ dollars\s*$")


def search_query(env: WebShopEnv) -> str:
    """The instruction without its price clause, or the goal's title if that query misses it."""
    assert env.task is not None
    query = _PRICE_CLAUSE.sub("", env.task.instruction).strip().lower()
    if env.gold.asin in env.shop.engine.search(query):
        return query
    return env.shop.catalog[env.gold.asin].name.lower()


def target(env: WebShopEnv) -> str:
    """The result to buy: the goal product if listed, else the best-scoring result."""
    results = env.state.results
    if env.gold.asin in results:
        return env.gold.asin
    catalog, spec = env.shop.catalog, env.gold.spec()
    goal = catalog[env.gold.asin]

    def score(asin: str) -> float:
        product = catalog[asin]
        return get_reward(product, goal, spec, product.price, wanted_options(env, asin))[0]

    return max(results, key=score) if results else ""


def wanted_options(env: WebShopEnv, asin: str) -> dict[str, str]:
    """Option name -> value for each goal option value the product offers."""
    chosen: dict[str, str] = {}
    pages = env.shop.pages
    for value in env.gold.option_values():
        name = pages.option_of(asin, value)
        if name is not None:
            chosen[name] = value
    return chosen


def expert_action(env: WebShopEnv) -> str:
    """The oracle's next action in ``env``'s current state."""
    s = env.state
    if s.page == "search":
        return f"search[{search_query(env)}]"
    if s.page == "sub":
        return "click[< prev]"
    goal = target(env)
    if s.page == "results":
        if not goal:
            return "click[back to search]"
        page = s.results.index(goal) // PRODUCT_WINDOW + 1
        if page == s.page_no:
            return f"click[{goal.lower()}]"
        return "click[next >]" if page > s.page_no else "click[< prev]"
    if s.page == "item" and s.asin == goal:
        for name, value in wanted_options(env, goal).items():
            if s.options.get(name) != value:
                return f"click[{value}]"
        return "click[buy now]"
    return "click[< prev]"
