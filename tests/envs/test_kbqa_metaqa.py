"""MetaQA's answer semantics in KBQA-v0: the topic entity is never an answer (gold and scoring),
and the MetaQA suites sample every question type in MetaQA's proportions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from support import shared_data

from agentgym.envs.kbqa.env import KBQAEnv
from agentgym.envs.kbqa.generate import allocate
from agentgym.envs.kbqa.scoring import score
from agentgym.task import Task, TaskSuite

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "kbqa"
DATA = shared_data()
MANIFEST = json.loads((TASKS / "manifest.json").read_text(encoding="utf-8"))
ROUND_TRIP = (  # the 2-hop types that come back to the topic's own type
    "actor_to_movie_to_actor",
    "director_to_movie_to_director",
    "writer_to_movie_to_writer",
    "movie_to_actor_to_movie",
    "movie_to_director_to_movie",
    "movie_to_writer_to_movie",
)


@pytest.fixture(scope="module")
def suites() -> dict[str, TaskSuite]:
    return {n: TaskSuite.load(TASKS / f"{n}.jsonl") for n in ("metaqa-train", "metaqa-test")}


def _first(suite: TaskSuite, qtype: str) -> Task:
    return next(t for t in suite if qtype in t.tags)


def _play(env: KBQAEnv, task: Task, answer: str | None = None) -> tuple[str, dict[str, Any]]:
    """The expert's episode, or its steps with the final answer replaced by ``answer``."""
    env.reset(seed=0, options={"task": task})
    while True:
        action = env.expert_action()
        if answer is not None and action.startswith("Answer["):
            action = answer
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return obs, info


# ------------------------------------------------------------------ scoring
def test_excluded_ids_are_dropped_before_scoring() -> None:
    gold = [["a", "b"]]
    assert score(["t", "a", "b"], gold, exclude=["t"]) == score(["a", "b"], gold)
    with_topic = score(["t", "a"], gold, exclude=["t"])
    assert with_topic.hits1 == 1.0 and with_topic.f1 == pytest.approx(2 / 3)
    assert score(["t"], gold, exclude=["t"]).f1 == 0.0  # only the topic: an empty answer
    assert score(["t", "a", "b"], gold).f1 < 1.0  # without the rule the topic is a false positive


def test_gold_never_holds_an_excluded_id(suites: dict[str, TaskSuite]) -> None:
    task = suites["metaqa-test"].tasks[0]
    topic = task.config["entities"][0]["id"]
    assert task.gold["exclude"] == [topic]
    bad = {**task.gold, "answers": [[*task.gold["answers"][0], topic]]}
    with pytest.raises(ValidationError, match="excluded id"):
        KBQAEnv.validate_task(task.model_copy(update={"gold": bad}))
    for suite in suites.values():
        for t in suite:
            assert t.gold["exclude"] == [t.config["entities"][0]["id"]], t.id
            assert t.gold["exclude"][0] not in t.gold["answers"][0], t.id


# ------------------------------------------------------------------ episodes
@pytest.mark.parametrize("qtype", ROUND_TRIP)
def test_round_trip_types_are_back_and_the_expert_solves_them(
    qtype: str, suites: dict[str, TaskSuite]
) -> None:
    env = KBQAEnv()
    task = _first(suites["metaqa-test"], qtype)
    topic = task.config["entities"][0]["id"]
    env.reset(seed=0, options={"task": task})
    reference_result = env._reference_results[-1]  # what the S-expression gives: with the topic
    assert topic in reference_result and topic not in task.gold["answers"][0]
    obs, info = _play(env, task)
    assert info["success"] and info["f1"] == 1.0 and info["em"] == 1.0
    assert topic in info["answer"] and "Not counted" in obs and topic in obs


def test_an_answer_with_the_topic_scores_as_one_without(suites: dict[str, TaskSuite]) -> None:
    env = KBQAEnv()
    task = _first(suites["metaqa-test"], "actor_to_movie_to_actor")
    topic, gold = task.config["entities"][0]["id"], task.gold["answers"][0]
    _, first = _play(env, task, f"Answer[{topic}, {', '.join(gold)}]")
    _, without = _play(env, task, f"Answer[{', '.join(gold)}]")
    assert first["f1"] == without["f1"] == 1.0 and first["hits1"] == 1.0 and first["success"]
    _, only = _play(env, task, f"Answer[{topic}]")
    assert only["f1"] == 0.0 and not only["success"]


def test_compositional_tasks_exclude_nothing() -> None:
    for name in ("comp-train", "comp-test"):
        assert all("exclude" not in t.gold for t in TaskSuite.load(TASKS / f"{name}.jsonl"))


# ------------------------------------------------------------------ suites
def test_every_question_type_in_metaqas_proportions(suites: dict[str, TaskSuite]) -> None:
    files = {"metaqa-train": "dev", "metaqa-test": "test"}
    for name, suite in suites.items():
        per_hop = MANIFEST["parameters"]["metaqa_sampling"][name.split("-")[1]]["per_hop"]
        for hop in ("1hop", "2hop"):
            counts = Counter(t.tags[1] for t in suite if t.tags[0] == hop)
            assert sum(counts.values()) == per_hop
            stats = MANIFEST["metaqa_filtering"][f"{hop}_{files[name]}.jsonl"]
            in_file = Counter(
                {k.removeprefix("exact: "): v for k, v in stats.items() if k.startswith("exact: ")}
            )
            assert counts == allocate(in_file, per_hop), (name, hop)
            for qtype, n in counts.items():  # within one task of the file's share
                assert abs(n - per_hop * in_file[qtype] / stats["rows"]) < 1, (name, qtype)
    two_hop = {t.tags[1] for t in suites["metaqa-test"] if t.tags[0] == "2hop"}
    assert len(two_hop) == 21 and set(ROUND_TRIP) <= two_hop


def test_manifest_counts_every_metaqa_row_reproduced() -> None:
    expected = {"1hop_dev": 9453, "2hop_dev": 12328, "1hop_test": 9377, "2hop_test": 12439}
    for name, rows in expected.items():
        stats = MANIFEST["metaqa_filtering"][f"{name}.jsonl"]
        assert stats["rows"] == stats["exact"] == rows, name
        assert not [k for k in stats if k.startswith("dropped")], name
    assert "topic entity" in MANIFEST["parameters"]["metaqa_answers"]


def test_shared_files_all_reproduce_under_metaqas_rule() -> None:
    """Straight from the shared files, independent of the manifest: every row of 2hop_dev."""
    path = DATA / "metaqa" / "2hop_dev.jsonl"
    if not path.exists():
        pytest.skip("shared MetaQA questions not available")
    from agentgym.envs.kbqa.executor import Executor
    from agentgym.envs.kbqa.generate import metaqa_candidates

    stats: Counter[str] = Counter()
    executor = Executor(KBQAEnv().kb)
    kept = list(metaqa_candidates(executor, path, 0, stats))
    assert len(kept) == stats["rows"] == 12328
    labels = executor.kb.label
    for row, topic, _, ids in kept[::97]:
        assert sorted(labels(i) for i in ids) == sorted(row["answers"]) and topic not in ids


def test_allocate_is_largest_remainder() -> None:
    assert allocate(Counter({"a": 1, "b": 1, "c": 1}), 2) == {"a": 1, "b": 1, "c": 0}
    assert allocate(Counter({"a": 5, "b": 3, "c": 2}), 5) == {"a": 3, "b": 1, "c": 1}
    assert allocate(Counter({"a": 2}), 5) == {"a": 2}
