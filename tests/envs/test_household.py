"""agentgym/Household-v0: ALFWorld's rules and text, goals, limits, suites, expert, robustness."""

from __future__ import annotations

import doctest
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from support import shared_data

import agentgym.envs.household as household
from agentgym.envs.household.env import HouseholdEnv
from agentgym.envs.household.generate import SEED, SPLITS, make_task
from agentgym.envs.household.layouts import build_layouts
from agentgym.envs.household.transcript import OVERVIEW, parse_listing, parse_transcript
from agentgym.task import Task, TaskSuite
from agentgym.testing import check_env

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tasks" / "household"
SHARED = shared_data()
TRANSCRIPTS = SHARED / "alfworld" / "expert_transcripts.json"

KITCHEN = {
    "receptacles": "cabinet 1*, cabinet 2, countertop 1, diningtable 1, fridge 1*, microwave 1*, "
    "sinkbasin 1, sidetable 1, garbagecan 1",
    "contents": "cabinet 1: mug 1; countertop 1: apple 2, apple 1, knife 1, bowl 1; "
    "fridge 1: egg 1, lettuce 1; sidetable 1: desklamp 1, book 1; garbagecan 1: apple 3",
}


def task(instruction: str, **config: Any) -> Task:
    """A hand-written task in the kitchen above (the goal read from the instruction)."""
    goal = household.parse_goal(instruction)
    fields = {"task_type": goal.task_type, "object": goal.object}
    fields |= {"receptacle": goal.receptacle} if goal.receptacle else {"lamp": goal.lamp}
    return Task(
        id="t",
        env="agentgym/Household-v0",
        instruction=instruction,
        config=KITCHEN | fields | config,
    )


def play(env: HouseholdEnv, t: Task, actions: list[Any]) -> list[tuple[str, float, bool, bool]]:
    env.reset(seed=0, options={"task": t})
    out = []
    for a in actions:
        obs, reward, terminated, _, info = env.step(a)
        out.append((obs, reward, terminated, info["valid"]))
    return out


@pytest.fixture()
def env() -> HouseholdEnv:
    return HouseholdEnv()


# ---------------------------------------------------------------------- text of every command
def test_first_observation_is_overview_and_task(env):
    obs, info = env.reset(seed=0, options={"task": task("put a hot apple in diningtable.")})
    assert obs == (
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 2, "
        "a cabinet 1, a countertop 1, a diningtable 1, a fridge 1, a garbagecan 1, a microwave 1, "
        "a sidetable 1, and a sinkbasin 1.\nYour task is to: put a hot apple in diningtable."
    )
    assert info["instruction"] == "put a hot apple in diningtable."
    assert (
        "go to cabinet 1" in info["available_actions"]
        and "open fridge 1" not in info["available_actions"]
    )


def test_feedback_strings_follow_the_alfworld_grammar(env):
    steps = [
        ("look", "You are in the middle of a room. Looking quickly around you, you see nothing."),
        ("go to fridge 1", "The fridge 1 is closed."),
        ("examine fridge 1", "The fridge 1 is closed."),
        (
            "open fridge 1",
            "You open the fridge 1. The fridge 1 is open. In it, you see a egg 1, and a lettuce 1.",
        ),
        ("look", "You are facing the fridge 1. Next to it, you see nothing."),
        ("take egg 1 from fridge 1", "You pick up the egg 1 from the fridge 1."),
        ("inventory", "You are carrying: a egg 1."),
        ("examine egg 1", "There's nothing special about egg 1."),
        ("cool egg 1 with fridge 1", "You cool the egg 1 using the fridge 1."),
        ("examine egg 1", "This is a cold egg 1."),
        ("close fridge 1", "You close the fridge 1."),
        ("go to microwave 1", "The microwave 1 is closed."),
        ("heat egg 1 with microwave 1", "You heat the egg 1 using the microwave 1."),
        ("examine egg 1", "This is a hot egg 1."),
        ("go to sinkbasin 1", "On the sinkbasin 1, you see nothing."),
        ("clean egg 1 with sinkbasin 1", "You clean the egg 1 using the sinkbasin 1."),
        ("examine egg 1", "This is a hot and clean egg 1."),
        (
            "go to countertop 1",
            "On the countertop 1, you see a apple 2, a apple 1, a bowl 1, and a knife 1.",
        ),
        ("put egg 1 in/on countertop 1", "You put the egg 1 in/on the countertop 1."),
        (
            "examine countertop 1",
            "On the countertop 1, you see a apple 2, a apple 1, a bowl 1, a egg 1, and a knife 1.",
        ),
        ("take bowl 1 from countertop 1", "You pick up the bowl 1 from the countertop 1."),
        ("examine bowl 1", "This is a normal bowl 1. In it, you see nothing."),
        ("move bowl 1 to countertop 1", "You move the bowl 1 to the countertop 1."),
        ("go to sidetable 1", "On the sidetable 1, you see a book 1, and a desklamp 1."),
        ("examine desklamp 1", "This desklamp 1 is off."),
        ("use desklamp 1", "You turn on the desklamp 1."),
        ("examine desklamp 1", "This desklamp 1 is on."),
        ("use desklamp 1", "You turn on the desklamp 1."),
        ("go to cabinet 2", "On the cabinet 2, you see nothing."),
        ("inventory", "You are not carrying anything."),
    ]
    results = play(env, task("put a clean mug in diningtable."), [a for a, _ in steps])
    for (action, want), (got, _, _, valid) in zip(steps, results, strict=True):
        assert (action, got, valid) == (action, want, True)


