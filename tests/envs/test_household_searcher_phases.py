"""The searcher's two-phase ``clean`` tasks (find and take, then clean at the sink and put):
solves every small-room clean task, switches command at the take, and leaves put alone."""

from __future__ import annotations

import pytest

import agentgym
from agentgym.envs.household.env import HouseholdEnv
from agentgym.envs.household.searcher import (
    PhasedSearchAgent,
    SearchAgent,
    next_command_phased,
)
from agentgym.rollout import rollout
from agentgym.task import Task, TaskSuite

SMALL_ROOM, TURNS = 10, 16


def small_room(kind: str) -> list[Task]:
    env = agentgym.make("Household-v0")
    out = []
    for t in TaskSuite.load("household/train"):
        if t.tags[0] == kind:
            overview = env.reset(options={"task": t})[0].split("\n")[0]
            if overview.count(", ") + 1 <= SMALL_ROOM:
                out.append(t.model_copy(update={"config": {**t.config, "max_turns": TURNS}}))
    return out


def test_solves_every_small_room_clean_task():
    tasks = small_room("clean")
    assert len(tasks) == 54
    episodes = [rollout(HouseholdEnv(), PhasedSearchAgent(), t, seed=0) for t in tasks]
    assert [t.id for t, ep in zip(tasks, episodes, strict=True) if not ep.success] == []
    for ep in episodes:  # phase 2 = (go to the sink,) clean, deliver
        actions = [s.action for s in ep.steps]
        take = next(i for i, a in enumerate(actions) if a.startswith("take "))
        phase2 = actions[take + 1 :]
        if phase2[0].startswith("go to "):  # taken elsewhere than at the sink
            assert phase2.pop(0).startswith("go to sinkbasin")
        assert phase2[0].startswith("clean ")
        assert phase2[-1].startswith("put ")


def test_same_pickup_answer_needs_a_different_command_per_task_type():
    intro = (
        "You are in the middle of a room. Looking quickly around you, you see a countertop 1, "
        "a sinkbasin 1, and a shelf 1.\n\nYour task is to: {}"
    )
    answers = [
        "On the countertop 1, you see a cloth 1.",
        "You pick up the cloth 1 from the countertop 1.",
    ]
    actions = ["go to countertop 1", "take cloth 1 from countertop 1"]
    put = next_command_phased([intro.format("put a cloth in shelf."), *answers], actions)
    clean = next_command_phased([intro.format("put a clean cloth in shelf."), *answers], actions)
    assert (put, clean) == ("go to shelf 1", "go to sinkbasin 1")


def test_put_tasks_play_as_the_plain_searcher():
    for t in small_room("put")[:20]:
        plain = [s.action for s in rollout(HouseholdEnv(), SearchAgent(), t, seed=0).steps]
        phased = [s.action for s in rollout(HouseholdEnv(), PhasedSearchAgent(), t, seed=0).steps]
        assert plain == phased


def test_clean_task_without_a_sink_is_explained():
    intro = (
        "You are in the middle of a room. Looking quickly around you, you see a countertop 1, "
        "and a shelf 1.\n\nYour task is to: put a clean cloth in shelf."
    )
    answers = [
        "On the countertop 1, you see a cloth 1.",
        "You pick up the cloth 1 from the countertop 1.",
    ]
    with pytest.raises(ValueError, match="sinkbasin"):
        next_command_phased(
            [intro, *answers], ["go to countertop 1", "take cloth 1 from countertop 1"]
        )
    with pytest.raises(ValueError, match="search order"):
        next_command_phased([intro], [], order="random")
