"""Household: receptacles that share a location, as in ALFWorld (``receptacleAtLocation``).

The real engine, where cabinet 1 and cabinet 2 stand at one location: ``go to cabinet 1``, ``open
cabinet 1``, then ``go to cabinet 2`` answers ``Nothing happens.`` (the agent is already there) and
``look`` answers ``You are facing the cabinet 2, and cabinet 1. Next to it, you see nothing.``
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from support import shared_data

import agentgym.envs.household as household
from agentgym.envs.household import from_transcript, load_game_files, replay
from agentgym.envs.household.config import layouts
from agentgym.envs.household.env import HouseholdEnv
from agentgym.envs.household.layouts import sharing_rates
from agentgym.envs.household.searcher import SearchAgent
from agentgym.rollout import rollout
from agentgym.task import Task, TaskSuite
from agentgym.testing import check_env

ROOT = Path(__file__).resolve().parents[2]
SHARED = shared_data()
ROOM = {
    "receptacles": "cabinet 1*, cabinet 2*, countertop 1, drawer 1*, toilet 1",
    "shared": "cabinet 1, cabinet 2",
    "contents": "cabinet 1: candle 1; cabinet 2: spraybottle 2; countertop 1: soapbar 1",
}
OVERVIEW = (
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 2, "
    "a cabinet 1, a countertop 1, a drawer 1, and a toilet 1."
)


def task(instruction: str = "put some spraybottle on toilet.", **config: Any) -> Task:
    goal = household.parse_goal(instruction)
    fields = {"task_type": goal.task_type, "object": goal.object}
    fields |= {"receptacle": goal.receptacle} if goal.receptacle else {"lamp": goal.lamp}
    return Task(
        id="t", env="agentgym/Household-v0", instruction=instruction, config=ROOM | fields | config
    )


def play(t: Task, actions: list[str]) -> list[tuple[str, bool]]:
    env = HouseholdEnv()
    env.reset(seed=0, options={"task": t})
    out = []
    for a in actions:
        obs, _, _, _, info = env.step(a)
        out.append((obs, info["valid"]))
    return out


def expert(t: Task) -> list[str]:
    env = HouseholdEnv()
    env.reset(seed=0, options={"task": t})
    actions: list[str] = []
    while True:
        actions.append(env.expert_action())
        _, _, terminated, truncated, info = env.step(actions[-1])
        if terminated or truncated:
            assert info["success"], actions
            return actions


# ---------------------------------------------------------------------- the engine
def test_the_issues_transcript():
    assert play(task(), ["go to cabinet 1", "open cabinet 1", "go to cabinet 2", "look"]) == [
        ("The cabinet 1 is closed.", True),
        ("You open the cabinet 1. The cabinet 1 is open. In it, you see a candle 1.", True),
        ("Nothing happens.", False),
        ("You are facing the cabinet 2, and cabinet 1. Next to it, you see nothing.", True),
    ]


def test_every_receptacle_of_the_location_is_within_reach():
    steps = [
        ("go to cabinet 2", "The cabinet 2 is closed."),
        ("examine cabinet 1", "The cabinet 1 is closed."),
        (
            "open cabinet 1",
            "You open the cabinet 1. The cabinet 1 is open. In it, you see a candle 1.",
        ),
        ("take candle 1 from cabinet 1", "You pick up the candle 1 from the cabinet 1."),
        (
            "open cabinet 2",
            "You open the cabinet 2. The cabinet 2 is open. In it, you see a spraybottle 2.",
        ),
        ("put candle 1 in/on cabinet 2", "You put the candle 1 in/on the cabinet 2."),
        ("take spraybottle 2 from cabinet 2", "You pick up the spraybottle 2 from the cabinet 2."),
        ("close cabinet 1", "You close the cabinet 1."),
        ("go to toilet 1", "On the toilet 1, you see nothing."),
        ("look", "You are facing the toilet 1. Next to it, you see nothing."),
        ("go to cabinet 1", "The cabinet 1 is closed."),  # a location of its own again
    ]
    got = play(task(), [a for a, _ in steps])
    assert got == [(want, True) for _, want in steps]


def test_admissible_commands_cover_the_location():
    env = HouseholdEnv()
    _, info = env.reset(seed=0, options={"task": task()})
    assert {"go to cabinet 1", "go to cabinet 2"} <= set(info["available_actions"])
    env.step("go to cabinet 1")
    _, _, _, _, info = env.step("open cabinet 2")
    actions = info["available_actions"]
    assert "go to cabinet 1" not in actions and "go to cabinet 2" not in actions
    assert {"examine cabinet 1", "examine cabinet 2", "open cabinet 1", "close cabinet 2"} <= set(
        actions
    )
    assert "take spraybottle 2 from cabinet 2" in actions
    assert "take candle 1 from cabinet 1" not in actions  # cabinet 1 is still closed
    for action in actions:  # each is valid, as ALFWorld's admissible commands are
        env2 = HouseholdEnv()
        env2.reset(seed=0, options={"task": task()})
        env2.step("go to cabinet 1")
        env2.step("open cabinet 2")
        assert env2.step(action)[4]["valid"], action


def test_look_lists_what_textworlds_query_finds_next_to_it():
    """``list_objects_on_the_floor``: objects at the location not in some receptacle there. In
    TextWorld's state ``not_inreceptacle(o, r)`` exists only once ``o`` was taken from ``r``, so
    an object moved from cabinet 2 into cabinet 1 of the same location shows next to it."""
    actions = [
        "go to cabinet 1",
        "open cabinet 1",
        "open cabinet 2",
        "take spraybottle 2 from cabinet 2",
        "put spraybottle 2 in/on cabinet 1",
        "look",
        "take spraybottle 2 from cabinet 1",
        "put spraybottle 2 in/on cabinet 2",
        "look",
    ]
    got = [obs for obs, _ in play(task(), actions)]
    assert got[5] == (
        "You are facing the cabinet 2, and cabinet 1. Next to it, you see a spraybottle 2."
    )
    # now taken from cabinet 1 too, and back in cabinet 2: not in cabinet 1 any more
    assert got[8] == (
        "You are facing the cabinet 2, and cabinet 1. Next to it, you see a spraybottle 2."
    )
    taken_and_returned = play(
        task(),
        [
            "go to countertop 1",
            "take soapbar 1 from countertop 1",
            "put soapbar 1 in/on countertop 1",
            "look",
        ],
    )
    assert taken_and_returned[-1][0] == (
        "You are facing the countertop 1. Next to it, you see nothing."
    )


def test_location_numbers_and_arrival_styles():
    t = task(arrive="loc")
    got = play(t, ["go to cabinet 2", "go to countertop 1", "go to cabinet 1", "go to drawer 1"])
    assert [obs.split(".")[0] for obs, _ in got] == [
        "You arrive at loc 1",
        "You arrive at loc 2",
        "You arrive at loc 1",  # the same location
        "You arrive at loc 3",
    ]
    named = play(task(arrive="name"), ["go to cabinet 2"])[0][0]
    assert named == "You arrive at cabinet 2. The cabinet 2 is closed."


def test_start_at_a_shared_location_and_lamps_there():
    t = task(
        "examine the spraybottle with the desklamp.",
        receptacles="cabinet 1, cabinet 2*, countertop 1, drawer 1*, toilet 1",
        contents="cabinet 1: desklamp 1; cabinet 2: spraybottle 2",
        start="cabinet 1",
    )
    assert expert(t) == ["open cabinet 2", "take spraybottle 2 from cabinet 2", "use desklamp 1"]


def test_expert_uses_the_shared_location():
    assert expert(task()) == [
        "go to cabinet 2",
        "open cabinet 2",
        "take spraybottle 2 from cabinet 2",
        "go to toilet 1",
        "put spraybottle 2 in/on toilet 1",
    ]
    sink = task(
        "put a clean cloth in shelf.",
        receptacles="countertop 1, shelf 1, sinkbasin 1",
        shared="countertop 1, sinkbasin 1",
        contents="countertop 1: cloth 1",
    )
    assert expert(sink) == [
        "go to countertop 1",
        "take cloth 1 from countertop 1",
        "clean cloth 1 with sinkbasin 1",  # the sink basin stands there too
        "go to shelf 1",
        "put cloth 1 in/on shelf 1",
    ]


def test_a_shared_location_is_the_floor_plans_own():
    """Generated tasks name a floor plan; its groups (ALFRED's poses) come with it."""
    env = HouseholdEnv()
    t = next(
        t for t in TaskSuite.load("household/valid_unseen") if t.config["floorplan"] == "FloorPlan1"
    )
    assert layouts()["FloorPlan1"]["shared"] == "drawer 1, drawer 2"
    env.reset(seed=0, options={"task": t})
    assert env.step("go to drawer 1")[4]["valid"]
    assert env.step("go to drawer 2")[0] == "Nothing happens."
    assert env.step("look")[0].startswith("You are facing the drawer 2, and drawer 1. ")
    alone = t.model_copy(update={"config": {**t.config, "shared": ""}})
    env.reset(seed=0, options={"task": alone})  # an explicit "" stands every receptacle alone
    env.step("go to drawer 1")
    assert env.step("go to drawer 2")[4]["valid"]


@pytest.mark.parametrize(
    "shared, message",
    [
        ("cabinet 1, cabinet 9", "'cabinet 9' is not one of the receptacles"),
        ("cabinet 1, cabinet 2; cabinet 2, drawer 1", "'cabinet 2' is in two groups"),
        ("cabinet 1", "names one receptacle"),
    ],
)
def test_bad_groups_name_the_problem(shared, message):
    with pytest.raises(ValidationError, match=message):
        HouseholdEnv.validate_task(task(shared=shared))


def test_conformance_kit_on_shared_locations():
    suite = TaskSuite.load("household/valid_unseen")
    plans = layouts()
    tasks = {t.config["task_type"]: t for t in suite if plans[t.config["floorplan"]]["shared"]}
    assert len(tasks) == 6
    check_env(HouseholdEnv(), tasks=[task(), *tasks.values()])


# ---------------------------------------------------------------------- the importers
def _problem_with_shared_sidetables() -> str:
    from test_household_pddl import PROBLEM

    return PROBLEM.replace(
        "(receptacleAtLocation SideTable_bar__plus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 "
        "loc_bar_5_bar_3_bar_0_bar_60)",
        "(receptacleAtLocation SideTable_bar__plus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 "
        "loc_bar__minus_5_bar_3_bar_0_bar_60)",
    ).replace(
        "(objectAtLocation FloorLamp_bar__minus_03_dot_20_bar__plus_00_dot_00_bar__plus_02_dot_00 "
        "loc_bar_5_bar_3_bar_0_bar_60)",
        "(objectAtLocation FloorLamp_bar__minus_03_dot_20_bar__plus_00_dot_00_bar__plus_02_dot_00 "
        "loc_bar__minus_5_bar_3_bar_0_bar_60)",
    )


def test_game_files_receptacle_at_location_is_honoured():
    from test_household_pddl import TRAJ

    problem = _problem_with_shared_sidetables()
    assert problem.count("loc_bar__minus_5_bar_3_bar_0_bar_60)") == 4
    loaded = load_game_files(problem, TRAJ)
    assert loaded.config["shared"] == "sidetable 1, sidetable 2"
    env = HouseholdEnv()
    env.reset(seed=0, options={"task": loaded})
    assert env.step("go to sidetable 1")[0] == "On the sidetable 1, you see a desklamp 1."
    assert env.step("go to sidetable 2")[0] == "Nothing happens."
    assert env.step("look")[0] == (
        "You are facing the sidetable 2, and sidetable 1. Next to it, you see a floorlamp 1."
    )
    assert env.step("examine sidetable 2")[0] == "On the sidetable 2, you see nothing."


TRANSCRIPT = f"""{OVERVIEW}
Your task is to: put some spraybottle on toilet.
> go to cabinet 1
The cabinet 1 is closed.
> open cabinet 1
You open the cabinet 1. The cabinet 1 is open. In it, you see a candle 1.
> go to cabinet 2
Nothing happens.
> look
You are facing the cabinet 2, and cabinet 1. Next to it, you see nothing.
> open cabinet 2
You open the cabinet 2. The cabinet 2 is open. In it, you see a spraybottle 2.
> take spraybottle 2 from cabinet 2
You pick up the spraybottle 2 from the cabinet 2.
> go to toilet 1
On the toilet 1, you see nothing.
> put spraybottle 2 in/on toilet 1
You put the spraybottle 2 in/on the toilet 1.
"""


def _drop(text: str, *commands: str) -> str:
    """The transcript without these commands (and their answers)."""
    lines = text.strip("\n").split("\n")
    out, skip = [], False
    for line in lines:
        if line.startswith(">"):
            skip = line[2:] in commands
        if not skip:
            out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    "text",
    [
        TRANSCRIPT,  # a go to answered "Nothing happens." (and look facing both)
        _drop(TRANSCRIPT, "go to cabinet 2"),  # look facing both
        _drop(TRANSCRIPT, "go to cabinet 2", "look"),  # cabinet 2 opened while at cabinet 1
    ],
)
def test_transcripts_show_shared_locations_and_replay_exactly(text):
    t = from_transcript(text)
    assert t.config["shared"] == "cabinet 2, cabinet 1"
    result = replay(text)
    assert result.mismatches == [] and result.won