def test_help_and_arrive_styles(env):
    obs = play(env, task("put a apple in fridge."), ["help"])[0][0]
    assert (
        obs.startswith("\nAvailable commands:\n  look:")
        and "  put (object) in/on (receptacle):" in obs
    )
    for style, prefix in [("name", "You arrive at cabinet 2. "), ("loc", "You arrive at loc 2. ")]:
        obs = play(env, task("put a apple in fridge.", arrive=style), ["go to cabinet 2"])[0][0]
        assert obs == prefix + "On the cabinet 2, you see nothing."
    moved = task("put a apple in fridge.", put_verb="move")
    env.reset(seed=0, options={"task": moved})
    env.step("go to countertop 1")
    _, _, _, _, info = env.step("take apple 1 from countertop 1")
    env.step("go to cabinet 2")
    assert env.step("help")[0].count("move (object) to (receptacle):") == 1
    assert "move apple 1 to cabinet 2" not in info["available_actions"]  # cabinet lacks apples
    raw = task("put a apple in fridge.", intro="raw")
    assert env.reset(seed=0, options={"task": raw})[0].startswith(
        "-= Welcome to TextWorld, ALFRED! =-\n\nYou are"
    )


@pytest.mark.parametrize(
    "actions",
    [
        ["go to countertop 1", "go to countertop 1"],  # already there
        ["go to fridge 1", "take egg 1 from fridge 1"],  # closed
        [
            "go to countertop 1",
            "take apple 1 from countertop 1",
            "take apple 2 from countertop 1",
        ],  # hands full
        [
            "go to countertop 1",
            "take apple 1 from countertop 1",
            "go to cabinet 2",
            "put apple 1 in/on cabinet 2",
        ],  # cannot hold apples
        [
            "go to countertop 1",
            "take knife 1 from countertop 1",
            "go to microwave 1",
            "heat knife 1 with microwave 1",
        ],  # not heatable
        ["open fridge 1"],  # not there
        ["take apple 1 from countertop 1"],  # not there
        ["go to countertop 1", "use apple 1"],  # no switch
        ["go to sidetable 1", "examine apple 1"],  # not here
        ["go to countertop 1", "put apple 1 in countertop 1"],  # wrong syntax
    ],
)
def test_impossible_commands_do_nothing(env, actions):
    results = play(env, task("put a apple in fridge."), actions)
    assert [r[3] for r in results[:-1]] == [True] * (len(actions) - 1)
    assert results[-1][0] == "Nothing happens." and results[-1][3] is False


def test_commands_ignore_case_spaces_and_final_period(env):
    results = play(
        env,
        task("put a apple in fridge."),
        ["  Go   TO countertop 1. ", "TAKE apple 1 FROM countertop 1"],
    )
    assert [r[3] for r in results] == [True, True]


