"""Rollouts on vLLM (``rollout.engine: vllm``): keep the engine's weights those of the policy, and
score the sampled tokens with the trainer's own logprobs.

Done as verl, OpenRLHF and TRL's vLLM integration do it:

- the engine loads the policy's base checkpoint once; before a rollout that follows an update, a
  LoRA run saves its adapter and the engine generates with it as a new ``LoRARequest``; a full
  fine-tuning run copies every weight into the engine (``load_weights``) and drops its prefix
  cache;
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
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from agentgym.train.batch import build_batch, row_spans
from agentgym.train.checkpoint import save_weights
from agentgym.train.config import PRECISION_DTYPES, TrainConfig
from agentgym.train.episode import TokenEpisode
from agentgym.train.policy import is_peft, token_logprobs


class VLLMRollouts:
    """The trainer's vLLM engine and the weight version it generates with."""

    def __init__(self, cfg: TrainConfig, model: Any, tokenizer: Any) -> None:
        from agentgym.llm.vllm_engine import VLLMEngine

        r = cfg.rollout
        self.model = model
        self.lora = is_peft(model)
        self.engine = VLLMEngine(
            base_checkpoint(model),
            max_batch_size=r.max_batch_size,
            kv_cache_gb=r.kv_cache_gb,
            max_model_len=r.max_context_tokens,
            enable_lora=self.lora,
            max_lora_rank=cfg.model.lora.r if cfg.model.lora is not None else 16,
            dtype=PRECISION_DTYPES[cfg.model.precision],
            seed=cfg.seed,
            tokenizer=tokenizer,
        )
        self.synced = False
        self._adapters = Path(tempfile.mkdtemp(prefix="agentgym-vllm-lora-"))
        self._version = 0

    def mark_stale(self) -> None:
        """The policy's weights changed (an optimiser step): sync before the next rollout."""
        self.synced = False

    def sync(self) -> None:
        """Give the engine the policy's current weights, if they changed since the last sync."""
        if self.synced:
            return
        if self.lora:
            self._version += 1
            folder = self._adapters / f"v{self._version}"
            save_weights(self.model, folder)  # peft: the adapter alone
            self.engine.set_lora(folder)
            old = self._adapters / f"v{self._version - 1}"
            if old.exists():  # vLLM read it when the previous adapter was first used
                shutil.rmtree(old, ignore_errors=True)
        else:
            self.engine.load_weights(
                (name, p.detach()) for name, p in self.model.state_dict().items()
            )
        self.synced = True

    def close(self) -> None:
        self.engine.close()
        shutil.rmtree(self._adapters, ignore_errors=True)


def base_checkpoint(model: Any) -> str:
    """The checkpoint folder the policy's weights started from (a LoRA model's base)."""
    base = model.get_base_model() if is_peft(model) else model
    path = getattr(base, "name_or_path", "") or getattr(base.config, "_name_or_path", "")
    if not path or not (Path(path) / "config.json").is_file():
        raise ValueError(
            f"rollout.engine vllm loads the policy's checkpoint folder, and {path!r} is none"
        )
    return str(path)


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
