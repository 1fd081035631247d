"""Credit functions on hand-made groups, with the expected numbers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentgym.train.advantages import (
    advantage_collapse_rate,
    discounted_returns,
    exact_anchor,
    gigpo_advantages,
    group_advantages,
    reinforce_pp_advantages,
    similarity_anchor,
    turn_gae,
    whiten,
)


def test_grpo_normalises_each_group_by_its_sample_std():
    # group a: rewards 1, 0 -> mean 0.5, sample std sqrt(0.5); group b: 1, 1, 0, 0 -> std sqrt(1/3)
    adv = group_advantages([1, 0, 1, 1, 0, 0], ["a", "a", "b", "b", "b", "b"], eps=0)
    a = 0.5 / math.sqrt(0.5)
    b = 0.5 / math.sqrt(1 / 3)
    assert adv == pytest.approx([a, -a, b, b, -b, -b])


def test_dr_grpo_only_centres():
    adv = group_advantages([3, 1, 2, 2], ["a", "a", "b", "b"], scale="none")
    assert adv == pytest.approx([1, -1, 0, 0])


def test_tied_group_and_singletons_get_zero():
    adv = group_advantages([1, 1, 1, 5], ["a", "a", "a", "b"])
    assert adv == pytest.approx([0, 0, 0, 0])


def test_errors_are_left_out_of_group_statistics():
    # the failed episode's reward (100) would dominate the group; it must not count at all
    rewards, groups = [1, 0, 100], ["a", "a", "a"]
    with_error = group_advantages(rewards, groups, valid=[True, True, False], eps=0)
    alone = group_advantages([1, 0], ["a", "a"], eps=0)
    assert with_error[:2] == pytest.approx(alone)
    assert with_error[2] == 0


def test_unknown_scale_is_a_clear_error():
    with pytest.raises(ValueError, match="'std' \\(GRPO\\) or 'none'"):
        group_advantages([1, 0], ["a", "a"], scale="max")


def test_advantage_collapse_rate_counts_tied_groups():
    rewards = [1, 1, 0, 1, 0, 0, 7]
    groups = ["a", "a", "b", "b", "c", "c", "d"]  # a tied, b mixed, c tied, d singleton (ignored)
    assert advantage_collapse_rate(rewards, groups) == pytest.approx(2 / 3)
    # an error can break a tie only by being left out: b without its 0 has one member -> ignored
    assert advantage_collapse_rate(rewards, groups, valid=[1, 1, 1, 0, 1, 1, 1]) == 1.0


def test_reinforce_pp_whitens_baselined_returns_over_the_batch():
    adv = reinforce_pp_advantages([1, 0, 3, 3], ["a", "a", "b", "b"])
    # baselined: [0.5, -0.5, 0, 0]; batch mean 0, population std sqrt(0.125)
    s = math.sqrt(0.125)
    assert adv == pytest.approx([0.5 / s, -0.5 / s, 0, 0], rel=1e-5)
    plain = reinforce_pp_advantages([1, 0, 3, 3], ["a", "a", "b", "b"], group_baseline=False)
    assert plain == pytest.approx(whiten(np.array([1.0, 0, 3, 3])))


def test_discounted_returns_and_gae():
    assert discounted_returns([0, 0, 1], 0.5) == pytest.approx([0.25, 0.5, 1])
    # lam = 1 and zero values: GAE is the discounted return
    adv, ret = turn_gae([0, 0, 1], [0, 0, 0], gamma=0.5, lam=1.0)
    assert adv == pytest.approx([0.25, 0.5, 1]) and ret == pytest.approx([0.25, 0.5, 1])
    # lam = 0: one-step TD errors r_t + gamma v_{t+1} - v_t
    adv, ret = turn_gae([0, 1], [0.5, 0.25], gamma=0.9, lam=0.0)
    assert adv == pytest.approx([0.9 * 0.25 - 0.5, 1 - 0.25])
    assert ret == pytest.approx(adv + np.array([0.5, 0.25]))


def test_gigpo_adds_step_advantages_within_anchor_groups():
    # two episodes of one group; both start in state "s0"; only episode 0 reaches "s1"
    rewards = [1.0, 0.0]
    turn_rewards = [[0.0, 1.0], [0.0, 0.0]]
    states = [["s0", "s1"], ["s0", "s2"]]
    out = gigpo_advantages(rewards, ["g", "g"], turn_rewards, states, gamma=0.5, omega=1.0, eps=0)
    a_ep = 1 / math.sqrt(0.5) * 0.5  # GRPO over (1, 0)
    # step returns: ep0 (0.5, 1.0), ep1 (0, 0); anchor s0 holds (0.5, 0): same normalised split
    assert out[0] == pytest.approx([a_ep + a_ep, a_ep + 0])  # s1 is alone -> step adv 0
    assert out[1] == pytest.approx([-a_ep - a_ep, -a_ep + 0])


def test_gigpo_omega_zero_is_grpo_and_errors_get_zero():
    rewards, groups = [1.0, 0.0, 1.0], ["g", "g", "g"]
    turns = [[1.0], [0.0], [1.0]]
    states = [["s"], ["s"], ["s"]]
    out = gigpo_advantages(rewards, groups, turns, states, valid=[1, 1, 0], omega=0.0)
    grpo = group_advantages(rewards, groups, valid=[1, 1, 0])
    assert [o[0] for o in out] == pytest.approx(list(grpo))
    assert out[2][0] == 0


def test_anchor_functions():
    assert exact_anchor(["a", "b", "a"]) == ["a", "b", "a"]
    keys = similarity_anchor(0.8)(["You see a mug 1.", "You see a mug 2.", "Nothing happens."])
    assert keys[0] == keys[1] != keys[2]
