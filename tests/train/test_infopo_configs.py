"""The method configs under configs/methods/ validate (trainer configs and PA-MoE's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.agents.kbqa_r1 import KBQAR1Recipe
from agentgym.agents.pa_moe import PAMoEConfig
from agentgym.registry import spec
from agentgym.task import TaskSuite
from agentgym.train.config import load_config
from agentgym.train.credit import get_credit
from agentgym.train.policy import get_policy

ROOT = Path(__file__).resolve().parents[2] / "configs" / "methods"
TRAIN = sorted(ROOT.glob("*.yaml"))


@pytest.mark.parametrize("path", TRAIN, ids=[p.stem for p in TRAIN])
def test_train_configs_name_things_that_exist(path):
    """Beyond validating: the env, its suites and every plug-in the config names resolve."""
    cfg = load_config(path)
    spec(cfg.env.id)
    for suite in (cfg.env.suite, cfg.env.eval_suite):
        if suite is not None:
            assert TaskSuite.load(suite).filter(cfg.env.tags, cfg.env.limit).tasks
    if cfg.algo.credit is not None:
        get_credit(cfg.algo.credit)
    if cfg.model.policy is not None:
        get_policy(cfg.model.policy)


def test_kbqa_r1_grpo_config_follows_the_recipe():
    cfg, recipe = load_config(ROOT / "kbqa_r1_grpo.yaml"), KBQAR1Recipe()
    assert cfg.rollout.group_size == recipe.group_size
    assert cfg.rollout.max_turns == recipe.max_turns
    assert (cfg.algo.kl_coef, cfg.algo.clip_low, cfg.algo.clip_high) == (
        recipe.kl_coef,
        recipe.clip_low,
        recipe.clip_high,
    )


def test_pa_moe_config_validates():
    options = load_config(ROOT / "pa_moe_household.yaml").model.policy_options
    cfg = PAMoEConfig.model_validate(options)
    assert cfg.num_experts == 4 and cfg.lora_r == 32 and cfg.window == 10
