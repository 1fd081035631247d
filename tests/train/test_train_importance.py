"""Importance correction between the sampler's logprobs and the learner's, policy versions and
the staleness bound: the weights as defined on hand-built arrays, and real tiny updates."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import test_train_trainer
import torch
from test_train_trainer import _cfg

from agentgym.episode import Episode
from agentgym.llm.recording import Call
from agentgym.train.config import load_config
from agentgym.train.episode import TokenEpisode, Turn
from agentgym.train.importance import correct, importance_weights
from agentgym.train.recorded import episode_from_calls
from agentgym.train.rollout import Job, derive_seed
from agentgym.train.staleness import lag, parse_version, screen, stamp
from agentgym.train.trainer import Trainer

LEARNER = np.array([0.0, -0.1, -0.2, 0.0, -0.5, -1.0])
SAMPLER = np.array([0.0, -0.3, -0.2, 0.0, -2.0, -0.9])
MASK = np.array([0, 1, 1, 0, 1, 1])
"""Sampled tokens at 1, 2, 4, 5; their log-ratios 0.2, 0.0, 1.5, -0.1 (sum 1.6)."""

noop_tasks = test_train_trainer.noop_tasks
sft_noop = test_train_trainer.sft_noop
"""The NoOp suite and the SFT policy of the trainer's tests (it succeeds sometimes)."""


def test_token_weights_are_the_ratio_truncated_at_the_cap():
    w = importance_weights(LEARNER, SAMPLER, MASK, "token", 2.0)
    assert w == pytest.approx([1.0, math.exp(0.2), 1.0, 1.0, 2.0, math.exp(-0.1)], abs=1e-12)


def test_token_mask_leaves_out_only_the_tokens_over_the_cap():
    w = importance_weights(LEARNER, SAMPLER, MASK, "token_mask", 2.0)
    assert w == pytest.approx([1.0, math.exp(0.2), 1.0, 1.0, 0.0, math.exp(-0.1)], abs=1e-12)


def test_sequence_weights_are_the_episodes_ratio_on_every_sampled_token():
    ratio = math.exp(1.6)  # 4.95: over a cap of 2, under one of 5
    for cap, mode, expected in [
        (2.0, "sequence", 2.0),
        (5.0, "sequence", ratio),
        (2.0, "sequence_mask", 0.0),
        (5.0, "sequence_mask", ratio),
    ]:
        w = importance_weights(LEARNER, SAMPLER, MASK, mode, cap)
        assert w == pytest.approx(np.where(MASK > 0, expected, 1.0), abs=1e-12), (mode, cap)


def test_none_and_agreeing_logprobs_weigh_exactly_one():
    assert (importance_weights(LEARNER, SAMPLER, MASK, "none", 2.0) == 1.0).all()
    for mode in ("token", "sequence", "token_mask", "sequence_mask"):
        assert (importance_weights(LEARNER, LEARNER, MASK, mode, 2.0) == 1.0).all()
    huge = importance_weights(np.zeros(2), np.array([-1e4, -1e4]), np.ones(2), "sequence", 3.0)
    assert (huge == 3.0).all()


def _episode(learner, sampler, mask, versions=(), group="g") -> TokenEpisode:
    ep = TokenEpisode(episode=Episode(task_id="t", env_id="NoOp-v0"), group=group)
    ep.ids, ep.mask = list(range(len(mask))), list(mask)
    ep.logprobs, ep.sampler_logprobs = list(learner), list(sampler)
    ep.turns = [Turn(0, 0, 0, 0, 0.0, "", version=v) for v in versions]
    return ep


def test_correct_scales_the_advantages_and_reports_the_capped_share():
    ep = _episode(LEARNER, SAMPLER, MASK)
    adv = np.where(MASK > 0, 0.5, 0.0)
    (scaled,), metrics = correct([ep], [adv], "token", 2.0)
    assert scaled == pytest.approx(adv * importance_weights(LEARNER, SAMPLER, MASK, "token", 2.0))
    assert metrics["is_capped"] == 0.25  # one of four sampled tokens over the cap
    w = [math.exp(0.2), 1.0, 2.0, math.exp(-0.1)]
    assert metrics["is_weight_mean"] == pytest.approx(sum(w) / 4)
    assert correct([ep], [adv], "none", 2.0) == ([adv], {})


def test_versions_lag_and_the_staleness_screen():
    old, fresh, spanning = (_episode([0], [0], [1], v) for v in [(3, 4), (7,), (5, 7)])
    assert [lag(ep, 7) for ep in (old, fresh, spanning)] == [4, 0, 2]
    kept, metrics = screen([old, fresh, spanning], 7, 2, "drop")
    assert kept == [fresh, spanning]
    assert metrics == {"stale_dropped": 1 / 3, "stale_corrected": 0.0, "staleness_max": 4.0}
    kept, metrics = screen([old, fresh, spanning], 7, 1, "correct")
    assert kept == [old, fresh, spanning] and metrics["stale_corrected"] == 2 / 3
    assert screen([old], 7, None, "drop") == ([old], {})
    unstamped = _episode([0], [0], [1], (None, 6))
    stamp([unstamped], 9)
    assert [t.version for t in unstamped.turns] == [9, 6]


