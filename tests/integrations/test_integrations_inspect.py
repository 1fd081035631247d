"""An agentgym suite as an Inspect AI task, on the real inspect-ai package: Python `eval` with
Inspect's mockllm, and the `inspect eval` command through its openai provider against `agentgym
serve` (tiny model), whose per-task success must equal `agentgym eval`'s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model

import agentgym
from agentgym.integrations.inspect import agentgym_suite, suite_dataset
from agentgym.task import TaskSuite

SUITE = "textarena/GuessTheNumber-v0"


def _output(text: str) -> ModelOutput:
    """A mockllm reply; usage given, so mockllm counts no tokens (its counter downloads one)."""
    out = ModelOutput.from_content("mockllm/model", text)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return out


def test_mockllm_playing_the_expert_moves_succeeds_and_wrong_moves_fail(tmp_path):
    env = agentgym.make(SUITE)
    replies = []
    for task in TaskSuite.load(SUITE).tasks[:2]:
        env.reset(options={"task": task})
        replies.append(_output(f"Action: {env.unwrapped.expert_action()}"))
    replies += [
        _output("Let me think.\nI pick 3."),
        _output("[0]"),
    ] * 2  # format error, then out of range
    model = get_model("mockllm/model", custom_outputs=replies)
    [log] = inspect_eval(
        agentgym_suite(suite=SUITE, limit=3),
        model=model,
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success"
    scores = {s.id: s.scores["env_reward"].value["success"] for s in log.samples}
    assert scores == {f"GuessTheNumber-v0-seed{i}": float(i < 2) for i in range(3)}
    third = log.samples[2]
    assert [m.role for m in third.messages][:4] == ["system", "user", "assistant", "user"]
    assert third.messages[3].text.startswith("Format error:")
    # the log is Inspect's own .eval file: its viewer (inspect view) reads what read_eval_log reads
    assert read_eval_log(list_eval_logs(str(tmp_path))[0].name).results.scores[0].name == "success"


def test_dataset_is_the_suite_and_bad_input_says_what_is_allowed():
    dataset = suite_dataset(SUITE, limit=4)
    assert [s.id for s in dataset] == [t.id for t in TaskSuite.load(SUITE).tasks[:4]]
    with pytest.raises(FileNotFoundError, match="no task suite 'nope/x'"):
        suite_dataset("nope/x")


def test_inspect_eval_command_over_agentgym_serve_agrees_with_agentgym_eval(served, tmp_path):
    limit = 3
    env = {
        **os.environ,
        "AGENTGYM_BASE_URL": served,  # Inspect's openai-api/<service>/<model> reads <SERVICE>_*
        "AGENTGYM_API_KEY": "unused",
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
    }
    command = [
        str(Path(sys.executable).parent / "inspect"),
        "eval",
        "agentgym/agentgym_suite",
        "-T",
        f"suite={SUITE}",
        "-T",
        f"limit={limit}",
        "--model",
        "openai-api/agentgym/tiny",
        "--max-samples",
        "1",
        "--display",
        "plain",
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [info] = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info.name)
    assert log.status == "success", log.error
    inspect_runs = {s.id: s.scores["env_reward"].metadata for s in log.samples}

    ours = agentgym.evaluate(
        TaskSuite.load(SUITE).filter(limit=limit), f"openai:tiny?base_url={served}&api_key=unused"
    )
    for episode in ours.new_episodes:
        theirs = inspect_runs[episode.task_id]
        assert theirs["success"] == episode.success
        assert theirs["actions"] == [s.action for s in episode.steps]


def test_a_lone_surrogate_reply_costs_no_sample(tmp_path):
    """A reply holding a lone surrogate (text no UTF-8 writer takes) is that episode's action, as
    a plain Inspect task keeps it: the eval succeeds with every sample, the escaped action named."""
    replies = [_output("Action: [\ud800]")] * 4 + [_output("[1]")] * 20
    model = get_model("mockllm/model", custom_outputs=replies)
    [log] = inspect_eval(
        agentgym_suite(suite=SUITE, limit=2),
        model=model,
        log_dir=str(tmp_path),
        display="none",
        max_samples=1,
    )
    assert log.status == "success", log.error
    assert len(log.samples) == 2
    played = log.samples[0].metadata["agentgym"]
    assert "\\ud800" in played["actions"][0] and "actions.0" in played["escaped"]
    read_eval_log(list_eval_logs(str(tmp_path))[0].name)  # Inspect reads its log back
