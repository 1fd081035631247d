"""Training episodes from a recording gateway's calls: the ids the model read and sampled.

Nothing is tokenised here. A call whose prompt ids start with everything the episode's current
sequence holds (the gateway continued the previous call token-exactly) extends that sequence: its
new prompt ids are context (masked out), its sampled ids are trained. A call whose prompt does not
(the agent edited or cut its history, or the chat template rewrote earlier turns) starts a new
sequence, and the episode is :attr:`~agentgym.train.episode.TokenEpisode.per_call`: every call
trains as its own row with its own prefix, never stitched to the others.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.episode import Episode
from agentgym.llm.recording import Call
from agentgym.train.episode import TokenEpisode, Turn
from agentgym.train.staleness import parse_version


def episode_from_calls(calls: Sequence[Call], record: Episode, group: str) -> TokenEpisode:
    """A token episode of ``calls`` (in the order made); the episode's reward, the env's, is put
    on its last turn (the calls of an agent program need not be its env steps one to one)."""
    ep = TokenEpisode(episode=record, group=group)
    spans: list[tuple[int, int, int]] = []  # (context start, action start, action end)
    versions = [parse_version(call.policy_version) for call in calls]
    start = 0
    for k, call in enumerate(calls):
        chain = ep.ids[start:]
        if k and call.prompt_ids[: len(chain)] == chain and len(call.prompt_ids) > len(chain):
            ep.extend(call.prompt_ids[len(chain) :], mask=0)
        else:
            if k:
                ep.per_call = True
            start = len(ep.ids)
            ep.extend(list(call.prompt_ids), mask=0)
        if k == 0:
            ep.prompt_len = len(ep.ids)
        action_start = len(ep.ids)
        ep.extend(list(call.completion_ids), mask=1, logprobs=list(call.logprobs))
        spans.append((start, action_start, len(ep.ids)))
    for k, (context, a, b) in enumerate(spans):
        obs_end = spans[k + 1][1] if k + 1 < len(spans) else b
        reward = record.reward if k == len(spans) - 1 else 0.0
        version = versions[k]
        ep.turns.append(Turn(a, b, b, obs_end, reward, "", context_start=context, version=version))
    ep.check()
    return ep
