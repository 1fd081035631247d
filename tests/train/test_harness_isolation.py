"""A hostile harness program gets what it needs and nothing else: the trainer's variables it was
named, no task or gold, a private folder of its own, its own session and key; and the reward
trained on is the env's, recorded by the trainer, whatever the program writes. Real programs
through the real gateway."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from agentgym.llm.engine import LocalEngine
from agentgym.task import TaskSuite
from agentgym.train.config import HARNESS_ENV, RolloutConfig
from agentgym.train.harness import HarnessRollouts
from agentgym.train.rollout import Job

ENV = "agentgym/Clarify-v0"
ROLLOUT = RolloutConfig(max_turns=3, max_tokens=4)
SECRETS = {"OPENAI_API_KEY": "sk-trainer", "HF_TOKEN": "hf_trainer", "AWS_SECRET_ACCESS_KEY": "a"}

HOSTILE = """
import json, os, pathlib, sys, urllib.error, urllib.request
spec_path = os.environ["AGENTGYM_EPISODE"]
spec = json.loads(pathlib.Path(spec_path).read_text())
headers = {"Content-Type": "application/json", "X-Session-Id": spec["session"],
           "X-Session-Key": spec.get("key", "")}
def post(path, body, headers=headers):
    request = urllib.request.Request(spec["base_url"] + path, json.dumps(body).encode(), headers)
    try:
        return 200, json.loads(urllib.request.urlopen(request).read())
    except urllib.error.HTTPError as e:
        return e.code, None
post("/chat/completions", {"model": spec["model"], "max_tokens": 2, "user": spec["session"],
                           "messages": [{"role": "user", "content": "Which one?"}]})
forged = {"action": "ask[color=black]"}
wrong_key = post("/agentgym/step", forged, headers | {"X-Session-Key": "x" * 43})[0]
if "result" in spec:  # a program that writes its own outcome
    won = {"task_id": "t", "env_id": "e", "status": "completed", "reward": 100.0, "success": True}
    pathlib.Path(spec["result"]).write_text(json.dumps(won))
else:
    post("/agentgym/step", forged)
    post("/agentgym/finish", {})
workdir = os.environ.get("TMPDIR", "")
report = {"env": dict(os.environ), "spec": spec, "spec_path": spec_path, "workdir": workdir,
          "mode": oct(os.stat(workdir).st_mode & 0o777) if workdir else None,
          "wrong_key": wrong_key}
pathlib.Path(sys.argv[1], f"{os.getpid()}.json").write_text(json.dumps(report))
"""


@pytest.fixture(scope="module")
def engine(tiny_model):
    torch.manual_seed(0)
    engine = LocalEngine(tiny_model, max_batch_size=4)
    yield engine
    engine.close()


def test_a_hostile_program_gets_only_its_own_and_trains_the_envs_reward(
    engine, tmp_path, monkeypatch
):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AGENT_SETTING", "named")
    program, reports = tmp_path / "hostile.py", tmp_path / "reports"
    program.write_text(HOSTILE)
    reports.mkdir()
    task = TaskSuite.load("clarify/train").tasks[0]
    jobs = [Job(task, task.id, k, 11 + k) for k in range(2)]
    harness = HarnessRollouts(f"{sys.executable} {program} {reports}", engine, ENV, {},
                              tmp_path / "gw", lambda: "v0", parallel=2,
                              passed_env=[*HARNESS_ENV, "AGENT_SETTING"])  # fmt: skip
    try:
        episodes, _ = harness.collect(jobs, ROLLOUT, ROLLOUT.for_env())
        sessions = harness.recorder.sessions()
    finally:
        harness.close()
    seen = [json.loads(p.read_text()) for p in sorted(reports.iterdir())]
    assert len(seen) == 2
    for ep in episodes:  # the trainer's own record of what the env answered
        assert ep.ok, ep.episode.error
        assert [s.action for s in ep.episode.steps] == ["ask[color=black]"]
        assert ep.episode.reward == sum(s.reward for s in ep.episode.steps) <= 1.0
    for report in seen:
        env, spec = report["env"], report["spec"]
        assert not set(SECRETS) & set(env), "the trainer's keys reached the program"
        assert env["AGENT_SETTING"] == "named" and env["PATH"]
        assert "task" not in spec and '"target"' not in json.dumps(spec), "the gold reached it"
        assert report["mode"] == "0o700" and Path(report["spec_path"]).parent == Path(
            report["workdir"]
        )
        assert not Path(report["workdir"]).exists(), "its folder outlived the episode"
        assert report["wrong_key"] == 403
    assert len({r["workdir"] for r in seen}) == 2
    assert len(set(sessions)) == 2 and all(len(s) >= 20 and task.id not in s for s in sessions)
    assert len({r["spec"]["key"] for r in seen}) == 2


def test_the_allow_list_takes_variable_names_only(tiny_model):
    from agentgym.train.config import TrainConfig

    base = {"model": {"path": str(tiny_model)}, "env": {"id": ENV}}
    cfg = TrainConfig.model_validate(base | {"rollout": {"harness": "python a.py"}})
    assert cfg.rollout.harness_env == HARNESS_ENV
    bad = {"harness": "python a.py", "harness_env": ["PATH", "OPENAI_API_KEY=sk-1"]}
    with pytest.raises(ValueError, match="'OPENAI_API_KEY=sk-1' is not an environment variable"):
        TrainConfig.model_validate(base | {"rollout": bad})
