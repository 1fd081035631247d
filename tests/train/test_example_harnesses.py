"""The example agent programs (an OpenAI-SDK tool-calling loop, a LiteLLM loop) run as harness
rollouts through the recording gateway: rows from the recorded ids, the sampled tokens trained."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from agentgym.llm.engine import LocalEngine
from agentgym.task import TaskSuite
from agentgym.train.config import RolloutConfig
from agentgym.train.harness import HarnessRollouts
from agentgym.train.policy import load_model, load_tokenizer
from agentgym.train.rollout import Job

sys.path.insert(0, str(Path(__file__).parents[1]))
from test_harness_rollouts import _largest_gap, _trained_per_episode  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "harnesses"


@pytest.fixture(scope="module")
def policy(tiny_model):
    torch.manual_seed(0)
    model, tok = load_model(tiny_model), load_tokenizer(tiny_model)
    engine = LocalEngine.from_model(model, tok, max_batch_size=4)
    yield model, tok, engine
    engine.close()


def _run(policy, tmp_path, script, env, suite, rollout):
    model, tok, engine = policy
    task = TaskSuite.load(suite).tasks[0]
    jobs = [Job(task, task.id, k, 7 + k) for k in range(2)]
    harness = HarnessRollouts(f"python {EXAMPLES / script}", engine, env, {}, tmp_path,
                              lambda: "v0", parallel=2)  # fmt: skip
    try:
        episodes, _ = harness.collect(jobs, rollout, rollout.for_env())
        calls = [harness.recorder.calls(s) for s in harness.recorder.sessions()]
    finally:
        harness.close()
    assert all(ep.ok and ep.turns for ep in episodes), [ep.episode.error for ep in episodes]
    for trained, made in zip(_trained_per_episode(episodes), calls, strict=True):
        assert trained == [i for c in made for i in c.completion_ids]
    assert _largest_gap(model, episodes, tok.pad_token_id) < 1e-5
    return episodes, calls


def test_openai_sdk_tool_calling_loop_on_a_tool_use_env(policy, tmp_path):
    rollout = RolloutConfig(max_turns=2, max_tokens=8)
    episodes, calls = _run(
        policy, tmp_path, "openai_tools.py", "agentgym/TauMock-v0", "tooluse/mock", rollout
    )
    assert all(c[0].messages[0]["role"] == "system" for c in calls)


def test_litellm_loop_on_clarify_cuts_its_history_and_trains_a_row_per_call(policy, tmp_path):
    rollout = RolloutConfig(max_turns=5, max_tokens=4, stop=("\n",))
    episodes, calls = _run(
        policy, tmp_path, "litellm_clarify.py", "agentgym/Clarify-v0", "clarify/train", rollout
    )
    long = [ep for ep in episodes if len(ep.turns) > 4]
    assert long and all(ep.per_call for ep in long)