def test_available_actions_are_exactly_the_admissible_commands(env):
    env.reset(seed=0, options={"task": task("put a apple in fridge.")})
    env.step("go to countertop 1")
    _, _, _, _, info = env.step("take apple 1 from countertop 1")
    local = [a for a in info["available_actions"] if not a.startswith("go to ")]
    assert local == [
        "examine apple 1",
        "examine apple 2",
        "examine bowl 1",
        "examine countertop 1",
        "examine knife 1",
        "help",
        "inventory",
        "look",
        "put apple 1 in/on countertop 1",
    ]
    assert len(info["available_actions"]) == len(local) + 8  # every other receptacle
    for action in info["available_actions"]:
        env.reset(seed=0, options={"task": task("put a apple in fridge.")})
        env.step("go to countertop 1")
        env.step("take apple 1 from countertop 1")
        assert env.step(action)[4]["valid"], action


# ---------------------------------------------------------------------- goals
def _wins(env: HouseholdEnv, instruction: str, actions: list[str]) -> list[bool]:
    return [r[2] for r in play(env, task(instruction), actions)]


def test_place_needs_the_treatment_and_the_receptacle_type(env):
    fetch = ["go to countertop 1", "take apple 1 from countertop 1"]
    assert _wins(
        env,
        "put a apple in diningtable.",
        [*fetch, "go to diningtable 1", "put apple 1 in/on diningtable 1"],
    )[-1]
    hot = [*fetch, "go to diningtable 1", "put apple 1 in/on diningtable 1"]
    assert not any(_wins(env, "put a hot apple in diningtable.", hot))
    reheated = [
        *fetch,
        "go to microwave 1",
        "heat apple 1 with microwave 1",
        "go to fridge 1",
        "cool apple 1 with fridge 1",
        "go to diningtable 1",
        "put apple 1 in/on diningtable 1",
    ]
    assert not any(
        _wins(env, "put a hot apple in diningtable.", reheated)
    )  # cooling undoes heating
    assert _wins(env, "put a cool apple in diningtable.", reheated)[-1]
    clean = [
        *fetch,
        "go to sinkbasin 1",
        "clean apple 1 with sinkbasin 1",
        "go to diningtable 1",
        "put apple 1 in/on diningtable 1",
    ]
    assert _wins(env, "clean some apple and put it in diningtable.", clean) == [False] * 5 + [True]


def test_pick_two_needs_two_objects_in_one_receptacle(env):
    one = [
        "go to countertop 1",
        "take apple 1 from countertop 1",
        "go to diningtable 1",
        "put apple 1 in/on diningtable 1",
    ]
    two = [
        *one,
        "go to countertop 1",
        "take apple 2 from countertop 1",
        "go to diningtable 1",
        "put apple 2 in/on diningtable 1",
    ]
    assert _wins(env, "put two apple in diningtable.", two) == [False] * 7 + [True]
    assert not any(
        _wins(
            env,
            "find two apple and put them in diningtable.",
            [*one, "take apple 1 from diningtable 1", "put apple 1 in/on diningtable 1"],
        )
    )


def test_look_at_needs_the_object_in_hand_where_a_lamp_is_on(env):
    fetch = ["go to countertop 1", "take apple 1 from countertop 1"]
    assert _wins(
        env, "look at apple under the desklamp.", [*fetch, "go to sidetable 1", "use desklamp 1"]
    )[-1]
    lamp_first = ["go to sidetable 1", "use desklamp 1", *fetch, "go to sidetable 1"]
    assert _wins(env, "examine the apple with the desklamp.", lamp_first) == [False] * 4 + [True]
    assert not any(
        _wins(
            env,
            "look at apple under the desklamp.",
            ["go to sidetable 1", "use desklamp 1", *fetch],
        )
    )


def test_turn_limit_truncates_unsolved(env):
    t = task("put a apple in fridge.", max_turns=3)
    env.reset(seed=0, options={"task": t})
    for n in range(1, 4):
        _, reward, terminated, truncated, info = env.step("look" if n % 2 else "dance")
    assert (reward, terminated, truncated, info["success"], info["score"]) == (
        0.0,
        False,
        True,
        False,
        0.0,
    )


