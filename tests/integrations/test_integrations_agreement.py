"""One greedy model, the same episodes in every harness, on an env with a demonstration: Clarify
behind `agentgym serve` (tiny model) played by `agentgym eval`'s chat agent, by Inspect AI's
`eval` (its openai-api provider), by verifiers' `vf-eval` and by the chat agent on an `openenv:`
env served by `agentgym env serve`. Each harness is the real package; each must give every task
the outcome and action sequence of `agentgym eval`, from the same model requests: the same
prompt token ids (system prompt, demonstration, observations), token budget and stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

import agentgym
from agentgym.integrations.inspect import agentgym_suite
from agentgym.integrations.openenv.server import EnvServerThread, ServeSettings
from agentgym.integrations.verifiers import vf_eval_command
from agentgym.llm.engine.llm_engine import LocalEngine
from agentgym.llm.server import ServerThread, create_app
from agentgym.task import TaskSuite

ENV, SUITE, LIMIT = "agentgym/Clarify-v0", "clarify/test", 3
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
Runs = dict[str, tuple[bool, list[str]]]
Played = tuple[Runs, list[tuple[Any, ...]]]
"""Each task's (success, actions), and every model request: prompt ids, max tokens, stop."""


class RecordingEngine(LocalEngine):
    """The tiny model's engine, keeping every request it is given."""

    requests: list[tuple[Any, ...]]

    def submit(self, prompt_ids, sampling=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.requests.append((tuple(prompt_ids), sampling.max_tokens, sampling.stop))
        return super().submit(prompt_ids, sampling, *args, **kwargs)


@pytest.fixture(scope="module")
def model(tiny_model):
    """`agentgym serve` of the tiny model; yields its URL and a function that plays a harness
    and returns what it played and the requests the model got meanwhile."""
    engine = RecordingEngine(tiny_model)
    engine.requests = []
    server = ServerThread(create_app(engine, "tiny"))

    def played(harness: Callable[[], Runs]) -> Played:
        engine.requests.clear()
        return harness(), list(engine.requests)

    yield server.url, played
    server.stop()


def _eval(url: str, limit: int, env: str | None = None) -> Runs:
    suite = TaskSuite.load(SUITE).filter(limit=limit)
    result = agentgym.evaluate(suite, f"openai:tiny?base_url={url}&api_key=unused", env=env)
    return {e.task_id: (e.success, [s.action for s in e.steps]) for e in result.new_episodes}


@pytest.fixture(scope="module")
def ours(model) -> Played:
    url, played = model
    runs, requests = played(lambda: _eval(url, LIMIT))
    assert len(runs) == LIMIT and all(actions for _, actions in runs.values())
    assert agentgym.make(ENV).unwrapped.demonstration()  # what the harnesses must send too
    return runs, requests


def test_inspect_eval_plays_the_episodes_of_agentgym_eval(model, ours, tmp_path):
    url, played = model

    def inspect() -> Runs:
        provider = get_model("openai-api/agentgym/tiny", base_url=url, api_key="unused")
        [log] = inspect_eval(
            agentgym_suite(suite=SUITE, limit=LIMIT),
            model=provider,
            log_dir=str(tmp_path),
            display="none",
            max_samples=1,
        )
        assert log.status == "success", log.error
        meta = {s.id: s.scores["env_reward"].metadata for s in log.samples}
        return {k: (m["success"], m["actions"]) for k, m in meta.items()}

    assert played(inspect) == ours


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_vf_eval_plays_the_episodes_of_agentgym_eval(model, tmp_path):
    """The first task only: verifiers' null harness resumes a program per turn (seconds each)."""
    url, played = model

    def vf_eval() -> Runs:
        command = vf_eval_command(str(BIN / "vf-eval"), SUITE, 1, url, "tiny", str(tmp_path), ENV)
        package = ROOT / "verifiers_envs" / "agentgym_env"  # verifiers' env package, this tree's
        path = os.pathsep.join([str(ROOT), str(package), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "OPENAI_API_KEY": "unused", "PYTHONPATH": path}
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        runs = {}
        for line in next(tmp_path.rglob("traces.jsonl")).read_text().splitlines():
            for trace in json.loads(line)["traces"]:
                info = trace["info"]["agentgym"]
                success = trace["rewards"]["success"]["score"] == 1.0
                runs[info["task_id"]] = (success, info["actions"])
        return runs

    assert played(vf_eval) == played(lambda: _eval(url, 1))


def test_an_openenv_env_plays_the_episodes_of_the_local_env(model, ours):
    url, played = model
    server = EnvServerThread(ServeSettings(ENV), max_sessions=2)
    try:
        assert played(lambda: _eval(url, LIMIT, env=f"openenv:{server.url}")) == ours
    finally:
        server.stop()