def test_location_numbers_show_shared_locations():
    text = f"""{OVERVIEW}
Your task is to: put some spraybottle on toilet.
> go to drawer 1
You arrive at loc 4. The drawer 1 is closed.
> go to cabinet 2
You arrive at loc 2. The cabinet 2 is closed.
> go to countertop 1
You arrive at loc 3. On the countertop 1, you see a soapbar 1.
> go to cabinet 1
You arrive at loc 2. The cabinet 1 is closed.
> open cabinet 2
You open the cabinet 2. The cabinet 2 is open. In it, you see a spraybottle 2.
> take spraybottle 2 from cabinet 2
You pick up the spraybottle 2 from the cabinet 2.
> go to toilet 1
You arrive at loc 5. On the toilet 1, you see nothing.
> put spraybottle 2 in/on toilet 1
You put the spraybottle 2 in/on the toilet 1.
"""
    t = from_transcript(text)
    assert t.config["shared"] == "cabinet 2, cabinet 1"
    assert t.config["locs"] == {
        "drawer 1": 4,
        "cabinet 2": 2,
        "countertop 1": 3,
        "cabinet 1": 2,
        "toilet 1": 5,
    }
    result = replay(text)
    assert result.mismatches == [] and result.won


def test_acting_elsewhere_without_an_answer_is_still_an_error():
    text = TRANSCRIPT.split("> go to cabinet 2")[0] + "> open cabinet 2\n"
    with pytest.raises(ValueError, match="acts on cabinet 2 while standing at cabinet 1"):
        from_transcript(text)


