"""agentgym/Clarify-v0 on its real generated suites: expert, truthfulness, limits, robustness."""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import ValidationError

from agentgym.env import ResetNeeded
from agentgym.envs.clarify.env import ClarifyEnv
from agentgym.envs.clarify.items import Item, norm
from agentgym.task import Task, TaskSuite

TASKS = Path(__file__).resolve().parents[2] / "tasks" / "clarify"
MALFORMED: list[Any] = [
    "",
    "   ",
    "ask[]",
    "ask[colour=red]",
    "answer[nope]",
    "ask[color=]",
    "ask color",
    "hello there",
    "answer[]",
    "]]ask[[",
    "ask[color=blue] answer[x]",
    5,
    None,
]


@pytest.fixture(scope="module")
def held_out() -> TaskSuite:
    return TaskSuite.load(TASKS / "test.jsonl")


@pytest.fixture(scope="module")
def train_suite() -> TaskSuite:
    return TaskSuite.load(TASKS / "train.jsonl")


@pytest.fixture()
def env() -> ClarifyEnv:
    return ClarifyEnv(suite=str(TASKS / "test.jsonl"))


def play(env: ClarifyEnv, task: Task | str, actions: list[Any], seed: int = 0) -> list[Any]:
    """Observations, rewards and flags of a run, stopping at the episode's end."""
    trace: list[Any] = [env.reset(seed=seed, options={"task": task})[0]]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((obs, reward, terminated, truncated, info["valid"]))
        if terminated or truncated:
            break
    return trace


def run_expert(env: ClarifyEnv, task: Task) -> tuple[list[str], dict[str, Any]]:
    env.reset(seed=0, options={"task": task})
    actions: list[str] = []
    while True:
        actions.append(env.expert_action())
        _, _, terminated, truncated, info = env.step(actions[-1])
        if terminated or truncated:
            return actions, info


def target(task: Task) -> Item:
    return next(
        Item.model_validate(c) for c in task.config["candidates"] if c["id"] == task.gold["target"]
    )


def with_config(task: Task, **changes: Any) -> Task:
    return task.model_copy(update={"config": {**task.config, **changes}})


# ------------------------------------------------------------ suites and expert
def test_suites_are_split_balanced_and_disjoint(
    held_out: TaskSuite, train_suite: TaskSuite
) -> None:
    assert len(held_out) >= 200 and len(train_suite) >= 500
    for suite in (held_out, train_suite):
        domains = [t.config["domain"] for t in suite]
        assert domains.count("products") == domains.count("movies")
        assert all(6 <= len(t.config["candidates"]) <= 16 for t in suite)
    test_targets = {t.gold["target"] for t in held_out}
    assert test_targets.isdisjoint(t.gold["target"] for t in train_suite)


@pytest.mark.parametrize("fixture", ["held_out", "train_suite"])
def test_expert_solves_every_task(
    env: ClarifyEnv, fixture: str, request: pytest.FixtureRequest
) -> None:
    suite: TaskSuite = request.getfixturevalue(fixture)
    for task in suite:
        actions, info = run_expert(env, task)
        assert info["success"] and info["score"] == 1.0, task.id
        assert actions[-1] == f"answer[{task.gold['target']}]"
        assert len(actions) + 3 <= task.config["max_turns"], (
            "turn limit leaves at least 3 turns of slack"
        )


def test_expert_never_asks_a_useless_question(env: ClarifyEnv, held_out: TaskSuite) -> None:
    for task in held_out.tasks[:50]:
        env.reset(seed=0, options={"task": task})
        while len(env.state.remaining) > 1:
            before = len(env.state.remaining)
            env.step(env.expert_action())
            assert 0 < len(env.state.remaining) < before


def test_random_agent_is_far_below_the_expert(env: ClarifyEnv, held_out: TaskSuite) -> None:
    wins = 0
    for k, task in enumerate(held_out):
        rng = random.Random(k)
        _, info = env.reset(seed=k, options={"task": task})
        while True:
            _, _, terminated, truncated, info = env.step(rng.choice(info["available_actions"]))
            if terminated or truncated:
                wins += info["success"]
                break
    assert wins / len(held_out) < 0.3


