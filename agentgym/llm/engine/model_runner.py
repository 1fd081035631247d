"""One forward pass of a Llama-shaped model over a batch of sequence chunks, with a slot cache.

The runner calls the checkpoint's own modules (embedding, RMSNorms, projections, rotary embedding,
MLP, head), so adapters injected into them and in-place weight updates apply as they would in
``generate``; only attention is its own: each chunk's new keys and values go into its sequence's
slot of a :class:`~agentgym.llm.engine.kv_cache.SlotCache`, decode rows (one new token each)
attend together over a view of the slots (a prefix they all hold, such as a shared system prompt,
read once for all of them), and prefill chunks attend one by one, causally.

Every token of a step goes through the projections and the MLP as one packed ``[tokens, hidden]``
matrix: a step that decodes 16 sequences and prefills a 200-token chunk is one large matrix
product per weight, which is what a CPU does well.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from agentgym.llm.engine.kv_cache import SlotCache

SUPPORTED = ("LlamaForCausalLM",)


def unsupported(model: Any) -> str | None:
    """Why the runner cannot run ``model`` (None: it can)."""
    name = type(model).__name__
    if name not in SUPPORTED:
        return f"{name} is not one of {', '.join(SUPPORTED)}"
    config = model.config
    scaling = getattr(config, "rope_scaling", None) or {}
    if getattr(config, "sliding_window", None):
        return "sliding-window attention"
    if scaling.get("rope_type", scaling.get("type", "default")) not in ("default", "llama3"):
        return f"rope scaling {scaling}"
    return None


def unsupported_config(config: Any) -> str | None:
    """:func:`unsupported` from a checkpoint's config alone (before loading its weights)."""
    architectures = getattr(config, "architectures", None) or []
    if not set(architectures) & set(SUPPORTED):
        return f"architectures {architectures} are not among {', '.join(SUPPORTED)}"
    return None


@dataclass
class Chunk:
    """``ids`` of one sequence at positions ``start...``, in its cache ``slot``."""

    slot: int
    start: int
    ids: list[int]