def test_shaped_reward_sums_to_one_and_leaves_success_alone():
    env = HouseholdEnv(shaped_reward=True)
    for t in TaskSuite.load(TASKS / "valid_unseen.jsonl").tasks[:30]:
        env.reset(seed=0, options={"task": t})
        rewards = []
        while True:
            _, reward, terminated, truncated, info = env.step(env.expert_action())
            rewards.append(reward)
            if terminated or truncated:
                break
        assert info["success"] and info["score"] == 1.0
        assert sum(rewards) == pytest.approx(1.0) and rewards[-1] > 0 and min(rewards) >= 0


# ---------------------------------------------------------------------- robustness and branching
@pytest.mark.parametrize(
    "action", ["", "   ", "\x00", "go to", "take", "[" * 300, "🙂", 42, None, ["look"]]
)
def test_malformed_actions_never_raise(env, action):
    env.reset(seed=0, options={"task": task("put a apple in fridge.")})
    obs, reward, _, _, info = env.step(action)
    assert obs.endswith("Nothing happens.") and info["valid"] is False and reward == 0.0
    assert info["turn"] == 1


def test_snapshot_restore_branches_without_leaking(env):
    t = task("put a hot apple in diningtable.")
    env.reset(seed=0, options={"task": t})
    env.step("go to countertop 1")
    snap = env.snapshot()
    first = [
        env.step(a)[0] for a in ["take apple 1 from countertop 1", "go to microwave 1", "look"]
    ]
    env.restore(snap)
    assert env.step("look")[0] == "You are facing the countertop 1. Next to it, you see nothing."
    env.restore(snap)
    assert [
        env.step(a)[0] for a in ["take apple 1 from countertop 1", "go to microwave 1", "look"]
    ] == first


def test_conformance_kit_on_every_task_type(env):
    suite = TaskSuite.load(TASKS / "valid_unseen.jsonl")
    one_per_type = {t.config["task_type"]: t for t in reversed(suite.tasks)}
    check_env(env, tasks=list(one_per_type.values()))