def test_expert_needs_reset() -> None:
    with pytest.raises(ResetNeeded):
        ClarifyEnv().expert_action()


# ------------------------------------------------------------ the user and the rules
def test_answers_are_truthful(env: ClarifyEnv, held_out: TaskSuite) -> None:
    for task in held_out.tasks[::10]:
        wanted = target(task)
        _, info = env.reset(seed=0, options={"task": task})
        for action in (a for a in info["available_actions"] if a.startswith("ask[")):
            attribute, value = action[4:-1].split("=", 1)
            obs, *_ = env.step(action.upper() if len(action) % 2 else f"  {action}  ")
            recorded = wanted.attributes.get(attribute, [])
            expected = (
                "I don't know."
                if not recorded
                else "Yes."
                if any(norm(v) == norm(value) for v in recorded)
                else "No."
            )
            assert obs == expected, (task.id, action)
            env.reset(seed=0, options={"task": task})


def test_reset_shows_candidates_and_actions(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[0]
    obs, info = env.reset(seed=0, options={"task": task})
    assert info["task_id"] == task.id and info["instruction"] == task.instruction
    for candidate in task.config["candidates"]:
        assert candidate["id"] in obs and candidate["name"] in obs
        assert f"answer[{candidate['id']}]" in info["available_actions"]
    assert "ask[attribute=value]" in obs and f"{task.config['max_turns']} turns" in obs
    assert (
        info["available_actions"]
        == ClarifyEnv().reset(seed=5, options={"task": task})[1]["available_actions"]
    )


@pytest.mark.parametrize("action", MALFORMED)
def test_malformed_actions_are_invalid_and_explained(env: ClarifyEnv, action: Any) -> None:
    env.reset(seed=0, options={"task": "clarify-products-test-0000"})
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["valid"] is False and reward == 0.0 and not terminated and not truncated
    assert "ask[" in obs or "answer[" in obs, obs
    assert env.state.turn == 1


def test_unknown_attribute_lists_the_allowed_ones(env: ClarifyEnv) -> None:
    env.reset(seed=0, options={"task": "clarify-products-test-0000"})
    obs = env.step("ask[colour=red]")[0]
    assert "colour" in obs and "color" in obs and "product" in obs


def test_answer_by_name_and_reasking_are_valid(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[0]
    env.reset(seed=0, options={"task": task})
    assert env.step("ask[product=Bookshelf]")[4]["valid"]
    assert env.step("ask[product=bookshelf]")[4]["valid"]
    obs, reward, terminated, _, info = env.step(f"Answer[ {target(task).name.upper()} ]")
    assert terminated and info["success"] and reward == 1.0, obs


def test_wrong_answer_fails(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[3]
    wrong = next(c["id"] for c in task.config["candidates"] if c["id"] != task.gold["target"])
    env.reset(seed=0, options={"task": task})
    obs, reward, terminated, truncated, info = env.step(f"answer[{wrong}]")
    assert terminated and not truncated and reward == 0.0
    assert info["success"] is False and info["score"] == 0.0 and "Wrong" in obs


@pytest.mark.parametrize("filler", ["ask[product=Bookshelf]", "nonsense", 5])
def test_turn_limit_truncates(env: ClarifyEnv, held_out: TaskSuite, filler: Any) -> None:
    task = with_config(held_out.tasks[0], max_turns=3)
    env.reset(seed=0, options={"task": task})
    results = [env.step(filler) for _ in range(3)]
    assert not any(r[2] or r[3] for r in results[:2])
    _, reward, terminated, truncated, info = results[-1]
    assert truncated and not terminated and reward == 0.0
    assert info["success"] is False and info["score"] == 0.0
    assert env.step("answer[x]")[4]["valid"] is False  # the episode is over


def test_question_penalty(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = with_config(held_out.tasks[0], question_penalty=0.1)
    actions, info = run_expert(env, task)
    assert info["success"] and info["score"] == pytest.approx(1 - 0.1 * (len(actions) - 1))


# ------------------------------------------------------------ determinism and branching
def test_same_task_seed_actions_same_trajectory(env: ClarifyEnv, held_out: TaskSuite) -> None:
    for task in (held_out.tasks[1], held_out.tasks[150]):
        actions, _ = run_expert(env, task)
        actions = ["bogus", "ask[year=1999]", *actions]
        assert play(env, task, actions, seed=3) == play(ClarifyEnv(), task, actions, seed=3)


def test_snapshot_restore_replays(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[120]
    actions, _ = run_expert(env, task)
    env.reset(seed=0, options={"task": task})
    env.step(actions[0])
    snap = env.snapshot()
    rest = [env.step(a)[:4] for a in actions[1:]]
    env.reset(seed=0, options={"task": held_out.tasks[0]})  # another task in between
    for _ in range(2):
        env.restore(snap)
        assert [env.step(a)[:4] for a in actions[1:]] == rest


# ------------------------------------------------------------ config validation
def test_one_candidate_is_rejected(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[0]
    only = [c for c in task.config["candidates"] if c["id"] == task.gold["target"]]
    with pytest.raises(ValidationError, match="at least 2"):
        env.reset(options={"task": with_config(task, candidates=only)})


def test_target_must_be_a_candidate(env: ClarifyEnv, held_out: TaskSuite) -> None:
    task = held_out.tasks[0].model_copy(update={"gold": {"target": "not-a-candidate"}})
    with pytest.raises(ValidationError, match="not one of the candidate ids"):
        env.reset(options={"task": task})


def test_indistinguishable_or_duplicate_candidates_are_rejected(
    env: ClarifyEnv, held_out: TaskSuite
) -> None:
    task = held_out.tasks[0]
    first = task.config["candidates"][0]
    twin = {**first, "id": "twin", "name": "Twin"}
    with pytest.raises(ValidationError, match="no yes/no question can tell them apart"):
        env.reset(
            options={"task": with_config(task, candidates=[*task.config["candidates"], twin])}
        )
    with pytest.raises(ValidationError, match="unique"):
        env.reset(
            options={"task": with_config(task, candidates=[*task.config["candidates"], first])}
        )


# ------------------------------------------------------------ registry and gymnasium
def test_gymnasium_make_and_check_env() -> None:
    import agentgym  # noqa: F401  (registers agentgym/* ids with gymnasium)

    env = gymnasium.make("agentgym/Clarify-v0")
    obs, info = env.reset(seed=0)
    assert info["task_id"].startswith("clarify-") and obs.startswith("The user wants")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)


def test_agentgym_conformance(env: ClarifyEnv) -> None:
    conformance = pytest.importorskip("agentgym.testing.conformance")
    conformance.check_env(env, tasks=["clarify-products-test-0000", "clarify-movies-test-0000"])


def test_suites_pass_agentgym_validation() -> None:
    import agentgym.task

    check_suite = getattr(agentgym.task, "check_suite", None)
    if check_suite is None:
        pytest.skip("agentgym.task.check_suite is not available")
    for split in ("train", "test"):
        assert check_suite(TASKS / f"{split}.jsonl") == []
    bad = TaskSuite.load(TASKS / "test.jsonl").tasks[0].model_copy(update={"gold": {"target": "x"}})
    with pytest.raises(ValidationError, match="gold target 'x'"):
        ClarifyEnv.validate_task(bad)


def test_candidates_are_listed_once():
    """A product's name already lists its options: its attribute line is not printed again."""
    env = ClarifyEnv()
    obs, _ = env.reset(seed=0, options={"task": "clarify-products-test-0000"})
    assert obs.count("material: glass, color: brown, height: 4 ft") == 1
    assert "product: Bookshelf;" not in obs
    movies, _ = env.reset(seed=0, options={"task": "clarify-movies-test-0000"})
    assert "director: " in movies  # what a movie's name does not say is still shown
