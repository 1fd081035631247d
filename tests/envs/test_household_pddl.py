"""Loading real ALFWorld game files (``initial_state.pddl`` + ``traj_data.json``, json_2.1.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym.envs.household import load_game, load_game_files
from agentgym.envs.household.env import HouseholdEnv

# A small problem written exactly as ALFWorld's generator writes them (object ids with _bar_ /
# _dot_ / _minus_ / _plus_, type constants, location ids, the goal with "# receptacle").
PROBLEM = """
(define (problem plan_trial_T20190908_010101_000001)
(:domain alfred)
(:objects
agent1 - agent
        Egg - object
        Mug - object
        DeskLamp - object
        FloorLamp - object
        EggType - otype
        MugType - otype
        DeskLampType - otype
        FloorLampType - otype
        CounterTopType - rtype
        DiningTableType - rtype
        FridgeType - rtype
        MicrowaveType - rtype
        SideTableType - rtype
        Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41 - object
        Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56 - object
        Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71 - object
        DeskLamp_bar__minus_01_dot_50_bar__plus_00_dot_66_bar__plus_01_dot_20 - object
        FloorLamp_bar__minus_03_dot_20_bar__plus_00_dot_00_bar__plus_02_dot_00 - object
        CounterTop_bar__minus_01_dot_87_bar__plus_00_dot_95_bar__minus_01_dot_21 - receptacle
        DiningTable_bar__minus_02_dot_00_bar__plus_00_dot_75_bar__plus_01_dot_50 - receptacle
        Fridge_bar__minus_02_dot_10_bar__plus_00_dot_00_bar__plus_01_dot_09 - receptacle
        Microwave_bar__minus_00_dot_24_bar__plus_01_dot_69_bar__minus_02_dot_53 - receptacle
        SideTable_bar__minus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 - receptacle
        SideTable_bar__plus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 - receptacle
        loc_bar__minus_5_bar__minus_5_bar_2_bar_45 - location
        loc_bar__minus_6_bar_5_bar_3_bar_45 - location
        loc_bar__minus_4_bar_4_bar_3_bar_0 - location
        loc_bar__minus_1_bar__minus_7_bar_2_bar__minus_30 - location
        loc_bar__minus_5_bar_3_bar_0_bar_60 - location
        loc_bar_5_bar_3_bar_0_bar_60 - location
        loc_bar_0_bar_0_bar_0_bar_30 - location
        )


(:init


        (receptacleType CounterTop_bar__minus_01_dot_87_bar__plus_00_dot_95_bar__minus_01_dot_21 CounterTopType)
        (receptacleType DiningTable_bar__minus_02_dot_00_bar__plus_00_dot_75_bar__plus_01_dot_50 DiningTableType)
        (receptacleType Fridge_bar__minus_02_dot_10_bar__plus_00_dot_00_bar__plus_01_dot_09 FridgeType)
        (receptacleType Microwave_bar__minus_00_dot_24_bar__plus_01_dot_69_bar__minus_02_dot_53 MicrowaveType)
        (receptacleType SideTable_bar__minus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 SideTableType)
        (receptacleType SideTable_bar__plus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 SideTableType)
        (objectType Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41 EggType)
        (objectType Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56 EggType)
        (objectType Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71 MugType)
        (objectType DeskLamp_bar__minus_01_dot_50_bar__plus_00_dot_66_bar__plus_01_dot_20 DeskLampType)
        (objectType FloorLamp_bar__minus_03_dot_20_bar__plus_00_dot_00_bar__plus_02_dot_00 FloorLampType)
        (canContain FridgeType EggType)
        (canContain FridgeType MugType)
        (canContain MicrowaveType EggType)
        (canContain MicrowaveType MugType)
        (canContain DiningTableType EggType)
        (canContain DiningTableType MugType)
        (canContain CounterTopType EggType)
        (canContain CounterTopType MugType)
        (canContain SideTableType EggType)
        (canContain SideTableType MugType)
        (canContain MicrowaveType DeskLampType)
        (pickupable Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41)
        (pickupable Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56)
        (pickupable Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71)
        (isReceptacleObject Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71)
        (openable Fridge_bar__minus_02_dot_10_bar__plus_00_dot_00_bar__plus_01_dot_09)
        (openable Microwave_bar__minus_00_dot_24_bar__plus_01_dot_69_bar__minus_02_dot_53)
        (atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)

        (cleanable Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41)
        (heatable Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41)
        (coolable Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41)
        (sliceable Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41)
        (cleanable Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56)
        (heatable Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56)
        (coolable Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56)
        (heatable Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71)
        (toggleable DeskLamp_bar__minus_01_dot_50_bar__plus_00_dot_66_bar__plus_01_dot_20)
        (toggleable FloorLamp_bar__minus_03_dot_20_bar__plus_00_dot_00_bar__plus_02_dot_00)

        (inReceptacle Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41 CounterTop_bar__minus_01_dot_87_bar__plus_00_dot_95_bar__minus_01_dot_21)
        (inReceptacle Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56 Fridge_bar__minus_02_dot_10_bar__plus_00_dot_00_bar__plus_01_dot_09)
        (inReceptacle Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71 DiningTable_bar__minus_02_dot_00_bar__plus_00_dot_75_bar__plus_01_dot_50)
        (inReceptacle DeskLamp_bar__minus_01_dot_50_bar__plus_00_dot_66_bar__plus_01_dot_20 SideTable_bar__minus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20)
        (objectAtLocation Egg_bar__minus_01_dot_44_bar__plus_00_dot_94_bar__minus_02_dot_41 loc_bar__minus_5_bar__minus_5_bar_2_bar_45)
        (objectAtLocation Egg_bar__plus_02_dot_06_bar__plus_00_dot_60_bar__minus_02_dot_56 loc_bar__minus_4_bar_4_bar_3_bar_0)
        (objectAtLocation Mug_bar__plus_00_dot_32_bar__plus_00_dot_91_bar__minus_02_dot_71 loc_bar__minus_6_bar_5_bar_3_bar_45)
        (objectAtLocation DeskLamp_bar__minus_01_dot_50_bar__plus_00_dot_66_bar__plus_01_dot_20 loc_bar__minus_5_bar_3_bar_0_bar_60)
        (objectAtLocation FloorLamp_bar__minus_03_dot_20_bar__plus_00_dot_00_bar__plus_02_dot_00 loc_bar_5_bar_3_bar_0_bar_60)
        (receptacleAtLocation CounterTop_bar__minus_01_dot_87_bar__plus_00_dot_95_bar__minus_01_dot_21 loc_bar__minus_5_bar__minus_5_bar_2_bar_45)
        (receptacleAtLocation DiningTable_bar__minus_02_dot_00_bar__plus_00_dot_75_bar__plus_01_dot_50 loc_bar__minus_6_bar_5_bar_3_bar_45)
        (receptacleAtLocation Fridge_bar__minus_02_dot_10_bar__plus_00_dot_00_bar__plus_01_dot_09 loc_bar__minus_4_bar_4_bar_3_bar_0)
        (receptacleAtLocation Microwave_bar__minus_00_dot_24_bar__plus_01_dot_69_bar__minus_02_dot_53 loc_bar__minus_1_bar__minus_7_bar_2_bar__minus_30)
        (receptacleAtLocation SideTable_bar__minus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 loc_bar__minus_5_bar_3_bar_0_bar_60)
        (receptacleAtLocation SideTable_bar__plus_01_dot_50_bar__plus_00_dot_01_bar__plus_01_dot_20 loc_bar_5_bar_3_bar_0_bar_60)
        )


(:goal

    (and
        (exists (?r # receptacle)
            (exists (?o # object)
                (and
                    (objectType ?o EggType)
                    (receptacleType ?r DiningTableType)
                    (isHot ?o)
                    (inReceptacle ?o ?r)
                )
            )
        )
    )
)
)
"""

TRAJ = {
    "task_id": "trial_T20190908_010101_000001",
    "task_type": "pick_heat_then_place_in_recep",
    "pddl_params": {
        "mrecep_target": "",
        "object_sliced": False,
        "object_target": "Egg",
        "parent_target": "DiningTable",
        "toggle_target": "",
    },
    "scene": {"floor_plan": "FloorPlan1", "scene_num": 1},
    "turk_annotations": {"anns": [{"task_desc": "Put a heated egg on the table."}]},
}


@pytest.fixture()
def game(tmp_path: Path) -> Path:
    folder = tmp_path / "pick_heat_then_place_in_recep-Egg-None-DiningTable-1" / TRAJ["task_id"]
    folder.mkdir(parents=True)
    (folder / "initial_state.pddl").write_text(PROBLEM)
    (folder / "traj_data.json").write_text(json.dumps(TRAJ))
    return folder


def test_game_folder_becomes_a_task(game):
    task = load_game(game)
    assert task.id == f"alfworld-{game.parent.name}-{game.name}"
    assert task.instruction == "put a hot egg in diningtable."
    config = task.config
    assert config["receptacles"] == (
        "countertop 1, diningtable 1, fridge 1*, microwave 1*, sidetable 1, sidetable 2"
    )
    # ids sorted per type: Egg_bar__minus... < Egg_bar__plus...
    assert config["contents"] == (
        "countertop 1: egg 1; diningtable 1: mug 1; fridge 1: egg 2; sidetable 1: desklamp 1"
    )
    assert config["floor"] == "sidetable 2: floorlamp 1"  # stands on the floor next to it
    assert config["allow"] == ["desklamp>microwave"]  # a canContain pair beyond ALFRED's table
    assert "start" not in config  # the agent starts away from every receptacle


def test_loaded_game_plays_and_the_expert_wins(game):
    env = HouseholdEnv()
    obs, _ = env.reset(seed=0, options={"task": load_game(game)})
    assert obs == (
        "You are in the middle of a room. Looking quickly around you, you see a countertop 1, "
        "a diningtable 1, a fridge 1, a microwave 1, a sidetable 2, and a sidetable 1.\n"
        "Your task is to: put a hot egg in diningtable."
    )
    assert env.step("go to sidetable 2")[0] == "On the sidetable 2, you see nothing."
    assert (
        env.step("look")[0] == "You are facing the sidetable 2. Next to it, you see a floorlamp 1."
    )
    assert env.step("use floorlamp 1")[0] == "You turn on the floorlamp 1."
    actions = []
    while True:
        actions.append(env.expert_action())
        _, reward, terminated, truncated, info = env.step(actions[-1])
        if terminated or truncated:
            break
    assert info["success"] and reward == 1.0
    assert actions == [
        "go to countertop 1",
        "take egg 1 from countertop 1",
        "go to microwave 1",
        "heat egg 1 with microwave 1",
        "go to diningtable 1",
        "put egg 1 in/on diningtable 1",
    ]


def test_agent_start_at_a_receptacle_and_look_task():
    problem = PROBLEM.replace(
        "(atLocation agent1 loc_bar_0_bar_0_bar_0_bar_30)",
        "(atLocation agent1 loc_bar__minus_6_bar_5_bar_3_bar_45)",
    )
    traj = {
        **TRAJ,
        "task_type": "look_at_obj_in_light",
        "pddl_params": {
            **TRAJ["pddl_params"],
            "object_target": "Mug",
            "parent_target": "",
            "toggle_target": "DeskLamp",
        },
    }
    task = load_game_files(problem, traj, variant=1)
    assert task.config["start"] == "diningtable 1"
    assert task.instruction == "examine the mug with the desklamp."
    env = HouseholdEnv()
    env.reset(seed=0, options={"task": task})
    assert (
        env.step("take mug 1 from diningtable 1")[0]
        == "You pick up the mug 1 from the diningtable 1."
    )
    env.step("go to sidetable 1")
    _, reward, terminated, _, _ = env.step("use desklamp 1")
    assert terminated and reward == 1.0


@pytest.mark.parametrize(
    "change, message",
    [
        ({"task_type": "pick_and_place_with_movable_recep"}, "not one of ALFWorld's six"),
        ({"pddl_params": {**TRAJ["pddl_params"], "object_sliced": True}}, "sliced"),
        ({"pddl_params": {**TRAJ["pddl_params"], "object_target": ""}}, "object_target is missing"),
    ],
)
def test_unsupported_games_are_refused_clearly(change, message):
    with pytest.raises(ValueError, match=message):
        load_game_files(PROBLEM, {**TRAJ, **change})


def test_broken_files_are_reported(game):
    (game / "traj_data.json").unlink()
    with pytest.raises(FileNotFoundError, match="traj_data.json not found"):
        load_game(game)
    with pytest.raises(ValueError, match="unbalanced"):
        load_game_files(PROBLEM[:-20], TRAJ)
    with pytest.raises(ValueError, match="no ':init' section"):
        load_game_files("(define (problem p) (:domain alfred))", TRAJ)