def test_gateway_calls_give_each_turn_the_version_that_sampled_it():
    def call(seq: int, version: str, prompt: list[int], completion: list[int]) -> Call:
        return Call(seq, "s", seq, 0, version, None, prompt, completion, [-0.5] * len(completion),
                    "stop", "", [], {})  # fmt: skip

    calls = [call(0, "step-3", [1, 2], [3]), call(1, "step-4", [1, 2, 3, 4], [5, 6])]
    ep = episode_from_calls(calls, Episode(task_id="t", env_id="NoOp-v0"), "g")
    assert [t.version for t in ep.turns] == [3, 4]
    assert [parse_version(v) for v in ("step-12", "12", "latest", None)] == [12, 12, None, None]


def test_config_stale_correct_needs_an_importance_mode_and_a_set_mode_is_in_the_run_id():
    base = ["model.path=tiny", "env.id=NoOp-v0", "model.device=cpu"]
    with pytest.raises(ValueError, match="rollout.importance"):
        load_config(None, [*base, "rollout.max_staleness=1", "rollout.stale=correct"])
    from agentgym.train.runlog import config_for_run_id, run_id_for

    plain = load_config(None, base)  # at their defaults the new keys stay out of the id: the
    # run ids of test_train_trainer's example configs are unchanged
    token = load_config(None, [*base, "rollout.importance=token"])
    assert run_id_for(config_for_run_id(token)) != run_id_for(config_for_run_id(plain))


# ---------------------------------------------------------------- real tiny updates
def _rollout(final, tasks, out, learner_updates: int = 0):
    """Episodes of the SFT policy, rescored by the learner after ``learner_updates`` updates on
    them: the sampler's logprobs then disagree with the learner's as a stale rollout's do."""
    trainer = Trainer(_cfg(final, tasks, out, **{"rollout.importance": "token", "steps": 0}))
    tasks = trainer.train_tasks()
    jobs = [Job(t, t.id, k, derive_seed(0, t.id, k)) for t in tasks for k in range(4)]
    episodes, stats = trainer.rollout(jobs, derive_seed(0, "gen"), 1.0)
    assert 0 < np.mean([ep.reward for ep in episodes]) < 1, "groups that tie train nothing"
    for _ in range(learner_updates):
        trainer.rl_update(copy.deepcopy(episodes), stats)
    trainer.rescore(episodes)
    trainer.close()
    return episodes, stats


def _trained(final, tasks, out, episodes, stats, **over) -> tuple[dict, dict[str, torch.Tensor]]:
    trainer = Trainer(_cfg(final, tasks, out, **{"steps": 0, **over}))
    metrics = trainer.rl_update(copy.deepcopy(episodes), stats)
    state = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.close()
    return metrics, state


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_token_importance_changes_the_update_only_where_sampler_and_learner_disagree(
    sft_noop, noop_tasks, tmp_path
):
    final, _ = sft_noop
    episodes, stats = _rollout(final, noop_tasks, tmp_path / "r", learner_updates=2)
    sampled = [(a, b) for ep in episodes for a, b, m in
               zip(ep.logprobs, ep.sampler_logprobs, ep.mask, strict=True) if m]  # fmt: skip
    assert max(abs(a - b) for a, b in sampled) > 0.01, "the learner has moved"
    run = {"none": {}, "token": {"rollout.importance": "token"}}
    m_none, none = _trained(final, noop_tasks, tmp_path / "a", episodes, stats, **run["none"])
    m_token, token = _trained(final, noop_tasks, tmp_path / "b", episodes, stats, **run["token"])
    assert m_none["loss_tokens"] > 0 and m_token["is_weight_mean"] != 1.0
    assert not _same(none, token)

    agree = copy.deepcopy(episodes)
    for ep in agree:
        ep.sampler_logprobs = list(ep.logprobs)
    _, none = _trained(final, noop_tasks, tmp_path / "c", agree, stats, **run["none"])
    m_token, token = _trained(final, noop_tasks, tmp_path / "d", agree, stats, **run["token"])
    assert m_token["is_weight_mean"] == 1.0 and m_token["is_capped"] == 0.0
    assert _same(none, token)


def test_episodes_past_the_staleness_bound_are_dropped_or_corrected(sft_noop, noop_tasks, tmp_path):
    final, _ = sft_noop
    episodes, stats = _rollout(final, noop_tasks, tmp_path / "r")
    assert {t.version for ep in episodes for t in ep.turns} == {0}
    bound = {"rollout.max_staleness": 1}
    start = Trainer(_cfg(final, noop_tasks, tmp_path / "s", steps=0)).model.state_dict()

    trainer = Trainer(_cfg(final, noop_tasks, tmp_path / "a", steps=0, **bound))
    trainer.step = 2  # the learner is two updates past the weights that sampled
    metrics = trainer.rl_update(copy.deepcopy(episodes), stats)
    assert metrics["stale_dropped"] == 1.0 and metrics["staleness_max"] == 2.0
    assert metrics["episodes"] == 0 and "loss_tokens" not in metrics
    assert _same(start, trainer.model.state_dict())

    correcting = {**bound, "rollout.stale": "correct", "rollout.importance": "token"}
    trainer = Trainer(_cfg(final, noop_tasks, tmp_path / "b", steps=0, **correcting))
    trainer.step = 2
    metrics = trainer.rl_update(copy.deepcopy(episodes), stats)
    assert metrics["stale_corrected"] == 1.0 and metrics["stale_dropped"] == 0.0
    assert metrics["loss_tokens"] > 0 and not _same(start, trainer.model.state_dict())

    trainer.step = 1  # within the bound: nothing dropped
    trainer.cfg.rollout.stale = "drop"
    metrics = trainer.rl_update(copy.deepcopy(episodes), stats)
    assert metrics["stale_dropped"] == 0.0 and metrics["loss_tokens"] > 0
