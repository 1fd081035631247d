"""Load WebShop's own data files into a :class:`Catalog` and WebShop goals, for users who have them.

``items_shuffle*.json`` (products: ``asin``, ``name``, ``full_description``,
``small_description``, ``pricing``, ``customization_options``, ``category``, ``query``,
``product_category``), ``items_ins_v2*.json`` (per ASIN: ``attributes`` and, for synthetic goals,
``instruction``/``instruction_attributes``), ``items_human_ins.json`` (per ASIN: a list of human
instructions with ``instruction_attributes`` and ``instruction_options``) and optionally the reviews
file. Field handling follows ``load_products``, ``generate_product_prices`` and
``get_human_goals``; a pass over the titles with spaCy gives each product its title nouns.

    catalog, goals = load_original("items_shuffle_1000.json", "items_ins_v2_1000.json",
                                   "items_human_ins.json")
    catalog.write(Path("webshop_1k.json"))   # then Task.config = {"catalog": "webshop_1k.json"}

This is the way to scores comparable with WebShop's published numbers: those are measured on
WebShop's own catalog, and the bundled catalog only approximates it (see
:mod:`agentgym.envs.webshop.listing`). ``tests/data/webshop/original/`` holds a small fixture in
WebShop's file format (nine real goal products of WebShop's human trajectories) that the tests
load and play.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentgym.envs.webshop.catalog import DEFAULT_PRICE, Catalog, Product, Review
from agentgym.envs.webshop.goals import gold_dict, human_instruction, price_limit
from agentgym.envs.webshop.nouns import Tagger, spacy_tagger

ASIN_MAX_LEN = 10
PRICE_SEED = 233


def parse_pricing(pricing: str | None) -> tuple[float, ...]:
    """``"$10.99 - $12.50"`` -> ``(10.99, 12.5)``; missing -> WebShop's ``(100.0,)``."""
    if not pricing:
        return (DEFAULT_PRICE,)
    prices = [float(Decimal(re.sub(r"[^\d.]", "", p))) for p in pricing.split("$")[1:]]
    return tuple(prices[:2]) if prices else (DEFAULT_PRICE,)


def parse_options(customization: dict[str, Any] | None) -> dict[str, tuple[str, ...]]:
    """``customization_options`` -> option name -> values (lower case, ``/`` as `` | ``)."""
    options: dict[str, tuple[str, ...]] = {}
    for name, contents in (customization or {}).items():
        if contents is None:
            continue
        values = [c["value"].strip().replace("/", " | ").lower() for c in contents]
        options[name.lower()] = tuple(values)
    return options


def _reviews(rows: Sequence[dict[str, Any]]) -> tuple[Review, ...]:
    """``load_products``' review fields: ``score`` (else ``stars``) and the body from ``review``
    (a review without ``review`` shows an empty body, as in WebShop)."""
    return tuple(
        Review(
            str(r.get("title", "")),
            int(float(r["score"] if "score" in r else r.get("stars", 0))),
            str(r.get("review", "")),
        )
        for r in rows
    )


def to_product(
    raw: dict[str, Any], attributes: dict[str, Any], reviews: dict[str, Any], rng: random.Random
) -> Product:
    """One ``items_shuffle`` record as a product (nouns are added by :func:`load_original`)."""
    pricing = parse_pricing(raw.get("pricing"))
    price = pricing[0] if len(pricing) == 1 else rng.uniform(*pricing[:2])
    bullets = raw.get("small_description") or []
    review = reviews.get(raw["asin"], {})
    return Product(
        asin=raw["asin"],
        name=raw["name"],
        category=raw["category"],
        query=raw["query"].lower().strip(),
        product_category=raw["product_category"],
        pricing=pricing,
        price=price,
        options=parse_options(raw.get("customization_options")),
        attributes=tuple(attributes.get(raw["asin"], {}).get("attributes", ["DUMMY_ATTR"])),
        bullet_points=tuple(bullets if isinstance(bullets, list) else [bullets]),
        description=raw.get("full_description") or "",
        reviews=_reviews(review.get("reviews", [])),
        rating=str(review.get("average_rating", "N.A.")),
        source="original",
    )


def load_original(
    products_file: str | Path,
    attributes_file: str | Path,
    human_file: str | Path | None = None,
    reviews_file: str | Path | None = None,
    tagger: Tagger | None = None,
) -> tuple[Catalog, list[dict[str, Any]]]:
    """The catalog of WebShop's files and its human goals (``instruction`` + ``gold`` dicts)."""
    raw_products = json.loads(Path(products_file).read_text(encoding="utf-8"))
    attributes = json.loads(Path(attributes_file).read_text(encoding="utf-8"))
    reviews = {}
    if reviews_file is not None:
        reviews = {r["asin"]: r for r in json.loads(Path(reviews_file).read_text(encoding="utf-8"))}
    rng, seen, products = random.Random(PRICE_SEED), set(), []
    for raw in raw_products:
        asin = raw["asin"]
        if asin == "nan" or len(asin) > ASIN_MAX_LEN or asin in seen:
            continue
        seen.add(asin)
        products.append(to_product(raw, attributes, reviews, rng))
    nouns = (tagger or spacy_tagger())([p.name for p in products])
    rows = [{**p.to_json(), "title_nouns": list(n)} for p, n in zip(products, nouns, strict=True)]
    catalog = Catalog((Product.from_json(r) for r in rows), name=str(products_file))
    goals = human_goals(catalog, Path(human_file)) if human_file is not None else []
    return catalog, goals


def human_goals(catalog: Catalog, human_file: Path) -> list[dict[str, Any]]:
    """``get_human_goals``: one goal per human instruction with attributes, WebShop's price rule."""
    instructions = json.loads(human_file.read_text(encoding="utf-8"))
    rng, goals = random.Random(PRICE_SEED), []
    for product in catalog:
        for written in instructions.get(product.asin, []):
            if not written.get("instruction_attributes"):
                continue
            upper, price_text = price_limit(product.price, rng)
            options = list(written.get("instruction_options", []))
            goals.append(
                {
                    "instruction": human_instruction(written["instruction"], price_text),
                    "gold": gold_dict(
                        product.asin, list(written["instruction_attributes"]), {}, upper
                    )
                    | {"goal_options": options},
                }
            )
    return goals