class LlamaRunner:
    """Forward passes over slot-cached sequences for one Llama model (weights used in place)."""

    def __init__(self, model: Any, device: str = "cpu") -> None:
        self.model = model
        self.inner = model.model
        config = model.config
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.vocab_size = self.inner.embed_tokens.num_embeddings
        """Token ids a prompt may hold: ``[0, vocab_size)``."""
        self.device = device
        self.share_prefix = True
        """Attend a prefix the decode rows share once for all of them (False: per row)."""

    def new_cache(self) -> SlotCache:
        dtype = next(self.model.parameters()).dtype
        layers = len(self.inner.layers)
        return SlotCache(layers, self.kv_heads, self.head_dim, dtype, self.device)

    @torch.inference_mode()
    def forward(self, chunks: list[Chunk], cache: SlotCache, shared: int = 0) -> torch.Tensor:
        """Logits (float32) at the last token of every chunk, ``[len(chunks), vocab]``.

        ``shared``: positions whose keys and values every decode chunk's slot holds identically
        (:meth:`Scheduler.shared_prefix`); decode attention reads them once for all rows.
        """
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        cache.reserve(max(c.start + len(c.ids) for c in chunks))
        ids = torch.tensor([t for c in chunks for t in c.ids], device=self.device)
        positions = torch.cat([torch.arange(c.start, c.start + len(c.ids)) for c in chunks])
        positions = positions.to(self.device)
        x = self.inner.embed_tokens(ids)[None]  # [1, tokens, hidden]
        cos, sin = self.inner.rotary_emb(x, positions[None])
        plan = _Plan(chunks, cache, self.device, shared if self.share_prefix else 0)
        n = ids.shape[0]
        for i, layer in enumerate(self.inner.layers):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(1, n, self.heads, self.head_dim).transpose(1, 2)
            k = attn.k_proj(h).view(1, n, self.kv_heads, self.head_dim).transpose(1, 2)
            v = attn.v_proj(h).view(1, n, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            out = plan.attend(i, q[0], k[0], v[0], attn.scaling)  # [tokens, heads * dim]
            x = x + attn.o_proj(out[None].to(x.dtype))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        last = torch.tensor(plan.last, device=self.device)
        return self.model.lm_head(self.inner.norm(x[0, last])).float()


class _Plan:
    """Where each chunk's tokens sit in the packed batch and in the cache; attention over them."""

    def __init__(self, chunks: list[Chunk], cache: SlotCache, device: Any, shared: int) -> None:
        self.cache = cache
        self.chunks = chunks
        offsets, total = [], 0
        for c in chunks:
            offsets.append(total)
            total += len(c.ids)
        self.offsets = offsets
        self.last = [o + len(c.ids) - 1 for o, c in zip(offsets, chunks, strict=True)]
        decode = [i for i, c in enumerate(chunks) if len(c.ids) == 1]
        self.prefill = [i for i, c in enumerate(chunks) if len(c.ids) > 1]
        self.decode_rows = torch.tensor([offsets[i] for i in decode], device=device)
        self.decode_slots = torch.tensor([chunks[i].slot for i in decode], device=device)
        self.decode_pos = torch.tensor([chunks[i].start for i in decode], device=device)
        self.offset = cache.offset
        self.shared = self.offset or shared
        """Positions decode attends once for all rows: the base, else a prefix all slots hold."""
        self.masks = {i: _causal(chunks[i], device) for i in self.prefill}
        """Each prefill chunk's attention mask, built once for every layer (None: from 0)."""
        if decode:
            used = cache.used
            self.width = int(self.decode_pos.max()) + 1
            lengths = torch.zeros(used, dtype=torch.long, device=device)  # idle slots: masked
            lengths[self.decode_slots] = self.decode_pos + 1
            positions = torch.arange(self.shared, self.width, device=device)
            self.mask = (positions[None] >= lengths[:, None])[:, None, None]

    def _decode(
        self, layer: int, keys: Any, values: Any, q: Any, k: Any, v: Any, scale: float, out: Any
    ) -> None:
        """Every decode row's one query over its slot, the shared prefix read once for all.

        Scores are two matrix products per part (a query group per key/value head, as grouped-query
        attention shares them): the rows' own positions ``shared...`` over a view of the slots, and
        the shared prefix ``0...shared`` over one slot for every row at once; the two softmax
        parts are merged by their maxima and sums (cascade attention). Without a shared prefix
        the masked flash kernel runs instead: the products alone flipped 2 of 96 greedy rows of
        the agent workload against ``generate`` at near-ties, the cascade and the kernel none.
        With a base (positions held once, in no slot) the shared part is the base.
        """
        rows, slots, used, p = self.decode_rows, self.decode_slots, self.cache.used, self.shared
        base = self.offset  # slot index = position - base
        kv_heads, dim = keys.shape[1], keys.shape[3]
        heads, n = q.shape[0], len(rows)
        group = heads // kv_heads
        keys[slots, :, self.decode_pos - base] = k[:, rows].transpose(0, 1).to(keys.dtype)
        values[slots, :, self.decode_pos - base] = v[:, rows].transpose(0, 1).to(keys.dtype)
        if not p:  # the flash kernel: what a40781c ran, and equal to generate on SmolLM2
            query = q.new_zeros(used, heads, 1, dim, dtype=keys.dtype)
            query[slots] = q[:, rows].transpose(0, 1)[:, :, None].to(keys.dtype)
            o = F.scaled_dot_product_attention(
                query,
                keys[:used, :, : self.width],
                values[:used, :, : self.width],
                attn_mask=~self.mask,
                scale=scale,
                enable_gqa=True,
            )
            out[rows] = o[slots, :, 0].to(out.dtype)
            return
        mine = q[:, rows].to(keys.dtype) * scale  # [heads, n, dim]
        query = mine.new_zeros(used, heads, dim)
        query[slots] = mine.transpose(0, 1)
        query = query.view(used, kv_heads, group, dim)
        own = slice(p - base, self.width - base)
        scores = torch.matmul(query, keys[:used, :, own].transpose(-1, -2))
        scores.masked_fill_(self.mask, float("-inf"))  # [used, kv_heads, group, width - p]
        top = scores.amax(dim=-1, keepdim=True)  # idle slots: -inf, their NaNs dropped below
        weights = torch.exp(scores - top)
        total = weights.sum(dim=-1, keepdim=True)
        o = torch.matmul(weights, values[:used, :, own])
        top, total, o = top[slots], total[slots], o[slots]  # [n, kv_heads, group, ...]
        if base:
            shared_keys, shared_values = self.cache.base_layer(layer)
        else:
            lead = self.decode_slots[0]
            shared_keys, shared_values = keys[lead, :, :p], values[lead, :, :p]
        shared = mine.view(kv_heads, group * n, dim)
        s1 = torch.matmul(shared, shared_keys.transpose(-1, -2))  # [kv, group * n, p]
        top1 = s1.amax(dim=-1, keepdim=True)
        w1 = torch.exp(s1 - top1)
        total1 = w1.sum(dim=-1, keepdim=True)
        o1 = torch.matmul(w1, shared_values)  # [kv_heads, group * n, dim]
        to_rows = (kv_heads, group, n, -1)
        top1, total1, o1 = (t.view(to_rows).permute(2, 0, 1, 3) for t in (top1, total1, o1))
        best = torch.maximum(top, top1)
        a, a1 = torch.exp(top - best), torch.exp(top1 - best)
        o, total = o * a + o1 * a1, total * a + total1 * a1
        out[rows] = (o / total).reshape(n, heads, dim).to(out.dtype)

    def attend(self, layer: int, q: Any, k: Any, v: Any, scale: float) -> torch.Tensor:
        """Store this layer's new keys and values, and attend; ``q/k/v``: ``[heads, tokens, d]``."""
        keys, values = self.cache.layer(layer)
        heads, tokens, dim = q.shape
        out = q.new_empty(tokens, heads, dim, dtype=keys.dtype)
        if len(self.decode_rows):
            self._decode(layer, keys, values, q, k, v, scale, out)
        base = self.offset
        for i in self.prefill:
            c, off = self.chunks[i], self.offsets[i]
            n, end = len(c.ids), c.start + len(c.ids)
            keys[c.slot, :, c.start - base : end - base] = k[:, off : off + n].to(keys.dtype)
            values[c.slot, :, c.start - base : end - base] = v[:, off : off + n].to(keys.dtype)
            mask = self.masks[i]
            seq_keys = keys[c.slot : c.slot + 1, :, : end - base]
            seq_values = values[c.slot : c.slot + 1, :, : end - base]
            if base:  # the base first: one copy of it per prefill chunk and layer
                base_keys, base_values = self.cache.base_layer(layer)
                seq_keys = torch.cat([base_keys[None], seq_keys], dim=2)
                seq_values = torch.cat([base_values[None], seq_values], dim=2)
            o = F.scaled_dot_product_attention(
                q[None, :, off : off + n].to(keys.dtype),
                seq_keys,
                seq_values,
                attn_mask=mask,
                is_causal=not c.start,
                scale=scale,
                enable_gqa=True,
            )
            out[off : off + n] = o[0].transpose(0, 1)
        return out.reshape(tokens, heads * dim)


def _causal(chunk: Chunk, device: Any) -> torch.Tensor | None:
    """Which cached positions each token of a chunk that starts past 0 may attend to."""
    if not chunk.start:
        return None
    end = chunk.start + len(chunk.ids)
    return (
        torch.arange(end, device=device)[None]
        <= torch.arange(chunk.start, end, device=device)[:, None]
    )
