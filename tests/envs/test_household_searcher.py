"""Household's observation-grounded searcher: solves the small-room put/examine tasks, is
deterministic, and sees only the text (two scenes that answer alike get the same commands)."""

from __future__ import annotations

from typing import Any

import pytest

import agentgym
import agentgym.envs.household as household
from agentgym.envs.household.env import HouseholdEnv
from agentgym.envs.household.searcher import SearchAgent, next_command, search_agent
from agentgym.rollout import rollout
from agentgym.task import Task, TaskSuite

ROOM = "cabinet 1*, countertop 1, drawer 1*, shelf 1, sidetable 1"
SMALL_ROOM = 10
"""The training demo's room size (experiments/train_demo.py --max-receptacles)."""
TURNS = 16
"""The searcher's longest episode in those rooms (measured: 16 on train, 12 on the rest)."""


def task(instruction: str, contents: str) -> Task:
    goal = household.parse_goal(instruction)
    fields = {"task_type": goal.task_type, "object": goal.object}
    fields |= {"receptacle": goal.receptacle} if goal.receptacle else {"lamp": goal.lamp}
    config = {"receptacles": ROOM, "contents": contents, **fields}
    return Task(id="t", env="agentgym/Household-v0", instruction=instruction, config=config)


def small_room_tasks() -> list[Task]:
    """The demo's subset: put and examine tasks of household/train in rooms of <= 10."""
    env = agentgym.make("Household-v0")
    out = []
    for t in TaskSuite.load("household/train"):
        if t.tags[0] in ("examine", "put"):
            overview = env.reset(options={"task": t})[0].split("\n")[0]
            if overview.count(", ") + 1 <= SMALL_ROOM:
                out.append(t.model_copy(update={"config": {**t.config, "max_turns": TURNS}}))
    return out


def play(t: Task) -> list[str]:
    ep = rollout(HouseholdEnv(), SearchAgent(), t, seed=0)
    assert ep.status != "error", ep.error
    return [s.action for s in ep.steps] + (["<won>"] if ep.success else [])


def test_solves_every_small_room_task_within_the_turn_budget():
    tasks = small_room_tasks()
    assert len(tasks) == 200
    failed = [t.id for t in tasks if play(t)[-1] != "<won>"]
    assert failed == []


def test_solves_unseen_floorplans_within_their_limit():
    tasks = [t for t in TaskSuite.load("household/valid_unseen") if t.tags[0] in ("examine", "put")]
    assert len(tasks) > 30
    assert all(play(t)[-1] == "<won>" for t in tasks)


def test_deterministic():
    tasks = small_room_tasks()[:40]
    assert [play(t) for t in tasks] == [play(t) for t in tasks]


def test_same_observations_same_commands_where_the_expert_differs():
    """The tomato-like object lies in the last place searched in one scene and the first in the
    other: the searcher's opening is the same (it cannot know), the full-knowledge expert's not."""
    near = task("put a book in shelf.", "cabinet 1: book 1; sidetable 1: pen 1")
    far = task("put a book in shelf.", "cabinet 1: pen 1; sidetable 1: book 1")
    a, b = play(near), play(far)
    assert a[:2] == b[:2] == ["go to cabinet 1", "open cabinet 1"]
    assert a[2] == "take book 1 from cabinet 1" and b[2] != a[2]
    assert a[-1] == b[-1] == "<won>"
    experts = []
    for t in (near, far):
        env = HouseholdEnv()
        env.reset(options={"task": t})
        experts.append(env.expert_action())
    assert experts[0] != experts[1]


def test_skips_the_destination_type_and_remembers_the_lamp():
    t = task(
        "examine the book with the desklamp.",
        "countertop 1: desklamp 1; shelf 1: book 1",
    )
    assert play(t) == [
        "go to cabinet 1",
        "open cabinet 1",
        "go to countertop 1",
        "go to drawer 1",
        "open drawer 1",
        "go to shelf 1",
        "take book 1 from shelf 1",
        "go to countertop 1",
        "use desklamp 1",
        "<won>",
    ]
    put = task("put a pen in drawer.", "drawer 1: book 1; sidetable 1: pen 1")
    assert "go to drawer 1" not in play(put)[:5]


def test_agent_is_never_handed_the_env():
    agent: Any = search_agent("", object())
    assert not any(hasattr(agent, a) for a in ("env", "scene", "state"))
    assert agent.order == "listing"


def test_failed_commands_change_nothing():
    intro = (
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
        "and a shelf 1.\nYour task is to: put a book in shelf."
    )
    assert next_command([intro, "Nothing happens."], ["go to cabinet 1"]) == "go to cabinet 1"


def test_a_wrong_object_in_hand_is_put_down_before_the_search_goes_on():
    """The searcher never takes a wrong object; a learner does, and DAgger asks the searcher
    what to do from there (``agents/context.py:relabel_rows``)."""
    intro = (
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
        "a shelf 1, and a sidetable 1.\nYour task is to: put a book in shelf."
    )
    seen = "On the sidetable 1, you see a pen 1, and a book 1."
    took = "You pick up the pen 1 from the sidetable 1."
    put = "You put the pen 1 in/on the sidetable 1."
    walked = ["go to sidetable 1", "take pen 1 from sidetable 1"]
    assert next_command([intro, seen, took], walked) == "put pen 1 in/on sidetable 1"
    back = [intro, seen, took, put]
    assert next_command(back, [*walked, "put pen 1 in/on sidetable 1"]) == (
        "take book 1 from sidetable 1"
    )
    two = intro.replace("put a book in shelf", "find two book and put them in shelf")
    assert next_command([two, seen, took], walked) == "put pen 1 in/on sidetable 1"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: next_command(["hello"], []), "room overview"),
        (lambda: next_command(["a", "b"], []), "one more observation"),
        (lambda: SearchAgent("random"), "allowed: listing"),
        (
            lambda: next_command(
                [
                    "You are in the middle of a room. Looking quickly around you, you see a "
                    "fridge 1, and a countertop 1.\nYour task is to: put a clean apple in fridge.",
                    "On the countertop 1, you see a apple 1.",
                    "You pick up the apple 1 from the countertop 1.",
                ],
                ["go to countertop 1", "take apple 1 from countertop 1"],
            ),
            "needs a sinkbasin",
        ),
    ],
)
def test_clear_errors(call: Any, message: str):
    with pytest.raises(ValueError, match=message):
        call()


def test_solves_the_training_demos_household_tasks(tmp_path):
    """experiments/train_demo.py --env Household-v0: held-out rooms as they are, training rooms
    narrowed (many layouts); the searcher is the SFT data, so it must solve what it trains on."""
    pytest.importorskip("torch")
    from experiments import kit

    suites = kit.household_tasks(tmp_path, SMALL_ROOM, TURNS)
    train, test = (TaskSuite.load(suites[s]).tasks for s in ("train", "test"))
    plans = {t.id: t.config["floorplan"] for t in TaskSuite.load("household/train")}
    test_plans = {t.config["floorplan"] for t in test}
    assert not test_plans & {plans[t.id.rsplit("-r", 1)[0]] for t in train}
    rooms = {t.config["receptacles"] for t in train}
    assert len(test) == 43 and len(train) > 1000 and len(rooms) > 900
    assert all(5 <= r.count(",") + 1 <= SMALL_ROOM for r in rooms)
    assert all(play(t)[-1] == "<won>" for t in test)
    solved = sum(play(t)[-1] == "<won>" for t in train)
    assert solved / len(train) > 0.97  # measured 1035/1055; the rest need more than 16 turns
