"""A minimal env for measuring and testing the runner: every step is as cheap as a step can be."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from agentgym.env import StepResult, TextEnv
from agentgym.registry import register
from agentgym.task import Task, TaskSuite

NOOP_ID = "agentgym/NoOp-v0"


class NoOpConfig(BaseModel):
    length: int = Field(default=10, ge=1)
    """Steps until the episode ends."""


@dataclass
class NoOpState:
    t: int = 0
    all_noop: bool = True


class NoOpEnv(TextEnv):
    """Ends after ``length`` steps; succeeds iff every action was ``noop``."""

    config_model: ClassVar[type[BaseModel]] = NoOpConfig
    system_prompt: ClassVar[str] = "Answer every observation with: noop"

    def __init__(
        self, suite: str | TaskSuite | None = None, render_mode: str | None = None
    ) -> None:
        super().__init__(suite if suite is not None else noop_suite(4), render_mode)

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.state = NoOpState()
        return "ready", {"available_actions": ["noop"]}

    def _step(self, action: str) -> StepResult:
        self.state.t += 1
        valid = action == "noop"
        self.state.all_noop &= valid
        done = self.state.t >= self.config.length
        info: dict[str, Any] = {"valid": valid, "available_actions": ["noop"]}
        if done:
            info |= {"success": self.state.all_noop, "score": float(self.state.all_noop)}
        obs = "ok" if valid else "Invalid action: the only action is `noop`."
        return obs, float(done and self.state.all_noop), False, done, info

    def _step_invalid(self, message: str) -> StepResult:
        return self._step(f"<{message}>")

    def expert_action(self) -> str:
        return "noop"


def register_test_envs() -> None:
    """Register ``agentgym/NoOp-v0`` (not registered by default: it is a test double)."""
    register(NOOP_ID, "agentgym.testing.noop:NoOpEnv", description="test double: no-op steps")


def noop_suite(n_tasks: int, length: int = 10) -> TaskSuite:
    """``n_tasks`` NoOp tasks of ``length`` steps each."""
    register_test_envs()
    return TaskSuite(
        "noop",
        [
            Task(
                id=f"noop-{i:05d}",
                env=NOOP_ID,
                instruction="send noop",
                config={"length": length},
                tags=["noop"],
            )
            for i in range(n_tasks)
        ],
    )
