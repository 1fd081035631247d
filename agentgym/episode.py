"""Episode and Step records: what a rollout produces and the store keeps.

Plain pydantic models, versioned by ``FORMAT_VERSION``. For training they also carry token ids,
logprobs and the loss mask (agent tokens 1, environment tokens 0); evaluation leaves those empty.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

FORMAT_VERSION = 1

EpisodeStatus = Literal["completed", "limit", "error"]
"""``completed``: the env ended the episode; ``limit``: a step/time/turn limit ended it;
``error``: the env, agent or scorer raised (the traceback is in ``Episode.error``)."""


class Usage(BaseModel):
    """Tokens, cost and (for training) token-level data of one agent call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    """US dollars, where the backend knows prices."""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    loss_mask: list[int] | None = None
    history: str | None = None
    """How the agent cut its history to fit the model's context for this call (the rule and what
    it dropped); None when the whole history was sent."""


class Step(BaseModel):
    """One agent action and the env's answer to it."""

    t: int
    """0-based index within the episode."""
    action: str
    observation: str
    """What the env returned after the action."""
    reward: float
    terminated: bool = False
    truncated: bool = False
    valid: bool = True
    """False when the env rejected the action (``info["valid"]``)."""
    info: dict[str, Any] = Field(default_factory=dict)
    agent_latency_s: float = 0.0
    env_latency_s: float = 0.0
    usage: Usage = Field(default_factory=Usage)


class Episode(BaseModel):
    """A finished (or failed) attempt of one agent at one task."""

    format_version: int = FORMAT_VERSION
    task_id: str
    env_id: str
    sample: int = 0
    """Which of the k samples of this task (0-based)."""
    seed: int | None = None
    status: EpisodeStatus = "completed"
    reward: float = 0.0
    """Sum of step rewards (the return)."""
    success: bool = False
    score: float = 0.0
    """The env's final score in [0, 1] (``info["score"]`` at the end)."""
    instruction: str = ""
    first_observation: str = ""
    steps: list[Step] = Field(default_factory=list)
    error: str | None = None
    """Traceback when ``status == "error"``."""
    started_at: float = 0.0
    """Unix time."""
    duration_s: float = 0.0

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.usage.prompt_tokens for s in self.steps)

    @property
    def completion_tokens(self) -> int:
        return sum(s.usage.completion_tokens for s in self.steps)

    @property
    def cost(self) -> float:
        return sum(s.usage.cost for s in self.steps)
