"""Rollouts from an engine with its own copy of the weights (``rollout.engine: vllm``): score the
sampled tokens with the trainer's own logprobs.

Done as verl, OpenRLHF and TRL's vLLM integration do it:

- before a rollout that follows an update the trainer hands the engine the policy's weights
  (``Engine.sync_weights``: a LoRA adapter swapped in, or every weight copied);
- after the rollout the trainer recomputes the logprob of every sampled token with the policy
  itself, and the loss's ratio uses those (the engine's kernels, batch shapes and precision give
  slightly different numbers: near-ties can even pick other tokens under greedy decoding);
- the gap between the engine's and the trainer's logprobs on the sampled tokens (mean and max
  absolute difference) is logged every step: when RL on a GPU diverges, it is the first thing to
  read (a large gap means the rollouts are off-policy for the loss: wrong weights synced, a bf16
  engine against an fp32 trainer, a sampling setting the trainer does not apply).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from agentgym.train.batch import build_batch, row_spans
from agentgym.train.episode import TokenEpisode
from agentgym.train.policy import token_logprobs


@torch.no_grad()
def recompute_logprobs(
    model: Any,
    episodes: list[TokenEpisode],
    pad_id: int,
    micro_batch_size: int,
    device: str,
    autocast: Any = contextlib.nullcontext,
) -> dict[str, float]:
    """Replace each sampled token's engine logprob by the policy's; return the gap between them.

    ``logprob_gap_mean`` and ``logprob_gap_max``: mean and max absolute difference over every
    sampled token of ``episodes`` (0 when there are none).
    """
    episodes = [ep for ep in episodes if any(ep.mask)]
    if not episodes:
        return {"logprob_gap_mean": 0.0, "logprob_gap_max": 0.0}
    batch = build_batch(episodes, None, "episode", "token-mean", pad_id)
    spans = row_spans(episodes, "episode")  # an episode may have a row per call
    total, count, largest = 0.0, 0, 0.0
    was_training = model.training
    model.eval()
    try:
        start = 0
        for mb in batch.micro_batches(micro_batch_size):
            only = mb.loss_mask > 0
            on_device = mb if device == "cpu" else _to(mb, device)
            with autocast():
                logp, _ = token_logprobs(model, on_device, only.to(device))
            logp = logp.float().cpu()
            gap = (logp - mb.old_logprobs).abs()[only]
            total, count = total + float(gap.sum()), count + int(gap.numel())
            largest = max(largest, float(gap.max()) if gap.numel() else 0.0)
            for r in range(mb.rows):
                i, context = spans[start + r][:2]
                for j in only[r].nonzero().flatten().tolist():
                    episodes[i].logprobs[context + j] = float(logp[r, j])
            start += mb.rows
    finally:
        model.train(was_training)
    return {"logprob_gap_mean": total / max(count, 1), "logprob_gap_max": largest}


def _to(mb: Any, device: str) -> Any:
    from dataclasses import fields, replace

    return replace(mb, **{f.name: getattr(mb, f.name).to(device) for f in fields(mb)})
