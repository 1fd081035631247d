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

Differences from WebShop, all forced by the data or the text protocol: ``search`` is accepted
only on the search page, where ``available_actions`` offers it (WebShop's text env runs a search
from any page); goals without attributes report ``r_att = None`` (WebShop would divide by
zero); title nouns come from spaCy ``en_core_web_sm`` 3.8 (WebShop used ``en_core_web_lg``, not
installable offline), computed once per catalog.

>>> import agentgym
>>> env = agentgym.make("WebShop-v0")
>>> obs, info = env.reset(seed=0, options={"task": "webshop-test-0000"})
>>> obs.split(" [SEP] ")[0]
'WebShop'
"""

from agentgym.envs.webshop.catalog import Catalog, Product, bundled_catalog
from agentgym.envs.webshop.env import WebShopEnv, WebShopState
from agentgym.envs.webshop.goals import WebShopConfig, WebShopGold
from agentgym.envs.webshop.reward import GoalSpec, get_reward

__all__ = [
    "Catalog",
    "GoalSpec",
    "Product",
    "WebShopConfig",
    "WebShopEnv",
    "WebShopGold",
    "WebShopState",
    "bundled_catalog",
    "get_reward",
]
