"""agentgym/WebShop-v0 on its bundled catalog and suites: pages, actions, expert, determinism."""

from __future__ import annotations

import hashlib
import json
import random
import warnings
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import ValidationError
from support import shared_data

import agentgym
from agentgym.env import ResetNeeded
from agentgym.envs.webshop.build import SEED, build_catalog, parse_query
from agentgym.envs.webshop.catalog import BUNDLED, Catalog, bundled_catalog
from agentgym.envs.webshop.env import WebShopEnv
from agentgym.envs.webshop.generate import generate
from agentgym.envs.webshop.nouns import available_model, spacy_tagger
from agentgym.envs.webshop.search import SEARCH_RETURN_N, SearchEngine
from agentgym.task import Task, TaskSuite, check_suite

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks" / "webshop"
DATA = shared_data()
needs_data = pytest.mark.skipif(
    not (DATA / "tau2" / "retail" / "db.json").is_file(), reason="../shared/data is not here"
)


@pytest.fixture(scope="module")
def held_out() -> TaskSuite:
    return TaskSuite.load(TASKS / "test.jsonl")


@pytest.fixture(scope="module")
def train_suite() -> TaskSuite:
    return TaskSuite.load(TASKS / "train.jsonl")


@pytest.fixture()
def env() -> WebShopEnv:
    return WebShopEnv(suite=str(TASKS / "test.jsonl"))


def run_expert(env: WebShopEnv, task: Task | str) -> tuple[list[str], dict[str, Any]]:
    env.reset(seed=0, options={"task": task})
    actions: list[str] = []
    while True:
        actions.append(env.expert_action())
        _, _, terminated, truncated, info = env.step(actions[-1])
        if terminated or truncated:
            return actions, info


def first(suite: TaskSuite, tag: str) -> Task:
    return next(t for t in suite if tag in t.tags)


# ------------------------------------------------------------ catalog, suites, expert
def test_catalog_is_real_and_large() -> None:
    catalog = bundled_catalog()
    assert len(catalog) >= 1000
    sources = [p.source for p in catalog]
    assert sources.count("webshop") == 1000 and sources.count("tau2") == 50
    tau2 = [p for p in catalog if p.source == "tau2"]
    assert sum(len(vs) for p in tau2 for vs in p.options.values()) > 150
    assert all(p.title_nouns for p in catalog if p.attributes)
    meta = json.loads(BUNDLED.read_text())["meta"]
    assert meta["products"] == len(catalog) and meta["tagger"].startswith("en_core_web")


def test_queries_are_parsed_from_webshop_instructions() -> None:
    attrs = ["leak proof", "bpa free", "easy clean", "travel bottles"]
    text = "Find me leak proof, bpa free, easy clean refillable containers with travel bottles"
    assert parse_query(text, attrs) == "refillable containers"
    assert parse_query("Find me women's tops, tees & blouses", []) == "women's tops, tees & blouses"


def test_suite_sizes_tags_and_validation(held_out: TaskSuite, train_suite: TaskSuite) -> None:
    assert len(held_out) == 500 and len(train_suite) >= 5000
    assert all("webshop" in t.tags for t in held_out)  # test: WebShop records only
    assert sum("tau2" in t.tags for t in train_suite) > 5000
    assert check_suite(TASKS / "test.jsonl") == []
    assert {t.instruction for t in held_out}.isdisjoint(t.instruction for t in train_suite)
    manifest = json.loads((TASKS / "manifest.json").read_text())
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((TASKS / name).read_bytes()).hexdigest() == digest, name


def test_expert_solves_every_test_task(env: WebShopEnv, held_out: TaskSuite) -> None:
    for task in held_out:
        actions, info = run_expert(env, task)
        assert info["success"] and info["score"] == 1.0, (task.id, info)
        assert actions[-1] == "click[buy now]" and len(actions) <= task.config.get("max_steps", 15)


def test_expert_solves_a_train_sample(env: WebShopEnv, train_suite: TaskSuite) -> None:
    for task in random.Random(0).sample(train_suite.tasks, 300):
        assert run_expert(env, task)[1]["success"], task.id


def test_random_agent_is_far_below_the_expert(env: WebShopEnv, held_out: TaskSuite) -> None:
    scores = []
    for k, task in enumerate(held_out.tasks[:100]):
        rng = random.Random(k)
        _, info = env.reset(seed=k, options={"task": task})
        while True:
            action = rng.choice(info["available_actions"])
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                scores.append(info["score"])
                break
    assert sum(s == 1.0 for s in scores) <= 5


