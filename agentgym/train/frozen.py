"""The decoder's states below its first trainable layer, computed once per SFT row.

With LoRA on the top K decoder layers only, the layers below never change: the hidden state an
SFT row carries into the first adapted layer is the same in every epoch. Keeping it per row skips
that share of every later forward; only the top layers run (and backpropagate) again. Measured on
SmolLM2-135M with LoRA on 8 of 30 layers: an 8-row SFT step took 13.7 s, and 6.7 s once its rows
were cached (docs/results.md).

The top layers run through the model's own decoder with its layer list cut to them, fed the
cached states as ``inputs_embeds``. A decoder that treats ``inputs_embeds`` differently from its
layers' input (Gemma scales embeddings) fails the exactness check on first use, and the cache
then stays off: the loss is the same either way, only its cost differs.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from agentgym.train.batch import Batch


class FrozenPrefix:
    """Per-row cache of the hidden states entering decoder layer ``split`` (the first with a
    trainable parameter), up to ``max_bytes``; rows beyond it are recomputed each time."""

    def __init__(self, decoder: Any, split: int, max_bytes: int) -> None:
        self.decoder, self.split, self.max_bytes = decoder, split, max_bytes
        self.cache: dict[bytes, torch.Tensor] = {}
        self.bytes = 0
        self.exact: bool | None = None
        """Whether the cut decoder reproduces the full one (None: not checked yet)."""

    @classmethod
    def of(cls, model: Any, max_bytes: int) -> FrozenPrefix | None:
        """The cache for ``model``, or None when nothing below a trainable layer is frozen (or
        the model is not a plain decoder with a ``layers`` list, or ``max_bytes`` is 0)."""
        from agentgym.train.policy import _decoder_and_head

        parts = _decoder_and_head(model)
        if parts is None or max_bytes <= 0:
            return None
        decoder = parts[0]
        layers, embed = getattr(decoder, "layers", None), getattr(decoder, "embed_tokens", None)
        if not isinstance(layers, torch.nn.ModuleList) or embed is None:
            return None
        if any(p.requires_grad for p in embed.parameters()):
            return None
        trainable = [
            i for i, layer in enumerate(layers) if any(p.requires_grad for p in layer.parameters())
        ]
        if not trainable or trainable[0] == 0:
            return None
        return cls(decoder, trainable[0], max_bytes)

    def __call__(self, mb: Batch) -> torch.Tensor | None:
        """The decoder's last hidden states of ``mb`` (differentiable through the top layers),
        or None once the exactness check has failed."""
        if self.exact is None:
            self.exact = self._check(mb)
            if not self.exact:
                warnings.warn(
                    "frozen-layer cache off: this decoder's top layers do not reproduce its full "
                    "forward from cached states (sft.frozen_cache_gb)",
                    stacklevel=2,
                )
        if not self.exact:
            return None
        lengths = mb.attention_mask.sum(1).tolist()
        rows = [self._row(mb.input_ids[r, :n]) for r, n in enumerate(lengths)]
        states = rows[0].new_zeros(*mb.input_ids.shape, rows[0].shape[-1])
        for r, (n, row) in enumerate(zip(lengths, rows, strict=True)):
            states[r, :n] = row
        return self._top(states, mb.attention_mask)

    # ------------------------------------------------------------------ internals
    def _row(self, ids: torch.Tensor) -> torch.Tensor:
        key = ids.cpu().numpy().tobytes()
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        state = self._bottom(ids[None])[0]
        size = state.numel() * state.element_size()
        if self.bytes + size <= self.max_bytes:
            self.cache[key] = state
            self.bytes += size
        return state

    @torch.no_grad()
    def _bottom(self, ids: torch.Tensor) -> torch.Tensor:
        """States after layer ``split - 1`` (before any final norm), without gradients."""
        seen: list[torch.Tensor] = []
        hook = self.decoder.layers[self.split - 1].register_forward_hook(
            lambda _m, _i, out: seen.append(out[0] if isinstance(out, tuple) else out)
        )
        try:
            with self._layers(slice(0, self.split)):
                self.decoder(input_ids=ids, use_cache=False)
        finally:
            hook.remove()
        return seen[-1]

    def _top(self, states: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The layers from ``split`` up (and the final norm) on states entering layer ``split``."""
        with self._layers(slice(self.split, None)):
            return self.decoder(
                inputs_embeds=states, attention_mask=attention_mask, use_cache=False
            ).last_hidden_state

    @contextmanager
    def _layers(self, part: slice) -> Iterator[None]:
        full = self.decoder.layers
        self.decoder.layers = full[part]
        try:
            yield
        finally:
            self.decoder.layers = full

    @torch.no_grad()
    def _check(self, mb: Batch) -> bool:
        """Whether the cut decoder reproduces the full one on a short piece of ``mb``'s first row."""
        ids = mb.input_ids[:1, : min(32, int(mb.attention_mask[0].sum()))]
        full = self.decoder(input_ids=ids, use_cache=False).last_hidden_state
        cut = self._top(self._bottom(ids), None)
        return bool(torch.allclose(full, cut, atol=1e-4, rtol=1e-4))
