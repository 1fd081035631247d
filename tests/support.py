"""Test doubles for the runner tests: envs and agents that fail or go slowly on purpose."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from agentgym.agent import Action
from agentgym.episode import Usage
from agentgym.registry import register
from agentgym.task import Task, TaskSuite
from agentgym.testing.noop import NoOpEnv


def shared_data() -> Path:
    """Raw public data: ``$AGENTGYM_SHARED_DATA``, else ``../shared/data``, else the fixture copies."""
    if os.environ.get("AGENTGYM_SHARED_DATA"):
        return Path(os.environ["AGENTGYM_SHARED_DATA"])
    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    return shared if shared.is_dir() else Path(__file__).resolve().parent / "data"


class ExplodingEnv(NoOpEnv):
    """A NoOp env whose step raises on tasks whose id contains 'boom'."""

    def _step(self, action: str) -> Any:
        if "boom" in self.task.id:
            raise RuntimeError("env exploded on purpose")
        return super()._step(action)


class SlowNoopAgent:
    """Sends noop after a pause, reporting fake-but-deterministic token usage."""

    def __init__(self, env: Any, delay: float = 0.02) -> None:
        self.delay = delay

    def reset(self, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> Action:
        time.sleep(self.delay)
        return Action("noop", Usage(prompt_tokens=10, completion_tokens=2, cost=0.001))


class RaisingAgent:
    def __init__(self, env: Any) -> None:
        pass

    def reset(self, info: dict[str, Any]) -> None:
        pass

    def act(self, observation: str, info: dict[str, Any]) -> str:
        raise ValueError("agent failed on purpose")


def exploding_suite(n_ok: int, n_boom: int) -> TaskSuite:
    register("agentgym/Exploding-v0", "support:ExplodingEnv")
    tasks = [
        Task(
            id=f"{'boom' if i >= n_ok else 'ok'}-{i}",
            env="agentgym/Exploding-v0",
            instruction="noop",
            config={"length": 3},
            tags=["x"],
        )
        for i in range(n_ok + n_boom)
    ]
    return TaskSuite("exploding", tasks)


def one_line_error(result: Any, *words: str) -> str:
    """A CLI result refused in one ``error:`` line (exit 2, no traceback) holding ``words``."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


class ExtremeRewardEnv(NoOpEnv):
    """A NoOp env whose last step reports what a task's id names after ``:``: a reward of
    ``inf``, ``nan`` or ``1e308``, or ``success`` as the text ``"false"``; ``ok`` tasks are
    plain NoOp tasks."""

    def _step(self, action: str) -> Any:
        obs, reward, terminated, truncated, info = super()._step(action)
        said = self.task.id.split(":")[-1]
        if truncated and said == "say-false":
            info = {**info, "success": "false"}
        elif truncated and said != "ok":
            reward = float(said)
        return obs, reward, terminated, truncated, info


def extreme_suite(*said: str, length: int = 2) -> TaskSuite:
    """One ExtremeRewardEnv task per entry of ``said`` (``ok``, ``inf``, ``nan``, ``1e308``,
    ``say-false``)."""
    register("agentgym/ExtremeReward-v0", "support:ExtremeRewardEnv")
    tasks = [
        Task(
            id=f"t{i}:{s}",
            env="agentgym/ExtremeReward-v0",
            instruction="noop",
            config={"length": length},
        )
        for i, s in enumerate(said)
    ]
    return TaskSuite("extreme", tasks)
