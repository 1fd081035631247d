"""TextArena's games as agentgym envs, on the real textarena package: Gymnasium's checker and the
conformance kit, the PettingZoo path for two-player games, and `agentgym eval` with resume."""

from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

import agentgym
from agentgym.cli import app
from agentgym.envs.textarena import (
    EXPERTS,
    SINGLE_PLAYER,
    TWO_PLAYER,
    TextArenaParallelEnv,
    register_envs,
)
from agentgym.envs.textarena.generate import suite
from agentgym.task import TaskSuite
from agentgym.testing import check_env, check_parallel_env


@pytest.fixture(autouse=True, scope="module")
def registered():
    """The family's own registrar, so these tests do not depend on the installed entry points."""
    register_envs()


@pytest.mark.parametrize("game", [*SINGLE_PLAYER, *TWO_PLAYER])
def test_every_wrapped_game_conforms(game):
    """Gymnasium's check_env and our kit; the kit checks the expert only where one exists (the
    others have none: their determinism and snapshot checks replay invalid-move probes instead)."""
    env = agentgym.make(f"textarena/{game}")
    check_env(env, tasks=env.suite.tasks[:2])


@pytest.mark.parametrize("game", sorted(EXPERTS))
def test_experts_solve_every_task(game):
    env = agentgym.make(f"textarena/{game}")
    for task in env.suite:
        env.reset(seed=0, options={"task": task})
        for _ in range(100):
            _, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
            if terminated or truncated:
                break
        assert info["success"] and info["score"] == 1.0, task.id


def test_shipped_suites_are_the_generated_ones():
    for game in [*SINGLE_PLAYER, *TWO_PLAYER]:
        assert TaskSuite.load(f"textarena/{game}").tasks == suite(game).tasks


def test_engine_randomness_is_per_episode_and_leaves_callers_random_alone():
    env = agentgym.make("textarena/GuessTheNumber-v0")
    random.seed(123)
    before = random.random()
    random.seed(123)
    numbers = []
    for _ in range(2):
        env.reset(options={"task": "GuessTheNumber-v0-seed5"})
        numbers.append(env.unwrapped.expert_action())
    assert numbers[0] == numbers[1]
    assert random.random() == before


@pytest.mark.parametrize("game", sorted(TWO_PLAYER))
def test_two_player_games_pass_pettingzoo_parallel_api_test(game):
    check_parallel_env(TextArenaParallelEnv(game))


def test_seat_env_plays_both_seats_turn_by_turn():
    env = agentgym.make("textarena/TicTacToe-v0")
    obs, info = env.reset(options={"task": "TicTacToe-v0-seed0"})
    assert "Tic Tac Toe" in obs and info["to_move"] == "player_0"
    moves = 0
    while True:
        obs, reward, terminated, _, info = env.step(info["available_actions"][0])
        moves += 1
        if terminated:
            break
        assert info["to_move"] == "player_0"  # the partner moved in between
    assert info["reason"] and reward in (-1.0, 0.0, 1.0) and info["success"] == (reward == 1.0)
    with pytest.raises(ValueError, match="partner 'minimax' is not allowed"):
        agentgym.make("textarena/TicTacToe-v0", partner="minimax")


def test_agentgym_eval_runs_a_game_with_storage_resume_and_intervals(tmp_path):
    db = tmp_path / "ta.db"
    args = [
        "eval",
        "textarena/TowerOfHanoi-v0",
        "--agent",
        "expert",
        "--db",
        str(db),
        "--limit",
        "3",
    ]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "1.000 [" in first.output  # success with its confidence interval
    again = agentgym.evaluate(
        TaskSuite.load("textarena/TowerOfHanoi-v0").filter(limit=3), "expert", db=db
    )
    assert again.new_episodes == [] and again.progress.skipped == 3
    assert [r["success"] for r in again.episode_rows()] == [1, 1, 1]


def test_two_player_eval_through_the_seat_env(tmp_path):
    result = agentgym.evaluate(
        TaskSuite.load("textarena/ConnectFour-v0").filter(limit=2), "random", db=tmp_path / "c4.db"
    )
    rows = result.episode_rows()
    assert len(rows) == 2 and all(r["error"] is None for r in rows)
