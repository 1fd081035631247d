"""Episode and Step records: what a rollout produces and the store keeps.

Plain pydantic models, versioned by ``FORMAT_VERSION``. For training they also carry token ids,
logprobs and the loss mask (agent tokens 1, environment tokens 0); evaluation leaves those empty.

Every loop that plays episodes (``agentgym eval``'s :func:`agentgym.rollout.rollout`, the
trainer's batched rollouts, a harness program) records the env's answers through
:meth:`Episode.record_step` and failures through :meth:`Episode.fail`, so a step's record, the
return and how an episode's outcome is read from the env are the same whoever played it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, Strict

from agentgym.rewards import check_reward, check_score, check_success

FORMAT_VERSION = 1

Reward = Annotated[float, AfterValidator(check_reward)]
"""A reward as :mod:`agentgym.rewards` accepts it (finite, within ``REWARD_LIMIT``): a record
from elsewhere (a harness program's result, a store) holds no other."""
Score = Annotated[float, AfterValidator(check_score)]

STEP_INFO_DROPPED = ("available_actions", "tools")
"""Info keys that repeat every step and are not kept on it (the first observation's info has them)."""

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
    reward: Reward
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
    reward: Reward = 0.0
    """Sum of step rewards (the return)."""
    success: Annotated[bool, Strict()] = False
    score: Score = 0.0
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

    def record_step(
        self,
        action: str,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
        usage: Usage | None = None,
        agent_latency_s: float = 0.0,
        env_latency_s: float = 0.0,
    ) -> Step:
        """Append the env's answer to ``action`` as the next step and add its reward to the
        return. The episode's ``success`` and ``score`` are those of its latest step's info, and
        a step that ends the episode sets its status: ``completed`` when the env terminated it,
        ``limit`` when the env truncated it.

        A reward, return, success or score that :mod:`agentgym.rewards` refuses raises its
        :class:`~agentgym.rewards.RewardError` (naming the step) and records nothing."""
        t = len(self.steps)
        try:
            reward = check_reward(reward)
            total = check_reward(self.reward + reward, "the return")
            outcome = (check_success(info.get("success")), check_score(info.get("score")))
        except ValueError as e:
            raise type(e)(f"step {t}: {e}") from None
        step = Step(
            t=t,
            action=action,
            observation=observation,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            valid=bool(info.get("valid", True)),
            info=step_info(info),
            agent_latency_s=agent_latency_s,
            env_latency_s=env_latency_s,
            usage=usage or Usage(),
        )
        self.steps.append(step)
        self.reward = total
        if outcome != (self.success, self.score):  # a pydantic assignment costs a microsecond
            self.success, self.score = outcome
        if terminated or truncated:
            self.status = "completed" if terminated else "limit"
        return step

    @property
    def ended(self) -> bool:
        """The env ended the episode (its last step terminated or truncated it), or it failed."""
        last = self.steps[-1] if self.steps else None
        return self.status == "error" or (last is not None and (last.terminated or last.truncated))

    def fail(self, error: str, status: EpisodeStatus = "error") -> None:
        """End the episode on a failure (``error``) or on a limit that cut a call short
        (``limit``): never a success, whatever the env said before."""
        self.status, self.error = status, error
        self.success, self.score = False, 0.0


def step_info(info: dict[str, Any]) -> dict[str, Any]:
    """The part of an env's ``info`` a step keeps: JSON values as they are, anything else as its
    ``repr``, without the keys that repeat every step (:data:`STEP_INFO_DROPPED`)."""
    kept: dict[str, Any] = {}
    for k, v in info.items():
        if k in STEP_INFO_DROPPED:
            continue
        kept[k] = v if isinstance(v, (str, int, float, bool, type(None), list, dict)) else repr(v)
    return kept
