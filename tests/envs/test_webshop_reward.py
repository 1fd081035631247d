"""WebShop's reward: text helpers, the 9 recorded human purchases, and the original-data loader."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support import shared_data
from test_webshop import run_expert

from agentgym.envs.webshop.catalog import DEFAULT_PRICE, Product, bundled_catalog
from agentgym.envs.webshop.env import WebShopEnv
from agentgym.envs.webshop.goals import NO_PRICE_LIMIT, PRICE_RANGE, price_limit
from agentgym.envs.webshop.nouns import available_model, spacy_tagger
from agentgym.envs.webshop.original import load_original, parse_options, parse_pricing
from agentgym.envs.webshop.reward import GoalSpec, get_reward, option_matches, r_type_rule
from agentgym.envs.webshop.text import indel_distance, normalize_color, token_set_ratio
from agentgym.task import Task

DATA = shared_data() / "webshop"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data/webshop is not here")
FIXTURE = Path(__file__).resolve().parents[1] / "data" / "webshop" / "original"
"""A small catalog in WebShop's own file format (see tests/data/README.md)."""


# ------------------------------------------------------------ text helpers
@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("pink", "z2-pink", 100),  # a token subset scores 100
        ("teal", "38 | 40 | 41 mm", 0),
        ("hair salon", "hair salon", 100),
        ("ÜNÏ", "", 0),
        ("stainless steel", "stainless steal", 93),
        ("long lasting", "long sleeve", 53),  # values from thefuzz 0.22
    ],
)
def test_token_set_ratio_values(a: str, b: str, expected: int) -> None:
    assert token_set_ratio(a, b) == expected


def test_token_set_ratio_equals_thefuzz_where_installed() -> None:
    fuzz = pytest.importorskip("thefuzz.fuzz")
    words = sorted({a for p in bundled_catalog() for a in p.attributes}) + [
        "z2-pink",
        "3t280",
        "rl56 | 60 silver mist",
    ]
    rng = random.Random(0)
    for _ in range(3000):
        a, b = rng.choice(words), rng.choice(words)
        assert token_set_ratio(a, b) == fuzz.token_set_ratio(a, b), (a, b)


def test_indel_and_colours() -> None:
    assert indel_distance("kitten", "sitting") == 5 and indel_distance("", "abc") == 3
    assert normalize_color("rl56 | 60 silver mist") == "silver"
    assert normalize_color("rose gold") == "gold"  # first colour of WebShop's list wins
    assert normalize_color("3t280") == "3t280"


def test_price_limit_rule() -> None:
    rng = random.Random(0)
    limits = {price_limit(DEFAULT_PRICE, rng)[0] for _ in range(200)}
    assert limits == {120.0, 130.0, 140.0}
    upper, text = price_limit(53.57, random.Random(1))
    assert upper in PRICE_RANGE and text == f", and price lower than {upper:.2f} dollars"
    assert price_limit(985.0, rng) == (NO_PRICE_LIMIT, "")


# ------------------------------------------------------------ reward parts
def product(**fields: Any) -> Product:
    base: dict[str, Any] = dict(
        asin="B000000001", name="Thing", category="beauty", query="things",
        product_category="Beauty & Personal Care › Things", pricing=(10.0,), price=10.0,
        options={}, attributes=(), title_nouns=("thing",),
    )  # fmt: skip
    return Product(**(base | fields))


def test_reward_formula_and_extra_options() -> None:
    goal = product(attributes=("easy clean",))
    bought = product(
        asin="B2", name="Mop", attributes=("easy clean",), title_nouns=("mop",), query="mops"
    )
    spec = GoalSpec(("easy clean", "non slip"), ("blue",), 20.0)
    reward, info = get_reward(bought, goal, spec, 15.0, {"color": "navy blue"})
    # different query, one shared breadcrumb level, no shared noun: r_type 0
    assert info["title_score"] == 0.0 and info["r_type"] == 0.0 and reward == 0.0
    bought = product(asin="B3", name="Thing blue m", title_nouns=("thing",))
    reward, info = get_reward(bought, goal, spec, 15.0, {"color": "blue", "size": "m"})
    # WebShop counts purchased options: size "m" occurs in the title, so 2 options match
    assert info["r_option"] == 2.0 and reward == pytest.approx((0 + 2 + 1) / 4)
    assert WebShopEnv.__name__  # the env clips the score: see test_webshop.py


@pytest.mark.parametrize(
    "query, category, title, expected",
    [
        (False, False, 0.5, 1.0),
        (False, False, 0.2, 0.5),
        (True, False, 0.15, 1.0),
        (True, True, 0.05, 0.1),
        (True, True, 0.0, 0.0),
    ],
)
def test_r_type_rule(query: bool, category: bool, title: float, expected: float) -> None:
    assert r_type_rule(query, category, title) == expected


# ------------------------------------------------------------ the 9 human trajectories
def trajectories() -> list[list[dict[str, Any]]]:
    return [
        [json.loads(line) for line in path.read_text().splitlines()]
        for path in sorted((DATA / "human_trajectories").glob("*.jsonl"))
    ]


