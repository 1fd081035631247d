"""Token-exact training episodes: the ids the policy saw and sampled, with masks and turn spans.

A :class:`TokenEpisode` keeps one running list of token ids per episode: the rendered prompt
(system prompt and first observation through the chat template), then per turn the sampled ids
exactly as generated (with the logprobs recorded at generation time) and the observation turn's
ids. Nothing is re-tokenised, so the loss is computed on exactly the tokens that were sampled.
The loss mask is 1 on sampled tokens only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym.episode import Episode, EpisodeStatus


@dataclass(frozen=True)
class Turn:
    """One action and the observation that answered it, as token spans ``[start, end)``."""

    action_start: int
    action_end: int
    obs_start: int
    """Equal to ``obs_end`` when the episode ended after this action (no observation tokens)."""
    obs_end: int
    reward: float
    state_key: str
    """The observation the action answered (GiGPO's anchor state)."""
    adapter: int | None = None
    """The adapter that generated the action (a policy with several, ``model.policy``), else None."""
    adapter_record: Any = None
    """What the policy's adapter picker recorded of its choice (for the policy's own loss)."""
    context_start: int = 0
    """Where the prompt this action was generated from starts: 0 for one growing chat; the
    turn's own prompt with a bounded context (``rollout.history``), whose step rows start there."""
    version: int | None = None
    """The policy version (optimiser steps taken) whose weights sampled the action; None until
    the trainer stamps the rollout (:mod:`agentgym.train.staleness`)."""


@dataclass
class TokenEpisode:
    """One rollout for training: the text record plus ids, logprobs, loss mask and turns."""

    episode: Episode
    """The text record (storable with :meth:`agentgym.Store.save_episode`)."""
    group: str
    """Episodes with the same group share a task and are normalised together (GRPO's group)."""
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    """Sampling logprob of each token, recorded at generation time; 0.0 where ``mask`` is 0."""
    mask: list[int] = field(default_factory=list)
    """1 on tokens the policy sampled, 0 on prompt and observation tokens."""
    turns: list[Turn] = field(default_factory=list)
    prompt_len: int = 0
    per_call: bool = False
    """Some turn's prompt is not the previous prompt and sample continued (the chat template or
    the agent rewrote history): every turn trains as its own row, from ``Turn.context_start``."""
    sampler_logprobs: list[float] | None = None
    """The engine's logprobs of the sampled tokens, kept when ``logprobs`` are replaced by the
    learner's (:mod:`agentgym.train.importance`); None: ``logprobs`` are still the engine's."""

    @property
    def status(self) -> EpisodeStatus:
        return self.episode.status

    @property
    def ok(self) -> bool:
        """False for infrastructure failures (``status == "error"``): they carry no signal."""
        return self.episode.status != "error"

    @property
    def reward(self) -> float:
        return self.episode.reward

    def extend(self, ids: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        """Append a segment: sampled tokens (``mask=1``, with logprobs) or context (``mask=0``)."""
        if logprobs is not None and len(logprobs) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(logprobs)} logprobs")
        self.ids += ids
        self.mask += [mask] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)

    def check(self) -> None:
        """Raise ValueError if the arrays and spans disagree (a bug, never bad user input)."""
        n = len(self.ids)
        if len(self.mask) != n or len(self.logprobs) != n:
            raise ValueError(f"ids {n}, mask {len(self.mask)}, logprobs {len(self.logprobs)}")
        for t in self.turns:
            if not (self.prompt_len <= t.action_start <= t.action_end <= t.obs_start <= t.obs_end):
                raise ValueError(f"turn spans out of order: {t}")
            if any(m != 1 for m in self.mask[t.action_start : t.action_end]):
                raise ValueError(f"action span of {t} is not fully masked in")