# ---------------------------------------------------------------------- config errors
@pytest.mark.parametrize(
    "change, message",
    [
        ({"floorplan": "FloorPlan999", "receptacles": None}, "unknown 'FloorPlan999'"),
        ({"receptacles": "cabinet one"}, "not a name like 'cabinet 3'"),
        ({"contents": "cabinet 9: apple 1"}, "'cabinet 9' is not one of the receptacles"),
        ({"contents": "cabinet 1: apple 1; cabinet 2: apple 1"}, "placed twice"),
        ({"contents": "cabinet 1 apple 1"}, "must look like 'receptacle 1: object 1"),
        ({"object": "banana"}, "no 'banana' in the scene"),
        ({"receptacle": "bathtubbasin"}, "not a receptacle type of the scene"),
        ({"start": "toilet 1"}, "start: 'toilet 1'"),
        ({"allow": ["apple-cabinet"]}, "'object>receptacle'"),
        ({"max_turns": 0}, "max_turns"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_configs_name_the_problem(change, message):
    t = task("put a apple in fridge.")
    config = {k: v for k, v in (t.config | change).items() if v is not None}
    with pytest.raises(ValidationError, match=message):
        HouseholdEnv.validate_task(t.model_copy(update={"config": config}))


def test_instruction_must_state_the_configs_goal():
    t = task("put a apple in fridge.").model_copy(update={"instruction": "put a egg in fridge."})
    with pytest.raises(ValueError, match="states Goal"):
        HouseholdEnv.validate_task(t)
    with pytest.raises(ValueError, match="matches no ALFWorld goal form"):
        household.parse_goal("make me a sandwich")


def test_goal_sentences_round_trip():
    for task_type, templates in household.goals.TEMPLATES.items():
        for variant in range(len(templates)):
            goal = household.Goal(
                task_type,
                "mug",
                None if "look" in task_type else "shelf",
                "desklamp" if "look" in task_type else None,
            )
            assert household.parse_goal(goal.sentence(variant)) == goal


# ---------------------------------------------------------------------- suites and expert
@pytest.fixture(scope="module")
def suites() -> dict[str, TaskSuite]:
    return {s: TaskSuite.load(TASKS / f"{s}.jsonl") for s in SPLITS}


def test_suite_sizes_types_and_unseen_floorplans(suites):
    assert {s: len(v) for s, v in suites.items()} == {
        "train": 3553,
        "valid_seen": 140,
        "valid_unseen": 134,
    }
    for split, tasks in suites.items():
        counts: dict[str, int] = {}
        for t in tasks:
            counts[t.config["task_type"]] = counts.get(t.config["task_type"], 0) + 1
        assert counts == SPLITS[split]
    plans = {s: {t.config["floorplan"] for t in v} for s, v in suites.items()}
    assert not plans["valid_unseen"] & (plans["train"] | plans["valid_seen"])
    assert plans["valid_seen"] <= plans["train"] and len(plans["train"]) == 96
    configs = [json.dumps(t.config, sort_keys=True) for v in suites.values() for t in v]
    assert len(set(configs)) == len(configs)


def test_manifest_checksums_match_the_files():
    manifest = json.loads((TASKS / "manifest.json").read_text())
    for name, digest in manifest["sha256"].items():
        assert hashlib.sha256((TASKS / name).read_bytes()).hexdigest() == digest, name
    assert (TASKS / "LICENSE-alfworld").is_file()


@pytest.mark.parametrize("split", list(SPLITS))
def test_generator_is_deterministic(suites, split):
    rng = random.Random(split)
    for t in rng.sample(suites[split].tasks, 15):
        index = int(t.id.rsplit("-", 1)[1])
        again = make_task(split, index, t.config["task_type"], SEED)
        assert again.model_dump() == t.model_dump()


@pytest.mark.parametrize("split", list(SPLITS))
def test_expert_solves_every_task(suites, split):
    env = HouseholdEnv()
    for t in suites[split]:
        env.reset(seed=0, options={"task": t})
        steps = 0
        while True:
            steps += 1
            _, _, terminated, truncated, info = env.step(env.expert_action())
            if terminated or truncated:
                break
        assert info["success"] and steps == t.difficulty, t.id


def test_random_agent_stays_far_below(suites):
    env, rng, wins = HouseholdEnv(), random.Random(0), 0
    for t in suites["valid_unseen"]:
        _, info = env.reset(seed=0, options={"task": t})
        while True:
            _, _, terminated, truncated, info = env.step(rng.choice(info["available_actions"]))
            if terminated or truncated:
                wins += info["success"]
                break
    assert wins / len(suites["valid_unseen"]) < 0.15


def test_expert_recovers_from_a_wrong_object_in_hand(suites):
    env = HouseholdEnv()
    for t in suites["valid_seen"].tasks[:40]:
        _, info = env.reset(seed=0, options={"task": t})
        for _ in range(3):  # wander and pick up whatever is there
            takes = [a for a in info["available_actions"] if a.startswith("take ")]
            action = (
                takes[0] if takes and env.state.held < 0 else sorted(info["available_actions"])[0]
            )
            _, _, terminated, _, info = env.step(action)
        while not terminated:
            _, _, terminated, truncated, info = env.step(env.expert_action())
            assert not truncated, t.id
        assert info["success"]


# ---------------------------------------------------------------------- data fidelity
@pytest.mark.skipif(not (SHARED / "alfworld" / "layouts").is_dir(), reason="needs ../shared/data")
def test_layouts_file_is_built_from_the_floor_plans():
    shipped = json.loads((ROOT / "envs" / "household" / "data" / "layouts.json").read_text())
    assert build_layouts(SHARED) == shipped and len(shipped) == 120


@pytest.mark.skipif(not TRANSCRIPTS.is_file(), reason="needs ../shared/data")
def test_floor_plans_give_the_real_games_rooms():
    """Three transcripts' rooms are exactly the receptacles we build from their floor plans."""
    layouts = json.loads((ROOT / "envs" / "household" / "data" / "layouts.json").read_text())
    transcripts = json.loads(TRANSCRIPTS.read_text())
    for key, plan in [
        ("act_put_1", "FloorPlan21"),
        ("act_puttwo_0", "FloorPlan311"),
        ("act_puttwo_1", "FloorPlan218"),
    ]:
        seen = parse_listing(
            parse_transcript(transcripts[key]).overview.removeprefix(OVERVIEW)[:-1]
        )
        built = [r.strip().rstrip("*") for r in layouts[plan]["receptacles"].split(",")]
        assert sorted(seen) == sorted(built), key


def test_docstring_example():
    assert doctest.testmod(household).failed == 0
