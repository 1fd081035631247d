"""``WebShopEnv``: WebShop's text-mode shop (search, results, item, sub-pages, buy) and reward.

Page transitions follow ``SimServer.receive`` of WebShop's text env; see :class:`WebShopEnv`'s card.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from agentgym.env import ResetNeeded, StepResult, TextEnv
from agentgym.envs.webshop.catalog import Catalog, bundled_catalog
from agentgym.envs.webshop.expert import expert_action
from agentgym.envs.webshop.goals import WebShopConfig, WebShopGold
from agentgym.envs.webshop.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    NEXT_PAGE,
    PREV_PAGE,
    SUB_PAGES,
    Pages,
)
from agentgym.envs.webshop.reward import get_reward
from agentgym.envs.webshop.search import SearchEngine
from agentgym.task import Task

_ACTION = re.compile(r"^\s*(search|click)\s*\[(.+)\]\s*$", re.IGNORECASE | re.DOTALL)
SYNTAX = "search[keywords] on the search page, or click[button] with a button the page shows"
_SUB = {s.lower(): s for s in SUB_PAGES}


@dataclass
class WebShopState:
    """Everything that changes during an episode (snapshot copies exactly this)."""

    page: str = "search"
    """search, results, item, sub or done."""
    keywords: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    page_no: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str | None = None
    steps: int = 0
    reward: float = 0.0
    reward_info: dict[str, Any] = field(default_factory=dict)


class Shop:
    """A catalog with its search engine and page renderer (built once, shared by envs)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.engine = SearchEngine(catalog)
        self.pages = Pages(catalog)


@cache
def shop_for(catalog: str) -> Shop:
    """The shop of ``WebShopConfig.catalog`` (``bundled`` or a catalog file path)."""
    if catalog == "bundled":
        return Shop(bundled_catalog())
    return Shop(Catalog.from_file(Path(catalog)))


