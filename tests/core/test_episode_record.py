"""One record of an episode, whichever loop played it: ``agentgym eval``'s rollout and a harness
program record the same steps, return and outcome for the same actions, and an episode's outcome is
read from the env the same way (``Episode.record_step``); a harness episode's record is the
trainer's, made where its env steps (``HostedEpisode``)."""

from __future__ import annotations

import json

import agentgym
from agentgym.agent import ExpertAgent
from agentgym.episode import Episode
from agentgym.rollout import rollout
from agentgym.task import TaskSuite
from agentgym.train.harness_env import HostedEpisode

PLAYED = {"task_id", "env_id", "seed", "status", "reward", "success", "score", "instruction",
          "first_observation", "error"}  # fmt: skip
STEP = {"t", "action", "observation", "reward", "terminated", "truncated", "valid", "info"}


def _harness(env_id, task, seed, max_turns=50) -> HostedEpisode:
    return HostedEpisode(env_id, {}, task, seed, max_turns, key_hash="unused")


def _same(a: Episode, b: Episode) -> None:
    assert a.model_dump(include=PLAYED) == b.model_dump(include=PLAYED)
    assert [s.model_dump(include=STEP) for s in a.steps] == [
        s.model_dump(include=STEP) for s in b.steps
    ]


def test_eval_and_a_harness_record_the_expert_household_episode_alike():
    task = TaskSuite.load("household/valid_unseen").tasks[0]
    env = agentgym.make("agentgym/Household-v0")
    evaluated = rollout(env, ExpertAgent(env), task, seed=3)
    assert evaluated.success and evaluated.status == "completed"

    harness = _harness("agentgym/Household-v0", task, seed=3)
    for step in evaluated.steps:
        harness.step(step.action)
    assert harness.done
    written = harness.finish()
    _same(evaluated, written)
    assert "available_actions" not in json.dumps([s.info for s in written.steps])


def test_an_episode_cut_by_the_turn_limit_is_a_limit_in_every_loop():
    task = TaskSuite.load("household/valid_unseen").tasks[0]
    env = agentgym.make("agentgym/Household-v0")
    evaluated = rollout(env, ExpertAgent(env), task, seed=3, max_steps=2)
    harness = _harness("agentgym/Household-v0", task, seed=3, max_turns=2)
    for step in evaluated.steps:
        harness.step(step.action)
    written = harness.finish()
    assert evaluated.status == written.status == "limit"
    _same(evaluated, written)


def test_the_outcome_follows_the_latest_step_and_a_failure_clears_it():
    episode = Episode(task_id="t", env_id="e")
    episode.record_step("a", "o1", 0.5, False, False, {"success": True, "score": 0.5})
    assert (episode.success, episode.score, episode.reward, episode.ended) == (
        True,
        0.5,
        0.5,
        False,
    )
    episode.record_step("b", "o2", 1.0, False, True, {"score": None, "tools": [{"x": 1}]})
    assert (episode.success, episode.score, episode.reward) == (False, 0.0, 1.5)
    assert episode.ended and episode.status == "limit"  # the env truncated it
    assert "tools" not in episode.steps[-1].info
    episode.fail("boom")
    assert (episode.status, episode.success, episode.score, episode.error) == (
        "error",
        False,
        0.0,
        "boom",
    )