@needs_data
def test_recorded_rewards_decompose_into_webshop_terms() -> None:
    runs = trajectories()
    assert len(runs) == 9
    for rows in runs:
        goal, done = rows[0]["goal"], rows[-1]
        info, bought = done["reward_info"], done["content"]
        n_att, n_opt = len(goal["attributes"]), len(goal["goal_options"])
        assert (bought["price"] <= goal["price_upper"]) == info["r_price"]
        assert (
            r_type_rule(info["query_match"], info["category_match"], info["title_score"])
            == info["r_type"]
        )
        if n_opt:  # option matching needs only the purchased options (no title text here)
            stub = product(name="", title_nouns=())
            count = option_matches(stub, goal["goal_options"], bought["options"])
            assert count / n_opt == info["r_option"], goal["asin"]
        total = (info["r_att"] * n_att + info.get("r_option", 0) * n_opt + info["r_price"]) / (
            n_att + n_opt + 1
        )
        assert total * info["r_type"] == pytest.approx(done["reward"])


@needs_data
def test_trajectory_that_bought_the_goal_product_is_reproduced() -> None:
    rows = next(r for r in trajectories() if r[-1]["content"]["asin"] == r[0]["goal"]["asin"])
    goal, done = rows[0]["goal"], rows[-1]
    model = available_model()
    nouns = spacy_tagger(model)([goal["name"]])[0] if model else tuple(goal["name"].lower().split())
    item = product(
        asin=goal["asin"], name=goal["name"], category=goal["category"], query=goal["query"],
        product_category=goal["product_category"], pricing=(done["content"]["price"],),
        price=done["content"]["price"], title_nouns=nouns,
    )  # fmt: skip
    spec = GoalSpec(tuple(goal["attributes"]), tuple(goal["goal_options"]), goal["price_upper"])
    reward, info = get_reward(
        item, item, spec, done["content"]["price"], done["content"]["options"]
    )
    assert reward == done["reward"] == 1.0
    recorded = done["reward_info"]
    for key in ("r_type", "r_att", "query_match", "category_match", "r_price"):
        assert info[key] == recorded[key], key
    if model == "en_core_web_lg":  # WebShop's tagger: the title score itself matches
        assert info["title_score"] == pytest.approx(recorded["title_score"])


# ------------------------------------------------------------ the original files
def test_pricing_and_options_parsing() -> None:
    assert parse_pricing("$10.99") == (10.99,) and parse_pricing("$1,299.00 - $1,499.99") == (
        1299.0,
        1499.99,
    )
    assert parse_pricing(None) == (DEFAULT_PRICE,) and parse_pricing("") == (DEFAULT_PRICE,)
    assert parse_options({"Color": [{"value": " Navy/Blue "}], "Size": None}) == {
        "color": ("navy | blue",)
    }


def _tagger() -> Any:
    if available_model():
        return spacy_tagger()
    return lambda titles: [tuple(t.lower().split()) for t in titles]


def test_loader_reads_webshops_file_format(tmp_path: Path) -> None:
    catalog, goals = load_original(
        FIXTURE / "items_shuffle.json",
        FIXTURE / "items_ins_v2.json",
        FIXTURE / "items_human_ins.json",
        FIXTURE / "reviews.json",
        tagger=_tagger(),
    )
    # 'nan', a repeated ASIN and an ASIN over 10 characters are skipped, as load_products does
    assert len(catalog) == 9 and len(goals) == 9  # the goal without attributes is skipped
    shoes, band, candles = catalog["B096W49HCJ"], catalog["B092J891H7"], catalog["B07RVDW2Z2"]
    assert shoes.pricing == (15.99, 19.99) and 15.99 <= shoes.price <= 19.99
    assert shoes.price_tag == "$15.99 to $19.99" and catalog["B07XC7GVRK"].pricing == (339.0,)
    assert shoes.query == "women's loafers & slip-ons"
    assert band.options == {"color": ("black", "teal", "pink"), "size": ("38 | 40 | 41 mm", "42 | 44 | 45 mm")}  # fmt: skip
    assert catalog["B08GCNBFX1"].bullet_points == ("Spray bottle for hair salon use, 260ml",)
    assert candles.attributes == ("DUMMY_ATTR",) and candles.options == {}
    assert [(r.title, r.score, r.body) for r in shoes.reviews] == [
        ("Comfy and cute", 5, "True to size, my daughter wears them every day."),
        ("Runs a bit small", 4, "Order half a size up."),
    ]
    assert shoes.rating == "4.5" and catalog["B09LV7HGHD"].reviews[0].body == ""
    assert candles.rating == "N.A." and not candles.reviews
    wig = next(g for g in goals if g["gold"]["asin"] == "B07NDLGGS1")
    assert wig["gold"]["goal_options"] == ["rl56 | 60 silver mist"]
    assert wig["instruction"].startswith("i am interested in a synthetic wig that is silver")

    path = tmp_path / "webshop_fixture.json"
    catalog.write(path)
    env = WebShopEnv()
    for k, goal in enumerate(goals):
        task = Task(
            id=f"orig-{k}",
            env="agentgym/WebShop-v0",
            instruction=goal["instruction"],
            config={"catalog": str(path)},
            gold=goal["gold"],
        )
        _, info = run_expert(env, task)
        assert info["purchased"]["asin"] == goal["gold"]["asin"] and info["success"], task.id
    env.reset(seed=0, options={"task": task})
    env.step(f"search[{shoes.name}]")
    obs, *_ = env.step("click[b096w49hcj]")
    assert "Price: $15.99 to $19.99 [SEP] Rating: 4.5 [SEP] Description" in obs
    obs, *_ = env.step("click[reviews]")
    assert obs.endswith('"Runs a bit small" [SEP] 4 [SEP] Order half a size up.')
