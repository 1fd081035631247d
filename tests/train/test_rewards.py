"""Rewards and outcomes outside :mod:`agentgym.rewards`' range are refused where they enter: the
step record, an episode record from elsewhere (a harness program's result), eval and the trainer's
env pool. The episode becomes an error saying why; the run goes on."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pydantic import ValidationError
from support import extreme_suite

import agentgym
from agentgym.episode import Episode
from agentgym.rewards import REWARD_LIMIT, RewardError
from agentgym.train.envpool import LocalEnvPool


def _episode() -> Episode:
    return Episode(task_id="t", env_id="e")


@pytest.mark.parametrize(
    "reward", [math.inf, -math.inf, math.nan, 1e308, -2e6, "1.0", None, True, [1.0]]
)
def test_record_step_refuses_a_reward_out_of_range_and_records_nothing(reward):
    ep = _episode()
    ep.record_step("a", "o", 1.0, False, False, {})
    with pytest.raises(RewardError, match=r"step 1: reward .* finite numbers in \[-1e6, 1e6\]"):
        ep.record_step("a", "o", reward, True, False, {})
    assert ep.n_steps == 1 and ep.reward == 1.0 and ep.status == "completed"


def test_the_edges_of_the_range_are_accepted():
    ep = _episode()
    ep.record_step("a", "o", REWARD_LIMIT, False, False, {"success": np.bool_(True)})
    ep.record_step("a", "o", -REWARD_LIMIT, True, False, {"score": np.float32(1.0)})
    assert ep.reward == 0.0 and ep.score == 1.0


def test_a_return_past_the_range_is_refused():
    ep = _episode()
    ep.record_step("a", "o", REWARD_LIMIT, False, False, {})
    with pytest.raises(RewardError, match="step 1: the return is 2000000.0: refused"):
        ep.record_step("a", "o", REWARD_LIMIT, True, False, {})


@pytest.mark.parametrize(
    "info, words",
    [
        (
            {"success": "false"},
            "info['success'] is 'false' (str): refused, success is true or false",
        ),
        ({"success": 1}, "info['success'] is 1: refused"),
        ({"score": math.nan}, "info['score'] is nan: refused, a score is a number in [0, 1]"),
        ({"score": 2.0}, "info['score'] is 2.0: refused"),
        ({"score": "1"}, "info['score'] is '1' (str): refused"),
    ],
)
def test_a_success_or_score_that_is_not_one_is_refused(info, words):
    ep = _episode()
    with pytest.raises(RewardError) as e:
        ep.record_step("a", "o", 0.0, True, False, info)
    assert str(e.value).startswith(f"step 0: {words}")
    assert not ep.steps and not ep.success


@pytest.mark.parametrize(
    "where, text",
    [
        ("return", '"reward": 1e308'),
        ("step", '"steps": [{"t": 0, "action": "a", "observation": "o", "reward": 1e309}]'),
        ("success", '"success": "false"'),
        ("score", '"score": 1e309'),
    ],
)
def test_an_episode_record_from_elsewhere_holds_no_such_value(where, text):
    """A harness program's result file is read with ``Episode.model_validate_json``."""
    with pytest.raises(ValidationError):
        Episode.model_validate_json(f'{{"task_id": "t", "env_id": "e", {text}}}')


def test_eval_stores_an_extreme_reward_as_an_error_and_goes_on(tmp_path):
    suite = extreme_suite("ok", "inf", "nan", "1e308", "say-false")
    result = agentgym.evaluate(suite, "expert", db=tmp_path / "e.db")
    rows = {row["task_id"].split(":")[1]: row for row in result.episode_rows()}
    assert rows["ok"]["status"] == "limit" and rows["ok"]["success"]  # NoOp truncates
    for said in ("inf", "nan", "1e308"):
        assert rows[said]["status"] == "error"
        episode = next(e for e in result.store.episodes(result.run_id) if e.task_id.endswith(said))
        assert episode.error.startswith("step 1: reward is ") and "[-1e6, 1e6]" in episode.error
        assert "Traceback" not in episode.error and all(
            math.isfinite(s.reward) for s in episode.steps
        )
    assert rows["say-false"]["status"] == "error" and not rows["say-false"]["success"]
    result.store.close()


def test_the_trainers_env_pool_gives_an_error_outcome_for_an_extreme_reward():
    suite = extreme_suite("ok", "inf")
    pool = LocalEnvPool("agentgym/ExtremeReward-v0")
    pool.reset([(task, 0) for task in suite.tasks])
    pool.step({0: "noop", 1: "noop"})
    last = pool.step({0: "noop", 1: "noop"})
    assert last[0].error is None and last[0].reward == 1.0
    assert last[1].error == "reward is inf: refused, rewards are finite numbers in [-1e6, 1e6]"
    pool.close()


def test_an_episode_record_read_from_elsewhere_names_the_refused_field(tmp_path):
    """An episode record read back from a file is validated so: the field and the reason."""
    record = json.loads(_episode().model_dump_json())
    record["steps"] = [{"t": 0, "action": "a", "observation": "o", "reward": 1e308}]
    with pytest.raises(ValidationError) as e:
        Episode.model_validate_json(json.dumps(record))
    first = e.value.errors()[0]
    assert first["loc"] == ("steps", 0, "reward") and "1e6" in first["msg"]
