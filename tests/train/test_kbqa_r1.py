"""KBQA-R1's Referenced Rejection Sampling on the real suites: yield, hint hygiene, SFT format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentgym
from agentgym.agents.kbqa_r1 import (
    HINT_HEADER,
    KBQAR1Recipe,
    NoisyTeacher,
    accept_min_f1,
    hint_steps,
    make_hint,
    noisy_teacher,
    rrs,
    write_sft,
)
from agentgym.task import TaskSuite

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "kbqa"


@pytest.fixture(scope="module")
def env() -> Any:
    return agentgym.make("KBQA-v0")


def sample(suite: str, tag: str, n: int) -> list[Any]:
    tasks = TaskSuite.load(TASKS / f"{suite}.jsonl").filter([tag]).tasks
    return tasks[:: max(1, len(tasks) // n)][:n]


@pytest.mark.parametrize(
    "suite, tag", [("metaqa-train", "2hop"), ("comp-train", "iid"), ("comp-test", "compositional")]
)
def test_rrs_yield_far_above_plain_rejection_sampling(env: Any, suite: str, tag: str) -> None:
    tasks = sample(suite, tag, 40)
    hinted = rrs(env, tasks, noisy_teacher(), samples=3)
    plain = rrs(env, tasks, noisy_teacher(), samples=3, hinted=False)
    assert hinted.errors == plain.errors == 0
    assert hinted.yield_rate >= 0.5, hinted.yield_rate
    assert hinted.yield_rate >= 5 * plain.yield_rate, (hinted.yield_rate, plain.yield_rate)
    assert len(hinted.covered) >= 0.8 * len(tasks)
    assert all(ep.success for ep in hinted.episodes)


def test_sft_data_keep_no_hint(env: Any, tmp_path: Path) -> None:
    tasks = sample("comp-train", "iid", 12)
    report = rrs(env, tasks, noisy_teacher(p_error=0.3, p_recover=1.0), samples=2)
    out = tmp_path / "sft.jsonl"
    n = write_sft(report.episodes, out, env.unwrapped.system_prompt)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert n == len(rows) == report.accepted > 0
    hints = []
    for task in tasks:
        env.reset(seed=0, options={"task": task})
        hints.append(make_hint(env.unwrapped.reference_actions()))
    for row in rows:
        assert row["messages"][0] == {"role": "system", "content": env.unwrapped.system_prompt}
        assert [m["role"] for m in row["messages"][1:3]] == ["user", "assistant"]
        text = json.dumps(row)
        assert HINT_HEADER.lower() not in text.lower() and "reference" not in text.lower()
        assert not any(h in text for h in hints)
        assert (
            row["messages"][-1]["content"].startswith("<think>")
            and "<answer>" in row["messages"][-1]["content"]
        )
    assert any(len(r["messages"]) > 2 * 4 for r in rows), (
        "some kept trajectories include a corrected mistake"
    )


class Leaky(NoisyTeacher):
    """A teacher that quotes its hint: the kind of trajectory RRS must drop."""

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return (
            super()
            .act(observation, info)
            .replace("<think>", "<think>The reference action says so. ", 1)
        )


def test_trajectories_that_mention_the_hint_are_dropped(env: Any) -> None:
    tasks = sample("metaqa-train", "1hop", 5)
    report = rrs(env, tasks, lambda e, hint: Leaky(e, hint, p_error=0.0), samples=1)
    assert report.accepted == 0 and report.leaked == 5


def test_acceptance_is_configurable_and_the_hint_lists_the_reference(env: Any) -> None:
    tasks = sample("metaqa-train", "2hop", 10)
    strict = rrs(env, tasks, noisy_teacher(p_error=0.5, p_recover=0.0), samples=2)
    loose = rrs(
        env, tasks, noisy_teacher(p_error=0.5, p_recover=0.0), samples=2, accept=accept_min_f1(0.0)
    )
    assert loose.accepted > strict.accepted and loose.attempted == strict.attempted == 20
    env.reset(seed=0, options={"task": tasks[0]})
    reference = env.unwrapped.reference_actions()
    assert hint_steps(make_hint(reference)) == reference and reference[-1].startswith("Answer[")


def test_teacher_is_deterministic_per_seed(env: Any) -> None:
    tasks = sample("comp-test", "zero-shot", 6)
    a = rrs(env, tasks, noisy_teacher(), samples=2, seed=3)
    b = rrs(env, tasks, noisy_teacher(), samples=2, seed=3)
    assert [e.model_dump(exclude={"started_at", "duration_s", "steps"}) for e in a.episodes] == [
        e.model_dump(exclude={"started_at", "duration_s", "steps"}) for e in b.episodes
    ]
    assert [[s.action for s in e.steps] for e in a.episodes] == [
        [s.action for s in e.steps] for e in b.episodes
    ]


def test_recipe_matches_methods() -> None:
    r = KBQAR1Recipe()
    assert (r.group_size, r.kl_coef, r.clip_low, r.clip_high, r.max_turns) == (5, 0.0, 0.2, 0.28, 6)


def test_rrs_with_entity_handles_writes_no_topic_ids(tmp_path: Path) -> None:
    """With the env's ``handles`` option the teacher (hinted or exploring) writes ``@k``, so the
    SFT actions hold no opaque topic id for a small model to copy."""
    env = agentgym.make("KBQA-v0", handles=True)
    tasks = sample("comp-train", "and", 12)
    hinted = rrs(env, tasks, noisy_teacher(), samples=2)
    plain = rrs(env, tasks, noisy_teacher(), samples=2, hinted=False)
    assert hinted.yield_rate >= 0.5 and hinted.yield_rate > 5 * plain.yield_rate
    out = tmp_path / "sft.jsonl"
    write_sft([*hinted.episodes, *plain.episodes], out, env.unwrapped.system_prompt)
    ids = {e["id"] for t in tasks for e in t.config["entities"]}
    for line in out.read_text().splitlines():
        actions = [m["content"] for m in json.loads(line)["messages"] if m["role"] == "assistant"]
        assert "@1" in actions[0] and not any(i in a for a in actions for i in ids)
