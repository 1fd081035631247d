"""Training episodes as plain data (lists, numbers, strings) between the trainer's processes.

An asynchronous rollout worker (:mod:`agentgym.train.rollout_worker`) sends its episodes to the
learner this way: only JSON-shaped values cross the queue (no class of the worker's choosing is
named in what it sends), and the learner rebuilds every record through its own validated types.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agentgym.episode import Episode
from agentgym.task import Task
from agentgym.train.episode import TokenEpisode, Turn
from agentgym.train.rollout import Job, RolloutStats


def episode_to_plain(ep: TokenEpisode) -> dict[str, Any]:
    """``ep`` as a dict of plain values (its text record as JSON-mode pydantic data)."""
    if any(t.adapter is not None or t.adapter_record is not None for t in ep.turns):
        raise ValueError("turns with per-turn adapter picks do not travel between processes")
    return {
        "episode": ep.episode.model_dump(mode="json"),
        "group": ep.group,
        "ids": [int(i) for i in ep.ids],
        "logprobs": [float(x) for x in ep.logprobs],
        "mask": [int(m) for m in ep.mask],
        "turns": [
            [
                t.action_start,
                t.action_end,
                t.obs_start,
                t.obs_end,
                float(t.reward),
                t.state_key,
                t.context_start,
                t.version,
            ]
            for t in ep.turns
        ],  # fmt: skip
        "prompt_len": ep.prompt_len,
        "per_call": ep.per_call,
    }


def episode_from_plain(data: dict[str, Any]) -> TokenEpisode:
    """The episode :func:`episode_to_plain` wrote, its arrays and spans checked."""
    turns = [
        Turn(
            int(a), int(b), int(c), int(d), float(r), str(key), None, None, int(ctx),
            None if v is None else int(v),
        )
        for a, b, c, d, r, key, ctx, v in data["turns"]
    ]  # fmt: skip
    ep = TokenEpisode(
        episode=Episode.model_validate(data["episode"]),
        group=str(data["group"]),
        ids=[int(i) for i in data["ids"]],
        logprobs=[float(x) for x in data["logprobs"]],
        mask=[int(m) for m in data["mask"]],
        turns=turns,
        prompt_len=int(data["prompt_len"]),
        per_call=bool(data["per_call"]),
    )
    ep.check()
    return ep


def job_to_plain(job: Job) -> dict[str, Any]:
    return {
        "task": job.task.model_dump(mode="json"),
        "group": job.group,
        "sample": job.sample,
        "seed": job.seed,
    }


def job_from_plain(data: dict[str, Any]) -> Job:
    return Job(
        Task.model_validate(data["task"]), str(data["group"]), int(data["sample"]),
        int(data["seed"]),
    )  # fmt: skip


def stats_to_plain(stats: RolloutStats) -> dict[str, float]:
    return {k: float(v) for k, v in asdict(stats).items()}


def stats_from_plain(data: dict[str, float]) -> RolloutStats:
    return RolloutStats(
        episodes=int(data["episodes"]),
        generated_tokens=int(data["generated_tokens"]),
        prompt_tokens=int(data["prompt_tokens"]),
        generate_s=float(data["generate_s"]),
        env_s=float(data["env_s"]),
        wall_s=float(data["wall_s"]),
    )