# ------------------------------------------------------------ pages and transitions
def test_pages_follow_webshop_text_mode(env: WebShopEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[0]
    obs, info = env.reset(seed=0, options={"task": task})
    assert obs == f"WebShop [SEP] Instruction: [SEP] {task.instruction} [SEP] Search"
    assert info["available_actions"] == ["search[<keywords>]"]
    obs, *_, info = env.step("search[t-shirt blue]")
    assert obs.startswith(
        f"Instruction: [SEP] {task.instruction} [SEP] Back to Search [SEP] Page 1 (Total results: "
    )
    assert "[SEP] Next > [SEP]" in obs and "< Prev" not in obs
    assert info["available_actions"][:2] == ["click[back to search]", "click[next >]"]
    assert (
        len(
            [
                a
                for a in info["available_actions"]
                if a not in ("click[back to search]", "click[next >]")
            ]
        )
        == 10
    )
    obs, *_, info = env.step("click[Next >]")
    assert "Page 2 (Total results: " in obs and "click[< prev]" in info["available_actions"]
    obs, *_ = env.step("click[< prev]")
    assert "Page 1 (Total results: " in obs


def test_item_page_options_and_sub_pages(env: WebShopEnv) -> None:
    env.reset(seed=0, options={"task": "webshop-test-0000"})
    env.step("search[t-shirt color size material style]")
    obs, *_, info = env.step("click[9523456873]")
    shirt = bundled_catalog()["9523456873"]
    assert obs.endswith(
        "[SEP] style [SEP] crew neck [SEP] v-neck [SEP] T-Shirt [SEP] Price: $46.66 to $54.84 "
        f"[SEP] Rating: {shirt.rating} [SEP] Description [SEP] Features [SEP] Reviews [SEP] Buy Now"
    )
    assert {"click[blue]", "click[xxl]", "click[buy now]", "click[features]"} <= set(
        info["available_actions"]
    )
    env.step("click[blue]")
    env.step("click[XXL]")
    assert env.state.options == {"color": "blue", "size": "xxl"}
    obs, *_ = env.step("click[features]")
    assert "< Prev [SEP] Color: " in obs and obs.endswith("[SEP] Style: crew neck, v-neck")
    obs, *_ = env.step("click[< prev]")
    assert env.state.page == "item" and env.state.options == {"color": "blue", "size": "xxl"}
    obs, *_ = env.step("click[reviews]")
    review = shirt.reviews[0]
    assert f'< Prev [SEP] "{review.title}" [SEP] {review.score} [SEP] {review.body}' in obs
    env.step("click[back to search]")
    assert env.state.page == "search" and env.state.options == {}


def test_buy_scores_with_webshop_reward(env: WebShopEnv, held_out: TaskSuite) -> None:
    task = next(t for t in held_out if len(t.gold["goal_options"]) == 2)
    env.reset(seed=0, options={"task": task})
    gold = env.gold
    env.step(f"search[{bundled_catalog()[gold.asin].name}]")
    env.step(f"click[{gold.asin}]")
    obs, reward, terminated, truncated, info = env.step("click[buy now]")  # no option chosen
    n = len(gold.attributes)
    assert terminated and not truncated and reward == pytest.approx((n + 1) / (n + 2 + 1))
    assert info["reward_info"]["r_option"] == 0.0 and info["reward_info"]["r_price"] is True
    assert info["success"] is False and "Your score (min 0.0, max 1.0) [SEP] " in obs
    assert env.step("click[buy now]")[4]["valid"] is False


MALFORMED: list[Any] = [
    "",
    "buy",
    "click[]",
    "click[nothing here]",
    "search[]",
    "search [",
    "go[home]",
    "click[buy now]",
    7,
    None,
]


@pytest.mark.parametrize("action", MALFORMED)
def test_malformed_actions_are_invalid_and_explained(env: WebShopEnv, action: Any) -> None:
    env.reset(seed=0, options={"task": "webshop-test-0001"})
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["valid"] is False and reward == 0.0 and not (terminated or truncated)
    assert "search[" in obs and env.state.steps == 1


def test_search_only_on_the_search_page(env: WebShopEnv) -> None:
    env.reset(seed=0, options={"task": "webshop-test-0001"})
    env.step("search[camera]")
    obs, *_, info = env.step("search[camera]")
    assert info["valid"] is False and "back to search" in obs


def test_step_limit_truncates(env: WebShopEnv) -> None:
    task = TaskSuite.load(TASKS / "test.jsonl").tasks[2]
    task = task.model_copy(update={"config": {"max_steps": 3}})
    env.reset(seed=0, options={"task": task})
    results = [env.step(a) for a in ("search[lamp]", "nonsense", "click[next >]")]
    assert not any(r[2] or r[3] for r in results[:2])
    _, reward, terminated, truncated, info = results[-1]
    assert (
        truncated
        and not terminated
        and reward == 0.0
        and info["success"] is False
        and info["score"] == 0.0
    )


# ------------------------------------------------------------ search
def test_search_is_bm25_top_50_and_finds_goals(held_out: TaskSuite) -> None:
    engine = SearchEngine(bundled_catalog())
    hits = engine.search("find me t-shirt with color: blue")
    assert hits[0] == "9523456873" and len(hits) == SEARCH_RETURN_N
    assert engine.search("zzzz qqqq") == () and engine.search("the and of") == ()
    found = sum(t.gold["asin"] in engine.search(t.instruction.lower()) for t in held_out)
    assert found / len(held_out) > 0.95
    assert SearchEngine(bundled_catalog()).search("red running shoes") == engine.search(
        "red running shoes"
    )


# ------------------------------------------------------------ determinism, branching, checks
def test_same_task_seed_actions_same_trajectory(env: WebShopEnv) -> None:
    actions, _ = run_expert(env, "webshop-test-0003")
    actions = ["bogus", "search[lamp]", "click[next >]", "click[back to search]", *actions]

    def play(e: WebShopEnv) -> list[Any]:
        trace: list[Any] = [e.reset(seed=3, options={"task": "webshop-test-0003"})[0]]
        for a in actions:
            trace.append(e.step(a)[:4])
        return trace

    assert play(env) == play(WebShopEnv(suite=str(TASKS / "test.jsonl")))


def test_snapshot_restore_replays(env: WebShopEnv) -> None:
    actions, _ = run_expert(env, "webshop-test-0005")
    env.reset(seed=0, options={"task": "webshop-test-0005"})
    env.step(actions[0])
    snap = env.snapshot()
    rest = [env.step(a)[:4] for a in actions[1:]]
    env.reset(seed=0, options={"task": "webshop-test-0000"})
    for _ in range(2):
        env.restore(snap)
        assert [env.step(a)[:4] for a in actions[1:]] == rest


def test_bad_gold_and_config_are_rejected(held_out: TaskSuite) -> None:
    task = held_out.tasks[0]
    with pytest.raises(ValueError, match="not in catalog"):
        WebShopEnv.validate_task(
            task.model_copy(update={"gold": {**task.gold, "asin": "B000000000"}})
        )
    with pytest.raises(ValidationError, match="price_upper"):
        WebShopEnv.validate_task(task.model_copy(update={"gold": {**task.gold, "price_upper": 0}}))
    with pytest.raises(ValidationError, match="max_steps"):
        WebShopEnv.validate_task(task.model_copy(update={"config": {"max_steps": 0}}))
    with pytest.raises(ValueError, match="neither 'bundled' nor a file"):
        WebShopEnv.validate_task(task.model_copy(update={"config": {"catalog": "/no/such.json"}}))
    with pytest.raises(ResetNeeded):
        WebShopEnv().expert_action()


def test_doc_page_example_runs() -> None:
    import doctest

    import agentgym.envs.webshop as page

    assert doctest.testmod(page).failed == 0


def test_gymnasium_make_and_conformance() -> None:
    env = gymnasium.make("agentgym/WebShop-v0")
    obs, info = env.reset(seed=0)
    assert info["task_id"].startswith("webshop-test-") and obs.startswith("WebShop [SEP]")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    from agentgym.testing import check_env as conformance

    conformance(agentgym.make("WebShop-v0"), tasks=["webshop-test-0000", "webshop-test-0007"])


# ------------------------------------------------------------ generators
@needs_data
def test_catalog_build_is_reproducible() -> None:
    bundled = bundled_catalog()
    stored = {p.name: p.title_nouns for p in bundled}
    tagger = spacy_tagger() if available_model() else (lambda names: [stored[n] for n in names])
    rebuilt = build_catalog(DATA, tagger, SEED)
    assert [p.to_json() for p in rebuilt] == [p.to_json() for p in bundled]


@needs_data
def test_suites_regenerate_identically(tmp_path: Path) -> None:
    generate(DATA, tmp_path)
    for name in ("train.jsonl", "test.jsonl"):
        assert (tmp_path / name).read_bytes() == (TASKS / name).read_bytes(), name


def test_custom_catalog_file(tmp_path: Path, train_suite: TaskSuite) -> None:
    small = Catalog(list(bundled_catalog())[-50:], name="tau2 only")
    path = tmp_path / "catalog.json"
    small.write(path)
    task = first(train_suite, "tau2")
    task = task.model_copy(update={"config": {"catalog": str(path)}})
    actions, info = run_expert(WebShopEnv(), task)
    assert info["success"]