def test_no_transcript_of_the_real_engine_shows_a_shared_location():
    path = SHARED / "alfworld" / "expert_transcripts.json"
    if not path.is_file():
        pytest.skip("needs ../shared/data/alfworld")
    for name, text in json.loads(path.read_text()).items():
        assert "shared" not in from_transcript(text).config, name


# ---------------------------------------------------------------------- the searcher
def test_searcher_takes_a_failed_go_to_as_here():
    ep = rollout(HouseholdEnv(), SearchAgent(), task(), seed=0)
    assert [s.action for s in ep.steps] == [
        "go to cabinet 2",
        "open cabinet 2",
        "take spraybottle 2 from cabinet 2",
        "go to toilet 1",
        "put spraybottle 2 in/on toilet 1",
    ]
    far = task(contents="cabinet 1: spraybottle 2; countertop 1: soapbar 1")
    actions = [s.action for s in rollout(HouseholdEnv(), SearchAgent(), far, seed=0).steps]
    assert actions[:5] == [
        "go to cabinet 2",
        "open cabinet 2",
        "go to cabinet 1",  # answered "Nothing happens.": it stands here too
        "examine cabinet 1",
        "open cabinet 1",
    ]
    assert actions[5:] == [
        "take spraybottle 2 from cabinet 1",
        "go to toilet 1",
        "put spraybottle 2 in/on toilet 1",
    ]