class WebShopEnv(TextEnv):
    """WebShop: shop a web store for a product matching an instruction, scored by WebShop's reward.

    A WebShop-compatible environment (Yao et al., 2022, "WebShop: Towards Scalable Real-World Web
    Interaction with Grounded Language Agents") in WebShop's text observation mode: the same pages,
    strings, buttons and transitions as its text env, BM25 search over the catalog (top 50, 10 per
    page) and WebShop's ``get_reward`` reimplemented part for part.

    =====================  =========================================================================
    Id                     ``agentgym/WebShop-v0`` (``agentgym.make("WebShop-v0")``)
    Class                  :class:`agentgym.envs.webshop.env.WebShopEnv`
    Actions                ``search[keywords]`` on the search page; ``click[button]`` with a button of
                           the page: a product id, an option value, ``Next >``, ``< Prev``,
                           ``Back to Search``, ``Description``, ``Features``, ``Reviews``,
                           ``Buy Now`` (case-insensitive). ``info["available_actions"]`` lists them
                           (``search[<keywords>]`` on the search page). Anything else is invalid:
                           the observation says why and what is allowed, ``info["valid"] = False``
    Observations           WebShop's text mode, strings joined by `` [SEP] ``: ``WebShop [SEP]
                           Instruction: [SEP] ... [SEP] Search``; results ``Back to Search [SEP] Page
                           1 (Total results: 50) [SEP] Next > [SEP] <asin> [SEP] <title> [SEP]
                           <price> ...``; item ``< Prev [SEP] <option> [SEP] <values> ... [SEP]
                           <title> [SEP] Price: ... [SEP] Rating: ... [SEP] Description [SEP]
                           Features [SEP] Reviews [SEP] Buy Now``; sub-pages; the done page
    Reward                 on ``Buy Now``: WebShop's reward ``r_type * (attributes + options +
                           price matched) / (|attributes| + |options| + 1)``
                           (:mod:`agentgym.envs.webshop.reward`); 0 otherwise. ``info["score"] =
                           min(reward, 1)`` (WebShop counts every purchased option, so extra options
                           can exceed 1); ``success`` = reward 1; papers report score x 100
    Episode end            ``Buy Now`` terminates; ``max_steps`` actions (default 15, valid or not)
                           truncate unsolved. The final ``info`` has ``success``, ``score`` and, on a
                           purchase, ``reward_info`` (r_type, r_att, r_option, r_price, ...)
    Splits                 ``webshop/test`` 500 (WebShop goals only: every one of the 415
                           WebShop instruction records, then 85 second goals), ``webshop/train``
                           8,738 (3,518 WebShop goals + 5,220 tau2 option goals); tags
                           ``webshop``/``tau2`` and the category. WebShop goals are
                           ``get_synthetic_goals``': the record's instruction + one full
                           combination of the product's options + WebShop's price limit
    Expert                 ``expert_action()``: searches with the instruction (the goal's title if
                           that misses), opens the goal product (else the best-scoring result),
                           clicks the wanted options, buys; reward 1 on every bundled task
    Search                 BM25 (bm25s, Lucene variant, Pyserini's k1 0.9 / b 0.4, Porter stems,
                           Lucene stop words) over title, description, first feature, options;
                           2,700-10,000 searches/s on one core, 7-11x SQLite FTS5
                           (``benchmarks/webshop.py``)
    Catalog                1,050 products in WebShop's schema (``data/catalog.json``): the 1,000
                           WebShop records of ``items_ins_v2_1000.json`` (real ASINs, categories,
                           queries, attributes and instructions) with listings derived by
                           documented rules (:mod:`agentgym.envs.webshop.listing`): options by
                           category (674 of 1,000), prices from a per-category log-normal (medians
                           beauty $18, grocery $15, electronics $40, fashion $25, garden $120; 250
                           priced as a range, paid uniformly within it as WebShop does), Amazon-style
                           titles, description, one feature bullet per attribute, 0-5 reviews and
                           their mean rating; and the 50 tau2-bench retail products with their real
                           options and prices. See :mod:`agentgym.envs.webshop.build`
    Comparability          scores are comparable to WebShop's published numbers only on WebShop's
                           own catalog (``items_shuffle_1000.json``, real Amazon listings, not
                           available offline): load it with ``original.load_original``. On the
                           bundled catalog they measure the same skills on approximate listings
    Original data          :func:`agentgym.envs.webshop.original.load_original` reads WebShop's
                           ``items_shuffle*.json``, ``items_ins_v2*.json`` and
                           ``items_human_ins.json`` into a catalog and human goals
    Regenerate             ``python -m agentgym.envs.webshop.build`` (needs spaCy for title
                           nouns), then ``python -m agentgym.envs.webshop.generate``
    =====================  =========================================================================

    Config (``Task.config``, :class:`WebShopConfig`): ``catalog`` (``bundled`` or a catalog JSON
    path), ``max_steps``. Gold (:class:`WebShopGold`): ``asin`` of the goal product, ``attributes``,
    ``goal_options`` (name -> value, or values), ``price_upper``; the goal's title, query and
    breadcrumb come from the catalog.

    The bundled listings approximate WebShop's ``items_shuffle_1000.json``: options come by
    category and query (value pools from tau2's variants and from the values WebShop's human
    instructions ask for); the per-category price medians are set so the nine real prices in
    WebShop's human trajectories fall inside their category's 2nd-98th percentile; reviews are
    J-shaped 0-5 scores, the rating their mean (``N.A.`` without). The test split takes goals in
    rounds over products, so fashion's many size x colour combinations do not take it over.

    Differences from WebShop, all forced by the data or the text protocol: ``search`` is accepted
    only on the search page, where ``available_actions`` offers it (WebShop's text env runs a search
    from any page); goals without attributes report ``r_att = None`` (WebShop would divide by
    zero); title nouns come from spaCy ``en_core_web_sm`` 3.8 (WebShop used ``en_core_web_lg``, not
    installable offline), computed once per catalog.
    """

    one_line_actions = True
    action_max_tokens = 64
    demo_suite = "webshop/train"

    config_model = WebShopConfig
    default_suite = "webshop/test"
    system_prompt = (
        "You are shopping on a web store for a product that matches an instruction.\n"
        "Every turn, reply with exactly one action:\n"
        "  search[keywords]  - on the search page: search the store\n"
        "  click[button]     - click a button the page shows: a product id, an option value,\n"
        "                      Next >, < Prev, Back to Search, Description, Features, Reviews,\n"
        "                      Buy Now\n"
        "Pick the options the instruction asks for before clicking Buy Now; buying ends the\n"
        "episode and you are scored on how well the product matches (1.0 = all of it)."
    )

    config: WebShopConfig
    state: WebShopState

    @classmethod
    def validate_task(cls, task: Task) -> WebShopConfig:
        """Validate config and gold; the gold product must be in the catalog."""
        config = WebShopConfig.model_validate(task.config)
        gold = WebShopGold.model_validate(task.gold)
        if not (config.catalog == "bundled" or Path(config.catalog).is_file()):
            raise ValueError(f"config.catalog: {config.catalog!r} is neither 'bundled' nor a file")
        if gold.asin not in shop_for(config.catalog).catalog:
            raise ValueError(f"gold.asin: {gold.asin!r} is not in catalog {config.catalog!r}")
        return config

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._rebuild(task)
        self.state = WebShopState()
        return self._render(), self._info(True)

    def _rebuild(self, task: Task) -> None:
        """The catalog's shop (shared between envs) and the task's gold product."""
        self.shop = shop_for(self.config.catalog)
        self.gold = WebShopGold.model_validate(task.gold)

    # ------------------------------------------------------------------ actions
    def _step(self, action: str) -> StepResult:
        self.state.steps += 1
        match = _ACTION.match(action)
        if match is None:
            return self._invalid(f"Unrecognised action {action.strip()[:80]!r}.")
        verb, argument = match.group(1).lower(), match.group(2).strip().lower()
        if verb == "search":
            if self.state.page != "search":
                return self._invalid(
                    "search[...] works on the search page; click[back to search] first."
                )
            return self._search(tuple(argument.split(" ")), 1)
        if argument not in self.clickables():
            return self._invalid(f"There is no {argument!r} to click on this page.")
        return self._click(argument)

    def _step_invalid(self, message: str) -> StepResult:
        self.state.steps += 1
        return self._invalid(message)

    def _search(self, keywords: tuple[str, ...], page: int) -> StepResult:
        s = self.state
        s.keywords, s.page_no, s.page, s.asin, s.options = keywords, page, "results", None, {}
        s.results = self.shop.engine.search_keywords(keywords)
        return self._advance()

    def _click(self, name: str) -> StepResult:
        s = self.state
        if name == BUY_NOW.lower():
            return self._buy()
        if name == BACK_TO_SEARCH.lower():
            self.state = WebShopState(steps=s.steps)
        elif name == NEXT_PAGE.lower():
            return self._search(s.keywords, s.page_no + 1)
        elif name == PREV_PAGE.lower():
            if s.page == "results":
                return self._search(s.keywords, s.page_no - 1)
            s.page, s.sub_page = ("item", None) if s.page == "sub" else ("results", None)
            if s.page == "results":
                return self._search(s.keywords, s.page_no)
        elif name in _SUB:
            s.page, s.sub_page = "sub", _SUB[name]
        elif s.page == "results":
            s.page, s.asin = "item", name.upper()
        else:
            option = self.shop.pages.option_of(s.asin or "", name)
            s.options[option or name] = name
        return self._advance()

    def _buy(self) -> StepResult:
        s = self.state
        assert s.asin is not None  # Buy Now is only clickable on an item page
        catalog = self.shop.catalog
        bought, wanted = catalog[s.asin], catalog[self.gold.asin]
        s.reward, s.reward_info = get_reward(
            bought, wanted, self.gold.spec(), bought.price, s.options
        )
        s.page = "done"
        info = self._info(True) | {
            "success": s.reward >= 1.0,
            "score": min(s.reward, 1.0),
            "reward_info": dict(s.reward_info),
            "purchased": {"asin": s.asin, "options": dict(s.options), "price": bought.price},
        }
        return self._render(), s.reward, True, False, info

    # ------------------------------------------------------------------ bookkeeping
    def _advance(self) -> StepResult:
        if self.state.steps >= self.config.max_steps:
            return self._truncate(self._render(), True)
        return self._render(), 0.0, False, False, self._info(True)

    def _invalid(self, message: str) -> StepResult:
        allowed = ", ".join(self.available_actions())
        observation = f"Invalid action. {message} Use {SYNTAX}. Available: {allowed}"
        if self.state.steps >= self.config.max_steps:
            return self._truncate(observation, False)
        return observation, 0.0, False, False, self._info(False)

    def _truncate(self, observation: str, valid: bool) -> StepResult:
        info = self._info(valid) | {"success": False, "score": 0.0}
        message = f"{observation}\nOut of steps ({self.config.max_steps}): nothing was bought."
        return message, 0.0, False, True, info

    def _info(self, valid: bool) -> dict[str, Any]:
        return {
            "valid": valid,
            "page": self.state.page,
            "steps_left": self.config.max_steps - self.state.steps,
            "available_actions": self.available_actions(),
        }

    def clickables(self) -> list[str] | tuple[str, ...]:
        """WebShop's clickable keys on the current page."""
        s, pages = self.state, self.shop.pages
        if s.page == "results":
            return pages.result_clickables(s.results, s.page_no)
        if s.page == "item":
            return pages.item_clickables(s.asin or "")
        if s.page == "sub":
            return (BACK_TO_SEARCH.lower(), PREV_PAGE.lower())
        return ()

    def available_actions(self) -> list[str]:
        """``search[<keywords>]`` on the search page, else ``click[...]`` per clickable."""
        if self.state.page == "search":
            return ["search[<keywords>]"]
        return [f"click[{c}]" for c in self.clickables()]

    def _render(self) -> str:
        s, pages, text = self.state, self.shop.pages, self.task.instruction if self.task else ""
        if s.page == "results":
            return pages.results(text, s.results, s.page_no)
        if s.page == "item":
            return pages.item(text, s.asin or "")
        if s.page == "sub":
            return pages.sub_page(text, s.asin or "", s.sub_page or "Description")
        if s.page == "done":
            return pages.done(s.asin or "", s.options, s.reward)
        return pages.search(text)

    # ------------------------------------------------------------------ oracle
    def expert_action(self) -> str:
        """Search for the goal, open the best product, choose the goal's options, buy."""
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        return expert_action(self)
