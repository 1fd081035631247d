"""The bundled WebShop catalog's shape (options, per-category prices, product pages) and WebShop's
goal construction over it."""

from __future__ import annotations

import json
import random
import re
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from support import shared_data
from test_webshop import run_expert

from agentgym.envs.webshop import listing
from agentgym.envs.webshop.catalog import DEFAULT_PRICE, bundled_catalog
from agentgym.envs.webshop.env import WebShopEnv, shop_for
from agentgym.envs.webshop.generate import COMPARABILITY
from agentgym.envs.webshop.goals import NO_PRICE_LIMIT, PRICE_RANGE, WebShopGold
from agentgym.envs.webshop.reward import get_reward
from agentgym.task import TaskSuite

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks" / "webshop"
TRAJECTORIES = shared_data() / "webshop" / "human_trajectories"
WEBSHOP_RECORDS = [p for p in bundled_catalog() if p.source == "webshop"]


@pytest.fixture(scope="module")
def held_out() -> TaskSuite:
    return TaskSuite.load(TASKS / "test.jsonl")


# ------------------------------------------------------------ prices
def test_prices_vary_per_category_as_documented() -> None:
    assert len({p.price for p in WEBSHOP_RECORDS}) > 400
    assert sum(p.price == DEFAULT_PRICE for p in WEBSHOP_RECORDS) < 5
    by_category: dict[str, list[float]] = defaultdict(list)
    for p in WEBSHOP_RECORDS:
        by_category[p.category].append(p.pricing[0])
    for category, prices in by_category.items():
        model = listing.PRICE_MODELS[category]
        median = statistics.median(prices)
        assert model.quantile(0.35) < median < model.quantile(0.65), category
    medians = {c: statistics.median(v) for c, v in by_category.items()}
    assert medians["garden"] > medians["electronics"] > medians["fashion"] > medians["grocery"]
    ranges = [p for p in WEBSHOP_RECORDS if len(p.pricing) == 2]
    assert 100 < len(ranges) < 400
    assert all(lo < p.price < hi for p in ranges for lo, hi in [p.pricing])
    assert all(p.price_tag == f"${p.pricing[0]} to ${p.pricing[1]}" for p in ranges)
    meta = json.loads((ROOT / "envs" / "webshop" / "data" / "catalog.json").read_text())["meta"]
    assert meta["listing_rules"]["price_models"]["garden"]["median"] == 120.0