def test_searcher_meets_shared_locations_in_the_suites():
    """valid_unseen's put and examine tasks (all solved: test_household_searcher) include
    episodes where a ``go to`` answers ``Nothing happens.``."""
    tasks = [t for t in TaskSuite.load("household/valid_unseen") if t.tags[0] in ("examine", "put")]
    hits = 0
    for t in tasks:
        ep = rollout(HouseholdEnv(), SearchAgent(), t, seed=0)
        assert ep.success, t.id
        hits += any(
            s.action.startswith("go to ") and s.observation == "Nothing happens." for s in ep.steps
        )
    assert hits >= 5


# ---------------------------------------------------------------------- data
def test_layouts_group_the_receptacles_alfred_places_at_one_pose():
    plans = layouts()
    assert sum(bool(p["shared"]) for p in plans.values()) == 67
    assert plans["FloorPlan21"]["shared"] == "diningtable 3, microwave 1"
    assert (
        plans["FloorPlan301"]["shared"]
        == "drawer 1, drawer 2; drawer 4, drawer 5; shelf 4, shelf 5"
    )
    manifest = json.loads((ROOT / "tasks" / "household" / "manifest.json").read_text())
    assert manifest["shared_locations"] == {"train": 1893, "valid_seen": 77, "valid_unseen": 91}


@pytest.mark.skipif(not (SHARED / "alfworld" / "layouts").is_dir(), reason="needs ../shared/data")
def test_sharing_rates_per_type_as_documented():
    rates = sharing_rates(SHARED)
    assert rates["drawer"] == (474, 133)
    assert rates["shelf"] == (187, 52)
    assert rates["cabinet"] == (436, 75)
    assert rates["countertop"] == (99, 1) and rates["fridge"] == (30, 0)
    assert sum(n for n, _ in rates.values()) == 1755
    assert sum(k for _, k in rates.values()) == 280
