"""agentgym suites as a verifiers 0.4 environment, on the real verifiers package: the taskset
from a suite, and `vf-eval` (the installed agentgym-env package, null harness, subprocess runtime)
against `agentgym serve` (tiny model) giving per-task outcomes equal to `agentgym eval`'s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agentgym
from agentgym.integrations.verifiers import (
    AgentgymEnv,
    load_environment,
    sampling,
    vf_eval_command,
)
from agentgym.task import TaskSuite

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
