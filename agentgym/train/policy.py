"""The policy: any Hugging Face causal LM (optionally with LoRA adapters), its tokenizer, a
reference for KL, and the per-token logprob/entropy computation every algorithm shares.

A *routed policy* (``model.policy``, e.g. PA-MoE) replaces the plain model: a factory registered
by name (:func:`register_policy`, or the ``agentgym.policies`` entry points) builds a
:class:`RoutedPolicy`, whose ``model`` picks an adapter per environment step at rollout and, given
the episodes of an update (``bind``), computes every row's logits under the adapter that sampled
each action (``forward_batch``); its own modules (a router) train with an extra loss.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from pydantic import BaseModel

from agentgym.train.batch import Batch
from agentgym.train.episode import TokenEpisode
from agentgym.train.plugins import NamedRegistry


class LoraConfig(BaseModel):
    """LoRA adapters through peft (``pip install peft``)."""

    r: int = 8
    """Adapter rank."""
    alpha: int = 16
    """Scaling numerator (``alpha / r`` multiplies the adapter output)."""
    dropout: float = 0.0
    """Dropout on the adapter input (0 keeps rollouts and training deterministic)."""
    target_modules: list[str] = ["q_proj", "k_proj", "v_proj", "o_proj"]
    """Module names to adapt (the Llama/Qwen attention projections by default)."""


def load_model(path: str | Path, device: str = "cpu", lora: LoraConfig | None = None) -> Any:
    """``AutoModelForCausalLM.from_pretrained(path)``, wrapped with LoRA adapters if asked."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    loader: Any = AutoModelForCausalLM
    model = loader.from_pretrained(str(path), dtype=torch.float32).to(device)
    if (Path(path) / "adapter_config.json").is_file():  # a checkpoint saved with LoRA
        return model
    if lora is not None:
        try:
            from peft import LoraConfig as PeftLora
            from peft import get_peft_model
        except ImportError as e:
            raise ImportError("model.lora needs peft: pip install peft") from e
        model = get_peft_model(
            model,
            PeftLora(
                r=lora.r,
                lora_alpha=lora.alpha,
                lora_dropout=lora.dropout,
                target_modules=lora.target_modules,
                task_type="CAUSAL_LM",
            ),
        )
    return model


def load_tokenizer(path: str | Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def is_peft(model: Any) -> bool:
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


class Reference:
    """Logprobs of the frozen starting policy, for the KL term.

    With LoRA the reference is the base model with adapters switched off (no copy); otherwise
    a frozen deep copy made at the start of training.
    """

    def __init__(self, model: Any) -> None:
        self.model = model if is_peft(model) else copy.deepcopy(model).eval()
        for p in [] if is_peft(model) else self.model.parameters():
            p.requires_grad_(False)

    def context(self) -> AbstractContextManager[Any]:
        return self.model.disable_adapter() if is_peft(self.model) else nullcontext()

    @torch.no_grad()
    def logprobs(self, mb: Batch) -> torch.Tensor:
        with self.context():
            return token_logprobs(self.model, mb)[0]


def forward(model: Any, mb: Batch, hidden: bool = False) -> Any:
    """The model's output on ``mb``; a routed policy's model computes it per step's adapter."""
    if hasattr(model, "forward_batch"):
        return model.forward_batch(mb, hidden)
    return model(
        input_ids=mb.input_ids,
        attention_mask=mb.attention_mask,
        output_hidden_states=hidden,
        use_cache=False,
    )


def logprobs_from_logits(
    logits: torch.Tensor, input_ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position logprob of the actual token and entropy, aligned to ``input_ids`` (0 at 0)."""
    logp_all = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    logp = logp_all.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    pad = torch.zeros_like(logp[:, :1])
    return torch.cat([pad, logp], 1), torch.cat([pad, entropy], 1)


def token_logprobs(model: Any, mb: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """(logprobs, entropies) of ``mb``'s tokens under ``model``; differentiable."""
    return logprobs_from_logits(forward(model, mb).logits, mb.input_ids)


# ============================================================================ routed policies
class RoutedPolicy(Protocol):
    """What the trainer asks of a step-routed policy (``model.policy``; PA-MoE is one)."""

    model: Any
    """The module trained and generated with; has ``forward_batch(mb, hidden)``."""

    def modules(self) -> dict[str, torch.nn.Module]:
        """Trainable modules besides ``model`` (a router): optimised and saved in checkpoints."""
        ...

    def router(self, step: int, explore: bool, seed: int) -> Any:
        """The rollout's :class:`~agentgym.train.rollout.StepRouter` (sampled if ``explore``)."""
        ...

    def bind(
        self, episodes: Sequence[TokenEpisode], advantages: Sequence[np.ndarray]
    ) -> dict[str, float]:
        """Take the update's episodes (rows index them); return rollout metrics."""
        ...

    def loss(self) -> tuple[torch.Tensor, dict[str, float]]:
        """The extra loss of the bound episodes (the router's), added once per epoch."""
        ...

    def save(self, directory: Path) -> None:
        """Write what an agent spec needs besides the adapters (router, config)."""
        ...


PolicyFactory = Callable[[str, str, dict[str, Any], Any, "Path | None"], RoutedPolicy]
"""``(model path, device, options, tokenizer, checkpoint to resume or None) -> RoutedPolicy``."""
_POLICIES: NamedRegistry[PolicyFactory] = NamedRegistry("model.policy", "agentgym.policies")


def register_policy(name: str, factory: PolicyFactory) -> PolicyFactory:
    """Make ``factory`` available as ``model.policy: name``."""
    return _POLICIES.register(name, factory)


def get_policy(name: str) -> PolicyFactory:
    """The factory registered as ``name``, or found in the ``agentgym.policies`` entry points."""
    return _POLICIES.get(name)
