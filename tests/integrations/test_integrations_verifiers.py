"""agentgym suites as a verifiers 0.4 environment, on the real verifiers package: the taskset
from a suite, and `vf-eval` (the installed agentgym-env package, null harness, subprocess runtime)
against `agentgym serve` (tiny model) giving per-task outcomes equal to `agentgym eval`'s."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import verifiers.v1 as vf
from verifiers.v1.trace import AgentInfo, TraceTask

import agentgym
from agentgym.chat_agent import ChatAgent
from agentgym.env import StepResult
from agentgym.integrations.verifiers import (
    AgentgymEnv,
    load_environment,
    record,
    sampling,
    vf_eval_command,
)
from agentgym.rollout import rollout
from agentgym.task import TaskSuite
from agentgym.testing.noop import NoOpEnv, noop_suite
from agentgym.testing.scripted_client import ScriptedClient

SUITE = "textarena/GuessTheNumber-v0"
BIN = Path(sys.executable).parent


def test_load_environment_builds_the_suites_tasks():
    env = load_environment("textarena/GuessTheNumber-v0", limit=3)
    assert isinstance(env, AgentgymEnv)
    tasks = list(env.taskset)
    assert [t.data.name for t in tasks] == [t.id for t in TaskSuite.load(SUITE).tasks[:3]]
    first = agentgym.make(SUITE)
    obs, _ = first.reset(seed=tasks[0].data.info["seed"], options={"task": tasks[0].data.name})
    assert [(m.role, m.content) for m in tasks[0].data.prompt] == [("user", obs)]
    assert tasks[0].data.system_prompt == first.system_prompt
    assert sampling(SUITE) == {"temperature": 0.0, "max_tokens": 32, "stop": ["\n"]}
    with pytest.raises(ValueError, match="has no task of env 'skyrl/gsm8k'"):
        list(load_environment("skyrl/gsm8k", suite=SUITE).taskset)


def test_vf_eval_command_caps_episodes_by_the_tasksets_max_steps():
    """The cap reaches the taskset through verifiers' own config (as the agreement benchmark
    caps every harness alike); verifiers parses the flag into ``AgentgymTasksetConfig``."""
    from verifiers.v1.utils.loaders import resolve_env_config

    command = vf_eval_command("vf-eval", SUITE, 2, "http://x/v1", "m", "out", SUITE, max_steps=3)
    flag = command.index("--env.taskset.max-steps")
    assert command[flag + 1] == "3"
    assert "--env.taskset.max-steps" not in vf_eval_command(
        "vf-eval", SUITE, 2, "u", "m", "o", SUITE
    )
    config = resolve_env_config({"taskset": {"id": "agentgym_env", "suite": SUITE, "max_steps": 3}})
    assert config.taskset.max_steps == 3


@pytest.mark.slow
def test_vf_eval_over_agentgym_serve_agrees_with_agentgym_eval(served, tmp_path):
    limit = 2
    command = vf_eval_command(
        str(BIN / "vf-eval"), SUITE, limit, served, "tiny", str(tmp_path), SUITE
    )
    assert command[-2:] == ["--sampling.stop", "\n"]  # one-line actions stop at a newline
    env = {**os.environ, "OPENAI_API_KEY": "unused", "PATH": f"{BIN}:{os.environ['PATH']}"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    theirs = {}
    for line in next(tmp_path.rglob("traces.jsonl")).read_text().splitlines():
        for trace in json.loads(line)["traces"]:
            info = trace["info"]["agentgym"]
            theirs[info["task_id"]] = (trace["rewards"]["success"]["score"] == 1.0, info["actions"])
    ours = agentgym.evaluate(
        TaskSuite.load(SUITE).filter(limit=limit), f"openai:tiny?base_url={served}&api_key=unused"
    )
    assert len(theirs) == limit
    for episode in ours.new_episodes:
        assert theirs[episode.task_id] == (episode.success, [s.action for s in episode.steps])


class _InfiniteReward(NoOpEnv):
    """NoOp whose first step reports an infinite reward: the env's mistake, never a signal."""

    def _step(self, action: str) -> StepResult:
        obs, _, terminated, truncated, info = super()._step(action)
        return obs, math.inf, terminated, truncated, info


def _trace() -> vf.Trace:
    return vf.Trace(task=TraceTask(type="agentgym", data={}), agent=AgentInfo(config={}))


def test_a_refused_reward_is_the_traces_error_not_a_success_of_zero():
    """agentgym.rewards' one rule refuses the infinite reward inside the episode loop; the trace
    verifiers keeps then carries that error and no reward at all, where a played episode carries
    its verdict."""
    task, bad, good = noop_suite(1).tasks[0], _InfiniteReward(), NoOpEnv()
    episode = rollout(bad, ChatAgent(ScriptedClient(["noop"] * 10), bad), task)
    assert episode.status == "error" and "reward is inf" in (episode.error or "")
    refused = _trace()
    record(refused, episode)
    assert not refused.ok and refused.rewards == {}
    assert "reward is inf" in refused.errors[-1].message
    assert refused.info["agentgym"]["status"] == "error"

    played = _trace()
    record(played, rollout(good, ChatAgent(ScriptedClient(["noop"] * 10), good), task))
    assert not played.errors and played.rewards["success"].score == 1.0
