"""Next tokens from a step's logits: greedy, or drawn from each row's own generator.

A sampled row adds Gumbel noise drawn from the row's own ``torch.Generator`` to its tempered,
top-p-filtered log-probabilities and takes the arg max (the Gumbel-max trick): the draw depends on
the row's seed alone, not on its batch-mates, its position in the batch or torch's global seed.
Each token's logprob is taken under those same filtered probabilities (what
``compute_transition_scores(normalize_logits=True)`` gives); a greedy row's under the raw ones.
Temperature and top-p are transformers' own warpers, as ``generate`` applies them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import torch

from agentgym.llm.sampling import SamplingSpec


def sample(
    logits: torch.Tensor, params: list[SamplingSpec], generators: list[Any]
) -> tuple[list[int], list[float]]:
    """One token and its logprob per row of ``logits`` ``[rows, vocab]`` (float32)."""
    tokens, logprobs = [0] * len(params), [0.0] * len(params)
    groups: dict[tuple[float, float], list[int]] = defaultdict(list)
    for i, p in enumerate(params):  # rows differing only in token limits and stops draw together
        groups[p.batch_key].append(i)
    for rows in groups.values():
        p = params[rows[0]]
        scores = _warp(logits[rows], p)
        logp = torch.log_softmax(scores, dim=-1)
        if p.temperature > 0:
            noise = torch.stack(
                [
                    torch.empty(logp.shape[-1], device=logp.device).exponential_(
                        generator=generators[i]
                    )
                    for i in rows
                ]
            )
            chosen = (logp - noise.clamp_min(1e-30).log()).argmax(dim=-1)
        else:
            chosen = logp.argmax(dim=-1)
        taken = logp.gather(1, chosen[:, None])[:, 0]
        for i, t, lp in zip(rows, chosen.tolist(), taken.tolist(), strict=True):
            tokens[i], logprobs[i] = t, lp
    return tokens, logprobs


def generator(seed: int | None, sampling: SamplingSpec, device: Any = "cpu") -> Any:
    """A request's own random stream (seeded, or drawn from torch's global generator)."""
    if sampling.temperature <= 0:
        return None
    if seed is None:
        seed = int(torch.randint(0, 2**62, ()).item())
    return torch.Generator(device=device).manual_seed(seed % 2**64)


def _warp(scores: torch.Tensor, p: SamplingSpec) -> torch.Tensor:
    if p.temperature <= 0:
        return scores
    from transformers import TemperatureLogitsWarper, TopPLogitsWarper

    scores = TemperatureLogitsWarper(p.temperature)(None, scores)  # type: ignore[arg-type]
    if p.top_p < 1.0:
        scores = TopPLogitsWarper(p.top_p)(None, scores)  # type: ignore[arg-type]
    return scores