def test_webshop_trajectory_prices_sit_inside_their_category_model() -> None:
    """The documented calibration: the nine real prices in WebShop's human trajectories."""
    if not TRAJECTORIES.is_dir():
        pytest.skip("WebShop human trajectories not available")
    for path in sorted(TRAJECTORIES.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        done = next(r for r in rows if r["page"] == "done")
        model = listing.PRICE_MODELS[rows[0]["goal"]["category"]]
        price = done["content"]["price"]
        assert model.quantile(0.02) < price < model.quantile(0.98), (path.name, price)


def test_goal_price_limit_is_above_the_target_and_the_price_term_bites(
    held_out: TaskSuite,
) -> None:
    catalog = bundled_catalog()
    limits = set()
    for task in held_out:
        upper, product = task.gold["price_upper"], catalog[task.gold["asin"]]
        assert upper > product.price and (upper in PRICE_RANGE or upper == NO_PRICE_LIMIT)
        steps = [p for p in PRICE_RANGE if p > product.price][:4]
        assert upper == NO_PRICE_LIMIT or upper in steps[1:], task.id
        limits.add(upper)
    assert len(limits) > 40  # not one price for every product any more
    # buying a same-query product priced above the limit loses the price point
    task, dearer = next(
        (t, d)
        for t in held_out
        for d in WEBSHOP_RECORDS
        if d.query == catalog[t.gold["asin"]].query and d.price > t.gold["price_upper"]
    )
    gold = WebShopGold.model_validate(task.gold)
    _, info = get_reward(dearer, catalog[gold.asin], gold.spec(), dearer.price, {})
    assert info["r_price"] is False


# ------------------------------------------------------------ options and pages
def test_webshop_records_have_options_by_category() -> None:
    with_options = [p for p in WEBSHOP_RECORDS if p.options]
    assert 550 < len(with_options) < 800
    for p in WEBSHOP_RECORDS:
        for values in p.options.values():
            assert values and all(v == v.lower() and "/" not in v for v in values), p.asin
            assert len(set(values)) == len(values), p.asin
    shoes = [p for p in with_options if re.search(r"shoe|sandal|boot|loafer", p.query)]
    assert shoes and all(
        set(p.options["size"]) <= set(listing.WOMENS_SHOE_SIZES + listing.MENS_SHOE_SIZES)
        for p in shoes
    )
    food = [p for p in with_options if p.category == "grocery"]
    assert food and all("flavor name" in p.options for p in food)
    beds = [p for p in with_options if p.query in ("mattresses", "beds", "bedframes")]
    assert beds and all(set(p.options["size"]) <= set(listing.BED_SIZES) for p in beds)


def test_titles_read_like_listings_not_attribute_lists() -> None:
    old_style = [p for p in WEBSHOP_RECORDS if p.name.lower().startswith(p.query + " with ")]
    assert not old_style
    brands = {p.name.split()[0] for p in WEBSHOP_RECORDS}
    assert len(brands) > 700  # a brand of its own per listing, nearly always


def test_product_pages_show_description_features_and_reviews() -> None:
    catalog = bundled_catalog()
    reviewed = next(p for p in WEBSHOP_RECORDS if len(p.reviews) >= 2 and p.attributes)
    silent = next(p for p in WEBSHOP_RECORDS if not p.reviews)
    pages = shop_for("bundled").pages
    item = pages.item("x", reviewed.asin)
    assert f"Rating: {reviewed.rating}" in item
    assert item.endswith("Description [SEP] Features [SEP] Reviews [SEP] Buy Now")
    mean = sum(r.score for r in reviewed.reviews) / len(reviewed.reviews)
    assert reviewed.rating == f"{mean:.1f}" and silent.rating == "N.A."
    text = pages.sub_page("x", reviewed.asin, "Reviews")
    for r in reviewed.reviews:
        assert f'"{r.title}" [SEP] {r.score} [SEP] {r.body}' in text
    assert pages.sub_page("x", silent.asin, "Reviews").endswith("No reviews found")
    assert pages.sub_page("x", reviewed.asin, "Description").endswith(reviewed.description)
    assert pages.sub_page("x", reviewed.asin, "Features").endswith(
        " [SEP] ".join(reviewed.bullet_points)
    )
    for p in WEBSHOP_RECORDS:  # WebShop's attribute reward reads features and description
        _, features, description = p.text_lower
        assert all(a in features and a in description for a in p.attributes), p.asin
    scores = [r.score for p in catalog for r in p.reviews]
    assert scores.count(5) > len(scores) / 3 and min(scores) == 1


# ------------------------------------------------------------ goals and suites
def test_goals_are_webshops_synthetic_goals(held_out: TaskSuite) -> None:
    records = json.loads(
        (ROOT / "tests" / "data" / "webshop" / "items_ins_v2_1000.json").read_text()
    )
    catalog = bundled_catalog()
    with_options = 0
    for task in held_out:
        gold, product = task.gold, catalog[task.gold["asin"]]
        record = records[gold["asin"]]
        assert set(gold["goal_options"]) == set(product.options)  # a full combination
        assert gold["attributes"] == record["instruction_attributes"]
        options = ", and ".join(f"{k}: {v}" for k, v in gold["goal_options"].items())
        assert task.instruction.startswith(
            record["instruction"] + (f" with {options}" if options else "")
        )
        with_options += bool(options)
        assert "tau2" not in task.tags
    assert with_options > 300
    products = {t.gold["asin"] for t in held_out}
    assert len(products) == 415  # every instruction record is in test at least once


def test_expert_buys_the_goal_options(held_out: TaskSuite) -> None:
    env = WebShopEnv()
    for task in held_out.tasks[::10]:
        _, info = run_expert(env, task)
        assert info["success"] and info["purchased"]["options"] == task.gold["goal_options"]


def test_manifest_and_docs_say_scores_are_comparable_only_on_webshops_catalog() -> None:
    manifest = json.loads((TASKS / "manifest.json").read_text())
    assert manifest["comparability"] == COMPARABILITY
    assert "not comparable to WebShop's published numbers" in COMPARABILITY
    envs_page = (ROOT / "docs" / "envs.md").read_text()
    assert "comparable to WebShop's published numbers only on WebShop's own catalog" in envs_page
    counts = manifest["counts"]
    assert counts["test"]["tags"]["webshop"] == 500 and "tau2" not in counts["test"]["tags"]


def test_catalog_and_suites_are_deterministic() -> None:
    from agentgym.envs.webshop.build import webshop_product, webshop_records

    data = shared_data()
    if not (data / "webshop" / "items_ins_v2_1000.json").is_file():
        pytest.skip("WebShop records not available")
    rows = webshop_records(data)[:50]
    first = [webshop_product(r).to_json() for r in rows]
    assert first == [webshop_product(r).to_json() for r in rows]
    stored = {p.asin: p.to_json() for p in bundled_catalog()}
    for row in first:
        assert {k: v for k, v in stored[row["asin"]].items() if k != "title_nouns"} == {
            k: v for k, v in row.items() if k != "title_nouns"
        }
    assert listing.pricing("garden", True, random.Random(1)) == listing.pricing(
        "garden", True, random.Random(1)
    )
